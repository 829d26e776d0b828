/* bench.h - what the benchmarks share: runs, medians, printing. Include
   after kctl.h and the C headers (stdio, stdlib). */
#ifndef KCTL_BENCH_H
#define KCTL_BENCH_H

#define BENCH_RUNS 3

static double bench_seconds(uint64_t t0, uint64_t t1)
{
    return (double)(t1 - t0) / 1e9;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Sorts v[0..BENCH_RUNS) and returns its median. */
static double bench_median(double *v)
{
    qsort(v, BENCH_RUNS, sizeof v[0], bench_cmp_double);
    return v[BENCH_RUNS / 2];
}

/* Sorts v ascending, carrying the matching n[] along. */
static void bench_sort_pairs(double *v, uint64_t *n)
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

static void bench_print_runs(const double *v, double scale, const char *fmt)
{
    int i;
    printf("(median of %d:", BENCH_RUNS);
    for (i = 0; i < BENCH_RUNS; i++) {
        putchar(' ');
        printf(fmt, v[i] / scale);
    }
    putchar(')');
}

/* xorshift64 (Marsaglia); state must not be 0. */
static uint64_t bench_xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

#endif
