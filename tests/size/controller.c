/* A minimal single-threaded controller on the memstore: the reconcile of
   examples/hello_controller.c (read spec.image, write a status only when
   it changes), an informer and a controller stepped by hand until the
   next deadline (make size). */
#include "board.h"

static const kctl_resource apps = { "example.io", "v1", "apps", "default" };

static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0 };
    char image[128], buf[256];
    const char *status;
    kctl_jw w;
    if (!ctx->obj) return r;
    if (kctl_obj_get_string(ctx->obj, "spec.image", image, sizeof image, NULL) != KCTL_OK) {
        r.error = KCTL_ERR_INVALID_ARG;
        r.terminal = true;
        return r;
    }
    board_input = image[0]; /* make the world match */
    kctl_jw_init(&w, buf, sizeof buf);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "phase");
    kctl_jw_string(&w, "Ready");
    kctl_jw_key(&w, "image");
    kctl_jw_string(&w, image);
    kctl_jw_object_end(&w);
    if (kctl_jw_finish(&w, &status, NULL) == KCTL_OK)
        r.error = kctl_status_update(&ctx->transport, &apps, ctx->obj, status, KCTL_NTS, NULL, NULL, NULL);
    return r;
}

int main(void) {
    kctl_memstore *store;
    kctl_informer *inf;
    kctl_controller *c;
    kctl_informer_desc id;
    kctl_controller_desc cd;
    int i;
    memset(&id, 0, sizeof id);
    memset(&cd, 0, sizeof cd);
    if (kctl_memstore_create(NULL, &store) != KCTL_OK) return 1;
    kctl_memstore_apply(store, &apps, "{\"metadata\":{\"name\":\"web\"},\"spec\":{\"image\":\"nginx:1.27\"}}", KCTL_NTS, NULL, NULL);
    id.transport = kctl_memstore_transport(store);
    id.resource = apps;
    if (kctl_informer_create(&id, &inf) != KCTL_OK) return 2;
    cd.primary = inf;
    cd.transport = id.transport;
    cd.reconcile = reconcile;
    if (kctl_controller_create(&cd, &c) != KCTL_OK) return 3;
    for (i = 0; i < board_input; i++) { /* a device's main loop */
        uint64_t next = 0;
        kctl_informer_step(inf, 0, &next);
        kctl_controller_step(c, 16, NULL);
    }
    kctl_informer_destroy(inf);
    kctl_controller_destroy(c);
    kctl_memstore_destroy(store);
    return 0;
}
