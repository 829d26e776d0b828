/* json.c - JSON and object figures at scale (not tests): prints numbers, median of 3 runs */
/*
    Big documents, to show that no path is quadratic: at n = 1,000, 64,000
    and 1,000,000 members, the time of each operation and its cost per
    member (a cost per member that stays flat as n grows 1,000-fold is
    linear; one that grows with log n, n log n; a quadratic path would grow
    1,000-fold). The documents, made before any timing:
        A  {"m0000000":0,"m0000001":1,...}            n members, sorted
        B  A's members shuffled ((i * 7919 + 1) % n), 16 names repeated
           first with "old" values (the later ones count)
        P  a merge patch of n members, shuffled: every 4th null, every 4th
           "v", the others as in A; then n/8 new names
        O  {"metadata":{"name":"big","labels":{<min(n, 65535) labels,
           shuffled>}},"spec":{<the rest of the n members>}} (an object
           holds at most 65,535 labels)

    a. parse: kctl_json_parse of A, counting then into tokens.
    b. equal: kctl_json_equal(A, B) (true).
       equal, same order: kctl_json_equal(A, A2), A2 a copy of A's text
       parsed apart (true; the names side by side, as one writer's two
       versions of a document compare).
    c. merge patch: kctl_json_merge_patch(A, P) into a growable writer.
    d. obj_parse: kctl_obj_parse(O), and kctl_obj_unref.
    e. label lookups: kctl_obj_label of every label of O (time per lookup).
    f. get by path: kctl_obj_get_string of the label named last in O's
       document: a walk over the text that reads all of the root object
       and all of the labels (the last of a repeated name counts), so its
       cost is given per byte of the document.
    g. iterate: kctl_obj_iter over O's labels, reading each value with
       kctl_json_value_get_string.
    Times come from kctl_clock_now(NULL) (CLOCK_MONOTONIC); each figure is
    the median of 3 runs, every run printed. The conditions are printed
    first (CPUs online, load average, how busy other processes kept the
    CPUs just before the start) and the load average again at the end.

    Build: cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -pthread bench/json.c -o bench_json
    Run:   ./bench_json        n = 1,000, 64,000, 1,000,000 (about 20 s)
           ./bench_json -q     n = 1,000 and 64,000 (for valgrind or ASan)
*/
#define _GNU_SOURCE 1 /* sched_getaffinity: the CPU steps line, each CPU pinned in turn */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "conditions.h"

typedef struct bench_doc {
    char *text;
    size_t len;
    kctl_json j;
    kctl_json_tok *toks;
} bench_doc;

/* A: kind 0; B: kind 0 shuffled with dups; P: kind 1 shuffled with fresh names. */
static char *bench_members(char *t, uint32_t n, uint32_t step, int kind, uint32_t dups, uint32_t fresh) {
    uint32_t k;
    int first = 1;
    for (k = 0; k < dups; k++, first = 0) t += sprintf(t, "%s\"m%07u\":\"old\"", first ? "" : ",", (unsigned)(k % n));
    for (k = 0; k < n; k++, first = 0) {
        uint32_t i = (uint32_t)(((uint64_t)k * step + 1) % n);
        const char *sep = first ? "" : ",";
        if (kind && i % 4 == 0) t += sprintf(t, "%s\"m%07u\":null", sep, (unsigned)i);
        else if (kind && i % 4 == 1) t += sprintf(t, "%s\"m%07u\":\"v\"", sep, (unsigned)i);
        else t += sprintf(t, "%s\"m%07u\":%u", sep, (unsigned)i, (unsigned)i);
    }
    for (k = 0; k < fresh; k++, first = 0) t += sprintf(t, "%s\"n%07u\":%u", first ? "" : ",", (unsigned)k, (unsigned)k);
    return t;
}

static int bench_open(bench_doc *d, uint32_t n, uint32_t step, int kind, uint32_t dups, uint32_t fresh) {
    kctl_json c;
    char *t;
    memset(d, 0, sizeof *d);
    if (!(d->text = (char *)malloc(((size_t)n + dups + fresh) * 24 + 8))) return -1;
    t = d->text;
    *t++ = '{';
    t = bench_members(t, n, step, kind, dups, fresh);
    *t++ = '}';
    *t = '\0';
    d->len = (size_t)(t - d->text);
    if (kctl_json_parse(d->text, d->len, NULL, 0, NULL, &c) != KCTL_OK) return -1;
    if (!(d->toks = (kctl_json_tok *)malloc((size_t)c.ntoks * sizeof *d->toks))) return -1;
    return kctl_json_parse(d->text, d->len, d->toks, c.ntoks, NULL, &d->j) == KCTL_OK ? 0 : -1;
}

static void bench_close(bench_doc *d) {
    free(d->text);
    free(d->toks);
}

/* O: labels "l0000000".. shuffled, and the rest of n as spec members. */
static char *bench_object(uint32_t n, uint32_t *nlabels, char **last_label, size_t *len) {
    uint32_t nl = n < 65535 ? n : 65535, k;
    char *t0 = (char *)malloc((size_t)n * 28 + 128), *t = t0;
    if (!t0) return NULL;
    t += sprintf(t, "{\"metadata\":{\"name\":\"big\",\"labels\":{");
    for (k = 0; k < nl; k++) {
        uint32_t i = (uint32_t)(((uint64_t)k * 7919 + 1) % nl);
        t += sprintf(t, "%s\"l%07u\":\"v%u\"", k ? "," : "", (unsigned)i, (unsigned)i);
        if (k == nl - 1) {
            *last_label = (char *)malloc(16);
            if (*last_label) sprintf(*last_label, "l%07u", (unsigned)i);
        }
    }
    t += sprintf(t, "}},\"spec\":{");
    t = bench_members(t, n - nl, 1, 0, 0, 0);
    t += sprintf(t, "}}");
    *nlabels = nl;
    *len = (size_t)(t - t0);
    return t0;
}

static int bench_fail(const char *what) {
    fprintf(stderr, "bench: %s failed\n", what);
    return 1;
}

static void bench_line(const char *what, double *runs, uint32_t per, const char *unit) {
    double m = bench_median(runs);
    printf("  %-20s %9.2f ms  %8.1f ns/%s ", what, m * 1e3, m * 1e9 / per, unit);
    bench_print_runs(runs, 1e-3, "%.2f");
    putchar('\n');
}

int main(int argc, char **argv) {
    static const uint32_t sizes[] = { 1000, 64000, 1000000 };
    int quick = argc > 1 && strcmp(argv[1], "-q") == 0;
    size_t s, ns = quick ? 2 : 3;
    uint64_t t_start = kctl_clock_now(NULL);
    (void)bench_xorshift; /* bench.h's, unused here */
    (void)bench_sort_pairs;
    if (argc > 1 && !quick) {
        fprintf(stderr, "usage: %s [-q]\n", argv[0]);
        return 2;
    }
    printf("kctl %s json bench%s: objects of n members, times and cost per member, median of %d runs\n", kctl_version(),
           quick ? " (quick: n up to 64,000)" : "", BENCH_RUNS);
    bench_conditions();
    fflush(stdout);
    for (s = 0; s < ns; s++) {
        uint32_t n = sizes[s], nl = 0, i;
        bench_doc a, a2, b, p;
        double parse[BENCH_RUNS], eq[BENCH_RUNS], eq2[BENCH_RUNS], merge[BENCH_RUNS], obj[BENCH_RUNS], look[BENCH_RUNS],
            get[BENCH_RUNS], iter[BENCH_RUNS];
        char *otext, *last = NULL, **keys;
        size_t olen = 0;
        int run;
        if (bench_open(&a, n, 1, 0, 0, 0) || bench_open(&a2, n, 1, 0, 0, 0) || bench_open(&b, n, 7919, 0, 16, 0) ||
            bench_open(&p, n, 7919, 1, 0, n / 8))
            return bench_fail("making the documents");
        if (!(otext = bench_object(n, &nl, &last, &olen)) || !last) return bench_fail("making the object");
        if (!(keys = (char **)malloc(nl * sizeof *keys))) return bench_fail("memory");
        for (i = 0; i < nl; i++) {
            if (!(keys[i] = (char *)malloc(16))) return bench_fail("memory");
            sprintf(keys[i], "l%07u", (unsigned)i);
        }
        for (run = 0; run < BENCH_RUNS; run++) {
            kctl_json c, j;
            kctl_jw w;
            kctl_obj *o = NULL;
            kctl_json_iter it;
            kctl_json_value v;
            char buf[32];
            uint32_t found = 0, seen = 0;
            uint64_t t0, t1;

            t0 = kctl_clock_now(NULL);
            if (kctl_json_parse(a.text, a.len, NULL, 0, NULL, &c) != KCTL_OK ||
                kctl_json_parse(a.text, a.len, a.toks, c.ntoks, NULL, &j) != KCTL_OK)
                return bench_fail("parse");
            t1 = kctl_clock_now(NULL);
            parse[run] = bench_seconds(t0, t1);

            t0 = kctl_clock_now(NULL);
            if (!kctl_json_equal(&a.j, 0, &b.j, 0)) return bench_fail("equal");
            t1 = kctl_clock_now(NULL);
            eq[run] = bench_seconds(t0, t1);

            t0 = kctl_clock_now(NULL);
            if (!kctl_json_equal(&a.j, 0, &a2.j, 0)) return bench_fail("equal, same order");
            t1 = kctl_clock_now(NULL);
            eq2[run] = bench_seconds(t0, t1);

            kctl_jw_init_growable(&w, NULL);
            t0 = kctl_clock_now(NULL);
            if (kctl_json_merge_patch(&a.j, 0, &p.j, 0, &w) != KCTL_OK) return bench_fail("merge patch");
            t1 = kctl_clock_now(NULL);
            kctl_jw_free(&w);
            merge[run] = bench_seconds(t0, t1);

            t0 = kctl_clock_now(NULL);
            if (kctl_obj_parse(otext, olen, NULL, &o) != KCTL_OK) return bench_fail("obj_parse");
            t1 = kctl_clock_now(NULL);
            obj[run] = bench_seconds(t0, t1);

            t0 = kctl_clock_now(NULL);
            for (i = 0; i < nl; i++) found += kctl_obj_label(o, keys[i]) != NULL;
            t1 = kctl_clock_now(NULL);
            if (found != nl) return bench_fail("label lookups");
            look[run] = bench_seconds(t0, t1);

            t0 = kctl_clock_now(NULL);
            if (kctl_obj_get_string(o, "metadata.labels", buf, sizeof buf, NULL) != KCTL_ERR_INVALID_ARG) return bench_fail("get");
            {
                char path[64];
                snprintf(path, sizeof path, "metadata.labels.%s", last);
                if (kctl_obj_get_string(o, path, buf, sizeof buf, NULL) != KCTL_OK) return bench_fail("get");
            }
            t1 = kctl_clock_now(NULL);
            get[run] = bench_seconds(t0, t1);

            t0 = kctl_clock_now(NULL);
            if (kctl_obj_iter_begin(o, "metadata.labels", &it) != KCTL_OK) return bench_fail("iterate");
            while (kctl_json_iter_next(&it, NULL, &v))
                seen += kctl_json_value_get_string(&v, NULL, buf, sizeof buf, NULL) == KCTL_OK;
            t1 = kctl_clock_now(NULL);
            if (seen != nl) return bench_fail("iterate");
            iter[run] = bench_seconds(t0, t1);
            kctl_obj_unref(o);
        }
        printf("n = %u (A: %.1f MB; O: %u labels, %.1f MB)\n", (unsigned)n, (double)a.len / 1e6, (unsigned)nl, (double)olen / 1e6);
        bench_line("a. parse", parse, n, "member");
        bench_line("b. equal", eq, n, "member");
        bench_line("b. equal, same order", eq2, n, "member");
        bench_line("c. merge patch", merge, n, "member");
        bench_line("d. obj_parse", obj, n, "member");
        bench_line("e. labels", look, nl, "lookup");
        bench_line("f. get by path", get, (uint32_t)olen, "byte");
        bench_line("g. iterate", iter, nl, "label");
        fflush(stdout);
        for (i = 0; i < nl; i++) free(keys[i]);
        free(keys);
        free(last);
        free(otext);
        bench_close(&a);
        bench_close(&a2);
        bench_close(&b);
        bench_close(&p);
    }
    {
        char la[64];
        bench_loadavg_text(la, sizeof la);
        printf("conditions at the end: load average %s\n", la);
    }
    printf("bench time %.1f s\n", bench_seconds(t_start, kctl_clock_now(NULL)));
    return 0;
}
