/* test_indexer.c - the local cache: keys, indexes kept exact, replace, memory. */
#include "kt.h"
#include <stdlib.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <sched.h>
#endif

static kctl_obj *ti_obj(const char *ns, const char *name, const char *app, const char *rv) {
    char doc[512];
    kctl_obj *o = NULL;
    if (ns) snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"resourceVersion\":\"%s\"%s%s%s}}",
                     name, ns, rv, app ? ",\"labels\":{\"app\":\"" : "", app ? app : "", app ? "\"}" : "");
    else snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%s\"%s%s%s}}",
                  name, rv, app ? ",\"labels\":{\"app\":\"" : "", app ? app : "", app ? "\"}" : "");
    if (kctl_obj_parse(doc, strlen(doc), NULL, &o) != KCTL_OK) kt_fail(__FILE__, __LINE__, "bad test object %s", doc);
    return o;
}

/* Index on the "app" label (none when absent). */
static int ti_by_app(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    const char *app = kctl_obj_label(obj, "app");
    (void)user_data;
    if (app) emit(app, ctx);
    return KCTL_OK;
}

/* Several values, one of them twice. */
static int ti_multi(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    (void)user_data;
    emit("all", ctx);
    emit(kctl_obj_name(obj), ctx);
    emit("all", ctx);
    return KCTL_OK;
}

static int ti_fail_on_bad(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    (void)user_data;
    if (strcmp(kctl_obj_name(obj), "bad") == 0) return KCTL_ERR_INVALID_ARG;
    emit("ok", ctx);
    return KCTL_OK;
}

/* Live bytes an allocator was asked for (the size kept before each block). */
typedef struct ti_bytes {
    size_t live;
} ti_bytes;
static void *ti_bytes_alloc(size_t size, void *user_data) {
    ti_bytes *b = (ti_bytes *)user_data;
    size_t *p = (size_t *)malloc(sizeof(size_t) * 2 + size);
    if (!p) return NULL;
    p[0] = size;
    b->live += size;
    return p + 2;
}
static void ti_bytes_free(void *ptr, void *user_data) {
    ti_bytes *b = (ti_bytes *)user_data;
    size_t *p;
    if (!ptr) return;
    p = (size_t *)ptr - 2;
    b->live -= p[0];
    free(p);
}

/* The key map's table: 8 bytes of pointer and 1 tag byte a slot (a
   lookup's random reads: a smaller table stays in the caches), not 16
   bytes of hash and pointer. 10,000 cluster-scoped objects fill 16,384
   slots of the key map and as many of the namespace index's member set
   (a pointer a slot): the indexer's own bytes stay under 20 a slot, 17
   with 9-byte slots, 24 with 16-byte ones. */
static void ti_key_map_bytes(void) {
    kctl_indexer_desc desc;
    kctl_indexer *ix = NULL;
    ti_bytes b;
    size_t empty;
    char name[32];
    int i;
    memset(&b, 0, sizeof b);
    memset(&desc, 0, sizeof desc);
    desc.allocator.alloc_fn = ti_bytes_alloc;
    desc.allocator.free_fn = ti_bytes_free;
    desc.allocator.user_data = &b;
    KT_EQ_INT(kctl_indexer_create(&desc, &ix), KCTL_OK);
    if (!ix) return;
    empty = b.live;
    for (i = 0; i < 10000; i++) {
        kctl_obj *o;
        snprintf(name, sizeof name, "n-%d", i);
        o = ti_obj(NULL, name, NULL, "1");
        KT_EQ_INT(kctl_indexer_add(ix, o), KCTL_OK);
        kctl_obj_unref(o);
    }
    KT_EQ_INT(kctl_indexer_len(ix), 10000);
    if (!(b.live - empty < (size_t)16384 * 20)) kt_fail(__FILE__, __LINE__, "%lu bytes", (unsigned long)(b.live - empty));
    for (i = 0; i < 10000; i += 7) { /* and every key is still found */
        kctl_obj *o;
        snprintf(name, sizeof name, "n-%d", i);
        o = kctl_indexer_get(ix, name);
        KT_CHECK(o && strcmp(kctl_obj_name(o), name) == 0);
        kctl_obj_unref(o);
    }
    kctl_indexer_destroy(ix);
    KT_EQ_INT(b.live, 0);
}

static size_t ti_count(kctl_indexer *ix, const char *index, const char *value) {
    kctl_obj_list l;
    size_t n;
    if (kctl_indexer_by_index(ix, index, value, &l) != KCTL_OK) return (size_t)-1;
    n = l.count;
    kctl_obj_list_free(&l);
    return n;
}

static bool ti_has_str(const kctl_str_list *l, const char *s) {
    size_t i;
    for (i = 0; i < l->count; i++)
        if (strcmp(l->items[i], s) == 0) return true;
    return false;
}

/* The key map under inserts and deletes, its invariants checked at every
   step (kctl__test_map_churn): spread hashes, then hashes of 2, 6 and 10
   bits, whose probe runs pass 255 slots (a distance the table stores as
   "that far or more") and wrap around the table's end. */
static void ti_key_map_churn(void) {
    KT_EQ_INT(kctl__test_map_churn(1, 300, 4000, 0xffffffffu), 0);
    KT_EQ_INT(kctl__test_map_churn(2, 300, 3000, 0x3u), 0);
    KT_EQ_INT(kctl__test_map_churn(3, 600, 3000, 0x3fu), 0);
    KT_EQ_INT(kctl__test_map_churn(4, 2000, 3000, 0x3ffu), 0);
}

/* Two heap blocks of exactly na and nb bytes (a zero size: 1), or a
   failure recorded and false. */
static bool ti_exact_pair(char **a, size_t na, char **b, size_t nb) {
    *a = (char *)malloc(na ? na : 1);
    *b = (char *)malloc(nb ? nb : 1);
    if (*a && *b) return true;
    free(*a);
    free(*b);
    kt_fail(__FILE__, __LINE__, "malloc");
    return false;
}

/* The key map's key comparison (whole loads for 4 to 64 bytes, memcmp
   otherwise): every length to 80, at every alignment of either side, is
   equal to an equal key and unequal to one that differs in any single
   byte, by any single bit. The keys are copied to heap blocks of exactly
   their length, so a load past either end is an ASan error. */
static void ti_key_eq(void) {
    char src[96];
    size_t n, i, off, bad = 0;
    unsigned bit;
    for (i = 0; i < sizeof src; i++) src[i] = (char)('a' + (i * 7) % 26);
    for (n = 0; n <= 80; n++)
        for (off = 0; off < 8; off++) {
            char *a, *b;
            if (!ti_exact_pair(&a, n + off, &b, n)) return;
            memcpy(a + off, src, n);
            memcpy(b, src, n);
            if (!kctl__test_key_eq(a + off, b, n)) bad++;
            for (i = 0; i < n; i++)
                for (bit = 0; bit < 8; bit += 7) { /* the lowest and the highest bit */
                    b[i] ^= (char)(1u << bit);
                    if (kctl__test_key_eq(a + off, b, n) || kctl__test_key_eq(b, a + off, n)) bad++;
                    b[i] ^= (char)(1u << bit);
                }
            free(a);
            free(b);
        }
    KT_EQ_INT((long)bad, 0);
}

/* The short copy of hot paths (kctl__copy: keys, the JSON writer's
   puts): every length to 80, from and to every alignment, gives the
   source's bytes and writes nothing else. Each side is a heap block of
   exactly its bytes, so a load or store past either end is an ASan
   error; the destination's bytes before it are checked untouched. */
static void ti_short_copy(void) {
    char src[96];
    size_t n, i, soff, doff, bad = 0;
    for (i = 0; i < sizeof src; i++) src[i] = (char)('A' + (i * 11) % 26);
    for (n = 0; n <= 80; n++)
        for (soff = 0; soff < 8; soff++)
            for (doff = 0; doff < 8; doff += 3) {
                char *s, *d;
                if (!ti_exact_pair(&s, soff + n, &d, doff + n)) return;
                memcpy(s + soff, src, n);
                memset(d, '#', doff + n);
                kctl__test_copy(d + doff, s + soff, n);
                if (n && memcmp(d + doff, src, n) != 0) bad++;
                for (i = 0; i < doff; i++)
                    if (d[i] != '#') bad++;
                free(s);
                free(d);
            }
    KT_EQ_INT((long)bad, 0);
}

static void ti_add_get_delete(void) {
    kctl_indexer *ix = NULL;
    kctl_obj *a = ti_obj("prod", "a", "web", "1"), *b = ti_obj("prod", "b", "db", "2"), *c = ti_obj(NULL, "node-1", NULL, "3"), *g;
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, a), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, b), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, c), KCTL_OK);
    KT_EQ_U64(kctl_indexer_len(ix), 3);
    g = kctl_indexer_get(ix, "prod/a");
    KT_CHECK(g == a);
    kctl_obj_unref(g);
    g = kctl_indexer_get(ix, "node-1");
    KT_CHECK(g == c);
    kctl_obj_unref(g);
    KT_CHECK(kctl_indexer_get(ix, "prod/zz") == NULL);
    KT_EQ_U64(ti_count(ix, "namespace", "prod"), 2);
    KT_EQ_U64(ti_count(ix, "namespace", ""), 1); /* cluster-scoped, as client-go indexes it */
    KT_EQ_U64(ti_count(ix, "namespace", "dev"), 0);
    KT_EQ_INT(kctl_indexer_delete(ix, "prod/a"), KCTL_OK);
    KT_EQ_INT(kctl_indexer_delete(ix, "prod/a"), KCTL_ERR_NOT_FOUND);
    KT_EQ_U64(kctl_indexer_len(ix), 2);
    KT_EQ_U64(ti_count(ix, "namespace", "prod"), 1);
    KT_EQ_INT(kctl_indexer_by_index(ix, "nope", "x", NULL), KCTL_ERR_INVALID_ARG);
    {
        kctl_obj_list l;
        KT_EQ_INT(kctl_indexer_by_index(ix, "nope", "x", &l), KCTL_ERR_NOT_FOUND);
        KT_EQ_U64(l.count, 0);
    }
    kctl_indexer_destroy(ix);
    kctl_obj_unref(a);
    kctl_obj_unref(b);
    kctl_obj_unref(c);
}

/* The built-in "namespace" index, with or without the others
   (KCTL_NO_INDEXES answers it by a scan): its keys and values; adding
   "namespace" again is EXISTS; another index is UNSUPPORTED there. */
static void ti_namespace_index(void) {
    kctl_indexer *ix = NULL;
    kctl_obj *a = ti_obj("prod", "a", "web", "1"), *b = ti_obj("prod", "b", "db", "2"), *c = ti_obj("dev", "c", NULL, "3");
    kctl_obj *d = ti_obj(NULL, "node-1", NULL, "4");
    kctl_str_list keys;
    int rc;
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_list_index_values(ix, "namespace", &keys), KCTL_OK);
    KT_EQ_U64(keys.count, 0);
    kctl_str_list_free(&keys);
    KT_EQ_INT(kctl_indexer_add(ix, a), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, b), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, c), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, d), KCTL_OK);
    KT_EQ_INT(kctl_indexer_index_keys(ix, "namespace", "prod", &keys), KCTL_OK);
    KT_EQ_U64(keys.count, 2);
    KT_CHECK(ti_has_str(&keys, "prod/a") && ti_has_str(&keys, "prod/b"));
    kctl_str_list_free(&keys);
    KT_EQ_INT(kctl_indexer_index_keys(ix, "namespace", "qa", &keys), KCTL_OK);
    KT_EQ_U64(keys.count, 0);
    kctl_str_list_free(&keys);
    KT_EQ_INT(kctl_indexer_index_keys(ix, "nope", "prod", &keys), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_indexer_list_index_values(ix, "namespace", &keys), KCTL_OK);
    KT_EQ_U64(keys.count, 3);
    KT_CHECK(ti_has_str(&keys, "prod") && ti_has_str(&keys, "dev") && ti_has_str(&keys, ""));
    kctl_str_list_free(&keys);
    KT_EQ_INT(kctl_indexer_list_index_values(ix, "nope", &keys), KCTL_ERR_NOT_FOUND);
    KT_EQ_U64(ti_count(ix, "namespace", "dev"), 1);
    KT_EQ_INT(kctl_indexer_delete(ix, "dev/c"), KCTL_OK);
    KT_EQ_U64(ti_count(ix, "namespace", "dev"), 0);
    KT_EQ_INT((kctl_indexer_add_index)(ix, "namespace", ti_by_app, NULL), KCTL_ERR_EXISTS); /* the function, not kt.h's wrapper */
    rc = (kctl_indexer_add_index)(ix, "app", ti_by_app, NULL);
#ifdef KCTL_NO_INDEXES
    KT_EQ_INT(rc, KCTL_ERR_UNSUPPORTED);
#else
    KT_EQ_INT(rc, KCTL_OK);
    KT_EQ_U64(ti_count(ix, "app", "web"), 1);
#endif
    kctl_indexer_destroy(ix);
    kctl_obj_unref(a);
    kctl_obj_unref(b);
    kctl_obj_unref(c);
    kctl_obj_unref(d);
}

static void ti_update_keeps_indexes_exact(void) {
    kctl_indexer *ix = NULL;
    kctl_obj *v1 = ti_obj("prod", "a", "web", "1"), *v2 = ti_obj("prod", "a", "api", "2"), *v3 = ti_obj("prod", "a", NULL, "3");
    kctl_str_list vals;
    kctl_obj *g;
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(ix, "app", ti_by_app, NULL), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(ix, "app", ti_by_app, NULL), KCTL_ERR_EXISTS);
    KT_EQ_INT(kctl_indexer_add(ix, v1), KCTL_OK);
    KT_EQ_U64(ti_count(ix, "app", "web"), 1);
    KT_EQ_INT(kctl_indexer_update(ix, v2), KCTL_OK);
    KT_EQ_U64(kctl_indexer_len(ix), 1);
    KT_EQ_U64(ti_count(ix, "app", "web"), 0); /* the old value is gone */
    KT_EQ_U64(ti_count(ix, "app", "api"), 1);
    KT_EQ_INT(kctl_indexer_list_index_values(ix, "app", &vals), KCTL_OK);
    KT_EQ_U64(vals.count, 1);
    KT_EQ_STR(vals.count ? vals.items[0] : NULL, "api");
    kctl_str_list_free(&vals);
    g = kctl_indexer_get(ix, "prod/a");
    KT_CHECK(g == v2);
    kctl_obj_unref(g);
    KT_EQ_INT(kctl_indexer_update(ix, v3), KCTL_OK); /* no label: in no app bucket */
    KT_EQ_U64(ti_count(ix, "app", "api"), 0);
    KT_EQ_INT(kctl_indexer_list_index_values(ix, "app", &vals), KCTL_OK);
    KT_EQ_U64(vals.count, 0);
    kctl_str_list_free(&vals);
    KT_EQ_U64(ti_count(ix, "namespace", "prod"), 1);
    kctl_indexer_destroy(ix);
    kctl_obj_unref(v1);
    kctl_obj_unref(v2);
    kctl_obj_unref(v3);
}

static void ti_index_added_after_data(void) {
    kctl_indexer *ix = NULL;
    kctl_obj *o[4];
    kctl_str_list keys;
    int i;
    o[0] = ti_obj("a", "x", "web", "1");
    o[1] = ti_obj("b", "y", "web", "2");
    o[2] = ti_obj("b", "z", "db", "3");
    o[3] = ti_obj("c", "w", NULL, "4");
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    for (i = 0; i < 4; i++) KT_EQ_INT(kctl_indexer_add(ix, o[i]), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(ix, "app", ti_by_app, NULL), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(ix, "multi", ti_multi, NULL), KCTL_OK);
    KT_EQ_U64(ti_count(ix, "app", "web"), 2);
    KT_EQ_U64(ti_count(ix, "app", "db"), 1);
    KT_EQ_U64(ti_count(ix, "multi", "all"), 4); /* emitted twice per object, indexed once */
    KT_EQ_U64(ti_count(ix, "multi", "z"), 1);
    KT_EQ_INT(kctl_indexer_index_keys(ix, "app", "web", &keys), KCTL_OK);
    KT_EQ_U64(keys.count, 2);
    KT_CHECK(ti_has_str(&keys, "a/x") && ti_has_str(&keys, "b/y"));
    kctl_str_list_free(&keys);
    KT_EQ_INT(kctl_indexer_list_keys(ix, &keys), KCTL_OK);
    KT_EQ_U64(keys.count, 4);
    KT_CHECK(ti_has_str(&keys, "c/w"));
    kctl_str_list_free(&keys);
    /* an index function that fails leaves nothing behind */
    KT_EQ_INT(kctl_indexer_add_index(ix, "strict", ti_fail_on_bad, NULL), KCTL_OK);
    {
        kctl_obj *bad = ti_obj("a", "bad", "web", "9");
        KT_EQ_INT(kctl_indexer_add(ix, bad), KCTL_ERR_INVALID_ARG);
        KT_CHECK(kctl_indexer_get(ix, "a/bad") == NULL);
        KT_EQ_U64(ti_count(ix, "app", "web"), 2);
        KT_EQ_U64(ti_count(ix, "multi", "bad"), 0);
        kctl_obj_unref(bad);
    }
    kctl_indexer_destroy(ix);
    for (i = 0; i < 4; i++) kctl_obj_unref(o[i]);
}

static void ti_replace(void) {
    kctl_indexer *ix = NULL;
    kctl_obj *old = ti_obj("p", "old", "web", "1"), *n1 = ti_obj("p", "n1", "web", "5"), *n2 = ti_obj("q", "n2", "db", "6"),
             *n1b = ti_obj("p", "n1", "api", "7");
    kctl_obj *list[3];
    char rv[16];
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(ix, "app", ti_by_app, NULL), KCTL_OK);
    KT_EQ_INT(kctl_indexer_resource_version(ix, rv, sizeof rv), KCTL_OK);
    KT_EQ_STR(rv, "");
    KT_EQ_INT(kctl_indexer_add(ix, old), KCTL_OK);
    list[0] = n1;
    list[1] = n2;
    list[2] = n1b; /* the same key twice: the later one stays */
    KT_EQ_INT(kctl_indexer_replace(ix, list, 3, "42"), KCTL_OK);
    KT_EQ_U64(kctl_indexer_len(ix), 2);
    KT_CHECK(kctl_indexer_get(ix, "p/old") == NULL);
    KT_EQ_U64(ti_count(ix, "app", "web"), 0);
    KT_EQ_U64(ti_count(ix, "app", "api"), 1);
    KT_EQ_U64(ti_count(ix, "namespace", "q"), 1);
    KT_EQ_INT(kctl_indexer_resource_version(ix, rv, sizeof rv), KCTL_OK);
    KT_EQ_STR(rv, "42");
    KT_EQ_INT(kctl_indexer_resource_version(ix, rv, 2), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kctl_indexer_replace(ix, NULL, 0, "43"), KCTL_OK);
    KT_EQ_U64(kctl_indexer_len(ix), 0);
    KT_EQ_U64(ti_count(ix, "app", "api"), 0);
    list[0] = NULL;
    KT_EQ_INT(kctl_indexer_replace(ix, list, 1, NULL), KCTL_ERR_INVALID_ARG);
    kctl_indexer_destroy(ix);
    kctl_obj_unref(old);
    kctl_obj_unref(n1);
    kctl_obj_unref(n2);
    kctl_obj_unref(n1b);
}

/* The cache's references are its own: objects live while cached, go when removed. */
static void ti_references(void) {
    kt_alloc oa, ia;
    kctl_obj_opts op;
    kctl_indexer_desc d;
    kctl_indexer *ix = NULL;
    kctl_obj *o = NULL;
    const char *doc = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"}}";
    kt_alloc_init(&oa);
    kt_alloc_init(&ia);
    memset(&op, 0, sizeof op);
    op.allocator = kt_allocator(&oa);
    memset(&d, 0, sizeof d);
    d.allocator = kt_allocator(&ia);
    KT_EQ_INT(kctl_indexer_create(&d, &ix), KCTL_OK);
    KT_EQ_INT(kctl_obj_parse(doc, strlen(doc), &op, &o), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, o), KCTL_OK);
    kctl_obj_unref(o); /* the cache keeps it */
    KT_EQ_INT(oa.live, 1);
    KT_EQ_INT(kctl_indexer_delete(ix, "n/a"), KCTL_OK);
    KT_EQ_INT(oa.live, 0);
    kctl_indexer_destroy(ix);
    KT_EQ_INT(ia.live, 0);
}

/* Out of memory at every allocation of a scripted run: each call returns
   OK or NOMEM, the cache stays consistent, and nothing leaks. */
static void ti_nomem_sweep(void) {
    long fail;
    for (fail = 0; fail < 60; fail++) {
        kt_alloc a;
        kctl_indexer_desc d;
        kctl_indexer *ix = NULL;
        kctl_obj *o[3];
        kctl_obj_list l;
        int i, rc, bad = 0;
        kt_alloc_init(&a);
        memset(&d, 0, sizeof d);
        d.allocator = kt_allocator(&a);
        o[0] = ti_obj("p", "a", "web", "1");
        o[1] = ti_obj("p", "b", "web", "2");
        o[2] = ti_obj("p", "a", "db", "3");
        a.fail_after = fail;
        rc = kctl_indexer_create(&d, &ix);
        if (rc == KCTL_OK) {
            if ((rc = kctl_indexer_add_index(ix, "app", ti_by_app, NULL)) != KCTL_OK && rc != KCTL_ERR_NOMEM) bad++;
            for (i = 0; i < 3; i++)
                if ((rc = kctl_indexer_add(ix, o[i])) != KCTL_OK && rc != KCTL_ERR_NOMEM) bad++;
            if ((rc = kctl_indexer_replace(ix, o, 2, "9")) != KCTL_OK && rc != KCTL_ERR_NOMEM) bad++;
            if ((rc = kctl_indexer_by_index(ix, "namespace", "p", &l)) == KCTL_OK) {
                if (l.count > 2) bad++;
                kctl_obj_list_free(&l);
            }
            /* whatever state it is in, it agrees with itself */
            if (kctl_indexer_list(ix, &l) == KCTL_OK) {
                size_t n = l.count;
                kctl_obj_list_free(&l);
                a.fail_after = -1;
                if (ti_count(ix, "namespace", "p") != n) bad++;
            }
            kctl_indexer_destroy(ix);
        } else if (rc != KCTL_ERR_NOMEM) {
            bad++;
        }
        KT_EQ_INT(bad, 0);
        KT_EQ_INT(a.live, 0);
        for (i = 0; i < 3; i++) kctl_obj_unref(o[i]);
    }
}

#ifndef KCTL_NO_THREADS
typedef struct ti_shared {
    kctl_indexer *ix;
    kctl_obj *objs[16];
    int stop; /* atomic */

} ti_shared;

static void *ti_reader(void *arg) {
    ti_shared *s = (ti_shared *)arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        kctl_obj_list l;
        kctl_obj *g = kctl_indexer_get(s->ix, "p/o3");
        kctl_obj_unref(g);
        if (kctl_indexer_by_index(s->ix, "app", "even", &l) == KCTL_OK) {
            size_t i;
            for (i = 0; i < l.count; i++) /* every object handed out is whole */
                if (strcmp(kctl_obj_namespace(l.items[i]), "p") != 0) abort();
            kctl_obj_list_free(&l);
        }

    }
    return NULL;
}
#endif

static void ti_threads(void) {
#ifndef KCTL_NO_THREADS
    ti_shared s;
    pthread_t t[2];
    char name[16];
    int i, round;
    memset(&s, 0, sizeof s);
    KT_EQ_INT(kctl_indexer_create(NULL, &s.ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(s.ix, "app", ti_by_app, NULL), KCTL_OK);
    for (i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "o%d", i);
        s.objs[i] = ti_obj("p", name, i % 2 ? "odd" : "even", "1");
    }
    for (i = 0; i < 2; i++) pthread_create(&t[i], NULL, ti_reader, &s);
    for (round = 0; round < 300; round++) {
        for (i = 0; i < 16; i++) kctl_indexer_add(s.ix, s.objs[i]);
        kctl_indexer_delete(s.ix, "p/o3");
        kctl_indexer_replace(s.ix, s.objs, (size_t)(round % 16), "r");
    }
    __atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
    KT_EQ_U64(ti_count(s.ix, "app", "even") + ti_count(s.ix, "app", "odd"), kctl_indexer_len(s.ix));
    kctl_indexer_destroy(s.ix);
    for (i = 0; i < 16; i++) kctl_obj_unref(s.objs[i]);
#else
    KT_SKIP();
#endif
}

/* An update that runs out of memory at any point leaves the old version
   and its memberships exactly; one that succeeds leaves the new. */
static void ti_update_nomem_all_or_nothing(void) {
    long fail;
    for (fail = 0; fail < 40; fail++) {
        kt_alloc a;
        kctl_indexer_desc d;
        kctl_indexer *ix = NULL;
        kctl_obj *v1 = ti_obj("p", "a", "web", "1"), *v2 = ti_obj("p", "a", "db", "2"), *b = ti_obj("p", "b", "web", "1");
        kctl_obj *g;
        int rc;
        kt_alloc_init(&a);
        memset(&d, 0, sizeof d);
        d.allocator = kt_allocator(&a);
        KT_EQ_INT(kctl_indexer_create(&d, &ix), KCTL_OK);
        KT_EQ_INT(kctl_indexer_add_index(ix, "app", ti_by_app, NULL), KCTL_OK);
        KT_EQ_INT(kctl_indexer_add_index(ix, "multi", ti_multi, NULL), KCTL_OK);
        KT_EQ_INT(kctl_indexer_add(ix, v1), KCTL_OK);
        KT_EQ_INT(kctl_indexer_add(ix, b), KCTL_OK);
        a.fail_after = fail;
        rc = kctl_indexer_update(ix, v2);
        a.fail_after = -1;
        KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOMEM);
        g = kctl_indexer_get(ix, "p/a");
        KT_CHECK(g == (rc == KCTL_OK ? v2 : v1));
        kctl_obj_unref(g);
        KT_EQ_U64(ti_count(ix, "app", "web"), rc == KCTL_OK ? 1 : 2);
        KT_EQ_U64(ti_count(ix, "app", "db"), rc == KCTL_OK ? 1 : 0);
        KT_EQ_U64(ti_count(ix, "multi", "all"), 2);
        KT_EQ_U64(ti_count(ix, "multi", "a"), 1);
        KT_EQ_U64(ti_count(ix, "namespace", "p"), 2);
        KT_EQ_U64(kctl_indexer_len(ix), 2);
        kctl_indexer_destroy(ix);
        KT_EQ_INT(a.live, 0);
        kctl_obj_unref(v1);
        kctl_obj_unref(v2);
        kctl_obj_unref(b);
        if (rc == KCTL_OK && fail > 20) break;
    }
}

/* Random adds, updates (index values kept, changed, dropped) and deletes
   against a model: after every step each index holds exactly the values
   the model's objects give, each value exactly the keys that give it. */
typedef struct ti_collect {
    const char *v[8];
    int n;
} ti_collect;
static void ti_collect_emit(const char *value, void *ctx) {
    ti_collect *c = (ti_collect *)ctx;
    if (c->n < 8) c->v[c->n++] = value;
}
static int ti_gives(kctl_index_fn fn, const kctl_obj *o, const char *value) {
    ti_collect c;
    int i;
    c.n = 0;
    fn(o, ti_collect_emit, &c, NULL);
    for (i = 0; i < c.n; i++)
        if (strcmp(c.v[i], value) == 0) return 1;
    return 0;
}
static int ti_ns_fn(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    (void)user_data;
    emit(kctl_obj_namespace(obj), ctx);
    return KCTL_OK;
}
static void ti_model_random(void) {
    static const char *apps[] = { "a", "b", "c", NULL };
    static const char *values[] = { "a", "b", "c", "all", "p0", "p1", "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "zz" };
    static const char *names[] = { "index", "namespace", "multi" };
    kctl_index_fn fns[3];
    kctl_indexer *ix = NULL;
    kctl_obj *model[8];
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int step, bad = 0;
    fns[0] = ti_by_app;
    fns[1] = ti_ns_fn;
    fns[2] = ti_multi;
    memset(model, 0, sizeof model);
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(ix, "index", ti_by_app, NULL), KCTL_OK);
    for (step = 0; step < 3000 && !bad; step++) {
        int k, f, vi;
        char name[8], rv[16];
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        k = (int)(seed % 8);
        snprintf(name, sizeof name, "k%d", k);
        snprintf(rv, sizeof rv, "%d", step);
        if (step == 1500) KT_EQ_INT(kctl_indexer_add_index(ix, "multi", ti_multi, NULL), KCTL_OK); /* over data */
        if ((seed >> 8) % 4 == 0) { /* delete */
            char key[16];
            int rc;
            snprintf(key, sizeof key, "%s/%s", k < 4 ? "p0" : "p1", name);
            rc = kctl_indexer_delete(ix, key);
            if (rc != (model[k] ? KCTL_OK : KCTL_ERR_NOT_FOUND)) bad++;
            kctl_obj_unref(model[k]);
            model[k] = NULL;
        } else {
            kctl_obj *o = ti_obj(k < 4 ? "p0" : "p1", name, apps[(seed >> 16) % 4], rv);
            if (kctl_indexer_update(ix, o) != KCTL_OK) bad++;
            kctl_obj_unref(model[k]);
            model[k] = o;
        }
        for (f = 0; f < (step >= 1500 ? 3 : 2); f++)
            for (vi = 0; vi < (int)(sizeof values / sizeof *values); vi++) {
                kctl_str_list keys;
                size_t want = 0;
                int m;
                if (kctl_indexer_index_keys(ix, names[f], values[vi], &keys) != KCTL_OK) { bad++; continue; }
                for (m = 0; m < 8; m++)
                    if (model[m] && ti_gives(fns[f], model[m], values[vi])) {
                        want++;
                        if (!ti_has_str(&keys, kctl_obj_key(model[m]))) bad++;
                    }
                if (keys.count != want) bad++;
                kctl_str_list_free(&keys);
            }
    }
    KT_EQ_INT(bad, 0);
    {
        int m;
        for (m = 0; m < 8; m++) kctl_obj_unref(model[m]);
    }
    kctl_indexer_destroy(ix);
}

/* More values than the cache remembers between its passes (16), repeats
   included: an update still takes the old version out everywhere. */
static int ti_many(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    char v[16];
    int i;
    (void)user_data;
    for (i = 0; i < 17; i++) emit("x", ctx);
    for (i = 0; i < 20; i++) {
        snprintf(v, sizeof v, "%s-%d", kctl_obj_resource_version(obj), i % 10 + (i & 1) * 100);
        emit(v, ctx);
    }
    return KCTL_OK;
}
static void ti_many_values(void) {
    kctl_indexer *ix = NULL;
    kctl_obj *v1 = ti_obj("p", "a", NULL, "1"), *v2 = ti_obj("p", "a", NULL, "2");
    kctl_str_list vals;
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add_index(ix, "x", ti_many, NULL), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, v1), KCTL_OK);
    KT_EQ_U64(ti_count(ix, "x", "x"), 1);
    KT_EQ_U64(ti_count(ix, "x", "1-2"), 1);
    KT_EQ_INT(kctl_indexer_update(ix, v2), KCTL_OK);
    kctl_obj_unref(v1); /* the cache must hold no pointer to it now */
    KT_EQ_U64(ti_count(ix, "x", "x"), 1);
    KT_EQ_U64(ti_count(ix, "x", "1-2"), 0);
    KT_EQ_U64(ti_count(ix, "x", "2-103"), 1);
    KT_EQ_INT(kctl_indexer_list_index_values(ix, "x", &vals), KCTL_OK);
    KT_EQ_U64(vals.count, 1 + 10);
    kctl_str_list_free(&vals);
    KT_EQ_INT(kctl_indexer_delete(ix, "p/a"), KCTL_OK);
    KT_EQ_U64(ti_count(ix, "x", "x"), 0);
    kctl_indexer_destroy(ix);
    kctl_obj_unref(v2);
}

/* kctl_indexer_read's callback: remembers the object it was lent and,
   when asked, keeps it (the way to hold it past the callback). */
typedef struct ti_lent {
    const kctl_obj *seen;
    kctl_obj *kept;
    int calls, keep, rc;
} ti_lent;
static int ti_lend(const kctl_obj *obj, void *user_data) {
    ti_lent *l = (ti_lent *)user_data;
    l->seen = obj;
    l->calls++;
    if (l->keep) l->kept = kctl_obj_ref((kctl_obj *)(uintptr_t)obj);
    return l->rc;
}

/* The borrowed read: fn gets the stored object itself, its result comes
   back, an absent key is NOT_FOUND without a call, and the read leaves no
   reference behind (the object's own allocator sees it freed as soon as
   the cache and its owner let go); a reference taken inside fn keeps the
   object after the cache dropped it. */
static void ti_read_borrowed(void) {
    kctl_indexer *ix = NULL;
    kt_alloc a;
    kctl_obj_opts opts;
    kctl_obj *o = NULL;
    ti_lent l;
    const char *doc = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"p\",\"resourceVersion\":\"1\"}}";
    kt_alloc_init(&a);
    memset(&opts, 0, sizeof opts);
    opts.allocator = kt_allocator(&a);
    KT_EQ_INT(kctl_obj_parse(doc, strlen(doc), &opts, &o), KCTL_OK);
    KT_EQ_INT(kctl_indexer_create(NULL, &ix), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, o), KCTL_OK);
    memset(&l, 0, sizeof l);
    l.rc = 42;
    KT_EQ_INT(kctl_indexer_read(ix, "p/a", ti_lend, &l), 42);
    KT_CHECK(l.seen == o);
    KT_EQ_INT(l.calls, 1);
    KT_EQ_INT(kctl_indexer_read(ix, "p/zz", ti_lend, &l), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(l.calls, 1);
    KT_EQ_INT(kctl_indexer_read(NULL, "p/a", ti_lend, &l), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_indexer_read(ix, NULL, ti_lend, &l), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_indexer_read(ix, "p/a", NULL, &l), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(l.calls, 1);
    /* no reference left: the cache's and ours are the only ones */
    KT_EQ_INT(kctl_indexer_delete(ix, "p/a"), KCTL_OK);
    kctl_obj_unref(o);
    KT_EQ_INT(a.live, 0);
    /* a reference taken inside fn outlives the cache's */
    KT_EQ_INT(kctl_obj_parse(doc, strlen(doc), &opts, &o), KCTL_OK);
    KT_EQ_INT(kctl_indexer_add(ix, o), KCTL_OK);
    kctl_obj_unref(o); /* the cache holds the only reference */
    memset(&l, 0, sizeof l);
    l.keep = 1;
    KT_EQ_INT(kctl_indexer_read(ix, "p/a", ti_lend, &l), KCTL_OK);
    KT_EQ_INT(kctl_indexer_delete(ix, "p/a"), KCTL_OK);
    KT_CHECK(l.kept == o && a.live == 1);
    KT_EQ_STR(kctl_obj_name(l.kept), "a");
    kctl_obj_unref(l.kept);
    KT_EQ_INT(a.live, 0);
    kctl_indexer_destroy(ix);
}

#ifndef KCTL_NO_THREADS
typedef struct ti_lease {
    kctl_indexer *ix;
    int stop; /* atomic */
    unsigned long reads, bad; /* atomic */
} ti_lease;

/* Reads every byte of the lent object's document: an object freed while
   lent is a use after free (ASan) or a race with its free (TSan). */
static int ti_lease_fn(const kctl_obj *obj, void *user_data) {
    size_t len, i;
    const char *doc = kctl_obj_json(obj, &len);
    unsigned sum = 0;
    (void)user_data;
    for (i = 0; i < len; i++) sum += (unsigned char)doc[i];
    return sum && strcmp(kctl_obj_name(obj), "o") == 0 ? KCTL_OK : KCTL_ERR_PROTO;
}

static void *ti_lease_reader(void *arg) {
    ti_lease *s = (ti_lease *)arg;
    while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
        int rc = kctl_indexer_read(s->ix, "p/o", ti_lease_fn, NULL);
        if (rc != KCTL_OK && rc != KCTL_ERR_NOT_FOUND) __atomic_add_fetch(&s->bad, 1ul, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->reads, 1ul, __ATOMIC_RELAXED);
    }
    return NULL;
}
#endif

/* The lifetime rule under threads: readers borrow the object at one key
   while a writer replaces it with fresh objects (each version freed as
   soon as the cache drops it: the writer keeps no reference), deletes it
   and relists. Under ASan and TSan a lent object freed before its
   callback returned is reported. */
static void ti_read_lifetime_threads(void) {
#ifndef KCTL_NO_THREADS
    ti_lease s;
    pthread_t t[2];
    char rv[16];
    int i, round;
    memset(&s, 0, sizeof s);
    KT_EQ_INT(kctl_indexer_create(NULL, &s.ix), KCTL_OK);
    for (i = 0; i < 2; i++) pthread_create(&t[i], NULL, ti_lease_reader, &s);
    while (__atomic_load_n(&s.reads, __ATOMIC_RELAXED) < 2) sched_yield(); /* the readers run before the writes start */
    for (round = 0; round < 2000; round++) {
        kctl_obj *o;
        snprintf(rv, sizeof rv, "%d", round + 1);
        o = ti_obj("p", "o", NULL, rv);
        if (round % 7 == 3) KT_EQ_INT(kctl_indexer_replace(s.ix, &o, 1, rv), KCTL_OK);
        else KT_EQ_INT(kctl_indexer_add(s.ix, o), KCTL_OK);
        kctl_obj_unref(o);
        if (round % 5 == 4) KT_EQ_INT(kctl_indexer_delete(s.ix, "p/o"), KCTL_OK);
    }
    __atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < 2; i++) pthread_join(t[i], NULL);
    KT_EQ_U64(s.bad, 0);
    KT_CHECK(s.reads > 0);
    kctl_indexer_destroy(s.ix);
#else
    KT_SKIP();
#endif
}

void kt_suite_indexer(void) {
    KT_RUN(ti_add_get_delete);
    KT_RUN(ti_namespace_index);
    KT_RUN(ti_update_keeps_indexes_exact);
    KT_RUN(ti_index_added_after_data);
    KT_RUN(ti_replace);
    KT_RUN(ti_references);
    KT_RUN(ti_nomem_sweep);
    KT_RUN(ti_threads);
    KT_RUN(ti_update_nomem_all_or_nothing);
    KT_RUN(ti_model_random);
    KT_RUN(ti_many_values);
    KT_RUN(ti_key_map_bytes);
    KT_RUN(ti_key_map_churn);
    KT_RUN(ti_key_eq);
    KT_RUN(ti_short_copy);
    KT_RUN(ti_read_borrowed);
    KT_RUN(ti_read_lifetime_threads);
}
