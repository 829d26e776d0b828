/* test_controller.c - controller-runtime's result rules, watches, workers. */
#include "kt.h"
#include <stdlib.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <sched.h>
#include <time.h>
#endif

static const kctl_resource tc_cm = { "", "v1", "configmaps", "prod" };
static const kctl_resource tc_pods = { "", "v1", "pods", "prod" };

typedef struct tc_env {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_informer *inf;
    kctl_controller *c;
    kctl_reconcile_result next; /* what reconcile returns */
    int calls;
    bool last_had_obj;
    char last_key[128];
    char last_ns[128], last_name[128];
    char keys[2048]; /* every key reconciled, in order */
    int warnings;
} tc_env;

static kctl_reconcile_result tc_reconcile(const kctl_reconcile_ctx *ctx) {
    tc_env *e = (tc_env *)ctx->user_data;
    e->calls++;
    e->last_had_obj = ctx->obj != NULL;
    snprintf(e->last_key, sizeof e->last_key, "%s", ctx->key);
    snprintf(e->last_ns, sizeof e->last_ns, "%s", ctx->ns ? ctx->ns : "(null)");
    snprintf(e->last_name, sizeof e->last_name, "%s", ctx->name ? ctx->name : "(null)");
    if (strlen(e->keys) + strlen(ctx->key) + 2 < sizeof e->keys) {
        if (e->keys[0]) strcat(e->keys, " ");
        strcat(e->keys, ctx->key);
    }
    return e->next;
}

static void tc_log(int level, uint32_t item, const char *message, void *user_data) {
    (void)level;
    (void)message;
    if (item == KCTL_LOGITEM_CONTROLLER_REQUEUE_AFTER_WITH_ERROR) ((tc_env *)user_data)->warnings++;
}

static kctl_informer *tc_informer(tc_env *e, const kctl_resource *res) {
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(e->ms);
    d.resource = *res;
    d.clock = kctl_vclock_clock(&e->vc);
    if (kctl_informer_create(&d, &inf) != KCTL_OK) kt_fail(__FILE__, __LINE__, "informer");
    return inf;
}

static int tc_open(tc_env *e) {
    kctl_memstore_desc md;
    kctl_controller_desc cd;
    memset(e, 0, sizeof *e);
    kctl_vclock_init(&e->vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&e->vc);
    if (kctl_memstore_create(&md, &e->ms) != KCTL_OK) return 0;
    e->inf = tc_informer(e, &tc_cm);
    memset(&cd, 0, sizeof cd);
    cd.primary = e->inf;
    cd.transport = kctl_memstore_transport(e->ms);
    cd.reconcile = tc_reconcile;
    cd.user_data = e;
    cd.clock = kctl_vclock_clock(&e->vc);
    cd.logger.func = tc_log;
    cd.logger.user_data = e;
    return kctl_controller_create(&cd, &e->c) == KCTL_OK;
}

static void tc_close(tc_env *e) {
    kctl_informer_destroy(e->inf); /* informers first: the controller's handlers are on them */
    kctl_controller_destroy(e->c);
    kctl_memstore_destroy(e->ms);
    kctl_vclock_deinit(&e->vc);
}

static void tc_put(tc_env *e, const kctl_resource *res, const char *doc) {
    if (kctl_memstore_apply(e->ms, res, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply %s", doc);
}

/* When the key comes back, relative to now (UINT64_MAX: not queued). */
static uint64_t tc_due(tc_env *e) {
    kctl_clock clk = kctl_vclock_clock(&e->vc);
    uint64_t t = kctl_queue_next_ready(kctl_controller_queue(e->c)), now = kctl_clock_now(&clk);
    return t == UINT64_MAX ? t : t == 0 ? 0 : t - now;
}

static void tc_result_rules(void) {
    tc_env e;
    kctl_queue *q;
    kctl_controller_stats st;
    size_t n = 0;
    if (!tc_open(&e)) return;
    q = kctl_controller_queue(e.c);
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"a\"}}");
    kctl_informer_step(e.inf, 0, NULL); /* the add enqueues prod/a */
    KT_EQ_INT(kctl_controller_step(e.c, 10, &n), KCTL_OK);
    KT_EQ_U64(n, 1);
    KT_EQ_STR(e.last_key, "prod/a");
    KT_CHECK(e.last_had_obj);
    KT_EQ_U64(tc_due(&e), UINT64_MAX); /* success: done */
    /* an error backs off: 5 ms, 10 ms */
    e.next.error = KCTL_ERR_IO;
    kctl_queue_add(q, "prod/a");
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), KCTL_MS(5));
    kctl_vclock_advance(&e.vc, KCTL_MS(5));
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), KCTL_MS(10));
    /* an error with a requeue-after: the error wins, with a warning */
    e.next.requeue_after_ns = KCTL_SEC(5);
    kctl_vclock_advance(&e.vc, KCTL_MS(10));
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), KCTL_MS(20));
    KT_EQ_INT(e.warnings, 1);
    KT_EQ_U64(kctl_queue_num_requeues(q, "prod/a"), 3);
    /* requeue-after without an error: failures forgotten, back in 5 s */
    e.next.error = 0;
    kctl_vclock_advance(&e.vc, KCTL_MS(20));
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), KCTL_SEC(5));
    KT_EQ_U64(kctl_queue_num_requeues(q, "prod/a"), 0);
    /* requeue: through the limiter */
    e.next.requeue_after_ns = 0;
    e.next.requeue = true;
    kctl_vclock_advance(&e.vc, KCTL_SEC(5));
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), KCTL_MS(5));
    KT_EQ_U64(kctl_queue_num_requeues(q, "prod/a"), 1);
    /* terminal: not retried, failures kept */
    e.next.requeue = false;
    e.next.error = KCTL_ERR_INVALID_ARG;
    e.next.terminal = true;
    kctl_vclock_advance(&e.vc, KCTL_MS(5));
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), UINT64_MAX);
    KT_EQ_U64(kctl_queue_num_requeues(q, "prod/a"), 1);
    /* a nonsense code is an error like any other */
    e.next.terminal = false;
    e.next.error = 12345;
    kctl_queue_add(q, "prod/a");
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), KCTL_MS(10));
    /* the object is gone: reconcile sees no object */
    e.next.error = 0;
    kctl_memstore_delete(e.ms, &tc_cm, "a", NULL);
    kctl_informer_step(e.inf, 0, NULL);
    kctl_vclock_advance(&e.vc, KCTL_MS(10));
    kctl_controller_step(e.c, 10, NULL);
    KT_CHECK(!e.last_had_obj);
    kctl_controller_read_stats(e.c, &st);
    KT_EQ_U64(st.success, 2);
    KT_EQ_U64(st.error, 5); /* the terminal one included, as controller-runtime's ReconcileErrors */
    KT_EQ_U64(st.requeue_after, 1);
    KT_EQ_U64(st.requeue, 1);
    KT_EQ_U64(st.terminal, 1);
    /* requeue and requeue_after both: requeue_after wins (forget, add_after) */
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"a\"}}");
    kctl_informer_step(e.inf, 0, NULL);
    e.next.error = KCTL_ERR_IO; /* two failures first, to see the forget */
    kctl_controller_step(e.c, 10, NULL);
    kctl_vclock_advance(&e.vc, tc_due(&e));
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(kctl_queue_num_requeues(q, "prod/a"), 2);
    memset(&e.next, 0, sizeof e.next);
    e.next.requeue = true;
    e.next.requeue_after_ns = KCTL_SEC(7);
    kctl_vclock_advance(&e.vc, tc_due(&e));
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_U64(tc_due(&e), KCTL_SEC(7));
    KT_EQ_U64(kctl_queue_num_requeues(q, "prod/a"), 0);
    kctl_controller_read_stats(e.c, &st);
    KT_EQ_U64(st.requeue_after, 2);
    KT_EQ_U64(st.requeue, 1);
    KT_EQ_INT(e.warnings, 1);
    tc_close(&e);
}

static void tc_map_secret(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    char key[128];
    (void)user_data;
    snprintf(key, sizeof key, "%s/%s", kctl_obj_namespace(obj), kctl_obj_label(obj, "for") ? kctl_obj_label(obj, "for") : "");
    emit(key, ctx);
}

static void tc_owned_and_mapped(void) {
    tc_env e;
    kctl_informer *pods, *secrets;
    kctl_resource sec = { "", "v1", "secrets", "prod" };
    if (!tc_open(&e)) return;
    pods = tc_informer(&e, &tc_pods);
    secrets = tc_informer(&e, &sec);
    KT_EQ_INT(kctl_controller_watch_owned(e.c, pods, "", "ConfigMap", NULL), KCTL_OK);
    KT_EQ_INT(kctl_controller_watch_map(e.c, secrets, tc_map_secret, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_controller_watch_owned(e.c, pods, NULL, NULL, NULL), KCTL_ERR_INVALID_ARG);
    tc_put(&e, &tc_pods, "{\"metadata\":{\"name\":\"p1\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"owner\",\"uid\":\"u\",\"controller\":true}]}}");
    tc_put(&e, &tc_pods, "{\"metadata\":{\"name\":\"p2\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"other\",\"uid\":\"u2\",\"controller\":true}]}}");
    tc_put(&e, &tc_pods, "{\"metadata\":{\"name\":\"p3\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"notctl\",\"uid\":\"u3\"}]}}");
    tc_put(&e, &sec, "{\"metadata\":{\"name\":\"s1\",\"labels\":{\"for\":\"mapped\"}}}");
    kctl_informer_step(pods, 0, NULL);
    kctl_informer_step(secrets, 0, NULL);
    KT_EQ_U64(kctl_queue_len(kctl_controller_queue(e.c)), 2);
    kctl_controller_step(e.c, 1, NULL);
    KT_EQ_STR(e.last_key, "prod/owner");
    kctl_controller_step(e.c, 1, NULL);
    KT_EQ_STR(e.last_key, "prod/mapped");
    KT_CHECK(!e.last_had_obj);
    kctl_informer_destroy(pods);
    kctl_informer_destroy(secrets);
    tc_close(&e);
}

/* 1.7: an owner is matched by group and kind (the group from the
   ownerReference's apiVersion; the version ignored), as controller-runtime's
   EnqueueRequestForOwner; only the controller reference counts
   (OnlyControllerOwner, as Owns). Two kinds named alike in different
   groups are told apart, and core-group owners ("v1", or no apiVersion) too. */
static void tc_owner_group_kind(void) {
    tc_env e;
    kctl_informer *pods;
    char doc[2048], big[1001];
    int i;
    if (!tc_open(&e)) return;
    pods = tc_informer(&e, &tc_pods);
    KT_EQ_INT(kctl_controller_watch_owned(e.c, pods, "apps", "ReplicaSet", NULL), KCTL_OK);
    KT_EQ_INT(kctl_controller_watch_owned(e.c, pods, NULL, "ConfigMap", NULL), KCTL_OK); /* the core group */
    KT_EQ_INT(kctl_controller_watch_owned(e.c, pods, "apps", "", NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_controller_watch_owned(e.c, NULL, "apps", "ReplicaSet", NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_controller_watch_owned(NULL, pods, "apps", "ReplicaSet", NULL), KCTL_ERR_INVALID_ARG);
    {
        static const char *const refs[] = {
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs1\",\"uid\":\"u\",\"controller\":true}",          /* yes */
            "{\"apiVersion\":\"example.io/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs2\",\"uid\":\"u\",\"controller\":true}",    /* other group */
            "{\"apiVersion\":\"apps/v1beta2\",\"kind\":\"ReplicaSet\",\"name\":\"rs3\",\"uid\":\"u\",\"controller\":true}",     /* yes: version ignored */
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs4\",\"uid\":\"u\"}",                              /* not the controller */
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"cm6\",\"uid\":\"u\",\"controller\":true}",                /* yes: core */
            "{\"apiVersion\":\"example.io/v1\",\"kind\":\"ConfigMap\",\"name\":\"cm7\",\"uid\":\"u\",\"controller\":true}",     /* a ConfigMap of another group */
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"ConfigMap\",\"name\":\"cm9\",\"uid\":\"u\",\"controller\":true}",           /* apps' ConfigMap: no */
            "{\"apiVersion\":\"v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs10\",\"uid\":\"u\",\"controller\":true}"               /* core ReplicaSet: no */
        };
        for (i = 0; i < (int)(sizeof refs / sizeof refs[0]); i++) {
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"p%d\",\"ownerReferences\":[%s]}}", i + 1, refs[i]);
            tc_put(&e, &tc_pods, doc);
        }
    }
    /* an owner whose key does not fit a small buffer (1000-byte name) */
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"p11\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s\",\"uid\":\"u\",\"controller\":true}]}}", big);
    tc_put(&e, &tc_pods, doc);
    kctl_informer_step(pods, 0, NULL);
    kctl_controller_step(e.c, 100, NULL);
    /* (an ownerReference without an apiVersion, or with a malformed one, is
       refused by the store's rules, so none reaches the informer) */
    KT_EQ_INT(e.calls, 4); /* in the list's order: */
    KT_CHECK(strstr(e.keys, "prod/rs1 ") && strstr(e.keys, "prod/rs3 ") && strstr(e.keys, "prod/cm6"));
    KT_CHECK(strstr(e.keys, "prod/xxxxxxxxxx") != NULL);
    KT_EQ_U64(strlen(e.keys), strlen("prod/rs1 prod/rs3 prod/cm6 prod/") + 1000);
    kctl_informer_destroy(pods);
    tc_close(&e);
}

/* 5.4: the request's namespace and name, on delete too (no object), and
   for cluster-scoped keys; kctl_key_split is SplitMetaNamespaceKey. */
static void tc_request_ns_name(void) {
    tc_env e;
    kt_alloc a;
    kctl_memstore_desc md;
    kctl_controller_desc cd;
    kctl_controller_stats st;
    const kctl_resource nodes = { "", "v1", "nodes", "" };
    char key[160];
    if (!tc_open(&e)) return;
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"a\"}}");
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_STR(e.last_ns, "prod");
    KT_EQ_STR(e.last_name, "a");
    KT_CHECK(e.last_had_obj);
    kctl_memstore_delete(e.ms, &tc_cm, "a", NULL);
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_CHECK(!e.last_had_obj);
    KT_EQ_STR(e.last_key, "prod/a");
    KT_EQ_STR(e.last_ns, "prod"); /* from the key: no object */
    KT_EQ_STR(e.last_name, "a");
    /* keys added by hand: "name" is cluster-scoped; one that does not split
       is the name, whole; a long namespace */
    kctl_queue_add(kctl_controller_queue(e.c), "solo");
    kctl_controller_step(e.c, 1, NULL);
    KT_EQ_STR(e.last_ns, "");
    KT_EQ_STR(e.last_name, "solo");
    kctl_queue_add(kctl_controller_queue(e.c), "a/b/c");
    kctl_controller_step(e.c, 1, NULL);
    KT_EQ_STR(e.last_ns, "");
    KT_EQ_STR(e.last_name, "a/b/c");
    memset(key, 'n', 100);
    snprintf(key + 100, sizeof key - 100, "/web");
    kctl_queue_add(kctl_controller_queue(e.c), key);
    kctl_controller_step(e.c, 1, NULL);
    KT_EQ_U64(strlen(e.last_ns), 100);
    KT_EQ_STR(e.last_name, "web");
    tc_close(&e);
    /* cluster-scoped objects; and no memory for a long namespace: an error, retried */
    memset(&e, 0, sizeof e);
    kt_alloc_init(&a);
    kctl_vclock_init(&e.vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&e.vc);
    if (kctl_memstore_create(&md, &e.ms) != KCTL_OK) return;
    e.inf = tc_informer(&e, &nodes);
    memset(&cd, 0, sizeof cd);
    cd.primary = e.inf;
    cd.reconcile = tc_reconcile;
    cd.user_data = &e;
    cd.clock = kctl_vclock_clock(&e.vc);
    cd.allocator = kt_allocator(&a);
    KT_EQ_INT(kctl_controller_create(&cd, &e.c), KCTL_OK);
    tc_put(&e, &nodes, "{\"metadata\":{\"name\":\"n1\"}}");
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_STR(e.last_key, "n1");
    KT_EQ_STR(e.last_ns, "");
    KT_EQ_STR(e.last_name, "n1");
    kctl_queue_add(kctl_controller_queue(e.c), key);
    kctl_queue_add_after(kctl_controller_queue(e.c), "warm", KCTL_SEC(3600)); /* the delay heap has room now */
    a.fail_after = 0;
    kctl_controller_step(e.c, 1, NULL);
    a.fail_after = -1;
    KT_EQ_INT(e.calls, 1); /* not called without its request */
    kctl_controller_read_stats(e.c, &st);
    KT_EQ_U64(st.error, 1);
    KT_EQ_U64(tc_due(&e), KCTL_MS(5)); /* backoff */
    kctl_vclock_advance(&e.vc, KCTL_MS(5));
    kctl_controller_step(e.c, 1, NULL);
    KT_EQ_INT(e.calls, 2);
    KT_EQ_STR(e.last_name, "web");
    tc_close(&e);
    KT_EQ_INT(a.live, 0);
}

static void tc_key_split(void) {
    char ns[8], name[8];
    KT_EQ_INT(kctl_key_split("prod/web", ns, sizeof ns, name, sizeof name), KCTL_OK);
    KT_EQ_STR(ns, "prod");
    KT_EQ_STR(name, "web");
    KT_EQ_INT(kctl_key_split("node1", ns, sizeof ns, name, sizeof name), KCTL_OK);
    KT_EQ_STR(ns, "");
    KT_EQ_STR(name, "node1");
    KT_EQ_INT(kctl_key_split("/x", ns, sizeof ns, name, sizeof name), KCTL_OK); /* as client-go: "", "x" */
    KT_EQ_STR(ns, "");
    KT_EQ_STR(name, "x");
    KT_EQ_INT(kctl_key_split("ns/", ns, sizeof ns, name, sizeof name), KCTL_OK); /* "ns", "" */
    KT_EQ_STR(ns, "ns");
    KT_EQ_STR(name, "");
    KT_EQ_INT(kctl_key_split("a/b/c", ns, sizeof ns, name, sizeof name), KCTL_ERR_INVALID_ARG);
    KT_EQ_STR(ns, "");
    KT_EQ_STR(name, "");
    KT_EQ_INT(kctl_key_split(NULL, ns, sizeof ns, name, sizeof name), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_key_split("prod/web", NULL, 0, name, sizeof name), KCTL_OK); /* only the name */
    KT_EQ_STR(name, "web");
    KT_EQ_INT(kctl_key_split("prod/web", ns, sizeof ns, NULL, 0), KCTL_OK);
    KT_EQ_STR(ns, "prod");
    KT_EQ_INT(kctl_key_split("prod/web", NULL, 4, name, sizeof name), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_key_split("prod/abcdefgh", ns, sizeof ns, name, sizeof name), KCTL_ERR_TOO_LARGE); /* 8 + NUL */
    KT_EQ_STR(ns, "");
    KT_EQ_STR(name, "");
    KT_EQ_INT(kctl_key_split("prod/abcdefg", ns, sizeof ns, name, sizeof name), KCTL_OK);
    KT_EQ_STR(name, "abcdefg");
    KT_EQ_INT(kctl_key_split("abcdefgh", ns, sizeof ns, name, sizeof name), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kctl_key_split("x/y", ns, 0, name, sizeof name), KCTL_ERR_TOO_LARGE); /* no room for a NUL */
}

/* 1.4 at the controller: a relist after GONE that finds nothing changed
   reconciles nothing (the informer has no resync); one that finds a change
   reconciles that object only. With a resync period the controller's
   watch asks for syncs: the periodic resync and a relist reconcile all. */
static void tc_relist_reconciles_changes_only(void) {
    tc_env e;
    const kctl_resource sec = { "", "v1", "secrets", "prod" };
    if (!tc_open(&e)) return;
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"a\"}}");
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"b\"}}");
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"c\"}}");
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 3);
    tc_put(&e, &sec, "{\"metadata\":{\"name\":\"s\"}}"); /* the store moves on elsewhere */
    kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms));
    kctl_informer_step(e.inf, 0, NULL); /* GONE: relist */
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 3);
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"x\":1}}");
    kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms));
    kctl_informer_step(e.inf, 0, NULL); /* GONE again: b changed */
    e.keys[0] = '\0';
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 4);
    KT_EQ_STR(e.keys, "prod/b");
    tc_close(&e);
}

static void tc_resync_reconciles_all(void) {
    tc_env e;
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_controller_desc cd;
    memset(&e, 0, sizeof e);
    kctl_vclock_init(&e.vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&e.vc);
    if (kctl_memstore_create(&md, &e.ms) != KCTL_OK) return;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(e.ms);
    d.resource = tc_cm;
    d.clock = kctl_vclock_clock(&e.vc);
    d.resync_ns = KCTL_SEC(60);
    KT_EQ_INT(kctl_informer_create(&d, &e.inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = e.inf;
    cd.reconcile = tc_reconcile;
    cd.user_data = &e;
    cd.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_controller_create(&cd, &e.c), KCTL_OK);
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"a\"}}");
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"b\"}}");
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 2);
    kctl_vclock_advance(&e.vc, KCTL_SEC(60));
    kctl_informer_step(e.inf, 0, NULL); /* the periodic resync */
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 4);
    kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms) + 1); /* (clamped to the revision: no GONE) */
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"z\"}}");
    kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms));
    kctl_informer_step(e.inf, 0, NULL); /* GONE: the relist's syncs reach the controller too */
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 7);
    tc_close(&e);
}

/* More watches than the old table's 16, on one informer (its handlers grow too). */
static void tc_map_to(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    char key[64];
    (void)obj;
    snprintf(key, sizeof key, "prod/m%d", (int)(intptr_t)user_data);
    emit(key, ctx);
}

static void tc_many_watches(void) {
    tc_env e;
    kctl_informer *pods;
    int i;
    if (!tc_open(&e)) return;
    pods = tc_informer(&e, &tc_pods);
    for (i = 0; i < 40; i++) KT_EQ_INT(kctl_controller_watch_map(e.c, pods, tc_map_to, (void *)(intptr_t)i, NULL), KCTL_OK);
    KT_EQ_INT(kctl_controller_watch_map(e.c, pods, NULL, NULL, NULL), KCTL_ERR_INVALID_ARG);
    tc_put(&e, &tc_pods, "{\"metadata\":{\"name\":\"p\"}}");
    kctl_informer_step(pods, 0, NULL);
    KT_EQ_U64(kctl_queue_len(kctl_controller_queue(e.c)), 40);
    kctl_controller_step(e.c, 100, NULL);
    KT_EQ_INT(e.calls, 40);
    kctl_informer_destroy(pods);
    tc_close(&e);
}

#ifndef KCTL_NO_THREADS
typedef struct tc_par { int inside[4]; int overlap, calls; } tc_par;
static kctl_reconcile_result tc_slow(const kctl_reconcile_ctx *ctx) {
    tc_par *p = (tc_par *)ctx->user_data;
    kctl_reconcile_result r;
    int k = ctx->key[strlen(ctx->key) - 1] - '0', i;
    memset(&r, 0, sizeof r);
    if (k < 0 || k > 3) return r;
    if (__atomic_add_fetch(&p->inside[k], 1, __ATOMIC_SEQ_CST) != 1) __atomic_store_n(&p->overlap, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < 200; i++) sched_yield();
    __atomic_sub_fetch(&p->inside[k], 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&p->calls, 1, __ATOMIC_SEQ_CST);
    return r;
}
#endif

/* Workers start after the sync, run keys in parallel, never one key twice at once. */
static void tc_workers(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    tc_par p;
    long i;
    int k;
    memset(&p, 0, sizeof p);
    memset(&md, 0, sizeof md);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    for (k = 0; k < 4; k++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%d\"}}", k);
        kctl_memstore_apply(ms, &tc_cm, doc, strlen(doc), NULL, NULL);
    }
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = tc_cm;
    kctl_informer_create(&d, &inf);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tc_slow;
    cd.user_data = &p;
    cd.workers = 3;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    kctl_informer_start(inf);
    KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(20)), KCTL_OK);
    for (i = 0; i < 200; i++) { /* the same keys, again and again */
        kctl_queue_add(kctl_controller_queue(c), "prod/o1");
        kctl_queue_add(kctl_controller_queue(c), "prod/o2");
    }
    for (i = 0; i < 20000000 && __atomic_load_n(&p.calls, __ATOMIC_SEQ_CST) < 4; i++) sched_yield();
    kctl_informer_stop(inf);
    kctl_controller_stop(c);
    KT_CHECK(p.calls >= 4);
    KT_EQ_INT(p.overlap, 0);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* Any number of workers (the old table took 64): 100 threads reconcile
   200 keys, each key once. */
#ifndef KCTL_NO_THREADS
static kctl_reconcile_result tc_count(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    __atomic_add_fetch((int *)ctx->user_data, 1, __ATOMIC_SEQ_CST);
    return r;
}
#endif

static void tc_many_workers(void) {
    kctl_memstore *ms = NULL;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    int calls = 0;
    if (kctl_memstore_create(NULL, &ms) != KCTL_OK) return;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = tc_cm;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.user_data = &calls;
    cd.workers = 100;
#ifndef KCTL_NO_THREADS
    cd.reconcile = tc_count;
#else
    cd.reconcile = tc_reconcile; /* never called */
#endif
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
#ifndef KCTL_NO_THREADS
    {
        long i;
        KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
        KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(20)), KCTL_OK);
        for (i = 0; i < 200; i++) {
            char key[32];
            snprintf(key, sizeof key, "prod/k%ld", i);
            kctl_queue_add(kctl_controller_queue(c), key);
        }
        for (i = 0; i < 20000000 && __atomic_load_n(&calls, __ATOMIC_SEQ_CST) < 200; i++) sched_yield();
        kctl_controller_stop(c);
        kctl_informer_stop(inf);
        KT_EQ_INT(calls, 200);
    }
#endif
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
}

/* Each worker counts its reconciles apart (no line another worker
   writes); kctl_controller_read_stats adds them up, also while they run:
   4 workers, 300 keys, a third each succeeding, failing for good
   (terminal: no retry) and asking to run again in an hour. */
#ifndef KCTL_NO_THREADS
typedef struct tc_mix {
    int calls;
    kctl_controller *c;
} tc_mix;
static kctl_reconcile_result tc_mixed(const kctl_reconcile_ctx *ctx) {
    tc_mix *m = (tc_mix *)ctx->user_data;
    kctl_reconcile_result r;
    kctl_controller_stats st;
    int i = atoi(ctx->key + strlen("prod/k"));
    memset(&r, 0, sizeof r);
    if (i % 3 == 1) {
        r.error = KCTL_ERR_IO;
        r.terminal = true;
    } else if (i % 3 == 2) {
        r.requeue_after_ns = KCTL_SEC(3600);
    }
    kctl_controller_read_stats(m->c, &st); /* beside the other workers' counting */
    __atomic_add_fetch(&m->calls, 1, __ATOMIC_SEQ_CST);
    return r;
}
#endif

static void tc_worker_stats_add_up(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kctl_controller_stats st;
    tc_mix m;
    uint64_t n = 0;
    long i;
    int b;
    memset(&m, 0, sizeof m);
    if (kctl_memstore_create(NULL, &ms) != KCTL_OK) return;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = tc_cm;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.user_data = &m;
    cd.workers = 4;
    cd.reconcile = tc_mixed;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    if (!c) return;
    m.c = c;
    KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
    KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(20)), KCTL_OK);
    for (i = 0; i < 300; i++) {
        char key[32];
        snprintf(key, sizeof key, "prod/k%ld", i);
        kctl_queue_add(kctl_controller_queue(c), key);
    }
    for (i = 0; i < 20000000 && __atomic_load_n(&m.calls, __ATOMIC_SEQ_CST) < 300; i++) {
        kctl_controller_read_stats(c, &st);
        sched_yield();
    }
    kctl_controller_stop(c);
    kctl_informer_stop(inf);
    KT_EQ_INT(m.calls, 300);
    kctl_controller_read_stats(c, &st);
    KT_EQ_U64(st.success, 100);
    KT_EQ_U64(st.error, 100);
    KT_EQ_U64(st.terminal, 100);
    KT_EQ_U64(st.requeue_after, 100);
    KT_EQ_U64(st.requeue, 0);
#ifndef KCTL_NO_DURATIONS
    KT_EQ_U64(st.reconcile_time.count, 300);
    for (b = 0; b < KCTL_HIST_BUCKETS; b++) n += st.reconcile_time.buckets[b];
    KT_EQ_U64(n, 300);
#else
    (void)b;
    (void)n;
#endif
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* Two starts at once ([any thread]), both waiting for the informer's
   sync: one starts the workers, the other is told EXISTS, and there are
   as many workers as asked (two sets once wrote past the queue's worker
   slots and the workers' counters). */
#ifndef KCTL_NO_THREADS
typedef struct tc_starter {
    kctl_controller *c;
    int rc;
    pthread_t t;
} tc_starter;
static void *tc_start_fn(void *arg) {
    tc_starter *s = (tc_starter *)arg;
    s->rc = kctl_controller_start(s->c, KCTL_SEC(20));
    return NULL;
}
#endif

static void tc_start_twice_at_once(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kctl_queue_stats qs;
    tc_starter st[2];
    struct timespec pause = { 0, 50000000 }; /* 50 ms: both are waiting (the result holds either way) */
    int calls = 0, i, ok = 0, exists = 0;
    if (kctl_memstore_create(NULL, &ms) != KCTL_OK) return;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = tc_cm;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.user_data = &calls;
    cd.workers = 2;
    cd.reconcile = tc_count;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    if (!c) return;
    for (i = 0; i < 2; i++) {
        st[i].c = c;
        st[i].rc = 1;
        KT_EQ_INT(pthread_create(&st[i].t, NULL, tc_start_fn, &st[i]), 0);
    }
    nanosleep(&pause, NULL);
    KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
    for (i = 0; i < 2; i++) {
        pthread_join(st[i].t, NULL);
        ok += st[i].rc == KCTL_OK;
        exists += st[i].rc == KCTL_ERR_EXISTS;
    }
    KT_EQ_INT(ok, 1);
    KT_EQ_INT(exists, 1);
    for (i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof key, "prod/k%d", i);
        kctl_queue_add(kctl_controller_queue(c), key);
    }
    for (i = 0; i < 20000000 && (__atomic_load_n(&calls, __ATOMIC_SEQ_CST) < 200 ||
                                 kctl_queue_read_stats(kctl_controller_queue(c), &qs) != KCTL_OK || qs.idle_workers < 2); i++)
        sched_yield();
    KT_EQ_INT(calls, 200);
    KT_EQ_INT(kctl_queue_read_stats(kctl_controller_queue(c), &qs), KCTL_OK);
    KT_EQ_INT(qs.idle_workers, 2);
    kctl_controller_stop(c);
    kctl_informer_stop(inf);
    kctl_controller_destroy(c);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* A reconcile that calls kctl_queue_done on its own key (a mistake: its
   worker does that) has it refused and logged: the key stays in flight,
   an add of it meanwhile is held back rather than handed to another
   worker, and it runs again once its reconcile returns. One key is never
   reconciled by two workers at once. */
#ifndef KCTL_NO_THREADS
typedef struct tc_stray {
    kctl_controller *c;
    int calls, ready_in_reconcile, processing_in_reconcile, overlap, running, refused;
} tc_stray;
static void tc_stray_log(int level, uint32_t item_id, const char *message, void *user_data) {
    (void)level;
    (void)message;
    if (item_id == KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING) __atomic_add_fetch(&((tc_stray *)user_data)->refused, 1, __ATOMIC_SEQ_CST);
}
static kctl_reconcile_result tc_stray_done(const kctl_reconcile_ctx *ctx) {
    tc_stray *t = (tc_stray *)ctx->user_data;
    kctl_queue *q = kctl_controller_queue(t->c);
    kctl_queue_stats qs;
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    if (__atomic_add_fetch(&t->running, 1, __ATOMIC_SEQ_CST) > 1) __atomic_store_n(&t->overlap, 1, __ATOMIC_SEQ_CST);
    if (__atomic_add_fetch(&t->calls, 1, __ATOMIC_SEQ_CST) == 1) {
        kctl_queue_done(q, ctx->key);
        kctl_queue_add(q, ctx->key);
        t->ready_in_reconcile = (int)kctl_queue_len(q);
        if (kctl_queue_read_stats(q, &qs) == KCTL_OK) t->processing_in_reconcile = (int)qs.processing;
    }
    __atomic_sub_fetch(&t->running, 1, __ATOMIC_SEQ_CST);
    return r;
}
#endif

static void tc_stray_done_refused(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    tc_stray t;
    long i;
    memset(&t, 0, sizeof t);
    if (kctl_memstore_create(NULL, &ms) != KCTL_OK) return;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = tc_cm;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.user_data = &t;
    cd.workers = 2;
    cd.reconcile = tc_stray_done;
    cd.logger.func = tc_stray_log;
    cd.logger.user_data = &t;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    if (!c) return;
    t.c = c;
    KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
    KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(20)), KCTL_OK);
    kctl_queue_add(kctl_controller_queue(c), "prod/a");
    for (i = 0; i < 20000000 && __atomic_load_n(&t.calls, __ATOMIC_SEQ_CST) < 2; i++) sched_yield();
    kctl_controller_stop(c);
    kctl_informer_stop(inf);
    KT_EQ_INT(t.calls, 2);                    /* again once its reconcile returned */
    KT_EQ_INT(t.refused, 1);
    KT_EQ_INT(t.ready_in_reconcile, 0);       /* held back: no other worker could take it */
    KT_EQ_INT(t.processing_in_reconcile, 1);
    KT_EQ_INT(t.overlap, 0);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* The informer tells its handlers a batch of events and the controller's
   queue wakes its parked workers once per batch (at the batch's end, or
   after 32 keys): runs of 1, 5, 31, 32, 33 and 200 new objects, each made
   while the workers are parked, all reach a reconcile (a wake-up owed and
   never sent would leave keys queued with every worker asleep). */
static void tc_batched_events_wake_workers(void) {
#ifndef KCTL_NO_THREADS
    static const int runs[] = { 1, 5, 31, 32, 33, 127, 128, 129, 300 };
    kctl_memstore *ms = NULL;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    int calls = 0, want = 0, made = 0;
    size_t r;
    if (kctl_memstore_create(NULL, &ms) != KCTL_OK) return;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = tc_cm;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.user_data = &calls;
    cd.workers = 2;
    cd.reconcile = tc_count;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
    KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(20)), KCTL_OK);
    for (r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        struct timespec ts = { 0, 20000000L }; /* 20 ms: the workers park */
        long i;
        int k;
        nanosleep(&ts, NULL);
        for (k = 0; k < runs[r]; k++) {
            char doc[64];
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"b%d\"}}", made++);
            KT_EQ_INT(kctl_memstore_apply(ms, &tc_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
        }
        want += runs[r];
        for (i = 0; i < 20000000 && __atomic_load_n(&calls, __ATOMIC_SEQ_CST) < want; i++) sched_yield();
        KT_EQ_INT(__atomic_load_n(&calls, __ATOMIC_SEQ_CST), want);
    }
    kctl_controller_stop(c);
    kctl_informer_stop(inf);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* An informer's batch: the controller holds the primary keys of a run of
   events and adds them together (KCTL__QUEUE_BATCH of them, another kind
   of add such as a delete's, or the batch's end). The queue gets them in
   the events' order, all by the end of the step; max_keys refuses each
   key past it, counted and logged once per key, as separate adds would. */
static int tc_full_logs;
static kctl_reconcile_result tc_no_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    (void)ctx;
    memset(&r, 0, sizeof r);
    return r;
}
static void tc_log_full(int level, uint32_t item, const char *message, void *user_data) {
    (void)level;
    (void)message;
    (void)user_data;
    if (item == KCTL_LOGITEM_QUEUE_FULL) tc_full_logs++;
}

/* Step inf until it is idle, then take every key c's queue hands out: they
   must be want[0..n) in that order. */
static void tc_take_in_order(kctl_informer *inf, kctl_controller *c, char (*want)[24], int n) {
    kctl_queue *q = kctl_controller_queue(c);
    const char *key;
    int s, got = 0;
    for (s = 0; s < 8; s++) KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    while (kctl_queue_try_get(q, &key) == KCTL_OK) {
        if (got < n && strcmp(key, want[got]) != 0) kt_fail(__FILE__, __LINE__, "key %d: %s, want %s", got, key, want[got]);
        got++;
        kctl_queue_done(q, key);
    }
    KT_EQ_INT(got, n);
}

/* A store on *vc (started here) holding objects o000 .. o<n-1> in prod,
   and an informer of it on the same clock (not started); NULL on failure. */
static kctl_informer *tc_store_informer(kctl_vclock *vc, int n, kctl_memstore **ms) {
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    int i;
    kctl_vclock_init(vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(vc);
    KT_EQ_INT(kctl_memstore_create(&md, ms), KCTL_OK);
    for (i = 0; *ms && i < n; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%03d\"}}", i);
        KT_EQ_INT(kctl_memstore_apply(*ms, &tc_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
    }
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(*ms);
    d.resource = tc_cm;
    d.clock = kctl_vclock_clock(vc);
    if (*ms) KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    if (!inf) {
        kctl_memstore_destroy(*ms);
        kctl_vclock_deinit(vc);
    }
    return inf;
}

/* n writes to the objects of tc_store_informer in another order (object
   k*7 mod n), every k-th a delete (k % every == every-1), the others an
   update; want (n rows of stride bytes) gets the written names, each
   after prefix. */
static void tc_shuffled_writes(kctl_memstore *ms, int n, int every, const char *prefix, char *want, size_t stride) {
    int k;
    for (k = 0; k < n; k++) {
        char doc[80], name[16];
        int i = (k * 7) % n;
        snprintf(name, sizeof name, "o%03d", i);
        snprintf(want + (size_t)k * stride, stride, "%s%s", prefix, name);
        if (k % every == every - 1) {
            KT_EQ_INT(kctl_memstore_delete(ms, &tc_cm, name, NULL), KCTL_OK);
        } else {
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"data\":{\"k\":\"%d\"}}", name, k);
            KT_EQ_INT(kctl_memstore_apply(ms, &tc_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
        }
    }
}

static void tc_batched_adds_in_order(void) {
    enum { N = 300 };
#ifndef KCTL_NO_QUEUE_BOUND
    const int MAX = 250;
#else
    const int MAX = N; /* (no max_keys: every key) */
#endif
    static char want[N][24];
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kctl_queue_stats st;
    int i, k;
    if (!(inf = tc_store_informer(&vc, N, &ms))) return;
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tc_no_reconcile; /* (not started: the test takes the keys) */
    cd.clock = kctl_vclock_clock(&vc);
    cd.max_keys = MAX < N ? (uint32_t)MAX : 0;
    cd.logger.func = tc_log_full;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    tc_full_logs = 0;

    /* the list: the keys in the store's order, the first MAX of them */
    for (i = 0; i < N; i++) snprintf(want[i], sizeof want[i], "prod/o%03d", i);
    tc_take_in_order(inf, c, want, MAX);
    KT_EQ_INT(kctl_queue_read_stats(kctl_controller_queue(c), &st), KCTL_OK);
    KT_EQ_INT((long)st.refused_total, N - MAX);
    KT_EQ_INT(tc_full_logs, N - MAX);

    /* updates in another order, deletes among them (each a key of its own
       add, between two runs of held keys) */
    tc_shuffled_writes(ms, N, 40, "prod/", want[0], sizeof want[0]);
    tc_take_in_order(inf, c, want, MAX);
    KT_EQ_INT(kctl_queue_read_stats(kctl_controller_queue(c), &st), KCTL_OK);
    KT_EQ_INT((long)st.refused_total, 2 * (N - MAX));
    KT_EQ_INT(tc_full_logs, 2 * (N - MAX));
    KT_EQ_INT((long)st.depth, 0);

    /* shut down: the held keys of a batch are let go (no leak), nothing added */
    kctl_queue_shutdown(kctl_controller_queue(c));
    {
        const char *doc = "{\"metadata\":{\"name\":\"o001\"},\"data\":{\"k\":\"last\"}}";
        KT_EQ_INT(kctl_memstore_apply(ms, &tc_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
    }
    for (k = 0; k < 4; k++) (void)kctl_informer_step(inf, 0, NULL);
    KT_EQ_INT(kctl_queue_read_stats(kctl_controller_queue(c), &st), KCTL_OK);
    KT_EQ_INT((long)st.depth, 0);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* An informer's batch puts a run of adds and updates in the cache in one
   hold of its write lock, then tells the handlers, in the events' order.
   A map function (the application's code) that reads the cache runs with
   the lock let go (no deadlock), and finds the object's key cached at
   the event's version or a later one, never an earlier; deletes, which
   end a run, come in their place; 150 events cross several runs. (A
   map watch is told of an update's new object, then of its old one.) */
typedef struct tc_seen {
    kctl_indexer *cache;
    int n, stale;
    char keys[512][16];
    uint64_t rvs[512];
} tc_seen;
static void tc_map_reads_cache(const kctl_obj *obj, kctl_index_emit emit, void *emit_ctx, void *user_data) {
    tc_seen *t = (tc_seen *)user_data;
    kctl_obj *now = kctl_indexer_get(t->cache, kctl_obj_key(obj));
    uint64_t rv = 0, rv_now = 0;
    (void)emit;
    (void)emit_ctx;
    kctl_obj_resource_version_u64(obj, &rv);
    if (now && (!kctl_obj_resource_version_u64(now, &rv_now) || rv_now < rv)) t->stale++;
    kctl_obj_unref(now);
    if (t->n < 512) {
        snprintf(t->keys[t->n], sizeof t->keys[t->n], "%s", kctl_obj_name(obj));
        t->rvs[t->n] = rv;
    }
    t->n++;
}

static void tc_cache_runs_told_in_order(void) {
    enum { N = 150 };
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    static tc_seen t;
    char want[N][16];
    int i, k, s;
    memset(&t, 0, sizeof t);
    if (!(inf = tc_store_informer(&vc, N, &ms))) return;
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tc_no_reconcile; /* (not started) */
    cd.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    t.cache = kctl_informer_indexer(inf);
    KT_EQ_INT(kctl_controller_watch_map(c, inf, tc_map_reads_cache, &t, NULL), KCTL_OK);

    for (s = 0; s < 8; s++) KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK); /* the list */
    KT_EQ_INT(t.n, N);
    for (i = 0; i < N && i < t.n; i++) {
        snprintf(want[i], sizeof want[i], "o%03d", i);
        KT_EQ_STR(t.keys[i], want[i]);
    }
    /* updates in another order, a delete every 30th */
    t.n = 0;
    tc_shuffled_writes(ms, N, 30, "", want[0], sizeof want[0]);
    for (s = 0; s < 8; s++) KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_INT(t.n, N + N - N / 30); /* two calls an update, one a delete */
    {
        uint64_t last = 0;
        int j = 0;
        for (k = 0; k < N && j < t.n; k++) {
            KT_EQ_STR(t.keys[j], want[k]);
            if (k % 30 == 29) { /* a delete: its last state, older than what came before */
                j++;
                continue;
            }
            if (t.rvs[j] <= last) kt_fail(__FILE__, __LINE__, "event %d told out of order", k);
            last = t.rvs[j];
            if (j + 1 < t.n) KT_EQ_STR(t.keys[j + 1], want[k]); /* its old object */
            j += 2;
        }
    }
    KT_EQ_INT(t.stale, 0);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* 2.4 through start: an informer out of memory during its first list makes
   kctl_controller_start return NOMEM (not TIMEOUT after the wait); start
   may be called again, and succeeds once the informer has synced. */
static void tc_start_nomem(void) {
#ifndef KCTL_NO_THREADS
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kt_alloc a;
    int calls = 0;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    kt_alloc_init(&a);
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    kctl_memstore_apply(ms, &tc_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL);
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = tc_cm;
    d.clock = kctl_vclock_clock(&vc);
    d.allocator = kt_allocator(&a);
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tc_count;
    cd.user_data = &calls;
    cd.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK); /* its handler: the informer's last allocation until the list */
    a.fail_after = 0; /* before the informer's thread starts: no allocation of its will do */
    KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
    KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(60)), KCTL_ERR_NOMEM); /* at once, not after 60 s */
    KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(60)), KCTL_ERR_NOMEM); /* until the informer tries again */
    a.fail_after = -1; /* (the informer waits out its backoff on the virtual clock) */
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    {
        long i;
        for (i = 0; i < 20000000 && !kctl_informer_has_synced(inf); i++) sched_yield();
        KT_EQ_INT(kctl_controller_start(c, KCTL_SEC(60)), KCTL_OK);
        for (i = 0; i < 20000000 && __atomic_load_n(&calls, __ATOMIC_SEQ_CST) < 1; i++) sched_yield();
    }
    kctl_controller_stop(c);
    kctl_informer_stop(inf);
    KT_EQ_INT(calls, 1);
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    KT_EQ_INT(a.live, 0);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
#else
    KT_SKIP();
#endif
}

static void tc_bad_args(void) {
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    memset(&cd, 0, sizeof cd);
    cd.limiter = kctl_limiter_exponential(1, 2); /* owned even when create fails (no leak under ASan) */
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_ERR_INVALID_ARG);
    KT_CHECK(c == NULL);
    KT_EQ_INT(kctl_controller_step(NULL, 1, NULL), KCTL_ERR_INVALID_ARG);
    kctl_controller_destroy(NULL);
}

static kctl_obj *tc_obj(const char *doc) {
    kctl_obj *o = NULL;
    if (kctl_obj_parse(doc, strlen(doc), NULL, &o) != KCTL_OK) kt_fail(__FILE__, __LINE__, "object %s", doc);
    return o;
}

static bool tc_only_web(const kctl_obj *old_obj, const kctl_obj *new_obj, void *user_data) {
    const kctl_obj *o = new_obj ? new_obj : old_obj;
    (void)user_data;
    return o && kctl_obj_label(o, "app") && strcmp(kctl_obj_label(o, "app"), "web") == 0;
}

static void tc_predicates(void) {
    kctl_obj *g1 = tc_obj("{\"metadata\":{\"name\":\"a\",\"generation\":1,\"resourceVersion\":\"1\",\"labels\":{\"app\":\"web\"}}}");
    kctl_obj *g1b = tc_obj("{\"metadata\":{\"name\":\"a\",\"generation\":1,\"resourceVersion\":\"2\",\"labels\":{\"app\":\"web\"},\"annotations\":{\"n\":\"x\"}}}");
    kctl_obj *g2 = tc_obj("{\"metadata\":{\"name\":\"a\",\"generation\":2,\"resourceVersion\":\"3\",\"labels\":{\"app\":\"db\"},\"annotations\":{\"n\":\"x\"}}}");
    kctl_predicate gen, rv, labels, ann, web, both, either, notgen;
    memset(&gen, 0, sizeof gen);
    gen.kind = KCTL_PRED_GENERATION_CHANGED;
    rv = labels = ann = web = both = either = notgen = gen;
    rv.kind = KCTL_PRED_RESOURCE_VERSION_CHANGED;
    labels.kind = KCTL_PRED_LABELS_CHANGED;
    ann.kind = KCTL_PRED_ANNOTATIONS_CHANGED;
    web.kind = KCTL_PRED_CUSTOM;
    web.fn = tc_only_web;
    both.kind = KCTL_PRED_AND; both.a = &gen; both.b = &web;
    either.kind = KCTL_PRED_OR; either.a = &gen; either.b = &ann;
    notgen.kind = KCTL_PRED_NOT; notgen.a = &gen;
    KT_CHECK(!kctl_predicate_eval(&gen, g1, g1b)); /* a status or metadata change: same generation */
    KT_CHECK(kctl_predicate_eval(&gen, g1b, g2));
    KT_CHECK(kctl_predicate_eval(&gen, NULL, g1));  /* adds and deletes pass */
    KT_CHECK(kctl_predicate_eval(&gen, g1, NULL));
    KT_CHECK(kctl_predicate_eval(&rv, g1, g1b));
    KT_CHECK(!kctl_predicate_eval(&rv, g1, g1));
    KT_CHECK(!kctl_predicate_eval(&labels, g1, g1b));
    KT_CHECK(kctl_predicate_eval(&labels, g1b, g2));
    KT_CHECK(kctl_predicate_eval(&ann, g1, g1b));
    KT_CHECK(!kctl_predicate_eval(&ann, g1b, g2));
    KT_CHECK(!kctl_predicate_eval(&both, g1b, g2)); /* generation changed, but not web any more */
    KT_CHECK(kctl_predicate_eval(&either, g1, g1b));
    KT_CHECK(kctl_predicate_eval(&notgen, g1, g1b));
    KT_CHECK(kctl_predicate_eval(NULL, g1, g2));
    kctl_obj_unref(g1);
    kctl_obj_unref(g1b);
    kctl_obj_unref(g2);
}

/* A primary watch with a generation predicate: status writes do not wake it. */
static void tc_predicate_on_watch(void) {
    tc_env e;
    kctl_memstore_desc md;
    kctl_controller_desc cd;
    kctl_predicate gen;
    kctl_transport t;
    kctl_obj *o = NULL;
    bool written = true;
    memset(&e, 0, sizeof e);
    kctl_vclock_init(&e.vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&e.vc);
    if (kctl_memstore_create(&md, &e.ms) != KCTL_OK) return;
    e.inf = tc_informer(&e, &tc_cm);
    memset(&gen, 0, sizeof gen);
    gen.kind = KCTL_PRED_GENERATION_CHANGED;
    memset(&cd, 0, sizeof cd);
    cd.primary = e.inf;
    cd.predicate = &gen;
    cd.reconcile = tc_reconcile;
    cd.user_data = &e;
    cd.clock = kctl_vclock_clock(&e.vc);
    KT_EQ_INT(kctl_controller_create(&cd, &e.c), KCTL_OK);
    t = kctl_memstore_transport(e.ms);
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"n\":1}}");
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 1);
    /* the status helper: writes once, then sees nothing to change */
    o = kctl_indexer_get(kctl_informer_indexer(e.inf), "prod/a");
    KT_EQ_INT(kctl_status_update(&t, &tc_cm, o, "{\"phase\":\"ready\"}", strlen("{\"phase\":\"ready\"}"), &written, NULL, NULL), KCTL_OK);
    KT_CHECK(written);
    kctl_obj_unref(o);
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 1); /* a status change: same generation, filtered */
    o = kctl_indexer_get(kctl_informer_indexer(e.inf), "prod/a");
    KT_EQ_INT(kctl_status_update(&t, &tc_cm, o, " { \"phase\" : \"ready\" } ", strlen(" { \"phase\" : \"ready\" } "), &written, NULL, NULL), KCTL_OK);
    KT_CHECK(!written); /* the same status: no write at all */
    KT_EQ_U64(kctl_memstore_revision(e.ms), 2);
    KT_EQ_INT(kctl_status_update(&t, &tc_cm, o, "{bad", 4, &written, NULL, NULL), KCTL_ERR_INVALID_ARG);
    kctl_obj_unref(o);
    tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"n\":2}}"); /* a spec change passes */
    kctl_informer_step(e.inf, 0, NULL);
    kctl_controller_step(e.c, 10, NULL);
    KT_EQ_INT(e.calls, 2);
    tc_close(&e);
}

typedef struct tc_retry { int calls, conflicts; } tc_retry;
static int tc_retry_fn(void *ud) {
    tc_retry *r = (tc_retry *)ud;
    return ++r->calls <= r->conflicts ? KCTL_ERR_CONFLICT : KCTL_OK;
}

static void tc_retry_on_conflict(void) {
    tc_retry r;
    memset(&r, 0, sizeof r);
    r.conflicts = 2;
    KT_EQ_INT(kctl_retry_on_conflict(5, 1000, tc_retry_fn, &r), KCTL_OK);
    KT_EQ_INT(r.calls, 3);
    memset(&r, 0, sizeof r);
    r.conflicts = 100;
    KT_EQ_INT(kctl_retry_on_conflict(4, 1000, tc_retry_fn, &r), KCTL_ERR_CONFLICT);
    KT_EQ_INT(r.calls, 4);
    KT_EQ_INT(kctl_retry_on_conflict(1, 1, NULL, NULL), KCTL_ERR_INVALID_ARG);
}

static uint64_t tc_stats_low(kctl_queue *q) {
    kctl_queue_stats s;
    memset(&s, 0, sizeof s);
    kctl_queue_read_stats(q, &s);
    return s.low;
}

/* Priority (kctl_controller_desc.priority): the keys of the first list,
   of a resync and of a relist are queued low, watch events normal, through
   every kind of watch; so an edit made after a list of 200 objects is
   reconciled first, and the list follows in order. Off (client-go): one
   FIFO, the edit last. */
static void tc_priority_lists_low(void) {
    int prio;
    for (prio = 0; prio < 2; prio++) {
        tc_env e;
        kctl_memstore_desc md;
        kctl_informer_desc d;
        kctl_controller_desc cd;
        kctl_informer *secrets;
        kctl_queue *q;
        kctl_resource sec = { "", "v1", "secrets", "prod" };
        char doc[128];
        int i;
        memset(&e, 0, sizeof e);
        kctl_vclock_init(&e.vc, KCTL_SEC(1));
        memset(&md, 0, sizeof md);
        md.clock = kctl_vclock_clock(&e.vc);
        if (kctl_memstore_create(&md, &e.ms) != KCTL_OK) return;
        memset(&d, 0, sizeof d);
        d.transport = kctl_memstore_transport(e.ms);
        d.resource = tc_cm;
        d.clock = kctl_vclock_clock(&e.vc);
        d.resync_ns = KCTL_SEC(600);
        KT_EQ_INT(kctl_informer_create(&d, &e.inf), KCTL_OK);
        secrets = tc_informer(&e, &sec);
        memset(&cd, 0, sizeof cd);
        cd.primary = e.inf;
        cd.reconcile = tc_reconcile;
        cd.user_data = &e;
        cd.clock = kctl_vclock_clock(&e.vc);
        cd.priority.enabled = prio != 0;
        KT_EQ_INT(kctl_controller_create(&cd, &e.c), KCTL_OK);
        KT_EQ_INT(kctl_controller_watch_map(e.c, secrets, tc_map_secret, NULL, NULL), KCTL_OK);
        q = kctl_controller_queue(e.c);
        for (i = 0; i < 200; i++) {
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%03d\"}}", i);
            tc_put(&e, &tc_cm, doc);
        }
        tc_put(&e, &sec, "{\"metadata\":{\"name\":\"s1\",\"labels\":{\"for\":\"o100\"}}}");
        tc_put(&e, &sec, "{\"metadata\":{\"name\":\"s2\",\"labels\":{\"for\":\"mapped\"}}}");
        kctl_informer_step(e.inf, 0, NULL);  /* the first lists */
        kctl_informer_step(secrets, 0, NULL);
        KT_EQ_U64(kctl_queue_len(q), 201);
        KT_EQ_U64(tc_stats_low(q), prio ? 201u : 0u);
        tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"edit\"}}"); /* a user's edit, through the watch */
        tc_put(&e, &sec, "{\"metadata\":{\"name\":\"s3\",\"labels\":{\"for\":\"o150\"}}}"); /* and a mapped one */
        kctl_informer_step(e.inf, 0, NULL);
        kctl_informer_step(secrets, 0, NULL);
        KT_EQ_U64(tc_stats_low(q), prio ? 200u : 0u); /* o150 raised */
        kctl_controller_step(e.c, 1, NULL);
        KT_EQ_STR(e.last_key, prio ? "prod/edit" : "prod/o000");
        kctl_controller_step(e.c, 1, NULL);
        KT_EQ_STR(e.last_key, prio ? "prod/o150" : "prod/o001");
        kctl_controller_step(e.c, 1000, NULL);
        KT_EQ_INT(e.calls, 202);
        KT_EQ_STR(e.last_key, prio ? "prod/mapped" : "prod/edit");
        /* the resync: low again; an edit meanwhile goes first */
        kctl_vclock_advance(&e.vc, KCTL_SEC(600));
        kctl_informer_step(e.inf, 0, NULL);
        KT_EQ_U64(tc_stats_low(q), prio ? 201u : 0u);
        tc_put(&e, &tc_cm, "{\"metadata\":{\"name\":\"o199\"},\"data\":{\"x\":\"1\"}}");
        kctl_informer_step(e.inf, 0, NULL);
        kctl_controller_step(e.c, 1, NULL);
        if (prio) KT_EQ_STR(e.last_key, "prod/o199"); /* (without, where the resync put it) */
        kctl_controller_step(e.c, 1000, NULL);
        KT_EQ_INT(e.calls, 403);
        /* a relist (GONE) likewise */
        tc_put(&e, &sec, "{\"metadata\":{\"name\":\"zz\"}}");
        kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms));
        kctl_informer_step(e.inf, 0, NULL);
        KT_EQ_U64(tc_stats_low(q), prio ? 201u : 0u);
        kctl_controller_step(e.c, 1000, NULL);
        kctl_informer_destroy(secrets);
        tc_close(&e);
    }
}

/* The options cost no allocation per event once warm: a controller with
   priority, MERGE and hold_backoff, stepped by hand through watch events,
   low adds, requeue_afters and failures (tests/test_budget.c's
   tb_steady_state with the options on). */
static int tc_steady_calls;
static kctl_reconcile_result tc_steady_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    memset(&r, 0, sizeof r);
    tc_steady_calls++;
    if (ctx->obj && kctl_obj_name(ctx->obj)[1] == '0') r.requeue_after_ns = KCTL_SEC(1);
    if (ctx->obj && kctl_obj_name(ctx->obj)[1] == '1') r.error = KCTL_ERR_CONFLICT;
    return r;
}

static void tc_options_steady_state(void) {
    enum { NOBJ = 8, N = 400 };
    kt_alloc pipe;
    kctl_vclock vc;
    kctl_memstore_desc md;
    kctl_memstore *ms;
    kctl_informer_desc id;
    kctl_informer *inf;
    kctl_controller_desc cd;
    kctl_controller *c;
    kctl_queue_stats qs;
    char doc[160], key[32];
    long before = 0;
    int i, round;
    kt_alloc_init(&pipe);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    md.history = 16;
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    memset(&id, 0, sizeof id);
    id.transport = kctl_memstore_transport(ms);
    id.resource = tc_cm;
    id.clock = kctl_vclock_clock(&vc);
    id.allocator = kt_allocator(&pipe);
    KT_EQ_INT(kctl_informer_create(&id, &inf), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = tc_steady_reconcile;
    cd.clock = kctl_vclock_clock(&vc);
    cd.allocator = id.allocator;
    cd.limiter = kctl_limiter_exponential(KCTL_MS(100), KCTL_SEC(2));
    cd.pending_after = KCTL_PENDING_MERGE;
    cd.priority.enabled = true;
    cd.priority.aging_ns = KCTL_MS(500);
    cd.hold_backoff = true;
    KT_EQ_INT(kctl_controller_create(&cd, &c), KCTL_OK);
    tc_steady_calls = 0;
    for (round = 0; round < 2; round++) { /* round 0 warms up, round 1 counts */
        if (round == 1) before = pipe.allocs;
        for (i = 0; i < N; i++) {
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%d\"},\"data\":{\"v\":\"%06d\"}}", i % NOBJ, round * N + i);
            KT_EQ_INT(kctl_memstore_apply(ms, &tc_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
            KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
            if (i % 3 == 0) { /* as a resync would */
                snprintf(key, sizeof key, "prod/o%d", (i / 3) % NOBJ);
                KT_EQ_INT(kctl_queue_add_low(kctl_controller_queue(c), key), KCTL_OK);
            }
            if (i % 2) KT_EQ_INT(kctl_controller_step(c, 2, NULL), KCTL_OK);
            if (i % 25 == 24) kctl_vclock_advance(&vc, KCTL_MS(300));
        }
    }
    KT_EQ_INT(pipe.allocs - before, 0);
    KT_CHECK(tc_steady_calls >= N / 2);
    kctl_queue_read_stats(kctl_controller_queue(c), &qs);
    KT_CHECK(qs.cancelled_total > 0); /* the options were at work */
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
    KT_EQ_INT(pipe.live, 0);
}

void kt_suite_controller(void) {
    KT_RUN(tc_result_rules);
    KT_RUN(tc_owned_and_mapped);
    KT_RUN(tc_owner_group_kind);
    KT_RUN(tc_request_ns_name);
    KT_RUN(tc_key_split);
    KT_RUN(tc_relist_reconciles_changes_only);
    KT_RUN(tc_resync_reconciles_all);
    KT_RUN(tc_many_watches);
    KT_RUN(tc_workers);
    KT_RUN(tc_many_workers);
    KT_RUN(tc_worker_stats_add_up);
    KT_RUN(tc_stray_done_refused);
    KT_RUN(tc_start_twice_at_once);
    KT_RUN(tc_batched_events_wake_workers);
    KT_RUN(tc_batched_adds_in_order);
    KT_RUN(tc_cache_runs_told_in_order);
    KT_RUN(tc_start_nomem);
    KT_RUN(tc_bad_args);
    KT_RUN(tc_predicates);
    KT_RUN(tc_predicate_on_watch);
    KT_RUN(tc_retry_on_conflict);
    KT_RUN(tc_priority_lists_low);
    KT_RUN(tc_options_steady_state);
}
