/* test_kube_faults.c - a controller on the Kubernetes API transport, through
   the faults of an API server, on the test server (tests/kube_server.h),
   modelled on tests/test_etcd_faults.c. A controller with two workers
   (informer + controller, lists in pages of 5) reconciles KKF_N
   DeviceConfigs: the desired value in spec, a simulated device in memory
   that reconcile sets to the spec, and status.observedGeneration and
   status.value written back through kctl_status_update (a write that
   changes nothing is skipped). A writer thread, another client with a
   transport of its own, keeps changing specs; it retries a change until
   the server acknowledges it (a merge patch that sets a value is
   idempotent), honouring a Retry-After the server sends, and records the
   last value acknowledged per object.

   Each scenario ends the same way: the writer stops, and within a
   deadline (an upper bound on waiting, never a figure checked) every
   device equals its object's last acknowledged spec, the store (read
   behind the server, straight from its memstore) holds that spec, and
   every status says observedGeneration == metadata.generation and the
   same value: no change the writer was told was written is lost; and
   every reconcile or write that failed, failed with a fault's code (IO,
   TIMEOUT, AGAIN) or a lost race's (CONFLICT).

   Where a test needs things to happen in a given order it holds them:
   reconciles at a device gate, the informer's list between two pages (a
   transport of the test's around the controller's, which lets the
   server's history expire just before the second page is asked for),
   the informer's clock frozen (a backoff would then never end). Waits
   are for conditions, with deadlines.
   KT_VERBOSE=1 prints each scenario's figures.

   On demand the convergence scenario also runs on a real cluster
   (kt_kube_faults_converge, called by tests/test_kube_contract.c when
   KCTL_TEST_KUBECONFIG and KCTL_TEST_RESOURCE are set): the devices are
   objects of that resource in the context's namespace, named with a
   random prefix, deleted at the end. */
#include "kube.h"
#include "kube_server.h"

#ifdef KT_HAVE_CURL
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "fault_rig.h"

#define KKF_N 20              /* devices */
#define KKF_WORKERS 2
#define KKF_PAGE 5            /* the informer lists in pages of this many */
#define KKF_CONVERGE_MS 30000 /* the deadline for convergence (an upper bound) */
#define KKF_WAIT_MS 20000     /* the deadline of any other wait */
#define KKF_STALL_NS KCTL_SEC(2)         /* the informer's stall detection */
#define KKF_BOOKMARK_NS KCTL_MS(500)     /* the server's bookmark period: quiet watches are not stalled */
#define KKF_REQUEST_TIMEOUT_NS KCTL_SEC(2) /* a stalled server costs this much per request */
#define KKF_BACKOFF_BASE_NS KCTL_MS(5)   /* the controller's per-key limiter */
#define KKF_BACKOFF_MAX_NS KCTL_SEC(2)
#define KKF_RETRY_AFTER_S 1   /* the throttled server's Retry-After */

/* A clock at the rate of real time that the test can stop: frozen, the
   informer's backoff can never end (nor its stall detection fire). */
typedef struct kkf_clock {
    pthread_mutex_t mu;
    bool frozen;
    uint64_t at, skew; /* the frozen time; what a thaw skipped */
} kkf_clock;

/* The informer's transport: the controller's, but for a list asked for
   with a continue token while armed: first the server's history expires
   (the token handed out with the page before is 410 now). */
typedef struct kkf_gate {
    kctl_transport inner;
    kt_kube_server *srv;
    int armed;              /* atomic */
    int expired_rc;         /* what the list with the expired token said (0 before) */
    uint64_t pages;         /* lists asked for with a continue token */
} kkf_gate;

typedef struct kkf_rig {
    fr_rig f;                  /* the devices (f.res, named f.prefix dev-NN), the controller's reconcile, the writer, the racer */
    kt_kube_server *srv;       /* NULL on a cluster */
    kctl_kube_desc desc;       /* the clients' (server, credentials) */
    const char *api_version, *kind;
    kctl_transport t;          /* the controller's */
    kctl_transport tcheck;     /* what convergence reads: the server's memstore, or a fourth client */
    bool own_tcheck;
    kctl_transport tinf;       /* the informer's: the gate over t */
    kkf_gate gate;
    kkf_clock clock;
    kctl_informer *inf;
    kctl_controller *ctl;
    bool created[KKF_N];
} kkf_rig;

static kkf_rig kkf;


/* ---- the freezable clock */
static uint64_t kkf_clock_now(void *user_data) {
    kkf_clock *c = (kkf_clock *)user_data;
    uint64_t now = kctl_clock_now(NULL), t;
    pthread_mutex_lock(&c->mu);
    t = c->frozen ? c->at : now - c->skew;
    pthread_mutex_unlock(&c->mu);
    return t;
}

static void kkf_clock_freeze(kkf_clock *c, bool on) {
    uint64_t now = kctl_clock_now(NULL);
    pthread_mutex_lock(&c->mu);
    if (on && !c->frozen) c->at = now - c->skew;
    if (!on && c->frozen) c->skew = now - c->at; /* time goes on from where it stood */
    c->frozen = on;
    pthread_mutex_unlock(&c->mu);
}

/* ---- the informer's transport */
static int kkf_gate_list(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st) {
    kkf_gate *g = (kkf_gate *)self;
    bool cont = opts && opts->continue_token && *opts->continue_token;
    bool expire = cont && __atomic_exchange_n(&g->armed, 0, __ATOMIC_ACQ_REL) != 0;
    int rc;
    if (cont) fr_bump(&g->pages);
    if (expire) kt_kube_server_expire_history(g->srv);
    rc = kctl_transport_list(&g->inner, res, opts, out, st);
    if (expire) __atomic_store_n(&g->expired_rc, rc == KCTL_OK ? 1 : rc, __ATOMIC_RELEASE);
    return rc;
}
static int kkf_gate_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *opts, const char *from_rv, kctl_watch **out,
                               kctl_api_status *st) {
    return kctl_transport_watch_open(&((kkf_gate *)self)->inner, res, opts, from_rv, out, st);
}
static int kkf_gate_watch_next(void *self, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    return kctl_transport_watch_next(&((kkf_gate *)self)->inner, w, timeout_ns, ev, st);
}
static void kkf_gate_watch_close(void *self, kctl_watch *w) { kctl_transport_watch_close(&((kkf_gate *)self)->inner, w); }
static int kkf_gate_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    return kctl_transport_get(&((kkf_gate *)self)->inner, res, name, out, st);
}
static int kkf_gate_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl_transport_create(&((kkf_gate *)self)->inner, res, json, len, out, st);
}
static int kkf_gate_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl_transport_update(&((kkf_gate *)self)->inner, res, json, len, out, st);
}
static int kkf_gate_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                  kctl_api_status *st) {
    return kctl_transport_update_status(&((kkf_gate *)self)->inner, res, json, len, out, st);
}
static int kkf_gate_patch(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags,
                          kctl_obj **out, kctl_api_status *st) {
    return kctl_transport_patch(&((kkf_gate *)self)->inner, res, name, patch, len, flags, out, st);
}
static int kkf_gate_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                           kctl_api_status *st) {
    return kctl_transport_remove(&((kkf_gate *)self)->inner, res, name, opts, out, st);
}
static const kctl_transport_vtable kkf_gate_vt = {
    kkf_gate_list, kkf_gate_watch_open, kkf_gate_watch_next, kkf_gate_watch_close, kkf_gate_get, kkf_gate_create,
    kkf_gate_update, kkf_gate_update_status, kkf_gate_patch, kkf_gate_remove, NULL, NULL
};

/* ---- failures */

/* Whether rc is what a fault (or a lost race) may cause. */

/* ---- the controller */

/* Set the device to the spec, then report it in the status; a CONFLICT
   is retried on a fresh read (one with a newer generation ends the
   reconcile: its own event reconciles again); any other failure goes
   back to the queue, which backs off. */
/* ---- the other clients */

/* One spec change: device i to a new value, retried until acknowledged
   (a Retry-After is waited out, as a client should) or the writer is
   told to abandon it. */
/* Change specs one after the other (device 7 apart each time). */
/* Rewrite every device's status (a merge patch of the status without a
   version: it wins every race). */
/* ---- waiting (polls with deadlines: upper bounds, never results) */

static kctl_kube_stats kkf_tstats(kkf_rig *g) {
    kctl_kube_stats s;
    kctl_kube_read_stats(&g->t, &s);
    return s;
}

static kctl_reflector_stats kkf_istats(kkf_rig *g) {
    kctl_reflector_stats s;
    kctl_informer_read_stats(g->inf, &s);
    return s;
}

static uint64_t kkf_events(const kctl_reflector_stats *s) { return s->added + s->modified + s->deleted + s->bookmarks; }

/* Until the controller's transport has opened more than `watches` watch
   streams and the reflector has restarted its watch or listed again. */
static bool kkf_wait_rewatched(kkf_rig *g, uint64_t watches, const kctl_reflector_stats *i0, int deadline_ms) {
    uint64_t until = fr_now_ms() + (uint64_t)deadline_ms;
    for (;;) {
        kctl_kube_stats ts = kkf_tstats(g);
        kctl_reflector_stats is = kkf_istats(g);
        if (ts.watches > watches && (is.watch_restarts > i0->watch_restarts || is.lists > i0->lists)) return true;
        if (fr_now_ms() >= until) return false;
        fr_nap(10);
    }
}

static bool kkf_wait_relisted(kkf_rig *g, uint64_t lists, int deadline_ms) {
    uint64_t until = fr_now_ms() + (uint64_t)deadline_ms;
    while (kkf_istats(g).lists <= lists) {
        if (fr_now_ms() >= until) return false;
        fr_nap(10);
    }
    return true;
}

/* Hold the writer between two changes (true once it is held). */
/* The writer held and the server stalled (its watches send nothing, so
   the controller's watch stays behind), n specs changed behind the
   server, straight into its store (acknowledged there). The caller
   resumes the server and the writer. */
static void kkf_write_behind(kkf_rig *g, int n) {
    kctl_transport ms = kt_kube_server_transport(g->srv);
    int k;
    KT_CHECK(fr_hold_writer(&g->f, true, KKF_WAIT_MS));
    kt_kube_server_stall(g->srv, true);
    for (k = 0; k < n; k++) {
        int i = (k * 3) % KKF_N;
        char name[64], patch[64];
        int64_t v;
        pthread_mutex_lock(&g->f.mu);
        v = ++g->f.next_value;
        pthread_mutex_unlock(&g->f.mu);
        fr_name(&g->f, i, name);
        snprintf(patch, sizeof patch, "{\"spec\":{\"value\":%lld}}", (long long)v);
        KT_EQ_INT(kctl_transport_patch(&ms, &g->f.res, name, patch, KCTL_NTS, 0, NULL, NULL), KCTL_OK);
        pthread_mutex_lock(&g->f.mu);
        g->f.last[i] = v;
        g->f.unknown[i] = false;
        pthread_mutex_unlock(&g->f.mu);
    }
}

/* ---- convergence, as the store and the devices show it */

static bool kkf_converged(void *rig, char *why, size_t cap) {
    kkf_rig *g = (kkf_rig *)rig;
    int i;
    why[0] = '\0';
    for (i = 0; i < KKF_N; i++) {
        char name[64];
        kctl_obj *o = NULL;
        fr_stored st = { -1, -1, -1, -1, false };
        int64_t racer;
        int rc;
        fr_name(&g->f, i, name);
        if ((rc = kctl_transport_get(&g->tcheck, &g->f.res, name, &o, NULL)) != KCTL_OK) {
            snprintf(why, cap, "%s: not read: %s", name, kctl_strerror(rc));
            return false;
        }
        kctl_obj_get_int64(o, "spec.value", &st.spec);
        st.generation = kctl_obj_generation(o);
        kctl_obj_get_int64(o, "status.observedGeneration", &st.observed);
        kctl_obj_get_int64(o, "status.value", &st.value);
        st.racer = kctl_obj_get_int64(o, "status.racer", &racer) == KCTL_OK;
        kctl_obj_unref(o);
        if (!fr_device_converged(&g->f, i, &st, why, cap)) return false;
    }
    return true;
}

static bool kkf_wait_converged(kkf_rig *g, int deadline_ms, const char *file, int line) {
    return fr_wait_converged(g, kkf_converged, deadline_ms, 50, file, line);
}

/* ---- the rig */

static int kkf_transport(kkf_rig *g, kctl_transport *t) {
    kctl_kube_desc d = g->desc;
    d.request_timeout_ns = KKF_REQUEST_TIMEOUT_NS;
    d.connect_timeout_ns = KCTL_SEC(1);
    return kctl_kube_create(&d, t);
}

/* Everything stops, in order; on a cluster the devices are deleted. */
static void kkf_teardown(kkf_rig *g) {
    int i;
    fr_stop_writer(&g->f, 2);
    fr_stop_racer(&g->f);
    fr_device_gate_set(&g->f, false);
    if (g->srv) kt_kube_server_stall(g->srv, false);
    if (g->ctl) kctl_controller_stop(g->ctl);
    if (g->inf) kctl_informer_stop(g->inf);
    kctl_controller_destroy(g->ctl);
    kctl_informer_destroy(g->inf);
    if (!g->srv && g->f.tw.vt) {
        for (i = 0; i < KKF_N; i++) {
            char name[64];
            if (!g->created[i]) continue;
            fr_name(&g->f, i, name);
            if (kctl_transport_remove(&g->f.tw, &g->f.res, name, NULL, NULL, NULL) != KCTL_OK)
                printf("  %s/%s: not deleted, delete it by hand\n", g->f.res.ns, name);
        }
    }
    kctl_transport_destroy(&g->t);
    kctl_transport_destroy(&g->f.tw);
    kctl_transport_destroy(&g->f.tr);
    if (g->own_tcheck) kctl_transport_destroy(&g->tcheck);
    kt_kube_server_stop(g->srv);
    pthread_mutex_destroy(&g->clock.mu);
    fr_deinit(&g->f);
    memset(g, 0, sizeof *g);
}

/* The rig's state and locks: zero, then these. */
static void kkf_init(kkf_rig *g) {
    memset(g, 0, sizeof *g);
    fr_init(&g->f, KKF_N);
    pthread_mutex_init(&g->clock.mu, NULL);
}

/* The devices created, the controller running (stall detection at
   KKF_STALL_NS; the informer on the freezable clock, through the gate),
   everything converged, the writer running. g->desc, res, api_version,
   kind, prefix and srv (or tcheck) are set. */
static bool kkf_start(kkf_rig *g) {
    kctl_informer_desc id;
    kctl_controller_desc cd;
    int i, rc;
    if ((rc = kkf_transport(g, &g->t)) != KCTL_OK || (rc = kkf_transport(g, &g->f.tw)) != KCTL_OK ||
        (rc = kkf_transport(g, &g->f.tr)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "kctl_kube_create: %s", kctl_strerror(rc));
        return false;
    }
    if (g->srv) g->tcheck = kt_kube_server_transport(g->srv);
    else if ((rc = kkf_transport(g, &g->tcheck)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "kctl_kube_create: %s", kctl_strerror(rc));
        return false;
    } else {
        g->own_tcheck = true;
    }
    for (i = 0; i < KKF_N; i++) {
        char doc[384], name[64];
        kctl_api_status st;
        memset(&st, 0, sizeof st);
        fr_name(&g->f, i, name);
        snprintf(doc, sizeof doc, "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
                 "\"spec\":{\"value\":0}}", g->api_version, g->kind, name, g->f.res.ns);
        if ((rc = kctl_transport_create(&g->f.tw, &g->f.res, doc, KCTL_NTS, NULL, &st)) != KCTL_OK) {
            kt_fail(__FILE__, __LINE__, "create %s: %s (%s)", name, kctl_strerror(rc), st.message ? st.message : "");
            kctl_api_status_clear(&st);
            return false;
        }
        g->created[i] = true;
        kctl_api_status_clear(&st);
    }
    g->gate.inner = g->t;
    g->gate.srv = g->srv;
    g->tinf.vt = &kkf_gate_vt;
    g->tinf.self = &g->gate;
    memset(&id, 0, sizeof id);
    id.transport = g->tinf;
    id.resource = g->f.res;
    id.stall_ns = KKF_STALL_NS;
    id.page_size = KKF_PAGE;
    id.clock.now_fn = kkf_clock_now;
    id.clock.user_data = &g->clock;
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
    cd.workers = KKF_WORKERS;
    cd.limiter = kctl_limiter_exponential(KKF_BACKOFF_BASE_NS, KKF_BACKOFF_MAX_NS);
    if ((rc = kctl_controller_create(&cd, &g->ctl)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "controller: %s", kctl_strerror(rc));
        return false;
    }
    if ((rc = kctl_informer_start(g->inf)) != KCTL_OK || (rc = kctl_controller_start(g->ctl, KCTL_SEC(20))) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "start: %s", kctl_strerror(rc));
        return false;
    }
    if (!kkf_wait_converged(g, KKF_CONVERGE_MS, __FILE__, __LINE__)) return false;
    if (!fr_start_writer(&g->f)) {
        kt_fail(__FILE__, __LINE__, "writer thread");
        return false;
    }
    if (!fr_wait_acked(&g->f, 10, KKF_WAIT_MS)) {
        kt_fail(__FILE__, __LINE__, "the writer got nothing acknowledged on a healthy server");
        return false;
    }
    return true;
}

/* On a fresh test server (desc: its options, NULL: the defaults but a
   bookmark period of KKF_BOOKMARK_NS). */
static bool kkf_setup(kkf_rig *g, const kt_kube_server_desc *desc) {
    kt_kube_server_desc sd;
    int rc;
    kkf_init(g);
    memset(&sd, 0, sizeof sd);
    if (desc) sd = *desc;
    if (!sd.bookmark_period_ns) sd.bookmark_period_ns = KKF_BOOKMARK_NS;
    if ((rc = kt_kube_server_start(&sd, &g->srv)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "test server: %s", kctl_strerror(rc));
        return false;
    }
    g->desc = kctl_kube_desc_init();
    g->desc.server = kt_kube_server_url(g->srv);
    g->f.res.group = "edge.kctl.io";
    g->f.res.version = "v1";
    g->f.res.resource = "deviceconfigs";
    g->f.res.ns = "faults";
    g->api_version = "edge.kctl.io/v1";
    g->kind = "DeviceConfig";
    return kkf_start(g);
}

/* The writer stops (its last change acknowledged), then everything must
   converge; every failure was a fault's. */
static bool kkf_finish(kkf_rig *g, const char *file, int line) {
    fr_check_failures(&g->f, file, line);
    return kkf_wait_converged(g, KKF_CONVERGE_MS, file, line);
}

typedef struct kkf_mark {
    kctl_kube_stats t;
    kctl_reflector_stats i;
    kt_kube_server_counters s;
    uint64_t ms;
} kkf_mark;

static kkf_mark kkf_mark_now(kkf_rig *g) {
    kkf_mark m;
    memset(&m, 0, sizeof m);
    m.t = kkf_tstats(g);
    m.i = kkf_istats(g);
    if (g->srv) kt_kube_server_counters_get(g->srv, &m.s);
    m.ms = fr_now_ms();
    return m;
}

static uint64_t kkf_server_requests(const kt_kube_server_counters *c) {
    uint64_t n = 0;
    int v;
    for (v = 0; v < KCTL_VERB_COUNT; v++) n += c->requests[v];
    return n;
}

static void kkf_report(kkf_rig *g, const char *what, const kkf_mark *m0) {
    kkf_mark m1 = kkf_mark_now(g);
    kctl_controller_stats cs;
    if (!getenv("KT_VERBOSE")) return;
    kctl_controller_read_stats(g->ctl, &cs);
    printf("  %s (%llu ms): watches opened %llu, ended cleanly %llu, watch restarts %llu, lists %llu (relists %llu), "
           "reflector errors %llu; requests %llu (server: %llu, %llu answered 429/503), Retry-After waits %llu, AGAIN %llu; "
           "reconciles %llu (errors %llu), status written %llu, skipped %llu, conflicts %llu; writer acked %llu, failed tries %llu\n",
           what, (unsigned long long)(m1.ms - m0->ms), (unsigned long long)(m1.t.watches - m0->t.watches),
           (unsigned long long)(m1.t.watch_ends - m0->t.watch_ends), (unsigned long long)(m1.i.watch_restarts - m0->i.watch_restarts),
           (unsigned long long)(m1.i.lists - m0->i.lists), (unsigned long long)(m1.i.relists - m0->i.relists),
           (unsigned long long)(m1.i.errors - m0->i.errors), (unsigned long long)(m1.t.requests - m0->t.requests),
           (unsigned long long)(kkf_server_requests(&m1.s) - kkf_server_requests(&m0->s)),
           (unsigned long long)(m1.s.throttled - m0->s.throttled), (unsigned long long)(m1.t.waits - m0->t.waits),
           (unsigned long long)(m1.t.throttled - m0->t.throttled), (unsigned long long)fr_get(&g->f.reconciles),
           (unsigned long long)cs.error, (unsigned long long)fr_get(&g->f.status_written),
           (unsigned long long)fr_get(&g->f.status_skipped), (unsigned long long)fr_get(&g->f.conflicts),
           (unsigned long long)g->f.acked, (unsigned long long)g->f.failed);
    fflush(stdout);
}
#endif /* KT_HAVE_CURL */

/* (0) No fault: the writer writes, everything converges. */
static void kkf_no_fault(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        KT_CHECK(fr_wait_acked(&g->f, 20, KKF_WAIT_MS));
        kkf_finish(g, __FILE__, __LINE__);
        kkf_report(g, "no fault", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (a) Broken streams: the server drops every watch connection without
   the chunked terminator, twice. The transport says IO, the reflector
   watches again from its last version (after a backoff) without a list,
   and nothing is lost. */
static void kkf_broken_stream(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0, m1;
        int k;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        for (k = 0; k < 2; k++) {
            kkf_mark b = kkf_mark_now(g);
            kt_kube_server_break_watches(g->srv);
            KT_CHECK(kkf_wait_rewatched(g, b.t.watches, &b.i, KKF_WAIT_MS));
            KT_CHECK(fr_wait_acked(&g->f, 10, KKF_WAIT_MS));
        }
        kkf_finish(g, __FILE__, __LINE__);
        m1 = kkf_mark_now(g);
        KT_CHECK(m1.i.watch_restarts >= m0.i.watch_restarts + 2);
        KT_EQ_U64(m1.i.lists, m0.i.lists);            /* resumed from the last version: no list */
        KT_EQ_U64(m1.t.watch_ends, m0.t.watch_ends);  /* a break is no clean end */
        kkf_report(g, "broken streams", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (b) Streams that end at their timeout: the server ends every watch
   cleanly (what is buffered, then the terminator), five times, each time
   once the watch has brought an event. The informer's clock is frozen
   meanwhile, so a backoff would never end: each watch must open again at
   once. The transport counts each end as a clean one (CLOSED), the
   reflector counts no error and lists nothing. */
static void kkf_watch_timeout(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0, m1;
        uint64_t until;
        int k;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        kkf_clock_freeze(&g->clock, true);
        for (k = 0; k < 5 && !kt.cur_failed; k++) {
            kkf_mark b = kkf_mark_now(g);
            bool fed = false, reopened = false;
            until = fr_now_ms() + KKF_WAIT_MS;
            /* the watch has brought an event (it is no "very short" watch) */
            while (!fed && fr_now_ms() < until) {
                kkf_mark c = kkf_mark_now(g);
                if (c.t.watches != b.t.watches) b = c; /* another watch: count from it */
                else fed = kkf_events(&c.i) > kkf_events(&b.i);
                if (!fed) fr_nap(5);
            }
            KT_CHECK(fed);
            kt_kube_server_end_watches(g->srv);
            while (!reopened && fr_now_ms() < until) {
                kctl_kube_stats ts = kkf_tstats(g);
                reopened = ts.watch_ends > b.t.watch_ends && ts.watches > b.t.watches;
                if (!reopened) fr_nap(5);
            }
            if (!reopened) kt_fail(__FILE__, __LINE__, "end %d: no new watch with the informer's clock frozen (a backoff?)", k + 1);
        }
        /* the informer's counters follow its step: until they show the five */
        for (until = fr_now_ms() + KKF_WAIT_MS; kkf_istats(g).watch_restarts < m0.i.watch_restarts + 5 && fr_now_ms() < until;)
            fr_nap(5);
        m1 = kkf_mark_now(g);
        kkf_clock_freeze(&g->clock, false);
        KT_EQ_U64(m1.t.watch_ends - m0.t.watch_ends, 5);
        KT_EQ_U64(m1.i.watch_restarts - m0.i.watch_restarts, 5);
        KT_EQ_U64(m1.i.errors, m0.i.errors);
        KT_EQ_U64(m1.i.lists, m0.i.lists);
        KT_CHECK(fr_wait_acked(&g->f, 10, KKF_WAIT_MS));
        kkf_finish(g, __FILE__, __LINE__);
        kkf_report(g, "watches ended at their timeout", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (c) An in-band 410: the writer held, the server stalled (its watches
   send nothing, so the watch falls behind), specs changed behind the
   server (straight into its store), the history expired, the server
   resumed: the watch's stream brings the ERROR event with a 410 Status,
   the transport says GONE, the reflector lists again. */
static void kkf_inband_gone(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0, m1;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        kkf_write_behind(g, 5);
        kt_kube_server_expire_history(g->srv);
        kt_kube_server_stall(g->srv, false);
        KT_CHECK(kkf_wait_relisted(g, m0.i.lists, KKF_WAIT_MS));
        fr_hold_writer(&g->f, false, KKF_WAIT_MS);
        KT_CHECK(fr_wait_acked(&g->f, 10, KKF_WAIT_MS));
        kkf_finish(g, __FILE__, __LINE__);
        m1 = kkf_mark_now(g);
        KT_CHECK(m1.i.relists > m0.i.relists);
        kkf_report(g, "in-band 410", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (d) An expired continue token: the watch is put behind (the server
   stalled, specs changed behind it) and the server restarts, forgetting
   its watch history: the reflector's watch from its last version is 410,
   it lists again; that list is held between its first and second page
   while the server's history expires: the second page is HTTP 410
   Expired, the transport says GONE, the reflector lists from scratch. */
static void kkf_expired_continue(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0, m1;
        uint64_t until;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        kkf_write_behind(g, 5);
        __atomic_store_n(&g->gate.armed, 1, __ATOMIC_RELEASE);
        kt_kube_server_restart(g->srv);
        kt_kube_server_stall(g->srv, false);
        for (until = fr_now_ms() + KKF_WAIT_MS; !__atomic_load_n(&g->gate.expired_rc, __ATOMIC_ACQUIRE) && fr_now_ms() < until;)
            fr_nap(10);
        KT_EQ_INT(__atomic_load_n(&g->gate.expired_rc, __ATOMIC_ACQUIRE), KCTL_ERR_GONE);
        KT_CHECK(kkf_wait_relisted(g, m0.i.lists, KKF_WAIT_MS)); /* from scratch, to the end */
        fr_hold_writer(&g->f, false, KKF_WAIT_MS);
        KT_CHECK(fr_wait_acked(&g->f, 10, KKF_WAIT_MS));
        kkf_finish(g, __FILE__, __LINE__);
        m1 = kkf_mark_now(g);
        KT_CHECK(m1.i.relists > m0.i.relists);
        if (getenv("KT_VERBOSE"))
            printf("  expired continue token: %llu pages asked for with a token\n", (unsigned long long)fr_get(&g->gate.pages));
        kkf_report(g, "expired continue token", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (e) 409 races on status: another client rewrites every device's
   status (a merge patch of /status without a version), first once while
   reconciles that must write a status wait at the device gate with the
   object they read (their writes then carry a version the racer moved
   on: 409 Conflict), then freely for five rounds. The controller re-reads
   and ends with its own status everywhere. */
static void kkf_status_race(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0;
        uint64_t ms0, rounds = 0;
        bool parked = false;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        fr_device_gate_set(&g->f, true);
        for (ms0 = fr_now_ms(); !parked && fr_now_ms() - ms0 < KKF_WAIT_MS; fr_nap(10)) {
            pthread_mutex_lock(&g->f.mu);
            parked = g->f.parked_stale > 0;
            pthread_mutex_unlock(&g->f.mu);
        }
        KT_CHECK(parked);
        KT_EQ_INT(fr_race_round(&g->f, 1), KKF_N);
        fr_device_gate_set(&g->f, false);
        fr_start_racer(&g->f);
        KT_CHECK(g->f.racer_on);
        for (ms0 = fr_now_ms(); g->f.racer_on && rounds < 5 && fr_now_ms() - ms0 < 30000; fr_nap(10)) {
            pthread_mutex_lock(&g->f.mu);
            rounds = g->f.racer_rounds;
            pthread_mutex_unlock(&g->f.mu);
        }
        KT_CHECK(rounds >= 5);
        fr_stop_racer(&g->f);
        kkf_finish(g, __FILE__, __LINE__);
        KT_CHECK(fr_get(&g->f.conflicts) > 0);
        if (getenv("KT_VERBOSE"))
            printf("  status race: %llu racer writes in %llu rounds; controller conflicts %llu\n", (unsigned long long)g->f.racer_writes,
                   (unsigned long long)g->f.racer_rounds, (unsigned long long)fr_get(&g->f.conflicts));
        kkf_report(g, "status race", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (f) 429 with Retry-After: for a stretch every request is answered 429
   TooManyRequests, Retry-After 1 s, while reconciles are pending (held at
   the device gate until it began) and the writer writes on. Nobody may
   storm: each of the four clients that send (the writer, two workers,
   the informer) sends at most two requests per Retry-After (a read or a
   write with a precondition waits it out once and tries once more, then
   the caller gets AGAIN; a write without one is handed back at once and
   the writer waits the Retry-After itself), plus the ones under way; the
   bound comes from the Retry-After and the stretch's length, so a slow
   machine only widens it. Then the server answers again and everything
   converges. */
static void kkf_throttled(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0, a, b;
        uint64_t ms0, sent, bound, periods;
        bool parked = false;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        fr_device_gate_set(&g->f, true);
        for (ms0 = fr_now_ms(); !parked && fr_now_ms() - ms0 < KKF_WAIT_MS; fr_nap(10)) {
            pthread_mutex_lock(&g->f.mu);
            parked = g->f.parked_stale > 0;
            pthread_mutex_unlock(&g->f.mu);
        }
        KT_CHECK(parked);
        KT_CHECK(fr_wait_acked(&g->f, 3, KKF_WAIT_MS)); /* more changes queued behind the gate */
        a = kkf_mark_now(g);
        kt_kube_server_throttle(g->srv, 1000000, 429, KKF_RETRY_AFTER_S);
        fr_device_gate_set(&g->f, false);
        fr_nap(3000); /* the stretch's length: the bound below grows with it */
        b = kkf_mark_now(g);
        kt_kube_server_throttle(g->srv, 0, 429, 0);
        sent = b.s.throttled - a.s.throttled;
        periods = (b.ms - a.ms) / (KKF_RETRY_AFTER_S * 1000u) + 1;
        bound = 4 * 2 * (periods + 1);
        KT_CHECK(sent > 0);
        if (sent > bound)
            kt_fail(__FILE__, __LINE__, "%llu requests answered 429 in %llu ms: Retry-After %d s allows %llu", (unsigned long long)sent,
                    (unsigned long long)(b.ms - a.ms), KKF_RETRY_AFTER_S, (unsigned long long)bound);
        KT_CHECK(b.t.waits > a.t.waits); /* the controller's transport waited a Retry-After out */
        if (getenv("KT_VERBOSE"))
            printf("  throttled for %llu ms: %llu requests answered 429 (Retry-After %d s allows %llu); the controller's "
                   "transport waited %llu times, handed back AGAIN %llu times\n",
                   (unsigned long long)(b.ms - a.ms), (unsigned long long)sent, KKF_RETRY_AFTER_S, (unsigned long long)bound,
                   (unsigned long long)(b.t.waits - a.t.waits), (unsigned long long)(b.t.throttled - a.t.throttled));
        KT_CHECK(fr_wait_acked(&g->f, 10, KKF_WAIT_MS));
        kkf_finish(g, __FILE__, __LINE__);
        kkf_report(g, "429 with Retry-After", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (g) A stalled server: it reads requests and answers none, and its
   watches send nothing, not even bookmarks. Only the reflector's stall
   detection can end the watch (the server keeps the stream open): the
   test waits until it has, then lets the server answer again. */
static void kkf_stalled(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0, m1;
        uint64_t until;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        kt_kube_server_stall(g->srv, true);
        for (until = fr_now_ms() + KKF_WAIT_MS; kkf_istats(g).watch_restarts == m0.i.watch_restarts && fr_now_ms() < until;)
            fr_nap(10);
        m1 = kkf_mark_now(g);
        KT_CHECK(m1.i.watch_restarts > m0.i.watch_restarts);
        KT_EQ_U64(m1.t.watch_ends, m0.t.watch_ends);
        kt_kube_server_stall(g->srv, false);
        for (until = fr_now_ms() + KKF_WAIT_MS; kkf_tstats(g).watches == m1.t.watches && fr_now_ms() < until;) fr_nap(10);
        KT_CHECK(kkf_tstats(g).watches > m1.t.watches);
        KT_CHECK(fr_wait_acked(&g->f, 10, KKF_WAIT_MS));
        kkf_finish(g, __FILE__, __LINE__);
        kkf_report(g, "stalled server", &m0);
        kkf_teardown(g);
    }
#endif
}

/* (h) A restart: every connection dropped, every watch forgotten with
   the watch history. So that the reflector's version is one the server
   forgot, its watch is behind when it happens (the server stalled, specs
   changed behind it); a caught-up watch would resume, as on a real
   server. The reflector's stream breaks, its watch from its last version
   gets the in-band 410, it lists again. */
static void kkf_restart(void) {
    KT_KUBE_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kkf_rig *g = &kkf;
        kkf_mark m0, m1;
        if (!kkf_setup(g, NULL)) { kkf_teardown(g); return; }
        m0 = kkf_mark_now(g);
        kkf_write_behind(g, 5);
        kt_kube_server_restart(g->srv);
        kt_kube_server_stall(g->srv, false);
        KT_CHECK(kkf_wait_relisted(g, m0.i.lists, KKF_WAIT_MS));
        fr_hold_writer(&g->f, false, KKF_WAIT_MS);
        KT_CHECK(fr_wait_acked(&g->f, 10, KKF_WAIT_MS));
        kkf_finish(g, __FILE__, __LINE__);
        m1 = kkf_mark_now(g);
        KT_CHECK(m1.i.relists > m0.i.relists);
        KT_CHECK(m1.i.watch_restarts > m0.i.watch_restarts);
        KT_CHECK(m1.t.watches >= m0.t.watches + 2); /* the one that got the 410, the one after the list */
        kkf_report(g, "server restart", &m0);
        kkf_teardown(g);
    }
#endif
}

#ifdef KT_HAVE_CURL
void kt_kube_faults_converge(const kctl_kube_desc *desc, const kctl_resource *res, const char *api_version, const char *kind,
                             const char *prefix) {
    kkf_rig *g = &kkf;
    kkf_mark m0;
    kkf_init(g);
    g->desc = *desc;
    g->f.res = *res;
    g->api_version = api_version;
    g->kind = kind;
    snprintf(g->f.prefix, sizeof g->f.prefix, "%s", prefix);
    if (!kkf_start(g)) { kkf_teardown(g); return; }
    m0 = kkf_mark_now(g);
    KT_CHECK(fr_wait_acked(&g->f, 20, KKF_WAIT_MS));
    kkf_finish(g, __FILE__, __LINE__);
    kkf_report(g, "converge", &m0);
    kkf_teardown(g);
}
#endif

void kt_suite_kube_faults(void) {
    KT_RUN(kkf_no_fault);
    KT_RUN(kkf_broken_stream);
    KT_RUN(kkf_watch_timeout);
    KT_RUN(kkf_inband_gone);
    KT_RUN(kkf_expired_continue);
    KT_RUN(kkf_status_race);
    KT_RUN(kkf_throttled);
    KT_RUN(kkf_stalled);
    KT_RUN(kkf_restart);
}
