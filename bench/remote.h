/* remote.h - what the remote-store benchmarks (bench/etcd.c, bench/kube.c)
   share: the monotonic clock, a counting allocator, nearest-rank
   percentiles, this process's CPU time and the busy core. Include after
   bench.h and the POSIX headers they use (sched.h, signal.h, sys/prctl.h,
   sys/resource.h, time.h, unistd.h). */
#ifndef KCTL_BENCH_REMOTE_H
#define KCTL_BENCH_REMOTE_H

static uint64_t rb_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void rb_sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* This process's CPU time (user + system), in seconds. */
static double rb_self_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec + ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* ---- a counting allocator: what goes through kctl's hooks (each block
   carries its size in a 16-byte header, which the resident set counts too) */
static struct {
    uint64_t live, peak, allocs, blocks; /* atomic; blocks: live ones */
} rb_mem;

static void *rb_alloc(size_t n, void *ud) {
    unsigned char *p = (unsigned char *)malloc(n + 16);
    uint64_t live, peak;
    (void)ud;
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    live = __atomic_add_fetch(&rb_mem.live, n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&rb_mem.allocs, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&rb_mem.blocks, 1, __ATOMIC_RELAXED);
    peak = __atomic_load_n(&rb_mem.peak, __ATOMIC_RELAXED);
    while (live > peak && !__atomic_compare_exchange_n(&rb_mem.peak, &peak, live, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return p + 16;
}

static void rb_free(void *ptr, void *ud) {
    unsigned char *p = (unsigned char *)ptr - 16;
    size_t n;
    (void)ud;
    if (!ptr) return;
    memcpy(&n, p, sizeof n);
    __atomic_sub_fetch(&rb_mem.live, n, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&rb_mem.blocks, 1, __ATOMIC_RELAXED);
    free(p);
}

static kctl_allocator rb_counting(void) {
    kctl_allocator a;
    a.alloc_fn = rb_alloc;
    a.free_fn = rb_free;
    a.user_data = NULL;
    return a;
}

/* ---- latencies -------------------------------------------------------- */
typedef struct rb_pct {
    size_t n;
    double p50, p99, max; /* ms */
} rb_pct;

/* Percentiles (nearest rank) of v[0..n) in ms; sorts v. */
static rb_pct rb_pct_of(double *v, size_t n) {
    rb_pct p;
    memset(&p, 0, sizeof p);
    p.n = n;
    if (!n) return p;
    qsort(v, n, sizeof *v, bench_cmp_double);
    p.p50 = v[(n - 1) / 2];
    p.p99 = v[(n * 99 + 99) / 100 - 1];
    p.max = v[n - 1];
    return p;
}

/* ---- the busy core: a child that spins on the last CPU until killed (by
   pid) or until the process that forked it dies. Fork from the main
   thread, which outlives it. */
static pid_t rb_burner_start(void) {
    pid_t pid = fork();
    if (pid == 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        cpu_set_t set;
        volatile unsigned long spin = 0;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        CPU_ZERO(&set);
        CPU_SET(ncpu > 1 ? (int)ncpu - 1 : 0, &set);
        sched_setaffinity(0, sizeof set, &set);
        for (;;) spin++;
    }
    return pid;
}

#endif
