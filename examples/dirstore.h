/* dirstore.h - a transport of its own: a directory of JSON files */
/*
    The proof that the transport vtable is enough: a store written in a few
    hundred lines with nothing but kctl's public API. examples/custom_transport.c
    runs an unchanged informer and controller on it; tests/test_contract.c
    runs the transport contract suite against it.

    The store ("dirstore") is a directory; each object is <name>.json (one
    resource; cluster-scoped, so namespaces are not used).
      resourceVersion  an object's: FNV-1a 64 of its document with any
                       resourceVersion taken out (a content hash, in hex);
                       a list's: the XOR over the objects of hash(name,
                       content hash) - the state of the whole directory.
      list             read the directory (paged by name); the state is
                       remembered (a ring of the last DS_RING states) so a
                       watch can start from it.
      watch            poll the directory and diff it, by content hash,
                       against the state the watcher is at: ADDED,
                       MODIFIED, DELETED (the last document seen), one at a
                       time, each carrying the state after it. A version
                       the ring no longer holds is GONE: the reflector
                       lists again, which is always correct.
      writes           a temporary file, fsync, rename (a crash leaves the
                       old file or the new one, whole); update and
                       update_status check the resourceVersion (CONFLICT);
                       create drops the status sent, update keeps the
                       stored one, update_status changes only the status;
                       a delete checks its resourceVersion and uid
                       preconditions (a uid is whatever metadata.uid the
                       document was written with).
    Known limits: no label/field selectors (INVALID_ARG), no finalizers, no
    generation, uid or creationTimestamp of its own, pages read the
    directory as it is (not one snapshot), several changes between two
    polls arrive as one event per object, no "too new" version (TIMEOUT)
    since hashes have no order; a file that does not parse is skipped, as
    if absent (edit files atomically). tests/contract.h lists these as the
    dirstore's differences from the transport contract.

    Include kctl.h first (with KCTL_IMPLEMENTATION in one file), then this
    file; everything here is static. The constructor is ds_transport.
*/
#ifndef KCTL_H_INCLUDED
#error "include kctl.h before dirstore.h"
#endif
#ifndef DIRSTORE_H_INCLUDED
#define DIRSTORE_H_INCLUDED

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DS_MAX_OBJECTS 64
#define DS_NAME_MAX 64
#define DS_PATH_MAX 512
#define DS_RING 4

/* ============================================================ the dirstore */
typedef struct ds_file {
    char name[DS_NAME_MAX];
    uint64_t hash;         /* content hash */
    char *text;            /* the document without resourceVersion (malloc) */
    size_t len;
} ds_file;

typedef struct ds_set {    /* a state of the directory, sorted by name */
    size_t n;
    uint64_t state;        /* XOR of ds_mix(name, hash) */
    ds_file f[DS_MAX_OBJECTS];
} ds_set;

typedef struct ds_store {
    pthread_mutex_t mu;    /* guards everything below and the directory */
    char dir[256];
    char resource[64];     /* the one resource (plural) it holds */
    ds_set ring[DS_RING];  /* recent states, for watches to start from */
    unsigned ring_next;
} ds_store;

/* A watch: a type of its own, cast to the opaque kctl_watch (a transport
   may as well define struct kctl_watch itself; kctl does not). */
typedef struct ds_watch {
    ds_set seen;           /* what the watcher has been told */
    ds_set cur;            /* the directory at the last poll */
    bool unsaved;          /* seen moved on since it was put in the ring */
} ds_watch;

static uint64_t ds_fnv(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = (const unsigned char *)p;
    while (n--) h = (h ^ *b++) * UINT64_C(1099511628211);
    return h;
}
#define DS_FNV_OFFSET UINT64_C(14695981039346656037)
static uint64_t ds_mix(const char *name, uint64_t hash) { return ds_fnv(name, strlen(name), DS_FNV_OFFSET ^ hash); }
static void ds_rv(uint64_t v, char *out) { snprintf(out, KCTL_RV_MAX, "%016llx", (unsigned long long)v); }

static bool ds_name_ok(const char *n) {
    return n && n[0] && n[0] != '.' && !strchr(n, '/') && strlen(n) < DS_NAME_MAX;
}

/* ---- JSON helpers: parse with allocated tokens; merge patch into text */
static int ds_parse(const char *text, size_t len, kctl_json *j, kctl_json_tok **toks) {
    int rc = kctl_json_parse(text, len, NULL, 0, NULL, j);
    *toks = NULL;
    if (rc != KCTL_OK) return rc;
    if (!(*toks = (kctl_json_tok *)malloc(j->ntoks * sizeof **toks))) return KCTL_ERR_NOMEM;
    return kctl_json_parse(text, len, *toks, j->ntoks, NULL, j);
}

/* *out (malloc) = doc with the merge patch applied. PROTO: doc is not JSON. */
static int ds_patch(const char *doc, size_t dlen, const char *patch, size_t plen, char **out, size_t *olen) {
    kctl_json jd, jp;
    kctl_json_tok *td = NULL, *tp = NULL;
    kctl_jw w;
    const char *text;
    int rc = ds_parse(doc, dlen, &jd, &td);
    if (rc == KCTL_OK) rc = ds_parse(patch, plen, &jp, &tp);
    kctl_jw_init_growable(&w, NULL);
    if (rc == KCTL_OK) rc = kctl_json_merge_patch(&jd, 0, &jp, 0, &w);
    if (rc == KCTL_OK) rc = kctl_jw_finish(&w, &text, olen);
    if (rc == KCTL_OK && !(*out = (char *)malloc(*olen + 1))) rc = KCTL_ERR_NOMEM;
    if (rc == KCTL_OK) memcpy(*out, text, *olen + 1);
    kctl_jw_free(&w);
    free(td);
    free(tp);
    return rc;
}

static const char ds_no_rv[] = "{\"metadata\":{\"resourceVersion\":null}}";
static const char ds_no_rv_status[] = "{\"metadata\":{\"resourceVersion\":null},\"status\":null}";

/* *out = base with src's status (none if src has none). */
static int ds_with_status(const char *base, size_t blen, const char *src, size_t slen, char **out, size_t *olen) {
    kctl_json js;
    kctl_json_tok *ts = NULL;
    kctl_jw w;
    const char *patch;
    size_t plen, blen2;
    char *bare = NULL;
    uint32_t sv;
    int rc = ds_parse(src, slen, &js, &ts);
    if (rc == KCTL_OK) rc = ds_patch(base, blen, "{\"status\":null}", 15, &bare, &blen2);
    if (rc == KCTL_OK && (sv = kctl_json_member(&js, 0, "status")) != KCTL_JSON_NONE) {
        kctl_jw_init_growable(&w, NULL); /* {"status": src's} onto a document without one */
        kctl_jw_object_begin(&w);
        kctl_jw_key(&w, "status");
        kctl_jw_value(&w, &js, sv);
        kctl_jw_object_end(&w);
        if ((rc = kctl_jw_finish(&w, &patch, &plen)) == KCTL_OK) rc = ds_patch(bare, blen2, patch, plen, out, olen);
        kctl_jw_free(&w);
        free(bare);
    } else if (rc == KCTL_OK) {
        *out = bare, *olen = blen2;
    }
    free(ts);
    return rc;
}

/* An object to hand out: the document with its resourceVersion set. */
static int ds_obj(const ds_file *f, kctl_obj **out) {
    char patch[128], rv[KCTL_RV_MAX], *text;
    size_t len;
    int rc;
    ds_rv(f->hash, rv);
    snprintf(patch, sizeof patch, "{\"metadata\":{\"resourceVersion\":\"%s\"}}", rv);
    if ((rc = ds_patch(f->text, f->len, patch, strlen(patch), &text, &len)) != KCTL_OK) return rc;
    rc = kctl_obj_parse(text, len, NULL, out);
    free(text);
    return rc;
}

/* ---- files */
/* Read <name>.json: NOT_FOUND, IO, or PROTO (not JSON, or another name). */
static int ds_load(ds_store *s, const char *name, ds_file *f) {
    char path[DS_PATH_MAX], *raw;
    kctl_json j;
    kctl_json_tok *t = NULL;
    long n;
    int rc;
    FILE *fp;
    memset(f, 0, sizeof *f);
    snprintf(path, sizeof path, "%s/%s.json", s->dir, name);
    if (!(fp = fopen(path, "rb"))) return errno == ENOENT ? KCTL_ERR_NOT_FOUND : KCTL_ERR_IO;
    if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) { fclose(fp); return KCTL_ERR_IO; }
    if (!(raw = (char *)malloc((size_t)n + 1))) { fclose(fp); return KCTL_ERR_NOMEM; }
    rc = fread(raw, 1, (size_t)n, fp) == (size_t)n ? KCTL_OK : KCTL_ERR_IO;
    fclose(fp);
    if (rc == KCTL_OK) rc = ds_parse(raw, (size_t)n, &j, &t);
    if (rc == KCTL_OK && !kctl_json_string_eq(&j, kctl_json_path(&j, 0, "metadata.name"), name)) rc = KCTL_ERR_PROTO;
    snprintf(f->name, sizeof f->name, "%s", name);
    if (rc == KCTL_OK) rc = ds_patch(raw, (size_t)n, ds_no_rv, sizeof ds_no_rv - 1, &f->text, &f->len);
    if (rc == KCTL_OK) f->hash = ds_fnv(f->text, f->len, DS_FNV_OFFSET);
    free(t);
    free(raw);
    return rc;
}

/* Replace <name>.json atomically: temporary file, fsync, rename. */
static int ds_write(ds_store *s, const char *name, const char *text, size_t len) {
    char path[DS_PATH_MAX], tmp[DS_PATH_MAX];
    size_t off = 0;
    int fd, ok;
    snprintf(path, sizeof path, "%s/%s.json", s->dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", s->dir, name); /* never listed */
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) return KCTL_ERR_IO;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    ok = off == len && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return KCTL_ERR_IO;
    }
    if ((fd = open(s->dir, O_RDONLY)) >= 0) { fsync(fd); close(fd); } /* the rename itself */
    return KCTL_OK;
}

/* ---- states */
static void ds_set_clear(ds_set *st) {
    size_t i;
    for (i = 0; i < st->n; i++) free(st->f[i].text);
    st->n = 0;
    st->state = 0;
}
static int ds_set_find(const ds_set *st, const char *name) {
    size_t i;
    for (i = 0; i < st->n; i++)
        if (!strcmp(st->f[i].name, name)) return (int)i;
    return -1;
}
/* Put a copy of f (replacing one of the same name). */
static int ds_set_put(ds_set *st, const ds_file *f) {
    int i = ds_set_find(st, f->name);
    char *text = (char *)malloc(f->len + 1);
    if (!text) return KCTL_ERR_NOMEM;
    memcpy(text, f->text, f->len + 1);
    if (i < 0) {
        if (st->n == DS_MAX_OBJECTS) { free(text); return KCTL_ERR_FULL; }
        i = (int)st->n++;
    } else {
        st->state ^= ds_mix(st->f[i].name, st->f[i].hash);
        free(st->f[i].text);
    }
    st->f[i] = *f;
    st->f[i].text = text;
    st->state ^= ds_mix(f->name, f->hash);
    return KCTL_OK;
}
static void ds_set_del(ds_set *st, size_t i) {
    st->state ^= ds_mix(st->f[i].name, st->f[i].hash);
    free(st->f[i].text);
    memmove(&st->f[i], &st->f[i + 1], (st->n - i - 1) * sizeof st->f[0]);
    st->n--;
}
static int ds_set_copy(ds_set *dst, const ds_set *src) {
    size_t i;
    int rc = KCTL_OK;
    ds_set_clear(dst);
    for (i = 0; i < src->n && rc == KCTL_OK; i++) rc = ds_set_put(dst, &src->f[i]);
    return rc;
}
static int ds_cmp(const void *a, const void *b) { return strcmp(((const ds_file *)a)->name, ((const ds_file *)b)->name); }

/* Read the whole directory into st. */
static int ds_scan(ds_store *s, ds_set *st) {
    DIR *d = opendir(s->dir);
    struct dirent *e;
    int rc = KCTL_OK;
    ds_set_clear(st);
    if (!d) return KCTL_ERR_IO;
    while (rc == KCTL_OK && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char name[DS_NAME_MAX];
        ds_file f;
        if (e->d_name[0] == '.' || n <= 5 || n - 5 >= DS_NAME_MAX || strcmp(e->d_name + n - 5, ".json")) continue;
        memcpy(name, e->d_name, n - 5);
        name[n - 5] = '\0';
        rc = ds_load(s, name, &f);
        if (rc == KCTL_OK) {
            if (st->n == DS_MAX_OBJECTS) rc = KCTL_ERR_FULL;
            else st->f[st->n++] = f, st->state ^= ds_mix(f.name, f.hash), f.text = NULL;
        } else if (rc == KCTL_ERR_PROTO || rc == KCTL_ERR_NOT_FOUND) {
            rc = KCTL_OK; /* not an object of ours, or gone meanwhile: skipped */
        }
        free(f.text);
    }
    closedir(d);
    qsort(st->f, st->n, sizeof st->f[0], ds_cmp);
    return rc;
}

static void ds_ring_save(ds_store *s, const ds_set *st) {
    unsigned i;
    for (i = 0; i < DS_RING; i++)
        if (s->ring[i].state == st->state && s->ring[i].n == st->n) return; /* have it */
    if (ds_set_copy(&s->ring[s->ring_next], st) == KCTL_OK) s->ring_next = (s->ring_next + 1) % DS_RING;
    else ds_set_clear(&s->ring[s->ring_next]);
}

/* ---- the vtable; every entry takes the mutex */
static int ds_check(ds_store *s, const kctl_resource *res, const kctl_list_opts *o) {
    if (!res || !res->resource || strcmp(res->resource, s->resource)) return KCTL_ERR_NOT_FOUND;
    if (o && ((o->label_selector && o->label_selector[0]) || (o->field_selector && o->field_selector[0])))
        return KCTL_ERR_INVALID_ARG; /* no selectors here */
    return KCTL_OK;
}

static int ds_list(void *self, const kctl_resource *res, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *sts) {
    ds_store *s = (ds_store *)self;
    ds_set *st = (ds_set *)calloc(1, sizeof *st);
    size_t i;
    int rc = ds_check(s, res, o);
    memset(out, 0, sizeof *out);
    if (!st) return KCTL_ERR_NOMEM;
    pthread_mutex_lock(&s->mu);
    if (rc == KCTL_OK && (rc = ds_scan(s, st)) == KCTL_OK) ds_ring_save(s, st);
    pthread_mutex_unlock(&s->mu);
    if (rc == KCTL_OK && !(out->items.items = (kctl_obj **)malloc((st->n + 1) * sizeof(kctl_obj *)))) rc = KCTL_ERR_NOMEM;
    for (i = 0; rc == KCTL_OK && i < st->n; i++) {
        if (o && o->continue_token && strcmp(st->f[i].name, o->continue_token) <= 0) continue; /* earlier pages */
        if (o && o->limit && out->items.count == o->limit) { /* page full: continue after the last one */
            snprintf(out->continue_token, sizeof out->continue_token, "%s", st->f[i - 1].name);
            break;
        }
        rc = ds_obj(&st->f[i], &out->items.items[out->items.count]);
        if (rc == KCTL_OK) out->items.count++;
    }
    if (rc == KCTL_OK) ds_rv(st->state, out->resource_version);
    else kctl_list_result_free(out);
    ds_set_clear(st);
    free(st);
    (void)sts; /* this store adds no detail to its codes */
    return rc;
}

static int ds_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *o, const char *from_rv, kctl_watch **out,
                         kctl_api_status *st) {
    ds_store *s = (ds_store *)self;
    ds_watch *w;
    char rv[KCTL_RV_MAX];
    unsigned i;
    int rc = ds_check(s, res, o);
    *out = NULL;
    if (rc != KCTL_OK) return rc;
    if (!(w = (ds_watch *)calloc(1, sizeof *w))) return KCTL_ERR_NOMEM;
    if (from_rv && from_rv[0]) { /* from a state we remember, or the one there now */
        rc = KCTL_ERR_GONE;
        pthread_mutex_lock(&s->mu);
        for (i = 0; i < DS_RING && rc == KCTL_ERR_GONE; i++) {
            ds_rv(s->ring[i].state, rv);
            if (!strcmp(rv, from_rv)) rc = ds_set_copy(&w->seen, &s->ring[i]);
        }
        if (rc == KCTL_ERR_GONE && ds_scan(s, &w->cur) == KCTL_OK) {
            ds_rv(w->cur.state, rv);
            if (!strcmp(rv, from_rv)) rc = ds_set_copy(&w->seen, &w->cur);
        }
        pthread_mutex_unlock(&s->mu);
    } /* else: seen is empty, so the first poll is an ADDED for everything */
    if (rc == KCTL_OK) rc = ds_set_copy(&w->cur, &w->seen); /* nothing to tell before the first poll */
    if (rc != KCTL_OK) {
        ds_set_clear(&w->seen);
        ds_set_clear(&w->cur);
        free(w);
        return kctl_apisrv_refuse(rc, res, NULL, st); /* GONE: the Expired Status an API server sends */
    }
    *out = (kctl_watch *)w;
    return KCTL_OK;
}

/* The first difference between what the watcher saw and the last poll, as
   an event (seen moves past it); *found false when there is none. */
static int ds_diff(ds_watch *w, kctl_event *ev, bool *found) {
    size_t i;
    int rc = KCTL_OK, j;
    *found = true;
    for (i = 0; i < w->seen.n; i++) {
        j = ds_set_find(&w->cur, w->seen.f[i].name);
        if (j < 0) {                        /* gone: its last state */
            ev->type = KCTL_EVENT_DELETED;
            if ((rc = ds_obj(&w->seen.f[i], &ev->obj)) == KCTL_OK) ds_set_del(&w->seen, i);
            goto done;
        }
        if (w->cur.f[j].hash != w->seen.f[i].hash) {
            ev->type = KCTL_EVENT_MODIFIED;
            if ((rc = ds_obj(&w->cur.f[j], &ev->obj)) == KCTL_OK) rc = ds_set_put(&w->seen, &w->cur.f[j]);
            goto done;
        }
    }
    for (i = 0; i < w->cur.n; i++)
        if (ds_set_find(&w->seen, w->cur.f[i].name) < 0) {
            ev->type = KCTL_EVENT_ADDED;
            if ((rc = ds_obj(&w->cur.f[i], &ev->obj)) == KCTL_OK) rc = ds_set_put(&w->seen, &w->cur.f[i]);
            goto done;
        }
    *found = false;
    return KCTL_OK;
done:
    if (rc != KCTL_OK) { kctl_event_clear(ev); *found = false; return rc; }
    ds_rv(w->seen.state, ev->resource_version); /* the state after this event */
    w->unsaved = true;
    return KCTL_OK;
}

static int ds_watch_next(void *self, kctl_watch *kw, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    ds_store *s = (ds_store *)self;
    ds_watch *w = (ds_watch *)kw;
    uint64_t now = kctl_clock_now(NULL), end = now + timeout_ns;
    bool found;
    int rc;
    (void)st;
    memset(ev, 0, sizeof *ev);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        rc = ds_diff(w, ev, &found);            /* the rest of the last poll */
        if (rc == KCTL_OK && !found) {
            if (w->unsaved) {                   /* a batch ended: resumable from here */
                ds_ring_save(s, &w->seen);
                w->unsaved = false;
            }
            if ((rc = ds_scan(s, &w->cur)) == KCTL_OK) rc = ds_diff(w, ev, &found);
        }
        pthread_mutex_unlock(&s->mu);
        if (rc != KCTL_OK) return rc == KCTL_ERR_NOMEM ? rc : KCTL_ERR_IO;
        if (found) return KCTL_OK;
        if ((now = kctl_clock_now(NULL)) >= end) return KCTL_ERR_AGAIN;
        {
            struct timespec ts = { 0, 10000000L }; /* poll every 10 ms */
            if (end - now < KCTL_MS(10)) ts.tv_nsec = (long)(end - now);
            nanosleep(&ts, NULL);
        }
    }
}

static void ds_watch_close(void *self, kctl_watch *kw) {
    ds_watch *w = (ds_watch *)kw;
    (void)self;
    if (!w) return;
    ds_set_clear(&w->seen);
    ds_set_clear(&w->cur);
    free(w);
}

static int ds_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    ds_store *s = (ds_store *)self;
    ds_file f;
    int rc = ds_check(s, res, NULL);
    *out = NULL;
    if (rc != KCTL_OK) return rc;
    if (!ds_name_ok(name)) return KCTL_ERR_INVALID_ARG;
    pthread_mutex_lock(&s->mu);
    rc = ds_load(s, name, &f);
    pthread_mutex_unlock(&s->mu);
    if (rc == KCTL_OK) rc = ds_obj(&f, out);
    free(f.text);
    return kctl_apisrv_refuse(rc, res, name, st); /* NOT_FOUND: the Status an API server sends */
}

/* The writes: parse the document (INVALID_ARG if it is no object), then,
   under the mutex, check against the file and replace it. */
enum { DS_CREATE, DS_UPDATE, DS_STATUS };
static int ds_write_op(ds_store *s, const kctl_resource *res, int op, const char *json, size_t len, kctl_obj **out,
                       kctl_api_status *st) {
    kctl_obj *in = NULL;
    ds_file cur, f;
    char rv[KCTL_RV_MAX], *text = NULL;
    size_t n = 0;
    int rc = ds_check(s, res, NULL);
    if (out) *out = NULL;
    if (rc != KCTL_OK) return rc;
    if (!json || kctl_obj_parse(json, len, NULL, &in) != KCTL_OK || !ds_name_ok(kctl_obj_name(in))) {
        kctl_obj_unref(in);
        return KCTL_ERR_INVALID_ARG;
    }
    memset(&f, 0, sizeof f);
    snprintf(f.name, sizeof f.name, "%s", kctl_obj_name(in));
    pthread_mutex_lock(&s->mu);
    rc = ds_load(s, f.name, &cur);
    if (op == DS_CREATE) {
        if (rc == KCTL_OK || rc == KCTL_ERR_PROTO) rc = KCTL_ERR_EXISTS;
        else if (rc == KCTL_ERR_NOT_FOUND) /* the status is written through update_status */
            rc = ds_patch(json, len, ds_no_rv_status, sizeof ds_no_rv_status - 1, &text, &n);
    } else if (rc == KCTL_OK) {
        ds_rv(cur.hash, rv);
        if (kctl_obj_resource_version(in)[0] && strcmp(kctl_obj_resource_version(in), rv)) rc = KCTL_ERR_CONFLICT;
        else if (op == DS_UPDATE) { /* the new document, with the status it has now */
            char *bare = NULL;
            size_t blen;
            rc = ds_patch(json, len, ds_no_rv, sizeof ds_no_rv - 1, &bare, &blen);
            if (rc == KCTL_OK) rc = ds_with_status(bare, blen, cur.text, cur.len, &text, &n);
            free(bare);
        } else {                    /* the document it has now, with the new status */
            rc = ds_with_status(cur.text, cur.len, json, len, &text, &n);
        }
    }
    if (rc == KCTL_OK) rc = ds_write(s, f.name, text, n);
    pthread_mutex_unlock(&s->mu);
    if (rc == KCTL_OK) {
        f.text = text, f.len = n, f.hash = ds_fnv(text, n, DS_FNV_OFFSET);
        if (out) rc = ds_obj(&f, out);
    }
    if (rc == KCTL_ERR_PROTO) rc = KCTL_ERR_INVALID_ARG;
    free(text);
    free(cur.text);
    kctl_obj_unref(in);
    return kctl_apisrv_refuse(rc, res, f.name, st); /* EXISTS, NOT_FOUND, CONFLICT: worded as an API server does */
}
static int ds_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return ds_write_op((ds_store *)self, res, DS_CREATE, json, len, out, st);
}
static int ds_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return ds_write_op((ds_store *)self, res, DS_UPDATE, json, len, out, st);
}
static int ds_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return ds_write_op((ds_store *)self, res, DS_STATUS, json, len, out, st);
}

/* OK if f's document says metadata.uid is uid, else CONFLICT (or NOMEM). */
static int ds_uid_check(const ds_file *f, const char *uid) {
    kctl_json j;
    kctl_json_tok *t = NULL;
    int rc = ds_parse(f->text, f->len, &j, &t);
    if (rc == KCTL_OK && !kctl_json_string_eq(&j, kctl_json_path(&j, 0, "metadata.uid"), uid)) rc = KCTL_ERR_CONFLICT;
    free(t);
    return rc;
}

/* No finalizers here: a delete removes the file (*out stays NULL). The
   preconditions: its resourceVersion, and the uid it was written with. */
static int ds_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                     kctl_api_status *st) {
    ds_store *s = (ds_store *)self;
    const char *precondition_rv = opts && opts->resource_version && opts->resource_version[0] ? opts->resource_version : NULL;
    char path[DS_PATH_MAX], rv[KCTL_RV_MAX];
    ds_file cur;
    int rc = ds_check(s, res, NULL);
    if (out) *out = NULL;
    if (rc != KCTL_OK) return rc;
    if (!ds_name_ok(name)) return KCTL_ERR_INVALID_ARG;
    pthread_mutex_lock(&s->mu);
    rc = ds_load(s, name, &cur);
    ds_rv(cur.hash, rv);
    if (rc == KCTL_OK && precondition_rv && strcmp(precondition_rv, rv)) rc = KCTL_ERR_CONFLICT;
    if (rc == KCTL_OK && opts && opts->uid && opts->uid[0]) rc = ds_uid_check(&cur, opts->uid);
    snprintf(path, sizeof path, "%s/%s.json", s->dir, name);
    if (rc == KCTL_OK && unlink(path) != 0) rc = KCTL_ERR_IO;
    pthread_mutex_unlock(&s->mu);
    free(cur.text);
    return kctl_apisrv_refuse(rc == KCTL_ERR_PROTO ? KCTL_ERR_NOT_FOUND : rc, res, name, st);
}

static void ds_destroy(void *self) {
    ds_store *s = (ds_store *)self;
    unsigned i;
    for (i = 0; i < DS_RING; i++) ds_set_clear(&s->ring[i]);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static const kctl_transport_vtable ds_vtable = {
    ds_list, ds_watch_open, ds_watch_next, ds_watch_close, ds_get,
    ds_create, ds_update, ds_update_status, NULL /* patch: kctl_transport_patch reads, merges, updates */, ds_remove, ds_destroy, NULL
};

/* The constructor: a store over dir (which must exist) for one resource. */
static int ds_transport(const char *dir, const char *resource, kctl_transport *out) {
    ds_store *s = (ds_store *)calloc(1, sizeof *s);
    if (!s) return KCTL_ERR_NOMEM;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->resource, sizeof s->resource, "%s", resource);
    pthread_mutex_init(&s->mu, NULL);
    out->vt = &ds_vtable;
    out->self = s;
    return KCTL_OK;
}

#endif /* DIRSTORE_H_INCLUDED */
