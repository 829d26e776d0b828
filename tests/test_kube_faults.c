/* test_kube_faults.c - (being written) */
#include "kube.h"

void kt_suite_kube_faults(void) {
}
