/* test_kube_contract.c - the transport contract (tests/contract.h) for the
   Kubernetes API transport (kctl_http_curl.h):
     contract/kube/...        against the test API server (tests/kube_server.h),
                              a fresh server for each test;
     contract/kubeconfig/...  the on-demand path (below) pointed at a test
                              server by a kubeconfig this file writes, so it
                              is never dead code;
     contract/cluster/...     on demand, against a real cluster: only when
                              KCTL_TEST_KUBECONFIG names a kubeconfig and
                              KCTL_TEST_RESOURCE a namespaced
                              group/version/resource ("" group: core, as
                              "/v1/configmaps"), e.g.
                                  KCTL_TEST_KUBECONFIG=$HOME/.kube/config \
                                  KCTL_TEST_RESOURCE=edge.kctl.io/v1/deviceconfigs \
                                  KT_ONLY=cluster ./build/kt-kube
                              Without both variables these tests are not
                              registered at all.
   The on-demand path works in the kubeconfig context's namespace, which
   other objects may share: every store of a test is a random name prefix
   and a label of its own (kctl-contract=<prefix>), put on by a thin
   wrapper of the transport (kcc_wrap, below) and taken off the objects,
   events and Status messages the tests see; lists and watches select the
   label. What a test leaves behind is deleted when its store closes
   (finalizers cleared first). What the resource can do is asked of the
   server's discovery (kind, status subresource) and tried once on a probe
   object (generation, updates without a resourceVersion); a contract
   test needing what it cannot do says "skip" with the test's name. */
#include "kube.h"
#include "contract.h"
#include "kube_server.h"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef KT_HAVE_CURL
/* ------------------------------------------------ against the test server */
/* Each store: a fresh server (its own memstore, a free port), the
   transport to it with a counting allocator that must end at zero. The
   server's bookmark period is long (60 s) so that no bookmark comes but
   the one the progress hook asks for. */
typedef struct kkc_store {
    kt_kube_server *srv;
    kt_alloc a;
} kkc_store;

static int kkc_open(const kc_target *t, kc_store *s) {
    kctl_kube_desc d = kctl_kube_desc_init();
    kkc_store *m = (kkc_store *)calloc(1, sizeof *m);
    int rc;
    (void)t;
    if (!m) return KCTL_ERR_NOMEM;
    kt_alloc_init(&m->a);
    if ((rc = kt_kube_server_start(NULL, &m->srv)) != KCTL_OK) {
        free(m);
        return rc;
    }
    d.server = kt_kube_server_url(m->srv);
    d.allocator = kt_allocator(&m->a);
    d.request_timeout_ns = KCTL_SEC(10);
    if ((rc = kctl_kube_create(&d, &s->tp)) != KCTL_OK) {
        kt_kube_server_stop(m->srv);
        free(m);
        return rc;
    }
    s->impl = m;
    return KCTL_OK;
}

static void kkc_close(const kc_target *t, kc_store *s) {
    kkc_store *m = (kkc_store *)s->impl;
    (void)t;
    kctl_transport_destroy(&s->tp);
    KT_EQ_INT(m->a.live, 0);
    kt_kube_server_stop(m->srv);
    free(m);
}

/* The server's history expires: every older version and continue token
   is 410 (a watch from one: the in-band ERROR event). */
static int kkc_compact(kc_store *s) {
    kt_kube_server_expire_history(((kkc_store *)s->impl)->srv);
    return KCTL_OK;
}

/* A BOOKMARK on every watch that asked for them, as if the server's
   bookmark period had passed. */
static int kkc_progress(kc_store *s) {
    kt_kube_server_bookmark_now(((kkc_store *)s->impl)->srv);
    return KCTL_OK;
}

/* Watches opened from now on break after one event: the server's store
   ends the watch, so the server drops the connection without the
   chunked terminator (kt_kube_server_break_watches breaks the streams
   open at the time instead, which the contract's test does not have). */
static int kkc_break(kc_store *s) {
    kctl_memstore_break_watches_after(kt_kube_server_memstore(((kkc_store *)s->impl)->srv), 1);
    return KCTL_OK;
}

static const kc_target kkc_target = {
    .name = "kube",
    .caps = KC_CAP_ALL, /* tests/contract.h, DIFFERENCES: "kube" */
    .res = { "edge.kctl.io", "v1", "deviceconfigs", "contract" },
    .api_version = "edge.kctl.io/v1",
    .kind = "DeviceConfig",
    .open = kkc_open,
    .close = kkc_close,
    .compact = kkc_compact,
    .progress = kkc_progress,
    .break_watches = kkc_break,
    .wait_ns = KCTL_SEC(5),
    .settle_ns = KCTL_MS(200),
    .bookmark_wait_ns = KCTL_SEC(3),
};
#endif /* KT_HAVE_CURL */

#ifndef KT_HAVE_CURL
static void kkc_unavailable(void) { KT_KUBE_REQUIRE_CURL(); }
#endif

void kt_suite_kube_contract(void) {
#ifdef KT_HAVE_CURL
    kc_run_contract(&kkc_target);
#else
    kt_run(kkc_unavailable, "contract/kube");
#endif
}
