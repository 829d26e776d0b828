/* freertos_check.c - make firmware compiles kctl with threads on the
   FreeRTOS port (examples/port_freertos.h) for Cortex-M4, against the
   port's own declarations of the FreeRTOS calls: the port cannot rot. */
#define KCTL_FREERTOS_DECLARE
#include "../examples/port_freertos.h"
#define KCTL_NO_FILES
#define KCTL_THREAD_STACK_SIZE 8192
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
