/* fuzz_etcd.c - libFuzzer target for what kctl reads from etcd's JSON
   gateway: watch messages (one JSON object a line), range answers (kvs
   with base64 keys and values, int64 as strings) and error bodies.

   The input is split into lines; its first byte says whether the watch
   filters with a label selector (the leave/enter transitions then run).
   Every line goes through the watch's message reader; the events it
   queues must be well formed (ADDED/MODIFIED/DELETED with an object whose
   resourceVersion is the event's, a BOOKMARK without one), and are freed;
   the whole input is also read as a range answer (every kv made into an
   object) and as an error body (a kctl code and a Status). No crash, no
   leak, no read out of bounds: the sanitizers say so. Seeds:
   tests/fuzz_corpus/etcd (lines of the captures in WIRE.md's etcd part). */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include "../kctl_http_curl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FE_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_etcd: %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

static kctl_transport fe_t;

static void fe_check_event(const kctl_event *ev) {
    FE_CHECK(ev->type >= KCTL_EVENT_ADDED && ev->type <= KCTL_EVENT_BOOKMARK);
    FE_CHECK(ev->resource_version[0] >= '0' && ev->resource_version[0] <= '9');
    if (ev->type == KCTL_EVENT_BOOKMARK) {
        FE_CHECK(ev->obj == NULL);
        return;
    }
    FE_CHECK(ev->obj != NULL);
    FE_CHECK(strcmp(kctl_obj_resource_version(ev->obj), ev->resource_version) == 0);
    FE_CHECK(kctl_obj_name(ev->obj)[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kctl__etcd *e;
    kctl__ewatch *w;
    const char *p, *end;
    if (!fe_t.vt) {
        kctl_etcd_desc d = kctl_etcd_desc_init();
        d.endpoints = "http://127.0.0.1:9"; /* never contacted */
        FE_CHECK(kctl_etcd_create(&d, &fe_t) == KCTL_OK);
    }
    e = (kctl__etcd *)fe_t.self;
    if (size == 0) return 0;
    w = (kctl__ewatch *)calloc(1, sizeof *w);
    FE_CHECK(w != NULL);
    w->e = e;
    w->root_len = strlen("/registry/things/");
    if (data[0] & 1) FE_CHECK(kctl_selector_parse("app=x", NULL, NULL, &w->sel) == KCTL_OK);
    /* the watch's messages, a line at a time */
    for (p = (const char *)data + 1, end = (const char *)data + size; p < end;) {
        const char *nl = (const char *)memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        kctl_api_status st;
        int rc;
        memset(&st, 0, sizeof st);
        rc = kctl__ewatch_message(w, p, n, &st);
        FE_CHECK(rc <= 0 && rc >= -30);
        while (w->qhead < w->qn) {
            kctl_event ev = w->q[w->qhead++];
            fe_check_event(&ev);
            kctl_event_clear(&ev);
        }
        w->qhead = w->qn = 0;
        kctl_api_status_clear(&st);
        p += n + (nl ? 1 : 0);
    }
    kctl__etcd_watch_close(e, (kctl_watch *)w);
    /* a range answer */
    {
        kctl__ejson r;
        memset(&r, 0, sizeof r);
        r.a = &e->http.a;
        if (kctl__ejson_parse(&r, (const char *)data, size) == KCTL_OK) {
            uint32_t kvs = kctl_json_member(&r.j, 0, "kvs"), i, k;
            if (kctl_json_type_of(&r.j, kvs) == KCTL_JSON_ARRAY)
                for (i = kvs + 1, k = 0; k < r.toks[kvs].size; k++, i += r.toks[i].skip) {
                    kctl_obj *o = NULL;
                    if (kctl__etcd_kv_obj(e, &r.j, i, NULL, &o) == KCTL_OK) {
                        FE_CHECK(o != NULL);
                        kctl_obj_unref(o);
                    } else {
                        FE_CHECK(o == NULL);
                    }
                }
            (void)kctl__ejson_u64(&r.j, 0, "header.revision");
        }
        kctl__ejson_free(&r);
    }
    /* an error body */
    {
        kctl_api_status st;
        int rc;
        memset(&st, 0, sizeof st);
        rc = kctl__etcd_error(400, (const char *)data, size, NULL, &st);
        FE_CHECK(rc < 0);
        FE_CHECK(st.code > 0);
        kctl_api_status_clear(&st);
    }
    return 0;
}
