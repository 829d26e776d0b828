/* test_kubeconfig.c - (being written) */
#include "kube.h"

void kt_suite_kubeconfig(void) {
}
