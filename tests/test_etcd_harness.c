/* test_etcd_harness.c - the etcd harness does what tests/etcd_harness.h
   says, against the real etcd: clusters of 1 and 3 members, every fault
   it offers, and no process or port of ours left after any test, even
   when the test process dies. (Waiting here is waiting for real
   processes, not kctl's clock: the polls have deadlines, never sleeps
   whose length decides a result.) */
#include "kt.h"
#include "etcd_harness.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef KT_HAVE_CURL
#include <curl/curl.h>
#endif

/* Every test ends here: destroy (keeping the files when it failed), then
   no process it started is alive, none of its ports has a listener and
   its directory is gone. */
static void teh_end(kt_etcd_cluster *c) {
    const char *keep_env = getenv("KCTL_ETCD_KEEP");
    bool keep = kt.cur_failed > 0;
    kt_etcd_destroy(c, keep);
    KT_EQ_INT(kt_etcd_leftovers(c), 0);
    KT_EQ_INT(kt_etcd_ports_in_use(c), 0);
    if (!keep && !(keep_env && *keep_env && strcmp(keep_env, "0") != 0) && c->dir[0])
        KT_CHECK(access(c->dir, F_OK) != 0);
}

#define TEH_START(c, o) do { \
    if (kt_etcd_start((c), (o)) != 0) { \
        kt_fail(__FILE__, __LINE__, "etcd start: %s", (c)->error); \
        teh_end(c); \
        return; \
    } } while (0)

static void teh_nap(int ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* PUT through url until it succeeds or deadline_ms passes (an election
   may be under way); each try bounded by 2 s. */
static int teh_put_retry(const char *url, const char *key, const char *val, int deadline_ms, kt_etcd_reply *r) {
    int waited = 0;
    for (;;) {
        if (kt_etcd_put(url, NULL, key, val, 2000, r) == 0) return 0;
        if (waited >= deadline_ms) return -1;
        teh_nap(100);
        waited += 100 + (int)r->ms;
    }
}

/* The value of key as member url sees it (serializable: its own store),
   or NULL; the caller frees it. */
static char *teh_get(const char *url, const char *key, int flags) {
    char *v = NULL;
    kt_etcd_reply r = {0};
    if (kt_etcd_get(url, NULL, key, 0, flags, &v, NULL, 3000, &r) != 0)
        kt_fail(__FILE__, __LINE__, "get %s via %s: HTTP %d %s", key, url, r.http, r.error);
    kt_etcd_reply_free(&r);
    return v;
}

static bool teh_dead(pid_t pid) {
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* One member: its URL is the endpoints, put/get round trips text that
   needs base64 (quotes, bytes over 127), a missing key is no value, the
   member leads itself, and the gateway answers GET. */
static void teh_single_member(void) {
    kt_etcd_cluster c;
    kt_etcd_reply r = {0};
    kt_etcd_status st;
    char *v = NULL;
    long long mod = 0, rev;
    const char *text = "{\"a\":\"caf\xc3\xa9\",\"n\":[1,2]}";
    KT_ETCD_REQUIRE();
    TEH_START(&c, NULL);
    KT_EQ_INT(c.n, 1);
    KT_EQ_STR(c.endpoints, c.m[0].url);
    KT_CHECK(c.m[0].client_port != c.m[0].peer_port);
    KT_EQ_INT(c.m[0].state, KT_ETCD_RUNNING);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k/a", text, 0, &r), 0);
    KT_EQ_INT(r.http, 200);
    rev = r.revision;
    KT_CHECK(rev >= 2);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, NULL, "k/a", 0, 0, &v, &mod, 0, &r), 0);
    KT_EQ_STR(v, text);
    KT_EQ_INT(mod, rev);
    free(v);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k/empty", "", 0, &r), 0);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, NULL, "k/empty", 0, 0, &v, NULL, 0, &r), 0);
    KT_EQ_STR(v, "");
    free(v);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, NULL, "k/none", 0, 0, &v, &mod, 0, &r), 0);
    KT_CHECK(v == NULL);
    KT_EQ_INT(mod, 0);
    KT_EQ_INT(r.revision, rev + 1);
    KT_EQ_INT(kt_etcd_member_status(c.m[0].url, 0, &st, &r), 0);
    KT_CHECK(st.member_id != 0 && st.cluster_id != 0);
    KT_EQ_U64(st.leader, st.member_id);
    KT_EQ_INT(st.revision, rev + 1);
    KT_EQ_INT(kt_etcd_revision(c.m[0].url, NULL, 0, &mod, &r), 0);
    KT_EQ_INT(mod, rev + 1);
    KT_EQ_INT(kt_etcd_leader(&c, 0), 0);
    KT_EQ_INT(kt_etcd_http(c.m[0].url, "GET", "/version", NULL, NULL, 0, &r), 0);
    KT_CHECK(r.body && strstr(r.body, "\"etcdserver\":\"3."));
    /* bad input gets the gateway's error, not a hang */
    KT_EQ_INT(kt_etcd_http(c.m[0].url, "POST", "/v3/kv/put", "{\"key\":\"not base64!\"}", NULL, 0, &r), -1);
    KT_EQ_INT(r.http, 400);
    KT_EQ_INT(r.code, 3);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* progress_notify_ms reaches etcd: a watch (of the prefix w/, from the
   revision of a write under it) read for 2 s at a 250 ms interval holds
   the write's event and header-only progress messages (etcd's default,
   10 min, would send none). */
static void teh_progress_notify(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    const char *p;
    char *kb, *eb, body[200];
    int results = 0;
    KT_ETCD_REQUIRE(); /* (before the allocations: a skip returns here) */
    kb = kt_etcd_b64("w/", 2);
    eb = kt_etcd_b64("w0", 2);
    memset(&o, 0, sizeof o);
    o.progress_notify_ms = 250;
    TEH_START(&c, &o);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "w/a", "1", 0, &r), 0);
    snprintf(body, sizeof body,
             "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\",\"start_revision\":\"%lld\",\"progress_notify\":true}}",
             kb ? kb : "", eb ? eb : "", r.revision);
    free(kb);
    free(eb);
    KT_EQ_INT(kt_etcd_http(c.m[0].url, "POST", "/v3/watch", body, NULL, 2000, &r), -1);
    KT_EQ_INT(r.http, 200);
    KT_CHECK(strstr(r.error, "timeout") != NULL);
    KT_CHECK(r.body && strstr(r.body, "\"created\":true"));
    KT_CHECK(r.body && strstr(r.body, "\"events\":[{\"kv\":{\"key\":\"dy9h\""));
    for (p = r.body; p && (p = strstr(p, "{\"result\":{\"header\":{")) != NULL; p++) {
        const char *end = strchr(p, '\n');
        const char *hdr_close = strstr(p, "}");
        if (end && hdr_close && hdr_close[1] == '}' && hdr_close + 3 <= end) results++; /* header, nothing else */
    }
    KT_CHECK(results >= 2);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* Three members: a write through each is read through every one, they
   agree on one cluster and one leader. */
static void teh_three_members(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    kt_etcd_status st[3];
    char key[16], val[16], *v;
    int i, j, leader;
    KT_ETCD_REQUIRE();
    memset(&o, 0, sizeof o);
    o.members = 3;
    TEH_START(&c, &o);
    KT_EQ_INT(c.n, 3);
    for (i = 0; i < 3; i++) {
        KT_CHECK(strstr(c.endpoints, c.m[i].url) != NULL);
        for (j = 0; j < i; j++) KT_CHECK(c.m[i].client_port != c.m[j].client_port && c.m[i].peer_port != c.m[j].peer_port);
    }
    KT_CHECK(strchr(c.endpoints, ',') && strchr(strchr(c.endpoints, ',') + 1, ','));
    for (i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "k/%d", i);
        snprintf(val, sizeof val, "v%d", i);
        KT_EQ_INT(kt_etcd_put(c.m[i].url, NULL, key, val, 0, &r), 0);
        for (j = 0; j < 3; j++) {
            v = teh_get(c.m[j].url, key, 0);
            KT_EQ_STR(v, val);
            free(v);
        }
    }
    leader = kt_etcd_leader(&c, 0);
    KT_CHECK(leader >= 0 && leader < 3);
    for (i = 0; i < 3; i++) KT_EQ_INT(kt_etcd_member_status(c.m[i].url, 0, &st[i], &r), 0);
    if (leader >= 0) {
        for (i = 0; i < 3; i++) {
            KT_EQ_U64(st[i].cluster_id, st[0].cluster_id);
            KT_EQ_U64(st[i].leader, st[leader].member_id);
        }
    }
    KT_CHECK(st[0].member_id != st[1].member_id && st[1].member_id != st[2].member_id && st[0].member_id != st[2].member_id);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* kill -9 the leader: its process is gone, the other two elect a new
   leader and serve writes. */
static void teh_kill9_leader(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    int leader, a, b, now;
    pid_t pid;
    char *v;
    KT_ETCD_REQUIRE();
    memset(&o, 0, sizeof o);
    o.members = 3;
    TEH_START(&c, &o);
    leader = kt_etcd_leader(&c, 0);
    KT_CHECK(leader >= 0);
    if (leader < 0) { teh_end(&c); return; }
    a = (leader + 1) % 3;
    b = (leader + 2) % 3;
    pid = c.m[leader].pid;
    KT_EQ_INT(kt_etcd_kill(&c, leader), 0);
    KT_EQ_INT(c.m[leader].state, KT_ETCD_DOWN);
    KT_EQ_INT(c.m[leader].pid, 0);
    KT_CHECK(teh_dead(pid));
    KT_EQ_INT(kt_etcd_kill(&c, leader), -1); /* already down */
    KT_EQ_INT(teh_put_retry(c.m[a].url, "k/after", "a", 15000, &r), 0);
    KT_EQ_INT(teh_put_retry(c.m[b].url, "k/after", "b", 15000, &r), 0);
    now = kt_etcd_leader(&c, 0);
    KT_CHECK(now >= 0 && now != leader);
    v = teh_get(c.m[a].url, "k/after", 0);
    KT_EQ_STR(v, "b");
    free(v);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* SIGTERM a follower (it exits by itself), write on, restart it: same
   ports, new process, and it catches up (its own store reaches the
   cluster's revision and holds the writes it missed). */
static void teh_term_restart(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    kt_etcd_status st, lst;
    char key[16], *v;
    int leader, f, i, port;
    long long rev = 0, seen = 0;
    pid_t old;
    KT_ETCD_REQUIRE();
    memset(&o, 0, sizeof o);
    o.members = 3;
    TEH_START(&c, &o);
    leader = kt_etcd_leader(&c, 0);
    KT_CHECK(leader >= 0);
    if (leader < 0) { teh_end(&c); return; }
    f = (leader + 1) % 3;
    old = c.m[f].pid;
    port = c.m[f].client_port;
    KT_EQ_INT(kt_etcd_term(&c, f, 10000), 0);
    KT_EQ_INT(c.m[f].state, KT_ETCD_DOWN);
    KT_CHECK(teh_dead(old));
    for (i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "k/%d", i);
        KT_EQ_INT(teh_put_retry(c.m[leader].url, key, "missed", 10000, &r), 0);
        rev = r.revision;
    }
    KT_EQ_INT(kt_etcd_member_status(c.m[f].url, 500, &st, &r), -1); /* nobody there */
    KT_EQ_INT(r.http, 0);
    if (kt_etcd_restart(&c, f, 20000) != 0) kt_fail(__FILE__, __LINE__, "restart: %s", c.error);
    KT_EQ_INT(c.m[f].client_port, port);
    KT_CHECK(c.m[f].pid > 0 && c.m[f].pid != old);
    KT_EQ_INT(kt_etcd_wait_revision(c.m[f].url, rev, 15000, &seen), 0);
    KT_CHECK(seen >= rev);
    v = teh_get(c.m[f].url, "k/4", KT_ETCD_SERIALIZABLE);
    KT_EQ_STR(v, "missed");
    free(v);
    KT_EQ_INT(kt_etcd_member_status(c.m[f].url, 0, &st, &r), 0);
    KT_EQ_INT(kt_etcd_member_status(c.m[leader].url, 0, &lst, &r), 0);
    KT_EQ_U64(st.cluster_id, lst.cluster_id); /* it rejoined the same cluster */
    KT_CHECK(st.leader != 0);
    KT_EQ_INT(kt_etcd_restart(&c, f, 0), -1); /* not down */
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* Two of three down: a write through the survivor fails within the
   request's timeout (no answer, or 503). Both back: writes work again
   and the restarted members serve them. */
static void teh_quorum_loss(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    unsigned stopped = 99;
    char *v;
    int rc;
    KT_ETCD_REQUIRE();
    memset(&o, 0, sizeof o);
    o.members = 3;
    TEH_START(&c, &o);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k/before", "x", 0, &r), 0);
    KT_EQ_INT(kt_etcd_quorum_lose(&c, 0, &stopped), 0);
    KT_EQ_INT(stopped, 6u);
    KT_EQ_INT(c.m[0].state, KT_ETCD_RUNNING);
    KT_EQ_INT(c.m[1].state, KT_ETCD_DOWN);
    KT_EQ_INT(c.m[2].state, KT_ETCD_DOWN);
    rc = kt_etcd_put(c.m[0].url, NULL, "k/lost", "y", 2000, &r);
    KT_EQ_INT(rc, -1);
    KT_CHECK(r.http == 0 || r.http == 503);
    if (r.http == 503) KT_EQ_INT(r.code, 14);
    /* a serializable read needs no quorum */
    v = teh_get(c.m[0].url, "k/before", KT_ETCD_SERIALIZABLE);
    KT_EQ_STR(v, "x");
    free(v);
    KT_EQ_INT(kt_etcd_quorum_lose(&c, 0, NULL), -1); /* already lost */
    if (kt_etcd_quorum_restore(&c, 20000) != 0) kt_fail(__FILE__, __LINE__, "restore: %s", c.error);
    KT_EQ_INT(teh_put_retry(c.m[0].url, "k/after", "z", 15000, &r), 0);
    v = teh_get(c.m[1].url, "k/after", 0);
    KT_EQ_STR(v, "z");
    free(v);
    v = teh_get(c.m[2].url, "k/after", 0);
    KT_EQ_STR(v, "z");
    free(v);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* SIGSTOP the leader: requests to it time out (bounded, http 0), the
   others elect a leader and serve writes; SIGCONT: it catches up. */
static void teh_freeze_thaw(void) {
    kt_etcd_cluster c;
    kt_etcd_opts o;
    kt_etcd_reply r = {0};
    kt_etcd_status st;
    long long rev;
    char *v;
    int leader, a, now;
    KT_ETCD_REQUIRE();
    memset(&o, 0, sizeof o);
    o.members = 3;
    TEH_START(&c, &o);
    leader = kt_etcd_leader(&c, 0);
    KT_CHECK(leader >= 0);
    if (leader < 0) { teh_end(&c); return; }
    a = (leader + 1) % 3;
    KT_EQ_INT(kt_etcd_freeze(&c, leader), 0);
    KT_EQ_INT(c.m[leader].state, KT_ETCD_FROZEN);
    KT_EQ_INT(kt_etcd_freeze(&c, leader), -1);
    KT_EQ_INT(kt_etcd_member_status(c.m[leader].url, 500, &st, &r), -1);
    KT_EQ_INT(r.http, 0);
    KT_CHECK(strstr(r.error, "timeout") != NULL);
    KT_EQ_INT(teh_put_retry(c.m[a].url, "k/frozen", "f", 15000, &r), 0);
    rev = r.revision;
    now = kt_etcd_leader(&c, 0);
    KT_CHECK(now >= 0 && now != leader);
    KT_EQ_INT(kt_etcd_thaw(&c, leader), 0);
    KT_EQ_INT(c.m[leader].state, KT_ETCD_RUNNING);
    KT_EQ_INT(kt_etcd_wait_revision(c.m[leader].url, rev, 15000, NULL), 0);
    v = teh_get(c.m[leader].url, "k/frozen", KT_ETCD_SERIALIZABLE);
    KT_EQ_STR(v, "f");
    free(v);
    /* destroy kills a frozen member too */
    KT_EQ_INT(kt_etcd_freeze(&c, a), 0);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* Compaction: a range below the compacted revision gets the gateway's
   400 code 11, at it still works; compacting lower again is 400 code 11;
   a future revision too. */
static void teh_compaction(void) {
    kt_etcd_cluster c;
    kt_etcd_reply r = {0};
    long long r1, r2, r3;
    char *v = NULL;
    KT_ETCD_REQUIRE();
    TEH_START(&c, NULL);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k", "1", 0, &r), 0);
    r1 = r.revision;
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k", "2", 0, &r), 0);
    r2 = r.revision;
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k", "3", 0, &r), 0);
    r3 = r.revision;
    KT_CHECK(r1 < r2 && r2 < r3);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, NULL, "k", r1, 0, &v, NULL, 0, &r), 0);
    KT_EQ_STR(v, "1");
    free(v);
    KT_EQ_INT(kt_etcd_compact(c.m[0].url, NULL, r2, 0, &r), 0);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, NULL, "k", r1, 0, &v, NULL, 0, &r), -1);
    KT_EQ_INT(r.http, 400);
    KT_EQ_INT(r.code, 11);
    KT_CHECK(strstr(r.error, "compacted") != NULL);
    KT_CHECK(v == NULL);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, NULL, "k", r2, 0, &v, NULL, 0, &r), 0);
    KT_EQ_STR(v, "2");
    free(v);
    KT_EQ_INT(kt_etcd_compact(c.m[0].url, NULL, r1, 0, &r), -1);
    KT_EQ_INT(r.http, 400);
    KT_EQ_INT(r.code, 11);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, NULL, "k", r3 + 100, 0, &v, NULL, 0, &r), -1);
    KT_EQ_INT(r.code, 11);
    KT_CHECK(strstr(r.error, "future") != NULL);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* Auth: enabled, a request without a token is refused (400 code 3), a
   wrong password too, a "Bearer" token is invalid (401 code 16), the
   raw token works; disabled again, no token is needed. */
static void teh_auth(void) {
    kt_etcd_cluster c;
    kt_etcd_reply r = {0};
    char token[128], bearer[160], *v = NULL;
    KT_ETCD_REQUIRE();
    TEH_START(&c, NULL);
    if (kt_etcd_auth_enable(c.m[0].url, "rootpw", 0, &r) != 0) kt_fail(__FILE__, __LINE__, "auth enable: HTTP %d %s", r.http, r.error);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k", "v", 0, &r), -1);
    KT_EQ_INT(r.http, 400);
    KT_EQ_INT(r.code, 3);
    KT_EQ_INT(kt_etcd_authenticate(c.m[0].url, "root", "wrong", token, sizeof token, 0, &r), -1);
    KT_EQ_INT(r.http, 400);
    KT_EQ_INT(r.code, 3);
    KT_EQ_STR(token, "");
    KT_EQ_INT(kt_etcd_authenticate(c.m[0].url, "root", "rootpw", token, sizeof token, 0, &r), 0);
    KT_CHECK(token[0] != '\0');
    KT_EQ_INT(kt_etcd_put(c.m[0].url, token, "k", "v", 0, &r), 0);
    KT_EQ_INT(kt_etcd_get(c.m[0].url, token, "k", 0, 0, &v, NULL, 0, &r), 0);
    KT_EQ_STR(v, "v");
    free(v);
    snprintf(bearer, sizeof bearer, "Bearer %s", token);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, bearer, "k", "w", 0, &r), -1);
    KT_EQ_INT(r.http, 401);
    KT_EQ_INT(r.code, 16);
    KT_EQ_INT(kt_etcd_auth_disable(c.m[0].url, token, 0, &r), 0);
    KT_EQ_INT(kt_etcd_put(c.m[0].url, NULL, "k", "x", 0, &r), 0);
    kt_etcd_reply_free(&r);
    teh_end(&c);
}

/* The test process dies with a cluster running (a child of the runner
   plays it): SIGKILL (the members' PR_SET_PDEATHSIG), SIGTERM (the
   handler), abort() (the handler, then the default action), exit()
   without destroy (atexit) and SIGSEGV (the handler, then the one it
   replaced: a sanitizer's, which reports and ends the process). Each time the members die and their ports
   are freed; the child still ends the way it was meant to. All but the
   first start their members without PR_SET_PDEATHSIG, which would
   otherwise kill them whatever the handlers do. */
static void teh_orphans_one(int how) {
    static const char *const names[] = { "SIGKILL", "SIGTERM", "abort", "exit", "SIGSEGV" };
    kt_etcd_cluster c;
    kt_etcd_opts o;
    int pfd[2], st = 0, waited = 0;
    size_t got = 0;
    pid_t child;
    fflush(stdout);
    fflush(stderr);
    if (pipe(pfd) != 0) { kt_fail(__FILE__, __LINE__, "pipe"); return; }
    child = fork();
    if (child < 0) { kt_fail(__FILE__, __LINE__, "fork"); return; }
    if (child == 0) {
        ssize_t w;
        close(pfd[0]);
        memset(&o, 0, sizeof o);
        o.no_pdeathsig = how != 0;
        if (kt_etcd_start(&c, &o) != 0) _exit(3);
        w = write(pfd[1], &c, sizeof c);
        close(pfd[1]);
        if (w != (ssize_t)sizeof c) _exit(4);
        if (how == 2) abort();
        if (how == 3) exit(0);
        if (how == 4) {
            int nul = open("/dev/null", O_WRONLY); /* no sanitizer report in the test's output */
            if (nul >= 0) dup2(nul, 2);
            kill(getpid(), SIGSEGV);
        }
        for (;;) pause();
    }
    close(pfd[1]);
    memset(&c, 0, sizeof c);
    while (got < sizeof c) {
        ssize_t n = read(pfd[0], (char *)&c + got, sizeof c - got);
        if (n <= 0 && !(n < 0 && errno == EINTR)) break;
        if (n > 0) got += (size_t)n;
    }
    close(pfd[0]);
    if (how == 0) kill(child, SIGKILL);
    if (how == 1) kill(child, SIGTERM);
    if (got != sizeof c) kill(child, SIGKILL);
    waitpid(child, &st, 0);
    if (got != sizeof c) {
        kt_fail(__FILE__, __LINE__, "%s: the child started no cluster (status %d)", names[how], st);
        return;
    }
    KT_EQ_INT(c.nstarted, 1);
    KT_CHECK(c.started[0] > 0);
    switch (how) {
    case 0: KT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL); break;
    case 1: KT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM); break;
    case 2: KT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT); break;
    case 3: KT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0); break;
    default: KT_CHECK(WIFSIGNALED(st) ? WTERMSIG(st) == SIGSEGV : WEXITSTATUS(st) != 0); break; /* a sanitizer exits 1 */
    }
    /* the orphans die asynchronously (and init reaps them) */
    while ((kt_etcd_leftovers(&c) || kt_etcd_ports_in_use(&c)) && waited < 10000) {
        teh_nap(20);
        waited += 20;
    }
    if (kt_etcd_leftovers(&c)) kt_fail(__FILE__, __LINE__, "%s: member pid %ld still alive", names[how], (long)c.started[0]);
    KT_EQ_INT(kt_etcd_ports_in_use(&c), 0);
    c.m[0].pid = 0; /* not ours: the child's */
    c.m[0].state = KT_ETCD_DOWN;
    kt_etcd_destroy(&c, kt.cur_failed > 0);
}

static void teh_orphans(void) {
    int how;
    KT_ETCD_REQUIRE();
    for (how = 0; how < 5; how++) teh_orphans_one(how);
}

#ifdef KT_HAVE_CURL
/* libcurl from several threads against a member (the transport's shape):
   this build links it, and the sanitizers accept it. */
typedef struct teh_curl_job {
    const char *url;
    int id, ok;
    char buf[1024];
    size_t len;
} teh_curl_job;

static size_t teh_curl_write(char *p, size_t size, size_t n, void *ud) {
    teh_curl_job *j = (teh_curl_job *)ud;
    size_t take = size * n;
    if (take > sizeof j->buf - 1 - j->len) take = sizeof j->buf - 1 - j->len;
    memcpy(j->buf + j->len, p, take);
    j->len += take;
    j->buf[j->len] = '\0';
    return size * n;
}

static void *teh_curl_thread(void *arg) {
    teh_curl_job *j = (teh_curl_job *)arg;
    CURL *h = curl_easy_init();
    char url[96], body[160], key[32], val[32], *kb, *vb;
    int i;
    if (!h) return NULL;
    snprintf(url, sizeof url, "%s/v3/kv/put", j->url);
    for (i = 0; i < 25; i++) {
        long code = 0;
        snprintf(key, sizeof key, "t/%d", j->id);
        snprintf(val, sizeof val, "%d", i);
        kb = kt_etcd_b64(key, strlen(key));
        vb = kt_etcd_b64(val, strlen(val));
        snprintf(body, sizeof body, "{\"key\":\"%s\",\"value\":\"%s\"}", kb ? kb : "", vb ? vb : "");
        free(kb);
        free(vb);
        j->len = 0;
        j->buf[0] = '\0';
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, teh_curl_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, j);
        if (curl_easy_perform(h) == CURLE_OK && curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
            code == 200 && strstr(j->buf, "\"revision\":"))
            j->ok++;
    }
    curl_easy_cleanup(h);
    return NULL;
}
#endif

static void teh_libcurl_threads(void) {
    KT_ETCD_REQUIRE_CURL();
#ifdef KT_HAVE_CURL
    {
        kt_etcd_cluster c;
        teh_curl_job jobs[4];
        pthread_t th[4];
        int i, started[4] = { 0 };
        char key[16], *v;
        TEH_START(&c, NULL);
        KT_EQ_INT(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
        for (i = 0; i < 4; i++) {
            memset(&jobs[i], 0, sizeof jobs[i]);
            jobs[i].url = c.m[0].url;
            jobs[i].id = i;
            started[i] = pthread_create(&th[i], NULL, teh_curl_thread, &jobs[i]) == 0;
            KT_CHECK(started[i]);
        }
        for (i = 0; i < 4; i++) {
            if (started[i]) pthread_join(th[i], NULL);
            KT_EQ_INT(jobs[i].ok, 25);
            snprintf(key, sizeof key, "t/%d", i);
            v = teh_get(c.m[0].url, key, 0);
            KT_EQ_STR(v, "24");
            free(v);
        }
        curl_global_cleanup();
        teh_end(&c);
    }
#endif
}

void kt_suite_etcd_harness(void) {
    KT_RUN(teh_single_member);
    KT_RUN(teh_progress_notify);
    KT_RUN(teh_three_members);
    KT_RUN(teh_kill9_leader);
    KT_RUN(teh_term_restart);
    KT_RUN(teh_quorum_loss);
    KT_RUN(teh_freeze_thaw);
    KT_RUN(teh_compaction);
    KT_RUN(teh_auth);
    KT_RUN(teh_orphans);
    KT_RUN(teh_libcurl_threads);
}
