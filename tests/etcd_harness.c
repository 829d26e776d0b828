/* etcd_harness.c - real etcd clusters for the tests (see etcd_harness.h). */
#include "etcd_harness.h"
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define KT_ETCD__MAX_RESPONSE (16u << 20)

/* ===================================================================== */
/* >>util: time, text                                                    */
/* ===================================================================== */

static double kt_etcd__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void kt_etcd__sleep_ms(int ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void kt_etcd__errf(char *dst, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

static void kt_etcd__strerr(int err, char *buf, size_t cap) {
    if (strerror_r(err, buf, cap) != 0) snprintf(buf, cap, "errno %d", err);
}

/* The last bytes of a file, one line, for error messages. */
static void kt_etcd__tail(const char *path, char *out, size_t cap) {
    FILE *f = fopen(path, "rb");
    long size;
    size_t n, i;
    out[0] = '\0';
    if (!f) return;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0) {
        long from = size > (long)cap - 1 ? size - (long)cap + 1 : 0;
        if (fseek(f, from, SEEK_SET) == 0) {
            n = fread(out, 1, cap - 1, f);
            out[n] = '\0';
            for (i = 0; i < n; i++)
                if (out[i] == '\n' || out[i] == '\r' || out[i] == '\t') out[i] = ' ';
        }
    }
    fclose(f);
}

static bool kt_etcd__file_has(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;
    bool found = false;
    if (!f) return false;
    if ((buf = (char *)malloc((8u << 20) + 1)) != NULL) {
        n = fread(buf, 1, 8u << 20, f);
        buf[n] = '\0';
        found = strstr(buf, needle) != NULL;
        free(buf);
    }
    fclose(f);
    return found;
}

/* rm -rf path (no symlinks followed). */
static void kt_etcd__rmtree(const char *path) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    char sub[1024];
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode) && (d = opendir(path)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= sizeof sub) continue;
            kt_etcd__rmtree(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* ===================================================================== */
/* >>bin: which etcd                                                     */
/* ===================================================================== */

static pthread_once_t kt_etcd__bin_once = PTHREAD_ONCE_INIT;
static char kt_etcd__bin_path[PATH_MAX];
static char kt_etcd__bin_why[PATH_MAX + 160];

static void kt_etcd__find_bin(void) {
    const char *env = getenv("KCTL_ETCD_BIN"), *path = getenv("PATH");
    char cand[PATH_MAX];
    if (env && *env) {
        snprintf(kt_etcd__bin_path, sizeof kt_etcd__bin_path, "%s", env);
        if (access(env, X_OK) != 0)
            snprintf(kt_etcd__bin_why, sizeof kt_etcd__bin_why,
                     "etcd not found: KCTL_ETCD_BIN=%s is not an executable file", env);
        return;
    }
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len > 0 && len + 6 < sizeof cand) {
            memcpy(cand, path, len);
            memcpy(cand + len, "/etcd", 6);
            if (access(cand, X_OK) == 0) {
                memcpy(kt_etcd__bin_path, cand, len + 6);
                return;
            }
        }
        path = colon ? colon + 1 : NULL;
    }
    snprintf(kt_etcd__bin_path, sizeof kt_etcd__bin_path, "/usr/bin/etcd");
    if (access(kt_etcd__bin_path, X_OK) != 0)
        snprintf(kt_etcd__bin_why, sizeof kt_etcd__bin_why,
                 "etcd not found: no etcd in PATH nor /usr/bin/etcd (Debian: apt-get install etcd-server; or set KCTL_ETCD_BIN)");
}

const char *kt_etcd_bin(void) {
    pthread_once(&kt_etcd__bin_once, kt_etcd__find_bin);
    return kt_etcd__bin_path;
}

const char *kt_etcd_unavailable(void) {
    pthread_once(&kt_etcd__bin_once, kt_etcd__find_bin);
    return kt_etcd__bin_why[0] ? kt_etcd__bin_why : NULL;
}

/* The openssl command line, for TLS clusters: $KCTL_OPENSSL_BIN, else
   openssl in $PATH, else /usr/bin/openssl. */
static pthread_once_t kt_etcd__ossl_once = PTHREAD_ONCE_INIT;
static char kt_etcd__ossl_path[PATH_MAX];
static char kt_etcd__ossl_why[PATH_MAX + 160];

static void kt_etcd__find_openssl(void) {
    const char *env = getenv("KCTL_OPENSSL_BIN"), *path = getenv("PATH");
    char cand[PATH_MAX];
    if (env && *env) {
        snprintf(kt_etcd__ossl_path, sizeof kt_etcd__ossl_path, "%s", env);
        if (access(env, X_OK) != 0)
            snprintf(kt_etcd__ossl_why, sizeof kt_etcd__ossl_why,
                     "openssl not found: KCTL_OPENSSL_BIN=%s is not an executable file (TLS clusters need it)", env);
        return;
    }
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len > 0 && len + 9 < sizeof cand) {
            memcpy(cand, path, len);
            memcpy(cand + len, "/openssl", 9);
            if (access(cand, X_OK) == 0) {
                memcpy(kt_etcd__ossl_path, cand, len + 9);
                return;
            }
        }
        path = colon ? colon + 1 : NULL;
    }
    snprintf(kt_etcd__ossl_path, sizeof kt_etcd__ossl_path, "/usr/bin/openssl");
    if (access(kt_etcd__ossl_path, X_OK) != 0)
        snprintf(kt_etcd__ossl_why, sizeof kt_etcd__ossl_why,
                 "openssl not found: no openssl in PATH nor /usr/bin/openssl; TLS clusters need it (Debian: apt-get install openssl; or set KCTL_OPENSSL_BIN)");
}

const char *kt_etcd_tls_unavailable(void) {
    pthread_once(&kt_etcd__ossl_once, kt_etcd__find_openssl);
    return kt_etcd__ossl_why[0] ? kt_etcd__ossl_why : NULL;
}

/* ===================================================================== */
/* >>reg: every pid the process started, killed on the way out           */
/* ===================================================================== */
/* The signal handler reads the table without the lock (it cannot take
   one); slots are written whole, a pid before it counts. */

#define KT_ETCD__SLOTS 128
static volatile pid_t kt_etcd__pid[KT_ETCD__SLOTS];
static volatile pid_t kt_etcd__owner[KT_ETCD__SLOTS];
static pthread_mutex_t kt_etcd__mu = PTHREAD_MUTEX_INITIALIZER;
static bool kt_etcd__hooked;
static unsigned kt_etcd__seed;
static const int kt_etcd__sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
#define KT_ETCD__NSIGS ((int)(sizeof kt_etcd__sigs / sizeof kt_etcd__sigs[0]))
static struct sigaction kt_etcd__old[KT_ETCD__NSIGS];
static bool kt_etcd__have_old[KT_ETCD__NSIGS];

static void kt_etcd__kill_owned(void) { /* async-signal-safe */
    pid_t self = getpid();
    int k;
    for (k = 0; k < KT_ETCD__SLOTS; k++) {
        pid_t p = kt_etcd__pid[k];
        if (p > 0 && kt_etcd__owner[k] == self) {
            kill(-p, SIGKILL); /* its process group (etcd starts none, but) */
            kill(p, SIGKILL);
        }
    }
}

static void kt_etcd__on_signal(int sig, siginfo_t *si, void *uc) {
    int k;
    kt_etcd__kill_owned();
    for (k = 0; k < KT_ETCD__NSIGS; k++) {
        const struct sigaction *old = &kt_etcd__old[k];
        if (kt_etcd__sigs[k] != sig || !kt_etcd__have_old[k]) continue;
        sigaction(sig, old, NULL);
        if (old->sa_flags & SA_SIGINFO) {
            if (old->sa_sigaction) old->sa_sigaction(sig, si, uc);
            return;
        }
        if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
            old->sa_handler(sig);
            return;
        }
        /* the default action: a fault the kernel raised happens again on
           return; anything else is raised again (delivered on return) */
        if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && si && si->si_code > 0) return;
        raise(sig);
        return;
    }
}

static void kt_etcd__atexit(void) {
    pid_t self = getpid();
    int k;
    pthread_mutex_lock(&kt_etcd__mu);
    for (k = 0; k < KT_ETCD__SLOTS; k++) {
        pid_t p = kt_etcd__pid[k];
        if (p > 0 && kt_etcd__owner[k] == self) {
            kill(-p, SIGKILL);
            kill(p, SIGKILL);
            waitpid(p, NULL, 0);
            kt_etcd__pid[k] = 0;
        }
    }
    pthread_mutex_unlock(&kt_etcd__mu);
}

static void kt_etcd__hook(void) {
    int k;
    pthread_mutex_lock(&kt_etcd__mu);
    if (!kt_etcd__hooked) {
        kt_etcd__hooked = true;
        kt_etcd__seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16) ^ (unsigned)(kt_etcd__now_ms() * 1000.0);
        atexit(kt_etcd__atexit);
        for (k = 0; k < KT_ETCD__NSIGS; k++) {
            struct sigaction sa;
            if (sigaction(kt_etcd__sigs[k], NULL, &kt_etcd__old[k]) != 0) continue;
            if (!(kt_etcd__old[k].sa_flags & SA_SIGINFO) && kt_etcd__old[k].sa_handler == SIG_IGN) continue;
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = kt_etcd__on_signal;
            sa.sa_flags = SA_SIGINFO;
            sigemptyset(&sa.sa_mask);
            kt_etcd__have_old[k] = true;
            sigaction(kt_etcd__sigs[k], &sa, NULL);
        }
    }
    pthread_mutex_unlock(&kt_etcd__mu);
}

static bool kt_etcd__register(pid_t pid) {
    int k;
    bool ok = false;
    pthread_mutex_lock(&kt_etcd__mu);
    for (k = 0; k < KT_ETCD__SLOTS && !ok; k++) {
        if (kt_etcd__pid[k] > 0 && kt_etcd__owner[k] == getpid()) continue;
        kt_etcd__owner[k] = getpid();
        kt_etcd__pid[k] = pid;
        ok = true;
    }
    pthread_mutex_unlock(&kt_etcd__mu);
    return ok;
}

static void kt_etcd__unregister(pid_t pid) {
    int k;
    pthread_mutex_lock(&kt_etcd__mu);
    for (k = 0; k < KT_ETCD__SLOTS; k++)
        if (kt_etcd__pid[k] == pid && kt_etcd__owner[k] == getpid()) kt_etcd__pid[k] = 0;
    pthread_mutex_unlock(&kt_etcd__mu);
}

static unsigned kt_etcd__rand(void) {
    unsigned x;
    pthread_mutex_lock(&kt_etcd__mu);
    x = kt_etcd__seed ? kt_etcd__seed : 2463534242u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    kt_etcd__seed = x;
    pthread_mutex_unlock(&kt_etcd__mu);
    return x;
}

/* ===================================================================== */
/* >>http: HTTP/1.0 over a socket, bounded in time                       */
/* ===================================================================== */

void kt_etcd_reply_free(kt_etcd_reply *r) {
    if (!r) return;
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* "http://A.B.C.D:PORT[/...]" */
static bool kt_etcd__parse_url(const char *url, struct sockaddr_in *sa, char *host, size_t cap) {
    const char *p, *colon;
    char ip[32];
    long port;
    char *end;
    if (!url || strncmp(url, "http://", 7) != 0) return false;
    p = url + 7;
    colon = strchr(p, ':');
    if (!colon || (size_t)(colon - p) >= sizeof ip) return false;
    memcpy(ip, p, (size_t)(colon - p));
    ip[colon - p] = '\0';
    port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || port <= 0 || port > 65535 || (*end && *end != '/')) return false;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((unsigned short)port);
    if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1) return false;
    snprintf(host, cap, "%s:%ld", ip, port);
    return true;
}

/* Wait for fd to be ready for ev until the deadline: 1 ready, 0 time out,
   -1 error. */
static int kt_etcd__wait_fd(int fd, short ev, double deadline) {
    for (;;) {
        struct pollfd pf;
        double left = deadline - kt_etcd__now_ms();
        int rc;
        if (left <= 0) return 0;
        pf.fd = fd;
        pf.events = ev;
        pf.revents = 0;
        rc = poll(&pf, 1, (int)left + 1);
        if (rc > 0) return 1;
        if (rc == 0) continue;
        if (errno != EINTR) return -1;
    }
}

static void kt_etcd__fill(kt_etcd_reply *r) {
    long long v;
    if (!r->body) return;
    if (kt_etcd_json_int(r->body, "revision", &v)) r->revision = v;
    if (r->http == 200) return;
    if (kt_etcd_json_int(r->body, "code", &v)) r->code = (int)v;
    if (!kt_etcd_json_str(r->body, "message", r->error, sizeof r->error))
        snprintf(r->error, sizeof r->error, "HTTP %d: %.200s", r->http, r->body);
}

/* Split the response in *buf (NUL-terminated, len bytes) into r: status,
   body (takes *buf). false when it is not HTTP. */
static bool kt_etcd__take(kt_etcd_reply *r, char **buf, size_t len) {
    char *b = *buf, *hdr_end;
    size_t off;
    int status;
    if (len < 12 || strncmp(b, "HTTP/1.", 7) != 0 || (status = atoi(b + 9)) < 100) return false;
    hdr_end = strstr(b, "\r\n\r\n");
    off = hdr_end ? (size_t)(hdr_end + 4 - b) : len;
    r->http = status;
    r->len = len - off;
    memmove(b, b + off, r->len + 1);
    r->body = b;
    *buf = NULL;
    kt_etcd__fill(r);
    return true;
}

int kt_etcd_http(const char *base_url, const char *method, const char *path, const char *body,
                 const char *token, int timeout_ms, kt_etcd_reply *r) {
    kt_etcd_reply local;
    struct sockaddr_in sa;
    char host[64], es[96];
    char *req = NULL, *buf = NULL;
    size_t reqlen, sent = 0, len = 0, cap = 0, blen = body ? strlen(body) : 0;
    double t0 = kt_etcd__now_ms(), deadline;
    const char *phase = "connecting";
    int fd = -1, rc, soerr = 0;
    socklen_t sl = sizeof soerr;
    bool ok = false;
    if (!r) {
        memset(&local, 0, sizeof local);
        r = &local;
    }
    free(r->body);
    memset(r, 0, sizeof *r);
    if (timeout_ms <= 0) timeout_ms = KT_ETCD_DEFAULT_TIMEOUT_MS;
    deadline = t0 + timeout_ms;
    if (base_url && strncmp(base_url, "https://", 8) == 0) {
        snprintf(r->error, sizeof r->error, "bad request: url %s: the harness's client speaks no TLS (a TLS member "
                 "answers /health on its metrics_url; talk to it through the transport)", base_url);
        goto out;
    }
    if (!method || !path || !kt_etcd__parse_url(base_url, &sa, host, sizeof host)) {
        snprintf(r->error, sizeof r->error, "bad request: url %s", base_url ? base_url : "(null)");
        goto out;
    }
#ifdef SOCK_CLOEXEC
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
#else
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
#endif
    if (fd < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        kt_etcd__strerr(errno, es, sizeof es);
        snprintf(r->error, sizeof r->error, "socket: %s", es);
        goto out;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno != EINPROGRESS) {
            kt_etcd__strerr(errno, es, sizeof es);
            snprintf(r->error, sizeof r->error, "connect to %s: %s", host, es);
            goto out;
        }
        rc = kt_etcd__wait_fd(fd, POLLOUT, deadline);
        if (rc == 0) goto timeout;
        if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
            kt_etcd__strerr(soerr ? soerr : errno, es, sizeof es);
            snprintf(r->error, sizeof r->error, "connect to %s: %s", host, es);
            goto out;
        }
    }
    reqlen = strlen(method) + strlen(path) + strlen(host) + (token ? strlen(token) : 0) + blen + 200;
    if (!(req = (char *)malloc(reqlen))) {
        snprintf(r->error, sizeof r->error, "out of memory");
        goto out;
    }
    rc = snprintf(req, reqlen,
                  "%s %s HTTP/1.0\r\nHost: %s\r\n%s%s%sContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                  method, path, host, token ? "Authorization: " : "", token ? token : "", token ? "\r\n" : "", blen);
    reqlen = (size_t)rc;
    if (blen) memcpy(req + reqlen, body, blen);
    reqlen += blen;
    phase = "sending";
    while (sent < reqlen) {
        ssize_t n = send(fd, req + sent, reqlen - sent, MSG_NOSIGNAL);
        if (n > 0) { sent += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            rc = kt_etcd__wait_fd(fd, POLLOUT, deadline);
            if (rc == 0) goto timeout;
            if (rc > 0) continue;
        }
        kt_etcd__strerr(errno, es, sizeof es);
        snprintf(r->error, sizeof r->error, "send to %s: %s", host, es);
        goto out;
    }
    phase = "waiting for the response";
    for (;;) {
        ssize_t n;
        if (cap - len < 4096) {
            size_t ncap = cap ? cap * 2 : 16384;
            char *nb;
            if (ncap > KT_ETCD__MAX_RESPONSE + 1) {
                snprintf(r->error, sizeof r->error, "response from %s longer than %u bytes", host, KT_ETCD__MAX_RESPONSE);
                goto out;
            }
            if (!(nb = (char *)realloc(buf, ncap))) {
                snprintf(r->error, sizeof r->error, "out of memory");
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        n = recv(fd, buf + len, cap - len - 1, 0);
        if (n > 0) { len += (size_t)n; continue; }
        if (n == 0) break;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            rc = kt_etcd__wait_fd(fd, POLLIN, deadline);
            if (rc == 0) goto timeout;
            if (rc > 0) continue;
        }
        kt_etcd__strerr(errno, es, sizeof es);
        snprintf(r->error, sizeof r->error, "receive from %s: %s (after %zu bytes)", host, es, len);
        goto out;
    }
    if (!buf) {
        snprintf(r->error, sizeof r->error, "%s closed the connection without a response", host);
        goto out;
    }
    buf[len] = '\0';
    if (!kt_etcd__take(r, &buf, len)) {
        snprintf(r->error, sizeof r->error, "not an HTTP response from %s: %.80s", host, buf);
        goto out;
    }
    ok = r->http == 200;
    goto out;
timeout:
    /* a stream (a watch) ends here: keep the status and what came */
    if (buf) {
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n")) kt_etcd__take(r, &buf, len);
    }
    snprintf(r->error, sizeof r->error, "timeout after %d ms %s (%s %s%s, %zu bytes received)", timeout_ms, phase,
             method, host, path, len);
out:
    if (fd >= 0) close(fd);
    free(req);
    free(buf);
    r->ms = kt_etcd__now_ms() - t0;
    if (r == &local) kt_etcd_reply_free(r);
    return ok ? 0 : -1;
}

/* ===================================================================== */
/* >>json, base64                                                        */
/* ===================================================================== */

static const char *kt_etcd__field(const char *json, const char *name) {
    size_t nl = strlen(name);
    const char *p = json;
    while (p && (p = strchr(p, '"')) != NULL) {
        if (strncmp(p + 1, name, nl) == 0 && p[1 + nl] == '"') {
            const char *q = p + 2 + nl;
            while (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t') q++;
            if (*q == ':') {
                q++;
                while (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t') q++;
                return q;
            }
        }
        p++;
    }
    return NULL;
}

bool kt_etcd_json_str(const char *json, const char *name, char *out, size_t cap) {
    const char *v = json && name ? kt_etcd__field(json, name) : NULL;
    size_t n = 0;
    if (!v || !out || cap == 0) return false;
    if (*v == '"') {
        for (v++; *v && *v != '"'; v++) {
            if (*v == '\\' && v[1]) v++;
            if (n + 1 >= cap) return false;
            out[n++] = *v;
        }
        if (*v != '"') return false;
    } else {
        for (; *v && !strchr(",}] \t\r\n", *v); v++) {
            if (n + 1 >= cap) return false;
            out[n++] = *v;
        }
        if (n == 0) return false;
    }
    out[n] = '\0';
    return true;
}

bool kt_etcd_json_int(const char *json, const char *name, long long *out) {
    char t[32], *end;
    long long v;
    if (!kt_etcd_json_str(json, name, t, sizeof t)) return false;
    errno = 0;
    v = strtoll(t, &end, 10);
    if (end == t || *end || errno) return false;
    if (out) *out = v;
    return true;
}

static bool kt_etcd__json_u64(const char *json, const char *name, unsigned long long *out) {
    char t[32], *end;
    if (!kt_etcd_json_str(json, name, t, sizeof t)) return false;
    errno = 0;
    *out = strtoull(t, &end, 10);
    return end != t && !*end && !errno;
}

static const char kt_etcd__b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *kt_etcd_b64(const void *p, size_t n) {
    const unsigned char *s = (const unsigned char *)p;
    char *out = (char *)malloc((n + 2) / 3 * 4 + 1), *o = out;
    size_t i;
    if (!out) return NULL;
    for (i = 0; i + 2 < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        *o++ = kt_etcd__b64c[v >> 18];
        *o++ = kt_etcd__b64c[(v >> 12) & 63];
        *o++ = kt_etcd__b64c[(v >> 6) & 63];
        *o++ = kt_etcd__b64c[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0u);
        *o++ = kt_etcd__b64c[v >> 18];
        *o++ = kt_etcd__b64c[(v >> 12) & 63];
        *o++ = i + 1 < n ? kt_etcd__b64c[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

static int kt_etcd__b64v(char c) {
    const char *p = c ? strchr(kt_etcd__b64c, c) : NULL;
    return p ? (int)(p - kt_etcd__b64c) : -1;
}

char *kt_etcd_unb64(const char *s, size_t *n) {
    size_t len = s ? strlen(s) : 0, i, o = 0;
    char *out;
    if (!s || len % 4) return NULL;
    if (!(out = (char *)malloc(len / 4 * 3 + 1))) return NULL;
    for (i = 0; i < len; i += 4) {
        int a = kt_etcd__b64v(s[i]), b = kt_etcd__b64v(s[i + 1]), c = kt_etcd__b64v(s[i + 2]), d = kt_etcd__b64v(s[i + 3]);
        bool last = i + 4 == len;
        bool pad2 = last && s[i + 2] == '=' && s[i + 3] == '=', pad1 = last && !pad2 && s[i + 3] == '=';
        if (a < 0 || b < 0 || (c < 0 && !pad2) || (d < 0 && !pad1 && !pad2)) { free(out); return NULL; }
        out[o++] = (char)(a << 2 | b >> 4);
        if (!pad2) out[o++] = (char)((b & 15) << 4 | c >> 2);
        if (!pad2 && !pad1) out[o++] = (char)((c & 3) << 6 | d);
    }
    out[o] = '\0';
    if (n) *n = o;
    return out;
}

/* ===================================================================== */
/* >>ops: etcd calls through one member's gateway                        */
/* ===================================================================== */

static int kt_etcd__post(const char *url, const char *path, const char *token, int timeout_ms, kt_etcd_reply *r,
                         const char *fmt, ...) {
    char small[512], *body = small;
    va_list ap;
    int n, rc;
    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n >= sizeof small) {
        if (!(body = (char *)malloc((size_t)n + 1))) return -1;
        va_start(ap, fmt);
        vsnprintf(body, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    rc = kt_etcd_http(url, "POST", path, body, token, timeout_ms, r);
    if (body != small) free(body);
    return rc;
}

int kt_etcd_put(const char *url, const char *token, const char *key, const char *value,
                int timeout_ms, kt_etcd_reply *r) {
    char *k = kt_etcd_b64(key, key ? strlen(key) : 0), *v = kt_etcd_b64(value, value ? strlen(value) : 0);
    int rc = -1;
    if (k && v && key)
        rc = kt_etcd__post(url, "/v3/kv/put", token, timeout_ms, r, "{\"key\":\"%s\",\"value\":\"%s\"}", k, v);
    free(k);
    free(v);
    return rc;
}

int kt_etcd_get(const char *url, const char *token, const char *key, long long revision, int flags,
                char **value, long long *mod_revision, int timeout_ms, kt_etcd_reply *r) {
    kt_etcd_reply local;
    char *k = kt_etcd_b64(key, key ? strlen(key) : 0), *vb = NULL;
    size_t vcap;
    int rc = -1;
    if (value) *value = NULL;
    if (mod_revision) *mod_revision = 0;
    if (!r) {
        memset(&local, 0, sizeof local);
        r = &local;
    }
    if (k && key)
        rc = kt_etcd__post(url, "/v3/kv/range", token, timeout_ms, r, "{\"key\":\"%s\",\"revision\":\"%lld\"%s}", k,
                           revision, (flags & KT_ETCD_SERIALIZABLE) ? ",\"serializable\":true" : "");
    free(k);
    if (rc == 0 && r->body && kt_etcd__field(r->body, "kvs")) {
        if (mod_revision) kt_etcd_json_int(r->body, "mod_revision", mod_revision);
        vcap = r->len + 1;
        if (value && (vb = (char *)malloc(vcap)) != NULL) {
            if (!kt_etcd_json_str(r->body, "value", vb, vcap)) vb[0] = '\0'; /* an empty value is omitted */
            *value = kt_etcd_unb64(vb, NULL);
            free(vb);
        }
    }
    if (r == &local) kt_etcd_reply_free(r);
    return rc;
}

int kt_etcd_revision(const char *url, const char *token, int timeout_ms, long long *revision, kt_etcd_reply *r) {
    kt_etcd_reply local;
    int rc;
    if (revision) *revision = 0;
    if (!r) {
        memset(&local, 0, sizeof local);
        r = &local;
    }
    /* count_only on the key "\0": no data back, only the header */
    rc = kt_etcd_http(url, "POST", "/v3/kv/range", "{\"key\":\"AA==\",\"count_only\":true}", token, timeout_ms, r);
    if (rc == 0 && revision) *revision = r->revision;
    if (rc == 0 && r->revision <= 0) rc = -1;
    if (r == &local) kt_etcd_reply_free(r);
    return rc;
}

int kt_etcd_compact(const char *url, const char *token, long long revision, int timeout_ms, kt_etcd_reply *r) {
    return kt_etcd__post(url, "/v3/kv/compaction", token, timeout_ms, r, "{\"revision\":\"%lld\",\"physical\":true}",
                         revision);
}

int kt_etcd_member_status(const char *url, int timeout_ms, kt_etcd_status *st, kt_etcd_reply *r) {
    kt_etcd_reply local;
    int rc;
    if (st) memset(st, 0, sizeof *st);
    if (!r) {
        memset(&local, 0, sizeof local);
        r = &local;
    }
    rc = kt_etcd_http(url, "POST", "/v3/maintenance/status", "{}", NULL, timeout_ms, r);
    if (rc == 0 && st && r->body) {
        kt_etcd__json_u64(r->body, "cluster_id", &st->cluster_id);
        kt_etcd__json_u64(r->body, "member_id", &st->member_id);
        kt_etcd__json_u64(r->body, "leader", &st->leader);
        kt_etcd_json_int(r->body, "revision", &st->revision);
        kt_etcd_json_int(r->body, "raftIndex", &st->raft_index);
        kt_etcd_json_int(r->body, "raftTerm", &st->raft_term);
        kt_etcd_json_int(r->body, "raftAppliedIndex", &st->raft_applied);
    }
    if (r == &local) kt_etcd_reply_free(r);
    return rc;
}

int kt_etcd_wait_revision(const char *url, long long revision, int timeout_ms, long long *seen) {
    double deadline = kt_etcd__now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
    kt_etcd_status st;
    if (seen) *seen = 0;
    for (;;) {
        double left = deadline - kt_etcd__now_ms();
        if (kt_etcd_member_status(url, left < 1000 ? (int)left + 1 : 1000, &st, NULL) == 0) {
            if (seen) *seen = st.revision;
            if (st.revision >= revision) return 0;
        }
        if (kt_etcd__now_ms() + 50 >= deadline) return -1;
        kt_etcd__sleep_ms(50);
    }
}

int kt_etcd_auth_enable(const char *url, const char *root_password, int timeout_ms, kt_etcd_reply *r) {
    char *pw = NULL;
    int rc = -1;
    if (!root_password) return -1;
    /* the password goes into JSON: refuse what would need escaping */
    if (strpbrk(root_password, "\"\\") || !(pw = (char *)malloc(strlen(root_password) + 1))) return -1;
    strcpy(pw, root_password);
    if (kt_etcd__post(url, "/v3/auth/user/add", NULL, timeout_ms, r, "{\"name\":\"root\",\"password\":\"%s\"}", pw) == 0 &&
        kt_etcd__post(url, "/v3/auth/role/add", NULL, timeout_ms, r, "{\"name\":\"root\"}") == 0 &&
        kt_etcd__post(url, "/v3/auth/user/grant", NULL, timeout_ms, r, "{\"user\":\"root\",\"role\":\"root\"}") == 0 &&
        kt_etcd__post(url, "/v3/auth/enable", NULL, timeout_ms, r, "{}") == 0)
        rc = 0;
    free(pw);
    return rc;
}

int kt_etcd_authenticate(const char *url, const char *user, const char *password, char *token,
                         size_t cap, int timeout_ms, kt_etcd_reply *r) {
    kt_etcd_reply local;
    int rc;
    if (token && cap) token[0] = '\0';
    if (!user || !password || !token || !cap || strpbrk(user, "\"\\") || strpbrk(password, "\"\\")) return -1;
    if (!r) {
        memset(&local, 0, sizeof local);
        r = &local;
    }
    rc = kt_etcd__post(url, "/v3/auth/authenticate", NULL, timeout_ms, r, "{\"name\":\"%s\",\"password\":\"%s\"}", user,
                       password);
    if (rc == 0 && (!r->body || !kt_etcd_json_str(r->body, "token", token, cap))) rc = -1;
    if (r == &local) kt_etcd_reply_free(r);
    return rc;
}

int kt_etcd_auth_disable(const char *url, const char *token, int timeout_ms, kt_etcd_reply *r) {
    return kt_etcd_http(url, "POST", "/v3/auth/disable", "{}", token, timeout_ms, r);
}

/* ===================================================================== */
/* >>cluster: processes                                                  */
/* ===================================================================== */

/* The first port of the kernel's ephemeral range (where connect() takes
   local ports from); 32768 when unknown. */
static int kt_etcd__ephemeral_low(void) {
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    int lo = 32768, hi = 60999;
    if (f) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2) lo = 32768;
        fclose(f);
    }
    return lo;
}

/* n distinct free ports on 127.0.0.1, each held by a bound socket until
   all are chosen: at random in [10000, ephemeral low), or from the
   kernel (port 0) when that range is too small. */
static int kt_etcd__pick_ports(int *ports, int n, char *err, size_t errcap) {
    int fds[3 * KT_ETCD_MAX_MEMBERS], k, got = 0, tries = 0;
    int lo = 10000, hi = kt_etcd__ephemeral_low();
    bool from_kernel = hi - lo < 2000;
    char es[96];
    if (n > 3 * KT_ETCD_MAX_MEMBERS) {
        kt_etcd__errf(err, errcap, "%d ports: too many", n);
        return -1;
    }
    for (k = 0; k < n; k++) fds[k] = -1;
    while (got < n && tries++ < 5000) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int fd = socket(AF_INET, SOCK_STREAM, 0), p = from_kernel ? 0 : lo + (int)(kt_etcd__rand() % (unsigned)(hi - lo));
        if (fd < 0) break;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa.sin_port = htons((unsigned short)p);
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
            close(fd);
            continue;
        }
        fds[got] = fd;
        ports[got++] = ntohs(sa.sin_port);
    }
    if (got < n) kt_etcd__strerr(errno, es, sizeof es);
    for (k = 0; k < got; k++) close(fds[k]);
    if (got < n) {
        kt_etcd__errf(err, errcap, "found only %d of %d free ports (%s)", got, n, es);
        return -1;
    }
    return 0;
}

/* Reap pid, waiting up to timeout_ms: 1 reaped (status in *st), 0 not
   yet. */
static int kt_etcd__reap(pid_t pid, int timeout_ms, int *st) {
    double deadline = kt_etcd__now_ms() + timeout_ms;
    int s = 0;
    for (;;) {
        pid_t w = waitpid(pid, &s, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD)) {
            if (st) *st = s;
            kt_etcd__unregister(pid);
            return 1;
        }
        if (w < 0 && errno == EINTR) continue;
        if (kt_etcd__now_ms() >= deadline) return 0;
        kt_etcd__sleep_ms(timeout_ms > 200 ? 20 : 5);
    }
}

static void kt_etcd__describe_exit(int st, char *out, size_t cap) {
    if (WIFEXITED(st)) snprintf(out, cap, "exited with %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st)) snprintf(out, cap, "killed by signal %d", WTERMSIG(st));
    else snprintf(out, cap, "ended (status %d)", st);
}

static void kt_etcd__hard_kill(kt_etcd_member *m) {
    if (m->pid > 0) {
        kill(-m->pid, SIGKILL); /* the member's process group, then the member */
        kill(m->pid, SIGKILL);
        if (!kt_etcd__reap(m->pid, 10000, NULL)) kt_etcd__unregister(m->pid); /* cannot happen: SIGKILL */
    }
    m->pid = 0;
    m->state = KT_ETCD_DOWN;
}

/* ---- TLS: certificates made with the openssl command line */

/* Run argv (argv[0] a path) to its end, stdout and stderr appended to
   log_path, up to 20 s. 0 when it exited with 0, else -1 (err says why). */
static int kt_etcd__run(char *const *argv, const char *log_path, char *err, size_t cap) {
    double deadline = kt_etcd__now_ms() + 20000;
    sigset_t all, old;
    char es[96];
    int logfd, nullfd, k, st = 0;
    pid_t pid, w;
    logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (logfd < 0 || nullfd < 0) {
        kt_etcd__strerr(errno, es, sizeof es);
        kt_etcd__errf(err, cap, "open %s: %s", log_path, es);
        if (logfd >= 0) close(logfd);
        if (nullfd >= 0) close(nullfd);
        return -1;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = fork();
    if (pid == 0) {
        sigset_t none;
        for (k = 0; k < KT_ETCD__NSIGS; k++) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            sigemptyset(&dfl.sa_mask);
            sigaction(kt_etcd__sigs[k], &dfl, NULL);
        }
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(nullfd, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid < 0) kt_etcd__strerr(errno, es, sizeof es);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(logfd);
    close(nullfd);
    if (pid < 0) {
        kt_etcd__errf(err, cap, "fork: %s", es);
        return -1;
    }
    for (;;) {
        w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) {
            kt_etcd__strerr(errno, es, sizeof es);
            kt_etcd__errf(err, cap, "waitpid %s: %s", argv[0], es);
            return -1;
        }
        if (kt_etcd__now_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            kt_etcd__errf(err, cap, "%s %s did not end in 20 s", argv[0], argv[1] ? argv[1] : "");
            return -1;
        }
        kt_etcd__sleep_ms(2);
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    {
        char how[64], tail[200];
        kt_etcd__describe_exit(st, how, sizeof how);
        kt_etcd__tail(log_path, tail, sizeof tail);
        kt_etcd__errf(err, cap, "%s %s %s; log %s ends: %s", argv[0], argv[1] ? argv[1] : "", how, log_path, tail);
    }
    return -1;
}

/* The CA, the server's and the client's certificates and the other CA in
   <dir>/tls (see TLS in the header). */
static int kt_etcd__make_tls(kt_etcd_cluster *c) {
    static const char cnf_text[] =
        "# made by the kctl etcd harness\n"
        "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = kctl-test\n"
        "[ca_ext]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\n"
        "subjectKeyIdentifier = hash\n"
        "[server_ext]\nbasicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage = serverAuth,clientAuth\nsubjectAltName = IP:127.0.0.1\n"
        "subjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n"
        "[client_ext]\nbasicConstraints = critical,CA:FALSE\nkeyUsage = critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage = clientAuth\nsubjectKeyIdentifier = hash\nauthorityKeyIdentifier = keyid\n";
    kt_etcd_tls_files *f = &c->tls;
    char dir[264], cnf[300], log[300], scsr[300], ccsr[300];
    const char *ossl, *why;
    FILE *cf;
    int k;
    if ((why = kt_etcd_tls_unavailable()) != NULL) {
        kt_etcd__errf(c->error, sizeof c->error, "%s", why);
        return -1;
    }
    ossl = kt_etcd__ossl_path;
    snprintf(dir, sizeof dir, "%s/tls", c->dir);
    if (mkdir(dir, 0700) != 0) {
        char es[96];
        kt_etcd__strerr(errno, es, sizeof es);
        kt_etcd__errf(c->error, sizeof c->error, "mkdir %s: %s", dir, es);
        return -1;
    }
    snprintf(cnf, sizeof cnf, "%s/openssl.cnf", dir);
    snprintf(log, sizeof log, "%s/openssl.log", dir);
    snprintf(scsr, sizeof scsr, "%s/server.csr", dir);
    snprintf(ccsr, sizeof ccsr, "%s/client.csr", dir);
    snprintf(f->ca, sizeof f->ca, "%s/ca.crt", dir);
    snprintf(f->server_cert, sizeof f->server_cert, "%s/server.crt", dir);
    snprintf(f->server_key, sizeof f->server_key, "%s/server.key", dir);
    snprintf(f->client_cert, sizeof f->client_cert, "%s/client.crt", dir);
    snprintf(f->client_key, sizeof f->client_key, "%s/client.key", dir);
    snprintf(f->other_ca, sizeof f->other_ca, "%s/other-ca.crt", dir);
    snprintf(f->other_ca_key, sizeof f->other_ca_key, "%s/other-ca.key", dir);
    if (!(cf = fopen(cnf, "w")) || fputs(cnf_text, cf) < 0 || fclose(cf) != 0) {
        kt_etcd__errf(c->error, sizeof c->error, "cannot write %s", cnf);
        return -1;
    }
    {
        char ca_key[300];
        snprintf(ca_key, sizeof ca_key, "%s/ca.key", dir);
#define KT_ETCD__NEWKEY "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"
        {
            /* the CA, the server's and the client's requests, their
               certificates, the other CA */
            const char *steps[][32] = {
                { ossl, "req", "-x509", "-config", cnf, KT_ETCD__NEWKEY, "-keyout", ca_key, "-out", f->ca, "-days", "2",
                  "-subj", "/CN=kctl-test-ca", "-extensions", "ca_ext", NULL },
                { ossl, "req", "-new", "-config", cnf, KT_ETCD__NEWKEY, "-keyout", f->server_key, "-out", scsr,
                  "-subj", "/CN=127.0.0.1", NULL },
                { ossl, "x509", "-req", "-in", scsr, "-CA", f->ca, "-CAkey", ca_key, "-set_serial", "2", "-days", "2",
                  "-out", f->server_cert, "-extfile", cnf, "-extensions", "server_ext", NULL },
                { ossl, "req", "-new", "-config", cnf, KT_ETCD__NEWKEY, "-keyout", f->client_key, "-out", ccsr,
                  "-subj", "/CN=kctl-test-client", NULL },
                { ossl, "x509", "-req", "-in", ccsr, "-CA", f->ca, "-CAkey", ca_key, "-set_serial", "3", "-days", "2",
                  "-out", f->client_cert, "-extfile", cnf, "-extensions", "client_ext", NULL },
                { ossl, "req", "-x509", "-config", cnf, KT_ETCD__NEWKEY, "-keyout", f->other_ca_key, "-out", f->other_ca,
                  "-days", "2", "-subj", "/CN=kctl-test-other-ca", "-extensions", "ca_ext", NULL },
            };
#undef KT_ETCD__NEWKEY
            for (k = 0; k < (int)(sizeof steps / sizeof steps[0]); k++)
                if (kt_etcd__run((char *const *)(uintptr_t)steps[k], log, c->error, sizeof c->error) != 0) return -1;
        }
    }
    return 0;
}

static int kt_etcd__spawn(kt_etcd_cluster *c, int i, bool existing) {
    kt_etcd_member *m = &c->m[i];
    const char *bin = kt_etcd_bin();
    char ic[KT_ETCD_MAX_MEMBERS * 48], pn[64], hb[48], el[48], ttl[48], es[96];
    char *argv[64];
    int argc = 0, k, logfd, nullfd;
    sigset_t all, old;
    pid_t parent, pid;
    FILE *lf;
    if (c->nstarted >= KT_ETCD_MAX_STARTS) {
        kt_etcd__errf(c->error, sizeof c->error, "%s: more than %d starts in one cluster", m->name, KT_ETCD_MAX_STARTS);
        return -1;
    }
    ic[0] = '\0';
    for (k = 0; k < c->n; k++) {
        size_t l = strlen(ic);
        snprintf(ic + l, sizeof ic - l, "%s%s=%s", k ? "," : "", c->m[k].name, c->m[k].peer_url);
    }
    snprintf(pn, sizeof pn, "--experimental-watch-progress-notify-interval=%dms", c->opts.progress_notify_ms);
    argv[argc++] = (char *)bin;
    argv[argc++] = (char *)"--name";
    argv[argc++] = m->name;
    argv[argc++] = (char *)"--data-dir";
    argv[argc++] = m->data_dir;
    argv[argc++] = (char *)"--listen-client-urls";
    argv[argc++] = m->url;
    argv[argc++] = (char *)"--advertise-client-urls";
    argv[argc++] = m->url;
    argv[argc++] = (char *)"--listen-peer-urls";
    argv[argc++] = m->peer_url;
    argv[argc++] = (char *)"--initial-advertise-peer-urls";
    argv[argc++] = m->peer_url;
    argv[argc++] = (char *)"--initial-cluster";
    argv[argc++] = ic;
    argv[argc++] = (char *)"--initial-cluster-state";
    argv[argc++] = (char *)(existing ? "existing" : "new");
    argv[argc++] = (char *)"--initial-cluster-token";
    argv[argc++] = c->token;
    argv[argc++] = pn;
    argv[argc++] = (char *)"--logger=zap";
    argv[argc++] = (char *)"--log-outputs=stderr";
    if (c->opts.heartbeat_ms > 0) {
        snprintf(hb, sizeof hb, "--heartbeat-interval=%d", c->opts.heartbeat_ms);
        argv[argc++] = hb;
    }
    if (c->opts.election_ms > 0) {
        snprintf(el, sizeof el, "--election-timeout=%d", c->opts.election_ms);
        argv[argc++] = el;
    }
    if (c->opts.auth_token_ttl_s > 0) {
        snprintf(ttl, sizeof ttl, "--auth-token-ttl=%d", c->opts.auth_token_ttl_s);
        argv[argc++] = ttl;
    }
    if (c->opts.tls != KT_ETCD_TLS_NONE) {
        argv[argc++] = (char *)"--listen-metrics-urls";
        argv[argc++] = m->metrics_url;
        argv[argc++] = (char *)"--cert-file";
        argv[argc++] = c->tls.server_cert;
        argv[argc++] = (char *)"--key-file";
        argv[argc++] = c->tls.server_key;
        if (c->opts.tls == KT_ETCD_TLS_MTLS) {
            argv[argc++] = (char *)"--trusted-ca-file";
            argv[argc++] = c->tls.ca;
            argv[argc++] = (char *)"--client-cert-auth";
        }
    }
    for (k = 0; c->opts.extra_args && c->opts.extra_args[k] && argc < 63; k++) argv[argc++] = (char *)c->opts.extra_args[k];
    argv[argc] = NULL;

    /* the command line heads the member's log */
    if ((lf = fopen(m->log_path, "a")) != NULL) {
        fprintf(lf, "=== kctl etcd harness: starting %s (%s):", m->name, existing ? "restart" : "new");
        for (k = 0; k < argc; k++) fprintf(lf, " %s", argv[k]);
        fputc('\n', lf);
        fclose(lf);
    }
    logfd = open(m->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (logfd < 0 || nullfd < 0) {
        kt_etcd__strerr(errno, es, sizeof es);
        kt_etcd__errf(c->error, sizeof c->error, "%s: open %s: %s", m->name, m->log_path, es);
        if (logfd >= 0) close(logfd);
        if (nullfd >= 0) close(nullfd);
        return -1;
    }
    /* No signal handler may run in the child before exec (ours would kill
       the siblings): block everything across fork. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    parent = getpid();
    pid = fork();
    if (pid == 0) {
        sigset_t none;
        for (k = 0; k < KT_ETCD__NSIGS; k++) {
            struct sigaction dfl;
            memset(&dfl, 0, sizeof dfl);
            dfl.sa_handler = SIG_DFL;
            sigemptyset(&dfl.sa_mask);
            sigaction(kt_etcd__sigs[k], &dfl, NULL);
        }
        setpgid(0, 0);
#ifdef __linux__
        if (!c->opts.no_pdeathsig) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(126); /* the parent died before prctl */
        }
#endif
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(nullfd, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        execv(bin, argv);
        {
            static const char msg[] = "=== kctl etcd harness: exec failed\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
        }
        _exit(127);
    }
    if (pid > 0) {
        setpgid(pid, pid); /* also here: whichever runs first */
        if (!kt_etcd__register(pid)) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            pid = -2;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(logfd);
    close(nullfd);
    if (pid < 0) {
        if (pid == -1) kt_etcd__strerr(errno, es, sizeof es);
        else snprintf(es, sizeof es, "the harness's process table is full");
        kt_etcd__errf(c->error, sizeof c->error, "%s: fork: %s", m->name, es);
        return -1;
    }
    m->pid = pid;
    m->state = KT_ETCD_RUNNING;
    c->started[c->nstarted++] = pid;
    return 0;
}

/* Wait until each member in mask (RUNNING ones) answers /health true. */
static int kt_etcd__wait_health(kt_etcd_cluster *c, unsigned mask, int timeout_ms) {
    double t0 = kt_etcd__now_ms(), deadline = t0 + timeout_ms;
    unsigned healthy = 0;
    kt_etcd_reply r;
    int i;
    memset(&r, 0, sizeof r);
    for (;;) {
        unsigned want = 0;
        for (i = 0; i < c->n; i++) {
            kt_etcd_member *m = &c->m[i];
            double left;
            int st;
            if (!(mask & (1u << i)) || m->state != KT_ETCD_RUNNING) continue;
            want |= 1u << i;
            if (healthy & (1u << i)) continue;
            if (kt_etcd__reap(m->pid, 0, &st)) {
                char how[64], tail[200];
                kt_etcd__describe_exit(st, how, sizeof how);
                kt_etcd__tail(m->log_path, tail, sizeof tail);
                kt_etcd__errf(c->error, sizeof c->error, "%s (pid %ld) %s before it was healthy; log %s ends: %s", m->name,
                              (long)m->pid, how, m->log_path, tail);
                m->pid = 0;
                m->state = KT_ETCD_DOWN;
                kt_etcd_reply_free(&r);
                return -1;
            }
            left = deadline - kt_etcd__now_ms();
            if (left < 1) left = 1;
            if (kt_etcd_http(m->metrics_url[0] ? m->metrics_url : m->url, "GET", "/health", NULL, NULL,
                             left < 1000 ? (int)left : 1000, &r) == 0 && r.body &&
                strstr(r.body, "\"health\":\"true\""))
                healthy |= 1u << i;
        }
        if ((healthy & want) == want) break;
        if (kt_etcd__now_ms() >= deadline) {
            for (i = 0; i < c->n; i++) {
                if ((want & (1u << i)) && !(healthy & (1u << i))) {
                    char tail[200];
                    kt_etcd__tail(c->m[i].log_path, tail, sizeof tail);
                    kt_etcd__errf(c->error, sizeof c->error, "%s not healthy after %d ms (last: HTTP %d %.60s %.80s); log %s ends: %s",
                                  c->m[i].name, timeout_ms, r.http, r.body ? r.body : "", r.error, c->m[i].log_path, tail);
                    break;
                }
            }
            kt_etcd_reply_free(&r);
            return -1;
        }
        kt_etcd__sleep_ms(50);
    }
    kt_etcd_reply_free(&r);
    return 0;
}

static void kt_etcd__layout(kt_etcd_cluster *c, const int *ports) {
    int i, per = c->opts.tls != KT_ETCD_TLS_NONE ? 3 : 2;
    const char *scheme = c->opts.tls != KT_ETCD_TLS_NONE ? "https" : "http";
    c->endpoints[0] = '\0';
    for (i = 0; i < c->n; i++) {
        kt_etcd_member *m = &c->m[i];
        size_t l = strlen(c->endpoints);
        m->name[0] = 'm'; /* m1 .. m5 */
        m->name[1] = (char)('1' + i);
        m->name[2] = '\0';
        m->client_port = ports[per * i];
        m->peer_port = ports[per * i + 1];
        m->metrics_port = per == 3 ? ports[per * i + 2] : 0;
        snprintf(m->url, sizeof m->url, "%s://127.0.0.1:%d", scheme, m->client_port);
        snprintf(m->peer_url, sizeof m->peer_url, "http://127.0.0.1:%d", m->peer_port);
        if (m->metrics_port) snprintf(m->metrics_url, sizeof m->metrics_url, "http://127.0.0.1:%d", m->metrics_port);
        else m->metrics_url[0] = '\0';
        snprintf(m->data_dir, sizeof m->data_dir, "%s/%s", c->dir, m->name);
        snprintf(m->log_path, sizeof m->log_path, "%s/%s.log", c->dir, m->name);
        snprintf(c->endpoints + l, sizeof c->endpoints - l, "%s%s", i ? "," : "", m->url);
    }
}

int kt_etcd_start(kt_etcd_cluster *c, const kt_etcd_opts *opts) {
    static unsigned counter;
    const char *tmp = getenv("TMPDIR"), *why;
    int ports[3 * KT_ETCD_MAX_MEMBERS], attempt, i, per;
    if (!c) return -1;
    memset(c, 0, sizeof *c);
    if (opts) c->opts = *opts;
    if (c->opts.members == 0) c->opts.members = 1;
    if (c->opts.progress_notify_ms <= 0) c->opts.progress_notify_ms = 1000;
    if (c->opts.start_timeout_ms <= 0) c->opts.start_timeout_ms = 20000;
    if (c->opts.members < 1 || c->opts.members > KT_ETCD_MAX_MEMBERS) {
        kt_etcd__errf(c->error, sizeof c->error, "members %d: 1..%d", c->opts.members, KT_ETCD_MAX_MEMBERS);
        return -1;
    }
    if (c->opts.tls != KT_ETCD_TLS_NONE && c->opts.tls != KT_ETCD_TLS_SERVER && c->opts.tls != KT_ETCD_TLS_MTLS) {
        kt_etcd__errf(c->error, sizeof c->error, "tls %d: KT_ETCD_TLS_NONE, _SERVER or _MTLS", (int)c->opts.tls);
        return -1;
    }
    c->n = c->opts.members;
    per = c->opts.tls != KT_ETCD_TLS_NONE ? 3 : 2;
    if ((why = kt_etcd_unavailable()) != NULL || (c->opts.tls != KT_ETCD_TLS_NONE && (why = kt_etcd_tls_unavailable()) != NULL)) {
        kt_etcd__errf(c->error, sizeof c->error, "%s", why);
        return -1;
    }
    kt_etcd__hook();
    if (!tmp || !*tmp) tmp = "/tmp";
    if ((size_t)snprintf(c->dir, sizeof c->dir, "%s/kctl-etcd-XXXXXX", tmp) >= sizeof c->dir - 16 || !mkdtemp(c->dir)) {
        char es[96];
        kt_etcd__strerr(errno, es, sizeof es);
        kt_etcd__errf(c->error, sizeof c->error, "mkdtemp under %s: %s", tmp, es);
        c->dir[0] = '\0';
        return -1;
    }
    pthread_mutex_lock(&kt_etcd__mu);
    counter++;
    snprintf(c->token, sizeof c->token, "kctl-test-%ld-%u-%u", (long)getpid(), counter, kt_etcd__seed & 0xffffu);
    pthread_mutex_unlock(&kt_etcd__mu);
    if (c->opts.tls != KT_ETCD_TLS_NONE && kt_etcd__make_tls(c) != 0) return -1;
    for (attempt = 0; attempt < 3; attempt++) {
        bool port_race = false;
        if (kt_etcd__pick_ports(ports, per * c->n, c->error, sizeof c->error) != 0) return -1;
        kt_etcd__layout(c, ports);
        for (i = 0; i < c->n; i++) {
            kt_etcd__rmtree(c->m[i].data_dir); /* a retry starts afresh */
            if (kt_etcd__spawn(c, i, false) != 0) break;
        }
        if (i == c->n && kt_etcd__wait_health(c, (1u << c->n) - 1, c->opts.start_timeout_ms) == 0) return 0;
        for (i = 0; i < c->n; i++) {
            kt_etcd__hard_kill(&c->m[i]);
            if (kt_etcd__file_has(c->m[i].log_path, "address already in use")) port_race = true;
        }
        if (!port_race) break;
    }
    return -1;
}

void kt_etcd_destroy(kt_etcd_cluster *c, bool keep_files) {
    const char *env = getenv("KCTL_ETCD_KEEP");
    int i;
    if (!c) return;
    for (i = 0; i < c->n && i < KT_ETCD_MAX_MEMBERS; i++) kt_etcd__hard_kill(&c->m[i]);
    if (!c->dir[0]) return;
    if (keep_files || (env && *env && strcmp(env, "0") != 0)) {
        fprintf(stderr, "etcd harness: kept %s (member logs m*.log)\n", c->dir);
        return;
    }
    kt_etcd__rmtree(c->dir);
}

static int kt_etcd__check(kt_etcd_cluster *c, int i) {
    if (!c || i < 0 || i >= c->n) {
        if (c) kt_etcd__errf(c->error, sizeof c->error, "no member %d", i);
        return -1;
    }
    return 0;
}

int kt_etcd_kill(kt_etcd_cluster *c, int i) {
    if (kt_etcd__check(c, i)) return -1;
    if (c->m[i].state == KT_ETCD_DOWN) {
        kt_etcd__errf(c->error, sizeof c->error, "%s is down", c->m[i].name);
        return -1;
    }
    kt_etcd__hard_kill(&c->m[i]);
    return 0;
}

int kt_etcd_term(kt_etcd_cluster *c, int i, int timeout_ms) {
    kt_etcd_member *m;
    if (kt_etcd__check(c, i)) return -1;
    m = &c->m[i];
    if (m->state == KT_ETCD_DOWN) {
        kt_etcd__errf(c->error, sizeof c->error, "%s is down", m->name);
        return -1;
    }
    kill(m->pid, SIGTERM);
    if (m->state == KT_ETCD_FROZEN) kill(m->pid, SIGCONT);
    if (kt_etcd__reap(m->pid, timeout_ms > 0 ? timeout_ms : 10000, NULL)) {
        m->pid = 0;
        m->state = KT_ETCD_DOWN;
        return 0;
    }
    kt_etcd__hard_kill(m);
    return 1;
}

int kt_etcd_member_start(kt_etcd_cluster *c, int i) {
    if (kt_etcd__check(c, i)) return -1;
    if (c->m[i].state != KT_ETCD_DOWN) {
        kt_etcd__errf(c->error, sizeof c->error, "%s is not down", c->m[i].name);
        return -1;
    }
    return kt_etcd__spawn(c, i, true);
}

int kt_etcd_restart(kt_etcd_cluster *c, int i, int timeout_ms) {
    if (kt_etcd_member_start(c, i) != 0) return -1;
    return kt_etcd__wait_health(c, 1u << i, timeout_ms > 0 ? timeout_ms : 20000);
}

static int kt_etcd__signal(kt_etcd_cluster *c, int i, kt_etcd_state from, int sig, kt_etcd_state to) {
    if (kt_etcd__check(c, i)) return -1;
    if (c->m[i].state != from || kill(c->m[i].pid, sig) != 0) {
        kt_etcd__errf(c->error, sizeof c->error, "%s: cannot send signal %d in state %d", c->m[i].name, sig,
                      (int)c->m[i].state);
        return -1;
    }
    c->m[i].state = to;
    return 0;
}

/* SIGSTOP is delivered asynchronously: a thread of the member may still
   run (and answer a request) after kill() returned. The stop is complete
   when waitpid reports it (the last thread to stop reports it). */
int kt_etcd_freeze(kt_etcd_cluster *c, int i) {
    double deadline;
    if (kt_etcd__signal(c, i, KT_ETCD_RUNNING, SIGSTOP, KT_ETCD_FROZEN) != 0) return -1;
    deadline = kt_etcd__now_ms() + 5000;
    for (;;) {
        int st = 0;
        pid_t w = waitpid(c->m[i].pid, &st, WUNTRACED | WNOHANG);
        if (w == c->m[i].pid && WIFSTOPPED(st)) return 0;
        if (w == c->m[i].pid && (WIFEXITED(st) || WIFSIGNALED(st))) {
            kt_etcd__errf(c->error, sizeof c->error, "%s exited while being frozen", c->m[i].name);
            kt_etcd__unregister(c->m[i].pid);
            c->m[i].pid = 0;
            c->m[i].state = KT_ETCD_DOWN;
            return -1;
        }
        if (w < 0 && errno != EINTR) break;
        if (kt_etcd__now_ms() >= deadline) break;
        kt_etcd__sleep_ms(1);
    }
    kt_etcd__errf(c->error, sizeof c->error, "%s: SIGSTOP sent, but no stop reported in 5 s", c->m[i].name);
    return -1;
}
int kt_etcd_thaw(kt_etcd_cluster *c, int i) { return kt_etcd__signal(c, i, KT_ETCD_FROZEN, SIGCONT, KT_ETCD_RUNNING); }

int kt_etcd_quorum_lose(kt_etcd_cluster *c, int keep, unsigned *stopped) {
    int i, kept;
    unsigned mask = 0;
    if (stopped) *stopped = 0;
    if (kt_etcd__check(c, keep)) return -1;
    kept = c->n / 2; /* at most n/2 members left: no majority */
    if (kept < 1) {
        kt_etcd__errf(c->error, sizeof c->error, "one member has no quorum to lose");
        return -1;
    }
    for (i = 0; i < c->n; i++) {
        if (c->m[i].state != KT_ETCD_RUNNING) {
            kt_etcd__errf(c->error, sizeof c->error, "%s is not running", c->m[i].name);
            return -1;
        }
    }
    for (i = 0; i < c->n; i++) {
        int from_keep = (i - keep + c->n) % c->n;
        if (from_keep < kept) continue;
        kt_etcd__hard_kill(&c->m[i]);
        mask |= 1u << i;
    }
    if (stopped) *stopped = mask;
    return 0;
}

int kt_etcd_quorum_restore(kt_etcd_cluster *c, int timeout_ms) {
    int i;
    if (!c) return -1;
    for (i = 0; i < c->n; i++)
        if (c->m[i].state == KT_ETCD_DOWN && kt_etcd__spawn(c, i, true) != 0) return -1;
    return kt_etcd_wait_healthy(c, timeout_ms);
}

int kt_etcd_wait_healthy(kt_etcd_cluster *c, int timeout_ms) {
    if (!c) return -1;
    return kt_etcd__wait_health(c, (1u << c->n) - 1, timeout_ms > 0 ? timeout_ms : 20000);
}

int kt_etcd_leader(kt_etcd_cluster *c, int timeout_ms) {
    double deadline = kt_etcd__now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
    if (!c) return -1;
    for (;;) {
        long long best_term = -1;
        int i, best = -1;
        for (i = 0; i < c->n; i++) {
            kt_etcd_status st;
            if (c->m[i].state != KT_ETCD_RUNNING) continue;
            if (c->m[i].metrics_url[0]) { /* TLS: the gauge on the plain metrics port */
                kt_etcd_reply r;
                bool lead;
                memset(&r, 0, sizeof r);
                lead = kt_etcd_http(c->m[i].metrics_url, "GET", "/metrics", NULL, NULL, 1000, &r) == 0 && r.body &&
                       strstr(r.body, "\netcd_server_is_leader 1") != NULL;
                kt_etcd_reply_free(&r);
                if (lead) return i;
                continue;
            }
            if (kt_etcd_member_status(c->m[i].url, 1000, &st, NULL) == 0 && st.leader != 0 && st.leader == st.member_id &&
                st.raft_term > best_term) {
                best_term = st.raft_term;
                best = i;
            }
        }
        if (best >= 0) return best;
        if (kt_etcd__now_ms() + 50 >= deadline) {
            kt_etcd__errf(c->error, sizeof c->error, "no leader among the running members");
            return -1;
        }
        kt_etcd__sleep_ms(50);
    }
}

int kt_etcd_move_leader(kt_etcd_cluster *c, int i, const char *token, int timeout_ms) {
    double deadline = kt_etcd__now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
    kt_etcd_status st;
    char body[96];
    int lead;
    if (!c || i < 0 || i >= c->n) return -1;
    if (kt_etcd_member_status(c->m[i].url, 3000, &st, NULL) != 0) {
        kt_etcd__errf(c->error, sizeof c->error, "member %d: no status", i);
        return -1;
    }
    while ((lead = kt_etcd_leader(c, (int)(deadline - kt_etcd__now_ms()))) != i) {
        kt_etcd_reply r;
        if (lead < 0) return -1;
        memset(&r, 0, sizeof r);
        snprintf(body, sizeof body, "{\"targetID\":\"%llu\"}", st.member_id);
        (void)kt_etcd_http(c->m[lead].url, "POST", "/v3/maintenance/transfer-leadership", body, token, 5000, &r);
        kt_etcd_reply_free(&r);
        if (kt_etcd__now_ms() + 50 >= deadline) {
            kt_etcd__errf(c->error, sizeof c->error, "member %d did not become the leader", i);
            return -1;
        }
        kt_etcd__sleep_ms(50);
    }
    return 0;
}

/* pid alive and one of this cluster's etcds (its command line names the
   cluster's directory); a zombie is dead. */
static bool kt_etcd__ours_alive(const kt_etcd_cluster *c, pid_t pid) {
    char path[64], buf[4096];
    FILE *f;
    size_t n, k;
    bool ours = true;
    if (pid <= 0 || kill(pid, 0) != 0) return false;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if ((f = fopen(path, "r")) != NULL) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        {
            const char *rp = strrchr(buf, ')');
            if (rp && rp[1] == ' ' && rp[2] == 'Z') return false;
        }
    }
    snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
    if ((f = fopen(path, "r")) != NULL) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (k = 0; k < n; k++)
            if (buf[k] == '\0') buf[k] = ' ';
        buf[n] = '\0';
        ours = c->dir[0] && strstr(buf, c->dir) != NULL;
    }
    return ours;
}

int kt_etcd_leftovers(const kt_etcd_cluster *c) {
    int k, n = 0;
    if (!c) return 0;
    for (k = 0; k < c->nstarted; k++)
        if (kt_etcd__ours_alive(c, c->started[k])) n++;
    return n;
}

static bool kt_etcd__port_listened(int port) {
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    bool used;
    if (fd < 0 || port <= 0) {
        if (fd >= 0) close(fd);
        return false;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((unsigned short)port);
    used = bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno == EADDRINUSE;
    close(fd);
    return used;
}

int kt_etcd_ports_in_use(const kt_etcd_cluster *c) {
    int i, n = 0;
    if (!c) return 0;
    for (i = 0; i < c->n; i++)
        n += (int)kt_etcd__port_listened(c->m[i].client_port) + (int)kt_etcd__port_listened(c->m[i].peer_port) +
             (c->m[i].metrics_port ? (int)kt_etcd__port_listened(c->m[i].metrics_port) : 0);
    return n;
}
