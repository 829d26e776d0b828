/* edge_offline.c - an edge agent that restarts while its store is
   unreachable, and reports a sensor's state without flooding the store.
   Everything runs on a virtual clock in one thread, in seconds of real time.

   1. The agent caches 1,000 devices, checkpoints its informer at stop.
   2. While it is down, the store moves on by 20 writes.
   3. It starts again with the store unreachable: the checkpoint is
      loaded, the cache reports synced, and every device is reconciled.
   4. The store comes back: the watch resumes from the saved version and
      brings exactly the 20 writes; no list is made.
   5. A temperature sensor changes 100 times a second for 10 s; its
      reported state is written at most twice a second, the last value
      included, and the writes wake no reconcile (generation predicate).
   Exits 1 if any of this does not hold. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const kctl_resource devices = { "edge.kctl.io", "v1", "deviceconfigs", "site-a" };

/* ---- a uplink that can be down: every call fails with IO */
typedef struct uplink { kctl_transport store; bool down; } uplink;
#define UPLINK_FWD(call) do { if (l->down) return KCTL_ERR_IO; return l->store.vt->call; } while (0)
static int l_list(void *s, const kctl_resource *r, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *st) {
    uplink *l = (uplink *)s; UPLINK_FWD(list(l->store.self, r, o, out, st));
}
static int l_open(void *s, const kctl_resource *r, const kctl_list_opts *o, const char *rv, kctl_watch **w, kctl_api_status *st) {
    uplink *l = (uplink *)s; UPLINK_FWD(watch_open(l->store.self, r, o, rv, w, st));
}
static int l_next(void *s, kctl_watch *w, uint64_t t, kctl_event *ev, kctl_api_status *st) {
    uplink *l = (uplink *)s; return l->store.vt->watch_next(l->store.self, w, t, ev, st);
}
static void l_close(void *s, kctl_watch *w) { uplink *l = (uplink *)s; l->store.vt->watch_close(l->store.self, w); }
static int l_get(void *s, const kctl_resource *r, const char *n, kctl_obj **out, kctl_api_status *st) {
    uplink *l = (uplink *)s; UPLINK_FWD(get(l->store.self, r, n, out, st));
}
static int l_create(void *s, const kctl_resource *r, const char *j, size_t n, kctl_obj **out, kctl_api_status *st) {
    uplink *l = (uplink *)s; UPLINK_FWD(create(l->store.self, r, j, n, out, st));
}
static int l_update(void *s, const kctl_resource *r, const char *j, size_t n, kctl_obj **out, kctl_api_status *st) {
    uplink *l = (uplink *)s; UPLINK_FWD(update(l->store.self, r, j, n, out, st));
}
static int l_status(void *s, const kctl_resource *r, const char *j, size_t n, kctl_obj **out, kctl_api_status *st) {
    uplink *l = (uplink *)s; UPLINK_FWD(update_status(l->store.self, r, j, n, out, st));
}
static int l_remove(void *s, const kctl_resource *r, const char *n, const kctl_delete_opts *o, kctl_obj **out, kctl_api_status *st) {
    uplink *l = (uplink *)s; UPLINK_FWD(remove(l->store.self, r, n, o, out, st));
}
static const kctl_transport_vtable link_vt = { l_list, l_open, l_next, l_close, l_get, l_create, l_update, l_status, NULL, l_remove, NULL, NULL };

/* ---- the agent */
typedef struct agent {
    kctl_informer *inf;
    kctl_controller *ctl;
    unsigned reconciles;
} agent;

static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0, false, false, 0 };
    ((agent *)ctx->user_data)->reconciles++; /* apply ctx->obj to the device here */
    return r;
}

static void agent_start(agent *a, kctl_transport t, kctl_clock clk, const char *ckpt, const kctl_predicate *pred) {
    kctl_informer_desc id;
    kctl_controller_desc cd;
    kctl_checkpoint_desc ck = kctl_checkpoint_desc_init();
    int rc;
    memset(&id, 0, sizeof id);
    id.transport = t;
    id.resource = devices;
    id.clock = clk;
    id.seed = 1; /* the relist backoff's jitter: a fixed seed, so this run repeats (a fleet gives each device its own) */
    kctl_informer_create(&id, &a->inf);
    memset(&cd, 0, sizeof cd);
    cd.primary = a->inf;
    cd.transport = t;
    cd.reconcile = reconcile;
    cd.user_data = a;
    cd.predicate = pred;
    cd.clock = clk;
    kctl_controller_create(&cd, &a->ctl);
    ck.path = ckpt;
    ck.every_ns = KCTL_SEC(60);
    rc = kctl_informer_set_checkpoint(a->inf, &ck);
    printf("  checkpoint: %s\n", rc == KCTL_OK ? "loaded" : kctl_strerror(rc));
}

static void agent_run(agent *a, kctl_vclock *vc, int seconds) {
    int i;
    for (i = 0; i < seconds * 10; i++) { /* the main loop: 100 ms a turn */
        kctl_informer_step(a->inf, 0, NULL);
        kctl_controller_step(a->ctl, 10000, NULL);
        kctl_vclock_advance(vc, KCTL_MS(100));
    }
}

static void agent_stop(agent *a) {
    kctl_informer_destroy(a->inf); /* stops it: the checkpoint is written */
    kctl_controller_destroy(a->ctl);
    memset(a, 0, sizeof *a);
}

static void put(kctl_memstore *ms, int i, int gen) {
    char doc[200];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"dev-%04d\"},\"spec\":{\"ntp\":\"pool-%d\"},\"status\":{}}", i, gen);
    kctl_memstore_apply(ms, &devices, doc, strlen(doc), NULL, NULL);
}

int main(void) {
    kctl_vclock vc;
    kctl_clock clk;
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    uplink net;
    kctl_transport t;
    kctl_predicate gen;
    kctl_reflector_stats rs;
    kctl_reported_desc rd;
    kctl_reported *rep = NULL;
    kctl_reported_stats st;
    agent a;
    char dir[] = "/tmp/kctl-edge-offline-XXXXXX", path[64];
    unsigned before, i;
    double temp = 0;
    kctl_obj *o = NULL;
    int ok = 1;
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/devices.ckpt", dir);
    kctl_vclock_init(&vc, KCTL_SEC(1));
    clk = kctl_vclock_clock(&vc);
    memset(&md, 0, sizeof md);
    md.clock = clk;
    kctl_memstore_create(&md, &ms);
    net.store = kctl_memstore_transport(ms);
    net.down = false;
    t.vt = &link_vt;
    t.self = &net;
    memset(&gen, 0, sizeof gen);
    gen.kind = KCTL_PRED_GENERATION_CHANGED;
    memset(&a, 0, sizeof a);
    for (i = 0; i < 1000; i++) put(ms, (int)i, 0);

    printf("1. first start, 1000 devices\n");
    agent_start(&a, t, clk, path, &gen);
    agent_run(&a, &vc, 2);
    printf("  reconciled %u\n", a.reconciles);
    agent_stop(&a);

    printf("2. down; the store moves on by 20 writes\n");
    for (i = 0; i < 20; i++) put(ms, (int)i, 1);

    printf("3. restart with the uplink down\n");
    net.down = true;
    agent_start(&a, t, clk, path, &gen);
    agent_run(&a, &vc, 5);
    printf("  synced %s, reconciled %u while offline\n", kctl_informer_has_synced(a.inf) ? "yes" : "no", a.reconciles);
    ok &= kctl_informer_has_synced(a.inf) && a.reconciles == 1000;

    printf("4. the uplink is back\n");
    net.down = false;
    before = a.reconciles;
    agent_run(&a, &vc, 65); /* past the longest relist backoff (30 s, jittered up to twice that) */
    kctl_informer_read_stats(a.inf, &rs);
    printf("  lists %llu, events %llu, reconciled %u more\n", (unsigned long long)rs.lists,
           (unsigned long long)(rs.added + rs.modified + rs.deleted), a.reconciles - before);
    ok &= rs.lists == 0 && rs.modified == 20 && a.reconciles - before == 20;

    printf("5. a sensor at 100 Hz for 10 s, reported at most 2 writes/s\n");
    rd = kctl_reported_desc_init();
    rd.transport = t;
    rd.resource = devices;
    rd.name = "dev-0000";
    rd.writes = 2;
    rd.per_ns = KCTL_SEC(1);
    kctl_reported_create(&rd, &rep);
    before = a.reconciles;
    for (i = 0; i < 1000 || kctl_reported_pending(rep); i++) {
        if (i < 1000) kctl_reported_set_double(rep, "temperature", 20.0 + i / 100.0);
        kctl_reported_step(rep, kctl_clock_now(&clk), NULL);
        if (i % 10 == 0) { kctl_informer_step(a.inf, 0, NULL); kctl_controller_step(a.ctl, 100, NULL); }
        kctl_vclock_advance(&vc, KCTL_MS(10));
    }
    agent_run(&a, &vc, 1);
    kctl_reported_read_stats(rep, &st);
    kctl_memstore_get(ms, &devices, "dev-0000", &o, NULL);
    kctl_obj_get_double(o, "status.temperature", &temp);
    kctl_obj_unref(o);
    printf("  1000 sets -> %llu writes, final temperature %.2f, reconciles woken %u\n", (unsigned long long)st.writes, temp,
           a.reconciles - before);
    ok &= st.writes <= 21 && temp == 20.0 + 999 / 100.0 && a.reconciles == before;

    kctl_reported_destroy(rep);
    agent_stop(&a);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
    unlink(path);
    rmdir(dir);
    printf("%s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
