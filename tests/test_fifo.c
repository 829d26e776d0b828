/* test_fifo.c - the DeltaFIFO, point by point against client-go's semantics. */
#include "kt.h"
#include <stdlib.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <sched.h>
#endif

static kctl_obj *tf_obj(const char *name, const char *rv) {
    char doc[256];
    kctl_obj *o = NULL;
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"resourceVersion\":\"%s\"}}", name, rv);
    if (kctl_obj_parse(doc, strlen(doc), NULL, &o) != KCTL_OK) kt_fail(__FILE__, __LINE__, "bad object");
    return o;
}

/* What one pop saw: key, and per delta its type, rv ("-" for no object), unknown flag. */
typedef struct tf_seen {
    char key[64];
    size_t n;
    int type[8];
    char rv[8][16];
    bool unknown[8];
    int ret; /* what the process function returns */
} tf_seen;

static int tf_record(const char *key, const kctl_delta *d, size_t n, void *user_data) {
    tf_seen *s = (tf_seen *)user_data;
    size_t i;
    snprintf(s->key, sizeof s->key, "%s", key);
    s->n = n;
    for (i = 0; i < n && i < 8; i++) {
        s->type[i] = d[i].type;
        snprintf(s->rv[i], sizeof s->rv[i], "%s", d[i].obj ? kctl_obj_resource_version(d[i].obj) : "-");
        s->unknown[i] = d[i].final_state_unknown;
    }
    return s->ret;
}

/* Pop one key and check it: key, then "TYPE:rv" per delta, e.g. "A:1 U:2 D?:-". */
static void tf_expect(kctl_fifo *f, const char *key, const char *want, int line) {
    tf_seen s;
    char got[256] = "";
    size_t i;
    int rc;
    memset(&s, 0, sizeof s);
    rc = kctl_fifo_try_pop(f, tf_record, &s);
    if (rc != KCTL_OK) { kt_fail(__FILE__, line, "pop: rc %d, want a key", rc); return; }
    for (i = 0; i < s.n && i < 8; i++) {
        static const char *names[] = { "?", "A", "U", "D", "R", "S" };
        char one[40];
        snprintf(one, sizeof one, "%s%s%s:%s", i ? " " : "", names[s.type[i]], s.unknown[i] ? "?" : "", s.rv[i]);
        strcat(got, one);
    }
    if (strcmp(s.key, key) != 0 || strcmp(got, want) != 0)
        kt_fail(__FILE__, line, "popped %s [%s], want %s [%s]", s.key, got, key, want);
}
#define TF_EXPECT(f, key, want) tf_expect((f), (key), (want), __LINE__)

static kctl_fifo *tf_new(kctl_indexer *known) {
    kctl_fifo_desc d;
    kctl_fifo *f = NULL;
    memset(&d, 0, sizeof d);
    d.known = known;
    KT_EQ_INT(kctl_fifo_create(&d, &f), KCTL_OK);
    return f;
}

static void tf_order_and_one_entry_per_key(void) {
    kctl_fifo *f = tf_new(NULL);
    kctl_obj *a1 = tf_obj("a", "1"), *b1 = tf_obj("b", "2"), *a2 = tf_obj("a", "3"), *c1 = tf_obj("c", "4");
    tf_seen s;
    if (!f) return;
    KT_EQ_INT(kctl_fifo_add(f, a1), KCTL_OK);
    KT_EQ_INT(kctl_fifo_add(f, b1), KCTL_OK);
    KT_EQ_INT(kctl_fifo_update(f, a2), KCTL_OK); /* a waits once, with both deltas */
    KT_EQ_INT(kctl_fifo_add(f, c1), KCTL_OK);
    KT_EQ_U64(kctl_fifo_len(f), 3);
    TF_EXPECT(f, "ns/a", "A:1 U:3");
    TF_EXPECT(f, "ns/b", "A:2");
    TF_EXPECT(f, "ns/c", "A:4");
    memset(&s, 0, sizeof s);
    KT_EQ_INT(kctl_fifo_try_pop(f, tf_record, &s), KCTL_ERR_AGAIN);
    kctl_fifo_destroy(f);
    kctl_obj_unref(a1); kctl_obj_unref(b1); kctl_obj_unref(a2); kctl_obj_unref(c1);
}

static void tf_only_consecutive_deletes_collapse(void) {
    kctl_fifo *f = tf_new(NULL);
    kctl_obj *v1 = tf_obj("a", "1"), *v2 = tf_obj("a", "2"), *v3 = tf_obj("a", "3"), *t = tf_obj("t", "9");
    kctl_obj *list[1];
    if (!f) return;
    /* delete, delete: the newer real one stays */
    kctl_fifo_add(f, v1);
    kctl_fifo_delete(f, v2);
    kctl_fifo_delete(f, v3);
    TF_EXPECT(f, "ns/a", "A:1 D:3");
    /* delete, update, delete: nothing collapses */
    kctl_fifo_add(f, v1);
    kctl_fifo_delete(f, v1);
    kctl_fifo_update(f, v2);
    kctl_fifo_delete(f, v3);
    TF_EXPECT(f, "ns/a", "A:1 D:1 U:2 D:3");
    /* a real deletion, then a relist's tombstone for it: the real one stays */
    kctl_fifo_add(f, v1);
    kctl_fifo_delete(f, v2);
    list[0] = t;
    kctl_fifo_replace(f, list, 1); /* ns/a is queued but not listed: tombstone */
    TF_EXPECT(f, "ns/a", "A:1 D:2");
    TF_EXPECT(f, "ns/t", "R:9");
    kctl_fifo_destroy(f);
    kctl_obj_unref(v1); kctl_obj_unref(v2); kctl_obj_unref(v3); kctl_obj_unref(t);
}

static void tf_delete_of_unknown_key_ignored(void) {
    kctl_indexer *ix = NULL;
    kctl_fifo *f;
    kctl_obj *a = tf_obj("a", "1"), *b = tf_obj("b", "2");
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    f = tf_new(ix);
    if (!f) return;
    KT_EQ_INT(kctl_fifo_delete(f, a), KCTL_OK); /* known nowhere */
    KT_EQ_U64(kctl_fifo_len(f), 0);
    KT_EQ_INT(kctl_indexer_add(ix, a), KCTL_OK); /* known to the cache */
    KT_EQ_INT(kctl_fifo_delete(f, a), KCTL_OK);
    KT_EQ_U64(kctl_fifo_len(f), 1);
    TF_EXPECT(f, "ns/a", "D:1");
    kctl_fifo_destroy(f);
    /* without known objects, only queued keys count */
    f = tf_new(NULL);
    KT_EQ_INT(kctl_fifo_delete(f, b), KCTL_OK);
    KT_EQ_U64(kctl_fifo_len(f), 0);
    kctl_fifo_add(f, b);
    kctl_fifo_delete(f, b);
    TF_EXPECT(f, "ns/b", "A:2 D:2");
    kctl_fifo_destroy(f);
    kctl_indexer_destroy(ix);
    kctl_obj_unref(a); kctl_obj_unref(b);
}

static void tf_replace_finds_deletions(void) {
    kctl_indexer *ix = NULL;
    kctl_fifo *f;
    kctl_obj *keep = tf_obj("keep", "5"), *gone_cached = tf_obj("cached", "3"), *gone_queued = tf_obj("queued", "4"),
             *keep2 = tf_obj("keep", "6");
    kctl_obj *list[1];
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, gone_cached), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, keep), KCTL_OK);
    f = tf_new(ix);
    if (!f) return;
    kctl_fifo_update(f, gone_queued);
    list[0] = keep2;
    KT_EQ_INT(kctl_fifo_replace(f, list, 1), KCTL_OK);
    KT_EQ_U64(kctl_fifo_len(f), 3);
    TF_EXPECT(f, "ns/queued", "U:4 D?:4"); /* the last known object rides along */
    TF_EXPECT(f, "ns/keep", "R:6");
    TF_EXPECT(f, "ns/cached", "D?:3");     /* from the cache */
    kctl_fifo_destroy(f);
    kctl_indexer_destroy(ix);
    kctl_obj_unref(keep); kctl_obj_unref(gone_cached); kctl_obj_unref(gone_queued); kctl_obj_unref(keep2);
}

static void tf_resync(void) {
    kctl_indexer *ix = NULL;
    kctl_fifo *f;
    kctl_obj *a = tf_obj("a", "1"), *b = tf_obj("b", "2"), *b2 = tf_obj("b", "3");
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    kctl_indexer_add(ix, a);
    kctl_indexer_add(ix, b);
    f = tf_new(ix);
    if (!f) return;
    kctl_fifo_update(f, b2); /* b has a queued delta: no SYNC for it */
    KT_EQ_INT(kctl_fifo_resync(f), KCTL_OK);
    KT_EQ_U64(kctl_fifo_len(f), 2);
    TF_EXPECT(f, "ns/b", "U:3");
    TF_EXPECT(f, "ns/a", "S:1");
    kctl_fifo_destroy(f);
    f = tf_new(NULL); /* no known objects: nothing to resync */
    KT_EQ_INT(kctl_fifo_resync(f), KCTL_OK);
    KT_EQ_U64(kctl_fifo_len(f), 0);
    kctl_fifo_destroy(f);
    kctl_indexer_destroy(ix);
    kctl_obj_unref(a); kctl_obj_unref(b); kctl_obj_unref(b2);
}

static void tf_has_synced(void) {
    kctl_fifo *f = tf_new(NULL);
    kctl_obj *a = tf_obj("a", "1"), *b = tf_obj("b", "2"), *c = tf_obj("c", "3");
    kctl_obj *list[2];
    if (!f) return;
    KT_CHECK(!kctl_fifo_has_synced(f));
    list[0] = a;
    list[1] = b;
    KT_EQ_INT(kctl_fifo_replace(f, list, 2), KCTL_OK);
    KT_CHECK(!kctl_fifo_has_synced(f));
    kctl_fifo_add(f, c); /* later events do not count */
    TF_EXPECT(f, "ns/a", "R:1");
    KT_CHECK(!kctl_fifo_has_synced(f));
    TF_EXPECT(f, "ns/b", "R:2");
    KT_CHECK(kctl_fifo_has_synced(f));
    kctl_fifo_destroy(f);
    f = tf_new(NULL); /* an add before any replace: synced at once, as client-go */
    kctl_fifo_add(f, a);
    KT_CHECK(kctl_fifo_has_synced(f));
    kctl_fifo_destroy(f);
    f = tf_new(NULL); /* an empty first list */
    KT_EQ_INT(kctl_fifo_replace(f, NULL, 0), KCTL_OK);
    KT_CHECK(kctl_fifo_has_synced(f));
    kctl_fifo_destroy(f);
    kctl_obj_unref(a); kctl_obj_unref(b); kctl_obj_unref(c);
}

static void tf_requeue_and_errors(void) {
    kctl_fifo *f = tf_new(NULL);
    kctl_obj *a = tf_obj("a", "1"), *b = tf_obj("b", "2");
    tf_seen s;
    if (!f) return;
    kctl_fifo_add(f, a);
    kctl_fifo_add(f, b);
    memset(&s, 0, sizeof s);
    s.ret = KCTL_ERR_AGAIN; /* put a back, at the end */
    KT_EQ_INT(kctl_fifo_try_pop(f, tf_record, &s), KCTL_OK);
    KT_EQ_STR(s.key, "ns/a");
    KT_EQ_U64(kctl_fifo_len(f), 2);
    TF_EXPECT(f, "ns/b", "A:2");
    memset(&s, 0, sizeof s);
    s.ret = KCTL_ERR_IO; /* other results pass through; the deltas are consumed */
    KT_EQ_INT(kctl_fifo_try_pop(f, tf_record, &s), KCTL_ERR_IO);
    KT_EQ_STR(s.key, "ns/a");
    KT_EQ_U64(kctl_fifo_len(f), 0);
    KT_EQ_INT(kctl_fifo_add(f, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_fifo_try_pop(f, NULL, NULL), KCTL_ERR_INVALID_ARG);
    kctl_fifo_add(f, a);
    kctl_fifo_close(f);
    KT_EQ_INT(kctl_fifo_add(f, b), KCTL_ERR_SHUTDOWN);
    TF_EXPECT(f, "ns/a", "A:1"); /* what was queued still comes out */
    memset(&s, 0, sizeof s);
    KT_EQ_INT(kctl_fifo_try_pop(f, tf_record, &s), KCTL_ERR_SHUTDOWN);
    kctl_fifo_destroy(f);
    kctl_obj_unref(a); kctl_obj_unref(b);
}

static void tf_nomem_sweep(void) {
    long fail;
    for (fail = 0; fail < 40; fail++) {
        kt_alloc al;
        kctl_fifo_desc d;
        kctl_fifo *f = NULL;
        kctl_obj *o[3];
        tf_seen s;
        int i, rc, bad = 0;
        kt_alloc_init(&al);
        memset(&d, 0, sizeof d);
        d.allocator = kt_allocator(&al);
        o[0] = tf_obj("a", "1");
        o[1] = tf_obj("b", "2");
        o[2] = tf_obj("a", "3");
        al.fail_after = fail;
        if ((rc = kctl_fifo_create(&d, &f)) == KCTL_OK) {
            for (i = 0; i < 3; i++)
                if ((rc = kctl_fifo_add(f, o[i])) != KCTL_OK && rc != KCTL_ERR_NOMEM) bad++;
            if ((rc = kctl_fifo_replace(f, o, 2)) != KCTL_OK && rc != KCTL_ERR_NOMEM) bad++;
            memset(&s, 0, sizeof s);
            while ((rc = kctl_fifo_try_pop(f, tf_record, &s)) == KCTL_OK) { }
            if (rc != KCTL_ERR_AGAIN) bad++;
            kctl_fifo_destroy(f);
        } else if (rc != KCTL_ERR_NOMEM) {
            bad++;
        }
        KT_EQ_INT(bad, 0);
        KT_EQ_INT(al.live, 0);
        for (i = 0; i < 3; i++) kctl_obj_unref(o[i]);
    }
}

/* An allocator that counts live bytes (a size word before each block). */
typedef struct tf_bytes {
    long allocs, live_bytes, peak_bytes;
} tf_bytes;
static void *tf_bytes_alloc(size_t size, void *user_data) {
    tf_bytes *b = (tf_bytes *)user_data;
    size_t *p = (size_t *)malloc(size + 16);
    if (!p) return NULL;
    p[0] = size;
    b->allocs++;
    b->live_bytes += (long)size;
    if (b->live_bytes > b->peak_bytes) b->peak_bytes = b->live_bytes;
    return (char *)p + 16;
}
static void tf_bytes_free(void *ptr, void *user_data) {
    tf_bytes *b = (tf_bytes *)user_data;
    size_t *p;
    if (!ptr) return;
    p = (size_t *)(void *)((char *)ptr - 16);
    b->live_bytes -= (long)p[0];
    free(p);
}
static int tf_drop(const char *key, const kctl_delta *d, size_t n, void *user_data) {
    (void)key; (void)d; (void)n; (void)user_data;
    return KCTL_OK;
}

/* A FIFO on a byte-counting allocator b, and TF_BURST objects in o
   (tf_burst_free ends both); NULL if it could not be made. */
#define TF_BURST 20000
static kctl_fifo *tf_burst_fifo(tf_bytes *b, kctl_obj **o) {
    kctl_fifo_desc d;
    kctl_fifo *f = NULL;
    char name[32];
    int i;
    memset(b, 0, sizeof *b);
    for (i = 0; i < TF_BURST; i++) {
        snprintf(name, sizeof name, "k%05d", i);
        o[i] = tf_obj(name, "1");
    }
    memset(&d, 0, sizeof d);
    d.allocator.alloc_fn = tf_bytes_alloc;
    d.allocator.free_fn = tf_bytes_free;
    d.allocator.user_data = b;
    KT_EQ_INT(kctl_fifo_create(&d, &f), KCTL_OK);
    if (!f)
        for (i = 0; i < TF_BURST; i++) kctl_obj_unref(o[i]);
    return f;
}
static void tf_burst_free(kctl_fifo *f, tf_bytes *b, kctl_obj **o) {
    int i;
    kctl_fifo_destroy(f);
    KT_EQ_INT(b->live_bytes, 0);
    for (i = 0; i < TF_BURST; i++) kctl_obj_unref(o[i]);
}

/* A FIFO filled and drained over and over by the same number of keys (an
   informer's, each step; fewer than the items it pools) keeps its table:
   no allocation after the first round (but in small builds). Once
   emptied after a burst, its table gives the memory back. */
static void tf_table_fill_drain(void) {
    enum { N = 60 };
    static kctl_obj *o[TF_BURST];
    tf_bytes b;
    kctl_fifo *f = tf_burst_fifo(&b, o);
    long allocs, base;
    int i, r, bad = 0;
    if (!f) return;
    base = b.live_bytes;
    allocs = 0;
    for (r = 0; r < 20; r++) {
        if (r == 1) allocs = b.allocs;
        for (i = 0; i < N; i++)
            if (kctl_fifo_add(f, o[i]) != KCTL_OK) bad++;
        while (kctl_fifo_try_pop(f, tf_drop, NULL) == KCTL_OK) { }
    }
    KT_EQ_INT(bad, 0);
#if !KCTL_SMALL /* (small builds shrink the table as it empties: less code) */
    KT_EQ_INT(b.allocs - allocs, 0); /* rounds 2 to 20: nothing allocated */
#else
    (void)allocs;
#endif
    for (i = 0; i < TF_BURST; i++)
        if (kctl_fifo_add(f, o[i]) != KCTL_OK) bad++;
    KT_CHECK(b.live_bytes - base > TF_BURST * 9); /* (a slot and a tag a key, and the items) */
    while (kctl_fifo_try_pop(f, tf_drop, NULL) == KCTL_OK) { }
    KT_EQ_INT(bad, 0);
    KT_CHECK(b.live_bytes - base < 1024 * 10 + 64 * 512); /* the table at 1024 slots at most, and the 64 pooled items */
    tf_burst_free(f, &b, o);
}

static int tf_keep_one(const char *key, const kctl_delta *d, size_t n, void *user_data) {
    (void)d; (void)n; (void)user_data;
    return strcmp(key, "ns/k00000") == 0 ? KCTL_ERR_AGAIN : KCTL_OK; /* put back, over and over */
}

/* A FIFO that never empties (a key put back over and over) still gives
   back the memory of a burst as it drains. */
static void tf_table_shrinks_without_emptying(void) {
    static kctl_obj *o[TF_BURST];
    tf_bytes b;
    kctl_fifo *f = tf_burst_fifo(&b, o);
    long base;
    int i, bad = 0;
    if (!f) return;
    base = b.live_bytes;
    for (i = 0; i < TF_BURST; i++)
        if (kctl_fifo_add(f, o[i]) != KCTL_OK) bad++;
    KT_CHECK(b.live_bytes - base > TF_BURST * 9);
    for (i = 0; i < TF_BURST + 100; i++)
        if (kctl_fifo_try_pop(f, tf_keep_one, NULL) != KCTL_OK) bad++;
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_fifo_len(f), 1);
    KT_CHECK(b.live_bytes - base < 1024 * 10 + 65 * 512); /* a table of 1024 slots at most, the key's item and 64 pooled */
    tf_burst_free(f, &b, o);
}

#ifndef KCTL_NO_THREADS
typedef struct tf_par {
    kctl_fifo *f;
    int inside, overlap, pops; /* atomics */
} tf_par;

static int tf_check_alone(const char *key, const kctl_delta *d, size_t n, void *user_data) {
    tf_par *p = (tf_par *)user_data;
    int i;
    (void)key; (void)d; (void)n;
    if (__atomic_add_fetch(&p->inside, 1, __ATOMIC_SEQ_CST) != 1) __atomic_store_n(&p->overlap, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < 50; i++) sched_yield();
    __atomic_sub_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&p->pops, 1, __ATOMIC_SEQ_CST);
    return KCTL_OK;
}

static void *tf_popper(void *arg) {
    tf_par *p = (tf_par *)arg;
    while (kctl_fifo_pop(p->f, tf_check_alone, p) == KCTL_OK) { }
    return NULL;
}
#endif

/* Pops never overlap; close wakes blocked pops with SHUTDOWN. */
static void tf_threads(void) {
#ifndef KCTL_NO_THREADS
    tf_par p;
    pthread_t t[3];
    kctl_obj *o[20];
    char name[16];
    int i;
    memset(&p, 0, sizeof p);
    p.f = tf_new(NULL);
    if (!p.f) return;
    for (i = 0; i < 3; i++) pthread_create(&t[i], NULL, tf_popper, &p);
    for (i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "k%d", i);
        o[i] = tf_obj(name, "1");
        kctl_fifo_add(p.f, o[i]);
    }
    for (i = 0; i < 5000000 && __atomic_load_n(&p.pops, __ATOMIC_SEQ_CST) < 20; i++) sched_yield();
    kctl_fifo_close(p.f);
    for (i = 0; i < 3; i++) pthread_join(t[i], NULL);
    KT_EQ_INT(p.pops, 20);
    KT_EQ_INT(p.overlap, 0);
    kctl_fifo_destroy(p.f);
    for (i = 0; i < 20; i++) kctl_obj_unref(o[i]);
#else
    KT_SKIP();
#endif
}

void kt_suite_fifo(void) {
    KT_RUN(tf_order_and_one_entry_per_key);
    KT_RUN(tf_only_consecutive_deletes_collapse);
    KT_RUN(tf_delete_of_unknown_key_ignored);
    KT_RUN(tf_replace_finds_deletions);
    KT_RUN(tf_resync);
    KT_RUN(tf_has_synced);
    KT_RUN(tf_requeue_and_errors);
    KT_RUN(tf_nomem_sweep);
    KT_RUN(tf_table_fill_drain);
    KT_RUN(tf_table_shrinks_without_emptying);
    KT_RUN(tf_threads);
}
