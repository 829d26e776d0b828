/* kube_server.c - (being written) */
#include "kube_server.h"
typedef int kt_kube_server_placeholder;
