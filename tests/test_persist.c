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
    if (mkdtemp(dir)) {
        kt_remove_after(dir); /* also when the test is skipped from deep inside */
        return true;
    }
    kt_fail(__FILE__, __LINE__, "mkdtemp(%s): %s", dir, strerror(errno));
    return false;
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
    kt_rmtree(dir);
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
        kt_rmtree(dir);
        return;
    }
    if (getrlimit(RLIMIT_NOFILE, &old) != 0 || (fd = open(path, O_RDONLY)) < 0) {
        free(bytes);
        kt_rmtree(dir);
        KT_SKIP();
    }
    close(fd); /* the lowest free descriptor: with the limit there, no open works */
    low = old;
    low.rlim_cur = (rlim_t)fd;
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) {
        free(bytes);
        kt_rmtree(dir);
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
    kt_rmtree(dir);
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
    kt_rmtree(dir);
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
        kt_rmtree(dir);
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
    kt_rmtree(dir);
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
    kt_rmtree(dir);
}

/* ---- an in-process file layer with faults (kctl_fs): a crash stops the
   program at its Nth file operation that changes something (a write at
   that point lands in part: torn), a full disk fails writes with ENOSPC
   after a short write, a failing disk fails fsync with EIO. Reads and
   closes pass through. fsync itself does nothing here: these tests are
   about a killed process, whose written bytes the system keeps. */
typedef struct tf_fs {
    kctl_fs real;
    long ops;        /* operations that change something, so far */
    long crash_at;   /* the operation the program dies at (0: never) */
    unsigned tear;   /* at the crash: a write lands tear % (n + 1) bytes; another operation is made first when odd */
    bool dead;
    bool full;       /* writes: a short write of `room` bytes, then ENOSPC */
    size_t room;
    bool fail_sync;  /* fsync: EIO */
    bool real_sync;  /* pass fsync through (the group commit test's counts) */
    long syncs, writes;
#ifndef KCTL_NO_THREADS
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long hold_first_sync_until_writes; /* group commit: the first journal fsync waits for this many writes */
#endif
} tf_fs;

static tf_fs *tf_of(void *ud) { return (tf_fs *)ud; }

/* Whether the operation may go on (false: the program is dead, errno EIO). */
static bool tf_step(tf_fs *f, bool *crash_now) {
    *crash_now = false;
    if (f->dead) {
        errno = EIO;
        return false;
    }
    if (f->crash_at && ++f->ops == f->crash_at) *crash_now = true;
    return true;
}

static int tf_open(const char *path, int flags, void *ud) {
    tf_fs *f = tf_of(ud);
    bool crash;
    int fd;
    if (flags == KCTL_FS_READ || flags == KCTL_FS_DIR) return f->real.open_fn(path, flags, f->real.user_data);
    if (!tf_step(f, &crash)) return -1;
    if (crash && !(f->tear & 1)) {
        f->dead = true;
        errno = EIO;
        return -1;
    }
    fd = f->real.open_fn(path, flags, f->real.user_data);
    if (crash) f->dead = true;
    return crash ? (f->real.close_fn(fd, f->real.user_data), errno = EIO, -1) : fd;
}
static int64_t tf_read(int fd, void *buf, size_t n, void *ud) { return tf_of(ud)->real.read_fn(fd, buf, n, tf_of(ud)->real.user_data); }
static int64_t tf_write(int fd, const void *buf, size_t n, void *ud) {
    tf_fs *f = tf_of(ud);
    bool crash;
    if (!tf_step(f, &crash)) return -1;
#ifndef KCTL_NO_THREADS
    pthread_mutex_lock(&f->mu);
    f->writes++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
#else
    f->writes++;
#endif
    if (crash) {
        size_t k = f->tear % (n + 1);
        if (k) (void)f->real.write_fn(fd, buf, k, f->real.user_data);
        f->dead = true;
        errno = EIO;
        return -1;
    }
    if (f->full) {
        size_t k = f->room < n ? f->room : n;
        if (k) {
            f->room -= k;
            return f->real.write_fn(fd, buf, k, f->real.user_data);
        }
        errno = ENOSPC;
        return -1;
    }
    return f->real.write_fn(fd, buf, n, f->real.user_data);
}
static int tf_sync(int fd, void *ud) {
    tf_fs *f = tf_of(ud);
    bool crash;
    if (!tf_step(f, &crash)) return -1;
    f->syncs++;
    if (crash || f->fail_sync) {
        if (crash && (f->tear & 1) && f->real_sync) (void)f->real.sync_fn(fd, f->real.user_data);
        if (crash) f->dead = true;
        errno = EIO;
        return -1;
    }
#ifndef KCTL_NO_THREADS
    if (f->hold_first_sync_until_writes) {
        struct timespec until;
        long want = f->hold_first_sync_until_writes;
        f->hold_first_sync_until_writes = 0;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10; /* a bound, should the writers never come: the count then fails */
        pthread_mutex_lock(&f->mu);
        while (f->writes < want && pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0) { }
        pthread_mutex_unlock(&f->mu);
    }
#endif
    return f->real_sync ? f->real.sync_fn(fd, f->real.user_data) : 0;
}
static int tf_truncate(int fd, uint64_t size, void *ud) {
    tf_fs *f = tf_of(ud);
    bool crash;
    if (!tf_step(f, &crash)) return -1;
    if (crash && !(f->tear & 1)) {
        f->dead = true;
        errno = EIO;
        return -1;
    }
    if (f->real.truncate_fn(fd, size, f->real.user_data) != 0) return -1;
    if (crash) {
        f->dead = true;
        errno = EIO;
        return -1;
    }
    return 0;
}
static int tf_close(int fd, void *ud) { return tf_of(ud)->real.close_fn(fd, tf_of(ud)->real.user_data); }
static int tf_rename(const char *from, const char *to, void *ud) {
    tf_fs *f = tf_of(ud);
    bool crash;
    int rc = 0;
    if (!tf_step(f, &crash)) return -1;
    if (!crash || (f->tear & 1)) rc = f->real.rename_fn(from, to, f->real.user_data);
    if (crash) {
        f->dead = true;
        errno = EIO;
        return -1;
    }
    return rc;
}
static int tf_unlink(const char *path, void *ud) {
    tf_fs *f = tf_of(ud);
    bool crash;
    if (!tf_step(f, &crash)) return -1;
    if (crash) {
        f->dead = true;
        errno = EIO;
        return -1;
    }
    return f->real.unlink_fn(path, f->real.user_data);
}

static void tf_init(tf_fs *f) {
    memset(f, 0, sizeof *f);
    f->real = kctl_fs_posix();
#ifndef KCTL_NO_THREADS
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
#endif
}

static void tf_deinit(tf_fs *f) {
#ifndef KCTL_NO_THREADS
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
#else
    (void)f;
#endif
}

static kctl_fs tf_layer(tf_fs *f) {
    kctl_fs fs;
    fs.open_fn = tf_open;
    fs.read_fn = tf_read;
    fs.write_fn = tf_write;
    fs.sync_fn = tf_sync;
    fs.truncate_fn = tf_truncate;
    fs.close_fn = tf_close;
    fs.rename_fn = tf_rename;
    fs.unlink_fn = tf_unlink;
    fs.user_data = f;
    return fs;
}

/* A journaled store at path through layer fs (NULL: POSIX). */
static int tf_create(const char *path, const kctl_fs *fs, uint64_t compact_bytes, kctl_logger *log, kt_alloc *a, kctl_memstore **ms) {
    kctl_memstore_desc d;
    memset(&d, 0, sizeof d);
    kt_alloc_init(a);
    d.allocator = kt_allocator(a);
    d.path = path;
    d.save_on_write = true;
    d.fs = fs;
    d.compact_bytes = compact_bytes;
    if (log) d.logger = *log;
    *ms = NULL;
    return kctl_memstore_create(&d, ms);
}

/* ---- 2.2 (and issue 13: a full disk): a write whose record cannot be
   written (ENOSPC from the file layer, after a short write) is unmade,
   in memory, in the files and for watchers, for every kind of write;
   once there is room the store takes writes, and a restart finds
   exactly what was acknowledged. */
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
    char dir[256], path[320];
    tf_fs f;
    kctl_fs fs;
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
    memset(&st, 0, sizeof st);
    tf_init(&f);
    fs = tf_layer(&f);
    KT_EQ_INT(tf_create(path, &fs, 0, NULL, &al, &ms), KCTL_OK);
    if (!ms) {
        tf_deinit(&f);
        kt_rmtree(dir);
        return;
    }
    t = kctl_memstore_transport(ms);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"example.com/keep\"]},\"spec\":{\"n\":1}}",
                                  KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"n\":1}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    a0 = tp_doc(ms, &tp_cm, "a");
    b0 = tp_doc(ms, &tp_cm, "b");
    KT_EQ_INT(kctl_transport_watch_open(&t, &tp_cm, NULL, "2", &w, NULL), KCTL_OK);
    f.full = true; /* the disk is full from here: a short write, then ENOSPC */
    f.room = 7;
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
    f.full = false;
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
    tf_deinit(&f);
    free(a0);
    free(b0);
    free(c1);
    kt_rmtree(dir);
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
    kt_rmtree(dir);
}

/* Two objects whose uids differ but hash alike (found by trying uids) load:
   the load compares uids as strings where their hashes are alike. */
static void tp_loader_uid_hashes(void) {
    enum { TRIES = 1 << 21, SLOTS = 1 << 22 };
    uint32_t *seen = (uint32_t *)calloc(SLOTS, sizeof *seen); /* i + 1 by hash, 0 empty */
    char dir[256], path[320], buf[4096], uid[2][40], doc[2][256];
    const char *rids[2] = { "/configmaps", "/configmaps" }, *docs[2];
    uint32_t i, found = 0, other = 0;
    kt_alloc a;
    kctl_memstore *ms = NULL;
    size_t len;
    if (!seen) return;
    for (i = 0; i < TRIES && !found; i++) {
        uint32_t h, s;
        snprintf(uid[0], sizeof uid[0], "6b1f0f4e-1c1e-4a52-9d3e-%012lx", (unsigned long)i);
        h = kctl__test_hash(uid[0], strlen(uid[0]));
        for (s = h & (SLOTS - 1); seen[s]; s = (s + 1) & (SLOTS - 1)) {
            uint32_t j = seen[s] - 1;
            snprintf(uid[1], sizeof uid[1], "6b1f0f4e-1c1e-4a52-9d3e-%012lx", (unsigned long)j);
            if (kctl__test_hash(uid[1], strlen(uid[1])) == h) {
                found = i + 1;
                other = j;
                break;
            }
        }
        if (!found) seen[s] = i + 1;
    }
    free(seen);
    KT_CHECK(found != 0); /* 2^21 tries of a 32-bit hash: a pair all but surely */
    if (!found || !tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(uid[1], sizeof uid[1], "6b1f0f4e-1c1e-4a52-9d3e-%012lx", (unsigned long)other);
    KT_CHECK(strcmp(uid[0], uid[1]) != 0);
    snprintf(doc[0], sizeof doc[0], "{\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\",\"uid\":\"%s\",\"resourceVersion\":\"3\",\"generation\":1}}", uid[0]);
    snprintf(doc[1], sizeof doc[1], "{\"metadata\":{\"name\":\"db\",\"namespace\":\"prod\",\"uid\":\"%s\",\"resourceVersion\":\"4\",\"generation\":1}}", uid[1]);
    docs[0] = doc[0];
    docs[1] = doc[1];
    snprintf(path, sizeof path, "%s/store.db", dir);
    len = tp_store_file(buf, sizeof buf, "kctl-memstore 1 4 0 2\n", rids, docs, 2);
    if (tp_spit(path, buf, len)) {
        KT_EQ_INT(tp_create(path, false, &a, &ms), KCTL_OK);
        if (ms) {
            kctl_memstore_stats st;
            KT_EQ_INT(kctl_memstore_read_stats(ms, &st), KCTL_OK);
            KT_EQ_U64(st.objects, 2);
        }
        kctl_memstore_destroy(ms);
        /* and the same uid twice still refused */
        snprintf(doc[1], sizeof doc[1], "{\"metadata\":{\"name\":\"db\",\"namespace\":\"prod\",\"uid\":\"%s\",\"resourceVersion\":\"4\",\"generation\":1}}", uid[0]);
        len = tp_store_file(buf, sizeof buf, "kctl-memstore 1 4 0 2\n", rids, docs, 2);
        ms = NULL;
        if (tp_spit(path, buf, len)) KT_EQ_INT(tp_create(path, false, &a, &ms), KCTL_ERR_PROTO);
        kctl_memstore_destroy(ms);
    }
    kt_rmtree(dir);
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
    kt_rmtree(dir);
}

/* One name in four resources (the store keeps a map per resource, keyed
   by the object's own namespace/name): each its own object, through
   writes, unchanged applies (what the store kept of each object for its
   next update), deletes, lists, the stats, and reloads from the journal
   (objects replayed keep nothing: their next apply reads the document)
   and from a snapshot. */
static const kctl_resource tp_four[4] = {
    { "", "v1", "configmaps", "prod" }, { "", "v1", "secrets", "prod" },
    { "apps", "v1", "configmaps", "prod" }, { "example.com", "v1", "widgets", NULL } /* cluster-scoped */
};

static int tp_four_apply(kctl_memstore *ms, int i, int v) {
    char doc[128];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"x\"},\"data\":{\"r\":\"%d\",\"v\":\"%d\"}}", i, v);
    return kctl_memstore_apply(ms, &tp_four[i], doc, KCTL_NTS, NULL, NULL);
}

/* x in every resource but secrets, each at v 1; the store at rev, which
   applying the same documents again leaves as it is. */
static void tp_four_check(kctl_memstore *ms, uint64_t rev) {
    kctl_transport t = kctl_memstore_transport(ms);
    kctl_memstore_stats st;
    kctl_list_result l;
    int i;
    for (i = 0; i < 4; i++) {
        char *have = tp_doc(ms, &tp_four[i], "x"), want[32];
        snprintf(want, sizeof want, "\"r\":\"%d\",\"v\":\"1\"", i);
        if (i == 1) KT_CHECK(have == NULL);
        else KT_CHECK(have && strstr(have, want));
        free(have);
        memset(&l, 0, sizeof l);
        KT_EQ_INT(kctl_transport_list(&t, &tp_four[i], NULL, &l, NULL), KCTL_OK);
        KT_EQ_U64(l.items.count, i == 1 ? 0 : 1);
        kctl_list_result_free(&l);
    }
    KT_EQ_INT(kctl_memstore_read_stats(ms, &st), KCTL_OK);
    KT_EQ_U64(st.objects, 3);
    KT_EQ_U64(kctl_memstore_revision(ms), rev);
    for (i = 0; i < 4; i++)
        if (i != 1) KT_EQ_INT(tp_four_apply(ms, i, 1), KCTL_OK);
    KT_EQ_U64(kctl_memstore_revision(ms), rev);
}

static void tp_one_name_four_resources(void) {
    char dir[256], path[320];
    kt_alloc a;
    kctl_memstore *ms = NULL;
    char *y;
    int i;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    KT_EQ_INT(tp_create(path, true, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    for (i = 0; i < 8; i++) KT_EQ_INT(tp_four_apply(ms, i % 4, i / 4), KCTL_OK);
    KT_EQ_INT(kctl_memstore_delete(ms, &tp_four[1], "x", NULL), KCTL_OK);
    tp_four_check(ms, 9);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_four[1], "{\"metadata\":{\"name\":\"y\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    /* from the journal: y in secrets only; then y goes */
    tp_destroy(ms, &a);
    KT_EQ_INT(tp_create(path, true, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    KT_CHECK((y = tp_doc(ms, &tp_four[1], "y")) != NULL);
    free(y);
    KT_CHECK((y = tp_doc(ms, &tp_four[0], "y")) == NULL);
    KT_EQ_INT(kctl_memstore_delete(ms, &tp_four[1], "y", NULL), KCTL_OK);
    tp_four_check(ms, 11);
    KT_EQ_INT(tp_four_apply(ms, 0, 2), KCTL_OK); /* a change and back, on a replayed object */
    KT_EQ_INT(tp_four_apply(ms, 0, 1), KCTL_OK);
    tp_four_check(ms, 13);
    /* from the journal again, then from a snapshot */
    tp_destroy(ms, &a);
    KT_EQ_INT(tp_create(path, true, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    tp_four_check(ms, 13);
    KT_EQ_INT(kctl_memstore_save(ms), KCTL_OK);
    tp_destroy(ms, &a);
    KT_EQ_INT(tp_create(path, true, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    tp_four_check(ms, 13);
    for (i = 0; i < 4; i++) /* each deleted on its own */
        if (i != 1) {
            KT_EQ_INT(kctl_memstore_delete(ms, &tp_four[i], "x", NULL), KCTL_OK);
            KT_CHECK((y = tp_doc(ms, &tp_four[i], "x")) == NULL);
            free(y);
            y = i < 3 ? tp_doc(ms, &tp_four[3], "x") : NULL; /* the widget stays till its turn */
            KT_CHECK(i == 3 || y != NULL);
            free(y);
        }
    KT_EQ_U64(kctl_memstore_revision(ms), 16);
    tp_destroy(ms, &a);
out:
    kt_rmtree(dir);
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
        kt_rmtree(dir);
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
    kt_rmtree(dir);
#else
    KT_SKIP();
#endif
}

/* ---- issue 13: the journal */

/* A directory for the tests that open stores hundreds of times: under
   TMPDIR when it is set, else on a RAM disk (/dev/shm) when there is one:
   these tests are about a killed process, not the disk, and a disk's
   file systems flush a file replaced or emptied (ext4's auto_da_alloc),
   which would make them take seconds. */
static bool tj_mkdtemp(char *dir, size_t cap) {
    const char *base = getenv("TMPDIR");
    struct stat sb;
    if ((!base || !*base) && stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0) {
        snprintf(dir, cap, "/dev/shm/kctl-persist-XXXXXX");
        if (mkdtemp(dir)) {
            kt_remove_after(dir);
            return true;
        }
    }
    return tp_mkdtemp(dir, cap);
}

/* The workload of the crash tests: step i writes object o<i % 9> (creates,
   replaces, status writes, deletes and re-creates, one with a finalizer),
   each write's spec.i (or status.i) being i. Its result. */
#define TJ_NAMES 9
static int tj_step(kctl_memstore *ms, int i, int *target) {
    kctl_transport t = kctl_memstore_transport(ms);
    char doc[512], name[16];
    int k = i % TJ_NAMES;
    snprintf(name, sizeof name, "o%d", k);
    *target = k;
    switch ((i / TJ_NAMES) % 4) {
    case 2:
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"i\":%d}}", name, i);
        return kctl_transport_update_status(&t, &tp_cm, doc, KCTL_NTS, NULL, NULL);
    case 3:
        return kctl_memstore_delete(ms, &tp_cm, name, NULL);
    default:
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"i\":\"%d\"}},\"spec\":{\"i\":%d,\"pad\":\"%0*d\"}}", name, i, i,
                 20 + (i * 37) % 120, i);
        return kctl_memstore_apply(ms, &tp_cm, doc, KCTL_NTS, NULL, NULL);
    }
}

/* The documents of o0..o8 (NULL: not there) and the revision. */
typedef struct tj_model {
    char *doc[TJ_NAMES];
    uint64_t rev;
} tj_model;

static void tj_snap(kctl_memstore *ms, tj_model *m) {
    int k;
    for (k = 0; k < TJ_NAMES; k++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", k);
        free(m->doc[k]);
        m->doc[k] = tp_doc(ms, &tp_cm, name);
    }
    m->rev = kctl_memstore_revision(ms);
}

static void tj_free(tj_model *m) {
    int k;
    for (k = 0; k < TJ_NAMES; k++) free(m->doc[k]);
    memset(m, 0, sizeof *m);
}

/* Whether ms holds exactly model a, or (the write in flight made whole)
   exactly b. */
static bool tj_same(kctl_memstore *ms, const tj_model *m) {
    int k;
    if (kctl_memstore_revision(ms) != m->rev) return false;
    for (k = 0; k < TJ_NAMES; k++) {
        char name[16], *doc;
        bool same;
        snprintf(name, sizeof name, "o%d", k);
        doc = tp_doc(ms, &tp_cm, name);
        same = doc ? m->doc[k] && strcmp(doc, m->doc[k]) == 0 : !m->doc[k];
        free(doc);
        if (!same) return false;
    }
    return true;
}

/* Run the workload's steps from *i through fs until a write fails (the
   program died) or `steps` are done; *acked is the store as the last
   acknowledged write left it, *inflight as the failed write left it in
   memory (the write a restart may or may not find). */
static int tj_run(kctl_memstore *ms, int *i, int steps, tj_model *acked, tj_model *inflight) {
    int end = *i + steps, target, rc = KCTL_OK;
    tj_snap(ms, acked);
    for (; *i < end; (*i)++) {
        rc = tj_step(ms, *i, &target);
        if (rc == KCTL_ERR_NOT_FOUND) rc = KCTL_OK; /* a delete of one not there */
        if (rc != KCTL_OK) break;
        tj_snap(ms, acked);
    }
    tj_snap(ms, inflight);
    return rc;
}

/* Kill -9 at every file operation of a workload (creates, replaces, status
   writes, deletes; compactions every few writes), in process: the file
   layer stops at its Nth operation, a write there torn at a point that
   moves with N. A restart finds every acknowledged write, and the write
   in flight wholly or not at all, at a consistent revision; it cuts the
   torn tail off and takes writes again, which a second restart finds. */
static void tp_journal_crash_points(void) {
    char dir[256], path[320];
    tf_fs f;
    kctl_fs fs;
    kt_alloc a;
    kctl_memstore *ms = NULL;
    kctl_memstore_persist_stats ps;
    long total, n;
    int i, failures = 0, steps = 90, in_flight_kept = 0;
    if (!tj_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    tf_init(&f);
    fs = tf_layer(&f);
    /* the operations of the whole workload, without a crash */
    f.crash_at = -1; /* counts, never reached */
    KT_EQ_INT(tf_create(path, &fs, 700, NULL, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    for (i = 0; i < steps; i++) {
        int target, rc = tj_step(ms, i, &target);
        if (rc != KCTL_OK && rc != KCTL_ERR_NOT_FOUND) KT_EQ_INT(rc, KCTL_OK);
    }
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
    KT_CHECK(ps.snapshots >= 4); /* the crash points below go through compactions */
    KT_CHECK(ps.records >= (uint64_t)steps - 10);
    tp_destroy(ms, &a);
    total = f.ops; /* crash_at -1 is never reached: the operations counted */
    KT_CHECK(total > 250);
    if (getenv("KT_VERBOSE")) printf("tp_journal_crash_points: %ld crash points\n", total);
    for (n = 1; n <= total && failures < 3; n++) {
        tj_model acked, inflight;
        kctl_memstore *again = NULL;
        kt_alloc b;
        int rc;
        memset(&acked, 0, sizeof acked);
        memset(&inflight, 0, sizeof inflight);
        kt_rmtree(dir);
        mkdir(dir, 0700);
        tf_deinit(&f);
        tf_init(&f);
        f.crash_at = n;
        f.tear = (unsigned)(n * 2654435761u);
        i = 0;
        rc = tf_create(path, &fs, 700, NULL, &a, &ms);
        if (rc == KCTL_OK) {
            tj_run(ms, &i, steps, &acked, &inflight);
            kctl_memstore_destroy(ms); /* the program is dead: nothing more reaches the files */
        }
        KT_EQ_INT(a.live, 0);
        /* the restart */
        rc = tf_create(path, NULL, 700, NULL, &b, &again);
        if (rc != KCTL_OK || !again) {
            kt_fail(__FILE__, __LINE__, "crash at operation %ld: the store does not open (%s)", n, kctl_strerror(rc));
            failures++;
        } else {
            bool as_acked = tj_same(again, &acked), as_inflight = !as_acked && tj_same(again, &inflight);
            if (!as_acked && !as_inflight) {
                kt_fail(__FILE__, __LINE__, "crash at operation %ld (step %d): the restart holds revision %llu, acknowledged %llu", n, i,
                        (unsigned long long)kctl_memstore_revision(again), (unsigned long long)acked.rev);
                failures++;
            }
            in_flight_kept += as_inflight;
            /* it takes writes again (after the torn tail), and they last */
            if (kctl_memstore_apply(again, &tp_cm, "{\"metadata\":{\"name\":\"after\"}}", KCTL_NTS, NULL, NULL) != KCTL_OK) {
                kt_fail(__FILE__, __LINE__, "crash at operation %ld: no write after the restart", n);
                failures++;
            }
            tj_snap(again, &acked);
            tp_destroy(again, &b);
            if (tf_create(path, NULL, 700, NULL, &b, &again) != KCTL_OK || !again || !tj_same(again, &acked)) {
                kt_fail(__FILE__, __LINE__, "crash at operation %ld: the write after the restart did not last", n);
                failures++;
            }
            if (again) tp_destroy(again, &b);
        }
        tj_free(&acked);
        tj_free(&inflight);
    }
    KT_CHECK(in_flight_kept > 0); /* some crashes came after a record was whole, before its acknowledgement */
out:
    tf_deinit(&f);
    kt_rmtree(dir);
}

/* A logger that keeps the last item. */
static void tj_log(int level, uint32_t item, const char *msg, void *ud) {
    (void)level;
    (void)msg;
    *(uint32_t *)ud = item;
}

/* The journal of a store at path after `writes` writes (o0..o8), in *buf. */
static bool tj_journal_of(const char *path, int writes, char **buf, size_t *len) {
    char jpath[340];
    kt_alloc a;
    kctl_memstore *ms = NULL;
    int i, target;
    *buf = NULL;
    if (tf_create(path, NULL, 0, NULL, &a, &ms) != KCTL_OK || !ms) return false;
    for (i = 0; i < writes; i++) tj_step(ms, i, &target);
    tp_destroy(ms, &a);
    snprintf(jpath, sizeof jpath, "%s.journal", path);
    return (*buf = tp_slurp(jpath, len)) != NULL;
}

/* The offsets of the journal's records (after its 15-byte header). */
static size_t tj_records(const char *buf, size_t len, size_t *off, size_t cap) {
    size_t p = 15, n = 0;
    while (p + 12 <= len && n < cap) {
        uint32_t plen = (uint32_t)(unsigned char)buf[p] | (uint32_t)(unsigned char)buf[p + 1] << 8 |
                        (uint32_t)(unsigned char)buf[p + 2] << 16 | (uint32_t)(unsigned char)buf[p + 3] << 24;
        off[n++] = p;
        p += 12 + plen;
    }
    return n;
}

/* Open the store with journal bytes j[0..len): its revision, the log item
   it logged (0: none) and its stats; -1 when it does not open. */
static long long tj_open_with(const char *path, const char *j, size_t len, uint32_t *item, kctl_memstore_persist_stats *ps) {
    char jpath[340];
    kt_alloc a;
    kctl_memstore *ms = NULL;
    kctl_logger lg;
    long long rev;
    snprintf(jpath, sizeof jpath, "%s.journal", path);
    if (!tp_spit(jpath, j, len)) return -1;
    *item = 0;
    lg.func = tj_log;
    lg.user_data = item;
    if (tf_create(path, NULL, 0, &lg, &a, &ms) != KCTL_OK || !ms) return -1;
    rev = (long long)kctl_memstore_revision(ms);
    kctl_memstore_read_persist_stats(ms, ps);
    tp_destroy(ms, &a);
    return rev;
}

/* Recovery keeps everything before the first bad record and says why: a
   journal cut at every length (torn: all whole records kept), a byte
   changed in a middle record (bad checksum), a middle record's length
   changed (wrong length), a record out of order; and the store takes
   writes after it, cutting the bad tail off first. */
static void tp_journal_corrupt(void) {
    char dir[256], path[320];
    char *j = NULL, *bad = NULL;
    size_t len = 0, off[64], n, cut, k;
    uint32_t item;
    kctl_memstore_persist_stats ps;
    long long rev;
    int wrong = 0;
    if (!tj_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    if (!tj_journal_of(path, 12, &j, &len) || !(bad = (char *)malloc(len))) goto out;
    n = tj_records(j, len, off, 64);
    KT_EQ_INT(n, 12); /* the snapshot is the empty store of the first write */
    /* every cut: the whole records before it */
    for (cut = 0; cut <= len && wrong < 3; cut++) {
        size_t whole = 0;
        bool boundary = cut <= 15 || cut == len;
        for (k = 0; k < n; k++) {
            if (k + 1 < n ? off[k + 1] <= cut : len <= cut) whole = k + 1;
            if (off[k] == cut) boundary = true;
        }
        rev = tj_open_with(path, j, cut, &item, &ps);
        if (rev != (long long)whole || (boundary ? item != 0 : item != KCTL_LOGITEM_MEMSTORE_JOURNAL_TORN) || ps.replayed != whole) {
            kt_fail(__FILE__, __LINE__, "cut at %lu: revision %lld (want %lu), item %u", (unsigned long)cut, rev, (unsigned long)whole, item);
            wrong++;
        }
    }
    /* a byte of record 5's payload changed: records 0-4 kept */
    memcpy(bad, j, len);
    bad[off[5] + 20] ^= 0x20;
    rev = tj_open_with(path, bad, len, &item, &ps);
    KT_EQ_INT(rev, 5);
    KT_EQ_INT(item, KCTL_LOGITEM_MEMSTORE_JOURNAL_CORRUPT);
    KT_EQ_U64(ps.dropped_bytes, len - off[5]);
    /* record 7's length one more (its checksum no longer holds), and far past the end */
    memcpy(bad, j, len);
    bad[off[7]] = (char)(bad[off[7]] + 1);
    KT_EQ_INT(tj_open_with(path, bad, len, &item, &ps), 7);
    KT_EQ_INT(item, KCTL_LOGITEM_MEMSTORE_JOURNAL_CORRUPT);
    memcpy(bad, j, len);
    bad[off[7] + 3] = 0x30;
    KT_EQ_INT(tj_open_with(path, bad, len, &item, &ps), 7);
    KT_CHECK(item != 0);
    /* record 3 twice (a revision out of order): 0-3 kept */
    {
        size_t r3 = off[4] - off[3];
        char *dup = (char *)malloc(off[4] + r3);
        if (dup) {
            memcpy(dup, j, off[4]);
            memcpy(dup + off[4], j + off[3], r3);
            KT_EQ_INT(tj_open_with(path, dup, off[4] + r3, &item, &ps), 4);
            KT_EQ_INT(item, KCTL_LOGITEM_MEMSTORE_JOURNAL_CORRUPT);
            free(dup);
        }
    }
    /* after a corrupt middle record: a write goes where the good part ends,
       and a restart finds it next to everything before */
    memcpy(bad, j, len);
    bad[off[5] + 20] ^= 0x20;
    {
        char jpath[340];
        kt_alloc a;
        kctl_memstore *ms = NULL;
        snprintf(jpath, sizeof jpath, "%s.journal", path);
        if (tp_spit(jpath, bad, len) && tf_create(path, NULL, 0, NULL, &a, &ms) == KCTL_OK && ms) {
            KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"after\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
            KT_EQ_U64(kctl_memstore_revision(ms), 6);
            tp_destroy(ms, &a);
            KT_EQ_INT(tf_create(path, NULL, 0, NULL, &a, &ms), KCTL_OK);
            if (ms) {
                char *doc = tp_doc(ms, &tp_cm, "after");
                KT_EQ_U64(kctl_memstore_revision(ms), 6);
                KT_CHECK(doc != NULL);
                free(doc);
                tp_destroy(ms, &a);
            }
        }
    }
    /* a file that is no journal: refused, left as it is */
    {
        char jpath[340];
        kt_alloc a;
        kctl_memstore *ms = NULL;
        snprintf(jpath, sizeof jpath, "%s.journal", path);
        tp_spit(jpath, "not a journal at all\n", 21);
        KT_EQ_INT(tf_create(path, NULL, 0, NULL, &a, &ms), KCTL_ERR_PROTO);
        KT_CHECK(ms == NULL && a.live == 0);
        KT_CHECK(tp_file_is(jpath, "not a journal at all\n", 21));
    }
out:
    free(j);
    free(bad);
    kt_rmtree(dir);
}

/* Today's snapshot, from a store of kctl 0.4 (no journal), opens, and
   takes journaled writes; the journal is folded into a snapshot past
   compact_bytes, and what a restart finds is the same. */
static void tp_journal_old_snapshot_compacts(void) {
    static const char *const rids[1] = { "/configmaps" };
    static const char *const docs[1] = { "{\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\",\"uid\":\"00000000-0000-4000-8000-000000000001\","
                                         "\"resourceVersion\":\"3\",\"generation\":1}}" };
    char dir[256], path[320], buf[2048], jpath[340];
    kt_alloc a;
    kctl_memstore *ms = NULL;
    kctl_memstore_persist_stats ps;
    tj_model m;
    size_t len, jl = 0;
    char *jb;
    int i, target;
    memset(&m, 0, sizeof m);
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    snprintf(jpath, sizeof jpath, "%s.journal", path);
    len = tp_store_file(buf, sizeof buf, "kctl-memstore 1 5 2 1\n", rids, docs, 1);
    if (!tp_spit(path, buf, len)) goto out;
    KT_EQ_INT(tf_create(path, NULL, 2000, NULL, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    KT_EQ_U64(kctl_memstore_revision(ms), 5);
    KT_CHECK(tp_file_is(path, buf, len)); /* a record, not a rewrite */
    for (i = 0; i < 40; i++) KT_CHECK(tj_step(ms, i, &target) != KCTL_ERR_IO);
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
    KT_CHECK(ps.snapshots >= 2);
    { /* folded once past compact_bytes and the snapshot's size: longer by one record at most */
        size_t sl = 0;
        char *sb = tp_slurp(path, &sl);
        if (ps.journal_bytes > (sl > 2000 ? sl : 2000) + 400)
            kt_fail(__FILE__, __LINE__, "journal %llu bytes past compact_bytes 2000 and the snapshot's %lu", (unsigned long long)ps.journal_bytes,
                    (unsigned long)sl);
        free(sb);
    }
    jb = tp_slurp(jpath, &jl);
    KT_CHECK(jb && jl == ps.journal_bytes);
    free(jb);
    tj_snap(ms, &m);
    tp_destroy(ms, &a);
    KT_EQ_INT(tf_create(path, NULL, 2000, NULL, &a, &ms), KCTL_OK);
    if (ms) {
        char *doc = tp_doc(ms, &tp_cm, "web");
        KT_CHECK(tj_same(ms, &m));
        KT_CHECK(doc != NULL);
        free(doc);
        tp_destroy(ms, &a);
    }
out:
    tj_free(&m);
    kt_rmtree(dir);
}

#ifndef KCTL_NO_THREADS
typedef struct tj_writer {
    kctl_memstore *ms;
    int id, rc;
} tj_writer;

static void *tj_write_one(void *arg) {
    tj_writer *w = (tj_writer *)arg;
    char doc[128];
    snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"g%d\"},\"spec\":{\"i\":%d}}", w->id, w->id);
    w->rc = kctl_memstore_apply(w->ms, &tp_cm, doc, KCTL_NTS, NULL, NULL);
    return NULL;
}
#endif

/* Group commit: while one writer's fsync is in flight, the writers that
   come append their records and share the next fsync. The file layer
   holds the first fsync of the journal until every writer's record is
   written: 1 + 4 writes make 2 fsyncs, not 5; each was acknowledged only
   after its own record was synced (all there after a restart). */
static void tp_journal_group_commit(void) {
#ifndef KCTL_NO_THREADS
    char dir[256], path[320];
    tf_fs f;
    kctl_fs fs;
    kt_alloc a;
    kctl_memstore *ms = NULL;
    kctl_memstore_persist_stats before, after;
    pthread_t th[5];
    tj_writer w[5];
    long base;
    int i;
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    tf_init(&f);
    f.real_sync = true;
    fs = tf_layer(&f);
    KT_EQ_INT(tf_create(path, &fs, 0, NULL, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    /* the first write opens the journal (a snapshot, the header) */
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"first\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &before), KCTL_OK);
    pthread_mutex_lock(&f.mu);
    base = f.writes;
    f.hold_first_sync_until_writes = base + 5; /* the first fsync from here waits for all five records */
    pthread_mutex_unlock(&f.mu);
    for (i = 0; i < 5; i++) {
        w[i].ms = ms;
        w[i].id = i;
        w[i].rc = -100;
        KT_EQ_INT(pthread_create(&th[i], NULL, tj_write_one, &w[i]), 0);
    }
    for (i = 0; i < 5; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 5; i++) KT_EQ_INT(w[i].rc, KCTL_OK);
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &after), KCTL_OK);
    KT_EQ_U64(after.records - before.records, 5);
    KT_EQ_U64(after.syncs - before.syncs, 2); /* the first writer's, then one for the other four */
    tp_destroy(ms, &a);
    KT_EQ_INT(tf_create(path, NULL, 0, NULL, &a, &ms), KCTL_OK);
    if (ms) {
        KT_EQ_U64(kctl_memstore_revision(ms), 6);
        tp_destroy(ms, &a);
    }
out:
    tf_deinit(&f);
    kt_rmtree(dir);
#else
    KT_SKIP();
#endif
}

/* A full disk (ENOSPC from the file layer, after a short write): the write
   fails with IO and is nowhere (memory, watchers, the files); a fsync
   that fails (EIO) fails its writes and every write after, until a
   snapshot can be made; once the disk is back the store takes writes, and
   a restart finds exactly what was acknowledged. */
static void tp_journal_sync_fails(void) {
    char dir[256], path[320];
    tf_fs f;
    kctl_fs fs;
    kt_alloc a;
    kctl_memstore *ms = NULL;
    kctl_api_status st;
    tj_model m;
    memset(&m, 0, sizeof m);
    memset(&st, 0, sizeof st);
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    tf_init(&f);
    fs = tf_layer(&f);
    KT_EQ_INT(tf_create(path, &fs, 0, NULL, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    f.fail_sync = true;
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, &st), KCTL_ERR_IO);
    KT_CHECK(st.code >= 500);
    kctl_api_status_clear(&st);
    /* broken: refused (a snapshot first, which cannot sync either), not made */
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"c\"}}", KCTL_NTS, NULL, NULL), KCTL_ERR_IO);
    KT_EQ_U64(kctl_memstore_revision(ms), 2);
    f.fail_sync = false;
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"c\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_U64(kctl_memstore_revision(ms), 3);
    tj_snap(ms, &m);
    tp_destroy(ms, &a);
    KT_EQ_INT(tf_create(path, NULL, 0, NULL, &a, &ms), KCTL_OK);
    if (ms) {
        char *b = tp_doc(ms, &tp_cm, "b"), *c = tp_doc(ms, &tp_cm, "c");
        KT_EQ_U64(kctl_memstore_revision(ms), 3);
        KT_CHECK(b != NULL && c != NULL); /* b was made in memory: the snapshot kept it */
        free(b);
        free(c);
        tp_destroy(ms, &a);
    }
out:
    tj_free(&m);
    tf_deinit(&f);
    kt_rmtree(dir);
}

/* Real kills: a child process makes acknowledged writes (o<i % 7> gets
   spec.i = i, in order) and reports each acknowledgement on a pipe; the
   parent SIGKILLs it at a moment that varies, reopens the store (the same
   one, round after round) and compares: every object holds its last
   acknowledged value, or the one write in flight, nothing else. */
static void tp_journal_real_kills(void) {
    char dir[256], path[320];
    int round, next = 0, failures = 0, rounds = 60, kept = 0, model[7] = { -1, -1, -1, -1, -1, -1, -1 };
    unsigned seed = 12345;
    KT_NEED_MEMSTORE(); /* the children need it */
    if (!tp_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    for (round = 0; round < rounds && failures < 3; round++) {
        int fds[2], status, last = next - 1, k, i;
        pid_t pid;
        char line[32];
        kt_alloc a;
        kctl_memstore *ms = NULL;
        int want;
        FILE *in;
        seed = seed * 1103515245u + 12345u;
        want = 1 + (int)((seed >> 16) % 12); /* acknowledgements before the kill */
        if (pipe(fds) != 0) break;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            kctl_memstore_desc d;
            kctl_memstore *cms = NULL;
            close(fds[0]);
            memset(&d, 0, sizeof d);
            d.path = path;
            d.save_on_write = true;
            d.compact_bytes = 3000; /* compactions too */
            if (kctl_memstore_create(&d, &cms) != KCTL_OK) _exit(3);
            for (i = next;; i++) {
                char doc[160], msg[16];
                int n;
                snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"o%d\"},\"spec\":{\"i\":%d,\"pad\":\"%0*d\"}}", i % 7, i, 10 + i % 50, i);
                if (kctl_memstore_apply(cms, &tp_cm, doc, KCTL_NTS, NULL, NULL) != KCTL_OK) _exit(4);
                n = snprintf(msg, sizeof msg, "%d\n", i);
                if (write(fds[1], msg, (size_t)n) != n) _exit(5);
            }
        }
        close(fds[1]);
        if (pid < 0) {
            close(fds[0]);
            break;
        }
        in = fdopen(fds[0], "r");
        /* read acknowledgements; kill after `want` of them */
        while (in && fgets(line, sizeof line, in)) {
            last = atoi(line);
            if (--want == 0) {
                kill(pid, SIGKILL);
                /* what was already in the pipe is acknowledged too */
            }
        }
        if (in) fclose(in);
        else close(fds[0]);
        waitpid(pid, &status, 0);
        if (!WIFSIGNALED(status)) {
            kt_fail(__FILE__, __LINE__, "round %d: the child ended by itself (status %d)", round, status);
            failures++;
            break;
        }
        /* the restart: o<k> holds its last acknowledged i, or the write in flight (last + 1) */
        if (tp_create(path, true, &a, &ms) != KCTL_OK || !ms) {
            kt_fail(__FILE__, __LINE__, "round %d: the store does not open", round);
            failures++;
            continue;
        }
        for (i = next; i <= last; i++) model[i % 7] = i; /* acknowledged this round */
        for (k = 0; k < 7; k++) {
            char name[16];
            kctl_obj *o = NULL;
            int v = -1;
            snprintf(name, sizeof name, "o%d", k);
            if (kctl_memstore_get(ms, &tp_cm, name, &o, NULL) == KCTL_OK && o) {
                kctl_json j;
                kctl_json_tok toks[32];
                size_t dl;
                const char *doc = kctl_obj_json(o, &dl);
                int64_t x;
                if (kctl_json_parse(doc, dl, toks, 32, NULL, &j) == KCTL_OK && kctl_json_int64(&j, kctl_json_path(&j, 0, "spec.i"), &x) == KCTL_OK)
                    v = (int)x;
                kctl_obj_unref(o);
            }
            if (v == last + 1 && (last + 1) % 7 == k) {
                model[k] = v; /* the write in flight, whole */
                kept++;
            } else if (v != model[k]) {
                kt_fail(__FILE__, __LINE__, "round %d: o%d holds %d, acknowledged %d (last acknowledged write %d)", round, k, v, model[k], last);
                failures++;
            }
        }
        next = last + 2; /* the next round's writes come after the one in flight */
        tp_destroy(ms, &a);
    }
    (void)kept; /* how often the write in flight was kept whole: timing, no check */
    kt_rmtree(dir);
}

/* The fsync policies, on the virtual clock: every write syncs; INTERVAL
   syncs at the first write at least sync_interval_ms after the last sync
   (and at destroy); NEVER does not sync the journal at all. */
static void tp_journal_sync_policies(void) {
    char dir[256], path[320];
    int pol;
    if (!tj_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    for (pol = 0; pol < 3; pol++) {
        static const uint64_t want[3] = { 6, 3, 0 }; /* INTERVAL: at 0, 150 and 300 ms */
        kctl_vclock vc;
        kctl_memstore_desc d;
        kctl_memstore *ms = NULL;
        kctl_memstore_persist_stats ps;
        kt_alloc a;
        char jpath[340];
        int i;
        snprintf(jpath, sizeof jpath, "%s.journal", path);
        unlink(path);
        unlink(jpath);
        kctl_vclock_init(&vc, KCTL_SEC(10));
        memset(&d, 0, sizeof d);
        kt_alloc_init(&a);
        d.allocator = kt_allocator(&a);
        d.clock = kctl_vclock_clock(&vc);
        d.path = path;
        d.save_on_write = true;
        d.sync = (kctl_memstore_sync)pol;
        d.sync_interval_ms = 100;
        KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK);
        if (!ms) continue;
        for (i = 0; i < 6; i++) { /* at 0, 75, 150, 225, 300, 375 ms */
            char doc[96];
            snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"p%d\"}}", i);
            KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
            kctl_vclock_advance(&vc, KCTL_MS(75));
        }
        KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
        KT_EQ_U64(ps.records, 6);
        if (ps.syncs != want[pol]) kt_fail(__FILE__, __LINE__, "policy %d: %llu fsyncs, want %llu", pol, (unsigned long long)ps.syncs,
                                           (unsigned long long)want[pol]);
        tp_destroy(ms, &a);
        KT_EQ_INT(tf_create(path, NULL, 0, NULL, &a, &ms), KCTL_OK); /* all six there: the process ended, the system kept the bytes */
        if (ms) {
            KT_EQ_U64(kctl_memstore_revision(ms), 6);
            tp_destroy(ms, &a);
        }
        kctl_vclock_deinit(&vc);
    }
    kt_rmtree(dir);
}

/* ---- issue 13: SYNC_INTERVAL syncs a write within the interval even when
   no other write comes (the timer: kctl_memstore_flush on a virtual
   clock, the store's flusher thread on the real one). */
static void tp_journal_interval_flush(void) {
    char dir[256], path[320];
    kctl_vclock vc;
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_memstore_persist_stats ps;
    kt_alloc a;
    uint64_t next = 0;
    if (!tj_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    kctl_vclock_init(&vc, KCTL_SEC(10));
    memset(&d, 0, sizeof d);
    kt_alloc_init(&a);
    d.allocator = kt_allocator(&a);
    d.clock = kctl_vclock_clock(&vc);
    d.path = path;
    d.save_on_write = true;
    d.sync = KCTL_MEMSTORE_SYNC_INTERVAL;
    d.sync_interval_ms = 100;
    KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK);
    if (!ms) goto out;
    KT_EQ_INT(kctl_memstore_flush(ms, &next), KCTL_OK); /* nothing waits */
    KT_EQ_U64(next, UINT64_MAX);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL), KCTL_OK); /* synced: the first */
    kctl_vclock_advance(&vc, KCTL_MS(10));
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, NULL), KCTL_OK); /* waits */
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
    KT_EQ_U64(ps.syncs, 1);
    KT_EQ_INT(kctl_memstore_flush(ms, &next), KCTL_OK); /* not yet due: 100 ms after the first sync */
    KT_EQ_U64(next, KCTL_SEC(10) + KCTL_MS(100));
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
    KT_EQ_U64(ps.syncs, 1);
    kctl_vclock_advance(&vc, KCTL_MS(89));
    KT_EQ_INT(kctl_memstore_flush(ms, &next), KCTL_OK);
    KT_EQ_U64(next, KCTL_SEC(10) + KCTL_MS(100));
    kctl_vclock_advance(&vc, KCTL_MS(1)); /* due */
    KT_EQ_INT(kctl_memstore_flush(ms, &next), KCTL_OK);
    KT_EQ_U64(next, UINT64_MAX);
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
    KT_EQ_U64(ps.syncs, 2);
    KT_EQ_INT(kctl_memstore_flush(ms, &next), KCTL_OK); /* nothing more */
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
    KT_EQ_U64(ps.syncs, 2);
    KT_EQ_INT(kctl_memstore_flush(NULL, &next), KCTL_ERR_INVALID_ARG);
    tp_destroy(ms, &a);
out:
    kctl_vclock_deinit(&vc);
    kt_rmtree(dir);
}

#ifndef KCTL_NO_THREADS
static void tp_journal_interval_flusher(void) {
    char dir[256], path[320];
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_memstore_persist_stats ps;
    kt_alloc a;
    int i;
    if (!tj_mkdtemp(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/store.db", dir);
    memset(&d, 0, sizeof d);
    kt_alloc_init(&a);
    d.allocator = kt_allocator(&a);
    d.path = path;
    d.save_on_write = true;
    d.sync = KCTL_MEMSTORE_SYNC_INTERVAL;
    d.sync_interval_ms = 20;
    KT_EQ_INT(kctl_memstore_create(&d, &ms), KCTL_OK);
    if (!ms) goto out;
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"a\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, "{\"metadata\":{\"name\":\"b\"}}", KCTL_NTS, NULL, NULL), KCTL_OK);
    /* the second waits for the flusher (or was past the interval already,
       on a slow machine): either way both become durable without another
       write; the bound is only there so that a broken flusher fails */
    for (i = 0; i < 2000; i++) {
        KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
        if (ps.syncs >= 2) break;
        nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
    }
    KT_EQ_U64(ps.syncs, 2);
    tp_destroy(ms, &a);
out:
    kt_rmtree(dir);
}
#endif

/* ---- issue 13: a port's file layer carries everything: the snapshot is
   read back through it too (it was read with POSIX calls, so a store on a
   file system of its own lost what a compaction had folded). */
#define TP_MEMFS_FILES 8
#define TP_MEMFS_FDS 8
typedef struct tp_memfs {
    struct { char name[128]; char *data; size_t len; bool used; } f[TP_MEMFS_FILES];
    struct { int file; size_t pos; bool open, dir; } fd[TP_MEMFS_FDS];
    int opens_read;
} tp_memfs;

static int tp_memfs_find(tp_memfs *m, const char *path) {
    int i;
    for (i = 0; i < TP_MEMFS_FILES; i++)
        if (m->f[i].used && strcmp(m->f[i].name, path) == 0) return i;
    return -1;
}
static int tp_memfs_open(const char *path, int flags, void *ud) {
    tp_memfs *m = (tp_memfs *)ud;
    int fi = tp_memfs_find(m, path), k;
    for (k = 0; k < TP_MEMFS_FDS && m->fd[k].open; k++) {}
    if (k == TP_MEMFS_FDS || strlen(path) >= sizeof m->f[0].name) { errno = EMFILE; return -1; }
    if (flags & KCTL_FS_DIR) {
        m->fd[k].open = m->fd[k].dir = true;
        return k;
    }
    if (fi < 0 && !(flags & KCTL_FS_WRITE)) { errno = ENOENT; return -1; }
    if (fi < 0) {
        for (fi = 0; fi < TP_MEMFS_FILES && m->f[fi].used; fi++) {}
        if (fi == TP_MEMFS_FILES) { errno = ENOSPC; return -1; }
        memset(&m->f[fi], 0, sizeof m->f[fi]);
        m->f[fi].used = true;
        strcpy(m->f[fi].name, path);
    }
    if (flags & KCTL_FS_TRUNC) m->f[fi].len = 0;
    if (!(flags & KCTL_FS_WRITE)) m->opens_read++;
    m->fd[k].open = true;
    m->fd[k].dir = false;
    m->fd[k].file = fi;
    m->fd[k].pos = flags & KCTL_FS_APPEND ? m->f[fi].len : 0;
    return k;
}
static int64_t tp_memfs_read(int fd, void *buf, size_t n, void *ud) {
    tp_memfs *m = (tp_memfs *)ud;
    int fi = m->fd[fd].file;
    size_t k = m->f[fi].len - m->fd[fd].pos;
    if (m->fd[fd].dir) { errno = EISDIR; return -1; }
    if (k > n) k = n;
    memcpy(buf, m->f[fi].data + m->fd[fd].pos, k);
    m->fd[fd].pos += k;
    return (int64_t)k;
}
static int64_t tp_memfs_write(int fd, const void *buf, size_t n, void *ud) {
    tp_memfs *m = (tp_memfs *)ud;
    int fi = m->fd[fd].file;
    size_t end = m->f[fi].len; /* every write appends or follows a truncate here */
    char *nd = (char *)realloc(m->f[fi].data, end + n + 1);
    if (!nd) { errno = ENOSPC; return -1; }
    memcpy(nd + end, buf, n);
    m->f[fi].data = nd;
    m->f[fi].len = end + n;
    return (int64_t)n;
}
static int tp_memfs_sync(int fd, void *ud) { (void)fd; (void)ud; return 0; }
static int tp_memfs_truncate(int fd, uint64_t size, void *ud) {
    tp_memfs *m = (tp_memfs *)ud;
    int fi = m->fd[fd].file;
    if (size > m->f[fi].len) { errno = EINVAL; return -1; }
    m->f[fi].len = (size_t)size;
    return 0;
}
static int tp_memfs_close(int fd, void *ud) {
    tp_memfs *m = (tp_memfs *)ud;
    m->fd[fd].open = false;
    return 0;
}
static int tp_memfs_rename(const char *from, const char *to, void *ud) {
    tp_memfs *m = (tp_memfs *)ud;
    int a = tp_memfs_find(m, from), b = tp_memfs_find(m, to);
    if (a < 0) { errno = ENOENT; return -1; }
    if (b >= 0) {
        free(m->f[b].data);
        m->f[b].data = NULL;
        m->f[b].used = false;
    }
    strcpy(m->f[a].name, to);
    return 0;
}
static int tp_memfs_unlink(const char *path, void *ud) {
    tp_memfs *m = (tp_memfs *)ud;
    int a = tp_memfs_find(m, path);
    if (a < 0) { errno = ENOENT; return -1; }
    free(m->f[a].data);
    m->f[a].data = NULL;
    m->f[a].used = false;
    return 0;
}

static void tp_custom_fs_round_trip(void) {
    tp_memfs *m = (tp_memfs *)calloc(1, sizeof *m);
    kctl_fs fs;
    kctl_memstore *ms = NULL;
    kctl_memstore_persist_stats ps;
    kt_alloc a;
    struct stat sb;
    int i;
    /* a path that is nowhere on this machine's disk */
    const char *path = "kctl-memfs-only/store.db";
    if (!m) { KT_CHECK(!"memory"); return; }
    KT_CHECK(lstat("kctl-memfs-only", &sb) != 0);
    memset(&fs, 0, sizeof fs);
    fs.open_fn = tp_memfs_open;
    fs.read_fn = tp_memfs_read;
    fs.write_fn = tp_memfs_write;
    fs.sync_fn = tp_memfs_sync;
    fs.truncate_fn = tp_memfs_truncate;
    fs.close_fn = tp_memfs_close;
    fs.rename_fn = tp_memfs_rename;
    fs.unlink_fn = tp_memfs_unlink;
    fs.user_data = m;
    KT_EQ_INT(tf_create(path, &fs, 512, NULL, &a, &ms), KCTL_OK); /* a journal past 512 bytes is folded */
    if (!ms) goto out;
    for (i = 0; i < 40; i++) {
        char doc[96];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"m%02d\"},\"data\":{\"k\":\"%d\"}}", i, i);
        KT_EQ_INT(kctl_memstore_apply(ms, &tp_cm, doc, KCTL_NTS, NULL, NULL), KCTL_OK);
    }
    KT_EQ_INT(kctl_memstore_read_persist_stats(ms, &ps), KCTL_OK);
    KT_CHECK(ps.snapshots >= 2); /* compactions happened: most writes live only in the snapshot */
    tp_destroy(ms, &a);
    KT_CHECK(lstat("kctl-memfs-only", &sb) != 0); /* nothing went to the real disk */
    m->opens_read = 0;
    KT_EQ_INT(tf_create(path, &fs, 512, NULL, &a, &ms), KCTL_OK);
    if (!ms) goto out;
    KT_EQ_INT(m->opens_read, 2); /* the snapshot and the journal, both through the layer */
    KT_EQ_U64(kctl_memstore_revision(ms), 40);
    for (i = 0; i < 40; i++) {
        char name[16], want[96], *doc;
        snprintf(name, sizeof name, "m%02d", i);
        snprintf(want, sizeof want, "\"k\":\"%d\"", i);
        doc = tp_doc(ms, &tp_cm, name);
        if (!doc || !strstr(doc, want)) kt_fail(__FILE__, __LINE__, "%s after the restart: %s", name, doc ? doc : "(missing)");
        free(doc);
    }
    tp_destroy(ms, &a);
out:
    for (i = 0; i < TP_MEMFS_FILES; i++) free(m->f[i].data);
    free(m);
}

void kt_suite_persist(void) {
    KT_RUN(tp_link_loop_dir_notdir);
    KT_RUN(tp_no_descriptors);
    KT_RUN(tp_not_a_regular_file);
    KT_RUN(tp_truncated_corrupt);
    KT_RUN(tp_linked_path);
    KT_RUN(tp_failed_save_unmade);
    KT_RUN(tp_loader_refuses);
    KT_RUN(tp_loader_uid_hashes);
    KT_RUN(tp_valid_round_trip);
    KT_RUN(tp_one_name_four_resources);
    KT_RUN(tp_concurrent_saves);
    KT_RUN(tp_journal_crash_points);
    KT_RUN(tp_journal_corrupt);
    KT_RUN(tp_journal_old_snapshot_compacts);
    KT_RUN(tp_journal_group_commit);
    KT_RUN(tp_journal_sync_fails);
    KT_RUN(tp_journal_sync_policies);
    KT_RUN(tp_journal_real_kills);
    KT_RUN(tp_journal_interval_flush);
#ifndef KCTL_NO_THREADS
    KT_RUN(tp_journal_interval_flusher);
#endif
    KT_RUN(tp_custom_fs_round_trip);
}
