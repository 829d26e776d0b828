/* board.h - what `make size` links kctl on: on a host, the POSIX port; on a
   bare-metal target (KCTL_SIZE_BAREMETAL), kctl's port layer with a
   monotonic clock from a tick counter, as a board's SysTick handler keeps
   one (KCTL_PORT_CUSTOM, kctl.h's PORTING), and nothing else. */
#ifndef KCTL_SIZE_BOARD_H
#define KCTL_SIZE_BOARD_H
#include <stdint.h>
#ifdef KCTL_SIZE_BAREMETAL
extern volatile uint32_t board_ms; /* the SysTick handler counts it */
volatile uint32_t board_ms;
#define KCTL_PORT_CUSTOM
#define KCTL_PORT_NOW_NS() ((uint64_t)board_ms * 1000000u)
#endif
#define KCTL_IMPLEMENTATION
#include "../../kctl.h"
/* An input the compiler cannot see through: what a device would read. */
extern volatile int board_input;
volatile int board_input;
#endif
