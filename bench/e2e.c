/* e2e.c - the whole pipeline on the memstore: a 100,000-object initial sync,
   then writes through to reconcile. Prints figures (median of 3 rounds, or
   of -r N, each round a fresh informer and controller on the same store);
   asserts nothing.

   a. list and sync: 100,000 objects in the store; an informer starts, lists
      them, fills its cache and calls its handlers; a controller's queue
      gets every key. Seconds from start to synced, the growth of the
      resident set (first round), and the first 100,000 reconciles
      (2 workers) until the queue is empty and no key is in flight.
   b. store + pipeline, flat out: a writer thread changes objects as fast as
      the store takes it (200,000 writes cycling over the objects); the
      informer (its own thread) and a controller (2 workers) reconcile them.
      Events/s from the first write until every write has reached the cache
      and nothing is queued or in flight; this includes the store's own
      write cost (the writer and the pipeline share the CPUs). The writer's
      rate is printed twice: by the clock, and per second of its thread's
      own CPU time (which other processes on the machine move less).
   c. paced events: 20,000 writes at 10,000/s (the writer sleeps until each
      write's due time, as a real client would), so the pipeline is not
      saturated: the latency from a write to the reconcile that saw it.
   d. the pipeline alone: the informer is paused at its watch (the bench
      wraps the memstore's transport), 200,000 writes are made, then it is
      resumed: events/s from the resume until every update was handled and
      nothing is queued or in flight (informer -> handlers -> queue ->
      workers, no store writes in the timed part). Its 200,000 writes, made
      while the informer waits at the gate, are timed too: the writer alone
      on the same store in the same round (the store's own cost; b's writer
      shares the CPUs and the store's lock with the pipeline). The writer
      runs at its CPU's speed, which the host changes within seconds: each
      round's figure is printed again in order, beside the CPU step
      (bench.h) taken on its thread just before and just after its writes,
      and the page faults its thread took during them (a round whose
      writes grow the heap pays for each new page; the others take none).
   e. the writer alone, the keys in a random order: once d's rounds are
      done, a second store, made as the first, takes 200,000 writes a
      round in one fixed random order of its objects (the same in every
      round), with no watcher. d's writes go through the keys in the
      order the objects were made, so consecutive writes read objects
      that lie side by side in memory, which the CPU fetches ahead; a
      controller's writes seldom come in that order, and a store whose
      objects were replaced in another order than they are written (b's
      pipeline does that over the rounds) loses it too. e is the writer
      to expect from a store that has run for a while.

   Run:  ./bench-e2e          idle
         ./bench-e2e -C       each round idle, then with a busy-loop child
                              process started and killed by the bench
                              (pid): the figures side by side
         ./bench-e2e -r N     N rounds (1-16; 3 unless given), with -C too:
                              a long run shows how the figures move as the
                              stores age
   Pinned runs (all threads on one CPU, on two): the Makefile's
   bench-contended target runs this under taskset.
*/
#define _GNU_SOURCE 1 /* sched_getaffinity: the conditions printed, and kctl's spin policy */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define E2E_OBJECTS 100000
#define E2E_WRITES 200000
#define E2E_PACED 20000
#define E2E_MAX_RUNS 16 /* -r */

static const kctl_resource e2e_res = { "", "v1", "configmaps", "bench" };
static kctl_clock e2e_clock;
static uint64_t e2e_sent[E2E_OBJECTS];   /* atomic: when the latest write to object i was made */
static uint64_t *e2e_lat;                /* latencies, one per reconcile that saw a write */
static size_t e2e_nlat, e2e_cap;         /* atomic */
static unsigned e2e_round_no;            /* makes every write change its object */
static int e2e_perm[E2E_OBJECTS];        /* e's order of the keys */
static int e2e_runs = BENCH_RUNS;        /* -r */

/* ---- the gate: the memstore's transport with watch_next held while closed */
static kctl_transport e2e_inner;
static kctl_transport_vtable e2e_vt;
static pthread_mutex_t e2e_gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t e2e_gate_cv = PTHREAD_COND_INITIALIZER;
static int e2e_gate_closed, e2e_gate_waiting;

static int e2e_watch_next(void *self, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    pthread_mutex_lock(&e2e_gate_mu);
    while (e2e_gate_closed) {
        e2e_gate_waiting = 1;
        pthread_cond_broadcast(&e2e_gate_cv);
        pthread_cond_wait(&e2e_gate_cv, &e2e_gate_mu);
    }
    e2e_gate_waiting = 0;
    pthread_mutex_unlock(&e2e_gate_mu);
    return e2e_inner.vt->watch_next(self, w, timeout_ns, ev, st);
}

typedef struct e2e_fig {
    double sync_s, first_s, writer_wps, writer_cpu_wps, flat_eps, sat_p50_ms, sat_p99_ms, paced_p50_us, paced_p99_us, alone_eps, alone_wps;
    double alone_step[2]; /* the CPU step on the writer's thread just before and just after d's writes */
    long alone_faults;    /* the page faults its thread took during them (-1: not known) */
    double random_wps, random_step[2]; /* e, and the CPU step around it */
    long random_faults;
    long rss_kib;
    unsigned long flat_reconciles, paced_reconciles;
} e2e_fig;

static long rss_kib(void) {
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kib = strtol(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

/* The page faults the calling thread has taken so far (-1: not known). */
static long e2e_thread_faults(void) {
#ifdef RUSAGE_THREAD
    struct rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt + ru.ru_majflt : -1;
#else
    return -1;
#endif
}

static void e2e_sleep_ns(long ns) {
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = ns;
    nanosleep(&ts, NULL);
}

static int e2e_index(const char *key) {
    const char *dash = strrchr(key, '-');
    return dash ? atoi(dash + 1) : -1;
}

static kctl_reconcile_result e2e_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    int i = e2e_index(ctx->key);
    memset(&r, 0, sizeof r);
    if (i >= 0 && i < E2E_OBJECTS) {
        /* Looked at before it is taken: most reconciles find no stamp, and
           an exchange on every one wrote lines the other worker had just
           written (neighbouring objects go to the two workers in turn), a
           cost of the bench's own bookkeeping, not of the pipeline. */
        uint64_t sent = __atomic_load_n(&e2e_sent[i], __ATOMIC_ACQUIRE);
        if (sent && (sent = __atomic_exchange_n(&e2e_sent[i], 0, __ATOMIC_ACQ_REL)) != 0) {
            size_t n = __atomic_fetch_add(&e2e_nlat, 1, __ATOMIC_RELAXED);
            if (n < e2e_cap) e2e_lat[n] = kctl_clock_now(&e2e_clock) - sent;
        }
    }
    return r;
}

/* s, then v in decimal (at least `width` digits, zero-padded), at p; the end. */
static char *e2e_put(char *p, const char *s, unsigned v, int width) {
    char d[12];
    int n = 0;
    while (*s) *p++ = *s++;
    do d[n++] = (char)('0' + v % 10); while ((v /= 10) != 0 || n < width);
    while (n) *p++ = d[--n];
    return p;
}

/* One update of object i; stamp: record the write time for the latency.
   The document is {"metadata":{"name":"cm-<i, 6 digits>"},"data":
   {"round":"<round>-<w>"}}, composed by hand: snprintf took about a
   tenth of the writer's time, a cost of the bench, not of the store. */
static void e2e_write(kctl_memstore *ms, int i, unsigned w, int stamp) {
    char doc[160], *p = doc;
    int n;
    p = e2e_put(p, "{\"metadata\":{\"name\":\"cm-", (unsigned)i, 6);
    p = e2e_put(p, "\"},\"data\":{\"round\":\"", e2e_round_no, 1);
    p = e2e_put(p, "-", w, 1);
    memcpy(p, "\"}}", 4);
    n = (int)(p - doc) + 3;
    if (stamp) __atomic_store_n(&e2e_sent[i], kctl_clock_now(&e2e_clock), __ATOMIC_RELEASE);
    if (kctl_memstore_apply(ms, &e2e_res, doc, (size_t)n, NULL, NULL) != KCTL_OK) {
        fprintf(stderr, "e2e: a write failed\n");
        exit(1);
    }
}

static double e2e_writer_cpu_s; /* the writer thread's own CPU time (read after the join) */

static double e2e_thread_cpu_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *e2e_writer(void *arg) {
    kctl_memstore *ms = (kctl_memstore *)arg;
    unsigned w;
    double c0 = e2e_thread_cpu_s();
    for (w = 0; w < E2E_WRITES; w++) e2e_write(ms, (int)(w % E2E_OBJECTS), w, 1);
    e2e_writer_cpu_s = e2e_thread_cpu_s() - c0;
    return NULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nothing queued, nothing in flight. */
static int e2e_idle(kctl_controller *c) {
    kctl_queue_stats st;
    return kctl_queue_read_stats(kctl_controller_queue(c), &st) == KCTL_OK && st.depth == 0 && st.processing == 0;
}

/* Wait (polling every poll_ns) until the informer saw `want` modifications
   since base and the controller is idle; the time then. */
static uint64_t e2e_wait_handled(kctl_informer *inf, kctl_controller *c, uint64_t base, uint64_t want, long poll_ns) {
    kctl_reflector_stats rs;
    for (;;) {
        kctl_informer_read_stats(inf, &rs);
        if (rs.modified - base >= want && e2e_idle(c)) return kctl_clock_now(&e2e_clock);
        e2e_sleep_ns(poll_ns);
    }
}

static size_t e2e_sorted_lat(void) {
    size_t n = __atomic_load_n(&e2e_nlat, __ATOMIC_RELAXED);
    if (n > e2e_cap) n = e2e_cap;
    qsort(e2e_lat, n, sizeof *e2e_lat, cmp_u64);
    return n;
}

static int e2e_round(kctl_memstore *ms, e2e_fig *f) {
    kctl_informer_desc id;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kctl_reflector_stats rs;
    pthread_t writer;
    uint64_t t0, t1, base;
    long rss0;
    size_t n;
    int i;

    memset(f, 0, sizeof *f);
    e2e_round_no++;
    /* a. list and sync, the first reconciles */
    memset(&id, 0, sizeof id);
    e2e_inner = kctl_memstore_transport(ms);
    e2e_vt = *e2e_inner.vt;
    e2e_vt.watch_next = e2e_watch_next;
    id.transport.vt = &e2e_vt;
    id.transport.self = e2e_inner.self;
    id.resource = e2e_res;
    if (kctl_informer_create(&id, &inf) != KCTL_OK) return -1;
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = e2e_reconcile;
    cd.workers = 2;
    if (kctl_controller_create(&cd, &c) != KCTL_OK) return -1;
    rss0 = rss_kib();
    t0 = kctl_clock_now(&e2e_clock);
    if (kctl_informer_start(inf) != KCTL_OK || kctl_informer_wait_for_sync(inf, KCTL_SEC(600)) != KCTL_OK) {
        fprintf(stderr, "e2e: the informer did not sync\n");
        return -1;
    }
    t1 = kctl_clock_now(&e2e_clock);
    f->rss_kib = rss_kib() - rss0;
    f->sync_s = bench_seconds(t0, t1);
    t0 = kctl_clock_now(&e2e_clock);
    if (kctl_controller_start(c, KCTL_SEC(60)) != KCTL_OK) return -1;
    while (!e2e_idle(c)) e2e_sleep_ns(1000000L);
    f->first_s = bench_seconds(t0, kctl_clock_now(&e2e_clock));

    /* b. store + pipeline, flat out */
    kctl_informer_read_stats(inf, &rs);
    base = rs.modified;
    __atomic_store_n(&e2e_nlat, 0, __ATOMIC_RELAXED);
    t0 = kctl_clock_now(&e2e_clock);
    pthread_create(&writer, NULL, e2e_writer, ms);
    pthread_join(writer, NULL);
    f->writer_wps = E2E_WRITES / bench_seconds(t0, kctl_clock_now(&e2e_clock));
    f->writer_cpu_wps = e2e_writer_cpu_s > 0 ? E2E_WRITES / e2e_writer_cpu_s : 0;
    t1 = e2e_wait_handled(inf, c, base, E2E_WRITES, 1000000L);
    f->flat_eps = E2E_WRITES / bench_seconds(t0, t1);
    n = e2e_sorted_lat();
    f->flat_reconciles = (unsigned long)n;
    if (n) {
        f->sat_p50_ms = (double)e2e_lat[n / 2] / 1e6;
        f->sat_p99_ms = (double)e2e_lat[n * 99 / 100] / 1e6;
    }

    /* c. paced, the writer sleeping between writes */
    __atomic_store_n(&e2e_nlat, 0, __ATOMIC_RELAXED);
    kctl_informer_read_stats(inf, &rs);
    base = rs.modified;
    t0 = kctl_clock_now(&e2e_clock);
    for (i = 0; i < E2E_PACED; i++) {
        uint64_t due = t0 + (uint64_t)i * 100000u;
        struct timespec ts;
        ts.tv_sec = (time_t)(due / 1000000000u);
        ts.tv_nsec = (long)(due % 1000000000u);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) { }
        e2e_write(ms, (i * 7919) % E2E_OBJECTS, (unsigned)i, 1);
    }
    e2e_wait_handled(inf, c, base, E2E_PACED, 1000000L);
    n = e2e_sorted_lat();
    f->paced_reconciles = (unsigned long)n;
    if (n) {
        f->paced_p50_us = (double)e2e_lat[n / 2] / 1e3;
        f->paced_p99_us = (double)e2e_lat[n * 99 / 100] / 1e3;
    }

    /* d. the pipeline alone: pause at the watch, write, resume */
    pthread_mutex_lock(&e2e_gate_mu);
    e2e_gate_closed = 1;
    e2e_gate_waiting = 0;
    pthread_mutex_unlock(&e2e_gate_mu);
    e2e_write(ms, 0, 999999u, 0); /* the event that brings the informer to the gate */
    pthread_mutex_lock(&e2e_gate_mu);
    while (!e2e_gate_waiting) pthread_cond_wait(&e2e_gate_cv, &e2e_gate_mu);
    pthread_mutex_unlock(&e2e_gate_mu);
    while (!e2e_idle(c)) e2e_sleep_ns(1000000L);
    kctl_informer_read_stats(inf, &rs);
    base = rs.modified;
    f->alone_step[0] = bench_step_ns();
    f->alone_faults = e2e_thread_faults();
    t0 = kctl_clock_now(&e2e_clock);
    for (i = 0; i < E2E_WRITES; i++) e2e_write(ms, i % E2E_OBJECTS, (unsigned)i + 1000000u, 0);
    f->alone_wps = E2E_WRITES / bench_seconds(t0, kctl_clock_now(&e2e_clock));
    if (f->alone_faults >= 0) f->alone_faults = e2e_thread_faults() - f->alone_faults;
    f->alone_step[1] = bench_step_ns();
    t0 = kctl_clock_now(&e2e_clock);
    pthread_mutex_lock(&e2e_gate_mu);
    e2e_gate_closed = 0;
    pthread_cond_broadcast(&e2e_gate_cv);
    pthread_mutex_unlock(&e2e_gate_mu);
    t1 = e2e_wait_handled(inf, c, base, E2E_WRITES, 200000L);
    f->alone_eps = E2E_WRITES / bench_seconds(t0, t1);

    kctl_controller_stop(c);
    kctl_informer_stop(inf);
    kctl_controller_destroy(c);
    kctl_informer_destroy(inf);
    return 0;
}

/* A store of md with the bench's objects, in *out. */
static int e2e_fill(const kctl_memstore_desc *md, kctl_memstore **out) {
    char doc[160];
    int i, rc = kctl_memstore_create(md, out);
    for (i = 0; rc == KCTL_OK && i < E2E_OBJECTS; i++) {
        int n = snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"cm-%06d\",\"labels\":{\"app\":\"bench\"}},\"data\":{\"round\":\"0\"}}", i);
        rc = kctl_memstore_apply(*out, &e2e_res, doc, (size_t)n, NULL, NULL);
    }
    return rc;
}

/* e. 200,000 writes into ms (e's own store, no watcher) in e2e_perm's
   order of the keys, into f; each must change its object (a write that
   changes nothing costs less): -1 if one did not. */
static int e2e_random(kctl_memstore *ms, e2e_fig *f) {
    uint64_t t0, rev0 = kctl_memstore_revision(ms);
    int i;
    e2e_round_no++; /* every write changes its object */
    f->random_step[0] = bench_step_ns();
    f->random_faults = e2e_thread_faults();
    t0 = kctl_clock_now(&e2e_clock);
    for (i = 0; i < E2E_WRITES; i++) e2e_write(ms, e2e_perm[i % E2E_OBJECTS], (unsigned)i, 0);
    f->random_wps = E2E_WRITES / bench_seconds(t0, kctl_clock_now(&e2e_clock));
    if (f->random_faults >= 0) f->random_faults = e2e_thread_faults() - f->random_faults;
    f->random_step[1] = bench_step_ns();
    if (kctl_memstore_revision(ms) - rev0 != E2E_WRITES) {
        fprintf(stderr, "e2e: e's writes did not all change their objects\n");
        return -1;
    }
    return 0;
}

/* One figure: the median of the rounds, idle and (with -C) contended. */
static void e2e_line(const char *label, const char *unit, const double *idle, const double *busy, int contended,
                     double scale, const char *fmt) {
    double v[E2E_MAX_RUNS];
    memcpy(v, idle, (size_t)e2e_runs * sizeof v[0]);
    printf("%s: idle ", label);
    printf(fmt, bench_median_n(v, e2e_runs) / scale);
    printf(" %s ", unit);
    bench_print_runs_n(v, e2e_runs, scale, fmt);
    if (contended) {
        memcpy(v, busy, (size_t)e2e_runs * sizeof v[0]);
        printf(" | contended ");
        printf(fmt, bench_median_n(v, e2e_runs) / scale);
        printf(" %s ", unit);
        bench_print_runs_n(v, e2e_runs, scale, fmt);
    }
    putchar('\n');
}

#define E2E_COLLECT(field, arr, mode) do { int r_; for (r_ = 0; r_ < e2e_runs; r_++) arr[r_] = figs[mode][r_].field; } while (0)

/* A writer's figure for each round in order, beside the CPU step around it
   and its page faults: d's (random 0) or e's (1). */
static void e2e_rounds_line(const e2e_fig *figs, int random, const char *label) {
    int run;
    printf("%s, each round in order, with the CPU step on its thread just before and after, and its page faults:", label);
    for (run = 0; run < e2e_runs; run++) {
        const e2e_fig *g = &figs[run];
        const double *step = random ? g->random_step : g->alone_step;
        long faults = random ? g->random_faults : g->alone_faults;
        printf("%s %.3f M writes/s (%.2f / %.2f ns", run ? "," : "", (random ? g->random_wps : g->alone_wps) / 1e6, step[0], step[1]);
        if (faults >= 0) printf(", %ld faults)", faults);
        else printf(")");
    }
    putchar('\n');
}

int main(int argc, char **argv) {
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL, *ms_e = NULL;
    static e2e_fig figs[2][E2E_MAX_RUNS];
    double vi[E2E_MAX_RUNS], vb[E2E_MAX_RUNS], steps[E2E_MAX_RUNS][2];
    int i, run, mode, contended = 0;
    uint64_t t_start = kctl_clock_now(NULL), seed = UINT64_C(0x9e3779b97f4a7c15);

    for (i = 1; i < argc; i++) {
        char *end = NULL;
        long n;
        if (strcmp(argv[i], "-C") == 0) {
            contended = 1;
            continue;
        }
        if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            n = strtol(argv[++i], &end, 10);
            if (*end == '\0' && end != argv[i] && n >= 1 && n <= E2E_MAX_RUNS) {
                e2e_runs = (int)n;
                continue;
            }
        }
        fprintf(stderr, "usage: %s [-C] [-r N]   (-C: every round idle, then with a busy-loop process; "
                        "-r: N rounds, 1-%d, 3 unless given)\n", argv[0], E2E_MAX_RUNS);
        return 2;
    }
    for (i = 0; i < E2E_OBJECTS; i++) e2e_perm[i] = i;
    for (i = E2E_OBJECTS - 1; i > 0; i--) { /* Fisher-Yates, a fixed seed: the same order in every run */
        int j = (int)(bench_xorshift(&seed) % (uint64_t)(i + 1)), t = e2e_perm[i];
        e2e_perm[i] = e2e_perm[j];
        e2e_perm[j] = t;
    }
    e2e_clock = kctl_clock_monotonic();
    e2e_cap = E2E_WRITES + E2E_OBJECTS;
    e2e_lat = (uint64_t *)malloc(e2e_cap * sizeof *e2e_lat);
    memset(&md, 0, sizeof md);
    /* room for the longest lag a round makes, d's 200,001 writes while
       the informer is paused (a watcher further behind is sent GONE),
       and no more: each event holds its object, and a ring of 2^20 kept
       about 400 MiB of old versions, every write a fresh allocation
       (page faults were a fifth of the writer's time in b) until it
       wrapped in the third round */
    md.history = 1u << 18;
    if (!e2e_lat || e2e_fill(&md, &ms) != KCTL_OK) return 1;
    printf("kctl %s end-to-end bench on the memstore: %d objects, %d writes, a history of %u events, median of %d rounds\n",
           kctl_version(), E2E_OBJECTS, E2E_WRITES, (unsigned)md.history, e2e_runs);
    bench_print_conditions(contended ? "idle and contended (each round again with a busy-loop child process, "
                                       "started and killed by the bench)"
                                     : "idle (no process started by the bench; ./bench-e2e -C for contended)");
    fflush(stdout);
    for (run = 0; run < e2e_runs; run++) {
        bench_steps(steps[run]);
        for (mode = 0; mode <= contended; mode++) {
            pid_t busy = mode == BENCH_CONTENDED ? bench_busy_start() : -1;
            int rc = e2e_round(ms, &figs[mode][run]);
            bench_busy_stop(busy);
            if (rc != 0) return 1;
        }
    }
    /* e's store, made once d's rounds are done (its objects would move
       where d's lie in the heap), from the memory they left */
    if (e2e_fill(&md, &ms_e) != KCTL_OK) return 1;
    for (run = 0; run < e2e_runs; run++) {
        for (mode = 0; mode <= contended; mode++) {
            pid_t busy = mode == BENCH_CONTENDED ? bench_busy_start() : -1;
            int rc = e2e_random(ms_e, &figs[mode][run]);
            bench_busy_stop(busy);
            if (rc != 0) return 1;
        }
    }
    printf("a. list and sync %d objects; resident set +%.1f MiB in the first round (%.0f bytes/object: cache, queue, handlers)\n",
           E2E_OBJECTS, (double)figs[0][0].rss_kib / 1024.0, (double)figs[0][0].rss_kib * 1024.0 / E2E_OBJECTS);
    E2E_COLLECT(sync_s, vi, 0); E2E_COLLECT(sync_s, vb, contended);
    e2e_line("a. list and sync", "s", vi, vb, contended, 1, "%.3f");
    E2E_COLLECT(first_s, vi, 0); E2E_COLLECT(first_s, vb, contended);
    e2e_line("a. the first 100,000 reconciles, 2 workers", "s", vi, vb, contended, 1, "%.3f");
    E2E_COLLECT(writer_wps, vi, 0); E2E_COLLECT(writer_wps, vb, contended);
    e2e_line("b. the writer into the store, flat out", "M writes/s", vi, vb, contended, 1e6, "%.3f");
    E2E_COLLECT(writer_cpu_wps, vi, 0); E2E_COLLECT(writer_cpu_wps, vb, contended);
    e2e_line("b. the same per second of the writer thread's own CPU time (less sensitive to other load)", "M writes/s", vi, vb,
             contended, 1e6, "%.3f");
    E2E_COLLECT(flat_eps, vi, 0); E2E_COLLECT(flat_eps, vb, contended);
    e2e_line("b. store + pipeline, flat out: events through to reconcile", "M events/s", vi, vb, contended, 1e6, "%.3f");
    E2E_COLLECT(sat_p50_ms, vi, 0); E2E_COLLECT(sat_p50_ms, vb, contended);
    e2e_line("b. write -> reconcile latency, saturated, p50", "ms", vi, vb, contended, 1, "%.2f");
    E2E_COLLECT(paced_p50_us, vi, 0); E2E_COLLECT(paced_p50_us, vb, contended);
    e2e_line("c. write -> reconcile latency, 10,000 writes/s, p50", "us", vi, vb, contended, 1, "%.1f");
    E2E_COLLECT(paced_p99_us, vi, 0); E2E_COLLECT(paced_p99_us, vb, contended);
    e2e_line("c. write -> reconcile latency, 10,000 writes/s, p99", "us", vi, vb, contended, 1, "%.1f");
    E2E_COLLECT(alone_eps, vi, 0); E2E_COLLECT(alone_eps, vb, contended);
    e2e_line("d. the pipeline alone (200,000 events queued while paused, then drained)", "M events/s", vi, vb, contended,
             1e6, "%.3f");
    E2E_COLLECT(alone_wps, vi, 0); E2E_COLLECT(alone_wps, vb, contended);
    e2e_line("d. the writer alone: d's 200,000 writes, made while the informer waits (no pipeline running)", "M writes/s", vi, vb,
             contended, 1e6, "%.3f");
    for (mode = 0; mode <= contended; mode++) /* the writer follows its CPU's speed: each round beside the step around it */
        e2e_rounds_line(figs[mode], 0, mode ? "d. the writer alone, contended" : "d. the writer alone");
    E2E_COLLECT(random_wps, vi, 0); E2E_COLLECT(random_wps, vb, contended);
    e2e_line("e. the writer alone, the keys in a random order: 200,000 writes a round into a second store, after d (no watcher)", "M writes/s", vi, vb,
             contended, 1e6, "%.3f");
    for (mode = 0; mode <= contended; mode++)
        e2e_rounds_line(figs[mode], 1, mode ? "e. the writer alone, contended" : "e. the writer alone");
    printf("cpu before each round, in order: a dependent step took");
    for (run = 0; run < e2e_runs; run++) {
        if (steps[run][1] > 0) printf("%s %.2f / %.2f ns", run ? "," : "", steps[run][0], steps[run][1]);
        else printf("%s %.2f ns", run ? "," : "", steps[run][0]);
    }
    if (steps[0][1] > 0) printf(" on CPUs %d / %d", bench_affinity_nth(0), bench_affinity_nth(1));
    printf(" (the rounds above are sorted by value, not in this order)\n");
    bench_print_steps("at the end");
    bench_print_reference("b 0.258 M events/s; c p50 92 us, p99 1,343 us idle, p50 75 us with a busy process; "
                          "d 0.315 M events/s; a 0.44 s sync, 0.037 s first reconciles");
    printf("   resident set now %.1f MiB (the two stores with their histories); bench time %.1f s\n", (double)rss_kib() / 1024.0,
           bench_seconds(t_start, kctl_clock_now(NULL)));
    kctl_memstore_destroy(ms);
    kctl_memstore_destroy(ms_e);
    free(e2e_lat);
    return 0;
}
