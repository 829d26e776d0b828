/* run.c - the test runner: every suite, then "N passed, N failed, N skipped". */
#define KCTL_IMPLEMENTATION
#include "kt.h"
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

int main(void) {
    kt_suite_core();
    kt_suite_limiter();
    kt_suite_queue();
    kt_suite_json();
    kt_suite_obj();
    kt_suite_indexer();
    kt_suite_fifo();
    kt_suite_selector();
    kt_suite_memstore();
    kt_suite_apisrv();
    kt_suite_persist();
    kt_suite_reflector();
    kt_suite_informer();
    kt_suite_controller();
    kt_suite_manager();
    kt_suite_leader();
    kt_suite_e2e();
    kt_suite_review();
    kt_suite_contract();
    if (kt.skipped) printf("%d passed, %d failed, %d skipped\n", kt.passed, kt.failed, kt.skipped);
    else printf("%d passed, %d failed\n", kt.passed, kt.failed);
    return kt.failed ? 1 : 0;
}
