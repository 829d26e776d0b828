/* test_etcd.c - the etcd transport (kctl_http_curl.h) on a real etcd: the
   transport contract (tests/contract.h) as target "etcd", then what only a
   remote store has: endpoints that fail over, authentication and an
   expired token, the bounds on a message and a response, a watch that
   looks once, and leader election between two managers.
   TLS: tests/test_etcd_tls.c; a controller under faults:
   tests/test_etcd_faults.c. Waiting here is waiting for a real server
   (deadlines, never a figure of elapsed time in a check). */
#include "kt.h"
#include "contract.h"
#include "etcd_harness.h"
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#ifdef KT_HAVE_CURL
#include "../kctl_http_curl.h"
#include <arpa/inet.h>
#include <pthread.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif

/* Skips (or, with KT_REQUIRE_ETCD, fails) with the reason when etcd or
   libcurl is missing: the contract's tests are then this one line. */
static void te_contract_unavailable(void) {
    KT_ETCD_REQUIRE_CURL();
}

#ifdef KT_HAVE_CURL
static kt_etcd_cluster te_cluster;

static void te_contract_start_failed(void) {
    kt_fail(__FILE__, __LINE__, "etcd start: %s", te_cluster.error);
}

static void te_nap_ms(int ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

static uint64_t te_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A port nothing listens on: bound, then closed (ports in the harness's
   range are not handed out by the kernel to outgoing connections). */
static int te_dead_port(void) {
    struct sockaddr_in a;
    socklen_t n = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd < 0) return 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &n) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* ------------------------------------------------------ the contract target */
/* One member shared by every contract test (started by kt_suite_etcd),
   progress notifications every 250 ms; each store is a fresh key prefix
   on it, with a counting allocator that must end at zero. */
static bool te_cluster_up;
static unsigned te_prefix_seq;

typedef struct te_store {
    kt_alloc a;
    char prefix[64];
} te_store;

static int te_open(const kc_target *t, kc_store *s) {
    kctl_etcd_desc d = kctl_etcd_desc_init();
    te_store *m = (te_store *)calloc(1, sizeof *m);
    int rc;
    (void)t;
    if (!m) return KCTL_ERR_NOMEM;
    kt_alloc_init(&m->a);
    snprintf(m->prefix, sizeof m->prefix, "/kctl-contract/%u", ++te_prefix_seq);
    d.endpoints = te_cluster.endpoints;
    d.prefix = m->prefix;
    d.allocator = kt_allocator(&m->a);
    if ((rc = kctl_etcd_create(&d, &s->tp)) != KCTL_OK) {
        free(m);
        return rc;
    }
    s->impl = m;
    return KCTL_OK;
}

static void te_close(const kc_target *t, kc_store *s) {
    te_store *m = (te_store *)s->impl;
    (void)t;
    kctl_transport_destroy(&s->tp);
    KT_EQ_INT(m->a.live, 0);
    free(m);
}

/* etcd's compaction at the cluster's current revision: a watch from an
   older one is GONE. */
static int te_compact(kc_store *s) {
    long long rev = 0;
    (void)s;
    if (kt_etcd_revision(te_cluster.m[0].url, NULL, 0, &rev, NULL) != 0) return KCTL_ERR_IO;
    return kt_etcd_compact(te_cluster.m[0].url, NULL, rev, 0, NULL) == 0 ? KCTL_OK : KCTL_ERR_IO;
}

/* Bookmarks are progress notifications, which come by themselves every
   progress_notify_ms: nothing to do but wait (bookmark_wait_ns). */
static int te_progress(kc_store *s) {
    (void)s;
    return KCTL_OK;
}

static const kc_target te_target = {
    .name = "etcd",
    .caps = KC_CAP_ALL, /* every capability: tests/contract.h, DIFFERENCES */
    .res = { "example.kctl.io", "v1", "widgets", "contract" },
    .api_version = "example.kctl.io/v1",
    .kind = "Widget",
    .open = te_open,
    .close = te_close,
    .compact = te_compact,
    .progress = te_progress,
    .wait_ns = KCTL_SEC(5),
    .settle_ns = KCTL_MS(300),
    .bookmark_wait_ns = KCTL_SEC(3),
};

/* ------------------------------------------------------------ helpers */
static const kctl_resource te_res = { "example.kctl.io", "v1", "widgets", "default" };

static int te_transport(const char *endpoints, const char *prefix, kt_alloc *a, kctl_transport *t) {
    kctl_etcd_desc d = kctl_etcd_desc_init();
    d.endpoints = endpoints;
    d.prefix = prefix;
    if (a) d.allocator = kt_allocator(a);
    return kctl_etcd_create(&d, t);
}

static int te_create(kctl_transport *t, const char *name, const char *spec, kctl_api_status *st) {
    size_t cap = strlen(name) + strlen(spec) + 128;
    char *doc = (char *)malloc(cap);
    int rc;
    if (!doc) return KCTL_ERR_NOMEM;
    snprintf(doc, cap, "{\"apiVersion\":\"example.kctl.io/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"%s\"},\"spec\":%s}",
             name, spec);
    rc = kctl_transport_create(t, &te_res, doc, KCTL_NTS, NULL, st);
    free(doc);
    return rc;
}

#define TE_START(c, o) do { \
    if (kt_etcd_start((c), (o)) != 0) { \
        kt_fail(__FILE__, __LINE__, "etcd start: %s", (c)->error); \
        kt_etcd_destroy((c), true); \
        return; \
    } } while (0)

/* ------------------------------------------------------------- endpoints */
/* Endpoints that refuse connections are passed over: every call gets
   through, the transport counts the moves, and once one endpoint has
   answered the next call starts there (no new failover). A list of only
   dead endpoints is IO, after one round. */
static void te_failover(void) {
    kt_etcd_cluster c;
    kctl_transport t;
    kctl_etcd_stats s0, s1;
    kctl_obj *o = NULL;
    kctl_api_status st;
    char eps[256];
    int dead1, dead2;
    KT_ETCD_REQUIRE_CURL();
    TE_START(&c, NULL);
    dead1 = te_dead_port();
    dead2 = te_dead_port();
    KT_CHECK(dead1 > 0 && dead2 > 0);
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d,http://127.0.0.1:%d,%s", dead1, dead2, c.m[0].url);
    memset(&st, 0, sizeof st);
    if (te_transport(eps, "/failover", NULL, &t) == KCTL_OK) {
        KT_EQ_INT(te_create(&t, "a", "{\"n\":1}", &st), KCTL_OK);
        kctl_etcd_read_stats(&t, &s0);
        KT_CHECK(s0.failovers >= 2);
        KT_EQ_INT(kctl_transport_get(&t, &te_res, "a", &o, &st), KCTL_OK);
        kctl_obj_unref(o);
        kctl_etcd_read_stats(&t, &s1);
        KT_EQ_U64(s1.failovers, s0.failovers);
        kctl_transport_destroy(&t);
    } else
        kt_fail(__FILE__, __LINE__, "transport");
    snprintf(eps, sizeof eps, "http://127.0.0.1:%d,http://127.0.0.1:%d", dead1, dead2);
    if (te_transport(eps, "/failover", NULL, &t) == KCTL_OK) {
        KT_EQ_INT(kctl_transport_get(&t, &te_res, "a", &o, &st), KCTL_ERR_IO);
        KT_CHECK(o == NULL);
        kctl_transport_destroy(&t);
    }
    kctl_api_status_clear(&st);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* A watch whose member is killed ends with IO (never hangs); a watch
   opened again from the last version, through the same endpoint list,
   reaches a living member and misses nothing written meanwhile. */
static void te_watch_member_killed(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kctl_transport t, w_t;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_api_status st;
    kctl_list_result lr;
    char last[KCTL_RV_MAX] = "", eps[256];
    int rc = KCTL_OK, i, seen_b = 0;
    uint64_t deadline;
    KT_ETCD_REQUIRE_CURL();
    memset(&o, 0, sizeof o);
    o.members = 3;
    TE_START(&c, &o);
    memset(&ev, 0, sizeof ev);
    memset(&lr, 0, sizeof lr);
    memset(&st, 0, sizeof st);
    /* the watcher talks to member 1 first, the writer to the others */
    snprintf(eps, sizeof eps, "%s,%s", c.m[2].url, c.m[1].url);
    if (te_transport(c.endpoints, "/killed", NULL, &w_t) != KCTL_OK || te_transport(eps, "/killed", NULL, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "transport");
        kt_etcd_destroy(&c, true);
        return;
    }
    KT_EQ_INT(kctl_transport_list(&w_t, &te_res, NULL, &lr, &st), KCTL_OK);
    KT_EQ_INT(kctl_transport_watch_open(&w_t, &te_res, NULL, lr.resource_version, &w, &st), KCTL_OK);
    snprintf(last, sizeof last, "%s", lr.resource_version);
    kctl_list_result_free(&lr);
    KT_EQ_INT(te_create(&t, "a", "{\"n\":1}", &st), KCTL_OK);
    rc = kctl_transport_watch_next(&w_t, w, KCTL_SEC(5), &ev, &st);
    KT_EQ_INT(rc, KCTL_OK);
    if (rc == KCTL_OK) {
        KT_EQ_STR(kctl_obj_name(ev.obj), "a");
        snprintf(last, sizeof last, "%s", kctl_obj_resource_version(ev.obj));
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(kt_etcd_kill(&c, 0), 0);
    KT_EQ_INT(te_create(&t, "b", "{\"n\":2}", &st), KCTL_OK);
    /* the stream's end: IO within the watch's own waits, not a hang */
    deadline = te_now_ns() + KCTL_SEC(15);
    do {
        rc = kctl_transport_watch_next(&w_t, w, KCTL_SEC(1), &ev, &st);
        if (rc == KCTL_OK) { /* b may come first, if it was sent before the kill */
            seen_b += !strcmp(kctl_obj_name(ev.obj), "b");
            snprintf(last, sizeof last, "%s", kctl_obj_resource_version(ev.obj));
            kctl_event_clear(&ev);
        }
    } while ((rc == KCTL_OK || rc == KCTL_ERR_TIMEOUT || rc == KCTL_ERR_AGAIN) && te_now_ns() < deadline);
    KT_EQ_INT(rc, KCTL_ERR_IO);
    kctl_transport_watch_close(&w_t, w);
    w = NULL;
    /* again from the last version: a living member, nothing missed */
    for (i = 0; i < 20 && !w; i++) {
        rc = kctl_transport_watch_open(&w_t, &te_res, NULL, last, &w, &st);
        if (rc != KCTL_OK) te_nap_ms(250);
    }
    KT_EQ_INT(rc, KCTL_OK);
    if (w && !seen_b) {
        rc = kctl_transport_watch_next(&w_t, w, KCTL_SEC(5), &ev, &st);
        KT_EQ_INT(rc, KCTL_OK);
        if (rc == KCTL_OK) {
            KT_EQ_STR(kctl_obj_name(ev.obj), "b");
            kctl_event_clear(&ev);
        }
    }
    if (w) kctl_transport_watch_close(&w_t, w);
    kctl_api_status_clear(&st);
    kctl_transport_destroy(&t);
    kctl_transport_destroy(&w_t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* ------------------------------------------------------------------ auth */
/* With auth on: a wrong password is UNAUTHORIZED at create (and the
   password is in no message); the right one works; a token etcd forgot
   (simple tokens die after --auth-token-ttl idle seconds) is renewed
   once, transparently, for a unary request and for a watch. */
static void te_auth(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    kctl_etcd_desc d = kctl_etcd_desc_init();
    kctl_transport t;
    kctl_etcd_stats s0, s1;
    kctl_api_status st;
    kctl_list_result lr;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_obj *obj = NULL;
    int rc;
    KT_ETCD_REQUIRE_CURL();
    memset(&o, 0, sizeof o);
    o.auth_token_ttl_s = 1;
    TE_START(&c, &o);
    memset(&lr, 0, sizeof lr);
    memset(&ev, 0, sizeof ev);
    memset(&st, 0, sizeof st);
    if (kt_etcd_auth_enable(c.m[0].url, "s3cret-pw", 0, &r) != 0) {
        kt_fail(__FILE__, __LINE__, "auth enable: HTTP %d %s", r.http, r.error);
        kt_etcd_reply_free(&r);
        kt_etcd_destroy(&c, true);
        return;
    }
    kt_etcd_reply_free(&r);
    d.endpoints = c.endpoints;
    d.prefix = "/auth";
    d.username = "root";
    d.password = "not-the-pw-XYZ";
    KT_EQ_INT(kctl_etcd_create(&d, &t), KCTL_ERR_UNAUTHORIZED);
    /* no credentials at all: UNAUTHORIZED too (etcd says 400 "user name is empty") */
    d.username = NULL;
    d.password = NULL;
    if (kctl_etcd_create(&d, &t) == KCTL_OK) {
        KT_EQ_INT(kctl_transport_get(&t, &te_res, "x", &obj, &st), KCTL_ERR_UNAUTHORIZED);
        KT_EQ_INT(st.code, 401);
        KT_CHECK(obj == NULL);
        kctl_transport_destroy(&t);
    }
    d.username = "root";
    d.password = "s3cret-pw";
    if (kctl_etcd_create(&d, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "create with the right password");
        kt_etcd_destroy(&c, true);
        return;
    }
    KT_EQ_INT(te_create(&t, "a", "{\"n\":1}", &st), KCTL_OK);
    KT_CHECK(!st.message || !strstr(st.message, "s3cret"));
    KT_EQ_INT(kctl_transport_list(&t, &te_res, NULL, &lr, &st), KCTL_OK);
    /* idle past the token's life: the next request renews it */
    kctl_etcd_read_stats(&t, &s0);
    te_nap_ms(2500);
    KT_EQ_INT(te_create(&t, "b", "{\"n\":2}", &st), KCTL_OK);
    kctl_etcd_read_stats(&t, &s1);
    KT_EQ_U64(s1.reauths, s0.reauths + 1);
    /* and a watch opened with a dead token */
    te_nap_ms(2500);
    rc = kctl_transport_watch_open(&t, &te_res, NULL, lr.resource_version, &w, &st);
    KT_EQ_INT(rc, KCTL_OK);
    if (rc == KCTL_OK) {
        rc = kctl_transport_watch_next(&t, w, KCTL_SEC(5), &ev, &st);
        KT_EQ_INT(rc, KCTL_OK);
        if (rc == KCTL_OK) KT_EQ_STR(kctl_obj_name(ev.obj), "b");
        kctl_event_clear(&ev);
        kctl_transport_watch_close(&t, w);
    }
    kctl_etcd_read_stats(&t, &s0);
    KT_EQ_U64(s0.reauths, s1.reauths + 1);
    kctl_list_result_free(&lr);
    kctl_api_status_clear(&st);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* ---------------------------------------------------------------- bounds */
/* A watch message over max_message_bytes is TOO_LARGE (the watch is then
   over: IO or TOO_LARGE again, never a grown buffer); a response over
   max_response_bytes too. Below the bounds the same objects pass. A
   watch with nothing to say returns at once for timeout 0 (AGAIN). */
static void te_bounds(void) {
    kt_etcd_cluster c;
    kctl_etcd_desc d = kctl_etcd_desc_init();
    kctl_transport t, small;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_api_status st;
    kctl_list_result lr;
    kctl_obj *o = NULL;
    char big[6000];
    int rc;
    KT_ETCD_REQUIRE_CURL();
    TE_START(&c, NULL);
    memset(&ev, 0, sizeof ev);
    memset(&lr, 0, sizeof lr);
    memset(&st, 0, sizeof st);
    memset(big, 'x', sizeof big);
    memcpy(big, "{\"blob\":\"", 9);
    memcpy(big + sizeof big - 3, "\"}", 3);
    if (te_transport(c.endpoints, "/bounds", NULL, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "transport");
        kt_etcd_destroy(&c, true);
        return;
    }
    d.endpoints = c.endpoints;
    d.prefix = "/bounds";
    d.max_message_bytes = 4096;
    d.max_response_bytes = 4096;
    KT_EQ_INT(kctl_etcd_create(&d, &small), KCTL_OK);
    KT_EQ_INT(kctl_transport_list(&small, &te_res, NULL, &lr, &st), KCTL_OK);
    KT_EQ_INT(kctl_transport_watch_open(&small, &te_res, NULL, lr.resource_version, &w, &st), KCTL_OK);
    /* nothing yet: timeout 0 looks once */
    if (w) KT_EQ_INT(kctl_transport_watch_next(&small, w, 0, &ev, &st), KCTL_ERR_AGAIN);
    KT_EQ_INT(te_create(&t, "small", "{\"n\":1}", &st), KCTL_OK);
    if (w) { /* its own message (the big one could share it) */
        rc = kctl_transport_watch_next(&small, w, KCTL_SEC(5), &ev, &st);
        KT_EQ_INT(rc, KCTL_OK);
        if (rc == KCTL_OK) KT_EQ_STR(kctl_obj_name(ev.obj), "small");
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(te_create(&t, "big", big, &st), KCTL_OK);
    if (w) {
        KT_EQ_INT(kctl_transport_watch_next(&small, w, KCTL_SEC(5), &ev, &st), KCTL_ERR_TOO_LARGE);
        KT_CHECK(ev.obj == NULL);
        rc = kctl_transport_watch_next(&small, w, 0, &ev, &st);
        KT_CHECK(rc != KCTL_OK && rc != KCTL_ERR_AGAIN);
        kctl_transport_watch_close(&small, w);
    }
    /* unary: the small object reads, the big one is TOO_LARGE */
    KT_EQ_INT(kctl_transport_get(&small, &te_res, "small", &o, &st), KCTL_OK);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_transport_get(&small, &te_res, "big", &o, &st), KCTL_ERR_TOO_LARGE);
    KT_CHECK(o == NULL);
    /* the default bounds pass it */
    KT_EQ_INT(kctl_transport_get(&t, &te_res, "big", &o, &st), KCTL_OK);
    kctl_obj_unref(o);
    kctl_list_result_free(&lr);
    kctl_api_status_clear(&st);
    kctl_transport_destroy(&small);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* A watcher that falls behind: 300 events of about 1 KB wait in the
   socket while nobody reads, with max_message_bytes 4096. They all come,
   in order, with no broken stream: the transport holds at most the bound
   and a little more, and pauses the transfer until the lines it holds are
   read (it used to fail the stream once a burst passed that). */
static void te_watch_burst(void) {
    kt_etcd_cluster c;
    kctl_etcd_desc d = kctl_etcd_desc_init();
    kctl_transport t, small;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_api_status st;
    kctl_list_result lr;
    kctl_etcd_stats es;
    char spec[1100], name[16];
    int i, rc = KCTL_OK, got = 0;
    KT_ETCD_REQUIRE_CURL();
    TE_START(&c, NULL);
    memset(&ev, 0, sizeof ev);
    memset(&lr, 0, sizeof lr);
    memset(&st, 0, sizeof st);
    memset(spec, 'y', sizeof spec);
    memcpy(spec, "{\"pad\":\"", 8);
    memcpy(spec + sizeof spec - 3, "\"}", 3);
    d.endpoints = c.endpoints;
    d.prefix = "/burst";
    d.max_message_bytes = 4096;
    if (te_transport(c.endpoints, "/burst", NULL, &t) != KCTL_OK || kctl_etcd_create(&d, &small) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "transport");
        kt_etcd_destroy(&c, true);
        return;
    }
    KT_EQ_INT(kctl_transport_list(&small, &te_res, NULL, &lr, &st), KCTL_OK);
    KT_EQ_INT(kctl_transport_watch_open(&small, &te_res, NULL, lr.resource_version, &w, &st), KCTL_OK);
    for (i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "b%03d", i);
        KT_EQ_INT(te_create(&t, name, spec, &st), KCTL_OK);
    }
    while (w && got < 300) {
        rc = kctl_transport_watch_next(&small, w, KCTL_SEC(5), &ev, &st);
        if (rc != KCTL_OK) break;
        if (ev.type == KCTL_EVENT_BOOKMARK) continue;
        snprintf(name, sizeof name, "b%03d", got);
        KT_EQ_STR(kctl_obj_name(ev.obj), name);
        kctl_event_clear(&ev);
        got++;
    }
    KT_EQ_INT(rc, KCTL_OK);
    KT_EQ_INT(got, 300);
    kctl_etcd_read_stats(&small, &es);
    KT_EQ_U64(es.watches, 1);
    if (w) kctl_transport_watch_close(&small, w);
    kctl_list_result_free(&lr);
    kctl_api_status_clear(&st);
    kctl_transport_destroy(&small);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* A value of the form the transport writes: a Widget named name whose
   spec pads it to about pad bytes; into buf (cap bytes). */
static void te_doc(char *buf, size_t cap, const char *name, size_t pad) {
    size_t n = (size_t)snprintf(buf, cap, "{\"apiVersion\":\"example.kctl.io/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"%s\","
                                          "\"namespace\":\"default\"},\"spec\":{\"pad\":\"", name);
    while (n < pad && n + 3 < cap) buf[n++] = 'z';
    snprintf(buf + n, cap - n, "\"}}");
}

/* A watch that catches up from far behind gets etcd's batch of up to
   1000 revisions in one answer, megabytes past any message bound without
   fragments. The transport asks for fragments, puts the parts together,
   and holds a revision a part left unfinished until the rest comes. Here
   etcd's --max-request-bytes is 32 KiB, so its parts are at most 544 KiB
   (it adds 512 KiB for gRPC) of protobuf, about 1 MB of JSON: 50 objects
   of 2 KB, then 60 txns of 12 objects each (one revision each, so the
   parts' ends fall inside revisions), about 2.6 MB of JSON, watched from
   before them all with max_message_bytes 1.5 MiB: everything arrives, in
   order, each txn's events with its revision (without fragments: TOO_LARGE). */
static void te_watch_fragments(void) {
    static const char *const args[] = { "--max-request-bytes=32768", NULL };
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kctl_etcd_desc d = kctl_etcd_desc_init();
    kctl_transport t;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_api_status st;
    kctl_list_result lr;
    char name[16], doc[2300], from[KCTL_RV_MAX];
    char *body = NULL;
    int i, k, rc = KCTL_OK, got = 0, txn_events = 0;
    long long txn_rev[60] = { 0 };
    KT_ETCD_REQUIRE_CURL();
    memset(&o, 0, sizeof o);
    o.extra_args = args;
    TE_START(&c, &o);
    memset(&ev, 0, sizeof ev);
    memset(&lr, 0, sizeof lr);
    memset(&st, 0, sizeof st);
    d.endpoints = c.endpoints;
    d.prefix = "/frag";
    d.max_message_bytes = 1536 * 1024;
    if (kctl_etcd_create(&d, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "transport");
        kt_etcd_destroy(&c, true);
        return;
    }
    KT_EQ_INT(kctl_transport_list(&t, &te_res, NULL, &lr, &st), KCTL_OK);
    snprintf(from, sizeof from, "%s", lr.resource_version);
    kctl_list_result_free(&lr);
    for (i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "a%03d", i);
        te_doc(doc, sizeof doc, name, 2000);
        KT_EQ_INT(kctl_transport_create(&t, &te_res, doc, KCTL_NTS, NULL, &st), KCTL_OK);
    }
    body = (char *)malloc(12 * 3200 + 64);
    for (k = 0; body && k < 60; k++) { /* 12 keys in one revision, as the transport lays them out */
        kt_etcd_reply r = {0};
        size_t n = (size_t)sprintf(body, "{\"success\":[");
        for (i = 0; i < 12; i++) {
            char key[64], *kb, *vb;
            snprintf(name, sizeof name, "t%02d-%02d", k, i);
            snprintf(key, sizeof key, "/frag/example.kctl.io/widgets/default/%s", name);
            te_doc(doc, sizeof doc, name, 1900);
            kb = kt_etcd_b64(key, strlen(key));
            vb = kt_etcd_b64(doc, strlen(doc));
            n += (size_t)sprintf(body + n, "%s{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}", i ? "," : "", kb, vb);
            free(kb);
            free(vb);
        }
        sprintf(body + n, "]}");
        KT_EQ_INT(kt_etcd_http(c.m[0].url, "POST", "/v3/kv/txn", body, NULL, 0, &r), 0);
        txn_rev[k] = r.revision;
        kt_etcd_reply_free(&r);
    }
    free(body);
    KT_EQ_INT(kctl_transport_watch_open(&t, &te_res, NULL, from, &w, &st), KCTL_OK);
    while (w && got < 50 + 720) {
        rc = kctl_transport_watch_next(&t, w, KCTL_SEC(5), &ev, &st);
        if (rc != KCTL_OK) break;
        if (ev.type == KCTL_EVENT_BOOKMARK) continue;
        if (got < 50) {
            snprintf(name, sizeof name, "a%03d", got);
            KT_EQ_STR(kctl_obj_name(ev.obj), name);
        } else {
            int tk = (got - 50) / 12;
            char want[24];
            snprintf(want, sizeof want, "%lld", txn_rev[tk]);
            KT_EQ_STR(ev.resource_version, want);
            txn_events++;
        }
        kctl_event_clear(&ev);
        got++;
    }
    KT_EQ_INT(rc, KCTL_OK);
    KT_EQ_INT(got, 770);
    KT_EQ_INT(txn_events, 720);
    if (w) kctl_transport_watch_close(&t, w);
    kctl_api_status_clear(&st);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* -------------------------------------------------------------- paging */
/* A list's pages are all read at the first page's revision; once etcd
   has compacted past it, the next page is GONE (410 Expired: list again
   from the start), and a malformed continue token is a bad request. */
static void te_list_compacted(void) {
    kt_etcd_cluster c;
    kctl_transport t;
    kctl_list_opts lo;
    kctl_list_result lr;
    kctl_api_status st;
    char tok[KCTL_CONTINUE_MAX], name[16];
    long long rev = 0;
    int i;
    KT_ETCD_REQUIRE_CURL();
    TE_START(&c, NULL);
    memset(&lo, 0, sizeof lo);
    memset(&lr, 0, sizeof lr);
    memset(&st, 0, sizeof st);
    if (te_transport(c.endpoints, "/paging", NULL, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "transport");
        kt_etcd_destroy(&c, true);
        return;
    }
    for (i = 0; i < 5; i++) {
        snprintf(name, sizeof name, "o%d", i);
        KT_EQ_INT(te_create(&t, name, "{}", &st), KCTL_OK);
    }
    lo.limit = 2;
    KT_EQ_INT(kctl_transport_list(&t, &te_res, &lo, &lr, &st), KCTL_OK);
    KT_EQ_INT(lr.items.count, 2);
    snprintf(tok, sizeof tok, "%s", lr.continue_token);
    KT_CHECK(tok[0] != '\0');
    kctl_list_result_free(&lr);
    KT_EQ_INT(te_create(&t, "o9", "{}", &st), KCTL_OK); /* the revision moves on */
    KT_EQ_INT(kt_etcd_revision(c.m[0].url, NULL, 0, &rev, NULL), 0);
    KT_EQ_INT(kt_etcd_compact(c.m[0].url, NULL, rev, 0, NULL), 0);
    lo.continue_token = tok;
    KT_EQ_INT(kctl_transport_list(&t, &te_res, &lo, &lr, &st), KCTL_ERR_GONE);
    KT_EQ_INT(st.code, 410);
    KT_EQ_STR(st.reason, "Expired");
    KT_EQ_INT(lr.items.count, 0);
    kctl_list_result_free(&lr);
    lo.continue_token = "not-a-token";
    KT_EQ_INT(kctl_transport_list(&t, &te_res, &lo, &lr, &st), KCTL_ERR_INVALID_ARG);
    kctl_list_result_free(&lr);
    kctl_api_status_clear(&st);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* ---------------------------------------------------------------- leader */
typedef struct te_mgr {
    kctl_transport t;
    kctl_manager *m;
} te_mgr;

static kctl_reconcile_result te_mgr_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0, false, false, 0 };
    (void)ctx;
    return r;
}

static int te_mgr_start(te_mgr *g, const char *endpoints, const char *identity) {
    kctl_manager_desc md;
    kctl_controller_desc cd;
    int rc;
    memset(&md, 0, sizeof md);
    memset(&cd, 0, sizeof cd);
    if ((rc = te_transport(endpoints, "/leader", NULL, &g->t)) != KCTL_OK) return rc;
    md.transport = g->t;
    md.lease_name = "kctl-test";
    md.identity = identity;
    md.lease_ns = KCTL_SEC(2);
    md.renew_deadline_ns = KCTL_MS(1500);
    md.retry_ns = KCTL_MS(250);
    md.graceful_timeout_ns = KCTL_SEC(5);
    if ((rc = kctl_manager_create(&md, &g->m)) != KCTL_OK) {
        kctl_transport_destroy(&g->t);
        return rc;
    }
    cd.name = "widgets";
    cd.reconcile = te_mgr_reconcile;
    if ((rc = kctl_manager_informer(g->m, &te_res, NULL, NULL, &cd.primary)) != KCTL_OK ||
        (rc = kctl_manager_add_controller(g->m, &cd, NULL)) != KCTL_OK || (rc = kctl_manager_start(g->m, KCTL_SEC(10))) != KCTL_OK) {
        kctl_manager_destroy(g->m);
        kctl_transport_destroy(&g->t);
        g->m = NULL;
    }
    return rc;
}

static void te_mgr_end(te_mgr *g) {
    if (!g->m) return;
    kctl_manager_destroy(g->m);
    kctl_transport_destroy(&g->t);
    g->m = NULL;
}

/* Waits until exactly one of the managers leads (the other not), up to
   15 s; returns its index, -1 if none. */
static int te_one_leader(te_mgr *g, int n) {
    uint64_t deadline = te_now_ns() + KCTL_SEC(15);
    do {
        int i, leaders = 0, who = -1;
        for (i = 0; i < n; i++)
            if (g[i].m && kctl_manager_is_leader(g[i].m)) { leaders++; who = i; }
        if (leaders == 1) return who;
        te_nap_ms(50);
    } while (te_now_ns() < deadline);
    return -1;
}

/* Two managers on one etcd cluster (each on its own transport): one
   leads, the other waits; the leader stops (without releasing: its Lease
   is just no longer renewed) and the other takes over once the lease
   runs out, within the lease's own time (no kill needed); a release on
   stop hands over at the next try. The Lease is an object in etcd,
   written with resourceVersion preconditions. */
static void te_leader_two_managers(void) {
    kt_etcd_cluster c;
    te_mgr g[2];
    kctl_manager_leader_info li;
    int first, second;
    KT_ETCD_REQUIRE_CURL();
    TE_START(&c, NULL);
    memset(g, 0, sizeof g);
    KT_EQ_INT(te_mgr_start(&g[0], c.endpoints, "replica-a"), KCTL_OK);
    KT_EQ_INT(te_mgr_start(&g[1], c.endpoints, "replica-b"), KCTL_OK);
    first = te_one_leader(g, 2);
    KT_CHECK(first >= 0);
    if (first >= 0) {
        int other = 1 - first;
        /* a while later, still exactly the same leader (renewals work) */
        te_nap_ms(1500);
        KT_EQ_INT(te_one_leader(g, 2), first);
        KT_CHECK(!kctl_manager_lost_lease(g[first].m));
        KT_EQ_INT(kctl_manager_stop(g[first].m), KCTL_OK);
        te_mgr_end(&g[first]);
        second = te_one_leader(g, 2);
        KT_EQ_INT(second, other);
        kctl_manager_read_leader(g[other].m, &li);
        KT_EQ_INT(li.terms, 1);
        KT_CHECK(!li.lost);
    }
    te_mgr_end(&g[0]);
    te_mgr_end(&g[1]);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* ------------------------------------------------------------ checkpoint */
/* An informer's checkpoint on etcd (issue 13: the resourceVersion is
   opaque, so it works on any store): a restart resumes the watch from the
   saved revision without a list, and reconciles run from the checkpoint
   while etcd is down; a checkpoint older than etcd's compaction is GONE:
   one relist, whose diff gives the deletes. Objects are written in bulk
   (1000 puts a txn, as the transport lays them out) so that 10,000 take
   a second, not a minute. */
typedef struct te_ck {
    unsigned char *data;
    size_t len;
    int saves, adds, updates, syncs, deletes, unknown_deletes, runs;
} te_ck;

static int te_ck_save(const void *data, size_t len, void *ud) {
    te_ck *c = (te_ck *)ud;
    free(c->data);
    if (!(c->data = (unsigned char *)malloc(len ? len : 1))) return KCTL_ERR_NOMEM;
    memcpy(c->data, data, len);
    c->len = len;
    c->saves++;
    return KCTL_OK;
}
static int te_ck_load(const void **data, size_t *len, void *ud) {
    te_ck *c = (te_ck *)ud;
    if (!c->data) return KCTL_ERR_NOT_FOUND;
    *data = c->data;
    *len = c->len;
    return KCTL_OK;
}
static void te_ck_add(kctl_obj *o, void *ud) { (void)o; ((te_ck *)ud)->adds++; }
static void te_ck_update(kctl_obj *o, kctl_obj *n, void *ud) {
    te_ck *c = (te_ck *)ud;
    if (strcmp(kctl_obj_resource_version(o), kctl_obj_resource_version(n)) == 0) c->syncs++;
    else c->updates++;
}
static void te_ck_delete(const char *k, kctl_obj *o, bool unknown, void *ud) {
    te_ck *c = (te_ck *)ud;
    (void)k;
    (void)o;
    c->deletes++;
    c->unknown_deletes += unknown;
}
static kctl_reconcile_result te_ck_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    ((te_ck *)ctx->user_data)->runs++;
    return r;
}

static const kctl_resource te_ck_res = { "example.kctl.io", "v1", "widgets", "ckpt" };

/* An informer on t with a counting handler and c's checkpoint;
   set_checkpoint must answer expect. */
static kctl_informer *te_ck_informer(kctl_transport t, te_ck *c, int expect) {
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_checkpoint_desc cd = kctl_checkpoint_desc_init();
    kctl_handler h;
    memset(&d, 0, sizeof d);
    d.transport = t;
    d.resource = te_ck_res;
    if (kctl_informer_create(&d, &inf) != KCTL_OK) return NULL;
    memset(&h, 0, sizeof h);
    h.on_add = te_ck_add;
    h.on_update = te_ck_update;
    h.on_delete = te_ck_delete;
    h.user_data = c;
    kctl_informer_add_handler(inf, &h);
    cd.save_fn = te_ck_save;
    cd.load_fn = te_ck_load;
    cd.user_data = c;
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), expect);
    return inf;
}

/* The etcd key of widget name in namespace ckpt under prefix. */
static void te_ck_key(char *key, size_t cap, const char *prefix, const char *name) {
    snprintf(key, cap, "%s/example.kctl.io/widgets/ckpt/%s", prefix, name);
}
static void te_ck_doc(char *doc, size_t cap, const char *name, int v) {
    snprintf(doc, cap, "{\"apiVersion\":\"example.kctl.io/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ckpt\"},"
             "\"spec\":{\"v\":%d}}", name, v);
}

/* Put w-00000 .. w-(n-1) under prefix, 1000 a txn (the cluster runs with
   --max-txn-ops=1000). 0, or -1. */
static int te_ck_bulk(const char *url, const char *prefix, int n) {
    char *body = (char *)malloc(1000 * 400 + 64);
    int i = 0, rc = 0;
    while (body && rc == 0 && i < n) {
        kt_etcd_reply r = {0};
        size_t len = (size_t)sprintf(body, "{\"success\":[");
        int k;
        for (k = 0; k < 1000 && i < n; k++, i++) {
            char name[16], key[96], doc[256], *kb, *vb;
            snprintf(name, sizeof name, "w-%05d", i);
            te_ck_key(key, sizeof key, prefix, name);
            te_ck_doc(doc, sizeof doc, name, 0);
            kb = kt_etcd_b64(key, strlen(key));
            vb = kt_etcd_b64(doc, strlen(doc));
            len += (size_t)sprintf(body + len, "%s{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}", k ? "," : "", kb, vb);
            free(kb);
            free(vb);
        }
        sprintf(body + len, "]}");
        rc = kt_etcd_http(url, "POST", "/v3/kv/txn", body, NULL, 0, &r);
        if (rc != 0) kt_fail(__FILE__, __LINE__, "bulk txn: http %d %s", r.http, r.error);
        kt_etcd_reply_free(&r);
    }
    free(body);
    return body ? rc : -1;
}

static int te_ck_put(const char *url, const char *prefix, const char *name, int v) {
    char key[96], doc[256];
    te_ck_key(key, sizeof key, prefix, name);
    te_ck_doc(doc, sizeof doc, name, v);
    return kt_etcd_put(url, NULL, key, doc, 0, NULL);
}
static int te_ck_del(const char *url, const char *prefix, const char *name) {
    char key[96], body[200], *kb;
    int rc;
    te_ck_key(key, sizeof key, prefix, name);
    kb = kt_etcd_b64(key, strlen(key));
    snprintf(body, sizeof body, "{\"key\":\"%s\"}", kb ? kb : "");
    free(kb);
    rc = kt_etcd_http(url, "POST", "/v3/kv/deleterange", body, NULL, 0, NULL);
    return rc;
}

/* Step inf (real time, up to 30 s) until done(c, inf) says so. */
static bool te_ck_until(kctl_informer *inf, te_ck *c, bool (*done)(te_ck *, kctl_informer *)) {
    uint64_t end = te_now_ns() + KCTL_SEC(30);
    while (!done(c, inf)) {
        if (te_now_ns() > end) return false;
        kctl_informer_step(inf, KCTL_MS(50), NULL);
    }
    return true;
}
static bool te_ck_synced(te_ck *c, kctl_informer *inf) { (void)c; return kctl_informer_has_synced(inf); }
static bool te_ck_hundred(te_ck *c, kctl_informer *inf) {
    (void)inf;
    return c->adds >= 10000 + 30 && c->updates >= 40 && c->deletes >= 30;
}
static uint64_t te_ck_bookmarks_at;
static bool te_ck_bookmark(te_ck *c, kctl_informer *inf) { /* etcd's progress: everything up to now was sent */
    kctl_reflector_stats st;
    (void)c;
    kctl_informer_read_stats(inf, &st);
    return st.bookmarks > te_ck_bookmarks_at;
}

/* A controller with 10,000 cached objects checkpoints and stops; etcd
   moves on by 100 events (40 updates, 30 creates, 30 deletes) and stops
   too. The restart, with etcd down, syncs from the checkpoint and runs
   its 10,000 reconciles; etcd comes back and the watch resumes from the
   saved revision: no list at all, exactly those 100 events (checked once
   a progress notification has said everything up to etcd's revision was
   sent), then 100 reconciles. */
static void te_ckpt_resume(void) {
    static const char *const args[] = { "--max-txn-ops=1000", NULL };
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kctl_transport t;
    kctl_informer *inf;
    kctl_controller *ctl = NULL;
    kctl_controller_desc cdesc;
    kctl_checkpoint_stats cs;
    kctl_reflector_stats st;
    te_ck ck;
    long long rev = 0, saved = 0;
    char name[16], want[24];
    size_t done = 0;
    int i;
    KT_ETCD_REQUIRE_CURL();
    memset(&o, 0, sizeof o);
    o.extra_args = args;
    TE_START(&c, &o);
    memset(&ck, 0, sizeof ck);
    if (te_ck_bulk(c.m[0].url, "/ckpt", 10000) != 0 || te_transport(c.endpoints, "/ckpt", NULL, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "setup");
        kt_etcd_destroy(&c, true);
        return;
    }
    /* the first run: lists, and checkpoints when it stops */
    inf = te_ck_informer(t, &ck, KCTL_ERR_NOT_FOUND);
    KT_CHECK(te_ck_until(inf, &ck, te_ck_synced));
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 10000);
    kctl_informer_destroy(inf);
    KT_EQ_INT(ck.saves, 1);
    KT_EQ_INT(kt_etcd_revision(c.m[0].url, NULL, 0, &saved, NULL), 0);
    /* while it is down, etcd moves on by 100 events */
    for (i = 0; i < 40; i++) { snprintf(name, sizeof name, "w-%05d", i); KT_EQ_INT(te_ck_put(c.m[0].url, "/ckpt", name, 1), 0); }
    for (i = 0; i < 30; i++) { snprintf(name, sizeof name, "new-%02d", i); KT_EQ_INT(te_ck_put(c.m[0].url, "/ckpt", name, 0), 0); }
    for (i = 100; i < 130; i++) { snprintf(name, sizeof name, "w-%05d", i); KT_EQ_INT(te_ck_del(c.m[0].url, "/ckpt", name), 0); }
    KT_EQ_INT(kt_etcd_revision(c.m[0].url, NULL, 0, &rev, NULL), 0);
    KT_EQ_INT((int)(rev - saved), 100);
    /* the restart, with etcd down */
    KT_EQ_INT(kt_etcd_kill(&c, 0), 0);
    memset(&ck.adds, 0, sizeof ck - offsetof(te_ck, adds));
    inf = te_ck_informer(t, &ck, KCTL_OK);
    kctl_informer_checkpoint_stats(inf, &cs);
    KT_EQ_U64(cs.loaded, 10000);
    snprintf(want, sizeof want, "%lld", saved);
    KT_EQ_STR(cs.loaded_rv, want);
    memset(&cdesc, 0, sizeof cdesc);
    cdesc.primary = inf;
    cdesc.transport = t;
    cdesc.reconcile = te_ck_reconcile;
    cdesc.user_data = &ck;
    KT_EQ_INT(kctl_controller_create(&cdesc, &ctl), KCTL_OK);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_CHECK(kctl_informer_has_synced(inf)); /* synced from the checkpoint */
    kctl_informer_read_stats(inf, &st);
    KT_CHECK(st.errors > 0); /* etcd was asked, and was not there */
    KT_EQ_INT(ck.adds, 10000);
    if (ctl) KT_EQ_INT(kctl_controller_step(ctl, 20000, &done), KCTL_OK);
    KT_EQ_U64(done, 10000); /* reconciles ran before the store was reachable */
    KT_EQ_INT(ck.runs, 10000);
    /* etcd comes back: the watch resumes from the saved revision */
    KT_EQ_INT(kt_etcd_restart(&c, 0, 0), 0);
    KT_CHECK(te_ck_until(inf, &ck, te_ck_hundred));
    kctl_informer_read_stats(inf, &st);
    te_ck_bookmarks_at = st.bookmarks;
    KT_CHECK(te_ck_until(inf, &ck, te_ck_bookmark)); /* nothing more is on its way */
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.lists, 0);
    KT_EQ_U64(st.relists, 0);
    KT_EQ_INT(ck.adds - 10000, 30);
    KT_EQ_INT(ck.updates, 40);
    KT_EQ_INT(ck.deletes, 30);
    KT_EQ_INT(ck.unknown_deletes, 0);
    KT_EQ_INT(ck.syncs, 0);
    KT_EQ_U64(st.added, 30);
    KT_EQ_U64(st.modified, 40);
    KT_EQ_U64(st.deleted, 30);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 10000);
    done = 0;
    if (ctl) kctl_controller_step(ctl, 20000, &done);
    KT_EQ_U64(done, 100);
    kctl_controller_destroy(ctl);
    kctl_informer_destroy(inf);
    free(ck.data);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

static bool te_ck_relisted(te_ck *c, kctl_informer *inf) {
    kctl_reflector_stats st;
    (void)c;
    kctl_informer_read_stats(inf, &st);
    return st.relists >= 1 && kctl_informer_has_synced(inf);
}

/* etcd compacted past the checkpoint's revision: the resumed watch is
   GONE, one relist, whose diff against the checkpointed cache gives the
   5 deletes (final state unknown), the 5 changes as updates and the 5 new
   objects as adds. */
static void te_ckpt_compacted(void) {
    static const char *const args[] = { "--max-txn-ops=1000", NULL };
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kctl_transport t;
    kctl_informer *inf;
    kctl_reflector_stats st;
    te_ck ck;
    long long rev = 0;
    char name[16];
    int i;
    KT_ETCD_REQUIRE_CURL();
    memset(&o, 0, sizeof o);
    o.extra_args = args;
    TE_START(&c, &o);
    memset(&ck, 0, sizeof ck);
    if (te_ck_bulk(c.m[0].url, "/ckgone", 50) != 0 || te_transport(c.endpoints, "/ckgone", NULL, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "setup");
        kt_etcd_destroy(&c, true);
        return;
    }
    inf = te_ck_informer(t, &ck, KCTL_ERR_NOT_FOUND);
    KT_CHECK(te_ck_until(inf, &ck, te_ck_synced));
    kctl_informer_destroy(inf);
    KT_EQ_INT(ck.saves, 1);
    for (i = 0; i < 5; i++) { snprintf(name, sizeof name, "w-%05d", i); KT_EQ_INT(te_ck_del(c.m[0].url, "/ckgone", name), 0); }
    for (i = 5; i < 10; i++) { snprintf(name, sizeof name, "w-%05d", i); KT_EQ_INT(te_ck_put(c.m[0].url, "/ckgone", name, 1), 0); }
    for (i = 0; i < 5; i++) { snprintf(name, sizeof name, "new-%02d", i); KT_EQ_INT(te_ck_put(c.m[0].url, "/ckgone", name, 0), 0); }
    KT_EQ_INT(kt_etcd_revision(c.m[0].url, NULL, 0, &rev, NULL), 0);
    KT_EQ_INT(kt_etcd_compact(c.m[0].url, NULL, rev, 0, NULL), 0);
    memset(&ck.adds, 0, sizeof ck - offsetof(te_ck, adds));
    inf = te_ck_informer(t, &ck, KCTL_OK);
    KT_CHECK(te_ck_until(inf, &ck, te_ck_relisted));
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.lists, 1);
    KT_EQ_U64(st.relists, 1);
    KT_EQ_INT(ck.adds, 50 + 5); /* the checkpoint's, then the new ones */
    KT_EQ_INT(ck.updates, 5);
    KT_EQ_INT(ck.deletes, 5);
    KT_EQ_INT(ck.unknown_deletes, 5); /* DeletedFinalStateUnknown */
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 50);
    kctl_informer_destroy(inf);
    free(ck.data);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* ------------------------------------------------------ a store gone back */
/* Copy the tree at src to dst (files and directories; etcd's data
   directory has nothing else), and remove a tree. 0, or -1. */
static int te_copy_tree(const char *src, const char *dst) {
    DIR *d = opendir(src);
    struct dirent *e;
    int rc = 0;
    if (!d || mkdir(dst, 0700) != 0) {
        if (d) closedir(d);
        return -1;
    }
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char s[600], t[600];
        struct stat sb;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(s, sizeof s, "%s/%s", src, e->d_name);
        snprintf(t, sizeof t, "%s/%s", dst, e->d_name);
        if (stat(s, &sb) != 0) rc = -1;
        else if (S_ISDIR(sb.st_mode)) rc = te_copy_tree(s, t);
        else {
            int in = open(s, O_RDONLY), out = open(t, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            char buf[65536];
            ssize_t n;
            if (in < 0 || out < 0) rc = -1;
            while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
                if (write(out, buf, (size_t)n) != n) rc = -1;
            if (in >= 0) close(in);
            if (out >= 0) close(out);
        }
    }
    closedir(d);
    return rc;
}
static int te_rm_tree(const char *path) {
    DIR *d = opendir(path);
    struct dirent *e;
    if (!d) return unlink(path);
    while ((e = readdir(d)) != NULL) {
        char s[600];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(s, sizeof s, "%s/%s", path, e->d_name);
        te_rm_tree(s);
    }
    closedir(d);
    return rmdir(path);
}

static bool te_ck_behind(te_ck *c, kctl_informer *inf) {
    kctl_reflector_stats st;
    (void)c;
    kctl_informer_read_stats(inf, &st);
    return st.relists >= 1;
}
static bool te_ck_later(te_ck *c, kctl_informer *inf) {
    (void)inf;
    return c->adds >= 10 + 1;
}

/* etcd restored from an older snapshot (its data directory as it was at
   revision 6, copied while it was stopped): the informer had seen
   revision 11. Its watch breaks with the restart; watching again from 11
   is refused (etcd's revision is 6: "too large resource version"), which
   used to be retried forever; now it is counted and, after a backoff,
   the informer lists etcd as it is: the 5 objects written after the
   snapshot are deletes with their final state unknown, and the watch
   goes on from etcd's revision (a new object arrives). */
static void te_store_went_back(void) {
    kt_etcd_cluster c;
    kctl_transport t;
    kctl_informer *inf;
    kctl_reflector_stats st;
    te_ck ck;
    char name[16], backup[320];
    int i;
    KT_ETCD_REQUIRE_CURL();
    TE_START(&c, NULL);
    memset(&ck, 0, sizeof ck);
    snprintf(backup, sizeof backup, "%s/m1-snapshot", c.dir);
    if (te_transport(c.endpoints, "/behind", NULL, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "transport");
        kt_etcd_destroy(&c, true);
        return;
    }
    for (i = 0; i < 5; i++) { snprintf(name, sizeof name, "w-%05d", i); KT_EQ_INT(te_ck_put(c.m[0].url, "/behind", name, 0), 0); }
    /* the snapshot: etcd stopped, its data directory copied */
    KT_CHECK(kt_etcd_term(&c, 0, 0) >= 0);
    KT_EQ_INT(te_copy_tree(c.m[0].data_dir, backup), 0);
    KT_EQ_INT(kt_etcd_restart(&c, 0, 0), 0);
    for (i = 5; i < 10; i++) { snprintf(name, sizeof name, "w-%05d", i); KT_EQ_INT(te_ck_put(c.m[0].url, "/behind", name, 0), 0); }
    inf = te_ck_informer(t, &ck, KCTL_ERR_NOT_FOUND);
    KT_CHECK(te_ck_until(inf, &ck, te_ck_synced));
    KT_EQ_INT(ck.adds, 10);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_STR(st.last_rv, "11");
    /* etcd restored from the snapshot */
    KT_EQ_INT(kt_etcd_kill(&c, 0), 0);
    KT_EQ_INT(te_rm_tree(c.m[0].data_dir), 0);
    KT_EQ_INT(rename(backup, c.m[0].data_dir), 0);
    KT_EQ_INT(kt_etcd_restart(&c, 0, 0), 0);
    KT_CHECK(te_ck_until(inf, &ck, te_ck_behind));
    kctl_informer_read_stats(inf, &st);
    KT_CHECK(st.store_behind >= 1);
    KT_EQ_U64(st.relists, 1);
    KT_EQ_STR(st.last_rv, "6");
    KT_EQ_INT(ck.deletes, 5); /* w-5..9: not in the snapshot */
    KT_EQ_INT(ck.unknown_deletes, 5);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 5);
    KT_EQ_INT(te_ck_put(c.m[0].url, "/behind", "later", 0), 0);
    KT_CHECK(te_ck_until(inf, &ck, te_ck_later));
    KT_EQ_INT(ck.adds, 10 + 1);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_STR(st.last_rv, "7");
    kctl_informer_destroy(inf);
    free(ck.data);
    kctl_transport_destroy(&t);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

/* ------------------------------------------------------------ the step loop */
/* A single-threaded manager (kctl_manager_step) on etcd: the transport's
   watch_notify wakes it when the watch has news, so an idle loop asks for
   no wake-up before its next real deadline (here the watch's stall check,
   minutes away: no lease, no resync, and etcd's progress notifications at
   10 minutes, etcd's own default), not the 1 s poll a transport without
   the entry gets; an etcd write calls the wake-up, and the next step
   reconciles it. Waiting for the wake-up is waiting for a real server (a
   deadline, never a figure of elapsed time in a check). */
typedef struct te_wk {
    pthread_mutex_t mu;
    int wakes, runs;
} te_wk;
static void te_wk_wake(void *ud) { /* from the transport's waiter thread */
    te_wk *w = (te_wk *)ud;
    pthread_mutex_lock(&w->mu);
    w->wakes++;
    pthread_mutex_unlock(&w->mu);
}
static int te_wk_wakes(te_wk *w) {
    int n;
    pthread_mutex_lock(&w->mu);
    n = w->wakes;
    pthread_mutex_unlock(&w->mu);
    return n;
}
static kctl_reconcile_result te_wk_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    ((te_wk *)ctx->user_data)->runs++;
    return r;
}

/* Step m until it is idle (a deadline later than now); false after 50 steps. */
static bool te_wk_idle(kctl_manager *m, uint64_t *dl, uint64_t *now) {
    int i;
    for (i = 0; i < 50; i++) {
        if (kctl_manager_step(m, 64, dl) != KCTL_OK) return false;
        *now = kctl_clock_now(NULL);
        if (*dl > *now) return true;
    }
    return false;
}

static void te_step_wake(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kctl_transport t;
    kctl_manager_desc md;
    kctl_manager *m = NULL;
    kctl_controller_desc cd;
    te_wk wk;
    uint64_t dl = 0, now = 0, end;
    int w0, i, k;
    KT_ETCD_REQUIRE_CURL();
    memset(&o, 0, sizeof o);
    o.progress_notify_ms = 600000;
    TE_START(&c, &o);
    memset(&wk, 0, sizeof wk);
    pthread_mutex_init(&wk.mu, NULL);
    if (te_transport(c.endpoints, "/step", NULL, &t) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "transport");
        kt_etcd_destroy(&c, true);
        return;
    }
    for (i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i);
        KT_EQ_INT(te_create(&t, name, "{}", NULL), KCTL_OK);
    }
    memset(&md, 0, sizeof md);
    md.transport = t;
    md.wake.fn = te_wk_wake;
    md.wake.user_data = &wk;
    KT_EQ_INT(kctl_manager_create(&md, &m), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.name = "widgets";
    cd.reconcile = te_wk_reconcile;
    cd.user_data = &wk;
    if (m && kctl_manager_informer(m, &te_res, NULL, NULL, &cd.primary) == KCTL_OK &&
        kctl_manager_add_controller(m, &cd, NULL) == KCTL_OK) {
        KT_CHECK(te_wk_idle(m, &dl, &now));
        KT_EQ_INT(wk.runs, 3);
        /* idle: the next deadline is the stall check, not a 1 s poll */
        KT_CHECK(dl > now + KCTL_SEC(1));
        KT_CHECK(dl > now + KCTL_SEC(60));
        w0 = te_wk_wakes(&wk);
        /* an etcd write wakes the loop, which sleeps until woken (an
           event may come in more than one piece, each a wake-up) and then
           steps until idle; twice */
        for (k = 0; k < 2; k++) {
            KT_EQ_INT(te_create(&t, k ? "later" : "late", "{}", NULL), KCTL_OK);
            for (i = 0; i < 20 && wk.runs < 4 + k; i++) {
                end = te_now_ns() + KCTL_SEC(10);
                while (te_wk_wakes(&wk) == w0 && te_now_ns() < end) te_nap_ms(5);
                if (te_wk_wakes(&wk) == w0) break; /* never woken */
                w0 = te_wk_wakes(&wk);
                KT_CHECK(te_wk_idle(m, &dl, &now));
                KT_CHECK(dl > now + KCTL_SEC(60));
            }
            KT_EQ_INT(wk.runs, 4 + k); /* woken, and reconciled */
        }
    } else {
        kt_fail(__FILE__, __LINE__, "manager");
    }
    kctl_manager_destroy(m);
    kctl_transport_destroy(&t);
    pthread_mutex_destroy(&wk.mu);
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}
#endif /* KT_HAVE_CURL */

void kt_suite_etcd(void) {
#ifdef KT_HAVE_CURL
    kt_etcd_opts o;
    memset(&o, 0, sizeof o);
    o.progress_notify_ms = 250;
    if (!kt_etcd_unavailable()) {
        if (kt_etcd_start(&te_cluster, &o) == 0)
            te_cluster_up = true;
        else
            fprintf(stderr, "etcd contract: %s\n", te_cluster.error);
    }
    if (te_cluster_up)
        kc_run_contract(&te_target);
    else
        kt_run(kt_etcd_unavailable() ? te_contract_unavailable : te_contract_start_failed, "contract/etcd");
    if (!kt_etcd_unavailable()) kt_etcd_destroy(&te_cluster, kt.failed > 0);
    KT_RUN(te_failover);
    KT_RUN(te_watch_member_killed);
    KT_RUN(te_auth);
    KT_RUN(te_bounds);
    KT_RUN(te_list_compacted);
    KT_RUN(te_watch_burst);
    KT_RUN(te_watch_fragments);
    KT_RUN(te_leader_two_managers);
    KT_RUN(te_ckpt_resume);
    KT_RUN(te_ckpt_compacted);
    KT_RUN(te_store_went_back);
    KT_RUN(te_step_wake);
#else
    kt_run(te_contract_unavailable, "contract/etcd");
#endif
}
