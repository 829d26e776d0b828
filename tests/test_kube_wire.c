/* test_kube_wire.c - the Kubernetes transport against the bytes of a real
   API server (k8s.io/apiserver v0.26.15, tests/wire/k8s-apiserver-captures.md;
   the raw streams are tests/wire/k8s-apiserver/NN.bin).

   Two ways in. The parsers alone: each capture's body through the watch
   line splitter (kctl__hstream_write, split where the server split its
   chunks, and in 1- and 7-byte pieces) and the event reader
   (kctl__kube_watch_line), and each error body through the Status reader
   (kctl__kube_status). And the whole transport: a replay server on
   127.0.0.1 answers each request with a captured response, byte for byte
   (libcurl de-chunks it, finds its end or its break), and keeps what it
   was asked, so the tests check the request line, headers and body the
   transport sent. Replies not captured (a 429 with Retry-After, a 401)
   are written here, in the server's shape.

   This file holds kctl_http_curl.h's implementation for build/kt-kube
   (tests/run_kube.c leaves it out), so its private parsers are reachable. */
#define KCTL_HTTP_CURL_IMPLEMENTATION
#include "kube.h"

#ifdef KT_HAVE_CURL
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

static const kctl_resource kw_fl = { "wardle.example.com", "v1alpha1", "flunders", "default" };

/* ---- captures */
typedef struct kw_cap {
    char *raw;          /* the whole response */
    size_t len;
    long code;
    const char *body;   /* after the header block (still chunked, if it is) */
    size_t body_len;
    bool chunked;
    char *payload;      /* the de-chunked body */
    size_t payload_len;
    size_t cuts[64];    /* where each chunk ended in payload */
    size_t ncuts;
} kw_cap;

static void kw_cap_free(kw_cap *c) {
    free(c->raw);
    free(c->payload);
    memset(c, 0, sizeof *c);
}

/* Read tests/wire/k8s-apiserver/<nn>.bin and take it apart. */
static bool kw_cap_load(int nn, kw_cap *c) {
    char path[64];
    FILE *f;
    long n;
    const char *p, *hdr_end;
    memset(c, 0, sizeof *c);
    snprintf(path, sizeof path, "tests/wire/k8s-apiserver/%02d.bin", nn);
    if (!(f = fopen(path, "rb"))) {
        kt_fail(__FILE__, __LINE__, "cannot read %s (run from the tree's root)", path);
        return false;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    c->raw = (char *)malloc((size_t)n + 1);
    c->len = c->raw ? fread(c->raw, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!c->raw || c->len != (size_t)n) return false;
    c->raw[n] = '\0';
    c->code = strtol(c->raw + 9, NULL, 10);
    if (!(hdr_end = strstr(c->raw, "\r\n\r\n"))) return false;
    c->body = hdr_end + 4;
    c->body_len = c->len - (size_t)(c->body - c->raw);
    c->chunked = strstr(c->raw, "Transfer-Encoding: chunked") != NULL && strstr(c->raw, "Transfer-Encoding: chunked") < hdr_end;
    c->payload = (char *)malloc(c->body_len + 1);
    if (!c->payload) return false;
    if (!c->chunked) {
        memcpy(c->payload, c->body, c->body_len);
        c->payload_len = c->body_len;
        c->cuts[c->ncuts++] = c->body_len;
    } else {
        for (p = c->body; p < c->raw + c->len;) { /* <hex>\r\n<data>\r\n ... 0\r\n\r\n */
            char *e;
            unsigned long sz = strtoul(p, &e, 16);
            if (e == p || strncmp(e, "\r\n", 2) != 0) return false;
            p = e + 2;
            if (!sz) break;
            memcpy(c->payload + c->payload_len, p, sz);
            c->payload_len += sz;
            if (c->ncuts < 64) c->cuts[c->ncuts++] = c->payload_len;
            p += sz + 2;
        }
    }
    c->payload[c->payload_len] = '\0';
    return true;
}

/* ---- the parsers alone */
static void kw_ev_text(const kctl_event *ev, char *out, size_t cap) {
    static const char *letters = "?AMDB";
    size_t at = strlen(out);
    snprintf(out + at, cap - at, "%s%c:%s@%s", at ? " " : "", letters[ev->type], ev->obj ? kctl_obj_name(ev->obj) : "",
             ev->resource_version);
}

/* Feed payload to a stream's writer in the pieces cut[] says (or of size
   step), read every whole line as it comes, and the events they make:
   "A:name@rv ..." in text, the first error's code (OK: none) with *st. */
static int kw_feed(const kw_cap *c, size_t step, char *text, size_t cap, int *events, kctl_api_status *st) {
    kctl__http h;
    kctl__hstream s;
    kctl_obj_opts oo;
    size_t off = 0, k = 0;
    int rc = KCTL_OK;
    memset(&h, 0, sizeof h);
    memset(&s, 0, sizeof s);
    memset(&oo, 0, sizeof oo);
    s.h = &h;
    s.max_msg = 1u << 20;
    kctl__hbuf_init(&s.buf, &h.a, s.max_msg + KCTL__HSTREAM_SLACK);
    text[0] = '\0';
    *events = 0;
    while (off < c->payload_len && rc == KCTL_OK) {
        size_t end = step ? off + step : c->cuts[k++], got;
        const char *line;
        size_t n;
        if (end > c->payload_len) end = c->payload_len;
        got = kctl__hstream_write(c->payload + off, 1, end - off, &s);
        if (got != end - off) {
            kt_fail(__FILE__, __LINE__, "the writer refused %zu bytes", end - off);
            rc = KCTL_ERR_IO;
            break;
        }
        off = end;
        while (rc == KCTL_OK && kctl__hstream_take(&s, &line, &n)) {
            kctl_event ev;
            rc = kctl__kube_watch_line(&oo, &h.a, line, n, &ev, st);
            if (rc == KCTL_OK && ev.type) {
                (*events)++;
                kw_ev_text(&ev, text, cap);
                if (ev.type == KCTL_EVENT_BOOKMARK) KT_CHECK(ev.obj == NULL);
                else KT_EQ_STR(kctl_obj_resource_version(ev.obj), ev.resource_version);
            }
            kctl_event_clear(&ev);
        }
    }
    kctl__hbuf_free(&s.buf);
    return rc;
}

/* Lines of the de-chunked body with something on them. */
static int kw_lines(const kw_cap *c) {
    int n = 0;
    size_t i, start = 0;
    for (i = 0; i < c->payload_len; i++)
        if (c->payload[i] == '\n') {
            n += i > start;
            start = i + 1;
        }
    return n;
}

/* Every watch capture read as the server split it, and in 1- and 7-byte
   pieces: one event per line (the replays of 36-39 split events across
   2048-byte chunks mid-token), each event's object at the event's
   version; a bookmark is its version alone; the label-selector watch
   shows the object leaving as DELETED with its old labels at the new
   version; the in-band 410 is GONE with the server's Status. */
static void kw_watch_captures(void) {
    static const struct { int nn; const char *want; int rc; } cases[] = {
        { 35, "A:w1@17 M:w1@18 D:w1@19 B:@19 B:@19", KCTL_OK },
        { 40, "D:f1@20 A:f1@21", KCTL_OK },
        { 50, "M:fin@25 D:fin@26", KCTL_OK },
        { 51, "B:@27 B:@27", KCTL_OK },
        { 52, "B:@27 B:@27", KCTL_OK },
        { 53, "", KCTL_ERR_GONE },
        { 36, NULL, KCTL_OK }, { 37, NULL, KCTL_OK }, { 38, NULL, KCTL_OK }, { 39, NULL, KCTL_OK },
    };
    size_t i, s;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kw_cap c;
        char first[4096] = "";
        if (!kw_cap_load(cases[i].nn, &c)) { kw_cap_free(&c); continue; }
        KT_CHECK(c.chunked);
        if (cases[i].nn >= 36 && cases[i].nn <= 39) KT_CHECK(c.ncuts >= 2); /* the replay is split mid-event */
        for (s = 0; s < 3; s++) {
            static const size_t steps[] = { 0, 1, 7 };
            char text[4096];
            int events = 0, rc;
            kctl_api_status st;
            memset(&st, 0, sizeof st);
            rc = kw_feed(&c, steps[s], text, sizeof text, &events, &st);
            KT_EQ_INT(rc, cases[i].rc);
            if (cases[i].want) KT_EQ_STR(text, cases[i].want);
            if (rc == KCTL_OK) KT_EQ_INT(events, kw_lines(&c));
            if (s == 0) snprintf(first, sizeof first, "%s", text);
            else KT_EQ_STR(text, first); /* however it is cut */
            if (cases[i].rc == KCTL_ERR_GONE) {
                KT_EQ_INT(st.code, 410);
                KT_EQ_STR(st.reason, "Expired");
                KT_EQ_STR(st.message, "too old resource version: 7 (27)");
            }
            kctl_api_status_clear(&st);
        }
        if (cases[i].nn == 36) KT_CHECK(!strncmp(first, "A:bad@9 A:Bad_Name.x@11 A:nokind@12 A:f1@8 A:f2@15 A:f5@16", 58));
        if (cases[i].nn == 39) KT_CHECK(strstr(first, "M:f2@13 M:f2@14 M:f2@15 A:f5@16 A:w1@17 M:w1@18 D:w1@19") != NULL);
        kw_cap_free(&c);
    }
}

/* The DELETED of an object that stopped matching carries its old content
   (labels app=demo) at the new version (capture 40). */
static void kw_deleted_on_unmatch(void) {
    kw_cap c;
    kctl_event ev;
    kctl_obj_opts oo;
    kctl_allocator a;
    const char *nl;
    memset(&oo, 0, sizeof oo);
    memset(&a, 0, sizeof a);
    if (!kw_cap_load(40, &c)) { kw_cap_free(&c); return; }
    nl = strchr(c.payload, '\n');
    KT_CHECK(nl != NULL);
    if (nl) {
        KT_EQ_INT(kctl__kube_watch_line(&oo, &a, c.payload, (size_t)(nl - c.payload), &ev, NULL), KCTL_OK);
        KT_EQ_INT(ev.type, KCTL_EVENT_DELETED);
        KT_EQ_STR(ev.resource_version, "20");
        KT_EQ_STR(kctl_obj_label(ev.obj, "app"), "demo");
        KT_EQ_STR(kctl_obj_uid(ev.obj), "28bdc108-cca4-4282-9cef-f4920cdc82c6");
        kctl_event_clear(&ev);
    }
    kw_cap_free(&c);
}

/* Lines that are no event, and events that are not well formed. */
static void kw_watch_line_edges(void) {
    static const struct { const char *line; int rc; int type; } cases[] = {
        { "", KCTL_OK, 0 },
        { "  \r", KCTL_OK, 0 },
        { "{\"type\":\"ADDED\"}", KCTL_ERR_PROTO, 0 },
        { "{\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}}", KCTL_ERR_PROTO, 0 },
        { "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}", KCTL_ERR_PROTO, 0 },  /* no version */
        { "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":\"3\"}}}", KCTL_ERR_PROTO, 0 }, /* no name */
        { "{\"type\":\"ADDED\",\"object\":[]}", KCTL_ERR_PROTO, 0 },
        { "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}", KCTL_ERR_PROTO, 0 },
        { "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"9\"}}}", KCTL_OK, KCTL_EVENT_BOOKMARK },
        { "{\"type\":\"SOMETHINGNEWANDLONG\",\"object\":{}}", KCTL_OK, 0 },
        { "{\"type\":\"NEW\",\"object\":{}}", KCTL_OK, 0 },
        { "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,\"reason\":\"InternalError\",\"message\":\"x\"}}", KCTL_ERR_IO, 0 },
        { "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":504,\"reason\":\"Timeout\",\"message\":\"Too large resource version\"}}", KCTL_ERR_TIMEOUT, 0 },
        { "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Gone\",\"message\":\"x\"}}", KCTL_ERR_GONE, 0 },
        { "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":200}}", KCTL_ERR_IO, 0 },
        { "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Pod\"}}", KCTL_ERR_PROTO, 0 },
        { "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"1\"}}", KCTL_ERR_PROTO, 0 }, /* cut short */
        { "not json", KCTL_ERR_PROTO, 0 },
        { "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":"
          "\"1234567890123456789012345678901234567890123456789012345678901234567890\"}}}", KCTL_ERR_TOO_LARGE, 0 }, /* past KCTL_RV_MAX */
        { "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":"
          "\"1234567890123456789012345678901234567890123456789012345678901234567890\"}}}", KCTL_ERR_TOO_LARGE, 0 },
    };
    size_t i;
    kctl_obj_opts oo;
    kctl_allocator a;
    memset(&oo, 0, sizeof oo);
    memset(&a, 0, sizeof a);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kctl_event ev;
        int rc = kctl__kube_watch_line(&oo, &a, cases[i].line, strlen(cases[i].line), &ev, NULL);
        if (rc != cases[i].rc || ev.type != cases[i].type) kt_fail(__FILE__, __LINE__, "line %zu: rc %d type %d", i, rc, ev.type);
        kctl_event_clear(&ev);
    }
}

/* Every error body of the captures through the Status reader: the code
   (409 by reason, 410 GONE...) and the detail the server gave. */
static void kw_status_bodies(void) {
    static const struct { int nn; int rc; const char *reason, *name, *kind; size_t causes; } cases[] = {
        { 20, KCTL_ERR_NOT_FOUND, "NotFound", "nope", "flunders", 0 },
        { 48, KCTL_ERR_NOT_FOUND, "NotFound", "fin", "flunders", 0 },
        { 30, KCTL_ERR_NOT_FOUND, "NotFound", "", "", 0 },
        { 18, KCTL_ERR_CONFLICT, "Conflict", "f1", "flunders", 0 },
        { 41, KCTL_ERR_CONFLICT, "Conflict", "f3", "Flunder", 0 },
        { 19, KCTL_ERR_EXISTS, "AlreadyExists", "f1", "flunders", 0 },
        { 17, KCTL_ERR_GONE, "Expired", "", "", 0 },
        { 54, KCTL_ERR_GONE, "Expired", "", "", 0 },
        { 21, KCTL_ERR_INVALID_ARG, "Invalid", "inv1", "Flunder", 1 },
        { 22, KCTL_ERR_INVALID_ARG, "Invalid", "", "Flunder", 1 },
        { 26, KCTL_ERR_INVALID_ARG, "BadRequest", "", "", 0 },
        { 28, KCTL_ERR_INVALID_ARG, "BadRequest", "", "", 0 },
        { 1, KCTL_ERR_NOT_FOUND, "NotFound", "", "", 0 },       /* {"paths":[...]}: no Status */
        { 13, KCTL_ERR_INVALID_ARG, "NotAcceptable", "", "", 0 } /* protobuf: no Status kctl reads */
    };
    size_t i;
    kctl_allocator a;
    memset(&a, 0, sizeof a);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kw_cap c;
        kctl_api_status st;
        memset(&st, 0, sizeof st);
        if (!kw_cap_load(cases[i].nn, &c)) { kw_cap_free(&c); continue; }
        KT_EQ_INT(kctl__kube_status(&a, c.code, c.payload, c.payload_len, -1, &st), cases[i].rc);
        KT_EQ_INT(st.code, c.code);
        KT_EQ_STR(st.reason, cases[i].reason);
        KT_EQ_STR(st.name, cases[i].name);
        KT_EQ_STR(st.kind, cases[i].kind);
        KT_EQ_U64(st.cause_count, cases[i].causes);
        KT_CHECK(st.message[0] != '\0');
        if (cases[i].nn == 21 && st.cause_count == 1) {
            KT_EQ_STR(st.causes[0].field, "spec.fischerReference");
            KT_EQ_STR(st.causes[0].reason, "FieldValueInvalid");
            KT_EQ_STR(st.group, "wardle.example.com");
        }
        if (cases[i].nn == 17) KT_CHECK(strstr(st.message, "continue parameter is too old") != NULL);
        KT_EQ_INT(kctl__kube_status(&a, c.code, c.payload, c.payload_len, -1, NULL), cases[i].rc); /* no detail wanted */
        kctl_api_status_clear(&st);
        kw_cap_free(&c);
    }
}

/* The other codes a client meets, in the shape an API server words them
   (these are not among the captures): each Status read, each code mapped. */
static void kw_status_codes(void) {
    static const struct { long code; const char *reason; int rc; } cases[] = {
        { 401, "Unauthorized", KCTL_ERR_UNAUTHORIZED },
        { 403, "Forbidden", KCTL_ERR_FORBIDDEN },
        { 405, "MethodNotAllowed", KCTL_ERR_INVALID_ARG },
        { 413, "RequestEntityTooLarge", KCTL_ERR_TOO_LARGE },
        { 429, "TooManyRequests", KCTL_ERR_AGAIN },
        { 500, "InternalError", KCTL_ERR_IO },
        { 503, "ServiceUnavailable", KCTL_ERR_AGAIN },
        { 504, "Timeout", KCTL_ERR_TIMEOUT },
    };
    size_t i;
    kctl_allocator a;
    memset(&a, 0, sizeof a);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[512];
        kctl_api_status st;
        memset(&st, 0, sizeof st);
        snprintf(body, sizeof body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"m%ld\","
                 "\"reason\":\"%s\",\"details\":{\"retryAfterSeconds\":%d},\"code\":%ld}\n", cases[i].code, cases[i].reason,
                 cases[i].code == 429 ? 3 : 0, cases[i].code);
        KT_EQ_INT(kctl__kube_status(&a, cases[i].code, body, strlen(body), 9, &st), cases[i].rc);
        KT_EQ_INT(st.code, cases[i].code);
        KT_EQ_STR(st.reason, cases[i].reason);
        KT_EQ_U64(st.retry_after_s, cases[i].code == 429 ? 3 : 9); /* the Status's, else the header's */
        kctl_api_status_clear(&st);
        /* no body at all: the code's usual reason */
        KT_EQ_INT(kctl__kube_status(&a, cases[i].code, NULL, 0, -1, &st), cases[i].rc);
        KT_EQ_STR(st.reason, cases[i].reason);
        KT_EQ_U64(st.retry_after_s, 0);
        kctl_api_status_clear(&st);
    }
}

/* ---- a replay server */
#define KW_MAX 8
typedef struct kw_srv {
    int lfd, port;
    pthread_t th;
    const char *resp[KW_MAX];
    size_t rlen[KW_MAX];
    int nresp;
    char *req[KW_MAX];
    int nreq;
    const char *rewrite_path, *rewrite_data; /* written before the first answer (a token rotates) */
} kw_srv;

static bool kw_wait_in(int fd, int ms) {
    struct pollfd p;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    return poll(&p, 1, ms) > 0;
}

/* One request from fd (headers, and a body of its Content-Length): its
   text (malloc), or NULL at the connection's end. */
static char *kw_read_req(int fd) {
    size_t cap = 1 << 16, n = 0, need = 0;
    char *b = (char *)malloc(cap + 1), *end = NULL;
    if (!b) return NULL;
    for (;;) {
        ssize_t got;
        if (end && n >= need) break;
        if (!kw_wait_in(fd, 5000) || n == cap || (got = recv(fd, b + n, cap - n, 0)) <= 0) {
            free(b);
            return NULL;
        }
        n += (size_t)got;
        b[n] = '\0';
        if (!end && (end = strstr(b, "\r\n\r\n")) != NULL) {
            const char *cl = strstr(b, "Content-Length: ");
            need = (size_t)(end + 4 - b) + (cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0);
        }
    }
    return b;
}

static void *kw_serve(void *arg) {
    kw_srv *s = (kw_srv *)arg;
    int fd = -1;
    while (s->nreq < s->nresp) {
        char *req;
        const char *hdr_end;
        bool stream;
        size_t off = 0;
        if (fd < 0) {
            if (!kw_wait_in(s->lfd, 5000) || (fd = accept(s->lfd, NULL, NULL)) < 0) break;
        }
        if (!(req = kw_read_req(fd))) { /* a kept-alive connection closed: the next one */
            close(fd);
            fd = -1;
            continue;
        }
        if (s->rewrite_path && s->nreq == 0) {
            FILE *f = fopen(s->rewrite_path, "w");
            if (f) {
                fputs(s->rewrite_data, f);
                fclose(f);
            }
        }
        s->req[s->nreq] = req;
        hdr_end = strstr(s->resp[s->nreq], "\r\n\r\n");
        stream = strstr(s->resp[s->nreq], "Transfer-Encoding: chunked") != NULL &&
                 strstr(s->resp[s->nreq], "Transfer-Encoding: chunked") < hdr_end;
        while (off < s->rlen[s->nreq]) {
            ssize_t put = send(fd, s->resp[s->nreq] + off, s->rlen[s->nreq] - off, MSG_NOSIGNAL);
            if (put <= 0) break;
            off += (size_t)put;
        }
        s->nreq++;
        if (stream) { /* its end (or its break) is the connection's */
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0) close(fd);
    return NULL;
}

static bool kw_srv_start(kw_srv *s) {
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int one = 1;
    s->nreq = 0;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s->lfd, 8) != 0 ||
        getsockname(s->lfd, (struct sockaddr *)&sa, &sl) != 0) {
        kt_fail(__FILE__, __LINE__, "no loopback socket");
        return false;
    }
    s->port = ntohs(sa.sin_port);
    return pthread_create(&s->th, NULL, kw_serve, s) == 0;
}

/* Wait for the server to end (it has answered, or waited 5 s for a
   request that never came: call it after the client is gone, whose
   connections' ends then end it); s->req[] stay for the test to read. */
static void kw_srv_join(kw_srv *s) {
    shutdown(s->lfd, SHUT_RDWR); /* no more connections: a server still waiting for one stops */
    pthread_join(s->th, NULL);
    close(s->lfd);
    s->lfd = -1;
}

static void kw_srv_free(kw_srv *s, kw_cap *caps) {
    int i;
    for (i = 0; i < s->nreq; i++) free(s->req[i]);
    for (i = 0; caps && i < s->nresp; i++) kw_cap_free(&caps[i]);
    memset(s, 0, sizeof *s);
}

/* A transport to the replay server: 5 s per request, watches asking for 7 s. */
static bool kw_transport(const kw_srv *s, const char *token_file, kctl_transport *t) {
    kctl_kube_desc d = kctl_kube_desc_init();
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    d.server = url;
    d.token = token_file ? NULL : "s3cr3t-token";
    d.token_file = token_file;
    d.request_timeout_ns = KCTL_SEC(5);
    d.watch_timeout_min_s = d.watch_timeout_max_s = 7;
    return kctl_kube_create(&d, t) == KCTL_OK;
}

/* Serve the captures nn[0..n) (a negative one: the capture without its
   last 5 bytes, the terminating chunk). */
static bool kw_serve_caps(kw_srv *s, kw_cap *caps, const int *nn, int n) {
    int i;
    memset(s, 0, sizeof *s);
    for (i = 0; i < n; i++) {
        if (!kw_cap_load(nn[i] < 0 ? -nn[i] : nn[i], &caps[i])) return false;
        s->resp[i] = caps[i].raw;
        s->rlen[i] = caps[i].len - (nn[i] < 0 ? 5 : 0);
    }
    s->nresp = n;
    return kw_srv_start(s);
}

/* Read a watch to its end: the events as text, and the code it ended with. */
static int kw_drain(kctl_transport *t, kctl_watch *w, char *text, size_t cap, kctl_api_status *st) {
    int rc, guard = 0;
    kctl_event ev;
    text[0] = '\0';
    while ((rc = kctl_transport_watch_next(t, w, KCTL_SEC(3), &ev, st)) == KCTL_OK && guard++ < 100) {
        kw_ev_text(&ev, text, cap);
        kctl_event_clear(&ev);
    }
    return rc;
}

static bool kw_starts(const char *req, const char *line) {
    bool ok = req && !strncmp(req, line, strlen(line));
    if (!ok) kt_fail(__FILE__, __LINE__, "request \"%.*s\" is not \"%s\"", (int)strcspn(req ? req : "", "\r"), req ? req : "", line);
    return ok;
}

/* A watch through libcurl on the captured stream: the request as
   client-go sends it, the events, and the terminating chunk at the
   server's timeoutSeconds is CLOSED (no error); the same stream cut
   before its terminator is IO (broken). */
static void kw_replay_watch(void) {
    kw_srv s;
    kw_cap caps[2];
    kctl_transport t;
    kctl_watch *w = NULL;
    kctl_api_status st;
    kctl_kube_stats ks;
    char text[4096];
    kctl_event ev;
    static const int nn[] = { 35, -35 };
    memset(&st, 0, sizeof st);
    memset(caps, 0, sizeof caps);
    if (!kw_serve_caps(&s, caps, nn, 2)) return;
    KT_CHECK(kw_transport(&s, NULL, &t));
    KT_EQ_INT(kctl_transport_watch_open(&t, &kw_fl, NULL, "16", &w, &st), KCTL_OK);
    KT_EQ_INT(kw_drain(&t, w, text, sizeof text, &st), KCTL_ERR_CLOSED);
    KT_EQ_STR(text, "A:w1@17 M:w1@18 D:w1@19 B:@19 B:@19");
    KT_EQ_INT(kctl_transport_watch_next(&t, w, 0, &ev, NULL), KCTL_ERR_CLOSED); /* and stays so */
    kctl_transport_watch_close(&t, w);
    KT_EQ_INT(kctl_transport_watch_open(&t, &kw_fl, NULL, "16", &w, &st), KCTL_OK);
    KT_EQ_INT(kw_drain(&t, w, text, sizeof text, &st), KCTL_ERR_IO);
    KT_EQ_STR(text, "A:w1@17 M:w1@18 D:w1@19 B:@19 B:@19");
    KT_EQ_INT(st.code, 503);
    kctl_transport_watch_close(&t, w);
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.watches, 2);
    KT_EQ_U64(ks.watch_ends, 1);
    kctl_transport_destroy(&t);
    kw_srv_join(&s);
    KT_EQ_INT(s.nreq, 2);
    kw_srv_free(&s, caps);
    kctl_api_status_clear(&st);
}

/* What the watch asked: exactly client-go's query (the rv, bookmarks, a
   timeoutSeconds from the desc's range), selectors escaped, the bearer
   token; no namespace segment for all namespaces. */
static void kw_replay_watch_requests(void) {
    kw_srv s;
    kw_cap caps[3];
    kctl_transport t;
    kctl_watch *w = NULL;
    kctl_api_status st;
    kctl_list_opts lo;
    kctl_resource all = kw_fl;
    char text[4096];
    kctl_event ev;
    static const int nn[] = { 35, 40, 53 };
    memset(&st, 0, sizeof st);
    memset(caps, 0, sizeof caps);
    memset(&lo, 0, sizeof lo);
    all.ns = "";
    if (!kw_serve_caps(&s, caps, nn, 3)) return;
    KT_CHECK(kw_transport(&s, NULL, &t));
    KT_EQ_INT(kctl_transport_watch_open(&t, &all, NULL, "16", &w, &st), KCTL_OK);
    KT_EQ_INT(kw_drain(&t, w, text, sizeof text, &st), KCTL_ERR_CLOSED);
    kctl_transport_watch_close(&t, w);
    lo.label_selector = "app=demo";
    lo.field_selector = "metadata.name!=x y";
    KT_EQ_INT(kctl_transport_watch_open(&t, &kw_fl, &lo, "19", &w, &st), KCTL_OK);
    KT_EQ_INT(kw_drain(&t, w, text, sizeof text, &st), KCTL_ERR_CLOSED);
    KT_EQ_STR(text, "D:f1@20 A:f1@21");
    kctl_transport_watch_close(&t, w);
    /* too old: HTTP 200, then the in-band 410 and the terminator */
    KT_EQ_INT(kctl_transport_watch_open(&t, &kw_fl, NULL, "7", &w, &st), KCTL_OK);
    KT_EQ_INT(kw_drain(&t, w, text, sizeof text, &st), KCTL_ERR_GONE);
    KT_EQ_STR(text, "");
    KT_EQ_INT(st.code, 410);
    KT_EQ_STR(st.reason, "Expired");
    KT_EQ_STR(st.message, "too old resource version: 7 (27)");
    kctl_api_status_clear(&st);
    KT_EQ_INT(kctl_transport_watch_next(&t, w, 0, &ev, &st), KCTL_ERR_GONE); /* again, with its Status */
    KT_EQ_INT(st.code, 410);
    kctl_transport_watch_close(&t, w);
    kctl_transport_destroy(&t);
    kw_srv_join(&s);
    kw_starts(s.req[0], "GET /apis/wardle.example.com/v1alpha1/flunders?watch=1&resourceVersion=16&allowWatchBookmarks=true&timeoutSeconds=7 HTTP/1.1");
    KT_CHECK(s.req[0] && strstr(s.req[0], "\r\nAuthorization: Bearer s3cr3t-token\r\n") != NULL);
    KT_CHECK(s.req[0] && strstr(s.req[0], "\r\nAccept: application/json\r\n") != NULL);
    KT_CHECK(s.req[0] && strstr(s.req[0], "\r\nUser-Agent: kctl/" KCTL_VERSION_STRING "\r\n") != NULL);
    kw_starts(s.req[1], "GET /apis/wardle.example.com/v1alpha1/namespaces/default/flunders?watch=1&resourceVersion=19&allowWatchBookmarks=true"
                        "&timeoutSeconds=7&labelSelector=app%3Ddemo&fieldSelector=metadata.name%21%3Dx%20y HTTP/1.1");
    kw_starts(s.req[2], "GET /apis/wardle.example.com/v1alpha1/namespaces/default/flunders?watch=1&resourceVersion=7&");
    kw_srv_free(&s, caps);
    kctl_api_status_clear(&st);
}

/* A list page as the server pages it: limit and continue sent, the
   version and token read, items given the list's kind and apiVersion (as
   watched objects have them); an expired continue token is GONE (410,
   Expired). */
static void kw_replay_list(void) {
    kw_srv s;
    kw_cap caps[3];
    kctl_transport t;
    kctl_list_result l;
    kctl_list_opts lo;
    kctl_api_status st;
    char kind[32];
    static const int nn[] = { 14, 15, 17 };
    memset(&st, 0, sizeof st);
    memset(caps, 0, sizeof caps);
    memset(&lo, 0, sizeof lo);
    if (!kw_serve_caps(&s, caps, nn, 3)) return;
    KT_CHECK(kw_transport(&s, NULL, &t));
    lo.limit = 1;
    KT_EQ_INT(kctl_transport_list(&t, &kw_fl, &lo, &l, &st), KCTL_OK);
    KT_EQ_STR(l.resource_version, "4");
    KT_EQ_STR(l.continue_token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NCwic3RhcnQiOiJmMVx1MDAwMCJ9");
    KT_EQ_U64(l.items.count, 1);
    if (l.items.count == 1) {
        KT_EQ_STR(kctl_obj_name(l.items.items[0]), "f1");
        KT_EQ_STR(kctl_obj_resource_version(l.items.items[0]), "2");
        KT_EQ_INT(kctl_obj_get_string(l.items.items[0], "kind", kind, sizeof kind, NULL), KCTL_OK);
        KT_EQ_STR(kind, "Flunder");
        KT_EQ_INT(kctl_obj_get_string(l.items.items[0], "apiVersion", kind, sizeof kind, NULL), KCTL_OK);
        KT_EQ_STR(kind, "wardle.example.com/v1alpha1");
        KT_EQ_STR(kctl_obj_label(l.items.items[0], "app"), "demo");
    }
    lo.continue_token = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NCwic3RhcnQiOiJmMVx1MDAwMCJ9";
    kctl_list_result_free(&l);
    KT_EQ_INT(kctl_transport_list(&t, &kw_fl, &lo, &l, &st), KCTL_OK);
    KT_EQ_U64(l.items.count, 1);
    if (l.items.count == 1) KT_EQ_STR(kctl_obj_name(l.items.items[0]), "f2");
    kctl_list_result_free(&l);
    KT_EQ_INT(kctl_transport_list(&t, &kw_fl, &lo, &l, &st), KCTL_ERR_GONE);
    KT_EQ_U64(l.items.count, 0);
    KT_EQ_STR(l.continue_token, "");
    KT_EQ_INT(st.code, 410);
    KT_EQ_STR(st.reason, "Expired");
    kctl_transport_destroy(&t);
    kw_srv_join(&s);
    kw_starts(s.req[0], "GET /apis/wardle.example.com/v1alpha1/namespaces/default/flunders?limit=1 HTTP/1.1");
    kw_starts(s.req[1], "GET /apis/wardle.example.com/v1alpha1/namespaces/default/flunders?limit=1"
                        "&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NCwic3RhcnQiOiJmMVx1MDAwMCJ9 HTTP/1.1");
    KT_CHECK(s.req[0] && !strstr(s.req[0], "Content-Type")); /* a GET has no body */
    kw_srv_free(&s, caps);
    kctl_api_status_clear(&st);
}

/* Each write as the server takes it: POST to the collection, PUT to the
   object (and /status), PATCH as a merge patch, DELETE with
   DeleteOptions preconditions; each answer or refusal as the server gave
   it: 409 AlreadyExists is EXISTS, 409 Conflict CONFLICT, 422 INVALID_ARG
   with the field at fault, a delete's Status "Success" is gone (*out
   NULL), its 200 with the object (finalizers) is *out. */
static void kw_replay_writes(void) {
    kw_srv s;
    kw_cap caps[8];
    kctl_transport t;
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_delete_opts del;
    kctl_kube_stats ks;
    static const int nn[] = { 19, 18, 21, 30, 31, 42, 44, 41 };
    memset(&st, 0, sizeof st);
    memset(caps, 0, sizeof caps);
    if (!kw_serve_caps(&s, caps, nn, 8)) return;
    KT_CHECK(kw_transport(&s, NULL, &t));
    KT_EQ_INT(kctl_transport_create(&t, &kw_fl, "{\"apiVersion\":\"wardle.example.com/v1alpha1\",\"kind\":\"Flunder\",\"metadata\":{\"name\":\"f1\"}}",
                                    KCTL_NTS, &o, &st), KCTL_ERR_EXISTS);
    KT_CHECK(o == NULL);
    KT_EQ_STR(st.reason, "AlreadyExists");
    /* a document in another namespace than the one given: refused here, nothing sent */
    KT_EQ_INT(kctl_transport_create(&t, &kw_fl, "{\"metadata\":{\"name\":\"x\",\"namespace\":\"other\"}}", KCTL_NTS, &o, &st),
              KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 400);
    KT_EQ_INT(kctl_transport_update(&t, &kw_fl, "{\"metadata\":{\"name\":\"f1\",\"namespace\":\"default\",\"resourceVersion\":\"2\"}}",
                                    KCTL_NTS, &o, &st), KCTL_ERR_CONFLICT);
    KT_EQ_STR(st.reason, "Conflict");
    KT_EQ_STR(st.name, "f1");
    KT_EQ_INT(kctl_transport_create(&t, &kw_fl, "{\"metadata\":{\"name\":\"inv1\"},\"spec\":{\"referenceType\":\"Fischer\"}}", KCTL_NTS,
                                    &o, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    KT_EQ_U64(st.cause_count, 1);
    if (st.cause_count) KT_EQ_STR(st.causes[0].field, "spec.fischerReference");
    KT_EQ_INT(kctl_transport_update_status(&t, &kw_fl, "{\"metadata\":{\"name\":\"f1\",\"resourceVersion\":\"8\"},\"status\":{}}", KCTL_NTS,
                                           &o, &st), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_transport_patch(&t, &kw_fl, "f2", "{\"metadata\":{\"labels\":{\"tier\":\"x\"}},\"spec\":{\"reference\":\"f1\"}}", KCTL_NTS,
                                   0, &o, &st), KCTL_OK);
    KT_CHECK(o != NULL);
    if (o) {
        KT_EQ_STR(kctl_obj_resource_version(o), "13");
        KT_EQ_STR(kctl_obj_label(o, "tier"), "x");
    }
    kctl_obj_unref(o);
    o = NULL;
    memset(&del, 0, sizeof del);
    del.uid = "365a3b17-8031-4bac-86c5-18868d4be347";
    del.resource_version = "7";
    KT_EQ_INT(kctl_transport_remove(&t, &kw_fl, "f3", &del, &o, &st), KCTL_OK);
    KT_CHECK(o == NULL); /* Status Success: gone */
    KT_EQ_INT(kctl_transport_remove(&t, &kw_fl, "fin", NULL, &o, &st), KCTL_OK);
    KT_CHECK(o != NULL); /* held by its finalizer */
    if (o) {
        KT_CHECK(kctl_obj_deletion_timestamp(o) != NULL);
        KT_CHECK(kctl_obj_has_finalizer(o, "example.com/hold"));
    }
    kctl_obj_unref(o);
    o = NULL;
    memset(&del, 0, sizeof del);
    del.resource_version = "1";
    KT_EQ_INT(kctl_transport_remove(&t, &kw_fl, "f3", &del, &o, &st), KCTL_ERR_CONFLICT);
    KT_EQ_STR(st.kind, "Flunder");
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.requests, 8);
    kctl_transport_destroy(&t);
    kw_srv_join(&s);
    KT_EQ_INT(s.nreq, 8);
    kw_starts(s.req[0], "POST /apis/wardle.example.com/v1alpha1/namespaces/default/flunders HTTP/1.1");
    KT_CHECK(s.req[0] && strstr(s.req[0], "\r\nContent-Type: application/json\r\n") != NULL);
    KT_CHECK(s.req[0] && strstr(s.req[0], "\r\n\r\n{\"apiVersion\":\"wardle.example.com/v1alpha1\",\"kind\":\"Flunder\",\"metadata\":{\"name\":\"f1\"}}"));
    kw_starts(s.req[1], "PUT /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/f1 HTTP/1.1");
    kw_starts(s.req[2], "POST /apis/wardle.example.com/v1alpha1/namespaces/default/flunders HTTP/1.1");
    kw_starts(s.req[3], "PUT /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/f1/status HTTP/1.1");
    kw_starts(s.req[4], "PATCH /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/f2 HTTP/1.1");
    KT_CHECK(s.req[4] && strstr(s.req[4], "\r\nContent-Type: application/merge-patch+json\r\n") != NULL);
    kw_starts(s.req[5], "DELETE /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/f3 HTTP/1.1");
    KT_CHECK(s.req[5] && strstr(s.req[5], "\r\n\r\n{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":"
                                          "{\"uid\":\"365a3b17-8031-4bac-86c5-18868d4be347\",\"resourceVersion\":\"7\"}}"));
    kw_starts(s.req[6], "DELETE /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/fin HTTP/1.1");
    KT_CHECK(s.req[6] && !strstr(s.req[6], "Content-Type") && !strstr(s.req[6], "Content-Length")); /* no options: no body */
    KT_CHECK(s.req[7] && strstr(s.req[7], "\r\n\r\n{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":{\"resourceVersion\":\"1\"}}"));
    kw_srv_free(&s, caps);
    kctl_api_status_clear(&st);
}

/* Paths: the core group under /api/v1, others under /apis/<g>/<v>; a
   namespace segment only when there is one (cluster-scoped objects,
   all namespaces); segments escaped; names no object can have (".",
   "..": libcurl would fold them into the collection) refused here,
   nothing sent. */
static void kw_paths(void) {
    static const struct { kctl_resource res; const char *name, *sub, *want; } cases[] = {
        { { "", "v1", "configmaps", "kube-system" }, "x", NULL, "/api/v1/namespaces/kube-system/configmaps/x" },
        { { NULL, NULL, "namespaces", NULL }, "default", NULL, "/api/v1/namespaces/default" },
        { { "", "v1", "nodes", "" }, NULL, NULL, "/api/v1/nodes" },
        { { "coordination.k8s.io", "v1", "leases", "edge" }, "lead er", NULL, "/apis/coordination.k8s.io/v1/namespaces/edge/leases/lead%20er" },
        { { "wardle.example.com", "v1alpha1", "fischers", NULL }, "a:b", "status", "/apis/wardle.example.com/v1alpha1/fischers/a%3Ab/status" },
    };
    size_t i;
    kctl_allocator a;
    memset(&a, 0, sizeof a);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kctl__hbuf b;
        kctl__hbuf_init(&b, &a, 4096);
        KT_EQ_INT(kctl__kube_check_res(&cases[i].res, NULL), KCTL_OK);
        kctl__kube_path(&cases[i].res, cases[i].res.ns, cases[i].name, cases[i].sub, &b);
        KT_EQ_STR(b.p, cases[i].want);
        kctl__hbuf_free(&b);
    }
    {
        static const kctl_resource bad[] = {
            { "g", NULL, "r", NULL }, { "", "v1", "", NULL }, { "", "v1", "a/b", NULL }, { "", "v1", "r", "n/s" },
            { "", "v1", "r", ".." }, { "g/h", "v1", "r", NULL }, { "", "v%31", "r", NULL },
        };
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) KT_EQ_INT(kctl__kube_check_res(&bad[i], NULL), KCTL_ERR_INVALID_ARG);
    }
    {
        kw_srv s;
        kctl_transport t;
        kctl_obj *o = NULL;
        kctl_kube_stats ks;
        kctl_api_status st;
        static const char *names[] = { ".", "..", "a/b", "%2e", "" };
        memset(&s, 0, sizeof s);
        memset(&st, 0, sizeof st);
        if (!kw_srv_start(&s)) return; /* answers nothing */
        KT_CHECK(kw_transport(&s, NULL, &t));
        for (i = 0; i < sizeof names / sizeof names[0]; i++) {
            KT_EQ_INT(kctl_transport_get(&t, &kw_fl, names[i], &o, &st), names[i][0] ? KCTL_ERR_NOT_FOUND : KCTL_ERR_INVALID_ARG);
            if (names[i][0]) KT_EQ_INT(kctl_transport_remove(&t, &kw_fl, names[i], NULL, &o, &st), KCTL_ERR_NOT_FOUND);
            if (names[i][0]) KT_EQ_INT(kctl_transport_patch(&t, &kw_fl, names[i], "{}", KCTL_NTS, 0, &o, &st), KCTL_ERR_NOT_FOUND);
        }
        KT_EQ_INT(kctl_transport_update(&t, &kw_fl, "{\"metadata\":{\"name\":\"..\"}}", KCTL_NTS, &o, &st), KCTL_ERR_NOT_FOUND);
        KT_EQ_INT(kctl_transport_update(&t, &kw_fl, "{\"metadata\":{}}", KCTL_NTS, &o, &st), KCTL_ERR_INVALID_ARG);
        KT_EQ_INT(kctl_transport_update(&t, &kw_fl, "[1]", KCTL_NTS, &o, &st), KCTL_ERR_INVALID_ARG);
        kctl_kube_read_stats(&t, &ks);
        KT_EQ_U64(ks.requests, 0);
        kctl_transport_destroy(&t);
        kw_srv_join(&s);
        kw_srv_free(&s, NULL);
        kctl_api_status_clear(&st);
    }
}

/* A reply not captured: status line, Retry-After (-1: none) and a Status body. */
static char *kw_reply(int code, const char *phrase, const char *reason, int retry_after) {
    char body[512], *r = (char *)malloc(1024);
    if (!r) return NULL;
    snprintf(body, sizeof body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"%s\","
             "\"reason\":\"%s\",\"details\":{%s},\"code\":%d}\n", phrase, reason, retry_after > 0 ? "\"retryAfterSeconds\":1" : "", code);
    if (retry_after >= 0)
        snprintf(r, 1024, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nRetry-After: %d\r\nContent-Length: %zu\r\n\r\n%s", code, phrase,
                 retry_after, strlen(body), body);
    else
        snprintf(r, 1024, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", code, phrase, strlen(body), body);
    return r;
}

/* 429 and 503 with Retry-After: waited out and sent again, once, for a
   request that is idempotent (a read, a watch, a write with a
   resourceVersion or uid precondition); a POST or a write without a
   precondition is never sent twice (AGAIN, the Retry-After in the
   Status); a Retry-After past the request timeout is not waited (AGAIN);
   none, no retry. Retry-After: 0 so nothing here sleeps. */
static void kw_retry_after(void) {
    static const struct { const char *what; int code; int ra; int want; int sent; } cases[] = {
        { "get", 429, 0, KCTL_OK, 2 },
        { "get", 503, 0, KCTL_OK, 2 },
        { "get", 503, -1, KCTL_ERR_AGAIN, 1 },
        { "get", 429, 3600, KCTL_ERR_AGAIN, 1 },       /* past the 5 s request timeout */
        { "get2", 429, 0, KCTL_ERR_AGAIN, 2 },         /* a second 429: once only */
        { "create", 429, 0, KCTL_ERR_AGAIN, 1 },
        { "update", 503, 0, KCTL_ERR_AGAIN, 1 },       /* no resourceVersion */
        { "update_rv", 503, 0, KCTL_OK, 2 },
        { "patch", 429, 0, KCTL_ERR_AGAIN, 1 },
        { "patch_rv", 429, 0, KCTL_OK, 2 },
        { "delete", 429, 0, KCTL_ERR_AGAIN, 1 },
        { "delete_uid", 429, 0, KCTL_OK, 2 },
        { "list", 429, 0, KCTL_OK, 2 },
        { "watch", 429, 0, KCTL_OK, 2 },
        { "watch", 429, 3600, KCTL_ERR_AGAIN, 1 },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kw_srv s;
        kw_cap ok;
        kctl_transport t;
        kctl_api_status st;
        kctl_kube_stats ks;
        kctl_obj *o = NULL;
        kctl_delete_opts del;
        kctl_list_result l;
        kctl_watch *w = NULL;
        const char *what = cases[i].what;
        char *reply = kw_reply(cases[i].code, cases[i].code == 429 ? "Too Many Requests" : "Service Unavailable",
                               cases[i].code == 429 ? "TooManyRequests" : "ServiceUnavailable", cases[i].ra);
        int rc = KCTL_ERR_INVALID_ARG;
        memset(&s, 0, sizeof s);
        memset(&st, 0, sizeof st);
        memset(&del, 0, sizeof del);
        if (!reply || !kw_cap_load(!strncmp(what, "delete", 6) ? 42 : !strcmp(what, "list") ? 14 : !strcmp(what, "watch") ? 51 : 11, &ok)) {
            free(reply);
            continue;
        }
        s.resp[0] = reply;
        s.rlen[0] = strlen(reply);
        s.resp[1] = !strcmp(what, "get2") ? reply : ok.raw;
        s.rlen[1] = !strcmp(what, "get2") ? strlen(reply) : ok.len;
        s.nresp = 2;
        if (!kw_srv_start(&s)) break;
        KT_CHECK(kw_transport(&s, NULL, &t));
        if (!strncmp(what, "get", 3)) rc = kctl_transport_get(&t, &kw_fl, "f1", &o, &st);
        else if (!strcmp(what, "create")) rc = kctl_transport_create(&t, &kw_fl, "{\"metadata\":{\"name\":\"f1\"}}", KCTL_NTS, &o, &st);
        else if (!strcmp(what, "update")) rc = kctl_transport_update(&t, &kw_fl, "{\"metadata\":{\"name\":\"f1\"}}", KCTL_NTS, &o, &st);
        else if (!strcmp(what, "update_rv"))
            rc = kctl_transport_update(&t, &kw_fl, "{\"metadata\":{\"name\":\"f1\",\"resourceVersion\":\"2\"}}", KCTL_NTS, &o, &st);
        else if (!strcmp(what, "patch")) rc = kctl_transport_patch(&t, &kw_fl, "f1", "{\"spec\":{}}", KCTL_NTS, 0, &o, &st);
        else if (!strcmp(what, "patch_rv"))
            rc = kctl_transport_patch(&t, &kw_fl, "f1", "{\"metadata\":{\"resourceVersion\":\"2\"}}", KCTL_NTS, 0, &o, &st);
        else if (!strcmp(what, "delete")) rc = kctl_transport_remove(&t, &kw_fl, "f3", NULL, &o, &st);
        else if (!strcmp(what, "delete_uid")) {
            del.uid = "365a3b17-8031-4bac-86c5-18868d4be347";
            rc = kctl_transport_remove(&t, &kw_fl, "f3", &del, &o, &st);
        } else if (!strcmp(what, "list")) {
            rc = kctl_transport_list(&t, &kw_fl, NULL, &l, &st);
            kctl_list_result_free(&l);
        } else if (!strcmp(what, "watch")) {
            rc = kctl_transport_watch_open(&t, &kw_fl, NULL, "1", &w, &st);
            if (w) kctl_transport_watch_close(&t, w);
        }
        if (rc != cases[i].want) kt_fail(__FILE__, __LINE__, "case %zu (%s %d, Retry-After %d): %d, not %d", i, what, cases[i].code, cases[i].ra,
                                         rc, cases[i].want);
        if (rc == KCTL_ERR_AGAIN) {
            KT_EQ_INT(st.code, cases[i].code);
            if (cases[i].ra > 0) KT_EQ_U64(st.retry_after_s, 1); /* the Status's retryAfterSeconds wins over the header */
        }
        kctl_obj_unref(o);
        kctl_kube_read_stats(&t, &ks);
        KT_EQ_U64(ks.waits, cases[i].sent - 1);
        KT_EQ_U64(ks.throttled, rc == KCTL_ERR_AGAIN ? 1 : 0);
        kctl_transport_destroy(&t);
        kw_srv_join(&s);
        if (s.nreq != cases[i].sent) kt_fail(__FILE__, __LINE__, "case %zu (%s): %d requests, not %d", i, what, s.nreq, cases[i].sent);
        kw_srv_free(&s, NULL);
        kw_cap_free(&ok);
        free(reply);
        kctl_api_status_clear(&st);
    }
}

/* A token file: read at create; a 401 reads it again and the request
   goes once more when the token changed (the kubelet rotated it while the
   request was out), not when it did not; between requests it is looked
   at no more than once a second, and read when it changed. The token is
   in no Status. */
static void kw_token_file(void) {
    char dir[] = "/tmp/kctl-kw-XXXXXX", path[64];
    kw_srv s;
    kw_cap ok;
    kctl_transport t;
    kctl_api_status st;
    kctl_kube_stats ks;
    kctl_obj *o = NULL;
    kctl__kube *k;
    char *r401 = kw_reply(401, "Unauthorized", "Unauthorized", -1);
    FILE *f;
    uint64_t at;
    memset(&s, 0, sizeof s);
    memset(&st, 0, sizeof st);
    if (!r401 || !mkdtemp(dir) || !kw_cap_load(11, &ok)) {
        free(r401);
        kt_fail(__FILE__, __LINE__, "setup");
        return;
    }
    snprintf(path, sizeof path, "%s/token", dir);
    if ((f = fopen(path, "w")) != NULL) {
        fputs("tokA\n", f);
        fclose(f);
    }
    s.resp[0] = r401;
    s.rlen[0] = strlen(r401);
    s.resp[1] = ok.raw;
    s.rlen[1] = ok.len;
    s.resp[2] = r401;
    s.rlen[2] = strlen(r401);
    s.nresp = 3;
    s.rewrite_path = path;
    s.rewrite_data = "tokenBB\n";
    if (!kw_srv_start(&s)) return;
    KT_CHECK(kw_transport(&s, path, &t));
    k = (kctl__kube *)t.self;
    KT_EQ_INT(kctl_transport_get(&t, &kw_fl, "f1", &o, &st), KCTL_OK);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_get(&t, &kw_fl, "f1", &o, &st), KCTL_ERR_UNAUTHORIZED); /* the same token again: no second try */
    KT_EQ_INT(st.code, 401);
    KT_CHECK(!strstr(st.message, "tok"));
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.auth_retries, 1);
    KT_EQ_U64(ks.token_reads, 2);
    kw_srv_join(&s);
    KT_EQ_INT(s.nreq, 3);
    KT_CHECK(s.req[0] && strstr(s.req[0], "\r\nAuthorization: Bearer tokA\r\n"));
    KT_CHECK(s.req[1] && strstr(s.req[1], "\r\nAuthorization: Bearer tokenBB\r\n"));
    KT_CHECK(s.req[2] && strstr(s.req[2], "\r\nAuthorization: Bearer tokenBB\r\n"));
    /* rotation between requests: looked at once a second */
    if ((f = fopen(path, "w")) != NULL) {
        fputs("tokCCC\n", f);
        fclose(f);
    }
    at = k->tf_checked;
    KT_CHECK(!kctl__kube_token_check(k, at + 999, false));
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.token_reads, 2);
    KT_CHECK(kctl__kube_token_check(k, at + 1000, false));
    KT_EQ_STR(k->http.auth, "Authorization: Bearer tokCCC");
    KT_CHECK(!kctl__kube_token_check(k, at + 2000, false)); /* unchanged: not read */
    kctl_kube_read_stats(&t, &ks);
    KT_EQ_U64(ks.token_reads, 3);
    if ((f = fopen(path, "w")) != NULL) fclose(f); /* emptied: the token held stays */
    KT_CHECK(!kctl__kube_token_check(k, at + 3000, false));
    KT_EQ_STR(k->http.auth, "Authorization: Bearer tokCCC");
    kctl_transport_destroy(&t);
    kw_srv_free(&s, NULL);
    kw_cap_free(&ok);
    free(r401);
    remove(path);
    rmdir(dir);
    kctl_api_status_clear(&st);
}

/* What kctl_kube_create refuses. */
static void kw_create_args(void) {
    kctl_kube_desc d = kctl_kube_desc_init();
    kctl_transport t;
    KT_EQ_INT(kctl_kube_create(NULL, &t), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_INVALID_ARG); /* no server */
    d.server = "https://a:6443,https://b:6443";
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_INVALID_ARG);
    d.server = "ftp://a";
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_INVALID_ARG);
    d.server = "https://127.0.0.1:6443/";
    d.token = "two words";
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_INVALID_ARG);
    d.token = "a\r\nX-Evil: 1";
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_INVALID_ARG);
    d.token = NULL;
    d.token_file = "/nonexistent/kctl/token";
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_IO);
    KT_CHECK(t.vt == NULL);
    {
        char dir[] = "/tmp/kctl-kw-XXXXXX", path[64];
        FILE *f;
        int i;
        if (mkdtemp(dir)) {
            snprintf(path, sizeof path, "%s/token", dir);
            if ((f = fopen(path, "w")) != NULL) { /* a token past 16 KiB: refused, not cut */
                for (i = 0; i < 16385; i++) fputc('a', f);
                fclose(f);
            }
            d.token_file = path;
            KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_INVALID_ARG);
            if ((f = fopen(path, "w")) != NULL) { /* 16 KiB exactly, and a newline: taken */
                for (i = 0; i < 16384; i++) fputc('a', f);
                fputc('\n', f);
                fclose(f);
            }
            KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_OK);
            kctl_transport_destroy(&t);
            if ((f = fopen(path, "w")) != NULL) fclose(f); /* empty */
            KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_ERR_INVALID_ARG);
            remove(path);
            rmdir(dir);
        }
    }
    d.token_file = NULL;
    d.token = " abc.def \n";
    KT_EQ_INT(kctl_kube_create(&d, &t), KCTL_OK);
    KT_EQ_STR(((kctl__kube *)t.self)->http.auth, "Authorization: Bearer abc.def");
    KT_EQ_STR(((kctl__kube *)t.self)->http.ep[0], "https://127.0.0.1:6443");
    kctl_transport_destroy(&t);
}

/* A server that is not there: IO with the reason, fast. */
static void kw_no_server(void) {
    kw_srv s;
    kctl_transport t;
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_watch *w = NULL;
    int port;
    memset(&s, 0, sizeof s);
    memset(&st, 0, sizeof st);
    if (!kw_srv_start(&s)) return; /* it answers nothing */
    port = s.port;
    kw_srv_join(&s); /* nobody listens there now */
    s.port = port;
    KT_CHECK(kw_transport(&s, NULL, &t));
    KT_EQ_INT(kctl_transport_get(&t, &kw_fl, "f1", &o, &st), KCTL_ERR_IO);
    KT_EQ_INT(st.code, 503);
    KT_CHECK(strstr(st.message, "did not answer") != NULL);
    KT_CHECK(!strstr(st.message, "s3cr3t"));
    KT_EQ_INT(kctl_transport_watch_open(&t, &kw_fl, NULL, "1", &w, &st), KCTL_ERR_IO);
    KT_CHECK(w == NULL);
    kctl_transport_destroy(&t);
    kctl_api_status_clear(&st);
}

#else
static void kw_no_curl(void) {
    KT_KUBE_REQUIRE_CURL();
}
#endif /* KT_HAVE_CURL */

void kt_suite_kube_wire(void) {
#ifdef KT_HAVE_CURL
    KT_RUN(kw_watch_captures);
    KT_RUN(kw_deleted_on_unmatch);
    KT_RUN(kw_watch_line_edges);
    KT_RUN(kw_status_bodies);
    KT_RUN(kw_status_codes);
    KT_RUN(kw_replay_watch);
    KT_RUN(kw_replay_watch_requests);
    KT_RUN(kw_replay_list);
    KT_RUN(kw_replay_writes);
    KT_RUN(kw_paths);
    KT_RUN(kw_retry_after);
    KT_RUN(kw_token_file);
    KT_RUN(kw_create_args);
    KT_RUN(kw_no_server);
#else
    KT_RUN(kw_no_curl);
#endif
}
