/* fuzz_etcd.c - libFuzzer target for what kctl reads from etcd's JSON
   gateway: watch messages (one JSON object a line), range answers (kvs
   with base64 keys and values, int64 as strings) and error bodies.

   The input is split into lines; its first byte says whether the watch
   filters with a label selector (the leave/enter transitions then run).
   Every line goes through the watch's message reader; the events it
   releases (a fragment holds back its last revision) must be well
   formed (ADDED/MODIFIED/DELETED with an object whose resourceVersion is
   the event's, a BOOKMARK without one), and are freed;
   the whole input is also read as a range answer (every kv made into an
   object) and as an error body (a kctl code and a Status), and it is fed
   to a stream's line splitter in chunks of sizes taken from the input,
   with a small message bound: the lines that come out are the input's
   lines, in order, up to the first one past the bound (TOO_LARGE), and
   a pause (whole lines waiting) loses nothing. No crash, no
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

/* The input through kctl__hstream_write in chunks of 1..(data[i] + 1)
   bytes, the lines taken as they come (and whenever the writer pauses,
   then the same chunk again), checked against a plain split. */
static void fe_stream(kctl__etcd *e, const uint8_t *data, size_t size) {
    kctl__hstream s;
    const char *in = (const char *)data, *end = in + size, *want = in, *line;
    size_t max = 16 + (size_t)data[0] * 4, off = 0, n, step = 1;
    bool stopped = false;
    memset(&s, 0, sizeof s);
    s.h = &e->http;
    s.max_msg = max;
    kctl__hbuf_init(&s.buf, &e->http.a, max + KCTL__HSTREAM_SLACK);
    while (off < size && !stopped) {
        size_t len = 1 + data[step++ % size] % 97, got;
        if (len > size - off) len = size - off;
        got = kctl__hstream_write((char *)(uintptr_t)(in + off), 1, len, &s);
        if (got == CURL_WRITEFUNC_PAUSE) {
            FE_CHECK(s.paused);
            s.paused = false; /* as kctl__hstream_line unpauses: the lines first */
        } else if (got != len) {
            FE_CHECK(s.too_large);
            stopped = true;
        } else
            off += len;
        while (kctl__hstream_take(&s, &line, &n)) { /* each must be the next line of the input */
            const char *nl = (const char *)memchr(want, '\n', (size_t)(end - want));
            size_t wn;
            FE_CHECK(nl != NULL);
            wn = (size_t)(nl - want);
            if (wn && want[wn - 1] == '\r') wn--;
            FE_CHECK(n == wn && memcmp(line, want, n) == 0);
            FE_CHECK(n <= max);
            want = nl + 1;
        }
    }
    if (stopped) { /* the next line of the input is the one past the bound */
        const char *nl = (const char *)memchr(want, '\n', (size_t)(end - want));
        FE_CHECK((size_t)((nl ? nl : end) - want) > max);
    } else { /* everything whole came out; what is left has no newline */
        FE_CHECK(memchr(want, '\n', (size_t)(end - want)) == NULL);
    }
    kctl__hstream_close(&s);
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
        FE_CHECK(w->qhead <= w->qready && w->qready <= w->qn);
        if (rc == KCTL_OK && w->qn > w->qhead) { /* a fragment: its last revision is held back, all of it */
            kctl__ejson r;
            bool frag;
            memset(&r, 0, sizeof r);
            r.a = &e->http.a;
            frag = kctl__ejson_parse(&r, p, n) == KCTL_OK &&
                   kctl_json_type_of(&r.j, kctl_json_path(&r.j, 0, "result.fragment")) == KCTL_JSON_TRUE &&
                   kctl_json_type_of(&r.j, kctl_json_path(&r.j, 0, "result.events")) == KCTL_JSON_ARRAY;
            kctl__ejson_free(&r);
            if (frag) {
                FE_CHECK(w->qready < w->qn);
                FE_CHECK(w->qready == w->qhead || strcmp(w->q[w->qready - 1].resource_version, w->q[w->qn - 1].resource_version) != 0);
            }
        }
        while (w->qhead < w->qready) { /* handed out, as watch_next does; the held ones stay */
            kctl_event ev = w->q[w->qhead++];
            fe_check_event(&ev);
            kctl_event_clear(&ev);
        }
        if (w->qhead == w->qn) w->qhead = w->qn = w->qready = 0;
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
    fe_stream(e, data, size);
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
