/* test_kube_server.c - the test API server (tests/kube_server.h): its
   bytes against the captured ones (tests/wire/k8s-apiserver-captures.md,
   #NN) through a raw HTTP client of this file, its faults, bad input, and
   the cross-checks by clients no one here wrote: kubectl (the one on PATH,
   and Debian's 1.20 from build/kubernetes-client or KT_KUBECTL_120) and the
   official Python client (Debian's python3-kubernetes under /usr/bin/python3),
   each run as a child process against a server started here on a free port. */
#include "kube.h"
#include "kube_server.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#define KTS_WAIT_MS 15000 /* the most any read here waits: a hung server fails the test, never the run */

/* ------------------------------------------------------- a raw HTTP client */
typedef struct kts_conn {
    int fd;
    char buf[1 << 16];
    size_t len;
} kts_conn;

typedef struct kts_resp {
    int code;
    char head[8192];  /* the header lines, as received */
    char *body;       /* de-chunked, NUL-terminated (malloc) */
    size_t body_len;
    size_t chunks[256]; /* chunk sizes of a chunked body, in order */
    size_t nchunks;
    bool chunked, terminated; /* chunked: ended by the 0-size chunk */
} kts_resp;

static void kts_resp_free(kts_resp *r) {
    free(r->body);
    memset(r, 0, sizeof *r);
}

static int kts_connect(uint16_t port, kts_conn *c) {
    struct sockaddr_in a;
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static void kts_close(kts_conn *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

static bool kts_send_raw(kts_conn *c, const char *p, size_t n) {
    while (n) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

static bool kts_request(kts_conn *c, const char *method, const char *target, const char *ctype, const char *body) {
    char head[8192];
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: kt/1.0\r\nAccept: application/json\r\n", method,
                     target);
    if (body) n += snprintf(head + n, sizeof head - (size_t)n, "Content-Type: %s\r\nContent-Length: %zu\r\n", ctype, strlen(body));
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    return kts_send_raw(c, head, (size_t)n) && (!body || kts_send_raw(c, body, strlen(body)));
}

/* Read more (waiting at most ms); 1 read, 0 closed, -1 timeout or error. */
static int kts_more(kts_conn *c, int ms) {
    struct pollfd p;
    ssize_t k;
    if (c->len >= sizeof c->buf - 1) return -1;
    p.fd = c->fd;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, ms) <= 0) return -1;
    k = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
    if (k < 0) return -1;
    if (k == 0) return 0;
    c->len += (size_t)k;
    c->buf[c->len] = 0;
    return 1;
}

static void kts_eat(kts_conn *c, size_t n) {
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
    c->buf[c->len] = 0;
}

/* Read a response's head. false on a timeout or a close before it. */
static bool kts_read_head(kts_conn *c, kts_resp *r) {
    char *end;
    size_t hl;
    memset(r, 0, sizeof *r);
    while (!(end = strstr(c->buf, "\r\n\r\n")))
        if (kts_more(c, KTS_WAIT_MS) <= 0) return false;
    hl = (size_t)(end - c->buf) + 4;
    if (sscanf(c->buf, "HTTP/1.1 %d", &r->code) != 1) return false;
    snprintf(r->head, sizeof r->head, "%.*s", (int)hl, c->buf);
    r->chunked = strstr(r->head, "Transfer-Encoding: chunked\r\n") != NULL;
    kts_eat(c, hl);
    return true;
}

static void kts_body_add(kts_resp *r, const char *p, size_t n) {
    char *b = (char *)realloc(r->body, r->body_len + n + 1);
    if (!b) return;
    r->body = b;
    memcpy(r->body + r->body_len, p, n);
    r->body_len += n;
    r->body[r->body_len] = 0;
}

/* The next chunk of a chunked body into r: 1 a chunk, 0 the terminator,
   -1 the stream broke (closed or timed out before a whole chunk). */
static int kts_next_chunk(kts_conn *c, kts_resp *r, int ms) {
    char *crlf;
    size_t n;
    while (!(crlf = strstr(c->buf, "\r\n")))
        if (kts_more(c, ms) <= 0) return -1;
    n = (size_t)strtoul(c->buf, NULL, 16);
    kts_eat(c, (size_t)(crlf - c->buf) + 2);
    while (c->len < n + 2)
        if (kts_more(c, ms) <= 0) return -1;
    if (n == 0) {
        kts_eat(c, 2);
        r->terminated = true;
        return 0;
    }
    kts_body_add(r, c->buf, n);
    if (r->nchunks < sizeof r->chunks / sizeof r->chunks[0]) r->chunks[r->nchunks++] = n;
    kts_eat(c, n + 2);
    return 1;
}

/* A whole response (a chunked one to its end or break). */
static bool kts_read_resp(kts_conn *c, kts_resp *r) {
    if (!kts_read_head(c, r)) return false;
    if (r->chunked) {
        while (kts_next_chunk(c, r, KTS_WAIT_MS) == 1) {}
        if (!r->body) kts_body_add(r, "", 0);
        return true;
    } else {
        const char *cl = strstr(r->head, "Content-Length: ");
        size_t n = cl ? (size_t)strtoul(cl + 16, NULL, 10) : 0;
        while (c->len < n)
            if (kts_more(c, KTS_WAIT_MS) <= 0) return false;
        kts_body_add(r, c->buf, n);
        if (!r->body) kts_body_add(r, "", 0);
        kts_eat(c, n);
        return true;
    }
}

/* One request on a connection of its own; the response in r. */
static bool kts_do(uint16_t port, const char *method, const char *target, const char *ctype, const char *body, kts_resp *r) {
    kts_conn *c = (kts_conn *)malloc(sizeof *c);
    bool ok;
    memset(r, 0, sizeof *r);
    if (!c) return false;
    ok = kts_connect(port, c) == 0 && kts_request(c, method, target, ctype, body) && kts_read_resp(c, r);
    kts_close(c);
    free(c);
    return ok;
}

#define KTS_JSON "application/json"
#define KTS_CM "/api/v1/namespaces/default/configmaps"
#define KTS_DC "/apis/edge.kctl.io/v1/namespaces/default/deviceconfigs"

static kt_kube_server *kts_start(uint64_t bookmark_ns, uint32_t history) {
    kt_kube_server_desc d;
    kt_kube_server *s = NULL;
    memset(&d, 0, sizeof d);
    d.bookmark_period_ns = bookmark_ns;
    d.history = history;
    KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_OK);
    return s;
}

static const kctl_resource kts_cm_res = { "", "v1", "configmaps", "default" };
static const kctl_resource kts_dc_res = { "edge.kctl.io", "v1", "deviceconfigs", "default" };

static void kts_put_cm(kt_kube_server *s, const char *name, const char *labels) {
    char doc[512];
    kctl_memstore *ms = kt_kube_server_memstore(s);
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"%s%s%s},\"data\":{\"k\":\"%s\"}}", name,
             labels ? ",\"labels\":{" : "", labels ? labels : "", labels ? "}" : "", name);
    KT_EQ_INT(kctl_memstore_apply(ms, &kts_cm_res, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
}

static int kts_count(const char *hay, const char *needle) {
    int n = 0;
    const char *p = hay;
    while (p && (p = strstr(p, needle))) n++, p++;
    return n;
}

/* ----------------------------------------------------------- wire tests */
static void kts_discovery(void) {
    kt_kube_server *s = kts_start(0, 0);
    uint16_t port = kt_kube_server_port(s);
    kts_resp r;
    char want[256];
    KT_CHECK(port != 0);
    snprintf(want, sizeof want, "http://127.0.0.1:%u", (unsigned)port);
    KT_EQ_STR(kt_kube_server_url(s), want);
    KT_CHECK(kts_do(port, "GET", "/api?timeout=32s", NULL, NULL, &r));
    KT_EQ_INT(r.code, 200);
    KT_CHECK(strncmp(r.body, "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"]", 39) == 0);
    KT_CHECK(strstr(r.head, "Content-Type: application/json\r\n") && strstr(r.head, "Audit-Id: ") &&
             strstr(r.head, "Cache-Control: no-cache, private\r\n"));
    KT_CHECK(r.body_len && r.body[r.body_len - 1] == '\n'); /* every document ends in a newline (#11) */
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/apis", NULL, NULL, &r));
    KT_CHECK(strstr(r.body, "{\"name\":\"edge.kctl.io\",\"versions\":[{\"groupVersion\":\"edge.kctl.io/v1\",\"version\":\"v1\"}],"
                            "\"preferredVersion\":{\"groupVersion\":\"edge.kctl.io/v1\",\"version\":\"v1\"}}") != NULL);
    KT_CHECK(strstr(r.body, "\"name\":\"coordination.k8s.io\"") != NULL);
    KT_CHECK(strstr(r.body, "\"name\":\"\"") == NULL); /* the core group is not a group */
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/api/v1", NULL, NULL, &r));
    KT_CHECK(strstr(r.body, "{\"name\":\"configmaps\",\"singularName\":\"configmap\",\"namespaced\":true,\"kind\":\"ConfigMap\","
                            "\"verbs\":[\"create\",\"delete\",\"get\",\"list\",\"patch\",\"update\",\"watch\"],\"shortNames\":[\"cm\"]}") != NULL);
    KT_CHECK(strstr(r.body, "{\"name\":\"namespaces\",\"singularName\":\"namespace\",\"namespaced\":false,") != NULL);
    KT_CHECK(strstr(r.body, "{\"name\":\"namespaces/status\",") != NULL);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/apis/edge.kctl.io/v1", NULL, NULL, &r));
    KT_CHECK(strstr(r.body, "\"groupVersion\":\"edge.kctl.io/v1\"") && strstr(r.body, "\"kind\":\"DeviceConfig\"") &&
             strstr(r.body, "\"name\":\"deviceconfigs/status\"") && strstr(r.body, "\"shortNames\":[\"dc\"]"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/apis/edge.kctl.io", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strncmp(r.body, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"edge.kctl.io\"", 57) == 0);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/version?timeout=5s", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\n  \"major\": \"1\",\n") != NULL); /* indented, as always (#6) */
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/openapi/v2?timeout=32s", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && r.body_len == 0 && strstr(r.head, "Content-Type: application/octet-stream\r\n"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/apis/nope.io/v1", NULL, NULL, &r));
    KT_EQ_INT(r.code, 404);
    KT_EQ_STR(r.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the server could not "
                      "find the requested resource\",\"reason\":\"NotFound\",\"details\":{},\"code\":404}\n"); /* #30 */
    kts_resp_free(&r);
    kt_kube_server_stop(s);
}

/* The refusals, shaped as #18-#22, #26, #30, #41 for a core and a grouped resource. */
static void kts_status_bodies(void) {
    kt_kube_server *s = kts_start(0, 0);
    uint16_t port = kt_kube_server_port(s);
    kts_resp r;
    char body[1024];
    kts_put_cm(s, "a", NULL);
    KT_CHECK(kts_do(port, "GET", KTS_CM "/nope", NULL, NULL, &r));
    KT_EQ_INT(r.code, 404);
    KT_EQ_STR(r.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"configmaps \\\"nope\\\" "
                      "not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nope\",\"kind\":\"configmaps\"},\"code\":404}\n");
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_DC "/nope", NULL, NULL, &r));
    KT_EQ_STR(r.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"deviceconfigs.edge.kctl.io "
                      "\\\"nope\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"nope\",\"group\":\"edge.kctl.io\","
                      "\"kind\":\"deviceconfigs\"},\"code\":404}\n"); /* #20 */
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "POST", KTS_DC, KTS_JSON, "{\"apiVersion\":\"edge.kctl.io/v1\",\"kind\":\"DeviceConfig\",\"metadata\":{\"name\":\"d1\"}}", &r));
    KT_EQ_INT(r.code, 201);
    KT_CHECK(strncmp(r.body, "{\"kind\":\"DeviceConfig\",\"apiVersion\":\"edge.kctl.io/v1\",\"metadata\":{\"name\":\"d1\",\"namespace\":\"default\"", 87) == 0);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "POST", KTS_DC, KTS_JSON, "{\"metadata\":{\"name\":\"d1\"}}", &r));
    KT_EQ_INT(r.code, 409);
    KT_EQ_STR(r.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"deviceconfigs.edge.kctl.io "
                      "\\\"d1\\\" already exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"d1\",\"group\":\"edge.kctl.io\","
                      "\"kind\":\"deviceconfigs\"},\"code\":409}\n"); /* #19 */
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PUT", KTS_DC "/d1", KTS_JSON, "{\"metadata\":{\"name\":\"d1\",\"resourceVersion\":\"1\"},\"spec\":{\"x\":1}}", &r));
    KT_EQ_INT(r.code, 409);
    KT_EQ_STR(r.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"Operation cannot be "
                      "fulfilled on deviceconfigs.edge.kctl.io \\\"d1\\\": the object has been modified; please apply your changes to the "
                      "latest version and try again\",\"reason\":\"Conflict\",\"details\":{\"name\":\"d1\",\"group\":\"edge.kctl.io\","
                      "\"kind\":\"deviceconfigs\"},\"code\":409}\n"); /* #18 */
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "POST", KTS_DC, KTS_JSON, "{\"metadata\":{}}", &r));
    KT_EQ_INT(r.code, 422); /* #22 */
    KT_CHECK(strstr(r.body, "\"reason\":\"Invalid\"") && strstr(r.body, "\"field\":\"metadata.name\"") &&
             strstr(r.body, "\"reason\":\"FieldValueRequired\"") && strstr(r.body, "\"code\":422}\n"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "POST", KTS_DC, KTS_JSON, "{\"apiVersion\":\"edge.kctl.io/v1\",\"kind\":\"Fischer\",\"metadata\":{\"name\":\"w\"}}", &r));
    KT_EQ_INT(r.code, 400); /* #26: another kind */
    KT_CHECK(strstr(r.body, "\"reason\":\"BadRequest\"") && strstr(r.body, "cannot be handled as a DeviceConfig"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "POST", KTS_DC, KTS_JSON, "{\"apiVersion\":\"edge.kctl.io/v1\",\"kind\":\"DeviceConfig\",\"metadata\":{\"name\":", &r));
    KT_EQ_INT(r.code, 400); /* #28: malformed JSON */
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PUT", KTS_CM "/a/status", KTS_JSON, "{\"metadata\":{\"name\":\"a\"}}", &r));
    KT_EQ_INT(r.code, 404); /* #30: configmaps have no status subresource */
    KT_CHECK(strstr(r.body, "\"details\":{}") != NULL);
    kts_resp_free(&r);
    snprintf(body, sizeof body, "{\"preconditions\":{\"resourceVersion\":\"999\"}}");
    KT_CHECK(kts_do(port, "DELETE", KTS_CM "/a", KTS_JSON, body, &r));
    KT_EQ_INT(r.code, 409); /* #41 */
    KT_CHECK(strstr(r.body, "\"reason\":\"Conflict\"") && strstr(r.body, "the ResourceVersion in the precondition (999) does not match"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PATCH", KTS_CM "/a", "application/json-patch+json", "[]", &r));
    KT_EQ_INT(r.code, 415);
    KT_CHECK(strstr(r.body, "\"reason\":\"UnsupportedMediaType\"") != NULL);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "DELETE", KTS_CM, NULL, NULL, &r));
    KT_EQ_INT(r.code, 405); /* no deletecollection */
    kts_resp_free(&r);
    kt_kube_server_stop(s);
}

static void kts_crud(void) {
    kt_kube_server *s = kts_start(0, 0);
    uint16_t port = kt_kube_server_port(s);
    kctl_memstore *ms = kt_kube_server_memstore(s);
    kctl_obj *o = NULL;
    kts_resp r;
    char uid[64], path[256];
    /* the URL's namespace goes into a document that names none; creationTimestamp null is fine (kubectl create) */
    KT_CHECK(kts_do(port, "POST", KTS_CM "?fieldManager=kubectl-create", KTS_JSON,
                    "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"creationTimestamp\":null,\"name\":\"made\"},\"data\":{\"a\":\"b\"}}", &r));
    KT_EQ_INT(r.code, 201);
    kts_resp_free(&r);
    KT_EQ_INT(kctl_memstore_get(ms, &kts_cm_res, "made", &o, NULL), KCTL_OK);
    KT_EQ_STR(kctl_obj_namespace(o), "default");
    KT_CHECK(strstr(kctl_obj_json(o, NULL), "\"creationTimestamp\":\"20") != NULL);
    snprintf(uid, sizeof uid, "%s", kctl_obj_uid(o));
    kctl_obj_unref(o);
    /* a document of another namespace is refused */
    KT_CHECK(kts_do(port, "POST", KTS_CM, KTS_JSON, "{\"metadata\":{\"name\":\"x\",\"namespace\":\"other\"}}", &r));
    KT_EQ_INT(r.code, 400);
    kts_resp_free(&r);
    /* strategic merge patch as kubectl apply sends it, with directives */
    KT_CHECK(kts_do(port, "PATCH", KTS_CM "/made?fieldManager=kubectl-client-side-apply", "application/strategic-merge-patch+json",
                    "{\"data\":{\"a\":null,\"b\":\"2\"},\"metadata\":{\"labels\":{\"t\":\"x\"}},\"$retainKeys\":[\"data\"]}", &r));
    KT_EQ_INT(r.code, 200);
    KT_CHECK(strstr(r.body, "\"data\":{\"b\":\"2\"}") && strstr(r.body, "\"labels\":{\"t\":\"x\"}") && !strstr(r.body, "$retainKeys"));
    kts_resp_free(&r);
    /* a DeviceConfig: spec changes bump generation; /status writes only the status */
    KT_CHECK(kts_do(port, "POST", KTS_DC, KTS_JSON, "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"mode\":\"a\"},\"status\":{\"x\":1}}", &r));
    KT_CHECK(r.code == 201 && strstr(r.body, "\"generation\":1") && !strstr(r.body, "\"status\""));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PATCH", KTS_DC "/d", "application/merge-patch+json", "{\"spec\":{\"mode\":\"b\"}}", &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"generation\":2") && strstr(r.body, "\"mode\":\"b\""));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PATCH", KTS_DC "/d/status", "application/merge-patch+json", "{\"status\":{\"observedGeneration\":2},\"spec\":{\"mode\":\"z\"}}", &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"observedGeneration\":2") && strstr(r.body, "\"mode\":\"b\"") && strstr(r.body, "\"generation\":2"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_DC "/d", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"resourceVersion\":\"5\""));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PUT", KTS_DC "/d/status", KTS_JSON, "{\"metadata\":{\"name\":\"d\",\"resourceVersion\":\"5\"},\"status\":{\"observedGeneration\":3}}", &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"observedGeneration\":3"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PUT", KTS_DC "/e", KTS_JSON, "{\"metadata\":{\"name\":\"d\"}}", &r));
    KT_EQ_INT(r.code, 400); /* the name must be the URL's */
    kts_resp_free(&r);
    /* a plain delete: the Success Status with the uid (#42) */
    snprintf(path, sizeof path, "{\"preconditions\":{\"uid\":\"%s\"},\"propagationPolicy\":\"Background\"}", uid);
    KT_CHECK(kts_do(port, "DELETE", KTS_CM "/made", KTS_JSON, path, &r));
    KT_EQ_INT(r.code, 200);
    snprintf(path, sizeof path, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\",\"details\":{\"name\":"
             "\"made\",\"kind\":\"configmaps\",\"uid\":\"%s\"}}\n", uid);
    KT_EQ_STR(r.body, path);
    kts_resp_free(&r);
    /* finalizers: 200 with the object (#44), again the same (#45); the patch removing it answers the object (#47) */
    KT_CHECK(kts_do(port, "POST", KTS_DC, KTS_JSON, "{\"metadata\":{\"name\":\"fin\",\"finalizers\":[\"example.com/hold\"]}}", &r));
    KT_EQ_INT(r.code, 201);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "DELETE", KTS_DC "/fin", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "{\"kind\":\"DeviceConfig\",") == r.body && strstr(r.body, "\"deletionTimestamp\":") &&
             strstr(r.body, "\"deletionGracePeriodSeconds\":0"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "DELETE", KTS_DC "/fin", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"finalizers\":[\"example.com/hold\"]"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PATCH", KTS_DC "/fin", "application/merge-patch+json", "{\"metadata\":{\"finalizers\":null}}", &r));
    KT_CHECK(r.code == 200 && !strstr(r.body, "finalizers"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_DC "/fin", NULL, NULL, &r));
    KT_EQ_INT(r.code, 404);
    kts_resp_free(&r);
    /* cluster-scoped: namespaces, and their status */
    KT_CHECK(kts_do(port, "POST", "/api/v1/namespaces", KTS_JSON, "{\"metadata\":{\"name\":\"prod\"}}", &r));
    KT_EQ_INT(r.code, 201);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "PATCH", "/api/v1/namespaces/prod/status", "application/merge-patch+json", "{\"status\":{\"phase\":\"Active\"}}", &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"phase\":\"Active\"") && strstr(r.body, "{\"kind\":\"Namespace\",\"apiVersion\":\"v1\","));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/api/v1/namespaces", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",") && strstr(r.body, "\"name\":\"prod\""));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/api/v1/configmaps/x", NULL, NULL, &r));
    KT_EQ_INT(r.code, 404); /* a namespaced object needs its namespace */
    kts_resp_free(&r);
    kt_kube_server_stop(s);
}

static void kts_list_paging(void) {
    kt_kube_server *s = kts_start(0, 0);
    uint16_t port = kt_kube_server_port(s);
    kts_resp r;
    char target[2048], tok[1024], rv[32];
    const char *p;
    int i;
    for (i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        kts_put_cm(s, name, i % 2 ? "\"app\":\"odd\"" : "\"app\":\"even\"");
    }
    KT_CHECK(kts_do(port, "GET", KTS_CM "?limit=2", NULL, NULL, &r));
    KT_EQ_INT(r.code, 200);
    /* #14: kind, apiVersion, metadata with continue and remainingItemCount, items without kind */
    KT_CHECK(strncmp(r.body, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\",\"continue\":\"", 88) == 0);
    KT_CHECK(strstr(r.body, "\",\"remainingItemCount\":3},\"items\":[{\"metadata\":{\"name\":\"c0\"") != NULL);
    KT_EQ_INT(kts_count(r.body, "\"kind\":"), 1);
    p = strstr(r.body, "\"continue\":\"") + 12;
    snprintf(tok, sizeof tok, "%.*s", (int)(strchr(p, '"') - p), p);
    /* the token decodes as an API server's does: {"v":"meta.k8s.io/v1","rv":5,"start":"default/c1\u0000",...} */
    KT_CHECK(strncmp(tok, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NSwic3RhcnQiOiJkZWZhdWx0L2MxXHUwMDAwIi", 72) == 0);
    kts_resp_free(&r);
    kts_put_cm(s, "c9", NULL); /* a write between pages: the pages stay one snapshot */
    snprintf(target, sizeof target, KTS_CM "?limit=2&continue=%s", tok);
    KT_CHECK(kts_do(port, "GET", target, NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"resourceVersion\":\"5\"") && strstr(r.body, "\"remainingItemCount\":1}") &&
             strstr(r.body, "\"name\":\"c2\"") && strstr(r.body, "\"name\":\"c3\""));
    p = strstr(r.body, "\"continue\":\"") + 12;
    snprintf(tok, sizeof tok, "%.*s", (int)(strchr(p, '"') - p), p);
    kts_resp_free(&r);
    snprintf(target, sizeof target, KTS_CM "?limit=2&continue=%s", tok);
    KT_CHECK(kts_do(port, "GET", target, NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"name\":\"c4\"") && !strstr(r.body, "c9") && !strstr(r.body, "\"continue\"") &&
             !strstr(r.body, "remainingItemCount"));
    kts_resp_free(&r);
    /* resourceVersion=0 is the watch cache, which does not page */
    KT_CHECK(kts_do(port, "GET", KTS_CM "?limit=2&resourceVersion=0", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && kts_count(r.body, "\"name\":") == 6 && !strstr(r.body, "\"continue\""));
    kts_resp_free(&r);
    /* selectors; an empty list still has items [] */
    KT_CHECK(kts_do(port, "GET", KTS_CM "?labelSelector=app%3Dodd", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && kts_count(r.body, "\"name\":") == 2);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_CM "?fieldSelector=metadata.name%3Dc4", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && kts_count(r.body, "\"name\":") == 1 && strstr(r.body, "\"name\":\"c4\""));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/api/v1/namespaces/none/configmaps", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"items\":[]}"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_CM "?labelSelector=app%3D%3D%3Dx", NULL, NULL, &r));
    KT_EQ_INT(r.code, 400);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", "/api/v1/configmaps?limit=500", NULL, NULL, &r)); /* all namespaces (-A) */
    KT_CHECK(r.code == 200 && kts_count(r.body, "\"name\":") == 6);
    kts_resp_free(&r);
    /* an expired token: 410 with a fresh token from where it was (#17) */
    KT_CHECK(kts_do(port, "GET", KTS_CM "?limit=2", NULL, NULL, &r));
    p = strstr(r.body, "\"continue\":\"") + 12;
    snprintf(tok, sizeof tok, "%.*s", (int)(strchr(p, '"') - p), p);
    kts_resp_free(&r);
    kt_kube_server_expire_history(s);
    snprintf(target, sizeof target, KTS_CM "?limit=2&continue=%s", tok);
    KT_CHECK(kts_do(port, "GET", target, NULL, NULL, &r));
    KT_EQ_INT(r.code, 410);
    KT_CHECK(strncmp(r.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEs", 95) == 0);
    KT_CHECK(strstr(r.body, "\"status\":\"Failure\",\"message\":\"The provided continue parameter is too old to display a consistent list result.") &&
             strstr(r.body, "\"reason\":\"Expired\",\"code\":410}\n"));
    /* the fresh token goes on, inconsistently, from the same place */
    p = strstr(r.body, "\"continue\":\"") + 12;
    snprintf(tok, sizeof tok, "%.*s", (int)(strchr(p, '"') - p), p);
    kts_resp_free(&r);
    snprintf(target, sizeof target, KTS_CM "?limit=10&continue=%s", tok);
    KT_CHECK(kts_do(port, "GET", target, NULL, NULL, &r));
    KT_CHECK(r.code == 200 && !strstr(r.body, "\"name\":\"c1\"") && strstr(r.body, "\"name\":\"c2\"") && strstr(r.body, "\"name\":\"c9\""));
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_CM "?limit=2&continue=%25%25", NULL, NULL, &r));
    KT_EQ_INT(r.code, 400);
    kts_resp_free(&r);
    /* resourceVersion: too large (504, as the store answers a watch), Exact and older (#54) */
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)kctl_memstore_revision(kt_kube_server_memstore(s)) + 5);
    snprintf(target, sizeof target, KTS_CM "?resourceVersion=%s", rv);
    KT_CHECK(kts_do(port, "GET", target, NULL, NULL, &r));
    KT_EQ_INT(r.code, 504);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_CM "?resourceVersion=2&resourceVersionMatch=Exact", NULL, NULL, &r));
    KT_EQ_INT(r.code, 410);
    KT_EQ_STR(r.body, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"The resourceVersion for "
                      "the provided list is too old.\",\"reason\":\"Expired\",\"code\":410}\n");
    kts_resp_free(&r);
    kt_kube_server_stop(s);
}

/* Read chunks until the body holds needle (or the stream ends). */
static bool kts_until(kts_conn *c, kts_resp *r, const char *needle) {
    while (!(r->body && strstr(r->body, needle)))
        if (kts_next_chunk(c, r, KTS_WAIT_MS) != 1) return false;
    return true;
}

static void kts_watch_stream(void) {
    kt_kube_server *s = kts_start(UINT64_C(20000000), 0); /* bookmarks after 20 ms of quiet */
    uint16_t port = kt_kube_server_port(s);
    kctl_memstore *ms = kt_kube_server_memstore(s);
    kts_conn *c = (kts_conn *)malloc(sizeof *c);
    kts_resp r;
    char target[256], line[256];
    size_t i, total = 0;
    int k;
    for (k = 0; k < 20; k++) {
        char name[16];
        snprintf(name, sizeof name, "obj%02d", k);
        kts_put_cm(s, name, "\"app\":\"demo\"");
    }
    /* resourceVersion=0: an ADDED per object, packed in 0x800-byte chunks cut anywhere (#36), then the end at timeoutSeconds */
    KT_CHECK(kts_connect(port, c) == 0);
    KT_CHECK(kts_request(c, "GET", KTS_CM "?watch=1&resourceVersion=0&timeoutSeconds=1", NULL, NULL));
    KT_CHECK(kts_read_resp(c, &r));
    KT_CHECK(r.code == 200 && r.chunked && r.terminated);
    KT_CHECK(strstr(r.head, "Content-Type: application/json\r\n") != NULL);
    KT_EQ_INT(kts_count(r.body, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"obj"), 20);
    KT_EQ_INT(kts_count(r.body, "}\n"), 20);
    KT_EQ_INT(kts_count(r.body, "BOOKMARK"), 0); /* none unless asked */
    KT_CHECK(r.nchunks >= 2);
    for (i = 0; i < r.nchunks; i++) {
        if (i + 1 < r.nchunks) KT_EQ_U64(r.chunks[i], 2048);
        total += r.chunks[i];
    }
    KT_EQ_U64(total, r.body_len);
    kts_resp_free(&r);
    /* from an old version: the history replayed, packed the same way (#38) */
    KT_CHECK(kts_request(c, "GET", KTS_CM "?watch=1&resourceVersion=1&timeoutSeconds=1", NULL, NULL));
    KT_CHECK(kts_read_resp(c, &r));
    KT_CHECK(r.code == 200 && r.terminated && r.nchunks >= 2 && r.chunks[0] == 2048);
    KT_EQ_INT(kts_count(r.body, "{\"type\":\"ADDED\""), 19);
    kts_resp_free(&r);
    /* the same connection again (keep-alive): from a version, live events one per chunk, bookmarks when asked */
    snprintf(target, sizeof target, KTS_CM "?watch=true&resourceVersion=%llu&allowWatchBookmarks=true&timeoutSeconds=30",
             (unsigned long long)kctl_memstore_revision(ms));
    KT_CHECK(kts_request(c, "GET", target, NULL, NULL));
    KT_CHECK(kts_read_head(c, &r));
    KT_EQ_INT(r.code, 200);
    /* a bookmark: the kind's skeleton at the store's version (#35, #51) */
    KT_CHECK(kts_until(c, &r, "\n"));
    snprintf(line, sizeof line, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
             "\"20\",\"creationTimestamp\":null}}}\n");
    KT_EQ_STR(r.body, line);
    kts_put_cm(s, "live", NULL);
    KT_CHECK(kts_until(c, &r, "\"type\":\"ADDED\""));
    KT_CHECK(kctl_memstore_delete(ms, &kts_cm_res, "live", NULL) == KCTL_OK);
    KT_CHECK(kts_until(c, &r, "\"type\":\"DELETED\""));
    /* each live event alone in its chunk, ending it */
    for (i = 0, total = 0; i < r.nchunks; total += r.chunks[i], i++) {
        KT_CHECK(r.body[total + r.chunks[i] - 1] == '\n');
        KT_CHECK(memchr(r.body + total, '\n', r.chunks[i] - 1) == NULL);
    }
    KT_CHECK(strstr(r.body, "{\"type\":\"DELETED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"live\","
                            "\"namespace\":\"default\",\"uid\":") != NULL);
    KT_CHECK(strstr(r.body, "\"resourceVersion\":\"22\"") != NULL); /* DELETED at the deletion's version (#35) */
    kts_resp_free(&r);
    kts_close(c);
    /* a label selector: leaving it is DELETED with the old labels at the new version; coming back ADDED (#40) */
    KT_CHECK(kts_connect(port, c) == 0);
    snprintf(target, sizeof target, KTS_CM "?watch=1&labelSelector=app%%3Ddemo&resourceVersion=%llu&timeoutSeconds=30",
             (unsigned long long)kctl_memstore_revision(ms));
    KT_CHECK(kts_request(c, "GET", target, NULL, NULL));
    KT_CHECK(kts_read_head(c, &r));
    KT_CHECK(kctl_memstore_apply(ms, &kts_cm_res, "{\"metadata\":{\"name\":\"obj01\",\"namespace\":\"default\",\"labels\":{\"app\":\"other\"}}}",
                                 KCTL_NTS, NULL, NULL) == KCTL_OK);
    KT_CHECK(kts_until(c, &r, "\"type\":\"DELETED\""));
    KT_CHECK(strstr(r.body, "\"labels\":{\"app\":\"demo\"}") && strstr(r.body, "\"resourceVersion\":\"23\""));
    kts_put_cm(s, "obj01", "\"app\":\"demo\"");
    KT_CHECK(kts_until(c, &r, "\"type\":\"ADDED\""));
    kts_resp_free(&r);
    kts_close(c);
    /* Python's capital True and a watch without any version (#37) */
    KT_CHECK(kts_do(port, "GET", KTS_CM "?timeoutSeconds=1&watch=True", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && r.terminated && kts_count(r.body, "\"type\":\"ADDED\"") == 20);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_CM "?watch=maybe", NULL, NULL, &r));
    KT_EQ_INT(r.code, 400);
    kts_resp_free(&r);
    free(c);
    kt_kube_server_stop(s);
}

/* A watch from a version older than the history: HTTP 200, the in-band
   410 and the terminator, byte for byte as #53. */
static void kts_watch_too_old(void) {
    kt_kube_server *s = kts_start(0, 0);
    uint16_t port = kt_kube_server_port(s);
    kts_resp r;
    int i;
    for (i = 0; i < 27; i++) { /* 27 writes, each a change */
        char label[32];
        snprintf(label, sizeof label, "\"x\":\"%d\"", i);
        kts_put_cm(s, i % 2 ? "a" : "b", label);
    }
    kt_kube_server_restart(s); /* a restarted server's watch cache starts now */
    KT_CHECK(kts_do(port, "GET", KTS_CM "?watch=1&resourceVersion=7&timeoutSeconds=2", NULL, NULL, &r));
    KT_EQ_INT(r.code, 200);
    KT_CHECK(r.chunked && r.terminated);
    KT_EQ_U64(r.nchunks, 1);
    KT_EQ_STR(r.body, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
                      "\"message\":\"too old resource version: 7 (27)\",\"reason\":\"Expired\",\"code\":410}}\n");
    KT_EQ_U64(r.chunks[0], 0xaa); /* the same length as the captured chunk */
    kts_resp_free(&r);
    /* "0" is any version: the objects there now, whatever the history (#36) */
    KT_CHECK(kts_do(port, "GET", KTS_CM "?watch=1&resourceVersion=0&timeoutSeconds=1", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && r.terminated && kts_count(r.body, "\"type\":\"ADDED\"") == 2 && !strstr(r.body, "ERROR"));
    kts_resp_free(&r);
    /* from the current version it is fine */
    KT_CHECK(kts_do(port, "GET", KTS_CM "?watch=1&resourceVersion=27&timeoutSeconds=1", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && r.terminated && r.body_len == 0);
    kts_resp_free(&r);
    kt_kube_server_stop(s);
}

/* The server's counters once it counts want watches streaming, or after
   10 s (a watch's handler counts itself closed when it notices its
   connection went, after the client's close returns). */
static void kts_watches_open(kt_kube_server *s, uint32_t want, kt_kube_server_counters *ctr) {
    int i;
    for (i = 0; i < 2000; i++) {
        kt_kube_server_counters_get(s, ctr);
        if (ctr->watches_open == want) return;
        { struct timespec ms5 = { 0, 5000000 }; nanosleep(&ms5, NULL); }
    }
}

static void kts_faults(void) {
    kt_kube_server *s = kts_start(0, 0);
    uint16_t port = kt_kube_server_port(s);
    kctl_memstore *ms = kt_kube_server_memstore(s);
    kts_conn *c = (kts_conn *)malloc(sizeof *c), *c2 = (kts_conn *)malloc(sizeof *c2);
    kt_kube_server_counters ctr;
    kts_resp r;
    kctl_obj *o = NULL;
    kts_put_cm(s, "a", NULL);
    /* break: the stream ends without its terminator */
    KT_CHECK(kts_connect(port, c) == 0);
    KT_CHECK(kts_request(c, "GET", KTS_CM "?watch=1&resourceVersion=1", NULL, NULL));
    KT_CHECK(kts_read_head(c, &r) && r.code == 200);
    kts_watches_open(s, 1, &ctr);
    KT_EQ_INT(ctr.watches_open, 1);
    kt_kube_server_break_watches(s);
    KT_EQ_INT(kts_next_chunk(c, &r, KTS_WAIT_MS), -1);
    KT_CHECK(!r.terminated);
    kts_resp_free(&r);
    kts_close(c);
    /* a bookmark when asked for, on the watches that asked */
    KT_CHECK(kts_connect(port, c) == 0 && kts_connect(port, c2) == 0);
    KT_CHECK(kts_request(c, "GET", KTS_CM "?watch=1&resourceVersion=1&allowWatchBookmarks=true", NULL, NULL));
    KT_CHECK(kts_request(c2, "GET", KTS_CM "?watch=1&resourceVersion=1", NULL, NULL));
    KT_CHECK(kts_read_head(c, &r) && r.code == 200);
    kts_resp_free(&r);
    KT_CHECK(kts_read_head(c2, &r) && r.code == 200);
    kts_resp_free(&r);
    kt_kube_server_bookmark_now(s);
    KT_CHECK(kts_next_chunk(c, &r, KTS_WAIT_MS) == 1 && strstr(r.body, "{\"type\":\"BOOKMARK\"") && strstr(r.body, "\"resourceVersion\":\"1\""));
    kts_resp_free(&r);
    KT_EQ_INT(kts_more(c2, 300), -1);
    kts_close(c);
    kts_close(c2);
    /* end: the terminator, and the connection serves on */
    KT_CHECK(kts_connect(port, c) == 0);
    KT_CHECK(kts_request(c, "GET", KTS_CM "?watch=1&resourceVersion=1", NULL, NULL));
    KT_CHECK(kts_read_head(c, &r) && r.code == 200);
    kts_put_cm(s, "b", NULL);
    KT_CHECK(kts_until(c, &r, "\"name\":\"b\""));
    kt_kube_server_end_watches(s);
    while (kts_next_chunk(c, &r, KTS_WAIT_MS) == 1) {}
    KT_CHECK(r.terminated);
    kts_resp_free(&r);
    KT_CHECK(kts_request(c, "GET", KTS_CM "/a", NULL, NULL) && kts_read_resp(c, &r) && r.code == 200);
    kts_resp_free(&r);
    /* throttle: 429 then 503, Retry-After and details.retryAfterSeconds; then served */
    kt_kube_server_throttle(s, 2, 429, 3);
    KT_CHECK(kts_request(c, "GET", KTS_CM "/a", NULL, NULL) && kts_read_resp(c, &r));
    KT_EQ_INT(r.code, 429);
    KT_CHECK(strstr(r.head, "Retry-After: 3\r\n") && strstr(r.body, "\"reason\":\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":3},\"code\":429}"));
    kts_resp_free(&r);
    KT_CHECK(kts_request(c, "GET", KTS_CM, NULL, NULL) && kts_read_resp(c, &r) && r.code == 429);
    kts_resp_free(&r);
    KT_CHECK(kts_request(c, "GET", KTS_CM "/a", NULL, NULL) && kts_read_resp(c, &r) && r.code == 200);
    kts_resp_free(&r);
    kt_kube_server_throttle(s, 1, 503, 1);
    KT_CHECK(kts_request(c, "GET", KTS_CM "/a", NULL, NULL) && kts_read_resp(c, &r));
    KT_CHECK(r.code == 503 && strstr(r.head, "Retry-After: 1\r\n") && strstr(r.body, "\"reason\":\"ServiceUnavailable\""));
    kts_resp_free(&r);
    /* stall: the request is read and not answered until resumed; a watch is silent */
    KT_CHECK(kts_connect(port, c2) == 0);
    KT_CHECK(kts_request(c2, "GET", KTS_CM "?watch=1&resourceVersion=2", NULL, NULL));
    KT_CHECK(kts_read_head(c2, &r) && r.code == 200);
    kts_resp_free(&r);
    kt_kube_server_stall(s, true);
    kts_put_cm(s, "during", NULL);
    KT_CHECK(kts_request(c, "GET", KTS_CM "/a", NULL, NULL));
    KT_EQ_INT(kts_more(c, 300), -1);  /* nothing comes */
    KT_EQ_INT(kts_more(c2, 300), -1);
    kt_kube_server_stall(s, false);
    KT_CHECK(kts_read_resp(c, &r) && r.code == 200);
    kts_resp_free(&r);
    KT_CHECK(kts_until(c2, &r, "\"name\":\"during\""));
    kts_resp_free(&r);
    /* restart: every connection drops, the objects stay, older versions are 410 */
    kt_kube_server_restart(s);
    KT_EQ_INT(kts_next_chunk(c2, &r, KTS_WAIT_MS), -1);
    kts_resp_free(&r);
    KT_CHECK(kts_more(c, KTS_WAIT_MS) == 0); /* closed */
    kts_close(c);
    kts_close(c2);
    KT_CHECK(kts_do(port, "GET", KTS_CM "/during", NULL, NULL, &r) && r.code == 200);
    kts_resp_free(&r);
    KT_CHECK(kts_do(port, "GET", KTS_CM "?watch=1&resourceVersion=2&timeoutSeconds=1", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "\"type\":\"ERROR\"") && strstr(r.body, "\"code\":410"));
    kts_resp_free(&r);
    KT_EQ_INT(kctl_memstore_get(ms, &kts_cm_res, "b", &o, NULL), KCTL_OK);
    kctl_obj_unref(o);
    kts_watches_open(s, 0, &ctr); /* the dropped watches' handlers may still be ending */
    KT_EQ_U64(ctr.throttled, 3);
    KT_CHECK(ctr.requests[KCTL_VERB_WATCH] == 6 && ctr.requests[KCTL_VERB_LIST] == 1 && ctr.requests[KCTL_VERB_GET] >= 6);
    KT_EQ_U64(ctr.watches_opened, 5);
    KT_EQ_INT(ctr.watches_open, 0);
    free(c);
    free(c2);
    kt_kube_server_stop(s);
}

/* Malformed and oversized requests: 400 or 413 and the connection closes;
   the server serves on. Then random bytes, which must never crash it. */
static void kts_bad_input(void) {
    kt_kube_server_desc d;
    kt_kube_server *s = NULL;
    kts_conn *c = (kts_conn *)malloc(sizeof *c);
    kt_kube_server_counters ctr;
    static const char *const bad[] = {
        "GARBAGE\r\n\r\n",
        "GET /api HTTP/2.0\r\n\r\n",
        "GET /api HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        "GET /api HTTP/1.1\r\nNoColonHere\r\n\r\n",
        "get /api HTTP/1.1\r\n\r\n",
        "GET /api HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "GET /a\x01pi HTTP/1.1\r\n\r\n",
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n",
    };
    kts_resp r;
    size_t i;
    uint64_t seed = 42;
    memset(&d, 0, sizeof d);
    d.max_request_bytes = 100000;
    KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_OK);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        KT_CHECK(kts_connect(kt_kube_server_port(s), c) == 0);
        KT_CHECK(kts_send_raw(c, bad[i], strlen(bad[i])));
        KT_CHECK(kts_read_resp(c, &r));
        KT_CHECK(r.code == (i == 8 ? 413 : 400));
        KT_CHECK(strstr(r.head, "Connection: close\r\n") && strstr(r.body, "\"kind\":\"Status\""));
        kts_resp_free(&r);
        KT_EQ_INT(kts_more(c, KTS_WAIT_MS), 0);
        kts_close(c);
    }
    /* a head that never ends */
    KT_CHECK(kts_connect(kt_kube_server_port(s), c) == 0);
    {
        char junk[4096];
        memset(junk, 'a', sizeof junk);
        memcpy(junk, "GET /", 5);
        for (i = 0; i < 20; i++) kts_send_raw(c, junk, sizeof junk);
    }
    KT_CHECK(kts_read_resp(c, &r) && (r.code == 413 || r.code == 400));
    kts_resp_free(&r);
    kts_close(c);
    /* a chunked request body, and an Expect: 100-continue */
    KT_CHECK(kts_connect(kt_kube_server_port(s), c) == 0);
    {
        const char *req = "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n"
                          "Content-Type: application/json\r\n\r\n";
        KT_CHECK(kts_send_raw(c, req, strlen(req)));
        KT_CHECK(kts_read_head(c, &r) && r.code == 100);
        req = "10\r\n{\"metadata\":{\"na\r\ne\r\nme\":\"chunky\"}}\r\n0\r\n\r\n";
        KT_CHECK(kts_send_raw(c, req, strlen(req)));
        KT_CHECK(kts_read_resp(c, &r) && r.code == 201 && strstr(r.body, "\"name\":\"chunky\""));
        kts_resp_free(&r);
    }
    kts_close(c);
    /* random requests */
    for (i = 0; i < 300; i++) {
        char req[512];
        size_t n = 0, k;
        static const char *const starts[] = { "GET /api/v1/namespaces/default/configmaps", "POST /apis/edge.kctl.io/v1/namespaces/x/deviceconfigs",
                                              "PATCH /api/v1/namespaces/a/configmaps/b", "DELETE /api/v1/namespaces/", "GET /apis/" };
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        n = (size_t)snprintf(req, sizeof req, "%s", starts[(seed >> 33) % 5]);
        for (k = 0; k < (seed >> 40) % 120; k++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            req[n++] = (seed >> 60) < 3 ? "\r\n ?&=%{\"}:"[(seed >> 20) % 12] : (char)(32 + (seed >> 24) % 95);
        }
        n += (size_t)snprintf(req + n, sizeof req - n, "%s", (seed >> 10) % 2 ? " HTTP/1.1\r\nContent-Length: 3\r\n\r\n{}}" : "\r\n\r\n");
        if (kts_connect(kt_kube_server_port(s), c) != 0) continue;
        kts_send_raw(c, req, n);
        shutdown(c->fd, SHUT_WR);
        while (kts_more(c, KTS_WAIT_MS) == 1) c->len = 0;
        kts_close(c);
    }
    KT_CHECK(kts_do(kt_kube_server_port(s), "GET", "/api", NULL, NULL, &r) && r.code == 200);
    kts_resp_free(&r);
    kt_kube_server_counters_get(s, &ctr);
    KT_CHECK(ctr.bad_requests >= 10);
    free(c);
    kt_kube_server_stop(s);
}

/* ------------------------------------------------- the real clients */
typedef struct kts_proc {
    pid_t pid;
    int out;
    char buf[1 << 17];
    size_t len;
} kts_proc;

/* Run argv[0] (a path) with stdout and stderr into a pipe of ours. */
static bool kts_spawn(kts_proc *p, char *const argv[]) {
    int fds[2];
    memset(p, 0, sizeof *p);
    p->out = -1;
    if (pipe(fds) != 0) return false;
    fflush(stdout);
    p->pid = fork();
    if (p->pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (p->pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFD, FD_CLOEXEC); /* not for the next child */
    p->out = fds[0];
    return true;
}

/* Read what the child printed until needle shows (true) or ms pass or it ends. */
static bool kts_read_until(kts_proc *p, const char *needle, int ms) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!(needle && strstr(p->buf, needle))) {
        struct pollfd pf;
        ssize_t k;
        long left;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        left = ms - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0 || p->out < 0) return false;
        pf.fd = p->out;
        pf.events = POLLIN;
        pf.revents = 0;
        if (poll(&pf, 1, (int)left) <= 0) continue;
        k = read(p->out, p->buf + p->len, sizeof p->buf - 1 - p->len);
        if (k <= 0) {
            close(p->out);
            p->out = -1;
            return needle && strstr(p->buf, needle);
        }
        p->len += (size_t)k;
        p->buf[p->len] = 0;
    }
    return true;
}

/* Read to the end and reap: the exit code (-1: killed after ms). */
static int kts_finish(kts_proc *p, int ms) {
    int status = 0;
    kts_read_until(p, NULL, ms);
    if (p->out >= 0) { /* still printing after ms: hung */
        kill(p->pid, SIGKILL);
        close(p->out);
        p->out = -1;
        waitpid(p->pid, &status, 0);
        return -1;
    }
    if (waitpid(p->pid, &status, 0) != p->pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void kts_stop_proc(kts_proc *p) {
    int status;
    kill(p->pid, SIGTERM);
    if (p->out >= 0) close(p->out);
    p->out = -1;
    waitpid(p->pid, &status, 0);
}

static bool kts_exe(const char *path) {
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* kubectl on PATH, into buf. */
static bool kts_which(const char *name, char *buf, size_t cap) {
    const char *path = getenv("PATH"), *p;
    if (!path) return false;
    for (p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n && (size_t)snprintf(buf, cap, "%.*s/%s", (int)n, p, name) < cap && kts_exe(buf)) return true;
        p += n + (colon ? 1 : 0);
    }
    return false;
}

/* Debian's kubectl 1.20: KT_KUBECTL_120, or where .ci/run unpacks it. */
static const char *kts_find_kubectl_120(void) {
    const char *e = getenv("KT_KUBECTL_120");
    if (e && *e) return kts_exe(e) ? e : NULL;
    return kts_exe("build/kubernetes-client/usr/bin/kubectl") ? "build/kubernetes-client/usr/bin/kubectl" : NULL;
}

typedef struct kts_env {
    kt_kube_server *s;
    char dir[256];        /* a temporary directory of the test's */
    char kubeconfig[300];
    char cache[300];
    const char *kubectl;
    kts_proc p;
} kts_env;

static bool kts_env_init(kts_env *e, kt_kube_server *s, const char *kubectl) {
    const char *tmp = getenv("TMPDIR");
    FILE *f;
    memset(e, 0, sizeof *e);
    e->s = s;
    e->kubectl = kubectl;
    snprintf(e->dir, sizeof e->dir, "%s/kt-kube-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(e->dir)) return false;
    snprintf(e->kubeconfig, sizeof e->kubeconfig, "%s/kubeconfig", e->dir);
    snprintf(e->cache, sizeof e->cache, "%s/cache", e->dir); /* a fresh discovery cache: it is keyed by host and port */
    if (!s) return true; /* the kubeconfig comes later */
    if (!(f = fopen(e->kubeconfig, "w"))) return false;
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: %s\nusers:\n- name: test\n  user:\n"
               "    token: unused\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n    namespace: default\n"
               "current-context: test\n", kt_kube_server_url(s));
    fclose(f);
    return true;
}

static void kts_env_free(kts_env *e) {
    char *argv[] = { (char *)"/bin/rm", (char *)"-rf", e->dir, NULL };
    kts_proc *p = (kts_proc *)malloc(sizeof *p);
    if (p && e->dir[0] && kts_spawn(p, argv)) kts_finish(p, KTS_WAIT_MS);
    free(p);
}

/* Write name into the test's directory. */
static void kts_file(kts_env *e, const char *name, const char *text) {
    char path[400];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", e->dir, name);
    if ((f = fopen(path, "w"))) {
        fputs(text, f);
        fclose(f);
    }
}

/* Run kubectl with the words of args (a file name "@x" is the test
   directory's x); its output in e->p.buf. The exit code. */
static int kts_kubectl(kts_env *e, const char *args, bool background) {
    char *argv[24], words[1024], files[8][400];
    int n = 0, nf = 0, rc;
    char *w, *save = NULL;
    argv[n++] = (char *)e->kubectl;
    argv[n++] = (char *)"--kubeconfig";
    argv[n++] = e->kubeconfig;
    argv[n++] = (char *)"--cache-dir";
    argv[n++] = e->cache;
    snprintf(words, sizeof words, "%s", args);
    for (w = strtok_r(words, " ", &save); w && n < 23; w = strtok_r(NULL, " ", &save)) {
        if (*w == '@' && nf < 8) {
            snprintf(files[nf], sizeof files[nf], "%s/%s", e->dir, w + 1);
            w = files[nf++];
        }
        argv[n++] = w;
    }
    argv[n] = NULL;
    if (!kts_spawn(&e->p, argv)) return -1;
    if (background) return 0;
    rc = kts_finish(&e->p, 60000);
    if (rc != 0 && getenv("KT_VERBOSE")) printf("kubectl %s -> %d:\n%s\n", args, rc, e->p.buf);
    return rc;
}

static bool kts_has(kts_env *e, const char *needle) {
    if (strstr(e->p.buf, needle)) return true;
    printf("    (kubectl printed: %s)\n", e->p.buf);
    return false;
}

static void kts_kubectl_checks(const char *kubectl) {
    kt_kube_server *s = kts_start(0, 0);
    kctl_memstore *ms = kt_kube_server_memstore(s);
    kts_env *e = (kts_env *)malloc(sizeof *e);
    kctl_obj *o = NULL;
    int64_t gen = 0;
    if (!e || !kts_env_init(e, s, kubectl)) {
        KT_CHECK(!"a temporary directory");
        free(e);
        kt_kube_server_stop(s);
        return;
    }
    kts_put_cm(s, "a", NULL);
    /* get, get -o json */
    KT_EQ_INT(kts_kubectl(e, "get configmaps", false), 0);
    KT_CHECK(kts_has(e, "NAME") && kts_has(e, "\na "));
    KT_EQ_INT(kts_kubectl(e, "get cm a -o json", false), 0);
    KT_CHECK(kts_has(e, "\"name\": \"a\"") && kts_has(e, "\"k\": \"a\""));
    KT_EQ_INT(kts_kubectl(e, "get configmaps -A -o json", false), 0);
    KT_CHECK(kts_has(e, "\"kind\": \"List\"") && kts_has(e, "\"name\": \"a\""));
    /* apply: create, update, unchanged */
    kts_file(e, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: \"1\"\n");
    kts_file(e, "cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  b: \"2\"\n");
    KT_EQ_INT(kts_kubectl(e, "apply -f @cm.yaml", false), 0);
    KT_CHECK(kts_has(e, "configmap/x created"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_cm_res, "x", &o, NULL), KCTL_OK);
    KT_CHECK(o && strstr(kctl_obj_json(o, NULL), "\"data\":{\"a\":\"1\"}") && kctl_obj_annotation(o, "kubectl.kubernetes.io/last-applied-configuration"));
    kctl_obj_unref(o);
    KT_EQ_INT(kts_kubectl(e, "apply -f @cm2.yaml", false), 0);
    KT_CHECK(kts_has(e, "configmap/x configured"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_cm_res, "x", &o, NULL), KCTL_OK);
    KT_CHECK(o && strstr(kctl_obj_json(o, NULL), "\"data\":{\"b\":\"2\"}"));
    kctl_obj_unref(o);
    KT_EQ_INT(kts_kubectl(e, "apply -f @cm2.yaml", false), 0);
    KT_CHECK(kts_has(e, "configmap/x unchanged"));
    /* label */
    KT_EQ_INT(kts_kubectl(e, "label cm x tier=gold", false), 0);
    KT_CHECK(kts_has(e, "configmap/x labeled"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_cm_res, "x", &o, NULL), KCTL_OK);
    KT_CHECK(o && kctl_obj_label(o, "tier") && strcmp(kctl_obj_label(o, "tier"), "gold") == 0);
    kctl_obj_unref(o);
    /* get -w: the list, then a write made while it watches */
    KT_EQ_INT(kts_kubectl(e, "get cm -w", true), 0);
    KT_CHECK(kts_read_until(&e->p, "\nx ", 30000));
    kts_put_cm(s, "wnew", NULL);
    KT_CHECK(kts_read_until(&e->p, "\nwnew ", 30000));
    kts_stop_proc(&e->p);
    /* delete, and a missing one */
    KT_EQ_INT(kts_kubectl(e, "delete configmap x", false), 0);
    KT_CHECK(kts_has(e, "configmap \"x\" deleted"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_cm_res, "x", &o, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kts_kubectl(e, "delete configmap x", false), 1);
    KT_CHECK(kts_has(e, "Error from server (NotFound): configmaps \"x\" not found"));
    /* the custom resource */
    kts_file(e, "dc.yaml", "apiVersion: edge.kctl.io/v1\nkind: DeviceConfig\nmetadata:\n  name: dev1\nspec:\n  mode: manual\n  rate: 5\n");
    kts_file(e, "dc2.yaml", "apiVersion: edge.kctl.io/v1\nkind: DeviceConfig\nmetadata:\n  name: dev1\nspec:\n  mode: auto\n");
    KT_EQ_INT(kts_kubectl(e, "apply -f @dc.yaml", false), 0);
    KT_CHECK(kts_has(e, "deviceconfig.edge.kctl.io/dev1 created"));
    KT_EQ_INT(kts_kubectl(e, "apply -f @dc2.yaml", false), 0);
    KT_CHECK(kts_has(e, "deviceconfig.edge.kctl.io/dev1 configured"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_dc_res, "dev1", &o, NULL), KCTL_OK);
    KT_CHECK(o && strstr(kctl_obj_json(o, NULL), "\"spec\":{\"mode\":\"auto\"}"));
    gen = o ? kctl_obj_generation(o) : 0;
    KT_EQ_INT(gen, 2);
    kctl_obj_unref(o);
    KT_EQ_INT(kts_kubectl(e, "get dc", false), 0);
    KT_CHECK(kts_has(e, "\ndev1 "));
    KT_EQ_INT(kts_kubectl(e, "get deviceconfigs.edge.kctl.io dev1 -o json", false), 0);
    KT_CHECK(kts_has(e, "\"kind\": \"DeviceConfig\"") && kts_has(e, "\"mode\": \"auto\""));
    KT_EQ_INT(kts_kubectl(e, "label deviceconfig dev1 site=north", false), 0);
    KT_CHECK(kts_has(e, "deviceconfig.edge.kctl.io/dev1 labeled"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_dc_res, "dev1", &o, NULL), KCTL_OK);
    KT_CHECK(o && kctl_obj_label(o, "site") && strcmp(kctl_obj_label(o, "site"), "north") == 0);
    kctl_obj_unref(o);
    KT_EQ_INT(kts_kubectl(e, "get deviceconfigs -w", true), 0);
    KT_CHECK(kts_read_until(&e->p, "\ndev1 ", 30000));
    KT_EQ_INT(kctl_memstore_apply(ms, &kts_dc_res, "{\"metadata\":{\"name\":\"dev2\",\"namespace\":\"default\"},\"spec\":{}}", KCTL_NTS, NULL, NULL),
              KCTL_OK);
    KT_CHECK(kts_read_until(&e->p, "\ndev2 ", 30000));
    kts_stop_proc(&e->p);
    KT_EQ_INT(kts_kubectl(e, "delete dc dev1", false), 0);
    KT_CHECK(kts_has(e, "deviceconfig.edge.kctl.io \"dev1\" deleted"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_dc_res, "dev1", &o, NULL), KCTL_ERR_NOT_FOUND);
    kts_env_free(e);
    free(e);
    kt_kube_server_stop(s);
}

static void kts_kubectl_120(void) {
    const char *k = kts_find_kubectl_120();
    if (!kt_kube_need(__FILE__, __LINE__, k ? NULL : "no kubectl 1.20 (set KT_KUBECTL_120, or unpack Debian's kubernetes-client into "
                                                  "build/kubernetes-client as .ci/run does)"))
        return;
    kts_kubectl_checks(k);
}

static void kts_kubectl_path(void) {
    char k[1024];
    if (!kts_which("kubectl", k, sizeof k)) { /* a fresh Debian machine: the 1.20 one stands for it */
        printf("skip %s: no kubectl on PATH\n", kt.cur_name);
        KT_SKIP();
    }
    kts_kubectl_checks(k);
}

#define KTS_PY "/usr/bin/python3"      /* Debian's own: the package is not seen by another python */
#define KTS_PY_SCRIPT "tests/kube_clients/py_client.py"

static const char *kts_python_missing(void) {
    char *argv[] = { (char *)KTS_PY, (char *)"-c", (char *)"import kubernetes", NULL };
    kts_proc *p;
    int rc;
    if (!kts_exe(KTS_PY)) return "no " KTS_PY;
    if (access(KTS_PY_SCRIPT, R_OK) != 0) return KTS_PY_SCRIPT " not found (run from the repository's root)";
    if (!(p = (kts_proc *)malloc(sizeof *p))) return "out of memory";
    rc = kts_spawn(p, argv) ? kts_finish(p, 60000) : -1;
    free(p);
    return rc == 0 ? NULL : "python3's kubernetes package is missing (Debian: apt-get install python3-kubernetes)";
}

/* Run the Python scenario; its output in p->buf, the exit code returned. */
static int kts_py(kts_proc *p, kt_kube_server *s, const char *scenario, const char *arg) {
    char *argv[] = { (char *)KTS_PY, (char *)KTS_PY_SCRIPT, (char *)kt_kube_server_url(s), (char *)scenario, (char *)arg, NULL };
    int rc;
    if (!kts_spawn(p, argv)) return -1;
    rc = kts_finish(p, 60000);
    if (rc != 0 || getenv("KT_VERBOSE")) printf("    (python %s printed: %s)\n", scenario, p->buf);
    return rc;
}

static void kts_python(void) {
    kt_kube_server *s;
    kctl_memstore *ms;
    kts_proc *p;
    kctl_obj *o = NULL;
    char rv[32], want[128];
    int i;
    if (!kt_kube_need(__FILE__, __LINE__, kts_python_missing())) return;
    s = kts_start(UINT64_C(300000000), 0); /* bookmarks after 0.3 s of quiet */
    ms = kt_kube_server_memstore(s);
    p = (kts_proc *)malloc(sizeof *p);
    for (i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        kts_put_cm(s, name, NULL);
    }
    /* list with limit and _continue, remainingItemCount on each page but the last */
    KT_EQ_INT(kts_py(p, s, "paging", "2"), 0);
    KT_CHECK(strstr(p->buf, "page c0,c1 3\npage c2,c3 1\npage c4 None\ntotal 5\n") != NULL);
    /* create, patch, replace, delete; a custom resource's create, merge patch, status, list, delete */
    KT_EQ_INT(kts_py(p, s, "crud", NULL), 0);
    KT_CHECK(strstr(p->buf, "created py default {'a': '1'}\n") && strstr(p->buf, "again 409 AlreadyExists\n") &&
             strstr(p->buf, "patched [('b', '2')] [('app', 'demo'), ('tier', 'x')]\n") &&
             strstr(p->buf, "replaced [('b', '2'), ('c', '3')]\n") && strstr(p->buf, "stale 409 Conflict\n") &&
             strstr(p->buf, "deleted Success py\n") && strstr(p->buf, "missing 404\n") &&
             strstr(p->buf, "cr_created pydc 1 {'mode': 'manual', 'rate': 5}\n") && strstr(p->buf, "cr_patched 2 {'mode': 'auto'}\n") &&
             strstr(p->buf, "cr_status 2 {'observedGeneration': 2}\n") && strstr(p->buf, "cr_list DeviceConfigList ['pydc']\n") &&
             strstr(p->buf, "cr_deleted Success\n"));
    KT_EQ_INT(kctl_memstore_get(ms, &kts_cm_res, "py", &o, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_memstore_get(ms, &kts_dc_res, "pydc", &o, NULL), KCTL_ERR_NOT_FOUND);
    /* a watch with bookmarks while the script writes */
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)kctl_memstore_revision(ms));
    KT_EQ_INT(kts_py(p, s, "watch", rv), 0);
    snprintf(want, sizeof want, "event ADDED pw %llu\nevent MODIFIED pw %llu\nevent DELETED pw %llu\n",
             (unsigned long long)kctl_memstore_revision(ms) - 2, (unsigned long long)kctl_memstore_revision(ms) - 1,
             (unsigned long long)kctl_memstore_revision(ms));
    {
        char bm[64];
        snprintf(bm, sizeof bm, "event BOOKMARK - %llu\n", (unsigned long long)kctl_memstore_revision(ms));
        KT_CHECK(strstr(p->buf, bm) != NULL); /* a bookmark, at the store's version */
    }
    { /* the events in order, bookmarks aside (one may come between two writes of a slow script) */
        char *q = p->buf, *w = p->buf, *nl;
        while ((nl = strchr(q, '\n'))) {
            size_t n = (size_t)(nl - q) + 1;
            if (strncmp(q, "event BOOKMARK ", 15) != 0) {
                memmove(w, q, n);
                w += n;
            }
            q = nl + 1;
        }
        *w = 0;
        KT_CHECK(strstr(p->buf, want) != NULL);
    }
    KT_CHECK(strstr(p->buf, "\nend\n") != NULL);
    /* from a version the server no longer has: ApiException 410 */
    kt_kube_server_expire_history(s);
    KT_EQ_INT(kts_py(p, s, "gone", "3"), 0);
    snprintf(want, sizeof want, "gone 410 Expired: too old resource version: 3 (%llu)\n", (unsigned long long)kctl_memstore_revision(ms));
    KT_CHECK(strstr(p->buf, want) != NULL);
    free(p);
    kt_kube_server_stop(s);
}

/* ------------------------------------------------------------------ https */
/* Run openssl with the words of args in the test's directory (@x: its file x). */
static bool kts_openssl(kts_env *e, const char *openssl, const char *args) {
    char *argv[40], words[1024], files[12][400];
    int n = 0, nf = 0;
    char *w, *save = NULL;
    argv[n++] = (char *)openssl;
    snprintf(words, sizeof words, "%s", args);
    for (w = strtok_r(words, " ", &save); w && n < 39; w = strtok_r(NULL, " ", &save)) {
        if (*w == '@' && nf < 12) {
            snprintf(files[nf], sizeof files[nf], "%s/%s", e->dir, w + 1);
            w = files[nf++];
        }
        argv[n++] = w;
    }
    argv[n] = NULL;
    if (!kts_spawn(&e->p, argv)) return false;
    if (kts_finish(&e->p, 60000) == 0) return true;
    printf("    (openssl %s: %s)\n", args, e->p.buf);
    return false;
}

/* A CA, a server certificate for 127.0.0.1 and a client certificate, made now. */
static bool kts_certs(kts_env *e, const char *openssl) {
    kts_file(e, "server.ext", "subjectAltName=IP:127.0.0.1\n");
    kts_file(e, "client.ext", "extendedKeyUsage=clientAuth\n");
    return kts_openssl(e, openssl, "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout @ca.key -out @ca.crt "
                                   "-days 2 -subj /CN=kt-kube-ca") &&
           kts_openssl(e, openssl, "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout @server.key -out @server.csr "
                                   "-subj /CN=127.0.0.1") &&
           kts_openssl(e, openssl, "x509 -req -in @server.csr -CA @ca.crt -CAkey @ca.key -CAcreateserial -out @server.crt -days 2 "
                                   "-extfile @server.ext") &&
           kts_openssl(e, openssl, "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout @client.key -out @client.csr "
                                   "-subj /CN=kt-client") &&
           kts_openssl(e, openssl, "x509 -req -in @client.csr -CA @ca.crt -CAkey @ca.key -CAcreateserial -out @client.crt -days 2 "
                                   "-extfile @client.ext");
}

/* The kubeconfig for s over https: the CA, and a client certificate when asked. */
static void kts_tls_kubeconfig(kts_env *e, kt_kube_server *s, bool client_cert) {
    char text[2048];
    snprintf(text, sizeof text,
             "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: %s\n    certificate-authority: %s/ca.crt\n"
             "users:\n- name: test\n  user:\n%s%s%s%s%scontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n"
             "    namespace: default\ncurrent-context: test\n", kt_kube_server_url(s), e->dir,
             client_cert ? "    client-certificate: " : "    token: unused\n", client_cert ? e->dir : "", client_cert ? "/client.crt\n    client-key: " : "",
             client_cert ? e->dir : "", client_cert ? "/client.key\n" : "");
    kts_file(e, "kubeconfig", text);
}

static void kts_tls(void) {
    kt_kube_server_desc d;
    kt_kube_server *s = NULL;
    kts_env *e;
    kts_conn *c;
    kt_kube_server_counters ctr;
    kctl_obj *o = NULL;
    char openssl[1024], kpath[1024], cert[400], key[400], ca[400], ccert[400], ckey[400];
    const char *kubectls[2];
    int nk = 0, i;
#ifndef KT_HAVE_OPENSSL
    if (!kt_kube_need(__FILE__, __LINE__, "built without OpenSSL's headers: no https (Debian: apt-get install libssl-dev, then rebuild)")) return;
#endif
    if (!kt_kube_need(__FILE__, __LINE__, kts_which("openssl", openssl, sizeof openssl) ? NULL : "no openssl on PATH to make certificates"))
        return;
    e = (kts_env *)malloc(sizeof *e);
    c = (kts_conn *)malloc(sizeof *c);
    if (!e || !c || !kts_env_init(e, NULL, NULL)) {
        KT_CHECK(!"a temporary directory");
        free(e);
        free(c);
        return;
    }
    KT_CHECK(kts_certs(e, openssl));
    snprintf(cert, sizeof cert, "%s/server.crt", e->dir);
    snprintf(key, sizeof key, "%s/server.key", e->dir);
    snprintf(ca, sizeof ca, "%s/ca.crt", e->dir);
    snprintf(ccert, sizeof ccert, "%s/client.crt", e->dir);
    snprintf(ckey, sizeof ckey, "%s/client.key", e->dir);
    if (kts_which("kubectl", kpath, sizeof kpath)) kubectls[nk++] = kpath;
    if (kts_find_kubectl_120()) kubectls[nk++] = kts_find_kubectl_120();
    memset(&d, 0, sizeof d);
    d.tls_cert_file = cert;
    d.tls_key_file = ca; /* not the certificate's key */
    KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_ERR_INVALID_ARG);
    d.tls_key_file = key;
    KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_OK);
    if (!s) goto out;
    e->s = s;
    KT_CHECK(strncmp(kt_kube_server_url(s), "https://127.0.0.1:", 18) == 0);
    kts_put_cm(s, "a", NULL);
    /* plain http to the https port: refused, and the server goes on */
    KT_CHECK(kts_connect(kt_kube_server_port(s), c) == 0 && kts_request(c, "GET", "/api", NULL, NULL));
    while (kts_more(c, KTS_WAIT_MS) == 1) {}
    kts_close(c);
    kts_tls_kubeconfig(e, s, false);
    for (i = 0; i < nk; i++) { /* kubectl trusting the CA: a read, a write */
        e->kubectl = kubectls[i];
        snprintf(e->cache, sizeof e->cache, "%s/cache%d", e->dir, i);
        KT_EQ_INT(kts_kubectl(e, "get cm", false), 0);
        KT_CHECK(kts_has(e, "\na "));
        KT_EQ_INT(kts_kubectl(e, i ? "label --overwrite cm a v=120" : "label --overwrite cm a v=path", false), 0);
        KT_EQ_INT(kctl_memstore_get(kt_kube_server_memstore(s), &kts_cm_res, "a", &o, NULL), KCTL_OK);
        KT_CHECK(o && kctl_obj_label(o, "v") && strcmp(kctl_obj_label(o, "v"), i ? "120" : "path") == 0);
        kctl_obj_unref(o);
    }
    if (!kts_python_missing()) {
        char *argv[] = { (char *)KTS_PY, (char *)KTS_PY_SCRIPT, (char *)kt_kube_server_url(s), (char *)"tls", ca, NULL };
        KT_CHECK(kts_spawn(&e->p, argv) && kts_finish(&e->p, 60000) == 0 && strstr(e->p.buf, "tls_list a\n"));
    }
    kt_kube_server_counters_get(s, &ctr);
    KT_CHECK(ctr.tls_failures >= 1);
    kt_kube_server_stop(s);
    s = NULL;
    /* mutual TLS: a client certificate from the CA is required */
    d.tls_client_ca_file = ca;
    KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_OK);
    if (!s) goto out;
    e->s = s;
    kts_put_cm(s, "m", NULL);
    for (i = 0; i < nk; i++) {
        e->kubectl = kubectls[i];
        snprintf(e->cache, sizeof e->cache, "%s/mcache%d", e->dir, i);
        kts_tls_kubeconfig(e, s, true);
        KT_EQ_INT(kts_kubectl(e, "get cm", false), 0);
        KT_CHECK(kts_has(e, "\nm "));
        kts_tls_kubeconfig(e, s, false);
        KT_CHECK(kts_kubectl(e, "get cm --request-timeout=10s", false) != 0); /* no certificate: refused */
    }
    if (!kts_python_missing()) {
        char *argv[] = { (char *)KTS_PY, (char *)KTS_PY_SCRIPT, (char *)kt_kube_server_url(s), (char *)"tls", ca, ccert, ckey, NULL };
        KT_CHECK(kts_spawn(&e->p, argv) && kts_finish(&e->p, 60000) == 0 && strstr(e->p.buf, "tls_list m\n"));
    }
    kt_kube_server_counters_get(s, &ctr);
    KT_CHECK(nk == 0 || ctr.tls_failures >= (uint64_t)nk);
    kt_kube_server_stop(s);
out:
    kts_env_free(e);
    free(e);
    free(c);
}

/* The options: a watch's longest time (also without timeoutSeconds), the history kept. */
static void kts_options(void) {
    kt_kube_server_desc d;
    kt_kube_server *s = NULL;
    kts_resp r;
    int i;
    static const kt_kube_resource res[] = { { "apps.example.com", "v2", "widgets", "widget", "Widget", "wd,wg", false, true } };
    memset(&d, 0, sizeof d);
    d.watch_timeout_max_ns = UINT64_C(200000000);
    d.history = 4;
    d.resources = res;
    d.resource_count = 1;
    KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_OK);
    KT_CHECK(kts_do(kt_kube_server_port(s), "GET", "/apis/apps.example.com/v2", NULL, NULL, &r));
    KT_CHECK(strstr(r.body, "{\"name\":\"widgets\",\"singularName\":\"widget\",\"namespaced\":false,\"kind\":\"Widget\"") &&
             strstr(r.body, "\"shortNames\":[\"wd\",\"wg\"]") && strstr(r.body, "\"name\":\"widgets/status\""));
    kts_resp_free(&r);
    KT_CHECK(kts_do(kt_kube_server_port(s), "GET", "/api/v1", NULL, NULL, &r));
    KT_EQ_INT(r.code, 404); /* no core resources here */
    kts_resp_free(&r);
    for (i = 0; i < 10; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"w%d\"}}", i);
        KT_CHECK(kts_do(kt_kube_server_port(s), "POST", "/apis/apps.example.com/v2/widgets", KTS_JSON, body, &r) && r.code == 201);
        kts_resp_free(&r);
    }
    /* ended at the server's longest time though no timeoutSeconds was given, and at it though a longer one was */
    KT_CHECK(kts_do(kt_kube_server_port(s), "GET", "/apis/apps.example.com/v2/widgets?watch=1&resourceVersion=10", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && r.terminated);
    kts_resp_free(&r);
    KT_CHECK(kts_do(kt_kube_server_port(s), "GET", "/apis/apps.example.com/v2/widgets?watch=1&resourceVersion=10&timeoutSeconds=3600", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && r.terminated);
    kts_resp_free(&r);
    /* 4 events kept: from 6 replays, from 5 is too old */
    KT_CHECK(kts_do(kt_kube_server_port(s), "GET", "/apis/apps.example.com/v2/widgets?watch=1&resourceVersion=6", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && kts_count(r.body, "\"type\":\"ADDED\"") == 4 && !strstr(r.body, "ERROR"));
    kts_resp_free(&r);
    KT_CHECK(kts_do(kt_kube_server_port(s), "GET", "/apis/apps.example.com/v2/widgets?watch=1&resourceVersion=5", NULL, NULL, &r));
    KT_CHECK(r.code == 200 && strstr(r.body, "too old resource version: 5 (6)") && r.terminated);
    kts_resp_free(&r);
    kt_kube_server_stop(s);
    {
        static const kt_kube_resource bad[] = { { "g", "v1", "things", NULL, NULL, NULL, true, false } };
        d.resources = bad;
        KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_ERR_INVALID_ARG);
    }
}

#ifdef KT_HAVE_CURL
/* Leader election on the API server: kctl's managers keep their election
   in a coordination.k8s.io/v1 Lease that the official client reads as a
   V1Lease (holder, duration, MicroTimes, transitions), and they honour a
   Lease another candidate holds (written by the Python client, its times
   in its own format). */
typedef struct kts_mgr {
    kctl_transport t;
    kctl_manager *m;
} kts_mgr;

static kctl_reconcile_result kts_mgr_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0, false, false, 0 };
    (void)ctx;
    return r;
}

static int kts_mgr_start(kts_mgr *g, kt_kube_server *s, const char *lease, const char *identity) {
    kctl_kube_desc kd = kctl_kube_desc_init();
    kctl_manager_desc md;
    kctl_controller_desc cd;
    int rc;
    memset(g, 0, sizeof *g);
    memset(&md, 0, sizeof md);
    memset(&cd, 0, sizeof cd);
    kd.server = kt_kube_server_url(s);
    if ((rc = kctl_kube_create(&kd, &g->t)) != KCTL_OK) return rc;
    md.transport = g->t;
    md.lease_name = lease;
    md.identity = identity;
    md.lease_ns = KCTL_SEC(2);
    md.renew_deadline_ns = KCTL_MS(1500);
    md.retry_ns = KCTL_MS(250);
    md.graceful_timeout_ns = KCTL_SEC(5);
    if ((rc = kctl_manager_create(&md, &g->m)) != KCTL_OK) {
        kctl_transport_destroy(&g->t);
        return rc;
    }
    cd.name = "deviceconfigs";
    cd.reconcile = kts_mgr_reconcile;
    if ((rc = kctl_manager_informer(g->m, &kts_dc_res, NULL, NULL, &cd.primary)) != KCTL_OK ||
        (rc = kctl_manager_add_controller(g->m, &cd, NULL)) != KCTL_OK || (rc = kctl_manager_start(g->m, KCTL_SEC(10))) != KCTL_OK) {
        kctl_manager_destroy(g->m);
        kctl_transport_destroy(&g->t);
        g->m = NULL;
    }
    return rc;
}

static void kts_mgr_end(kts_mgr *g) {
    if (!g->m) return;
    kctl_manager_destroy(g->m);
    kctl_transport_destroy(&g->t);
    g->m = NULL;
}

/* The one manager of n leading, within 20 s; -1 if none (or two). */
static int kts_one_leader(kts_mgr *g, int n) {
    int k;
    for (k = 0; k < 400; k++) {
        int i, leaders = 0, who = -1;
        struct timespec ts = { 0, 50000000 };
        for (i = 0; i < n; i++)
            if (g[i].m && kctl_manager_is_leader(g[i].m)) { leaders++; who = i; }
        if (leaders == 1) return who;
        nanosleep(&ts, NULL);
    }
    return -1;
}

static void kts_lease(void) {
    static const char *ids[2] = { "replica-a", "replica-b" };
    kt_kube_server *s;
    kts_proc *p;
    kts_mgr g[2];
    kctl_manager_leader_info li;
    char want[128];
    int first, k;
    if (!kt_kube_need(__FILE__, __LINE__, kts_python_missing())) return;
    if (!(s = kts_start(0, 0))) return;
    p = (kts_proc *)malloc(sizeof *p);
    memset(g, 0, sizeof g);
    /* another candidate holds "held" for an hour: kctl tries and waits */
    KT_EQ_INT(kts_py(p, s, "hold", "held"), 0);
    KT_CHECK(strstr(p->buf, "held client-go-x\n") != NULL);
    KT_EQ_INT(kts_mgr_start(&g[0], s, "held", ids[0]), KCTL_OK);
    for (k = 0; k < 400; k++) { /* five tries at least (each read the Lease) */
        struct timespec ts = { 0, 50000000 };
        kctl_manager_read_leader(g[0].m, &li);
        if (li.steps >= 5) break;
        nanosleep(&ts, NULL);
    }
    KT_CHECK(li.steps >= 5);
    KT_CHECK(!kctl_manager_is_leader(g[0].m));
    KT_EQ_INT(kts_py(p, s, "lease", "held"), 0);
    KT_CHECK(strstr(p->buf, "lease client-go-x 3600 datetime datetime 0\n") != NULL);
    kts_mgr_end(&g[0]);
    /* two kctl candidates: one leads, the Python client reads its record */
    KT_EQ_INT(kts_mgr_start(&g[0], s, "kctl-test", ids[0]), KCTL_OK);
    KT_EQ_INT(kts_mgr_start(&g[1], s, "kctl-test", ids[1]), KCTL_OK);
    first = kts_one_leader(g, 2);
    KT_CHECK(first >= 0);
    if (first >= 0) {
        int other = 1 - first;
        KT_EQ_INT(kts_py(p, s, "lease", "kctl-test"), 0);
        snprintf(want, sizeof want, "lease %s 2 datetime datetime 0\n", ids[first]);
        KT_CHECK(strstr(p->buf, want) != NULL);
        KT_EQ_INT(kctl_manager_stop(g[first].m), KCTL_OK); /* it releases; the other takes over */
        kts_mgr_end(&g[first]);
        KT_EQ_INT(kts_one_leader(g, 2), other);
        KT_EQ_INT(kts_py(p, s, "lease", "kctl-test"), 0);
        snprintf(want, sizeof want, "lease %s 2 datetime datetime 1\n", ids[other]);
        KT_CHECK(strstr(p->buf, want) != NULL);
    }
    kts_mgr_end(&g[0]);
    kts_mgr_end(&g[1]);
    free(p);
    kt_kube_server_stop(s);
}
#endif

void kt_suite_kube_server(void) {
    KT_RUN(kts_options);
    KT_RUN(kts_discovery);
    KT_RUN(kts_status_bodies);
    KT_RUN(kts_crud);
    KT_RUN(kts_list_paging);
    KT_RUN(kts_watch_stream);
    KT_RUN(kts_watch_too_old);
    KT_RUN(kts_faults);
    KT_RUN(kts_bad_input);
    KT_RUN(kts_kubectl_path);
    KT_RUN(kts_kubectl_120);
    KT_RUN(kts_python);
    KT_RUN(kts_tls);
#ifdef KT_HAVE_CURL
    KT_RUN(kts_lease);
#endif
}
