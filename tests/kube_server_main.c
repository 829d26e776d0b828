/* kube_server_main.c - build/kube-test-server: the test API server
   (tests/kube_server.h) as a program, to point kubectl, the Python client
   or curl at by hand.

     build/kube-test-server [--port N] [--bookmark-seconds S] [--history N]
                            [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]
                            [--resource GROUP,VERSION,PLURAL,SINGULAR,KIND,SHORT,namespaced|cluster[,status]]...

   --port 0 (the default) takes a free port. The first line printed is the
   server's URL; it serves until SIGINT or SIGTERM. Without --resource:
   configmaps, namespaces, leases (coordination.k8s.io/v1) and deviceconfigs
   (edge.kctl.io/v1). GROUP is empty for the core group: ",v1,pods,pod,Pod,po,namespaced". */
#define KCTL_IMPLEMENTATION
#include "kube_server.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t kks_main_stop;
static void kks_main_on_signal(int sig) { (void)sig; kks_main_stop = 1; }

static int kks_main_usage(void) {
    fprintf(stderr, "usage: kube-test-server [--port N] [--bookmark-seconds S] [--history N] "
                    "[--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]] "
                    "[--resource GROUP,VERSION,PLURAL,SINGULAR,KIND,SHORT,namespaced|cluster[,status]]...\n");
    return 2;
}

/* Split spec at commas into f[0..8); the text is the caller's to keep. */
static int kks_main_fields(char *spec, char **f, int max) {
    int n = 0;
    for (;;) {
        char *comma = strchr(spec, ',');
        if (n == max) return -1;
        f[n++] = spec;
        if (!comma) return n;
        *comma = 0;
        spec = comma + 1;
    }
}

int main(int argc, char **argv) {
    kt_kube_server_desc d;
    kt_kube_server *s;
    kt_kube_resource res[32];
    size_t nres = 0;
    struct sigaction sa;
    int i, rc;
    memset(&d, 0, sizeof d);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) return kks_main_usage();
        if (strcmp(a, "--port") == 0) d.port = (uint16_t)atoi(argv[++i]);
        else if (strcmp(a, "--bookmark-seconds") == 0) d.bookmark_period_ns = (uint64_t)atoi(argv[++i]) * 1000000000u;
        else if (strcmp(a, "--history") == 0) d.history = (uint32_t)atoi(argv[++i]);
        else if (strcmp(a, "--tls-cert") == 0) d.tls_cert_file = argv[++i];
        else if (strcmp(a, "--tls-key") == 0) d.tls_key_file = argv[++i];
        else if (strcmp(a, "--tls-client-ca") == 0) d.tls_client_ca_file = argv[++i];
        else if (strcmp(a, "--resource") == 0) {
            char *f[8];
            int n = kks_main_fields(argv[++i], f, 8);
            if (n < 7 || nres == sizeof res / sizeof res[0]) return kks_main_usage();
            memset(&res[nres], 0, sizeof res[nres]);
            res[nres].group = f[0];
            res[nres].version = f[1];
            res[nres].resource = f[2];
            res[nres].singular = f[3];
            res[nres].kind = f[4];
            res[nres].short_names = f[5];
            res[nres].namespaced = strcmp(f[6], "cluster") != 0;
            res[nres].status = n > 7 && strcmp(f[7], "status") == 0;
            nres++;
        } else {
            return kks_main_usage();
        }
    }
    if (nres) {
        d.resources = res;
        d.resource_count = nres;
    }
    if ((rc = kt_kube_server_start(&d, &s)) != KCTL_OK) {
        fprintf(stderr, "kube-test-server: %s\n", kctl_strerror(rc));
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = kks_main_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    printf("%s\n", kt_kube_server_url(s));
    fflush(stdout);
    while (!kks_main_stop) pause();
    kt_kube_server_stop(s);
    return 0;
}
