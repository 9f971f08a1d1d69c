/* table_rows.h -- the row count of a table as one value, for the unit tests'
 * assertions: nsl_table_nrows's count, or -1 when it fails (err says why). */
#ifndef NSL_TESTS_TABLE_ROWS_H
#define NSL_TESTS_TABLE_ROWS_H

#include <stdint.h>

#include "nsl/nsl.h"

static inline int64_t table_rows(nsl_table *t, nsl_error *err) {
  int64_t n;
  return nsl_table_nrows(t, &n, err) == NSL_OK ? n : -1;
}

#endif
