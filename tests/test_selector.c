/* test_selector.c - label and field selectors as Kubernetes writes them. */
#include "kt.h"

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
        "=web", "app=web,", ",app=web", "app=web,,tier=x", "app in a,b", "app in (a,b", "app in ()",
        "app notin (a,)", "!app=web", "a b", "app=we b", "app>5", "-app=web", "app=web-", "Upper/x=y", "a/=b",
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

static void ts_fields(void) {
    kctl_obj *a = ts_obj("prod", "web", "{}"), *node = ts_obj(NULL, "node-1", "{}");
    KT_EQ_INT(ts_sel(NULL, "metadata.name=web", a), 1);
    KT_EQ_INT(ts_sel(NULL, "metadata.name==web", node), 0);
    KT_EQ_INT(ts_sel(NULL, "metadata.namespace!=kube-system", a), 1);
    KT_EQ_INT(ts_sel(NULL, "metadata.namespace=prod,metadata.name!=web", a), 0);
    KT_EQ_INT(ts_sel(NULL, "metadata.namespace=", node), 1);
    KT_EQ_INT(ts_sel("app=x", "metadata.name=web", a), 0); /* both must hold */
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
    KT_EQ_INT(kctl_selector_parse("app=web,env in (a,b,c)", "metadata.name=x", &a, &s), KCTL_OK);
    KT_EQ_INT(al.live, 1); /* one block */
    kctl_selector_free(s);
    KT_EQ_INT(al.live, 0);
    al.fail_after = 0;
    KT_EQ_INT(kctl_selector_parse("app=web", NULL, &a, &s), KCTL_ERR_NOMEM);
    KT_CHECK(s == NULL);
}

void kt_suite_selector(void) {
    KT_RUN(ts_labels);
    KT_RUN(ts_malformed);
    KT_RUN(ts_fields);
    KT_RUN(ts_allocator);
}
