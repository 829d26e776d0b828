/* test_edge.c - edge autonomy: an informer's checkpoint (restart without
   a relist, GONE, discarded checkpoints, when it is written) and the
   reported state (coalesced, rate-limited, compare-before-write, conflicts,
   backoff, no status loop). All on the virtual clock. */
#include "kt.h"

/* A checkpoint on a file needs the file layer. */
#ifdef KCTL_NO_FILES
#define ED_NEED_FILES() kt_skip_now("KCTL_NO_FILES (a checkpoint on a file)")
#else
#define ED_NEED_FILES() ((void)0)
#endif
#include <stdlib.h>
#include <errno.h>
#include <unistd.h>

static const kctl_resource ed_cm = { "", "v1", "configmaps", "prod" };

/* ---- a transport in front of the memstore: closed, every call is IO (the
   store unreachable); it counts lists, watch opens and status writes */
typedef struct ed_gate {
    kctl_transport inner;
    bool closed;
    int refused, lists, opens, status_writes, gets;
} ed_gate;

static int ed_list(void *s, const kctl_resource *res, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    if (g->closed) { g->refused++; return KCTL_ERR_IO; }
    g->lists++;
    return g->inner.vt->list(g->inner.self, res, o, out, st);
}
static int ed_wopen(void *s, const kctl_resource *res, const kctl_list_opts *o, const char *rv, kctl_watch **out, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    if (g->closed) { g->refused++; return KCTL_ERR_IO; }
    g->opens++;
    return g->inner.vt->watch_open(g->inner.self, res, o, rv, out, st);
}
static int ed_wnext(void *s, kctl_watch *w, uint64_t t, kctl_event *ev, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    return g->inner.vt->watch_next(g->inner.self, w, t, ev, st);
}
static void ed_wclose(void *s, kctl_watch *w) {
    ed_gate *g = (ed_gate *)s;
    g->inner.vt->watch_close(g->inner.self, w);
}
static int ed_get(void *s, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    if (g->closed) { g->refused++; return KCTL_ERR_IO; }
    g->gets++;
    return g->inner.vt->get(g->inner.self, res, name, out, st);
}
static int ed_create(void *s, const kctl_resource *res, const char *j, size_t n, kctl_obj **out, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    if (g->closed) { g->refused++; return KCTL_ERR_IO; }
    return g->inner.vt->create(g->inner.self, res, j, n, out, st);
}
static int ed_update(void *s, const kctl_resource *res, const char *j, size_t n, kctl_obj **out, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    if (g->closed) { g->refused++; return KCTL_ERR_IO; }
    return g->inner.vt->update(g->inner.self, res, j, n, out, st);
}
static int ed_ustatus(void *s, const kctl_resource *res, const char *j, size_t n, kctl_obj **out, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    if (g->closed) { g->refused++; return KCTL_ERR_IO; }
    g->status_writes++;
    return g->inner.vt->update_status(g->inner.self, res, j, n, out, st);
}
static int ed_remove(void *s, const kctl_resource *res, const char *name, const kctl_delete_opts *o, kctl_obj **out, kctl_api_status *st) {
    ed_gate *g = (ed_gate *)s;
    if (g->closed) { g->refused++; return KCTL_ERR_IO; }
    return g->inner.vt->remove(g->inner.self, res, name, o, out, st);
}
static const kctl_transport_vtable ed_gate_vt = { ed_list, ed_wopen, ed_wnext, ed_wclose, ed_get, ed_create, ed_update,
                                                  ed_ustatus, NULL, ed_remove, NULL, NULL };

static kctl_transport ed_gate_transport(ed_gate *g, kctl_memstore *ms) {
    kctl_transport t;
    memset(g, 0, sizeof *g);
    g->inner = kctl_memstore_transport(ms);
    t.vt = &ed_gate_vt;
    t.self = g;
    return t;
}

/* ---- handlers that count, and remember what the deletes said */
typedef struct ed_count {
    int adds, updates, syncs, deletes, unknown_deletes, deletes_with_last;
    char last_delete_rv[KCTL_RV_MAX];
} ed_count;
static void ed_on_add(kctl_obj *o, void *ud) { (void)o; ((ed_count *)ud)->adds++; }
static void ed_on_update(kctl_obj *o, kctl_obj *n, void *ud) {
    ed_count *c = (ed_count *)ud;
    if (strcmp(kctl_obj_resource_version(o), kctl_obj_resource_version(n)) == 0) c->syncs++;
    else c->updates++;
}
static void ed_on_delete(const char *key, kctl_obj *last, bool unknown, void *ud) {
    ed_count *c = (ed_count *)ud;
    (void)key;
    c->deletes++;
    c->unknown_deletes += unknown;
    if (last) {
        c->deletes_with_last++;
        snprintf(c->last_delete_rv, sizeof c->last_delete_rv, "%s", kctl_obj_resource_version(last));
    }
}
static kctl_handler ed_handler(ed_count *c, bool resync) {
    kctl_handler h;
    memset(&h, 0, sizeof h);
    h.on_add = ed_on_add;
    h.on_update = ed_on_update;
    h.on_delete = ed_on_delete;
    h.user_data = c;
    h.resync = resync;
    return h;
}

static void ed_put(kctl_memstore *ms, const kctl_resource *res, const char *name, int v) {
    char doc[256];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"data\":{\"v\":\"%d\"}}", name, v);
    if (kctl_memstore_apply(ms, res, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply %s", name);
}

static kctl_informer *ed_informer(kctl_vclock *vc, kctl_transport t, const kctl_resource *res) {
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    memset(&d, 0, sizeof d);
    d.transport = t;
    d.resource = *res;
    d.clock = kctl_vclock_clock(vc);
    if (kctl_informer_create(&d, &inf) != KCTL_OK) kt_fail(__FILE__, __LINE__, "informer");
    return inf;
}

/* ---- a checkpoint kept in memory through the callbacks */
typedef struct ed_mem {
    unsigned char *data;
    size_t len;
    int saves;
} ed_mem;
static int ed_mem_save(const void *data, size_t len, void *ud) {
    ed_mem *m = (ed_mem *)ud;
    free(m->data);
    if (!(m->data = (unsigned char *)malloc(len ? len : 1))) return KCTL_ERR_NOMEM;
    memcpy(m->data, data, len);
    m->len = len;
    m->saves++;
    return KCTL_OK;
}
static int ed_mem_load(const void **data, size_t *len, void *ud) {
    ed_mem *m = (ed_mem *)ud;
    if (!m->data) return KCTL_ERR_NOT_FOUND;
    *data = m->data;
    *len = m->len;
    return KCTL_OK;
}
static int ed_sink_save(const void *data, size_t len, void *ud) { (void)data; (void)len; (void)ud; return KCTL_OK; }
static kctl_checkpoint_desc ed_mem_desc(ed_mem *m) {
    kctl_checkpoint_desc cd = kctl_checkpoint_desc_init();
    cd.save_fn = ed_mem_save;
    cd.load_fn = ed_mem_load;
    cd.user_data = m;
    return cd;
}

typedef struct ed_logs { int items[8]; int n; } ed_logs;
static void ed_log(int level, uint32_t item, const char *msg, void *ud) {
    ed_logs *l = (ed_logs *)ud;
    (void)level;
    (void)msg;
    if (l->n < 8) l->items[l->n++] = (int)item;
}

/* ---- the reconciler: counts */
typedef struct ed_rec { int runs; } ed_rec;
static kctl_reconcile_result ed_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    ((ed_rec *)ctx->user_data)->runs++;
    return r;
}

static kctl_controller *ed_controller(kctl_vclock *vc, kctl_informer *inf, kctl_transport t, ed_rec *rec, const kctl_predicate *p,
                                      kctl_reconcile_fn fn) {
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.transport = t;
    cd.reconcile = fn;
    cd.user_data = rec;
    cd.predicate = p;
    cd.clock = kctl_vclock_clock(vc);
    if (kctl_controller_create(&cd, &c) != KCTL_OK) kt_fail(__FILE__, __LINE__, "controller");
    return c;
}

/* Step inf until a step brings nothing new (bounded). */
static void ed_settle(kctl_informer *inf, kctl_vclock *vc) {
    int i;
    for (i = 0; i < 20; i++) {
        kctl_reflector_stats a, b;
        kctl_informer_read_stats(inf, &a);
        kctl_informer_step(inf, 0, NULL);
        kctl_informer_read_stats(inf, &b);
        if (a.added + a.modified + a.deleted == b.added + b.modified + b.deleted && b.last_error == KCTL_OK && i > 1) break;
        kctl_vclock_advance(vc, KCTL_MS(10));
    }
}

static bool ed_mkdtemp(char *dir, size_t cap) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, cap, "%s/kctl-edge-XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(dir)) {
        kt_remove_after(dir); /* also when the test is skipped from deep inside */
        return true;
    }
    kt_fail(__FILE__, __LINE__, "mkdtemp(%s): %s", dir, strerror(errno));
    return false;
}

/* A controller with 10,000 cached objects restarts from its checkpoint
   (a file) against a store that moved on by 100 events while it was down:
   it reconciles from the checkpoint while the store is unreachable, makes
   no list at all, and its handlers get exactly the 100 events. */
static void ed_ckpt_restart_no_relist(void) {
    kctl_vclock vc;
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    ed_gate g;
    kctl_informer *inf;
    kctl_controller *c;
    kctl_checkpoint_desc cd;
    kctl_checkpoint_stats cs;
    kctl_reflector_stats st;
    ed_count cnt, before;
    ed_rec rec;
    kctl_handler h;
    char dir[256], path[300], name[32];
    size_t done = 0;
    kctl_obj *o;
    int i;
    ED_NEED_FILES();
    if (!ed_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/cm.ckpt", dir);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    for (i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "cm-%05d", i);
        ed_put(ms, &ed_cm, name, 0);
    }
    t = ed_gate_transport(&g, ms);
    /* the first run: lists, and checkpoints when it stops */
    inf = ed_informer(&vc, t, &ed_cm);
    cd = kctl_checkpoint_desc_init();
    cd.path = path;
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_ERR_NOT_FOUND); /* none yet */
    ed_settle(inf, &vc);
    KT_CHECK(kctl_informer_has_synced(inf));
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 10000);
    kctl_informer_destroy(inf); /* stop: the checkpoint is written */
    KT_EQ_INT(access(path, R_OK), 0);
    /* while it is down, the store moves on by 100 events */
    for (i = 0; i < 40; i++) { snprintf(name, sizeof name, "cm-%05d", i); ed_put(ms, &ed_cm, name, 1); }
    for (i = 0; i < 30; i++) { snprintf(name, sizeof name, "new-%02d", i); ed_put(ms, &ed_cm, name, 0); }
    for (i = 100; i < 130; i++) { snprintf(name, sizeof name, "cm-%05d", i); kctl_memstore_delete(ms, &ed_cm, name, NULL); }
    KT_EQ_U64(kctl_memstore_revision(ms), 10100);
    /* the restart: the store is unreachable */
    g.closed = true;
    g.lists = g.opens = 0;
    memset(&cnt, 0, sizeof cnt);
    memset(&rec, 0, sizeof rec);
    inf = ed_informer(&vc, t, &ed_cm);
    h = ed_handler(&cnt, false);
    kctl_informer_add_handler(inf, &h);
    c = ed_controller(&vc, inf, t, &rec, NULL, ed_reconcile);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_OK);
    kctl_informer_checkpoint_stats(inf, &cs);
    KT_EQ_U64(cs.loaded, 10000);
    KT_EQ_STR(cs.loaded_rv, "10000");
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_CHECK(kctl_informer_has_synced(inf)); /* synced from the checkpoint */
    KT_CHECK(g.refused > 0);                 /* the store was asked, and unreachable */
    KT_EQ_INT(cnt.adds, 10000);
    KT_EQ_INT(kctl_controller_step(c, 20000, &done), KCTL_OK);
    KT_EQ_U64(done, 10000); /* reconciles ran before the store was reachable */
    KT_EQ_INT(g.opens + g.lists, 0);
    /* the store comes back: the watch resumes from the saved version */
    g.closed = false;
    before = cnt;
    kctl_vclock_advance(&vc, KCTL_SEC(2)); /* past the first backoff (800 ms, jittered up to twice) */
    ed_settle(inf, &vc);
    KT_EQ_INT(g.lists, 0);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.lists, 0);
    KT_EQ_U64(st.relists, 0);
    KT_EQ_STR(st.last_rv, "10100");
    KT_EQ_INT(cnt.adds - before.adds, 30);
    KT_EQ_INT(cnt.updates - before.updates, 40);
    KT_EQ_INT(cnt.deletes - before.deletes, 30);
    KT_EQ_INT(cnt.unknown_deletes, 0);
    KT_EQ_INT(cnt.syncs, 0); /* issue 8: no sync reaches a handler that did not ask */
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 10000);
    o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/cm-00000");
    KT_CHECK(o && strcmp(kctl_obj_resource_version(o), "10001") == 0);
    kctl_obj_unref(o);
    KT_CHECK(kctl_indexer_get(kctl_informer_indexer(inf), "prod/cm-00100") == NULL);
    done = 0;
    kctl_controller_step(c, 20000, &done);
    KT_EQ_U64(done, 100);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    /* the stop wrote the new state: a third start has it */
    memset(&cnt, 0, sizeof cnt);
    inf = ed_informer(&vc, t, &ed_cm);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_OK);
    kctl_informer_checkpoint_stats(inf, &cs);
    KT_EQ_STR(cs.loaded_rv, "10100");
    KT_EQ_U64(cs.loaded, 10000);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
    unlink(path);
    rmdir(dir);
}

/* The store compacted past the saved version: GONE, one relist, whose
   diff against the checkpointed cache gives the deletes (final state
   unknown, with the last object the checkpoint knew), the changes as
   updates and the rest as syncs (only to a handler that asks). */
static void ed_ckpt_gone_relist(void) {
    kctl_vclock vc;
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    ed_gate g;
    kctl_informer *inf;
    kctl_checkpoint_desc cd;
    kctl_reflector_stats st;
    ed_mem mem;
    ed_count plain, rs;
    kctl_handler h1, h2;
    char name[32];
    int i;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    memset(&mem, 0, sizeof mem);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    for (i = 0; i < 50; i++) { snprintf(name, sizeof name, "cm-%02d", i); ed_put(ms, &ed_cm, name, 0); }
    t = ed_gate_transport(&g, ms);
    inf = ed_informer(&vc, t, &ed_cm);
    cd = ed_mem_desc(&mem);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_ERR_NOT_FOUND);
    ed_settle(inf, &vc);
    KT_EQ_INT(kctl_informer_checkpoint_save(inf), KCTL_OK);
    KT_EQ_INT(mem.saves, 1);
    kctl_informer_destroy(inf);
    KT_EQ_INT(mem.saves, 1); /* nothing moved since: no second write */
    for (i = 0; i < 5; i++) { snprintf(name, sizeof name, "cm-%02d", i); kctl_memstore_delete(ms, &ed_cm, name, NULL); }
    for (i = 5; i < 10; i++) { snprintf(name, sizeof name, "cm-%02d", i); ed_put(ms, &ed_cm, name, 1); }
    for (i = 0; i < 5; i++) { snprintf(name, sizeof name, "new-%02d", i); ed_put(ms, &ed_cm, name, 0); }
    kctl_memstore_compact(ms, kctl_memstore_revision(ms));
    memset(&plain, 0, sizeof plain);
    memset(&rs, 0, sizeof rs);
    g.lists = 0;
    inf = ed_informer(&vc, t, &ed_cm);
    h1 = ed_handler(&plain, false);
    h2 = ed_handler(&rs, true);
    kctl_informer_add_handler(inf, &h1);
    kctl_informer_add_handler(inf, &h2);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_OK);
    ed_settle(inf, &vc);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.lists, 1);
    KT_EQ_U64(st.relists, 1);
    KT_EQ_INT(g.lists, 1);
    KT_EQ_INT(plain.adds, 50 + 5); /* the checkpoint's, then the new ones */
    KT_EQ_INT(plain.updates, 5);
    KT_EQ_INT(plain.syncs, 0);
    KT_EQ_INT(plain.deletes, 5);
    KT_EQ_INT(plain.unknown_deletes, 5);   /* DeletedFinalStateUnknown */
    KT_EQ_INT(plain.deletes_with_last, 5); /* with the checkpointed object */
    KT_CHECK(atoi(plain.last_delete_rv) >= 1 && atoi(plain.last_delete_rv) <= 50);
    KT_EQ_INT(rs.updates, 5);
    KT_EQ_INT(rs.syncs, 40); /* unchanged objects: syncs, to the handler that asks */
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 50);
    kctl_informer_destroy(inf);
    free(mem.data);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* The format's CRC-32 (IEEE), bit by bit: the test's own. */
static uint32_t ed_crc32(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < n; i++) {
        c ^= p[i];
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}
static void ed_put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static void ed_fix_crc(ed_mem *m) { ed_put32(m->data + 24, ed_crc32(m->data + 28, m->len - 28)); }

/* Load m (as changed) into a new informer over the store behind g: the
   result must be PROTO with reason, logged, and nothing of it loaded; the
   informer then lists the store as if there were no checkpoint. */
static void ed_discard_case(kctl_vclock *vc, kctl_transport t, ed_gate *g, ed_mem *m, uint32_t reason, const kctl_resource *res) {
    kctl_informer *inf = ed_informer(vc, t, res);
    kctl_checkpoint_desc cd = ed_mem_desc(m);
    kctl_checkpoint_stats cs;
    ed_logs logs;
    ed_count cnt;
    kctl_handler h = ed_handler(&cnt, false);
    memset(&logs, 0, sizeof logs);
    memset(&cnt, 0, sizeof cnt);
    cd.save_fn = ed_sink_save; /* m stays as the case made it */
    cd.logger.func = ed_log;
    cd.logger.user_data = &logs;
    kctl_informer_add_handler(inf, &h);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_ERR_PROTO);
    kctl_informer_checkpoint_stats(inf, &cs);
    KT_EQ_U64(cs.discarded, 1);
    KT_EQ_U64(cs.loaded, 0);
    KT_EQ_INT(cs.discard_reason, reason);
    KT_EQ_INT(logs.n, 1);
    KT_EQ_INT(logs.items[0], reason);
    g->closed = true; /* nothing half-loaded: unreachable, no cache, not synced */
    kctl_informer_step(inf, 0, NULL);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 0);
    KT_CHECK(!kctl_informer_has_synced(inf));
    KT_EQ_INT(cnt.adds, 0);
    g->closed = false; /* and then an ordinary list */
    g->lists = 0;
    kctl_vclock_advance(vc, KCTL_SEC(2));
    ed_settle(inf, vc);
    KT_EQ_INT(g->lists, 1);
    KT_EQ_INT(cnt.adds, 3);
    kctl_informer_destroy(inf);
}

static void ed_ckpt_discarded(void) {
    static const kctl_resource other = { "", "v1", "configmaps", "staging" };
    kctl_vclock vc;
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    ed_gate g;
    kctl_informer *inf;
    kctl_checkpoint_desc cd;
    ed_mem good, m;
    unsigned char *hit;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    memset(&good, 0, sizeof good);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    ed_put(ms, &ed_cm, "a", 0);
    ed_put(ms, &ed_cm, "b", 0);
    ed_put(ms, &ed_cm, "c", 0);
    t = ed_gate_transport(&g, ms);
    inf = ed_informer(&vc, t, &ed_cm);
    cd = ed_mem_desc(&good);
    kctl_informer_set_checkpoint(inf, &cd);
    ed_settle(inf, &vc);
    kctl_informer_destroy(inf);
    KT_EQ_INT(good.saves, 1);
    if (good.saves != 1) return;
    KT_EQ_U64(ed_crc32(good.data + 28, good.len - 28), (uint32_t)good.data[24] | (uint32_t)good.data[25] << 8 |
              (uint32_t)good.data[26] << 16 | (uint32_t)good.data[27] << 24);
    m.data = (unsigned char *)malloc(good.len + 16);
    /* a flipped bit in an object that leaves it valid JSON ("v" -> "V"):
       only the checksum tells */
    memcpy(m.data, good.data, good.len); m.len = good.len;
    for (hit = m.data + good.len - 4; hit > m.data && memcmp(hit, "\"v\":", 4) != 0; hit--) { }
    KT_CHECK(hit > m.data);
    hit[1] ^= 0x20;
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_CORRUPT, &ed_cm);
    /* truncated (a write cut short), and one byte too many */
    memcpy(m.data, good.data, good.len); m.len = good.len - 10;
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_CORRUPT, &ed_cm);
    memcpy(m.data, good.data, good.len); m.len = good.len + 1; m.data[good.len] = 0;
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_CORRUPT, &ed_cm);
    m.len = 12; /* shorter than a header */
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_CORRUPT, &ed_cm);
    /* a bad magic */
    memcpy(m.data, good.data, good.len); m.len = good.len;
    m.data[0] = 'X';
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_CORRUPT, &ed_cm);
    /* an old format (version 0; the checksum covers the payload: still right) */
    memcpy(m.data, good.data, good.len);
    ed_put32(m.data + 8, 0);
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_OLD_FORMAT, &ed_cm);
    /* the last object made invalid JSON, the checksum made right: the two
       before it must not be loaded either */
    memcpy(m.data, good.data, good.len);
    hit = m.data + good.len - 1; /* the last object's closing brace */
    KT_EQ_INT(*hit, '}');
    *hit = ',';
    ed_fix_crc(&m);
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_CORRUPT, &ed_cm);
    /* an object count beyond the payload, checksum right */
    memcpy(m.data, good.data, good.len);
    {
        size_t off = 28;
        int k;
        for (k = 0; k < 7; k++) { /* rv and the six identity strings */
            uint32_t n = (uint32_t)m.data[off] | (uint32_t)m.data[off + 1] << 8 | (uint32_t)m.data[off + 2] << 16 | (uint32_t)m.data[off + 3] << 24;
            off += 4 + n;
        }
        ed_put32(m.data + off, 0xFFFFFFFFu);
    }
    ed_fix_crc(&m);
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_CORRUPT, &ed_cm);
    /* the checkpoint of another namespace */
    memcpy(m.data, good.data, good.len);
    ed_put(ms, &other, "a", 0);
    ed_put(ms, &other, "b", 0);
    ed_put(ms, &other, "c", 0);
    ed_discard_case(&vc, t, &g, &m, KCTL_LOGITEM_CHECKPOINT_MISMATCH, &other);
    free(m.data);
    free(good.data);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* A truncated file on disk: discarded, the informer lists. */
static void ed_ckpt_truncated_file(void) {
    kctl_vclock vc;
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_informer *inf;
    kctl_checkpoint_desc cd;
    kctl_checkpoint_stats cs;
    char dir[256], path[300];
    FILE *f;
    long size;
    ED_NEED_FILES();
    if (!ed_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/cm.ckpt", dir);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    ed_put(ms, &ed_cm, "a", 0);
    inf = ed_informer(&vc, kctl_memstore_transport(ms), &ed_cm);
    cd = kctl_checkpoint_desc_init();
    cd.path = path;
    kctl_informer_set_checkpoint(inf, &cd);
    ed_settle(inf, &vc);
    kctl_informer_destroy(inf);
    f = fopen(path, "rb");
    KT_CHECK(f != NULL);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fclose(f);
    KT_EQ_INT(truncate(path, size - 3), 0);
    inf = ed_informer(&vc, kctl_memstore_transport(ms), &ed_cm);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_ERR_PROTO);
    kctl_informer_checkpoint_stats(inf, &cs);
    KT_EQ_INT(cs.discard_reason, KCTL_LOGITEM_CHECKPOINT_CORRUPT);
    ed_settle(inf, &vc);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 1);
    kctl_informer_destroy(inf); /* and a good one is written again */
    inf = ed_informer(&vc, kctl_memstore_transport(ms), &ed_cm);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_OK);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
    unlink(path);
    rmdir(dir);
}

/* When it is written: every N events, every T on the clock (only if the
   cache moved), on stop; never while deltas wait (the saved version
   always matches the saved objects). */
static void ed_ckpt_triggers(void) {
    kctl_vclock vc;
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_informer *inf, *again;
    kctl_checkpoint_desc cd;
    kctl_checkpoint_stats cs;
    ed_mem mem;
    char name[32];
    int i, k;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    memset(&mem, 0, sizeof mem);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    inf = ed_informer(&vc, kctl_memstore_transport(ms), &ed_cm);
    cd = ed_mem_desc(&mem);
    cd.every_events = 10;
    cd.every_ns = KCTL_SEC(5);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), KCTL_ERR_EXISTS);
    KT_EQ_INT(kctl_informer_checkpoint_save(inf), KCTL_ERR_INVALID_ARG); /* nothing listed yet */
    ed_put(ms, &ed_cm, "first", 0);
    kctl_informer_step(inf, 0, NULL); /* the first list: a list counts as every_events */
    KT_EQ_INT(mem.saves, 1);
    for (k = 0; k < 5; k++) { /* 25 events, 5 a step */
        for (i = 0; i < 5; i++) { snprintf(name, sizeof name, "cm-%02d", k * 5 + i); ed_put(ms, &ed_cm, name, 0); }
        kctl_informer_step(inf, 0, NULL);
        kctl_vclock_advance(&vc, KCTL_MS(100));
    }
    KT_EQ_INT(mem.saves, 3); /* after 10 and after 20 */
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    kctl_informer_step(inf, 0, NULL);
    KT_EQ_INT(mem.saves, 4); /* the timer: the 5 events after the 20th */
    kctl_vclock_advance(&vc, KCTL_SEC(5));
    kctl_informer_step(inf, 0, NULL);
    KT_EQ_INT(mem.saves, 4); /* the timer, with nothing new: no write */
    ed_put(ms, &ed_cm, "late", 0);
    kctl_informer_stop(inf);
    KT_EQ_INT(mem.saves, 4); /* the event is not in the cache yet: the FIFO is not stepped by stop */
    kctl_informer_step(inf, 0, NULL);
    kctl_informer_stop(inf);
    KT_EQ_INT(mem.saves, 5);
    kctl_informer_checkpoint_stats(inf, &cs);
    KT_EQ_U64(cs.saves, 5);
    kctl_informer_destroy(inf);
    KT_EQ_INT(mem.saves, 5);
    /* what the last one holds: the store as it is */
    again = ed_informer(&vc, kctl_memstore_transport(ms), &ed_cm);
    KT_EQ_INT(kctl_informer_set_checkpoint(again, &cd), KCTL_OK);
    kctl_informer_checkpoint_stats(again, &cs);
    KT_EQ_U64(cs.loaded, 27);
    KT_EQ_U64(strtoull(cs.loaded_rv, NULL, 10), kctl_memstore_revision(ms));
    kctl_informer_destroy(again);
    free(mem.data);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* ---- reported state */
static const kctl_resource ed_dev = { "example.io", "v1", "devices", "prod" };

static kctl_memstore *ed_dev_store(kctl_vclock *vc) {
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    const char *doc = "{\"metadata\":{\"name\":\"sensor-1\"},\"spec\":{\"interval\":1},\"status\":{\"phase\":\"Running\"}}";
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(vc);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return NULL;
    if (kctl_memstore_apply(ms, &ed_dev, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply");
    return ms;
}

static kctl_reported *ed_reported(kctl_transport t, uint32_t writes) {
    kctl_reported_desc rd = kctl_reported_desc_init();
    kctl_reported *r = NULL;
    rd.transport = t;
    rd.resource = ed_dev;
    rd.name = "sensor-1";
    rd.writes = writes;
    rd.per_ns = KCTL_SEC(1);
    if (kctl_reported_create(&rd, &r) != KCTL_OK) kt_fail(__FILE__, __LINE__, "reported");
    return r;
}

static double ed_status_double(kctl_memstore *ms, const char *path) {
    kctl_obj *o = NULL;
    double v = -1;
    if (kctl_memstore_get(ms, &ed_dev, "sensor-1", &o, NULL) == KCTL_OK) kctl_obj_get_double(o, path, &v);
    kctl_obj_unref(o);
    return v;
}

/* Step r at its deadlines until nothing is pending (bounded): the time it
   ends at. */
static uint64_t ed_drain(kctl_reported *r, kctl_vclock *vc) {
    kctl_clock clk = kctl_vclock_clock(vc);
    int i;
    for (i = 0; i < 100 && kctl_reported_pending(r); i++) {
        uint64_t next, now = kctl_clock_now(&clk);
        kctl_reported_step(r, now, &next);
        if (next != UINT64_MAX && next > now) kctl_vclock_advance(vc, next - now);
    }
    return kctl_clock_now(&clk);
}

/* A sensor that changes 100 times a second for 10 s, at 2 writes a
   second: at most 21 writes (the first at once, then 2 a second), the
   last value written in the end. */
static void ed_rep_rate_limited(void) {
    kctl_vclock vc;
    kctl_clock clk;
    kctl_memstore *ms;
    ed_gate g;
    kctl_reported *r;
    kctl_reported_stats st;
    uint64_t next = 0;
    double last = 0; /* the value set last, rounded to a double (no x87 excess precision: i386) */
    int i;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    clk = kctl_vclock_clock(&vc);
    if (!(ms = ed_dev_store(&vc))) return;
    r = ed_reported(ed_gate_transport(&g, ms), 2);
    for (i = 0; i < 1000; i++) {
        last = 20.0 + i / 100.0;
        KT_EQ_INT(kctl_reported_set_double(r, "temperature", last), KCTL_OK);
        KT_EQ_INT(kctl_reported_step(r, kctl_clock_now(&clk), &next), KCTL_OK);
        KT_CHECK(next > kctl_clock_now(&clk) || !kctl_reported_pending(r));
        kctl_vclock_advance(&vc, KCTL_MS(10));
    }
    KT_CHECK(g.status_writes <= 21);
    KT_CHECK(g.status_writes >= 19);
    ed_drain(r, &vc);
    KT_CHECK(!kctl_reported_pending(r));
    KT_CHECK(g.status_writes <= 22);
    KT_CHECK(ed_status_double(ms, "status.temperature") == last); /* the final value */
    KT_CHECK(ed_status_double(ms, "status.phase") == -1); /* a string: not read as a double... */
    {
        kctl_obj *o = NULL;
        char phase[32] = "";
        kctl_memstore_get(ms, &ed_dev, "sensor-1", &o, NULL);
        kctl_obj_get_string(o, "status.phase", phase, sizeof phase, NULL);
        KT_EQ_STR(phase, "Running"); /* ...and kept: the fields merge into the status */
        KT_EQ_INT(kctl_obj_generation(o), 1); /* status writes leave the generation */
        kctl_obj_unref(o);
    }
    kctl_reported_read_stats(r, &st);
    KT_EQ_U64(st.sets, 1000);
    KT_EQ_U64(st.writes, (uint64_t)g.status_writes);
    KT_EQ_U64(st.conflicts + st.errors, 0);
    kctl_reported_destroy(r);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* No write when nothing changed: the same value again, a status document
   equal to the stored one. Nothing pending: no call at all. */
static void ed_rep_unchanged(void) {
    kctl_vclock vc;
    kctl_clock clk;
    kctl_memstore *ms;
    ed_gate g;
    kctl_reported *r;
    kctl_reported_stats st;
    uint64_t next = 0;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    clk = kctl_vclock_clock(&vc);
    if (!(ms = ed_dev_store(&vc))) return;
    r = ed_reported(ed_gate_transport(&g, ms), 2);
    KT_EQ_INT(kctl_reported_step(r, kctl_clock_now(&clk), &next), KCTL_OK);
    KT_EQ_U64(next, UINT64_MAX);
    KT_EQ_INT(g.gets + g.status_writes, 0);
    kctl_reported_set_int(r, "count", 5);
    kctl_reported_set_string(r, "firmware", "1.4.2");
    kctl_reported_set_bool(r, "online", true);
    ed_drain(r, &vc);
    KT_EQ_INT(g.status_writes, 1);
    kctl_vclock_advance(&vc, KCTL_SEC(10));
    kctl_reported_set_int(r, "count", 5);
    kctl_reported_set_string(r, "firmware", "1.4.2");
    ed_drain(r, &vc);
    KT_EQ_INT(g.status_writes, 1);
    KT_EQ_INT(kctl_reported_set_status(r, "{\"phase\":\"Running\",\"count\":5,\"online\":true,\"firmware\":\"1.4.2\"}", KCTL_NTS), KCTL_OK);
    ed_drain(r, &vc);
    KT_EQ_INT(g.status_writes, 1);
    kctl_reported_read_stats(r, &st);
    KT_EQ_U64(st.writes, 1);
    KT_EQ_U64(st.unchanged, 2);
    /* a whole status replaces what is there */
    KT_EQ_INT(kctl_reported_set_status(r, "{\"online\":false}", KCTL_NTS), KCTL_OK);
    kctl_reported_set_int(r, "count", 6); /* on top */
    ed_drain(r, &vc);
    KT_EQ_INT(g.status_writes, 2);
    KT_CHECK(ed_status_double(ms, "status.count") == 6);
    KT_CHECK(ed_status_double(ms, "status.firmware") == -1);
    /* bad input */
    KT_EQ_INT(kctl_reported_set(r, "x", "{bad", KCTL_NTS), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_reported_set(r, "", "1", KCTL_NTS), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_reported_set_status(r, "[1]", KCTL_NTS), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_reported_set_double(r, "x", 1.0 / 0.0), KCTL_ERR_INVALID_ARG);
    KT_CHECK(!kctl_reported_pending(r));
    kctl_reported_destroy(r);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* A conflict (someone else wrote the object after our last write): re-read,
   reapply, write again; the other writer's status stays. */
static void ed_rep_conflict(void) {
    kctl_vclock vc;
    kctl_clock clk;
    kctl_memstore *ms;
    ed_gate g;
    kctl_transport t;
    kctl_reported *r;
    kctl_reported_stats st;
    kctl_obj *o = NULL;
    char phase[32] = "";
    uint64_t next = 0;
    int rc;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    clk = kctl_vclock_clock(&vc);
    if (!(ms = ed_dev_store(&vc))) return;
    t = ed_gate_transport(&g, ms);
    r = ed_reported(t, 2);
    kctl_reported_set_double(r, "temperature", 20.5);
    ed_drain(r, &vc);
    KT_EQ_INT(g.status_writes, 1);
    /* another writer: the status changes under us */
    kctl_memstore_get(ms, &ed_dev, "sensor-1", &o, NULL);
    KT_EQ_INT(kctl_status_update(&t, &ed_dev, o, "{\"phase\":\"Degraded\",\"temperature\":20.5}", KCTL_NTS, NULL, NULL, NULL), KCTL_OK);
    kctl_obj_unref(o);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    kctl_reported_set_double(r, "temperature", 21.5);
    rc = kctl_reported_step(r, kctl_clock_now(&clk), &next);
    KT_EQ_INT(rc, KCTL_ERR_CONFLICT);
    KT_EQ_U64(next, kctl_clock_now(&clk) + KCTL_MS(10)); /* the conflict backoff */
    KT_CHECK(kctl_reported_pending(r));
    ed_drain(r, &vc);
    kctl_reported_read_stats(r, &st);
    KT_EQ_U64(st.conflicts, 1);
    KT_EQ_U64(st.writes, 2);
    KT_EQ_INT(st.last_error, KCTL_OK);
    KT_CHECK(ed_status_double(ms, "status.temperature") == 21.5);
    kctl_memstore_get(ms, &ed_dev, "sensor-1", &o, NULL);
    kctl_obj_get_string(o, "status.phase", phase, sizeof phase, NULL);
    KT_EQ_STR(phase, "Degraded"); /* reapplied onto what was read again */
    kctl_obj_unref(o);
    kctl_reported_destroy(r);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* Transport errors back off (1 s doubling); no call before the deadline;
   the write goes through when the store is back. */
static void ed_rep_backoff(void) {
    kctl_vclock vc;
    kctl_clock clk;
    kctl_memstore *ms;
    ed_gate g;
    kctl_reported *r;
    kctl_reported_stats st;
    uint64_t next = 0, t0;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    clk = kctl_vclock_clock(&vc);
    if (!(ms = ed_dev_store(&vc))) return;
    r = ed_reported(ed_gate_transport(&g, ms), 2);
    g.closed = true;
    kctl_reported_set_int(r, "count", 1);
    t0 = kctl_clock_now(&clk);
    KT_EQ_INT(kctl_reported_step(r, t0, &next), KCTL_ERR_IO);
    KT_EQ_U64(next, t0 + KCTL_SEC(1));
    KT_EQ_INT(g.refused, 1);
    KT_EQ_INT(kctl_reported_step(r, t0 + KCTL_MS(500), &next), KCTL_OK); /* too early: nothing sent */
    KT_EQ_INT(g.refused, 1);
    KT_EQ_U64(next, t0 + KCTL_SEC(1));
    KT_EQ_INT(kctl_reported_step(r, t0 + KCTL_SEC(1), &next), KCTL_ERR_IO);
    KT_EQ_U64(next, t0 + KCTL_SEC(3)); /* doubled */
    KT_EQ_INT(kctl_reported_step(r, t0 + KCTL_SEC(3), &next), KCTL_ERR_IO);
    KT_EQ_U64(next, t0 + KCTL_SEC(7));
    KT_EQ_INT(g.refused, 3);
    g.closed = false;
    kctl_reported_set_int(r, "count", 2); /* coalesced with the one that waits */
    KT_EQ_INT(kctl_reported_step(r, t0 + KCTL_SEC(7), &next), KCTL_OK);
    KT_EQ_U64(next, UINT64_MAX);
    KT_EQ_INT(g.status_writes, 1);
    KT_CHECK(ed_status_double(ms, "status.count") == 2);
    kctl_reported_read_stats(r, &st);
    KT_EQ_U64(st.errors, 3);
    KT_EQ_INT(st.last_error, KCTL_OK);
    /* the backoff starts from 1 s again */
    g.closed = true;
    kctl_reported_set_int(r, "count", 3);
    KT_EQ_INT(kctl_reported_step(r, t0 + KCTL_SEC(10), &next), KCTL_ERR_IO);
    KT_EQ_U64(next, t0 + KCTL_SEC(11));
    kctl_reported_destroy(r);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* No status loop: a reconcile that reports state (through kctl_reported)
   is not woken again by the status write, with a generation-changed
   predicate; without it, every write wakes it again (the loop shown). */
typedef struct ed_dev_rec {
    int runs;
    kctl_reported *r;
} ed_dev_rec;
static kctl_reconcile_result ed_dev_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result res;
    ed_dev_rec *d = (ed_dev_rec *)ctx->user_data;
    memset(&res, 0, sizeof res);
    d->runs++;
    kctl_reported_set_int(d->r, "observedRuns", d->runs); /* changes at every run */
    return res;
}

static int ed_loop_runs(const kctl_predicate *pred) {
    kctl_vclock vc;
    kctl_clock clk;
    kctl_memstore *ms;
    kctl_informer *inf;
    kctl_controller *c;
    kctl_controller_desc cd;
    ed_dev_rec d;
    int round, runs;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    clk = kctl_vclock_clock(&vc);
    if (!(ms = ed_dev_store(&vc))) return -1;
    memset(&d, 0, sizeof d);
    d.r = ed_reported(kctl_memstore_transport(ms), 2);
    inf = ed_informer(&vc, kctl_memstore_transport(ms), &ed_dev);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.transport = kctl_memstore_transport(ms);
    cd.reconcile = ed_dev_reconcile;
    cd.user_data = &d;
    cd.predicate = pred;
    cd.clock = clk;
    kctl_controller_create(&cd, &c);
    for (round = 0; round < 10; round++) { /* the agent's loop: informer, reconciles, reported state */
        uint64_t next;
        kctl_informer_step(inf, 0, NULL);
        kctl_controller_step(c, 10, NULL);
        kctl_reported_step(d.r, kctl_clock_now(&clk), &next);
        kctl_vclock_advance(&vc, KCTL_SEC(1));
    }
    runs = d.runs;
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_reported_destroy(d.r);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
    return runs;
}

static void ed_rep_no_status_loop(void) {
    kctl_predicate gen;
    memset(&gen, 0, sizeof gen);
    gen.kind = KCTL_PRED_GENERATION_CHANGED;
    KT_EQ_INT(ed_loop_runs(&gen), 1); /* the add; the status writes wake nothing */
    KT_CHECK(ed_loop_runs(NULL) >= 5); /* without the predicate: the loop */
}

void kt_suite_edge(void) {
    KT_RUN(ed_ckpt_restart_no_relist);
    KT_RUN(ed_ckpt_gone_relist);
    KT_RUN(ed_ckpt_discarded);
    KT_RUN(ed_ckpt_truncated_file);
    KT_RUN(ed_ckpt_triggers);
    KT_RUN(ed_rep_rate_limited);
    KT_RUN(ed_rep_unchanged);
    KT_RUN(ed_rep_conflict);
    KT_RUN(ed_rep_backoff);
    KT_RUN(ed_rep_no_status_loop);
}
