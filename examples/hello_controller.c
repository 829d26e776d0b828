/* hello_controller.c - a complete controller: the README's example. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdio.h>

static const kctl_resource apps = { "example.io", "v1", "apps", "default" };

/* Level-based and idempotent: read the object, make the world match, report. */
static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0 };
    if (!ctx->obj) return r;                                     /* deleted: clean up, done */
    if (printf("deploying %s\n", kctl_obj_name(ctx->obj)) < 0)   /* make the world match */
        r.error = KCTL_ERR_IO;                                   /* return the error: backoff */
    else                                                         /* skipped when unchanged */
        r.error = kctl_status_update(&ctx->transport, &apps, ctx->obj, "{\"phase\":\"Ready\"}", 17, NULL, NULL);
    return r;
}

int main(void) {
    kctl_memstore *store;
    kctl_manager *m;
    kctl_manager_desc md = { 0 };
    kctl_controller_desc cd = { 0 };
    kctl_memstore_create(NULL, &store);                          /* or a transport to a remote store */
    kctl_memstore_apply(store, &apps, "{\"metadata\":{\"name\":\"web\"}}", 27, NULL);
    md.transport = kctl_memstore_transport(store);
    kctl_manager_create(&md, &m);
    kctl_manager_informer(m, &apps, NULL, NULL, &cd.primary);    /* one watch and cache, shared */
    cd.reconcile = reconcile;
    kctl_manager_add_controller(m, &cd, NULL);
    kctl_manager_run_until_signal(m);                            /* until SIGINT or SIGTERM */
    kctl_manager_destroy(m);
    kctl_memstore_destroy(store);
    return 0;
}
