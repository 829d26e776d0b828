/* test_reflector.c - list, watch, resume, relist, backoff, stall, resync: on the virtual clock. */
#include "kt.h"
#include <stdlib.h>

static const kctl_resource tr_cm = { "", "v1", "configmaps", "prod" };

typedef struct tr_env {
    kctl_vclock vc;
    kctl_memstore *ms;
    kctl_indexer *ix;
    kctl_fifo *fifo;
    kctl_reflector *r;
} tr_env;

static int tr_open(tr_env *e, uint32_t history, uint32_t bookmark_every, uint64_t resync_ns, uint32_t page_size) {
    kctl_memstore_desc md;
    kctl_fifo_desc fd;
    kctl_reflector_desc rd;
    memset(e, 0, sizeof *e);
    kctl_vclock_init(&e->vc, KCTL_SEC(1000));
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(&e->vc);
    md.history = history;
    md.bookmark_every = bookmark_every;
    if (kctl_memstore_create(&md, &e->ms) != KCTL_OK || kctl_indexer_create(NULL, &e->ix) != KCTL_OK) return 0;
    memset(&fd, 0, sizeof fd);
    fd.known = e->ix;
    if (kctl_fifo_create(&fd, &e->fifo) != KCTL_OK) return 0;
    memset(&rd, 0, sizeof rd);
    rd.transport = kctl_memstore_transport(e->ms);
    rd.resource = tr_cm;
    rd.fifo = e->fifo;
    rd.clock = kctl_vclock_clock(&e->vc);
    rd.resync_ns = resync_ns;
    rd.page_size = page_size;
    rd.stall_ns = KCTL_SEC(60);
    return kctl_reflector_create(&rd, &e->r) == KCTL_OK;
}

static void tr_close(tr_env *e) {
    kctl_reflector_destroy(e->r);
    kctl_fifo_destroy(e->fifo);
    kctl_indexer_destroy(e->ix);
    kctl_memstore_destroy(e->ms);
    kctl_vclock_deinit(&e->vc);
}

static void tr_put(tr_env *e, const char *name, const char *spec) {
    char doc[256];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"spec\":%s}", name, spec);
    if (kctl_memstore_apply(e->ms, &tr_cm, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply %s", name);
}

/* Pop everything, applying it to the cache as an informer does, and
   return the deltas seen as "A:a R:b D:c ..." (type letter and name). */
typedef struct tr_seen { char text[1024]; kctl_indexer *ix; } tr_seen;
static int tr_process(const char *key, const kctl_delta *d, size_t n, void *user_data) {
    tr_seen *s = (tr_seen *)user_data;
    size_t i;
    static const char *letters = "?AUDRS";
    for (i = 0; i < n; i++) {
        if (d[i].type == KCTL_DELTA_DELETED) kctl_indexer_delete(s->ix, key); /* keep the cache, as an informer */
        else kctl_indexer_add(s->ix, d[i].obj);
        char one[96];
        const char *slash = strchr(key, '/');
        snprintf(one, sizeof one, "%s%c%s:%s", s->text[0] ? " " : "", letters[d[i].type], d[i].final_state_unknown ? "?" : "",
                 slash ? slash + 1 : key);
        if (strlen(s->text) + strlen(one) < sizeof s->text) strcat(s->text, one);
    }
    return KCTL_OK;
}

static void tr_drain(tr_env *e, tr_seen *s) {
    memset(s, 0, sizeof *s);
    s->ix = e->ix;
    while (kctl_fifo_try_pop(e->fifo, tr_process, s) == KCTL_OK) { }
}

/* Pop and keep the cache in step (for known objects). */
typedef struct tr_cachectx { kctl_indexer *ix; } tr_cachectx;
static int tr_to_cache(const char *key, const kctl_delta *d, size_t n, void *user_data) {
    tr_cachectx *c = (tr_cachectx *)user_data;
    size_t i;
    for (i = 0; i < n; i++) {
        if (d[i].type == KCTL_DELTA_DELETED) kctl_indexer_delete(c->ix, key);
        else kctl_indexer_add(c->ix, d[i].obj);
    }
    return KCTL_OK;
}

/* Pages of n, or, under KCTL_NO_PAGING (a page_size is UNSUPPORTED there),
   the whole list in one request: the same deltas either way. */
#ifdef KCTL_NO_PAGING
#define TR_PAGES(n) 0
#else
#define TR_PAGES(n) (n)
#endif

static void tr_list_then_watch(void) {
    tr_env e;
    tr_seen s;
    kctl_reflector_stats st;
    if (!tr_open(&e, 0, 0, 0, TR_PAGES(2))) return;
    tr_put(&e, "a", "{}");
    tr_put(&e, "b", "{}");
    tr_put(&e, "c", "{}"); /* three objects, pages of two */
    KT_CHECK(!kctl_reflector_listed(e.r));
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    KT_CHECK(kctl_reflector_listed(e.r));
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "R:a R:b R:c");
    KT_CHECK(kctl_fifo_has_synced(e.fifo));
    tr_put(&e, "d", "{}");
    tr_put(&e, "a", "{\"x\":1}");
    kctl_memstore_delete(e.ms, &tr_cm, "b", NULL);
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:d U:a D:b");
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_U64(st.lists, 1);
    KT_EQ_U64(st.relists, 0);
    KT_EQ_U64(st.added, 1);
    KT_EQ_U64(st.modified, 1);
    KT_EQ_U64(st.deleted, 1);
    KT_EQ_STR(st.last_rv, "6");
    tr_close(&e);
}

static void tr_broken_watch_resumes_with_backoff(void) {
    tr_env e;
    tr_seen s;
    kctl_reflector_stats st;
    uint64_t next = 0, now;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    tr_put(&e, "a", "{}");
    kctl_reflector_step(e.r, 0, NULL);
    tr_drain(&e, &s);
    kctl_memstore_break_watches_after(e.ms, 1);   /* watches opened from now break after one event */
    kctl_vclock_advance(&e.vc, KCTL_SEC(60));     /* a quiet minute: stalled, reopened */
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_U64(st.watch_restarts, 1);
    tr_put(&e, "b", "{}");
    tr_put(&e, "c", "{}");
    KT_EQ_INT(kctl_reflector_step(e.r, 0, &next), KCTL_OK); /* b, then the break */
    now = kctl_vclock_clock(&e.vc).now_fn(&e.vc);
    KT_CHECK(next >= now + KCTL_MS(800) && next < now + KCTL_MS(1600)); /* 800 ms, jittered up to as much again */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:b");
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK); /* still backing off */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "");
    kctl_vclock_advance(&e.vc, next - now);
    KT_EQ_INT(kctl_reflector_step(e.r, 0, &next), KCTL_OK); /* reopened from b's version: c, and a break again */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:c");
    now = kctl_vclock_clock(&e.vc).now_fn(&e.vc);
    KT_CHECK(next >= now + KCTL_MS(1600) && next < now + KCTL_MS(3200)); /* doubled */
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_U64(st.lists, 1); /* never listed again */
    KT_EQ_U64(st.watch_restarts, 3);
    tr_close(&e);
}

static void tr_gone_relists(void) {
    tr_env e;
    tr_seen s;
    kctl_reflector_stats st;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    tr_put(&e, "a", "{}");
    kctl_reflector_step(e.r, 0, NULL);
    tr_drain(&e, &s);
    tr_put(&e, "b", "{}");
    tr_put(&e, "c", "{}");
    kctl_memstore_compact(e.ms, 3); /* the watch's place is gone */
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "R:a R:b R:c");
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_U64(st.lists, 2);
    KT_EQ_U64(st.relists, 1);
    tr_put(&e, "d", "{}");
    kctl_reflector_step(e.r, 0, NULL);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:d");
    tr_close(&e);
}

static void tr_bookmarks_and_list_errors(void) {
    tr_env e;
    tr_seen s;
    kctl_reflector_stats st;
    kctl_resource other = { "", "v1", "secrets", "prod" };
    uint64_t next = 0;
    int i;
    if (!tr_open(&e, 0, 1, 0, 0)) return; /* a bookmark after every event */
    kctl_memstore_fail_next(e.ms, KCTL_VERB_LIST, 1, KCTL_ERR_IO);
    KT_EQ_INT(kctl_reflector_step(e.r, 0, &next), KCTL_OK);
    KT_CHECK(!kctl_reflector_listed(e.r));
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_U64(st.errors, 1);
    kctl_vclock_advance(&e.vc, next - kctl_vclock_clock(&e.vc).now_fn(&e.vc));
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    KT_CHECK(kctl_reflector_listed(e.r));
    for (i = 0; i < 3; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"s%d\"}}", i);
        kctl_memstore_apply(e.ms, &other, doc, strlen(doc), NULL, NULL);
    }
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, ""); /* bookmarks make no deltas */
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_U64(st.bookmarks, 3);
    KT_EQ_STR(st.last_rv, "3"); /* but they move the version on */
    tr_close(&e);
}

static void tr_resync(void) {
    tr_env e;
    tr_seen s;
    tr_cachectx c;
    uint64_t next = 0;
    if (!tr_open(&e, 0, 0, KCTL_SEC(30), 0)) return;
    tr_put(&e, "a", "{}");
    kctl_reflector_step(e.r, 0, NULL);
    c.ix = e.ix;
    while (kctl_fifo_try_pop(e.fifo, tr_to_cache, &c) == KCTL_OK) { }
    KT_EQ_U64(kctl_indexer_len(e.ix), 1);
    KT_EQ_INT(kctl_reflector_step(e.r, 0, &next), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "");
    kctl_vclock_advance(&e.vc, KCTL_SEC(30));
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "S:a"); /* from the cache, not the store */
    tr_close(&e);
}

/* A transport whose list takes list_ns on the virtual clock (a slow store)
   and whose next watch_open takes open_ns (as a frozen etcd member costs
   a request's timeout before the next endpoint answers; then open_ns is
   0 again), failing with fail_open when that is set; the rest straight
   to the memstore (its vtable, with another list and watch_open). */
typedef struct tr_slow {
    kctl_transport inner;
    kctl_vclock *vc;
    uint64_t list_ns, open_ns, event_ns; /* event_ns: the wait the next event ends (once) */
    int fail_open, opens;
} tr_slow;
static tr_slow *tr_slow_now; /* the slow transport in use */
static kctl_transport_vtable tr_slow_vt;
static int tr_slow_list(void *self, const kctl_resource *res, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *st) {
    kctl_vclock_advance(tr_slow_now->vc, tr_slow_now->list_ns);
    return tr_slow_now->inner.vt->list(self, res, o, out, st);
}
static int tr_slow_watch(void *self, const kctl_resource *res, const kctl_list_opts *o, const char *from_rv, kctl_watch **out,
                         kctl_api_status *st) {
    tr_slow_now->opens++;
    kctl_vclock_advance(tr_slow_now->vc, tr_slow_now->open_ns);
    tr_slow_now->open_ns = 0;
    if (tr_slow_now->fail_open) return tr_slow_now->fail_open;
    return tr_slow_now->inner.vt->watch_open(self, res, o, from_rv, out, st);
}
static int tr_slow_next(void *self, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    int rc = tr_slow_now->inner.vt->watch_next(self, w, timeout_ns, ev, st);
    if (rc == KCTL_OK && tr_slow_now->event_ns) { /* the event ended a wait */
        kctl_vclock_advance(tr_slow_now->vc, tr_slow_now->event_ns);
        tr_slow_now->event_ns = 0;
    }
    return rc;
}

/* A list whose pages' snapshot expires between two pages (a continue
   token the store no longer serves: GONE) is done again at once, in one
   request without pages, as client-go's pager does (FullListIfExpired):
   no error, no backoff, every object there. */
static int tr_expire_next; /* GONE for the next continued page */
static int tr_expire_list(void *self, const kctl_resource *res, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *st) {
    if (o->continue_token && o->continue_token[0] && tr_expire_next) {
        tr_expire_next = 0;
        return KCTL_ERR_GONE;
    }
    if (o->limit == 0) tr_slow_now->opens++; /* counts the unpaged lists */
    return tr_slow_now->inner.vt->list(self, res, o, out, st);
}
static void tr_list_expired_between_pages(void) {
    tr_env e;
    tr_seen s;
    tr_slow slow;
    kctl_reflector_desc rd;
    kctl_reflector *r = NULL;
    kctl_reflector_stats st;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    memset(&slow, 0, sizeof slow);
    slow.inner = kctl_memstore_transport(e.ms);
    tr_slow_now = &slow;
    tr_slow_vt = *slow.inner.vt;
    tr_slow_vt.list = tr_expire_list;
    memset(&rd, 0, sizeof rd);
    rd.transport.vt = &tr_slow_vt;
    rd.transport.self = slow.inner.self;
    rd.resource = tr_cm;
    rd.fifo = e.fifo;
    rd.clock = kctl_vclock_clock(&e.vc);
    rd.page_size = 2;
    KT_EQ_INT(kctl_reflector_create(&rd, &r), KCTL_OK);
    tr_put(&e, "a", "{}");
    tr_put(&e, "b", "{}");
    tr_put(&e, "c", "{}");
    tr_expire_next = 1;
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* page 1, page 2 GONE, one full list, watch */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "R:a R:b R:c");
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.errors, 0);
    KT_EQ_U64(st.lists, 1);
    KT_EQ_INT(slow.opens, 1);
    KT_EQ_INT(tr_expire_next, 0);
    kctl_reflector_destroy(r);
    tr_close(&e);
}

/* 1.5: the resync period counts from the end of the list (client-go starts
   its resync timer when the list is done), and a relist starts it again. */
static void tr_resync_from_list_end(void) {
    tr_env e;
    tr_seen s;
    tr_slow slow;
    kctl_reflector_desc rd;
    kctl_reflector *r = NULL;
    kctl_clock clk;
    uint64_t t0, end;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    clk = kctl_vclock_clock(&e.vc);
    memset(&slow, 0, sizeof slow);
    slow.inner = kctl_memstore_transport(e.ms);
    slow.vc = &e.vc;
    slow.list_ns = KCTL_SEC(5);
    tr_slow_now = &slow;
    tr_slow_vt = *slow.inner.vt;
    tr_slow_vt.list = tr_slow_list;
    memset(&rd, 0, sizeof rd);
    rd.transport.vt = &tr_slow_vt;
    rd.transport.self = slow.inner.self;
    rd.resource = tr_cm;
    rd.fifo = e.fifo;
    rd.clock = clk;
    rd.resync_ns = KCTL_SEC(30);
    rd.stall_ns = KCTL_SEC(600);
    KT_EQ_INT(kctl_reflector_create(&rd, &r), KCTL_OK);
    tr_put(&e, "a", "{}");
    t0 = kctl_clock_now(&clk);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* the list takes 5 s */
    end = t0 + KCTL_SEC(5);
    KT_EQ_U64(kctl_clock_now(&clk), end);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "R:a");
    kctl_vclock_advance(&e.vc, KCTL_SEC(30) - 1);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, ""); /* not yet */
    kctl_vclock_advance(&e.vc, 1);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "S:a"); /* exactly then */
    /* a relist 10 s later (the watch's place is gone) starts the period again */
    kctl_vclock_advance(&e.vc, KCTL_SEC(10));
    tr_put(&e, "b", "{}");
    kctl_memstore_compact(e.ms, kctl_memstore_revision(e.ms));
    t0 = kctl_clock_now(&clk);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* GONE, relist (5 s) */
    end = t0 + KCTL_SEC(5);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "R:a R:b");
    kctl_vclock_advance(&e.vc, KCTL_SEC(15)); /* 30 s after the last resync: nothing now */
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "");
    kctl_vclock_advance(&e.vc, end + KCTL_SEC(30) - 1 - kctl_clock_now(&clk));
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "");
    kctl_vclock_advance(&e.vc, 1); /* 30 s after the relist ended */
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_CHECK(strcmp(s.text, "S:a S:b") == 0 || strcmp(s.text, "S:b S:a") == 0); /* a resync's order is the cache's */
    kctl_vclock_advance(&e.vc, KCTL_SEC(30) - 1);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "");
    kctl_vclock_advance(&e.vc, 1); /* and 30 s after that resync */
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_CHECK(strcmp(s.text, "S:a S:b") == 0 || strcmp(s.text, "S:b S:a") == 0); /* a resync's order is the cache's */
    kctl_reflector_destroy(r);
    tr_close(&e);
}

/* 2.4: a list the FIFO cannot take (out of memory) is an error whose code
   the stats keep until a list succeeds. */
static void tr_last_error(void) {
    tr_env e;
    kctl_reflector_stats st;
    uint64_t next = 0;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    tr_put(&e, "a", "{}");
    kctl_memstore_fail_next(e.ms, KCTL_VERB_LIST, 1, KCTL_ERR_NOMEM);
    KT_EQ_INT(kctl_reflector_step(e.r, 0, &next), KCTL_OK);
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_INT(st.last_error, KCTL_ERR_NOMEM);
    KT_EQ_U64(st.errors, 1);
    KT_CHECK(!kctl_reflector_listed(e.r));
    kctl_memstore_fail_next(e.ms, KCTL_VERB_LIST, 1, KCTL_ERR_UNAUTHORIZED);
    kctl_vclock_advance(&e.vc, next - kctl_vclock_clock(&e.vc).now_fn(&e.vc));
    KT_EQ_INT(kctl_reflector_step(e.r, 0, &next), KCTL_OK);
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_INT(st.last_error, KCTL_ERR_UNAUTHORIZED);
    kctl_vclock_advance(&e.vc, next - kctl_vclock_clock(&e.vc).now_fn(&e.vc));
    KT_EQ_INT(kctl_reflector_step(e.r, 0, NULL), KCTL_OK);
    kctl_reflector_read_stats(e.r, &st);
    KT_EQ_INT(st.last_error, KCTL_OK);
    KT_CHECK(kctl_reflector_listed(e.r));
    tr_close(&e);
}

/* A watch that took long to open (a frozen endpoint's timeout, then the
   next endpoint) has its whole stall_ns from when it opened: it is not
   taken for stalled at once and opened again. And a watch that took long
   to fail backs off from when it failed, not from when it began: the
   backoff is not eaten by the failure's own duration. */
static void tr_slow_open_counts_from_its_end(void) {
    tr_env e;
    tr_seen s;
    tr_slow slow;
    kctl_reflector_desc rd;
    kctl_reflector *r = NULL;
    kctl_reflector_stats st;
    kctl_clock clk;
    uint64_t next = 0;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    clk = kctl_vclock_clock(&e.vc);
    memset(&slow, 0, sizeof slow);
    slow.inner = kctl_memstore_transport(e.ms);
    slow.vc = &e.vc;
    tr_slow_now = &slow;
    tr_slow_vt = *slow.inner.vt;
    tr_slow_vt.watch_open = tr_slow_watch;
    memset(&rd, 0, sizeof rd);
    rd.transport.vt = &tr_slow_vt;
    rd.transport.self = slow.inner.self;
    rd.resource = tr_cm;
    rd.fifo = e.fifo;
    rd.clock = clk;
    rd.stall_ns = KCTL_SEC(60);
    KT_EQ_INT(kctl_reflector_create(&rd, &r), KCTL_OK);
    tr_put(&e, "a", "{}");
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* list, watch */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "R:a");
    KT_EQ_INT(slow.opens, 1);
    slow.open_ns = KCTL_SEC(61);                 /* the next open takes longer than stall_ns */
    kctl_vclock_advance(&e.vc, KCTL_SEC(60));    /* a quiet minute: stalled, reopened */
    KT_EQ_INT(kctl_reflector_step(r, 0, &next), KCTL_OK);
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.watch_restarts, 1);             /* once: the new watch is not stalled */
    KT_EQ_INT(slow.opens, 2);
    kctl_vclock_advance(&e.vc, KCTL_SEC(60) - 1); /* its stall is due stall_ns after it opened */
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.watch_restarts, 1);
    tr_put(&e, "b", "{}");
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:b");
    /* a quiet minute again, and an open that takes 10 s to fail */
    slow.open_ns = KCTL_SEC(10);
    slow.fail_open = KCTL_ERR_TIMEOUT;
    kctl_vclock_advance(&e.vc, KCTL_SEC(60));
    KT_EQ_INT(kctl_reflector_step(r, 0, &next), KCTL_OK);
    KT_CHECK(next >= kctl_clock_now(&clk) + KCTL_MS(800)); /* the backoff, counted from the failure */
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.errors, 1);
    KT_EQ_INT(st.last_error, KCTL_ERR_TIMEOUT);
    kctl_reflector_destroy(r);
    tr_close(&e);
}

/* A store that ends its watches cleanly (an API server's timeoutSeconds):
   each watch opened ends (CLOSED) after the number of events close_after
   said when it opened. */
typedef struct tr_closing_w { kctl_watch *inner; uint32_t left; } tr_closing_w;
typedef struct tr_closing { kctl_transport inner; uint32_t close_after; int opens; } tr_closing;
static tr_closing *tr_closing_now;
static kctl_transport_vtable tr_closing_vt;
static int tr_closing_open(void *self, const kctl_resource *res, const kctl_list_opts *o, const char *rv, kctl_watch **out,
                           kctl_api_status *st) {
    tr_closing_w *w = (tr_closing_w *)malloc(sizeof *w);
    int rc;
    (void)self;
    if (!w) return KCTL_ERR_NOMEM;
    w->left = tr_closing_now->close_after;
    if ((rc = tr_closing_now->inner.vt->watch_open(tr_closing_now->inner.self, res, o, rv, &w->inner, st)) != KCTL_OK) {
        free(w);
        return rc;
    }
    tr_closing_now->opens++;
    *out = (kctl_watch *)w;
    return KCTL_OK;
}
static int tr_closing_next(void *self, kctl_watch *watch, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    tr_closing_w *w = (tr_closing_w *)watch;
    int rc;
    (void)self;
    if (!w->left) {
        memset(ev, 0, sizeof *ev);
        return KCTL_ERR_CLOSED;
    }
    rc = tr_closing_now->inner.vt->watch_next(tr_closing_now->inner.self, w->inner, timeout_ns, ev, st);
    if (rc == KCTL_OK) w->left--;
    return rc;
}
static void tr_closing_close(void *self, kctl_watch *watch) {
    tr_closing_w *w = (tr_closing_w *)watch;
    (void)self;
    tr_closing_now->inner.vt->watch_close(tr_closing_now->inner.self, w->inner);
    free(w);
}

/* A watch the store ends cleanly (CLOSED) is opened again at once from
   the last version, and is no error: no backoff, nothing lost. One that
   ends less than a second after it opened with no event (client-go's
   "very short watch") backs off as a broken one. */
static void tr_clean_end_rewatches_at_once(void) {
    tr_env e;
    tr_seen s;
    tr_closing cl;
    kctl_reflector_desc rd;
    kctl_reflector *r = NULL;
    kctl_reflector_stats st;
    kctl_clock clk;
    uint64_t next = 0;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    clk = kctl_vclock_clock(&e.vc);
    memset(&cl, 0, sizeof cl);
    cl.inner = kctl_memstore_transport(e.ms);
    cl.close_after = 1;
    tr_closing_now = &cl;
    tr_closing_vt = *cl.inner.vt;
    tr_closing_vt.watch_open = tr_closing_open;
    tr_closing_vt.watch_next = tr_closing_next;
    tr_closing_vt.watch_close = tr_closing_close;
    memset(&rd, 0, sizeof rd);
    rd.transport.vt = &tr_closing_vt;
    rd.transport.self = cl.inner.self;
    rd.resource = tr_cm;
    rd.fifo = e.fifo;
    rd.clock = clk;
    rd.stall_ns = KCTL_SEC(60);
    KT_EQ_INT(kctl_reflector_create(&rd, &r), KCTL_OK);
    tr_put(&e, "a", "{}");
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* list, watch 1 */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "R:a");
    KT_EQ_INT(cl.opens, 1);
    kctl_vclock_advance(&e.vc, KCTL_SEC(5));
    tr_put(&e, "b", "{}");
    tr_put(&e, "c", "{}");
    /* b, the clean end, watch 2 from b's version at once: c, its clean end,
       watch 3; all in one step, on the same clock reading */
    KT_EQ_INT(kctl_reflector_step(r, 0, &next), KCTL_OK);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:b A:c");
    KT_EQ_INT(cl.opens, 3);
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.errors, 0);
    KT_EQ_INT(st.last_error, KCTL_OK);
    KT_EQ_U64(st.watch_restarts, 2);
    KT_EQ_U64(st.lists, 1);
    /* watch 3 ends at once, with no event: a very short watch backs off */
    cl.close_after = 0;
    tr_put(&e, "d", "{}");
    kctl_vclock_advance(&e.vc, KCTL_MS(500));
    KT_EQ_INT(kctl_reflector_step(r, 0, &next), KCTL_OK); /* d, then it ends (it delivered one) */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:d");
    KT_EQ_INT(cl.opens, 4); /* watch 4 opened at once ... */
    KT_CHECK(next >= kctl_clock_now(&clk) + KCTL_MS(800)); /* ... and ended at once: backoff */
    tr_put(&e, "f", "{}");
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK);
    KT_EQ_INT(cl.opens, 4);
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "");
    kctl_vclock_advance(&e.vc, next - kctl_clock_now(&clk));
    cl.close_after = 5;
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* from d's version: f */
    tr_drain(&e, &s);
    KT_EQ_STR(s.text, "A:f");
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.errors, 0);
    KT_EQ_U64(st.lists, 1);
    kctl_reflector_destroy(r);
    tr_close(&e);
}

static void tr_bad_args(void) {
    kctl_reflector_desc d;
    kctl_reflector *r = NULL;
    memset(&d, 0, sizeof d);
    KT_EQ_INT(kctl_reflector_create(&d, &r), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_reflector_create(NULL, &r), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_reflector_step(NULL, 0, NULL), KCTL_ERR_INVALID_ARG);
    kctl_reflector_destroy(NULL);
}

/* ---- a store that went back in time: a transport in front of a memstore
   that can be swapped for another (a store restarted without its
   journal, or restored from an older snapshot); the old store's open
   watches break (IO) when it goes. */
typedef struct tr_swap {
    kctl_transport cur;
    int gen;
    bool in_stream; /* a refused open comes as the stream's first event (an
                       API server's watch cache: an ERROR event, then the end) */
} tr_swap;
typedef struct tr_swap_watch {
    kctl_transport t;
    kctl_watch *w;
    int gen, err;
} tr_swap_watch;

static int tr_sw_list(void *s, const kctl_resource *res, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *st) {
    tr_swap *g = (tr_swap *)s;
    return g->cur.vt->list(g->cur.self, res, o, out, st);
}
static int tr_sw_open(void *s, const kctl_resource *res, const kctl_list_opts *o, const char *rv, kctl_watch **out,
                      kctl_api_status *st) {
    tr_swap *g = (tr_swap *)s;
    tr_swap_watch *w = (tr_swap_watch *)calloc(1, sizeof *w);
    int rc;
    *out = NULL;
    if (!w) return KCTL_ERR_NOMEM;
    w->t = g->cur;
    w->gen = g->gen;
    if ((rc = g->cur.vt->watch_open(g->cur.self, res, o, rv, &w->w, st)) != KCTL_OK && !g->in_stream) {
        free(w);
        return rc;
    }
    w->err = rc;
    *out = (kctl_watch *)w;
    return KCTL_OK;
}
static int tr_sw_next(void *s, kctl_watch *watch, uint64_t t, kctl_event *ev, kctl_api_status *st) {
    tr_swap_watch *w = (tr_swap_watch *)watch;
    memset(ev, 0, sizeof *ev);
    if (w->gen != ((tr_swap *)s)->gen) return KCTL_ERR_IO; /* its store is gone */
    if (w->err) { /* as an API server's ERROR event says it */
        kctl_status_cause c;
        c.reason = "ResourceVersionTooLarge";
        c.message = "Too large resource version";
        c.field = "";
        if (st) kctl_api_status_set(st, 504, "Timeout", "Too large resource version", NULL, NULL, NULL, &c, 1);
        return w->err;
    }
    return w->t.vt->watch_next(w->t.self, w->w, t, ev, st);
}
static void tr_sw_close(void *s, kctl_watch *watch) {
    tr_swap_watch *w = (tr_swap_watch *)watch;
    (void)s;
    if (w->w) w->t.vt->watch_close(w->t.self, w->w);
    free(w);
}
static int tr_sw_get(void *s, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    tr_swap *g = (tr_swap *)s;
    return g->cur.vt->get(g->cur.self, res, name, out, st);
}
static const kctl_transport_vtable tr_swap_vt = { tr_sw_list, tr_sw_open, tr_sw_next, tr_sw_close, tr_sw_get,
                                                  NULL, NULL, NULL, NULL, NULL, NULL, NULL };

typedef struct tr_behind_count {
    int adds, updates, deletes, unknown, logged;
} tr_behind_count;
static void tr_b_add(kctl_obj *o, void *ud) { (void)o; ((tr_behind_count *)ud)->adds++; }
static void tr_b_update(kctl_obj *o, kctl_obj *n, void *ud) { (void)o; (void)n; ((tr_behind_count *)ud)->updates++; }
static void tr_b_delete(const char *k, kctl_obj *o, bool unknown, void *ud) {
    (void)k;
    (void)o;
    ((tr_behind_count *)ud)->deletes++;
    ((tr_behind_count *)ud)->unknown += unknown;
}
static void tr_b_log(int level, uint32_t item, const char *msg, void *ud) {
    (void)level;
    (void)msg;
    if (item == KCTL_LOGITEM_REFLECTOR_STORE_BEHIND) ((tr_behind_count *)ud)->logged++;
}

static kctl_memstore *tr_b_store(kctl_vclock *vc) {
    kctl_memstore_desc md;
    kctl_memstore *ms = NULL;
    memset(&md, 0, sizeof md);
    md.clock = kctl_vclock_clock(vc);
    if (kctl_memstore_create(&md, &ms) != KCTL_OK) kt_fail(__FILE__, __LINE__, "memstore");
    return ms;
}
static void tr_b_put(kctl_memstore *ms, const char *name, int v) {
    char doc[160];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"data\":{\"v\":\"%d\"}}", name, v);
    if (kctl_memstore_apply(ms, &tr_cm, doc, strlen(doc), NULL, NULL) != KCTL_OK) kt_fail(__FILE__, __LINE__, "apply %s", name);
}

/* The store is swapped for one that is behind the informer's last-seen
   version (a memstore restarted without its journal: revision 4 where the
   informer saw 10). The watch breaks; watching again from 10 is refused
   with TIMEOUT and cause ResourceVersionTooLarge. Before, that retried
   the same watch forever (TIMEOUT, backoff, TIMEOUT); now it is counted
   (store_behind), logged, and after the backoff the informer lists the
   store as it is: the objects it lost are deletes with their final state
   unknown, the ones it has anew are updates or adds, and the watch goes
   on from the new store's version. */
static void tr_store_went_back_case(bool in_stream) {
    kctl_vclock vc;
    kctl_memstore *a, *b;
    tr_swap sw;
    kctl_transport t;
    kctl_informer_desc d;
    kctl_informer *inf = NULL;
    kctl_handler h;
    kctl_reflector_stats st;
    tr_behind_count cnt;
    kctl_clock clk;
    uint64_t next = 0;
    char name[16];
    int i;
    kctl_vclock_init(&vc, KCTL_SEC(1000));
    clk = kctl_vclock_clock(&vc);
    a = tr_b_store(&vc);
    b = tr_b_store(&vc);
    if (!a || !b) return;
    for (i = 0; i < 10; i++) { snprintf(name, sizeof name, "cm-%d", i); tr_b_put(a, name, 0); }
    tr_b_put(b, "other", 0); /* the older store: other, then cm-0..2 (versions 2..4) */
    for (i = 0; i < 3; i++) { snprintf(name, sizeof name, "cm-%d", i); tr_b_put(b, name, 0); }
    memset(&sw, 0, sizeof sw);
    memset(&cnt, 0, sizeof cnt);
    sw.cur = kctl_memstore_transport(a);
    sw.in_stream = in_stream;
    t.vt = &tr_swap_vt;
    t.self = &sw;
    memset(&d, 0, sizeof d);
    d.transport = t;
    d.resource = tr_cm;
    d.clock = kctl_vclock_clock(&vc);
    d.seed = 7;
    d.logger.func = tr_b_log;
    d.logger.user_data = &cnt;
    KT_EQ_INT(kctl_informer_create(&d, &inf), KCTL_OK);
    if (!inf) return;
    memset(&h, 0, sizeof h);
    h.on_add = tr_b_add;
    h.on_update = tr_b_update;
    h.on_delete = tr_b_delete;
    h.user_data = &cnt;
    kctl_informer_add_handler(inf, &h);
    for (i = 0; i < 3; i++) kctl_informer_step(inf, 0, NULL);
    KT_CHECK(kctl_informer_has_synced(inf));
    KT_EQ_INT(cnt.adds, 10);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_STR(st.last_rv, "10");
    /* the store restarts without its journal */
    sw.cur = kctl_memstore_transport(b);
    sw.gen++;
    kctl_informer_step(inf, 0, &next); /* the watch breaks: a backoff */
    for (i = 0; i < 3; i++) {          /* the watch from 10 is refused once: then a list, each after its backoff */
        uint64_t now = kctl_clock_now(&clk);
        if (next > now) kctl_vclock_advance(&vc, next - now);
        kctl_informer_step(inf, 0, &next);
        kctl_informer_read_stats(inf, &st);
        if (st.store_behind && !st.relists) KT_CHECK(next > kctl_clock_now(&clk)); /* not at once: after a backoff */
    }
    kctl_informer_step(inf, 0, NULL);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_U64(st.store_behind, 1);
    KT_EQ_INT(cnt.logged, 1);
    KT_EQ_U64(st.relists, 1);
    KT_EQ_STR(st.last_rv, "4");
    KT_EQ_INT(cnt.deletes, 7); /* cm-3..9: gone with the store's journal */
    KT_EQ_INT(cnt.unknown, 7);
    KT_EQ_INT(cnt.updates, 3); /* cm-0..2 at their new versions */
    KT_EQ_INT(cnt.adds, 10 + 1);
    KT_EQ_U64(kctl_indexer_len(kctl_informer_indexer(inf)), 4);
    /* and the watch goes on from there */
    tr_b_put(b, "later", 0);
    kctl_informer_step(inf, 0, NULL);
    kctl_informer_step(inf, 0, NULL);
    KT_EQ_INT(cnt.adds, 10 + 2);
    kctl_informer_read_stats(inf, &st);
    KT_EQ_STR(st.last_rv, "5");
    KT_EQ_U64(st.store_behind, 1);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(a);
    kctl_memstore_destroy(b);
    kctl_vclock_deinit(&vc);
}
static void tr_store_went_back(void) { tr_store_went_back_case(false); }
/* The same refusal as the stream's first event (a newer API server's watch
   cache answers the watch, then sends an ERROR event with the Status). */
static void tr_store_went_back_in_stream(void) { tr_store_went_back_case(true); }

/* A delta the FIFO could not keep (out of memory) is a list again, after
   the backoff, counted from when it was lost: here the event came at the
   end of a wait of 2 s (the step's start is 2 s old by then, more than
   the first backoff's 1.6 s at most, so a backoff counted from it would
   have been over at once). */
static void tr_lost_delta_backs_off_from_the_loss(void) {
    tr_env e;
    tr_seen s;
    tr_slow sl;
    kt_alloc ka;
    kctl_fifo_desc fd;
    kctl_fifo *f = NULL;
    kctl_reflector_desc rd;
    kctl_reflector *r = NULL;
    kctl_reflector_stats st;
    kctl_clock clk;
    uint64_t next = 0, now;
    if (!tr_open(&e, 0, 0, 0, 0)) return;
    clk = kctl_vclock_clock(&e.vc);
    kt_alloc_init(&ka);
    memset(&fd, 0, sizeof fd);
    fd.allocator = kt_allocator(&ka);
    fd.known = e.ix;
    KT_EQ_INT(kctl_fifo_create(&fd, &f), KCTL_OK);
    memset(&sl, 0, sizeof sl);
    sl.inner = kctl_memstore_transport(e.ms);
    sl.vc = &e.vc;
    tr_slow_now = &sl;
    tr_slow_vt = *sl.inner.vt;
    tr_slow_vt.watch_next = tr_slow_next;
    memset(&rd, 0, sizeof rd);
    rd.transport.vt = &tr_slow_vt;
    rd.transport.self = sl.inner.self;
    rd.resource = tr_cm;
    rd.fifo = f;
    rd.clock = clk;
    rd.stall_ns = KCTL_SEC(60);
    KT_EQ_INT(kctl_reflector_create(&rd, &r), KCTL_OK);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* an empty list, then the watch */
    tr_put(&e, "a", "{}");
    sl.event_ns = KCTL_SEC(2);
    ka.fail_after = 0; /* a's delta: no room for it */
    KT_EQ_INT(kctl_reflector_step(r, 0, &next), KCTL_OK);
    ka.fail_after = -1;
    KT_CHECK(ka.fail_count >= 1);
    now = kctl_clock_now(&clk);
    KT_CHECK(next >= now + KCTL_MS(800) && next < now + KCTL_MS(1600)); /* from the loss, jittered */
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.errors, 1);
    KT_EQ_INT(st.last_error, KCTL_ERR_NOMEM);
    KT_EQ_U64(st.lists, 1);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* still backing off: no list */
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.lists, 1);
    kctl_vclock_advance(&e.vc, next - now);
    KT_EQ_INT(kctl_reflector_step(r, 0, NULL), KCTL_OK); /* the list again: a is there */
    kctl_reflector_read_stats(r, &st);
    KT_EQ_U64(st.lists, 2);
    KT_EQ_INT(st.last_error, KCTL_OK);
    memset(&s, 0, sizeof s);
    s.ix = e.ix;
    while (kctl_fifo_try_pop(f, tr_process, &s) == KCTL_OK) { }
    KT_EQ_STR(s.text, "R:a");
    kctl_reflector_destroy(r);
    kctl_fifo_destroy(f);
    KT_EQ_INT(ka.live, 0);
    tr_close(&e);
}

void kt_suite_reflector(void) {
    KT_RUN(tr_list_then_watch);
    KT_RUN(tr_broken_watch_resumes_with_backoff);
    KT_RUN(tr_gone_relists);
    KT_RUN(tr_bookmarks_and_list_errors);
    KT_RUN(tr_resync);
    KT_RUN(tr_resync_from_list_end);
    KT_RUN(tr_last_error);
    KT_RUN(tr_slow_open_counts_from_its_end);
    KT_RUN(tr_list_expired_between_pages);
    KT_RUN(tr_clean_end_rewatches_at_once);
    KT_RUN(tr_bad_args);
    KT_RUN(tr_store_went_back);
    KT_RUN(tr_store_went_back_in_stream);
    KT_RUN(tr_lost_delta_backs_off_from_the_loss);
}
