/* kube_server.h - a Kubernetes API server for tests, over the memstore.

   No kube-apiserver can be installed where kctl is tested, so this server
   stands in for one: HTTP/1.1 on 127.0.0.1 (keep-alive, chunked watch
   streams), speaking the bytes a real API server (k8s.io/apiserver
   v0.26.15, tests/wire/k8s-apiserver-captures.md) sends, over the
   memstore, so every object rule (names, uid, generation, the status
   subresource, finalizers, no-op writes, the refusals' Status bodies) is
   kctl's own API-SERVER RULES. kubectl (1.20 and 1.32) and the official
   Python client check it (tests/test_kube_server.c).

   Served:
     GET /api, /api/v1, /apis, /apis/{g}, /apis/{g}/{v}  discovery (APIVersions,
         APIGroupList, APIGroup, APIResourceList with name, singularName,
         namespaced, kind, verbs, shortNames; "x/status" for a status subresource)
     GET /version                   a version.Info (gitVersion v1.26.15-kctl-test)
     GET /openapi/v2                200 application/octet-stream, empty: an empty
                                    protobuf Document, what kubectl apply needs to
                                    validate (kinds it does not know are skipped)
     GET /healthz, /readyz, /livez  "ok"
     every resource: list (limit, continue, remainingItemCount, labelSelector,
         fieldSelector, resourceVersion[Match]), watch (watch=1|true|True...,
         resourceVersion "" or "0": an ADDED per object then live;
         allowWatchBookmarks; timeoutSeconds; too old: 200 then an in-band
         ERROR 410 and the terminator), get, POST, PUT, PUT .../status, PATCH
         (merge-patch+json; strategic-merge-patch+json taken as a merge patch,
         see kube_server.c), PATCH .../status, DELETE (DeleteOptions
         preconditions; a Success Status, or 200 with the object a finalizer
         keeps).
   Not served: Table output (kubectl prints the generic NAME/AGE columns
   from a plain list, as it does for any server that sends no Table),
   protobuf (406), json-patch and server-side apply (415),
   authentication (every request is allowed, as the captured server's
   were), deletecollection, pretty-printing for curl.

   Threads: one accepts, one serves each connection (at most 512 at once:
   beyond, a connection is closed as it comes); every function here
   may be called from any thread while the server runs, except stop. */
#ifndef KT_KUBE_SERVER_H
#define KT_KUBE_SERVER_H
#include "../kctl.h"

/* One resource the server serves. Strings are copied at start. */
typedef struct kt_kube_resource {
    const char *group;       /* "" or NULL: the core group (/api/v1) */
    const char *version;     /* "v1" */
    const char *resource;    /* the plural: "configmaps" */
    const char *singular;    /* "configmap" (NULL: "") */
    const char *kind;        /* "ConfigMap"; the list kind is kind + "List" */
    const char *short_names; /* comma-separated, "cm" (NULL: none) */
    bool namespaced;
    bool status;             /* a status subresource ("x/status" in discovery) */
} kt_kube_resource;

/* The default set (resources NULL): configmaps (v1, namespaced, "cm"),
   namespaces (v1, cluster-scoped, "ns", status), leases
   (coordination.k8s.io/v1, namespaced), deviceconfigs (edge.kctl.io/v1,
   kind DeviceConfig, namespaced, "dc", status). */
extern const kt_kube_resource kt_kube_default_resources[];
extern const size_t kt_kube_default_resource_count;

/* Options; zero means the default. */
typedef struct kt_kube_server_desc {
    const kt_kube_resource *resources; /* NULL: kt_kube_default_resources */
    size_t resource_count;
    uint16_t port;                     /* 0: a free port (bind to port 0) */
    uint64_t bookmark_period_ns;       /* a BOOKMARK after this long with nothing to send (0: 60 s); only to watches that ask */
    uint64_t watch_timeout_max_ns;     /* the longest a watch lasts; also without timeoutSeconds (0: 1800 s) */
    uint32_t history;                  /* events the memstore keeps for watches (0: 1024) */
    size_t max_request_bytes;          /* request head + body (0: 3 MiB + 64 KiB); beyond: 413 and the connection closes */
    /* https (in a build with KT_HAVE_OPENSSL; elsewhere start refuses these
       with INVALID_ARG): the server's certificate chain and key (PEM
       files) and, for mutual TLS, the CA whose client certificates are
       required. NULL: plain http. SIGPIPE is ignored from start on. */
    const char *tls_cert_file, *tls_key_file, *tls_client_ca_file;
} kt_kube_server_desc;

typedef struct kt_kube_server kt_kube_server;

/* Start listening on 127.0.0.1 (desc may be NULL). OK; IO when the port
   cannot be bound or a thread cannot start; INVALID_ARG for a resource
   without version, resource or kind, or TLS files that do not load; NOMEM. */
int kt_kube_server_start(const kt_kube_server_desc *desc, kt_kube_server **out);
/* Stop: close the listener and every connection, join every thread, free
   everything (the memstore too). NULL is fine. */
void kt_kube_server_stop(kt_kube_server *s);
/* "http://127.0.0.1:PORT" ("https://..." with TLS; valid until stop) and the port. */
const char *kt_kube_server_url(const kt_kube_server *s);
uint16_t kt_kube_server_port(const kt_kube_server *s);
/* The store behind the server (the server's: do not destroy it), to read
   and write objects directly; writes show up in watches as any other. */
kctl_memstore *kt_kube_server_memstore(kt_kube_server *s);
kctl_transport kt_kube_server_transport(kt_kube_server *s);

/* FAULTS. Each takes effect at once for everything open. */
/* Break every open watch: the connection closes without the chunked
   terminator (a client sees a truncated stream). */
void kt_kube_server_break_watches(kt_kube_server *s);
/* End every open watch cleanly, as at its timeoutSeconds: whatever is
   buffered, then the terminator; the connection stays open. */
void kt_kube_server_end_watches(kt_kube_server *s);
/* A BOOKMARK now (within 50 ms) on every open watch that asked for them
   (allowWatchBookmarks), at its version, as if the bookmark period had
   passed with nothing to send. */
void kt_kube_server_bookmark_now(kt_kube_server *s);
/* Expire the history: every continue token handed out so far and every
   version older than the current one become 410 Expired (lists: HTTP 410
   as capture #17; watches opened from then on: the in-band ERROR of
   capture #53; an open watch gets it only if it is behind). */
void kt_kube_server_expire_history(kt_kube_server *s);
/* Answer the next n requests (any, discovery too) with http_code (429
   TooManyRequests or 503 ServiceUnavailable; other codes: 429) and
   Retry-After: retry_after_s, a Status body with details.retryAfterSeconds.
   n 0 disarms. */
void kt_kube_server_throttle(kt_kube_server *s, uint32_t n, int http_code, uint32_t retry_after_s);
/* Stall (on) or resume (off): while stalled requests are read and not
   answered, and open watches send nothing (their events wait). */
void kt_kube_server_stall(kt_kube_server *s, bool on);
/* Restart: drop every connection and watch (closed, no terminator),
   forget the watch history (a restarted API server's watch cache: every
   older version is 410), keep the objects and the port. */
void kt_kube_server_restart(kt_kube_server *s);

/* Counters since start. requests[v] counts requests by kctl_verb
   (KCTL_VERB_LIST .. KCTL_VERB_REMOVE; PATCH of .../status counts as
   PATCH); requests[0] everything else (discovery, version, openapi,
   health, refused before routing). */
typedef struct kt_kube_server_counters {
    uint64_t requests[KCTL_VERB_COUNT];
    uint64_t throttled;     /* 429 and 503 answers sent by kt_kube_server_throttle */
    uint64_t bad_requests;  /* 400 and 413 answers for malformed HTTP */
    uint64_t watches_opened;
    uint32_t watches_open;  /* streaming now */
    uint32_t connections;   /* open now */
    uint64_t tls_failures;  /* https: handshakes refused (no or a wrong client certificate, plain http) */
} kt_kube_server_counters;
void kt_kube_server_counters_get(kt_kube_server *s, kt_kube_server_counters *out);

#endif
