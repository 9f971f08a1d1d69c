/* fuzz_manifest.c -- libFuzzer harness: the bytes are a bundle's
 * manifest.json (jansson parse as the reader does it, then every structural
 * check the reader and writer apply). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "source/bundle_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t jerr;
  json_t *m = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
  if (!m) return 0;
  nsl_error err = {0};
  (void)nsl__manifest_check(m, NSL_ERR_FORMAT, "fuzz: manifest.json", &err);
  json_decref(m);
  return 0;
}
