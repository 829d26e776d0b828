/* test_json.c - the JSON reader, lookups, getters, equality, writer and merge patch. */
#include "kt.h"

void kt_suite_json(void) {
}
