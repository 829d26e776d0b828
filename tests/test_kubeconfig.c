/* test_kubeconfig.c - where the Kubernetes API transport finds its server
   and credentials (kctl_http_curl.h, KUBECONFIG): kubeconfig files exactly
   as kubectl writes them (a literal copy below, and, where kubectl is
   installed, files it writes now), the same as JSON, the -data fields,
   relative file names, named contexts and their namespace, each YAML
   construct kctl refuses with its line, the plugins and other features
   refused by name, in-cluster configuration from a directory of the
   test's own, limits, bad input and failed allocations (nothing leaks:
   every test counts its allocator). */
#include "kube.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#ifdef KT_HAVE_CURL
/* What kubectl 1.32 wrote for:
     kubectl config set-cluster edge --server=https://10.0.0.1:6443 --certificate-authority=certs/ca.pem
     kubectl config set-cluster lab --server=https://[fd00::1]:6443 --certificate-authority=ca.pem --embed-certs
     kubectl config set-cluster dev --server=http://127.0.0.1:8080 --insecure-skip-tls-verify=true
     kubectl config set-credentials agent --token=s3cr3t-t0ken
     kubectl config set-credentials mtls --client-certificate=client.pem --client-key=client-key.pem --embed-certs
     kubectl config set-credentials files --client-certificate=certs/client.pem --client-key=/etc/kctl/client-key.pem
     kubectl config set-credentials quoted --token="a'b\"c: d #e"    (and folded: 30 words, unicode, number: 12345)
     kubectl config set-context edge --cluster=edge --user=files --namespace=devices
     kubectl config set-context lab --cluster=lab --user=mtls
     kubectl config set-context dev --cluster=dev --user=agent --namespace=kube-system
     kubectl config set-context quoted|folded|unicode|number --cluster=dev --user=<same>
     kubectl config use-context edge
   (all with --kubeconfig=config), then `kubectl config view --raw -o json`. */
static const char kc_kubectl_yaml[] =
    "apiVersion: v1\n"
    "clusters:\n"
    "- cluster:\n"
    "    insecure-skip-tls-verify: true\n"
    "    server: http://127.0.0.1:8080\n"
    "  name: dev\n"
    "- cluster:\n"
    "    certificate-authority: certs/ca.pem\n"
    "    server: https://10.0.0.1:6443\n"
    "  name: edge\n"
    "- cluster:\n"
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwRT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n"
    "    server: https://[fd00::1]:6443\n"
    "  name: lab\n"
    "contexts:\n"
    "- context:\n"
    "    cluster: dev\n"
    "    namespace: kube-system\n"
    "    user: agent\n"
    "  name: dev\n"
    "- context:\n"
    "    cluster: edge\n"
    "    namespace: devices\n"
    "    user: files\n"
    "  name: edge\n"
    "- context:\n"
    "    cluster: dev\n"
    "    user: folded\n"
    "  name: folded\n"
    "- context:\n"
    "    cluster: lab\n"
    "    user: mtls\n"
    "  name: lab\n"
    "- context:\n"
    "    cluster: dev\n"
    "    user: number\n"
    "  name: number\n"
    "- context:\n"
    "    cluster: dev\n"
    "    user: quoted\n"
    "  name: quoted\n"
    "- context:\n"
    "    cluster: dev\n"
    "    user: unicode\n"
    "  name: unicode\n"
    "current-context: edge\n"
    "kind: Config\n"
    "preferences: {}\n"
    "users:\n"
    "- name: agent\n"
    "  user:\n"
    "    token: s3cr3t-t0ken\n"
    "- name: files\n"
    "  user:\n"
    "    client-certificate: certs/client.pem\n"
    "    client-key: /etc/kctl/client-key.pem\n"
    "- name: folded\n"
    "  user:\n"
    "    token: word word word word word word word word word word word word word word word\n"
    "      word word word word word word word word word word word word word word word end\n"
    "- name: mtls\n"
    "  user:\n"
    "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEweEpSVTVVCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K\n"
    "    client-key-data: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tClMwVloKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo=\n"
    "- name: number\n"
    "  user:\n"
    "    token: \"12345\"\n"
    "- name: quoted\n"
    "  user:\n"
    "    token: 'a''b\"c: d #e'\n"
    "- name: unicode\n"
    "  user:\n"
    "    token: \"\303\244\342\202\254\\U0001F600\"\n";

static const char kc_kubectl_json[] =
    "{\n"
    "    \"kind\": \"Config\",\n"
    "    \"apiVersion\": \"v1\",\n"
    "    \"preferences\": {},\n"
    "    \"clusters\": [\n"
    "        {\n"
    "            \"name\": \"dev\",\n"
    "            \"cluster\": {\n"
    "                \"server\": \"http://127.0.0.1:8080\",\n"
    "                \"insecure-skip-tls-verify\": true\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"edge\",\n"
    "            \"cluster\": {\n"
    "                \"server\": \"https://10.0.0.1:6443\",\n"
    "                \"certificate-authority\": \"certs/ca.pem\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"lab\",\n"
    "            \"cluster\": {\n"
    "                \"server\": \"https://[fd00::1]:6443\",\n"
    "                \"certificate-authority-data\": \"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEwRT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\"\n"
    "            }\n"
    "        }\n"
    "    ],\n"
    "    \"users\": [\n"
    "        {\n"
    "            \"name\": \"agent\",\n"
    "            \"user\": {\n"
    "                \"token\": \"s3cr3t-t0ken\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"files\",\n"
    "            \"user\": {\n"
    "                \"client-certificate\": \"certs/client.pem\",\n"
    "                \"client-key\": \"/etc/kctl/client-key.pem\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"folded\",\n"
    "            \"user\": {\n"
    "                \"token\": \"word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word end\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"mtls\",\n"
    "            \"user\": {\n"
    "                \"client-certificate-data\": \"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClEweEpSVTVVCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K\",\n"
    "                \"client-key-data\": \"LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tClMwVloKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo=\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"number\",\n"
    "            \"user\": {\n"
    "                \"token\": \"12345\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"quoted\",\n"
    "            \"user\": {\n"
    "                \"token\": \"a'b\\\"c: d #e\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"unicode\",\n"
    "            \"user\": {\n"
    "                \"token\": \"\303\244\342\202\254\360\237\230\200\"\n"
    "            }\n"
    "        }\n"
    "    ],\n"
    "    \"contexts\": [\n"
    "        {\n"
    "            \"name\": \"dev\",\n"
    "            \"context\": {\n"
    "                \"cluster\": \"dev\",\n"
    "                \"user\": \"agent\",\n"
    "                \"namespace\": \"kube-system\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"edge\",\n"
    "            \"context\": {\n"
    "                \"cluster\": \"edge\",\n"
    "                \"user\": \"files\",\n"
    "                \"namespace\": \"devices\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"folded\",\n"
    "            \"context\": {\n"
    "                \"cluster\": \"dev\",\n"
    "                \"user\": \"folded\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"lab\",\n"
    "            \"context\": {\n"
    "                \"cluster\": \"lab\",\n"
    "                \"user\": \"mtls\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"number\",\n"
    "            \"context\": {\n"
    "                \"cluster\": \"dev\",\n"
    "                \"user\": \"number\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"quoted\",\n"
    "            \"context\": {\n"
    "                \"cluster\": \"dev\",\n"
    "                \"user\": \"quoted\"\n"
    "            }\n"
    "        },\n"
    "        {\n"
    "            \"name\": \"unicode\",\n"
    "            \"context\": {\n"
    "                \"cluster\": \"dev\",\n"
    "                \"user\": \"unicode\"\n"
    "            }\n"
    "        }\n"
    "    ],\n"
    "    \"current-context\": \"edge\"\n"
    "}\n";

#define KC_CA_PEM "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n"
#define KC_CERT_PEM "-----BEGIN CERTIFICATE-----\nQ0xJRU5U\n-----END CERTIFICATE-----\n"
#define KC_KEY_PEM "-----BEGIN PRIVATE KEY-----\nS0VZ\n-----END PRIVATE KEY-----\n"
#define KC_FOLDED "word word word word word word word word word word word word word word word word word word word word " \
                  "word word word word word word word word word word end"

static kt_alloc kc_al;
static kctl_kube_config kc;
static kctl_api_status kc_st;

/* A fresh config and status on a counting allocator. */
static void kc_begin(void) {
    kt_alloc_init(&kc_al);
    memset(&kc, 0, sizeof kc);
    memset(&kc_st, 0, sizeof kc_st);
    kc.allocator = kt_allocator(&kc_al);
    kc_st.allocator = kt_allocator(&kc_al);
}
/* Free both; nothing may be left. */
static void kc_end(void) {
    kctl_kube_config_free(&kc);
    kctl_api_status_clear(&kc_st);
    KT_EQ_INT(kc_al.live, 0);
}
static int kc_parse(const char *text, const char *dir, const char *context) {
    return kctl_kube_config_parse(text, KCTL_NTS, dir, context, &kc, &kc_st);
}
static bool kc_has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }
#define KC_NULL(x) KT_CHECK((x) == NULL)
#define KC_MSG(part) do { if (!kc_has(kc_st.message, part)) \
        kt_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", kc_st.message ? kc_st.message : "(null)", part); } while (0)

static char kc_dir[512];
static void kc_mkdir(void) {
    const char *t = getenv("TMPDIR");
    snprintf(kc_dir, sizeof kc_dir, "%s/kt-kubeconfig-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(kc_dir)) kc_dir[0] = '\0';
}
static void kc_rmdir(void) {
    char cmd[600];
    if (!kc_dir[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", kc_dir);
    if (system(cmd) != 0) kt_fail(__FILE__, __LINE__, "cannot remove %s", kc_dir);
    kc_dir[0] = '\0';
}
/* kc_dir/name (its directory made), holding text; the path into path. */
static void kc_write(const char *name, const char *text, char *path, size_t cap) {
    FILE *f;
    char *slash;
    snprintf(path, cap, "%s/%s", kc_dir, name);
    slash = strrchr(path, '/');
    if (slash && slash > path + strlen(kc_dir)) { *slash = '\0'; mkdir(path, 0700); *slash = '/'; }
    f = fopen(path, "wb");
    if (!f) { kt_fail(__FILE__, __LINE__, "cannot write %s", path); return; }
    fputs(text, f);
    fclose(f);
}

/* The contexts of the kubectl files above, dir their directory. */
static void kc_check_kubectl(const char *text, const char *dir) {
    char want[600];
    /* current-context: edge, file names relative to dir, one absolute */
    kc_begin();
    KT_EQ_INT(kc_parse(text, dir, NULL), KCTL_OK);
    KT_EQ_STR(kc.context, "edge");
    KT_EQ_STR(kc.ns, "devices");
    KT_EQ_STR(kc.desc.server, "https://10.0.0.1:6443");
    snprintf(want, sizeof want, "%s/certs/ca.pem", dir);
    KT_EQ_STR(kc.desc.tls.ca_file, want);
    snprintf(want, sizeof want, "%s/certs/client.pem", dir);
    KT_EQ_STR(kc.desc.tls.cert_file, want);
    KT_EQ_STR(kc.desc.tls.key_file, "/etc/kctl/client-key.pem");
    KC_NULL(kc.desc.token);
    KC_NULL(kc.desc.token_file);
    KC_NULL(kc.desc.tls.ca_data);
    KT_CHECK(!kc.desc.tls.insecure);
    KT_CHECK(kc.desc.allocator.alloc_fn == kc.allocator.alloc_fn && kc.desc.allocator.user_data == &kc_al);
    /* lab: the -data fields decoded, no namespace: "default" */
    KT_EQ_INT(kc_parse(text, dir, "lab"), KCTL_OK);
    KT_EQ_STR(kc.context, "lab");
    KT_EQ_STR(kc.ns, "default");
    KT_EQ_STR(kc.desc.server, "https://[fd00::1]:6443");
    KT_EQ_U64(kc.desc.tls.ca_len, strlen(KC_CA_PEM));
    KT_CHECK(kc.desc.tls.ca_data && memcmp(kc.desc.tls.ca_data, KC_CA_PEM, strlen(KC_CA_PEM)) == 0);
    KT_EQ_U64(kc.desc.tls.cert_len, strlen(KC_CERT_PEM));
    KT_CHECK(kc.desc.tls.cert_data && memcmp(kc.desc.tls.cert_data, KC_CERT_PEM, strlen(KC_CERT_PEM)) == 0);
    KT_EQ_U64(kc.desc.tls.key_len, strlen(KC_KEY_PEM));
    KT_CHECK(kc.desc.tls.key_data && memcmp(kc.desc.tls.key_data, KC_KEY_PEM, strlen(KC_KEY_PEM)) == 0);
    KC_NULL(kc.desc.tls.ca_file);
    KC_NULL(kc.desc.tls.cert_file);
    KC_NULL(kc.desc.tls.key_file);
    /* dev: a token, insecure, a namespace */
    KT_EQ_INT(kc_parse(text, dir, "dev"), KCTL_OK);
    KT_EQ_STR(kc.desc.server, "http://127.0.0.1:8080");
    KT_EQ_STR(kc.desc.token, "s3cr3t-t0ken");
    KT_CHECK(kc.desc.tls.insecure);
    KT_EQ_STR(kc.ns, "kube-system");
    KC_NULL(kc.desc.tls.cert_file);
    KC_NULL(kc.desc.tls.cert_data);
    /* tokens as kubectl quotes and folds them */
    KT_EQ_INT(kc_parse(text, dir, "quoted"), KCTL_OK);
    KT_EQ_STR(kc.desc.token, "a'b\"c: d #e");
    KT_EQ_INT(kc_parse(text, dir, "folded"), KCTL_OK);
    KT_EQ_STR(kc.desc.token, KC_FOLDED);
    KT_EQ_INT(kc_parse(text, dir, "unicode"), KCTL_OK);
    KT_EQ_STR(kc.desc.token, "\303\244\342\202\254\360\237\230\200");
    KT_EQ_INT(kc_parse(text, dir, "number"), KCTL_OK);
    KT_EQ_STR(kc.desc.token, "12345");
    kc_end();
}

/* The literal copy of kubectl's file, and its JSON form, read alike. */
static void kc_kubectl_literal(void) {
    KT_KUBE_REQUIRE_CURL();
    kc_check_kubectl(kc_kubectl_yaml, "/cfg");
    kc_check_kubectl(kc_kubectl_json, "/cfg");
}

/* Files kubectl writes now (kubectl config set-cluster, set-credentials,
   set-context, use-context), read with kctl_kube_config_load: from their
   path, through $KUBECONFIG, and kubectl's own JSON view of them. */
static void kc_kubectl_live(void) {
    static const char *const cmds[] = {
        "set-cluster edge --server=https://10.0.0.1:6443 --certificate-authority=certs/ca.pem",
        "set-cluster lab --server=https://[fd00::1]:6443 --certificate-authority=ca.pem --embed-certs",
        "set-cluster dev --server=http://127.0.0.1:8080 --insecure-skip-tls-verify=true",
        "set-credentials agent --token=s3cr3t-t0ken",
        "set-credentials mtls --client-certificate=client.pem --client-key=client-key.pem --embed-certs",
        "set-credentials files --client-certificate=certs/client.pem --client-key=/etc/kctl/client-key.pem",
        "set-credentials quoted --token=\"a'b\\\"c: d #e\"",
        "set-credentials folded --token='" KC_FOLDED "'",
        "set-credentials unicode --token=\303\244\342\202\254\360\237\230\200",
        "set-credentials number --token=12345",
        "set-context edge --cluster=edge --user=files --namespace=devices",
        "set-context lab --cluster=lab --user=mtls",
        "set-context dev --cluster=dev --user=agent --namespace=kube-system",
        "set-context quoted --cluster=dev --user=quoted",
        "set-context folded --cluster=dev --user=folded",
        "set-context unicode --cluster=dev --user=unicode",
        "set-context number --cluster=dev --user=number",
        "use-context edge",
    };
    char path[600], cmd[1200], *text = NULL, *old = NULL;
    size_t i;
    FILE *f;
    long n;
    KT_KUBE_REQUIRE_CURL();
    if (!kt_kube_need(__FILE__, __LINE__, system("kubectl version --client >/dev/null 2>&1") == 0 ? NULL : "kubectl is not installed"))
        return;
    kc_mkdir();
    kc_write("ca.pem", KC_CA_PEM, path, sizeof path);
    kc_write("client.pem", KC_CERT_PEM, path, sizeof path);
    kc_write("client-key.pem", KC_KEY_PEM, path, sizeof path);
    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        snprintf(cmd, sizeof cmd, "cd '%s' && kubectl config %s --kubeconfig=config >/dev/null 2>&1", kc_dir, cmds[i]);
        if (system(cmd) != 0) { kt_fail(__FILE__, __LINE__, "kubectl config %s failed", cmds[i]); goto out; }
    }
    snprintf(path, sizeof path, "%s/config", kc_dir);
    /* the file, through kctl_kube_config_parse with its directory */
    if ((f = fopen(path, "rb")) != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = (char *)calloc(1, (size_t)n + 1)) != NULL && fread(text, 1, (size_t)n, f) == (size_t)n)
        kc_check_kubectl(text, kc_dir);
    else kt_fail(__FILE__, __LINE__, "cannot read %s", path);
    if (f) fclose(f);
    free(text);
    /* through load: relative names against the file's directory */
    kc_begin();
    KT_EQ_INT(kctl_kube_config_load(path, NULL, &kc, &kc_st), KCTL_OK);
    KT_EQ_STR(kc.context, "edge");
    snprintf(cmd, sizeof cmd, "%s/certs/ca.pem", kc_dir);
    KT_EQ_STR(kc.desc.tls.ca_file, cmd);
    /* $KUBECONFIG: its first entry (an empty one skipped) */
    old = getenv("KUBECONFIG") ? strdup(getenv("KUBECONFIG")) : NULL;
    snprintf(cmd, sizeof cmd, ":%s:%s/nonexistent", path, kc_dir);
    setenv("KUBECONFIG", cmd, 1);
    KT_EQ_INT(kctl_kube_config_load(NULL, "lab", &kc, &kc_st), KCTL_OK);
    KT_EQ_STR(kc.context, "lab");
    KT_EQ_U64(kc.desc.tls.ca_len, strlen(KC_CA_PEM));
    if (old) setenv("KUBECONFIG", old, 1);
    else unsetenv("KUBECONFIG");
    free(old);
    /* kubectl's JSON view of it */
    snprintf(cmd, sizeof cmd, "cd '%s' && kubectl config view --raw -o json --kubeconfig=config > config.json 2>/dev/null", kc_dir);
    KT_EQ_INT(system(cmd), 0);
    snprintf(path, sizeof path, "%s/config.json", kc_dir);
    KT_EQ_INT(kctl_kube_config_load(path, "quoted", &kc, &kc_st), KCTL_OK);
    KT_EQ_STR(kc.desc.token, "a'b\"c: d #e");
    KT_EQ_INT(kctl_kube_config_load(path, "edge", &kc, &kc_st), KCTL_OK);
    snprintf(cmd, sizeof cmd, "%s/certs/client.pem", kc_dir);
    KT_EQ_STR(kc.desc.tls.cert_file, cmd);
    kc_end();
out:
    kc_rmdir();
}

/* A file name is relative to the kubeconfig's directory: given (with or
   without its '/'), none (left as written), and absolute ones as they
   are; tokenFile too. */
static void kc_relative_paths(void) {
    static const char doc[] =
        "clusters:\n- name: c\n  cluster:\n    server: https://k:6443\n    certificate-authority: ca.crt\n"
        "users:\n- name: u\n  user:\n    tokenFile: ../run/token\n    client-certificate: /abs/c.pem\n    client-key: k.pem\n"
        "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n";
    KT_KUBE_REQUIRE_CURL();
    kc_begin();
    KT_EQ_INT(kc_parse(doc, "/home/op/.kube", NULL), KCTL_OK);
    KT_EQ_STR(kc.desc.tls.ca_file, "/home/op/.kube/ca.crt");
    KT_EQ_STR(kc.desc.token_file, "/home/op/.kube/../run/token");
    KT_EQ_STR(kc.desc.tls.cert_file, "/abs/c.pem");
    KT_EQ_STR(kc.desc.tls.key_file, "/home/op/.kube/k.pem");
    KT_EQ_INT(kc_parse(doc, "/", NULL), KCTL_OK);
    KT_EQ_STR(kc.desc.tls.ca_file, "/ca.crt");
    KT_EQ_INT(kc_parse(doc, "/etc/", NULL), KCTL_OK);
    KT_EQ_STR(kc.desc.tls.ca_file, "/etc/ca.crt");
    KT_EQ_INT(kc_parse(doc, NULL, NULL), KCTL_OK);
    KT_EQ_STR(kc.desc.tls.ca_file, "ca.crt");
    KT_EQ_STR(kc.desc.token_file, "../run/token");
    kc_end();
}

/* Contexts: current or named; a missing context, cluster or user is
   NOT_FOUND naming it; no current-context; two of one name; a context
   without a user is no credentials; a cluster without a server. */
static void kc_contexts(void) {
    static const char base[] =
        "clusters:\n- name: c\n  cluster:\n    server: https://k:6443\n- name: noserver\n  cluster: {}\n"
        "users:\n- name: u\n  user:\n    token: t0k\n"
        "contexts:\n- name: a\n  context:\n    cluster: c\n    user: u\n    namespace: ns-a\n"
        "- name: b\n  context:\n    cluster: gone\n    user: u\n"
        "- name: c\n  context:\n    cluster: c\n    user: nobody\n"
        "- name: d\n  context:\n    cluster: c\n"
        "- name: e\n  context:\n    user: u\n"
        "- name: f\n  context:\n    cluster: noserver\n"
        "current-context: a\n";
    static const char twice[] =
        "clusters:\n- name: c\n  cluster:\n    server: https://one\n- name: c\n  cluster:\n    server: https://two\n"
        "contexts:\n- name: a\n  context:\n    cluster: c\ncurrent-context: a\n";
    KT_KUBE_REQUIRE_CURL();
    kc_begin();
    KT_EQ_INT(kc_parse(base, NULL, NULL), KCTL_OK);
    KT_EQ_STR(kc.context, "a");
    KT_EQ_STR(kc.ns, "ns-a");
    KT_EQ_STR(kc.desc.token, "t0k");
    KT_EQ_INT(kc_parse(base, NULL, "d"), KCTL_OK);
    KT_EQ_STR(kc.context, "d");
    KT_EQ_STR(kc.ns, "default");
    KC_NULL(kc.desc.token);
    KT_EQ_INT(kc_parse(base, NULL, "zz"), KCTL_ERR_NOT_FOUND);
    KC_MSG("no context named \"zz\"");
    KT_EQ_INT(kc_st.code, 404);
    KT_EQ_INT(kc_parse(base, NULL, "b"), KCTL_ERR_NOT_FOUND);
    KC_MSG("no cluster named \"gone\"");
    KT_EQ_INT(kc_parse(base, NULL, "c"), KCTL_ERR_NOT_FOUND);
    KC_MSG("no user named \"nobody\"");
    KT_EQ_INT(kc_parse(base, NULL, "e"), KCTL_ERR_NOT_FOUND);
    KC_MSG("context \"e\" names no cluster");
    KT_EQ_INT(kc_parse(base, NULL, "f"), KCTL_ERR_INVALID_ARG);
    KC_MSG("cluster \"noserver\" has no server");
    KT_EQ_INT(kc_parse("clusters: []\ncurrent-context: \"\"\n", NULL, NULL), KCTL_ERR_NOT_FOUND);
    KC_MSG("no current-context");
    KT_EQ_INT(kc_parse("", NULL, NULL), KCTL_ERR_NOT_FOUND);
    KC_MSG("no current-context");
    KT_EQ_INT(kc_parse("# nothing\n", NULL, "a"), KCTL_ERR_NOT_FOUND);
    KC_MSG("no context named \"a\"");
    KT_EQ_INT(kc_parse(twice, NULL, NULL), KCTL_ERR_INVALID_ARG);
    KC_MSG("two clusters named \"c\"");
    /* a failed call leaves out empty, the status says why */
    KC_NULL(kc.desc.server);
    KT_EQ_INT(kc_parse(base, NULL, "a"), KCTL_OK);
    KT_EQ_STR(kc.desc.server, "https://k:6443");
    kc_end();
}

/* Each construct outside the subset, refused with its line. */
static void kc_rejected(void) {
    static const struct { const char *text; int line; const char *what; } cases[] = {
        { "clusters:\n- name: a\n  cluster: &c\n    server: x\n", 3, "anchors (&) are not supported" },
        { "a: 1\nb: *x\n", 2, "aliases (*) are not supported" },
        { "kind: !!str Config\n", 1, "tags (!) are not supported" },
        { "users:\n- name: u\n  user:\n    token: |\n      abc\n", 4, "block scalars (| and >)" },
        { "users:\n- name: u\n  user:\n    token: >-\n      abc\n", 4, "block scalars (| and >)" },
        { "apiVersion: v1\npreferences: {colors: true}\n", 2, "flow collections ({...})" },
        { "contexts: [a, b]\n", 1, "flow collections ([...])" },
        { "users:\n\t- name: a\n", 2, "tabs may not indent" },
        { "users:\n-\tname: a\n\ttoken: x\n", 2, "tabs may not indent" },
        { "kind: Config\napiVersion: v1\nkind: Config\n", 3, "the key \"kind\" is repeated" },
        { "users:\n- name: a\n  user: {}\n  name: b\n", 4, "the key \"name\" is repeated" },
        { "a: 1\n---\nb: 2\n", 2, "more than one document" },
        { "a: 1\n...\nb: 2\n", 3, "more than one document" },
        { "%YAML 1.1\n---\na: 1\n", 1, "directives (%) are not supported" },
        { "? a\n: b\n", 1, "complex keys (?)" },
        { "a:\n  b: 'open\n", 2, "not closed" },
        { "a: \"x\\qy\"\n", 1, "unknown escape \\q" },
        { "a: \"\\x00\"\n", 1, "NUL" },
        { "a: \"\\uD800\"\n", 1, "surrogate" },
        { "a: b\001c\n", 1, "a control character (0x01)" },
        { "a: 1\nb: \377\n", 2, "not UTF-8" },
        { "a: 1\nb: \300\200\n", 2, "not UTF-8" },
        { "a: 1\rb: 2\n", 1, "carriage return" },
        { "a:\n  b: 1\n c: 2\n", 3, "unexpected indentation" },
        { "server: http: //x\n", 1, "\": \"" },
        { "users: - a\n", 1, "a sequence may not start on its key's line" },
        { "a: 1\n- b\n", 2, "a sequence entry where a key was expected" },
        { "a: 1\njust text\n", 2, "a value where a key was expected" },
        { "a: \"x\" y\n", 1, "text after a quoted value" },
        { "a: 1\r\nb: &x 2\r\n", 2, "anchors" },
        { "\n\n# c\n\n  a: 1\nb: 2\n", 6, "unexpected indentation" },
        { "a: plain #c\n  more\n", 2, "unexpected indentation" },
    };
    size_t i;
    char want[64];
    KT_KUBE_REQUIRE_CURL();
    kc_begin();
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = kc_parse(cases[i].text, NULL, NULL);
        snprintf(want, sizeof want, "kubeconfig line %d: ", cases[i].line);
        if (rc != KCTL_ERR_INVALID_ARG || !kc_st.message || strncmp(kc_st.message, want, strlen(want)) != 0 ||
            !strstr(kc_st.message, cases[i].what))
            kt_fail(__FILE__, __LINE__, "case %u: rc %d, \"%s\"; want INVALID_ARG, \"%s...%s\"", (unsigned)i, rc,
                    kc_st.message ? kc_st.message : "(null)", want, cases[i].what);
        KT_EQ_INT(kc_st.code, 400);
    }
    kc_end();
}

/* The YAML kctl reads beyond what kubectl writes: a byte order mark,
   comments, ---, ..., CRLF, quoted keys, every escape kind, folding of
   quoted and plain scalars, ~ and an empty value for null, {} and []. */
static void kc_yaml_forms(void) {
    static const char doc[] =
        "\357\273\277# written by hand\r\n"
        "---   # the one document\r\n"
        "\"apiVersion\": v1\r\n"
        "'clusters':\r\n"
        "  - name: c   # two-space sequence\r\n"
        "    cluster:\r\n"
        "      server: \"https://k:6443\"\r\n"
        "      insecure-skip-tls-verify: True\r\n"
        "      extensions: []\r\n"
        "preferences: { }\r\n"
        "users:\r\n"
        "- name: u\r\n"
        "  user:\r\n"
        "    token: \"t\\tab\\u00e9\\x41\\U0001F600\\\"\\\\\\/\\\r\n"
        "      end\"\r\n"
        "- name: v\r\n"
        "  user:\r\n"
        "    token: 'it''s\r\n"
        "\r\n"
        "      two   \r\n"
        "      lines'\r\n"
        "- name: w\r\n"
        "  user:\r\n"
        "    token:\r\n"
        "      plain#1\r\n"
        "      text   # a comment ends it\r\n"
        "contexts:\r\n"
        "- context:\r\n"
        "    cluster: c\r\n"
        "    user: u\r\n"
        "    namespace: ~\r\n"
        "  name: x\r\n"
        "- {}\r\n"
        "- name: y\r\n"
        "  context:\r\n"
        "    cluster: c\r\n"
        "    user: v\r\n"
        "    namespace:\r\n"
        "- name: z\r\n"
        "  context:\r\n"
        "    cluster: c\r\n"
        "    user: w\r\n"
        "current-context: x\r\n"
        "...\r\n"
        "# after the end\r\n";
    KT_KUBE_REQUIRE_CURL();
    kc_begin();
    KT_EQ_INT(kc_parse(doc, NULL, NULL), KCTL_OK);
    KT_EQ_STR(kc.desc.server, "https://k:6443");
    KT_CHECK(kc.desc.tls.insecure);
    KT_EQ_STR(kc.desc.token, "t\tab\303\251A\360\237\230\200\"\\/end");
    KT_EQ_STR(kc.ns, "default");
    KT_EQ_INT(kc_parse(doc, NULL, "y"), KCTL_OK);
    KT_EQ_STR(kc.desc.token, "it's\ntwo lines");
    KT_EQ_STR(kc.ns, "default");
    KT_EQ_INT(kc_parse(doc, NULL, "z"), KCTL_OK);
    KT_EQ_STR(kc.desc.token, "plain#1 text");
    kc_end();
}

/* Refused by name: exec and auth-provider plugins, basic auth,
   impersonation, proxy-url, tls-server-name, a file with its -data, a CA
   with insecure, half a client certificate, base64 that is not; no
   credential in any message. */
static void kc_refused(void) {
    static const char head[] =
        "clusters:\n- name: c\n  cluster:\n    server: https://k:6443\n"
        "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\nusers:\n- name: u\n  user:\n";
    static const struct { const char *user; const char *what; } users[] = {
        { "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      args:\n      - eks\n      - get-token\n"
          "      command: aws\n      env:\n      - name: AWS_SECRET\n        value: hunter2\n      interactiveMode: IfAvailable\n"
          "      provideClusterInfo: false\n",
          "kubeconfig: user \"u\" uses an exec plugin (aws), which kctl does not run" },
        { "    auth-provider:\n      config:\n        client-secret: hunter2\n        idp-issuer-url: https://x\n      name: oidc\n",
          "kubeconfig: user \"u\" uses an auth-provider plugin (oidc), which kctl does not run" },
        { "    password: hunter2\n    username: admin\n", "uses basic auth (username and password)" },
        { "    as: system:admin\n    token: hunter2\n", "impersonates (as)" },
        { "    as-groups:\n    - system:masters\n    token: hunter2\n", "impersonates (as-groups)" },
        { "    client-certificate: c.pem\n    client-certificate-data: aHVudGVyMg==\n    client-key: k.pem\n",
          "both client-certificate and client-certificate-data" },
        { "    client-certificate: c.pem\n    client-key: k.pem\n    client-key-data: aHVudGVyMg==\n", "both client-key and client-key-data" },
        { "    client-certificate: c.pem\n    token: hunter2\n", "a client certificate without its key" },
        { "    client-key-data: aHVudGVyMg==\n", "a client key without a client certificate" },
        { "    client-certificate-data: 'hunter2!'\n    client-key: k.pem\n", "client-certificate-data is not base64" },
        { "    token:\n      hunter2: 1\n", "user \"u\": token is not a string" },
    };
    static const struct { const char *doc; const char *what; } clusters[] = {
        { "clusters:\n- name: c\n  cluster:\n    server: https://k\n    proxy-url: http://p:3128\n"
          "contexts:\n- name: x\n  context:\n    cluster: c\n", "cluster \"c\" uses proxy-url" },
        { "clusters:\n- name: c\n  cluster:\n    server: https://k\n    tls-server-name: k.example\n"
          "contexts:\n- name: x\n  context:\n    cluster: c\n", "cluster \"c\" uses tls-server-name" },
        { "clusters:\n- name: c\n  cluster:\n    server: https://k\n    certificate-authority: ca.crt\n    certificate-authority-data: Q0E=\n"
          "contexts:\n- name: x\n  context:\n    cluster: c\n", "both certificate-authority and certificate-authority-data" },
        { "clusters:\n- name: c\n  cluster:\n    server: https://k\n    certificate-authority-data: Q0E=\n    insecure-skip-tls-verify: true\n"
          "contexts:\n- name: x\n  context:\n    cluster: c\n", "a certificate authority and insecure-skip-tls-verify" },
        { "clusters:\n- name: c\n  cluster:\n    server: https://k\n    insecure-skip-tls-verify: \"yes\"\n"
          "contexts:\n- name: x\n  context:\n    cluster: c\n", "insecure-skip-tls-verify is not true or false" },
        { "clusters:\n- name: c\n  cluster:\n    server: https://k\n    certificate-authority-data: Q\n"
          "contexts:\n- name: x\n  context:\n    cluster: c\n", "certificate-authority-data is not base64" },
        { "clusters: {}\ncontexts:\n- name: x\n  context:\n    cluster: c\n", "clusters is not a list" },
        { "clusters:\n- c\ncontexts:\n- name: x\n  context:\n    cluster: c\n", "an entry of clusters is not a mapping" },
    };
    char doc[1200];
    size_t i;
    KT_KUBE_REQUIRE_CURL();
    kc_begin();
    for (i = 0; i < sizeof users / sizeof users[0]; i++) {
        int rc;
        snprintf(doc, sizeof doc, "%s%s", head, users[i].user);
        rc = kc_parse(doc, NULL, "x");
        if (rc != KCTL_ERR_INVALID_ARG || !kc_has(kc_st.message, users[i].what))
            kt_fail(__FILE__, __LINE__, "user case %u: rc %d, \"%s\"; want \"%s\"", (unsigned)i, rc, kc_st.message, users[i].what);
        KT_CHECK(!kc_has(kc_st.message, "hunter2") && !kc_has(kc_st.message, "aHVudGVyMg"));
    }
    for (i = 0; i < sizeof clusters / sizeof clusters[0]; i++) {
        int rc = kc_parse(clusters[i].doc, NULL, "x");
        if (rc != KCTL_ERR_INVALID_ARG || !kc_has(kc_st.message, clusters[i].what))
            kt_fail(__FILE__, __LINE__, "cluster case %u: rc %d, \"%s\"; want \"%s\"", (unsigned)i, rc, kc_st.message, clusters[i].what);
    }
    /* base64 split over lines counts, as Go's decoder reads it */
    KT_EQ_INT(kc_parse("{\"clusters\":[{\"name\":\"c\",\"cluster\":{\"server\":\"https://k\",\"certificate-authority-data\":\"LS0t\\nLS0=\\r\\n\"}}],"
                       "\"contexts\":[{\"name\":\"x\",\"context\":{\"cluster\":\"c\"}}]}", NULL, "x"), KCTL_OK);
    KT_EQ_U64(kc.desc.tls.ca_len, 5);
    KT_CHECK(kc.desc.tls.ca_data && memcmp(kc.desc.tls.ca_data, "-----", 5) == 0);
    /* secrets in a line that is refused stay out of the message */
    KT_EQ_INT(kc_parse("users:\n- name: u\n  user:\n    token: &a hunter2\n", NULL, NULL), KCTL_ERR_INVALID_ARG);
    KT_CHECK(!kc_has(kc_st.message, "hunter2"));
    kc_end();
}

/* In-cluster from a service account directory of the test's own. */
static void kc_in_cluster(void) {
    char path[600], want[700], *save[3];
    static const char *const vars[3] = { "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "POD_NAMESPACE" };
    int i;
    KT_KUBE_REQUIRE_CURL();
    for (i = 0; i < 3; i++) save[i] = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL;
    kc_mkdir();
    kc_begin();
    unsetenv("POD_NAMESPACE");
    /* not in a pod */
    unsetenv("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
    KC_MSG("KUBERNETES_SERVICE_HOST");
    setenv("KUBERNETES_SERVICE_HOST", "", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
    /* no token file yet */
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
    KC_MSG("token");
    /* a token only: no CA file, namespace "default" */
    kc_write("token", "eyJhbGciOi.hunter2", path, sizeof path);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_OK);
    KT_EQ_STR(kc.desc.server, "https://10.96.0.1:443");
    KT_EQ_STR(kc.desc.token_file, path);
    KC_NULL(kc.desc.token);
    KC_NULL(kc.desc.tls.ca_file);
    KT_EQ_STR(kc.ns, "default");
    KT_EQ_STR(kc.context, "");
    /* the CA and the namespace files; an IPv6 host */
    kc_write("ca.crt", KC_CA_PEM, path, sizeof path);
    kc_write("namespace", "edge-devices\n", want, sizeof want);
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "6443", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_OK);
    KT_EQ_STR(kc.desc.server, "https://[fd00:10:96::1]:6443");
    KT_EQ_STR(kc.desc.tls.ca_file, path);
    KT_EQ_STR(kc.ns, "edge-devices");
    /* $POD_NAMESPACE first, as client-go's in-cluster namespace */
    setenv("POD_NAMESPACE", "from-env", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_OK);
    KT_EQ_STR(kc.ns, "from-env");
    unsetenv("POD_NAMESPACE");
    /* bad variables */
    setenv("KUBERNETES_SERVICE_PORT", "44x", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_ERR_INVALID_ARG);
    KC_NULL(kc.desc.server);
    setenv("KUBERNETES_SERVICE_PORT", "70000", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_ERR_INVALID_ARG);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("KUBERNETES_SERVICE_HOST", "evil/path", 1);
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, &kc, &kc_st), KCTL_ERR_INVALID_ARG);
    KT_CHECK(!kc_has(kc_st.message, "hunter2"));
    KT_EQ_INT(kctl_kube_config_in_cluster(kc_dir, NULL, &kc_st), KCTL_ERR_INVALID_ARG);
    kc_end();
    kc_rmdir();
    for (i = 0; i < 3; i++) {
        if (save[i]) setenv(vars[i], save[i], 1);
        else unsetenv(vars[i]);
        free(save[i]);
    }
}

/* Where load looks: a path, $KUBECONFIG, $HOME/.kube/config; a missing
   file, a directory, neither variable. */
static void kc_load_paths(void) {
    char path[600], home[1300], *save[2];
    static const char *const vars[2] = { "KUBECONFIG", "HOME" };
    static const char doc[] =
        "clusters:\n- name: c\n  cluster:\n    server: https://k\n    certificate-authority: ca.crt\n"
        "contexts:\n- name: x\n  context:\n    cluster: c\ncurrent-context: x\n";
    int i;
    KT_KUBE_REQUIRE_CURL();
    for (i = 0; i < 2; i++) save[i] = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL;
    kc_mkdir();
    kc_begin();
    kc_write(".kube/config", doc, path, sizeof path);
    unsetenv("KUBECONFIG");
    setenv("HOME", kc_dir, 1);
    KT_EQ_INT(kctl_kube_config_load(NULL, NULL, &kc, &kc_st), KCTL_OK);
    snprintf(home, sizeof home, "%s/.kube/ca.crt", kc_dir);
    KT_EQ_STR(kc.desc.tls.ca_file, home);
    setenv("KUBECONFIG", "", 1);
    KT_EQ_INT(kctl_kube_config_load(NULL, NULL, &kc, &kc_st), KCTL_OK);
    snprintf(home, sizeof home, "%s/nope:%s", kc_dir, path);
    setenv("KUBECONFIG", home, 1);
    KT_EQ_INT(kctl_kube_config_load(NULL, NULL, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
    KC_MSG("nope");
    unsetenv("KUBECONFIG");
    unsetenv("HOME");
    KT_EQ_INT(kctl_kube_config_load(NULL, NULL, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
    KC_MSG("$HOME");
    KT_EQ_INT(kctl_kube_config_load(kc_dir, NULL, &kc, &kc_st), KCTL_ERR_IO);
    KT_EQ_INT(kctl_kube_config_load(path, "x", NULL, &kc_st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_kube_config_load(path, "x", &kc, NULL), KCTL_OK);
    kc_end();
    kc_rmdir();
    for (i = 0; i < 2; i++) {
        if (save[i]) setenv(vars[i], save[i], 1);
        else unsetenv(vars[i]);
        free(save[i]);
    }
}

/* Limits and bad input: NULL arguments, a file beyond
   KCTL_KUBECONFIG_MAX_BYTES, nesting beyond KCTL_KUBECONFIG_MAX_DEPTH
   (YAML and JSON), JSON that is not, or not a Config, a NUL in a JSON
   string; every allocation failing in turn (NOMEM or OK, nothing
   leaked). */
static void kc_limits(void) {
    char *big, doc[4096];
    size_t i, n = 0;
    long k;
    int rc;
    KT_KUBE_REQUIRE_CURL();
    kc_begin();
    KT_EQ_INT(kctl_kube_config_parse("a: 1", 4, NULL, NULL, NULL, &kc_st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_kube_config_parse(NULL, 4, NULL, NULL, &kc, &kc_st), KCTL_ERR_INVALID_ARG);
    KT_EQ_INT(kctl_kube_config_parse(NULL, 0, NULL, NULL, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
    /* the length counts, not a NUL: the document ends after "x" */
    KT_EQ_INT(kctl_kube_config_parse("current-context: x\ncontexts: [", 19, NULL, NULL, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
    KC_MSG("no context named \"x\"");
    big = (char *)malloc(KCTL_KUBECONFIG_MAX_BYTES + 2);
    if (big) {
        memset(big, ' ', KCTL_KUBECONFIG_MAX_BYTES + 1);
        big[KCTL_KUBECONFIG_MAX_BYTES + 1] = '\0';
        KT_EQ_INT(kctl_kube_config_parse(big, KCTL_NTS, NULL, NULL, &kc, &kc_st), KCTL_ERR_TOO_LARGE);
        KT_EQ_INT(kctl_kube_config_parse(big, KCTL_KUBECONFIG_MAX_BYTES, NULL, NULL, &kc, &kc_st), KCTL_ERR_NOT_FOUND);
        free(big);
    }
    for (i = 0; i <= KCTL_KUBECONFIG_MAX_DEPTH; i++) n += (size_t)snprintf(doc + n, sizeof doc - n, "%*sa:\n", (int)i, "");
    KT_EQ_INT(kc_parse(doc, NULL, NULL), KCTL_ERR_TOO_LARGE);
    KC_MSG("kubeconfig line 33: nested deeper than 32");
    for (n = 0, i = 0; i < KCTL_KUBECONFIG_MAX_DEPTH; i++) n += (size_t)snprintf(doc + n, sizeof doc - n, "%*s-\n", (int)i, "");
    KT_EQ_INT(kc_parse(doc, NULL, NULL), KCTL_ERR_INVALID_ARG); /* 32 levels are fine: a list is no Config */
    KC_MSG("not a Config");
    for (n = 0, i = 0; i <= KCTL_KUBECONFIG_MAX_DEPTH; i++) doc[n++] = '[';
    for (i = 0; i <= KCTL_KUBECONFIG_MAX_DEPTH; i++) doc[n++] = ']';
    doc[n] = '\0';
    KT_EQ_INT(kc_parse(doc, NULL, NULL), KCTL_ERR_INVALID_ARG); /* [ starts YAML: a flow sequence */
    KT_EQ_INT(kc_parse("{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", NULL, NULL), KCTL_ERR_TOO_LARGE);
    KT_EQ_INT(kc_parse("{\"current-context\": }", NULL, NULL), KCTL_ERR_INVALID_ARG);
    KC_MSG("not valid JSON");
    KT_EQ_INT(kc_parse("  {\"current-context\": \"a\\u0000b\"}", NULL, NULL), KCTL_ERR_INVALID_ARG);
    KC_MSG("NUL");
    KT_EQ_INT(kc_parse("just a string\n", NULL, NULL), KCTL_ERR_INVALID_ARG);
    KC_MSG("not a Config");
    kc_end();
    /* every allocation failing in turn */
    for (k = 0; k < 200; k++) {
        kc_begin();
        kc_al.fail_after = k;
        rc = kc_parse(kc_kubectl_yaml, "/cfg", "lab");
        if (rc != KCTL_OK && rc != KCTL_ERR_NOMEM) kt_fail(__FILE__, __LINE__, "allocation %ld failing: rc %d", k, rc);
        if (rc == KCTL_OK) KT_EQ_U64(kc.desc.tls.ca_len, strlen(KC_CA_PEM));
        kc_end();
        if (rc == KCTL_OK) break;
    }
    KT_CHECK(k < 200);
}
#endif /* KT_HAVE_CURL */

#ifndef KT_HAVE_CURL
static void kc_skip(void) { KT_KUBE_REQUIRE_CURL(); }
#endif

void kt_suite_kubeconfig(void) {
#ifdef KT_HAVE_CURL
    KT_RUN(kc_kubectl_literal);
    KT_RUN(kc_kubectl_live);
    KT_RUN(kc_relative_paths);
    KT_RUN(kc_contexts);
    KT_RUN(kc_rejected);
    KT_RUN(kc_yaml_forms);
    KT_RUN(kc_refused);
    KT_RUN(kc_in_cluster);
    KT_RUN(kc_load_paths);
    KT_RUN(kc_limits);
#else
    KT_RUN(kc_skip);
#endif
}
