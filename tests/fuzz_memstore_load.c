/* fuzz_memstore_load.c - libFuzzer target for the memstore's file loader.
   The input is a store file without its last line: the target appends the
   trailer "end <FNV-1a 64 of the input>\n" (so inputs get past the
   checksum) and loads it into an empty store, in memory. Whatever loads
   must save and load again the same: serialized, and loaded into a second
   store, it holds the same keys with byte-identical documents, the same
   revision and uid sequence. Every loaded object passes kctl_apisrv_check
   (as its resource) and can be written again: an update that sends its
   own document back is accepted. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdlib.h>
#include <string.h>

/* A store with no path and a history of one event. */
static kctl_memstore *fl_store(void) {
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    memset(&d, 0, sizeof d);
    d.history = 1;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) abort();
    return ms;
}

/* The resource of the store's rid record r ("group/resource" after it). */
static void fl_resource(const kctl__msrid *r, char *group, char *resource, kctl_resource *res) {
    const char *rid = (const char *)(r + 1), *slash = strrchr(rid, '/');
    size_t n = strlen(rid);
    if (!slash || n >= 256) abort(); /* the loader took a rid without '/', or too long */
    memcpy(group, rid, (size_t)(slash - rid));
    group[slash - rid] = '\0';
    memcpy(resource, slash + 1, (size_t)(rid + n - slash - 1));
    resource[rid + n - slash - 1] = '\0';
    memset(res, 0, sizeof *res);
    res->group = group;
    res->version = "v1";
    res->resource = resource;
}

/* b holds exactly a's objects, revision and sequence. */
static void fl_same(kctl_memstore *a, kctl_memstore *b) {
    kctl__msrid *r = NULL;
    kctl_obj *e, *f;
    size_t i;
    if (a->rev != b->rev || a->uid_seq != b->uid_seq || a->nobjs != b->nobjs) abort();
    while ((e = kctl__ms_next(a, &r, &i)) != NULL) {
        const char *da, *db;
        size_t la, lb;
        if (!(f = kctl__ms_find(kctl__ms_rid_rec(b, (const char *)(r + 1)), e->node.key, e->node.len, e->node.hash))) abort();
        if (kctl__ms_keep(e)->obj || kctl__ms_keep(f)->obj) abort(); /* loaded: nothing kept */
        da = kctl_obj_json(e, &la);
        db = kctl_obj_json(f, &lb);
        if (la != lb || memcmp(da, db, la) != 0) abort();
    }
}

/* Every object of a passes the API-server checks and takes an update of
   its own document. */
static void fl_writable(kctl_memstore *a) {
    kctl_transport t = kctl_memstore_transport(a);
    kctl_obj **objs;
    char (*rids)[2][256];
    kctl__msrid *r = NULL;
    kctl_obj *e;
    size_t i, n = 0;
    if (!a->nobjs) return;
    objs = (kctl_obj **)malloc(a->nobjs * sizeof *objs);
    rids = (char (*)[2][256])malloc(a->nobjs * sizeof *rids);
    if (!objs || !rids) abort();
    while ((e = kctl__ms_next(a, &r, &i)) != NULL) { /* first a list: updates change the maps */
        kctl_resource res;
        fl_resource(r, rids[n][0], rids[n][1], &res);
        if (kctl_apisrv_check(&res, e, NULL, NULL) != KCTL_OK) abort();
        objs[n++] = kctl_obj_ref(e);
    }
    for (i = 0; i < n; i++) {
        kctl_resource res;
        size_t len;
        const char *doc = kctl_obj_json(objs[i], &len);
        int rc;
        memset(&res, 0, sizeof res);
        res.group = rids[i][0];
        res.version = "v1";
        res.resource = rids[i][1];
        res.ns = kctl_obj_namespace(objs[i]);
        rc = kctl_transport_update(&t, &res, doc, len, NULL, NULL);
        if (rc != KCTL_OK && rc != KCTL_ERR_NOMEM && rc != KCTL_ERR_TOO_LARGE) abort();
        kctl_obj_unref(objs[i]);
    }
    free(objs);
    free(rids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kctl_memstore *a, *b;
    char *buf, *again;
    size_t len;
    kctl_jw w;
    int rc;
    if (size > (1u << 20)) return 0;
    if (!(buf = (char *)malloc(size + 22))) return 0;
    if (size) memcpy(buf, data, size);
    len = size + (size_t)snprintf(buf + size, 22, "end %016llx\n", (unsigned long long)kctl__fnv64(buf, size));
    a = fl_store();
    rc = kctl__ms_load_buf(a, buf, len);
    if (rc == KCTL_OK) {
        if (kctl__ms_serialize(a, &w) != KCTL_OK || !(again = (char *)malloc(w.len + 1))) abort();
        memcpy(again, w.buf, w.len);
        again[w.len] = '\0';
        b = fl_store();
        if (kctl__ms_load_buf(b, again, w.len) != KCTL_OK) abort(); /* what loaded must load again */
        fl_same(a, b);
        fl_writable(a);
        kctl_memstore_destroy(b);
        free(again);
        kctl_jw_free(&w);
    } else if (rc != KCTL_ERR_PROTO || a->nobjs) {
        abort(); /* a refusal is PROTO, and leaves nothing */
    }
    kctl_memstore_destroy(a);
    free(buf);
    return 0;
}
