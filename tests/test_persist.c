/* test_persist.c - the memstore's file: what is there but cannot be read
   is never a first start; a write stands only once it is saved; a file
   loads only when every object in it is one a write could have made, and
   what loads saves and loads again the same. (Writes that fail inside
   write(), fsync() and rename() are tested by tests/faultfs_driver.c.) */
#include "kt.h"
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/resource.h>
#ifndef KCTL_NO_THREADS
#include <pthread.h>
#endif

static const kctl_resource tp_cm = { "", "v1", "configmaps", "prod" };

/* ---- files and directories */

/* A new directory of its own under TMPDIR (or /tmp) into dir. */
static bool tp_mkdtemp(char *dir, size_t cap) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, cap, "%s/kctl-persist-XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(dir)) return true;
    kt_fail(__FILE__, __LINE__, "mkdtemp(%s): %s", dir, strerror(errno));
    return false;
}

/* Remove path and, for a directory, everything in it (links are not followed). */
static void tp_rmtree(const char *path) {
    struct stat sb;
    DIR *d;
    struct dirent *de;
    if (lstat(path, &sb) != 0) return;
    if (!S_ISDIR(sb.st_mode)) {
        unlink(path);
        return;
    }
    if ((d = opendir(path)) != NULL) {
        while ((de = readdir(d)) != NULL) {
            char sub[1024];
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            tp_rmtree(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

/* The bytes of the file at path (malloc'd, NUL-terminated), or NULL. */
static char *tp_slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, k;
    *len = 0;
    if (!f) return NULL;
    do {
        if (cap - n < 4096) {
            char *nb = (char *)realloc(buf, cap += 65536);
            if (!nb) break;
            buf = nb;
        }
        k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
    } while (k > 0);
    fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

static bool tp_spit(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) kt_fail(__FILE__, __LINE__, "cannot write %s", path);
    return ok;
}

/* Whether the file at path holds exactly data[0..len). */
static bool tp_file_is(const char *path, const char *data, size_t len) {
    size_t n;
    char *got = tp_slurp(path, &n);
    bool same = got && n == len && memcmp(got, data, len) == 0;
    free(got);
    return same;
}

/* ---- store files made by hand, with the loader's FNV-1a 64 trailer */
static uint64_t tp_fnv64(const char *p, size_t n) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* A file: header (NULL: "kctl-memstore 1 5 2 <n>\n"), then each object
   "<rid> <bytes>\n<doc>\n" (rids[i], docs[i]), then the trailer. Its length. */
static size_t tp_store_file(char *buf, size_t cap, const char *header, const char *const *rids, const char *const *docs, size_t n) {
    size_t len, i;
    if (header) len = (size_t)snprintf(buf, cap, "%s", header);
    else len = (size_t)snprintf(buf, cap, "kctl-memstore 1 5 2 %lu\n", (unsigned long)n);
    for (i = 0; i < n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s %lu\n%s\n", rids[i], (unsigned long)strlen(docs[i]), docs[i]);
    if (len < cap) len += (size_t)snprintf(buf + len, cap - len, "end %016llx\n", (unsigned long long)tp_fnv64(buf, len));
    if (len >= cap) kt_fail(__FILE__, __LINE__, "store file too long for the buffer");
    return len;
}

/* ---- stores */
static int tp_create(const char *path, bool save_on_write, kt_alloc *a, kctl_memstore **ms) {
    kctl_memstore_desc d;
    memset(&d, 0, sizeof d);
    kt_alloc_init(a);
    d.allocator = kt_allocator(a);
    d.path = path;
    d.save_on_write = save_on_write;
    *ms = NULL;
    return kctl_memstore_create(&d, ms);
}

static void tp_destroy(kctl_memstore *ms, kt_alloc *a) {
    kctl_memstore_destroy(ms);
    KT_EQ_INT(a->live, 0);
}

/* The document of ns-prod configmap name in ms, or NULL (malloc'd). */
static char *tp_doc(kctl_memstore *ms, const kctl_resource *res, const char *name) {
    kctl_obj *o = NULL;
    char *copy = NULL;
    size_t len;
    if (kctl_memstore_get(ms, res, name, &o, NULL) == KCTL_OK && o) {
        const char *doc = kctl_obj_json(o, &len);
        if ((copy = (char *)malloc(len + 1)) != NULL) memcpy(copy, doc, len + 1);
    }
    kctl_obj_unref(o);
    return copy;
}

/* Whether two stores hold the same objects of res under names[0..n)
   (byte-identical documents) and the same revision. */
static bool tp_same_stores(kctl_memstore *a, kctl_memstore *b, const kctl_resource *res, const char *const *names, size_t n) {
    kctl_transport ta = kctl_memstore_transport(a), tb = kctl_memstore_transport(b);
    kctl_list_result la, lb;
    size_t i;
    bool same = kctl_memstore_revision(a) == kctl_memstore_revision(b);
    for (i = 0; i < n; i++) {
        char *x = tp_doc(a, res, names[i]), *y = tp_doc(b, res, names[i]);
        if (!x || !y || strcmp(x, y) != 0) same = false;
        free(x);
        free(y);
    }
    memset(&la, 0, sizeof la);
    memset(&lb, 0, sizeof lb);
    if (kctl_transport_list(&ta, res, NULL, &la, NULL) != KCTL_OK || kctl_transport_list(&tb, res, NULL, &lb, NULL) != KCTL_OK ||
        la.items.count != lb.items.count || la.items.count != n)
        same = false;
    kctl_list_result_free(&la);
    kctl_list_result_free(&lb);
    return same;
}

/* ---- 2.1: what is there but cannot be read is not a first start */

/* Create a store at path (save_on_write) and expect IO, nothing made.
   Should it open, the next write shows what would follow: a save over
   whatever was there. */
static void tp_expect_io(const char *what, const char *path, int line) {
    kt_alloc a;
    kctl_memstore *ms = NULL;
    int rc = tp_create(path, true, &a, &ms);
    if (rc != KCTL_ERR_IO) kt_fail(__FILE__, line, "%s: kctl_memstore_create gave %d (%s), want IO", what, rc, kctl_strerror(rc));
    if (ms) {
        kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"after\"}}", KCTL_NTS, NULL, NULL);
        kctl_memstore_destroy(ms);
    }
    if (a.live != 0) kt_fail(__FILE__, line, "%s: %ld blocks left", what, a.live);
}

/* A store file with two objects, saved by a store; its bytes in *bytes. */
static bool tp_seed(const char *path, char **bytes, size_t *len) {
    kt_alloc a;
    kctl_memstore *ms = NULL;
    *bytes = NULL;
    if (tp_create(path, true, &a, &ms) != KCTL_OK || !ms) {
        kt_fail(__FILE__, __LINE__, "cannot create %s", path);
        return false;
    }
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"one\",\"labels\":{\"app\":\"web\"}},\"spec\":{\"n\":1}}",
                                  KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"two\",\"finalizers\":[\"example.com/keep\"]}}", KCTL_NTS, NULL, NULL),
              KCTL_OK);
    tp_destroy(ms, &a);
    *bytes = tp_slurp(path, len);
    return *bytes != NULL;
}

static void tp_link_loop_dir_notdir(void) {
    char dir[256], path[320], other[320], plain[320], under[340], link[320], inside[340], got[64];
    char *bytes = NULL;
    size_t len = 0;
    struct stat sb;
    ssize_t k;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/loop.db", dir);
    snprintf(other, sizeof other, "%s/loop2.db", dir);
    /* a loop of links (ELOOP): both stay as they were */
    KT_EQ_INT(symlink("loop2.db", path), 0);
    KT_EQ_INT(symlink("loop.db", other), 0);
    tp_expect_io("a loop of links", path, __LINE__);
    k = readlink(path, got, sizeof got - 1);
    KT_CHECK(k == 8 && memcmp(got, "loop2.db", 8) == 0);
    k = readlink(other, got, sizeof got - 1);
    KT_CHECK(k == 7 && memcmp(got, "loop.db", 7) == 0);
    /* a directory (read gives EISDIR): still a directory, its file kept */
    snprintf(path, sizeof path, "%s/isdir.db", dir);
    snprintf(inside, sizeof inside, "%s/keep", path);
    KT_EQ_INT(mkdir(path, 0700), 0);
    tp_spit(inside, "x", 1);
    tp_expect_io("a directory", path, __LINE__);
    KT_CHECK(lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
    KT_CHECK(tp_file_is(inside, "x", 1));
    /* a path under a regular file (ENOTDIR): the file is untouched */
    snprintf(plain, sizeof plain, "%s/plain", dir);
    snprintf(under, sizeof under, "%s/store.db", plain);
    if (tp_seed(plain, &bytes, &len)) {
        tp_expect_io("a path under a regular file", under, __LINE__);
        KT_CHECK(tp_file_is(plain, bytes, len));
    }
    /* a link to nothing is there: not a first start (a save would put a
       file in the link's place, beside where the store lives) */
    snprintf(link, sizeof link, "%s/dangling.db", dir);
    KT_EQ_INT(symlink("missing/store.db", link), 0);
    tp_expect_io("a link to nothing", link, __LINE__);
    k = readlink(link, got, sizeof got - 1);
    KT_CHECK(k == 16 && memcmp(got, "missing/store.db", 16) == 0);
    free(bytes);
    tp_rmtree(dir);
}

/* No descriptor left (EMFILE): IO, not an empty store that the next
   save writes over the file. The limit is lowered only around the create
   and put back before any check. */
static void tp_no_descriptors(void) {
    char dir[256], path[320];
    char *bytes = NULL;
    size_t len = 0;
    struct rlimit old, low;
    kt_alloc a;
    kctl_memstore *ms = NULL;
    int fd, rc, restored;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    if (!tp_seed(path, &bytes, &len)) {
        tp_rmtree(dir);
        return;
    }
    if (getrlimit(RLIMIT_NOFILE, &old) != 0 || (fd = open(path, O_RDONLY)) < 0) {
        free(bytes);
        tp_rmtree(dir);
        KT_SKIP();
    }
    close(fd); /* the lowest free descriptor: with the limit there, no open works */
    low = old;
    low.rlim_cur = (rlim_t)fd;
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) {
        free(bytes);
        tp_rmtree(dir);
        KT_SKIP();
    }
    rc = tp_create(path, true, &a, &ms);
    if (ms) kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"after\"}}", KCTL_NTS, NULL, NULL);
    restored = setrlimit(RLIMIT_NOFILE, &old);
    KT_EQ_INT(restored, 0);
    KT_EQ_INT(rc, KCTL_ERR_IO);
    KT_CHECK(ms == NULL);
    if (ms) tp_destroy(ms, &a); /* the old store's answer: an empty store, then a save over the file */
    KT_EQ_INT(a.live, 0);
    KT_CHECK(tp_file_is(path, bytes, len));
    /* descriptors back: the same file loads whole */
    KT_EQ_INT(tp_create(path, true, &a, &ms), KCTL_OK);
    if (ms) {
        KT_EQ_U64(kctl_memstore_revision(ms), 2);
        tp_destroy(ms, &a);
    }
    free(bytes);
    tp_rmtree(dir);
}

/* kctl_memstore_create at path in a child process that an alarm ends
   after 20 s: 0 when it gave IO, 1 OK, 2 anything else, -1 when it hung
   or crashed. */
static int tp_create_in_child(const char *path) {
    int status = 0;
    pid_t pid;
    KT_NEED_MEMSTORE();
    fflush(stdout);
    pid = fork();
    if (pid < 0) return -2;
    if (pid == 0) {
        kctl_memstore_desc d;
        kctl_memstore *ms = NULL;
        int rc;
        alarm(20);
        memset(&d, 0, sizeof d);
        d.path = path;
        rc = kctl_memstore_create(&d, &ms);
        kctl_memstore_destroy(ms);
        _exit(rc == KCTL_ERR_IO ? 0 : rc == KCTL_OK ? 1 : 2);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

/* Something that is no regular file: a FIFO is not waited on (nobody
   writes it), a device is not read (/dev/zero never ends). */
static void tp_not_a_regular_file(void) {
    char dir[256], fifo[320], dev[320];
    struct stat sb;
    int rc;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(fifo, sizeof fifo, "%s/fifo.db", dir);
    snprintf(dev, sizeof dev, "%s/zero.db", dir);
    if (mkfifo(fifo, 0600) == 0) {
        rc = tp_create_in_child(fifo);
        if (rc != 0) kt_fail(__FILE__, __LINE__, "a FIFO: child result %d (-1: hung), want 0 (IO)", rc);
        KT_CHECK(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    }
    if (stat("/dev/zero", &sb) == 0 && symlink("/dev/zero", dev) == 0) {
        rc = tp_create_in_child(dev);
        if (rc != 0) kt_fail(__FILE__, __LINE__, "/dev/zero: child result %d (-1: hung), want 0 (IO)", rc);
    }
    tp_rmtree(dir);
}

/* A truncated or corrupt file is PROTO and left as it was, at every
   length and with any one byte changed. */
static void tp_truncated_corrupt(void) {
    char dir[256], path[320];
    char *bytes = NULL, *bad;
    size_t len = 0, i;
    int wrong = 0;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    if (!tp_seed(path, &bytes, &len) || !(bad = (char *)malloc(len))) {
        free(bytes);
        tp_rmtree(dir);
        return;
    }
    for (i = 0; i < 2 * len && wrong < 5; i++) {
        kt_alloc a;
        kctl_memstore *ms = NULL;
        size_t n = i < len ? i : len; /* first every shorter length, then every byte changed */
        int rc;
        memcpy(bad, bytes, len);
        if (i >= len) bad[i - len] ^= (char)(i & 1 ? 0x01 : 0x40);
        if (!tp_spit(path, bad, n)) break;
        rc = tp_create(path, true, &a, &ms);
        if (rc != KCTL_ERR_PROTO || ms || a.live || !tp_file_is(path, bad, n)) {
            kt_fail(__FILE__, __LINE__, "%s %lu: create gave %d, %ld blocks live", i < len ? "cut at" : "byte changed at",
                    (unsigned long)(i < len ? i : i - len), rc, a.live);
            wrong++;
        }
        kctl_memstore_destroy(ms);
    }
    /* whole again: it loads */
    if (tp_spit(path, bytes, len)) {
        kt_alloc a;
        kctl_memstore *ms = NULL;
        KT_EQ_INT(tp_create(path, true, &a, &ms), KCTL_OK);
        if (ms) tp_destroy(ms, &a);
    }
    free(bad);
    free(bytes);
    tp_rmtree(dir);
}

/* A path that is a link (as a read-only root file system links into a
   data partition): loaded through it, and saved through it, so the link
   stays a link and the file it names gets the writes. */
static void tp_linked_path(void) {
    char dir[256], real[320], link[320], link2[320], tmp[330], got[64];
    kt_alloc a;
    kctl_memstore *ms = NULL;
    struct stat sb;
    ssize_t k;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(real, sizeof real, "%s/real.db", dir);
    snprintf(link, sizeof link, "%s/link.db", dir);
    snprintf(link2, sizeof link2, "%s/link2.db", dir);
    snprintf(tmp, sizeof tmp, "%s/link2.db.tmp", dir);
    KT_EQ_INT(symlink("real.db", link), 0);
    KT_EQ_INT(symlink(link, link2), 0); /* absolute, then relative */
    KT_EQ_INT(tp_create(real, true, &a, &ms), KCTL_OK);
    if (ms) {
        KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
        tp_destroy(ms, &a);
    }
    KT_EQ_INT(tp_create(link2, true, &a, &ms), KCTL_OK);
    if (ms) {
        KT_EQ_U64(kctl_memstore_revision(ms), 1);
        KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
        KT_EQ_INT(kctl_memstore_save(ms), KCTL_OK);
        tp_destroy(ms, &a);
    }
    KT_CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    KT_CHECK(lstat(link2, &sb) == 0 && S_ISLNK(sb.st_mode));
    k = readlink(link, got, sizeof got - 1);
    KT_CHECK(k == 7 && memcmp(got, "real.db", 7) == 0);
    KT_CHECK(lstat(tmp, &sb) != 0); /* the temporary file is beside the file, not the link */
    KT_EQ_INT(tp_create(real, true, &a, &ms), KCTL_OK);
    if (ms) {
        char *doc = tp_doc(ms, &tp_cm, "b");
        KT_EQ_U64(kctl_memstore_revision(ms), 2);
        KT_CHECK(doc != NULL);
        free(doc);
        tp_destroy(ms, &a);
    }
    tp_rmtree(dir);
}

/* ---- 2.2 without faults in the system calls: a save that cannot be
   made (its temporary file's name is taken by a directory) leaves every
   kind of write unmade, in memory, in the file and for watchers. */
static void tp_expect_unmade(kctl_memstore *ms, kctl_transport *t, kctl_watch *w, const char *what, int rc, kctl_api_status *st,
                             const char *name, const char *doc_before, int line) {
    kctl_event ev;
    char *doc = tp_doc(ms, &tp_cm, name);
    if (rc != KCTL_ERR_IO) kt_fail(__FILE__, line, "%s: gave %d, want IO", what, rc);
    if (st->code < 500 || st->code > 599) kt_fail(__FILE__, line, "%s: Status code %d, want 5xx", what, st->code);
    if (kctl_memstore_revision(ms) != 2) kt_fail(__FILE__, line, "%s: revision %llu, want 2", what,
                                                 (unsigned long long)kctl_memstore_revision(ms));
    if (doc_before ? !doc || strcmp(doc, doc_before) != 0 : doc != NULL)
        kt_fail(__FILE__, line, "%s: %s is now %s", what, name, doc ? doc : "gone");
    memset(&ev, 0, sizeof ev);
    rc = kctl_transport_watch_next(t, w, 0, &ev, NULL);
    if (rc != KCTL_ERR_AGAIN) kt_fail(__FILE__, line, "%s: the watch got %d (event %d)", what, rc, ev.type);
    kctl_event_clear(&ev);
    kctl_api_status_clear(st);
    free(doc);
}

static void tp_failed_save_unmade(void) {
    char dir[256], path[320], tmp[330];
    char *a0 = NULL, *b0 = NULL, *c1 = NULL;
    kt_alloc al;
    kctl_memstore *ms = NULL;
    kctl_transport t;
    kctl_watch *w = NULL;
    kctl_api_status st;
    kctl_obj *o = NULL;
    kctl_event ev;
    const char *names[3] = { "a", "b", "c" };
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    memset(&st, 0, sizeof st);
    KT_EQ_INT(tp_create(path, true, &al, &ms), KCTL_OK);
    if (!ms) {
        tp_rmtree(dir);
        return;
    }
    t = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"example.com/keep\"]},\"spec\":{\"n\":1}}",
                                  KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"n\":1}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    a0 = tp_doc(ms, &tp_cm, "a");
    b0 = tp_doc(ms, &tp_cm, "b");
    KT_EQ_INT(kctl_transport_watch_open(&t, &tp_cm, NULL, "2", &w, NULL), KCTL_OK);
    KT_EQ_INT(mkdir(tmp, 0700), 0); /* every save fails from here */
    if (!w || !a0 || !b0) goto out;
    tp_expect_unmade(ms, &t, w, "apply (create)", kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"c\"}}", KCTL_NTS, &o, &st),
                     &st, "c", NULL, __LINE__);
    KT_CHECK(o == NULL);
    tp_expect_unmade(ms, &t, w, "transport create", kctl_transport_create(&t, &tp_cm, "{\"metadata\":{\"name\":\"c\"}}", KCTL_NTS, &o, &st),
                     &st, "c", NULL, __LINE__);
    KT_CHECK(o == NULL);
    tp_expect_unmade(ms, &t, w, "apply (replace)",
                     kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"example.com/keep\"]},\"spec\":{\"n\":2}}",
                                         KCTL_NTS, NULL, &st), &st, "a", a0, __LINE__);
    tp_expect_unmade(ms, &t, w, "update",
                     kctl_transport_update(&t, &tp_cm, "{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"2\"},\"spec\":{\"n\":2}}", KCTL_NTS,
                                  NULL, &st), &st, "b", b0, __LINE__);
    tp_expect_unmade(ms, &t, w, "update_status",
                     kctl_transport_update_status(&t, &tp_cm, "{\"metadata\":{\"name\":\"b\"},\"status\":{\"ok\":true}}", KCTL_NTS, NULL, &st),
                     &st, "b", b0, __LINE__);
    tp_expect_unmade(ms, &t, w, "patch", kctl_transport_patch(&t, &tp_cm, "b", "{\"spec\":{\"n\":3}}", KCTL_NTS, 0, NULL, &st), &st, "b",
                     b0, __LINE__);
    tp_expect_unmade(ms, &t, w, "delete (removes)", kctl_memstore_delete(ms, &tp_cm, "b", &st), &st, "b", b0, __LINE__);
    tp_expect_unmade(ms, &t, w, "delete (marks)", kctl_memstore_delete(ms, &tp_cm, "a", &st), &st, "a", a0, __LINE__);
    tp_expect_unmade(ms, &t, w, "update removing the last finalizer",
                     kctl_transport_update(&t, &tp_cm, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"n\":1}}", KCTL_NTS, NULL, &st), &st, "a", a0,
                     __LINE__);
    KT_EQ_INT(kctl_memstore_save(ms), KCTL_ERR_IO);
    /* the space is back: the next write takes revision 3 and the next uid */
    KT_EQ_INT(rmdir(tmp), 0);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"c\"}}", KCTL_NTS, &o, NULL), KCTL_OK);
    if (o) {
        KT_EQ_STR(kctl_obj_resource_version(o), "3");
        KT_EQ_STR(kctl_obj_uid(o), "00000000-0000-4000-8000-000000000003");
        kctl_obj_unref(o);
    }
    memset(&ev, 0, sizeof ev);
    KT_EQ_INT(kctl_transport_watch_next(&t, w, 0, &ev, NULL), KCTL_OK);
    KT_EQ_INT(ev.type, KCTL_EVENT_ADDED);
    KT_EQ_STR(ev.resource_version, "3");
    kctl_event_clear(&ev);
    c1 = tp_doc(ms, &tp_cm, "c");
    kctl_transport_watch_close(&t, w);
    w = NULL;
    { /* a restart reads exactly what was acknowledged */
        kt_alloc al2;
        kctl_memstore *again = NULL;
        KT_EQ_INT(tp_create(path, true, &al2, &again), KCTL_OK);
        if (again) {
            KT_CHECK(tp_same_stores(ms, again, &tp_cm, names, 3));
            tp_destroy(again, &al2);
        }
    }
out:
    if (w) kctl_transport_watch_close(&t, w);
    tp_destroy(ms, &al);
    rmdir(tmp);
    free(a0);
    free(b0);
    free(c1);
    tp_rmtree(dir);
}

/* ---- 2.3: a file loads only when a write could have made each object */
#define TP_UID1 "00000000-0000-4000-8000-000000000001"
#define TP_UID2 "00000000-0000-4000-8000-000000000002"
#define TP_OK_MD "\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"3\",\"generation\":1"
#define TP_DOC(md) "{\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\"," md "},\"spec\":{\"n\":1}}"
#define TP_GOOD TP_DOC(TP_OK_MD)
#define TP_DB "{\"metadata\":{\"name\":\"db\",\"namespace\":\"prod\",\"uid\":\"" TP_UID2 "\",\"resourceVersion\":\"4\",\"generation\":2}}"

typedef struct tp_bad {
    const char *what;
    const char *header;     /* NULL: "kctl-memstore 1 5 2 <objects>" */
    const char *rid, *doc;  /* the object */
    const char *rid2, *doc2; /* a second object, or NULL */
} tp_bad;

static const tp_bad tp_bads[] = {
    { "an uppercase name", NULL, "/configmaps", "{\"metadata\":{\"name\":\"Web\"," TP_OK_MD "}}", NULL, NULL },
    { "a name with '/'", NULL, "/configmaps", "{\"metadata\":{\"name\":\"a/b\"," TP_OK_MD "}}", NULL, NULL },
    { "a name with a space", NULL, "/configmaps", "{\"metadata\":{\"name\":\"a b\"," TP_OK_MD "}}", NULL, NULL },
    { "a name of 254 characters", NULL, "/configmaps",
      "{\"metadata\":{\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
      TP_OK_MD "}}", NULL, NULL },
    { "no name", NULL, "/configmaps", "{\"metadata\":{" TP_OK_MD "}}", NULL, NULL },
    { "an uppercase namespace", NULL, "/configmaps", "{\"metadata\":{\"name\":\"web\",\"namespace\":\"Prod\"," TP_OK_MD "}}", NULL, NULL },
    { "a namespace with a dot", NULL, "/configmaps", "{\"metadata\":{\"name\":\"web\",\"namespace\":\"a.b\"," TP_OK_MD "}}", NULL, NULL },
    { "a namespace that is no string", NULL, "/configmaps", "{\"metadata\":{\"name\":\"web\",\"namespace\":7," TP_OK_MD "}}", NULL, NULL },
    { "a label key", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"labels\":{\"-app\":\"web\"}"), NULL, NULL },
    { "a label value", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"labels\":{\"app\":\"a b\"}"), NULL, NULL },
    { "a label value of 64 characters", NULL, "/configmaps",
      TP_DOC(TP_OK_MD ",\"labels\":{\"app\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}"), NULL, NULL },
    { "a label that is no string", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"labels\":{\"app\":1}"), NULL, NULL },
    { "an annotation key", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"annotations\":{\"a/b/c\":\"x\"}"), NULL, NULL },
    { "a finalizer", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"finalizers\":[\"-x\"]"), NULL, NULL },
    { "an owner reference without uid", NULL, "/configmaps",
      TP_DOC(TP_OK_MD ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"n\"}]"), NULL, NULL },
    { "two controller owners", NULL, "/configmaps",
      TP_DOC(TP_OK_MD ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"A\",\"name\":\"a\",\"uid\":\"1\",\"controller\":true},"
             "{\"apiVersion\":\"v1\",\"kind\":\"B\",\"name\":\"b\",\"uid\":\"2\",\"controller\":true}]"), NULL, NULL },
    { "NUL in the name", NULL, "/configmaps", "{\"metadata\":{\"name\":\"we\\u0000b\"," TP_OK_MD "}}", NULL, NULL },
    { "NUL in the namespace", NULL, "/configmaps", "{\"metadata\":{\"name\":\"web\",\"namespace\":\"pr\\u0000od\"," TP_OK_MD "}}", NULL, NULL },
    { "NUL in the uid", NULL, "/configmaps", TP_DOC("\"uid\":\"x\\u0000y\",\"resourceVersion\":\"3\",\"generation\":1"), NULL, NULL },
    { "NUL in a label value", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"labels\":{\"app\":\"w\\u0000b\"}"), NULL, NULL },
    { "NUL in an annotation value", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"annotations\":{\"note\":\"a\\u0000b\"}"), NULL, NULL },
    { "NUL in a finalizer", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"finalizers\":[\"a\\u0000b\"]"), NULL, NULL },
    { "NUL in an owner's name", NULL, "/configmaps",
      TP_DOC(TP_OK_MD ",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"n\\u0000\",\"uid\":\"1\"}]"), NULL, NULL },
    { "NUL in the kind", NULL, "/configmaps", "{\"kind\":\"Config\\u0000Map\",\"metadata\":{\"name\":\"web\"," TP_OK_MD "}}", NULL, NULL },
    { "a resourceVersion that is no number", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"abc\",\"generation\":1"), NULL, NULL },
    { "a resourceVersion with a tail", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"3a\",\"generation\":1"), NULL, NULL },
    { "a resourceVersion with a leading zero", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"03\",\"generation\":1"), NULL, NULL },
    { "an empty resourceVersion", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"\",\"generation\":1"), NULL, NULL },
    { "no resourceVersion", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"generation\":1"), NULL, NULL },
    { "resourceVersion 0", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"0\",\"generation\":1"), NULL, NULL },
    { "a resourceVersion that is a JSON number", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":3,\"generation\":1"), NULL, NULL },
    { "a resourceVersion above the file's revision", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"6\",\"generation\":1"), NULL, NULL },
    { "no uid", NULL, "/configmaps", TP_DOC("\"resourceVersion\":\"3\",\"generation\":1"), NULL, NULL },
    { "an empty uid", NULL, "/configmaps", TP_DOC("\"uid\":\"\",\"resourceVersion\":\"3\",\"generation\":1"), NULL, NULL },
    { "a uid the sequence has not reached", NULL, "/configmaps",
      TP_DOC("\"uid\":\"00000000-0000-4000-8000-000000000003\",\"resourceVersion\":\"3\",\"generation\":1"), NULL, NULL },
    { "uid number 0", NULL, "/configmaps", TP_DOC("\"uid\":\"00000000-0000-4000-8000-000000000000\",\"resourceVersion\":\"3\",\"generation\":1"), NULL, NULL },
    { "generation 0", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"3\",\"generation\":0"), NULL, NULL },
    { "no generation", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"3\""), NULL, NULL },
    { "a negative generation", NULL, "/configmaps", TP_DOC("\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"3\",\"generation\":-1"), NULL, NULL },
    { "a deletionTimestamp without finalizers", NULL, "/configmaps", TP_DOC(TP_OK_MD ",\"deletionTimestamp\":\"2024-01-01T00:00:00Z\""), NULL, NULL },
    { "the same object twice", NULL, "/configmaps", TP_GOOD, "/configmaps", TP_DOC("\"uid\":\"" TP_UID2 "\",\"resourceVersion\":\"4\",\"generation\":1") },
    { "two objects with one uid", NULL, "/configmaps", TP_GOOD, "/configmaps",
      "{\"metadata\":{\"name\":\"db\",\"namespace\":\"prod\",\"uid\":\"" TP_UID1 "\",\"resourceVersion\":\"4\",\"generation\":1}}" },
    { "two objects with one foreign uid", NULL, "/configmaps",
      TP_DOC("\"uid\":\"6b1f0f4e-1c1e-4a52-9d3e-0e6f2d0c9a11\",\"resourceVersion\":\"3\",\"generation\":1"), "/secrets",
      TP_DOC("\"uid\":\"6b1f0f4e-1c1e-4a52-9d3e-0e6f2d0c9a11\",\"resourceVersion\":\"4\",\"generation\":1") },
    { "two objects with one resourceVersion", NULL, "/configmaps", TP_GOOD, "/configmaps",
      "{\"metadata\":{\"name\":\"db\",\"namespace\":\"prod\",\"uid\":\"" TP_UID2 "\",\"resourceVersion\":\"3\",\"generation\":1}}" },
    { "metadata twice", NULL, "/configmaps", "{\"metadata\":{\"name\":\"x\"},\"metadata\":{\"name\":\"web\"," TP_OK_MD "}}", NULL, NULL },
    { "the name twice", NULL, "/configmaps", "{\"metadata\":{\"name\":\"Bad\",\"name\":\"web\"," TP_OK_MD "}}", NULL, NULL },
    { "the uid twice", NULL, "/configmaps", TP_DOC("\"uid\":\"x\"," TP_OK_MD), NULL, NULL },
    { "the name twice, once escaped", NULL, "/configmaps", "{\"metadata\":{\"name\":\"web\",\"\\u006eame\":\"web\"," TP_OK_MD "}}", NULL, NULL },
    { "spec twice", NULL, "/configmaps", "{\"spec\":{},\"metadata\":{\"name\":\"web\"," TP_OK_MD "},\"spec\":{}}", NULL, NULL },
    { "a document that is no object", NULL, "/configmaps", "[1,2]", NULL, NULL },
    { "metadata that is no object", NULL, "/configmaps", "{\"metadata\":[]}", NULL, NULL },
    { "a document that is no JSON", NULL, "/configmaps", "{\"metadata\":{\"name\":\"web\"," TP_OK_MD "}", NULL, NULL },
    { "a resource without group part", NULL, "configmaps", TP_GOOD, NULL, NULL },
    { "a resource of three parts", NULL, "a/b/configmaps", TP_GOOD, NULL, NULL },
    { "an empty resource", NULL, "apps/", TP_GOOD, NULL, NULL },
    { "a resource of '/' alone", NULL, "/", TP_GOOD, NULL, NULL },
    { "a resource with '|'", NULL, "/config|maps", TP_GOOD, NULL, NULL },
    { "a resource with a control byte", NULL, "/config\tmaps", TP_GOOD, NULL, NULL },
    { "format version 2", "kctl-memstore 2 5 2 1\n", "/configmaps", TP_GOOD, NULL, NULL },
    { "a revision with a leading zero", "kctl-memstore 1 05 2 1\n", "/configmaps", TP_GOOD, NULL, NULL },
    { "a negative revision", "kctl-memstore 1 -5 2 1\n", "/configmaps", TP_GOOD, NULL, NULL },
    { "a revision past 2^63 - 1", "kctl-memstore 1 9223372036854775808 2 1\n", "/configmaps", TP_GOOD, NULL, NULL },
    { "a revision past 2^64", "kctl-memstore 1 18446744073709551621 2 1\n", "/configmaps", TP_GOOD, NULL, NULL },
    { "two spaces in the header", "kctl-memstore 1  5 2 1\n", "/configmaps", TP_GOOD, NULL, NULL },
    { "a header without its newline", "kctl-memstore 1 5 2 1 ", "/configmaps", TP_GOOD, NULL, NULL },
    { "a count one too many", "kctl-memstore 1 5 2 2\n", "/configmaps", TP_GOOD, NULL, NULL },
    { "a count one too few", "kctl-memstore 1 5 2 1\n", "/configmaps", TP_GOOD, "/configmaps", TP_DB },
};

/* Bytes whose object lines or trailer are wrong (built by hand). */
static void tp_bad_framing(const char *dir) {
    static const char good[] = TP_GOOD;
    char path[320], buf[2048];
    size_t len, glen = strlen(good), k;
    int v;
    snprintf(path, sizeof path, "%s/framing.db", dir);
    for (v = 0; v < 7; v++) {
        kt_alloc a;
        kctl_memstore *ms = NULL;
        int rc;
        switch (v) {
        case 0: len = (size_t)snprintf(buf, sizeof buf, "kctl-memstore 1 5 2 1\n/configmaps %lu\n%s\n", (unsigned long)glen - 1, good); break;
        case 1: len = (size_t)snprintf(buf, sizeof buf, "kctl-memstore 1 5 2 1\n/configmaps %lu\n%s\n", (unsigned long)glen + 1, good); break;
        case 2: len = (size_t)snprintf(buf, sizeof buf, "kctl-memstore 1 5 2 1\n/configmaps 0%lu\n%s\n", (unsigned long)glen, good); break;
        case 3: len = (size_t)snprintf(buf, sizeof buf, "kctl-memstore 1 5 2 1\n/configmaps %lu\n%s\nextra\n", (unsigned long)glen, good); break;
        case 6: /* a NUL inside the resource */
            len = (size_t)snprintf(buf, sizeof buf, "kctl-memstore 1 5 2 1\n/configmaps %lu\n%s\n", (unsigned long)glen, good);
            buf[29] = '\0';
            break;
        default: len = (size_t)snprintf(buf, sizeof buf, "kctl-memstore 1 5 2 1\n/configmaps %lu\n%s\n", (unsigned long)glen, good); break;
        }
        if (v == 5) { /* the right sum in uppercase hex */
            len += (size_t)snprintf(buf + len, sizeof buf - len, "end %016llX\n", (unsigned long long)tp_fnv64(buf, len));
            for (k = len - 17; k < len - 1; k++) if (buf[k] >= 'A' && buf[k] <= 'F') break;
            if (k == len - 1) continue; /* all digits: no case to change */
        } else if (v == 4) { /* a sum of 15 digits and a space */
            len += (size_t)snprintf(buf + len, sizeof buf - len, "end %015llx \n", (unsigned long long)tp_fnv64(buf, len) >> 4);
        } else {
            len += (size_t)snprintf(buf + len, sizeof buf - len, "end %016llx\n", (unsigned long long)tp_fnv64(buf, len));
        }
        if (!tp_spit(path, buf, len)) return;
        rc = tp_create(path, true, &a, &ms);
        if (rc != KCTL_ERR_PROTO || ms || a.live) kt_fail(__FILE__, __LINE__, "framing %d: create gave %d", v, rc);
        if (!tp_file_is(path, buf, len)) kt_fail(__FILE__, __LINE__, "framing %d: the file changed", v);
        kctl_memstore_destroy(ms);
    }
}

static void tp_loader_refuses(void) {
    char dir[256], path[320];
    char *buf = (char *)malloc(8192);
    size_t i;
    if (!buf || !tp_mkdtemp(dir, sizeof dir)) {
        free(buf);
        return;
    }
    snprintf(path, sizeof path, "%s/store.db", dir);
    for (i = 0; i < sizeof tp_bads / sizeof tp_bads[0]; i++) {
        const tp_bad *b = &tp_bads[i];
        const char *rids[2], *docs[2];
        kt_alloc a;
        kctl_memstore *ms = NULL;
        size_t len;
        int rc;
        rids[0] = b->rid;
        docs[0] = b->doc;
        rids[1] = b->rid2;
        docs[1] = b->doc2;
        len = tp_store_file(buf, 8192, b->header, rids, docs, b->rid2 ? 2 : 1);
        if (!tp_spit(path, buf, len)) break;
        rc = tp_create(path, true, &a, &ms);
        if (rc != KCTL_ERR_PROTO) kt_fail(__FILE__, __LINE__, "%s: create gave %d (%s), want PROTO", b->what, rc, kctl_strerror(rc));
        if (ms || a.live) kt_fail(__FILE__, __LINE__, "%s: a store came back or %ld blocks are left", b->what, a.live);
        if (!tp_file_is(path, buf, len)) kt_fail(__FILE__, __LINE__, "%s: the file changed", b->what);
        kctl_memstore_destroy(ms);
    }
    tp_bad_framing(dir);
    free(buf);
    tp_rmtree(dir);
}

/* A valid hand-made file (labels, annotations, finalizers, owners, a
   status, escapes, a deleting object, a cluster-scoped resource of a
   group, a uid made elsewhere) loads, saves and loads to the same; the
   next write takes the next revision and uid. */
static void tp_valid_round_trip(void) {
    static const kctl_resource widgets = { "example.com", "v1", "widgets", NULL };
    static const char *const rids[3] = { "/configmaps", "/configmaps", "example.com/widgets" };
    static const char *const docs[3] = {
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\",\"uid\":\"" TP_UID1 "\","
        "\"resourceVersion\":\"3\",\"generation\":2,\"creationTimestamp\":\"2024-01-01T00:00:00Z\",\"labels\":{\"app\":\"web\",\"tier\":\"\"},"
        "\"annotations\":{\"note\":\"caf\\u00e9 \\\"quoted\\\"\"},\"ownerReferences\":[{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\","
        "\"name\":\"w\",\"uid\":\"6b1f0f4e-1c1e-4a52-9d3e-0e6f2d0c9a11\",\"controller\":true}]},\"spec\":{\"hostname\":\"edge-\\u00e9\",\"n\":[1,2.5,null]},"
        "\"status\":{\"phase\":\"ready\"}}",
        "{\"metadata\":{\"name\":\"db\",\"namespace\":\"prod\",\"uid\":\"" TP_UID2 "\",\"resourceVersion\":\"5\",\"generation\":3,"
        "\"deletionTimestamp\":\"2024-01-02T00:00:00Z\",\"deletionGracePeriodSeconds\":0,\"finalizers\":[\"example.com/keep\"]}}",
        "{\"metadata\":{\"name\":\"w\",\"uid\":\"6b1f0f4e-1c1e-4a52-9d3e-0e6f2d0c9a11\",\"resourceVersion\":\"1\",\"generation\":1}}",
    };
    static const char *const cms[2] = { "web", "db" };
    static const char *const ws[1] = { "w" };
    char dir[256], path[320], copy[320], buf[4096];
    size_t len, i;
    kt_alloc a, b;
    kctl_memstore *ms = NULL, *again = NULL;
    kctl_obj *o = NULL;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    snprintf(copy, sizeof copy, "%s/copy.db", dir);
    len = tp_store_file(buf, sizeof buf, "kctl-memstore 1 5 2 3\n", rids, docs, 3);
    if (!tp_spit(path, buf, len)) goto out;
    KT_EQ_INT(tp_create(path, false, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    KT_EQ_U64(kctl_memstore_revision(ms), 5);
    for (i = 0; i < 2; i++) {
        char *doc = tp_doc(ms, &tp_cm, cms[i]);
        KT_EQ_STR(doc, docs[i]); /* as the file has it, byte for byte */
        free(doc);
    }
    {
        char *doc = tp_doc(ms, &widgets, "w");
        KT_EQ_STR(doc, docs[2]);
        free(doc);
    }
    KT_CHECK(tp_file_is(path, buf, len)); /* loading changes nothing */
    /* saved, and loaded again: the same objects and revision */
    KT_EQ_INT(kctl_memstore_save(ms), KCTL_OK);
    KT_EQ_INT(tp_create(path, false, &b, &again), KCTL_OK);
    if (again) {
        KT_CHECK(tp_same_stores(ms, again, &tp_cm, cms, 2));
        KT_CHECK(tp_same_stores(ms, again, &widgets, ws, 1));
        /* the next create takes revision 6 and uid 3 (the file's sequence) */
        KT_EQ_INT(kctl_memstore_apply(again, &tp_cm, "{\"metadata\":{\"name\":\"new\"}}", KCTL_NTS, &o, NULL), KCTL_OK);
        if (o) {
            KT_EQ_STR(kctl_obj_resource_version(o), "6");
            KT_EQ_STR(kctl_obj_uid(o), "00000000-0000-4000-8000-000000000003");
            kctl_obj_unref(o);
        }
        /* every loaded object can be written again: the deleting one
           loses its last finalizer (a controller's update; the owner's
           apply never ends a deletion) and goes */
        {
            kctl_transport t = kctl_memstore_transport(again);
            KT_EQ_INT(kctl_transport_update(&t, &tp_cm, "{\"metadata\":{\"name\":\"db\",\"finalizers\":[]}}", KCTL_NTS, NULL, NULL), KCTL_OK);
        }
        KT_EQ_INT(kctl_memstore_get(again, &tp_cm, "db", &o, NULL), KCTL_ERR_NOT_FOUND);
        KT_EQ_INT(kctl_memstore_apply(again, &tp_cm, docs[0], KCTL_NTS, NULL, NULL), KCTL_OK);
        KT_EQ_INT(kctl_memstore_apply(again, &widgets, "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"x\":1}}", KCTL_NTS, NULL, NULL), KCTL_OK);
        tp_destroy(again, &b);
    }
    tp_destroy(ms, &a);
out:
    tp_rmtree(dir);
}

#ifndef KCTL_NO_THREADS
/* Writers and kctl_memstore_save at once: every save is whole, and the
   last one is the store. */
typedef struct tp_writer {
    kctl_memstore *ms;
    int id, ok;
} tp_writer;

static void *tp_write_loop(void *arg) {
    tp_writer *w = (tp_writer *)arg;
    int i;
    for (i = 0; i < 20; i++) {
        char doc[128];
        if (w->id == 2) {
            if (kctl_memstore_save(w->ms) == KCTL_OK) w->ok++;
            continue;
        }
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"w%d-%d\"},\"spec\":{\"i\":%d}}", w->id, i % 7, i);
        if (kctl_memstore_apply(w->ms, &tp_cm, doc, KCTL_NTS, NULL, NULL) == KCTL_OK) w->ok++;
    }
    return NULL;
}
#endif

static void tp_concurrent_saves(void) {
#ifndef KCTL_NO_THREADS
    char dir[256], path[320], names[14][16];
    const char *np[14];
    pthread_t th[3];
    tp_writer w[3];
    kt_alloc a, b;
    kctl_memstore *ms = NULL, *again = NULL;
    int i;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    KT_EQ_INT(tp_create(path, true, &a, &ms), KCTL_OK);
    if (!ms) {
        tp_rmtree(dir);
        return;
    }
    for (i = 0; i < 3; i++) {
        w[i].ms = ms;
        w[i].id = i;
        w[i].ok = 0;
        KT_EQ_INT(pthread_create(&th[i], NULL, tp_write_loop, &w[i]), 0);
    }
    for (i = 0; i < 3; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 3; i++) KT_EQ_INT(w[i].ok, 20);
    for (i = 0; i < 14; i++) {
        snprintf(names[i], sizeof names[i], "w%d-%d", i / 7, i % 7);
        np[i] = names[i];
    }
    KT_EQ_INT(tp_create(path, true, &b, &again), KCTL_OK);
    if (again) {
        KT_CHECK(tp_same_stores(ms, again, &tp_cm, np, 14));
        tp_destroy(again, &b);
    }
    tp_destroy(ms, &a);
    tp_rmtree(dir);
#else
    KT_SKIP();
#endif
}

void kt_suite_persist(void) {
    KT_RUN(tp_link_loop_dir_notdir);
    KT_RUN(tp_no_descriptors);
    KT_RUN(tp_not_a_regular_file);
    KT_RUN(tp_truncated_corrupt);
    KT_RUN(tp_linked_path);
    KT_RUN(tp_failed_save_unmade);
    KT_RUN(tp_loader_refuses);
    KT_RUN(tp_valid_round_trip);
    KT_RUN(tp_concurrent_saves);
}
