/* test_queue.c - the work queue (issue 2, section 4): client-go's three layers, point by point, on the virtual clock. */
#include "kt.h"
#include <stdlib.h>
#include <time.h>

#ifndef KCTL_MAX_KEY_LEN
#define KCTL_MAX_KEY_LEN 4096
#endif

#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <sched.h>
#endif

/* ---------------------------------------------------------------- helpers */

/* try_get must hand out want; the key is then done. */
#define TQ_GET_DONE(q, want) do { const char *tq_k_ = NULL; int tq_rc_ = kctl_queue_try_get((q), &tq_k_); \
    KT_EQ_INT(tq_rc_, KCTL_OK); \
    if (tq_rc_ == KCTL_OK) { KT_EQ_STR(tq_k_, (want)); kctl_queue_done((q), tq_k_); } } while (0)
/* try_get must hand out want; the key stays in processing (done it later with an equal string). */
#define TQ_TAKE(q, want) do { const char *tq_k_ = NULL; int tq_rc_ = kctl_queue_try_get((q), &tq_k_); \
    KT_EQ_INT(tq_rc_, KCTL_OK); \
    if (tq_rc_ == KCTL_OK) KT_EQ_STR(tq_k_, (want)); } while (0)
/* try_get must return rc (AGAIN or SHUTDOWN); a key handed out by mistake is done. */
#define TQ_TRY_RC(q, rc) do { const char *tq_k_ = NULL; int tq_rc_ = kctl_queue_try_get((q), &tq_k_); \
    KT_EQ_INT(tq_rc_, (rc)); \
    if (tq_rc_ == KCTL_OK && tq_k_) kctl_queue_done((q), tq_k_); } while (0)
#define TQ_AGAIN(q) TQ_TRY_RC(q, KCTL_ERR_AGAIN)

static kctl_queue_stats tq_stats(kctl_queue *q) {
    kctl_queue_stats s;
    memset(&s, 0, sizeof s);
    if (kctl_queue_read_stats(q, &s) != KCTL_OK)
        kt_fail(__FILE__, __LINE__, "kctl_queue_read_stats failed");
    return s;
}

/* A queue on a virtual clock started at start_ns; limiter may be NULL (the
   default). Named queues record the duration figures (as in client-go, where
   an unnamed queue has no metrics), so the stats tests name theirs. */
static kctl_queue *tq_new_named(kctl_vclock *vc, uint64_t start_ns, kctl_limiter *lim, const char *name) {
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    int rc;
    kctl_vclock_init(vc, start_ns);
    memset(&d, 0, sizeof d);
    d.name = name;
    d.clock = kctl_vclock_clock(vc);
    d.limiter = lim;
    rc = kctl_queue_create(&d, &q);
    if (rc != KCTL_OK || !q) {
        kt_fail(__FILE__, __LINE__, "kctl_queue_create: %d", rc);
        kctl_vclock_deinit(vc);
        return NULL;
    }
    return q;
}
static kctl_queue *tq_new(kctl_vclock *vc, uint64_t start_ns, kctl_limiter *lim) {
    return tq_new_named(vc, start_ns, lim, NULL);
}
static void tq_free(kctl_queue *q, kctl_vclock *vc) {
    kctl_queue_destroy(q);
    kctl_vclock_deinit(vc);
}

/* A user limiter that records calls (self lives on the test's stack). */
typedef struct tq_lim {
    int when_calls, forget_calls, nr_calls, destroy_calls;
    uint64_t when_ret;
    uint32_t nr_ret;
    char last_key[64];
} tq_lim;
static void tq_lim_key(tq_lim *c, const char *key) {
    size_t n = key ? strlen(key) : 0;
    if (n >= sizeof c->last_key) n = sizeof c->last_key - 1;
    if (key) memcpy(c->last_key, key, n);
    c->last_key[n] = '\0';
}
static uint64_t tq_lim_when(void *self, const char *key) {
    tq_lim *c = (tq_lim *)self;
    c->when_calls++;
    tq_lim_key(c, key);
    return c->when_ret;
}
static void tq_lim_forget(void *self, const char *key) {
    tq_lim *c = (tq_lim *)self;
    c->forget_calls++;
    tq_lim_key(c, key);
}
static uint32_t tq_lim_nr(void *self, const char *key) {
    tq_lim *c = (tq_lim *)self;
    c->nr_calls++;
    tq_lim_key(c, key);
    return c->nr_ret;
}
static void tq_lim_destroy(void *self) { ((tq_lim *)self)->destroy_calls++; }
static kctl_limiter *tq_lim_new(tq_lim *c, uint64_t when_ret, uint32_t nr_ret) {
    kctl_limiter_vtable vt;
    memset(c, 0, sizeof *c);
    c->when_ret = when_ret;
    c->nr_ret = nr_ret;
    vt.when = tq_lim_when;
    vt.forget = tq_lim_forget;
    vt.num_requeues = tq_lim_nr;
    vt.destroy = tq_lim_destroy;
    return kctl_limiter_create(&vt, c);
}

/* A logger that counts item ids. */
typedef struct tq_log {
    int counts[KCTL_LOGITEM_COUNT + 1];
    int total;
} tq_log;
static void tq_log_fn(int level, uint32_t item_id, const char *message, void *user_data) {
    tq_log *lg = (tq_log *)user_data;
    (void)level;
    (void)message;
    lg->total++;
    lg->counts[item_id < (uint32_t)KCTL_LOGITEM_COUNT ? item_id : (uint32_t)KCTL_LOGITEM_COUNT]++;
}

/* ---------------------------------------------------------------- create */

static void tq_create_null_desc(void) {
    kctl_queue *q = NULL;
    kctl_queue_stats s;
    KT_EQ_INT(kctl_queue_create(NULL, &q), KCTL_OK);
    KT_CHECK(q != NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "a");
    TQ_AGAIN(q);
    KT_CHECK(!kctl_queue_shutting_down(q));
    s = tq_stats(q);
    KT_EQ_STR(s.name, "");
    KT_EQ_U64(s.adds_total, 1);
    /* the default limiter: first failure 5 ms */
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "r"), KCTL_OK);
    KT_EQ_U64(kctl_queue_num_requeues(q, "r"), 1);
    kctl_queue_destroy(q);
    kctl_queue_destroy(NULL);
}

static void tq_create_bad_args(void) {
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    tq_lim c;
    kt_alloc a;
    kctl_allocator al;

    KT_EQ_INT(kctl_queue_create(NULL, NULL), KCTL_ERR_INVALID_ARG);

    /* out NULL: the limiter handed over is destroyed all the same */
    memset(&d, 0, sizeof d);
    d.limiter = tq_lim_new(&c, 0, 0);
    KT_CHECK(d.limiter != NULL);
    KT_EQ_INT(kctl_queue_create(&d, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(c.destroy_calls, 1);

    /* an allocator with only one of its functions */
    kt_alloc_init(&a);
    al = kt_allocator(&a);
    memset(&d, 0, sizeof d);
    d.allocator.alloc_fn = al.alloc_fn;
    d.allocator.user_data = &a;
    d.limiter = tq_lim_new(&c, 0, 0);
    q = NULL;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(c.destroy_calls, 1);
    KT_EQ_INT(a.live, 0);
    if (q) { kctl_queue_destroy(q); q = NULL; }

    memset(&d, 0, sizeof d);
    d.allocator.free_fn = al.free_fn;
    d.allocator.user_data = &a;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_ERR_INVALID_ARG);
    if (q) kctl_queue_destroy(q);
}

static void tq_create_owns_limiter(void) {
    kctl_vclock vc;
    tq_lim c;
    kctl_queue *q = tq_new(&vc, 0, tq_lim_new(&c, 0, 0));
    if (!q) return;
    KT_EQ_INT(c.destroy_calls, 0);
    tq_free(q, &vc);
    KT_EQ_INT(c.destroy_calls, 1);
}

static void tq_desc_init_defaults(void) {
    kctl_queue_desc d = kctl_queue_desc_init();
    kctl_queue *q = NULL;
    KT_CHECK(d.limiter == NULL);
    KT_CHECK(d.allocator.alloc_fn == NULL && d.allocator.free_fn == NULL);
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "x"), KCTL_OK);
    TQ_GET_DONE(q, "x");
    kctl_queue_destroy(q);
}

static void tq_name_copied(void) {
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    kctl_queue_stats s;
    char name[128];
    memset(&d, 0, sizeof d);
    strcpy(name, "orders");
    d.name = name;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    if (!q) return;
    strcpy(name, "zzzzzz");
    s = tq_stats(q);
    KT_EQ_STR(s.name, "orders");
    kctl_queue_destroy(q);

    /* a long name keeps its first 63 bytes */
    memset(name, 'n', 100);
    name[100] = '\0';
    q = NULL;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    if (!q) return;
    s = tq_stats(q);
    KT_CHECK(s.name != NULL);
    if (s.name) {
        KT_EQ_U64(strlen(s.name), 63);
        KT_CHECK(strncmp(s.name, name, 63) == 0);
    }
    kctl_queue_destroy(q);
}

/* ----------------------------------------------------------- queue layer */

static void tq_fifo(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_U64(kctl_queue_len(q), 0);
    TQ_AGAIN(q);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 3);
    TQ_GET_DONE(q, "a");
    KT_EQ_U64(kctl_queue_len(q), 2);
    KT_EQ_INT(kctl_queue_add(q, "d"), KCTL_OK);
    TQ_GET_DONE(q, "b");
    TQ_GET_DONE(q, "c");
    TQ_GET_DONE(q, "d");
    TQ_AGAIN(q);
    KT_EQ_U64(kctl_queue_len(q), 0);
    tq_free(q, &vc);
}

/* Many distinct keys keep their order (the tables grow under them). */
static void tq_fifo_many(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    char key[32];
    int i, bad = 0;
    if (!q) return;
    for (i = 0; i < 5000; i++) {
        sprintf(key, "ns/obj-%d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    for (i = 0; i < 5000; i += 3) { /* duplicates change nothing */
        sprintf(key, "ns/obj-%d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_queue_len(q), 5000);
    for (i = 0; i < 5000; i++) {
        const char *k = NULL;
        sprintf(key, "ns/obj-%d", i);
        if (kctl_queue_try_get(q, &k) != KCTL_OK || !k || strcmp(k, key) != 0) bad++;
        else kctl_queue_done(q, k);
    }
    KT_EQ_INT(bad, 0);
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

static void tq_dedup(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_U64(tq_stats(q).adds_total, 1);
    KT_EQ_U64(tq_stats(q).depth, 1);
    TQ_GET_DONE(q, "a");
    TQ_AGAIN(q);
    /* a duplicate keeps the first position */
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 2);
    TQ_GET_DONE(q, "a");
    TQ_GET_DONE(q, "b");
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

/* The queue keeps its own copy of the key, valid until done. */
static void tq_key_copied(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    char buf[32];
    const char *k = NULL;
    if (!q) return;
    strcpy(buf, "ns/name");
    KT_EQ_INT(kctl_queue_add(q, buf), KCTL_OK);
    strcpy(buf, "zzzzzzz");
    KT_EQ_INT(kctl_queue_try_get(q, &k), KCTL_OK);
    KT_EQ_STR(k, "ns/name");
    KT_CHECK(k != buf);
    /* still valid while other keys come and go */
    KT_EQ_INT(kctl_queue_add(q, "other"), KCTL_OK);
    TQ_GET_DONE(q, "other");
    KT_EQ_STR(k, "ns/name");
    /* done with an equal string, not the pointer */
    strcpy(buf, "ns/name");
    kctl_queue_done(q, buf);
    KT_EQ_U64(tq_stats(q).processing, 0);
    KT_EQ_INT(kctl_queue_add(q, "ns/name"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 1); /* no longer processing: queued at once */
    TQ_GET_DONE(q, "ns/name");
    tq_free(q, &vc);
}

static void tq_processing_held_back(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    TQ_TAKE(q, "a");
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 0);
    TQ_AGAIN(q);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK); /* still once */
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_TAKE(q, "b");
    TQ_AGAIN(q);
    kctl_queue_done(q, "b");
    TQ_AGAIN(q);
    kctl_queue_done(q, "a");
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "a");
    TQ_AGAIN(q);
    KT_EQ_U64(kctl_queue_len(q), 0);
    tq_free(q, &vc);
}

/* A key queued at done goes to the back. */
static void tq_processing_requeue_at_tail(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    TQ_TAKE(q, "a");
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    kctl_queue_done(q, "a");
    KT_EQ_INT(kctl_queue_add(q, "d"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 4);
    TQ_GET_DONE(q, "b");
    TQ_GET_DONE(q, "c");
    TQ_GET_DONE(q, "a");
    TQ_GET_DONE(q, "d");
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

static void tq_done_not_processing(void) {
    kctl_vclock vc;
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    tq_log lg;
    memset(&lg, 0, sizeof lg);
    kctl_vclock_init(&vc, 0);
    memset(&d, 0, sizeof d);
    d.clock = kctl_vclock_clock(&vc);
    d.logger.func = tq_log_fn;
    d.logger.user_data = &lg;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    if (!q) { kctl_vclock_deinit(&vc); return; }

    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    kctl_queue_done(q, "a"); /* waiting, not processing: ignored */
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 1);
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "a");
    TQ_AGAIN(q);
    kctl_queue_done(q, "a"); /* done twice: ignored */
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 2);
    TQ_AGAIN(q);
    kctl_queue_done(q, "never-added");
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 3);
    KT_EQ_U64(kctl_queue_len(q), 0);
    TQ_AGAIN(q);

    /* held back, done twice: queued once */
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    TQ_TAKE(q, "b");
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    kctl_queue_done(q, "b");
    kctl_queue_done(q, "b"); /* b is waiting now, not processing */
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "b");
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).processing, 0);
    KT_EQ_U64(tq_stats(q).depth, 0);
    kctl_queue_destroy(q);
    kctl_vclock_deinit(&vc);
}

/* ------------------------------------------------------------- delaying */

static void tq_add_after_zero(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, KCTL_SEC(100), NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", 0), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_U64(tq_stats(q).delayed, 0);
    KT_EQ_U64(kctl_queue_next_ready(q), 0);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    /* FIFO with plain adds */
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "b", 0), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    TQ_GET_DONE(q, "a");
    TQ_GET_DONE(q, "b");
    TQ_GET_DONE(q, "c");
    tq_free(q, &vc);
}

static void tq_add_after_delay(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, KCTL_SEC(100), NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(2)), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 0);
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    kctl_vclock_advance(&vc, KCTL_SEC(2) - 1);
    KT_EQ_U64(kctl_queue_len(q), 0);
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, 1); /* exactly now + d */
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_U64(tq_stats(q).delayed, 0);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, KCTL_SEC(100));
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

static void tq_add_after_earlier_wins(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(100);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    if (!q) return;
    /* 10 s then 5 s: ready at 5 s */
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(10)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(5));
    kctl_vclock_advance(&vc, KCTL_SEC(5) - 1);
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, 1);
    TQ_GET_DONE(q, "k");
    kctl_vclock_advance(&vc, KCTL_SEC(10));
    TQ_AGAIN(q); /* only once */
    KT_EQ_U64(tq_stats(q).delayed, 0);
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);

    /* 5 s then 10 s: still ready at 5 s, and only once */
    KT_EQ_INT(kctl_queue_add_after(q, "j", KCTL_SEC(5)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "j", KCTL_SEC(10)), KCTL_OK);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(20));
    kctl_vclock_advance(&vc, KCTL_SEC(5) - 1);
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, 1);
    TQ_GET_DONE(q, "j");
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, KCTL_SEC(100));
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

/* Delayed keys become ready in the order of their times. */
static void tq_add_after_ready_order(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "x", KCTL_SEC(3)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "y", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "z", KCTL_SEC(2)), KCTL_OK);
    KT_EQ_U64(tq_stats(q).delayed, 3);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_U64(kctl_queue_len(q), 1);
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    KT_EQ_U64(kctl_queue_len(q), 3);
    TQ_GET_DONE(q, "y");
    TQ_GET_DONE(q, "z");
    TQ_GET_DONE(q, "x");
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

/* A key whose time has come was added then: a later add queues behind it. */
static void tq_add_after_ready_before_later_add(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "c", KCTL_SEC(1)), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    TQ_GET_DONE(q, "a");
    TQ_GET_DONE(q, "c");
    TQ_GET_DONE(q, "b");
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

/* On a real clock, a delayed key whose time came before an add goes ahead
   of it, the add through the inbox or under the lock; under CANCEL the add
   does not cancel it (it was due, no longer waiting). */
static void tq_add_after_due_before_add_real(void) {
    int mode;
    for (mode = KCTL_PENDING_KEEP; mode <= KCTL_PENDING_CANCEL; mode++) {
        kctl_queue_desc d = kctl_queue_desc_init();
        kctl_queue *q = NULL;
        struct timespec ms5 = { 0, 5000000 };
        d.pending_after = mode;
        KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
        if (!q) return;
        KT_EQ_INT(kctl_queue_add(q, "first"), KCTL_OK); /* (a locked add: the inbox's room) */
        TQ_GET_DONE(q, "first");
        KT_EQ_INT(kctl_queue_add_after(q, "d", KCTL_MS(1)), KCTL_OK);
        nanosleep(&ms5, NULL); /* d's time has come */
        KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
        TQ_GET_DONE(q, "d");
        TQ_GET_DONE(q, "a");
        TQ_AGAIN(q);
        KT_EQ_U64(tq_stats(q).cancelled_total, 0);
        kctl_queue_destroy(q);
    }
}

/* A key added while in flight goes, at its done, behind the delayed keys
   whose time came before the done (client-go's waiting loop added them
   then), whether adds take the inbox or the lock (max_keys). */
static void tq_done_after_due_delayed(void) {
    int bounded;
    for (bounded = 0; bounded < 2; bounded++) {
        kctl_vclock vc;
        kctl_queue_desc d;
        kctl_queue *q = NULL;
        kctl_vclock_init(&vc, KCTL_SEC(1));
        memset(&d, 0, sizeof d);
        d.clock = kctl_vclock_clock(&vc);
        d.max_keys = bounded ? 100 : 0;
        KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
        if (!q) {
            kctl_vclock_deinit(&vc);
            return;
        }
        KT_EQ_INT(kctl_queue_add(q, "x"), KCTL_OK);
        TQ_TAKE(q, "x");
        KT_EQ_INT(kctl_queue_add(q, "x"), KCTL_OK); /* again at its done */
        KT_EQ_INT(kctl_queue_add_after(q, "d", KCTL_MS(1)), KCTL_OK);
        kctl_vclock_advance(&vc, KCTL_MS(2));
        kctl_queue_done(q, "x");
        TQ_GET_DONE(q, "d");
        TQ_GET_DONE(q, "x");
        TQ_AGAIN(q);
        tq_free(q, &vc);
    }
}

/* A ready delayed key goes through add: dedup with a waiting key. */
static void tq_delayed_dedup_waiting(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_U64(tq_stats(q).delayed, 0);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).adds_total, 1);
    tq_free(q, &vc);
}

/* ... and a key handed out and done before its delayed copy is ready comes again. */
static void tq_delayed_after_done(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(1)), KCTL_OK);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).adds_total, 2);
    tq_free(q, &vc);
}

/* ... and a key still processing when its time comes is held back until done. */
static void tq_delayed_while_processing(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    TQ_TAKE(q, "k");
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(1)), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_AGAIN(q);
    KT_EQ_U64(kctl_queue_len(q), 0);
    kctl_queue_done(q, "k");
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_TAKE(q, "k");
    /* add_after 0 while processing: held back too */
    KT_EQ_INT(kctl_queue_add_after(q, "k", 0), KCTL_OK);
    TQ_AGAIN(q);
    kctl_queue_done(q, "k");
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

/* add on a key that waits on an add_after (client-go's delaying queue): the
   key is queued now and its delayed entry stays. (a) When its time comes
   while the key still waits to be handed out, the delayed add is
   de-duplicated: one get in all. */
static void tq_add_while_delayed_dedup(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(10);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK); /* now, not in 5 s */
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_U64(kctl_queue_next_ready(q), 0);
    KT_EQ_U64(tq_stats(q).delayed, 1); /* the delayed add stays */
    kctl_vclock_advance(&vc, KCTL_SEC(5) - 1);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    kctl_vclock_advance(&vc, 1); /* its time: the key still waits, nothing more */
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_U64(tq_stats(q).delayed, 0);
    KT_EQ_U64(tq_stats(q).adds_total, 1);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
    tq_free(q, &vc);
}

/* (b) Handed out and done before its time: the delayed add queues it again,
   and it is processed again. */
static void tq_add_while_delayed_done_first(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(10);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(5)); /* still delayed */
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).adds_total, 2);
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
    tq_free(q, &vc);
}

/* (c) Handed out and still processing when its time comes: held back,
   queued at done, processed again. */
static void tq_add_while_delayed_processing(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(10);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    TQ_TAKE(q, "k");
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    TQ_AGAIN(q); /* held back: never two workers on one key */
    KT_EQ_U64(kctl_queue_len(q), 0);
    KT_EQ_U64(tq_stats(q).delayed, 0);
    KT_EQ_U64(tq_stats(q).depth, 1);
    kctl_queue_done(q, "k");
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).adds_total, 2);
    tq_free(q, &vc);
}

/* (d) add_after(k, 0) is add: the same for a delayed key; and a second
   add_after with a later time neither postpones nor drops the first. */
static void tq_add_after_zero_while_delayed(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(10);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "k", 0), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(9)), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "k");
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(5));
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    TQ_GET_DONE(q, "k");
    kctl_vclock_advance(&vc, KCTL_SEC(10));
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).adds_total, 2);
    tq_free(q, &vc);
}

/* Delays near UINT64_MAX saturate; an earlier time still wins over them. */
static void tq_add_after_huge_delay(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(100);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", UINT64_MAX), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "j", UINT64_MAX - KCTL_SEC(1)), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 0);
    KT_EQ_U64(tq_stats(q).delayed, 2);
    kctl_vclock_advance(&vc, KCTL_SEC(1000));
    TQ_AGAIN(q);
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(1001));
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    tq_free(q, &vc);
}

static void tq_next_ready(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(500);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    if (!q) return;
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
    KT_EQ_INT(kctl_queue_add_after(q, "a", KCTL_SEC(2)), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(2));
    KT_EQ_INT(kctl_queue_add_after(q, "b", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(1));
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), 0);
    TQ_GET_DONE(q, "c");
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(1));
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_U64(kctl_queue_next_ready(q), 0);
    TQ_GET_DONE(q, "b");
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(2));
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    KT_EQ_U64(kctl_queue_next_ready(q), 0);
    TQ_GET_DONE(q, "a");
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
    tq_free(q, &vc);
}

/* --------------------------------------------------------- rate limiting */

static void tq_rate_limited_exponential(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(100);
    kctl_queue *q = tq_new(&vc, t0, kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000)));
    if (!q) return;
    KT_EQ_U64(kctl_queue_num_requeues(q, "k"), 0);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "k"), KCTL_OK);
    KT_EQ_U64(kctl_queue_num_requeues(q, "k"), 1);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_MS(5));
    KT_EQ_U64(kctl_queue_len(q), 0);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    kctl_vclock_advance(&vc, KCTL_MS(5) - 1);
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, 1);
    TQ_TAKE(q, "k");
    /* the reconcile failed: retry with backoff, from the worker */
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "k"), KCTL_OK);
    KT_EQ_U64(kctl_queue_num_requeues(q, "k"), 2);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_MS(15));
    kctl_queue_done(q, "k");
    KT_EQ_U64(kctl_queue_len(q), 0);
    kctl_vclock_advance(&vc, KCTL_MS(10) - 1);
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, 1);
    TQ_TAKE(q, "k");
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "k"), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_MS(35));
    KT_EQ_U64(kctl_queue_num_requeues(q, "k"), 3);
    kctl_queue_done(q, "k");
    kctl_vclock_advance(&vc, KCTL_MS(20));
    TQ_TAKE(q, "k");
    /* it succeeded: forget resets the backoff */
    kctl_queue_forget(q, "k");
    KT_EQ_U64(kctl_queue_num_requeues(q, "k"), 0);
    kctl_queue_done(q, "k");
    TQ_AGAIN(q);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "k"), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_MS(40));
    /* per key */
    kctl_vclock_advance(&vc, KCTL_MS(1));
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "j"), KCTL_OK);
    KT_EQ_U64(kctl_queue_num_requeues(q, "j"), 1);
    KT_EQ_U64(kctl_queue_num_requeues(q, "k"), 1);
    KT_EQ_U64(tq_stats(q).delayed, 2);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_MS(40));
    kctl_vclock_advance(&vc, KCTL_MS(5)); /* k ready at 40 ms, j at 41 ms */
    TQ_GET_DONE(q, "k");
    TQ_GET_DONE(q, "j");
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

/* add_rate_limited = add_after(key, limiter's when); forget and num_requeues pass through. */
static void tq_rate_limited_custom(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(100);
    tq_lim c;
    kctl_queue *q = tq_new(&vc, t0, tq_lim_new(&c, 0, 9));
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "ns/a"), KCTL_OK);
    KT_EQ_INT(c.when_calls, 1);
    KT_EQ_STR(c.last_key, "ns/a");
    KT_EQ_U64(kctl_queue_len(q), 1); /* when 0: added now */
    TQ_GET_DONE(q, "ns/a");
    c.when_ret = KCTL_SEC(7);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "ns/b"), KCTL_OK);
    KT_EQ_INT(c.when_calls, 2);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_SEC(7));
    KT_EQ_U64(kctl_queue_num_requeues(q, "ns/b"), 9);
    KT_EQ_STR(c.last_key, "ns/b");
    kctl_queue_forget(q, "ns/c");
    KT_EQ_INT(c.forget_calls, 1);
    KT_EQ_STR(c.last_key, "ns/c");
    kctl_vclock_advance(&vc, KCTL_SEC(7));
    TQ_GET_DONE(q, "ns/b");
    KT_EQ_INT(c.destroy_calls, 0);
    tq_free(q, &vc);
    KT_EQ_INT(c.destroy_calls, 1);
}

/* No limiter in the desc: the default one, on the queue's clock. */
static void tq_default_limiter_on_queue_clock(void) {
    kctl_vclock vc;
    const uint64_t t0 = KCTL_SEC(100);
    kctl_queue *q = tq_new(&vc, t0, NULL);
    char key[32];
    int i, bad = 0;
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "k0"), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), t0 + KCTL_MS(5));
    for (i = 1; i <= 100; i++) {
        sprintf(key, "k%d", i);
        if (kctl_queue_add_rate_limited(q, key) != KCTL_OK) bad++;
    }
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(tq_stats(q).delayed, 101);
    kctl_vclock_advance(&vc, KCTL_MS(5));
    KT_EQ_U64(kctl_queue_len(q), 100);
    kctl_vclock_advance(&vc, KCTL_MS(95) - 1);
    KT_EQ_U64(kctl_queue_len(q), 100);
    kctl_vclock_advance(&vc, 1); /* the 101st waited for the bucket: 100 ms */
    KT_EQ_U64(kctl_queue_len(q), 101);
    KT_EQ_U64(kctl_queue_num_requeues(q, "k100"), 1);
    tq_free(q, &vc);
}

/* -------------------------------------------------------------- shutdown */

static void tq_shutdown(void) {
    kctl_vclock vc;
    const char *k = NULL;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_CHECK(!kctl_queue_shutting_down(q));
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "c", KCTL_SEC(1)), KCTL_OK);
    kctl_queue_shutdown(q);
    KT_CHECK(kctl_queue_shutting_down(q));
    KT_EQ_INT(kctl_queue_add(q, "x"), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_add_after(q, "x", 0), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_add_after(q, "x", KCTL_SEC(1)), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "x"), KCTL_ERR_SHUTDOWN);
    KT_EQ_U64(kctl_queue_len(q), 2);
    KT_EQ_U64(tq_stats(q).delayed, 0);
    TQ_GET_DONE(q, "a");
    KT_EQ_INT(kctl_queue_get(q, &k), KCTL_OK); /* queued keys do not block get */
    KT_EQ_STR(k, "b");
    kctl_queue_done(q, "b");
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_get(q, &k), KCTL_ERR_SHUTDOWN); /* does not block */
    kctl_vclock_advance(&vc, KCTL_SEC(2)); /* c was dropped */
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    KT_EQ_U64(kctl_queue_len(q), 0);
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
    kctl_queue_shutdown(q); /* twice is fine */
    KT_CHECK(kctl_queue_shutting_down(q));
    KT_EQ_U64(tq_stats(q).adds_total, 2);
    tq_free(q, &vc);
}

/* Only delayed keys not yet ready are dropped: one whose time has come was added then. */
static void tq_shutdown_keeps_ready_delayed(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "ready", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "later", KCTL_SEC(2)), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    kctl_queue_shutdown(q);
    TQ_GET_DONE(q, "ready");
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    tq_free(q, &vc);
}

/* A key held back (processing, added again) before shutdown is still handed out after done. */
static void tq_shutdown_held_back(void) {
    kctl_vclock vc;
    const char *k = NULL;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    TQ_TAKE(q, "k");
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "j"), KCTL_OK);
    kctl_queue_shutdown(q);
    TQ_GET_DONE(q, "j");
    KT_CHECK(kctl_queue_try_get(q, &k) != KCTL_OK); /* k is still processing */
    kctl_queue_done(q, "k");
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "k");
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    tq_free(q, &vc);
}

/* Added while processing after shutdown: dropped. */
static void tq_shutdown_add_while_processing(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    TQ_TAKE(q, "k");
    kctl_queue_shutdown(q);
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_add_after(q, "k", 0), KCTL_ERR_SHUTDOWN);
    kctl_queue_done(q, "k");
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    KT_EQ_U64(tq_stats(q).processing, 0);
    tq_free(q, &vc);
}

/* shutdown_with_drain with nothing in flight returns at once; queued keys are still handed out. */
static void tq_shutdown_with_drain_idle(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    kctl_queue_shutdown_with_drain(q);
    KT_CHECK(kctl_queue_shutting_down(q));
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_ERR_SHUTDOWN);
    TQ_GET_DONE(q, "a");
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    kctl_queue_shutdown_with_drain(q);
    tq_free(q, &vc);
}

/* ------------------------------------------------------------- bad input */

static void tq_bad_input(void) {
    static char big[KCTL_MAX_KEY_LEN + 2];
    kctl_vclock vc;
    kctl_queue_stats s;
    const char *k = NULL;
    kctl_queue *q = tq_new(&vc, 0, kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000)));
    if (!q) return;

    KT_EQ_INT(kctl_queue_add(NULL, "k"), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_after(NULL, "k", 0), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_rate_limited(NULL, "k"), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_get(NULL, &k), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_try_get(NULL, &k), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_read_stats(NULL, &s), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_read_stats(q, NULL), KCTL_ERR_INVALID_ARG);

    KT_EQ_INT(kctl_queue_add(q, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add(q, ""), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_after(q, NULL, 0), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_after(q, "", KCTL_SEC(1)), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, ""), KCTL_ERR_INVALID_ARG);

    memset(big, 'k', KCTL_MAX_KEY_LEN + 1);
    big[KCTL_MAX_KEY_LEN + 1] = '\0'; /* one byte too long */
    KT_EQ_INT(kctl_queue_add(q, big), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_after(q, big, 0), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_after(q, big, KCTL_SEC(1)), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, big), KCTL_ERR_INVALID_ARG);

    /* the void and query calls survive bad input */
    kctl_queue_done(NULL, "k");
    kctl_queue_done(q, NULL);
    kctl_queue_done(q, "");
    kctl_queue_done(q, big);
    kctl_queue_forget(NULL, "k");
    kctl_queue_forget(q, NULL);
    KT_EQ_U64(kctl_queue_num_requeues(NULL, "k"), 0);
    KT_EQ_U64(kctl_queue_num_requeues(q, NULL), 0);
    KT_EQ_U64(kctl_queue_len(NULL), 0);
    kctl_queue_shutdown(NULL);
    kctl_queue_shutdown_with_drain(NULL);
    (void)kctl_queue_shutting_down(NULL);
    (void)kctl_queue_next_ready(NULL);

    /* nothing was queued, delayed or counted */
    s = tq_stats(q);
    KT_EQ_U64(s.adds_total, 0);
    KT_EQ_U64(s.retries_total, 0);
    KT_EQ_U64(s.depth, 0);
    KT_EQ_U64(s.delayed, 0);
    KT_EQ_U64(kctl_queue_len(q), 0);
    TQ_AGAIN(q);

    /* get with NULL out */
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    KT_EQ_INT(kctl_queue_try_get(q, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_get(q, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_U64(kctl_queue_len(q), 1); /* not consumed */
    TQ_GET_DONE(q, "k");

    /* exactly KCTL_MAX_KEY_LEN bytes is fine */
    big[KCTL_MAX_KEY_LEN] = '\0';
    KT_EQ_INT(kctl_queue_add(q, big), KCTL_OK);
    KT_EQ_INT(kctl_queue_try_get(q, &k), KCTL_OK);
    KT_CHECK(k != NULL && strlen(k) == KCTL_MAX_KEY_LEN && strcmp(k, big) == 0);
    KT_EQ_INT(kctl_queue_add_after(q, big, KCTL_SEC(1)), KCTL_OK);
    kctl_queue_done(q, big);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, big), KCTL_OK);
    KT_EQ_U64(kctl_queue_num_requeues(q, big), 1);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_INT(kctl_queue_try_get(q, &k), KCTL_OK);
    KT_CHECK(k != NULL && strcmp(k, big) == 0);
    kctl_queue_done(q, big);
    TQ_AGAIN(q);
    tq_free(q, &vc);
}

/* ------------------------------------------------------- out of memory */

static kctl_queue *tq_new_alloc(kctl_vclock *vc, kt_alloc *a, kctl_limiter *lim) {
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    int rc;
    kctl_vclock_init(vc, 0);
    memset(&d, 0, sizeof d);
    d.clock = kctl_vclock_clock(vc);
    d.allocator = kt_allocator(a);
    d.limiter = lim;
    rc = kctl_queue_create(&d, &q);
    if (rc != KCTL_OK || !q) {
        kt_fail(__FILE__, __LINE__, "kctl_queue_create: %d", rc);
        kctl_vclock_deinit(vc);
        return NULL;
    }
    return q;
}

static void tq_alloc_used_and_freed(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    int i, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    KT_CHECK(a.allocs > 0); /* the queue itself comes from the allocator */
    for (i = 0; i < 300; i++) {
        sprintf(key, "k%d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        if (kctl_queue_add_after(q, key, KCTL_SEC(1 + i % 3)) != KCTL_OK) bad++;
    }
    KT_EQ_INT(bad, 0);
    for (i = 0; i < 100; i++) {
        sprintf(key, "k%d", i);
        TQ_GET_DONE(q, key);
    }
    KT_CHECK(a.live > 0);
    kctl_queue_destroy(q); /* with keys waiting, delayed and nothing in flight */
    KT_EQ_INT(a.live, 0);
    KT_EQ_INT(a.allocs, a.frees);
    kctl_vclock_deinit(&vc);

    /* destroy with a key in flight and a key held back */
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    TQ_TAKE(q, "a");
    TQ_TAKE(q, "b");
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    kctl_queue_shutdown(q);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* Steady state does not call the allocator (entries are recycled). */
static void tq_alloc_steady_state(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    long before;
    int i, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, kctl_limiter_exponential(1, KCTL_MS(1)));
    if (!q) return;
    for (i = 0; i < 64; i++) { /* warm up */
        sprintf(key, "ns/obj-%04d", i % 8);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        TQ_GET_DONE(q, key);
    }
    before = a.allocs;
    for (i = 0; i < 1000; i++) { /* the same key over and over */
        if (kctl_queue_add(q, "ns/obj-0000") != KCTL_OK) bad++;
        TQ_GET_DONE(q, "ns/obj-0000");
    }
    KT_EQ_INT(a.allocs - before, 0);
    for (i = 0; i < 1000; i++) { /* warm up for distinct keys: the pools reach their size */
        sprintf(key, "ns/wrm-%04d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        TQ_GET_DONE(q, key);
    }
    before = a.allocs;
    for (i = 0; i < 1000; i++) { /* distinct keys of one length, one at a time */
        sprintf(key, "ns/obj-%04d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        TQ_GET_DONE(q, key);
    }
    KT_EQ_INT(a.allocs - before, 0);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* Finished keys stay pooled, not forever: with no producer taking them back,
   idle entries are recycled by the workers and memory stays bounded; every
   key can be added again afterwards, in order. */
static void tq_idle_entries_bounded(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    const char *k = NULL;
    long live_after_first = 0;
    int i, round, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, kctl_limiter_exponential(1, KCTL_MS(1)));
    if (!q) return;
    for (round = 0; round < 3; round++) {
        for (i = 0; i < 5000; i++) {
            sprintf(key, "ns/obj-%05d", i);
            if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        }
        KT_EQ_U64(kctl_queue_len(q), 5000);
        for (i = 0; i < 5000; i++) {
            sprintf(key, "ns/obj-%05d", i);
            if (kctl_queue_try_get(q, &k) != KCTL_OK || strcmp(k, key) != 0) bad++;
            else kctl_queue_done(q, k);
        }
        TQ_AGAIN(q);
        if (round == 0) live_after_first = a.live;
        /* the queue holds at most about 1800 pooled entries and its tables:
           the returned stack (up to 1023), the free list (256) and, where
           adds go through the inbox, a spare chain for the producers and
           one a producer holds (256 each) */
        KT_CHECK(a.live <= 1800);
    }
    KT_CHECK(a.live <= live_after_first + 4); /* rounds reuse, they do not accumulate */
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* The returned stack: a key done and idle waits there, still in the map,
   until a producer that needs an entry recycles the stack. One added
   again meanwhile (queued, or handed out and in flight) stays in the map
   through that recycling, leaves the stack, and goes back on it at its
   next done. The fresh key's entry comes from the recycled ones (no
   allocation); ASan and the counting allocator see nothing freed early
   and nothing left. */
static void tq_returned_revived(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    const char *k = NULL, *kin = NULL;
    long allocs;
    int i, round, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    for (i = 0; i < 40; i++) { /* 40 entries made */
        sprintf(key, "k%02d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    for (i = 0; i < 40; i++) { /* all idle: on the stack, none free yet */
        sprintf(key, "k%02d", i);
        if (kctl_queue_try_get(q, &k) != KCTL_OK || strcmp(k, key) != 0) bad++;
        else kctl_queue_done(q, k);
    }
    KT_EQ_INT(kctl_queue_add(q, "k00"), KCTL_OK); /* revived */
    KT_EQ_INT(kctl_queue_try_get(q, &kin), KCTL_OK); /* and in flight */
    KT_EQ_INT(kctl_queue_add(q, "k01"), KCTL_OK); /* revived, queued */
    allocs = a.allocs;
    KT_EQ_INT(kctl_queue_add(q, "new"), KCTL_OK); /* a fresh entry: the recycled ones give it */
    KT_EQ_INT(a.allocs, allocs);
    KT_EQ_STR(kin, "k00"); /* its entry is not one of them */
    KT_EQ_INT(kctl_queue_add(q, "k00"), KCTL_OK); /* in flight: held back */
    KT_EQ_U64(kctl_queue_len(q), 2);
    if (kin) kctl_queue_done(q, kin);             /* queued again at done */
    TQ_GET_DONE(q, "k01");
    TQ_GET_DONE(q, "new");
    TQ_GET_DONE(q, "k00");
    TQ_AGAIN(q);
    for (round = 0; round < 2; round++) { /* every key again, the recycled ones new */
        for (i = 39; i >= 0; i--) {
            sprintf(key, "k%02d", i);
            if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        }
        for (i = 39; i >= 0; i--) {
            sprintf(key, "k%02d", i);
            if (kctl_queue_try_get(q, &k) != KCTL_OK || strcmp(k, key) != 0) bad++;
            else kctl_queue_done(q, k);
        }
        TQ_AGAIN(q);
    }
    KT_EQ_U64(tq_stats(q).processing, 0);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* The key map keeps its table while the queue is in use: a wave of keys
   that drains does not shrink it (a next wave would grow it again), and
   a get that finds the queue idle gives it back only once a second has
   passed on the queue's clock since it last grew. Allocations tell: the
   second wave takes pooled entries and needs no new table. */
static void tq_map_kept_while_in_use(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    const char *k = NULL;
    long before, freed;
    int i, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, kctl_limiter_exponential(1, KCTL_MS(1)));
    if (!q) return;
    for (i = 0; i < 4096; i++) { /* the map grows to hold them; done returns them all */
        sprintf(key, "ns/a-%05d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    for (i = 0; i < 4096; i++) {
        if (kctl_queue_try_get(q, &k) != KCTL_OK) bad++;
        else kctl_queue_done(q, k);
    }
    before = a.allocs;
    for (i = 0; i < 200; i++) { /* pooled entries, the table as it is */
        sprintf(key, "ns/b-%05d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    KT_EQ_INT(a.allocs - before, 0);
    for (i = 0; i < 200; i++) {
        if (kctl_queue_try_get(q, &k) != KCTL_OK) bad++;
        else kctl_queue_done(q, k);
    }
    freed = a.frees;
    TQ_AGAIN(q); /* idle, but the table grew less than a second ago */
    KT_EQ_INT(a.allocs - before, 0);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_AGAIN(q); /* idle a second later: one smaller table for the old */
    KT_EQ_INT(a.allocs - before, 1);
    KT_EQ_INT(a.frees - freed, 1);
    TQ_AGAIN(q);
    KT_EQ_INT(a.allocs - before, 1);
    for (i = 0; i < 200; i++) { /* every key works after */
        sprintf(key, "ns/b-%05d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    for (i = 0; i < 200; i++) {
        sprintf(key, "ns/b-%05d", i);
        TQ_GET_DONE(q, key);
    }
    TQ_AGAIN(q);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* A key delayed or in flight does not keep a burst's table: a
   controller nearly always has a requeue pending, so a table given back
   only with nothing delayed was kept for good. A second after it grew,
   a get that finds nothing ready gives it back; the delayed key still
   comes at its time, the key in flight still finishes. */
static void tq_map_trimmed_with_keys_delayed(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    const char *k = NULL, *held = NULL;
    long before, freed;
    int i, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, kctl_limiter_exponential(1, KCTL_MS(1)));
    if (!q) return;
    for (i = 0; i < 4096; i++) {
        sprintf(key, "ns/a-%05d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    KT_EQ_INT(kctl_queue_try_get(q, &held), KCTL_OK); /* in flight throughout */
    for (i = 1; i < 4096; i++) {
        if (kctl_queue_try_get(q, &k) != KCTL_OK) bad++;
        else kctl_queue_done(q, k);
    }
    for (i = 0; i < 200; i++) { /* a second wave takes the idle entries out of the map */
        sprintf(key, "ns/b-%05d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    for (i = 0; i < 200; i++) {
        if (kctl_queue_try_get(q, &k) != KCTL_OK) bad++;
        else kctl_queue_done(q, k);
    }
    KT_EQ_INT(kctl_queue_add_after(q, "ns/later", KCTL_SEC(3600)), KCTL_OK);
    before = a.allocs;
    freed = a.frees;
    TQ_AGAIN(q);
    KT_EQ_INT(a.frees - freed, 0); /* it grew less than a second ago */
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_AGAIN(q); /* one smaller table for the old */
    KT_EQ_INT(a.allocs - before, 1);
    KT_EQ_INT(a.frees - freed, 1);
    TQ_AGAIN(q);
    KT_EQ_INT(a.allocs - before, 1);
    KT_EQ_U64(tq_stats(q).delayed, 1);
    KT_EQ_U64(tq_stats(q).processing, 1);
    KT_EQ_STR(held, "ns/a-00000");
    kctl_queue_done(q, held);
    KT_EQ_U64(tq_stats(q).processing, 0);
    KT_EQ_INT(kctl_queue_add(q, "ns/a-00000"), KCTL_OK); /* every key works after */
    TQ_GET_DONE(q, "ns/a-00000");
    kctl_vclock_advance(&vc, KCTL_SEC(3600));
    TQ_GET_DONE(q, "ns/later");
    TQ_AGAIN(q);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* A shrink that finds no memory for the smaller table keeps the old one
   and tries again a period later, not at every get. */
static void tq_map_trim_nomem_retries_later(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    const char *k = NULL;
    long before, freed;
    int i, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, kctl_limiter_exponential(1, KCTL_MS(1)));
    if (!q) return;
    for (i = 0; i < 4096; i++) {
        sprintf(key, "ns/a-%05d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    for (i = 0; i < 4096; i++) {
        if (kctl_queue_try_get(q, &k) != KCTL_OK) bad++;
        else kctl_queue_done(q, k);
    }
    for (i = 0; i < 200; i++) { /* the idle entries out of the map */
        sprintf(key, "ns/b-%05d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    for (i = 0; i < 200; i++) {
        if (kctl_queue_try_get(q, &k) != KCTL_OK) bad++;
        else kctl_queue_done(q, k);
    }
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    before = a.allocs;
    freed = a.frees;
    a.fail_after = 0; /* the smaller table */
    TQ_AGAIN(q);
    KT_EQ_INT(a.fail_count, 1);
    KT_EQ_INT(a.frees - freed, 0);
    a.fail_after = -1;
    TQ_AGAIN(q); /* not again at once */
    kctl_vclock_advance(&vc, KCTL_SEC(1) - 1);
    TQ_AGAIN(q);
    KT_EQ_INT(a.allocs - before, 0);
    kctl_vclock_advance(&vc, 1);
    TQ_AGAIN(q); /* a period after the failure */
    KT_EQ_INT(a.allocs - before, 1);
    KT_EQ_INT(a.frees - freed, 1);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

static void tq_nomem_create(void) {
    kctl_vclock vc;
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    kt_alloc a;
    tq_lim c;
    kt_alloc_init(&a);
    a.fail_after = 0;
    kctl_vclock_init(&vc, 0);
    memset(&d, 0, sizeof d);
    d.clock = kctl_vclock_clock(&vc);
    d.allocator = kt_allocator(&a);
    d.limiter = tq_lim_new(&c, 0, 0);
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_ERR_NOMEM);
    KT_CHECK(a.fail_count > 0);
    KT_EQ_INT(a.live, 0);
    KT_EQ_INT(c.destroy_calls, 1); /* owned even when create fails */
    kctl_vclock_deinit(&vc);
}

static void tq_nomem_add(void) {
    kctl_vclock vc;
    kt_alloc a;
    kctl_queue_stats s;
    char key[32];
    int i, m = 0, rc = KCTL_OK;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    a.fail_after = 0; /* every allocation from now on fails */
    for (i = 0; i < 10000; i++) {
        sprintf(key, "c%d", i);
        rc = kctl_queue_add(q, key);
        if (rc != KCTL_OK) break;
        m++;
    }
    KT_EQ_INT(rc, KCTL_ERR_NOMEM);
    KT_CHECK(a.fail_count > 0);
    /* consistent: the failed key is not queued, the others are */
    KT_EQ_U64(kctl_queue_len(q), (uint64_t)(2 + m));
    s = tq_stats(q);
    KT_EQ_U64(s.adds_total, (uint64_t)(2 + m));
    KT_EQ_U64(s.depth, (uint64_t)(2 + m));
    /* dedup of a key already there needs no memory */
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    a.fail_after = -1;
    sprintf(key, "c%d", m);
    KT_EQ_INT(kctl_queue_add(q, key), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), (uint64_t)(3 + m));
    TQ_GET_DONE(q, "a");
    TQ_GET_DONE(q, "b");
    for (i = 0; i <= m; i++) {
        sprintf(key, "c%d", i);
        TQ_GET_DONE(q, key);
    }
    TQ_AGAIN(q);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* Adds that went through the inbox (kctl.h: kctl__queue_add_inbox) are
   applied when memory fails (the map kept room for them, and would take
   them past its load; only a full one makes them stall, which
   tq_inbox_stalled_at_shutdown covers), in order: an add that returned OK
   is never dropped. Meanwhile a new key takes the lock and gets NOMEM,
   and a key held already is added without memory. (On one CPU the adds
   take the lock and grow the map as they go: the same end.) */
static void tq_nomem_inbox_in_order(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    size_t len;
    int i, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    for (i = 0; i < 200; i++) { /* the first takes the lock and makes room; the rest outrun it */
        sprintf(key, "s-%03d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    a.fail_after = 0;
    len = kctl_queue_len(q);
    KT_CHECK(len > 0 && len <= 200);
    KT_EQ_INT(kctl_queue_add(q, "x"), KCTL_ERR_NOMEM); /* a new key: the lock's add, no memory */
    KT_EQ_INT(kctl_queue_add(q, "s-000"), KCTL_OK);    /* held already: no memory needed */
    KT_EQ_U64(kctl_queue_len(q), len);
    a.fail_after = -1;
    KT_EQ_U64(kctl_queue_len(q), 200); /* the stalled ones applied */
    KT_EQ_INT(kctl_queue_add(q, "x"), KCTL_OK);
    for (i = 0; i < 200; i++) { /* in the order they were added */
        const char *k = NULL;
        sprintf(key, "s-%03d", i);
        if (kctl_queue_try_get(q, &k) != KCTL_OK || strcmp(k, key) != 0) bad++;
        else kctl_queue_done(q, k);
    }
    TQ_GET_DONE(q, "x");
    TQ_AGAIN(q);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* A key added again while it waits is added once, whichever way the adds
   went (the inbox is applied before a key is handed out), and a key
   added over and over while in flight holds one entry, not one per add:
   memory stays bounded. */
static void tq_inbox_dedup_bounded(void) {
    kctl_vclock vc;
    kt_alloc a;
    const char *k = NULL;
    long i, live;
    int bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 2);
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK); /* queued already: nothing */
    TQ_TAKE(q, "a");
    TQ_TAKE(q, "k");
    kctl_queue_done(q, "a");
    kctl_queue_done(q, "k"); /* (not run again: its second add was of a waiting key) */
    TQ_AGAIN(q);
    KT_EQ_INT(kctl_queue_add(q, "hot"), KCTL_OK);
    KT_EQ_INT(kctl_queue_try_get(q, &k), KCTL_OK); /* in flight */
    live = a.live;
    for (i = 0; i < 100000; i++)
        if (kctl_queue_add(q, "hot") != KCTL_OK) bad++;
    KT_CHECK(a.live <= live + 1800); /* (pooled entries at most: tq_idle_entries_bounded) */
    KT_EQ_U64(kctl_queue_len(q), 0); /* held back until done */
    if (k) kctl_queue_done(q, k);
    TQ_GET_DONE(q, "hot"); /* once */
    TQ_AGAIN(q);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

static void tq_nomem_add_after(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    int i, m = 0, rc = KCTL_OK;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    a.fail_after = 0;
    for (i = 0; i < 10000; i++) {
        sprintf(key, "d%d", i);
        rc = kctl_queue_add_after(q, key, KCTL_SEC(1));
        if (rc != KCTL_OK) break;
        m++;
    }
    KT_EQ_INT(rc, KCTL_ERR_NOMEM);
    KT_EQ_U64(tq_stats(q).delayed, (uint64_t)m);
    a.fail_after = -1;
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_U64(kctl_queue_len(q), (uint64_t)m);
    for (i = 0; i < m; i++) {
        sprintf(key, "d%d", i);
        TQ_GET_DONE(q, key);
    }
    TQ_AGAIN(q);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* Out of memory while re-adding a key in flight: either it is held back (OK) or not (NOMEM). */
static void tq_nomem_held_back(void) {
    kctl_vclock vc;
    kt_alloc a;
    int rc;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    TQ_TAKE(q, "k");
    a.fail_after = 0;
    rc = kctl_queue_add(q, "k");
    KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOMEM);
    kctl_queue_done(q, "k");
    KT_EQ_U64(kctl_queue_len(q), rc == KCTL_OK ? 1 : 0);
    if (rc == KCTL_OK) TQ_GET_DONE(q, "k");
    TQ_AGAIN(q);
    a.fail_after = -1;
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* One scripted run with allocation failures injected from fail_after on;
   transient: only one failure, then memory is back. Counts bad results. */
static int tq_sweep_run(long fail_after, int transient, long *injected) {
    kctl_vclock vc;
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    kctl_queue_stats s;
    kt_alloc a;
    tq_lim lim;
    char key[400];
    int rc, i, round, bad = 0;

#define TQ_SWEEP_TICK() do { if (transient && a.fail_count > 0) a.fail_after = -1; } while (0)
#define TQ_SWEEP_OP(expr) do { rc = (expr); if (rc != KCTL_OK && rc != KCTL_ERR_NOMEM) { bad++; \
        kt_fail(__FILE__, __LINE__, "fail_after %ld: %s -> %d", fail_after, #expr, rc); } TQ_SWEEP_TICK(); } while (0)

    kt_alloc_init(&a);
    a.fail_after = fail_after;
    kctl_vclock_init(&vc, KCTL_SEC(10));
    memset(&d, 0, sizeof d);
    d.clock = kctl_vclock_clock(&vc);
    d.allocator = kt_allocator(&a);
    d.limiter = tq_lim_new(&lim, KCTL_MS(100), 0);
    rc = kctl_queue_create(&d, &q);
    TQ_SWEEP_TICK();
    if (rc != KCTL_OK) {
        if (rc != KCTL_ERR_NOMEM) bad++;
        if (a.live != 0) bad++;
        if (lim.destroy_calls != 1) bad++;
        *injected = a.fail_count;
        kctl_vclock_deinit(&vc);
        return bad;
    }
    for (i = 0; i < 12; i++) {
        if (i % 4 == 3) { memset(key, 'x', 300); sprintf(key + 300, "-%d", i); }
        else sprintf(key, "key-%d", i);
        TQ_SWEEP_OP(kctl_queue_add(q, key));
    }
    TQ_SWEEP_OP(kctl_queue_add(q, "key-0"));
    TQ_SWEEP_OP(kctl_queue_add_after(q, "d0", KCTL_SEC(1)));
    TQ_SWEEP_OP(kctl_queue_add_after(q, "d1", KCTL_SEC(2)));
    TQ_SWEEP_OP(kctl_queue_add_after(q, "d0", KCTL_MS(500)));
    TQ_SWEEP_OP(kctl_queue_add_after(q, "d2", 0));
    TQ_SWEEP_OP(kctl_queue_add_rate_limited(q, "r0"));
    for (round = 0; round < 8; round++) {
        for (i = 0; i < 4; i++) {
            const char *k = NULL;
            char held[400];
            rc = kctl_queue_try_get(q, &k);
            if (rc == KCTL_ERR_AGAIN) break;
            if (rc != KCTL_OK || !k) { bad++; break; }
            strncpy(held, k, sizeof held - 1);
            held[sizeof held - 1] = '\0';
            if (round % 2 == 0) TQ_SWEEP_OP(kctl_queue_add(q, held)); /* held back */
            if (round % 3 == 0) TQ_SWEEP_OP(kctl_queue_add_after(q, held, KCTL_MS(300)));
            sprintf(key, "new-%d-%d", round, i);
            TQ_SWEEP_OP(kctl_queue_add(q, key));
            kctl_queue_done(q, held);
        }
        kctl_vclock_advance(&vc, KCTL_MS(700));
        if (kctl_queue_read_stats(q, &s) != KCTL_OK) bad++;
    }
    kctl_queue_shutdown(q);
    for (i = 0; i < 500; i++) {
        const char *k = NULL;
        rc = kctl_queue_try_get(q, &k);
        if (rc == KCTL_ERR_SHUTDOWN) break;
        if (rc != KCTL_OK) { bad++; break; }
        kctl_queue_done(q, k);
    }
    if (rc != KCTL_ERR_SHUTDOWN) bad++;
    if (kctl_queue_read_stats(q, &s) != KCTL_OK) bad++;
    if (s.processing != 0 || s.depth != 0 || s.delayed != 0) {
        bad++;
        kt_fail(__FILE__, __LINE__, "fail_after %ld: processing %llu depth %llu delayed %llu", fail_after,
                (unsigned long long)s.processing, (unsigned long long)s.depth, (unsigned long long)s.delayed);
    }
    kctl_queue_destroy(q);
    if (a.live != 0) {
        bad++;
        kt_fail(__FILE__, __LINE__, "fail_after %ld: %ld blocks leaked", fail_after, a.live);
    }
    if (lim.destroy_calls != 1) bad++;
    kctl_vclock_deinit(&vc);
    *injected = a.fail_count;
    return bad;
#undef TQ_SWEEP_OP
#undef TQ_SWEEP_TICK
}

static void tq_nomem_sweep(void) {
    int transient;
    for (transient = 0; transient <= 1; transient++) {
        long n, injected = 1;
        int bad = 0;
        for (n = 0; n < 3000 && injected > 0; n++)
            bad += tq_sweep_run(n, transient, &injected);
        KT_EQ_INT(bad, 0);
        KT_EQ_INT(injected, 0); /* the sweep reached a run with no failure left to inject */
        KT_CHECK(n > 1);
    }
}

/* ----------------------------------------------------------------- stats */

static void tq_histogram_bounds(void) {
    uint64_t b = 10;
    int i;
    for (i = 0; i < KCTL_HIST_BUCKETS; i++) {
        KT_EQ_U64(kctl_histogram_bound_ns(i), b);
        b *= 10;
    }
    KT_EQ_U64(kctl_histogram_bound_ns(8), KCTL_SEC(1));
    KT_EQ_U64(kctl_histogram_bound_ns(11), KCTL_SEC(1000));
    KT_EQ_U64(kctl_histogram_bound_ns(KCTL_HIST_BUCKETS), UINT64_MAX);
}

static void tq_stats_depth_adds(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    kctl_queue *q = tq_new_named(&vc, 0, NULL, "tq");
    if (!q) return;
    s = tq_stats(q);
    KT_EQ_U64(s.depth, 0);
    KT_EQ_U64(s.adds_total, 0);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    s = tq_stats(q);
    KT_EQ_U64(s.depth, 2);
    KT_EQ_U64(s.adds_total, 2);
    TQ_TAKE(q, "a");
    s = tq_stats(q);
    KT_EQ_U64(s.depth, 1);
    KT_EQ_U64(s.processing, 1);
    /* added while processing: counted (adds and depth) until handed out again */
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    s = tq_stats(q);
    KT_EQ_U64(s.depth, 2);
    KT_EQ_U64(s.adds_total, 3);
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK); /* already waiting for done: deduped */
    s = tq_stats(q);
    KT_EQ_U64(s.depth, 2);
    KT_EQ_U64(s.adds_total, 3);
    TQ_GET_DONE(q, "b");
    KT_EQ_U64(tq_stats(q).depth, 1);
    kctl_queue_done(q, "a");
    s = tq_stats(q);
    KT_EQ_U64(s.depth, 1);
    KT_EQ_U64(s.processing, 0);
    KT_EQ_U64(s.adds_total, 3);
    TQ_GET_DONE(q, "a");
    s = tq_stats(q);
    KT_EQ_U64(s.depth, 0);
    KT_EQ_U64(s.adds_total, 3);
    KT_EQ_U64(s.retries_total, 0);
    KT_EQ_U64(s.queue_duration.count, KT_DUR(3));
    KT_EQ_U64(s.work_duration.count, KT_DUR(3));
    tq_free(q, &vc);
}

static void tq_stats_retries(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    kctl_queue *q = tq_new(&vc, 0, kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000)));
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "a", 0), KCTL_OK);
    s = tq_stats(q);
    KT_EQ_U64(s.retries_total, 1);
    KT_EQ_U64(s.adds_total, 1);
    KT_EQ_INT(kctl_queue_add_after(q, "b", KCTL_SEC(1)), KCTL_OK);
    s = tq_stats(q);
    KT_EQ_U64(s.retries_total, 2);
    KT_EQ_U64(s.adds_total, 1);  /* b is not added before its time */
    KT_EQ_U64(s.depth, 1);
    KT_EQ_INT(kctl_queue_add_after(q, "b", KCTL_SEC(2)), KCTL_OK); /* merged, still a retry */
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "c"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "d"), KCTL_OK);
    s = tq_stats(q);
    KT_EQ_U64(s.retries_total, 4);
    KT_EQ_U64(s.adds_total, 2);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_U64(kctl_queue_len(q), 4);
    s = tq_stats(q);
    KT_EQ_U64(s.adds_total, 4);
    KT_EQ_U64(s.depth, 4);
    KT_EQ_U64(s.retries_total, 4);
    kctl_queue_shutdown(q);
    KT_EQ_INT(kctl_queue_add_after(q, "e", 0), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_add_after(q, "e", KCTL_SEC(1)), KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "e"), KCTL_ERR_SHUTDOWN);
    s = tq_stats(q);
    KT_EQ_U64(s.retries_total, 4);
    KT_EQ_U64(s.adds_total, 4);
    tq_free(q, &vc);
}

static void tq_stats_durations(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    int i;
    kctl_queue *q = tq_new_named(&vc, KCTL_SEC(1000), NULL, "tq");
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    TQ_TAKE(q, "a");                    /* queued 2 s */
    s = tq_stats(q);
    KT_EQ_U64(s.queue_duration.count, KT_DUR(1));
    KT_EQ_U64(s.queue_duration.sum_ns, KT_DUR(KCTL_SEC(2)));
    KT_EQ_U64(s.work_duration.count, KT_DUR(0));
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_TAKE(q, "b");                    /* queued 3 s */
    kctl_vclock_advance(&vc, KCTL_MS(500));
    kctl_queue_done(q, "a");            /* worked 1.5 s */
    kctl_queue_done(q, "b");            /* worked 0.5 s */
    s = tq_stats(q);
    KT_EQ_U64(s.queue_duration.count, KT_DUR(2));
    KT_EQ_U64(s.queue_duration.sum_ns, KT_DUR(KCTL_SEC(5)));
    KT_EQ_U64(s.work_duration.count, KT_DUR(2));
    KT_EQ_U64(s.work_duration.sum_ns, KT_DUR(KCTL_SEC(2)));
    for (i = 0; i < KCTL_HIST_BUCKETS; i++) {
        /* cumulative: observations <= bound(i); bound(8) = 1 s, bound(9) = 10 s */
        KT_EQ_U64(s.queue_duration.buckets[i], KT_DUR(i <= 8 ? 0 : 2));
        KT_EQ_U64(s.work_duration.buckets[i], KT_DUR(i <= 7 ? 0 : i == 8 ? 1 : 2));
    }
    tq_free(q, &vc);
}

/* Bucket edges: 0 lands in the first bucket, exactly a bound lands in its bucket,
   beyond the last bound in none (only in count). */
static void tq_stats_histogram_edges(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    int i;
    kctl_queue *q = tq_new_named(&vc, 0, NULL, "tq");
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "zero"), KCTL_OK);
    TQ_GET_DONE(q, "zero");            /* queue 0, work 0 */
    KT_EQ_INT(kctl_queue_add(q, "one"), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_GET_DONE(q, "one");             /* queue exactly 1 s */
    KT_EQ_INT(kctl_queue_add(q, "long"), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(2000));
    TQ_GET_DONE(q, "long");            /* queue 2000 s: past the last bound */
    s = tq_stats(q);
    KT_EQ_U64(s.queue_duration.count, KT_DUR(3));
    KT_EQ_U64(s.queue_duration.sum_ns, KT_DUR(KCTL_SEC(2001)));
    for (i = 0; i < KCTL_HIST_BUCKETS; i++) {
        KT_EQ_U64(s.queue_duration.buckets[i], KT_DUR(i < 8 ? 1 : 2));
        KT_EQ_U64(s.work_duration.buckets[i], KT_DUR(3));
    }
    KT_EQ_U64(s.work_duration.count, KT_DUR(3));
    KT_EQ_U64(s.work_duration.sum_ns, KT_DUR(0));
    tq_free(q, &vc);
}

/* client-go: a key added while processing is timed in the queue from that add. */
static void tq_stats_queue_duration_held_back(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    kctl_queue *q = tq_new_named(&vc, 0, NULL, "tq");
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    TQ_TAKE(q, "a");
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK); /* deduped: the first add's time stays */
    kctl_queue_done(q, "a");
    kctl_vclock_advance(&vc, KCTL_SEC(3));
    TQ_GET_DONE(q, "a");
    s = tq_stats(q);
    KT_EQ_U64(s.queue_duration.count, KT_DUR(2));
    KT_EQ_U64(s.queue_duration.sum_ns, KT_DUR(KCTL_SEC(5))); /* 0 + (1 s .. 6 s) */
    KT_EQ_U64(s.work_duration.count, KT_DUR(2));
    KT_EQ_U64(s.work_duration.sum_ns, KT_DUR(KCTL_SEC(3)));
    tq_free(q, &vc);
}

/* A delayed key is added at its ready time: queue time counts from then. */
static void tq_stats_queue_duration_delayed(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    kctl_queue *q = tq_new_named(&vc, 0, NULL, "tq");
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    TQ_GET_DONE(q, "k");
    s = tq_stats(q);
    KT_EQ_U64(s.queue_duration.count, KT_DUR(1));
    KT_EQ_U64(s.queue_duration.sum_ns, KT_DUR(KCTL_SEC(2)));
    tq_free(q, &vc);
}

/* The figures are current when read: a delayed key whose time has come is counted. */
static void tq_stats_delayed_promoted_on_read(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "j", KCTL_SEC(2)), KCTL_OK);
    s = tq_stats(q);
    KT_EQ_U64(s.delayed, 2);
    KT_EQ_U64(s.depth, 0);
    KT_EQ_U64(s.adds_total, 0);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    s = tq_stats(q);
    KT_EQ_U64(s.delayed, 1);
    KT_EQ_U64(s.depth, 1);
    KT_EQ_U64(s.adds_total, 1);
    tq_free(q, &vc);
}

static void tq_stats_unfinished(void) {
    kctl_vclock vc;
    kctl_queue_stats s;
    kctl_queue *q = tq_new_named(&vc, KCTL_SEC(1000), NULL, "tq");
    if (!q) return;
    s = tq_stats(q);
    KT_EQ_U64(s.unfinished_work_ns, KT_DUR(0));
    KT_EQ_U64(s.longest_running_ns, KT_DUR(0));
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_after(q, "d", KCTL_SEC(100)), KCTL_OK);
    TQ_TAKE(q, "a");
    kctl_vclock_advance(&vc, KCTL_SEC(3));
    TQ_TAKE(q, "b");
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    s = tq_stats(q);
    KT_EQ_U64(s.processing, 2);
    KT_EQ_U64(s.delayed, 1);
    KT_EQ_U64(s.depth, 1);
    KT_EQ_U64(s.unfinished_work_ns, KT_DUR(KCTL_SEC(7))); /* 5 s + 2 s */
    KT_EQ_U64(s.longest_running_ns, KT_DUR(KCTL_SEC(5)));
    kctl_queue_done(q, "a");
    s = tq_stats(q);
    KT_EQ_U64(s.processing, 1);
    KT_EQ_U64(s.unfinished_work_ns, KT_DUR(KCTL_SEC(2)));
    KT_EQ_U64(s.longest_running_ns, KT_DUR(KCTL_SEC(2)));
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    s = tq_stats(q);
    KT_EQ_U64(s.unfinished_work_ns, KT_DUR(KCTL_SEC(3)));
    KT_EQ_U64(s.longest_running_ns, KT_DUR(KCTL_SEC(3)));
    kctl_queue_done(q, "b");
    s = tq_stats(q);
    KT_EQ_U64(s.processing, 0);
    KT_EQ_U64(s.unfinished_work_ns, KT_DUR(0));
    KT_EQ_U64(s.longest_running_ns, KT_DUR(0));
    KT_EQ_U64(s.delayed, 1);
    KT_EQ_U64(s.idle_workers, 0);
    tq_free(q, &vc);
}

/* -------------------------------------------------------- no threads */

static void tq_nothreads_get_does_not_block(void) {
#ifdef KCTL_NO_THREADS
    kctl_vclock vc;
    const char *k = NULL;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_get(q, &k), KCTL_ERR_AGAIN);
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(1)), KCTL_OK);
    KT_EQ_INT(kctl_queue_get(q, &k), KCTL_ERR_AGAIN);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_INT(kctl_queue_get(q, &k), KCTL_OK);
    KT_EQ_STR(k, "k");
    kctl_queue_shutdown_with_drain(q); /* k in flight: does not wait */
    KT_CHECK(kctl_queue_shutting_down(q));
    kctl_queue_done(q, "k");
    KT_EQ_INT(kctl_queue_get(q, &k), KCTL_ERR_SHUTDOWN);
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

/* ---------------------------------------------------------------- threads */

#ifndef KCTL_NO_THREADS

#define TQ_SPIN_LIMIT 5000000L

typedef struct tq_worker {
    kctl_queue *q;
    pthread_t th;
    int rc;
    char key[64];
    int finished; /* atomic */
} tq_worker;

static void *tq_worker_get_one(void *arg) {
    tq_worker *w = (tq_worker *)arg;
    const char *k = NULL;
    int rc = kctl_queue_get(w->q, &k);
    if (rc == KCTL_OK && k) {
        strncpy(w->key, k, sizeof w->key - 1);
        w->key[sizeof w->key - 1] = '\0';
    }
    w->rc = rc;
    __atomic_store_n(&w->finished, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int tq_start_get_one(tq_worker *w, kctl_queue *q) {
    memset(w, 0, sizeof *w);
    w->q = q;
    w->rc = 1;
    if (pthread_create(&w->th, NULL, tq_worker_get_one, w) != 0) {
        kt_fail(__FILE__, __LINE__, "pthread_create failed");
        return 0;
    }
    return 1;
}

/* Spin (no sleep) until n workers are parked in get; bounded. */
static int tq_wait_idle(kctl_queue *q, uint32_t n) {
    long i;
    for (i = 0; i < TQ_SPIN_LIMIT; i++) {
        kctl_queue_stats s;
        if (kctl_queue_read_stats(q, &s) == KCTL_OK && s.idle_workers == n) return 1;
        sched_yield();
    }
    return 0;
}

static int tq_wait_finished(tq_worker *w) {
    long i;
    for (i = 0; i < TQ_SPIN_LIMIT; i++) {
        if (__atomic_load_n(&w->finished, __ATOMIC_SEQ_CST)) return 1;
        sched_yield();
    }
    return 0;
}

/* Finish a get_one worker: if it never returned, try to release it with
   shutdown and a clock tick (a broken wake-up may still hang here). */
static void tq_join_get_one(tq_worker *w, kctl_vclock *vc) {
    if (!tq_wait_finished(w)) {
        kt_fail(__FILE__, __LINE__, "worker blocked in kctl_queue_get did not wake");
        kctl_queue_shutdown(w->q);
        kctl_vclock_advance(vc, 1);
    }
    pthread_join(w->th, NULL);
}

#endif /* KCTL_NO_THREADS */

/* A queue whose workers park for good after a burst still gives the
   burst's grown table back: a parked worker waits no longer than until
   it may shrink (KCTL__QUEUE_TRIM_NS after it last grew), on the real
   clock, with a key delayed for an hour (not until that key is due).
   The allocator counts under its own lock (the worker frees, the test
   reads) the live blocks of 128 KiB or more: the table of 20,000
   keys is one, and the only one (it is mostly empty when they are done:
   the 1,024 idle entries a default build keeps in it are under 1/16). */
#ifndef KCTL_NO_THREADS
#define TQ_BIG ((size_t)128 << 10)
typedef struct tq_lalloc {
    pthread_mutex_t mu;
    long live, big;
} tq_lalloc;
static void *tq_lalloc_fn(size_t size, void *user_data) {
    tq_lalloc *a = (tq_lalloc *)user_data;
    size_t *p = (size_t *)malloc(size + 16);
    if (!p) return NULL;
    p[0] = size; /* a 16-byte header: the size, for the free */
    pthread_mutex_lock(&a->mu);
    a->live++;
    if (size >= TQ_BIG) a->big++;
    pthread_mutex_unlock(&a->mu);
    return (char *)p + 16;
}
static void tq_lfree_fn(void *ptr, void *user_data) {
    tq_lalloc *a = (tq_lalloc *)user_data;
    size_t *p;
    if (!ptr) return;
    p = (size_t *)(void *)((char *)ptr - 16);
    pthread_mutex_lock(&a->mu);
    a->live--;
    if (p[0] >= TQ_BIG) a->big--;
    pthread_mutex_unlock(&a->mu);
    free(p);
}
static long tq_lalloc_read(tq_lalloc *a, long *big) {
    long n;
    pthread_mutex_lock(&a->mu);
    n = a->live;
    if (big) *big = a->big;
    pthread_mutex_unlock(&a->mu);
    return n;
}
static long tq_lalloc_big(tq_lalloc *a) {
    long big;
    (void)tq_lalloc_read(a, &big);
    return big;
}
static void *tq_drain_all(void *arg) {
    kctl_queue *q = (kctl_queue *)arg;
    const char *k;
    while (kctl_queue_get(q, &k) == KCTL_OK) kctl_queue_done(q, k);
    return NULL;
}
#endif

static void tq_thread_parked_worker_trims(void) {
#ifndef KCTL_NO_THREADS
    tq_lalloc a;
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    pthread_t th;
    char key[32];
    long i, polls;
    int bad = 0;
    struct timespec ms10 = { 0, 10000000L };
    kctl_queue_stats st;
    memset(&a, 0, sizeof a);
    pthread_mutex_init(&a.mu, NULL);
    memset(&d, 0, sizeof d); /* the real clock */
    d.allocator.alloc_fn = tq_lalloc_fn;
    d.allocator.free_fn = tq_lfree_fn;
    d.allocator.user_data = &a;
    if (kctl_queue_create(&d, &q) != KCTL_OK) { kt_fail(__FILE__, __LINE__, "kctl_queue_create"); return; }
    KT_EQ_INT(tq_lalloc_big(&a), 0);
    for (i = 0; i < 20000; i++) { /* the burst, queued before the worker starts: the table grows */
        sprintf(key, "ns/burst-%05ld", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    KT_EQ_INT(kctl_queue_add_after(q, "ns/later", KCTL_SEC(3600)), KCTL_OK); /* the worker waits less than this */
    KT_EQ_INT(bad, 0);
    KT_EQ_INT(tq_lalloc_big(&a), 1); /* (nothing shrinks it before a get finds the queue empty) */
    if (pthread_create(&th, NULL, tq_drain_all, q) != 0) { kt_fail(__FILE__, __LINE__, "pthread_create"); kctl_queue_destroy(q); return; }
    for (polls = 0; polls < 1000; polls++) { /* the worker has them all, then parks */
        st = tq_stats(q);
        if (!st.depth && !st.processing && st.idle_workers == 1) break;
        nanosleep(&ms10, NULL);
    }
    for (polls = 0; polls < 1000 && tq_lalloc_big(&a) > 0; polls++) nanosleep(&ms10, NULL); /* up to 10 s */
    KT_EQ_INT(tq_lalloc_big(&a), 0);
    KT_CHECK(tq_lalloc_read(&a, NULL) <= 1800); /* the pooled entries (tq_idle_entries_bounded), the smaller table, the queue */
    for (polls = 0; polls < 1000 && tq_stats(q).idle_workers != 1; polls++) nanosleep(&ms10, NULL);
    KT_EQ_U64(tq_stats(q).idle_workers, 1); /* parked again */
    kctl_queue_shutdown(q);
    pthread_join(th, NULL);
    kctl_queue_destroy(q);
    KT_EQ_INT(tq_lalloc_read(&a, NULL), 0);
    pthread_mutex_destroy(&a.mu);
#else
    KT_SKIP();
#endif
}

static void tq_thread_wake_on_add(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    tq_worker w;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    if (!tq_start_get_one(&w, q)) { tq_free(q, &vc); return; }
    KT_CHECK(tq_wait_idle(q, 1));
    KT_EQ_INT(__atomic_load_n(&w.finished, __ATOMIC_SEQ_CST), 0);
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    tq_join_get_one(&w, &vc);
    KT_EQ_INT(w.rc, KCTL_OK);
    KT_EQ_STR(w.key, "k");
    KT_EQ_U64(tq_stats(q).processing, 1);
    KT_EQ_U64(tq_stats(q).idle_workers, 0);
    kctl_queue_done(q, "k");
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

/* A worker blocked on a delayed key wakes when the virtual clock makes it ready. */
static void tq_thread_vclock_wake(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    tq_worker w;
    kctl_queue *q = tq_new(&vc, KCTL_SEC(100), NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(1)), KCTL_OK);
    if (!tq_start_get_one(&w, q)) { tq_free(q, &vc); return; }
    KT_CHECK(tq_wait_idle(q, 1));
    KT_EQ_INT(__atomic_load_n(&w.finished, __ATOMIC_SEQ_CST), 0);
    kctl_vclock_advance(&vc, KCTL_SEC(1) - 1); /* not yet: it parks again */
    KT_CHECK(tq_wait_idle(q, 1));
    KT_EQ_INT(__atomic_load_n(&w.finished, __ATOMIC_SEQ_CST), 0);
    kctl_vclock_advance(&vc, 1);
    tq_join_get_one(&w, &vc);
    KT_EQ_INT(w.rc, KCTL_OK);
    KT_EQ_STR(w.key, "k");
    kctl_queue_done(q, "k");
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

#ifndef KCTL_NO_THREADS
/* A clock the test sets by hand and that does not subscribe waiters: the
   queue treats it as one that moves with real time (timed waits). */
static uint64_t tq_manual_ns; /* atomic */
static uint64_t tq_manual_now(void *user_data) {
    (void)user_data;
    return __atomic_load_n(&tq_manual_ns, __ATOMIC_SEQ_CST);
}
#endif

/* Every key that becomes ready wakes a parked worker of its own, as
   client-go's Add signals once per key: two delayed keys made ready by one
   promotion (here by len) go to two parked workers at once. */
static void tq_thread_ready_keys_wake_each_worker(void) {
#ifndef KCTL_NO_THREADS
    kctl_queue_desc d = kctl_queue_desc_init();
    kctl_queue *q = NULL;
    tq_worker w[2];
    long i;
    int n, started = 0;
    __atomic_store_n(&tq_manual_ns, KCTL_SEC(10), __ATOMIC_SEQ_CST);
    d.clock.now_fn = tq_manual_now;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    if (!q) return;
    for (n = 0; n < 2; n++) started += tq_start_get_one(&w[n], q);
    if (started == 2) {
        KT_CHECK(tq_wait_idle(q, 2));
        /* the first key's hour is far away in real time: a worker that is
           not woken for the second key would sleep through the test */
        KT_EQ_INT(kctl_queue_add_after(q, "a", KCTL_SEC(3600)), KCTL_OK);
        KT_EQ_INT(kctl_queue_add_after(q, "b", KCTL_SEC(3600)), KCTL_OK);
        __atomic_store_n(&tq_manual_ns, KCTL_SEC(10) + KCTL_SEC(3600), __ATOMIC_SEQ_CST);
        /* promotes both; a worker woken by the adds may have read the new
           time first and taken one already, so one or two are left */
        KT_CHECK(kctl_queue_len(q) <= 2);
        for (i = 0; i < TQ_SPIN_LIMIT; i++) {
            if (__atomic_load_n(&w[0].finished, __ATOMIC_SEQ_CST) && __atomic_load_n(&w[1].finished, __ATOMIC_SEQ_CST))
                break;
            sched_yield();
        }
        KT_CHECK(__atomic_load_n(&w[0].finished, __ATOMIC_SEQ_CST));
        KT_CHECK(__atomic_load_n(&w[1].finished, __ATOMIC_SEQ_CST));
    }
    kctl_queue_shutdown(q); /* releases a worker left behind */
    for (n = 0; n < started; n++) pthread_join(w[n].th, NULL);
    if (started == 2) {
        KT_EQ_INT(w[0].rc, KCTL_OK);
        KT_EQ_INT(w[1].rc, KCTL_OK);
        KT_CHECK(strcmp(w[0].key, w[1].key) != 0);
    }
    kctl_queue_destroy(q);
#else
    KT_SKIP();
#endif
}

/* A worker parked on an empty queue learns of a later add_after, then wakes at its time. */
static void tq_thread_vclock_wake_new_deadline(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    tq_worker w;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    if (!tq_start_get_one(&w, q)) { tq_free(q, &vc); return; }
    KT_CHECK(tq_wait_idle(q, 1));
    KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(3)), KCTL_OK);
    KT_CHECK(tq_wait_idle(q, 1));
    KT_EQ_INT(__atomic_load_n(&w.finished, __ATOMIC_SEQ_CST), 0);
    kctl_vclock_advance(&vc, KCTL_SEC(3));
    tq_join_get_one(&w, &vc);
    KT_EQ_INT(w.rc, KCTL_OK);
    KT_EQ_STR(w.key, "k");
    kctl_queue_done(q, "k");
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

static void tq_thread_shutdown_wakes_get(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    tq_worker w[2];
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_after(q, "later", KCTL_SEC(1)), KCTL_OK);
    if (!tq_start_get_one(&w[0], q)) { tq_free(q, &vc); return; }
    if (!tq_start_get_one(&w[1], q)) { kctl_queue_shutdown(q); pthread_join(w[0].th, NULL); tq_free(q, &vc); return; }
    KT_CHECK(tq_wait_idle(q, 2));
    kctl_queue_shutdown(q);
    tq_join_get_one(&w[0], &vc);
    tq_join_get_one(&w[1], &vc);
    KT_EQ_INT(w[0].rc, KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(w[1].rc, KCTL_ERR_SHUTDOWN);
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

/* done of a held-back key wakes a parked worker. */
static void tq_thread_done_wakes_get(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    tq_worker w;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    TQ_TAKE(q, "k");
    KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
    if (!tq_start_get_one(&w, q)) { tq_free(q, &vc); return; }
    KT_CHECK(tq_wait_idle(q, 1));
    KT_EQ_INT(__atomic_load_n(&w.finished, __ATOMIC_SEQ_CST), 0);
    kctl_queue_done(q, "k");
    tq_join_get_one(&w, &vc);
    KT_EQ_INT(w.rc, KCTL_OK);
    KT_EQ_STR(w.key, "k");
    kctl_queue_done(q, "k");
    TQ_AGAIN(q);
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

#ifndef KCTL_NO_THREADS
typedef struct tq_drainer {
    kctl_queue *q;
    int returned; /* atomic */
} tq_drainer;
static void *tq_drainer_main(void *arg) {
    tq_drainer *d = (tq_drainer *)arg;
    kctl_queue_shutdown_with_drain(d->q);
    __atomic_store_n(&d->returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
#endif

/* shutdown_with_drain blocks until every handed-out key is done. */
static void tq_thread_drain_waits_for_done(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    tq_drainer dr;
    pthread_t th;
    long i;
    int early = 0, seen = 0;
    kctl_queue *q = tq_new(&vc, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    TQ_TAKE(q, "a");
    TQ_TAKE(q, "b");
    dr.q = q;
    dr.returned = 0;
    if (pthread_create(&th, NULL, tq_drainer_main, &dr) != 0) {
        kt_fail(__FILE__, __LINE__, "pthread_create failed");
        tq_free(q, &vc);
        return;
    }
    for (i = 0; i < TQ_SPIN_LIMIT; i++) {
        if (kctl_queue_shutting_down(q)) { seen = 1; break; }
        sched_yield();
    }
    KT_CHECK(seen);
    for (i = 0; i < 20000; i++) {
        if (__atomic_load_n(&dr.returned, __ATOMIC_SEQ_CST)) early++;
        sched_yield();
    }
    KT_EQ_INT(early, 0);
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_ERR_SHUTDOWN);
    kctl_queue_done(q, "a");
    for (i = 0; i < 20000; i++) {
        if (__atomic_load_n(&dr.returned, __ATOMIC_SEQ_CST)) early++;
        sched_yield();
    }
    KT_EQ_INT(early, 0); /* b is still in flight */
    kctl_queue_done(q, "b");
    for (i = 0; i < TQ_SPIN_LIMIT && !__atomic_load_n(&dr.returned, __ATOMIC_SEQ_CST); i++)
        sched_yield();
    KT_EQ_INT(__atomic_load_n(&dr.returned, __ATOMIC_SEQ_CST), 1);
    pthread_join(th, NULL);
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

/* ----------------------------------------------------------------- stress */

#ifndef KCTL_NO_THREADS
#define TQ_NKEYS 64

typedef struct tq_stress {
    kctl_queue *q;
    kctl_vclock *vc;
    int delayed;                 /* producers use add_after with small delays */
    int adds_per_producer;
    pthread_mutex_t mu[TQ_NKEYS];
    uint64_t seq[TQ_NKEYS];      /* last sequence added (under mu) */
    uint64_t processed[TQ_NKEYS];/* sequence seen by the last get (under mu) */
    int held[TQ_NKEYS];          /* a worker holds the key (under mu) */
    long overlaps[TQ_NKEYS];     /* a key handed to a second worker while held */
    long gets[TQ_NKEYS];
    long bad_rc, bad_key;        /* under mu[0] */
    int producers_done;          /* atomic */
} tq_stress;

typedef struct tq_stress_arg {
    tq_stress *st;
    int id;
    int last_rc;
    int finished; /* atomic */
} tq_stress_arg;

static void *tq_stress_producer(void *arg) {
    tq_stress_arg *pa = (tq_stress_arg *)arg;
    tq_stress *st = pa->st;
    uint32_t x = 2463534242u + (uint32_t)pa->id * 7919u;
    long bad = 0;
    int i;
    for (i = 0; i < st->adds_per_producer; i++) {
        char key[16];
        int k, rc;
        x ^= x << 13; x ^= x >> 17; x ^= x << 5; /* xorshift: a fixed sequence per producer */
        k = (int)(x % TQ_NKEYS);
        sprintf(key, "s%d", k);
        pthread_mutex_lock(&st->mu[k]);
        st->seq[k]++;
        rc = st->delayed ? kctl_queue_add_after(st->q, key, KCTL_MS(x % 3)) : kctl_queue_add(st->q, key);
        pthread_mutex_unlock(&st->mu[k]);
        if (rc != KCTL_OK) bad++;
    }
    if (bad) {
        pthread_mutex_lock(&st->mu[0]);
        st->bad_rc += bad;
        pthread_mutex_unlock(&st->mu[0]);
    }
    return NULL;
}

static void *tq_stress_worker(void *arg) {
    tq_stress_arg *wa = (tq_stress_arg *)arg;
    tq_stress *st = wa->st;
    const char *key = NULL;
    long n = 0;
    int rc;
    while ((rc = kctl_queue_get(st->q, &key)) == KCTL_OK) {
        char *end = NULL;
        long k = (key && key[0] == 's') ? strtol(key + 1, &end, 10) : -1;
        if (k < 0 || k >= TQ_NKEYS || !end || *end != '\0') {
            pthread_mutex_lock(&st->mu[0]);
            st->bad_key++;
            pthread_mutex_unlock(&st->mu[0]);
            kctl_queue_done(st->q, key);
            continue;
        }
        pthread_mutex_lock(&st->mu[k]);
        if (st->held[k]) st->overlaps[k]++;
        st->held[k] = 1;
        st->processed[k] = st->seq[k];
        st->gets[k]++;
        pthread_mutex_unlock(&st->mu[k]);
        if (++n % 4 == 0) sched_yield(); /* "work": widen the window for an overlap */
        pthread_mutex_lock(&st->mu[k]);
        st->held[k] = 0;
        pthread_mutex_unlock(&st->mu[k]);
        kctl_queue_done(st->q, key);
    }
    wa->last_rc = rc;
    __atomic_store_n(&wa->finished, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *tq_stress_advancer(void *arg) {
    tq_stress *st = (tq_stress *)arg;
    while (!__atomic_load_n(&st->producers_done, __ATOMIC_SEQ_CST)) {
        kctl_vclock_advance(st->vc, KCTL_MS(1));
        sched_yield();
    }
    return NULL;
}

static void tq_stress_run(int delayed, int nprod, int adds, int nwork) {
    kctl_vclock vc;
    tq_stress *st = (tq_stress *)calloc(1, sizeof *st);
    tq_stress_arg pargs[8], wargs[8];
    pthread_t pth[8], wth[8], adv;
    kctl_queue_stats s;
    long total_gets = 0, overlaps = 0, lost = 0;
    int i, started_w = 0, started_p = 0, adv_started = 0;
    kctl_queue *q;
    KT_CHECK(st != NULL);
    if (!st) return;
    q = tq_new_named(&vc, 0, NULL, "stress");
    if (!q) { free(st); return; }
    st->q = q;
    st->vc = &vc;
    st->delayed = delayed;
    st->adds_per_producer = adds;
    for (i = 0; i < TQ_NKEYS; i++) pthread_mutex_init(&st->mu[i], NULL);

    for (i = 0; i < nwork; i++) {
        wargs[i].st = st;
        wargs[i].id = i;
        wargs[i].last_rc = 1;
        wargs[i].finished = 0;
        if (pthread_create(&wth[i], NULL, tq_stress_worker, &wargs[i]) != 0) break;
        started_w++;
    }
    if (delayed && pthread_create(&adv, NULL, tq_stress_advancer, st) == 0) adv_started = 1;
    for (i = 0; i < nprod; i++) {
        pargs[i].st = st;
        pargs[i].id = i;
        if (pthread_create(&pth[i], NULL, tq_stress_producer, &pargs[i]) != 0) break;
        started_p++;
    }
    KT_EQ_INT(started_w, nwork);
    KT_EQ_INT(started_p, nprod);
    for (i = 0; i < started_p; i++) pthread_join(pth[i], NULL);
    __atomic_store_n(&st->producers_done, 1, __ATOMIC_SEQ_CST);
    if (adv_started) pthread_join(adv, NULL);
    if (delayed) {
        long spins;
        KT_CHECK(adv_started);
        /* every delayed key becomes ready; wait (bounded) until the workers have taken them all */
        kctl_vclock_advance(&vc, KCTL_SEC(1));
        for (spins = 0; spins < TQ_SPIN_LIMIT; spins++) {
            s = tq_stats(q);
            if (s.delayed == 0 && s.depth == 0 && s.processing == 0) break;
            sched_yield();
        }
        KT_CHECK(spins < TQ_SPIN_LIMIT);
    }
    kctl_queue_shutdown_with_drain(q);
    for (i = 0; i < started_w; i++) {
        long spins;
        for (spins = 0; spins < TQ_SPIN_LIMIT && !__atomic_load_n(&wargs[i].finished, __ATOMIC_SEQ_CST); spins++)
            sched_yield();
        if (spins == TQ_SPIN_LIMIT) {
            kt_fail(__FILE__, __LINE__, "worker %d still blocked in kctl_queue_get after shutdown", i);
            kctl_vclock_advance(&vc, 1); /* try to release it */
        }
        pthread_join(wth[i], NULL);
    }

    for (i = 0; i < started_w; i++) KT_EQ_INT(wargs[i].last_rc, KCTL_ERR_SHUTDOWN);
    for (i = 0; i < TQ_NKEYS; i++) {
        total_gets += st->gets[i];
        overlaps += st->overlaps[i];
        if (st->processed[i] != st->seq[i]) {
            lost++;
            kt_fail(__FILE__, __LINE__, "key s%d: last added #%llu, last processed #%llu", i,
                    (unsigned long long)st->seq[i], (unsigned long long)st->processed[i]);
        }
    }
    KT_EQ_INT(overlaps, 0);
    KT_EQ_INT(lost, 0);
    KT_EQ_INT(st->bad_rc, 0);
    KT_EQ_INT(st->bad_key, 0);
    s = tq_stats(q);
    KT_EQ_U64(s.processing, 0);
    KT_EQ_U64(s.depth, 0);
    KT_EQ_U64(s.delayed, 0);
    KT_EQ_U64(kctl_queue_len(q), 0);
    /* every counted add led to exactly one get */
    KT_EQ_U64(s.adds_total, (uint64_t)total_gets);
    KT_EQ_U64(s.queue_duration.count, KT_DUR((uint64_t)total_gets));
    KT_EQ_U64(s.work_duration.count, KT_DUR((uint64_t)total_gets));
    KT_CHECK(total_gets >= TQ_NKEYS && total_gets <= (long)nprod * adds);
    if (delayed) KT_EQ_U64(s.retries_total, (uint64_t)nprod * (uint64_t)adds);
    tq_free(q, &vc);
    for (i = 0; i < TQ_NKEYS; i++) pthread_mutex_destroy(&st->mu[i]);
    free(st);
}
#endif

static void tq_thread_stress(void) {
#ifndef KCTL_NO_THREADS
    tq_stress_run(0, 4, 20000, 3);
#else
    KT_SKIP();
#endif
}

static void tq_thread_stress_delayed(void) {
#ifndef KCTL_NO_THREADS
    tq_stress_run(1, 2, 5000, 3);
#else
    KT_SKIP();
#endif
}


/* ---- adds from threads, on a queue whose adds may take the inbox (kctl.h
   kctl__queue_add_inbox: unnamed, the real clock, more than one CPU) */
#ifndef KCTL_NO_THREADS
#define TQ_INBOX_WAIT_NS KCTL_SEC(20) /* a lost add or wake-up shows as this wait running out */

static kctl_queue *tq_new_real(void) {
    kctl_queue *q = NULL;
    if (kctl_queue_create(NULL, &q) != KCTL_OK) kt_fail(__FILE__, __LINE__, "kctl_queue_create");
    return q;
}

typedef struct tq_inbox {
    kctl_queue *q;
    long n;               /* keys the producer adds */
    long got, out_of_order;
} tq_inbox;

static void *tq_inbox_producer(void *arg) {
    tq_inbox *t = (tq_inbox *)arg;
    char key[32];
    long i;
    for (i = 0; i < t->n; i++) {
        sprintf(key, "p-%07ld", i);
        if (kctl_queue_add(t->q, key) != KCTL_OK) break;
    }
    return NULL;
}

static void *tq_inbox_in_order(void *arg) {
    tq_inbox *t = (tq_inbox *)arg;
    const char *k;
    long next = 0;
    while (kctl_queue_get(t->q, &k) == KCTL_OK) {
        if (strtol(k + 2, NULL, 10) != next) __atomic_add_fetch(&t->out_of_order, 1, __ATOMIC_RELAXED);
        next = strtol(k + 2, NULL, 10) + 1;
        kctl_queue_done(t->q, k);
        __atomic_add_fetch(&t->got, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* Wait (bounded) until *counter reaches want. */
static bool tq_wait_count(const long *counter, long want) {
    uint64_t end = kctl_clock_now(NULL) + TQ_INBOX_WAIT_NS;
    struct timespec pause = { 0, 100000 };
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want) {
        if (kctl_clock_now(NULL) > end) return false;
        nanosleep(&pause, NULL);
    }
    return true;
}

/* One producer thread, one worker: distinct keys come out in the order
   they went in, every one of them, while the producer outruns the worker
   (adds gathered in the inbox) and while the worker waits for it. */
static void tq_thread_inbox_order(void) {
    tq_inbox t;
    pthread_t p, w;
    memset(&t, 0, sizeof t);
    t.n = 200000;
    if (!(t.q = tq_new_real())) return;
    if (pthread_create(&w, NULL, tq_inbox_in_order, &t) != 0) { kctl_queue_destroy(t.q); return; }
    if (pthread_create(&p, NULL, tq_inbox_producer, &t) != 0) {
        kctl_queue_shutdown(t.q);
        pthread_join(w, NULL);
        kctl_queue_destroy(t.q);
        return;
    }
    pthread_join(p, NULL);
    KT_CHECK(tq_wait_count(&t.got, t.n));
    kctl_queue_shutdown(t.q);
    pthread_join(w, NULL);
    KT_EQ_U64((uint64_t)t.got, (uint64_t)t.n);
    KT_EQ_U64((uint64_t)t.out_of_order, 0);
    kctl_queue_destroy(t.q);
}

/* Four producers adding 256 shared keys at random, two workers: every key
   is handed out after its last add. Each producer bumps a key's count
   before adding it; a worker reads the count when it takes the key. */
#define TQ_SHARED 256
typedef struct tq_shared {
    kctl_queue *q;
    long bumps[TQ_SHARED], seen[TQ_SHARED];
    long gets, stop;
} tq_shared;
typedef struct tq_shared_arg { tq_shared *s; unsigned seed; } tq_shared_arg;

static void *tq_shared_producer(void *arg) {
    tq_shared_arg *a = (tq_shared_arg *)arg;
    unsigned x = a->seed;
    char key[16];
    int i, k;
    for (i = 0; i < 30000; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        k = (int)(x % TQ_SHARED);
        sprintf(key, "k%d", k);
        __atomic_add_fetch(&a->s->bumps[k], 1, __ATOMIC_SEQ_CST);
        if (kctl_queue_add(a->s->q, key) != KCTL_OK) break;
        if ((i & 1023) == 0) sched_yield(); /* now and then the workers catch up and wait */
    }
    return NULL;
}

static void *tq_shared_worker(void *arg) {
    tq_shared *s = (tq_shared *)arg;
    const char *k;
    while (kctl_queue_get(s->q, &k) == KCTL_OK) {
        int i = atoi(k + 1);
        __atomic_store_n(&s->seen[i], __atomic_load_n(&s->bumps[i], __ATOMIC_SEQ_CST), __ATOMIC_RELAXED);
        kctl_queue_done(s->q, k);
        __atomic_add_fetch(&s->gets, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void tq_thread_inbox_no_lost_adds(void) {
    tq_shared *s = (tq_shared *)calloc(1, sizeof *s);
    tq_shared_arg args[4];
    pthread_t p[4], w[2];
    kctl_queue_stats st;
    uint64_t end;
    int i, np = 0, nw = 0, missed = 0;
    KT_CHECK(s != NULL);
    if (!s || !(s->q = tq_new_real())) { free(s); return; }
    for (i = 0; i < 2; i++) nw += pthread_create(&w[i], NULL, tq_shared_worker, s) == 0;
    for (i = 0; i < 4; i++) {
        args[i].s = s;
        args[i].seed = 2463534242u + 7919u * (unsigned)i;
        np += pthread_create(&p[i], NULL, tq_shared_producer, &args[i]) == 0;
    }
    for (i = 0; i < np; i++) pthread_join(p[i], NULL);
    end = kctl_clock_now(NULL) + TQ_INBOX_WAIT_NS;
    do st = tq_stats(s->q); /* (stats apply the inbox too) */
    while ((st.depth || st.processing) && kctl_clock_now(NULL) < end && sched_yield() == 0);
    KT_EQ_U64(st.depth, 0);
    KT_EQ_U64(st.processing, 0);
    kctl_queue_shutdown(s->q);
    for (i = 0; i < nw; i++) pthread_join(w[i], NULL);
    KT_EQ_INT(np, 4);
    KT_EQ_INT(nw, 2);
    for (i = 0; i < TQ_SHARED; i++) missed += s->seen[i] != s->bumps[i];
    KT_EQ_INT(missed, 0);
    KT_CHECK(s->gets > 0 && s->gets <= 4 * 30000);
    kctl_queue_destroy(s->q);
    free(s);
}

/* A worker that parks is woken by an add from another thread, whether
   the add comes well after it parked or races with its parking: each key
   is handed out (a lost wake-up would leave the wait to run out). */
static void tq_thread_inbox_wakes_parked(void) {
    tq_inbox t;
    pthread_t w;
    char key[32];
    long i;
    int lost = 0;
    memset(&t, 0, sizeof t);
    if (!(t.q = tq_new_real())) return;
    if (pthread_create(&w, NULL, tq_inbox_in_order, &t) != 0) { kctl_queue_destroy(t.q); return; }
    for (i = 0; i < 3000 && !lost; i++) {
        if (i % 3 == 1) { /* after a pause long enough to park in */
            struct timespec pause = { 0, 200000 };
            nanosleep(&pause, NULL);
        } else if (i % 3 == 2) {
            sched_yield();
        }
        sprintf(key, "p-%07ld", i);
        KT_EQ_INT(kctl_queue_add(t.q, key), KCTL_OK);
        if (!tq_wait_count(&t.got, i + 1)) lost = 1;
    }
    KT_EQ_INT(lost, 0);
    kctl_queue_shutdown(t.q);
    pthread_join(w, NULL);
    KT_EQ_U64((uint64_t)t.out_of_order, 0);
    kctl_queue_destroy(t.q);
}

/* Adds racing a shutdown: an add that returned OK is handed out before
   the workers are told SHUTDOWN; one that returned SHUTDOWN never is. */
typedef struct tq_race {
    kctl_queue *q;
    unsigned char rc_ok[2][4000], got[2][4000];
} tq_race;
typedef struct tq_race_arg { tq_race *r; int id; } tq_race_arg;

static void *tq_race_producer(void *arg) {
    tq_race_arg *a = (tq_race_arg *)arg;
    char key[32];
    int i;
    for (i = 0; i < 4000; i++) {
        sprintf(key, "%d-%d", a->id, i);
        a->r->rc_ok[a->id][i] = kctl_queue_add(a->r->q, key) == KCTL_OK;
        if ((i & 63) == 0) sched_yield();
    }
    return NULL;
}

static void *tq_race_worker(void *arg) {
    tq_race *r = (tq_race *)arg;
    const char *k;
    while (kctl_queue_get(r->q, &k) == KCTL_OK) {
        int id = atoi(k), i = atoi(strchr(k, '-') + 1);
        r->got[id][i]++;
        kctl_queue_done(r->q, k);
    }
    return NULL;
}

static void tq_thread_inbox_shutdown_race(void) {
    tq_race *r = (tq_race *)calloc(1, sizeof *r);
    tq_race_arg args[2];
    pthread_t p[2], w;
    struct timespec pause = { 0, 300000 };
    const char *k = NULL;
    int round, i, id, wrong = 0, np;
    KT_CHECK(r != NULL);
    for (round = 0; r && round < 10; round++) {
        memset(r, 0, sizeof *r);
        if (!(r->q = tq_new_real())) break;
        if (pthread_create(&w, NULL, tq_race_worker, r) != 0) { kctl_queue_destroy(r->q); break; }
        for (np = 0, i = 0; i < 2; i++) {
            args[i].r = r;
            args[i].id = i;
            np += pthread_create(&p[i], NULL, tq_race_producer, &args[i]) == 0;
        }
        pause.tv_nsec = 100000L * (round + 1);
        nanosleep(&pause, NULL);
        kctl_queue_shutdown(r->q);
        for (i = 0; i < np; i++) pthread_join(p[i], NULL);
        pthread_join(w, NULL);
        KT_EQ_INT(kctl_queue_try_get(r->q, &k), KCTL_ERR_SHUTDOWN); /* nothing left behind */
        for (id = 0; id < 2; id++)
            for (i = 0; i < 4000; i++) wrong += r->rc_ok[id][i] != (r->got[id][i] == 1);
        kctl_queue_destroy(r->q);
    }
    KT_EQ_INT(wrong, 0);
    free(r);
}
#endif

static void tq_thread_inbox(void) {
#ifndef KCTL_NO_THREADS
    tq_thread_inbox_order();
    tq_thread_inbox_no_lost_adds();
    tq_thread_inbox_wakes_parked();
    tq_thread_inbox_shutdown_race();
#else
    KT_SKIP();
#endif
}

#if defined(KCTL__SPIN_TEST) && !defined(KCTL_NO_THREADS) && (defined(__GNUC__) || defined(__clang__))
/* The spin policy (kctl.h PLATFORM) on scripted outcomes, no timing. */
static void tq_spin_policy_one_cpu_never_spins(void) {
    char got[16];
    kctl__spin_script(1, "11111111", got);
    KT_EQ_STR(got, "--------");
}

static void tq_spin_policy_spins_while_it_pays(void) {
    char got[64];
    kctl__spin_script(2, "1111111111111111111111111111111", got);
    KT_EQ_STR(got, "SSSSSSSSSSSSSSSSSSSSSSSSSSSSSSS");
    /* 4 of 5 paying off keeps it spinning */
    kctl__spin_script(2, "11110111101111011110", got);
    KT_EQ_STR(got, "SSSSSSSSSSSSSSSSSSSS");
    /* 2 of 3 does not: the third wait's miss stops it */
    kctl__spin_script(2, "110110110", got);
    KT_EQ_STR(got, "SSS------");
}

static void tq_spin_policy_probes_after_misses(void) {
    char paid[48], got[48], want[48];
    int i;
    /* a miss stops spinning; the 32nd wait after it probes; the probe
       paid off, so every wait spins again */
    for (i = 0; i < 40; i++) paid[i] = i == 0 ? '0' : '1';
    paid[40] = 0;
    for (i = 0; i < 40; i++) want[i] = (i == 0 || i >= 32) ? 'S' : '-';
    want[40] = 0;
    kctl__spin_script(2, paid, got);
    KT_EQ_STR(got, want);
    /* a probe that misses waits another 32 */
    for (i = 0; i < 40; i++) paid[i] = '0';
    for (i = 0; i < 40; i++) want[i] = (i == 0 || i == 32) ? 'S' : '-';
    kctl__spin_script(2, paid, got);
    KT_EQ_STR(got, want);
}

/* A clock that moves 100 ns per read; the word changes at read `flip`. */
typedef struct tq_step_clock {
    uint64_t t;
    unsigned reads, flip;
    unsigned *word;
} tq_step_clock;
static uint64_t tq_step_now(void *ud) {
    tq_step_clock *c = (tq_step_clock *)ud;
    c->reads++;
    if (c->flip && c->reads == c->flip) __atomic_store_n(c->word, 1u, __ATOMIC_RELAXED);
    return c->t += 100;
}

static void tq_spin_bounded_by_time(void) {
    unsigned word = 0;
    tq_step_clock c;
    memset(&c, 0, sizeof c);
    c.word = &word;
    /* 10 us of budget on a clock moving 100 ns a read: over after 100
       reads past the start, whatever a pause costs */
    KT_CHECK(!kctl__spin_until_test(&word, 0, 10000, tq_step_now, &c));
    KT_EQ_INT(c.reads, 101);
    /* a change seen ends the spin at once, with true */
    memset(&c, 0, sizeof c);
    c.word = &word;
    c.flip = 5;
    KT_CHECK(kctl__spin_until_test(&word, 0, 10000, tq_step_now, &c));
    KT_EQ_INT(c.reads, 5);
}

/* A queue made by a thread allowed one CPU starts with spinning off; it
   turns on once a waiter that may run on another CPU joins, never while
   every thread seen shares the one CPU, and never from an unknown mask. */
static void tq_spin_widen_by_cpus(void) {
    static const uint64_t one_cpu[] = { 1, 1, 1, 1 };          /* taskset -c 0: all on CPU 0 */
    static const uint64_t pinned_apart[] = { 1, 1, 2, 1 };     /* producer on CPU 0, a worker pinned to CPU 1 */
    static const uint64_t unknown[] = { 1, 0, 0 };             /* a waiter whose CPUs are not known */
    static const uint64_t creator_unknown[] = { 0, 3, 2 };     /* nothing known at create: as before */
    static const uint64_t both[] = { 3, 1 };                   /* made on two CPUs: on from the start */
    char got[8];
    kctl__spin_widen_script(one_cpu, 4, got);
    KT_EQ_STR(got, "----");
    kctl__spin_widen_script(pinned_apart, 4, got);
    KT_EQ_STR(got, "--SS");
    kctl__spin_widen_script(unknown, 3, got);
    KT_EQ_STR(got, "---");
    kctl__spin_widen_script(creator_unknown, 3, got);
    KT_EQ_STR(got, "---");
    kctl__spin_widen_script(both, 2, got);
    KT_EQ_STR(got, "SS");
}

/* A controller worker's step: done(previous) then the next key, in one
   hold of the lock, with client-go's Done rules (a key added while it was
   processed is queued again at done, and may be the one handed out), a
   done of a key not in flight logged and ignored, and the stopping flag. */
static void tq_done_get_one_hold(void) {
    kctl_vclock vc;
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    kctl_queue_stats st;
    tq_log lg;
    const char *k = NULL, *k2 = NULL;
    bool stopping = true;
    memset(&lg, 0, sizeof lg);
    kctl_vclock_init(&vc, 0);
    memset(&d, 0, sizeof d);
    d.clock = kctl_vclock_clock(&vc);
    d.logger.func = tq_log_fn;
    d.logger.user_data = &lg;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    if (!q) { kctl_vclock_deinit(&vc); return; }

    KT_EQ_INT(kctl__queue_done_get_test(q, NULL, &k, &stopping, 0), KCTL_ERR_AGAIN);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl__queue_done_get_test(q, NULL, &k, &stopping, 0), KCTL_OK);
    KT_EQ_STR(k, "a");
    KT_CHECK(!stopping);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK); /* while processing: held back */
    KT_EQ_INT(kctl__queue_done_get_test(q, k, &k2, &stopping, 0), KCTL_OK);
    KT_EQ_STR(k2, "b"); /* "a" went to the tail at done */
    st = tq_stats(q);
    KT_EQ_U64(st.processing, 1);
    KT_EQ_U64(st.depth, 1);
    KT_EQ_INT(kctl__queue_done_get_test(q, k2, &k, &stopping, 0), KCTL_OK);
    KT_EQ_STR(k, "a");
    st = tq_stats(q);
    KT_EQ_U64(st.processing, 1);
    KT_EQ_U64(st.depth, 0);
    /* the last done, nothing left: done happens, AGAIN */
    KT_EQ_INT(kctl__queue_done_get_test(q, k, &k2, &stopping, 0), KCTL_ERR_AGAIN);
    KT_EQ_U64(tq_stats(q).processing, 0);
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 0);
    /* a done of a key not in flight: logged, and the get still happens */
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    KT_EQ_INT(kctl__queue_done_get_test(q, "zz", &k, &stopping, 0), KCTL_OK);
    KT_EQ_STR(k, "c");
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 1);
    /* shutting down: the queued key is still handed out, flagged stopping;
       then the last done and SHUTDOWN */
    KT_EQ_INT(kctl_queue_add(q, "d"), KCTL_OK);
    kctl_queue_shutdown(q);
    KT_EQ_INT(kctl__queue_done_get_test(q, k, &k2, &stopping, 0), KCTL_OK);
    KT_EQ_STR(k2, "d");
    KT_CHECK(stopping);
    KT_EQ_INT(kctl__queue_done_get_test(q, k2, &k, &stopping, 0), KCTL_ERR_SHUTDOWN);
    KT_EQ_U64(tq_stats(q).processing, 0);
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 1);
    tq_free(q, &vc);
}

/* A controller's workers (kctl__queue_get's owner): each one's key in
   flight is OWNED, in its own slot, where its done finds it. A done of it
   by anyone else (kctl_queue_done by pointer or by string, another
   worker) is refused and logged, so the key is never handed out again
   while its worker has it: an add meanwhile is held back, and queued at
   its own worker's done. A named queue's durations count it; a plain
   get's key beside it is done as always. */
static void tq_owned_keys(void) {
    kctl_vclock vc;
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    kctl_queue_stats st;
    tq_log lg;
    const char *k1 = NULL, *k2 = NULL, *k = NULL;
    bool stopping = false;
    memset(&lg, 0, sizeof lg);
    kctl_vclock_init(&vc, KCTL_SEC(100));
    memset(&d, 0, sizeof d);
    d.name = "owned";
    d.clock = kctl_vclock_clock(&vc);
    d.logger.func = tq_log_fn;
    d.logger.user_data = &lg;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    if (!q) { kctl_vclock_deinit(&vc); return; }
    KT_EQ_INT(kctl__queue_owners_test(q, 2), KCTL_OK);
    KT_EQ_INT(kctl__queue_owners_test(q, 2), KCTL_ERR_INVALID_ARG); /* made once */
    KT_EQ_INT(kctl__queue_done_get_test(q, NULL, &k, &stopping, 3), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    KT_EQ_INT(kctl__queue_done_get_test(q, NULL, &k1, &stopping, 1), KCTL_OK);
    KT_EQ_STR(k1, "a");
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    KT_EQ_INT(kctl__queue_done_get_test(q, NULL, &k2, &stopping, 2), KCTL_OK);
    KT_EQ_STR(k2, "b");
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    TQ_TAKE(q, "c"); /* a plain get's key */
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    st = tq_stats(q);
    KT_EQ_U64(st.processing, 3);
    KT_EQ_U64(st.unfinished_work_ns, KT_DUR(KCTL_SEC(4 + 2 + 1)));
    KT_EQ_U64(st.longest_running_ns, KT_DUR(KCTL_SEC(4)));
    /* somebody else's done of a worker's key, by pointer or by string */
    kctl_queue_done(q, k1);
    kctl_queue_done(q, "b");
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 2);
    KT_EQ_U64(tq_stats(q).processing, 3);
    /* added while its worker has it: held back */
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_U64(kctl_queue_len(q), 0);
    TQ_AGAIN(q);
    /* the other worker's done of it: refused, its own key stays its own,
       and it takes no second key (one is ready now) while it has one */
    KT_EQ_INT(kctl_queue_add(q, "d"), KCTL_OK);
    KT_EQ_INT(kctl__queue_done_get_test(q, k1, &k, &stopping, 2), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 3);
    KT_EQ_U64(tq_stats(q).processing, 3);
    KT_EQ_U64(kctl_queue_len(q), 1);
    TQ_GET_DONE(q, "d");
    /* its own worker's done: queued again then, and handed out to it */
    KT_EQ_INT(kctl__queue_done_get_test(q, k1, &k, &stopping, 1), KCTL_OK);
    KT_EQ_STR(k, "a");
    kctl_queue_done(q, "c");
    KT_EQ_INT(kctl__queue_done_get_test(q, k2, &k1, &stopping, 2), KCTL_ERR_AGAIN);
    KT_EQ_INT(kctl__queue_done_get_test(q, k, &k1, &stopping, 1), KCTL_ERR_AGAIN);
    st = tq_stats(q);
    KT_EQ_U64(st.processing, 0);
    KT_EQ_U64(st.depth, 0);
    KT_EQ_U64(st.unfinished_work_ns, KT_DUR(0));
    KT_EQ_U64(st.work_duration.count, KT_DUR(5));
    KT_EQ_INT(lg.counts[KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING], 3);
    tq_free(q, &vc);
}

/* Adds through the inbox that find no memory to grow the key map go in
   past its load, in order; those that find it full as well stall, and
   when the queue shuts down they are handed out, in order, before a
   worker is told SHUTDOWN: until then a get says AGAIN. */
static void tq_inbox_stalled_at_shutdown(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    int i, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_alloc(&vc, &a, NULL);
    if (!q) return;
    if (kctl__queue_full_test(q, 0) == KCTL_ERR_UNSUPPORTED) { /* adds take the lock here (one CPU) */
        kctl_queue_destroy(q);
        kctl_vclock_deinit(&vc);
        kt_skip_now("the queue's inbox is off on one CPU");
    }
    KT_EQ_INT(kctl_queue_add(q, "first"), KCTL_OK); /* the lock's: makes the inbox's room */
    for (i = 0; i < 20; i++) {
        sprintf(key, "s-%02d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    KT_EQ_INT(kctl__queue_full_test(q, 1), KCTL_OK); /* no memory: past the map's load */
    KT_EQ_INT(kctl_queue_add(q, "s-00"), KCTL_OK);   /* (the first add is applied, the second is not) */
    KT_EQ_U64(kctl_queue_len(q), 21);
    TQ_GET_DONE(q, "first");
    KT_EQ_INT(kctl_queue_add(q, "first"), KCTL_OK);
    for (i = 0; i < 20; i++) {
        sprintf(key, "s-%02d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++; /* queued: nothing */
    }
    KT_EQ_INT(kctl__queue_full_test(q, 2), KCTL_OK);
    for (i = 0; i < 5; i++) {
        sprintf(key, "n-%02d", i);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
    }
    kctl_queue_shutdown(q); /* its drain stalls the new ones */
    KT_EQ_INT(kctl_queue_add(q, "late"), KCTL_ERR_SHUTDOWN);
    for (i = 0; i < 20; i++) {
        sprintf(key, "s-%02d", i);
        TQ_GET_DONE(q, key);
    }
    TQ_GET_DONE(q, "first"); /* added again behind them */
    TQ_AGAIN(q); /* not SHUTDOWN: adds that returned OK wait */
    TQ_AGAIN(q);
    KT_EQ_INT(kctl__queue_full_test(q, 0), KCTL_OK);
    for (i = 0; i < 5; i++) {
        sprintf(key, "n-%02d", i);
        TQ_GET_DONE(q, key);
    }
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    KT_EQ_INT(bad, 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* A queue made on a thread pinned to one CPU takes the lock for adds (its
   line never crosses CPUs there) until a worker that may run on another
   CPU parks on it: from then on adds take the inbox, in order. A queue
   whose options keep adds under the lock (durations on a virtual clock)
   never does. */
static void tq_inbox_widen_by_cpus(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new_real();
    char key[16];
    int i;
    if (!q) return;
    if (kctl__queue_widen_test(q, 1, 1) == KCTL_ERR_UNSUPPORTED) {
        kctl_queue_destroy(q);
        kt_skip_now("no inbox in this build");
    }
    KT_EQ_INT(kctl__queue_widen_test(q, 1, 1), 0);  /* taskset -c 0: all on CPU 0 */
    KT_EQ_INT(kctl__queue_full_test(q, 0), KCTL_ERR_UNSUPPORTED);
    KT_EQ_INT(kctl__queue_widen_test(q, 1, 0), 0);  /* a worker whose CPUs are not known */
    KT_EQ_INT(kctl__queue_widen_test(q, 1, 2), 1);  /* a worker pinned to CPU 1 */
    KT_EQ_INT(kctl__queue_full_test(q, 0), KCTL_OK);
    KT_EQ_INT(kctl__queue_widen_test(q, 3, 1), 1);  /* made on two CPUs: on from the start */
    for (i = 0; i < 300; i++) {
        sprintf(key, "w-%03d", i % 200);
        KT_EQ_INT(kctl_queue_add(q, key), KCTL_OK);
    }
    KT_EQ_U64(kctl_queue_len(q), 200);
    for (i = 0; i < 200; i++) {
        sprintf(key, "w-%03d", i);
        TQ_GET_DONE(q, key);
    }
    TQ_AGAIN(q);
    kctl_queue_destroy(q);
    q = tq_new_named(&vc, 0, NULL, "timed");
    if (!q) return;
    KT_EQ_INT(kctl__queue_widen_test(q, 1, 2), 0);
    KT_EQ_INT(kctl__queue_widen_test(q, 3, 2), 0);
    kctl_queue_destroy(q);
    kctl_vclock_deinit(&vc);
}
#endif

/* ------------------------- options: pending_after, priority with aging */

/* A queue on a virtual clock with the two options (a may be NULL). */
static kctl_queue *tq_new_opts(kctl_vclock *vc, uint64_t start_ns, int pending, bool prio, uint64_t aging_ns, kt_alloc *a) {
    kctl_queue_desc d;
    kctl_queue *q = NULL;
    int rc;
    kctl_vclock_init(vc, start_ns);
    memset(&d, 0, sizeof d);
    d.clock = kctl_vclock_clock(vc);
    if (a) d.allocator = kt_allocator(a);
    d.pending_after = pending;
    d.priority.enabled = prio;
    d.priority.aging_ns = aging_ns;
    rc = kctl_queue_create(&d, &q);
    if (rc != KCTL_OK || !q) {
        kt_fail(__FILE__, __LINE__, "kctl_queue_create: %d", rc);
        kctl_vclock_deinit(vc);
        return NULL;
    }
    return q;
}

/* How many keys try_get hands out (each done at once, each want unless
   NULL) in rounds + 1 rounds that empty the queue, the clock advanced by
   step_ns between rounds. */
static int tq_drain_count(kctl_queue *q, kctl_vclock *vc, const char *want, uint64_t step_ns, int rounds) {
    int n = 0, r;
    for (r = 0; r <= rounds; r++) {
        const char *k;
        while (kctl_queue_try_get(q, &k) == KCTL_OK) {
            if (want && strcmp(k, want) != 0) kt_fail(__FILE__, __LINE__, "handed out %s, not %s", k, want);
            kctl_queue_done(q, k);
            n++;
        }
        if (r < rounds) kctl_vclock_advance(vc, step_ns);
    }
    return n;
}

/* kubernetes#112325: add on a key that waits on an add_after. KEEP
   (client-go) runs it now and again at the delayed time; CANCEL and MERGE
   remove the delayed add: one run, now. add_after(k, 0) and add_low are
   plain adds too. */
static void tq_pending_add_cancels(void) {
    int mode, how;
    for (mode = KCTL_PENDING_KEEP; mode <= KCTL_PENDING_MERGE; mode++) {
        for (how = 0; how < 3; how++) { /* add, add_after(k, 0), add_low */
            kctl_vclock vc;
            const uint64_t t0 = KCTL_SEC(10);
            kctl_queue *q = tq_new_opts(&vc, t0, mode, how == 2, 0, NULL);
            kctl_queue_stats s;
            if (!q) return;
            KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
            KT_EQ_INT(how == 0 ? kctl_queue_add(q, "k") : how == 1 ? kctl_queue_add_after(q, "k", 0) : kctl_queue_add_low(q, "k"), KCTL_OK);
            s = tq_stats(q);
            KT_EQ_U64(s.delayed, mode == KCTL_PENDING_KEEP ? 1u : 0u);
            KT_EQ_U64(s.cancelled_total, mode == KCTL_PENDING_KEEP ? 0u : 1u);
            KT_EQ_U64(kctl_queue_len(q), 1);
            TQ_GET_DONE(q, "k"); /* now */
            KT_EQ_U64(kctl_queue_next_ready(q), mode == KCTL_PENDING_KEEP ? t0 + KCTL_SEC(5) : UINT64_MAX);
            KT_EQ_INT(tq_drain_count(q, &vc, "k", KCTL_SEC(1), 10), mode == KCTL_PENDING_KEEP ? 1 : 0);
            KT_EQ_U64(tq_stats(q).adds_total, mode == KCTL_PENDING_KEEP ? 2u : 1u);
            tq_free(q, &vc);
        }
    }
}

/* A key being processed with a pending add_after (a reconcile's
   requeue_after, say) that an add reaches: KEEP runs it at done and again
   at the delay; CANCEL and MERGE once, at done. */
static void tq_pending_add_while_processing(void) {
    int mode;
    for (mode = KCTL_PENDING_KEEP; mode <= KCTL_PENDING_MERGE; mode++) {
        kctl_vclock vc;
        kctl_queue *q = tq_new_opts(&vc, KCTL_SEC(1), mode, false, 0, NULL);
        if (!q) return;
        KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
        TQ_TAKE(q, "k");
        KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK); /* kept by every mode: not waiting */
        KT_EQ_U64(tq_stats(q).delayed, 1);
        KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK); /* held back until done */
        KT_EQ_U64(tq_stats(q).delayed, mode == KCTL_PENDING_KEEP ? 1u : 0u);
        TQ_AGAIN(q);
        kctl_queue_done(q, "k");
        KT_EQ_INT(tq_drain_count(q, &vc, "k", KCTL_SEC(1), 10), mode == KCTL_PENDING_KEEP ? 2 : 1);
        tq_free(q, &vc);
    }
}

/* MERGE: an add_after of a key that waits to be handed out (or is held
   back while processed) is dropped, since it runs sooner; KEEP and CANCEL
   keep it (a second run at its time). A processed key not added again
   keeps its add_after in every mode (above). */
static void tq_pending_merge_drops_later(void) {
    int mode, held;
    for (mode = KCTL_PENDING_KEEP; mode <= KCTL_PENDING_MERGE; mode++) {
        for (held = 0; held < 2; held++) {
            kctl_vclock vc;
            kctl_queue *q = tq_new_opts(&vc, KCTL_SEC(1), mode, false, 0, NULL);
            bool merge = mode == KCTL_PENDING_MERGE;
            if (!q) return;
            KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
            if (held) {
                TQ_TAKE(q, "k");
                KT_EQ_INT(kctl_queue_add(q, "k"), KCTL_OK);
            }
            KT_EQ_INT(kctl_queue_add_after(q, "k", KCTL_SEC(5)), KCTL_OK);
            KT_EQ_U64(tq_stats(q).delayed, merge ? 0u : 1u);
            KT_EQ_U64(tq_stats(q).cancelled_total, merge ? 1u : 0u);
            KT_EQ_U64(tq_stats(q).retries_total, 1); /* counted as client-go counts AddAfter calls */
            if (held) kctl_queue_done(q, "k");
            KT_EQ_INT(tq_drain_count(q, &vc, "k", KCTL_SEC(1), 10), merge ? 1 : 2);
            tq_free(q, &vc);
        }
    }
}

/* Cancelling takes a key out of the middle of the delay heap: the keys
   left still come due in time order (each handed out after every key due
   before it), each once. */
static void tq_pending_heap_order(void) {
    enum { N = 300 };
    kctl_vclock vc;
    kctl_queue *q = tq_new_opts(&vc, KCTL_SEC(1), KCTL_PENDING_CANCEL, false, 0, NULL);
    char key[32];
    const char *k;
    uint64_t last = 0, seed = 12345, due[N];
    int i, got = 0, bad = 0, seen[N];
    if (!q) return;
    memset(seen, 0, sizeof seen);
    for (i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        due[i] = KCTL_MS(1) * (1 + (seed >> 33) % 1000);
        sprintf(key, "k%03d", i);
        KT_EQ_INT(kctl_queue_add_after(q, key, due[i]), KCTL_OK);
    }
    for (i = 0; i < N; i += 3) { /* a third of them added now: out of the heap */
        sprintf(key, "k%03d", i);
        KT_EQ_INT(kctl_queue_add(q, key), KCTL_OK);
    }
    KT_EQ_U64(tq_stats(q).delayed, N - (N + 2) / 3);
    for (i = 0; i < N; i += 3) { /* those first, in order */
        sprintf(key, "k%03d", i);
        TQ_GET_DONE(q, key);
    }
    TQ_AGAIN(q);
    kctl_vclock_advance(&vc, KCTL_MS(1000)); /* all due: handed out in time order */
    while (kctl_queue_try_get(q, &k) == KCTL_OK) {
        int n = atoi(k + 1);
        if (n < 0 || n >= N || n % 3 == 0) bad++;
        else {
            seen[n]++;
            if (due[n] < last) bad++;
            last = due[n];
        }
        got++;
        kctl_queue_done(q, k);
    }
    KT_EQ_INT(got, N - (N + 2) / 3);
    for (i = 0; i < N; i++)
        if (seen[i] != (i % 3 ? 1 : 0)) bad++;
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
    tq_free(q, &vc);
}

/* The delay heap against a model, a few thousand keys deep: add_after of
   keys waiting or not (the earlier time wins, a later one changes
   nothing), plain adds that take waiting keys out of the heap (CANCEL),
   and the clock moved in steps. Each step hands out the plain adds in
   their order, then every key whose time has come, by time and, at the
   same time, in the order of their first add_after. */
#define TQ_HEAP_KEYS 3000
typedef struct tq_heap_model { uint64_t at, seq; int delayed, plain; } tq_heap_model;
static int tq_heap_cmp(const void *a, const void *b) {
    const tq_heap_model *x = *(const tq_heap_model *const *)a, *y = *(const tq_heap_model *const *)b;
    return x->at != y->at ? (x->at < y->at ? -1 : 1) : (x->seq < y->seq ? -1 : x->seq > y->seq);
}
static void tq_pending_heap_model(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new_opts(&vc, KCTL_SEC(1), KCTL_PENDING_CANCEL, false, 0, NULL);
    tq_heap_model *m = (tq_heap_model *)calloc(TQ_HEAP_KEYS, sizeof *m);
    tq_heap_model **due = (tq_heap_model **)malloc(TQ_HEAP_KEYS * sizeof *due);
    int *plain = (int *)malloc(TQ_HEAP_KEYS * sizeof *plain);
    uint64_t now = KCTL_SEC(1), seq = 0, x = 88172645463325252ull;
    char key[32];
    const char *k;
    int round, op, i, bad = 0, most = 0;
    if (!q || !m || !due || !plain) {
        free(m); free(due); free(plain);
        if (q) tq_free(q, &vc);
        return;
    }
    for (round = 0; round < 60 && !bad; round++) {
        int nplain = 0, ndue = 0, ndelayed = 0;
        for (op = 0; op < 300; op++) {
            int n;
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            n = (int)(x % TQ_HEAP_KEYS);
            if (m[n].plain) continue; /* queued this round: left alone */
            sprintf(key, "h%04d", n);
            if ((x >> 32) % 10 == 0) { /* a plain add: out of the heap, queued now */
                if (kctl_queue_add(q, key) != KCTL_OK) bad++;
                m[n].delayed = 0;
                m[n].plain = 1;
                plain[nplain++] = n;
            } else {
                uint64_t d = KCTL_MS(1) * (1 + (x >> 40) % 400); /* ms steps: many equal times */
                if (kctl_queue_add_after(q, key, d) != KCTL_OK) bad++;
                if (!m[n].delayed) {
                    m[n].delayed = 1;
                    m[n].at = now + d;
                    m[n].seq = seq++;
                } else if (now + d < m[n].at) {
                    m[n].at = now + d;
                }
            }
        }
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        {
            uint64_t step = KCTL_MS(1) * ((x >> 20) % 60);
            now += step;
            kctl_vclock_advance(&vc, step);
        }
        for (i = 0; i < TQ_HEAP_KEYS; i++) {
            if (m[i].delayed && m[i].at <= now) due[ndue++] = &m[i];
            else if (m[i].delayed) ndelayed++;
        }
        qsort(due, (size_t)ndue, sizeof *due, tq_heap_cmp);
        for (i = 0; i < nplain + ndue && !bad; i++) {
            int want = i < nplain ? plain[i] : (int)(due[i - nplain] - m);
            if (kctl_queue_try_get(q, &k) != KCTL_OK) { bad++; break; }
            if (atoi(k + 1) != want) bad++;
            kctl_queue_done(q, k);
        }
        if (kctl_queue_try_get(q, &k) == KCTL_OK) { bad++; kctl_queue_done(q, k); }
        for (i = 0; i < nplain; i++) m[plain[i]].plain = 0;
        for (i = 0; i < ndue; i++) due[i]->delayed = 0;
        if (tq_stats(q).delayed != (uint64_t)ndelayed) bad++;
        if (ndelayed > most) most = ndelayed;
    }
    KT_EQ_INT(bad, 0);
    KT_CHECK(most > 1000); /* deep enough for several levels */
    free(m); free(due); free(plain);
    tq_free(q, &vc);
}

static void tq_pending_bad_mode(void) {
    int bad[2] = { -1, KCTL_PENDING_MERGE + 1 }, i;
    for (i = 0; i < 2; i++) {
        kctl_queue_desc d = kctl_queue_desc_init();
        kctl_queue *q = (kctl_queue *)&d; /* set to NULL by create */
        tq_lim c;
        d.limiter = tq_lim_new(&c, 0, 0);
        d.pending_after = bad[i];
        KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_ERR_INVALID_ARG);
        KT_CHECK(q == NULL || q == (kctl_queue *)&d);
        KT_EQ_INT(c.destroy_calls, 1); /* the limiter was the queue's */
    }
}

/* Cancelling and priorities allocate nothing once warm (the delay heap
   and the low list reuse what they have). */
static void tq_options_steady_state(void) {
    kctl_vclock vc;
    kt_alloc a;
    char key[32];
    const char *k;
    long before = 0;
    int i, round, bad = 0;
    kctl_queue *q;
    kt_alloc_init(&a);
    q = tq_new_opts(&vc, KCTL_SEC(1), KCTL_PENDING_MERGE, true, KCTL_MS(5), &a);
    if (!q) return;
    for (round = 0; round < 2; round++) {
        if (round == 1) before = a.allocs;
        for (i = 0; i < 2000; i++) {
            sprintf(key, "ns/obj-%04d", i % 64);
            if (kctl_queue_add_after(q, key, KCTL_MS(10)) != KCTL_OK) bad++;
            if (kctl_queue_add_low(q, key) != KCTL_OK) bad++; /* cancels, queues low */
            sprintf(key, "ns/edit-%04d", i % 64);
            if (kctl_queue_add(q, key) != KCTL_OK) bad++;
            if (i % 3 == 0) {
                sprintf(key, "ns/obj-%04d", (i + 7) % 64);
                if (kctl_queue_add(q, key) != KCTL_OK) bad++; /* raises one */
            }
            while (i % 4 == 3 && kctl_queue_try_get(q, &k) == KCTL_OK) kctl_queue_done(q, k);
            kctl_vclock_advance(&vc, KCTL_MS(1));
        }
        while (kctl_queue_try_get(q, &k) == KCTL_OK) kctl_queue_done(q, k);
    }
    KT_EQ_INT(a.allocs - before, 0);
    KT_EQ_INT(bad, 0);
    KT_CHECK(tq_stats(q).cancelled_total > 0);
    kctl_queue_destroy(q);
    KT_EQ_INT(a.live, 0);
    kctl_vclock_deinit(&vc);
}

/* (a) A fresh edit queued behind 10,000 low adds (an initial list) is
   handed out first; the list follows in its order. Without priority,
   add_low is add: the edit waits its turn (client-go's FIFO). */
static void tq_prio_edit_first(void) {
    enum { N = 10000 };
    int prio;
    for (prio = 0; prio < 2; prio++) {
        kctl_vclock vc;
        kctl_queue *q = tq_new_opts(&vc, KCTL_SEC(1), KCTL_PENDING_KEEP, prio != 0, KCTL_SEC(10), NULL);
        char key[32];
        const char *k;
        int i, bad = 0;
        if (!q) return;
        for (i = 0; i < N; i++) {
            sprintf(key, "ns/list-%05d", i);
            if (kctl_queue_add_low(q, key) != KCTL_OK) bad++;
        }
        kctl_vclock_advance(&vc, KCTL_SEC(1));
        KT_EQ_INT(kctl_queue_add(q, "ns/edit"), KCTL_OK);
        KT_EQ_U64(kctl_queue_len(q), N + 1);
        KT_EQ_U64(tq_stats(q).low, prio ? (uint64_t)N : 0u);
        KT_EQ_U64(tq_stats(q).depth, N + 1);
        if (prio) TQ_GET_DONE(q, "ns/edit");
        for (i = 0; i < N; i++) {
            sprintf(key, "ns/list-%05d", i);
            if (kctl_queue_try_get(q, &k) != KCTL_OK) { bad++; break; }
            if (strcmp(k, key) != 0) bad++;
            kctl_queue_done(q, k);
        }
        if (!prio) TQ_GET_DONE(q, "ns/edit");
        TQ_AGAIN(q);
        KT_EQ_INT(bad, 0);
        KT_EQ_U64(tq_stats(q).low, 0);
        tq_free(q, &vc);
    }
}

/* (b) No starvation: low keys under a stream of normal adds that never
   lets the normal FIFO run dry (two new keys per hand-out). Before they
   age, only normal keys are handed out; from then on every other hand-out
   is the oldest low key (never two in a row: the normal keys keep half),
   so the k-th (from 0) is handed out within 2(k+1) hand-outs of aging. */
static void tq_prio_aging_bound(void) {
    enum { NLOW = 5, TICKS = 2000 };
    const uint64_t aging = KCTL_MS(100), tick = KCTL_MS(1), t0 = KCTL_SEC(1);
    kctl_vclock vc;
    kctl_queue *q = tq_new_opts(&vc, t0, KCTL_PENDING_KEEP, true, aging, NULL);
    char key[32];
    const char *k;
    int i, n = 0, handed = 0, low_seen = 0, normal_after = 0, bad = 0, last_low = 0, two_low = 0;
    int low_at[NLOW];
    if (!q) return;
    for (i = 0; i < NLOW; i++) {
        sprintf(key, "low-%d", i);
        KT_EQ_INT(kctl_queue_add_low(q, key), KCTL_OK);
        low_at[i] = -1;
    }
    for (i = 0; i < TICKS; i++) {
        sprintf(key, "n-%06d", n++);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        sprintf(key, "n-%06d", n++);
        if (kctl_queue_add(q, key) != KCTL_OK) bad++;
        if (kctl_queue_try_get(q, &k) != KCTL_OK) { bad++; break; }
        if (strncmp(k, "low-", 4) == 0) {
            int j = atoi(k + 4);
            if (j != low_seen) bad++; /* in their FIFO order */
            if (j >= 0 && j < NLOW) low_at[j] = handed;
            low_seen++;
            if (last_low) two_low++; /* normal keys wait: never two low ones in a row */
            last_low = 1;
        } else {
            if (low_seen == NLOW) normal_after++;
            last_low = 0;
        }
        kctl_queue_done(q, k);
        handed++;
        kctl_vclock_advance(&vc, tick);
    }
    KT_EQ_INT(bad, 0);
    KT_EQ_INT(low_seen, NLOW);
    /* aged at hand-out 100 (100 ticks of 1 ms): low k by 100 + 2(k+1), not before */
    for (i = 0; i < NLOW; i++) {
        KT_CHECK(low_at[i] >= (int)(aging / tick));
        KT_CHECK(low_at[i] <= (int)(aging / tick) + 2 * (i + 1));
    }
    KT_EQ_INT(two_low, 0);
    KT_CHECK(normal_after > 0);
    tq_free(q, &vc);
}

/* De-duplication across priorities: a key is queued once; a normal add
   raises a low key (to the end of the normal keys), a low add never lowers
   a normal one; a delayed add coming due is a normal add. */
static void tq_prio_dedup_raise(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new_opts(&vc, KCTL_SEC(1), KCTL_PENDING_KEEP, true, KCTL_SEC(10), NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_low(q, "l1"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_low(q, "l2"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_low(q, "l3"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "n1"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "l2"), KCTL_OK);     /* raised, behind n1 */
    KT_EQ_INT(kctl_queue_add_low(q, "n1"), KCTL_OK); /* stays normal */
    KT_EQ_INT(kctl_queue_add_low(q, "l1"), KCTL_OK); /* stays where it is */
    KT_EQ_U64(kctl_queue_len(q), 4);
    KT_EQ_U64(tq_stats(q).low, 2);
    KT_EQ_U64(tq_stats(q).adds_total, 4);
    KT_EQ_INT(kctl_queue_add_after(q, "l3", KCTL_SEC(1)), KCTL_OK);
    kctl_vclock_advance(&vc, KCTL_SEC(1)); /* l3's delayed add: raised too */
    TQ_GET_DONE(q, "n1");
    TQ_GET_DONE(q, "l2");
    TQ_GET_DONE(q, "l3");
    TQ_GET_DONE(q, "l1");
    TQ_AGAIN(q);
    KT_EQ_U64(tq_stats(q).low, 0);
    /* while processing: low at done, unless a normal add came */
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    TQ_TAKE(q, "a");
    TQ_TAKE(q, "b");
    KT_EQ_INT(kctl_queue_add_low(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add_low(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);      /* raised while held back */
    KT_EQ_INT(kctl_queue_add_low(q, "c"), KCTL_OK);
    kctl_queue_done(q, "a");                         /* low, behind c */
    kctl_queue_done(q, "b");                         /* normal: first */
    KT_EQ_U64(tq_stats(q).low, 2);
    TQ_GET_DONE(q, "b");
    TQ_GET_DONE(q, "c");
    TQ_GET_DONE(q, "a");
    TQ_AGAIN(q);
    KT_EQ_U64(kctl_queue_next_ready(q), UINT64_MAX);
    tq_free(q, &vc);
}

/* Low keys count for len, next_ready, max_keys and shutdown like others. */
static void tq_prio_counts(void) {
    kctl_vclock vc;
    kctl_queue *q = tq_new_opts(&vc, KCTL_SEC(1), KCTL_PENDING_KEEP, true, 0, NULL);
    if (!q) return;
    KT_EQ_INT(kctl_queue_add_low(q, "x"), KCTL_OK);
    KT_EQ_U64(kctl_queue_next_ready(q), 0);
    KT_EQ_U64(kctl_queue_len(q), 1);
    KT_EQ_INT(kctl_queue_add_low(NULL, "x"), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_low(q, ""), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_queue_add_low(q, NULL), KCTL_ERR_INVALID_ARG);
    kctl_queue_shutdown(q);
    KT_EQ_INT(kctl_queue_add_low(q, "y"), KCTL_ERR_SHUTDOWN);
    TQ_GET_DONE(q, "x"); /* queued keys are still handed out */
    TQ_TRY_RC(q, KCTL_ERR_SHUTDOWN);
    tq_free(q, &vc);
}

/* A worker parked in get wakes for a low add. */
static void tq_thread_wake_on_add_low(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    tq_worker w;
    kctl_queue *q = tq_new_opts(&vc, 0, KCTL_PENDING_KEEP, true, 0, NULL);
    if (!q) return;
    if (!tq_start_get_one(&w, q)) { tq_free(q, &vc); return; }
    KT_CHECK(tq_wait_idle(q, 1));
    KT_EQ_INT(kctl_queue_add_low(q, "k"), KCTL_OK);
    tq_join_get_one(&w, &vc);
    KT_EQ_INT(w.rc, KCTL_OK);
    KT_EQ_STR(w.key, "k");
    kctl_queue_done(q, "k");
    tq_free(q, &vc);
#else
    KT_SKIP();
#endif
}

void kt_suite_queue(void) {
    KT_RUN(tq_create_null_desc);
    KT_RUN(tq_create_bad_args);
    KT_RUN(tq_create_owns_limiter);
    KT_RUN(tq_desc_init_defaults);
    KT_RUN(tq_name_copied);
    KT_RUN(tq_fifo);
    KT_RUN(tq_fifo_many);
    KT_RUN(tq_dedup);
    KT_RUN(tq_key_copied);
    KT_RUN(tq_processing_held_back);
    KT_RUN(tq_processing_requeue_at_tail);
    KT_RUN(tq_done_not_processing);
    KT_RUN(tq_add_after_zero);
    KT_RUN(tq_add_after_delay);
    KT_RUN(tq_add_after_earlier_wins);
    KT_RUN(tq_add_after_ready_order);
    KT_RUN(tq_add_after_ready_before_later_add);
    KT_RUN(tq_add_after_due_before_add_real);
    KT_RUN(tq_done_after_due_delayed);
    KT_RUN(tq_delayed_dedup_waiting);
    KT_RUN(tq_delayed_after_done);
    KT_RUN(tq_delayed_while_processing);
    KT_RUN(tq_add_while_delayed_dedup);
    KT_RUN(tq_add_while_delayed_done_first);
    KT_RUN(tq_add_while_delayed_processing);
    KT_RUN(tq_add_after_zero_while_delayed);
    KT_RUN(tq_add_after_huge_delay);
    KT_RUN(tq_next_ready);
    KT_RUN(tq_rate_limited_exponential);
    KT_RUN(tq_rate_limited_custom);
    KT_RUN(tq_default_limiter_on_queue_clock);
    KT_RUN(tq_shutdown);
    KT_RUN(tq_shutdown_keeps_ready_delayed);
    KT_RUN(tq_shutdown_held_back);
    KT_RUN(tq_shutdown_add_while_processing);
    KT_RUN(tq_shutdown_with_drain_idle);
    KT_RUN(tq_bad_input);
    KT_RUN(tq_alloc_used_and_freed);
    KT_RUN(tq_alloc_steady_state);
    KT_RUN(tq_idle_entries_bounded);
    KT_RUN(tq_returned_revived);
    KT_RUN(tq_map_kept_while_in_use);
    KT_RUN(tq_map_trimmed_with_keys_delayed);
    KT_RUN(tq_map_trim_nomem_retries_later);
    KT_RUN(tq_nomem_create);
    KT_RUN(tq_nomem_add);
    KT_RUN(tq_nomem_inbox_in_order);
    KT_RUN(tq_inbox_dedup_bounded);
    KT_RUN(tq_nomem_add_after);
    KT_RUN(tq_nomem_held_back);
    KT_RUN(tq_nomem_sweep);
    KT_RUN(tq_histogram_bounds);
    KT_RUN(tq_stats_depth_adds);
    KT_RUN(tq_stats_retries);
    KT_RUN(tq_stats_durations);
    KT_RUN(tq_stats_histogram_edges);
    KT_RUN(tq_stats_queue_duration_held_back);
    KT_RUN(tq_stats_queue_duration_delayed);
    KT_RUN(tq_stats_delayed_promoted_on_read);
    KT_RUN(tq_stats_unfinished);
    KT_RUN(tq_nothreads_get_does_not_block);
    KT_RUN(tq_thread_wake_on_add);
    KT_RUN(tq_thread_parked_worker_trims);
    KT_RUN(tq_thread_vclock_wake);
    KT_RUN(tq_thread_ready_keys_wake_each_worker);
    KT_RUN(tq_thread_vclock_wake_new_deadline);
    KT_RUN(tq_thread_shutdown_wakes_get);
    KT_RUN(tq_thread_done_wakes_get);
    KT_RUN(tq_thread_drain_waits_for_done);
    KT_RUN(tq_thread_stress);
    KT_RUN(tq_thread_stress_delayed);
    KT_RUN(tq_thread_inbox);
    KT_RUN(tq_pending_add_cancels);
    KT_RUN(tq_pending_add_while_processing);
    KT_RUN(tq_pending_merge_drops_later);
    KT_RUN(tq_pending_heap_order);
    KT_RUN(tq_pending_heap_model);
    KT_RUN(tq_pending_bad_mode);
    KT_RUN(tq_options_steady_state);
    KT_RUN(tq_prio_edit_first);
    KT_RUN(tq_prio_aging_bound);
    KT_RUN(tq_prio_dedup_raise);
    KT_RUN(tq_prio_counts);
    KT_RUN(tq_thread_wake_on_add_low);
#if defined(KCTL__SPIN_TEST) && !defined(KCTL_NO_THREADS) && (defined(__GNUC__) || defined(__clang__))
    KT_RUN(tq_spin_policy_one_cpu_never_spins);
    KT_RUN(tq_spin_policy_spins_while_it_pays);
    KT_RUN(tq_spin_policy_probes_after_misses);
    KT_RUN(tq_spin_bounded_by_time);
    KT_RUN(tq_spin_widen_by_cpus);
    KT_RUN(tq_done_get_one_hold);
    KT_RUN(tq_owned_keys);
    KT_RUN(tq_inbox_stalled_at_shutdown);
    KT_RUN(tq_inbox_widen_by_cpus);
#endif
}
