/* test_selector.c - label and field selectors as Kubernetes writes them.
   The tables hold cases from apimachinery's own tests (labels: TestSelectorParse,
   TestSelectorMatches, TestSetSelectorParser, TestLexer, TestLexerSequence,
   TestParserLookahead, TestRequirementConstructor, TestRequirementSelectorMatching;
   validation: TestIsLabelKey, TestIsLabelValue, TestIsDNS1123Subdomain;
   fields: TestSplitTerms, TestSplitTerm, TestEscapeValue, TestSelectorParse,
   TestSelectorMatches), rewritten as selector strings against kctl objects,
   and cases of our own read off labels.Parse and fields.ParseSelector. */
#include "kt.h"
#include <stdlib.h>

static kctl_obj *ts_obj(const char *ns, const char *name, const char *labels_json) {
    char doc[512];
    kctl_obj *o = NULL;
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"%s%s%s,\"labels\":%s}}", name,
             ns ? ",\"namespace\":\"" : "", ns ? ns : "", ns ? "\"" : "", labels_json);
    if (kctl_obj_parse(doc, strlen(doc), NULL, &o) != KCTL_OK) kt_fail(__FILE__, __LINE__, "bad object %s", doc);
    return o;
}

/* Whether labels/fields select obj; -1 if the selector does not parse. */
static int ts_sel(const char *labels, const char *fields, const kctl_obj *obj) {
    kctl_selector *s = NULL;
    int m;
    if (kctl_selector_parse(labels, fields, NULL, &s) != KCTL_OK) return -1;
    m = kctl_selector_matches(s, obj) ? 1 : 0;
    kctl_selector_free(s);
    return m;
}

/* The selector with control characters written out, for failure lines. */
static const char *ts_show(const char *s) {
    static char buf[4][160];
    static int k;
    char *b = buf[k++ & 3];
    size_t n = 0;
    for (; *s && n + 8 < sizeof buf[0]; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n') n += (size_t)snprintf(b + n, 8, "\\n");
        else if (c == '\r') n += (size_t)snprintf(b + n, 8, "\\r");
        else if (c == '\t') n += (size_t)snprintf(b + n, 8, "\\t");
        else if (c < 0x20 || c >= 0x7f) n += (size_t)snprintf(b + n, 8, "\\x%02x", c);
        else b[n++] = (char)c;
    }
    b[n] = '\0';
    return b;
}

/* The label sets every label case runs against, by column. */
#define TS_NSETS 10
static const char *const ts_sets[TS_NSETS] = {
    "{}",                                                      /* 0 */
    "{\"x\":\"a\"}",                                           /* 1 */
    "{\"x\":\"\"}",                                            /* 2 */
    "{\"x\":\"b\",\"y\":\"c\"}",                               /* 3 */
    "{\"x\":\"2\",\"y\":\"\"}",                                /* 4 */
    "{\"x\":\"-3\"}",                                          /* 5: ParseInt reads a sign */
    "{\"x\":\"+7\"}",                                          /* 6 */
    "{\"x\":\"v2\"}",                                          /* 7: no integer */
    "{\"x\":\"99999999999999999999\"}",                        /* 8: past int64 */
    "{\"in\":\"notin\",\"notin\":\"in\",\"example.com/k\":\"\"}", /* 9 */
};

/* A label case: the selector, and NULL if labels.Parse rejects it, else one
   '1' (selected) or '0' per label set above. */
typedef struct ts_case {
    const char *sel;
    const char *want;
} ts_case;

static void ts_label_cases(const ts_case *c, size_t n, int line) {
    kctl_obj *o[TS_NSETS];
    size_t i, j;
    for (j = 0; j < TS_NSETS; j++) o[j] = ts_obj("ns", "o", ts_sets[j]);
    for (i = 0; i < n; i++) {
        kctl_selector *s = (kctl_selector *)&i;
        int rc = kctl_selector_parse(c[i].sel, NULL, NULL, &s);
        if (!c[i].want) {
            if (rc != KCTL_ERR_INVALID_ARG || s != NULL)
                kt_fail(__FILE__, line, "labels <%s>: parsed (rc %d), want INVALID_ARG", ts_show(c[i].sel), rc);
            continue;
        }
        if (rc != KCTL_OK) {
            kt_fail(__FILE__, line, "labels <%s>: rc %d, want it to parse", ts_show(c[i].sel), rc);
            continue;
        }
        for (j = 0; j < TS_NSETS; j++)
            if (kctl_selector_matches(s, o[j]) != (c[i].want[j] == '1'))
                kt_fail(__FILE__, line, "labels <%s> on set %u %s: %s, want %s", ts_show(c[i].sel), (unsigned)j, ts_sets[j],
                        c[i].want[j] == '1' ? "no match" : "match", c[i].want[j] == '1' ? "match" : "no match");
        kctl_selector_free(s);
    }
    for (j = 0; j < TS_NSETS; j++) kctl_obj_unref(o[j]);
}
#define TS_LABELS(cases) ts_label_cases(cases, sizeof cases / sizeof cases[0], __LINE__)

/* Cases from apimachinery's label selector tests. */
static void ts_apimachinery(void) {
    static const ts_case cases[] = {
        /* TestSelectorParse */
        { "x=a,y=b,z=c", "0000000000" },
        { "", "1111111111" },
        { "x!=a,y=b", "0000000000" },
        { "x=", "0010000000" },
        { "x= ", "0010000000" },
        { "x=,z= ", "0000000000" },
        { "x= ,z= ", "0000000000" },
        { "!x", "1000000001" },
        { "x>1", "0000101000" },
        { "x>1,z<5", "0000000000" },
        { "x=a||y=b", NULL },
        { "x==a==b", NULL },
        { "!x=a", NULL },
        { "x<a", NULL },
        /* TestSelectorMatches */
        { "x=y,z=w", "0000000000" },
        { "x!=y,z!=w", "1111111111" },
        { "notin=in", "0000000001" },
        { "x", "0111111110" },
        { "x<1", "0000010000" },
        { "x=z", "0000000000" },
        /* TestSetSelectorParser */
        { "\rx", "0111111110" },
        { "this-is-a-dns.domain.com/key-with-dash", "0000000000" },
        { "this-is-another-dns.domain.com/key-with-dash in (so,what)", "0000000000" },
        { "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)", "1111111111" },
        { "foo  in\t (abc)", "0000000000" },
        { "x notin\n (abc)", "1111111111" },
        { "x  notin\t\t\t(abc,def)", "1111111111" },
        { "x in (abc,def)", "0000000000" },
        { "x in (abc,)", "0010000000" },
        { "x in ()", "0010000000" },
        { "x notin (abc,,def),bar,z in (),w", "0000000000" },
        { "x,y in (a)", "0000000000" },
        { "x=a", "0100000000" },
        { "x<7", "0000110000" },
        { "x=a,y!=b", "0100000000" },
        { "x=a,y!=b,z in (h,i,j)", "0000000000" },
        { "x,,y", NULL },
        { ",x,y", NULL },
        { "x nott in (y)", NULL },
        { "x notin ( )", "1101111111" },
        { "x notin (, a)", "1001111111" },
        { "a in (xyz),", NULL },
        { "a in (xyz)b notin ()", NULL },
        { "a ", "0000000000" },
        { "a in (x,y,notin, z,in)", "0000000000" },
        { "a in (xyz abc)", NULL },
        { "a notin(", NULL },
        { "a (", NULL },
        { "(", NULL },
        /* TestLexer, TestLexerSequence, TestParserLookahead: the token
           sequences as whole selectors */
        { "~", NULL },
        { "||", NULL },
        { ",", NULL },
        { "()", NULL },
        { "== != (), = notin", NULL },
        { "key in ( value )", "0000000000" },
        { "key notin ( value )", "1111111111" },
        { "key in ( value1, value2 )", "0000000000" },
        { "key", "0000000000" },
        { "!key", "1111111111" },
        { "x in (),y", "0000000000" },
        { "key>2", "0000000000" },
        { "key<1", "0000000000" },
        /* TestRequirementConstructor (operators and values the parser can
           produce) */
        { "x in (foo)", "0000000000" },
        { "x notin (foo)", "1111111111" },
        { "1foo in (bar)", "0000000000" },
        { "1234 in (bar)", "0000000000" },
        { "y>1", "0000000000" },
        { "z<6", "0000000000" },
        { "foo>bar", NULL },
        { "barz<blah", NULL },
        { "x13>", NULL },
        { "x17=a b", NULL },
        { "x18 ~ a", NULL },
        /* TestRequirementSelectorMatching */
        { "x notin (),y", "0001100000" },
        { "!x,y", "0000000000" },
        { "x notin (),!y", "1100011111" },
        { "x in ()", "0010000000" },
        { "x>1", "0000101000" },
    };
    TS_LABELS(cases);
}

/* Whitespace is ' ', '\t', '\r' and '\n', between any two tokens. */
static void ts_whitespace(void) {
    static const ts_case cases[] = {
        { "x\t=\ta", "0100000000" },
        { "x\n=\na", "0100000000" },
        { "x\r\n==\r\na", "0100000000" },
        { "\r\n\t x \t\r\n", "0111111110" },
        { "\n", "1111111111" },
        { " \t\r\n ", "1111111111" },
        { "x\nin\n(a)", "0100000000" },
        { "x\rnotin\r(\ra\r,\rb\r)\r", "1010111111" },
        { "!\nx", "1000000001" },
        { "! x", "1000000001" },
        { "x=b\n,\ny", "0001000000" },
        { "x\n>\n1", "0000101000" },
        { "x\r!=\ra", "1011111111" },
        { "x=\n", "0010000000" },
        { "x\v=a", NULL },          /* \v and \f are no whitespace: part of a word */
        { "x=a\f", NULL },
        { "x in\f(a)", NULL },
        { "x=a\n\nb", NULL },
    };
    TS_LABELS(cases);
}

/* Empty members of a set: labels.Parse takes "(", a leading ',', ",)" and
   ",," as the value "", and pairs commas up: a set ending in an even run
   of commas is an error. */
static void ts_empty_members(void) {
    static const ts_case cases[] = {
        { "x in (a,)", "0110000000" },
        { "x in (,a)", "0110000000" },
        { "x in (,)", "0010000000" },
        { "x in ( , )", "0010000000" },
        { "x in (a,b,)", "0111000000" },
        { "x in (a,,b)", "0111000000" },
        { "x in (a,,,b)", "0111000000" },
        { "x in (a,,,,b)", "0111000000" },
        { "x in (a,,,)", "0110000000" },
        { "x in (,,,)", "0010000000" },
        { "x in (,b)", "0011000000" },
        { "x notin ()", "1101111111" },
        { "x notin (a,)", "1001111111" },
        { "x notin (,)", "1101111111" },
        { "x in (a,,)", NULL },
        { "x in (,,)", NULL },
        { "x in (a,,,,)", NULL },
        { "x in (,,,,)", NULL },
        { "x in", NULL },
        { "x in (", NULL },
        { "x in (a", NULL },
        { "x in (a,", NULL },
        { "x in (,", NULL },
        { "x in a", NULL },
        { "x in (a b)", NULL },
        { "x in ((a))", NULL },
        { "x in (a))", NULL },
        { "x in (!a)", NULL },
        { "x in (a,=)", NULL },
        { "x in (a,!)", NULL },
        { "x in (-a)", NULL },
        { "x notin", NULL },
        { "x in ()b", NULL },
        { "x in (a)(b)", NULL },
        { "x in ) ", NULL },
        { "in (a)", NULL },
    };
    TS_LABELS(cases);
}

/* > and <: one value, a decimal int64 that is also a valid label value (so
   no sign); a label matches when it is there and reads as an int64
   (strconv.ParseInt: a sign is fine there) on the right side of it. */
static void ts_gt_lt(void) {
    static const ts_case cases[] = {
        { "x > 1", "0000101000" },
        { "x>6", "0000001000" },
        { "x>7", "0000000000" },
        { "x<0", "0000010000" },
        { "x<-3", NULL },
        { "x>-4", NULL },
        { "x>+1", NULL },
        { "x>01", "0000101000" },
        { "x>0", "0000101000" },
        { "x<9223372036854775807", "0000111000" },
        { "x>9223372036854775806", "0000000000" },
        { "x>9223372036854775808", NULL },
        { "x>99999999999999999999", NULL },
        { "x>1,x<5", "0000100000" },
        { "x>1.5", NULL },
        { "x>1e3", NULL },
        { "x>0x10", NULL },
        { "x>1_000", NULL },
        { "x>", NULL },
        { "x<", NULL },
        { "x>,y", NULL },
        { "x>a", NULL },
        { "x>(1)", NULL },
        { "x>1 2", NULL },
        { "x>=1", NULL },
        { "x<=1", NULL },
        { "x=>1", NULL },
        { "x<>1", NULL },
        { "x>>1", NULL },
        { "x >", NULL },
        { "!x>1", NULL },
    };
    TS_LABELS(cases);
}

/* The operators, and what labels.Parse's lexer makes of runs of symbols. */
static void ts_operators(void) {
    static const ts_case cases[] = {
        { "x==a", "0100000000" },
        { "x = = a", NULL },
        { "x!=a", "1011111111" },
        { "x != a", "1011111111" },
        { "x !=a", "1011111111" },
        { "x!=", "1101111111" },
        { "x==", "0010000000" },
        { "x===a", NULL },
        { "x!==a", NULL },
        { "x=!a", NULL },
        { "x=(a)", NULL },
        { "x=a)", NULL },
        { "x=a=b", NULL },
        { "x! =a", NULL },
        { "x!a", NULL },
        { "x!", NULL },
        { "x=a!", NULL },
        { "=a", NULL },
        { "!=a", NULL },
        { "!", NULL },
        { "!!x", NULL },
        { "!x in (a)", NULL },
        { "!x=", NULL },
        { "!x y", NULL },
        { "x y", NULL },
        { "x=a b", NULL },
        { "x=a y=b", NULL },
        { "x=a,", NULL },
        { "x,", NULL },
        { ",x", NULL },
        { "x=a,,y=b", NULL },
        { "x=a;y=b", NULL },
        { "x=a|y", NULL },
    };
    TS_LABELS(cases);
}

/* "in" and "notin" are words wherever a key or value stands. */
static void ts_keywords(void) {
    static const ts_case cases[] = {
        { "in", "0000000001" },
        { "notin", "0000000001" },
        { "!in", "1111111110" },
        { "in=notin,notin==in", "0000000001" },
        { "in in (notin)", "0000000001" },
        { "notin in (in)", "0000000001" },
        { "notin notin (in)", "1111111110" },
        { "in notin (x)", "1111111111" },
        { "x in (b,notin, v2,in)", "0001000100" },
        { "x=in", "0000000000" },
        { "x in (in)", "0000000000" },
        { "in in", NULL },
        { "x in in (a)", NULL },
        { "x notin in", NULL },
        { "x in notin", NULL },
    };
    TS_LABELS(cases);
}

/* Keys are qualified names (TestIsLabelKey, TestIsDNS1123Subdomain for the
   prefix); values are label values (TestIsLabelValue). */
static void ts_keys_values(void) {
    static const ts_case cases[] = {
        { "simple", "0000000000" },
        { "now-with-dashes", "0000000000" },
        { "1-starts-with-num", "0000000000" },
        { "1234", "0000000000" },
        { "simple/simple", "0000000000" },
        { "now-with-dashes/simple", "0000000000" },
        { "now-with-dashes/now-with-dashes", "0000000000" },
        { "now.with.dots/simple", "0000000000" },
        { "now-with.dashes-and.dots/simple", "0000000000" },
        { "1-num.2-num/3-num", "0000000000" },
        { "1234/5678", "0000000000" },
        { "1.2.3.4/5678", "0000000000" },
        { "Uppercase_Is_OK_123", "0000000000" },
        { "example.com/Uppercase_Is_OK_123", "0000000000" },
        { "requests.storage-foo", "0000000000" },
        { "a--1--2--b.a/x", "0000000000" },
        { "1--a--b--2.1/x", "0000000000" },
        { "a.b.c.d.e/x", "0000000000" },
        { "example.com/k", "0000000001" },
        { "!example.com/k", "1111111110" },
        { "example.com/k=", "0000000001" },
        { "nospecialchars%^=@", NULL },
        { "cantendwithadash-", NULL },
        { "-cantstartwithadash-", NULL },
        { "only/one/slash", NULL },
        { "Example.com/abc", NULL },
        { "example_com/abc", NULL },
        { "example.com/", NULL },
        { "/simple", NULL },
        { "a..b/x", NULL },
        { "1..2/x", NULL },
        { "a.-b/x", NULL },
        { "a-.b/x", NULL },
        { ".a/x", NULL },
        { "a./x", NULL },
        { "-a/x", NULL },
        { "a-/x", NULL },
        { "aB.a/x", NULL },
        { "a_b/x", NULL },
        { "a@b/x", NULL },
        { "a:b/x", NULL },
        { "a;b/x", NULL },
        { "a$b/x", NULL },
        { "a%b/x", NULL },
        { "x=simple", "0000000000" },
        { "x=now-with-dashes", "0000000000" },
        { "x=1-starts-with-num", "0000000000" },
        { "x=end-with-num-1", "0000000000" },
        { "x=1234", "0000000000" },
        { "x=v2", "0000000100" },
        { "x=nospecialchars%^=@", NULL },
        { "x=Tama-nui-te-r\xc4\x81.is.M\xc4\x81ori.sun", NULL },
        { "x=\\backslashes\\are\\bad", NULL },
        { "x=-starts-with-dash", NULL },
        { "x=ends-with-dash-", NULL },
        { "x=.starts.with.dot", NULL },
        { "x=ends.with.dot.", NULL },
        { "x=a/b", NULL },
        { "x in (ok,-bad)", NULL },
    };
    TS_LABELS(cases);
}

/* Lengths: name part and value 63, prefix 253. */
static void ts_lengths(void) {
    char a63[64], a64[65], p253[254], p254[255], b[64];
    char *texts[10];
    ts_case cases[10];
    size_t i;
    memset(a63, 'a', 63); a63[63] = '\0';
    memset(a64, 'a', 64); a64[64] = '\0';
    memset(p253, 'p', 253); p253[253] = '\0';
    memset(p254, 'p', 254); p254[254] = '\0';
    for (i = 0; i < 10; i++) texts[i] = (char *)malloc(600);
    snprintf(texts[0], 600, "%s", a63);              cases[0].want = "0000000000";
    snprintf(texts[1], 600, "%s", a64);              cases[1].want = NULL;
    snprintf(texts[2], 600, "%s/%s", p253, a63);     cases[2].want = "0000000000";
    snprintf(texts[3], 600, "%s/abc", p254);         cases[3].want = NULL;
    snprintf(texts[4], 600, "%s/%s", p253, a64);     cases[4].want = NULL;
    snprintf(texts[5], 600, "x=%s", a63);            cases[5].want = "0000000000";
    snprintf(texts[6], 600, "x=%s", a64);            cases[6].want = NULL;
    snprintf(texts[7], 600, "x in (a,%s)", a64);     cases[7].want = NULL;
    memset(b, '0', 62); b[62] = '1'; b[63] = '\0';
    snprintf(texts[8], 600, "x>%s", b);              cases[8].want = "0000101000"; /* 63 digits: 1 */
    snprintf(texts[9], 600, "x>0%s", b);             cases[9].want = NULL;         /* 64: too long a value */
    for (i = 0; i < 10; i++) cases[i].sel = texts[i];
    TS_LABELS(cases);
    for (i = 0; i < 10; i++) free(texts[i]);
}

/* The same key in several requirements: each must hold. */
static void ts_duplicates(void) {
    static const ts_case cases[] = {
        { "x=a,x=a", "0100000000" },
        { "x=a,x=b", "0000000000" },
        { "x,!x", "0000000000" },
        { "x in (a,b),x notin (b)", "0100000000" },
        { "x in (a,a,a)", "0100000000" },
        { "x=a,x", "0100000000" },
        { "x>1,x>5", "0000001000" },
    };
    TS_LABELS(cases);
}

static void ts_labels(void) {
    kctl_obj *web = ts_obj("prod", "web", "{\"app\":\"web\",\"tier\":\"fe\",\"env\":\"a\",\"app.kubernetes.io/name\":\"shop\",\"empty\":\"\"}");
    kctl_obj *db = ts_obj("prod", "db", "{\"app\":\"db\",\"tier\":\"db\",\"legacy\":\"yes\"}");
    static const struct { const char *sel; int web, db; } cases[] = {
        { "", 1, 1 },
        { "app=web", 1, 0 },
        { "app==web", 1, 0 },
        { "app!=web", 0, 1 },
        { "missing!=x", 1, 1 },          /* != matches without the label */
        { "app=web,tier!=db", 1, 0 },
        { "env in (a,b)", 1, 0 },
        { "env in (b, c)", 0, 0 },
        { "env notin (c)", 1, 1 },       /* notin matches without the label */
        { "env notin (a)", 0, 1 },
        { "legacy", 0, 1 },
        { "!legacy", 1, 0 },
        { "app=web,tier!=db,env in (a,b),!legacy", 1, 0 },
        { "app.kubernetes.io/name=shop", 1, 0 },
        { "empty=", 1, 0 },
        { "empty", 1, 0 },
        { "  app = web ,  tier  in(fe)  ", 1, 0 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int w = ts_sel(cases[i].sel, NULL, web), d = ts_sel(cases[i].sel, NULL, db);
        if (w != cases[i].web || d != cases[i].db)
            kt_fail(__FILE__, __LINE__, "selector <%s>: web %d db %d, want %d %d", cases[i].sel, w, d, cases[i].web, cases[i].db);
    }
    kctl_obj_unref(web);
    kctl_obj_unref(db);
}

static void ts_malformed(void) {
    static const char *bad[] = {
        "=web", "app=web,", ",app=web", "app=web,,tier=x", "app in a,b", "app in (a,b", "app in (a,,)",
        "!app=web", "a b", "app=we b", "app>five", "-app=web", "app=web-", "Upper/x=y", "a/=b",
        "x=0123456789012345678901234567890123456789012345678901234567890123", "app=(web)", "app=web)",
    };
    size_t i;
    kctl_selector *s;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s = (kctl_selector *)&i;
        if (kctl_selector_parse(bad[i], NULL, NULL, &s) != KCTL_ERR_INVALID_ARG || s != NULL)
            kt_fail(__FILE__, __LINE__, "selector <%s> accepted", bad[i]);
    }
    /* "app=" is fine: the empty value */
    KT_EQ_INT(kctl_selector_parse("app=", NULL, NULL, &s), KCTL_OK);
    kctl_selector_free(s);
    KT_EQ_INT(kctl_selector_parse(NULL, "spec.replicas=3", NULL, &s), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_selector_parse(NULL, "metadata.name", NULL, &s), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_selector_parse(NULL, NULL, NULL, NULL), KCTL_ERR_INVALID_ARG);
}

/* Field selectors as fields.ParseSelector reads them, against:
   0 prod/web, 1 node-1 (no namespace), 2 prod/"a,b=c\d", 3 dev/" web". */
static void ts_field_cases(void) {
    static const ts_case cases[] = {
        { "", "1111" },
        { "metadata.name=web", "1000" },
        { "metadata.name==web", "1000" },
        { "metadata.name!=web", "0111" },
        { "metadata.namespace=prod", "1010" },
        { "metadata.namespace=", "0100" },
        { "metadata.namespace==", "0100" },
        { "metadata.namespace!=", "1011" },
        { "metadata.namespace=prod,metadata.name!=web", "0010" },
        { "metadata.namespace=dev,metadata.name!=web", "0001" },
        { "metadata.name!=web,metadata.namespace!=prod", "0101" },
        /* empty terms are skipped (TestSplitTerms) */
        { "metadata.name=web,", "1000" },
        { ",metadata.name=web", "1000" },
        { ",", "1111" },
        { ",,", "1111" },
        { "metadata.name=web,,metadata.namespace=prod", "1000" },
        /* nothing is trimmed: a space is part of the field or the value */
        { "metadata.name= web", "0001" },
        { "metadata.name=web ", "0000" },
        { "metadata.name=web\n", "0000" },
        { " metadata.name=web", NULL },
        { "metadata.name =web", NULL },
        { "metadata.name\t=web", NULL },
        { " ", NULL },
        /* escapes (TestEscapeValue, TestSelectorMatches' "complex") */
        { "metadata.name=a\\,b\\=c\\\\d", "0010" },
        { "metadata.namespace=prod,metadata.name=a\\,b\\=c\\\\d", "0010" },
        { "metadata.name!=a\\,b\\=c\\\\d", "1101" },
        { "metadata.name=a\\,b", "0000" },
        { "metadata.name!=a!b", "1111" },
        { "metadata.name=a=b", NULL },
        { "metadata.name==a==b", NULL },
        { "metadata.name===web", NULL },
        { "metadata.name!==web", NULL },
        { "metadata.name=\\a", NULL },
        { "metadata.name=\\ web", NULL },
        { "metadata.name=web\\", NULL },
        { "metadata.name=\\\\\\", NULL },
        { "metadata.name=\\", NULL },
        /* terms that are no term, or fields kctl does not know */
        { "metadata.name", NULL },
        { "metadata.name in (web)", NULL },
        { "metadata.name!web", NULL },
        { "=web", NULL },
        { "spec.replicas=3", NULL },
        { "x=a||y\\=b", NULL },
        { "metadata.names=web", NULL },
        { "Metadata.name=web", NULL },
        { "metadata.name\\,=web", NULL },
        { "metadata.name=web,x", NULL },
    };
    kctl_obj *o[4];
    size_t i, j;
    o[0] = ts_obj("prod", "web", "{}");
    o[1] = ts_obj(NULL, "node-1", "{}");
    o[2] = ts_obj("prod", "a,b=c\\\\d", "{}");
    o[3] = ts_obj("dev", " web", "{}");
    KT_EQ_STR(kctl_obj_name(o[2]), "a,b=c\\d");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kctl_selector *s = (kctl_selector *)&i;
        int rc = kctl_selector_parse(NULL, cases[i].sel, NULL, &s);
        if (!cases[i].want) {
            if (rc != KCTL_ERR_INVALID_ARG || s != NULL)
                kt_fail(__FILE__, __LINE__, "fields <%s>: parsed (rc %d), want INVALID_ARG", ts_show(cases[i].sel), rc);
            continue;
        }
        if (rc != KCTL_OK) {
            kt_fail(__FILE__, __LINE__, "fields <%s>: rc %d, want it to parse", ts_show(cases[i].sel), rc);
            continue;
        }
        for (j = 0; j < 4; j++)
            if (kctl_selector_matches(s, o[j]) != (cases[i].want[j] == '1'))
                kt_fail(__FILE__, __LINE__, "fields <%s> on object %u: want %s", ts_show(cases[i].sel), (unsigned)j,
                        cases[i].want[j] == '1' ? "match" : "no match");
        kctl_selector_free(s);
    }
    for (j = 0; j < 4; j++) kctl_obj_unref(o[j]);
}

static void ts_fields(void) {
    kctl_obj *a = ts_obj("prod", "web", "{}"), *node = ts_obj(NULL, "node-1", "{}");
    KT_EQ_INT(ts_sel(NULL, "metadata.name=web", a), 1);
    KT_EQ_INT(ts_sel(NULL, "metadata.name==web", node), 0);
    KT_EQ_INT(ts_sel(NULL, "metadata.namespace!=kube-system", a), 1);
    KT_EQ_INT(ts_sel(NULL, "metadata.namespace=prod,metadata.name!=web", a), 0);
    KT_EQ_INT(ts_sel(NULL, "metadata.namespace=", node), 1);
    KT_EQ_INT(ts_sel("app=x", "metadata.name=web", a), 0); /* both must hold */
    KT_EQ_INT(ts_sel("!app", "metadata.name=web", a), 1);
    KT_EQ_INT(ts_sel("app=x,", "metadata.name=web", a), -1);  /* either malformed: INVALID_ARG */
    KT_EQ_INT(ts_sel("!app", "metadata.name=a=b", a), -1);
    KT_CHECK(kctl_selector_matches(NULL, a));
    kctl_obj_unref(a);
    kctl_obj_unref(node);
}

static void ts_allocator(void) {
    kt_alloc al;
    kctl_allocator a;
    kctl_selector *s = NULL;
    kt_alloc_init(&al);
    a = kt_allocator(&al);
    KT_EQ_INT(kctl_selector_parse("app=web,env in (a,b,c),x in (,,,b),n>3", "metadata.name=x\\,y,", &a, &s), KCTL_OK);
    KT_EQ_INT(al.live, 1); /* one block */
    kctl_selector_free(s);
    KT_EQ_INT(al.live, 0);
    KT_EQ_INT(kctl_selector_parse("x in (a,,)", NULL, &a, &s), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(al.allocs, 1); /* a malformed selector allocates nothing */
    al.fail_after = 0;
    KT_EQ_INT(kctl_selector_parse("app=web", NULL, &a, &s), KCTL_ERR_NOMEM);
    KT_CHECK(s == NULL);
}

void kt_suite_selector(void) {
    KT_RUN(ts_apimachinery);
    KT_RUN(ts_whitespace);
    KT_RUN(ts_empty_members);
    KT_RUN(ts_gt_lt);
    KT_RUN(ts_operators);
    KT_RUN(ts_keywords);
    KT_RUN(ts_keys_values);
    KT_RUN(ts_lengths);
    KT_RUN(ts_duplicates);
    KT_RUN(ts_labels);
    KT_RUN(ts_malformed);
    KT_RUN(ts_field_cases);
    KT_RUN(ts_fields);
    KT_RUN(ts_allocator);
}
