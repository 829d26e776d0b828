/* kctl_http_curl.h v0.4.0 - kctl's remote stores over libcurl: a Kubernetes API server, an etcd v3 cluster - MIT licence (end of kctl.h) */
/*
    A companion to kctl.h: transports to stores in other processes and on
    other machines, over HTTP with libcurl. A Kubernetes API server, so the
    same controller code reconciles objects of a cluster (custom resources
    included); and an etcd v3 cluster through its JSON gateway, keeping
    objects as Kubernetes keeps them in etcd, so a fleet's desired state
    lives in a replicated store without a cluster.

    Do this:
        #include "kctl.h"
        #include "kctl_http_curl.h"
    and in the one file that defines KCTL_IMPLEMENTATION (or, for this
    header alone, KCTL_HTTP_CURL_IMPLEMENTATION) both implementations are
    emitted. Link with -lcurl (libcurl 7.77 or later). This header calls
    only kctl.h's public functions, so its implementation may live in a
    file of its own.


    QUICK START
    ===========
        kctl_kube_desc kd = kctl_kube_desc_init();
        kctl_transport t;
        kd.server = "https://10.0.0.1:6443";
        kd.token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
        kd.tls.ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
        if (kctl_kube_create(&kd, &t) != KCTL_OK) return 1;
        md.transport = t;                       // a manager on the cluster
        ...                                     // resources as { "edge.example.io", "v1", "deviceconfigs", "" }
        kctl_transport_destroy(&t);             // after everything that uses it
    or on etcd:
        kctl_etcd_desc ed = kctl_etcd_desc_init();
        kctl_transport t;
        ed.endpoints = "http://10.0.0.1:2379,http://10.0.0.2:2379,http://10.0.0.3:2379";
        if (kctl_etcd_create(&ed, &t) != KCTL_OK) return 1;
        md.transport = t;                       // a manager on etcd, as on the memstore
        ...
        kctl_transport_destroy(&t);             // after everything that uses it


    CONCEPTS
    ========
    Kubernetes. The server decides every write, as it does for any client;
    objects come as it sends them (its resourceVersions, opaque strings),
    and every refusal carries its Status (kctl_api_status: code, reason,
    message, details and causes).

        kctl                      Kubernetes API (client-go's dynamic client)
        ----                      ----
        a resource                /api/v1/... for the core group ("" or NULL),
                                  /apis/<group>/<version>/... otherwise;
                                  /namespaces/<ns>/ when ns is given; none for
                                  all namespaces (list, watch) and for a
                                  cluster-scoped object (by name)
        list (limit, continue)    GET ?labelSelector&fieldSelector&limit&continue;
                                  items get the list's kind and apiVersion; an
                                  expired continue token is 410: GONE
        watch (from a version)    GET ?watch=1&resourceVersion&allowWatchBookmarks
                                  =true&timeoutSeconds (random in [min, max]);
                                  events a line each; a BOOKMARK is its version;
                                  the in-band ERROR 410 (a version too old) is
                                  GONE, other ERRORs mapped by their code; the
                                  end at timeoutSeconds (the terminating chunk)
                                  is CLOSED, a cut stream IO. From "": a list,
                                  then a watch from its version
        get                       GET .../<name>
        create                    POST to the collection (AlreadyExists: EXISTS)
        update, update_status     PUT .../<name>[/status] (a stale
                                  metadata.resourceVersion: 409 CONFLICT)
        patch                     PATCH .../<name>[/status], application/merge-
                                  patch+json (KCTL_PATCH_STATUS: /status)
        remove                    DELETE, with DeleteOptions preconditions (uid,
                                  resourceVersion) when given; a Status Success
                                  is gone (*out NULL); the object in the answer
                                  with a deletionTimestamp and finalizers (or a
                                  grace period, or a 202) is still there (*out)
        Status detail             the server's Status body, for every code
                                  (400 401 403 404 405 409 410 422 429 500 503
                                  504...); a body that is no Status (a proxy's)
                                  gives the code and its usual reason

    429 and 503 answer AGAIN (kctl_api_status_result), st->retry_after_s
    holding the Retry-After (or the Status's retryAfterSeconds). Before
    that, a Retry-After that ends within the request timeout (counted from
    the call's start) is waited out and the request sent once more, when
    the request cannot do harm twice: a read (get, list, a watch's open),
    or a write that carries a precondition the server checks (update or
    patch with a metadata.resourceVersion, remove with a uid or
    resourceVersion): had the first been applied, the second is refused
    (409). A create, or a write without a precondition, is never sent
    twice (a second POST could make a second object with generateName; an
    unconditional write could undo another writer's). A request that
    failed once sent (a timeout, a broken connection) is never sent again:
    TIMEOUT or IO, and the caller's reconcile tries again.

    The bearer token is token, or token_file's content, read at create and
    again when the file changes (its mtime, size or inode; looked at no
    more than once a second, before a request), as a projected
    service-account token rotates; a 401 reads the file at once and sends
    the request again, once, if the token changed. An unreadable or empty
    file keeps the token held.

    etcd. Keys are laid out as Kubernetes lays them: <prefix>/<resource>/<ns>/<name>
    for the core group, <prefix>/<group>/<resource>/<ns>/<name> otherwise,
    no <ns> segment for a cluster-scoped object ([prefix]: "/registry").
    Values are the object's JSON document without resourceVersion; an
    object's resourceVersion is its key's mod_revision, so versions are
    numbers, ordered, and one revision counter covers every key, as an API
    server's do.

        kctl                      etcd v3 (JSON gateway, POST /v3/...)
        ----                      ----
        list (limit, continue)    one kv/range at one revision; a continue
                                  token carries that revision and the next key
        watch (from a version)    watch from version + 1 with prev_kv and
                                  progress_notify; progress notifications are
                                  BOOKMARKs; a compacted start is GONE
        create                    txn: create_revision == 0, then put
        update, update_status,    the API-SERVER RULES decide (kctl.h), then a
        patch, remove             txn on the read mod_revision; a failed compare
                                  is CONFLICT (or a new try when the request
                                  carried no version, as the API server's
                                  GuaranteedUpdate tries again)
        Status detail             etcd's {"error","message","code"} as a
                                  kctl_api_status, and the rules' own refusals

    Label and field selectors are applied here, exactly as the memstore
    applies them: an object that stops matching a watched selector arrives
    as DELETED at the event's version, one that starts matching as ADDED.


    DOES NOT
    ========
    - (Kubernetes) discover resources: a kctl_resource names the group,
      version and plural, and whether it is namespaced by its ns;
    - (Kubernetes) send strategic merge, JSON patches or server-side apply
      (the patch entry is a merge patch), nor protobuf, nor ask for tables;
    - (Kubernetes) run exec or auth-provider credential plugins (the
      kubeconfig loader below names them as unsupported); a token or a
      client certificate only;
    - (Kubernetes) follow redirects, or fail over: one server URL (a load
      balancer's, for several API servers);
    - use etcd leases: leader election works with its Lease object and
      resourceVersion preconditions, as on any transport;
    - block longer than asked in watch_next (timeout 0 looks once); unary
      requests wait at most request_timeout_ns each (a Retry-After waited
      out included), a watch's open too;
    - retry a write whose outcome is unknown (a timeout, a broken
      connection after the request went out): that is TIMEOUT or IO, and
      the caller's reconcile tries again through its backoff;
    - put credentials in logs, Status detail or errors.


    ENDPOINTS, FAILOVER, AUTH (etcd)
    ================================
    endpoints is a comma-separated list. A request that cannot be sent (no
    connection) goes to the next endpoint at once; a read also moves on
    after an error reply of the unavailable kind (503, "no leader") or a
    timeout. Each call makes one round of the list; the next call starts
    at the endpoint that last answered. Watches send
    Grpc-Metadata-hasleader: true, so a member that loses its leader ends
    the stream (IO) instead of going silent; the reflector then watches
    again, from the next endpoint. With a username, kctl authenticates
    (/v3/auth/authenticate) and sends the token; a token the server no
    longer knows (401, code 16; a member forgets its tokens when it
    restarts, and a token idle for --auth-token-ttl) is renewed once and
    the request repeated, a watch's too. A renewal that fails
    (UNAUTHORIZED: the password changed; IO, TIMEOUT) leaves no token, and
    the next call authenticates first.


    TLS
    ===
    Verification is on: give the cluster's CA (ca_file, or ca_data in
    memory) unless the system's store has it; a client certificate and key
    for mTLS (etcd's, a Kubernetes user's; files or memory). insecure turns
    verification off, explicitly and only. A server that is not trusted,
    or one that refuses the client (no certificate, or one it does not
    accept), is an endpoint that did not answer: etcd's reads and watches
    try the next one, and the call fails with IO, its Status 503 naming
    libcurl's reason ("etcd: no endpoint answered: SSL peer certificate or
    SSH remote key was not OK"; "kube: the server did not answer: ..."),
    never a certificate, key, token or file of them.


    THREADING
    =========
    A transport (Kubernetes or etcd) is [any thread], as kctl's transports are: unary requests
    share a small pool of connections (kept alive), each watch has a
    connection of its own. Create and destroy it from one thread.


    WAKE-UPS (the step loop)
    ========================
    Both transports implement watch_notify (kctl.h, TRANSPORT), so a
    single-threaded manager (kctl_manager_step with desc.wake) on a remote
    store sleeps until its next real deadline and is woken when a watch
    has news: no 1 Hz poll. A watch read on the caller's thread gets, once
    a wake-up is registered, a small thread of its own (128 KiB of stack,
    a pipe) that waits on the watch's socket while the reader is idle (its
    last watch_next said AGAIN) and calls the wake-up once when bytes, the
    stream's end or a reset arrive; the next AGAIN arms it again. It never
    calls libcurl. etcd's progress notifications and an API server's
    bookmarks are news too: they wake the loop at their own interval
    (etcd's default is 10 minutes). The one exception: under
    KCTL_NO_THREADS there is nothing to wait on the socket, watch_notify
    answers UNSUPPORTED and an idle watch is polled every
    KCTL_REFLECTOR_POLL_NS (1 s), as a transport without the entry is.


    LIMITS
    ======
    - Kubernetes: a watch event (one line) beyond max_message_bytes
      [16 MiB] is TOO_LARGE, a unary answer beyond max_response_bytes
      [256 MiB] too; a resourceVersion longer than KCTL_RV_MAX - 1 bytes,
      or a continue token longer than KCTL_CONTINUE_MAX - 1, is TOO_LARGE.
      A bearer token is at most 16 KiB, of visible ASCII.
    - A watch message (one JSON object on its line) beyond
      max_message_bytes [4 MiB] is TOO_LARGE; a unary response beyond
      max_response_bytes [64 MiB], too. Memory never grows past them: a
      watch holds at most max_message_bytes + 64 KiB; a watcher that falls
      behind pauses its transfer (etcd's messages wait in the socket and
      in etcd) until it has read what it holds.
    - etcd refuses requests over its --max-request-bytes (1.5 MiB by
      default): a bigger object is TOO_LARGE.


    VERSION HISTORY
    ===============
    0.4.0  (in progress) the HTTP layer on libcurl, the etcd v3
           transport, the Kubernetes API transport.
*/
#ifndef KCTL_H_INCLUDED
#error "include kctl.h before kctl_http_curl.h"
#endif

#ifndef KCTL_HTTP_CURL_H_INCLUDED
#define KCTL_HTTP_CURL_H_INCLUDED

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================== >>http HTTP */

/* TLS for a remote store; zero: verify against the system's CA store, no
   client certificate. Strings are copied. */
typedef struct kctl_http_tls {
    bool insecure;                /* do not verify the server (explicit) */
    const char *ca_file;          /* PEM file of the CA(s) to trust */
    const char *ca_data;          /* or PEM in memory */
    size_t ca_len;                /* its length (KCTL_NTS) */
    const char *cert_file;        /* client certificate (PEM) for mTLS */
    const char *cert_data;
    size_t cert_len;
    const char *key_file;         /* its private key (PEM) */
    const char *key_data;
    size_t key_len;
} kctl_http_tls;

/* ===================================================================== >>etcd ETCD */

/* Options; zero means the default (in brackets):
     endpoints            required: "http://host:2379,https://host:2379,..."
     prefix               where objects live ["/registry"]
     username, password   etcd auth [none]
     tls                  see TLS
     request_timeout_ns   each unary request [5 s]
     connect_timeout_ns   each connection attempt [2 s]
     max_message_bytes    a watch message [4 MiB]
     max_response_bytes   a unary response [64 MiB]
     list_chunk           keys per range request of a list without a limit [500]
     obj_opts             how objects are made (allocator, codec, limits)
     allocator            [KCTL_MALLOC/KCTL_FREE]
   Strings are copied. */
typedef struct kctl_etcd_desc {
    const char *endpoints;
    const char *prefix;
    const char *username;
    const char *password;
    kctl_http_tls tls;
    uint64_t request_timeout_ns;
    uint64_t connect_timeout_ns;
    size_t max_message_bytes;
    size_t max_response_bytes;
    uint32_t list_chunk;
    kctl_obj_opts obj_opts;
    kctl_allocator allocator;
} kctl_etcd_desc;

/* What the transport has done (for metrics and tests). */
typedef struct kctl_etcd_stats {
    uint64_t requests;       /* unary requests sent */
    uint64_t failovers;      /* times a request or watch moved to the next endpoint */
    uint64_t reauths;        /* tokens renewed */
    uint64_t watches;        /* watch streams opened */
    uint64_t retries;        /* writes decided again after another writer won a race */
    uint32_t endpoint;       /* where the next request and watch start (an index into
                                endpoints, from 0): the endpoint that last answered */
    uint32_t watch_endpoint; /* where the last watch opened (an index into endpoints) */
} kctl_etcd_stats;

/* The desc with every default filled in. [any thread] */
KCTL_API kctl_etcd_desc kctl_etcd_desc_init(void);
/* A transport to the etcd cluster at desc->endpoints; *out owns it
   (kctl_transport_destroy frees it, after every user is done). It does not
   contact the cluster yet, except to authenticate when a username is
   given (then UNAUTHORIZED, IO or TIMEOUT as the cluster answers).
   INVALID_ARG for a missing or malformed endpoint list; NOMEM. [any thread] */
KCTL_API int kctl_etcd_create(const kctl_etcd_desc *desc, kctl_transport *out);
/* t's counters (all zero if t is no etcd transport). [any thread] */
KCTL_API void kctl_etcd_read_stats(const kctl_transport *t, kctl_etcd_stats *out);

/* ===================================================================== >>kube KUBERNETES */

/* Options of a transport to a Kubernetes API server; zero means the
   default (in brackets):
     server               required: "https://host:6443" (or http://)
     token                a bearer token [none]
     token_file           or a file holding it, read again when it changes
                          (a projected service-account token rotates)
     tls                  see TLS
     request_timeout_ns   each unary request [30 s]
     connect_timeout_ns   each connection attempt [5 s]
     watch_timeout_min_s, watch_timeout_max_s
                          a watch asks the server to end it after a random
                          timeoutSeconds in [min, max] [300, 600], as
                          client-go does, so a fleet's watches do not end
                          together
     max_message_bytes    a watch event [16 MiB]
     max_response_bytes   a unary response [256 MiB]
     obj_opts             how objects are made (allocator, codec, limits)
     allocator            [KCTL_MALLOC/KCTL_FREE]
   Strings are copied. */
typedef struct kctl_kube_desc {
    const char *server;
    const char *token;
    const char *token_file;
    kctl_http_tls tls;
    uint64_t request_timeout_ns;
    uint64_t connect_timeout_ns;
    uint32_t watch_timeout_min_s;
    uint32_t watch_timeout_max_s;
    size_t max_message_bytes;
    size_t max_response_bytes;
    kctl_obj_opts obj_opts;
    kctl_allocator allocator;
} kctl_kube_desc;

/* What the transport has done (for metrics and tests). */
typedef struct kctl_kube_stats {
    uint64_t requests;       /* unary requests sent (each retry too) */
    uint64_t watches;        /* watch streams opened (the server answered 200) */
    uint64_t watch_ends;     /* watches the server ended cleanly (its timeoutSeconds): CLOSED */
    uint64_t waits;          /* 429 and 503 answers whose Retry-After was waited out,
                                then the request sent again */
    uint64_t throttled;      /* 429 and 503 answers handed to the caller (AGAIN) */
    uint64_t token_reads;    /* times token_file was read again (it changed, or a 401) */
    uint64_t auth_retries;   /* requests sent again after a 401, with a token read anew */
} kctl_kube_stats;

/* The desc with every default filled in. [any thread] */
KCTL_API kctl_kube_desc kctl_kube_desc_init(void);
/* A transport to the API server at desc->server; *out owns it
   (kctl_transport_destroy frees it, after every user is done). It does
   not contact the server. INVALID_ARG for a missing or malformed server
   URL (one URL: http:// or https://), a token that is empty or holds
   characters a header cannot carry, an allocator with one function;
   IO when token_file cannot be read; NOMEM. [any thread] */
KCTL_API int kctl_kube_create(const kctl_kube_desc *desc, kctl_transport *out);
/* t's counters (all zero if t is no Kubernetes transport). [any thread] */
KCTL_API void kctl_kube_read_stats(const kctl_transport *t, kctl_kube_stats *out);

/* ===================================================================== >>kubeconfig KUBECONFIG */
/* Where a transport to a Kubernetes API server finds its server and
   credentials, as kubectl and client-go find them: a kubeconfig file
   (current-context or a named one) or the pod's service account
   (in-cluster). Each gives a kctl_kube_config whose desc is ready for
   the transport:
       kctl_kube_config kc = { 0 };
       kctl_api_status st = { 0 };
       if (kctl_kube_config_load(NULL, NULL, &kc, &st) != KCTL_OK)       // $KUBECONFIG or ~/.kube/config
           fprintf(stderr, "%s\n", st.message);  // kubeconfig line 12: anchors (&) are not supported
       ... kc.desc to the transport, kc.ns as the namespace ...
       kctl_kube_config_free(&kc);              // after the transport is created (it copies)
   The file may be JSON or the YAML kubectl writes: block mappings and
   sequences, plain, 'single-' and "double-quoted" scalars (with escapes,
   folded over lines), comments, one document (--- before it), and the
   empty flow collections {} and []. Anything else is refused, naming
   its line: anchors, aliases, tags, block scalars (| >), flow
   collections with content, complex keys, directives, tabs in
   indentation, a repeated key, more than one document. Plain scalars
   are strings, but for null, ~ and nothing (null) and true and false
   (in YAML 1.2's core spellings); numbers are kept as their text.
   Read from the file, as client-go reads it: clusters (server,
   certificate-authority, certificate-authority-data,
   insecure-skip-tls-verify), users (token, tokenFile,
   client-certificate(-data), client-key(-data)), contexts (cluster,
   user, namespace). A relative file name is relative to the
   kubeconfig's directory. Refused, by name: users with an exec plugin
   or an auth-provider (kctl runs no plugin), basic auth
   (username/password), impersonation (as, as-groups, as-uid,
   as-user-extra); clusters with proxy-url or tls-server-name; both a
   file and its -data, and a CA with insecure-skip-tls-verify (client-go
   refuses these too). Other fields are ignored. Messages name files,
   lines, fields and names, never a token, key or password. */
#define KCTL_KUBECONFIG_MAX_BYTES (4u * 1024u * 1024u) /* a kubeconfig file; beyond: TOO_LARGE */
#define KCTL_KUBECONFIG_MAX_DEPTH 32                   /* its nesting; beyond: TOO_LARGE */

/* A configuration that owns its strings (one block, from .allocator). */
typedef struct kctl_kube_config {
    kctl_kube_desc desc;       /* server, token or token_file, tls; allocator = .allocator;
                                  the rest zero (the transport's defaults) */
    const char *ns;            /* the context's namespace; "default" when it has none */
    const char *context;       /* the context's name ("" in-cluster) */
    kctl_allocator allocator;  /* set it before a load to choose where the strings go */
    void *mem_;                /* private: the block */
} kctl_kube_config;

/* Read the kubeconfig at path (NULL: the first entry of $KUBECONFIG, a
   list separated by ':', else $HOME/.kube/config; kubectl merges every
   entry, kctl reads only the first) and fill *out for context (NULL: the
   file's current-context). *out (its allocator kept; what it held is
   freed first) owns its strings until kctl_kube_config_free; *st (may
   be NULL) gets a message on failure. Returns OK; NOT_FOUND (no file,
   no $HOME, no current-context, or no context, cluster or user of that
   name); INVALID_ARG (a NULL out; text outside the supported YAML, with
   its line; a field of the wrong type; a refused field or plugin; two
   entries of one name); TOO_LARGE (beyond KCTL_KUBECONFIG_MAX_BYTES or
   KCTL_KUBECONFIG_MAX_DEPTH); IO (the file cannot be read); NOMEM.
   [any thread, given its own out and st] */
KCTL_API int kctl_kube_config_load(const char *path, const char *context, kctl_kube_config *out, kctl_api_status *st);
/* The same from a kubeconfig's text[0..len) (KCTL_NTS: NUL-terminated)
   in memory; relative file names in it are made relative to dir (NULL:
   left as they are, relative to the working directory). The same codes
   but for IO. [any thread, given its own out and st] */
KCTL_API int kctl_kube_config_parse(const char *text, size_t len, const char *dir, const char *context,
                                    kctl_kube_config *out, kctl_api_status *st);
/* The configuration of a pod, as client-go's InClusterConfig makes it:
   server https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (an
   IPv6 host in brackets), token_file <sa_dir>/token (the transport reads
   it again when it changes: projected tokens rotate), ca_file
   <sa_dir>/ca.crt when it exists, ns from $POD_NAMESPACE, else
   <sa_dir>/namespace, else "default"; context "". sa_dir: the service
   account's directory (NULL: /var/run/secrets/kubernetes.io/serviceaccount;
   tests give one of their own). Returns OK; NOT_FOUND (not in a cluster:
   either variable unset or empty, or no token file); IO (the token file
   cannot be opened); INVALID_ARG (a NULL out, a port that is not a
   number in 1..65535, a host that is not a name or an address); NOMEM. Ownership as kctl_kube_config_load's. [any thread, given its own
   out and st] */
KCTL_API int kctl_kube_config_in_cluster(const char *sa_dir, kctl_kube_config *out, kctl_api_status *st);
/* Free c's strings and zero it but for its allocator (a zeroed c, or
   NULL, is fine). [any thread, given its own c] */
KCTL_API void kctl_kube_config_free(kctl_kube_config *c);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* KCTL_HTTP_CURL_H_INCLUDED */

/* ========================================================================== */
/* ============================ IMPLEMENTATION ============================== */
/* ========================================================================== */
#if (defined(KCTL_IMPLEMENTATION) || defined(KCTL_HTTP_CURL_IMPLEMENTATION)) && !defined(KCTL_HTTP_CURL_IMPLEMENTATION_DONE)
#define KCTL_HTTP_CURL_IMPLEMENTATION_DONE

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if LIBCURL_VERSION_NUM < 0x074d00
#error "kctl_http_curl.h needs libcurl 7.77 or later (in-memory CA and client certificates)"
#endif

/* ------------------------------------------------------------------ >>http HTTP */
/* What a libcurl transport needs below its protocol: memory through the
   user's allocator, byte buffers with a bound, base64, a lock, and HTTP
   requests: unary ones over a small pool of kept-alive connections, and
   streams (a watch) read line by line as bytes arrive. */

static void *kctl__http_alloc(const kctl_allocator *a, size_t n) {
    if (a && a->alloc_fn) return a->alloc_fn(n, a->user_data);
    return malloc(n);
}
static void kctl__http_free(const kctl_allocator *a, void *p) {
    if (!p) return;
    if (a && a->free_fn) a->free_fn(p, a->user_data);
    else free(p);
}
static char *kctl__http_strndup(const kctl_allocator *a, const char *s, size_t n) {
    char *d = (char *)kctl__http_alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* A byte buffer that grows up to max (then err = TOO_LARGE); NUL-terminated. */
typedef struct kctl__hbuf {
    char *p;
    size_t len, cap, max;
    const kctl_allocator *a;
    int err;
} kctl__hbuf;

static void kctl__hbuf_init(kctl__hbuf *b, const kctl_allocator *a, size_t max) {
    memset(b, 0, sizeof *b);
    b->a = a;
    b->max = max;
}
static void kctl__hbuf_free(kctl__hbuf *b) {
    kctl__http_free(b->a, b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
static void kctl__hbuf_put(kctl__hbuf *b, const void *s, size_t n) {
    if (b->err) return;
    if (n > b->max || b->len > b->max - n) { b->err = KCTL_ERR_TOO_LARGE; return; }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *np;
        while (cap < b->len + n + 1) cap *= 2;
        if (!(np = (char *)kctl__http_alloc(b->a, cap))) { b->err = KCTL_ERR_NOMEM; return; }
        if (b->len) memcpy(np, b->p, b->len);
        kctl__http_free(b->a, b->p);
        b->p = np;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}
static void kctl__hbuf_str(kctl__hbuf *b, const char *s) { kctl__hbuf_put(b, s, strlen(s)); }

/* base64 (standard alphabet, padded), as etcd's gateway writes keys and values */
static const char kctl__b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void kctl__hbuf_b64(kctl__hbuf *b, const unsigned char *s, size_t n) {
    char q[4];
    size_t i;
    for (i = 0; i + 2 < n; i += 3) {
        q[0] = kctl__b64[s[i] >> 2];
        q[1] = kctl__b64[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
        q[2] = kctl__b64[((s[i + 1] & 15) << 2) | (s[i + 2] >> 6)];
        q[3] = kctl__b64[s[i + 2] & 63];
        kctl__hbuf_put(b, q, 4);
    }
    if (i < n) {
        q[0] = kctl__b64[s[i] >> 2];
        if (i + 1 < n) {
            q[1] = kctl__b64[((s[i] & 3) << 4) | (s[i + 1] >> 4)];
            q[2] = kctl__b64[(s[i + 1] & 15) << 2];
        } else {
            q[1] = kctl__b64[(s[i] & 3) << 4];
            q[2] = '=';
        }
        q[3] = '=';
        kctl__hbuf_put(b, q, 4);
    }
}

static int kctl__b64_val(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decode s[0..n) (padded or not) into out (at least n * 3 / 4 + 3 bytes);
   the length, or -1 for text that is no base64. */
static long kctl__b64_decode(const char *s, size_t n, unsigned char *out) {
    size_t i, o = 0;
    unsigned v = 0;
    int bits = 0;
    while (n && s[n - 1] == '=') n--;
    for (i = 0; i < n; i++) {
        int d = kctl__b64_val(s[i]);
        if (d < 0) return -1;
        v = (v << 6) | (unsigned)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)((v >> bits) & 0xff);
        }
    }
    if (bits >= 6) return -1; /* one stray character */
    return (long)o;
}

/* A lock (none without threads). */
#ifndef KCTL_NO_THREADS
typedef pthread_mutex_t kctl__hmutex;
static int kctl__hmutex_init(kctl__hmutex *m) { return pthread_mutex_init(m, NULL) == 0 ? KCTL_OK : KCTL_ERR_NOMEM; }
static void kctl__hmutex_deinit(kctl__hmutex *m) { pthread_mutex_destroy(m); }
static void kctl__hmutex_lock(kctl__hmutex *m) { pthread_mutex_lock(m); }
static void kctl__hmutex_unlock(kctl__hmutex *m) { pthread_mutex_unlock(m); }
static pthread_once_t kctl__http_once = PTHREAD_ONCE_INIT;
static void kctl__http_global(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
static void kctl__http_global_init(void) { pthread_once(&kctl__http_once, kctl__http_global); }
#else
typedef int kctl__hmutex;
static int kctl__hmutex_init(kctl__hmutex *m) { *m = 0; return KCTL_OK; }
static void kctl__hmutex_deinit(kctl__hmutex *m) { (void)m; }
static void kctl__hmutex_lock(kctl__hmutex *m) { (void)m; }
static void kctl__hmutex_unlock(kctl__hmutex *m) { (void)m; }
static int kctl__http_global_done;
static void kctl__http_global_init(void) {
    if (!kctl__http_global_done) curl_global_init(CURL_GLOBAL_DEFAULT);
    kctl__http_global_done = 1;
}
#endif

#define KCTL__HTTP_POOL 8 /* kept-alive connections for unary requests */

/* A client of one service at several endpoints. */
typedef struct kctl__http {
    kctl_allocator a;
    char **ep;                 /* endpoints, without a trailing '/' */
    size_t nep;
    size_t cur;                /* the endpoint that last answered (under mu) */
    long timeout_ms, connect_ms;
    size_t max_msg, max_resp;
    kctl_http_tls tls;         /* its strings owned */
    kctl__hmutex mu;
    CURL *idle[KCTL__HTTP_POOL];
    size_t nidle;
    char *auth;                /* "Authorization: <token>" (under mu), or NULL */
    uint64_t n_requests, n_failovers;
} kctl__http;

/* A transport's limits: timeouts in whole milliseconds (at least 1), the
   bounds of a stream's message and of a unary response. */
static void kctl__http_limits(kctl__http *h, uint64_t request_ns, uint64_t connect_ns, size_t max_msg, size_t max_resp) {
    h->timeout_ms = (long)(request_ns / 1000000u ? request_ns / 1000000u : 1);
    h->connect_ms = (long)(connect_ns / 1000000u ? connect_ns / 1000000u : 1);
    h->max_msg = max_msg;
    h->max_resp = max_resp;
}

static int kctl__http_init(kctl__http *h, const kctl_allocator *a, const char *endpoints, const kctl_http_tls *tls) {
    const char *p = endpoints, *e;
    size_t n = 0, i = 0;
    memset(h, 0, sizeof *h);
    if (a) h->a = *a;
    if (!endpoints || !*endpoints) return KCTL_ERR_INVALID_ARG;
    for (p = endpoints; *p; p++) n += *p == ',';
    if (!(h->ep = (char **)kctl__http_alloc(&h->a, (n + 1) * sizeof *h->ep))) return KCTL_ERR_NOMEM;
    memset(h->ep, 0, (n + 1) * sizeof *h->ep);
    for (p = endpoints; ; p = e + 1) {
        size_t len;
        e = strchr(p, ',');
        if (!e) e = p + strlen(p);
        while (p < e && (*p == ' ' || *p == '\t')) p++;
        len = (size_t)(e - p);
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '/')) len--;
        if (len) {
            if ((len < 7 || strncmp(p, "http://", 7) != 0) && (len < 8 || strncmp(p, "https://", 8) != 0)) return KCTL_ERR_INVALID_ARG;
            if (!(h->ep[i++] = kctl__http_strndup(&h->a, p, len))) return KCTL_ERR_NOMEM;
        }
        if (!*e) break;
    }
    h->nep = i;
    if (!h->nep) return KCTL_ERR_INVALID_ARG;
    if (tls) {
        h->tls.insecure = tls->insecure;
#define KCTL__HTTP_COPY(f, lenf) \
        if (tls->f) { \
            size_t l_ = tls->lenf == KCTL_NTS || !tls->lenf ? strlen(tls->f) : tls->lenf; \
            if (!(h->tls.f = kctl__http_strndup(&h->a, tls->f, l_))) return KCTL_ERR_NOMEM; \
            h->tls.lenf = l_; \
        }
        KCTL__HTTP_COPY(ca_data, ca_len)
        KCTL__HTTP_COPY(cert_data, cert_len)
        KCTL__HTTP_COPY(key_data, key_len)
#undef KCTL__HTTP_COPY
        if (tls->ca_file && !(h->tls.ca_file = kctl__http_strndup(&h->a, tls->ca_file, strlen(tls->ca_file)))) return KCTL_ERR_NOMEM;
        if (tls->cert_file && !(h->tls.cert_file = kctl__http_strndup(&h->a, tls->cert_file, strlen(tls->cert_file)))) return KCTL_ERR_NOMEM;
        if (tls->key_file && !(h->tls.key_file = kctl__http_strndup(&h->a, tls->key_file, strlen(tls->key_file)))) return KCTL_ERR_NOMEM;
    }
    return kctl__hmutex_init(&h->mu);
}

static void kctl__http_deinit(kctl__http *h) {
    size_t i;
    for (i = 0; i < h->nidle; i++) curl_easy_cleanup(h->idle[i]);
    for (i = 0; h->ep && i < h->nep; i++) kctl__http_free(&h->a, h->ep[i]);
    kctl__http_free(&h->a, h->ep);
    kctl__http_free(&h->a, (void *)(uintptr_t)h->tls.ca_file);
    kctl__http_free(&h->a, (void *)(uintptr_t)h->tls.ca_data);
    kctl__http_free(&h->a, (void *)(uintptr_t)h->tls.cert_file);
    kctl__http_free(&h->a, (void *)(uintptr_t)h->tls.cert_data);
    kctl__http_free(&h->a, (void *)(uintptr_t)h->tls.key_file);
    kctl__http_free(&h->a, (void *)(uintptr_t)h->tls.key_data);
    kctl__http_free(&h->a, h->auth);
    kctl__hmutex_deinit(&h->mu);
}

/* The options every request of h shares: TLS, timeouts, no signals. */
static void kctl__http_common(kctl__http *h, CURL *c) {
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kctl/" KCTL_VERSION_STRING); /* an API server names the field manager after it */
    if (h->tls.insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (h->tls.ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, h->tls.ca_file);
    if (h->tls.ca_data) {
        struct curl_blob b;
        b.data = (void *)(uintptr_t)h->tls.ca_data;
        b.len = h->tls.ca_len;
        b.flags = CURL_BLOB_COPY;
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
    }
    if (h->tls.cert_file) curl_easy_setopt(c, CURLOPT_SSLCERT, h->tls.cert_file);
    if (h->tls.cert_data) {
        struct curl_blob b;
        b.data = (void *)(uintptr_t)h->tls.cert_data;
        b.len = h->tls.cert_len;
        b.flags = CURL_BLOB_COPY;
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &b);
    }
    if (h->tls.key_file) curl_easy_setopt(c, CURLOPT_SSLKEY, h->tls.key_file);
    if (h->tls.key_data) {
        struct curl_blob b;
        b.data = (void *)(uintptr_t)h->tls.key_data;
        b.len = h->tls.key_len;
        b.flags = CURL_BLOB_COPY;
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &b);
    }
}

static size_t kctl__http_collect(char *data, size_t size, size_t n, void *ud) {
    kctl__hbuf *b = (kctl__hbuf *)ud;
    kctl__hbuf_put(b, data, size * n);
    return b->err ? 0 : size * n; /* 0 ends the transfer: too large, or no memory */
}

/* The answer to a unary request. */
typedef struct kctl__hres {
    long code;        /* HTTP status, 0 if none came */
    kctl__hbuf body;
    CURLcode cc;      /* why the last endpoint tried failed (CURLE_OK: it answered) */
    long retry_after; /* its Retry-After in seconds, -1: none */
} kctl__hres;

/* A request: method (NULL: POST), path (after the endpoint), body (NULL:
   none) of content type ctype (NULL: application/json), one more header
   (or NULL), a timeout (0: the client's), kind (KCTL__HTTP_READ...). */
typedef struct kctl__hreq {
    int kind;
    const char *method;
    const char *path;
    const char *body;
    size_t len;
    const char *ctype;
    const char *extra;
    long timeout_ms;
} kctl__hreq;

/* Retry-After in delay-seconds (an HTTP date is read by libcurl, after
   the transfer); into the long ud points at. */
static size_t kctl__http_header(char *data, size_t size, size_t n, void *ud) {
    size_t len = size * n, i = 12;
    long v = 0;
    if (len > 12) {
        static const char want[] = "retry-after:";
        size_t k;
        for (k = 0; k < 12; k++) {
            char c = data[k];
            if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
            if (c != want[k]) return len;
        }
        while (i < len && (data[i] == ' ' || data[i] == '\t')) i++;
        if (i == len || data[i] < '0' || data[i] > '9') { *(long *)ud = -2; return len; } /* a date: libcurl's */
        for (; i < len && data[i] >= '0' && data[i] <= '9'; i++) v = v > 100000000L ? v : v * 10 + (data[i] - '0');
        *(long *)ud = v;
    }
    return len;
}

/* After a transfer: the Retry-After seen (-2: a date, which libcurl reads). */
static long kctl__http_retry_after(CURL *c, long seen) {
    curl_off_t ra = 0;
    if (seen != -2) return seen;
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra <= 0) return -1;
    return ra > 100000000 ? 100000000L : (long)ra;
}

/* How a request may be retried at another endpoint; KCTL__HTTP_NOAUTH
   (or'd in) sends it without the token. */
enum { KCTL__HTTP_READ = 0, KCTL__HTTP_WRITE = 1, KCTL__HTTP_NOAUTH = 2 };

/* Send q, trying each endpoint once from the one that last answered: OK
   with res->code, res->body and res->retry_after (any HTTP status: the
   caller reads an error body), or the transport's failure: IO (no
   endpoint answered; res->cc says why the last one failed), TIMEOUT,
   TOO_LARGE, NOMEM. A read moves on to the next endpoint after any
   failure and after a 503 (unavailable: no leader, no quorum); a write
   only when it could not be sent (no connection): once it may have
   arrived, its failure is the caller's (TIMEOUT or IO: the outcome is
   unknown) and a 503 is the caller's to read. The next call starts at the
   endpoint that answered. */
static int kctl__http_do(kctl__http *h, const kctl__hreq *q, kctl__hres *res) {
    size_t k, start;
    int rc = KCTL_ERR_IO, kind = q->kind;
    kctl__hbuf url;
    memset(res, 0, sizeof *res);
    res->retry_after = -1;
    kctl__hbuf_init(&res->body, &h->a, h->max_resp);
    kctl__hbuf_init(&url, &h->a, 4096);
    kctl__hmutex_lock(&h->mu);
    start = h->cur;
    h->n_requests++;
    kctl__hmutex_unlock(&h->mu);
    for (k = 0; k < h->nep; k++) {
        size_t e = (start + k) % h->nep;
        CURL *c = NULL;
        CURLcode cc;
        struct curl_slist *hdrs = NULL, *t;
        bool not_sent;
        kctl__hmutex_lock(&h->mu);
        if (h->nidle) c = h->idle[--h->nidle];
        if (h->auth && !(kind & KCTL__HTTP_NOAUTH)) hdrs = curl_slist_append(NULL, h->auth);
        kctl__hmutex_unlock(&h->mu);
        if (!c && !(c = curl_easy_init())) {
            curl_slist_free_all(hdrs);
            rc = KCTL_ERR_NOMEM;
            break;
        }
        url.len = 0;
        kctl__hbuf_str(&url, h->ep[e]);
        kctl__hbuf_str(&url, q->path);
        if (q->body) {
            char ct[96];
            snprintf(ct, sizeof ct, "Content-Type: %s", q->ctype ? q->ctype : "application/json");
            if ((t = curl_slist_append(hdrs, ct)) != NULL) hdrs = t;
        }
        if (q->extra && (t = curl_slist_append(hdrs, q->extra)) != NULL) hdrs = t;
        res->body.len = 0;
        res->body.err = 0;
        if (res->body.p) res->body.p[0] = '\0';
        res->retry_after = -1;
        kctl__http_common(h, c);
        curl_easy_setopt(c, CURLOPT_URL, url.p);
        if (!q->method || !strcmp(q->method, "POST")) curl_easy_setopt(c, CURLOPT_POST, 1L);
        else if (!strcmp(q->method, "GET")) curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        else curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
        if (q->body || !q->method || !strcmp(q->method, "POST")) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body ? q->body : "");
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(q->body ? q->len : 0));
        }
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, q->timeout_ms > 0 ? q->timeout_ms : h->timeout_ms);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kctl__http_collect);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &res->body);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, kctl__http_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &res->retry_after);
        cc = url.err ? CURLE_OUT_OF_MEMORY : curl_easy_perform(c);
        res->cc = cc;
        res->code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->code);
        res->retry_after = kctl__http_retry_after(c, res->retry_after);
        curl_easy_reset(c); /* keeps its connection for the next request */
        curl_slist_free_all(hdrs);
        kctl__hmutex_lock(&h->mu);
        if (h->nidle < KCTL__HTTP_POOL) h->idle[h->nidle++] = c;
        else curl_easy_cleanup(c);
        kctl__hmutex_unlock(&h->mu);
        if (cc == CURLE_OK && (res->code != 503 || (kind & KCTL__HTTP_WRITE))) {
            kctl__hmutex_lock(&h->mu);
            h->cur = e;
            kctl__hmutex_unlock(&h->mu);
            rc = KCTL_OK;
            break;
        }
        if (cc == CURLE_WRITE_ERROR && res->body.err) { rc = res->body.err; break; }
        if (cc == CURLE_OUT_OF_MEMORY) { rc = KCTL_ERR_NOMEM; break; }
        kctl__hmutex_lock(&h->mu);
        if (h->cur == e) h->cur = (e + 1) % h->nep; /* the next call starts elsewhere */
        h->n_failovers++;
        kctl__hmutex_unlock(&h->mu);
        if (cc == CURLE_OK) { rc = KCTL_OK; continue; } /* a read's 503: the next one, or this answer */
        not_sent = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_RESOLVE_PROXY;
        rc = cc == CURLE_OPERATION_TIMEDOUT ? KCTL_ERR_TIMEOUT : KCTL_ERR_IO;
        if (!not_sent && (kind & KCTL__HTTP_WRITE)) break;
    }
    kctl__hbuf_free(&url);
    if (rc != KCTL_OK) kctl__hbuf_free(&res->body);
    return rc;
}

/* POST body to path (see kctl__http_do); extra: one more header or NULL. */
static int kctl__http_post(kctl__http *h, int kind, const char *path, const char *body, size_t len, const char *extra,
                           kctl__hres *res) {
    kctl__hreq q;
    memset(&q, 0, sizeof q);
    q.kind = kind;
    q.path = path;
    q.body = body;
    q.len = len;
    q.extra = extra;
    return kctl__http_do(h, &q, res);
}

/* ---- streams: a request whose answer is read line by line */
typedef struct kctl__hstream {
    kctl__http *h;
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    char *body;            /* the request body, kept while the transfer lives */
    kctl__hbuf buf;        /* bytes received and not yet consumed, from start */
    size_t start, scan;    /* the next line begins at start; no '\n' before scan */
    size_t tail;           /* where the last line the writer saw begins (after its last '\n') */
    size_t max_msg;
    size_t ep;             /* the endpoint it talks to */
    bool done;             /* the transfer ended */
    bool too_large;        /* a line grew past max_msg */
    bool paused;           /* the writer paused the transfer: whole lines wait to be read */
    CURLcode cc;
    long code;
    long retry_after;      /* the answer's Retry-After in seconds (-1: none; -2: a date) */
    int sock;              /* the connection's socket as libcurl opened it (-1: none), for watch_notify */
} kctl__hstream;

/* Bytes a stream holds beyond max_msg: the whole lines not read yet, and
   what one write brings (libcurl's are at most 16 KiB). More waits in
   libcurl (the transfer is paused) until the reader catches up. */
#define KCTL__HSTREAM_SLACK 65536

static size_t kctl__hstream_write(char *data, size_t size, size_t n, void *ud) {
    kctl__hstream *s = (kctl__hstream *)ud;
    size_t len = size * n, at;
    if (s->start && (s->start * 2 >= s->buf.len || s->buf.len + len > s->max_msg)) { /* drop the consumed lines */
        memmove(s->buf.p, s->buf.p + s->start, s->buf.len - s->start);
        s->buf.len -= s->start;
        s->scan -= s->start;
        s->tail -= s->start;
        s->start = 0;
        s->buf.p[s->buf.len] = '\0';
    }
    if (s->buf.len + len > s->max_msg + KCTL__HSTREAM_SLACK && s->tail > s->start) {
        s->paused = true; /* whole lines wait: libcurl holds the rest until they are read */
        return CURL_WRITEFUNC_PAUSE;
    }
    at = s->buf.len;
    kctl__hbuf_put(&s->buf, data, len);
    if (s->buf.err) return 0;
    for (;;) { /* only the new bytes are looked at: each byte once */
        char *nl = (char *)memchr(s->buf.p + at, '\n', s->buf.len - at);
        size_t end = nl ? (size_t)(nl - s->buf.p) : s->buf.len;
        if (end - s->tail > s->max_msg) { /* a message past the bound: end the stream, never hold more */
            s->too_large = true;
            s->buf.len = s->tail; /* the lines before it are still read; this one never */
            s->buf.p[s->buf.len] = '\0';
            return 0;
        }
        if (!nl) break;
        s->tail = at = end + 1;
    }
    return len;
}

/* libcurl's socket of a stream: remembered when opened, forgotten when
   closed (kctl__hnotify waits on it). */
static int kctl__hstream_sockopt(void *ud, curl_socket_t fd, curlsocktype purpose) {
    if (purpose == CURLSOCKTYPE_IPCXN) ((kctl__hstream *)ud)->sock = (int)fd;
    return CURL_SOCKOPT_OK;
}
static int kctl__hstream_closesocket(void *ud, curl_socket_t fd) {
    kctl__hstream *s = (kctl__hstream *)ud;
    if (s->sock == (int)fd) s->sock = -1;
    return close((int)fd);
}

static void kctl__hstream_close(kctl__hstream *s) {
    if (!s || !s->h) return; /* never opened, or closed already */
    if (s->easy) {
        if (s->multi) curl_multi_remove_handle(s->multi, s->easy);
        curl_easy_cleanup(s->easy);
    }
    if (s->multi) curl_multi_cleanup(s->multi);
    curl_slist_free_all(s->hdrs);
    kctl__http_free(&s->h->a, s->body);
    kctl__hbuf_free(&s->buf);
    memset(s, 0, sizeof *s);
}

/* Start sending q (its method: POST, or GET without a body) at endpoint
   ep, the answer to be read with kctl__hstream_line. OK or NOMEM; a
   connection that fails shows as the stream ending. */
static int kctl__hstream_start(kctl__http *h, size_t ep, const kctl__hreq *q, kctl__hstream *s) {
    kctl__hbuf url;
    struct curl_slist *t;
    memset(s, 0, sizeof *s);
    s->h = h;
    s->ep = ep;
    s->max_msg = h->max_msg;
    s->retry_after = -1;
    s->sock = -1;
    kctl__hbuf_init(&s->buf, &h->a, h->max_msg + KCTL__HSTREAM_SLACK);
    kctl__hbuf_init(&url, &h->a, 8192);
    kctl__hbuf_str(&url, h->ep[ep]);
    kctl__hbuf_str(&url, q->path);
    kctl__hmutex_lock(&h->mu);
    if (h->auth) s->hdrs = curl_slist_append(NULL, h->auth);
    kctl__hmutex_unlock(&h->mu);
    if (q->body && (t = curl_slist_append(s->hdrs, "Content-Type: application/json")) != NULL) s->hdrs = t;
    if (q->extra && (t = curl_slist_append(s->hdrs, q->extra)) != NULL) s->hdrs = t;
    if (q->body) s->body = kctl__http_strndup(&h->a, q->body, q->len);
    s->multi = curl_multi_init();
    s->easy = curl_easy_init();
    if (url.err || !s->hdrs || (q->body && !s->body) || !s->multi || !s->easy) {
        kctl__hbuf_free(&url);
        kctl__hstream_close(s);
        return KCTL_ERR_NOMEM;
    }
    kctl__http_common(h, s->easy);
    curl_easy_setopt(s->easy, CURLOPT_URL, url.p);
    if (s->body) {
        curl_easy_setopt(s->easy, CURLOPT_POST, 1L);
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body);
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
    } else {
        curl_easy_setopt(s->easy, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(s->easy, CURLOPT_HEADERFUNCTION, kctl__http_header);
    curl_easy_setopt(s->easy, CURLOPT_HEADERDATA, &s->retry_after);
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->hdrs);
    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, kctl__hstream_write);
    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_FORBID_REUSE, 1L); /* a watch's connection is its own */
    curl_easy_setopt(s->easy, CURLOPT_SOCKOPTFUNCTION, kctl__hstream_sockopt);
    curl_easy_setopt(s->easy, CURLOPT_SOCKOPTDATA, s);
    curl_easy_setopt(s->easy, CURLOPT_CLOSESOCKETFUNCTION, kctl__hstream_closesocket);
    curl_easy_setopt(s->easy, CURLOPT_CLOSESOCKETDATA, s);
    kctl__hbuf_free(&url);
    if (curl_multi_add_handle(s->multi, s->easy) != CURLM_OK) {
        kctl__hstream_close(s);
        return KCTL_ERR_NOMEM;
    }
    return KCTL_OK;
}

/* POST body to path at endpoint ep as a stream; extra: one more header or NULL. */
static int kctl__hstream_open(kctl__http *h, size_t ep, const char *path, const char *body, size_t len, const char *extra,
                              kctl__hstream *s) {
    kctl__hreq q;
    memset(&q, 0, sizeof q);
    q.path = path;
    q.body = body;
    q.len = len;
    q.extra = extra;
    return kctl__hstream_start(h, ep, &q, s);
}

static uint64_t kctl__http_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The next line of the stream (without its "\n" or "\r\n"), waiting at
   most timeout_ms (0: take in what has arrived, once): OK with *line
   (valid until the next call), AGAIN (none yet), TOO_LARGE (a line past
   the bound), IO (the stream ended or broke; s->cc and s->code say how). */
/* The next whole line already received (without its "\r\n"): true, or
   false when none is there yet. */
static bool kctl__hstream_take(kctl__hstream *s, const char **line, size_t *n) {
    char *nl = s->buf.len > s->scan ? (char *)memchr(s->buf.p + s->scan, '\n', s->buf.len - s->scan) : NULL;
    size_t end;
    if (!nl) {
        s->scan = s->buf.len;
        return false;
    }
    end = (size_t)(nl - s->buf.p);
    *line = s->buf.p + s->start;
    *n = end - s->start;
    if (*n && (*line)[*n - 1] == '\r') (*n)--;
    s->start = s->scan = end + 1;
    return true;
}

/* One round of the transfer: wait at most wait_ms (0: not at all) for its
   socket, then take in what came. */
static void kctl__hstream_pump(kctl__hstream *s, int wait_ms) {
    int running = 0, left = 0, ready = 0;
    CURLMsg *m;
    if (wait_ms > 0) curl_multi_poll(s->multi, NULL, 0, wait_ms, &ready);
    curl_multi_perform(s->multi, &running);
    while ((m = curl_multi_info_read(s->multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE) {
            s->done = true;
            s->cc = m->data.result;
        }
    if (!running) s->done = true;
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->code);
    if (s->done) s->retry_after = kctl__http_retry_after(s->easy, s->retry_after);
}

static int kctl__hstream_line(kctl__hstream *s, uint64_t timeout_ms, const char **line, size_t *n) {
    uint64_t until = kctl__http_now_ms() + timeout_ms;
    bool polled = false;
    for (;;) {
        if (kctl__hstream_take(s, line, n)) return KCTL_OK;
        if (s->paused) { /* every line read: let libcurl hand over what it held */
            s->paused = false;
            curl_easy_pause(s->easy, CURLPAUSE_CONT);
            continue;
        }
        if (s->too_large) return KCTL_ERR_TOO_LARGE;
        if (s->done) return s->buf.err == KCTL_ERR_NOMEM ? KCTL_ERR_NOMEM : KCTL_ERR_IO;
        if (polled) {
            uint64_t now = kctl__http_now_ms();
            if (now >= until) return KCTL_ERR_AGAIN;
            kctl__hstream_pump(s, (int)(until - now > 1000 ? 1000 : until - now));
        } else {
            kctl__hstream_pump(s, 0);
        }
        polled = true;
    }
}

/* Wait at most timeout_ms for the answer's status line: OK (s->code is
   set, or the stream ended: s->done), or TIMEOUT. */
static int kctl__hstream_head(kctl__hstream *s, uint64_t timeout_ms) {
    uint64_t until = kctl__http_now_ms() + timeout_ms, now;
    kctl__hstream_pump(s, 0);
    while (!s->code && !s->done) {
        if ((now = kctl__http_now_ms()) >= until) return KCTL_ERR_TIMEOUT;
        kctl__hstream_pump(s, (int)(until - now > 1000 ? 1000 : until - now));
    }
    return KCTL_OK;
}

/* Wait at most timeout_ms for the transfer to end (an error answer's
   body): OK, or TIMEOUT. */
static int kctl__hstream_finish(kctl__hstream *s, uint64_t timeout_ms) {
    uint64_t until = kctl__http_now_ms() + timeout_ms, now;
    while (!s->done) {
        if (s->paused) {
            s->paused = false;
            curl_easy_pause(s->easy, CURLPAUSE_CONT);
        }
        if ((now = kctl__http_now_ms()) >= until) return KCTL_ERR_TIMEOUT;
        kctl__hstream_pump(s, (int)(until - now > 1000 ? 1000 : until - now));
    }
    return KCTL_OK;
}

/* The rest of a stream that ended, for an error body (a non-200 answer). */
static const char *kctl__hstream_rest(kctl__hstream *s, size_t *n) {
    *n = s->buf.len - s->start;
    return s->buf.p ? s->buf.p + s->start : "";
}

/* ---- wake-ups: watch_notify for a stream read on the caller's thread.
   A small thread per registered watch waits (poll) on the stream's socket
   while the reader is idle (its last watch_next said AGAIN) and calls the
   wake-up once when the socket becomes readable (bytes, the end, a
   reset), then waits to be armed again by the next AGAIN: one wake-up per
   idle spell with news, never a stream of them while bytes wait to be
   read. The thread never touches libcurl: libcurl tells the stream its
   socket as it opens and closes it (CURLOPT_SOCKOPTFUNCTION,
   CURLOPT_CLOSESOCKETFUNCTION), the reader hands it over when it arms,
   and reads the bytes itself.
   A socket closed or reused meanwhile costs a wake-up too many, which the
   contract allows. Under KCTL_NO_THREADS there is no thread to wait:
   watch_notify answers UNSUPPORTED and the reflector polls the stream
   every KCTL_REFLECTOR_POLL_NS (the one exception to "no periodic
   wake-up"; see the header's doc). */
#ifndef KCTL_NO_THREADS
#include <poll.h>
typedef struct kctl__hnotify {
    pthread_t th;
    pthread_mutex_t mu;
    int pipe[2];        /* a byte to [1]: look at fd/armed/stop again */
    int fd;             /* the socket to wait on (-1: none known) */
    bool armed, stop;
    kctl_wake wake;
    kctl_allocator a;
} kctl__hnotify;

static void *kctl__hnotify_main(void *arg) {
    kctl__hnotify *n = (kctl__hnotify *)arg;
    for (;;) {
        struct pollfd p[2];
        int fd;
        bool fire = false;
        pthread_mutex_lock(&n->mu);
        if (n->stop) {
            pthread_mutex_unlock(&n->mu);
            return NULL;
        }
        fd = n->armed ? n->fd : -1;
        pthread_mutex_unlock(&n->mu);
        p[0].fd = n->pipe[0];
        p[0].events = POLLIN;
        p[0].revents = 0;
        p[1].fd = fd;
        p[1].events = POLLIN;
        p[1].revents = 0;
        if (poll(p, fd >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            return NULL; /* cannot wait: the stall deadline still ends an idle watch */
        }
        if (p[0].revents) {
            char b[64];
            while (read(n->pipe[0], b, sizeof b) > 0) { }
            continue;
        }
        if (fd < 0 || !p[1].revents) continue;
        pthread_mutex_lock(&n->mu);
        if (n->armed && n->fd == fd) {
            n->armed = false; /* once: the reader arms again when idle */
            fire = true;
        }
        if (fire) n->wake.fn(n->wake.user_data); /* under mu: a close waits for it */
        pthread_mutex_unlock(&n->mu);
    }
}

static void kctl__hnotify_kick(kctl__hnotify *n) {
    char b = 1;
    ssize_t r = write(n->pipe[1], &b, 1); /* a full pipe already says "look again" */
    (void)r;
}

/* The stream's socket, or -1. */
static int kctl__hstream_socket(const kctl__hstream *s) { return s->easy && !s->done ? s->sock : -1; }

/* The reader of s is idle: wake on what comes next. A stream that has
   ended wakes at once (its end is news: watch_next says so). */
static void kctl__hnotify_arm(kctl__hnotify *n, kctl__hstream *s) {
    int fd;
    bool kick;
    if (!n) return;
    fd = kctl__hstream_socket(s);
    pthread_mutex_lock(&n->mu);
    if (fd < 0) { /* no socket to wait on (rare: between connections): wake once, then the stall deadline */
        if (n->fd >= 0) n->wake.fn(n->wake.user_data);
        n->armed = false;
        n->fd = -1;
        pthread_mutex_unlock(&n->mu);
        return;
    }
    kick = !n->armed || n->fd != fd;
    n->armed = true;
    n->fd = fd;
    pthread_mutex_unlock(&n->mu);
    if (kick) kctl__hnotify_kick(n);
}

/* Stop and free *np (NULL is fine): the thread is gone when it returns. */
static void kctl__hnotify_stop(kctl__hnotify **np) {
    kctl__hnotify *n = *np;
    if (!n) return;
    pthread_mutex_lock(&n->mu);
    n->stop = true;
    pthread_mutex_unlock(&n->mu);
    kctl__hnotify_kick(n);
    pthread_join(n->th, NULL);
    close(n->pipe[0]);
    close(n->pipe[1]);
    pthread_mutex_destroy(&n->mu);
    kctl__http_free(&n->a, n);
    *np = NULL;
}

/* Register wake for the stream s (again: the new wake replaces the old). */
static int kctl__hnotify_start(kctl__hnotify **np, const kctl_allocator *a, kctl__hstream *s, const kctl_wake *wake) {
    kctl__hnotify *n = *np;
    pthread_attr_t at;
    int i, rc;
    if (!wake || !wake->fn) return KCTL_ERR_INVALID_ARG;
    if (kctl__hstream_socket(s) < 0) return KCTL_ERR_UNSUPPORTED; /* nothing to wait on: poll it */
    if (n) {
        pthread_mutex_lock(&n->mu);
        n->wake = *wake;
        pthread_mutex_unlock(&n->mu);
        kctl__hnotify_arm(n, s);
        return KCTL_OK;
    }
    if (!(n = (kctl__hnotify *)kctl__http_alloc(a, sizeof *n))) return KCTL_ERR_NOMEM;
    memset(n, 0, sizeof *n);
    n->a = *a;
    n->fd = -1;
    n->wake = *wake;
    if (pipe(n->pipe) != 0) {
        kctl__http_free(a, n);
        return KCTL_ERR_IO;
    }
    for (i = 0; i < 2; i++) {
        fcntl(n->pipe[i], F_SETFL, fcntl(n->pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(n->pipe[i], F_SETFD, FD_CLOEXEC);
    }
    if (pthread_mutex_init(&n->mu, NULL) != 0) {
        close(n->pipe[0]);
        close(n->pipe[1]);
        kctl__http_free(a, n);
        return KCTL_ERR_NOMEM;
    }
    rc = pthread_attr_init(&at);
    if (rc == 0) {
        pthread_attr_setstacksize(&at, 128 * 1024); /* a poll loop */
        rc = pthread_create(&n->th, &at, kctl__hnotify_main, n);
        pthread_attr_destroy(&at);
    }
    if (rc != 0) {
        pthread_mutex_destroy(&n->mu);
        close(n->pipe[0]);
        close(n->pipe[1]);
        kctl__http_free(a, n);
        return KCTL_ERR_NOMEM;
    }
    *np = n;
    kctl__hnotify_arm(n, s); /* what came before the registration wakes at once */
    return KCTL_OK;
}
#else
typedef struct kctl__hnotify { int unused; } kctl__hnotify;
static void kctl__hnotify_arm(kctl__hnotify *n, kctl__hstream *s) { (void)n; (void)s; }
static void kctl__hnotify_stop(kctl__hnotify **np) { (void)np; }
static int kctl__hnotify_start(kctl__hnotify **np, const kctl_allocator *a, kctl__hstream *s, const kctl_wake *wake) {
    (void)np; (void)a; (void)s; (void)wake;
    return KCTL_ERR_UNSUPPORTED;
}
#endif

/* ------------------------------------------------------------------ >>etcd ETCD */
typedef struct kctl__etcd {
    kctl__http http;
    char *prefix;
    char *user, *password;
    uint32_t list_chunk;
    kctl_obj_opts obj_opts;
    kctl__hmutex mu;           /* the uid generator and the counters below */
    uint64_t rng[2];
    uint64_t n_reauths, n_watches, n_retries;
    uint32_t watch_ep; /* where the last watch opened */
} kctl__etcd;


KCTL_API kctl_etcd_desc kctl_etcd_desc_init(void) {
    kctl_etcd_desc d;
    memset(&d, 0, sizeof d);
    d.prefix = "/registry";
    d.request_timeout_ns = KCTL_SEC(5);
    d.connect_timeout_ns = KCTL_SEC(2);
    d.max_message_bytes = (size_t)4 << 20;
    d.max_response_bytes = (size_t)64 << 20;
    d.list_chunk = 500;
    return d;
}

/* ---- keys: <prefix>[/<group>]/<resource>[/<ns>][/<name>] */
static void kctl__etcd_key(const kctl__etcd *e, const kctl_resource *res, const char *ns, const char *name, kctl__hbuf *b) {
    kctl__hbuf_str(b, e->prefix);
    if (res->group && *res->group) {
        kctl__hbuf_put(b, "/", 1);
        kctl__hbuf_str(b, res->group);
    }
    kctl__hbuf_put(b, "/", 1);
    kctl__hbuf_str(b, res->resource);
    kctl__hbuf_put(b, "/", 1);
    if (ns && *ns) {
        kctl__hbuf_str(b, ns);
        kctl__hbuf_put(b, "/", 1);
    }
    if (name) kctl__hbuf_str(b, name);
}

/* A name or namespace that can stand in a key: what the API-server rules let through. */
static bool kctl__etcd_seg_ok(const char *s, bool empty_ok) {
    size_t n = 0;
    if (!s || !*s) return empty_ok;
    for (; *s; s++, n++)
        if ((unsigned char)*s <= ' ' || *s == '/' || *s == 0x7f || n >= 253) return false;
    return true;
}

/* ---- requests */
/* A JSON answer: the body and its tokens. */
typedef struct kctl__ejson {
    kctl__hres res;
    kctl_json j;
    kctl_json_tok *toks;
    const kctl_allocator *a;
} kctl__ejson;

static void kctl__ejson_free(kctl__ejson *r) {
    kctl__http_free(r->a, r->toks);
    r->toks = NULL;
    kctl__hbuf_free(&r->res.body);
}

static int kctl__ejson_parse(kctl__ejson *r, const char *text, size_t len) {
    int rc;
    if ((rc = kctl_json_parse(text, len, NULL, 0, NULL, &r->j)) != KCTL_OK) return KCTL_ERR_PROTO;
    if (!(r->toks = (kctl_json_tok *)kctl__http_alloc(r->a, (size_t)r->j.ntoks * sizeof *r->toks))) return KCTL_ERR_NOMEM;
    if (kctl_json_parse(text, len, r->toks, r->j.ntoks, NULL, &r->j) != KCTL_OK) return KCTL_ERR_PROTO;
    return kctl_json_type_of(&r->j, 0) == KCTL_JSON_OBJECT ? KCTL_OK : KCTL_ERR_PROTO;
}

/* The string at path of a parsed answer ("" when absent), unescaped into buf. */
static const char *kctl__ejson_str(const kctl_json *j, uint32_t from, const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    if (kctl_json_string(j, kctl_json_path(j, from, path), buf, cap, NULL) != KCTL_OK) buf[0] = '\0';
    return buf;
}

static uint64_t kctl__ejson_u64(const kctl_json *j, uint32_t from, const char *path) {
    uint64_t v = 0;
    if (kctl_json_uint64(j, kctl_json_path(j, from, path), &v) != KCTL_OK) v = 0;
    return v;
}

/* etcd's error body ({"error","message","code"}, code a gRPC code) as a
   kctl code and, when st is given, a Status. */
/* etcd is behind the revision asked for ("required revision is a future
   revision", or a watch whose start is past etcd's revision): TIMEOUT
   with the Status an API server gives, cause ResourceVersionTooLarge, so
   that a reflector lists again instead of asking for it forever. asked
   and current are named when known (not 0). */
static int kctl__etcd_future(kctl_api_status *st, uint64_t asked, uint64_t current) {
    char msg[112];
    kctl_status_cause c;
    if (!st) return KCTL_ERR_TIMEOUT;
    if (asked) snprintf(msg, sizeof msg, "Timeout: Too large resource version: %llu, current: %llu", (unsigned long long)asked,
                        (unsigned long long)current);
    else snprintf(msg, sizeof msg, "Timeout: Too large resource version: etcd: required revision is a future revision");
    c.reason = "ResourceVersionTooLarge";
    c.message = "Too large resource version";
    c.field = "";
    if (kctl_api_status_set(st, 504, "Timeout", msg, NULL, NULL, NULL, &c, 1) == KCTL_OK) st->retry_after_s = 1;
    return KCTL_ERR_TIMEOUT;
}

static int kctl__etcd_error(long http, const char *body, size_t len, const kctl_allocator *a, kctl_api_status *st) {
    kctl__ejson r;
    char msg[512], full[600];
    int64_t grpc = -1;
    int rc;
    const char *reason = "InternalError";
    memset(&r, 0, sizeof r);
    r.a = a;
    msg[0] = '\0';
    if (kctl__ejson_parse(&r, body, len) == KCTL_OK) {
        kctl__ejson_str(&r.j, 0, "message", msg, sizeof msg);
        if (!msg[0]) kctl__ejson_str(&r.j, 0, "error", msg, sizeof msg);
        if (kctl_json_int64(&r.j, kctl_json_member(&r.j, 0, "code"), &grpc) != KCTL_OK) grpc = -1;
    }
    kctl__http_free(a, r.toks);
    switch (grpc) {
    case 3:
        if (strstr(msg, "user name is empty")) { rc = KCTL_ERR_UNAUTHORIZED; reason = "Unauthorized"; http = 401; } /* auth on, no credentials */
        else if (strstr(msg, "too large")) { rc = KCTL_ERR_TOO_LARGE; reason = "RequestEntityTooLarge"; }
        else { rc = KCTL_ERR_INVALID_ARG; reason = "BadRequest"; }
        break;
    case 4: rc = KCTL_ERR_TIMEOUT; reason = "Timeout"; break;
    case 5: rc = KCTL_ERR_NOT_FOUND; reason = "NotFound"; break;
    case 7: rc = KCTL_ERR_FORBIDDEN; reason = "Forbidden"; break;
    case 8: rc = KCTL_ERR_AGAIN; reason = "TooManyRequests"; break;
    case 9: rc = KCTL_ERR_INVALID_ARG; reason = "BadRequest"; break;
    case 11:
        if (strstr(msg, "compacted")) { rc = KCTL_ERR_GONE; reason = "Expired"; http = 410; }
        else if (strstr(msg, "future revision")) return kctl__etcd_future(st, 0, 0); /* a page read at a revision etcd no longer has */
        else { rc = KCTL_ERR_TIMEOUT; reason = "Timeout"; http = 504; }
        break;
    case 14: rc = KCTL_ERR_IO; reason = "ServiceUnavailable"; break;
    case 16: rc = KCTL_ERR_UNAUTHORIZED; reason = "Unauthorized"; break;
    default: rc = http == 401 ? KCTL_ERR_UNAUTHORIZED : http == 403 ? KCTL_ERR_FORBIDDEN : KCTL_ERR_IO;
    }
    if (st) {
        snprintf(full, sizeof full, "etcd: %s", msg[0] ? msg : "an error without a message");
        kctl_api_status_set(st, (int)http, reason, full, NULL, NULL, NULL, NULL, 0);
    }
    return rc;
}

/* What a transport failure says in a Status; cc, libcurl's reason for
   the last endpoint (CURLE_OK: none known), is named in the message: a
   fixed text (curl_easy_strerror), never a file, key or credential. */
static int kctl__etcd_fail_cc(int rc, CURLcode cc, kctl_api_status *st) {
    char msg[200];
    if (!st || rc == KCTL_OK) return rc;
    snprintf(msg, sizeof msg, "%s%s%s", rc == KCTL_ERR_TIMEOUT ? "etcd: the request timed out" : "etcd: no endpoint answered",
             cc != CURLE_OK ? ": " : "", cc != CURLE_OK ? curl_easy_strerror(cc) : "");
    kctl_api_status_set(st, rc == KCTL_ERR_TIMEOUT ? 504 : 503, rc == KCTL_ERR_TIMEOUT ? "Timeout" : "ServiceUnavailable",
                        msg, NULL, NULL, NULL, NULL, 0);
    return rc;
}
static int kctl__etcd_fail(int rc, kctl_api_status *st) { return kctl__etcd_fail_cc(rc, CURLE_OK, st); }

static int kctl__etcd_auth(kctl__etcd *e, kctl_api_status *st);

/* With a username but no token (a renewal failed: its request broke, or
   the password was refused), authenticate before the request: without a
   token etcd would answer "user name is empty" (400), never the 401 that
   renews it. OK, or the authentication's failure with *st. */
static int kctl__etcd_need_token(kctl__etcd *e, kctl_api_status *st) {
    bool have;
    if (!e->user) return KCTL_OK;
    kctl__hmutex_lock(&e->http.mu);
    have = e->http.auth != NULL;
    kctl__hmutex_unlock(&e->http.mu);
    return have ? KCTL_OK : kctl__etcd_auth(e, st);
}

/* POST a request and parse its JSON answer: OK, or the request's failure
   with *st. A token the server no longer knows is renewed once. */
static int kctl__etcd_call(kctl__etcd *e, int kind, const char *path, const char *body, size_t len, kctl__ejson *r, kctl_api_status *st) {
    int rc, tries;
    memset(r, 0, sizeof *r);
    r->a = &e->http.a;
    if ((rc = kctl__etcd_need_token(e, st)) != KCTL_OK) return rc;
    for (tries = 0; tries < 2; tries++) {
        if ((rc = kctl__http_post(&e->http, kind, path, body, len, NULL, &r->res)) != KCTL_OK) return kctl__etcd_fail_cc(rc, r->res.cc, st);
        if (r->res.code == 200) break;
        if (r->res.code == 401 && e->user && tries == 0 && strstr(r->res.body.p ? r->res.body.p : "", "invalid auth token")) {
            kctl__hbuf_free(&r->res.body);
            if ((rc = kctl__etcd_auth(e, st)) != KCTL_OK) return rc;
            continue;
        }
        rc = kctl__etcd_error(r->res.code, r->res.body.p ? r->res.body.p : "", r->res.body.len, &e->http.a, st);
        kctl__hbuf_free(&r->res.body);
        return rc;
    }
    if (r->res.code != 200) {
        kctl__hbuf_free(&r->res.body);
        return kctl__etcd_fail(KCTL_ERR_UNAUTHORIZED, st);
    }
    if ((rc = kctl__ejson_parse(r, r->res.body.p ? r->res.body.p : "", r->res.body.len)) != KCTL_OK) {
        kctl__ejson_free(r);
        if (st) kctl_api_status_set(st, 502, "InternalError", "etcd: an answer that is no JSON object", NULL, NULL, NULL, NULL, 0);
        return rc;
    }
    return KCTL_OK;
}

static int kctl__etcd_auth_try(kctl__etcd *e, kctl_api_status *st) {
    kctl_jw w;
    kctl__hres res;
    kctl__ejson r;
    const char *text;
    char token[512];
    size_t n;
    int rc;
    kctl_jw_init_growable(&w, &e->http.a);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "name");
    kctl_jw_string(&w, e->user);
    kctl_jw_key(&w, "password");
    kctl_jw_string(&w, e->password ? e->password : "");
    kctl_jw_object_end(&w);
    if ((rc = kctl_jw_finish(&w, &text, &n)) != KCTL_OK) {
        kctl_jw_free(&w);
        return rc;
    }
    /* the old token stays for other threads' requests meanwhile, but does
       not go with this one */
    rc = kctl__http_post(&e->http, KCTL__HTTP_READ | KCTL__HTTP_NOAUTH, "/v3/auth/authenticate", text, n, NULL, &res);
    kctl_jw_free(&w); /* the password's copy: gone */
    if (rc != KCTL_OK) return kctl__etcd_fail_cc(rc, res.cc, st);
    memset(&r, 0, sizeof r);
    r.a = &e->http.a;
    if (res.code != 200) {
        rc = kctl__etcd_error(res.code, res.body.p ? res.body.p : "", res.body.len, &e->http.a, st);
        kctl__hbuf_free(&res.body);
        return rc == KCTL_ERR_INVALID_ARG ? KCTL_ERR_UNAUTHORIZED : rc; /* a wrong password is 400 there */
    }
    r.res = res;
    if ((rc = kctl__ejson_parse(&r, res.body.p ? res.body.p : "", res.body.len)) != KCTL_OK ||
        !*kctl__ejson_str(&r.j, 0, "token", token, sizeof token)) {
        kctl__ejson_free(&r);
        if (st) kctl_api_status_set(st, 502, "InternalError", "etcd: authenticate answered no token", NULL, NULL, NULL, NULL, 0);
        return rc == KCTL_OK ? KCTL_ERR_PROTO : rc;
    }
    kctl__ejson_free(&r);
    {
        kctl__hbuf h;
        kctl__hbuf_init(&h, &e->http.a, sizeof token + 32);
        kctl__hbuf_str(&h, "Authorization: ");
        kctl__hbuf_str(&h, token); /* raw: etcd takes no "Bearer" */
        if (h.err) return h.err;
        kctl__hmutex_lock(&e->http.mu);
        kctl__http_free(&e->http.a, e->http.auth);
        e->http.auth = h.p;
        kctl__hmutex_unlock(&e->http.mu);
        kctl__hmutex_lock(&e->mu);
        e->n_reauths++;
        kctl__hmutex_unlock(&e->mu);
    }
    return KCTL_OK;
}

/* A token for the user; on failure none is kept (the one held was refused
   or is missing), so the next call authenticates first. */
static int kctl__etcd_auth(kctl__etcd *e, kctl_api_status *st) {
    int rc = kctl__etcd_auth_try(e, st);
    if (rc != KCTL_OK) {
        kctl__hmutex_lock(&e->http.mu);
        kctl__http_free(&e->http.a, e->http.auth);
        e->http.auth = NULL;
        kctl__hmutex_unlock(&e->http.mu);
    }
    return rc;
}

/* ---- objects: a kv of a range or an event, as the object it holds at its mod_revision */
static int kctl__etcd_kv_obj(kctl__etcd *e, const kctl_json *j, uint32_t kv, const char *rv_override, kctl_obj **out) {
    uint32_t v = kctl_json_member(j, kv, "value");
    const char *raw;
    size_t n;
    unsigned char *doc;
    long dn;
    char rv[24];
    int rc;
    *out = NULL;
    if (kctl_json_type_of(j, v) != KCTL_JSON_STRING || kctl_json_raw(j, v, &raw, &n) != KCTL_OK || n < 2) return KCTL_ERR_PROTO;
    raw++; /* the quotes */
    n -= 2;
    if (!(doc = (unsigned char *)kctl__http_alloc(&e->http.a, n / 4 * 3 + 4))) return KCTL_ERR_NOMEM;
    if ((dn = kctl__b64_decode(raw, n, doc)) < 0) {
        kctl__http_free(&e->http.a, doc);
        return KCTL_ERR_PROTO;
    }
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)kctl__ejson_u64(j, kv, "mod_revision"));
    rc = kctl_apisrv_parse_at((const char *)doc, (size_t)dn, rv_override ? rv_override : rv, &e->obj_opts, out);
    kctl__http_free(&e->http.a, doc);
    return rc == KCTL_ERR_INVALID_ARG ? KCTL_ERR_PROTO : rc;
}

/* A request body of one member whose value is base64 of a key. */
static void kctl__etcd_jw_b64(kctl_jw *w, const char *name, const char *s, size_t n, const kctl_allocator *a) {
    kctl__hbuf b;
    kctl__hbuf_init(&b, a, (size_t)-1 / 2);
    kctl__hbuf_b64(&b, (const unsigned char *)s, n);
    kctl_jw_key(w, name);
    if (b.err) kctl_jw_raw(w, "", 0); /* marks the writer's error */
    else kctl_jw_string_n(w, b.p ? b.p : "", b.len);
    kctl__hbuf_free(&b);
}

/* The key one past every key with prefix p (etcd's prefix range_end). */
static void kctl__etcd_range_end(kctl__hbuf *end, const char *p, size_t n) {
    kctl__hbuf_put(end, p, n);
    if (!end->err && n) end->p[n - 1] = (char)(end->p[n - 1] + 1);
}

/* A range request body: [key, range_end) at revision rev (0: now), at most limit keys (0: all). */
static int kctl__etcd_range_body(kctl__etcd *e, const char *key, size_t klen, const char *end, size_t elen, uint64_t rev,
                                 uint32_t limit, kctl_jw *w) {
    char num[24];
    kctl_jw_init_growable(w, &e->http.a);
    kctl_jw_object_begin(w);
    kctl__etcd_jw_b64(w, "key", key, klen, &e->http.a);
    if (end) kctl__etcd_jw_b64(w, "range_end", end, elen, &e->http.a);
    if (limit) { snprintf(num, sizeof num, "%u", (unsigned)limit); kctl_jw_key(w, "limit"); kctl_jw_string(w, num); }
    if (rev) { snprintf(num, sizeof num, "%llu", (unsigned long long)rev); kctl_jw_key(w, "revision"); kctl_jw_string(w, num); }
    kctl_jw_object_end(w);
    return w->err;
}

static int kctl__etcd_check_res(const kctl_resource *res, kctl_api_status *st) {
    if (!res || !res->resource || !kctl__etcd_seg_ok(res->resource, false) || !kctl__etcd_seg_ok(res->group, true) ||
        !kctl__etcd_seg_ok(res->ns, true)) {
        if (st) kctl_api_status_set(st, 400, "BadRequest", "the resource's group, resource or namespace is not valid", NULL, NULL, NULL, NULL, 0);
        return KCTL_ERR_INVALID_ARG;
    }
    return KCTL_OK;
}

/* The object at res/ns/name, or NULL (NOT_FOUND), as a reference. */
static int kctl__etcd_read(kctl__etcd *e, const kctl_resource *res, const char *ns, const char *name, kctl_obj **out, kctl_api_status *st) {
    kctl__hbuf key;
    kctl_jw w;
    kctl__ejson r;
    const char *text;
    size_t n;
    uint32_t kvs;
    int rc;
    *out = NULL;
    kctl__hbuf_init(&key, &e->http.a, 8192);
    kctl__etcd_key(e, res, ns, name, &key);
    if ((rc = key.err) == KCTL_OK && (rc = kctl__etcd_range_body(e, key.p, key.len, NULL, 0, 0, 0, &w)) == KCTL_OK &&
        (rc = kctl_jw_finish(&w, &text, &n)) == KCTL_OK &&
        (rc = kctl__etcd_call(e, KCTL__HTTP_READ, "/v3/kv/range", text, n, &r, st)) == KCTL_OK) {
        kvs = kctl_json_member(&r.j, 0, "kvs");
        if (kctl_json_type_of(&r.j, kvs) == KCTL_JSON_ARRAY && r.toks[kvs].size > 0) rc = kctl__etcd_kv_obj(e, &r.j, kvs + 1, NULL, out);
        else rc = KCTL_ERR_NOT_FOUND;
        kctl__ejson_free(&r);
    }
    if (key.err == KCTL_OK) kctl_jw_free(&w);
    kctl__hbuf_free(&key);
    return rc;
}

static int kctl__etcd_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    kctl__etcd *e = (kctl__etcd *)self;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if ((rc = kctl__etcd_check_res(res, st)) != KCTL_OK) return rc;
    if (!name || !kctl__etcd_seg_ok(name, false)) return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, res, name ? name : "", st);
    rc = kctl__etcd_read(e, res, res->ns, name, out, st);
    if (rc == KCTL_ERR_NOT_FOUND) kctl_apisrv_refuse(rc, res, name, st);
    return rc;
}

/* ---- list: one range at one revision, paged; selectors here */
static int kctl__etcd_list(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st) {
    kctl__etcd *e = (kctl__etcd *)self;
    kctl_selector *sel = NULL;
    kctl__hbuf root, end, start;
    uint64_t rev = 0;
    uint32_t limit = opts ? opts->limit : 0;
    size_t cap = 0;
    int rc;
    bool more = true;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->items.allocator = e->http.a;
    if ((rc = kctl__etcd_check_res(res, st)) != KCTL_OK) return rc;
    if (opts && (rc = kctl_selector_parse(opts->label_selector, opts->field_selector, &e->http.a, &sel)) != KCTL_OK) {
        if (rc == KCTL_ERR_INVALID_ARG && st) kctl_api_status_set(st, 400, "BadRequest", "the label or field selector is not valid", NULL, NULL, NULL, NULL, 0);
        return rc;
    }
    kctl__hbuf_init(&root, &e->http.a, 8192);
    kctl__hbuf_init(&end, &e->http.a, 8192);
    kctl__hbuf_init(&start, &e->http.a, 8192);
    kctl__etcd_key(e, res, res->ns, NULL, &root);
    kctl__etcd_range_end(&end, root.p ? root.p : "", root.len);
    kctl__hbuf_put(&start, root.p ? root.p : "", root.len);
    if (opts && opts->continue_token && *opts->continue_token) { /* "<revision>:<the last key after the root>" */
        const char *p = opts->continue_token, *colon = strchr(p, ':');
        char *ep;
        unsigned long long v = strtoull(p, &ep, 10);
        if (!colon || ep != colon || v == 0) {
            rc = KCTL_ERR_INVALID_ARG;
            if (st) kctl_api_status_set(st, 400, "BadRequest", "the continue token is not one this store gave", NULL, NULL, NULL, NULL, 0);
            goto out;
        }
        rev = v;
        kctl__hbuf_str(&start, colon + 1);
        kctl__hbuf_put(&start, "", 1); /* the key after it: + "\0" */
    }
    if ((rc = root.err ? root.err : end.err ? end.err : start.err) != KCTL_OK) goto out;
    while (more && rc == KCTL_OK) {
        kctl_jw w;
        kctl__ejson r;
        const char *text;
        size_t n;
        uint32_t want = e->list_chunk, kvs, i, k;
        if (limit && !sel && limit - (uint32_t)out->items.count < want) want = limit - (uint32_t)out->items.count;
        if ((rc = kctl__etcd_range_body(e, start.p, start.len, end.p, end.len, rev, want, &w)) != KCTL_OK ||
            (rc = kctl_jw_finish(&w, &text, &n)) != KCTL_OK) {
            kctl_jw_free(&w);
            break;
        }
        rc = kctl__etcd_call(e, KCTL__HTTP_READ, "/v3/kv/range", text, n, &r, st);
        kctl_jw_free(&w);
        if (rc == KCTL_ERR_GONE && st && opts && opts->continue_token && *opts->continue_token)
            kctl_api_status_set(st, 410, "Expired", "The provided continue parameter is too old to display a consistent list result. "
                                "You can start a new list without the continue parameter.", NULL, NULL, NULL, NULL, 0);
        if (rc != KCTL_OK) break;
        if (!rev) rev = kctl__ejson_u64(&r.j, 0, "header.revision");
        more = kctl_json_type_of(&r.j, kctl_json_member(&r.j, 0, "more")) == KCTL_JSON_TRUE;
        kvs = kctl_json_member(&r.j, 0, "kvs");
        if (kctl_json_type_of(&r.j, kvs) != KCTL_JSON_ARRAY) { kctl__ejson_free(&r); break; }
        for (i = kvs + 1, k = 0; rc == KCTL_OK && k < r.toks[kvs].size; k++, i += r.toks[i].skip) {
            kctl_obj *o = NULL;
            char kb[1024];
            size_t kn = 0;
            long dn;
            const char *raw;
            size_t rn;
            /* the key, for the next request or a continue token */
            if (kctl_json_raw(&r.j, kctl_json_member(&r.j, i, "key"), &raw, &rn) != KCTL_OK || rn < 2 || rn - 2 > sizeof kb / 4 * 3 - 4 ||
                (dn = kctl__b64_decode(raw + 1, rn - 2, (unsigned char *)kb)) < 0) {
                rc = KCTL_ERR_PROTO;
                break;
            }
            kn = (size_t)dn;
            start.len = 0;
            kctl__hbuf_put(&start, kb, kn);
            kctl__hbuf_put(&start, "", 1);
            if ((rc = kctl__etcd_kv_obj(e, &r.j, i, NULL, &o)) != KCTL_OK) break;
            if (!kctl_selector_matches(sel, o)) { kctl_obj_unref(o); continue; }
            if (out->items.count == cap) {
                size_t nc = cap ? cap * 2 : 64;
                kctl_obj **ni = (kctl_obj **)kctl__http_alloc(&e->http.a, nc * sizeof *ni);
                if (!ni) { kctl_obj_unref(o); rc = KCTL_ERR_NOMEM; break; }
                if (out->items.count) memcpy(ni, out->items.items, out->items.count * sizeof *ni);
                kctl__http_free(&e->http.a, out->items.items);
                out->items.items = ni;
                cap = nc;
            }
            out->items.items[out->items.count++] = o;
            if (limit && out->items.count == limit) { /* the page is full: continue after this key */
                if (more || k + 1 < r.toks[kvs].size) {
                    if (kn < root.len || kn - root.len + 24 >= sizeof out->continue_token) { rc = KCTL_ERR_TOO_LARGE; break; }
                    snprintf(out->continue_token, sizeof out->continue_token, "%llu:%.*s", (unsigned long long)rev,
                             (int)(kn - root.len), kb + root.len);
                }
                more = false;
                break;
            }
        }
        kctl__ejson_free(&r);
        if (start.err) rc = start.err;
    }
    if (rc == KCTL_OK) snprintf(out->resource_version, sizeof out->resource_version, "%llu", (unsigned long long)rev);
out:
    if (rc != KCTL_OK) {
        kctl_list_result_free(out);
        out->continue_token[0] = '\0';
    }
    kctl__hbuf_free(&root);
    kctl__hbuf_free(&end);
    kctl__hbuf_free(&start);
    kctl_selector_free(sel);
    return rc;
}

/* ---- writes: decided by the API-server rules, made by a transaction on
   the version read */
typedef struct kctl__elook {
    kctl__etcd *e;
    const kctl_resource *res;
    kctl_obj *seen[12];      /* what lookups read (kept alive for the decision) */
    size_t n;
    int err;                 /* a lookup that could not read */
    kctl_api_status st;
} kctl__elook;

static const kctl_obj *kctl__etcd_lookup(const char *ns, const char *name, void *user_data) {
    kctl__elook *l = (kctl__elook *)user_data;
    kctl_obj *o = NULL;
    int rc;
    if (l->err || l->n == sizeof l->seen / sizeof l->seen[0] || !kctl__etcd_seg_ok(name, false) || !kctl__etcd_seg_ok(ns, true)) return NULL;
    rc = kctl__etcd_read(l->e, l->res, ns, name, &o, &l->st);
    if (rc == KCTL_ERR_NOT_FOUND) return NULL;
    if (rc != KCTL_OK) {
        l->err = rc; /* the decision is not made on a guess */
        return NULL;
    }
    l->seen[l->n++] = o;
    return o;
}

static void kctl__etcd_uid(kctl__etcd *e, char out[40]) {
    uint64_t a, b;
    kctl__hmutex_lock(&e->mu); /* xorshift128+ */
    {
        uint64_t s1 = e->rng[0];
        const uint64_t s0 = e->rng[1];
        e->rng[0] = s0;
        s1 ^= s1 << 23;
        e->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
        a = e->rng[1] + s0;
        s1 = e->rng[0];
        e->rng[0] = e->rng[1];
        s1 ^= s1 << 23;
        e->rng[1] = s1 ^ e->rng[0] ^ (s1 >> 17) ^ (e->rng[0] >> 26);
        b = e->rng[1] + e->rng[0];
    }
    kctl__hmutex_unlock(&e->mu);
    a = (a & ~UINT64_C(0xf000)) | UINT64_C(0x4000);                  /* version 4 */
    b = (b & ~(UINT64_C(3) << 62)) | (UINT64_C(2) << 62);             /* variant 10 */
    snprintf(out, 40, "%08llx-%04llx-%04llx-%04llx-%012llx", (unsigned long long)(a >> 32), (unsigned long long)((a >> 16) & 0xffff),
             (unsigned long long)(a & 0xffff), (unsigned long long)(b >> 48), (unsigned long long)(b & UINT64_C(0xffffffffffff)));
}

/* The txn for a decision: compare the key's version with the one read
   (create: that there is none), then put the document (or delete the
   key); on a lost race, read the key in the same round trip. *won: the
   compare held; *rev: the revision the write made. */
static int kctl__etcd_txn(kctl__etcd *e, const char *key, size_t klen, uint64_t cur_rev, bool remove, const char *doc, size_t dlen,
                          bool *won, uint64_t *rev, kctl_api_status *st) {
    kctl_jw w;
    kctl__ejson r;
    const char *text;
    size_t n;
    char num[24];
    int rc;
    *won = false;
    *rev = 0;
    kctl_jw_init_growable(&w, &e->http.a);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "compare");
    kctl_jw_array_begin(&w);
    kctl_jw_object_begin(&w);
    kctl__etcd_jw_b64(&w, "key", key, klen, &e->http.a);
    kctl_jw_key(&w, "target");
    kctl_jw_string(&w, cur_rev ? "MOD" : "CREATE");
    kctl_jw_key(&w, "result");
    kctl_jw_string(&w, "EQUAL");
    snprintf(num, sizeof num, "%llu", (unsigned long long)cur_rev);
    kctl_jw_key(&w, cur_rev ? "mod_revision" : "create_revision");
    kctl_jw_string(&w, num);
    kctl_jw_object_end(&w);
    kctl_jw_array_end(&w);
    kctl_jw_key(&w, "success");
    kctl_jw_array_begin(&w);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, remove ? "request_delete_range" : "request_put");
    kctl_jw_object_begin(&w);
    kctl__etcd_jw_b64(&w, "key", key, klen, &e->http.a);
    if (!remove) kctl__etcd_jw_b64(&w, "value", doc, dlen, &e->http.a);
    kctl_jw_object_end(&w);
    kctl_jw_object_end(&w);
    kctl_jw_array_end(&w);
    kctl_jw_key(&w, "failure");
    kctl_jw_array_begin(&w);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "request_range");
    kctl_jw_object_begin(&w);
    kctl__etcd_jw_b64(&w, "key", key, klen, &e->http.a);
    kctl_jw_object_end(&w);
    kctl_jw_object_end(&w);
    kctl_jw_array_end(&w);
    kctl_jw_object_end(&w);
    if ((rc = kctl_jw_finish(&w, &text, &n)) == KCTL_OK && (rc = kctl__etcd_call(e, KCTL__HTTP_WRITE, "/v3/kv/txn", text, n, &r, st)) == KCTL_OK) {
        *won = kctl_json_type_of(&r.j, kctl_json_member(&r.j, 0, "succeeded")) == KCTL_JSON_TRUE;
        *rev = kctl__ejson_u64(&r.j, 0, "header.revision");
        kctl__ejson_free(&r);
    }
    kctl_jw_free(&w);
    return rc;
}

/* Whether a request carries a resourceVersion precondition of its own (a
   race lost to another writer is then CONFLICT; without one the write is
   decided again on the new version, as the API server's GuaranteedUpdate). */
static bool kctl__etcd_has_precondition(const kctl_apisrv_req *req) {
    char rv[KCTL_RV_MAX];
    if (req->apply) return false;
    if (req->verb == KCTL_VERB_REMOVE) return req->del && req->del->resource_version && *req->del->resource_version;
    return req->json && kctl_json_get_string(req->json, req->len, "metadata.resourceVersion", rv, sizeof rv, NULL) == KCTL_OK && rv[0];
}

static int kctl__etcd_write(kctl__etcd *e, kctl_apisrv_req *req, kctl_obj **out, kctl_api_status *st) {
    bool pre = kctl__etcd_has_precondition(req);
    int attempt, rc = KCTL_OK;
    if (out) *out = NULL;
    if ((rc = kctl__etcd_check_res(req->res, st)) != KCTL_OK) return rc;
    for (attempt = 0; attempt < 8; attempt++) {
        kctl__elook look;
        kctl_apisrv_decision d;
        kctl_jw w;
        kctl_obj *made = NULL;
        kctl__hbuf key;
        char uid[40], now[32];
        uint64_t cur_rev = 0, rev = 0;
        bool won = false;
        size_t i;
        memset(&look, 0, sizeof look);
        look.e = e;
        look.res = req->res;
        look.st.allocator = e->http.a;
        kctl__etcd_uid(e, uid);
        kctl_apisrv_now(now);
        req->lookup = kctl__etcd_lookup;
        req->lookup_user_data = &look;
        req->uid = uid;
        req->now = now;
        req->rv = NULL; /* etcd keeps the version outside the document */
        req->name_seed = ((uint64_t)uid[0] << 56) ^ (uint64_t)(uintptr_t)&look ^ (uint64_t)attempt;
        req->allocator = e->http.a;
        req->limits = e->obj_opts.limits;
        kctl_jw_init_growable(&w, &e->http.a);
        kctl__hbuf_init(&key, &e->http.a, 8192);
        rc = kctl_apisrv_decide(req, &w, &d, st);
        if (look.err) { /* a read failed: that is the answer, not the rules' */
            rc = look.err;
            if (st) kctl_api_status_set(st, look.st.code, look.st.reason, look.st.message, NULL, NULL, NULL, NULL, 0);
        }
        if (rc == KCTL_OK && d.outcome == KCTL_APISRV_UNCHANGED) {
            if (out && d.cur) *out = kctl_obj_ref((kctl_obj *)(uintptr_t)d.cur);
        } else if (rc == KCTL_OK) {
            const kctl_obj *target = d.cur;
            if (w.len && (rc = kctl_obj_parse(w.buf, w.len, &e->obj_opts, &made)) != KCTL_OK && rc == KCTL_ERR_PROTO) rc = KCTL_ERR_INVALID_ARG;
            if (!target) target = made;
            if (rc == KCTL_OK && target) {
                kctl__etcd_key(e, req->res, kctl_obj_namespace(target), kctl_obj_name(target), &key);
                if (d.cur && !kctl_obj_resource_version_u64(d.cur, &cur_rev)) rc = KCTL_ERR_PROTO;
                if (rc == KCTL_OK) rc = key.err;
                if (rc == KCTL_OK)
                    rc = kctl__etcd_txn(e, key.p, key.len, cur_rev, d.outcome == KCTL_APISRV_REMOVE, w.buf, w.len, &won, &rev, st);
            }
            if (rc == KCTL_OK && !won) { /* another writer came first */
                if (!d.cur) rc = kctl_apisrv_refuse(KCTL_ERR_EXISTS, req->res, made ? kctl_obj_name(made) : "", st);
                else if (pre) rc = kctl_apisrv_refuse(KCTL_ERR_CONFLICT, req->res, kctl_obj_name(d.cur), st);
                else rc = KCTL_ERR_AGAIN; /* decide again on what is there now */
            } else if (rc == KCTL_OK && out) {
                char rvs[24];
                snprintf(rvs, sizeof rvs, "%llu", (unsigned long long)rev);
                if (d.outcome == KCTL_APISRV_REMOVE) { /* the object is gone; an update that ended it is answered at its old version */
                    *out = made;
                    made = NULL;
                } else {
                    rc = kctl_apisrv_parse_at(w.buf, w.len, rvs, &e->obj_opts, out);
                }
            }
        }
        kctl_obj_unref(made);
        kctl_jw_free(&w);
        kctl__hbuf_free(&key);
        for (i = 0; i < look.n; i++) kctl_obj_unref(look.seen[i]);
        kctl_api_status_clear(&look.st);
        if (rc != KCTL_ERR_AGAIN) return rc;
        kctl__hmutex_lock(&e->mu);
        e->n_retries++;
        kctl__hmutex_unlock(&e->mu);
    }
    return kctl_apisrv_refuse(KCTL_ERR_CONFLICT, req->res, "", st); /* lost every race: the caller retries later */
}

static int kctl__etcd_doc_write(void *self, kctl_verb verb, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                kctl_api_status *st) {
    kctl_apisrv_req req;
    if (out) *out = NULL;
    if (!res || !json) return KCTL_ERR_INVALID_ARG;
    memset(&req, 0, sizeof req);
    req.verb = verb;
    req.res = res;
    req.json = json;
    req.len = len == KCTL_NTS ? strlen(json) : len;
    return kctl__etcd_write((kctl__etcd *)self, &req, out, st);
}

static int kctl__etcd_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__etcd_doc_write(self, KCTL_VERB_CREATE, res, json, len, out, st);
}
static int kctl__etcd_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__etcd_doc_write(self, KCTL_VERB_UPDATE, res, json, len, out, st);
}
static int kctl__etcd_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__etcd_doc_write(self, KCTL_VERB_UPDATE_STATUS, res, json, len, out, st);
}

static int kctl__etcd_patch(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags,
                            kctl_obj **out, kctl_api_status *st) {
    kctl_apisrv_req req;
    if (out) *out = NULL;
    if (!res || !name || !patch) return KCTL_ERR_INVALID_ARG;
    memset(&req, 0, sizeof req);
    req.verb = KCTL_VERB_PATCH;
    req.res = res;
    req.name = name;
    req.json = patch;
    req.len = len == KCTL_NTS ? strlen(patch) : len;
    req.patch_flags = flags;
    return kctl__etcd_write((kctl__etcd *)self, &req, out, st);
}

static int kctl__etcd_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                             kctl_api_status *st) {
    kctl_apisrv_req req;
    if (out) *out = NULL;
    if (!res || !name) return KCTL_ERR_INVALID_ARG;
    memset(&req, 0, sizeof req);
    req.verb = KCTL_VERB_REMOVE;
    req.res = res;
    req.name = name;
    req.del = opts;
    return kctl__etcd_write((kctl__etcd *)self, &req, out, st);
}

/* ---- watch: a stream of etcd watch messages, one JSON object a line */
typedef struct kctl__ewatch {
    kctl__etcd *e;
    kctl__hstream s;
    kctl_resource res;        /* its strings in names[] */
    char names[3][256];
    kctl_selector *sel;
    size_t root_len;          /* the key prefix every watched key has */
    kctl_obj_list initial;    /* from "": the objects there at open, then the stream */
    size_t initial_next;
    uint64_t initial_rev;
    kctl_event *q;            /* events of the last messages, not handed out yet */
    size_t qn, qhead, qcap;
    size_t qready;            /* q[qhead..qready) may go out; the rest is a revision
                                 a fragment left unfinished (held until it is whole) */
    int after;                /* a result due once the queue is empty (GONE, ...) */
    kctl_api_status after_st;
    kctl__hnotify *nt;        /* watch_notify's waiter (NULL: none) */
} kctl__ewatch;

static void kctl__ewatch_qclear(kctl__ewatch *w) {
    size_t i;
    for (i = w->qhead; i < w->qn; i++) kctl_event_clear(&w->q[i]);
    w->qn = w->qhead = w->qready = 0;
}

static int kctl__ewatch_push(kctl__ewatch *w, int type, kctl_obj *obj, uint64_t rev) {
    kctl_event *ev;
    if (w->qn == w->qcap && w->qhead) { /* slots handed out: reuse them */
        memmove(w->q, w->q + w->qhead, (w->qn - w->qhead) * sizeof *w->q);
        w->qn -= w->qhead;
        w->qready -= w->qhead;
        w->qhead = 0;
    }
    if (w->qn == w->qcap) {
        size_t nc = w->qcap ? w->qcap * 2 : 16;
        kctl_event *nq = (kctl_event *)kctl__http_alloc(&w->e->http.a, nc * sizeof *nq);
        if (!nq) { kctl_obj_unref(obj); return KCTL_ERR_NOMEM; }
        if (w->qn) memcpy(nq, w->q, w->qn * sizeof *nq);
        kctl__http_free(&w->e->http.a, w->q);
        w->q = nq;
        w->qcap = nc;
    }
    ev = &w->q[w->qn++];
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    ev->obj = obj;
    snprintf(ev->resource_version, sizeof ev->resource_version, "%llu", (unsigned long long)rev);
    return KCTL_OK;
}

/* An object for a key whose last state is unknown: its name and namespace. */
static int kctl__ewatch_skeleton(kctl__ewatch *w, const kctl_json *j, uint32_t kv, const char *rv, kctl_obj **out) {
    const char *raw;
    size_t rn;
    char key[1024], *name, *slash;
    long dn;
    kctl_jw jw;
    const char *text;
    size_t n;
    int rc;
    *out = NULL;
    if (kctl_json_raw(j, kctl_json_member(j, kv, "key"), &raw, &rn) != KCTL_OK || rn < 2 || rn - 2 > sizeof key / 4 * 3 - 4 ||
        (dn = kctl__b64_decode(raw + 1, rn - 2, (unsigned char *)key)) < 0 || (size_t)dn <= w->root_len)
        return KCTL_ERR_PROTO;
    key[dn] = '\0';
    name = key + w->root_len;
    slash = strchr(name, '/');
    kctl_jw_init_growable(&jw, &w->e->http.a);
    kctl_jw_object_begin(&jw);
    kctl_jw_key(&jw, "metadata");
    kctl_jw_object_begin(&jw);
    kctl_jw_key(&jw, "name");
    kctl_jw_string(&jw, slash ? slash + 1 : name);
    if (slash) { kctl_jw_key(&jw, "namespace"); kctl_jw_string_n(&jw, name, (size_t)(slash - name)); }
    kctl_jw_key(&jw, "resourceVersion");
    kctl_jw_string(&jw, rv);
    kctl_jw_object_end(&jw);
    kctl_jw_object_end(&jw);
    if ((rc = kctl_jw_finish(&jw, &text, &n)) == KCTL_OK) rc = kctl_obj_parse(text, n, &w->e->obj_opts, out);
    kctl_jw_free(&jw);
    return rc;
}

/* Turn one event of a watch message into what this watcher sees, as the
   memstore's watches see it: selectors apply to the new and the previous
   state (leaving is DELETED with the last matching state, entering ADDED). */
static int kctl__ewatch_event(kctl__ewatch *w, const kctl_json *j, uint32_t ev) {
    uint32_t kv = kctl_json_member(j, ev, "kv"), prev = kctl_json_member(j, ev, "prev_kv");
    bool del = kctl_json_string_eq(j, kctl_json_member(j, ev, "type"), "DELETE");
    uint64_t rev = kctl__ejson_u64(j, kv, "mod_revision");
    char rv[24];
    kctl_obj *now = NULL, *was = NULL;
    int rc = KCTL_OK;
    if (kctl_json_type_of(j, kv) != KCTL_JSON_OBJECT || !rev) return KCTL_ERR_PROTO;
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)rev);
    if (del) { /* the last state, at the deletion's version */
        if (kctl_json_type_of(j, prev) == KCTL_JSON_OBJECT) rc = kctl__etcd_kv_obj(w->e, j, prev, rv, &was);
        else rc = kctl__ewatch_skeleton(w, j, kv, rv, &was);
        if (rc != KCTL_OK) return rc;
        if (w->sel && !kctl_selector_matches(w->sel, was)) { kctl_obj_unref(was); return KCTL_OK; }
        return kctl__ewatch_push(w, KCTL_EVENT_DELETED, was, rev);
    }
    if ((rc = kctl__etcd_kv_obj(w->e, j, kv, NULL, &now)) != KCTL_OK) return rc;
    if (!w->sel) return kctl__ewatch_push(w, kctl__ejson_u64(j, kv, "version") == 1 ? KCTL_EVENT_ADDED : KCTL_EVENT_MODIFIED, now, rev);
    if (kctl_json_type_of(j, prev) == KCTL_JSON_OBJECT && (rc = kctl__etcd_kv_obj(w->e, j, prev, rv, &was)) != KCTL_OK) {
        kctl_obj_unref(now);
        return rc;
    }
    {
        bool now_in = kctl_selector_matches(w->sel, now), was_in = was && kctl_selector_matches(w->sel, was);
        if (now_in) {
            kctl_obj_unref(was);
            return kctl__ewatch_push(w, was_in || (!was && kctl__ejson_u64(j, kv, "version") > 1) ? KCTL_EVENT_MODIFIED : KCTL_EVENT_ADDED, now, rev);
        }
        kctl_obj_unref(now);
        if (was_in) return kctl__ewatch_push(w, KCTL_EVENT_DELETED, was, rev); /* left the selection */
        kctl_obj_unref(was);
    }
    return KCTL_OK;
}

/* One line of the stream: events queued, a bookmark, or a result. */
static int kctl__ewatch_message(kctl__ewatch *w, const char *line, size_t n, kctl_api_status *st) {
    kctl__ejson r;
    uint32_t res, evs, i, k;
    int rc;
    memset(&r, 0, sizeof r);
    r.a = &w->e->http.a;
    if ((rc = kctl__ejson_parse(&r, line, n)) != KCTL_OK) {
        kctl__ejson_free(&r);
        return rc;
    }
    if (kctl_json_member(&r.j, 0, "error") != KCTL_JSON_NONE) { /* in-band: "no leader", "transport is closing" */
        char msg[256], full[300];
        kctl__ejson_str(&r.j, 0, "error.message", msg, sizeof msg);
        snprintf(full, sizeof full, "etcd: %s", msg[0] ? msg : "the watch ended with an error");
        if (st) kctl_api_status_set(st, 503, "ServiceUnavailable", full, NULL, NULL, NULL, NULL, 0);
        kctl__ejson_free(&r);
        return KCTL_ERR_IO;
    }
    res = kctl_json_member(&r.j, 0, "result");
    if (kctl_json_type_of(&r.j, res) != KCTL_JSON_OBJECT) {
        kctl__ejson_free(&r);
        return KCTL_ERR_PROTO;
    }
    if (kctl_json_type_of(&r.j, kctl_json_member(&r.j, res, "canceled")) == KCTL_JSON_TRUE) {
        uint64_t compact = kctl__ejson_u64(&r.j, res, "compact_revision");
        char reason[256];
        kctl__ejson_str(&r.j, res, "cancel_reason", reason, sizeof reason);
        kctl__ejson_free(&r);
        if (compact) {
            char msg[96];
            snprintf(msg, sizeof msg, "too old resource version: the store is compacted to %llu", (unsigned long long)compact);
            if (st) kctl_api_status_set(st, 410, "Expired", msg, NULL, NULL, NULL, NULL, 0);
            return KCTL_ERR_GONE;
        }
        if (strstr(reason, "auth") || strstr(reason, "user name")) {
            if (st) kctl_api_status_set(st, 401, "Unauthorized", "etcd: the watch was refused: not authenticated", NULL, NULL, NULL, NULL, 0);
            return KCTL_ERR_UNAUTHORIZED;
        }
        if (st) kctl_api_status_set(st, 503, "ServiceUnavailable", "etcd: the watch was canceled", NULL, NULL, NULL, NULL, 0);
        return KCTL_ERR_IO;
    }
    evs = kctl_json_member(&r.j, res, "events");
    if (kctl_json_type_of(&r.j, evs) == KCTL_JSON_ARRAY) {
        for (i = evs + 1, k = 0; rc == KCTL_OK && k < r.toks[evs].size; k++, i += r.toks[i].skip) rc = kctl__ewatch_event(w, &r.j, i);
        w->qready = w->qn;
        if (kctl_json_type_of(&r.j, kctl_json_member(&r.j, res, "fragment")) == KCTL_JSON_TRUE) {
            /* more of this batch follows: its last revision may go on in
               the next part, so hold its events until then (handed out,
               a broken stream would resume past what never came) */
            while (w->qready > w->qhead && !strcmp(w->q[w->qready - 1].resource_version, w->q[w->qn - 1].resource_version))
                w->qready--;
        }
    } else if (kctl_json_type_of(&r.j, kctl_json_member(&r.j, res, "created")) != KCTL_JSON_TRUE) {
        uint64_t rev = kctl__ejson_u64(&r.j, res, "header.revision"); /* a progress notification: everything up to rev was sent */
        if (rev) rc = kctl__ewatch_push(w, KCTL_EVENT_BOOKMARK, NULL, rev);
        w->qready = w->qn;
    }
    kctl__ejson_free(&r);
    return rc;
}

static void kctl__etcd_watch_close(void *self, kctl_watch *watch) {
    kctl__ewatch *w = (kctl__ewatch *)watch;
    (void)self;
    if (!w) return;
    kctl__hnotify_stop(&w->nt); /* before its socket goes */
    kctl__hstream_close(&w->s);
    kctl__ewatch_qclear(w);
    kctl__http_free(&w->e->http.a, w->q);
    kctl_obj_list_free(&w->initial);
    kctl_selector_free(w->sel);
    kctl_api_status_clear(&w->after_st);
    kctl__http_free(&w->e->http.a, w);
}

/* A watch refused for its token: renew the token, once (true: ask again). */
static bool kctl__ewatch_renew(kctl__etcd *e, int *rc, bool *renewed, kctl_api_status *st) {
    if (*rc != KCTL_ERR_UNAUTHORIZED || !e->user || *renewed) return false;
    *renewed = true;
    return (*rc = kctl__etcd_auth(e, st)) == KCTL_OK;
}

/* Open the stream at some endpoint and wait for its "created" message: OK,
   or the failure (IO when no endpoint would take it, TIMEOUT for a version
   the store has not reached, the server's error). A token the member does
   not know (it restarted, or the token's TTL ran out while only the
   stream used it) is renewed once and the watch asked for again, as
   kctl__etcd_call does for a unary request. */
static int kctl__ewatch_start(kctl__ewatch *w, uint64_t from, kctl_api_status *st) {
    kctl__etcd *e = w->e;
    kctl__hbuf root, end;
    kctl_jw jw;
    const char *text;
    size_t n, k, start;
    char num[24];
    int rc;
    bool renewed = false;
    kctl__hbuf_init(&root, &e->http.a, 8192);
    kctl__hbuf_init(&end, &e->http.a, 8192);
    kctl__etcd_key(e, &w->res, w->res.ns, NULL, &root);
    kctl__etcd_range_end(&end, root.p ? root.p : "", root.len);
    w->root_len = root.len - (w->res.ns && *w->res.ns ? strlen(w->res.ns) + 1 : 0);
    kctl_jw_init_growable(&jw, &e->http.a);
    kctl_jw_object_begin(&jw);
    kctl_jw_key(&jw, "create_request");
    kctl_jw_object_begin(&jw);
    kctl__etcd_jw_b64(&jw, "key", root.p ? root.p : "", root.len, &e->http.a);
    kctl__etcd_jw_b64(&jw, "range_end", end.p ? end.p : "", end.len, &e->http.a);
    snprintf(num, sizeof num, "%llu", (unsigned long long)from);
    kctl_jw_key(&jw, "start_revision");
    kctl_jw_string(&jw, num);
    kctl_jw_key(&jw, "progress_notify");
    kctl_jw_bool(&jw, true);
    kctl_jw_key(&jw, "prev_kv");
    kctl_jw_bool(&jw, true);
    kctl_jw_key(&jw, "fragment"); /* a batch past etcd's --max-request-bytes comes in parts */
    kctl_jw_bool(&jw, true);
    kctl_jw_object_end(&jw);
    kctl_jw_object_end(&jw);
    rc = root.err ? root.err : end.err ? end.err : kctl_jw_finish(&jw, &text, &n);
    if (rc == KCTL_OK) rc = kctl__etcd_need_token(e, st);
    kctl__hmutex_lock(&e->http.mu);
    start = e->http.cur;
    kctl__hmutex_unlock(&e->http.mu);
    for (k = 0; rc == KCTL_OK && k < e->http.nep; k++) {
        size_t ep = (start + k) % e->http.nep;
        const char *line;
        size_t ln;
    ask: /* again at ep, with a renewed token */
        if ((rc = kctl__hstream_open(&e->http, ep, "/v3/watch", text, n, "Grpc-Metadata-hasleader: true", &w->s)) != KCTL_OK) break;
        rc = kctl__hstream_line(&w->s, (uint64_t)e->http.timeout_ms, &line, &ln);
        if (rc == KCTL_OK && w->s.code == 200) {
            kctl__ejson r;
            memset(&r, 0, sizeof r);
            r.a = &e->http.a;
            if ((rc = kctl__ejson_parse(&r, line, ln)) == KCTL_OK) {
                uint32_t res = kctl_json_member(&r.j, 0, "result");
                uint64_t now = kctl__ejson_u64(&r.j, res, "header.revision");
                if (kctl_json_type_of(&r.j, kctl_json_member(&r.j, res, "canceled")) == KCTL_JSON_TRUE ||
                    kctl_json_type_of(&r.j, kctl_json_member(&r.j, res, "created")) != KCTL_JSON_TRUE) {
                    kctl__ejson_free(&r);
                    rc = kctl__ewatch_message(w, line, ln, st); /* refused at once: the reason */
                    if (rc == KCTL_OK) rc = KCTL_ERR_PROTO;
                } else if (from > now + 1) { /* Kubernetes' "too large resource version": etcd is behind
                                                the version asked for (restored from an older snapshot) */
                    rc = kctl__etcd_future(st, from - 1, now);
                }
            }
            kctl__ejson_free(&r);
            if (rc == KCTL_OK) {
                kctl__hmutex_lock(&e->http.mu);
                e->http.cur = ep;
                kctl__hmutex_unlock(&e->http.mu);
                kctl__hmutex_lock(&e->mu);
                e->n_watches++;
                e->watch_ep = (uint32_t)ep;
                kctl__hmutex_unlock(&e->mu);
                break;
            }
            kctl__hstream_close(&w->s);
            if (kctl__ewatch_renew(e, &rc, &renewed, st)) goto ask;
            break; /* the server's answer: no other endpoint would say otherwise */
        }
        if (w->s.done && w->s.code && w->s.code != 200) { /* an error answer */
            size_t bn;
            const char *b = kctl__hstream_rest(&w->s, &bn);
            if (rc == KCTL_OK) { b = line; bn = w->s.buf.len - (size_t)(line - w->s.buf.p); }
            rc = kctl__etcd_error(w->s.code, b, bn, &e->http.a, st);
            kctl__hstream_close(&w->s);
            if (kctl__ewatch_renew(e, &rc, &renewed, st)) goto ask;
            if (rc != KCTL_ERR_IO) break;
        } else {
            CURLcode cc = w->s.done ? w->s.cc : CURLE_OK;
            if (rc == KCTL_ERR_AGAIN) rc = KCTL_ERR_TIMEOUT;
            kctl__hstream_close(&w->s);
            if (rc == KCTL_ERR_NOMEM || rc == KCTL_ERR_TOO_LARGE) break;
            rc = kctl__etcd_fail_cc(rc == KCTL_ERR_TIMEOUT ? rc : KCTL_ERR_IO, cc, st);
        }
        kctl__hmutex_lock(&e->http.mu); /* no stream here: the next endpoint */
        if (e->http.cur == ep) e->http.cur = (ep + 1) % e->http.nep;
        e->http.n_failovers++;
        kctl__hmutex_unlock(&e->http.mu);
        if (k + 1 < e->http.nep) rc = KCTL_OK;
    }
    kctl_jw_free(&jw);
    kctl__hbuf_free(&root);
    kctl__hbuf_free(&end);
    return rc;
}

static int kctl__etcd_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *opts, const char *from_rv, kctl_watch **out,
                                 kctl_api_status *st) {
    kctl__etcd *e = (kctl__etcd *)self;
    kctl__ewatch *w;
    uint64_t from = 0;
    const char *p;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if ((rc = kctl__etcd_check_res(res, st)) != KCTL_OK) return rc;
    for (p = from_rv ? from_rv : ""; *p; p++) {
        if (*p < '0' || *p > '9' || from > (UINT64_MAX - 9) / 10) {
            if (st) kctl_api_status_set(st, 400, "BadRequest", "invalid resource version", NULL, NULL, NULL, NULL, 0);
            return KCTL_ERR_INVALID_ARG;
        }
        from = from * 10 + (uint64_t)(*p - '0');
    }
    if (!(w = (kctl__ewatch *)kctl__http_alloc(&e->http.a, sizeof *w))) return KCTL_ERR_NOMEM;
    memset(w, 0, sizeof *w);
    w->e = e;
    w->after_st.allocator = e->http.a;
    snprintf(w->names[0], sizeof w->names[0], "%s", res->group ? res->group : "");
    snprintf(w->names[1], sizeof w->names[1], "%s", res->resource);
    snprintf(w->names[2], sizeof w->names[2], "%s", res->ns ? res->ns : "");
    w->res.group = w->names[0];
    w->res.version = res->version;
    w->res.resource = w->names[1];
    w->res.ns = w->names[2];
    w->initial.allocator = e->http.a;
    if (opts && (rc = kctl_selector_parse(opts->label_selector, opts->field_selector, &e->http.a, &w->sel)) != KCTL_OK) {
        if (rc == KCTL_ERR_INVALID_ARG && st) kctl_api_status_set(st, 400, "BadRequest", "the label or field selector is not valid", NULL, NULL, NULL, NULL, 0);
        kctl__etcd_watch_close(self, (kctl_watch *)w);
        return rc;
    }
    if (!from_rv || !*from_rv) { /* from now, with the objects there now */
        kctl_list_result l;
        kctl_list_opts lo;
        memset(&lo, 0, sizeof lo);
        if (opts) { lo.label_selector = opts->label_selector; lo.field_selector = opts->field_selector; }
        if ((rc = kctl__etcd_list(self, &w->res, &lo, &l, st)) != KCTL_OK) {
            kctl__etcd_watch_close(self, (kctl_watch *)w);
            return rc;
        }
        w->initial = l.items;
        w->initial_rev = strtoull(l.resource_version, NULL, 10);
        from = w->initial_rev;
    }
    if ((rc = kctl__ewatch_start(w, from + 1, st)) != KCTL_OK) {
        kctl__etcd_watch_close(self, (kctl_watch *)w);
        return rc;
    }
    *out = (kctl_watch *)w;
    return KCTL_OK;
}

static int kctl__etcd_watch_next(void *self, kctl_watch *watch, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    kctl__ewatch *w = (kctl__ewatch *)watch;
    uint64_t until;
    (void)self;
    if (!w || !ev) return KCTL_ERR_INVALID_ARG;
    memset(ev, 0, sizeof *ev);
    if (w->initial_next < w->initial.count) { /* the objects there at open */
        ev->type = KCTL_EVENT_ADDED;
        ev->obj = kctl_obj_ref(w->initial.items[w->initial_next++]);
        if (w->initial_next == w->initial.count) snprintf(ev->resource_version, sizeof ev->resource_version, "%llu", (unsigned long long)w->initial_rev);
        else snprintf(ev->resource_version, sizeof ev->resource_version, "%s", kctl_obj_resource_version(ev->obj));
        return KCTL_OK;
    }
    until = kctl__http_now_ms() + timeout_ns / 1000000u;
    for (;;) {
        const char *line;
        size_t n;
        uint64_t now;
        int rc;
        if (w->qhead < w->qready) {
            *ev = w->q[w->qhead++];
            if (w->qhead == w->qn) w->qhead = w->qn = w->qready = 0;
            return KCTL_OK;
        }
        if (w->after) {
            if (st && w->after_st.code)
                kctl_api_status_set(st, w->after_st.code, w->after_st.reason, w->after_st.message, NULL, NULL, NULL, NULL, 0);
            return w->after;
        }
        now = kctl__http_now_ms();
        rc = kctl__hstream_line(&w->s, until > now ? until - now : 0, &line, &n);
        if (rc == KCTL_OK) {
            rc = kctl__ewatch_message(w, line, n, &w->after_st);
            if (rc != KCTL_OK) w->after = rc; /* after the events already queued */
            continue;
        }
        if (rc == KCTL_ERR_AGAIN) {
            kctl__hnotify_arm(w->nt, &w->s); /* idle: wake on what comes next */
            return rc;
        }
        if (rc == KCTL_ERR_IO) { /* the stream ended or broke: watch again, from the next endpoint */
            kctl__hmutex_lock(&w->e->http.mu);
            if (w->e->http.cur == w->s.ep) { w->e->http.cur = (w->s.ep + 1) % w->e->http.nep; w->e->http.n_failovers++; }
            kctl__hmutex_unlock(&w->e->http.mu);
            if (st) kctl_api_status_set(st, 503, "ServiceUnavailable", "etcd: the watch stream ended", NULL, NULL, NULL, NULL, 0);
        }
        w->after = rc;
    }
}

/* watch_notify: see kctl__hnotify. OK, UNSUPPORTED (KCTL_NO_THREADS, or
   no socket to wait on: poll), INVALID_ARG, NOMEM, IO (no pipe). */
static int kctl__etcd_watch_notify(void *self, kctl_watch *watch, const kctl_wake *wake) {
    kctl__ewatch *w = (kctl__ewatch *)watch;
    (void)self;
    if (!w) return KCTL_ERR_INVALID_ARG;
    return kctl__hnotify_start(&w->nt, &w->e->http.a, &w->s, wake);
}

/* ---- the transport */
static void kctl__etcd_destroy(void *self) {
    kctl__etcd *e = (kctl__etcd *)self;
    kctl_allocator a;
    if (!e) return;
    a = e->http.a;
    kctl__http_deinit(&e->http);
    kctl__http_free(&a, e->prefix);
    kctl__http_free(&a, e->user);
    if (e->password) { /* no copy of a credential outlives the transport */
        volatile char *p = e->password;
        while (*p) *p++ = 0;
        kctl__http_free(&a, e->password);
    }
    kctl__hmutex_deinit(&e->mu);
    kctl__http_free(&a, e);
}

static const kctl_transport_vtable kctl__etcd_vt = {
    kctl__etcd_list, kctl__etcd_watch_open, kctl__etcd_watch_next, kctl__etcd_watch_close, kctl__etcd_get,
    kctl__etcd_create, kctl__etcd_update, kctl__etcd_update_status, kctl__etcd_patch, kctl__etcd_remove, kctl__etcd_destroy,
    kctl__etcd_watch_notify
};

static uint64_t kctl__etcd_seed(void) {
    uint64_t s = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
        close(fd);
    }
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s ^= (uint64_t)ts.tv_nsec * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 32);
    }
    return s ? s : UINT64_C(0x853c49e6748fea9b);
}

KCTL_API int kctl_etcd_create(const kctl_etcd_desc *desc, kctl_transport *out) {
    kctl_etcd_desc d = kctl_etcd_desc_init();
    kctl__etcd *e;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!desc || !desc->endpoints || (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    d.endpoints = desc->endpoints;
    if (desc->prefix) d.prefix = desc->prefix;
    d.username = desc->username;
    d.password = desc->password;
    d.tls = desc->tls;
    if (desc->request_timeout_ns) d.request_timeout_ns = desc->request_timeout_ns;
    if (desc->connect_timeout_ns) d.connect_timeout_ns = desc->connect_timeout_ns;
    if (desc->max_message_bytes) d.max_message_bytes = desc->max_message_bytes;
    if (desc->max_response_bytes) d.max_response_bytes = desc->max_response_bytes;
    if (desc->list_chunk) d.list_chunk = desc->list_chunk;
    d.obj_opts = desc->obj_opts;
    d.allocator = desc->allocator;
    if (!d.obj_opts.allocator.alloc_fn) d.obj_opts.allocator = d.allocator;
    kctl__http_global_init();
    if (!(e = (kctl__etcd *)kctl__http_alloc(&d.allocator, sizeof *e))) return KCTL_ERR_NOMEM;
    memset(e, 0, sizeof *e);
    if ((rc = kctl__http_init(&e->http, &d.allocator, d.endpoints, &d.tls)) != KCTL_OK || (rc = kctl__hmutex_init(&e->mu)) != KCTL_OK) {
        kctl__http_deinit(&e->http);
        kctl__http_free(&d.allocator, e);
        return rc;
    }
    kctl__http_limits(&e->http, d.request_timeout_ns, d.connect_timeout_ns, d.max_message_bytes, d.max_response_bytes);
    e->list_chunk = d.list_chunk;
    e->obj_opts = d.obj_opts;
    e->rng[0] = kctl__etcd_seed();
    e->rng[1] = kctl__etcd_seed() ^ UINT64_C(0xda942042e4dd58b5);
    {
        size_t pl = strlen(d.prefix);
        while (pl && d.prefix[pl - 1] == '/') pl--;
        e->prefix = kctl__http_strndup(&d.allocator, d.prefix, pl);
    }
    if (d.username) e->user = kctl__http_strndup(&d.allocator, d.username, strlen(d.username));
    if (d.password) e->password = kctl__http_strndup(&d.allocator, d.password, strlen(d.password));
    if (!e->prefix || (d.username && !e->user) || (d.password && !e->password)) {
        kctl__etcd_destroy(e);
        return KCTL_ERR_NOMEM;
    }
    if (e->user && (rc = kctl__etcd_auth(e, NULL)) != KCTL_OK) {
        kctl__etcd_destroy(e);
        return rc;
    }
    out->vt = &kctl__etcd_vt;
    out->self = e;
    return KCTL_OK;
}

KCTL_API void kctl_etcd_read_stats(const kctl_transport *t, kctl_etcd_stats *out) {
    kctl__etcd *e;
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!t || t->vt != &kctl__etcd_vt || !t->self) return;
    e = (kctl__etcd *)t->self;
    kctl__hmutex_lock(&e->http.mu);
    out->requests = e->http.n_requests;
    out->failovers = e->http.n_failovers;
    out->endpoint = (uint32_t)e->http.cur;
    kctl__hmutex_unlock(&e->http.mu);
    kctl__hmutex_lock(&e->mu);
    out->reauths = e->n_reauths;
    out->watches = e->n_watches;
    out->retries = e->n_retries;
    out->watch_endpoint = e->watch_ep;
    kctl__hmutex_unlock(&e->mu);
}

/* ------------------------------------------------------------------ >>kube KUBERNETES */
/* The API server's REST paths over the HTTP layer: objects travel as the
   server sends them (its resourceVersion, its Status bodies), watches
   are its newline-delimited JSON events. */
typedef struct kctl__kube {
    kctl__http http;           /* one endpoint: the server */
    kctl_obj_opts obj_opts;
    uint32_t wt_min, wt_max;   /* a watch's timeoutSeconds, drawn from [min, max] */
    char *token_file;
    kctl__hmutex mu;           /* the token file's state, the random numbers, the counters */
    uint64_t tf_checked;       /* when token_file was last looked at (ms, monotonic) */
    long long tf_id[4];        /* what it was then: mtime (s, ns), size, inode */
    uint64_t rng;
    uint64_t n_watches, n_closed, n_waits, n_throttled, n_token_reads, n_auth_retries;
} kctl__kube;

KCTL_API kctl_kube_desc kctl_kube_desc_init(void) {
    kctl_kube_desc d;
    memset(&d, 0, sizeof d);
    d.request_timeout_ns = KCTL_SEC(30);
    d.connect_timeout_ns = KCTL_SEC(5);
    d.watch_timeout_min_s = 300;
    d.watch_timeout_max_s = 600;
    d.max_message_bytes = (size_t)16 << 20;
    d.max_response_bytes = (size_t)256 << 20;
    return d;
}

/* ---- credentials: a bearer token, or a file holding one */
#define KCTL__KUBE_TOKEN_MAX 16384

static void kctl__kube_wipe(const kctl_allocator *a, char *p) {
    if (p) {
        volatile char *v = p;
        while (*v) *v++ = 0;
    }
    kctl__http_free(a, p);
}

/* "Authorization: Bearer <tok>" of tok[0..n) without its surrounding white
   space, into *hdr: OK; INVALID_ARG for an empty token or one with
   characters a header cannot carry (only visible ASCII); NOMEM. */
static int kctl__kube_auth_header(const kctl_allocator *a, const char *tok, size_t n, char **hdr) {
    size_t i;
    *hdr = NULL;
    while (n && (*tok == ' ' || *tok == '\t' || *tok == '\r' || *tok == '\n')) tok++, n--;
    while (n && (tok[n - 1] == ' ' || tok[n - 1] == '\t' || tok[n - 1] == '\r' || tok[n - 1] == '\n')) n--;
    if (!n || n > KCTL__KUBE_TOKEN_MAX) return KCTL_ERR_INVALID_ARG;
    for (i = 0; i < n; i++)
        if ((unsigned char)tok[i] <= ' ' || (unsigned char)tok[i] >= 0x7f) return KCTL_ERR_INVALID_ARG;
    if (!(*hdr = (char *)kctl__http_alloc(a, n + 23))) return KCTL_ERR_NOMEM;
    memcpy(*hdr, "Authorization: Bearer ", 22);
    memcpy(*hdr + 22, tok, n);
    (*hdr)[22 + n] = '\0';
    return KCTL_OK;
}

/* Send hdr (taken) from now on: true when it differs from the one before. */
static bool kctl__kube_set_auth(kctl__kube *k, char *hdr) {
    char *old;
    bool changed;
    kctl__hmutex_lock(&k->http.mu);
    old = k->http.auth;
    changed = !old || strcmp(old, hdr) != 0;
    k->http.auth = hdr;
    kctl__hmutex_unlock(&k->http.mu);
    kctl__kube_wipe(&k->http.a, old);
    return changed;
}

/* Read token_file into *hdr and its identity into id: OK, IO (it cannot
   be read), INVALID_ARG (empty, no token, or past KCTL__KUBE_TOKEN_MAX),
   NOMEM. */
static int kctl__kube_read_token(kctl__kube *k, char **hdr, long long id[4]) {
    char *buf;
    size_t n = 0;
    ssize_t got;
    struct stat sb;
    int fd, rc;
    *hdr = NULL;
    if ((fd = open(k->token_file, O_RDONLY | O_CLOEXEC)) < 0) return KCTL_ERR_IO;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return KCTL_ERR_IO;
    }
    id[0] = (long long)sb.st_mtim.tv_sec;
    id[1] = (long long)sb.st_mtim.tv_nsec;
    id[2] = (long long)sb.st_size;
    id[3] = (long long)sb.st_ino;
    if (!(buf = (char *)kctl__http_alloc(&k->http.a, KCTL__KUBE_TOKEN_MAX + 2))) {
        close(fd);
        return KCTL_ERR_NOMEM;
    }
    rc = KCTL_OK;
    while (n <= KCTL__KUBE_TOKEN_MAX && (got = read(fd, buf + n, KCTL__KUBE_TOKEN_MAX + 1 - n)) != 0) { /* one byte more: too long */
        if (got < 0) {
            if (errno == EINTR) continue;
            rc = KCTL_ERR_IO;
            break;
        }
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    if (rc == KCTL_OK) rc = kctl__kube_auth_header(&k->http.a, buf, n, hdr);
    memset(buf, 0, n);
    kctl__http_free(&k->http.a, buf);
    return rc;
}

/* Look at token_file again (a projected token rotates): at most once a
   second of now_ms, or at once when force (a 401); read it when its
   mtime, size or inode changed (force: always). true when the token
   changed. A file that cannot be read, or holds no token, leaves the
   token as it was (client-go's cachingTokenSource does the same). */
static bool kctl__kube_token_check(kctl__kube *k, uint64_t now_ms, bool force) {
    struct stat sb;
    long long id[4];
    char *hdr = NULL;
    bool changed = false;
    if (!k->token_file) return false;
    kctl__hmutex_lock(&k->mu);
    if (!force && now_ms - k->tf_checked < 1000) {
        kctl__hmutex_unlock(&k->mu);
        return false;
    }
    k->tf_checked = now_ms;
    if (!force && stat(k->token_file, &sb) == 0 && (long long)sb.st_mtim.tv_sec == k->tf_id[0] &&
        (long long)sb.st_mtim.tv_nsec == k->tf_id[1] && (long long)sb.st_size == k->tf_id[2] && (long long)sb.st_ino == k->tf_id[3]) {
        kctl__hmutex_unlock(&k->mu);
        return false;
    }
    k->n_token_reads++;
    if (kctl__kube_read_token(k, &hdr, id) == KCTL_OK) {
        memcpy(k->tf_id, id, sizeof id);
        changed = kctl__kube_set_auth(k, hdr);
    }
    kctl__hmutex_unlock(&k->mu);
    return changed;
}

/* ---- errors */
static const char *kctl__kube_reason(long code) {
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return code >= 500 ? "InternalError" : "Unknown";
    }
}

/* An error answer of HTTP code with body[0..len): its kctl code
   (kctl_api_status_result: 409 CONFLICT or EXISTS by reason, 410 GONE,
   429/503 AGAIN...), and *st (may be NULL) filled from the Status body,
   or from the code when the body is no Status (a proxy's page, the
   aggregator's {"paths":[...]}). retry_after (seconds, -1: none) is
   st->retry_after_s when the Status has no retryAfterSeconds. */
static int kctl__kube_status(const kctl_allocator *a, long code, const char *body, size_t len, long retry_after, kctl_api_status *st) {
    kctl_api_status tmp, *s = st;
    int rc;
    if (!s) {
        memset(&tmp, 0, sizeof tmp);
        tmp.allocator = *a;
        s = &tmp;
    }
    if (!body || !len || kctl_api_status_parse(s, body, len, (int)code) != KCTL_OK) {
        char msg[96];
        snprintf(msg, sizeof msg, "kube: the server answered %ld with no Status", code);
        kctl_api_status_set(s, (int)code, kctl__kube_reason(code), msg, NULL, NULL, NULL, NULL, 0);
    }
    if (retry_after > 0 && !s->retry_after_s) s->retry_after_s = retry_after > 100000000L ? 100000000u : (uint32_t)retry_after;
    rc = kctl_api_status_result((int)code, s->reason);
    if (rc == KCTL_OK) rc = KCTL_ERR_PROTO; /* a 1xx or 3xx: not an answer this client asked for */
    if (s == &tmp) kctl_api_status_clear(&tmp);
    return rc;
}

/* What a failure of the transport itself says in a Status: libcurl's
   reason (a fixed text), never a token, file or key. */
static int kctl__kube_fail(int rc, CURLcode cc, kctl_api_status *st) {
    char msg[200];
    if (!st || rc == KCTL_OK || rc == KCTL_ERR_NOMEM) return rc;
    if (rc == KCTL_ERR_TOO_LARGE) {
        kctl_api_status_set(st, 413, "RequestEntityTooLarge", "kube: the answer is larger than max_response_bytes", NULL, NULL, NULL, NULL, 0);
        return rc;
    }
    snprintf(msg, sizeof msg, "%s%s%s", rc == KCTL_ERR_TIMEOUT ? "kube: the request timed out" : "kube: the server did not answer",
             cc != CURLE_OK ? ": " : "", cc != CURLE_OK ? curl_easy_strerror(cc) : "");
    kctl_api_status_set(st, rc == KCTL_ERR_TIMEOUT ? 504 : 503, rc == KCTL_ERR_TIMEOUT ? "Timeout" : "ServiceUnavailable", msg,
                        NULL, NULL, NULL, NULL, 0);
    return rc;
}

static int kctl__kube_bad(int rc, const char *msg, kctl_api_status *st) {
    if (st) kctl_api_status_set(st, 400, "BadRequest", msg, NULL, NULL, NULL, NULL, 0);
    return rc;
}

/* ---- paths */
/* A path segment the API server can address (its ValidatePathSegmentName):
   not empty, not "." or "..", no '/', '%' or control characters, at most
   max bytes. */
static bool kctl__kube_seg_ok(const char *s, size_t max) {
    size_t n = 0;
    if (!s || !*s || !strcmp(s, ".") || !strcmp(s, "..")) return false;
    for (; *s; s++, n++)
        if ((unsigned char)*s < ' ' || *s == '/' || *s == '%' || *s == 0x7f || n >= max) return false;
    return true;
}

/* s percent-encoded but for RFC 3986's unreserved characters. */
static void kctl__kube_esc(kctl__hbuf *b, const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~') {
            kctl__hbuf_put(b, s, 1);
        } else {
            char e[3];
            e[0] = '%';
            e[1] = hex[c >> 4];
            e[2] = hex[c & 15];
            kctl__hbuf_put(b, e, 3);
        }
    }
}

/* /api/v1 (the core group) or /apis/<group>/<version>, then
   /namespaces/<ns> when ns is given ("" or NULL: all namespaces, or the
   cluster scope), /<resource>, and /<name>[/<sub>] for one object. */
static void kctl__kube_path(const kctl_resource *res, const char *ns, const char *name, const char *sub, kctl__hbuf *b) {
    if (res->group && *res->group) {
        kctl__hbuf_str(b, "/apis/");
        kctl__kube_esc(b, res->group);
        kctl__hbuf_put(b, "/", 1);
    } else {
        kctl__hbuf_str(b, "/api/");
    }
    kctl__kube_esc(b, res->version && *res->version ? res->version : "v1");
    if (ns && *ns) {
        kctl__hbuf_str(b, "/namespaces/");
        kctl__kube_esc(b, ns);
    }
    kctl__hbuf_put(b, "/", 1);
    kctl__kube_esc(b, res->resource);
    if (name) {
        kctl__hbuf_put(b, "/", 1);
        kctl__kube_esc(b, name);
        if (sub) {
            kctl__hbuf_put(b, "/", 1);
            kctl__hbuf_str(b, sub);
        }
    }
}

/* One more query parameter (value escaped). */
static void kctl__kube_q(kctl__hbuf *b, const char *key, const char *val) {
    kctl__hbuf_put(b, b->p && memchr(b->p, '?', b->len) ? "&" : "?", 1);
    kctl__hbuf_str(b, key);
    kctl__hbuf_put(b, "=", 1);
    kctl__kube_esc(b, val);
}

static int kctl__kube_check_res(const kctl_resource *res, kctl_api_status *st) {
    bool group = res && res->group && *res->group;
    if (!res || !kctl__kube_seg_ok(res->resource, 253) || (group && !kctl__kube_seg_ok(res->group, 253)) ||
        (group && !kctl__kube_seg_ok(res->version, 63)) || (!group && res->version && *res->version && !kctl__kube_seg_ok(res->version, 63)) ||
        (res->ns && *res->ns && !kctl__kube_seg_ok(res->ns, 253)))
        return kctl__kube_bad(KCTL_ERR_INVALID_ARG, "the resource's group, version, resource or namespace is not valid", st);
    return KCTL_OK;
}

/* ---- requests */
static void kctl__kube_sleep_ms(uint64_t ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000u);
    ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}

/* After an error answer of code (Retry-After ra seconds, -1: none):
   whether to send the request again. A 401 reads token_file anew, once,
   and sends again if the token changed (the server refused the request
   before doing anything). A 429 or 503 with a Retry-After that ends
   before deadline (the request timeout's end, counted from the call) is
   waited out, once, and the request sent again, when the request is
   idempotent: a read, or a write the server would refuse if it had
   already been applied (a resourceVersion or uid precondition). A POST,
   or a write without a precondition, is never sent twice: the caller
   gets AGAIN and the Retry-After in its Status. */
static bool kctl__kube_again(kctl__kube *k, long code, long ra, bool idempotent, uint64_t deadline, bool *renewed, bool *waited) {
    uint64_t now;
    if (code == 401 && !*renewed && k->token_file) {
        *renewed = true;
        if (kctl__kube_token_check(k, kctl__http_now_ms(), true)) {
            kctl__hmutex_lock(&k->mu);
            k->n_auth_retries++;
            kctl__hmutex_unlock(&k->mu);
            return true;
        }
        return false;
    }
    if (code != 429 && code != 503) return false;
    now = kctl__http_now_ms();
    if (idempotent && !*waited && ra >= 0 && now + (uint64_t)ra * 1000u < deadline) {
        *waited = true;
        kctl__hmutex_lock(&k->mu);
        k->n_waits++;
        kctl__hmutex_unlock(&k->mu);
        kctl__kube_sleep_ms((uint64_t)ra * 1000u);
        return true;
    }
    kctl__hmutex_lock(&k->mu);
    k->n_throttled++;
    kctl__hmutex_unlock(&k->mu);
    return false;
}

/* One request: OK with a 2xx answer in *res (its body the caller's to
   free), or the failure with *st: the server's Status mapped to a code,
   or the transport's (IO, TIMEOUT, TOO_LARGE, NOMEM). */
static int kctl__kube_call(kctl__kube *k, const char *method, const char *path, const char *body, size_t len, const char *ctype,
                           bool idempotent, kctl__hres *res, kctl_api_status *st) {
    uint64_t deadline = kctl__http_now_ms() + (uint64_t)k->http.timeout_ms, now;
    bool renewed = false, waited = false;
    kctl__hreq q;
    int rc;
    memset(&q, 0, sizeof q);
    q.kind = idempotent ? KCTL__HTTP_READ : KCTL__HTTP_WRITE;
    q.method = method;
    q.path = path;
    q.body = body;
    q.len = len;
    q.ctype = ctype;
    q.extra = "Accept: application/json";
    kctl__kube_token_check(k, kctl__http_now_ms(), false);
    for (;;) {
        now = kctl__http_now_ms();
        q.timeout_ms = deadline > now + 1 ? (long)(deadline - now) : 1;
        if ((rc = kctl__http_do(&k->http, &q, res)) != KCTL_OK) return kctl__kube_fail(rc, res->cc, st);
        if (res->code >= 200 && res->code < 300) return KCTL_OK;
        if (kctl__kube_again(k, res->code, res->retry_after, idempotent, deadline, &renewed, &waited)) {
            kctl__hbuf_free(&res->body);
            continue;
        }
        rc = kctl__kube_status(&k->http.a, res->code, res->body.p, res->body.len, res->retry_after, st);
        kctl__hbuf_free(&res->body);
        return rc;
    }
}

/* A 2xx answer that is one object, as *out (NULL: not wanted). */
static int kctl__kube_answer_obj(kctl__kube *k, kctl__hres *res, kctl_obj **out, kctl_api_status *st) {
    int rc = KCTL_OK;
    if (out) {
        rc = kctl_obj_parse(res->body.p ? res->body.p : "", res->body.len, &k->obj_opts, out);
        if (rc == KCTL_ERR_PROTO && st) kctl_api_status_set(st, 500, "InternalError", "kube: the answer is no object", NULL, NULL, NULL, NULL, 0);
    }
    kctl__hbuf_free(&res->body);
    return rc;
}

/* ---- get, list */
static int kctl__kube_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    kctl__kube *k = (kctl__kube *)self;
    kctl__hbuf path;
    kctl__hres r;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if ((rc = kctl__kube_check_res(res, st)) != KCTL_OK) return rc;
    if (!kctl__kube_seg_ok(name, 253)) return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, res, name ? name : "", st); /* no object can have it */
    kctl__hbuf_init(&path, &k->http.a, 8192);
    kctl__kube_path(res, res->ns, name, NULL, &path);
    if ((rc = path.err) == KCTL_OK && (rc = kctl__kube_call(k, "GET", path.p, NULL, 0, NULL, true, &r, st)) == KCTL_OK)
        rc = kctl__kube_answer_obj(k, &r, out, st);
    kctl__hbuf_free(&path);
    return rc;
}

/* A list answer ({"kind":"XList","apiVersion",...,"metadata":{
   "resourceVersion","continue"},"items":[...]}) into *out (its
   items.allocator set): OK, PROTO, TOO_LARGE (a version or continue token
   past kctl's room), NOMEM. Items come without kind and apiVersion: they
   get the list's (kind without "List"), as a dynamic client's do, so a
   listed object reads as a watched one. */
static int kctl__kube_list_parse(const kctl_obj_opts *oo, const kctl_allocator *a, const char *body, size_t len, kctl_list_result *out) {
    kctl_json_value root, kind, av, items, item, name;
    kctl_json_iter it;
    kctl__hbuf doc;
    size_t cap = 0;
    bool inject;
    int rc;
    if (kctl_json_get(body, len, "", &root) != KCTL_OK || root.type != KCTL_JSON_OBJECT) return KCTL_ERR_PROTO;
    rc = kctl_json_value_get_string(&root, "metadata.resourceVersion", out->resource_version, sizeof out->resource_version, NULL);
    if (rc != KCTL_OK && rc != KCTL_ERR_NOT_FOUND) return rc == KCTL_ERR_TOO_LARGE ? rc : KCTL_ERR_PROTO;
    rc = kctl_json_value_get_string(&root, "metadata.continue", out->continue_token, sizeof out->continue_token, NULL);
    if (rc != KCTL_OK && rc != KCTL_ERR_NOT_FOUND) return rc == KCTL_ERR_TOO_LARGE ? rc : KCTL_ERR_PROTO;
    rc = kctl_json_value_get(&root, "items", &items);
    if (rc == KCTL_ERR_NOT_FOUND || (rc == KCTL_OK && items.type == KCTL_JSON_NULL)) return KCTL_OK; /* none */
    if (rc != KCTL_OK || items.type != KCTL_JSON_ARRAY) return KCTL_ERR_PROTO;
    inject = kctl_json_value_get(&root, "kind", &kind) == KCTL_OK && kind.type == KCTL_JSON_STRING && kind.len > 6 &&
             !memcmp(kind.text + kind.len - 5, "List\"", 5) && kctl_json_value_get(&root, "apiVersion", &av) == KCTL_OK &&
             av.type == KCTL_JSON_STRING;
    kctl__hbuf_init(&doc, a, (size_t)-1 / 2);
    kctl_json_iter_begin(&items, NULL, &it);
    while (rc == KCTL_OK && kctl_json_iter_next(&it, NULL, &item)) {
        kctl_obj *o = NULL;
        const char *text = item.text;
        size_t n = item.len;
        if (item.type != KCTL_JSON_OBJECT) { rc = KCTL_ERR_PROTO; break; }
        if (inject && kctl_json_value_get(&item, "kind", &name) == KCTL_ERR_NOT_FOUND) {
            const char *p = text + 1, *end = text + n;
            while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
            doc.len = 0;
            kctl__hbuf_str(&doc, "{\"kind\":");
            kctl__hbuf_put(&doc, kind.text, kind.len - 5);
            kctl__hbuf_str(&doc, "\",\"apiVersion\":");
            kctl__hbuf_put(&doc, av.text, av.len);
            if (*p != '}') kctl__hbuf_put(&doc, ",", 1);
            kctl__hbuf_put(&doc, p, (size_t)(end - p));
            if ((rc = doc.err) != KCTL_OK) break;
            text = doc.p;
            n = doc.len;
        }
        if ((rc = kctl_obj_parse(text, n, oo, &o)) != KCTL_OK) break;
        if (out->items.count == cap) {
            size_t nc = cap ? cap * 2 : 64;
            kctl_obj **ni = (kctl_obj **)kctl__http_alloc(a, nc * sizeof *ni);
            if (!ni) { kctl_obj_unref(o); rc = KCTL_ERR_NOMEM; break; }
            if (out->items.count) memcpy(ni, out->items.items, out->items.count * sizeof *ni);
            kctl__http_free(a, out->items.items);
            out->items.items = ni;
            cap = nc;
        }
        out->items.items[out->items.count++] = o;
    }
    kctl__hbuf_free(&doc);
    return rc;
}

static int kctl__kube_list(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st) {
    kctl__kube *k = (kctl__kube *)self;
    kctl__hbuf path;
    kctl__hres r;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->items.allocator = k->http.a;
    if ((rc = kctl__kube_check_res(res, st)) != KCTL_OK) return rc;
    kctl__hbuf_init(&path, &k->http.a, 65536);
    kctl__kube_path(res, res->ns, NULL, NULL, &path);
    if (opts && opts->label_selector && *opts->label_selector) kctl__kube_q(&path, "labelSelector", opts->label_selector);
    if (opts && opts->field_selector && *opts->field_selector) kctl__kube_q(&path, "fieldSelector", opts->field_selector);
    if (opts && opts->limit) {
        char num[16];
        snprintf(num, sizeof num, "%u", (unsigned)opts->limit);
        kctl__kube_q(&path, "limit", num);
    }
    if (opts && opts->continue_token && *opts->continue_token) kctl__kube_q(&path, "continue", opts->continue_token);
    if ((rc = path.err) == KCTL_OK && (rc = kctl__kube_call(k, "GET", path.p, NULL, 0, NULL, true, &r, st)) == KCTL_OK) {
        rc = kctl__kube_list_parse(&k->obj_opts, &k->http.a, r.body.p ? r.body.p : "", r.body.len, out);
        if (rc == KCTL_ERR_PROTO && st) kctl_api_status_set(st, 500, "InternalError", "kube: the answer is no list", NULL, NULL, NULL, NULL, 0);
        if (rc == KCTL_ERR_TOO_LARGE && st)
            kctl_api_status_set(st, 500, "InternalError", "kube: the list's resourceVersion or continue token is longer than kctl holds",
                                NULL, NULL, NULL, NULL, 0);
        kctl__hbuf_free(&r.body);
    }
    kctl__hbuf_free(&path);
    if (rc != KCTL_OK) {
        kctl_list_result_free(out);
        out->resource_version[0] = out->continue_token[0] = '\0';
    }
    return rc;
}

/* ---- writes: the server decides; its answer is the object */
static int kctl__kube_doc_write(void *self, kctl_verb verb, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                kctl_api_status *st) {
    kctl__kube *k = (kctl__kube *)self;
    kctl_json_value root;
    char name[256], ns[256], rv[KCTL_RV_MAX];
    const char *use_ns;
    kctl__hbuf path;
    kctl__hres r;
    int rc;
    if (out) *out = NULL;
    if (!json) return KCTL_ERR_INVALID_ARG;
    if ((rc = kctl__kube_check_res(res, st)) != KCTL_OK) return rc;
    if (kctl_json_get(json, len, "", &root) != KCTL_OK || root.type != KCTL_JSON_OBJECT)
        return kctl__kube_bad(KCTL_ERR_INVALID_ARG, "the object is not a JSON object", st);
    if ((rc = kctl_json_value_get_string(&root, "metadata.name", name, sizeof name, NULL)) != KCTL_OK) name[0] = '\0';
    if (rc == KCTL_ERR_TOO_LARGE) return kctl__kube_bad(KCTL_ERR_INVALID_ARG, "metadata.name is too long", st);
    if ((rc = kctl_json_value_get_string(&root, "metadata.namespace", ns, sizeof ns, NULL)) != KCTL_OK) ns[0] = '\0';
    if (rc == KCTL_ERR_TOO_LARGE) return kctl__kube_bad(KCTL_ERR_INVALID_ARG, "metadata.namespace is too long", st);
    if (res->ns && *res->ns && ns[0] && strcmp(ns, res->ns) != 0)
        return kctl__kube_bad(KCTL_ERR_INVALID_ARG, "the namespace of the provided object does not match the namespace sent on the request", st);
    use_ns = res->ns && *res->ns ? res->ns : ns;
    if (*use_ns && !kctl__kube_seg_ok(use_ns, 253)) return kctl__kube_bad(KCTL_ERR_INVALID_ARG, "metadata.namespace is not valid", st);
    kctl__hbuf_init(&path, &k->http.a, 8192);
    if (verb == KCTL_VERB_CREATE) {
        kctl__kube_path(res, use_ns, NULL, NULL, &path);
        if ((rc = path.err) == KCTL_OK) rc = kctl__kube_call(k, "POST", path.p, json, len, NULL, false, &r, st);
    } else if (!kctl__kube_seg_ok(name, 253)) {
        rc = name[0] ? kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, res, name, st) : kctl__kube_bad(KCTL_ERR_INVALID_ARG, "metadata.name is required", st);
    } else {
        /* a resourceVersion makes it a precondition: the server refuses it (409) once it has been applied */
        int vr = kctl_json_value_get_string(&root, "metadata.resourceVersion", rv, sizeof rv, NULL);
        bool pre = (vr == KCTL_OK && rv[0]) || vr == KCTL_ERR_TOO_LARGE;
        kctl__kube_path(res, use_ns, name, verb == KCTL_VERB_UPDATE_STATUS ? "status" : NULL, &path);
        if ((rc = path.err) == KCTL_OK) rc = kctl__kube_call(k, "PUT", path.p, json, len, NULL, pre, &r, st);
    }
    if (rc == KCTL_OK) rc = kctl__kube_answer_obj(k, &r, out, st);
    kctl__hbuf_free(&path);
    return rc;
}

static int kctl__kube_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__kube_doc_write(self, KCTL_VERB_CREATE, res, json, len, out, st);
}
static int kctl__kube_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__kube_doc_write(self, KCTL_VERB_UPDATE, res, json, len, out, st);
}
static int kctl__kube_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__kube_doc_write(self, KCTL_VERB_UPDATE_STATUS, res, json, len, out, st);
}

static int kctl__kube_patch(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags,
                            kctl_obj **out, kctl_api_status *st) {
    kctl__kube *k = (kctl__kube *)self;
    kctl__hbuf path;
    kctl__hres r;
    char rv[KCTL_RV_MAX];
    bool pre;
    int rc;
    if (out) *out = NULL;
    if (!patch) return KCTL_ERR_INVALID_ARG;
    if ((rc = kctl__kube_check_res(res, st)) != KCTL_OK) return rc;
    if (!kctl__kube_seg_ok(name, 253)) return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, res, name ? name : "", st);
    rc = kctl_json_get_string(patch, len, "metadata.resourceVersion", rv, sizeof rv, NULL);
    pre = (rc == KCTL_OK && rv[0]) || rc == KCTL_ERR_TOO_LARGE;
    kctl__hbuf_init(&path, &k->http.a, 8192);
    kctl__kube_path(res, res->ns, name, (flags & KCTL_PATCH_STATUS) ? "status" : NULL, &path);
    if ((rc = path.err) == KCTL_OK && (rc = kctl__kube_call(k, "PATCH", path.p, patch, len, "application/merge-patch+json", pre, &r, st)) == KCTL_OK)
        rc = kctl__kube_answer_obj(k, &r, out, st);
    kctl__hbuf_free(&path);
    return rc;
}

/* DELETE, with DeleteOptions carrying the preconditions when there are
   any. The answer is a Status "Success" (gone: *out NULL), or the object:
   still there (202, or a deletionTimestamp with finalizers or a grace
   period left: *out gets it), or its last state (gone: *out NULL). */
static int kctl__kube_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                             kctl_api_status *st) {
    kctl__kube *k = (kctl__kube *)self;
    bool pre = opts && ((opts->uid && *opts->uid) || (opts->resource_version && *opts->resource_version));
    kctl__hbuf path;
    kctl__hres r;
    kctl_jw w;
    const char *body = NULL;
    size_t blen = 0;
    int rc;
    if (out) *out = NULL;
    if ((rc = kctl__kube_check_res(res, st)) != KCTL_OK) return rc;
    if (!kctl__kube_seg_ok(name, 253)) return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, res, name ? name : "", st);
    kctl_jw_init_growable(&w, &k->http.a);
    if (pre) {
        kctl_jw_object_begin(&w);
        kctl_jw_key(&w, "kind");
        kctl_jw_string(&w, "DeleteOptions");
        kctl_jw_key(&w, "apiVersion");
        kctl_jw_string(&w, "v1");
        kctl_jw_key(&w, "preconditions");
        kctl_jw_object_begin(&w);
        if (opts->uid && *opts->uid) { kctl_jw_key(&w, "uid"); kctl_jw_string(&w, opts->uid); }
        if (opts->resource_version && *opts->resource_version) { kctl_jw_key(&w, "resourceVersion"); kctl_jw_string(&w, opts->resource_version); }
        kctl_jw_object_end(&w);
        kctl_jw_object_end(&w);
        if ((rc = kctl_jw_finish(&w, &body, &blen)) != KCTL_OK) {
            kctl_jw_free(&w);
            return rc;
        }
    }
    kctl__hbuf_init(&path, &k->http.a, 8192);
    kctl__kube_path(res, res->ns, name, NULL, &path);
    if ((rc = path.err) == KCTL_OK && (rc = kctl__kube_call(k, "DELETE", path.p, body, blen, NULL, pre, &r, st)) == KCTL_OK) {
        kctl_json_value root;
        char kind[16], status[16];
        const char *b = r.body.p ? r.body.p : "";
        if (kctl_json_get(b, r.body.len, "", &root) != KCTL_OK || root.type != KCTL_JSON_OBJECT) {
            rc = KCTL_ERR_PROTO;
        } else if (kctl_json_value_get_string(&root, "kind", kind, sizeof kind, NULL) == KCTL_OK && !strcmp(kind, "Status")) {
            if (kctl_json_value_get_string(&root, "status", status, sizeof status, NULL) != KCTL_OK || strcmp(status, "Success") != 0)
                rc = kctl__kube_status(&k->http.a, r.code, b, r.body.len, -1, st); /* a Failure in a 2xx: its code says */
        } else {
            kctl_obj *o = NULL;
            int64_t grace = 0;
            if ((rc = kctl_obj_parse(b, r.body.len, &k->obj_opts, &o)) == KCTL_OK) {
                const char *dt = kctl_obj_deletion_timestamp(o);
                kctl_obj_get_int64(o, "metadata.deletionGracePeriodSeconds", &grace);
                if (r.code == 202 || (dt && *dt && (kctl_obj_finalizer_count(o) || grace > 0))) {
                    if (out) *out = o;
                    else kctl_obj_unref(o);
                } else {
                    kctl_obj_unref(o);
                }
            }
        }
        if (rc == KCTL_ERR_PROTO && st) kctl_api_status_set(st, 500, "InternalError", "kube: the answer is no object or Status", NULL, NULL, NULL, NULL, 0);
        kctl__hbuf_free(&r.body);
    }
    kctl__hbuf_free(&path);
    kctl_jw_free(&w);
    return rc;
}

/* ---- watch: the server's events, one JSON object a line */
typedef struct kctl__kwatch {
    kctl__kube *k;
    kctl__hstream s;
    kctl_obj_list initial;    /* from "": the objects listed at open, then the stream */
    size_t initial_next;
    char initial_rv[KCTL_RV_MAX];
    int after;                /* the result once the stream has nothing more */
    kctl_api_status after_st;
    kctl__hnotify *nt;        /* watch_notify's waiter (NULL: none) */
} kctl__kwatch;

/* One line of a watch stream ({"type":"...","object":{...}}): OK with *ev
   (ev->type 0: the line brings the watcher nothing: empty, or an event
   type this client does not know, skipped as client-go skips it); a
   BOOKMARK's object is a skeleton: only its resourceVersion is kept. An
   ERROR event's Status goes into *st (may be NULL) and says the result:
   410 GONE, others as kctl_api_status_result maps them (IO for one that
   maps to no error). PROTO for a line that is no event, or an event
   whose object is none; TOO_LARGE (a version past KCTL_RV_MAX); NOMEM. */
static int kctl__kube_watch_line(const kctl_obj_opts *oo, const kctl_allocator *a, const char *line, size_t n, kctl_event *ev,
                                 kctl_api_status *st) {
    kctl_json_value root, obj;
    char type[16];
    size_t i;
    int rc;
    memset(ev, 0, sizeof *ev);
    for (i = 0; i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'); i++) { }
    if (i == n) return KCTL_OK;
    if (kctl_json_get(line, n, "", &root) != KCTL_OK || root.type != KCTL_JSON_OBJECT) return KCTL_ERR_PROTO;
    rc = kctl_json_value_get_string(&root, "type", type, sizeof type, NULL);
    if (rc == KCTL_ERR_TOO_LARGE) return KCTL_OK; /* no type this client knows */
    if (rc != KCTL_OK || kctl_json_value_get(&root, "object", &obj) != KCTL_OK || obj.type != KCTL_JSON_OBJECT) return KCTL_ERR_PROTO;
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        const char *rv;
        if ((rc = kctl_obj_parse(obj.text, obj.len, oo, &ev->obj)) != KCTL_OK) return rc;
        rv = kctl_obj_resource_version(ev->obj);
        if (!*rv || strlen(rv) >= sizeof ev->resource_version) {
            rc = *rv ? KCTL_ERR_TOO_LARGE : KCTL_ERR_PROTO;
            kctl_obj_unref(ev->obj);
            ev->obj = NULL;
            return rc;
        }
        strcpy(ev->resource_version, rv);
        ev->type = type[0] == 'A' ? KCTL_EVENT_ADDED : type[0] == 'M' ? KCTL_EVENT_MODIFIED : KCTL_EVENT_DELETED;
        return KCTL_OK;
    }
    if (!strcmp(type, "BOOKMARK")) {
        rc = kctl_json_value_get_string(&obj, "metadata.resourceVersion", ev->resource_version, sizeof ev->resource_version, NULL);
        if (rc != KCTL_OK || !ev->resource_version[0]) {
            ev->resource_version[0] = '\0';
            return rc == KCTL_ERR_TOO_LARGE ? rc : KCTL_ERR_PROTO;
        }
        ev->type = KCTL_EVENT_BOOKMARK;
        return KCTL_OK;
    }
    if (!strcmp(type, "ERROR")) {
        kctl_api_status tmp, *s = st;
        if (!s) {
            memset(&tmp, 0, sizeof tmp);
            tmp.allocator = *a;
            s = &tmp;
        }
        if ((rc = kctl_api_status_parse(s, obj.text, obj.len, 500)) == KCTL_OK) {
            rc = s->code == 410 ? KCTL_ERR_GONE : kctl_api_status_result(s->code, s->reason);
            if (rc == KCTL_OK) rc = KCTL_ERR_IO;
        } else if (rc != KCTL_ERR_NOMEM) {
            rc = KCTL_ERR_PROTO;
        }
        if (s == &tmp) kctl_api_status_clear(&tmp);
        return rc;
    }
    return KCTL_OK;
}

static void kctl__kube_watch_close(void *self, kctl_watch *watch) {
    kctl__kwatch *w = (kctl__kwatch *)watch;
    (void)self;
    if (!w) return;
    kctl__hnotify_stop(&w->nt); /* before its socket goes */
    kctl__hstream_close(&w->s);
    kctl_obj_list_free(&w->initial);
    kctl_api_status_clear(&w->after_st);
    kctl__http_free(&w->k->http.a, w);
}

/* Open the stream at path: OK once the server answered 200; else its
   Status mapped (a 401 reads the token anew, a 429/503 is waited out, as
   kctl__kube_call does: a watch is a read), or IO/TIMEOUT when it did not
   answer within the request timeout. */
static int kctl__kube_watch_start(kctl__kube *k, kctl__kwatch *w, const char *path, kctl_api_status *st) {
    uint64_t deadline = kctl__http_now_ms() + (uint64_t)k->http.timeout_ms, now;
    bool renewed = false, waited = false;
    kctl__hreq q;
    int rc;
    memset(&q, 0, sizeof q);
    q.method = "GET";
    q.path = path;
    q.extra = "Accept: application/json";
    kctl__kube_token_check(k, kctl__http_now_ms(), false);
    for (;;) {
        size_t bn;
        const char *b;
        if ((rc = kctl__hstream_start(&k->http, 0, &q, &w->s)) != KCTL_OK) return rc;
        now = kctl__http_now_ms();
        rc = kctl__hstream_head(&w->s, deadline > now ? deadline - now : 0);
        if (rc == KCTL_OK && w->s.code == 200) {
            kctl__hmutex_lock(&k->mu);
            k->n_watches++;
            kctl__hmutex_unlock(&k->mu);
            return KCTL_OK;
        }
        if (rc == KCTL_OK && w->s.code) { /* an error answer: its body, then its Status */
            now = kctl__http_now_ms();
            rc = kctl__hstream_finish(&w->s, deadline > now ? deadline - now : 0);
        }
        if (rc != KCTL_OK || !w->s.code) {
            CURLcode cc = w->s.done ? w->s.cc : CURLE_OK;
            if (rc == KCTL_OK) rc = w->s.buf.err == KCTL_ERR_NOMEM ? KCTL_ERR_NOMEM : cc == CURLE_OPERATION_TIMEDOUT ? KCTL_ERR_TIMEOUT : KCTL_ERR_IO;
            kctl__hstream_close(&w->s);
            return kctl__kube_fail(rc, cc, st);
        }
        if (kctl__kube_again(k, w->s.code, w->s.retry_after, true, deadline, &renewed, &waited)) {
            kctl__hstream_close(&w->s);
            continue;
        }
        b = kctl__hstream_rest(&w->s, &bn);
        rc = kctl__kube_status(&k->http.a, w->s.code, b, bn, w->s.retry_after, st);
        kctl__hstream_close(&w->s);
        return rc;
    }
}

static int kctl__kube_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *opts, const char *from_rv, kctl_watch **out,
                                 kctl_api_status *st) {
    kctl__kube *k = (kctl__kube *)self;
    kctl__kwatch *w;
    kctl__hbuf path;
    const char *rv = from_rv ? from_rv : "";
    char num[16];
    uint32_t tmo;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if ((rc = kctl__kube_check_res(res, st)) != KCTL_OK) return rc;
    if (strlen(rv) >= KCTL_RV_MAX) return kctl__kube_bad(KCTL_ERR_INVALID_ARG, "invalid resource version", st);
    if (!(w = (kctl__kwatch *)kctl__http_alloc(&k->http.a, sizeof *w))) return KCTL_ERR_NOMEM;
    memset(w, 0, sizeof *w);
    w->k = k;
    w->after_st.allocator = k->http.a;
    w->initial.allocator = k->http.a;
    if (!*rv) { /* from now, with the objects there now: a list (every page, one version), then a watch from its version */
        kctl_list_opts lo;
        char cont[KCTL_CONTINUE_MAX] = "";
        size_t cap = 0;
        memset(&lo, 0, sizeof lo);
        if (opts) { lo.label_selector = opts->label_selector; lo.field_selector = opts->field_selector; }
        lo.limit = 500;
        do {
            kctl_list_result l;
            lo.continue_token = cont;
            if ((rc = kctl__kube_list(self, res, &lo, &l, st)) != KCTL_OK) {
                kctl__kube_watch_close(self, (kctl_watch *)w);
                return rc;
            }
            if (!w->initial_rv[0]) snprintf(w->initial_rv, sizeof w->initial_rv, "%s", l.resource_version);
            if (w->initial.count + l.items.count > cap) {
                size_t nc = cap ? cap * 2 : 64;
                kctl_obj **ni;
                while (nc < w->initial.count + l.items.count) nc *= 2;
                if (!(ni = (kctl_obj **)kctl__http_alloc(&k->http.a, nc * sizeof *ni))) {
                    kctl_list_result_free(&l);
                    kctl__kube_watch_close(self, (kctl_watch *)w);
                    return KCTL_ERR_NOMEM;
                }
                if (w->initial.count) memcpy(ni, w->initial.items, w->initial.count * sizeof *ni);
                kctl__http_free(&k->http.a, w->initial.items);
                w->initial.items = ni;
                cap = nc;
            }
            memcpy(w->initial.items + w->initial.count, l.items.items, l.items.count * sizeof *w->initial.items);
            w->initial.count += l.items.count;
            kctl__http_free(&k->http.a, l.items.items); /* the references moved */
            snprintf(cont, sizeof cont, "%s", l.continue_token);
        } while (cont[0]);
        rv = w->initial_rv;
    }
    kctl__hmutex_lock(&k->mu);
    k->rng ^= k->rng << 13; /* xorshift64 */
    k->rng ^= k->rng >> 7;
    k->rng ^= k->rng << 17;
    tmo = k->wt_min + (uint32_t)(k->rng % ((uint64_t)(k->wt_max - k->wt_min) + 1));
    kctl__hmutex_unlock(&k->mu);
    kctl__hbuf_init(&path, &k->http.a, 65536);
    kctl__kube_path(res, res->ns, NULL, NULL, &path);
    kctl__kube_q(&path, "watch", "1");
    if (*rv) kctl__kube_q(&path, "resourceVersion", rv);
    kctl__kube_q(&path, "allowWatchBookmarks", "true");
    snprintf(num, sizeof num, "%u", (unsigned)tmo);
    kctl__kube_q(&path, "timeoutSeconds", num);
    if (opts && opts->label_selector && *opts->label_selector) kctl__kube_q(&path, "labelSelector", opts->label_selector);
    if (opts && opts->field_selector && *opts->field_selector) kctl__kube_q(&path, "fieldSelector", opts->field_selector);
    if ((rc = path.err) == KCTL_OK) rc = kctl__kube_watch_start(k, w, path.p, st);
    kctl__hbuf_free(&path);
    if (rc != KCTL_OK) {
        kctl__kube_watch_close(self, (kctl_watch *)w);
        return rc;
    }
    *out = (kctl_watch *)w;
    return KCTL_OK;
}

static void kctl__kube_status_copy(kctl_api_status *dst, const kctl_api_status *src) {
    if (!dst || !src->code) return;
    kctl_api_status_set(dst, src->code, src->reason, src->message, src->name, src->group, src->kind, src->causes, src->cause_count);
    dst->retry_after_s = src->retry_after_s;
}

static int kctl__kube_watch_next(void *self, kctl_watch *watch, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    kctl__kwatch *w = (kctl__kwatch *)watch;
    uint64_t until;
    (void)self;
    if (!w || !ev) return KCTL_ERR_INVALID_ARG;
    memset(ev, 0, sizeof *ev);
    if (w->initial_next < w->initial.count) { /* the objects listed at open; the last brings the list's version */
        ev->type = KCTL_EVENT_ADDED;
        ev->obj = kctl_obj_ref(w->initial.items[w->initial_next++]);
        snprintf(ev->resource_version, sizeof ev->resource_version, "%s",
                 w->initial_next == w->initial.count ? w->initial_rv : kctl_obj_resource_version(ev->obj));
        return KCTL_OK;
    }
    until = kctl__http_now_ms() + timeout_ns / 1000000u;
    for (;;) {
        const char *line;
        size_t n;
        uint64_t now;
        int rc;
        if (w->after) {
            kctl__kube_status_copy(st, &w->after_st);
            return w->after;
        }
        now = kctl__http_now_ms();
        rc = kctl__hstream_line(&w->s, until > now ? until - now : 0, &line, &n);
        if (rc == KCTL_OK) {
            rc = kctl__kube_watch_line(&w->k->obj_opts, &w->k->http.a, line, n, ev, &w->after_st);
            if (rc == KCTL_OK && ev->type) return KCTL_OK;
            if (rc != KCTL_OK) w->after = rc; /* the stream has nothing more for the watcher */
            continue;
        }
        if (rc == KCTL_ERR_AGAIN) {
            kctl__hnotify_arm(w->nt, &w->s); /* idle: wake on what comes next */
            return rc;
        }
        if (rc == KCTL_ERR_IO) {
            size_t left, i;
            const char *rest = kctl__hstream_rest(&w->s, &left);
            for (i = 0; i < left && (rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\r' || rest[i] == '\n'); i++) { }
            if (w->s.cc == CURLE_OK && w->s.code == 200 && i == left) { /* the terminating chunk: the server's timeoutSeconds */
                rc = KCTL_ERR_CLOSED;
                kctl__hmutex_lock(&w->k->mu);
                w->k->n_closed++;
                kctl__hmutex_unlock(&w->k->mu);
            } else {
                char msg[200];
                snprintf(msg, sizeof msg, "kube: the watch stream broke%s%s", w->s.cc != CURLE_OK ? ": " : "",
                         w->s.cc != CURLE_OK ? curl_easy_strerror(w->s.cc) : " in the middle of an event");
                kctl_api_status_set(&w->after_st, 503, "ServiceUnavailable", msg, NULL, NULL, NULL, NULL, 0);
            }
        } else if (rc == KCTL_ERR_TOO_LARGE) {
            kctl_api_status_set(&w->after_st, 413, "RequestEntityTooLarge", "kube: a watch event is larger than max_message_bytes",
                                NULL, NULL, NULL, NULL, 0);
        }
        w->after = rc;
    }
}

/* watch_notify: as the etcd transport's (kctl__hnotify). */
static int kctl__kube_watch_notify(void *self, kctl_watch *watch, const kctl_wake *wake) {
    kctl__kwatch *w = (kctl__kwatch *)watch;
    (void)self;
    if (!w) return KCTL_ERR_INVALID_ARG;
    return kctl__hnotify_start(&w->nt, &w->k->http.a, &w->s, wake);
}

/* ---- the transport */
static void kctl__kube_destroy(void *self) {
    kctl__kube *k = (kctl__kube *)self;
    kctl_allocator a;
    if (!k) return;
    a = k->http.a;
    if (k->http.auth) { /* no copy of a credential outlives the transport */
        volatile char *p = k->http.auth;
        while (*p) *p++ = 0;
    }
    kctl__http_deinit(&k->http);
    kctl__http_free(&a, k->token_file);
    kctl__hmutex_deinit(&k->mu);
    kctl__http_free(&a, k);
}

static const kctl_transport_vtable kctl__kube_vt = {
    kctl__kube_list, kctl__kube_watch_open, kctl__kube_watch_next, kctl__kube_watch_close, kctl__kube_get,
    kctl__kube_create, kctl__kube_update, kctl__kube_update_status, kctl__kube_patch, kctl__kube_remove, kctl__kube_destroy,
    kctl__kube_watch_notify
};

KCTL_API int kctl_kube_create(const kctl_kube_desc *desc, kctl_transport *out) {
    kctl_kube_desc d = kctl_kube_desc_init();
    kctl__kube *k;
    char *hdr = NULL;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!desc || !desc->server || strchr(desc->server, ',') || (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn))
        return KCTL_ERR_INVALID_ARG;
    d.server = desc->server;
    d.token = desc->token;
    d.token_file = desc->token_file;
    d.tls = desc->tls;
    if (desc->request_timeout_ns) d.request_timeout_ns = desc->request_timeout_ns;
    if (desc->connect_timeout_ns) d.connect_timeout_ns = desc->connect_timeout_ns;
    if (desc->watch_timeout_min_s) d.watch_timeout_min_s = desc->watch_timeout_min_s;
    if (desc->watch_timeout_max_s) d.watch_timeout_max_s = desc->watch_timeout_max_s;
    if (d.watch_timeout_max_s < d.watch_timeout_min_s) d.watch_timeout_max_s = d.watch_timeout_min_s;
    if (desc->max_message_bytes) d.max_message_bytes = desc->max_message_bytes;
    if (desc->max_response_bytes) d.max_response_bytes = desc->max_response_bytes;
    d.obj_opts = desc->obj_opts;
    d.allocator = desc->allocator;
    if (!d.obj_opts.allocator.alloc_fn) d.obj_opts.allocator = d.allocator;
    kctl__http_global_init();
    if (!(k = (kctl__kube *)kctl__http_alloc(&d.allocator, sizeof *k))) return KCTL_ERR_NOMEM;
    memset(k, 0, sizeof *k);
    if ((rc = kctl__http_init(&k->http, &d.allocator, d.server, &d.tls)) != KCTL_OK || (rc = kctl__hmutex_init(&k->mu)) != KCTL_OK) {
        kctl__http_deinit(&k->http);
        kctl__http_free(&d.allocator, k);
        return rc;
    }
    kctl__http_limits(&k->http, d.request_timeout_ns, d.connect_timeout_ns, d.max_message_bytes, d.max_response_bytes);
    k->obj_opts = d.obj_opts;
    k->wt_min = d.watch_timeout_min_s;
    k->wt_max = d.watch_timeout_max_s;
    k->rng = kctl__etcd_seed();
    if (d.token_file) { /* it wins over a token: it is what rotates */
        if (!(k->token_file = kctl__http_strndup(&d.allocator, d.token_file, strlen(d.token_file)))) rc = KCTL_ERR_NOMEM;
        else if ((rc = kctl__kube_read_token(k, &hdr, k->tf_id)) == KCTL_OK) kctl__kube_set_auth(k, hdr);
        k->tf_checked = kctl__http_now_ms();
    } else if (d.token && *d.token && (rc = kctl__kube_auth_header(&d.allocator, d.token, strlen(d.token), &hdr)) == KCTL_OK) {
        kctl__kube_set_auth(k, hdr);
    }
    if (rc != KCTL_OK) {
        kctl__kube_destroy(k);
        return rc;
    }
    out->vt = &kctl__kube_vt;
    out->self = k;
    return KCTL_OK;
}

KCTL_API void kctl_kube_read_stats(const kctl_transport *t, kctl_kube_stats *out) {
    kctl__kube *k;
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!t || t->vt != &kctl__kube_vt || !t->self) return;
    k = (kctl__kube *)t->self;
    kctl__hmutex_lock(&k->http.mu);
    out->requests = k->http.n_requests;
    kctl__hmutex_unlock(&k->http.mu);
    kctl__hmutex_lock(&k->mu);
    out->watches = k->n_watches;
    out->watch_ends = k->n_closed;
    out->waits = k->n_waits;
    out->throttled = k->n_throttled;
    out->token_reads = k->n_token_reads;
    out->auth_retries = k->n_auth_retries;
    kctl__hmutex_unlock(&k->mu);
}

/* ------------------------------------------------------------------ >>kubeconfig KUBECONFIG */
/* A kubeconfig is read in two steps: its YAML becomes JSON (a file that
   is JSON already is taken as it is), then kctl_json_parse reads the
   JSON and the configuration is picked out of it. The YAML reader walks
   lines: a block node ends at the first line indented less than its
   column. It keeps the JSON it writes, the scalar at hand and, to refuse
   a repeated key, every key with the mapping it belongs to. Memory is in
   proportion to the text; recursion stops at KCTL_KUBECONFIG_MAX_DEPTH. */
#include <stdarg.h>
#include <errno.h>

#define KCTL__KY_WS(c) ((c) == ' ' || (c) == '\t')

typedef struct kctl__kykey {
    uint64_t h;     /* of the key and its mapping */
    size_t off;     /* its bytes in keys */
    uint32_t len;
    uint32_t map;   /* the mapping (from 1; 0: a free slot) */
} kctl__kykey;

typedef struct kctl__ky {
    const char *s;
    size_t n;
    size_t ls;          /* start of the current line */
    size_t pos;         /* the content at hand */
    long ind;           /* the current line's indentation; -1 at the end */
    uint32_t line;      /* the current line, from 1 */
    uint32_t depth, maps;
    bool started;       /* content or --- seen */
    bool ended;         /* ... seen */
    kctl_jw *w;
    kctl__hbuf tmp;     /* the scalar at hand, unescaped */
    kctl__hbuf keys;    /* the bytes of every key */
    kctl__kykey *tab;   /* open addressing over (mapping, key) */
    size_t tcap, tn;
    const kctl_allocator *a;
    int err;
    char msg[200];
} kctl__ky;

static void kctl__ky_fail(kctl__ky *p, int code, uint32_t line, const char *fmt, ...) {
    va_list ap;
    int k;
    if (p->err) return;
    p->err = code;
    k = snprintf(p->msg, sizeof p->msg, "kubeconfig line %u: ", (unsigned)line);
    if (k < 0 || (size_t)k >= sizeof p->msg) return;
    va_start(ap, fmt);
    vsnprintf(p->msg + k, sizeof p->msg - (size_t)k, fmt, ap);
    va_end(ap);
}

/* The end of i's line (before its \r\n or \n, or the end of the text). */
static size_t kctl__ky_eol(const kctl__ky *p, size_t i) {
    const char *e = (const char *)memchr(p->s + i, '\n', p->n - i);
    size_t j = e ? (size_t)(e - p->s) : p->n;
    if (j > i && p->s[j - 1] == '\r') j--;
    return j;
}
/* To the next line. */
static void kctl__ky_adv(kctl__ky *p) {
    const char *e;
    if (p->ls >= p->n) return;
    e = (const char *)memchr(p->s + p->ls, '\n', p->n - p->ls);
    p->ls = e ? (size_t)(e - p->s) + 1 : p->n;
    p->line++;
}
static void kctl__ky_put(kctl__ky *p, const char *s, size_t n) {
    kctl__hbuf_put(&p->tmp, s, n);
    if (p->tmp.err) kctl__ky_fail(p, p->tmp.err, p->line, "out of memory");
}

/* The text must be UTF-8 without control characters but tab, and with
   line feeds (\r\n too) for line breaks. */
static void kctl__ky_check_text(kctl__ky *p) {
    const unsigned char *s = (const unsigned char *)p->s;
    size_t i = 0, n = p->n;
    uint32_t line = 1;
    while (i < n && !p->err) {
        unsigned c = s[i];
        size_t k, m;
        if (c == '\n') { line++; i++; continue; }
        if (c < 0x80) {
            if (c == '\r' && (i + 1 == n || s[i + 1] != '\n'))
                kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line, "a carriage return without a line feed");
            else if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
                kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line, "a control character (0x%02x)", c);
            i++;
            continue;
        }
        k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
        if (!k || c > 0xf4 || k > n - i) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line, "text that is not UTF-8"); return; }
        for (m = 1; m < k; m++)
            if ((s[i + m] & 0xc0) != 0x80) break;
        if (m < k || (c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) ||
            (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f)) {
            kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line, "text that is not UTF-8");
            return;
        }
        i += k;
    }
}

/* From p->ls to the next line with content (blank lines, comments and a
   leading --- are skipped): p->pos at it, p->ind its indentation, or -1
   at the end of the document. */
static void kctl__ky_scan(kctl__ky *p) {
    const char *s = p->s;
    while (!p->err) {
        size_t i = p->ls, e, j;
        if (i >= p->n) break;
        while (i < p->n && s[i] == ' ') i++;
        e = kctl__ky_eol(p, i);
        for (j = i; j < e && KCTL__KY_WS(s[j]); j++) {}
        if (j == e || s[j] == '#') { kctl__ky_adv(p); continue; }
        if (j != i) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "tabs may not indent (use spaces)"); break; }
        if (i == p->ls && e - i >= 3 && (memcmp(s + i, "---", 3) == 0 || memcmp(s + i, "...", 3) == 0) &&
            (e - i == 3 || KCTL__KY_WS(s[i + 3]))) {
            bool start = s[i] == '-';
            for (j = i + 3; j < e && KCTL__KY_WS(s[j]); j++) {}
            if (start && (p->started || p->ended)) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "more than one document (---)"); break; }
            if (start && j < e && s[j] != '#') { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "content on the --- line is not supported"); break; }
            if (!start && j < e && s[j] != '#') { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "content after the end of the document (...)"); break; }
            if (start) p->started = true;
            else p->ended = true;
            kctl__ky_adv(p);
            continue;
        }
        if (p->ended) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "more than one document (content after ...)"); break; }
        if (i == p->ls && s[i] == '%') { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "directives (%%) are not supported"); break; }
        p->started = true;
        p->pos = i;
        p->ind = (long)(i - p->ls);
        return;
    }
    p->pos = p->n;
    p->ind = -1;
}

/* After a value that ends at i: nothing but a comment on the rest of its
   line; then to the next line with content. */
static void kctl__ky_endline(kctl__ky *p, size_t i) {
    size_t e = kctl__ky_eol(p, i), j;
    for (j = i; j < e && KCTL__KY_WS(p->s[j]); j++) {}
    if (j < e && !(p->s[j] == '#' && j > i)) {
        kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "text after a quoted value or {} []");
        return;
    }
    kctl__ky_adv(p);
    kctl__ky_scan(p);
}

/* A block sequence entry ("- ", or "-" ending its line) at i? */
static bool kctl__ky_entry(const kctl__ky *p, size_t i) {
    return i < p->n && p->s[i] == '-' && (i + 1 == kctl__ky_eol(p, i) || KCTL__KY_WS(p->s[i + 1]));
}

/* A key ("k:", "'k':", "\"k\":" before a blank or the end of the line)
   at i? *colon: where its ':' is. */
static bool kctl__ky_is_key(const kctl__ky *p, size_t i, size_t *colon) {
    const char *s = p->s;
    size_t e = kctl__ky_eol(p, i), j;
    char c = i < e ? s[i] : '\0';
    if (c == '"' || c == '\'') {
        for (j = i + 1; j < e; j++) {
            if (c == '"' && s[j] == '\\') { j++; continue; }
            if (s[j] == c) {
                if (c == '\'' && j + 1 < e && s[j + 1] == '\'') { j++; continue; }
                break;
            }
        }
        if (j >= e) return false;
        for (j++; j < e && KCTL__KY_WS(s[j]); j++) {}
        if (j < e && s[j] == ':' && (j + 1 == e || KCTL__KY_WS(s[j + 1]))) { *colon = j; return true; }
        return false;
    }
    if (i >= e || memchr(",[]{}#&*!|>%@`", c, 15)) return false;
    if ((c == '-' || c == '?' || c == ':') && (i + 1 == e || KCTL__KY_WS(s[i + 1]))) return false;
    for (j = i; j < e; j++) {
        if (s[j] == ':' && (j + 1 == e || KCTL__KY_WS(s[j + 1]))) { *colon = j; return true; }
        if (s[j] == '#' && j > i && KCTL__KY_WS(s[j - 1])) return false;
    }
    return false;
}

/* Fail for a node that starts at i with something kctl does not read. */
static bool kctl__ky_refuse(kctl__ky *p, size_t i) {
    size_t e = kctl__ky_eol(p, i);
    char c = p->s[i];
    bool blank = i + 1 >= e || KCTL__KY_WS(p->s[i + 1]);
    const char *what = NULL;
    switch (c) {
    case '&': what = "anchors (&) are not supported"; break;
    case '*': what = "aliases (*) are not supported"; break;
    case '!': what = "tags (!) are not supported"; break;
    case '|': case '>': what = "block scalars (| and >) are not supported: quote the value"; break;
    case '%': case '@': case '`': what = "a plain value may not start with % @ or ` (quote it)"; break;
    case ',': case ']': case '}': what = "a value may not start with , ] or } (quote it)"; break;
    case '?': if (blank) what = "complex keys (?) are not supported"; break;
    case ':': if (blank) what = "a key may not be empty"; break;
    case '-': if (blank) what = "a sequence may not start on its key's line"; break;
    default: break;
    }
    if (what) kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "%s", what);
    return what != NULL;
}

/* One escape of a double-quoted scalar, s[i] the character after the
   backslash (on this line, before e); returns the index past it. */
static size_t kctl__ky_escape(kctl__ky *p, size_t i, size_t e) {
    unsigned char c = (unsigned char)p->s[i];
    uint32_t u = 0, nd = 0, d;
    char out[4];
    switch (c) {
    case 'a': u = 7; break;
    case 'b': u = 8; break;
    case 't': case '\t': u = 9; break;
    case 'n': u = 10; break;
    case 'v': u = 11; break;
    case 'f': u = 12; break;
    case 'r': u = 13; break;
    case 'e': u = 27; break;
    case ' ': case '"': case '/': case '\\': u = c; break;
    case 'N': u = 0x85; break;
    case '_': u = 0xa0; break;
    case 'L': u = 0x2028; break;
    case 'P': u = 0x2029; break;
    case 'x': nd = 2; break;
    case 'u': nd = 4; break;
    case 'U': nd = 8; break;
    case '0': kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "a NUL character (\\0)"); return e;
    default:
        if (c > 0x20 && c < 0x7f) kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "an unknown escape \\%c", c);
        else kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "an unknown escape");
        return e;
    }
    i++;
    if (nd) {
        if (e - i < nd) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "a short \\x, \\u or \\U escape"); return e; }
        for (d = 0; d < nd; d++, i++) {
            char h = p->s[i];
            int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (v < 0) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "a \\x, \\u or \\U escape with a character that is not hex"); return e; }
            u = (u << 4) | (uint32_t)v;
        }
        if (u == 0 || (u >= 0xd800 && u <= 0xdfff) || u > 0x10ffff) {
            kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "an escape of NUL, of a surrogate or beyond U+10FFFF");
            return e;
        }
    }
    if (u < 0x80) { out[0] = (char)u; kctl__ky_put(p, out, 1); }
    else if (u < 0x800) { out[0] = (char)(0xc0 | (u >> 6)); out[1] = (char)(0x80 | (u & 63)); kctl__ky_put(p, out, 2); }
    else if (u < 0x10000) {
        out[0] = (char)(0xe0 | (u >> 12)); out[1] = (char)(0x80 | ((u >> 6) & 63)); out[2] = (char)(0x80 | (u & 63));
        kctl__ky_put(p, out, 3);
    } else {
        out[0] = (char)(0xf0 | (u >> 18)); out[1] = (char)(0x80 | ((u >> 12) & 63));
        out[2] = (char)(0x80 | ((u >> 6) & 63)); out[3] = (char)(0x80 | (u & 63));
        kctl__ky_put(p, out, 4);
    }
    return i;
}

/* The lines after a line break in a multi-line scalar: blank ones are
   counted into *blank; the next one with content is ours when indented
   beyond pc (and is no comment when plain). Returns its first
   character's index, or p->n when the scalar ends before it (p->ls then
   at that line). */
static size_t kctl__ky_continue(kctl__ky *p, long pc, bool plain, uint32_t *blank) {
    *blank = 0;
    for (;;) {
        size_t k = p->ls, k2, e;
        if (k >= p->n) return p->n;
        while (k < p->n && p->s[k] == ' ') k++;
        e = kctl__ky_eol(p, k);
        for (k2 = k; k2 < e && KCTL__KY_WS(p->s[k2]); k2++) {}
        if (k2 == e) { (*blank)++; kctl__ky_adv(p); continue; }
        if ((long)(k - p->ls) <= pc || (plain && p->s[k2] == '#')) return p->n;
        if (k == p->ls && e - k >= 3 && (memcmp(p->s + k, "---", 3) == 0 || memcmp(p->s + k, "...", 3) == 0) &&
            (e - k == 3 || KCTL__KY_WS(p->s[k + 3]))) return p->n;
        return k2;
    }
}

/* A plain scalar from i, folded over the lines indented beyond pc, into
   p->tmp; p->ls ends at the first line after it. */
static void kctl__ky_plain(kctl__ky *p, size_t i, long pc) {
    uint32_t blank = 0;
    bool first = true;
    p->tmp.len = 0;
    for (;;) {
        size_t e = kctl__ky_eol(p, i), j, end = i;
        bool comment = false;
        for (j = i; j < e; j++) {
            char c = p->s[j];
            if (c == '#' && j > i && KCTL__KY_WS(p->s[j - 1])) { comment = true; break; }
            if (c == ':' && (j + 1 == e || KCTL__KY_WS(p->s[j + 1]))) {
                kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, first ? "a value holds \": \" (quote it)" : "a key on a value's continuation line (indent it less, or quote the value)");
                return;
            }
            if (!KCTL__KY_WS(c)) end = j + 1;
        }
        if (!first) {
            if (!blank) kctl__ky_put(p, " ", 1);
            while (blank-- > 0) kctl__ky_put(p, "\n", 1);
        }
        kctl__ky_put(p, p->s + i, end - i);
        if (p->err) return;
        first = false;
        kctl__ky_adv(p);
        if (comment) return;
        i = kctl__ky_continue(p, pc, true, &blank);
        if (i >= p->n) return;
    }
}

/* A quoted scalar, p->s[i] its opening quote, into p->tmp; a key's must
   end on its line. p->pos ends after the closing quote, p->ls at its line. */
static void kctl__ky_quoted(kctl__ky *p, size_t i, long pc, bool key) {
    char q = p->s[i];
    uint32_t line0 = p->line, blank;
    size_t trail = 0;
    p->tmp.len = 0;
    i++;
    for (;;) {
        size_t e = kctl__ky_eol(p, i);
        bool joined = false;
        while (i < e && !p->err) {
            char c = p->s[i];
            if (c == q) {
                if (q == '\'' && i + 1 < e && p->s[i + 1] == '\'') { kctl__ky_put(p, "'", 1); i += 2; trail = 0; continue; }
                p->pos = i + 1;
                return;
            }
            if (c == '\\' && q == '"') {
                if (i + 1 == e) { joined = true; i = e; break; }
                i = kctl__ky_escape(p, i + 1, e);
                trail = 0;
                continue;
            }
            kctl__ky_put(p, &c, 1);
            trail = KCTL__KY_WS(c) ? trail + 1 : 0;
            i++;
        }
        if (p->err) return;
        if (key) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line0, "a quoted key must end on its line"); return; }
        if (!joined) p->tmp.len -= trail;
        trail = 0;
        kctl__ky_adv(p);
        i = kctl__ky_continue(p, pc, false, &blank);
        if (i >= p->n) {
            kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line0, p->ls >= p->n ? "a quoted value is not closed" : "a quoted value's next line must be indented more than its key");
            return;
        }
        if (!blank && !joined) kctl__ky_put(p, " ", 1);
        while (blank-- > 0) kctl__ky_put(p, "\n", 1);
    }
}

static bool kctl__ky_is(const kctl__ky *p, const char *a, const char *b, const char *c) {
    size_t n = p->tmp.len;
    const char *t = p->tmp.p;
    return (strlen(a) == n && memcmp(t, a, n) == 0) || (strlen(b) == n && memcmp(t, b, n) == 0) ||
           (strlen(c) == n && memcmp(t, c, n) == 0);
}

/* A scalar value (or {} or []) at p->pos, on a key's or an entry's line
   or on its own; continuation lines go beyond column pc. */
static void kctl__ky_scalar(kctl__ky *p, long pc) {
    size_t i = p->pos, e = kctl__ky_eol(p, i), j;
    char c = p->s[i];
    if (kctl__ky_refuse(p, i)) return;
    if (c == '{' || c == '[') {
        for (j = i + 1; j < e && KCTL__KY_WS(p->s[j]); j++) {}
        if (j < e && p->s[j] == (c == '{' ? '}' : ']')) {
            if (c == '{') { kctl_jw_object_begin(p->w); kctl_jw_object_end(p->w); }
            else { kctl_jw_array_begin(p->w); kctl_jw_array_end(p->w); }
            kctl__ky_endline(p, j + 1);
            return;
        }
        kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "flow collections (%s) are not supported in YAML: write block style, or the whole file as JSON",
                      c == '{' ? "{...}" : "[...]");
        return;
    }
    if (c == '"' || c == '\'') {
        kctl__ky_quoted(p, i, pc, false);
        if (p->err) return;
        kctl_jw_string_n(p->w, p->tmp.p ? p->tmp.p : "", p->tmp.len);
        kctl__ky_endline(p, p->pos);
        return;
    }
    kctl__ky_plain(p, i, pc);
    if (p->err) return;
    if (p->tmp.len == 0 || kctl__ky_is(p, "null", "Null", "NULL") || kctl__ky_is(p, "~", "~", "~")) kctl_jw_null(p->w);
    else if (kctl__ky_is(p, "true", "True", "TRUE")) kctl_jw_bool(p->w, true);
    else if (kctl__ky_is(p, "false", "False", "FALSE")) kctl_jw_bool(p->w, false);
    else kctl_jw_string_n(p->w, p->tmp.p, p->tmp.len);
    kctl__ky_scan(p);
}

/* Remember the key in p->tmp for mapping map; fail if it is there already. */
static void kctl__ky_key(kctl__ky *p, uint32_t map, uint32_t line) {
    const char *k = p->tmp.p ? p->tmp.p : "";
    size_t n = p->tmp.len, i, m;
    uint64_t h = UINT64_C(1469598103934665603);
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * UINT64_C(1099511628211);
    h ^= (uint64_t)map * UINT64_C(0x9e3779b97f4a7c15);
    if (p->tn * 2 >= p->tcap) {
        size_t cap = p->tcap ? p->tcap * 2 : 64, t;
        kctl__kykey *nt = (kctl__kykey *)kctl__http_alloc(p->a, cap * sizeof *nt);
        if (!nt) { kctl__ky_fail(p, KCTL_ERR_NOMEM, line, "out of memory"); return; }
        memset(nt, 0, cap * sizeof *nt);
        for (t = 0; t < p->tcap; t++) {
            if (!p->tab[t].map) continue;
            for (i = p->tab[t].h & (cap - 1); nt[i].map; i = (i + 1) & (cap - 1)) {}
            nt[i] = p->tab[t];
        }
        kctl__http_free(p->a, p->tab);
        p->tab = nt;
        p->tcap = cap;
    }
    m = p->tcap - 1;
    for (i = h & m; p->tab[i].map; i = (i + 1) & m) {
        const kctl__kykey *t = &p->tab[i];
        if (t->map == map && t->h == h && t->len == n && memcmp(p->keys.p + t->off, k, n) == 0) {
            kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line, "the key \"%.60s\" is repeated", k);
            return;
        }
    }
    p->tab[i].map = map;
    p->tab[i].h = h;
    p->tab[i].len = (uint32_t)n;
    p->tab[i].off = p->keys.len;
    kctl__hbuf_put(&p->keys, k, n);
    p->tn++;
    if (p->keys.err) kctl__ky_fail(p, p->keys.err, line, "out of memory");
}

static void kctl__ky_node(kctl__ky *p, long pc);

static bool kctl__ky_deeper(kctl__ky *p) {
    if (++p->depth <= KCTL_KUBECONFIG_MAX_DEPTH) return true;
    kctl__ky_fail(p, KCTL_ERR_TOO_LARGE, p->line, "nested deeper than %d", KCTL_KUBECONFIG_MAX_DEPTH);
    return false;
}

/* A block mapping whose first key is at p->pos, its keys at column col. */
static void kctl__ky_map(kctl__ky *p, long col) {
    uint32_t id = ++p->maps;
    if (!kctl__ky_deeper(p)) return;
    kctl_jw_object_begin(p->w);
    while (!p->err) {
        size_t i = p->pos, colon = 0, e, j;
        uint32_t line = p->line;
        if (kctl__ky_entry(p, i)) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line, "a sequence entry where a key was expected"); break; }
        if (!kctl__ky_is_key(p, i, &colon)) {
            if (!kctl__ky_refuse(p, i)) kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, line, "a value where a key was expected (key: value)");
            break;
        }
        if (p->s[i] == '"' || p->s[i] == '\'') kctl__ky_quoted(p, i, col, true);
        else {
            size_t end = colon;
            while (end > i && KCTL__KY_WS(p->s[end - 1])) end--;
            p->tmp.len = 0;
            kctl__ky_put(p, p->s + i, end - i);
        }
        if (p->err) break;
        kctl__ky_key(p, id, line);
        if (p->err) break;
        kctl_jw_key(p->w, p->tmp.p ? p->tmp.p : "");
        e = kctl__ky_eol(p, colon);
        for (j = colon + 1; j < e && KCTL__KY_WS(p->s[j]); j++) {}
        if (j == e || p->s[j] == '#') {
            kctl__ky_adv(p);
            kctl__ky_scan(p);
            if (p->err) break;
            if (p->ind > col || (p->ind == col && kctl__ky_entry(p, p->pos))) kctl__ky_node(p, col);
            else kctl_jw_null(p->w);
        } else {
            p->pos = j;
            kctl__ky_scalar(p, col);
        }
        if (p->err || p->ind < col) break;
        if (p->ind > col) { kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "unexpected indentation"); break; }
    }
    kctl_jw_object_end(p->w);
    p->depth--;
}

/* A block sequence whose first '-' is at p->pos, at column col. */
static void kctl__ky_seq(kctl__ky *p, long col) {
    if (!kctl__ky_deeper(p)) return;
    kctl_jw_array_begin(p->w);
    while (!p->err) {
        size_t i = p->pos + 1, e = kctl__ky_eol(p, p->pos), j, colon;
        for (j = i; j < e && KCTL__KY_WS(p->s[j]); j++) {}
        if (j == e || p->s[j] == '#') {
            kctl__ky_adv(p);
            kctl__ky_scan(p);
            if (p->err) break;
            if (p->ind > col) kctl__ky_node(p, col);
            else kctl_jw_null(p->w);
        } else {
            bool nested = kctl__ky_entry(p, j), map = !nested && kctl__ky_is_key(p, j, &colon);
            if ((nested || map) && memchr(p->s + i, '\t', j - i)) {
                kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "tabs may not indent (use spaces)");
                break;
            }
            p->pos = j;
            if (nested) kctl__ky_seq(p, (long)(j - p->ls));
            else if (map) kctl__ky_map(p, (long)(j - p->ls));
            else kctl__ky_scalar(p, col);
        }
        if (p->err) break;
        if (p->ind == col && kctl__ky_entry(p, p->pos)) continue;
        if (p->ind > col) kctl__ky_fail(p, KCTL_ERR_INVALID_ARG, p->line, "unexpected indentation");
        break;
    }
    kctl_jw_array_end(p->w);
    p->depth--;
}

/* The block node at p->pos, first on its line; pc: its parent's column. */
static void kctl__ky_node(kctl__ky *p, long pc) {
    size_t colon;
    if (kctl__ky_entry(p, p->pos)) kctl__ky_seq(p, p->ind);
    else if (kctl__ky_is_key(p, p->pos, &colon)) kctl__ky_map(p, p->ind);
    else kctl__ky_scalar(p, pc);
}

/* YAML text[0..n) as JSON into w; INVALID_ARG or TOO_LARGE with msg. */
static int kctl__ky_to_json(const char *text, size_t n, const kctl_allocator *a, kctl_jw *w, char *msg, size_t cap) {
    kctl__ky p;
    memset(&p, 0, sizeof p);
    p.s = text;
    p.n = n;
    p.line = 1;
    p.w = w;
    p.a = a;
    kctl__hbuf_init(&p.tmp, a, n + 16);
    kctl__hbuf_init(&p.keys, a, n + 16);
    kctl__ky_check_text(&p);
    if (!p.err) kctl__ky_scan(&p);
    if (p.err) {}
    else if (p.ind < 0) kctl_jw_null(w);
    else {
        kctl__ky_node(&p, -1);
        if (!p.err && p.ind >= 0) kctl__ky_fail(&p, KCTL_ERR_INVALID_ARG, p.line, "unexpected indentation (a line outside the top node)");
    }
    kctl__hbuf_free(&p.tmp);
    kctl__hbuf_free(&p.keys);
    kctl__http_free(a, p.tab);
    if (p.err) snprintf(msg, cap, "%s", p.msg);
    else if (w->err) snprintf(msg, cap, "kubeconfig: %s", w->err == KCTL_ERR_NOMEM ? "out of memory" : "cannot be written as JSON");
    return p.err ? p.err : w->err;
}

/* The configuration picked out of a kubeconfig's JSON: its strings in
   one buffer, each NUL-terminated, at off[] ((size_t)-1: none). */
enum {
    KCTL__KC_SERVER, KCTL__KC_TOKEN, KCTL__KC_TOKEN_FILE, KCTL__KC_CA_FILE, KCTL__KC_CA_DATA, KCTL__KC_CERT_FILE,
    KCTL__KC_CERT_DATA, KCTL__KC_KEY_FILE, KCTL__KC_KEY_DATA, KCTL__KC_NS, KCTL__KC_CONTEXT, KCTL__KC_N
};

typedef struct kctl__kc {
    kctl__hbuf mem;
    size_t off[KCTL__KC_N], len[KCTL__KC_N];
    bool insecure;
    kctl_json j;
    const kctl_allocator *a;
    const char *dir;
    char tmp[64];
} kctl__kc;

static int kctl__kc_fail(kctl_api_status *st, int rc, const char *fmt, ...) {
    char msg[320];
    va_list ap;
    int code = rc == KCTL_ERR_NOT_FOUND ? 404 : rc == KCTL_ERR_TOO_LARGE ? 413 : rc == KCTL_ERR_INVALID_ARG ? 400 : 500;
    const char *reason = rc == KCTL_ERR_NOT_FOUND ? "NotFound" : rc == KCTL_ERR_TOO_LARGE ? "RequestEntityTooLarge" :
                         rc == KCTL_ERR_INVALID_ARG ? "BadRequest" : "InternalError";
    if (!st) return rc;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kctl_api_status_set(st, code, reason, msg, NULL, NULL, NULL, NULL, 0);
    return rc;
}

static void kctl__kc_init(kctl__kc *k, const kctl_allocator *a) {
    int i;
    memset(k, 0, sizeof *k);
    k->a = a;
    kctl__hbuf_init(&k->mem, a, (size_t)-1 / 2);
    for (i = 0; i < KCTL__KC_N; i++) k->off[i] = (size_t)-1;
}

/* Keep s[0..n) (and b[0..bn) before it, for a directory) as slot. */
static int kctl__kc_keep(kctl__kc *k, int slot, const char *b, size_t bn, const char *s, size_t n) {
    k->off[slot] = k->mem.len;
    kctl__hbuf_put(&k->mem, b, bn);
    kctl__hbuf_put(&k->mem, s, n);
    kctl__hbuf_put(&k->mem, "\0", 1);
    k->len[slot] = bn + n;
    return k->mem.err;
}

/* The string member name of object o, unescaped into memory of its own
   (*out; NULL when it is absent, null or ""). */
static int kctl__kc_str(kctl__kc *k, uint32_t o, const char *name, const char *where, char **out, size_t *len, kctl_api_status *st) {
    uint32_t v = o == KCTL_JSON_NONE ? KCTL_JSON_NONE : kctl_json_member(&k->j, o, name);
    kctl_json_type t = kctl_json_type_of(&k->j, v);
    size_t cap, n = 0;
    *out = NULL;
    *len = 0;
    if (t == KCTL_JSON_INVALID || t == KCTL_JSON_NULL) return KCTL_OK;
    if (t != KCTL_JSON_STRING) return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s: %s is not a string", where, name);
    cap = (size_t)(k->j.toks[v].end - k->j.toks[v].start) + 1;
    if (!(*out = (char *)kctl__http_alloc(k->a, cap))) return kctl__kc_fail(st, KCTL_ERR_NOMEM, "kubeconfig: out of memory");
    kctl_json_string(&k->j, v, *out, cap, &n);
    if (strlen(*out) != n) {
        kctl__http_free(k->a, *out);
        *out = NULL;
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s: %s holds a NUL character", where, name);
    }
    if (!n) { kctl__http_free(k->a, *out); *out = NULL; }
    *len = n;
    return KCTL_OK;
}

/* The string member name of o as slot: a file name made relative to
   the kubeconfig's directory, or base64 data decoded. */
enum { KCTL__KC_TEXT, KCTL__KC_PATH, KCTL__KC_B64 };
static int kctl__kc_take(kctl__kc *k, uint32_t o, const char *name, int slot, int how, const char *where, kctl_api_status *st) {
    char *s;
    size_t n, dn = k->dir ? strlen(k->dir) : 0;
    int rc = kctl__kc_str(k, o, name, where, &s, &n, st);
    if (rc != KCTL_OK || !s) return rc;
    if (how == KCTL__KC_PATH && s[0] != '/' && dn) { /* relative to the kubeconfig's directory */
        k->off[slot] = k->mem.len;
        kctl__hbuf_put(&k->mem, k->dir, dn);
        if (k->dir[dn - 1] != '/') kctl__hbuf_put(&k->mem, "/", 1);
        kctl__hbuf_put(&k->mem, s, n);
        kctl__hbuf_put(&k->mem, "\0", 1);
        k->len[slot] = k->mem.len - k->off[slot] - 1;
        rc = k->mem.err;
    } else if (how == KCTL__KC_B64) {
        size_t i, m = 0;
        long got;
        unsigned char *bin;
        for (i = 0; i < n; i++)
            if (s[i] != '\r' && s[i] != '\n') s[m++] = s[i]; /* as Go's decoder, line breaks do not count */
        bin = (unsigned char *)kctl__http_alloc(k->a, m / 4 * 3 + 4);
        if (!bin) rc = KCTL_ERR_NOMEM;
        else if ((got = kctl__b64_decode(s, m, bin)) < 0 || m % 4 == 1) {
            kctl__http_free(k->a, bin);
            kctl__http_free(k->a, s);
            return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s: %s is not base64", where, name);
        } else if (got > 0) rc = kctl__kc_keep(k, slot, NULL, 0, (const char *)bin, (size_t)got); /* nothing: no data */
        kctl__http_free(k->a, bin);
    } else rc = kctl__kc_keep(k, slot, NULL, 0, s, n);
    kctl__http_free(k->a, s);
    if (rc != KCTL_OK) return kctl__kc_fail(st, rc, "kubeconfig: out of memory");
    return KCTL_OK;
}

/* Whether member name of o is there and not null, false, "", {} or []. */
static bool kctl__kc_set(const kctl__kc *k, uint32_t o, const char *name) {
    uint32_t v = o == KCTL_JSON_NONE ? KCTL_JSON_NONE : kctl_json_member(&k->j, o, name);
    switch (kctl_json_type_of(&k->j, v)) {
    case KCTL_JSON_INVALID: case KCTL_JSON_NULL: case KCTL_JSON_FALSE: return false;
    case KCTL_JSON_STRING: return k->j.toks[v].end > k->j.toks[v].start;
    case KCTL_JSON_OBJECT: case KCTL_JSON_ARRAY: return k->j.toks[v].size > 0;
    default: return true;
    }
}

/* The member inner of the one entry named name in the root's list
   (clusters, users, contexts); KCTL_JSON_NONE in *out when it has none. */
static int kctl__kc_find(kctl__kc *k, const char *list, const char *kind, const char *inner, const char *name, uint32_t *out,
                         kctl_api_status *st) {
    uint32_t arr = k->j.ntoks ? kctl_json_member(&k->j, 0, list) : KCTL_JSON_NONE, i, found = 0;
    kctl_json_type at = kctl_json_type_of(&k->j, arr), t;
    *out = KCTL_JSON_NONE;
    if (at != KCTL_JSON_INVALID && at != KCTL_JSON_NULL && at != KCTL_JSON_ARRAY)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s is not a list", list);
    for (i = 0; at == KCTL_JSON_ARRAY && i < k->j.toks[arr].size; i++) {
        uint32_t e = kctl_json_element(&k->j, arr, i), v;
        if (kctl_json_type_of(&k->j, e) != KCTL_JSON_OBJECT)
            return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: an entry of %s is not a mapping", list);
        if (!kctl_json_string_eq(&k->j, kctl_json_member(&k->j, e, "name"), name)) continue;
        if (found++) return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: two %ss named \"%.100s\"", kind, name);
        v = kctl_json_member(&k->j, e, inner);
        t = kctl_json_type_of(&k->j, v);
        if (t == KCTL_JSON_OBJECT) *out = v;
        else if (t != KCTL_JSON_INVALID && t != KCTL_JSON_NULL)
            return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s \"%.100s\": %s is not a mapping", kind, name, inner);
    }
    if (!found) return kctl__kc_fail(st, KCTL_ERR_NOT_FOUND, "kubeconfig: no %s named \"%.100s\"", kind, name);
    return KCTL_OK;
}

/* The cluster's fields. */
static int kctl__kc_cluster(kctl__kc *k, const char *name, kctl_api_status *st) {
    char where[140];
    uint32_t o, v;
    int rc;
    snprintf(where, sizeof where, "cluster \"%.100s\"", name);
    if ((rc = kctl__kc_find(k, "clusters", "cluster", "cluster", name, &o, st)) != KCTL_OK) return rc;
    if (kctl__kc_set(k, o, "proxy-url"))
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s uses proxy-url, which kctl does not support", where);
    if (kctl__kc_set(k, o, "tls-server-name"))
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s uses tls-server-name, which kctl does not support", where);
    if ((rc = kctl__kc_take(k, o, "server", KCTL__KC_SERVER, KCTL__KC_TEXT, where, st)) != KCTL_OK ||
        (rc = kctl__kc_take(k, o, "certificate-authority", KCTL__KC_CA_FILE, KCTL__KC_PATH, where, st)) != KCTL_OK ||
        (rc = kctl__kc_take(k, o, "certificate-authority-data", KCTL__KC_CA_DATA, KCTL__KC_B64, where, st)) != KCTL_OK)
        return rc;
    if (k->off[KCTL__KC_SERVER] == (size_t)-1) return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s has no server", where);
    v = o == KCTL_JSON_NONE ? KCTL_JSON_NONE : kctl_json_member(&k->j, o, "insecure-skip-tls-verify");
    if (kctl_json_type_of(&k->j, v) == KCTL_JSON_TRUE) k->insecure = true;
    else if (kctl_json_type_of(&k->j, v) != KCTL_JSON_FALSE && kctl_json_type_of(&k->j, v) != KCTL_JSON_NULL && v != KCTL_JSON_NONE)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s: insecure-skip-tls-verify is not true or false", where);
    if (k->off[KCTL__KC_CA_FILE] != (size_t)-1 && k->off[KCTL__KC_CA_DATA] != (size_t)-1)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s has both certificate-authority and certificate-authority-data", where);
    if (k->insecure && (k->off[KCTL__KC_CA_FILE] != (size_t)-1 || k->off[KCTL__KC_CA_DATA] != (size_t)-1))
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s has a certificate authority and insecure-skip-tls-verify", where);
    return KCTL_OK;
}

/* The user's fields; the plugins, basic auth and impersonation refused. */
static int kctl__kc_user(kctl__kc *k, const char *name, kctl_api_status *st) {
    static const char *const imp[] = { "as", "as-groups", "as-uid", "as-user-extra" };
    char where[140], *plugin;
    size_t n, i;
    uint32_t o, x;
    int rc;
    snprintf(where, sizeof where, "user \"%.100s\"", name);
    if ((rc = kctl__kc_find(k, "users", "user", "user", name, &o, st)) != KCTL_OK) return rc;
    if (kctl__kc_set(k, o, "exec") || kctl__kc_set(k, o, "auth-provider")) {
        bool exec = kctl__kc_set(k, o, "exec");
        x = kctl_json_member(&k->j, o, exec ? "exec" : "auth-provider");
        if (kctl_json_type_of(&k->j, x) != KCTL_JSON_OBJECT) x = KCTL_JSON_NONE;
        rc = kctl__kc_str(k, x, exec ? "command" : "name", where, &plugin, &n, NULL);
        rc = kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s uses %s (%.60s), which kctl does not run", where,
                           exec ? "an exec plugin" : "an auth-provider plugin", rc == KCTL_OK && plugin ? plugin : "unnamed");
        kctl__http_free(k->a, plugin);
        return rc;
    }
    if (kctl__kc_set(k, o, "username") || kctl__kc_set(k, o, "password"))
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s uses basic auth (username and password), which kctl does not support", where);
    for (i = 0; i < sizeof imp / sizeof imp[0]; i++)
        if (kctl__kc_set(k, o, imp[i]))
            return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s impersonates (%s), which kctl does not support", where, imp[i]);
    if ((rc = kctl__kc_take(k, o, "token", KCTL__KC_TOKEN, KCTL__KC_TEXT, where, st)) != KCTL_OK ||
        (rc = kctl__kc_take(k, o, "tokenFile", KCTL__KC_TOKEN_FILE, KCTL__KC_PATH, where, st)) != KCTL_OK ||
        (rc = kctl__kc_take(k, o, "client-certificate", KCTL__KC_CERT_FILE, KCTL__KC_PATH, where, st)) != KCTL_OK ||
        (rc = kctl__kc_take(k, o, "client-certificate-data", KCTL__KC_CERT_DATA, KCTL__KC_B64, where, st)) != KCTL_OK ||
        (rc = kctl__kc_take(k, o, "client-key", KCTL__KC_KEY_FILE, KCTL__KC_PATH, where, st)) != KCTL_OK ||
        (rc = kctl__kc_take(k, o, "client-key-data", KCTL__KC_KEY_DATA, KCTL__KC_B64, where, st)) != KCTL_OK)
        return rc;
    if (k->off[KCTL__KC_CERT_FILE] != (size_t)-1 && k->off[KCTL__KC_CERT_DATA] != (size_t)-1)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s has both client-certificate and client-certificate-data", where);
    if (k->off[KCTL__KC_KEY_FILE] != (size_t)-1 && k->off[KCTL__KC_KEY_DATA] != (size_t)-1)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s has both client-key and client-key-data", where);
    if ((k->off[KCTL__KC_CERT_FILE] & k->off[KCTL__KC_CERT_DATA]) == (size_t)-1 && (k->off[KCTL__KC_KEY_FILE] & k->off[KCTL__KC_KEY_DATA]) != (size_t)-1)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s has a client key without a client certificate", where);
    if ((k->off[KCTL__KC_CERT_FILE] & k->off[KCTL__KC_CERT_DATA]) != (size_t)-1 && (k->off[KCTL__KC_KEY_FILE] & k->off[KCTL__KC_KEY_DATA]) == (size_t)-1)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: %s has a client certificate without its key", where);
    return KCTL_OK;
}

/* Hand k's strings to out (which was freed). */
static void kctl__kc_finish(kctl__kc *k, kctl_kube_config *out) {
    char *m = k->mem.p;
#define KCTL__KC_AT(slot) (k->off[slot] == (size_t)-1 ? NULL : m + k->off[slot])
    out->mem_ = m;
    k->mem.p = NULL;
    out->desc.allocator = out->allocator;
    out->desc.server = KCTL__KC_AT(KCTL__KC_SERVER);
    out->desc.token = KCTL__KC_AT(KCTL__KC_TOKEN);
    out->desc.token_file = KCTL__KC_AT(KCTL__KC_TOKEN_FILE);
    out->desc.tls.insecure = k->insecure;
    out->desc.tls.ca_file = KCTL__KC_AT(KCTL__KC_CA_FILE);
    out->desc.tls.ca_data = KCTL__KC_AT(KCTL__KC_CA_DATA);
    out->desc.tls.ca_len = out->desc.tls.ca_data ? k->len[KCTL__KC_CA_DATA] : 0;
    out->desc.tls.cert_file = KCTL__KC_AT(KCTL__KC_CERT_FILE);
    out->desc.tls.cert_data = KCTL__KC_AT(KCTL__KC_CERT_DATA);
    out->desc.tls.cert_len = out->desc.tls.cert_data ? k->len[KCTL__KC_CERT_DATA] : 0;
    out->desc.tls.key_file = KCTL__KC_AT(KCTL__KC_KEY_FILE);
    out->desc.tls.key_data = KCTL__KC_AT(KCTL__KC_KEY_DATA);
    out->desc.tls.key_len = out->desc.tls.key_data ? k->len[KCTL__KC_KEY_DATA] : 0;
    out->ns = KCTL__KC_AT(KCTL__KC_NS);
    out->context = KCTL__KC_AT(KCTL__KC_CONTEXT);
#undef KCTL__KC_AT
}

/* The configuration of context (NULL: current-context) in the JSON text. */
static int kctl__kc_read(const char *text, size_t len, const char *dir, const char *context, kctl_kube_config *out, kctl_api_status *st) {
    kctl__kc k;
    kctl_json_limits lim;
    kctl_json_tok *toks = NULL;
    kctl_json_type t;
    size_t n;
    uint32_t ctx = KCTL_JSON_NONE;
    int rc;
    kctl__kc_init(&k, &out->allocator);
    k.dir = dir;
    memset(&lim, 0, sizeof lim);
    lim.max_depth = KCTL_KUBECONFIG_MAX_DEPTH + 1;
    lim.max_bytes = UINT32_MAX;
    rc = kctl_json_parse(text, len, NULL, 0, &lim, &k.j);
    if (rc == KCTL_OK) {
        if (!(toks = (kctl_json_tok *)kctl__http_alloc(k.a, (size_t)k.j.ntoks * sizeof *toks))) rc = KCTL_ERR_NOMEM;
        else rc = kctl_json_parse(text, len, toks, k.j.ntoks, &lim, &k.j);
    }
    if (rc != KCTL_OK) {
        rc = rc == KCTL_ERR_NOMEM ? kctl__kc_fail(st, rc, "kubeconfig: out of memory")
             : rc == KCTL_ERR_TOO_LARGE ? kctl__kc_fail(st, rc, "kubeconfig: nested deeper than %d", KCTL_KUBECONFIG_MAX_DEPTH)
                                        : kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: not valid JSON");
        goto done;
    }
    t = kctl_json_type_of(&k.j, 0);
    if (t != KCTL_JSON_OBJECT && t != KCTL_JSON_NULL) {
        rc = kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: not a Config (a mapping of clusters, users and contexts)");
        goto done;
    }
    if (t == KCTL_JSON_NULL) k.j.ntoks = 0; /* an empty file: no context */
    if (context && *context) rc = kctl__kc_keep(&k, KCTL__KC_CONTEXT, NULL, 0, context, strlen(context));
    else if ((rc = kctl__kc_take(&k, k.j.ntoks ? 0 : KCTL_JSON_NONE, "current-context", KCTL__KC_CONTEXT, KCTL__KC_TEXT, "Config", st)) != KCTL_OK)
        goto done;
    if (rc != KCTL_OK) { rc = kctl__kc_fail(st, rc, "kubeconfig: out of memory"); goto done; }
    if (k.off[KCTL__KC_CONTEXT] == (size_t)-1) {
        rc = kctl__kc_fail(st, KCTL_ERR_NOT_FOUND, "kubeconfig: no current-context is set (name a context)");
        goto done;
    }
    {
        /* the names, copied: the strings' buffer moves as it grows */
        char *names[2] = { NULL, NULL };
        const char *cname = k.mem.p + k.off[KCTL__KC_CONTEXT];
        char where[140];
        snprintf(where, sizeof where, "context \"%.100s\"", cname);
        if (k.j.ntoks == 0) rc = kctl__kc_fail(st, KCTL_ERR_NOT_FOUND, "kubeconfig: no context named \"%.100s\"", cname);
        else rc = kctl__kc_find(&k, "contexts", "context", "context", cname, &ctx, st);
        if (rc == KCTL_OK) rc = kctl__kc_str(&k, ctx, "cluster", where, &names[0], &n, st);
        if (rc == KCTL_OK) rc = kctl__kc_str(&k, ctx, "user", where, &names[1], &n, st);
        if (rc == KCTL_OK) rc = kctl__kc_take(&k, ctx, "namespace", KCTL__KC_NS, KCTL__KC_TEXT, where, st);
        if (rc == KCTL_OK && !names[0]) rc = kctl__kc_fail(st, KCTL_ERR_NOT_FOUND, "kubeconfig: %s names no cluster", where);
        if (rc == KCTL_OK) rc = kctl__kc_cluster(&k, names[0], st);
        if (rc == KCTL_OK && names[1]) rc = kctl__kc_user(&k, names[1], st); /* no user: no credentials */
        kctl__http_free(k.a, names[0]);
        kctl__http_free(k.a, names[1]);
        if (rc != KCTL_OK) goto done;
    }
    if (k.off[KCTL__KC_NS] == (size_t)-1 && (rc = kctl__kc_keep(&k, KCTL__KC_NS, NULL, 0, "default", 7)) != KCTL_OK) {
        rc = kctl__kc_fail(st, rc, "kubeconfig: out of memory");
        goto done;
    }
    kctl__kc_finish(&k, out);
done:
    kctl__http_free(k.a, toks);
    kctl__hbuf_free(&k.mem);
    return rc;
}

KCTL_API void kctl_kube_config_free(kctl_kube_config *c) {
    kctl_allocator a;
    if (!c) return;
    a = c->allocator;
    kctl__http_free(&a, c->mem_);
    memset(c, 0, sizeof *c);
    c->allocator = a;
}

KCTL_API int kctl_kube_config_parse(const char *text, size_t len, const char *dir, const char *context,
                                    kctl_kube_config *out, kctl_api_status *st) {
    size_t i;
    int rc;
    if (!out || (!text && len)) return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: no text or no config to fill");
    kctl_kube_config_free(out);
    if (!text) text = "";
    if (len == KCTL_NTS) len = strlen(text);
    if (len > KCTL_KUBECONFIG_MAX_BYTES)
        return kctl__kc_fail(st, KCTL_ERR_TOO_LARGE, "kubeconfig: %lu bytes, beyond KCTL_KUBECONFIG_MAX_BYTES (%lu)", (unsigned long)len,
                             (unsigned long)KCTL_KUBECONFIG_MAX_BYTES);
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) { text += 3; len -= 3; } /* a byte order mark */
    for (i = 0; i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'); i++) {}
    if (i < len && text[i] == '{') return kctl__kc_read(text, len, dir, context, out, st);
    {
        kctl_jw w;
        const char *json;
        size_t jlen;
        char msg[200];
        kctl_jw_init_growable(&w, &out->allocator);
        rc = kctl__ky_to_json(text, len, &out->allocator, &w, msg, sizeof msg);
        if (rc == KCTL_OK && (rc = kctl_jw_finish(&w, &json, &jlen)) != KCTL_OK)
            snprintf(msg, sizeof msg, "kubeconfig: cannot be written as JSON");
        if (rc == KCTL_OK) rc = kctl__kc_read(json, jlen, dir, context, out, st);
        else rc = kctl__kc_fail(st, rc, "%s", msg);
        kctl_jw_free(&w);
    }
    return rc;
}

/* The whole file at path into b (at most KCTL_KUBECONFIG_MAX_BYTES). */
static int kctl__kc_slurp(const char *path, kctl__hbuf *b, const char *what, kctl_api_status *st) {
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t got;
    int rc = KCTL_OK;
    if (!f)
        return kctl__kc_fail(st, errno == ENOENT ? KCTL_ERR_NOT_FOUND : KCTL_ERR_IO, "%s: cannot open %.200s: %s", what, path,
                             errno == ENOENT ? "no such file" : strerror(errno));
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0 && !b->err) kctl__hbuf_put(b, chunk, got);
    if (b->err == KCTL_ERR_TOO_LARGE)
        rc = kctl__kc_fail(st, KCTL_ERR_TOO_LARGE, "%s: %.200s is larger than %lu bytes", what, path, (unsigned long)b->max);
    else if (b->err) rc = kctl__kc_fail(st, b->err, "%s: out of memory", what);
    else if (ferror(f)) rc = kctl__kc_fail(st, KCTL_ERR_IO, "%s: cannot read %.200s", what, path);
    fclose(f);
    return rc;
}

KCTL_API int kctl_kube_config_load(const char *path, const char *context, kctl_kube_config *out, kctl_api_status *st) {
    char *own = NULL, *dir = NULL;
    const char *slash;
    kctl__hbuf b;
    int rc;
    if (!out) return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "kubeconfig: no config to fill");
    kctl_kube_config_free(out);
    if (!path) {
        const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");
        while (env && *env == ':') env++; /* empty entries are skipped, as kubectl does */
        if (env && *env) {
            const char *end = strchr(env, ':');
            own = kctl__http_strndup(&out->allocator, env, end ? (size_t)(end - env) : strlen(env));
        } else if (home && *home) {
            size_t n = strlen(home);
            if ((own = (char *)kctl__http_alloc(&out->allocator, n + 14)) != NULL) {
                memcpy(own, home, n);
                memcpy(own + n, "/.kube/config", 14);
            }
        } else return kctl__kc_fail(st, KCTL_ERR_NOT_FOUND, "kubeconfig: neither $KUBECONFIG nor $HOME is set");
        if (!own) return kctl__kc_fail(st, KCTL_ERR_NOMEM, "kubeconfig: out of memory");
        path = own;
    }
    if ((slash = strrchr(path, '/')) != NULL &&
        !(dir = kctl__http_strndup(&out->allocator, path, slash == path ? 1 : (size_t)(slash - path)))) {
        kctl__http_free(&out->allocator, own);
        return kctl__kc_fail(st, KCTL_ERR_NOMEM, "kubeconfig: out of memory");
    }
    kctl__hbuf_init(&b, &out->allocator, KCTL_KUBECONFIG_MAX_BYTES);
    rc = kctl__kc_slurp(path, &b, "kubeconfig", st);
    if (rc == KCTL_OK) rc = kctl_kube_config_parse(b.p ? b.p : "", b.len, dir, context, out, st);
    kctl__hbuf_free(&b);
    kctl__http_free(&out->allocator, dir);
    kctl__http_free(&out->allocator, own);
    return rc;
}

KCTL_API int kctl_kube_config_in_cluster(const char *sa_dir, kctl_kube_config *out, kctl_api_status *st) {
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *pod_ns = getenv("POD_NAMESPACE"), *dir = sa_dir ? sa_dir : "/var/run/secrets/kubernetes.io/serviceaccount";
    size_t i, dn;
    bool v6 = false;
    kctl__kc k;
    kctl__hbuf path;
    FILE *f;
    int rc = KCTL_OK;
    if (!out) return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "in-cluster: no config to fill");
    kctl_kube_config_free(out);
    if (!host || !*host || !port || !*port)
        return kctl__kc_fail(st, KCTL_ERR_NOT_FOUND, "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set (not in a pod?)");
    for (i = 0; host[i]; i++) {
        char c = host[i];
        if (c == ':') v6 = true;
        else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
            return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "in-cluster: KUBERNETES_SERVICE_HOST is not a host name or address");
    }
    for (i = 0; port[i]; i++)
        if (port[i] < '0' || port[i] > '9' || i >= 5) break;
    if (port[i] || atoi(port) < 1 || atoi(port) > 65535)
        return kctl__kc_fail(st, KCTL_ERR_INVALID_ARG, "in-cluster: KUBERNETES_SERVICE_PORT is not a port number");
    kctl__kc_init(&k, &out->allocator);
    dn = strlen(dir);
    kctl__hbuf_init(&path, &out->allocator, (size_t)-1 / 2);
    k.off[KCTL__KC_SERVER] = 0;
    kctl__hbuf_str(&k.mem, v6 ? "https://[" : "https://");
    kctl__hbuf_str(&k.mem, host);
    kctl__hbuf_str(&k.mem, v6 ? "]:" : ":");
    kctl__hbuf_str(&k.mem, port);
    kctl__hbuf_put(&k.mem, "\0", 1);
    /* the token: it must be there now; the transport reads it again when it changes */
    kctl__hbuf_put(&path, dir, dn);
    kctl__hbuf_str(&path, "/token");
    if (path.err || k.mem.err) { rc = kctl__kc_fail(st, KCTL_ERR_NOMEM, "in-cluster: out of memory"); goto done; }
    if (!(f = fopen(path.p, "rb"))) {
        rc = kctl__kc_fail(st, errno == ENOENT ? KCTL_ERR_NOT_FOUND : KCTL_ERR_IO, "in-cluster: cannot open the service account's token %.200s: %s",
                           path.p, errno == ENOENT ? "no such file" : strerror(errno));
        goto done;
    }
    fclose(f);
    if ((rc = kctl__kc_keep(&k, KCTL__KC_TOKEN_FILE, NULL, 0, path.p, path.len)) != KCTL_OK) goto nomem;
    path.len = dn;
    kctl__hbuf_str(&path, "/ca.crt");
    if (!path.err && (f = fopen(path.p, "rb")) != NULL) {
        fclose(f);
        if ((rc = kctl__kc_keep(&k, KCTL__KC_CA_FILE, NULL, 0, path.p, path.len)) != KCTL_OK) goto nomem;
    }
    if (pod_ns && *pod_ns) rc = kctl__kc_keep(&k, KCTL__KC_NS, NULL, 0, pod_ns, strlen(pod_ns));
    else {
        kctl__hbuf ns;
        path.len = dn;
        kctl__hbuf_str(&path, "/namespace");
        kctl__hbuf_init(&ns, &out->allocator, 4096);
        if (!path.err && kctl__kc_slurp(path.p, &ns, "in-cluster", NULL) == KCTL_OK) {
            while (ns.len && (ns.p[ns.len - 1] == '\n' || ns.p[ns.len - 1] == '\r' || ns.p[ns.len - 1] == ' ')) ns.len--;
            if (ns.len && memchr(ns.p, '\0', ns.len) == NULL) rc = kctl__kc_keep(&k, KCTL__KC_NS, NULL, 0, ns.p, ns.len);
        }
        kctl__hbuf_free(&ns);
    }
    if (rc == KCTL_OK && k.off[KCTL__KC_NS] == (size_t)-1) rc = kctl__kc_keep(&k, KCTL__KC_NS, NULL, 0, "default", 7);
    if (rc == KCTL_OK) rc = kctl__kc_keep(&k, KCTL__KC_CONTEXT, NULL, 0, "", 0);
    if (rc != KCTL_OK || path.err) goto nomem;
    kctl__kc_finish(&k, out);
    goto done;
nomem:
    rc = kctl__kc_fail(st, KCTL_ERR_NOMEM, "in-cluster: out of memory");
done:
    kctl__hbuf_free(&path);
    kctl__hbuf_free(&k.mem);
    return rc;
}

#endif /* KCTL_HTTP_CURL_IMPLEMENTATION */
