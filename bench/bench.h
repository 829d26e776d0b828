/* bench.h - what the benchmarks share: runs, medians, printing. Include
   after kctl.h and the C headers (stdio, stdlib). */
#ifndef KCTL_BENCH_H
#define KCTL_BENCH_H

#define BENCH_RUNS 3

/* A bench uses some of these helpers: the others must not warn. */
#if defined(__GNUC__) || defined(__clang__)
#define BENCH_UNUSED __attribute__((unused))
#else
#define BENCH_UNUSED
#endif

BENCH_UNUSED static double bench_seconds(uint64_t t0, uint64_t t1)
{
    return (double)(t1 - t0) / 1e9;
}

BENCH_UNUSED static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Sorts v[0..n) and returns its median (n > 0; even n: the upper one). */
BENCH_UNUSED static double bench_median_n(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
    return v[n / 2];
}

/* Sorts v[0..BENCH_RUNS) and returns its median. */
BENCH_UNUSED static double bench_median(double *v)
{
    return bench_median_n(v, BENCH_RUNS);
}

/* Sorts v ascending, carrying the matching n[] along. */
BENCH_UNUSED static void bench_sort_pairs(double *v, uint64_t *n)
{
    int i, j;
    for (i = 1; i < BENCH_RUNS; i++) {
        for (j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double tv = v[j];
            uint64_t tn = n[j];
            v[j] = v[j - 1];
            n[j] = n[j - 1];
            v[j - 1] = tv;
            n[j - 1] = tn;
        }
    }
}

/* "(median of n: v[0] ... v[n-1])", each value divided by scale. */
BENCH_UNUSED static void bench_print_runs_n(const double *v, int n, double scale, const char *fmt)
{
    int i;
    printf("(median of %d:", n);
    for (i = 0; i < n; i++) {
        putchar(' ');
        printf(fmt, v[i] / scale);
    }
    putchar(')');
}

BENCH_UNUSED static void bench_print_runs(const double *v, double scale, const char *fmt)
{
    bench_print_runs_n(v, BENCH_RUNS, scale, fmt);
}

/* xorshift64 (Marsaglia); state must not be 0. */
BENCH_UNUSED static uint64_t bench_xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}


/* ---- conditions: what a figure was taken under, and contention.
   Everything below is optional for a bench (unused helpers do not warn).
   The CPU affinity needs _GNU_SOURCE before the first include (e2e.c and
   queue.c define it); without it only the CPUs online are known. */
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#include <sys/prctl.h>
#endif
#include <pthread.h>

/* CPUs this process may run on (its affinity), or -1 if unknown. */
BENCH_UNUSED static int bench_affinity_cpus(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
#endif
    return -1;
}

/* The i-th CPU (from 0) this process may run on, or -1. */
BENCH_UNUSED static int bench_affinity_nth(int i)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    int c;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set) && i-- == 0)
            return c;
#else
    (void)i;
#endif
    return -1;
}

#if defined(__linux__) && defined(CPU_COUNT)
static cpu_set_t bench_saved_set;
static int bench_saved;
#endif

/* Pin the calling thread to cpu (-1: leave it). 0 on success. */
BENCH_UNUSED static int bench_pin(int cpu)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (cpu < 0)
        return -1;
    if (!bench_saved && sched_getaffinity(0, sizeof bench_saved_set, &bench_saved_set) == 0)
        bench_saved = 1;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -1;
#else
    (void)cpu;
    return -1;
#endif
}

/* The calling thread back on the CPUs it had before bench_pin. */
BENCH_UNUSED static void bench_unpin(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    if (bench_saved)
        sched_setaffinity(0, sizeof bench_saved_set, &bench_saved_set);
#endif
}

/* The 1-minute load average, or -1. */
BENCH_UNUSED static double bench_loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1;
        fclose(f);
    }
    return l;
}

/* ns per load of a chain of dependent loads, one per 64-byte line, in a
   random single cycle over bytes of memory (Sattolo's shuffle); < 0
   without the memory. */
BENCH_UNUSED static double bench_chase_ns(size_t bytes, long loads)
{
    size_t n = bytes / 64, i, j, t, p = 0, *idx = (size_t *)malloc(n * sizeof *idx);
    char *buf = (char *)malloc(bytes);
    uint64_t x = UINT64_C(0x9E3779B97F4A7C15), t0, t1;
    long k;
    if (!idx || !buf || n < 2) {
        free(idx);
        free(buf);
        return -1;
    }
    for (i = 0; i < n; i++)
        idx[i] = i;
    for (i = n - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        j = (size_t)(x % i);
        t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    for (i = 0; i < n; i++)
        memcpy(buf + idx[i] * 64, &idx[(i + 1) % n], sizeof(size_t));
    for (k = 0; k < loads / 4; k++) /* warm: the pages are touched, the TLB as it will be */
        memcpy(&p, buf + p * 64, sizeof p);
    t0 = kctl_clock_now(NULL);
    for (k = 0; k < loads; k++)
        memcpy(&p, buf + p * 64, sizeof p);
    t1 = kctl_clock_now(NULL);
    free(idx);
    free(buf);
    return p < n ? (double)(t1 - t0) / (double)loads : -1; /* (p used: the chain is not optimised away) */
}

/* One line: the machine's memory latency, a yardstick for comparing
   figures across machines and days. A cache get, the writer and the
   pipeline wait on memory: the same code's get by key ran 27 M/s on one
   2-CPU host and 8 M/s on another (157 ns per load in 32 MiB), days
   apart. */
BENCH_UNUSED static void bench_print_memory(void)
{
    double l2 = bench_chase_ns((size_t)1 << 20, 2000000L), big = bench_chase_ns((size_t)32 << 20, 1000000L);
    printf("memory: a dependent load takes %.1f ns in 1 MiB, %.1f ns in 32 MiB (random lines; "
           "figures from hosts whose loads differ are not comparable)\n", l2, big);
}

/* The cross-CPU hand-off: two threads, pinned to the first two CPUs of
   the affinity, pass a counter back and forth (each waits for the other's
   write, then writes). A queue's add -> get moves lines between its
   producer's CPU and its worker's this way, so queue a follows this
   figure more than the memory line: on one host of this kind, single
   passes read from 55 to about 300 ns across a day, with whatever decides
   where the virtual CPUs sit. Each side stops after 50 ms of waiting in all (a CPU
   held by another process: the pass is then not timed). */
#define BENCH_HANDOFFS 20000L
typedef struct bench_handoff {
    unsigned turn; /* even: the first thread's turn to write, odd: the second's */
    int cpu, done;
} bench_handoff;

BENCH_UNUSED static int bench_handoff_pass(bench_handoff *h, int side)
{
    uint64_t end = kctl_clock_now(NULL) + 50000000u;
    long k;
    for (k = 0; k < BENCH_HANDOFFS; k++) {
        unsigned want = (unsigned)(2 * k + side), i = 0;
        while (__atomic_load_n(&h->turn, __ATOMIC_ACQUIRE) != want)
            if ((++i & 1023) == 0 && kctl_clock_now(NULL) > end)
                return -1;
        __atomic_store_n(&h->turn, want + 1, __ATOMIC_RELEASE);
    }
    return 0;
}

BENCH_UNUSED static void *bench_handoff_thread(void *arg)
{
    bench_handoff *h = (bench_handoff *)arg;
    if (bench_pin(h->cpu) != 0 || bench_handoff_pass(h, 1) != 0)
        __atomic_store_n(&h->done, -1, __ATOMIC_RELEASE);
    return NULL;
}

/* ns a line takes to go from one CPU to the other (half a round trip), or
   < 0 (one CPU, no pinning, or a side that waited too long). */
BENCH_UNUSED static double bench_handoff_ns(void)
{
    bench_handoff h;
    pthread_t t;
    uint64_t t0, t1;
    int a = bench_affinity_nth(0), b = bench_affinity_nth(1), rc;
    if (a < 0 || b < 0)
        return -1;
    memset(&h, 0, sizeof h);
    h.cpu = b;
    rc = bench_pin(a); /* first: bench_pin keeps the affinity to restore once, before the other thread pins itself */
    if (pthread_create(&t, NULL, bench_handoff_thread, &h) != 0) {
        bench_unpin();
        return -1;
    }
    t0 = kctl_clock_now(NULL);
    if (rc == 0)
        rc = bench_handoff_pass(&h, 0);
    t1 = kctl_clock_now(NULL);
    if (rc != 0) /* the other side may still wait for a turn that will not come: its own bound ends it */
        __atomic_store_n(&h.done, -1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    bench_unpin();
    if (rc != 0 || __atomic_load_n(&h.done, __ATOMIC_ACQUIRE) != 0)
        return -1;
    return (double)(t1 - t0) / (2.0 * (double)BENCH_HANDOFFS);
}

/* One line: the cross-CPU hand-off, the median of 5 passes (a pass now
   and then runs at half or twice the others). */
BENCH_UNUSED static void bench_print_handoff(void)
{
    double h[5];
    int i;
    for (i = 0; i < 5; i++)
        if ((h[i] = bench_handoff_ns()) <= 0)
            break;
    if (i == 5) {
        qsort(h, 5, sizeof h[0], bench_cmp_double);
        printf("cross-CPU: a cache line handed between CPUs %d and %d takes %.0f ns one way (5 passes: %.0f-%.0f; the "
               "queue's add -> get crosses this way; hosts whose hand-offs differ are not comparable)\n",
               bench_affinity_nth(0), bench_affinity_nth(1), h[2], h[0], h[4]);
    } else {
        printf("cross-CPU: not measured (one CPU, no pinning, or a CPU held by another process)\n");
    }
}

/* ns per step of a chain of dependent multiply-adds and shifts on the
   calling thread (20 M steps, about 20 ms): how fast the host runs this
   CPU now. No memory is touched, so it moves only with the CPU's own
   speed: on one host of this kind it read 0.86 ns at full speed and
   1.0-1.3 ns in phases of seconds when the host ran that virtual CPU
   slower (a shared core or a lower clock: the guest cannot tell which),
   and a bare harness of bench-e2e's writer ran 0.65-0.83 and 0.42-0.62
   M writes/s in the two. */
BENCH_UNUSED static double bench_step_ns(void)
{
    volatile uint64_t sink;
    uint64_t h = 1, k, t0 = kctl_clock_now(NULL);
    for (k = 0; k < 20000000u; k++)
        h = h * 31 + (k ^ (h >> 7));
    sink = h;
    (void)sink;
    return (double)(kctl_clock_now(NULL) - t0) / 2e7;
}

/* The step on each of the first two CPUs of the affinity, pinned in
   turn (out[1] < 0 with one CPU or without pinning; out[0] is then taken
   wherever the thread runs). */
BENCH_UNUSED static void bench_steps(double out[2])
{
    int cpu[2], i;
    cpu[0] = bench_affinity_nth(0); /* both before the first pin narrows the affinity */
    cpu[1] = bench_affinity_nth(1);
    out[1] = -1;
    for (i = 0; i < 2; i++) {
        if (bench_pin(cpu[i]) != 0 && i > 0)
            break;
        out[i] = bench_step_ns();
    }
    bench_unpin();
}

/* One line: the step on each CPU, `when` (a figure taken while a CPU
   read slower than its best is the host's, not the code's). */
BENCH_UNUSED static void bench_print_steps(const char *when)
{
    double s[2];
    bench_steps(s);
    if (s[1] > 0)
        printf("cpu %s: a dependent step takes %.2f ns on CPU %d, %.2f ns on CPU %d (no memory touched: a CPU above its "
               "best reading is one the host runs slower now, or one another process shares)\n",
               when, s[0], bench_affinity_nth(0), s[1], bench_affinity_nth(1));
    else
        printf("cpu %s: a dependent step takes %.2f ns (one CPU, or not pinned)\n", when, s[0]);
}

/* One line: CPUs online, the affinity, the load average, the mode; then
   the CPU steps, the memory line and the cross-CPU hand-off. */
BENCH_UNUSED static void bench_print_conditions(const char *mode)
{
    printf("conditions: %ld CPUs online, affinity %d CPUs, load average %.2f at start, %s\n",
           sysconf(_SC_NPROCESSORS_ONLN), bench_affinity_cpus(), bench_loadavg(), mode);
    bench_print_steps("at the start");
    bench_print_memory();
    bench_print_handoff();
}

/* A child process that keeps one CPU busy (the busy loop) until
   bench_busy_stop; it dies with the bench. Its pid, or -1. */
BENCH_UNUSED static pid_t bench_busy_start(void)
{
    pid_t pid;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        volatile unsigned long x = 0;
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
        for (;;)
            x++;
    }
    if (pid > 0) { /* let it reach its loop */
        struct timespec ts = { 0, 20000000L };
        nanosleep(&ts, NULL);
    }
    return pid;
}

BENCH_UNUSED static void bench_busy_stop(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

/* The client-go figures, printed as such: not measured here, no verdict. */
BENCH_UNUSED static void bench_print_reference(const char *text)
{
    printf("reference, not measured here: %s (measured by issue 11's author on 2026-11, client-go v0.26.15, "
           "Go 1.19, GOMAXPROCS=2, on a 2-CPU machine like this one)\n", text);
}

/* -C: every figure idle and with a busy process, side by side. */
#define BENCH_IDLE 0
#define BENCH_CONTENDED 1
#endif
