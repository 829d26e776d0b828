/* test_json.c - the JSON reader, lookups, getters, equality, writer and merge patch. */
#include "kt.h"
#include <stdlib.h>
#include <math.h>
#include <float.h>
#include <time.h>

/* ------------------------------------------------------------- helpers */

/* A parsed document. The text is an exactly sized heap copy (no NUL after
   it) and the tokens are exactly sized, so a read past either shows up
   under the sanitizers. */
typedef struct tj_doc {
    char *text;
    kctl_json_tok *toks;
    kctl_json j;
    int rc;
} tj_doc;

/* Walks value i checking the token invariants; returns the index after it. */
static uint32_t tj_walk(const kctl_json *j, uint32_t i, uint32_t depth, int *ok) {
    const kctl_json_tok *t;
    const char *s = j->text;
    uint32_t k, n, next;
    if (i >= j->ntoks || depth > 1000) { *ok = 0; return j->ntoks; }
    t = &j->toks[i];
    if (t->start > t->end || t->end > j->len) { *ok = 0; return j->ntoks; }
    switch (t->type) {
    case KCTL_JSON_OBJECT:
    case KCTL_JSON_ARRAY:
        if (t->end - t->start < 2) { *ok = 0; return j->ntoks; }
        if (s[t->start] != (t->type == KCTL_JSON_OBJECT ? '{' : '[')) *ok = 0;
        if (s[t->end - 1] != (t->type == KCTL_JSON_OBJECT ? '}' : ']')) *ok = 0;
        n = t->type == KCTL_JSON_OBJECT ? t->size * 2 : t->size;
        next = i + 1;
        for (k = 0; k < n && *ok; k++) {
            if (next >= j->ntoks) { *ok = 0; break; }
            if (t->type == KCTL_JSON_OBJECT && k % 2 == 0 && j->toks[next].type != KCTL_JSON_STRING) *ok = 0;
            if (j->toks[next].start <= t->start || j->toks[next].end >= t->end) *ok = 0;
            next = tj_walk(j, next, depth + 1, ok);
        }
        if (!*ok) return j->ntoks;
        if (t->skip != next - i) *ok = 0;
        return next;
    case KCTL_JSON_STRING:
        if (t->start < 1 || t->end >= j->len || s[t->start - 1] != '"' || s[t->end] != '"') *ok = 0;
        if (t->size != 0 || t->skip != 1) *ok = 0;
        if ((memchr(s + t->start, '\\', t->end - t->start) != NULL) != (t->escaped != 0)) *ok = 0;
        return i + 1;
    case KCTL_JSON_NUMBER:
    case KCTL_JSON_TRUE:
    case KCTL_JSON_FALSE:
    case KCTL_JSON_NULL:
        if (t->size != 0 || t->skip != 1 || t->end == t->start) *ok = 0;
        if (t->type == KCTL_JSON_TRUE && (t->end - t->start != 4 || memcmp(s + t->start, "true", 4))) *ok = 0;
        if (t->type == KCTL_JSON_FALSE && (t->end - t->start != 5 || memcmp(s + t->start, "false", 5))) *ok = 0;
        if (t->type == KCTL_JSON_NULL && (t->end - t->start != 4 || memcmp(s + t->start, "null", 4))) *ok = 0;
        return i + 1;
    default:
        *ok = 0;
        return j->ntoks;
    }
}

/* Parses s[0..n) the three ways (counting, plenty of tokens, exactly sized)
   and checks that they agree, that one token fewer is FULL with the count,
   and that the tokens are well formed. Returns the result code. */
static int tj_open_n(tj_doc *d, const char *s, size_t n, const kctl_json_limits *lim, int line) {
    kctl_json c, b, f;
    kctl_json_tok *big;
    uint32_t cap = (uint32_t)n + 1; /* every token takes at least one byte */
    int rc_c, rc_b, ok = 1;
    memset(d, 0, sizeof *d);
    d->text = (char *)malloc(n ? n : 1);
    if (n) memcpy(d->text, s, n);
    memset(&c, 0, sizeof c);
    rc_c = kctl_json_parse(d->text, n, NULL, 0, lim, &c);
    big = (kctl_json_tok *)malloc(cap * sizeof *big);
    memset(&b, 0, sizeof b);
    rc_b = kctl_json_parse(d->text, n, big, cap, lim, &b);
    if (rc_b != rc_c)
        kt_fail(__FILE__, line, "counting mode says %d, token mode %d", rc_c, rc_b);
    d->rc = rc_c;
    if (rc_c != KCTL_OK || rc_b != KCTL_OK) { free(big); return rc_c; }
    if (b.ntoks != c.ntoks)
        kt_fail(__FILE__, line, "counting mode counts %u tokens, token mode %u", (unsigned)c.ntoks, (unsigned)b.ntoks);
    d->toks = (kctl_json_tok *)malloc((c.ntoks ? c.ntoks : 1) * sizeof *d->toks);
    d->rc = kctl_json_parse(d->text, n, d->toks, c.ntoks, lim, &d->j);
    if (d->rc != KCTL_OK || d->j.ntoks != c.ntoks) {
        kt_fail(__FILE__, line, "exactly sized storage: rc %d ntoks %u (want %u)", d->rc, (unsigned)d->j.ntoks,
                (unsigned)c.ntoks);
        free(big);
        return d->rc ? d->rc : KCTL_ERR_INVALID_ARG;
    }
    if (d->j.text != d->text || d->j.len != n || d->j.toks != d->toks)
        kt_fail(__FILE__, line, "out does not view the text and tokens");
    if (memcmp(d->toks, big, c.ntoks * sizeof *big) != 0)
        kt_fail(__FILE__, line, "exactly sized tokens differ from the roomy ones");
    if (c.ntoks > 0) {
        int rc;
        memset(&f, 0, sizeof f);
        rc = kctl_json_parse(d->text, n, big, c.ntoks - 1, lim, &f);
        if (rc != KCTL_ERR_FULL || f.ntoks != c.ntoks)
            kt_fail(__FILE__, line, "cap %u: rc %d ntoks %u (want FULL, %u)", (unsigned)(c.ntoks - 1), rc,
                    (unsigned)f.ntoks, (unsigned)c.ntoks);
    }
    free(big);
    if (tj_walk(&d->j, 0, 0, &ok) != d->j.ntoks || !ok)
        kt_fail(__FILE__, line, "malformed token tree for %.*s", (int)(n > 200 ? 200 : n), s);
    return KCTL_OK;
}

static void tj_close(tj_doc *d) {
    free(d->text);
    free(d->toks);
    memset(d, 0, sizeof *d);
}

#define TJ_RC(s, lim) tj_rc((s), strlen(s), (lim), __LINE__)
#define TJ_OPEN(d, s) tj_open_n((d), (s), strlen(s), NULL, __LINE__)
#define TJ_OPEN_LIM(d, s, lim) tj_open_n((d), (s), strlen(s), (lim), __LINE__)

/* The result of parsing s[0..n) (document closed again). */
static int tj_rc(const char *s, size_t n, const kctl_json_limits *lim, int line) {
    tj_doc d;
    int rc = tj_open_n(&d, s, n, lim, line);
    tj_close(&d);
    return rc;
}

/* An unescaped string value into a static buffer (for KT_EQ_STR). */
static const char *tj_str(const kctl_json *j, uint32_t v) {
    static char buf[512];
    size_t len = 0;
    if (kctl_json_string(j, v, buf, sizeof buf, &len) != KCTL_OK) return "(not a string)";
    return buf;
}

static int64_t tj_i64(const kctl_json *j, uint32_t v) {
    int64_t x = -12345;
    if (kctl_json_int64(j, v, &x) != KCTL_OK) return -12345;
    return x;
}

/* The writer's finished text; checks finish returns OK. */
static const char *tj_finish(kctl_jw *w, int line) {
    const char *t = NULL;
    size_t n = 0;
    int rc = kctl_jw_finish(w, &t, &n);
    if (rc != KCTL_OK || !t) {
        kt_fail(__FILE__, line, "kctl_jw_finish: %d", rc);
        return "(error)";
    }
    if (strlen(t) != n) kt_fail(__FILE__, line, "finish: len %lu but strlen %lu", (unsigned long)n, (unsigned long)strlen(t));
    return t;
}
#define TJ_FINISH(w) tj_finish((w), __LINE__)

static int tj_finish_rc(kctl_jw *w) {
    const char *t = NULL;
    size_t n = 0;
    return kctl_jw_finish(w, &t, &n);
}

/* ------------------------------------------------------ parse: valid */

static void tj_parse_tokens_exact(void) {
    static const char text[] = " {\"a\" : [1, -2.5e3, \"x\\\"y\", true, false, null, {}, []] , \"b\":{}} ";
    static const struct { uint8_t type, escaped; uint32_t start, end, size, skip; } want[] = {
        { KCTL_JSON_OBJECT, 0, 1, 64, 2, 13 },
        { KCTL_JSON_STRING, 0, 3, 4, 0, 1 },
        { KCTL_JSON_ARRAY, 0, 8, 54, 8, 9 },
        { KCTL_JSON_NUMBER, 0, 9, 10, 0, 1 },
        { KCTL_JSON_NUMBER, 0, 12, 18, 0, 1 },
        { KCTL_JSON_STRING, 1, 21, 25, 0, 1 },
        { KCTL_JSON_TRUE, 0, 28, 32, 0, 1 },
        { KCTL_JSON_FALSE, 0, 34, 39, 0, 1 },
        { KCTL_JSON_NULL, 0, 41, 45, 0, 1 },
        { KCTL_JSON_OBJECT, 0, 47, 49, 0, 1 },
        { KCTL_JSON_ARRAY, 0, 51, 53, 0, 1 },
        { KCTL_JSON_STRING, 0, 58, 59, 0, 1 },
        { KCTL_JSON_OBJECT, 0, 61, 63, 0, 1 },
    };
    tj_doc d;
    uint32_t i;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    KT_EQ_U64(d.j.ntoks, 13);
    for (i = 0; i < 13 && i < d.j.ntoks; i++) {
        const kctl_json_tok *t = &d.toks[i];
        KT_EQ_INT(t->type, want[i].type);
        KT_EQ_INT(t->escaped, want[i].escaped);
        KT_EQ_U64(t->start, want[i].start);
        KT_EQ_U64(t->end, want[i].end);
        KT_EQ_U64(t->size, want[i].size);
        KT_EQ_U64(t->skip, want[i].skip);
        KT_EQ_INT(kctl_json_type_of(&d.j, i), want[i].type);
    }
    tj_close(&d);
}

static void tj_parse_top_level_scalars(void) {
    static const struct { const char *s; int type; uint32_t start, end; } cases[] = {
        { "1", KCTL_JSON_NUMBER, 0, 1 },
        { "-0.5e+10", KCTL_JSON_NUMBER, 0, 8 },
        { " \"s\" ", KCTL_JSON_STRING, 2, 3 },
        { "\"\"", KCTL_JSON_STRING, 1, 1 },
        { "\t\r\n true \n", KCTL_JSON_TRUE, 4, 8 },
        { "false", KCTL_JSON_FALSE, 0, 5 },
        { " null", KCTL_JSON_NULL, 1, 5 },
        { "{}", KCTL_JSON_OBJECT, 0, 2 },
        { "[]", KCTL_JSON_ARRAY, 0, 2 },
        { " { } ", KCTL_JSON_OBJECT, 1, 4 },
        { "[\n]", KCTL_JSON_ARRAY, 0, 3 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tj_doc d;
        KT_EQ_INT(tj_open_n(&d, cases[i].s, strlen(cases[i].s), NULL, __LINE__), KCTL_OK);
        if (d.rc == KCTL_OK) {
            KT_EQ_U64(d.j.ntoks, 1);
            KT_EQ_INT(d.toks[0].type, cases[i].type);
            KT_EQ_U64(d.toks[0].start, cases[i].start);
            KT_EQ_U64(d.toks[0].end, cases[i].end);
            KT_EQ_U64(d.toks[0].size, 0);
            KT_EQ_U64(d.toks[0].skip, 1);
        }
        tj_close(&d);
    }
}

static void tj_parse_whitespace_everywhere(void) {
    static const char text[] = " \t\n\r{ \t\n\r\"a\" \t\n\r: \t\n\r[ \t\n\r1 \t\n\r, \t\n\r\"x\" \t\n\r] \t\n\r,"
                               " \t\n\r\"b\" \t\n\r: \t\n\r{ \t\n\r} \t\n\r} \t\n\r";
    tj_doc d;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    KT_EQ_U64(d.j.ntoks, 7);
    if (d.rc == KCTL_OK) {
        KT_EQ_U64(d.toks[0].size, 2);
        KT_EQ_U64(d.toks[0].skip, 7);
        KT_EQ_INT(d.toks[2].type, KCTL_JSON_ARRAY);
        KT_EQ_U64(d.toks[2].size, 2);
        KT_EQ_INT(d.toks[6].type, KCTL_JSON_OBJECT);
        KT_EQ_U64(d.toks[0].start, 4);
        KT_EQ_U64(d.toks[0].end, strlen(text) - 4);
    }
    tj_close(&d);
}

static void tj_parse_valid_table(void) {
    static const struct { const char *s; size_t n; uint32_t ntoks; } cases[] = {
#define TJ_V(lit, nt) { lit, sizeof(lit) - 1, nt }
        TJ_V("0", 1), TJ_V("-0", 1), TJ_V("-0.0e-0", 1), TJ_V("1E+2", 1), TJ_V("0e0", 1),
        TJ_V("123.456e-789", 1), TJ_V("1e999999999999999999999", 1), TJ_V("-1234567890123456789012345678901234567890", 1),
        TJ_V("0.0000000000000000000000000000001", 1),
        TJ_V("[1,2,3]", 4), TJ_V("[[[]]]", 3), TJ_V("{\"a\":{\"b\":{\"c\":[]}}}", 7),
        TJ_V("[{}, [], \"\", 0, true, false, null]", 8),
        TJ_V("{\"\":\"\"}", 3),
        TJ_V("\"\x7f\"", 1),                        /* DEL needs no escape */
        TJ_V("\"\xC2\x80\"", 1),                    /* U+0080 */
        TJ_V("\"\xDF\xBF\"", 1),                    /* U+07FF */
        TJ_V("\"\xE0\xA0\x80\"", 1),                /* U+0800 */
        TJ_V("\"\xED\x9F\xBF\"", 1),                /* U+D7FF */
        TJ_V("\"\xEE\x80\x80\"", 1),                /* U+E000 */
        TJ_V("\"\xEF\xBF\xBF\"", 1),                /* U+FFFF */
        TJ_V("\"\xF0\x90\x80\x80\"", 1),            /* U+10000 */
        TJ_V("\"\xF4\x8F\xBF\xBF\"", 1),            /* U+10FFFF */
        TJ_V("\"\\ud800\\udc00\"", 1), TJ_V("\"\\uDBFF\\uDFFF\"", 1), TJ_V("\"\\u0000\"", 1),
        TJ_V("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", 1),
        TJ_V("{\"a\":1,\"a\":2}", 5),
#undef TJ_V
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tj_doc d;
        int rc = tj_open_n(&d, cases[i].s, cases[i].n, NULL, __LINE__);
        if (rc != KCTL_OK) kt_fail(__FILE__, __LINE__, "valid case %u (%s): rc %d", (unsigned)i, cases[i].s, rc);
        else if (d.j.ntoks != cases[i].ntoks)
            kt_fail(__FILE__, __LINE__, "valid case %u (%s): ntoks %u, want %u", (unsigned)i, cases[i].s,
                    (unsigned)d.j.ntoks, (unsigned)cases[i].ntoks);
        tj_close(&d);
    }
}

static void tj_parse_counting_and_full(void) {
    static const char text[] = "{\"items\":[{\"a\":1},{\"b\":[true,null]}],\"n\":\"x\"}";
    kctl_json_tok toks[32];
    kctl_json out;
    uint32_t cap;
    memset(&out, 0, sizeof out);
    KT_EQ_INT(kctl_json_parse(text, strlen(text), NULL, 0, NULL, &out), KCTL_OK);
    KT_EQ_U64(out.ntoks, 13);
    /* counting mode ignores cap */
    memset(&out, 0, sizeof out);
    KT_EQ_INT(kctl_json_parse(text, strlen(text), NULL, 5, NULL, &out), KCTL_OK);
    KT_EQ_U64(out.ntoks, 13);
    for (cap = 0; cap < 13; cap++) {
        memset(&out, 0, sizeof out);
        KT_EQ_INT(kctl_json_parse(text, strlen(text), toks, cap, NULL, &out), KCTL_ERR_FULL);
        KT_EQ_U64(out.ntoks, 13);
    }
    for (cap = 13; cap <= 32; cap += 19) {
        memset(&out, 0, sizeof out);
        KT_EQ_INT(kctl_json_parse(text, strlen(text), toks, cap, NULL, &out), KCTL_OK);
        KT_EQ_U64(out.ntoks, 13);
        KT_CHECK(out.toks == toks);
        KT_CHECK(out.text == text);
        KT_EQ_U64(out.len, strlen(text));
    }
}

static void tj_parse_bad_args(void) {
    kctl_json_tok toks[4];
    kctl_json out;
    KT_EQ_INT(kctl_json_parse(NULL, 0, toks, 4, NULL, &out), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_parse(NULL, 0, NULL, 0, NULL, &out), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_parse("1", 1, toks, 4, NULL, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_parse("1", 1, NULL, 0, NULL, NULL), KCTL_ERR_INVALID_ARG);
}

/* The text is text[0..len): what follows is never read. */
static void tj_parse_length_bounds_text(void) {
    static const char text[] = "[1,2]xyz";
    kctl_json_tok toks[8];
    kctl_json out;
    KT_EQ_INT(kctl_json_parse(text, 5, toks, 8, NULL, &out), KCTL_OK);
    KT_EQ_U64(out.ntoks, 3);
    KT_EQ_INT(kctl_json_parse(text, 4, toks, 8, NULL, &out), KCTL_ERR_PROTO);
    KT_EQ_INT(kctl_json_parse("12345", 2, toks, 8, NULL, &out), KCTL_OK);
    KT_EQ_U64(toks[0].end, 2);
    KT_EQ_INT(kctl_json_parse("truex", 4, toks, 8, NULL, &out), KCTL_OK);
    KT_EQ_INT(kctl_json_parse("\"ab\"", 3, toks, 8, NULL, &out), KCTL_ERR_PROTO);
}

/* ---------------------------------------------------- parse: invalid */

static void tj_parse_invalid_table(void) {
    static const struct { const char *s; size_t n; } bad[] = {
#define TJ_B(lit) { lit, sizeof(lit) - 1 }
        /* empty, whitespace only, non-JSON whitespace */
        TJ_B(""), TJ_B(" "), TJ_B(" \t\r\n "), TJ_B("\f1"), TJ_B("1\v"), TJ_B("[1,\f2]"), TJ_B("[\xC2\xA0" "1]"),
        /* trailing and missing commas */
        TJ_B("[1,]"), TJ_B("{\"a\":1,}"), TJ_B("[,1]"), TJ_B("[1,,2]"), TJ_B("{,}"), TJ_B("[,]"), TJ_B("[1 2]"),
        TJ_B("{\"a\":1 \"b\":2}"),
        /* numbers */
        TJ_B("01"), TJ_B("-01"), TJ_B("00"), TJ_B("1."), TJ_B(".5"), TJ_B("-"), TJ_B("+1"), TJ_B("1e"), TJ_B("1e+"),
        TJ_B("1E-"), TJ_B("-.5"), TJ_B("1.e5"), TJ_B("0x10"), TJ_B("1.5e"), TJ_B("--1"), TJ_B("- 1"), TJ_B("1e1.5"),
        TJ_B("Infinity"), TJ_B("-Infinity"), TJ_B("NaN"), TJ_B("[01]"), TJ_B("[1.]"), TJ_B("{\"a\":-}"),
        /* bare words and literals */
        TJ_B("tru"), TJ_B("true1"), TJ_B("nul"), TJ_B("nulll"), TJ_B("True"), TJ_B("FALSE"), TJ_B("undefined"),
        TJ_B("abc"), TJ_B("[t]"), TJ_B("{\"a\":nil}"),
        /* single quotes */
        TJ_B("'a'"), TJ_B("{'a':1}"), TJ_B("[\"a']"),
        /* control characters in strings */
        TJ_B("\"a\x01" "b\""), TJ_B("\"\t\""), TJ_B("\"\n\""), TJ_B("\"\r\""), TJ_B("\"\x1f\""),
        /* escapes */
        TJ_B("\"\\x\""), TJ_B("\"\\a\""), TJ_B("\"\\'\""), TJ_B("\"\\U0041\""), TJ_B("\"\\0\""), TJ_B("\"\\u\""),
        TJ_B("\"\\u12\""), TJ_B("\"\\u123\""), TJ_B("\"\\u12g4\""), TJ_B("\"\\u-123\""), TJ_B("\"\\"),
        TJ_B("\"\\\""), TJ_B("\"\\u00"),
        /* surrogates */
        TJ_B("\"\\ud800\""), TJ_B("\"\\udc00\""), TJ_B("\"\\udbff\""), TJ_B("\"\\udfff\""),
        TJ_B("\"\\ud800\\u0041\""), TJ_B("\"\\ud800x\""), TJ_B("\"\\ud800\\ud800\""), TJ_B("\"\\ud800\\n\""),
        TJ_B("\"\\udc00\\ud800\""), TJ_B("\"\\ud800\\\""), TJ_B("\"\\ud800\\u\""), TJ_B("\"\\ud800\\udc0\""),
        TJ_B("[\"\\ud83d\"]"),
        /* invalid UTF-8 */
        TJ_B("\"\xC0\x80\""), TJ_B("\"\xC1\xBF\""), TJ_B("\"\xE0\x80\x80\""), TJ_B("\"\xE0\x9F\xBF\""),
        TJ_B("\"\xF0\x80\x80\x80\""), TJ_B("\"\xF0\x8F\xBF\xBF\""), TJ_B("\"\xFF\""), TJ_B("\"\xFE\""),
        TJ_B("\"\x80\""), TJ_B("\"\xBF\""), TJ_B("\"\xC3\""), TJ_B("\"\xE2\x82\""), TJ_B("\"\xF0\x9F\x98\""),
        TJ_B("\"\xED\xA0\x80\""), TJ_B("\"\xED\xBF\xBF\""), TJ_B("\"\xF4\x90\x80\x80\""), TJ_B("\"\xF5\x80\x80\x80\""),
        TJ_B("\"\xF8\x88\x80\x80\x80\""), TJ_B("\"\xC3\x28\""), TJ_B("\"\xE2\x28\xA1\""), TJ_B("\"\xC3"),
        TJ_B("\"\xF0\x9F\x98"), TJ_B("{\"\xFF\":1}"), TJ_B("[1]\xC3\xA9"), TJ_B("\xC3\xA9"),
        /* trailing garbage */
        TJ_B("1 2"), TJ_B("{}{}"), TJ_B("[1]]"), TJ_B("{}}"), TJ_B("{}x"), TJ_B("null,"), TJ_B("\"a\"\"b\""),
        TJ_B("1 x"), TJ_B("[] ,"), TJ_B("0 0"), TJ_B("truefalse"),
        /* unclosed and mismatched containers */
        TJ_B("["), TJ_B("{"), TJ_B("[1"), TJ_B("{\"a\":1"), TJ_B("[[]"), TJ_B("{\"a\":"), TJ_B("{\"a\""),
        TJ_B("[1,"), TJ_B("]"), TJ_B("}"), TJ_B("[}"), TJ_B("{]"), TJ_B("[1}"), TJ_B("{\"a\":1]"), TJ_B("\"abc"),
        TJ_B("[\"abc]"),
        /* object syntax */
        TJ_B("{\"a\"}"), TJ_B("{1:2}"), TJ_B("{\"a\" 1}"), TJ_B("{\"a\"::1}"), TJ_B("{null:1}"),
        TJ_B("{\"a\":1:2}"), TJ_B("{a:1}"), TJ_B("{\"a\",1}"), TJ_B("{[]:1}"), TJ_B("{:1}"), TJ_B("[\"a\":1]"),
        /* NUL bytes */
        TJ_B("\0"), TJ_B("1\0"), TJ_B("\0 1"), TJ_B("[1,\0 2]"), TJ_B("\"a\0b\""), TJ_B("[\0]"), TJ_B("{\"a\0\":1}"),
        TJ_B("tr\0ue"),
#undef TJ_B
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = tj_rc(bad[i].s, bad[i].n, NULL, __LINE__);
        if (rc != KCTL_ERR_PROTO) {
            char shown[64];
            size_t k, m = 0;
            for (k = 0; k < bad[i].n && m + 5 < sizeof shown; k++) {
                unsigned char ch = (unsigned char)bad[i].s[k];
                if (ch >= 0x20 && ch < 0x7f) shown[m++] = (char)ch;
                else m += (size_t)sprintf(shown + m, "\\x%02X", ch);
            }
            shown[m] = 0;
            kt_fail(__FILE__, __LINE__, "invalid case %u <%s>: rc %d, want PROTO (%d)", (unsigned)i, shown, rc,
                    KCTL_ERR_PROTO);
        }
    }
}

/* ------------------------------------------------------------- limits */

/* depth nested arrays "[[...]]", or objects {"a":{"a":...}} when obj. */
static char *tj_nest(uint32_t depth, int obj, size_t *n) {
    size_t cap = (size_t)depth * 6 + 8, k = 0;
    char *s = (char *)malloc(cap);
    uint32_t i;
    for (i = 0; i < depth; i++) {
        if (obj && i > 0) { memcpy(s + k, "\"a\":", 4); k += 4; }
        s[k++] = obj ? '{' : '[';
    }
    for (i = 0; i < depth; i++) s[k++] = obj ? '}' : ']';
    s[k] = 0;
    *n = k;
    return s;
}

static void tj_parse_depth_limit(void) {
    size_t n;
    char *s;
    kctl_json_limits lim;
    tj_doc d;

    s = tj_nest(64, 0, &n);
    KT_EQ_INT(tj_open_n(&d, s, n, NULL, __LINE__), KCTL_OK);
    KT_EQ_U64(d.j.ntoks, 64);
    if (d.rc == KCTL_OK) KT_EQ_U64(d.toks[0].skip, 64);
    tj_close(&d);
    free(s);
    s = tj_nest(65, 0, &n);
    KT_EQ_INT(tj_rc(s, n, NULL, __LINE__), KCTL_ERR_TOO_LARGE);
    free(s);
    s = tj_nest(64, 1, &n);
    KT_EQ_INT(tj_rc(s, n, NULL, __LINE__), KCTL_OK);
    free(s);
    s = tj_nest(65, 1, &n);
    KT_EQ_INT(tj_rc(s, n, NULL, __LINE__), KCTL_ERR_TOO_LARGE);
    free(s);
    /* a scalar inside the 64th level is fine */
    s = tj_nest(64, 0, &n);
    {
        char *t = (char *)malloc(n + 2);
        memcpy(t, s, 64);
        t[64] = '1';
        memcpy(t + 65, s + 64, 64);
        KT_EQ_INT(tj_rc(t, n + 1, NULL, __LINE__), KCTL_OK);
        free(t);
    }
    free(s);
    /* far too deep: rejected, no stack overflow */
    s = tj_nest(100000, 0, &n);
    KT_EQ_INT(tj_rc(s, n, NULL, __LINE__), KCTL_ERR_TOO_LARGE);
    free(s);

    memset(&lim, 0, sizeof lim);
    lim.max_depth = 3;
    KT_EQ_INT(TJ_RC("[[[1]]]", &lim), KCTL_OK);
    KT_EQ_INT(TJ_RC("[[[[1]]]]", &lim), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(TJ_RC("{\"a\":[{}]}", &lim), KCTL_OK);
    KT_EQ_INT(TJ_RC("{\"a\":[{\"b\":[]}]}", &lim), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(TJ_RC("[[1],[2],{\"a\":[3]}]", &lim), KCTL_OK);
    KT_EQ_INT(TJ_RC("1", &lim), KCTL_OK);
    lim.max_depth = 1;
    KT_EQ_INT(TJ_RC("[1,2]", &lim), KCTL_OK);
    KT_EQ_INT(TJ_RC("[[]]", &lim), KCTL_ERR_TOO_LARGE);
    /* a limit above the default */
    lim.max_depth = 100;
    s = tj_nest(100, 0, &n);
    KT_EQ_INT(tj_rc(s, n, &lim, __LINE__), KCTL_OK);
    free(s);
    s = tj_nest(101, 0, &n);
    KT_EQ_INT(tj_rc(s, n, &lim, __LINE__), KCTL_ERR_TOO_LARGE);
    free(s);
}

static void tj_parse_size_limit(void) {
    kctl_json_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_bytes = 5;
    KT_EQ_INT(TJ_RC("[1,2]", &lim), KCTL_OK);
    KT_EQ_INT(TJ_RC("[1, 2]", &lim), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(TJ_RC("\"abcdef\"", &lim), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(TJ_RC("1", &lim), KCTL_OK);
    lim.max_bytes = 0; /* the default: 64 MiB */
    KT_EQ_INT(TJ_RC("[1, 2]", &lim), KCTL_OK);
}

/* ------------------------------------------------------------ strings */

static void tj_string_escapes(void) {
    static const char text[] =
        "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac\\ud83d\\ude00\", \"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\","
        " \"a\\u0000b\", \"\", \"\\u00E9\\uD83D\\uDE00\", \"\\u0080\\u07ff\\u0800\\uffff\\udbff\\udfff\", \"plain\"]";
    static const char want0[] = "\"\\/\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
    static const char want5[] = "\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF4\x8F\xBF\xBF";
    tj_doc d;
    char buf[64];
    size_t len;
    uint32_t v;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
    v = kctl_json_element(&d.j, 0, 0);
    KT_EQ_INT(kctl_json_string(&d.j, v, buf, sizeof buf, &len), KCTL_OK);
    KT_EQ_U64(len, sizeof want0 - 1);
    KT_CHECK(memcmp(buf, want0, sizeof want0) == 0); /* NUL included */
    KT_EQ_INT(d.toks[v].escaped, 1);
    /* raw UTF-8 passes through */
    v = kctl_json_element(&d.j, 0, 1);
    KT_EQ_INT(kctl_json_string(&d.j, v, buf, sizeof buf, &len), KCTL_OK);
    KT_EQ_U64(len, 9);
    KT_EQ_STR(buf, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    KT_EQ_INT(d.toks[v].escaped, 0);
    /* \u0000 is a byte of the string; the length says so */
    v = kctl_json_element(&d.j, 0, 2);
    memset(buf, 'x', sizeof buf);
    KT_EQ_INT(kctl_json_string(&d.j, v, buf, sizeof buf, &len), KCTL_OK);
    KT_EQ_U64(len, 3);
    KT_CHECK(memcmp(buf, "a\0b\0", 4) == 0);
    KT_CHECK(!kctl_json_string_eq(&d.j, v, "a"));
    KT_CHECK(!kctl_json_string_eq(&d.j, v, "ab"));
    /* empty */
    v = kctl_json_element(&d.j, 0, 3);
    KT_EQ_INT(kctl_json_string(&d.j, v, buf, 1, &len), KCTL_OK);
    KT_EQ_U64(len, 0);
    KT_EQ_STR(buf, "");
    KT_EQ_INT(kctl_json_string(&d.j, v, buf, 0, &len), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(len, 0);
    /* upper-case hex */
    v = kctl_json_element(&d.j, 0, 4);
    KT_EQ_STR(tj_str(&d.j, v), "\xC3\xA9\xF0\x9F\x98\x80");
    /* boundaries of each UTF-8 length */
    v = kctl_json_element(&d.j, 0, 5);
    KT_EQ_STR(tj_str(&d.j, v), want5);
    /* len may be NULL */
    v = kctl_json_element(&d.j, 0, 6);
    KT_EQ_INT(kctl_json_string(&d.j, v, buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "plain");
    tj_close(&d);
}

/* The string scan at every position and alignment: a special byte (the
   closing quote, an escape, a control byte, UTF-8 good and bad) after 0 to
   24 plain ones, the string starting at 8 alignments, more text after it
   (the parser reads 8 bytes at a time where it can: what it skips must
   hold nothing but plain bytes). */
static void tj_string_scan_every_position(void) {
    static const struct { const char *tail; int rc; uint32_t extra; int escaped; } kinds[] = {
        { "", KCTL_OK, 0, 0 },           { "\\n", KCTL_OK, 2, 1 },        { "\\u00e9", KCTL_OK, 6, 1 },
        { "\x7f", KCTL_OK, 1, 0 },       { "\xC3\xA9", KCTL_OK, 2, 0 },    { "\xF0\x9F\x98\x80", KCTL_OK, 4, 0 },
        { "\x01", KCTL_ERR_PROTO, 0, 0 }, { "\x1f", KCTL_ERR_PROTO, 0, 0 }, { "\t", KCTL_ERR_PROTO, 0, 0 },
        { "\\q", KCTL_ERR_PROTO, 0, 0 }, { "\xC3", KCTL_ERR_PROTO, 0, 0 }, { "\xFF", KCTL_ERR_PROTO, 0, 0 },
        { "\xED\xA0\x80", KCTL_ERR_PROTO, 0, 0 } /* a surrogate in UTF-8 */
    };
    char doc[96];
    kctl_json_tok toks[4];
    kctl_json j;
    uint32_t off, len, k, i, n, bad = 0;
    for (off = 0; off < 8; off++)
        for (len = 0; len <= 24; len++)
            for (k = 0; k <= sizeof kinds / sizeof kinds[0]; k++) {
                bool cut = k == sizeof kinds / sizeof kinds[0]; /* no closing quote: the text ends in the string */
                int want = cut ? KCTL_ERR_PROTO : kinds[k].rc, rc;
                n = 0;
                doc[n++] = '[';
                for (i = 0; i < off; i++) doc[n++] = ' ';
                doc[n++] = '"';
                for (i = 0; i < len; i++) { /* every plain byte in turn, 0x20..0x7e but " and \ */
                    char c = (char)(0x20 + (i * 7 + off + k) % 95);
                    doc[n++] = c == '"' || c == '\\' ? 'q' : c;
                }
                if (!cut) {
                    memcpy(doc + n, kinds[k].tail, strlen(kinds[k].tail));
                    n += (uint32_t)strlen(kinds[k].tail);
                    memcpy(doc + n, "\",\"0123456789abcdef\"]", 21);
                    n += 21;
                }
                memset(toks, 0, sizeof toks);
                rc = kctl_json_parse(doc, n, toks, 4, NULL, &j);
                if (rc != want) {
                    if (bad++ < 5) kt_fail(__FILE__, __LINE__, "off %u len %u kind %u: %d, want %d", off, len, k, rc, want);
                    continue;
                }
                if (rc != KCTL_OK) continue;
                KT_EQ_U64(j.ntoks, 3);
                KT_EQ_U64(toks[1].start, 2 + off);
                KT_EQ_U64(toks[1].end, 2 + off + len + kinds[k].extra);
                KT_EQ_INT(toks[1].escaped, kinds[k].escaped);
                KT_EQ_U64(toks[2].end - toks[2].start, 16);
            }
    KT_EQ_U64(bad, 0);
}

static void tj_string_surrogate_pair(void) {
    tj_doc d;
    char buf[8];
    size_t len = 0;
    KT_EQ_INT(TJ_OPEN(&d, "\"\\ud83d\\ude00\""), KCTL_OK);
    KT_EQ_INT(kctl_json_string(&d.j, 0, buf, sizeof buf, &len), KCTL_OK);
    KT_EQ_U64(len, 4);
    KT_CHECK(memcmp(buf, "\xF0\x9F\x98\x80", 5) == 0);
    KT_CHECK(kctl_json_string_eq(&d.j, 0, "\xF0\x9F\x98\x80"));
    tj_close(&d);
}

static void tj_string_too_large(void) {
    tj_doc d;
    char buf[32];
    size_t len;
    KT_EQ_INT(TJ_OPEN(&d, "[\"hello\", \"\\u00e9\\n\\ud83d\\ude00x\", 5, {}]"), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
    len = 0;
    KT_EQ_INT(kctl_json_string(&d.j, 1, buf, 5, &len), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(len, 5);
    len = 0;
    KT_EQ_INT(kctl_json_string(&d.j, 1, buf, 0, &len), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(len, 5);
    len = 0;
    KT_EQ_INT(kctl_json_string(&d.j, 1, buf, 1, &len), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(len, 5);
    len = 0;
    KT_EQ_INT(kctl_json_string(&d.j, 1, buf, 6, &len), KCTL_OK);
    KT_EQ_U64(len, 5);
    KT_EQ_STR(buf, "hello");
    /* the needed length is the unescaped one: 2 + 1 + 4 + 1 = 8 */
    len = 0;
    KT_EQ_INT(kctl_json_string(&d.j, 2, buf, 8, &len), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(len, 8);
    KT_EQ_INT(kctl_json_string(&d.j, 2, buf, 9, &len), KCTL_OK);
    KT_EQ_U64(len, 8);
    KT_EQ_STR(buf, "\xC3\xA9\n\xF0\x9F\x98\x80x");
    /* not strings */
    KT_EQ_INT(kctl_json_string(&d.j, 0, buf, sizeof buf, &len), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_string(&d.j, 3, buf, sizeof buf, &len), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_string(&d.j, 4, buf, sizeof buf, &len), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_string(&d.j, KCTL_JSON_NONE, buf, sizeof buf, &len), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_string(&d.j, 99, buf, sizeof buf, &len), KCTL_ERR_INVALID_ARG);
    tj_close(&d);
}

static void tj_string_eq(void) {
    tj_doc d;
    KT_EQ_INT(TJ_OPEN(&d, "[\"\\u0041\", \"\", \"a\\/b\", \"\\u00e9\", 1, \"abc\"]"), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
    KT_CHECK(kctl_json_string_eq(&d.j, 1, "A"));
    KT_CHECK(!kctl_json_string_eq(&d.j, 1, "a"));
    KT_CHECK(!kctl_json_string_eq(&d.j, 1, "AB"));
    KT_CHECK(!kctl_json_string_eq(&d.j, 1, ""));
    KT_CHECK(!kctl_json_string_eq(&d.j, 1, "\\u0041"));
    KT_CHECK(kctl_json_string_eq(&d.j, 2, ""));
    KT_CHECK(!kctl_json_string_eq(&d.j, 2, "x"));
    KT_CHECK(kctl_json_string_eq(&d.j, 3, "a/b"));
    KT_CHECK(kctl_json_string_eq(&d.j, 4, "\xC3\xA9"));
    KT_CHECK(!kctl_json_string_eq(&d.j, 5, "1"));    /* a number is not a string */
    KT_CHECK(kctl_json_string_eq(&d.j, 6, "abc"));
    KT_CHECK(!kctl_json_string_eq(&d.j, 6, "ab"));
    KT_CHECK(!kctl_json_string_eq(&d.j, 6, "abcd"));
    KT_CHECK(!kctl_json_string_eq(&d.j, 0, "abc"));  /* the array */
    KT_CHECK(!kctl_json_string_eq(&d.j, KCTL_JSON_NONE, ""));
    tj_close(&d);
}

/* ---------------------------------------------------- number getters */

static void tj_int64(void) {
    static const char text[] =
        "[0, -0, 9223372036854775807, -9223372036854775808, 9223372036854775808, -9223372036854775809,"
        " 1.0, 1e2, \"123\", \"-5\", \"12a\", \"\", true, null, 7587861231285799685, \"7587861231285799685\","
        " 99999999999999999999999, {\"a\":1}, [1], \"9223372036854775808\", 1E0, \"1.0\", \" 1\", \"-\", 42,"
        " \"-9223372036854775808\", -1, 0.5]";
    tj_doc d;
    int64_t x;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
#define TJ_EL(i) kctl_json_element(&d.j, 0, (i))
#define TJ_I64_OK(i, want) do { x = -7; KT_EQ_INT(kctl_json_int64(&d.j, TJ_EL(i), &x), KCTL_OK); \
    KT_CHECK(x == (want)); } while (0)
#define TJ_I64_ERR(i, err) KT_EQ_INT(kctl_json_int64(&d.j, TJ_EL(i), &x), (err))
    TJ_I64_OK(0, 0);
    TJ_I64_OK(1, 0);
    TJ_I64_OK(2, INT64_MAX);
    TJ_I64_OK(3, INT64_MIN);
    TJ_I64_ERR(4, KCTL_ERR_TOO_LARGE);
    TJ_I64_ERR(5, KCTL_ERR_TOO_LARGE);
    TJ_I64_ERR(6, KCTL_ERR_INVALID_ARG);  /* 1.0 is a number, not an integer */
    TJ_I64_ERR(7, KCTL_ERR_INVALID_ARG);  /* 1e2 */
    TJ_I64_OK(8, 123);                    /* etcd: int64 as a string */
    TJ_I64_OK(9, -5);
    TJ_I64_ERR(10, KCTL_ERR_INVALID_ARG); /* "12a" */
    TJ_I64_ERR(11, KCTL_ERR_INVALID_ARG); /* "" */
    TJ_I64_ERR(12, KCTL_ERR_INVALID_ARG); /* true */
    TJ_I64_ERR(13, KCTL_ERR_INVALID_ARG); /* null */
    TJ_I64_OK(14, INT64_C(7587861231285799685)); /* an etcd lease id, beyond 2^53 */
    TJ_I64_OK(15, INT64_C(7587861231285799685));
    TJ_I64_ERR(16, KCTL_ERR_TOO_LARGE);
    TJ_I64_ERR(17, KCTL_ERR_INVALID_ARG); /* object */
    TJ_I64_ERR(18, KCTL_ERR_INVALID_ARG); /* array */
    TJ_I64_ERR(19, KCTL_ERR_TOO_LARGE);   /* "9223372036854775808" */
    TJ_I64_ERR(20, KCTL_ERR_INVALID_ARG); /* 1E0 */
    TJ_I64_ERR(21, KCTL_ERR_INVALID_ARG); /* "1.0" */
    TJ_I64_ERR(22, KCTL_ERR_INVALID_ARG); /* " 1" */
    TJ_I64_ERR(23, KCTL_ERR_INVALID_ARG); /* "-" */
    TJ_I64_OK(24, 42);
    TJ_I64_OK(25, INT64_MIN);
    TJ_I64_OK(26, -1);
    TJ_I64_ERR(27, KCTL_ERR_INVALID_ARG); /* 0.5 */
    KT_EQ_INT(kctl_json_int64(&d.j, KCTL_JSON_NONE, &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_int64(&d.j, d.j.ntoks, &x), KCTL_ERR_INVALID_ARG);
#undef TJ_I64_OK
#undef TJ_I64_ERR
    tj_close(&d);
}

/* Negative integers are out of uint64's range: TOO_LARGE (asserted here). */
static void tj_uint64(void) {
    static const char text[] =
        "[0, 18446744073709551615, 18446744073709551616, -1, \"18446744073709551615\", 1.5, \"x\", true,"
        " -9223372036854775808, \"-1\", 7587861231285799685, 9223372036854775808, 1e1]";
    tj_doc d;
    uint64_t x;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
#define TJ_U64_OK(i, want) do { x = 7; KT_EQ_INT(kctl_json_uint64(&d.j, TJ_EL(i), &x), KCTL_OK); \
    KT_EQ_U64(x, (want)); } while (0)
#define TJ_U64_ERR(i, err) KT_EQ_INT(kctl_json_uint64(&d.j, TJ_EL(i), &x), (err))
    TJ_U64_OK(0, 0);
    TJ_U64_OK(1, UINT64_MAX);
    TJ_U64_ERR(2, KCTL_ERR_TOO_LARGE);
    TJ_U64_ERR(3, KCTL_ERR_TOO_LARGE);    /* negative: out of range */
    TJ_U64_OK(4, UINT64_MAX);
    TJ_U64_ERR(5, KCTL_ERR_INVALID_ARG);
    TJ_U64_ERR(6, KCTL_ERR_INVALID_ARG);
    TJ_U64_ERR(7, KCTL_ERR_INVALID_ARG);
    TJ_U64_ERR(8, KCTL_ERR_TOO_LARGE);
    TJ_U64_ERR(9, KCTL_ERR_TOO_LARGE);    /* "-1" */
    TJ_U64_OK(10, UINT64_C(7587861231285799685));
    TJ_U64_OK(11, UINT64_C(9223372036854775808));
    TJ_U64_ERR(12, KCTL_ERR_INVALID_ARG); /* 1e1 */
    KT_EQ_INT(kctl_json_uint64(&d.j, KCTL_JSON_NONE, &x), KCTL_ERR_INVALID_ARG);
#undef TJ_U64_OK
#undef TJ_U64_ERR
    tj_close(&d);
}

static void tj_double(void) {
    static const char text[] =
        "[1.5, -2.5e-3, 0.1, 5e-324, 1.7976931348623157e308, 9007199254740993, 0, -0, 1E2, \"1.5\", true,"
        " 123456789012345678901234567890, 2.2250738585072014e-308, 7587861231285799685, null, 1e-2]";
    tj_doc d;
    double x;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
#define TJ_D_OK(i, want) do { x = -99.0; KT_EQ_INT(kctl_json_double(&d.j, TJ_EL(i), &x), KCTL_OK); \
    if (x != (double)(want)) /* the cast rounds a literal x87 (i386) holds in long double */ \
        kt_fail(__FILE__, __LINE__, "element %d: %.17g != %.17g", (i), x, (double)(want)); } while (0)
    TJ_D_OK(0, 1.5);
    TJ_D_OK(1, -2.5e-3);
    TJ_D_OK(2, 0.1);
    TJ_D_OK(3, 4.9406564584124654e-324);
    TJ_D_OK(4, DBL_MAX);
    TJ_D_OK(5, 9007199254740992.0); /* nearest, ties to even */
    TJ_D_OK(6, 0.0);
    TJ_D_OK(7, 0.0);
    TJ_D_OK(8, 100.0);
    KT_EQ_INT(kctl_json_double(&d.j, TJ_EL(9), &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_double(&d.j, TJ_EL(10), &x), KCTL_ERR_INVALID_ARG);
    TJ_D_OK(11, 123456789012345678901234567890.0);
    TJ_D_OK(12, 2.2250738585072014e-308);
    TJ_D_OK(13, 7587861231285799685.0);
    KT_EQ_INT(kctl_json_double(&d.j, TJ_EL(14), &x), KCTL_ERR_INVALID_ARG);
    TJ_D_OK(15, 0.01);
    KT_EQ_INT(kctl_json_double(&d.j, 0, &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_double(&d.j, KCTL_JSON_NONE, &x), KCTL_ERR_INVALID_ARG);
#undef TJ_D_OK
    tj_close(&d);
}

/* "nearest" holds for long numbers too: 2^53 + 1 + a tiny bit rounds up to
   2^53 + 2, exactly 2^53 + 1 ties to even (2^53). */
static void tj_double_long_numbers(void) {
    static const struct { const char *s; double want; } cases[] = {
        { "9007199254740993", 9007199254740992.0 },
        { "9007199254740993.000000000001", 9007199254740994.0 },
        { "9007199254740993.0000000000000000000000000000000000000000000000001", 9007199254740994.0 },
        { "9007199254740992.9999999999999999999999999999999999999999999999999", 9007199254740992.0 },
        { "0.00000000000000000000000000000000000000000000000000000000000000000001", 1e-68 },
        { "1000000000000000000000000000000000000000000000000000000000000000000000", 1e69 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tj_doc d;
        double x = -1.0;
        if (TJ_OPEN(&d, cases[i].s) == KCTL_OK) {
            KT_EQ_INT(kctl_json_double(&d.j, 0, &x), KCTL_OK);
            if (x != cases[i].want)
                kt_fail(__FILE__, __LINE__, "double(%s) = %.17g, want %.17g", cases[i].s, x, cases[i].want);
        }
        tj_close(&d);
    }
}

static void tj_bool(void) {
    tj_doc d;
    bool b;
    KT_EQ_INT(TJ_OPEN(&d, "[true, false, null, \"true\", 1, 0]"), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
    b = false;
    KT_EQ_INT(kctl_json_bool(&d.j, TJ_EL(0), &b), KCTL_OK);
    KT_CHECK(b == true);
    b = true;
    KT_EQ_INT(kctl_json_bool(&d.j, TJ_EL(1), &b), KCTL_OK);
    KT_CHECK(b == false);
    KT_EQ_INT(kctl_json_bool(&d.j, TJ_EL(2), &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_bool(&d.j, TJ_EL(3), &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_bool(&d.j, TJ_EL(4), &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_bool(&d.j, TJ_EL(5), &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_bool(&d.j, 0, &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_bool(&d.j, KCTL_JSON_NONE, &b), KCTL_ERR_INVALID_ARG);
    tj_close(&d);
}
#undef TJ_EL

static void tj_raw(void) {
    static const char text[] = " {\"s\" : \"a\\\"b\" , \"n\": -1.5e3 , \"o\": { \"x\" : [ 1 ] } , \"t\":true} ";
    tj_doc d;
    const char *r = NULL;
    size_t n = 0;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
#define TJ_RAW(v, want) do { r = NULL; n = 0; KT_EQ_INT(kctl_json_raw(&d.j, (v), &r, &n), KCTL_OK); \
    KT_EQ_U64(n, strlen(want)); if (r && n == strlen(want)) KT_CHECK(memcmp(r, (want), n) == 0); } while (0)
    TJ_RAW(kctl_json_member(&d.j, 0, "s"), "\"a\\\"b\"");
    TJ_RAW(kctl_json_member(&d.j, 0, "n"), "-1.5e3");
    TJ_RAW(kctl_json_member(&d.j, 0, "o"), "{ \"x\" : [ 1 ] }");
    TJ_RAW(kctl_json_path(&d.j, 0, "o.x"), "[ 1 ]");
    TJ_RAW(kctl_json_member(&d.j, 0, "t"), "true");
    TJ_RAW(0, "{\"s\" : \"a\\\"b\" , \"n\": -1.5e3 , \"o\": { \"x\" : [ 1 ] } , \"t\":true}");
    TJ_RAW(1, "\"s\""); /* a member name token */
    KT_CHECK(r == d.text + 2);
#undef TJ_RAW
    KT_EQ_INT(kctl_json_raw(&d.j, KCTL_JSON_NONE, &r, &n), KCTL_ERR_INVALID_ARG);
    tj_close(&d);
}

/* ------------------------------------------------------------ lookups */

static void tj_member(void) {
    static const char text[] =
        "{\"a\\u0062\":1,\"x\":{\"ab\":2},\"dup\":1,\"dup\":2,\"dup\":3,\"\":4,\"a\\u0000b\":5,\"\\u00e9\":6,\"k\":null,"
        "\"arr\":[{\"ab\":7}],\"n\":8}";
    tj_doc d;
    uint32_t v, x;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
    KT_EQ_INT(tj_i64(&d.j, kctl_json_member(&d.j, 0, "ab")), 1); /* escaped name; not the nested ones */
    x = kctl_json_member(&d.j, 0, "x");
    KT_EQ_INT(kctl_json_type_of(&d.j, x), KCTL_JSON_OBJECT);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_member(&d.j, x, "ab")), 2);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_member(&d.j, 0, "dup")), 3); /* the last wins */
    KT_EQ_INT(tj_i64(&d.j, kctl_json_member(&d.j, 0, "")), 4);
    KT_EQ_U64(kctl_json_member(&d.j, 0, "a"), KCTL_JSON_NONE);   /* not "a\u0000b" */
    KT_EQ_INT(tj_i64(&d.j, kctl_json_member(&d.j, 0, "\xC3\xA9")), 6);
    v = kctl_json_member(&d.j, 0, "k");
    KT_CHECK(v != KCTL_JSON_NONE);
    KT_EQ_INT(kctl_json_type_of(&d.j, v), KCTL_JSON_NULL);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_member(&d.j, 0, "n")), 8); /* after a nested array of objects */
    KT_EQ_U64(kctl_json_member(&d.j, 0, "missing"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_member(&d.j, 0, "AB"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_member(&d.j, 0, "a\\u0062"), KCTL_JSON_NONE); /* compared unescaped */
    /* not an object */
    KT_EQ_U64(kctl_json_member(&d.j, kctl_json_member(&d.j, 0, "arr"), "ab"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_member(&d.j, kctl_json_member(&d.j, 0, "n"), "ab"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_member(&d.j, KCTL_JSON_NONE, "ab"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_member(&d.j, d.j.ntoks + 3, "ab"), KCTL_JSON_NONE);
    KT_EQ_INT(kctl_json_type_of(&d.j, KCTL_JSON_NONE), KCTL_JSON_INVALID);
    KT_EQ_INT(kctl_json_type_of(&d.j, d.j.ntoks), KCTL_JSON_INVALID);
    tj_close(&d);

    /* skips over nested values of every kind */
    KT_EQ_INT(TJ_OPEN(&d, "{\"a\":{\"b\":{\"c\":1}},\"c\":[[{\"b\":0}],{}],\"b\":2}"), KCTL_OK);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_member(&d.j, 0, "b")), 2);
    tj_close(&d);
}

static void tj_element(void) {
    tj_doc d;
    uint32_t v;
    KT_EQ_INT(TJ_OPEN(&d, "[10, [20, 21], {\"a\": 30, \"b\": [1,2,3]}, 40]"), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
    KT_EQ_INT(tj_i64(&d.j, kctl_json_element(&d.j, 0, 0)), 10);
    v = kctl_json_element(&d.j, 0, 1);
    KT_EQ_INT(kctl_json_type_of(&d.j, v), KCTL_JSON_ARRAY);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_element(&d.j, v, 1)), 21);
    KT_EQ_U64(kctl_json_element(&d.j, v, 2), KCTL_JSON_NONE);
    v = kctl_json_element(&d.j, 0, 2);
    KT_EQ_INT(kctl_json_type_of(&d.j, v), KCTL_JSON_OBJECT);
    KT_EQ_U64(kctl_json_element(&d.j, v, 0), KCTL_JSON_NONE); /* an object is not an array */
    KT_EQ_INT(tj_i64(&d.j, kctl_json_element(&d.j, 0, 3)), 40);
    KT_EQ_U64(kctl_json_element(&d.j, 0, 4), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_element(&d.j, 0, UINT32_MAX), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_element(&d.j, 1, 0), KCTL_JSON_NONE);  /* a number */
    KT_EQ_U64(kctl_json_element(&d.j, KCTL_JSON_NONE, 0), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_element(&d.j, d.j.ntoks, 0), KCTL_JSON_NONE);
    tj_close(&d);
    KT_EQ_INT(TJ_OPEN(&d, "[]"), KCTL_OK);
    KT_EQ_U64(kctl_json_element(&d.j, 0, 0), KCTL_JSON_NONE);
    tj_close(&d);
}

static void tj_path(void) {
    static const char text[] =
        "{\"spec\":{\"replicas\":3},\"items\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
        "\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"web\",\"app\":\"x\",\"a[b]\":\"y\"},\"name\":\"n\"},"
        "\"m\":[[1,2],[3,4]],\"s\":\"str\",\"a\":{\"\":{\"b\":1}}}";
    static const char *const malformed[] = {
        "a..b", "a[", "a[x]", "[-1]", "a.", "items[", "items[1", "items]", "items[]", "items[-1]",
        "metadata.labels[\"app", "metadata.labels[\"app\"", "items[1x]", "items[ 1]",
    };
    static const char *const nowhere[] = {
        "spec.nope", "spec.replicas.x", "s[0]", "s.x", "spec[0]", "items.name", "items[2]", "items[1].name.x",
        "items[99999999999999999999]", "nope", "m[2][0]", "m[0][2]", "metadata.labels[\"app.kubernetes.io\"]",
    };
    tj_doc d;
    uint32_t spec;
    size_t i;
    KT_EQ_INT(TJ_OPEN(&d, text), KCTL_OK);
    if (d.rc != KCTL_OK) { tj_close(&d); return; }
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "spec.replicas")), 3);
    KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "items[1].name")), "b");
    KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "items[0].name")), "a");
    KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "metadata.labels[\"app.kubernetes.io/name\"]")), "web");
    KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "metadata.labels.app")), "x");
    KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "metadata.labels[\"a[b]\"]")), "y");
    KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "metadata.name")), "n");
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "m[1][0]")), 3);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "m[0][1]")), 2);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "[\"spec\"].replicas")), 3);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "a[\"\"].b")), 1);
    KT_EQ_U64(kctl_json_path(&d.j, 0, ""), 0);
    spec = kctl_json_member(&d.j, 0, "spec");
    KT_EQ_U64(kctl_json_path(&d.j, spec, ""), spec);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, spec, "replicas")), 3);
    KT_EQ_U64(kctl_json_path(&d.j, kctl_json_path(&d.j, 0, "items[1]"), "name"), kctl_json_path(&d.j, 0, "items[1].name"));
    for (i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
        if (kctl_json_path(&d.j, 0, malformed[i]) != KCTL_JSON_NONE)
            kt_fail(__FILE__, __LINE__, "malformed path <%s> found a value", malformed[i]);
    for (i = 0; i < sizeof nowhere / sizeof nowhere[0]; i++)
        if (kctl_json_path(&d.j, 0, nowhere[i]) != KCTL_JSON_NONE)
            kt_fail(__FILE__, __LINE__, "path <%s> found a value", nowhere[i]);
    KT_EQ_U64(kctl_json_path(&d.j, KCTL_JSON_NONE, "spec"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_path(&d.j, KCTL_JSON_NONE, ""), KCTL_JSON_NONE);
    tj_close(&d);

    /* the longest Kubernetes label key: a 253-byte DNS prefix, '/', a 63-byte name */
    {
        char key[400], doc[512], path[512];
        memset(key, 'p', 253);
        key[253] = '/';
        memset(key + 254, 'n', 63);
        key[317] = 0;
        sprintf(doc, "{\"metadata\":{\"labels\":{\"%s\":\"v\",\"b\":1}}}", key);
        sprintf(path, "metadata.labels[\"%s\"]", key);
        KT_EQ_INT(TJ_OPEN(&d, doc), KCTL_OK);
        KT_CHECK(kctl_json_member(&d.j, kctl_json_path(&d.j, 0, "metadata.labels"), key) != KCTL_JSON_NONE);
        KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, path)), "v");
        tj_close(&d);
    }
    /* a root array */
    KT_EQ_INT(TJ_OPEN(&d, "[5, {\"k\": [6, 7]}]"), KCTL_OK);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "[0]")), 5);
    KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "[1].k[1]")), 7);
    KT_EQ_U64(kctl_json_path(&d.j, 0, "[2]"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_path(&d.j, 0, "k"), KCTL_JSON_NONE);
    tj_close(&d);
    /* a scalar root */
    KT_EQ_INT(TJ_OPEN(&d, "5"), KCTL_OK);
    KT_EQ_U64(kctl_json_path(&d.j, 0, ""), 0);
    KT_EQ_U64(kctl_json_path(&d.j, 0, "a"), KCTL_JSON_NONE);
    KT_EQ_U64(kctl_json_path(&d.j, 0, "[0]"), KCTL_JSON_NONE);
    tj_close(&d);
}

/* ----------------------------------------------------------- equality */

static void tj_equal_table(void) {
    static const struct { const char *a, *b; int eq; } cases[] = {
        /* numbers by exact decimal value */
        { "1", "1.0", 1 }, { "1", "1e0", 1 }, { "1", "10e-1", 1 }, { "1", "0.1e1", 1 }, { "1.0", "1e0", 1 },
        { "1e0", "10e-1", 1 }, { "10e-1", "0.1e1", 1 }, { "1", "1E+0", 1 }, { "100", "1e2", 1 },
        { "-0", "0", 1 }, { "0", "0.0", 1 }, { "0", "0e5", 1 }, { "-0.0", "0e-7", 1 }, { "1e400", "1e400", 1 },
        { "1e400", "10e399", 1 }, { "1e400", "1e401", 0 }, { "1.5", "15e-1", 1 }, { "0.000001", "1e-6", 1 },
        { "123.4500", "1.2345e2", 1 }, { "-5", "-5.0", 1 }, { "9223372036854775808", "9.223372036854775808e18", 1 },
        { "1e-400", "0.1e-399", 1 }, { "1e-400", "0", 0 }, { "1e-400", "1e-401", 0 },
        { "9007199254740993", "9007199254740992", 0 }, { "9223372036854775808", "9223372036854775809", 0 },
        { "18446744073709551616", "18446744073709551617", 0 }, { "1", "2", 0 }, { "1", "10", 0 }, { "12", "21", 0 },
        { "1.5", "0.15", 0 }, { "0.1", "0.10000000000000001", 0 }, { "-1", "1", 0 }, { "1e2", "1e-2", 0 },
        { "1e99999999999999999999", "1e99999999999999999999", 1 },
        { "1e99999999999999999999", "1e99999999999999999998", 0 }, { "0e99999999999999999999", "0", 1 },
        { "1e11529215046068469760", "1e11529215046068469761", 0 }, /* exponents beyond 2^60 */
        { "1e-11529215046068469760", "1e-11529215046068469761", 0 },
        { "1e11529215046068469760", "10e11529215046068469759", 1 },
        { "1e-11529215046068469760", "10e-11529215046068469761", 1 },
        { "0.001e100000000000000000003", "1e100000000000000000000", 1 },
        { "1e100000000000000000000", "1e-100000000000000000000", 0 },
        { "1e18446744073709551616", "1e18446744073709551615", 0 },
        { "1e9223372036854775807", "10e9223372036854775806", 1 },
        { "1e-9223372036854775808", "0.1e-9223372036854775807", 1 },
        { "1e+0000000000000000000000000005", "100000", 1 },
        { "-2.5e-00000000000000000000000000000000001", "-0.25", 1 },
        { "123e99999999999999999999999999999999999999", "1.23e100000000000000000000000000000000000001", 1 },
        { "123e99999999999999999999999999999999999999", "1.23e100000000000000000000000000000000000000", 0 },
        { "0.0000000000000000000000000000001", "1e-31", 1 },
        { "12345678901234567890123456789012345678901", "1.2345678901234567890123456789012345678901e40", 1 },
        { "12345678901234567890123456789012345678901", "12345678901234567890123456789012345678902", 0 },
        /* strings once unescaped */
        { "\"\\u0041\"", "\"A\"", 1 }, { "\"\\/\"", "\"/\"", 1 }, { "\"\\u00e9\"", "\"\xC3\xA9\"", 1 },
        { "\"\\ud83d\\ude00\"", "\"\xF0\x9F\x98\x80\"", 1 }, { "\"a\"", "\"A\"", 0 }, { "\"a\\u0000\"", "\"a\"", 0 },
        { "\"ab\"", "\"a\"", 0 }, { "\"\"", "\"\"", 1 }, { "\"\\n\"", "\"\\u000a\"", 1 },
        /* different types */
        { "1", "\"1\"", 0 }, { "true", "1", 0 }, { "null", "false", 0 }, { "[]", "{}", 0 }, { "\"\"", "null", 0 },
        { "true", "false", 0 }, { "0", "false", 0 }, { "0", "null", 0 }, { "true", "true", 1 },
        { "false", "false", 1 }, { "null", "null", 1 }, { "\"true\"", "true", 0 }, { "[1]", "1", 0 },
        /* arrays: order matters */
        { "[1,2]", "[2,1]", 0 }, { "[1]", "[1,1]", 0 }, { "[]", "[null]", 0 }, { "[]", "[ ]", 1 },
        { "[1,[2,{}]]", "[1.0,[2e0,{}]]", 1 }, { "[[1,2],[3]]", "[[1],[2,3]]", 0 },
        /* objects: member order ignored; the last of repeated names counts */
        { "{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", 1 }, { "{\"a\\u0062\":1}", "{\"ab\":1}", 1 },
        { "{\"a\":1,\"a\":2}", "{\"a\":2}", 1 }, { "{\"a\":1,\"a\":2}", "{\"a\":1}", 0 },
        { "{\"a\":1,\"b\":2}", "{\"a\":1,\"a\":1}", 0 }, { "{\"a\":1,\"a\":1}", "{\"a\":1,\"b\":1}", 0 },
        { "{\"a\":1,\"b\":1,\"a\":2}", "{\"b\":1,\"a\":2}", 1 }, { "{\"a\":1}", "{\"a\":1,\"b\":2}", 0 },
        { "{\"a\":1}", "{\"b\":1}", 0 }, { "{\"a\":null}", "{}", 0 }, { "{}", "{ }", 1 },
        { "{\"a\":{\"x\":1,\"y\":2}}", "{\"a\":{\"y\":2,\"x\":1.0}}", 1 },
        { "{\"a\":{\"x\":1,\"y\":2}}", "{\"a\":{\"y\":2,\"x\":2}}", 0 },
        { "{\"a\":[1,{\"b\":null}],\"c\":\"d\"}", "{\"c\":\"\\u0064\",\"a\":[1e0,{\"b\":null}]}", 1 },
        { "{\"a\":2,\"a\":1,\"a\":2}", "{\"a\":2}", 1 },
        /* the same names in the same order (compared side by side): a
           value under a name repeated later in both does not count */
        { "{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":3}", 0 }, { "{\"a\":1,\"a\":2}", "{\"a\":3,\"a\":2}", 1 },
        { "{\"a\":1,\"a\":2}", "{\"a\":1,\"a\":3}", 0 }, { "{\"a\":1,\"b\":2,\"a\":3}", "{\"a\":0,\"b\":2,\"a\":3e0}", 1 },
        { "{\"a\":1,\"b\":2,\"a\":3}", "{\"a\":1,\"b\":0,\"a\":3}", 0 },
        { "{\"x\":1,\"s\":{\"p\":[1],\"p\":2}}", "{\"x\":1.0,\"s\":{\"p\":{},\"p\":2}}", 1 },
        { "{\"x\":1,\"s\":{\"p\":1,\"q\":2}}", "{\"x\":1,\"s\":{\"q\":2,\"p\":1}}", 1 }, /* inner order differs */
        { "{\"a\":{\"b\":1},\"c\":1}", "{\"a\":{\"b\":1},\"d\":1}", 0 },
        { "{\"\\u0061\":1,\"b\":2}", "{\"a\":1,\"b\":2}", 1 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tj_doc a, b;
        bool ab, ba;
        KT_EQ_INT(TJ_OPEN(&a, cases[i].a), KCTL_OK);
        KT_EQ_INT(TJ_OPEN(&b, cases[i].b), KCTL_OK);
        if (a.rc == KCTL_OK && b.rc == KCTL_OK) {
            ab = kctl_json_equal(&a.j, 0, &b.j, 0);
            ba = kctl_json_equal(&b.j, 0, &a.j, 0);
            if (ab != (cases[i].eq != 0) || ba != (cases[i].eq != 0))
                kt_fail(__FILE__, __LINE__, "equal(%s, %s): %d/%d, want %d", cases[i].a, cases[i].b, (int)ab, (int)ba,
                        cases[i].eq);
            if (!kctl_json_equal(&a.j, 0, &a.j, 0) || !kctl_json_equal(&b.j, 0, &b.j, 0))
                kt_fail(__FILE__, __LINE__, "equal(x, x) false for %s or %s", cases[i].a, cases[i].b);
        }
        tj_close(&a);
        tj_close(&b);
    }
}

static void tj_equal_none_and_subvalues(void) {
    tj_doc a, b;
    KT_EQ_INT(TJ_OPEN(&a, "{\"x\":{\"k\":[1,2]},\"y\":\"s\"}"), KCTL_OK);
    KT_EQ_INT(TJ_OPEN(&b, "[\"s\", {\"k\":[1.0,2e0]}]"), KCTL_OK);
    if (a.rc == KCTL_OK && b.rc == KCTL_OK) {
        KT_CHECK(kctl_json_equal(&a.j, KCTL_JSON_NONE, &b.j, KCTL_JSON_NONE));
        KT_CHECK(!kctl_json_equal(&a.j, 0, &b.j, KCTL_JSON_NONE));
        KT_CHECK(!kctl_json_equal(&a.j, KCTL_JSON_NONE, &b.j, 0));
        KT_CHECK(kctl_json_equal(&a.j, kctl_json_member(&a.j, 0, "x"), &b.j, kctl_json_element(&b.j, 0, 1)));
        KT_CHECK(kctl_json_equal(&a.j, kctl_json_member(&a.j, 0, "y"), &b.j, kctl_json_element(&b.j, 0, 0)));
        KT_CHECK(!kctl_json_equal(&a.j, 0, &b.j, 0));
        KT_CHECK(kctl_json_equal(&a.j, kctl_json_member(&a.j, 0, "y"), &a.j, kctl_json_member(&a.j, 0, "y")));
        /* a member name token compares as a string */
        KT_CHECK(kctl_json_equal(&a.j, 3, &b.j, kctl_json_path(&b.j, 0, "[1]") + 1)); /* "k" and "k" */
        KT_CHECK(!kctl_json_equal(&a.j, 1, &b.j, kctl_json_path(&b.j, 0, "[1]") + 1)); /* "x" and "k" */
    }
    tj_close(&a);
    tj_close(&b);
}

/* ------------------------------------------------------------- writer */

static void tj_write_all_kinds(kctl_jw *w) {
    kctl_jw_object_begin(w);
    kctl_jw_key(w, "s");
    kctl_jw_string(w, "x");
    kctl_jw_key(w, "i");
    kctl_jw_int64(w, -42);
    kctl_jw_key(w, "u");
    kctl_jw_uint64(w, 42);
    kctl_jw_key(w, "d");
    kctl_jw_double(w, 2.5);
    kctl_jw_key(w, "t");
    kctl_jw_bool(w, true);
    kctl_jw_key(w, "f");
    kctl_jw_bool(w, false);
    kctl_jw_key(w, "n");
    kctl_jw_null(w);
    kctl_jw_key(w, "a");
    kctl_jw_array_begin(w);
    kctl_jw_int64(w, 1);
    kctl_jw_array_begin(w);
    kctl_jw_array_end(w);
    kctl_jw_object_begin(w);
    kctl_jw_object_end(w);
    kctl_jw_string_n(w, "abc", 2);
    kctl_jw_array_end(w);
    kctl_jw_key(w, "r");
    kctl_jw_raw(w, "[1, 2]", 6);
    kctl_jw_key(w, "a\"b");
    kctl_jw_object_begin(w);
    kctl_jw_key(w, "");
    kctl_jw_string(w, "");
    kctl_jw_object_end(w);
    kctl_jw_object_end(w);
}
static const char tj_all_kinds_text[] =
    "{\"s\":\"x\",\"i\":-42,\"u\":42,\"d\":2.5,\"t\":true,\"f\":false,\"n\":null,\"a\":[1,[],{},\"ab\"],"
    "\"r\":[1, 2],\"a\\\"b\":{\"\":\"\"}}";

static void tj_writer_kinds_fixed(void) {
    char buf[256];
    kctl_jw w;
    tj_doc d;
    kctl_jw_init(&w, buf, sizeof buf);
    tj_write_all_kinds(&w);
    KT_EQ_STR(TJ_FINISH(&w), tj_all_kinds_text);
    KT_EQ_STR(buf, tj_all_kinds_text);
    KT_EQ_INT(TJ_OPEN(&d, buf), KCTL_OK);
    tj_close(&d);
}

static void tj_writer_kinds_growable(void) {
    kt_alloc a;
    kctl_allocator al;
    kctl_jw w;
    kt_alloc_init(&a);
    al = kt_allocator(&a);
    kctl_jw_init_growable(&w, &al);
    tj_write_all_kinds(&w);
    KT_EQ_STR(TJ_FINISH(&w), tj_all_kinds_text);
    kctl_jw_free(&w);
    KT_CHECK(a.allocs > 0);
    KT_EQ_INT(a.live, 0);
    /* the default allocator */
    kctl_jw_init_growable(&w, NULL);
    tj_write_all_kinds(&w);
    KT_EQ_STR(TJ_FINISH(&w), tj_all_kinds_text);
    kctl_jw_free(&w);
}

static void tj_writer_top_level_scalars(void) {
    char buf[64];
    kctl_jw w;
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_int64(&w, 5);
    KT_EQ_STR(TJ_FINISH(&w), "5");
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_string(&w, "x");
    KT_EQ_STR(TJ_FINISH(&w), "\"x\"");
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_null(&w);
    KT_EQ_STR(TJ_FINISH(&w), "null");
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_bool(&w, false);
    KT_EQ_STR(TJ_FINISH(&w), "false");
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_array_begin(&w);
    kctl_jw_array_end(&w);
    KT_EQ_STR(TJ_FINISH(&w), "[]");
}

static void tj_writer_integers(void) {
    char buf[64];
    kctl_jw w;
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_array_begin(&w);
    kctl_jw_int64(&w, INT64_MIN);
    kctl_jw_int64(&w, INT64_MAX);
    kctl_jw_int64(&w, 0);
    kctl_jw_int64(&w, -1);
    kctl_jw_array_end(&w);
    KT_EQ_STR(TJ_FINISH(&w), "[-9223372036854775808,9223372036854775807,0,-1]");
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_array_begin(&w);
    kctl_jw_uint64(&w, UINT64_MAX);
    kctl_jw_uint64(&w, 0);
    kctl_jw_uint64(&w, UINT64_C(7587861231285799685));
    kctl_jw_array_end(&w);
    KT_EQ_STR(TJ_FINISH(&w), "[18446744073709551615,0,7587861231285799685]");
}

static void tj_writer_escaping(void) {
    char buf[512], got[64];
    kctl_jw w;
    tj_doc d;
    const char *t;
    int c;
    size_t k, len;
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_string(&w, "a\"b\\c");
    KT_EQ_STR(TJ_FINISH(&w), "\"a\\\"b\\\\c\"");
    /* UTF-8 passes through */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_string(&w, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    KT_EQ_STR(TJ_FINISH(&w), "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
    /* every control character, alone and in a key */
    for (c = 1; c < 0x20; c++) {
        char s[4];
        s[0] = 'a';
        s[1] = (char)c;
        s[2] = 'b';
        s[3] = 0;
        kctl_jw_init(&w, buf, sizeof buf);
        kctl_jw_object_begin(&w);
        kctl_jw_key(&w, s);
        kctl_jw_string(&w, s);
        kctl_jw_object_end(&w);
        t = TJ_FINISH(&w);
        for (k = 0; t[k]; k++)
            if ((unsigned char)t[k] < 0x20) kt_fail(__FILE__, __LINE__, "control 0x%02x written raw: %s", c, t);
        if (TJ_OPEN(&d, t) == KCTL_OK) {
            KT_EQ_INT(kctl_json_string(&d.j, 2, got, sizeof got, &len), KCTL_OK);
            KT_EQ_U64(len, 3);
            KT_CHECK(memcmp(got, s, 4) == 0);
            KT_CHECK(kctl_json_member(&d.j, 0, s) == 2);
        } else {
            kt_fail(__FILE__, __LINE__, "control 0x%02x: output does not parse: %s", c, t);
        }
        tj_close(&d);
        /* the \u001f form or a short escape */
        if (c == 0x1f) KT_CHECK(strstr(t, "\\u001f") != NULL || strstr(t, "\\u001F") != NULL);
        if (c == 0x01) KT_CHECK(strstr(t, "\\u0001") != NULL);
        if (c == '\n') KT_CHECK(strstr(t, "\\n") != NULL || strstr(t, "\\u000a") != NULL || strstr(t, "\\u000A") != NULL);
    }
    /* NUL through string_n; DEL and '/' are fine either way */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_string_n(&w, "a\0b\x7f/", 5);
    t = TJ_FINISH(&w);
    if (TJ_OPEN(&d, t) == KCTL_OK) {
        KT_EQ_INT(kctl_json_string(&d.j, 0, got, sizeof got, &len), KCTL_OK);
        KT_EQ_U64(len, 5);
        KT_CHECK(memcmp(got, "a\0b\x7f/", 6) == 0);
    } else {
        kt_fail(__FILE__, __LINE__, "string_n with NUL: output does not parse: %s", t);
    }
    tj_close(&d);
}

static void tj_writer_fixed_full(void) {
    char buf[32];
    kctl_jw w;
    const char *t;
    size_t n, cap, k;
    /* too small: FULL, sticky */
    memset(buf, 0x55, sizeof buf);
    kctl_jw_init(&w, buf, 8);
    kctl_jw_array_begin(&w);
    kctl_jw_string(&w, "abcdefghij");
    kctl_jw_array_end(&w);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_FULL);
    KT_EQ_INT(w.err, KCTL_ERR_FULL);
    kctl_jw_null(&w);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_FULL);
    for (k = 8; k < sizeof buf; k++) KT_CHECK((unsigned char)buf[k] == 0x55);
    /* "[1,2]" (5 bytes): every cap below fails, cap 6 fits with its NUL */
    for (cap = 0; cap <= 7; cap++) {
        int rc;
        memset(buf, 0x55, sizeof buf);
        kctl_jw_init(&w, buf, cap);
        kctl_jw_array_begin(&w);
        kctl_jw_int64(&w, 1);
        kctl_jw_int64(&w, 2);
        kctl_jw_array_end(&w);
        t = NULL;
        n = 0;
        rc = kctl_jw_finish(&w, &t, &n);
        for (k = cap; k < sizeof buf; k++)
            if ((unsigned char)buf[k] != 0x55) { kt_fail(__FILE__, __LINE__, "cap %u: wrote past the end", (unsigned)cap); break; }
        if (cap < 5) {
            KT_EQ_INT(rc, KCTL_ERR_FULL);
        } else if (cap == 5) {
            /* fits without its NUL: either answer, but never a wrong text */
            KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_FULL);
            if (rc == KCTL_OK) { KT_EQ_U64(n, 5); KT_CHECK(t && memcmp(t, "[1,2]", 5) == 0); }
        } else {
            KT_EQ_INT(rc, KCTL_OK);
            KT_EQ_U64(n, 5);
            KT_EQ_STR(t, "[1,2]");
            KT_EQ_STR(buf, "[1,2]");
        }
    }
}

static void tj_writer_growable_big_and_nomem(void) {
    kt_alloc a;
    kctl_allocator al;
    kctl_jw w;
    const char *t;
    size_t n;
    long k;
    int rc, i, saw_nomem = 0, saw_ok = 0;
    char item[32];
    kt_alloc_init(&a);
    al = kt_allocator(&a);
    for (k = 0; k < 64 && !saw_ok; k++) {
        a.fail_after = k;
        kctl_jw_init_growable(&w, &al);
        kctl_jw_array_begin(&w);
        for (i = 0; i < 2000; i++) {
            sprintf(item, "item-%d", i);
            kctl_jw_string(&w, item);
        }
        kctl_jw_array_end(&w);
        t = NULL;
        n = 0;
        rc = kctl_jw_finish(&w, &t, &n);
        if (rc == KCTL_ERR_NOMEM) {
            saw_nomem = 1;
            KT_CHECK(a.fail_count > 0);
            kctl_jw_int64(&w, 1); /* sticky */
            KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_NOMEM);
        } else {
            KT_EQ_INT(rc, KCTL_OK);
            saw_ok = 1;
            KT_CHECK(n > 2000 * 9);
            {
                kctl_json out;
                KT_EQ_INT(kctl_json_parse(t, n, NULL, 0, NULL, &out), KCTL_OK);
                KT_EQ_U64(out.ntoks, 2001);
            }
        }
        kctl_jw_free(&w);
        KT_EQ_INT(a.live, 0);
    }
    KT_CHECK(saw_nomem);
    KT_CHECK(saw_ok);
    /* free without anything written */
    kctl_jw_init_growable(&w, &al);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_INVALID_ARG);
    kctl_jw_free(&w);
    KT_EQ_INT(a.live, 0);
}

static void tj_writer_misuse(void) {
    char buf[64];
    kctl_jw w;
    int c;
    for (c = 0; c < 16; c++) {
        kctl_jw_init(&w, buf, sizeof buf);
        switch (c) {
        case 0: kctl_jw_object_begin(&w); kctl_jw_int64(&w, 1); break;       /* value without a name */
        case 1: kctl_jw_object_begin(&w); kctl_jw_string(&w, "x"); break;
        case 2: kctl_jw_key(&w, "a"); break;                                 /* name outside an object */
        case 3: kctl_jw_array_begin(&w); kctl_jw_key(&w, "a"); break;
        case 4: kctl_jw_object_end(&w); break;                               /* end without begin */
        case 5: kctl_jw_array_end(&w); break;
        case 6: kctl_jw_object_begin(&w); kctl_jw_array_end(&w); break;      /* mismatched end */
        case 7: kctl_jw_array_begin(&w); kctl_jw_object_end(&w); break;
        case 8: kctl_jw_array_begin(&w); break;                              /* unfinished */
        case 9: kctl_jw_object_begin(&w); kctl_jw_key(&w, "a"); kctl_jw_object_end(&w); break; /* name, no value */
        case 10: kctl_jw_object_begin(&w); kctl_jw_key(&w, "a"); kctl_jw_key(&w, "b"); break;
        case 11: break;                                                      /* nothing written */
        case 12: kctl_jw_int64(&w, 1); kctl_jw_int64(&w, 2); break;         /* two documents */
        case 13: kctl_jw_array_begin(&w); kctl_jw_array_end(&w); kctl_jw_array_end(&w); break;
        case 14: kctl_jw_object_begin(&w); kctl_jw_object_begin(&w); break; /* object as a name */
        case 15: kctl_jw_object_begin(&w); kctl_jw_key(&w, "a"); break;     /* unfinished member */
        }
        if (tj_finish_rc(&w) != KCTL_ERR_INVALID_ARG)
            kt_fail(__FILE__, __LINE__, "misuse case %d: finish %d, want INVALID_ARG", c, tj_finish_rc(&w));
    }
    /* sticky: a valid document after the misuse does not clear it */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_key(&w, "a");
    kctl_jw_array_begin(&w);
    kctl_jw_array_end(&w);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_INVALID_ARG);
    /* NaN and infinities */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, NAN);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_INVALID_ARG);
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_array_begin(&w);
    kctl_jw_double(&w, INFINITY);
    kctl_jw_array_end(&w);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_INVALID_ARG);
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, -INFINITY);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_INVALID_ARG);
}

static void tj_writer_depth(void) {
    kctl_jw w;
    const char *t;
    size_t n;
    int i;
    kctl_json out;
    kctl_jw_init_growable(&w, NULL);
    for (i = 0; i < KCTL_JSON_MAX_DEPTH; i++) kctl_jw_array_begin(&w);
    for (i = 0; i < KCTL_JSON_MAX_DEPTH; i++) kctl_jw_array_end(&w);
    t = NULL;
    n = 0;
    KT_EQ_INT(kctl_jw_finish(&w, &t, &n), KCTL_OK);
    KT_EQ_U64(n, 2 * KCTL_JSON_MAX_DEPTH);
    if (t) {
        KT_EQ_INT(kctl_json_parse(t, n, NULL, 0, NULL, &out), KCTL_OK);
    }
    kctl_jw_free(&w);
    kctl_jw_init_growable(&w, NULL);
    for (i = 0; i < KCTL_JSON_MAX_DEPTH + 1; i++) kctl_jw_object_begin(&w), kctl_jw_key(&w, "a");
    kctl_jw_null(&w);
    for (i = 0; i < KCTL_JSON_MAX_DEPTH + 1; i++) kctl_jw_object_end(&w);
    KT_CHECK(kctl_jw_finish(&w, &t, &n) != KCTL_OK);
    kctl_jw_free(&w);
    kctl_jw_init_growable(&w, NULL);
    for (i = 0; i < 1000; i++) kctl_jw_array_begin(&w);
    for (i = 0; i < 1000; i++) kctl_jw_array_end(&w);
    KT_CHECK(kctl_jw_finish(&w, &t, &n) != KCTL_OK);
    kctl_jw_free(&w);
}

static void tj_writer_doubles_roundtrip(void) {
    static const double vals[] = {
        0.1, 1e300, -2.5, 5e-324, DBL_MAX, DBL_MIN, 1.0 / 3.0, 9007199254740993.0, 123456.789, 1e21, 1e-7, 0.3,
        100.0, 1.0, 0.0, -1e-300, 2.2250738585072011e-308, 1e23, 4.35, 0.000001,
    };
    char buf[64];
    kctl_jw w;
    size_t i;
    for (i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const char *t;
        tj_doc d;
        double back = -77.0;
        kctl_jw_init(&w, buf, sizeof buf);
        kctl_jw_double(&w, vals[i]);
        t = TJ_FINISH(&w);
        if (TJ_OPEN(&d, t) != KCTL_OK || d.toks[0].type != KCTL_JSON_NUMBER) {
            kt_fail(__FILE__, __LINE__, "double %.17g written as <%s>: not a JSON number", vals[i], t);
        } else {
            KT_EQ_INT(kctl_json_double(&d.j, 0, &back), KCTL_OK);
            if (memcmp(&back, &vals[i], sizeof back) != 0)
                kt_fail(__FILE__, __LINE__, "double %.17g written as <%s> reads back %.17g", vals[i], t, back);
            if (strlen(t) > 24) kt_fail(__FILE__, __LINE__, "double %.17g written as <%s>: not the shortest", vals[i], t);
        }
        tj_close(&d);
    }
    /* the shortest forms */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, 0.1);
    KT_EQ_STR(TJ_FINISH(&w), "0.1");
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, -2.5);
    KT_EQ_STR(TJ_FINISH(&w), "-2.5");
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, 5e-324);
    KT_CHECK(strlen(TJ_FINISH(&w)) == 6); /* 5e-324 */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, 1e300);
    KT_CHECK(strlen(TJ_FINISH(&w)) <= 6); /* 1e300 or 1e+300 */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, 1.0 / 3.0);
    KT_EQ_U64(strlen(TJ_FINISH(&w)), 18); /* 0.3333333333333333 */
    /* -0.0 reads back equal */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, -0.0);
    {
        const char *t = TJ_FINISH(&w);
        tj_doc d;
        double back = 1.0;
        if (TJ_OPEN(&d, t) == KCTL_OK) {
            KT_EQ_INT(kctl_json_double(&d.j, 0, &back), KCTL_OK);
            KT_CHECK(back == 0.0);
        } else {
            kt_fail(__FILE__, __LINE__, "-0.0 written as <%s>", t);
        }
        tj_close(&d);
    }
}

static void tj_writer_value_copies(void) {
    static const char *const docs[] = {
        ("{\"a\\u0062\":[1, -0.0e-0, 1e400, 9007199254740993, \"\\ud83d\\ude00\\n\\u0001\"],\"c\":{\"d\":null,"
         "\"e\":[true,false,{}]},\"c\":\"last\",\"\\\"\":\"\\\\\"}"),
        "\"\xC3\xA9\\t\"", "-12.5e-3", "[]", "{}", "null", "[[[[]]],{\"\":{\"\":\"\"}}]",
    };
    size_t i;
    for (i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        tj_doc a, b;
        kctl_jw w;
        const char *t;
        KT_EQ_INT(TJ_OPEN(&a, docs[i]), KCTL_OK);
        if (a.rc != KCTL_OK) { tj_close(&a); continue; }
        kctl_jw_init_growable(&w, NULL);
        kctl_jw_value(&w, &a.j, 0);
        t = TJ_FINISH(&w);
        if (TJ_OPEN(&b, t) == KCTL_OK) {
            if (!kctl_json_equal(&a.j, 0, &b.j, 0))
                kt_fail(__FILE__, __LINE__, "copy of %s is %s: not equal", docs[i], t);
        } else {
            kt_fail(__FILE__, __LINE__, "copy of %s is %s: does not parse", docs[i], t);
        }
        tj_close(&b);
        kctl_jw_free(&w);
        tj_close(&a);
    }
    /* a sub-value, inside an array and as a member */
    {
        tj_doc a, b;
        kctl_jw w;
        KT_EQ_INT(TJ_OPEN(&a, "{\"spec\":{\"x\":[1,2]},\"s\":\"\\u0041\"}"), KCTL_OK);
        kctl_jw_init_growable(&w, NULL);
        kctl_jw_object_begin(&w);
        kctl_jw_key(&w, "copy");
        kctl_jw_value(&w, &a.j, kctl_json_member(&a.j, 0, "spec"));
        kctl_jw_key(&w, "list");
        kctl_jw_array_begin(&w);
        kctl_jw_value(&w, &a.j, kctl_json_member(&a.j, 0, "s"));
        kctl_jw_value(&w, &a.j, kctl_json_path(&a.j, 0, "spec.x[1]"));
        kctl_jw_array_end(&w);
        kctl_jw_object_end(&w);
        KT_EQ_INT(TJ_OPEN(&b, TJ_FINISH(&w)), KCTL_OK);
        if (b.rc == KCTL_OK) {
            KT_CHECK(kctl_json_equal(&a.j, kctl_json_member(&a.j, 0, "spec"), &b.j, kctl_json_member(&b.j, 0, "copy")));
            KT_CHECK(kctl_json_string_eq(&b.j, kctl_json_path(&b.j, 0, "list[0]"), "A"));
            KT_EQ_INT(tj_i64(&b.j, kctl_json_path(&b.j, 0, "list[1]")), 2);
        }
        tj_close(&b);
        kctl_jw_free(&w);
        /* no such value */
        kctl_jw_init_growable(&w, NULL);
        kctl_jw_value(&w, &a.j, KCTL_JSON_NONE);
        KT_CHECK(tj_finish_rc(&w) != KCTL_OK);
        kctl_jw_free(&w);
        tj_close(&a);
    }
}

/* -------------------------------------------------------- merge patch */

/* Applies patch to doc (NULL: no document) and checks the result equals want. */
static void tj_merge(const char *doc, const char *patch, const char *want, int line) {
    tj_doc dd, dp, dr, dw;
    kctl_jw w;
    const char *t = NULL;
    size_t n = 0;
    int rc;
    memset(&dd, 0, sizeof dd);
    if (doc && tj_open_n(&dd, doc, strlen(doc), NULL, line) != KCTL_OK) {
        kt_fail(__FILE__, line, "doc %s does not parse", doc);
        tj_close(&dd);
        return;
    }
    tj_open_n(&dp, patch, strlen(patch), NULL, line);
    tj_open_n(&dw, want, strlen(want), NULL, line);
    kctl_jw_init_growable(&w, NULL);
    rc = kctl_json_merge_patch(doc ? &dd.j : NULL, doc ? 0 : KCTL_JSON_NONE, &dp.j, 0, &w);
    if (rc != KCTL_OK) kt_fail(__FILE__, line, "merge_patch(%s, %s): %d", doc ? doc : "NONE", patch, rc);
    rc = kctl_jw_finish(&w, &t, &n);
    if (rc != KCTL_OK) {
        kt_fail(__FILE__, line, "merge_patch(%s, %s): finish %d", doc ? doc : "NONE", patch, rc);
    } else if (tj_open_n(&dr, t, n, NULL, line) != KCTL_OK) {
        kt_fail(__FILE__, line, "merge_patch(%s, %s) = <%s>: does not parse", doc ? doc : "NONE", patch, t);
        tj_close(&dr);
    } else {
        if (!kctl_json_equal(&dr.j, 0, &dw.j, 0))
            kt_fail(__FILE__, line, "merge_patch(%s, %s) = %s, want %s", doc ? doc : "NONE", patch, t, want);
        tj_close(&dr);
    }
    kctl_jw_free(&w);
    tj_close(&dd);
    tj_close(&dp);
    tj_close(&dw);
}
#define TJ_MERGE(doc, patch, want) tj_merge((doc), (patch), (want), __LINE__)

static void tj_merge_rfc7386_appendix_a(void) {
    TJ_MERGE("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    TJ_MERGE("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}");
    TJ_MERGE("{\"a\":\"b\"}", "{\"a\":null}", "{}");
    TJ_MERGE("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}");
    TJ_MERGE("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
    TJ_MERGE("{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}");
    TJ_MERGE("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}");
    TJ_MERGE("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}");
    TJ_MERGE("[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]");
    TJ_MERGE("{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]");
    TJ_MERGE("{\"a\":\"foo\"}", "null", "null");
    TJ_MERGE("{\"a\":\"foo\"}", "\"bar\"", "\"bar\"");
    TJ_MERGE("{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}");
    TJ_MERGE("[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}");
    TJ_MERGE("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}");
}

static void tj_merge_kubernetes(void) {
    TJ_MERGE("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\","
             "\"labels\":{\"app\":\"web\",\"tier\":\"frontend\"}},\"spec\":{\"replicas\":3,\"template\":{\"spec\":"
             "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.25\"}]}}},\"status\":{\"readyReplicas\":3}}",
             "{\"metadata\":{\"labels\":{\"tier\":null,\"team\":\"a\"}},\"spec\":{\"replicas\":5,\"template\":{\"spec\":"
             "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.26\"}]}}}}",
             "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\","
             "\"labels\":{\"app\":\"web\",\"team\":\"a\"}},\"spec\":{\"replicas\":5,\"template\":{\"spec\":"
             "{\"containers\":[{\"name\":\"web\",\"image\":\"nginx:1.26\"}]}}},\"status\":{\"readyReplicas\":3}}");
    /* remove the last label: labels stays, empty */
    TJ_MERGE("{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\"}}}", "{\"metadata\":{\"labels\":{\"app\":null}}}",
             "{\"metadata\":{\"name\":\"a\",\"labels\":{}}}");
    /* remove a label whose name is escaped in the document */
    TJ_MERGE("{\"labels\":{\"a\\u0062\":\"x\",\"c\":\"y\"}}", "{\"labels\":{\"ab\":null}}", "{\"labels\":{\"c\":\"y\"}}");
    /* the empty patch changes nothing */
    TJ_MERGE("{\"a\":[1,{\"b\":null}],\"c\":{}}", "{}", "{\"a\":[1,{\"b\":null}],\"c\":{}}");
    /* repeated names in the document: the last counts, a null removes the name */
    TJ_MERGE("{\"a\":1,\"a\":2,\"b\":0}", "{}", "{\"a\":2,\"b\":0}");
    TJ_MERGE("{\"a\":1,\"a\":2,\"b\":0}", "{\"a\":null}", "{\"b\":0}");
    TJ_MERGE("{\"a\":{\"x\":1},\"a\":{\"y\":2}}", "{\"a\":{\"z\":3}}", "{\"a\":{\"y\":2,\"z\":3}}");
    /* repeated names in the patch: the last counts */
    TJ_MERGE("{\"a\":0,\"b\":1}", "{\"a\":1,\"a\":null}", "{\"b\":1}");
    TJ_MERGE("{\"a\":0,\"b\":1}", "{\"a\":null,\"a\":1}", "{\"a\":1,\"b\":1}");
}

static void tj_merge_replace_and_none(void) {
    /* a patch that is not an object replaces the document */
    TJ_MERGE("{\"a\":1}", "[1,2]", "[1,2]");
    TJ_MERGE("{\"a\":1}", "5", "5");
    TJ_MERGE("{\"a\":1}", "true", "true");
    TJ_MERGE("[1]", "{}", "{}");
    TJ_MERGE("\"s\"", "{\"a\":null}", "{}");
    /* no document */
    TJ_MERGE(NULL, "{\"a\":1,\"b\":null,\"c\":{\"d\":null,\"e\":2}}", "{\"a\":1,\"c\":{\"e\":2}}");
    TJ_MERGE(NULL, "{\"a\":{\"b\":null}}", "{\"a\":{}}");
    TJ_MERGE(NULL, "\"x\"", "\"x\"");
    TJ_MERGE(NULL, "null", "null");
    TJ_MERGE(NULL, "[{\"a\":null}]", "[{\"a\":null}]"); /* arrays are copied as they are */
    TJ_MERGE("{\"a\":[{\"b\":1}]}", "{\"a\":[{\"b\":null}]}", "{\"a\":[{\"b\":null}]}");
}

static void tj_merge_into_writer(void) {
    tj_doc d, p, r;
    kctl_jw w;
    char small[8];
    KT_EQ_INT(TJ_OPEN(&d, "{\"a\":\"hello world\",\"b\":2}"), KCTL_OK);
    KT_EQ_INT(TJ_OPEN(&p, "{\"b\":null,\"c\":[3]}"), KCTL_OK);
    if (d.rc != KCTL_OK || p.rc != KCTL_OK) { tj_close(&d); tj_close(&p); return; }
    /* the result as a member of a bigger document */
    kctl_jw_init_growable(&w, NULL);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "result");
    KT_EQ_INT(kctl_json_merge_patch(&d.j, 0, &p.j, 0, &w), KCTL_OK);
    kctl_jw_key(&w, "n");
    kctl_jw_int64(&w, 1);
    kctl_jw_object_end(&w);
    KT_EQ_INT(TJ_OPEN(&r, TJ_FINISH(&w)), KCTL_OK);
    if (r.rc == KCTL_OK) {
        KT_CHECK(kctl_json_string_eq(&r.j, kctl_json_path(&r.j, 0, "result.a"), "hello world"));
        KT_EQ_U64(kctl_json_path(&r.j, 0, "result.b"), KCTL_JSON_NONE);
        KT_EQ_INT(tj_i64(&r.j, kctl_json_path(&r.j, 0, "result.c[0]")), 3);
        KT_EQ_INT(tj_i64(&r.j, kctl_json_path(&r.j, 0, "n")), 1);
    }
    tj_close(&r);
    kctl_jw_free(&w);
    /* out's error comes back */
    kctl_jw_init(&w, small, sizeof small);
    KT_EQ_INT(kctl_json_merge_patch(&d.j, 0, &p.j, 0, &w), KCTL_ERR_FULL);
    KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_FULL);
    tj_close(&d);
    tj_close(&p);
}

/* Objects of more than 16 members are merged through sorted lists of their
   names, in memory from the writer's allocator: out of memory at each of
   its allocations is NOMEM, with nothing left behind; then the result. */
static void tj_merge_big_nomem(void) {
    char doc[512], patch[512];
    size_t p = 0, q = 0;
    int i;
    tj_doc d, pt;
    kt_alloc a;
    kctl_allocator al;
    long fail;
    int rc = KCTL_ERR_NOMEM;
    doc[p++] = '{';
    patch[q++] = '{';
    for (i = 0; i < 20; i++) {
        p += (size_t)sprintf(doc + p, "%s\"k%02d\":%d", i ? "," : "", i, i);
        q += (size_t)sprintf(patch + q, "%s\"k%02d\":%s", i ? "," : "", 19 - i, (19 - i) % 2 ? "null" : "{\"x\":1}");
    }
    strcpy(doc + p, "}");
    strcpy(patch + q, ",\"new\":true}");
    KT_EQ_INT(TJ_OPEN(&d, doc), KCTL_OK);
    KT_EQ_INT(TJ_OPEN(&pt, patch), KCTL_OK);
    if (d.rc != KCTL_OK || pt.rc != KCTL_OK) { tj_close(&d); tj_close(&pt); return; }
    for (fail = 0; rc == KCTL_ERR_NOMEM && fail < 20; fail++) {
        kctl_jw w;
        kt_alloc_init(&a);
        a.fail_after = fail;
        al = kt_allocator(&a);
        kctl_jw_init_growable(&w, &al);
        rc = kctl_json_merge_patch(&d.j, 0, &pt.j, 0, &w);
        KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOMEM);
        if (rc == KCTL_OK) {
            tj_doc r;
            const char *t = TJ_FINISH(&w);
            KT_CHECK(fail >= 4); /* the buffer, two lists of names, the matches */
            KT_EQ_INT(TJ_OPEN(&r, t), KCTL_OK);
            if (r.rc == KCTL_OK) {
                KT_EQ_U64(r.toks[0].size, 11); /* k00, k02, ... k18: {"x":1} patched in; new */
                KT_EQ_INT(tj_i64(&r.j, kctl_json_path(&r.j, 0, "k04.x")), 1);
                KT_EQ_U64(kctl_json_path(&r.j, 0, "k05"), KCTL_JSON_NONE);
                KT_EQ_STR(tj_str(&r.j, 1), "k00");
                KT_EQ_STR(tj_str(&r.j, 1 + 10 * 4), "new"); /* after ten members of 4 tokens */
            }
            tj_close(&r);
        } else {
            KT_EQ_INT(tj_finish_rc(&w), KCTL_ERR_NOMEM);
        }
        kctl_jw_free(&w);
        KT_EQ_INT(a.live, 0);
    }
    KT_EQ_INT(rc, KCTL_OK);
    tj_close(&d);
    tj_close(&pt);
}

/* -------------------------------------------------- a realistic document */

static void tj_kubernetes_and_etcd_documents(void) {
    static const char pod[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-0\",\"namespace\":\"default\","
        "\"uid\":\"6b1c1f3e-9a6e-4a8a-9a59-1c2d3e4f5a6b\",\"resourceVersion\":\"123456\",\"generation\":2,"
        "\"labels\":{\"app.kubernetes.io/name\":\"web\",\"tier\":\"frontend\"},"
        "\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"web\",\"uid\":\"x\",\"controller\":true}],"
        "\"finalizers\":[\"example.com/cleanup\"]},\"spec\":{\"containers\":[{\"name\":\"nginx\","
        "\"image\":\"nginx:1.25\",\"ports\":[{\"containerPort\":80}]}]}}";
    static const char etcd[] =
        "{\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":\"10276657743932975437\","
        "\"revision\":\"9223372036854775807\",\"raft_term\":\"8\"},\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\","
        "\"mod_revision\":\"5\",\"version\":\"3\",\"value\":\"YmFy\",\"lease\":\"7587861231285799685\"}],\"count\":\"1\"}";
    tj_doc d;
    bool b = false;
    uint64_t u = 0;
    int64_t x = 0;
    KT_EQ_INT(TJ_OPEN(&d, pod), KCTL_OK);
    if (d.rc == KCTL_OK) {
        KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "metadata.labels[\"app.kubernetes.io/name\"]")), "web");
        KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "metadata.ownerReferences[0].kind")), "StatefulSet");
        KT_EQ_INT(kctl_json_bool(&d.j, kctl_json_path(&d.j, 0, "metadata.ownerReferences[0].controller"), &b), KCTL_OK);
        KT_CHECK(b);
        KT_EQ_INT(kctl_json_uint64(&d.j, kctl_json_path(&d.j, 0, "metadata.resourceVersion"), &u), KCTL_OK);
        KT_EQ_U64(u, 123456);
        KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "metadata.generation")), 2);
        KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "spec.containers[0].ports[0].containerPort")), 80);
        KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "metadata.finalizers[0]")), "example.com/cleanup");
    }
    tj_close(&d);
    KT_EQ_INT(TJ_OPEN(&d, etcd), KCTL_OK);
    if (d.rc == KCTL_OK) {
        KT_EQ_INT(kctl_json_uint64(&d.j, kctl_json_path(&d.j, 0, "header.cluster_id"), &u), KCTL_OK);
        KT_EQ_U64(u, UINT64_C(14841639068965178418));
        KT_EQ_INT(kctl_json_int64(&d.j, kctl_json_path(&d.j, 0, "header.cluster_id"), &x), KCTL_ERR_TOO_LARGE);
        KT_EQ_INT(kctl_json_int64(&d.j, kctl_json_path(&d.j, 0, "header.revision"), &x), KCTL_OK);
        KT_CHECK(x == INT64_MAX);
        KT_EQ_INT(kctl_json_int64(&d.j, kctl_json_path(&d.j, 0, "kvs[0].lease"), &x), KCTL_OK);
        KT_CHECK(x == INT64_C(7587861231285799685));
        KT_EQ_INT(tj_i64(&d.j, kctl_json_path(&d.j, 0, "kvs[0].mod_revision")), 5);
        KT_EQ_STR(tj_str(&d.j, kctl_json_path(&d.j, 0, "kvs[0].key")), "Zm9v");
    }
    tj_close(&d);
}

/* ------------------------------------------ getters by path, without tokens */

static const char tj_getdoc[] =
    " {\"spec\":{\"replicas\":3,\"ratio\":0.5,\"big\":18446744073709551615,\"neg\":-9223372036854775808,"
    "\"over\":9223372036854775808,\"frac\":2.0,\"exp\":1e2,\"name\":\"web\",\"esc\":\"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\\n\","
    "\"nul\":\"x\\u0000y\",\"on\":true,\"off\":false,\"none\":null,\"strnum\":\"42\",\"strneg\":\"-7\",\"strbad\":\"4 2\","
    "\"ntp\":{\"servers\":[\"a.example\",\"b.example\"]},\"nested\":[[1,[2,3]],{\"k\":[{\"x\":\"deep\"}]}],"
    "\"rep\":1,\"rep\":\"two\",\"a.b\":{\"c[d]\":7,\"q\\\"\":8},\"\":\"empty name\",\"k\\u0065y\":\"escaped name\","
    "\"empty\":{},\"none2\":[]},\"items\":[ ],\"d\":{\"x\":{\"y\":1},\"x\":{\"z\":2}}} \n";

/* The getters over the text agree with kctl_json_path and the token getters
   at path: found or not, the same text, the same result and value from
   every typed getter. */
static void tj_agree(const tj_doc *d, const char *path, int line) {
    uint32_t t = kctl_json_path(&d->j, 0, path);
    kctl_json_value v;
    int rc = kctl_json_get(d->j.text, d->j.len, path, &v), ra, rb;
    char b1[64], b2[64];
    size_t n1 = 0, n2 = 0;
    int64_t i1 = 0, i2 = 0;
    uint64_t u1 = 0, u2 = 0;
    double f1 = 0, f2 = 0;
    bool x1 = false, x2 = false;
    if (t == KCTL_JSON_NONE) {
        if (rc != KCTL_ERR_NOT_FOUND && rc != KCTL_ERR_INVALID_ARG)
            kt_fail(__FILE__, line, "%s: no value, but kctl_json_get says %d", path, rc);
        if (v.text || v.len) kt_fail(__FILE__, line, "%s: a view of nothing is not empty", path);
        return;
    }
    if (rc != KCTL_OK) { kt_fail(__FILE__, line, "%s: kctl_json_get %d", path, rc); return; }
    {
        const char *raw = NULL;
        size_t rn = 0;
        kctl_json_raw(&d->j, t, &raw, &rn);
        if (v.text != raw || v.len != rn || v.type != kctl_json_type_of(&d->j, t))
            kt_fail(__FILE__, line, "%s: the view is not the value's text", path);
    }
    ra = kctl_json_string(&d->j, t, b1, sizeof b1, &n1);
    rb = kctl_json_get_string(d->j.text, d->j.len, path, b2, sizeof b2, &n2);
    if (ra != rb || n1 != n2 || (ra == KCTL_OK && memcmp(b1, b2, n1 + 1) != 0)) kt_fail(__FILE__, line, "%s: string %d/%d", path, ra, rb);
    ra = kctl_json_int64(&d->j, t, &i1);
    rb = kctl_json_get_int64(d->j.text, d->j.len, path, &i2);
    if (ra != rb || (ra == KCTL_OK && i1 != i2)) kt_fail(__FILE__, line, "%s: int64 %d/%d", path, ra, rb);
    ra = kctl_json_uint64(&d->j, t, &u1);
    rb = kctl_json_get_uint64(d->j.text, d->j.len, path, &u2);
    if (ra != rb || (ra == KCTL_OK && u1 != u2)) kt_fail(__FILE__, line, "%s: uint64 %d/%d", path, ra, rb);
    ra = kctl_json_double(&d->j, t, &f1);
    rb = kctl_json_get_double(d->j.text, d->j.len, path, &f2);
    if (ra != rb || (ra == KCTL_OK && memcmp(&f1, &f2, sizeof f1) != 0)) kt_fail(__FILE__, line, "%s: double %d/%d", path, ra, rb);
    ra = kctl_json_bool(&d->j, t, &x1);
    rb = kctl_json_get_bool(d->j.text, d->j.len, path, &x2);
    if (ra != rb || (ra == KCTL_OK && x1 != x2)) kt_fail(__FILE__, line, "%s: bool %d/%d", path, ra, rb);
}
#define TJ_AGREE(d, path) tj_agree((d), (path), __LINE__)

static void tj_get_agrees_with_tokens(void) {
    static const char *const paths[] = {
        "", "spec", "spec.replicas", "spec.ratio", "spec.big", "spec.neg", "spec.over", "spec.frac", "spec.exp",
        "spec.name", "spec.esc", "spec.nul", "spec.on", "spec.off", "spec.none", "spec.strnum", "spec.strneg",
        "spec.strbad", "spec.ntp", "spec.ntp.servers", "spec.ntp.servers[0]", "spec.ntp.servers[1]",
        "spec.ntp.servers[2]", "spec.nested[0][1][1]", "spec.nested[1].k[0].x", "spec.nested[1].k[0]",
        "spec.rep", "spec[\"a.b\"][\"c[d]\"]", "spec[\"a.b\"][\"q\\\"\"]", "spec[\"\"]", "spec.key", "spec[\"key\"]",
        "spec.empty", "spec.none2", "items", "items[0]", "d.x", "d.x.y", "d.x.z", "spec.replicas.x",
        "spec.name[0]", "spec.ntp[0]", "nope", "spec..replicas", "spec.", ".spec", "[", "spec[x]", "spec[0",
        "spec[\"a.b\"", "[0]", "spec[4294967296]", "spec.ntp.servers[4294967295]",
    };
    tj_doc d;
    size_t i;
    KT_EQ_INT(TJ_OPEN(&d, tj_getdoc), KCTL_OK);
    if (d.rc != KCTL_OK) return;
    for (i = 0; i < sizeof paths / sizeof paths[0]; i++) tj_agree(&d, paths[i], __LINE__);
    tj_close(&d);
}

static void tj_get_values(void) {
    const char *t = tj_getdoc;
    char buf[64];
    size_t n = 99;
    int64_t x = 0;
    uint64_t u = 0;
    double f = 0;
    bool b = false;
    kctl_json_value v;
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.replicas", &x), KCTL_OK);
    KT_EQ_INT(x, 3);
    KT_EQ_INT(kctl_json_get_double(t, KCTL_NTS, "spec.ratio", &f), KCTL_OK);
    KT_CHECK(f == 0.5);
    KT_EQ_INT(kctl_json_get_uint64(t, KCTL_NTS, "spec.big", &u), KCTL_OK);
    KT_EQ_U64(u, UINT64_MAX);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.neg", &x), KCTL_OK);
    KT_CHECK(x == INT64_MIN);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.esc", buf, sizeof buf, &n), KCTL_OK);
    KT_EQ_STR(buf, "a\"b\\c\xc3\xa9\xf0\x9f\x98\x80\n");
    KT_EQ_U64(n, 12);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.nul", buf, sizeof buf, &n), KCTL_OK); /* a NUL inside: len says it */
    KT_EQ_U64(n, 3);
    KT_CHECK(memcmp(buf, "x\0y", 4) == 0);
    KT_EQ_INT(kctl_json_get_bool(t, KCTL_NTS, "spec.on", &b), KCTL_OK);
    KT_CHECK(b);
    KT_EQ_INT(kctl_json_get_bool(t, KCTL_NTS, "spec.off", &b), KCTL_OK);
    KT_CHECK(!b);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.strnum", &x), KCTL_OK); /* etcd's int64 as a string */
    KT_EQ_INT(x, 42);
    /* repeated names: the last counts, at every level */
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.rep", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "two");
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "d.x.z", &x), KCTL_OK);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "d.x.y", &x), KCTL_ERR_NOT_FOUND);
    /* names: quoted, empty, escaped in the document */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec[\"a.b\"][\"c[d]\"]", &x), KCTL_OK);
    KT_EQ_INT(x, 7);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec[\"a.b\"][\"q\\\"\"]", &x), KCTL_OK);
    KT_EQ_INT(x, 8);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec[\"\"]", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "empty name");
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.key", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "escaped name"); /* "k\u0065y" */
    /* nested arrays */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.nested[0][1][1]", &x), KCTL_OK);
    KT_EQ_INT(x, 3);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.nested[1].k[0].x", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "deep");
    /* the whole document, and a value as a view */
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, "", &v), KCTL_OK);
    KT_EQ_INT(v.type, KCTL_JSON_OBJECT);
    KT_CHECK(v.text == t + 1 && v.len == strlen(t) - 3); /* without the whitespace around */
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, NULL, &v), KCTL_OK);
    KT_EQ_INT(v.type, KCTL_JSON_OBJECT);
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, "spec.ntp.servers", &v), KCTL_OK);
    KT_EQ_INT(v.type, KCTL_JSON_ARRAY);
    KT_CHECK(v.len == strlen("[\"a.example\",\"b.example\"]") && memcmp(v.text, "[\"a.example\"", 12) == 0);
    KT_EQ_INT(kctl_json_value_get_string(&v, "[1]", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "b.example");
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, "spec.none", &v), KCTL_OK);
    KT_EQ_INT(v.type, KCTL_JSON_NULL);
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, "spec.ratio", &v), KCTL_OK);
    KT_EQ_INT(v.type, KCTL_JSON_NUMBER);
    KT_EQ_INT(kctl_json_value_get_double(&v, NULL, &f), KCTL_OK);
    KT_CHECK(f == 0.5);
    KT_EQ_INT(kctl_json_value_get_double(&v, "x", &f), KCTL_ERR_NOT_FOUND);
    /* a text of one scalar */
    KT_EQ_INT(kctl_json_get_int64(" 12 ", KCTL_NTS, "", &x), KCTL_OK);
    KT_EQ_INT(x, 12);
    KT_EQ_INT(kctl_json_get_string("\"s\"", 3, NULL, buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "s");
    KT_EQ_INT(kctl_json_get_int64("{\"a\":1,\"b\":2}", 7, "a", &x), KCTL_ERR_PROTO); /* len is exact: {"a":1, */
}

static void tj_get_errors(void) {
    const char *t = tj_getdoc;
    char buf[8];
    size_t n = 0;
    int64_t x = 5;
    uint64_t u = 5;
    double f = 5;
    bool b = true;
    kctl_json_value v;
    /* absent: NOT_FOUND */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.nope", &x), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "nope.deeper", &x), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.ntp.servers[2]", buf, sizeof buf, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.replicas.x", &x), KCTL_ERR_NOT_FOUND); /* into a scalar */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.ntp[0]", &x), KCTL_ERR_NOT_FOUND);    /* an index of an object */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.nested.k", &x), KCTL_ERR_NOT_FOUND);  /* a name in an array */
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, "items[0]", &v), KCTL_ERR_NOT_FOUND);
    KT_CHECK(v.text == NULL && v.len == 0 && v.type == KCTL_JSON_INVALID);
    KT_EQ_INT(x, 5); /* untouched */
    /* another type: INVALID_ARG, null included */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.name", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.ratio", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.frac", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.strbad", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.none", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.ntp", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_double(t, KCTL_NTS, "spec.strnum", &f), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_double(t, KCTL_NTS, "spec.none", &f), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_bool(t, KCTL_NTS, "spec.replicas", &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_bool(t, KCTL_NTS, "spec.none", &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.replicas", buf, sizeof buf, &n), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.ntp.servers", buf, sizeof buf, &n), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.none", buf, sizeof buf, &n), KCTL_ERR_INVALID_ARG);
    KT_CHECK(b && f == 5);
    /* out of range */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.big", &x), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.over", &x), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kctl_json_get_uint64(t, KCTL_NTS, "spec.over", &u), KCTL_OK);
    KT_EQ_U64(u, UINT64_C(9223372036854775808));
    KT_EQ_INT(kctl_json_get_uint64(t, KCTL_NTS, "spec.neg", &u), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kctl_json_get_uint64(t, KCTL_NTS, "spec.strneg", &u), KCTL_ERR_TOO_LARGE);
    /* the buffer too small: the length needed, buf "" */
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.ntp.servers[0]", buf, sizeof buf, &n), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(n, 9);
    KT_EQ_STR(buf, "");
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.ntp.servers[0]", NULL, 0, &n), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(n, 9);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.name", buf, 4, &n), KCTL_OK); /* "web" and its NUL */
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.name", buf, 3, &n), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kctl_json_get_string(t, KCTL_NTS, "spec.name", NULL, 3, &n), KCTL_ERR_INVALID_ARG);
    /* a malformed path: INVALID_ARG, found or not */
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec..replicas", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "nope..replicas", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.replicas.", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.replicas[", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec[\"replicas\"", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.ntp.servers[-1]", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.ntp.servers[4294967296]", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, ".spec", &x), KCTL_ERR_INVALID_ARG);
    /* invalid text, limits, NULL arguments */
    KT_EQ_INT(kctl_json_get_int64("{\"a\":1", KCTL_NTS, "a", &x), KCTL_ERR_PROTO);
    KT_EQ_INT(kctl_json_get_int64("{\"a\":1} x", KCTL_NTS, "a", &x), KCTL_ERR_PROTO);
    KT_EQ_INT(kctl_json_get_int64("{\"a\":01}", KCTL_NTS, "a", &x), KCTL_ERR_PROTO);
    KT_EQ_INT(kctl_json_get_string("{\"a\":\"\\x\"}", KCTL_NTS, "a", buf, sizeof buf, &n), KCTL_ERR_PROTO);
    KT_EQ_INT(kctl_json_get_int64("", 0, "", &x), KCTL_ERR_PROTO);
    {
        char deep[200];
        memset(deep, '[', 65);
        memset(deep + 65, ']', 65);
        deep[130] = '\0';
        KT_EQ_INT(kctl_json_get(deep, KCTL_NTS, "", &v), KCTL_ERR_TOO_LARGE);
        KT_EQ_INT(kctl_json_get(deep + 1, 128, "[0][0]", &v), KCTL_OK); /* 64 deep: fine */
    }
    KT_EQ_INT(kctl_json_get_int64(NULL, 0, "a", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get_int64(t, KCTL_NTS, "spec.replicas", NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, "spec", NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_value_get(NULL, "", &v), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_value_get_int64(NULL, "", &x), KCTL_ERR_INVALID_ARG);
}

static void tj_iterate(void) {
    const char *t = tj_getdoc;
    kctl_json_value root, name, v;
    kctl_json_iter it;
    char buf[64];
    int k = 0;
    static const char *const names[] = { "replicas", "ratio", "big", "neg", "over", "frac", "exp", "name", "esc", "nul",
                                         "on", "off", "none", "strnum", "strneg", "strbad", "ntp", "nested", "rep", "rep",
                                         "a.b", "", "key", "empty", "none2" };
    KT_EQ_INT(kctl_json_get(t, KCTL_NTS, NULL, &root), KCTL_OK);
    /* an array: its elements, no names */
    KT_EQ_INT(kctl_json_iter_begin(&root, "spec.ntp.servers", &it), KCTL_OK);
    KT_CHECK(kctl_json_iter_next(&it, &name, &v));
    KT_CHECK(name.text == NULL && name.len == 0 && name.type == KCTL_JSON_INVALID);
    KT_EQ_INT(kctl_json_value_get_string(&v, NULL, buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "a.example");
    KT_CHECK(kctl_json_iter_next(&it, NULL, &v));
    KT_EQ_INT(kctl_json_value_get_string(&v, "", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "b.example");
    KT_CHECK(!kctl_json_iter_next(&it, &name, &v));
    KT_CHECK(!kctl_json_iter_next(&it, &name, &v)); /* and stays at the end */
    KT_CHECK(v.text == NULL && v.len == 0);
    /* an object: every member as written, a repeated name each time */
    KT_EQ_INT(kctl_json_iter_begin(&root, "spec", &it), KCTL_OK);
    while (kctl_json_iter_next(&it, &name, &v)) {
        KT_EQ_INT(name.type, KCTL_JSON_STRING);
        KT_EQ_INT(kctl_json_value_get_string(&name, NULL, buf, sizeof buf, NULL), KCTL_OK);
        if (k < (int)(sizeof names / sizeof names[0])) KT_EQ_STR(buf, names[k]);
        if (strcmp(buf, "rep") == 0) KT_EQ_INT(v.type, k == 18 ? KCTL_JSON_NUMBER : KCTL_JSON_STRING);
        if (strcmp(buf, "nested") == 0) { /* nested: iterate an element of it, read by path from a value */
            kctl_json_iter in;
            kctl_json_value e;
            int m = 0;
            KT_EQ_INT(kctl_json_iter_begin(&v, "[1].k", &in), KCTL_OK);
            while (kctl_json_iter_next(&in, NULL, &e)) {
                KT_EQ_INT(kctl_json_value_get_string(&e, "x", buf, sizeof buf, NULL), KCTL_OK);
                KT_EQ_STR(buf, "deep");
                m++;
            }
            KT_EQ_INT(m, 1);
        }
        k++;
    }
    KT_EQ_INT(k, (int)(sizeof names / sizeof names[0]));
    /* empty containers; not containers; absent; NULLs */
    KT_EQ_INT(kctl_json_iter_begin(&root, "items", &it), KCTL_OK);
    KT_CHECK(!kctl_json_iter_next(&it, &name, &v));
    KT_EQ_INT(kctl_json_iter_begin(&root, "spec.empty", &it), KCTL_OK);
    KT_CHECK(!kctl_json_iter_next(&it, NULL, NULL));
    KT_EQ_INT(kctl_json_iter_begin(&root, "spec.name", &it), KCTL_ERR_INVALID_ARG);
    KT_CHECK(!kctl_json_iter_next(&it, &name, &v));
    KT_EQ_INT(kctl_json_iter_begin(&root, "spec.none", &it), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_iter_begin(&root, "spec.nope", &it), KCTL_ERR_NOT_FOUND);
    KT_CHECK(!kctl_json_iter_next(&it, &name, &v));
    KT_EQ_INT(kctl_json_iter_begin(&root, "spec..x", &it), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_iter_begin(NULL, "", &it), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_json_iter_begin(&root, "", NULL), KCTL_ERR_INVALID_ARG);
    KT_CHECK(!kctl_json_iter_next(NULL, &name, &v));
}

/* Views of text that is not JSON (made by hand, or cut short) never make a
   getter or an iterator read outside them: each prefix of a document is
   an exactly sized heap copy, so the sanitizers see any stray read. */
static void tj_get_views_of_bad_text(void) {
    size_t n, len = strlen(tj_getdoc) - 1; /* without the trailing newline */
    for (n = 0; n <= len; n++) {
        char *copy = (char *)malloc(n ? n : 1), buf[16];
        kctl_json_value v, e, name;
        kctl_json_iter it;
        int64_t x;
        memcpy(copy, tj_getdoc, n);
        v.text = copy + (n > 0);
        v.len = n - (n > 0);
        v.type = KCTL_JSON_OBJECT;
        (void)kctl_json_value_get(&v, "spec.nested[1].k[0].x", &e);
        (void)kctl_json_value_get_int64(&v, "d.x.z", &x);
        (void)kctl_json_value_get_string(&v, "spec.esc", buf, sizeof buf, NULL);
        if (kctl_json_iter_begin(&v, "spec", &it) == KCTL_OK)
            while (kctl_json_iter_next(&it, &name, &e)) (void)kctl_json_value_get_string(&name, NULL, buf, sizeof buf, NULL);
        KT_CHECK(kctl_json_get(copy, n, "", &e) == (n + 1 >= len ? KCTL_OK : KCTL_ERR_PROTO)); /* " {...}" and " {...} " */
        free(copy);
    }
    {   /* a value cut inside an escape, a number, a literal */
        static const char *const bad[] = { "\"ab\\u12", "\"\\", "-", "tru", "{\"a\":[1,", "[\"x", "{\"a\"", "{\"a\":}", "{1:2}" };
        size_t i;
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char *copy = (char *)malloc(strlen(bad[i])), buf[16];
            kctl_json_value v, e;
            int64_t x;
            int rc;
            memcpy(copy, bad[i], strlen(bad[i]));
            v.text = copy;
            v.len = strlen(bad[i]);
            v.type = KCTL_JSON_STRING;
            rc = kctl_json_value_get_string(&v, NULL, buf, sizeof buf, NULL);
            KT_CHECK(rc == KCTL_ERR_PROTO || rc == KCTL_ERR_INVALID_ARG);
            rc = kctl_json_value_get(&v, "a[0]", &e);
            KT_CHECK(rc == KCTL_ERR_PROTO || rc == KCTL_ERR_NOT_FOUND);
            rc = kctl_json_value_get_int64(&v, NULL, &x);
            KT_CHECK(rc == KCTL_ERR_PROTO || rc == KCTL_ERR_INVALID_ARG);
            free(copy);
        }
    }
}

/* ------------------------------ big documents: the work is counted, not timed */

/* Name comparisons allowed for n members: c * n * log2(n) (what sorting
   costs) and a little. A quadratic path makes n * n / 2 or more, past the
   bound from n = 1000 up (and hours of work at n = 1,000,000). */
static uint64_t tj_work_bound(uint64_t n, uint64_t c) {
    uint64_t lg = 1;
    while ((UINT64_C(1) << lg) < n) lg++;
    return c * n * lg + 1000;
}

#if defined(KCTL_SMALL) ? KCTL_SMALL : defined(__OPTIMIZE_SIZE__)
#define TJ_SMALL 1 /* kctl's small code (kctl.h, KCTL_SMALL) */
#else
#define TJ_SMALL 0
#endif

/* How tj_big_doc makes an object of n members named "m0000000",
   "m0000001", ..., in the order (i * step + 1) % n (step 1: sorted; a step
   prime to n: shuffled). */
typedef struct tj_big {
    uint32_t n, step;
    int kind;       /* 0: member i is i; 1 (a patch): null if i % 4 == 0, "v" if 1, else i;
                       2 (that patch applied to kind 0): absent if i % 4 == 0, "v" if 1, else i */
    uint32_t odd;   /* this member's value is -1 (UINT32_MAX: none) */
    uint32_t other; /* this member is named "z..." (UINT32_MAX: none) */
    uint32_t dups;  /* first, this many members repeating names that come later, with value old */
    const char *old; /* (NULL: "old") */
    uint32_t fresh; /* last, this many members "n0000000", ... with value i */
} tj_big;

static char *tj_big_doc(const tj_big *b, size_t *len) {
    char *t = (char *)malloc(((size_t)b->n + b->dups + b->fresh) * 24 + 8);
    size_t p = 0;
    uint32_t k;
    if (!t) return NULL;
    t[p++] = '{';
    for (k = 0; k < b->dups; k++)
        p += (size_t)sprintf(t + p, "%s\"m%07u\":\"%s\"", p > 1 ? "," : "", (unsigned)(k % b->n), b->old ? b->old : "old");
    for (k = 0; k < b->n; k++) {
        uint32_t i = (uint32_t)(((uint64_t)k * b->step + 1) % b->n);
        const char *sep = p > 1 ? "," : "";
        char c = i == b->other ? 'z' : 'm';
        if (b->kind == 2 && i % 4 == 0) continue;
        if (i == b->odd) p += (size_t)sprintf(t + p, "%s\"%c%07u\":-1", sep, c, (unsigned)i);
        else if (b->kind && i % 4 == 0) p += (size_t)sprintf(t + p, "%s\"%c%07u\":null", sep, c, (unsigned)i);
        else if (b->kind && i % 4 == 1) p += (size_t)sprintf(t + p, "%s\"%c%07u\":\"v\"", sep, c, (unsigned)i);
        else p += (size_t)sprintf(t + p, "%s\"%c%07u\":%u", sep, c, (unsigned)i, (unsigned)i);
    }
    for (k = 0; k < b->fresh; k++) p += (size_t)sprintf(t + p, "%s\"n%07u\":%u", p > 1 ? "," : "", (unsigned)k, (unsigned)k);
    t[p++] = '}';
    t[p] = '\0';
    *len = p;
    return t;
}

/* A big document, parsed into exactly sized tokens (NULL text: failed). */
static void tj_big_open(tj_doc *d, const tj_big *b) {
    size_t len = 0;
    kctl_json c;
    memset(d, 0, sizeof *d);
    d->text = tj_big_doc(b, &len);
    d->rc = d->text ? kctl_json_parse(d->text, len, NULL, 0, NULL, &c) : KCTL_ERR_NOMEM;
    if (d->rc == KCTL_OK && !(d->toks = (kctl_json_tok *)malloc((size_t)c.ntoks * sizeof *d->toks))) d->rc = KCTL_ERR_NOMEM;
    if (d->rc == KCTL_OK) d->rc = kctl_json_parse(d->text, len, d->toks, c.ntoks, NULL, &d->j);
    if (d->rc == KCTL_OK && d->j.ntoks != 1 + 2 * (b->n + b->dups + b->fresh - (b->kind == 2 ? (b->n + 3) / 4 : 0)))
        d->rc = KCTL_ERR_PROTO;
}

/* The same names in the same order, each twice, the first values
   different (shadowed by the second): equal when the second values are,
   and within n log n name comparisons (looking ahead at every value that
   differs would be quadratic: each looks half the object ahead). */
static void tj_equal_repeated_names(void) {
    static const uint32_t sizes[] = { 4, 500, 50000 }; /* names: twice as many members */
    size_t s;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        uint32_t n = 2 * sizes[s];
        tj_big ba = { 0 }, bb, bc;
        tj_doc a, b, c;
        uint64_t w0, work;
        int failed = kt.cur_failed;
        ba.n = ba.dups = sizes[s]; ba.step = 1; ba.odd = ba.other = UINT32_MAX; ba.old = "x";
        bb = ba; bb.old = "y";                  /* the first values differ */
        bc = bb; bc.odd = sizes[s] - 1;         /* and one second value */
        tj_big_open(&a, &ba);
        tj_big_open(&b, &bb);
        tj_big_open(&c, &bc);
        KT_EQ_INT(a.rc | b.rc | c.rc, KCTL_OK);
        if ((a.rc | b.rc | c.rc) == KCTL_OK) {
            w0 = kctl__json_work();
            KT_CHECK(kctl_json_equal(&a.j, 0, &b.j, 0));
            KT_CHECK(kctl_json_equal(&b.j, 0, &a.j, 0));
            KT_CHECK(!kctl_json_equal(&a.j, 0, &c.j, 0));
            work = kctl__json_work() - w0;
            if (work > tj_work_bound(n, 16))
                kt_fail(__FILE__, __LINE__, "equal, %u members, each name twice: %llu name comparisons, over %llu", (unsigned)n,
                        (unsigned long long)work, (unsigned long long)tj_work_bound(n, 16));
        }
        tj_close(&a);
        tj_close(&b);
        tj_close(&c);
        if (kt.cur_failed != failed) break; /* a quadratic path would take minutes at the next size */
    }
}

/* Objects of 1,000, 64,000 and 1,000,000 members: equal to a shuffled copy
   (with repeated names whose last value counts), unequal when one value or
   one name differs, merge patched; within n log n name comparisons. The
   sizes go up only while the work stays within the bound. */
static void tj_big_objects(void) {
    static const uint32_t sizes[] = { 1000, 64000, 1000000 };
    size_t s;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        uint32_t n = sizes[s];
        tj_big ba = { 0 }, bb, bc, bd, bp, be;
        tj_doc a, b, c, d, p, e, r;
        kctl_jw w;
        const char *t = NULL;
        size_t len = 0;
        uint64_t w0, work;
        int failed = kt.cur_failed;
        if (n >= 1000000 && kt_heavy("the 1,000,000-member size")) break;
        ba.n = n; ba.step = 1; ba.odd = ba.other = UINT32_MAX;
        bb = ba; bb.step = 7919; bb.dups = 16;   /* shuffled, 16 names twice */
        bc = bb; bc.odd = n / 2;                 /* one value differs */
        bd = bb; bd.other = n - 1;               /* one name differs */
        bp = bb; bp.kind = 1; bp.fresh = n / 8; /* null, "v", or the same; and new names */
        be = ba; be.kind = 2; be.fresh = n / 8; /* what that patch makes of a */
        tj_big_open(&a, &ba);
        tj_big_open(&b, &bb);
        tj_big_open(&c, &bc);
        tj_big_open(&d, &bd);
        tj_big_open(&p, &bp);
        tj_big_open(&e, &be);
        KT_EQ_INT(a.rc | b.rc | c.rc | d.rc | p.rc | e.rc, KCTL_OK);
        if (a.rc | b.rc | c.rc | d.rc | p.rc | e.rc) goto next;
        w0 = kctl__json_work();
        KT_CHECK(kctl_json_equal(&a.j, 0, &b.j, 0));
        KT_CHECK(kctl_json_equal(&b.j, 0, &a.j, 0));
        KT_CHECK(!kctl_json_equal(&a.j, 0, &c.j, 0));
        KT_CHECK(!kctl_json_equal(&d.j, 0, &a.j, 0));
        work = kctl__json_work() - w0;
        if (work > tj_work_bound(n, 16))
            kt_fail(__FILE__, __LINE__, "equal, %u members: %llu name comparisons, over %llu", (unsigned)n,
                    (unsigned long long)work, (unsigned long long)tj_work_bound(n, 16));
        { /* the same names in the same order: side by side, linear */
            tj_big bf = ba, bh = ba;
            tj_doc f, g, h;
            bf.odd = n / 2;    /* one value differs */
            bh.other = n - 1; /* the last name differs: sorted after a walk over the names */
            tj_big_open(&f, &bf);
            tj_big_open(&g, &ba);
            tj_big_open(&h, &bh);
            KT_EQ_INT(f.rc | g.rc | h.rc, KCTL_OK);
            if ((f.rc | g.rc | h.rc) == KCTL_OK) {
                w0 = kctl__json_work();
                KT_CHECK(kctl_json_equal(&a.j, 0, &g.j, 0));
                KT_CHECK(!kctl_json_equal(&f.j, 0, &a.j, 0));
                work = kctl__json_work() - w0;
                if (!TJ_SMALL && work > 3 * (uint64_t)n) /* (small builds sort them: less code) */
                    kt_fail(__FILE__, __LINE__, "equal in order, %u members: %llu name comparisons, over %llu", (unsigned)n,
                            (unsigned long long)work, (unsigned long long)(3 * (uint64_t)n));
                w0 = kctl__json_work();
                KT_CHECK(!kctl_json_equal(&a.j, 0, &h.j, 0));
                work = kctl__json_work() - w0;
                if (work > tj_work_bound(n, 4))
                    kt_fail(__FILE__, __LINE__, "equal, a name differs, %u members: %llu name comparisons, over %llu",
                            (unsigned)n, (unsigned long long)work, (unsigned long long)tj_work_bound(n, 4));
            }
            tj_close(&f); tj_close(&g); tj_close(&h);
        }
        w0 = kctl__json_work();
        kctl_jw_init_growable(&w, NULL);
        KT_EQ_INT(kctl_json_merge_patch(&a.j, 0, &p.j, 0, &w), KCTL_OK);
        KT_EQ_INT(kctl_jw_finish(&w, &t, &len), KCTL_OK);
        if (t) {
            kctl_json cnt;
            memset(&r, 0, sizeof r);
            KT_EQ_INT(kctl_json_parse(t, len, NULL, 0, NULL, &cnt), KCTL_OK);
            r.toks = (kctl_json_tok *)malloc((size_t)cnt.ntoks * sizeof *r.toks);
            KT_EQ_INT(kctl_json_parse(t, len, r.toks, cnt.ntoks, NULL, &r.j), KCTL_OK);
            KT_EQ_U64(r.toks[0].size, n - (n + 3) / 4 + n / 8); /* each name once */
            KT_CHECK(kctl_json_equal(&r.j, 0, &e.j, 0));
            /* the document's order, then the new names in the patch's */
            KT_EQ_STR(tj_str(&r.j, 1), "m0000001");
            KT_EQ_STR(tj_str(&r.j, 1 + 2 * (r.toks[0].size - n / 8)), "n0000000");
            free(r.toks);
        }
        kctl_jw_free(&w);
        work = kctl__json_work() - w0;
        if (work > tj_work_bound(n, 8))
            kt_fail(__FILE__, __LINE__, "merge patch, %u members: %llu name comparisons, over %llu", (unsigned)n,
                    (unsigned long long)work, (unsigned long long)tj_work_bound(n, 8));
    next:
        tj_close(&a); tj_close(&b); tj_close(&c); tj_close(&d); tj_close(&p); tj_close(&e);
        if (kt.cur_failed != failed) break; /* a quadratic path would take hours at the next size */
    }
}

/* A getter's work is linear: a member of a 1,000,000-member object (the
   last of a repeated name), an element at the end of a 1,000,000-element
   array; an iteration over all of them. */
static void tj_get_big(void) {
    const uint32_t n = 1000000;
    tj_big bb;
    size_t len = 0, p, i;
    char *obj, *arr;
    int64_t x = 0;
    uint64_t w0, count = 0, sum = 0;
    kctl_json_value root, v;
    kctl_json_iter it;
    if (kt_heavy("the whole test (1,000,000-member documents)")) return;
    memset(&bb, 0, sizeof bb);
    bb.n = n; bb.step = 7919; bb.dups = 3; bb.odd = bb.other = UINT32_MAX;
    obj = tj_big_doc(&bb, &len);
    arr = (char *)malloc((size_t)n * 8 + 8);
    if (!obj || !arr) { free(obj); free(arr); KT_CHECK(!"memory"); return; }
    w0 = kctl__json_work();
    KT_EQ_INT(kctl_json_get_int64(obj, len, "m0000001", &x), KCTL_OK); /* first in the document, and after 3 "old" */
    KT_EQ_INT(x, 1);
    KT_EQ_INT(kctl_json_get_int64(obj, len, "[\"m0999999\"]", &x), KCTL_OK);
    KT_EQ_INT(x, 999999);
    KT_EQ_INT(kctl_json_get_int64(obj, len, "m1000000", &x), KCTL_ERR_NOT_FOUND);
    KT_CHECK(kctl__json_work() - w0 <= 3 * ((uint64_t)n + 3)); /* one comparison a member a lookup */
    KT_EQ_INT(kctl_json_get(obj, len, NULL, &root), KCTL_OK);
    KT_EQ_INT(kctl_json_iter_begin(&root, NULL, &it), KCTL_OK);
    while (kctl_json_iter_next(&it, NULL, &v)) count++;
    KT_EQ_U64(count, n + 3);
    p = 0;
    arr[p++] = '[';
    for (i = 0; i < n; i++) p += (size_t)sprintf(arr + p, "%s%u", i ? "," : "", (unsigned)i);
    arr[p++] = ']';
    KT_EQ_INT(kctl_json_get_int64(arr, p, "[999999]", &x), KCTL_OK);
    KT_EQ_INT(x, 999999);
    KT_EQ_INT(kctl_json_get_int64(arr, p, "[1000000]", &x), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_json_get(arr, p, NULL, &root), KCTL_OK);
    KT_EQ_INT(kctl_json_iter_begin(&root, NULL, &it), KCTL_OK);
    count = 0;
    while (kctl_json_iter_next(&it, NULL, &v) && kctl_json_value_get_int64(&v, NULL, &x) == KCTL_OK) {
        sum += (uint64_t)x;
        count++;
    }
    KT_EQ_U64(count, n);
    KT_EQ_U64(sum, (uint64_t)n * (n - 1) / 2);
    free(obj);
    free(arr);
}

/* ---- kctl's own number formatting and parsing (no printf, no strtod in
   the implementation): exactly what the C library gives, over edge and
   random values. */
static uint64_t tj_rng = 0x2545f4914f6cdd1dULL;
static uint64_t tj_rand(void) {
    tj_rng ^= tj_rng << 13;
    tj_rng ^= tj_rng >> 7;
    tj_rng ^= tj_rng << 17;
    return tj_rng;
}

/* kctl__fmt against snprintf: every conversion kctl writes, every cap. */
static void tj_fmt_matches_snprintf(void) {
    static const uint64_t edge[] = { 0, 1, 9, 10, 99, 255, 4096, 65535, 2147483647ULL, 2147483648ULL, 4294967295ULL,
                                     4294967296ULL, 9223372036854775807ULL, 9223372036854775808ULL, 18446744073709551615ULL };
    int i, bad = 0;
    for (i = 0; i < 6000; i++) {
        uint64_t u = i < 15 ? edge[i] : i < 30 ? (uint64_t)0 - edge[i - 15] : tj_rand() >> (tj_rand() % 64);
        char a[96], b[96];
        int ka, kb;
        size_t cap;
        const char *s = i % 3 ? "default/web" : "";
#define TJ_CMP(...) do { \
            ka = kctl__test_fmt(a, sizeof a, __VA_ARGS__); kb = snprintf(b, sizeof b, __VA_ARGS__); \
            if (ka != kb || strcmp(a, b) != 0) { if (bad++ < 5) printf("fmt: <%s> (%d) != <%s> (%d)\n", a, ka, b, kb); } \
        } while (0)
        TJ_CMP("%llu|%lld|%llx|%016llx|%012llx", (unsigned long long)u, (long long)u, (unsigned long long)u,
               (unsigned long long)u, (unsigned long long)u);
        TJ_CMP("%d %u %x %02d %04d %06d %09llu", (int)u, (unsigned)u, (unsigned)u, (int)(u % 1000), (int)(int16_t)u,
               (int)(u % 1000000), (unsigned long long)(u % 1000000000));
        TJ_CMP("%lu %ld %zu %02x %c%%", (unsigned long)u, (long)u, (size_t)u, (unsigned)(u & 0xff), (char)('a' + u % 26));
        TJ_CMP("%s/%.*s|%5s|%-5s|%-6d|%.3s", s, (int)(u % 12), "namespace/name", s, s, (int)(int8_t)u, s);
        for (cap = 0; cap < 24; cap += 1 + (size_t)(u % 3)) { /* truncation: the same bytes, the same would-be length */
            memset(a, 'x', sizeof a);
            memset(b, 'x', sizeof b);
            ka = kctl__test_fmt(a, cap, "%s:%llu", s, (unsigned long long)u);
            kb = snprintf(b, cap, "%s:%llu", s, (unsigned long long)u);
            if (ka != kb || memcmp(a, b, sizeof a) != 0) bad++;
        }
#undef TJ_CMP
    }
    KT_EQ_INT(bad, 0);
}

/* kctl's own string functions (the -Os builds call them instead of libc's)
   against libc's: the sign of a comparison (bytes as unsigned char: texts
   with bytes past 127), strncmp's bound, strchr of the NUL, memcmp and
   memchr past a NUL, memcpy apart, memmove's overlaps both ways. */
static int tj_sign(int v) { return (v > 0) - (v < 0); }
static void tj_own_strings(void) {
    static const char bytes[] = "ab/\x80\xff";
    int i, bad = 0;
    for (i = 0; i < 20000; i++) {
        char a[12], b[12], m[40], r[40];
        size_t la = (size_t)(tj_rand() % 8), lb = (size_t)(tj_rand() % 8), k, n = (size_t)(tj_rand() % 10);
        size_t from = (size_t)(tj_rand() % 16), to = (size_t)(tj_rand() % 16), len = (size_t)(tj_rand() % 24);
        int c = (unsigned char)bytes[tj_rand() % sizeof bytes]; /* the NUL too */
        const char *hit;
        memset(a, 'z', sizeof a);
        memset(b, 'z', sizeof b);
        for (k = 0; k < la; k++) a[k] = bytes[tj_rand() % (sizeof bytes - 1)];
        for (k = 0; k < lb; k++) b[k] = k < la && tj_rand() % 4 ? a[k] : bytes[tj_rand() % (sizeof bytes - 1)];
        a[la] = b[lb] = '\0';
        if (tj_sign(kctl__test_own_str(0, a, b, 0)) != tj_sign(strcmp(a, b))) bad++;
        if (tj_sign(kctl__test_own_str(1, a, b, n)) != tj_sign(strncmp(a, b, n))) bad++;
        if (kctl__test_own_str(2, a, NULL, 0) != (int)strlen(a)) bad++;
        hit = strchr(a, c);
        if (kctl__test_own_str(3, a, NULL, (size_t)c) != (hit ? (int)(hit - a) : -1)) bad++;
        k = n < sizeof a ? n : sizeof a; /* memcmp and memchr over n bytes, NULs and what follows included */
        if (tj_sign(kctl__test_own_str(5, a, b, k)) != tj_sign(memcmp(a, b, k))) bad++;
        {
            char ch = (char)c;
            hit = (const char *)memchr(a, c, k);
            if (kctl__test_own_str(6, a, &ch, k) != (hit ? (int)(hit - a) : -1)) bad++;
        }
        for (k = 0; k < sizeof m; k++) m[k] = r[k] = (char)('A' + k);
        if (to + len <= from || from + len <= to) { /* memcpy: apart */
            memcpy(r + to, r + from, len);
            if (kctl__test_own_str(7, m + to, m + from, len) != 0 || memcmp(m, r, sizeof m) != 0) bad++;
            for (k = 0; k < sizeof m; k++) m[k] = r[k] = (char)('A' + k);
        }
        memmove(r + to, r + from, len);
        kctl__test_own_str(4, m + to, m + from, len);
        if (memcmp(m, r, sizeof m) != 0) bad++;
    }
    KT_EQ_INT(bad, 0);
}

/* kctl's own 64-bit division (-Os builds on 32-bit targets) against the
   compiler's: both operands in 32 bits (the hardware's division), either
   past them (shift and subtract), divisors past 2^63, quotients 0 and 1. */
static void tj_own_udiv64(void) {
    static const uint64_t edge[] = { 1, 2, 3, 7, 10, 27, 1000, 86400, 1000000, 1000000000, 4294967295ULL, 4294967296ULL,
                                     9223372036854775807ULL, 9223372036854775808ULL, 18446744073709551615ULL };
    int i, bad = 0;
    for (i = 0; i < 40000; i++) {
        uint64_t n = i < 225 ? edge[i % 15] : tj_rand() >> (tj_rand() % 64);
        uint64_t d = i < 225 ? edge[i / 15] : i % 3 ? edge[(size_t)(tj_rand() % 15)] : tj_rand() >> (tj_rand() % 64);
        uint64_t r = 0, q;
        if (i >= 225 && i % 5 == 0) n = (uint64_t)0 - n;
        if (d == 0) d = 1;
        q = kctl__test_own_udiv64(n, d, &r);
        if (q != n / d || r != n % d) {
            if (bad++ < 5) printf("udiv64: %llu / %llu: %llu r %llu\n", (unsigned long long)n, (unsigned long long)d,
                                  (unsigned long long)q, (unsigned long long)r);
        }
    }
    KT_EQ_INT(bad, 0);
}

/* kctl's RFC 3339 times against the C library's gmtime_r: days of
   0000-9999 (every day of the first 400-year era and of 1900-2099, every 37th
   elsewhere) at their first and last microsecond and at a random time,
   whole seconds and micro; before 0000 and past 9999 clamped. */
static void tj_time_format(void) {
    int64_t d, bad = 0, dense = kt_emulated() ? 4 : 1; /* under emulation every 4th day (one leap day in four: 1461 is 1 mod 4) */
    char a[32], b[48];
    for (d = -719528 - 200000; d < 2932897 + 200000; /* 0000-01-01 to 9999-12-31 (and around): */
         d += d < -719528 || d >= 2932897 ? 9973 : d < -719528 + 146097 || (d >= -25567 && d < 47482) ? dense : 37) { /* every day of 0000-0399 and 1900-2099 */
        int k;
        for (k = 0; k < 3; k++) {
            int64_t s = d * 86400 + (k == 0 ? 0 : k == 1 ? 86399 : (int64_t)(tj_rand() % 86400));
            int64_t us = s * 1000000 + (k == 1 ? 999999 : k == 2 ? (int64_t)(tj_rand() % 1000000) : 0);
            int64_t c = s < -62167219200LL ? -62167219200LL : s > 253402300799LL ? 253402300799LL : s;
            time_t t = (time_t)c;
            struct tm tm;
            if ((int64_t)t != c) continue; /* a 32-bit time_t: 1901-2038 only */
            if (!gmtime_r(&t, &tm)) { bad++; continue; }
            snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, s > c ? 999999 : s < c ? 0 : (int)(us - s * 1000000));
            kctl__test_time_format(us, true, a);
            if (strcmp(a, b) != 0 && bad++ < 5) printf("time: %lld: %s, want %s\n", (long long)us, a, b);
            strcpy(b + 19, "Z");
            kctl__test_time_format(us, false, a);
            if (strcmp(a, b) != 0 && bad++ < 5) printf("time: %lld: %s, want %s\n", (long long)us, a, b);
        }
    }
    KT_EQ_INT((int)bad, 0);
}

/* Integers written by the writer and read by the reader, against libc. */
static void tj_int_roundtrip(void) {
    int i, bad = 0;
    for (i = 0; i < 20000; i++) {
        int64_t v = i == 0 ? INT64_MIN : i == 1 ? INT64_MAX : i == 2 ? 0 : i == 3 ? -1 : (int64_t)(tj_rand() >> (tj_rand() % 64));
        uint64_t u = i == 0 ? UINT64_MAX : (uint64_t)v * 3u;
        char buf[64], ref[64];
        const char *t;
        kctl_jw w;
        int64_t back = 0;
        uint64_t uback = 0;
        if (i % 2) v = -v - (v > 0);
        kctl_jw_init(&w, buf, sizeof buf);
        kctl_jw_array_begin(&w);
        kctl_jw_int64(&w, v);
        kctl_jw_uint64(&w, u);
        kctl_jw_array_end(&w);
        if (kctl_jw_finish(&w, &t, NULL) != KCTL_OK) { bad++; continue; }
        snprintf(ref, sizeof ref, "[%lld,%llu]", (long long)v, (unsigned long long)u);
        if (strcmp(t, ref) != 0) bad++;
        if (kctl_json_get_int64(t, KCTL_NTS, "[0]", &back) != KCTL_OK || back != v) bad++;
        if (kctl_json_get_uint64(t, KCTL_NTS, "[1]", &uback) != KCTL_OK || uback != u) bad++;
        if (back != strtoll(t + 1, NULL, 10)) bad++;
    }
    KT_EQ_INT(bad, 0);
}

/* What kctl_jw_double wrote before: the shortest %.{p}g that strtod reads back. */
static void tj_ref_double(double v, char *buf, size_t cap) {
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static double tj_bits(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static int tj_double_check(double v) {
    char buf[64], ref[64];
    const char *t;
    size_t n;
    kctl_jw w;
    double back = 0;
    uint64_t a, b;
    tj_ref_double(v, ref, sizeof ref);
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_double(&w, v);
    if (kctl_jw_finish(&w, &t, &n) != KCTL_OK || strcmp(t, ref) != 0) {
        printf("double %.17g: wrote <%s>, libc <%s>\n", v, kctl_jw_finish(&w, &t, &n) == KCTL_OK ? t : "", ref);
        return 1;
    }
    if (kctl_json_get_double(t, n, "", &back) != KCTL_OK) return 1;
    memcpy(&a, &back, sizeof a);
    memcpy(&b, &v, sizeof b);
    if (a != b) {
        printf("double <%s>: read back %.17g\n", t, back);
        return 1;
    }
    return 0;
}

/* kctl_jw_double writes what printf's shortest %g did, and reads back the
   same bits: edges (0, -0.0, subnormals, DBL_MIN, DBL_MAX, 1e-320, powers
   of ten and two) and random bit patterns and short decimals. */
static void tj_double_write_matches_printf(void) {
    static const double edge[] = { 0.0, 1.0, -1.0, 0.1, 0.5, 1e-320, 4.9406564584124654e-324, 2.2250738585072009e-308,
                                   DBL_MIN, DBL_MAX, -DBL_MAX, DBL_EPSILON, 1e21, 1e22, 1e23, 123456789012345680.0,
                                   9007199254740993.0, 0.30000000000000004, 1e-5, 1e-4, 123456.0, 1e16, 1e17, 5e-324 };
    size_t i;
    int bad = 0;
    bad += tj_double_check(-0.0);
    for (i = 0; i < sizeof edge / sizeof edge[0]; i++) bad += tj_double_check(edge[i]) + tj_double_check(-edge[i]);
    for (i = 0; i < 1100; i++) {
        char p10[16];
        snprintf(p10, sizeof p10, "1e%d", (int)i % 632 - 323); /* 1e-323 .. 1e308 */
        bad += tj_double_check(ldexp(1.0, (int)i - 1074)) + tj_double_check(strtod(p10, NULL));
    }
    for (i = 0; i < (size_t)kt_share(20000) && bad < 10; i++) {
        uint64_t b = tj_rand();
        double v = tj_bits(b);
        if (((b >> 52) & 0x7ff) == 0x7ff) continue;
        bad += tj_double_check(v);
        bad += tj_double_check((double)(int64_t)(tj_rand() % 2000001 - 1000000) / (double)(1 + tj_rand() % 1000));
    }
    KT_EQ_INT(bad, 0);
}

/* kctl_json_double reads what strtod reads, bit for bit: random decimals
   of 1 to 30 digits at every exponent, the exact halfway points between
   neighbouring doubles and just off them, overflow and underflow edges,
   and numbers of more than 800 digits. */
static int tj_parse_check(const char *text) {
    double a = 0, b = strtod(text, NULL);
    uint64_t x, y;
    if (kctl_json_get_double(text, KCTL_NTS, "", &a) != KCTL_OK) {
        printf("parse <%.60s>: not read\n", text);
        return 1;
    }
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    if (x != y) {
        printf("parse <%.60s>: %.17g, strtod %.17g\n", text, a, b);
        return 1;
    }
    return 0;
}

static void tj_double_parse_matches_strtod(void) {
    static const char *const edge[] = { "0", "-0", "-0.0e5", "1", "2.4703282292062327e-324", "2.4703282292062328e-324",
                                        "4.9406564584124654e-324", "1e-400", "1e400", "-1e400", "1.7976931348623157e308",
                                        "1.7976931348623158e308", "1.7976931348623159e308", "2.2250738585072011e-308",
                                        "2.2250738585072012e-308", "9007199254740993", "9007199254740992.5",
                                        "0.000000000000000000000000000000000000000000001e45", "123456789012345678901234567890e-30",
                                        "1e23", "8.98846567431158e307", "1e-320", "1E+2", "0.1e1", "100000000000000000000000e-24" };
    static char big[2600];
    size_t i;
    int bad = 0;
    for (i = 0; i < sizeof edge / sizeof edge[0]; i++) bad += tj_parse_check(edge[i]);
    for (i = 0; i < 20000 && bad < 10; i++) {
        char t[96];
        int nd = 1 + (int)(tj_rand() % 30), k, n = 0;
        if (tj_rand() % 2) t[n++] = '-';
        t[n++] = (char)('1' + tj_rand() % 9);
        for (k = 1; k < nd; k++) {
            if (k == 1 && tj_rand() % 2) t[n++] = '.';
            t[n++] = (char)('0' + tj_rand() % 10);
        }
        n += snprintf(t + n, sizeof t - (size_t)n, "e%d", (int)(tj_rand() % 680) - 345);
        bad += tj_parse_check(t);
    }
#if LDBL_MANT_DIG >= 64 && DBL_MANT_DIG == 53
    for (i = 0; i < 3000 && bad < 10; i++) { /* halfway between two doubles, exactly, and just either side */
        uint64_t b = tj_rand() & ~(UINT64_C(1) << 63);
        double lo = tj_bits(b), hi;
        long double mid;
        int len;
        if (((b >> 52) & 0x7ff) >= 0x7fe) continue;
        hi = tj_bits(b + 1);
        mid = ((long double)lo + (long double)hi) / 2;
        len = snprintf(big, sizeof big, "%.780Le", mid);
        bad += tj_parse_check(big);
        if (len > 0) {
            char *e = strchr(big, 'e'), save[16];
            size_t m;
            if (!e) continue;
            m = (size_t)(e - big);
            memcpy(save, e, strlen(e) + 1);
            for (; m > 2 && big[m - 1] == '0'; m--) { } /* the exact expansion, then one digit more or less */
            big[m] = '1';
            memcpy(big + m + 1, save, strlen(save) + 1);
            bad += tj_parse_check(big);
            if (big[m - 1] > '0' && big[m - 1] <= '9') {
                big[m - 1]--;
                big[m] = '9';
                bad += tj_parse_check(big);
            }
        }
    }
#endif
    for (i = 0; i < 200; i++) { /* over 800 digits: the ones past 800 still decide */
        size_t k, n = 0, nd = 801 + (size_t)(tj_rand() % 1500);
        big[n++] = (char)('1' + tj_rand() % 9);
        big[n++] = '.';
        for (k = 1; k < nd; k++) big[n++] = i % 2 ? (char)('0' + tj_rand() % 10) : k + 1 == nd ? '1' : '0';
        snprintf(big + n, sizeof big - n, "e%d", (int)(tj_rand() % 600) - 300);
        bad += tj_parse_check(big);
    }
    KT_EQ_INT(bad, 0);
}

void kt_suite_json(void) {
    KT_RUN(tj_fmt_matches_snprintf);
    KT_RUN(tj_own_strings);
    KT_RUN(tj_own_udiv64);
    KT_RUN(tj_time_format);
    KT_RUN(tj_int_roundtrip);
    KT_RUN(tj_double_write_matches_printf);
    KT_RUN(tj_double_parse_matches_strtod);
    KT_RUN(tj_parse_tokens_exact);
    KT_RUN(tj_parse_top_level_scalars);
    KT_RUN(tj_parse_whitespace_everywhere);
    KT_RUN(tj_parse_valid_table);
    KT_RUN(tj_parse_counting_and_full);
    KT_RUN(tj_parse_bad_args);
    KT_RUN(tj_parse_length_bounds_text);
    KT_RUN(tj_parse_invalid_table);
    KT_RUN(tj_parse_depth_limit);
    KT_RUN(tj_parse_size_limit);
    KT_RUN(tj_string_escapes);
    KT_RUN(tj_string_surrogate_pair);
    KT_RUN(tj_string_scan_every_position);
    KT_RUN(tj_string_too_large);
    KT_RUN(tj_string_eq);
    KT_RUN(tj_int64);
    KT_RUN(tj_uint64);
    KT_RUN(tj_double);
    KT_RUN(tj_double_long_numbers);
    KT_RUN(tj_bool);
    KT_RUN(tj_raw);
    KT_RUN(tj_member);
    KT_RUN(tj_element);
    KT_RUN(tj_path);
    KT_RUN(tj_equal_table);
    KT_RUN(tj_equal_none_and_subvalues);
    KT_RUN(tj_writer_kinds_fixed);
    KT_RUN(tj_writer_kinds_growable);
    KT_RUN(tj_writer_top_level_scalars);
    KT_RUN(tj_writer_integers);
    KT_RUN(tj_writer_escaping);
    KT_RUN(tj_writer_fixed_full);
    KT_RUN(tj_writer_growable_big_and_nomem);
    KT_RUN(tj_writer_misuse);
    KT_RUN(tj_writer_depth);
    KT_RUN(tj_writer_doubles_roundtrip);
    KT_RUN(tj_writer_value_copies);
    KT_RUN(tj_merge_rfc7386_appendix_a);
    KT_RUN(tj_merge_kubernetes);
    KT_RUN(tj_merge_replace_and_none);
    KT_RUN(tj_merge_into_writer);
    KT_RUN(tj_merge_big_nomem);
    KT_RUN(tj_kubernetes_and_etcd_documents);
    KT_RUN(tj_get_agrees_with_tokens);
    KT_RUN(tj_get_values);
    KT_RUN(tj_get_errors);
    KT_RUN(tj_iterate);
    KT_RUN(tj_get_views_of_bad_text);
    KT_RUN(tj_big_objects);
    KT_RUN(tj_equal_repeated_names);
    KT_RUN(tj_get_big);
}
