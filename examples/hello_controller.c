/* hello_controller.c - a complete controller: the README's example. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdio.h>

static const kctl_resource apps = { "example.io", "v1", "apps", "default" };

/* Level-based and idempotent: read the object, make the world match, report. */
static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0 };
    char image[128], buf[256];
    const char *status;
    kctl_jw w;
    if (!ctx->obj) return r;                                     /* deleted (ctx->ns, ctx->name): clean up */
    if (kctl_obj_get_string(ctx->obj, "spec.image", image, sizeof image, NULL) != KCTL_OK) {
        r.error = KCTL_ERR_INVALID_ARG;                          /* a spec we cannot act on: */
        r.terminal = true;                                       /* retrying will not help */
        return r;
    }
    if (printf("deploying %s with %s\n", ctx->name, image) < 0)  /* make the world match */
        r.error = KCTL_ERR_IO;                                   /* return the error: backoff */
    kctl_jw_init(&w, buf, sizeof buf);                           /* the status it reached */
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "phase");
    kctl_jw_string(&w, r.error ? "Failed" : "Ready");
    kctl_jw_key(&w, "image");
    kctl_jw_string(&w, image);
    kctl_jw_object_end(&w);
    if (!r.error && kctl_jw_finish(&w, &status, NULL) == KCTL_OK) /* skipped when unchanged */
        r.error = kctl_status_update(&ctx->transport, &apps, ctx->obj, status, KCTL_NTS, NULL, NULL, NULL);
    return r;
}

int main(void) {
    kctl_memstore *store;
    kctl_manager *m;
    kctl_manager_desc md = { 0 };
    kctl_controller_desc cd = { 0 };
    kctl_api_status st = { 0 };
    kctl_memstore_create(NULL, &store);                          /* or a transport to a remote store */
    if (kctl_memstore_apply(store, &apps, "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"image\":\"nginx:1.27\"}}",
                            KCTL_NTS, NULL, &st) != KCTL_OK)
        fprintf(stderr, "%s\n", st.message);                     /* the store says what is wrong, and where */
    kctl_api_status_clear(&st);
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
