/* cache.c - cache-side figures (not tests): prints numbers, median of 3 runs */
/*
    The objects: 100,000 ConfigMap-like documents, the shape client-go was
    measured with (issue 3, section 7), each parsed once before any timing:
        {"metadata":{"name":"name-<i>","namespace":"ns-<i%10>",
                     "resourceVersion":"<i+1>","labels":{"app":"app-<i%1000>"}},
         "data":{"payload":"<100 bytes, unique>"}}
    so each value of the "app" label holds 100 objects. A second set, B, has
    the same keys with resourceVersion 100,000+i+1 and other payloads (the
    next version of each object). Every indexer has the built-in
    "namespace" index and an index "app" whose function emits
    kctl_obj_label(obj, "app").

    a. indexer add: 100,000 adds of set A into an empty indexer (objects/s).
    b. indexer update: the same 100,000 keys again, set B, into an indexer
       holding set A (objects/s); each update moves both index memberships.
    c. get by key: kctl_indexer_get + kctl_obj_unref over every key, 20
       passes per thread, 1 thread, then 2 threads reading the same indexer
       (the second starts half-way through the keys); gets/s, all threads.
       The keys are strings of their own, in the order of i (as a work
       queue would hand them to a worker), not the objects' key pointers.
       Then the same with kctl_indexer_read, the borrowed read (the object
       lent to a callback that reads its resourceVersion offset, no
       reference taken): what client-go's GetByKey does, which writes
       nothing. The objects, parsed in order, lie one after another at
       one stride (their sizes change only where a number gains a digit)
       and at every offset in a cache line: the hardware prefetcher
       follows them. Objects whose sizes change from one to the next were
       slower with any layout in a harness (README, How fast).
    d. by_index: kctl_indexer_by_index(ix, "app", value) for each of the
       1,000 values (100 objects each), 20 passes, counting the objects
       returned and freeing each list (M items/s).
    e. bytes per cached object, object included: a counting allocator (the
       size in a 16-byte header before each block) is given to
       kctl_obj_parse and to the indexer; (live bytes after the 100,000
       objects are parsed and added, minus the live bytes of the empty
       indexer with its "app" index) / 100,000, and the objects' own share
       (their parse allocations). Counted are the bytes kctl asks for; the
       "glibc" figure adds what glibc's malloc would add to each block
       (8-byte header, 16-byte rounding, 32-byte minimum), the figure
       closest to what Go's heap profile counts. Deterministic: one run.
    f. DeltaFIFO: 1,000,000 events on 10,000 keys (round r of 100 pushes
       key k as set A's object when r is even, set B's when odd: add in
       round 0, update after), pushed by the main thread, popped by another
       with kctl_fifo_pop, whose process function counts deltas (deltas of
       one key coalesce into one pop, so deltas are counted, not pops);
       events/s from the first push until the popper has seen every delta.
       The FIFO is closed at the end and the popper must get SHUTDOWN.
    Times come from kctl_clock_now(NULL) (CLOCK_MONOTONIC). Each figure is
    the median of 3 rounds, every round printed. The conditions are
    printed first: CPUs online, the load average at the start, and how
    busy the CPUs were in the half second before the start (the bench
    itself idle then: any of it is another process); the load average
    again at the end. Figures taken next to other busy processes are
    not comparable with quiet ones. No verdicts: a client-go figure is
    printed only as the reference its author measured, with its date.

    Build: cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -pthread bench/cache.c -o bench_cache
    Run:   ./bench_cache        full sizes (well under 30 s)
           ./bench_cache -q     sizes / 100 (1,000 objects, 10 index values,
                                10,000 events on 100 keys: for valgrind or ASan)
*/
#define _GNU_SOURCE 1 /* sched_getaffinity: the cross-CPU hand-off line */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "conditions.h"

#define BENCH_GET_PASSES 20     /* c: passes over every key, per thread */
#define BENCH_BY_INDEX_PASSES 20 /* d: passes over every index value */


/* Sizes; -q divides each by 100. */
static uint32_t bench_n = 100000;          /* objects per set */
static uint32_t bench_n_values = 1000;     /* app label values (bench_n / 100 objects each) */
static uint32_t bench_n_events = 1000000;  /* f: events */
static uint32_t bench_n_fifo_keys = 10000; /* f: keys */

static kctl_obj **bench_a_objs;  /* set A */
static kctl_obj **bench_b_objs;  /* set B: the same keys, the next version */
static char **bench_keys;        /* "ns-<i%10>/name-<i>", apart from the objects, as a work queue hands them out */
static char *bench_key_text;
static char **bench_values;      /* "app-<v>" */
static char *bench_value_text;

/* ------------------------------------------------------------------ helpers */

/* ------------------------------------------------------ counting allocator */

/* Live bytes as kctl asked for them, live blocks, and the bytes glibc's
   malloc would hold for the same blocks. Updated atomically: objects may
   be freed on any thread. */
typedef struct bench_count {
    size_t live, blocks, glibc;
} bench_count;

#define BENCH_HDR 16 /* keeps the 16-byte alignment malloc gives */

static size_t bench_glibc_chunk(size_t n)
{
    size_t c = (n + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}

static void *bench_count_alloc(size_t size, void *user_data)
{
    bench_count *c = (bench_count *)user_data;
    char *p = (char *)malloc(BENCH_HDR + size);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    __atomic_add_fetch(&c->live, size, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->blocks, (size_t)1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->glibc, bench_glibc_chunk(size), __ATOMIC_RELAXED);
    return p + BENCH_HDR;
}

static void bench_count_free(void *ptr, void *user_data)
{
    bench_count *c = (bench_count *)user_data;
    char *p = (char *)ptr - BENCH_HDR;
    size_t size;
    memcpy(&size, p, sizeof size);
    __atomic_sub_fetch(&c->live, size, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&c->blocks, (size_t)1, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&c->glibc, bench_glibc_chunk(size), __ATOMIC_RELAXED);
    free(p);
}

static bench_count bench_counter;

static kctl_allocator bench_counting(void)
{
    kctl_allocator a;
    a.alloc_fn = bench_count_alloc;
    a.free_fn = bench_count_free;
    a.user_data = &bench_counter;
    return a;
}

static void bench_count_read(bench_count *out)
{
    out->live = __atomic_load_n(&bench_counter.live, __ATOMIC_RELAXED);
    out->blocks = __atomic_load_n(&bench_counter.blocks, __ATOMIC_RELAXED);
    out->glibc = __atomic_load_n(&bench_counter.glibc, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ objects */

#define BENCH_PAYLOAD 100
#define BENCH_DOC_CAP 512

/* The document of object i of a set (version: 0 for A, 1 for B) into buf;
   its length. The payload starts with the set and index, so it is unique,
   and goes on with letters from the generator. */
static size_t bench_doc(char *buf, uint32_t i, int version, uint64_t *seed)
{
    char payload[BENCH_PAYLOAD + 1];
    int k, n;
    n = snprintf(payload, sizeof payload, "%c%07lu-", version ? 'b' : 'a', (unsigned long)i);
    for (k = n; k < BENCH_PAYLOAD; k++)
        payload[k] = (char)('a' + bench_xorshift(seed) % 26);
    payload[BENCH_PAYLOAD] = '\0';
    n = snprintf(buf, BENCH_DOC_CAP,
                 "{\"metadata\":{\"name\":\"name-%lu\",\"namespace\":\"ns-%lu\",\"resourceVersion\":\"%lu\","
                 "\"labels\":{\"app\":\"app-%lu\"}},\"data\":{\"payload\":\"%s\"}}",
                 (unsigned long)i, (unsigned long)(i % 10),
                 (unsigned long)((uint64_t)version * bench_n + i + 1),
                 (unsigned long)(i % bench_n_values), payload);
    return (size_t)n;
}

/* Parse a whole set with the counting allocator. */
static int bench_make_set(kctl_obj **objs, int version)
{
    char buf[BENCH_DOC_CAP];
    kctl_obj_opts opts;
    uint64_t seed = version ? UINT64_C(0xD1B54A32D192ED03) : UINT64_C(0x9E3779B97F4A7C15);
    uint32_t i;
    int rc;
    memset(&opts, 0, sizeof opts);
    opts.allocator = bench_counting();
    for (i = 0; i < bench_n; i++) {
        size_t len = bench_doc(buf, i, version, &seed);
        if ((rc = kctl_obj_parse(buf, len, &opts, &objs[i])) != KCTL_OK) {
            fprintf(stderr, "bench: kctl_obj_parse object %lu: %s\n", (unsigned long)i, kctl_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void bench_free_set(kctl_obj **objs)
{
    uint32_t i;
    if (!objs)
        return;
    for (i = 0; i < bench_n; i++)
        kctl_obj_unref(objs[i]);
}

/* ------------------------------------------------------------------ indexer */

static int bench_app_index(const kctl_obj *obj, kctl_index_emit emit, void *emit_ctx, void *user_data)
{
    const char *v = kctl_obj_label(obj, "app");
    (void)user_data;
    if (v)
        emit(v, emit_ctx);
    return KCTL_OK;
}

/* An empty indexer with the "app" index; counting: with the counting allocator. */
static kctl_indexer *bench_indexer(int counting)
{
    kctl_indexer_desc desc;
    kctl_indexer *ix;
    int rc;
    memset(&desc, 0, sizeof desc);
    if (counting)
        desc.allocator = bench_counting();
    if ((rc = kctl_indexer_create(&desc, &ix)) != KCTL_OK) {
        fprintf(stderr, "bench: kctl_indexer_create: %s\n", kctl_strerror(rc));
        return NULL;
    }
    if ((rc = kctl_indexer_add_index(ix, "app", bench_app_index, NULL)) != KCTL_OK) {
        fprintf(stderr, "bench: kctl_indexer_add_index: %s\n", kctl_strerror(rc));
        kctl_indexer_destroy(ix);
        return NULL;
    }
    return ix;
}

/* Add (or update) every object of a set; 0 or -1. */
static int bench_fill(kctl_indexer *ix, kctl_obj **objs, int update, const char *what)
{
    uint32_t i;
    int rc;
    for (i = 0; i < bench_n; i++) {
        rc = update ? kctl_indexer_update(ix, objs[i]) : kctl_indexer_add(ix, objs[i]);
        if (rc != KCTL_OK) {
            fprintf(stderr, "bench %s: object %lu: %s\n", what, (unsigned long)i, kctl_strerror(rc));
            return -1;
        }
    }
    if (kctl_indexer_len(ix) != bench_n) {
        fprintf(stderr, "bench %s: the indexer holds %lu objects, expected %lu\n", what,
                (unsigned long)kctl_indexer_len(ix), (unsigned long)bench_n);
        return -1;
    }
    return 0;
}

/* a. Objects/s adding set A to an empty indexer. */
static double bench_add(void)
{
    kctl_indexer *ix = bench_indexer(0);
    uint64_t t0, t1;
    int rc;
    if (!ix)
        return -1;
    t0 = kctl_clock_now(NULL);
    rc = bench_fill(ix, bench_a_objs, 0, "a");
    t1 = kctl_clock_now(NULL);
    kctl_indexer_destroy(ix);
    return rc ? -1 : (double)bench_n / bench_seconds(t0, t1);
}

/* b. Objects/s updating set A to set B. */
static double bench_update(void)
{
    kctl_indexer *ix = bench_indexer(0);
    kctl_obj_list l;
    uint64_t t0, t1, rv;
    size_t i;
    int rc;
    if (!ix)
        return -1;
    if (bench_fill(ix, bench_a_objs, 0, "b") != 0) {
        kctl_indexer_destroy(ix);
        return -1;
    }
    t0 = kctl_clock_now(NULL);
    rc = bench_fill(ix, bench_b_objs, 1, "b");
    t1 = kctl_clock_now(NULL);
    /* the index followed: app-0 holds set B's versions, bench_n / bench_n_values of them */
    if (rc == 0) {
        if (kctl_indexer_by_index(ix, "app", bench_values[0], &l) != KCTL_OK || l.count != bench_n / bench_n_values)
            rc = -1;
        for (i = 0; i < l.count; i++)
            if (!kctl_obj_resource_version_u64(l.items[i], &rv) || rv <= bench_n)
                rc = -1;
        kctl_obj_list_free(&l);
        if (rc)
            fprintf(stderr, "bench b: the app index did not follow the update\n");
    }
    kctl_indexer_destroy(ix);
    return rc ? -1 : (double)bench_n / bench_seconds(t0, t1);
}

/* ------------------------------------------------------------------ c. gets */

typedef struct bench_getter {
    kctl_indexer *ix;
    pthread_barrier_t *start;
    uint32_t offset;
    int borrowed;            /* kctl_indexer_read, not get + unref */
    uint64_t gets, misses, t0, t1;
    uint64_t sum;            /* what the borrowed reads read, so they are not optimized away */
    pthread_t thread;
    char pad[128];           /* the two threads' getters on lines of their own (sum is written per read) */
} bench_getter;

/* The borrowed read's callback: reads one field of the object. */
static int bench_read_fn(const kctl_obj *obj, void *user_data)
{
    bench_getter *g = (bench_getter *)user_data;
    g->sum += (uint64_t)(uintptr_t)kctl_obj_resource_version(obj);
    return KCTL_OK;
}

static void *bench_getter_main(void *arg)
{
    bench_getter *g = (bench_getter *)arg;
    uint32_t pass, i, k;
    if (g->start)
        pthread_barrier_wait(g->start);
    g->t0 = kctl_clock_now(NULL);
    for (pass = 0; pass < BENCH_GET_PASSES; pass++) {
        for (i = 0, k = g->offset; i < bench_n; i++) {
            if (g->borrowed) {
                if (kctl_indexer_read(g->ix, bench_keys[k], bench_read_fn, g) != KCTL_OK)
                    g->misses++;
            } else {
                kctl_obj *o = kctl_indexer_get(g->ix, bench_keys[k]);
                if (!o)
                    g->misses++;
                kctl_obj_unref(o);
            }
            if (++k == bench_n)
                k = 0;
        }
    }
    g->t1 = kctl_clock_now(NULL);
    g->gets = (uint64_t)BENCH_GET_PASSES * bench_n;
    return NULL;
}

/* Gets/s over nthreads (1 or 2) threads, all counted; borrowed: with
   kctl_indexer_read. < 0 on error. */
static double bench_get(kctl_indexer *ix, int nthreads, int borrowed)
{
    bench_getter g[2];
    pthread_barrier_t start;
    uint64_t t0 = UINT64_MAX, t1 = 0, gets = 0, misses = 0;
    int i, err;
    memset(g, 0, sizeof g);
    for (i = 0; i < nthreads; i++) {
        g[i].ix = ix;
        g[i].offset = (uint32_t)((uint64_t)bench_n * (uint32_t)i / (uint32_t)nthreads);
        g[i].borrowed = borrowed;
    }
    if (nthreads == 1) {
        bench_getter_main(&g[0]);
    } else {
        if (pthread_barrier_init(&start, NULL, (unsigned)nthreads) != 0)
            return -1;
        for (i = 0; i < nthreads; i++) {
            g[i].start = &start;
            if ((err = pthread_create(&g[i].thread, NULL, bench_getter_main, &g[i])) != 0) {
                fprintf(stderr, "bench c: pthread_create: %s\n", strerror(err));
                exit(1); /* the others wait at the barrier for ever */
            }
        }
        for (i = 0; i < nthreads; i++)
            pthread_join(g[i].thread, NULL);
        pthread_barrier_destroy(&start);
    }
    for (i = 0; i < nthreads; i++) {
        if (g[i].t0 < t0) t0 = g[i].t0;
        if (g[i].t1 > t1) t1 = g[i].t1;
        gets += g[i].gets;
        misses += g[i].misses;
    }
    if (misses) {
        fprintf(stderr, "bench c: %llu gets found nothing\n", (unsigned long long)misses);
        return -1;
    }
    return (double)gets / bench_seconds(t0, t1);
}

/* -------------------------------------------------------------- d. by_index */

/* Items/s returned by by_index over every value; < 0 on error. */
static double bench_by_index(kctl_indexer *ix)
{
    kctl_obj_list l;
    uint64_t t0, t1, items = 0;
    uint32_t pass, v;
    int rc;
    t0 = kctl_clock_now(NULL);
    for (pass = 0; pass < BENCH_BY_INDEX_PASSES; pass++) {
        for (v = 0; v < bench_n_values; v++) {
            if ((rc = kctl_indexer_by_index(ix, "app", bench_values[v], &l)) != KCTL_OK) {
                fprintf(stderr, "bench d: kctl_indexer_by_index: %s\n", kctl_strerror(rc));
                return -1;
            }
            items += l.count;
            kctl_obj_list_free(&l);
        }
    }
    t1 = kctl_clock_now(NULL);
    if (items != (uint64_t)BENCH_BY_INDEX_PASSES * bench_n) {
        fprintf(stderr, "bench d: by_index returned %llu objects, expected %llu\n",
                (unsigned long long)items, (unsigned long long)BENCH_BY_INDEX_PASSES * bench_n);
        return -1;
    }
    return (double)items / bench_seconds(t0, t1);
}

/* ---------------------------------------------------------------- e. memory */

typedef struct bench_mem {
    double per_obj, per_obj_glibc, obj_only, obj_only_glibc, blocks_per_obj, obj_blocks_per_obj;
} bench_mem;

/* Parses set A with the counting allocator (the set the other figures
   use) between the readings, so the objects are counted in. */
static int bench_memory(bench_mem *m)
{
    bench_count c0, c1, c2, c3;
    kctl_indexer *ix;
    int rc;
    bench_count_read(&c3);
    if (c3.live != 0) {
        fprintf(stderr, "bench e: %lu bytes counted before the start\n", (unsigned long)c3.live);
        return -1;
    }
    if (!(ix = bench_indexer(1)))
        return -1;
    bench_count_read(&c0);                       /* the empty indexer with its index */
    rc = bench_make_set(bench_a_objs, 0);
    bench_count_read(&c1);                       /* + the objects */
    if (rc == 0)
        rc = bench_fill(ix, bench_a_objs, 0, "e");
    bench_count_read(&c2);                       /* + the cache's share */
    kctl_indexer_destroy(ix);
    bench_count_read(&c3);                       /* the objects alone again */
    if (rc)
        return -1;
    if (c3.live != c1.live - c0.live) {
        fprintf(stderr, "bench e: %lu bytes live after destroying the indexer, expected %lu\n",
                (unsigned long)c3.live, (unsigned long)(c1.live - c0.live));
        return -1;
    }
    m->per_obj = (double)(c2.live - c0.live) / bench_n;
    m->per_obj_glibc = (double)(c2.glibc - c0.glibc) / bench_n;
    m->blocks_per_obj = (double)(c2.blocks - c0.blocks) / bench_n;
    m->obj_only = (double)(c1.live - c0.live) / bench_n;
    m->obj_only_glibc = (double)(c1.glibc - c0.glibc) / bench_n;
    m->obj_blocks_per_obj = (double)(c1.blocks - c0.blocks) / bench_n;
    return 0;
}

/* ------------------------------------------------------------ f. DeltaFIFO */

typedef struct bench_popper {
    kctl_fifo *f;
    uint64_t target;  /* deltas to see */
    uint64_t deltas, pops, t_end;
    int rc;           /* what ended the pop loop */
    pthread_t thread;
} bench_popper;

static int bench_count_deltas(const char *key, const kctl_delta *deltas, size_t n, void *user_data)
{
    bench_popper *p = (bench_popper *)user_data;
    (void)key;
    (void)deltas;
    p->deltas += n;
    p->pops++;
    if (p->deltas == p->target)
        p->t_end = kctl_clock_now(NULL);
    return KCTL_OK;
}

static void *bench_popper_main(void *arg)
{
    bench_popper *p = (bench_popper *)arg;
    int rc;
    while ((rc = kctl_fifo_pop(p->f, bench_count_deltas, p)) == KCTL_OK) { }
    p->rc = rc;
    return NULL;
}

/* Events/s pushed-to-popped; *pops the pops it took. < 0 on error. */
static double bench_fifo(uint64_t *pops)
{
    bench_popper p;
    kctl_fifo *f;
    struct timespec settle = { 0, 5000000 }; /* 5 ms: let the popper park */
    uint64_t t0;
    uint32_t e, k = 0, r = 0;
    int rc, err, bad = 0;

    if ((rc = kctl_fifo_create(NULL, &f)) != KCTL_OK) {
        fprintf(stderr, "bench f: kctl_fifo_create: %s\n", kctl_strerror(rc));
        return -1;
    }
    memset(&p, 0, sizeof p);
    p.f = f;
    p.target = bench_n_events;
    if ((err = pthread_create(&p.thread, NULL, bench_popper_main, &p)) != 0) {
        fprintf(stderr, "bench f: pthread_create: %s\n", strerror(err));
        kctl_fifo_destroy(f);
        return -1;
    }
    nanosleep(&settle, NULL);
    t0 = kctl_clock_now(NULL);
    for (e = 0; e < bench_n_events; e++) {
        kctl_obj *o = (r & 1) ? bench_b_objs[k] : bench_a_objs[k];
        rc = r == 0 ? kctl_fifo_add(f, o) : kctl_fifo_update(f, o);
        if (rc != KCTL_OK && !bad) {
            fprintf(stderr, "bench f: event %lu: %s\n", (unsigned long)e, kctl_strerror(rc));
            bad = 1;
        }
        if (++k == bench_n_fifo_keys) {
            k = 0;
            r++;
        }
    }
    kctl_fifo_close(f); /* the popper drains what is queued, then SHUTDOWN */
    pthread_join(p.thread, NULL);
    if (p.rc != KCTL_ERR_SHUTDOWN) {
        fprintf(stderr, "bench f: the popper ended with %s, expected SHUTDOWN\n", kctl_strerror(p.rc));
        bad = 1;
    }
    if (p.deltas != bench_n_events) {
        fprintf(stderr, "bench f: the popper saw %llu deltas, expected %lu\n",
                (unsigned long long)p.deltas, (unsigned long)bench_n_events);
        bad = 1;
    }
    if (kctl_fifo_len(f) != 0) {
        fprintf(stderr, "bench f: %lu keys left queued\n", (unsigned long)kctl_fifo_len(f));
        bad = 1;
    }
    kctl_fifo_destroy(f);
    *pops = p.pops;
    return bad ? -1 : (double)bench_n_events / bench_seconds(t0, p.t_end);
}

/* --------------------------------------------------------------------- main */

static void bench_cleanup(kctl_indexer *ix)
{
    kctl_indexer_destroy(ix);
    bench_free_set(bench_a_objs);
    bench_free_set(bench_b_objs);
    free(bench_a_objs);
    free(bench_b_objs);
    free(bench_keys);
    free(bench_key_text);
    free(bench_values);
    free(bench_value_text);
}

int main(int argc, char **argv)
{
    double add[BENCH_RUNS], upd[BENCH_RUNS], get1[BENCH_RUNS], get2[BENCH_RUNS], read1[BENCH_RUNS], read2[BENCH_RUNS];
    double byi[BENCH_RUNS], fifo[BENCH_RUNS];
    uint64_t fifo_pops[BENCH_RUNS];
    double m_add, m_upd, m_get1, m_get2, m_read1, m_read2, m_byi, m_fifo;
    char la[64];
    bench_mem mem;
    bench_count left;
    kctl_indexer *ix = NULL;
    char doc[BENCH_DOC_CAP];
    uint64_t seed = 1, t_start = kctl_clock_now(NULL);
    size_t doc_len;
    uint32_t i;
    const size_t vw = 16; /* "app-" + up to 10 digits + NUL */
    const size_t kw = 32; /* "ns-N/name-" + up to 10 digits + NUL */
    int run, quick = argc > 1 && strcmp(argv[1], "-q") == 0;

    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: %s [-q]   (-q: sizes / 100)\n", argv[0]);
        return 2;
    }
    if (quick) {
        bench_n /= 100;
        bench_n_values /= 100;
        bench_n_events /= 100;
        bench_n_fifo_keys /= 100;
    }
    bench_a_objs = (kctl_obj **)calloc(bench_n, sizeof *bench_a_objs);
    bench_b_objs = (kctl_obj **)calloc(bench_n, sizeof *bench_b_objs);
    bench_keys = (char **)malloc(bench_n * sizeof *bench_keys);
    bench_key_text = (char *)malloc((size_t)bench_n * kw);
    bench_values = (char **)malloc(bench_n_values * sizeof *bench_values);
    bench_value_text = (char *)malloc(bench_n_values * vw);
    if (!bench_a_objs || !bench_b_objs || !bench_keys || !bench_key_text || !bench_values || !bench_value_text) {
        fprintf(stderr, "bench: out of memory\n");
        bench_cleanup(NULL);
        return 1;
    }
    for (i = 0; i < bench_n_values; i++) {
        bench_values[i] = bench_value_text + (size_t)i * vw;
        snprintf(bench_values[i], vw, "app-%lu", (unsigned long)i);
    }
    doc_len = bench_doc(doc, bench_n - 1, 0, &seed);

    printf("kctl %s cache bench%s: %lu ConfigMap-like objects (documents of about %lu bytes), "
           "%ld CPUs online, CLOCK_MONOTONIC, median of %d runs\n",
           kctl_version(), quick ? " (quick: sizes / 100)" : "", (unsigned long)bench_n,
           (unsigned long)doc_len, sysconf(_SC_NPROCESSORS_ONLN), BENCH_RUNS);
    bench_conditions();
    bench_print_handoff(); /* the two-thread reads run on both CPUs */
    fflush(stdout);

    /* e first: it parses set A between its readings. Printed in its place. */
    if (bench_memory(&mem) != 0 || bench_make_set(bench_b_objs, 1) != 0) {
        bench_cleanup(NULL);
        return 1;
    }
    for (i = 0; i < bench_n; i++) {
        bench_keys[i] = bench_key_text + (size_t)i * kw;
        snprintf(bench_keys[i], kw, "ns-%lu/name-%lu", (unsigned long)(i % 10), (unsigned long)i);
        if (strcmp(bench_keys[i], kctl_obj_key(bench_a_objs[i])) != 0) {
            fprintf(stderr, "bench: object %lu has key %s, expected %s\n", (unsigned long)i,
                    kctl_obj_key(bench_a_objs[i]), bench_keys[i]);
            bench_cleanup(NULL);
            return 1;
        }
    }

    for (run = 0; run < BENCH_RUNS; run++)
        if ((add[run] = bench_add()) < 0) { bench_cleanup(NULL); return 1; }
    m_add = bench_median(add);
    printf("a. indexer add, %lu objects into an empty indexer (namespace + app indexes): %.2f M objects/s ",
           (unsigned long)bench_n, m_add / 1e6);
    bench_print_runs(add, 1e6, "%.2f");
    putchar('\n');
    fflush(stdout);

    for (run = 0; run < BENCH_RUNS; run++)
        if ((upd[run] = bench_update()) < 0) { bench_cleanup(NULL); return 1; }
    m_upd = bench_median(upd);
    printf("b. indexer update, the same %lu keys, new versions (every app membership moves): %.2f M objects/s ",
           (unsigned long)bench_n, m_upd / 1e6);
    bench_print_runs(upd, 1e6, "%.2f");
    putchar('\n');
    fflush(stdout);

    /* c and d read one indexer holding set A */
    if (!(ix = bench_indexer(0)) || bench_fill(ix, bench_a_objs, 0, "c") != 0) {
        bench_cleanup(ix);
        return 1;
    }
    for (run = 0; run < BENCH_RUNS; run++)
        if ((get1[run] = bench_get(ix, 1, 0)) < 0) { bench_cleanup(ix); return 1; }
    m_get1 = bench_median(get1);
    printf("c. get by key + unref, 1 thread: %.2f M gets/s ", m_get1 / 1e6);
    bench_print_runs(get1, 1e6, "%.2f");
    printf("  [%d passes over %lu keys]\n", BENCH_GET_PASSES, (unsigned long)bench_n);
    fflush(stdout);

    for (run = 0; run < BENCH_RUNS; run++)
        if ((get2[run] = bench_get(ix, 2, 0)) < 0) { bench_cleanup(ix); return 1; }
    m_get2 = bench_median(get2);
    printf("c. get by key + unref, 2 threads: %.2f M gets/s total ", m_get2 / 1e6);
    bench_print_runs(get2, 1e6, "%.2f");
    putchar('\n');
    fflush(stdout);

    for (run = 0; run < BENCH_RUNS; run++)
        if ((read1[run] = bench_get(ix, 1, 1)) < 0) { bench_cleanup(ix); return 1; }
    m_read1 = bench_median(read1);
    printf("c. borrowed read by key (kctl_indexer_read), 1 thread: %.2f M reads/s ", m_read1 / 1e6);
    bench_print_runs(read1, 1e6, "%.2f");
    putchar('\n');
    fflush(stdout);

    for (run = 0; run < BENCH_RUNS; run++)
        if ((read2[run] = bench_get(ix, 2, 1)) < 0) { bench_cleanup(ix); return 1; }
    m_read2 = bench_median(read2);
    printf("c. borrowed read by key (kctl_indexer_read), 2 threads: %.2f M reads/s total ", m_read2 / 1e6);
    bench_print_runs(read2, 1e6, "%.2f");
    putchar('\n');
    fflush(stdout);

    for (run = 0; run < BENCH_RUNS; run++)
        if ((byi[run] = bench_by_index(ix)) < 0) { bench_cleanup(ix); return 1; }
    m_byi = bench_median(byi);
    printf("d. by_index(\"app\", value), %lu objects per value, list freed: %.2f M items/s ",
           (unsigned long)(bench_n / bench_n_values), m_byi / 1e6);
    bench_print_runs(byi, 1e6, "%.2f");
    printf("  [%d passes over %lu values]\n", BENCH_BY_INDEX_PASSES, (unsigned long)bench_n_values);
    fflush(stdout);
    kctl_indexer_destroy(ix);
    ix = NULL;

    printf("e. memory per cached object, object included: %.1f bytes asked for (%.0f with glibc malloc's overhead), "
           "%.1f blocks; the object alone: %.1f bytes (%.0f), %.1f block; the indexer's share: %.1f bytes (%.0f)\n",
           mem.per_obj, mem.per_obj_glibc, mem.blocks_per_obj, mem.obj_only, mem.obj_only_glibc,
           mem.obj_blocks_per_obj, mem.per_obj - mem.obj_only, mem.per_obj_glibc - mem.obj_only_glibc);
    fflush(stdout);

    for (run = 0; run < BENCH_RUNS; run++)
        if ((fifo[run] = bench_fifo(&fifo_pops[run])) < 0) { bench_cleanup(NULL); return 1; }
    bench_sort_pairs(fifo, fifo_pops);
    m_fifo = fifo[BENCH_RUNS / 2];
    printf("f. DeltaFIFO, %lu events on %lu keys, 1 pusher, 1 popper: %.2f M events/s ",
           (unsigned long)bench_n_events, (unsigned long)bench_n_fifo_keys, m_fifo / 1e6);
    bench_print_runs(fifo, 1e6, "%.2f");
    printf(", pops: %llu (runs: %llu %llu %llu; deltas of a key coalesce)\n",
           (unsigned long long)fifo_pops[BENCH_RUNS / 2], (unsigned long long)fifo_pops[0],
           (unsigned long long)fifo_pops[1], (unsigned long long)fifo_pops[2]);

    bench_loadavg_text(la, sizeof la);
    printf("conditions at the end: load average %s\n", la);
    bench_print_steps("at the end");
    printf("\nreference measured by issue 11's author on 2026-11 (client-go v0.26.15, Go 1.19, GOMAXPROCS=2), "
           "not in this run and not on this machine's present load; for orientation only, no verdict:\n"
           "  a/b indexer add / update 0.89 / 1.08 M/s; c GetByKey 20.7 M/s 1 thread, 26.0 M/s 2 threads; "
           "d by_index 10.1 M items/s; e 1,280 bytes per cached object (Go heap); f DeltaFIFO 1.67 M events/s\n");
    bench_cleanup(NULL);
    bench_count_read(&left);
    if (left.live != 0 || left.blocks != 0) {
        fprintf(stderr, "bench: %lu bytes in %lu blocks still counted at the end\n",
                (unsigned long)left.live, (unsigned long)left.blocks);
        return 1;
    }
    printf("bench time %.1f s\n", bench_seconds(t_start, kctl_clock_now(NULL)));
    return 0;
}
