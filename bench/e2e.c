/* e2e.c - the whole pipeline on the memstore: a 100,000-object initial sync,
   then sustained writes through to reconcile. Prints figures; asserts nothing.

   a. list and sync: 100,000 objects in the store; an informer starts, lists
      them, fills its cache and calls its handlers; a controller's queue
      gets every key. Seconds from start to synced, and the growth of the
      resident set (store + cache + queue; the store holds the objects too,
      the cache shares its own references).
   b. sustained events: a writer thread changes objects as fast as the
      store takes it (200,000 writes cycling over the objects); the informer
      (its own thread) and a controller (2 workers) reconcile them. Events/s
      from the first write until every write has reached the cache and the
      queue is empty, and the latency from a write to the reconcile that
      saw its key (the latest write for that key, as the queue merges).
   c. paced events: 20,000 writes at about 10,000/s, one every 100 us, so
      the pipeline is not saturated: the latency of one event on its own.
*/
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double bench_seconds(uint64_t t0, uint64_t t1) { return (double)(t1 - t0) / 1e9; }

#define E2E_OBJECTS 100000
#define E2E_WRITES 200000

static const kctl_resource e2e_res = { "", "v1", "configmaps", "bench" };
static kctl_clock e2e_clock;
static uint64_t e2e_sent[E2E_OBJECTS];   /* atomic: when the latest write to object i was made */
static uint64_t *e2e_lat;                /* latencies, one per reconcile that saw a write */
static size_t e2e_nlat, e2e_cap;         /* atomic */

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

static int e2e_index(const char *key) {
    const char *dash = strrchr(key, '-');
    return dash ? atoi(dash + 1) : -1;
}

static kctl_reconcile_result e2e_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    int i = e2e_index(ctx->key);
    memset(&r, 0, sizeof r);
    if (i >= 0 && i < E2E_OBJECTS) {
        uint64_t sent = __atomic_exchange_n(&e2e_sent[i], 0, __ATOMIC_ACQ_REL);
        if (sent) {
            size_t n = __atomic_fetch_add(&e2e_nlat, 1, __ATOMIC_RELAXED);
            if (n < e2e_cap) e2e_lat[n] = kctl_clock_now(&e2e_clock) - sent;
        }
    }
    return r;
}

static void *e2e_writer(void *arg) {
    kctl_memstore *ms = (kctl_memstore *)arg;
    char doc[160];
    int w;
    for (w = 0; w < E2E_WRITES; w++) {
        int i = w % E2E_OBJECTS, n;
        n = snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"cm-%06d\"},\"data\":{\"round\":\"%d\"}}", i, w / E2E_OBJECTS + 1);
        __atomic_store_n(&e2e_sent[i], kctl_clock_now(&e2e_clock), __ATOMIC_RELEASE);
        if (kctl_memstore_apply(ms, &e2e_res, doc, (size_t)n, NULL, NULL) != KCTL_OK) {
            fprintf(stderr, "e2e: a write failed\n");
            exit(1);
        }
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_informer_desc id;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kctl_reflector_stats rs;
    pthread_t writer;
    uint64_t t0, t1, base_mod;
    long rss0, rss1, rss2;
    char doc[160];
    int i;

    e2e_clock = kctl_clock_monotonic();
    e2e_cap = E2E_WRITES + E2E_OBJECTS;
    e2e_lat = (uint64_t *)malloc(e2e_cap * sizeof *e2e_lat);
    memset(&md, 0, sizeof md);
    md.history = 1u << 19; /* room for the writes: watchers lagging behind are not sent GONE */
    if (!e2e_lat || kctl_memstore_create(&md, &ms) != KCTL_OK) return 1;
    for (i = 0; i < E2E_OBJECTS; i++) {
        int n = snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"cm-%06d\",\"labels\":{\"app\":\"bench\"}},\"data\":{\"round\":\"0\"}}", i);
        if (kctl_memstore_apply(ms, &e2e_res, doc, (size_t)n, NULL, NULL) != KCTL_OK) return 1;
    }
    printf("kctl %s end-to-end bench on the memstore: %d objects, %d writes\n", kctl_version(), E2E_OBJECTS, E2E_WRITES);

    /* a. list and sync */
    memset(&id, 0, sizeof id);
    id.transport = kctl_memstore_transport(ms);
    id.resource = e2e_res;
    if (kctl_informer_create(&id, &inf) != KCTL_OK) return 1;
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.reconcile = e2e_reconcile;
    cd.workers = 2;
    if (kctl_controller_create(&cd, &c) != KCTL_OK) return 1;
    rss0 = rss_kib();
    t0 = kctl_clock_now(&e2e_clock);
    if (kctl_informer_start(inf) != KCTL_OK || kctl_informer_wait_for_sync(inf, KCTL_SEC(600)) != KCTL_OK) {
        fprintf(stderr, "e2e: the informer did not sync\n");
        return 1;
    }
    t1 = kctl_clock_now(&e2e_clock);
    rss1 = rss_kib();
    printf("a. list and sync %d objects: %.3f s (%.2f M objects/s); resident set +%.1f MiB (%.0f bytes/object: cache, queue, handlers)\n",
           E2E_OBJECTS, bench_seconds(t0, t1), E2E_OBJECTS / bench_seconds(t0, t1) / 1e6, (double)(rss1 - rss0) / 1024.0,
           (double)(rss1 - rss0) * 1024.0 / E2E_OBJECTS);
    t0 = kctl_clock_now(&e2e_clock);
    if (kctl_controller_start(c, KCTL_SEC(60)) != KCTL_OK) return 1;
    while (kctl_queue_len(kctl_controller_queue(c)) > 0) {
        struct timespec ts = { 0, 1000000L };
        nanosleep(&ts, NULL);
    }
    t1 = kctl_clock_now(&e2e_clock);
    printf("   the first %d reconciles (2 workers): %.3f s\n", E2E_OBJECTS, bench_seconds(t0, t1));

    /* b. sustained events */
    kctl_informer_read_stats(inf, &rs);
    base_mod = rs.modified;
    __atomic_store_n(&e2e_nlat, 0, __ATOMIC_RELAXED);
    t0 = kctl_clock_now(&e2e_clock);
    pthread_create(&writer, NULL, e2e_writer, ms);
    pthread_join(writer, NULL);
    t1 = kctl_clock_now(&e2e_clock);
    printf("b. writer: %d writes in %.3f s (%.2f M writes/s into the store)\n", E2E_WRITES, bench_seconds(t0, t1),
           E2E_WRITES / bench_seconds(t0, t1) / 1e6);
    for (;;) { /* every write in the cache, and nothing left to reconcile */
        struct timespec ts = { 0, 200000L };
        kctl_informer_read_stats(inf, &rs);
        if (rs.modified - base_mod >= E2E_WRITES && kctl_queue_len(kctl_controller_queue(c)) == 0) break;
        nanosleep(&ts, NULL);
    }
    t1 = kctl_clock_now(&e2e_clock);
    {
        size_t n = e2e_nlat < e2e_cap ? e2e_nlat : e2e_cap;
        qsort(e2e_lat, n, sizeof *e2e_lat, cmp_u64);
        printf("   events through to reconcile: %.2f M events/s (%d events in %.3f s; %lu reconciles, the queue merged the rest)\n",
               E2E_WRITES / bench_seconds(t0, t1) / 1e6, E2E_WRITES, bench_seconds(t0, t1), (unsigned long)n);
        if (n)
            printf("   write -> reconcile latency, saturated: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", (double)e2e_lat[n / 2] / 1e6,
                   (double)e2e_lat[n * 99 / 100] / 1e6, (double)e2e_lat[n - 1] / 1e6);
    }
    /* c. paced */
    __atomic_store_n(&e2e_nlat, 0, __ATOMIC_RELAXED);
    for (i = 0; i < 20000; i++) {
        int k = (i * 7919) % E2E_OBJECTS, n;
        uint64_t due = kctl_clock_now(&e2e_clock) + 100000u;
        n = snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"cm-%06d\"},\"data\":{\"round\":\"p%d\"}}", k, i);
        __atomic_store_n(&e2e_sent[k], kctl_clock_now(&e2e_clock), __ATOMIC_RELEASE);
        if (kctl_memstore_apply(ms, &e2e_res, doc, (size_t)n, NULL, NULL) != KCTL_OK) return 1;
        while (kctl_clock_now(&e2e_clock) < due) {}
    }
    while (kctl_queue_len(kctl_controller_queue(c)) > 0 || __atomic_load_n(&e2e_nlat, __ATOMIC_RELAXED) < 19000) {
        struct timespec ts = { 0, 1000000L };
        if (kctl_clock_now(&e2e_clock) - t1 > KCTL_SEC(30)) break;
        nanosleep(&ts, NULL);
    }
    {
        size_t n = e2e_nlat < e2e_cap ? e2e_nlat : e2e_cap;
        qsort(e2e_lat, n, sizeof *e2e_lat, cmp_u64);
        if (n)
            printf("c. write -> reconcile latency, 10,000 writes/s: p50 %.1f us, p99 %.1f us, max %.1f us (%lu reconciles)\n",
                   (double)e2e_lat[n / 2] / 1e3, (double)e2e_lat[n * 99 / 100] / 1e3, (double)e2e_lat[n - 1] / 1e3,
                   (unsigned long)n);
    }
    kctl_controller_stop(c);
    rss2 = rss_kib();
    printf("   resident set now %.1f MiB (store with its history, cache, queue)\n", (double)rss2 / 1024.0);
    kctl_informer_stop(inf);
    kctl_controller_destroy(c);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    free(e2e_lat);
    return 0;
}
