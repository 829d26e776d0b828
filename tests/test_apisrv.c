/* test_apisrv.c - the API-server rules every store shares, their Status
   detail (checked against bodies a real API server sent: see the wire
   captures), the transport wrappers, and the finalizer loop end to end. */
#include "kt.h"
#include <stdlib.h>

static const kctl_resource ta_cm = { "", "v1", "configmaps", "prod" };
static const kctl_resource ta_fl = { "wardle.example.com", "v1alpha1", "flunders", "default" };

typedef struct ta_store {
    kctl_memstore *ms;
    kctl_transport t;
    kt_alloc a;
} ta_store;

static int ta_open(ta_store *s) {
    kctl_memstore_desc d;
    memset(s, 0, sizeof *s);
    kt_alloc_init(&s->a);
    memset(&d, 0, sizeof d);
    d.allocator = kt_allocator(&s->a);
    if (kctl_memstore_create(&d, &s->ms) != KCTL_OK) return 0;
    s->t = kctl_memstore_transport(s->ms);
    return 1;
}

static void ta_close(ta_store *s) {
    kctl_memstore_destroy(s->ms);
    KT_EQ_INT(s->a.live, 0);
}

/* kctl_apisrv_decide itself, as a store of its own calls it (etcd's, a
   test server's): a write equal to the stored object but for member
   order is UNCHANGED with nothing written; a label change is a WRITE of
   the whole document at the request's version, the generation kept. */
static const kctl_obj *ta_one(const char *ns, const char *name, void *user_data) {
    const kctl_obj *o = (const kctl_obj *)user_data;
    return o && strcmp(ns, kctl_obj_namespace(o)) == 0 && strcmp(name, kctl_obj_name(o)) == 0 ? o : NULL;
}

static void ta_decide_public(void) {
    const char *stored = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"prod\",\"uid\":\"u1\",\"resourceVersion\":\"5\","
                         "\"generation\":3,\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"labels\":{\"x\":\"1\"}},\"spec\":{\"v\":1}}";
    const char *same = "{\"spec\":{\"v\":1},\"metadata\":{\"labels\":{\"x\":\"1\"},\"name\":\"a\"}}";
    const char *relabel = "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"2\"}},\"spec\":{\"v\":1}}";
    kctl_apisrv_req req;
    kctl_apisrv_decision d;
    kctl_obj *cur = NULL, *got = NULL;
    kctl_jw w;
    kt_alloc a;
    kt_alloc_init(&a);
    KT_EQ_INT(kctl_obj_parse(stored, KCTL_NTS, NULL, &cur), KCTL_OK);
    if (!cur) return;
    memset(&req, 0, sizeof req);
    req.verb = KCTL_VERB_UPDATE;
    req.res = &ta_cm;
    req.json = same;
    req.len = KCTL_NTS;
    req.lookup = ta_one;
    req.lookup_user_data = cur;
    req.now = "2025-01-01T00:00:00Z";
    req.rv = "6";
    req.allocator = kt_allocator(&a);
    kctl_jw_init_growable(&w, &req.allocator);
    KT_EQ_INT(kctl_apisrv_decide(&req, &w, &d, NULL), KCTL_OK);
    KT_EQ_INT(d.outcome, KCTL_APISRV_UNCHANGED);
    KT_EQ_INT(w.len, 0);
    KT_CHECK(d.cur == cur);
    req.json = relabel;
    KT_EQ_INT(kctl_apisrv_decide(&req, &w, &d, NULL), KCTL_OK);
    KT_EQ_INT(d.outcome, KCTL_APISRV_WRITE);
    KT_EQ_INT(kctl_obj_parse(w.buf, w.len, NULL, &got), KCTL_OK);
    if (got) {
        KT_EQ_STR(kctl_obj_resource_version(got), "6");
        KT_EQ_STR(kctl_obj_uid(got), "u1");
        KT_EQ_STR(kctl_obj_label(got, "x"), "2");
        KT_EQ_INT(kctl_obj_generation(got), 3);
    }
    kctl_obj_unref(got);
    kctl_jw_free(&w);
    kctl_obj_unref(cur);
    KT_EQ_INT(a.live, 0);
}

/* The server-owned metadata strings a write copies from the stored
   object are written as kctl_jw_string writes them: those with a quote,
   a backslash, a control byte or UTF-8 in them escaped (at any place in
   the string, however long), the others as they stand. */
static void ta_decide_escapes_managed_strings(void) {
    static const struct { const char *uid_json, *uid_out; } cases[] = {
        { "0123456789abcdef-0123456789abcdef-0123", "\"0123456789abcdef-0123456789abcdef-0123\"" },
        { "0123456789abcd\\\"f", "\"0123456789abcd\\\"f\"" },
        { "01234567\\\\89", "\"01234567\\\\89\"" },
        { "0123456789abcdef\\u0001", "\"0123456789abcdef\\u0001\"" },
        { "0123456789ab\xc3\xa9", "\"0123456789ab\xc3\xa9\"" },
        { "x\\u007f", "\"x\x7f\"" } };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char stored[256];
        kctl_apisrv_req req;
        kctl_apisrv_decision d;
        kctl_obj *cur = NULL;
        kctl_jw w, want;
        snprintf(stored, sizeof stored, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"prod\",\"uid\":\"%s\",\"resourceVersion\":\"5\"},"
                 "\"spec\":{\"v\":1}}", cases[i].uid_json);
        KT_EQ_INT(kctl_obj_parse(stored, KCTL_NTS, NULL, &cur), KCTL_OK);
        if (!cur) return;
        memset(&req, 0, sizeof req);
        req.verb = KCTL_VERB_UPDATE;
        req.res = &ta_cm;
        req.json = "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"v\":2}}";
        req.len = KCTL_NTS;
        req.lookup = ta_one;
        req.lookup_user_data = cur;
        req.rv = "6";
        kctl_jw_init_growable(&w, NULL);
        KT_EQ_INT(kctl_apisrv_decide(&req, &w, &d, NULL), KCTL_OK);
        KT_EQ_INT(d.outcome, KCTL_APISRV_WRITE);
        kctl_jw_init_growable(&want, NULL); /* the uid as the writer quotes it */
        kctl_jw_string(&want, kctl_obj_uid(cur));
        KT_EQ_STR(want.buf ? want.buf : "", cases[i].uid_out);
        KT_CHECK(w.buf && want.buf && strstr(w.buf, want.buf) != NULL);
        kctl_jw_free(&want);
        kctl_jw_free(&w);
        kctl_obj_unref(cur);
    }
}

/* A string at path in obj's document ("" when absent). */
static void ta_str(const kctl_obj *o, const char *path, char *buf, size_t cap) {
    kctl_json_tok toks[256];
    kctl_json j;
    size_t len;
    const char *doc = kctl_obj_json(o, &len);
    buf[0] = '\0';
    if (kctl_json_parse(doc, len, toks, 256, NULL, &j) == KCTL_OK)
        kctl_json_string(&j, kctl_json_path(&j, 0, path), buf, cap, NULL);
}

/* ---- Status bodies as a real API server sends them (wire captures 18-23) */
static const char ta_409_conflict[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Operation cannot be fulfilled on "
    "flunders.wardle.example.com \\\"f1\\\": the object has been modified; please apply your changes to the latest version and "
    "try again\",\"reason\":\"Conflict\",\"details\":{\"name\":\"f1\",\"group\":\"wardle.example.com\",\"kind\":\"flunders\"},\"code\":409}\n";
static const char ta_409_exists[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"flunders.wardle.example.com "
    "\\\"f1\\\" already exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"f1\",\"group\":\"wardle.example.com\","
    "\"kind\":\"flunders\"},\"code\":409}\n";
static const char ta_404[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"flunders.wardle.example.com "
    "\\\"nope\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nope\",\"group\":\"wardle.example.com\","
    "\"kind\":\"flunders\"},\"code\":404}\n";
static const char ta_422_slash[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Flunder.wardle.example.com "
    "\\\"a/b\\\" is invalid: metadata.name: Invalid value: \\\"a/b\\\": may not contain '/'\",\"reason\":\"Invalid\",\"details\":"
    "{\"name\":\"a/b\",\"group\":\"wardle.example.com\",\"kind\":\"Flunder\",\"causes\":[{\"reason\":\"FieldValueInvalid\",\"message\":"
    "\"Invalid value: \\\"a/b\\\": may not contain '/'\",\"field\":\"metadata.name\"}]},\"code\":422}\n";
static const char ta_422_noname[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Flunder.wardle.example.com "
    "\\\"\\\" is invalid: metadata.name: Required value: name or generateName is required\",\"reason\":\"Invalid\",\"details\":"
    "{\"group\":\"wardle.example.com\",\"kind\":\"Flunder\",\"causes\":[{\"reason\":\"FieldValueRequired\",\"message\":\"Required "
    "value: name or generateName is required\",\"field\":\"metadata.name\"}]},\"code\":422}\n";

static void ta_status_parse_real_bodies(void) {
    kctl_api_status st, back;
    kctl_jw w;
    const char *text = NULL;
    size_t n = 0;
    memset(&st, 0, sizeof st);
    memset(&back, 0, sizeof back);
    KT_EQ_INT(kctl_api_status_parse(&st, ta_409_conflict, KCTL_NTS, 0), KCTL_OK);
    KT_EQ_INT(st.code, 409);
    KT_EQ_STR(st.reason, "Conflict");
    KT_EQ_STR(st.name, "f1");
    KT_EQ_STR(st.group, "wardle.example.com");
    KT_EQ_STR(st.kind, "flunders");
    KT_EQ_INT(kctl_api_status_result(st.code, st.reason), KCTL_ERR_CONFLICT);
    KT_EQ_INT(kctl_api_status_parse(&st, ta_409_exists, KCTL_NTS, 0), KCTL_OK); /* reuses st: the old strings are freed */
    KT_EQ_INT(kctl_api_status_result(st.code, st.reason), KCTL_ERR_EXISTS);
    KT_EQ_STR(st.message, "flunders.wardle.example.com \"f1\" already exists");
    KT_EQ_INT(kctl_api_status_parse(&st, ta_404, KCTL_NTS, 0), KCTL_OK);
    KT_EQ_INT(kctl_api_status_result(st.code, st.reason), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_api_status_parse(&st, ta_422_noname, KCTL_NTS, 0), KCTL_OK);
    KT_EQ_STR(st.name, "");
    KT_EQ_INT(kctl_api_status_parse(&st, ta_422_slash, KCTL_NTS, 0), KCTL_OK);
    KT_EQ_INT(st.code, 422);
    KT_EQ_INT(kctl_api_status_result(st.code, st.reason), KCTL_ERR_INVALID_ARG);
    KT_EQ_U64(st.cause_count, 1);
    if (st.cause_count == 1) {
        KT_EQ_STR(st.causes[0].reason, "FieldValueInvalid");
        KT_EQ_STR(st.causes[0].field, "metadata.name");
        KT_EQ_STR(st.causes[0].message, "Invalid value: \"a/b\": may not contain '/'");
    }
    /* written back, it reads the same */
    kctl_jw_init_growable(&w, NULL);
    kctl_api_status_write(&st, &w);
    KT_EQ_INT(kctl_jw_finish(&w, &text, &n), KCTL_OK);
    KT_EQ_INT(kctl_api_status_parse(&back, text, n, 0), KCTL_OK);
    KT_EQ_INT(back.code, 422);
    KT_EQ_STR(back.message, st.message);
    KT_EQ_STR(back.kind, "Flunder");
    KT_EQ_U64(back.cause_count, 1);
    if (back.cause_count == 1) KT_EQ_STR(back.causes[0].message, st.causes[0].message);
    kctl_jw_free(&w);
    /* not a Status */
    KT_EQ_INT(kctl_api_status_parse(&back, "{\"kind\":\"Flunder\"}", KCTL_NTS, 0), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_api_status_parse(&back, "not json", KCTL_NTS, 500), KCTL_ERR_INVALID_ARG);
    /* a body without a code takes the HTTP one */
    KT_EQ_INT(kctl_api_status_parse(&back, "{\"kind\":\"Status\",\"reason\":\"Expired\"}", KCTL_NTS, 410), KCTL_OK);
    KT_EQ_INT(back.code, 410);
    KT_EQ_INT(kctl_api_status_result(back.code, back.reason), KCTL_ERR_GONE);
    kctl_api_status_clear(&st);
    kctl_api_status_clear(&back);
    KT_EQ_INT(kctl_api_status_result(429, "TooManyRequests"), KCTL_ERR_AGAIN);
    KT_EQ_INT(kctl_api_status_result(503, "ServiceUnavailable"), KCTL_ERR_AGAIN);
    KT_EQ_INT(kctl_api_status_result(504, "Timeout"), KCTL_ERR_TIMEOUT);
    KT_EQ_INT(kctl_api_status_result(401, ""), KCTL_ERR_UNAUTHORIZED);
    KT_EQ_INT(kctl_api_status_result(403, ""), KCTL_ERR_FORBIDDEN);
    KT_EQ_INT(kctl_api_status_result(500, "InternalError"), KCTL_ERR_IO);
    KT_EQ_INT(kctl_api_status_result(201, ""), KCTL_OK);
}

/* The same refusals from the memstore, worded as the real server words them. */
static void ta_memstore_words_refusals(void) {
    ta_store s;
    kctl_api_status st;
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    st.allocator = kt_allocator(&s.a);
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_fl, "{\"kind\":\"Flunder\",\"metadata\":{\"name\":\"f1\"}}", KCTL_NTS, NULL, &st), KCTL_OK);
    KT_EQ_INT(st.code, 0); /* success leaves it alone */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_fl, "{\"kind\":\"Flunder\",\"metadata\":{\"name\":\"f1\"}}", KCTL_NTS, NULL, &st),
              KCTL_ERR_EXISTS);
    KT_EQ_INT(st.code, 409);
    KT_EQ_STR(st.reason, "AlreadyExists");
    KT_EQ_MSG(st.message, "flunders.wardle.example.com \"f1\" already exists");
    KT_EQ_STR(st.kind, "flunders");
    KT_EQ_INT(kctl_transport_get(&s.t, &ta_fl, "nope", NULL, &st), KCTL_ERR_INVALID_ARG); /* out is required */
    {
        kctl_obj *o = NULL;
        KT_EQ_INT(kctl_transport_get(&s.t, &ta_fl, "nope", &o, &st), KCTL_ERR_NOT_FOUND);
        KT_EQ_MSG(st.message, "flunders.wardle.example.com \"nope\" not found");
        KT_EQ_INT(st.code, 404);
    }
    KT_EQ_INT(kctl_transport_update(&s.t, &ta_fl, "{\"metadata\":{\"name\":\"f1\",\"resourceVersion\":\"0\"},\"spec\":{}}", KCTL_NTS, NULL, &st),
              KCTL_ERR_CONFLICT);
    KT_EQ_MSG(st.message, "Operation cannot be fulfilled on flunders.wardle.example.com \"f1\": the object has been modified; "
                          "please apply your changes to the latest version and try again");
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_fl, "{\"kind\":\"Flunder\",\"metadata\":{}}", KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_MSG(st.message, "Flunder.wardle.example.com \"\" is invalid: metadata.name: Required value: name or generateName is required");
    KT_EQ_STR(st.reason, "Invalid");
    KT_EQ_INT(st.code, 422);
    KT_EQ_STR(st.kind, "Flunder");
    KT_EQ_U64(st.cause_count, KT_WORDS); /* KCTL_NO_VALIDATION: no causes */
    if (st.cause_count) KT_EQ_STR(st.causes[0].reason, "FieldValueRequired");
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_fl, "{\"metadata\":{\"name\":\"w\",\"namespace\":\"other\"}}", KCTL_NTS, NULL, &st),
              KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 400);
    KT_EQ_STR(st.reason, "BadRequest");
    KT_EQ_MSG(st.message, "the namespace of the provided object does not match the namespace sent on the request");
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_fl, "{\"metadata\":{\"name\":", KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 400);
    KT_EQ_INT(kctl_memstore_delete(s.ms, &ta_cm, "gone", &st), KCTL_ERR_NOT_FOUND);
    KT_EQ_MSG(st.message, "configmaps \"gone\" not found");
    /* an injected fault comes with a Status too */
    kctl_memstore_fail_next(s.ms, KCTL_VERB_GET, 1, KCTL_ERR_IO);
    {
        kctl_obj *o = NULL;
        KT_EQ_INT(kctl_transport_get(&s.t, &ta_fl, "f1", &o, &st), KCTL_ERR_IO);
        KT_EQ_INT(st.code, 503);
        KT_EQ_INT(kctl_transport_get(&s.t, &ta_fl, "f1", &o, &st), KCTL_OK);
        kctl_obj_unref(o);
    }
    KT_EQ_U64(kctl_memstore_revision(s.ms), 1);
    kctl_api_status_clear(&st);
    ta_close(&s);
    KT_NEED_VALIDATION("the names and metadata apimachinery refuses, worded as it words them");
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    st.allocator = kt_allocator(&s.a);
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_fl, "{\"kind\":\"Flunder\",\"metadata\":{\"name\":\"f1\"}}", KCTL_NTS, NULL, &st), KCTL_OK);
    /* the new user's uppercase name and namespace mismatch */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_fl, "{\"kind\":\"Flunder\",\"metadata\":{\"name\":\"Web\"}}", KCTL_NTS, NULL, &st),
              KCTL_ERR_INVALID_ARG);
    KT_EQ_STR(st.message, "Flunder.wardle.example.com \"Web\" is invalid: metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 "
                          "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                          "alphanumeric character (e.g. 'example.com', regex used for validation is "
                          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
    KT_EQ_U64(st.cause_count, 1);
    if (st.cause_count) {
        KT_EQ_STR(st.causes[0].field, "metadata.name");
        KT_EQ_STR(st.causes[0].reason, "FieldValueInvalid");
    }
    /* several causes at once: all of them, in brackets */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm,
                                    "{\"metadata\":{\"name\":\"x\",\"labels\":{\"-bad\":\"ok\",\"good\":\"no way\"},"
                                    "\"finalizers\":[\"a/b/c\"],\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"n\"}]}}",
                                    KCTL_NTS, NULL, &st),
              KCTL_ERR_INVALID_ARG);
    KT_EQ_U64(st.cause_count, 4);
    KT_CHECK(strncmp(st.message, "configmaps \"x\" is invalid: [metadata.labels: Invalid value: \"-bad\": name part must consist of", 93) == 0);
    if (st.cause_count == 4) {
        KT_EQ_STR(st.causes[1].field, "metadata.labels");
        KT_CHECK(strncmp(st.causes[1].message, "Invalid value: \"no way\": a valid label must be an empty string", 62) == 0);
        KT_EQ_STR(st.causes[2].field, "metadata.ownerReferences.uid"); /* apimachinery's order: owners, then finalizers */
        KT_EQ_STR(st.causes[2].message, "Invalid value: \"\": uid must not be empty");
        KT_EQ_STR(st.causes[3].field, "metadata.finalizers");
    }
    KT_EQ_U64(kctl_memstore_revision(s.ms), 1); /* only the first create was written */
    /* the owner's API says the same */
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"UP\"}}", KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    kctl_api_status_clear(&st);
    ta_close(&s);
}

/* Names, generateName, annotations' size, one controller, escaped strings. */
static void ta_validation_edges(void) {
    ta_store s;
    kctl_api_status st;
    kctl_obj *o = NULL;
    char big[300 * 1024], name[300];
    size_t i;
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    /* generateName: a 5-character suffix from apimachinery's alphabet */
    KT_EQ_INT(KT_NEED_GENERATE_NAME(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"generateName\":\"gen-\"}}", KCTL_NTS, &o, &st)), KCTL_OK);
    if (o) {
        const char *n = kctl_obj_name(o);
        KT_EQ_U64(strlen(n), 9);
        KT_CHECK(strncmp(n, "gen-", 4) == 0);
        for (i = 4; i < strlen(n); i++) KT_CHECK(strchr("bcdfghjklmnpqrstvwxz2456789", n[i]) != NULL);
        kctl_obj_unref(o);
        o = NULL;
    }
    kctl_api_status_clear(&st);
    ta_close(&s);
    KT_NEED_VALIDATION("names, generateName, annotations, owner references");
    if (!ta_open(&s)) return;
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"generateName\":\"Gen-\"}}", KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    /* the prefix, and the name made from it (apimachinery checks both) */
    KT_CHECK(st.cause_count == 2 && strcmp(st.causes[0].field, "metadata.generateName") == 0 &&
             strcmp(st.causes[1].field, "metadata.name") == 0);
    /* 253 characters is a name; 254 is not */
    memset(name, 'a', sizeof name);
    for (i = 63; i < 253; i += 64) name[i] = '.';
    name[253] = '\0';
    snprintf(big, sizeof big, "{\"metadata\":{\"name\":\"%s\"}}", name);
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, big, KCTL_NTS, NULL, &st), KCTL_OK);
    name[253] = 'a';
    name[254] = '\0';
    snprintf(big, sizeof big, "{\"metadata\":{\"name\":\"%s\"}}", name);
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, big, KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_CHECK(st.cause_count >= 1 && strstr(st.causes[0].message, "must be no more than 253 characters") != NULL);
    /* an escaped name is checked unescaped: "\u0061" is "a" */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"\\u0061bc\",\"labels\":{\"\\u0061pp\":\"w\\u0065b\"}}}", KCTL_NTS,
                                    &o, &st), KCTL_OK);
    if (o) {
        KT_EQ_STR(kctl_obj_name(o), "abc");
        KT_EQ_STR(kctl_obj_label(o, "app"), "web");
        kctl_obj_unref(o);
        o = NULL;
    }
    /* NUL in a metadata string: kctl keeps metadata as C strings */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"n\",\"annotations\":{\"a\":\"x\\u0000y\"}}}", KCTL_NTS, NULL, &st),
              KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 400);
    /* annotations: 256 KiB in all (key and value bytes) */
    {
        static const char head[] = "{\"metadata\":{\"name\":\"big\",\"annotations\":{\"a\":\"";
        size_t h = sizeof head - 1;
        memcpy(big, head, h);
        memset(big + h, 'x', 262144);
        memcpy(big + h + 262144, "\"}}}", 5);
        KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, big, KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
        KT_EQ_U64(st.cause_count, 1);
        if (st.cause_count) KT_EQ_STR(st.causes[0].message, "Too long: must have at most 262144 bytes");
        memcpy(big + h + 262143, "\"}}}", 5); /* 1 + 262143 bytes: fits */
        KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, big, KCTL_NTS, NULL, &st), KCTL_OK);
    }
    /* one controller reference */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm,
                                    "{\"metadata\":{\"name\":\"two\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"A\",\"name\":\"a\","
                                    "\"uid\":\"1\",\"controller\":true},{\"apiVersion\":\"apps/v1\",\"kind\":\"B\",\"name\":\"b\",\"uid\":\"2\","
                                    "\"controller\":true}]}}", KCTL_NTS, NULL, &st),
              KCTL_ERR_INVALID_ARG);
    KT_CHECK(strstr(st.message, "Only one reference can have Controller set to true. Found \"true\" in references for A/a and B/b") != NULL);
    /* label values may be empty; keys may have a DNS prefix */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"l\",\"labels\":{\"example.com/x\":\"\",\"y\":\"A_b.c-9\"}}}",
                                    KCTL_NTS, NULL, &st), KCTL_OK);
    kctl_api_status_clear(&st);
    ta_close(&s);
}

/* Generation: any change outside metadata and status bumps it (the custom
   resource rule), metadata and status changes do not; a write that
   changes nothing is no write. */
/* Member names written with escapes are the names they unescape to: the
   top level's ("\u006detadata" is metadata, found by the length-first
   match the write path uses and by its fallback alike), and the server's
   own metadata a client sends escaped is still the server's. */
static void ta_escaped_member_names(void) {
    ta_store s;
    kctl_obj *o = NULL;
    char created[64] = "";
    uint64_t rev;
    if (!ta_open(&s)) return;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm,
                                  "{\"\\u0061piVersion\":\"v1\",\"\\u006bind\":\"ConfigMap\",\"\\u006detadata\":{\"name\":\"esc\"},"
                                  "\"data\":{\"k\":\"1\"}}",
                                  KCTL_NTS, &o, NULL),
              KCTL_OK);
    KT_EQ_STR(o ? kctl_obj_name(o) : "", "esc");
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 1);
    KT_CHECK(o && kctl_obj_uid(o)[0] != '\0');
    if (o) {
        const char *doc = kctl_obj_json(o, NULL), *c = strstr(doc, "\"creationTimestamp\":\"");
        KT_CHECK(c != NULL);
        if (c) snprintf(created, sizeof created, "%.20s", c + 21);
    }
    kctl_obj_unref(o);
    rev = kctl_memstore_revision(s.ms);
    /* the same body, the names escaped otherwise (and not at all): no change */
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"esc\"},\"\\u0064ata\":{\"k\":\"1\"},\"kin\\u0064\":\"ConfigMap\","
                                               "\"apiVersion\":\"v1\"}", KCTL_NTS, &o, NULL),
              KCTL_OK);
    KT_EQ_U64(kctl_memstore_revision(s.ms), rev);
    kctl_obj_unref(o);
    /* a new body under an escaped "metadata": a write, the generation bumped */
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm, "{\"metadat\\u0061\":{\"name\":\"esc\"},\"data\":{\"k\":\"2\"}}", KCTL_NTS, &o, NULL),
              KCTL_OK);
    KT_EQ_U64(kctl_memstore_revision(s.ms), rev + 1);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
    kctl_obj_unref(o);
    /* the server's creationTimestamp and uid, sent escaped: the stored ones stay */
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm,
                                  "{\"metadata\":{\"name\":\"esc\",\"creation\\u0054imestamp\":\"1999-01-01T00:00:00Z\"},"
                                  "\"data\":{\"k\":\"3\"}}",
                                  KCTL_NTS, &o, NULL),
              KCTL_OK);
    if (o) {
        const char *doc = kctl_obj_json(o, NULL);
        KT_CHECK(strstr(doc, "1999-01-01") == NULL);
        KT_CHECK(created[0] && strstr(doc, created) != NULL);
        KT_EQ_INT(kctl_obj_generation(o), 3);
    }
    kctl_obj_unref(o);
    ta_close(&s);
}

static void ta_generation_rule(void) {
    ta_store s;
    kctl_obj *o = NULL;
    if (!ta_open(&s)) return;
    kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"g\"},\"data\":{\"k\":\"1\"}}", KCTL_NTS, &o, NULL);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 1);
    kctl_obj_unref(o);
    kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"g\"},\"data\":{\"k\":\"2\"}}", KCTL_NTS, &o, NULL);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2); /* "data" is desired state too */
    kctl_obj_unref(o);
    kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"g\",\"labels\":{\"a\":\"b\"}},\"data\":{\"k\":\"2\"}}", KCTL_NTS, &o, NULL);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
    kctl_obj_unref(o);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 3);
    kctl_memstore_apply(s.ms, &ta_cm, "{\"data\":{\"k\":\"2\"},\"metadata\":{\"labels\":{\"a\":\"b\"},\"name\":\"g\"}}", KCTL_NTS, &o, NULL);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 3); /* reordered, the same: nothing written */
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", "3");
    kctl_obj_unref(o);
    { /* numbers by their value: the same numbers written otherwise are no change, others are */
        static const char *const same[] = { "1.0", "10e-1", "0.1e1", "1E0", "1.000e+0" };
        char doc[160];
        size_t k;
        uint64_t rev;
        kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"n\":1,\"z\":0,\"h\":100}}", KCTL_NTS, NULL, NULL);
        rev = kctl_memstore_revision(s.ms);
        for (k = 0; k < sizeof same / sizeof same[0]; k++) {
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"n\":%s,\"z\":-0.0,\"h\":1e2}}", same[k]);
            KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm, doc, KCTL_NTS, &o, NULL), KCTL_OK);
            KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 1);
            kctl_obj_unref(o);
        }
        KT_EQ_U64(kctl_memstore_revision(s.ms), rev);
        kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"n\":2,\"z\":0,\"h\":100}}", KCTL_NTS, &o, NULL);
        KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
        kctl_obj_unref(o);
        kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"n\":2,\"z\":0,\"h\":1000}}", KCTL_NTS, &o, NULL);
        KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 3);
        kctl_obj_unref(o);
        kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"n\"},\"spec\":{\"n\":2,\"z\":0,\"h\":1e3}}", KCTL_NTS, &o, NULL);
        KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 3);
        kctl_obj_unref(o);
        KT_EQ_U64(kctl_memstore_revision(s.ms), rev + 2);
    }
    ta_close(&s);
}

/* A store keeps what an API server keeps: repeated member names, at any
   depth, leave only the last (Go's decode and encode do that). */
static void ta_repeated_names_kept_once(void) {
    ta_store s;
    kctl_obj *o = NULL;
    const char *doc;
    if (!ta_open(&s)) return;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"r\",\"labels\":{\"k\":\"1\",\"k\":\"2\"}},"
                                  "\"spec\":{\"a\":1,\"b\":[{\"x\":1,\"x\":3}],\"a\":2},\"spec\":{\"a\":5}}", KCTL_NTS, &o, NULL), KCTL_OK);
    doc = o ? kctl_obj_json(o, NULL) : "";
    KT_CHECK(strstr(doc, "\"k\":\"2\"") && !strstr(doc, "\"k\":\"1\""));
    KT_CHECK(strstr(doc, "\"spec\":{\"a\":5}") != NULL); /* the last spec, whole */
    KT_CHECK(strstr(doc, "\"a\":1") == NULL && strstr(doc, "\"x\":1") == NULL);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"r\"},\"spec\":{\"b\":[{\"x\":1,\"x\":3}]}}", KCTL_NTS, &o, NULL),
              KCTL_OK);
    doc = o ? kctl_obj_json(o, NULL) : "";
    KT_CHECK(strstr(doc, "\"b\":[{\"x\":3}]") != NULL); /* inside arrays too */
    kctl_obj_unref(o);
    ta_close(&s);
}

/* 1.2: a deleting object takes no new finalizers (422, the object unchanged);
   removing them still works, and the last one's removal removes the object:
   its writer gets the object at its old version, watchers a DELETED at the
   new one that still lists the finalizer (as the real server does). */
static void ta_deleting_refuses_new_finalizers(void) {
    ta_store s;
    kctl_api_status st;
    kctl_obj *o = NULL, *marked = NULL;
    kctl_watch *w = NULL;
    kctl_event ev;
    char rv[32];
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"example.com/a\"]},\"spec\":{}}", KCTL_NTS,
                                  NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_watch_open(&s.t, &ta_cm, NULL, "1", &w, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_remove(&s.t, &ta_cm, "f", NULL, &marked, &st), KCTL_OK);
    KT_CHECK(marked != NULL);
    if (!marked) { kctl_transport_watch_close(&s.t, w); ta_close(&s); return; }
    KT_CHECK(kctl_obj_deletion_timestamp(marked) != NULL);
    KT_EQ_INT(kctl_obj_generation(marked), 2); /* markAsDeleting bumps it */
    ta_str(marked, "metadata.resourceVersion", rv, sizeof rv);
    KT_EQ_STR(rv, "2");
    /* a second delete: nothing new */
    KT_EQ_INT(kctl_transport_remove(&s.t, &ta_cm, "f", NULL, &o, &st), KCTL_OK);
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", "2");
    kctl_obj_unref(o);
    /* a new finalizer is refused, and nothing changes */
    KT_EQ_INT(kctl_transport_update(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"example.com/b\",\"example.com/a\",\"example.com/b\"]}}",
                                    KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    KT_EQ_STR(st.reason, "Invalid");
    KT_EQ_MSG(st.message, "configmaps \"f\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object "
                          "is being deleted, found new finalizers []string{\"example.com/b\"}");
    KT_CHECK(KT_WORDS ? st.cause_count == 1 && strcmp(st.causes[0].reason, "FieldValueForbidden") == 0 : st.cause_count == 0);
    KT_EQ_INT(kctl_transport_patch(&s.t, &ta_cm, "f", "{\"metadata\":{\"finalizers\":[\"example.com/a\",\"x.io/c\"]}}", KCTL_NTS, 0, NULL, &st),
              KCTL_ERR_INVALID_ARG);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 2);
    KT_EQ_INT(kctl_memstore_get(s.ms, &ta_cm, "f", &o, NULL), KCTL_OK);
    KT_EQ_U64(o ? kctl_obj_finalizer_count(o) : 0, 1);
    kctl_obj_unref(o);
    /* removing the last one: gone; the writer gets it at its old version */
    KT_EQ_INT(kctl_transport_patch(&s.t, &ta_cm, "f", "{\"metadata\":{\"finalizers\":null}}", KCTL_NTS, 0, &o, &st), KCTL_OK);
    KT_CHECK(o != NULL);
    if (o) {
        KT_EQ_STR(kctl_obj_resource_version(o), "2");
        KT_EQ_U64(kctl_obj_finalizer_count(o), 0);
        kctl_obj_unref(o);
    }
    KT_EQ_INT(kctl_memstore_get(s.ms, &ta_cm, "f", &o, &st), KCTL_ERR_NOT_FOUND);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 3);
    /* the watcher: the mark, then DELETED at 3 with the finalizer still there */
    KT_EQ_INT(kctl_transport_watch_next(&s.t, w, 0, &ev, NULL), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_MODIFIED);
    kctl_event_clear(&ev);
    KT_EQ_INT(kctl_transport_watch_next(&s.t, w, 0, &ev, NULL), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_DELETED);
    KT_EQ_STR(ev.resource_version, "3");
    KT_EQ_STR(ev.obj ? kctl_obj_resource_version(ev.obj) : "", "3");
    KT_EQ_U64(ev.obj ? kctl_obj_finalizer_count(ev.obj) : 0, 1);
    kctl_event_clear(&ev);
    kctl_transport_watch_close(&s.t, w);
    kctl_obj_unref(marked);
    kctl_api_status_clear(&st);
    ta_close(&s);
}

/* Delete preconditions, worded as the registry's BeforeDelete words them. */
static void ta_delete_preconditions(void) {
    ta_store s;
    kctl_api_status st;
    kctl_delete_opts d;
    kctl_obj *o = NULL;
    char msg[256];
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    kctl_memstore_apply(s.ms, &ta_fl, "{\"kind\":\"Flunder\",\"metadata\":{\"name\":\"f3\"}}", KCTL_NTS, &o, NULL);
    memset(&d, 0, sizeof d);
    d.resource_version = "7";
    KT_EQ_INT(kctl_transport_remove(&s.t, &ta_fl, "f3", &d, NULL, &st), KCTL_ERR_CONFLICT);
    KT_EQ_MSG(st.message, "Operation cannot be fulfilled on Flunder.wardle.example.com \"f3\": the ResourceVersion in the precondition "
                          "(7) does not match the ResourceVersion in record (1). The object might have been modified");
    d.resource_version = "1";
    d.uid = "other";
    KT_EQ_INT(kctl_transport_remove(&s.t, &ta_fl, "f3", &d, NULL, &st), KCTL_ERR_CONFLICT);
    snprintf(msg, sizeof msg, "Operation cannot be fulfilled on Flunder.wardle.example.com \"f3\": the UID in the precondition (other) "
             "does not match the UID in record (%s). The object might have been deleted and then recreated", o ? kctl_obj_uid(o) : "");
    KT_EQ_MSG(st.message, msg);
    d.uid = o ? kctl_obj_uid(o) : NULL;
    KT_EQ_INT(kctl_transport_remove(&s.t, &ta_fl, "f3", &d, NULL, &st), KCTL_OK);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &ta_fl, "{\"metadata\":{\"name\":\"f4\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_remove(&s.t, &ta_fl, "f4", NULL, &o, &st), KCTL_OK);
    KT_CHECK(o == NULL); /* gone: no object to answer */
    kctl_api_status_clear(&st);
    ta_close(&s);
}

/* 1.3: an object that stops matching a label-selector watch arrives as
   DELETED with its last matching content at the event's version (#40). */
static void ta_selector_leave_carries_new_version(void) {
    ta_store s;
    kctl_list_opts lo;
    kctl_watch *w = NULL;
    kctl_event ev;
    char label[16];
    if (!ta_open(&s)) return;
    kctl_memstore_apply(s.ms, &ta_fl, "{\"metadata\":{\"name\":\"f1\",\"labels\":{\"app\":\"demo\"}},\"spec\":{}}", KCTL_NTS, NULL, NULL);
    memset(&lo, 0, sizeof lo);
    lo.label_selector = "app=demo";
    KT_EQ_INT(kctl_transport_watch_open(&s.t, &ta_fl, &lo, "1", &w, NULL), KCTL_OK);
    kctl_memstore_apply(s.ms, &ta_fl, "{\"metadata\":{\"name\":\"f1\",\"labels\":{\"app\":\"other\"}},\"spec\":{}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_apply(s.ms, &ta_fl, "{\"metadata\":{\"name\":\"f1\",\"labels\":{\"app\":\"demo\"}},\"spec\":{}}", KCTL_NTS, NULL, NULL);
    KT_EQ_INT(kctl_transport_watch_next(&s.t, w, 0, &ev, NULL), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_DELETED);
    KT_EQ_STR(ev.resource_version, "2");
    KT_EQ_STR(ev.obj ? kctl_obj_resource_version(ev.obj) : "", "2");
    if (ev.obj) ta_str(ev.obj, "metadata.labels.app", label, sizeof label);
    KT_EQ_STR(label, "demo"); /* the content it last matched in */
    kctl_event_clear(&ev);
    KT_EQ_INT(kctl_transport_watch_next(&s.t, w, 0, &ev, NULL), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_ADDED);
    KT_EQ_STR(ev.obj ? kctl_obj_resource_version(ev.obj) : "", "3");
    kctl_event_clear(&ev);
    KT_EQ_INT(kctl_transport_watch_next(&s.t, w, 0, &ev, NULL), KCTL_ERR_AGAIN);
    kctl_transport_watch_close(&s.t, w);
    ta_close(&s);
}

/* A transport without a patch entry: the wrapper reads, merges, updates. */
static kctl_transport_vtable ta_nopatch_vt;

static void ta_patch_both_ways(void) {
    ta_store s;
    kctl_transport nopatch;
    kctl_obj *o = NULL;
    kctl_api_status st;
    char v[32];
    int way;
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    ta_nopatch_vt = *s.t.vt;
    ta_nopatch_vt.patch = NULL;
    nopatch.vt = &ta_nopatch_vt;
    nopatch.self = s.t.self;
    for (way = 0; way < 2; way++) {
        const kctl_transport *t = way ? &nopatch : &s.t;
        const char *name = way ? "p1" : "p0";
        {
            char doc[128];
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"a\":\"1\"}},\"spec\":{\"x\":1,\"y\":2}}", name);
            KT_EQ_INT(kctl_transport_create(t, &ta_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
        }
        KT_EQ_INT(kctl_transport_patch(t, &ta_cm, name, "{\"spec\":{\"y\":null,\"z\":3},\"metadata\":{\"labels\":{\"b\":\"2\"}}}", KCTL_NTS, 0,
                                       &o, &st), KCTL_OK);
        if (o) {
            KT_EQ_STR(kctl_obj_label(o, "a"), "1");
            KT_EQ_STR(kctl_obj_label(o, "b"), "2");
            KT_EQ_INT(kctl_obj_generation(o), 2);
            kctl_obj_unref(o);
            o = NULL;
        }
        KT_EQ_INT(kctl_transport_patch(t, &ta_cm, name, "{\"status\":{\"phase\":\"Ready\"},\"spec\":{\"x\":99}}", KCTL_NTS, KCTL_PATCH_STATUS,
                                       &o, &st), KCTL_OK);
        if (o) {
            ta_str(o, "status.phase", v, sizeof v);
            KT_EQ_STR(v, "Ready");
            KT_EQ_INT(kctl_obj_generation(o), 2); /* a status patch changes the status alone */
            kctl_obj_unref(o);
            o = NULL;
        }
        KT_EQ_INT(kctl_transport_patch(t, &ta_cm, name, "{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{\"x\":5}}", KCTL_NTS, 0, NULL, &st),
                  KCTL_ERR_CONFLICT); /* a version in the patch is a precondition */
        KT_EQ_INT(kctl_transport_patch(t, &ta_cm, "missing", "{}", KCTL_NTS, 0, NULL, &st), KCTL_ERR_NOT_FOUND);
        KT_EQ_INT(kctl_transport_patch(t, &ta_cm, name, "{", KCTL_NTS, 0, NULL, &st), KCTL_ERR_INVALID_ARG);
        KT_EQ_INT(kctl_transport_patch(t, &ta_cm, name, "{}", KCTL_NTS, 8u, NULL, &st), KCTL_ERR_INVALID_ARG);
    }
    KT_EQ_INT(kctl_transport_get(NULL, &ta_cm, "p0", &o, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_transport_create(&s.t, NULL, "{}", 2, NULL, NULL), KCTL_ERR_INVALID_ARG);
    kctl_api_status_clear(&st);
    ta_close(&s);
}

/* with_rv and check, the pieces another store builds from. */
static void ta_with_rv_and_check(void) {
    kctl_obj *o = NULL, *r = NULL;
    kctl_api_status st;
    kctl_resource res = { "", "v1", "configmaps", NULL };
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_obj_parse("{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"5\",\"labels\":{\"x\":\"y\"}},\"spec\":{\"n\":1}}", KCTL_NTS,
                             NULL, &o), KCTL_OK);
    KT_EQ_INT(kctl_apisrv_with_rv(o, "42", NULL, &r), KCTL_OK);
    KT_EQ_STR(r ? kctl_obj_resource_version(r) : "", "42");
    KT_EQ_STR(r ? kctl_obj_label(r, "x") : "", "y");
    kctl_obj_unref(r);
    KT_EQ_INT(kctl_apisrv_with_rv(o, NULL, NULL, &r), KCTL_OK); /* none: as etcd keeps it */
    KT_EQ_STR(r ? kctl_obj_resource_version(r) : "?", "");
    kctl_obj_unref(r);
    KT_EQ_INT(kctl_apisrv_check(&res, o, NULL, &st), KCTL_OK);
    kctl_obj_unref(o);
    KT_NEED_VALIDATION("a stored object's name checked as a write's");
    KT_EQ_INT(kctl_obj_parse("{\"metadata\":{\"name\":\"A_b\"}}", KCTL_NTS, NULL, &o), KCTL_OK);
    KT_EQ_INT(kctl_apisrv_check(&res, o, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_CHECK(st.cause_count >= 1 && strcmp(st.causes[0].field, "metadata.name") == 0);
    kctl_obj_unref(o);
    kctl_api_status_clear(&st);
}

/* With or without the format checks (KCTL_NO_VALIDATION), a create whose
   name or namespace a store's key cannot hold is refused (422 Invalid)
   and nothing is written: else "prod/a" made cluster-wide would be the
   key of prod's "a" and overwrite it, and a name the lookups refuse ("a
   b") could be created twice. Names only apimachinery refuses ("Web")
   are stored without the checks, and read, written and deleted as any;
   kctl_apisrv_check (the loader's) refuses what a create refuses. */
static void ta_names_a_key_can_hold(void) {
    static const kctl_resource cluster = { "", "v1", "configmaps", "" };
    static const char *const unsafe[] = { "{\"metadata\":{\"name\":\"prod/a\"}}", "{\"metadata\":{\"name\":\"a b\"}}",
                                          "{\"metadata\":{\"name\":\"a|b\"}}", "{\"metadata\":{\"name\":\"a\\tb\"}}",
                                          "{\"metadata\":{\"name\":\"a\\u007f\"}}", "{\"metadata\":{}}",
                                          "{\"metadata\":{\"name\":\"\"}}", "{\"metadata\":{\"generateName\":\"x/\"}}",
                                          "{\"metadata\":{\"name\":\"a\",\"namespace\":\"prod/x\"}}" };
    ta_store s;
    kctl_api_status st;
    kctl_resource longns = ta_cm;
    kctl_obj *o = NULL;
    char doc[400], name[300], ns[80];
    size_t i;
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"prod\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    for (i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++) {
#ifdef KCTL_NO_GENERATE_NAME
        if (strstr(unsafe[i], "generateName")) { /* no name is made to be refused: UNSUPPORTED, nothing written */
            KT_EQ_INT(kctl_transport_create(&s.t, &cluster, unsafe[i], KCTL_NTS, NULL, &st), KCTL_ERR_UNSUPPORTED);
            KT_EQ_INT(kctl_memstore_apply(s.ms, &cluster, unsafe[i], KCTL_NTS, NULL, NULL), KCTL_ERR_UNSUPPORTED);
            continue;
        }
#endif
        KT_EQ_INT(kctl_transport_create(&s.t, &cluster, unsafe[i], KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
        KT_EQ_INT(st.code, 422);
        KT_EQ_STR(st.reason, "Invalid");
        KT_EQ_INT(kctl_memstore_apply(s.ms, &cluster, unsafe[i], KCTL_NTS, NULL, NULL), KCTL_ERR_INVALID_ARG);
    }
    /* a name of 253 bytes, a namespace of 63, and no more */
    memset(name, 'a', sizeof name);
    name[253] = '\0';
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"}}", name);
    KT_EQ_INT(kctl_transport_create(&s.t, &cluster, doc, KCTL_NTS, NULL, &st), KCTL_OK);
    name[253] = 'a';
    name[254] = '\0';
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"}}", name);
    KT_EQ_INT(kctl_transport_create(&s.t, &cluster, doc, KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    memset(ns, 'n', sizeof ns);
    ns[63] = '\0';
    longns.ns = ns;
    KT_EQ_INT(kctl_transport_create(&s.t, &longns, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, &st), KCTL_OK);
    ns[63] = 'n';
    ns[64] = '\0';
    KT_EQ_INT(kctl_transport_create(&s.t, &longns, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 3);
    /* prod's "a" is as it was */
    KT_EQ_INT(kctl_transport_get(&s.t, &ta_cm, "a", &o, NULL), KCTL_OK);
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", "1");
    kctl_obj_unref(o);
    o = NULL;
    /* a name only apimachinery refuses: kept without the checks, as any other */
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"Web_1\"},\"data\":{\"k\":\"1\"}}", KCTL_NTS, &o, &st),
              KT_WORDS ? KCTL_ERR_INVALID_ARG : KCTL_OK);
    if (o) {
        kctl_obj_unref(o);
        o = NULL;
        KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"Web_1\"}}", KCTL_NTS, NULL, &st), KCTL_ERR_EXISTS);
        KT_EQ_INT(kctl_transport_update(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"Web_1\"},\"data\":{\"k\":\"2\"}}", KCTL_NTS, NULL, &st),
                  KCTL_OK);
        KT_EQ_INT(kctl_transport_remove(&s.t, &ta_cm, "Web_1", NULL, NULL, &st), KCTL_OK);
        KT_EQ_INT(kctl_transport_get(&s.t, &ta_cm, "Web_1", &o, &st), KCTL_ERR_NOT_FOUND);
    }
    kctl_obj_unref(o);
    o = NULL;
    /* the loader's check: what a create refuses */
    KT_EQ_INT(kctl_obj_parse("{\"metadata\":{\"name\":\"a/b\"}}", KCTL_NTS, NULL, &o), KCTL_OK);
    KT_EQ_INT(kctl_apisrv_check(&cluster, o, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_obj_parse("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n|x\"}}", KCTL_NTS, NULL, &o), KCTL_OK);
    KT_EQ_INT(kctl_apisrv_check(&cluster, o, NULL, &st), KCTL_ERR_INVALID_ARG);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_obj_parse("{\"metadata\":{\"name\":\"Web_1\",\"labels\":{\"-x\":\"y\"}}}", KCTL_NTS, NULL, &o), KCTL_OK);
    KT_EQ_INT(kctl_apisrv_check(&cluster, o, NULL, &st), KT_WORDS ? KCTL_ERR_INVALID_ARG : KCTL_OK);
    kctl_obj_unref(o);
    kctl_api_status_clear(&st);
    ta_close(&s);
}

/* What the server owns, without a patch (the trimmed builds have none):
   uid and creationTimestamp set on create and kept by an update that
   sends others or none; a uid that differs is a precondition (409); a
   status write bumps no generation and keeps them too. */
static void ta_server_meta_kept(void) {
    ta_store s;
    kctl_api_status st;
    kctl_obj *o = NULL, *u = NULL;
    char uid[64] = "", created[64] = "", doc[256], got[64];
    if (!ta_open(&s)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_transport_create(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"m\",\"uid\":\"mine\",\"creationTimestamp\":\"1999-01-01T00:00:00Z\"},"
                                    "\"data\":{\"k\":\"1\"}}", KCTL_NTS, &o, &st), KCTL_OK);
    if (!o) { ta_close(&s); return; }
    snprintf(uid, sizeof uid, "%s", kctl_obj_uid(o));
    ta_str(o, "metadata.creationTimestamp", created, sizeof created);
    KT_CHECK(*uid && strcmp(uid, "mine") != 0);
    KT_CHECK(strlen(created) == 20 && strcmp(created, "1999-01-01T00:00:00Z") != 0);
    KT_EQ_INT(kctl_obj_generation(o), 1);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_transport_update(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"m\",\"creationTimestamp\":\"1999-01-01T00:00:00Z\"},"
                                    "\"data\":{\"k\":\"2\"}}", KCTL_NTS, &u, &st), KCTL_OK);
    KT_EQ_STR(u ? kctl_obj_uid(u) : "", uid);
    if (u) ta_str(u, "metadata.creationTimestamp", got, sizeof got);
    KT_EQ_STR(u ? got : "", created);
    KT_EQ_INT(u ? kctl_obj_generation(u) : 0, 2);
    kctl_obj_unref(u);
    u = NULL;
    KT_EQ_INT(kctl_transport_update(&s.t, &ta_cm, "{\"metadata\":{\"name\":\"m\",\"uid\":\"other\"},\"data\":{\"k\":\"3\"}}", KCTL_NTS, NULL,
                                    &st), KCTL_ERR_CONFLICT);
    KT_EQ_INT(st.code, 409);
    KT_EQ_STR(st.reason, "Conflict");
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"m\"},\"data\":{\"k\":\"9\"},\"status\":{\"ok\":true}}");
    KT_EQ_INT(kctl_transport_update_status(&s.t, &ta_cm, doc, KCTL_NTS, &u, &st), KCTL_OK);
    KT_EQ_STR(u ? kctl_obj_uid(u) : "", uid);
    KT_EQ_INT(u ? kctl_obj_generation(u) : 0, 2);
    if (u) ta_str(u, "data.k", got, sizeof got);
    KT_EQ_STR(u ? got : "", "2"); /* a status write changes the status alone */
    kctl_obj_unref(u);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 3);
    kctl_api_status_clear(&st);
    ta_close(&s);
}

/* Allocation failures anywhere in a decision leave the store unchanged. */
static void ta_nomem_sweep(void) {
    long k;
    for (k = 0; k < 200; k++) {
        ta_store s;
        kctl_api_status st;
        int rc;
        if (!ta_open(&s)) return;
        kctl_memstore_apply(s.ms, &ta_cm, "{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"x.io/f\"]},\"spec\":{\"n\":1}}", KCTL_NTS, NULL, NULL);
        memset(&st, 0, sizeof st);
        st.allocator = kt_allocator(&s.a);
        s.a.fail_after = k;
        /* refused (a bad label; KCTL_NO_VALIDATION: no name) */
        rc = kctl_transport_update(&s.t, &ta_cm, KT_WORDS ? "{\"metadata\":{\"name\":\"a\",\"labels\":{\"Bad!\":\"x\"}},\"spec\":{\"n\":2}}"
                                                          : "{\"metadata\":{},\"spec\":{\"n\":2}}", KCTL_NTS, NULL, &st);
        KT_CHECK(rc == KCTL_ERR_INVALID_ARG || rc == KCTL_ERR_NOMEM);
        rc = kctl_transport_remove(&s.t, &ta_cm, "a", NULL, NULL, &st);
        KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOMEM);
        if (rc == KCTL_ERR_NOMEM) KT_EQ_U64(kctl_memstore_revision(s.ms), 1);
        s.a.fail_after = -1;
        kctl_api_status_clear(&st);
        ta_close(&s);
        if (s.a.fail_count == 0) break; /* every allocation passed: swept */
    }
    KT_CHECK(k < 200);
}

/* Section 3: a store write is O(n log n) in the document's size (bounded
   by the JSON code's work counter, not by time): 1M members in spec and
   65,535 labels, shuffled, created, applied unchanged (no write), applied
   with one member changed (a write, generation bumped), status-updated. */
static uint64_t ta_work_bound(uint64_t n, uint64_t c) {
    uint64_t lg = 1;
    while ((UINT64_C(1) << lg) < n) lg++;
    return c * n * lg + 1000;
}

static char *ta_big_doc(uint32_t n, uint32_t labels, uint32_t step, uint32_t odd) {
    size_t cap = (size_t)n * 24 + (size_t)labels * 28 + 256, len = 0;
    char *d = (char *)malloc(cap);
    uint32_t i;
    if (!d) return NULL;
    len += (size_t)snprintf(d + len, cap - len, "{\"metadata\":{\"name\":\"big\",\"labels\":{");
    for (i = 0; i < labels; i++) {
        uint32_t k = (uint32_t)(((uint64_t)i * step + 1) % labels);
        len += (size_t)snprintf(d + len, cap - len, "%s\"l%07u\":\"v\"", i ? "," : "", (unsigned)k);
    }
    len += (size_t)snprintf(d + len, cap - len, "}},\"spec\":{");
    for (i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(((uint64_t)i * step + 1) % n);
        len += (size_t)snprintf(d + len, cap - len, "%s\"m%07u\":%u", i ? "," : "", (unsigned)k, k == odd ? 7u : 1u);
    }
    snprintf(d + len, cap - len, "}}");
    return d;
}

static void ta_big_writes_are_n_log_n(void) {
    static const uint32_t sizes[] = { 1000, 64000, 1000000 };
    size_t k;
    for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint32_t n = sizes[k], labels = n < 65535 ? n : 65535;
        char *a, *b, *c;
        kctl_memstore *ms = NULL;
        kctl_obj *o = NULL;
        uint64_t w0, work;
        if (n >= 1000000 && kt_heavy("the 1,000,000-member size")) return;
        a = ta_big_doc(n, labels, 1, UINT32_MAX);
        b = ta_big_doc(n, labels, 7919, UINT32_MAX);
        c = ta_big_doc(n, labels, 7919, n / 2);
        KT_CHECK(a && b && c);
        if (!a || !b || !c || kctl_memstore_create(NULL, &ms) != KCTL_OK) {
            free(a); free(b); free(c);
            return;
        }
        w0 = kctl__json_work();
        KT_EQ_INT(kctl_memstore_apply(ms, &ta_cm, a, KCTL_NTS, NULL, NULL), KCTL_OK);
        KT_EQ_INT(kctl_memstore_apply(ms, &ta_cm, b, KCTL_NTS, &o, NULL), KCTL_OK); /* the same, reordered */
        KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", "1");
        kctl_obj_unref(o);
        KT_EQ_INT(kctl_memstore_apply(ms, &ta_cm, c, KCTL_NTS, &o, NULL), KCTL_OK);
        KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
        kctl_obj_unref(o);
        {
            kctl_transport t = kctl_memstore_transport(ms);
            KT_EQ_INT(kctl_transport_update_status(&t, &ta_cm, "{\"metadata\":{\"name\":\"big\"},\"status\":{\"ok\":true}}", KCTL_NTS, &o, NULL),
                      KCTL_OK);
            KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", "3");
            kctl_obj_unref(o);
        }
        work = kctl__json_work() - w0;
        if (work > ta_work_bound(n, 64))
            kt_fail(__FILE__, __LINE__, "store writes, %u members: %llu name comparisons, over %llu", (unsigned)n,
                    (unsigned long long)work, (unsigned long long)ta_work_bound(n, 64));
        kctl_memstore_destroy(ms);
        free(a);
        free(b);
        free(c);
        if (kt.cur_failed) return; /* past the first size that fails: the rest would take hours */
    }
}

/* ---- 1.1 end to end: a finalizer and the generation predicate */
typedef struct ta_env {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_informer *inf;
    kctl_controller *c;
    int reconciles, cleanups, gone;
} ta_env;

#define TA_FIN "example.com/cleanup"

static kctl_reconcile_result ta_fin_reconcile(const kctl_reconcile_ctx *ctx) {
    ta_env *e = (ta_env *)ctx->user_data;
    kctl_reconcile_result r;
    char patch[160];
    memset(&r, 0, sizeof r);
    e->reconciles++;
    if (!ctx->obj) { e->gone++; return r; }
    if (kctl_obj_deletion_timestamp(ctx->obj)) {
        if (!kctl_obj_has_finalizer(ctx->obj, TA_FIN)) return r;
        e->cleanups++; /* the world is cleaned up; let the object go */
        snprintf(patch, sizeof patch, "{\"metadata\":{\"finalizers\":null,\"resourceVersion\":\"%s\"}}", kctl_obj_resource_version(ctx->obj));
    } else if (!kctl_obj_has_finalizer(ctx->obj, TA_FIN)) {
        snprintf(patch, sizeof patch, "{\"metadata\":{\"finalizers\":[\"" TA_FIN "\"],\"resourceVersion\":\"%s\"}}", kctl_obj_resource_version(ctx->obj));
    } else {
        return r;
    }
    r.error = kctl_transport_patch(&ctx->transport, &ta_cm, kctl_obj_name(ctx->obj), patch, KCTL_NTS, 0, NULL, NULL);
    return r;
}

static void ta_round_until_quiet(ta_env *e) {
    int i;
    for (i = 0; i < 200; i++) {
        size_t n = 0;
        kctl_informer_step(e->inf, 0, NULL);
        kctl_controller_step(e->c, 100, &n);
        if (n == 0 && kctl_queue_len(kctl_controller_queue(e->c)) == 0) {
            kctl_informer_step(e->inf, 0, NULL);
            kctl_controller_step(e->c, 100, &n);
            if (n == 0) return;
        }
    }
}

static void ta_finalizer_with_generation_predicate(void) {
    ta_env e;
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_controller_desc cd;
    kctl_predicate pred;
    kctl_obj *o = NULL;
    memset(&e, 0, sizeof e);
    kctl_vclock_init(&e.vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_memstore_create(&md, &e.ms), KCTL_OK);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(e.ms);
    d.resource = ta_cm;
    d.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_informer_create(&d, &e.inf), KCTL_OK);
    memset(&pred, 0, sizeof pred);
    pred.kind = KCTL_PRED_GENERATION_CHANGED; /* as the README recommends */
    memset(&cd, 0, sizeof cd);
    cd.primary = e.inf;
    cd.predicate = &pred;
    cd.transport = d.transport;
    cd.reconcile = ta_fin_reconcile;
    cd.user_data = &e;
    cd.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_controller_create(&cd, &e.c), KCTL_OK);
    kctl_memstore_apply(e.ms, &ta_cm, "{\"metadata\":{\"name\":\"dev\"},\"spec\":{\"port\":1}}", KCTL_NTS, NULL, NULL);
    ta_round_until_quiet(&e);
    KT_EQ_INT(kctl_memstore_get(e.ms, &ta_cm, "dev", &o, NULL), KCTL_OK);
    KT_CHECK(o && kctl_obj_has_finalizer(o, TA_FIN));
    kctl_obj_unref(o);
    /* the delete: marked, generation bumped, so the predicate lets it through */
    KT_EQ_INT(kctl_memstore_delete(e.ms, &ta_cm, "dev", NULL), KCTL_OK);
    ta_round_until_quiet(&e);
    KT_EQ_INT(e.cleanups, 1);
    KT_EQ_INT(kctl_memstore_get(e.ms, &ta_cm, "dev", &o, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(e.gone, 1);
    kctl_informer_destroy(e.inf);
    kctl_controller_destroy(e.c);
    kctl_memstore_destroy(e.ms);
    kctl_vclock_deinit(&e.vc);
}

void kt_suite_apisrv(void) {
    KT_RUN(ta_status_parse_real_bodies);
    KT_RUN(ta_memstore_words_refusals);
    KT_RUN(ta_validation_edges);
    KT_RUN(ta_generation_rule);
    KT_RUN(ta_escaped_member_names);
    KT_RUN(ta_repeated_names_kept_once);
    KT_RUN(ta_deleting_refuses_new_finalizers);
    KT_RUN(ta_delete_preconditions);
    KT_RUN(ta_selector_leave_carries_new_version);
    KT_RUN(ta_patch_both_ways);
    KT_RUN(ta_with_rv_and_check);
    KT_RUN(ta_names_a_key_can_hold);
    KT_RUN(ta_server_meta_kept);
    KT_RUN(ta_nomem_sweep);
    KT_RUN(ta_decide_public);
    KT_RUN(ta_decide_escapes_managed_strings);
    KT_RUN(ta_big_writes_are_n_log_n);
    KT_RUN(ta_finalizer_with_generation_predicate);
}
