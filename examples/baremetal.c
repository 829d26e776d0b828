/* baremetal.c - kctl on a Cortex-M4 with no operating system: a port of
   its own (a SysTick tick counter is the clock), no threads, no files, and
   a controller that keeps four LEDs equal to their desired state, stepped
   by hand from the main loop.

   The desired state lives in the in-process store (the memstore), as it
   would after a sync from a server: Led objects with spec.on (or
   spec.blinkMs, a blink period). The controller's reconcile sets the GPIO
   pin and reports status.phase; a blinking LED asks to be reconciled again
   after half its period (requeue_after), so the blink runs on the
   controller's own clock. Halfway, a new configuration arrives and the
   LEDs follow it.

   Build for the board (what `make firmware` does):
       arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -Os --specs=nano.specs \
           --specs=nosys.specs -o baremetal.elf examples/baremetal.c
   What the board gives it, and nothing else: the SysTick interrupt (below;
   a vendor's startup file puts SysTick_Handler in the vector table, its
   Reset_Handler and linker script stand where newlib's crt0 and default
   script stand here) and a heap: _sbrk below hands out a fixed array, as
   a board's sysmem.c hands out the RAM between .bss and the stack (the
   _sbrk of newlib's nosys grows without a bound). nosys's other stubs
   (_write, _close, ...) are never called: kctl prints nothing and opens no
   file under KCTL_NO_FILES.

   Built for the host (make test runs it: build/baremetal-host), the same
   program runs on a simulated board whose clock moves one tick per pass of
   the idle loop, and exits 0 when the LEDs ended as configured. */
#include <stdint.h>
#include <stddef.h>

/* ---- the board */
#if defined(__arm__) && !defined(__linux__)
#define BOARD_HZ 168000000u                                /* the core clock */
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)       /* SysTick control and status */
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)       /* reload value */
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)       /* current value */
#define GPIOD_ODR (*(volatile uint32_t *)0x40020C14u)      /* the LEDs: PD12..PD15 (an STM32F4 Discovery) */
#define LED_PIN0 12
static volatile uint32_t board_ticks;                      /* milliseconds, from the interrupt */
static volatile uint32_t board_ticks_hi;                   /* wraps of board_ticks (every 49.7 days) */

void SysTick_Handler(void) __attribute__((used));
void SysTick_Handler(void) {
    if (++board_ticks == 0) board_ticks_hi++;
}
static void board_init(void) {
    SYST_RVR = BOARD_HZ / 1000u - 1u;                      /* 1 kHz */
    SYST_CVR = 0;
    SYST_CSR = 7u;                                         /* processor clock, interrupt, on */
}
/* Milliseconds since boot, read consistently against the interrupt. */
static uint64_t board_ms(void) {
    uint32_t hi, lo;
    do {
        hi = board_ticks_hi;
        lo = board_ticks;
    } while (hi != board_ticks_hi);
    return ((uint64_t)hi << 32) | lo;
}
static void board_idle(void) { __asm__ volatile("wfi"); } /* until the next interrupt */
static volatile uint32_t *const board_leds = &GPIOD_ODR;

/* Heap: newlib's malloc asks _sbrk for memory; this board gives it 48 KiB. */
#include <errno.h>
void *_sbrk(ptrdiff_t incr);
void *_sbrk(ptrdiff_t incr) {
    static unsigned char heap[48 * 1024] __attribute__((aligned(8)));
    static size_t used;
    if (incr < 0 || (size_t)incr > sizeof heap - used) {
        errno = ENOMEM;
        return (void *)-1;
    }
    used += (size_t)incr;
    return heap + used - (size_t)incr;
}
#else /* a simulated board on the host: one tick per pass of the idle loop */
#include <stdio.h>
#define LED_PIN0 12
static uint64_t board_ticks;
static uint32_t board_odr;
static void board_init(void) { }
static uint64_t board_ms(void) { return board_ticks; }
static void board_idle(void) { board_ticks++; }
static volatile uint32_t *const board_leds = &board_odr;
#endif

/* ---- the port: only a clock (KCTL_NO_THREADS); no wall clock either, so
   objects are stamped from 1970 plus the uptime */
#define KCTL_PORT_CUSTOM
#define KCTL_PORT_NOW_NS() (board_ms() * UINT64_C(1000000))
#define KCTL_NO_THREADS
#define KCTL_NO_FILES
#define KCTL_IMPLEMENTATION
#include "../kctl.h"

static const kctl_resource leds = { "device.example.io", "v1", "leds", "" };

/* The pin of a LED: led0..led3. */
static int led_pin(const char *name) {
    if (name[0] != 'l' || name[1] != 'e' || name[2] != 'd' || name[3] < '0' || name[3] > '3' || name[4]) return -1;
    return LED_PIN0 + (name[3] - '0');
}

static void led_set(int pin, bool on) {
    if (on) *board_leds |= (uint32_t)1 << pin;
    else *board_leds &= ~((uint32_t)1 << pin);
}

/* Level-based: make the pin what the object says, whatever it was. */
static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
    kctl_reconcile_result r = { 0 };
    int pin = led_pin(ctx->name);
    bool on = false;
    int64_t blink_ms = 0;
    const char *phase = "On";
    if (pin < 0) {                                         /* not a LED of this board */
        r.error = KCTL_ERR_INVALID_ARG;
        r.terminal = true;
        return r;
    }
    if (!ctx->obj) {                                       /* deleted: off */
        led_set(pin, false);
        return r;
    }
    kctl_obj_get_bool(ctx->obj, "spec.on", &on);
    kctl_obj_get_int64(ctx->obj, "spec.blinkMs", &blink_ms);
    if (blink_ms > 0) {                                    /* on for half the period, off for half */
        uint64_t half = (uint64_t)blink_ms * UINT64_C(500000);
        on = (kctl_clock_now(NULL) / half) % 2 == 0;
        r.requeue_after_ns = half - kctl_clock_now(NULL) % half;
        phase = "Blinking";
    } else if (!on) {
        phase = "Off";
    }
    led_set(pin, on);
    {                                                      /* written only when it changes */
        char status[48] = "{\"phase\":\"";
        size_t n = strlen(status), k = strlen(phase);
        memcpy(status + n, phase, k);
        memcpy(status + n + k, "\"}", 3);
        r.error = kctl_status_update(&ctx->transport, &leds, ctx->obj, status, KCTL_NTS, NULL, NULL, NULL);
    }
    return r;
}

/* Whether the pins are what the store says now (a blinking LED counts). */
static bool converged(kctl_memstore *ms) {
    int i;
    for (i = 0; i < 4; i++) {
        char name[5] = { 'l', 'e', 'd', (char)('0' + i), 0 };
        kctl_obj *o = NULL;
        bool on = false, want = false, blink;
        int64_t blink_ms = 0;
        if (kctl_memstore_get(ms, &leds, name, &o, NULL) == KCTL_OK) {
            kctl_obj_get_bool(o, "spec.on", &want);
            kctl_obj_get_int64(o, "spec.blinkMs", &blink_ms);
            kctl_obj_unref(o);
        }
        blink = blink_ms > 0;
        on = (*board_leds >> (LED_PIN0 + i)) & 1u;
        if (!blink && on != want) return false;
    }
    return true;
}

static int apply(kctl_memstore *ms, const char *const *docs) {
    int rc = KCTL_OK;
    for (; *docs && rc == KCTL_OK; docs++) rc = kctl_memstore_apply(ms, &leds, *docs, KCTL_NTS, NULL, NULL);
    return rc;
}

int main(void) {
    static const char *const first[] = {
        "{\"metadata\":{\"name\":\"led0\"},\"spec\":{\"on\":true}}",
        "{\"metadata\":{\"name\":\"led1\"},\"spec\":{\"on\":false}}",
        "{\"metadata\":{\"name\":\"led2\"},\"spec\":{\"blinkMs\":500}}",
        "{\"metadata\":{\"name\":\"led3\"},\"spec\":{\"on\":true}}", NULL };
    static const char *const second[] = {
        "{\"metadata\":{\"name\":\"led0\"},\"spec\":{\"on\":false}}",
        "{\"metadata\":{\"name\":\"led1\"},\"spec\":{\"blinkMs\":200}}",
        "{\"metadata\":{\"name\":\"led2\"},\"spec\":{\"on\":true}}", NULL };
    kctl_memstore_desc sd = { 0 };
    kctl_memstore *ms = NULL;
    kctl_informer_desc id = { 0 };
    kctl_informer *inf = NULL;
    kctl_controller_desc cd = { 0 };
    kctl_controller *c = NULL;
    uint64_t t0, now;
    bool second_sent = false, ok = false;
    board_init();
    sd.history = 16;                                       /* a small watch window: one device, one reader */
    if (kctl_memstore_create(&sd, &ms) != KCTL_OK || apply(ms, first) != KCTL_OK) return 1;
    id.transport = kctl_memstore_transport(ms);
    id.resource = leds;
    cd.transport = id.transport;
    cd.reconcile = reconcile;
    if (kctl_informer_create(&id, &inf) != KCTL_OK) return 1;
    cd.primary = inf;
    if (kctl_controller_create(&cd, &c) != KCTL_OK) return 1;
    t0 = kctl_clock_now(NULL);
    for (;;) {
        uint64_t next = 0;
        size_t done = 0;
        kctl_informer_step(inf, 0, &next);                 /* events in: the cache, the queue */
        kctl_controller_step(c, 8, &done);                 /* ready keys out: reconciles */
        now = kctl_clock_now(NULL);
        if (!second_sent && now - t0 >= KCTL_SEC(2)) {     /* a new configuration arrives */
            second_sent = apply(ms, second) == KCTL_OK;
        }
        ok = second_sent && converged(ms);
#if defined(__arm__) && !defined(__linux__)
        (void)ok;                                          /* a board runs on (a status LED could show it) */
#else
        if (now - t0 >= KCTL_SEC(4)) break;                /* the host's run ends after 4 s of device time */
#endif
        if (!done) board_idle();                           /* nothing ran: sleep until the next tick */
    }
#if !(defined(__arm__) && !defined(__linux__))
    {
        kctl_controller_stats cs;
        kctl_controller_read_stats(c, &cs);
        printf("baremetal (simulated board): LEDs %s after 4 s, %llu reconciles (%llu of them blinks), %llu errors, pins 0x%x\n",
               ok ? "as configured" : "NOT as configured", (unsigned long long)(cs.success + cs.requeue_after + cs.error),
               (unsigned long long)cs.requeue_after, (unsigned long long)cs.error, (unsigned)(*board_leds >> LED_PIN0));
    }
    kctl_controller_destroy(c);
    kctl_informer_destroy(inf);
    kctl_memstore_destroy(ms);
    return ok ? 0 : 1;
#endif
}
