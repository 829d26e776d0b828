/* run.c - the test runner: every suite, then "N passed, N failed, N skipped". */
#define KCTL_IMPLEMENTATION
#define KT_IMPLEMENTATION /* the runner's functions, from kt.h */
#include "kt.h"

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
    kt_suite_offline();
    kt_suite_manager();
    kt_suite_step();
    kt_suite_leader();
    kt_suite_e2e();
    kt_suite_review();
    kt_suite_edge();
    kt_suite_contract();
    kt_suite_budget();
    if (kt.skipped) printf("%d passed, %d failed, %d skipped\n", kt.passed, kt.failed, kt.skipped);
    else printf("%d passed, %d failed\n", kt.passed, kt.failed);
    return kt.failed ? 1 : 0;
}
