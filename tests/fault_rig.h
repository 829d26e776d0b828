/* fault_rig.h - what the fault scenarios of the remote transports
   (tests/test_etcd_faults.c, tests/test_kube_faults.c) share: the devices,
   the controller's reconcile, the spec writer, the status racer, the
   gates, the waits and the convergence check. Each test file keeps what
   is its transport's own (the store, how it is broken, how its objects
   are read behind the controller) in a rig of its own whose first member
   is an fr_rig.

   A device is a value and a generation in memory; reconcile sets it to
   the object's spec.value and reports status.observedGeneration and
   status.value through kctl_status_update (a write that changes nothing
   is skipped). The writer, a client with a transport of its own, changes
   specs one after the other, each to a value never used before, and
   retries a change until the store acknowledges it (a merge patch that
   sets a value is idempotent), waiting out a Retry-After; it records the
   last value acknowledged per device. Waits are polls with deadlines:
   upper bounds, never figures checked. Include after kt.h, kctl.h and
   pthread.h, errno.h, time.h. */
#ifndef KCTL_TEST_FAULT_RIG_H
#define KCTL_TEST_FAULT_RIG_H

#define FR_MAX_DEVICES 32

typedef struct fr_device {
    pthread_mutex_t mu;
    int64_t value, generation; /* what reconcile last applied */
} fr_device;

typedef struct fr_rig {
    int n;                     /* devices */
    kctl_resource res;         /* where they are */
    char prefix[40];           /* of their names: <prefix>dev-NN */
    kctl_transport tw;         /* the spec writer's: another client */
    kctl_transport tr;         /* the status racer's: a third one */
    fr_device dev[FR_MAX_DEVICES];
    pthread_mutex_t mu;        /* everything below but the counters */
    pthread_cond_t cv;
    /* the writer */
    pthread_t writer;
    bool writer_on;
    int writer_stop;           /* 1: finish the change under way, 2: abandon it */
    bool writer_hold, writer_held; /* the test holds the writer between changes; it is held */
    int64_t last[FR_MAX_DEVICES];  /* the last spec value the store acknowledged, per device */
    bool unknown[FR_MAX_DEVICES];  /* a change abandoned with its outcome unknown */
    int64_t next_value;        /* the next value to write (never one used before) */
    uint64_t acked, failed;    /* changes acknowledged; tries that failed */
    /* the device gate: while closed, reconciles wait before touching the device */
    bool gate_closed;
    int parked, parked_stale;  /* reconciles waiting; of them, those that must write a status */
    /* the racer */
    pthread_t racer;
    bool racer_on;
    int racer_stop;
    uint64_t racer_rounds, racer_writes;
    /* counters (atomic) */
    uint64_t reconciles, conflicts, status_written, status_skipped, status_failed;
    uint64_t fails[FR_MAX_DEVICES]; /* failed reconciles per device */
    uint64_t codes[2][32];     /* failures by code (-rc): [0] reconciles, [1] the writer's tries */
    char odd[300];             /* the first failure not a fault's: what the store said (under mu) */
} fr_rig;

static void fr_nap(int ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}

static uint64_t fr_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void fr_bump(uint64_t *n) { __atomic_add_fetch(n, 1, __ATOMIC_RELAXED); }
static uint64_t fr_get(uint64_t *n) { return __atomic_load_n(n, __ATOMIC_RELAXED); }

/* Zero, then the locks, n devices (at most FR_MAX_DEVICES) never applied. */
static void fr_init(fr_rig *g, int n) {
    int i;
    memset(g, 0, sizeof *g);
    g->n = n < FR_MAX_DEVICES ? n : FR_MAX_DEVICES;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    for (i = 0; i < FR_MAX_DEVICES; i++) {
        pthread_mutex_init(&g->dev[i].mu, NULL);
        g->dev[i].value = g->dev[i].generation = -1;
    }
}

static void fr_deinit(fr_rig *g) {
    int i;
    for (i = 0; i < FR_MAX_DEVICES; i++) pthread_mutex_destroy(&g->dev[i].mu);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

/* Whether rc is what a fault (or a lost race) may cause: IO, TIMEOUT,
   AGAIN, CONFLICT; never INVALID_ARG and the like, as if the request or
   the object were wrong. */
static bool fr_fault_code(int rc) {
    return rc == KCTL_ERR_IO || rc == KCTL_ERR_TIMEOUT || rc == KCTL_ERR_AGAIN || rc == KCTL_ERR_CONFLICT;
}

/* Count a failure of who (0 reconcile, 1 the writer); keep the first
   that is not a fault's, with what the store said. */
static void fr_failed(fr_rig *g, int who, int rc, const char *what, const kctl_api_status *st) {
    fr_bump(&g->codes[who][rc < 0 && rc > -32 ? -rc : 0]);
    if (fr_fault_code(rc)) return;
    pthread_mutex_lock(&g->mu);
    if (!g->odd[0])
        snprintf(g->odd, sizeof g->odd, "%s: %s (HTTP %d %s: %s)", what, kctl_strerror(rc), st->code, st->reason ? st->reason : "",
                 st->message ? st->message : "");
    pthread_mutex_unlock(&g->mu);
}

static void fr_name(const fr_rig *g, int i, char name[64]) { snprintf(name, 64, "%.39sdev-%02d", g->prefix, i % 100); }

/* The device a name is, or -1. */
static int fr_index(const fr_rig *g, const char *name) {
    size_t n = strlen(g->prefix);
    int i;
    if (strncmp(name, g->prefix, n) != 0) return -1;
    name += n;
    if (strncmp(name, "dev-", 4) != 0 || name[4] < '0' || name[4] > '9' || name[5] < '0' || name[5] > '9' || name[6]) return -1;
    i = (name[4] - '0') * 10 + (name[5] - '0');
    return i < g->n ? i : -1;
}

/* ---- the controller */

/* Whether obj's status is not yet what reconcile writes for it. */
static bool fr_status_stale(const kctl_obj *obj, int64_t value) {
    int64_t og = -1, v = -1, racer;
    kctl_obj_get_int64(obj, "status.observedGeneration", &og);
    kctl_obj_get_int64(obj, "status.value", &v);
    return og != kctl_obj_generation(obj) || v != value || kctl_obj_get_int64(obj, "status.racer", &racer) == KCTL_OK;
}

/* The device gate: a slow device, as long as the test holds it closed. */
static void fr_device_gate(fr_rig *g, bool stale) {
    pthread_mutex_lock(&g->mu);
    if (g->gate_closed) {
        g->parked++;
        g->parked_stale += stale;
        pthread_cond_broadcast(&g->cv);
        while (g->gate_closed) pthread_cond_wait(&g->cv, &g->mu);
        g->parked--;
        g->parked_stale -= stale;
    }
    pthread_mutex_unlock(&g->mu);
}

/* The controller's reconcile (user_data: the fr_rig). Set the device to
   the spec, then report it in the status. A CONFLICT (the cache behind
   the store: our own last write not seen yet, or another writer's) is
   retried on a fresh read; one that shows a newer generation ends the
   reconcile, whose own event reconciles again. Any other failure is
   returned: the queue backs off. */
static kctl_reconcile_result fr_reconcile(const kctl_reconcile_ctx *ctx) {
    fr_rig *g = (fr_rig *)ctx->user_data;
    kctl_reconcile_result r;
    kctl_obj *fresh = NULL;
    const kctl_obj *cur = ctx->obj;
    kctl_api_status st;
    char status[96];
    int64_t want = 0, gen;
    int i = fr_index(g, ctx->name), rc = KCTL_OK, attempt;
    memset(&r, 0, sizeof r);
    memset(&st, 0, sizeof st);
    fr_bump(&g->reconciles);
    if (!ctx->obj || i < 0) return r; /* no deletes here */
    if (kctl_obj_get_int64(ctx->obj, "spec.value", &want) != KCTL_OK) {
        r.error = KCTL_ERR_INVALID_ARG;
        r.terminal = true;
        return r;
    }
    gen = kctl_obj_generation(ctx->obj);
    fr_device_gate(g, fr_status_stale(ctx->obj, want));
    pthread_mutex_lock(&g->dev[i].mu);
    g->dev[i].value = want;
    g->dev[i].generation = gen;
    pthread_mutex_unlock(&g->dev[i].mu);
    snprintf(status, sizeof status, "{\"observedGeneration\":%lld,\"value\":%lld}", (long long)gen, (long long)want);
    for (attempt = 0; attempt < 5; attempt++) {
        bool written = false;
        rc = kctl_status_update(&ctx->transport, &g->res, cur, status, KCTL_NTS, &written, NULL, &st);
        if (rc == KCTL_OK) {
            fr_bump(written ? &g->status_written : &g->status_skipped);
            break;
        }
        if (rc != KCTL_ERR_CONFLICT) break;
        fr_bump(&g->conflicts);
        kctl_obj_unref(fresh);
        fresh = NULL;
        if ((rc = kctl_transport_get(&ctx->transport, &g->res, ctx->name, &fresh, &st)) != KCTL_OK) break;
        if (kctl_obj_generation(fresh) != gen) break; /* a newer spec: its event brings it */
        cur = fresh;
    }
    kctl_obj_unref(fresh);
    if (rc != KCTL_OK) {
        fr_bump(&g->status_failed);
        fr_bump(&g->fails[i]);
        fr_failed(g, 0, rc, ctx->name, &st);
    }
    kctl_api_status_clear(&st);
    r.error = rc;
    return r;
}

/* ---- the other clients */

/* One spec change: device i to a new value, retried until acknowledged
   (a Retry-After is waited out, as a client should) or the writer is
   told to abandon it. */
static void fr_write_one(fr_rig *g, int i) {
    char name[64], patch[64];
    int64_t v;
    int rc;
    pthread_mutex_lock(&g->mu);
    v = ++g->next_value;
    pthread_mutex_unlock(&g->mu);
    fr_name(g, i, name);
    snprintf(patch, sizeof patch, "{\"spec\":{\"value\":%lld}}", (long long)v);
    for (;;) {
        kctl_api_status st;
        uint32_t ra;
        memset(&st, 0, sizeof st);
        rc = kctl_transport_patch(&g->tw, &g->res, name, patch, KCTL_NTS, 0, NULL, &st);
        ra = st.retry_after_s;
        if (rc != KCTL_OK) fr_failed(g, 1, rc, name, &st);
        kctl_api_status_clear(&st);
        if (rc == KCTL_OK || __atomic_load_n(&g->writer_stop, __ATOMIC_ACQUIRE) == 2) break;
        pthread_mutex_lock(&g->mu);
        g->failed++;
        pthread_mutex_unlock(&g->mu);
        fr_nap(rc == KCTL_ERR_AGAIN && ra ? (int)ra * 1000 : 20);
    }
    pthread_mutex_lock(&g->mu);
    if (rc == KCTL_OK) {
        g->last[i] = v;
        g->unknown[i] = false;
        g->acked++;
    } else {
        g->unknown[i] = true; /* abandoned: it may or may not have been written */
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Change specs one after the other (device 7 apart each time). */
static void *fr_writer_main(void *arg) {
    fr_rig *g = (fr_rig *)arg;
    int i = 0;
    while (__atomic_load_n(&g->writer_stop, __ATOMIC_ACQUIRE) == 0) {
        bool hold;
        pthread_mutex_lock(&g->mu);
        hold = g->writer_held = g->writer_hold;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        if (hold) {
            fr_nap(5);
            continue;
        }
        i = (i + 7) % g->n;
        fr_write_one(g, i);
        fr_nap(15);
    }
    return NULL;
}

/* Rewrite the status of every device (a merge patch of the status, with
   no version: it wins every race); how many were written. */
static int fr_race_round(fr_rig *g, int round) {
    int i, ok = 0;
    for (i = 0; i < g->n; i++) {
        char name[64], patch[96];
        fr_name(g, i, name);
        snprintf(patch, sizeof patch, "{\"status\":{\"observedGeneration\":0,\"value\":-1,\"racer\":%d}}", round);
        if (kctl_transport_patch(&g->tr, &g->res, name, patch, KCTL_NTS, KCTL_PATCH_STATUS, NULL, NULL) == KCTL_OK) ok++;
    }
    return ok;
}

static void *fr_racer_main(void *arg) {
    fr_rig *g = (fr_rig *)arg;
    int round = 1000;
    while (!__atomic_load_n(&g->racer_stop, __ATOMIC_ACQUIRE)) {
        int ok = fr_race_round(g, round++);
        pthread_mutex_lock(&g->mu);
        g->racer_rounds++;
        g->racer_writes += (uint64_t)ok;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
    }
    return NULL;
}

static bool fr_start_writer(fr_rig *g) {
    if (pthread_create(&g->writer, NULL, fr_writer_main, g) != 0) return false;
    g->writer_on = true;
    return true;
}

static bool fr_start_racer(fr_rig *g) {
    if (pthread_create(&g->racer, NULL, fr_racer_main, g) != 0) return false;
    g->racer_on = true;
    return true;
}

static void fr_stop_writer(fr_rig *g, int how) {
    if (!g->writer_on) return;
    __atomic_store_n(&g->writer_stop, how, __ATOMIC_RELEASE);
    pthread_join(g->writer, NULL);
    g->writer_on = false;
}

static void fr_stop_racer(fr_rig *g) {
    if (!g->racer_on) return;
    __atomic_store_n(&g->racer_stop, 1, __ATOMIC_RELEASE);
    pthread_join(g->racer, NULL);
    g->racer_on = false;
}

/* Close or open the device gate. */
static void fr_device_gate_set(fr_rig *g, bool closed) {
    pthread_mutex_lock(&g->mu);
    g->gate_closed = closed;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* ---- waiting (polls with deadlines: upper bounds, never results) */

static uint64_t fr_acked(fr_rig *g) {
    uint64_t n;
    pthread_mutex_lock(&g->mu);
    n = g->acked;
    pthread_mutex_unlock(&g->mu);
    return n;
}

/* Wait until the writer has had n more changes acknowledged. */
static bool fr_wait_acked(fr_rig *g, uint64_t n, int deadline_ms) {
    uint64_t until = fr_now_ms() + (uint64_t)deadline_ms, want = fr_acked(g) + n;
    while (fr_acked(g) < want) {
        if (fr_now_ms() >= until) return false;
        fr_nap(10);
    }
    return true;
}

/* Hold the writer between two changes (true once it is held), or let it go. */
static bool fr_hold_writer(fr_rig *g, bool on, int deadline_ms) {
    uint64_t until = fr_now_ms() + (uint64_t)deadline_ms;
    bool held;
    pthread_mutex_lock(&g->mu);
    g->writer_hold = on;
    pthread_mutex_unlock(&g->mu);
    if (!on) return true;
    for (;;) {
        pthread_mutex_lock(&g->mu);
        held = g->writer_held;
        pthread_mutex_unlock(&g->mu);
        if (held) return true;
        if (fr_now_ms() >= until) return false;
        fr_nap(5);
    }
}

/* ---- convergence, as the store and the devices show it */

/* What the store holds for a device, as the transport's own test reads it behind the controller. */
typedef struct fr_stored {
    int64_t spec, generation, observed, value; /* spec.value, metadata.generation, status.observedGeneration, status.value */
    bool racer;                                /* status.racer is there */
} fr_stored;

/* Whether device i and what the store holds for it (s) are where the
   writer left it; why[] (name: the first difference) when not. */
static bool fr_device_converged(fr_rig *g, int i, const fr_stored *s, char *why, size_t cap) {
    char name[64];
    int64_t last, dv, dg;
    bool unknown;
    fr_name(g, i, name);
    pthread_mutex_lock(&g->mu);
    last = g->last[i];
    unknown = g->unknown[i];
    pthread_mutex_unlock(&g->mu);
    pthread_mutex_lock(&g->dev[i].mu);
    dv = g->dev[i].value;
    dg = g->dev[i].generation;
    pthread_mutex_unlock(&g->dev[i].mu);
    why[0] = '\0';
    if (unknown) snprintf(why, cap, "%s: the writer abandoned a change", name);
    else if (s->spec != last) snprintf(why, cap, "%s: the store's spec.value %lld, the writer's last %lld", name, (long long)s->spec, (long long)last);
    else if (s->observed != s->generation)
        snprintf(why, cap, "%s: status.observedGeneration %lld, generation %lld", name, (long long)s->observed, (long long)s->generation);
    else if (s->value != last) snprintf(why, cap, "%s: status.value %lld, the writer's last %lld", name, (long long)s->value, (long long)last);
    else if (s->racer) snprintf(why, cap, "%s: the racer's status is still there", name);
    else if (dv != last || dg != s->generation)
        snprintf(why, cap, "%s: the device has %lld (generation %lld), the spec %lld (generation %lld)", name, (long long)dv, (long long)dg,
                 (long long)last, (long long)s->generation);
    return !why[0];
}

/* Poll converged(rig) until it holds, up to deadline_ms; a check that
   fails says what differed last. */
static bool fr_wait_converged(void *rig, bool (*converged)(void *rig, char *why, size_t cap), int deadline_ms, int poll_ms,
                              const char *file, int line) {
    uint64_t until = fr_now_ms() + (uint64_t)deadline_ms;
    char why[256];
    while (!converged(rig, why, sizeof why)) {
        if (fr_now_ms() >= until) {
            kt_fail(file, line, "not converged within %d ms: %s", deadline_ms, why);
            return false;
        }
        fr_nap(poll_ms);
    }
    return true;
}

/* The writer stops (its last change acknowledged); then every reconcile
   and write that failed must have failed for a fault (IO, TIMEOUT,
   AGAIN) or for a race it lost (CONFLICT), never as if the request or
   the object were wrong. The caller then waits for convergence. */
static void fr_check_failures(fr_rig *g, const char *file, int line) {
    char odd[sizeof g->odd];
    int who, code;
    fr_stop_writer(g, 1);
    pthread_mutex_lock(&g->mu);
    memcpy(odd, g->odd, sizeof odd);
    pthread_mutex_unlock(&g->mu);
    for (who = 0; who < 2; who++)
        for (code = 0; code < 32; code++) {
            uint64_t n = fr_get(&g->codes[who][code]);
            if (n && !fr_fault_code(-code))
                kt_fail(file, line, "%s failed %llu times with %s; the first: %s", who ? "the writer" : "reconcile", (unsigned long long)n,
                        code ? kctl_strerror(-code) : "an unknown code", odd);
        }
}

#endif
