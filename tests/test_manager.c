/* test_manager.c - shared informers, start and stop, signals, metrics. */
#include "kt.h"
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#endif

static const kctl_resource tg_cm = { "", "v1", "configmaps", "prod" };

#ifndef KCTL_NO_THREADS
/* A memstore holding prod/a and prod/b, and a manager with the defaults over it. */
static kctl_manager *tg_plain_manager(kctl_memstore **ms) {
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    *ms = NULL;
    KT_EQ_INT(kctl_memstore_create(NULL, ms), KCTL_OK);
    kctl_memstore_apply(*ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    kctl_memstore_apply(*ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", 25, NULL, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(*ms);
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    return m;
}
#endif

#ifndef KCTL_NO_THREADS
static int tg_calls; /* atomic */
static kctl_reconcile_result tg_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    (void)ctx;
    memset(&r, 0, sizeof r);
    __atomic_add_fetch(&tg_calls, 1, __ATOMIC_SEQ_CST);
    return r;
}
#endif

static void tg_shared_informers(void) {
    kctl_memstore *ms = NULL;
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    kctl_informer *a = NULL, *b = NULL, *c = NULL;
    kctl_resource other = tg_cm;
    other.ns = "dev";
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &a), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &b), KCTL_OK);
    KT_CHECK(a == b && a != NULL); /* one watch, one cache */
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, "app=web", NULL, &c), KCTL_OK);
    KT_CHECK(c != a);
    KT_EQ_INT(kctl_manager_informer(m, &other, NULL, NULL, &c), KCTL_OK);
    KT_CHECK(c != a);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, "app=", "spec.x=1", &c), KCTL_ERR_INVALID_ARG);
    {
        kctl_manager *none = NULL;
        d.transport.vt = NULL;
        KT_EQ_INT(kctl_manager_create(&d, &none), KCTL_ERR_INVALID_ARG);
        KT_CHECK(none == NULL);
    }
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
}

#ifndef KCTL_NO_THREADS
static void *tg_signal_later(void *arg) {
    kctl_informer *inf = (kctl_informer *)arg;
    long i;
    kctl_informer_wait_for_sync(inf, KCTL_SEC(20));
    for (i = 0; i < 20000000 && __atomic_load_n(&tg_calls, __ATOMIC_SEQ_CST) < 2; i++) sched_yield();
    kill(getpid(), SIGTERM); /* blocked everywhere but in run's sigwait */
    return NULL;
}
#endif

static void tg_start_stop_metrics(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    char text[16384], small[8];
    size_t len = 0;
    long i;
    m = tg_plain_manager(&ms);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.name = "configs";
    cd.primary = inf;
    cd.reconcile = tg_reconcile;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    __atomic_store_n(&tg_calls, 0, __ATOMIC_SEQ_CST);
    KT_EQ_INT(kctl_manager_start(m, KCTL_SEC(20)), KCTL_OK);
    for (i = 0; i < 20000000 && __atomic_load_n(&tg_calls, __ATOMIC_SEQ_CST) < 2; i++) sched_yield();
    kctl_manager_stop(m);
    KT_EQ_INT(tg_calls, 2);
    KT_EQ_INT(kctl_manager_metrics(m, text, sizeof text, &len), KCTL_OK);
    KT_CHECK(len == strlen(text));
    KT_CHECK(strstr(text, "controller_runtime_reconcile_total{controller=\"configs\",result=\"success\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "workqueue_adds_total{name=\"configs\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "workqueue_work_duration_seconds_count{name=\"configs\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "kctl_reflector_lists_total{resource=\"/configmaps/prod\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_count{controller=\"configs\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"+Inf\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "kctl_store_requests_total{verb=\"list\",code=\"OK\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "kctl_store_requests_total{verb=\"watch\",code=\"OK\"} ") != NULL);
    KT_CHECK(strstr(text, "verb=\"get\"") == NULL); /* reads came from the cache */
    KT_EQ_INT(kctl_manager_metrics(m, small, sizeof small, &len), KCTL_ERR_TOO_LARGE);
    KT_CHECK(len > sizeof small);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* run: start, wait for SIGTERM, stop. */
static void tg_run_until_signal(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    pthread_t t;
    sigset_t set, old;
    m = tg_plain_manager(&ms);
    kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tg_reconcile;
    kctl_manager_add_controller(m, &cd, NULL);
    __atomic_store_n(&tg_calls, 0, __ATOMIC_SEQ_CST);
    /* the helper thread must not take the signal: block it before creating it */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    pthread_create(&t, NULL, tg_signal_later, inf);
    KT_EQ_INT(kctl_manager_run_until_signal(m), KCTL_OK);
    pthread_join(t, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    KT_EQ_INT(tg_calls, 2);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* Two replicas on one store: only the lease holder runs its controllers;
   when it stops (without releasing), the other takes over once the lease
   has gone unrenewed for lease_ns. Real time, short durations; every wait
   is bounded and no assertion depends on how long anything took. */
#ifndef KCTL_NO_THREADS
static int tg_le_calls[2]; /* atomic */
static void tg_nap(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}
static kctl_reconcile_result tg_le_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    __atomic_add_fetch((int *)ctx->user_data, 1, __ATOMIC_SEQ_CST);
    return r;
}
#endif

static void tg_leader_election(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_manager *m[2] = { NULL, NULL };
    const char *ids[2] = { "replica-a", "replica-b" };
    int i, lead = -1, other;
    long spin;
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", 25, NULL, NULL);
    for (i = 0; i < 2; i++) {
        kctl_manager_desc d;
        kctl_controller_desc cd;
        kctl_informer *inf = NULL;
        memset(&d, 0, sizeof d);
        d.transport = kctl_memstore_transport(ms);
        d.lease_name = "configs-controller";
        d.identity = ids[i];
        d.lease_ns = KCTL_MS(300);
        d.renew_deadline_ns = KCTL_MS(200);
        d.retry_ns = KCTL_MS(20);
        KT_EQ_INT(kctl_manager_create(&d, &m[i]), KCTL_OK);
        KT_EQ_INT(kctl_manager_informer(m[i], &tg_cm, NULL, NULL, &inf), KCTL_OK);
        memset(&cd, 0, sizeof cd);
        cd.primary = inf;
        cd.reconcile = tg_le_reconcile;
        cd.user_data = &tg_le_calls[i];
        KT_EQ_INT(kctl_manager_add_controller(m[i], &cd, NULL), KCTL_OK);
        tg_le_calls[i] = 0;
    }
    KT_EQ_INT(kctl_manager_start(m[0], KCTL_SEC(20)), KCTL_OK);
    KT_EQ_INT(kctl_manager_start(m[1], KCTL_SEC(20)), KCTL_OK);
    for (spin = 0; spin < 4000 && lead < 0; spin++) { /* at most ~40 s */
        for (i = 0; i < 2; i++)
            if (__atomic_load_n(&tg_le_calls[i], __ATOMIC_SEQ_CST) == 2) lead = i;
        if (lead < 0) tg_nap(10);
    }
    KT_CHECK(lead >= 0);
    if (lead < 0) lead = 0;
    other = 1 - lead;
    KT_CHECK(kctl_manager_is_leader(m[lead]));
    /* a few renewals later the follower still has not reconciled anything */
    tg_nap(100);
    KT_CHECK(!kctl_manager_is_leader(m[other]));
    KT_EQ_INT(__atomic_load_n(&tg_le_calls[other], __ATOMIC_SEQ_CST), 0);
    KT_CHECK(!kctl_manager_lost_lease(m[lead]));
    kctl_manager_stop(m[lead]); /* dies without releasing the lease */
    KT_CHECK(!kctl_manager_is_leader(m[lead]));
    for (spin = 0; spin < 4000 && __atomic_load_n(&tg_le_calls[other], __ATOMIC_SEQ_CST) < 2; spin++) tg_nap(10);
    KT_EQ_INT(__atomic_load_n(&tg_le_calls[other], __ATOMIC_SEQ_CST), 2);
    KT_CHECK(kctl_manager_is_leader(m[other]));
    KT_EQ_INT(tg_le_calls[lead], 2);
    { /* the lease's requests are counted: the first candidate found none and made it */
        char text[16384];
        size_t len = 0;
        int nf = 0, made = 0;
        for (i = 0; i < 2; i++) {
            KT_EQ_INT(kctl_manager_metrics(m[i], text, sizeof text, &len), KCTL_OK);
            nf += strstr(text, "kctl_store_requests_total{verb=\"get\",code=\"NOT_FOUND\"} ") != NULL;
            made += strstr(text, "kctl_store_requests_total{verb=\"create\",code=\"OK\"} 1\n") != NULL;
        }
        KT_CHECK(nf >= 1);
        KT_EQ_INT(made, 1);
    }
    kctl_manager_destroy(m[0]);
    kctl_manager_destroy(m[1]);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

#ifndef KCTL_NO_THREADS
/* A reconcile that holds key "a" until the test opens the gate. */
typedef struct tg_gate {
    int entered, open, finished, others; /* atomics */
} tg_gate;
static kctl_reconcile_result tg_gate_reconcile(const kctl_reconcile_ctx *ctx) {
    tg_gate *g = (tg_gate *)ctx->user_data;
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    if (strcmp(ctx->key, "prod/a") != 0) {
        __atomic_add_fetch(&g->others, 1, __ATOMIC_SEQ_CST);
        return r;
    }
    __atomic_store_n(&g->entered, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&g->open, __ATOMIC_SEQ_CST)) tg_nap(1);
    if (kctl_indexer_len(ctx->cache) != 1) abort(); /* the cache is still there */
    __atomic_store_n(&g->finished, 1, __ATOMIC_SEQ_CST);
    return r;
}
static void *tg_open_later(void *arg) {
    tg_gate *g = (tg_gate *)arg;
    tg_nap(20);
    __atomic_store_n(&g->open, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
static void *tg_open_much_later(void *arg) { /* past destroy's own grace period */
    tg_gate *g = (tg_gate *)arg;
    tg_nap(150);
    __atomic_store_n(&g->open, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* A manager whose one controller (one worker) is inside the reconcile of
   "a", with "b" and "c" queued behind it. */
static kctl_manager *tg_busy_manager(kctl_memstore **ms, tg_gate *g, uint64_t grace_ns, kctl_controller **ctl) {
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    long spin;
    memset(g, 0, sizeof *g);
    *ms = NULL;
    KT_EQ_INT(kctl_memstore_create(NULL, ms), KCTL_OK);
    kctl_memstore_apply(*ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(*ms);
    d.graceful_timeout_ns = grace_ns;
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.name = "gated";
    cd.primary = inf;
    cd.reconcile = tg_gate_reconcile;
    cd.user_data = g;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, ctl), KCTL_OK);
    KT_EQ_INT(kctl_manager_start(m, KCTL_SEC(20)), KCTL_OK);
    for (spin = 0; spin < 20000 && !__atomic_load_n(&g->entered, __ATOMIC_SEQ_CST); spin++) tg_nap(1);
    KT_CHECK(g->entered);
    KT_EQ_INT(kctl_queue_add(kctl_controller_queue(*ctl), "prod/b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(kctl_controller_queue(*ctl), "prod/c"), KCTL_OK);
    return m;
}
#endif

/* Graceful stop: the reconcile in flight finishes before stop returns;
   the keys queued behind it are not begun; a stopped controller does not
   start again. */
static void tg_graceful_stop(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms;
    kctl_controller *ctl = NULL;
    tg_gate g;
    pthread_t t;
    kctl_manager *m = tg_busy_manager(&ms, &g, 0, &ctl); /* the default grace: 30 s */
    pthread_create(&t, NULL, tg_open_later, &g);
    KT_EQ_INT(kctl_manager_stop(m), KCTL_OK);
    KT_EQ_INT(__atomic_load_n(&g.finished, __ATOMIC_SEQ_CST), 1); /* it finished inside stop */
    KT_EQ_INT(g.others, 0);                                        /* b and c were dropped */
    KT_EQ_INT(kctl_queue_add(kctl_controller_queue(ctl), "prod/d"), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_controller_start(ctl, KCTL_SEC(1)), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_manager_stop(m), KCTL_OK); /* again: nothing to do */
    pthread_join(t, NULL);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* A reconcile that outlives the grace period: stop says TIMEOUT and
   returns; the reconcile runs on to its end and destroy waits for it. */
static void tg_graceful_stop_timeout(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms;
    kctl_controller *ctl = NULL;
    tg_gate g;
    char text[16384];
    pthread_t t;
    kctl_manager *m = tg_busy_manager(&ms, &g, KCTL_MS(30), &ctl);
    KT_EQ_INT(kctl_manager_stop(m), KCTL_ERR_TIMEOUT); /* the gate opens only after it returned */
    KT_EQ_INT(__atomic_load_n(&g.finished, __ATOMIC_SEQ_CST), 0);
    KT_EQ_INT(kctl_controller_stop_timeout(ctl, 0), KCTL_ERR_TIMEOUT);
    KT_EQ_INT(kctl_manager_metrics(m, text, sizeof text, NULL), KCTL_OK); /* still answers */
    pthread_create(&t, NULL, tg_open_much_later, &g); /* opens it while destroy waits */
    kctl_manager_destroy(m); /* waits for the reconcile (which reads its cache) and joins its worker */
    pthread_join(t, NULL);
    KT_EQ_INT(g.finished, 1);
    KT_EQ_INT(g.others, 0);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

#ifndef KCTL_NO_THREADS
/* Wait (real time, bounded) until the manager's leader thread has caught
   up with the virtual clock: it tried at least once and its next try is
   in the future, and if it led and leads no more, it has stopped its
   controllers (lost). */
static int tg_settle(kctl_manager *m, kctl_vclock *vc) {
    kctl_manager_leader_info li;
    long spin;
    kctl_clock c = kctl_vclock_clock(vc);
    for (spin = 0; spin < 20000; spin++) { /* at most ~20 s */
        kctl_manager_read_leader(m, &li);
        if ((li.steps && li.next_ns > kctl_clock_now(&c) && (li.leading || !li.terms)) || li.lost) return 1;
        if (spin < 100) sched_yield();
        else tg_nap(1);
    }
    return 0;
}
static kctl_manager *tg_le_manager(kctl_memstore *ms, kctl_vclock *vc, const char *id, int *calls) {
    kctl_manager_desc d;
    kctl_controller_desc cd;
    kctl_informer *inf = NULL;
    kctl_manager *m = NULL;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.clock = kctl_vclock_clock(vc);
    d.lease_name = "configs-controller";
    d.identity = id; /* lease 15 s, renew deadline 10 s, retry 2 s: the defaults */
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tg_le_reconcile;
    cd.user_data = calls;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    return m;
}
static void tg_wait_calls(int *calls, int n) {
    long spin;
    for (spin = 0; spin < 20000 && __atomic_load_n(calls, __ATOMIC_SEQ_CST) < n; spin++) tg_nap(1);
}
#endif

/* Two managers on one memstore and the virtual clock, with the default
   15 s / 10 s / 2 s: one leads and runs its controller, the other waits;
   kill the leader; the other takes over 15-21.4 s later (the lease must go
   unrenewed for 15 s as it observes it, trying every 2 s jittered up to
   4.4 s, seen on 1 s ticks); never two leaders at once, checked after
   every tick. */
static void tg_leader_election_vclock(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    kctl_clock c;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_manager *m[2];
    int calls[2] = { 0, 0 }, i, lead, other, both = 0, tick;
    uint64_t died, took = 0;
    char text[16384];
    kctl_vclock_init(&vc, KCTL_SEC(1000));
    c = kctl_vclock_clock(&vc);
    memset(&md, 0, sizeof md);
    md.clock = c;
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", 25, NULL, NULL);
    m[0] = tg_le_manager(ms, &vc, "replica-a", &calls[0]);
    m[1] = tg_le_manager(ms, &vc, "replica-b", &calls[1]);
    KT_EQ_INT(kctl_manager_start(m[0], KCTL_SEC(20)), KCTL_OK);
    KT_CHECK(tg_settle(m[0], &vc));
    KT_EQ_INT(kctl_manager_start(m[1], KCTL_SEC(20)), KCTL_OK);
    KT_CHECK(tg_settle(m[1], &vc));
    lead = kctl_manager_is_leader(m[0]) ? 0 : 1;
    other = 1 - lead;
    KT_EQ_INT(lead, 0); /* the first to try made the lease */
    KT_CHECK(!kctl_manager_is_leader(m[other]));
    tg_wait_calls(&calls[lead], 2);
    KT_EQ_INT(__atomic_load_n(&calls[lead], __ATOMIC_SEQ_CST), 2);
    /* a minute of both alive */
    for (tick = 0; tick < 30; tick++) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        for (i = 0; i < 2; i++) KT_CHECK(tg_settle(m[i], &vc));
        if (kctl_manager_is_leader(m[0]) && kctl_manager_is_leader(m[1])) both++;
        KT_CHECK(kctl_manager_is_leader(m[lead]));
    }
    KT_EQ_INT(__atomic_load_n(&calls[other], __ATOMIC_SEQ_CST), 0);
    KT_CHECK(kctl_manager_metrics(m[lead], text, sizeof text, NULL) == KCTL_OK &&
             strstr(text, "leader_election_master_status{name=\"configs-controller\"} 1\n") != NULL);
    KT_CHECK(kctl_manager_metrics(m[other], text, sizeof text, NULL) == KCTL_OK &&
             strstr(text, "leader_election_master_status{name=\"configs-controller\"} 0\n") != NULL);
    /* the leader dies (stop does not release the lease) */
    died = kctl_clock_now(&c);
    KT_EQ_INT(kctl_manager_stop(m[lead]), KCTL_OK);
    KT_CHECK(!kctl_manager_is_leader(m[lead]));
    for (tick = 0; tick < 40 && !took; tick++) {
        kctl_vclock_advance(&vc, KCTL_SEC(1));
        KT_CHECK(tg_settle(m[other], &vc));
        if (kctl_manager_is_leader(m[other])) took = kctl_clock_now(&c);
        if (kctl_manager_is_leader(m[0]) && kctl_manager_is_leader(m[1])) both++;
    }
    KT_CHECK(took != 0);
    KT_CHECK(took - died >= KCTL_SEC(15));
    KT_CHECK(took - died <= KCTL_SEC(15) + KCTL_MS(4400) + KCTL_SEC(2));
    tg_wait_calls(&calls[other], 2);
    KT_EQ_INT(__atomic_load_n(&calls[other], __ATOMIC_SEQ_CST), 2);
    KT_EQ_INT(both, 0);
    {
        kctl_manager_leader_info li;
        kctl_manager_read_leader(m[other], &li);
        KT_CHECK(li.leading && !li.lost);
        KT_EQ_INT(li.terms, 1);
    }
    kctl_manager_destroy(m[0]);
    kctl_manager_destroy(m[1]);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
#else
    KT_SKIP();
#endif
}

/* A leader that cannot reach the store loses the lease after the renew
   deadline (10 s): its controller stops for good, run would return SHUTDOWN. */
static void tg_lost_lease_vclock(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    kctl_clock c;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_manager *m;
    kctl_manager_leader_info li;
    int calls = 0, tick;
    uint64_t cut, lost = 0;
    kctl_vclock_init(&vc, KCTL_SEC(1000));
    c = kctl_vclock_clock(&vc);
    memset(&md, 0, sizeof md);
    md.clock = c;
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    m = tg_le_manager(ms, &vc, "replica-a", &calls);
    KT_EQ_INT(kctl_manager_start(m, KCTL_SEC(20)), KCTL_OK);
    KT_CHECK(tg_settle(m, &vc));
    KT_CHECK(kctl_manager_is_leader(m));
    tg_wait_calls(&calls, 1);
    KT_EQ_INT(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 1);
    cut = kctl_clock_now(&c); /* it renewed (made the lease) now; from here on every read fails */
    kctl_memstore_fail_next(ms, KCTL_VERB_GET, 100000, KCTL_ERR_IO);
    kctl_memstore_fail_next(ms, KCTL_VERB_UPDATE, 100000, KCTL_ERR_IO); /* the leader's fast path: an update, no read */
    for (tick = 0; tick < 20 && !lost; tick++) {
        kctl_vclock_advance(&vc, KCTL_SEC(1));
        KT_CHECK(tg_settle(m, &vc));
        kctl_manager_read_leader(m, &li);
        if (li.lost) lost = kctl_clock_now(&c);
    }
    KT_CHECK(lost - cut >= KCTL_SEC(10));
    KT_CHECK(lost - cut <= KCTL_SEC(12));
    kctl_manager_read_leader(m, &li);
    KT_CHECK(li.lost && !li.leading);
    KT_CHECK(kctl_manager_lost_lease(m));
    kctl_memstore_fail_next(ms, KCTL_VERB_GET, 0, KCTL_ERR_IO); /* reads and writes work again */
    kctl_memstore_fail_next(ms, KCTL_VERB_UPDATE, 0, KCTL_ERR_IO);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", 25, NULL, NULL); /* no controller takes it */
    tg_nap(50);
    KT_EQ_INT(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 1);
    KT_EQ_INT(kctl_manager_stop(m), KCTL_OK);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
#else
    KT_SKIP();
#endif
}

static kctl_reconcile_result tg_reconcile_any(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    (void)ctx;
    memset(&r, 0, sizeof r);
    return r;
}

/* A controller stopped before it ever started does not start later. */
static void tg_stop_before_start(void) {
    kctl_memstore *ms = NULL;
    kctl_informer_desc id;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    memset(&id, 0, sizeof id);
    id.transport = kctl_memstore_transport(ms);
    id.resource = tg_cm;
    KT_EQ_INT(kctl_informer_create(&id, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tg_reconcile_any;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    kctl_controller_stop(c);
#ifndef KCTL_NO_THREADS
    KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(1)), KCTL_ERR_SHUTDOWN);
#endif
    KT_EQ_INT(kctl_queue_add(kctl_controller_queue(c), "prod/a"), KCTL_ERR_SHUTDOWN);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
}

#ifndef KCTL_NO_THREADS
typedef struct tg_ticker {
    kctl_vclock *vc;
    int stop; /* atomic */
} tg_ticker;
static void *tg_tick(void *arg) {
    tg_ticker *t = (tg_ticker *)arg;
    while (!__atomic_load_n(&t->stop, __ATOMIC_SEQ_CST)) kctl_vclock_advance(t->vc, 1);
    return NULL;
}
#endif

/* Controllers added to a running manager with leader election while
   another thread moves its virtual clock: the clock's wake-up and the
   manager's own lock never wait on each other. */
static void tg_add_while_clock_moves(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_manager *m;
    kctl_informer *inf = NULL;
    tg_ticker tk;
    pthread_t t;
    int calls = 0, i;
    kctl_vclock_init(&vc, KCTL_SEC(1000));
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    m = tg_le_manager(ms, &vc, "replica-a", &calls);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    KT_EQ_INT(kctl_manager_start(m, KCTL_SEC(20)), KCTL_OK);
    tk.vc = &vc;
    tk.stop = 0;
    pthread_create(&t, NULL, tg_tick, &tk);
    for (i = 0; i < 10; i++) { /* an informer takes 16 handlers */
        kctl_controller_desc cd;
        memset(&cd, 0, sizeof cd);
        cd.primary = inf;
        cd.reconcile = tg_le_reconcile;
        cd.user_data = &calls;
        KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
        tg_nap(1);
    }
    __atomic_store_n(&tk.stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(t, NULL);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
#else
    KT_SKIP();
#endif
}

/* A controller added to a running manager starts at once and reconciles
   what its informer holds. */
static void tg_late_controller(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    int first = 0, late = 0;
    m = tg_plain_manager(&ms);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tg_le_reconcile;
    cd.user_data = &first;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    KT_EQ_INT(kctl_manager_start(m, KCTL_SEC(20)), KCTL_OK);
    tg_wait_calls(&first, 2);
    cd.user_data = &late;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK); /* its handler gets the cache's contents as adds */
    tg_wait_calls(&late, 2);
    KT_EQ_INT(__atomic_load_n(&late, __ATOMIC_SEQ_CST), 2);
    KT_EQ_INT(kctl_manager_stop(m), KCTL_OK);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* ---- metrics as Prometheus reads them */

/* One sample line: name, labels (raw, between the braces) and value. */
typedef struct tg_line {
    char name[160], labels[512], value[64];
} tg_line;
static int tg_split(const char *s, size_t n, tg_line *l) {
    size_t i = 0, k = 0;
    memset(l, 0, sizeof *l);
    while (i < n && s[i] != '{' && s[i] != ' ' && k + 1 < sizeof l->name) l->name[k++] = s[i++];
    if (i < n && s[i] == '{') {
        int q = 0;
        for (i++, k = 0; i < n && (q || s[i] != '}'); i++) {
            if (k + 1 >= sizeof l->labels) return 0;
            if (q && s[i] == '\\') { /* only \\, \" and \n may be escaped */
                if (i + 1 >= n || (s[i + 1] != '\\' && s[i + 1] != '"' && s[i + 1] != 'n')) return 0;
                l->labels[k++] = s[i++];
            } else if (s[i] == '"') {
                q = !q;
            } else if (q && s[i] == '\n') {
                return 0;
            }
            l->labels[k++] = s[i];
        }
        if (i >= n) return 0;
        i++;
    }
    if (i >= n || s[i] != ' ') return 0;
    for (i++, k = 0; i < n && k + 1 < sizeof l->value; i++) l->value[k++] = s[i];
    return l->name[0] && l->value[0];
}
/* Take the le="..." pair out of labels (into le); what remains names the series. */
static void tg_take_le(char *labels, char *le, size_t cap) {
    char *p = strstr(labels, "le=\"");
    char *end;
    le[0] = '\0';
    if (!p || (p != labels && p[-1] != ',')) return;
    end = strchr(p + 4, '"');
    if (!end || (size_t)(end - (p + 4)) >= cap) return;
    memcpy(le, p + 4, (size_t)(end - (p + 4)));
    le[end - (p + 4)] = '\0';
    if (end[1] == ',') end++;
    else if (p != labels) p--;
    memmove(p, end + 1, strlen(end + 1) + 1);
}
static int tg_suffix(const char *name, const char *fam, const char *suf) {
    size_t n = strlen(fam);
    return strncmp(name, fam, n) == 0 && strcmp(name + n, suf) == 0;
}

/* Check text against the exposition format: each family's # HELP then #
   TYPE once, right before its samples, all of them together; a sample
   belongs to the family open; a histogram series is its buckets in
   increasing le order, cumulative, ending at +Inf, then _sum, then _count
   equal to +Inf. Returns the problems found (each reported); *nfam and
   *nhist (may be NULL) get the families and histogram series seen. */
static int tg_exposition(const char *text, int *nfam, int *nhist) {
    char seen[64][160], fam[160] = "", type[32] = "", series[512] = "", le[64], prev_le[64] = "";
    int nseen = 0, bad = 0, histos = 0, state = 0; /* histogram series: 0 none, 1 buckets, 2 +Inf, 3 _sum */
    unsigned long long cum = 0, inf = 0;
    const char *s = text;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        tg_line l;
        int i;
        if (!e) { kt_fail(__FILE__, __LINE__, "no newline at the end"); bad++; break; }
        if (strncmp(s, "# HELP ", 7) == 0) {
            char name[160];
            if (state) { kt_fail(__FILE__, __LINE__, "histogram series %s unfinished", series); bad++; }
            state = 0;
            if (sscanf(s + 7, "%159s", name) != 1) name[0] = '\0';
            for (i = 0; i < nseen; i++)
                if (strcmp(seen[i], name) == 0) { kt_fail(__FILE__, __LINE__, "family %s twice", name); bad++; }
            if (nseen < 64) snprintf(seen[nseen++], sizeof seen[0], "%s", name);
            snprintf(fam, sizeof fam, "%s", name);
            type[0] = '\0';
            if (strncmp(e + 1, "# TYPE ", 7) != 0 || strncmp(e + 8, name, strlen(name)) != 0 || e[8 + strlen(name)] != ' ') {
                kt_fail(__FILE__, __LINE__, "# HELP %s is not followed by its # TYPE", name);
                bad++;
            } else {
                sscanf(e + 9 + strlen(name), "%31s", type);
                e = strchr(e + 1, '\n');
                if (!e) break;
            }
        } else if (s[0] == '#') {
            kt_fail(__FILE__, __LINE__, "a comment out of place: %.*s", (int)n, s);
            bad++;
        } else if (!tg_split(s, n, &l)) {
            kt_fail(__FILE__, __LINE__, "not a sample: %.*s", (int)n, s);
            bad++;
        } else if (strcmp(type, "histogram") != 0) {
            if (strcmp(l.name, fam) != 0) { kt_fail(__FILE__, __LINE__, "%s outside its family (%s open)", l.name, fam); bad++; }
        } else if (tg_suffix(l.name, fam, "_bucket")) {
            double v = 0, pv = 0;
            tg_take_le(l.labels, le, sizeof le);
            if (state == 0 || strcmp(l.labels, series) != 0) {
                if (state) { kt_fail(__FILE__, __LINE__, "histogram series %s unfinished", series); bad++; }
                snprintf(series, sizeof series, "%s", l.labels);
                state = 1;
                cum = 0;
                prev_le[0] = '\0';
                histos++;
            } else if (state != 1) {
                kt_fail(__FILE__, __LINE__, "a bucket after +Inf in %s", series);
                bad++;
            }
            if (!le[0]) { kt_fail(__FILE__, __LINE__, "a bucket without le in %s", series); bad++; }
            if (strcmp(le, "+Inf") == 0) {
                state = 2;
                inf = strtoull(l.value, NULL, 10);
            } else {
                v = strtod(le, NULL);
                if (prev_le[0]) pv = strtod(prev_le, NULL);
                if (prev_le[0] && !(v > pv)) { kt_fail(__FILE__, __LINE__, "le %s after %s in %s", le, prev_le, series); bad++; }
            }
            if (strtoull(l.value, NULL, 10) < cum) { kt_fail(__FILE__, __LINE__, "buckets not cumulative at le=%s in %s", le, series); bad++; }
            cum = strtoull(l.value, NULL, 10);
            snprintf(prev_le, sizeof prev_le, "%s", le);
        } else if (tg_suffix(l.name, fam, "_sum")) {
            if (state != 2 || strcmp(l.labels, series) != 0) { kt_fail(__FILE__, __LINE__, "_sum out of place in %s", series); bad++; }
            state = 3;
        } else if (tg_suffix(l.name, fam, "_count")) {
            if (state != 3 || strcmp(l.labels, series) != 0) { kt_fail(__FILE__, __LINE__, "_count out of place in %s", series); bad++; }
            if (strtoull(l.value, NULL, 10) != inf) { kt_fail(__FILE__, __LINE__, "+Inf %llu != _count %s in %s", inf, l.value, series); bad++; }
            state = 0;
        } else {
            kt_fail(__FILE__, __LINE__, "%s outside its family (%s open)", l.name, fam);
            bad++;
        }
        s = e + 1;
    }
    if (state) { kt_fail(__FILE__, __LINE__, "histogram series %s unfinished", series); bad++; }
    if (nfam) *nfam = nseen;
    if (nhist) *nhist = histos;
    return bad;
}

/* Feed text to `promtool check metrics`: its exit status (0: no
   complaint), its complaints in out; -1 when promtool is not installed. */
static int tg_promtool(const char *text, char *out, size_t cap) {
    char path[64], cmd[128];
    FILE *f, *p;
    size_t n = 0;
    int fd, st;
    out[0] = '\0';
    if (system("command -v promtool > /dev/null 2>&1") != 0) return -1;
    snprintf(path, sizeof path, "/tmp/kt-metrics-XXXXXX");
    if ((fd = mkstemp(path)) < 0 || !(f = fdopen(fd, "w"))) return 99;
    fputs(text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
    if (!(p = popen(cmd, "r"))) { remove(path); return 99; }
    while (n + 1 < cap && fgets(out + n, (int)(cap - n), p)) n += strlen(out + n);
    st = pclose(p);
    remove(path);
    return st == 0 ? 0 : st == -1 ? 99 : (st >> 8) ? (st >> 8) : 99;
}

/* A reconcile whose time on the virtual clock depends on the key:
   a 300 ms, b 7 s, c 0 s; c fails the first time (or terminally, for a
   controller whose user_data says so). */
typedef struct tg_timed {
    kctl_vclock *vc;
    int terminal;
    int c_failed;
} tg_timed;
static kctl_reconcile_result tg_timed_reconcile(const kctl_reconcile_ctx *ctx) {
    tg_timed *t = (tg_timed *)ctx->user_data;
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    if (strcmp(ctx->key, "prod/a") == 0) kctl_vclock_advance(t->vc, KCTL_MS(300));
    if (strcmp(ctx->key, "prod/b") == 0) kctl_vclock_advance(t->vc, KCTL_SEC(7));
    if (strcmp(ctx->key, "prod/c") == 0 && !t->c_failed) {
        t->c_failed = 1;
        r.error = KCTL_ERR_IO;
        r.terminal = t->terminal != 0;
    }
    return r;
}

/* A manager with leader election on, controllers on a shared informer and
   on one of their own, one unnamed, names that need escaping, histograms
   with observations: every family, as Prometheus reads it. Stepped by
   hand on the virtual clock (no threads needed). */
static void tg_metrics_exposition(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    kctl_informer *shared = NULL, *web = NULL;
    kctl_controller *c[4];
    kctl_controller_desc cd;
    tg_timed t[4];
    static char text[1 << 17];
    char out[4096];
    size_t len = 0;
    int i, round, nfam = 0, nhist = 0, pt;
    const char *names[4] = { "configs", "we\"ird\\name\nx", "web", NULL };
    kctl_vclock_init(&vc, KCTL_SEC(1000));
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\"}}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"c\"}}", KCTL_NTS, NULL, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.clock = kctl_vclock_clock(&vc);
    d.lease_name = "metrics \"lease\"";
    d.identity = "me";
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &shared), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, "app=web", NULL, &web), KCTL_OK);
    for (i = 0; i < 4; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].vc = &vc;
        t[i].terminal = i == 1;
        memset(&cd, 0, sizeof cd);
        cd.name = names[i];
        cd.primary = i == 2 ? web : shared;
        cd.workers = i == 2 ? 3 : 0;
        cd.priority.enabled = i == 2;
        cd.pending_after = i == 2 ? KCTL_PENDING_CANCEL : KCTL_PENDING_KEEP;
        cd.reconcile = tg_timed_reconcile;
        cd.user_data = &t[i];
        KT_EQ_INT(kctl_manager_add_controller(m, &cd, &c[i]), KCTL_OK);
    }
    kctl_informer_step(shared, 0, NULL);
    kctl_informer_step(web, 0, NULL);
    for (round = 0; round < 3; round++) { /* c's retry comes 5 ms after its failure */
        for (i = 0; i < 4; i++) kctl_controller_step(c[i], 100, NULL);
        kctl_vclock_advance(&vc, KCTL_MS(10));
    }
    /* web's queue: a key waiting at low priority, a delayed add a plain add cancelled */
    KT_EQ_INT(kctl_queue_add_low(kctl_controller_queue(c[2]), "prod/y"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(kctl_controller_queue(c[2]), "prod/z", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(kctl_controller_queue(c[2]), "prod/z"), KCTL_OK);
    KT_EQ_INT(kctl_manager_metrics(m, text, sizeof text, &len), KCTL_OK);
    KT_EQ_INT(tg_exposition(text, &nfam, &nhist), 0);
    KT_EQ_INT(nfam, 25);                   /* every family (workqueue_refused_total, kctl_controller_* too) */
    KT_CHECK(strstr(text, "workqueue_depth{name=\"web\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "kctl_workqueue_low_depth{name=\"web\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "kctl_workqueue_cancelled_total{name=\"web\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "kctl_workqueue_low_depth{name=\"configs\"} 0\n") != NULL);
    KT_EQ_INT(nhist, 3 * 3);               /* 3 named controllers x 3 histograms */
    /* controller-runtime's buckets, cumulative: a (0.3 s), b (7 s), c twice (0 s) */
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"0.005\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"0.25\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"0.3\"} 3\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"6\"} 3\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"7\"} 4\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"60\"} 4\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_bucket{controller=\"configs\",le=\"+Inf\"} 4\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_sum{controller=\"configs\"} 7.300000000\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_time_seconds_count{controller=\"configs\"} 4\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_total{controller=\"configs\",result=\"error\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_errors_total{controller=\"configs\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_terminal_reconcile_errors_total{controller=\"configs\"} 0\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_terminal_reconcile_errors_total{controller=\"we\\\"ird\\\\name\\nx\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_max_concurrent_reconciles{controller=\"web\"} 3\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_max_concurrent_reconciles{controller=\"configs\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "controller_runtime_active_workers{controller=\"configs\"} 0\n") != NULL);
    KT_CHECK(strstr(text, "workqueue_work_duration_seconds_bucket{name=\"configs\",le=\"10\"} 4\n") != NULL);
    KT_CHECK(strstr(text, "kctl_reflector_lists_total{resource=\"/configmaps/prod\",label_selector=\"app=web\"} 1\n") != NULL);
    KT_CHECK(strstr(text, "kctl_reflector_events_total{resource=\"/configmaps/prod\",type=\"ADDED\"} 0\n") != NULL);
    KT_CHECK(strstr(text, "leader_election_master_status{name=\"metrics \\\"lease\\\"\"} 0\n") != NULL);
    KT_CHECK(strstr(text, "name=\"\"") == NULL && strstr(text, "controller=\"\"") == NULL); /* the unnamed one has none */
    KT_CHECK(strstr(text, "workqueue_depth 0") == NULL);
    pt = tg_promtool(text, out, sizeof out);
    if (pt < 0 && getenv("KT_REQUIRE_PROMTOOL")) kt_fail(__FILE__, __LINE__, "promtool is not installed (KT_REQUIRE_PROMTOOL is set)");
    if (pt > 0 || out[0]) kt_fail(__FILE__, __LINE__, "promtool check metrics: exit %d: %s", pt, out);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
    if (pt < 0) {
        printf("skip tg_metrics_exposition: promtool not found (Debian: apt-get install prometheus); the format was checked here only\n");
        KT_SKIP();
    }
}

/* Names: a second controller of one name is refused (its metrics would
   mix with the first's); unnamed ones are fine and have no metrics. */
static void tg_controller_names(void) {
    kctl_memstore *ms = NULL;
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    char text[16384];
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tg_reconcile_any;
    cd.name = "configs";
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, &c), KCTL_OK);
    KT_CHECK(c != NULL);
    cd.limiter = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1)); /* owned even when refused */
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, &c), KCTL_ERR_EXISTS);
    KT_CHECK(c == NULL);
    cd.limiter = NULL;
    cd.name = NULL;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    cd.name = "";
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    cd.reconcile = NULL;
    cd.name = "none";
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_manager_metrics(m, text, sizeof text, NULL), KCTL_OK);
    KT_EQ_INT(tg_exposition(text, NULL, NULL), 0);
    KT_CHECK(strstr(text, "workqueue_depth{name=\"configs\"} 0\n") != NULL);
    KT_CHECK(strstr(text, "name=\"\"") == NULL && strstr(text, "workqueue_depth 0") == NULL);
    KT_EQ_INT(kctl_manager_run(NULL, KCTL_SEC(1)), KCTL_ERR_INVALID_ARG); /* the 0.3 name still compiles */
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
}

static kctl_reconcile_result tg_count_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    __atomic_add_fetch((int *)ctx->user_data, 1, __ATOMIC_SEQ_CST);
    return r;
}

/* No fixed number of informers or controllers: 100 controllers over 40
   informers (more than the 32 of each the manager once allowed) all
   reconcile everything. */
static void tg_many_controllers(void) {
    kctl_memstore *ms = NULL;
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    kctl_informer *inf[40];
    kctl_controller *c[100];
    static int calls[100];
    static char text[1 << 20];
    char name[16], sel[32];
    int i, done = 0;
    long spin;
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    for (i = 0; i < 40; i++) {
        snprintf(sel, sizeof sel, "kctl-test!=i%d", i); /* each its own informer; all match */
        KT_EQ_INT(kctl_manager_informer(m, &tg_cm, sel, NULL, &inf[i]), KCTL_OK);
    }
    for (i = 0; i < 100; i++) {
        kctl_controller_desc cd;
        memset(&cd, 0, sizeof cd);
        snprintf(name, sizeof name, "c%d", i);
        cd.name = name;
        cd.primary = inf[i % 40];
        cd.reconcile = tg_count_reconcile;
        cd.user_data = &calls[i];
        calls[i] = 0;
        KT_EQ_INT(kctl_manager_add_controller(m, &cd, &c[i]), KCTL_OK);
    }
#ifndef KCTL_NO_THREADS
    KT_EQ_INT(kctl_manager_start(m, KCTL_SEC(20)), KCTL_OK);
    for (spin = 0; spin < 20000 && !done; spin++) {
        for (done = 1, i = 0; i < 100; i++) done &= __atomic_load_n(&calls[i], __ATOMIC_SEQ_CST) == 2;
        if (!done) tg_nap(1);
    }
    KT_EQ_INT(kctl_manager_stop(m), KCTL_OK);
#else
    (void)spin;
    for (i = 0; i < 40; i++) kctl_informer_step(inf[i], 0, NULL);
    for (i = 0; i < 100; i++) kctl_controller_step(c[i], 10, NULL);
#endif
    for (done = 0, i = 0; i < 100; i++) done += calls[i] == 2;
    KT_EQ_INT(done, 100);
    KT_EQ_INT(kctl_manager_metrics(m, text, sizeof text, NULL), KCTL_OK);
    KT_EQ_INT(tg_exposition(text, NULL, NULL), 0);
    KT_CHECK(strstr(text, "controller_runtime_reconcile_total{controller=\"c99\",result=\"success\"} 2\n") != NULL);
    KT_CHECK(strstr(text, "kctl_reflector_lists_total{resource=\"/configmaps/prod\",label_selector=\"kctl-test!=i39\"} 1\n") != NULL);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
}

#ifndef KCTL_NO_THREADS
/* The holder of the manager tests' Lease, as the store has it. */
static const char *tg_lease_holder(kctl_memstore *ms, char *buf, size_t cap) {
    static const kctl_resource lease = { "coordination.k8s.io", "v1", "leases", "default" };
    kctl_transport t = kctl_memstore_transport(ms);
    kctl_obj *o = NULL;
    kctl_json j;
    kctl_json_tok toks[256];
    const char *doc;
    size_t len;
    buf[0] = '\0';
    if (t.vt->get(t.self, &lease, "configs-controller", &o, NULL) != KCTL_OK) return "(none)";
    doc = kctl_obj_json(o, &len);
    if (kctl_json_parse(doc, len, toks, 256, NULL, &j) != KCTL_OK ||
        kctl_json_string(&j, kctl_json_path(&j, 0, "spec.holderIdentity"), buf, cap, NULL) != KCTL_OK)
        snprintf(buf, cap, "(unreadable)");
    kctl_obj_unref(o);
    return buf;
}
typedef struct tg_stopper {
    kctl_manager *m;
    int rc, done; /* atomic */
} tg_stopper;
static void *tg_stop_main(void *arg) {
    tg_stopper *s = (tg_stopper *)arg;
    s->rc = kctl_manager_stop(s->m);
    __atomic_store_n(&s->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
static kctl_manager *tg_gated_le_manager(kctl_memstore *ms, kctl_vclock *vc, tg_gate *g, uint64_t grace_ns) {
    kctl_manager_desc d;
    kctl_controller_desc cd;
    kctl_informer *inf = NULL;
    kctl_manager *m = NULL;
    memset(g, 0, sizeof *g);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.clock = kctl_vclock_clock(vc);
    d.lease_name = "configs-controller";
    d.identity = "replica-a";
    d.release_on_stop = true;
    d.graceful_timeout_ns = grace_ns;
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tg_gate_reconcile;
    cd.user_data = g;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    return m;
}
#endif

/* Stop keeps the Lease renewed while the controllers drain (no other
   replica can take over under a reconcile still running), then, with
   release_on_stop, releases it: the other replica leads within one
   jittered retry (2 s x (1 + 1.2)), not a lease duration later. */
static void tg_release_on_stop_vclock(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    kctl_clock clk;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_manager *a, *b;
    tg_gate g;
    tg_stopper st;
    pthread_t t;
    int calls = 0, tick, both = 0;
    long spin;
    uint64_t stopped = 0, took = 0;
    char holder[64];
    kctl_vclock_init(&vc, KCTL_SEC(1000));
    clk = kctl_vclock_clock(&vc);
    memset(&md, 0, sizeof md);
    md.clock = clk;
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    a = tg_gated_le_manager(ms, &vc, &g, 0);
    b = tg_le_manager(ms, &vc, "replica-b", &calls);
    KT_EQ_INT(kctl_manager_start(a, KCTL_SEC(20)), KCTL_OK);
    KT_CHECK(tg_settle(a, &vc));
    KT_EQ_INT(kctl_manager_start(b, KCTL_SEC(20)), KCTL_OK);
    KT_CHECK(tg_settle(b, &vc));
    KT_CHECK(kctl_manager_is_leader(a) && !kctl_manager_is_leader(b));
    for (spin = 0; spin < 20000 && !__atomic_load_n(&g.entered, __ATOMIC_SEQ_CST); spin++) tg_nap(1);
    KT_CHECK(g.entered); /* a's reconcile of prod/a holds */
    st.m = a;
    st.rc = -1;
    st.done = 0;
    pthread_create(&t, NULL, tg_stop_main, &st);
    for (tick = 0; tick < 40; tick++) { /* 40 s of a stop that waits for the reconcile */
        kctl_vclock_advance(&vc, KCTL_SEC(1));
        KT_CHECK(tg_settle(a, &vc));
        KT_CHECK(tg_settle(b, &vc));
        if (kctl_manager_is_leader(b)) both++;
    }
    KT_EQ_INT(both, 0); /* a kept renewing */
    KT_EQ_STR(tg_lease_holder(ms, holder, sizeof holder), "replica-a");
    KT_EQ_INT(__atomic_load_n(&st.done, __ATOMIC_SEQ_CST), 0);
    __atomic_store_n(&g.open, 1, __ATOMIC_SEQ_CST); /* the reconcile ends; stop releases the Lease */
    pthread_join(t, NULL);
    KT_EQ_INT(st.rc, KCTL_OK);
    KT_EQ_INT(g.finished, 1);
    stopped = kctl_clock_now(&clk);
    KT_CHECK(strcmp(tg_lease_holder(ms, holder, sizeof holder), "") == 0 || strcmp(holder, "replica-b") == 0);
    for (tick = 0; tick < 100 && !took; tick++) {
        kctl_vclock_advance(&vc, KCTL_MS(100));
        KT_CHECK(tg_settle(b, &vc));
        if (kctl_manager_is_leader(b)) took = kctl_clock_now(&clk);
    }
    KT_CHECK(took != 0);
    KT_CHECK(took - stopped <= KCTL_MS(4400) + KCTL_MS(100));
    tg_wait_calls(&calls, 1);
    KT_EQ_INT(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 1);
    KT_EQ_STR(tg_lease_holder(ms, holder, sizeof holder), "replica-b");
    kctl_manager_destroy(a);
    kctl_manager_destroy(b);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
#else
    KT_SKIP();
#endif
}

/* A reconcile still running at the end of the grace period: stop says
   TIMEOUT and does not release the Lease (the reconcile acts for the
   leader until it ends: nobody may take over before the Lease expires). */
static void tg_no_release_after_timeout(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_manager *a;
    tg_gate g;
    pthread_t t;
    long spin;
    char holder[64];
    kctl_vclock_init(&vc, KCTL_SEC(1000));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    a = tg_gated_le_manager(ms, &vc, &g, KCTL_MS(30));
    KT_EQ_INT(kctl_manager_start(a, KCTL_SEC(20)), KCTL_OK);
    KT_CHECK(tg_settle(a, &vc));
    for (spin = 0; spin < 20000 && !__atomic_load_n(&g.entered, __ATOMIC_SEQ_CST); spin++) tg_nap(1);
    KT_CHECK(g.entered);
    KT_EQ_INT(kctl_manager_stop(a), KCTL_ERR_TIMEOUT);
    KT_EQ_STR(tg_lease_holder(ms, holder, sizeof holder), "replica-a");
    pthread_create(&t, NULL, tg_open_later, &g);
    kctl_manager_destroy(a); /* waits for the reconcile; still no release */
    pthread_join(t, NULL);
    KT_EQ_STR(tg_lease_holder(ms, holder, sizeof holder), "replica-a");
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
#else
    KT_SKIP();
#endif
}

/* The README's program that edits its own store: start (0: the desc's
   cache-sync timeout), edit from the main thread, stop. */
static void tg_start_edit_stop(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    int calls = 0;
    m = tg_plain_manager(&ms);
    KT_EQ_INT(kctl_manager_informer(m, &tg_cm, NULL, NULL, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.name = "configs";
    cd.primary = inf;
    cd.reconcile = tg_le_reconcile;
    cd.user_data = &calls;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    KT_EQ_INT(kctl_manager_start(m, 0), KCTL_OK); /* waits up to 2 min for the caches, then returns */
    KT_EQ_INT(kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"c\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    tg_wait_calls(&calls, 3);
    KT_EQ_INT(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), 3);
    KT_EQ_INT(kctl_manager_stop(m), KCTL_OK);
    kctl_manager_destroy(m);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

void kt_suite_manager(void) {
    KT_RUN(tg_shared_informers);
    KT_RUN(tg_start_stop_metrics);
    KT_RUN(tg_run_until_signal);
    KT_RUN(tg_leader_election);
    KT_RUN(tg_graceful_stop);
    KT_RUN(tg_graceful_stop_timeout);
    KT_RUN(tg_leader_election_vclock);
    KT_RUN(tg_lost_lease_vclock);
    KT_RUN(tg_stop_before_start);
    KT_RUN(tg_add_while_clock_moves);
    KT_RUN(tg_late_controller);
    KT_RUN(tg_metrics_exposition);
    KT_RUN(tg_controller_names);
    KT_RUN(tg_many_controllers);
    KT_RUN(tg_release_on_stop_vclock);
    KT_RUN(tg_no_release_after_timeout);
    KT_RUN(tg_start_edit_stop);
}
