/* The work queue alone, with client-go's default rate limiter: add, get,
   requeue with backoff, forget, done (make size). */
#include "board.h"

int main(void) {
    kctl_queue *q;
    const char *key;
    int n = 0;
    if (kctl_queue_create(NULL, &q) != KCTL_OK) return 1;
    kctl_queue_add(q, board_input ? "default/a" : "default/b");
    kctl_queue_add_after(q, "default/c", (uint64_t)board_input);
    while (kctl_queue_try_get(q, &key) == KCTL_OK) {
        if (board_input) kctl_queue_add_rate_limited(q, key);
        else kctl_queue_forget(q, key);
        kctl_queue_done(q, key);
        n++;
    }
    kctl_queue_shutdown(q);
    kctl_queue_destroy(q);
    return n;
}
