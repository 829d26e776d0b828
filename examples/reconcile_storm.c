/* reconcile_storm.c - the "requeue after 5s" reconcile storm, reproduced on a virtual clock */
/*
    A real incident: after a network blip, 200 ManagedClusters reconnected at
    once and every reconcile failed. The controller answered each failure with

        return ctrl.Result{RequeueAfter: 5 * time.Second}, nil   // error dropped

    so the work queue never saw an error and never backed off: 200 objects
    every 5 s, 40 reconciles a second against the API server, for as long as
    the failure lasted. The one-line fix is to return the error,

        return ctrl.Result{}, err

    which makes the queue retry the key through its rate limiter.

    This program runs the whole pipeline - memstore, informer, controller,
    work queue - for 600 virtual seconds on a kctl_vclock, twice. The store
    is the embedded memstore with a fault injected: every status write
    answers IO. Each reconcile writes the object's status (one store
    request), which fails, and then
      A  returns { .requeue_after_ns = 5 s } and drops the error (the bug);
      B  returns { .error = rc } (the fix): the controller requeues through
         its default limiter, the max of per-key exponential 5 ms .. 1000 s
         and a 10/s burst-100 bucket.
    It is single-threaded and never sleeps: it steps the informer and the
    controller, and when nothing is ready moves the clock to the next time
    something is (kctl_queue_next_ready, the reflector's next step).
    Store requests are counted by wrapping the memstore's transport.

    Build: cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -pthread \
               examples/reconcile_storm.c -o reconcile_storm
*/
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

#include <stdio.h>
#include <string.h>

#define STORM_OBJECTS 200
#define STORM_SECONDS 600
#define STORM_MINUTES (STORM_SECONDS / 60)

typedef enum storm_strategy {
    STORM_REQUEUE_AFTER = 0,  /* A: the bug */
    STORM_RATE_LIMITED  = 1   /* B: the fix */
} storm_strategy;

typedef struct storm_result {
    uint32_t per_second[STORM_SECONDS]; /* reconciles in each virtual second */
    uint32_t req_second[STORM_SECONDS]; /* store requests in each virtual second */
    uint64_t total, requests;
    uint32_t peak;                      /* most reconciles in one second */
    uint32_t peak_second;               /* the first second with that many */
    uint32_t peak_late;                 /* most in one second after the first minute */
    uint32_t max_failures;              /* largest num_requeues at the end (B) */
} storm_result;

/* The run in progress (the program is single-threaded). */
static struct storm_state {
    kctl_vclock vc;
    kctl_clock clock;
    uint64_t start;
    storm_strategy strategy;
    storm_result *res;
    kctl_transport store;
    kctl_resource res_type;
} S;

static int storm_second(void) {
    uint64_t sec = (kctl_clock_now(&S.clock) - S.start) / KCTL_SEC(1);
    return sec < STORM_SECONDS ? (int)sec : -1;
}

/* ---- the store as the controller sees it: every request counted */
static int storm_count(int rc) {
    int sec = storm_second();
    if (sec >= 0) {
        S.res->req_second[sec]++;
        S.res->requests++;
    }
    return rc;
}
static int st_list(void *self, const kctl_resource *r, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_list(&S.store, r, o, out, st));
}
static int st_watch_open(void *self, const kctl_resource *r, const kctl_list_opts *o, const char *rv, kctl_watch **out,
                         kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_watch_open(&S.store, r, o, rv, out, st));
}
static int st_watch_next(void *self, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    (void)self; /* events on an open watch are not requests */
    return kctl_transport_watch_next(&S.store, w, timeout_ns, ev, st);
}
static void st_watch_close(void *self, kctl_watch *w) {
    (void)self;
    kctl_transport_watch_close(&S.store, w);
}
static int st_get(void *self, const kctl_resource *r, const char *name, kctl_obj **out, kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_get(&S.store, r, name, out, st));
}
static int st_create(void *self, const kctl_resource *r, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_create(&S.store, r, json, len, out, st));
}
static int st_update(void *self, const kctl_resource *r, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_update(&S.store, r, json, len, out, st));
}
static int st_update_status(void *self, const kctl_resource *r, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_update_status(&S.store, r, json, len, out, st));
}
static int st_patch(void *self, const kctl_resource *r, const char *name, const char *patch, size_t len, unsigned flags,
                    kctl_obj **out, kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_patch(&S.store, r, name, patch, len, flags, out, st));
}
static int st_remove(void *self, const kctl_resource *r, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                     kctl_api_status *st) {
    (void)self;
    return storm_count(kctl_transport_remove(&S.store, r, name, opts, out, st));
}
static const kctl_transport_vtable storm_counting = {
    st_list, st_watch_open, st_watch_next, st_watch_close, st_get, st_create, st_update, st_update_status, st_patch, st_remove, NULL, NULL
};

/* ---- the reconcile: report the cluster connected; the store says IO */
static kctl_reconcile_result storm_reconcile(const kctl_reconcile_ctx *ctx) {
    static const char connected[] = "{\"phase\":\"Connected\"}";
    kctl_reconcile_result r;
    int rc, sec = storm_second();
    memset(&r, 0, sizeof r);
    if (sec >= 0) {
        S.res->per_second[sec]++;
        S.res->total++;
    }
    if (!ctx->obj) return r;
    rc = kctl_status_update(&ctx->transport, &S.res_type, ctx->obj, connected, sizeof connected - 1, NULL, NULL, NULL);
    if (rc == KCTL_OK) return r;
    if (S.strategy == STORM_REQUEUE_AFTER)
        r.requeue_after_ns = KCTL_SEC(5); /* return ctrl.Result{RequeueAfter: 5s}, nil */
    else
        r.error = rc;                     /* return ctrl.Result{}, err */
    return r;
}

/* Run one strategy for STORM_SECONDS of virtual time. 0 on success. */
static int storm_run(storm_strategy strategy, storm_result *res)
{
    /* Any origin will do; not 0, so that next_ready's 0 ("ready now") can
       never be mistaken for a time. */
    const uint64_t start = KCTL_SEC(1000);
    const uint64_t end = start + KCTL_SEC(STORM_SECONDS);
    const kctl_resource clusters = { "cluster.open-cluster-management.io", "v1", "managedclusters", "default" };
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_informer_desc id;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kctl_controller_stats cs;
    kctl_transport counted;
    int rc, i, failed = 0;

    memset(res, 0, sizeof *res);
    memset(&S, 0, sizeof S);
    kctl_vclock_init(&S.vc, start);
    S.clock = kctl_vclock_clock(&S.vc);
    S.start = start;
    S.strategy = strategy;
    S.res = res;
    S.res_type = clusters;

    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&S.vc);
    rc = kctl_memstore_create(&md, &ms);
    for (i = 0; i < STORM_OBJECTS && rc == KCTL_OK; i++) {
        char doc[128];
        int n = snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"cluster-%03d\"},\"spec\":{\"hubAcceptsClient\":true}}", i);
        rc = kctl_memstore_apply(ms, &clusters, doc, (size_t)n, NULL, NULL);
    }
    /* the blip: from now on every status write fails */
    if (rc == KCTL_OK) rc = kctl_memstore_fail_next(ms, KCTL_VERB_UPDATE_STATUS, UINT32_MAX, KCTL_ERR_IO);
    S.store = kctl_memstore_transport(ms);
    counted.vt = &storm_counting;
    counted.self = NULL;

    memset(&id, 0, sizeof id);
    id.transport = counted;
    id.resource = clusters;
    id.clock = kctl_vclock_clock(&S.vc);
    if (rc == KCTL_OK) rc = kctl_informer_create(&id, &inf);
    memset(&cd, 0, sizeof cd);
    cd.name = strategy == STORM_REQUEUE_AFTER ? "storm-a" : "storm-b";
    cd.primary = inf;
    cd.transport = counted;
    cd.reconcile = storm_reconcile;
    cd.clock = kctl_vclock_clock(&S.vc); /* the default limiter runs on it too */
    if (rc == KCTL_OK) rc = kctl_controller_create(&cd, &c);
    if (rc != KCTL_OK) {
        fprintf(stderr, "reconcile_storm: setting up: %s\n", kctl_strerror(rc));
        failed = 1;
        goto out;
    }

    for (;;) {
        uint64_t now = kctl_clock_now(&S.clock), inf_next = UINT64_MAX, next;
        size_t done = 1;
        /* events into the cache and the queue, then every ready key */
        if ((rc = kctl_informer_step(inf, 0, &inf_next)) != KCTL_OK ||
            (rc = kctl_controller_step(c, (size_t)-1, &done)) != KCTL_OK) {
            fprintf(stderr, "reconcile_storm: step: %s\n", kctl_strerror(rc));
            failed = 1;
            goto out;
        }
        if (done) continue; /* reconciles may have made more work ready now */
        next = kctl_queue_next_ready(kctl_controller_queue(c));
        if (inf_next < next) next = inf_next;
        if (next == UINT64_MAX || next >= end) break;
        if (next > now) kctl_vclock_advance(&S.vc, next - now);
    }

    for (i = 0; i < STORM_SECONDS; i++) {
        if (res->per_second[i] > res->peak) {
            res->peak = res->per_second[i];
            res->peak_second = (uint32_t)i;
        }
        if (i >= 60 && res->per_second[i] > res->peak_late)
            res->peak_late = res->per_second[i];
    }
    for (i = 0; i < STORM_OBJECTS; i++) {
        char key[32];
        uint32_t n;
        snprintf(key, sizeof key, "default/cluster-%03d", i);
        n = kctl_queue_num_requeues(kctl_controller_queue(c), key);
        if (n > res->max_failures)
            res->max_failures = n;
    }
    kctl_controller_read_stats(c, &cs);
    if (cs.success || (strategy == STORM_RATE_LIMITED ? cs.requeue_after : cs.error)) {
        fprintf(stderr, "reconcile_storm: unexpected results: %llu ok, %llu errors, %llu requeue-after\n",
                (unsigned long long)cs.success, (unsigned long long)cs.error, (unsigned long long)cs.requeue_after);
        failed = 1;
    }

out:
    kctl_controller_destroy(c);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&S.vc);
    return failed;
}

static uint64_t storm_minute(const uint32_t *per_second, int minute)
{
    uint64_t n = 0;
    int s;
    for (s = minute * 60; s < (minute + 1) * 60; s++)
        n += per_second[s];
    return n;
}

static uint32_t storm_peak(const uint32_t *per_second)
{
    uint32_t p = 0;
    int s;
    for (s = 0; s < STORM_SECONDS; s++)
        if (per_second[s] > p) p = per_second[s];
    return p;
}

/* The default limiter's exponential delay after n failures: 5 ms * 2^n, capped at 1000 s. */
static double storm_backoff_s(uint32_t n)
{
    double d = 0.005;
    while (n-- > 0 && d < 1000.0)
        d *= 2.0;
    return d < 1000.0 ? d : 1000.0;
}

int main(void)
{
    static storm_result a, b;
    uint64_t b_rest = 0;
    int m;

    if (storm_run(STORM_REQUEUE_AFTER, &a) != 0 || storm_run(STORM_RATE_LIMITED, &b) != 0)
        return 1;
    for (m = 1; m < STORM_MINUTES; m++)
        b_rest += storm_minute(b.per_second, m);

    printf("kctl %s - reconcile storm: %d objects whose reconcile always fails, %d s of virtual time\n\n",
           kctl_version(), STORM_OBJECTS, STORM_SECONDS);
    printf("              reconciles          store requests\n");
    printf("                A         B         A         B\n");
    printf("  ----------  --------  --------  --------  --------\n");
    for (m = 0; m < STORM_MINUTES; m++)
        printf("  minute %2d   %8llu  %8llu  %8llu  %8llu\n", m + 1,
               (unsigned long long)storm_minute(a.per_second, m), (unsigned long long)storm_minute(b.per_second, m),
               (unsigned long long)storm_minute(a.req_second, m), (unsigned long long)storm_minute(b.req_second, m));
    printf("  ----------  --------  --------  --------  --------\n");
    printf("  total       %8llu  %8llu  %8llu  %8llu\n", (unsigned long long)a.total, (unsigned long long)b.total,
           (unsigned long long)a.requests, (unsigned long long)b.requests);
    printf("  average/s   %8.1f  %8.1f  %8.1f  %8.1f\n", (double)a.total / STORM_SECONDS, (double)b.total / STORM_SECONDS,
           (double)a.requests / STORM_SECONDS, (double)b.requests / STORM_SECONDS);
    printf("  peak in 1 s %8lu  %8lu  %8lu  %8lu\n", (unsigned long)a.peak, (unsigned long)b.peak,
           (unsigned long)storm_peak(a.req_second), (unsigned long)storm_peak(b.req_second));
    printf("  at second   %8lu  %8lu\n", (unsigned long)a.peak_second, (unsigned long)b.peak_second);
    printf("  peak after  %8lu  %8lu   (most reconciles in one second after the first minute)\n\n",
           (unsigned long)a.peak_late, (unsigned long)b.peak_late);
    printf("Every reconcile is one status write (it fails); the rest of the requests are the\n"
           "  informer's list and watches.\n");
    printf("A retries all %d objects every 5 s for as long as the failure lasts: %.0f reconciles/s on\n"
           "  average, in lock-step bursts of %lu within one second, since nothing spreads or slows them.\n",
           STORM_OBJECTS, (double)a.total / STORM_SECONDS, (unsigned long)a.peak);
    printf("B starts the same, plus the bucket's burst of 100 quick retries (its peak, second %lu), then the\n"
           "  shared 10/s bucket holds it to %lu in any second while each object's delay doubles (5 ms, 10 ms,\n"
           "  ... up to 1000 s): %llu reconciles in minutes 2-%d (%.2f/s), thinning out; each object has\n"
           "  failed %lu times by the end and its latest retry was %.0f s away.\n\n",
           (unsigned long)b.peak_second, (unsigned long)b.peak_late, (unsigned long long)b_rest, STORM_MINUTES,
           (double)b_rest / (STORM_SECONDS - 60), (unsigned long)b.max_failures,
           b.max_failures ? storm_backoff_s(b.max_failures - 1) : 0.0);

    printf("A = on error, return ctrl.Result{RequeueAfter: 5s}, nil -> kctl_queue_add_after(q, key, KCTL_SEC(5))\n");
    printf("B = on error, return ctrl.Result{}, err               -> kctl_queue_add_rate_limited(q, key)\n");
    return 0;
}
