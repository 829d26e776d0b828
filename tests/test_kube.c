/* test_kube.c - (being written) */
#include "kube.h"

void kt_suite_kube(void) {
}
