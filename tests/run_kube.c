/* run_kube.c - the runner of the Kubernetes API transport's tests:
   build/kt-kube. Same checks and summary line as tests/run.c ("N passed,
   N failed, N skipped"). Without libcurl the transport's tests skip, and
   without kubectl or python3's kubernetes package the cross-checks of the
   test server do; KT_REQUIRE_KUBE=1 (CI) turns those skips into failures. */
#define KCTL_IMPLEMENTATION
#define KCTL_HTTP_CURL_IMPLEMENTATION_DONE /* kctl_http_curl.h's implementation: in tests/test_kube_wire.c, whose tests reach its private parsers */
#define KT_IMPLEMENTATION /* the runner's functions, from kt.h */
#include "kube.h"
#include <stdlib.h>

int kt_kube_need(const char *file, int line, const char *why) {
    const char *req = getenv("KT_REQUIRE_KUBE");
    if (!why) return 1;
    if (req && *req && strcmp(req, "0") != 0) {
        kt_fail(file, line, "%s (KT_REQUIRE_KUBE is set)", why);
        return 0;
    }
    printf("skip %s: %s\n", kt.cur_name ? kt.cur_name : "?", why);
    fflush(stdout);
    kt.cur_skipped = 1;
    return 0;
}

int main(void) {
    kt_suite_kube_wire();
    kt_suite_kubeconfig();
    kt_suite_kube_server();
    kt_suite_kube();
    kt_suite_kube_contract();
    kt_suite_kube_faults();
    kt_suite_kube_demo();
    if (kt.skipped) printf("%d passed, %d failed, %d skipped\n", kt.passed, kt.failed, kt.skipped);
    else printf("%d passed, %d failed\n", kt.passed, kt.failed);
    return kt.failed ? 1 : 0;
}
