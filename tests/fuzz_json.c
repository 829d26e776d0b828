/* fuzz_json.c - libFuzzer target for the JSON reader, lookups, getters,
   equality, writer and merge patch.

   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c99 -D_POSIX_C_SOURCE=200809L \
       tests/fuzz_json.c -o /tmp/fj && /tmp/fj -max_total_time=120 /tmp/corpus-copy

   Beyond "no crash": the three ways of parsing agree (counting, roomy and
   exactly sized token storage, one token short is FULL with the count), the
   tokens form a well-formed tree, the depth limit is exact, the getters agree
   with each other, every member name found in a document is found again by
   kctl_json_member and kctl_json_path, a document equals itself and its copies
   (kctl_jw_value, and a rebuild through the writer's calls), numbers written
   by kctl_jw_double read back bit for bit, and merge patch gives a document
   that parses and is idempotent. The getters by path that read the text
   without tokens (kctl_json_get_*, kctl_obj_get_*, the iterators) agree
   with kctl_json_path and the token getters at the path of every value
   (member names quoted in brackets, indices) and at a list of fixed and
   malformed paths. Any broken property abort()s. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FJ_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_json: %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

/* Checks the token tree below i; returns the index after it; *depth gets
   the deepest container nesting. */
static uint32_t fj_walk(const kctl_json *j, uint32_t i, uint32_t level, uint32_t *depth) {
    const kctl_json_tok *t;
    uint32_t k, n, next;
    FJ_CHECK(i < j->ntoks);
    t = &j->toks[i];
    FJ_CHECK(t->start <= t->end && t->end <= j->len);
    FJ_CHECK(kctl_json_type_of(j, i) == (kctl_json_type)t->type);
    switch (t->type) {
    case KCTL_JSON_OBJECT:
    case KCTL_JSON_ARRAY:
        if (level + 1 > *depth) *depth = level + 1;
        FJ_CHECK(t->end - t->start >= 2);
        FJ_CHECK(j->text[t->start] == (t->type == KCTL_JSON_OBJECT ? '{' : '['));
        FJ_CHECK(j->text[t->end - 1] == (t->type == KCTL_JSON_OBJECT ? '}' : ']'));
        n = t->type == KCTL_JSON_OBJECT ? t->size * 2 : t->size;
        next = i + 1;
        for (k = 0; k < n; k++) {
            FJ_CHECK(next < j->ntoks);
            if (t->type == KCTL_JSON_OBJECT && k % 2 == 0) FJ_CHECK(j->toks[next].type == KCTL_JSON_STRING);
            if (t->type == KCTL_JSON_ARRAY) FJ_CHECK(kctl_json_element(j, i, k) == next);
            FJ_CHECK(j->toks[next].start > t->start && j->toks[next].end < t->end);
            next = fj_walk(j, next, level + 1, depth);
        }
        FJ_CHECK(t->skip == next - i);
        if (t->type == KCTL_JSON_ARRAY) FJ_CHECK(kctl_json_element(j, i, t->size) == KCTL_JSON_NONE);
        return next;
    case KCTL_JSON_STRING:
        FJ_CHECK(t->start >= 1 && t->end < j->len);
        FJ_CHECK(j->text[t->start - 1] == '"' && j->text[t->end] == '"');
        FJ_CHECK(t->size == 0 && t->skip == 1);
        return i + 1;
    case KCTL_JSON_NUMBER:
    case KCTL_JSON_TRUE:
    case KCTL_JSON_FALSE:
    case KCTL_JSON_NULL:
        FJ_CHECK(t->size == 0 && t->skip == 1 && t->end > t->start);
        return i + 1;
    default:
        FJ_CHECK(!"token type");
        return j->ntoks;
    }
}

/* Parses text into exactly sized tokens (malloc'd into *toks); must succeed. */
static void fj_parse_ok(const char *text, size_t len, kctl_json_tok **toks, kctl_json *out) {
    kctl_json c;
    FJ_CHECK(kctl_json_parse(text, len, NULL, 0, NULL, &c) == KCTL_OK);
    *toks = (kctl_json_tok *)malloc((c.ntoks ? c.ntoks : 1) * sizeof **toks);
    FJ_CHECK(*toks != NULL);
    FJ_CHECK(kctl_json_parse(text, len, *toks, c.ntoks, NULL, out) == KCTL_OK);
    FJ_CHECK(out->ntoks == c.ntoks);
}

/* Rebuilds value v through the writer's calls (not kctl_jw_value). Returns
   false when it cannot (a member name holding a NUL: kctl_jw_key takes C strings). */
static bool fj_rebuild(kctl_jw *w, const kctl_json *j, uint32_t v, char *scratch, size_t cap) {
    const kctl_json_tok *t = &j->toks[v];
    uint32_t i, m;
    size_t n;
    switch (t->type) {
    case KCTL_JSON_OBJECT:
        kctl_jw_object_begin(w);
        for (i = v + 1, m = 0; m < t->size; m++, i += 1 + j->toks[i + 1].skip) {
            FJ_CHECK(kctl_json_string(j, i, scratch, cap, &n) == KCTL_OK);
            if (strlen(scratch) != n) return false;
            kctl_jw_key(w, scratch);
            if (!fj_rebuild(w, j, i + 1, scratch, cap)) return false;
        }
        kctl_jw_object_end(w);
        return true;
    case KCTL_JSON_ARRAY:
        kctl_jw_array_begin(w);
        for (i = v + 1, m = 0; m < t->size; m++, i += j->toks[i].skip)
            if (!fj_rebuild(w, j, i, scratch, cap)) return false;
        kctl_jw_array_end(w);
        return true;
    case KCTL_JSON_STRING:
        FJ_CHECK(kctl_json_string(j, v, scratch, cap, &n) == KCTL_OK);
        kctl_jw_string_n(w, scratch, n);
        return true;
    case KCTL_JSON_NUMBER: {
        int64_t x;
        uint64_t u;
        if (kctl_json_int64(j, v, &x) == KCTL_OK) kctl_jw_int64(w, x);
        else if (kctl_json_uint64(j, v, &u) == KCTL_OK) kctl_jw_uint64(w, u);
        else kctl_jw_raw(w, j->text + t->start, t->end - t->start);
        return true;
    }
    case KCTL_JSON_TRUE: kctl_jw_bool(w, true); return true;
    case KCTL_JSON_FALSE: kctl_jw_bool(w, false); return true;
    default: kctl_jw_null(w); return true;
    }
}

/* A writer's document must parse and equal value v of j. */
static void fj_expect_equal(kctl_jw *w, const kctl_json *j, uint32_t v) {
    const char *t = NULL;
    size_t n = 0;
    kctl_json_tok *toks;
    kctl_json r;
    FJ_CHECK(kctl_jw_finish(w, &t, &n) == KCTL_OK);
    fj_parse_ok(t, n, &toks, &r);
    FJ_CHECK(kctl_json_equal(j, v, &r, 0));
    FJ_CHECK(kctl_json_equal(&r, 0, j, v));
    free(toks);
}

static void fj_getters(const kctl_json *j, uint32_t i) {
    const kctl_json_tok *t = &j->toks[i];
    int64_t x;
    uint64_t u;
    double d;
    bool b;
    const char *raw;
    size_t rn;
    int ri = kctl_json_int64(j, i, &x), ru = kctl_json_uint64(j, i, &u), rd = kctl_json_double(j, i, &d);
    int rb = kctl_json_bool(j, i, &b);
    FJ_CHECK(ri == KCTL_OK || ri == KCTL_ERR_INVALID_ARG || ri == KCTL_ERR_TOO_LARGE);
    FJ_CHECK(ru == KCTL_OK || ru == KCTL_ERR_INVALID_ARG || ru == KCTL_ERR_TOO_LARGE);
    FJ_CHECK((rb == KCTL_OK) == (t->type == KCTL_JSON_TRUE || t->type == KCTL_JSON_FALSE));
    if (rb == KCTL_OK) FJ_CHECK(b == (t->type == KCTL_JSON_TRUE));
    FJ_CHECK((rd == KCTL_OK) == (t->type == KCTL_JSON_NUMBER));
    if (ri == KCTL_OK && x >= 0) FJ_CHECK(ru == KCTL_OK && u == (uint64_t)x);
    if (ru == KCTL_OK && u <= (uint64_t)INT64_MAX) FJ_CHECK(ri == KCTL_OK && (uint64_t)x == u);
    if (ri != KCTL_ERR_INVALID_ARG || ru != KCTL_ERR_INVALID_ARG)
        FJ_CHECK(t->type == KCTL_JSON_NUMBER || t->type == KCTL_JSON_STRING);
    if (t->type == KCTL_JSON_NUMBER && ri == KCTL_OK) FJ_CHECK(rd == KCTL_OK);
    if (rd == KCTL_OK && d == d && d - d == 0) { /* finite: the writer's shortest form reads back bit for bit */
        char wb[64];
        kctl_jw w;
        const char *wt;
        size_t wn;
        kctl_json_tok toks[2];
        kctl_json r;
        double back;
        kctl_jw_init(&w, wb, sizeof wb);
        kctl_jw_double(&w, d);
        FJ_CHECK(kctl_jw_finish(&w, &wt, &wn) == KCTL_OK);
        FJ_CHECK(kctl_json_parse(wt, wn, toks, 2, NULL, &r) == KCTL_OK && r.ntoks == 1);
        FJ_CHECK(toks[0].type == KCTL_JSON_NUMBER);
        FJ_CHECK(kctl_json_double(&r, 0, &back) == KCTL_OK);
        FJ_CHECK(memcmp(&back, &d, sizeof d) == 0 || (back == 0 && d == 0));
    }
    FJ_CHECK(kctl_json_raw(j, i, &raw, &rn) == KCTL_OK);
    FJ_CHECK(raw >= j->text && raw + rn <= j->text + j->len && rn > 0);
}

static void fj_strings(const kctl_json *j, uint32_t i) {
    const kctl_json_tok *t = &j->toks[i];
    size_t cap = t->end - t->start + 1, n = 0, n2 = 0;
    char small[4];
    char *big = (char *)malloc(cap);
    int rc, rc2;
    FJ_CHECK(big != NULL);
    rc = kctl_json_string(j, i, big, cap, &n);
    rc2 = kctl_json_string(j, i, small, sizeof small, &n2);
    if (t->type != KCTL_JSON_STRING) {
        FJ_CHECK(rc == KCTL_ERR_INVALID_ARG && rc2 == KCTL_ERR_INVALID_ARG);
        FJ_CHECK(!kctl_json_string_eq(j, i, ""));
        free(big);
        return;
    }
    FJ_CHECK(rc == KCTL_OK);          /* unescaping never lengthens a string */
    FJ_CHECK(n <= t->end - t->start);
    FJ_CHECK(big[n] == '\0');
    FJ_CHECK(n2 == n);
    if (n < sizeof small) FJ_CHECK(rc2 == KCTL_OK && memcmp(small, big, n + 1) == 0);
    else FJ_CHECK(rc2 == KCTL_ERR_TOO_LARGE);
    if (strlen(big) == n) {
        FJ_CHECK(kctl_json_string_eq(j, i, big));
        if (n > 0) {
            big[n - 1] ^= 1;
            FJ_CHECK(!kctl_json_string_eq(j, i, big));
            big[n - 1] ^= 1;
        }
    }
    /* the writer's escaping round-trips */
    {
        kctl_jw w;
        kctl_jw_init_growable(&w, NULL);
        kctl_jw_string_n(&w, big, n);
        fj_expect_equal(&w, j, i);
        kctl_jw_free(&w);
    }
    free(big);
}

/* Every member name of object o is found again, by member and by path. */
static void fj_members(const kctl_json *j, uint32_t o) {
    static const char *const fixed[] = { "metadata", "name", "a", "", "spec", "items", "labels", "kind" };
    const kctl_json_tok *t = &j->toks[o];
    uint32_t i, m;
    size_t k;
    for (k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
        uint32_t v = kctl_json_member(j, o, fixed[k]);
        FJ_CHECK(v == KCTL_JSON_NONE || (v > o && v < o + t->skip && kctl_json_string_eq(j, v - 1, fixed[k])));
    }
    for (i = o + 1, m = 0; m < t->size; m++, i += 1 + j->toks[i + 1].skip) {
        const kctl_json_tok *nt = &j->toks[i];
        size_t cap = nt->end - nt->start + 1, n = 0, q;
        char *name = (char *)malloc(cap), *path = (char *)malloc(2 * cap + 8);
        uint32_t v;
        FJ_CHECK(name && path);
        FJ_CHECK(kctl_json_string(j, i, name, cap, &n) == KCTL_OK);
        if (strlen(name) == n) {
            v = kctl_json_member(j, o, name);
            FJ_CHECK(v != KCTL_JSON_NONE && v >= i + 1 && v < o + t->skip); /* the last of the name */
            FJ_CHECK(kctl_json_string_eq(j, v - 1, name));
            FJ_CHECK(kctl_json_equal(j, v - 1, j, i));
            /* name as a plain path segment */
            if (n > 0 && !strpbrk(name, ".[")) FJ_CHECK(kctl_json_path(j, o, name) == v);
            /* name quoted in brackets (the implementation caps these at 256 bytes: known, skipped) */
            if (n < 200) {
                size_t p = 0;
                path[p++] = '[';
                path[p++] = '"';
                for (q = 0; q < n; q++) {
                    if (name[q] == '"' || name[q] == '\\') path[p++] = '\\';
                    path[p++] = name[q];
                }
                path[p++] = '"';
                path[p++] = ']';
                path[p] = 0;
                FJ_CHECK(kctl_json_path(j, o, path) == v);
            }
        }
        free(name);
        free(path);
    }
}

static void fj_paths(const kctl_json *j) {
    static const char *const paths[] = {
        "", "a", "a.b", "spec.replicas", "items[0]", "items[1].metadata.name", "[0]", "[1][0]", "a[\"b.c\"]",
        "metadata.labels[\"app.kubernetes.io/name\"]", "a..b", "a[", "a[x]", "[-1]", "a.", ".a", "[\"", "[\"\\",
        "[99999999999]", "[4294967295]", "[4294967296]", "a[0][0][0]", "kvs[0].lease", "header.revision",
    };
    size_t k;
    for (k = 0; k < sizeof paths / sizeof paths[0]; k++) {
        uint32_t v = kctl_json_path(j, 0, paths[k]);
        FJ_CHECK(v == KCTL_JSON_NONE || v < j->ntoks);
    }
    FJ_CHECK(kctl_json_path(j, 0, "") == 0);
    FJ_CHECK(kctl_json_path(j, KCTL_JSON_NONE, "") == KCTL_JSON_NONE);
    FJ_CHECK(kctl_json_member(j, j->ntoks, "a") == KCTL_JSON_NONE);
    FJ_CHECK(kctl_json_type_of(j, j->ntoks) == KCTL_JSON_INVALID);
}

/* merge_patch(doc at vd, patch) into a growable writer; the result parses
   (tokens malloc'd into *toks). */
static void fj_merge(const kctl_json *doc, uint32_t vd, const kctl_json *patch, char **text, kctl_json_tok **toks,
                     kctl_json *out) {
    kctl_jw w;
    const char *t;
    size_t n;
    kctl_jw_init_growable(&w, NULL);
    FJ_CHECK(kctl_json_merge_patch(doc, vd, patch, 0, &w) == KCTL_OK);
    FJ_CHECK(kctl_jw_finish(&w, &t, &n) == KCTL_OK);
    *text = (char *)malloc(n ? n : 1);
    FJ_CHECK(*text != NULL);
    memcpy(*text, t, n);
    kctl_jw_free(&w);
    fj_parse_ok(*text, n, toks, out);
}

/* An object from the document: every accessor agrees with itself, with a
   copy made through another allocator, and with the document. */
static void *fj_alloc(size_t n, void *ud) { (*(long *)ud)++; return malloc(n); }
static void fj_free(void *p, void *ud) { if (p) (*(long *)ud)--; free(p); }
static void fj_object(const char *text, size_t size) {
    kctl_obj *o = NULL, *o2 = NULL, *g;
    kctl_obj_opts op;
    kctl_indexer *ix = NULL;
    long live = 0;
    const char *key, *name, *ns, *k, *v, *doc;
    size_t i, n, len;
    uint64_t rv;
    int rc = kctl_obj_parse(text, size, NULL, &o);
    FJ_CHECK(rc == KCTL_OK || rc == KCTL_ERR_PROTO || rc == KCTL_ERR_TOO_LARGE);
    memset(&op, 0, sizeof op);
    op.allocator.alloc_fn = fj_alloc;
    op.allocator.free_fn = fj_free;
    op.allocator.user_data = &live;
    FJ_CHECK(kctl_obj_parse(text, size, &op, &o2) == rc);
    if (rc != KCTL_OK) return;
    key = kctl_obj_key(o);
    name = kctl_obj_name(o);
    ns = kctl_obj_namespace(o);
    n = strlen(ns);
    FJ_CHECK(*key && *name && strlen(key) == (n ? n + 1 : 0) + strlen(name));
    FJ_CHECK(strcmp(key + strlen(key) - strlen(name), name) == 0);
    FJ_CHECK(!n || (strncmp(key, ns, n) == 0 && key[n] == '/'));
    doc = kctl_obj_json(o, &len);
    FJ_CHECK(len == size && memcmp(doc, text, size) == 0 && doc[len] == '\0');
    FJ_CHECK(strcmp(key, kctl_obj_key(o2)) == 0 && strcmp(name, kctl_obj_name(o2)) == 0);
    FJ_CHECK(strcmp(kctl_obj_uid(o), kctl_obj_uid(o2)) == 0);
    FJ_CHECK(strcmp(kctl_obj_resource_version(o), kctl_obj_resource_version(o2)) == 0);
    FJ_CHECK(kctl_obj_resource_version_u64(o, &rv) == kctl_obj_resource_version_u64(o2, NULL));
    FJ_CHECK(kctl_obj_generation(o) == kctl_obj_generation(o2));
    FJ_CHECK((kctl_obj_deletion_timestamp(o) == NULL) == (kctl_obj_deletion_timestamp(o2) == NULL));
    FJ_CHECK(kctl_obj_label_count(o) == kctl_obj_label_count(o2));
    for (i = 0; kctl_obj_label_at(o, i, &k, &v); i++) FJ_CHECK(kctl_obj_label(o2, k) != NULL && v != NULL);
    FJ_CHECK(i == kctl_obj_label_count(o));
    for (i = 0; kctl_obj_annotation_at(o, i, &k, &v); i++) FJ_CHECK(kctl_obj_annotation(o2, k) != NULL && v != NULL);
    FJ_CHECK(i == kctl_obj_annotation_count(o));
    for (i = 0; i < kctl_obj_finalizer_count(o); i++) FJ_CHECK(kctl_obj_has_finalizer(o2, kctl_obj_finalizer(o, i)));
    for (i = 0; i < kctl_obj_owner_count(o); i++) FJ_CHECK(kctl_obj_owner(o, i)->kind != NULL);
    (void)kctl_obj_controller_ref(o);
    FJ_CHECK(kctl_obj_decoded(o) == NULL);
    /* a cache takes it, finds it, lets it go */
    FJ_CHECK(kctl_indexer_create(NULL, &ix) == KCTL_OK);
    FJ_CHECK(kctl_indexer_add(ix, o) == KCTL_OK);
    FJ_CHECK(kctl_indexer_update(ix, o2) == KCTL_OK);
    g = kctl_indexer_get(ix, key);
    FJ_CHECK(g == o2);
    kctl_obj_unref(g);
    FJ_CHECK(kctl_indexer_delete(ix, key) == KCTL_OK);
    kctl_indexer_destroy(ix);
    kctl_obj_unref(o);
    kctl_obj_unref(o2);
    FJ_CHECK(live == 0);
}

/* ---- getters by path, without tokens: they agree with the token getters */

/* At path: kctl_json_get_* on the text (and kctl_obj_get_* on o, when
   there is an object) give what kctl_json_path and the token getters give. */
static void fj_agree(const kctl_json *j, const kctl_obj *o, const char *path) {
    uint32_t t = kctl_json_path(j, 0, path);
    kctl_json_value v, ov;
    char b1[48], b2[48];
    size_t n1 = 0, n2 = 0, olen = 0;
    int64_t i1 = 0, i2 = 0;
    uint64_t u1 = 0, u2 = 0;
    double f1 = 0, f2 = 0;
    bool x1 = false, x2 = false;
    const char *raw = NULL, *odoc = o ? kctl_obj_json(o, &olen) : NULL;
    size_t rn = 0;
    int rc = kctl_json_get(j->text, j->len, path, &v), ra, rb;
    if (o) {
        int orc = kctl_obj_get(o, path, &ov);
        FJ_CHECK(orc == rc);
        if (rc == KCTL_OK) FJ_CHECK(ov.text - odoc == v.text - j->text && ov.len == v.len && ov.type == v.type);
    }
    if (t == KCTL_JSON_NONE) {
        FJ_CHECK(rc == KCTL_ERR_NOT_FOUND || rc == KCTL_ERR_INVALID_ARG);
        FJ_CHECK(v.text == NULL && v.len == 0 && v.type == KCTL_JSON_INVALID);
        return;
    }
    FJ_CHECK(rc == KCTL_OK);
    FJ_CHECK(kctl_json_raw(j, t, &raw, &rn) == KCTL_OK);
    FJ_CHECK(v.text == raw && v.len == rn && v.type == kctl_json_type_of(j, t));
#define FJ_SAME(tokcall, textcall, objcall, eq) do { \
        ra = tokcall; rb = textcall; FJ_CHECK(ra == rb); if (ra == KCTL_OK) FJ_CHECK(eq); \
        if (o) { rb = objcall; FJ_CHECK(ra == rb); if (ra == KCTL_OK) FJ_CHECK(eq); } \
    } while (0)
    FJ_SAME(kctl_json_string(j, t, b1, sizeof b1, &n1), kctl_json_get_string(j->text, j->len, path, b2, sizeof b2, &n2),
            kctl_obj_get_string(o, path, b2, sizeof b2, &n2), n1 == n2 && memcmp(b1, b2, n1 + 1) == 0);
    if (ra == KCTL_ERR_TOO_LARGE) FJ_CHECK(n1 == n2);
    FJ_SAME(kctl_json_int64(j, t, &i1), kctl_json_get_int64(j->text, j->len, path, &i2), kctl_obj_get_int64(o, path, &i2), i1 == i2);
    FJ_SAME(kctl_json_uint64(j, t, &u1), kctl_json_get_uint64(j->text, j->len, path, &u2), kctl_obj_get_uint64(o, path, &u2), u1 == u2);
    FJ_SAME(kctl_json_double(j, t, &f1), kctl_json_get_double(j->text, j->len, path, &f2), kctl_obj_get_double(o, path, &f2),
            memcmp(&f1, &f2, sizeof f1) == 0);
    FJ_SAME(kctl_json_bool(j, t, &x1), kctl_json_get_bool(j->text, j->len, path, &x2), kctl_obj_get_bool(o, path, &x2), x1 == x2);
#undef FJ_SAME
    /* a container: iterating it walks its tokens */
    if (v.type == KCTL_JSON_OBJECT || v.type == KCTL_JSON_ARRAY) {
        kctl_json_iter it;
        kctl_json_value name, val;
        uint32_t i = t + 1, m;
        bool obj = v.type == KCTL_JSON_OBJECT;
        FJ_CHECK(kctl_json_iter_begin(&v, NULL, &it) == KCTL_OK);
        for (m = 0; m < j->toks[t].size; m++) {
            uint32_t vi = obj ? i + 1 : i;
            FJ_CHECK(kctl_json_iter_next(&it, &name, &val));
            if (obj) {
                FJ_CHECK(kctl_json_raw(j, i, &raw, &rn) == KCTL_OK);
                FJ_CHECK(name.text == raw && name.len == rn && name.type == KCTL_JSON_STRING);
            } else {
                FJ_CHECK(name.text == NULL && name.len == 0 && name.type == KCTL_JSON_INVALID);
            }
            FJ_CHECK(kctl_json_raw(j, vi, &raw, &rn) == KCTL_OK);
            FJ_CHECK(val.text == raw && val.len == rn && val.type == kctl_json_type_of(j, vi));
            i = vi + j->toks[vi].skip;
        }
        FJ_CHECK(!kctl_json_iter_next(&it, &name, &val));
        FJ_CHECK(!kctl_json_iter_next(&it, &name, &val));
        if (o) {
            FJ_CHECK(kctl_obj_iter_begin(o, path, &it) == KCTL_OK);
            for (m = 0; m < j->toks[t].size; m++) FJ_CHECK(kctl_json_iter_next(&it, NULL, NULL));
            FJ_CHECK(!kctl_json_iter_next(&it, NULL, NULL));
        }
    } else {
        kctl_json_iter it;
        FJ_CHECK(kctl_json_iter_begin(&v, NULL, &it) == KCTL_ERR_INVALID_ARG);
        FJ_CHECK(!kctl_json_iter_next(&it, NULL, NULL));
    }
}

/* The path of every value below token i (path[0..plen) names i): names
   quoted in brackets, indices. *budget bounds the work on big inputs. */
static void fj_agree_below(const kctl_json *j, const kctl_obj *o, uint32_t i, char *path, size_t plen, size_t cap, int *budget) {
    const kctl_json_tok *t = &j->toks[i];
    uint32_t k, m;
    if (*budget <= 0) return;
    (*budget)--;
    path[plen] = '\0';
    fj_agree(j, o, path);
    if (t->type == KCTL_JSON_ARRAY) {
        for (k = i + 1, m = 0; m < t->size; m++, k += j->toks[k].skip) {
            int w = snprintf(path + plen, cap - plen, "[%u]", (unsigned)m);
            if (w < 0 || (size_t)w >= cap - plen) return;
            fj_agree_below(j, o, k, path, plen + (size_t)w, cap, budget);
        }
    } else if (t->type == KCTL_JSON_OBJECT) {
        for (k = i + 1, m = 0; m < t->size; m++, k += 1 + j->toks[k + 1].skip) {
            size_t n = 0, q, p = plen, ncap = j->toks[k].end - j->toks[k].start + 1;
            char *name = (char *)malloc(ncap);
            FJ_CHECK(name != NULL);
            FJ_CHECK(kctl_json_string(j, k, name, ncap, &n) == KCTL_OK);
            if (strlen(name) == n && n <= 1000 && p + 2 * n + 5 < cap) { /* a C string, short enough to quote */
                path[p++] = '[';
                path[p++] = '"';
                for (q = 0; q < n; q++) {
                    if (name[q] == '"' || name[q] == '\\') path[p++] = '\\';
                    path[p++] = name[q];
                }
                path[p++] = '"';
                path[p++] = ']';
                fj_agree_below(j, o, k + 1, path, p, cap, budget);
            }
            free(name);
        }
    }
}

static void fj_getters_by_path(const kctl_json *j) {
    static const char *const fixed[] = {
        "a", "a.b", "spec.replicas", "items[0]", "[0]", "[1][0]", "a[\"b.c\"]", "a..b", "a[", "a[x]", "[-1]", "a.",
        ".a", "[\"", "[\"\\", "[99999999999]", "[4294967295]", "[4294967296]", "metadata.name", "kvs[0].lease",
    };
    static char path[8192];
    kctl_obj *o = NULL;
    int budget = 512;
    size_t k;
    if (kctl_obj_parse(j->text, j->len, NULL, &o) != KCTL_OK) o = NULL;
    for (k = 0; k < sizeof fixed / sizeof fixed[0]; k++) fj_agree(j, o, fixed[k]);
    fj_agree_below(j, o, 0, path, 0, sizeof path, &budget);
    kctl_obj_unref(o);
    /* every prefix of the text, as a value: never a read outside it */
    {
        size_t n = j->len < 256 ? j->len : 256;
        char *copy = (char *)malloc(n ? n : 1);
        kctl_json_value v, e;
        kctl_json_iter it;
        int64_t x;
        FJ_CHECK(copy != NULL);
        for (; n > 0; n--) {
            memcpy(copy, j->text, n);
            v.text = copy;
            v.len = n;
            v.type = KCTL_JSON_OBJECT;
            (void)kctl_json_value_get(&v, "a.b[0]", &e);
            (void)kctl_json_value_get_int64(&v, "[0]", &x);
            if (kctl_json_iter_begin(&v, NULL, &it) == KCTL_OK)
                while (kctl_json_iter_next(&it, &e, &e)) {}
        }
        free(copy);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    kctl_json c, b, j, f;
    kctl_json_tok *big, *toks;
    uint32_t cap, i, depth = 0;
    int rc_c, rc_b;
    if (size > (1u << 20)) return 0;

    /* counting, roomy and exactly sized storage agree */
    rc_c = kctl_json_parse(text, size, NULL, 0, NULL, &c);
    FJ_CHECK(rc_c == KCTL_OK || rc_c == KCTL_ERR_PROTO || rc_c == KCTL_ERR_TOO_LARGE);
    cap = (uint32_t)size + 1; /* a token takes at least a byte */
    big = (kctl_json_tok *)malloc(cap * sizeof *big);
    FJ_CHECK(big != NULL);
    rc_b = kctl_json_parse(text, size, big, cap, NULL, &b);
    FJ_CHECK(rc_b == rc_c);
    if (rc_c != KCTL_OK) {
        free(big);
        return 0;
    }
    FJ_CHECK(b.ntoks == c.ntoks && c.ntoks >= 1);
    toks = (kctl_json_tok *)malloc(c.ntoks * sizeof *toks);
    FJ_CHECK(toks != NULL);
    FJ_CHECK(kctl_json_parse(text, size, toks, c.ntoks, NULL, &j) == KCTL_OK);
    FJ_CHECK(j.ntoks == c.ntoks && j.toks == toks && j.text == text && j.len == size);
    FJ_CHECK(memcmp(toks, big, c.ntoks * sizeof *toks) == 0);
    FJ_CHECK(kctl_json_parse(text, size, big, c.ntoks - 1, NULL, &f) == KCTL_ERR_FULL);
    FJ_CHECK(f.ntoks == c.ntoks);
    free(big);

    /* a well-formed tree; the depth limit is exact */
    FJ_CHECK(fj_walk(&j, 0, 0, &depth) == j.ntoks);
    {
        kctl_json_limits lim;
        kctl_json l;
        memset(&lim, 0, sizeof lim);
        lim.max_depth = (uint32_t)(data[0] % 8) + 1;
        rc_c = kctl_json_parse(text, size, NULL, 0, &lim, &l);
        FJ_CHECK(rc_c == (depth <= lim.max_depth ? KCTL_OK : KCTL_ERR_TOO_LARGE));
        lim.max_depth = 0;
        lim.max_bytes = (uint32_t)size;
        FJ_CHECK(kctl_json_parse(text, size, NULL, 0, &lim, &l) == KCTL_OK);
        if (size > 1) {
            lim.max_bytes = (uint32_t)size - 1;
            FJ_CHECK(kctl_json_parse(text, size, NULL, 0, &lim, &l) == KCTL_ERR_TOO_LARGE);
        }
    }

    /* every token: getters, strings, members */
    for (i = 0; i < j.ntoks; i++) {
        fj_getters(&j, i);
        fj_strings(&j, i);
        if (toks[i].type == KCTL_JSON_OBJECT) fj_members(&j, i);
        else FJ_CHECK(kctl_json_member(&j, i, "a") == KCTL_JSON_NONE);
        if (toks[i].type != KCTL_JSON_ARRAY) FJ_CHECK(kctl_json_element(&j, i, 0) == KCTL_JSON_NONE);
        if (i < 64) FJ_CHECK(kctl_json_equal(&j, i, &j, i));
    }
    fj_paths(&j);

    /* equality with itself and with its copies */
    if (!kctl_json_equal(&j, 0, &j, 0)) abort();
    {
        kctl_jw w;
        char scratch[4096 + 8];
        char fixed[16];
        const char *t;
        size_t n;
        int rc;
        kctl_jw_init_growable(&w, NULL);
        kctl_jw_value(&w, &j, 0);
        fj_expect_equal(&w, &j, 0);
        kctl_jw_free(&w);
        if (size < sizeof scratch - 8) {
            kctl_jw_init_growable(&w, NULL);
            if (fj_rebuild(&w, &j, 0, scratch, sizeof scratch)) fj_expect_equal(&w, &j, 0);
            kctl_jw_free(&w);
        }
        /* a fixed buffer: the whole text or FULL */
        kctl_jw_init(&w, fixed, sizeof fixed);
        kctl_jw_value(&w, &j, 0);
        rc = kctl_jw_finish(&w, &t, &n);
        FJ_CHECK(rc == KCTL_OK || rc == KCTL_ERR_FULL);
        if (rc == KCTL_OK) FJ_CHECK(n < sizeof fixed && t[n] == '\0');
    }

    /* merge patch: the document with itself, and onto nothing; idempotent */
    {
        char *t1, *t2, *t3;
        kctl_json_tok *k1, *k2, *k3;
        kctl_json r1, r2, r3;
        fj_merge(&j, 0, &j, &t1, &k1, &r1);
        fj_merge(&r1, 0, &j, &t2, &k2, &r2);
        FJ_CHECK(kctl_json_equal(&r1, 0, &r2, 0));
        fj_merge(NULL, KCTL_JSON_NONE, &j, &t3, &k3, &r3);
        if (toks[0].type != KCTL_JSON_OBJECT) {
            FJ_CHECK(kctl_json_equal(&r1, 0, &j, 0)); /* a non-object patch replaces */
            FJ_CHECK(kctl_json_equal(&r3, 0, &j, 0));
        } else {
            FJ_CHECK(kctl_json_equal(&r1, 0, &r3, 0)); /* patch(doc, doc) keeps exactly what patch(none, doc) makes */
        }
        free(t1); free(t2); free(t3);
        free(k1); free(k2); free(k3);
    }
    fj_object(text, size);
    fj_getters_by_path(&j);
    free(toks);
    return 0;
}
