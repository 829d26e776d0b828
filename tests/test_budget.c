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
    long live_blocks, peak_blocks;
} tb_alloc;

static void *tb_alloc_fn(size_t size, void *user_data) {
    tb_alloc *a = (tb_alloc *)user_data;
    size_t *p = (size_t *)malloc(size + TB_HDR);
    if (!p) return NULL;
    *p = size;
    a->allocs++;
    if (++a->live_blocks > a->peak_blocks) a->peak_blocks = a->live_blocks;
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
    a->live_blocks--;
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
    KT_CHECK(before >= 3); /* the queue, and the default limiter's two blocks (it and its state) */
    KT_EQ_INT(kctl_queue_add_rate_limited(q, "default/a"), KCTL_OK);
    KT_CHECK(ta.allocs > before); /* a failure record: from the hook */
    kctl_queue_destroy(q);
    KT_EQ_U64(ta.live_bytes, 0);
    KT_EQ_INT(ta.allocs, ta.frees);
    parts[0] = kctl_limiter_fast_slow_with(KCTL_MS(1), KCTL_MS(9), 2, &al);
#ifdef KCTL_NO_FLOAT
    parts[1] = kctl_limiter_bucket_rate_with(NULL, 5, KCTL_SEC(1), 3, &al); /* no double bucket here */
#else
    parts[1] = kctl_limiter_bucket_with(NULL, 5.0, 3, &al);
#endif
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

static int tb_ms_full_logs;
static void tb_ms_log(int level, uint32_t item, const char *message, void *user_data) {
    (void)level;
    (void)message;
    (void)user_data;
    if (item == KCTL_LOGITEM_MEMSTORE_FULL) tb_ms_full_logs++;
}

static int tb_put(kctl_memstore *ms, const char *name, const char *data, kctl_api_status *st) {
    char doc[512];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"data\":{\"v\":\"%s\"}}", name, data);
    return kctl_memstore_apply(ms, &tb_cm, doc, KCTL_NTS, NULL, st);
}

/* The history ring grows with the writes up to desc.history; an empty store
   holds no ring; a watch older than the history gets GONE, one within it
   gets every event. */
static void tb_memstore_history_lazy(void) {
    tb_alloc ta;
    kctl_memstore_desc md;
    kctl_memstore *ms;
    kctl_memstore_stats ss;
    kctl_transport t;
    kctl_watch *w = NULL;
    kctl_event ev;
    char name[16], rv[24];
    int i, rc, n;
    memset(&ss, 0, sizeof ss);
    memset(&md, 0, sizeof md);
    md.allocator = tb_allocator(&ta);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    KT_EQ_INT(kctl_memstore_read_stats(ms, &ss), KCTL_OK);
    KT_EQ_INT(ss.history_cap, 0);
    KT_CHECK(ta.peak_bytes < 8192); /* was 1,024 events preallocated: over 40 KB */
    KT_EQ_INT(tb_put(ms, "a", "1", NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_read_stats(ms, &ss), KCTL_OK);
    KT_EQ_INT(ss.history, 1);
    KT_EQ_INT(ss.history_cap, 8);
    kctl_memstore_destroy(ms);
    KT_EQ_U64(ta.live_bytes, 0);

    memset(&md, 0, sizeof md);
    md.history = 10;
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    t = kctl_memstore_transport(ms);
    for (i = 0; i < 30; i++) {
        snprintf(name, sizeof name, "o%d", i % 3);
        KT_EQ_INT(tb_put(ms, name, i % 2 ? "x" : "y", NULL), KCTL_OK);
    }
    KT_EQ_INT(kctl_memstore_read_stats(ms, &ss), KCTL_OK);
    KT_EQ_INT(ss.history, 10);
    KT_EQ_INT(ss.history_cap, 10);
    KT_EQ_INT(ss.objects, 3);
    /* from revision 5: compacted away */
    rc = kctl_transport_watch_open(&t, &tb_cm, NULL, "5", &w, NULL);
    if (rc == KCTL_OK) {
        memset(&ev, 0, sizeof ev);
        rc = kctl_transport_watch_next(&t, w, 0, &ev, NULL);
        kctl_obj_unref(ev.obj);
        kctl_transport_watch_close(&t, w);
    }
    KT_EQ_INT(rc, KCTL_ERR_GONE);
    /* from revision 25: the last five events, in order */
    KT_EQ_INT(kctl_transport_watch_open(&t, &tb_cm, NULL, "25", &w, NULL), KCTL_OK);
    for (n = 0;; n++) {
        memset(&ev, 0, sizeof ev);
        if (kctl_transport_watch_next(&t, w, 0, &ev, NULL) != KCTL_OK) break;
        snprintf(rv, sizeof rv, "%d", 26 + n);
        KT_EQ_STR(ev.resource_version, rv);
        kctl_obj_unref(ev.obj);
    }
    KT_EQ_INT(n, 5);
    kctl_transport_watch_close(&t, w);
    kctl_memstore_destroy(ms);
}

/* max_objects and max_bytes: FULL with a 507 Status, the store unchanged,
   logged and counted; replaces that do not grow, and deletes, pass. */
static void tb_memstore_full(void) {
    kctl_memstore_desc md;
    kctl_memstore *ms;
    kctl_memstore_stats ss;
    kctl_api_status st;
    kctl_obj *o = NULL;
    uint64_t rev;
    memset(&ss, 0, sizeof ss);
    memset(&md, 0, sizeof md);
    md.max_objects = 2;
    md.logger.func = tb_ms_log;
    tb_ms_full_logs = 0;
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "a", "1", NULL), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "b", "1", NULL), KCTL_OK);
    rev = kctl_memstore_revision(ms);
    memset(&st, 0, sizeof st);
    KT_EQ_INT(tb_put(ms, "c", "1", &st), KCTL_ERR_FULL);
    KT_EQ_INT(st.code, 507);
    KT_EQ_STR(st.reason, "InsufficientStorage");
    kctl_api_status_clear(&st);
    KT_EQ_U64(kctl_memstore_revision(ms), rev);
    KT_EQ_INT(kctl_memstore_get(ms, &tb_cm, "c", &o, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(tb_put(ms, "a", "2", NULL), KCTL_OK);   /* a replace: no new object */
    KT_EQ_INT(kctl_memstore_delete(ms, &tb_cm, "b", NULL), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "c", "1", NULL), KCTL_OK);   /* room again */
    KT_EQ_INT(kctl_memstore_read_stats(ms, &ss), KCTL_OK);
    KT_EQ_U64(ss.refused_full, 1);
    KT_EQ_INT(ss.objects, 2);
    KT_EQ_INT(tb_ms_full_logs, 1);
    kctl_memstore_destroy(ms);

    memset(&md, 0, sizeof md);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "a", "1", NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_read_stats(ms, &ss), KCTL_OK);
    kctl_memstore_destroy(ms);
    memset(&md, 0, sizeof md);
    md.max_bytes = ss.bytes + 4;                          /* room for "a" and 4 bytes more */
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "a", "1", NULL), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "a", "12345", NULL), KCTL_OK);   /* +4 bytes: exactly the bound */
    rev = kctl_memstore_revision(ms);
    KT_EQ_INT(tb_put(ms, "a", "123456", NULL), KCTL_ERR_FULL);
    KT_EQ_INT(tb_put(ms, "b", "", NULL), KCTL_ERR_FULL);
    KT_EQ_U64(kctl_memstore_revision(ms), rev);
    KT_EQ_INT(kctl_memstore_get(ms, &tb_cm, "a", &o, NULL), KCTL_OK);
    {
        char v[16];
        KT_EQ_INT(kctl_obj_get_string(o, "data.v", v, sizeof v, NULL), KCTL_OK);
        KT_EQ_STR(v, "12345");
    }
    kctl_obj_unref(o);
    KT_EQ_INT(tb_put(ms, "a", "1", NULL), KCTL_OK);       /* shrinking passes */
    KT_EQ_INT(kctl_memstore_read_stats(ms, &ss), KCTL_OK);
    KT_EQ_U64(ss.refused_full, 2);
    KT_EQ_U64(ss.bytes, md.max_bytes - 4);
    kctl_memstore_destroy(ms);
}

/* What an informer's handlers saw. */
typedef struct tb_seen {
    int adds, updates, deletes;
    int with_managed;  /* objects handed to handlers that still had managedFields */
    int logs_full, logs_transform;
} tb_seen;

static bool tb_has_managed(const kctl_obj *o) {
    kctl_json_value v;
    return o && kctl_obj_get(o, "metadata.managedFields", &v) == KCTL_OK;
}
static void tb_on_add(kctl_obj *obj, void *ud) {
    tb_seen *s = (tb_seen *)ud;
    s->adds++;
    if (tb_has_managed(obj)) s->with_managed++;
}
static void tb_on_update(kctl_obj *old_obj, kctl_obj *new_obj, void *ud) {
    tb_seen *s = (tb_seen *)ud;
    s->updates++;
    if (tb_has_managed(old_obj) || tb_has_managed(new_obj)) s->with_managed++;
}
static void tb_on_delete(const char *key, kctl_obj *last, bool unknown, void *ud) {
    tb_seen *s = (tb_seen *)ud;
    (void)key;
    (void)unknown;
    s->deletes++;
    if (tb_has_managed(last)) s->with_managed++;
}
static void tb_inf_log(int level, uint32_t item, const char *message, void *ud) {
    tb_seen *s = (tb_seen *)ud;
    (void)level;
    (void)message;
    if (item == KCTL_LOGITEM_INFORMER_CACHE_FULL) s->logs_full++;
    if (item == KCTL_LOGITEM_INFORMER_TRANSFORM_FAILED) s->logs_transform++;
}

static kctl_informer *tb_informer(kctl_memstore *ms, kctl_vclock *vc, kctl_informer_desc *d, tb_seen *seen) {
    kctl_informer *inf = NULL;
    kctl_handler h;
    d->transport = kctl_memstore_transport(ms);
    d->resource = tb_cm;
    d->clock = kctl_vclock_clock(vc);
    d->logger.func = tb_inf_log;
    d->logger.user_data = seen;
    if (kctl_informer_create(d, &inf) != KCTL_OK) return NULL;
    memset(&h, 0, sizeof h);
    h.on_add = tb_on_add;
    h.on_update = tb_on_update;
    h.on_delete = tb_on_delete;
    h.user_data = seen;
    kctl_informer_add_handler(inf, &h);
    return inf;
}

/* The cache bound: an object refused (FULL) is not cached nor told, is
   logged and counted, and the relist the reflector does after its backoff
   caches it once a deletion made room. */
static void tb_informer_cache_full(void) {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_informer_desc d;
    kctl_informer *inf;
    kctl_reflector_stats rs;
    kctl_obj *o;
    tb_seen seen;
    int i;
    memset(&seen, 0, sizeof seen);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "a", "1", NULL), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "b", "1", NULL), KCTL_OK);
    KT_EQ_INT(tb_put(ms, "c", "1", NULL), KCTL_OK);
    memset(&d, 0, sizeof d);
    d.max_objects = 2;
    inf = tb_informer(ms, &vc, &d, &seen);
    KT_CHECK(inf != NULL);
    if (!inf) return;
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_INT(kctl_indexer_len(kctl_informer_indexer(inf)), 2);
    KT_EQ_INT(seen.adds, 2);
    KT_EQ_INT(seen.logs_full, 1);
    KT_CHECK(kctl_informer_has_synced(inf)); /* a partial cache, said in the stats */
    kctl_informer_read_stats(inf, &rs);
    KT_EQ_U64(rs.cache_full, 1);
    KT_EQ_INT(rs.last_error, KCTL_ERR_FULL);
    o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/c");
    KT_CHECK(o == NULL);
    kctl_obj_unref(o);
    /* room: a deletion; the relists after the backoff offer c again */
    KT_EQ_INT(kctl_memstore_delete(ms, &tb_cm, "a", NULL), KCTL_OK);
    for (i = 0; i < 4 && !(o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/c")); i++) {
        kctl_vclock_advance(&vc, KCTL_SEC(61)); /* past any backoff */
        KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    }
    KT_CHECK(o != NULL);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_indexer_len(kctl_informer_indexer(inf)), 2);
    KT_EQ_INT(seen.adds, 3);      /* c told once it got in */
    KT_EQ_INT(seen.deletes, 1);   /* a */
    kctl_informer_read_stats(inf, &rs);
    KT_CHECK(rs.relists + rs.lists >= 2);
    KT_EQ_INT(rs.last_error, KCTL_OK);
    kctl_informer_destroy(inf);

    /* max_bytes: an update that would grow past it keeps the cached version */
    memset(&seen, 0, sizeof seen);
    memset(&d, 0, sizeof d);
    o = NULL;
    KT_EQ_INT(kctl_memstore_get(ms, &tb_cm, "b", &o, NULL), KCTL_OK);
    {
        size_t nb = 0, nc = 0;
        kctl_obj *oc = NULL;
        kctl_obj_json(o, &nb);
        KT_EQ_INT(kctl_memstore_get(ms, &tb_cm, "c", &oc, NULL), KCTL_OK);
        kctl_obj_json(oc, &nc);
        kctl_obj_unref(oc);
        d.max_bytes = nb + nc + 2; /* b and c, and two bytes more */
    }
    kctl_obj_unref(o);
    inf = tb_informer(ms, &vc, &d, &seen);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_INT(seen.adds, 2);
    KT_EQ_INT(tb_put(ms, "b", "1234567890", NULL), KCTL_OK);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_INT(seen.updates, 0);
    KT_EQ_INT(seen.logs_full, 1);
    o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/b");
    KT_CHECK(o != NULL);
    if (o) { /* the version before the refused update */
        char v[16];
        KT_EQ_INT(kctl_obj_get_string(o, "data.v", v, sizeof v, NULL), KCTL_OK);
        KT_EQ_STR(v, "1");
    }
    kctl_obj_unref(o);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

static int tb_refuse_bad(kctl_obj *obj, kctl_obj **out, void *ud) {
    if (strcmp(kctl_obj_name(obj), "bad") == 0) return KCTL_ERR_PROTO;
    return kctl_transform_drop_managed_fields(obj, out, ud);
}

/* The transform: the cache and every event hold the object without
   metadata.managedFields; a refusal is dropped, logged and counted. */
static void tb_informer_transform(void) {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_informer_desc d;
    kctl_informer *inf;
    kctl_reflector_stats rs;
    kctl_obj *o;
    tb_seen seen;
    static const char mf[] = "{\"metadata\":{\"name\":\"%s\",\"managedFields\":[{\"manager\":\"kubectl\","
                             "\"operation\":\"Apply\",\"fieldsV1\":{\"f:data\":{}}}]},\"data\":{\"v\":\"%s\"}}";
    char doc[512];
    memset(&seen, 0, sizeof seen);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
    snprintf(doc, sizeof doc, mf, "a", "1");
    KT_EQ_INT(kctl_memstore_apply(ms, &tb_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
    snprintf(doc, sizeof doc, mf, "bad", "1");
    KT_EQ_INT(kctl_memstore_apply(ms, &tb_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
    memset(&d, 0, sizeof d);
    d.transform = tb_refuse_bad;
    inf = tb_informer(ms, &vc, &d, &seen);
    KT_CHECK(inf != NULL);
    if (!inf) return;
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/a");
    KT_CHECK(o != NULL);
    KT_CHECK(!tb_has_managed(o));
    if (o) KT_EQ_STR(kctl_obj_uid(o), "00000000-0000-4000-8000-000000000001");
    kctl_obj_unref(o);
    o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/bad");
    KT_CHECK(o == NULL);
    kctl_obj_unref(o);
    KT_EQ_INT(seen.adds, 1);
    KT_EQ_INT(seen.logs_transform, 1);
    snprintf(doc, sizeof doc, mf, "a", "2");  /* a watch event: transformed too */
    KT_EQ_INT(kctl_memstore_apply(ms, &tb_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_delete(ms, &tb_cm, "a", NULL), KCTL_OK);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_INT(seen.updates, 1);
    KT_EQ_INT(seen.deletes, 1);
    KT_EQ_INT(seen.with_managed, 0);
    kctl_informer_read_stats(inf, &rs);
    KT_EQ_U64(rs.transform_errors, 1);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* A running single-threaded controller, stepped by hand (as under
   KCTL_NO_THREADS): once warm, the informer, the FIFO, the cache, the queue,
   the limiter and the controller allocate nothing per event; the store
   allocates the object written (and scratch it frees before it returns);
   and the bounds hold: objects alive at most the store's, plus the two an
   event keeps per history slot; no allocator's peak grows after warm-up. */
static int tb_steady_calls;
static kctl_reconcile_result tb_steady_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    tb_steady_calls++;
    if (ctx->obj && kctl_obj_name(ctx->obj)[1] == '0') r.requeue_after_ns = KCTL_SEC(1); /* the delay heap too */
    return r;
}

static void tb_steady_state(void) {
    enum { NOBJ = 8, HISTORY = 16, N = 400 };
    tb_alloc store, objs, pipe;
    kctl_vclock vc;
    kctl_memstore_desc md;
    kctl_memstore *ms;
    kctl_informer_desc id;
    kctl_informer *inf;
    kctl_controller_desc cd;
    kctl_controller *c;
    kctl_memstore_stats ss;
    char doc[256];
    long pipe_allocs, objs_allocs, store_live;
    size_t pipe_peak, store_peak;
    int i, round;
    memset(&ss, 0, sizeof ss);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.allocator = tb_allocator(&store);
    md.obj_opts.allocator = tb_allocator(&objs);
    md.clock = kctl_vclock_clock(&vc);
    md.history = HISTORY;
    md.max_objects = NOBJ;
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    memset(&id, 0, sizeof id);
    id.transport = kctl_memstore_transport(ms);
    id.resource = tb_cm;
    id.clock = kctl_vclock_clock(&vc);
    id.allocator = tb_allocator(&pipe);
    id.max_objects = NOBJ;
    KT_EQ_INT(kctl_informer_create(&id, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tb_steady_reconcile;
    cd.clock = kctl_vclock_clock(&vc);
    cd.allocator = id.allocator;
    cd.max_keys = NOBJ;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    tb_steady_calls = 0;
    pipe_allocs = objs_allocs = store_live = 0;
    pipe_peak = store_peak = 0;
    for (round = 0; round < 2; round++) { /* round 0 warms up, round 1 counts */
        if (round == 1) {
            pipe_allocs = pipe.allocs;
            objs_allocs = objs.allocs;
            store_live = store.live_blocks;
            pipe_peak = pipe.peak_bytes;
            store_peak = store.peak_bytes;
        }
        for (i = 0; i < N; i++) {
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%d\",\"labels\":{\"app\":\"x\"}},\"data\":{\"v\":\"%06d\"}}",
                     i % NOBJ, round * N + i);
            KT_EQ_INT(kctl_memstore_apply(ms, &tb_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
            KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
            KT_EQ_INT(kctl_controller_step(c, NOBJ, NULL), KCTL_OK);
            if (i % 50 == 49) kctl_vclock_advance(&vc, KCTL_SEC(1)); /* delayed keys come due */
            KT_CHECK(objs.live_blocks <= NOBJ + 2 * HISTORY + 2);
        }
    }
    KT_EQ_INT(pipe.allocs - pipe_allocs, 0);   /* nothing per event in the pipeline */
    KT_EQ_INT(objs.allocs - objs_allocs, N);   /* one object per write, nothing else */
    KT_EQ_INT(store.live_blocks, store_live);  /* the store's scratch is freed */
    KT_EQ_U64(pipe.peak_bytes, pipe_peak);     /* no peak grows once warm */
    KT_EQ_U64(store.peak_bytes, store_peak);
    KT_CHECK(objs.peak_blocks <= NOBJ + 2 * HISTORY + 2);
    KT_CHECK(tb_steady_calls >= N);            /* the controller ran */
    KT_EQ_INT(kctl_memstore_read_stats(ms, &ss), KCTL_OK);
    KT_EQ_INT(ss.history_cap, HISTORY);
    KT_CHECK(kctl_indexer_len(kctl_informer_indexer(inf)) <= NOBJ);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
    KT_EQ_U64(pipe.live_bytes, 0);
    KT_EQ_U64(store.live_bytes, 0);
    KT_EQ_U64(objs.live_bytes, 0);
}

/* Scratch memory goes through the hooks too: kctl_status_update's token
   arrays, its equality of big objects and the document it writes come
   from the allocator the object was made with, as do a merge patch's done
   by get and update; kctl_json_equal_with's from the one it is given. The
   store's own calls are wrapped: what the default allocator gives inside
   them is the store's (a debug build's self-check), not the helper's. */
static unsigned long tb_inner_default; /* default allocations inside the store's calls */
static kctl_transport tb_inner;
static int tb_w_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    unsigned long before = kt_default_allocs();
    int rc;
    (void)self;
    rc = kctl_transport_get(&tb_inner, res, name, out, st);
    tb_inner_default += kt_default_allocs() - before;
    return rc;
}
static int tb_w_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    unsigned long before = kt_default_allocs();
    int rc;
    (void)self;
    rc = kctl_transport_update(&tb_inner, res, json, len, out, st);
    tb_inner_default += kt_default_allocs() - before;
    return rc;
}
static int tb_w_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                              kctl_api_status *st) {
    unsigned long before = kt_default_allocs();
    int rc;
    (void)self;
    rc = kctl_transport_update_status(&tb_inner, res, json, len, out, st);
    tb_inner_default += kt_default_allocs() - before;
    return rc;
}

/* {"k0":"<p>0","k1":"<p>1",...}: n members; rev: the last first (names
   in another order are sorted to be compared: scratch memory) */
static void tb_big(char *buf, size_t cap, int n, const char *p, bool rev) {
    int i;
    size_t at = 0;
    at += (size_t)snprintf(buf + at, cap - at, "{");
    for (i = 0; i < n && at < cap; i++) {
        int k = rev ? n - 1 - i : i;
        at += (size_t)snprintf(buf + at, cap - at, "%s\"k%d\":\"%s%d\"", i ? "," : "", k, p, k);
    }
    if (at < cap) snprintf(buf + at, cap - at, "}");
}

static void tb_scratch_allocator(void) {
    tb_alloc objs, scratch;
    kctl_memstore_desc md;
    kctl_memstore *ms;
    kctl_transport_vtable vt;
    kctl_transport t;
    kctl_allocator al;
    kctl_obj *o = NULL, *o2 = NULL;
    kctl_json a, b;
    kctl_json_tok ta[64], tbk[64];
    char st_a[512], st_b[512], doc[1024];
    bool written = true;
    unsigned long before;
    long objs_before;
    /* kctl_json_equal_with: objects of 20 members whose names come in
       another order sort their names in the memory given; kctl_json_equal
       in the default's */
    tb_big(st_a, sizeof st_a, 20, "a", false);
    tb_big(st_b, sizeof st_b, 20, "a", true);
    KT_EQ_INT(kctl_json_parse(st_a, strlen(st_a), ta, 64, NULL, &a), KCTL_OK);
    KT_EQ_INT(kctl_json_parse(st_b, strlen(st_b), tbk, 64, NULL, &b), KCTL_OK);
    al = tb_allocator(&scratch);
    before = kt_default_allocs();
    KT_CHECK(kctl_json_equal_with(&a, 0, &b, 0, &al));
    KT_EQ_U64(kt_default_allocs(), before);
    KT_CHECK(scratch.allocs >= 2);
    KT_EQ_INT(scratch.live_blocks, 0);
    KT_CHECK(kctl_json_equal(&a, 0, &b, 0));
    KT_CHECK(kt_default_allocs() > before); /* the counter sees the default */
#if !(defined(KCTL_SMALL) ? KCTL_SMALL : defined(__OPTIMIZE_SIZE__)) /* (small builds sort them: less code) */
    { /* in the same order: side by side, no memory */
        char st_c[512];
        kctl_json c;
        kctl_json_tok tc[64];
        long scratch_before = scratch.allocs;
        tb_big(st_c, sizeof st_c, 20, "a", false);
        KT_EQ_INT(kctl_json_parse(st_c, strlen(st_c), tc, 64, NULL, &c), KCTL_OK);
        before = kt_default_allocs();
        KT_CHECK(kctl_json_equal_with(&a, 0, &c, 0, &al));
        KT_CHECK(kctl_json_equal(&c, 0, &a, 0));
        KT_EQ_U64(kt_default_allocs(), before);
        KT_EQ_U64(scratch.allocs - scratch_before, 0);
    }
#endif
    /* kctl_status_update and a patch by get and update: the object's allocator */
    memset(&md, 0, sizeof md);
    md.obj_opts.allocator = tb_allocator(&objs);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    tb_inner = kctl_memstore_transport(ms);
    vt = *tb_inner.vt;
    vt.get = tb_w_get;
    vt.update = tb_w_update;
    vt.update_status = tb_w_update_status;
    vt.patch = NULL; /* kctl_transport_patch reads, merges and updates */
    t.vt = &vt;
    t.self = NULL;
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"big\"},\"status\":%s}", st_a);
    KT_EQ_INT(kctl_memstore_apply(ms, &tb_cm, doc, KCTL_NTS, &o, NULL), KCTL_OK);
    tb_inner_default = 0;
    before = kt_default_allocs();
    objs_before = objs.allocs;
    KT_EQ_INT(kctl_status_update(&t, &tb_cm, o, st_b, KCTL_NTS, &written, NULL, NULL), KCTL_OK);
    KT_CHECK(!written); /* equal: nothing written */
    KT_EQ_U64(kt_default_allocs() - before - tb_inner_default, 0);
    KT_CHECK(objs.allocs - objs_before >= 4); /* two token arrays, two name sorts */
    tb_big(st_b, sizeof st_b, 20, "b", true);
    objs_before = objs.allocs;
    KT_EQ_INT(kctl_status_update(&t, &tb_cm, o, st_b, KCTL_NTS, &written, &o2, NULL), KCTL_OK);
    KT_CHECK(written);
    KT_EQ_U64(kt_default_allocs() - before - tb_inner_default, 0);
    KT_CHECK(objs.allocs - objs_before >= 4); /* and the document written, and the stored object */
    before = kt_default_allocs();
    tb_inner_default = 0;
    objs_before = objs.allocs;
    KT_EQ_INT(kctl_transport_patch(&t, &tb_cm, "big", "{\"data\":{\"x\":\"1\"}}", KCTL_NTS, 0, NULL, NULL), KCTL_OK);
    KT_EQ_U64(kt_default_allocs() - before - tb_inner_default, 0);
    KT_CHECK(objs.allocs - objs_before >= 3); /* two parses and the merged document */
    kctl_obj_unref(o);
    kctl_obj_unref(o2);
    kctl_memstore_destroy(ms);
    KT_EQ_INT(objs.live_blocks, 0);
}

void kt_suite_budget(void) {
    KT_RUN(tb_scratch_allocator);
    KT_RUN(tb_steady_state);
    KT_RUN(tb_informer_cache_full);
    KT_RUN(tb_informer_transform);
    KT_RUN(tb_memstore_history_lazy);
    KT_RUN(tb_memstore_full);
    KT_RUN(tb_limiter_allocator);
    KT_RUN(tb_queue_max_keys);
    KT_RUN(tb_queue_full_resync);
}
