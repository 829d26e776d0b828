/* test_manager.c - shared informers, start and stop, signals, metrics. */
#include "kt.h"
#include <unistd.h>
#include <time.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#endif

static const kctl_resource tg_cm = { "", "v1", "configmaps", "prod" };

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
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    char text[16384], small[8];
    size_t len = 0;
    long i;
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", 25, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
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
    kctl_manager_desc d;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    pthread_t t;
    sigset_t set, old;
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", 25, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_manager_create(&d, &m), KCTL_OK);
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
    KT_EQ_INT(kctl_manager_run(m, KCTL_SEC(20)), KCTL_OK);
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
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL);
    kctl_memstore_apply(ms, &tg_cm, "{\"metadata\":{\"name\":\"b\"}}", 25, NULL);
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

void kt_suite_manager(void) {
    KT_RUN(tg_shared_informers);
    KT_RUN(tg_start_stop_metrics);
    KT_RUN(tg_run_until_signal);
    KT_RUN(tg_leader_election);
}
