/* test_contract.c - the transport contract suite (tests/contract.h) and its
   targets: the memstore and the directory store of examples/dirstore.h. */
#include "contract.h"
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

static const kc_target *kc_t; /* the target of the running test */

#define KC_DOC_MAX 2048
#define KC_MAX_EVENTS 16

#define KC_NEED(need) do { if ((kc_t->caps & (need)) != (need)) KT_SKIP(); } while (0)
#define KC_HAS(cap) ((kc_t->caps & (cap)) != 0)

/* ------------------------------------------------------------- helpers */
static bool kc_open(kc_store *s) {
    int rc;
    memset(s, 0, sizeof *s);
    s->res = kc_t->res;
    if ((rc = kc_t->open(kc_t, s)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "%s: a fresh store: %s", kc_t->name, kctl_strerror(rc));
        return false;
    }
    return true;
}

static void kc_close(kc_store *s) { kc_t->close(kc_t, s); }

static const char *kc_ns(const kc_store *s) { return s->res.ns ? s->res.ns : ""; }

static void kc_fmt(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap) kt_fail(__FILE__, __LINE__, "a test's text does not fit: %s", fmt);
}

/* Append to buf[0..KC_DOC_MAX) at n; the new length. */
static size_t kc_cat(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    int k;
    if (n >= KC_DOC_MAX) return n;
    va_start(ap, fmt);
    k = vsnprintf(buf + n, KC_DOC_MAX - n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= KC_DOC_MAX - n) {
        kt_fail(__FILE__, __LINE__, "a test's document does not fit: %s", fmt);
        return KC_DOC_MAX;
    }
    return n + (size_t)k;
}

/* A document of the store's resource in buf[KC_DOC_MAX]: apiVersion and
   kind (the target's), metadata with name (NULL: none), the namespace
   written to and the members meta (NULL: none), then the top-level
   members rest (NULL: none). */
static const char *kc_doc(const kc_store *s, char *buf, const char *name, const char *meta, const char *rest) {
    const char *sep = "";
    size_t n = kc_cat(buf, 0, "{");
    if (kc_t->api_version) n = kc_cat(buf, n, "\"apiVersion\":\"%s\",", kc_t->api_version);
    if (kc_t->kind) n = kc_cat(buf, n, "\"kind\":\"%s\",", kc_t->kind);
    n = kc_cat(buf, n, "\"metadata\":{");
    if (name) {
        n = kc_cat(buf, n, "\"name\":\"%s\"", name);
        sep = ",";
    }
    if (*kc_ns(s)) {
        n = kc_cat(buf, n, "%s\"namespace\":\"%s\"", sep, kc_ns(s));
        sep = ",";
    }
    if (meta) n = kc_cat(buf, n, "%s%s", sep, meta);
    kc_cat(buf, n, "}%s%s}", rest ? "," : "", rest ? rest : "");
    return buf;
}

static int kc_create(kc_store *s, const char *name, const char *meta, const char *rest, kctl_obj **out, kctl_api_status *st) {
    char d[KC_DOC_MAX];
    return kctl_transport_create(&s->tp, &s->res, kc_doc(s, d, name, meta, rest), KCTL_NTS, out, st);
}

/* An update as a controller makes one: at the version it reads first (a
   store may refuse updates without one: KC_CAP_UNCONDITIONAL_UPDATE),
   unless meta names a resourceVersion itself or the object is not there. */
typedef int (*kc_write_fn)(const kctl_transport *, const kctl_resource *, const char *, size_t, kctl_obj **, kctl_api_status *);
static int kc_write(kc_store *s, kc_write_fn fn, const char *name, const char *meta, const char *rest, kctl_obj **out,
                    kctl_api_status *st) {
    char d[KC_DOC_MAX], m[KC_DOC_MAX];
    kctl_obj *cur = NULL;
    if ((!meta || !strstr(meta, "\"resourceVersion\"")) && name &&
        kctl_transport_get(&s->tp, &s->res, name, &cur, NULL) == KCTL_OK) {
        kc_fmt(m, sizeof m, "\"resourceVersion\":\"%s\"%s%s", kctl_obj_resource_version(cur), meta ? "," : "", meta ? meta : "");
        meta = m;
    }
    kctl_obj_unref(cur);
    return fn(&s->tp, &s->res, kc_doc(s, d, name, meta, rest), KCTL_NTS, out, st);
}

static int kc_update(kc_store *s, const char *name, const char *meta, const char *rest, kctl_obj **out, kctl_api_status *st) {
    return kc_write(s, kctl_transport_update, name, meta, rest, out, st);
}

static int kc_update_status(kc_store *s, const char *name, const char *meta, const char *rest, kctl_obj **out,
                            kctl_api_status *st) {
    return kc_write(s, kctl_transport_update_status, name, meta, rest, out, st);
}

/* An update as sent: without a resourceVersion, unconditional. */
static int kc_update_raw(kc_store *s, const char *name, const char *meta, const char *rest, kctl_obj **out, kctl_api_status *st) {
    char d[KC_DOC_MAX];
    return kctl_transport_update(&s->tp, &s->res, kc_doc(s, d, name, meta, rest), KCTL_NTS, out, st);
}

static int kc_remove(kc_store *s, const char *name, const char *rv, const char *uid, kctl_obj **out, kctl_api_status *st) {
    kctl_delete_opts o;
    memset(&o, 0, sizeof o);
    o.resource_version = rv;
    o.uid = uid;
    return kctl_transport_remove(&s->tp, &s->res, name, &o, out, st);
}

/* The stored resourceVersion of name into rv ("" when it cannot be read). */
static int kc_rv_of(kc_store *s, const char *name, char rv[KCTL_RV_MAX]) {
    kctl_obj *o = NULL;
    int rc = kctl_transport_get(&s->tp, &s->res, name, &o, NULL);
    rv[0] = '\0';
    if (rc == KCTL_OK) snprintf(rv, KCTL_RV_MAX, "%s", kctl_obj_resource_version(o));
    kctl_obj_unref(o);
    return rc;
}

/* A resourceVersion as a number (KC_CAP_ORDERED_VERSIONS). */
static uint64_t kc_u64(const char *rv) {
    uint64_t v = 0;
    const char *p;
    if (!rv || !*rv) kt_fail(__FILE__, __LINE__, "an empty resourceVersion where a number was due");
    for (p = rv; p && *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10) {
            kt_fail(__FILE__, __LINE__, "resourceVersion \"%s\" is not a number", rv);
            return 0;
        }
        v = v * 10 + (uint64_t)(*p - '0');
    }
    return v;
}

static int64_t kc_int(const kctl_obj *o, const char *path) {
    int64_t v = -1;
    if (!o || kctl_obj_get_int64(o, path, &v) != KCTL_OK) return -1;
    return v;
}

/* The string at path ("" when absent or no string). */
static const char *kc_str(const kctl_obj *o, const char *path, char *buf, size_t cap) {
    buf[0] = '\0';
    if (o && kctl_obj_get_string(o, path, buf, cap, NULL) != KCTL_OK) buf[0] = '\0';
    return buf;
}

static bool kc_absent(const kctl_obj *o, const char *path) {
    kctl_json_value v;
    return o && kctl_obj_get(o, path, &v) == KCTL_ERR_NOT_FOUND;
}

static int kc_list(kc_store *s, const char *label, const char *field, uint32_t limit, const char *cont, kctl_list_result *r,
                   kctl_api_status *st) {
    kctl_list_opts lo;
    memset(&lo, 0, sizeof lo);
    lo.label_selector = label;
    lo.field_selector = field;
    lo.limit = limit;
    lo.continue_token = cont;
    return kctl_transport_list(&s->tp, &s->res, &lo, r, st);
}

/* The names of a list's items, sorted, joined by spaces: "a b c". */
static int kc_cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }
static const char *kc_names(const kctl_obj_list *l, char *buf, size_t cap) {
    const char *v[64];
    size_t i, n = l->count < 64 ? l->count : 64, at = 0;
    buf[0] = '\0';
    for (i = 0; i < n; i++) v[i] = kctl_obj_name(l->items[i]);
    qsort(v, n, sizeof v[0], kc_cmp_str);
    for (i = 0; i < n && at < cap; i++) at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? " " : "", v[i]);
    return buf;
}

/* The words of text (separated by spaces; text is cut up), sorted, joined
   by spaces: what kc_names gives for a list of those names. */
static const char *kc_sort_words(char *text, char *buf, size_t cap) {
    const char *v[64];
    char *p = text, *tok;
    size_t n = 0, i, at = 0;
    while (n < 64 && (tok = strtok(p, " ")) != NULL) {
        v[n++] = tok;
        p = NULL;
    }
    qsort(v, n, sizeof v[0], kc_cmp_str);
    buf[0] = '\0';
    for (i = 0; i < n && at < cap; i++) at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? " " : "", v[i]);
    return buf;
}

/* The names a selector lists, as kc_names gives them ("ERROR <code>" on failure). */
static const char *kc_select(kc_store *s, const char *label, const char *field, char *buf, size_t cap) {
    kctl_list_result r;
    int rc = kc_list(s, label, field, 0, NULL, &r, NULL);
    if (rc != KCTL_OK) {
        snprintf(buf, cap, "ERROR %s", kctl_strerror(rc));
        return buf;
    }
    kc_names(&r.items, buf, cap);
    kctl_list_result_free(&r);
    return buf;
}

/* ---- watches: waits bounded by the target's deadline */
static uint64_t kc_wait(void) { return kc_t->wait_ns ? kc_t->wait_ns : KCTL_SEC(5); }

static void kc_pause(void) { /* a store that cannot wait answers at once: do not spin */
    struct timespec ts = { 0, 1000000L };
    nanosleep(&ts, NULL);
}

/* The next event, bookmarks included, waiting up to wait: OK, AGAIN (none
   came) or the stream's code. */
static int kc_next_any(kc_store *s, kctl_watch *w, uint64_t wait, kctl_event *ev, kctl_api_status *st) {
    uint64_t end = kctl_clock_now(NULL) + wait;
    for (;;) {
        uint64_t now = kctl_clock_now(NULL), left = now < end ? end - now : 0;
        int rc = kctl_transport_watch_next(&s->tp, w, left < KCTL_MS(100) ? left : KCTL_MS(100), ev, st);
        if (rc != KCTL_ERR_AGAIN || !left) return rc;
        if (kctl_clock_now(NULL) - now < KCTL_MS(1)) kc_pause();
    }
}

/* The next event that is not a BOOKMARK (a store may send those at any time). */
static int kc_next_within(kc_store *s, kctl_watch *w, uint64_t wait, kctl_event *ev, kctl_api_status *st) {
    uint64_t end = kctl_clock_now(NULL) + wait;
    for (;;) {
        uint64_t now = kctl_clock_now(NULL);
        int rc = kc_next_any(s, w, now < end ? end - now : 0, ev, st);
        if (rc != KCTL_OK || ev->type != KCTL_EVENT_BOOKMARK) return rc;
        kctl_event_clear(ev);
    }
}

static const char *kc_type(int type) {
    static const char *const names[] = { "?", "ADDED", "MODIFIED", "DELETED", "BOOKMARK" };
    return type >= KCTL_EVENT_ADDED && type <= KCTL_EVENT_BOOKMARK ? names[type] : "?";
}

/* "TYPE name" of an event. */
static const char *kc_evs(const kctl_event *ev, char *buf, size_t cap) {
    snprintf(buf, cap, "%s %s", kc_type(ev->type), ev->obj ? kctl_obj_name(ev->obj) : "-");
    return buf;
}

/* The next event must be type of name: true and, if out, the event (the
   caller clears it). */
static bool kc_expect_at(const char *file, int line, kc_store *s, kctl_watch *w, int type, const char *name, kctl_event *out) {
    kctl_event ev;
    char got[160], want[160];
    int rc = kc_next_within(s, w, kc_wait(), &ev, NULL);
    snprintf(want, sizeof want, "%s %s", kc_type(type), name);
    if (rc != KCTL_OK) {
        kt_fail(file, line, "expected %s, got %s", want, kctl_strerror(rc));
        return false;
    }
    if (strcmp(kc_evs(&ev, got, sizeof got), want) != 0) {
        kt_fail(file, line, "expected %s, got %s (at %s)", want, got, ev.resource_version);
        kctl_event_clear(&ev);
        return false;
    }
    if (!ev.resource_version[0]) kt_fail(file, line, "%s: the event carries no resourceVersion", want);
    if (out) *out = ev;
    else kctl_event_clear(&ev);
    return true;
}
#define KC_EXPECT(s, w, type, name, out) kc_expect_at(__FILE__, __LINE__, (s), (w), (type), (name), (out))

/* No event but bookmarks comes within the target's settle time. */
static void kc_none_at(const char *file, int line, kc_store *s, kctl_watch *w) {
    kctl_event ev;
    char got[160];
    int rc = kc_next_within(s, w, kc_t->settle_ns, &ev, NULL);
    if (rc == KCTL_OK) {
        kt_fail(file, line, "expected no event, got %s (at %s)", kc_evs(&ev, got, sizeof got), ev.resource_version);
        kctl_event_clear(&ev);
    } else if (rc != KCTL_ERR_AGAIN) {
        kt_fail(file, line, "expected no event, got %s", kctl_strerror(rc));
    }
}
#define KC_NONE(s, w) kc_none_at(__FILE__, __LINE__, (s), (w))

/* Nothing but what comes after: a new object (with metadata meta, to match
   the watch's selector) must be the watcher's next event. */
static unsigned kc_barriers;
static void kc_barrier_at(const char *file, int line, kc_store *s, kctl_watch *w, const char *meta) {
    char name[32];
    int rc;
    snprintf(name, sizeof name, "zz-barrier-%u", ++kc_barriers);
    if ((rc = kc_create(s, name, meta, NULL, NULL, NULL)) != KCTL_OK) {
        kt_fail(file, line, "create %s: %s", name, kctl_strerror(rc));
        return;
    }
    kc_expect_at(file, line, s, w, KCTL_EVENT_ADDED, name, NULL);
}
#define KC_BARRIER(s, w, meta) kc_barrier_at(__FILE__, __LINE__, (s), (w), (meta))

/* The next n events (bookmarks skipped) into evs; fails and clears them if
   fewer come. */
static bool kc_take_at(const char *file, int line, kc_store *s, kctl_watch *w, size_t n, kctl_event *evs) {
    size_t i;
    for (i = 0; i < n; i++) {
        int rc = kc_next_within(s, w, kc_wait(), &evs[i], NULL);
        if (rc != KCTL_OK) {
            kt_fail(file, line, "event %u of %u: %s", (unsigned)i + 1, (unsigned)n, kctl_strerror(rc));
            while (i--) kctl_event_clear(&evs[i]);
            return false;
        }
    }
    return true;
}

static void kc_clear(kctl_event *evs, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) kctl_event_clear(&evs[i]);
}

/* evs[0..n) are the events want ("TYPE name" each): in that order if
   ordered, else in any. */
static void kc_match_at(const char *file, int line, const kctl_event *evs, size_t n, const char *const *want, bool ordered) {
    bool used[KC_MAX_EVENTS] = { false };
    size_t i, j;
    for (i = 0; i < n; i++) {
        char got[160];
        kc_evs(&evs[i], got, sizeof got);
        for (j = ordered ? i : 0; j < n; j++) {
            if (!used[j] && strcmp(got, want[j]) == 0) break;
            if (ordered) { j = n; break; }
        }
        if (j == n) {
            char all[KC_MAX_EVENTS * 40];
            size_t k, at = 0;
            all[0] = '\0';
            for (k = 0; k < n && at < sizeof all; k++) at += (size_t)snprintf(all + at, sizeof all - at, "%s%s", k ? ", " : "", want[k]);
            kt_fail(file, line, "event %u is %s; expected %s%s", (unsigned)i + 1, got, ordered ? "in this order: " : "in any order: ", all);
            continue;
        }
        used[j] = true;
    }
}

static kctl_watch *kc_watch_at(const char *file, int line, kc_store *s, const char *label, const char *field, const char *from) {
    kctl_list_opts lo;
    kctl_watch *w = NULL;
    int rc;
    memset(&lo, 0, sizeof lo);
    lo.label_selector = label;
    lo.field_selector = field;
    if ((rc = kctl_transport_watch_open(&s->tp, &s->res, &lo, from, &w, NULL)) != KCTL_OK)
        kt_fail(file, line, "watch from \"%s\": %s", from ? from : "", kctl_strerror(rc));
    return w;
}
#define KC_WATCH(s, label, field, from) kc_watch_at(__FILE__, __LINE__, (s), (label), (field), (from))

/* The version of a list of everything now. */
static void kc_list_rv_at(const char *file, int line, kc_store *s, char rv[KCTL_RV_MAX]) {
    kctl_list_result r;
    int rc = kc_list(s, NULL, NULL, 0, NULL, &r, NULL);
    rv[0] = '\0';
    if (rc != KCTL_OK) {
        kt_fail(file, line, "list: %s", kctl_strerror(rc));
        return;
    }
    snprintf(rv, KCTL_RV_MAX, "%s", r.resource_version);
    if (!rv[0]) kt_fail(file, line, "a list without a resourceVersion");
    kctl_list_result_free(&r);
}
#define KC_LIST_RV(s, rv) kc_list_rv_at(__FILE__, __LINE__, (s), (rv))

/* ------------------------------------------------- create, get, update */
/* create and get; EXISTS leaves the stored object alone; NOT_FOUND; a
   name no object can have is refused. */
static void kc_create_get(void) {
    kc_store s;
    kctl_obj *o = NULL, *g = NULL;
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", "\"labels\":{\"app\":\"web\"}", "\"spec\":{\"n\":1}", &o, NULL), KCTL_OK);
    KT_CHECK(o != NULL);
    if (o) {
        KT_EQ_STR(kctl_obj_name(o), "a");
        KT_EQ_STR(kctl_obj_namespace(o), kc_ns(&s));
        KT_EQ_STR(kctl_obj_label(o, "app"), "web");
        KT_EQ_INT(kc_int(o, "spec.n"), 1);
        KT_CHECK(kctl_obj_resource_version(o)[0] != '\0');
    }
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "a", &g, NULL), KCTL_OK);
    if (o && g) {
        KT_EQ_STR(kctl_obj_resource_version(g), kctl_obj_resource_version(o));
        KT_EQ_INT(kc_int(g, "spec.n"), 1);
    }
    kctl_obj_unref(g);
    g = NULL;
    KT_EQ_INT(kc_create(&s, "a", NULL, "\"spec\":{\"n\":2}", &g, NULL), KCTL_ERR_EXISTS);
    KT_CHECK(g == NULL);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "a", &g, NULL), KCTL_OK);
    if (o && g) {
        KT_EQ_STR(kctl_obj_resource_version(g), kctl_obj_resource_version(o));
        KT_EQ_INT(kc_int(g, "spec.n"), 1);
    }
    kctl_obj_unref(g);
    g = NULL;
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "nope", &g, NULL), KCTL_ERR_NOT_FOUND);
    KT_CHECK(g == NULL);
    KT_EQ_INT(kc_create(&s, "a/b", NULL, NULL, NULL, NULL), KCTL_ERR_INVALID_ARG);
    kctl_obj_unref(o);
    kc_close(&s);
}

/* update: a stale resourceVersion is CONFLICT (nothing changes), the
   current one writes, and so does none (where the store takes updates
   without one); NOT_FOUND for an object that is not there. */
static void kc_update_preconditions(void) {
    kc_store s;
    kctl_obj *o = NULL;
    char rv1[KCTL_RV_MAX], rv2[KCTL_RV_MAX], meta[128];
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_rv_of(&s, "a", rv1), KCTL_OK);
    kc_fmt(meta, sizeof meta, "\"resourceVersion\":\"%s\"", rv1);
    KT_EQ_INT(kc_update(&s, "a", meta, "\"spec\":{\"n\":2}", &o, NULL), KCTL_OK);
    snprintf(rv2, sizeof rv2, "%s", o ? kctl_obj_resource_version(o) : "");
    KT_CHECK(rv2[0] && strcmp(rv2, rv1) != 0);
    KT_EQ_INT(kc_int(o, "spec.n"), 2);
    if (KC_HAS(KC_CAP_ORDERED_VERSIONS)) KT_CHECK(kc_u64(rv2) > kc_u64(rv1));
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kc_update(&s, "a", meta, "\"spec\":{\"n\":3}", &o, NULL), KCTL_ERR_CONFLICT); /* rv1 is stale */
    KT_CHECK(o == NULL);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "a", &o, NULL), KCTL_OK);
    KT_EQ_INT(kc_int(o, "spec.n"), 2);
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", rv2);
    kctl_obj_unref(o);
    o = NULL;
    if (KC_HAS(KC_CAP_UNCONDITIONAL_UPDATE)) {
        KT_EQ_INT(kc_update_raw(&s, "a", NULL, "\"spec\":{\"n\":4}", &o, NULL), KCTL_OK); /* no version: unconditional */
        KT_EQ_INT(kc_int(o, "spec.n"), 4);
        kctl_obj_unref(o);
    }
    KT_EQ_INT(kc_update(&s, "zz", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_ERR_NOT_FOUND);
    kc_close(&s);
}

/* uid and creationTimestamp: set on create, kept by every write (a
   creationTimestamp sent along is ignored); a new incarnation of a name
   has a new uid. */
static void kc_server_metadata(void) {
    kc_store s;
    kctl_obj *o = NULL, *u = NULL;
    char uid[128], ts[64], v[64];
    KC_NEED(KC_CAP_SERVER_META);
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", "\"creationTimestamp\":\"2001-01-01T00:00:00Z\"", "\"spec\":{\"n\":1}", &o, NULL), KCTL_OK);
    snprintf(uid, sizeof uid, "%s", o ? kctl_obj_uid(o) : "");
    kc_str(o, "metadata.creationTimestamp", ts, sizeof ts);
    KT_CHECK(uid[0] != '\0');
    KT_CHECK(ts[0] != '\0' && strcmp(ts, "2001-01-01T00:00:00Z") != 0); /* the server's time, not the client's */
    kctl_obj_unref(o);
    KT_EQ_INT(kc_update(&s, "a", "\"creationTimestamp\":\"2000-01-01T00:00:00Z\"", "\"spec\":{\"n\":2}", &u, NULL), KCTL_OK);
    KT_EQ_STR(u ? kctl_obj_uid(u) : "", uid);
    KT_EQ_STR(kc_str(u, "metadata.creationTimestamp", v, sizeof v), ts);
    kctl_obj_unref(u);
    u = NULL;
    if (KC_HAS(KC_CAP_STATUS)) {
        KT_EQ_INT(kc_update_status(&s, "a", NULL, "\"status\":{\"phase\":\"up\"}", &u, NULL), KCTL_OK);
        KT_EQ_STR(u ? kctl_obj_uid(u) : "", uid);
        KT_EQ_STR(kc_str(u, "metadata.creationTimestamp", v, sizeof v), ts);
        kctl_obj_unref(u);
        u = NULL;
    }
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "a", "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}", KCTL_NTS, 0, &u, NULL), KCTL_OK);
    KT_EQ_STR(u ? kctl_obj_uid(u) : "", uid);
    kctl_obj_unref(u);
    u = NULL;
    KT_EQ_INT(kc_create(&s, "b", NULL, NULL, &u, NULL), KCTL_OK);
    KT_CHECK(u && kctl_obj_uid(u)[0] && strcmp(kctl_obj_uid(u), uid) != 0);
    kctl_obj_unref(u);
    u = NULL;
    KT_EQ_INT(kc_remove(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, &u, NULL), KCTL_OK); /* another object of the same name */
    KT_CHECK(u && kctl_obj_uid(u)[0] && strcmp(kctl_obj_uid(u), uid) != 0);
    kctl_obj_unref(u);
    kc_close(&s);
}

/* generation: 1 on create; a spec change bumps it; metadata, status and
   a generation the client sends do not. */
static void kc_generation(void) {
    kc_store s;
    kctl_obj *o = NULL;
    KC_NEED(KC_CAP_GENERATION);
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "g", NULL, "\"spec\":{\"n\":1}", &o, NULL), KCTL_OK);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 1);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kc_update(&s, "g", "\"labels\":{\"a\":\"b\"},\"annotations\":{\"c\":\"d\"}", "\"spec\":{\"n\":1}", &o, NULL), KCTL_OK);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 1);
    KT_EQ_STR(o ? kctl_obj_label(o, "a") : "", "b");
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kc_update(&s, "g", "\"labels\":{\"a\":\"b\"},\"generation\":99", "\"spec\":{\"n\":2}", &o, NULL), KCTL_OK);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
    kctl_obj_unref(o);
    o = NULL;
    if (KC_HAS(KC_CAP_STATUS)) {
        KT_EQ_INT(kc_update_status(&s, "g", NULL, "\"status\":{\"phase\":\"up\"}", &o, NULL), KCTL_OK);
        KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
        kctl_obj_unref(o);
        o = NULL;
    }
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "g", "{\"metadata\":{\"labels\":{\"e\":\"f\"}}}", KCTL_NTS, 0, &o, NULL), KCTL_OK);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 2);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "g", "{\"spec\":{\"n\":3}}", KCTL_NTS, 0, &o, NULL), KCTL_OK);
    KT_EQ_INT(o ? kctl_obj_generation(o) : 0, 3);
    kctl_obj_unref(o);
    kc_close(&s);
}

/* The status subresource: create drops the status, update ignores the one
   sent, update_status changes the status alone (with the same
   precondition as update). */
static void kc_status_subresource(void) {
    kc_store s;
    kctl_obj *o = NULL;
    char v[64], rv[KCTL_RV_MAX], meta[128];
    KC_NEED(KC_CAP_STATUS);
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", NULL, "\"spec\":{\"n\":1},\"status\":{\"phase\":\"sent\"}", &o, NULL), KCTL_OK);
    KT_CHECK(kc_absent(o, "status"));
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "a", &o, NULL), KCTL_OK);
    KT_CHECK(kc_absent(o, "status"));
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kc_update_status(&s, "a", NULL, "\"spec\":{\"n\":99},\"status\":{\"phase\":\"new\"}", &o, NULL), KCTL_OK);
    KT_EQ_STR(kc_str(o, "status.phase", v, sizeof v), "new");
    KT_EQ_INT(kc_int(o, "spec.n"), 1); /* the spec sent with a status write is not written */
    snprintf(rv, sizeof rv, "%s", o ? kctl_obj_resource_version(o) : "");
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":2},\"status\":{\"phase\":\"hacked\"}", &o, NULL), KCTL_OK);
    KT_EQ_STR(kc_str(o, "status.phase", v, sizeof v), "new"); /* the status sent with an update is not written */
    KT_EQ_INT(kc_int(o, "spec.n"), 2);
    kctl_obj_unref(o);
    o = NULL;
    kc_fmt(meta, sizeof meta, "\"resourceVersion\":\"%s\"", rv); /* stale now */
    KT_EQ_INT(kc_update_status(&s, "a", meta, "\"status\":{\"phase\":\"late\"}", NULL, NULL), KCTL_ERR_CONFLICT);
    KT_EQ_INT(kc_rv_of(&s, "a", rv), KCTL_OK);
    kc_fmt(meta, sizeof meta, "\"resourceVersion\":\"%s\"", rv);
    KT_EQ_INT(kc_update_status(&s, "a", meta, "\"status\":{\"phase\":\"ready\"}", &o, NULL), KCTL_OK);
    KT_EQ_STR(kc_str(o, "status.phase", v, sizeof v), "ready");
    KT_EQ_INT(kc_int(o, "spec.n"), 2);
    kctl_obj_unref(o);
    KT_EQ_INT(kc_update_status(&s, "zz", NULL, "\"status\":{}", NULL, NULL), KCTL_ERR_NOT_FOUND);
    kc_close(&s);
}

/* A write that changes nothing is no write: the same version, no event. */
static void kc_noop_writes(void) {
    kc_store s;
    kctl_obj *o = NULL;
    kctl_watch *w;
    char rv[KCTL_RV_MAX], from[KCTL_RV_MAX];
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", "\"labels\":{\"app\":\"web\"}", "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    if (KC_HAS(KC_CAP_STATUS)) KT_EQ_INT(kc_update_status(&s, "a", NULL, "\"status\":{\"phase\":\"up\"}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_rv_of(&s, "a", rv), KCTL_OK);
    KC_LIST_RV(&s, from);
    if (!(w = KC_WATCH(&s, NULL, NULL, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_update(&s, "a", "\"labels\":{\"app\":\"web\"}", "\"spec\":{\"n\":1}", &o, NULL), KCTL_OK);
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", rv);
    kctl_obj_unref(o);
    o = NULL;
    if (KC_HAS(KC_CAP_STATUS)) {
        KT_EQ_INT(kc_update_status(&s, "a", NULL, "\"status\":{\"phase\":\"up\"}", &o, NULL), KCTL_OK);
        KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", rv);
        kctl_obj_unref(o);
        o = NULL;
    }
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "a", "{\"spec\":{\"n\":1}}", KCTL_NTS, 0, &o, NULL), KCTL_OK);
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", rv);
    kctl_obj_unref(o);
    KT_EQ_INT(kc_rv_of(&s, "a", from), KCTL_OK);
    KT_EQ_STR(from, rv);
    KC_BARRIER(&s, w, NULL); /* and no event came before the next write's */
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* A JSON merge patch; a resourceVersion in it is a precondition;
   KCTL_PATCH_STATUS patches the status alone. */
static void kc_merge_patch(void) {
    kc_store s;
    kctl_obj *o = NULL;
    char v[64], rv1[KCTL_RV_MAX], rv2[KCTL_RV_MAX], p[256];
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "p", "\"labels\":{\"a\":\"1\"}", "\"spec\":{\"x\":1,\"y\":2}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_rv_of(&s, "p", rv1), KCTL_OK);
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "p", "{\"spec\":{\"y\":null,\"z\":3},\"metadata\":{\"labels\":{\"b\":\"2\"}}}",
                                   KCTL_NTS, 0, &o, NULL), KCTL_OK);
    KT_EQ_STR(o ? kctl_obj_label(o, "a") : "", "1");
    KT_EQ_STR(o ? kctl_obj_label(o, "b") : "", "2");
    KT_EQ_INT(kc_int(o, "spec.x"), 1);
    KT_EQ_INT(kc_int(o, "spec.z"), 3);
    KT_CHECK(kc_absent(o, "spec.y"));
    snprintf(rv2, sizeof rv2, "%s", o ? kctl_obj_resource_version(o) : "");
    KT_CHECK(strcmp(rv1, rv2) != 0);
    kctl_obj_unref(o);
    o = NULL;
    kc_fmt(p, sizeof p, "{\"metadata\":{\"resourceVersion\":\"%s\"},\"spec\":{\"x\":5}}", rv1); /* stale */
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "p", p, KCTL_NTS, 0, &o, NULL), KCTL_ERR_CONFLICT);
    KT_CHECK(o == NULL);
    kc_fmt(p, sizeof p, "{\"metadata\":{\"resourceVersion\":\"%s\"},\"spec\":{\"x\":6}}", rv2);
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "p", p, KCTL_NTS, 0, &o, NULL), KCTL_OK);
    KT_EQ_INT(kc_int(o, "spec.x"), 6);
    kctl_obj_unref(o);
    o = NULL;
    if (KC_HAS(KC_CAP_STATUS)) {
        KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "p", "{\"status\":{\"phase\":\"Ready\"},\"spec\":{\"x\":99}}", KCTL_NTS,
                                       KCTL_PATCH_STATUS, &o, NULL), KCTL_OK);
        KT_EQ_STR(kc_str(o, "status.phase", v, sizeof v), "Ready");
        KT_EQ_INT(kc_int(o, "spec.x"), 6);
        kctl_obj_unref(o);
        o = NULL;
        KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "p", "{\"spec\":{\"x\":7},\"status\":{\"phase\":\"hacked\"}}", KCTL_NTS, 0, &o,
                                       NULL), KCTL_OK);
        KT_EQ_STR(kc_str(o, "status.phase", v, sizeof v), "Ready");
        KT_EQ_INT(kc_int(o, "spec.x"), 7);
        kctl_obj_unref(o);
    }
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "missing", "{}", KCTL_NTS, 0, NULL, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kctl_transport_patch(&s.tp, &s.res, "p", "{", KCTL_NTS, 0, NULL, NULL), KCTL_ERR_INVALID_ARG);
    kc_close(&s);
}

/* ------------------------------------------------------------- delete */
/* remove: preconditions on resourceVersion and uid (CONFLICT, nothing
   removed), then gone (*out NULL), then NOT_FOUND. */
static void kc_delete(void) {
    kc_store s;
    kctl_obj *o = NULL, *g = NULL;
    char rv1[KCTL_RV_MAX], rv2[KCTL_RV_MAX], uid[160], wrong[200];
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_rv_of(&s, "a", rv1), KCTL_OK);
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":2}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_rv_of(&s, "a", rv2), KCTL_OK);
    KT_EQ_INT(kc_remove(&s, "a", rv1, NULL, &o, NULL), KCTL_ERR_CONFLICT);
    KT_CHECK(o == NULL);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "a", &g, NULL), KCTL_OK);
    kctl_obj_unref(g);
    g = NULL;
    KT_EQ_INT(kc_remove(&s, "a", rv2, NULL, &o, NULL), KCTL_OK);
    KT_CHECK(o == NULL); /* no finalizers: gone, nothing to answer */
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "a", &g, NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(kc_remove(&s, "a", NULL, NULL, NULL, NULL), KCTL_ERR_NOT_FOUND);
    /* the uid precondition: against the stored object's uid, whatever it is */
    KT_EQ_INT(kc_create(&s, "b", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "b", &g, NULL), KCTL_OK);
    snprintf(uid, sizeof uid, "%s", g ? kctl_obj_uid(g) : "");
    kctl_obj_unref(g);
    g = NULL;
    if (KC_HAS(KC_CAP_SERVER_META)) KT_CHECK(uid[0] != '\0');
    kc_fmt(wrong, sizeof wrong, "not-%s", uid);
    KT_EQ_INT(kc_remove(&s, "b", NULL, wrong, NULL, NULL), KCTL_ERR_CONFLICT);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "b", &g, NULL), KCTL_OK);
    kctl_obj_unref(g);
    g = NULL;
    KT_EQ_INT(kc_remove(&s, "b", NULL, uid, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "b", &g, NULL), KCTL_ERR_NOT_FOUND);
    kc_close(&s);
}

/* Finalizers: a delete marks (deletionTimestamp, generation bumped) and
   answers the marked object; a second delete changes nothing; no new
   finalizers while deleting (422); the write removing the last one
   removes the object, and watchers get DELETED. */
static void kc_finalizers(void) {
    kc_store s;
    kctl_obj *m = NULL, *o = NULL;
    kctl_watch *w;
    kctl_event ev;
    kctl_api_status st;
    char from[KCTL_RV_MAX], rv[KCTL_RV_MAX], up[KCTL_RV_MAX];
    KC_NEED(KC_CAP_FINALIZERS);
    if (!kc_open(&s)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kc_create(&s, "f", "\"finalizers\":[\"example.com/x\"]", "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KC_LIST_RV(&s, from);
    if (!(w = KC_WATCH(&s, NULL, NULL, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_remove(&s, "f", NULL, NULL, &m, NULL), KCTL_OK);
    KT_CHECK(m != NULL);
    KT_CHECK(m && kctl_obj_deletion_timestamp(m) != NULL);
    KT_EQ_U64(m ? kctl_obj_finalizer_count(m) : 0, 1);
    if (KC_HAS(KC_CAP_GENERATION)) KT_EQ_INT(m ? kctl_obj_generation(m) : 0, 2); /* the mark bumps it */
    snprintf(rv, sizeof rv, "%s", m ? kctl_obj_resource_version(m) : "");
    if (KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "f", &ev)) {
        KT_CHECK(kctl_obj_deletion_timestamp(ev.obj) != NULL);
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "f", &o, NULL), KCTL_OK); /* still there */
    KT_CHECK(o && kctl_obj_deletion_timestamp(o) != NULL);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kc_remove(&s, "f", NULL, NULL, &o, NULL), KCTL_OK); /* again: nothing new */
    KT_EQ_STR(o ? kctl_obj_resource_version(o) : "", rv);
    kctl_obj_unref(o);
    o = NULL;
    KT_EQ_INT(kc_update(&s, "f", "\"finalizers\":[\"example.com/x\",\"example.com/y\"]", "\"spec\":{\"n\":1}", NULL, &st),
              KCTL_ERR_INVALID_ARG);
    if (KC_HAS(KC_CAP_STATUS_DETAIL)) {
        KT_EQ_INT(st.code, 422);
        KT_EQ_STR(st.reason, "Invalid");
    }
    KT_EQ_INT(kc_rv_of(&s, "f", up), KCTL_OK);
    KT_EQ_STR(up, rv);
    KC_BARRIER(&s, w, NULL); /* the second delete and the refusal sent nothing */
    KT_EQ_INT(kc_update(&s, "f", "\"finalizers\":[]", "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "f", &o, NULL), KCTL_ERR_NOT_FOUND);
    if (KC_EXPECT(&s, w, KCTL_EVENT_DELETED, "f", &ev)) {
        if (KC_HAS(KC_CAP_EVENT_VERSIONS)) KT_EQ_STR(kctl_obj_resource_version(ev.obj), ev.resource_version);
        if (KC_HAS(KC_CAP_ORDERED_VERSIONS)) KT_CHECK(kc_u64(ev.resource_version) > kc_u64(rv));
        kctl_event_clear(&ev);
    }
    kctl_transport_watch_close(&s.tp, w);
    kctl_obj_unref(m);
    kctl_api_status_clear(&st);
    kc_close(&s);
}

/* ---------------------------------------------------------------- list */
static void kc_seed(kc_store *s, int n) {
    int i;
    for (i = 0; i < n; i++) {
        char name[16], meta[64], spec[32];
        snprintf(name, sizeof name, "c%d", i);
        snprintf(meta, sizeof meta, "\"labels\":{\"app\":\"%s\"}", i % 2 ? "web" : "db");
        snprintf(spec, sizeof spec, "\"spec\":{\"n\":%d}", i);
        KT_EQ_INT(kc_create(s, name, meta, spec, NULL, NULL), KCTL_OK);
    }
}

/* list: every object, at the version the list is from. */
static void kc_list_all(void) {
    kc_store s;
    kctl_list_result r;
    char names[256], rv[KCTL_RV_MAX];
    size_t i;
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_list(&s, NULL, NULL, 0, NULL, &r, NULL), KCTL_OK); /* empty, and still a version */
    KT_EQ_U64(r.items.count, 0);
    KT_CHECK(r.resource_version[0] != '\0');
    kctl_list_result_free(&r);
    kc_seed(&s, 5);
    KT_EQ_INT(kc_list(&s, NULL, NULL, 0, NULL, &r, NULL), KCTL_OK);
    KT_EQ_STR(kc_names(&r.items, names, sizeof names), "c0 c1 c2 c3 c4");
    KT_EQ_STR(r.continue_token, "");
    KT_CHECK(r.resource_version[0] != '\0');
    for (i = 0; i < r.items.count; i++) {
        const kctl_obj *o = r.items.items[i];
        KT_EQ_INT(kc_rv_of(&s, kctl_obj_name(o), rv), KCTL_OK);
        KT_EQ_STR(kctl_obj_resource_version(o), rv);
        KT_EQ_STR(kctl_obj_namespace(o), kc_ns(&s));
        if (KC_HAS(KC_CAP_ORDERED_VERSIONS)) KT_CHECK(kc_u64(r.resource_version) >= kc_u64(rv));
    }
    kctl_list_result_free(&r);
    KT_EQ_INT(kc_list(&s, NULL, NULL, 5, NULL, &r, NULL), KCTL_OK); /* a limit it does not reach: one page */
    KT_EQ_U64(r.items.count, 5);
    KT_EQ_STR(r.continue_token, "");
    kctl_list_result_free(&r);
    kc_close(&s);
}

/* Pages of at most limit whose concatenation is the whole list, each
   object once, at the versions a full list gives. */
static void kc_list_paging(void) {
    kc_store s;
    kctl_list_result full, r;
    char cont[KCTL_CONTINUE_MAX], seen[512], names[256], sorted[256];
    size_t i, j, at = 0;
    int pages = 0;
    if (!kc_open(&s)) return;
    kc_seed(&s, 5);
    KT_EQ_INT(kc_list(&s, NULL, NULL, 0, NULL, &full, NULL), KCTL_OK);
    cont[0] = seen[0] = '\0';
    do {
        KT_EQ_INT(kc_list(&s, NULL, NULL, 2, cont, &r, NULL), KCTL_OK);
        KT_CHECK(r.items.count <= 2);
        KT_CHECK(r.items.count > 0 || !r.continue_token[0]); /* only the last page may be empty */
        for (i = 0; i < r.items.count; i++) {
            const kctl_obj *o = r.items.items[i];
            at += (size_t)snprintf(seen + at, sizeof seen - at, "%s ", kctl_obj_name(o));
            for (j = 0; j < full.items.count; j++)
                if (!strcmp(kctl_obj_name(full.items.items[j]), kctl_obj_name(o)))
                    KT_EQ_STR(kctl_obj_resource_version(o), kctl_obj_resource_version(full.items.items[j]));
        }
        snprintf(cont, sizeof cont, "%s", r.continue_token);
        kctl_list_result_free(&r);
    } while (cont[0] && ++pages < 10);
    KT_CHECK(pages >= 2 && pages < 10); /* 5 objects, 2 a page: 3 pages at least */
    KT_EQ_STR(kc_sort_words(seen, sorted, sizeof sorted), kc_names(&full.items, names, sizeof names)); /* each once */
    kctl_list_result_free(&full);
    kc_close(&s);
}

/* Every page from the first page's version: writes between pages do not
   show (a deletion, a creation, a change of an object still to come). */
static void kc_list_paging_snapshot(void) {
    kc_store s;
    kctl_list_result full, r;
    char cont[KCTL_CONTINUE_MAX], rv0[KCTL_RV_MAX], names[256], sorted[256], got[512], victim[64] = "", changed[64] = "";
    size_t i, j, at = 0;
    int pages = 0;
    KC_NEED(KC_CAP_PAGING_SNAPSHOT);
    if (!kc_open(&s)) return;
    kc_seed(&s, 6);
    KT_EQ_INT(kc_list(&s, NULL, NULL, 0, NULL, &full, NULL), KCTL_OK);
    KT_EQ_INT(kc_list(&s, NULL, NULL, 2, NULL, &r, NULL), KCTL_OK);
    snprintf(rv0, sizeof rv0, "%s", r.resource_version);
    snprintf(cont, sizeof cont, "%s", r.continue_token);
    KT_CHECK(cont[0] != '\0');
    got[0] = '\0';
    for (i = 0; i < r.items.count; i++) at += (size_t)snprintf(got + at, sizeof got - at, "%s ", kctl_obj_name(r.items.items[i]));
    /* two objects of the pages to come: one goes, one changes; one is new */
    for (j = 0; j < full.items.count; j++) {
        const char *n = kctl_obj_name(full.items.items[j]);
        bool paged = false;
        for (i = 0; i < r.items.count; i++) paged = paged || !strcmp(n, kctl_obj_name(r.items.items[i]));
        if (paged) continue;
        if (!victim[0]) snprintf(victim, sizeof victim, "%s", n);
        else if (!changed[0]) snprintf(changed, sizeof changed, "%s", n);
    }
    kctl_list_result_free(&r);
    KT_EQ_INT(kc_remove(&s, victim, NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_update(&s, changed, NULL, "\"spec\":{\"n\":100}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "c2a", NULL, NULL, NULL, NULL), KCTL_OK);
    while (cont[0] && ++pages < 10) {
        KT_EQ_INT(kc_list(&s, NULL, NULL, 2, cont, &r, NULL), KCTL_OK);
        KT_EQ_STR(r.resource_version, rv0);
        for (i = 0; i < r.items.count; i++) {
            const kctl_obj *o = r.items.items[i];
            at += (size_t)snprintf(got + at, sizeof got - at, "%s ", kctl_obj_name(o));
            for (j = 0; j < full.items.count; j++) /* as it was at the first page */
                if (!strcmp(kctl_obj_name(full.items.items[j]), kctl_obj_name(o)))
                    KT_EQ_STR(kctl_obj_resource_version(o), kctl_obj_resource_version(full.items.items[j]));
            if (!strcmp(kctl_obj_name(o), changed)) KT_CHECK(kc_int(o, "spec.n") != 100);
        }
        snprintf(cont, sizeof cont, "%s", r.continue_token);
        kctl_list_result_free(&r);
    }
    KT_EQ_STR(kc_sort_words(got, sorted, sizeof sorted), kc_names(&full.items, names, sizeof names)); /* the list at the first page */
    kctl_list_result_free(&full);
    /* a new list sees the writes */
    KT_EQ_INT(kc_list(&s, NULL, NULL, 0, NULL, &full, NULL), KCTL_OK);
    {
        char spaced[300], word[80];
        kc_fmt(spaced, sizeof spaced, " %s ", kc_names(&full.items, names, sizeof names));
        KT_CHECK(strstr(spaced, " c2a ") != NULL);
        kc_fmt(word, sizeof word, " %s ", victim);
        KT_CHECK(strstr(spaced, word) == NULL);
    }
    KT_EQ_U64(full.items.count, 6);
    kctl_list_result_free(&full);
    kc_close(&s);
}

/* Label selectors on list (and on a paged list); a malformed one is refused. */
static void kc_list_label_selector(void) {
    kc_store s;
    kctl_list_result r;
    char names[256], cont[KCTL_CONTINUE_MAX];
    int pages = 0;
    KC_NEED(KC_CAP_LABEL_SELECTOR);
    if (!kc_open(&s)) return;
    kc_seed(&s, 5);
    KT_EQ_STR(kc_select(&s, "app=web", NULL, names, sizeof names), "c1 c3");
    KT_EQ_STR(kc_select(&s, "app!=web", NULL, names, sizeof names), "c0 c2 c4");
    KT_EQ_STR(kc_select(&s, "app in (web,db)", NULL, names, sizeof names), "c0 c1 c2 c3 c4");
    KT_EQ_STR(kc_select(&s, "!app", NULL, names, sizeof names), "");
    KT_EQ_STR(kc_select(&s, "app", NULL, names, sizeof names), "c0 c1 c2 c3 c4");
    KT_EQ_STR(kc_select(&s, "app in (web", NULL, names, sizeof names), "ERROR invalid argument");
    cont[0] = '\0';
    names[0] = '\0';
    do {
        KT_EQ_INT(kc_list(&s, "app=db", NULL, 1, cont, &r, NULL), KCTL_OK);
        KT_CHECK(r.items.count <= 1);
        if (r.items.count) KT_EQ_STR(kctl_obj_label(r.items.items[0], "app"), "db");
        snprintf(cont, sizeof cont, "%s", r.continue_token);
        pages += (int)r.items.count;
        kctl_list_result_free(&r);
    } while (cont[0] && pages < 10);
    KT_EQ_INT(pages, 3);
    kc_close(&s);
}

/* Field selectors: metadata.name and metadata.namespace. */
static void kc_list_field_selector(void) {
    kc_store s;
    char names[256], sel[160];
    KC_NEED(KC_CAP_FIELD_SELECTOR);
    if (!kc_open(&s)) return;
    kc_seed(&s, 5);
    KT_EQ_STR(kc_select(&s, NULL, "metadata.name=c2", names, sizeof names), "c2");
    KT_EQ_STR(kc_select(&s, NULL, "metadata.name!=c2", names, sizeof names), "c0 c1 c3 c4");
    if (*kc_ns(&s)) {
        kc_fmt(sel, sizeof sel, "metadata.namespace=%s", kc_ns(&s));
        KT_EQ_STR(kc_select(&s, NULL, sel, names, sizeof names), "c0 c1 c2 c3 c4");
        kc_fmt(sel, sizeof sel, "metadata.namespace=%s,metadata.name=c4", kc_ns(&s));
        KT_EQ_STR(kc_select(&s, NULL, sel, names, sizeof names), "c4");
    }
    if (KC_HAS(KC_CAP_LABEL_SELECTOR)) KT_EQ_STR(kc_select(&s, "app=web", "metadata.name!=c1", names, sizeof names), "c3");
    KT_EQ_STR(kc_select(&s, NULL, "spec.n=1", names, sizeof names), "ERROR invalid argument"); /* not a field it selects by */
    kc_close(&s);
}

/* --------------------------------------------------------------- watch */
/* From "": an ADDED for every object there, then the changes as they come;
   the last ADDED's version is where the list ends: a watch from it
   repeats nothing and misses nothing. */
static void kc_watch_from_empty(void) {
    kc_store s;
    kctl_watch *w;
    kctl_event evs[2], ev;
    static const char *const want[] = { "ADDED a", "ADDED b" };
    char v[64], last[KCTL_RV_MAX];
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "b", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":2}", NULL, NULL), KCTL_OK); /* a is newer than b */
    if (!(w = KC_WATCH(&s, NULL, NULL, ""))) { kc_close(&s); return; }
    last[0] = '\0';
    if (kc_take_at(__FILE__, __LINE__, &s, w, 2, evs)) { /* what is there has no write order */
        kc_match_at(__FILE__, __LINE__, evs, 2, want, false);
        KT_EQ_INT(kc_int(!strcmp(kctl_obj_name(evs[0].obj), "a") ? evs[0].obj : evs[1].obj, "spec.n"), 2);
        snprintf(last, sizeof last, "%s", evs[1].resource_version);
        kc_clear(evs, 2);
    }
    KC_NONE(&s, w);
    kctl_transport_watch_close(&s.tp, w);
    KT_EQ_INT(kc_update(&s, "b", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    if (!(w = KC_WATCH(&s, NULL, NULL, last))) { kc_close(&s); return; }
    KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "b", NULL);
    KT_EQ_INT(kc_create(&s, "c", NULL, NULL, NULL, NULL), KCTL_OK);
    KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "c", NULL);
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":3}", NULL, NULL), KCTL_OK);
    if (KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "a", &ev)) {
        KT_EQ_INT(kc_int(ev.obj, "spec.n"), 3);
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(kc_remove(&s, "b", NULL, NULL, NULL, NULL), KCTL_OK);
    if (KC_EXPECT(&s, w, KCTL_EVENT_DELETED, "b", &ev)) {
        KT_EQ_STR(kc_str(ev.obj, "metadata.name", v, sizeof v), "b");
        kctl_event_clear(&ev);
    }
    KC_BARRIER(&s, w, NULL);
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* From a list's version: exactly the changes after it (in order, at
   rising versions, where the target sends each write), then live ones. */
static void kc_watch_from_list(void) {
    kc_store s;
    kctl_watch *w;
    kctl_event evs[3], ev;
    static const char *const want[] = { "ADDED c", "MODIFIED a", "DELETED b" };
    char from[KCTL_RV_MAX];
    size_t i;
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "b", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KC_LIST_RV(&s, from);
    KT_EQ_INT(kc_create(&s, "c", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":2}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_remove(&s, "b", NULL, NULL, NULL, NULL), KCTL_OK);
    if (!(w = KC_WATCH(&s, NULL, NULL, from))) { kc_close(&s); return; }
    if (kc_take_at(__FILE__, __LINE__, &s, w, 3, evs)) {
        kc_match_at(__FILE__, __LINE__, evs, 3, want, KC_HAS(KC_CAP_EVENT_PER_WRITE));
        for (i = 0; i < 3; i++) {
            if (!strcmp(kctl_obj_name(evs[i].obj), "a")) KT_EQ_INT(kc_int(evs[i].obj, "spec.n"), 2);
            if (!strcmp(kctl_obj_name(evs[i].obj), "b")) KT_EQ_INT(kc_int(evs[i].obj, "spec.n"), 1); /* its last state */
            if (KC_HAS(KC_CAP_ORDERED_VERSIONS))
                KT_CHECK(kc_u64(evs[i].resource_version) > (i ? kc_u64(evs[i - 1].resource_version) : kc_u64(from)));
        }
        kc_clear(evs, 3);
    }
    KC_NONE(&s, w);
    /* live: one event per write when read before the next */
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":3}", NULL, NULL), KCTL_OK);
    if (KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "a", &ev)) {
        KT_EQ_INT(kc_int(ev.obj, "spec.n"), 3);
        kctl_event_clear(&ev);
    }
    if (KC_HAS(KC_CAP_EVENT_PER_WRITE)) { /* two writes to one object: two events, in order */
        KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":4}", NULL, NULL), KCTL_OK);
        KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":5}", NULL, NULL), KCTL_OK);
        if (KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "a", &ev)) {
            KT_EQ_INT(kc_int(ev.obj, "spec.n"), 4);
            kctl_event_clear(&ev);
        }
        if (KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "a", &ev)) {
            KT_EQ_INT(kc_int(ev.obj, "spec.n"), 5);
            kctl_event_clear(&ev);
        }
    }
    KC_BARRIER(&s, w, NULL);
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* An event's object carries the event's version: the write's answer, a
   get, and for a DELETED the deletion's (after every earlier one). */
static void kc_watch_event_versions(void) {
    kc_store s;
    kctl_watch *w;
    kctl_event ev;
    kctl_obj *o = NULL;
    char from[KCTL_RV_MAX], rv[KCTL_RV_MAX], got[KCTL_RV_MAX];
    KC_NEED(KC_CAP_EVENT_VERSIONS);
    if (!kc_open(&s)) return;
    KC_LIST_RV(&s, from);
    if (!(w = KC_WATCH(&s, NULL, NULL, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, &o, NULL), KCTL_OK);
    snprintf(rv, sizeof rv, "%s", o ? kctl_obj_resource_version(o) : "");
    kctl_obj_unref(o);
    o = NULL;
    if (KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "a", &ev)) {
        KT_EQ_STR(ev.resource_version, rv);
        KT_EQ_STR(kctl_obj_resource_version(ev.obj), rv);
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":2}", &o, NULL), KCTL_OK);
    snprintf(rv, sizeof rv, "%s", o ? kctl_obj_resource_version(o) : "");
    kctl_obj_unref(o);
    KT_EQ_INT(kc_rv_of(&s, "a", got), KCTL_OK);
    KT_EQ_STR(got, rv);
    if (KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "a", &ev)) {
        KT_EQ_STR(ev.resource_version, rv);
        KT_EQ_STR(kctl_obj_resource_version(ev.obj), rv);
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(kc_remove(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    if (KC_EXPECT(&s, w, KCTL_EVENT_DELETED, "a", &ev)) {
        KT_EQ_STR(kctl_obj_resource_version(ev.obj), ev.resource_version);
        KT_CHECK(strcmp(ev.resource_version, rv) != 0); /* the deletion's version, not the last write's */
        if (KC_HAS(KC_CAP_ORDERED_VERSIONS)) KT_CHECK(kc_u64(ev.resource_version) > kc_u64(rv));
        kctl_event_clear(&ev);
    }
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* A watch closed (or broken) is resumed from the last event's version:
   exactly the changes after it. */
static void kc_watch_resume(void) {
    kc_store s;
    kctl_watch *w;
    kctl_event ev;
    char from[KCTL_RV_MAX], last[KCTL_RV_MAX];
    int rc;
    if (!kc_open(&s)) return;
    KC_LIST_RV(&s, from);
    if (!(w = KC_WATCH(&s, NULL, NULL, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    last[0] = '\0';
    if (KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "a", &ev)) {
        snprintf(last, sizeof last, "%s", ev.resource_version);
        kctl_event_clear(&ev);
    }
    KC_NONE(&s, w); /* caught up */
    kctl_transport_watch_close(&s.tp, w);
    KT_EQ_INT(kc_create(&s, "b", NULL, NULL, NULL, NULL), KCTL_OK);
    if (!(w = KC_WATCH(&s, NULL, NULL, last))) { kc_close(&s); return; }
    if (KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "b", &ev)) {
        snprintf(last, sizeof last, "%s", ev.resource_version);
        kctl_event_clear(&ev);
    }
    /* closed in the middle of changes: from the last event, the rest */
    KT_EQ_INT(kc_create(&s, "c", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "d", NULL, NULL, NULL, NULL), KCTL_OK);
    if ((rc = kc_next_within(&s, w, kc_wait(), &ev, NULL)) != KCTL_OK) {
        kt_fail(__FILE__, __LINE__, "expected ADDED c, got %s", kctl_strerror(rc));
        kctl_transport_watch_close(&s.tp, w);
        kc_close(&s);
        return;
    }
    {
        char got[160], rest[160];
        const char *want[2];
        kctl_event evs[2];
        kc_evs(&ev, got, sizeof got);
        if (strcmp(got, "ADDED c") != 0 && (KC_HAS(KC_CAP_EVENT_PER_WRITE) || strcmp(got, "ADDED d") != 0))
            kt_fail(__FILE__, __LINE__, "expected ADDED c, got %s", got);
        snprintf(last, sizeof last, "%s", ev.resource_version);
        snprintf(rest, sizeof rest, "ADDED %s", strcmp(got, "ADDED d") == 0 ? "c" : "d"); /* the one not read */
        kctl_event_clear(&ev);
        kctl_transport_watch_close(&s.tp, w);
        KT_EQ_INT(kc_create(&s, "e", NULL, NULL, NULL, NULL), KCTL_OK);
        w = NULL;
        want[0] = rest;
        want[1] = "ADDED e";
        rc = kctl_transport_watch_open(&s.tp, &s.res, NULL, last, &w, NULL);
        if (rc == KCTL_OK && (rc = kc_next_within(&s, w, kc_wait(), &evs[0], NULL)) == KCTL_OK) {
            if (kc_take_at(__FILE__, __LINE__, &s, w, 1, &evs[1])) {
                kc_match_at(__FILE__, __LINE__, evs, 2, want, KC_HAS(KC_CAP_EVENT_PER_WRITE));
                kctl_event_clear(&evs[1]);
            }
            kctl_event_clear(&evs[0]);
            KC_BARRIER(&s, w, NULL);
        }
    }
    /* a store whose versions are not per write may not know one it passed
       in the middle of a poll: GONE (list again) is its answer */
    if (rc != KCTL_OK && !(rc == KCTL_ERR_GONE && !KC_HAS(KC_CAP_EVENT_VERSIONS)))
        kt_fail(__FILE__, __LINE__, "watch from the last event's version: %s", kctl_strerror(rc));
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* A version older than the store remembers is GONE (at open or at the
   first next), with an Expired Status; a new list's version watches on. */
static void kc_watch_gone(void) {
    kc_store s;
    kctl_watch *w = NULL;
    kctl_api_status st;
    kctl_event ev;
    char from[KCTL_RV_MAX], now[KCTL_RV_MAX];
    int rc;
    if (!kc_t->compact) KT_SKIP();
    if (!kc_open(&s)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kc_create(&s, "a", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KC_LIST_RV(&s, from);
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":2}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":3}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_t->compact(&s), KCTL_OK);
    rc = kctl_transport_watch_open(&s.tp, &s.res, NULL, from, &w, &st);
    if (rc == KCTL_OK) {
        rc = kc_next_within(&s, w, kc_wait(), &ev, &st);
        if (rc == KCTL_OK) kctl_event_clear(&ev);
    }
    KT_EQ_INT(rc, KCTL_ERR_GONE);
    if (KC_HAS(KC_CAP_STATUS_DETAIL)) {
        KT_EQ_INT(st.code, 410);
        KT_EQ_INT(kctl_api_status_result(st.code, st.reason), KCTL_ERR_GONE);
    }
    kctl_transport_watch_close(&s.tp, w);
    KC_LIST_RV(&s, now); /* list again: watch from there */
    if ((w = KC_WATCH(&s, NULL, NULL, now)) != NULL) {
        KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":4}", NULL, NULL), KCTL_OK);
        KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "a", NULL);
        kctl_transport_watch_close(&s.tp, w);
    }
    kctl_api_status_clear(&st);
    kc_close(&s);
}

/* A version newer than the store: TIMEOUT ("too large resource version"). */
static void kc_watch_too_new(void) {
    kc_store s;
    kctl_watch *w = NULL;
    kctl_event ev;
    char from[KCTL_RV_MAX], ahead[KCTL_RV_MAX];
    kctl_api_status st;
    size_t i;
    bool named = false;
    int rc;
    KC_NEED(KC_CAP_TOO_NEW | KC_CAP_ORDERED_VERSIONS);
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    KC_LIST_RV(&s, from);
    snprintf(ahead, sizeof ahead, "%llu", (unsigned long long)(kc_u64(from) + 1000));
    memset(&st, 0, sizeof st);
    rc = kctl_transport_watch_open(&s.tp, &s.res, NULL, ahead, &w, &st);
    if (rc == KCTL_OK) {
        rc = kc_next_within(&s, w, kc_wait(), &ev, &st);
        if (rc == KCTL_OK) kctl_event_clear(&ev);
    }
    KT_EQ_INT(rc, KCTL_ERR_TIMEOUT);
    /* said so that a reflector can tell a store gone back in time (it
       relists): the cause ResourceVersionTooLarge, or the message */
    for (i = 0; i < st.cause_count; i++) named |= st.causes[i].reason && !strcmp(st.causes[i].reason, "ResourceVersionTooLarge");
    KT_CHECK(named || (st.message && strstr(st.message, "Too large resource version")));
    kctl_api_status_clear(&st);
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* A BOOKMARK: no object, a version past what the watcher passed (events
   its selector filtered out too), from which a watch sees only later
   changes. */
static void kc_watch_bookmark(void) {
    kc_store s;
    kctl_watch *w;
    kctl_event ev;
    kctl_obj *o = NULL;
    char from[KCTL_RV_MAX], brv[KCTL_RV_MAX], bm[KCTL_RV_MAX];
    bool sel = KC_HAS(KC_CAP_LABEL_SELECTOR);
    uint64_t wait = kc_t->bookmark_wait_ns ? kc_t->bookmark_wait_ns : kc_wait(), end;
    int rc;
    KC_NEED(KC_CAP_BOOKMARKS);
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "a", "\"labels\":{\"app\":\"web\"}", NULL, NULL, NULL), KCTL_OK);
    KC_LIST_RV(&s, from);
    if (!(w = KC_WATCH(&s, sel ? "app=web" : NULL, NULL, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_create(&s, "b", "\"labels\":{\"app\":\"db\"}", NULL, &o, NULL), KCTL_OK);
    snprintf(brv, sizeof brv, "%s", o ? kctl_obj_resource_version(o) : "");
    kctl_obj_unref(o);
    if (!sel) KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "b", NULL);
    if (kc_t->progress) KT_EQ_INT(kc_t->progress(&s), KCTL_OK);
    bm[0] = '\0';
    end = kctl_clock_now(NULL) + wait;
    for (;;) {
        uint64_t now = kctl_clock_now(NULL);
        rc = kc_next_any(&s, w, now < end ? end - now : 0, &ev, NULL);
        if (rc != KCTL_OK) break;
        if (ev.type == KCTL_EVENT_BOOKMARK) {
            KT_CHECK(ev.obj == NULL);
            snprintf(bm, sizeof bm, "%s", ev.resource_version);
            kctl_event_clear(&ev);
            if (!KC_HAS(KC_CAP_ORDERED_VERSIONS) || kc_u64(bm) >= kc_u64(brv)) break; /* one past b */
            continue;
        }
        {
            char got[160];
            kt_fail(__FILE__, __LINE__, "expected a BOOKMARK, got %s", kc_evs(&ev, got, sizeof got));
        }
        kctl_event_clear(&ev);
        break;
    }
    KT_EQ_INT(rc, KCTL_OK);
    KT_CHECK(bm[0] != '\0');
    kctl_transport_watch_close(&s.tp, w);
    if (!bm[0]) { kc_close(&s); return; }
    /* from the bookmark, selector or not: b is behind it */
    if ((w = KC_WATCH(&s, NULL, NULL, bm)) != NULL) {
        KT_EQ_INT(kc_update(&s, "a", "\"labels\":{\"app\":\"web\"}", "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
        KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "a", NULL);
        kctl_transport_watch_close(&s.tp, w);
    }
    kc_close(&s);
}

/* A label-selected watch: only objects that match; one that stops matching
   is DELETED with the state it last matched in, at the event's version;
   one that starts matching is ADDED. */
static void kc_watch_label_selector(void) {
    kc_store s;
    kctl_watch *w;
    kctl_event ev;
    char from[KCTL_RV_MAX], rv[KCTL_RV_MAX], v[32];
    static const char web[] = "\"labels\":{\"app\":\"web\"}", db[] = "\"labels\":{\"app\":\"db\"}";
    KC_NEED(KC_CAP_LABEL_SELECTOR);
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "x", web, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "y", db, NULL, NULL, NULL), KCTL_OK);
    if ((w = KC_WATCH(&s, "app=web", NULL, "")) != NULL) { /* from "": only what matches */
        KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "x", NULL);
        KC_BARRIER(&s, w, web);
        kctl_transport_watch_close(&s.tp, w);
    }
    KC_LIST_RV(&s, from);
    if (!(w = KC_WATCH(&s, "app=web", NULL, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_update(&s, "y", web, NULL, NULL, NULL), KCTL_OK); /* enters */
    KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "y", NULL);
    KT_EQ_INT(kc_update(&s, "x", db, "\"spec\":{\"n\":2}", NULL, NULL), KCTL_OK); /* leaves */
    KT_EQ_INT(kc_rv_of(&s, "x", rv), KCTL_OK);
    if (KC_EXPECT(&s, w, KCTL_EVENT_DELETED, "x", &ev)) {
        KT_EQ_STR(kc_str(ev.obj, "metadata.labels.app", v, sizeof v), "web"); /* the state it last matched in */
        KT_EQ_INT(kc_int(ev.obj, "spec.n"), 1);
        if (KC_HAS(KC_CAP_EVENT_VERSIONS)) {
            KT_EQ_STR(ev.resource_version, rv); /* at the version of the write that took it out */
            KT_EQ_STR(kctl_obj_resource_version(ev.obj), rv);
        }
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(kc_update(&s, "x", db, "\"spec\":{\"n\":3}", NULL, NULL), KCTL_OK); /* out of the selection: unseen */
    KT_EQ_INT(kc_update(&s, "x", web, "\"spec\":{\"n\":3}", NULL, NULL), KCTL_OK); /* back in */
    if (KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "x", &ev)) {
        KT_EQ_INT(kc_int(ev.obj, "spec.n"), 3);
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(kc_create(&s, "z", db, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_remove(&s, "y", NULL, NULL, NULL, NULL), KCTL_OK);
    KC_EXPECT(&s, w, KCTL_EVENT_DELETED, "y", NULL);
    KC_BARRIER(&s, w, web);
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* A field-selected watch: only the object named. */
static void kc_watch_field_selector(void) {
    kc_store s;
    kctl_watch *w;
    char from[KCTL_RV_MAX], sel[160];
    KC_NEED(KC_CAP_FIELD_SELECTOR);
    if (!kc_open(&s)) return;
    KT_EQ_INT(kc_create(&s, "x", NULL, "\"spec\":{\"n\":1}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "y", NULL, NULL, NULL, NULL), KCTL_OK);
    KC_LIST_RV(&s, from);
    if (*kc_ns(&s)) kc_fmt(sel, sizeof sel, "metadata.name=x,metadata.namespace=%s", kc_ns(&s));
    else kc_fmt(sel, sizeof sel, "metadata.name=x");
    if (!(w = KC_WATCH(&s, NULL, sel, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_update(&s, "y", NULL, "\"spec\":{\"n\":2}", NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_update(&s, "x", NULL, "\"spec\":{\"n\":2}", NULL, NULL), KCTL_OK);
    KC_EXPECT(&s, w, KCTL_EVENT_MODIFIED, "x", NULL);
    KT_EQ_INT(kc_create(&s, "z", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_remove(&s, "y", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_remove(&s, "x", NULL, NULL, NULL, NULL), KCTL_OK);
    KC_EXPECT(&s, w, KCTL_EVENT_DELETED, "x", NULL);
    KT_EQ_INT(kc_create(&s, "x", NULL, NULL, NULL, NULL), KCTL_OK); /* the only write it can see: nothing came between */
    KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "x", NULL);
    KC_NONE(&s, w);
    kctl_transport_watch_close(&s.tp, w);
    kc_close(&s);
}

/* A stream that ends says IO; a watch from its last event's version
   goes on where it stopped. */
static void kc_watch_broken(void) {
    kc_store s;
    kctl_watch *w;
    kctl_event ev;
    char from[KCTL_RV_MAX], last[KCTL_RV_MAX];
    int rc;
    if (!kc_t->break_watches) KT_SKIP();
    if (!kc_open(&s)) return;
    KC_LIST_RV(&s, from);
    KT_EQ_INT(kc_t->break_watches(&s), KCTL_OK);
    if (!(w = KC_WATCH(&s, NULL, NULL, from))) { kc_close(&s); return; }
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "b", NULL, NULL, NULL, NULL), KCTL_OK);
    last[0] = '\0';
    if (KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "a", &ev)) {
        snprintf(last, sizeof last, "%s", ev.resource_version);
        kctl_event_clear(&ev);
    }
    rc = kc_next_within(&s, w, kc_wait(), &ev, NULL);
    if (rc == KCTL_OK) kctl_event_clear(&ev);
    KT_EQ_INT(rc, KCTL_ERR_IO);
    kctl_transport_watch_close(&s.tp, w);
    if ((w = KC_WATCH(&s, NULL, NULL, last)) != NULL) {
        KC_EXPECT(&s, w, KCTL_EVENT_ADDED, "b", NULL);
        kctl_transport_watch_close(&s.tp, w);
    }
    kc_close(&s);
}

/* Watchers are independent; closing one with events it has not read
   leaves the others as they were (and frees what it held). */
static void kc_watch_close_pending(void) {
    kc_store s;
    kctl_watch *w1, *w2;
    char from[KCTL_RV_MAX];
    if (!kc_open(&s)) return;
    KC_LIST_RV(&s, from);
    w1 = KC_WATCH(&s, NULL, NULL, from);
    w2 = KC_WATCH(&s, NULL, NULL, from);
    if (!w1 || !w2) {
        kctl_transport_watch_close(&s.tp, w1);
        kctl_transport_watch_close(&s.tp, w2);
        kc_close(&s);
        return;
    }
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    KC_EXPECT(&s, w1, KCTL_EVENT_ADDED, "a", NULL);
    KC_EXPECT(&s, w2, KCTL_EVENT_ADDED, "a", NULL);
    KT_EQ_INT(kc_create(&s, "b", NULL, NULL, NULL, NULL), KCTL_OK);
    kctl_transport_watch_close(&s.tp, w2); /* b unread */
    KC_EXPECT(&s, w1, KCTL_EVENT_ADDED, "b", NULL);
    KT_EQ_INT(kc_create(&s, "c", NULL, NULL, NULL, NULL), KCTL_OK);
    KC_EXPECT(&s, w1, KCTL_EVENT_ADDED, "c", NULL);
    KT_EQ_INT(kc_create(&s, "d", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_remove(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    kctl_transport_watch_close(&s.tp, w1); /* two events unread */
    kctl_transport_watch_close(&s.tp, NULL);
    kc_close(&s);
}

/* ----------------------------------------------------- Status detail */
/* Refusals fill the Status: code and reason, the code returned being the
   one kctl_api_status_result gives for them; a success leaves it alone. */
static void kc_check_status_at(const char *file, int line, int rc, int want_rc, const kctl_api_status *st, int code,
                               const char *reason) {
    if (rc != want_rc) kt_fail(file, line, "%s, not %s", kctl_strerror(rc), kctl_strerror(want_rc));
    if (st->code != code || !st->reason || strcmp(st->reason, reason) != 0)
        kt_fail(file, line, "Status %d %s, not %d %s", st->code, st->reason ? st->reason : "(none)", code, reason);
    else if (kctl_api_status_result(st->code, st->reason) != rc)
        kt_fail(file, line, "the Status %d %s says %s, the call %s", st->code, st->reason,
                kctl_strerror(kctl_api_status_result(st->code, st->reason)), kctl_strerror(rc));
}
#define KC_STATUS(rc, want_rc, st, code, reason) kc_check_status_at(__FILE__, __LINE__, (rc), (want_rc), (st), (code), (reason))

static void kc_status_detail(void) {
    kc_store s;
    kctl_api_status st;
    kctl_obj *o = NULL;
    char rv[KCTL_RV_MAX], meta[128];
    KC_NEED(KC_CAP_STATUS_DETAIL);
    if (!kc_open(&s)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, NULL, &st), KCTL_OK);
    KT_EQ_INT(st.code, 0); /* a success leaves it as it was */
    KT_EQ_INT(kc_rv_of(&s, "a", rv), KCTL_OK);
    KC_STATUS(kc_create(&s, "a", NULL, NULL, NULL, &st), KCTL_ERR_EXISTS, &st, 409, "AlreadyExists");
    KC_STATUS(kctl_transport_get(&s.tp, &s.res, "nope", &o, &st), KCTL_ERR_NOT_FOUND, &st, 404, "NotFound");
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":1}", NULL, &st), KCTL_OK);
    kc_fmt(meta, sizeof meta, "\"resourceVersion\":\"%s\"", rv);
    KC_STATUS(kc_update(&s, "a", meta, "\"spec\":{\"n\":2}", NULL, &st), KCTL_ERR_CONFLICT, &st, 409, "Conflict");
    KC_STATUS(kc_update(&s, "nope", NULL, NULL, NULL, &st), KCTL_ERR_NOT_FOUND, &st, 404, "NotFound");
    if (KC_HAS(KC_CAP_STATUS)) KC_STATUS(kc_update_status(&s, "a", meta, "\"status\":{}", NULL, &st), KCTL_ERR_CONFLICT, &st, 409, "Conflict");
    KC_STATUS(kc_remove(&s, "a", rv, NULL, NULL, &st), KCTL_ERR_CONFLICT, &st, 409, "Conflict");
    KC_STATUS(kc_remove(&s, "nope", NULL, NULL, NULL, &st), KCTL_ERR_NOT_FOUND, &st, 404, "NotFound");
    KC_STATUS(kctl_transport_patch(&s.tp, &s.res, "nope", "{}", KCTL_NTS, 0, NULL, &st), KCTL_ERR_NOT_FOUND, &st, 404, "NotFound");
    kctl_api_status_clear(&st);
    kc_close(&s);
}

/* The messages and details, word for word as an API server sends them. */
static void kc_status_wording(void) {
    kc_store s;
    kctl_api_status st;
    kctl_obj *o = NULL;
    char rv[KCTL_RV_MAX], rv2[KCTL_RV_MAX], meta[128], gr[160], msg[512];
    KC_NEED(KC_CAP_STATUS_WORDING);
    if (!kc_open(&s)) return;
    memset(&st, 0, sizeof st);
    if (s.res.group && *s.res.group) kc_fmt(gr, sizeof gr, "%s.%s", s.res.resource, s.res.group);
    else kc_fmt(gr, sizeof gr, "%s", s.res.resource);
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kc_rv_of(&s, "a", rv), KCTL_OK);
    KT_EQ_INT(kc_create(&s, "a", NULL, NULL, NULL, &st), KCTL_ERR_EXISTS);
    kc_fmt(msg, sizeof msg, "%s \"a\" already exists", gr);
    KT_EQ_MSG(st.message, msg);
    KT_EQ_STR(st.name, "a");
    KT_EQ_STR(st.group, s.res.group ? s.res.group : "");
    KT_EQ_STR(st.kind, s.res.resource);
    KT_EQ_INT(kctl_transport_get(&s.tp, &s.res, "nope", &o, &st), KCTL_ERR_NOT_FOUND);
    kc_fmt(msg, sizeof msg, "%s \"nope\" not found", gr);
    KT_EQ_MSG(st.message, msg);
    KT_EQ_STR(st.name, "nope");
    KT_EQ_INT(kc_update(&s, "a", NULL, "\"spec\":{\"n\":1}", NULL, &st), KCTL_OK);
    KT_EQ_INT(kc_rv_of(&s, "a", rv2), KCTL_OK);
    kc_fmt(meta, sizeof meta, "\"resourceVersion\":\"%s\"", rv);
    KT_EQ_INT(kc_update(&s, "a", meta, "\"spec\":{\"n\":2}", NULL, &st), KCTL_ERR_CONFLICT);
    kc_fmt(msg, sizeof msg, "Operation cannot be fulfilled on %s \"a\": the object has been modified; please apply your changes to "
           "the latest version and try again", gr);
    KT_EQ_MSG(st.message, msg);
    KT_EQ_INT(kc_remove(&s, "a", rv, NULL, NULL, &st), KCTL_ERR_CONFLICT);
    /* a delete's precondition names the kind (the resource without one), as BeforeDelete does */
    kc_fmt(msg, sizeof msg, "Operation cannot be fulfilled on %s%s%s \"a\": the ResourceVersion in the precondition (%s) does not "
           "match the ResourceVersion in record (%s). The object might have been modified", kc_t->kind ? kc_t->kind : s.res.resource,
           s.res.group && *s.res.group ? "." : "", s.res.group ? s.res.group : "", rv, rv2);
    KT_EQ_MSG(st.message, msg);
    kctl_api_status_clear(&st);
    kc_close(&s);
}

/* Names and metadata refused as an API server refuses them, nothing stored. */
static void kc_validation(void) {
    kc_store s;
    kctl_api_status st;
    kctl_list_result r;
    char d[KC_DOC_MAX];
    KC_NEED(KC_CAP_VALIDATION);
    KT_NEED_VALIDATION("names and metadata");
    if (!kc_open(&s)) return;
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kc_create(&s, "Web", NULL, NULL, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    KT_EQ_STR(st.reason, "Invalid");
    KT_CHECK(st.cause_count >= 1 && !strcmp(st.causes[0].field, "metadata.name") && !strcmp(st.causes[0].reason, "FieldValueInvalid"));
    KT_EQ_INT(kc_create(&s, NULL, NULL, "\"spec\":{}", NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    KT_CHECK(st.cause_count >= 1 && !strcmp(st.causes[0].field, "metadata.name") && !strcmp(st.causes[0].reason, "FieldValueRequired"));
    KT_EQ_INT(kc_create(&s, "a", "\"labels\":{\"-bad\":\"x\"}", NULL, NULL, &st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(st.code, 422);
    KT_CHECK(st.cause_count >= 1 && !strcmp(st.causes[0].field, "metadata.labels"));
    if (*kc_ns(&s)) { /* a document of another namespace than the request's */
        kc_fmt(d, sizeof d, "{\"metadata\":{\"name\":\"w\",\"namespace\":\"%s-other\"}}", kc_ns(&s));
        KT_EQ_INT(kctl_transport_create(&s.tp, &s.res, d, KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
        KT_EQ_INT(st.code, 400);
        KT_EQ_STR(st.reason, "BadRequest");
    }
    KT_EQ_INT(kc_list(&s, NULL, NULL, 0, NULL, &r, NULL), KCTL_OK);
    KT_EQ_U64(r.items.count, 0);
    kctl_list_result_free(&r);
    kctl_api_status_clear(&st);
    kc_close(&s);
}

/* --------------------------------------------------------------- runner */
typedef struct kc_test {
    const char *name;
    void (*fn)(void);
} kc_test;

static const kc_test kc_tests[] = {
    { "create_get", kc_create_get },
    { "update_preconditions", kc_update_preconditions },
    { "server_metadata", kc_server_metadata },
    { "generation", kc_generation },
    { "status_subresource", kc_status_subresource },
    { "noop_writes", kc_noop_writes },
    { "merge_patch", kc_merge_patch },
    { "delete", kc_delete },
    { "finalizers", kc_finalizers },
    { "list_all", kc_list_all },
    { "list_paging", kc_list_paging },
    { "list_paging_snapshot", kc_list_paging_snapshot },
    { "list_label_selector", kc_list_label_selector },
    { "list_field_selector", kc_list_field_selector },
    { "watch_from_empty", kc_watch_from_empty },
    { "watch_from_list", kc_watch_from_list },
    { "watch_event_versions", kc_watch_event_versions },
    { "watch_resume", kc_watch_resume },
    { "watch_gone", kc_watch_gone },
    { "watch_too_new", kc_watch_too_new },
    { "watch_bookmark", kc_watch_bookmark },
    { "watch_label_selector", kc_watch_label_selector },
    { "watch_field_selector", kc_watch_field_selector },
    { "watch_broken", kc_watch_broken },
    { "watch_close_pending", kc_watch_close_pending },
    { "status_detail", kc_status_detail },
    { "status_wording", kc_status_wording },
    { "validation", kc_validation },
};

static void kc_skip(void) { KT_SKIP(); }

void kc_run_contract(const kc_target *t) {
    size_t i;
    bool up = !t->available || t->available(t);
    for (i = 0; i < sizeof kc_tests / sizeof kc_tests[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "contract/%s/%s", t->name, kc_tests[i].name);
        kc_t = t;
        kc_barriers = 0;
        kt_run(up ? kc_tests[i].fn : kc_skip, name);
    }
    kc_t = NULL;
}

/* -------------------------------------------------------------- targets */
/* The memstore: every capability. Its bookmarks come by time on a virtual
   clock of its own, which only the progress hook moves, so no other test
   sees one; a counting allocator checks that each store frees everything. */
typedef struct kc_ms {
    kctl_memstore *ms;
    kctl_vclock vc;
    kt_alloc a;
} kc_ms;

#define KC_MS_BOOKMARK_NS KCTL_SEC(10)

static int kc_ms_open(const kc_target *t, kc_store *s) {
    kctl_memstore_desc d;
    kc_ms *m = (kc_ms *)calloc(1, sizeof *m);
    int rc;
    (void)t;
    if (!m) return KCTL_ERR_NOMEM;
    kt_alloc_init(&m->a);
    kctl_vclock_init(&m->vc, 0);
    memset(&d, 0, sizeof d);
    d.allocator = kt_allocator(&m->a);
    d.clock = kctl_vclock_clock(&m->vc);
    d.bookmark_interval_ns = KC_MS_BOOKMARK_NS;
    if ((rc = kctl_memstore_create(&d, &m->ms)) != KCTL_OK) {
        kctl_vclock_deinit(&m->vc);
        free(m);
        return rc;
    }
    s->tp = kctl_memstore_transport(m->ms);
    s->impl = m;
    return KCTL_OK;
}

static void kc_ms_close(const kc_target *t, kc_store *s) {
    kc_ms *m = (kc_ms *)s->impl;
    (void)t;
    kctl_memstore_destroy(m->ms);
    KT_EQ_INT(m->a.live, 0);
    kctl_vclock_deinit(&m->vc);
    free(m);
}

static int kc_ms_compact(kc_store *s) {
    kc_ms *m = (kc_ms *)s->impl;
    return kctl_memstore_compact(m->ms, kctl_memstore_revision(m->ms));
}

static int kc_ms_progress(kc_store *s) {
    kctl_vclock_advance(&((kc_ms *)s->impl)->vc, KC_MS_BOOKMARK_NS);
    return KCTL_OK;
}

static int kc_ms_break(kc_store *s) {
    kctl_memstore_break_watches_after(((kc_ms *)s->impl)->ms, 1);
    return KCTL_OK;
}

static const kc_target kc_memstore_target = {
    .name = "memstore",
    .caps = KC_CAP_ALL,
    .res = { "example.kctl.io", "v1", "widgets", "contract" },
    .api_version = "example.kctl.io/v1",
    .kind = "Widget",
    .open = kc_ms_open,
    .close = kc_ms_close,
    .compact = kc_ms_compact,
    .progress = kc_ms_progress,
    .break_watches = kc_ms_break,
};

#ifndef KCTL_NO_THREADS /* the dirstore locks with pthreads */
/* The directory store of examples/dirstore.h, in a fresh directory each
   time. Its differences: tests/contract.h. */
#include "../examples/dirstore.h"

static int kc_ds_open(const kc_target *t, kc_store *s) {
    const char *tmp = getenv("TMPDIR");
    char *dir = (char *)malloc(DS_PATH_MAX);
    int rc;
    if (!dir) return KCTL_ERR_NOMEM;
    snprintf(dir, DS_PATH_MAX, "%s/kctl-contract-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        free(dir);
        return KCTL_ERR_IO;
    }
    if ((rc = ds_transport(dir, t->res.resource, &s->tp)) != KCTL_OK) {
        rmdir(dir);
        free(dir);
        return rc;
    }
    s->impl = dir;
    return KCTL_OK;
}

static void kc_ds_close(const kc_target *t, kc_store *s) {
    char *dir = (char *)s->impl;
    DIR *d;
    struct dirent *e;
    (void)t;
    kctl_transport_destroy(&s->tp);
    if ((d = opendir(dir)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            char path[DS_PATH_MAX * 2];
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    KT_EQ_INT(rmdir(dir), 0);
    free(dir);
}

/* The store forgets the states it remembered: a watch from one of them
   finds it no more (GONE) unless the directory is still in it. */
static int kc_ds_compact(kc_store *s) {
    ds_store *d = (ds_store *)s->tp.self;
    unsigned i;
    pthread_mutex_lock(&d->mu);
    for (i = 0; i < DS_RING; i++) ds_set_clear(&d->ring[i]);
    pthread_mutex_unlock(&d->mu);
    return KCTL_OK;
}

static const kc_target kc_dirstore_target = {
    .name = "dirstore",
    .caps = KC_CAP_STATUS | KC_CAP_STATUS_DETAIL | KC_CAP_UNCONDITIONAL_UPDATE, /* the rest: tests/contract.h, DIFFERENCES */
    .res = { "example.kctl.io", "v1", "greetings", "" },
    .api_version = "example.kctl.io/v1",
    .kind = "Greeting",
    .open = kc_ds_open,
    .close = kc_ds_close,
    .compact = kc_ds_compact,
};
#endif

void kt_suite_contract(void) {
    kc_run_contract(&kc_memstore_target);
#ifndef KCTL_NO_THREADS
    kc_run_contract(&kc_dirstore_target);
#endif
    /* Another target: a kc_target and a call here. One that needs
       libraries or a server lives in a file of its own, built under its
       macro, its target declared in contract.h the same way, e.g.
           #ifdef KC_ETCD
           kc_run_contract(&kc_etcd_target);    (tests/contract_etcd.c)
           #endif */
}
