/* test_leader.c - leader election over a lease in the store, on the virtual clock. */
#include "kt.h"
#include <stdlib.h>
#include <time.h>

static kctl_leader *tle_new(kctl_memstore *ms, kctl_vclock *vc, const char *id) {
    kctl_leader_desc d;
    kctl_leader *le = NULL;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.name = "my-controller";
    d.identity = id;
    d.clock = kctl_vclock_clock(vc);
    if (kctl_leader_create(&d, &le) != KCTL_OK) kt_fail(__FILE__, __LINE__, "leader");
    return le;
}

static void tle_one_leader_then_failover(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_leader *a, *b;
    bool la = false, lb = false;
    uint64_t t, a_died = 0, b_took = 0;
    int both = 0;
    kctl_vclock_init(&vc, KCTL_SEC(100));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    a = tle_new(ms, &vc, "a");
    b = tle_new(ms, &vc, "b");
    kctl_leader_step(a, &la, NULL);
    kctl_leader_step(b, &lb, NULL);
    KT_CHECK(la);
    KT_CHECK(!lb);
    /* a minute of both alive: a renews every 2 s, b never leads */
    for (t = 0; t < KCTL_SEC(60); t += KCTL_SEC(2)) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(a, &la, NULL);
        kctl_leader_step(b, &lb, NULL);
        if (la && lb) both++;
        if (!la) kt_fail(__FILE__, __LINE__, "a lost the lease while renewing");
    }
    /* a dies (no more steps); b takes over once the lease has not changed for 15 s */
    a_died = kctl_clock_now(&md.clock);
    for (t = 0; t < KCTL_SEC(60) && !lb; t += KCTL_SEC(2)) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(b, &lb, NULL);
    }
    b_took = kctl_clock_now(&md.clock);
    KT_CHECK(lb);
    KT_CHECK(b_took - a_died >= KCTL_SEC(15));
    KT_CHECK(b_took - a_died <= KCTL_SEC(15) + KCTL_SEC(4));
    KT_EQ_INT(kctl_leader_terms(b), 1);
    /* a comes back: it sees b renewing and steps down */
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    kctl_leader_step(b, &lb, NULL);
    kctl_leader_step(a, &la, NULL);
    KT_CHECK(lb);
    KT_CHECK(!la);
    for (t = 0; t < KCTL_SEC(30); t += KCTL_SEC(2)) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(a, &la, NULL);
        kctl_leader_step(b, &lb, NULL);
        if (la && lb) both++;
    }
    KT_EQ_INT(both, 0);
    KT_CHECK(lb && !la);
    kctl_leader_destroy(a);
    kctl_leader_destroy(b);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* A leader that cannot reach the store stops leading after the renew deadline. */
static void tle_renew_deadline(void) {
    kctl_vclock vc;
    kctl_memstore *ms = NULL;
    kctl_memstore_desc md;
    kctl_leader *a;
    bool la = false;
    int i;
    kctl_vclock_init(&vc, KCTL_SEC(100));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&vc);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    a = tle_new(ms, &vc, "a");
    kctl_leader_step(a, &la, NULL);
    KT_CHECK(la);
    kctl_memstore_fail_next(ms, KCTL_VERB_GET, 100, KCTL_ERR_IO); /* the fast path updates without a read */
    kctl_memstore_fail_next(ms, KCTL_VERB_UPDATE, 100, KCTL_ERR_IO);
    for (i = 0; i < 4; i++) { /* 8 s without a renewal: still leading */
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        kctl_leader_step(a, &la, NULL);
    }
    KT_CHECK(la);
    kctl_vclock_advance(&vc, KCTL_SEC(2)); /* 10 s: the deadline */
    kctl_leader_step(a, &la, NULL);
    KT_CHECK(!la);
    kctl_leader_destroy(a);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* ---- the Lease in the store, as a client-go peer or an API server sees it */
static const kctl_resource tle_res = { "coordination.k8s.io", "v1", "leases", "default" };

/* The stored Lease "my-controller", parsed (tokens from malloc); 0 if none. */
typedef struct tle_doc {
    kctl_obj *obj;
    kctl_json j;
    kctl_json_tok *toks;
} tle_doc;
static int tle_read(kctl_memstore *ms, tle_doc *d) {
    kctl_transport t = kctl_memstore_transport(ms);
    const char *text;
    size_t len;
    memset(d, 0, sizeof *d);
    if (t.vt->get(t.self, &tle_res, "my-controller", &d->obj, NULL) != KCTL_OK) return 0;
    text = kctl_obj_json(d->obj, &len);
    if (kctl_json_parse(text, len, NULL, 0, NULL, &d->j) != KCTL_OK) return 0;
    d->toks = (kctl_json_tok *)malloc(d->j.ntoks * sizeof *d->toks);
    return kctl_json_parse(text, len, d->toks, d->j.ntoks, NULL, &d->j) == KCTL_OK;
}
static void tle_doc_free(tle_doc *d) {
    kctl_obj_unref(d->obj);
    free(d->toks);
}
/* The string at path in the stored Lease ("" when absent or not a string). */
static const char *tle_str(kctl_memstore *ms, const char *path, char *buf, size_t cap) {
    tle_doc d;
    buf[0] = '\0';
    if (tle_read(ms, &d) && kctl_json_string(&d.j, kctl_json_path(&d.j, 0, path), buf, cap, NULL) != KCTL_OK) buf[0] = '\0';
    tle_doc_free(&d);
    return buf;
}
static long long tle_int(kctl_memstore *ms, const char *path) {
    tle_doc d;
    int64_t v = -999;
    if (tle_read(ms, &d)) kctl_json_int64(&d.j, kctl_json_path(&d.j, 0, path), &v);
    tle_doc_free(&d);
    return (long long)v;
}
/* Whether the value at path in the stored Lease equals the JSON text want. */
static int tle_eq(kctl_memstore *ms, const char *path, const char *want) {
    tle_doc d;
    kctl_json w;
    kctl_json_tok wt[256];
    int eq = tle_read(ms, &d) && kctl_json_parse(want, strlen(want), wt, 256, NULL, &w) == KCTL_OK &&
             kctl_json_equal(&d.j, kctl_json_path(&d.j, 0, path), &w, 0);
    tle_doc_free(&d);
    return eq;
}
/* Apply a merge patch to the stored Lease, as another writer would (no
   precondition); with no Lease, patch is the new Lease. */
static void tle_patch(kctl_memstore *ms, const char *patch) {
    tle_doc d;
    kctl_json p;
    kctl_json_tok pt[256];
    kctl_jw w;
    const char *text = "";
    size_t n = 0;
    int have = tle_read(ms, &d);
    KT_EQ_INT(kctl_json_parse(patch, strlen(patch), pt, 256, NULL, &p), KCTL_OK);
    kctl_jw_init_growable(&w, NULL);
    KT_EQ_INT(kctl_json_merge_patch(&d.j, have ? 0 : KCTL_JSON_NONE, &p, 0, &w), KCTL_OK);
    KT_EQ_INT(kctl_jw_finish(&w, &text, &n), KCTL_OK);
    KT_EQ_INT(kctl_memstore_apply(ms, &tle_res, text, n, NULL, NULL), KCTL_OK);
    kctl_jw_free(&w);
    tle_doc_free(&d);
}

/* What an API server adds to every write (managedFields), and labels,
   annotations and an owner a user put on the Lease: together far more
   than 64 tokens. */
#define TLE_META "{\"metadata\":{" \
    "\"labels\":{\"app.kubernetes.io/name\":\"my-controller\",\"app.kubernetes.io/part-of\":\"kctl\"," \
    "\"tier\":\"control\",\"team\":\"edge\",\"env\":\"prod\"}," \
    "\"annotations\":{\"example.io/note\":\"kept\",\"example.io/owner\":\"ops\"}," \
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"ctl\",\"uid\":\"d-1\",\"controller\":true}]," \
    "\"managedFields\":[{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\"," \
    "\"apiVersion\":\"coordination.k8s.io/v1\",\"time\":\"2026-01-01T00:00:00Z\",\"fieldsType\":\"FieldsV1\"," \
    "\"fieldsV1\":{\"f:spec\":{\"f:acquireTime\":{},\"f:holderIdentity\":{},\"f:leaseDurationSeconds\":{}," \
    "\"f:leaseTransitions\":{},\"f:renewTime\":{}}}}]}}"

/* MicroTime as client-go writes it: 2026-11-30T18:47:33.123456Z. */
static int tle_microtime(const char *s) {
    static const char *const shape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
    size_t i;
    if (strlen(s) != strlen(shape)) return 0;
    for (i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i]) return 0;
    return 1;
}
/* A MicroTime in us since the epoch (the test's own arithmetic). */
static long long tle_us(const char *s) {
    int y, mo, d, h, mi, se, us;
    long long days;
    if (!tle_microtime(s) || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ", &y, &mo, &d, &h, &mi, &se, &us) != 7) return -1;
    y -= mo <= 2;
    days = 365LL * y + y / 4 - y / 100 + y / 400 + (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1 - 719468;
    return ((days * 86400 + h * 3600 + mi * 60 + se) * 1000000LL) + us;
}

/* Candidates stepped at their own times (next_ns) on the virtual clock. */
typedef struct tle_cand {
    kctl_leader *le;
    bool alive, leading;
    uint64_t next;
    int rc;
} tle_cand;
typedef struct tle_run_out {
    int both;      /* ticks with two leaders */
    uint64_t took; /* when `watch` first led (0: not within span) */
} tle_run_out;
/* Advance by tick for span, stepping each live candidate when due (and
   the server's decoration after each write when decorate); stop early
   once candidate watch (-1: none) leads. */
static tle_run_out tle_run(kctl_vclock *vc, tle_cand *c, int n, uint64_t span, uint64_t tick, int watch, kctl_memstore *decorate) {
    kctl_clock clk = kctl_vclock_clock(vc);
    uint64_t end = kctl_clock_now(&clk) + span;
    tle_run_out r = { 0, 0 };
    int i, lead;
    while (kctl_clock_now(&clk) < end) {
        kctl_vclock_advance(vc, tick);
        for (i = 0; i < n; i++) {
            if (!c[i].alive || kctl_clock_now(&clk) < c[i].next) continue;
            c[i].rc = kctl_leader_step(c[i].le, &c[i].leading, &c[i].next);
            if (decorate) tle_patch(decorate, TLE_META);
        }
        for (lead = 0, i = 0; i < n; i++) lead += c[i].alive && c[i].leading;
        if (lead > 1) r.both++;
        if (watch >= 0 && c[watch].leading) {
            r.took = kctl_clock_now(&clk);
            break;
        }
    }
    return r;
}
/* Candidate i renews once more now, then dies; returns when. */
static uint64_t tle_kill(kctl_vclock *vc, tle_cand *c, kctl_memstore *decorate) {
    kctl_clock clk = kctl_vclock_clock(vc);
    KT_EQ_INT(kctl_leader_step(c->le, &c->leading, &c->next), KCTL_OK);
    KT_CHECK(c->leading);
    if (decorate) tle_patch(decorate, TLE_META);
    c->alive = false;
    return kctl_clock_now(&clk);
}
static kctl_leader *tle_make(kctl_memstore *ms, kctl_vclock *vc, const char *id, uint64_t lease_ns, kctl_allocator *al) {
    kctl_leader_desc d;
    kctl_leader *le = NULL;
    memset(&d, 0, sizeof d);
    d.transport = kctl_memstore_transport(ms);
    d.name = "my-controller";
    d.identity = id;
    d.lease_ns = lease_ns;
    d.clock = kctl_vclock_clock(vc);
    if (al) d.allocator = *al;
    KT_EQ_INT(kctl_leader_create(&d, &le), KCTL_OK);
    return le;
}
static kctl_memstore *tle_store(kctl_vclock *vc) {
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    kctl_vclock_init(vc, KCTL_SEC(100));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(vc);
    KT_EQ_INT(kctl_memstore_create(&md, &ms), KCTL_OK);
    return ms;
}
static void tle_done(kctl_memstore *ms, kctl_vclock *vc, tle_cand *c, int n) {
    int i;
    for (i = 0; i < n; i++) kctl_leader_destroy(c[i].le);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(vc);
}

/* A Lease of more than 64 tokens (an API server's managedFields and a few
   labels, put back after every write): two candidates never lead at once,
   the follower never takes the Lease the leader keeps renewing, and takes
   it once the leader is gone. */
static void tle_big_lease_one_leader(void) {
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    tle_cand c[2];
    tle_run_out r;
    tle_doc d;
    uint64_t died;
    char buf[64];
    memset(c, 0, sizeof c);
    tle_patch(ms, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"my-controller\"}}");
    tle_patch(ms, TLE_META);
    c[0].le = tle_make(ms, &vc, "a", 0, NULL);
    c[1].le = tle_make(ms, &vc, "b", 0, NULL);
    c[0].alive = c[1].alive = true;
    c[1].next = KCTL_SEC(101); /* a tries first */
    r = tle_run(&vc, c, 2, KCTL_SEC(90), KCTL_MS(100), -1, ms);
    KT_EQ_INT(r.both, 0);
    KT_CHECK(c[0].leading && !c[1].leading);
    KT_EQ_INT(kctl_leader_terms(c[0].le), 1);
    KT_EQ_INT(kctl_leader_terms(c[1].le), 0);
    KT_EQ_INT(c[1].rc, KCTL_OK);
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "a");
    KT_CHECK(tle_read(ms, &d) && d.j.ntoks > 64);
    tle_doc_free(&d);
    died = tle_kill(&vc, &c[0], ms); /* a renews a last time and dies */
    r = tle_run(&vc, c, 2, KCTL_SEC(60), KCTL_MS(100), 1, ms);
    KT_EQ_INT(r.both, 0);
    /* b sees that renewal within one jittered retry, then waits 15 s unchanged */
    KT_CHECK(r.took - died >= KCTL_SEC(15));
    KT_CHECK(r.took - died <= KCTL_SEC(15) + 2 * KCTL_MS(4400) + KCTL_MS(100));
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "b");
    KT_EQ_INT(tle_int(ms, "spec.leaseTransitions"), 2);
    tle_done(ms, &vc, c, 2);
}

/* Renewals and takeovers write back the Lease they read: its labels,
   annotations, ownerReferences and managedFields stay. */
static void tle_keeps_metadata(void) {
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    tle_cand c[2];
    tle_run_out r;
    char buf[64];
    memset(c, 0, sizeof c);
    tle_patch(ms, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"my-controller\"}}");
    tle_patch(ms, TLE_META);
    c[0].le = tle_make(ms, &vc, "a", 0, NULL);
    c[1].le = tle_make(ms, &vc, "b", 0, NULL);
    c[0].alive = c[1].alive = true;
    c[1].next = KCTL_SEC(101);
    r = tle_run(&vc, c, 2, KCTL_SEC(30), KCTL_MS(100), -1, NULL); /* a takes the vacant Lease, renews 15 times */
    KT_EQ_INT(r.both, 0);
    KT_CHECK(c[0].leading);
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "a");
    KT_CHECK(tle_eq(ms, "metadata.labels", "{\"app.kubernetes.io/name\":\"my-controller\",\"app.kubernetes.io/part-of\":\"kctl\","
                                           "\"tier\":\"control\",\"team\":\"edge\",\"env\":\"prod\"}"));
    KT_CHECK(tle_eq(ms, "metadata.annotations", "{\"example.io/note\":\"kept\",\"example.io/owner\":\"ops\"}"));
    KT_CHECK(tle_eq(ms, "metadata.ownerReferences[0]",
                    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"ctl\",\"uid\":\"d-1\",\"controller\":true}"));
    KT_EQ_STR(tle_str(ms, "metadata.managedFields[0].manager", buf, sizeof buf), "kube-controller-manager");
    KT_CHECK(tle_eq(ms, "apiVersion", "\"coordination.k8s.io/v1\"") && tle_eq(ms, "kind", "\"Lease\""));
    c[0].alive = false;
    r = tle_run(&vc, c, 2, KCTL_SEC(60), KCTL_MS(100), 1, NULL); /* b takes it over */
    KT_CHECK(r.took != 0);
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "b");
    KT_EQ_INT(tle_int(ms, "spec.leaseTransitions"), 2);
    KT_CHECK(tle_eq(ms, "metadata.labels.env", "\"prod\"") && tle_eq(ms, "metadata.labels.team", "\"edge\""));
    KT_CHECK(tle_eq(ms, "metadata.annotations[\"example.io/note\"]", "\"kept\""));
    KT_CHECK(tle_eq(ms, "metadata.ownerReferences[0].uid", "\"d-1\""));
    KT_EQ_STR(tle_str(ms, "metadata.managedFields[0].manager", buf, sizeof buf), "kube-controller-manager");
    KT_CHECK(!tle_eq(ms, "metadata.annotations[\"kctl.io/renewal\"]", "\"1\"")); /* nothing of kctl's own */
    tle_done(ms, &vc, c, 2);
}

/* A Lease that cannot be read is never free: a holderIdentity longer than
   any buffer, record fields of the wrong type or range, times that are not
   RFC 3339, no memory to parse it. */
static void tle_unreadable_lease(void) {
    static const char *const bad[] = {
        "{\"spec\":{\"holderIdentity\":42,\"leaseDurationSeconds\":15}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"leaseDurationSeconds\":\"x\"}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"leaseDurationSeconds\":4294967296}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"leaseDurationSeconds\":1.5}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"leaseTransitions\":[]}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"acquireTime\":\"yesterday\"}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"renewTime\":\"2026-02-30T00:00:00Z\"}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"renewTime\":\"2026-01-01T00:00:00.1234567890Z\"}}",
        "{\"spec\":{\"holderIdentity\":\"peer\",\"renewTime\":\"2026-01-01T00:00:00\"}}",
        "{\"spec\":\"peer\"}",
    };
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    kctl_clock clk = kctl_vclock_clock(&vc);
    tle_cand c[1];
    tle_run_out r;
    kt_alloc ka;
    kctl_allocator al = kt_allocator(&ka);
    char holder[301], patch[512], buf[320];
    size_t i;
    int tick;
    uint64_t gone;
    memset(c, 0, sizeof c);
    kt_alloc_init(&ka);
    /* a client-go peer with a 300-byte identity renews every 2 s: b never takes it */
    memset(holder, 'p', 300);
    holder[300] = '\0';
    c[0].le = tle_make(ms, &vc, "b", 0, &al);
    c[0].alive = true;
    for (tick = 0; tick < 30; tick++) {
        snprintf(patch, sizeof patch,
                 "{\"metadata\":{\"name\":\"my-controller\"},\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":15,"
                 "\"renewTime\":\"2026-01-01T00:00:%02d.000000Z\"}}", holder, tick);
        tle_patch(ms, patch);
        r = tle_run(&vc, c, 1, KCTL_SEC(2), KCTL_MS(100), 0, NULL);
        KT_CHECK(!r.took);
    }
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), holder);
    gone = kctl_clock_now(&clk); /* the peer stops renewing: b takes it 15 s on */
    r = tle_run(&vc, c, 1, KCTL_SEC(30), KCTL_MS(100), 0, NULL);
    KT_CHECK(r.took - gone >= KCTL_SEC(15));
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "b");
    kctl_leader_destroy(c[0].le);
    /* malformed records: long expired by any measure, never taken */
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c[0].le = tle_make(ms, &vc, "b", 0, &al);
        c[0].next = 0;
        tle_patch(ms, "{\"spec\":null}");
        tle_patch(ms, bad[i]);
        r = tle_run(&vc, c, 1, KCTL_SEC(60), KCTL_SEC(1), 0, NULL);
        if (r.took) kt_fail(__FILE__, __LINE__, "took over the unreadable lease %s", bad[i]);
        KT_EQ_INT(c[0].rc, KCTL_ERR_PROTO);
        kctl_leader_destroy(c[0].le);
    }
    /* a Lease expired long ago, but no memory to read it: not taken */
    tle_patch(ms, "{\"spec\":null}");
    tle_patch(ms, "{\"spec\":{\"holderIdentity\":\"peer\",\"leaseDurationSeconds\":15}}");
    c[0].le = tle_make(ms, &vc, "b", 0, &al);
    c[0].next = 0;
    ka.fail_after = 0;
    r = tle_run(&vc, c, 1, KCTL_SEC(60), KCTL_SEC(1), 0, NULL);
    KT_CHECK(!r.took);
    KT_EQ_INT(c[0].rc, KCTL_ERR_NOMEM);
    ka.fail_after = -1;
    r = tle_run(&vc, c, 1, KCTL_SEC(60), KCTL_SEC(1), 0, NULL); /* memory again: read, seen unchanged for 15 s, taken */
    KT_CHECK(r.took != 0);
    kctl_leader_destroy(c[0].le);
    KT_EQ_INT(ka.live, 0);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* acquireTime and renewTime are MicroTime (six fractional digits, UTC) as
   client-go's parser demands; read leniently, written normalized. */
static void tle_microtime_format(void) {
    static const char *const cases[][2] = {
        { "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000Z" },
        { "2026-01-02T03:04:05.5Z", "2026-01-02T03:04:05.500000Z" },
        { "2026-01-02T04:04:05.123456789+01:00", "2026-01-02T03:04:05.123456Z" },
        { "2024-02-29t23:30:00-00:45", "2024-03-01T00:15:00.000000Z" },
        { "1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:59.999999Z" },
        { "2000-02-29T00:00:00.000001z", "2000-02-29T00:00:00.000001Z" },
    };
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    tle_cand c[1];
    char acq[64], ren[64], patch[512];
    size_t i;
    memset(c, 0, sizeof c);
    c[0].le = tle_make(ms, &vc, "a", 0, NULL);
    KT_EQ_INT(kctl_leader_step(c[0].le, &c[0].leading, NULL), KCTL_OK); /* creates the Lease */
    KT_CHECK(c[0].leading);
    KT_CHECK(tle_microtime(tle_str(ms, "spec.acquireTime", acq, sizeof acq)));
    KT_CHECK(tle_microtime(tle_str(ms, "spec.renewTime", ren, sizeof ren)));
    KT_EQ_STR(acq, ren);
    KT_EQ_INT(tle_int(ms, "spec.leaseDurationSeconds"), 15);
    KT_EQ_INT(tle_int(ms, "spec.leaseTransitions"), 0);
    kctl_leader_destroy(c[0].le);
    /* a Lease this identity holds (say, before a restart), its times written by others */
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(patch, sizeof patch, "{\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,\"acquireTime\":\"%s\","
                 "\"renewTime\":\"%s\",\"leaseTransitions\":3}}", cases[i][0], cases[i][0]);
        tle_patch(ms, patch);
        c[0].le = tle_make(ms, &vc, "a", 0, NULL);
        kctl_vclock_advance(&vc, KCTL_SEC(1));
        KT_EQ_INT(kctl_leader_step(c[0].le, &c[0].leading, NULL), KCTL_OK);
        KT_CHECK(c[0].leading); /* its own: renewed at once, acquireTime and transitions kept */
        KT_EQ_STR(tle_str(ms, "spec.acquireTime", acq, sizeof acq), cases[i][1]);
        KT_CHECK(tle_microtime(tle_str(ms, "spec.renewTime", ren, sizeof ren)));
        KT_EQ_INT(tle_int(ms, "spec.leaseTransitions"), 3);
        kctl_leader_destroy(c[0].le);
    }
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* The times written come from the elector's clock: a virtual minute of
   renewals is a minute between acquireTime and renewTime. */
static void tle_times_follow_clock(void) {
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    tle_cand c[1];
    tle_run_out r;
    char acq[64], ren[64];
    long long a0, r0, a1, r1, real_us;
    memset(c, 0, sizeof c);
    c[0].le = tle_make(ms, &vc, "a", 0, NULL);
    c[0].alive = true;
    KT_EQ_INT(kctl_leader_step(c[0].le, &c[0].leading, &c[0].next), KCTL_OK);
    a0 = tle_us(tle_str(ms, "spec.acquireTime", acq, sizeof acq));
    r0 = tle_us(tle_str(ms, "spec.renewTime", ren, sizeof ren));
    real_us = (long long)time(NULL) * 1000000LL;
    KT_CHECK(a0 > 0 && a0 == r0);
    KT_CHECK(a0 > real_us - 86400000000LL && a0 < real_us + 86400000000LL); /* wall time, read at create */
    r = tle_run(&vc, c, 1, KCTL_SEC(60), KCTL_MS(100), -1, NULL);
    KT_EQ_INT(r.both, 0);
    KT_CHECK(c[0].leading);
    a1 = tle_us(tle_str(ms, "spec.acquireTime", acq, sizeof acq));
    r1 = tle_us(tle_str(ms, "spec.renewTime", ren, sizeof ren));
    KT_EQ_INT(a1, a0);
    KT_CHECK(r1 - a1 >= 58000000LL && r1 - a1 <= 60000000LL); /* the last renewal: within one retry of the minute */
    KT_EQ_INT((r1 - a1) % 2000000LL, 0);                        /* renewals every 2 s on the clock */
    tle_done(ms, &vc, c, 1);
}

/* Expiry is judged by the record's leaseDurationSeconds (the holder's),
   not the candidate's own: a 40 s lease is not taken after 15 s. */
static void tle_observed_duration(void) {
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    tle_cand c[2];
    tle_run_out r;
    uint64_t died;
    memset(c, 0, sizeof c);
    c[0].le = tle_make(ms, &vc, "a", KCTL_SEC(40), NULL);
    c[1].le = tle_make(ms, &vc, "b", KCTL_MS(15500), NULL); /* written as 16 s: whole seconds, rounded up */
    c[0].alive = c[1].alive = true;
    c[1].next = KCTL_SEC(101);
    r = tle_run(&vc, c, 2, KCTL_SEC(20), KCTL_MS(100), -1, NULL);
    KT_CHECK(c[0].leading && !c[1].leading);
    KT_EQ_INT(tle_int(ms, "spec.leaseDurationSeconds"), 40);
    died = tle_kill(&vc, &c[0], NULL);
    r = tle_run(&vc, c, 2, KCTL_SEC(90), KCTL_MS(100), 1, NULL);
    KT_EQ_INT(r.both, 0);
    KT_CHECK(r.took - died >= KCTL_SEC(40));
    KT_CHECK(r.took - died <= KCTL_SEC(40) + 2 * KCTL_MS(4400) + KCTL_MS(100));
    KT_EQ_INT(tle_int(ms, "spec.leaseDurationSeconds"), 16);
    tle_done(ms, &vc, c, 2);
}

/* Tries are jittered as client-go's: a candidate waits retry * (1 + r * 1.2),
   each candidate its own sequence; a leader renews every retry. */
static void tle_jitter(void) {
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    kctl_clock clk = kctl_vclock_clock(&vc);
    kctl_leader *a = tle_make(ms, &vc, "a", 0, NULL), *b = tle_make(ms, &vc, "b", 0, NULL), *d = tle_make(ms, &vc, "d", 0, NULL);
    bool la = false, lb = true;
    uint64_t next = 0, wb[30], wd[30], lo = UINT64_MAX, hi = 0;
    int i, same = 0;
    KT_EQ_INT(kctl_leader_step(a, &la, &next), KCTL_OK);
    KT_CHECK(la);
    KT_EQ_U64(next - kctl_clock_now(&clk), KCTL_SEC(2));
    for (i = 0; i < 30; i++) {
        kctl_vclock_advance(&vc, KCTL_SEC(2));
        KT_EQ_INT(kctl_leader_step(a, &la, &next), KCTL_OK);
        KT_EQ_U64(next - kctl_clock_now(&clk), KCTL_SEC(2)); /* renewals: not jittered */
        KT_EQ_INT(kctl_leader_step(b, &lb, &next), KCTL_OK);
        KT_CHECK(!lb);
        wb[i] = next - kctl_clock_now(&clk);
        kctl_leader_step(d, NULL, &next);
        wd[i] = next - kctl_clock_now(&clk);
        if (wb[i] < lo) lo = wb[i];
        if (wb[i] > hi) hi = wb[i];
        KT_CHECK(wb[i] >= KCTL_SEC(2) && wb[i] < KCTL_MS(4400));
        KT_CHECK(wd[i] >= KCTL_SEC(2) && wd[i] < KCTL_MS(4400));
        same += wb[i] == wd[i];
    }
    KT_CHECK(lo < KCTL_SEC(3) && hi > KCTL_MS(3400)); /* spread over the range */
    KT_EQ_INT(same, 0);                               /* b and d do not try in step */
    kctl_leader_destroy(a);
    kctl_leader_destroy(b);
    kctl_leader_destroy(d);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

/* Release writes client-go's released record; the successor takes over at
   its next (jittered) try, not a lease duration later. */
static void tle_release(void) {
    kctl_vclock vc;
    kctl_memstore *ms = tle_store(&vc);
    kctl_clock clk = kctl_vclock_clock(&vc);
    tle_cand c[2];
    tle_run_out r;
    char acq[64], ren[64], buf[64];
    uint64_t released;
    memset(c, 0, sizeof c);
    c[0].le = tle_make(ms, &vc, "a", 0, NULL);
    c[1].le = tle_make(ms, &vc, "b", 0, NULL);
    c[0].alive = c[1].alive = true;
    c[1].next = KCTL_SEC(101);
    KT_EQ_INT(kctl_leader_release(c[0].le), KCTL_OK); /* not leading: nothing to do */
    r = tle_run(&vc, c, 2, KCTL_SEC(20), KCTL_MS(100), -1, NULL);
    KT_CHECK(c[0].leading && !c[1].leading);
    KT_EQ_INT(tle_int(ms, "spec.leaseTransitions"), 0); /* a made it */
    tle_patch(ms, "{\"metadata\":{\"labels\":{\"keep\":\"me\"}}}");
    released = kctl_clock_now(&clk);
    KT_EQ_INT(kctl_leader_release(c[0].le), KCTL_OK);
    KT_CHECK(!kctl_leader_is_leader(c[0].le));
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "");
    KT_EQ_INT(tle_int(ms, "spec.leaseDurationSeconds"), 1);
    KT_EQ_INT(tle_int(ms, "spec.leaseTransitions"), 0); /* kept */
    KT_CHECK(tle_microtime(tle_str(ms, "spec.acquireTime", acq, sizeof acq)));
    KT_EQ_STR(tle_str(ms, "spec.renewTime", ren, sizeof ren), acq);
    KT_CHECK(tle_eq(ms, "metadata.labels.keep", "\"me\""));
    c[0].alive = false;
    r = tle_run(&vc, c, 2, KCTL_SEC(30), KCTL_MS(100), 1, NULL);
    KT_CHECK(r.took != 0);
    KT_CHECK(r.took - released <= KCTL_MS(4400) + KCTL_MS(100)); /* one jittered retry */
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "b");
    KT_EQ_INT(tle_int(ms, "spec.leaseTransitions"), 1);
    KT_EQ_INT(tle_int(ms, "spec.leaseDurationSeconds"), 15);
    KT_EQ_INT(kctl_leader_release(c[0].le), KCTL_OK); /* again: nothing to do */
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "b");
    /* b leads, but someone else wrote the Lease meanwhile: not b's to release */
    tle_patch(ms, "{\"spec\":{\"holderIdentity\":\"z\"}}");
    KT_EQ_INT(kctl_leader_release(c[1].le), KCTL_OK);
    KT_CHECK(!kctl_leader_is_leader(c[1].le));
    KT_EQ_STR(tle_str(ms, "spec.holderIdentity", buf, sizeof buf), "z");
    KT_EQ_INT(tle_int(ms, "spec.leaseDurationSeconds"), 15);
    tle_done(ms, &vc, c, 2);
}

static void tle_bad_args(void) {
    kctl_leader_desc d;
    kctl_leader *le = NULL;
    memset(&d, 0, sizeof d);
    KT_EQ_INT(kctl_leader_create(&d, &le), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_leader_step(NULL, NULL, NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_leader_release(NULL), KCTL_ERR_INVALID_ARG);
    kctl_leader_destroy(NULL);
    {   /* what client-go refuses: lease <= renew deadline, renew deadline <= 1.2 x retry */
        kctl_memstore *ms = NULL;
        KT_EQ_INT(kctl_memstore_create(NULL, &ms), KCTL_OK);
        d.transport = kctl_memstore_transport(ms);
        d.name = "n";
        d.identity = "i";
        d.lease_ns = KCTL_SEC(10);
        KT_EQ_INT(kctl_leader_create(&d, &le), KCTL_ERR_INVALID_ARG); /* 10 s lease, 10 s deadline */
        d.lease_ns = 0;
        d.renew_deadline_ns = KCTL_MS(2400);
        KT_EQ_INT(kctl_leader_create(&d, &le), KCTL_ERR_INVALID_ARG); /* 2.4 s <= 1.2 x 2 s */
        d.renew_deadline_ns = KCTL_MS(2500);
        KT_EQ_INT(kctl_leader_create(&d, &le), KCTL_OK);
        kctl_leader_destroy(le);
        kctl_memstore_destroy(ms);
    }
}

void kt_suite_leader(void) {
    KT_RUN(tle_one_leader_then_failover);
    KT_RUN(tle_renew_deadline);
    KT_RUN(tle_big_lease_one_leader);
    KT_RUN(tle_keeps_metadata);
    KT_RUN(tle_unreadable_lease);
    KT_RUN(tle_microtime_format);
    KT_RUN(tle_times_follow_clock);
    KT_RUN(tle_observed_duration);
    KT_RUN(tle_jitter);
    KT_RUN(tle_release);
    KT_RUN(tle_bad_args);
}
