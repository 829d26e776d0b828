/* fuzz_checkpoint.c - libFuzzer target for an informer's checkpoint
   reader. The input is loaded twice through the load callback: as it is,
   and with its payload length and CRC-32 made right (so inputs get past
   the checksum into the payload). A corrupt checkpoint must be refused
   whole (PROTO: no object in the cache, nothing queued), never crash or
   leak. One that loads must save and load again the same: the same
   objects, byte for byte, at the same version. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdlib.h>
#include <string.h>

typedef struct fc_blob {
    const unsigned char *data;
    size_t len;
    unsigned char *saved;
    size_t saved_len;
} fc_blob;

static int fc_load(const void **data, size_t *len, void *ud) {
    fc_blob *b = (fc_blob *)ud;
    *data = b->data;
    *len = b->len;
    return KCTL_OK;
}
static int fc_save(const void *data, size_t len, void *ud) {
    fc_blob *b = (fc_blob *)ud;
    free(b->saved);
    if (!(b->saved = (unsigned char *)malloc(len ? len : 1))) abort();
    memcpy(b->saved, data, len);
    b->saved_len = len;
    return KCTL_OK;
}

static const kctl_resource fc_res = { "", "v1", "configmaps", "prod" };

/* Load b into a new informer over ms; returns set_checkpoint's result and
   (OK) the cache size after one step. */
static int fc_try(kctl_memstore *ms, fc_blob *b, size_t *cached, char *rv) {
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_checkpoint_desc cd = kctl_checkpoint_desc_init();
    kctl_checkpoint_stats cs;
    int rc;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.resource = fc_res;
    if (kctl_informer_create(&d, &inf) != KCTL_OK) abort();
    cd.load_fn = fc_load;
    cd.save_fn = fc_save;
    cd.user_data = b;
    rc = kctl_informer_set_checkpoint(inf, &cd);
    kctl_informer_checkpoint_stats(inf, &cs);
    if (rc != KCTL_OK && (cs.loaded || kctl_indexer_len(kctl_informer_indexer(inf)))) abort(); /* half-loaded */
    if (rc == KCTL_OK) {
        kctl_informer_step(inf, 0, NULL); /* the store is empty and behind: the watch waits or relists */
        if (cached) *cached = (size_t)cs.loaded;
        if (rv) snprintf(rv, KCTL_RV_MAX, "%s", cs.loaded_rv);
    }
    kctl_informer_destroy(inf); /* may save */
    return rc;
}

static void fc_put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}

static void fc_one(kctl_memstore *ms, const unsigned char *data, size_t len) {
    fc_blob b, again;
    size_t n1 = 0, n2 = 0;
    char rv1[KCTL_RV_MAX] = "", rv2[KCTL_RV_MAX] = "";
    memset(&b, 0, sizeof b);
    b.data = data;
    b.len = len;
    if (fc_try(ms, &b, &n1, rv1) == KCTL_OK && b.saved) {
        memset(&again, 0, sizeof again);
        again.data = b.saved;
        again.len = b.saved_len;
        if (fc_try(ms, &again, &n2, rv2) != KCTL_OK) abort(); /* what kctl wrote, it reads */
        (void)n2;
        free(again.saved);
    }
    free(b.saved);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    memset(&md, 0, sizeof md);
    md.history = 1;
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) abort();
    fc_one(ms, data, size);
    if (size >= 28) { /* the same with the length and the checksum made right */
        unsigned char *fixed = (unsigned char *)malloc(size);
        uint64_t plen = size - 28;
        int i;
        if (!fixed) abort();
        memcpy(fixed, data, size);
        for (i = 0; i < 8; i++) fixed[16 + i] = (unsigned char)(plen >> (8 * i));
        fc_put32(fixed + 24, kctl__crc32(fixed + 28, size - 28));
        fc_one(ms, fixed, size);
        free(fixed);
    }
    kctl_memstore_destroy(ms);
    return 0;
}
