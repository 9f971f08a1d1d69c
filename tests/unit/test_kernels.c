/* test_kernels.c -- element-wise kernels: comparison masks, membership,
 * mask algebra, gather, arithmetic, casts, stats, quantiles (hand values
 * and a qsort reference), histograms, cumsum, diff. */
#include <float.h>
#include <stdio.h>

#include "core/nsl_internal.h"
#include "kernel_fixtures.h"

/* ---- comparisons -------------------------------------------------------------- */

static void test_cmp_i64_all_types(void **state) {
  (void)state;
  nsl_column *c = FX_I64(1, NSL_NULL_I64, 3, -4);
  nsl_column *m;
  m = nsl_column_cmp_i64(c, NSL_EQ, 3, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 1, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_NE, 3, NULL);
  FX_EXPECT_BOOL(m, 1, 1, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_LT, 1, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_LE, 1, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_GT, 1, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 1, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_GE, 1, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 1, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_EQ, NSL_NULL_I64, NULL);   /* against NULL: nothing equal */
  FX_EXPECT_BOOL(m, 0, 0, 0, 0);
  nsl_column_release(m);
  assert_null(nsl_column_cmp_i64(c, (nsl_cmp)42, 1, NULL));
  nsl_column_release(c);

  c = FX_I32(NSL_NULL_I32, 7, INT32_MAX);
  m = nsl_column_cmp_i64(c, NSL_GE, 7, NULL);
  FX_EXPECT_BOOL(m, 0, 1, 1);
  nsl_column_release(m);
  nsl_column_release(c);

  /* doubles compared exactly with an integer: 2^53 + 1 is not a double */
  c = FX_F64(9007199254740992.0, NAN, 0.5);
  m = nsl_column_cmp_i64(c, NSL_EQ, INT64_C(9007199254740993), NULL);
  FX_EXPECT_BOOL(m, 0, 0, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_LT, INT64_C(9007199254740993), NULL);
  FX_EXPECT_BOOL(m, 1, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_NE, 0, NULL);
  FX_EXPECT_BOOL(m, 1, 1, 1);
  nsl_column_release(m);
  nsl_column_release(c);

  nsl_dict *d = nsl_dict_new();
  c = fx_str(d, 3, (const char *[]){"x", NULL, "y"});
  int32_t y = nsl_dict_find(d, "y", 1);
  m = nsl_column_cmp_i64(c, NSL_EQ, y, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_i64(c, NSL_NE, y, NULL);
  FX_EXPECT_BOOL(m, 1, 1, 0);
  nsl_column_release(m);
  nsl_column_release(c);
  nsl_dict_release(d);

  c = FX_BOOL(1, 0);
  m = nsl_column_cmp_i64(c, NSL_EQ, 1, NULL);
  FX_EXPECT_BOOL(m, 1, 0);
  nsl_column_release(m);
  nsl_column_release(c);

  c = nsl_column_new(NSL_I64, 0, NULL);
  m = nsl_column_cmp_i64(c, NSL_EQ, 1, NULL);
  assert_int_equal(m->len, 0);
  nsl_column_release(m);
  nsl_column_release(c);
  assert_null(nsl_column_cmp_i64(NULL, NSL_EQ, 1, NULL));
}

static void test_cmp_f64(void **state) {
  (void)state;
  nsl_column *c = FX_I64(1, 2, NSL_NULL_I64, INT64_MAX, INT64_MIN + 1);
  nsl_column *m = nsl_column_cmp_f64(c, NSL_LT, 1.5, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 0, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_f64(c, NSL_LT, 1e19, NULL);   /* beyond int64 */
  FX_EXPECT_BOOL(m, 1, 1, 0, 1, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_f64(c, NSL_GT, -1e19, NULL);
  FX_EXPECT_BOOL(m, 1, 1, 0, 1, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_f64(c, NSL_EQ, 9223372036854775807.0, NULL);   /* that double is 2^63 */
  FX_EXPECT_BOOL(m, 0, 0, 0, 0, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_f64(c, NSL_NE, NAN, NULL);
  FX_EXPECT_BOOL(m, 1, 1, 1, 1, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_f64(c, NSL_GE, NAN, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 0, 0, 0);
  nsl_column_release(m);
  nsl_column_release(c);
  c = FX_F64(-0.0, NAN, 2.5, -INFINITY);
  m = nsl_column_cmp_f64(c, NSL_EQ, 0.0, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 0, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_f64(c, NSL_LE, 2.5, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 1, 1);
  nsl_column_release(m);
  nsl_column_release(c);
}

static void test_cmp_col(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *a = FX_I64(1, 5, NSL_NULL_I64, 7), *b = FX_I32(1, 4, 3, NSL_NULL_I32);
  nsl_column *m = nsl_column_cmp_col(a, NSL_GT, b, &err);
  FX_EXPECT_BOOL(m, 0, 1, 0, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_col(a, NSL_NE, b, &err);
  FX_EXPECT_BOOL(m, 0, 1, 1, 1);
  nsl_column_release(m);
  nsl_column *f = FX_F64(1.0, 5.5, 0, NAN);
  m = nsl_column_cmp_col(a, NSL_LT, f, &err);   /* integer vs double */
  FX_EXPECT_BOOL(m, 0, 1, 0, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_col(f, NSL_GT, a, &err);   /* and flipped */
  FX_EXPECT_BOOL(m, 0, 1, 0, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_col(f, NSL_EQ, f, &err);
  FX_EXPECT_BOOL(m, 1, 1, 1, 0);
  nsl_column_release(m);
  nsl_column *a2 = FX_I64(1, 5, 9, 9);
  m = nsl_column_cmp_col(a, NSL_LE, a2, &err);
  FX_EXPECT_BOOL(m, 1, 1, 0, 1);
  nsl_column_release(m);
  nsl_column *short1 = FX_I64(1);
  assert_null(nsl_column_cmp_col(a, NSL_EQ, short1, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);

  nsl_dict *d = nsl_dict_new(), *d2 = nsl_dict_new();
  nsl_column *s = fx_str(d, 4, (const char *[]){"b", "a", NULL, "c"});
  nsl_column *t = fx_str(d, 4, (const char *[]){"a", "a", "a", "d"});
  nsl_column *u = fx_str(d2, 4, (const char *[]){"b", "b", "x", "c"});   /* another dictionary */
  m = nsl_column_cmp_col(s, NSL_EQ, t, &err);
  FX_EXPECT_BOOL(m, 0, 1, 0, 0);
  nsl_column_release(m);
  m = nsl_column_cmp_col(s, NSL_LT, t, &err);   /* by text */
  FX_EXPECT_BOOL(m, 0, 0, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_col(s, NSL_EQ, u, &err);
  FX_EXPECT_BOOL(m, 1, 0, 0, 1);
  nsl_column_release(m);
  m = nsl_column_cmp_col(s, NSL_GE, u, &err);
  FX_EXPECT_BOOL(m, 1, 0, 0, 1);
  nsl_column_release(m);
  assert_null(nsl_column_cmp_col(s, NSL_EQ, a, &err));
  assert_non_null(strstr(err.msg, "str"));
  nsl_column_release(s);
  nsl_column_release(t);
  nsl_column_release(u);
  nsl_dict_release(d);
  nsl_dict_release(d2);
  nsl_column_release(short1);
  nsl_column_release(a2);
  nsl_column_release(f);
  nsl_column_release(a);
  nsl_column_release(b);
}

static void test_isin_isnull(void **state) {
  (void)state;
  nsl_column *c = FX_I64(3, NSL_NULL_I64, 5, 7, -1);
  nsl_column *m = nsl_column_isin(c, (int64_t[]){5, -1, NSL_NULL_I64, 100}, 4, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 1, 0, 1);
  nsl_column_release(m);
  m = nsl_column_isin(c, NULL, 0, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 0, 0, 0);
  nsl_column_release(m);
  assert_null(nsl_column_isin(c, NULL, 3, NULL));
  /* many ids: every even number below 2000 */
  int64_t ids[1000];
  for (int i = 0; i < 1000; i++) ids[i] = 2 * i;
  nsl_column *big = nsl_column_new(NSL_I32, 2100, NULL);
  for (int i = 0; i < 2100; i++) nsl_i32(big)[i] = i;
  m = nsl_column_isin(big, ids, 1000, NULL);
  for (int i = 0; i < 2100; i++) assert_int_equal(nsl_bool(m)[i], i < 2000 && i % 2 == 0);
  nsl_column_release(m);
  nsl_column_release(big);
  /* a set larger than the caches (its filter of hash bits first): 40,000 i64 ids, multiples of 3 spread over
   * 2^40, probed by every id, its neighbours, a NULL and a negative value */
  enum { NID = 40000 };
  int64_t *many = malloc(NID * sizeof *many);
  assert_non_null(many);
  for (int i = 0; i < NID; i++) many[i] = ((int64_t)i * 27487791) * 3;
  nsl_column *probe = nsl_column_new(NSL_I64, 3 * NID + 2, NULL);
  for (int i = 0; i < 3 * NID; i++) nsl_i64(probe)[i] = many[i / 3] + i % 3;
  nsl_i64(probe)[3 * NID] = NSL_NULL_I64;
  nsl_i64(probe)[3 * NID + 1] = -3;
  m = nsl_column_isin(probe, many, NID, NULL);
  for (int i = 0; i < 3 * NID; i++) assert_int_equal(nsl_bool(m)[i], i % 3 == 0);
  assert_int_equal(nsl_bool(m)[3 * NID], 0);
  assert_int_equal(nsl_bool(m)[3 * NID + 1], 0);
  nsl_column_release(m);
  nsl_column_release(probe);
  free(many);
  /* int32 values through a table of the ids (small ids) or the hash set (negative or huge ids), NULLs never in */
  nsl_column *c32 = FX_I32(INT32_MAX, NSL_NULL_I32, -5, 0, 7);
  m = nsl_column_isin(c32, (int64_t[]){7, 0, NSL_NULL_I64}, 3, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 0, 1, 1);
  nsl_column_release(m);
  m = nsl_column_isin(c32, (int64_t[]){-5, 7, NSL_NULL_I64}, 3, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 1, 0, 1);
  nsl_column_release(m);
  m = nsl_column_isin(c32, (int64_t[]){INT32_MAX, 0}, 2, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 0, 1, 0);
  nsl_column_release(m);
  m = nsl_column_isin(c32, (int64_t[]){NSL_NULL_I64}, 1, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 0, 0, 0);
  nsl_column_release(m);
  nsl_column_release(c32);
  m = nsl_column_nulls(c, NULL);
  FX_EXPECT_BOOL(m, 0, 1, 0, 0, 0);
  nsl_column_release(m);
  nsl_column_release(c);

  c = FX_F64(5.0, 5.5, NAN, -1.0, 1e300);
  m = nsl_column_isin(c, (int64_t[]){5, -1}, 2, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 0, 1, 0);
  nsl_column_release(m);
  m = nsl_column_nulls(c, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 1, 0, 0);
  nsl_column_release(m);
  nsl_column_release(c);

  nsl_dict *d = nsl_dict_new();
  c = fx_str(d, 4, (const char *[]){"memcpy", NULL, "gemm", "memcpy"});
  m = nsl_column_isin(c, (int64_t[]){nsl_dict_find(d, "memcpy", 6)}, 1, NULL);
  FX_EXPECT_BOOL(m, 1, 0, 0, 1);
  nsl_column_release(m);
  m = nsl_column_nulls(c, NULL);
  FX_EXPECT_BOOL(m, 0, 1, 0, 0);
  nsl_column_release(m);
  nsl_column_release(c);
  nsl_dict_release(d);

  c = FX_I32(NSL_NULL_I32, 0);
  m = nsl_column_nulls(c, NULL);
  FX_EXPECT_BOOL(m, 1, 0);
  nsl_column_release(m);
  nsl_column_release(c);
  c = FX_BOOL(1, 0);
  m = nsl_column_nulls(c, NULL);
  FX_EXPECT_BOOL(m, 0, 0);
  nsl_column_release(m);
  nsl_column_release(c);
}

static void test_masks(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *a = FX_BOOL(1, 1, 0, 0), *b = FX_BOOL(1, 0, 1, 0);
  nsl_column *m = nsl_mask_and(a, b, &err);
  FX_EXPECT_BOOL(m, 1, 0, 0, 0);
  nsl_column_release(m);
  m = nsl_mask_or(a, b, &err);
  FX_EXPECT_BOOL(m, 1, 1, 1, 0);
  nsl_column_release(m);
  m = nsl_mask_not(a, NULL);
  FX_EXPECT_BOOL(m, 0, 0, 1, 1);
  assert_int_equal(nsl_mask_count(m), 2);
  nsl_column *idx = nsl_mask_indices(m, NULL);
  FX_EXPECT_I64(idx, 2, 3);
  nsl_column_release(idx);
  nsl_column_release(m);
  assert_int_equal(nsl_mask_count(a), 2);

  nsl_column *c = FX_BOOL(1, 0, 1), *i64 = FX_I64(1, 0, 1, 1);
  assert_null(nsl_mask_and(a, c, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl_mask_or(a, i64, &err));
  assert_null(nsl_mask_not(i64, NULL));
  assert_int_equal(nsl_mask_count(i64), -1);
  assert_int_equal(nsl_mask_count(NULL), -1);
  assert_null(nsl_mask_indices(i64, NULL));
  nsl_column *e = nsl_column_new(NSL_BOOL, 0, NULL);
  assert_int_equal(nsl_mask_count(e), 0);
  idx = nsl_mask_indices(e, NULL);
  assert_int_equal(idx->len, 0);
  nsl_column_release(idx);
  nsl_column_release(e);
  nsl_column_release(c);
  nsl_column_release(i64);
  nsl_column_release(a);
  nsl_column_release(b);
}

/* A gather of more rows than one thread takes (split in parts): every row
 * as one pass gives it, and the first index past the end is the one named. */
static void test_gather_large(void **state) {
  (void)state;
  nsl_error err = {0};
  int64_t n = (int64_t)3 << 20, m = 1000;
  nsl_column *c = nsl_column_new(NSL_I64, m, NULL), *idx = nsl_column_new(NSL_I64, n, NULL);
  for (int64_t j = 0; j < m; j++) nsl_i64(c)[j] = 7 * j + 1;
  for (int64_t i = 0; i < n; i++) nsl_i64(idx)[i] = i % 13 == 5 ? -1 : (i * 7919) % m;
  nsl_column *g = nsl_column_gather(c, idx, &err);
  assert_non_null(g);
  assert_int_equal(g->len, n);
  for (int64_t i = 0; i < n; i++)
    if (nsl_i64(g)[i] != (i % 13 == 5 ? NSL_NULL_I64 : 7 * ((i * 7919) % m) + 1)) fail_msg("row %lld", (long long)i);
  nsl_column_release(g);
  nsl_i64(idx)[n - 10] = m + 5;   /* two rows past the end, in different parts: the first is named */
  nsl_i64(idx)[n / 3 + 1] = m;
  assert_null(nsl_column_gather(c, idx, &err));
  char want[128];
  snprintf(want, sizeof want, "index %lld (at %lld)", (long long)m, (long long)(n / 3 + 1));
  if (!strstr(err.msg, want)) fail_msg("%s: wanted %s", err.msg, want);
  nsl_column_release(idx);
  nsl_column_release(c);
}

static void test_gather(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *c = FX_I64(10, 20, 30), *idx = FX_I64(2, -1, 0, 2);
  nsl_column *g = nsl_column_gather(c, idx, &err);
  FX_EXPECT_I64(g, 30, NSL_NULL_I64, 10, 30);
  nsl_column_release(g);
  nsl_column *f = FX_F64(1.5, 2.5, 3.5);
  g = nsl_column_gather(f, idx, &err);
  FX_EXPECT_F64(g, 3.5, NAN, 1.5, 3.5);
  nsl_column_release(g);
  nsl_column *i32idx = FX_I32(1, -1);
  nsl_column *bl = FX_BOOL(0, 1, 1);
  g = nsl_column_gather(bl, i32idx, &err);
  FX_EXPECT_BOOL(g, 1, 0);
  nsl_column_release(g);
  nsl_column *ic = FX_I32(4, 5, 6);
  g = nsl_column_gather(ic, i32idx, &err);
  assert_int_equal(nsl_i32(g)[0], 5);
  assert_int_equal(nsl_i32(g)[1], NSL_NULL_I32);
  nsl_column_release(g);
  nsl_dict *d = nsl_dict_new();
  nsl_column *s = fx_str(d, 2, (const char *[]){"a", "b"});
  g = nsl_column_gather(s, i32idx, &err);
  assert_ptr_equal(g->dict, d);
  assert_int_equal(nsl_i32(g)[0], nsl_dict_find(d, "b", 1));
  assert_int_equal(nsl_i32(g)[1], -1);
  nsl_column_release(g);
  nsl_column *bad = FX_I64(0, 3);
  assert_null(nsl_column_gather(c, bad, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "past the end"));
  assert_null(nsl_column_gather(c, f, &err));
  nsl_column *e = nsl_column_new(NSL_I64, 0, NULL);
  g = nsl_column_gather(c, e, &err);
  assert_int_equal(g->len, 0);
  nsl_column_release(g);
  nsl_column_release(e);
  nsl_column_release(bad);
  nsl_column_release(s);
  nsl_dict_release(d);
  nsl_column_release(ic);
  nsl_column_release(bl);
  nsl_column_release(i32idx);
  nsl_column_release(f);
  nsl_column_release(c);
  nsl_column_release(idx);
}

/* ---- arithmetic, casts ---------------------------------------------------------- */

static void test_arith(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *a = FX_I64(10, NSL_NULL_I64, INT64_MAX, -7, 6, INT64_MIN + 1);
  nsl_column *b = FX_I32(3, 1, 1, 2, 0, -1);
  nsl_column *r = nsl_column_arith(a, NSL_ADD, b, &err);
  FX_EXPECT_I64(r, 13, NSL_NULL_I64, NSL_NULL_I64, -5, 6, INT64_MIN);   /* last: a NULL after all */
  nsl_column_release(r);
  r = nsl_column_arith(a, NSL_SUB, b, &err);
  FX_EXPECT_I64(r, 7, NSL_NULL_I64, INT64_MAX - 1, -9, 6, NSL_NULL_I64 + 2);
  nsl_column_release(r);
  r = nsl_column_arith(a, NSL_MUL, b, &err);
  FX_EXPECT_I64(r, 30, NSL_NULL_I64, INT64_MAX, -14, 0, INT64_MAX);
  nsl_column_release(r);
  r = nsl_column_arith(a, NSL_DIV, b, &err);   /* truncation toward zero; /0 is NULL */
  FX_EXPECT_I64(r, 3, NSL_NULL_I64, INT64_MAX, -3, NSL_NULL_I64, INT64_MAX);
  nsl_column_release(r);
  nsl_column *f = FX_F64(0.5, 1, NAN, 2, 0, 1);
  r = nsl_column_arith(b, NSL_DIV, f, &err);
  FX_EXPECT_F64(r, 6.0, 1.0, NAN, 1.0, NAN, -1.0);
  nsl_column_release(r);
  nsl_column *bl = FX_BOOL(1, 0, 1, 1, 0, 1);
  r = nsl_column_arith(a, NSL_MUL, bl, &err);
  FX_EXPECT_I64(r, 10, NSL_NULL_I64, INT64_MAX, -7, 0, INT64_MIN + 1);
  nsl_column_release(r);
  nsl_column *short1 = FX_I64(1);
  assert_null(nsl_column_arith(a, NSL_ADD, short1, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  nsl_dict *d = nsl_dict_new();
  nsl_column *s = fx_str(d, 1, (const char *[]){"x"});
  assert_null(nsl_column_arith(s, NSL_ADD, short1, &err));
  assert_null(nsl_column_arith_scalar(s, NSL_ADD, 1, NULL));
  nsl_column_release(s);
  nsl_dict_release(d);

  /* scalars: integral ones keep integer columns exact */
  nsl_column *t = FX_I64(INT64_C(1700000000123456789), NSL_NULL_I64, -7);
  r = nsl_column_arith_scalar(t, NSL_SUB, 1700000000000000000.0, NULL);
  FX_EXPECT_I64(r, 123456789, NSL_NULL_I64, -1700000000000000007);
  nsl_column_release(r);
  r = nsl_column_arith_scalar(t, NSL_DIV, 2, NULL);
  FX_EXPECT_I64(r, INT64_C(850000000061728394), NSL_NULL_I64, -3);
  nsl_column_release(r);
  r = nsl_column_arith_scalar(t, NSL_MUL, 0.5, NULL);
  assert_int_equal(r->type, NSL_F64);
  assert_true(isnan(nsl_f64(r)[1]));
  assert_true(nsl_f64(r)[2] == -3.5);
  nsl_column_release(r);
  r = nsl_column_arith_scalar(t, NSL_DIV, 0, NULL);
  FX_EXPECT_I64(r, NSL_NULL_I64, NSL_NULL_I64, NSL_NULL_I64);
  nsl_column_release(r);
  r = nsl_column_arith_scalar(f, NSL_ADD, 1, NULL);
  FX_EXPECT_F64(r, 1.5, 2, NAN, 3, 1, 2);
  nsl_column_release(r);
  r = nsl_column_arith_scalar(t, NSL_ADD, 1e300, NULL);   /* beyond int64: doubles */
  assert_int_equal(r->type, NSL_F64);
  nsl_column_release(r);
  /* an integer scalar past 2^53 (a clock offset of years in ns), exact: as a double it would round to 16 ns */
  r = nsl_column_arith_scalar_i64(t, NSL_ADD, INT64_C(91816757338418922), NULL);
  FX_EXPECT_I64(r, INT64_C(1791816757461875711), NSL_NULL_I64, INT64_C(91816757338418915));
  nsl_column_release(r);
  nsl_column *t32 = nsl_column_cast(t, NSL_I32, NULL);   /* (i32: only -7 fits) */
  r = nsl_column_arith_scalar_i64(t32, NSL_SUB, INT64_C(91816757338418922), NULL);
  FX_EXPECT_I64(r, NSL_NULL_I64, NSL_NULL_I64, INT64_C(-91816757338418929));
  nsl_column_release(r);
  nsl_column_release(t32);
  r = nsl_column_arith_scalar_i64(t, NSL_ADD, INT64_MAX, NULL);   /* overflow: NULL */
  FX_EXPECT_I64(r, NSL_NULL_I64, NSL_NULL_I64, INT64_MAX - 7);
  nsl_column_release(r);
  r = nsl_column_arith_scalar_i64(f, NSL_ADD, 1, NULL);   /* a float column stays float */
  FX_EXPECT_F64(r, 1.5, 2, NAN, 3, 1, 2);
  nsl_column_release(r);
  nsl_column_release(t);
  nsl_column_release(short1);
  nsl_column_release(bl);
  nsl_column_release(f);
  nsl_column_release(a);
  nsl_column_release(b);
}

static void test_cast(void **state) {
  (void)state;
  nsl_column *f = FX_F64(1.9, -1.9, NAN, 1e20, -0.0, 3e9);
  nsl_column *r = nsl_column_cast(f, NSL_I64, NULL);
  FX_EXPECT_I64(r, 1, -1, NSL_NULL_I64, NSL_NULL_I64, 0, 3000000000);
  nsl_column_release(r);
  r = nsl_column_cast(f, NSL_I32, NULL);
  assert_int_equal(r->type, NSL_I32);
  int32_t want32[] = {1, -1, NSL_NULL_I32, NSL_NULL_I32, 0, NSL_NULL_I32};
  for (int i = 0; i < 6; i++) assert_int_equal(nsl_i32(r)[i], want32[i]);
  nsl_column_release(r);
  r = nsl_column_cast(f, NSL_BOOL, NULL);
  FX_EXPECT_BOOL(r, 1, 1, 0, 1, 0, 1);
  nsl_column_release(r);
  r = nsl_column_cast(f, NSL_F64, NULL);   /* a copy */
  assert_ptr_not_equal(r, f);
  FX_EXPECT_F64(r, 1.9, -1.9, NAN, 1e20, -0.0, 3e9);
  nsl_column_release(r);
  assert_null(nsl_column_cast(f, NSL_STR, NULL));
  nsl_column_release(f);

  nsl_column *i = FX_I64(5, NSL_NULL_I64, INT64_C(1) << 40, INT32_MIN, INT32_MAX);
  r = nsl_column_cast(i, NSL_I32, NULL);
  int32_t w2[] = {5, NSL_NULL_I32, NSL_NULL_I32, NSL_NULL_I32, INT32_MAX};
  for (int k = 0; k < 5; k++) assert_int_equal(nsl_i32(r)[k], w2[k]);
  nsl_column_release(r);
  r = nsl_column_cast(i, NSL_F64, NULL);
  FX_EXPECT_F64(r, 5, NAN, 1099511627776.0, (double)INT32_MIN, (double)INT32_MAX);
  nsl_column_release(r);
  nsl_column_release(i);

  nsl_column *i32 = FX_I32(NSL_NULL_I32, -3);
  r = nsl_column_cast(i32, NSL_I64, NULL);
  FX_EXPECT_I64(r, NSL_NULL_I64, -3);
  nsl_column_release(r);
  nsl_column_release(i32);

  nsl_dict *d = nsl_dict_new();
  nsl_column *s = fx_str(d, 3, (const char *[]){"a", NULL, "b"});
  r = nsl_column_cast(s, NSL_I64, NULL);
  FX_EXPECT_I64(r, 0, NSL_NULL_I64, 1);
  nsl_column_release(r);
  r = nsl_column_cast(s, NSL_STR, NULL);
  assert_ptr_equal(r->dict, d);
  assert_int_equal(nsl_i32(r)[1], -1);
  nsl_column_release(r);
  nsl_column_release(s);
  nsl_dict_release(d);

  nsl_column *bl = FX_BOOL(1, 0);
  r = nsl_column_cast(bl, NSL_F64, NULL);
  FX_EXPECT_F64(r, 1.0, 0.0);
  nsl_column_release(r);
  nsl_column_release(bl);
  assert_null(nsl_column_cast(NULL, NSL_I64, NULL));
}

/* ---- stats, quantiles --------------------------------------------------------- */

static void test_stats(void **state) {
  (void)state;
  nsl_stats st;
  nsl_column *c = FX_I64(1, 2, NSL_NULL_I64, 3, 4);
  nsl_column_stats(c, &st);
  assert_int_equal(st.count, 4);
  assert_int_equal(st.isum, 10);
  assert_true(st.sum == 10 && st.mean == 2.5 && st.min == 1 && st.max == 4);
  assert_int_equal(st.imin, 1);
  assert_int_equal(st.imax, 4);
  assert_true(fabs(st.std - sqrt(5.0 / 3.0)) < 1e-15);
  nsl_column_release(c);

  c = FX_I32(42);   /* one value: std 0, as nsys stats prints */
  nsl_column_stats(c, &st);
  assert_int_equal(st.count, 1);
  assert_true(st.std == 0 && st.mean == 42);
  nsl_column_release(c);

  c = nsl_column_new(NSL_F64, 0, NULL);
  nsl_column_stats(c, &st);
  assert_int_equal(st.count, 0);
  assert_true(st.sum == 0 && st.std == 0 && isnan(st.mean) && isnan(st.min) && isnan(st.max));
  assert_int_equal(st.imin, NSL_NULL_I64);
  nsl_column_release(c);

  c = FX_F64(NAN, 1.0, 1e100, 1.0, -1e100);   /* compensated sum: 2, not 0 */
  nsl_column_stats(c, &st);
  assert_int_equal(st.count, 4);
  assert_true(st.sum == 2.0);
  assert_true(st.min == -1e100 && st.max == 1e100);
  nsl_column_release(c);

  c = FX_I64(INT64_MAX, INT64_MAX, INT64_MIN + 1);   /* beyond int64 in the middle */
  nsl_column_stats(c, &st);
  assert_int_equal(st.isum, INT64_MAX);
  assert_true(st.sum == 9223372036854775807.0);
  assert_true(fabs(st.mean - 9223372036854775807.0 / 3) < 1e4);
  assert_int_equal(st.imin, INT64_MIN + 1);
  assert_int_equal(st.imax, INT64_MAX);
  nsl_column_release(c);

  nsl_dict *d = nsl_dict_new();
  c = fx_str(d, 3, (const char *[]){"a", NULL, "b"});
  nsl_column_stats(c, &st);
  assert_int_equal(st.count, 2);
  assert_true(isnan(st.mean));
  nsl_column_release(c);
  nsl_dict_release(d);
  nsl_column_stats(NULL, &st);
  assert_int_equal(st.count, 0);
  nsl_column_stats(NULL, NULL);
}

static void test_quantile_hand(void **state) {
  (void)state;
  nsl_column *c = FX_I64(4, NSL_NULL_I64, 1, 3, 2);
  assert_true(nsl_column_quantile(c, 0.5) == 2.5);   /* even count: mean of the middle two */
  assert_true(nsl_column_quantile(c, 0.0) == 1);
  assert_true(nsl_column_quantile(c, 1.0) == 4);
  assert_true(nsl_column_quantile(c, 0.25) == 1.75);
  assert_true(nsl_column_quantile(c, 0.9) == 3.7);
  assert_true(isnan(nsl_column_quantile(c, 1.5)));
  assert_true(isnan(nsl_column_quantile(c, -0.1)));
  assert_true(isnan(nsl_column_quantile(c, NAN)));
  nsl_column_release(c);
  c = FX_I32(7, 1, 5);
  assert_true(nsl_column_quantile(c, 0.5) == 5);
  nsl_column_release(c);
  c = FX_F64(NAN, -2.5, 0.5);
  assert_true(nsl_column_quantile(c, 0.5) == -1.0);
  nsl_column_release(c);
  c = FX_I64(NSL_NULL_I64);
  assert_true(isnan(nsl_column_quantile(c, 0.5)));
  nsl_column_release(c);
  c = FX_I64(INT64_MAX, INT64_MAX - 1);
  assert_true(nsl_column_quantile(c, 0.5) == 9223372036854775807.0);   /* rounds to 2^63 */
  nsl_column_release(c);
  c = FX_BOOL(1, 0, 1, 1);
  assert_true(nsl_column_quantile(c, 0.5) == 1.0);
  assert_true(nsl_column_quantile(c, 0.0) == 0.0);
  nsl_column_release(c);
  nsl_dict *d = nsl_dict_new();
  c = fx_str(d, 1, (const char *[]){"a"});
  assert_true(isnan(nsl_column_quantile(c, 0.5)));
  nsl_column_release(c);
  nsl_dict_release(d);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* NumPy's "linear" method over sorted values. */
static double ref_quantile(const double *sorted, int64_t n, double q) {
  double pos = q * (double)(n - 1);
  int64_t k = (int64_t)floor(pos);
  if (k >= n - 1) return sorted[n - 1];
  return sorted[k] + (sorted[k + 1] - sorted[k]) * (pos - (double)k);
}

static void test_quantile_random_reference(void **state) {
  (void)state;
  fx_seed(2024);
  const double qs[] = {0, 0.25, 0.5, 0.75, 1, 0.37, 0.99, 0.01};
  for (int trial = 0; trial < 40; trial++) {
    int64_t n = trial < 5 ? trial + 1 : fx_range(1, 5000);
    int fp = trial % 2;
    nsl_column *c = nsl_column_new(fp ? NSL_F64 : NSL_I64, n, NULL);
    double *ref = malloc((size_t)n * sizeof *ref);
    int64_t m = 0;
    int64_t span = trial % 3 == 0 ? 3 : 1000000;   /* many duplicates, or few */
    for (int64_t i = 0; i < n; i++) {
      int null = fx_range(0, 7) == 0;
      int64_t v = fx_range(-span, span);
      if (fp) nsl_f64(c)[i] = null ? NAN : (double)v / 8;
      else nsl_i64(c)[i] = null ? NSL_NULL_I64 : v;
      if (!null) ref[m++] = fp ? (double)v / 8 : (double)v;
    }
    qsort(ref, (size_t)m, sizeof *ref, cmp_double);
    for (size_t k = 0; k < sizeof qs / sizeof *qs; k++) {
      double got = nsl_column_quantile(c, qs[k]);
      if (m == 0) {
        assert_true(isnan(got));
        continue;
      }
      double want = ref_quantile(ref, m, qs[k]);
      if (!(fabs(got - want) <= 1e-9 * (1 + fabs(want))))
        fail_msg("n=%lld q=%g: got %.17g want %.17g", (long long)m, qs[k], got, want);
      if (k < 5) assert_true(got == want);   /* quarter fractions are exact */
    }
    free(ref);
    nsl_column_release(c);
  }
}

/* ---- histogram ---------------------------------------------------------------- */

static void test_histogram(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *c = FX_F64(-1, 0, 5, 10, 29.9, 30, 31, NAN);
  double edges[] = {0, 10, 20, 30};
  nsl_column *h = nsl_column_histogram(c, edges, 3, &err);
  FX_EXPECT_I64(h, 2, 1, 2);
  nsl_column_release(h);
  nsl_column *i = FX_I64(10, 10, NSL_NULL_I64, 20, 30);
  double zero_width[] = {0, 10, 10, 20, 30, 30};   /* empty bins take nothing */
  h = nsl_column_histogram(i, zero_width, 5, &err);
  FX_EXPECT_I64(h, 0, 0, 2, 2, 0);
  nsl_column_release(h);
  double one[] = {10, 30};
  h = nsl_column_histogram(i, one, 1, &err);
  FX_EXPECT_I64(h, 4);
  nsl_column_release(h);
  double bad[] = {0, 5, 3};
  assert_null(nsl_column_histogram(c, bad, 2, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  double nanedge[] = {0, NAN};
  assert_null(nsl_column_histogram(c, nanedge, 1, &err));
  assert_null(nsl_column_histogram(c, edges, 0, &err));
  nsl_dict *d = nsl_dict_new();
  nsl_column *s = fx_str(d, 1, (const char *[]){"a"});
  assert_null(nsl_column_histogram(s, edges, 3, &err));
  nsl_column_release(s);
  nsl_dict_release(d);
  nsl_column_release(i);
  nsl_column_release(c);

  /* log-spaced edges on random durations against a linear scan */
  fx_seed(5);
  double le[21];
  for (int b = 0; b <= 20; b++) le[b] = pow(10, b * 0.5);
  int64_t n = 20000;
  c = nsl_column_new(NSL_I64, n, NULL);
  int64_t want[20] = {0};
  for (int64_t r = 0; r < n; r++) {
    int64_t v = (int64_t)pow(10, (double)fx_range(0, 11000) / 1000.0);
    nsl_i64(c)[r] = v;
    for (int b = 0; b < 20; b++)
      if ((double)v >= le[b] && ((double)v < le[b + 1] || (b == 19 && (double)v == le[20]))) want[b]++;
  }
  h = nsl_column_histogram(c, le, 20, &err);
  fx_expect_i64(h, 20, want);
  nsl_column_release(h);
  nsl_column_release(c);
}

/* ---- cumsum, diff ------------------------------------------------------------------- */

static void test_cumsum(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *c = FX_I32(1, NSL_NULL_I32, 2, 3);
  nsl_column *r = nsl_column_cumsum(c, &err);
  FX_EXPECT_I64(r, 1, NSL_NULL_I64, 3, 6);
  nsl_column_release(r);
  nsl_column_release(c);
  c = FX_F64(0.5, NAN, 1e100, 1.0, -1e100);
  r = nsl_column_cumsum(c, &err);
  FX_EXPECT_F64(r, 0.5, NAN, 1e100, 1e100, 1.5);
  nsl_column_release(r);
  nsl_column_release(c);
  c = nsl_column_new(NSL_I64, 0, NULL);
  r = nsl_column_cumsum(c, &err);
  assert_int_equal(r->len, 0);
  nsl_column_release(r);
  nsl_column_release(c);
  nsl_dict *d = nsl_dict_new();
  c = fx_str(d, 1, (const char *[]){"a"});
  assert_null(nsl_column_cumsum(c, &err));
  assert_null(nsl_column_diff(c, NULL, &err));
  nsl_column_release(c);
  nsl_dict_release(d);
}

static void test_diff(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *c = FX_I64(10, 15, NSL_NULL_I64, 30, 31, 40);
  nsl_column *r = nsl_column_diff(c, NULL, &err);
  FX_EXPECT_I64(r, NSL_NULL_I64, 5, NSL_NULL_I64, NSL_NULL_I64, 1, 9);
  nsl_column_release(r);
  nsl_column *g = FX_I64(0, 1, 0, 1, -1, 0);
  r = nsl_column_diff(c, g, &err);
  /* group 0: rows 0, 2, 5; group 1: rows 1, 3; row 4 in no group */
  FX_EXPECT_I64(r, NSL_NULL_I64, NSL_NULL_I64, NSL_NULL_I64, 15, NSL_NULL_I64, NSL_NULL_I64);
  nsl_column_release(r);
  nsl_column *f = FX_F64(1.0, 3.5, 2.0, NAN, 0.0, 1.0);
  r = nsl_column_diff(f, g, &err);
  FX_EXPECT_F64(r, NAN, NAN, 1.0, NAN, NAN, -1.0);
  nsl_column_release(r);
  nsl_column *bad = FX_I64(0);
  assert_null(nsl_column_diff(c, bad, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  nsl_column_release(bad);
  nsl_column *one = FX_I64(5);
  r = nsl_column_diff(one, NULL, &err);
  FX_EXPECT_I64(r, NSL_NULL_I64);
  nsl_column_release(r);
  nsl_column_release(one);
  nsl_column_release(f);
  nsl_column_release(g);
  nsl_column_release(c);
}

/* The error convention of nsl.h: a refused argument is NULL (or -1) with
 * err filled with NSL_ERR_ARG and a message naming the operation. */
static void test_errors_named(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *f = FX_F64(1.5, 2.0), *s = nsl_column_new(NSL_STR, 2, NULL), *m = FX_BOOL(1, 0);
  assert_null(nsl_column_cast(f, NSL_STR, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "f64 column cannot become a str column"));
  nsl_error_clear(&err);
  assert_null(nsl_column_arith_scalar(s, NSL_ADD, 1, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "str column"));
  nsl_error_clear(&err);
  assert_null(nsl_mask_not(f, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl_mask_indices(f, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl_column_cmp_i64(f, (nsl_cmp)99, 0, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  nsl_column *ok = nsl_mask_not(m, &err);   /* a success leaves err alone */
  FX_EXPECT_BOOL(ok, 0, 1);
  nsl_column_release(ok);
  nsl_table *t = nsl_table_new();
  nsl_error_clear(&err);
  assert_int_equal(nsl_table_declare(t, "dur", NSL_I64, &err), NSL_OK);
  assert_int_equal(nsl_table_declare(t, "dur", NSL_I64, &err), NSL_OK);
  assert_int_equal(nsl_table_find(t, "dur"), 0);
  assert_int_equal(nsl_table_declare(t, "dur", NSL_F64, &err), NSL_ERR_ARG);
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "'dur' is already declared as i64"));
  nsl_table_release(t);
  nsl_column_release(f);
  nsl_column_release(s);
  nsl_column_release(m);
}

/* ---- the specialised loops against a row-by-row definition --------------------- */

/* A random column of type t with NULLs (a third of the rows) and values near the int64 limits at times. */
static nsl_column *random_col(nsl_type t, int64_t n) {
  nsl_column *c = nsl_column_new(t, n, NULL);
  for (int64_t i = 0; i < n; i++) {
    int null = fx_range(0, 2) == 0;
    int64_t v = fx_range(0, 9) == 0 ? (fx_range(0, 1) ? INT64_MAX - fx_range(0, 3) : INT64_MIN + 1 + fx_range(0, 3))
                                     : fx_range(-6, 6);
    switch (t) {
    case NSL_I64: nsl_i64(c)[i] = null ? NSL_NULL_I64 : v; break;
    case NSL_I32: nsl_i32(c)[i] = null ? NSL_NULL_I32 : (int32_t)fx_range(-6, 6); break;
    case NSL_BOOL: nsl_bool(c)[i] = (uint8_t)fx_range(0, 1); break;
    default: break;
    }
  }
  return c;
}

/* Value i of an integer column as the kernels read it (null: NULL). */
static int64_t ref_at(const nsl_column *c, int64_t i, int *null) {
  switch (c->type) {
  case NSL_I64: *null = nsl_i64(c)[i] == NSL_NULL_I64; return nsl_i64(c)[i];
  case NSL_I32: *null = nsl_i32(c)[i] == NSL_NULL_I32; return nsl_i32(c)[i];
  case NSL_BOOL: *null = 0; return nsl_bool(c)[i];
  default: *null = 1; return 0;
  }
}

/* nsl__int_extent at its edges: NULLs skipped (all NULL: none), the
 * type's extreme values, one row, I32 beside I64, other types refused. */
static void test_int_extent_edges(void **state) {
  (void)state;
  int64_t lo = 1, hi = 2;
  nsl_column *a = FX_I64(NSL_NULL_I64, 5, -3, NSL_NULL_I64), *b = FX_I64(NSL_NULL_I64, NSL_NULL_I64),
             *c = FX_I64(INT64_MAX, INT64_MIN + 1), *d = FX_I32(NSL_NULL_I32, 7, INT32_MAX, INT32_MIN + 1),
             *e = FX_I32(NSL_NULL_I32), *f = FX_F64(1.0), *g = FX_I64(42);
  assert_int_equal(nsl__int_extent(a, &lo, &hi), 1);
  assert_int_equal(lo, -3);
  assert_int_equal(hi, 5);
  assert_int_equal(nsl__int_extent(b, &lo, &hi), 0);
  assert_int_equal(nsl__int_extent(c, &lo, &hi), 1);
  assert_int_equal(lo, INT64_MIN + 1);
  assert_int_equal(hi, INT64_MAX);
  assert_int_equal(nsl__int_extent(d, &lo, &hi), 1);
  assert_int_equal(lo, INT32_MIN + 1);
  assert_int_equal(hi, INT32_MAX);
  assert_int_equal(nsl__int_extent(e, &lo, &hi), 0);
  assert_int_equal(nsl__int_extent(f, &lo, &hi), 0);
  assert_int_equal(nsl__int_extent(g, &lo, &hi), 1);
  assert_int_equal(lo, 42);
  assert_int_equal(hi, 42);
  nsl_column *cols[] = {a, b, c, d, e, f, g};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

/* x op y exactly (128 bits), NULL when that is no int64 or a division by 0. */
static int64_t ref_arith(int64_t x, nsl_arith op, int64_t y) {
  __extension__ __int128 r = 0, a = x, b = y;
  if (op == NSL_DIV && y == 0) return NSL_NULL_I64;
  r = op == NSL_ADD ? a + b : op == NSL_SUB ? a - b : op == NSL_MUL ? a * b : a / b;
  return r < INT64_MIN || r > INT64_MAX ? NSL_NULL_I64 : (int64_t)r;
}

/* The element-wise kernels over more rows than one thread takes (their rows
 * split in parts, nsl__run_rows): the same bytes on 1, 2, 3 and 7 threads,
 * with a length that is no multiple of a part, NULLs and values of every
 * kind; the indices of a mask, and the count and sum, against a row loop. */
static void test_kernels_threads(void **state) {
  (void)state;
  const int64_t n = ((int64_t)3 << 20) + 12345;
  fx_seed(4242);
  nsl_column *a = random_col(NSL_I64, n), *b = random_col(NSL_I64, n), *i32 = random_col(NSL_I32, n),
             *mask = random_col(NSL_BOOL, n), *mask2 = random_col(NSL_BOOL, n);
  nsl_column *f = nsl_column_new(NSL_F64, n, NULL);
  for (int64_t i = 0; i < n; i++) nsl_f64(f)[i] = i % 11 == 3 ? NAN : (double)fx_range(-1000, 1000) / 8;
  for (int64_t i = 0; i < n; i += 4099) nsl_bool(mask)[i] = 1;   /* set rows at part edges too */
  int64_t ids[] = {-3, 0, 5, INT64_MAX - 1, 6, NSL_NULL_I64};
  int64_t many[3000];
  for (int k = 0; k < 3000; k++) many[k] = k % 2 ? k * 7919 : -k;   /* a set past the cache: the filter */
  enum { NK = 22 };
  nsl_column *want[NK] = {0};
  nsl_stats want_st, want_f64;
  const char *threads[] = {"1", "2", "3", "7"};
  for (int t = 0; t < 4; t++) {
    setenv("NSL_THREADS", threads[t], 1);
    nsl_column *got[NK] = {
        nsl_column_cmp_i64(a, NSL_LT, 2, NULL),   nsl_column_cmp_i64(i32, NSL_NE, 0, NULL),
        nsl_column_cmp_i64(f, NSL_GE, 3, NULL),   nsl_column_cmp_f64(a, NSL_GT, 1.5, NULL),
        nsl_column_cmp_f64(f, NSL_EQ, 0.5, NULL), nsl_column_cmp_col(a, NSL_LE, b, NULL),
        nsl_column_cmp_col(i32, NSL_EQ, a, NULL), nsl_column_cmp_col(f, NSL_LT, a, NULL),
        nsl_column_isin(a, ids, 6, NULL),         nsl_column_isin(a, many, 3000, NULL),
        nsl_column_isin(i32, ids + 1, 2, NULL),   nsl_column_nulls(f, NULL),
        nsl_mask_and(mask, mask2, NULL),          nsl_mask_or(mask, mask2, NULL),
        nsl_mask_not(mask, NULL),                 nsl__column_where(mask, a, 0, b, 0, NULL),
        nsl_mask_indices(mask, NULL),             nsl_column_arith(a, NSL_MUL, b, NULL),
        nsl_column_arith(f, NSL_SUB, i32, NULL),  nsl_column_arith_scalar(a, NSL_DIV, 3, NULL),
        nsl_column_arith_scalar(i32, NSL_ADD, 0.25, NULL), nsl_column_cast(f, NSL_I32, NULL)};
    nsl_stats st, stf, st32;
    nsl__column_stats(a, &st, 0);
    nsl__column_stats(f, &stf, 0);
    nsl__column_stats(i32, &st32, 0);
    int64_t elo = 0, ehi = 0;   /* the extremes alone: those of the stats */
    assert_int_equal(nsl__int_extent(a, &elo, &ehi), 1);
    assert_int_equal(elo, st.imin);
    assert_int_equal(ehi, st.imax);
    assert_int_equal(nsl__int_extent(i32, &elo, &ehi), 1);
    assert_int_equal(elo, st32.imin);
    assert_int_equal(ehi, st32.imax);
    for (int k = 0; k < NK; k++) {
      assert_non_null(got[k]);
      if (t == 0) {
        want[k] = got[k];
        continue;
      }
      assert_int_equal(got[k]->len, want[k]->len);
      assert_int_equal(got[k]->type, want[k]->type);
      if (memcmp(got[k]->data, want[k]->data, (size_t)got[k]->len * nsl_type_size(got[k]->type)) != 0)
        fail_msg("kernel %d differs on %s threads", k, threads[t]);
      nsl_column_release(got[k]);
    }
    if (t == 0) {
      want_st = st;
      want_f64 = stf;
    }
    assert_int_equal(st.count, want_st.count);
    assert_int_equal(st.isum, want_st.isum);
    assert_int_equal(st.imin, want_st.imin);
    assert_int_equal(st.imax, want_st.imax);
    assert_true(memcmp(&stf.sum, &want_f64.sum, sizeof stf.sum) == 0);
    assert_int_equal(nsl_mask_count(mask), want[16]->len);
  }
  unsetenv("NSL_THREADS");
  int64_t k = 0, cnt = 0, mn = INT64_MAX, mx = INT64_MIN;
  __extension__ __int128 sum = 0;
  for (int64_t i = 0; i < n; i++) {
    if (nsl_bool(mask)[i] && (k >= want[16]->len || nsl_i64(want[16])[k++] != i)) fail_msg("indices row %lld", (long long)i);
    int64_t x = nsl_i64(a)[i];
    if (x == NSL_NULL_I64) continue;
    cnt++;
    sum += x;
    mn = x < mn ? x : mn;
    mx = x > mx ? x : mx;
  }
  assert_int_equal(k, want[16]->len);
  assert_int_equal(want_st.count, cnt);
  assert_int_equal(want_st.isum, (int64_t)(uint64_t)sum);
  assert_int_equal(want_st.imin, mn);
  assert_int_equal(want_st.imax, mx);
  for (int j = 0; j < NK; j++) nsl_column_release(want[j]);
  nsl_column *cols[] = {a, b, i32, mask, mask2, f};
  for (size_t j = 0; j < sizeof cols / sizeof *cols; j++) nsl_column_release(cols[j]);
}

static void test_loops_random(void **state) {
  (void)state;
  const nsl_type types[] = {NSL_I64, NSL_I32, NSL_BOOL};
  for (int round = 0; round < 60; round++) {
    fx_seed(777 + (uint64_t)round);
    int64_t n = fx_range(0, 90);
    for (int ta = 0; ta < 3; ta++)
      for (int tb = 0; tb < 3; tb++) {
        nsl_column *a = random_col(types[ta], n), *b = random_col(types[tb], n);
        for (nsl_cmp op = NSL_EQ; op <= NSL_GE; op++) {   /* compare: NULL rows are false (true for NE) */
          nsl_column *m = nsl_column_cmp_col(a, op, b, NULL);
          for (int64_t i = 0; i < n; i++) {
            int na, nb;
            int64_t x = ref_at(a, i, &na), y = ref_at(b, i, &nb);
            int want = na || nb ? op == NSL_NE
                                : (op == NSL_EQ ? x == y : op == NSL_NE ? x != y : op == NSL_LT ? x < y
                                   : op == NSL_LE ? x <= y : op == NSL_GT ? x > y : x >= y);
            if (nsl_bool(m)[i] != want) fail_msg("round %d compare %d types %d/%d row %lld", round, op, ta, tb, (long long)i);
          }
          nsl_column_release(m);
        }
        for (nsl_arith op = NSL_ADD; op <= NSL_DIV; op++) {   /* arithmetic: NULL on NULL, overflow, division by 0 */
          nsl_column *r = nsl_column_arith(a, op, b, NULL), *rs = nsl_column_arith_scalar(a, op, -1, NULL);
          for (int64_t i = 0; i < n; i++) {
            int na, nb;
            int64_t x = ref_at(a, i, &na), y = ref_at(b, i, &nb);
            if (nsl_i64(r)[i] != (na || nb ? NSL_NULL_I64 : ref_arith(x, op, y)))
              fail_msg("round %d arith %d types %d/%d row %lld", round, op, ta, tb, (long long)i);
            if (nsl_i64(rs)[i] != (na ? NSL_NULL_I64 : ref_arith(x, op, -1)))
              fail_msg("round %d arith scalar %d type %d row %lld", round, op, ta, (long long)i);
          }
          nsl_column_release(r);
          nsl_column_release(rs);
        }
        nsl_column_release(b);
        /* isnull, casts to i64, min / max / sum */
        nsl_column *nl = nsl_column_nulls(a, NULL), *c64 = nsl_column_cast(a, NSL_I64, NULL);
        nsl_stats st;
        nsl_column_stats(a, &st);
        int64_t cnt = 0, mn = INT64_MAX, mx = INT64_MIN;
        __extension__ __int128 sum = 0;
        for (int64_t i = 0; i < n; i++) {
          int na;
          int64_t x = ref_at(a, i, &na);
          if (nsl_bool(nl)[i] != na) fail_msg("round %d isnull type %d row %lld", round, ta, (long long)i);
          if (nsl_i64(c64)[i] != (na ? NSL_NULL_I64 : x)) fail_msg("round %d cast type %d row %lld", round, ta, (long long)i);
          if (na) continue;
          cnt++;
          sum += x;
          mn = x < mn ? x : mn;
          mx = x > mx ? x : mx;
        }
        assert_int_equal(st.count, cnt);
        if (cnt) {
          assert_int_equal(st.isum, (int64_t)(uint64_t)sum);
          assert_int_equal(st.imin, mn);
          assert_int_equal(st.imax, mx);
        }
        nsl_column_release(nl);
        nsl_column_release(c64);
        if (a->type == NSL_BOOL) {   /* mask algebra */
          nsl_column *o = random_col(NSL_BOOL, n), *an = nsl_mask_and(a, o, NULL), *orr = nsl_mask_or(a, o, NULL),
                     *nt = nsl_mask_not(a, NULL), *ix = nsl_mask_indices(a, NULL);
          int64_t k = 0;
          for (int64_t i = 0; i < n; i++) {
            int x = nsl_bool(a)[i] != 0, y = nsl_bool(o)[i] != 0;
            if (nsl_bool(an)[i] != (x & y) || nsl_bool(orr)[i] != (x | y) || nsl_bool(nt)[i] != !x)
              fail_msg("round %d masks row %lld", round, (long long)i);
            if (x && (k >= ix->len || nsl_i64(ix)[k++] != i)) fail_msg("round %d indices row %lld", round, (long long)i);
          }
          assert_int_equal(k, ix->len);
          nsl_column *cols[] = {o, an, orr, nt, ix};
          for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
        }
        nsl_column_release(a);
      }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_errors_named),
      cmocka_unit_test(test_cmp_i64_all_types),
      cmocka_unit_test(test_cmp_f64),
      cmocka_unit_test(test_cmp_col),
      cmocka_unit_test(test_isin_isnull),
      cmocka_unit_test(test_masks),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_gather_large),
      cmocka_unit_test(test_arith),
      cmocka_unit_test(test_cast),
      cmocka_unit_test(test_loops_random),
      cmocka_unit_test(test_kernels_threads),
      cmocka_unit_test(test_stats),
      cmocka_unit_test(test_int_extent_edges),
      cmocka_unit_test(test_quantile_hand),
      cmocka_unit_test(test_quantile_random_reference),
      cmocka_unit_test(test_histogram),
      cmocka_unit_test(test_cumsum),
      cmocka_unit_test(test_diff),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
