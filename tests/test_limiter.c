/* test_limiter.c - the rate limiters (issue 2, section 3): exact delays, counts and ownership. */
#include "kt.h"
#include <math.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- helpers */

/* A user limiter that records every call; destroy only counts (self lives on
   the test's stack, so it outlives the limiter). */
typedef struct tl_custom {
    int when_calls, forget_calls, nr_calls, destroy_calls;
    uint64_t when_ret;
    uint32_t nr_ret;
    char last_key[64];
} tl_custom;

static void tl_custom_key(tl_custom *c, const char *key) {
    size_t n = key ? strlen(key) : 0;
    if (n >= sizeof c->last_key) n = sizeof c->last_key - 1;
    if (key) memcpy(c->last_key, key, n);
    c->last_key[n] = '\0';
}
static uint64_t tl_custom_when(void *self, const char *key) {
    tl_custom *c = (tl_custom *)self;
    c->when_calls++;
    tl_custom_key(c, key);
    return c->when_ret;
}
static void tl_custom_forget(void *self, const char *key) {
    tl_custom *c = (tl_custom *)self;
    c->forget_calls++;
    tl_custom_key(c, key);
}
static uint32_t tl_custom_nr(void *self, const char *key) {
    tl_custom *c = (tl_custom *)self;
    c->nr_calls++;
    tl_custom_key(c, key);
    return c->nr_ret;
}
static void tl_custom_destroy(void *self) {
    ((tl_custom *)self)->destroy_calls++;
}
static kctl_limiter_vtable tl_custom_vt(void) {
    kctl_limiter_vtable vt;
    vt.when = tl_custom_when;
    vt.forget = tl_custom_forget;
    vt.num_requeues = tl_custom_nr;
    vt.destroy = tl_custom_destroy;
    return vt;
}
static void tl_custom_init(tl_custom *c, uint64_t when_ret, uint32_t nr_ret) {
    memset(c, 0, sizeof *c);
    c->when_ret = when_ret;
    c->nr_ret = nr_ret;
}
static kctl_limiter *tl_custom_new(tl_custom *c) {
    kctl_limiter_vtable vt = tl_custom_vt();
    return kctl_limiter_create(&vt, c);
}

/* ----------------------------------------------------- constructor checks */

static void tl_exponential_bad_args(void) {
    kctl_limiter *l;
    KT_CHECK(kctl_limiter_exponential(0, KCTL_SEC(1)) == NULL);
    KT_CHECK(kctl_limiter_exponential(0, 0) == NULL);
    KT_CHECK(kctl_limiter_exponential(KCTL_MS(10), KCTL_MS(5)) == NULL);
    KT_CHECK(kctl_limiter_exponential(2, 1) == NULL);
    /* max == base is allowed */
    l = kctl_limiter_exponential(KCTL_MS(5), KCTL_MS(5));
    KT_CHECK(l != NULL);
    kctl_limiter_destroy(l);
    l = kctl_limiter_exponential(1, UINT64_MAX);
    KT_CHECK(l != NULL);
    kctl_limiter_destroy(l);
}

static void tl_bucket_bad_args(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    KT_CHECK(kctl_limiter_bucket(&c, 0.0, 100) == NULL);
    KT_CHECK(kctl_limiter_bucket(&c, -1.0, 100) == NULL);
    KT_CHECK(kctl_limiter_bucket(&c, -0.0, 100) == NULL);
    KT_CHECK(kctl_limiter_bucket(&c, (double)NAN, 100) == NULL);
    KT_CHECK(kctl_limiter_bucket(&c, 10.0, 0) == NULL);
    KT_CHECK(kctl_limiter_bucket(NULL, 0.0, 1) == NULL);
    /* smallest valid arguments */
    l = kctl_limiter_bucket(&c, 0.5, 1);
    KT_CHECK(l != NULL);
    kctl_limiter_destroy(l);
    /* NULL clock = monotonic: valid, and the first call finds a token */
    l = kctl_limiter_bucket(NULL, 10.0, 100);
    KT_CHECK(l != NULL);
    KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

static void tl_fast_slow_bad_args(void) {
    kctl_limiter *l;
    KT_CHECK(kctl_limiter_fast_slow(KCTL_SEC(2), KCTL_SEC(1), 3) == NULL);
    KT_CHECK(kctl_limiter_fast_slow(2, 1, 0) == NULL);
    /* fast == slow is allowed, so is max_fast 0 */
    l = kctl_limiter_fast_slow(KCTL_SEC(1), KCTL_SEC(1), 3);
    KT_CHECK(l != NULL);
    kctl_limiter_destroy(l);
    l = kctl_limiter_fast_slow(KCTL_MS(1), KCTL_SEC(1), 0);
    KT_CHECK(l != NULL);
    kctl_limiter_destroy(l);
}

static void tl_max_of_bad_args(void) {
    tl_custom c1, c2, c3;
    kctl_limiter *arr[3];
    tl_custom_init(&c1, 1, 0);
    tl_custom_init(&c2, 2, 0);
    tl_custom_init(&c3, 3, 0);

    KT_CHECK(kctl_limiter_max_of(NULL, 0) == NULL);
    arr[0] = tl_custom_new(&c1);
    KT_CHECK(arr[0] != NULL);
    /* n = 0: nothing is owned, nothing destroyed */
    KT_CHECK(kctl_limiter_max_of(arr, 0) == NULL);
    KT_EQ_INT(c1.destroy_calls, 0);

    /* a NULL member: the non-NULL ones are destroyed, each exactly once */
    arr[1] = NULL;
    arr[2] = tl_custom_new(&c3);
    KT_CHECK(arr[2] != NULL);
    KT_CHECK(kctl_limiter_max_of(arr, 3) == NULL);
    KT_EQ_INT(c1.destroy_calls, 1);
    KT_EQ_INT(c2.destroy_calls, 0);
    KT_EQ_INT(c3.destroy_calls, 1);

    /* a NULL member first */
    tl_custom_init(&c1, 1, 0);
    tl_custom_init(&c2, 2, 0);
    arr[0] = NULL;
    arr[1] = tl_custom_new(&c1);
    arr[2] = tl_custom_new(&c2);
    KT_CHECK(kctl_limiter_max_of(arr, 3) == NULL);
    KT_EQ_INT(c1.destroy_calls, 1);
    KT_EQ_INT(c2.destroy_calls, 1);
    KT_EQ_INT(c1.when_calls, 0);

    /* only NULL members */
    arr[0] = NULL;
    KT_CHECK(kctl_limiter_max_of(arr, 1) == NULL);
}

static void tl_create_bad_args(void) {
    tl_custom c;
    kctl_limiter_vtable vt;
    tl_custom_init(&c, 0, 0);
    KT_CHECK(kctl_limiter_create(NULL, &c) == NULL);
    vt = tl_custom_vt();
    vt.when = NULL;
    KT_CHECK(kctl_limiter_create(&vt, &c) == NULL);
    vt = tl_custom_vt();
    vt.forget = NULL;
    KT_CHECK(kctl_limiter_create(&vt, &c) == NULL);
    vt = tl_custom_vt();
    vt.num_requeues = NULL;
    KT_CHECK(kctl_limiter_create(&vt, &c) == NULL);
    KT_EQ_INT(c.destroy_calls, 0);
    KT_EQ_INT(c.when_calls, 0);
}

/* ------------------------------------------------------------ exponential */

static void tl_exponential_sequence(void) {
    kctl_limiter *l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 1);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(10));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 2);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(20));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(40));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(80));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 5);
    /* num_requeues does not count as a failure */
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 5);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(160));
    kctl_limiter_destroy(l);
}

static void tl_exponential_cap_19th(void) {
    kctl_limiter *l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    uint64_t expect = KCTL_MS(5);
    int i;
    KT_CHECK(l != NULL);
    if (!l) return;
    for (i = 1; i <= 40; i++) {
        uint64_t got = kctl_limiter_when(l, "default/web");
        if (i <= 18) {
            KT_EQ_U64(got, expect);
            expect *= 2;
        } else {
            KT_EQ_U64(got, KCTL_SEC(1000));
        }
        if (i == 18) KT_EQ_U64(got, KCTL_MS(655360)); /* 655.36 s */
        if (i == 19) KT_EQ_U64(got, KCTL_SEC(1000));  /* first at the cap */
        KT_EQ_U64(kctl_limiter_num_requeues(l, "default/web"), (uint64_t)i);
    }
    kctl_limiter_destroy(l);
}

static void tl_exponential_forget(void) {
    kctl_limiter *l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(10));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(20));
    kctl_limiter_forget(l, "k");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 1);
    /* forgetting an unknown key is harmless */
    kctl_limiter_forget(l, "never-seen");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "never-seen"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(10));
    /* forget twice */
    kctl_limiter_forget(l, "k");
    kctl_limiter_forget(l, "k");
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    kctl_limiter_destroy(l);
}

static void tl_exponential_per_key(void) {
    kctl_limiter *l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "a"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_when(l, "a"), KCTL_MS(10));
    KT_EQ_U64(kctl_limiter_when(l, "b"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_when(l, "a"), KCTL_MS(20));
    KT_EQ_U64(kctl_limiter_when(l, "b"), KCTL_MS(10));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "a"), 3);
    KT_EQ_U64(kctl_limiter_num_requeues(l, "b"), 2);
    /* keys that share a prefix are different keys */
    KT_EQ_U64(kctl_limiter_when(l, "ab"), KCTL_MS(5));
    kctl_limiter_forget(l, "a");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "a"), 0);
    KT_EQ_U64(kctl_limiter_num_requeues(l, "b"), 2);
    KT_EQ_U64(kctl_limiter_num_requeues(l, "ab"), 1);
    KT_EQ_U64(kctl_limiter_when(l, "b"), KCTL_MS(20));
    kctl_limiter_destroy(l);
}

/* The limiter keeps its own copy of the key. */
static void tl_exponential_copies_key(void) {
    kctl_limiter *l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    char buf[16];
    KT_CHECK(l != NULL);
    if (!l) return;
    strcpy(buf, "key1");
    KT_EQ_U64(kctl_limiter_when(l, buf), KCTL_MS(5));
    strcpy(buf, "zzzz");
    KT_EQ_U64(kctl_limiter_when(l, "key1"), KCTL_MS(10));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "zzzz"), 0);
    kctl_limiter_destroy(l);
}

/* Many keys (the per-key table grows), each with its own count. */
static void tl_exponential_many_keys(void) {
    kctl_limiter *l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    char key[32];
    int i, bad = 0;
    KT_CHECK(l != NULL);
    if (!l) return;
    for (i = 0; i < 2000; i++) {
        sprintf(key, "ns/obj-%d", i);
        if (kctl_limiter_when(l, key) != KCTL_MS(5)) bad++;
    }
    for (i = 0; i < 2000; i += 2) {
        sprintf(key, "ns/obj-%d", i);
        if (kctl_limiter_when(l, key) != KCTL_MS(10)) bad++;
    }
    for (i = 0; i < 2000; i += 4) {
        sprintf(key, "ns/obj-%d", i);
        kctl_limiter_forget(l, key);
    }
    for (i = 0; i < 2000; i++) {
        uint32_t want = (i % 4 == 0) ? 0 : (i % 2 == 0) ? 2 : 1;
        sprintf(key, "ns/obj-%d", i);
        if (kctl_limiter_num_requeues(l, key) != want) bad++;
    }
    KT_EQ_INT(bad, 0);
    kctl_limiter_destroy(l);
}

static void tl_exponential_no_overflow(void) {
    kctl_limiter *l = kctl_limiter_exponential(1, UINT64_MAX);
    uint64_t prev = 0;
    int i, bad_order = 0, bad_value = 0;
    KT_CHECK(l != NULL);
    if (!l) return;
    for (i = 0; i < 200; i++) {
        uint64_t got = kctl_limiter_when(l, "k");
        uint64_t want = i < 64 ? (UINT64_C(1) << i) : UINT64_MAX;
        if (got < prev) bad_order++;
        if (got != want) bad_value++;
        prev = got;
    }
    KT_EQ_INT(bad_order, 0);
    KT_EQ_INT(bad_value, 0);
    KT_EQ_U64(prev, UINT64_MAX);
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 200);
    kctl_limiter_destroy(l);

    /* base == max: always the cap, whatever the count */
    l = kctl_limiter_exponential(KCTL_SEC(1), KCTL_SEC(1));
    KT_CHECK(l != NULL);
    if (!l) return;
    bad_value = 0;
    for (i = 0; i < 300; i++)
        if (kctl_limiter_when(l, "k") != KCTL_SEC(1)) bad_value++;
    KT_EQ_INT(bad_value, 0);
    kctl_limiter_destroy(l);

    /* a cap that is no power of two of the base */
    l = kctl_limiter_exponential(3, 100);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), 3);
    KT_EQ_U64(kctl_limiter_when(l, "k"), 6);
    KT_EQ_U64(kctl_limiter_when(l, "k"), 12);
    KT_EQ_U64(kctl_limiter_when(l, "k"), 24);
    KT_EQ_U64(kctl_limiter_when(l, "k"), 48);
    KT_EQ_U64(kctl_limiter_when(l, "k"), 96);
    KT_EQ_U64(kctl_limiter_when(l, "k"), 100);
    bad_value = 0;
    for (i = 0; i < 1000; i++)
        if (kctl_limiter_when(l, "k") != 100) bad_value++;
    KT_EQ_INT(bad_value, 0);
    kctl_limiter_destroy(l);

    /* the default exponential far past the cap */
    l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    KT_CHECK(l != NULL);
    if (!l) return;
    bad_value = 0;
    for (i = 0; i < 1000; i++) {
        uint64_t got = kctl_limiter_when(l, "k");
        if (i >= 18 && got != KCTL_SEC(1000)) bad_value++;
    }
    KT_EQ_INT(bad_value, 0);
    kctl_limiter_destroy(l);
}

/* ----------------------------------------------------------------- bucket */

static void tl_bucket_burst_then_wait(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    int i, bad = 0;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    l = kctl_limiter_bucket(&c, 10.0, 100);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    for (i = 1; i <= 100; i++)
        if (kctl_limiter_when(l, "k") != 0) bad++;
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100));   /* 101st */
    KT_EQ_U64(kctl_limiter_when(l, "other"), KCTL_MS(200)); /* 102nd: global, not per key */
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(300));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

static void tl_bucket_refill(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    int i, bad = 0;
    kctl_vclock_init(&vc, KCTL_SEC(5000)); /* the origin does not matter */
    c = kctl_vclock_clock(&vc);
    l = kctl_limiter_bucket(&c, 10.0, 100);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    for (i = 0; i < 100; i++)
        if (kctl_limiter_when(l, "k") != 0) bad++;
    KT_EQ_INT(bad, 0);
    kctl_vclock_advance(&vc, KCTL_SEC(1));
    for (i = 0; i < 10; i++)
        if (kctl_limiter_when(l, "k") != 0) bad++;
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100)); /* 11th */

    /* in debt by one token: 100 ms later the debt is paid, the next waits 100 ms */
    kctl_vclock_advance(&vc, KCTL_MS(100));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100));
    /* halfway to the next token */
    kctl_vclock_advance(&vc, KCTL_MS(150));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(50));
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

static void tl_bucket_capped_at_burst(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    int i, bad = 0;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    l = kctl_limiter_bucket(&c, 10.0, 100);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
    /* a long idle time refills to the burst, no further */
    kctl_vclock_advance(&vc, KCTL_SEC(1000));
    for (i = 0; i < 100; i++)
        if (kctl_limiter_when(l, "k") != 0) bad++;
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100));
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

static void tl_bucket_slow_rate(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    l = kctl_limiter_bucket(&c, 0.5, 1); /* one token every 2 s */
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(2));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(4));
    kctl_vclock_advance(&vc, KCTL_SEC(4));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(2));
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

static void tl_bucket_forget_noop(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    l = kctl_limiter_bucket(&c, 10.0, 1);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
    kctl_limiter_forget(l, "k"); /* gives no token back */
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    kctl_limiter_forget(l, "k");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "x"), KCTL_MS(200));
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

/* The bucket copies the clock struct: the caller's kctl_clock may go away. */
static void tl_bucket_copies_clock(void) {
    kctl_vclock vc;
    kctl_limiter *l;
    kctl_clock *c = (kctl_clock *)malloc(sizeof *c);
    kctl_vclock_init(&vc, 0);
    KT_CHECK(c != NULL);
    if (!c) return;
    *c = kctl_vclock_clock(&vc);
    l = kctl_limiter_bucket(c, 10.0, 1);
    memset(c, 0xA5, sizeof *c);
    free(c);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100));
    kctl_vclock_advance(&vc, KCTL_MS(200));
    KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

/* -------------------------------------------------------------- fast_slow */

static void tl_fast_slow_sequence(void) {
    kctl_limiter *l = kctl_limiter_fast_slow(KCTL_MS(5), KCTL_SEC(10), 3);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 1);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5)); /* count 3 <= 3: still fast */
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(10));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(10));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 5);
    /* per key */
    KT_EQ_U64(kctl_limiter_when(l, "other"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "other"), 1);
    /* forget resets */
    kctl_limiter_forget(l, "k");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "other"), 1);
    kctl_limiter_destroy(l);
}

static void tl_fast_slow_zero_fast(void) {
    kctl_limiter *l = kctl_limiter_fast_slow(KCTL_MS(1), KCTL_SEC(1), 0);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(1));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(1));
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 2);
    kctl_limiter_destroy(l);

    l = kctl_limiter_fast_slow(KCTL_MS(1), KCTL_SEC(1), 1);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(1));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(1));
    kctl_limiter_destroy(l);
}

/* ----------------------------------------------------------------- max_of */

static void tl_max_of_max_and_consume(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *arr[2];
    kctl_limiter *l;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    arr[0] = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    arr[1] = kctl_limiter_bucket(&c, 10.0, 1);
    KT_CHECK(arr[0] != NULL && arr[1] != NULL);
    l = kctl_limiter_max_of(arr, 2);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    arr[0] = arr[1] = NULL; /* the array itself was copied */
    KT_EQ_U64(kctl_limiter_when(l, "a"), KCTL_MS(5));   /* max(5ms, 0) */
    KT_EQ_U64(kctl_limiter_when(l, "b"), KCTL_MS(100)); /* max(5ms, 100ms) */
    KT_EQ_U64(kctl_limiter_when(l, "a"), KCTL_MS(200)); /* max(10ms, 200ms) */
    KT_EQ_U64(kctl_limiter_num_requeues(l, "a"), 2);
    KT_EQ_U64(kctl_limiter_num_requeues(l, "b"), 1);
    /* the bucket's debt is paid after 300 ms: now the exponential decides */
    kctl_vclock_advance(&vc, KCTL_MS(400));
    KT_EQ_U64(kctl_limiter_when(l, "a"), KCTL_MS(20)); /* max(20ms, 0) */
    KT_EQ_U64(kctl_limiter_num_requeues(l, "a"), 3);
    kctl_limiter_forget(l, "a");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "a"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "a"), KCTL_MS(100)); /* max(5ms, 100ms): the bucket consumed */
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

static void tl_max_of_every_member(void) {
    tl_custom c1, c2, c3;
    kctl_limiter *arr[3];
    kctl_limiter *l;
    tl_custom_init(&c1, KCTL_SEC(9), 2);
    tl_custom_init(&c2, KCTL_SEC(1), 7);
    tl_custom_init(&c3, 0, 0);
    arr[0] = tl_custom_new(&c1);
    arr[1] = tl_custom_new(&c2);
    arr[2] = tl_custom_new(&c3);
    l = kctl_limiter_max_of(arr, 3);
    KT_CHECK(l != NULL);
    if (!l) return;
    /* every member is asked (and consumes) even after a large answer */
    KT_EQ_U64(kctl_limiter_when(l, "ns/a"), KCTL_SEC(9));
    KT_EQ_INT(c1.when_calls, 1);
    KT_EQ_INT(c2.when_calls, 1);
    KT_EQ_INT(c3.when_calls, 1);
    KT_EQ_STR(c3.last_key, "ns/a");
    c1.when_ret = 0;
    c2.when_ret = KCTL_MS(3);
    KT_EQ_U64(kctl_limiter_when(l, "ns/a"), KCTL_MS(3));
    KT_EQ_INT(c1.when_calls, 2);
    KT_EQ_INT(c2.when_calls, 2);
    KT_EQ_INT(c3.when_calls, 2);
    /* num_requeues is the largest */
    KT_EQ_U64(kctl_limiter_num_requeues(l, "ns/a"), 7);
    c3.nr_ret = 11;
    KT_EQ_U64(kctl_limiter_num_requeues(l, "ns/a"), 11);
    /* forget goes to all */
    kctl_limiter_forget(l, "ns/b");
    KT_EQ_INT(c1.forget_calls, 1);
    KT_EQ_INT(c2.forget_calls, 1);
    KT_EQ_INT(c3.forget_calls, 1);
    KT_EQ_STR(c1.last_key, "ns/b");
    KT_EQ_STR(c2.last_key, "ns/b");
    /* destroying the max_of destroys the members, once each */
    KT_EQ_INT(c1.destroy_calls, 0);
    kctl_limiter_destroy(l);
    KT_EQ_INT(c1.destroy_calls, 1);
    KT_EQ_INT(c2.destroy_calls, 1);
    KT_EQ_INT(c3.destroy_calls, 1);
}

static void tl_max_of_single_and_nested(void) {
    kctl_limiter *arr[2];
    kctl_limiter *inner, *l;
    arr[0] = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    l = kctl_limiter_max_of(arr, 1);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(10));
    kctl_limiter_destroy(l);

    arr[0] = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    arr[1] = kctl_limiter_fast_slow(KCTL_MS(1), KCTL_SEC(1), 2);
    inner = kctl_limiter_max_of(arr, 2);
    KT_CHECK(inner != NULL);
    arr[0] = inner;
    arr[1] = kctl_limiter_exponential(KCTL_MS(1), KCTL_MS(2));
    l = kctl_limiter_max_of(arr, 2);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));  /* 5, 1, 1 */
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(10)); /* 10, 1, 2 */
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(1)); /* 20, 1s, 2 */
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 3);
    kctl_limiter_forget(l, "k");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    kctl_limiter_destroy(l);
}

/* ---------------------------------------------------------------- default */

static void tl_default_limiter(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    char key[32];
    int i, bad = 0;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    l = kctl_limiter_default(&c);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    KT_EQ_U64(kctl_limiter_when(l, "k0"), KCTL_MS(5));
    for (i = 1; i < 100; i++) {
        sprintf(key, "k%d", i);
        if (kctl_limiter_when(l, key) != KCTL_MS(5)) bad++;
    }
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_limiter_when(l, "k100"), KCTL_MS(100)); /* 101st distinct key: the bucket */
    KT_EQ_U64(kctl_limiter_when(l, "k0"), KCTL_MS(200));   /* max(10ms, 200ms) */
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k0"), 2);
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k100"), 1);
    kctl_limiter_forget(l, "k0");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k0"), 0);
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

/* One key failing forever: the exponential dominates after the bucket's burst. */
static void tl_default_limiter_single_key(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    uint64_t expect = KCTL_MS(5);
    int i;
    kctl_vclock_init(&vc, 0);
    c = kctl_vclock_clock(&vc);
    l = kctl_limiter_default(&c);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    for (i = 1; i <= 25; i++) {
        uint64_t got = kctl_limiter_when(l, "ns/x");
        KT_EQ_U64(got, i <= 18 ? expect : KCTL_SEC(1000));
        expect *= 2;
        kctl_vclock_advance(&vc, got); /* the retry happens when due */
    }
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);

    l = kctl_limiter_default(NULL); /* monotonic clock */
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    kctl_limiter_destroy(l);
}

/* ----------------------------------------------------------------- custom */

static void tl_custom_forwarding(void) {
    tl_custom c;
    kctl_limiter *l;
    tl_custom_init(&c, KCTL_SEC(7), 4);
    l = tl_custom_new(&c);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "ns/one"), KCTL_SEC(7));
    KT_EQ_INT(c.when_calls, 1);
    KT_EQ_STR(c.last_key, "ns/one");
    KT_EQ_U64(kctl_limiter_num_requeues(l, "ns/two"), 4);
    KT_EQ_INT(c.nr_calls, 1);
    KT_EQ_STR(c.last_key, "ns/two");
    kctl_limiter_forget(l, "ns/three");
    KT_EQ_INT(c.forget_calls, 1);
    KT_EQ_STR(c.last_key, "ns/three");
    c.when_ret = UINT64_MAX;
    KT_EQ_U64(kctl_limiter_when(l, "k"), UINT64_MAX);
    KT_EQ_INT(c.destroy_calls, 0);
    kctl_limiter_destroy(l);
    KT_EQ_INT(c.destroy_calls, 1);
    KT_EQ_INT(c.when_calls, 2);
}

/* The vtable is copied: the caller's may go away. destroy is optional. */
static void tl_custom_vtable_copied(void) {
    tl_custom c;
    kctl_limiter *l;
    kctl_limiter_vtable *vt = (kctl_limiter_vtable *)malloc(sizeof *vt);
    KT_CHECK(vt != NULL);
    if (!vt) return;
    tl_custom_init(&c, 42, 3);
    *vt = tl_custom_vt();
    vt->destroy = NULL;
    l = kctl_limiter_create(vt, &c);
    memset(vt, 0, sizeof *vt);
    free(vt);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, "k"), 42);
    KT_EQ_U64(kctl_limiter_num_requeues(l, "k"), 3);
    kctl_limiter_forget(l, "k");
    KT_EQ_INT(c.forget_calls, 1);
    kctl_limiter_destroy(l); /* no destroy entry: nothing to call */
    KT_EQ_INT(c.destroy_calls, 0);
}

/* ------------------------------------------------------------ NULL inputs */

static void tl_null_args(void) {
    kctl_limiter *l = kctl_limiter_exponential(KCTL_MS(5), KCTL_SEC(1000));
    KT_EQ_U64(kctl_limiter_when(NULL, "k"), 0);
    KT_EQ_U64(kctl_limiter_num_requeues(NULL, "k"), 0);
    kctl_limiter_forget(NULL, "k");
    kctl_limiter_destroy(NULL);
    KT_CHECK(l != NULL);
    if (!l) return;
    KT_EQ_U64(kctl_limiter_when(l, NULL), 0);
    KT_EQ_U64(kctl_limiter_num_requeues(l, NULL), 0);
    kctl_limiter_forget(l, NULL);
    /* the NULL calls recorded nothing */
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(5));
    kctl_limiter_destroy(l);
}

/* The integer bucket (the one KCTL_NO_FLOAT builds have): exact waits on
   the virtual clock, including a rate that is no whole number per second. */
static void tl_bucket_rate_exact(void) {
    kctl_vclock vc;
    kctl_clock c;
    kctl_limiter *l;
    int i, bad = 0;
    kctl_vclock_init(&vc, KCTL_SEC(77));
    c = kctl_vclock_clock(&vc);
    KT_CHECK(kctl_limiter_bucket_rate(&c, 0, KCTL_SEC(1), 1) == NULL);
    KT_CHECK(kctl_limiter_bucket_rate(&c, 1, KCTL_SEC(1), 0) == NULL);
    KT_CHECK(kctl_limiter_bucket_rate(&c, 1, (UINT64_C(1) << 62) / 3 + 1, 3) == NULL); /* burst * per_ns > 2^62 */
    l = kctl_limiter_bucket_rate(&c, 10, KCTL_SEC(1), 100);
    KT_CHECK(l != NULL);
    if (!l) { kctl_vclock_deinit(&vc); return; }
    for (i = 0; i < 100; i++)
        if (kctl_limiter_when(l, "k") != 0) bad++;
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100));
    KT_EQ_U64(kctl_limiter_when(l, "other"), KCTL_MS(200));
    kctl_vclock_advance(&vc, KCTL_MS(250));
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(50)); /* 2 in debt, 2.5 paid back, one taken */
    kctl_vclock_advance(&vc, KCTL_SEC(100000)); /* a long idle time: the burst, no more */
    for (i = 0; i < 100; i++)
        if (kctl_limiter_when(l, "k") != 0) bad++;
    KT_EQ_INT(bad, 0);
    KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(100));
    kctl_limiter_destroy(l);

    l = kctl_limiter_bucket_rate(&c, 2, KCTL_MS(3000), 1); /* 2/3 per second: 1500 ms a token */
    KT_CHECK(l != NULL);
    if (l) {
        KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
        KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(1500));
        KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(3000));
        kctl_vclock_advance(&vc, 1);
        KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_MS(4500) - 1);
        kctl_limiter_destroy(l);
    }
    l = kctl_limiter_bucket_rate(&c, 3, KCTL_SEC(1), 1); /* 333333333.3 ns: rounded down */
    KT_CHECK(l != NULL);
    if (l) {
        KT_EQ_U64(kctl_limiter_when(l, "k"), 0);
        KT_EQ_U64(kctl_limiter_when(l, "k"), UINT64_C(333333333));
        KT_EQ_U64(kctl_limiter_when(l, "k"), UINT64_C(666666666));
        KT_EQ_U64(kctl_limiter_when(l, "k"), KCTL_SEC(1));
        kctl_limiter_destroy(l);
    }
    l = kctl_limiter_bucket_rate(&c, 1, 0, 1); /* unlimited */
    KT_CHECK(l != NULL);
    for (i = 0; l && i < 1000; i++)
        if (kctl_limiter_when(l, "k") != 0) bad++;
    KT_EQ_INT(bad, 0);
    kctl_limiter_destroy(l);
    kctl_vclock_deinit(&vc);
}

/* The integer bucket waits as the double one does, to within the double's
   rounding (2 ns here), over random calls and advances at several rates. */
static void tl_bucket_rate_matches_double(void) {
    static const struct { uint32_t tokens; uint64_t per_ns; double qps; uint32_t burst; } rates[] = {
        { 10, KCTL_SEC(1), 10.0, 100 }, { 1, KCTL_SEC(1), 1.0, 1 }, { 1000, KCTL_SEC(1), 1000.0, 5 },
        { 2, KCTL_MS(3000), 2.0 / 3.0, 3 }, { 1, KCTL_MS(7), 1000.0 / 7.0, 20 }, { 5, KCTL_SEC(1) / 2, 10.0, 1 },
    };
    size_t r;
    uint64_t x = 0x9e3779b97f4a7c15u, worst = 0;
    int bad = 0;
    for (r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        kctl_vclock vc;
        kctl_clock c;
        kctl_limiter *a, *b;
        int i;
        kctl_vclock_init(&vc, 0);
        c = kctl_vclock_clock(&vc);
        a = kctl_limiter_bucket(&c, rates[r].qps, rates[r].burst);
        b = kctl_limiter_bucket_rate(&c, rates[r].tokens, rates[r].per_ns, rates[r].burst);
        KT_CHECK(a && b);
        for (i = 0; a && b && i < 3000; i++) {
            uint64_t wa, wb, d;
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if (x % 3 == 0) kctl_vclock_advance(&vc, (x >> 8) % (rates[r].per_ns / rates[r].tokens * 2 + 1));
            wa = kctl_limiter_when(a, "k");
            wb = kctl_limiter_when(b, "k");
            d = wa > wb ? wa - wb : wb - wa;
            if (d > worst) worst = d;
            if (d > 2) bad++;
        }
        kctl_limiter_destroy(a);
        kctl_limiter_destroy(b);
        kctl_vclock_deinit(&vc);
    }
    if (bad) printf("tl_bucket_rate_matches_double: worst difference %llu ns\n", (unsigned long long)worst);
    KT_EQ_INT(bad, 0);
}

void kt_suite_limiter(void) {
    KT_RUN(tl_exponential_bad_args);
    KT_RUN(tl_bucket_bad_args);
    KT_RUN(tl_fast_slow_bad_args);
    KT_RUN(tl_max_of_bad_args);
    KT_RUN(tl_create_bad_args);
    KT_RUN(tl_exponential_sequence);
    KT_RUN(tl_exponential_cap_19th);
    KT_RUN(tl_exponential_forget);
    KT_RUN(tl_exponential_per_key);
    KT_RUN(tl_exponential_copies_key);
    KT_RUN(tl_exponential_many_keys);
    KT_RUN(tl_exponential_no_overflow);
    KT_RUN(tl_bucket_burst_then_wait);
    KT_RUN(tl_bucket_refill);
    KT_RUN(tl_bucket_capped_at_burst);
    KT_RUN(tl_bucket_slow_rate);
    KT_RUN(tl_bucket_forget_noop);
    KT_RUN(tl_bucket_copies_clock);
    KT_RUN(tl_bucket_rate_exact);
    KT_RUN(tl_bucket_rate_matches_double);
    KT_RUN(tl_fast_slow_sequence);
    KT_RUN(tl_fast_slow_zero_fast);
    KT_RUN(tl_max_of_max_and_consume);
    KT_RUN(tl_max_of_every_member);
    KT_RUN(tl_max_of_single_and_nested);
    KT_RUN(tl_default_limiter);
    KT_RUN(tl_default_limiter_single_key);
    KT_RUN(tl_custom_forwarding);
    KT_RUN(tl_custom_vtable_copied);
    KT_RUN(tl_null_args);
}
