/* kube_server.h - a Kubernetes API server for tests (being written) */
#ifndef KT_KUBE_SERVER_H
#define KT_KUBE_SERVER_H
#endif
