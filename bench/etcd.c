/* etcd.c - kctl on a real etcd cluster, through kctl_http_curl.h's etcd
   transport. Prints figures; asserts nothing. bench/ETCD.md says what
   bounds each one.

   The bench starts its own clusters (tests/etcd_harness.h: the etcd binary
   on 127.0.0.1, free ports, data in $TMPDIR), one member and then three,
   and stops them by pid when done. Each run gets a fresh cluster:

   1. list and sync: 10,000 objects of about 300 bytes of JSON written by
      raw txns (100 puts each), then an informer on the etcd transport
      starts: seconds from start to has_synced (every page listed, decoded,
      cached, handed to a controller's handler); the memory it took: the
      growth of the peak resident set (VmHWM, reset first) and of VmRSS,
      and what went through kctl's allocator (a counting kctl_allocator on
      the transport, the informer and the controller: live bytes, peak,
      allocations). Then the first 10,000 reconciles.
   2. sustained writes: W writer threads (their own transport, so their
      own connections) update objects as fast as etcd takes them for a
      fixed time, through kctl (each update reads the object, then writes
      it in a txn on the version read: two round trips); the informer and
      a controller (2 workers) reconcile. Writes/s accepted, watch events/s
      and reconciles/s from the first write until every write has reached
      the cache and the queue is empty. Then raw puts (no kctl: one put
      per request over kept-alive libcurl connections) for half as long,
      for etcd's own rate on this machine.
   3. paced writes: 1,000 writes/s for a fixed time, each due at an
      absolute deadline (clock_nanosleep TIMER_ABSTIME; 8 pacer threads
      take the slots in turn, so one slow write does not shift the
      others). A write is a raw put by default (one request: the writer's
      own cost stays small; --kctl-writes sends kctl updates instead). Each
      carries its send time (CLOCK_MONOTONIC ns) in spec.sent and its slot
      in spec.round; the reconcile computes now - sent: p50/p99/max, how
      many writes left on time (within 1 ms of their deadline), how many
      reconciles saw them, and the time from the put's answer to the
      reconcile (negative when the event came first).
   4. the yardstick: the same paced writes watched by `etcdctl watch
      --prefix` (a child process; its output timestamped as it arrives on
      a pipe), then by a bare libcurl watch on the gateway (/v3/watch,
      values base64-decoded and nothing else): write -> arrival. kctl's
      informer and controller are stopped by then.

   With each phase: the CPU the bench and the etcd members used, and the
   members' WAL fsyncs (from their /metrics). Every run happens idle, then
   again with a burner: a child process spinning in while(1), pinned to
   the last CPU (sched_setaffinity), started before the cluster and killed
   after it. The load average is printed with each run: on a shared machine
   "idle" only means no burner of ours.

   build/bench-etcd [--quick] [--members N] [--idle-only] [--busy-only]
                    [--seconds S] [--writers N] [--kctl-writes]
   --quick: 2 s phases instead of 5. Without etcd it prints why and exits 0.
   etcdctl: $KCTL_ETCDCTL_BIN, else etcdctl in $PATH; without it part 4's
   etcdctl run is skipped (said so). */
#define _GNU_SOURCE /* sched_setaffinity, malloc_trim */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include "../kctl_http_curl.h"
#include "../tests/etcd_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
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

#define EB_OBJECTS 10000
#define EB_DOC_BYTES 300
#define EB_PER_TXN 100        /* etcd's --max-txn-ops is 128 */
#define EB_PACE_HZ 1000
#define EB_PACERS 8
#define EB_LATE_NS 1000000u   /* a write that leaves more than 1 ms after its deadline did not keep pace */
#define EB_MAX_LAT (1u << 21)  /* saturated latencies kept */
#define EB_MAX_SLOTS (60 * EB_PACE_HZ)

static const kctl_resource eb_res = { "bench.kctl.io", "v1", "widgets", "bench" };
static const char eb_prefix[] = "/registry/bench.kctl.io/widgets/bench/";

static struct {
    double phase_s;
    int writers;
    int members; /* 0: 1 then 3 */
    bool idle, busy;
    bool kctl_writes; /* paced writes through kctl, not raw puts */
} eb_opt = { 5.0, 8, 0, true, true, false };

/* ---- /proc ------------------------------------------------------------ */
static long eb_status_kib(const char *field) {
    char line[256];
    size_t fl = strlen(field);
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, fl) == 0 && line[fl] == ':') kib = strtol(line + fl + 1, NULL, 10);
    fclose(f);
    return kib;
}

/* Start the peak resident set (VmHWM) again from the current one. */
static void eb_reset_hwm(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

/* CPU seconds a process has used (utime + stime), -1 when unknown. */
static double eb_proc_cpu(pid_t pid) {
    char path[64], buf[1024], *p;
    unsigned long ut = 0, st = 0;
    FILE *f;
    size_t n;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r"))) return -1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!(p = strrchr(buf, ')'))) return -1;
    /* after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double eb_cluster_cpu(const kt_etcd_cluster *c) {
    double s = 0;
    int i;
    for (i = 0; i < c->n; i++)
        if (c->m[i].pid > 0) s += eb_proc_cpu(c->m[i].pid);
    return s;
}

/* ---- latencies -------------------------------------------------------- */
/* Latencies of the sustained phase, as reconciles see them. */
static struct {
    double *v;
    size_t n;       /* atomic; may pass EB_MAX_LAT (then only that many are kept) */
    uint64_t floor; /* atomic: stamps below it are from an earlier phase */
} eb_sat;

static void eb_sat_add(uint64_t ns) {
    size_t i = __atomic_fetch_add(&eb_sat.n, 1, __ATOMIC_RELAXED);
    if (i < EB_MAX_LAT) eb_sat.v[i] = (double)ns / 1e6;
}

static void eb_sat_reset(uint64_t floor) {
    __atomic_store_n(&eb_sat.floor, floor, __ATOMIC_RELEASE);
    __atomic_store_n(&eb_sat.n, 0, __ATOMIC_RELEASE);
}

/* ---- etcd's own figures: WAL fsyncs, from each member's /metrics ------ */
typedef struct eb_fsync {
    double sum_s;
    double count;
} eb_fsync;

static eb_fsync eb_fsync_now(const kt_etcd_cluster *c) {
    eb_fsync f;
    kt_etcd_reply r;
    int i;
    memset(&f, 0, sizeof f);
    memset(&r, 0, sizeof r);
    for (i = 0; i < c->n; i++) {
        const char *p;
        if (kt_etcd_http(c->m[i].url, "GET", "/metrics", NULL, NULL, 5000, &r) != 0 || !r.body) continue;
        if ((p = strstr(r.body, "\netcd_disk_wal_fsync_duration_seconds_sum ")) != NULL) f.sum_s += strtod(p + 42, NULL);
        if ((p = strstr(r.body, "\netcd_disk_wal_fsync_duration_seconds_count ")) != NULL) f.count += strtod(p + 44, NULL);
    }
    kt_etcd_reply_free(&r);
    return f;
}

/* What a phase cost: the bench process (every thread), the etcd members, their fsyncs. */
typedef struct eb_cost {
    double self, etcd;
    uint64_t t;
    eb_fsync fs;
} eb_cost;

static eb_cost eb_cost_now(const kt_etcd_cluster *c) {
    eb_cost x;
    x.fs = eb_fsync_now(c);
    x.self = rb_self_cpu();
    x.etcd = eb_cluster_cpu(c);
    x.t = rb_now();
    return x;
}

static void eb_cost_print(const char *indent, const kt_etcd_cluster *c, eb_cost a, double writes) {
    eb_cost b = eb_cost_now(c);
    double wall = bench_seconds(a.t, b.t), n = b.fs.count - a.fs.count;
    printf("%scost over %.2f s: cpu bench %.2f s (%.0f%% of a core), etcd %.2f s (%.0f%%); WAL fsyncs %.0f", indent, wall,
           b.self - a.self, 100.0 * (b.self - a.self) / wall, b.etcd - a.etcd, 100.0 * (b.etcd - a.etcd) / wall, n);
    if (n > 0) printf(" (mean %.2f ms", 1000.0 * (b.fs.sum_s - a.fs.sum_s) / n);
    if (n > 0 && writes > 0) printf(", %.2f per write per member", n / writes / c->n);
    printf("%s\n", n > 0 ? ")" : "");
}

/* ---- documents -------------------------------------------------------- */
static const char eb_pad[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/* Object i's document, about EB_DOC_BYTES long. stored: as the load puts
   it in etcd directly (with uid, creationTimestamp, generation, as the
   API-server rules would have made them); else as a writer sends an
   update (the rules keep the rest). */
static int eb_doc(char *buf, size_t cap, int i, uint64_t sent, uint64_t round, bool stored) {
    int pad = 0, n;
    for (;;) {
        if (stored)
            n = snprintf(buf, cap,
                         "{\"apiVersion\":\"bench.kctl.io/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w-%05d\",\"namespace\":\"bench\","
                         "\"uid\":\"6f1c2a3e-0000-4000-8000-%012d\",\"creationTimestamp\":\"2025-01-01T00:00:00Z\",\"generation\":1,"
                         "\"labels\":{\"app\":\"bench\",\"shard\":\"%d\"}},\"spec\":{\"sent\":%llu,\"round\":%llu,\"payload\":\"%.*s\"}}",
                         i, i, i % 16, (unsigned long long)sent, (unsigned long long)round, pad, eb_pad);
        else
            n = snprintf(buf, cap,
                         "{\"apiVersion\":\"bench.kctl.io/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w-%05d\",\"namespace\":\"bench\","
                         "\"labels\":{\"app\":\"bench\",\"shard\":\"%d\"}},\"spec\":{\"sent\":%llu,\"round\":%llu,\"payload\":\"%.*s\"}}",
                         i, i % 16, (unsigned long long)sent, (unsigned long long)round, pad, eb_pad);
        if (n < 0 || (size_t)n >= cap) return -1;
        if (pad || n >= EB_DOC_BYTES) return n;
        pad = EB_DOC_BYTES - n;
        if (pad > (int)sizeof eb_pad - 1) pad = (int)sizeof eb_pad - 1;
    }
}

static int eb_index(const char *name) {
    const char *dash = name ? strrchr(name, '-') : NULL;
    int i = dash ? atoi(dash + 1) : -1;
    return i >= 0 && i < EB_OBJECTS ? i : -1;
}

/* The objects, by raw txns through a member's gateway (EB_PER_TXN puts each). */
static int eb_load(const char *url, double *seconds) {
    size_t cap = (size_t)EB_PER_TXN * 1024 + 64;
    char *body = (char *)malloc(cap), doc[512], key[128];
    kt_etcd_reply r;
    uint64_t t0 = rb_now();
    int i, rc = 0;
    memset(&r, 0, sizeof r);
    if (!body) return -1;
    for (i = 0; i < EB_OBJECTS && rc == 0; i += EB_PER_TXN) {
        size_t len = 0;
        int k;
        len += (size_t)snprintf(body + len, cap - len, "{\"success\":[");
        for (k = i; k < i + EB_PER_TXN && k < EB_OBJECTS; k++) {
            int dn = eb_doc(doc, sizeof doc, k, 0, 0, true), kn = snprintf(key, sizeof key, "%sw-%05d", eb_prefix, k);
            char *bk = kt_etcd_b64(key, (size_t)kn), *bv = dn > 0 ? kt_etcd_b64(doc, (size_t)dn) : NULL;
            if (!bk || !bv) rc = -1;
            else
                len += (size_t)snprintf(body + len, cap - len, "%s{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\"}}", k > i ? "," : "", bk, bv);
            free(bk);
            free(bv);
        }
        len += (size_t)snprintf(body + len, cap - len, "]}");
        if (rc == 0 && len >= cap) rc = -1;
        if (rc == 0 && kt_etcd_http(url, "POST", "/v3/kv/txn", body, NULL, 20000, &r) != 0) {
            fprintf(stderr, "bench-etcd: a load txn failed: http %d %s\n", r.http, r.error);
            rc = -1;
        }
    }
    kt_etcd_reply_free(&r);
    free(body);
    *seconds = bench_seconds(t0, rb_now());
    return rc;
}

/* ---- paced slots: slot s of a paced run is due at t0 + s ms and carries
   spec.round = base + s; whoever sees it (a reconcile, etcdctl, the bare
   watch) records its first arrival. */
static struct {
    uint64_t base;  /* atomic: round of slot 0 (0: no run) */
    int slots;      /* atomic */
    uint64_t t0;
    uint64_t sent[EB_MAX_SLOTS], ack[EB_MAX_SLOTS], arr[EB_MAX_SLOTS]; /* ack: 0 unless the write succeeded */
    uint64_t ok, failed, kept, seen, last_end; /* atomic */
    int last_error;
} eb_pc;
static unsigned eb_runs; /* paced runs so far: each has rounds of its own */

static void eb_arrive(uint64_t round, uint64_t now) {
    uint64_t base = __atomic_load_n(&eb_pc.base, __ATOMIC_ACQUIRE), zero = 0;
    if (!base || round < base || round - base >= (uint64_t)__atomic_load_n(&eb_pc.slots, __ATOMIC_ACQUIRE)) return;
    if (__atomic_compare_exchange_n(&eb_pc.arr[round - base], &zero, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        __atomic_add_fetch(&eb_pc.seen, 1, __ATOMIC_RELEASE);
}

/* Every "round": in text[0..n), as arrivals at now. */
static void eb_arrivals(const char *text, size_t n, uint64_t now) {
    const char *p = text, *end = text + n;
    while (p < end && (p = (const char *)memmem(p, (size_t)(end - p), "\"round\":", 8)) != NULL) {
        uint64_t v = 0;
        for (p += 8; p < end && *p >= '0' && *p <= '9'; p++) v = v * 10 + (uint64_t)(*p - '0');
        eb_arrive(v, now);
    }
}

/* ---- the controller's side -------------------------------------------- */
static uint64_t eb_last_seen[EB_OBJECTS]; /* atomic: the newest spec.sent a reconcile saw, per object */
static uint64_t eb_reconciles;             /* atomic */

static kctl_reconcile_result eb_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    uint64_t now = rb_now(), sent = 0, round = 0;
    int i = eb_index(ctx->name);
    memset(&r, 0, sizeof r);
    __atomic_add_fetch(&eb_reconciles, 1, __ATOMIC_RELAXED);
    if (!ctx->obj || i < 0) return r;
    if (kctl_obj_get_uint64(ctx->obj, "spec.round", &round) == KCTL_OK) eb_arrive(round, now);
    if (kctl_obj_get_uint64(ctx->obj, "spec.sent", &sent) == KCTL_OK && sent && __atomic_exchange_n(&eb_last_seen[i], sent, __ATOMIC_ACQ_REL) != sent &&
        sent >= __atomic_load_n(&eb_sat.floor, __ATOMIC_ACQUIRE))
        eb_sat_add(now > sent ? now - sent : 0);
    return r;
}

/* ---- raw puts: one put per request on a kept-alive libcurl connection -- */
typedef struct eb_put {
    CURL *c;
    struct curl_slist *h;
    char url[128];
    char body[4096];
} eb_put;

static size_t eb_discard(char *d, size_t s, size_t n, void *u) {
    (void)d;
    (void)u;
    return s * n;
}

static int eb_put_init(eb_put *p, const char *member_url) {
    p->c = curl_easy_init();
    p->h = curl_slist_append(NULL, "Content-Type: application/json");
    snprintf(p->url, sizeof p->url, "%s/v3/kv/put", member_url);
    return p->c && p->h ? 0 : -1;
}

static void eb_put_free(eb_put *p) {
    curl_slist_free_all(p->h);
    if (p->c) curl_easy_cleanup(p->c);
}

/* Object i as the API-server rules would have stored it, with sent and round: 0 when etcd took it. */
static int eb_put_do(eb_put *p, int i, uint64_t sent, uint64_t round) {
    char doc[512], key[128], *bk, *bv;
    int dn = eb_doc(doc, sizeof doc, i, sent, round, true), kn = snprintf(key, sizeof key, "%sw-%05d", eb_prefix, i), rc = -1;
    long code = 0;
    bk = kt_etcd_b64(key, (size_t)kn);
    bv = dn > 0 ? kt_etcd_b64(doc, (size_t)dn) : NULL;
    if (bk && bv && snprintf(p->body, sizeof p->body, "{\"key\":\"%s\",\"value\":\"%s\"}", bk, bv) < (int)sizeof p->body) {
        curl_easy_setopt(p->c, CURLOPT_URL, p->url);
        curl_easy_setopt(p->c, CURLOPT_POSTFIELDS, p->body);
        curl_easy_setopt(p->c, CURLOPT_HTTPHEADER, p->h);
        curl_easy_setopt(p->c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(p->c, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(p->c, CURLOPT_WRITEFUNCTION, eb_discard);
        if (curl_easy_perform(p->c) == CURLE_OK && curl_easy_getinfo(p->c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200) rc = 0;
    }
    free(bk);
    free(bv);
    return rc;
}

/* ---- writers ---------------------------------------------------------- */
typedef struct eb_writer {
    pthread_t th;
    const kctl_transport *t; /* kctl updates, or NULL: raw puts to url */
    const char *url;
    int id, n;               /* this writer takes the objects id, id + n, ... */
    uint64_t until;          /* stop then */
    uint64_t ok, failed;
    int last_error;
} eb_writer;

static void *eb_sustained(void *arg) {
    eb_writer *w = (eb_writer *)arg;
    eb_put put;
    char doc[512];
    unsigned round = 1;
    int i = w->id;
    memset(&put, 0, sizeof put);
    if (!w->t && eb_put_init(&put, w->url) != 0) w->until = 0;
    while (rb_now() < w->until) {
        int rc;
        if (w->t) {
            int n = eb_doc(doc, sizeof doc, i, rb_now(), round, false);
            rc = kctl_transport_update(w->t, &eb_res, doc, (size_t)n, NULL, NULL);
        } else {
            rc = eb_put_do(&put, i, rb_now(), round) == 0 ? KCTL_OK : KCTL_ERR_IO;
        }
        if (rc == KCTL_OK) w->ok++;
        else { w->failed++; w->last_error = rc; }
        i += w->n;
        if (i >= EB_OBJECTS) { i = w->id; round++; }
    }
    if (!w->t) eb_put_free(&put);
    return NULL;
}

/* n writers for seconds: the writes accepted (failed ones into *failed, the last code into *last_error). */
static uint64_t eb_writers(const kctl_transport *t, const char *url, int n, double seconds, uint64_t *failed, int *last_error) {
    eb_writer *w = (eb_writer *)calloc((size_t)n, sizeof *w);
    uint64_t until = rb_now() + (uint64_t)(seconds * 1e9), ok = 0;
    int i;
    *failed = 0;
    *last_error = 0;
    if (!w) return 0;
    for (i = 0; i < n; i++) {
        w[i].t = t;
        w[i].url = url;
        w[i].id = i;
        w[i].n = n;
        w[i].until = until;
        if (pthread_create(&w[i].th, NULL, eb_sustained, &w[i]) != 0) {
            fprintf(stderr, "bench-etcd: no thread\n");
            exit(1);
        }
    }
    for (i = 0; i < n; i++) {
        pthread_join(w[i].th, NULL);
        ok += w[i].ok;
        *failed += w[i].failed;
        if (w[i].last_error) *last_error = w[i].last_error;
    }
    free(w);
    return ok;
}

/* Paced writes: pacer k takes the slots k, k + EB_PACERS, ... and sleeps until each is due. */
typedef struct eb_pacer {
    pthread_t th;
    const kctl_transport *t; /* kctl updates, or NULL: raw puts to url */
    const char *url;
    int k;
} eb_pacer;

static void *eb_pacer_run(void *arg) {
    eb_pacer *me = (eb_pacer *)arg;
    eb_put put;
    char doc[512];
    int s, slots = eb_pc.slots;
    memset(&put, 0, sizeof put);
    if (!me->t && eb_put_init(&put, me->url) != 0) slots = 0;
    for (s = me->k; s < slots; s += EB_PACERS) {
        uint64_t due = eb_pc.t0 + (uint64_t)s * (1000000000u / EB_PACE_HZ), sent, done, prev;
        struct timespec ts;
        int rc;
        ts.tv_sec = (time_t)(due / 1000000000u);
        ts.tv_nsec = (long)(due % 1000000000u);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
        sent = rb_now();
        if (sent <= due + EB_LATE_NS) __atomic_add_fetch(&eb_pc.kept, 1, __ATOMIC_RELAXED);
        eb_pc.sent[s] = sent;
        if (me->t) {
            int n = eb_doc(doc, sizeof doc, s % EB_OBJECTS, sent, eb_pc.base + (uint64_t)s, false);
            rc = kctl_transport_update(me->t, &eb_res, doc, (size_t)n, NULL, NULL);
        } else {
            rc = eb_put_do(&put, s % EB_OBJECTS, sent, eb_pc.base + (uint64_t)s) == 0 ? KCTL_OK : KCTL_ERR_IO;
        }
        done = rb_now();
        if (rc == KCTL_OK) {
            eb_pc.ack[s] = done;
            __atomic_add_fetch(&eb_pc.ok, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_add_fetch(&eb_pc.failed, 1, __ATOMIC_RELAXED);
            eb_pc.last_error = rc;
        }
        prev = __atomic_load_n(&eb_pc.last_end, __ATOMIC_RELAXED);
        while (done > prev && !__atomic_compare_exchange_n(&eb_pc.last_end, &prev, done, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    }
    if (!me->t) eb_put_free(&put);
    return NULL;
}

/* What a paced run came to. */
typedef struct eb_paced_res {
    uint64_t slots, kept, ok, failed, seen;
    int last_error;
    double rate;            /* accepted writes/s, from the first deadline to the last answer */
    rb_pct call;            /* the write call */
    rb_pct sent_arr;        /* write sent -> seen */
    rb_pct ack_arr;         /* write answered -> seen (negative: seen first) */
} eb_paced_res;

static double eb_scratch[EB_MAX_SLOTS];

/* Run seconds of paced writes (through t, or raw puts to url), then wait
   up to wait_s for their arrivals; the figures into *out. */
static void eb_paced(const kctl_transport *t, const char *url, double seconds, double wait_s, eb_paced_res *out) {
    eb_pacer th[EB_PACERS];
    uint64_t t1;
    size_t n, s;
    int k, slots = (int)(seconds * EB_PACE_HZ);
    if (slots > EB_MAX_SLOTS) slots = EB_MAX_SLOTS;
    __atomic_store_n(&eb_pc.base, 0, __ATOMIC_RELEASE);
    memset(eb_pc.sent, 0, sizeof eb_pc.sent);
    memset(eb_pc.ack, 0, sizeof eb_pc.ack);
    memset(eb_pc.arr, 0, sizeof eb_pc.arr);
    eb_pc.ok = eb_pc.failed = eb_pc.kept = eb_pc.seen = eb_pc.last_end = 0;
    eb_pc.last_error = 0;
    eb_pc.t0 = rb_now() + 20000000u;
    __atomic_store_n(&eb_pc.slots, slots, __ATOMIC_RELEASE);
    __atomic_store_n(&eb_pc.base, (uint64_t)(++eb_runs) * 1000000u, __ATOMIC_RELEASE);
    for (k = 0; k < EB_PACERS; k++) {
        th[k].t = t;
        th[k].url = url;
        th[k].k = k;
        if (pthread_create(&th[k].th, NULL, eb_pacer_run, &th[k]) != 0) {
            fprintf(stderr, "bench-etcd: no thread\n");
            exit(1);
        }
    }
    for (k = 0; k < EB_PACERS; k++) pthread_join(th[k].th, NULL);
    t1 = rb_now();
    while (__atomic_load_n(&eb_pc.seen, __ATOMIC_ACQUIRE) < eb_pc.ok && rb_now() - t1 < (uint64_t)(wait_s * 1e9)) rb_sleep_ms(2);
    __atomic_store_n(&eb_pc.base, 0, __ATOMIC_RELEASE); /* arrivals stop counting */
    memset(out, 0, sizeof *out);
    out->slots = (uint64_t)slots;
    out->kept = eb_pc.kept;
    out->ok = eb_pc.ok;
    out->failed = eb_pc.failed;
    out->last_error = eb_pc.last_error;
    out->rate = eb_pc.last_end > eb_pc.t0 ? (double)eb_pc.ok / bench_seconds(eb_pc.t0, eb_pc.last_end) : 0;
    for (s = 0, n = 0; s < (size_t)slots; s++)
        if (eb_pc.ack[s]) eb_scratch[n++] = (double)(eb_pc.ack[s] - eb_pc.sent[s]) / 1e6;
    out->call = rb_pct_of(eb_scratch, n);
    for (s = 0, n = 0; s < (size_t)slots; s++)
        if (eb_pc.ack[s] && __atomic_load_n(&eb_pc.arr[s], __ATOMIC_RELAXED)) eb_scratch[n++] = (double)(eb_pc.arr[s] - eb_pc.sent[s]) / 1e6;
    out->sent_arr = rb_pct_of(eb_scratch, n);
    out->seen = n;
    for (s = 0, n = 0; s < (size_t)slots; s++)
        if (eb_pc.ack[s] && eb_pc.arr[s]) eb_scratch[n++] = ((double)eb_pc.arr[s] - (double)eb_pc.ack[s]) / 1e6;
    out->ack_arr = rb_pct_of(eb_scratch, n);
}

static void eb_paced_print(const char *indent, const char *who, const eb_paced_res *p) {
    printf("%s%llu %s due at %d/s: %llu left within 1 ms of their deadline, %llu accepted (%.0f/s)", indent,
           (unsigned long long)p->slots, eb_opt.kctl_writes ? "kctl updates" : "raw puts", EB_PACE_HZ, (unsigned long long)p->kept,
           (unsigned long long)p->ok, p->rate);
    if (p->failed) printf(", %llu failed (last: %s)", (unsigned long long)p->failed, kctl_strerror(p->last_error));
    printf("\n%sthe write call: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", indent, p->call.p50, p->call.p99, p->call.max);
    printf("%swrite -> %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%llu of %llu accepted writes seen)\n", indent, who, p->sent_arr.p50,
           p->sent_arr.p99, p->sent_arr.max, (unsigned long long)p->seen, (unsigned long long)p->ok);
    printf("%sthe write's answer -> %s: p50 %.2f ms, p99 %.2f ms\n", indent, who, p->ack_arr.p50, p->ack_arr.p99);
}

/* ---- the yardsticks: etcdctl watch, and a bare gateway watch ----------- */
static uint64_t eb_ctl_reads; /* atomic: reads of etcdctl's output (its watch is there once the probe shows) */

static const char *eb_etcdctl_bin(void) {
    static char path[4096];
    const char *env = getenv("KCTL_ETCDCTL_BIN"), *p = getenv("PATH");
    if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
    while (p && *p) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n && n + 9 < sizeof path) {
            memcpy(path, p, n);
            memcpy(path + n, "/etcdctl", 9);
            if (access(path, X_OK) == 0) return path;
        }
        p = c ? c + 1 : NULL;
    }
    return access("/usr/bin/etcdctl", X_OK) == 0 ? "/usr/bin/etcdctl" : NULL;
}

typedef struct eb_ctl {
    pid_t pid;
    int fd;
    pthread_t th;
} eb_ctl;

/* etcdctl's output as it comes, line by line: PUT, the key, the value (which holds "round"). */
static void *eb_ctl_reader(void *arg) {
    eb_ctl *c = (eb_ctl *)arg;
    char buf[65536];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(c->fd, buf + len, sizeof buf - len);
        uint64_t now = rb_now();
        char *nl;
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        __atomic_add_fetch(&eb_ctl_reads, 1, __ATOMIC_RELEASE);
        len += (size_t)n;
        while ((nl = (char *)memchr(buf, '\n', len)) != NULL) {
            size_t ln = (size_t)(nl - buf) + 1;
            eb_arrivals(buf, ln, now);
            memmove(buf, buf + ln, len - ln);
            len -= ln;
        }
        if (len == sizeof buf) len = 0; /* a line past 64 KiB: not ours */
    }
    return NULL;
}

static int eb_ctl_start(eb_ctl *c, const char *bin, const char *endpoint) {
    int fds[2];
    char ep[64];
    memset(c, 0, sizeof c[0]);
    snprintf(ep, sizeof ep, "--endpoints=%s", endpoint);
    if (pipe(fds) != 0) return -1;
    c->pid = fork();
    if (c->pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (c->pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* fork()ed by the main thread, which outlives it */
        dup2(fds[1], 1);
        if (dn >= 0) {
            dup2(dn, 0);
            dup2(dn, 2);
        }
        close(fds[0]);
        close(fds[1]);
        setenv("ETCDCTL_API", "3", 1);
        execl(bin, "etcdctl", ep, "watch", "--prefix", eb_prefix, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    c->fd = fds[0];
    if (pthread_create(&c->th, NULL, eb_ctl_reader, c) != 0) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        close(c->fd);
        return -1;
    }
    return 0;
}

static void eb_ctl_stop(eb_ctl *c) {
    kill(c->pid, SIGTERM); /* by pid: our child */
    waitpid(c->pid, NULL, 0);
    pthread_join(c->th, NULL);
    close(c->fd);
}

/* A watch on the gateway with libcurl alone: lines split, values base64-decoded, "round" found. */
typedef struct eb_gw {
    pthread_t th;
    char url[96];
    char body[256];
    char *buf;
    size_t len, cap;
    int stop, created; /* atomic */
} eb_gw;

static size_t eb_gw_write(char *data, size_t size, size_t nm, void *ud) {
    eb_gw *g = (eb_gw *)ud;
    size_t n = size * nm, start = 0, i;
    uint64_t now = rb_now();
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap : 65536;
        char *nb;
        while (cap < g->len + n + 1) cap *= 2;
        if (!(nb = (char *)realloc(g->buf, cap))) return 0;
        g->buf = nb;
        g->cap = cap;
    }
    memcpy(g->buf + g->len, data, n);
    for (i = g->len, g->len += n; i < g->len; i++) {
        char *line = g->buf + start, *p;
        if (g->buf[i] != '\n') continue;
        g->buf[i] = '\0';
        if (!__atomic_load_n(&g->created, __ATOMIC_ACQUIRE) && strstr(line, "\"created\":true")) __atomic_store_n(&g->created, 1, __ATOMIC_RELEASE);
        for (p = line; (p = strstr(p, "\"value\":\"")) != NULL;) {
            char *q = strchr(p + 9, '"'), *doc;
            size_t dn;
            if (!q) break;
            *q = '\0';
            if ((doc = kt_etcd_unb64(p + 9, &dn)) != NULL) {
                eb_arrivals(doc, dn, now);
                free(doc);
            }
            p = q + 1;
        }
        start = i + 1;
    }
    memmove(g->buf, g->buf + start, g->len - start);
    g->len -= start;
    return n;
}

static int eb_gw_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    return __atomic_load_n(&((eb_gw *)ud)->stop, __ATOMIC_ACQUIRE) ? 1 : 0; /* checked about once a second, and on data */
}

static void *eb_gw_run(void *arg) {
    eb_gw *g = (eb_gw *)arg;
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (c && h) {
        curl_easy_setopt(c, CURLOPT_URL, g->url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, g->body);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, eb_gw_write);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, g);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, eb_gw_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, g);
        curl_easy_perform(c);
    }
    curl_slist_free_all(h);
    if (c) curl_easy_cleanup(c);
    free(g->buf);
    return NULL;
}

static int eb_gw_start(eb_gw *g, const char *endpoint) {
    char end[sizeof eb_prefix];
    char *bk, *be;
    memset(g, 0, sizeof *g);
    memcpy(end, eb_prefix, sizeof eb_prefix);
    end[sizeof eb_prefix - 2]++; /* the last '/' + 1: the prefix's range end */
    bk = kt_etcd_b64(eb_prefix, sizeof eb_prefix - 1);
    be = kt_etcd_b64(end, sizeof eb_prefix - 1);
    snprintf(g->url, sizeof g->url, "%s/v3/watch", endpoint);
    snprintf(g->body, sizeof g->body, "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\"}}", bk ? bk : "", be ? be : "");
    free(bk);
    free(be);
    return pthread_create(&g->th, NULL, eb_gw_run, g) == 0 ? 0 : -1;
}

/* ---- one run: a fresh cluster, idle or busy ---------------------------- */
typedef struct eb_result {
    int members, leader;
    bool busy, ok;
    double load_s, sync_s, first_rec_s;
    double hwm_mib, rss_mib, kctl_live_mib, kctl_peak_mib, kctl_allocs, kctl_blocks;
    double w_rate, ev_rate, rec_rate, drain_s, raw_rate;
    rb_pct sat;
    eb_paced_res rec, ctl, gw;
    bool ctl_ran, gw_ran;
} eb_result;

/* Wait (sleeping) until the informer has seen want modifications since base and the queue is empty. */
static bool eb_drain(kctl_informer *inf, kctl_controller *ctl, uint64_t base, uint64_t want, uint64_t timeout_ns, uint64_t *seen) {
    uint64_t t0 = rb_now();
    kctl_reflector_stats rs;
    for (;;) {
        kctl_informer_read_stats(inf, &rs);
        *seen = rs.modified - base;
        if (*seen >= want && kctl_queue_len(kctl_controller_queue(ctl)) == 0) return true;
        if (rb_now() - t0 > timeout_ns) return false;
        rb_sleep_ms(1);
    }
}

static int eb_run(int members, bool busy, eb_result *res) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kctl_etcd_desc ed;
    kctl_transport tw, tw2;
    kctl_informer_desc id;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *ctl = NULL;
    kctl_reflector_stats rs;
    kctl_controller_stats cs;
    eb_cost cost;
    const char *ctlbin = eb_etcdctl_bin(), *url;
    const kctl_transport *pw;
    pid_t burner = 0;
    uint64_t t0, t1, base_mod, base_rec, accepted, raw_ok, failed, seen;
    long hwm0, rss0;
    uint64_t live0, allocs0, blocks0;
    char load[128] = "";
    int rc = -1, last_error;
    FILE *f;

    memset(res, 0, sizeof *res);
    res->members = members;
    res->busy = busy;
    res->leader = -1;
    memset(&tw, 0, sizeof tw);
    memset(&tw2, 0, sizeof tw2);
    if ((f = fopen("/proc/loadavg", "r")) != NULL) {
        if (fgets(load, sizeof load, f)) load[strcspn(load, "\n")] = '\0';
        fclose(f);
    }
    if (busy) burner = rb_burner_start();
    printf("\n== %d member%s, %s; load average before: %s\n", members, members > 1 ? "s" : "",
           busy ? "busy (a while(1) burner process pinned to the last CPU)" : "idle (no burner)", load);
    fflush(stdout);
    memset(&o, 0, sizeof o);
    o.members = members;
    if (kt_etcd_start(&c, &o) != 0) {
        fprintf(stderr, "bench-etcd: the cluster did not start: %s\n", c.error);
        kt_etcd_destroy(&c, true);
        goto out_burner;
    }
    url = c.m[0].url;
    if (members > 1) {
        res->leader = kt_etcd_leader(&c, 0);
        printf("   the leader is m%d; every client here talks to m1\n", res->leader + 1);
    }
    if (eb_load(url, &res->load_s) != 0) goto out;
    printf("   loaded %d objects of %d bytes by raw txns (%d puts each): %.2f s\n", EB_OBJECTS, EB_DOC_BYTES, EB_PER_TXN, res->load_s);

    /* 1. list and sync */
    ed = kctl_etcd_desc_init();
    ed.endpoints = c.endpoints;
    ed.allocator = rb_counting();
    if (kctl_etcd_create(&ed, &tw) != KCTL_OK) goto out;
    ed.allocator.alloc_fn = NULL; /* the writers' transport: plain malloc, its own connections */
    ed.allocator.free_fn = NULL;
    if (kctl_etcd_create(&ed, &tw2) != KCTL_OK) goto out;
    memset(&id, 0, sizeof id);
    id.transport = tw;
    id.resource = eb_res;
    id.allocator = rb_counting();
    if (kctl_informer_create(&id, &inf) != KCTL_OK) goto out;
    memset(&cd, 0, sizeof cd);
    cd.primary = inf;
    cd.transport = tw;
    cd.reconcile = eb_reconcile;
    cd.workers = 2;
    cd.allocator = rb_counting();
    if (kctl_controller_create(&cd, &ctl) != KCTL_OK) goto out;
    memset(eb_last_seen, 0, sizeof eb_last_seen);
    __atomic_store_n(&eb_reconciles, 0, __ATOMIC_RELEASE);
    eb_sat_reset(UINT64_MAX);
    malloc_trim(0);
    eb_reset_hwm();
    hwm0 = eb_status_kib("VmHWM");
    rss0 = eb_status_kib("VmRSS");
    live0 = __atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED);
    allocs0 = __atomic_load_n(&rb_mem.allocs, __ATOMIC_RELAXED);
    blocks0 = __atomic_load_n(&rb_mem.blocks, __ATOMIC_RELAXED);
    __atomic_store_n(&rb_mem.peak, live0, __ATOMIC_RELAXED);
    cost = eb_cost_now(&c);
    t0 = rb_now();
    if (kctl_informer_start(inf) != KCTL_OK || kctl_informer_wait_for_sync(inf, KCTL_SEC(120)) != KCTL_OK) {
        fprintf(stderr, "bench-etcd: the informer did not sync\n");
        goto out;
    }
    t1 = rb_now();
    res->sync_s = bench_seconds(t0, t1);
    res->hwm_mib = (double)(eb_status_kib("VmHWM") - hwm0) / 1024.0;
    res->rss_mib = (double)(eb_status_kib("VmRSS") - rss0) / 1024.0;
    res->kctl_live_mib = (double)(__atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED) - live0) / 1048576.0;
    res->kctl_peak_mib = (double)(__atomic_load_n(&rb_mem.peak, __ATOMIC_RELAXED) - live0) / 1048576.0;
    res->kctl_allocs = (double)(__atomic_load_n(&rb_mem.allocs, __ATOMIC_RELAXED) - allocs0);
    res->kctl_blocks = (double)(__atomic_load_n(&rb_mem.blocks, __ATOMIC_RELAXED) - blocks0);
    printf("1. list and sync %d objects (pages of 500): %.3f s (%.0f objects/s)\n", EB_OBJECTS, res->sync_s, EB_OBJECTS / res->sync_s);
    printf("   memory: peak resident set +%.1f MiB (VmHWM), resident set +%.1f MiB (VmRSS); through kctl's allocator: %.1f MiB live"
           " (%.0f bytes/object) in %.0f blocks (%.1f/object), peak %.1f MiB; %.0f allocations (%.1f/object)\n",
           res->hwm_mib, res->rss_mib, res->kctl_live_mib, res->kctl_live_mib * 1048576.0 / EB_OBJECTS, res->kctl_blocks,
           res->kctl_blocks / EB_OBJECTS, res->kctl_peak_mib, res->kctl_allocs, res->kctl_allocs / EB_OBJECTS);
    eb_cost_print("   ", &c, cost, 0);
    t0 = rb_now();
    if (kctl_controller_start(ctl, KCTL_SEC(60)) != KCTL_OK) goto out;
    while (__atomic_load_n(&eb_reconciles, __ATOMIC_ACQUIRE) < EB_OBJECTS && rb_now() - t0 < KCTL_SEC(60)) rb_sleep_ms(1);
    res->first_rec_s = bench_seconds(t0, rb_now());
    printf("   the first %d reconciles (2 workers): %.3f s\n", EB_OBJECTS, res->first_rec_s);
    fflush(stdout);

    /* 2. sustained writes */
    kctl_informer_read_stats(inf, &rs);
    base_mod = rs.modified;
    kctl_controller_read_stats(ctl, &cs);
    base_rec = cs.success + cs.error;
    eb_sat_reset(rb_now());
    cost = eb_cost_now(&c);
    t0 = rb_now();
    accepted = eb_writers(&tw2, NULL, eb_opt.writers, eb_opt.phase_s, &failed, &last_error);
    t1 = rb_now();
    res->w_rate = (double)accepted / bench_seconds(t0, t1);
    if (!eb_drain(inf, ctl, base_mod, accepted, KCTL_SEC(60), &seen))
        printf("   (the informer saw %llu of %llu writes within 60 s)\n", (unsigned long long)seen, (unsigned long long)accepted);
    {
        uint64_t t2 = rb_now();
        size_t n = __atomic_load_n(&eb_sat.n, __ATOMIC_ACQUIRE);
        kctl_controller_read_stats(ctl, &cs);
        res->ev_rate = (double)seen / bench_seconds(t0, t2);
        res->rec_rate = (double)(cs.success + cs.error - base_rec) / bench_seconds(t0, t2);
        res->drain_s = bench_seconds(t1, t2);
        res->sat = rb_pct_of(eb_sat.v, n < EB_MAX_LAT ? n : EB_MAX_LAT);
        printf("2. sustained: %d writer threads, kctl updates (a range, then a txn) for %.1f s: %llu accepted, %.0f writes/s",
               eb_opt.writers, eb_opt.phase_s, (unsigned long long)accepted, res->w_rate);
        if (failed) printf(", %llu failed (last: %s)", (unsigned long long)failed, kctl_strerror(last_error));
        printf("\n   the informer: %.0f events/s; the controller: %.0f reconciles/s (from the first write until the last event is"
               " cached and the queue empty, %.2f s after the writers stopped)\n",
               res->ev_rate, res->rec_rate, res->drain_s);
        printf("   write -> reconcile, saturated: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%lu reconciles saw a new write)\n", res->sat.p50,
               res->sat.p99, res->sat.max, (unsigned long)res->sat.n);
        eb_cost_print("   ", &c, cost, (double)accepted);
    }
    cost = eb_cost_now(&c);
    t0 = rb_now();
    raw_ok = eb_writers(NULL, url, eb_opt.writers, eb_opt.phase_s / 2, &failed, &last_error);
    res->raw_rate = (double)raw_ok / bench_seconds(t0, rb_now());
    printf("   etcd alone: %d threads of raw puts (one put a request, no kctl) for %.1f s: %.0f puts/s%s (the informer and the"
           " controller still watching)\n",
           eb_opt.writers, eb_opt.phase_s / 2, res->raw_rate, failed ? ", some failed" : "");
    eb_cost_print("   ", &c, cost, (double)raw_ok);
    if (!eb_drain(inf, ctl, base_mod, accepted + raw_ok, KCTL_SEC(60), &seen))
        printf("   (the informer saw %llu of %llu writes within 60 s)\n", (unsigned long long)seen, (unsigned long long)(accepted + raw_ok));
    rb_sleep_ms(200);
    fflush(stdout);

    /* 3. paced, reconciled */
    pw = eb_opt.kctl_writes ? &tw2 : NULL;
    cost = eb_cost_now(&c);
    eb_paced(pw, url, eb_opt.phase_s, 10.0, &res->rec);
    printf("3. paced, reconciled (8 pacer threads; the controller's 2 workers):\n");
    eb_paced_print("   ", "reconcile", &res->rec);
    eb_cost_print("   ", &c, cost, (double)res->rec.ok);
    fflush(stdout);
    kctl_controller_stop(ctl);
    kctl_informer_stop(inf);
    kctl_controller_destroy(ctl);
    kctl_informer_destroy(inf);
    ctl = NULL;
    inf = NULL;

    /* 4. the yardsticks */
    printf("4. the same paced writes, watched by others (kctl's informer and controller stopped):\n");
    if (!ctlbin) {
        printf("   skip etcdctl: no etcdctl in PATH (Debian: etcd-client; or set KCTL_ETCDCTL_BIN)\n");
    } else {
        eb_ctl ec;
        __atomic_store_n(&eb_ctl_reads, 0, __ATOMIC_RELEASE);
        if (eb_ctl_start(&ec, ctlbin, url) == 0) {
            eb_put probe;
            int tries;
            memset(&probe, 0, sizeof probe);
            if (eb_put_init(&probe, url) == 0) /* until its watch is there: it prints a probe's put */
                for (tries = 0; tries < 50 && !__atomic_load_n(&eb_ctl_reads, __ATOMIC_ACQUIRE); tries++) {
                    eb_put_do(&probe, 0, 1, 1);
                    rb_sleep_ms(100);
                }
            eb_put_free(&probe);
            cost = eb_cost_now(&c);
            eb_paced(pw, url, eb_opt.phase_s, 5.0, &res->ctl);
            res->ctl_ran = true;
            printf("   a. etcdctl watch --prefix (a child process; its output timestamped as it comes out of the pipe):\n");
            eb_paced_print("      ", "etcdctl's output", &res->ctl);
            eb_cost_print("      ", &c, cost, (double)res->ctl.ok);
            eb_ctl_stop(&ec);
        } else {
            printf("   etcdctl did not start\n");
        }
    }
    {
        eb_gw g;
        if (eb_gw_start(&g, url) == 0) {
            t0 = rb_now();
            while (!__atomic_load_n(&g.created, __ATOMIC_ACQUIRE) && rb_now() - t0 < KCTL_SEC(5)) rb_sleep_ms(5);
            cost = eb_cost_now(&c);
            eb_paced(pw, url, eb_opt.phase_s, 5.0, &res->gw);
            res->gw_ran = true;
            printf("   b. a bare watch on the gateway (libcurl; lines split, values base64-decoded, nothing else):\n");
            eb_paced_print("      ", "arrival", &res->gw);
            eb_cost_print("      ", &c, cost, (double)res->gw.ok);
            __atomic_store_n(&g.stop, 1, __ATOMIC_RELEASE);
            pthread_join(g.th, NULL);
        }
    }
    rc = 0;
    res->ok = true;
out:
    if (ctl) kctl_controller_stop(ctl);
    if (inf) kctl_informer_stop(inf);
    kctl_controller_destroy(ctl);
    kctl_informer_destroy(inf);
    kctl_transport_destroy(&tw);
    kctl_transport_destroy(&tw2);
    kt_etcd_destroy(&c, rc != 0);
    if (__atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED) != 0)
        printf("   (kctl's allocator: %llu bytes still live after everything was destroyed)\n",
               (unsigned long long)__atomic_load_n(&rb_mem.live, __ATOMIC_RELAXED));
out_burner:
    if (burner > 0) { /* by pid: our child */
        kill(burner, SIGKILL);
        waitpid(burner, NULL, 0);
    }
    fflush(stdout);
    return rc;
}

static void eb_summary(const eb_result *r, int n) {
    char cell[32];
    int i;
    printf("\nsummary: %d objects of %d bytes; %d writer threads; paced %s at %d/s for %.1f s; times in ms\n", EB_OBJECTS, EB_DOC_BYTES,
           eb_opt.writers, eb_opt.kctl_writes ? "kctl updates" : "raw puts", EB_PACE_HZ, eb_opt.phase_s);
    printf("%-40s", "");
    for (i = 0; i < n; i++) {
        snprintf(cell, sizeof cell, "%d member%s, %s", r[i].members, r[i].members > 1 ? "s" : "", r[i].busy ? "busy" : "idle");
        printf(" %16s", cell);
    }
    printf("\n");
#define EB_ROW(cond, label, ...) \
    do { \
        printf("%-40s", label); \
        for (i = 0; i < n; i++) { \
            if (r[i].ok && (cond)) snprintf(cell, sizeof cell, __VA_ARGS__); \
            else snprintf(cell, sizeof cell, "-"); \
            printf(" %16s", cell); \
        } \
        printf("\n"); \
    } while (0)
    EB_ROW(1, "1. list + sync of 10,000, s", "%.3f", r[i].sync_s);
    EB_ROW(1, "   VmHWM growth, MiB", "%.1f", r[i].hwm_mib);
    EB_ROW(1, "   kctl allocator live / peak, MiB", "%.1f / %.1f", r[i].kctl_live_mib, r[i].kctl_peak_mib);
    EB_ROW(1, "   first 10,000 reconciles, s", "%.3f", r[i].first_rec_s);
    EB_ROW(1, "2. kctl updates accepted /s", "%.0f", r[i].w_rate);
    EB_ROW(1, "   events cached /s, reconciles /s", "%.0f, %.0f", r[i].ev_rate, r[i].rec_rate);
    EB_ROW(1, "   raw puts /s (etcd alone)", "%.0f", r[i].raw_rate);
    EB_ROW(1, "3. writes on time / due", "%llu / %llu", (unsigned long long)r[i].rec.kept, (unsigned long long)r[i].rec.slots);
    EB_ROW(1, "   the write call p50 / p99", "%.2f / %.2f", r[i].rec.call.p50, r[i].rec.call.p99);
    EB_ROW(1, "   write -> reconcile p50 / p99", "%.2f / %.2f", r[i].rec.sent_arr.p50, r[i].rec.sent_arr.p99);
    EB_ROW(1, "   write -> reconcile max", "%.2f", r[i].rec.sent_arr.max);
    EB_ROW(1, "   answer -> reconcile p50 / p99", "%.2f / %.2f", r[i].rec.ack_arr.p50, r[i].rec.ack_arr.p99);
    EB_ROW(1, "   reconciled / accepted", "%llu / %llu", (unsigned long long)r[i].rec.seen, (unsigned long long)r[i].rec.ok);
    EB_ROW(r[i].ctl_ran, "4. write -> etcdctl p50 / p99", "%.2f / %.2f", r[i].ctl.sent_arr.p50, r[i].ctl.sent_arr.p99);
    EB_ROW(r[i].ctl_ran, "   answer -> etcdctl p50 / p99", "%.2f / %.2f", r[i].ctl.ack_arr.p50, r[i].ctl.ack_arr.p99);
    EB_ROW(r[i].ctl_ran, "   on time / due", "%llu / %llu", (unsigned long long)r[i].ctl.kept, (unsigned long long)r[i].ctl.slots);
    EB_ROW(r[i].gw_ran, "   write -> bare watch p50 / p99", "%.2f / %.2f", r[i].gw.sent_arr.p50, r[i].gw.sent_arr.p99);
    EB_ROW(r[i].gw_ran, "   answer -> bare watch p50 / p99", "%.2f / %.2f", r[i].gw.ack_arr.p50, r[i].gw.ack_arr.p99);
    EB_ROW(r[i].gw_ran, "   on time / due", "%llu / %llu", (unsigned long long)r[i].gw.kept, (unsigned long long)r[i].gw.slots);
#undef EB_ROW
}

int main(int argc, char **argv) {
    eb_result res[4];
    int n = 0, i, failed = 0, sizes[2] = { 1, 3 }, nsizes = 2;
    const char *why;
    (void)bench_median; /* bench.h's, unused here */
    (void)bench_sort_pairs;
    (void)bench_print_runs;
    (void)bench_xorshift;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) eb_opt.phase_s = 2.0;
        else if (strcmp(argv[i], "--idle-only") == 0) eb_opt.busy = false;
        else if (strcmp(argv[i], "--busy-only") == 0) eb_opt.idle = false;
        else if (strcmp(argv[i], "--kctl-writes") == 0) eb_opt.kctl_writes = true;
        else if (strcmp(argv[i], "--members") == 0 && i + 1 < argc) eb_opt.members = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) eb_opt.phase_s = atof(argv[++i]);
        else if (strcmp(argv[i], "--writers") == 0 && i + 1 < argc) eb_opt.writers = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--members N] [--idle-only] [--busy-only] [--seconds S] [--writers N] [--kctl-writes]\n",
                    argv[0]);
            return 2;
        }
    }
    if (eb_opt.writers < 1 || eb_opt.writers > 64 || eb_opt.phase_s < 0.5 || eb_opt.phase_s > 60 ||
        (eb_opt.members != 0 && (eb_opt.members < 1 || eb_opt.members > KT_ETCD_MAX_MEMBERS)) || (!eb_opt.idle && !eb_opt.busy)) {
        fprintf(stderr, "bench-etcd: writers 1..64, seconds 0.5..60, members 1..%d\n", KT_ETCD_MAX_MEMBERS);
        return 2;
    }
    if ((why = kt_etcd_unavailable()) != NULL) {
        printf("skip bench-etcd: %s\n", why);
        return 0;
    }
    if (eb_opt.members) {
        sizes[0] = eb_opt.members;
        nsizes = 1;
    }
    if (!(eb_sat.v = (double *)malloc(EB_MAX_LAT * sizeof(double)))) return 1;
    printf("kctl %s on etcd (%s), %ld CPUs online; each cluster's data in a fresh directory under %s\n", kctl_version(), kt_etcd_bin(),
           sysconf(_SC_NPROCESSORS_ONLN), getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    for (i = 0; i < nsizes; i++) {
        if (eb_opt.idle) failed |= eb_run(sizes[i], false, &res[n++]);
        if (eb_opt.busy) failed |= eb_run(sizes[i], true, &res[n++]);
    }
    eb_summary(res, n);
    free(eb_sat.v);
    return failed ? 1 : 0;
}
