/* test_etcd_faults.c - a controller on the etcd transport, through the
   faults a real cluster has. Three members; a controller with three
   workers (informer + controller, the transport's endpoints = all three
   members) reconciles TEF_N "devices": the desired value in spec, a
   simulated device in memory that reconcile sets to the spec, and
   status.observedGeneration and status.value written back through
   kctl_status_update (a write that changes nothing is skipped). A writer
   thread, another client with a transport of its own, keeps changing
   specs during each fault; it retries a change until etcd acknowledges it
   (a merge patch that sets a value is idempotent) and records the last
   value acknowledged per object.

   Each scenario ends the same way: the writer stops, and within a
   deadline (an upper bound on waiting, never a figure checked) every
   device equals its object's last acknowledged spec, the store (read
   through the harness's own client, no kctl code) holds that spec, and
   every status says observedGeneration == metadata.generation and the
   same value: nothing the writer was told was written is lost, on the
   store or on the device.

   Where a test must know that something happened in a given order (a
   reconcile holding a stale object while another writer moves the object
   on, an informer that is behind while the store is compacted), it holds
   the device or the informer at a gate instead of relying on timing.
   KT_VERBOSE=1 prints each scenario's counts. */
#include "kt.h"
#include "etcd_harness.h"
#include <stdlib.h>

#ifdef KT_HAVE_CURL
#include "../kctl_http_curl.h"
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include "fault_rig.h"

#define TEF_N 24              /* devices */
#define TEF_WORKERS 3
#define TEF_CONVERGE_MS 30000 /* the deadline for convergence (an upper bound) */
#define TEF_BACKOFF_BASE_NS KCTL_MS(5)  /* the controller's per-key limiter */
#define TEF_BACKOFF_MAX_NS KCTL_SEC(2)
#define TEF_PASSWORD "faults-pw"       /* root's, on a cluster with auth */

static const kctl_resource tef_res = { "faults.kctl.io", "v1", "devices", "default" };

typedef struct tef_rig {
    fr_rig f;                  /* the devices, the controller's reconcile, the writer, the racer */
    kt_etcd_cluster c;
    bool auth;                 /* etcd auth on: every client is root */
    kctl_transport t;          /* the controller's */
    kctl_informer *inf;
    kctl_controller *ctl;
    /* the informer gate (under f.mu): while closed, the informer's thread waits in a handler */
    bool pause_closed, paused;
} tef_rig;

static tef_rig tef;


/* Whether rc is what a fault (or a lost race) may cause: IO, TIMEOUT,
   AGAIN, CONFLICT; never INVALID_ARG and the like, as if the request or
   the object were wrong. */
/* Count a failure of who (0 reconcile, 1 the writer); keep the first
   that is not a fault's, with what the store said. */
/* ---- the controller */

/* Whether obj's status is not yet what reconcile writes for it. */
/* The device gate: a slow device, as long as the test holds it closed. */
/* Set the device to the spec, then report it in the status. A CONFLICT
   (the cache behind the store: our own last write not seen yet, or
   another writer's) is retried on a fresh read; one that shows a newer
   generation ends the reconcile, whose own event reconciles again. Any
   other failure is returned: the queue backs off. */
/* The informer gate: the informer's thread waits here (in a handler of
   its own, after the controller's) while the test holds it closed, so
   the watch falls behind. */
static void tef_informer_gate(tef_rig *g) {
    pthread_mutex_lock(&g->f.mu);
    if (g->pause_closed) {
        g->paused = true;
        pthread_cond_broadcast(&g->f.cv);
        while (g->pause_closed) pthread_cond_wait(&g->f.cv, &g->f.mu);
        g->paused = false;
    }
    pthread_mutex_unlock(&g->f.mu);
}
static void tef_on_add(kctl_obj *obj, void *ud) { (void)obj; tef_informer_gate((tef_rig *)ud); }
static void tef_on_update(kctl_obj *old_obj, kctl_obj *new_obj, void *ud) {
    (void)old_obj;
    (void)new_obj;
    tef_informer_gate((tef_rig *)ud);
}

/* ---- the other clients */


/* Change specs one after the other (device 7 apart each time), each to a
   value never used before; retry a change until etcd acknowledges it. */
/* Rewrite the status of every device (a merge patch of the status, with
   no version: it wins every race), round after round. */
/* ---- waiting (polls with deadlines: upper bounds, never results) */

/* Wait until the writer has had n more changes acknowledged. */
static kctl_etcd_stats tef_tstats(tef_rig *g) {
    kctl_etcd_stats s;
    kctl_etcd_read_stats(&g->t, &s);
    return s;
}

static kctl_reflector_stats tef_istats(tef_rig *g) {
    kctl_reflector_stats s;
    kctl_informer_read_stats(g->inf, &s);
    return s;
}

/* Wait until the controller's transport has opened more than `watches`
   watch streams and the informer's reflector has restarted its watch or
   listed again: the watch moved. */
static bool tef_wait_rewatched(tef_rig *g, uint64_t watches, uint64_t restarts, uint64_t lists, int deadline_ms) {
    uint64_t until = fr_now_ms() + (uint64_t)deadline_ms;
    for (;;) {
        kctl_etcd_stats ts = tef_tstats(g);
        kctl_reflector_stats is = tef_istats(g);
        if (ts.watches > watches && (is.watch_restarts > restarts || is.lists > lists)) return true;
        if (fr_now_ms() >= until) return false;
        fr_nap(20);
    }
}

/* ---- convergence, as the store and the devices show it */

/* A RUNNING member's URL (the harness's client reads through it), or NULL. */
static const char *tef_any_url(tef_rig *g) {
    int i;
    for (i = 0; i < g->c.n; i++)
        if (g->c.m[i].state == KT_ETCD_RUNNING) return g->c.m[i].url;
    return NULL;
}

/* Whether every device and every object is where the writer left it;
   why[] says the first difference. */
static bool tef_converged(void *rig, char *why, size_t cap) {
    tef_rig *g = (tef_rig *)rig;
    const char *url = tef_any_url(g);
    char token[256] = "";
    int i;
    why[0] = '\0';
    if (!url) {
        snprintf(why, cap, "no member running");
        return false;
    }
    if (g->auth) {
        kt_etcd_reply r = { 0 };
        bool ok = kt_etcd_authenticate(url, "root", TEF_PASSWORD, token, sizeof token, 3000, &r) == 0;
        kt_etcd_reply_free(&r);
        if (!ok) {
            snprintf(why, cap, "no token from %s", url);
            return false;
        }
    }
    for (i = 0; i < TEF_N; i++) {
        char key[128], name[64];
        char *doc = NULL;
        kt_etcd_reply r = { 0 };
        fr_stored st = { -1, -1, -1, -1, false };
        int64_t racer;
        bool ok;
        size_t len;
        fr_name(&g->f, i, name);
        snprintf(key, sizeof key, "/registry/%s/%s/%s/%s", tef_res.group, tef_res.resource, tef_res.ns, name);
        ok = kt_etcd_get(url, g->auth ? token : NULL, key, 0, 0, &doc, NULL, 3000, &r) == 0 && doc;
        kt_etcd_reply_free(&r);
        if (!ok) {
            snprintf(why, cap, "%s: not read from %s", name, url);
            free(doc);
            return false;
        }
        len = strlen(doc);
        kctl_json_get_int64(doc, len, "spec.value", &st.spec);
        kctl_json_get_int64(doc, len, "metadata.generation", &st.generation);
        kctl_json_get_int64(doc, len, "status.observedGeneration", &st.observed);
        kctl_json_get_int64(doc, len, "status.value", &st.value);
        st.racer = kctl_json_get_int64(doc, len, "status.racer", &racer) == KCTL_OK;
        free(doc);
        if (!fr_device_converged(&g->f, i, &st, why, cap)) return false;
    }
    return true;
}

/* Poll until converged, up to deadline_ms. */
static bool tef_wait_converged(tef_rig *g, int deadline_ms, const char *file, int line) {
    return fr_wait_converged(g, tef_converged, deadline_ms, 100, file, line);
}

/* ---- the rig */

static int tef_transport(const char *endpoints, bool auth, kctl_transport *t) {
    kctl_etcd_desc d = kctl_etcd_desc_init();
    d.endpoints = endpoints;
    if (auth) {
        d.username = "root";
        d.password = TEF_PASSWORD;
    }
    d.request_timeout_ns = KCTL_MS(1500); /* a frozen member costs this much per request */
    d.connect_timeout_ns = KCTL_MS(500);
    return kctl_etcd_create(&d, t);
}

static void tef_open_gates(tef_rig *g) {
    pthread_mutex_lock(&g->f.mu);
    g->f.gate_closed = false;
    g->pause_closed = false;
    pthread_cond_broadcast(&g->f.cv);
    pthread_mutex_unlock(&g->f.mu);
}

/* Everything stops, in order, and the cluster goes (its files kept when
   the test failed). */
static void tef_teardown(tef_rig *g) {
    fr_stop_writer(&g->f, 2);
    fr_stop_racer(&g->f);
    tef_open_gates(g);
    if (g->ctl) kctl_controller_stop(g->ctl);
    if (g->inf) kctl_informer_stop(g->inf);
    kctl_controller_destroy(g->ctl);
    kctl_informer_destroy(g->inf);
    kctl_transport_destroy(&g->t);
    kctl_transport_destroy(&g->f.tw);
    kctl_transport_destroy(&g->f.tr);
    kt_etcd_destroy(&g->c, kt.cur_failed > 0);
    fr_deinit(&g->f);
}

/* A three-member cluster (fast elections, progress notifications every
   300 ms), TEF_N devices created, the controller running (stall_ns: 2 s,
   so a watch that gets neither events nor bookmarks for that long is
   reopened), everything converged, the writer running. With auth, etcd
   auth is on and every client authenticates as root. */
static bool tef_setup(tef_rig *g, bool auth) {
    kt_etcd_opts o;
    kctl_informer_desc id;
    kctl_controller_desc cd;
    kctl_handler h;
    int i, rc;
    memset(g, 0, sizeof *g);
    fr_init(&g->f, TEF_N);
    g->f.res = tef_res;
    memset(&o, 0, sizeof o);
    o.members = 3;
    o.heartbeat_ms = 50;
    o.election_ms = 500;
    o.progress_notify_ms = 300;
    if (kt_etcd_start(&g->c, &o) != 0) {
        kt_fail(__FILE__, __LINE__, "etcd start: %s", g->c.error);
        return false;
    }
    g->auth = auth;
    if (auth) {
        kt_etcd_reply r = { 0 };
        if (kt_etcd_auth_enable(g->c.m[0].url, TEF_PASSWORD, 0, &r) != 0) {
            kt_fail(__FILE__, __LINE__, "auth enable: HTTP %d %s", r.http, r.error);
            kt_etcd_reply_free(&r);
            return false;
        }
        kt_etcd_reply_free(&r);
    }
    if ((rc = tef_transport(g->c.endpoints, auth, &g->t)) != KCTL_OK || (rc = tef_transport(g->c.endpoints, auth, &g->f.tw)) != KCTL_OK ||
        (rc = tef_transport(g->c.endpoints, auth, &g->f.tr)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "kctl_etcd_create: %s", kctl_strerror(rc));
        return false;
    }
    for (i = 0; i < TEF_N; i++) {
        char doc[256], name[64];
        kctl_api_status st = { 0 };
        fr_name(&g->f, i, name);
        snprintf(doc, sizeof doc, "{\"apiVersion\":\"faults.kctl.io/v1\",\"kind\":\"Device\",\"metadata\":{\"name\":\"%s\","
                 "\"namespace\":\"default\"},\"spec\":{\"value\":0}}", name);
        if ((rc = kctl_transport_create(&g->f.tw, &tef_res, doc, KCTL_NTS, NULL, &st)) != KCTL_OK) {
            kt_fail(__FILE__, __LINE__, "create %s: %s (%s)", name, kctl_strerror(rc), st.message ? st.message : "");
            kctl_api_status_clear(&st);
            return false;
        }
        kctl_api_status_clear(&st);
    }
    memset(&id, 0, sizeof id);
    id.transport = g->t;
    id.resource = tef_res;
    id.stall_ns = KCTL_SEC(2);
    if ((rc = kctl_informer_create(&id, &g->inf)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "informer: %s", kctl_strerror(rc));
        return false;
    }
    memset(&cd, 0, sizeof cd);
    cd.name = "devices";
    cd.primary = g->inf;
    cd.transport = g->t;
    cd.reconcile = fr_reconcile;
    cd.user_data = &g->f;
    cd.workers = TEF_WORKERS;
    cd.limiter = kctl_limiter_exponential(TEF_BACKOFF_BASE_NS, TEF_BACKOFF_MAX_NS);
    if ((rc = kctl_controller_create(&cd, &g->ctl)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "controller: %s", kctl_strerror(rc));
        return false;
    }
    memset(&h, 0, sizeof h); /* after the controller's handler: the informer gate */
    h.on_add = tef_on_add;
    h.on_update = tef_on_update;
    h.user_data = g;
    if ((rc = kctl_informer_add_handler(g->inf, &h)) != KCTL_OK || (rc = kctl_informer_start(g->inf)) != KCTL_OK ||
        (rc = kctl_controller_start(g->ctl, KCTL_SEC(20))) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "start: %s", kctl_strerror(rc));
        return false;
    }
    if (!tef_wait_converged(g, TEF_CONVERGE_MS, __FILE__, __LINE__)) return false;
    if (!fr_start_writer(&g->f)) {
        kt_fail(__FILE__, __LINE__, "writer thread");
        return false;
    }
    if (!fr_wait_acked(&g->f, 10, 20000)) {
        kt_fail(__FILE__, __LINE__, "the writer got nothing acknowledged on a healthy cluster");
        return false;
    }
    return true;
}

/* The writer stops (its last change acknowledged), then everything must
   converge; and every reconcile and write that failed failed for a fault
   (IO, TIMEOUT, AGAIN) or for a race it lost (CONFLICT), never as if the
   request or the object were wrong. */
static bool tef_finish(tef_rig *g, int deadline_ms, const char *file, int line) {
    fr_check_failures(&g->f, file, line);
    return tef_wait_converged(g, deadline_ms, file, line);
}

static void tef_report(tef_rig *g, const char *what, const kctl_etcd_stats *t0, const kctl_reflector_stats *i0) {
    kctl_etcd_stats ts = tef_tstats(g);
    kctl_reflector_stats is = tef_istats(g);
    kctl_controller_stats cs;
    if (!getenv("KT_VERBOSE")) return;
    kctl_controller_read_stats(g->ctl, &cs);
    printf("  %s: failovers %llu, watches opened %llu, watch restarts %llu, relists %llu, reflector errors %llu, "
           "requests %llu; reconciles %llu (errors %llu), status written %llu, skipped %llu, conflicts %llu; "
           "writer acked %llu, failed tries %llu\n",
           what, (unsigned long long)(ts.failovers - t0->failovers), (unsigned long long)(ts.watches - t0->watches),
           (unsigned long long)(is.watch_restarts - i0->watch_restarts), (unsigned long long)(is.relists - i0->relists),
           (unsigned long long)(is.errors - i0->errors), (unsigned long long)(ts.requests - t0->requests),
           (unsigned long long)fr_get(&g->f.reconciles), (unsigned long long)cs.error, (unsigned long long)fr_get(&g->f.status_written),
           (unsigned long long)fr_get(&g->f.status_skipped), (unsigned long long)fr_get(&g->f.conflicts),
           (unsigned long long)g->f.acked, (unsigned long long)g->f.failed);
    fflush(stdout);
}
#endif /* KT_HAVE_CURL */

/* (a) SIGKILL the member the controller's watch is on (the endpoint its
   transport last used: the watch's, in a healthy cluster): the stream
   breaks, the reflector watches again from its last version at another
   member (a new stream, a failover), writes go on there, and everything
   converges. */
static void tef_kill_watch_member(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        tef_rig *g = &tef;
        kctl_etcd_stats t0, t1;
        kctl_reflector_stats i0;
        int x;
        if (!tef_setup(g, false)) { tef_teardown(g); return; }
        t0 = tef_tstats(g);
        i0 = tef_istats(g);
        x = (int)t0.watch_endpoint;
        KT_EQ_INT(kt_etcd_kill(&g->c, x), 0);
        KT_CHECK(tef_wait_rewatched(g, t0.watches, i0.watch_restarts, i0.lists, 20000));
        KT_CHECK(fr_wait_acked(&g->f, 20, 20000));
        t1 = tef_tstats(g);
        KT_CHECK(t1.watch_endpoint != (uint32_t)x);
        KT_CHECK(t1.failovers > t0.failovers);
        tef_finish(g, TEF_CONVERGE_MS, __FILE__, __LINE__);
        tef_report(g, "kill the watch's member", &t0, &i0);
        tef_teardown(g);
    }
#endif
}

/* (b) SIGTERM the member the watch is on (etcd shuts down cleanly: the
   stream ends), write on, start it again (same ports, same data): the
   watch moves, the member rejoins, everything converges. */
static void tef_term_restart(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        tef_rig *g = &tef;
        kctl_etcd_stats t0, t1;
        kctl_reflector_stats i0;
        int x, rc;
        if (!tef_setup(g, false)) { tef_teardown(g); return; }
        t0 = tef_tstats(g);
        i0 = tef_istats(g);
        x = (int)t0.watch_endpoint;
        rc = kt_etcd_term(&g->c, x, 10000);
        KT_CHECK(rc == 0 || rc == 1);
        KT_CHECK(tef_wait_rewatched(g, t0.watches, i0.watch_restarts, i0.lists, 20000));
        KT_CHECK(fr_wait_acked(&g->f, 20, 20000));
        t1 = tef_tstats(g);
        KT_CHECK(t1.watch_endpoint != (uint32_t)x);
        KT_CHECK(t1.failovers > t0.failovers);
        if (kt_etcd_restart(&g->c, x, 20000) != 0) kt_fail(__FILE__, __LINE__, "restart: %s", g->c.error);
        KT_CHECK(fr_wait_acked(&g->f, 20, 20000));
        tef_finish(g, TEF_CONVERGE_MS, __FILE__, __LINE__);
        tef_report(g, "SIGTERM and restart the watch's member", &t0, &i0);
        tef_teardown(g);
    }
#endif
}

#ifdef KT_HAVE_CURL
/* The most tries a backoff that starts at base and doubles up to max
   allows within d_ns: the first, then one after each delay while the
   delays add up to no more than d_ns, and one more already under way
   when the window opened. Jitter only lengthens delays. */
static uint64_t tef_tries_within(uint64_t d_ns, uint64_t base, uint64_t max) {
    uint64_t n = 2, sum = base, delay = base;
    while (sum <= d_ns) {
        n++;
        delay = delay > max / 2 ? max : delay * 2;
        sum += delay;
    }
    return n;
}

/* An outage of 3 s while reconciles are pending (held at the device
   gate until the outage has begun, and more queued behind them, so
   their status writes meet it), the writer trying on; then the members
   come back and everything converges. In the outage writes fail, the
   writer's and the controller's, and the controller must not storm:
   each key fails at most as often as its limiter (5 ms doubling to 2 s)
   allows in the outage's length, the reflector tries to watch at most as
   often as its backoff (800 ms doubling, jittered up) and its stall
   detection (one reopen per stall_ns) allow, and the transport sends at
   most two requests per reconcile and per watch attempt. The bounds come
   from the backoffs and the outage's length: a slow machine only widens
   them. whole: every member down (each request fails at once, refused at
   every endpoint); else quorum lost (two down, the watch's member stays:
   its reads wait their timeout, its watches are refused at once). */
static void tef_outage(bool whole) {
    tef_rig *g = &tef;
    kctl_etcd_stats t0, t1;
    kctl_reflector_stats i0, i1;
    kctl_controller_stats c0, c1;
    uint64_t f0[TEF_N], w0, w1, ms0, ms1, d_ns, key_tries, watch_tries, tries, requests, opens, failed, worst = 0;
    int i, x;
    bool parked = false;
    if (!tef_setup(g, false)) { tef_teardown(g); return; }
    fr_device_gate_set(&g->f, true);
    for (ms0 = fr_now_ms(); !parked && fr_now_ms() - ms0 < 20000; fr_nap(10)) {
        pthread_mutex_lock(&g->f.mu);
        parked = g->f.parked_stale > 0;
        pthread_mutex_unlock(&g->f.mu);
    }
    KT_CHECK(parked);
    KT_CHECK(fr_wait_acked(&g->f, 5, 20000)); /* more changes queued behind the gate */
    t0 = tef_tstats(g);
    i0 = tef_istats(g);
    kctl_controller_read_stats(g->ctl, &c0);
    for (i = 0; i < TEF_N; i++) f0[i] = fr_get(&g->f.fails[i]);
    pthread_mutex_lock(&g->f.mu);
    w0 = g->f.failed;
    pthread_mutex_unlock(&g->f.mu);
    x = (int)t0.watch_endpoint;
    ms0 = fr_now_ms();
    if (whole) {
        for (i = 0; i < 3; i++) KT_EQ_INT(kt_etcd_kill(&g->c, i), 0);
    } else {
        unsigned stopped = 0;
        KT_EQ_INT(kt_etcd_quorum_lose(&g->c, x, &stopped), 0);
        KT_EQ_INT(stopped, 7u & ~(1u << x));
    }
    tef_open_gates(g);
    fr_nap(3000); /* the outage's length: the bounds below grow with it */
    t1 = tef_tstats(g);
    i1 = tef_istats(g);
    kctl_controller_read_stats(g->ctl, &c1);
    for (i = 0; i < TEF_N; i++) {
        uint64_t f = fr_get(&g->f.fails[i]) - f0[i];
        if (f > worst) worst = f;
    }
    pthread_mutex_lock(&g->f.mu);
    w1 = g->f.failed;
    pthread_mutex_unlock(&g->f.mu);
    ms1 = fr_now_ms();
    if (kt_etcd_quorum_restore(&g->c, 20000) != 0) kt_fail(__FILE__, __LINE__, "restore: %s", g->c.error);
    d_ns = KCTL_MS(ms1 - ms0);
    tries = (c1.success + c1.error + c1.requeue + c1.requeue_after) - (c0.success + c0.error + c0.requeue + c0.requeue_after);
    failed = c1.error - c0.error;
    requests = t1.requests - t0.requests;
    opens = (i1.errors - i0.errors) + (t1.watches - t0.watches);
    key_tries = tef_tries_within(d_ns, TEF_BACKOFF_BASE_NS, TEF_BACKOFF_MAX_NS);
    watch_tries = tef_tries_within(d_ns, KCTL_MS(800), KCTL_SEC(30)) + d_ns / KCTL_SEC(2);
    KT_CHECK(w1 > w0);     /* the writer's writes failed */
    KT_CHECK(failed > 0);  /* and the controller's */
    if (worst > key_tries)
        kt_fail(__FILE__, __LINE__, "a key failed %llu times in %llu ms: its backoff allows %llu", (unsigned long long)worst,
                (unsigned long long)(ms1 - ms0), (unsigned long long)key_tries);
    if (opens > watch_tries)
        kt_fail(__FILE__, __LINE__, "%llu watch attempts in %llu ms: the backoff allows %llu", (unsigned long long)opens,
                (unsigned long long)(ms1 - ms0), (unsigned long long)watch_tries);
    if (requests > 2 * (tries + opens))
        kt_fail(__FILE__, __LINE__, "%llu requests for %llu reconciles and %llu watch attempts", (unsigned long long)requests,
                (unsigned long long)tries, (unsigned long long)opens);
    if (getenv("KT_VERBOSE"))
        printf("  %s for %llu ms: %llu requests, %llu reconciles (%llu failed; one key at most %llu times, its backoff "
               "allows %llu), %llu watch attempts (its backoff allows %llu), failovers %llu; the writer (20 ms between "
               "tries) failed %llu times\n",
               whole ? "cluster down" : "quorum lost", (unsigned long long)(ms1 - ms0), (unsigned long long)requests,
               (unsigned long long)tries, (unsigned long long)failed, (unsigned long long)worst, (unsigned long long)key_tries,
               (unsigned long long)opens, (unsigned long long)watch_tries, (unsigned long long)(t1.failovers - t0.failovers),
               (unsigned long long)(w1 - w0));
    KT_CHECK(fr_wait_acked(&g->f, 20, 30000));
    tef_finish(g, TEF_CONVERGE_MS, __FILE__, __LINE__);
    tef_report(g, whole ? "cluster down and back" : "quorum lost and restored", &t0, &i0);
    tef_teardown(g);
}
#endif

/* (c) Quorum lost: two members killed, the one the watch is on stays. */
static void tef_quorum_loss(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    tef_outage(false);
#endif
}

/* (c') The whole cluster down: now only the backoffs stand between the
   controller and a storm. */
static void tef_cluster_down(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    tef_outage(true);
#endif
}

/* (d) The store compacted past the watch: the informer is held (its
   thread waits in a handler) so the watch falls behind, the member it
   watches is killed, the writer writes on and the store is compacted at
   its current revision. Let go, the reflector finds its stream broken,
   watches again from its last version, gets GONE (compacted) and lists
   again; the relist brings every change, everything converges. */
static void tef_compacted(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        tef_rig *g = &tef;
        kctl_etcd_stats t0;
        kctl_reflector_stats i0, i1;
        kt_etcd_reply r = { 0 };
        long long rev = 0;
        uint64_t ms0;
        bool paused = false;
        int x;
        if (!tef_setup(g, false)) { tef_teardown(g); return; }
        t0 = tef_tstats(g);
        i0 = tef_istats(g);
        pthread_mutex_lock(&g->f.mu);
        g->pause_closed = true;
        pthread_mutex_unlock(&g->f.mu);
        for (ms0 = fr_now_ms(); !paused && fr_now_ms() - ms0 < 20000; fr_nap(10)) {
            pthread_mutex_lock(&g->f.mu);
            paused = g->paused;
            pthread_mutex_unlock(&g->f.mu);
        }
        KT_CHECK(paused);
        x = (int)tef_tstats(g).watch_endpoint;
        KT_EQ_INT(kt_etcd_kill(&g->c, x), 0);
        KT_CHECK(fr_wait_acked(&g->f, 20, 20000));
        KT_EQ_INT(kt_etcd_revision(tef_any_url(g), NULL, 3000, &rev, &r), 0);
        KT_EQ_INT(kt_etcd_compact(tef_any_url(g), NULL, rev, 5000, &r), 0);
        kt_etcd_reply_free(&r);
        tef_open_gates(g);
        KT_CHECK(tef_wait_rewatched(g, t0.watches, i0.watch_restarts, i0.lists, 20000));
        KT_CHECK(fr_wait_acked(&g->f, 20, 20000));
        tef_finish(g, TEF_CONVERGE_MS, __FILE__, __LINE__);
        i1 = tef_istats(g);
        KT_CHECK(i1.relists > i0.relists);
        tef_report(g, "compacted past the watch", &t0, &i0);
        tef_teardown(g);
    }
#endif
}

/* (e) First a quiet stretch (the writer held) in which the watch gets
   progress notifications (BOOKMARKs, every 300 ms) for longer than its
   stall_ns (2 s). Then SIGSTOP the member the watch is on: it accepts
   connections and answers nothing, so the stream goes silent (no events,
   no notifications) and only the reflector's stall detection can end
   it. The test waits until the watch has moved, writes on, then SIGCONTs
   the member. */
static void tef_frozen(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        tef_rig *g = &tef;
        kctl_etcd_stats t0;
        kctl_reflector_stats i0, i1, q0, q1;
        uint64_t ms0;
        int x;
        if (!tef_setup(g, false)) { tef_teardown(g); return; }
        /* quiet (the writer held): the watch lives on progress notifications */
        KT_CHECK(fr_hold_writer(&g->f, true, 20000));
        q0 = q1 = tef_istats(g);
        for (ms0 = fr_now_ms(); q1.bookmarks < q0.bookmarks + 8 && fr_now_ms() - ms0 < 20000; fr_nap(20)) q1 = tef_istats(g);
        KT_CHECK(q1.bookmarks >= q0.bookmarks + 8);
        if (getenv("KT_VERBOSE"))
            printf("  quiet: %llu bookmarks, %llu watch restarts\n", (unsigned long long)(q1.bookmarks - q0.bookmarks),
                   (unsigned long long)(q1.watch_restarts - q0.watch_restarts));
        fr_hold_writer(&g->f, false, 0);
        KT_CHECK(fr_wait_acked(&g->f, 10, 20000));
        t0 = tef_tstats(g);
        i0 = tef_istats(g);
        x = (int)t0.watch_endpoint;
        KT_EQ_INT(kt_etcd_freeze(&g->c, x), 0);
        KT_CHECK(tef_wait_rewatched(g, t0.watches, i0.watch_restarts, i0.lists, 20000));
        KT_CHECK(fr_wait_acked(&g->f, 20, 20000));
        KT_EQ_INT(kt_etcd_thaw(&g->c, x), 0);
        KT_CHECK(fr_wait_acked(&g->f, 10, 20000));
        tef_finish(g, TEF_CONVERGE_MS, __FILE__, __LINE__);
        i1 = tef_istats(g);
        KT_CHECK(i1.watch_restarts > i0.watch_restarts);
        tef_report(g, "the watch's member frozen", &t0, &i0);
        tef_teardown(g);
    }
#endif
}

/* (f) Another client rewrites the status of every device, round after
   round, while the controller writes them: first once while reconciles
   that must write a status wait at the device gate with the object they
   read (so their writes carry a version the racer has moved on: 409),
   then freely for five rounds. The controller sees CONFLICTs, re-reads,
   and ends with its own status everywhere. */
static void tef_status_race(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        tef_rig *g = &tef;
        kctl_etcd_stats t0, r1;
        kctl_reflector_stats i0;
        uint64_t ms0, rounds = 0;
        bool parked = false;
        if (!tef_setup(g, false)) { tef_teardown(g); return; }
        t0 = tef_tstats(g);
        i0 = tef_istats(g);
        fr_device_gate_set(&g->f, true);
        for (ms0 = fr_now_ms(); !parked && fr_now_ms() - ms0 < 20000; fr_nap(10)) {
            pthread_mutex_lock(&g->f.mu);
            parked = g->f.parked_stale > 0;
            pthread_mutex_unlock(&g->f.mu);
        }
        KT_CHECK(parked);
        KT_EQ_INT(fr_race_round(&g->f, 1), TEF_N);
        tef_open_gates(g);
        fr_start_racer(&g->f);
        KT_CHECK(g->f.racer_on);
        for (ms0 = fr_now_ms(); g->f.racer_on && rounds < 5 && fr_now_ms() - ms0 < 30000; fr_nap(10)) {
            pthread_mutex_lock(&g->f.mu);
            rounds = g->f.racer_rounds;
            pthread_mutex_unlock(&g->f.mu);
        }
        KT_CHECK(rounds >= 5);
        fr_stop_racer(&g->f);
        tef_finish(g, TEF_CONVERGE_MS, __FILE__, __LINE__);
        KT_CHECK(fr_get(&g->f.conflicts) > 0);
        kctl_etcd_read_stats(&g->f.tr, &r1);
        if (getenv("KT_VERBOSE"))
            printf("  status race: %llu racer writes in %llu rounds (%llu decided again after a lost race); controller conflicts %llu\n",
                   (unsigned long long)g->f.racer_writes, (unsigned long long)g->f.racer_rounds, (unsigned long long)r1.retries,
                   (unsigned long long)fr_get(&g->f.conflicts));
        tef_report(g, "status race", &t0, &i0);
        tef_teardown(g);
    }
#endif
}

#ifdef KT_HAVE_CURL
/* root's token, from any running member */
static bool tef_root_token(tef_rig *g, char *token, size_t cap) {
    kt_etcd_reply r = { 0 };
    const char *url = tef_any_url(g);
    bool ok = url && kt_etcd_authenticate(url, "root", TEF_PASSWORD, token, cap, 3000, &r) == 0;
    kt_etcd_reply_free(&r);
    return ok;
}
#endif

/* (g) With etcd auth: a member restarted (SIGTERM, start) has lost the
   simple tokens it knew, the controller's among them. The member the
   watch is on is made the leader, so restarting the two others elects no
   one and the watch stays there (a member without a leader would end a
   hasleader watch and move it early); both others are restarted. The
   controller is idle (the writer held, nothing to reconcile) when the
   watch's member is killed, and the watch fails over to a restarted one: it must
   renew the token there, as a unary request does, or stay refused for
   good, since an idle controller sends nothing else that would renew it
   (and gets no events to wake it). Then the writer writes on. */
static void tef_auth_restarted_member(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        tef_rig *g = &tef;
        kctl_etcd_stats t0, t1, tr;
        kctl_reflector_stats i0;
        char why[256], token[256];
        uint64_t ms0, w0;
        int x, y, rc;
        bool idle = false;
        if (!tef_setup(g, true)) { tef_teardown(g); return; }
        x = (int)tef_tstats(g).watch_endpoint;
        /* x leads, so restarting the others elects no one: x keeps its
           leader and the watch on x (hasleader) stays where it is */
        KT_CHECK(tef_root_token(g, token, sizeof token));
        if (kt_etcd_move_leader(&g->c, x, token, 20000) != 0) kt_fail(__FILE__, __LINE__, "move leader: %s", g->c.error);
        KT_CHECK(fr_hold_writer(&g->f, true, 20000));
        w0 = tef_tstats(g).watches;
        tr = tef_tstats(g);
        for (y = 0; y < 3; y++) { /* both others forget every token */
            if (y == x) continue;
            rc = kt_etcd_term(&g->c, y, 10000);
            KT_CHECK(rc == 0 || rc == 1);
            if (kt_etcd_restart(&g->c, y, 20000) != 0) kt_fail(__FILE__, __LINE__, "restart: %s", g->c.error);
        }
        for (ms0 = fr_now_ms(); !idle && fr_now_ms() - ms0 < 20000; fr_nap(20)) {
            kctl_queue_stats qs;
            bool held;
            pthread_mutex_lock(&g->f.mu);
            held = g->f.writer_held;
            pthread_mutex_unlock(&g->f.mu);
            kctl_queue_read_stats(kctl_controller_queue(g->ctl), &qs);
            idle = held && tef_converged(g, why, sizeof why) && qs.depth == 0 && qs.processing == 0 && qs.delayed == 0;
        }
        KT_CHECK(idle);
        t0 = tef_tstats(g);
        i0 = tef_istats(g);
        KT_EQ_INT((int)t0.watch_endpoint, x);
        KT_EQ_U64(t0.watches, w0); /* the watch is still the one on x */
        KT_EQ_INT(kt_etcd_kill(&g->c, x), 0);
        KT_CHECK(tef_wait_rewatched(g, t0.watches, i0.watch_restarts, i0.lists, 20000));
        t1 = tef_tstats(g);
        KT_CHECK(t1.watch_endpoint != (uint32_t)x);
        /* the token was renewed since the others forgot theirs: at the
           failover, or before it when another of the client's requests
           reached a restarted member first (the token held is then one the
           watch's new member knows: no renewal at the failover) */
        KT_CHECK(t1.reauths > tr.reauths);
        fr_hold_writer(&g->f, false, 0);
        KT_CHECK(fr_wait_acked(&g->f, 20, 20000));
        tef_finish(g, TEF_CONVERGE_MS, __FILE__, __LINE__);
        tef_report(g, "auth: the watch fails over to a restarted member", &t0, &i0);
        tef_teardown(g);
    }
#endif
}

/* Chaos (only with KT_ETCD_CHAOS=<seconds>; KT_ETCD_CHAOS_SEED=<n>
   repeats a run, KT_ETCD_CHAOS_AUTH=1 turns etcd auth on): random faults
   one after the other, each healed before the next, the writer running;
   converged at the end. */
static void tef_chaos(void) {
    const char *env = getenv("KT_ETCD_CHAOS"), *seed_env = getenv("KT_ETCD_CHAOS_SEED"), *auth = getenv("KT_ETCD_CHAOS_AUTH");
    if (!env || !*env) return; /* registered only when asked */
    KT_ETCD_REQUIRE_CURL();
#ifndef KT_HAVE_CURL
    (void)seed_env;
    (void)auth;
#else
    {
        tef_rig *g = &tef;
        kctl_etcd_stats t0;
        kctl_reflector_stats i0;
        uint64_t end;
        unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : (unsigned)time(NULL);
        int faults = 0;
        printf("  chaos: seed %u\n", seed);
        srand(seed);
        if (!tef_setup(g, auth && *auth && strcmp(auth, "0") != 0)) { tef_teardown(g); return; }
        t0 = tef_tstats(g);
        i0 = tef_istats(g);
        end = fr_now_ms() + (uint64_t)atoi(env) * 1000u;
        while (fr_now_ms() < end && kt.cur_failed == 0) {
            int kind = rand() % 6, x = rand() % 3, hold = 200 + rand() % 3000;
            long long rev = 0;
            kt_etcd_reply r = { 0 };
            if (rand() % 2) x = (int)tef_tstats(g).watch_endpoint;
            faults++;
            printf("  chaos %d: fault %d member %d hold %d ms\n", faults, kind, x, hold);
            fflush(stdout);
            switch (kind) {
            case 0: kt_etcd_kill(&g->c, x); fr_nap(hold); break;
            case 1: kt_etcd_term(&g->c, x, 10000); fr_nap(hold); break;
            case 2: kt_etcd_freeze(&g->c, x); fr_nap(hold); kt_etcd_thaw(&g->c, x); break;
            case 3: kt_etcd_quorum_lose(&g->c, x, NULL); fr_nap(hold); break;
            case 4:
                if (kt_etcd_revision(tef_any_url(g), NULL, 3000, &rev, &r) == 0) kt_etcd_compact(tef_any_url(g), NULL, rev, 5000, &r);
                fr_nap(hold);
                break;
            default:
                pthread_mutex_lock(&g->f.mu);
                g->pause_closed = true;
                pthread_mutex_unlock(&g->f.mu);
                fr_nap(hold);
                if (kt_etcd_revision(tef_any_url(g), NULL, 3000, &rev, &r) == 0) kt_etcd_compact(tef_any_url(g), NULL, rev, 5000, &r);
                tef_open_gates(g);
                break;
            }
            kt_etcd_reply_free(&r);
            if (kt_etcd_quorum_restore(&g->c, 20000) != 0) kt_fail(__FILE__, __LINE__, "restore: %s", g->c.error);
            if (!fr_wait_acked(&g->f, 5, 30000)) kt_fail(__FILE__, __LINE__, "chaos %d: the writer is stuck", faults);
            fr_nap(rand() % 1000);
        }
        tef_finish(g, TEF_CONVERGE_MS + 60000, __FILE__, __LINE__); /* + the reflector's longest backoff: 30 s, jittered up to 60 */
        tef_report(g, "chaos", &t0, &i0);
        tef_teardown(g);
    }
#endif
}

void kt_suite_etcd_faults(void) {
    KT_RUN(tef_kill_watch_member);
    KT_RUN(tef_term_restart);
    KT_RUN(tef_quorum_loss);
    KT_RUN(tef_cluster_down);
    KT_RUN(tef_compacted);
    KT_RUN(tef_frozen);
    KT_RUN(tef_status_race);
    KT_RUN(tef_auth_restarted_member);
    if (getenv("KT_ETCD_CHAOS")) KT_RUN(tef_chaos); /* a soak, on demand: make soak */
}
