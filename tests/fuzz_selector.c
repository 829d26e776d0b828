/* fuzz_selector.c - libFuzzer target for the label and field selector parser.
   The input is a label selector, then (after the first NUL byte, if any) a
   field selector: both may hold newlines, which label selectors take as
   whitespace. Whatever parses is matched against three objects. */
#define KCTL_IMPLEMENTATION
#include "../kctl.h"
#include <stdlib.h>
#include <string.h>

static kctl_obj *fs_objs[3];

static void fs_init(void) {
    static const char *docs[3] = {
        "{\"metadata\":{\"name\":\"web\",\"namespace\":\"prod\",\"labels\":{\"app\":\"web\",\"tier\":\"fe\",\"a.b/c\":\"\"}}}",
        "{\"metadata\":{\"name\":\"node-1\"}}",
        "{\"metadata\":{\"name\":\"a,b=c\\\\d\",\"namespace\":\"x\",\"labels\":{\"n\":\"-12\",\"in\":\"notin\",\"m\":\"99999999999999999999\"}}}",
    };
    int i;
    for (i = 0; i < 3; i++)
        if (kctl_obj_parse(docs[i], strlen(docs[i]), NULL, &fs_objs[i]) != KCTL_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = (char *)malloc(size + 1), *fields = NULL;
    size_t n;
    kctl_selector *s = NULL;
    int rc, i;
    if (!fs_objs[0]) fs_init();
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    n = strlen(text);
    if (n < size) fields = text + n + 1;
    rc = kctl_selector_parse(text, fields, NULL, &s);
    if (rc == KCTL_OK) {
        for (i = 0; i < 3; i++) (void)kctl_selector_matches(s, fs_objs[i]);
        kctl_selector_free(s);
    } else if (rc != KCTL_ERR_INVALID_ARG || s != NULL) {
        abort(); /* a parse either works or says INVALID_ARG */
    }
    free(text);
    return 0;
}
