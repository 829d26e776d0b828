/* test_etcd_tls.c - the etcd transport (kctl_http_curl.h) over TLS and
   mTLS, against real etcd members with certificates the harness made
   (tests/etcd_harness.h, TLS): the CA from a file and from memory, client
   certificates from files and from memory, a wrong CA and none (the
   server is not trusted: verification is on unless insecure), insecure,
   a client without a certificate against an mTLS member, and no
   credential (password, key, certificate) in any Status. Each test starts
   its own one-member cluster (about 0.3 s with its certificates). */
#include "kt.h"
#include "etcd_harness.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef KT_HAVE_CURL
#include "../kctl_http_curl.h"
#endif

/* The harness's own checks first (no libcurl): a TLS cluster's members
   listen on https, answer /health on their plain metrics port (which the
   start and restart wait on), the harness's client refuses https with the
   reason, the leader is read from /metrics, and nothing is left after
   destroy, the metrics ports included. */
static void tls_harness(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    KT_ETCD_REQUIRE();
    KT_ETCD_REQUIRE_OPENSSL();
    memset(&o, 0, sizeof o);
    o.tls = KT_ETCD_TLS_MTLS;
    if (kt_etcd_start(&c, &o) != 0) {
        kt_fail(__FILE__, __LINE__, "etcd start: %s", c.error);
        kt_etcd_destroy(&c, true);
        return;
    }
    KT_CHECK(strncmp(c.m[0].url, "https://127.0.0.1:", 18) == 0);
    KT_CHECK(strncmp(c.endpoints, "https://", 8) == 0);
    KT_CHECK(strncmp(c.m[0].metrics_url, "http://127.0.0.1:", 17) == 0);
    KT_CHECK(c.m[0].metrics_port > 0 && c.m[0].metrics_port != c.m[0].client_port && c.m[0].metrics_port != c.m[0].peer_port);
    KT_CHECK(access(c.tls.ca, R_OK) == 0 && access(c.tls.server_cert, R_OK) == 0 && access(c.tls.server_key, R_OK) == 0);
    KT_CHECK(access(c.tls.client_cert, R_OK) == 0 && access(c.tls.client_key, R_OK) == 0 && access(c.tls.other_ca, R_OK) == 0);
    KT_CHECK(strncmp(c.tls.ca, c.dir, strlen(c.dir)) == 0);
    KT_EQ_INT(kt_etcd_http(c.m[0].url, "GET", "/health", NULL, NULL, 1000, &r), -1);
    KT_CHECK(strstr(r.error, "no TLS") != NULL);
    KT_EQ_INT(kt_etcd_http(c.m[0].metrics_url, "GET", "/health", NULL, NULL, 1000, &r), 0);
    KT_CHECK(r.body && strstr(r.body, "\"health\":\"true\""));
    KT_EQ_INT(kt_etcd_leader(&c, 5000), 0);
    KT_EQ_INT(kt_etcd_term(&c, 0, 0), 0);
    KT_EQ_INT(kt_etcd_restart(&c, 0, 0), 0);
    KT_EQ_INT(kt_etcd_leader(&c, 5000), 0);
    kt_etcd_reply_free(&r);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
    KT_EQ_INT(kt_etcd_leftovers(&c), 0);
    KT_EQ_INT(kt_etcd_ports_in_use(&c), 0);
    if (kt.cur_failed == 0) KT_CHECK(access(c.dir, F_OK) != 0);
}

#ifdef KT_HAVE_CURL
static const kctl_resource tls_res = { "", "v1", "configmaps", "default" };

/* The whole file, malloc'd: *n its length; a NUL follows unless exact
   (then the buffer is exactly *n bytes: a read past it is the
   sanitizer's to see). NULL when it cannot be read. */
static char *tls_slurp(const char *path, size_t *n, bool exact) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long size;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = (char *)malloc((size_t)size + (exact ? 0 : 1))) != NULL) {
        if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
            free(buf);
            buf = NULL;
        } else {
            *n = (size_t)size;
            if (!exact) buf[size] = '\0';
        }
    }
    fclose(f);
    return buf;
}

/* needle anywhere in st's text (reason, message, details, causes). */
static bool tls_status_has(const kctl_api_status *st, const char *needle) {
    size_t k;
    const char *fields[5];
    int i;
    fields[0] = st->reason;
    fields[1] = st->message;
    fields[2] = st->name;
    fields[3] = st->group;
    fields[4] = st->kind;
    for (i = 0; i < 5; i++)
        if (fields[i] && strstr(fields[i], needle)) return true;
    for (k = 0; k < st->cause_count; k++)
        if ((st->causes[k].reason && strstr(st->causes[k].reason, needle)) ||
            (st->causes[k].message && strstr(st->causes[k].message, needle)) ||
            (st->causes[k].field && strstr(st->causes[k].field, needle)))
            return true;
    return false;
}

/* No PEM and no piece of the cluster's keys and certificates in st: the
   PEM armour, and 32 characters from the middle of each file's base64. */
static void tls_status_clean(const kt_etcd_cluster *c, const kctl_api_status *st, int line) {
    const char *files[5];
    int i;
    files[0] = c->tls.ca;
    files[1] = c->tls.client_cert;
    files[2] = c->tls.client_key;
    files[3] = c->tls.server_key;
    files[4] = c->tls.other_ca;
    if (tls_status_has(st, "-----") || tls_status_has(st, "PRIVATE KEY") || tls_status_has(st, "CERTIFICATE"))
        kt_fail(__FILE__, line, "PEM in a Status: %s", st->message ? st->message : "");
    for (i = 0; i < 5; i++) {
        size_t n = 0;
        char *pem = tls_slurp(files[i], &n, false), piece[33];
        if (!pem || n < 100) {
            kt_fail(__FILE__, line, "cannot read %s", files[i]);
            free(pem);
            continue;
        }
        memcpy(piece, pem + n / 2 - 16, 32); /* inside the base64 body */
        piece[32] = '\0';
        if (tls_status_has(st, piece)) kt_fail(__FILE__, line, "a piece of %s in a Status: %s", files[i], st->message);
        free(pem);
    }
}

/* A transport to c with tls (others: defaults, 3 s requests). */
static int tls_transport(const kt_etcd_cluster *c, const kctl_http_tls *tls, kctl_transport *t) {
    kctl_etcd_desc d = kctl_etcd_desc_init();
    d.endpoints = c->endpoints;
    if (tls) d.tls = *tls;
    d.request_timeout_ns = KCTL_SEC(3);
    return kctl_etcd_create(&d, t);
}

static const char *tls_doc(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
             "\"data\":{\"k\":\"v\"}}", name);
    return buf;
}

/* Everything over t: create <tag>-a, get it, list it, watch from the
   list's version and see <tag>-b's creation arrive. */
static void tls_roundtrip(const kctl_transport *t, const char *tag, int line) {
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_list_result l;
    kctl_watch *w = NULL;
    char doc[256], a[64], b[64];
    size_t k;
    int rc, events = 0;
    bool found = false, seen = false;
    memset(&st, 0, sizeof st);
    memset(&l, 0, sizeof l);
    snprintf(a, sizeof a, "%s-a", tag);
    snprintf(b, sizeof b, "%s-b", tag);
    if ((rc = kctl_transport_create(t, &tls_res, tls_doc(doc, sizeof doc, a), KCTL_NTS, &o, &st)) != KCTL_OK) {
        kt_fail(__FILE__, line, "%s: create: %s (%s)", tag, kctl_strerror(rc), st.message ? st.message : "");
        kctl_api_status_clear(&st);
        return;
    }
    kctl_obj_unref(o);
    o = NULL;
    if ((rc = kctl_transport_get(t, &tls_res, a, &o, &st)) != KCTL_OK || !o || strcmp(kctl_obj_name(o), a) != 0)
        kt_fail(__FILE__, line, "%s: get: %s (%s)", tag, kctl_strerror(rc), st.message ? st.message : "");
    kctl_obj_unref(o);
    if ((rc = kctl_transport_list(t, &tls_res, NULL, &l, &st)) != KCTL_OK) {
        kt_fail(__FILE__, line, "%s: list: %s (%s)", tag, kctl_strerror(rc), st.message ? st.message : "");
        kctl_api_status_clear(&st);
        return;
    }
    for (k = 0; k < l.items.count; k++)
        if (strcmp(kctl_obj_name(l.items.items[k]), a) == 0) found = true;
    if (!found || !l.resource_version[0]) kt_fail(__FILE__, line, "%s: the list lacks %s (rv %s)", tag, a, l.resource_version);
    if ((rc = kctl_transport_watch_open(t, &tls_res, NULL, l.resource_version, &w, &st)) != KCTL_OK) {
        kt_fail(__FILE__, line, "%s: watch: %s (%s)", tag, kctl_strerror(rc), st.message ? st.message : "");
        kctl_obj_list_free(&l.items);
        kctl_api_status_clear(&st);
        return;
    }
    kctl_obj_list_free(&l.items);
    if ((rc = kctl_transport_create(t, &tls_res, tls_doc(doc, sizeof doc, b), KCTL_NTS, NULL, &st)) != KCTL_OK)
        kt_fail(__FILE__, line, "%s: create %s: %s", tag, b, kctl_strerror(rc));
    while (rc == KCTL_OK && !seen && events++ < 20) { /* bookmarks may come first */
        kctl_event ev;
        if ((rc = kctl_transport_watch_next(t, w, KCTL_SEC(5), &ev, &st)) != KCTL_OK) {
            kt_fail(__FILE__, line, "%s: watch_next: %s (%s)", tag, kctl_strerror(rc), st.message ? st.message : "");
            break;
        }
        if (ev.type == KCTL_EVENT_ADDED && ev.obj && strcmp(kctl_obj_name(ev.obj), b) == 0) seen = true;
        else if (ev.type != KCTL_EVENT_BOOKMARK)
            kt_fail(__FILE__, line, "%s: an unexpected event %d", tag, ev.type);
        kctl_obj_unref(ev.obj);
    }
    if (rc == KCTL_OK && !seen) kt_fail(__FILE__, line, "%s: the watch never brought %s", tag, b);
    kctl_transport_watch_close(t, w);
    kctl_api_status_clear(&st);
}

/* What a transport that cannot get through says: rc for get, list,
   create and watch, each with a Status free of credentials. */
static void tls_refused(const kt_etcd_cluster *c, const kctl_transport *t, int want, int line) {
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_list_result l;
    kctl_watch *w = NULL;
    char doc[256];
    int rc;
    memset(&st, 0, sizeof st);
    memset(&l, 0, sizeof l);
    if ((rc = kctl_transport_get(t, &tls_res, "x", &o, &st)) != want)
        kt_fail(__FILE__, line, "get: %s, not %s (%s)", kctl_strerror(rc), kctl_strerror(want), st.message ? st.message : "");
    if (!st.code || !st.message || !*st.message) kt_fail(__FILE__, line, "get: no Status");
    tls_status_clean(c, &st, line);
    kctl_obj_unref(o);
    if ((rc = kctl_transport_list(t, &tls_res, NULL, &l, &st)) != want)
        kt_fail(__FILE__, line, "list: %s, not %s", kctl_strerror(rc), kctl_strerror(want));
    tls_status_clean(c, &st, line);
    if (rc == KCTL_OK) kctl_obj_list_free(&l.items);
    if ((rc = kctl_transport_create(t, &tls_res, tls_doc(doc, sizeof doc, "x"), KCTL_NTS, NULL, &st)) != want)
        kt_fail(__FILE__, line, "create: %s, not %s", kctl_strerror(rc), kctl_strerror(want));
    tls_status_clean(c, &st, line);
    if ((rc = kctl_transport_watch_open(t, &tls_res, NULL, "1", &w, &st)) != want)
        kt_fail(__FILE__, line, "watch: %s, not %s", kctl_strerror(rc), kctl_strerror(want));
    tls_status_clean(c, &st, line);
    if (w) kctl_transport_watch_close(t, w);
    kctl_api_status_clear(&st);
}

#define TLS_START(c, mode) do { \
    kt_etcd_opts o_; \
    memset(&o_, 0, sizeof o_); \
    o_.tls = (mode); \
    if (kt_etcd_start((c), &o_) != 0) { \
        kt_fail(__FILE__, __LINE__, "etcd start: %s", (c)->error); \
        kt_etcd_destroy((c), true); \
        return; \
    } } while (0)
#endif

/* (a) Server TLS, the CA from a file. */
static void tls_ca_file(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        kctl_http_tls tls;
        kctl_transport t;
        TLS_START(&c, KT_ETCD_TLS_SERVER);
        memset(&tls, 0, sizeof tls);
        tls.ca_file = c.tls.ca;
        KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
        tls_roundtrip(&t, "cafile", __LINE__);
        kctl_transport_destroy(&t);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* (b) The CA from memory: NUL-terminated (KCTL_NTS), and as an explicit
   length over a buffer of exactly that many bytes. The length is obeyed:
   the other CA's PEM followed by the right one, with the length of the
   first alone, trusts only the other CA. */
static void tls_ca_data(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        kctl_http_tls tls;
        kctl_transport t;
        char *ca, *exact, *other, *both;
        size_t n = 0, xn = 0, on = 0;
        TLS_START(&c, KT_ETCD_TLS_SERVER);
        ca = tls_slurp(c.tls.ca, &n, false);
        exact = tls_slurp(c.tls.ca, &xn, true);
        other = tls_slurp(c.tls.other_ca, &on, false);
        KT_CHECK(ca && exact && other);
        if (ca && exact && other) {
            memset(&tls, 0, sizeof tls);
            tls.ca_data = ca;
            tls.ca_len = KCTL_NTS;
            KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
            memset(ca, 'x', n); /* copied at create: the caller's buffer is free to go */
            tls_roundtrip(&t, "nts", __LINE__);
            kctl_transport_destroy(&t);

            tls.ca_data = exact;
            tls.ca_len = xn;
            KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
            tls_roundtrip(&t, "len", __LINE__);
            kctl_transport_destroy(&t);

            if ((both = (char *)malloc(on + xn + 1)) != NULL) {
                memcpy(both, other, on);
                memcpy(both + on, exact, xn);
                both[on + xn] = '\0';
                tls.ca_data = both;
                tls.ca_len = on; /* the other CA only */
                KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
                tls_refused(&c, &t, KCTL_ERR_IO, __LINE__);
                kctl_transport_destroy(&t);
                tls.ca_len = on + xn; /* both: the right one among them */
                KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
                tls_roundtrip(&t, "both", __LINE__);
                kctl_transport_destroy(&t);
                free(both);
            }
        }
        free(ca);
        free(exact);
        free(other);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* (c) mTLS, the client's certificate and key from files. */
static void tls_mtls_files(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        kctl_http_tls tls;
        kctl_transport t;
        TLS_START(&c, KT_ETCD_TLS_MTLS);
        memset(&tls, 0, sizeof tls);
        tls.ca_file = c.tls.ca;
        tls.cert_file = c.tls.client_cert;
        tls.key_file = c.tls.client_key;
        KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
        tls_roundtrip(&t, "mfiles", __LINE__);
        kctl_transport_destroy(&t);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* (d) mTLS, everything from memory: the certificate NUL-terminated, the
   key and the CA as exact lengths (buffers without a NUL); then the other
   way round. */
static void tls_mtls_data(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        kctl_http_tls tls;
        kctl_transport t;
        char *ca, *cert, *key, *certx, *keyn;
        size_t can = 0, cn = 0, kn = 0, cxn = 0, knn = 0;
        TLS_START(&c, KT_ETCD_TLS_MTLS);
        ca = tls_slurp(c.tls.ca, &can, true);
        cert = tls_slurp(c.tls.client_cert, &cn, false);
        key = tls_slurp(c.tls.client_key, &kn, true);
        certx = tls_slurp(c.tls.client_cert, &cxn, true);
        keyn = tls_slurp(c.tls.client_key, &knn, false);
        KT_CHECK(ca && cert && key && certx && keyn);
        if (ca && cert && key && certx && keyn) {
            memset(&tls, 0, sizeof tls);
            tls.ca_data = ca;
            tls.ca_len = can;
            tls.cert_data = cert;
            tls.cert_len = KCTL_NTS;
            tls.key_data = key;
            tls.key_len = kn;
            KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
            tls_roundtrip(&t, "mdata", __LINE__);
            kctl_transport_destroy(&t);

            tls.cert_data = certx;
            tls.cert_len = cxn;
            tls.key_data = keyn;
            tls.key_len = KCTL_NTS;
            KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
            tls_roundtrip(&t, "mdata2", __LINE__);
            kctl_transport_destroy(&t);
        }
        free(ca);
        free(cert);
        free(key);
        free(certx);
        free(keyn);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* (e) The server is verified: a CA that did not sign its certificate
   (file or memory) is IO on every verb, and so is no CA at all (the
   system's store does not know the harness's CA); the Status names the
   failure and holds no certificate or key. */
static void tls_wrong_ca(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        kctl_http_tls tls;
        kctl_transport t;
        kctl_api_status st;
        char *other;
        size_t on = 0;
        TLS_START(&c, KT_ETCD_TLS_SERVER);
        memset(&st, 0, sizeof st);
        memset(&tls, 0, sizeof tls);
        tls.ca_file = c.tls.other_ca;
        KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
        tls_refused(&c, &t, KCTL_ERR_IO, __LINE__);
        kctl_transport_destroy(&t);

        if ((other = tls_slurp(c.tls.other_ca, &on, false)) != NULL) {
            memset(&tls, 0, sizeof tls);
            tls.ca_data = other;
            tls.ca_len = KCTL_NTS;
            KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
            tls_refused(&c, &t, KCTL_ERR_IO, __LINE__);
            kctl_transport_destroy(&t);
            free(other);
        }

        KT_EQ_INT(tls_transport(&c, NULL, &t), KCTL_OK); /* no CA: the system's, which lacks it */
        tls_refused(&c, &t, KCTL_ERR_IO, __LINE__);
        {   /* the Status says why: libcurl's words for a peer not verified */
            kctl_obj *o = NULL;
            kctl_watch *w = NULL;
            KT_EQ_INT(kctl_transport_get(&t, &tls_res, "x", &o, &st), KCTL_ERR_IO);
            KT_CHECK(st.message && strstr(st.message, "certificate"));
            KT_EQ_INT(st.code, 503);
            KT_EQ_INT(kctl_transport_watch_open(&t, &tls_res, NULL, "1", &w, &st), KCTL_ERR_IO);
            KT_CHECK(st.message && strstr(st.message, "certificate"));
            kctl_api_status_clear(&st);
        }
        kctl_transport_destroy(&t);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* (f) insecure: no CA, no verification, everything works. */
static void tls_insecure(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        kctl_http_tls tls;
        kctl_transport t;
        TLS_START(&c, KT_ETCD_TLS_SERVER);
        memset(&tls, 0, sizeof tls);
        tls.insecure = true;
        KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
        tls_roundtrip(&t, "insecure", __LINE__);
        kctl_transport_destroy(&t);
        tls.ca_file = c.tls.other_ca; /* a wrong CA does not matter then */
        KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
        tls_roundtrip(&t, "insecure2", __LINE__);
        kctl_transport_destroy(&t);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* (g) An mTLS member and a client without a certificate (or with a key
   that is not its certificate's): IO on every verb, at once (not the
   request timeout: IO, not TIMEOUT), the Status free of key material. */
static void tls_mtls_no_client_cert(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        kctl_http_tls tls;
        kctl_transport t;
        TLS_START(&c, KT_ETCD_TLS_MTLS);
        memset(&tls, 0, sizeof tls);
        tls.ca_file = c.tls.ca;
        KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
        tls_refused(&c, &t, KCTL_ERR_IO, __LINE__);
        kctl_transport_destroy(&t);
        tls.cert_file = c.tls.client_cert;
        tls.key_file = c.tls.server_key; /* not the certificate's key */
        KT_EQ_INT(tls_transport(&c, &tls, &t), KCTL_OK);
        tls_refused(&c, &t, KCTL_ERR_IO, __LINE__);
        kctl_transport_destroy(&t);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* A member whose certificate is not trusted is one that did not answer:
   the transport moves on to the next endpoint. The first endpoint is
   another cluster, whose certificate the given CA did not sign; create
   (its read first), get, list and a watch all reach the second. */
static void tls_failover_handshake(void) {
    KT_ETCD_REQUIRE_CURL();
    KT_ETCD_REQUIRE_OPENSSL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c, other;
        kctl_etcd_desc d = kctl_etcd_desc_init();
        kctl_transport t;
        kctl_etcd_stats stats;
        char eps[2 * sizeof c.endpoints + 2];
        TLS_START(&c, KT_ETCD_TLS_SERVER);
        {
            kt_etcd_opts o;
            memset(&o, 0, sizeof o);
            o.tls = KT_ETCD_TLS_SERVER;
            if (kt_etcd_start(&other, &o) != 0) {
                kt_fail(__FILE__, __LINE__, "etcd start: %s", other.error);
                kt_etcd_destroy(&other, true);
                kt_etcd_destroy(&c, true);
                return;
            }
        }
        snprintf(eps, sizeof eps, "%s,%s", other.endpoints, c.endpoints);
        d.endpoints = eps;
        d.tls.ca_file = c.tls.ca;
        d.request_timeout_ns = KCTL_SEC(3);
        KT_EQ_INT(kctl_etcd_create(&d, &t), KCTL_OK);
        tls_roundtrip(&t, "failover", __LINE__);
        kctl_etcd_read_stats(&t, &stats);
        KT_CHECK(stats.failovers >= 1);
        kctl_transport_destroy(&t);
        KT_EQ_INT(kctl_etcd_create(&d, &t), KCTL_OK); /* a watch first: it too moves on */
        {
            kctl_watch *w = NULL;
            kctl_api_status st;
            kctl_event ev;
            int rc, n = 0;
            memset(&st, 0, sizeof st);
            rc = kctl_transport_watch_open(&t, &tls_res, NULL, "1", &w, &st);
            if (rc != KCTL_OK) kt_fail(__FILE__, __LINE__, "watch: %s (%s)", kctl_strerror(rc), st.message ? st.message : "");
            while (w && n < 3 && (rc = kctl_transport_watch_next(&t, w, KCTL_SEC(5), &ev, &st)) == KCTL_OK) {
                if (ev.type == KCTL_EVENT_ADDED) n++; /* failover-a, failover-b: what the roundtrip made */
                kctl_obj_unref(ev.obj);
                if (n == 2) break;
            }
            KT_EQ_INT(n, 2);
            if (w) kctl_transport_watch_close(&t, w);
            kctl_api_status_clear(&st);
        }
        kctl_transport_destroy(&t);
        kt_etcd_destroy(&other, kt.cur_failed > 0);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

/* (h) A password never shows: not in the Status of a failed
   authentication (a wrong password at create; a token renewal with a
   password that changed meanwhile), nor of any other refusal. Plain
   http: the harness enables auth over its own client. */
static void tls_no_password_in_status(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        static const char pw[] = "S3cret-pw-0f-root", pw2[] = "N3w-pw-0f-root";
        kt_etcd_cluster c;
        kt_etcd_reply r = {0};
        kctl_etcd_desc d = kctl_etcd_desc_init();
        kctl_transport t;
        kctl_api_status st;
        kctl_obj *o = NULL;
        char token[256], body[256];
        int rc;
        if (kt_etcd_start(&c, NULL) != 0) {
            kt_fail(__FILE__, __LINE__, "etcd start: %s", c.error);
            kt_etcd_destroy(&c, true);
            return;
        }
        memset(&st, 0, sizeof st);
        if (kt_etcd_auth_enable(c.m[0].url, pw, 0, &r) != 0) kt_fail(__FILE__, __LINE__, "auth enable: %s", r.error);
        d.endpoints = c.endpoints;
        d.username = "root";
        d.password = "wrong-pw-f0r-root";
        KT_EQ_INT(kctl_etcd_create(&d, &t), KCTL_ERR_UNAUTHORIZED);
        d.password = pw;
        KT_EQ_INT(kctl_etcd_create(&d, &t), KCTL_OK);
        KT_EQ_INT(kctl_transport_get(&t, &tls_res, "x", &o, &st), KCTL_ERR_NOT_FOUND);
        KT_CHECK(!tls_status_has(&st, pw));
        /* the password changes; etcd forgets its tokens when it restarts */
        KT_EQ_INT(kt_etcd_authenticate(c.m[0].url, "root", pw, token, sizeof token, 0, &r), 0);
        snprintf(body, sizeof body, "{\"name\":\"root\",\"password\":\"%s\"}", pw2);
        if (kt_etcd_http(c.m[0].url, "POST", "/v3/auth/user/changepw", body, token, 0, &r) != 0)
            kt_fail(__FILE__, __LINE__, "changepw: HTTP %d %s", r.http, r.error);
        KT_EQ_INT(kt_etcd_term(&c, 0, 0), 0);
        KT_EQ_INT(kt_etcd_restart(&c, 0, 0), 0);
        rc = kctl_transport_get(&t, &tls_res, "x", &o, &st);
        if (rc != KCTL_ERR_UNAUTHORIZED) kt_fail(__FILE__, __LINE__, "get: %s (%d %s)", kctl_strerror(rc), st.code, st.message ? st.message : "");
        KT_CHECK(st.code != 0 && st.message && *st.message);
        KT_CHECK(!tls_status_has(&st, pw));
        KT_CHECK(!tls_status_has(&st, pw2));
        KT_CHECK(!tls_status_has(&st, "S3cret"));
        /* no token now: every call tries to authenticate again (not "user
           name is empty", which would never renew it) */
        rc = kctl_transport_create(&t, &tls_res, tls_doc(body, sizeof body, "y"), KCTL_NTS, NULL, &st);
        if (rc != KCTL_ERR_UNAUTHORIZED) kt_fail(__FILE__, __LINE__, "create: %s (%d %s)", kctl_strerror(rc), st.code, st.message ? st.message : "");
        KT_CHECK(!tls_status_has(&st, pw));
        KT_CHECK(!tls_status_has(&st, pw2));
        /* the password the transport knows is back: it recovers */
        KT_EQ_INT(kt_etcd_authenticate(c.m[0].url, "root", pw2, token, sizeof token, 0, &r), 0);
        snprintf(body, sizeof body, "{\"name\":\"root\",\"password\":\"%s\"}", pw);
        if (kt_etcd_http(c.m[0].url, "POST", "/v3/auth/user/changepw", body, token, 0, &r) != 0)
            kt_fail(__FILE__, __LINE__, "changepw: HTTP %d %s", r.http, r.error);
        rc = kctl_transport_get(&t, &tls_res, "x", &o, &st);
        if (rc != KCTL_ERR_NOT_FOUND) kt_fail(__FILE__, __LINE__, "get: %s (%d %s)", kctl_strerror(rc), st.code, st.message ? st.message : "");
        KT_EQ_INT(kctl_transport_create(&t, &tls_res, tls_doc(body, sizeof body, "y"), KCTL_NTS, NULL, &st), KCTL_OK);
        kctl_api_status_clear(&st);
        kctl_transport_destroy(&t);
        kt_etcd_reply_free(&r);
        kt_etcd_destroy(&c, kt.cur_failed > 0);
    }
#endif
}

void kt_suite_etcd_tls(void) {
    KT_RUN(tls_harness);
    KT_RUN(tls_ca_file);
    KT_RUN(tls_ca_data);
    KT_RUN(tls_mtls_files);
    KT_RUN(tls_mtls_data);
    KT_RUN(tls_wrong_ca);
    KT_RUN(tls_insecure);
    KT_RUN(tls_mtls_no_client_cert);
    KT_RUN(tls_failover_handshake);
    KT_RUN(tls_no_password_in_status);
}
