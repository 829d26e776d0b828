/* test_kube.c - the Kubernetes transport against the test API server
   (tests/kube_server.h, itself checked against a real server's bytes,
   kubectl and the Python client): the transport contract suite
   (tests/contract.h, target "kube"), then what only an API server does:
   paths of every kind of resource, bookmarks, the clean end of a watch at
   its timeoutSeconds and the reflector's watch again at once, 410 on a
   too-old watch and on an expired continue token, the Status detail of
   409 and 422, 429/503 with Retry-After, a server restart. */
#include "kube.h"
#include "kube_server.h"
#include "contract.h"
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#ifdef KT_HAVE_CURL
static kt_kube_server *tk_srv; /* one server for the suite */
static unsigned tk_ns_seq;

static const kctl_resource tk_dc = { "edge.kctl.io", "v1", "deviceconfigs", "default" };

static int tk_transport(kt_alloc *a, uint32_t watch_s, kctl_transport *t) {
    kctl_kube_desc d = kctl_kube_desc_init();
    d.server = kt_kube_server_url(tk_srv);
    d.token = "test-token";
    d.request_timeout_ns = KCTL_SEC(5);
    if (watch_s) d.watch_timeout_min_s = d.watch_timeout_max_s = watch_s;
    if (a) d.allocator = kt_allocator(a);
    return kctl_kube_create(&d, t);
}

/* ------------------------------------------------------ the contract target */
typedef struct tk_store {
    kt_alloc a;
    char ns[32];
} tk_store;

static int tk_open(const kc_target *t, kc_store *s) {
    tk_store *m = (tk_store *)calloc(1, sizeof *m);
    int rc;
    (void)t;
    if (!m) return KCTL_ERR_NOMEM;
    kt_alloc_init(&m->a);
    snprintf(m->ns, sizeof m->ns, "contract-%u", ++tk_ns_seq); /* a fresh namespace: an empty store */
    if ((rc = tk_transport(&m->a, 0, &s->tp)) != KCTL_OK) {
        free(m);
        return rc;
    }
    s->res.ns = m->ns;
    s->impl = m;
    return KCTL_OK;
}

static void tk_close(const kc_target *t, kc_store *s) {
    tk_store *m = (tk_store *)s->impl;
    (void)t;
    kctl_transport_destroy(&s->tp);
    kctl_memstore_break_watches_after(kt_kube_server_memstore(tk_srv), 0); /* the next store's watches last */
    KT_EQ_INT(m->a.live, 0);
    free(m);
}

static int tk_compact(kc_store *s) {
    (void)s;
    kt_kube_server_expire_history(tk_srv);
    return KCTL_OK;
}

/* Watches opened from now on break after one event: the server's store
   ends them and the server drops the connection without the chunked
   terminator, so the transport reads a truncated stream. The server is
   shared: tk_close turns it off again. */
static int tk_break(kc_store *s) {
    (void)s;
    kctl_memstore_break_watches_after(kt_kube_server_memstore(tk_srv), 1);
    return KCTL_OK;
}

static int tk_progress(kc_store *s) {
    (void)s;
    kt_kube_server_bookmark_now(tk_srv);
    return KCTL_OK;
}

static const kc_target tk_target = {
    "kube",
    KC_CAP_ALL,
    { "edge.kctl.io", "v1", "deviceconfigs", "" },
    "edge.kctl.io/v1",
    "DeviceConfig",
    NULL,
    tk_open,
    tk_close,
    tk_compact,
    tk_progress,
    tk_break,
    KCTL_SEC(5),
    KCTL_MS(300),
    KCTL_SEC(3),
    NULL,
};

/* ------------------------------------------------------------ helpers */
static int tk_put(kctl_transport *t, const kctl_resource *res, const char *name, const char *rest, kctl_obj **out, kctl_api_status *st) {
    char doc[512];
    snprintf(doc, sizeof doc, "{\"apiVersion\":\"edge.kctl.io/v1\",\"kind\":\"DeviceConfig\",\"metadata\":{\"name\":\"%s\"}%s%s}", name,
             rest && *rest ? "," : "", rest ? rest : "");
    return kctl_transport_create(t, res, doc, KCTL_NTS, out, st);
}

static int tk_next(kctl_transport *t, kctl_watch *w, kctl_event *ev, kctl_api_status *st) {
    return kctl_transport_watch_next(t, w, KCTL_SEC(5), ev, st);
}

/* Each kind of resource at its path: the core group (configmaps), a
   cluster-scoped one (namespaces, with its status), another group
   (leases), all namespaces; every verb through the server. */
static void tk_every_verb(void) {
    kctl_transport t;
    kt_alloc a;
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_list_result l;
    kctl_delete_opts del;
    char rv[KCTL_RV_MAX], doc[256];
    static const kctl_resource cm = { "", "v1", "configmaps", "verbs" };
    static const kctl_resource nsr = { NULL, "v1", "namespaces", NULL };
    static const kctl_resource lease = { "coordination.k8s.io", "v1", "leases", "verbs" };
    kctl_resource all = cm;
    all.ns = NULL;
    memset(&st, 0, sizeof st);
    kt_alloc_init(&a);
    KT_EQ_INT(tk_transport(&a, 0, &t), KCTL_OK);
    KT_EQ_INT(kctl_transport_create(&t, &cm, "{\"metadata\":{\"name\":\"c1\"},\"data\":{\"k\":\"1\"}}", KCTL_NTS, &o, &st), KCTL_OK);
    KT_CHECK(o && !strcmp(kctl_obj_namespace(o), "verbs") && kctl_obj_uid(o)[0]);
    snprintf(rv, sizeof rv, "%s", kctl_obj_resource_version(o));
    kctl_obj_unref(o);
    o = NULL;
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"c1\",\"resourceVersion\":\"%s\"},\"data\":{\"k\":\"2\"}}", rv);
    KT_EQ_INT(kctl_transport_update(&t, &cm, doc, KCTL_NTS, &o, &st), KCTL_OK);
    KT_CHECK(o && strcmp(kctl_obj_resource_version(o), rv) != 0);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_update(&t, &cm, doc, KCTL_NTS, &o, &st), KCTL_ERR_CONFLICT); /* the old version again */
    KT_EQ_INT(st.code, 409);
    KT_EQ_STR(st.reason, "Conflict");
    KT_EQ_INT(kctl_transport_patch(&t, &cm, "c1", "{\"data\":{\"k\":\"3\"}}", KCTL_NTS, 0, &o, &st), KCTL_OK);
    KT_CHECK(o != NULL);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_get(&t, &cm, "c1", &o, &st), KCTL_OK);
    if (o) {
        char v[8];
        KT_EQ_INT(kctl_obj_get_string(o, "data.k", v, sizeof v, NULL), KCTL_OK);
        KT_EQ_STR(v, "3");
    }
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_list(&t, &all, NULL, &l, &st), KCTL_OK); /* all namespaces: /api/v1/configmaps */
    KT_CHECK(l.items.count >= 1 && l.resource_version[0]);
    kctl_list_result_free(&l);
    /* cluster-scoped, with a status subresource */
    KT_EQ_INT(kctl_transport_create(&t, &nsr, "{\"metadata\":{\"name\":\"tk-ns\"}}", KCTL_NTS, &o, &st), KCTL_OK);
    KT_CHECK(o && !kctl_obj_namespace(o)[0]);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_patch(&t, &nsr, "tk-ns", "{\"status\":{\"phase\":\"Active\"}}", KCTL_NTS, KCTL_PATCH_STATUS, &o, &st), KCTL_OK);
    if (o) {
        char v[16];
        KT_EQ_INT(kctl_obj_get_string(o, "status.phase", v, sizeof v, NULL), KCTL_OK);
        KT_EQ_STR(v, "Active");
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"tk-ns\",\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"Terminating\"}}",
                 kctl_obj_resource_version(o));
    }
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_update_status(&t, &nsr, doc, KCTL_NTS, &o, &st), KCTL_OK);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_get(&t, &nsr, "tk-ns", &o, &st), KCTL_OK);
    if (o) {
        char v[16];
        KT_EQ_INT(kctl_obj_get_string(o, "status.phase", v, sizeof v, NULL), KCTL_OK);
        KT_EQ_STR(v, "Terminating");
    }
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_remove(&t, &nsr, "tk-ns", NULL, &o, &st), KCTL_OK);
    KT_CHECK(o == NULL);
    KT_EQ_INT(kctl_transport_get(&t, &nsr, "tk-ns", &o, &st), KCTL_ERR_NOT_FOUND);
    /* another group; a delete with preconditions, the uid one stale */
    KT_EQ_INT(kctl_transport_create(&t, &lease, "{\"metadata\":{\"name\":\"lead\"},\"spec\":{\"holderIdentity\":\"a\"}}", KCTL_NTS, &o, &st),
              KCTL_OK);
    memset(&del, 0, sizeof del);
    del.uid = "00000000-0000-4000-8000-000000000000";
    KT_EQ_INT(kctl_transport_remove(&t, &lease, "lead", &del, NULL, &st), KCTL_ERR_CONFLICT);
    del.uid = o ? kctl_obj_uid(o) : "";
    del.resource_version = o ? kctl_obj_resource_version(o) : "";
    KT_EQ_INT(kctl_transport_remove(&t, &lease, "lead", &del, NULL, &st), KCTL_OK);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_remove(&t, &cm, "c1", NULL, NULL, &st), KCTL_OK);
    KT_EQ_INT(kctl_transport_remove(&t, &cm, "c1", NULL, NULL, &st), KCTL_ERR_NOT_FOUND);
    KT_EQ_STR(st.reason, "NotFound");
    kctl_transport_destroy(&t);
    KT_EQ_INT(a.live, 0);
    kctl_api_status_clear(&st);
}

/* A finalizer: DELETE answers the object (marked), the watch sees it
   MODIFIED, then DELETED when the last finalizer goes. */
static void tk_finalizer_delete(void) {
    kctl_transport t;
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_resource res = tk_dc;
    char rv[KCTL_RV_MAX];
    res.ns = "fin";
    memset(&st, 0, sizeof st);
    KT_EQ_INT(tk_transport(NULL, 0, &t), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "held", "\"spec\":{}", &o, &st), KCTL_OK);
    KT_CHECK(o != NULL);
    if (!o) return;
    KT_EQ_INT(kctl_transport_patch(&t, &res, "held", "{\"metadata\":{\"finalizers\":[\"example.com/hold\"]}}", KCTL_NTS, 0, NULL, &st), KCTL_OK);
    snprintf(rv, sizeof rv, "%s", kctl_obj_resource_version(o));
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_watch_open(&t, &res, NULL, rv, &w, &st), KCTL_OK);
    KT_EQ_INT(tk_next(&t, w, &ev, &st), KCTL_OK); /* the finalizer's patch */
    KT_EQ_INT(ev.type, KCTL_EVENT_MODIFIED);
    kctl_event_clear(&ev);
    KT_EQ_INT(kctl_transport_remove(&t, &res, "held", NULL, &o, &st), KCTL_OK);
    KT_CHECK(o != NULL && kctl_obj_deletion_timestamp(o) != NULL);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(tk_next(&t, w, &ev, &st), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_MODIFIED);
    KT_CHECK(ev.obj && kctl_obj_deletion_timestamp(ev.obj) != NULL);
    kctl_event_clear(&ev);
    KT_EQ_INT(kctl_transport_patch(&t, &res, "held", "{\"metadata\":{\"finalizers\":null}}", KCTL_NTS, 0, NULL, &st), KCTL_OK);
    KT_EQ_INT(tk_next(&t, w, &ev, &st), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_DELETED);
    kctl_event_clear(&ev);
    KT_EQ_INT(kctl_transport_get(&t, &res, "held", &o, &st), KCTL_ERR_NOT_FOUND);
    kctl_transport_watch_close(&t, w);
    kctl_transport_destroy(&t);
    kctl_api_status_clear(&st);
}

/* A bookmark is the version alone; the server's end of a watch (its
   timeoutSeconds; here the end it is told to make, and one at a real
   timeoutSeconds of 1 s) is CLOSED, not IO; a broken one is IO. */
static void tk_bookmark_and_ends(void) {
    kctl_transport t;
    kctl_api_status st;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_list_result l;
    kctl_kube_stats ks;
    kctl_resource res = tk_dc;
    int rc, n = 0;
    res.ns = "bm";
    memset(&st, 0, sizeof st);
    KT_EQ_INT(tk_transport(NULL, 1, &t), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, &st), KCTL_OK);
    KT_EQ_INT(kctl_transport_list(&t, &res, NULL, &l, &st), KCTL_OK);
    KT_EQ_INT(kctl_transport_watch_open(&t, &res, NULL, l.resource_version, &w, &st), KCTL_OK);
    kt_kube_server_bookmark_now(tk_srv);
    KT_EQ_INT(tk_next(&t, w, &ev, &st), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_BOOKMARK);
    KT_CHECK(ev.obj == NULL);
    KT_EQ_STR(ev.resource_version, l.resource_version);
    kctl_event_clear(&ev);
    /* the server's timeoutSeconds (1 s here): the terminating chunk */
    while ((rc = tk_next(&t, w, &ev, &st)) == KCTL_OK && n++ < 10) kctl_event_clear(&ev);
    KT_EQ_INT(rc, KCTL_ERR_CLOSED);
    kctl_transport_watch_close(&t, w);
    kctl_transport_destroy(&t);
    KT_EQ_INT(tk_transport(NULL, 0, &t), KCTL_OK); /* watches of 5 to 10 minutes */
    KT_EQ_INT(kctl_transport_watch_open(&t, &res, NULL, l.resource_version, &w, &st), KCTL_OK);
    kt_kube_server_end_watches(tk_srv);
    KT_EQ_INT(tk_next(&t, w, &ev, &st), KCTL_ERR_CLOSED);
    kctl_transport_watch_close(&t, w);
    KT_EQ_INT(kctl_transport_watch_open(&t, &res, NULL, l.resource_version, &w, &st), KCTL_OK);
    kt_kube_server_break_watches(tk_srv);
    KT_EQ_INT(tk_next(&t, w, &ev, &st), KCTL_ERR_IO);
    KT_EQ_INT(st.code, 503);
    kctl_transport_watch_close(&t, w);
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.watches, 2);
    KT_EQ_U64(ks.watch_ends, 1);
    kctl_list_result_free(&l);
    kctl_transport_destroy(&t);
    kctl_api_status_clear(&st);
}

/* GONE: a watch from a version the server no longer has (200, then the
   in-band 410), and a list's continue token it can no longer serve (410
   Expired); both with the server's Status. */
static void tk_gone(void) {
    kctl_transport t;
    kctl_api_status st;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_list_result l, l2;
    kctl_list_opts lo;
    kctl_resource res = tk_dc;
    res.ns = "gone";
    memset(&st, 0, sizeof st);
    memset(&lo, 0, sizeof lo);
    KT_EQ_INT(tk_transport(NULL, 0, &t), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, &st), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "b", NULL, NULL, &st), KCTL_OK);
    lo.limit = 1;
    KT_EQ_INT(kctl_transport_list(&t, &res, &lo, &l, &st), KCTL_OK);
    KT_CHECK(l.continue_token[0] != '\0');
    KT_EQ_INT(tk_put(&t, &res, "c", NULL, NULL, &st), KCTL_OK);
    kt_kube_server_expire_history(tk_srv);
    lo.continue_token = l.continue_token;
    KT_EQ_INT(kctl_transport_list(&t, &res, &lo, &l2, &st), KCTL_ERR_GONE);
    KT_EQ_INT(st.code, 410);
    KT_EQ_STR(st.reason, "Expired");
    KT_EQ_INT(kctl_transport_watch_open(&t, &res, NULL, l.resource_version, &w, &st), KCTL_OK);
    KT_EQ_INT(tk_next(&t, w, &ev, &st), KCTL_ERR_GONE);
    KT_EQ_INT(st.code, 410);
    KT_EQ_STR(st.reason, "Expired");
    kctl_transport_watch_close(&t, w);
    kctl_list_result_free(&l);
    kctl_transport_destroy(&t);
    kctl_api_status_clear(&st);
}

/* The detail of 409 (AlreadyExists vs Conflict) and 422 (the fields). */
static void tk_status_detail(void) {
    kctl_transport t;
    kctl_api_status st;
    kctl_resource res = tk_dc;
    res.ns = "detail";
    memset(&st, 0, sizeof st);
    KT_EQ_INT(tk_transport(NULL, 0, &t), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, &st), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, &st), KCTL_ERR_EXISTS);
    KT_EQ_INT(st.code, 409);
    KT_EQ_STR(st.reason, "AlreadyExists");
    KT_EQ_STR(st.name, "a");
    KT_EQ_INT(kctl_transport_update(&t, &res, "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"},\"spec\":{}}", KCTL_NTS, NULL, &st),
              KCTL_ERR_CONFLICT);
    KT_EQ_STR(st.reason, "Conflict");
    KT_EQ_INT(tk_put(&t, &res, "Bad_Name", NULL, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    KT_EQ_STR(st.reason, "Invalid");
    KT_CHECK(st.cause_count >= 1);
    if (st.cause_count) KT_EQ_STR(st.causes[0].field, "metadata.name");
    kctl_transport_destroy(&t);
    kctl_api_status_clear(&st);
}

/* 429 with Retry-After: a read waits it out (1 s) and is answered; a
   create is not sent twice (AGAIN, with the Retry-After). */
static void tk_throttled(void) {
    kctl_transport t;
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_kube_stats ks;
    kt_kube_server_counters c0, c1;
    kctl_resource res = tk_dc;
    res.ns = "throttle";
    memset(&st, 0, sizeof st);
    KT_EQ_INT(tk_transport(NULL, 0, &t), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, &st), KCTL_OK);
    kt_kube_server_counters_get(tk_srv, &c0);
    kt_kube_server_throttle(tk_srv, 1, 429, 1);
    KT_EQ_INT(kctl_transport_get(&t, &res, "a", &o, &st), KCTL_OK);
    KT_CHECK(o != NULL);
    kctl_obj_unref(o);
    o = NULL;
    kt_kube_server_throttle(tk_srv, 1, 429, 1);
    KT_EQ_INT(tk_put(&t, &res, "b", NULL, NULL, &st), KCTL_ERR_AGAIN);
    KT_EQ_INT(st.code, 429);
    KT_EQ_U64(st.retry_after_s, 1);
    kt_kube_server_throttle(tk_srv, 1, 503, 1);
    KT_EQ_INT(kctl_transport_patch(&t, &res, "a", "{\"spec\":{\"x\":1}}", KCTL_NTS, 0, NULL, &st), KCTL_ERR_AGAIN); /* no precondition */
    KT_EQ_INT(st.code, 503);
    kt_kube_server_counters_get(tk_srv, &c1);
    KT_EQ_U64(c1.throttled - c0.throttled, 3);
    KT_EQ_U64(c1.requests[KCTL_VERB_GET] - c0.requests[KCTL_VERB_GET], 2);       /* throttled, then answered */
    KT_EQ_U64(c1.requests[KCTL_VERB_CREATE] - c0.requests[KCTL_VERB_CREATE], 1); /* throttled: never sent again */
    KT_EQ_U64(c1.requests[KCTL_VERB_PATCH] - c0.requests[KCTL_VERB_PATCH], 1);
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.waits, 1);
    KT_EQ_U64(ks.throttled, 2);
    KT_EQ_INT(tk_put(&t, &res, "b", NULL, NULL, &st), KCTL_OK); /* later, it goes */
    kctl_transport_destroy(&t);
    kctl_api_status_clear(&st);
}

/* [any thread]: four threads at once on one transport, each creating,
   reading, patching, listing and deleting its own objects, and a fifth
   watching them all; every request answered, every write seen. */
typedef struct tk_worker {
    kctl_transport *t;
    int id, failures;
} tk_worker;

static void *tk_work(void *arg) {
    tk_worker *w = (tk_worker *)arg;
    kctl_resource res = tk_dc;
    int i;
    res.ns = "threads";
    for (i = 0; i < 10; i++) {
        char name[32];
        kctl_obj *o = NULL;
        kctl_list_result l;
        snprintf(name, sizeof name, "w%d-%d", w->id, i);
        if (tk_put(w->t, &res, name, "\"spec\":{\"n\":1}", NULL, NULL) != KCTL_OK) w->failures++;
        if (kctl_transport_get(w->t, &res, name, &o, NULL) != KCTL_OK) w->failures++;
        kctl_obj_unref(o);
        if (kctl_transport_patch(w->t, &res, name, "{\"spec\":{\"n\":2}}", KCTL_NTS, 0, NULL, NULL) != KCTL_OK) w->failures++;
        if (kctl_transport_list(w->t, &res, NULL, &l, NULL) != KCTL_OK) w->failures++;
        kctl_list_result_free(&l);
        if (kctl_transport_remove(w->t, &res, name, NULL, NULL, NULL) != KCTL_OK) w->failures++;
    }
    return NULL;
}

/* kt_alloc under a lock, for threads. */
typedef struct tk_locked { pthread_mutex_t mu; kt_alloc a; kctl_allocator inner; } tk_locked;
static void *tk_locked_alloc(size_t n, void *ud) {
    tk_locked *l = (tk_locked *)ud;
    void *p;
    pthread_mutex_lock(&l->mu);
    p = l->inner.alloc_fn(n, l->inner.user_data);
    pthread_mutex_unlock(&l->mu);
    return p;
}
static void tk_locked_free(void *p, void *ud) {
    tk_locked *l = (tk_locked *)ud;
    pthread_mutex_lock(&l->mu);
    l->inner.free_fn(p, l->inner.user_data);
    pthread_mutex_unlock(&l->mu);
}

static void tk_threads(void) {
    kctl_transport t;
    kctl_kube_desc d = kctl_kube_desc_init();
    tk_locked lk;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_list_result l;
    kctl_kube_stats ks;
    pthread_t th[4];
    tk_worker wk[4];
    kctl_resource res = tk_dc;
    int i, events = 0, rc;
    res.ns = "threads";
    pthread_mutex_init(&lk.mu, NULL);
    kt_alloc_init(&lk.a);
    lk.inner = kt_allocator(&lk.a);
    d.server = kt_kube_server_url(tk_srv);
    d.allocator.alloc_fn = tk_locked_alloc;
    d.allocator.free_fn = tk_locked_free;
    d.allocator.user_data = &lk;
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_OK);
    KT_EQ_INT(kctl_transport_list(&t, &res, NULL, &l, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_watch_open(&t, &res, NULL, l.resource_version, &w, NULL), KCTL_OK);
    kctl_list_result_free(&l);
    for (i = 0; i < 4; i++) {
        wk[i].t = &t;
        wk[i].id = i;
        wk[i].failures = 0;
        pthread_create(&th[i], NULL, tk_work, &wk[i]);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        KT_EQ_INT(wk[i].failures, 0);
    }
    while (events < 120 && (rc = kctl_transport_watch_next(&t, w, KCTL_SEC(5), &ev, NULL)) == KCTL_OK) {
        events += ev.type != KCTL_EVENT_BOOKMARK;
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(events, 120); /* 40 objects: ADDED, MODIFIED, DELETED each */
    kctl_transport_watch_close(&t, w);
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.requests, 1 + 4 * 10 * 5);
    kctl_transport_destroy(&t);
    KT_EQ_INT(lk.a.live, 0);
    pthread_mutex_destroy(&lk.mu);
}

/* Step r until its stats say done(), for at most 10 s of real time,
   sleeping until the time it asks for (a backoff) or 20 ms. */
static void tk_step_until(kctl_reflector *r, bool (*done)(const kctl_reflector_stats *, uint64_t), uint64_t arg, kctl_reflector_stats *rs) {
    uint64_t end = kctl_clock_now(NULL) + KCTL_SEC(10), next = 0, now;
    for (;;) {
        kctl_reflector_read_stats(r, rs);
        if (done(rs, arg) || (now = kctl_clock_now(NULL)) >= end) return;
        kctl_reflector_step(r, KCTL_MS(50), &next);
        if ((now = kctl_clock_now(NULL)) < next) {
            uint64_t d = next - now < KCTL_MS(20) ? next - now : KCTL_MS(20);
            struct timespec ts;
            ts.tv_sec = 0;
            ts.tv_nsec = (long)d;
            nanosleep(&ts, NULL);
        }
    }
}
static bool tk_added(const kctl_reflector_stats *rs, uint64_t n) { return rs->added >= n; }
static bool tk_added_rewatched(const kctl_reflector_stats *rs, uint64_t n) { return rs->added >= n && rs->watch_restarts >= 1; }
static bool tk_relisted(const kctl_reflector_stats *rs, uint64_t n) { return rs->relists >= n; }

/* A reflector on the transport: the server's end of its watch is opened
   again at once from the last version (no error, no backoff, no relist),
   and a restarted server (every watch broken, its history forgotten)
   behind which the watch missed a write is a broken watch, then GONE (the
   in-band 410), then a relist; nothing is lost. */
static void tk_reflector(void) {
    kctl_transport t;
    kctl_fifo *fifo = NULL;
    kctl_reflector *r = NULL;
    kctl_reflector_desc rd;
    kctl_reflector_stats rs;
    kctl_resource res = tk_dc;
    res.ns = "refl";
    KT_EQ_INT(tk_transport(NULL, 0, &t), KCTL_OK);
    KT_EQ_INT(kctl_fifo_create(NULL, &fifo), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, NULL), KCTL_OK);
    memset(&rd, 0, sizeof rd);
    rd.transport = t;
    rd.resource = res;
    rd.fifo = fifo;
    rd.backoff_initial_ns = KCTL_MS(100);
    KT_EQ_INT(kctl_reflector_create(&rd, &r), KCTL_OK);
    KT_EQ_INT(kctl_reflector_step(r, KCTL_MS(200), NULL), KCTL_OK); /* list, watch */
    KT_EQ_INT(tk_put(&t, &res, "b", NULL, NULL, NULL), KCTL_OK);
    tk_step_until(r, tk_added, 1, &rs);
    KT_EQ_U64(rs.added, 1);
    kt_kube_server_end_watches(tk_srv);
    KT_EQ_INT(tk_put(&t, &res, "c", NULL, NULL, NULL), KCTL_OK);
    tk_step_until(r, tk_added_rewatched, 2, &rs); /* c may come before the end or after it: both */
    KT_EQ_U64(rs.added, 2);
    KT_EQ_U64(rs.watch_restarts, 1);
    KT_EQ_U64(rs.errors, 0);
    KT_EQ_U64(rs.lists, 1);
    kt_kube_server_stall(tk_srv, true); /* d is written, and the watch never sees it: */
    KT_EQ_INT(kctl_memstore_apply(kt_kube_server_memstore(tk_srv), &res,
                                  "{\"apiVersion\":\"edge.kctl.io/v1\",\"kind\":\"DeviceConfig\",\"metadata\":{\"name\":\"d\"}}",
                                  KCTL_NTS, NULL, NULL), KCTL_OK);
    kt_kube_server_restart(tk_srv); /* its version is now older than the server remembers */
    kt_kube_server_stall(tk_srv, false);
    tk_step_until(r, tk_relisted, 1, &rs);
    KT_EQ_U64(rs.relists, 1);
    KT_EQ_U64(kctl_fifo_len(fifo), 4); /* a, b, c, d */
    kctl_reflector_destroy(r);
    kctl_fifo_destroy(fifo);
    kctl_transport_destroy(&t);
}

/* ---- an informer's checkpoint on the Kubernetes transport: a restart
   resumes the watch from the saved (opaque) resourceVersion, no list */
typedef struct tk_ckpt {
    unsigned char *data;
    size_t len;
    int adds, deletes;
} tk_ckpt;
static int tk_ckpt_save(const void *data, size_t len, void *ud) {
    tk_ckpt *c = (tk_ckpt *)ud;
    free(c->data);
    if (!(c->data = (unsigned char *)malloc(len ? len : 1))) return KCTL_ERR_NOMEM;
    memcpy(c->data, data, len);
    c->len = len;
    return KCTL_OK;
}
static int tk_ckpt_load(const void **data, size_t *len, void *ud) {
    tk_ckpt *c = (tk_ckpt *)ud;
    if (!c->data) return KCTL_ERR_NOT_FOUND;
    *data = c->data;
    *len = c->len;
    return KCTL_OK;
}
static void tk_ckpt_add(kctl_obj *o, void *ud) { (void)o; ((tk_ckpt *)ud)->adds++; }
static void tk_ckpt_delete(const char *k, kctl_obj *o, bool u, void *ud) { (void)k; (void)o; (void)u; ((tk_ckpt *)ud)->deletes++; }

/* Step inf (real time, at most 10 s) until the handlers saw adds and deletes. */
static void tk_ckpt_until(kctl_informer *inf, tk_ckpt *c, int adds, int deletes) {
    uint64_t end = kctl_clock_now(NULL) + KCTL_SEC(10);
    while ((c->adds < adds || c->deletes < deletes || !kctl_informer_has_synced(inf)) && kctl_clock_now(NULL) < end)
        kctl_informer_step(inf, KCTL_MS(50), NULL);
}

static kctl_informer *tk_ckpt_informer(kctl_transport t, const kctl_resource *res, tk_ckpt *c, int expect) {
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_checkpoint_desc cd = kctl_checkpoint_desc_init();
    kctl_handler h;
    memset(&d, 0, sizeof d);
    d.transport = t;
    d.resource = *res;
    if (kctl_informer_create(&d, &inf) != KCTL_OK) return NULL;
    memset(&h, 0, sizeof h);
    h.on_add = tk_ckpt_add;
    h.on_delete = tk_ckpt_delete;
    h.user_data = c;
    kctl_informer_add_handler(inf, &h);
    cd.save_fn = tk_ckpt_save;
    cd.load_fn = tk_ckpt_load;
    cd.user_data = c;
    KT_EQ_INT(kctl_informer_set_checkpoint(inf, &cd), expect);
    return inf;
}

static void tk_checkpoint_resume(void) {
    kctl_transport t;
    kctl_informer *inf;
    kctl_reflector_stats rs;
    tk_ckpt c;
    kctl_resource res = tk_dc;
    res.ns = "ckpt";
    memset(&c, 0, sizeof c);
    KT_EQ_INT(tk_transport(NULL, 0, &t), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "b", NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "c", NULL, NULL, NULL), KCTL_OK);
    inf = tk_ckpt_informer(t, &res, &c, KCTL_ERR_NOT_FOUND);
    tk_ckpt_until(inf, &c, 3, 0);
    KT_EQ_INT(c.adds, 3);
    kctl_informer_destroy(inf); /* the checkpoint is written */
    KT_CHECK(c.data != NULL);
    /* while it is down: two adds and a delete */
    KT_EQ_INT(tk_put(&t, &res, "d", NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "e", NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_remove(&t, &res, "b", NULL, NULL, NULL), KCTL_OK);
    c.adds = c.deletes = 0;
    inf = tk_ckpt_informer(t, &res, &c, KCTL_OK);
    tk_ckpt_until(inf, &c, 3 + 2, 1);
    KT_EQ_INT(c.adds, 3 + 2); /* the checkpoint's three, then d and e from the watch */
    KT_EQ_INT(c.deletes, 1);
    kctl_informer_read_stats(inf, &rs);
    KT_EQ_U64(rs.lists, 0); /* resumed from the saved version: no list */
    KT_EQ_U64(rs.relists, 0);
    KT_EQ_U64(rs.added, 2);
    KT_EQ_U64(rs.deleted, 1);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 4);
    kctl_informer_destroy(inf);
    free(c.data);
    kctl_transport_destroy(&t);
}

/* ---- the step loop on the Kubernetes transport: its watch_notify wakes
   a single-threaded manager when the watch has news, so an idle loop
   asks for no wake-up within the 1 s poll a transport without the entry
   gets; a write through the server wakes it. (The wait for the wake-up
   is a deadline on a real server, never a figure of elapsed time.) */
typedef struct tk_wk {
    pthread_mutex_t mu;
    int wakes, runs;
} tk_wk;
static void tk_wk_wake(void *ud) {
    tk_wk *w = (tk_wk *)ud;
    pthread_mutex_lock(&w->mu);
    w->wakes++;
    pthread_mutex_unlock(&w->mu);
}
static int tk_wk_wakes(tk_wk *w) {
    int n;
    pthread_mutex_lock(&w->mu);
    n = w->wakes;
    pthread_mutex_unlock(&w->mu);
    return n;
}
static kctl_reconcile_result tk_wk_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    ((tk_wk *)ctx->user_data)->runs++;
    return r;
}
static bool tk_wk_idle(kctl_manager *m, uint64_t *dl, uint64_t *now) {
    int i;
    for (i = 0; i < 50; i++) {
        if (kctl_manager_step(m, 64, dl) != KCTL_OK) return false;
        *now = kctl_clock_now(NULL);
        if (*dl > *now) return true;
    }
    return false;
}
static void tk_wk_wait(tk_wk *wk, int w0) {
    uint64_t end = kctl_clock_now(NULL) + KCTL_SEC(10);
    while (tk_wk_wakes(wk) == w0 && kctl_clock_now(NULL) < end) {
        struct timespec ts = { 0, 5000000L };
        nanosleep(&ts, NULL);
    }
}

static void tk_step_wake(void) {
    kctl_transport t;
    kctl_manager_desc md;
    kctl_manager *m = NULL;
    kctl_controller_desc cd;
    tk_wk wk;
    uint64_t dl = 0, now = 0;
    int w0, i;
    kctl_resource res = tk_dc;
    res.ns = "wake";
    memset(&wk, 0, sizeof wk);
    pthread_mutex_init(&wk.mu, NULL);
    KT_EQ_INT(tk_transport(NULL, 600, &t), KCTL_OK);
    KT_EQ_INT(tk_put(&t, &res, "a", NULL, NULL, NULL), KCTL_OK);
    memset(&md, 0, sizeof md);
    md.transport = t;
    md.wake.fn = tk_wk_wake;
    md.wake.user_data = &wk;
    KT_EQ_INT(kctl_manager_create(&md, &m), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.name = "deviceconfigs";
    cd.reconcile = tk_wk_reconcile;
    cd.user_data = &wk;
    if (m && kctl_manager_informer(m, &res, NULL, NULL, &cd.primary) == KCTL_OK && kctl_manager_add_controller(m, &cd, NULL) == KCTL_OK) {
        KT_CHECK(tk_wk_idle(m, &dl, &now));
        KT_EQ_INT(wk.runs, 1);
        KT_CHECK(dl > now + KCTL_SEC(1)); /* idle: no 1 s poll */
        w0 = tk_wk_wakes(&wk);
        KT_EQ_INT(tk_put(&t, &res, "b", NULL, NULL, NULL), KCTL_OK);
        /* the loop sleeps until woken (the event may come in more than
           one piece, each a wake-up), then steps until idle */
        for (i = 0; i < 20 && wk.runs < 2; i++) {
            tk_wk_wait(&wk, w0);
            if (tk_wk_wakes(&wk) == w0) break; /* never woken */
            w0 = tk_wk_wakes(&wk);
            KT_CHECK(tk_wk_idle(m, &dl, &now));
            KT_CHECK(dl > now + KCTL_SEC(1));
        }
        KT_EQ_INT(wk.runs, 2); /* the write woke the loop, and was reconciled */
    } else {
        kt_fail(__FILE__, __LINE__, "manager");
    }
    kctl_manager_destroy(m);
    kctl_transport_destroy(&t);
    pthread_mutex_destroy(&wk.mu);
}
#else
static void tk_no_curl(void) {
    KT_KUBE_REQUIRE_CURL();
}
#endif /* KT_HAVE_CURL */

void kt_suite_kube(void) {
#ifdef KT_HAVE_CURL
    kt_kube_server_desc d;
    memset(&d, 0, sizeof d);
    if (kt_kube_server_start(&d, &tk_srv) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "the test API server did not start");
        return;
    }
    kc_run_contract(&tk_target);
    KT_RUN(tk_every_verb);
    KT_RUN(tk_finalizer_delete);
    KT_RUN(tk_bookmark_and_ends);
    KT_RUN(tk_gone);
    KT_RUN(tk_status_detail);
    KT_RUN(tk_throttled);
    KT_RUN(tk_reflector);
    KT_RUN(tk_checkpoint_resume);
    KT_RUN(tk_step_wake);
    KT_RUN(tk_threads);
    kt_kube_server_stop(tk_srv);
    tk_srv = NULL;
#else
    KT_RUN(tk_no_curl);
#endif
}
