/* fuzz_apisrv.c - libFuzzer target for the API-server rules through the
   memstore's writes.

   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c99 -D_POSIX_C_SOURCE=200809L \
       tests/fuzz_apisrv.c -o /tmp/fas && /tmp/fas -max_total_time=120 /tmp/corpus-copy

   The input is up to 16 lines; each line is one request: its first byte
   picks the verb (create, update, update_status, patch, status patch,
   apply, remove by name, apply without an answer), the second one's low
   bit the resource (namespaced "prod", or without a namespace), and the
   rest is the document, patch or name. A watch from revision 0 follows
   every write. Properties, each an abort() when broken:
     - a refused request leaves the revision as it was and hands out no
       object; a refusal other than INVALID_ARG and NOMEM has a Status;
     - every revision a request takes is exactly one event for the watcher;
     - an object a request answers with passes kctl_apisrv_check (the rules
       the loader applies) and parses again;
     - the store, saved to a file, loads again at the same revision (the
       file is under $TMPDIR, or /tmp);
     - nothing leaks (LeakSanitizer). */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FA_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_apisrv: %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

static const kctl_resource fa_ns = { "example.io", "v1", "things", "prod" };
static const kctl_resource fa_any = { "example.io", "v1", "things", NULL };

static void fa_check_obj(const kctl_resource *res, const kctl_obj *o) {
    kctl_api_status st;
    kctl_obj *again = NULL;
    kctl_resource r = *res;
    size_t n;
    const char *doc = kctl_obj_json(o, &n);
    memset(&st, 0, sizeof st);
    r.ns = kctl_obj_namespace(o);
    if (kctl_apisrv_check(&r, o, NULL, &st) != KCTL_OK) {
        fprintf(stderr, "fuzz_apisrv: an answered object fails the check: %s\n%.*s\n", st.message ? st.message : "", (int)n, doc);
        abort();
    }
    kctl_api_status_clear(&st);
    FA_CHECK(kctl_obj_parse(doc, n, NULL, &again) == KCTL_OK);
    kctl_obj_unref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[512];
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL, *again = NULL;
    kctl_transport t;
    kctl_watch *w = NULL;
    const char *p = (const char *)data, *end = p + size;
    int ops = 0;
    uint64_t rev;
    if (!path[0])
        snprintf(path, sizeof path, "%s/kctl-fuzz-apisrv-%ld.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    remove(path);
    memset(&md, 0, sizeof md);
    md.path = path;
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) return 0;
    t = kctl_memstore_transport(ms);
    FA_CHECK(kctl_transport_watch_open(&t, &fa_any, NULL, "0", &w, NULL) == KCTL_OK);
    while (p < end && ops++ < 16) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p)), *stop = nl ? nl : end, *doc = p + 2;
        const kctl_resource *res;
        kctl_api_status st;
        kctl_obj *o = NULL;
        kctl_event ev;
        uint64_t rev0 = kctl_memstore_revision(ms);
        size_t len;
        int rc, events = 0;
        if (stop - p < 2) {
            p = nl ? nl + 1 : end;
            continue;
        }
        res = (p[1] & 1) ? &fa_any : &fa_ns;
        len = (size_t)(stop - doc);
        memset(&st, 0, sizeof st);
        switch ((unsigned char)p[0] % 8) {
        case 0: rc = kctl_transport_create(&t, res, doc, len, &o, &st); break;
        case 1: rc = kctl_transport_update(&t, res, doc, len, &o, &st); break;
        case 2: rc = kctl_transport_update_status(&t, res, doc, len, &o, &st); break;
        case 3: rc = kctl_transport_patch(&t, res, "a", doc, len, 0, &o, &st); break;
        case 4: rc = kctl_transport_patch(&t, res, "a", doc, len, KCTL_PATCH_STATUS, &o, &st); break;
        case 5: rc = kctl_memstore_apply(ms, res, doc, len, &o, &st); break;
        case 6: {
            char name[64];
            size_t n = len < sizeof name - 1 ? len : sizeof name - 1;
            memcpy(name, doc, n);
            name[n] = '\0';
            rc = kctl_transport_remove(&t, res, name, NULL, &o, &st);
            break;
        }
        default: rc = kctl_memstore_apply(ms, res, doc, len, NULL, &st); break;
        }
        while (kctl_transport_watch_next(&t, w, 0, &ev, NULL) == KCTL_OK) {
            FA_CHECK(ev.obj != NULL);
            kctl_event_clear(&ev);
            events++;
        }
        FA_CHECK((uint64_t)events == kctl_memstore_revision(ms) - rev0);
        if (rc != KCTL_OK) {
            FA_CHECK(o == NULL);
            FA_CHECK(kctl_memstore_revision(ms) == rev0);
            if (rc != KCTL_ERR_NOMEM && rc != KCTL_ERR_INVALID_ARG) FA_CHECK(st.code != 0);
        } else if (o) {
            fa_check_obj(res, o);
        }
        kctl_obj_unref(o);
        kctl_api_status_clear(&st);
        p = nl ? nl + 1 : end;
    }
    kctl_transport_watch_close(&t, w);
    FA_CHECK(kctl_memstore_save(ms) == KCTL_OK);
    rev = kctl_memstore_revision(ms);
    kctl_memstore_destroy(ms);
    if (kctl_memstore_create(&md, &again) != KCTL_OK) {
        fprintf(stderr, "fuzz_apisrv: the saved store does not load again\n");
        abort();
    }
    FA_CHECK(kctl_memstore_revision(again) == rev);
    kctl_memstore_destroy(again);
    remove(path);
    return 0;
}
