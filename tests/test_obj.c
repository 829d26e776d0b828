/* test_obj.c - objects: metadata read once, shared by reference, bad documents rejected. */
#include "kt.h"

static kctl_obj *to_parse(const char *doc, int want_rc) {
    kctl_obj *o = NULL;
    int rc = kctl_obj_parse(doc, strlen(doc), NULL, &o);
    KT_EQ_INT(rc, want_rc);
    if (want_rc != KCTL_OK) KT_CHECK(o == NULL);
    return o;
}

static const char to_pod[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-1\",\"namespace\":\"prod\","
    "\"uid\":\"6f1c\",\"resourceVersion\":\"18446744073709551615\",\"generation\":3,"
    "\"deletionTimestamp\":\"2026-11-29T10:00:00Z\","
    "\"labels\":{\"app\":\"web\",\"tier\":\"fro\\u006et\",\"app.kubernetes.io/name\":\"web\"},"
    "\"annotations\":{\"note\":\"a \\\"quoted\\\" \\u00e9\"},"
    "\"finalizers\":[\"kctl.io/cleanup\",\"foregroundDeletion\"],"
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"web-rs\",\"uid\":\"rs-1\"},"
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"web\",\"uid\":\"d-1\",\"controller\":true}]},"
    "\"spec\":{\"containers\":[]}}";

static void to_metadata(void) {
    kctl_obj *o = to_parse(to_pod, KCTL_OK);
    const char *k = NULL, *v = NULL;
    uint64_t rv = 0;
    size_t len = 0;
    if (!o) return;
    KT_EQ_STR(kctl_obj_key(o), "prod/web-1");
    KT_EQ_STR(kctl_obj_namespace(o), "prod");
    KT_EQ_STR(kctl_obj_name(o), "web-1");
    KT_EQ_STR(kctl_obj_uid(o), "6f1c");
    KT_EQ_STR(kctl_obj_resource_version(o), "18446744073709551615");
    KT_CHECK(kctl_obj_resource_version_u64(o, &rv));
    KT_EQ_U64(rv, UINT64_MAX);
    KT_EQ_INT(kctl_obj_generation(o), 3);
    KT_EQ_STR(kctl_obj_deletion_timestamp(o), "2026-11-29T10:00:00Z");
    KT_EQ_U64(kctl_obj_label_count(o), 3);
    KT_EQ_STR(kctl_obj_label(o, "tier"), "front");
    KT_EQ_STR(kctl_obj_label(o, "app.kubernetes.io/name"), "web");
    KT_CHECK(kctl_obj_label(o, "missing") == NULL);
    KT_CHECK(kctl_obj_label_at(o, 0, &k, &v));
    KT_EQ_STR(k, "app");
    KT_EQ_STR(v, "web");
    KT_CHECK(!kctl_obj_label_at(o, 3, &k, &v));
    KT_EQ_STR(kctl_obj_annotation(o, "note"), "a \"quoted\" \xc3\xa9");
    KT_EQ_U64(kctl_obj_finalizer_count(o), 2);
    KT_EQ_STR(kctl_obj_finalizer(o, 1), "foregroundDeletion");
    KT_CHECK(kctl_obj_finalizer(o, 2) == NULL);
    KT_CHECK(kctl_obj_has_finalizer(o, "kctl.io/cleanup"));
    KT_CHECK(!kctl_obj_has_finalizer(o, "kctl.io/other"));
    KT_EQ_U64(kctl_obj_owner_count(o), 2);
    KT_EQ_STR(kctl_obj_owner(o, 0)->kind, "ReplicaSet");
    KT_CHECK(!kctl_obj_owner(o, 0)->controller);
    KT_CHECK(kctl_obj_owner(o, 2) == NULL);
    KT_CHECK(kctl_obj_controller_ref(o) != NULL);
    if (kctl_obj_controller_ref(o)) {
        KT_EQ_STR(kctl_obj_controller_ref(o)->kind, "Deployment");
        KT_EQ_STR(kctl_obj_controller_ref(o)->uid, "d-1");
        KT_EQ_STR(kctl_obj_controller_ref(o)->api_version, "apps/v1");
    }
    KT_EQ_STR(kctl_obj_json(o, &len), to_pod);
    KT_EQ_U64(len, strlen(to_pod));
    KT_CHECK(kctl_obj_decoded(o) == NULL);
    kctl_obj_unref(o);
}

static void to_cluster_scoped_and_defaults(void) {
    kctl_obj *o = to_parse("{\"metadata\":{\"name\":\"node-a\",\"resourceVersion\":\"abc\",\"namespace\":null}}", KCTL_OK);
    uint64_t rv = 7;
    if (!o) return;
    KT_EQ_STR(kctl_obj_key(o), "node-a");
    KT_EQ_STR(kctl_obj_namespace(o), "");
    KT_EQ_STR(kctl_obj_uid(o), "");
    KT_EQ_STR(kctl_obj_resource_version(o), "abc");
    KT_CHECK(!kctl_obj_resource_version_u64(o, &rv)); /* opaque, not a number */
    KT_EQ_U64(rv, 7);
    KT_EQ_INT(kctl_obj_generation(o), 0);
    KT_CHECK(kctl_obj_deletion_timestamp(o) == NULL);
    KT_EQ_U64(kctl_obj_label_count(o), 0);
    KT_EQ_U64(kctl_obj_finalizer_count(o), 0);
    KT_CHECK(kctl_obj_controller_ref(o) == NULL);
    kctl_obj_unref(o);
    /* a resourceVersion past 64 bits is opaque too */
    o = to_parse("{\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"18446744073709551616\"}}", KCTL_OK);
    if (o) {
        KT_CHECK(!kctl_obj_resource_version_u64(o, &rv));
        kctl_obj_unref(o);
    }
}

static void to_repeated_label_last_wins(void) {
    kctl_obj *o = to_parse("{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"1\",\"b\":\"2\",\"a\":\"3\"}}}", KCTL_OK);
    if (!o) return;
    KT_EQ_U64(kctl_obj_label_count(o), 2);
    KT_EQ_STR(kctl_obj_label(o, "a"), "3");
    kctl_obj_unref(o);
}

static void to_rejects_bad_documents(void) {
    static const char *bad[] = {
        "", "nope", "[]", "\"s\"", "{}", "{\"metadata\":null}", "{\"metadata\":[]}", "{\"metadata\":{}}",
        "{\"metadata\":{\"name\":\"\"}}", "{\"metadata\":{\"name\":7}}", "{\"metadata\":{\"name\":\"a\\u0000b\"}}",
        "{\"metadata\":{\"name\":\"a\",\"namespace\":1}}", "{\"metadata\":{\"name\":\"a\",\"generation\":\"3\"}}",
        "{\"metadata\":{\"name\":\"a\",\"generation\":1.5}}", "{\"metadata\":{\"name\":\"a\",\"labels\":[]}}",
        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":1}}}", "{\"metadata\":{\"name\":\"a\",\"annotations\":{\"x\":null}}}",
        "{\"metadata\":{\"name\":\"a\",\"finalizers\":\"f\"}}", "{\"metadata\":{\"name\":\"a\",\"finalizers\":[1]}}",
        "{\"metadata\":{\"name\":\"a\",\"ownerReferences\":[1]}}",
        "{\"metadata\":{\"name\":\"a\",\"ownerReferences\":[{\"name\":\"o\",\"controller\":\"yes\"}]}}",
        "{\"metadata\":{\"name\":\"a\"}} trailing", "{\"metadata\":{\"name\":\"a\",}}",
    };
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kctl_obj *o = (kctl_obj *)&i; /* must be set to NULL */
        int rc = kctl_obj_parse(bad[i], strlen(bad[i]), NULL, &o);
        if (rc != KCTL_ERR_PROTO) kt_fail(__FILE__, __LINE__, "document %u: rc %d, want PROTO", (unsigned)i, rc);
        KT_CHECK(o == NULL);
    }
    KT_EQ_INT(kctl_obj_parse(NULL, 0, NULL, NULL), KCTL_ERR_INVALID_ARG);
}

static void to_limits(void) {
    kctl_obj_opts op;
    kctl_obj *o = NULL;
    const char *doc = "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":[[[1]]]}}";
    memset(&op, 0, sizeof op);
    op.limits.max_depth = 3;
    KT_EQ_INT(kctl_obj_parse(doc, strlen(doc), &op, &o), KCTL_ERR_TOO_LARGE);
    op.limits.max_depth = 0;
    op.limits.max_bytes = 10;
    KT_EQ_INT(kctl_obj_parse(doc, strlen(doc), &op, &o), KCTL_ERR_TOO_LARGE);
}

static void to_refcount_and_allocator(void) {
    kt_alloc a;
    kctl_obj_opts op;
    kctl_obj *o = NULL;
    long fail;
    kt_alloc_init(&a);
    memset(&op, 0, sizeof op);
    op.allocator = kt_allocator(&a);
    KT_EQ_INT(kctl_obj_parse(to_pod, strlen(to_pod), &op, &o), KCTL_OK);
    KT_EQ_INT(a.live, 1); /* one block per object; the parse's scratch tokens are gone */
    KT_CHECK(kctl_obj_ref(o) == o);
    kctl_obj_unref(o);
    KT_EQ_INT(a.live, 1);
    kctl_obj_unref(o);
    KT_EQ_INT(a.live, 0);
    kctl_obj_unref(NULL);
    KT_CHECK(kctl_obj_ref(NULL) == NULL);
    for (fail = 0; fail < 3; fail++) { /* out of memory at each allocation */
        kt_alloc_init(&a);
        a.fail_after = fail;
        op.allocator = kt_allocator(&a);
        o = (kctl_obj *)&a;
        KT_EQ_INT(kctl_obj_parse(to_pod, strlen(to_pod), &op, &o), fail < 2 ? KCTL_ERR_NOMEM : KCTL_OK);
        KT_CHECK(fail < 2 ? o == NULL : o != NULL);
        kctl_obj_unref(o);
        KT_EQ_INT(a.live, 0);
    }
    op.allocator.free_fn = NULL; /* one hook without the other */
    KT_EQ_INT(kctl_obj_parse(to_pod, strlen(to_pod), &op, &o), KCTL_ERR_INVALID_ARG);
}

typedef struct to_codec_state { int decoded, released, fail; } to_codec_state;
static int to_decode(const kctl_obj *o, void **out, void *user_data) {
    to_codec_state *st = (to_codec_state *)user_data;
    st->decoded++;
    if (st->fail) return KCTL_ERR_PROTO;
    *out = (void *)kctl_obj_name(o); /* any pointer will do: the object's own name */
    return KCTL_OK;
}
static void to_release(void *decoded, void *user_data) {
    (void)decoded;
    ((to_codec_state *)user_data)->released++;
}

static void to_codec(void) {
    to_codec_state st;
    kctl_obj_opts op;
    kctl_obj *o = NULL;
    memset(&st, 0, sizeof st);
    memset(&op, 0, sizeof op);
    op.codec.decode = to_decode;
    op.codec.release = to_release;
    op.codec.user_data = &st;
    KT_EQ_INT(kctl_obj_parse(to_pod, strlen(to_pod), &op, &o), KCTL_OK);
    KT_EQ_INT(st.decoded, 1);
    KT_EQ_STR((const char *)kctl_obj_decoded(o), "web-1");
    kctl_obj_ref(o);
    kctl_obj_unref(o);
    KT_EQ_INT(st.released, 0);
    kctl_obj_unref(o);
    KT_EQ_INT(st.released, 1);
    st.fail = 1; /* a codec error rejects the document, nothing to release */
    KT_EQ_INT(kctl_obj_parse(to_pod, strlen(to_pod), &op, &o), KCTL_ERR_PROTO);
    KT_CHECK(o == NULL);
    KT_EQ_INT(st.released, 1);
}

void kt_suite_obj(void) {
    KT_RUN(to_metadata);
    KT_RUN(to_cluster_scoped_and_defaults);
    KT_RUN(to_repeated_label_last_wins);
    KT_RUN(to_rejects_bad_documents);
    KT_RUN(to_limits);
    KT_RUN(to_refcount_and_allocator);
    KT_RUN(to_codec);
}
