/* fuzz_kubeconfig.c - libFuzzer target for the kubeconfig reader
   (kctl_http_curl.h, KUBECONFIG): the input is a kubeconfig, YAML or
   JSON. It goes through kctl_kube_config_parse for its current-context
   and for the context named "a", on a counting allocator; what comes
   back is either a configuration whose strings hold together (a server,
   a namespace, a context; data and its length both set or both not) or
   a result code kctl documents with a message, and nothing is left
   allocated. The YAML reader's JSON is also checked on its own: when it
   says OK, kctl_json_parse takes the text it wrote. No crash, no leak,
   no read out of bounds (the input is an exact-size copy): the
   sanitizers say so. Seeds: tests/fuzz_corpus/kubeconfig (kubectl's
   files, its JSON view, hand-written YAML of every accepted form). */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include "../kctl_http_curl.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FK_CHECK(c) do { if (!(c)) { fprintf(stderr, "fuzz_kubeconfig: %s:%d: %s\n", __FILE__, __LINE__, #c); abort(); } } while (0)

static long fk_live;
static void *fk_alloc(size_t n, void *u) { void *p = malloc(n); (void)u; if (p) fk_live++; return p; }
static void fk_free(void *p, void *u) { (void)u; if (p) { fk_live--; free(p); } }

static void fk_check_data(const char *data, size_t len) { FK_CHECK((data == NULL) == (len == 0)); }

static void fk_parse(const char *text, size_t size, const char *context) {
    kctl_kube_config kc;
    kctl_api_status st;
    int rc;
    memset(&kc, 0, sizeof kc);
    memset(&st, 0, sizeof st);
    kc.allocator.alloc_fn = fk_alloc;
    kc.allocator.free_fn = fk_free;
    st.allocator = kc.allocator;
    rc = kctl_kube_config_parse(text, size, "/d", context, &kc, &st);
    if (rc == KCTL_OK) {
        FK_CHECK(kc.desc.server && kc.desc.server[0]);
        FK_CHECK(kc.ns && kc.ns[0] && kc.context && kc.context[0]);
        FK_CHECK(!context || strcmp(kc.context, context) == 0);
        fk_check_data(kc.desc.tls.ca_data, kc.desc.tls.ca_len);
        fk_check_data(kc.desc.tls.cert_data, kc.desc.tls.cert_len);
        fk_check_data(kc.desc.tls.key_data, kc.desc.tls.key_len);
        FK_CHECK(!kc.desc.tls.ca_file || kc.desc.tls.ca_file[0] == '/');
        FK_CHECK(!kc.desc.token_file || kc.desc.token_file[0] == '/');
        FK_CHECK(st.code == 0);
    } else {
        FK_CHECK(rc == KCTL_ERR_INVALID_ARG || rc == KCTL_ERR_NOT_FOUND || rc == KCTL_ERR_TOO_LARGE);
        FK_CHECK(st.message && st.message[0]);
        FK_CHECK(kc.mem_ == NULL && kc.desc.server == NULL);
    }
    kctl_kube_config_free(&kc);
    kctl_api_status_clear(&st);
    FK_CHECK(fk_live == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = (char *)malloc(size ? size : 1);
    kctl_jw w;
    char msg[200];
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    fk_parse(text, size, NULL);
    fk_parse(text, size, "a");
    /* the YAML reader alone: what it writes is JSON */
    kctl_jw_init_growable(&w, NULL);
    if (kctl__ky_to_json(text, size, NULL, &w, msg, sizeof msg) == KCTL_OK) {
        const char *json;
        size_t len;
        kctl_json j;
        FK_CHECK(kctl_jw_finish(&w, &json, &len) == KCTL_OK);
        FK_CHECK(kctl_json_parse(json, len, NULL, 0, NULL, &j) == KCTL_OK);
    } else FK_CHECK(strncmp(msg, "kubeconfig", 10) == 0);
    kctl_jw_free(&w);
    free(text);
    return 0;
}
