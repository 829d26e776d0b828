/* test_obj.c - objects: metadata read once, shared by reference, bad documents rejected. */
#include "kt.h"
#include <stdlib.h>

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

/* The name is the key's tail after the namespace and '/' (an escaped
   namespace counts its bytes, not its escapes); an empty or null
   namespace leaves the whole key to the name, a name may hold '/'. */
static void to_name_after_namespace(void) {
    static const struct { const char *doc, *key, *ns, *name; } cases[] = {
        { "{\"metadata\":{\"namespace\":\"a\\u0062c\",\"name\":\"n1\"}}", "abc/n1", "abc", "n1" },
        { "{\"metadata\":{\"name\":\"n2\",\"namespace\":\"\"}}", "n2", "", "n2" },
        { "{\"metadata\":{\"name\":\"n3\",\"namespace\":null}}", "n3", "", "n3" },
        { "{\"metadata\":{\"name\":\"a/b\",\"namespace\":\"x\"}}", "x/a/b", "x", "a/b" },
        { "{\"metadata\":{\"name\":\"\\u00e9t\\u00e9\",\"namespace\":\"\\u00e9\"}}", "\xc3\xa9/\xc3\xa9t\xc3\xa9", "\xc3\xa9",
          "\xc3\xa9t\xc3\xa9" },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kctl_obj *o = to_parse(cases[i].doc, KCTL_OK);
        if (!o) continue;
        KT_EQ_STR(kctl_obj_key(o), cases[i].key);
        KT_EQ_STR(kctl_obj_namespace(o), cases[i].ns);
        KT_EQ_STR(kctl_obj_name(o), cases[i].name);
        kctl_obj_unref(o);
    }
    KT_EQ_STR(kctl_obj_name(NULL), "");
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

/* The block's layout, with each combination of a non-default allocator and
   a codec: the key right after the struct, and in fast builds refs, the
   string offsets and the node right before it (a get reads those alone:
   one cache line, or two); what follows the document (allocator, codec,
   owner refs, offsets) aligned for its pointers; every field read back as
   the default object has it. */
static void to_layout(void) {
    int ext;
    kctl_obj *ref = to_parse(to_pod, KCTL_OK);
    if (!ref) return;
    for (ext = 1; ext < 4; ext++) {
        to_codec_state st;
        kt_alloc a;
        kctl_obj_opts op;
        kctl_obj *o = NULL;
        const kctl_owner_ref *r;
        const char *doc, *k = NULL, *v = NULL;
        size_t len = 0, i, at[9];
        memset(&st, 0, sizeof st);
        memset(&op, 0, sizeof op);
        kt_alloc_init(&a);
        if (ext & 1) op.allocator = kt_allocator(&a);
        if (ext & 2) {
            op.codec.decode = to_decode;
            op.codec.release = to_release;
            op.codec.user_data = &st;
        }
        KT_EQ_INT(kctl_obj_parse(to_pod, strlen(to_pod), &op, &o), KCTL_OK);
        if (!o) continue;
        doc = kctl_obj_json(o, &len);
        kctl__test_obj_layout(o, at);
        KT_EQ_U64(at[0], (at[8] + 7) & ~(size_t)7); /* the key: right after the struct */
        KT_CHECK(doc == kctl_obj_key(o) + strlen(kctl_obj_key(o)) + 1);
        if (at[3] != 0) { /* fast builds: the string offsets, refs and the node last, the key after them */
            KT_CHECK(at[0] >= at[4] && at[0] - at[4] < 8); /* (32-bit: after the struct's padding to 8) */
            KT_EQ_U64(at[2], at[1] + 4 * sizeof(uint32_t));
            KT_EQ_U64(at[3], at[2] + sizeof(unsigned));
        }
        KT_CHECK((const char *)o + at[5] > doc + len);
        KT_EQ_U64(((uintptr_t)o + at[5]) % sizeof(void *), 0);
        KT_CHECK((ext & 1) ? (const char *)o + at[6] > doc + len && ((uintptr_t)o + at[6]) % sizeof(void *) == 0 : at[6] == 0);
        KT_CHECK((ext & 2) ? (const char *)o + at[7] > doc + len && ((uintptr_t)o + at[7]) % sizeof(void *) == 0 : at[7] == 0);
        if (ext & 2) KT_EQ_STR((const char *)kctl_obj_decoded(o), "web-1");
        KT_EQ_U64(len, strlen(to_pod));
        KT_CHECK(memcmp(doc, to_pod, len) == 0);
        KT_EQ_STR(kctl_obj_namespace(o), kctl_obj_namespace(ref));
        KT_EQ_STR(kctl_obj_name(o), kctl_obj_name(ref));
        KT_EQ_STR(kctl_obj_uid(o), kctl_obj_uid(ref));
        KT_EQ_STR(kctl_obj_resource_version(o), kctl_obj_resource_version(ref));
        KT_EQ_STR(kctl_obj_deletion_timestamp(o), kctl_obj_deletion_timestamp(ref));
        KT_CHECK(kctl_obj_generation(o) == 3);
        KT_EQ_U64(kctl_obj_label_count(o), 3);
        for (i = 0; i < 3; i++) {
            const char *k2 = NULL, *v2 = NULL;
            KT_CHECK(kctl_obj_label_at(o, i, &k, &v) && kctl_obj_label_at(ref, i, &k2, &v2));
            if (k && k2) KT_EQ_STR(k, k2);
            if (v && v2) KT_EQ_STR(v, v2);
        }
        KT_EQ_STR(kctl_obj_label(o, "tier"), "front");
        KT_EQ_STR(kctl_obj_annotation(o, "note"), kctl_obj_annotation(ref, "note"));
        KT_EQ_STR(kctl_obj_finalizer(o, 1), "foregroundDeletion");
        KT_EQ_U64(kctl_obj_owner_count(o), 2);
        r = kctl_obj_controller_ref(o);
        KT_CHECK(r != NULL && r == kctl_obj_owner(o, 1));
        if (r) {
            KT_EQ_STR(r->kind, "Deployment");
            KT_EQ_STR(r->uid, "d-1");
        }
        kctl_obj_unref(o);
        KT_EQ_INT(a.live, 0);
        KT_EQ_INT(st.released, ext & 2 ? 1 : 0);
    }
    kctl_obj_unref(ref);
}

/* ------------------------------------------- the document, read by path */

static void to_get(void) {
    static const char doc[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"NtpConfig\",\"metadata\":{\"name\":\"ntp\",\"namespace\":\"edge\","
        "\"resourceVersion\":\"18446744073709551615\",\"generation\":4,\"labels\":{\"app.kubernetes.io/name\":\"ntp\",\"tier\":\"a\",\"tier\":\"b\"}},"
        "\"spec\":{\"replicas\":2,\"ntp\":{\"servers\":[\"0.pool\",\"1.pool\",\"t\\u00e9st\"],\"poll\":{\"min\":4,\"max\":10}},"
        "\"drift\":-0.25,\"enabled\":true,\"note\":null,\"limits\":{\"cpu\":{\"max\":2},\"mem\":{\"max\":512}}}}";
    kctl_obj *o = to_parse(doc, KCTL_OK);
    char buf[32];
    size_t n = 0;
    int64_t x = 0, max = 0;
    uint64_t u = 0;
    double f = 0;
    bool b = false;
    kctl_json_value v, name;
    kctl_json_iter it;
    int k;
    if (!o) return;
    KT_EQ_INT(kctl_obj_get_int64(o, "spec.replicas", &x), KCTL_OK);
    KT_EQ_INT(x, 2);
    KT_EQ_INT(kctl_obj_get_string(o, "spec.ntp.servers[0]", buf, sizeof buf, &n), KCTL_OK);
    KT_EQ_STR(buf, "0.pool");
    KT_EQ_U64(n, 6);
    KT_EQ_INT(kctl_obj_get_string(o, "spec.ntp.servers[2]", buf, sizeof buf, &n), KCTL_OK);
    KT_EQ_STR(buf, "t\xc3\xa9st");
    KT_EQ_INT(kctl_obj_get_string(o, "metadata.labels[\"app.kubernetes.io/name\"]", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, "ntp");
    KT_EQ_INT(kctl_obj_get_string(o, "metadata.labels.tier", buf, sizeof buf, NULL), KCTL_OK);
    KT_EQ_STR(buf, kctl_obj_label(o, "tier")); /* the last of a repeated name, as the label */
    KT_EQ_INT(kctl_obj_get_uint64(o, "metadata.resourceVersion", &u), KCTL_OK);
    KT_EQ_U64(u, UINT64_MAX);
    KT_EQ_INT(kctl_obj_get_int64(o, "metadata.generation", &x), KCTL_OK);
    KT_EQ_INT(x, kctl_obj_generation(o));
    KT_EQ_INT(kctl_obj_get_double(o, "spec.drift", &f), KCTL_OK);
    KT_CHECK(f == -0.25);
    KT_EQ_INT(kctl_obj_get_bool(o, "spec.enabled", &b), KCTL_OK);
    KT_CHECK(b);
    /* absent, another type, out of range, too small, malformed */
    KT_EQ_INT(kctl_obj_get_int64(o, "spec.ntp.maxDistance", &x), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_obj_get_int64(o, "status.ready", &x), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_obj_get_string(o, "spec.ntp.servers[3]", buf, sizeof buf, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_obj_get_int64(o, "spec.ntp.servers", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_obj_get_bool(o, "spec.note", &b), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_obj_get_string(o, "spec.replicas", buf, sizeof buf, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_obj_get_int64(o, "metadata.resourceVersion", &x), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kctl_obj_get_string(o, "spec.ntp.servers[0]", buf, 6, &n), KCTL_ERR_TOO_LARGE);
    KT_EQ_U64(n, 6);
    KT_EQ_INT(kctl_obj_get_int64(o, "spec..replicas", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_obj_get(o, "spec.note", &v), KCTL_OK);
    KT_EQ_INT(v.type, KCTL_JSON_NULL);
    KT_EQ_INT(kctl_obj_get(o, NULL, &v), KCTL_OK);
    KT_CHECK(v.text == kctl_obj_json(o, &n) && v.len == n && v.type == KCTL_JSON_OBJECT);
    KT_EQ_INT(kctl_obj_get_int64(NULL, "spec.replicas", &x), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_obj_get(NULL, "", &v), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_obj_get_string(NULL, "", buf, sizeof buf, &n), KCTL_ERR_INVALID_ARG);
    KT_EQ_U64(n, 0);
    /* iterate an array, and a map reading a member of each value */
    KT_EQ_INT(kctl_obj_iter_begin(o, "spec.ntp.servers", &it), KCTL_OK);
    for (k = 0; kctl_json_iter_next(&it, NULL, &v); k++) {
        KT_EQ_INT(kctl_json_value_get_string(&v, NULL, buf, sizeof buf, NULL), KCTL_OK);
        if (k == 1) KT_EQ_STR(buf, "1.pool");
    }
    KT_EQ_INT(k, 3);
    KT_EQ_INT(kctl_obj_iter_begin(o, "spec.limits", &it), KCTL_OK);
    for (k = 0; kctl_json_iter_next(&it, &name, &v); k++) {
        KT_EQ_INT(kctl_json_value_get_string(&name, NULL, buf, sizeof buf, NULL), KCTL_OK);
        KT_EQ_STR(buf, k ? "mem" : "cpu");
        KT_EQ_INT(kctl_json_value_get_int64(&v, "max", &max), KCTL_OK);
        KT_EQ_INT(max, k ? 512 : 2);
    }
    KT_EQ_INT(k, 2);
    KT_EQ_INT(kctl_obj_iter_begin(o, "spec.replicas", &it), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_obj_iter_begin(o, "spec.nope", &it), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_obj_iter_begin(NULL, "spec", &it), KCTL_ERR_INVALID_ARG);
    KT_CHECK(!kctl_json_iter_next(&it, &name, &v));
    kctl_obj_unref(o);
}

/* ----------------------------- many labels: the work is counted, not timed */

/* c * n * log2(n) name comparisons, and a little (see tj_work_bound). */
static uint64_t to_work_bound(uint64_t n, uint64_t c) {
    uint64_t lg = 1;
    while ((UINT64_C(1) << lg) < n) lg++;
    return c * n * lg + 1000;
}

/* An object with n labels ("l00000": "v0", ... shuffled, after `dups`
   labels repeating the first names with "old"), n annotations (sorted)
   and n finalizers (reversed). */
static char *to_many_doc(uint32_t n, uint32_t dups, size_t *len) {
    char *t = (char *)malloc(((size_t)3 * n + dups) * 24 + 128);
    size_t p = 0;
    uint32_t k;
    if (!t) return NULL;
    p += (size_t)sprintf(t + p, "{\"metadata\":{\"name\":\"many\",\"labels\":{");
    for (k = 0; k < dups; k++) p += (size_t)sprintf(t + p, "%s\"l%05u\":\"old\"", k ? "," : "", (unsigned)(k % n));
    for (k = 0; k < n; k++) {
        uint32_t i = (uint32_t)(((uint64_t)k * 7919 + 1) % n);
        p += (size_t)sprintf(t + p, "%s\"l%05u\":\"v%u\"", k || dups ? "," : "", (unsigned)i, (unsigned)i);
    }
    p += (size_t)sprintf(t + p, "},\"annotations\":{");
    for (k = 0; k < n; k++) p += (size_t)sprintf(t + p, "%s\"a%05u\":\"%u\"", k ? "," : "", (unsigned)k, (unsigned)k);
    p += (size_t)sprintf(t + p, "},\"finalizers\":[");
    for (k = 0; k < n; k++) p += (size_t)sprintf(t + p, "%s\"f%05u\"", k ? "," : "", (unsigned)(n - 1 - k));
    p += (size_t)sprintf(t + p, "]}}");
    *len = p;
    return t;
}

/* Up to 65,535 labels, annotations and finalizers (the most an object
   holds), some label names repeated (the last counts): made, and every
   one looked up, in n log n name comparisons. */
static void to_many_labels(void) {
    static const uint32_t sizes[] = { 1000, 65535 };
    size_t s;
    for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        uint32_t n = sizes[s], i, miss = 0;
        size_t len = 0;
        char *doc = to_many_doc(n, 1000, &len), key[16], want[16];
        const char *k = NULL, *v = NULL;
        kctl_obj *o = NULL;
        uint64_t w0 = kctl__json_work(), work;
        int failed = kt.cur_failed;
        KT_CHECK(doc != NULL);
        if (!doc) return;
        KT_EQ_INT(kctl_obj_parse(doc, len, NULL, &o), KCTL_OK);
        if (o) {
            KT_EQ_U64(kctl_obj_label_count(o), n);
            KT_EQ_U64(kctl_obj_annotation_count(o), n);
            KT_EQ_U64(kctl_obj_finalizer_count(o), n);
            for (i = 0; i < n; i++) {
                const char *got;
                sprintf(key, "l%05u", (unsigned)i);
                sprintf(want, "v%u", (unsigned)i);
                got = kctl_obj_label(o, key);
                if (!got || strcmp(got, want) != 0) miss++;
                sprintf(key, "a%05u", (unsigned)i);
                sprintf(want, "%u", (unsigned)i);
                got = kctl_obj_annotation(o, key);
                if (!got || strcmp(got, want) != 0) miss++;
                sprintf(key, "f%05u", (unsigned)i);
                if (!kctl_obj_has_finalizer(o, key)) miss++;
            }
            KT_EQ_INT(miss, 0);
            KT_CHECK(kctl_obj_label(o, "l99999") == NULL && kctl_obj_label(o, "") == NULL);
            KT_CHECK(kctl_obj_annotation(o, "a") == NULL && !kctl_obj_has_finalizer(o, "f"));
            /* in document order, a repeated name where it last stands */
            KT_CHECK(kctl_obj_label_at(o, 0, &k, &v));
            KT_EQ_STR(k, "l00001");
            KT_EQ_STR(v, "v1");
            KT_CHECK(kctl_obj_label_at(o, n - 1, &k, &v));
            sprintf(key, "l%05u", (unsigned)(((uint64_t)(n - 1) * 7919 + 1) % n));
            KT_EQ_STR(k, key);
            KT_EQ_STR(kctl_obj_finalizer(o, 0), n == 1000 ? "f00999" : "f65534");
            work = kctl__json_work() - w0;
            if (work > to_work_bound(n, 16))
                kt_fail(__FILE__, __LINE__, "%u labels: %llu name comparisons, over %llu", (unsigned)n,
                        (unsigned long long)work, (unsigned long long)to_work_bound(n, 16));
            kctl_obj_unref(o);
        }
        free(doc);
        if (kt.cur_failed != failed) break; /* a quadratic path: minutes at the next size */
    }
}

/* One label more than an object holds: TOO_LARGE; a repeated one does not
   count twice. Out of memory at each allocation a big object makes
   (tokens, the lists of labels and annotations, the block): NOMEM, nothing
   left behind. */
static void to_many_labels_limits(void) {
    size_t len = 0;
    char *doc = to_many_doc(65536, 0, &len);
    kctl_obj *o = NULL;
    kt_alloc a;
    kctl_obj_opts op;
    long fail;
    if (!doc) return;
    KT_EQ_INT(kctl_obj_parse(doc, len, NULL, &o), KCTL_ERR_TOO_LARGE);
    KT_CHECK(o == NULL);
    free(doc);
    doc = to_many_doc(100, 50, &len);
    memset(&op, 0, sizeof op);
    for (fail = 0; fail < 5; fail++) {
        kt_alloc_init(&a);
        a.fail_after = fail;
        op.allocator = kt_allocator(&a);
        o = (kctl_obj *)&a;
        KT_EQ_INT(kctl_obj_parse(doc, len, &op, &o), fail < 4 ? KCTL_ERR_NOMEM : KCTL_OK);
        KT_CHECK(fail < 4 ? o == NULL : o != NULL);
        if (o) {
            KT_EQ_U64(kctl_obj_label_count(o), 100);
            KT_EQ_STR(kctl_obj_label(o, "l00049"), "v49");
            KT_EQ_INT(a.live, 1); /* one block */
        }
        kctl_obj_unref(o);
        KT_EQ_INT(a.live, 0);
    }
    free(doc);
}

void kt_suite_obj(void) {
    KT_RUN(to_metadata);
    KT_RUN(to_cluster_scoped_and_defaults);
    KT_RUN(to_repeated_label_last_wins);
    KT_RUN(to_name_after_namespace);
    KT_RUN(to_rejects_bad_documents);
    KT_RUN(to_limits);
    KT_RUN(to_refcount_and_allocator);
    KT_RUN(to_codec);
    KT_RUN(to_layout);
    KT_RUN(to_get);
    KT_RUN(to_many_labels);
    KT_RUN(to_many_labels_limits);
}
