// cxx_curl_check.cpp - kctl_http_curl.h, implementation included, builds
// and runs as C++11 beside kctl.h (make test, where libcurl is there):
// an etcd transport, a kubeconfig parsed, a Kubernetes transport from it.
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include "../kctl_http_curl.h"
#include <cstdio>
#include <cstring>

int main() {
    kctl_transport t;
    kctl_etcd_desc ed = kctl_etcd_desc_init();
    kctl_kube_config kc;
    kctl_api_status st;
    static const char cfg[] =
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- cluster:\n"
        "    server: http://127.0.0.1:1\n"
        "  name: c\n"
        "contexts:\n"
        "- context:\n"
        "    cluster: c\n"
        "    namespace: ns1\n"
        "  name: x\n"
        "current-context: x\n";
    std::memset(&st, 0, sizeof st);
    std::memset(&kc, 0, sizeof kc);
    ed.endpoints = "http://127.0.0.1:1";
    if (kctl_etcd_create(&ed, &t) != KCTL_OK) return 1;
    kctl_transport_destroy(&t);
    if (kctl_kube_config_parse(cfg, KCTL_NTS, nullptr, nullptr, &kc, &st) != KCTL_OK) return 2;
    if (std::strcmp(kc.desc.server, "http://127.0.0.1:1") != 0 || std::strcmp(kc.ns, "ns1") != 0) return 3;
    if (kctl_kube_create(&kc.desc, &t) != KCTL_OK) return 4;
    kctl_transport_destroy(&t);
    kctl_kube_config_free(&kc);
    kctl_api_status_clear(&st);
    std::printf("C++11 build of kctl_http_curl.h: ok\n");
    return 0;
}
