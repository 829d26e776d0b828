/* test_leader.c - leader election over a lease in the store, on the virtual clock. */
#include "kt.h"

static kctl_leader *tle_new(kctl_memstore *ms, kctl_vclock *vc, const char *id) {
    kctl_leader_desc d;
    kctl_leader *le = NULL;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.name = "my-controller";
    d.identity = id;
    d.clock = kctl_vclock_clock(vc);
    if (kctl_leader_create(&d, &le) != KCTL_OK) kt_fail(__FILE__, __LINE__, "leader");
    return le;
}

static void tle_one_leader_then_failover(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_leader *a, *b;
    bool la = false, lb = false;
    uint64_t t, a_died = 0, b_took = 0;
    int both = 0;
    kctl_vclock_init(&vc, KCTL_SEC(100));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    a = tle_new(ms, &vc, "a");
    b = tle_new(ms, &vc, "b");
    kctl_leader_step(a, &la, NULL);
    kctl_leader_step(b, &lb, NULL);
    KT_CHECK(la);
    KT_CHECK(!lb);
    /* a minute of both alive: a renews every 2 s, b never leads */
    for (t = 0; t < KCTL_SEC(60); t += KCTL_SEC(2)) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(a, &la, NULL);
        kctl_leader_step(b, &lb, NULL);
        if (la && lb) both++;
        if (!la) kt_fail(__FILE__, __LINE__, "a lost the lease while renewing");
    }
    /* a dies (no more steps); b takes over once the lease has not changed for 15 s */
    a_died = kctl_clock_now(&md.clock);
    for (t = 0; t < KCTL_SEC(60) && !lb; t += KCTL_SEC(2)) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(b, &lb, NULL);
    }
    b_took = kctl_clock_now(&md.clock);
    KT_CHECK(lb);
    KT_CHECK(b_took - a_died >= KCTL_SEC(15));
    KT_CHECK(b_took - a_died <= KCTL_SEC(15) + KCTL_SEC(4));
    KT_EQ_INT(kctl_leader_terms(b), 1);
    /* a comes back: it sees b renewing and steps down */
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    kctl_leader_step(b, &lb, NULL);
    kctl_leader_step(a, &la, NULL);
    KT_CHECK(lb);
    KT_CHECK(!la);
    for (t = 0; t < KCTL_SEC(30); t += KCTL_SEC(2)) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(a, &la, NULL);
        kctl_leader_step(b, &lb, NULL);
        if (la && lb) both++;
    }
    KT_EQ_INT(both, 0);
    KT_CHECK(lb && !la);
    kctl_leader_destroy(a);
    kctl_leader_destroy(b);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* A leader that cannot reach the store stops leading after the renew deadline. */
static void tle_renew_deadline(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_leader *a;
    bool la = false;
    int i;
    kctl_vclock_init(&vc, KCTL_SEC(100));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    a = tle_new(ms, &vc, "a");
    kctl_leader_step(a, &la, NULL);
    KT_CHECK(la);
    kctl_memstore_fail_next(ms, KCTL_VERB_GET, 100, KCTL_ERR_IO);
    for (i = 0; i < 4; i++) { /* 8 s without a renewal: still leading */
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(a, &la, NULL);
    }
    KT_CHECK(la);
    kctl_vclock_advance(&vc, KCTL_SEC(2)); /* 10 s: the deadline */
    kctl_leader_step(a, &la, NULL);
    KT_CHECK(!la);
    kctl_leader_destroy(a);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

static void tle_bad_args(void) {
    kctl_leader_desc d;
    kctl_leader *le = NULL;
    memset(&d, 0, sizeof d);
    KT_EQ_INT(kctl_leader_create(&d, &le), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_leader_step(NULL, NULL, NULL), KCTL_ERR_INVALID_ARG);
    kctl_leader_destroy(NULL);
}

void kt_suite_leader(void) {
    KT_RUN(tle_one_leader_then_failover);
    KT_RUN(tle_renew_deadline);
    KT_RUN(tle_bad_args);
}
