/*
 * csv.h -- the CSV reader shared by the sources that read CSV text (nsys-jax's
 * push/pop trace, nsys stats reports): RFC 4180 records and integer fields.
 */
#ifndef NSL_SOURCE_CSV_H
#define NSL_SOURCE_CSV_H

#include <stddef.h>
#include <stdint.h>

/* Splits one CSV record starting at *pos (RFC 4180 quoting) into fields
 * (pointers into scratch, which needs len - *pos + 1 bytes, quotes removed).
 * Returns the number of fields (at most maxf are stored), -1 at the end of
 * input, -2 for an unterminated quote. */
int nsl__csv_record(const char *d, size_t len, size_t *pos, char *scratch, char **fields, int maxf);

/* The integer in field f ("123", or "123.0" as pandas writes integers);
 * NSL_NULL_I64 for an empty or malformed field. */
int64_t nsl__csv_i64(const char *f);

#endif
