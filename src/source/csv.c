/* csv.c -- CSV records and integer fields (see csv.h). */
#include "source/csv.h"

#include <stdlib.h>

#include "nsl/nsl.h"

/* Splits one CSV record starting at *pos (RFC 4180 quoting) into fields
 * (pointers into a scratch copy with quotes removed).  Returns the number of
 * fields, -1 at the end of input, -2 for an unterminated quote. */
int nsl__csv_record(const char *d, size_t len, size_t *pos, char *scratch, char **fields, int maxf) {
  size_t i = *pos, o = 0;
  int nf = 0;
  if (i >= len) return -1;
  fields[nf++] = scratch;
  while (i < len) {
    char c = d[i];
    if (c == '"') {
      i++;
      for (;;) {
        if (i >= len) return -2;
        if (d[i] == '"') {
          if (i + 1 < len && d[i + 1] == '"') {
            scratch[o++] = '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        scratch[o++] = d[i++];
      }
      continue;
    }
    if (c == ',') {
      scratch[o++] = 0;
      if (nf < maxf) fields[nf++] = scratch + o;
      i++;
      continue;
    }
    if (c == '\r' || c == '\n') {
      i++;
      if (c == '\r' && i < len && d[i] == '\n') i++;
      break;
    }
    scratch[o++] = c;
    i++;
  }
  scratch[o] = 0;
  *pos = i;
  return nf;
}

int64_t nsl__csv_i64(const char *f) {
  if (!f || !*f) return NSL_NULL_I64;
  char *end;
  long long v = strtoll(f, &end, 10);
  if (*end == '.') {   /* pandas may write integers as "123.0" */
    double d = strtod(f, &end);
    /* outside int64's range (or NaN) the cast is undefined: no value */
    return *end || !(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ? NSL_NULL_I64 : (int64_t)d;
  }
  return *end ? NSL_NULL_I64 : (int64_t)v;
}

