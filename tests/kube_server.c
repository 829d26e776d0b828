/* kube_server.c - a Kubernetes API server for tests, over the memstore
   (see kube_server.h). HTTP/1.1 by hand on POSIX sockets: one thread
   accepts, one serves each connection (requests in turn, keep-alive; a
   watch holds its connection until it ends). The objects and their rules
   are the memstore's; this file is the HTTP and the wire shapes, taken
   from tests/wire/k8s-apiserver-captures.md (#NN below names a capture). */
#include "kube_server.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <signal.h>
#ifdef KT_HAVE_OPENSSL
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#define KKS_HEAD_MAX (64u * 1024u)              /* request line and headers */
#define KKS_SLICE_NS (50u * 1000u * 1000u)      /* a watch looks at its flags this often */
#define KKS_CONN_MAX 512u                       /* connections served at once (a thread each) */
#define KKS_REPLAY_CHUNK 2048u                  /* a replay is packed in chunks of 0x800 bytes (#36) */

const kt_kube_resource kt_kube_default_resources[] = {
    { "", "v1", "configmaps", "configmap", "ConfigMap", "cm", true, false },
    { "", "v1", "namespaces", "namespace", "Namespace", "ns", false, true },
    { "coordination.k8s.io", "v1", "leases", "lease", "Lease", NULL, true, false },
    { "edge.kctl.io", "v1", "deviceconfigs", "deviceconfig", "DeviceConfig", "dc", true, true },
};
const size_t kt_kube_default_resource_count = sizeof kt_kube_default_resources / sizeof kt_kube_default_resources[0];

/* ------------------------------------------------------------- buffers */
typedef struct kks_buf {
    char *p;
    size_t len, cap;
    bool oom;
} kks_buf;

static void kks_reserve(kks_buf *b, size_t more) {
    size_t cap;
    char *p;
    if (b->oom || b->len + more + 1 <= b->cap) return;
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1) cap *= 2;
    if (!(p = (char *)realloc(b->p, cap))) {
        b->oom = true;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static void kks_put(kks_buf *b, const char *s, size_t n) {
    kks_reserve(b, n);
    if (b->oom) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void kks_puts(kks_buf *b, const char *s) { kks_put(b, s, strlen(s)); }

static void kks_printf(kks_buf *b, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    kks_reserve(b, (size_t)n);
    if (b->oom) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* s as a JSON string, quotes included. */
static void kks_jstr(kks_buf *b, const char *s) {
    kctl_jw w;
    const char *t;
    size_t n;
    kctl_jw_init_growable(&w, NULL);
    kctl_jw_string(&w, s);
    if (kctl_jw_finish(&w, &t, &n) == KCTL_OK) kks_put(b, t, n);
    else b->oom = true;
    kctl_jw_free(&w);
}

static void kks_free(kks_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

static char *kks_strdup(const char *s) {
    size_t n = strlen(s ? s : "");
    char *p = (char *)malloc(n + 1);
    if (p) memcpy(p, s ? s : "", n + 1);
    return p;
}

/* -------------------------------------------------------------- server */
typedef struct kks_res {
    char *group, *version, *resource, *singular, *kind, *short_names;
    bool namespaced, status;
    char api_version[256];
} kks_res;

typedef struct kks_conn {
    struct kks_conn *next;
    kt_kube_server *s;
    int fd;
    pthread_t th;
    bool done;
    /* the request being served */
    void *ssl;      /* the connection's SSL (https), or NULL */
    kks_buf in;     /* bytes read, not yet consumed */
    kks_buf body;
    char method[16];
    char target[8192];
    char ctype[128];
    bool close_after;
    uint32_t drop_gen; /* the server's at accept: a restart or stop since drops it */
} kks_conn;

struct kt_kube_server {
    kks_res *res;
    size_t nres;
    kctl_memstore *ms;
    int lfd, wake[2];
    uint16_t port;
    char url[64];
    pthread_t acceptor;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kks_conn *conns;
    bool stopping, stalled;
    uint32_t break_gen, end_gen, drop_gen;
    uint64_t continue_floor; /* tokens of lists at or before this version are expired (0: none) */
    uint32_t throttle_n, throttle_retry;
    int throttle_code;
    kt_kube_server_counters ctr;
    uint64_t bookmark_ns, watch_max_ns;
    size_t max_req;
    uint64_t audit_seq, audit_base;
    void *ssl_ctx;            /* https: the SSL_CTX, or NULL */
    pthread_mutex_t clock_mu; /* the memstore's clock: monotonic + skew (bookmark_now moves it on) */
    uint64_t clock_skew;
};

static uint64_t kks_store_clock(void *user_data) {
    kt_kube_server *s = (kt_kube_server *)user_data;
    struct timespec ts;
    uint64_t skew;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&s->clock_mu);
    skew = s->clock_skew;
    pthread_mutex_unlock(&s->clock_mu);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + skew;
}

/* ---------------------------------------------------------- HTTP output */
static const char *kks_reason(int code) {
    switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
    }
}

static bool kks_send(kks_conn *c, const char *p, size_t n) {
#ifdef KT_HAVE_OPENSSL
    if (c->ssl) {
        while (n) {
            int k = SSL_write((SSL *)c->ssl, p, n > 65536 ? 65536 : (int)n);
            if (k <= 0) {
                ERR_clear_error();
                return false;
            }
            p += k;
            n -= (size_t)k;
        }
        return true;
    }
#endif
    while (n) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* The header block of every answer, as the captured server wrote it. */
static void kks_head(kks_conn *c, kks_buf *h, int code, const char *ctype, const char *extra) {
    char date[64];
    time_t t = time(NULL);
    struct tm tm;
    uint64_t a;
    static const char *const wd[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
    static const char *const mo[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    gmtime_r(&t, &tm);
    snprintf(date, sizeof date, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday], tm.tm_mday, mo[tm.tm_mon], tm.tm_year + 1900,
             tm.tm_hour, tm.tm_min, tm.tm_sec);
    pthread_mutex_lock(&c->s->mu);
    a = ++c->s->audit_seq;
    pthread_mutex_unlock(&c->s->mu);
    kks_printf(h, "HTTP/1.1 %d %s\r\nAudit-Id: %08llx-%04llx-4%03llx-8000-%012llx\r\nCache-Control: no-cache, private\r\n", code,
               kks_reason(code), (unsigned long long)(c->s->audit_base & 0xffffffffu),
               (unsigned long long)((c->s->audit_base >> 32) & 0xffff), (unsigned long long)(a >> 48) & 0xfff,
               (unsigned long long)a & 0xffffffffffffull);
    if (ctype) kks_printf(h, "Content-Type: %s\r\n", ctype);
    kks_printf(h, "Date: %s\r\n", date);
    if (extra) kks_puts(h, extra);
    if (c->close_after) kks_puts(h, "Connection: close\r\n");
}

static bool kks_respond(kks_conn *c, int code, const char *ctype, const char *body, size_t len, const char *extra) {
    kks_buf h = { 0 };
    bool ok;
    kks_head(c, &h, code, ctype, extra);
    kks_printf(&h, "Content-Length: %zu\r\n\r\n", len);
    kks_put(&h, body, len);
    ok = !h.oom && kks_send(c, h.p, h.len);
    kks_free(&h);
    return ok;
}

/* A JSON answer: the document and the newline the server adds. */
static bool kks_respond_json(kks_conn *c, int code, kks_buf *doc, const char *extra) {
    kks_put(doc, "\n", 1);
    if (doc->oom) return kks_respond(c, 500, "text/plain; charset=utf-8", "out of memory", 13, NULL);
    return kks_respond(c, code, "application/json", doc->p, doc->len, extra);
}

static void kks_status_doc(kks_buf *b, const kctl_api_status *st) {
    kctl_jw w;
    const char *t;
    size_t n;
    kctl_jw_init_growable(&w, NULL);
    kctl_api_status_write(st, &w);
    if (kctl_jw_finish(&w, &t, &n) == KCTL_OK) kks_put(b, t, n);
    else b->oom = true;
    kctl_jw_free(&w);
}

/* A refusal: st's code (500 when the store filled none) and its Status. */
static bool kks_respond_status(kks_conn *c, const kctl_api_status *st, const char *extra) {
    kks_buf b = { 0 };
    kctl_api_status tmp;
    bool ok;
    if (!st->code) {
        memset(&tmp, 0, sizeof tmp);
        kctl_api_status_set(&tmp, 500, "InternalError", "an error on the server has prevented the request from succeeding", NULL,
                            NULL, NULL, NULL, 0);
        kks_status_doc(&b, &tmp);
        kctl_api_status_clear(&tmp);
        ok = kks_respond_json(c, 500, &b, extra);
    } else {
        kks_status_doc(&b, st);
        ok = kks_respond_json(c, st->code, &b, extra);
    }
    kks_free(&b);
    return ok;
}

static bool kks_fail(kks_conn *c, int code, const char *reason, const char *message) {
    kctl_api_status st;
    bool ok;
    memset(&st, 0, sizeof st);
    kctl_api_status_set(&st, code, reason, message, NULL, NULL, NULL, NULL, 0);
    ok = kks_respond_status(c, &st, NULL);
    kctl_api_status_clear(&st);
    return ok;
}

/* An unknown path: #30's body, details {} and all. */
static bool kks_not_found_path(kks_conn *c) {
    static const char body[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the server "
                               "could not find the requested resource\",\"reason\":\"NotFound\",\"details\":{},\"code\":404}\n";
    return kks_respond(c, 404, "application/json", body, sizeof body - 1, NULL);
}

/* ------------------------------------------------------------ requests */
static int kks_hex(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Percent-decode s[0..n) into out[0..cap); plus: '+' is a space (queries).
   false when malformed, NUL inside, or too long. */
static bool kks_unescape(const char *s, size_t n, char *out, size_t cap, bool plus) {
    size_t i, o = 0;
    for (i = 0; i < n; i++) {
        int ch = (unsigned char)s[i];
        if (ch == '%') {
            int h, l;
            if (i + 2 >= n) return false;
            h = kks_hex(s[i + 1]);
            l = kks_hex(s[i + 2]);
            if (h < 0 || l < 0) return false;
            ch = h * 16 + l;
            i += 2;
        } else if (ch == '+' && plus) {
            ch = ' ';
        }
        if (!ch || o + 1 >= cap) return false;
        out[o++] = (char)ch;
    }
    out[o] = 0;
    return true;
}

#define KKS_QMAX 16
typedef struct kks_query {
    size_t n;
    char key[KKS_QMAX][64];
    char *val[KKS_QMAX];
    char store[8192];
} kks_query;

static const char *kks_q(const kks_query *q, const char *key) {
    size_t i;
    const char *v = NULL;
    for (i = 0; i < q->n; i++)
        if (strcmp(q->key[i], key) == 0) v = q->val[i];
    return v;
}

/* Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False. */
static int kks_bool(const char *v, bool *out) {
    static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" };
    static const char *const f[] = { "0", "f", "F", "FALSE", "false", "False" };
    size_t i;
    for (i = 0; i < 6; i++) {
        if (strcmp(v, t[i]) == 0) { *out = true; return 0; }
        if (strcmp(v, f[i]) == 0) { *out = false; return 0; }
    }
    return -1;
}

static bool kks_uint(const char *v, uint64_t *out) {
    uint64_t x = 0;
    if (!*v) return false;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || x > (UINT64_MAX - 9) / 10) return false;
        x = x * 10 + (uint64_t)(*v - '0');
    }
    *out = x;
    return true;
}

static bool kks_parse_query(const char *s, kks_query *q) {
    size_t used = 0;
    q->n = 0;
    while (*s) {
        const char *amp = strchr(s, '&'), *eq;
        size_t n = amp ? (size_t)(amp - s) : strlen(s), kn;
        eq = (const char *)memchr(s, '=', n);
        kn = eq ? (size_t)(eq - s) : n;
        if (n) {
            if (q->n == KKS_QMAX) return false;
            if (!kks_unescape(s, kn, q->key[q->n], sizeof q->key[q->n], true)) return false;
            q->val[q->n] = q->store + used;
            if (!kks_unescape(eq ? eq + 1 : s + n, eq ? n - kn - 1 : 0, q->store + used, sizeof q->store - used, true)) return false;
            used += strlen(q->store + used) + 1;
            q->n++;
        }
        s += n + (amp ? 1 : 0);
    }
    return true;
}

/* ------------------------------------------------------------ the reading */
/* Read more into c->in; false at the end of the connection. */
static bool kks_fill(kks_conn *c) {
    ssize_t k;
    kks_reserve(&c->in, 16384);
    if (c->in.oom) return false;
#ifdef KT_HAVE_OPENSSL
    if (c->ssl) {
        size_t room = c->in.cap - c->in.len - 1;
        int r = SSL_read((SSL *)c->ssl, c->in.p + c->in.len, room > 65536 ? 65536 : (int)room);
        if (r <= 0) {
            ERR_clear_error();
            return false;
        }
        c->in.len += (size_t)r;
        c->in.p[c->in.len] = 0;
        return true;
    }
#endif
    do k = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len - 1, 0);
    while (k < 0 && errno == EINTR);
    if (k <= 0) return false;
    c->in.len += (size_t)k;
    c->in.p[c->in.len] = 0;
    return true;
}

static void kks_consume(kks_conn *c, size_t n) {
    memmove(c->in.p, c->in.p + n, c->in.len - n);
    c->in.len -= n;
    if (c->in.p) c->in.p[c->in.len] = 0;
}

static char *kks_find_crlfcrlf(kks_buf *b) {
    size_t i;
    for (i = 0; i + 3 < b->len; i++)
        if (b->p[i] == '\r' && b->p[i + 1] == '\n' && b->p[i + 2] == '\r' && b->p[i + 3] == '\n') return b->p + i;
    return NULL;
}

static bool kks_ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        int x = *a, y = *b;
        if (x >= 'A' && x <= 'Z') x += 32;
        if (y >= 'A' && y <= 'Z') y += 32;
        if (x != y) return false;
    }
    return *a == *b;
}

/* The outcome of reading one request. */
enum { KKS_REQ_OK, KKS_REQ_EOF, KKS_REQ_BAD, KKS_REQ_TOO_LARGE };

/* Read one request (head and body) into c. */
static int kks_read_request(kks_conn *c, const char **why) {
    kt_kube_server *s = c->s;
    char *end, *line, *next;
    size_t head_len, clen = 0;
    bool have_clen = false, chunked = false, expect = false, http10 = false;
    *why = "malformed request";
    c->body.len = 0;
    c->ctype[0] = 0;
    c->close_after = false;
    while (!(end = kks_find_crlfcrlf(&c->in))) {
        if (c->in.len > KKS_HEAD_MAX || c->in.len > s->max_req) {
            *why = "request header too large";
            return KKS_REQ_TOO_LARGE;
        }
        if (!kks_fill(c)) return c->in.len ? KKS_REQ_BAD : KKS_REQ_EOF;
    }
    head_len = (size_t)(end - c->in.p) + 4;
    if (head_len > KKS_HEAD_MAX || head_len > s->max_req) {
        *why = "request header too large";
        return KKS_REQ_TOO_LARGE;
    }
    *end = 0;
    /* the request line: METHOD SP target SP HTTP/1.x */
    line = c->in.p;
    next = strstr(line, "\r\n");
    if (next) *next = 0;
    {
        char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        size_t ml, tl;
        if (!sp1 || !sp2 || strchr(sp2 + 1, ' ')) return KKS_REQ_BAD;
        ml = (size_t)(sp1 - line);
        tl = (size_t)(sp2 - sp1 - 1);
        if (!ml || ml >= sizeof c->method || !tl || tl >= sizeof c->target || sp1[1] != '/') {
            *why = tl >= sizeof c->target ? "request URI too long" : "malformed request line";
            return KKS_REQ_BAD;
        }
        if (strcmp(sp2 + 1, "HTTP/1.1") == 0) http10 = false;
        else if (strcmp(sp2 + 1, "HTTP/1.0") == 0) http10 = true;
        else { *why = "unsupported HTTP version"; return KKS_REQ_BAD; }
        memcpy(c->method, line, ml);
        c->method[ml] = 0;
        memcpy(c->target, sp1 + 1, tl);
        c->target[tl] = 0;
        for (ml = 0; c->method[ml]; ml++)
            if (c->method[ml] < 'A' || c->method[ml] > 'Z') return KKS_REQ_BAD;
        for (tl = 0; c->target[tl]; tl++)
            if ((unsigned char)c->target[tl] <= ' ' || (unsigned char)c->target[tl] >= 0x7f) return KKS_REQ_BAD;
    }
    c->close_after = http10;
    /* headers */
    while (next && next + 2 < end) {
        char *h = next + 2, *colon, *v, *ve;
        next = strstr(h, "\r\n");
        if (next) *next = 0;
        if (!(colon = strchr(h, ':')) || colon == h) { *why = "malformed header"; return KKS_REQ_BAD; }
        *colon = 0;
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++) {}
        for (ve = v + strlen(v); ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--) {}
        *ve = 0;
        if (kks_ieq(h, "Content-Length")) {
            uint64_t x;
            if (!kks_uint(v, &x) || (have_clen && x != clen)) { *why = "bad Content-Length"; return KKS_REQ_BAD; }
            if (x > s->max_req) { *why = "request body too large"; return KKS_REQ_TOO_LARGE; }
            clen = (size_t)x;
            have_clen = true;
        } else if (kks_ieq(h, "Transfer-Encoding")) {
            if (!kks_ieq(v, "chunked")) { *why = "unsupported Transfer-Encoding"; return KKS_REQ_BAD; }
            chunked = true;
        } else if (kks_ieq(h, "Connection")) {
            if (kks_ieq(v, "close")) c->close_after = true;
            else if (kks_ieq(v, "keep-alive")) c->close_after = false;
        } else if (kks_ieq(h, "Expect")) {
            if (kks_ieq(v, "100-continue")) expect = true;
        } else if (kks_ieq(h, "Content-Type")) {
            snprintf(c->ctype, sizeof c->ctype, "%s", v);
        }
    }
    if (chunked && have_clen) { *why = "both Content-Length and chunked"; return KKS_REQ_BAD; }
    kks_consume(c, head_len);
    if (expect && (clen || chunked) && !kks_send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25)) return KKS_REQ_EOF;
    if (!chunked) {
        while (c->in.len < clen)
            if (!kks_fill(c)) return KKS_REQ_BAD;
        kks_put(&c->body, c->in.p, clen);
        kks_consume(c, clen);
    } else {
        for (;;) { /* size[;ext] CRLF data CRLF ... 0 CRLF [trailers] CRLF */
            char *crlf;
            uint64_t n = 0;
            size_t i, hl;
            while (!(crlf = strstr(c->in.p ? c->in.p : "", "\r\n"))) {
                if (c->in.len > 1024) return KKS_REQ_BAD;
                if (!kks_fill(c)) return KKS_REQ_BAD;
            }
            hl = (size_t)(crlf - c->in.p);
            for (i = 0; i < hl && c->in.p[i] != ';'; i++) {
                int d = kks_hex(c->in.p[i]);
                if (d < 0 || n > (UINT64_MAX >> 4)) return KKS_REQ_BAD;
                n = n * 16 + (uint64_t)d;
            }
            if (!i) return KKS_REQ_BAD;
            if (n > s->max_req || c->body.len + n > s->max_req) { *why = "request body too large"; return KKS_REQ_TOO_LARGE; }
            kks_consume(c, hl + 2);
            if (!n) { /* trailers up to the empty line */
                for (;;) {
                    while (!(crlf = strstr(c->in.p ? c->in.p : "", "\r\n"))) {
                        if (c->in.len > 8192) return KKS_REQ_BAD;
                        if (!kks_fill(c)) return KKS_REQ_BAD;
                    }
                    hl = (size_t)(crlf - c->in.p);
                    kks_consume(c, hl + 2);
                    if (!hl) break;
                }
                break;
            }
            while (c->in.len < n + 2)
                if (!kks_fill(c)) return KKS_REQ_BAD;
            if (c->in.p[n] != '\r' || c->in.p[n + 1] != '\n') return KKS_REQ_BAD;
            kks_put(&c->body, c->in.p, (size_t)n);
            kks_consume(c, (size_t)n + 2);
        }
    }
    if (c->body.oom) return KKS_REQ_TOO_LARGE;
    if (memchr(c->body.p ? c->body.p : "", 0, c->body.len)) { *why = "NUL in the body"; return KKS_REQ_BAD; }
    return KKS_REQ_OK;
}

/* ------------------------------------------------------------ documents */
static const kks_res *kks_find(const kt_kube_server *s, const char *g, const char *v, const char *plural) {
    size_t i;
    for (i = 0; i < s->nres; i++)
        if (strcmp(s->res[i].group, g) == 0 && strcmp(s->res[i].version, v) == 0 && strcmp(s->res[i].resource, plural) == 0)
            return &s->res[i];
    return NULL;
}

/* obj's document; with_gvk: kind and apiVersion first, as an API server
   writes an object alone (get, create, a watch event); without: none, as
   it writes a list's items (#14). */
static void kks_put_obj(kks_buf *b, const kks_res *r, const kctl_obj *o, bool with_gvk) {
    size_t len;
    const char *text = kctl_obj_json(o, &len);
    kctl_json_value root, name, val;
    kctl_json_iter it;
    bool first = true;
    if (kctl_json_get(text, len, "", &root) != KCTL_OK || kctl_json_iter_begin(&root, NULL, &it) != KCTL_OK) {
        kks_put(b, text, len);
        return;
    }
    kks_puts(b, "{");
    if (with_gvk) {
        kks_puts(b, "\"kind\":");
        kks_jstr(b, r->kind);
        kks_puts(b, ",\"apiVersion\":");
        kks_jstr(b, r->api_version);
        first = false;
    }
    while (kctl_json_iter_next(&it, &name, &val)) {
        if ((name.len == 6 && memcmp(name.text, "\"kind\"", 6) == 0) || (name.len == 12 && memcmp(name.text, "\"apiVersion\"", 12) == 0))
            continue;
        if (!first) kks_puts(b, ",");
        first = false;
        kks_put(b, name.text, name.len);
        kks_puts(b, ":");
        kks_put(b, val.text, val.len);
    }
    kks_puts(b, "}");
}

/* --------------------------------------------------------- continue tokens */
/* A continue token as an API server makes it (#14): base64url without
   padding of {"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}; this
   server adds "remaining" (the remainingItemCount it gave with the page)
   so the next page can say it too. The memstore's own token is "N:key". */
static const char kks_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void kks_b64url(kks_buf *b, const char *p, size_t n) {
    size_t i;
    for (i = 0; i + 2 < n; i += 3) {
        uint32_t v = ((uint32_t)(unsigned char)p[i] << 16) | ((uint32_t)(unsigned char)p[i + 1] << 8) | (unsigned char)p[i + 2];
        char q[4] = { kks_b64[v >> 18], kks_b64[(v >> 12) & 63], kks_b64[(v >> 6) & 63], kks_b64[v & 63] };
        kks_put(b, q, 4);
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)(unsigned char)p[i] << 16;
        char q[2] = { kks_b64[v >> 18], kks_b64[(v >> 12) & 63] };
        kks_put(b, q, 2);
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)(unsigned char)p[i] << 16) | ((uint32_t)(unsigned char)p[i + 1] << 8);
        char q[3] = { kks_b64[v >> 18], kks_b64[(v >> 12) & 63], kks_b64[(v >> 6) & 63] };
        kks_put(b, q, 3);
    }
}

static bool kks_unb64url(const char *s, kks_buf *out) {
    uint32_t v = 0;
    int bits = 0;
    for (; *s; s++) {
        const char *p = strchr(kks_b64, *s);
        if (*s == '=') break;
        if (!p) return false;
        v = (v << 6) | (uint32_t)(p - kks_b64);
        bits += 6;
        if (bits >= 8) {
            char ch = (char)((v >> (bits - 8)) & 0xff);
            bits -= 8;
            kks_put(out, &ch, 1);
        }
    }
    return !out->oom;
}

static void kks_token(kks_buf *b, long long rv, const char *key, bool have_rem, uint64_t rem) {
    kks_buf j = { 0 };
    kks_printf(&j, "{\"v\":\"meta.k8s.io/v1\",\"rv\":%lld,\"start\":", rv);
    {
        kks_buf k = { 0 };
        kks_printf(&k, "%s", key);
        kks_put(&k, "", 1); /* the \u0000 of the real token: the next key after */
        {
            kctl_jw w;
            const char *t;
            size_t n;
            kctl_jw_init_growable(&w, NULL);
            kctl_jw_string_n(&w, k.p ? k.p : "", k.len);
            if (kctl_jw_finish(&w, &t, &n) == KCTL_OK) kks_put(&j, t, n);
            else j.oom = true;
            kctl_jw_free(&w);
        }
        kks_free(&k);
    }
    if (have_rem) kks_printf(&j, ",\"remaining\":%llu", (unsigned long long)rem);
    kks_puts(&j, "}");
    if (j.oom) b->oom = true;
    else kks_b64url(b, j.p, j.len);
    kks_free(&j);
}

typedef struct kks_tok {
    long long rv;
    char key[KCTL_CONTINUE_MAX];
    bool have_rem;
    uint64_t rem;
} kks_tok;

static bool kks_untoken(const char *t, kks_tok *out) {
    kks_buf j = { 0 };
    int64_t rv;
    size_t n;
    bool ok;
    memset(out, 0, sizeof *out);
    ok = kks_unb64url(t, &j) && j.len &&
         kctl_json_get_int64(j.p, j.len, "rv", &rv) == KCTL_OK &&
         kctl_json_get_string(j.p, j.len, "start", out->key, sizeof out->key, &n) == KCTL_OK;
    if (ok) {
        out->rv = rv;
        if (n && out->key[n - 1] == 0) out->key[n - 1] = 0; /* the trailing \u0000 */
        if (strlen(out->key) != (n ? n - 1 : 0) && strlen(out->key) != n) ok = false;
        out->have_rem = kctl_json_get_uint64(j.p, j.len, "remaining", &out->rem) == KCTL_OK;
    }
    kks_free(&j);
    return ok;
}

/* 410 for an expired continue token, as #17: with a fresh token (rv -1)
   from where the old one was. */
static bool kks_expired_token(kks_conn *c, const char *key) {
    kks_buf b = { 0 };
    bool ok;
    kks_puts(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":\"");
    kks_token(&b, -1, key, false, 0);
    kks_puts(&b, "\"},\"status\":\"Failure\",\"message\":\"The provided continue parameter is too old to display a consistent list "
                 "result. You can start a new list without the continue parameter, or use the continue token in this response to "
                 "retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - "
                 "objects that were created, modified, or deleted between the time the first chunk was returned and now may show up "
                 "in the list.\",\"reason\":\"Expired\",\"code\":410}");
    ok = kks_respond_json(c, 410, &b, NULL);
    kks_free(&b);
    return ok;
}

/* ----------------------------------------------------------- discovery */
static void kks_resource_list(kks_buf *b, const kt_kube_server *s, const char *g, const char *v) {
    size_t i;
    bool first = true;
    kks_puts(b, "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":");
    if (*g) {
        kks_buf gv = { 0 };
        kks_printf(&gv, "%s/%s", g, v);
        kks_jstr(b, gv.p ? gv.p : "");
        kks_free(&gv);
    } else {
        kks_jstr(b, v);
    }
    kks_puts(b, ",\"resources\":[");
    for (i = 0; i < s->nres; i++) {
        const kks_res *r = &s->res[i];
        if (strcmp(r->group, g) != 0 || strcmp(r->version, v) != 0) continue;
        if (!first) kks_puts(b, ",");
        first = false;
        kks_puts(b, "{\"name\":");
        kks_jstr(b, r->resource);
        kks_puts(b, ",\"singularName\":");
        kks_jstr(b, r->singular);
        kks_printf(b, ",\"namespaced\":%s,\"kind\":", r->namespaced ? "true" : "false");
        kks_jstr(b, r->kind);
        kks_puts(b, ",\"verbs\":[\"create\",\"delete\",\"get\",\"list\",\"patch\",\"update\",\"watch\"]");
        if (*r->short_names) {
            const char *p = r->short_names;
            kks_puts(b, ",\"shortNames\":[");
            while (*p) {
                const char *comma = strchr(p, ',');
                size_t n = comma ? (size_t)(comma - p) : strlen(p);
                kks_buf one = { 0 };
                kks_put(&one, p, n);
                if (p != r->short_names) kks_puts(b, ",");
                kks_jstr(b, one.p ? one.p : "");
                kks_free(&one);
                p += n + (comma ? 1 : 0);
            }
            kks_puts(b, "]");
        }
        kks_puts(b, "}");
        if (r->status) {
            kks_buf sub = { 0 };
            kks_printf(&sub, "%s/status", r->resource);
            kks_puts(b, ",{\"name\":");
            kks_jstr(b, sub.p ? sub.p : "");
            kks_printf(b, ",\"singularName\":\"\",\"namespaced\":%s,\"kind\":", r->namespaced ? "true" : "false");
            kks_jstr(b, r->kind);
            kks_puts(b, ",\"verbs\":[\"get\",\"patch\",\"update\"]}");
            kks_free(&sub);
        }
    }
    kks_puts(b, "]}");
}

/* One group's entry: name, versions in the order served, the first preferred. */
static void kks_group(kks_buf *b, const kt_kube_server *s, const char *g) {
    size_t i, j;
    bool first = true;
    kks_puts(b, "\"name\":");
    kks_jstr(b, g);
    kks_puts(b, ",\"versions\":[");
    for (i = 0; i < s->nres; i++) {
        bool seen = false;
        if (strcmp(s->res[i].group, g) != 0) continue;
        for (j = 0; j < i; j++)
            if (strcmp(s->res[j].group, g) == 0 && strcmp(s->res[j].version, s->res[i].version) == 0) seen = true;
        if (seen) continue;
        if (!first) kks_puts(b, ",");
        first = false;
        kks_puts(b, "{\"groupVersion\":");
        kks_jstr(b, s->res[i].api_version);
        kks_puts(b, ",\"version\":");
        kks_jstr(b, s->res[i].version);
        kks_puts(b, "}");
    }
    kks_puts(b, "],\"preferredVersion\":");
    for (i = 0; i < s->nres; i++)
        if (strcmp(s->res[i].group, g) == 0) {
            kks_puts(b, "{\"groupVersion\":");
            kks_jstr(b, s->res[i].api_version);
            kks_puts(b, ",\"version\":");
            kks_jstr(b, s->res[i].version);
            kks_puts(b, "}");
            break;
        }
}

static bool kks_has_gv(const kt_kube_server *s, const char *g, const char *v) {
    size_t i;
    for (i = 0; i < s->nres; i++)
        if (strcmp(s->res[i].group, g) == 0 && (!v || strcmp(s->res[i].version, v) == 0)) return true;
    return false;
}

static bool kks_discovery(kks_conn *c, char **seg, size_t n) {
    kt_kube_server *s = c->s;
    kks_buf b = { 0 };
    bool ok;
    size_t i, j;
    if (n == 1 && strcmp(seg[0], "api") == 0) {
        kks_printf(&b, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\","
                       "\"serverAddress\":\"127.0.0.1:%u\"}]}", (unsigned)s->port);
    } else if (n == 2 && strcmp(seg[0], "api") == 0 && kks_has_gv(s, "", seg[1])) {
        kks_resource_list(&b, s, "", seg[1]);
    } else if (n == 1 && strcmp(seg[0], "apis") == 0) {
        /* kind and apiVersion, as kube-apiserver writes it (the captured
           aggregated server left apiVersion out, #3) */
        kks_puts(&b, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[");
        for (i = 0; i < s->nres; i++) {
            bool seen = !*s->res[i].group;
            for (j = 0; j < i && !seen; j++)
                if (strcmp(s->res[j].group, s->res[i].group) == 0) seen = true;
            if (seen) continue;
            if (b.p[b.len - 1] != '[') kks_puts(&b, ",");
            kks_puts(&b, "{");
            kks_group(&b, s, s->res[i].group);
            kks_puts(&b, "}");
        }
        kks_puts(&b, "]}");
    } else if (n == 2 && strcmp(seg[0], "apis") == 0 && *seg[1] && kks_has_gv(s, seg[1], NULL)) {
        kks_puts(&b, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",");
        kks_group(&b, s, seg[1]);
        kks_puts(&b, "}");
    } else if (n == 3 && strcmp(seg[0], "apis") == 0 && *seg[1] && kks_has_gv(s, seg[1], seg[2])) {
        kks_resource_list(&b, s, seg[1], seg[2]);
    } else {
        kks_free(&b);
        return kks_not_found_path(c);
    }
    ok = kks_respond_json(c, 200, &b, NULL);
    kks_free(&b);
    return ok;
}

/* ------------------------------------------------------------- bodies */
/* Check a sent document against the resource and the URL (#26: another
   kind is 400) and give it the URL's namespace when it names none, as an
   API server does. *out is the body to store (the request's, or a copy). */
static bool kks_prepare_doc(kks_conn *c, const kks_res *r, const char *ns, const char *name, kks_buf *out) {
    const char *text = c->body.p ? c->body.p : "";
    size_t len = c->body.len;
    kctl_json_value root, md, v;
    char buf[256], msg[2048];
    int rc = kctl_json_get(text, len, "", &root);
    if (rc != KCTL_OK || root.type != KCTL_JSON_OBJECT) {
        snprintf(msg, sizeof msg, "the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse "
                 "error: %s", r->kind, rc == KCTL_OK ? "not an object" : "unexpected end of JSON input");
        kks_fail(c, 400, "BadRequest", msg);
        return false;
    }
    if (kctl_json_value_get_string(&root, "kind", buf, sizeof buf, NULL) == KCTL_OK && *buf && strcmp(buf, r->kind) != 0) {
        snprintf(msg, sizeof msg, "%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" is registered for version \"%s\"", buf,
                 r->version, r->kind, buf, r->api_version);
        kks_fail(c, 400, "BadRequest", msg);
        return false;
    }
    if (kctl_json_value_get_string(&root, "apiVersion", buf, sizeof buf, NULL) == KCTL_OK && *buf && strcmp(buf, r->api_version) != 0) {
        snprintf(msg, sizeof msg, "the API version in the data (%s) does not match the expected API version (%s)", buf, r->api_version);
        kks_fail(c, 400, "BadRequest", msg);
        return false;
    }
    if (name && kctl_json_value_get_string(&root, "metadata.name", buf, sizeof buf, NULL) == KCTL_OK && strcmp(buf, name) != 0) {
        snprintf(msg, sizeof msg, "the name of the object (%s) does not match the name on the URL (%s)", buf, name);
        kks_fail(c, 400, "BadRequest", msg);
        return false;
    }
    out->len = 0;
    if (ns && kctl_json_value_get(&root, "metadata", &md) == KCTL_OK && md.type == KCTL_JSON_OBJECT) {
        rc = kctl_json_value_get(&md, "namespace", &v);
        if (rc == KCTL_OK && v.type == KCTL_JSON_STRING) {
            if (kctl_json_value_get_string(&v, NULL, buf, sizeof buf, NULL) != KCTL_OK || (*buf && strcmp(buf, ns) != 0)) {
                kks_fail(c, 400, "BadRequest", "the namespace of the provided object does not match the namespace sent on the request");
                return false;
            }
            if (*buf) return true;
        }
        if (rc == KCTL_OK && v.type != KCTL_JSON_STRING && v.type != KCTL_JSON_NULL) return true; /* the rules refuse it */
        { /* insert "namespace":ns first in metadata (a repeated name: the last counts, so it goes first only when absent or null) */
            size_t at = (size_t)(md.text - text) + 1, k = at;
            bool empty;
            while (k < len && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r')) k++;
            empty = k < len && text[k] == '}';
            if (rc == KCTL_OK) { /* "namespace":null: put ours last instead */
                at = (size_t)(md.text - text) + md.len - 1;
                empty = false;
                kks_put(out, text, at);
                kks_puts(out, ",\"namespace\":");
                kks_jstr(out, ns);
                kks_put(out, text + at, len - at);
                return true;
            }
            kks_put(out, text, at);
            kks_puts(out, "\"namespace\":");
            kks_jstr(out, ns);
            if (!empty) kks_puts(out, ",");
            kks_put(out, text + at, len - at);
        }
    }
    return true;
}

/* Copy v without the strategic-merge-patch directives ("$patch",
   "$retainKeys", "$setElementOrder/..." members), at any depth. */
static void kks_strip_directives(kks_buf *b, const kctl_json_value *v) {
    kctl_json_iter it;
    kctl_json_value name, val;
    bool first = true;
    if (v->type != KCTL_JSON_OBJECT && v->type != KCTL_JSON_ARRAY) {
        kks_put(b, v->text, v->len);
        return;
    }
    kctl_json_iter_begin(v, NULL, &it);
    kks_puts(b, v->type == KCTL_JSON_OBJECT ? "{" : "[");
    while (kctl_json_iter_next(&it, &name, &val)) {
        if (v->type == KCTL_JSON_OBJECT && name.len > 1 && name.text[1] == '$') continue;
        if (!first) kks_puts(b, ",");
        first = false;
        if (v->type == KCTL_JSON_OBJECT) {
            kks_put(b, name.text, name.len);
            kks_puts(b, ":");
        }
        kks_strip_directives(b, &val);
    }
    kks_puts(b, v->type == KCTL_JSON_OBJECT ? "}" : "]");
}

/* ------------------------------------------------------------- handlers */
typedef struct kks_req {
    const kks_res *r;
    kctl_resource res;
    char ns[256], name[256];
    bool has_ns, has_name, status;
    kks_query q;
} kks_req;

static bool kks_answer_obj(kks_conn *c, int code, const kks_res *r, const kctl_obj *o) {
    kks_buf b = { 0 };
    bool ok;
    kks_put_obj(&b, r, o, true);
    ok = kks_respond_json(c, code, &b, NULL);
    kks_free(&b);
    return ok;
}

static bool kks_list(kks_conn *c, kks_req *rq) {
    kt_kube_server *s = c->s;
    kctl_transport t = kctl_memstore_transport(s->ms);
    kctl_list_opts lo;
    kctl_list_result lr;
    kctl_api_status st;
    kks_tok tok;
    kks_buf b = { 0 };
    const char *cont = kks_q(&rq->q, "continue"), *limit_s = kks_q(&rq->q, "limit"), *rv = kks_q(&rq->q, "resourceVersion");
    const char *match = kks_q(&rq->q, "resourceVersionMatch");
    char mtok[KCTL_CONTINUE_MAX + 32];
    uint64_t limit = 0, want = 0, cur;
    bool have_rem = false, ok;
    uint64_t rem = 0;
    size_t i;
    int rc;
    memset(&lo, 0, sizeof lo);
    memset(&st, 0, sizeof st);
    lo.label_selector = kks_q(&rq->q, "labelSelector");
    lo.field_selector = kks_q(&rq->q, "fieldSelector");
    if (limit_s && *limit_s && (!kks_uint(limit_s, &limit) || limit > UINT32_MAX)) return kks_fail(c, 400, "BadRequest", "invalid limit");
    /* resourceVersion=0 without a continue token is served from the watch
       cache, which does not page: the limit is ignored (a reflector's first
       list gets everything at once) */
    lo.limit = rv && strcmp(rv, "0") == 0 && !(cont && *cont) ? 0 : (uint32_t)limit;
    if (rv && *rv && strcmp(rv, "0") != 0 && !kks_uint(rv, &want)) return kks_fail(c, 400, "BadRequest", "invalid resourceVersion");
    cur = kctl_memstore_revision(s->ms);
    if (want && match && strcmp(match, "Exact") == 0 && want != cur) {
        /* the memstore lists only the present: an older version is as good
           as compacted (#54's answer); a newer one is too large */
        if (want < cur) return kks_fail(c, 410, "Expired", "The resourceVersion for the provided list is too old.");
    }
    if (want > cur) {
        char msg[128];
        snprintf(msg, sizeof msg, "Timeout: Too large resource version: %llu, current: %llu", (unsigned long long)want,
                 (unsigned long long)cur);
        return kks_fail(c, 504, "Timeout", msg);
    }
    if (cont && *cont) {
        bool expired;
        if (!kks_untoken(cont, &tok)) return kks_fail(c, 400, "BadRequest", "continue key is not valid: the token cannot be decoded");
        pthread_mutex_lock(&s->mu);
        expired = tok.rv > 0 && (uint64_t)tok.rv <= s->continue_floor;
        pthread_mutex_unlock(&s->mu);
        if (expired) return kks_expired_token(c, tok.key);
        if (tok.rv > 0) snprintf(mtok, sizeof mtok, "%lld:%s", tok.rv, tok.key);
        else snprintf(mtok, sizeof mtok, "%s", tok.key);
        lo.continue_token = mtok;
    }
    rc = kctl_transport_list(&t, &rq->res, &lo, &lr, &st);
    if (rc == KCTL_ERR_GONE && cont) {
        kctl_api_status_clear(&st);
        return kks_expired_token(c, tok.key);
    }
    if (rc != KCTL_OK) {
        ok = kks_respond_status(c, &st, NULL);
        kctl_api_status_clear(&st);
        return ok;
    }
    if (lr.continue_token[0]) { /* remainingItemCount: from the token, or counted on a first page */
        if (cont && *cont) {
            if (tok.have_rem && tok.rem >= lr.items.count) {
                have_rem = true;
                rem = tok.rem - lr.items.count;
            }
        } else {
            kctl_list_opts all = lo;
            kctl_list_result lr2;
            all.limit = 0;
            all.continue_token = NULL;
            if (kctl_transport_list(&t, &rq->res, &all, &lr2, NULL) == KCTL_OK) {
                if (strcmp(lr2.resource_version, lr.resource_version) == 0 && lr2.items.count >= lr.items.count) {
                    have_rem = true;
                    rem = lr2.items.count - lr.items.count;
                }
                kctl_list_result_free(&lr2);
            }
        }
    }
    kks_puts(&b, "{\"kind\":");
    {
        kks_buf lk = { 0 };
        kks_printf(&lk, "%sList", rq->r->kind);
        kks_jstr(&b, lk.p ? lk.p : "");
        kks_free(&lk);
    }
    kks_puts(&b, ",\"apiVersion\":");
    kks_jstr(&b, rq->r->api_version);
    kks_puts(&b, ",\"metadata\":{\"resourceVersion\":");
    kks_jstr(&b, lr.resource_version);
    if (lr.continue_token[0]) {
        const char *colon = strchr(lr.continue_token, ':');
        uint64_t trv = 0;
        char num[32];
        size_t nl = colon ? (size_t)(colon - lr.continue_token) : 0;
        if (nl && nl < sizeof num) {
            memcpy(num, lr.continue_token, nl);
            num[nl] = 0;
            if (!kks_uint(num, &trv)) trv = 0;
        }
        kks_puts(&b, ",\"continue\":\"");
        kks_token(&b, trv ? (long long)trv : -1, trv ? colon + 1 : lr.continue_token, have_rem, rem);
        kks_puts(&b, "\"");
        if (have_rem) kks_printf(&b, ",\"remainingItemCount\":%llu", (unsigned long long)rem);
    }
    kks_puts(&b, "},\"items\":[");
    for (i = 0; i < lr.items.count; i++) {
        if (i) kks_puts(&b, ",");
        kks_put_obj(&b, rq->r, lr.items.items[i], false);
    }
    kks_puts(&b, "]}");
    kctl_list_result_free(&lr);
    ok = kks_respond_json(c, 200, &b, NULL);
    kks_free(&b);
    return ok;
}

/* One chunk of a chunked body. */
static bool kks_chunk(kks_conn *c, const char *p, size_t n) {
    char h[24];
    int hl = snprintf(h, sizeof h, "%zx\r\n", n);
    return kks_send(c, h, (size_t)hl) && kks_send(c, p, n) && kks_send(c, "\r\n", 2);
}

static void kks_event_line(kks_buf *b, const char *type, const kks_res *r, const kctl_obj *o, const char *bookmark_rv) {
    kks_printf(b, "{\"type\":\"%s\",\"object\":", type);
    if (o) {
        kks_put_obj(b, r, o, true);
    } else { /* a bookmark: the kind's skeleton at the version (#35, #51) */
        kks_puts(b, "{\"kind\":");
        kks_jstr(b, r->kind);
        kks_puts(b, ",\"apiVersion\":");
        kks_jstr(b, r->api_version);
        kks_puts(b, ",\"metadata\":{\"resourceVersion\":");
        kks_jstr(b, bookmark_rv);
        kks_puts(b, ",\"creationTimestamp\":null}}");
    }
    kks_puts(b, "}\n");
}

static void kks_error_line(kks_buf *b, const kctl_api_status *st) {
    kks_puts(b, "{\"type\":\"ERROR\",\"object\":");
    kks_status_doc(b, st);
    kks_puts(b, "}\n");
}

/* Has the client gone? (a read of 0 bytes) */
static bool kks_peer_closed(kks_conn *c) {
    struct pollfd p;
    char ch;
    ssize_t k;
    p.fd = c->fd;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLERR | POLLNVAL)) return true;
#ifdef KT_HAVE_OPENSSL
    if (c->ssl) { /* a record came: data, or the end (close_notify, or the socket's) */
        int fl = fcntl(c->fd, F_GETFL), r, e;
        fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
        r = SSL_peek((SSL *)c->ssl, &ch, 1);
        e = r > 0 ? SSL_ERROR_NONE : SSL_get_error((SSL *)c->ssl, r);
        fcntl(c->fd, F_SETFL, fl);
        ERR_clear_error();
        return e != SSL_ERROR_NONE && e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE;
    }
#endif
    k = recv(c->fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static uint64_t kks_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Returns false when the connection must close. */
static bool kks_watch(kks_conn *c, kks_req *rq) {
    kt_kube_server *s = c->s;
    kctl_transport t = kctl_memstore_transport(s->ms);
    kctl_list_opts lo;
    kctl_api_status st;
    kctl_watch *w = NULL;
    kks_buf out = { 0 }, h = { 0 };
    const char *rv = kks_q(&rq->q, "resourceVersion"), *ts = kks_q(&rq->q, "timeoutSeconds");
    const char *bm = kks_q(&rq->q, "allowWatchBookmarks");
    bool bookmarks = false, keep = true, replay;
    uint64_t timeout_s = 0, deadline, start = kks_now_ns();
    uint32_t break_gen, end_gen, drop_gen;
    int rc;
    memset(&lo, 0, sizeof lo);
    memset(&st, 0, sizeof st);
    if (bm && *bm && kks_bool(bm, &bookmarks) != 0) return kks_fail(c, 400, "BadRequest", "invalid allowWatchBookmarks");
    if (ts && *ts && !kks_uint(ts, &timeout_s)) return kks_fail(c, 400, "BadRequest", "invalid timeoutSeconds");
    lo.label_selector = kks_q(&rq->q, "labelSelector");
    lo.field_selector = kks_q(&rq->q, "fieldSelector");
    if (rv && strcmp(rv, "0") == 0) rv = ""; /* "any version": the objects there now, then live (#36) */
    replay = true; /* what is there or in the history, up to the first wait, goes in 0x800-byte chunks (#36, #38) */
    deadline = timeout_s && timeout_s * 1000000000u < s->watch_max_ns ? timeout_s * 1000000000u : s->watch_max_ns;
    deadline += start;
    pthread_mutex_lock(&s->mu);
    break_gen = s->break_gen;
    end_gen = s->end_gen;
    drop_gen = s->drop_gen;
    pthread_mutex_unlock(&s->mu);
    rc = kctl_transport_watch_open(&t, &rq->res, &lo, rv ? rv : "", &w, &st);
    if (rc != KCTL_OK && rc != KCTL_ERR_GONE) {
        bool ok = kks_respond_status(c, &st, NULL);
        kctl_api_status_clear(&st);
        return ok;
    }
    kks_head(c, &h, 200, "application/json", "Transfer-Encoding: chunked\r\n");
    kks_puts(&h, "\r\n");
    if (h.oom || !kks_send(c, h.p, h.len)) {
        kks_free(&h);
        kctl_api_status_clear(&st);
        if (w) kctl_transport_watch_close(&t, w);
        return false;
    }
    kks_free(&h);
    if (rc == KCTL_ERR_GONE) { /* too old: 200, the in-band 410 and the end (#53) */
        kks_error_line(&out, &st);
        keep = !out.oom && kks_chunk(c, out.p, out.len) && kks_send(c, "0\r\n\r\n", 5);
        kks_free(&out);
        kctl_api_status_clear(&st);
        return keep && !c->close_after;
    }
    pthread_mutex_lock(&s->mu);
    s->ctr.watches_opened++;
    s->ctr.watches_open++;
    pthread_mutex_unlock(&s->mu);
    for (;;) {
        kctl_event ev;
        uint64_t now = kks_now_ns(), wait;
        bool stop, brk, end, stalled;
        pthread_mutex_lock(&s->mu);
        stop = s->stopping || s->drop_gen != drop_gen || c->drop_gen != s->drop_gen;
        brk = s->break_gen != break_gen;
        end = s->end_gen != end_gen;
        stalled = s->stalled;
        if (stalled && !stop && !brk) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += KKS_SLICE_NS;
            if (until.tv_nsec >= 1000000000) { until.tv_sec++; until.tv_nsec -= 1000000000; }
            pthread_cond_timedwait(&s->cv, &s->mu, &until);
        }
        pthread_mutex_unlock(&s->mu);
        if (stop || brk) { keep = false; break; } /* abruptly: no terminator */
        if (stalled) continue;                    /* silent, even past the deadline */
        if (end || now >= deadline) {             /* cleanly: what is buffered, then the terminator (#35) */
            keep = (!out.len || kks_chunk(c, out.p, out.len)) && kks_send(c, "0\r\n\r\n", 5);
            break;
        }
        if (kks_peer_closed(c)) { keep = false; break; }
        wait = out.len ? 0 : (deadline - now < KKS_SLICE_NS ? deadline - now : KKS_SLICE_NS);
        rc = kctl_transport_watch_next(&t, w, wait, &ev, &st);
        if (rc == KCTL_OK) {
            if (ev.type != KCTL_EVENT_BOOKMARK || bookmarks) {
                static const char *const names[] = { "", "ADDED", "MODIFIED", "DELETED", "BOOKMARK" };
                kks_event_line(&out, names[ev.type >= 1 && ev.type <= 4 ? ev.type : 0], rq->r, ev.obj, ev.resource_version);
            }
            kctl_event_clear(&ev);
            if (out.oom) { keep = false; break; }
            /* the replay of what is there is packed into 0x800-byte chunks that cut
               events anywhere (#36); live events go one per chunk (#35) */
            if (replay) {
                size_t at = 0;
                while (out.len - at >= KKS_REPLAY_CHUNK) {
                    if (!kks_chunk(c, out.p + at, KKS_REPLAY_CHUNK)) { keep = false; break; }
                    at += KKS_REPLAY_CHUNK;
                }
                if (!keep) break;
                if (at) {
                    memmove(out.p, out.p + at, out.len - at);
                    out.len -= at;
                }
            }
            continue;
        }
        if (out.len) { /* nothing more at once: send what is buffered */
            if (!kks_chunk(c, out.p, out.len)) { keep = false; break; }
            out.len = 0;
            replay = false;
        }
        if (rc == KCTL_ERR_AGAIN) {
            replay = false;
            continue;
        }
        if (rc == KCTL_ERR_GONE) { /* fell behind the history: the in-band 410 */
            kks_error_line(&out, &st);
            keep = !out.oom && kks_chunk(c, out.p, out.len) && kks_send(c, "0\r\n\r\n", 5);
            break;
        }
        keep = false; /* the store broke the stream */
        break;
    }
    kctl_transport_watch_close(&t, w);
    kctl_api_status_clear(&st);
    kks_free(&out);
    pthread_mutex_lock(&s->mu);
    s->ctr.watches_open--;
    pthread_mutex_unlock(&s->mu);
    return keep && !c->close_after;
}

static bool kks_get(kks_conn *c, kks_req *rq) {
    kctl_transport t = kctl_memstore_transport(c->s->ms);
    kctl_api_status st;
    kctl_obj *o = NULL;
    bool ok;
    memset(&st, 0, sizeof st);
    if (kctl_transport_get(&t, &rq->res, rq->name, &o, &st) != KCTL_OK) {
        ok = kks_respond_status(c, &st, NULL);
    } else {
        ok = kks_answer_obj(c, 200, rq->r, o);
        kctl_obj_unref(o);
    }
    kctl_api_status_clear(&st);
    return ok;
}

/* POST, PUT, PUT .../status. */
static bool kks_write(kks_conn *c, kks_req *rq, kctl_verb verb) {
    kctl_transport t = kctl_memstore_transport(c->s->ms);
    kctl_api_status st;
    kctl_obj *o = NULL;
    kks_buf doc = { 0 };
    const char *text;
    size_t len;
    bool ok;
    int rc;
    memset(&st, 0, sizeof st);
    if (!kks_prepare_doc(c, rq->r, rq->has_ns ? rq->ns : NULL, verb == KCTL_VERB_CREATE ? NULL : rq->name, &doc)) {
        kks_free(&doc);
        return true;
    }
    text = doc.len ? doc.p : (c->body.p ? c->body.p : "");
    len = doc.len ? doc.len : c->body.len;
    if (verb == KCTL_VERB_CREATE) rc = kctl_transport_create(&t, &rq->res, text, len, &o, &st);
    else if (verb == KCTL_VERB_UPDATE) rc = kctl_transport_update(&t, &rq->res, text, len, &o, &st);
    else rc = kctl_transport_update_status(&t, &rq->res, text, len, &o, &st);
    if (rc == KCTL_OK && o) ok = kks_answer_obj(c, verb == KCTL_VERB_CREATE ? 201 : 200, rq->r, o);
    else if (rc == KCTL_OK) ok = kks_fail(c, 500, "InternalError", "the store answered no object");
    else ok = kks_respond_status(c, &st, NULL);
    kctl_obj_unref(o);
    kctl_api_status_clear(&st);
    kks_free(&doc);
    return ok;
}

/* PATCH: application/merge-patch+json as RFC 7386. kubectl sends
   application/strategic-merge-patch+json for built-in kinds (apply,
   label, annotate): for the fields it sends to the kinds served here
   (maps: data, labels, annotations; scalars; null to delete) a strategic
   merge patch means what a merge patch means, so it is applied as one,
   without its $-directives; lists are replaced whole, where a real server
   would merge lists of a Go type by their patch merge key (containers by
   name), which no kind here has. json-patch and apply-patch are 415. */
static bool kks_patch(kks_conn *c, kks_req *rq) {
    kctl_transport t = kctl_memstore_transport(c->s->ms);
    kctl_api_status st;
    kctl_obj *o = NULL;
    kks_buf clean = { 0 };
    kctl_json_value root;
    char ct[128];
    char *semi;
    bool ok;
    int rc;
    snprintf(ct, sizeof ct, "%s", c->ctype);
    if ((semi = strchr(ct, ';'))) *semi = 0;
    while (*ct && ct[strlen(ct) - 1] == ' ') ct[strlen(ct) - 1] = 0;
    if (!kks_ieq(ct, "application/merge-patch+json") && !kks_ieq(ct, "application/strategic-merge-patch+json")) {
        char msg[512];
        snprintf(msg, sizeof msg, "the body of the request was in an unknown format - accepted media types include: "
                 "application/merge-patch+json, application/strategic-merge-patch+json (got \"%s\")", ct);
        return kks_fail(c, 415, "UnsupportedMediaType", msg);
    }
    if (kctl_json_get(c->body.p ? c->body.p : "", c->body.len, "", &root) != KCTL_OK || root.type != KCTL_JSON_OBJECT)
        return kks_fail(c, 400, "BadRequest", "the patch is not a JSON object");
    kks_strip_directives(&clean, &root);
    if (clean.oom) {
        kks_free(&clean);
        return kks_fail(c, 500, "InternalError", "out of memory");
    }
    memset(&st, 0, sizeof st);
    rc = kctl_transport_patch(&t, &rq->res, rq->name, clean.p, clean.len, rq->status ? KCTL_PATCH_STATUS : 0, &o, &st);
    if (rc == KCTL_OK && o) ok = kks_answer_obj(c, 200, rq->r, o);
    else if (rc == KCTL_OK) ok = kks_fail(c, 500, "InternalError", "the store answered no object");
    else ok = kks_respond_status(c, &st, NULL);
    kctl_obj_unref(o);
    kctl_api_status_clear(&st);
    kks_free(&clean);
    return ok;
}

/* DELETE with DeleteOptions (preconditions; the rest is taken and not
   acted on): a Success Status (#42), or 200 with the object a finalizer
   keeps (#44). */
static bool kks_delete(kks_conn *c, kks_req *rq) {
    kctl_transport t = kctl_memstore_transport(c->s->ms);
    kctl_api_status st;
    kctl_delete_opts del;
    kctl_obj *o = NULL, *before = NULL;
    char prv[KCTL_RV_MAX], puid[128];
    bool ok;
    int rc;
    memset(&del, 0, sizeof del);
    memset(&st, 0, sizeof st);
    prv[0] = puid[0] = 0;
    if (c->body.len) {
        kctl_json_value root, v;
        const char *text = c->body.p;
        if (kctl_json_get(text, c->body.len, "", &root) != KCTL_OK || root.type != KCTL_JSON_OBJECT)
            return kks_fail(c, 400, "BadRequest", "the DeleteOptions are not a JSON object");
        if (kctl_json_value_get(&root, "preconditions", &v) == KCTL_OK && v.type != KCTL_JSON_NULL) {
            int r1 = kctl_json_value_get_string(&v, "resourceVersion", prv, sizeof prv, NULL);
            int r2 = kctl_json_value_get_string(&v, "uid", puid, sizeof puid, NULL);
            if (v.type != KCTL_JSON_OBJECT || (r1 != KCTL_OK && r1 != KCTL_ERR_NOT_FOUND) || (r2 != KCTL_OK && r2 != KCTL_ERR_NOT_FOUND))
                return kks_fail(c, 400, "BadRequest", "invalid preconditions");
            if (r1 != KCTL_OK) prv[0] = 0;
            if (r2 != KCTL_OK) puid[0] = 0;
        }
    }
    del.resource_version = prv[0] ? prv : NULL;
    del.uid = puid[0] ? puid : NULL;
    kctl_transport_get(&t, &rq->res, rq->name, &before, NULL); /* its uid, for the Status */
    rc = kctl_transport_remove(&t, &rq->res, rq->name, &del, &o, &st);
    if (rc != KCTL_OK) {
        ok = kks_respond_status(c, &st, NULL);
    } else if (o) {
        ok = kks_answer_obj(c, 200, rq->r, o);
    } else {
        kks_buf b = { 0 };
        kks_puts(&b, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\",\"details\":{\"name\":");
        kks_jstr(&b, rq->name);
        if (*rq->r->group) {
            kks_puts(&b, ",\"group\":");
            kks_jstr(&b, rq->r->group);
        }
        kks_puts(&b, ",\"kind\":");
        kks_jstr(&b, rq->r->resource);
        if (before && *kctl_obj_uid(before)) {
            kks_puts(&b, ",\"uid\":");
            kks_jstr(&b, kctl_obj_uid(before));
        }
        kks_puts(&b, "}}");
        ok = kks_respond_json(c, 200, &b, NULL);
        kks_free(&b);
    }
    kctl_obj_unref(before);
    kctl_obj_unref(o);
    kctl_api_status_clear(&st);
    return ok;
}

/* ------------------------------------------------------------- routing */
#define KKS_SEGS 12

/* Serve one request; false: close the connection. */
static bool kks_serve(kks_conn *c) {
    kt_kube_server *s = c->s;
    char path[8192], *qs, *seg[KKS_SEGS], segbuf[KKS_SEGS][512];
    size_t n = 0, rest_at;
    kks_req *rq;
    kctl_verb verb = (kctl_verb)0;
    bool ok, watch = false, resource = false;
    const char *m = c->method;
    snprintf(path, sizeof path, "%s", c->target);
    qs = strchr(path, '?');
    if (qs) *qs++ = 0;
    if (!(rq = (kks_req *)calloc(1, sizeof *rq))) return false;
    if (!kks_parse_query(qs ? qs : "", &rq->q)) {
        pthread_mutex_lock(&s->mu);
        s->ctr.requests[0]++;
        s->ctr.bad_requests++;
        pthread_mutex_unlock(&s->mu);
        free(rq);
        return kks_fail(c, 400, "BadRequest", "malformed query");
    }
    { /* the path's segments, decoded */
        char *p = path;
        bool bad = false;
        while (*p == '/') p++;
        while (*p && !bad) {
            char *sl = strchr(p, '/');
            size_t len = sl ? (size_t)(sl - p) : strlen(p);
            if (n == KKS_SEGS || !kks_unescape(p, len, segbuf[n], sizeof segbuf[n], false) || !segbuf[n][0]) bad = true;
            else seg[n] = segbuf[n], n++;
            p += len;
            while (*p == '/') p++;
        }
        if (bad) n = 0, seg[0] = NULL;
        if (bad) {
            free(rq);
            pthread_mutex_lock(&s->mu);
            s->ctr.requests[0]++;
            pthread_mutex_unlock(&s->mu);
            return kks_not_found_path(c);
        }
    }
    /* what it is, for the counters and the throttle */
    rest_at = 0;
    if (n >= 3 && strcmp(seg[0], "api") == 0 && strcmp(seg[1], "v1") == 0) rest_at = 2;
    else if (n >= 4 && strcmp(seg[0], "apis") == 0) rest_at = 3;
    if (rest_at) {
        const char *g = rest_at == 2 ? "" : seg[1], *v = rest_at == 2 ? seg[1] : seg[2];
        char **rest = seg + rest_at;
        size_t rn = n - rest_at;
        const kks_res *r = NULL;
        if (rn >= 3 && strcmp(rest[0], "namespaces") == 0 && (r = kks_find(s, g, v, rest[2])) && r->namespaced) {
            snprintf(rq->ns, sizeof rq->ns, "%s", rest[1]);
            rq->has_ns = true;
            rest += 2;
            rn -= 2;
        } else {
            r = kks_find(s, g, v, rest[0]);
            if (r && r->namespaced && rn > 1) r = NULL; /* a namespaced object needs its namespace */
        }
        if (r && rn <= 3 && (rn < 3 || (strcmp(rest[2], "status") == 0 && r->status))) {
            resource = true;
            rq->r = r;
            rq->res.group = r->group;
            rq->res.version = r->version;
            rq->res.resource = r->resource;
            rq->res.ns = rq->has_ns ? rq->ns : NULL;
            if (rn >= 2) {
                snprintf(rq->name, sizeof rq->name, "%s", rest[1]);
                rq->has_name = true;
            }
            rq->status = rn == 3;
            if (!rq->has_name) {
                const char *wv = kks_q(&rq->q, "watch");
                if (wv && *wv && kks_bool(wv, &watch) != 0) {
                    free(rq);
                    return kks_fail(c, 400, "BadRequest", "invalid watch parameter");
                }
                if (strcmp(m, "GET") == 0) verb = watch ? KCTL_VERB_WATCH : KCTL_VERB_LIST;
                else if (strcmp(m, "POST") == 0 && (rq->has_ns || !r->namespaced)) verb = KCTL_VERB_CREATE;
            } else if (strcmp(m, "GET") == 0) verb = KCTL_VERB_GET;
            else if (strcmp(m, "PUT") == 0) verb = rq->status ? KCTL_VERB_UPDATE_STATUS : KCTL_VERB_UPDATE;
            else if (strcmp(m, "PATCH") == 0) verb = KCTL_VERB_PATCH;
            else if (strcmp(m, "DELETE") == 0 && !rq->status) verb = KCTL_VERB_REMOVE;
        }
    }
    /* stalled: read, and answer nothing until resumed (or dropped) */
    pthread_mutex_lock(&s->mu);
    while (s->stalled && !s->stopping && c->drop_gen == s->drop_gen) pthread_cond_wait(&s->cv, &s->mu);
    if (s->stopping || c->drop_gen != s->drop_gen) {
        pthread_mutex_unlock(&s->mu);
        free(rq);
        return false;
    }
    s->ctr.requests[verb]++;
    if (s->throttle_n) {
        char extra[64], msg[96];
        int code = s->throttle_code;
        uint32_t ra = s->throttle_retry;
        kctl_api_status st;
        s->throttle_n--;
        s->ctr.throttled++;
        pthread_mutex_unlock(&s->mu);
        snprintf(extra, sizeof extra, "Retry-After: %u\r\n", (unsigned)ra);
        snprintf(msg, sizeof msg, "%s", code == 503 ? "The server is currently unable to handle the request"
                                                    : "Too many requests, please try again later.");
        memset(&st, 0, sizeof st);
        kctl_api_status_set(&st, code, code == 503 ? "ServiceUnavailable" : "TooManyRequests", msg, NULL, NULL, NULL, NULL, 0);
        st.retry_after_s = ra;
        ok = kks_respond_status(c, &st, extra);
        kctl_api_status_clear(&st);
        free(rq);
        return ok && !c->close_after;
    }
    pthread_mutex_unlock(&s->mu);
    if (resource) {
        switch ((int)verb) {
        case KCTL_VERB_LIST: ok = kks_list(c, rq); break;
        case KCTL_VERB_WATCH: ok = kks_watch(c, rq); break;
        case KCTL_VERB_GET: ok = kks_get(c, rq); break;
        case KCTL_VERB_CREATE: case KCTL_VERB_UPDATE: case KCTL_VERB_UPDATE_STATUS: ok = kks_write(c, rq, verb); break;
        case KCTL_VERB_PATCH: ok = kks_patch(c, rq); break;
        case KCTL_VERB_REMOVE: ok = kks_delete(c, rq); break;
        default: {
            char msg[128];
            snprintf(msg, sizeof msg, "the server does not allow this method on the requested resource");
            ok = kks_fail(c, 405, "MethodNotAllowed", msg);
        }
        }
    } else if (strcmp(m, "GET") != 0) {
        ok = kks_not_found_path(c);
    } else if (n == 1 && strcmp(seg[0], "version") == 0) {
        static const char v[] = "{\n  \"major\": \"1\",\n  \"minor\": \"26\",\n  \"gitVersion\": \"v1.26.15-kctl-test\",\n  \"gitCommit\": \"\",\n"
                                "  \"gitTreeState\": \"\",\n  \"buildDate\": \"\",\n  \"goVersion\": \"\",\n  \"compiler\": \"\",\n  \"platform\": "
                                "\"linux/amd64\"\n}";
        ok = kks_respond(c, 200, "application/json", v, sizeof v - 1, NULL);
    } else if (n == 2 && strcmp(seg[0], "openapi") == 0 && strcmp(seg[1], "v2") == 0) {
        /* an empty protobuf Document: what kubectl apply's validation
           needs (see tests/kube_clients/README.md) */
        ok = kks_respond(c, 200, "application/octet-stream", "", 0, NULL);
    } else if (n == 1 && (strcmp(seg[0], "healthz") == 0 || strcmp(seg[0], "readyz") == 0 || strcmp(seg[0], "livez") == 0)) {
        ok = kks_respond(c, 200, "text/plain; charset=utf-8", "ok", 2, "X-Content-Type-Options: nosniff\r\n");
    } else if (n >= 1 && n <= 3 && (strcmp(seg[0], "api") == 0 || strcmp(seg[0], "apis") == 0)) {
        ok = kks_discovery(c, seg, n);
    } else {
        ok = kks_not_found_path(c);
    }
    free(rq);
    return ok && !c->close_after;
}

/* -------------------------------------------------------------- threads */
static void kks_close_fd(kks_conn *c) {
    pthread_mutex_lock(&c->s->mu);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    pthread_mutex_unlock(&c->s->mu);
}

static void *kks_conn_main(void *arg) {
    kks_conn *c = (kks_conn *)arg;
    kt_kube_server *s = c->s;
#ifdef KT_HAVE_OPENSSL
    if (s->ssl_ctx) { /* https: the handshake first (a client certificate, when one is required) */
        SSL *ssl = SSL_new((SSL_CTX *)s->ssl_ctx);
        if (ssl && SSL_set_fd(ssl, c->fd) == 1 && SSL_accept(ssl) == 1) {
            c->ssl = ssl;
        } else {
            if (ssl) SSL_free(ssl);
            ERR_clear_error();
            pthread_mutex_lock(&s->mu);
            s->ctr.tls_failures++;
            pthread_mutex_unlock(&s->mu);
            goto done;
        }
    }
#endif
    for (;;) {
        const char *why = NULL;
        int rc = kks_read_request(c, &why);
        if (rc == KKS_REQ_EOF) break;
        if (rc != KKS_REQ_OK) {
            pthread_mutex_lock(&s->mu);
            s->ctr.requests[0]++;
            s->ctr.bad_requests++;
            pthread_mutex_unlock(&s->mu);
            c->close_after = true;
            if (rc == KKS_REQ_TOO_LARGE) kks_fail(c, 413, "RequestEntityTooLarge", why);
            else kks_fail(c, 400, "BadRequest", why);
            break;
        }
        if (!kks_serve(c)) break;
    }
#ifdef KT_HAVE_OPENSSL
    if (c->ssl) SSL_free((SSL *)c->ssl); /* no close_notify: a broken watch must look broken */
    c->ssl = NULL;
done:
#endif
    kks_free(&c->in);
    kks_free(&c->body);
    kks_close_fd(c);
    pthread_mutex_lock(&s->mu);
    c->done = true;
    s->ctr.connections--;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Join the finished connections' threads (all, when all is set, after
   they were told to go). */
static void kks_reap(kt_kube_server *s, bool all) {
    for (;;) {
        kks_conn **pp, *c = NULL;
        pthread_mutex_lock(&s->mu);
        for (pp = &s->conns; *pp; pp = &(*pp)->next)
            if ((*pp)->done || all) {
                c = *pp;
                *pp = c->next;
                break;
            }
        pthread_mutex_unlock(&s->mu);
        if (!c) return;
        pthread_join(c->th, NULL);
        free(c);
    }
}

static void *kks_accept_main(void *arg) {
    kt_kube_server *s = (kt_kube_server *)arg;
    for (;;) {
        struct pollfd p[2];
        int fd, one = 1;
        kks_conn *c;
        p[0].fd = s->lfd;
        p[0].events = POLLIN;
        p[1].fd = s->wake[0];
        p[1].events = POLLIN;
        p[0].revents = p[1].revents = 0;
        if (poll(p, 2, 500) < 0 && errno != EINTR) break;
        kks_reap(s, false);
        if (p[1].revents) break;
        if (!(p[0].revents & POLLIN)) continue;
        fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) continue;
        fcntl(fd, F_SETFD, FD_CLOEXEC); /* a client the tests start must not keep a connection open */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (!(c = (kks_conn *)calloc(1, sizeof *c))) {
            close(fd);
            continue;
        }
        c->s = s;
        c->fd = fd;
        pthread_mutex_lock(&s->mu);
        if (s->stopping) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            free(c);
            break;
        }
        c->drop_gen = s->drop_gen;
        if (s->ctr.connections >= KKS_CONN_MAX) { /* bounded: one more is closed at once */
            pthread_mutex_unlock(&s->mu);
            close(fd);
            free(c);
            continue;
        }
        if (pthread_create(&c->th, NULL, kks_conn_main, c) != 0) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            free(c);
            continue;
        }
        c->next = s->conns;
        s->conns = c;
        s->ctr.connections++;
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

/* Shut every connection down (their threads then end). Lock held. */
static void kks_drop_all(kt_kube_server *s) {
    kks_conn *c;
    s->drop_gen++;
    for (c = s->conns; c; c = c->next)
        if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
    pthread_cond_broadcast(&s->cv);
}

static void kks_free_res(kt_kube_server *s) {
    size_t i;
    for (i = 0; i < s->nres; i++) {
        free(s->res[i].group);
        free(s->res[i].version);
        free(s->res[i].resource);
        free(s->res[i].singular);
        free(s->res[i].kind);
        free(s->res[i].short_names);
    }
    free(s->res);
}

int kt_kube_server_start(const kt_kube_server_desc *desc, kt_kube_server **out) {
    kt_kube_server_desc d;
    kt_kube_server *s;
    kctl_memstore_desc md;
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    size_t i;
    int one = 1, rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    if (!d.resources) {
        d.resources = kt_kube_default_resources;
        d.resource_count = kt_kube_default_resource_count;
    }
    for (i = 0; i < d.resource_count; i++) {
        const kt_kube_resource *r = &d.resources[i];
        if (!r->version || !*r->version || !r->resource || !*r->resource || !r->kind || !*r->kind || strchr(r->resource, '/'))
            return KCTL_ERR_INVALID_ARG;
    }
    if (!(s = (kt_kube_server *)calloc(1, sizeof *s))) return KCTL_ERR_NOMEM;
    s->lfd = s->wake[0] = s->wake[1] = -1;
    s->bookmark_ns = d.bookmark_period_ns ? d.bookmark_period_ns : UINT64_C(60000000000);
    s->watch_max_ns = d.watch_timeout_max_ns ? d.watch_timeout_max_ns : UINT64_C(1800000000000);
    s->max_req = d.max_request_bytes ? d.max_request_bytes : (size_t)3 * 1024 * 1024 + KKS_HEAD_MAX;
    s->audit_base = (uint64_t)time(NULL) * UINT64_C(2654435761) ^ (uint64_t)(uintptr_t)s;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->clock_mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (!(s->res = (kks_res *)calloc(d.resource_count ? d.resource_count : 1, sizeof *s->res))) goto nomem;
    for (i = 0; i < d.resource_count; i++) {
        const kt_kube_resource *r = &d.resources[i];
        kks_res *x = &s->res[i];
        s->nres++;
        if (!(x->group = kks_strdup(r->group)) || !(x->version = kks_strdup(r->version)) || !(x->resource = kks_strdup(r->resource)) ||
            !(x->singular = kks_strdup(r->singular)) || !(x->kind = kks_strdup(r->kind)) || !(x->short_names = kks_strdup(r->short_names)))
            goto nomem;
        x->namespaced = r->namespaced;
        x->status = r->status;
        if (*x->group) snprintf(x->api_version, sizeof x->api_version, "%s/%s", x->group, x->version);
        else snprintf(x->api_version, sizeof x->api_version, "%s", x->version);
    }
    memset(&md, 0, sizeof md);
    md.history = d.history;
    md.bookmark_interval_ns = s->bookmark_ns;
    md.clock.now_fn = kks_store_clock; /* moves at the rate of real time: no subscribe_fn */
    md.clock.user_data = s;
    if ((rc = kctl_memstore_create(&md, &s->ms)) != KCTL_OK) {
        kt_kube_server_stop(s);
        return rc;
    }
    if (d.tls_cert_file || d.tls_key_file || d.tls_client_ca_file) {
#ifdef KT_HAVE_OPENSSL
        SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
        struct sigaction sa;
        if (!(s->ssl_ctx = ctx)) goto nomem;
        if (!d.tls_cert_file || !d.tls_key_file || SSL_CTX_use_certificate_chain_file(ctx, d.tls_cert_file) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, d.tls_key_file, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1 ||
            (d.tls_client_ca_file && SSL_CTX_load_verify_locations(ctx, d.tls_client_ca_file, NULL) != 1)) {
            ERR_clear_error();
            kt_kube_server_stop(s);
            return KCTL_ERR_INVALID_ARG;
        }
        if (d.tls_client_ca_file) SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        /* OpenSSL writes with write(2): a peer gone mid-write must not kill the process */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &sa, NULL);
#else
        kt_kube_server_stop(s);
        return KCTL_ERR_INVALID_ARG;
#endif
    }
    if (pipe(s->wake) != 0 || (s->lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0) goto io;
    fcntl(s->wake[0], F_SETFD, FD_CLOEXEC);
    fcntl(s->wake[1], F_SETFD, FD_CLOEXEC);
    fcntl(s->lfd, F_SETFD, FD_CLOEXEC);
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(d.port);
    if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->lfd, 128) != 0 ||
        getsockname(s->lfd, (struct sockaddr *)&a, &al) != 0)
        goto io;
    s->port = ntohs(a.sin_port);
    snprintf(s->url, sizeof s->url, "%s://127.0.0.1:%u", s->ssl_ctx ? "https" : "http", (unsigned)s->port);
    if (pthread_create(&s->acceptor, NULL, kks_accept_main, s) != 0) goto io;
    *out = s;
    return KCTL_OK;
io:
    kt_kube_server_stop(s);
    return KCTL_ERR_IO;
nomem:
    kt_kube_server_stop(s);
    return KCTL_ERR_NOMEM;
}

void kt_kube_server_stop(kt_kube_server *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    kks_drop_all(s);
    pthread_mutex_unlock(&s->mu);
    if (s->port) { /* the acceptor runs */
        if (write(s->wake[1], "x", 1) < 0) {}
        pthread_join(s->acceptor, NULL);
    }
    pthread_mutex_lock(&s->mu);
    kks_drop_all(s); /* any accepted after the first */
    pthread_mutex_unlock(&s->mu);
    kks_reap(s, true);
    if (s->lfd >= 0) close(s->lfd);
    if (s->wake[0] >= 0) close(s->wake[0]);
    if (s->wake[1] >= 0) close(s->wake[1]);
    if (s->ms) kctl_memstore_destroy(s->ms);
#ifdef KT_HAVE_OPENSSL
    if (s->ssl_ctx) SSL_CTX_free((SSL_CTX *)s->ssl_ctx);
#endif
    kks_free_res(s);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->clock_mu);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const char *kt_kube_server_url(const kt_kube_server *s) { return s ? s->url : ""; }
uint16_t kt_kube_server_port(const kt_kube_server *s) { return s ? s->port : 0; }
kctl_memstore *kt_kube_server_memstore(kt_kube_server *s) { return s ? s->ms : NULL; }
kctl_transport kt_kube_server_transport(kt_kube_server *s) { return kctl_memstore_transport(s ? s->ms : NULL); }

void kt_kube_server_break_watches(kt_kube_server *s) {
    pthread_mutex_lock(&s->mu);
    s->break_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void kt_kube_server_bookmark_now(kt_kube_server *s) {
    pthread_mutex_lock(&s->clock_mu);
    s->clock_skew += s->bookmark_ns; /* every watch has been quiet for a period now */
    pthread_mutex_unlock(&s->clock_mu);
}

void kt_kube_server_end_watches(kt_kube_server *s) {
    pthread_mutex_lock(&s->mu);
    s->end_gen++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void kt_kube_server_expire_history(kt_kube_server *s) {
    uint64_t rev = kctl_memstore_revision(s->ms);
    kctl_memstore_compact(s->ms, rev);
    pthread_mutex_lock(&s->mu);
    s->continue_floor = rev;
    pthread_mutex_unlock(&s->mu);
}

void kt_kube_server_throttle(kt_kube_server *s, uint32_t n, int http_code, uint32_t retry_after_s) {
    pthread_mutex_lock(&s->mu);
    s->throttle_n = n;
    s->throttle_code = http_code == 503 ? 503 : 429;
    s->throttle_retry = retry_after_s;
    pthread_mutex_unlock(&s->mu);
}

void kt_kube_server_stall(kt_kube_server *s, bool on) {
    pthread_mutex_lock(&s->mu);
    s->stalled = on;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void kt_kube_server_restart(kt_kube_server *s) {
    pthread_mutex_lock(&s->mu);
    kks_drop_all(s);
    pthread_mutex_unlock(&s->mu);
    kctl_memstore_compact(s->ms, kctl_memstore_revision(s->ms));
}

void kt_kube_server_counters_get(kt_kube_server *s, kt_kube_server_counters *out) {
    pthread_mutex_lock(&s->mu);
    *out = s->ctr;
    pthread_mutex_unlock(&s->mu);
}
