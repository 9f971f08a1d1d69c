/* fuzz_parquet.c -- libFuzzer harness: the bytes are a Parquet file (as
 * nsys-jax archives carry them); the footer is parsed and every column
 * decoded in its own type and converted to the others the reader offers. */
#include <stdint.h>
#include <stdlib.h>

#include "source/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nsl_error err = {0};
  nsl_parquet *pq = NULL;
  if (nsl__parquet_open_mem(&pq, "fuzz.parquet", data, size, NULL, &err) != NSL_OK) return 0;
  (void)nsl__parquet_created_by(pq);
  (void)nsl__parquet_metadata(pq, "pandas");
  nsl_dict *dict = nsl_dict_new();
  const nsl_type as[] = {NSL_I64, NSL_I32, NSL_F64, NSL_BOOL, NSL_STR};
  for (int i = 0; i < nsl__parquet_ncols(pq) && i < 64; i++) {
    (void)nsl__parquet_column_info(pq, i);
    nsl_column *c = NULL;
    if (nsl__parquet_read_column(pq, i, dict, &c, &err) == NSL_OK) nsl_column_release(c);
    for (int k = 0; k < 5; k++) {
      c = NULL;
      if (nsl__parquet_read_column_as(pq, i, as[k], dict, &c, &err) == NSL_OK) nsl_column_release(c);
    }
  }
  nsl_dict_release(dict);
  nsl__parquet_close(pq);
  return 0;
}
