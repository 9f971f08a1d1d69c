/* fuzz_colcache.c -- libFuzzer harness: the bytes are a columnar cache file
 * (archive-format/CACHE.md) after a selector byte.  The selector picks the
 * type asked for and a clock offset, and whether to seal the file first
 * (magic, version, identity and checksums made right for what the rest of
 * the header says), so that the fuzzer reaches the checks behind the
 * checksums: bounds, dictionary offsets, string ids, mask values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/colcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned sel = data[0];
  size_t n = size - 1;
  uint64_t *buf = malloc(n / 8 * 8 + 8);   /* 8-aligned, as a mapping is */
  if (!buf) return 0;
  memcpy(buf, data + 1, n);
  const uint64_t ident = 0x6e736c2d66757a7aULL;
  if (sel & 0x80) nsl__cache_seal(buf, n, ident);
  char table[64] = "", column[64] = "";
  if (n >= 160) {   /* the names the header gives, so that they match */
    memcpy(table, (const char *)buf + 32, 63);
    memcpy(column, (const char *)buf + 96, 63);
  }
  nsl_dict *d = nsl_dict_new();
  if (d) {
    nsl_column *c = nsl__cache_column_from_bytes(buf, n, ident, table, column, (nsl_type)(sel % 5), d,
                                                 sel & 0x40 ? 1000 : 0);
    if (c) {   /* every value, every string */
      volatile uint64_t acc = 0;   /* unsigned: the sum wraps, it does not overflow */
      for (int64_t i = 0; i < c->len; i++) {
        acc += (uint64_t)nsl_column_get_i64(c, i);
        if (c->type == NSL_STR && nsl_i32(c)[i] >= 0) acc += (uint64_t)nsl_dict_strlen(d, nsl_i32(c)[i]);
      }
      (void)acc;   /* read so that no compiler drops the reads above */
      nsl_column_release(c);
    }
    int found, nextra;
    int64_t rows;
    (void)nsl__cache_table_from_bytes(buf, n, ident, table, &found, &rows, &nextra);
    nsl_dict_release(d);
  }
  free(buf);
  return 0;
}
