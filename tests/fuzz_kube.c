/* fuzz_kube.c - libFuzzer target for what kctl reads from a Kubernetes
   API server: watch streams (newline-delimited events), Status bodies and
   list answers.

   The input goes through a stream's line splitter (kctl__hstream_write)
   in chunks of sizes taken from the input, with a small message bound
   (data[0]): the lines that come out must be the input's lines, in order,
   up to the first one past the bound (TOO_LARGE), and a pause (whole
   lines waiting) loses nothing. Each line that comes out goes through the
   watch's event reader (kctl__kube_watch_line): an event must be well
   formed (ADDED/MODIFIED/DELETED with an object at the event's version, a
   BOOKMARK with a version and no object), an error a kctl code with a
   Status filled when it came from an ERROR event. The whole input is also
   read as an error answer (kctl__kube_status: a code, a Status filled,
   whatever the body) and as a list answer (kctl__kube_list_parse). No
   crash, no leak, no read out of bounds: the sanitizers say so. Seeds:
   tests/fuzz_corpus/kube (the bodies of tests/wire/k8s-apiserver/NN.bin,
   de-chunked, and a few event lines). */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include "../kctl_http_curl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FK_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_kube: %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

static void fk_line(const kctl_obj_opts *oo, const kctl_allocator *a, const char *line, size_t n) {
    kctl_event ev;
    kctl_api_status st;
    int rc;
    memset(&st, 0, sizeof st);
    rc = kctl__kube_watch_line(oo, a, line, n, &ev, &st);
    FK_CHECK(rc <= 0 && rc >= -30);
    if (rc != KCTL_OK) {
        FK_CHECK(ev.type == 0 && ev.obj == NULL);
        if (st.code) FK_CHECK(st.reason != NULL && st.message != NULL);
    } else if (ev.type == KCTL_EVENT_BOOKMARK) {
        FK_CHECK(ev.obj == NULL && ev.resource_version[0] != '\0');
    } else if (ev.type) {
        FK_CHECK(ev.type >= KCTL_EVENT_ADDED && ev.type <= KCTL_EVENT_DELETED);
        FK_CHECK(ev.obj != NULL);
        FK_CHECK(ev.resource_version[0] != '\0');
        FK_CHECK(strcmp(kctl_obj_resource_version(ev.obj), ev.resource_version) == 0);
        FK_CHECK(kctl_obj_name(ev.obj)[0] != '\0');
    } else {
        FK_CHECK(ev.obj == NULL);
    }
    kctl_event_clear(&ev);
    kctl_api_status_clear(&st);
}

/* The input through kctl__hstream_write in chunks of 1..97 bytes, each
   line read as it comes (and whenever the writer pauses, then the same
   chunk again), checked against a plain split and read as an event. */
static void fk_stream(const uint8_t *data, size_t size) {
    kctl__http h;
    kctl__hstream s;
    kctl_obj_opts oo;
    const char *in = (const char *)data, *end = in + size, *want = in, *line;
    size_t max = 16 + (size_t)data[0] * 16, off = 0, n, step = 1;
    bool stopped = false;
    memset(&h, 0, sizeof h);
    memset(&s, 0, sizeof s);
    memset(&oo, 0, sizeof oo);
    s.h = &h;
    s.max_msg = max;
    kctl__hbuf_init(&s.buf, &h.a, max + KCTL__HSTREAM_SLACK);
    while (off < size && !stopped) {
        size_t len = 1 + data[step++ % size] % 97, got;
        if (len > size - off) len = size - off;
        got = kctl__hstream_write((char *)(uintptr_t)(in + off), 1, len, &s);
        if (got == CURL_WRITEFUNC_PAUSE) {
            FK_CHECK(s.paused);
            s.paused = false; /* as kctl__hstream_line unpauses: the lines first */
        } else if (got != len) {
            FK_CHECK(s.too_large);
            stopped = true;
        } else
            off += len;
        while (kctl__hstream_take(&s, &line, &n)) {
            const char *nl = (const char *)memchr(want, '\n', (size_t)(end - want));
            size_t wn;
            FK_CHECK(nl != NULL);
            wn = (size_t)(nl - want);
            if (wn && want[wn - 1] == '\r') wn--;
            FK_CHECK(n == wn && memcmp(line, want, n) == 0);
            FK_CHECK(n <= max);
            fk_line(&oo, &h.a, line, n);
            want = nl + 1;
        }
    }
    if (stopped) {
        const char *nl = (const char *)memchr(want, '\n', (size_t)(end - want));
        FK_CHECK((size_t)((nl ? nl : end) - want) > max);
    } else {
        FK_CHECK(memchr(want, '\n', (size_t)(end - want)) == NULL);
    }
    kctl__hbuf_free(&s.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kctl_allocator a;
    kctl_obj_opts oo;
    memset(&a, 0, sizeof a);
    memset(&oo, 0, sizeof oo);
    if (size == 0) return 0;
    fk_stream(data, size);
    fk_line(&oo, &a, (const char *)data, size); /* the whole input as one line */
    { /* an error answer */
        static const long codes[] = { 400, 401, 403, 404, 405, 409, 410, 422, 429, 500, 503, 504, 302 };
        kctl_api_status st;
        int rc;
        memset(&st, 0, sizeof st);
        rc = kctl__kube_status(&a, codes[data[0] % (sizeof codes / sizeof codes[0])], (const char *)data, size, (long)(data[0] % 3) - 1, &st);
        FK_CHECK(rc < 0 && rc >= -30);
        FK_CHECK(st.code > 0 && st.reason != NULL && st.message != NULL);
        kctl_api_status_clear(&st);
    }
    { /* a list answer */
        kctl_list_result l;
        int rc;
        size_t i;
        memset(&l, 0, sizeof l);
        rc = kctl__kube_list_parse(&oo, &a, (const char *)data, size, &l);
        FK_CHECK(rc <= 0);
        for (i = 0; i < l.items.count; i++) FK_CHECK(kctl_obj_name(l.items.items[i])[0] != '\0');
        FK_CHECK(strlen(l.resource_version) < sizeof l.resource_version && strlen(l.continue_token) < sizeof l.continue_token);
        kctl_list_result_free(&l);
    }
    return 0;
}
