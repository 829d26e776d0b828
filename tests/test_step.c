/* test_step.c - the single-threaded manager (kctl_manager_step,
   kctl_controller_poll): the next deadline it returns when idle (resync,
   lease renewal, add_after, backoff end, watch stall) and nothing
   earlier, its budget, and the memstore's wake-up (watch_notify), on the
   virtual clock. Runs in the threaded build and under KCTL_NO_THREADS. */
#include "kt.h"
#include <stdlib.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <time.h>
#endif

static const kctl_resource sm_cm = { "", "v1", "configmaps", "prod" };

typedef struct sm_env {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_manager *m;
    kctl_informer *inf;
    kctl_controller *c;
    int reconciles;
    uint64_t requeue_after_ns; /* what the reconcile returns */
    int wakes;                 /* the wake-up's calls */
} sm_env;

static void sm_wake(void *ud) { ((sm_env *)ud)->wakes++; }

static kctl_reconcile_result sm_reconcile(const kctl_reconcile_ctx *ctx) {
    sm_env *e = (sm_env *)ctx->user_data;
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    e->reconciles++;
    r.requeue_after_ns = e->requeue_after_ns;
    return r;
}

/* A manager on the virtual clock over a memstore holding n objects, with
   one informer and one controller; with lease, leader election too. */
static bool sm_open(sm_env *e, int n, uint64_t resync_ns, const char *lease) {
    kctl_memstore_desc sd;
    kctl_manager_desc md;
    kctl_controller_desc cd;
    int i;
    memset(e, 0, sizeof *e);
    kctl_vclock_init(&e->vc, KCTL_SEC(1000));
    memset(&sd, 0, sizeof sd);
    sd.clock = kctl_vclock_clock(&e->vc);
    if (kctl_memstore_create(&sd, &e->ms) != KCTL_OK) return false;
    for (i = 0; i < n; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%03d\"}}", i);
        KT_EQ_INT(kctl_memstore_apply(e->ms, &sm_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
    }
    memset(&md, 0, sizeof md);
    md.transport = kctl_memstore_transport(e->ms);
    md.clock = kctl_vclock_clock(&e->vc);
    md.resync_ns = resync_ns;
    md.wake.fn = sm_wake;
    md.wake.user_data = e;
    md.lease_name = lease;
    md.identity = lease ? "me" : NULL;
    if (kctl_manager_create(&md, &e->m) != KCTL_OK) return false;
    if (kctl_manager_informer(e->m, &sm_cm, NULL, NULL, &e->inf) != KCTL_OK) return false;
    memset(&cd, 0, sizeof cd);
    cd.primary = e->inf;
    cd.reconcile = sm_reconcile;
    cd.user_data = e;
    return kctl_manager_add_controller(e->m, &cd, &e->c) == KCTL_OK;
}

static void sm_close(sm_env *e) {
    kctl_manager_destroy(e->m);
    kctl_memstore_destroy(e->ms);
    kctl_vclock_deinit(&e->vc);
}

static uint64_t sm_now(sm_env *e) {
    kctl_clock c = kctl_vclock_clock(&e->vc);
    return kctl_clock_now(&c);
}

/* Step until the manager asks for a time later than now (the work ready
   now is done); the deadline it asked for. */
static uint64_t sm_settle(sm_env *e) {
    uint64_t dl = 0;
    int i;
    for (i = 0; i < 100; i++) {
        KT_EQ_INT(kctl_manager_step(e->m, 64, &dl), KCTL_OK);
        if (dl > sm_now(e)) return dl;
    }
    kt_fail(__FILE__, __LINE__, "never idle");
    return dl;
}

/* Idle with a resync: the next deadline is exactly the resync (30 s after
   the list), not a 1 s poll; sleeping until then resyncs. */
static void sm_idle_resync(void) {
    sm_env e;
    uint64_t t0, dl;
    kctl_reflector_stats st;
    if (!sm_open(&e, 3, KCTL_SEC(30), NULL)) return;
    t0 = sm_now(&e);
    dl = sm_settle(&e);
    KT_EQ_INT(e.reconciles, 3);
    KT_EQ_U64(dl, t0 + KCTL_SEC(30));
    /* and stepping again without the clock moving asks the same */
    KT_EQ_INT(kctl_manager_step(e.m, 64, &dl), KCTL_OK);
    KT_EQ_U64(dl, t0 + KCTL_SEC(30));
    KT_EQ_INT(e.reconciles, 3);
    kctl_vclock_advance(&e.vc, dl - sm_now(&e)); /* sleep until then */
    dl = sm_settle(&e);
    KT_EQ_INT(e.reconciles, 6); /* the resync's syncs reach the controller */
    KT_EQ_U64(dl, t0 + KCTL_SEC(60));
    kctl_informer_read_stats(e.inf, &st);
    KT_EQ_U64(st.lists, 1);
    sm_close(&e);
}

/* Idle without anything periodic: the only deadline is the watch's stall
   check (5 min after its last event). An hour of sleeping from deadline
   to deadline is a dozen wake-ups, not 3600. */
static void sm_idle_stall(void) {
    sm_env e;
    uint64_t t0, dl;
    int sleeps = 0;
    if (!sm_open(&e, 1, 0, NULL)) return;
    t0 = sm_now(&e);
    dl = sm_settle(&e);
    KT_EQ_U64(dl, t0 + KCTL_SEC(300));
    while (sm_now(&e) < t0 + KCTL_SEC(3600)) {
        kctl_vclock_advance(&e.vc, dl - sm_now(&e));
        dl = sm_settle(&e);
        KT_CHECK(dl >= sm_now(&e) + KCTL_SEC(300)); /* never sooner than the next real deadline */
        sleeps++;
    }
    KT_EQ_INT(sleeps, 12);
    KT_EQ_INT(e.reconciles, 1);
    sm_close(&e);
}

/* A reconcile's requeue_after: the deadline is its ready time. */
static void sm_idle_add_after(void) {
    sm_env e;
    uint64_t t0, dl;
    if (!sm_open(&e, 1, 0, NULL)) return;
    e.requeue_after_ns = KCTL_SEC(7);
    t0 = sm_now(&e);
    dl = sm_settle(&e);
    KT_EQ_INT(e.reconciles, 1);
    KT_EQ_U64(dl, t0 + KCTL_SEC(7));
    kctl_vclock_advance(&e.vc, KCTL_SEC(7) - 1); /* not yet */
    KT_EQ_INT(kctl_manager_step(e.m, 64, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles, 1);
    KT_EQ_U64(dl, t0 + KCTL_SEC(7));
    kctl_vclock_advance(&e.vc, 1);
    e.requeue_after_ns = 0;
    dl = sm_settle(&e);
    KT_EQ_INT(e.reconciles, 2);
    KT_EQ_U64(dl, t0 + KCTL_SEC(300)); /* the stall check of a watch quiet since t0 */
    sm_close(&e);
}

/* Leader election: while leading, the deadline is the next renewal
   (retry_ns, 2 s) and the controllers run; the lease is renewed at it. */
static void sm_idle_lease(void) {
    sm_env e;
    uint64_t t0, dl;
    kctl_manager_leader_info li;
    int i;
    if (!sm_open(&e, 2, 0, "step-lease")) return;
    t0 = sm_now(&e);
    dl = sm_settle(&e);
    kctl_manager_read_leader(e.m, &li);
    KT_CHECK(li.leading);
    KT_EQ_INT(e.reconciles, 2);
    KT_EQ_U64(dl, t0 + KCTL_LEADER_RETRY_NS);
    KT_EQ_U64(li.next_ns, dl);
    for (i = 0; i < 10; i++) { /* renew at each deadline, and only there */
        uint64_t steps = li.steps;
        kctl_vclock_advance(&e.vc, dl - sm_now(&e) - 1);
        KT_EQ_INT(kctl_manager_step(e.m, 64, &dl), KCTL_OK);
        kctl_manager_read_leader(e.m, &li);
        KT_EQ_U64(li.steps, steps); /* 1 ns early: no try */
        kctl_vclock_advance(&e.vc, 1);
        dl = sm_settle(&e);
        kctl_manager_read_leader(e.m, &li);
        KT_EQ_U64(li.steps, steps + 1);
        KT_CHECK(li.leading);
        KT_EQ_U64(dl, sm_now(&e) + KCTL_LEADER_RETRY_NS);
    }
    sm_close(&e);
}

/* The reflector's backoff: a list the store refuses is tried again at the
   backoff's end (800 ms jittered up to 1.6 s), which is the deadline; not
   a nanosecond before. */
static void sm_idle_backoff(void) {
    sm_env e;
    uint64_t t0, dl;
    kctl_reflector_stats st;
    if (!sm_open(&e, 1, 0, NULL)) return;
    kctl_memstore_fail_next(e.ms, KCTL_VERB_LIST, 1, KCTL_ERR_IO);
    t0 = sm_now(&e);
    KT_EQ_INT(kctl_manager_step(e.m, 64, &dl), KCTL_OK);
    kctl_informer_read_stats(e.inf, &st);
    KT_EQ_U64(st.errors, 1);
    KT_EQ_U64(st.lists, 0);
    KT_CHECK(dl >= t0 + KCTL_MS(800) && dl < t0 + KCTL_MS(1600));
    kctl_vclock_advance(&e.vc, dl - t0 - 1);
    KT_EQ_INT(kctl_manager_step(e.m, 64, &dl), KCTL_OK);
    kctl_informer_read_stats(e.inf, &st);
    KT_EQ_U64(st.lists, 0);
    kctl_vclock_advance(&e.vc, 1);
    dl = sm_settle(&e);
    kctl_informer_read_stats(e.inf, &st);
    KT_EQ_U64(st.lists, 1);
    KT_EQ_INT(e.reconciles, 1);
    KT_EQ_U64(dl, sm_now(&e) + KCTL_SEC(300));
    sm_close(&e);
}

/* The budget counts reconciles: 10 ready keys, budget 3: 3, 3, 3, 1,
   with "now" as the deadline while keys are left. */
static void sm_budget(void) {
    sm_env e;
    uint64_t dl, t0;
    int before;
    if (!sm_open(&e, 10, 0, NULL)) return;
    t0 = sm_now(&e);
    KT_EQ_INT(kctl_manager_step(e.m, 3, &dl), KCTL_OK); /* the list, and 3 of the 10 */
    KT_EQ_INT(e.reconciles, 3);
    KT_EQ_U64(dl, t0);
    before = e.reconciles;
    KT_EQ_INT(kctl_manager_step(e.m, 3, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles - before, 3);
    KT_EQ_U64(dl, t0);
    KT_EQ_INT(kctl_manager_step(e.m, 0, &dl), KCTL_OK); /* 0: intake only */
    KT_EQ_INT(e.reconciles, 6);
    KT_EQ_U64(dl, t0);
    KT_EQ_INT(kctl_manager_step(e.m, 3, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles, 9);
    KT_EQ_INT(kctl_manager_step(e.m, 3, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles, 10);
    KT_EQ_U64(dl, t0 + KCTL_SEC(300));
    sm_close(&e);
}

/* A write to the memstore calls the wake-up (from inside the write); the
   next step reconciles it. No write, no wake-up. */
static void sm_wake_on_write(void) {
    sm_env e;
    uint64_t dl;
    int w0;
    if (!sm_open(&e, 1, 0, NULL)) return;
    sm_settle(&e);
    w0 = e.wakes;
    KT_EQ_INT(kctl_manager_step(e.m, 64, &dl), KCTL_OK);
    KT_EQ_INT(e.wakes, w0);
    kctl_memstore_apply(e.ms, &sm_cm, "{\"metadata\":{\"name\":\"new\"}}", KCTL_NTS, NULL, NULL);
    KT_CHECK(e.wakes > w0);
    sm_settle(&e);
    KT_EQ_INT(e.reconciles, 2);
    w0 = e.wakes;
    KT_EQ_INT(kctl_memstore_delete(e.ms, &sm_cm, "new", NULL), KCTL_OK);
    KT_CHECK(e.wakes > w0);
    sm_settle(&e);
    KT_EQ_INT(e.reconciles, 3);
    sm_close(&e);
}

/* A transport without watch_notify (the wake-up cannot come): an idle
   watch is polled every KCTL_REFLECTOR_POLL_NS. */
static void sm_poll_without_hook(void) {
    sm_env e;
    kctl_transport_vtable vt;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    uint64_t dl = 0, t0;
    if (!sm_open(&e, 1, 0, NULL)) return;
    vt = *kctl_memstore_transport(e.ms).vt;
    vt.watch_notify = NULL;
    memset(&d, 0, sizeof d);
    d.transport.vt = &vt;
    d.transport.self = e.ms;
    d.resource = sm_cm;
    d.clock = kctl_vclock_clock(&e.vc);
    d.wake.fn = sm_wake;
    d.wake.user_data = &e;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    t0 = sm_now(&e);
    KT_EQ_INT(kctl_informer_step(inf, 0, &dl), KCTL_OK);
    KT_CHECK(kctl_informer_has_synced(inf));
    KT_EQ_U64(dl, t0 + KCTL_REFLECTOR_POLL_NS);
    kctl_informer_destroy(inf);
    /* the same transport with the hook: no poll */
    d.transport = kctl_memstore_transport(e.ms);
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    KT_EQ_INT(kctl_informer_step(inf, 0, &dl), KCTL_OK);
    KT_EQ_U64(dl, t0 + KCTL_SEC(300));
    kctl_informer_destroy(inf);
    sm_close(&e);
}

/* A controller alone: kctl_controller_poll steps its informers and
   reconciles, with the same deadlines. */
static void sm_controller_poll(void) {
    sm_env e;
    kctl_memstore_desc sd;
    kctl_informer_desc d;
    kctl_controller_desc cd;
    uint64_t dl = 0, t0;
    int i, w0;
    memset(&e, 0, sizeof e);
    kctl_vclock_init(&e.vc, KCTL_SEC(1000));
    memset(&sd, 0, sizeof sd);
    sd.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_memstore_create(&sd, &e.ms), KCTL_OK);
    kctl_memstore_apply(e.ms, &sm_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(e.ms);
    d.resource = sm_cm;
    d.clock = kctl_vclock_clock(&e.vc);
    d.resync_ns = KCTL_SEC(45);
    d.wake.fn = sm_wake;
    d.wake.user_data = &e;
    KT_EQ_INT(kctl_informer_create(&d, &e.inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = e.inf;
    cd.reconcile = sm_reconcile;
    cd.user_data = &e;
    cd.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_controller_create(&cd, &e.c), KCTL_OK);
    t0 = sm_now(&e);
    e.requeue_after_ns = KCTL_SEC(10);
    for (i = 0; i < 5 && (i == 0 || dl <= sm_now(&e)); i++) KT_EQ_INT(kctl_controller_poll(e.c, 8, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles, 1);
    KT_EQ_U64(dl, t0 + KCTL_SEC(10)); /* the requeue, before the resync at 45 s */
    e.requeue_after_ns = 0;
    kctl_vclock_advance(&e.vc, KCTL_SEC(10));
    KT_EQ_INT(kctl_controller_poll(e.c, 8, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles, 2);
    KT_EQ_U64(dl, t0 + KCTL_SEC(45)); /* now the resync */
    w0 = e.wakes;
    kctl_memstore_apply(e.ms, &sm_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, NULL);
    KT_CHECK(e.wakes > w0);
    KT_EQ_INT(kctl_controller_poll(e.c, 8, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles, 3);
    kctl_controller_stop(e.c);
    KT_EQ_INT(kctl_controller_poll(e.c, 8, &dl), KCTL_ERR_SHUTDOWN);
    KT_EQ_U64(dl, UINT64_MAX);
    KT_EQ_INT(kctl_controller_poll(NULL, 8, &dl), KCTL_ERR_INVALID_ARG);
    kctl_informer_destroy(e.inf);
    kctl_controller_destroy(e.c);
    kctl_memstore_destroy(e.ms);
    kctl_vclock_deinit(&e.vc);
}

/* The controller's allocator, counting the live blocks of 128 KiB or more
   (a 16-byte header holds each block's size): a queue table of 20,000
   keys is one. Polled from one thread. */
#define SM_BIG ((size_t)128 << 10)
static void *sm_big_alloc(size_t size, void *user_data) {
    size_t *p = (size_t *)malloc(size + 16);
    if (!p) return NULL;
    p[0] = size;
    if (size >= SM_BIG) ++*(long *)user_data;
    return (char *)p + 16;
}
static void sm_big_free(void *ptr, void *user_data) {
    size_t *p;
    if (!ptr) return;
    p = (size_t *)(void *)((char *)ptr - 16);
    if (p[0] >= SM_BIG) --*(long *)user_data;
    free(p);
}

/* A poll loop gives a burst's grown queue table back, as a parked worker
   does: the deadline it returns once the burst is reconciled is when the
   table may shrink (a second after it grew), not the next watch check
   minutes later, and the poll then gives it back. */
static void sm_poll_gives_table_back(void) {
    sm_env e;
    kctl_memstore_desc sd;
    kctl_informer_desc d;
    kctl_controller_desc cd;
    uint64_t dl = 0, t0;
    long big = 0;
    int i;
    memset(&e, 0, sizeof e);
    kctl_vclock_init(&e.vc, KCTL_SEC(1000));
    memset(&sd, 0, sizeof sd);
    sd.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_memstore_create(&sd, &e.ms), KCTL_OK);
    for (i = 0; i < 20000; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%05d\"}}", i);
        if (kctl_memstore_apply(e.ms, &sm_cm, doc, KCTL_NTS, NULL, NULL) != KCTL_OK) break;
    }
    KT_EQ_INT(i, 20000);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(e.ms);
    d.resource = sm_cm;
    d.clock = kctl_vclock_clock(&e.vc);
    d.wake.fn = sm_wake; /* (without, the informer polls every second) */
    d.wake.user_data = &e;
    KT_EQ_INT(kctl_informer_create(&d, &e.inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = e.inf;
    cd.reconcile = sm_reconcile;
    cd.user_data = &e;
    cd.clock = kctl_vclock_clock(&e.vc);
    cd.allocator.alloc_fn = sm_big_alloc;
    cd.allocator.free_fn = sm_big_free;
    cd.allocator.user_data = &big;
    KT_EQ_INT(kctl_controller_create(&cd, &e.c), KCTL_OK);
    t0 = sm_now(&e);
    for (i = 0; i < 1000 && (i == 0 || dl <= sm_now(&e)); i++) KT_EQ_INT(kctl_controller_poll(e.c, 1000, &dl), KCTL_OK);
    KT_EQ_INT(e.reconciles, 20000);
    KT_EQ_INT(big, 1); /* the queue's table, grown by the burst */
    KT_EQ_U64(dl, t0 + KCTL_SEC(1)); /* when it may shrink */
    KT_EQ_INT(kctl_controller_poll(e.c, 1000, &dl), KCTL_OK);
    KT_EQ_INT(big, 1); /* not before */
    KT_EQ_U64(dl, t0 + KCTL_SEC(1));
    kctl_vclock_advance(&e.vc, dl - sm_now(&e)); /* sleep until then */
    KT_EQ_INT(kctl_controller_poll(e.c, 1000, &dl), KCTL_OK);
    KT_EQ_INT(big, 0);
    KT_CHECK(dl > t0 + KCTL_SEC(60)); /* the watch's check, not another trim */
    KT_EQ_INT(e.reconciles, 20000);
    kctl_informer_destroy(e.inf);
    kctl_controller_destroy(e.c);
    KT_EQ_INT(big, 0);
    kctl_memstore_destroy(e.ms);
    kctl_vclock_deinit(&e.vc);
}

/* Step and start do not mix; a stopped manager steps no more. */
static void sm_step_rules(void) {
    sm_env e;
    uint64_t dl = 0;
    KT_EQ_INT(kctl_manager_step(NULL, 1, &dl), KCTL_ERR_INVALID_ARG);
    KT_EQ_U64(dl, UINT64_MAX);
    if (!sm_open(&e, 1, 0, NULL)) return;
#ifndef KCTL_NO_THREADS
    {
        sm_env f;
        if (sm_open(&f, 1, 0, NULL)) {
            KT_EQ_INT(kctl_manager_start(f.m, KCTL_SEC(10)), KCTL_OK);
            KT_EQ_INT(kctl_manager_step(f.m, 1, &dl), KCTL_ERR_EXISTS);
            kctl_manager_stop(f.m);
        }
        sm_close(&f);
    }
#endif
    KT_EQ_INT(kctl_manager_step(e.m, 1, &dl), KCTL_OK);
    KT_EQ_INT(kctl_manager_start(e.m, KCTL_SEC(10)), KCTL_ERR_EXISTS);
    KT_EQ_INT(kctl_manager_stop(e.m), KCTL_OK);
    KT_EQ_INT(kctl_manager_step(e.m, 1, &dl), KCTL_ERR_SHUTDOWN);
    sm_close(&e);
}

/* Another process takes the Lease over (its holder's renewals fail past
   the renew deadline): the step stops the controllers and says SHUTDOWN,
   then and every time after. */
static void sm_lost_lease(void) {
    sm_env e;
    uint64_t dl = 0;
    int i, rc = KCTL_OK;
    kctl_manager_leader_info li;
    if (!sm_open(&e, 1, 0, "step-lease")) return;
    dl = sm_settle(&e);
    KT_CHECK(kctl_manager_is_leader(e.m));
    kctl_memstore_fail_next(e.ms, KCTL_VERB_UPDATE, UINT32_MAX, KCTL_ERR_IO);
    kctl_memstore_fail_next(e.ms, KCTL_VERB_GET, UINT32_MAX, KCTL_ERR_IO);
    for (i = 0; i < 100 && rc == KCTL_OK; i++) {
        if (dl > sm_now(&e)) kctl_vclock_advance(&e.vc, dl - sm_now(&e));
        rc = kctl_manager_step(e.m, 64, &dl);
    }
    KT_EQ_INT(rc, KCTL_ERR_SHUTDOWN);
    kctl_manager_read_leader(e.m, &li);
    KT_CHECK(li.lost && !li.leading);
    KT_EQ_INT(kctl_manager_step(e.m, 64, &dl), KCTL_ERR_SHUTDOWN);
    KT_EQ_U64(dl, UINT64_MAX);
    KT_CHECK(kctl_queue_shutting_down(kctl_controller_queue(e.c)));
    kctl_memstore_fail_next(e.ms, KCTL_VERB_UPDATE, 0, KCTL_ERR_IO);
    kctl_memstore_fail_next(e.ms, KCTL_VERB_GET, 0, KCTL_ERR_IO);
    sm_close(&e);
}

#ifndef KCTL_NO_THREADS
/* The application's wait: a condition variable the wake-up signals, as a
   firmware loop would post a semaphore; a write on another thread wakes
   the main loop out of a wait for a deadline 5 minutes away. */
typedef struct sm_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int posted;
    kctl_memstore *ms;
} sm_waiter;
static void sm_post(void *ud) {
    sm_waiter *w = (sm_waiter *)ud;
    pthread_mutex_lock(&w->mu);
    w->posted++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}
static void *sm_writer(void *arg) {
    sm_waiter *w = (sm_waiter *)arg;
    kctl_memstore_apply(w->ms, &sm_cm, "{\"metadata\":{\"name\":\"late\"}}", KCTL_NTS, NULL, NULL);
    return NULL;
}
static kctl_reconcile_result sm_rec_plain(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    (void)ctx;
    memset(&r, 0, sizeof r);
    return r;
}
#endif

static void sm_wake_other_thread(void) {
#ifndef KCTL_NO_THREADS
    sm_waiter w;
    kctl_manager_desc md;
    kctl_manager *m = NULL;
    kctl_controller_desc cd;
    kctl_informer *inf = NULL;
    pthread_t t;
    uint64_t dl = 0;
    int i;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    KT_EQ_INT(kctl_memstore_create(NULL, &w.ms), KCTL_OK);
    memset(&md, 0, sizeof md);
    md.transport = kctl_memstore_transport(w.ms);
    md.wake.fn = sm_post;
    md.wake.user_data = &w;
    KT_EQ_INT(kctl_manager_create(&md, &m), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &sm_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = sm_rec_plain;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    for (i = 0; i < 10; i++) KT_EQ_INT(kctl_manager_step(m, 64, &dl), KCTL_OK);
    KT_CHECK(kctl_informer_has_synced(inf));
    KT_CHECK(dl > kctl_clock_now(NULL) + KCTL_SEC(60)); /* idle: the stall check, minutes away */
    pthread_mutex_lock(&w.mu);
    w.posted = 0;
    pthread_mutex_unlock(&w.mu);
    KT_EQ_INT(pthread_create(&t, NULL, sm_writer, &w), 0);
    pthread_mutex_lock(&w.mu);
    {
        struct timespec until; /* wait_until(dl), woken early; a hang guard of 60 s real time */
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 60;
        while (!w.posted && pthread_cond_timedwait(&w.cv, &w.mu, &until) == 0) { }
    }
    KT_CHECK(w.posted > 0);
    pthread_mutex_unlock(&w.mu);
    pthread_join(t, NULL);
    KT_EQ_INT(kctl_manager_step(m, 64, &dl), KCTL_OK);
    {
        kctl_obj *o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/late");
        KT_CHECK(o != NULL);
        kctl_obj_unref(o);
    }
    kctl_manager_destroy(m);
    kctl_memstore_destroy(w.ms);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
#else
    KT_SKIP();
#endif
}

void kt_suite_step(void) {
    KT_RUN(sm_idle_resync);
    KT_RUN(sm_idle_stall);
    KT_RUN(sm_idle_add_after);
    KT_RUN(sm_idle_lease);
    KT_RUN(sm_idle_backoff);
    KT_RUN(sm_budget);
    KT_RUN(sm_wake_on_write);
    KT_RUN(sm_poll_without_hook);
    KT_RUN(sm_controller_poll);
    KT_RUN(sm_poll_gives_table_back);
    KT_RUN(sm_step_rules);
    KT_RUN(sm_lost_lease);
    KT_RUN(sm_wake_other_thread);
}
