/* kube.h - what the tests of the Kubernetes API transport share
   (build/kt-kube, tests/run_kube.c): the suites, and the skip rule for
   tests that need libcurl or an outside client (kubectl, python3's
   kubernetes package). Where one is missing a test says
   "skip <test>: <reason>"; KT_REQUIRE_KUBE=1 (CI) makes that a failure. */
#ifndef KT_KUBE_H
#define KT_KUBE_H
#include "kt.h"
#ifdef KT_HAVE_CURL
#include "../kctl_http_curl.h"
#endif

/* 1 when why is NULL (nothing missing); else skip the current test (or
   fail it under KT_REQUIRE_KUBE) naming why, and 0. */
int kt_kube_need(const char *file, int line, const char *why);
/* Skip (return from) the current test without libcurl. */
#ifdef KT_HAVE_CURL
#define KT_KUBE_REQUIRE_CURL() ((void)0)
#else
#define KT_KUBE_REQUIRE_CURL() do { \
        if (!kt_kube_need(__FILE__, __LINE__, "libcurl headers were absent at build time (Debian: apt-get install libcurl4-openssl-dev, then rebuild)")) return; \
    } while (0)
#endif

/* The suites of build/kt-kube. */
void kt_suite_kube_wire(void);      /* tests/test_kube_wire.c: the captured bytes through the transport's parsers */
void kt_suite_kube(void);           /* tests/test_kube.c: the transport against the test server, the contract */
void kt_suite_kubeconfig(void);     /* tests/test_kubeconfig.c: kubeconfig and in-cluster configuration */
void kt_suite_kube_server(void);    /* tests/test_kube_server.c: the test server, checked by kubectl and python */
void kt_suite_kube_contract(void); /* tests/test_kube_contract.c: the transport contract (tests/contract.h), on demand on a cluster */
void kt_suite_kube_faults(void);    /* tests/test_kube_faults.c: a controller through the server's faults */
#ifdef KT_HAVE_CURL
/* tests/test_kube_faults.c: the convergence scenario (no fault) on the API
   server desc names, with objects of res (namespaced, with a status
   subresource and generations) named with prefix, deleted after. */
void kt_kube_faults_converge(const kctl_kube_desc *desc, const kctl_resource *res, const char *api_version, const char *kind,
                             const char *prefix);
#endif
void kt_suite_kube_demo(void);      /* tests/test_kube_demo.c: examples/edge_agent --kube against the test server */
#endif
