/* test_review.c - an adversarial review of the transport wrappers, the
   API-server rules and the memstore: each FINDING test failed on the code
   it was written against and passes since its fix; they stay as regression
   tests (the review's report gives each defect and its fix). */
#include "kt.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>

static const kctl_resource rv_cm = { "", "v1", "configmaps", "prod" };
static const kctl_resource rv_any = { "", "v1", "configmaps", NULL };


typedef struct rv_store {
    kctl_memstore *ms;
    kctl_transport t;
    kt_alloc a;
    char path[256];
} rv_store;

static int rv_open(rv_store *s, bool save_on_write) {
    kctl_memstore_desc d;
    static int seq;
    memset(s, 0, sizeof *s);
    kt_alloc_init(&s->a);
    memset(&d, 0, sizeof d);
    d.allocator = kt_allocator(&s->a);
    if (save_on_write) {
        snprintf(s->path, sizeof s->path, "%s/kctl-review-%ld-%d.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid(),
                 seq++);
        kt_remove_store(s->path);
        d.path = s->path;
        d.save_on_write = true;
    }
    if (kctl_memstore_create(&d, &s->ms) != KCTL_OK) return 0;
    s->t = kctl_memstore_transport(s->ms);
    return 1;
}

static void rv_close(rv_store *s) {
    kctl_memstore_destroy(s->ms);
    KT_EQ_INT(s->a.live, 0);
    if (s->path[0]) kt_remove_store(s->path);
}

/* The whole file at path, malloc'd (NULL: none). */
static char *rv_slurp(const char *path, long *size) {
    FILE *f = fopen(path, "rb");
    char *b;
    *size = -1;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = (char *)malloc((size_t)*size + 1);
    if (b && fread(b, 1, (size_t)*size, f) != (size_t)*size) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* A copy of the stored document of name (NULL: not there). */
static char *rv_doc(rv_store *s, const char *name) {
    kctl_obj *o = NULL;
    char *c = NULL;
    size_t n;
    const char *d;
    if (kctl_memstore_get(s->ms, &rv_cm, name, &o, NULL) != KCTL_OK) return NULL;
    d = kctl_obj_json(o, &n);
    if ((c = (char *)malloc(n + 1)) != NULL) {
        memcpy(c, d, n);
        c[n] = '\0';
    }
    kctl_obj_unref(o);
    return c;
}

static bool rv_same(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

/* ---- allocation failures: a write that fails changed nothing (not a
   finding: every write, with save_on_write off and on, failed at each of
   its allocations in turn, leaves the store, its file and its watchers as
   they were, leaks nothing, and hands out no object; this passes). */
static kctl_transport_vtable rv_nopatch_vt;

enum { RV_CREATE, RV_GENERATE, RV_UPDATE, RV_UPDATE_SAME, RV_UPDATE_STATUS, RV_PATCH, RV_PATCH_BY_UPDATE, RV_PATCH_STATUS,
       RV_REMOVE, RV_REMOVE_MARK, RV_REMOVE_BY_UPDATE, RV_APPLY_NEW, RV_APPLY_SAME, RV_APPLY_CHANGE, RV_REFUSE_INVALID, RV_OPS };

static void rv_seed(rv_store *s) {
    kctl_memstore_apply(s->ms, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"n\":1}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_apply(s->ms, &rv_cm, "{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"x.io/f\"]},\"spec\":{\"n\":1}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_apply(s->ms, &rv_cm, "{\"metadata\":{\"name\":\"d\",\"finalizers\":[\"x.io/f\"]},\"spec\":{\"n\":1}}", KCTL_NTS, NULL, NULL);
    kctl_memstore_delete(s->ms, &rv_cm, "d", NULL); /* d is deleting */
}

static int rv_op(rv_store *s, int op, kctl_obj **out, kctl_api_status *st, const char **target) {
    kctl_transport np;
    np.vt = &rv_nopatch_vt;
    np.self = s->t.self;
    switch (op) {
    case RV_CREATE:
        *target = "n";
        return kctl_transport_create(&s->t, &rv_cm, "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"},\"finalizers\":[\"x.io/g\"]},"
                                     "\"spec\":{\"k\":[1,2,3]},\"status\":{\"dropped\":true}}", KCTL_NTS, out, st);
    case RV_GENERATE:
        *target = NULL;
        return kctl_transport_create(&s->t, &rv_cm, "{\"metadata\":{\"generateName\":\"g-\"},\"spec\":{}}", KCTL_NTS, out, st);
    case RV_UPDATE:
        *target = "a";
        return kctl_transport_update(&s->t, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"},\"spec\":{\"n\":2}}", KCTL_NTS, out, st);
    case RV_UPDATE_SAME:
        *target = "a";
        return kctl_transport_update(&s->t, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"n\":1}}", KCTL_NTS, out, st);
    case RV_UPDATE_STATUS:
        *target = "a";
        return kctl_transport_update_status(&s->t, &rv_cm, "{\"metadata\":{\"name\":\"a\"},\"status\":{\"ok\":true}}", KCTL_NTS, out, st);
    case RV_PATCH:
        *target = "a";
        return kctl_transport_patch(&s->t, &rv_cm, "a", "{\"spec\":{\"n\":null,\"m\":2},\"metadata\":{\"labels\":{\"x\":\"y\"}}}", KCTL_NTS, 0, out, st);
    case RV_PATCH_BY_UPDATE:
        *target = "a";
        return kctl_transport_patch(&np, &rv_cm, "a", "{\"spec\":{\"n\":null,\"m\":2}}", KCTL_NTS, 0, out, st);
    case RV_PATCH_STATUS:
        *target = "a";
        return kctl_transport_patch(&s->t, &rv_cm, "a", "{\"status\":{\"phase\":\"Ready\"}}", KCTL_NTS, KCTL_PATCH_STATUS, out, st);
    case RV_REMOVE:
        *target = "a";
        return kctl_transport_remove(&s->t, &rv_cm, "a", NULL, out, st);
    case RV_REMOVE_MARK:
        *target = "f";
        return kctl_transport_remove(&s->t, &rv_cm, "f", NULL, out, st);
    case RV_REMOVE_BY_UPDATE:
        *target = "d";
        return kctl_transport_patch(&s->t, &rv_cm, "d", "{\"metadata\":{\"finalizers\":null}}", KCTL_NTS, 0, out, st);
    case RV_APPLY_NEW:
        *target = "z";
        return kctl_memstore_apply(s->ms, &rv_cm, "{\"metadata\":{\"name\":\"z\"},\"spec\":{},\"status\":{\"kept\":1}}", KCTL_NTS, out, st);
    case RV_APPLY_SAME:
        *target = "a";
        return kctl_memstore_apply(s->ms, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"n\":1}}", KCTL_NTS, out, st);
    case RV_APPLY_CHANGE:
        *target = "a";
        return kctl_memstore_apply(s->ms, &rv_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"n\":3}}", KCTL_NTS, out, st);
    default:
        *target = "a";
        return kctl_transport_update(&s->t, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"Bad!\":\"x\"}},\"spec\":{\"n\":2}}", KCTL_NTS, out, st);
    }
}

static const char *rv_target(int op) {
    static const char *const t[RV_OPS] = { "n", NULL, "a", "a", "a", "a", "a", "a", "a", "f", "d", "z", "a", "a", "a" };
    return t[op];
}

/* How many events a watcher from the current revision has now. */
static int rv_drain(rv_store *s, kctl_watch *w) {
    kctl_event ev;
    int n = 0;
    while (kctl_transport_watch_next(&s->t, w, 0, &ev, NULL) == KCTL_OK) {
        kctl_event_clear(&ev);
        n++;
    }
    return n;
}

static void rv_sweep_one(int op, bool save) {
    rv_store s;
    long k;
    int want_rc, want_events = 0;
    uint64_t want_rev = 0;
    /* the reference run */
    {
        kctl_watch *w = NULL;
        kctl_obj *o = NULL;
        const char *target;
        char rv[24];
        if (!rv_open(&s, save)) return;
        rv_nopatch_vt = *s.t.vt;
        rv_nopatch_vt.patch = NULL;
        rv_seed(&s);
        snprintf(rv, sizeof rv, "%llu", (unsigned long long)kctl_memstore_revision(s.ms));
        kctl_transport_watch_open(&s.t, &rv_cm, NULL, rv, &w, NULL);
        want_rc = rv_op(&s, op, &o, NULL, &target);
        want_rev = kctl_memstore_revision(s.ms);
        want_events = w ? rv_drain(&s, w) : -1;
        kctl_obj_unref(o);
        kctl_transport_watch_close(&s.t, w);
        rv_close(&s);
    }
    for (k = 0; k < 400; k++) {
        kctl_watch *w = NULL;
        kctl_obj *o = NULL;
        kctl_api_status st;
        const char *target = NULL;
        char rv[24], *before, *after, *file0 = NULL, *file1 = NULL;
        long size0 = -1, size1 = -1;
        uint64_t rev0;
        int rc, events;
        if (!rv_open(&s, save)) return;
        rv_seed(&s);
        rev0 = kctl_memstore_revision(s.ms);
        snprintf(rv, sizeof rv, "%llu", (unsigned long long)rev0);
        target = rv_target(op);
        KT_EQ_INT(kctl_transport_watch_open(&s.t, &rv_cm, NULL, rv, &w, NULL), KCTL_OK);
        if (save) file0 = rv_slurp(s.path, &size0);
        before = target ? rv_doc(&s, target) : NULL;
        memset(&st, 0, sizeof st);
        st.allocator = kt_allocator(&s.a);
        s.a.fail_after = k;
        rc = rv_op(&s, op, &o, &st, &target);
        s.a.fail_after = -1;
        after = target && op != RV_GENERATE ? rv_doc(&s, target) : NULL;
        events = w ? rv_drain(&s, w) : -1;
        if (save) file1 = rv_slurp(s.path, &size1);
        if (rc == want_rc) {
            KT_EQ_U64(kctl_memstore_revision(s.ms), want_rev);
            KT_EQ_INT(events, want_events);
        } else {
            if (rc != KCTL_ERR_NOMEM && !(save && rc == KCTL_ERR_IO))
                kt_fail(__FILE__, __LINE__, "op %d save %d failing allocation %ld: rc %d (want %d or NOMEM)", op, (int)save, k, rc, want_rc);
            KT_CHECK(o == NULL);
            KT_EQ_U64(kctl_memstore_revision(s.ms), rev0);
            KT_EQ_INT(events, 0);
            if (op != RV_GENERATE) KT_CHECK(rv_same(before, after));
            if (save) KT_CHECK(size0 == size1 && file0 && file1 && memcmp(file0, file1, (size_t)size0) == 0);
        }
        free(before);
        free(after);
        free(file0);
        free(file1);
        kctl_obj_unref(o);
        kctl_api_status_clear(&st);
        kctl_transport_watch_close(&s.t, w);
        rv_close(&s);
        if (s.a.fail_count == 0) break; /* nothing failed: swept */
    }
    KT_CHECK(k < 400);
}

static void rv_nomem_sweep(void) {
    int op, save;
    for (save = 0; save < 2; save++)
        for (op = 0; op < RV_OPS; op++) rv_sweep_one(op, save != 0);
}

/* ---- findings */

/* FINDING 1 */
/* an update (or a patch, or the owner's apply of an existing
   object) stores a metadata.generateName that no write checks, while the
   loader checks it (kctl_apisrv_check): one accepted write, and the saved
   store refuses to load at the next start (PROTO). */
static void rv_update_generate_name_bricks_the_file(void) {
    rv_store s;
    kctl_memstore_desc d;
    kctl_memstore *again = NULL;
    int rc;
    if (!rv_open(&s, true)) return;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &rv_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    rc = kctl_transport_patch(&s.t, &rv_cm, "a", "{\"metadata\":{\"generateName\":\"Not A Prefix\"}}", KCTL_NTS, 0, NULL, NULL);
    KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_INVALID_ARG);
    kctl_memstore_destroy(s.ms);
    s.ms = NULL;
    memset(&d, 0, sizeof d);
    d.path = s.path;
    KT_EQ_INT(kctl_memstore_create(&d, &again), KCTL_OK); /* every acknowledged write must load again */
    kctl_memstore_destroy(again);
    kt_remove_store(s.path);
}

/* FINDING 2 */
/* the loader checks every object with the default JSON limits
   (depth 64), not with the store's own desc.obj_opts.limits: a store
   configured for deeper documents saves objects it then refuses to load. */
static void rv_loader_uses_default_limits(void) {
    char path[256], doc[1024];
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL, *again = NULL;
    int i, n = 0;
    snprintf(path, sizeof path, "%s/kctl-review-deep-%ld.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    kt_remove_store(path);
    memset(&d, 0, sizeof d);
    d.path = path;
    d.save_on_write = true;
    d.obj_opts.limits.max_depth = 100;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) return;
    n += snprintf(doc + n, sizeof doc - (size_t)n, "{\"metadata\":{\"name\":\"deep\"},\"spec\":");
    for (i = 0; i < 70; i++) n += snprintf(doc + n, sizeof doc - (size_t)n, "{\"a\":");
    n += snprintf(doc + n, sizeof doc - (size_t)n, "1");
    for (i = 0; i < 71; i++) n += snprintf(doc + n, sizeof doc - (size_t)n, "}");
    KT_EQ_INT(kctl_memstore_apply(ms, &rv_cm, doc, (size_t)n, NULL, NULL), KCTL_OK); /* within the store's limits */
    kctl_memstore_destroy(ms);
    KT_EQ_INT(kctl_memstore_create(&d, &again), KCTL_OK);
    kctl_memstore_destroy(again);
    kt_remove_store(path);
}

/* FINDING 3 */
/* the generateName suffix is a function of (uid_seq, rev) alone,
   which a refused write does not change: after one collision every retry
   collides again, for as long as nothing else writes (a real server draws
   a fresh random suffix per request). */
static void rv_generate_name_retry_collides_forever(void) {
    rv_store s, probe;
    kctl_obj *o = NULL;
    char name[64], doc[128];
    int i, ok = 0;
    if (!rv_open(&probe, false)) return;
    /* the name the generator picks in a store after one write */
    kctl_memstore_apply(probe.ms, &rv_cm, "{\"metadata\":{\"name\":\"x\"}}", KCTL_NTS, NULL, NULL);
    KT_EQ_INT(KT_NEED_GENERATE_NAME(kctl_transport_create(&probe.t, &rv_cm, "{\"metadata\":{\"generateName\":\"g-\"}}", KCTL_NTS, &o, NULL)), KCTL_OK);
    snprintf(name, sizeof name, "%s", o ? kctl_obj_name(o) : "");
    kctl_obj_unref(o);
    o = NULL;
    rv_close(&probe);
    /* a store whose one write is an object of that very name */
    if (!rv_open(&s, false)) return;
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"}}", name);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &rv_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
    for (i = 0; i < 3; i++) { /* the client retries on AlreadyExists */
        int rc = kctl_transport_create(&s.t, &rv_cm, "{\"metadata\":{\"generateName\":\"g-\"}}", KCTL_NTS, &o, NULL);
        KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_EXISTS);
        if (rc == KCTL_OK) ok++;
        kctl_obj_unref(o);
        o = NULL;
    }
    KT_CHECK(ok > 0); /* some retry must get a new name */
    rv_close(&s);
}

/* FINDING 4 */
/* names are not checked on get, patch and remove, so through a
   request without a namespace, the name "prod/a" reaches the object a of
   namespace prod (no object can be named "prod/a"; the store's own rule
   refuses such names for being ambiguous in its keys). */
static void rv_slash_name_reaches_namespaced_object(void) {
    rv_store s;
    kctl_obj *o = NULL;
    if (!rv_open(&s, false)) return;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &rv_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_get(&s.t, &rv_any, "prod/a", &o, NULL), KCTL_ERR_NOT_FOUND);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_patch(&s.t, &rv_any, "prod/a", "{\"spec\":{\"x\":1}}", KCTL_NTS, 0, NULL, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_transport_remove(&s.t, &rv_any, "prod/a", NULL, NULL, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_memstore_get(s.ms, &rv_cm, "a", &o, NULL), KCTL_OK); /* still there, unchanged */
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", "1");
    kctl_obj_unref(o);
    rv_close(&s);
}

/* FINDING 5 */
/* a create through a request without a namespace takes the
   document's namespace (the header: "the document's namespace must be the
   request's (400 BadRequest otherwise)"; a real server clears it for a
   cluster-scoped request), and the object it made cannot be read back
   through the same request. */
static void rv_created_object_reachable_through_its_request(void) {
    rv_store s;
    kctl_obj *o = NULL, *back = NULL;
    int rc;
    if (!rv_open(&s, false)) return;
    /* The rule chosen (TRANSPORT's porting guide): a request without a
       namespace writes a document into the document's namespace (an
       all-namespaces informer's controller writes status so); calls by
       name address the request's namespace, so they name it. Both
       transports behave so: the Kubernetes one builds its URL alike. */
    rc = kctl_transport_create(&s.t, &rv_any, "{\"metadata\":{\"name\":\"n1\",\"namespace\":\"prod\"}}", KCTL_NTS, &o, NULL);
    KT_EQ_INT(rc, KCTL_OK);
    {
        kctl_resource in_prod = rv_any;
        in_prod.ns = o ? kctl_obj_namespace(o) : "prod";
        KT_EQ_INT(kctl_transport_get(&s.t, &in_prod, o ? kctl_obj_name(o) : "n1", &back, NULL), KCTL_OK);
        kctl_obj_unref(back);
        back = NULL;
        KT_EQ_INT(kctl_transport_get(&s.t, &rv_any, "n1", &back, NULL), KCTL_ERR_NOT_FOUND); /* not a cluster-scoped n1 */
    }
    kctl_obj_unref(o);
    kctl_obj_unref(back);
    rv_close(&s);
}

/* FINDING 6 */
/* fields a write discards are validated anyway: update_status
   keeps the stored metadata (statusStrategy.PrepareForUpdate copies the old
   object before validating), and the custom resource strategy sets
   generation itself (1 on create, the stored one on update), yet an invalid
   label in a status write, or a negative generation, is refused 422. */
static void rv_discarded_fields_are_validated(void) {
    rv_store s;
    kctl_obj *o = NULL;
    kctl_api_status st;
    if (!rv_open(&s, false)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\"}},\"spec\":{}}", KCTL_NTS,
                                  NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_update_status(&s.t, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web server\"}},"
                                           "\"status\":{\"ok\":true}}", KCTL_NTS, &o, &st), KCTL_OK);
    KT_EQ_STR(o ? kctl_obj_label(o, "app") : "", "web"); /* the stored labels stay */
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_update(&s.t, &rv_cm, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"web\"},\"generation\":-1},"
                                    "\"spec\":{\"n\":2}}", KCTL_NTS, &o, &st), KCTL_OK);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_create(&s.t, &rv_cm, "{\"metadata\":{\"name\":\"b\",\"generation\":-1}}", KCTL_NTS, &o, &st), KCTL_OK);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 1);
    kctl_obj_unref(o);
    kctl_api_status_clear(&st);
    rv_close(&s);
}

/* FINDING 7 */
/* the owner's apply replaces the whole object, finalizers
   included: an apply of the desired document (which names no finalizers)
   drops the finalizer a controller added, and on an object being deleted
   it removes the object at once, so the controller's cleanup never runs. */
static void rv_apply_bypasses_finalizers(void) {
    rv_store s;
    kctl_obj *o = NULL;
    static const char desired[] = "{\"metadata\":{\"name\":\"dev\"},\"spec\":{\"hostname\":\"gw-1\"}}";
    if (!rv_open(&s, false)) return;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &rv_cm, desired, KCTL_NTS, NULL, NULL), KCTL_OK);
    /* the controller takes charge of cleanup */
    KT_EQ_INT(kctl_transport_patch(&s.t, &rv_cm, "dev", "{\"metadata\":{\"finalizers\":[\"example.com/cleanup\"]}}", KCTL_NTS, 0, NULL,
                                   NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_delete(s.ms, &rv_cm, "dev", NULL), KCTL_OK); /* marked, waits for the controller */
    /* the owner re-applies the same desired state (an edge agent does, at every start) */
    KT_EQ_INT(kctl_memstore_apply(s.ms, &rv_cm, desired, KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_get(s.ms, &rv_cm, "dev", &o, NULL), KCTL_OK);
    KT_EQ_U64(o ? kctl_obj_finalizer_count(o) : 0, 1);
    kctl_obj_unref(o);
    rv_close(&s);
}

/* FINDING 8 */
/* refusals without a Status ("every refusal of the memstore"
   comes with one): a document within desc.obj_opts.limits whose stored
   form (uid, timestamps, version added) exceeds them, and a merge patch
   deeper than the JSON writer's fixed 64 levels while the store's limits
   allow more (a create at that depth is accepted), both return TOO_LARGE
   with st untouched. */
static void rv_too_large_without_status(void) {
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    kctl_api_status st;
    char doc[1024];
    int rc, i, n = 0;
    memset(&st, 0, sizeof st);
    memset(&d, 0, sizeof d);
    d.obj_opts.limits.max_bytes = 200;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) return;
    t = kctl_memstore_transport(ms);
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":\"%0150d\"}}", 0); /* 191 bytes */
    rc = kctl_transport_create(&t, &rv_cm, doc, KCTL_NTS, NULL, &st);
    if (rc != KCTL_OK) KT_CHECK(st.code != 0);
    kctl_api_status_clear(&st);
    kctl_memstore_destroy(ms);
    memset(&d, 0, sizeof d);
    d.obj_opts.limits.max_depth = 100;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) return;
    t = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_memstore_apply(ms, &rv_cm, "{\"metadata\":{\"name\":\"b\"},\"spec\":{}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    n += snprintf(doc + n, sizeof doc - (size_t)n, "{\"spec\":");
    for (i = 0; i < 70; i++) n += snprintf(doc + n, sizeof doc - (size_t)n, "{\"a\":");
    n += snprintf(doc + n, sizeof doc - (size_t)n, "1");
    for (i = 0; i < 71; i++) n += snprintf(doc + n, sizeof doc - (size_t)n, "}");
    rc = kctl_transport_patch(&t, &rv_cm, "b", doc, (size_t)n, 0, NULL, &st);
    if (rc != KCTL_OK) KT_CHECK(st.code != 0);
    kctl_api_status_clear(&st);
    kctl_memstore_destroy(ms);
}

/* FINDING 9 */
/* the loader trusts the header's counters: a revision of
   2^64-1 (or "-1", which sscanf's %llu takes) loads, and the next write
   gets resourceVersion "0" and takes the store's revision back to 0; a
   uid sequence below the uids of the loaded objects hands out a uid that
   is already taken. Both are files no write could have made. */
static void rv_write_file(const char *path, const char *body) {
    FILE *f = fopen(path, "wb");
    char end[32];
    size_t i;
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a 64, as the format says */
    if (!f) return;
    for (i = 0; body[i]; i++) {
        h ^= (unsigned char)body[i];
        h *= UINT64_C(0x100000001b3);
    }
    snprintf(end, sizeof end, "end %016llx\n", (unsigned long long)h);
    fputs(body, f);
    fputs(end, f);
    fclose(f);
}

static void rv_loader_trusts_header_counters(void) {
    char path[256], body[512];
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_obj *o = NULL;
    static const char obj[] = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"prod\",\"uid\":\"00000000-0000-4000-8000-000000000001\","
                              "\"resourceVersion\":\"1\",\"generation\":1}}";
    snprintf(path, sizeof path, "%s/kctl-review-hdr-%ld.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    kt_remove_after(path); /* also when a trimmed build skips the test */
    memset(&d, 0, sizeof d);
    d.path = path;
    rv_write_file(path, "kctl-memstore 1 -1 0 0\n");
    if (kctl_memstore_create(&d, &ms) == KCTL_OK) {
        uint64_t loaded = kctl_memstore_revision(ms);
        KT_EQ_INT(kctl_memstore_apply(ms, &rv_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, &o, NULL), KCTL_OK);
        KT_CHECK(kctl_memstore_revision(ms) > loaded); /* revisions only rise */
        KT_CHECK(o && strcmp(kctl_obj_resource_version(o), "0") != 0);
        kctl_obj_unref(o);
        o = NULL;
        kctl_memstore_destroy(ms);
        ms = NULL;
    }
    snprintf(body, sizeof body, "kctl-memstore 1 1 0 1\n/configmaps %lu\n%s\n", (unsigned long)strlen(obj), obj);
    rv_write_file(path, body);
    if (kctl_memstore_create(&d, &ms) == KCTL_OK) {
        KT_EQ_INT(kctl_memstore_apply(ms, &rv_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, &o, NULL), KCTL_OK);
        KT_CHECK(o && strcmp(kctl_obj_uid(o), "00000000-0000-4000-8000-000000000001") != 0); /* uids are unique */
        kctl_obj_unref(o);
        kctl_memstore_destroy(ms);
    }
    kt_remove_store(path);
}

/* FINDING 10 */
/* an annotation key is checked lowercased (right: case does not
   matter for annotation keys) but the Status quotes the lowercased copy,
   where apimachinery's ValidateAnnotations reports the key as sent. */
static void rv_annotation_key_quoted_as_sent(void) {
    rv_store s;
    kctl_api_status st;
    KT_NEED_VALIDATION("annotation keys");
    if (!rv_open(&s, false)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_transport_create(&s.t, &rv_cm, "{\"metadata\":{\"name\":\"an\",\"annotations\":{\"Bad Key\":\"x\"}}}", KCTL_NTS, NULL,
                                    &st), KCTL_ERR_INVALID_ARG);
    KT_CHECK(st.cause_count == 1 && strncmp(st.causes[0].message, "Invalid value: \"Bad Key\": ", 26) == 0);
    kctl_api_status_clear(&st);
    rv_close(&s);
}

/* FINDING 11 */
/* generateName is checked at its full length, where
   apimachinery masks the trailing dash first (maskTrailingDash drops two
   characters and appends "a") and then truncates the base to 58 characters
   for the generated name: a 254-character prefix ending in '-' is a valid
   request (the name made is 63 characters), and kctl refuses it. */
static void rv_long_generate_name_prefix(void) {
    rv_store s;
    kctl_obj *o = NULL;
    char doc[400], pre[260];
    if (!rv_open(&s, false)) return;
    memset(pre, 'a', 253);
    pre[253] = '-';
    pre[254] = '\0';
    snprintf(doc, sizeof doc, "{\"metadata\":{\"generateName\":\"%s\"}}", pre);
    KT_EQ_INT(KT_NEED_GENERATE_NAME(kctl_transport_create(&s.t, &rv_cm, doc, KCTL_NTS, &o, NULL)), KCTL_OK);
    KT_EQ_U64(o ? strlen(kctl_obj_name(o)) : 0, 63);
    kctl_obj_unref(o);
    rv_close(&s);
}

/* FINDING 12 */
/* Every extra controller reference adds a cause whose message quotes the
   first controller's kind and name twice, and the Status message repeats
   them again, with no bound on their length: memory and time are
   quadratic in the document (170 KB: 938 MB and 3.7 s at -O2; a few MB
   exhausts any device). The peak here is bounded at 64 times the document. */
typedef struct rv_bytes {
    size_t cur, peak;
} rv_bytes;

static void *rv_bytes_alloc(size_t n, void *user_data) {
    rv_bytes *b = (rv_bytes *)user_data;
    size_t *p = (size_t *)malloc(n + 2 * sizeof(size_t));
    if (!p) return NULL;
    p[0] = n;
    b->cur += n;
    if (b->cur > b->peak) b->peak = b->cur;
    return p + 2;
}

static void rv_bytes_free(void *ptr, void *user_data) {
    rv_bytes *b = (rv_bytes *)user_data;
    size_t *p;
    if (!ptr) return;
    p = (size_t *)ptr - 2;
    b->cur -= p[0];
    free(p);
}

static void rv_owner_refs_status_is_quadratic(void) {
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    kctl_api_status st;
    rv_bytes b;
    size_t cap = 10000 + 200 * 80 + 256, n = 0;
    char *doc;
    int i, rc;
    KT_NEED_VALIDATION("owner references refused with their causes");
    if (!(doc = (char *)malloc(cap))) return;
    memset(&b, 0, sizeof b);
    memset(&d, 0, sizeof d);
    d.allocator.alloc_fn = rv_bytes_alloc;
    d.allocator.free_fn = rv_bytes_free;
    d.allocator.user_data = &b;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) {
        free(doc);
        return;
    }
    t = kctl_memstore_transport(ms);
    memset(&st, 0, sizeof st);
    st.allocator = d.allocator;
    n += (size_t)snprintf(doc + n, cap - n, "{\"metadata\":{\"name\":\"a\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"");
    memset(doc + n, 'K', 10000);
    n += 10000;
    n += (size_t)snprintf(doc + n, cap - n, "\",\"name\":\"n\",\"uid\":\"u\",\"controller\":true}");
    for (i = 0; i < 200; i++)
        n += (size_t)snprintf(doc + n, cap - n, ",{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"n\",\"uid\":\"u\",\"controller\":true}");
    n += (size_t)snprintf(doc + n, cap - n, "]}}");
    b.peak = b.cur;
    rc = kctl_transport_create(&t, &rv_cm, doc, n, NULL, &st);
    KT_EQ_INT(rc, KCTL_ERR_INVALID_ARG);
    if (b.peak > 64 * n) kt_fail(__FILE__, __LINE__, "peak %lu bytes for a %lu-byte document", (unsigned long)b.peak, (unsigned long)n);
    kctl_api_status_clear(&st);
    kctl_memstore_destroy(ms);
    KT_EQ_U64(b.cur, 0);
    free(doc);
}

/* FINDING 13 */
/* A loaded object's generation is taken as it is (>= 1), and bumped with
   a plain ++: at INT64_MAX, the next change of its spec (or a deletion
   mark) is signed overflow, undefined behaviour (UBSan aborts; a release
   build stores a negative generation, and the saved store then fails its
   own loader). Run in a child process, so an abort fails only this test. */
static int rv_generation_child(const char *path) {
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_obj *o = NULL;
    int rc, ok;
    memset(&d, 0, sizeof d);
    d.path = path;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) return 0; /* refused at load: fine */
    rc = kctl_memstore_apply(ms, &rv_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":1}}", KCTL_NTS, &o, NULL);
    ok = rc != KCTL_OK || (o && kctl_obj_generation(o) >= 1);
    kctl_obj_unref(o);
    kctl_memstore_destroy(ms);
    return ok ? 0 : 1;
}

static void rv_generation_overflow(void) {
    char path[256], body[512];
    static const char obj[] = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"prod\",\"uid\":\"u1\",\"resourceVersion\":\"1\","
                              "\"generation\":9223372036854775807},\"spec\":{}}";
    pid_t pid;
    int status = 0;
    snprintf(path, sizeof path, "%s/kctl-review-gen-%ld.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    snprintf(body, sizeof body, "kctl-memstore 1 1 1 1\n/configmaps %lu\n%s\n", (unsigned long)strlen(obj), obj);
    KT_NEED_MEMSTORE();
    rv_write_file(path, body);
    fflush(stdout);
    pid = fork();
    if (pid == 0) _exit(rv_generation_child(path));
    KT_CHECK(pid > 0);
    if (pid > 0) {
        KT_CHECK(waitpid(pid, &status, 0) == pid);
        KT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    kt_remove_store(path);
}

void kt_suite_review(void) {
    KT_RUN(rv_nomem_sweep);
    KT_RUN(rv_update_generate_name_bricks_the_file);
    KT_RUN(rv_loader_uses_default_limits);
    KT_RUN(rv_generate_name_retry_collides_forever);
    KT_RUN(rv_slash_name_reaches_namespaced_object);
    KT_RUN(rv_created_object_reachable_through_its_request);
    KT_RUN(rv_discarded_fields_are_validated);
    KT_RUN(rv_apply_bypasses_finalizers);
    KT_RUN(rv_too_large_without_status);
    KT_RUN(rv_loader_trusts_header_counters);
    KT_RUN(rv_annotation_key_quoted_as_sent);
    KT_RUN(rv_long_generate_name_prefix);
    KT_RUN(rv_owner_refs_status_is_quadratic);
    KT_RUN(rv_generation_overflow);
}
