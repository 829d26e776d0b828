/* queue.c - work queue throughput figures (not tests): prints numbers, median of 3 runs */
/*
    a. 1,000,000 distinct keys through add -> get -> done: one producer (the
       main thread) adds while 1 (then 2) worker threads get + done; timed
       from the first add to the last done.
    b. 1,000 keys added 1,000 times each, round robin, while one worker
       drains: adds/s, and how many gets the worker made (dedup at work).
       Expect it to swing between runs: while the worker keeps pace, almost
       every add is a real add and is handed out (gets near 1,000,000); once
       the producer gets ahead, adds of a waiting key are de-duplicated
       (gets near 10,000) and adds/s rises about tenfold.
    c. 100,000 add_rate_limited -> get -> done -> forget cycles, single
       thread, limiter kctl_limiter_exponential(1 ns, 1 s).
    d. 100,000 add_after with random 0-10 ms delays (distinct keys) while one
       worker drains until all were handed out: adds/s and the drain time.
    r. the yardstick: a bare mutex + condition variable ring of pointers
       moving the same 1,000,000 keys from one producer to one consumer.
    Keys and delays are generated before timing; times come from
    kctl_clock_now(NULL) (CLOCK_MONOTONIC). Queues are unnamed, as
    client-go's workqueue.New() is, so they keep no duration metrics; one
    extra line repeats a (1 worker) on a named queue, which does.

    a pinned: a (1 worker) again with the producer and the worker pinned to
       two different CPUs, then both to one CPU, where the affinity allows:
       the queue's hand-off across cores, and on one core.

    Build: cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -pthread bench/queue.c -o bench_queue
    Run:   ./bench_queue        full sizes (well under 30 s idle)
           ./bench_queue -q     each figure's work / 100 (for valgrind or ASan)
           ./bench_queue -C     each round idle, then with a busy-loop child
                                process (started and killed by the bench):
                                the figures side by side
*/
#define _GNU_SOURCE 1 /* sched_getaffinity / sched_setaffinity: conditions and pinned runs */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static int bench_worker_cpu = -1;           /* >= 0: workers pin themselves there */

/* Sizes; -q divides the work of each figure by 100 (b: 100 keys x 100 adds). */
static uint32_t bench_n_a = 1000000;       /* a: distinct keys */
static uint32_t bench_n_b_keys = 1000;     /* b: keys ... */
static uint32_t bench_n_b_rounds = 1000;   /* b: ... each added this often */
static uint32_t bench_n_c = 100000;        /* c: cycles */
static uint32_t bench_n_d = 100000;        /* d: delayed keys */

static char **bench_keys;                  /* "ns/obj-%07d", bench_n_a of them */
static char *bench_key_text;

/* ------------------------------------------------------------------ helpers */

static int bench_make_keys(void)
{
    uint32_t i;
    const size_t w = 24; /* "ns/obj-" + 7 digits + NUL = 15; room for the compiler's worst case */
    bench_key_text = (char *)malloc((size_t)bench_n_a * w);
    bench_keys = (char **)malloc((size_t)bench_n_a * sizeof *bench_keys);
    if (!bench_key_text || !bench_keys)
        return -1;
    for (i = 0; i < bench_n_a; i++) {
        bench_keys[i] = bench_key_text + (size_t)i * w;
        snprintf(bench_keys[i], w, "ns/obj-%07lu", (unsigned long)i);
    }
    return 0;
}

/* name NULL: an unnamed queue, which (like client-go's) keeps no duration
   metrics; a name turns them on, at the cost of clock reads per item. */
static int bench_create(kctl_queue **q, kctl_limiter *limiter, const char *name)
{
    kctl_queue_desc desc = kctl_queue_desc_init();
    int rc;
    if (name)
        desc.name = name;
    desc.limiter = limiter;
    rc = kctl_queue_create(&desc, q);
    if (rc != KCTL_OK)
        fprintf(stderr, "bench: kctl_queue_create: %s\n", kctl_strerror(rc));
    return rc;
}

/* ------------------------------------------------------------------ workers */

typedef struct bench_worker {
    kctl_queue *q;
    uint64_t stop_after;  /* 0: until get fails; n: return after n gets */
    uint64_t gets;
    uint64_t t_end;       /* clock after the last done */
    int rc;               /* the get result that ended the loop (OK after stop_after) */
    int finished;         /* under bench_lock */
    pthread_t thread;
} bench_worker;

static pthread_mutex_t bench_lock = PTHREAD_MUTEX_INITIALIZER;

static void *bench_worker_main(void *arg)
{
    bench_worker *w = (bench_worker *)arg;
    const char *key;
    int rc;
    if (bench_worker_cpu >= 0)
        bench_pin(bench_worker_cpu);
    while ((rc = kctl_queue_get(w->q, &key)) == KCTL_OK) {
        kctl_queue_done(w->q, key);
        w->gets++;
        if (w->stop_after && w->gets == w->stop_after)
            break;
    }
    w->t_end = kctl_clock_now(NULL);
    w->rc = rc;
    pthread_mutex_lock(&bench_lock);
    w->finished = 1;
    pthread_mutex_unlock(&bench_lock);
    return NULL;
}

/* Start n workers on q; on failure joins the ones started (after shutdown). */
static int bench_start(bench_worker *ws, int n, kctl_queue *q, uint64_t stop_after)
{
    int i, err;
    kctl_queue_stats st;
    struct timespec pause = { 0, 100000 }; /* 0.1 ms */
    for (i = 0; i < n; i++) {
        memset(&ws[i], 0, sizeof ws[i]);
        ws[i].q = q;
        ws[i].stop_after = stop_after;
        err = pthread_create(&ws[i].thread, NULL, bench_worker_main, &ws[i]);
        if (err != 0) {
            fprintf(stderr, "bench: pthread_create: %s\n", strerror(err));
            kctl_queue_shutdown(q);
            while (i-- > 0)
                pthread_join(ws[i].thread, NULL);
            return -1;
        }
    }
    /* Let the workers reach get and park, so that no run pays for thread start. */
    for (i = 0; i < 2000; i++) {
        if (kctl_queue_read_stats(q, &st) == KCTL_OK && st.idle_workers >= (uint32_t)n)
            break;
        nanosleep(&pause, NULL);
    }
    return 0;
}

/* Join n workers; returns the latest t_end and the sum of gets. */
static void bench_join(bench_worker *ws, int n, uint64_t *t_end, uint64_t *gets)
{
    int i;
    *t_end = 0;
    *gets = 0;
    for (i = 0; i < n; i++) {
        pthread_join(ws[i].thread, NULL);
        if (ws[i].t_end > *t_end)
            *t_end = ws[i].t_end;
        *gets += ws[i].gets;
    }
}

/* ---------------------------------------------------- a. add -> get -> done */

static double bench_last_backlog;  /* a: keys ready when the producer's last add returned, in the last run */

/* Items/s for bench_n_a distinct keys with nworkers; < 0 on error. */
static double bench_a(int nworkers, const char *name)
{
    bench_worker ws[2];
    kctl_queue *q;
    uint64_t t0, t_end, gets;
    uint32_t i;
    int rc, bad = 0;

    if (bench_create(&q, NULL, name) != KCTL_OK)
        return -1;
    if (bench_start(ws, nworkers, q, 0) != 0) {
        kctl_queue_destroy(q);
        return -1;
    }
    t0 = kctl_clock_now(NULL);
    for (i = 0; i < bench_n_a; i++) {
        rc = kctl_queue_add(q, bench_keys[i]);
        if (rc != KCTL_OK && !bad) {
            fprintf(stderr, "bench a: kctl_queue_add: %s\n", kctl_strerror(rc));
            bad = 1;
        }
    }
    bench_last_backlog = (double)kctl_queue_len(q); /* (one hold of the lock, inside the timed run) */
    kctl_queue_shutdown(q); /* workers still get every queued key, then SHUTDOWN */
    bench_join(ws, nworkers, &t_end, &gets);
    kctl_queue_destroy(q);
    if (gets != bench_n_a) {
        fprintf(stderr, "bench a: %d worker(s) got %llu keys, expected %lu\n",
                nworkers, (unsigned long long)gets, (unsigned long)bench_n_a);
        bad = 1;
    }
    return bad ? -1 : (double)bench_n_a / bench_seconds(t0, t_end);
}

/* --------------------------------------------- b. the same keys added again */

static double bench_b(uint64_t *gets_out)
{
    bench_worker w;
    kctl_queue *q;
    uint64_t t0, t1, t_end;
    uint32_t r, k;
    int rc, bad = 0;

    if (bench_create(&q, NULL, NULL) != KCTL_OK)
        return -1;
    if (bench_start(&w, 1, q, 0) != 0) {
        kctl_queue_destroy(q);
        return -1;
    }
    t0 = kctl_clock_now(NULL);
    for (r = 0; r < bench_n_b_rounds; r++) {
        for (k = 0; k < bench_n_b_keys; k++) {
            rc = kctl_queue_add(q, bench_keys[k]);
            if (rc != KCTL_OK && !bad) {
                fprintf(stderr, "bench b: kctl_queue_add: %s\n", kctl_strerror(rc));
                bad = 1;
            }
        }
    }
    t1 = kctl_clock_now(NULL);
    kctl_queue_shutdown(q);
    bench_join(&w, 1, &t_end, gets_out);
    kctl_queue_destroy(q);
    if (*gets_out < bench_n_b_keys) {
        fprintf(stderr, "bench b: the worker got %llu keys, fewer than the %lu distinct ones\n",
                (unsigned long long)*gets_out, (unsigned long)bench_n_b_keys);
        bad = 1;
    }
    return bad ? -1 : (double)bench_n_b_rounds * bench_n_b_keys / bench_seconds(t0, t1);
}

/* ------------------------------------------- c. add_rate_limited + forget */

static double bench_c(void)
{
    kctl_limiter *lim = kctl_limiter_exponential(1, KCTL_SEC(1));
    kctl_queue *q;
    const char *key;
    uint64_t t0, t1;
    uint32_t i;
    int rc;

    if (!lim) {
        fprintf(stderr, "bench c: kctl_limiter_exponential(1, 1 s) returned NULL\n");
        return -1;
    }
    if (bench_create(&q, lim, NULL) != KCTL_OK) /* owns lim from here, even on failure */
        return -1;
    t0 = kctl_clock_now(NULL);
    for (i = 0; i < bench_n_c; i++) {
        rc = kctl_queue_add_rate_limited(q, bench_keys[i]);
        if (rc == KCTL_OK)
            rc = kctl_queue_get(q, &key); /* the 1 ns delay has passed, or get waits for it */
        if (rc != KCTL_OK) {
            fprintf(stderr, "bench c: cycle %lu: %s\n", (unsigned long)i, kctl_strerror(rc));
            kctl_queue_destroy(q);
            return -1;
        }
        if (strcmp(key, bench_keys[i]) != 0) {
            fprintf(stderr, "bench c: cycle %lu: got %s, expected %s\n", (unsigned long)i, key, bench_keys[i]);
            kctl_queue_destroy(q);
            return -1;
        }
        kctl_queue_done(q, key);
        kctl_queue_forget(q, bench_keys[i]);
    }
    t1 = kctl_clock_now(NULL);
    kctl_queue_destroy(q);
    return (double)bench_n_c / bench_seconds(t0, t1);
}

/* ------------------------------------------------ d. add_after, then drain */

static double bench_d(const uint64_t *delays, double *drain_s)
{
    bench_worker w;
    kctl_queue *q;
    uint64_t t0, t1, t_end, gets, deadline;
    uint32_t i;
    int rc, bad = 0, finished = 0;
    struct timespec pause = { 0, 200000 }; /* 0.2 ms */

    if (bench_create(&q, NULL, NULL) != KCTL_OK)
        return -1;
    if (bench_start(&w, 1, q, bench_n_d) != 0) {
        kctl_queue_destroy(q);
        return -1;
    }
    t0 = kctl_clock_now(NULL);
    for (i = 0; i < bench_n_d; i++) {
        rc = kctl_queue_add_after(q, bench_keys[i], delays[i]);
        if (rc != KCTL_OK && !bad) {
            fprintf(stderr, "bench d: kctl_queue_add_after: %s\n", kctl_strerror(rc));
            bad = 1;
        }
    }
    t1 = kctl_clock_now(NULL);
    /* The worker stops by itself after bench_n_d gets; if keys were lost it
       would wait for ever, so give it 10 s and then shut the queue down. */
    deadline = t1 + KCTL_SEC(10);
    while (!finished && kctl_clock_now(NULL) < deadline) {
        nanosleep(&pause, NULL);
        pthread_mutex_lock(&bench_lock);
        finished = w.finished;
        pthread_mutex_unlock(&bench_lock);
    }
    if (!finished)
        kctl_queue_shutdown(q);
    bench_join(&w, 1, &t_end, &gets);
    kctl_queue_destroy(q);
    if (gets != bench_n_d) {
        fprintf(stderr, "bench d: the worker got %llu keys in 10 s, expected %lu\n",
                (unsigned long long)gets, (unsigned long)bench_n_d);
        bad = 1;
    }
    *drain_s = bench_seconds(t0, t_end);
    return bad ? -1 : (double)bench_n_d / bench_seconds(t0, t1);
}

/* ---------------------------------------------------------------------- main */

/* ------------------------------------- r. the yardstick: a bare ring buffer */

/* A bare mutex + condition variable ring of pointers, one producer, one
   consumer, waking only a waiting side: the issue measured 6-8 M items/s
   for such a ring on the machine where client-go did 1.3-1.8 M. This
   machine's cross-core latency varies a lot from boot to boot (the two
   vCPUs may or may not share a core), so the ring, measured in the same
   run, puts the queue's figure in proportion. */
#define BENCH_RING_CAP 4096
typedef struct bench_ring {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    void *slot[BENCH_RING_CAP];
    size_t head, tail;
    int waiting_producer, waiting_consumer, closed;
} bench_ring;

static bench_ring bench_r;

static void *bench_ring_consumer(void *arg)
{
    bench_ring *r = &bench_r;
    uint64_t n = 0;
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (r->head == r->tail && !r->closed) {
            r->waiting_consumer++;
            pthread_cond_wait(&r->not_empty, &r->mu);
            r->waiting_consumer--;
        }
        if (r->head == r->tail) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        r->head++;
        n++;
        if (r->waiting_producer)
            pthread_cond_signal(&r->not_full);
        pthread_mutex_unlock(&r->mu);
    }
    return (void *)(uintptr_t)n;
}

static double bench_ring_run(void)
{
    bench_ring *r = &bench_r;
    pthread_t t;
    void *got;
    uint64_t t0;
    uint32_t i;
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->not_empty, NULL);
    pthread_cond_init(&r->not_full, NULL);
    if (pthread_create(&t, NULL, bench_ring_consumer, NULL) != 0)
        return -1;
    t0 = kctl_clock_now(NULL);
    for (i = 0; i < bench_n_a; i++) {
        pthread_mutex_lock(&r->mu);
        while (r->tail - r->head == BENCH_RING_CAP) {
            r->waiting_producer++;
            pthread_cond_wait(&r->not_full, &r->mu);
            r->waiting_producer--;
        }
        r->slot[r->tail++ % BENCH_RING_CAP] = bench_keys[i];
        if (r->waiting_consumer)
            pthread_cond_signal(&r->not_empty);
        pthread_mutex_unlock(&r->mu);
    }
    pthread_mutex_lock(&r->mu);
    r->closed = 1;
    pthread_cond_signal(&r->not_empty);
    pthread_mutex_unlock(&r->mu);
    pthread_join(t, &got);
    pthread_cond_destroy(&r->not_full);
    pthread_cond_destroy(&r->not_empty);
    pthread_mutex_destroy(&r->mu);
    if ((uint64_t)(uintptr_t)got != bench_n_a)
        return -1;
    return (double)bench_n_a / bench_seconds(t0, kctl_clock_now(NULL));
}

/* ---------------------------------------------- figures, idle and contended */

static uint64_t *bench_delays;
static double bench_last_gets;     /* b: the worker's gets in the last run */
static double bench_last_drain;    /* d: the drain time of the last run */
static int bench_pin_producer = -1, bench_pin_worker = -1;

static double fig_a1(void) { return bench_a(1, NULL); }
static double fig_a2(void) { return bench_a(2, NULL); }
static double fig_an(void) { return bench_a(1, "bench"); }
static double fig_b(void)
{
    uint64_t gets = 0;
    double v = bench_b(&gets);
    bench_last_gets = (double)gets;
    return v;
}
static double fig_c(void) { return bench_c(); }
static double fig_d(void) { return bench_d(bench_delays, &bench_last_drain); }
static double fig_r(void) { return bench_ring_run(); }
static double fig_a1_pinned(void)
{
    double v;
    bench_pin(bench_pin_producer);
    bench_worker_cpu = bench_pin_worker;
    v = bench_a(1, NULL);
    bench_worker_cpu = -1;
    bench_unpin();
    return v;
}

/* Run fn BENCH_RUNS times (and, contended, each run again with a busy
   process); print "label: idle M unit (runs) | contended M unit (runs)".
   side[] (may be NULL) gets a second figure per run (b's gets, d's drain)
   for the idle runs, in run order. Returns the idle median, < 0 on error. */
static double bench_fig(const char *label, double (*fn)(void), int contended, double scale, const char *unit,
                        double *side_idle, double *side_busy, double *side_src)
{
    double v[2][BENCH_RUNS], m;
    int run, mode;
    for (run = 0; run < BENCH_RUNS; run++) {
        for (mode = 0; mode <= contended; mode++) {
            pid_t busy = mode == BENCH_CONTENDED ? bench_busy_start() : -1;
            v[mode][run] = fn();
            bench_busy_stop(busy);
            if (v[mode][run] < 0)
                return -1;
            if (side_src)
                (mode ? side_busy : side_idle)[run] = *side_src;
        }
    }
    m = bench_median(v[0]);
    printf("%s: idle %.2f%s%s ", label, m / scale, *unit ? " " : "", unit);
    bench_print_runs(v[0], scale, "%.2f");
    if (contended) {
        printf(" | contended %.2f%s%s ", bench_median(v[1]) / scale, *unit ? " " : "", unit);
        bench_print_runs(v[1], scale, "%.2f");
    }
    putchar('\n');
    fflush(stdout);
    return m;
}

/* A side figure of each run, in run order: "   what: idle n n n | contended n n n". */
static void bench_print_side(const char *what, const double *idle, const double *busy, int contended)
{
    int run;
    printf("   %s: idle", what);
    for (run = 0; run < BENCH_RUNS; run++)
        printf(" %.0f", idle[run]);
    if (contended) {
        printf(" | contended");
        for (run = 0; run < BENCH_RUNS; run++)
            printf(" %.0f", busy[run]);
    }
    putchar('\n');
}

/* a's side figure: how far behind the worker was when the adds ended. A
   worker that keeps pace takes each key while its entry is warm; one
   that falls behind holds the keys in a grown map, in entries the
   producer allocated: the run then measures memory and the allocator
   as much as the hand-off. */
#define BENCH_BACKLOG "keys waiting when the producer's last add returned, in run order"

int main(int argc, char **argv)
{
    double side_i[BENCH_RUNS], side_b[BENCH_RUNS];
    uint64_t seed = UINT64_C(0x9E3779B97F4A7C15), t_start = kctl_clock_now(NULL);
    uint32_t i;
    int quick = 0, contended = 0, cpu0, cpu1;
    char label[160];

    for (i = 1; i < (uint32_t)argc; i++) {
        if (strcmp(argv[i], "-q") == 0)
            quick = 1;
        else if (strcmp(argv[i], "-C") == 0)
            contended = 1;
        else {
            fprintf(stderr, "usage: %s [-q] [-C]   (-q: each figure's work / 100; -C: idle and contended)\n", argv[0]);
            return 2;
        }
    }
    if (quick) {
        bench_n_a /= 100;
        bench_n_b_keys /= 10;
        bench_n_b_rounds /= 10;
        bench_n_c /= 100;
        bench_n_d /= 100;
    }
    if (bench_make_keys() != 0 || !(bench_delays = (uint64_t *)malloc(bench_n_d * sizeof *bench_delays))) {
        fprintf(stderr, "bench: out of memory\n");
        return 1;
    }
    for (i = 0; i < bench_n_d; i++)
        bench_delays[i] = bench_xorshift(&seed) % (KCTL_MS(10) + 1); /* uniform 0..10 ms in ns */

    printf("kctl %s queue bench%s: CLOCK_MONOTONIC, median of %d runs\n", kctl_version(), quick ? " (quick: work / 100)" : "",
           BENCH_RUNS);
    bench_print_conditions(contended ? "idle and contended (each run again with a busy-loop child process, "
                                       "started and killed by the bench)"
                                     : "idle (no process started by the bench; ./bench-queue -C for contended)");
    fflush(stdout);

    snprintf(label, sizeof label, "a. add->get->done, 1 worker [%lu distinct keys], M items/s", (unsigned long)bench_n_a);
    if (bench_fig(label, fig_a1, contended, 1e6, "", side_i, side_b, &bench_last_backlog) < 0) return 1;
    bench_print_side(BENCH_BACKLOG, side_i, side_b, contended);
    if (bench_fig("a. add->get->done, 2 workers, M items/s", fig_a2, contended, 1e6, "", NULL, NULL, NULL) < 0) return 1;
    if (bench_fig("a. add->get->done, 1 worker, named queue (duration metrics on), M items/s", fig_an, contended, 1e6, "",
                  NULL, NULL, NULL) < 0) return 1;
    cpu0 = bench_affinity_nth(0);
    cpu1 = bench_affinity_nth(1);
    if (cpu0 >= 0 && cpu1 >= 0) {
        bench_pin_producer = cpu0;
        bench_pin_worker = cpu1;
        snprintf(label, sizeof label, "a pinned. 1 worker, producer on CPU %d, worker on CPU %d, M items/s", cpu0, cpu1);
        if (bench_fig(label, fig_a1_pinned, contended, 1e6, "", side_i, side_b, &bench_last_backlog) < 0) return 1;
        bench_print_side(BENCH_BACKLOG, side_i, side_b, contended);
    }
    if (cpu0 >= 0) {
        bench_pin_producer = bench_pin_worker = cpu0;
        snprintf(label, sizeof label, "a pinned. 1 worker, producer and worker both on CPU %d, M items/s", cpu0);
        if (bench_fig(label, fig_a1_pinned, contended, 1e6, "", NULL, NULL, NULL) < 0) return 1;
    } else {
        printf("a pinned: skipped (no CPU affinity here)\n");
    }
    snprintf(label, sizeof label, "b. %lu keys x %lu adds, 1 worker draining, M adds/s", (unsigned long)bench_n_b_keys,
             (unsigned long)bench_n_b_rounds);
    if (bench_fig(label, fig_b, contended, 1e6, "", side_i, side_b, &bench_last_gets) < 0) return 1;
    bench_print_side("b's worker gets, in run order (dedup at work)", side_i, side_b, contended);
    snprintf(label, sizeof label, "c. add_rate_limited->get->done->forget, exponential(1 ns, 1 s), 1 thread [%lu cycles], M cycles/s",
             (unsigned long)bench_n_c);
    if (bench_fig(label, fig_c, contended, 1e6, "", NULL, NULL, NULL) < 0) return 1;
    snprintf(label, sizeof label, "d. add_after random 0-10 ms, 1 worker draining [%lu keys], M adds/s", (unsigned long)bench_n_d);
    if (bench_fig(label, fig_d, contended, 1e6, "", side_i, side_b, &bench_last_drain) < 0) return 1;
    printf("   d's drain, ms: idle %.1f ", bench_median(side_i) * 1e3);
    bench_print_runs(side_i, 1e-3, "%.1f");
    if (contended) {
        printf(" | contended %.1f ", bench_median(side_b) * 1e3);
        bench_print_runs(side_b, 1e-3, "%.1f");
    }
    putchar('\n');
    if (bench_fig("r. yardstick: bare mutex+condvar ring of pointers, 1 producer, 1 consumer, M items/s", fig_r, contended,
                  1e6, "", NULL, NULL, NULL) < 0) return 1;

    bench_print_steps("at the end");
    bench_print_reference("queue a 1.90 M items/s with 1 worker, 2.70 with 2; c 1.01 M cycles/s; d drained in 123 ms");
    printf("bench time %.1f s\n", bench_seconds(t_start, kctl_clock_now(NULL)));

    free(bench_delays);
    free(bench_keys);
    free(bench_key_text);
    return 0;
}
