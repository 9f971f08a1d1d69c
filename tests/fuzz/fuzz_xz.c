/* fuzz_xz.c -- libFuzzer harness: the bytes are an xz stream (nsys-jax's
 * .hlo.pb.xz and .csv.xz members): decompression under an output limit,
 * and the compressed-HLO path that decodes what comes out. */
#include <stdint.h>
#include <stdlib.h>

#include "source/hlo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nsl_error err = {0};
  uint8_t *out = NULL;
  size_t len = 0;
  if (nsl__xz_decompress(data, size, 8u << 20, "fuzz.xz", &out, &len, &err) == NSL_OK) free(out);
  nsl_hlo *h = NULL;
  if (nsl__hlo_decode_xz(data, size, "fuzz.hlo.pb.xz", &h, &err) == NSL_OK) nsl_hlo_free(h);
  return 0;
}
