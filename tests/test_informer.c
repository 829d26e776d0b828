/* test_informer.c - the cache and the handlers fed from a store. */
#include "kt.h"
#ifndef KCTL_NO_THREADS
#include <sched.h>
#endif

static const kctl_resource ti2_cm = { "", "v1", "configmaps", "prod" };

typedef struct ti2_log {
    char text[2048];
    int n; /* atomic: events seen */
} ti2_log;

static void ti2_say(ti2_log *l, const char *what) {
    if (strlen(l->text) + strlen(what) + 2 < sizeof l->text) {
        if (l->text[0]) strcat(l->text, " ");
        strcat(l->text, what);
    }
    __atomic_add_fetch(&l->n, 1, __ATOMIC_SEQ_CST);
}

static void ti2_add(kctl_obj *o, void *ud) {
    char b[128];
    snprintf(b, sizeof b, "add:%s@%s", kctl_obj_name(o), kctl_obj_resource_version(o));
    ti2_say((ti2_log *)ud, b);
}
static void ti2_update(kctl_obj *old, kctl_obj *o, void *ud) {
    char b[128];
    snprintf(b, sizeof b, "update:%s@%s>%s", kctl_obj_name(o), kctl_obj_resource_version(old), kctl_obj_resource_version(o));
    ti2_say((ti2_log *)ud, b);
}
static void ti2_delete(const char *key, kctl_obj *last, bool unknown, void *ud) {
    char b[128];
    snprintf(b, sizeof b, "delete%s:%s@%s", unknown ? "?" : "", key, last ? kctl_obj_resource_version(last) : "-");
    ti2_say((ti2_log *)ud, b);
}

static kctl_handler ti2_handler(ti2_log *l) {
    kctl_handler h;
    h.on_add = ti2_add;
    h.on_update = ti2_update;
    h.on_delete = ti2_delete;
    h.user_data = l;
    return h;
}

static void ti2_put(kctl_memstore *ms, const char *name, const char *spec) {
    char doc[256];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"spec\":%s}", name, spec);
    if (kctl_memstore_apply(ms, &ti2_cm, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply");
}

static int ti2_open(kctl_vclock *vc, kctl_memstore **ms, kctl_informer **inf) {
    kctl_memstore_desc md;
    kctl_informer_desc d;
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(vc);
    if (kctl_memstore_create(&md, ms) != KCTL_OK) return 0;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(*ms);
    d.resource = ti2_cm;
    d.clock = kctl_vclock_clock(vc);
    return kctl_informer_create(&d, inf) == KCTL_OK;
}

static void ti2_step_driven(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_log l, late;
    kctl_handler h, h2;
    kctl_obj *o;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&l, 0, sizeof l);
    memset(&late, 0, sizeof late);
    if (!ti2_open(&vc, &ms, &inf)) return;
    h = ti2_handler(&l);
    KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_OK);
    ti2_put(ms, "a", "{}");
    ti2_put(ms, "b", "{}");
    KT_CHECK(!kctl_informer_has_synced(inf));
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_CHECK(kctl_informer_has_synced(inf));
    KT_EQ_STR(l.text, "add:a@1 add:b@2");
    o = kctl_indexer_get(kctl_informer_indexer(inf), "prod/b");
    KT_CHECK(o != NULL);
    kctl_obj_unref(o);
    /* a handler added now gets what is cached first */
    h2 = ti2_handler(&late);
    KT_EQ_INT(kctl_informer_add_handler(inf, &h2), KCTL_OK);
    ti2_put(ms, "a", "{\"x\":1}");
    kctl_memstore_delete(ms, &ti2_cm, "b", NULL);
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_EQ_STR(l.text, "add:a@1 add:b@2 update:a@1>3 delete:prod/b@4");
    KT_CHECK(strstr(late.text, "add:a@1") != NULL && strstr(late.text, "add:b@2") != NULL);
    KT_CHECK(strstr(late.text, "update:a@1>3 delete:prod/b@4") != NULL);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 1);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* A deletion missed while the watch was gone shows up at the relist, as a
   delete whose final state is unknown, with the last object cached. */
static void ti2_missed_delete(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_log l;
    kctl_handler h;
    kctl_reflector_stats st;
    kctl_vclock_init(&vc, KCTL_SEC(1));
    memset(&l, 0, sizeof l);
    if (!ti2_open(&vc, &ms, &inf)) return;
    h = ti2_handler(&l);
    kctl_informer_add_handler(inf, &h);
    ti2_put(ms, "a", "{}");
    ti2_put(ms, "b", "{}");
    kctl_informer_step(inf, 0, NULL);
    kctl_memstore_delete(ms, &ti2_cm, "b", NULL);
    kctl_memstore_compact(ms, kctl_memstore_revision(ms)); /* the watch never sees it */
    KT_EQ_INT(kctl_informer_step(inf, 0, NULL), KCTL_OK);
    KT_CHECK(strstr(l.text, "delete?:prod/b@2") != NULL);
    KT_CHECK(strstr(l.text, "update:a@1>1") != NULL); /* the relist's REPLACED of a */
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.relists, 1);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 1);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

static void ti2_limits(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_informer *inf = NULL;
    ti2_log l;
    kctl_handler h;
    int i;
    kctl_vclock_init(&vc, 0);
    memset(&l, 0, sizeof l);
    if (!ti2_open(&vc, &ms, &inf)) return;
    h = ti2_handler(&l);
    for (i = 0; i < 16; i++) KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_OK);
    KT_EQ_INT(kctl_informer_add_handler(inf, &h), KCTL_ERR_FULL);
    KT_EQ_INT(kctl_informer_add_handler(inf, NULL), KCTL_ERR_INVALID_ARG);
    {
        kctl_informer *none = NULL;
        KT_EQ_INT(kctl_informer_create(NULL, &none), KCTL_ERR_INVALID_ARG);
        KT_CHECK(none == NULL);
    }
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* On its own thread, with the real clock: synced, then events arrive. */
static void ti2_thread(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    ti2_log l;
    kctl_handler h;
    long i;
    memset(&l, 0, sizeof l);
    memset(&md, 0, sizeof md);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return;
    ti2_put(ms, "a", "{}");
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = ti2_cm;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    h = ti2_handler(&l);
    kctl_informer_add_handler(inf, &h);
    KT_EQ_INT(kctl_informer_start(inf), KCTL_OK);
    KT_EQ_INT(kctl_informer_start(inf), KCTL_ERR_EXISTS);
    KT_EQ_INT(kctl_informer_wait_for_sync(inf, KCTL_SEC(20)), KCTL_OK);
    ti2_put(ms, "b", "{}");
    for (i = 0; i < 20000000 && __atomic_load_n(&l.n, __ATOMIC_SEQ_CST) < 2; i++) sched_yield();
    kctl_informer_stop(inf);
    KT_EQ_INT(l.n, 2);
    KT_EQ_STR(l.text, "add:a@1 add:b@2");
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

void kt_suite_informer(void) {
    KT_RUN(ti2_step_driven);
    KT_RUN(ti2_missed_delete);
    KT_RUN(ti2_limits);
    KT_RUN(ti2_thread);
}
