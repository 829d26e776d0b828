/* hello_controller.c - a complete controller: the README's example. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdio.h>
#include <string.h>

static const kctl_resource apps = { "example.io", "v1", "apps", "default" };

static int deploy(const kctl_obj *app) { return printf("deploying %s\n", kctl_obj_name(app)) < 0; }

/* Level-based and idempotent: read the object, make the world match, report. */
static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0 };
    const char *ready = "{\"phase\":\"Ready\"}";
    if (!ctx->obj) return r;                             /* deleted: clean up, done */
    if (deploy(ctx->obj) != 0) {
        r.error = KCTL_ERR_IO;                           /* return the error: backoff */
        return r;
    }
    r.error = kctl_status_update(&ctx->transport, &apps, ctx->obj, ready, strlen(ready),
                                 NULL, NULL);            /* skipped when unchanged */
    return r;                                            /* CONFLICT: retried too */
}

int main(void) {
    const char *web = "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":2}}";
    kctl_memstore *store;
    kctl_manager *m;
    kctl_informer *inf;
    kctl_manager_desc md = { 0 };
    kctl_controller_desc cd = { 0 };
    int rc;
    kctl_memstore_create(NULL, &store);                  /* or a transport to a remote store */
    kctl_memstore_apply(store, &apps, web, strlen(web), NULL);
    md.transport = kctl_memstore_transport(store);
    kctl_manager_create(&md, &m);
    kctl_manager_informer(m, &apps, NULL, NULL, &inf);   /* one watch and cache, shared */
    cd.primary = inf;
    cd.reconcile = reconcile;
    kctl_manager_add_controller(m, &cd, NULL);
    rc = kctl_manager_run(m, KCTL_SEC(30));              /* until SIGINT or SIGTERM */
    kctl_manager_destroy(m);
    kctl_memstore_destroy(store);
    return rc == KCTL_OK ? 0 : 1;
}
