/* kube.c - kctl on the Kubernetes API transport (kctl_http_curl.h)
   against the test API server (tests/kube_server.h), started in this
   process, over loopback HTTP/1.1. Prints figures; asserts nothing.
   bench/KUBE.md says what bounds each one.

   Each run starts a fresh server (a custom resource, bench.kctl.io/v1
   widgets, namespaced) and does:

   1. list and sync: 10,000 objects of about 300 bytes of JSON created in
      the server's memstore directly, then an informer on the kube
      transport starts (pages of 500: GET ...?limit=500&continue=...) and
      a controller's handler queues each key: seconds from start to
      has_synced, and what went through kctl's allocator (a counting
      kctl_allocator on the transport, the informer and the controller:
      bytes live after the sync and at the peak, allocations, per object).
      The server's own memory is not in it (the memstore and the server
      use the default allocator). Then the first 10,000 reconciles.
   2. write -> reconcile at a paced rate: 1,000 writes/s for 2 s, each due
      at an absolute deadline (clock_nanosleep TIMER_ABSTIME; 4 pacer
      threads take the slots in turn). By default a write is an update
      through the server's memstore (kctl_transport_update on the
      memstore, in this process: no HTTP on the write side, so the figure
      is the watch path alone: the server encodes the event and sends it
      as a chunk, the transport splits the line and decodes it, the
      informer caches it, a worker reconciles). --kctl-writes sends each
      write as an HTTP PUT through a second kube transport instead (the
      path of a kubectl edit; its figures then include the PUT). Each
      write carries its send time in spec.sent and its slot in
      spec.round; the reconcile computes now - sent: p50/p99/max, how
      many writes left on time (within 1 ms of their deadline), the write
      call's own latency.
   3. the yardstick: the same paced writes seen by a bare libcurl watch on
      the server (GET ...?watch=1: the chunks scanned for "round", nothing
      decoded), kctl's informer stopped by then.

   Every run happens idle, then with a burner (a child process spinning in
   while(1), pinned to the last CPU, started before the server and killed
   after it), BENCH_RUNS (3) times each; the summary gives each figure's
   median with its range. With each phase: the CPU this process used
   (server and client together: they share it). The whole run takes about
   30 s.

   build/bench-kube [--idle-only] [--busy-only] [--kctl-writes] [--seconds S] [--rate N] */
#define _GNU_SOURCE /* sched_setaffinity */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include "../kctl_http_curl.h"
#include "../tests/kube_server.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "remote.h"

#define KB_OBJECTS 10000
#define KB_DOC_BYTES 300
#define KB_PACERS 4
#define KB_LATE_NS 1000000u  /* a write that leaves more than 1 ms after its deadline did not keep pace */
#define KB_MAX_SLOTS 60000

static const kctl_resource kb_res = { "bench.kctl.io", "v1", "widgets", "bench" };
static const kt_kube_resource kb_served[] = {
    { "bench.kctl.io", "v1", "widgets", "widget", "Widget", NULL, true, true },
};

static struct {
    double seconds;   /* paced phases */
    int rate;         /* writes/s */
    bool idle, busy;
    bool kctl_writes; /* paced writes through a second kube transport, not the memstore */
} kb_opt = { 2.0, 1000, true, true, false };

/* ---- documents -------------------------------------------------------- */
static const char kb_pad[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/* Object i's document as a client sends it, about KB_DOC_BYTES long (the
   server adds uid, creationTimestamp, generation, resourceVersion). */
static int kb_doc(char *buf, size_t cap, int i, uint64_t sent, uint64_t round) {
    int pad = 0, n;
    for (;;) {
        n = snprintf(buf, cap,
                     "{\"apiVersion\":\"bench.kctl.io/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w-%05d\",\"namespace\":\"bench\","
                     "\"labels\":{\"app\":\"bench\",\"shard\":\"%d\"}},\"spec\":{\"sent\":%llu,\"round\":%llu,\"payload\":\"%.*s\"}}",
                     i, i % 16, (unsigned long long)sent, (unsigned long long)round, pad, kb_pad);
        if (n < 0 || (size_t)n >= cap) return -1;
        if (pad || n >= KB_DOC_BYTES) return n;
        pad = KB_DOC_BYTES - n;
        if (pad > (int)sizeof kb_pad - 1) pad = (int)sizeof kb_pad - 1;
    }
}

/* ---- paced slots: slot s is due at t0 + s / rate and carries spec.round =
   base + s; whoever sees it first (a reconcile, the bare watch) records
   its arrival. */
static struct {
    uint64_t base; /* atomic: round of slot 0 (0: no run) */
    int slots;     /* atomic */
    uint64_t t0, period;
    uint64_t sent[KB_MAX_SLOTS], ack[KB_MAX_SLOTS], arr[KB_MAX_SLOTS];
    uint64_t ok, failed, kept, seen; /* atomic */
    int last_error;
} kb_pc;
static unsigned kb_runs;
static double kb_scratch[KB_MAX_SLOTS];

static void kb_arrive(uint64_t round, uint64_t now) {
    uint64_t base = __atomic_load_n(&kb_pc.base, __ATOMIC_ACQUIRE), zero = 0;
    if (!base || round < base || round - base >= (uint64_t)__atomic_load_n(&kb_pc.slots, __ATOMIC_ACQUIRE)) return;
    if (__atomic_compare_exchange_n(&kb_pc.arr[round - base], &zero, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        __atomic_add_fetch(&kb_pc.seen, 1, __ATOMIC_RELEASE);
}

static uint64_t kb_reconciles; /* atomic */

static kctl_reconcile_result kb_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    uint64_t now = rb_now(), round = 0;
    memset(&r, 0, sizeof r);
    __atomic_add_fetch(&kb_reconciles, 1, __ATOMIC_RELAXED);
    if (ctx->obj && kctl_obj_get_uint64(ctx->obj, "spec.round", &round) == KCTL_OK) kb_arrive(round, now);
    return r;
}

typedef struct kb_pacer {
    pthread_t th;
    const kctl_transport *t;
    int k;
} kb_pacer;

static void *kb_pacer_run(void *arg) {
    kb_pacer *me = (kb_pacer *)arg;
    char doc[512];
    int s, slots = kb_pc.slots;
    for (s = me->k; s < slots; s += KB_PACERS) {
        uint64_t due = kb_pc.t0 + (uint64_t)s * kb_pc.period, sent;
        struct timespec ts;
        int n, rc;
        ts.tv_sec = (time_t)(due / 1000000000u);
        ts.tv_nsec = (long)(due % 1000000000u);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
        sent = rb_now();
        if (sent <= due + KB_LATE_NS) __atomic_add_fetch(&kb_pc.kept, 1, __ATOMIC_RELAXED);
        kb_pc.sent[s] = sent;
        n = kb_doc(doc, sizeof doc, s % KB_OBJECTS, sent, kb_pc.base + (uint64_t)s);
        rc = kctl_transport_update(me->t, &kb_res, doc, (size_t)n, NULL, NULL);
        if (rc == KCTL_OK) {
            kb_pc.ack[s] = rb_now();
            __atomic_add_fetch(&kb_pc.ok, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_add_fetch(&kb_pc.failed, 1, __ATOMIC_RELAXED);
            kb_pc.last_error = rc;
        }
    }
    return NULL;
}

typedef struct kb_paced_res {
    uint64_t slots, kept, ok, failed, seen;
    int last_error;
    double cpu_us; /* this process's CPU per accepted write */
    rb_pct call, arr;
} kb_paced_res;

/* seconds of paced writes through t, then up to wait_s for their arrivals. */
static void kb_paced(const kctl_transport *t, double wait_s, kb_paced_res *out) {
    kb_pacer th[KB_PACERS];
    uint64_t t1;
    size_t n, s;
    double cpu0 = rb_self_cpu();
    int k, slots = (int)(kb_opt.seconds * kb_opt.rate);
    if (slots > KB_MAX_SLOTS) slots = KB_MAX_SLOTS;
    __atomic_store_n(&kb_pc.base, 0, __ATOMIC_RELEASE);
    memset(kb_pc.sent, 0, sizeof kb_pc.sent);
    memset(kb_pc.ack, 0, sizeof kb_pc.ack);
    memset(kb_pc.arr, 0, sizeof kb_pc.arr);
    kb_pc.ok = kb_pc.failed = kb_pc.kept = kb_pc.seen = 0;
    kb_pc.last_error = 0;
    kb_pc.period = 1000000000u / (uint64_t)kb_opt.rate;
    kb_pc.t0 = rb_now() + 20000000u;
    __atomic_store_n(&kb_pc.slots, slots, __ATOMIC_RELEASE);
    __atomic_store_n(&kb_pc.base, (uint64_t)(++kb_runs) * 1000000u, __ATOMIC_RELEASE);
    for (k = 0; k < KB_PACERS; k++) {
        th[k].t = t;
        th[k].k = k;
        if (pthread_create(&th[k].th, NULL, kb_pacer_run, &th[k]) != 0) {
            fprintf(stderr, "bench-kube: no thread\n");
            exit(1);
        }
    }
    for (k = 0; k < KB_PACERS; k++) pthread_join(th[k].th, NULL);
    t1 = rb_now();
    while (__atomic_load_n(&kb_pc.seen, __ATOMIC_ACQUIRE) < kb_pc.ok && rb_now() - t1 < (uint64_t)(wait_s * 1e9)) rb_sleep_ms(2);
    __atomic_store_n(&kb_pc.base, 0, __ATOMIC_RELEASE);
    memset(out, 0, sizeof *out);
    out->slots = (uint64_t)slots;
    out->kept = kb_pc.kept;
    out->ok = kb_pc.ok;
    out->failed = kb_pc.failed;
    out->last_error = kb_pc.last_error;
    out->cpu_us = kb_pc.ok ? (rb_self_cpu() - cpu0) * 1e6 / (double)kb_pc.ok : 0;
    for (s = 0, n = 0; s < (size_t)slots; s++)
        if (kb_pc.ack[s]) kb_scratch[n++] = (double)(kb_pc.ack[s] - kb_pc.sent[s]) / 1e6;
    out->call = rb_pct_of(kb_scratch, n);
    for (s = 0, n = 0; s < (size_t)slots; s++)
        if (kb_pc.ack[s] && __atomic_load_n(&kb_pc.arr[s], __ATOMIC_RELAXED)) kb_scratch[n++] = (double)(kb_pc.arr[s] - kb_pc.sent[s]) / 1e6;
    out->arr = rb_pct_of(kb_scratch, n);
    out->seen = n;
}

static void kb_paced_print(const char *who, const kb_paced_res *p) {
    printf("   %llu %s due at %d/s: %llu left within 1 ms of their deadline, %llu accepted", (unsigned long long)p->slots,
           kb_opt.kctl_writes ? "HTTP PUTs (a second kube transport)" : "memstore updates", kb_opt.rate, (unsigned long long)p->kept,
           (unsigned long long)p->ok);
    if (p->failed) printf(", %llu failed (last: %s)", (unsigned long long)p->failed, kctl_strerror(p->last_error));
    printf("\n   the write call: p50 %.3f ms, p99 %.3f ms\n", p->call.p50, p->call.p99);
    printf("   write -> %s: p50 %.3f ms, p99 %.3f ms, max %.2f ms (%llu of %llu seen); cpu %.0f us a write (server and client)\n", who,
           p->arr.p50, p->arr.p99, p->arr.max, (unsigned long long)p->seen, (unsigned long long)p->ok, p->cpu_us);
}

/* ---- the yardstick: a bare libcurl watch ------------------------------- */
typedef struct kb_bare {
    pthread_t th;
    char url[256];
    char buf[65536];
    size_t len;
    int stop, open; /* atomic */
} kb_bare;

static size_t kb_bare_write(char *data, size_t size, size_t nm, void *ud) {
    kb_bare *b = (kb_bare *)ud;
    size_t n = size * nm, i, start = 0;
    uint64_t now = rb_now();
    __atomic_store_n(&b->open, 1, __ATOMIC_RELEASE);
    if (b->len + n > sizeof b->buf) b->len = 0; /* a line past 64 KiB: not ours */
    if (n > sizeof b->buf) return n;
    memcpy(b->buf + b->len, data, n);
    b->len += n;
    for (i = 0; i < b->len; i++) {
        const char *p, *end;
        if (b->buf[i] != '\n') continue;
        end = b->buf + i;
        p = (const char *)memmem(b->buf + start, (size_t)(end - (b->buf + start)), "\"round\":", 8);
        if (p) {
            uint64_t v = 0;
            for (p += 8; p < end && *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
            kb_arrive(v, now);
        }
        start = i + 1;
    }
    memmove(b->buf, b->buf + start, b->len - start);
    b->len -= start;
    return n;
}

static int kb_bare_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    return __atomic_load_n(&((kb_bare *)ud)->stop, __ATOMIC_ACQUIRE) ? 1 : 0;
}

static void *kb_bare_run(void *arg) {
    kb_bare *b = (kb_bare *)arg;
    CURL *c = curl_easy_init();
    if (c) {
        curl_easy_setopt(c, CURLOPT_URL, b->url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kb_bare_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, kb_bare_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, b);
        curl_easy_perform(c);
        curl_easy_cleanup(c);
    }
    return NULL;
}

/* ---- the list's yardstick: the same pages by bare libcurl, bytes kept and
   the continue token found, nothing decoded ----------------------------- */
typedef struct kb_page {
    char *p;
    size_t len, cap;
} kb_page;

static size_t kb_page_write(char *data, size_t size, size_t nm, void *ud) {
    kb_page *pg = (kb_page *)ud;
    size_t n = size * nm;
    if (pg->len + n + 1 > pg->cap) {
        size_t cap = pg->cap ? pg->cap * 2 : 262144;
        char *np;
        while (cap < pg->len + n + 1) cap *= 2;
        if (!(np = (char *)realloc(pg->p, cap))) return 0;
        pg->p = np;
        pg->cap = cap;
    }
    memcpy(pg->p + pg->len, data, n);
    pg->len += n;
    pg->p[pg->len] = '\0';
    return n;
}

/* Every page of 500 from url: the objects listed (-1: a request failed). */
static long kb_bare_list(const char *server) {
    CURL *c = curl_easy_init();
    kb_page pg;
    char url[1024], token[512] = "";
    long items = 0;
    memset(&pg, 0, sizeof pg);
    if (!c) return -1;
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kb_page_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &pg);
    for (;;) {
        const char *k, *p;
        snprintf(url, sizeof url, "%s/apis/bench.kctl.io/v1/namespaces/bench/widgets?limit=500%s%s", server, token[0] ? "&continue=" : "",
                 token);
        curl_easy_setopt(c, CURLOPT_URL, url);
        pg.len = 0;
        if (curl_easy_perform(c) != CURLE_OK || !pg.p) {
            items = -1;
            break;
        }
        for (p = pg.p; (p = strstr(p, "{\"metadata\":{\"name\":")) != NULL; p++) items++;
        token[0] = '\0';
        if ((k = strstr(pg.p, "\"continue\":\"")) != NULL) {
            size_t n = strcspn(k + 12, "\"");
            char *esc = n ? curl_easy_escape(c, k + 12, (int)n) : NULL;
            if (esc && strlen(esc) < sizeof token) snprintf(token, sizeof token, "%s", esc);
            curl_free(esc);
        }
        if (!token[0]) break;
    }
    free(pg.p);
    curl_easy_cleanup(c);
    return items;
}

/* ---- one run ----------------------------------------------------------- */
typedef struct kb_result {
    bool busy, ok;
    double sync_s, first_rec_s, sync_cpu_s, bare_list_s, bare_list_cpu_s;
    double live_b, peak_b, allocs; /* per object */
    kb_paced_res rec, bare;
} kb_result;

static int kb_run(bool busy, int run, kb_result *res) {
    kt_kube_server_desc sd;
    kt_kube_server *s = NULL;
    kctl_transport ms, tk, tw;
    kctl_kube_desc kd;
    kctl_informer_desc id;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *ctl = NULL;
    char doc[512], load[128] = "";
    uint64_t t0, live0, allocs0;
    double cpu0;
    pid_t burner = 0;
    int i, rc = -1;
    FILE *f;

    memset(res, 0, sizeof *res);
    memset(&tk, 0, sizeof tk);
    memset(&tw, 0, sizeof tw);
    res->busy = busy;
    if ((f = fopen("/proc/loadavg", "r")) != NULL) {
        if (fgets(load, sizeof load, f)) load[strcspn(load, "\n")] = '\0';
        fclose(f);
    }
    if (busy) burner = rb_burner_start();
    printf("\n== run %d, %s; load average before: %s\n", run, busy ? "busy (a while(1) burner pinned to the last CPU)" : "idle (no burner)",
           load);
    memset(&sd, 0, sizeof sd);
    sd.resources = kb_served;
    sd.resource_count = sizeof kb_served / sizeof kb_served[0];
    sd.history = 65536; /* every paced write stays in the watch history */
    if (kt_kube_server_start(&sd, &s) != KCTL_OK) {
        fprintf(stderr, "bench-kube: the test API server did not start\n");
        goto out;
    }
    ms = kt_kube_server_transport(s);
    for (i = 0; i < KB_OBJECTS; i++) {
        int n = kb_doc(doc, sizeof doc, i, 0, 0);
        if (kctl_transport_create(&ms, &kb_res, doc, (size_t)n, NULL, NULL) != KCTL_OK) {
            fprintf(stderr, "bench-kube: loading the objects failed\n");
            goto out;
        }
    }

    /* 1. list and sync */
    kd = kctl_kube_desc_init();
    kd.server = kt_kube_server_url(s);
    kd.allocator = rb_counting();
    if (kctl_kube_create(&kd, &tk) != KCTL_OK) goto out;
    kd.allocator.alloc_fn = NULL; /* the writers' transport: plain malloc, its own connections */
    kd.allocator.free_fn = NULL;
    if (kb_opt.kctl_writes && kctl_kube_create(&kd, &tw) != KCTL_OK) goto out;
    memset(&id, 0, sizeof id);
    id.transport = tk;
    id.resource = kb_res;
    id.allocator = rb_counting();
    if (kctl_informer_create(&id, &inf) != KCTL_OK) goto out;
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.transport = tk;
    cd.reconcile = kb_reconcile;
    cd.workers = 2;
    cd.allocator = rb_counting();
    if (kctl_controller_create(&cd, &ctl) != KCTL_OK) goto out;
    __atomic_store_n(&kb_reconciles, 0, __ATOMIC_RELEASE);
    live0 = __atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED);
    allocs0 = __atomic_load_n(&rb_mem.allocs, __ATOMIC_RELAXED);
    __atomic_store_n(&rb_mem.peak, live0, __ATOMIC_RELAXED);
    cpu0 = rb_self_cpu();
    t0 = rb_now();
    if (kctl_informer_start(inf) != KCTL_OK || kctl_informer_wait_for_sync(inf, KCTL_SEC(60)) != KCTL_OK) {
        fprintf(stderr, "bench-kube: the informer did not sync\n");
        goto out;
    }
    res->sync_s = bench_seconds(t0, rb_now());
    res->sync_cpu_s = rb_self_cpu() - cpu0;
    res->live_b = (double)(__atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED) - live0) / KB_OBJECTS;
    res->peak_b = (double)(__atomic_load_n(&rb_mem.peak, __ATOMIC_RELAXED) - live0) / KB_OBJECTS;
    res->allocs = (double)(__atomic_load_n(&rb_mem.allocs, __ATOMIC_RELAXED) - allocs0) / KB_OBJECTS;
    printf("1. list and sync %d objects (pages of 500): %.3f s (%.0f objects/s), cpu %.3f s (server and client)\n", KB_OBJECTS, res->sync_s,
           KB_OBJECTS / res->sync_s, res->sync_cpu_s);
    printf("   through kctl's allocator: %.0f bytes/object live, %.0f at the peak; %.1f allocations/object\n", res->live_b, res->peak_b,
           res->allocs);
    t0 = rb_now();
    if (kctl_controller_start(ctl, KCTL_SEC(60)) != KCTL_OK) goto out;
    while (__atomic_load_n(&kb_reconciles, __ATOMIC_ACQUIRE) < KB_OBJECTS && rb_now() - t0 < KCTL_SEC(60)) rb_sleep_ms(1);
    res->first_rec_s = bench_seconds(t0, rb_now());
    printf("   the first %d reconciles (2 workers): %.3f s\n", KB_OBJECTS, res->first_rec_s);
    {
        long items;
        cpu0 = rb_self_cpu();
        t0 = rb_now();
        items = kb_bare_list(kt_kube_server_url(s));
        res->bare_list_s = bench_seconds(t0, rb_now());
        res->bare_list_cpu_s = rb_self_cpu() - cpu0;
        printf("   yardstick: the same pages by bare libcurl (bytes kept, nothing decoded): %ld objects in %.3f s, cpu %.3f s\n", items,
               res->bare_list_s, res->bare_list_cpu_s);
    }
    fflush(stdout);
    rb_sleep_ms(100);

    /* 2. paced, reconciled */
    kb_paced(kb_opt.kctl_writes ? &tw : &ms, 10.0, &res->rec);
    printf("2. paced, reconciled (%d pacer threads; the controller's 2 workers):\n", KB_PACERS);
    kb_paced_print("reconcile", &res->rec);
    fflush(stdout);
    kctl_controller_stop(ctl);
    kctl_informer_stop(inf);
    kctl_controller_destroy(ctl);
    kctl_informer_destroy(inf);
    ctl = NULL;
    inf = NULL;

    /* 3. the yardstick */
    {
        kb_bare *b = (kb_bare *)calloc(1, sizeof *b);
        kctl_list_opts lo;
        kctl_list_result l;
        memset(&lo, 0, sizeof lo);
        memset(&l, 0, sizeof l);
        lo.limit = 1;
        if (b && kctl_transport_list(&ms, &kb_res, &lo, &l, NULL) == KCTL_OK) {
            snprintf(b->url, sizeof b->url, "%s/apis/bench.kctl.io/v1/namespaces/bench/widgets?watch=1&resourceVersion=%s",
                     kt_kube_server_url(s), l.resource_version);
            kctl_list_result_free(&l);
            if (pthread_create(&b->th, NULL, kb_bare_run, b) == 0) {
                t0 = rb_now();
                while (!__atomic_load_n(&b->open, __ATOMIC_ACQUIRE) && rb_now() - t0 < KCTL_SEC(5)) { /* its first bytes: an event of a probe */
                    int n = kb_doc(doc, sizeof doc, 0, 1, 1);
                    kctl_transport_update(&ms, &kb_res, doc, (size_t)n, NULL, NULL);
                    rb_sleep_ms(20);
                }
                kb_paced(kb_opt.kctl_writes ? &tw : &ms, 5.0, &res->bare);
                printf("3. the same paced writes seen by a bare libcurl watch (chunks scanned for \"round\"; kctl's informer stopped):\n");
                kb_paced_print("arrival", &res->bare);
                __atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
                kt_kube_server_end_watches(s);
                pthread_join(b->th, NULL);
            }
        }
        free(b);
    }
    rc = 0;
    res->ok = true;
out:
    if (ctl) kctl_controller_stop(ctl);
    if (inf) kctl_informer_stop(inf);
    kctl_controller_destroy(ctl);
    kctl_informer_destroy(inf);
    kctl_transport_destroy(&tk);
    kctl_transport_destroy(&tw);
    kt_kube_server_stop(s);
    if (__atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED) != 0)
        printf("   (kctl's allocator: %llu bytes still live after everything was destroyed)\n",
               (unsigned long long)__atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED));
    if (burner > 0) { /* by pid: our child */
        kill(burner, SIGKILL);
        waitpid(burner, NULL, 0);
    }
    fflush(stdout);
    return rc;
}

/* ---- the summary: each figure's median of the runs, with its range ------ */
static void kb_cell(char *cell, size_t cap, const kb_result *r, size_t off, const char *fmt) {
    double v[BENCH_RUNS], lo, hi, med;
    int i;
    for (i = 0; i < BENCH_RUNS; i++) {
        if (!r[i].ok) {
            snprintf(cell, cap, "-");
            return;
        }
        memcpy(&v[i], (const char *)&r[i] + off, sizeof(double));
    }
    med = bench_median(v); /* sorts v */
    lo = v[0];
    hi = v[BENCH_RUNS - 1];
    {
        char a[16], b[16], c[16];
        snprintf(a, sizeof a, fmt, med);
        snprintf(b, sizeof b, fmt, lo);
        snprintf(c, sizeof c, fmt, hi);
        snprintf(cell, cap, "%s (%s-%s)", a, b, c);
    }
}

static void kb_summary(const kb_result *idle, const kb_result *busy) {
    char a[64], b[64];
    printf("\nsummary: %d objects of %d bytes; paced %s at %d/s for %.1f s; median of %d runs (min-max)\n", KB_OBJECTS, KB_DOC_BYTES,
           kb_opt.kctl_writes ? "HTTP PUTs through a second kube transport" : "updates through the server's memstore", kb_opt.rate,
           kb_opt.seconds, BENCH_RUNS);
    printf("%-44s %-26s %-26s\n", "", "idle", "busy");
#define KB_ROW(label, field, fmt) \
    do { \
        kb_cell(a, sizeof a, idle, offsetof(kb_result, field), fmt); \
        kb_cell(b, sizeof b, busy, offsetof(kb_result, field), fmt); \
        printf("%-44s %-26s %-26s\n", label, kb_opt.idle ? a : "-", kb_opt.busy ? b : "-"); \
    } while (0)
    KB_ROW("1. list + sync of 10,000, s", sync_s, "%.3f");
    KB_ROW("   cpu for it (server and client), s", sync_cpu_s, "%.3f");
    KB_ROW("   kctl allocator, bytes/object live", live_b, "%.0f");
    KB_ROW("   kctl allocator, bytes/object at peak", peak_b, "%.0f");
    KB_ROW("   kctl allocations/object", allocs, "%.1f");
    KB_ROW("   first 10,000 reconciles, s", first_rec_s, "%.3f");
    KB_ROW("   bare libcurl list of the same pages, s", bare_list_s, "%.3f");
    KB_ROW("   cpu for it (server and curl), s", bare_list_cpu_s, "%.3f");
    KB_ROW("2. write call p50, ms", rec.call.p50, "%.3f");
    KB_ROW("   write call p99, ms", rec.call.p99, "%.3f");
    KB_ROW("   write -> reconcile p50, ms", rec.arr.p50, "%.3f");
    KB_ROW("   write -> reconcile p99, ms", rec.arr.p99, "%.3f");
    KB_ROW("   write -> reconcile max, ms", rec.arr.max, "%.2f");
    KB_ROW("   cpu per write, us", rec.cpu_us, "%.0f");
    KB_ROW("3. write -> bare watch p50, ms", bare.arr.p50, "%.3f");
    KB_ROW("   write -> bare watch p99, ms", bare.arr.p99, "%.3f");
    KB_ROW("   cpu per write, us", bare.cpu_us, "%.0f");
#undef KB_ROW
}

int main(int argc, char **argv) {
    kb_result idle[BENCH_RUNS], busy[BENCH_RUNS];
    int i, failed = 0;
    (void)bench_sort_pairs; /* bench.h's, unused here */
    (void)bench_print_runs;
    (void)bench_xorshift;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--idle-only") == 0) kb_opt.busy = false;
        else if (strcmp(argv[i], "--busy-only") == 0) kb_opt.idle = false;
        else if (strcmp(argv[i], "--kctl-writes") == 0) kb_opt.kctl_writes = true;
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) kb_opt.seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc) kb_opt.rate = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--idle-only] [--busy-only] [--kctl-writes] [--seconds S] [--rate N]\n", argv[0]);
            return 2;
        }
    }
    if (!(kb_opt.seconds >= 0.5 && kb_opt.seconds <= 30) || kb_opt.rate < 10 || kb_opt.rate > 10000 ||
        kb_opt.seconds * kb_opt.rate > KB_MAX_SLOTS || (!kb_opt.idle && !kb_opt.busy)) {
        fprintf(stderr, "bench-kube: seconds 0.5..30, rate 10..10000 writes/s, at most %d writes\n", KB_MAX_SLOTS);
        return 2;
    }
    memset(idle, 0, sizeof idle);
    memset(busy, 0, sizeof busy);
    printf("kctl %s on the test API server (tests/kube_server.c, in this process) over loopback HTTP/1.1; %ld CPUs online\n",
           kctl_version(), sysconf(_SC_NPROCESSORS_ONLN));
    for (i = 0; i < BENCH_RUNS; i++) {
        if (kb_opt.idle) failed |= kb_run(false, i + 1, &idle[i]);
        if (kb_opt.busy) failed |= kb_run(true, i + 1, &busy[i]);
    }
    kb_summary(idle, busy);
    return failed ? 1 : 0;
}
