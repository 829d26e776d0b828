/* custom_transport.c - a transport of its own: a directory of JSON files */
/*
    The proof that the transport vtable is enough: the store of
    examples/dirstore.h (a directory of JSON files, a few hundred lines
    with nothing but the public API) with an unchanged informer and
    controller on top of it. tests/test_contract.c runs the transport
    contract suite against the same store.

    The program: create two Greetings, run a controller whose reply is the
    message reversed (in status.reply), then edit, delete and add files on
    disk behind its back, and check that it followed. Also shows CONFLICT.

    Build: cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -pthread \
               examples/custom_transport.c -o custom_transport
*/
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include "dirstore.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ============================================================ the program */
static const kctl_resource greetings = { "example.kctl.io", "v1", "greetings", "" };
#define DEMO_DIR "build/custom-transport"
static const char *dir = DEMO_DIR;
static kctl_transport T;
static int bob_gone;                        /* bob reconciled with no object */

/* The message of a Greeting's document at path (e.g. "spec.message"). */
static void field(const char *doc, size_t len, const char *path, char *buf, size_t cap) {
    kctl_json j;
    kctl_json_tok *t;
    buf[0] = '\0';
    if (ds_parse(doc, len, &j, &t) == KCTL_OK && kctl_json_string(&j, kctl_json_path(&j, 0, path), buf, cap, NULL) != KCTL_OK)
        buf[0] = '\0';
    free(t);
}

static void reverse(const char *in, char *out) {
    size_t n = strlen(in), i;
    for (i = 0; i < n; i++) out[i] = in[n - 1 - i];
    out[n] = '\0';
}

/* The controller: status.reply = spec.message reversed. */
static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r;
    char msg[128], reply[128];
    const char *doc, *status;
    size_t len, slen;
    bool written = false;
    kctl_jw w;
    memset(&r, 0, sizeof r);
    if (!ctx->obj) {
        printf("  reconcile %-6s gone: nothing to clean up\n", ctx->key);
        if (!strcmp(ctx->key, "bob")) bob_gone = 1;
        return r;
    }
    doc = kctl_obj_json(ctx->obj, &len);
    field(doc, len, "spec.message", msg, sizeof msg);
    reverse(msg, reply);
    kctl_jw_init_growable(&w, NULL);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "reply");
    kctl_jw_string(&w, reply);
    kctl_jw_object_end(&w);
    if ((r.error = kctl_jw_finish(&w, &status, &slen)) == KCTL_OK)
        r.error = kctl_status_update(&ctx->transport, &greetings, ctx->obj, status, slen, &written, NULL, NULL);
    kctl_jw_free(&w);
    printf("  reconcile %-6s rv %s message \"%s\": %s\n", ctx->key, kctl_obj_resource_version(ctx->obj), msg,
           r.error ? kctl_strerror(r.error) : written ? "reply written" : "reply up to date");
    return r;
}

/* Whether name's file (through the store) has the reply its message asks for. */
static bool replied(const char *name) {
    kctl_obj *o;
    char msg[128], want[128], got[128];
    const char *doc;
    size_t len;
    if (kctl_transport_get(&T, &greetings, name, &o, NULL) != KCTL_OK) return false;
    doc = kctl_obj_json(o, &len);
    field(doc, len, "spec.message", msg, sizeof msg);
    field(doc, len, "status.reply", got, sizeof got);
    kctl_obj_unref(o);
    reverse(msg, want);
    return msg[0] && !strcmp(want, got);
}

static bool first_done(void) { return replied("alice") && replied("bob"); }
static bool second_done(void) {
    return replied("alice") && replied("carol") && bob_gone && access(DEMO_DIR "/bob.json", F_OK) != 0;
}

/* Step the informer and the controller until done() (at most 5 s), then
   200 ms more: the controller sees its own status writes come back. */
static bool run_until(kctl_informer *inf, kctl_controller *c, bool (*done)(void)) {
    uint64_t end = kctl_clock_now(NULL) + KCTL_SEC(5), settled = 0, next;
    for (;;) {
        int rc;
        uint64_t now = kctl_clock_now(NULL);
        if (!settled && done()) settled = now + KCTL_MS(200);
        if (settled && now >= settled) return done();
        if (now >= end) return false;
        if ((rc = kctl_informer_step(inf, KCTL_MS(50), &next)) != KCTL_OK ||
            (rc = kctl_controller_step(c, (size_t)-1, NULL)) != KCTL_OK) {
            fprintf(stderr, "custom_transport: step: %s\n", kctl_strerror(rc));
            return false;
        }
    }
    return true;
}

/* The operator, writing files by hand (not through the store). */
static bool put_file(const char *name, const char *json) {
    char path[DS_PATH_MAX];
    FILE *fp;
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    if (!(fp = fopen(path, "w"))) return false;
    fputs(json, fp);
    return fclose(fp) == 0;
}

int main(void) {
    static const char alice[] = "{\"apiVersion\":\"example.kctl.io/v1\",\"kind\":\"Greeting\",\"metadata\":{\"name\":\"alice\"},\"spec\":{\"message\":\"hello\"}}";
    static const char bob[] = "{\"apiVersion\":\"example.kctl.io/v1\",\"kind\":\"Greeting\",\"metadata\":{\"name\":\"bob\"},\"spec\":{\"message\":\"good night\"}}";
    kctl_informer_desc id;
    kctl_controller_desc cd;
    kctl_informer *inf = NULL;
    kctl_controller *c = NULL;
    kctl_obj *o = NULL, *o2 = NULL;
    kctl_watch *w = NULL;
    kctl_reflector_stats rs;
    char stale[KCTL_RV_MAX], doc[256];
    DIR *d;
    struct dirent *e;
    int rc, ok = 0;

    /* a fresh directory */
    mkdir("build", 0755);
    mkdir(dir, 0755);
    if ((d = opendir(dir)) != NULL) {
        while ((e = readdir(d)) != NULL) {
            char path[DS_PATH_MAX];
            size_t n = strlen(e->d_name);
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (n > 5 && !strcmp(e->d_name + n - 5, ".json")) unlink(path);
        }
        closedir(d);
    }
    if ((rc = ds_transport(dir, "greetings", &T)) != KCTL_OK) return 1;
    printf("kctl %s - a transport over the files of %s/\n", kctl_version(), dir);

    /* two objects, and a CONFLICT: the second update's version is stale */
    if ((rc = kctl_transport_create(&T, &greetings, alice, sizeof alice - 1, &o, NULL)) != KCTL_OK ||
        (rc = kctl_transport_create(&T, &greetings, bob, sizeof bob - 1, NULL, NULL)) != KCTL_OK)
        goto out;
    snprintf(stale, sizeof stale, "%s", kctl_obj_resource_version(o));
    printf("created alice (rv %s) and bob\n", stale);
    snprintf(doc, sizeof doc, "{\"apiVersion\":\"example.kctl.io/v1\",\"kind\":\"Greeting\",\"metadata\":{\"name\":\"alice\",\"resourceVersion\":\"%s\"},\"spec\":{\"message\":\"hello, world\"}}", stale);
    if ((rc = kctl_transport_update(&T, &greetings, doc, strlen(doc), &o2, NULL)) != KCTL_OK) goto out;
    printf("update alice at rv %s: ok, now rv %s\n", stale, kctl_obj_resource_version(o2));
    rc = kctl_transport_update(&T, &greetings, doc, strlen(doc), NULL, NULL);
    printf("update alice at rv %s again: %s\n", stale, kctl_strerror(rc));
    if (rc != KCTL_ERR_CONFLICT) { rc = KCTL_ERR_PROTO; goto out; }
    rc = kctl_transport_create(&T, &greetings, "{\"metadata\":{\"name\":\"a/b\"}}", 27, NULL, NULL);
    printf("create a/b: %s\n", kctl_strerror(rc));
    if (rc != KCTL_ERR_INVALID_ARG) { rc = KCTL_ERR_PROTO; goto out; }
    rc = kctl_transport_watch_open(&T, &greetings, NULL, "0123456789abcdef", &w, NULL);
    printf("watch from a version the store does not remember: %s\n", kctl_strerror(rc));
    if (rc != KCTL_ERR_GONE) { if (rc == KCTL_OK) kctl_transport_watch_close(&T, w); rc = KCTL_ERR_PROTO; goto out; }

    /* an informer and a controller over it, stepped on this thread */
    memset(&id, 0, sizeof id);
    id.transport = T;
    id.resource = greetings;
    memset(&cd, 0, sizeof cd);
    cd.transport = T;
    cd.reconcile = reconcile;
    if ((rc = kctl_informer_create(&id, &inf)) != KCTL_OK) goto out;
    cd.primary = inf;
    if ((rc = kctl_controller_create(&cd, &c)) != KCTL_OK) goto out;
    printf("controller started\n");
    rc = KCTL_ERR_TIMEOUT;
    if (!run_until(inf, c, first_done)) goto out;

    /* the operator edits the directory by hand */
    printf("operator: alice.json gets a new message, bob.json is deleted, carol.json appears\n");
    if (!put_file("alice", "{\"kind\":\"Greeting\",\"metadata\":{\"name\":\"alice\"},\"spec\":{\"message\":\"good morning\"},\"status\":{\"reply\":\"dlrow ,olleh\"}}") ||
        unlink(DEMO_DIR "/bob.json") != 0 ||
        !put_file("carol", "{\"kind\":\"Greeting\",\"metadata\":{\"name\":\"carol\"},\"spec\":{\"message\":\"stressed\"}}"))
        goto out;
    if (!run_until(inf, c, second_done)) goto out;
    kctl_informer_read_stats(inf, &rs);
    printf("informer: %llu list(s), %llu added, %llu modified, %llu deleted, %llu watch restart(s)\n",
           (unsigned long long)rs.lists, (unsigned long long)rs.added, (unsigned long long)rs.modified,
           (unsigned long long)rs.deleted, (unsigned long long)rs.watch_restarts);
    ok = 1;
    rc = KCTL_OK;

out:
    kctl_informer_destroy(inf); /* first: the controller's handlers are on it */
    kctl_controller_destroy(c);
    kctl_obj_unref(o);
    kctl_obj_unref(o2);
    if (ok) { /* each remaining file replied to, through a fresh list */
        kctl_list_result l;
        size_t i;
        if (kctl_transport_list(&T, &greetings, NULL, &l, NULL) != KCTL_OK) ok = 0;
        else if (l.items.count != 2) ok = 0;
        for (i = 0; ok && i < l.items.count; i++) {
            printf("  %-6s rv %s: %s\n", kctl_obj_name(l.items.items[i]), kctl_obj_resource_version(l.items.items[i]),
                   kctl_obj_json(l.items.items[i], NULL));
            ok = replied(kctl_obj_name(l.items.items[i]));
        }
        if (ok && (rc = kctl_transport_watch_open(&T, &greetings, NULL, l.resource_version, &w, NULL)) == KCTL_OK) {
            kctl_event ev;
            rc = kctl_transport_watch_next(&T, w, 0, &ev, NULL); /* a state it remembers, and no news since */
            printf("watch from the list's version %s: %s\n", l.resource_version, rc == KCTL_ERR_AGAIN ? "nothing new" : kctl_strerror(rc));
            if (rc == KCTL_OK) kctl_event_clear(&ev);
            kctl_transport_watch_close(&T, w);
        }
        if (rc != KCTL_ERR_AGAIN) ok = 0;
        kctl_list_result_free(&l); /* (zeroed by a failed list) */
    }
    kctl_transport_destroy(&T);
    if (!ok) {
        fprintf(stderr, "custom_transport: failed (%s)\n", kctl_strerror(rc));
        return 1;
    }
    printf("custom_transport: ok\n");
    return 0;
}
