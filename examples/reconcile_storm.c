/* reconcile_storm.c - the "requeue after 5s" reconcile storm, reproduced on a virtual clock */
/*
    A real incident: after a network blip, 200 ManagedClusters reconnected at
    once and every reconcile failed. The controller answered each failure with

        return ctrl.Result{RequeueAfter: 5 * time.Second}, nil   // error dropped

    so the work queue never saw an error and never backed off: 200 objects
    every 5 s, 40 reconciles a second against the API server, for as long as
    the failure lasted. The one-line fix is to return the error,

        return ctrl.Result{}, err

    which makes the queue retry the key through its rate limiter.

    This program runs both for 600 virtual seconds on a kctl_vclock:
      A  on error: kctl_queue_add_after(q, key, KCTL_SEC(5))
      B  on error: kctl_queue_add_rate_limited(q, key), default limiter
         (max of per-key exponential 5 ms .. 1000 s and a 10/s burst-100 bucket)
    It is single-threaded and never sleeps: it hands out every ready key with
    kctl_queue_try_get, "reconciles" it (always fails), requeues it, and when
    nothing is ready moves the clock to kctl_queue_next_ready.

    Build: cc -std=c99 -D_POSIX_C_SOURCE=200809L -O2 -pthread \
               examples/reconcile_storm.c -o reconcile_storm
*/
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

#include <stdio.h>
#include <string.h>

#define STORM_OBJECTS 200
#define STORM_SECONDS 600
#define STORM_MINUTES (STORM_SECONDS / 60)

typedef enum storm_strategy {
    STORM_REQUEUE_AFTER = 0,  /* A: the bug */
    STORM_RATE_LIMITED  = 1   /* B: the fix */
} storm_strategy;

typedef struct storm_result {
    uint32_t per_second[STORM_SECONDS]; /* reconciles in each virtual second */
    uint64_t total;
    uint32_t peak;                      /* most reconciles in one second */
    uint32_t peak_second;               /* the first second with that many */
    uint32_t peak_late;                 /* most in one second after the first minute */
    uint32_t max_failures;              /* largest num_requeues at the end (B) */
} storm_result;

/* Run one strategy for STORM_SECONDS of virtual time. 0 on success. */
static int storm_run(storm_strategy strategy, storm_result *res)
{
    /* Any origin will do; not 0, so that next_ready's 0 ("ready now") can
       never be mistaken for a time. */
    const uint64_t start = KCTL_SEC(1000);
    const uint64_t end = start + KCTL_SEC(STORM_SECONDS);
    static char keys[STORM_OBJECTS][32];
    kctl_vclock vc;
    kctl_queue_desc desc;
    kctl_queue *q = NULL;
    const char *key;
    int rc, i, failed = 0;

    memset(res, 0, sizeof *res);
    kctl_vclock_init(&vc, start);
    desc = kctl_queue_desc_init();
    desc.name = strategy == STORM_REQUEUE_AFTER ? "storm-a" : "storm-b";
    desc.clock = kctl_vclock_clock(&vc);
    desc.limiter = NULL; /* kctl_limiter_default on the virtual clock */
    rc = kctl_queue_create(&desc, &q);
    if (rc != KCTL_OK) {
        fprintf(stderr, "reconcile_storm: kctl_queue_create: %s\n", kctl_strerror(rc));
        kctl_vclock_deinit(&vc);
        return 1;
    }

    /* t = 0: the informer's initial list queues every object. */
    for (i = 0; i < STORM_OBJECTS; i++) {
        snprintf(keys[i], sizeof keys[i], "default/cluster-%03d", i);
        rc = kctl_queue_add(q, keys[i]);
        if (rc != KCTL_OK) {
            fprintf(stderr, "reconcile_storm: kctl_queue_add(%s): %s\n", keys[i], kctl_strerror(rc));
            failed = 1;
            goto out;
        }
    }

    for (;;) {
        uint64_t now = kctl_clock_now(&desc.clock), next, sec;

        /* Reconcile every key that is ready now; each one fails. */
        while ((rc = kctl_queue_try_get(q, &key)) == KCTL_OK) {
            sec = (now - start) / KCTL_SEC(1);
            if (sec < STORM_SECONDS) {
                res->per_second[sec]++;
                res->total++;
            }
            if (strategy == STORM_REQUEUE_AFTER)
                rc = kctl_queue_add_after(q, key, KCTL_SEC(5)); /* RequeueAfter: 5s, nil */
            else
                rc = kctl_queue_add_rate_limited(q, key);       /* return err */
            if (rc != KCTL_OK) {
                fprintf(stderr, "reconcile_storm: requeue %s: %s\n", key, kctl_strerror(rc));
                kctl_queue_done(q, key);
                failed = 1;
                goto out;
            }
            kctl_queue_done(q, key);
        }
        if (rc != KCTL_ERR_AGAIN) {
            fprintf(stderr, "reconcile_storm: kctl_queue_try_get: %s\n", kctl_strerror(rc));
            failed = 1;
            goto out;
        }

        /* Nothing ready: jump to the next time a key becomes ready. */
        next = kctl_queue_next_ready(q);
        if (next == UINT64_MAX || next >= end)
            break;
        if (next <= now) {
            fprintf(stderr, "reconcile_storm: try_get found nothing ready at %llu ns, "
                    "but next_ready says %llu ns\n", (unsigned long long)now, (unsigned long long)next);
            failed = 1;
            goto out;
        }
        kctl_vclock_advance(&vc, next - now);
    }

    for (i = 0; i < STORM_SECONDS; i++) {
        if (res->per_second[i] > res->peak) {
            res->peak = res->per_second[i];
            res->peak_second = (uint32_t)i;
        }
        if (i >= 60 && res->per_second[i] > res->peak_late)
            res->peak_late = res->per_second[i];
    }
    for (i = 0; i < STORM_OBJECTS; i++) {
        uint32_t n = kctl_queue_num_requeues(q, keys[i]);
        if (n > res->max_failures)
            res->max_failures = n;
    }

out:
    kctl_queue_destroy(q);
    kctl_vclock_deinit(&vc);
    return failed;
}

static uint64_t storm_minute(const storm_result *r, int minute)
{
    uint64_t n = 0;
    int s;
    for (s = minute * 60; s < (minute + 1) * 60; s++)
        n += r->per_second[s];
    return n;
}

/* The default limiter's exponential delay after n failures: 5 ms * 2^n, capped at 1000 s. */
static double storm_backoff_s(uint32_t n)
{
    double d = 0.005;
    while (n-- > 0 && d < 1000.0)
        d *= 2.0;
    return d < 1000.0 ? d : 1000.0;
}

int main(void)
{
    static storm_result a, b;
    uint64_t b_rest = 0;
    int m;

    if (storm_run(STORM_REQUEUE_AFTER, &a) != 0 || storm_run(STORM_RATE_LIMITED, &b) != 0)
        return 1;
    for (m = 1; m < STORM_MINUTES; m++)
        b_rest += storm_minute(&b, m);

    printf("kctl %s - reconcile storm: %d objects whose reconcile always fails, %d s of virtual time\n\n",
           kctl_version(), STORM_OBJECTS, STORM_SECONDS);
    printf("  reconciles      A         B\n");
    printf("  ----------  --------  --------\n");
    for (m = 0; m < STORM_MINUTES; m++)
        printf("  minute %2d   %8llu  %8llu\n", m + 1,
               (unsigned long long)storm_minute(&a, m), (unsigned long long)storm_minute(&b, m));
    printf("  ----------  --------  --------\n");
    printf("  total       %8llu  %8llu\n", (unsigned long long)a.total, (unsigned long long)b.total);
    printf("  average/s   %8.1f  %8.1f\n", (double)a.total / STORM_SECONDS, (double)b.total / STORM_SECONDS);
    printf("  peak in 1 s %8lu  %8lu\n", (unsigned long)a.peak, (unsigned long)b.peak);
    printf("  at second  %8lu  %8lu\n", (unsigned long)a.peak_second, (unsigned long)b.peak_second);
    printf("  peak after  %8lu  %8lu   (most in one second after the first minute)\n\n",
           (unsigned long)a.peak_late, (unsigned long)b.peak_late);

    printf("A retries all %d objects every 5 s for as long as the failure lasts: %.0f reconciles/s on\n"
           "  average, in lock-step bursts of %lu within one second, since nothing spreads or slows them.\n",
           STORM_OBJECTS, (double)a.total / STORM_SECONDS, (unsigned long)a.peak);
    printf("B starts the same, plus the bucket's burst of 100 quick retries (its peak, second %lu), then the\n"
           "  shared 10/s bucket holds it to %lu in any second while each object's delay doubles (5 ms, 10 ms,\n"
           "  ... up to 1000 s): %llu reconciles in minutes 2-%d (%.2f/s), thinning out; each object has\n"
           "  failed %lu times by the end and its latest retry was %.0f s away.\n\n",
           (unsigned long)b.peak_second, (unsigned long)b.peak_late, (unsigned long long)b_rest, STORM_MINUTES,
           (double)b_rest / (STORM_SECONDS - 60), (unsigned long)b.max_failures,
           b.max_failures ? storm_backoff_s(b.max_failures - 1) : 0.0);

    printf("A = on error, return ctrl.Result{RequeueAfter: 5s}, nil -> kctl_queue_add_after(q, key, KCTL_SEC(5))\n");
    printf("B = on error, return ctrl.Result{}, err               -> kctl_queue_add_rate_limited(q, key)\n");
    return 0;
}
