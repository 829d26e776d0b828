/* test_offline.c - retries that cannot storm a fleet: the jitter limiter
   and the controller's offline mode (kctl_offline_desc), on the virtual
   clock. */
#include "kt.h"
#include <stdlib.h>

/* ---- the jitter limiter */

static void toff_jitter_bounds(void) {
    kctl_limiter *full = kctl_limiter_jitter(kctl_limiter_exponential(KCTL_MS(100), KCTL_SEC(100)), KCTL_JITTER_FULL, 42);
    kctl_limiter *equal = kctl_limiter_jitter(kctl_limiter_exponential(KCTL_MS(100), KCTL_SEC(100)), KCTL_JITTER_EQUAL, 42);
    kctl_limiter *again = kctl_limiter_jitter(kctl_limiter_exponential(KCTL_MS(100), KCTL_SEC(100)), KCTL_JITTER_FULL, 42);
    uint64_t d = KCTL_MS(100), lo_full = UINT64_MAX, lo_equal = UINT64_MAX;
    int i, differ = 0, same = 0;
    KT_CHECK(full && equal && again);
    if (!full || !equal || !again) goto out;
    for (i = 0; i < 10; i++, d = d * 2 > KCTL_SEC(100) ? KCTL_SEC(100) : d * 2) {
        uint64_t f = kctl_limiter_when(full, "k"), e = kctl_limiter_when(equal, "k"), a = kctl_limiter_when(again, "k");
        KT_CHECK(f <= d);
        KT_CHECK(e >= d - d / 2 && e <= d);
        if (f < lo_full) lo_full = f;
        if (e < lo_equal) lo_equal = e;
        differ += f != d;
        same += f == a; /* the same seed: the same sequence */
    }
    KT_EQ_INT(same, 10);
    KT_CHECK(differ >= 9); /* jittered, not the inner delay */
    /* the inner limiter's count and forget */
    KT_EQ_U64(kctl_limiter_num_requeues(full, "k"), 10);
    kctl_limiter_forget(full, "k");
    KT_EQ_U64(kctl_limiter_num_requeues(full, "k"), 0);
    KT_CHECK(kctl_limiter_when(full, "k") <= KCTL_MS(100));
out:
    kctl_limiter_destroy(full);
    kctl_limiter_destroy(equal);
    kctl_limiter_destroy(again);
}

/* Many keys failing at the same instant: the inner limiter gives each the
   same delay; jittered, they come back spread over it. */
static void toff_jitter_spreads(void) {
    kctl_limiter *plain = kctl_limiter_exponential(KCTL_SEC(8), KCTL_SEC(8));
    kctl_limiter *jit = kctl_limiter_jitter(kctl_limiter_exponential(KCTL_SEC(8), KCTL_SEC(8)), KCTL_JITTER_FULL, 7);
    int buckets_plain[8] = { 0 }, buckets_jit[8] = { 0 }, i, max_plain = 0, max_jit = 0;
    KT_CHECK(plain && jit);
    if (!plain || !jit) goto out;
    for (i = 0; i < 800; i++) {
        char key[16];
        uint64_t p, j;
        snprintf(key, sizeof key, "k%d", i);
        p = kctl_limiter_when(plain, key);
        j = kctl_limiter_when(jit, key);
        buckets_plain[p >= KCTL_SEC(8) ? 7 : p / KCTL_SEC(1)]++;
        buckets_jit[j >= KCTL_SEC(8) ? 7 : j / KCTL_SEC(1)]++;
    }
    for (i = 0; i < 8; i++) {
        if (buckets_plain[i] > max_plain) max_plain = buckets_plain[i];
        if (buckets_jit[i] > max_jit) max_jit = buckets_jit[i];
    }
    KT_EQ_INT(max_plain, 800); /* a herd: every key in the same second */
    KT_CHECK(max_jit < 200);   /* about 100 a second (the seed is fixed: this never varies) */
out:
    kctl_limiter_destroy(plain);
    kctl_limiter_destroy(jit);
}

static void toff_jitter_bad_args(void) {
    KT_CHECK(kctl_limiter_jitter(NULL, KCTL_JITTER_FULL, 1) == NULL);
    /* an unknown mode: NULL, and the inner limiter freed (asan sees a leak otherwise) */
    KT_CHECK(kctl_limiter_jitter(kctl_limiter_exponential(1, 2), 99, 1) == NULL);
    KT_CHECK(kctl_limiter_jitter(kctl_limiter_exponential(1, 2), 0, 1) == NULL);
}

/* ---- offline mode */

#define TOFF_N 20

static const kctl_resource toff_res = { "", "v1", "configmaps", "edge" };

typedef struct toff_env {
    kctl_vclock vc;
    kctl_clock clock;
    kctl_memstore *ms;
    kctl_informer *inf;
    kctl_controller *c;
    bool down;             /* the store is unreachable: reconcile fails with code */
    int code;
    bool terminal;
    uint64_t calls, calls_down;
    uint64_t last_ok[TOFF_N]; /* when each key last reconciled with the store up */
    int offline_logs, online_logs;
} toff_env;

static int toff_index(const char *key) {
    const char *p = strrchr(key, '-');
    return p ? atoi(p + 1) : -1;
}

static kctl_reconcile_result toff_reconcile(const kctl_reconcile_ctx *ctx) {
    toff_env *e = (toff_env *)ctx->user_data;
    kctl_reconcile_result r;
    int i = toff_index(ctx->key);
    memset(&r, 0, sizeof r);
    e->calls++;
    if (e->down) {
        e->calls_down++;
        r.error = e->code;
        r.terminal = e->terminal;
    } else if (i >= 0 && i < TOFF_N) {
        e->last_ok[i] = kctl_clock_now(&e->clock);
    }
    return r;
}

static void toff_log(int level, uint32_t item, const char *message, void *user_data) {
    toff_env *e = (toff_env *)user_data;
    (void)level;
    (void)message;
    if (item == KCTL_LOGITEM_CONTROLLER_OFFLINE) e->offline_logs++;
    if (item == KCTL_LOGITEM_CONTROLLER_ONLINE) e->online_logs++;
}

static bool toff_open(toff_env *e, bool offline_mode) {
    kctl_memstore_desc md;
    kctl_informer_desc id;
    kctl_controller_desc cd;
    int i;
    memset(e, 0, sizeof *e);
    e->code = KCTL_ERR_IO;
    kctl_vclock_init(&e->vc, KCTL_SEC(1000));
    e->clock = kctl_vclock_clock(&e->vc);
    memset(&md, 0, sizeof md);
    md.clock = e->clock;
    if (kctl_memstore_create(&md, &e->ms) != KCTL_OK) return false;
    for (i = 0; i < TOFF_N; i++) {
        char doc[96];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"dev-%d\"}}", i);
        if (kctl_memstore_apply(e->ms, &toff_res, doc, strlen(doc), NULL, NULL) != KCTL_OK) return false;
    }
    memset(&id, 0, sizeof id);
    id.transport = kctl_memstore_transport(e->ms);
    id.resource = toff_res;
    id.clock = e->clock;
    if (kctl_informer_create(&id, &e->inf) != KCTL_OK) return false;
    memset(&cd, 0, sizeof cd);
    cd.primary = e->inf;
    cd.transport = kctl_memstore_transport(e->ms);
    cd.reconcile = toff_reconcile;
    cd.user_data = e;
    cd.clock = e->clock;
    cd.logger.func = toff_log;
    cd.logger.user_data = e;
    cd.offline.enabled = offline_mode;
    cd.offline.seed = 1234;
    return kctl_controller_create(&cd, &e->c) == KCTL_OK;
}

static void toff_close(toff_env *e) {
    kctl_informer_destroy(e->inf);
    kctl_controller_destroy(e->c);
    kctl_memstore_destroy(e->ms);
    kctl_vclock_deinit(&e->vc);
}

/* Run everything due, then move the clock to the next time something is,
   until `until` (absolute); reconciles counted per virtual second into
   per_sec (may be NULL) from `from`. */
static void toff_run(toff_env *e, uint64_t until) {
    for (;;) {
        uint64_t now = kctl_clock_now(&e->clock), next, inf_next = UINT64_MAX;
        size_t done = 0;
        kctl_informer_step(e->inf, 0, &inf_next);
        kctl_controller_step(e->c, (size_t)-1, &done);
        if (done) continue;
        next = kctl_queue_next_ready(kctl_controller_queue(e->c));
        if (inf_next < next) next = inf_next;
        if (next >= until) {
            if (until > now) kctl_vclock_advance(&e->vc, until - now);
            return;
        }
        if (next > now) kctl_vclock_advance(&e->vc, next - now);
    }
}

/* The store goes away for 10 minutes: every key fails once and is
   parked, its failure count untouched; one probe at a time, its delays
   doubling (1 s .. 300 s); the store comes back: the next probe ends the
   outage and the parked keys come back through the 10 s ramp, spread. */
static void toff_offline_parks_and_probes(void) {
    toff_env e;
    kctl_controller_stats st;
    kctl_queue *q;
    uint64_t t0, t_back, first = UINT64_MAX, last = 0, calls_outage;
    int i, per_sec[11] = { 0 }, max_sec = 0;
    if (!toff_open(&e, true)) {
        kt_fail(__FILE__, __LINE__, "setup");
        toff_close(&e);
        return;
    }
    q = kctl_controller_queue(e.c);
    e.down = true;
    t0 = kctl_clock_now(&e.clock);
    toff_run(&e, t0 + KCTL_SEC(600));
    kctl_controller_read_stats(e.c, &st);
    KT_CHECK(st.offline);
    KT_EQ_U64(st.outages, 1);
    KT_EQ_INT(e.offline_logs, 1);
    KT_EQ_U64(st.parked_now, TOFF_N - 1); /* one is the probe in flight */
    for (i = 0; i < TOFF_N; i++) {
        char key[32];
        snprintf(key, sizeof key, "edge/dev-%d", i);
        KT_EQ_U64(kctl_queue_num_requeues(q, key), 0); /* no backoff earned while offline */
    }
    /* every key once, then probes: ceilings 1, 2, 4, ... 256, 300, 300 s
       (each delay in [ceiling/2, ceiling]): in 600 s at least 8, at most 11 */
    calls_outage = e.calls;
    KT_CHECK(st.probes >= 8 && st.probes <= 11);
    KT_EQ_U64(calls_outage, TOFF_N + st.probes);
    if (getenv("KT_VERBOSE")) printf("  outage of 600 s: %llu reconciles, %llu probes\n", (unsigned long long)e.calls, (unsigned long long)st.probes);
    /* the store is back: at most 300 s later the probe notices */
    e.down = false;
    t_back = kctl_clock_now(&e.clock);
    toff_run(&e, t_back + KCTL_SEC(320));
    kctl_controller_read_stats(e.c, &st);
    KT_CHECK(!st.offline);
    KT_EQ_INT(e.online_logs, 1);
    KT_EQ_U64(st.parked_now, 0);
    for (i = 0; i < TOFF_N; i++) {
        KT_CHECK(e.last_ok[i] > t_back);
        if (e.last_ok[i] < first) first = e.last_ok[i];
        if (e.last_ok[i] > last) last = e.last_ok[i];
    }
    /* the probe first, the rest within the ramp after it, spread over it */
    KT_CHECK(last - first < KCTL_SEC(10));
    for (i = 0; i < TOFF_N; i++) per_sec[(e.last_ok[i] - first) / KCTL_SEC(1)]++;
    for (i = 0; i < 11; i++)
        if (per_sec[i] > max_sec) max_sec = per_sec[i];
    KT_CHECK(max_sec <= 6); /* 20 keys over 10 s (the seed is fixed: this never varies) */
    KT_EQ_U64(e.calls, calls_outage + TOFF_N);
    toff_close(&e);
}

/* Without offline mode the same outage is client-go's: every key backs
   off through the limiter and earns its failures. */
static void toff_default_backs_off(void) {
    toff_env e;
    kctl_controller_stats st;
    if (!toff_open(&e, false)) {
        kt_fail(__FILE__, __LINE__, "setup");
        toff_close(&e);
        return;
    }
    e.down = true;
    toff_run(&e, kctl_clock_now(&e.clock) + KCTL_SEC(600));
    kctl_controller_read_stats(e.c, &st);
    KT_CHECK(!st.offline);
    KT_EQ_U64(st.parked + st.probes + st.outages, 0);
    KT_CHECK(kctl_queue_num_requeues(kctl_controller_queue(e.c), "edge/dev-3") >= 15);
    KT_CHECK(e.calls > 15 * TOFF_N);
    toff_close(&e);
}

/* Only the unreachable codes park; other errors, and terminal ones, keep
   the result rules. */
static void toff_other_errors_keep_rules(void) {
    static const int park[] = { KCTL_ERR_IO, KCTL_ERR_TIMEOUT, KCTL_ERR_AGAIN };
    static const int rules[] = { KCTL_ERR_CONFLICT, KCTL_ERR_INVALID_ARG, KCTL_ERR_FORBIDDEN, 12345 };
    size_t k;
    for (k = 0; k < sizeof park / sizeof park[0] + sizeof rules / sizeof rules[0] + 1; k++) {
        toff_env e;
        kctl_controller_stats st;
        bool parks = k < sizeof park / sizeof park[0];
        bool terminal = k == sizeof park / sizeof park[0] + sizeof rules / sizeof rules[0];
        if (!toff_open(&e, true)) {
            kt_fail(__FILE__, __LINE__, "setup");
            toff_close(&e);
            return;
        }
        e.down = true;
        e.code = parks ? park[k] : terminal ? KCTL_ERR_IO : rules[k - sizeof park / sizeof park[0]];
        e.terminal = terminal;
        toff_run(&e, kctl_clock_now(&e.clock) + KCTL_SEC(1));
        kctl_controller_read_stats(e.c, &st);
        KT_EQ_INT(st.offline, parks);
        KT_EQ_U64(st.error, e.calls);                          /* every failure counted, parked or not */
        if (parks) KT_EQ_U64(e.calls, TOFF_N + st.probes);     /* once each, then the probe */
        if (parks) {
            KT_EQ_U64(kctl_queue_num_requeues(kctl_controller_queue(e.c), "edge/dev-0"), 0);
        } else if (!terminal) {
            KT_CHECK(kctl_queue_num_requeues(kctl_controller_queue(e.c), "edge/dev-0") >= 5); /* 5 ms doubling within 1 s */
        } else {
            KT_EQ_U64(e.calls, TOFF_N); /* terminal: once, never again */
        }
        toff_close(&e);
    }
}

/* An event for a parked key runs it at once (it may not need the store);
   failing so again it stays parked, once; a key that then succeeds is
   no longer parked, but only the probe ends the outage. */
static void toff_event_while_parked(void) {
    toff_env e;
    kctl_controller_stats st;
    uint64_t calls;
    if (!toff_open(&e, true)) {
        kt_fail(__FILE__, __LINE__, "setup");
        toff_close(&e);
        return;
    }
    e.down = true;
    toff_run(&e, kctl_clock_now(&e.clock) + KCTL_MS(100)); /* all failed once; the probe is not due yet */
    calls = e.calls;
    KT_EQ_U64(calls, TOFF_N);
    kctl_memstore_apply(e.ms, &toff_res, "{\"metadata\":{\"name\":\"dev-5\",\"labels\":{\"x\":\"1\"}}}", KCTL_NTS, NULL, NULL);
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, (size_t)-1, NULL);
    KT_EQ_U64(e.calls, calls + 1);
    kctl_controller_read_stats(e.c, &st);
    KT_EQ_U64(st.parked_now, TOFF_N - 1); /* still once */
    e.down = false;
    kctl_memstore_apply(e.ms, &toff_res, "{\"metadata\":{\"name\":\"dev-5\",\"labels\":{\"x\":\"2\"}}}", KCTL_NTS, NULL, NULL);
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, (size_t)-1, NULL);
    kctl_controller_read_stats(e.c, &st);
    KT_CHECK(st.offline || st.parked_now == 0); /* dev-5 might be the probe: then it ended the outage */
    if (st.offline) KT_EQ_U64(st.parked_now, TOFF_N - 2);
    toff_close(&e);
}

/* ---- the write budget */

/* 10 writes a minute, a burst of 3: on the virtual clock, exactly those
   pass; a refusal is a 429 with the wait until the next write; reads
   always pass. */
static void toff_write_budget(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_write_budget_desc bd;
    kctl_write_budget *b = NULL;
    kctl_transport t;
    kctl_api_status st;
    uint64_t passed, refused, sec;
    int i, ok = 0, rc;
    kctl_vclock_init(&vc, KCTL_SEC(100));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    memset(&bd, 0, sizeof bd);
    KT_EQ_INT(kctl_write_budget_create(&bd, &b), KCTL_ERR_INVALID_ARG); /* no inner, no interval */
    bd.inner = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_write_budget_create(&bd, &b), KCTL_ERR_INVALID_ARG); /* no interval */
    bd.interval_ns = KCTL_SEC(6);
    bd.burst = 3;
    bd.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_write_budget_create(&bd, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_write_budget_create(&bd, &b), KCTL_OK);
    if (!b) goto out;
    t = kctl_write_budget_transport(b);
    /* a burst of 3, then refused with a wait of 6 s */
    for (i = 0; i < 5; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%d\"}}", i);
        rc = kctl_transport_create(&t, &toff_res, doc, KCTL_NTS, NULL, &st);
        if (rc == KCTL_OK) ok++;
        else {
            KT_EQ_INT(rc, KCTL_ERR_AGAIN);
            KT_EQ_INT(st.code, 429);
            KT_EQ_STR(st.reason, "TooManyRequests");
            KT_EQ_U64(st.retry_after_s, 6);
        }
        kctl_api_status_clear(&st);
    }
    KT_EQ_INT(ok, 3);
    /* reads pass whatever the budget */
    {
        kctl_obj *o = NULL;
        KT_EQ_INT(kctl_transport_get(&t, &toff_res, "o0", &o, NULL), KCTL_OK);
        kctl_obj_unref(o);
    }
    /* over 10 minutes of one try a second: 10 a minute pass */
    for (sec = 0; sec < 600; sec++) {
        kctl_vclock_advance(&vc, KCTL_SEC(1));
        if (kctl_transport_patch(&t, &toff_res, "o0", "{\"spec\":{\"x\":1}}", KCTL_NTS, 0, NULL, NULL) == KCTL_OK) ok++;
    }
    KT_EQ_INT(ok, 3 + 100);
    kctl_write_budget_read_stats(b, &passed, &refused);
    KT_EQ_U64(passed, 103);
    KT_EQ_U64(refused, 2 + 500);
out:
    kctl_write_budget_destroy(b);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* ---- hold_backoff and the hot-loop detector */

typedef struct toff_ctl {
    kctl_vclock vc;
    kctl_clock clock;
    kctl_memstore *ms;
    kctl_informer *inf;
    kctl_controller *c;
    kctl_reconcile_result next;
    int runs, hot_logs;
    bool write_status;  /* each run writes a new status (a loop through the watch) */
} toff_ctl;

static kctl_reconcile_result toff_ctl_reconcile(const kctl_reconcile_ctx *ctx) {
    toff_ctl *e = (toff_ctl *)ctx->user_data;
    e->runs++;
    if (e->write_status && ctx->obj) {
        char status[48];
        snprintf(status, sizeof status, "{\"runs\":%d}", e->runs);
        kctl_status_update(&ctx->transport, &toff_res, ctx->obj, status, KCTL_NTS, NULL, NULL, NULL);
    }
    return e->next;
}

static void toff_ctl_log(int level, uint32_t item, const char *message, void *user_data) {
    (void)level;
    (void)message;
    if (item == KCTL_LOGITEM_CONTROLLER_HOT_LOOP) ((toff_ctl *)user_data)->hot_logs++;
}

static bool toff_ctl_open_with(toff_ctl *e, bool hold, uint32_t hot_max, int pending) {
    kctl_memstore_desc md;
    kctl_informer_desc id;
    kctl_controller_desc cd;
    memset(e, 0, sizeof *e);
    kctl_vclock_init(&e->vc, KCTL_SEC(1000));
    e->clock = kctl_vclock_clock(&e->vc);
    memset(&md, 0, sizeof md);
    md.clock = e->clock;
    if (kctl_memstore_create(&md, &e->ms) != KCTL_OK) return false;
    if (kctl_memstore_apply(e->ms, &toff_res, "{\"metadata\":{\"name\":\"dev-0\"},\"spec\":{\"v\":0}}", KCTL_NTS, NULL, NULL) != KCTL_OK)
        return false;
    memset(&id, 0, sizeof id);
    id.transport = kctl_memstore_transport(e->ms);
    id.resource = toff_res;
    id.clock = e->clock;
    if (kctl_informer_create(&id, &e->inf) != KCTL_OK) return false;
    memset(&cd, 0, sizeof cd);
    cd.primary = e->inf;
    cd.transport = kctl_memstore_transport(e->ms);
    cd.reconcile = toff_ctl_reconcile;
    cd.user_data = e;
    cd.clock = e->clock;
    cd.logger.func = toff_ctl_log;
    cd.logger.user_data = e;
    cd.limiter = kctl_limiter_exponential(KCTL_SEC(1), KCTL_SEC(100));
    cd.hold_backoff = hold;
    cd.hot_loop.max = hot_max;
    cd.pending_after = pending;
    return kctl_controller_create(&cd, &e->c) == KCTL_OK;
}

static bool toff_ctl_open(toff_ctl *e, bool hold, uint32_t hot_max) {
    return toff_ctl_open_with(e, hold, hot_max, KCTL_PENDING_KEEP);
}

static void toff_ctl_close(toff_ctl *e) {
    kctl_informer_destroy(e->inf);
    kctl_controller_destroy(e->c);
    kctl_memstore_destroy(e->ms);
    kctl_vclock_deinit(&e->vc);
}

static void toff_ctl_run(toff_ctl *e, uint64_t for_ns) {
    uint64_t until = kctl_clock_now(&e->clock) + for_ns;
    for (;;) {
        uint64_t now = kctl_clock_now(&e->clock), next, inf_next = UINT64_MAX;
        size_t done = 0;
        kctl_informer_step(e->inf, 0, &inf_next);
        kctl_controller_step(e->c, (size_t)-1, &done);
        if (done) continue;
        next = kctl_queue_next_ready(kctl_controller_queue(e->c));
        if (inf_next < next) next = inf_next;
        if (next >= until) {
            if (until > now) kctl_vclock_advance(&e->vc, until - now);
            return;
        }
        if (next > now) kctl_vclock_advance(&e->vc, next - now);
    }
}

/* A key failing with backoffs 1 s, 2 s, 4 s gets an event 1 s into the
   4 s: client-go's rules run it at once and count a fourth failure;
   hold_backoff keeps the backoff: one run, when it ends, and 3 failures
   until then. */
static void toff_hold_backoff(void) {
    int hold;
    for (hold = 0; hold < 2; hold++) {
        toff_ctl e;
        kctl_controller_stats st;
        kctl_queue *q;
        if (!toff_ctl_open(&e, hold != 0, 0)) {
            kt_fail(__FILE__, __LINE__, "setup");
            toff_ctl_close(&e);
            return;
        }
        q = kctl_controller_queue(e.c);
        e.next.error = KCTL_ERR_CONFLICT;
        toff_ctl_run(&e, KCTL_MS(3500)); /* runs at 0, 1 s, 3 s: the next is due at 7 s */
        KT_EQ_INT(e.runs, 3);
        KT_EQ_U64(kctl_queue_num_requeues(q, "edge/dev-0"), 3);
        toff_ctl_run(&e, KCTL_MS(500)); /* at 4 s: an event */
        kctl_memstore_apply(e.ms, &toff_res, "{\"metadata\":{\"name\":\"dev-0\"},\"spec\":{\"v\":1}}", KCTL_NTS, NULL, NULL);
        toff_ctl_run(&e, KCTL_MS(10));
        KT_EQ_INT(e.runs, hold ? 3 : 4);
        KT_EQ_U64(kctl_queue_num_requeues(q, "edge/dev-0"), hold ? 3u : 4u);
        toff_ctl_run(&e, KCTL_MS(3000)); /* to 7.01 s: the backoff's end */
        KT_EQ_INT(e.runs, hold ? 4 : 5); /* held: the one run at 7 s; not: the delayed entry of 3 s fires at 7 s too */
        kctl_controller_read_stats(e.c, &st);
        KT_EQ_U64(st.held, hold ? 1u : 0u);
        toff_ctl_close(&e);
    }
}

/* A reconcile that requeues itself every 100 ms with no new spec, and one
   that writes a new status each run (its own event wakes it: no
   generation predicate): found hot after 10 runs, then slowed to one run
   every 30 s. */
static void toff_hot_loop(void) {
    int mode;
    for (mode = 0; mode < 3; mode++) {
        toff_ctl e;
        kctl_controller_stats st;
        bool detect = mode != 0;
        if (!toff_ctl_open(&e, false, detect ? 10 : 0)) {
            kt_fail(__FILE__, __LINE__, "setup");
            toff_ctl_close(&e);
            return;
        }
        if (mode == 2) e.write_status = true;
        else e.next.requeue_after_ns = KCTL_MS(100);
        toff_ctl_run(&e, KCTL_SEC(60));
        kctl_controller_read_stats(e.c, &st);
        if (!detect) {
            KT_CHECK(e.runs >= 590); /* 10 a second */
            KT_EQ_U64(st.hot_loops, 0);
        } else {
            /* 11 runs (the 11th finds it hot), then one at 30 s; in the
               window that starts then, 10 quick runs more and one at 60 s */
            KT_CHECK(e.runs >= 12 && e.runs <= 23);
            KT_CHECK(st.hot_loops >= 1 && st.hot_loops <= 2);
            KT_EQ_U64((uint64_t)e.hot_logs, st.hot_loops);
        }
        if (getenv("KT_VERBOSE")) printf("  hot loop %d: %d runs in 60 s, %llu found hot\n", mode, e.runs, (unsigned long long)st.hot_loops);
        /* a new spec is not a loop: it runs at once */
        if (detect) {
            int before = e.runs;
            kctl_memstore_apply(e.ms, &toff_res, "{\"metadata\":{\"name\":\"dev-0\"},\"spec\":{\"v\":9}}", KCTL_NTS, NULL, NULL);
            toff_ctl_run(&e, KCTL_MS(1));
            KT_CHECK(e.runs > before);
        }
        toff_ctl_close(&e);
    }
}

/* hold_backoff and pending_after together (kctl_controller_desc): the key
   fails with backoffs 1 s, 2 s, 4 s and gets an event 1 s into the 4 s
   (its retry due at 7 s); from 7.01 s on it succeeds. Runs by the event
   (4 s), by 7.01 s, by 12.01 s and in all, and failures at the event:
     KEEP,   no hold: 4 5 5 6, 4  (now, and the retry at 7 s too, whose
                                   failure backs off to 23 s)
     KEEP,   hold:    3 4 4 5, 3  (put back: one run, at 7 s; 15 s)
     CANCEL, no hold: 4 4 5 5, 4  (now only: the retry at 7 s is gone;
                                   its failure backs off 8 s: 12 s)
     CANCEL, hold:    3 4 4 5, 3  (the retry cancelled, the key put back
                                   to 7 s all the same; 15 s)
   and MERGE as CANCEL. */
static void toff_pending_hold_backoff(void) {
    static const int expect[3][2][5] = { /* [mode][hold]: event, 7.01 s, 12.01 s, all, failures */
        { { 4, 5, 5, 6, 4 }, { 3, 4, 4, 5, 3 } },
        { { 4, 4, 5, 5, 4 }, { 3, 4, 4, 5, 3 } },
        { { 4, 4, 5, 5, 4 }, { 3, 4, 4, 5, 3 } } };
    int mode, hold;
    for (mode = KCTL_PENDING_KEEP; mode <= KCTL_PENDING_MERGE; mode++) {
        for (hold = 0; hold < 2; hold++) {
            toff_ctl e;
            kctl_controller_stats st;
            kctl_queue *q;
            const int *x = expect[mode][hold];
            if (!toff_ctl_open_with(&e, hold != 0, 0, mode)) {
                kt_fail(__FILE__, __LINE__, "setup");
                toff_ctl_close(&e);
                return;
            }
            q = kctl_controller_queue(e.c);
            e.next.error = KCTL_ERR_CONFLICT;
            toff_ctl_run(&e, KCTL_MS(4000)); /* runs at 0, 1 s, 3 s */
            KT_EQ_INT(e.runs, 3);
            kctl_memstore_apply(e.ms, &toff_res, "{\"metadata\":{\"name\":\"dev-0\"},\"spec\":{\"v\":1}}", KCTL_NTS, NULL, NULL);
            toff_ctl_run(&e, KCTL_MS(10));
            KT_EQ_INT(e.runs, x[0]);
            KT_EQ_U64(kctl_queue_num_requeues(q, "edge/dev-0"), (uint64_t)x[4]);
            toff_ctl_run(&e, KCTL_MS(3000)); /* to 7.01 s */
            KT_EQ_INT(e.runs, x[1]);
            e.next.error = 0;                /* from here on it succeeds */
            toff_ctl_run(&e, KCTL_MS(5000)); /* to 12.01 s */
            KT_EQ_INT(e.runs, x[2]);
            toff_ctl_run(&e, KCTL_SEC(100)); /* the last failure's retry, then nothing */
            KT_EQ_INT(e.runs, x[3]);
            KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
            kctl_controller_read_stats(e.c, &st);
            KT_EQ_U64(st.held, hold ? 1u : 0u);
            toff_ctl_close(&e);
        }
    }
}

/* A reconcile that asks to run again in 10 s, and an event 2 s in
   (kubernetes#112325, client-go#131): KEEP runs it at 2 s and again at
   10 s; CANCEL and MERGE at 2 s only (that run asks for its own 10 s: next
   at 12 s). */
static void toff_pending_requeue_after(void) {
    int mode;
    for (mode = KCTL_PENDING_KEEP; mode <= KCTL_PENDING_MERGE; mode++) {
        toff_ctl e;
        kctl_queue_stats qs;
        if (!toff_ctl_open_with(&e, false, 0, mode)) {
            kt_fail(__FILE__, __LINE__, "setup");
            toff_ctl_close(&e);
            return;
        }
        e.next.requeue_after_ns = KCTL_SEC(10);
        toff_ctl_run(&e, KCTL_MS(2000)); /* the list's run at 0: next at 10 s */
        KT_EQ_INT(e.runs, 1);
        kctl_memstore_apply(e.ms, &toff_res, "{\"metadata\":{\"name\":\"dev-0\"},\"spec\":{\"v\":1}}", KCTL_NTS, NULL, NULL);
        toff_ctl_run(&e, KCTL_MS(10));
        KT_EQ_INT(e.runs, 2);
        toff_ctl_run(&e, KCTL_MS(8000)); /* to 10.01 s */
        KT_EQ_INT(e.runs, mode == KCTL_PENDING_KEEP ? 3 : 2);
        toff_ctl_run(&e, KCTL_MS(2000)); /* to 12.01 s */
        KT_EQ_INT(e.runs, 3);
        kctl_queue_read_stats(kctl_controller_queue(e.c), &qs);
        KT_EQ_U64(qs.cancelled_total, mode == KCTL_PENDING_KEEP ? 0u : 1u);
        toff_ctl_close(&e);
    }
}

void kt_suite_offline(void) {
    KT_RUN(toff_jitter_bounds);
    KT_RUN(toff_jitter_spreads);
    KT_RUN(toff_jitter_bad_args);
    KT_RUN(toff_offline_parks_and_probes);
    KT_RUN(toff_default_backs_off);
    KT_RUN(toff_other_errors_keep_rules);
    KT_RUN(toff_event_while_parked);
    KT_RUN(toff_write_budget);
    KT_RUN(toff_hold_backoff);
    KT_RUN(toff_hot_loop);
    KT_RUN(toff_pending_hold_backoff);
    KT_RUN(toff_pending_requeue_after);
}
