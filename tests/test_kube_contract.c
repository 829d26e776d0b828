/* test_kube_contract.c - the transport contract (tests/contract.h) for the
   Kubernetes API transport (kctl_http_curl.h):
     contract/kube-server/... against the test API server (tests/kube_server.h),
                              a fresh server for each test, its store breaking
                              watches for the break_watches hook (test_kube.c
                              runs target "kube": one server, a namespace per
                              test, no such hook);
     contract/kubeconfig/...  the on-demand path (below) pointed at a test
                              server by a kubeconfig this file writes, so it
                              is never dead code;
     contract/cluster/...     on demand, against a real cluster: only when
                              KCTL_TEST_KUBECONFIG names a kubeconfig and
                              KCTL_TEST_RESOURCE a namespaced
                              group/version/resource ("" group: core, as
                              "/v1/configmaps"), e.g.
                                  KCTL_TEST_KUBECONFIG=$HOME/.kube/config \
                                  KCTL_TEST_RESOURCE=edge.kctl.io/v1/deviceconfigs \
                                  KT_ONLY=cluster ./build/kt-kube
                              Without both variables these tests are not
                              registered at all.
   The on-demand path works in the kubeconfig context's namespace, which
   other objects may share: every store of a test is a random name prefix
   and a label of its own (kctl-contract=<prefix>), put on by a thin
   wrapper of the transport (kcc_wrap, below) and taken off the objects,
   events and Status messages the tests see; lists and watches select the
   label. What a test leaves behind is deleted when its store closes
   (finalizers cleared first). What the resource can do is asked of the
   server's discovery (kind, status subresource) and tried once on a probe
   object (generation, updates without a resourceVersion); a contract
   test needing what it cannot do says "skip" with the test's name. */
#include "kube.h"
#include "contract.h"
#include "kube_server.h"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef KT_HAVE_CURL
/* ------------------------------------------------ against the test server */
/* Each store: a fresh server (its own memstore, a free port), the
   transport to it with a counting allocator that must end at zero. The
   server's bookmark period is long (60 s) so that no bookmark comes but
   the one the progress hook asks for. */
typedef struct kkc_store {
    kt_kube_server *srv;
    kt_alloc a;
} kkc_store;

static int kkc_open(const kc_target *t, kc_store *s) {
    kctl_kube_desc d = kctl_kube_desc_init();
    kkc_store *m = (kkc_store *)calloc(1, sizeof *m);
    int rc;
    (void)t;
    if (!m) return KCTL_ERR_NOMEM;
    kt_alloc_init(&m->a);
    if ((rc = kt_kube_server_start(NULL, &m->srv)) != KCTL_OK) {
        free(m);
        return rc;
    }
    d.server = kt_kube_server_url(m->srv);
    d.allocator = kt_allocator(&m->a);
    d.request_timeout_ns = KCTL_SEC(10);
    if ((rc = kctl_kube_create(&d, &s->tp)) != KCTL_OK) {
        kt_kube_server_stop(m->srv);
        free(m);
        return rc;
    }
    s->impl = m;
    return KCTL_OK;
}

static void kkc_close(const kc_target *t, kc_store *s) {
    kkc_store *m = (kkc_store *)s->impl;
    (void)t;
    kctl_transport_destroy(&s->tp);
    KT_EQ_INT(m->a.live, 0);
    kt_kube_server_stop(m->srv);
    free(m);
}

/* The server's history expires: every older version and continue token
   is 410 (a watch from one: the in-band ERROR event). */
static int kkc_compact(kc_store *s) {
    kt_kube_server_expire_history(((kkc_store *)s->impl)->srv);
    return KCTL_OK;
}

/* A BOOKMARK on every watch that asked for them, as if the server's
   bookmark period had passed. */
static int kkc_progress(kc_store *s) {
    kt_kube_server_bookmark_now(((kkc_store *)s->impl)->srv);
    return KCTL_OK;
}

/* Watches opened from now on break after one event: the server's store
   ends the watch, so the server drops the connection without the
   chunked terminator (kt_kube_server_break_watches breaks the streams
   open at the time instead, which the contract's test does not have). */
static int kkc_break(kc_store *s) {
    kctl_memstore_break_watches_after(kt_kube_server_memstore(((kkc_store *)s->impl)->srv), 1);
    return KCTL_OK;
}

static const kc_target kkc_target = {
    .name = "kube-server",
    .caps = KC_CAP_ALL, /* tests/contract.h, DIFFERENCES: "kube" */
    .res = { "edge.kctl.io", "v1", "deviceconfigs", "contract" },
    .api_version = "edge.kctl.io/v1",
    .kind = "DeviceConfig",
    .open = kkc_open,
    .close = kkc_close,
    .compact = kkc_compact,
    .progress = kkc_progress,
    .break_watches = kkc_break,
    .wait_ns = KCTL_SEC(5),
    .settle_ns = KCTL_MS(200),
    .bookmark_wait_ns = KCTL_SEC(3),
};
/* ------------------------------------------- on demand: a real cluster */
#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#define KCC_LABEL "kctl-contract" /* the label of every object a store writes */

/* What the on-demand path found: the configuration, the resource and
   what it can do. */
typedef struct kcc_cluster {
    bool ready;                 /* set up: the tests may run */
    kctl_kube_config kc;        /* from the kubeconfig */
    char ns[254];               /* the context's namespace */
    char group[254], version[64], resource[254], kind[128], api_version[320];
    bool status, generation, unconditional;
    uint64_t bookmark_wait_ns;  /* past the server's bookmark period */
    unsigned seq;               /* stores opened */
    uint32_t rnd;               /* this run's random part of every prefix */
    kt_kube_server *srv;        /* the server behind, when it is a test server of ours */
} kcc_cluster;

static kcc_cluster kcc;
static kc_target kcc_target;

/* ---- the wrapper: a store's prefix and label on everything sent, off
   everything read */
typedef struct kcc_wrap {
    kctl_transport inner;
    kt_alloc a;
    char prefix[40]; /* "kc<8 hex>-<seq>-" */
    char label[32];  /* its value of KCC_LABEL: the prefix without its last '-' */
} kcc_wrap;

/* text[0..n) without every occurrence of the prefix, NUL-terminated
   (malloc; NULL: out of memory). */
static char *kcc_strip(const kcc_wrap *w, const char *text, size_t n, size_t *out_len) {
    size_t pl = strlen(w->prefix), i = 0, o = 0;
    char *r = (char *)malloc(n + 1);
    if (!r) return NULL;
    while (i < n) {
        if (n - i >= pl && memcmp(text + i, w->prefix, pl) == 0) {
            i += pl;
            continue;
        }
        r[o++] = text[i++];
    }
    r[o] = '\0';
    if (out_len) *out_len = o;
    return r;
}

/* *o (NULL is fine) as the test wrote it: its name without the prefix. */
static int kcc_obj_out(const kcc_wrap *w, kctl_obj **o) {
    size_t n, m;
    const char *j;
    char *t;
    kctl_obj *c = NULL;
    int rc;
    if (!o || !*o) return KCTL_OK;
    j = kctl_obj_json(*o, &n);
    if (!(t = kcc_strip(w, j, n, &m))) return KCTL_ERR_NOMEM;
    rc = kctl_obj_parse(t, m, NULL, &c);
    free(t);
    kctl_obj_unref(*o);
    *o = rc == KCTL_OK ? c : NULL;
    return rc;
}

static void kcc_status_out(const kcc_wrap *w, kctl_api_status *st) {
    char *msg, *name, *cm[8];
    kctl_status_cause cs[8];
    size_t i, n;
    if (!st || !st->code) return;
    n = st->cause_count < 8 ? st->cause_count : 8;
    msg = kcc_strip(w, st->message ? st->message : "", strlen(st->message ? st->message : ""), NULL);
    name = kcc_strip(w, st->name ? st->name : "", strlen(st->name ? st->name : ""), NULL);
    for (i = 0; i < n; i++) {
        cs[i] = st->causes[i];
        cm[i] = kcc_strip(w, cs[i].message ? cs[i].message : "", strlen(cs[i].message ? cs[i].message : ""), NULL);
        cs[i].message = cm[i];
    }
    if (msg && name) {
        uint32_t ra = st->retry_after_s;
        char reason[64], group[254], kind[254];
        snprintf(reason, sizeof reason, "%s", st->reason ? st->reason : "");
        snprintf(group, sizeof group, "%s", st->group ? st->group : "");
        snprintf(kind, sizeof kind, "%s", st->kind ? st->kind : "");
        kctl_api_status_set(st, st->code, reason, msg, name, group, kind, cs, n);
        st->retry_after_s = ra;
    }
    for (i = 0; i < n; i++) free(cm[i]);
    free(msg);
    free(name);
}

/* A document with the prefix on its name (if it has one) and the label. */
static int kcc_doc_in(const kcc_wrap *w, const char *json, size_t len, kctl_jw *out) {
    kctl_json_tok dt[512], pt[16];
    kctl_json d, p;
    kctl_jw pw;
    char name[254], full[300];
    const char *ptext;
    size_t pn;
    int rc;
    if (len == KCTL_NTS) len = strlen(json);
    if (kctl_json_parse(json, len, dt, 512, NULL, &d) != KCTL_OK) return KCTL_ERR_INVALID_ARG;
    kctl_jw_init_growable(&pw, NULL);
    kctl_jw_object_begin(&pw);
    kctl_jw_key(&pw, "metadata");
    kctl_jw_object_begin(&pw);
    if (kctl_json_get_string(json, len, "metadata.name", name, sizeof name, NULL) == KCTL_OK) {
        snprintf(full, sizeof full, "%s%s", w->prefix, name);
        kctl_jw_key(&pw, "name");
        kctl_jw_string(&pw, full);
    }
    kctl_jw_key(&pw, "labels");
    kctl_jw_object_begin(&pw);
    kctl_jw_key(&pw, KCC_LABEL);
    kctl_jw_string(&pw, w->label);
    kctl_jw_object_end(&pw);
    kctl_jw_object_end(&pw);
    kctl_jw_object_end(&pw);
    if ((rc = kctl_jw_finish(&pw, &ptext, &pn)) == KCTL_OK && (rc = kctl_json_parse(ptext, pn, pt, 16, NULL, &p)) == KCTL_OK) {
        kctl_jw_init_growable(out, NULL);
        rc = kctl_json_merge_patch(&d, 0, &p, 0, out);
    }
    kctl_jw_free(&pw);
    return rc;
}

static void kcc_name_in(const kcc_wrap *w, const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s", w->prefix, name ? name : "");
}

/* The test's selectors and the store's label. */
static void kcc_opts_in(const kcc_wrap *w, const kctl_list_opts *in, kctl_list_opts *out, char *lsel, size_t lcap, char *fsel, size_t fcap) {
    const char *f;
    size_t at = 0;
    memset(out, 0, sizeof *out);
    if (in) *out = *in;
    if (in && in->label_selector && *in->label_selector) snprintf(lsel, lcap, "%s,%s=%s", in->label_selector, KCC_LABEL, w->label);
    else snprintf(lsel, lcap, "%s=%s", KCC_LABEL, w->label);
    out->label_selector = lsel;
    if (!in || !in->field_selector) return;
    fsel[0] = '\0';
    for (f = in->field_selector; *f;) { /* metadata.name=x, ==x, !=x: the prefixed name */
        const char *end = strchr(f, ','), *op;
        size_t n = end ? (size_t)(end - f) : strlen(f);
        char term[512];
        snprintf(term, sizeof term, "%.*s", (int)n, f);
        op = strpbrk(term, "!=");
        if (op && !strncmp(term, "metadata.name", (size_t)(op - term)) && (size_t)(op - term) == 13) {
            const char *v = op;
            while (*v == '!' || *v == '=') v++;
            at += (size_t)snprintf(fsel + at, at < fcap ? fcap - at : 0, "%s%.*s%s%s", at ? "," : "", (int)(v - term), term, w->prefix, v);
        } else {
            at += (size_t)snprintf(fsel + at, at < fcap ? fcap - at : 0, "%s%s", at ? "," : "", term);
        }
        f += n;
        if (*f == ',') f++;
    }
    out->field_selector = fsel;
}

static int kcc_list(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st) {
    kcc_wrap *w = (kcc_wrap *)self;
    kctl_list_opts lo;
    char ls[600], fs[600];
    size_t i;
    int rc;
    kcc_opts_in(w, opts, &lo, ls, sizeof ls, fs, sizeof fs);
    rc = kctl_transport_list(&w->inner, res, &lo, out, st);
    if (rc != KCTL_OK) {
        kcc_status_out(w, st);
        return rc;
    }
    for (i = 0; i < out->items.count && rc == KCTL_OK; i++) rc = kcc_obj_out(w, &out->items.items[i]);
    if (rc != KCTL_OK) kctl_list_result_free(out);
    return rc;
}

static int kcc_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *opts, const char *from_rv, kctl_watch **out,
                          kctl_api_status *st) {
    kcc_wrap *w = (kcc_wrap *)self;
    kctl_list_opts lo;
    char ls[600], fs[600];
    int rc;
    kcc_opts_in(w, opts, &lo, ls, sizeof ls, fs, sizeof fs);
    rc = kctl_transport_watch_open(&w->inner, res, &lo, from_rv, out, st);
    if (rc != KCTL_OK) kcc_status_out(w, st);
    return rc;
}

static int kcc_watch_next(void *self, kctl_watch *wt, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    kcc_wrap *w = (kcc_wrap *)self;
    int rc = kctl_transport_watch_next(&w->inner, wt, timeout_ns, ev, st);
    if (rc == KCTL_OK && (rc = kcc_obj_out(w, &ev->obj)) != KCTL_OK) kctl_event_clear(ev);
    if (rc != KCTL_OK) kcc_status_out(w, st);
    return rc;
}

static void kcc_watch_close(void *self, kctl_watch *wt) { kctl_transport_watch_close(&((kcc_wrap *)self)->inner, wt); }

static int kcc_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    kcc_wrap *w = (kcc_wrap *)self;
    char n[300];
    int rc;
    kcc_name_in(w, name, n, sizeof n);
    rc = kctl_transport_get(&w->inner, res, n, out, st);
    if (rc == KCTL_OK) rc = kcc_obj_out(w, out);
    else kcc_status_out(w, st);
    return rc;
}

typedef int (*kcc_doc_fn)(const kctl_transport *, const kctl_resource *, const char *, size_t, kctl_obj **, kctl_api_status *);
static int kcc_doc(kcc_wrap *w, kcc_doc_fn fn, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    kctl_jw d;
    const char *t;
    size_t n;
    int rc = kcc_doc_in(w, json, len, &d);
    if (rc == KCTL_ERR_INVALID_ARG) return fn(&w->inner, res, json, len, out, st); /* no JSON: as it is */
    if (rc == KCTL_OK && (rc = kctl_jw_finish(&d, &t, &n)) == KCTL_OK) rc = fn(&w->inner, res, t, n, out, st);
    kctl_jw_free(&d);
    if (rc == KCTL_OK) rc = kcc_obj_out(w, out);
    else kcc_status_out(w, st);
    return rc;
}
static int kcc_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kcc_doc((kcc_wrap *)self, kctl_transport_create, res, json, len, out, st);
}
static int kcc_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kcc_doc((kcc_wrap *)self, kctl_transport_update, res, json, len, out, st);
}
static int kcc_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kcc_doc((kcc_wrap *)self, kctl_transport_update_status, res, json, len, out, st);
}

static int kcc_patch(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags, kctl_obj **out,
                     kctl_api_status *st) {
    kcc_wrap *w = (kcc_wrap *)self;
    char n[300];
    int rc;
    kcc_name_in(w, name, n, sizeof n);
    rc = kctl_transport_patch(&w->inner, res, n, patch, len, flags, out, st);
    if (rc == KCTL_OK) rc = kcc_obj_out(w, out);
    else kcc_status_out(w, st);
    return rc;
}

static int kcc_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                      kctl_api_status *st) {
    kcc_wrap *w = (kcc_wrap *)self;
    char n[300];
    int rc;
    kcc_name_in(w, name, n, sizeof n);
    rc = kctl_transport_remove(&w->inner, res, n, opts, out, st);
    if (rc == KCTL_OK) rc = kcc_obj_out(w, out);
    else kcc_status_out(w, st);
    return rc;
}

static const kctl_transport_vtable kcc_wrap_vt = {
    kcc_list, kcc_watch_open, kcc_watch_next, kcc_watch_close, kcc_get, kcc_create, kcc_update, kcc_update_status, kcc_patch, kcc_remove, NULL, NULL
};

/* Delete what carries the label (finalizers cleared first); false if
   something stayed. */
static bool kcc_cleanup(const kctl_transport *t, const kctl_resource *res, const char *label) {
    kctl_list_opts lo;
    kctl_list_result r;
    char sel[96];
    size_t i;
    bool ok = true;
    memset(&lo, 0, sizeof lo);
    snprintf(sel, sizeof sel, "%s=%s", KCC_LABEL, label);
    lo.label_selector = sel;
    if (kctl_transport_list(t, res, &lo, &r, NULL) != KCTL_OK) return false;
    for (i = 0; i < r.items.count; i++) {
        const char *name = kctl_obj_name(r.items.items[i]);
        int rc;
        if (kctl_obj_finalizer_count(r.items.items[i]))
            kctl_transport_patch(t, res, name, "{\"metadata\":{\"finalizers\":null}}", KCTL_NTS, 0, NULL, NULL);
        rc = kctl_transport_remove(t, res, name, NULL, NULL, NULL);
        if (rc != KCTL_OK && rc != KCTL_ERR_NOT_FOUND) {
            printf("  %s/%s: not deleted (%s), delete it by hand\n", res->ns, name, kctl_strerror(rc));
            ok = false;
        }
    }
    kctl_list_result_free(&r);
    return ok;
}

static uint32_t kcc_random(void) {
    uint32_t v = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16) ^ (uint32_t)kctl_clock_now(NULL);
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        uint32_t r;
        if (read(fd, &r, sizeof r) == (ssize_t)sizeof r) v ^= r;
        close(fd);
    }
    return v;
}

static int kcc_open(const kc_target *t, kc_store *s) {
    kctl_kube_desc d = kcc.kc.desc;
    kcc_wrap *w = (kcc_wrap *)calloc(1, sizeof *w);
    int rc;
    (void)t;
    if (!w) return KCTL_ERR_NOMEM;
    kt_alloc_init(&w->a);
    snprintf(w->label, sizeof w->label, "kc%08x-%u", (unsigned)kcc.rnd, ++kcc.seq);
    snprintf(w->prefix, sizeof w->prefix, "%s-", w->label);
    d.allocator = kt_allocator(&w->a);
    d.obj_opts.allocator = d.allocator;
    if ((rc = kctl_kube_create(&d, &w->inner)) != KCTL_OK) {
        free(w);
        return rc;
    }
    s->tp.vt = &kcc_wrap_vt;
    s->tp.self = w;
    s->impl = w;
    return KCTL_OK;
}

static void kcc_close(const kc_target *t, kc_store *s) {
    kcc_wrap *w = (kcc_wrap *)s->impl;
    (void)t;
    if (kcc.srv) kctl_memstore_break_watches_after(kt_kube_server_memstore(kcc.srv), 0); /* the next store's watches last */
    KT_CHECK(kcc_cleanup(&w->inner, &s->res, w->label));
    kctl_transport_destroy(&w->inner);
    KT_EQ_INT(w->a.live, 0);
    free(w);
}

/* Hooks where the "cluster" is a test server of ours (kcc.srv): the
   kubeconfig run in CI, which then runs every test. */
static int kcc_srv_compact(kc_store *s) {
    (void)s;
    kt_kube_server_expire_history(kcc.srv);
    return KCTL_OK;
}

static int kcc_srv_progress(kc_store *s) {
    (void)s;
    kt_kube_server_bookmark_now(kcc.srv);
    return KCTL_OK;
}

static int kcc_srv_break(kc_store *s) {
    (void)s;
    kctl_memstore_break_watches_after(kt_kube_server_memstore(kcc.srv), 1);
    return KCTL_OK;
}

static bool kcc_available(const kc_target *t) {
    (void)t;
    return kcc.ready;
}

/* ---- discovery: what kubectl asks (the bytes of one GET, by libcurl) */
typedef struct kcc_body {
    char *p;
    size_t len;
    bool over;
} kcc_body;

static size_t kcc_write(char *data, size_t size, size_t n, void *user) {
    kcc_body *b = (kcc_body *)user;
    size_t k = size * n;
    char *np;
    if (b->len + k > ((size_t)8 << 20) || !(np = (char *)realloc(b->p, b->len + k + 1))) {
        b->over = true;
        return 0;
    }
    b->p = np;
    memcpy(b->p + b->len, data, k);
    b->len += k;
    b->p[b->len] = '\0';
    return k;
}

/* GET path on the configured server with its credentials: the HTTP code
   (0: no answer; why says) and the body in *b (free it). */
static long kcc_http_get(const kctl_kube_desc *d, const char *path, kcc_body *b, char *why, size_t cap) {
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char url[1024], auth[16500], tok[16384];
    long code = 0;
    CURLcode cc;
    memset(b, 0, sizeof b[0]);
    why[0] = '\0';
    if (!c) {
        snprintf(why, cap, "curl_easy_init failed");
        return 0;
    }
    snprintf(url, sizeof url, "%s%s", d->server, path);
    tok[0] = '\0';
    if (d->token_file) {
        FILE *f = fopen(d->token_file, "r");
        size_t n = f ? fread(tok, 1, sizeof tok - 1, f) : 0;
        if (f) fclose(f);
        tok[n] = '\0';
        while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' ')) tok[--n] = '\0';
    } else if (d->token) {
        snprintf(tok, sizeof tok, "%s", d->token);
    }
    h = curl_slist_append(h, "Accept: application/json");
    if (tok[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", tok);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kcc_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (d->tls.insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (d->tls.ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, d->tls.ca_file);
    if (d->tls.cert_file) curl_easy_setopt(c, CURLOPT_SSLCERT, d->tls.cert_file);
    if (d->tls.key_file) curl_easy_setopt(c, CURLOPT_SSLKEY, d->tls.key_file);
#if LIBCURL_VERSION_NUM >= 0x074d00 /* 7.77: blobs for the CA too */
    {
        struct curl_blob ca, cert, key;
        if (d->tls.ca_data) {
            ca.data = (void *)(uintptr_t)d->tls.ca_data;
            ca.len = d->tls.ca_len == KCTL_NTS ? strlen(d->tls.ca_data) : d->tls.ca_len;
            ca.flags = CURL_BLOB_COPY;
            curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
        }
        if (d->tls.cert_data) {
            cert.data = (void *)(uintptr_t)d->tls.cert_data;
            cert.len = d->tls.cert_len == KCTL_NTS ? strlen(d->tls.cert_data) : d->tls.cert_len;
            cert.flags = CURL_BLOB_COPY;
            curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
        }
        if (d->tls.key_data) {
            key.data = (void *)(uintptr_t)d->tls.key_data;
            key.len = d->tls.key_len == KCTL_NTS ? strlen(d->tls.key_data) : d->tls.key_len;
            key.flags = CURL_BLOB_COPY;
            curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
        }
    }
#else
    if (d->tls.ca_data || d->tls.cert_data || d->tls.key_data) {
        snprintf(why, cap, "libcurl before 7.77 takes no certificate data in memory: use files in the kubeconfig");
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        return 0;
    }
#endif
    if ((cc = curl_easy_perform(c)) != CURLE_OK) snprintf(why, cap, "GET %.300s: %s", url, curl_easy_strerror(cc));
    else curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    memset(tok, 0, sizeof tok);
    memset(auth, 0, sizeof auth);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

/* The resource in its group version's discovery: kind, namespaced, a
   status subresource. */
static bool kcc_discover(char *why, size_t cap) {
    kcc_body b;
    char path[600], key[64], name[300], st[300];
    long code;
    int i;
    bool found = false, namespaced = false;
    if (kcc.group[0]) snprintf(path, sizeof path, "/apis/%s/%s", kcc.group, kcc.version);
    else snprintf(path, sizeof path, "/api/%s", kcc.version);
    code = kcc_http_get(&kcc.kc.desc, path, &b, why, cap);
    if (code != 200) {
        if (code) snprintf(why, cap, "GET %.300s: HTTP %ld", path, code);
        free(b.p);
        return false;
    }
    snprintf(st, sizeof st, "%s/status", kcc.resource);
    for (i = 0; i < 10000; i++) {
        snprintf(key, sizeof key, "resources[%d].name", i);
        if (kctl_json_get_string(b.p, b.len, key, name, sizeof name, NULL) != KCTL_OK) break;
        if (!strcmp(name, kcc.resource)) {
            found = true;
            snprintf(key, sizeof key, "resources[%d].kind", i);
            kctl_json_get_string(b.p, b.len, key, kcc.kind, sizeof kcc.kind, NULL);
            snprintf(key, sizeof key, "resources[%d].namespaced", i);
            kctl_json_get_bool(b.p, b.len, key, &namespaced);
        }
        if (!strcmp(name, st)) kcc.status = true;
    }
    free(b.p);
    if (!found) snprintf(why, cap, "GET %.200s: no resource %.200s", path, kcc.resource);
    else if (!namespaced) snprintf(why, cap, "%.300s is cluster-scoped: KCTL_TEST_RESOURCE must be namespaced", kcc.resource);
    else if (!kcc.kind[0]) snprintf(why, cap, "GET %.200s: %.200s has no kind", path, kcc.resource);
    return found && namespaced && kcc.kind[0];
}

/* What the resource does with an object of the run's own: generation on
   create, an update without a resourceVersion. */
static bool kcc_probe(char *why, size_t cap) {
    kctl_transport t;
    kctl_resource res;
    kctl_api_status st;
    kctl_obj *o = NULL;
    char doc[1024], name[64], label[32];
    int rc;
    bool ok = false;
    memset(&st, 0, sizeof st);
    res.group = kcc.group;
    res.version = kcc.version;
    res.resource = kcc.resource;
    res.ns = kcc.ns;
    snprintf(label, sizeof label, "kc%08x-probe", (unsigned)kcc.rnd);
    snprintf(name, sizeof name, "%s", label);
    if ((rc = kctl_kube_create(&kcc.kc.desc, &t)) != KCTL_OK) {
        snprintf(why, cap, "kctl_kube_create: %s", kctl_strerror(rc));
        return false;
    }
    snprintf(doc, sizeof doc, "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"%s\":\"%s\"}},"
             "\"spec\":{\"n\":1}}", kcc.api_version, kcc.kind, name, kcc.ns, KCC_LABEL, label);
    if ((rc = kctl_transport_create(&t, &res, doc, KCTL_NTS, &o, &st)) != KCTL_OK) {
        snprintf(why, cap, "create %s/%s: %s (%s)", kcc.ns, name, kctl_strerror(rc), st.message ? st.message : "");
    } else {
        ok = true;
        kcc.generation = kctl_obj_generation(o) == 1;
        kctl_obj_unref(o);
        o = NULL;
        snprintf(doc, sizeof doc, "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"%s\":\"%s\"}},"
                 "\"spec\":{\"n\":2}}", kcc.api_version, kcc.kind, name, kcc.ns, KCC_LABEL, label);
        kcc.unconditional = kctl_transport_update(&t, &res, doc, KCTL_NTS, NULL, NULL) == KCTL_OK;
        if (!kcc_cleanup(&t, &res, label)) {
            snprintf(why, cap, "the probe %s/%s could not be deleted", kcc.ns, name);
            ok = false;
        }
    }
    kctl_api_status_clear(&st);
    kctl_transport_destroy(&t);
    return ok;
}

/* What a lacking capability or hook skips (tests/contract.h, THE TESTS). */
static void kcc_say_skips(const char *target) {
    static const struct { unsigned cap; const char *tests, *why; } lack[] = {
        { KC_CAP_STATUS, "status_subresource (and the status writes of server_metadata, generation, noop_writes, merge_patch, status_detail)",
          "the resource has no status subresource" },
        { KC_CAP_GENERATION, "generation", "the resource keeps no metadata.generation" },
        { KC_CAP_UNCONDITIONAL_UPDATE, "update_preconditions' update without a resourceVersion", "the server wants one" },
        { KC_CAP_ORDERED_VERSIONS, "watch_too_new", "resourceVersions are opaque" },
    };
    size_t i;
    for (i = 0; i < sizeof lack / sizeof lack[0]; i++)
        if (!(kcc_target.caps & lack[i].cap)) printf("skip contract/%s/%s: %s\n", target, lack[i].tests, lack[i].why);
    printf("skip contract/%s/watch_gone: no way to compact a real server's history on demand\n", target);
    printf("skip contract/%s/watch_broken: no way to break a real server's streams on demand\n", target);
    fflush(stdout);
}

/* Load the kubeconfig, find the resource, probe it, make the target. */
static const char *kcc_path, *kcc_resource, *kcc_name;
static void kcc_setup(void) {
    kctl_api_status st;
    const char *r = kcc_resource, *a, *b;
    char why[512];
    int rc;
    memset(&st, 0, sizeof st);
    kcc.ready = false;
    kcc.rnd = kcc_random();
    a = strchr(r, '/');
    b = a ? strchr(a + 1, '/') : NULL;
    if (!a) {
        kt_fail(__FILE__, __LINE__, "KCTL_TEST_RESOURCE=%s: not group/version/resource", r);
        return;
    }
    if (!b) { /* version/resource: the core group */
        snprintf(kcc.group, sizeof kcc.group, "%s", "");
        snprintf(kcc.version, sizeof kcc.version, "%.*s", (int)(a - r), r);
        snprintf(kcc.resource, sizeof kcc.resource, "%s", a + 1);
    } else {
        snprintf(kcc.group, sizeof kcc.group, "%.*s", (int)(a - r), r);
        snprintf(kcc.version, sizeof kcc.version, "%.*s", (int)(b - a - 1), a + 1);
        snprintf(kcc.resource, sizeof kcc.resource, "%s", b + 1);
    }
    if (!kcc.version[0] || !kcc.resource[0] || strchr(kcc.resource, '/')) {
        kt_fail(__FILE__, __LINE__, "KCTL_TEST_RESOURCE=%s: not group/version/resource", r);
        return;
    }
    if (kcc.group[0]) snprintf(kcc.api_version, sizeof kcc.api_version, "%s/%s", kcc.group, kcc.version);
    else snprintf(kcc.api_version, sizeof kcc.api_version, "%s", kcc.version);
    if ((rc = kctl_kube_config_load(kcc_path, NULL, &kcc.kc, &st)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "kubeconfig %s: %s (%s)", kcc_path, kctl_strerror(rc), st.message ? st.message : "");
        kctl_api_status_clear(&st);
        return;
    }
    snprintf(kcc.ns, sizeof kcc.ns, "%s", kcc.kc.ns);
    if (!kcc_discover(why, sizeof why) || !kcc_probe(why, sizeof why)) {
        kt_fail(__FILE__, __LINE__, "%s", why);
        return;
    }
    memset(&kcc_target, 0, sizeof kcc_target);
    kcc_target.name = kcc_name;
    kcc_target.caps = KC_CAP_ALL & ~(KC_CAP_ORDERED_VERSIONS | KC_CAP_TOO_NEW); /* tests/contract.h, DIFFERENCES: "kubernetes" */
    if (!kcc.status) kcc_target.caps &= ~KC_CAP_STATUS;
    if (!kcc.generation) kcc_target.caps &= ~KC_CAP_GENERATION;
    if (!kcc.unconditional) kcc_target.caps &= ~KC_CAP_UNCONDITIONAL_UPDATE;
    kcc_target.res.group = kcc.group;
    kcc_target.res.version = kcc.version;
    kcc_target.res.resource = kcc.resource;
    kcc_target.res.ns = kcc.ns;
    kcc_target.api_version = kcc.api_version;
    kcc_target.kind = kcc.kind;
    kcc_target.available = kcc_available;
    kcc_target.open = kcc_open;
    kcc_target.close = kcc_close;
    kcc_target.wait_ns = KCTL_SEC(10);
    kcc_target.settle_ns = KCTL_MS(500);
    kcc_target.bookmark_wait_ns = kcc.bookmark_wait_ns;
    if (kcc.srv) { /* ours: its hooks, and its versions are numbers */
        kcc_target.caps |= KC_CAP_ORDERED_VERSIONS | KC_CAP_TOO_NEW;
        kcc_target.compact = kcc_srv_compact;
        kcc_target.progress = kcc_srv_progress;
        kcc_target.break_watches = kcc_srv_break;
    }
    kcc.ready = true;
    if (kcc.srv && !getenv("KT_VERBOSE")) return;
    printf("  contract/%s: %s in namespace %s of %s (kind %s%s%s%s)\n", kcc_name, kcc_resource, kcc.ns, kcc.kc.desc.server, kcc.kind,
           kcc.status ? ", status subresource" : "", kcc.generation ? ", generation" : "",
           kcc.unconditional ? ", updates without a resourceVersion" : "");
    if (!kcc.srv) kcc_say_skips(kcc_name);
}

/* The faults suite's convergence on the cluster (no fault). */
static void kcc_converge(void) {
    kctl_resource res;
    char prefix[40];
    if (!kcc.ready) KT_SKIP();
    if (!kcc.status || !kcc.generation) {
        printf("skip %s: the resource has no %s\n", kt.cur_name, !kcc.status ? "status subresource" : "metadata.generation");
        KT_SKIP();
    }
    res = kcc_target.res;
    snprintf(prefix, sizeof prefix, "kc%08x-f-", (unsigned)kcc.rnd);
    kt_kube_faults_converge(&kcc.kc.desc, &res, kcc.api_version, kcc.kind, prefix);
}

static void kcc_teardown(void) {
    kctl_kube_config_free(&kcc.kc);
    kcc.ready = false;
}

/* The on-demand path on path's cluster, resource, as contract/<name>/...
   (srv: the test server behind it, if it is one). */
static void kcc_run(const char *path, const char *resource, const char *name, uint64_t bookmark_wait_ns, kt_kube_server *srv) {
    char test[96];
    kcc_path = path;
    kcc_resource = resource;
    kcc_name = name;
    memset(&kcc, 0, sizeof kcc);
    kcc.bookmark_wait_ns = bookmark_wait_ns;
    kcc.srv = srv;
    snprintf(test, sizeof test, "contract/%s/setup", name);
    kt_run(kcc_setup, test);
    if (kcc.ready) kc_run_contract(&kcc_target);
    snprintf(test, sizeof test, "contract/%s/converge", name);
    kt_run(kcc_converge, test);
    kcc_teardown();
}

/* ---- the on-demand path in CI: a kubeconfig for a test server, over
   https with mutual TLS where the build has OpenSSL and the openssl
   program is there (the CA, certificate and key as -data fields, as a
   cloud's kubeconfig has them), else plain http with a token. */
static kt_kube_server *kcc_srv;
static char kcc_dir[256], kcc_file[300];

#ifdef KT_HAVE_OPENSSL
/* A CA, a server certificate for 127.0.0.1 and a client certificate in
   kcc_dir, and the base64 of the CA, client certificate and key. */
static bool kcc_certs(void) {
    static const char *const steps[] = {
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=kctl-contract-ca",
        "printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext && printf 'extendedKeyUsage=clientAuth\\n' > client.ext",
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1",
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext",
        "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout client.key -out client.csr -subj /CN=kctl-contract",
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 -extfile client.ext",
        "openssl base64 -A -in ca.crt -out ca.b64 && openssl base64 -A -in client.crt -out crt.b64 && openssl base64 -A -in client.key -out key.b64",
    };
    char cmd[1024];
    size_t i;
    if (strchr(kcc_dir, '\'')) return false;
    for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && %s > /dev/null 2>&1", kcc_dir, steps[i]);
        if (system(cmd) != 0) return false;
    }
    return true;
}

/* The text of kcc_dir/name (at most cap - 1 bytes), "" if unreadable. */
static const char *kcc_read(const char *name, char *buf, size_t cap) {
    char path[400];
    FILE *f;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s", kcc_dir, name);
    if ((f = fopen(path, "r")) != NULL) {
        n = fread(buf, 1, cap - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    return buf;
}
#endif

static void kcc_kubeconfig_start(void) {
    kt_kube_server_desc sd;
    const char *tmp = getenv("TMPDIR");
    char user[12000] = "    token: kctl-test-token\n", cluster[4200] = "";
    char server_crt[400], server_key[400], ca_crt[400];
    FILE *f;
    int rc;
    memset(&sd, 0, sizeof sd);
    kcc_file[0] = '\0';
    snprintf(kcc_dir, sizeof kcc_dir, "%s/kctl-kubeconfig-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(kcc_dir)) {
        kt_fail(__FILE__, __LINE__, "mkdtemp %s", kcc_dir);
        kcc_dir[0] = '\0';
        return;
    }
#ifdef KT_HAVE_OPENSSL
    if (kcc_certs()) {
        char ca[4000], crt[4000], key[1000];
        snprintf(server_crt, sizeof server_crt, "%s/server.crt", kcc_dir);
        snprintf(server_key, sizeof server_key, "%s/server.key", kcc_dir);
        snprintf(ca_crt, sizeof ca_crt, "%s/ca.crt", kcc_dir);
        sd.tls_cert_file = server_crt;
        sd.tls_key_file = server_key;
        sd.tls_client_ca_file = ca_crt;
        snprintf(cluster, sizeof cluster, "    certificate-authority-data: %s\n", kcc_read("ca.b64", ca, sizeof ca));
        snprintf(user, sizeof user, "    client-certificate-data: %s\n    client-key-data: %s\n", kcc_read("crt.b64", crt, sizeof crt),
                 kcc_read("key.b64", key, sizeof key));
    } else if (getenv("KT_VERBOSE")) {
        printf("  contract/kubeconfig: no openssl program: plain http\n");
    }
#else
    (void)server_crt;
    (void)server_key;
    (void)ca_crt;
#endif
    if ((rc = kt_kube_server_start(&sd, &kcc_srv)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "test server: %s", kctl_strerror(rc));
        return;
    }
    snprintf(kcc_file, sizeof kcc_file, "%s/config", kcc_dir);
    if (!(f = fopen(kcc_file, "w"))) {
        kt_fail(__FILE__, __LINE__, "write %s", kcc_file);
        kcc_file[0] = '\0';
        return;
    }
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: %s\n%s  name: kt\ncontexts:\n- context:\n"
               "    cluster: kt\n    namespace: kctl-test\n    user: kt\n  name: kt\ncurrent-context: kt\nusers:\n- name: kt\n"
               "  user:\n%spreferences: {}\n", kt_kube_server_url(kcc_srv), cluster, user);
    KT_EQ_INT(fclose(f), 0);
}

static void kcc_kubeconfig_stop(void) {
    kctl_list_result r;
    kctl_transport t;
    static const kctl_resource res = { "edge.kctl.io", "v1", "deviceconfigs", "kctl-test" };
    if (kcc_srv) { /* everything was cleaned up after */
        t = kt_kube_server_transport(kcc_srv);
        KT_EQ_INT(kctl_transport_list(&t, &res, NULL, &r, NULL), KCTL_OK);
        KT_EQ_U64(r.items.count, 0);
        kctl_list_result_free(&r);
    }
    kt_kube_server_stop(kcc_srv);
    kcc_srv = NULL;
    if (kcc_dir[0]) { /* the kubeconfig, the certificates */
        DIR *d = opendir(kcc_dir);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            char path[600];
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", kcc_dir, e->d_name);
            unlink(path);
        }
        if (d) closedir(d);
        KT_EQ_INT(rmdir(kcc_dir), 0);
        kcc_dir[0] = '\0';
    }
}
#endif /* KT_HAVE_CURL */

#ifndef KT_HAVE_CURL
static void kkc_unavailable(void) { KT_KUBE_REQUIRE_CURL(); }
#endif

void kt_suite_kube_contract(void) {
#ifdef KT_HAVE_CURL
    const char *cfg = getenv("KCTL_TEST_KUBECONFIG"), *res = getenv("KCTL_TEST_RESOURCE");
    kc_run_contract(&kkc_target);
    /* the on-demand path, on a test server through a kubeconfig */
    kt_run(kcc_kubeconfig_start, "contract/kubeconfig/start");
    if (kcc_file[0]) kcc_run(kcc_file, "edge.kctl.io/v1/deviceconfigs", "kubeconfig", KCTL_SEC(3), kcc_srv);
    kt_run(kcc_kubeconfig_stop, "contract/kubeconfig/stop");
    /* on demand: a real cluster */
    if (cfg && *cfg && res && *res) kcc_run(cfg, res, "cluster", KCTL_SEC(75), NULL);
#else
    kt_run(kkc_unavailable, "contract/kube-server");
#endif
}
