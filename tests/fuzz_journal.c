/* fuzz_journal.c - libFuzzer target for the memstore's journal replay.
   The input is a list of record payloads separated by NUL bytes (a
   payload never holds one: "<P|D> <revision> <uid sequence> <key>\n<doc>");
   the target frames each (length, checksum: so inputs get past it), and
   when the input's first byte is odd, cuts the last frame short (a torn
   tail). The journal is replayed onto an empty store, in memory. A replay
   never fails but for PROTO (its first record does not follow the empty
   store: a snapshot is missing; nothing made) or NOMEM, keeps a prefix of the
   records, and whatever it made must save and load again (the snapshot
   format's loader accepts it: every object one a write could make). */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdlib.h>
#include <string.h>

static kctl_memstore *fj_store(void) {
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    memset(&d, 0, sizeof d);
    d.history = 1;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) abort();
    return ms;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kctl_memstore *a, *b;
    char *buf;
    size_t len = KCTL__JNL_HDR, i = 0, records = 0, last = 0;
    kctl_jw w;
    int rc;
    if (size > (1u << 20)) return 0;
    if (!(buf = (char *)malloc(KCTL__JNL_HDR + size + 12 * (size + 1)))) return 0;
    memcpy(buf, KCTL__JNL_MAGIC, KCTL__JNL_HDR);
    while (i < size) {
        const uint8_t *p = data + i, *nul = (const uint8_t *)memchr(p, 0, size - i);
        size_t n = nul ? (size_t)(nul - p) : size - i, k;
        uint64_t sum;
        last = len;
        for (k = 0; k < 4; k++) buf[len + k] = (char)(unsigned char)((uint32_t)n >> (8 * k));
        memcpy(buf + len + 12, p, n);
        sum = kctl__fnv64(buf + len, 4);
        for (k = 0; k < n; k++) {
            sum ^= p[k];
            sum *= UINT64_C(0x100000001b3);
        }
        for (k = 0; k < 8; k++) buf[len + 4 + k] = (char)(unsigned char)(sum >> (8 * k));
        len += 12 + n;
        records++;
        i += n + 1;
    }
    if (size && (data[0] & 1) && records) len = last + (len - last) / 2; /* torn */
    a = fj_store();
    rc = kctl__jnl_replay(a, buf, len);
    if (rc != KCTL_OK && rc != KCTL_ERR_NOMEM && (rc != KCTL_ERR_PROTO || a->nobjs)) abort(); /* PROTO: the first record does not follow */
    if (rc == KCTL_OK) {
        if (a->jnl.size > len || a->jnl.st.replayed > records || a->rev != a->jnl.st.replayed) abort();
        if (kctl__ms_load_unique(a) == KCTL_OK) {
            if (kctl__ms_serialize(a, &w) != KCTL_OK) abort();
            b = fj_store();
            if (kctl__ms_load_buf(b, w.buf, w.len) != KCTL_OK || b->rev != a->rev || b->nobjs != a->nobjs) abort();
            kctl_memstore_destroy(b);
            kctl_jw_free(&w);
        }
    }
    kctl_memstore_destroy(a);
    free(buf);
    return 0;
}
