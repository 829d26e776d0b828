/* test_informer.c - the cache and the handlers fed from a store. */
#include "kt.h"
#include <stdlib.h>
#ifndef KCTL_NO_THREADS
#include <sched.h>
#endif

static const kctl_resource ti2_cm = { "", "v1", "configmaps", "prod" };

typedef struct ti2_log {
    char text[2048];
    int n; /* atomic: events seen */
} ti2_log;

static void ti2_say(ti2_log *l, const char *what) {
    if (strlen(l->text) + strlen(what) + 2 < sizeof l->text) {
        if (l->text[0]) strcat(l->text, " ");
        strcat(l->text, what);
    }
    __atomic_add_fetch(&l->n, 1, __ATOMIC_SEQ_CST);
}

static void ti2_add(kctl_obj *o, void *ud) {
    char b[128];
    snprintf(b, sizeof b, "add:%s@%s", kctl_obj_name(o), kctl_obj_resource_version(o));
    ti2_say((ti2_log *)ud, b);
}
static void ti2_update(kctl_obj *old, kctl_obj *o, void *ud) {
    char b[128];
    snprintf(b, sizeof b, "update:%s@%s>%s", kctl_obj_name(o), kctl_obj_resource_version(old), kctl_obj_resource_version(o));
    ti2_say((ti2_log *)ud, b);
}
static void ti2_delete(const char *key, kctl_obj *last, bool unknown, void *ud) {
    char b[128];
    snprintf(b, sizeof b, "delete%s:%s@%s", unknown ? "?" : "", key, last ? kctl_obj_resource_version(last) : "-");
    ti2_say((ti2_log *)ud, b);
}

static kctl_handler ti2_handler(ti2_log *l) {
    kctl_handler h;
    memset(&h, 0, sizeof h);
    h.on_add = ti2_add;
    h.on_update = ti2_update;
    h.on_delete = ti2_delete;
    h.user_data = l;
    return h;
}

static void ti2_put(kctl_memstore *ms, const char *name, const char *spec) {
    char doc[256];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"spec\":%s}", name, spec);
    if (kctl_memstore_apply(ms, &ti2_cm, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply");
}

static int ti2_open(kctl_vclock *vc, kctl_memstore **ms, kctl_informer **inf) {
    kctl_memstore_desc md;
    kctl_informer_desc d;
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(vc);
    if (kctl_memstore_create(&md, ms) != KCTL_OK) return 0;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(*ms);
    d.resource = ti2_cm;
    d.clock = kctl_vclock_clock(vc);
    return kctl_informer_create(&d, inf) == KCTL_OK;
}

static void ti2_step_driven(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_log l, late;
    kctl_handler h, h2;
    kctl_obj *o;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&l, 0, sizeof l);
    memset(&late, 0, sizeof late);
    if (!ti2_open(&vc, &ms, &inf)) return;
    h = ti2_handler(&l);
    KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_OK);
    ti2_put(ms, "a", "{}");
    ti2_put(ms, "b", "{}");
    KT_CHECK(!kctl_informer_has_synced(inf));
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_CHECK(kctl_informer_has_synced(inf));
    KT_EQ_STR(l.text, "add:a@1 add:b@2");
    o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/b");
    KT_CHECK(o != NULL);
    kctl_obj_unref(o);
    /* a handler added now gets what is cached first */
    h2 = ti2_handler(&late);
    KT_EQ_INT(kctl_informer_add_handler(inf, &h2), KCTL_OK);
    ti2_put(ms, "a", "{\"x\":1}");
    kctl_memstore_delete(ms, &ti2_cm, "b", NULL);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_STR(l.text, "add:a@1 add:b@2 update:a@1>3 delete:prod/b@4");
    KT_CHECK(strstr(late.text, "add:a@1") != NULL && strstr(late.text, "add:b@2") != NULL);
    KT_CHECK(strstr(late.text, "update:a@1>3 delete:prod/b@4") != NULL);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 1);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* A deletion missed while the watch was gone shows up at the relist, as a
   delete whose final state is unknown, with the last object cached. */
static void ti2_missed_delete(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_log l;
    kctl_handler h;
    kctl_reflector_stats st;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&l, 0, sizeof l);
    if (!ti2_open(&vc, &ms, &inf)) return;
    h = ti2_handler(&l);
    kctl_informer_add_handler(inf, &h);
    ti2_put(ms, "a", "{}");
    ti2_put(ms, "b", "{}");
    kctl_informer_step(inf, 0, NULL);
    kctl_memstore_delete(ms, &ti2_cm, "b", NULL);
    kctl_memstore_compact(ms, kctl_memstore_revision(ms)); /* the watch never sees it */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_CHECK(strstr(l.text, "delete?:prod/b@2") != NULL);
    KT_CHECK(strstr(l.text, "update:a") == NULL); /* the relist's REPLACED of a, unchanged: a sync, not for this handler */
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.relists, 1);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 1);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* Any number of handlers (a manager shares one informer among up to 32
   controllers, each with several watches): the list grows through the
   allocator; out of memory refuses one handler and keeps the others. */
typedef struct ti2_count { int adds, updates, deletes; } ti2_count;
static void ti2_count_add(kctl_obj *o, void *ud) { (void)o; ((ti2_count *)ud)->adds++; }
static void ti2_count_update(kctl_obj *o, kctl_obj *n, void *ud) { (void)o; (void)n; ((ti2_count *)ud)->updates++; }
static void ti2_count_delete(const char *k, kctl_obj *o, bool u, void *ud) { (void)k; (void)o; (void)u; ((ti2_count *)ud)->deletes++; }

static void ti2_many_handlers(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kt_alloc a;
    ti2_count counts[101];
    kctl_handler h;
    int i, ok = 0;
    kctl_vclock_init(&vc, 0);
    kt_alloc_init(&a);
    memset(counts, 0, sizeof counts);
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = ti2_cm;
    d.clock = kctl_vclock_clock(&vc);
    d.allocator = kt_allocator(&a);
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    memset(&h, 0, sizeof h);
    h.on_add = ti2_count_add;
    h.on_update = ti2_count_update;
    h.on_delete = ti2_count_delete;
    a.fail_after = 0; /* the list cannot grow: refused */
    h.user_data = &counts[100];
    KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_ERR_NOMEM);
    a.fail_after = -1;
    for (i = 0; i < 50; i++) { /* before start */
        h.user_data = &counts[i];
        KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_OK);
    }
    ti2_put(ms, "a", "{}");
    kctl_informer_step(inf, 0, NULL);
    for (i = 50; i < 100; i++) { /* after: each gets what is cached first */
        h.user_data = &counts[i];
        KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_OK);
    }
    ti2_put(ms, "a", "{\"x\":1}");
    kctl_memstore_delete(ms, &ti2_cm, "a", NULL);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    for (i = 0; i < 100; i++) ok += counts[i].adds == 1 && counts[i].updates == 1 && counts[i].deletes == 1;
    KT_EQ_INT(ok, 100);
    KT_EQ_INT(counts[100].adds + counts[100].updates + counts[100].deletes, 0);
    KT_EQ_INT(kctl_informer_add_handler(inf, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_informer_add_handler(NULL, &h), KCTL_ERR_INVALID_ARG);
    {
        kctl_informer *none = NULL;
        KT_EQ_INT(kctl_informer_create(NULL, &none), KCTL_ERR_INVALID_ARG);
        KT_CHECK(none == NULL);
    }
    kctl_informer_destroy(inf);
    KT_EQ_INT(a.live, 0);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* Syncs (1.4): a relist after GONE finds objects as cached; those are syncs,
   told only to handlers that ask (kctl_handler.resync), as client-go's
   shared informer tells them only to listeners with a resync period. A
   changed object in the same relist is an update for every handler. */
static int ti2_open_resync(kctl_vclock *vc, kctl_memstore **ms, kctl_informer **inf, uint64_t resync_ns) {
    kctl_memstore_desc md;
    kctl_informer_desc d;
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(vc);
    if (kctl_memstore_create(&md, ms) != KCTL_OK) return 0;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(*ms);
    d.resource = ti2_cm;
    d.clock = kctl_vclock_clock(vc);
    d.resync_ns = resync_ns;
    return kctl_informer_create(&d, inf) == KCTL_OK;
}

static void ti2_relist_syncs(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_log plain, syncs;
    kctl_handler h;
    kctl_reflector_stats st;
    const kctl_resource sec = { "", "v1", "secrets", "prod" };
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&plain, 0, sizeof plain);
    memset(&syncs, 0, sizeof syncs);
    if (!ti2_open_resync(&vc, &ms, &inf, 0)) return;
    h = ti2_handler(&plain);
    kctl_informer_add_handler(inf, &h);
    h = ti2_handler(&syncs);
    h.resync = true; /* asks for syncs (the informer has no periodic resync: the relists' only) */
    kctl_informer_add_handler(inf, &h);
    ti2_put(ms, "a", "{}");
    ti2_put(ms, "b", "{}");
    ti2_put(ms, "c", "{}");
    kctl_memstore_break_watches_after(ms, 1); /* the link will flap after one event */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK); /* list a b c, watch */
    KT_EQ_STR(plain.text, "add:a@1 add:b@2 add:c@3");
    ti2_put(ms, "c", "{\"x\":1}"); /* delivered (rv 4), then the watch breaks */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    kctl_memstore_break_watches_after(ms, 0);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK); /* IO: backing off */
    /* while it is down, the store moves on elsewhere and forgets its history */
    kctl_memstore_apply(ms, &sec, "{\"metadata\":{\"name\":\"s\"}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_compact(ms, kctl_memstore_revision(ms));
    memset(&plain, 0, sizeof plain);
    memset(&syncs, 0, sizeof syncs);
    kctl_vclock_advance(&vc, KCTL_SEC(2)); /* past the backoff: GONE, relist: nothing changed */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.relists, 1);
    KT_EQ_STR(plain.text, "");
    KT_EQ_STR(syncs.text, "update:a@1>1 update:b@2>2 update:c@4>4");
    /* a relist where one object changed: an update for everyone, syncs for the rest */
    memset(&plain, 0, sizeof plain);
    memset(&syncs, 0, sizeof syncs);
    ti2_put(ms, "b", "{\"x\":2}"); /* rev 6 */
    kctl_memstore_compact(ms, kctl_memstore_revision(ms));
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.relists, 2);
    KT_EQ_STR(plain.text, "update:b@2>6");
    KT_EQ_STR(syncs.text, "update:a@1>1 update:b@2>6 update:c@4>4");
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* The periodic resync's SYNC deltas likewise reach only handlers that ask. */
static void ti2_periodic_syncs(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_log plain, syncs;
    kctl_handler h;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&plain, 0, sizeof plain);
    memset(&syncs, 0, sizeof syncs);
    if (!ti2_open_resync(&vc, &ms, &inf, KCTL_SEC(30))) return;
    h = ti2_handler(&plain);
    kctl_informer_add_handler(inf, &h);
    h = ti2_handler(&syncs);
    h.resync = true;
    kctl_informer_add_handler(inf, &h);
    ti2_put(ms, "a", "{}");
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    memset(&plain, 0, sizeof plain);
    memset(&syncs, 0, sizeof syncs);
    kctl_vclock_advance(&vc, KCTL_SEC(30));
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_STR(plain.text, "");
    KT_EQ_STR(syncs.text, "update:a@1>1");
    ti2_put(ms, "a", "{\"x\":1}"); /* a real change still reaches both */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_STR(plain.text, "update:a@1>2");
    KT_EQ_STR(syncs.text, "update:a@1>1 update:a@1>2");
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* 2.4: out of memory during the first sync is NOMEM from wait_for_sync (and
   last_error), never TIMEOUT, never a synced partial cache; the informer
   retries after its backoff and syncs once memory is back. Every
   allocation of the first step fails in turn. */
static void ti2_nomem_first_sync(void) {
    int n, failed = 0;
    for (n = 0; n < 400; n++) {
        kctl_vclock vc;
        kctl_memstore *ms = NULL;
        kctl_memstore_desc md;
        kctl_informer_desc d;
        kctl_informer *inf = NULL;
        kctl_reflector_stats st;
        kt_alloc a;
        ti2_log l;
        kctl_handler h;
        bool synced;
        int k;
        kctl_vclock_init(&vc, KCTL_SEC(1));
        kt_alloc_init(&a);
        memset(&l, 0, sizeof l);
        memset(&md, 0, sizeof md);
        md.clock = kctl_vclock_clock(&vc);
        if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
        ti2_put(ms, "a", "{}");
        ti2_put(ms, "b", "{}");
        ti2_put(ms, "c", "{}");
        memset(&d, 0, sizeof d);
        d.transport = kctl_memstore_transport(ms);
        d.resource = ti2_cm;
        d.clock = kctl_vclock_clock(&vc);
        d.allocator = kt_allocator(&a);
        if (kctl_informer_create(&d, &inf) != KCTL_OK) { kt_fail(__FILE__, __LINE__, "create"); return; }
        h = ti2_handler(&l);
        kctl_informer_add_handler(inf, &h);
        a.fail_after = n;
        kctl_informer_step(inf, 0, NULL);
        synced = kctl_informer_has_synced(inf);
        kctl_informer_read_stats(inf, &st);
        if (synced) {
            a.fail_after = -1;
            KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 3); /* never a partial cache */
            KT_EQ_INT(kctl_informer_wait_for_sync(inf, 0), KCTL_OK);
        } else {
            failed++;
            KT_EQ_INT(st.last_error, KCTL_ERR_NOMEM);
            KT_EQ_INT(kctl_informer_wait_for_sync(inf, KCTL_SEC(10)), KCTL_ERR_NOMEM); /* at once */
            for (k = 0; k < 4; k++) { /* memory stays short: still not synced, still NOMEM */
                kctl_vclock_advance(&vc, KCTL_SEC(2));
                kctl_informer_step(inf, 0, NULL);
                KT_CHECK(!kctl_informer_has_synced(inf));
                KT_EQ_INT(kctl_informer_wait_for_sync(inf, 0), KCTL_ERR_NOMEM);
            }
            a.fail_after = -1;
            for (k = 0; k < 10 && !kctl_informer_has_synced(inf); k++) {
                kctl_vclock_advance(&vc, KCTL_SEC(2)); /* past the backoff */
                kctl_informer_step(inf, 0, NULL);
            }
            KT_CHECK(kctl_informer_has_synced(inf));
            KT_EQ_INT(kctl_informer_wait_for_sync(inf, 0), KCTL_OK);
            kctl_informer_read_stats(inf, &st);
            KT_EQ_INT(st.last_error, KCTL_OK);
            KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 3);
            /* the handler saw each object added once (a retried delta is a sync) */
            KT_CHECK(strstr(l.text, "add:a@1") && strstr(l.text, "add:b@2") && strstr(l.text, "add:c@3"));
            KT_CHECK(strstr(l.text, "update") == NULL);
        }
        kctl_informer_destroy(inf);
        KT_EQ_INT(a.live, 0);
        kctl_memstore_destroy(ms);
        kctl_vclock_deinit(&vc);
        if (synced) break;
    }
    KT_CHECK(failed > 3); /* the list, the FIFO and the cache each failed */
    KT_CHECK(n < 400);
    if (getenv("KT_VERBOSE")) printf("     (%d allocations of the first step failed in turn)\n", failed);
}

/* On its own thread, with the real clock: synced, then events arrive. */
static void ti2_thread(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    ti2_log l;
    kctl_handler h;
    long i;
    memset(&l, 0, sizeof l);
    memset(&md, 0, sizeof md);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    ti2_put(ms, "a", "{}");
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = ti2_cm;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    h = ti2_handler(&l);
    kctl_informer_add_handler(inf, &h);
    KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
    KT_EQ_INT(kctl_informer_start(inf), KCTL_ERR_EXISTS);
    KT_EQ_INT(kctl_informer_wait_for_sync(inf, KCTL_SEC(20)), KCTL_OK);
    ti2_put(ms, "b", "{}");
    for (i = 0; i < 20000000 && __atomic_load_n(&l.n, __ATOMIC_SEQ_CST) < 2; i++) sched_yield();
    kctl_informer_stop(inf);
    KT_EQ_INT(l.n, 2);
    KT_EQ_STR(l.text, "add:a@1 add:b@2");
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* kctl_informer_event_from_list: true for the events of a list, a relist
   (added, changed, unchanged, or a deletion it found), the contents a late
   handler is given and a resync's syncs; false for watch events and
   outside handlers. A mark '*' follows each event told as from a list. */
typedef struct ti2_origin {
    ti2_log log;
    kctl_informer *inf;
} ti2_origin;
static void ti2_origin_mark(ti2_origin *o, const char *what) {
    char b[160];
    snprintf(b, sizeof b, "%s%s", what, kctl_informer_event_from_list(o->inf) ? "*" : "");
    ti2_say(&o->log, b);
}
static void ti2_origin_add(kctl_obj *obj, void *ud) {
    char b[128];
    snprintf(b, sizeof b, "add:%s", kctl_obj_name(obj));
    ti2_origin_mark((ti2_origin *)ud, b);
}
static void ti2_origin_update(kctl_obj *old, kctl_obj *obj, void *ud) {
    char b[128];
    (void)old;
    snprintf(b, sizeof b, "update:%s", kctl_obj_name(obj));
    ti2_origin_mark((ti2_origin *)ud, b);
}
static void ti2_origin_delete(const char *key, kctl_obj *last, bool unknown, void *ud) {
    char b[128];
    (void)last;
    snprintf(b, sizeof b, "delete%s:%s", unknown ? "?" : "", key);
    ti2_origin_mark((ti2_origin *)ud, b);
}

static void ti2_event_from_list(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_origin o, late;
    kctl_handler h;
    const kctl_resource sec = { "", "v1", "secrets", "prod" };
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&o, 0, sizeof o);
    memset(&late, 0, sizeof late);
    if (!ti2_open_resync(&vc, &ms, &inf, KCTL_SEC(60))) return;
    o.inf = late.inf = inf;
    memset(&h, 0, sizeof h);
    h.on_add = ti2_origin_add;
    h.on_update = ti2_origin_update;
    h.on_delete = ti2_origin_delete;
    h.user_data = &o;
    h.resync = true;
    KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_OK);
    KT_CHECK(!kctl_informer_event_from_list(inf));
    KT_CHECK(!kctl_informer_event_from_list(NULL));
    ti2_put(ms, "a", "{}");
    ti2_put(ms, "b", "{}");
    ti2_put(ms, "c", "{}");
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK); /* the first list */
    KT_EQ_STR(o.log.text, "add:a* add:b* add:c*");
    memset(&o.log, 0, sizeof o.log);
    ti2_put(ms, "d", "{}");                        /* watch events */
    ti2_put(ms, "a", "{\"x\":1}");
    kctl_memstore_delete(ms, &ti2_cm, "d", NULL);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_STR(o.log.text, "add:d delete:prod/d update:a"); /* d's deltas together, as the FIFO keeps them */
    KT_CHECK(!kctl_informer_event_from_list(inf));
    memset(&o.log, 0, sizeof o.log);
    h.user_data = &late;                           /* a late handler: the contents, as a list */
    KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_OK);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_INT(late.log.n, 3);
    KT_CHECK(strstr(late.log.text, "add:a*") && strstr(late.log.text, "add:b*") && strstr(late.log.text, "add:c*"));
    memset(&late.log, 0, sizeof late.log);
    kctl_vclock_advance(&vc, KCTL_SEC(60));        /* the periodic resync */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_INT(o.log.n, 3);
    KT_CHECK(strstr(o.log.text, "update:a*") && strstr(o.log.text, "update:b*") && strstr(o.log.text, "update:c*"));
    memset(&o.log, 0, sizeof o.log);
    memset(&late.log, 0, sizeof late.log);
    ti2_put(ms, "b", "{\"x\":2}");                 /* missed by the watch: found by a relist */
    ti2_put(ms, "e", "{}");
    kctl_memstore_delete(ms, &ti2_cm, "c", NULL);
    kctl_memstore_apply(ms, &sec, "{\"metadata\":{\"name\":\"s\"}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_compact(ms, kctl_memstore_revision(ms));
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK); /* GONE: relist */
    KT_CHECK(strstr(o.log.text, "update:a*") != NULL); /* unchanged: a sync */
    KT_CHECK(strstr(o.log.text, "update:b*") != NULL); /* changed */
    KT_CHECK(strstr(o.log.text, "add:e*") != NULL);    /* new */
    KT_CHECK(strstr(o.log.text, "delete?:prod/c*") != NULL);
    KT_EQ_INT(o.log.n, 4);
    KT_CHECK(!kctl_informer_event_from_list(inf));
    memset(&o.log, 0, sizeof o.log);
    ti2_put(ms, "e", "{\"x\":3}");                 /* and the watch again */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_STR(o.log.text, "update:e");
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

void kt_suite_informer(void) {
    KT_RUN(ti2_step_driven);
    KT_RUN(ti2_missed_delete);
    KT_RUN(ti2_many_handlers);
    KT_RUN(ti2_relist_syncs);
    KT_RUN(ti2_periodic_syncs);
    KT_RUN(ti2_event_from_list);
    KT_RUN(ti2_nomem_first_sync);
    KT_RUN(ti2_thread);
}
