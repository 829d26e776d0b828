/* conditions.h - the conditions a bench ran in, printed with its figures
   (cache.c, json.c): CPUs online, the load average, and how busy the CPUs
   were just before the start. Include after the C headers (stdio, time,
   unistd). Linux: /proc/loadavg and /proc/stat; "unknown" elsewhere. */
#ifndef KCTL_BENCH_CONDITIONS_H
#define KCTL_BENCH_CONDITIONS_H

/* The 1-, 5- and 15-minute load averages ("?" without /proc/loadavg) into buf. */
static void bench_loadavg_text(char *buf, size_t cap)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l1, l5, l15;
    if (f && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
        snprintf(buf, cap, "%.2f %.2f %.2f", l1, l5, l15);
    else
        snprintf(buf, cap, "?");
    if (f)
        fclose(f);
}

/* The busy and total jiffies of all CPUs (/proc/stat's first line); 0 if unknown. */
static int bench_cpu_jiffies(unsigned long long *busy, unsigned long long *total)
{
    unsigned long long v[8] = { 0 };
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                       &v[5], &v[6], &v[7]) : 0;
    if (f)
        fclose(f);
    if (n < 5)
        return 0;
    *total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    *busy = *total - v[3] - v[4]; /* less idle and iowait */
    return 1;
}

/* Prints the run's conditions: CPUs, load average, and the share of all
   CPUs other processes kept busy over 0.5 s while this one slept; then
   the CPU steps and the memory line. */
static void bench_conditions(void)
{
    unsigned long long b0, t0, b1, t1;
    struct timespec half = { 0, 500000000L };
    char la[64];
    bench_loadavg_text(la, sizeof la);
    printf("conditions: %ld CPUs online; load average at the start %s; ", sysconf(_SC_NPROCESSORS_ONLN), la);
    if (bench_cpu_jiffies(&b0, &t0)) {
        nanosleep(&half, NULL);
        if (bench_cpu_jiffies(&b1, &t1) && t1 > t0)
            printf("other processes kept %.0f%% of all CPUs busy in the 0.5 s before the start%s\n",
                   100.0 * (double)(b1 - b0) / (double)(t1 - t0),
                   (double)(b1 - b0) / (double)(t1 - t0) > 0.1 ? " (BUSY: figures not comparable with a quiet run)" : "");
        else
            printf("CPU use before the start unknown\n");
    } else {
        printf("CPU use before the start unknown (no /proc/stat)\n");
    }
    bench_print_steps("at the start");
    bench_print_memory();
}

#endif
