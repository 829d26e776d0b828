/* test_memstore.c - the embedded store: what is its own (exact revisions,
   history and bookmarks by count and by time, faults, persistence, paging
   across namespaces). What every transport owes, the memstore included,
   is tests/test_contract.c's (get, delete and finalizers; watches from ""
   and from a version, with selectors). */
#include "kt.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const kctl_resource tm_cm = { "", "v1", "configmaps", "prod" };
static const kctl_resource tm_cm_all = { "", "v1", "configmaps", NULL };

typedef struct tm_store {
    kctl_memstore *ms;
    kctl_transport t;
    kt_alloc a;
} tm_store;

static int tm_open(tm_store *s, uint32_t history, uint32_t bookmark_every) {
    kctl_memstore_desc d;
    memset(s, 0, sizeof *s);
    kt_alloc_init(&s->a);
    memset(&d, 0, sizeof d);
    d.allocator = kt_allocator(&s->a);
    d.history = history;
    d.bookmark_every = bookmark_every;
    if (kctl_memstore_create(&d, &s->ms) != KCTL_OK) return 0;
    s->t = kctl_memstore_transport(s->ms);
    return 1;
}

static void tm_close(tm_store *s) {
    kctl_memstore_destroy(s->ms);
    KT_EQ_INT(s->a.live, 0);
}

static int tm_write(tm_store *s, int (*fn)(void *, const kctl_resource *, const char *, size_t, kctl_obj **, kctl_api_status *),
                    const kctl_resource *res, const char *json, kctl_obj **out) {
    return fn(s->t.self, res, json, strlen(json), out, NULL);
}

static int64_t tm_int(const kctl_obj *o, const char *path) {
    kctl_json j;
    kctl_json_tok t[128];
    int64_t v = -1;
    size_t len;
    const char *text = kctl_obj_json(o, &len);
    if (kctl_json_parse(text, len, t, 128, NULL, &j) == KCTL_OK) kctl_json_int64(&j, kctl_json_path(&j, 0, path), &v);
    return v;
}

static bool tm_str_is(const kctl_obj *o, const char *path, const char *want) {
    kctl_json j;
    kctl_json_tok t[128];
    size_t len;
    const char *text = kctl_obj_json(o, &len);
    if (kctl_json_parse(text, len, t, 128, NULL, &j) != KCTL_OK) return false;
    if (!want) return kctl_json_path(&j, 0, path) == KCTL_JSON_NONE;
    return kctl_json_string_eq(&j, kctl_json_path(&j, 0, path), want);
}

static void tm_create_update_generation_status(void) {
    tm_store s;
    kctl_obj *o = NULL, *u = NULL;
    if (!tm_open(&s, 0, 0)) return;
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm,
              "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"n\":1},\"status\":{\"phase\":\"sent\"}}", &o), KCTL_OK);
    if (!o) { tm_close(&s); return; }
    KT_EQ_STR(kctl_obj_key(o), "prod/a"); /* the namespace comes from the resource */
    KT_EQ_STR(kctl_obj_resource_version(o), "1");
    KT_EQ_INT(kctl_obj_generation(o), 1);
    KT_CHECK(kctl_obj_uid(o)[0] != 0);
    KT_CHECK(!tm_str_is(o, "metadata.creationTimestamp", NULL));
    KT_CHECK(tm_str_is(o, "status", NULL)); /* create drops the status: it has a subresource */
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"a\"}}", NULL), KCTL_ERR_EXISTS);
    kctl_obj_unref(o);
    KT_EQ_INT(tm_write(&s, s.t.vt->update_status, &tm_cm, "{\"metadata\":{\"name\":\"a\"},\"status\":{\"phase\":\"new\"}}", &o), KCTL_OK);
    if (!o) { tm_close(&s); return; }
    KT_EQ_STR(kctl_obj_resource_version(o), "2");
    /* same spec, a new status sent along: generation stays, status ignored */
    KT_EQ_INT(tm_write(&s, s.t.vt->update, &tm_cm,
              "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"2\",\"labels\":{\"x\":\"y\"}},\"spec\":{\"n\":1},\"status\":{\"phase\":\"hacked\"}}", &u), KCTL_OK);
    if (u) {
        KT_EQ_STR(kctl_obj_resource_version(u), "3");
        KT_EQ_INT(kctl_obj_generation(u), 1);
        KT_EQ_STR(kctl_obj_label(u, "x"), "y");
        KT_CHECK(tm_str_is(u, "status.phase", "new"));
        KT_EQ_STR(kctl_obj_uid(u), kctl_obj_uid(o)); /* the store's metadata is the store's */
        kctl_obj_unref(u);
    }
    /* a stale version: conflict; none: unconditional */
    KT_EQ_INT(tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"2\"},\"spec\":{\"n\":2}}", NULL), KCTL_ERR_CONFLICT);
    KT_EQ_INT(tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"n\":2}}", &u), KCTL_OK);
    if (u) {
        KT_EQ_INT(kctl_obj_generation(u), 2); /* the spec changed */
        kctl_obj_unref(u);
    }
    /* status: only the status changes, generation never */
    KT_EQ_INT(tm_write(&s, s.t.vt->update_status, &tm_cm,
              "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"4\"},\"spec\":{\"n\":99},\"status\":{\"phase\":\"ready\"}}", &u), KCTL_OK);
    if (u) {
        KT_EQ_STR(kctl_obj_resource_version(u), "5");
        KT_EQ_INT(kctl_obj_generation(u), 2);
        KT_EQ_INT(tm_int(u, "spec.n"), 2);
        KT_CHECK(tm_str_is(u, "status.phase", "ready"));
        kctl_obj_unref(u);
    }
    KT_EQ_INT(tm_write(&s, s.t.vt->update_status, &tm_cm, "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"4\"},\"status\":{}}", NULL), KCTL_ERR_CONFLICT);
    KT_EQ_INT(tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"zz\"}}", NULL), KCTL_ERR_NOT_FOUND);
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"b\",\"namespace\":\"dev\"}}", NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{}}", NULL), KCTL_ERR_INVALID_ARG); /* 422: a name is required */
    KT_EQ_U64(kctl_memstore_revision(s.ms), 5);
    kctl_obj_unref(o);
    tm_close(&s);
}

/* Whether a list holds count objects in strictly rising key order. */
static int tm_sorted(const kctl_list_result *r, size_t count) {
    size_t i;
    if (r->items.count != count) return 0;
    for (i = 1; i < r->items.count; i++)
        if (strcmp(kctl_obj_key(r->items.items[i - 1]), kctl_obj_key(r->items.items[i])) >= 0) return 0;
    return 1;
}

#if defined(KCTL_SMALL) ? KCTL_SMALL : defined(__OPTIMIZE_SIZE__) /* small builds: a list's sort takes no memory */
#define TM_SORT_IN_PLACE 1
#else
#define TM_SORT_IN_PLACE 0
#endif

/* One allocation fails, the (tm_fail_one+1)th from when it is set, and
   only that one (kt_alloc's failures last): through to s->a otherwise. */
static long tm_fail_one = -1;
static void *tm_alloc_one(size_t size, void *user_data) {
    kt_alloc *a = (kt_alloc *)user_data;
    if (tm_fail_one >= 0 && tm_fail_one-- == 0) {
        a->fail_count++;
        return NULL;
    }
    return kt_allocator(a).alloc_fn(size, a);
}

/* Lists come in key order (the store sorts by the 8 key bytes after the
   prefix all keys share, then by strcmp where those are alike): keys of
   every length around that window, a shared prefix, a group alike far
   past it, two namespaces; and the order holds when the sort's own memory
   cannot be had (the list is then NOMEM or whole and sorted). */
static void tm_list_key_order(void) {
    static const kctl_resource dev = { "", "v1", "configmaps", "dev" };
    static const char abc[] = "ab0";
    tm_store s;
    kctl_list_result r;
    uint32_t x = 12345;
    size_t prod = 0, all = 0;
    long fail;
    int i, j, ok = 1, whole = 0;
    kctl_memstore_desc d;
    memset(&s, 0, sizeof s);
    kt_alloc_init(&s.a);
    memset(&d, 0, sizeof d);
    d.allocator = kt_allocator(&s.a);
    d.allocator.alloc_fn = tm_alloc_one;
    if (kctl_memstore_create(&d, &s.ms) != KCTL_OK) return;
    s.t = kctl_memstore_transport(s.ms);
    for (i = 0; i < 700; i++) {
        char name[64], doc[128];
        int len;
        x = x * 1103515245u + 12345u;
        len = (int)(x >> 16) % 16;
        if (i % 3 == 2) { /* alike for 13 bytes, past the window */
            strcpy(name, "b000000000000");
            len = 1 + len % 4;
        } else {
            strcpy(name, "a");
        }
        for (j = 0; j < len; j++) {
            size_t at = strlen(name);
            x = x * 1103515245u + 12345u;
            name[at] = abc[(x >> 16) % 3];
            name[at + 1] = '\0';
        }
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"}}", name);
        if (tm_write(&s, s.t.vt->create, i % 5 == 4 ? &dev : &tm_cm, doc, NULL) == KCTL_OK) { /* (a name twice: ALREADY_EXISTS) */
            all++;
            if (i % 5 != 4) prod++;
        }
    }
    KT_CHECK(prod > 300 && all > prod);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_OK);
    KT_CHECK(tm_sorted(&r, prod));
    kctl_list_result_free(&r);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm_all, NULL, &r, NULL), KCTL_OK);
    KT_CHECK(tm_sorted(&r, all));
    kctl_list_result_free(&r);
    for (fail = 0; fail < 64; fail++) { /* each of the list's allocations failing alone in turn, until none is left to fail */
        long failed = s.a.fail_count;
        int rc;
        tm_fail_one = fail;
        rc = s.t.vt->list(s.t.self, &tm_cm_all, NULL, &r, NULL);
        tm_fail_one = -1;
        if (rc == KCTL_OK) {
            whole++;
            if (!tm_sorted(&r, all)) ok = 0;
            kctl_list_result_free(&r);
            if (s.a.fail_count == failed) break;
        } else if (rc != KCTL_ERR_NOMEM) {
            ok = 0;
        }
    }
    KT_CHECK(ok);
    KT_CHECK(whole > (TM_SORT_IN_PLACE ? 0 : 1)); /* one with the sort's memory refused (unless it takes none), one with nothing refused */
    KT_CHECK(fail < 64);
    tm_close(&s);
}

static void tm_list_selectors_paging(void) {
    tm_store s;
    kctl_list_result r;
    kctl_list_opts lo;
    kctl_resource dev = { "", "v1", "configmaps", "dev" }, secrets = { "", "v1", "secrets", "prod" };
    char cont[KCTL_CONTINUE_MAX];
    size_t seen = 0;
    int i;
    if (!tm_open(&s, 0, 0)) return;
    for (i = 0; i < 5; i++) {
        char doc[128];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"c%d\",\"labels\":{\"app\":\"%s\"}}}", i, i % 2 ? "web" : "db");
        tm_write(&s, s.t.vt->create, &tm_cm, doc, NULL);
    }
    tm_write(&s, s.t.vt->create, &dev, "{\"metadata\":{\"name\":\"d\",\"labels\":{\"app\":\"web\"}}}", NULL);
    tm_write(&s, s.t.vt->create, &secrets, "{\"metadata\":{\"name\":\"s\"}}", NULL);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_OK);
    KT_EQ_U64(r.items.count, 5);
    KT_EQ_STR(r.resource_version, "7");
    KT_EQ_STR(r.continue_token, "");
    kctl_list_result_free(&r);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm_all, NULL, &r, NULL), KCTL_OK);
    KT_EQ_U64(r.items.count, 6); /* every namespace, not the secrets */
    kctl_list_result_free(&r);
    memset(&lo, 0, sizeof lo);
    lo.label_selector = "app=web";
    KT_EQ_INT(KT_NEED_SELECTORS(s.t.vt->list(s.t.self, &tm_cm_all, &lo, &r, NULL)), KCTL_OK);
    KT_EQ_U64(r.items.count, 3);
    kctl_list_result_free(&r);
    lo.field_selector = "metadata.namespace=dev";
    KT_EQ_INT(KT_NEED_SELECTORS(s.t.vt->list(s.t.self, &tm_cm_all, &lo, &r, NULL)), KCTL_OK);
    KT_EQ_U64(r.items.count, 1);
    kctl_list_result_free(&r);
    lo.label_selector = "app=";
    lo.field_selector = "spec.x=1";
    KT_EQ_INT(KT_NEED_SELECTORS(s.t.vt->list(s.t.self, &tm_cm_all, &lo, &r, NULL)), KCTL_ERR_INVALID_ARG);
    /* pages of 2: c0 c1 | c2 c3 | c4 */
    memset(&lo, 0, sizeof lo);
    lo.limit = 2;
    cont[0] = 0;
    for (i = 0; i < 4; i++) {
        lo.continue_token = cont;
        KT_EQ_INT(KT_NEED_PAGING(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL)), KCTL_OK);
        seen += r.items.count;
        if (r.items.count) KT_EQ_STR(kctl_obj_name(r.items.items[0]), i == 0 ? "c0" : i == 1 ? "c2" : "c4");
        snprintf(cont, sizeof cont, "%s", r.continue_token);
        kctl_list_result_free(&r);
        if (!cont[0]) break;
    }
    KT_EQ_INT(i, 2);
    KT_EQ_U64(seen, 5);
    tm_close(&s);
}

/* The trim switches of the store's read side: without KCTL_NO_PAGING a
   limit pages; with it a limit, a continue token or a reflector's
   page_size is UNSUPPORTED and a list without them is whole. Without
   KCTL_NO_FAULTS an armed fault answers; with it fail_next is
   UNSUPPORTED and the request is answered. */
static void tm_trim_paging_faults(void) {
    tm_store s;
    kctl_list_result r;
    kctl_list_opts lo;
    kctl_reflector_desc rd;
    kctl_reflector *rf = NULL;
    kctl_fifo *f = NULL;
    int rc;
    if (!tm_open(&s, 0, 0)) return;
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"a\"}}", NULL), KCTL_OK);
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"b\"}}", NULL), KCTL_OK);
    memset(&lo, 0, sizeof lo);
    lo.limit = 1;
    rc = s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL);
#ifdef KCTL_NO_PAGING
    KT_EQ_INT(rc, KCTL_ERR_UNSUPPORTED);
    KT_EQ_U64(r.items.count, 0);
    lo.limit = 0;
    lo.continue_token = "2:configmaps|prod/a";
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_ERR_UNSUPPORTED);
#else
    KT_EQ_INT(rc, KCTL_OK);
    KT_EQ_U64(r.items.count, 1);
    KT_CHECK(r.continue_token[0] != '\0');
    kctl_list_result_free(&r);
#endif
    memset(&lo, 0, sizeof lo);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_OK);
    KT_EQ_U64(r.items.count, 2);
    KT_EQ_STR(r.continue_token, "");
    KT_EQ_STR(r.resource_version, "2");
    kctl_list_result_free(&r);
    rc = (kctl_memstore_fail_next)(s.ms, KCTL_VERB_LIST, 1, KCTL_ERR_IO); /* the function, not kt.h's wrapper */
#ifdef KCTL_NO_FAULTS
    KT_EQ_INT(rc, KCTL_ERR_UNSUPPORTED);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_OK);
    kctl_list_result_free(&r);
#else
    KT_EQ_INT(rc, KCTL_OK);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_ERR_IO);
#endif
    KT_EQ_INT((kctl_memstore_fail_next)(s.ms, KCTL_VERB_COUNT, 1, KCTL_ERR_IO), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_fifo_create(NULL, &f), KCTL_OK);
    memset(&rd, 0, sizeof rd);
    rd.transport = s.t;
    rd.resource = tm_cm;
    rd.fifo = f;
    rd.page_size = 1;
    rc = (kctl_reflector_create)(&rd, &rf);
#ifdef KCTL_NO_PAGING
    KT_EQ_INT(rc, KCTL_ERR_UNSUPPORTED);
    KT_CHECK(rf == NULL);
#else
    KT_EQ_INT(rc, KCTL_OK);
#endif
    kctl_reflector_destroy(rf);
    kctl_fifo_destroy(f);
    tm_close(&s);
}

/* A paged list is one snapshot at the first page's version: writes between
   pages do not show; other paged lists meanwhile do not disturb it (the
   store remembers 8); a list forgotten (the 9th in progress pushes the
   least recently used out) is GONE once the store moved on, and served
   from the store as it is while nothing was written. */
static void tm_list_paging_snapshot(void) {
    tm_store s;
    kctl_list_result r;
    kctl_list_opts lo;
    char cont[KCTL_CONTINUE_MAX], cont2[KCTL_CONTINUE_MAX], tok[9][KCTL_CONTINUE_MAX];
    int i;
    if (!tm_open(&s, 0, 0)) return;
    for (i = 0; i < 6; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"p%d\"}}", i);
        tm_write(&s, s.t.vt->create, &tm_cm, doc, NULL);
    }
    memset(&lo, 0, sizeof lo);
    lo.limit = 2;
    KT_EQ_INT(KT_NEED_PAGING(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL)), KCTL_OK); /* p0 p1 at version 6 */
    KT_EQ_STR(r.resource_version, "6");
    snprintf(cont, sizeof cont, "%s", r.continue_token);
    kctl_list_result_free(&r);
    KT_EQ_INT(kctl_memstore_delete(s.ms, &tm_cm, "p2", NULL), KCTL_OK);
    tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"p3a\"}}", NULL);
    KT_CHECK(strncmp(cont, "6:", 2) == 0);
    lo.continue_token = cont;
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_OK); /* still p2 p3, at version 6 */
    KT_EQ_U64(r.items.count, 2);
    if (r.items.count == 2) {
        KT_EQ_STR(kctl_obj_name(r.items.items[0]), "p2");
        KT_EQ_STR(kctl_obj_name(r.items.items[1]), "p3");
    }
    KT_EQ_STR(r.resource_version, "6");
    snprintf(cont, sizeof cont, "%s", r.continue_token);
    kctl_list_result_free(&r);
    /* another paged list meanwhile */
    lo.continue_token = NULL;
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_OK);
    KT_EQ_STR(r.resource_version, "8");
    snprintf(cont2, sizeof cont2, "%s", r.continue_token);
    kctl_list_result_free(&r);
    KT_CHECK(strncmp(cont2, "8:", 2) == 0); /* the version it pages */
    KT_EQ_INT(kctl_memstore_delete(s.ms, &tm_cm, "p4", NULL), KCTL_OK);
    lo.continue_token = cont; /* the first list's last page: still its snapshot */
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_OK);
    KT_EQ_U64(r.items.count, 2);
    if (r.items.count == 2) {
        KT_EQ_STR(kctl_obj_name(r.items.items[0]), "p4"); /* deleted since, but in the snapshot */
        KT_EQ_STR(kctl_obj_name(r.items.items[1]), "p5");
    }
    KT_EQ_STR(r.resource_version, "6");
    KT_EQ_STR(r.continue_token, "");
    kctl_list_result_free(&r);
    /* nine lists in progress: the least recently used (the second list above) is forgotten */
    lo.continue_token = NULL;
    for (i = 0; i < 9; i++) {
        KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_OK);
        snprintf(tok[i], sizeof tok[i], "%s", r.continue_token);
        kctl_list_result_free(&r);
    }
    lo.continue_token = tok[8]; /* remembered: nothing was written since, anyway */
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_OK);
    kctl_list_result_free(&r);
    lo.continue_token = cont2; /* forgotten, and the store has moved on */
    {
        kctl_api_status st;
        memset(&st, 0, sizeof st);
        KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, &st), KCTL_ERR_GONE);
        KT_EQ_INT(st.code, 410);
        KT_EQ_STR(st.reason, "Expired");
        kctl_api_status_clear(&st);
    }
    lo.continue_token = tok[0]; /* forgotten too, but nothing written since its version: the store as it is */
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, &lo, &r, NULL), KCTL_OK);
    KT_EQ_STR(r.resource_version, "9");
    kctl_list_result_free(&r);
    tm_close(&s);
}

/* Next event as "TYPE name rv", or "AGAIN"/"GONE"/"IO". */
static const char *tm_next(tm_store *s, kctl_watch *w, char *buf, size_t cap) {
    kctl_event ev;
    int rc = s->t.vt->watch_next(s->t.self, w, 0, &ev, NULL);
    static const char *names[] = { "?", "ADDED", "MODIFIED", "DELETED", "BOOKMARK" };
    if (rc == KCTL_ERR_AGAIN) return "AGAIN";
    if (rc == KCTL_ERR_GONE) return "GONE";
    if (rc == KCTL_ERR_IO) return "IO";
    if (rc != KCTL_OK) return "ERROR";
    snprintf(buf, cap, "%s %s %s", names[ev.type], ev.obj ? kctl_obj_name(ev.obj) : "-", ev.resource_version);
    kctl_event_clear(&ev);
    return buf;
}
#define TM_NEXT(s, w, want) do { char tm_b_[128]; KT_EQ_STR(tm_next((s), (w), tm_b_, sizeof tm_b_), (want)); } while (0)

static void tm_watch_gone_bookmarks_faults(void) {
    tm_store s;
    kctl_watch *w = NULL;
    kctl_list_result r;
    int i;
    if (!tm_open(&s, 4, 3)) return; /* 4 events remembered, a bookmark every 3 */
    for (i = 0; i < 6; i++) {
        char doc[64];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%d\"}}", i);
        tm_write(&s, s.t.vt->create, &tm_cm, doc, NULL);
    }
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "1", &w, NULL), KCTL_ERR_GONE); /* 2 was forgotten */
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "2", &w, NULL), KCTL_OK);
    TM_NEXT(&s, w, "ADDED o2 3");
    kctl_memstore_compact(s.ms, 5);
    TM_NEXT(&s, w, "GONE");
    s.t.vt->watch_close(s.t.self, w);
    /* bookmarks: events of other resources count */
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "6", &w, NULL), KCTL_OK);
    {
        kctl_resource other = { "", "v1", "secrets", "prod" };
        for (i = 0; i < 3; i++) {
            char doc[64];
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"s%d\"}}", i);
            tm_write(&s, s.t.vt->create, &other, doc, NULL);
        }
    }
    TM_NEXT(&s, w, "BOOKMARK - 9");
    TM_NEXT(&s, w, "AGAIN");
    s.t.vt->watch_close(s.t.self, w);
    /* faults */
    kctl_memstore_fail_next(s.ms, KCTL_VERB_LIST, 2, KCTL_ERR_IO);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_ERR_IO);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_ERR_IO);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_OK);
    kctl_list_result_free(&r);
    kctl_memstore_fail_next(s.ms, KCTL_VERB_UPDATE, 1, KCTL_ERR_CONFLICT);
    KT_EQ_INT(tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"o5\"}}", NULL), KCTL_ERR_CONFLICT);
    KT_EQ_INT(tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"o5\"}}", NULL), KCTL_OK);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 9); /* it changed nothing: no new revision */
    KT_EQ_INT(kctl_memstore_fail_next(s.ms, KCTL_VERB_COUNT, 1, KCTL_ERR_IO), KCTL_ERR_INVALID_ARG);
    kctl_memstore_break_watches_after(s.ms, 1);
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "", &w, NULL), KCTL_OK);
    {
        char b[128];
        const char *first = tm_next(&s, w, b, sizeof b);
        KT_CHECK(strncmp(first, "ADDED", 5) == 0);
    }
    /* the initial objects are delivered before the break counts live events */
    s.t.vt->watch_close(s.t.self, w);
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "10", &w, NULL), KCTL_ERR_TIMEOUT); /* from the future */
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "9", &w, NULL), KCTL_OK);
    tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"o5\"},\"spec\":{\"x\":1}}", NULL);
    tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"o5\"},\"spec\":{\"x\":2}}", NULL);
    TM_NEXT(&s, w, "MODIFIED o5 10");
    TM_NEXT(&s, w, "IO");
    s.t.vt->watch_close(s.t.self, w);
    tm_close(&s);
}

/* A watcher behind takes the events after the one it asks for in the same
   hold of the lock (up to 32) and hands them out on its next calls: every
   event once, in order, each with its own version, the other namespace's
   left out. A compaction past what it has handed out gives GONE exactly
   as one event at a time would; one short of it loses nothing; events
   still held go back to the store's allocator when the watch closes. */
static void tm_watch_batches(void) {
    static const kctl_resource dev = { "", "v1", "configmaps", "dev" };
    tm_store s;
    kctl_watch *w = NULL;
    char doc[64], want[64];
    int i;
    if (!tm_open(&s, 256, 0)) return;
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"first\"}}", NULL), KCTL_OK);
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "1", &w, NULL), KCTL_OK);
    for (i = 0; i < 100; i++) { /* prod at revisions 2, 4, ... 50, dev between, then prod to 101 */
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%d\"}}", i);
        KT_EQ_INT(tm_write(&s, s.t.vt->create, i < 50 && i % 2 ? &dev : &tm_cm, doc, NULL), KCTL_OK);
    }
    for (i = 0; i < 100; i++) {
        if (i < 50 && i % 2) continue;
        snprintf(want, sizeof want, "ADDED o%d %d", i, i + 2);
        TM_NEXT(&s, w, want);
        if (i == 70) kctl_memstore_compact(s.ms, 72); /* all it has handed out: nothing lost */
    }
    TM_NEXT(&s, w, "AGAIN");
    KT_EQ_INT(tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"o0\"},\"data\":{\"x\":\"1\"}}", NULL), KCTL_OK);
    TM_NEXT(&s, w, "MODIFIED o0 102");
    TM_NEXT(&s, w, "AGAIN");
    s.t.vt->watch_close(s.t.self, w);
    /* a compaction one past what was handed out: GONE, though the next
       events were taken already */
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "102", &w, NULL), KCTL_OK);
    for (i = 0; i < 5; i++) {
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"late%d\"}}", i);
        KT_EQ_INT(tm_write(&s, s.t.vt->create, &tm_cm, doc, NULL), KCTL_OK);
    }
    TM_NEXT(&s, w, "ADDED late0 103");
    TM_NEXT(&s, w, "ADDED late1 104");
    kctl_memstore_compact(s.ms, 105);
    TM_NEXT(&s, w, "GONE");
    s.t.vt->watch_close(s.t.self, w);
    /* closed with events still held */
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "105", &w, NULL), KCTL_OK);
    TM_NEXT(&s, w, "ADDED late3 106");
    s.t.vt->watch_close(s.t.self, w);
    tm_close(&s); /* nothing left allocated */
}

/* A watch and a list in one namespace take its objects only, not those of
   namespaces that share its first bytes, are as long, or hold it. */
static void tm_namespace_exact(void) {
    static const char *const nss[] = { "pro", "prod", "prod2", "prodx", "xprod", "prox" };
    tm_store s;
    kctl_watch *w = NULL;
    kctl_list_result r;
    char doc[64];
    size_t i, k;
    if (!tm_open(&s, 256, 0)) return;
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "0", &w, NULL), KCTL_OK); /* tm_cm: in prod */
    for (i = 0; i < sizeof nss / sizeof nss[0]; i++) {
        kctl_resource res = tm_cm;
        res.ns = nss[i];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"in-%s\"}}", nss[i]);
        KT_EQ_INT(tm_write(&s, s.t.vt->create, &res, doc, NULL), KCTL_OK);
    }
    TM_NEXT(&s, w, "ADDED in-prod 2");
    TM_NEXT(&s, w, "AGAIN");
    s.t.vt->watch_close(s.t.self, w);
    memset(&r, 0, sizeof r);
    KT_EQ_INT(s.t.vt->list(s.t.self, &tm_cm, NULL, &r, NULL), KCTL_OK);
    KT_EQ_U64(r.items.count, 1);
    for (k = 0; k < r.items.count; k++) KT_EQ_STR(kctl_obj_name(r.items.items[k]), "in-prod");
    kctl_list_result_free(&r);
    tm_close(&s);
}

static void tm_apply_delete(void) {
    tm_store s;
    kctl_obj *o = NULL;
    const char *d1 = "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"v\":1}}";
    const char *d2 = "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"77\"},\"spec\":{\"v\":2}}";
    if (!tm_open(&s, 0, 0)) return;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, d1, strlen(d1), &o, NULL), KCTL_OK);
    KT_EQ_INT(kctl_obj_generation(o), 1);
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, d2, strlen(d2), &o, NULL), KCTL_OK);
    if (o) {
        KT_EQ_INT(kctl_obj_generation(o), 2); /* no precondition for the owner */
        KT_EQ_STR(kctl_obj_resource_version(o), "2");
        kctl_obj_unref(o);
    }
    KT_EQ_INT(kctl_memstore_delete(s.ms, &tm_cm, "a", NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_delete(s.ms, &tm_cm, "a", NULL), KCTL_ERR_NOT_FOUND);
    tm_close(&s);
}

/* The writer's one comparison: a write whose body equals the stored one
   is decided by its metadata alone (labels: a new version, the same
   generation); the same document reordered, spaced or with a repeated
   name whose last value is the stored one is no write; a body change
   bumps the generation; the stored status stays. */
static void tm_apply_unchanged_by_metadata(void) {
    tm_store s;
    kctl_obj *o = NULL;
    const char *d1 = "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\"}},\"spec\":{\"v\":1,\"w\":[1,{\"k\":2}]}}";
    const char *same = " { \"spec\" : {\"w\":[1,{\"k\":2}],\"v\":0,\"v\":1}, \"metadata\":{\"labels\":{\"x\":\"1\"},\"name\":\"a\"} } ";
    const char *relabel = "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"2\"}},\"spec\":{\"v\":1,\"w\":[1,{\"k\":2}]}}";
    const char *respec = "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"2\"}},\"spec\":{\"v\":1,\"w\":[1,{\"k\":3}]}}";
    const char *st = "{\"metadata\":{\"name\":\"a\"},\"status\":{\"ok\":true}}";
    if (!tm_open(&s, 0, 0)) return;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, d1, KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_revision(s.ms), 1);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, same, KCTL_NTS, &o, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_revision(s.ms), 1); /* no write */
    if (o) KT_EQ_STR(kctl_obj_resource_version(o), "1");
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, relabel, KCTL_NTS, &o, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_revision(s.ms), 2); /* the metadata changed */
    if (o) {
        KT_EQ_INT(kctl_obj_generation(o), 1);
        KT_EQ_STR(kctl_obj_label(o, "x"), "2");
    }
    kctl_obj_unref(o);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, respec, KCTL_NTS, &o, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_revision(s.ms), 3);
    if (o) KT_EQ_INT(kctl_obj_generation(o), 2);
    kctl_obj_unref(o);
    KT_EQ_INT(tm_write(&s, s.t.vt->update_status, &tm_cm, st, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_revision(s.ms), 4);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, respec, KCTL_NTS, &o, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_revision(s.ms), 4); /* the status sent by no one is the stored one: no write */
    if (o) KT_CHECK(tm_str_is(o, "spec.w[1].k", NULL) == false && tm_int(o, "spec.w[1].k") == 3);
    kctl_obj_unref(o);
    tm_close(&s);
}

/* An update parses the document it stores once: the object is built
   from the tokens its decision parsed, so the store's allocator sees one
   token array fewer per write than a parse for the decision and another
   for the object (counted on the store's own allocator). */
static void tm_apply_parses_once(void) {
    tm_store s;
    long before;
    int i;
    char doc[128];
    if (!tm_open(&s, 0, 0)) return;
    for (i = 0; i < 3; i++) {
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\"}},\"data\":{\"round\":\"%d\"}}", i);
        before = s.a.allocs;
        KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
        if (i) KT_CHECK(s.a.allocs - before <= 7); /* sent's, sc, the stored one's, the writer, the written one's, the object, the event */
    }
    KT_EQ_INT(kctl_memstore_revision(s.ms), 3);
    tm_close(&s);
}

/* Persistence: saved with a temporary file and a rename, loaded whole at
   create; a corrupt or truncated file is refused and left alone. */
static void tm_persistence(void) {
    char path[256], tmp[300];
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL, *again = NULL;
    kctl_transport t;
    kctl_obj *o = NULL;
    FILE *f;
    long size;
    char *bytes;
    const char *doc = "{\"metadata\":{\"name\":\"dev1\",\"namespace\":\"prod\"},\"spec\":{\"hostname\":\"edge-\\u00e9\"}}";
    snprintf(path, sizeof path, "%s/kctl-test-%ld.db", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    kt_remove_store(path);
    memset(&d, 0, sizeof d);
    d.path = path;
    d.save_on_write = true;
    KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK); /* no file yet: empty */
    if (!ms) return;
    KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, "{\"metadata\":{\"name\":\"dev2\"}}", 28, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_delete(ms, &tm_cm, "dev2", NULL), KCTL_OK);
    kctl_memstore_destroy(ms);
    /* a "reboot": the same state, the revision goes on */
    KT_EQ_INT(kctl_memstore_create(&d, &again), KCTL_OK);
    if (!again) return;
    KT_EQ_U64(kctl_memstore_revision(again), 3);
    t = kctl_memstore_transport(again);
    KT_EQ_INT(t.vt->get(t.self, &tm_cm, "dev1", &o, NULL), KCTL_OK);
    if (o) {
        KT_EQ_STR(kctl_obj_resource_version(o), "1");
        KT_CHECK(tm_str_is(o, "spec.hostname", "edge-\xc3\xa9"));
        kctl_obj_unref(o);
    }
    KT_EQ_INT(t.vt->get(t.self, &tm_cm, "dev2", &o, NULL), KCTL_ERR_NOT_FOUND);
    {
        kctl_watch *w = NULL; /* history did not survive: old versions are gone */
        KT_EQ_INT(t.vt->watch_open(t.self, &tm_cm, NULL, "1", &w, NULL), KCTL_ERR_GONE);
        if (w) t.vt->watch_close(t.self, w);
        KT_EQ_INT(t.vt->watch_open(t.self, &tm_cm, NULL, "3", &w, NULL), KCTL_OK); /* from now on is fine */
        if (w) t.vt->watch_close(t.self, w);
    }
    KT_EQ_INT(kctl_memstore_apply(again, &tm_cm, "{\"metadata\":{\"name\":\"dev3\"}}", 28, &o, NULL), KCTL_OK);
    if (o) {
        KT_EQ_STR(kctl_obj_resource_version(o), "4");
        kctl_obj_unref(o);
    }
    kctl_memstore_destroy(again);
    /* a half-written temporary file from a crash changes nothing */
    f = fopen(tmp, "w");
    if (f) { fputs("kctl-memstore 1 9", f); fclose(f); }
    again = NULL;
    KT_EQ_INT(kctl_memstore_create(&d, &again), KCTL_OK);
    KT_EQ_U64(kctl_memstore_revision(again), 4);
    kctl_memstore_destroy(again);
    remove(tmp);
    /* corrupt one byte, then truncate: refused, and the file is left as it was */
    f = fopen(path, "rb");
    KT_CHECK(f != NULL);
    if (!f) return;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    bytes = (char *)malloc((size_t)size);
    if (bytes && fread(bytes, 1, (size_t)size, f) == (size_t)size) {
        fclose(f);
        bytes[size / 2] ^= 0x20;
        f = fopen(path, "wb");
        fwrite(bytes, 1, (size_t)size, f);
        fclose(f);
        again = NULL;
        KT_EQ_INT(kctl_memstore_create(&d, &again), KCTL_ERR_PROTO);
        KT_CHECK(again == NULL);
        bytes[size / 2] ^= 0x20;
        f = fopen(path, "wb");
        fwrite(bytes, 1, (size_t)size - 7, f); /* cut short */
        fclose(f);
        KT_EQ_INT(kctl_memstore_create(&d, &again), KCTL_ERR_PROTO);
        f = fopen(path, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            KT_EQ_INT(ftell(f), size - 7); /* untouched */
            fclose(f);
        }
    } else if (f) {
        fclose(f);
    }
    free(bytes);
    kt_remove_store(path);
    d.path = NULL; /* no path: save is refused */
    KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK);
    KT_EQ_INT(kctl_memstore_save(ms), KCTL_ERR_INVALID_ARG);
    kctl_memstore_destroy(ms);
}

/* Bookmarks by time, on the store's (virtual) clock. */
static void tm_bookmark_time(void) {
    kctl_vclock vc;
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    kctl_watch *w = NULL;
    kctl_event ev;
    kctl_vclock_init(&vc, 0);
    memset(&d, 0, sizeof d);
    d.clock = kctl_vclock_clock(&vc);
    d.bookmark_interval_ns = KCTL_SEC(10);
    KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK);
    if (!ms) return;
    t = kctl_memstore_transport(ms);
    kctl_memstore_apply(ms, &tm_cm, "{\"metadata\":{\"name\":\"a\"}}", 25, NULL, NULL);
    KT_EQ_INT(t.vt->watch_open(t.self, &tm_cm, NULL, "1", &w, NULL), KCTL_OK);
    KT_EQ_INT(t.vt->watch_next(t.self, w, 0, &ev, NULL), KCTL_ERR_AGAIN);
    kctl_vclock_advance(&vc, KCTL_SEC(9));
    KT_EQ_INT(t.vt->watch_next(t.self, w, 0, &ev, NULL), KCTL_ERR_AGAIN);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    KT_EQ_INT(t.vt->watch_next(t.self, w, 0, &ev, NULL), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_BOOKMARK);
    KT_EQ_STR(ev.resource_version, "1");
    KT_CHECK(ev.obj == NULL);
    KT_EQ_INT(t.vt->watch_next(t.self, w, 0, &ev, NULL), KCTL_ERR_AGAIN); /* the next one in 10 s again */
    t.vt->watch_close(t.self, w);
    kctl_memstore_destroy(ms);
    kctl_vclock_deinit(&vc);
}

#ifndef KCTL_NO_THREADS
#include <pthread.h>
typedef struct tm_waiter {
    kctl_transport t;
    kctl_watch *w;
    int rc, type;
} tm_waiter;

static void *tm_wait_event(void *arg) {
    tm_waiter *x = (tm_waiter *)arg;
    kctl_event ev;
    x->rc = x->t.vt->watch_next(x->t.self, x->w, KCTL_SEC(30), &ev, NULL); /* woken long before */
    x->type = ev.type;
    kctl_event_clear(&ev);
    return NULL;
}
#endif

/* A watcher blocked in watch_next is woken by a write; latency slows requests. */
static void tm_watch_blocking_and_latency(void) {
#ifndef KCTL_NO_THREADS
    tm_store s;
    tm_waiter x;
    pthread_t th;
    kctl_obj *o = NULL;
    uint64_t t0;
    if (!tm_open(&s, 0, 0)) return;
    memset(&x, 0, sizeof x);
    x.t = s.t;
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &tm_cm, NULL, "0", &x.w, NULL), KCTL_OK);
    pthread_create(&th, NULL, tm_wait_event, &x);
    tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"a\"}}", NULL);
    pthread_join(th, NULL);
    KT_EQ_INT(x.rc, KCTL_OK);
    KT_EQ_INT(x.type, KCTL_EVENT_ADDED);
    s.t.vt->watch_close(s.t.self, x.w);
    kctl_memstore_set_latency(s.ms, KCTL_MS(2));
    t0 = kctl_clock_now(NULL);
    KT_EQ_INT(s.t.vt->get(s.t.self, &tm_cm, "a", &o, NULL), KCTL_OK);
    KT_CHECK(kctl_clock_now(NULL) - t0 >= KCTL_MS(2)); /* a lower bound: sleeps never end early */
    kctl_obj_unref(o);
    tm_close(&s);
#else
    KT_SKIP();
#endif
}

/* Names that would make keys ambiguous are refused; a write that changes
   nothing is no write; leaving a selection is reported with the state that
   matched; long keys page. (A failed save_on_write: tests/test_persist.c.) */
static void tm_review_fixes(void) {
    tm_store s;
    kctl_resource cluster = { "", "v1", "nodes", NULL }, spaced = { "example.com", "v1", "my things", NULL };
    kctl_watch *w = NULL;
    kctl_list_opts lo;
    kctl_event ev;
    kctl_obj *o = NULL;
    if (!tm_open(&s, 0, 0)) return;
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &cluster, "{\"metadata\":{\"name\":\"a/b\"}}", NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(tm_write(&s, s.t.vt->create, &spaced, "{\"metadata\":{\"name\":\"a\"}}", NULL), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(s.t.vt->get(s.t.self, &tm_cm, "a|b", &o, NULL), KCTL_ERR_NOT_FOUND); /* no object can have that name: 404 */
    /* the same status twice: one write */
    tm_write(&s, s.t.vt->create, &tm_cm, "{\"metadata\":{\"name\":\"x\",\"labels\":{\"app\":\"web\"}}}", NULL);
    KT_EQ_INT(tm_write(&s, s.t.vt->update_status, &tm_cm, "{\"metadata\":{\"name\":\"x\"},\"status\":{\"ok\":true}}", NULL), KCTL_OK);
    KT_EQ_INT(tm_write(&s, s.t.vt->update_status, &tm_cm, "{\"metadata\":{\"name\":\"x\"},\"status\":{\"ok\":true}}", &o), KCTL_OK);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 2);
    if (o) { KT_EQ_STR(kctl_obj_resource_version(o), "2"); kctl_obj_unref(o); }
    /* leaving a label selection: DELETED with the object as it last matched */
    memset(&lo, 0, sizeof lo);
    lo.label_selector = "app=web";
    KT_EQ_INT(KT_NEED_SELECTORS(s.t.vt->watch_open(s.t.self, &tm_cm, &lo, "2", &w, NULL)), KCTL_OK);
    tm_write(&s, s.t.vt->update, &tm_cm, "{\"metadata\":{\"name\":\"x\",\"labels\":{\"app\":\"db\"}}}", NULL);
    KT_EQ_INT(s.t.vt->watch_next(s.t.self, w, 0, &ev, NULL), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_DELETED);
    KT_EQ_STR(ev.obj ? kctl_obj_label(ev.obj, "app") : NULL, "web");
    KT_EQ_STR(ev.resource_version, "3");
    kctl_event_clear(&ev);
    s.t.vt->watch_close(s.t.self, w);
    tm_close(&s);
}

/* ---- the stored object built from the tokens the write recorded */

static uint64_t tm_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A string body (no quotes) that stays valid as a label value, or (any)
   with escapes, UTF-8 and characters that need quoting. */
static void tm_rstr(char **p, uint64_t *x, bool any) {
    static const char *const plain[] = { "a", "b-1", "x.y", "Z_9", "v" };
    static const char *const odd[] = { "\\\"q\\\"", "\\\\", "\\u00e9t\\u00e9", "\xc3\xa9", "tab\\tnl\\n", "\\/", "\\ud83d\\ude00", "" };
    uint64_t r = tm_rand(x);
    if (any && r % 3 == 0) *p += sprintf(*p, "%s%s", odd[(r >> 8) % 8], plain[(r >> 16) % 5]);
    else *p += sprintf(*p, "%s%llu", plain[(r >> 8) % 5], (unsigned long long)(r >> 20) % 50);
}

/* Between tokens: nothing, or some whitespace. */
static void tm_rws(char **p, uint64_t *x) {
    static const char *const ws[] = { "", "", "", " ", "\n\t ", "\r\n" };
    *p += sprintf(*p, "%s", ws[tm_rand(x) % 6]);
}

/* A random JSON value of at most depth levels: objects with repeated
   names, arrays, strings with escapes, numbers of every form, literals. */
static void tm_rvalue(char **p, uint64_t *x, int depth) {
    static const char *const nums[] = { "0", "-1", "12.5", "1e3", "-0.25E-2", "123456789012345678901", "7" };
    static const char *const lits[] = { "true", "false", "null" };
    uint64_t r = tm_rand(x);
    int k, n;
    switch (depth > 0 ? r % 6 : 2 + r % 4) {
    case 0:
        n = (int)((r >> 8) % 4);
        *p += sprintf(*p, "{");
        for (k = 0; k < n; k++) {
            tm_rws(p, x);
            *p += sprintf(*p, "%s\"k%d\"", k ? "," : "", (int)(tm_rand(x) % 3)); /* repeats: the last counts */
            tm_rws(p, x);
            *p += sprintf(*p, ":");
            tm_rvalue(p, x, depth - 1);
        }
        *p += sprintf(*p, "}");
        break;
    case 1:
        n = (int)((r >> 8) % 4);
        *p += sprintf(*p, "[");
        for (k = 0; k < n; k++) {
            if (k) *p += sprintf(*p, ",");
            tm_rws(p, x);
            tm_rvalue(p, x, depth - 1);
        }
        *p += sprintf(*p, "]");
        break;
    case 2:
        *p += sprintf(*p, "\"");
        tm_rstr(p, x, true);
        *p += sprintf(*p, "\"");
        break;
    case 3: *p += sprintf(*p, "%s", nums[(r >> 8) % 7]); break;
    default: *p += sprintf(*p, "%s", lits[(r >> 8) % 3]); break;
    }
}

/* A ConfigMap-like document for object name: labels, annotations,
   finalizers, owner references, data and status, in random order and
   spacing; kind and apiVersion sometimes. */
static void tm_rdoc(char *doc, uint64_t *x, int name, bool finalizers) {
    char *p = doc;
    int k, n;
    p += sprintf(p, "{");
    tm_rws(&p, x);
    if (tm_rand(x) % 2) p += sprintf(p, "\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",");
    p += sprintf(p, "\"metadata\":{\"name\":\"o%d\"", name);
    n = (int)(tm_rand(x) % 4);
    if (n) {
        p += sprintf(p, ",\"labels\":{");
        for (k = 0; k < n; k++) {
            p += sprintf(p, "%s\"l%d\":", k ? "," : "", (int)(tm_rand(x) % 3));
            tm_rws(&p, x);
            p += sprintf(p, "\"");
            tm_rstr(&p, x, false);
            p += sprintf(p, "\"");
        }
        p += sprintf(p, "}");
    }
    n = (int)(tm_rand(x) % 4);
    if (n) {
        p += sprintf(p, ",\"annotations\":{");
        for (k = 0; k < n; k++) {
            p += sprintf(p, "%s\"a%d\" : \"", k ? "," : "", (int)(tm_rand(x) % 3));
            tm_rstr(&p, x, true);
            p += sprintf(p, "\"");
        }
        p += sprintf(p, "}");
    }
    if (finalizers) p += sprintf(p, ",\"finalizers\":[\"x.io/f%d\"%s]", (int)(tm_rand(x) % 2), tm_rand(x) % 2 ? ",\"y.io/g\"" : "");
    if (tm_rand(x) % 3 == 0)
        p += sprintf(p, ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"p%d\",\"uid\":\"u-1\",\"controller\":%s}]",
                     (int)(tm_rand(x) % 3), tm_rand(x) % 2 ? "true" : "false");
    if (tm_rand(x) % 4 == 0) p += sprintf(p, ",\"resourceVersion\":\"\"");
    p += sprintf(p, "}");
    tm_rws(&p, x);
    p += sprintf(p, ",\"data\":");
    tm_rvalue(&p, x, 3);
    if (tm_rand(x) % 3 == 0) {
        p += sprintf(p, ",\"status\":");
        tm_rvalue(&p, x, 2);
    }
    if (tm_rand(x) % 4 == 0) { /* a repeated name: the last counts */
        p += sprintf(p, ",\"data\":");
        tm_rvalue(&p, x, 2);
    }
    tm_rws(&p, x);
    p += sprintf(p, "}");
}

/* o (built by the store from the tokens its write recorded) against the
   object kctl_obj_parse makes of o's own document: every accessor. */
static void tm_same_as_parsed(const kctl_obj *o) {
    kctl_obj *ref = NULL;
    size_t len, rlen, i;
    const char *doc = kctl_obj_json(o, &len);
    const char *k1, *v1, *k2, *v2;
    KT_EQ_INT(kctl_obj_parse(doc, len, NULL, &ref), KCTL_OK);
    if (!ref) return;
    KT_CHECK(strcmp(kctl_obj_json(ref, &rlen), doc) == 0 && rlen == len);
    KT_EQ_STR(kctl_obj_key(o), kctl_obj_key(ref));
    KT_EQ_STR(kctl_obj_namespace(o), kctl_obj_namespace(ref));
    KT_EQ_STR(kctl_obj_name(o), kctl_obj_name(ref));
    KT_EQ_STR(kctl_obj_uid(o), kctl_obj_uid(ref));
    KT_EQ_STR(kctl_obj_resource_version(o), kctl_obj_resource_version(ref));
    KT_CHECK(kctl_obj_generation(o) == kctl_obj_generation(ref));
    KT_CHECK((kctl_obj_deletion_timestamp(o) == NULL) == (kctl_obj_deletion_timestamp(ref) == NULL));
    if (kctl_obj_deletion_timestamp(o) && kctl_obj_deletion_timestamp(ref))
        KT_EQ_STR(kctl_obj_deletion_timestamp(o), kctl_obj_deletion_timestamp(ref));
    KT_EQ_U64(kctl_obj_label_count(o), kctl_obj_label_count(ref));
    for (i = 0; i < kctl_obj_label_count(o); i++) {
        KT_CHECK(kctl_obj_label_at(o, i, &k1, &v1) && kctl_obj_label_at(ref, i, &k2, &v2));
        KT_EQ_STR(k1, k2);
        KT_EQ_STR(v1, v2);
        KT_EQ_STR(kctl_obj_label(o, k1), v2);
    }
    KT_EQ_U64(kctl_obj_annotation_count(o), kctl_obj_annotation_count(ref));
    for (i = 0; i < kctl_obj_annotation_count(o); i++) {
        KT_CHECK(kctl_obj_annotation_at(o, i, &k1, &v1) && kctl_obj_annotation_at(ref, i, &k2, &v2));
        KT_EQ_STR(k1, k2);
        KT_EQ_STR(v1, v2);
    }
    KT_EQ_U64(kctl_obj_finalizer_count(o), kctl_obj_finalizer_count(ref));
    for (i = 0; i < kctl_obj_finalizer_count(o); i++) KT_EQ_STR(kctl_obj_finalizer(o, i), kctl_obj_finalizer(ref, i));
    KT_EQ_U64(kctl_obj_owner_count(o), kctl_obj_owner_count(ref));
    for (i = 0; i < kctl_obj_owner_count(o); i++) {
        const kctl_owner_ref *a = kctl_obj_owner(o, i), *b = kctl_obj_owner(ref, i);
        KT_EQ_STR(a->api_version, b->api_version);
        KT_EQ_STR(a->kind, b->kind);
        KT_EQ_STR(a->name, b->name);
        KT_EQ_STR(a->uid, b->uid);
        KT_CHECK(a->controller == b->controller);
    }
    kctl_obj_unref(ref);
}

/* Differential: the store builds each object it keeps from the tokens
   its write recorded while composing the document, not from a parse of
   it (one parse less a write). Random documents (escapes, UTF-8, repeated
   names, whitespace, every kind of value, labels, annotations,
   finalizers, owners, status) through apply, update_status, a delete
   held by finalizers and the apply that ends it: every object stored is
   the one a parse of its document makes. Debug builds also compare the
   recorded tokens with the parser's, token by token, on every write. */
static void tm_recorded_tokens_match_parse(void) {
    tm_store s;
    uint64_t x = UINT64_C(0x2545F4914F6CDD1D);
    char doc[8192];
    int i, ok = 0;
    if (!tm_open(&s, 0, 0)) return;
    for (i = 0; i < 3000; i++) {
        kctl_obj *o = NULL;
        int name = (int)(tm_rand(&x) % 40), rc, op = (int)(tm_rand(&x) % 10);
        char nm[16];
        snprintf(nm, sizeof nm, "o%d", name);
        tm_rdoc(doc, &x, name, op < 3);
        if (op == 9) {
            rc = kctl_memstore_delete(s.ms, &tm_cm, nm, NULL);
            KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOT_FOUND);
            if (kctl_memstore_get(s.ms, &tm_cm, nm, &o, NULL) == KCTL_OK) tm_same_as_parsed(o); /* held by its finalizers */
        } else if (op == 8) {
            rc = tm_write(&s, s.t.vt->update_status, &tm_cm, doc, &o);
            KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOT_FOUND || rc == KCTL_ERR_INVALID_ARG);
            if (o) tm_same_as_parsed(o);
        } else {
            rc = kctl_memstore_apply(s.ms, &tm_cm, doc, strlen(doc), &o, NULL);
            if (rc != KCTL_OK && rc != KCTL_ERR_INVALID_ARG) kt_fail(__FILE__, __LINE__, "%s: %s", kctl_strerror(rc), doc);
            if (o) {
                tm_same_as_parsed(o);
                ok++;
            }
        }
        kctl_obj_unref(o);
        o = NULL;
    }
    KT_CHECK(ok > 1000); /* most writes were made */
    tm_close(&s);
}

/* The oracle for tm_kept_parts_match_parse: the stored object under its
   name, as the store's lookup answers it. */
typedef struct tm_oracle {
    const kctl_obj *cur;
} tm_oracle;

static const kctl_obj *tm_oracle_lookup(const char *ns, const char *name, void *user_data) {
    const tm_oracle *o = (const tm_oracle *)user_data;
    return o->cur && strcmp(ns, kctl_obj_namespace(o->cur)) == 0 && strcmp(name, kctl_obj_name(o->cur)) == 0 ? o->cur : NULL;
}

/* A value from a small set in which many differ only in how they are
   written (member order, escapes, 1 and 1.0, a repeated name), so bodies
   often come out equal to the stored one with other text. */
static const char *tm_rsmall(uint64_t *x) {
    static const char *const v[] = { "{\"a\":\"x\",\"b\":1}", "{\"b\":1.0,\"a\":\"x\"}", "{\"a\":\"\\u0078\",\"b\":10e-1}",
                                     "{\"a\":\"y\",\"a\":\"x\",\"b\":1}", "{\"a\":\"y\",\"b\":1}", "[1,2]", "[2,1]", "[1.0,2]",
                                     "\"s\"", "\"\\u0073\"", "null", "1", "1.0", "{}", "{\"a\":{\"c\":[true,false]}}",
                                     "{\"a\":{\"c\":[true,false]},\"a\":{\"c\":[true,false]}}" };
    return v[tm_rand(x) % 16];
}

/* A document for object o<name> whose body, status and finalizers come
   from small sets. */
static void tm_rdoc_small(char *doc, uint64_t *x, int name) {
    char *p = doc;
    uint64_t r = tm_rand(x);
    p += sprintf(p, "{%s\"metadata\":{\"name\":\"o%d\"", r % 2 ? "\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\"," : "", name);
    if ((r >> 1) % 3 == 0) p += sprintf(p, ",\"labels\":{\"l\":\"%d\"}", (int)((r >> 3) % 2));
    switch ((r >> 4) % 5) {
    case 0: p += sprintf(p, ",\"finalizers\":[\"x.io/f\"]"); break;
    case 1: p += sprintf(p, ",\"finalizers\":[\"x.io/f\",\"y.io/g\"]"); break;
    case 2: p += sprintf(p, ",\"finalizers\":[]"); break;
    default: break; /* none sent: an apply keeps the stored ones */
    }
    p += sprintf(p, "},\"data\":%s", tm_rsmall(x));
    if ((r >> 8) % 3 == 0) p += sprintf(p, ",\"spec\":%s", tm_rsmall(x));
    if ((r >> 10) % 3 == 0) p += sprintf(p, ",\"status\":%s", tm_rsmall(x));
    if ((r >> 12) % 6 == 0) p += sprintf(p, ",\"data\":%s", tm_rsmall(x)); /* repeated: the last counts */
    sprintf(p, "}");
}

/* The creationTimestamp of a store's object, or "" (in buf). */
static const char *tm_created(const kctl_obj *o, char *buf, size_t cap) {
    kctl_json j;
    kctl_json_tok t[128];
    size_t len;
    const char *text = kctl_obj_json(o, &len);
    buf[0] = '\0';
    if (kctl_json_parse(text, len, t, 128, NULL, &j) != KCTL_OK ||
        kctl_json_string(&j, kctl_json_path(&j, 0, "metadata.creationTimestamp"), buf, cap, NULL) != KCTL_OK)
        buf[0] = '\0';
    return buf;
}

/* Whether s is a time as an API server writes it: 2006-01-02T15:04:05Z. */
static bool tm_is_time(const char *s) {
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    size_t i;
    for (i = 0; shape[i]; i++)
        if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i]) return false;
    return s[i] == '\0';
}

/* A create's time is read only when the object is made (the store reads
   the clock when the lookup finds nothing): the owner's apply that makes
   an object, a create, a generated name, and a name made again after a
   delete all get one; the apply that replaces an object keeps its own.
   With the default allocator (the document read before the lock) and
   with the caller's. */
static void tm_create_time_when_made(void) {
    int k;
    for (k = 0; k < 2; k++) {
        kctl_memstore_desc d;
        kctl_memstore *ms = NULL;
        kctl_transport t;
        kctl_obj *o = NULL, *u = NULL;
        kt_alloc a;
        char ts[40], ts2[40];
        const char *doc = "{\"metadata\":{\"name\":\"a\"},\"data\":{\"n\":\"1\"}}";
        kt_alloc_init(&a);
        memset(&d, 0, sizeof d);
        if (k) d.allocator = kt_allocator(&a);
        KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK);
        if (!ms) return;
        t = kctl_memstore_transport(ms);
        KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), &o, NULL), KCTL_OK);
        if (o) KT_CHECK(tm_is_time(tm_created(o, ts, sizeof ts)));
        doc = "{\"metadata\":{\"name\":\"a\"},\"data\":{\"n\":\"2\"}}";
        KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), &u, NULL), KCTL_OK);
        if (o && u) {
            KT_EQ_STR(kctl_obj_resource_version(u), "2");
            KT_EQ_STR(tm_created(u, ts2, sizeof ts2), ts);
        }
        kctl_obj_unref(o);
        kctl_obj_unref(u);
        o = u = NULL;
        doc = "{\"metadata\":{\"name\":\"b\"}}";
        KT_EQ_INT(t.vt->create(t.self, &tm_cm, doc, strlen(doc), &o, NULL), KCTL_OK);
        if (o) KT_CHECK(tm_is_time(tm_created(o, ts, sizeof ts)));
        kctl_obj_unref(o);
        o = NULL;
        doc = "{\"metadata\":{\"generateName\":\"g-\"}}";
        KT_EQ_INT(KT_NEED_GENERATE_NAME(t.vt->create(t.self, &tm_cm, doc, strlen(doc), &o, NULL)), KCTL_OK);
        if (o) KT_CHECK(tm_is_time(tm_created(o, ts, sizeof ts)));
        kctl_obj_unref(o);
        o = NULL;
        KT_EQ_INT(kctl_memstore_delete(ms, &tm_cm, "a", NULL), KCTL_OK);
        doc = "{\"metadata\":{\"name\":\"a\"},\"data\":{\"n\":\"3\"}}";
        KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), &o, NULL), KCTL_OK);
        if (o) KT_CHECK(tm_is_time(tm_created(o, ts, sizeof ts)));
        kctl_obj_unref(o);
        kctl_memstore_destroy(ms);
        KT_EQ_INT(a.live, 0);
    }
}

/* An apply of the stored body in other text changes nothing, one of
   another body writes: a string's escapes anywhere in it (each length
   from 0 to 33, each byte escaped in turn, a two-byte character raw and
   escaped, across an 8-byte boundary), and a string that differs only in
   its last byte or in a NUL more. What the store keeps of a body (its
   fingerprint) must agree with the parse on every one. */
static void tm_fingerprint_escapes(void) {
    static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    int k;
    for (k = 0; k < 2; k++) {
        kctl_memstore_desc d;
        kctl_memstore *ms = NULL;
        kt_alloc a;
        char doc[512], s[64], e[256];
        size_t len, i, c;
        uint64_t rev;
        kt_alloc_init(&a);
        memset(&d, 0, sizeof d);
        if (k) d.allocator = kt_allocator(&a);
        KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK);
        if (!ms) return;
        for (len = 0; len <= 33; len++) {
            memcpy(s, abc, len);
            s[len] = '\0';
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"f\"},\"data\":{\"k\":\"%s\"}}", s);
            KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
            rev = kctl_memstore_revision(ms);
            for (i = 0; i < len; i++) { /* byte i as \u00XX */
                char *p = e;
                for (c = 0; c < len; c++) p += c == i ? sprintf(p, "\\u%04x", (unsigned)s[c]) : sprintf(p, "%c", s[c]);
                snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"f\"},\"data\":{\"\\u006b\":\"%s\"}}", e);
                KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
                KT_EQ_INT(kctl_memstore_revision(ms), rev);
            }
            if (len) { /* the last byte changed, then a NUL more: each a write */
                snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"f\"},\"data\":{\"k\":\"%.*s_\"}}", (int)len - 1, s);
                KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
                KT_EQ_INT(kctl_memstore_revision(ms), rev + 1);
                snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"f\"},\"data\":{\"k\":\"%.*s_\\u0000\"}}", (int)len - 1, s);
                KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
                KT_EQ_INT(kctl_memstore_revision(ms), rev + 2);
            }
        }
        /* a two-byte character across the end of the first word, raw and escaped */
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"f\"},\"data\":{\"k\":\"abcdefg\xc3\xa9xyz\"}}");
        KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
        rev = kctl_memstore_revision(ms);
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"f\"},\"data\":{\"k\":\"abcdefg\\u00e9xyz\"}}");
        KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
        KT_EQ_INT(kctl_memstore_revision(ms), rev);
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"f\"},\"data\":{\"k\":\"abcdefg\\u00e8xyz\"}}");
        KT_EQ_INT(kctl_memstore_apply(ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
        KT_EQ_INT(kctl_memstore_revision(ms), rev + 1);
        kctl_memstore_destroy(ms);
        KT_EQ_INT(a.live, 0);
    }
}

/* Differential: an update of a stored object takes what the rules read of
   the stored document (creationTimestamp, status, finalizers, whether
   the body changed: a fingerprint) from what the store kept at the write
   that stored it, instead of parsing it. Random writes (apply, update,
   update_status, merge patches, deletes held by finalizers) to a few
   objects, bodies often equal to the stored one in other text: every
   answer is the one kctl_apisrv_decide gives for the same request
   against the same stored object (it parses it): the same result, the
   same document, the same outcome (a write, none, or a removal). */
static void tm_kept_parts_match_parse(void) {
    tm_store s;
    uint64_t x = UINT64_C(0x9E3779B97F4A7C15);
    char doc[2048], nm[16], rvs[32];
    int i, writes = 0, unchanged = 0, removed = 0;
    if (!tm_open(&s, 0, 0)) return;
    for (i = 0; i < 4000; i++) {
        kctl_obj *cur = NULL, *got = NULL;
        kctl_apisrv_req req;
        kctl_apisrv_decision d;
        tm_oracle orc;
        kctl_jw want;
        int name = (int)(tm_rand(&x) % 6), op = (int)(tm_rand(&x) % 20), rc, want_rc;
        uint64_t rev = kctl_memstore_revision(s.ms);
        snprintf(nm, sizeof nm, "o%d", name);
        tm_rdoc_small(doc, &x, name);
        if (op == 19) { /* a delete: marks an object with finalizers, removes one without */
            rc = kctl_memstore_delete(s.ms, &tm_cm, nm, NULL);
            KT_CHECK(rc == KCTL_OK || rc == KCTL_ERR_NOT_FOUND);
            continue;
        }
        if (kctl_memstore_get(s.ms, &tm_cm, nm, &cur, NULL) != KCTL_OK) { /* a create: nothing stored to read */
            KT_EQ_INT(kctl_memstore_apply(s.ms, &tm_cm, doc, strlen(doc), NULL, NULL), KCTL_OK);
            continue;
        }
        memset(&req, 0, sizeof req);
        req.res = &tm_cm;
        req.json = doc;
        req.len = strlen(doc);
        if (op < 12) {
            req.verb = KCTL_VERB_CREATE;
            req.apply = true;
        } else if (op < 15) {
            req.verb = KCTL_VERB_UPDATE;
        } else if (op < 17) {
            req.verb = KCTL_VERB_UPDATE_STATUS;
        } else { /* a merge patch of the body (op 17) or the status (18) */
            snprintf(doc, sizeof doc, "{\"%s\":%s}", op == 17 ? "data" : "status", tm_rsmall(&x));
            req.verb = KCTL_VERB_PATCH;
            req.name = nm;
            req.len = strlen(doc);
            req.patch_flags = op == 18 ? KCTL_PATCH_STATUS : 0;
        }
        orc.cur = cur;
        req.lookup = tm_oracle_lookup;
        req.lookup_user_data = &orc;
        snprintf(rvs, sizeof rvs, "%llu", (unsigned long long)(rev + 1));
        req.rv = rvs;
        req.uid = "unused";
        req.now = "2000-01-01T00:00:00Z";
        kctl_jw_init_growable(&want, NULL);
        want_rc = kctl_apisrv_decide(&req, &want, &d, NULL);
        if (req.verb == KCTL_VERB_CREATE) rc = kctl_memstore_apply(s.ms, &tm_cm, doc, req.len, &got, NULL);
        else if (req.verb == KCTL_VERB_UPDATE) rc = tm_write(&s, s.t.vt->update, &tm_cm, doc, &got);
        else if (req.verb == KCTL_VERB_UPDATE_STATUS) rc = tm_write(&s, s.t.vt->update_status, &tm_cm, doc, &got);
        else rc = s.t.vt->patch(s.t.self, &tm_cm, nm, doc, req.len, req.patch_flags, &got, NULL);
        if (rc != want_rc) kt_fail(__FILE__, __LINE__, "op %d: %s, the rules say %s: %s", op, kctl_strerror(rc), kctl_strerror(want_rc), doc);
        if (rc == KCTL_OK && d.outcome == KCTL_APISRV_WRITE) {
            size_t n;
            const char *stored = got ? kctl_obj_json(got, &n) : "";
            KT_EQ_U64(kctl_memstore_revision(s.ms), rev + 1);
            if (!want.buf || strcmp(stored, want.buf) != 0)
                kt_fail(__FILE__, __LINE__, "op %d: stored %s, the rules wrote %s", op, stored, want.buf ? want.buf : "");
            writes++;
        } else if (rc == KCTL_OK && d.outcome == KCTL_APISRV_UNCHANGED) {
            KT_EQ_U64(kctl_memstore_revision(s.ms), rev);
            KT_CHECK(got == cur);
            unchanged++;
        } else if (rc == KCTL_OK) { /* the last finalizer went */
            kctl_obj *gone = NULL;
            KT_EQ_INT(kctl_memstore_get(s.ms, &tm_cm, nm, &gone, NULL), KCTL_ERR_NOT_FOUND);
            removed++;
        }
        kctl_jw_free(&want);
        kctl_obj_unref(got);
        kctl_obj_unref(cur);
    }
    KT_CHECK(writes > 500 && unchanged > 200 && removed > 10); /* every outcome, many times */
    tm_close(&s);
}

/* The store reads a write's resource each time, even through the same
   kctl_resource changed in place between writes (it keeps the last
   write's storage prefix: kctl.h, kctl__ms_rid_of): another namespace,
   another resource or group, or one it refuses. */
static void tm_resource_read_each_write(void) {
    tm_store s;
    char ns[16], resource[16], group[16];
    kctl_resource r;
    kctl_obj *o = NULL;
    kctl_api_status st;
    if (!tm_open(&s, 64, 0)) return;
    strcpy(ns, "one");
    strcpy(resource, "configmaps");
    strcpy(group, "");
    r.group = group;
    r.version = "v1";
    r.resource = resource;
    r.ns = ns;
    KT_EQ_INT(kctl_memstore_apply(s.ms, &r, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"1\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    strcpy(ns, "two"); /* the same pointers: another namespace */
    KT_EQ_INT(kctl_memstore_apply(s.ms, &r, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"2\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    strcpy(resource, "secrets");
    KT_EQ_INT(kctl_memstore_apply(s.ms, &r, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"3\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    strcpy(group, "apps");
    KT_EQ_INT(kctl_memstore_apply(s.ms, &r, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"k\":\"4\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    strcpy(ns, "t/o"); /* refused, though the rest is the last write's */
    memset(&st, 0, sizeof st);
    KT_EQ_INT(kctl_memstore_apply(s.ms, &r, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, &st), KCTL_ERR_INVALID_ARG);
    kctl_api_status_clear(&st);
    strcpy(ns, "two");
    strcpy(group, "");
    strcpy(resource, "configmaps");
    KT_EQ_INT(kctl_memstore_get(s.ms, &r, "a", &o, NULL), KCTL_OK);
    if (o) KT_CHECK(tm_str_is(o, "data.k", "2") && strcmp(kctl_obj_namespace(o), "two") == 0);
    kctl_obj_unref(o);
    strcpy(ns, "one");
    KT_EQ_INT(kctl_memstore_get(s.ms, &r, "a", &o, NULL), KCTL_OK);
    if (o) KT_CHECK(tm_str_is(o, "data.k", "1"));
    kctl_obj_unref(o);
    strcpy(ns, "two");
    strcpy(resource, "secrets");
    KT_EQ_INT(kctl_memstore_get(s.ms, &r, "a", &o, NULL), KCTL_OK);
    if (o) KT_CHECK(tm_str_is(o, "data.k", "3"));
    kctl_obj_unref(o);
    strcpy(group, "apps");
    KT_EQ_INT(kctl_memstore_get(s.ms, &r, "a", &o, NULL), KCTL_OK);
    if (o) KT_CHECK(tm_str_is(o, "data.k", "4"));
    kctl_obj_unref(o);
    KT_EQ_U64(kctl_memstore_revision(s.ms), 4);
    tm_close(&s);
}

/* The history holds each object once: an ADDED or MODIFIED event borrows
   its object from the key's next event or from the store, and a dropped
   event lets go of its previous state only. Random writes, updates and
   deletes of four keys into a history of four, read by two watchers that
   fall up to three writes behind (one with a selector, so objects leave
   it): every event carries the state written at its revision (a deletion,
   and a leaving, the state before). Run on the test's allocator (freed
   under the lock) and on malloc (freed after it); ASan sees any object
   freed while an event still names it. With the history compacted and
   every key deleted, the allocations are back to where they were before
   the first of them: no object outlives its last holder. */
typedef struct tm_hist_rec {
    int type, key, x, prev_x, in, prev_in; /* in: the label matches app=a */
} tm_hist_rec;

static void tm_hist_check(kctl_watch *w, tm_store *s, const tm_hist_rec *recs, bool sel, uint64_t *pos) {
    kctl_event ev;
    int rc;
    while ((rc = s->t.vt->watch_next(s->t.self, w, 0, &ev, NULL)) == KCTL_OK) {
        uint64_t rv = strtoull(ev.resource_version, NULL, 10), orv = 0;
        const tm_hist_rec *r;
        char name[16];
        KT_CHECK(sel ? rv > *pos && rv < 200 : rv == *pos + 1); /* the plain watcher: every revision, in order */
        if (rv <= *pos || rv >= 200) {
            kctl_event_clear(&ev);
            break;
        }
        r = &recs[rv];
        *pos = rv;
        snprintf(name, sizeof name, "k%d", r->key);
        KT_EQ_STR(kctl_obj_name(ev.obj), name);
        KT_CHECK(kctl_obj_resource_version_u64(ev.obj, &orv) && orv == rv);
        if (ev.type == KCTL_EVENT_DELETED) { /* a deletion, or (with the selector) a leaving: the state before */
            KT_CHECK(r->type == KCTL_EVENT_DELETED || (sel && r->prev_in && !r->in));
            KT_EQ_INT((int)tm_int(ev.obj, "data.x"), r->prev_x);
        } else {
            KT_CHECK(r->type != KCTL_EVENT_DELETED && (!sel || r->in));
            KT_EQ_INT((int)tm_int(ev.obj, "data.x"), r->x);
            KT_EQ_INT(ev.type, r->type == KCTL_EVENT_ADDED || (sel && !r->prev_in) ? KCTL_EVENT_ADDED : KCTL_EVENT_MODIFIED);
        }
        kctl_event_clear(&ev);
    }
    KT_EQ_INT(rc, KCTL_ERR_AGAIN);
}

static void tm_history_borrows_objects_run(bool on_malloc) {
    static const kctl_resource cm = { "", "v1", "configmaps", "prod" };
    tm_store s;
    tm_hist_rec recs[200];
    kctl_watch *w[2] = { NULL, NULL };
    kctl_list_opts lo;
    uint64_t pos[2] = { 1, 1 }, seed = on_malloc ? 7 : 3;
    int x[4] = { 0, 0, 0, 0 }, in[4] = { 0, 0, 0, 0 }, i, k, lag = 0, next = 1;
    long live0 = 0;
    char doc[128], name[16];
    memset(recs, 0, sizeof recs);
    if (on_malloc) {
        kctl_memstore_desc d;
        memset(&s, 0, sizeof s);
        memset(&d, 0, sizeof d);
        d.history = 4;
        if (kctl_memstore_create(&d, &s.ms) != KCTL_OK) { KT_CHECK(0); return; }
        s.t = kctl_memstore_transport(s.ms);
    } else if (!tm_open(&s, 4, 0)) {
        return;
    }
    /* rev 1: an object of its own, so the ring, the resource's name and the
       map are there before the allocations are counted */
    KT_EQ_INT(kctl_memstore_apply(s.ms, &cm, "{\"metadata\":{\"name\":\"warm\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(s.t.vt->remove(s.t.self, &cm, "warm", NULL, NULL, NULL), KCTL_OK);
    kctl_memstore_compact(s.ms, 2);
    live0 = s.a.live;
    pos[0] = pos[1] = 2;
    memset(&lo, 0, sizeof lo);
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &cm, &lo, "2", &w[0], NULL), KCTL_OK);
#ifndef KCTL_NO_SELECTORS /* (without selectors: the plain watcher only) */
    lo.label_selector = "app=a";
    KT_EQ_INT(s.t.vt->watch_open(s.t.self, &cm, &lo, "2", &w[1], NULL), KCTL_OK);
#endif
    for (i = 3; i < 180; i++) {
        tm_hist_rec *r = &recs[i];
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        k = (int)((seed >> 33) % 4);
        r->key = k;
        r->prev_x = x[k];
        r->prev_in = in[k];
        snprintf(name, sizeof name, "k%d", k);
        if (x[k] && (seed >> 40) % 10 < 3) { /* delete */
            KT_EQ_INT(s.t.vt->remove(s.t.self, &cm, name, NULL, NULL, NULL), KCTL_OK);
            r->type = KCTL_EVENT_DELETED;
            x[k] = 0;
            in[k] = 0;
        } else {
            r->type = x[k] ? KCTL_EVENT_MODIFIED : KCTL_EVENT_ADDED;
            x[k] = next++;
            in[k] = (int)((seed >> 45) & 1);
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"}},\"data\":{\"x\":%d}}", name,
                     in[k] ? "a" : "b", x[k]);
            KT_EQ_INT(kctl_memstore_apply(s.ms, &cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
        }
        r->x = x[k];
        r->in = in[k];
        KT_EQ_U64(kctl_memstore_revision(s.ms), (uint64_t)i);
        if (++lag >= 1 + (int)((seed >> 50) % 3)) { /* up to three behind: never past the history */
            tm_hist_check(w[0], &s, recs, false, &pos[0]);
            if (w[1]) tm_hist_check(w[1], &s, recs, true, &pos[1]);
            lag = 0;
        }
    }
    tm_hist_check(w[0], &s, recs, false, &pos[0]);
    if (w[1]) tm_hist_check(w[1], &s, recs, true, &pos[1]);
    KT_EQ_U64(pos[0], 179);
    s.t.vt->watch_close(s.t.self, w[0]);
    if (w[1]) s.t.vt->watch_close(s.t.self, w[1]);
    for (k = 0; k < 4; k++) {
        if (!x[k]) continue;
        snprintf(name, sizeof name, "k%d", k);
        KT_EQ_INT(s.t.vt->remove(s.t.self, &cm, name, NULL, NULL, NULL), KCTL_OK);
    }
    kctl_memstore_compact(s.ms, kctl_memstore_revision(s.ms));
    if (!on_malloc) {
        KT_EQ_INT((int)s.a.live, (int)live0);
        tm_close(&s);
    } else {
        kctl_memstore_destroy(s.ms);
    }
}

static void tm_history_borrows_objects(void) {
    tm_history_borrows_objects_run(false);
    tm_history_borrows_objects_run(true);
}

void kt_suite_memstore(void) {
    KT_RUN(tm_resource_read_each_write);
    KT_RUN(tm_create_update_generation_status);
    KT_RUN(tm_list_selectors_paging);
    KT_RUN(tm_list_key_order);
    KT_RUN(tm_list_paging_snapshot);
    KT_RUN(tm_trim_paging_faults);
    KT_RUN(tm_watch_gone_bookmarks_faults);
    KT_RUN(tm_watch_batches);
    KT_RUN(tm_namespace_exact);
    KT_RUN(tm_apply_delete);
    KT_RUN(tm_apply_unchanged_by_metadata);
    KT_RUN(tm_apply_parses_once);
    KT_RUN(tm_persistence);
    KT_RUN(tm_bookmark_time);
    KT_RUN(tm_watch_blocking_and_latency);
    KT_RUN(tm_review_fixes);
    KT_RUN(tm_recorded_tokens_match_parse);
    KT_RUN(tm_kept_parts_match_parse);
    KT_RUN(tm_create_time_when_made);
    KT_RUN(tm_fingerprint_escapes);
    KT_RUN(tm_history_borrows_objects);
}
