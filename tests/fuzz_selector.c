/* fuzz_selector.c - libFuzzer target for the label and field selector parser.
   The input is a label selector, then (after the first newline, if any) a
   field selector; whatever parses is matched against two objects. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdlib.h>
#include <string.h>

static kctl_obj *fs_objs[2];

static void fs_init(void) {
    static const char *docs[2] = {
        "{\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\",\"labels\":{\"app\":\"web\",\"tier\":\"fe\",\"a.b/c\":\"\"}}}",
        "{\"metadata\":{\"name\":\"node-1\"}}",
    };
    int i;
    for (i = 0; i < 2; i++)
        if (kctl_obj_parse(docs[i], strlen(docs[i]), NULL, &fs_objs[i]) != KCTL_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = (char *)malloc(size + 1), *fields = NULL, *nl;
    kctl_selector *s = NULL;
    int rc, i;
    if (!fs_objs[0]) fs_init();
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if ((nl = strchr(text, '\n')) != NULL) {
        *nl = '\0';
        fields = nl + 1;
    }
    rc = kctl_selector_parse(text, fields, NULL, &s);
    if (rc == KCTL_OK) {
        for (i = 0; i < 2; i++) (void)kctl_selector_matches(s, fs_objs[i]);
        kctl_selector_free(s);
    } else if (rc != KCTL_ERR_INVALID_ARG || s != NULL) {
        abort(); /* a parse either works or says INVALID_ARG */
    }
    free(text);
    return 0;
}
