/* run_etcd.c - the runner of the tests that need a real etcd (and, for the
   transport's, libcurl): build/kt-etcd. Same checks and summary line as
   tests/run.c ("N passed, N failed, N skipped"). Where etcd is missing
   (or KCTL_ETCD_BIN names no executable) every test prints
   "skip <test>: <reason>" and the run passes with all of them skipped
   (the TLS tests skip so where the openssl command is missing too);
   KT_REQUIRE_ETCD=1 (CI) turns those skips into failures. */
#define KCTL_IMPLEMENTATION
#define KT_IMPLEMENTATION /* the runner's functions, from kt.h */
#include "kt.h"
#ifdef KT_HAVE_CURL
#include "../kctl_http_curl.h" /* its implementation too: the etcd transport under test */
#endif
#include "etcd_harness.h"
#include <stdlib.h>

/* 1 when there is no reason to skip (why NULL); else skip, or fail
   under KT_REQUIRE_ETCD, and 0. */
static int kt_etcd__need(const char *file, int line, const char *why) {
    const char *req = getenv("KT_REQUIRE_ETCD");
    if (!why) return 1;
    if (req && *req && strcmp(req, "0") != 0) {
        kt_fail(file, line, "%s (KT_REQUIRE_ETCD is set)", why);
        return 0;
    }
    printf("skip %s: %s\n", kt.cur_name ? kt.cur_name : "?", why);
    fflush(stdout);
    kt.cur_skipped = 1;
    return 0;
}

int kt_etcd_require(const char *file, int line, bool need_curl) {
    const char *why = kt_etcd_unavailable();
#ifndef KT_HAVE_CURL
    if (!why && need_curl)
        why = "libcurl headers were absent at build time (Debian: apt-get install libcurl4-openssl-dev, then rebuild)";
#else
    (void)need_curl;
#endif
    return kt_etcd__need(file, line, why);
}

int kt_etcd_require_openssl(const char *file, int line) {
    return kt_etcd__need(file, line, kt_etcd_tls_unavailable());
}

int main(void) {
    kt_suite_etcd_harness();
    kt_suite_etcd();
    kt_suite_etcd_tls();
    kt_suite_etcd_faults();
    if (kt.skipped) printf("%d passed, %d failed, %d skipped\n", kt.passed, kt.failed, kt.skipped);
    else printf("%d passed, %d failed\n", kt.passed, kt.failed);
    return kt.failed ? 1 : 0;
}
