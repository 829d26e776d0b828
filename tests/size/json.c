/* The JSON reader alone: parse into caller storage, read fields by path
   (make size). */
#include "board.h"

static const char doc[] = "{\"metadata\":{\"name\":\"web\",\"generation\":3},\"spec\":{\"image\":\"nginx:1.27\",\"replicas\":2}}";

int main(void) {
    kctl_json_tok toks[32];
    kctl_json j;
    char image[64];
    int64_t replicas = 0;
    size_t n = sizeof doc - 1 - (size_t)(board_input & 1);
    if (kctl_json_parse(doc, n, toks, 32, NULL, &j) != KCTL_OK) return 1;
    if (kctl_json_get_string(doc, n, "spec.image", image, sizeof image, NULL) != KCTL_OK) return 2;
    if (kctl_json_get_int64(doc, n, "spec.replicas", &replicas) != KCTL_OK) return 3;
    return (int)replicas + image[0];
}
