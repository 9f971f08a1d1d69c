/* test_rowfilter.c -- row filters evaluated where the rows are read
 * (src/core/rowfilter.c), on an in-memory source of known rows: the rows
 * loaded and counted through a filter are those a plain loop over the rows
 * selects; a trace's own filter (nsl__trace_filter) gives its tables only
 * those rows, at the trace's time offset; malformed filters are refused;
 * derived columns are kept and read back only where the rows are the
 * source's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/rowfilter.h"
#include "nsl/nsl.h"
#include "nsl/source.h"

/* The source's one table, "kernels": start, stop (NULL: an open range), device, name. */
enum { NROWS = 8 };
static const int64_t START[NROWS] = {0, 10, 20, 30, 40, 50, 60, 70};
static const int64_t STOP[NROWS] = {5, 25, 22, 45, NSL_NULL_I64, 55, 90, 71};
static const int32_t DEVICE[NROWS] = {0, 1, 0, 1, 0, 1, 0, 1};
static const char *const NAME[NROWS] = {"gemm", "nccl_all", "gemm", "copy", "gemm", "nccl_x", "relu", "gemm"};

static nsl_status m_describe(void *src, const char *name, nsl_table *t, nsl_error *err) {
  (void)src;
  if (strcmp(name, "kernels") != 0) return nsl_error_set(err, NSL_ERR_NOTFOUND, "no table %s", name);
  nsl_table_declare(t, "name", NSL_STR, NULL);
  return NSL_OK;
}

static nsl_status m_load(void *src, const char *name, const char *const *cols, const nsl_type *types, int n,
                         nsl_dict *dict, int64_t offset, nsl_column **out, nsl_error *err) {
  (void)src;
  (void)types;
  if (strcmp(name, "kernels") != 0) return nsl_error_set(err, NSL_ERR_NOTFOUND, "no table %s", name);
  for (int k = 0; k < n; k++) {
    int is_str = strcmp(cols[k], "name") == 0, is_dev = strcmp(cols[k], "device") == 0;
    out[k] = nsl_column_new(is_str ? NSL_STR : is_dev ? NSL_I32 : NSL_I64, NROWS, is_str ? dict : NULL);
    for (int i = 0; i < NROWS; i++) {
      nsl_status rc = NSL_OK;
      if (is_str) rc = nsl_dict_intern(dict, NAME[i], strlen(NAME[i]), &nsl_i32(out[k])[i], err);
      else if (is_dev) nsl_i32(out[k])[i] = DEVICE[i];
      else if (strcmp(cols[k], "start") == 0) nsl_i64(out[k])[i] = START[i] + offset;
      else if (strcmp(cols[k], "stop") == 0) nsl_i64(out[k])[i] = STOP[i] == NSL_NULL_I64 ? STOP[i] : STOP[i] + offset;
      else nsl_i64(out[k])[i] = NSL_NULL_I64;
      if (rc != NSL_OK) return rc;
    }
  }
  return NSL_OK;
}

static nsl_status m_count(void *src, const char *name, int64_t *out, nsl_error *err) {
  (void)src;
  if (strcmp(name, "kernels") != 0) return nsl_error_set(err, NSL_ERR_NOTFOUND, "no table %s", name);
  *out = NROWS;
  return NSL_OK;
}

static const nsl_source_ops mem_ops = {.version = NSL_SOURCE_VERSION, .kind = "memory", .describe = m_describe,
                                       .load = m_load, .count = m_count};

/* The window [lo, hi) as --from/--to give it: start < hi, stop > lo or NULL. */
static int in_window(int i, int64_t lo, int64_t hi) { return START[i] < hi && (STOP[i] == NSL_NULL_I64 || STOP[i] > lo); }

static void test_window_and_device(void **state) {
  (void)state;
  int64_t lo = 21, hi = 60, dev = 0;
  nsl__row_cond conds[] = {{"start", NSL_LT, NULL, &hi, 1, 0}, {"stop", NSL_GT, NULL, &lo, 1, 1},
                           {"device", NSL__ROW_IN, NULL, &dev, 1, 0}};
  nsl__row_filters *set = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl__row_filters_set(&set, "kernels", conds, 3, &err), NSL_OK);
  size_t len = 0;
  const void *blob = nsl__row_filters_find(set, "kernels", &len);
  assert_non_null(blob);
  assert_null(nsl__row_filters_find(set, "nvtx", &len));
  assert_int_equal(len, 0);
  blob = nsl__row_filters_find(set, "kernels", &len);
  const char *cols[] = {"start", "name"};
  nsl_type types[] = {NSL_I64, NSL_STR};
  nsl_column *out[2] = {NULL, NULL};
  nsl_dict *dict = nsl_dict_new();
  assert_int_equal(nsl__row_filter_load(&mem_ops, NULL, "kernels", cols, types, 2, dict, 0, blob, len, out, &err), NSL_OK);
  int64_t want = 0;
  for (int i = 0; i < NROWS; i++) {
    if (!in_window(i, lo, hi) || DEVICE[i] != dev) continue;
    assert_true(want < out[0]->len);
    assert_int_equal(nsl_i64(out[0])[want], START[i]);
    assert_string_equal(nsl_dict_str(dict, nsl_i32(out[1])[want]), NAME[i]);
    want++;
  }
  assert_int_equal(out[0]->len, want);
  assert_int_equal(want, 2);   /* row 2 (20..22, device 0) and row 4 (40.., open) */
  int64_t n = -1;
  assert_int_equal(nsl__row_filter_count(&mem_ops, NULL, "kernels", 0, blob, len, &n, &err), NSL_OK);
  assert_int_equal(n, want);
  nsl_column_release(out[0]);
  nsl_column_release(out[1]);
  nsl_dict_release(dict);
  nsl__row_filters_free(set);
}

static void test_regex_and_missing_column(void **state) {
  (void)state;
  nsl__row_cond nccl[] = {{"name", NSL__ROW_IMATCH, "^NCCL", NULL, 0, 0}};
  nsl__row_cond lacking[] = {{"no_such_column", NSL_EQ, NULL, (const int64_t[]){1}, 1, 0}};
  nsl__row_filters *set = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl__row_filters_set(&set, "kernels", nccl, 1, &err), NSL_OK);
  assert_int_equal(nsl__row_filters_set(&set, "memcpy", lacking, 1, &err), NSL_OK);
  size_t len = 0;
  const void *blob = nsl__row_filters_find(set, "kernels", &len);
  int64_t n = -1, want = 0;
  for (int i = 0; i < NROWS; i++) want += strncmp(NAME[i], "nccl", 4) == 0;
  assert_int_equal(nsl__row_filter_count(&mem_ops, NULL, "kernels", 0, blob, len, &n, &err), NSL_OK);
  assert_int_equal(n, want);
  /* a condition on a column the report lacks filters none of its rows */
  assert_int_equal(nsl__row_filters_set(&set, "kernels", lacking, 1, &err), NSL_OK);   /* replaces */
  blob = nsl__row_filters_find(set, "kernels", &len);
  assert_int_equal(nsl__row_filter_count(&mem_ops, NULL, "kernels", 0, blob, len, &n, &err), NSL_OK);
  assert_int_equal(n, NROWS);
  nsl__row_filters_free(set);
}

static void test_refusals(void **state) {
  (void)state;
  nsl__row_filters *set = NULL;
  nsl_error err = {0};
  nsl__row_cond bad_regex[] = {{"name", NSL__ROW_MATCH, "(", NULL, 0, 0}};
  assert_int_equal(nsl__row_filters_set(&set, "kernels", bad_regex, 1, &err), NSL_ERR_ARG);
  nsl__row_cond two_values[] = {{"start", NSL_LT, NULL, (const int64_t[]){1, 2}, 2, 0}};
  assert_int_equal(nsl__row_filters_set(&set, "kernels", two_values, 1, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "kernels"));
  assert_null(set);
  /* a damaged encoding is a format error, never a crash */
  nsl__row_cond ok[] = {{"start", NSL_LT, NULL, (const int64_t[]){50}, 1, 0}};
  assert_int_equal(nsl__row_filters_set(&set, "kernels", ok, 1, &err), NSL_OK);
  size_t len = 0;
  const void *blob = nsl__row_filters_find(set, "kernels", &len);
  for (size_t cut = 0; cut < len; cut++) {
    int64_t n = -1;
    assert_int_equal(nsl__row_filter_count(&mem_ops, NULL, "kernels", 0, blob, cut, &n, &err), NSL_ERR_FORMAT);
  }
  nsl__row_filters_free(set);
}

/* A trace's filter: its table holds the passing rows, times compared on the trace's clock. */
static void test_trace_filter(void **state) {
  (void)state;
  nsl_trace *tr = nsl_trace_new();
  nsl_report_info info = {.path = "mem", .name = "mem", .host = "", .rank = -1};
  nsl_error err = {0};
  assert_int_equal(nsl_trace_add_source(tr, &mem_ops, NULL, &info, &err), NSL_OK);
  int64_t dev = 1;
  nsl__row_cond conds[] = {{"device", NSL__ROW_IN, NULL, &dev, 1, 0}};
  assert_int_equal(nsl__trace_filter(tr, "kernels", conds, 1, &err), NSL_OK);
  nsl_table *t = NULL;
  assert_int_equal(nsl_trace_table(tr, "kernels", &t, &err), NSL_OK);
  int64_t rows = -1;
  assert_int_equal(nsl_table_nrows(t, &rows, &err), NSL_OK);
  assert_int_equal(rows, NROWS / 2);
  nsl_column *d = nsl_table_column(t, "device", &err);
  assert_non_null(d);
  for (int64_t i = 0; i < d->len; i++) assert_int_equal(nsl_i32(d)[i], 1);
  nsl_column *s = nsl_table_column(t, "start", &err);
  for (int64_t i = 0, k = 0; i < NROWS; i++)
    if (DEVICE[i] == 1) assert_int_equal(nsl_i64(s)[k++], START[i]);
  /* too late once a table was read */
  assert_int_equal(nsl__trace_filter(tr, "kernels", conds, 1, &err), NSL_ERR_ARG);
  nsl_trace_close(tr);
}

/* Derived columns (nsl_trace_derived_get / _put): a source of version 2
 * keeping one in memory; the trace hands back only a column of the asked
 * shape, never asks a source of version 1 (whose structure ends before
 * those operations) or a trace whose rows are filtered. */
static nsl_column *kept;
static int asked;
static nsl_column *m_derived_get(void *src, const char *table, const char *name, nsl_type type, int64_t rows) {
  (void)src;
  (void)type;
  (void)rows;
  asked++;
  return kept && strcmp(table, "kernels") == 0 && strcmp(name, "x.1") == 0 ? nsl_column_retain(kept) : NULL;
}
/* (on the trace's keeper task: a copy, as the counts of a column the caller holds are not atomic) */
static void m_derived_put(void *src, const char *table, const char *name, const nsl_column *col) {
  (void)src;
  (void)table;
  (void)name;
  asked++;
  nsl_column_release(kept);
  kept = nsl_column_new(col->type, col->len, NULL);
  if (kept) memcpy(kept->data, col->data, (size_t)col->len * nsl_type_size(col->type));
}
static const nsl_source_ops keeping_ops = {.version = 2, .kind = "memory", .describe = m_describe, .load = m_load,
                                           .count = m_count, .derived_get = m_derived_get,
                                           .derived_put = m_derived_put};
/* version 1: the trace must not read past metadata (here the fields are there, and counted if called) */
static const nsl_source_ops v1_ops = {.version = 1, .kind = "memory", .describe = m_describe, .load = m_load,
                                      .count = m_count, .derived_get = m_derived_get, .derived_put = m_derived_put};

static void test_derived_columns(void **state) {
  (void)state;
  nsl_report_info info = {.path = "mem", .name = "mem", .host = "", .rank = -1};
  nsl_error err = {0};
  nsl_column *col = nsl_column_new(NSL_I64, NROWS, NULL);
  for (int i = 0; i < NROWS; i++) nsl_i64(col)[i] = i * 3;
  /* a keeping source: kept and read back; a column of another shape is not handed back */
  nsl_trace *tr = nsl_trace_new();
  assert_int_equal(nsl_trace_add_source(tr, &keeping_ops, NULL, &info, &err), NSL_OK);
  int64_t rows[1] = {-1};
  assert_int_equal(nsl_trace_report_rows(tr, "kernels", rows, &err), NSL_OK);
  assert_int_equal(rows[0], NROWS);
  assert_int_equal(nsl_trace_keeps_derived(tr, 0), 1);
  assert_int_equal(nsl_trace_keeps_derived(tr, 1), 0);
  assert_null(nsl_trace_derived_get(tr, 0, "kernels", "x.1", NSL_I64, NROWS));
  nsl_trace_derived_put(tr, 0, "kernels", "x.1", col);
  nsl_column *got = nsl_trace_derived_get(tr, 0, "kernels", "x.1", NSL_I64, NROWS);
  assert_non_null(got);
  for (int i = 0; i < NROWS; i++) assert_int_equal(nsl_i64(got)[i], i * 3);
  nsl_column_release(got);
  assert_null(nsl_trace_derived_get(tr, 0, "kernels", "x.1", NSL_I64, NROWS + 1));   /* rows */
  assert_null(nsl_trace_derived_get(tr, 0, "kernels", "x.1", NSL_F64, NROWS));       /* type */
  assert_null(nsl_trace_derived_get(tr, 1, "kernels", "x.1", NSL_I64, NROWS));       /* no report 1 */
  assert_null(nsl_trace_derived_get(tr, 0, "kernels", "x.1", NSL_STR, NROWS));       /* strings: never */
  nsl_trace_close(tr);
  /* written by a task of the trace's own while the caller goes on, in the order given, and every one before
   * the trace closes: the last of many is what the source holds */
  tr = nsl_trace_new();
  assert_int_equal(nsl_trace_add_source(tr, &keeping_ops, NULL, &info, &err), NSL_OK);
  asked = 0;
  for (int k = 0; k < 64; k++) {
    nsl_column *c = nsl_column_new(NSL_I64, NROWS, NULL);
    for (int i = 0; i < NROWS; i++) nsl_i64(c)[i] = k * 100 + i;
    nsl_trace_derived_put(tr, 0, "kernels", "x.1", c);
    nsl_column_release(c);   /* the trace holds it until it is written */
  }
  nsl_trace_close(tr);
  assert_int_equal(asked, 64);
  assert_non_null(kept);
  for (int i = 0; i < NROWS; i++) assert_int_equal(nsl_i64(kept)[i], 63 * 100 + i);
  /* a filtered trace: neither read nor kept */
  tr = nsl_trace_new();
  assert_int_equal(nsl_trace_add_source(tr, &keeping_ops, NULL, &info, &err), NSL_OK);
  int64_t dev = 1;
  nsl__row_cond conds[] = {{"device", NSL__ROW_IN, NULL, &dev, 1, 0}};
  assert_int_equal(nsl__trace_filter(tr, "kernels", conds, 1, &err), NSL_OK);
  asked = 0;
  assert_int_equal(nsl_trace_keeps_derived(tr, 0), 0);
  assert_null(nsl_trace_derived_get(tr, 0, "kernels", "x.1", NSL_I64, NROWS));
  nsl_trace_derived_put(tr, 0, "kernels", "x.1", col);
  assert_int_equal(asked, 0);
  nsl_trace_close(tr);
  /* a source of version 1: never asked */
  tr = nsl_trace_new();
  assert_int_equal(nsl_trace_add_source(tr, &v1_ops, NULL, &info, &err), NSL_OK);
  assert_int_equal(nsl_trace_keeps_derived(tr, 0), 0);
  assert_null(nsl_trace_derived_get(tr, 0, "kernels", "x.1", NSL_I64, NROWS));
  nsl_trace_derived_put(tr, 0, "kernels", "x.1", col);
  assert_int_equal(asked, 0);
  nsl_trace_close(tr);
  nsl_column_release(kept);
  kept = NULL;
  nsl_column_release(col);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_window_and_device), cmocka_unit_test(test_regex_and_missing_column),
      cmocka_unit_test(test_refusals), cmocka_unit_test(test_trace_filter), cmocka_unit_test(test_derived_columns)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
