/* test_kube_server.c - (being written) */
#include "kube.h"

void kt_suite_kube_server(void) {
}
