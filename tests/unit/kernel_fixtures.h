/* kernel_fixtures.h -- column builders and a seeded generator shared by the
 * kernel unit tests (test_kernels.c, test_sort.c, test_groupby.c,
 * test_intervals.c).  Everything is static: each test includes its copy. */
#ifndef NSL_TESTS_KERNEL_FIXTURES_H
#define NSL_TESTS_KERNEL_FIXTURES_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "nsl/nsl.h"

/* splitmix64: a small seeded generator, the same sequence everywhere. */
static uint64_t fx_state = 0x5eed;
static inline void fx_seed(uint64_t s) { fx_state = s; }
static inline uint64_t fx_next(void) {
  uint64_t z = (fx_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform in [lo, hi]. */
static inline int64_t fx_range(int64_t lo, int64_t hi) {
  return lo + (int64_t)(fx_next() % (uint64_t)(hi - lo + 1));
}

static inline nsl_column *fx_i64(int64_t n, const int64_t *v) {
  nsl_column *c = nsl_column_new(NSL_I64, n, NULL);
  assert_non_null(c);
  if (n) memcpy(c->data, v, (size_t)n * sizeof *v);
  return c;
}
static inline nsl_column *fx_i32(int64_t n, const int32_t *v) {
  nsl_column *c = nsl_column_new(NSL_I32, n, NULL);
  assert_non_null(c);
  if (n) memcpy(c->data, v, (size_t)n * sizeof *v);
  return c;
}
static inline nsl_column *fx_f64(int64_t n, const double *v) {
  nsl_column *c = nsl_column_new(NSL_F64, n, NULL);
  assert_non_null(c);
  if (n) memcpy(c->data, v, (size_t)n * sizeof *v);
  return c;
}
static inline nsl_column *fx_bool(int64_t n, const uint8_t *v) {
  nsl_column *c = nsl_column_new(NSL_BOOL, n, NULL);
  assert_non_null(c);
  if (n) memcpy(c->data, v, (size_t)n * sizeof *v);
  return c;
}
/* The id of s (len bytes) in d, added if new (the test fails if d cannot
 * take it). */
static inline int32_t fx_id(nsl_dict *d, const char *s, size_t len) {
  int32_t id = -1;
  assert_int_equal(nsl_dict_intern(d, s, len, &id, NULL), NSL_OK);
  return id;
}
/* A string column over d from n C strings (NULL pointer: a NULL value). */
static inline nsl_column *fx_str(nsl_dict *d, int64_t n, const char *const *s) {
  nsl_column *c = nsl_column_new(NSL_STR, n, d);
  assert_non_null(c);
  for (int64_t i = 0; i < n; i++) nsl_i32(c)[i] = s[i] ? fx_id(d, s[i], strlen(s[i])) : -1;
  return c;
}

#define FX_I64(...) fx_i64(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})
#define FX_I32(...) fx_i32(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t), (int32_t[]){__VA_ARGS__})
#define FX_F64(...) fx_f64(sizeof((double[]){__VA_ARGS__}) / sizeof(double), (double[]){__VA_ARGS__})
#define FX_BOOL(...) fx_bool(sizeof((uint8_t[]){__VA_ARGS__}) / sizeof(uint8_t), (uint8_t[]){__VA_ARGS__})

/* Asserts that c is an I64 column equal to want[0..n). */
static inline void fx_expect_i64(const nsl_column *c, int64_t n, const int64_t *want) {
  assert_non_null(c);
  assert_int_equal(c->type, NSL_I64);
  assert_int_equal(c->len, n);
  for (int64_t i = 0; i < n; i++) {
    if (nsl_i64(c)[i] != want[i]) fail_msg("row %lld: got %lld, want %lld", (long long)i,
                                           (long long)nsl_i64(c)[i], (long long)want[i]);
  }
}
#define FX_EXPECT_I64(c, ...)                                                                       \
  fx_expect_i64((c), sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

static inline void fx_expect_bool(const nsl_column *c, int64_t n, const uint8_t *want) {
  assert_non_null(c);
  assert_int_equal(c->type, NSL_BOOL);
  assert_int_equal(c->len, n);
  for (int64_t i = 0; i < n; i++)
    if (nsl_bool(c)[i] != want[i]) fail_msg("row %lld: got %d, want %d", (long long)i, nsl_bool(c)[i], want[i]);
}
#define FX_EXPECT_BOOL(c, ...)                                                                      \
  fx_expect_bool((c), sizeof((uint8_t[]){__VA_ARGS__}) / sizeof(uint8_t), (uint8_t[]){__VA_ARGS__})

/* Doubles equal, NaN equal to NaN. */
static inline int fx_same_f64(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static inline void fx_expect_f64(const nsl_column *c, int64_t n, const double *want) {
  assert_non_null(c);
  assert_int_equal(c->type, NSL_F64);
  assert_int_equal(c->len, n);
  for (int64_t i = 0; i < n; i++)
    if (!fx_same_f64(nsl_f64(c)[i], want[i]))
      fail_msg("row %lld: got %.17g, want %.17g", (long long)i, nsl_f64(c)[i], want[i]);
}
#define FX_EXPECT_F64(c, ...)                                                                       \
  fx_expect_f64((c), sizeof((double[]){__VA_ARGS__}) / sizeof(double), (double[]){__VA_ARGS__})

/* ---- SQL oracle over the real exports in $NSL_DATA_DIR/nsys ------------------- */

/* Opens $NSL_DATA_DIR/nsys/<name> read-only, or skips the test when the
 * data is not there. */
static inline sqlite3 *fx_sql_open(const char *name) {
  const char *dir = getenv("NSL_DATA_DIR");
  char path[4096];
  if (!dir) skip();
  snprintf(path, sizeof path, "file:%s/nsys/%s?mode=ro&immutable=1", dir, name);
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    skip();
  }
  return db;
}

/* The result columns of sql as nsl columns, one per letter of types: 'i'
 * I64 (NULL -> NSL_NULL_I64), 'f' F64 (NULL -> NaN), 's' strings interned
 * into d.  Returns the row count. */
static inline int64_t fx_sql_columns(sqlite3 *db, const char *sql, const char *types, nsl_column **out,
                                     nsl_dict *d) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("SQL: %s", sqlite3_errmsg(db));
  int ncols = (int)strlen(types);
  int64_t n = 0;
  for (int k = 0; k < ncols; k++) {
    nsl_type t = types[k] == 's' ? NSL_STR : types[k] == 'f' ? NSL_F64 : NSL_I64;
    out[k] = nsl_column_new(t, 0, d);
    assert_int_equal(nsl_column_reserve(out[k], 1024, NULL), NSL_OK);
  }
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int k = 0; k < ncols; k++) {
      nsl_column *c = out[k];
      if (n == c->cap) assert_int_equal(nsl_column_reserve(c, c->cap * 2, NULL), NSL_OK);
      int null = sqlite3_column_type(st, k) == SQLITE_NULL;
      if (c->type == NSL_STR) {
        const char *s = (const char *)sqlite3_column_text(st, k);
        nsl_i32(c)[n] = s ? fx_id(d, s, (size_t)sqlite3_column_bytes(st, k)) : -1;
      } else if (c->type == NSL_F64) {
        nsl_f64(c)[n] = null ? NAN : sqlite3_column_double(st, k);
      } else {
        nsl_i64(c)[n] = null ? NSL_NULL_I64 : sqlite3_column_int64(st, k);
      }
    }
    n++;
    for (int k = 0; k < ncols; k++) nsl_column_set_len(out[k], n);
  }
  sqlite3_finalize(st);
  return n;
}

/* One value of sql (the first column of the first row) as a double. */
static inline double fx_sql_double(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("SQL: %s", sqlite3_errmsg(db));
  double v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_double(st, 0) : NAN;
  sqlite3_finalize(st);
  return v;
}

#endif
