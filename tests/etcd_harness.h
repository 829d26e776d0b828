/* etcd_harness.h - real etcd clusters for the tests of kctl's etcd transport.

   The etcd transport is tested against the real thing: the etcd binary
   (Debian's etcd-server 3.4), one, three or five members on 127.0.0.1, each
   a child process of the test runner (build/kt-etcd, tests/run_etcd.c).
   The harness starts them, waits until they are healthy, hands out their
   URLs, breaks them on request (kill -9, SIGTERM and restart, quorum loss,
   SIGSTOP/SIGCONT, compaction, auth) and stops every process it started.
   It speaks to etcd over its own tiny HTTP/1.0 client on raw sockets (no
   libcurl: its view of etcd shares no code with the transport under test).

   THE ETCD BINARY
   $KCTL_ETCD_BIN when set (a path; a missing one makes the tests skip,
   which is how the skip path is tried), else `etcd` in $PATH, else
   /usr/bin/etcd. kt_etcd_unavailable() says why none can run.

   PORTS AND FILES
   Every member gets two FREE ports (client and peer; three with TLS, see
   there), probed by binding them, chosen at random in [10000, the start
   of the kernel's ephemeral range) (/proc/sys/net/ipv4/ip_local_port_range;
   from the kernel's own choice when that span is under 2000 ports): outgoing connections (ours,
   libcurl's, anyone's) never take such a port, so a stopped member's
   ports are still free when it restarts. Never fixed ports. A start that
   loses a race for a port (the member's log says "address already in
   use") is retried with fresh ports, three times. A member keeps its
   ports and data directory across restarts.
   Each cluster lives in a fresh directory, mkdtemp("$TMPDIR/kctl-etcd-XXXXXX")
   (/tmp without TMPDIR): member i's data in <dir>/m<i+1>, its output
   (stdout and stderr, appended across restarts) in <dir>/m<i+1>.log.
   kt_etcd_destroy() removes the directory unless asked to keep it (pass
   true when the test failed; KCTL_ETCD_KEEP=1 keeps every one) and prints
   its path when kept. A failed start keeps it too.

   PROCESSES
   Members are started with fork + exec, each in its own process group,
   stdin /dev/null. They are stopped BY PID, never by name (other etcds may
   run on the machine): kt_etcd_destroy() SIGKILLs and reaps every member
   still running. Should the test process end without destroy:
   - exit() or return from main: an atexit handler SIGKILLs them;
   - SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE,
     SIGILL: a handler SIGKILLs them, then hands the signal on to the
     handler that was there before (a sanitizer's) or the default action;
   - SIGKILL: each member was started with prctl(PR_SET_PDEATHSIG, SIGKILL)
     (checked against the race where the parent died before that call), so
     the kernel kills it with its parent.
   PR_SET_PDEATHSIG fires when the THREAD that forked the member ends, not
   only the process: start and restart members from a thread that outlives
   them (the test's main thread).
   The handlers and the atexit hook are installed by the first start; they
   kill only members the current process started (a forked child that
   inherits the table kills none of its parent's).

   TIMEOUTS
   Every HTTP request has a timeout (the timeout_ms argument; 0 means 5000
   ms): connect, send and the whole response count against it, so a frozen
   (SIGSTOPped) member costs at most that long. A frozen member accepts
   connections (the kernel does) but never answers: requests to it time out
   with http == 0. The waits (healthy, revision, leader) poll every 50 ms
   up to their own deadlines.

   THREADS
   The HTTP calls (kt_etcd_http and the calls taking a URL) share no state:
   [any thread]. A cluster (kt_etcd_* taking a kt_etcd_cluster) is
   [one thread]: the thread that started it, for PR_SET_PDEATHSIG's sake;
   different clusters may live in different threads.

   RESULTS
   Calls on a cluster return 0 or -1 with the reason in c->error. HTTP
   calls return 0 when etcd answered 200, -1 otherwise, and fill an
   optional kt_etcd_reply (see there) with what came back.

   TLS
   kt_etcd_opts.tls asks for https client URLs (KT_ETCD_TLS_SERVER) and
   also for client certificates (KT_ETCD_TLS_MTLS: --client-cert-auth).
   The harness then makes, at start, with the openssl command line
   ($KCTL_OPENSSL_BIN when set, else `openssl` in $PATH, else
   /usr/bin/openssl; run with fork + exec), in <dir>/tls: a CA, a server
   certificate it signed for 127.0.0.1 (subjectAltName IP:127.0.0.1, as
   Go wants; extended key usage server and client: etcd's gateway dials
   its own gRPC port with it), a client certificate it signed, and
   a second, unrelated CA: their paths are in kt_etcd_cluster.tls. EC
   P-256 keys, unencrypted PEM, valid for two days; about 0.1 s for all.
   Peers stay plain http. kt_etcd_tls_unavailable() says why TLS cannot
   be had (KT_ETCD_REQUIRE_OPENSSL() skips on it).
   The harness's own client speaks no TLS, so each member of a TLS
   cluster gets a third free port, --listen-metrics-urls http://..., that
   serves /health and /metrics only: the start's and restart's health
   checks and kt_etcd_wait_healthy() use it, kt_etcd_leader() reads
   etcd_server_is_leader from /metrics there. Every other call taking a
   member's URL (kt_etcd_http, put, get, revision, compact, status,
   wait_revision, auth) cannot reach a TLS member: it returns -1 with
   error "... speaks no TLS ...". Talk to a TLS cluster through the
   transport under test (or libcurl) instead.

   WRITING A TEST ON IT
   A suite file (tests/test_etcd_<x>.c) goes into ETCDSRC in the Makefile,
   its kt_suite_etcd_<x>() is declared at the end of this header and
   called from tests/run_etcd.c's main. Each test begins with
   KT_ETCD_REQUIRE() (or KT_ETCD_REQUIRE_CURL()), starts its own cluster
   (about 0.2 s for one member, 1 s for three), and ends with
   kt_etcd_destroy(&c, kt.cur_failed > 0) so that a failure keeps the
   member logs. Code that uses libcurl sits inside #ifdef KT_HAVE_CURL
   (the Makefile defines it and links -lcurl only where the headers are):
   see teh_libcurl_threads in tests/test_etcd_harness.c.
   A typical scenario:
       kt_etcd_cluster c;
       kt_etcd_opts o = {0};
       o.members = 3;
       if (kt_etcd_start(&c, &o) != 0) { kt_fail(..., "%s", c.error); ... }
       leader = kt_etcd_leader(&c, 0);
       ... point the transport at c.endpoints, watch ...
       kt_etcd_kill(&c, leader);            (the stream breaks; re-watch)
       kt_etcd_restart(&c, leader, 0);
       kt_etcd_destroy(&c, kt.cur_failed > 0); */
#ifndef KT_ETCD_HARNESS_H
#define KT_ETCD_HARNESS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KT_ETCD_MAX_MEMBERS 5
#define KT_ETCD_MAX_STARTS 64      /* processes one cluster may start, restarts included */
#define KT_ETCD_DEFAULT_TIMEOUT_MS 5000

/* Why etcd cannot run here ("no etcd in PATH ..."), or NULL when it can.
   [any thread] */
const char *kt_etcd_unavailable(void);
/* Why a TLS cluster cannot be made here (no openssl command: see TLS),
   or NULL when it can. [any thread] */
const char *kt_etcd_tls_unavailable(void);
/* The etcd binary the harness runs (see THE ETCD BINARY). [any thread] */
const char *kt_etcd_bin(void);

/* ---- HTTP ---------------------------------------------------------- */

/* What came back from one request. Zero it before first use
   (kt_etcd_reply r = {0};); each call frees the body of the reply it is
   handed and fills it anew; kt_etcd_reply_free() frees the last body.
   http      the status; 0 when no response came (error says why: timeout,
             connection refused or reset, bad URL)
   code      the gRPC code of an error body ({"error","message","code"}:
             3 bad request or "user name is empty", 11 compacted or future
             revision, 14 unavailable, 16 bad auth token, ...); 0 otherwise
   revision  header.revision of the reply; 0 when absent
   body      the whole body, NUL-terminated (malloc'd; NULL when none)
   error     the error body's "message", or why no response came
   ms        the request's wall time */
typedef struct kt_etcd_reply {
    int http;
    int code;
    long long revision;
    char *body;
    size_t len;
    char error[256];
    double ms;
} kt_etcd_reply;
void kt_etcd_reply_free(kt_etcd_reply *r);

/* One HTTP/1.0 request to base_url ("http://127.0.0.1:PORT", numeric
   IPv4 only; https is -1 with error "... speaks no TLS ...") + path;
   method "GET" or "POST"; body (JSON) may be NULL; token, when not NULL,
   is sent as "Authorization: <token>" (etcd's simple tokens, no
   "Bearer"). timeout_ms bounds the whole exchange (0: 5000).
   Responses up to 16 MiB. Returns 0 when the status is 200, else -1.
   r may be NULL. A stream (POST /v3/watch) is read until timeout_ms:
   then the call returns -1 with error "timeout ...", and r->http and
   r->body hold the status and what came by then (http 0 when not even
   the status line came). [any thread] */
int kt_etcd_http(const char *base_url, const char *method, const char *path, const char *body,
                 const char *token, int timeout_ms, kt_etcd_reply *r);

/* The first "name": value anywhere in json (at any depth; etcd's gateway
   spells int64 as strings, both forms are read), as text into out[cap]
   (quotes dropped) or as a number. Returns false when absent (or, for
   text, longer than cap - 1; for a number, not one). Good
   enough for the gateway's replies, whose keys and values are base64;
   not a JSON parser. [any thread] */
bool kt_etcd_json_str(const char *json, const char *name, char *out, size_t cap);
bool kt_etcd_json_int(const char *json, const char *name, long long *out);

/* Standard padded base64 of p[0..n) (malloc'd, NUL-terminated), and its
   inverse (malloc'd, NUL-terminated, *n its length; NULL on bad input).
   [any thread] */
char *kt_etcd_b64(const void *p, size_t n);
char *kt_etcd_unb64(const char *s, size_t *n);

/* ---- etcd operations through a member's gateway --------------------- */
/* Each takes the member's client URL and a token (NULL: none), returns 0
   on HTTP 200 and -1 otherwise (r says what came back). [any thread] */

/* PUT key = value (NUL-terminated text; base64 on the wire). r->revision
   is the new revision. */
int kt_etcd_put(const char *url, const char *token, const char *key, const char *value,
                int timeout_ms, kt_etcd_reply *r);

#define KT_ETCD_SERIALIZABLE 1   /* read the member's own store, no quorum needed */
/* RANGE one key at revision (0: the latest), flags 0 (linearizable) or
   KT_ETCD_SERIALIZABLE. *value (may be NULL) gets the decoded value
   (malloc'd) or NULL when the key is absent; *mod_revision (may be NULL)
   its mod_revision or 0. */
int kt_etcd_get(const char *url, const char *token, const char *key, long long revision, int flags,
                char **value, long long *mod_revision, int timeout_ms, kt_etcd_reply *r);

/* The cluster's current revision (a linearizable count_only range: it
   needs a quorum) into *revision (may be NULL). For what one member has
   applied, see kt_etcd_member_status. */
int kt_etcd_revision(const char *url, const char *token, int timeout_ms, long long *revision, kt_etcd_reply *r);

/* COMPACT to revision (physical: returns once the space is reclaimed).
   Ranges and watches below revision then fail with 400 code 11. */
int kt_etcd_compact(const char *url, const char *token, long long revision, int timeout_ms,
                    kt_etcd_reply *r);

/* POST /v3/maintenance/status: the member's own view, answered without
   quorum. revision is the member's LOCAL store revision (what it has
   applied), so it says whether a member has caught up. */
typedef struct kt_etcd_status {
    unsigned long long cluster_id, member_id, leader; /* leader 0: none known */
    long long revision, raft_index, raft_term, raft_applied;
} kt_etcd_status;
int kt_etcd_member_status(const char *url, int timeout_ms, kt_etcd_status *st, kt_etcd_reply *r);

/* Poll the member's status until its local revision is >= revision, up to
   timeout_ms (0: 10000). *seen (may be NULL): the last revision seen (0:
   never answered). Returns 0 when reached, -1 at the deadline. */
int kt_etcd_wait_revision(const char *url, long long revision, int timeout_ms, long long *seen);

/* Auth (A.6 in WIRE.md). enable: add user "root" with password, role
   "root", grant it, enable auth (stops at the first failing step, r says
   which). authenticate: a token for user/password into token[cap]
   (400 code 3 on a wrong password). disable: needs a valid root token. */
int kt_etcd_auth_enable(const char *url, const char *root_password, int timeout_ms, kt_etcd_reply *r);
int kt_etcd_authenticate(const char *url, const char *user, const char *password, char *token,
                         size_t cap, int timeout_ms, kt_etcd_reply *r);
int kt_etcd_auth_disable(const char *url, const char *token, int timeout_ms, kt_etcd_reply *r);

/* ---- clusters ------------------------------------------------------- */

/* Zero means the default.
   members             1..KT_ETCD_MAX_MEMBERS; 0: 1
   progress_notify_ms  --experimental-watch-progress-notify-interval; 0: 1000
   start_timeout_ms    how long start waits for every /health; 0: 20000
   heartbeat_ms, election_ms  raft timing; 0: etcd's (100, 1000)
   auth_token_ttl_s    --auth-token-ttl (idle simple-token life); 0: etcd's 300
   extra_args          more etcd flags, NULL-terminated ("--flag=value"); may be NULL
   tls                 KT_ETCD_TLS_NONE (http), _SERVER (https) or _MTLS
                       (https and client certificates): see TLS
   no_pdeathsig        start members without PR_SET_PDEATHSIG, so that the
                       handlers and the atexit hook are tried alone (the
                       harness's own tests; nobody else wants it) */
typedef enum kt_etcd_tls_mode {
    KT_ETCD_TLS_NONE = 0,  /* http:// client URLs */
    KT_ETCD_TLS_SERVER,    /* https://, the server's certificate; any client may connect */
    KT_ETCD_TLS_MTLS       /* https:// and --client-cert-auth: a client certificate the CA signed is required */
} kt_etcd_tls_mode;

typedef struct kt_etcd_opts {
    int members;
    int progress_notify_ms;
    int start_timeout_ms;
    int heartbeat_ms, election_ms;
    int auth_token_ttl_s;
    const char *const *extra_args;
    bool no_pdeathsig;
    kt_etcd_tls_mode tls;
} kt_etcd_opts;

typedef enum kt_etcd_state {
    KT_ETCD_DOWN = 0,   /* not running (never started, killed, stopped) */
    KT_ETCD_RUNNING,
    KT_ETCD_FROZEN      /* SIGSTOPped: accepts connections, answers nothing */
} kt_etcd_state;

typedef struct kt_etcd_member {
    char name[8];                    /* m1, m2, ... */
    int client_port, peer_port;      /* fixed for the member's life */
    char url[32];                    /* client URL, http://127.0.0.1:PORT (https:// with TLS) */
    char peer_url[32];
    int metrics_port;                /* with TLS: /health and /metrics over http; 0 without */
    char metrics_url[32];            /* http://127.0.0.1:PORT with TLS; "" without */
    char data_dir[300], log_path[300];
    pid_t pid;                       /* the running process; 0 when DOWN */
    kt_etcd_state state;
} kt_etcd_member;

/* The PEM files of a TLS cluster (all "" without TLS), in <dir>/tls. */
typedef struct kt_etcd_tls_files {
    char ca[300];                    /* the CA that signed the server's and the client's certificates */
    char server_cert[300], server_key[300];  /* what the members present (IP:127.0.0.1) */
    char client_cert[300], client_key[300];  /* a client certificate the CA signed (CN kctl-test-client) */
    char other_ca[300];              /* a CA that signed nothing here: the wrong CA */
    char other_ca_key[300];          /* its key */
} kt_etcd_tls_files;

typedef struct kt_etcd_cluster {
    int n;                           /* members */
    kt_etcd_member m[KT_ETCD_MAX_MEMBERS];
    char endpoints[KT_ETCD_MAX_MEMBERS * 32]; /* every client URL, comma-separated */
    char dir[256];                   /* the temporary directory; "" when none */
    char token[40];                  /* --initial-cluster-token, unique per cluster */
    kt_etcd_opts opts;               /* with the defaults filled in */
    kt_etcd_tls_files tls;           /* with opts.tls: the certificates and keys */
    pid_t started[KT_ETCD_MAX_STARTS]; /* every pid this cluster ever started */
    int nstarted;
    char error[512];                 /* why the last call failed */
} kt_etcd_cluster;

/* Start opts->members members (opts NULL: defaults) in a fresh directory
   and wait until each answers GET /health with {"health":"true"} (up to
   opts->start_timeout_ms). On failure every member started is killed, the
   directory is kept and c->error says why (with the tail of the first
   failing member's log). Call kt_etcd_destroy(c, ...) afterwards either
   way (it is safe on a failed start). [one thread] */
int kt_etcd_start(kt_etcd_cluster *c, const kt_etcd_opts *opts);

/* SIGKILL and reap every member still running (frozen ones too), remove
   the directory unless keep_files (or KCTL_ETCD_KEEP is set), printing
   its path to stderr when kept. c stays readable (ports, pids) for
   kt_etcd_leftovers() and kt_etcd_ports_in_use(). [one thread] */
void kt_etcd_destroy(kt_etcd_cluster *c, bool keep_files);

/* Member i (0-based): */
/* kill -9 and reap it (frozen or running). -1 when it is DOWN. */
int kt_etcd_kill(kt_etcd_cluster *c, int i);
/* SIGTERM (and SIGCONT when frozen), wait up to timeout_ms (0: 10000)
   for it to exit, SIGKILL it after that. Returns 0 when it exited on
   SIGTERM, 1 when it had to be killed, -1 when it was DOWN. */
int kt_etcd_term(kt_etcd_cluster *c, int i, int timeout_ms);
/* Start a DOWN member again: same name, ports and data directory,
   --initial-cluster-state existing. Does not wait (see kt_etcd_restart). */
int kt_etcd_member_start(kt_etcd_cluster *c, int i);
/* kt_etcd_member_start, then wait up to timeout_ms (0: 20000) for its
   /health (which needs a quorum to say true). */
int kt_etcd_restart(kt_etcd_cluster *c, int i, int timeout_ms);
/* SIGSTOP / SIGCONT. -1 unless RUNNING / FROZEN. freeze returns once
   every thread of the member has stopped (waitpid reports the stop; up to
   5 s), so nothing it answers after that. */
int kt_etcd_freeze(kt_etcd_cluster *c, int i);
int kt_etcd_thaw(kt_etcd_cluster *c, int i);

/* Kill -9 enough members that the rest cannot form a quorum: all but the
   n/2 (rounded down) starting at keep, in index order around the ring
   (3 members: two stopped, keep stays; 5: three stopped, keep and
   keep+1 stay). *stopped (may be NULL) gets the
   bit mask of the members stopped. -1 with one member, or when some member
   was not RUNNING. */
int kt_etcd_quorum_lose(kt_etcd_cluster *c, int keep, unsigned *stopped);
/* Start every DOWN member and wait up to timeout_ms (0: 20000) for all to
   be healthy. */
int kt_etcd_quorum_restore(kt_etcd_cluster *c, int timeout_ms);

/* Wait up to timeout_ms (0: 20000) until every RUNNING member's /health
   says true. -1 at the deadline or when a member exited (c->error). */
int kt_etcd_wait_healthy(kt_etcd_cluster *c, int timeout_ms);

/* The index of the leader as the RUNNING members see it (the member whose
   status names itself leader, the highest raft term winning; with TLS the
   first whose /metrics says etcd_server_is_leader 1), polling up to
   timeout_ms (0: 10000) while there is none. -1 when none by then. */
int kt_etcd_leader(kt_etcd_cluster *c, int timeout_ms);

/* Make member i the leader (POST /v3/maintenance/transfer-leadership to
   the leader, as `etcdctl move-leader` does; token, when not NULL, for a
   cluster with auth) and wait up to timeout_ms (0: 10000) until the
   running members agree. 0, or -1 (c->error). Plain-HTTP members only. */
int kt_etcd_move_leader(kt_etcd_cluster *c, int i, const char *token, int timeout_ms);

/* After kt_etcd_destroy: how many of the processes this cluster started
   are still alive (a zombie counts as dead; a reused pid that is not an
   etcd of this cluster's directory too), and how many of its ports
   (metrics ports included) still have a listener (a bind with
   SO_REUSEADDR fails). Both 0 after a clean destroy. [any thread] */
int kt_etcd_leftovers(const kt_etcd_cluster *c);
int kt_etcd_ports_in_use(const kt_etcd_cluster *c);

/* ---- the runner's glue (tests/run_etcd.c) ---------------------------- */
/* Every test that needs etcd starts with KT_ETCD_REQUIRE(); one that also
   needs libcurl (built only when its headers were there: KT_HAVE_CURL)
   with KT_ETCD_REQUIRE_CURL(). Without them the test prints one line
   "skip <test>: <reason>" and counts as skipped; KT_REQUIRE_ETCD=1 in the
   environment (CI) makes that a failure instead. */
int kt_etcd_require(const char *file, int line, bool need_curl);
#define KT_ETCD_REQUIRE() do { if (!kt_etcd_require(__FILE__, __LINE__, false)) return; } while (0)
#define KT_ETCD_REQUIRE_CURL() do { if (!kt_etcd_require(__FILE__, __LINE__, true)) return; } while (0)
/* A test of a TLS cluster follows KT_ETCD_REQUIRE[_CURL]() with this: the
   same skip (or failure with KT_REQUIRE_ETCD) when openssl is missing. */
int kt_etcd_require_openssl(const char *file, int line);
#define KT_ETCD_REQUIRE_OPENSSL() do { if (!kt_etcd_require_openssl(__FILE__, __LINE__)) return; } while (0)

/* The suites of build/kt-etcd. */
void kt_suite_etcd_harness(void);
void kt_suite_etcd(void);         /* tests/test_etcd.c: the contract on etcd, and the transport's own */
void kt_suite_etcd_tls(void);     /* tests/test_etcd_tls.c */
void kt_suite_etcd_faults(void);   /* tests/test_etcd_faults.c: a controller through faults */
#endif
