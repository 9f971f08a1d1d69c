/* fuzz_bundle.c -- libFuzzer harness: the bytes are a zip, opened as an nsl
 * bundle (manifest required and checked) and as any zip (an nsys-jax
 * archive); every member is listed and read whole (sizes and hashes
 * checked on the way), then the whole archive verified. */
#include <stdint.h>
#include <stdlib.h>

#include "nsl/bundle.h"
#include "source/bundle_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const uint8_t *data, size_t size, nsl_bundle_mode mode) {
  nsl_bundle_options o = {0};
  o.mode = mode;
  o.limits.max_member = 16u << 20;   /* keep the fuzzer's memory bounded */
  o.limits.max_total = 64u << 20;
  o.limits.max_ratio = 200;
  o.limits.ratio_floor = 1u << 20;
  o.limits.max_members = 10000;
  o.limits.max_manifest = 1u << 20;
  nsl_error err = {0};
  nsl_bundle *b = NULL;
  if (nsl_bundle_open_memory(&b, "fuzz.zip", data, size, &o, &err) != NSL_OK) return;
  for (size_t i = 0; i < nsl_bundle_count(b); i++) {
    const nsl_bundle_member *m = nsl_bundle_member_at(b, i);
    void *buf = NULL;
    size_t len = 0;
    if (nsl_bundle_read_member(b, m->name, &buf, &len, &err) == NSL_OK) free(buf);
    (void)nsl__bundle_report_entry(b, m->name);
  }
  (void)nsl_bundle_verify(b, &err);
  nsl_bundle_close(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  read_all(data, size, NSL_BUNDLE_STRICT);
  read_all(data, size, NSL_BUNDLE_RAW);
  return 0;
}
