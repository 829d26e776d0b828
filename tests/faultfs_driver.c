/* faultfs_driver.c - with save_on_write, a write is acknowledged only
   once it is on disk, and a write that was refused is nowhere (but for
   one whose record was written whole and whose fsync then failed: that
   one is wholly there, in memory, for watchers and after a restart).
   Snapshots that fail (rename, the directory's fsync) refuse no write:
   the journal holds them.

   Each scenario runs a child process (this program again) with the shim
   tests/faultfs.c preloaded, so that the memstore's saves meet a disk that
   fills up or fails (write cut short then ENOSPC, fsync or the directory's
   fsync EIO, rename EIO; for good or now and then). The child makes
   writes of every kind (apply, update_status, remove: creates, replaces,
   deletion marks, removals) with a watch open, and checks at once that a
   refused write is IO with a 5xx Status, leaves the revision, the object
   (kctl_memstore_get) and the watch as they were; it writes down what was
   acknowledged. The parent, without the shim, then loads the file as a
   restart would and checks that it holds exactly that: every
   acknowledged object with its acknowledged document, nothing a refused
   write made, the revision of the last acknowledged write.

   Prints a FAIL line per failed check and ends with the runner's summary
   "N passed, N failed" (", N skipped": where the preload cannot take, as
   in a static or sanitizer build). Linux (the shim reads /proc). */
#define _XOPEN_SOURCE 700 /* realpath */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <limits.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define FD_SANITIZED 1
#endif
#endif

#define FD_SKIP 77 /* the child's exit code when the shim did not load */
#define FD_MAX_OBJS 128

typedef struct fd_scenario {
    const char *name;
    bool creates_only; /* else every kind of write */
    int steps;
    const char *budget, *fail, *every, *disk; /* the shim's settings (NULL: unset) */
    bool watch_dir;    /* the store's directory is watched ("dirsync") */
    bool no_refusals;  /* only snapshots fail: the journal holds every write, none is refused */
} fd_scenario;

static const fd_scenario fd_scenarios[] = {
    { "the issue's: 40 applies into a tiny budget", true, 40, "4000", "write", NULL, NULL, false, false },
    { "writes cut short, then ENOSPC", false, 60, "30000", "write", NULL, NULL, false, false },
    { "fsync of the file fails (EIO)", false, 60, "30000", "fsync", NULL, NULL, false, false },
    { "rename fails (EIO): snapshots fail, writes do not", false, 60, "30000", "rename", NULL, NULL, false, true },
    { "the directory's fsync fails after the rename: snapshots fail, writes do not", false, 60, "30000", "dirsync", NULL, NULL, true, true },
    { "fsync fails every other time", false, 60, "0", "fsync", "2", NULL, false, false },
    { "the directory's fsync fails every third time", false, 60, "0", "dirsync", "3", NULL, true, true },
    { "a small disk: deletes make room again", false, 90, NULL, NULL, NULL, "6000", false, false },
};
#define FD_NSCENARIOS (sizeof fd_scenarios / sizeof fd_scenarios[0])

static const kctl_resource fd_cm = { "", "v1", "configmaps", "prod" };
static int fd_failed; /* checks failed in this process */

static void fd_fail(const char *scenario, int line, const char *fmt, const char *a, long long b) {
    char msg[8192];
    snprintf(msg, sizeof msg, fmt, a, b);
    printf("FAIL tests/faultfs_driver.c:%d: %s: %s\n", line, scenario, msg);
    fflush(stdout);
    fd_failed++;
}
#define FD_CHECK(c, fmt, a, b) do { if (!(c)) fd_fail(sc->name, __LINE__, fmt, a, (long long)(b)); } while (0)

/* The document of name in ms (malloc'd), or NULL when it is not there. */
static char *fd_doc(kctl_memstore *ms, const char *name) {
    kctl_obj *o = NULL;
    char *copy = NULL;
    size_t len;
    if (kctl_memstore_get(ms, &fd_cm, name, &o, NULL) == KCTL_OK && o) {
        const char *doc = kctl_obj_json(o, &len);
        if ((copy = (char *)malloc(len + 1)) != NULL) memcpy(copy, doc, len + 1);
    }
    kctl_obj_unref(o);
    return copy;
}

static bool fd_streq(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* ---- the child: writes through the shim */
typedef struct fd_model {
    char *doc[FD_MAX_OBJS]; /* what was acknowledged per object oNN; NULL: not there */
    int made;               /* objects created so far (names o00...) */
} fd_model;

/* The k-th object there, or -1. */
static int fd_pick(const fd_model *m, int k) {
    int i, live = 0;
    for (i = 0; i < m->made; i++) live += m->doc[i] != NULL;
    if (!live) return -1;
    k %= live;
    for (i = 0; i < m->made; i++)
        if (m->doc[i] && k-- == 0) return i;
    return -1;
}

static int fd_child(const fd_scenario *sc, const char *dir) {
    char path[PATH_MAX + 32], acks_path[PATH_MAX + 32], doc[1024], name[16], pad[600];
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    kctl_watch *w = NULL;
    fd_model m;
    FILE *acks;
    int i, nacks = 0, nfails = 0;
    if (!getenv("KCTL_FAULTFS_LOADED")) return FD_SKIP;
    snprintf(path, sizeof path, "%s/store.db", dir);
    snprintf(acks_path, sizeof acks_path, "%s/acks", dir);
    if (!(acks = fopen(acks_path, "w"))) return 2;
    fprintf(acks, "start\n");
    fflush(acks);
    memset(&m, 0, sizeof m);
    memset(&d, 0, sizeof d);
    d.path = path;
    d.save_on_write = true;
    d.compact_bytes = 3000; /* snapshots every few writes, so that their faults come too */
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) return 2;
    t = kctl_memstore_transport(ms);
    if (kctl_transport_watch_open(&t, &fd_cm, NULL, "0", &w, NULL) != KCTL_OK) return 2;
    for (i = 0; i < sc->steps; i++) {
        kctl_api_status st;
        kctl_event ev;
        kctl_obj *out = NULL;
        uint64_t before = kctl_memstore_revision(ms), after;
        int kind = sc->creates_only ? 0 : i % 6, target = -1, rc;
        char *prev, *now;
        memset(&st, 0, sizeof st);
        memset(pad, 'x', sizeof pad - 1);
        pad[(size_t)(i * 7) % (sizeof pad - 1)] = '\0';
        if (kind >= 3 && (target = fd_pick(&m, i * 7)) < 0) kind = 0;
        if (kind < 3) {
            if (m.made == FD_MAX_OBJS) break;
            target = m.made++;
        }
        snprintf(name, sizeof name, "o%02d", target);
        prev = m.doc[target];
        switch (kind) {
        case 3: /* replace: a new spec, no finalizers (a deleting object goes) */
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"step\":\"%d\"}},\"spec\":{\"i\":%d,\"pad\":\"%s\"}}", name, i, i, pad);
            rc = kctl_memstore_apply(ms, &fd_cm, doc, KCTL_NTS, &out, &st);
            break;
        case 4:
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"step\":%d}}", name, i);
            rc = kctl_transport_update_status(&t, &fd_cm, doc, KCTL_NTS, &out, &st);
            break;
        case 5: /* removes, or marks one with a finalizer */
            rc = kctl_transport_remove(&t, &fd_cm, name, NULL, &out, &st);
            break;
        default: /* every other new object keeps a finalizer */
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"step\":\"%d\"}%s},\"spec\":{\"i\":%d,\"pad\":\"%s\"}}", name, i,
                     target % 2 ? "" : ",\"finalizers\":[\"example.com/keep\"]", i, pad);
            rc = kctl_memstore_apply(ms, &fd_cm, doc, KCTL_NTS, &out, &st);
            break;
        }
        after = kctl_memstore_revision(ms);
        now = fd_doc(ms, name);
        memset(&ev, 0, sizeof ev);
        if (rc == KCTL_OK) {
            nacks++;
            FD_CHECK(after == before + 1 || (after == before && fd_streq(now, prev)), "%s: an acknowledged write left revision %lld",
                     name, (long long)after);
            if (after == before + 1) { /* its event, at its revision */
                char rv[24];
                snprintf(rv, sizeof rv, "%llu", (unsigned long long)after);
                FD_CHECK(kctl_transport_watch_next(&t, w, 0, &ev, NULL) == KCTL_OK && fd_streq(ev.resource_version, rv),
                         "%s: no event for the acknowledged write at %lld", name, (long long)after);
                kctl_event_clear(&ev);
            }
            if (now && out) FD_CHECK(fd_streq(now, kctl_obj_json(out, NULL)), "%s: the store differs from the answer (%lld)", name, i);
            free(m.doc[target]);
            m.doc[target] = now;
            fprintf(acks, "ack %d %s %llu\n", i, name, (unsigned long long)after);
        } else if (rc == KCTL_ERR_IO && after == before + 1 && strstr(sc->fail ? sc->fail : "", "fsync")) {
            /* its record was written whole, then the fsync failed: the write
               was made (in memory, for watchers, in the journal) but is not
               known durable; wholly there, never half */
            char rv[24];
            nfails++;
            FD_CHECK(st.code >= 500 && st.code <= 599, "%s: a write whose fsync failed has Status code %lld", name, st.code);
            FD_CHECK(out == NULL, "%s: a write whose fsync failed answered an object (step %lld)", name, i);
            snprintf(rv, sizeof rv, "%llu", (unsigned long long)after);
            FD_CHECK(kctl_transport_watch_next(&t, w, 0, &ev, NULL) == KCTL_OK && fd_streq(ev.resource_version, rv),
                     "%s: no event for the write made at %lld", name, (long long)after);
            kctl_event_clear(&ev);
            free(m.doc[target]);
            m.doc[target] = now;
            fprintf(acks, "ack %d %s %llu\n", i, name, (unsigned long long)after); /* a restart finds it: the shim loses no written byte */
        } else {
            nfails++;
            FD_CHECK(rc == KCTL_ERR_IO, "%s: a refused write gave %lld, want IO", name, rc);
            FD_CHECK(st.code >= 500 && st.code <= 599, "%s: a refused write's Status code is %lld", name, st.code);
            FD_CHECK(after == before, "%s: a refused write moved the revision to %lld", name, (long long)after);
            FD_CHECK(fd_streq(now, prev), "%s: a refused write changed the object (step %lld)", name, i);
            FD_CHECK(out == NULL, "%s: a refused write answered an object (step %lld)", name, i);
            rc = kctl_transport_watch_next(&t, w, 0, &ev, NULL);
            FD_CHECK(rc == KCTL_ERR_AGAIN, "%s: the watch saw a refused write (%lld)", name, rc);
            kctl_event_clear(&ev);
            free(now);
            if (kind < 3) m.made--; /* the name is free again */
            fprintf(acks, "refused %d %s\n", i, name);
        }
        kctl_obj_unref(out);
        kctl_api_status_clear(&st);
    }
    /* what a restart must find */
    for (i = 0; i < m.made; i++) {
        if (m.doc[i]) fprintf(acks, "obj o%02d %s\n", i, m.doc[i]);
        else fprintf(acks, "gone o%02d\n", i);
        free(m.doc[i]);
    }
    fprintf(acks, "rev %llu\ncounts %d %d\ndone\n", (unsigned long long)kctl_memstore_revision(ms), nacks, nfails);
    fclose(acks);
    kctl_transport_watch_close(&t, w);
    kctl_memstore_destroy(ms);
    return fd_failed ? 1 : 0;
}

/* ---- the parent: a restart without the shim */
static void fd_rmtree(const char *path) {
    struct stat sb;
    DIR *d;
    struct dirent *de;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode) && (d = opendir(path)) != NULL) {
        while ((de = readdir(d)) != NULL) {
            char sub[PATH_MAX + 256];
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            fd_rmtree(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Check the store file in dir against the child's acks: 0 passed, 1 failed. */
static int fd_verify(const fd_scenario *sc, const char *dir) {
    char path[PATH_MAX + 32], line[2048];
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    kctl_list_result lr;
    struct stat sb;
    FILE *acks;
    unsigned long long rev = 0, last_ack = 0;
    int nacks = -1, nfails = -1, nobjs = 0, before = fd_failed, rc;
    bool started = false, done = false;
    snprintf(path, sizeof path, "%s/acks", dir);
    if (!(acks = fopen(path, "r"))) {
        FD_CHECK(false, "%s: the child wrote no acks (%lld)", dir, 0);
        return 1;
    }
    snprintf(path, sizeof path, "%s/store.db", dir);
    memset(&d, 0, sizeof d);
    d.path = path;
    rc = kctl_memstore_create(&d, &ms);
    FD_CHECK(rc == KCTL_OK, "the file does not load: %s (%lld)", kctl_strerror(rc), rc);
    while (ms && fgets(line, sizeof line, acks)) {
        char *nl = strchr(line, '\n'), *sp;
        if (nl) *nl = '\0';
        if (strcmp(line, "start") == 0) started = true;
        else if (strcmp(line, "done") == 0) done = true;
        else if (sscanf(line, "rev %llu", &rev) == 1) { }
        else if (sscanf(line, "ack %*d %*s %llu", &last_ack) == 1) { }
        else if (sscanf(line, "counts %d %d", &nacks, &nfails) == 2) { }
        else if (strncmp(line, "obj ", 4) == 0 && (sp = strchr(line + 4, ' ')) != NULL) {
            char *got;
            *sp = '\0';
            got = fd_doc(ms, line + 4);
            FD_CHECK(fd_streq(got, sp + 1), "%s: after the restart it is not as acknowledged (%lld)", line + 4, got != NULL);
            free(got);
            nobjs++;
        } else if (strncmp(line, "gone ", 5) == 0) {
            char *got = fd_doc(ms, line + 5);
            FD_CHECK(got == NULL, "%s: after the restart it is there, from a refused write (%lld)", line + 5, 0);
            free(got);
        }
    }
    fclose(acks);
    if (ms) {
        FD_CHECK(started && done, "the child did not finish (%s%lld)", "", 0);
        FD_CHECK(kctl_memstore_revision(ms) == rev && rev == last_ack, "the revision after the restart is %s%lld, not the last acknowledged write's",
                 "", (long long)kctl_memstore_revision(ms));
        if (sc->no_refusals) FD_CHECK(nacks > 0 && nfails == 0, "writes were refused because a snapshot failed (%s%lld refused)", "", nfails);
        else FD_CHECK(nacks > 0 && nfails > 0, "the scenario did not both acknowledge and refuse writes (%s%lld refused)", "", nfails);
        t = kctl_memstore_transport(ms);
        memset(&lr, 0, sizeof lr);
        FD_CHECK(kctl_transport_list(&t, &fd_cm, NULL, &lr, NULL) == KCTL_OK && lr.items.count == (size_t)nobjs,
                 "the restart holds %s%lld objects more or fewer than acknowledged", "", (long long)lr.items.count - nobjs);
        kctl_list_result_free(&lr);
        kctl_memstore_destroy(ms);
    }
    snprintf(path, sizeof path, "%s/store.db.tmp", dir);
    FD_CHECK(lstat(path, &sb) != 0, "a temporary file was left behind (%s%lld)", "", 0);
    return fd_failed > before;
}

static void fd_setenv(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

/* Run scenario i: 0 passed, 1 failed, 2 skipped. */
static int fd_run(const char *self, const char *shim, size_t i) {
    const fd_scenario *sc = &fd_scenarios[i];
    const char *base = getenv("TMPDIR");
    char tmpl[PATH_MAX], dir[PATH_MAX], idx[16];
    int status = 0, result;
    pid_t pid;
    snprintf(tmpl, sizeof tmpl, "%s/kctl-faultfs-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpl) || !realpath(tmpl, dir)) { /* the shim names descriptors by their real paths */
        FD_CHECK(false, "cannot make a directory under %s (%lld)", tmpl, errno);
        return 1;
    }
    snprintf(idx, sizeof idx, "%lu", (unsigned long)i);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char *args[5];
        setenv("LD_PRELOAD", shim, 1);
        fd_setenv("KCTL_FAULTFS_BUDGET", sc->budget);
        fd_setenv("KCTL_FAULTFS_FAIL", sc->fail);
        fd_setenv("KCTL_FAULTFS_EVERY", sc->every);
        fd_setenv("KCTL_FAULTFS_DISK", sc->disk);
        fd_setenv("KCTL_FAULTFS_PATHS", sc->watch_dir ? dir : NULL);
        unsetenv("KCTL_FAULTFS_LOADED");
        args[0] = (char *)(uintptr_t)self;
        args[1] = (char *)(uintptr_t)"child";
        args[2] = idx;
        args[3] = dir;
        args[4] = NULL;
        execv(self, args);
        _exit(FD_SKIP);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        FD_CHECK(false, "cannot run the child (%s%lld)", "", errno);
        fd_rmtree(dir);
        return 1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == FD_SKIP) {
        printf("faultfs: %s: skipped: %s did not load (LD_PRELOAD does not take here)\n", sc->name, shim);
        fd_rmtree(dir);
        return 2;
    }
    result = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    if (result) FD_CHECK(false, "the child failed (%sstatus %lld)", "", status);
    if (fd_verify(sc, dir)) result = 1;
    if (result) printf("faultfs: %s: the store is kept in %s\n", sc->name, dir);
    else fd_rmtree(dir);
    return result;
}

int main(int argc, char **argv) {
    char self[PATH_MAX], shim[PATH_MAX], guess[PATH_MAX + 32];
    const char *env = getenv("KCTL_FAULTFS_SO");
    int passed = 0, failed = 0, skipped = 0;
    size_t i;
    ssize_t k;
    if (argc == 4 && strcmp(argv[1], "child") == 0) {
        unsigned long n = strtoul(argv[2], NULL, 10);
        return n < FD_NSCENARIOS ? fd_child(&fd_scenarios[n], argv[3]) : 2;
    }
    k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k > 0) self[k] = '\0';
    else snprintf(self, sizeof self, "%s", argv[0]);
    if (env && *env) {
        snprintf(guess, sizeof guess, "%s", env);
    } else {
        const char *slash = strrchr(self, '/');
        snprintf(guess, sizeof guess, "%.*s/libkctl-faultfs.so", slash ? (int)(slash - self) : 1, slash ? self : ".");
    }
#ifdef FD_SANITIZED
    printf("faultfs: skipped: a sanitizer's runtime must be preloaded first, so the shim cannot be\n");
    skipped = (int)FD_NSCENARIOS;
#else
    if (!realpath(guess, shim)) {
        printf("faultfs: skipped: no shim at %s (build it: make build/libkctl-faultfs.so, or set KCTL_FAULTFS_SO)\n", guess);
        skipped = (int)FD_NSCENARIOS;
    } else {
        for (i = 0; i < FD_NSCENARIOS; i++) {
            int r = fd_run(self, shim, i);
            if (r == 0) passed++;
            else if (r == 1) failed++;
            else skipped++;
        }
    }
#endif
    if (skipped) printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
