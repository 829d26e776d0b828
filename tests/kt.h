/* kt.h - the in-tree test runner's checks (one header, no framework).
   A test is a void function run with KT_RUN; it fails if any check in it
   fails. Each failing check prints one line with file and line. The runner
   (tests/run.c) ends with "N passed, N failed, N skipped". KT_ONLY=text
   in the environment runs only the tests whose names contain text;
   KT_VERBOSE=1 names each test as it ends. */
#ifndef KT_H
#define KT_H
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <stdbool.h>
#define KCTL__WORK_COUNTER /* kctl__json_work(): tests bound the JSON code's work, not its time */
#include "../kctl.h"

typedef struct kt_state {
    int passed, failed, skipped;
    int cur_failed;   /* checks failed in the running test */
    int cur_skipped;  /* the running test called KT_SKIP */
    const char *cur_name;
} kt_state;
extern kt_state kt;

void kt_fail(const char *file, int line, const char *fmt, ...);
void kt_run(void (*fn)(void), const char *name);

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
kt_state kt;

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

void kt_run(void (*fn)(void), const char *name) {
    const char *only = getenv("KT_ONLY"); /* run only the tests whose names hold this */
    if (only && *only && !strstr(name, only)) return;
    kt.cur_failed = 0;
    kt.cur_skipped = 0;
    kt.cur_name = name;
    fn();
    if (kt.cur_failed) kt.failed++;
    else if (kt.cur_skipped) kt.skipped++;
    else kt.passed++;
    if (getenv("KT_VERBOSE"))
        printf("%s %s\n", kt.cur_failed ? "fail" : kt.cur_skipped ? "skip" : "ok  ", name);
    kt.cur_name = NULL;
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
void kt_suite_manager(void);
void kt_suite_step(void);
void kt_suite_leader(void);
void kt_suite_e2e(void);
void kt_suite_review(void);
void kt_suite_contract(void); /* tests/contract.h: every transport's contract, per target */
#endif
