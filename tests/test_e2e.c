/* test_e2e.c - the whole loop: memstore -> informer -> controller ->
   reconcile -> writes back to the store, on one thread and the virtual
   clock (kctl_informer_step, kctl_controller_step), with faults. The te_step_
   variants run the same tests through a manager driven by
   kctl_manager_step, sleeping (moving the clock) exactly to the deadline
   it returns unless its wake-up was called, as a firmware loop does. */
#include "kt.h"
#include <stdlib.h>

static const kctl_resource te_cm = { "", "v1", "configmaps", "prod" };

#define TE_N 20 /* objects in the convergence test */

typedef struct te_env {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_informer *inf;
    kctl_controller *c;
    kctl_transport t;
    kctl_manager *m; /* step mode: owns inf and c */
    uint64_t dl;     /* step mode: the last step's next deadline */
    int wakes;       /* step mode: the wake-up's calls */
    int reconciles, writes, conflicts, gone_calls;
    /* the "world" the convergence reconcile keeps equal to spec.value */
    bool present[TE_N];
    int64_t world[TE_N];
} te_env;

/* An integer at path in obj's document (false if absent). */
static bool te_int(const kctl_obj *o, const char *path, int64_t *out) {
    kctl_json_tok toks[256];
    kctl_json j;
    size_t len;
    const char *doc = kctl_obj_json(o, &len);
    if (kctl_json_parse(doc, len, toks, 256, NULL, &j) != KCTL_OK) return false;
    return kctl_json_int64(&j, kctl_json_path(&j, 0, path), out) == KCTL_OK;
}

/* Write status, counting writes and conflicts; the reconcile's result. */
static kctl_reconcile_result te_status(te_env *e, const kctl_reconcile_ctx *ctx, const char *status) {
    kctl_reconcile_result r;
    bool written = false;
    memset(&r, 0, sizeof r);
    r.error = kctl_status_update(&ctx->transport, &te_cm, ctx->obj, status, strlen(status), &written, NULL, NULL);
    if (written) e->writes++;
    if (r.error == KCTL_ERR_CONFLICT) e->conflicts++;
    return r;
}

/* The well-behaved reconcile: status says which generation it saw. */
static kctl_reconcile_result te_rec_ready(const kctl_reconcile_ctx *ctx) {
    te_env *e = (te_env *)ctx->user_data;
    kctl_reconcile_result r;
    char st[128];
    memset(&r, 0, sizeof r);
    e->reconciles++;
    if (!ctx->obj) { e->gone_calls++; return r; }
    snprintf(st, sizeof st, "{\"observedGeneration\":%lld,\"phase\":\"Ready\"}", (long long)kctl_obj_generation(ctx->obj));
    return te_status(e, ctx, st);
}

/* The naive reconcile: a status that differs every time (a counter). */
static kctl_reconcile_result te_rec_counter(const kctl_reconcile_ctx *ctx) {
    te_env *e = (te_env *)ctx->user_data;
    kctl_reconcile_result r;
    char st[64];
    memset(&r, 0, sizeof r);
    e->reconciles++;
    if (!ctx->obj) return r;
    snprintf(st, sizeof st, "{\"count\":%d}", e->reconciles);
    return te_status(e, ctx, st);
}

/* "o07" -> 7, or -1. */
static int te_index(const char *key) {
    const char *name = strrchr(key, '/');
    int i;
    name = name ? name + 1 : key;
    if (name[0] != 'o' || !name[1] || !name[2] || name[3]) return -1;
    i = atoi(name + 1);
    return i >= 0 && i < TE_N ? i : -1;
}

/* The convergence reconcile: apply spec.value to the world (remove it when
   the object is gone), then record observedGeneration. */
static kctl_reconcile_result te_rec_world(const kctl_reconcile_ctx *ctx) {
    te_env *e = (te_env *)ctx->user_data;
    kctl_reconcile_result r;
    int64_t v = 0;
    int i = te_index(ctx->key);
    char st[128];
    memset(&r, 0, sizeof r);
    e->reconciles++;
    if (i < 0) { r.error = KCTL_ERR_INVALID_ARG; r.terminal = true; return r; }
    if (!ctx->obj) {
        e->present[i] = false;
        e->world[i] = 0;
        return r;
    }
    if (!te_int(ctx->obj, "spec.value", &v)) { r.error = KCTL_ERR_PROTO; r.terminal = true; return r; }
    e->present[i] = true;
    e->world[i] = v;
    snprintf(st, sizeof st, "{\"observedGeneration\":%lld}", (long long)kctl_obj_generation(ctx->obj));
    return te_status(e, ctx, st);
}

/* Step mode: the tests below go through kctl_manager_step. */
static bool te_stepping;

static void te_wake(void *ud) { ((te_env *)ud)->wakes++; }

static int te_open(te_env *e, kctl_reconcile_fn fn, const kctl_predicate *pred) {
    kctl_memstore_desc md;
    kctl_informer_desc d;
    kctl_controller_desc cd;
    kctl_manager_desc gd;
    memset(e, 0, sizeof *e);
    kctl_vclock_init(&e->vc, KCTL_SEC(1));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&e->vc);
    if (kctl_memstore_create(&md, &e->ms) != KCTL_OK) return 0;
    e->t = kctl_memstore_transport(e->ms);
    memset(&cd, 0, sizeof cd);
    cd.predicate = pred;
    cd.transport = e->t;
    cd.reconcile = fn;
    cd.user_data = e;
    cd.clock = kctl_vclock_clock(&e->vc);
    if (te_stepping) {
        memset(&gd, 0, sizeof gd);
        gd.transport = e->t;
        gd.clock = kctl_vclock_clock(&e->vc);
        gd.wake.fn = te_wake;
        gd.wake.user_data = e;
        if (kctl_manager_create(&gd, &e->m) != KCTL_OK) return 0;
        if (kctl_manager_informer(e->m, &te_cm, NULL, NULL, &e->inf) != KCTL_OK) return 0;
        cd.primary = e->inf;
        return kctl_manager_add_controller(e->m, &cd, &e->c) == KCTL_OK;
    }
    memset(&d, 0, sizeof d);
    d.transport = e->t;
    d.resource = te_cm;
    d.clock = kctl_vclock_clock(&e->vc);
    if (kctl_informer_create(&d, &e->inf) != KCTL_OK) return 0;
    cd.primary = e->inf;
    return kctl_controller_create(&cd, &e->c) == KCTL_OK;
}

static void te_close(te_env *e) {
    if (e->m) {
        kctl_manager_destroy(e->m);
        e->inf = NULL;
        e->c = NULL;
    }
    kctl_informer_destroy(e->inf); /* informers first: the controller's handlers are on them */
    kctl_controller_destroy(e->c);
    kctl_memstore_destroy(e->ms);
    kctl_vclock_deinit(&e->vc);
}

static void te_put(te_env *e, const char *name, const char *spec) {
    char doc[256];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"spec\":%s}", name, spec);
    if (kctl_memstore_apply(e->ms, &te_cm, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply %s", doc);
}

/* One round of the loop: the informer takes in what the store has, then
   the controller reconciles what is ready. Returns the reconciles done. */
static size_t te_round(te_env *e, size_t max) {
    size_t n = 0;
    if (e->m) { /* step mode: the manager's step does both */
        int before = e->reconciles;
        KT_EQ_INT(kctl_manager_step(e->m, max, &e->dl), KCTL_OK);
        return (size_t)(e->reconciles - before);
    }
    kctl_informer_step(e->inf, 0, NULL);
    kctl_controller_step(e->c, max, &n);
    return n;
}

/* Quiet: the informer has seen the store's last write and nothing is
   queued or delayed in the controller. */
static bool te_quiet(te_env *e) {
    kctl_reflector_stats st;
    char rev[32];
    kctl_informer_read_stats(e->inf, &st);
    snprintf(rev, sizeof rev, "%llu", (unsigned long long)kctl_memstore_revision(e->ms));
    return strcmp(st.last_rv, rev) == 0 && kctl_queue_next_ready(kctl_controller_queue(e->c)) == UINT64_MAX;
}

/* Run rounds until quiet, moving the clock 1 s whenever a round did no
   work (reflector and queue backoffs). The rounds taken, or -1. */
static int te_drain(te_env *e, int max_rounds) {
    int i;
    for (i = 0; i < max_rounds && e->m; i++) { /* step mode: sleep to the deadline, unless woken */
        kctl_clock c = kctl_vclock_clock(&e->vc);
        int wakes0 = e->wakes;
        uint64_t now;
        size_t n = te_round(e, 1000);
        if (n == 0 && te_quiet(e)) return i;
        if (e->wakes != wakes0) continue; /* a write during the step: the semaphore was posted */
        now = kctl_clock_now(&c);
        if (e->dl == UINT64_MAX) return -1; /* not quiet, and nothing due: it would sleep forever */
        if (e->dl > now) kctl_vclock_advance(&e->vc, e->dl - now);
    }
    for (i = 0; i < max_rounds && !e->m; i++) {
        size_t n = te_round(e, 1000);
        if (n == 0 && te_quiet(e)) return i;
        if (n == 0) kctl_vclock_advance(&e->vc, KCTL_SEC(1));
    }
    return -1;
}

/* The store's object by name (a reference), or NULL. */
static kctl_obj *te_get(te_env *e, const char *name) {
    kctl_obj *o = NULL;
    if (e->t.vt->get(e->t.self, &te_cm, name, &o, NULL) != KCTL_OK) return NULL;
    return o;
}

/* 1a. A status write wakes the controller once more; that reconcile finds
   the status as wanted and writes nothing: 2 reconciles, 1 write. */
static void te_status_settles(void) {
    te_env e;
    kctl_obj *o;
    int64_t og = 0;
    if (!te_open(&e, te_rec_ready, NULL)) return;
    te_put(&e, "a", "{\"n\":1}");
    KT_CHECK(te_drain(&e, 1000) >= 0);
    KT_EQ_INT(e.reconciles, 2);
    KT_EQ_INT(e.writes, 1);
    KT_EQ_U64(kctl_memstore_revision(e.ms), 2); /* the apply and the one status write */
    o = te_get(&e, "a");
    KT_CHECK(o != NULL);
    if (o) {
        KT_CHECK(te_int(o, "status.observedGeneration", &og));
        KT_EQ_INT(og, 1);
        kctl_obj_unref(o);
    }
    /* a spec change: one reconcile that writes, one that does not */
    te_put(&e, "a", "{\"n\":2}");
    KT_CHECK(te_drain(&e, 1000) >= 0);
    KT_EQ_INT(e.reconciles, 4);
    KT_EQ_INT(e.writes, 2);
    te_close(&e);
}

/* 1b. A status that changes on every reconcile, with no predicate: every
   write wakes the controller again, without end. */
static void te_status_loops(void) {
    te_env e;
    int i;
    if (!te_open(&e, te_rec_counter, NULL)) return;
    te_put(&e, "a", "{\"n\":1}");
    for (i = 0; i < 100; i++) te_round(&e, 10);
    KT_CHECK(e.reconciles > 50);
    KT_EQ_INT(e.reconciles, 100); /* each round: the last write's event, one reconcile, one write */
    KT_EQ_INT(e.writes, e.reconciles);
    KT_CHECK(kctl_memstore_revision(e.ms) > 50);
    KT_CHECK(te_drain(&e, 200) < 0); /* never quiet */
    te_close(&e);
}

/* 1c. The same writer behind KCTL_PRED_GENERATION_CHANGED: status writes
   keep the generation, so it reconciles once and stops. */
static void te_status_loop_filtered(void) {
    te_env e;
    kctl_predicate gen;
    int i;
    memset(&gen, 0, sizeof gen);
    gen.kind = KCTL_PRED_GENERATION_CHANGED;
    if (!te_open(&e, te_rec_counter, &gen)) return;
    te_put(&e, "a", "{\"n\":1}");
    for (i = 0; i < 100; i++) te_round(&e, 10);
    KT_EQ_INT(e.reconciles, 1);
    KT_EQ_INT(e.writes, 1);
    KT_CHECK(te_drain(&e, 1000) >= 0);
    KT_EQ_INT(e.reconciles, 1);
    te_put(&e, "a", "{\"n\":2}"); /* a spec change still passes: once more */
    KT_CHECK(te_drain(&e, 1000) >= 0);
    KT_EQ_INT(e.reconciles, 2);
    KT_EQ_INT(e.writes, 2);
    te_close(&e);
}

/* xorshift64, fixed seed: the same run every time. */
static uint64_t te_rng = UINT64_C(0x2545f4914f6cdd1d);
static uint32_t te_rand(uint32_t n) {
    te_rng ^= te_rng << 13;
    te_rng ^= te_rng >> 7;
    te_rng ^= te_rng << 17;
    return (uint32_t)(te_rng % n);
}

/* 2. Random edits, deletes and re-creates of 20 objects interleaved with
   steps, under status conflicts, breaking watches and compactions (relists):
   once quiet, the world equals every object's spec, every status has seen
   its generation, and every deleted object's world entry is gone. */
static void te_converges_under_faults(void) {
    te_env e;
    kctl_reflector_stats rs;
    kctl_controller_stats cs;
    bool in_store[TE_N];
    int i, k, deletes = 0, edits = 0, recreates = 0;
    char name[16], spec[48];
    te_rng = UINT64_C(0x2545f4914f6cdd1d);
    if (!te_open(&e, te_rec_world, NULL)) return;
    for (k = 0; k < TE_N; k++) {
        snprintf(name, sizeof name, "o%02d", k);
        snprintf(spec, sizeof spec, "{\"value\":%d}", k);
        te_put(&e, name, spec);
        in_store[k] = true;
    }
    for (i = 0; i < 400; i++) {
        /* faults, at fixed points */
        if (i == 20 || i == 200) kctl_memstore_fail_next(e.ms, KCTL_VERB_UPDATE_STATUS, 3, KCTL_ERR_CONFLICT);
        if (i == 60) kctl_memstore_break_watches_after(e.ms, 3); /* watches opened from now on */
        if (i == 61 || i == 150 || i == 260) kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms)); /* GONE: relist */
        if (i == 300) kctl_memstore_break_watches_after(e.ms, 0);
        /* the user edits desired state: mostly spec changes, some deletes */
        k = (int)te_rand(TE_N);
        snprintf(name, sizeof name, "o%02d", k);
        switch (te_rand(8)) {
        case 0:
            if (in_store[k]) {
                KT_EQ_INT(kctl_memstore_delete(e.ms, &te_cm, name, NULL), KCTL_OK);
                in_store[k] = false;
                deletes++;
            }
            break;
        case 1: case 2: case 3: case 4:
            snprintf(spec, sizeof spec, "{\"value\":%u}", te_rand(1000));
            te_put(&e, name, spec);
            if (in_store[k]) edits++;
            else recreates++;
            in_store[k] = true;
            break;
        default: break; /* no edit this time */
        }
        /* the loop runs a little, and time passes */
        if (e.m) { /* step mode: the same draws; a manager step where the informer stepped */
            bool intake = te_rand(2) != 0;
            size_t budget = te_rand(2) ? 1 + te_rand(4) : 0;
            if (intake) KT_EQ_INT(kctl_manager_step(e.m, budget, NULL), KCTL_OK);
        } else {
            if (te_rand(2)) kctl_informer_step(e.inf, 0, NULL);
            if (te_rand(2)) kctl_controller_step(e.c, 1 + te_rand(4), NULL);
        }
        kctl_vclock_advance(&e.vc, KCTL_MS(te_rand(3000)));
    }
    /* the last faults, left for the drain: deletes hidden by a compaction
       (only the relist finds them) and status conflicts (only the queue's
       backoff retries them) */
    for (k = 0, i = 0; k < TE_N && i < 2; k++) {
        snprintf(name, sizeof name, "o%02d", k);
        if (!in_store[k]) continue;
        KT_EQ_INT(kctl_memstore_delete(e.ms, &te_cm, name, NULL), KCTL_OK);
        in_store[k] = false;
        deletes++;
        i++;
    }
    for (k = TE_N - 1, i = 0; k >= 0 && i < 3; k--) {
        snprintf(name, sizeof name, "o%02d", k);
        if (!in_store[k]) continue;
        te_put(&e, name, "{\"value\":4242}");
        edits++;
        i++;
    }
    kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms));
    kctl_memstore_fail_next(e.ms, KCTL_VERB_UPDATE_STATUS, 3, KCTL_ERR_CONFLICT);
    KT_CHECK(te_drain(&e, 100000) >= 0);
    KT_CHECK(deletes > 0 && edits > 0 && recreates > 0);
    for (k = 0; k < TE_N; k++) {
        kctl_obj *o;
        int64_t v = -1, og = -1;
        snprintf(name, sizeof name, "o%02d", k);
        o = te_get(&e, name);
        KT_EQ_INT(o != NULL, in_store[k]);
        if (!o) {
            if (e.present[k]) kt_fail(__FILE__, __LINE__, "%s deleted, still in the world (%lld)", name, (long long)e.world[k]);
            continue;
        }
        KT_CHECK(te_int(o, "spec.value", &v));
        KT_CHECK(te_int(o, "status.observedGeneration", &og));
        if (!e.present[k] || e.world[k] != v)
            kt_fail(__FILE__, __LINE__, "%s: world %lld (present %d), spec.value %lld", name, (long long)e.world[k], e.present[k], (long long)v);
        if (og != kctl_obj_generation(o))
            kt_fail(__FILE__, __LINE__, "%s: observedGeneration %lld, generation %lld", name, (long long)og, (long long)kctl_obj_generation(o));
        kctl_obj_unref(o);
    }
    /* the faults did happen */
    kctl_informer_read_stats(e.inf, &rs);
    kctl_controller_read_stats(e.c, &cs);
    KT_CHECK(rs.relists >= 4);
    KT_CHECK(rs.watch_restarts >= 1);
    KT_CHECK(e.conflicts >= 9);
    KT_CHECK(cs.error >= 9);
    KT_EQ_U64(cs.terminal, 0);
    te_close(&e);
}

/* What the on_delete handler was told. */
typedef struct te_dels {
    int n, unknown, with_last;
    char keys[256];
} te_dels;

static void te_on_delete(const char *key, kctl_obj *last, bool final_state_unknown, void *ud) {
    te_dels *d = (te_dels *)ud;
    d->n++;
    d->unknown += final_state_unknown;
    if (last && strcmp(kctl_obj_key(last), key) == 0) d->with_last++;
    if (strlen(d->keys) + strlen(key) + 2 < sizeof d->keys) {
        if (d->keys[0]) strcat(d->keys, " ");
        strcat(d->keys, key);
    }
}

/* 3. Deletes made while the informer is not watching (its watch broke, it
   backs off, the history is compacted) are found by the relist: on_delete
   gets them as tombstones (final state unknown, the last cached object),
   the cache drops them and the controller reconciles them as gone. */
static void te_deletes_during_relist(void) {
    te_env e;
    te_dels d;
    kctl_handler h;
    kctl_reflector_stats rs;
    kctl_obj *o;
    size_t n = 0;
    int k;
    char name[16];
    memset(&d, 0, sizeof d);
    if (!te_open(&e, te_rec_ready, NULL)) return;
    memset(&h, 0, sizeof h);
    h.on_delete = te_on_delete;
    h.user_data = &d;
    KT_EQ_INT(kctl_informer_add_handler(e.inf, &h), KCTL_OK);
    for (k = 0; k < 5; k++) {
        snprintf(name, sizeof name, "o%02d", k);
        te_put(&e, name, "{\"value\":1}");
    }
    kctl_memstore_break_watches_after(e.ms, 1); /* the first watch breaks after one event */
    kctl_informer_step(e.inf, 0, NULL);         /* list 5, watch */
    KT_CHECK(kctl_informer_has_synced(e.inf));
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(e.inf)), 5);
    KT_EQ_INT(kctl_controller_step(e.c, 100, &n), KCTL_OK); /* 5 reconciles, 5 status writes */
    KT_EQ_U64(n, 5);
    KT_EQ_INT(e.writes, 5);
    kctl_informer_step(e.inf, 0, NULL); /* one status event, then IO: backing off */
    kctl_memstore_break_watches_after(e.ms, 0);
    kctl_informer_read_stats(e.inf, &rs);
    KT_EQ_U64(rs.watch_restarts, 1);
    KT_EQ_U64(rs.relists, 0);
    /* not watching: delete three, and forget the history */
    kctl_memstore_delete(e.ms, &te_cm, "o01", NULL);
    kctl_memstore_delete(e.ms, &te_cm, "o02", NULL);
    kctl_memstore_delete(e.ms, &te_cm, "o03", NULL);
    kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms));
    kctl_informer_step(e.inf, 0, NULL); /* still in the backoff: nothing */
    KT_EQ_INT(d.n, 0);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(e.inf)), 5);
    kctl_vclock_advance(&e.vc, KCTL_SEC(2)); /* past the first backoff (800 ms, jittered to < 1.6 s) */
    kctl_informer_step(e.inf, 0, NULL);     /* watch from the last version: GONE, relist */
    kctl_informer_read_stats(e.inf, &rs);
    KT_EQ_U64(rs.relists, 1);
    KT_EQ_INT(d.n, 3);
    KT_EQ_INT(d.unknown, 3);
    KT_EQ_INT(d.with_last, 3);
    /* in the FIFO's order, not the deletes' order */
    KT_CHECK(strstr(d.keys, "prod/o01") && strstr(d.keys, "prod/o02") && strstr(d.keys, "prod/o03"));
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(e.inf)), 2);
    for (k = 1; k <= 3; k++) {
        char key[32];
        snprintf(key, sizeof key, "prod/o%02d", k);
        o = kctl_indexer_get(kctl_informer_indexer(e.inf), key);
        KT_CHECK(o == NULL);
        kctl_obj_unref(o);
    }
    /* and the controller: the three reconciled as gone */
    KT_CHECK(te_drain(&e, 1000) >= 0);
    KT_EQ_INT(e.gone_calls, 3);
    te_close(&e);
}

/* 2.4 through the manager: out of memory during the informers' first list
   is NOMEM from kctl_manager_start, at once, not TIMEOUT at the end of the
   sync timeout; the manager stops, nothing leaks. */
#ifndef KCTL_NO_THREADS
static kctl_reconcile_result te_rec_nothing(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    (void)ctx;
    memset(&r, 0, sizeof r);
    return r;
}
#endif

static void te_manager_start_nomem(void) {
#ifndef KCTL_NO_THREADS
    kctl_memstore *ms = NULL;
    kctl_manager_desc md;
    kctl_manager *m = NULL;
    kctl_controller_desc cd;
    kt_alloc a;
    kt_alloc_init(&a);
    if (kctl_memstore_create(NULL, &ms) != KCTL_OK) return;
    kctl_memstore_apply(ms, &te_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL);
    memset(&md, 0, sizeof md);
    md.transport = kctl_memstore_transport(ms);
    md.allocator = kt_allocator(&a);
    KT_EQ_INT(kctl_manager_create(&md, &m), KCTL_OK);
    memset(&cd, 0, sizeof cd);
    KT_EQ_INT(kctl_manager_informer(m, &te_cm, NULL, NULL, &cd.primary), KCTL_OK);
    cd.reconcile = te_rec_nothing;
    KT_EQ_INT(kctl_manager_add_controller(m, &cd, NULL), KCTL_OK);
    a.fail_after = 0; /* from here the manager's allocator fails (the informer's threads start after this) */
    KT_EQ_INT(kctl_manager_start(m, KCTL_SEC(60)), KCTL_ERR_NOMEM);
    a.fail_after = -1;
    kctl_manager_destroy(m);
    KT_EQ_INT(a.live, 0);
    kctl_memstore_destroy(ms);
#else
    KT_SKIP();
#endif
}

/* 4. The reconcile storm (examples/reconcile_storm.c), stepped: 200
   objects whose status writes all fail, for 300 virtual seconds. A
   reconcile that drops the error for "requeue after 5 s" retries all 200
   every 5 s, to the nanosecond (the loop sleeps exactly to the queue's
   next ready time); one that returns the error is held by the default
   limiter's 10/s bucket once its burst is spent. */
#define TE_STORM_N 200
#define TE_STORM_S 300
static bool te_storm_fix;
static uint32_t te_storm_sec[TE_STORM_S];
static kctl_reconcile_result te_rec_storm(const kctl_reconcile_ctx *ctx) {
    te_env *e = (te_env *)ctx->user_data;
    kctl_clock c = kctl_vclock_clock(&e->vc);
    uint64_t sec = (kctl_clock_now(&c) - KCTL_SEC(1)) / KCTL_SEC(1);
    kctl_reconcile_result r;
    int rc;
    memset(&r, 0, sizeof r);
    e->reconciles++;
    if (sec < TE_STORM_S) te_storm_sec[sec]++;
    if (!ctx->obj) return r;
    rc = kctl_status_update(&ctx->transport, &te_cm, ctx->obj, "{\"phase\":\"Connected\"}", KCTL_NTS, NULL, NULL, NULL);
    if (rc == KCTL_OK) return r;
    if (te_storm_fix) r.error = rc;
    else r.requeue_after_ns = KCTL_SEC(5);
    return r;
}

static void te_storm_run(bool fix, uint32_t *late_total, uint32_t *late_peak, uint32_t *steps) {
    te_env e;
    kctl_clock c;
    int k;
    *late_total = *late_peak = *steps = 0;
    te_storm_fix = fix;
    memset(te_storm_sec, 0, sizeof te_storm_sec);
    if (!te_open(&e, te_rec_storm, NULL)) return;
    c = kctl_vclock_clock(&e.vc);
    for (k = 0; k < TE_STORM_N; k++) {
        char name[16];
        snprintf(name, sizeof name, "o%03d", k);
        te_put(&e, name, "{}");
    }
    kctl_memstore_fail_next(e.ms, KCTL_VERB_UPDATE_STATUS, UINT32_MAX, KCTL_ERR_IO);
    while (kctl_clock_now(&c) < KCTL_SEC(1) + KCTL_SEC(TE_STORM_S)) {
        uint64_t now;
        te_round(&e, 1000);
        (*steps)++;
        now = kctl_clock_now(&c);
        if (e.dl == UINT64_MAX) break;
        if (e.dl > now) kctl_vclock_advance(&e.vc, e.dl - now);
    }
    for (k = 60; k < TE_STORM_S; k++) {
        *late_total += te_storm_sec[k];
        if (te_storm_sec[k] > *late_peak) *late_peak = te_storm_sec[k];
    }
    te_close(&e);
}

static void te_storm(void) { /* step mode only: the loop sleeps to e.dl */
    uint32_t a_total, a_peak, a_steps, b_total, b_peak, b_steps;
    (void)b_steps;
    te_storm_run(false, &a_total, &a_peak, &a_steps);
    te_storm_run(true, &b_total, &b_peak, &b_steps);
    KT_EQ_U64(a_total, TE_STORM_N * (TE_STORM_S - 60) / 5); /* all 200, every 5 s */
    KT_EQ_U64(a_peak, TE_STORM_N);                           /* in lock-step */
    KT_CHECK(b_peak <= 10);                                   /* the bucket: 10/s */
    KT_CHECK(b_total > 0 && b_total <= 10 * (TE_STORM_S - 60) + 10);
    KT_CHECK(a_steps <= TE_STORM_S / 5 + 2); /* A sleeps 5 s between its bursts: no wake-up between */
}

static void te_step_status_settles(void) { te_stepping = true; te_status_settles(); te_stepping = false; }
static void te_step_status_loops(void) { te_stepping = true; te_status_loops(); te_stepping = false; }
static void te_step_status_loop_filtered(void) { te_stepping = true; te_status_loop_filtered(); te_stepping = false; }
static void te_step_converges_under_faults(void) { te_stepping = true; te_converges_under_faults(); te_stepping = false; }
static void te_step_storm(void) { te_stepping = true; te_storm(); te_stepping = false; }

void kt_suite_e2e(void) {
    KT_RUN(te_status_settles);
    KT_RUN(te_status_loops);
    KT_RUN(te_status_loop_filtered);
    KT_RUN(te_converges_under_faults);
    KT_RUN(te_step_status_settles);
    KT_RUN(te_step_status_loops);
    KT_RUN(te_step_status_loop_filtered);
    KT_RUN(te_step_converges_under_faults);
    KT_RUN(te_step_storm);
    KT_RUN(te_deletes_during_relist);
    KT_RUN(te_manager_start_nomem);
}
