/* test_budget.c - the budgeted mode: bounded queue, cache and memstore,
   the memstore's lazily grown history, the allocator hook everywhere
   (limiters too), the informer's transform hook, and a counting allocator
   over a running single-threaded controller. */
#include "kt.h"
#include <stdlib.h>

#define TB_HDR 16 /* room for the size, keeping malloc's alignment */

static const kctl_resource tb_cm = { "", "v1", "configmaps", "prod" };

/* A counting allocator that knows sizes: live bytes and their peak. */
typedef struct tb_alloc {
    long allocs, frees;
    size_t live_bytes, peak_bytes;
} tb_alloc;

static void *tb_alloc_fn(size_t size, void *user_data) {
    tb_alloc *a = (tb_alloc *)user_data;
    size_t *p = (size_t *)malloc(size + TB_HDR);
    if (!p) return NULL;
    *p = size;
    a->allocs++;
    a->live_bytes += size;
    if (a->live_bytes > a->peak_bytes) a->peak_bytes = a->live_bytes;
    return (char *)p + TB_HDR;
}

static void tb_free_fn(void *ptr, void *user_data) {
    tb_alloc *a = (tb_alloc *)user_data;
    size_t *p;
    if (!ptr) return;
    p = (size_t *)(void *)((char *)ptr - TB_HDR);
    a->frees++;
    a->live_bytes -= *p;
    free(p);
}

static kctl_allocator tb_allocator(tb_alloc *a);
static kctl_allocator tb_allocator(tb_alloc *a) {
    kctl_allocator al;
    memset(a, 0, sizeof *a);
    al.alloc_fn = tb_alloc_fn;
    al.free_fn = tb_free_fn;
    al.user_data = a;
    return al;
}

static int tb_full_logs;
static void tb_log(int level, uint32_t item, const char *message, void *user_data) {
    (void)level;
    (void)message;
    (void)user_data;
    if (item == KCTL_LOGITEM_QUEUE_FULL) tb_full_logs++;
}

/* max_keys: a new key past the bound is FULL, counted and logged; a key the
   queue holds (waiting, in flight, held back, delayed) is always accepted;
   nothing accepted is lost. */
static void tb_queue_max_keys(void) {
    kctl_queue_desc d = kctl_queue_desc_init();
    kctl_queue *q;
    kctl_queue_stats st;
    const char *k;
    d.max_keys = 2;
    d.logger.func = tb_log;
    tb_full_logs = 0;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "b"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_ERR_FULL);
    KT_EQ_INT(kctl_queue_add_after(q, "c", KCTL_MS(5)), KCTL_ERR_FULL);
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);          /* waiting: de-duplicated */
    KT_EQ_INT(kctl_queue_len(q), 2);
    KT_EQ_INT(kctl_queue_try_get(q, &k), KCTL_OK);
    KT_EQ_STR(k, "a");
    KT_EQ_INT(kctl_queue_add(q, "a"), KCTL_OK);          /* in flight: held back, accepted */
    KT_EQ_INT(kctl_queue_add_after(q, "a", KCTL_SEC(9)), KCTL_OK); /* delayed too: accepted */
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_ERR_FULL);
    kctl_queue_done(q, "a");                             /* "a" queued again */
    KT_EQ_INT(kctl_queue_len(q), 2);
    KT_EQ_INT(kctl_queue_read_stats(q, &st), KCTL_OK);
    KT_EQ_U64(st.refused_total, 3);
    KT_EQ_INT(tb_full_logs, 3);
    /* drain: room again */
    KT_EQ_INT(kctl_queue_try_get(q, &k), KCTL_OK);
    KT_EQ_STR(k, "b");
    kctl_queue_done(q, k);
    KT_EQ_INT(kctl_queue_try_get(q, &k), KCTL_OK);
    KT_EQ_STR(k, "a");
    kctl_queue_done(q, k);
    /* "a" is still delayed (one key, one role): one more key fits */
    KT_EQ_INT(kctl_queue_add(q, "c"), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(q, "d"), KCTL_ERR_FULL);
    kctl_queue_destroy(q);
}

/* A controller whose queue is full refuses a key; the informer's level-based
   resync on the virtual clock queues it again and it is reconciled. */
typedef struct tb_ctl {
    int calls;
    char keys[256];
} tb_ctl;

static kctl_reconcile_result tb_reconcile(const kctl_reconcile_ctx *ctx) {
    tb_ctl *t = (tb_ctl *)ctx->user_data;
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    t->calls++;
    if (strlen(t->keys) + strlen(ctx->key) + 2 < sizeof t->keys) {
        if (t->keys[0]) strcat(t->keys, " ");
        strcat(t->keys, ctx->key);
    }
    return r;
}

static void tb_queue_full_resync(void) {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_memstore_desc md;
    kctl_informer_desc id;
    kctl_informer *inf;
    kctl_controller_desc cd;
    kctl_controller *c;
    kctl_queue_stats st;
    tb_ctl t;
    memset(&t, 0, sizeof t);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    memset(&id, 0, sizeof id);
    id.transport = kctl_memstore_transport(ms);
    id.resource = tb_cm;
    id.clock = kctl_vclock_clock(&vc);
    id.resync_ns = KCTL_SEC(30);
    KT_EQ_INT(kctl_informer_create(&id, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tb_reconcile;
    cd.user_data = &t;
    cd.clock = kctl_vclock_clock(&vc);
    cd.max_keys = 1;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    KT_EQ_INT(kctl_queue_add(kctl_controller_queue(c), "prod/manual"), KCTL_OK); /* the one place */
    KT_EQ_INT(kctl_memstore_apply(ms, &tb_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    kctl_informer_step(inf, 0, NULL);        /* b's add: refused (FULL), counted */
    KT_EQ_INT(kctl_queue_read_stats(kctl_controller_queue(c), &st), KCTL_OK);
    KT_EQ_U64(st.refused_total, 1);
    kctl_controller_step(c, 10, NULL);
    KT_EQ_INT(t.calls, 1);
    KT_EQ_STR(t.keys, "prod/manual");
    kctl_controller_step(c, 10, NULL);       /* b was not queued */
    KT_EQ_INT(t.calls, 1);
    kctl_vclock_advance(&vc, KCTL_SEC(29));
    kctl_informer_step(inf, 0, NULL);        /* no resync yet */
    kctl_controller_step(c, 10, NULL);
    KT_EQ_INT(t.calls, 1);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    kctl_informer_step(inf, 0, NULL);        /* the resync finds b: queued now */
    kctl_controller_step(c, 10, NULL);
    KT_EQ_INT(t.calls, 2);
    KT_EQ_STR(t.keys, "prod/manual prod/b");
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* Limiters allocate through the hook: the default limiter a queue makes,
   its per-key failure records, and every constructor's _with variant. */
static void tb_limiter_allocator(void) {
    tb_alloc ta;
    kctl_allocator al = tb_allocator(&ta);
    kctl_queue_desc d = kctl_queue_desc_init();
    kctl_queue *q;
    kctl_limiter *l, *parts[2];
    long before;
    d.allocator = al;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    before = ta.allocs;
    KT_CHECK(before >= 6); /* the queue, and the default limiter's five blocks */
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "default/a"), KCTL_OK);
    KT_CHECK(ta.allocs > before); /* a failure record: from the hook */
    kctl_queue_destroy(q);
    KT_EQ_U64(ta.live_bytes, 0);
    KT_EQ_INT(ta.allocs, ta.frees);
    parts[0] = kctl_limiter_fast_slow_with(KCTL_MS(1), KCTL_MS(9), 2, &al);
    parts[1] = kctl_limiter_bucket_with(NULL, 5.0, 3, &al);
    l = kctl_limiter_max_of_with(parts, 2, &al);
    KT_CHECK(l != NULL);
    KT_EQ_U64(kctl_limiter_when(l, "x"), KCTL_MS(1));
    KT_EQ_INT(kctl_limiter_num_requeues(l, "x"), 1);
    kctl_limiter_forget(l, "x");
    KT_EQ_INT(kctl_limiter_num_requeues(l, "x"), 0);
    kctl_limiter_destroy(l);
    KT_EQ_U64(ta.live_bytes, 0);
    KT_CHECK(ta.allocs >= 5 + before);
    al.free_fn = NULL; /* one function: refused */
    KT_CHECK(kctl_limiter_exponential_with(1, 2, &al) == NULL);
}

void kt_suite_budget(void) {
    KT_RUN(tb_limiter_allocator);
    KT_RUN(tb_queue_max_keys);
    KT_RUN(tb_queue_full_resync);
}
