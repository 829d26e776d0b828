/* journal.c - the memstore's persistence (not tests): prints numbers */
/*
    What a persisted write costs: the journal (issue 13: a record appended
    per write, group commit, folded into a snapshot past compact_bytes,
    1 MiB by default) against today's rewrite (kctl 0.4's save_on_write: the
    whole store written to a temporary file, fsynced, renamed, the
    directory fsynced, per write; here kctl_memstore_save after each write
    of a store without save_on_write, which is that same sequence), at
    1,000 and 100,000 objects, with the fsync policy every-write and never
    (the journal's KCTL_MEMSTORE_SYNC_NEVER; for the rewrite, a file layer
    whose fsync does nothing).

    The objects: ConfigMap-like documents of about 200 bytes
        {"metadata":{"name":"cm-<i>","labels":{"app":"a<i%100>"}},
         "spec":{"i":<i>,"payload":"<120 bytes>"}}
    in one namespace. Each write replaces one object, chosen by xorshift,
    with a new spec.i, from one thread. A configuration runs for about
    BENCH_JOURNAL_SECONDS (default 1.5) or 20,000 writes, whichever comes
    first, after the store was loaded from its snapshot (not timed).

    Printed per configuration: writes/s; bytes written per write (every
    byte the file layer was asked to write: records, journal headers,
    snapshots and their temporary files); fsyncs per write (files and
    directories). The directory is BENCH_DIR, else TMPDIR, else /tmp: the
    figures are those of its file system and disk (printed).
*/
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

typedef struct bj_fs {
    kctl_fs real;
    bool nosync;
    uint64_t bytes, syncs;
} bj_fs;

static bj_fs *bj_of(void *ud) { return (bj_fs *)ud; }
static int bj_open(const char *p, int f, void *ud) { return bj_of(ud)->real.open_fn(p, f, bj_of(ud)->real.user_data); }
static int64_t bj_read(int fd, void *b, size_t n, void *ud) { return bj_of(ud)->real.read_fn(fd, b, n, bj_of(ud)->real.user_data); }
static int64_t bj_write(int fd, const void *b, size_t n, void *ud) {
    int64_t k = bj_of(ud)->real.write_fn(fd, b, n, bj_of(ud)->real.user_data);
    if (k > 0) bj_of(ud)->bytes += (uint64_t)k;
    return k;
}
static int bj_sync(int fd, void *ud) {
    if (bj_of(ud)->nosync) return 0;
    bj_of(ud)->syncs++;
    return bj_of(ud)->real.sync_fn(fd, bj_of(ud)->real.user_data);
}
static int bj_truncate(int fd, uint64_t s, void *ud) { return bj_of(ud)->real.truncate_fn(fd, s, bj_of(ud)->real.user_data); }
static int bj_close(int fd, void *ud) { return bj_of(ud)->real.close_fn(fd, bj_of(ud)->real.user_data); }
static int bj_rename(const char *a, const char *b, void *ud) { return bj_of(ud)->real.rename_fn(a, b, bj_of(ud)->real.user_data); }
static int bj_unlink(const char *p, void *ud) { return bj_of(ud)->real.unlink_fn(p, bj_of(ud)->real.user_data); }

static kctl_fs bj_layer(bj_fs *f) {
    kctl_fs fs;
    fs.open_fn = bj_open;
    fs.read_fn = bj_read;
    fs.write_fn = bj_write;
    fs.sync_fn = bj_sync;
    fs.truncate_fn = bj_truncate;
    fs.close_fn = bj_close;
    fs.rename_fn = bj_rename;
    fs.unlink_fn = bj_unlink;
    fs.user_data = f;
    return fs;
}

/* xorshift64 (Marsaglia). */
static uint64_t bj_xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static const kctl_resource bj_cm = { "", "v1", "configmaps", "bench" };

static int bj_doc(char *buf, size_t cap, uint32_t i, uint64_t v) {
    return snprintf(buf, cap,
                    "{\"metadata\":{\"name\":\"cm-%u\",\"labels\":{\"app\":\"a%u\"}},\"spec\":{\"i\":%llu,\"payload\":"
                    "\"%0120llu\"}}",
                    i, i % 100, (unsigned long long)v, (unsigned long long)v);
}

/* A snapshot of n objects at path (and no journal). */
static void bj_seed(const char *path, uint32_t n) {
    char jpath[1200], doc[512];
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    uint32_t i;
    unlink(path);
    snprintf(jpath, sizeof jpath, "%s.journal", path);
    unlink(jpath);
    memset(&d, 0, sizeof d);
    d.path = path;
    d.history = 16;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) exit(1);
    for (i = 0; i < n; i++) {
        bj_doc(doc, sizeof doc, i, i);
        if (kctl_memstore_apply(ms, &bj_cm, doc, KCTL_NTS, NULL, NULL) != KCTL_OK) exit(1);
    }
    if (kctl_memstore_save(ms) != KCTL_OK) exit(1);
    kctl_memstore_destroy(ms);
}

static void bj_run(const char *path, uint32_t n, bool journal, bool every, double seconds) {
    char doc[512];
    bj_fs f;
    kctl_fs fs;
    kctl_memstore_desc d;
    kctl_memstore *ms = NULL;
    kctl_clock clk = kctl_clock_monotonic();
    uint64_t rng = 88172645463325252ull, writes = 0, t0, t1, deadline;
    bj_seed(path, n);
    memset(&f, 0, sizeof f);
    f.real = kctl_fs_posix();
    f.nosync = !journal && !every;
    fs = bj_layer(&f);
    memset(&d, 0, sizeof d);
    d.path = path;
    d.history = 16;
    d.fs = &fs;
    d.save_on_write = journal;
    d.sync = every ? KCTL_MEMSTORE_SYNC_EVERY : KCTL_MEMSTORE_SYNC_NEVER;
    if (kctl_memstore_create(&d, &ms) != KCTL_OK) exit(1);
    t0 = kctl_clock_now(&clk);
    deadline = t0 + (uint64_t)(seconds * 1e9);
    do {
        uint32_t i = (uint32_t)(bj_xorshift(&rng) % n);
        bj_doc(doc, sizeof doc, i, n + writes);
        if (kctl_memstore_apply(ms, &bj_cm, doc, KCTL_NTS, NULL, NULL) != KCTL_OK) exit(1);
        if (!journal && kctl_memstore_save(ms) != KCTL_OK) exit(1);
        writes++;
    } while (writes < 20000 && (writes < 5 || kctl_clock_now(&clk) < deadline));
    t1 = kctl_clock_now(&clk);
    printf("  %-8s %-14s %7u objects  %9.0f writes/s  %11.0f bytes/write  %5.2f fsyncs/write  (%llu writes)\n", journal ? "journal" : "rewrite",
           every ? "fsync every" : "fsync never", n, (double)writes / ((double)(t1 - t0) / 1e9), (double)f.bytes / (double)writes,
           (double)f.syncs / (double)writes, (unsigned long long)writes);
    fflush(stdout);
    kctl_memstore_destroy(ms);
}

int main(void) {
    const char *base = getenv("BENCH_DIR"), *secs = getenv("BENCH_JOURNAL_SECONDS");
    char dir[1024], path[1100];
    double seconds = secs && *secs ? atof(secs) : 1.5;
    static const uint32_t sizes[2] = { 1000, 100000 };
    int s, m;
    if (!base || !*base) base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(dir, sizeof dir, "%s/kctl-bench-journal-XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror(dir);
        return 1;
    }
    snprintf(path, sizeof path, "%s/store.db", dir);
    printf("journal: persisted writes, one writer, ~200-byte objects replaced at random, in %s\n", dir);
    printf("  (journal: compact_bytes 1 MiB, the default; rewrite: the whole store per write, as kctl 0.4's save_on_write)\n");
    for (s = 0; s < 2; s++)
        for (m = 0; m < 4; m++) bj_run(path, sizes[s], m < 2, m % 2 == 0, seconds);
    unlink(path);
    snprintf(path, sizeof path, "%s/store.db.journal", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}
