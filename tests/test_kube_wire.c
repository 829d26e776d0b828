/* test_kube_wire.c - (being written) */
#include "kube.h"

void kt_suite_kube_wire(void) {
}
