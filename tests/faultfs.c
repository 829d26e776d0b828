/* faultfs.c - an LD_PRELOAD shim for tests/faultfs_driver.c: a disk that
   fills up or fails, for the files the memstore saves, and nothing else.

   It wraps write(), fsync() and rename(). A call is watched when it is
   about a file whose path ends in ".tmp" (the memstore's temporary file)
   or ".journal" (its journal) or one of the paths in KCTL_FAULTFS_PATHS; the rest (the program's own
   output, its logs) goes straight through. Set in the environment:

     KCTL_FAULTFS_BUDGET  bytes that watched writes may take in all (unset:
                          no limit). Past it, what KCTL_FAULTFS_FAIL names
                          fails.
     KCTL_FAULTFS_FAIL    any of "write" (a write cut short to the budget
                          left, then ENOSPC), "fsync" (EIO on a file),
                          "dirsync" (EIO on a directory), "rename" (EIO);
                          default "write".
     KCTL_FAULTFS_EVERY   N: once the budget is spent, only every Nth
                          watched call of those kinds fails (default 1:
                          every one), for failures that come and go.
     KCTL_FAULTFS_DISK    bytes the disk holds instead: a write to
                          "<file>.tmp" or "<file>.journal" fails with
                          ENOSPC (cut short first) once "<file>",
                          "<file>.tmp" and "<file>.journal" would need more.
     KCTL_FAULTFS_PATHS   more watched paths, ':'-separated, compared
                          whole (a directory here is what "dirsync" hits).

   Loaded, it sets KCTL_FAULTFS_LOADED=1 so a program can tell that the
   preload took (it does not under a static link or a sanitizer runtime
   that must come first) and can work: it names a descriptor through
   /proc/self/fd (Linux), and without it sets nothing. Not thread-safe: the driver's children are single-threaded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef ssize_t (*ff_write_fn)(int, const void *, size_t);
typedef int (*ff_fsync_fn)(int);
typedef int (*ff_rename_fn)(const char *, const char *);

static unsigned long long ff_spent; /* bytes written to watched files */
static unsigned long ff_calls;      /* watched calls of a failing kind past the budget */

__attribute__((constructor)) static void ff_init(void) {
    if (access("/proc/self/fd", R_OK) == 0) setenv("KCTL_FAULTFS_LOADED", "1", 1); /* it can name descriptors */
}

/* The next definition of name (libc's), as a data pointer; a union
   turns it into the function pointer ISO C will not cast it to. */
static void *ff_next(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) abort();
    return f;
}

static bool ff_env_num(const char *name, unsigned long long *out) {
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) return false;
    *out = strtoull(v, &end, 10);
    return *end == '\0';
}

static bool ff_fails(const char *kind) {
    const char *f = getenv("KCTL_FAULTFS_FAIL");
    size_t n = strlen(kind);
    if (!f || !*f) return strcmp(kind, "write") == 0;
    while (*f) {
        const char *comma = strchr(f, ',');
        size_t len = comma ? (size_t)(comma - f) : strlen(f);
        if (len == n && memcmp(f, kind, n) == 0) return true;
        f += len + (comma ? 1 : 0);
    }
    return false;
}

static bool ff_watched_path(const char *path) {
    const char *list = getenv("KCTL_FAULTFS_PATHS");
    size_t n = strlen(path);
    if (n >= 4 && strcmp(path + n - 4, ".tmp") == 0) return true;
    if (n >= 8 && strcmp(path + n - 8, ".journal") == 0) return true;
    while (list && *list) {
        const char *colon = strchr(list, ':');
        size_t len = colon ? (size_t)(colon - list) : strlen(list);
        if (len == n && memcmp(list, path, n) == 0) return true;
        list += len + (colon ? 1 : 0);
    }
    return false;
}

/* The path of descriptor fd into buf, or false. */
static bool ff_fd_path(int fd, char *buf, size_t cap) {
    char link[64];
    ssize_t k;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    k = readlink(link, buf, cap - 1);
    if (k <= 0) return false;
    buf[k] = '\0';
    return true;
}

/* Whether a watched call of this kind fails now (the budget is spent and
   it is its turn). */
static bool ff_fail_now(const char *kind) {
    unsigned long long budget, every = 1;
    if (!ff_fails(kind) || !ff_env_num("KCTL_FAULTFS_BUDGET", &budget) || ff_spent < budget) return false;
    ff_env_num("KCTL_FAULTFS_EVERY", &every);
    ff_calls++;
    return every <= 1 || ff_calls % every == 0;
}

ssize_t write(int fd, const void *buf, size_t n) {
    static ff_write_fn real;
    char path[4096];
    unsigned long long budget, disk;
    ssize_t k;
    if (!real) {
        union { void *p; ff_write_fn f; } u;
        u.p = ff_next("write");
        real = u.f;
    }
    if (!ff_fd_path(fd, path, sizeof path) || !ff_watched_path(path)) return real(fd, buf, n);
    if (ff_env_num("KCTL_FAULTFS_DISK", &disk)) { /* the file, its temporary and its journal share the disk */
        static const char *const parts[3] = { "", ".tmp", ".journal" };
        struct stat sb;
        size_t len = strlen(path), cut = 0, p;
        unsigned long long used = 0;
        if (len > 4 && strcmp(path + len - 4, ".tmp") == 0) cut = 4;
        else if (len > 8 && strcmp(path + len - 8, ".journal") == 0) cut = 8;
        if (!cut && fstat(fd, &sb) == 0) used += (unsigned long long)sb.st_size;
        for (p = 0; cut && p < 3; p++) {
            char other[4096 + 16];
            snprintf(other, sizeof other, "%.*s%s", (int)(len - cut), path, parts[p]);
            if (stat(other, &sb) == 0) used += (unsigned long long)sb.st_size;
        }
        if (used >= disk) {
            errno = ENOSPC;
            return -1;
        }
        if (n > disk - used) n = (size_t)(disk - used);
        return real(fd, buf, n);
    }
    if (ff_fails("write") && ff_env_num("KCTL_FAULTFS_BUDGET", &budget)) {
        if (ff_spent >= budget) {
            errno = ENOSPC;
            return -1;
        }
        if (n > budget - ff_spent) n = (size_t)(budget - ff_spent); /* a short write first, as a filling disk gives */
    }
    k = real(fd, buf, n);
    if (k > 0) ff_spent += (unsigned long long)k;
    return k;
}

int fsync(int fd) {
    static ff_fsync_fn real;
    char path[4096];
    struct stat sb;
    if (!real) {
        union { void *p; ff_fsync_fn f; } u;
        u.p = ff_next("fsync");
        real = u.f;
    }
    if (ff_fd_path(fd, path, sizeof path) && ff_watched_path(path) && fstat(fd, &sb) == 0 &&
        ff_fail_now(S_ISDIR(sb.st_mode) ? "dirsync" : "fsync")) {
        errno = EIO;
        return -1;
    }
    return real(fd);
}

int rename(const char *from, const char *to) {
    static ff_rename_fn real;
    if (!real) {
        union { void *p; ff_rename_fn f; } u;
        u.p = ff_next("rename");
        real = u.f;
    }
    if (ff_watched_path(from) && ff_fail_now("rename")) {
        errno = EIO;
        return -1;
    }
    return real(from, to);
}
