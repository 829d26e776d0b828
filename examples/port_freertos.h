/* port_freertos.h - kctl's port layer on FreeRTOS (threads included): the
   KCTL_PORT_* macros of kctl.h's PORTING section mapped to FreeRTOS calls.
   Include it before kctl.h in the file that defines KCTL_IMPLEMENTATION:

       #include "FreeRTOS.h"
       #include "task.h"
       #include "semphr.h"
       #include "port_freertos.h"
       #define KCTL_NO_FILES
       #define KCTL_IMPLEMENTATION
       #include "kctl.h"

   FreeRTOS has no condition variable: one is made of a counting semaphore
   and a count of waiters (kept in a critical section). A kctl thread is a
   task whose end gives a semaphore its join takes; KCTL_THREAD_STACK_SIZE
   (bytes; 0 here: 4 KiB) becomes the task's stack depth in words.

   Without FreeRTOS's headers (KCTL_FREERTOS_DECLARE: `make firmware`
   compiles this port that way, so it cannot rot) the calls it uses are
   declared below with FreeRTOS's signatures; the real headers define the
   same names (some as macros). */
#ifndef KCTL_PORT_FREERTOS_H
#define KCTL_PORT_FREERTOS_H
#include <stdint.h>
#include <stddef.h>

#ifdef KCTL_FREERTOS_DECLARE
typedef uint32_t TickType_t;
typedef long BaseType_t;
typedef void *SemaphoreHandle_t;
typedef void *TaskHandle_t;
#define configTICK_RATE_HZ 1000u
#define portMAX_DELAY ((TickType_t)0xffffffffu)
#define pdTRUE 1
TickType_t xTaskGetTickCount(void);
void vTaskDelay(TickType_t ticks);
BaseType_t xTaskCreate(void (*fn)(void *), const char *name, uint16_t stack_words, void *arg, unsigned prio, TaskHandle_t *out);
void vTaskDelete(TaskHandle_t task);
SemaphoreHandle_t xSemaphoreCreateMutex(void);
SemaphoreHandle_t xSemaphoreCreateCounting(unsigned max, unsigned initial);
BaseType_t xSemaphoreTake(SemaphoreHandle_t s, TickType_t ticks);
BaseType_t xSemaphoreGive(SemaphoreHandle_t s);
void vSemaphoreDelete(SemaphoreHandle_t s);
void vPortEnterCritical(void);
void vPortExitCritical(void);
#define taskENTER_CRITICAL() vPortEnterCritical()
#define taskEXIT_CRITICAL() vPortExitCritical()
#define taskYIELD() vTaskDelay(0)
void *pvPortMalloc(size_t size);
void vPortFree(void *p);
#endif

/* The clock: the tick count, widened to 64 bits (it wraps every 49.7 days
   at 1 kHz); called at least once per wrap, as kctl's loops do. */
static inline uint64_t kctl_freertos_now_ns(void) {
    static uint32_t last, wraps;
    uint32_t t;
    uint64_t ticks;
    taskENTER_CRITICAL();
    t = (uint32_t)xTaskGetTickCount();
    if (t < last) wraps++;
    last = t;
    ticks = ((uint64_t)wraps << 32) | t;
    taskEXIT_CRITICAL();
    return ticks * (UINT64_C(1000000000) / configTICK_RATE_HZ);
}
static inline TickType_t kctl_freertos_ticks(uint64_t ns) { /* rounded up: never wake early */
    uint64_t per = UINT64_C(1000000000) / configTICK_RATE_HZ, t = ns / per + (ns % per != 0);
    return t >= (uint64_t)portMAX_DELAY ? portMAX_DELAY - 1u : (TickType_t)t;
}

/* The condition variable. */
typedef struct kctl_freertos_cond {
    SemaphoreHandle_t sem;
    unsigned waiters;
} kctl_freertos_cond;
static inline int kctl_freertos_cond_init(kctl_freertos_cond *c) {
    c->waiters = 0;
    c->sem = xSemaphoreCreateCounting(0xffffu, 0);
    return c->sem ? 0 : -1;
}
/* Wait for a signal (m held; released while waiting), until the clock
   reads at_ns (UINT64_MAX: no deadline): 0 woken, -1 the deadline passed. */
static inline int kctl_freertos_cond_wait(kctl_freertos_cond *c, SemaphoreHandle_t *m, uint64_t at_ns) {
    uint64_t now = kctl_freertos_now_ns();
    TickType_t ticks = at_ns == UINT64_MAX ? portMAX_DELAY : at_ns > now ? kctl_freertos_ticks(at_ns - now) : 0;
    int rc = 0;
    taskENTER_CRITICAL();
    c->waiters++;
    taskEXIT_CRITICAL();
    xSemaphoreGive(*m);
    if (xSemaphoreTake(c->sem, ticks) != pdTRUE) {
        taskENTER_CRITICAL();
        if (xSemaphoreTake(c->sem, 0) != pdTRUE) { /* no signal came meanwhile: no longer waiting */
            c->waiters--;
            rc = -1;
        }
        taskEXIT_CRITICAL();
    }
    xSemaphoreTake(*m, portMAX_DELAY);
    return rc;
}
static inline void kctl_freertos_cond_wake(kctl_freertos_cond *c, int all) {
    unsigned n;
    taskENTER_CRITICAL();
    n = all ? c->waiters : c->waiters != 0;
    c->waiters -= n;
    taskEXIT_CRITICAL();
    while (n--) xSemaphoreGive(c->sem);
}

/* Threads: a task, and a semaphore its end gives. */
typedef struct kctl_freertos_thread {
    void *(*fn)(void *);
    void *arg;
    SemaphoreHandle_t done;
} kctl_freertos_thread;
static inline void kctl_freertos_task(void *p) {
    kctl_freertos_thread *t = (kctl_freertos_thread *)p;
    t->fn(t->arg);
    xSemaphoreGive(t->done);
    vTaskDelete(NULL);
}
static inline int kctl_freertos_thread_start(kctl_freertos_thread **out, void *(*fn)(void *), void *arg, size_t stack) {
    kctl_freertos_thread *t = (kctl_freertos_thread *)pvPortMalloc(sizeof *t);
    size_t words = (stack ? stack : 4096u) / sizeof(void *);
    *out = t;
    if (!t) return -1;
    t->fn = fn;
    t->arg = arg;
    t->done = xSemaphoreCreateCounting(1, 0);
    if (!t->done || words > 0xffffu || xTaskCreate(kctl_freertos_task, "kctl", (uint16_t)words, t, 1, NULL) != pdTRUE) {
        if (t->done) vSemaphoreDelete(t->done);
        vPortFree(t);
        return -1;
    }
    return 0;
}
static inline void kctl_freertos_thread_join(kctl_freertos_thread *t) {
    xSemaphoreTake(t->done, portMAX_DELAY);
    vSemaphoreDelete(t->done);
    vPortFree(t);
}

#define KCTL_PORT_CUSTOM
#define KCTL_PORT_NOW_NS() kctl_freertos_now_ns()
#define KCTL_PORT_SLEEP_NS(ns) vTaskDelay(kctl_freertos_ticks(ns))
#define KCTL_PORT_YIELD() taskYIELD()
#define KCTL_PORT_MUTEX SemaphoreHandle_t
#define KCTL_PORT_MUTEX_INIT(m) ((*(m) = xSemaphoreCreateMutex()) ? 0 : -1)
#define KCTL_PORT_MUTEX_DEINIT(m) vSemaphoreDelete(*(m))
#define KCTL_PORT_MUTEX_LOCK(m) ((void)xSemaphoreTake(*(m), portMAX_DELAY))
#define KCTL_PORT_MUTEX_UNLOCK(m) ((void)xSemaphoreGive(*(m)))
#define KCTL_PORT_COND kctl_freertos_cond
#define KCTL_PORT_COND_INIT(c) kctl_freertos_cond_init(c)
#define KCTL_PORT_COND_DEINIT(c) vSemaphoreDelete((c)->sem)
#define KCTL_PORT_COND_WAIT(c, m) ((void)kctl_freertos_cond_wait((c), (m), UINT64_MAX))
#define KCTL_PORT_COND_WAIT_UNTIL(c, m, at_ns) kctl_freertos_cond_wait((c), (m), (at_ns))
#define KCTL_PORT_COND_SIGNAL(c) kctl_freertos_cond_wake((c), 0)
#define KCTL_PORT_COND_BROADCAST(c) kctl_freertos_cond_wake((c), 1)
#define KCTL_PORT_THREAD kctl_freertos_thread *
#define KCTL_PORT_THREAD_START(t, fn, arg, stack_bytes) kctl_freertos_thread_start((t), (fn), (arg), (stack_bytes))
#define KCTL_PORT_THREAD_JOIN(t) kctl_freertos_thread_join(*(t))
#endif
