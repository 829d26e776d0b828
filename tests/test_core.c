/* test_core.c - result codes, version, clocks, virtual clock, logging. */
#include "kt.h"

static void test_version(void) {
    KT_EQ_STR(kctl_version(), KCTL_VERSION_STRING);
    KT_EQ_INT(KCTL_VERSION_NUMBER, KCTL_VERSION_MAJOR * 10000 + KCTL_VERSION_MINOR * 100 + KCTL_VERSION_PATCH);
}

/* One version, kept in step: the macro, line 1's label and the last entry
   of VERSION HISTORY (the runner runs from the checkout's root). */
static void test_version_in_step(void) {
    FILE *f = fopen("kctl.h", "rb");
    char line[256], label[64], last[16] = "";
    bool in_history = false;
    if (!f) { KT_SKIP(); }
    KT_CHECK(fgets(line, sizeof line, f) != NULL);
    snprintf(label, sizeof label, "/* kctl.h v%s - ", KCTL_VERSION_STRING);
    KT_CHECK(strncmp(line, label, strlen(label)) == 0);
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "VERSION HISTORY")) in_history = true;
        else if (in_history && strncmp(line, "*/", 2) == 0) break;
        else if (in_history && line[0] == ' ' && line[4] >= '0' && line[4] <= '9')
            sscanf(line + 4, "%15s", last);
    }
    fclose(f);
    KT_EQ_STR(last, KCTL_VERSION_STRING);
}

/* The result list expands into the enum and kctl_strerror alike. */
static void test_result_list_expands(void) {
#define KT_RESULT_CHECK(id, v, msg, next) KT_EQ_INT(KCTL_##id, v); KT_EQ_STR(kctl_strerror(v), msg);
    KCTL_RESULTS(KT_RESULT_CHECK)
#undef KT_RESULT_CHECK
}

static void test_strerror_names_every_code(void) {
    static const int codes[] = {
        KCTL_OK, KCTL_ERR_INVALID_ARG, KCTL_ERR_NOMEM, KCTL_ERR_NOT_FOUND, KCTL_ERR_EXISTS,
        KCTL_ERR_CONFLICT, KCTL_ERR_GONE, KCTL_ERR_TIMEOUT, KCTL_ERR_AGAIN, KCTL_ERR_IO,
        KCTL_ERR_PROTO, KCTL_ERR_SHUTDOWN, KCTL_ERR_UNAUTHORIZED, KCTL_ERR_FORBIDDEN,
        KCTL_ERR_FULL, KCTL_ERR_TOO_LARGE };
    size_t n = sizeof codes / sizeof codes[0], i, j;
    const char *unknown = kctl_strerror(12345);
    KT_CHECK(unknown != NULL);
    KT_EQ_STR(kctl_strerror(-999), unknown);
    for (i = 0; i < n; i++) {
        const char *s = kctl_strerror(codes[i]);
        KT_CHECK(s != NULL && s[0] != 0);
        KT_CHECK(strcmp(s, unknown) != 0);
        if (i > 0) KT_CHECK(codes[i] < 0);
        for (j = 0; j < i; j++) {
            KT_CHECK(codes[i] != codes[j]);
            KT_CHECK(strcmp(s, kctl_strerror(codes[j])) != 0);
        }
    }
}

static void test_time_macros(void) {
    KT_EQ_U64(KCTL_MS(5), 5000000u);
    KT_EQ_U64(KCTL_SEC(1000), UINT64_C(1000000000000));
}

static void test_monotonic_clock(void) {
    kctl_clock c = kctl_clock_monotonic(), zero;
    uint64_t a, b, z;
    memset(&zero, 0, sizeof zero);
    a = kctl_clock_now(&c);
    z = kctl_clock_now(&zero);
    b = kctl_clock_now(NULL);
    KT_CHECK(a > 0);
    KT_CHECK(a <= z && z <= b);
}

static int wakes;
static void count_wake(void *arg) { (void)arg; wakes++; }

static void test_vclock(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_clock_waiter w1, w2;
    kctl_vclock_init(&vc, 1000);
    c = kctl_vclock_clock(&vc);
    KT_EQ_U64(kctl_clock_now(&c), 1000);
    kctl_vclock_advance(&vc, KCTL_SEC(2));
    KT_EQ_U64(kctl_clock_now(&c), 1000 + KCTL_SEC(2));
    /* waiters are woken on every advance until unsubscribed */
    memset(&w1, 0, sizeof w1);
    memset(&w2, 0, sizeof w2);
    w1.wake = w2.wake = count_wake;
    wakes = 0;
    c.subscribe_fn(&w1, c.user_data);
    c.subscribe_fn(&w2, c.user_data);
    kctl_vclock_advance(&vc, 1);
    KT_EQ_INT(wakes, 2);
    c.unsubscribe_fn(&w1, c.user_data);
    kctl_vclock_advance(&vc, 1);
    KT_EQ_INT(wakes, 3);
    c.unsubscribe_fn(&w2, c.user_data);
    kctl_vclock_advance(&vc, 1);
    KT_EQ_INT(wakes, 3);
    /* time saturates rather than wrapping */
    kctl_vclock_advance(&vc, UINT64_MAX);
    KT_EQ_U64(kctl_clock_now(&c), UINT64_MAX);
    kctl_vclock_deinit(&vc);
    /* NULL is harmless */
    kctl_vclock_advance(NULL, 1);
    kctl_vclock_init(NULL, 0);
}

static void test_histogram_bounds(void) {
    KT_EQ_U64(kctl_histogram_bound_ns(0), 10);
    KT_EQ_U64(kctl_histogram_bound_ns(1), 100);
    KT_EQ_U64(kctl_histogram_bound_ns(11), UINT64_C(1000000000000)); /* 1000 s */
    KT_EQ_U64(kctl_histogram_bound_ns(12), UINT64_MAX);
    KT_EQ_U64(kctl_histogram_bound_ns(-1), UINT64_MAX);
}

typedef struct log_rec { int n; int level; uint32_t item; int had_message; } log_rec;
static void record_log(int level, uint32_t item, const char *message, void *user_data) {
    log_rec *r = (log_rec *)user_data;
    r->n++;
    r->level = level;
    r->item = item;
    r->had_message = message != NULL && message[0] != 0;
}

static void test_logger_gets_item_ids(void) {
    kctl_queue_desc d = kctl_queue_desc_init();
    kctl_queue *q;
    log_rec r;
    memset(&r, 0, sizeof r);
    d.logger.func = record_log;
    d.logger.user_data = &r;
    KT_EQ_INT(kctl_queue_create(&d, &q), KCTL_OK);
    kctl_queue_done(q, "never/handed-out");
    KT_EQ_INT(r.n, 1);
    KT_EQ_INT(r.level, KCTL_LOG_WARN);
    KT_EQ_INT(r.item, KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING);
#ifndef KCTL_NO_LOG_STRINGS
    KT_CHECK(r.had_message);
#endif
    kctl_queue_destroy(q);
}

static void test_silent_without_logger(void) {
    kctl_queue *q;
    KT_EQ_INT(kctl_queue_create(NULL, &q), KCTL_OK);
    kctl_queue_done(q, "nobody"); /* no logger: nothing to call, no crash */
    kctl_queue_destroy(q);
}

void kt_suite_core(void) {
    KT_RUN(test_version);
    KT_RUN(test_version_in_step);
    KT_RUN(test_result_list_expands);
    KT_RUN(test_strerror_names_every_code);
    KT_RUN(test_time_macros);
    KT_RUN(test_monotonic_clock);
    KT_RUN(test_vclock);
    KT_RUN(test_histogram_bounds);
    KT_RUN(test_logger_gets_item_ids);
    KT_RUN(test_silent_without_logger);
}
