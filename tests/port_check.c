/* port_check.c - the port layer with threads (make test): a controller with
   two workers and an informer on threads kctl starts, each thread's stack
   KCTL_THREAD_STACK_SIZE bytes. Built twice: on the POSIX port, where each
   thread reads its own stack size from the system (glibc's
   pthread_getattr_np; elsewhere it checks only that the program runs), and
   with PORT_CHECK_CUSTOM on a port of its own (KCTL_PORT_CUSTOM over
   pthreads, as a port to an RTOS is written) whose thread start records
   the size it is asked for. Exits 0 when every reconcile ran and every
   thread had the size asked for. */
#define _GNU_SOURCE /* pthread_getattr_np: the test's own reading, not kctl's */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <stdint.h>
#define PORT_CHECK_STACK (192 * 1024)
#define KCTL_THREAD_STACK_SIZE PORT_CHECK_STACK

#ifdef PORT_CHECK_CUSTOM
static size_t pc_started[8];
static int pc_nstarted;
static uint64_t pc_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}
static int pc_wait_until(pthread_cond_t *c, pthread_mutex_t *m, uint64_t at) {
    struct timespec ts; /* the condition variable runs on CLOCK_REALTIME here: convert */
    uint64_t now = pc_now_ns(), rel = at > now ? at - now : 0;
    clock_gettime(CLOCK_REALTIME, &ts);
    rel += (uint64_t)ts.tv_nsec;
    if (rel / 1000000000u > 1000000u) rel = UINT64_C(1000000) * 1000000000u;
    ts.tv_sec += (time_t)(rel / 1000000000u);
    ts.tv_nsec = (long)(rel % 1000000000u);
    return pthread_cond_timedwait(c, m, &ts);
}
static int pc_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack) {
    pthread_attr_t a;
    int rc;
    if (pc_nstarted < 8) pc_started[pc_nstarted++] = stack;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack);
    rc = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    return rc;
}
#define KCTL_PORT_CUSTOM
#define KCTL_PORT_NOW_NS() pc_now_ns()
#define KCTL_PORT_MUTEX pthread_mutex_t
#define KCTL_PORT_MUTEX_INIT(m) pthread_mutex_init((m), NULL)
#define KCTL_PORT_MUTEX_DEINIT(m) pthread_mutex_destroy(m)
#define KCTL_PORT_MUTEX_LOCK(m) pthread_mutex_lock(m)
#define KCTL_PORT_MUTEX_UNLOCK(m) pthread_mutex_unlock(m)
#define KCTL_PORT_COND pthread_cond_t
#define KCTL_PORT_COND_INIT(c) pthread_cond_init((c), NULL)
#define KCTL_PORT_COND_DEINIT(c) pthread_cond_destroy(c)
#define KCTL_PORT_COND_WAIT(c, m) pthread_cond_wait((c), (m))
#define KCTL_PORT_COND_WAIT_UNTIL(c, m, at) pc_wait_until((c), (m), (at))
#define KCTL_PORT_COND_SIGNAL(c) pthread_cond_signal(c)
#define KCTL_PORT_COND_BROADCAST(c) pthread_cond_broadcast(c)
#define KCTL_PORT_THREAD pthread_t
#define KCTL_PORT_THREAD_START(t, fn, arg, stack) pc_thread_start((t), (fn), (arg), (stack))
#define KCTL_PORT_THREAD_JOIN(t) pthread_join(*(t), NULL)
#endif

#define KCTL_IMPLEMENTATION
#include "../kctl.h"

static const kctl_resource things = { "example.io", "v1", "things", "default" };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int reconciles, bad_stacks, stacks_seen;

/* The running thread's stack size as the system has it (0: unknown here). */
static size_t my_stack(void) {
#if defined(__GLIBC__)
    pthread_attr_t a;
    size_t n = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return 0;
    pthread_attr_getstacksize(&a, &n);
    pthread_attr_destroy(&a);
    return n;
#else
    return 0;
#endif
}

static void note_stack(void) {
    size_t n = my_stack();
    pthread_mutex_lock(&mu);
    if (n) {
        stacks_seen++;
        if (n != PORT_CHECK_STACK) {
            bad_stacks++;
            printf("a kctl thread's stack: %zu bytes, not %d\n", n, PORT_CHECK_STACK);
        }
    }
    pthread_mutex_unlock(&mu);
}

static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0 };
    note_stack(); /* a worker's */
    pthread_mutex_lock(&mu);
    if (ctx->obj) reconciles++;
    pthread_mutex_unlock(&mu);
    return r;
}
static void on_add(kctl_obj *obj, void *user_data) {
    (void)obj;
    (void)user_data;
    note_stack(); /* the informer's */
}

int main(void) {
    kctl_memstore *ms = NULL;
    kctl_informer_desc id;
    kctl_informer *inf = NULL;
    kctl_controller_desc cd;
    kctl_controller *c = NULL;
    kctl_handler h;
    int i, n = 0, ok;
    memset(&id, 0, sizeof id);
    memset(&cd, 0, sizeof cd);
    memset(&h, 0, sizeof h);
    if (kctl_memstore_create(NULL, &ms) != KCTL_OK) return 1;
    for (i = 0; i < 20; i++) {
        char doc[96];
        snprintf(doc, sizeof doc, "{\"metadata\":{\"name\":\"t%d\"},\"spec\":{}}", i);
        if (kctl_memstore_apply(ms, &things, doc, KCTL_NTS, NULL, NULL) != KCTL_OK) return 1;
    }
    id.transport = kctl_memstore_transport(ms);
    id.resource = things;
    h.on_add = on_add;
    cd.transport = id.transport;
    cd.reconcile = reconcile;
    cd.workers = 2;
    if (kctl_informer_create(&id, &inf) != KCTL_OK || kctl_informer_add_handler(inf, &h) != KCTL_OK) return 1;
    cd.primary = inf;
    if (kctl_controller_create(&cd, &c) != KCTL_OK || kctl_informer_start(inf) != KCTL_OK ||
        kctl_controller_start(c, KCTL_SEC(10)) != KCTL_OK)
        return 1;
    for (i = 0; i < 1000 && n < 20; i++) { /* at most 10 s */
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&mu);
        n = reconciles;
        pthread_mutex_unlock(&mu);
    }
    kctl_controller_stop(c);
    kctl_informer_stop(inf);
    kctl_controller_destroy(c);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    ok = n >= 20 && bad_stacks == 0;
#ifdef PORT_CHECK_CUSTOM
    for (i = 0; i < pc_nstarted; i++)
        if (pc_started[i] != PORT_CHECK_STACK) ok = 0;
    ok = ok && pc_nstarted == 3; /* the informer, two workers */
    printf("port-check (custom port): %d reconciles, %d threads started, each asked for %d bytes of stack: %s\n", n,
           pc_nstarted, PORT_CHECK_STACK, ok ? "ok" : "FAILED");
#else
    printf("port-check (POSIX port): %d reconciles, %d thread stacks read, %d not of %d bytes: %s\n", n, stacks_seen,
           bad_stacks, PORT_CHECK_STACK, ok ? "ok" : "FAILED");
#endif
    return ok ? 0 : 1;
}
