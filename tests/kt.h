/* kt.h - the in-tree test runner's checks (one header, no framework).
   A test is a void function run with KT_RUN; it fails if any check in it
   fails. Each failing check prints one line with file and line. The runner
   (tests/run.c) ends with "N passed, N failed, N skipped". KT_ONLY=text
   in the environment runs only the tests whose names contain text;
   KT_VERBOSE=1 names each test as it ends, with its wall time. KT_EMULATED=1
   (make cross, under qemu-user), ThreadSanitizer builds and builds with
   -DKT_LIGHT (the matrix's secondary builds) leave out the soak-sized parts
   tests mark with kt_heavy; those tests count as skipped and print why. */
#ifndef KT_H
#define KT_H
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <stdbool.h>
#define KCTL__WORK_COUNTER /* kctl__json_work(): tests bound the JSON code's work, not its time */
#define KCTL__SPIN_TEST /* kctl__spin_script(): the spin policy on a script, not on timing */
/* The implementation's default allocator, counted (defined with the
   runner): a test whose every allocator is a hook of its own checks with
   kt_default_allocs that no allocation fell back to the default. */
void *kt_default_malloc(size_t size);
unsigned long kt_default_allocs(void);
#define KCTL_MALLOC(sz, ud) ((void)(ud), kt_default_malloc(sz))
#include "../kctl.h"

typedef struct kt_state {
    int passed, failed, skipped;
    int cur_failed;   /* checks failed in the running test */
    int cur_skipped;  /* the running test called KT_SKIP */
    const char *cur_name;
    const char *skip_why; /* the last reason a test was skipped for */
    void *jump;           /* kt_run's jmp_buf, for kt_skip_now */
    long pid;             /* the runner's process (a forked child never jumps back) */
} kt_state;
extern kt_state kt;

void kt_fail(const char *file, int line, const char *fmt, ...);
void kt_run(void (*fn)(void), const char *name);
/* Whether to leave out a soak-sized part of the running test (what: which
   part): true under KT_EMULATED=1, ThreadSanitizer or KT_LIGHT, and then the test counts as skipped
   (unless a check failed) and a line says what was left out and why. */
bool kt_heavy(const char *what);
/* Whether the suite runs under emulation (KT_EMULATED set, not "0": make
   cross, under qemu-user). */
bool kt_emulated(void);
/* How many of n random or sampled inputs a test checks: n, or a quarter
   of it (at least 1) under emulation, where qemu-user makes each costly
   (libc's printf, the calendar). The inputs that name an edge are
   checked everywhere; only the count of the others shrinks. */
long kt_share(long n);
/* Remove a memstore's files at path: the snapshot, "<path>.journal" and
   "<path>.tmp" (a store's journal left behind would be replayed by the
   next store a reused pid gives the same path). */
void kt_remove_store(const char *path);
/* Remove path (a file, or a directory with everything in it; links are not
   followed) when the running test ends, however it ends: a skip from deep
   inside a test (a part compiled out) jumps past the test's own clean-up.
   For the temporary files and directories a test makes. */
void kt_remove_after(const char *path);
/* Remove path now: a file, or a directory with everything in it (links
   are not followed); nothing when it is not there. */
void kt_rmtree(const char *path);

#define KT_RUN(fn) kt_run(fn, #fn)
#define KT_CHECK(c) do { if (!(c)) kt_fail(__FILE__, __LINE__, "check failed: %s", #c); } while (0)
#define KT_EQ_INT(a, b) do { long long kt_a_ = (long long)(a), kt_b_ = (long long)(b); \
    if (kt_a_ != kt_b_) kt_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, kt_a_, kt_b_); } while (0)
#define KT_EQ_U64(a, b) do { unsigned long long kt_a_ = (unsigned long long)(a), kt_b_ = (unsigned long long)(b); \
    if (kt_a_ != kt_b_) kt_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, #b, kt_a_, kt_b_); } while (0)
#define KT_EQ_STR(a, b) do { const char *kt_a_ = (a), *kt_b_ = (b); \
    if (!kt_a_ || !kt_b_ || strcmp(kt_a_, kt_b_) != 0) kt_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
        kt_a_ ? kt_a_ : "(null)", kt_b_ ? kt_b_ : "(null)"); } while (0)
/* Mark the running test skipped (e.g. needs threads) and return from it. */
#define KT_SKIP() do { kt.cur_skipped = 1; return; } while (0)
/* Skip the running test from anywhere in it (a jump back to kt_run), for
   why: the part it needs is compiled out (a KCTL_NO_* switch). */
void kt_skip_now(const char *why);
/* rc, unless it says a part is compiled out: then the test is skipped. */
int kt_need(int rc, const char *why);
/* The trim switch that compiled out the first part d asks for, for
   kt_need on a queue's or a controller's create (the wrappers below). */
const char *kt_queue_needs(const kctl_queue_desc *d);
const char *kt_controller_needs(const kctl_controller_desc *d);
const char *kt_reflector_needs(const kctl_reflector_desc *d, const char *why);
const char *kt_informer_needs(const kctl_informer_desc *d, const char *why);
/* Skip the running test in a build without the memstore (before a test
   forks a child that would need it). */
#ifdef KCTL_NO_MEMSTORE
#define KT_NEED_MEMSTORE() kt_skip_now("KCTL_NO_MEMSTORE")
#elif defined(KCTL_NO_FILES)
#define KT_NEED_MEMSTORE() kt_skip_now("KCTL_NO_FILES (a memstore on a file)")
#else
#define KT_NEED_MEMSTORE() ((void)0)
#endif
#if (defined(KCTL_NO_FILES) || defined(KCTL_NO_MEMSTORE_BOUND) || defined(KCTL_NO_CODEC)) && !defined(KCTL_NO_MEMSTORE)
/* kctl_memstore_create, skipping the test when desc asks for a file
   (KCTL_NO_FILES), a bound (KCTL_NO_MEMSTORE_BOUND) or a codec (KCTL_NO_CODEC). */
int kt_memstore_create_trimmed(const kctl_memstore_desc *desc, kctl_memstore **out);
#endif

/* The API-server rules' format checks and worded refusals, which
   KCTL_NO_VALIDATION compiles out: KT_NEED_VALIDATION(what) skips the rest
   of the running test there (what: the part it checks), KT_EQ_MSG checks a
   refusal's message (there: "", the code, reason and details stay), and
   KT_WORDS is 1 where they are in, 0 where not. */
#ifdef KCTL_NO_VALIDATION
#define KT_WORDS 0
#define KT_NEED_VALIDATION(what) kt_skip_now("KCTL_NO_VALIDATION (" what ")")
#define KT_EQ_MSG(a, b) KT_EQ_STR((a), "")
#else
#define KT_WORDS 1
#define KT_NEED_VALIDATION(what) ((void)0)
#define KT_EQ_MSG(a, b) KT_EQ_STR((a), (b))
#endif

/* A counting allocator: counts calls and live blocks; can fail on demand. */
typedef struct kt_alloc {
    long allocs, frees, live;
    long fail_after;  /* -1: never; n: the (n+1)th allocation from now fails */
    long fail_count;  /* failures injected */
} kt_alloc;
void kt_alloc_init(kt_alloc *a);
kctl_allocator kt_allocator(kt_alloc *a);

/* The runner's functions, compiled where KT_IMPLEMENTATION is defined
   (once per test binary: tests/run.c, tests/run_etcd.c). */
#ifdef KT_IMPLEMENTATION
#include <stdarg.h>
#include <stdlib.h>
#include <setjmp.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
kt_state kt;

static unsigned long kt_default_allocs_;
void *kt_default_malloc(size_t size) {
    __atomic_fetch_add(&kt_default_allocs_, 1, __ATOMIC_RELAXED);
    return malloc(size);
}
unsigned long kt_default_allocs(void) { return __atomic_load_n(&kt_default_allocs_, __ATOMIC_RELAXED); }

void kt_skip_now(const char *why) {
    kt.cur_skipped = 1;
    kt.skip_why = why;
    if (getenv("KT_VERBOSE")) printf("skip %s: %s\n", kt.cur_name ? kt.cur_name : "?", why);
    if (kt.jump && (long)getpid() == kt.pid) longjmp(*(jmp_buf *)kt.jump, 1);
    if (kt.jump) _exit(125); /* a test's child: its parent sees the failure */
    abort(); /* outside kt_run */
}

#if (defined(KCTL_NO_FILES) || defined(KCTL_NO_MEMSTORE_BOUND) || defined(KCTL_NO_CODEC)) && !defined(KCTL_NO_MEMSTORE)
int kt_memstore_create_trimmed(const kctl_memstore_desc *desc, kctl_memstore **out) {
    const char *why = "?";
#ifdef KCTL_NO_FILES
    if (desc && desc->path) kt_skip_now("KCTL_NO_FILES (a memstore on a file)");
#endif
#ifdef KCTL_NO_MEMSTORE_BOUND
    if (desc && (desc->max_objects || desc->max_bytes)) why = "KCTL_NO_MEMSTORE_BOUND";
#endif
#ifdef KCTL_NO_CODEC
    if (desc && desc->obj_opts.codec.decode) why = "KCTL_NO_CODEC";
#endif
    return kt_need(kctl_memstore_create(desc, out), why);
}
#endif

int kt_need(int rc, const char *why) {
    if (rc == KCTL_ERR_UNSUPPORTED) kt_skip_now(why);
    return rc;
}
const char *kt_queue_needs(const kctl_queue_desc *d) {
    if (d && d->priority.enabled) return "KCTL_NO_QUEUE_PRIORITY";
#ifdef KCTL_NO_QUEUE_BOUND
    if (d && d->max_keys) return "KCTL_NO_QUEUE_BOUND";
#endif
    return "KCTL_NO_PENDING_MODES";
}
/* Why a reflector or informer desc is UNSUPPORTED: a resync (KCTL_NO_RESYNC),
   a transform (KCTL_NO_TRANSFORM), else why (a selector or pages). */
const char *kt_reflector_needs(const kctl_reflector_desc *d, const char *why) {
#ifdef KCTL_NO_RESYNC
    if (d && d->resync_ns) return "KCTL_NO_RESYNC";
#else
    (void)d;
#endif
    return why;
}
const char *kt_informer_needs(const kctl_informer_desc *d, const char *why) {
#ifdef KCTL_NO_RESYNC
    if (d && d->resync_ns) return "KCTL_NO_RESYNC";
#endif
#ifdef KCTL_NO_TRANSFORM
    if (d && d->transform) return "KCTL_NO_TRANSFORM";
#endif
    (void)d;
    return why;
}
const char *kt_controller_needs(const kctl_controller_desc *d) {
    if (!d) return "?";
    if (d->offline.enabled) return "KCTL_NO_OFFLINE";
    if (d->hold_backoff) return "KCTL_NO_HOLD_BACKOFF";
    if (d->hot_loop.max) return "KCTL_NO_HOT_LOOP";
#ifdef KCTL_NO_PREDICATES
    if (d->predicate) return "KCTL_NO_PREDICATES";
#endif
#ifdef KCTL_NO_QUEUE_BOUND
    if (d->max_keys) return "KCTL_NO_QUEUE_BOUND";
#endif
    if (d->priority.enabled) return "KCTL_NO_QUEUE_PRIORITY";
    return "KCTL_NO_PENDING_MODES";
}

void kt_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    kt.cur_failed++;
    fprintf(stdout, "FAIL %s:%d: %s: ", file, line, kt.cur_name ? kt.cur_name : "?");
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static char **kt_removes; /* kt_remove_after's paths, for the running test */
static int kt_nremoves, kt_removes_cap;

void kt_remove_after(const char *path) {
    size_t n = strlen(path) + 1;
    char *copy;
    if ((long)getpid() != kt.pid) return; /* a test's child: its parent cleans up */
    if (kt_nremoves == kt_removes_cap) {
        int cap = kt_removes_cap ? 2 * kt_removes_cap : 8;
        char **grown = (char **)realloc(kt_removes, (size_t)cap * sizeof *grown);
        if (!grown) {
            kt_fail(__FILE__, __LINE__, "kt_remove_after(%s): no memory", path);
            return;
        }
        kt_removes = grown;
        kt_removes_cap = cap;
    }
    if ((copy = (char *)malloc(n)) == NULL) {
        kt_fail(__FILE__, __LINE__, "kt_remove_after(%s): no memory", path);
        return;
    }
    memcpy(copy, path, n);
    kt_removes[kt_nremoves++] = copy;
}

void kt_rmtree(const char *path) {
    struct stat sb;
    DIR *d;
    struct dirent *de;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode) && (d = opendir(path)) != NULL) {
        while ((de = readdir(d)) != NULL) {
            char sub[1024];
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, de->d_name) < sizeof sub) kt_rmtree(sub);
        }
        closedir(d);
    }
    remove(path);
}

void kt_run(void (*fn)(void), const char *name) {
    const char *only = getenv("KT_ONLY"); /* run only the tests whose names hold this */
    jmp_buf jb;
    struct timespec t0, t1;
    if (only && *only && !strstr(name, only)) return;
    kt.cur_failed = 0;
    kt.cur_skipped = 0;
    kt.cur_name = name;
    kt.jump = &jb;
    kt.pid = (long)getpid();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (setjmp(jb) == 0) fn();
    kt.jump = NULL;
    while (kt_nremoves > 0) { /* what the test left, also when a skip jumped out of it */
        char *path = kt_removes[--kt_nremoves];
        kt_rmtree(path);
        free(path);
    }
    free(kt_removes);
    kt_removes = NULL;
    kt_removes_cap = 0;
    if (kt.cur_failed) kt.failed++;
    else if (kt.cur_skipped) kt.skipped++;
    else kt.passed++;
    if (getenv("KT_VERBOSE")) { /* with the wall time it took, to find what makes CI slow */
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%s %s (%ld ms)\n", kt.cur_failed ? "fail" : kt.cur_skipped ? "skip" : "ok  ", name,
               (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
    }
    kt.cur_name = NULL;
}

void kt_remove_store(const char *path) {
    char side[1100];
    remove(path);
    snprintf(side, sizeof side, "%s.journal", path);
    remove(side);
    snprintf(side, sizeof side, "%s.tmp", path);
    remove(side);
}

/* ThreadSanitizer builds: gcc says __SANITIZE_THREAD__, clang __has_feature. */
#if defined(__SANITIZE_THREAD__)
#define KT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KT_TSAN 1
#endif
#endif

bool kt_emulated(void) {
    const char *e = getenv("KT_EMULATED");
    return e && *e && strcmp(e, "0");
}

bool kt_heavy(const char *what) {
    const char *why = NULL;
    if (kt_emulated()) why = "under emulation (KT_EMULATED: it takes minutes under qemu-user; native runs keep it)";
#if defined(KT_TSAN)
    if (!why) why = "under ThreadSanitizer (the part is single-threaded and takes minutes there; the native and ASan runs keep it)";
#endif
#if defined(KT_LIGHT)
    if (!why) why = "in this build of the matrix (KT_LIGHT: the same code's complexity; build/kt and kt-asan keep it)";
#endif
    if (!why) return false;
    printf("skip %s: %s left out %s\n", kt.cur_name ? kt.cur_name : "?", what, why);
    kt.cur_skipped = 1;
    return true;
}

long kt_share(long n) {
    return !kt_emulated() ? n : n / 4 > 0 ? n / 4 : 1;
}

static void *kt_alloc_fn(size_t size, void *user_data) {
    kt_alloc *a = (kt_alloc *)user_data;
    void *p;
    if (a->fail_after == 0) { a->fail_count++; return NULL; }
    if (a->fail_after > 0) a->fail_after--;
    p = malloc(size);
    if (p) { a->allocs++; a->live++; }
    return p;
}

static void kt_free_fn(void *ptr, void *user_data) {
    kt_alloc *a = (kt_alloc *)user_data;
    if (!ptr) return;
    a->frees++;
    a->live--;
    free(ptr);
}

void kt_alloc_init(kt_alloc *a) {
    memset(a, 0, sizeof *a);
    a->fail_after = -1;
}

kctl_allocator kt_allocator(kt_alloc *a) {
    kctl_allocator al;
    al.alloc_fn = kt_alloc_fn;
    al.free_fn = kt_free_fn;
    al.user_data = a;
    return al;
}
#endif /* KT_IMPLEMENTATION */

/* Suites, one per file under tests/. */
void kt_suite_core(void);
void kt_suite_limiter(void);
void kt_suite_queue(void);
void kt_suite_json(void);
void kt_suite_obj(void);
void kt_suite_indexer(void);
void kt_suite_fifo(void);
void kt_suite_selector(void);
void kt_suite_memstore(void);
void kt_suite_apisrv(void);
void kt_suite_persist(void);
void kt_suite_reflector(void);
void kt_suite_informer(void);
void kt_suite_controller(void);
void kt_suite_offline(void);
void kt_suite_manager(void);
void kt_suite_step(void);
void kt_suite_leader(void);
void kt_suite_e2e(void);
void kt_suite_review(void);
void kt_suite_edge(void);
void kt_suite_contract(void); /* tests/contract.h: every transport's contract, per target */
void kt_suite_budget(void);
/* In a build with parts compiled out (KCTL_NO_MEMSTORE, _LEADER, _METRICS,
   _FLOAT, _JSON_DOUBLE, _SELECTORS, _CHECKPOINT, _MERGE_PATCH, _PAGING,
   _FAULTS, _INDEXES, _RESYNC, _TRANSFORM, ...), a test that reaches for
   one is skipped, with the switch as its reason, at the call that says
   UNSUPPORTED: never dropped silently, and nothing else it tests is lost
   where the part is there. */
#ifdef KCTL_NO_MEMSTORE
#define kctl_memstore_create(d, o) kt_need(kctl_memstore_create((d), (o)), "KCTL_NO_MEMSTORE")
#elif defined(KCTL_NO_FILES) || defined(KCTL_NO_MEMSTORE_BOUND) || defined(KCTL_NO_CODEC)
#define kctl_memstore_create(d, o) kt_memstore_create_trimmed((d), (o))
#endif
#ifdef KCTL_NO_CODEC /* object options with a codec are UNSUPPORTED */
#define kctl_obj_parse(j, n, op, o) kt_need(kctl_obj_parse((j), (n), (op), (o)), "KCTL_NO_CODEC")
#endif
#if defined(KCTL_NO_LEADER) || defined(KCTL_NO_MERGE_PATCH)
#define kctl_leader_create(d, o) kt_need(kctl_leader_create((d), (o)), "KCTL_NO_LEADER")
#define kctl_manager_create(d, o) kt_need(kctl_manager_create((d), (o)), "KCTL_NO_LEADER (a manager with leader election)")
#endif
#if defined(KCTL_NO_METRICS) || defined(KCTL_NO_DURATIONS) /* KCTL_NO_DURATIONS implies KCTL_NO_METRICS */
#define kctl_manager_metrics(m, b, c, l) kt_need(kctl_manager_metrics((m), (b), (c), (l)), "KCTL_NO_METRICS")
#endif
/* A duration a queue or controller records (kctl_queue_stats' histograms
   and in-flight ages, kctl_controller_stats.reconcile_time): x, or 0 where
   KCTL_NO_DURATIONS compiles the durations out (they stay zero there). */
#ifdef KCTL_NO_DURATIONS
#define KT_DUR(x) ((void)(x), 0)
#else
#define KT_DUR(x) (x)
#endif
#if defined(KCTL_NO_FLOAT) || defined(KCTL_NO_JSON_DOUBLE)
#define kctl_json_double(j, v, o) kt_need(kctl_json_double((j), (v), (o)), "KCTL_NO_JSON_DOUBLE")
#define kctl_json_get_double(t, n, p, o) kt_need(kctl_json_get_double((t), (n), (p), (o)), "KCTL_NO_JSON_DOUBLE")
#define kctl_json_value_get_double(f, p, o) kt_need(kctl_json_value_get_double((f), (p), (o)), "KCTL_NO_JSON_DOUBLE")
#define kctl_obj_get_double(ob, p, o) kt_need(kctl_obj_get_double((ob), (p), (o)), "KCTL_NO_JSON_DOUBLE")
#define kctl_jw_double(w, v) ((void)(w), (void)(v), kt_skip_now("KCTL_NO_JSON_DOUBLE: kctl_jw_double"))
#define kctl_reported_set_double(r, f, v) kt_need(kctl_reported_set_double((r), (f), (v)), "KCTL_NO_JSON_DOUBLE")
#endif
/* A list, a reflector or an informer may be UNSUPPORTED for a selector
   (KCTL_NO_SELECTORS) or for pages (KCTL_NO_PAGING: a limit, a continue
   token, a page_size). */
#if defined(KCTL_NO_SELECTORS) && defined(KCTL_NO_PAGING)
#define KT_WHY_LIST "KCTL_NO_SELECTORS or KCTL_NO_PAGING"
#elif defined(KCTL_NO_SELECTORS)
#define KT_WHY_LIST "KCTL_NO_SELECTORS"
#elif defined(KCTL_NO_PAGING)
#define KT_WHY_LIST "KCTL_NO_PAGING"
#endif
#ifdef KT_WHY_LIST
#define kctl_transport_list(t, r, lo, o, st) kt_need(kctl_transport_list((t), (r), (lo), (o), (st)), KT_WHY_LIST)
#endif
/* ... and for a resync (KCTL_NO_RESYNC) or an informer's transform
   (KCTL_NO_TRANSFORM): kt_reflector_needs and kt_informer_needs name the switch. */
#if defined(KT_WHY_LIST) || defined(KCTL_NO_RESYNC) || defined(KCTL_NO_TRANSFORM)
#ifdef KT_WHY_LIST
#define KT_WHY_CREATE KT_WHY_LIST
#else
#define KT_WHY_CREATE "?"
#endif
#define kctl_reflector_create(d, o) kt_need(kctl_reflector_create((d), (o)), kt_reflector_needs((d), KT_WHY_CREATE))
#define kctl_informer_create(d, o) kt_need(kctl_informer_create((d), (o)), kt_informer_needs((d), KT_WHY_CREATE))
#endif
#if defined(KCTL_NO_SELECTORS) && defined(KCTL_NO_RESYNC) /* a manager's informer: a selector, or the manager's resync */
#define kctl_manager_informer(m, r, l, f, o) kt_need(kctl_manager_informer((m), (r), (l), (f), (o)), "KCTL_NO_SELECTORS or KCTL_NO_RESYNC")
#elif defined(KCTL_NO_SELECTORS)
#define kctl_manager_informer(m, r, l, f, o) kt_need(kctl_manager_informer((m), (r), (l), (f), (o)), "KCTL_NO_SELECTORS")
#elif defined(KCTL_NO_RESYNC)
#define kctl_manager_informer(m, r, l, f, o) kt_need(kctl_manager_informer((m), (r), (l), (f), (o)), "KCTL_NO_RESYNC")
#endif
#ifdef KCTL_NO_SELECTORS /* what takes a selector says UNSUPPORTED for one */
#define kctl_selector_parse(l, f, a, o) kt_need(kctl_selector_parse((l), (f), (a), (o)), "KCTL_NO_SELECTORS")
#define kctl_transport_watch_open(t, r, lo, v, o, st) kt_need(kctl_transport_watch_open((t), (r), (lo), (v), (o), (st)), "KCTL_NO_SELECTORS")
#define KT_NEED_SELECTORS(rc) kt_need((rc), "KCTL_NO_SELECTORS")
#else
#define KT_NEED_SELECTORS(rc) (rc)
#endif
#ifdef KCTL_NO_PAGING /* a list with a limit or a continue token, called without the wrapper above */
#define KT_NEED_PAGING(rc) kt_need((rc), "KCTL_NO_PAGING")
#else
#define KT_NEED_PAGING(rc) (rc)
#endif
#ifdef KCTL_NO_GENERATE_NAME /* a create that asks for a name made from metadata.generateName */
#define KT_NEED_GENERATE_NAME(rc) kt_need((rc), "KCTL_NO_GENERATE_NAME")
#else
#define KT_NEED_GENERATE_NAME(rc) (rc)
#endif
#ifdef KCTL_NO_INDEXES /* secondary indexes: only the built-in "namespace" */
#define kctl_indexer_add_index(ix, n, f, u) kt_need(kctl_indexer_add_index((ix), (n), (f), (u)), "KCTL_NO_INDEXES")
#endif
#ifdef KCTL_NO_FAULTS /* the memstore's fault injection */
#define kctl_memstore_fail_next(m, v, n, c) kt_need(kctl_memstore_fail_next((m), (v), (n), (c)), "KCTL_NO_FAULTS")
#define kctl_memstore_break_watches_after(m, n) ((void)(m), (void)(n), kt_skip_now("KCTL_NO_FAULTS: kctl_memstore_break_watches_after"))
#define kctl_memstore_set_latency(m, l) ((void)(m), (void)(l), kt_skip_now("KCTL_NO_FAULTS: kctl_memstore_set_latency"))
#endif
#ifdef KCTL_NO_MERGE_PATCH
#define kctl_json_merge_patch(d, vd, p, vp, w) kt_need(kctl_json_merge_patch((d), (vd), (p), (vp), (w)), "KCTL_NO_MERGE_PATCH")
#define kctl_transport_patch(t, r, n, p, l, f, o, st) kt_need(kctl_transport_patch((t), (r), (n), (p), (l), (f), (o), (st)), "KCTL_NO_MERGE_PATCH")
#define kctl_apisrv_decide(rq, w, d, st) kt_need(kctl_apisrv_decide((rq), (w), (d), (st)), "KCTL_NO_MERGE_PATCH")
#define kctl_reported_create(d, o) kt_need(kctl_reported_create((d), (o)), "KCTL_NO_MERGE_PATCH")
#endif
#ifdef KCTL_NO_CHECKPOINT
#define kctl_informer_set_checkpoint(i, d) kt_need(kctl_informer_set_checkpoint((i), (d)), "KCTL_NO_CHECKPOINT")
#define kctl_informer_checkpoint_save(i) kt_need(kctl_informer_checkpoint_save(i), "KCTL_NO_CHECKPOINT")
#endif
#ifdef KCTL_NO_FLOAT
#define kctl_limiter_bucket(c, q, b) ((void)(c), (void)(q), (void)(b), kt_skip_now("KCTL_NO_FLOAT: kctl_limiter_bucket"), (kctl_limiter *)0)
#endif
/* The queue's and the controller's trim switches: a desc that asks for a
   part compiled out is UNSUPPORTED at create; the skip names the switch
   (kt_queue_needs, kt_controller_needs: the first such part d asks for). */
#if defined(KCTL_NO_QUEUE_PRIORITY) || defined(KCTL_NO_PENDING_MODES) || defined(KCTL_NO_QUEUE_BOUND)
#define kctl_queue_create(d, o) kt_need(kctl_queue_create((d), (o)), kt_queue_needs(d))
#endif
#if defined(KCTL_NO_QUEUE_PRIORITY) || defined(KCTL_NO_PENDING_MODES) || defined(KCTL_NO_OFFLINE) || \
    defined(KCTL_NO_HOLD_BACKOFF) || defined(KCTL_NO_HOT_LOOP) || defined(KCTL_NO_PREDICATES) || defined(KCTL_NO_QUEUE_BOUND)
#define kctl_controller_create(d, o) kt_need(kctl_controller_create((d), (o)), kt_controller_needs(d))
#define kctl_manager_add_controller(m, d, o) kt_need(kctl_manager_add_controller((m), (d), (o)), kt_controller_needs(d))
#endif
#ifdef KCTL_NO_PREDICATES /* a watch with a predicate is UNSUPPORTED */
#define kctl_controller_watch_owned(c, i, g, k, p) kt_need(kctl_controller_watch_owned((c), (i), (g), (k), (p)), "KCTL_NO_PREDICATES")
#define kctl_controller_watch_map(c, i, m, u, p) kt_need(kctl_controller_watch_map((c), (i), (m), (u), (p)), "KCTL_NO_PREDICATES")
#endif
#endif

