/* fuzz_merge_patch.c - libFuzzer target for JSON merge patch (RFC 7386).

   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c99 -D_POSIX_C_SOURCE=200809L \
       tests/fuzz_merge_patch.c -o /tmp/fmp && /tmp/fmp -max_total_time=120 /tmp/corpus-copy

   The input is a document and a patch, split at the first NUL byte (JSON
   text holds none); without one, there is no document and the whole input
   is the patch. When both parse, the patch is applied and RFC 7386's
   properties are checked against references written here (plain scans of
   the tokens, quadratic, fine at these sizes):
     - the result is valid JSON;
     - applying the patch again changes nothing (idempotence);
     - a patch that is not an object replaces the document;
     - of an object patch, every member (the last of a name) set to null is
       absent from the result, every member set to anything but null or an
       object equals the patch's value, every member set to an object is
       the document's member patched by it, checked the same way below;
     - every member the patch does not name equals the document's;
     - the result holds each name once, the document's first (in its
       order), then the patch's new ones (in the patch's order);
   and along the way, kctl_json_equal agrees with a reference equality, and
   kctl__jmembers lists what a scan lists. The implementation is built with
   KCTL__JSON_SCAN_MAX 2, so objects of three members or more take the
   sorting paths that big objects take. Merging into a fixed buffer gives
   the same text or FULL, and out of memory at any allocation is NOMEM with
   nothing leaked. Any broken property abort()s. */
#define KCTL__JSON_SCAN_MAX 2
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FM_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_merge_patch: %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

/* A parsed document with malloc'd tokens (and text, when owned). */
typedef struct fm_doc {
    kctl_json j;
    kctl_json_tok *toks;
    char *text;
} fm_doc;

static int fm_parse(const char *text, size_t len, fm_doc *d) {
    kctl_json c;
    int rc;
    memset(d, 0, sizeof *d);
    if ((rc = kctl_json_parse(text, len, NULL, 0, NULL, &c)) != KCTL_OK) return rc;
    d->toks = (kctl_json_tok *)malloc(c.ntoks * sizeof *d->toks);
    FM_CHECK(d->toks != NULL);
    FM_CHECK(kctl_json_parse(text, len, d->toks, c.ntoks, NULL, &d->j) == KCTL_OK);
    return KCTL_OK;
}

static void fm_free(fm_doc *d) {
    free(d->toks);
    free(d->text);
    memset(d, 0, sizeof *d);
}

/* ---- references */

/* A string token unescaped (malloc'd; *n its length). */
static char *fm_str(const kctl_json *j, uint32_t t, size_t *n) {
    size_t cap = j->toks[t].end - j->toks[t].start + 1;
    char *s = (char *)malloc(cap);
    FM_CHECK(s != NULL);
    FM_CHECK(kctl_json_string(j, t, s, cap, n) == KCTL_OK);
    return s;
}

/* Whether string tokens a of ja and b of jb are the same once unescaped. */
static bool fm_same(const kctl_json *ja, uint32_t a, const kctl_json *jb, uint32_t b) {
    size_t na, nb;
    char *x = fm_str(ja, a, &na), *y = fm_str(jb, b, &nb);
    bool eq = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return eq;
}

/* Bytewise order of two unescaped string tokens. */
static int fm_order(const kctl_json *ja, uint32_t a, const kctl_json *jb, uint32_t b) {
    size_t na, nb;
    char *x = fm_str(ja, a, &na), *y = fm_str(jb, b, &nb);
    int r = memcmp(x, y, na < nb ? na : nb);
    if (!r) r = (na > nb) - (na < nb);
    free(x);
    free(y);
    return r;
}

/* The next member's name token after name token i. */
static uint32_t fm_next(const kctl_json *j, uint32_t i) { return i + 1 + j->toks[i + 1].skip; }

/* The last member of object obj named like name token k of kj, or NONE. */
static uint32_t fm_member(const kctl_json *j, uint32_t obj, const kctl_json *kj, uint32_t k) {
    uint32_t i, m, found = KCTL_JSON_NONE;
    if (obj == KCTL_JSON_NONE || j->toks[obj].type != KCTL_JSON_OBJECT) return KCTL_JSON_NONE;
    for (i = obj + 1, m = 0; m < j->toks[obj].size; m++, i = fm_next(j, i))
        if (fm_same(j, i, kj, k)) found = i + 1;
    return found;
}

/* Whether member name token i of obj is the last of its name. */
static bool fm_last(const kctl_json *j, uint32_t obj, uint32_t i) { return fm_member(j, obj, j, i) == i + 1; }

/* Semantic equality, written plainly. */
static bool fm_equal(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb) {
    const kctl_json_tok *x = &a->toks[va], *y = &b->toks[vb];
    uint32_t i, m, na = 0, nb = 0;
    if (x->type != y->type) return false;
    switch (x->type) {
    case KCTL_JSON_STRING: return fm_same(a, va, b, vb);
    case KCTL_JSON_NUMBER: return kctl_json_equal(a, va, b, vb); /* the exact decimal comparison: fuzz_json's */
    case KCTL_JSON_ARRAY: {
        uint32_t p = va + 1, q = vb + 1;
        if (x->size != y->size) return false;
        for (m = 0; m < x->size; m++, p += a->toks[p].skip, q += b->toks[q].skip)
            if (!fm_equal(a, p, b, q)) return false;
        return true;
    }
    case KCTL_JSON_OBJECT:
        for (i = va + 1, m = 0; m < x->size; m++, i = fm_next(a, i)) {
            uint32_t w;
            if (!fm_last(a, va, i)) continue;
            na++;
            w = fm_member(b, vb, a, i);
            if (w == KCTL_JSON_NONE || !fm_equal(a, i + 1, b, w)) return false;
        }
        for (i = vb + 1, m = 0; m < y->size; m++, i = fm_next(b, i)) nb += fm_last(b, vb, i);
        return na == nb;
    default:
        return true;
    }
}

/* Both equalities agree; returns the answer. */
static bool fm_eq(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb) {
    bool want = fm_equal(a, va, b, vb);
    FM_CHECK(kctl_json_equal(a, va, b, vb) == want);
    FM_CHECK(kctl_json_equal(b, vb, a, va) == want);
    return want;
}

/* kctl__jmembers lists, for every object of j, what a scan lists: the
   last of each name, in document order, and by name in strict order. */
static void fm_members(const kctl_json *j) {
    uint32_t o;
    for (o = 0; o < j->ntoks; o++) {
        kctl__jmview v;
        uint32_t i, m, k = 0;
        if (j->toks[o].type != KCTL_JSON_OBJECT) continue;
        FM_CHECK(kctl__jmembers(j, o, NULL, true, &v) == KCTL_OK);
        for (i = o + 1, m = 0; m < j->toks[o].size; m++, i = fm_next(j, i)) {
            if (!fm_last(j, o, i)) continue;
            FM_CHECK(k < v.n && v.keys[k] == i);
            k++;
        }
        FM_CHECK(k == v.n);
        for (k = 0; k + 1 < v.n; k++) FM_CHECK(fm_order(j, v.keys[v.byname[k]], j, v.keys[v.byname[k + 1]]) < 0);
        kctl__jmembers_free(&v);
    }
}

/* ---- the properties */

/* res[vr] is what patch[vp] makes of doc[vd] (vd NONE: no document). */
static void fm_check(const kctl_json *doc, uint32_t vd, const kctl_json *patch, uint32_t vp, const kctl_json *res, uint32_t vr) {
    const kctl_json_tok *p = &patch->toks[vp], *r = &res->toks[vr];
    uint32_t i, m, k, ri;
    bool dobj = vd != KCTL_JSON_NONE && doc->toks[vd].type == KCTL_JSON_OBJECT;
    if (p->type != KCTL_JSON_OBJECT) { /* replaces */
        FM_CHECK(fm_eq(res, vr, patch, vp));
        return;
    }
    FM_CHECK(r->type == KCTL_JSON_OBJECT);
    for (i = vp + 1, m = 0; m < p->size; m++, i = fm_next(patch, i)) { /* what the patch names */
        uint32_t rv;
        if (!fm_last(patch, vp, i)) continue;
        rv = fm_member(res, vr, patch, i);
        if (patch->toks[i + 1].type == KCTL_JSON_NULL) {
            FM_CHECK(rv == KCTL_JSON_NONE);
        } else if (patch->toks[i + 1].type == KCTL_JSON_OBJECT) {
            FM_CHECK(rv != KCTL_JSON_NONE);
            fm_check(doc, dobj ? fm_member(doc, vd, patch, i) : KCTL_JSON_NONE, patch, i + 1, res, rv);
        } else {
            FM_CHECK(rv != KCTL_JSON_NONE && fm_eq(res, rv, patch, i + 1));
        }
    }
    /* what it does not: unchanged; and the result's names in order */
    ri = vr + 1;
    k = 0;
    for (i = vd + 1, m = 0; dobj && m < doc->toks[vd].size; m++, i = fm_next(doc, i)) {
        uint32_t pv;
        if (!fm_last(doc, vd, i)) continue;
        pv = fm_member(patch, vp, doc, i);
        if (pv == KCTL_JSON_NONE) {
            uint32_t rv = fm_member(res, vr, doc, i);
            FM_CHECK(rv != KCTL_JSON_NONE && fm_eq(res, rv, doc, i + 1));
        }
        if (pv != KCTL_JSON_NONE && patch->toks[pv].type == KCTL_JSON_NULL) continue;
        FM_CHECK(k < r->size && fm_same(res, ri, doc, i));
        ri = fm_next(res, ri);
        k++;
    }
    for (i = vp + 1, m = 0; m < p->size; m++, i = fm_next(patch, i)) {
        if (!fm_last(patch, vp, i) || patch->toks[i + 1].type == KCTL_JSON_NULL) continue;
        if (dobj && fm_member(doc, vd, patch, i) != KCTL_JSON_NONE) continue;
        FM_CHECK(k < r->size && fm_same(res, ri, patch, i));
        ri = fm_next(res, ri);
        k++;
    }
    FM_CHECK(r->size == k); /* nothing else, each name once */
}

/* Merges into a growable writer (allocator al, may be NULL); the text
   malloc'd into *out, or the error. */
static int fm_merge(const kctl_json *doc, uint32_t vd, const kctl_json *patch, const kctl_allocator *al, fm_doc *out) {
    kctl_jw w;
    const char *t;
    size_t n;
    int rc;
    memset(out, 0, sizeof *out);
    kctl_jw_init_growable(&w, al);
    rc = kctl_json_merge_patch(doc, vd, patch, 0, &w);
    FM_CHECK(rc == kctl_jw_finish(&w, &t, &n));
    if (rc == KCTL_OK) {
        out->text = (char *)malloc(n + 1);
        FM_CHECK(out->text != NULL);
        memcpy(out->text, t, n);
        FM_CHECK(fm_parse(out->text, n, out) == KCTL_OK); /* valid JSON */
        out->text = (char *)out->j.text;
    }
    kctl_jw_free(&w);
    return rc;
}

/* An allocator that fails from the n-th call on. */
typedef struct fm_alloc { long left, live; } fm_alloc;
static void *fm_alloc_fn(size_t n, void *ud) {
    fm_alloc *a = (fm_alloc *)ud;
    if (a->left-- <= 0) return NULL;
    a->live++;
    return malloc(n);
}
static void fm_free_fn(void *p, void *ud) {
    if (p) ((fm_alloc *)ud)->live--;
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *nul;
    fm_doc doc, patch, res, again;
    uint32_t vd = KCTL_JSON_NONE;
    bool has_doc;
    int rc;
    if (size > (1u << 16)) return 0;
    nul = (const char *)memchr(text, '\0', size);
    has_doc = nul != NULL;
    memset(&doc, 0, sizeof doc);
    if (has_doc && fm_parse(text, (size_t)(nul - text), &doc) != KCTL_OK) return 0;
    if (fm_parse(has_doc ? nul + 1 : text, has_doc ? size - (size_t)(nul - text) - 1 : size, &patch) != KCTL_OK) {
        fm_free(&doc);
        return 0;
    }
    if (has_doc) {
        vd = 0;
        fm_members(&doc.j);
        FM_CHECK(fm_eq(&doc.j, 0, &doc.j, 0));
        (void)fm_eq(&doc.j, 0, &patch.j, 0);
    }
    fm_members(&patch.j);

    rc = fm_merge(has_doc ? &doc.j : NULL, vd, &patch.j, NULL, &res);
    FM_CHECK(rc == KCTL_OK);
    fm_check(&doc.j, vd, &patch.j, 0, &res.j, 0);
    if (has_doc) (void)fm_eq(&res.j, 0, &doc.j, 0);
    /* idempotent */
    FM_CHECK(fm_merge(&res.j, 0, &patch.j, NULL, &again) == KCTL_OK);
    FM_CHECK(fm_eq(&again.j, 0, &res.j, 0));
    fm_free(&again);
    /* a fixed buffer: the same text, or FULL */
    {
        char buf[64];
        kctl_jw w;
        const char *t;
        size_t n;
        kctl_jw_init(&w, buf, sizeof buf);
        rc = kctl_json_merge_patch(has_doc ? &doc.j : NULL, vd, &patch.j, 0, &w);
        FM_CHECK(rc == KCTL_OK || rc == KCTL_ERR_FULL);
        if (rc == KCTL_OK) {
            FM_CHECK(kctl_jw_finish(&w, &t, &n) == KCTL_OK);
            FM_CHECK(n == res.j.len && memcmp(t, res.j.text, n) == 0);
        }
    }
    /* out of memory at each allocation (the first few): NOMEM, nothing leaked */
    {
        long k;
        for (k = 0; k < 6; k++) {
            fm_alloc fa;
            kctl_allocator al;
            fm_doc r;
            fa.left = k;
            fa.live = 0;
            al.alloc_fn = fm_alloc_fn;
            al.free_fn = fm_free_fn;
            al.user_data = &fa;
            rc = fm_merge(has_doc ? &doc.j : NULL, vd, &patch.j, &al, &r);
            FM_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOMEM);
            if (rc == KCTL_OK) FM_CHECK(r.j.len == res.j.len && memcmp(r.j.text, res.j.text, r.j.len) == 0);
            FM_CHECK(fa.live == 0);
            fm_free(&r);
            if (rc == KCTL_OK) break;
        }
    }
    fm_free(&res);
    fm_free(&patch);
    fm_free(&doc);
    return 0;
}
