// cxx_check.cpp - kctl.h, implementation included, builds and runs as C++11.
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <cstdio>
#include <cstring>

int main() {
    kctl_queue *q = nullptr;
    const char *key = nullptr;
    kctl_vclock vc;
    kctl_vclock_init(&vc, 0);
    kctl_queue_desc d = kctl_queue_desc_init();
    d.clock = kctl_vclock_clock(&vc);
    if (kctl_queue_create(&d, &q) != KCTL_OK) return 1;
    if (kctl_queue_add_rate_limited(q, "default/a") != KCTL_OK) return 2;
    if (kctl_queue_try_get(q, &key) != KCTL_ERR_AGAIN) return 3;
    kctl_vclock_advance(&vc, KCTL_MS(5));
    if (kctl_queue_try_get(q, &key) != KCTL_OK || std::strcmp(key, "default/a") != 0) return 4;
    kctl_queue_done(q, key);
    kctl_queue_destroy(q);
    kctl_vclock_deinit(&vc);
    std::printf("C++11 build of kctl %s: ok\n", kctl_version());
    return 0;
}
