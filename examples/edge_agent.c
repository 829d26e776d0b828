/* edge_agent.c - an edge agent that keeps a device's config files equal to
   the DeviceConfig objects in the embedded store. `make run` shows it. */
/*
    Desired state: DeviceConfig objects (hostname, NTP servers, feature
    flags), loaded from examples/edge/ (*.json) into a memstore that persists
    itself (state-dir/store.json) across runs. The "device" is a directory
    of config files (state-dir/device/<name>.conf) the agent writes
    atomically. Each object's status reports observedGeneration, phase and
    a message.

    The reconcile function is idempotent and level-based: render the file
    from the spec, write it only if it differs, then write the status only
    if it differs (kctl_status_update). Errors are returned, never hidden in
    a requeue-after: the work queue backs off (5 ms doubling) and retries.

    A second thread plays the operator: it edits desired state, changes a
    label (the generation predicate drops that event), makes the next file
    writes fail transiently (the error path and its backoff), and deletes
    one object. After `seconds` it sends SIGTERM; the manager stops
    gracefully and the agent prints a summary. Ctrl-C works too. Once the
    cache has synced, files on the device whose object is gone (deleted
    while the agent was not running) are queued too: their reconcile
    removes them.

    At the end it checks that the device equals the desired state (one file
    per object, as rendered; every observedGeneration current) and exits 1
    if not.

    usage: edge_agent [seconds (10)] [state-dir (build/edge-agent)]
                      [--etcd URL[,URL...] [--prefix P] [--user U --password P]
                       [--cacert FILE] [--cert FILE --key FILE] [--insecure]]
                      [--kube [KUBECONFIG] [--context NAME] | --in-cluster]
                      [--step]
           (or EDGE_AGENT_SECONDS, EDGE_AGENT_STATE and EDGE_AGENT_STEP=1
           in the environment)

    With --step the manager is not started: the main thread drives it with
    kctl_manager_step, the firmware way, and sleeps until the deadline the
    step returns. The store's writes wake it early through a pipe (the
    manager's wake-up writes a byte; pselect waits on it and on the
    signals), so an idle agent wakes only when something is due.

    With --etcd the desired state lives in an etcd cluster instead of the
    embedded store (kctl_http_curl.h; the Makefile builds that in when
    libcurl is installed): the same agent, the same reconcile, one line
    changed, the transport.

    With --kube it lives in a Kubernetes cluster, as DeviceConfig custom
    resources (edge.kctl.io/v1 deviceconfigs) in the namespace of the
    kubeconfig's context: KUBECONFIG is the file (the argument after
    --kube unless it begins with '-'; else $KUBECONFIG, else
    ~/.kube/config), --context picks a context other than the current
    one, --in-cluster uses the pod's service account instead. On a
    cluster the desired state is the cluster's, written with kubectl: the
    agent loads no examples and plays no operator; it only reads
    DeviceConfigs and writes their status. seconds 0 runs it until
    SIGTERM or Ctrl-C.
*/
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#if defined(EDGE_AGENT_ETCD) || defined(EDGE_AGENT_KUBE)
#include "../kctl_http_curl.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The namespace is the kubeconfig context's with --kube (set before any thread starts). */
static kctl_resource dc_res = { "edge.kctl.io", "v1", "deviceconfigs", "default" };

static struct agent {
    char device_dir[512];
    char ns[256];                           /* dc_res.ns with --kube */
    bool script;                            /* the operator edits desired state (not on a cluster) */
    kctl_memstore *store;                   /* the embedded store, or NULL on etcd or a cluster */
    kctl_transport t;                       /* the store, as every part of the agent uses it */
    kctl_clock clock;
    uint64_t t0;
    double seconds;
    bool stop;                              /* atomic: the agent has stopped */
    kctl_informer *inf;
    kctl_controller *ctl;
    int fail_writes;                        /* atomic: transient faults armed by the operator */
    int reconciles, retries, files_written, files_removed, status_written, status_skipped; /* atomic */
} g;

static void bump(int *n) { __atomic_add_fetch(n, 1, __ATOMIC_RELAXED); }
static int get(int *n) { return __atomic_load_n(n, __ATOMIC_RELAXED); }

/* Seconds since the agent started. */
static double elapsed(void) { return (double)(kctl_clock_now(&g.clock) - g.t0) / 1e9; }

static void say(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("[%6.3fs] %s\n", elapsed(), line);
    fflush(stdout);
}

/* Sleep, in steps of 10 ms, until the agent stops; false once it has. */
static bool nap(double seconds) {
    struct timespec ts = { 0, 10000000L };
    double slept;
    for (slept = 0; slept < seconds && !__atomic_load_n(&g.stop, __ATOMIC_RELAXED); slept += 0.01)
        while (nanosleep(&ts, NULL) != 0 && errno == EINTR) {}
    return !__atomic_load_n(&g.stop, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- device */

/* The config file's text from the spec. */
static int render(const kctl_obj *obj, char *out, size_t cap) {
    kctl_json_tok toks[256];
    kctl_json j;
    char s[256];
    size_t n = 0, k;
    uint32_t spec, v, i;
    const char *text = kctl_obj_json(obj, NULL);
    if (kctl_json_parse(text, strlen(text), toks, 256, NULL, &j) != KCTL_OK) return KCTL_ERR_PROTO;
    spec = kctl_json_path(&j, 0, "spec");
    if (kctl_json_string(&j, kctl_json_member(&j, spec, "hostname"), s, sizeof s, NULL) != KCTL_OK) return KCTL_ERR_PROTO;
    n += (size_t)snprintf(out + n, cap - n, "# written by edge_agent from DeviceConfig %s, generation %lld\nhostname = %s\nntp =",
                          kctl_obj_name(obj), (long long)kctl_obj_generation(obj), s);
    v = kctl_json_member(&j, spec, "ntpServers");
    for (i = 0; n < cap && kctl_json_string(&j, kctl_json_element(&j, v, i), s, sizeof s, NULL) == KCTL_OK; i++)
        n += (size_t)snprintf(out + n, cap - n, " %s", s);
    if (n < cap) n += (size_t)snprintf(out + n, cap - n, "\n");
    v = kctl_json_member(&j, spec, "features");
    for (i = 1, k = 0; n < cap && k < (kctl_json_type_of(&j, v) == KCTL_JSON_OBJECT ? toks[v].size : 0); k++) {
        bool on = false;           /* members: name token, then its value */
        uint32_t name = v + i, val = name + 1;
        kctl_json_string(&j, name, s, sizeof s, NULL);
        kctl_json_bool(&j, val, &on);
        n += (size_t)snprintf(out + n, cap - n, "feature.%s = %s\n", s, on ? "on" : "off");
        i += 1 + toks[val].skip;
    }
    return n < cap ? KCTL_OK : KCTL_ERR_TOO_LARGE;
}

static bool same_file(const char *path, const char *text) {
    char buf[4096];
    size_t n;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

/* Temporary file, fsync, rename: the device never sees half a config. */
static int write_atomically(const char *path, const char *text) {
    char tmp[640];
    FILE *f;
    int ok;
    if (get(&g.fail_writes) > 0 && __atomic_sub_fetch(&g.fail_writes, 1, __ATOMIC_RELAXED) >= 0)
        return KCTL_ERR_IO; /* the operator's transient fault: "flash busy" */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "wb"))) return KCTL_ERR_IO;
    ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return KCTL_ERR_IO;
    }
    return KCTL_OK;
}

/* ------------------------------------------------------------- reconcile */

typedef struct status_write {
    const kctl_reconcile_ctx *ctx;
    const char *text;
    size_t len;
    int attempt;
} status_write;

/* One try: the first against the cached object, then (after a CONFLICT:
   the cache lagged behind our own last write) against a fresh read. */
static int status_try(void *arg) {
    status_write *sw = (status_write *)arg;
    const kctl_transport *t = &sw->ctx->transport;
    kctl_obj *fresh = NULL;
    bool written = false;
    int rc;
    if (sw->attempt++ == 0) {
        rc = kctl_status_update(t, &dc_res, sw->ctx->obj, sw->text, sw->len, &written, NULL, NULL);
    } else {
        if ((rc = kctl_transport_get(t, &dc_res, kctl_obj_name(sw->ctx->obj), &fresh, NULL)) != KCTL_OK) return rc;
        if (kctl_obj_generation(fresh) != kctl_obj_generation(sw->ctx->obj)) rc = KCTL_OK; /* a newer spec: its own reconcile reports */
        else rc = kctl_status_update(t, &dc_res, fresh, sw->text, sw->len, &written, NULL, NULL);
        kctl_obj_unref(fresh);
    }
    if (rc == KCTL_OK) bump(written ? &g.status_written : &g.status_skipped);
    return rc;
}

static int set_status(const kctl_reconcile_ctx *ctx, const char *phase, const char *message) {
    char buf[512];
    status_write sw;
    int rc;
    kctl_jw w;
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "observedGeneration");
    kctl_jw_int64(&w, kctl_obj_generation(ctx->obj));
    kctl_jw_key(&w, "phase");
    kctl_jw_string(&w, phase);
    kctl_jw_key(&w, "message");
    kctl_jw_string(&w, message);
    kctl_jw_object_end(&w);
    memset(&sw, 0, sizeof sw);
    sw.ctx = ctx;
    if ((rc = kctl_jw_finish(&w, &sw.text, &sw.len)) != KCTL_OK) return rc;
    rc = kctl_retry_on_conflict(0, KCTL_MS(10), status_try, &sw); /* client-go's RetryOnConflict */
    if (rc != KCTL_OK) say("%-9s status %s: %s", kctl_obj_name(ctx->obj), phase, kctl_strerror(rc));
    return rc;
}

static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    char path[600], conf[4096], msg[128];
    const char *name = ctx->name; /* the request's name, on delete too (no object then) */
    int rc;
    memset(&r, 0, sizeof r);
    bump(&g.reconciles);
    snprintf(path, sizeof path, "%s/%s.conf", g.device_dir, name);
    if (!ctx->obj) { /* gone from the store: gone from the device */
        if (remove(path) == 0) {
            bump(&g.files_removed);
            say("%-9s deleted: removed %s.conf", name, name);
        }
        return r;
    }
    if ((rc = render(ctx->obj, conf, sizeof conf)) != KCTL_OK) {
        set_status(ctx, "Invalid", "spec.hostname missing or the spec too large");
        say("%-9s invalid spec: not retried until it changes", name);
        r.error = rc;
        r.terminal = true; /* retrying cannot fix the spec; the next edit will */
        return r;
    }
    if (same_file(path, conf)) {
        say("%-9s generation %lld: device already matches", name, (long long)kctl_obj_generation(ctx->obj));
    } else if ((rc = write_atomically(path, conf)) != KCTL_OK) {
        bump(&g.retries);
        snprintf(msg, sizeof msg, "writing %s.conf: %s", name, kctl_strerror(rc));
        set_status(ctx, "Failed", msg); /* the same failure again: an unchanged status, skipped */
        say("%-9s generation %lld: write FAILED (%s): returning the error, the queue backs off", name,
            (long long)kctl_obj_generation(ctx->obj), kctl_strerror(rc));
        r.error = rc;
        return r;
    } else {
        bump(&g.files_written);
        say("%-9s generation %lld: wrote %s.conf", name, (long long)kctl_obj_generation(ctx->obj), name);
    }
    snprintf(msg, sizeof msg, "device config applied (generation %lld)", (long long)kctl_obj_generation(ctx->obj));
    if ((rc = set_status(ctx, "Applied", msg)) != KCTL_OK) r.error = rc; /* CONFLICT: retried with backoff */
    return r;
}

/* -------------------------------------------------------------- operator */

/* The owner's write: create, or replace what is there (the embedded
   store's apply; on another store, create and else an update without a
   version, the same effect). st says why it failed. */
static int apply_desired(const char *json, size_t len, kctl_api_status *st) {
    int rc;
    if (g.store) return kctl_memstore_apply(g.store, &dc_res, json, len, NULL, st);
    rc = kctl_transport_create(&g.t, &dc_res, json, len, NULL, st);
    if (rc == KCTL_ERR_EXISTS) rc = kctl_transport_update(&g.t, &dc_res, json, len, NULL, st);
    return rc;
}

static void edit(const char *name, const char *json) {
    kctl_api_status st = { 0 };
    int rc = apply_desired(json, strlen(json), &st);
    if (rc != KCTL_OK) say("operator: editing %s failed: %s (%s)", name, kctl_strerror(rc), st.message ? st.message : "");
    kctl_api_status_clear(&st);
}

/* Once the cache has synced: queue every device file whose object the
   cache does not hold (deleted while the agent was not running: no event
   will come for it); its reconcile removes it. No sweep when the cache
   has not synced by the end of the run. False once the agent stops. */
static bool sweep_orphans(void) {
    DIR *d;
    struct dirent *e;
    while (kctl_informer_wait_for_sync(g.inf, KCTL_MS(100)) != KCTL_OK) {
        if (__atomic_load_n(&g.stop, __ATOMIC_RELAXED)) return false;
        if (g.seconds > 0 && elapsed() >= g.seconds) return true;
    }
    if ((d = opendir(g.device_dir)) == NULL) return true;
    while ((e = readdir(d)) != NULL) {
        char key[600];
        size_t nl = strlen(e->d_name);
        kctl_obj *o;
        if (nl < 6 || strcmp(e->d_name + nl - 5, ".conf") != 0) continue;
        snprintf(key, sizeof key, "%s/%.*s", dc_res.ns, (int)(nl - 5), e->d_name);
        if ((o = kctl_indexer_get(kctl_informer_indexer(g.inf), key)) != NULL) kctl_obj_unref(o);
        else kctl_queue_add(kctl_controller_queue(g.ctl), key);
    }
    closedir(d);
    return true;
}

static void *operator_main(void *arg) {
    double s = g.seconds / 10;
    int quiet, waited;
    (void)arg;
    if (!sweep_orphans()) return NULL;
    if (!g.script) { /* on a cluster: kubectl is the operator; run for seconds (0: until a signal) */
        if (g.seconds == 0) {
            while (nap(3600)) {}
            return NULL;
        }
        if (!nap(g.seconds - elapsed())) return NULL;
        goto quiet;
    }
    if (!nap(1.5 * s)) return NULL;
    say("operator: gateway gets a new hostname and loses pool.ntp.org");
    edit("gateway", "{\"metadata\":{\"name\":\"gateway\",\"labels\":{\"site\":\"plant-7\"}},\"spec\":{\"hostname\":\"gw-plant7-02\","
                    "\"ntpServers\":[\"10.0.0.1\"],\"features\":{\"ssh\":true,\"telemetry\":true,\"ota\":false}}}");
    if (!nap(1.5 * s)) return NULL;
    say("operator: sensor-1 gets a second NTP server");
    edit("sensor-1", "{\"metadata\":{\"name\":\"sensor-1\",\"labels\":{\"site\":\"plant-7\"}},\"spec\":{\"hostname\":\"sensor-plant7-01\","
                     "\"ntpServers\":[\"10.0.0.1\",\"10.0.0.2\"],\"features\":{\"ssh\":false,\"telemetry\":true,\"ota\":true}}}");
    if (!nap(1.5 * s)) return NULL;
    say("operator: relabels gateway (metadata only: generation unchanged, no reconcile)");
    edit("gateway", "{\"metadata\":{\"name\":\"gateway\",\"labels\":{\"site\":\"plant-7\",\"rack\":\"b2\"}},\"spec\":{\"hostname\":"
                    "\"gw-plant7-02\",\"ntpServers\":[\"10.0.0.1\"],\"features\":{\"ssh\":true,\"telemetry\":true,\"ota\":false}}}");
    if (!nap(1.5 * s)) return NULL;
    say("operator: the device's flash will be busy for the next 4 writes; sensor-2 turns ssh on");
    __atomic_store_n(&g.fail_writes, 4, __ATOMIC_RELAXED);
    edit("sensor-2", "{\"metadata\":{\"name\":\"sensor-2\",\"labels\":{\"site\":\"plant-7\"}},\"spec\":{\"hostname\":\"sensor-plant7-02\","
                     "\"ntpServers\":[\"10.0.0.1\"],\"features\":{\"ssh\":true,\"telemetry\":true,\"ota\":true}}}");
    if (!nap(2 * s)) return NULL;
    say("operator: deletes sensor-1");
    kctl_transport_remove(&g.t, &dc_res, "sensor-1", NULL, NULL, NULL);
    if (!nap(2 * s)) return NULL;
quiet:
    for (quiet = 0, waited = 0; quiet < 3 && waited < 500; waited++) { /* let retries still backing off finish */
        kctl_queue_stats qs;
        kctl_queue_read_stats(kctl_controller_queue(g.ctl), &qs);
        quiet = qs.depth == 0 && qs.processing == 0 && qs.delayed == 0 ? quiet + 1 : 0;
        if (!nap(0.01)) return NULL;
    }
    kill(getpid(), SIGTERM);
    return NULL;
}

/* ---------------------------------------------------------- convergence */

/* Whether the device equals the desired state: one file per object, with
   the rendered text, and every status at the object's generation. */
static bool converged(void) {
    kctl_list_result l;
    size_t i, files = 0;
    bool ok = true;
    DIR *d;
    struct dirent *e;
    memset(&l, 0, sizeof l);
    if (kctl_transport_list(&g.t, &dc_res, NULL, &l, NULL) != KCTL_OK) return false;
    for (i = 0; i < l.items.count; i++) {
        const kctl_obj *o = l.items.items[i];
        char path[600], conf[4096];
        kctl_json_tok toks[256];
        kctl_json j;
        int64_t observed = -1;
        const char *text = kctl_obj_json(o, NULL);
        snprintf(path, sizeof path, "%s/%s.conf", g.device_dir, kctl_obj_name(o));
        if (render(o, conf, sizeof conf) != KCTL_OK || !same_file(path, conf)) {
            printf("  not converged: %s.conf differs from the spec\n", kctl_obj_name(o));
            ok = false;
        }
        if (kctl_json_parse(text, strlen(text), toks, 256, NULL, &j) != KCTL_OK ||
            kctl_json_int64(&j, kctl_json_path(&j, 0, "status.observedGeneration"), &observed) != KCTL_OK ||
            observed != kctl_obj_generation(o)) {
            printf("  not converged: %s status observedGeneration %lld, generation %lld\n", kctl_obj_name(o),
                   (long long)observed, (long long)kctl_obj_generation(o));
            ok = false;
        }
    }
    if ((d = opendir(g.device_dir)) != NULL) {
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.') files++;
        closedir(d);
    }
    if (files != l.items.count) {
        printf("  not converged: %zu files for %zu objects\n", files, l.items.count);
        ok = false;
    }
    kctl_list_result_free(&l);
    return ok;
}

/* ------------------------------------------------------------------ main */

/* The store's revision, as a list says it. */
static const char *store_revision(void) {
    static char rv[KCTL_RV_MAX];
    kctl_list_result l;
    kctl_list_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.limit = 1;
    snprintf(rv, sizeof rv, "?");
    if (kctl_transport_list(&g.t, &dc_res, &lo, &l, NULL) == KCTL_OK) {
        snprintf(rv, sizeof rv, "%s", l.resource_version);
        kctl_list_result_free(&l);
    }
    return rv;
}

/* Every examples/edge/ (*.json) into the store (create, or replace the spec). */
static int load_desired(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        char path[600], text[8192];
        size_t len, nl = strlen(e->d_name);
        FILE *f;
        int rc;
        if (nl < 6 || strcmp(e->d_name + nl - 5, ".json") != 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!(f = fopen(path, "rb"))) continue;
        len = fread(text, 1, sizeof text, f);
        fclose(f);
        {
            kctl_api_status st = { 0 };
            rc = apply_desired(text, len, &st);
            if (rc != KCTL_OK) say("%s: %s (%s)", path, kctl_strerror(rc), st.message ? st.message : "");
            else n++;
            kctl_api_status_clear(&st);
        }
    }
    closedir(d);
    return n;
}

/* ------------------------------------------------------------ step mode */

/* The single-threaded loop: step, then sleep until the deadline or a
   wake-up (a byte in the pipe) or a signal (SIGINT, SIGTERM: unblocked only
   inside pselect). The manager's wake-up may come from any thread (the
   operator's writes): it only writes a byte. The signal handler writes one
   too: where a runtime defers handlers (ThreadSanitizer runs them at its
   next intercepted call, after pselect has returned), the flag alone would
   be set after the loop checked it, and the next pselect would sleep until
   the deadline, minutes away. */
static int step_pipe[2] = { -1, -1 };
static volatile sig_atomic_t step_signal;
static uint64_t step_count;

static void step_wake(void *ud) {
    char c = 1;
    (void)ud;
    if (write(step_pipe[1], &c, 1) < 0) { /* full: a wake-up is pending anyway */ }
}

static void step_on_signal(int sig) {
    int saved = errno;
    step_signal = sig;
    step_wake(NULL); /* write(2) is async-signal-safe */
    errno = saved;
}

static int step_setup(void) {
    int i;
    if (pipe(step_pipe) != 0) return -1;
    for (i = 0; i < 2; i++) fcntl(step_pipe[i], F_SETFL, fcntl(step_pipe[i], F_GETFL) | O_NONBLOCK);
    return 0;
}

static int run_stepped(kctl_manager *m, const sigset_t *waiting_mask) {
    struct sigaction sa;
    int rc = KCTL_OK, stop_rc;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = step_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!step_signal) {
        uint64_t dl = UINT64_MAX, now;
        struct timespec ts, *tp = NULL;
        fd_set rd;
        char buf[64];
        rc = kctl_manager_step(m, 64, &dl);
        step_count++;
        if (rc != KCTL_OK) break; /* SHUTDOWN: the lease was lost */
        now = kctl_clock_now(NULL);
        if (dl != UINT64_MAX) {
            uint64_t wait = dl > now ? dl - now : 0;
            ts.tv_sec = (time_t)(wait / 1000000000u);
            ts.tv_nsec = (long)(wait % 1000000000u);
            tp = &ts;
        }
        if (step_signal) break;
        FD_ZERO(&rd);
        FD_SET(step_pipe[0], &rd);
        if (pselect(step_pipe[0] + 1, &rd, NULL, NULL, tp, waiting_mask) > 0)
            while (read(step_pipe[0], buf, sizeof buf) > 0) {} /* drained before the next step reads the store */
    }
    stop_rc = kctl_manager_stop(m);
    return rc == KCTL_OK ? stop_rc : rc;
}

int main(int argc, char **argv) {
    const char *state;
    char store_path[600];
    kctl_memstore_desc md;
    kctl_manager_desc mgd;
    kctl_controller_desc cd;
    kctl_manager *m = NULL;
    kctl_informer *inf = NULL;
    kctl_controller *ctl = NULL;
    kctl_predicate gen = { KCTL_PRED_GENERATION_CHANGED, NULL, NULL, NULL, NULL };
    kctl_controller_stats cs;
    pthread_t op;
    sigset_t sigs, old;
    int rc, loaded;
    bool ok;
    const char *env_seconds = getenv("EDGE_AGENT_SECONDS"), *env_state = getenv("EDGE_AGENT_STATE");
    const char *pos[2] = { NULL, NULL }, *etcd = NULL, *prefix = NULL, *user = NULL, *password = NULL;
    const char *cacert = NULL, *cert = NULL, *key = NULL, *kubeconfig = NULL, *context = NULL;
    bool insecure = false, kube = false, in_cluster = false, step = false;
    const char *env_step = getenv("EDGE_AGENT_STEP");
    int i, npos = 0;
    char where[700];

    for (i = 1; i < argc; i++) {
        const char **opt = NULL;
        if (strcmp(argv[i], "--etcd") == 0) opt = &etcd;
        else if (strcmp(argv[i], "--prefix") == 0) opt = &prefix;
        else if (strcmp(argv[i], "--user") == 0) opt = &user;
        else if (strcmp(argv[i], "--password") == 0) opt = &password;
        else if (strcmp(argv[i], "--cacert") == 0) opt = &cacert;
        else if (strcmp(argv[i], "--cert") == 0) opt = &cert;
        else if (strcmp(argv[i], "--key") == 0) opt = &key;
        else if (strcmp(argv[i], "--context") == 0) opt = &context;
        else if (strcmp(argv[i], "--insecure") == 0) { insecure = true; continue; }
        else if (strcmp(argv[i], "--in-cluster") == 0) { in_cluster = true; continue; }
        else if (strcmp(argv[i], "--step") == 0) { step = true; continue; }
        else if (strcmp(argv[i], "--kube") == 0) { /* the kubeconfig may follow */
            kube = true;
            if (i + 1 < argc && argv[i + 1][0] != '-') kubeconfig = argv[++i];
            continue;
        }
        else if (argv[i][0] == '-' && argv[i][1] == '-') npos = 3; /* unknown: usage */
        else if (npos < 2) { pos[npos++] = argv[i]; continue; }
        else npos = 3;
        if (opt && i + 1 < argc) *opt = argv[++i];
        else npos = 3;
    }
    state = pos[1] ? pos[1] : env_state ? env_state : "build/edge-agent";
    g.seconds = pos[0] ? atof(pos[0]) : env_seconds ? atof(env_seconds) : 10.0;
    g.script = !kube && !in_cluster; /* on a cluster, kubectl is the operator */
    if (npos > 2 || !((g.seconds > 0 || (!g.script && g.seconds == 0)) && g.seconds < 86400) ||
        (etcd && !g.script) || (kube && in_cluster) || (context && !kube)) {
        fprintf(stderr, "usage: edge_agent [seconds (10)] [state-dir (build/edge-agent)]\n"
                        "                  [--etcd URL[,URL...] [--prefix P] [--user U --password P]\n"
                        "                   [--cacert FILE] [--cert FILE --key FILE] [--insecure]]\n"
                        "                  [--kube [KUBECONFIG] [--context NAME] | --in-cluster] [--step]\n");
        return 2;
    }
    g.clock = kctl_clock_monotonic();
    g.t0 = kctl_clock_now(&g.clock);
    snprintf(g.device_dir, sizeof g.device_dir, "%s/device", state);
    snprintf(store_path, sizeof store_path, "%s/store.json", state);
    mkdir(state, 0755);
    mkdir(g.device_dir, 0755);

    if (etcd) { /* the desired state in an etcd cluster */
#ifdef EDGE_AGENT_ETCD
        kctl_etcd_desc ed = kctl_etcd_desc_init();
        ed.endpoints = etcd;
        if (prefix) ed.prefix = prefix;
        ed.username = user;
        ed.password = password;
        ed.tls.ca_file = cacert;
        ed.tls.cert_file = cert;
        ed.tls.key_file = key;
        ed.tls.insecure = insecure;
        if ((rc = kctl_etcd_create(&ed, &g.t)) != KCTL_OK) {
            fprintf(stderr, "edge_agent: etcd %s: %s\n", etcd, kctl_strerror(rc));
            return 1;
        }
        snprintf(where, sizeof where, "etcd %s", etcd);
        say("store: etcd at %s", etcd);
#else
        (void)prefix; (void)user; (void)password; (void)cacert; (void)cert; (void)key; (void)insecure;
        fprintf(stderr, "edge_agent: built without libcurl, so without --etcd (install libcurl4-openssl-dev and make again)\n");
        return 2;
#endif
    } else if (!g.script) { /* the desired state in a Kubernetes cluster */
#ifdef EDGE_AGENT_KUBE
        kctl_kube_config kc;
        kctl_api_status st = { 0 };
        memset(&kc, 0, sizeof kc);
        rc = in_cluster ? kctl_kube_config_in_cluster(NULL, &kc, &st) : kctl_kube_config_load(kubeconfig, context, &kc, &st);
        if (rc == KCTL_OK) rc = kctl_kube_create(&kc.desc, &g.t);
        if (rc != KCTL_OK) {
            fprintf(stderr, "edge_agent: %s: %s%s%s\n", in_cluster ? "in-cluster configuration" : kubeconfig ? kubeconfig : "kubeconfig",
                    kctl_strerror(rc), st.message ? ": " : "", st.message ? st.message : "");
            kctl_api_status_clear(&st);
            kctl_kube_config_free(&kc);
            return 1;
        }
        snprintf(g.ns, sizeof g.ns, "%s", kc.ns);
        dc_res.ns = g.ns;
        snprintf(where, sizeof where, "Kubernetes API %s, namespace %s", kc.desc.server, g.ns);
        say("store: the Kubernetes API at %s (%s%s), namespace %s", kc.desc.server, in_cluster ? "in-cluster" : "context ",
            in_cluster ? "" : kc.context, g.ns);
        kctl_kube_config_free(&kc);
#else
        (void)kubeconfig; (void)context;
        fprintf(stderr, "edge_agent: built without libcurl, so without --kube (install libcurl4-openssl-dev and make again)\n");
        return 2;
#endif
    } else {
        memset(&md, 0, sizeof md);
        md.path = store_path; /* what the store held last run, loaded now and saved after every write */
        md.save_on_write = true;
        if ((rc = kctl_memstore_create(&md, &g.store)) != KCTL_OK) {
            fprintf(stderr, "edge_agent: the store %s: %s\n", store_path, kctl_strerror(rc));
            return 1;
        }
        g.t = kctl_memstore_transport(g.store);
        snprintf(where, sizeof where, "persisted in %s", store_path);
        say("store %s: revision %llu", store_path, (unsigned long long)kctl_memstore_revision(g.store));
    }
    if (!g.script) say("desired state: the cluster's DeviceConfigs (kubectl apply -f examples/edge/ to add the examples)");
    else if ((loaded = load_desired("examples/edge")) < 0) say("no examples/edge directory: running on what the store holds");
    else say("desired state: %d DeviceConfigs from examples/edge/ (*.json)", loaded);

    memset(&mgd, 0, sizeof mgd);
    mgd.transport = g.t;
    if (env_step && strcmp(env_step, "1") == 0) step = true;
    if (step && step_setup() != 0) {
        fprintf(stderr, "edge_agent: pipe: %s\n", strerror(errno));
        return 1;
    }
    if (step) mgd.wake.fn = step_wake; /* a write to a watched resource ends the sleep */
    if ((rc = kctl_manager_create(&mgd, &m)) != KCTL_OK || (rc = kctl_manager_informer(m, &dc_res, NULL, NULL, &inf)) != KCTL_OK) {
        fprintf(stderr, "edge_agent: %s\n", kctl_strerror(rc));
        return 1;
    }
    memset(&cd, 0, sizeof cd);
    cd.name = "deviceconfig";
    cd.primary = inf;
    cd.predicate = &gen; /* status writes and label edits do not wake it */
    cd.reconcile = reconcile;
    cd.workers = 2;
    if ((rc = kctl_manager_add_controller(m, &cd, &ctl)) != KCTL_OK) {
        fprintf(stderr, "edge_agent: %s\n", kctl_strerror(rc));
        return 1;
    }

    /* SIGTERM must reach only run's wait: block it before the operator starts */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, &old);
    g.inf = inf;
    g.ctl = ctl;
    pthread_create(&op, NULL, operator_main, NULL);
    if (g.seconds > 0) say("agent: running for %.1f s (Ctrl-C stops it sooner)", g.seconds);
    else say("agent: running until SIGTERM or Ctrl-C");
    if (step) say("agent: single-threaded: kctl_manager_step, sleeping until each deadline");
    rc = step ? run_stepped(m, &old) : kctl_manager_run_until_signal(m);
    __atomic_store_n(&g.stop, true, __ATOMIC_RELAXED);
    say("agent: stopped (%s)", kctl_strerror(rc));
    pthread_join(op, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    kctl_controller_read_stats(ctl, &cs);
    printf("\nsummary\n"
           "  reconciles            %d (%llu ok, %llu errors retried with backoff, %llu not retried)\n"
           "  config files written  %d, removed %d\n"
           "  failed writes         %d\n"
           "  status writes         %d, skipped because unchanged %d\n"
           "  store revision        %s (%s)\n",
           get(&g.reconciles), (unsigned long long)cs.success, (unsigned long long)(cs.error - cs.terminal),
           (unsigned long long)cs.terminal, get(&g.files_written),
           get(&g.files_removed), get(&g.retries), get(&g.status_written), get(&g.status_skipped),
           store_revision(), where);
    if (step) printf("  steps                 %llu (wake-ups of the single-threaded loop)\n", (unsigned long long)step_count);
    ok = converged();
    printf("  converged             %s\n", ok ? "yes: the device equals the desired state" : "NO");
    kctl_manager_destroy(m);
    if (step) {
        close(step_pipe[0]);
        close(step_pipe[1]);
    }
    if (g.store) kctl_memstore_destroy(g.store);
    else kctl_transport_destroy(&g.t);
    return rc == KCTL_OK && ok ? 0 : 1;
}
