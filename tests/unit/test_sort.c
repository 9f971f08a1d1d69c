/* test_sort.c -- nsl_argsort, nsl_column_unique, nsl_searchsorted against
 * hand-computed orders and a qsort reference with an explicit comparator
 * (NULLs first in either direction, strings by text, ties by row). */
#include <float.h>
#include <stdio.h>

#include "core/kernels_internal.h"
#include "core/parallel.h"
#include "kernel_fixtures.h"

/* ---- reference comparator ----------------------------------------------------- */

static const nsl_column *const *ref_keys;
static const int *ref_desc;
static int ref_nkeys;

static int ref_is_null(const nsl_column *c, int64_t i) { return nsl_column_is_null(c, i); }

static int ref_cmp_key(const nsl_column *c, int64_t a, int64_t b) {
  int na = ref_is_null(c, a), nb = ref_is_null(c, b);
  if (na || nb) return nb - na;   /* NULL first */
  switch (c->type) {
  case NSL_I64: {
    int64_t x = nsl_i64(c)[a], y = nsl_i64(c)[b];
    return (x > y) - (x < y);
  }
  case NSL_I32: {
    int32_t x = nsl_i32(c)[a], y = nsl_i32(c)[b];
    return (x > y) - (x < y);
  }
  case NSL_F64: {
    double x = nsl_f64(c)[a], y = nsl_f64(c)[b];
    return (x > y) - (x < y);
  }
  case NSL_BOOL: return (nsl_bool(c)[a] > nsl_bool(c)[b]) - (nsl_bool(c)[a] < nsl_bool(c)[b]);
  case NSL_STR: {
    int r = strcmp(nsl_dict_str(c->dict, nsl_i32(c)[a]), nsl_dict_str(c->dict, nsl_i32(c)[b]));
    return (r > 0) - (r < 0);
  }
  }
  return 0;
}

/* Order of rows a, b by the keys (descending keys flip non-NULL comparisons). */
static int ref_cmp_rows(int64_t a, int64_t b) {
  for (int k = 0; k < ref_nkeys; k++) {
    const nsl_column *c = ref_keys[k];
    int r = ref_cmp_key(c, a, b);
    if (r && ref_desc && ref_desc[k] && !ref_is_null(c, a) && !ref_is_null(c, b)) r = -r;
    if (r) return r;
  }
  return 0;
}

static int ref_qsort_cmp(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  int r = ref_cmp_rows(a, b);
  return r ? r : (a > b) - (a < b);
}

/* Checks perm against the qsort reference (exact: ties broken by row). */
static void check_against_reference(const nsl_column *const *keys, const int *desc, int nkeys) {
  nsl_error err = {0};
  nsl_column *perm = nsl_argsort(keys, desc, nkeys, &err);
  assert_non_null(perm);
  int64_t n = keys[0]->len;
  int64_t *want = malloc((size_t)(n ? n : 1) * sizeof *want);
  for (int64_t i = 0; i < n; i++) want[i] = i;
  ref_keys = keys;
  ref_desc = desc;
  ref_nkeys = nkeys;
  qsort(want, (size_t)n, sizeof *want, ref_qsort_cmp);
  fx_expect_i64(perm, n, want);
  free(want);
  nsl_column_release(perm);
}

/* O(n) check for big inputs: perm is a permutation and every neighbour pair
 * is in (keys, row) order. */
static void check_sorted_stable(const nsl_column *const *keys, const int *desc, int nkeys) {
  nsl_error err = {0};
  nsl_column *perm = nsl_argsort(keys, desc, nkeys, &err);
  assert_non_null(perm);
  int64_t n = keys[0]->len;
  assert_int_equal(perm->len, n);
  uint8_t *seen = calloc((size_t)(n ? n : 1), 1);
  ref_keys = keys;
  ref_desc = desc;
  ref_nkeys = nkeys;
  const int64_t *p = nsl_i64(perm);
  for (int64_t i = 0; i < n; i++) {
    assert_true(p[i] >= 0 && p[i] < n);
    assert_false(seen[p[i]]);
    seen[p[i]] = 1;
    if (i > 0) {
      int r = ref_cmp_rows(p[i - 1], p[i]);
      if (r > 0 || (r == 0 && p[i - 1] > p[i]))
        fail_msg("rows %lld and %lld out of order at %lld", (long long)p[i - 1], (long long)p[i], (long long)i);
    }
  }
  free(seen);
  nsl_column_release(perm);
}

/* ---- hand-computed cases ---------------------------------------------------------- */

static nsl_column *sort1(nsl_column *c, int desc) {
  nsl_error err = {0};
  const nsl_column *keys[1] = {c};
  nsl_column *p = nsl_argsort(keys, &desc, 1, &err);
  assert_non_null(p);
  return p;
}

static void test_empty_and_one(void **state) {
  (void)state;
  nsl_column *e = nsl_column_new(NSL_I64, 0, NULL), *one = FX_I64(42);
  nsl_column *p = sort1(e, 0);
  assert_int_equal(p->len, 0);
  nsl_column_release(p);
  p = sort1(one, 1);
  FX_EXPECT_I64(p, 0);
  nsl_column_release(p);
  nsl_column_release(e);
  nsl_column_release(one);
}

static void test_all_equal_is_identity(void **state) {
  (void)state;
  int64_t n = 70000;   /* above the 11-bit digit threshold */
  nsl_column *c = nsl_column_new(NSL_I64, n, NULL);
  for (int64_t i = 0; i < n; i++) nsl_i64(c)[i] = 7;
  for (int desc = 0; desc < 2; desc++) {
    nsl_column *p = sort1(c, desc);
    for (int64_t i = 0; i < n; i++) assert_int_equal(nsl_i64(p)[i], i);
    nsl_column_release(p);
  }
  nsl_column_release(c);
}

static void test_i64_extremes(void **state) {
  (void)state;
  nsl_column *c = FX_I64(INT64_MAX, NSL_NULL_I64, INT64_MIN + 1, 0, -1, 1, INT64_MAX, NSL_NULL_I64);
  nsl_column *p = sort1(c, 0);
  FX_EXPECT_I64(p, 1, 7, 2, 4, 3, 5, 0, 6);
  nsl_column_release(p);
  p = sort1(c, 1);
  FX_EXPECT_I64(p, 1, 7, 0, 6, 5, 3, 4, 2);
  nsl_column_release(p);
  nsl_column_release(c);
  /* only NULLs: nothing to order, row order stays */
  c = FX_I64(NSL_NULL_I64, NSL_NULL_I64, NSL_NULL_I64);
  p = sort1(c, 0);
  FX_EXPECT_I64(p, 0, 1, 2);
  nsl_column_release(p);
  nsl_column_release(c);
}

static void test_i32_and_bool(void **state) {
  (void)state;
  nsl_column *c = FX_I32(INT32_MAX, NSL_NULL_I32, INT32_MIN + 1, 5, -5, 5);
  nsl_column *p = sort1(c, 0);
  FX_EXPECT_I64(p, 1, 2, 4, 3, 5, 0);
  nsl_column_release(p);
  p = sort1(c, 1);
  FX_EXPECT_I64(p, 1, 0, 3, 5, 4, 2);
  nsl_column_release(p);
  nsl_column_release(c);
  c = FX_BOOL(1, 0, 1, 0);
  p = sort1(c, 0);
  FX_EXPECT_I64(p, 1, 3, 0, 2);
  nsl_column_release(p);
  p = sort1(c, 1);
  FX_EXPECT_I64(p, 0, 2, 1, 3);
  nsl_column_release(p);
  nsl_column_release(c);
}

static void test_f64_bits(void **state) {
  (void)state;
  nsl_column *c = FX_F64(1.5, NAN, -INFINITY, INFINITY, -0.0, 0.0, -1.5, 4.9e-324, -4.9e-324, DBL_MAX,
                         -DBL_MAX, -NAN);
  nsl_column *p = sort1(c, 0);
  /* NaNs first; -0.0 == 0.0 keep row order */
  FX_EXPECT_I64(p, 1, 11, 2, 10, 6, 8, 4, 5, 7, 0, 9, 3);
  nsl_column_release(p);
  p = sort1(c, 1);
  FX_EXPECT_I64(p, 1, 11, 3, 9, 0, 7, 4, 5, 8, 6, 10, 2);
  nsl_column_release(p);
  nsl_column_release(c);
}

static void test_strings_by_text(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  /* ids are given in first-appearance order, which is not text order */
  nsl_column *c = fx_str(d, 6, (const char *[]){"kernel_b", "Kernel", NULL, "kernel_a", "", "kernel_b"});
  nsl_column *p = sort1(c, 0);
  FX_EXPECT_I64(p, 2, 4, 1, 3, 0, 5);
  nsl_column_release(p);
  p = sort1(c, 1);
  FX_EXPECT_I64(p, 2, 0, 5, 3, 1, 4);
  nsl_column_release(p);
  nsl_column_release(c);
  nsl_dict_release(d);
  /* a string column without a dictionary orders by id */
  c = nsl_column_new(NSL_STR, 3, NULL);
  nsl_i32(c)[0] = 2;
  nsl_i32(c)[1] = -1;
  nsl_i32(c)[2] = 0;
  p = sort1(c, 0);
  FX_EXPECT_I64(p, 1, 2, 0);
  nsl_column_release(p);
  nsl_error err = {0};
  nsl_column *u = nsl_column_unique(c, &err);
  assert_int_equal(u->len, 2);
  assert_int_equal(nsl_i32(u)[0], 0);
  assert_int_equal(nsl_i32(u)[1], 2);
  nsl_column_release(u);
  nsl_column_release(c);
}

static void test_multikey_desc_stable(void **state) {
  (void)state;
  /* (device asc, dur desc): ties keep row order */
  nsl_column *dev = FX_I32(1, 0, 1, 0, 1, 0), *dur = FX_I64(5, 5, 9, 3, 5, 7);
  const nsl_column *keys[2] = {dev, dur};
  int desc[2] = {0, 1};
  nsl_error err = {0};
  nsl_column *p = nsl_argsort(keys, desc, 2, &err);
  FX_EXPECT_I64(p, 5, 1, 3, 2, 0, 4);
  nsl_column_release(p);
  check_against_reference(keys, desc, 2);
  nsl_column_release(dev);
  nsl_column_release(dur);
}

/* A key that orders nothing (constant, or only NULLs) is dropped; the next
 * key reuses its slot (once a double free of the string ranks). */
static void test_constant_keys_dropped(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  nsl_column *same = fx_str(d, 4, (const char *[]){"k", "k", "k", "k"});
  nsl_column *v = FX_I64(3, 1, 2, 1), *nul = FX_I64(NSL_NULL_I64, NSL_NULL_I64, NSL_NULL_I64, NSL_NULL_I64);
  nsl_column *s2 = fx_str(d, 4, (const char *[]){"b", "a", "b", "a"});
  const nsl_column *k1[3] = {same, v, same}, *k2[3] = {same, s2, nul}, *k3[2] = {nul, same};
  nsl_error err = {0};
  nsl_column *p = nsl_argsort(k1, NULL, 3, &err);
  FX_EXPECT_I64(p, 1, 3, 2, 0);
  nsl_column_release(p);
  p = nsl_argsort(k2, (int[]){1, 1, 1}, 3, &err);
  FX_EXPECT_I64(p, 0, 2, 1, 3);
  nsl_column_release(p);
  p = nsl_argsort(k3, NULL, 2, &err);
  FX_EXPECT_I64(p, 0, 1, 2, 3);
  nsl_column_release(p);
  nsl_column_release(same);
  nsl_column_release(v);
  nsl_column_release(nul);
  nsl_column_release(s2);
  nsl_dict_release(d);
}

static void test_bad_input(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *a = FX_I64(1, 2, 3), *b = FX_I64(1, 2);
  const nsl_column *keys[2] = {a, b};
  assert_null(nsl_argsort(keys, NULL, 2, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "rows"));
  assert_null(nsl_argsort(keys, NULL, 0, &err));
  const nsl_column *none[1] = {NULL};
  assert_null(nsl_argsort(none, NULL, 1, &err));
  assert_null(nsl_argsort(NULL, NULL, 1, NULL));   /* no error record: still safe */
  nsl_column_release(a);
  nsl_column_release(b);
}

/* ---- random data against the reference ---------------------------------------------- */

static nsl_column *random_key(nsl_type t, int64_t n, nsl_dict *d, int variety) {
  nsl_column *c = nsl_column_new(t, n, d);
  static const char *const words[] = {"a", "b", "ab", "ba", "", "nccl", "gemm", "Gemm", "z", "aa"};
  for (int64_t i = 0; i < n; i++) {
    int null = fx_range(0, 9) == 0;
    switch (t) {
    case NSL_I64: {
      int64_t v;
      switch (variety) {
      case 0: v = fx_range(-3, 3); break;
      case 1: v = (int64_t)fx_next(); break;                       /* full range */
      default: v = fx_range(0, 3) == 0 ? INT64_MAX : INT64_MIN + 1 + fx_range(0, 2); break;
      }
      nsl_i64(c)[i] = null || v == NSL_NULL_I64 ? NSL_NULL_I64 : v;
      break;
    }
    case NSL_I32:
      nsl_i32(c)[i] = null ? NSL_NULL_I32 : (int32_t)fx_range(variety ? INT32_MIN + 1 : -2, variety ? INT32_MAX : 2);
      break;
    case NSL_F64: {
      static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, 1e-310, -1e-310, 1.0, -1.0};
      double v = variety ? (double)(int64_t)fx_next() / 1e3 : specials[fx_range(0, 7)];
      nsl_f64(c)[i] = null ? NAN : v;
      break;
    }
    case NSL_STR: {
      const char *w = words[fx_range(0, 9)];
      nsl_i32(c)[i] = null ? -1 : fx_id(d, w, strlen(w));
      break;
    }
    case NSL_BOOL: nsl_bool(c)[i] = (uint8_t)fx_range(0, 1); break;
    }
  }
  return c;
}

static void test_random_multikey_reference(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  fx_seed(12345);
  for (int trial = 0; trial < 60; trial++) {
    int64_t n = trial < 10 ? trial : fx_range(10, 3000);
    int nkeys = (int)fx_range(1, 4);
    nsl_column *cols[4];
    int desc[4];
    for (int k = 0; k < nkeys; k++) {
      nsl_type t = (nsl_type)fx_range(0, 4);
      cols[k] = random_key(t, n, d, (int)fx_range(0, 2));
      desc[k] = (int)fx_range(0, 1);
    }
    check_against_reference((const nsl_column *const *)cols, desc, nkeys);
    for (int k = 0; k < nkeys; k++) nsl_column_release(cols[k]);
  }
  nsl_dict_release(d);
}

static void test_random_large_radix_paths(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  fx_seed(777);
  int64_t n = 200000;
  /* full-range I64 (pairs path), small I32 (packed), F64 wide, strings */
  nsl_column *wide = random_key(NSL_I64, n, d, 1), *small = random_key(NSL_I32, n, d, 0);
  nsl_column *dbl = random_key(NSL_F64, n, d, 1), *str = random_key(NSL_STR, n, d, 0);
  nsl_column *ext = random_key(NSL_I64, n, d, 2);
  const nsl_column *k1[1] = {wide};
  int asc[4] = {0, 0, 0, 0}, mix[4] = {1, 0, 1, 0};
  check_sorted_stable(k1, asc, 1);
  check_sorted_stable(k1, mix, 1);
  const nsl_column *k2[3] = {small, str, dbl};
  check_sorted_stable(k2, asc, 3);
  check_sorted_stable(k2, mix, 3);
  const nsl_column *k3[2] = {ext, small};
  check_sorted_stable(k3, mix, 2);
  /* keys near a digit boundary (2^44 +- a little): high digits vary */
  for (int64_t i = 0; i < n; i++) nsl_i64(wide)[i] = (INT64_C(1) << 44) + fx_range(-5000, 5000);
  check_sorted_stable(k1, asc, 1);
  nsl_column_release(wide);
  nsl_column_release(small);
  nsl_column_release(dbl);
  nsl_column_release(str);
  nsl_column_release(ext);
  nsl_dict_release(d);
}

/* The radix sorts over more rows than one thread takes (each pass split in
 * parts): sorted, stable, and the same on 1, 2, 3 and 7 threads, for keys
 * in a bit range of u64 values (the row in the low bits, a trivial digit
 * among the others) and for (key, value) pairs. */
static void test_radix_threads(void **state) {
  (void)state;
  const int64_t n = ((int64_t)3 << 20) + 777;
  uint64_t *u = malloc((size_t)n * sizeof *u), *ut = malloc((size_t)n * sizeof *ut),
           *uw = malloc((size_t)n * sizeof *uw);
  nsl__kv *k = malloc((size_t)n * sizeof *k), *kt = malloc((size_t)n * sizeof *kt),
          *kw = malloc((size_t)n * sizeof *kw);
  assert_true(u && ut && uw && k && kt && kw);
  const char *threads[] = {"1", "2", "3", "7"};
  for (int t = 0; t < 4; t++) {
    setenv("NSL_THREADS", threads[t], 1);
    fx_seed(99);
    /* bits 0..21: the row; 22..45: the key (three digits of 8 bits), whose middle digit is one value for every
     * row */
    for (int64_t i = 0; i < n; i++) {
      uint64_t key = (uint64_t)fx_range(0, 255) | (uint64_t)0x5a << 8 | (uint64_t)fx_range(0, 255) << 16;
      u[i] = key << 22 | (uint64_t)i;
      k[i] = (nsl__kv){(uint64_t)fx_range(0, 1 << 20) * 977, i};
    }
    uint64_t *ur = nsl__radix_u64(u, ut, n, 22, 46);
    nsl__kv *kr = nsl__radix_kv(k, kt, n, 40);
    if (t == 0) {
      for (int64_t i = 1; i < n; i++) {
        if (ur[i - 1] > ur[i]) fail_msg("u64 row %lld out of order", (long long)i);   /* key, then row */
        if (kr[i - 1].k > kr[i].k || (kr[i - 1].k == kr[i].k && kr[i - 1].v > kr[i].v))
          fail_msg("kv row %lld out of order or unstable", (long long)i);
      }
      memcpy(uw, ur, (size_t)n * sizeof *uw);
      memcpy(kw, kr, (size_t)n * sizeof *kw);
      continue;
    }
    if (memcmp(ur, uw, (size_t)n * sizeof *uw) != 0) fail_msg("u64 sort differs on %s threads", threads[t]);
    if (memcmp(kr, kw, (size_t)n * sizeof *kw) != 0) fail_msg("kv sort differs on %s threads", threads[t]);
  }
  unsetenv("NSL_THREADS");
  free(u);
  free(ut);
  free(uw);
  free(k);
  free(kt);
  free(kw);
}

/* A key scanned in parts over the threads (its extremes, NULLs and whether
 * the rows already follow it): keys in order but for one step back exactly
 * where the second part starts, or a NULL there, or in order throughout,
 * ascending and descending, sort right on 1, 2 and 3 threads; and a
 * search of 2 Mi values gives the same positions on each. */
static void test_scan_and_search_threads(void **state) {
  (void)state;
  const char *threads[] = {"1", "2", "3"};
  const int64_t n = ((int64_t)2 << 20) + 99;
  for (int t = 0; t < 3; t++) {
    setenv("NSL_THREADS", threads[t], 1);
    for (int variant = 0; variant < 4; variant++) {
      nsl_column *c = nsl_column_new(NSL_I64, n, NULL);
      for (int64_t i = 0; i < n; i++) nsl_i64(c)[i] = variant == 3 ? n - i : i * 3;
      int64_t per = nsl__rows_per_part(n);
      for (int64_t at = per; at < n; at += per) {   /* where each part but the first starts */
        if (variant == 1) nsl_i64(c)[at] = nsl_i64(c)[at - 1] - 1;
        if (variant == 2) nsl_i64(c)[at] = NSL_NULL_I64;
      }
      const nsl_column *keys[1] = {c};
      int desc[1] = {variant == 3};
      check_sorted_stable(keys, desc, 1);
      nsl_column_release(c);
    }
  }
  nsl_column *sorted = nsl_column_new(NSL_I64, n, NULL), *values = nsl_column_new(NSL_I64, n, NULL);
  fx_seed(5);
  for (int64_t i = 0; i < n; i++) {
    nsl_i64(sorted)[i] = i / 3 * 2;
    nsl_i64(values)[i] = fx_range(-10, n);
  }
  nsl_column *want = NULL;
  for (int t = 0; t < 3; t++) {
    setenv("NSL_THREADS", threads[t], 1);
    for (int right = 0; right < 2; right++) {
      nsl_error err = {0};
      nsl_column *pos = nsl_searchsorted(sorted, values, right, &err);
      assert_non_null(pos);
      if (t == 0 && right == 0) {
        want = pos;
        for (int64_t j = 0; j < n; j += 997) {   /* the first index whose value is >= v */
          int64_t v = nsl_i64(values)[j], p = nsl_i64(pos)[j];
          if ((p < n && nsl_i64(sorted)[p] < v) || (p > 0 && nsl_i64(sorted)[p - 1] >= v))
            fail_msg("value %lld at %lld", (long long)v, (long long)p);
        }
        continue;
      }
      if (right == 0 && memcmp(pos->data, want->data, (size_t)n * 8)) fail_msg("search differs on %s threads", threads[t]);
      nsl_column_release(pos);
    }
  }
  unsetenv("NSL_THREADS");
  nsl_column_release(want);
  nsl_column_release(sorted);
  nsl_column_release(values);
}

/* Last keys the rows already follow (times in start order, NULLs first, either direction) need no pass of
 * their own: the result is still the reference's, with ties by row. */
static void test_trailing_keys_in_order(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  fx_seed(4242);
  for (int trial = 0; trial < 40; trial++) {
    int64_t n = trial < 4 ? trial + 1 : (trial % 2 ? fx_range(10, 3000) : fx_range(70000, 90000));
    int desc[3] = {(int)fx_range(0, 1), (int)fx_range(0, 1), (int)fx_range(0, 1)};
    nsl_column *lead = random_key((nsl_type)fx_range(0, 4), n, d, (int)fx_range(0, 2));
    nsl_column *mid = nsl_column_new(NSL_I32, n, NULL), *last = nsl_column_new(NSL_I64, n, NULL);
    int64_t nulls = trial % 3 == 0 ? fx_range(0, n / 4) : 0, t = fx_range(-1000, 1000);
    int32_t step = 0;
    for (int64_t i = 0; i < n; i++) {   /* NULLs first, then in the key's direction, with runs of equal times */
      if (i >= nulls && fx_range(0, 2)) t += desc[2] ? -fx_range(0, 1 << 20) : fx_range(0, 1 << 20);
      nsl_i64(last)[i] = i < nulls ? NSL_NULL_I64 : t;
      if (fx_range(0, 9) == 0) step++;
      nsl_i32(mid)[i] = desc[1] ? -step : step;
    }
    if (trial % 4 == 1 && n > 2) {   /* one row out of order: the last key is not in order after all */
      int64_t i = fx_range(nulls, n - 1), j = fx_range(nulls, n - 1);
      int64_t x = nsl_i64(last)[i];
      nsl_i64(last)[i] = nsl_i64(last)[j];
      nsl_i64(last)[j] = x;
    }
    const nsl_column *k3[3] = {lead, mid, last}, *k2[2] = {mid, last}, *k1[1] = {last};
    if (n <= 3000) {
      check_against_reference(k3, desc, 3);
      check_against_reference(k2, desc + 1, 2);
      check_against_reference(k1, desc + 2, 1);
    } else {
      check_sorted_stable(k3, desc, 3);
      check_sorted_stable(k2, desc + 1, 2);
      check_sorted_stable(k1, desc + 2, 1);
    }
    nsl_column_release(lead);
    nsl_column_release(mid);
    nsl_column_release(last);
  }
  nsl_dict_release(d);
}

/* Rows whose every group of the leading keys (a thread) follows the last key (start) while the groups
 * interleave: a counting sort by the leading keys gives the reference's order; one row out of order in a
 * group, or leading keys too wide for it, take the radix passes -- the same order. */
static void test_groups_in_order(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  fx_seed(99);
  for (int trial = 0; trial < 48; trial++) {
    int64_t n = trial < 4 ? trial + 1 : (trial % 2 ? fx_range(10, 3000) : fx_range(70000, 90000));
    int desc[3] = {(int)fx_range(0, 1), (int)fx_range(0, 1), (int)fx_range(0, 1)};
    /* thread ids over 2^20: leading keys wider than a counting sort takes, numbered densely when they are few
     * (an eighth of the rows at most: the small trials have more, and are sorted by composite) */
    int wide = trial % 6 == 5;
    int64_t nthreads = fx_range(1, 40);
    nsl_column *pid = nsl_column_new(NSL_I32, n, NULL), *tid = nsl_column_new(NSL_I64, n, NULL);
    nsl_column *t = nsl_column_new(NSL_I64, n, NULL);
    int64_t clock[40] = {0}, started[40] = {0};
    for (int64_t i = 0; i < n; i++) {
      int64_t th = fx_range(0, nthreads - 1);
      nsl_i32(pid)[i] = (int32_t)(th % 3);
      nsl_i64(tid)[i] = th == 7 ? NSL_NULL_I64 : (wide ? th << 21 : th * 1000 + 17);
      if (!started[th] && fx_range(0, 3) == 0) nsl_i64(t)[i] = NSL_NULL_I64;   /* NULLs first on a thread */
      else {
        started[th] = 1;
        clock[th] += desc[2] ? -fx_range(0, 5000) : fx_range(0, 5000);
        nsl_i64(t)[i] = clock[th];
      }
    }
    if (trial % 4 == 1 && n > 2) {   /* one row out of its thread's order */
      int64_t i = fx_range(0, n - 1), j = fx_range(0, n - 1);
      int64_t x = nsl_i64(t)[i];
      nsl_i64(t)[i] = nsl_i64(t)[j];
      nsl_i64(t)[j] = x;
    }
    const nsl_column *k3[3] = {pid, tid, t}, *k2[2] = {tid, t};
    if (n <= 3000) {
      check_against_reference(k3, desc, 3);
      check_against_reference(k2, desc + 1, 2);
    } else {
      check_sorted_stable(k3, desc, 3);
      check_sorted_stable(k2, desc + 1, 2);
    }
    nsl_column_release(pid);
    nsl_column_release(tid);
    nsl_column_release(t);
  }
  nsl_dict_release(d);
}

/* Rows in two runs, each with every group (a device) in start order -- kernels, then the copies of the
 * same devices over the same time, as nsl.gpu_ops makes them: the second run's rows come out of order
 * (their starts fall before the latest of their group), a quarter to a half of the rows: sorted apart and
 * merged, or (over a third) every row sorted; with one of them out of order among themselves too.  The
 * reference's order either way. */
static void test_runs_in_order(void **state) {
  (void)state;
  fx_seed(4242);
  for (int trial = 0; trial < 40; trial++) {
    int64_t n = trial < 4 ? trial + 2 : (trial % 2 ? fx_range(10, 3000) : fx_range(60000, 90000));
    int64_t n1 = n - n / (2 + trial % 3), ndev = fx_range(1, 8);
    nsl_column *dev = nsl_column_new(NSL_I64, n, NULL), *t = nsl_column_new(NSL_I64, n, NULL);
    int64_t clock[8] = {0};
    for (int64_t i = 0; i < n; i++) {
      if (i == n1) memset(clock, 0, sizeof clock);   /* the second run starts over in time */
      int64_t g = fx_range(0, ndev - 1);
      clock[g] += fx_range(0, 4000);
      nsl_i64(dev)[i] = g;
      nsl_i64(t)[i] = clock[g];
    }
    if (trial % 5 == 3 && n - n1 > 2) {   /* one row of the second run out of its order */
      int64_t i = fx_range(n1, n - 1), j = fx_range(n1, n - 1);
      int64_t x = nsl_i64(t)[i];
      nsl_i64(t)[i] = nsl_i64(t)[j];
      nsl_i64(t)[j] = x;
    }
    const nsl_column *k2[2] = {dev, t};
    int desc[2] = {0, 0};
    if (n <= 3000) check_against_reference(k2, desc, 2);
    else check_sorted_stable(k2, desc, 2);
    nsl_column_release(dev);
    nsl_column_release(t);
  }
}

/* (group, start, row) triples, in order. */
typedef struct gsr {
  int64_t g, s, row;
} gsr;

static int cmp_gsr(const void *x, const void *y) {
  const gsr *a = x, *b = y;
  if (a->g != b->g) return a->g < b->g ? -1 : 1;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  return (a->row > b->row) - (a->row < b->row);
}

/* The windows between two collectives of a rank (nsl.straggler's): the rows are the work of every window, in
 * time order across two ranks, then each window's previous collective (before its work), then its own (after):
 * thousands of groups, each in three runs, descending once in every 30 to 100 rows -- more often than the
 * one in 64 under which the runs were merged, but in one pass over the rows: merged, not sorted (the order's
 * runs), and the rows of each group in (start, row) order, as a qsort of (group, start, row) has them. */
static void test_windows_in_runs(void **state) {
  (void)state;
  fx_seed(9090);
  for (int trial = 0; trial < 6; trial++) {
    int64_t windows = fx_range(1000, 4000), nwork = 0, cap = windows * 2 * 100 + 4 * windows;
    nsl_column *g = nsl_column_new(NSL_I64, cap, NULL), *t = nsl_column_new(NSL_I64, cap, NULL);
    int64_t *gv = nsl_i64(g), *tv = nsl_i64(t);
    for (int64_t j = 0; j < windows; j++)   /* window j of both ranks spans [j * 1000, (j + 1) * 1000) */
      for (int64_t k = fx_range(30, 100); k > 0; k--) {
        int64_t r = fx_range(0, 1);
        gv[nwork] = r * windows + j;
        tv[nwork++] = j * 1000 + (100 - k) * 9 + fx_range(0, 4);   /* ascending within the window, ties */
      }
    int64_t n = nwork;
    for (int part = 0; part < 2; part++)   /* the previous collectives, then the own ones */
      for (int64_t grp = 0; grp < 2 * windows; grp++) {
        gv[n] = grp;
        tv[n++] = (grp % windows) * 1000 + (part ? 995 : -5);
      }
    nsl_column_set_len(g, n);
    nsl_column_set_len(t, n);
    nsl__order o;
    nsl_error err = {0};
    assert_int_equal(nsl__order_by_group_start(g, t, 1, &o, &err), NSL_OK);
    assert_non_null(o.runs);   /* merged from the runs */
    assert_int_equal(o.n, n);
    gsr *ref = malloc((size_t)n * sizeof *ref);
    for (int64_t i = 0; i < n; i++) ref[i] = (gsr){gv[i], tv[i], i};
    qsort(ref, (size_t)n, sizeof *ref, cmp_gsr);
    for (int64_t q = 0; q < n; q++)
      if (nsl__order_row(&o, q) != ref[q].row)
        fail_msg("trial %d: place %lld holds row %lld, the reference row %lld", trial, (long long)q,
                 (long long)nsl__order_row(&o, q), (long long)ref[q].row);
    free(ref);
    nsl__order_free(&o);
    nsl_column_release(g);
    nsl_column_release(t);
  }
}

/* Each thread's rows in tiles, each tile's a block in time order and then a late block of the same span (a
 * buffer flushed after the others, as nsys's exports end a thread's calls): two ascending runs that
 * interleave tile after tile, which the two piles keep apart; with three blocks a tile some rows fall below
 * both and are sorted apart; coarse times, so equal starts meet across the piles (the row decides).  The
 * reference's order, or sorted and stable over 60,000 rows and more. */
static void test_piles_in_order(void **state) {
  (void)state;
  fx_seed(777);
  for (int trial = 0; trial < 36; trial++) {
    int64_t n = trial % 2 ? fx_range(200, 3000) : fx_range(60000, 90000), nthreads = fx_range(1, 6);
    int blocks = 2 + trial % 3 / 2, tiles = (int)fx_range(1, 30);   /* 2 or 3 blocks a tile */
    nsl_column *th = nsl_column_new(NSL_I64, n, NULL), *t = nsl_column_new(NSL_I64, n, NULL);
    int64_t per_tile = n / tiles + 1, i = 0;
    for (int tile = 0; i < n; tile++) {
      int64_t m = per_tile < n - i ? per_tile : n - i;
      for (int blk = 0; blk < blocks; blk++) {
        int64_t clock[6];
        for (int k = 0; k < 6; k++) clock[k] = (int64_t)tile * 1000000 + blk * 3;   /* each block over the tile's span */
        int64_t mb = blk == blocks - 1 ? m - m / blocks * (blocks - 1) : m / blocks;
        for (int64_t j = 0; j < mb; j++, i++) {
          int64_t g = fx_range(0, nthreads - 1);
          clock[g] += fx_range(0, 3) * (blk == 0 ? 4 : 5);   /* equal starts across the blocks now and then */
          nsl_i64(th)[i] = g * 7919;
          nsl_i64(t)[i] = clock[g];
        }
      }
    }
    const nsl_column *k2[2] = {th, t};
    int desc[2] = {0, 0};
    if (n <= 3000) check_against_reference(k2, desc, 2);
    else check_sorted_stable(k2, desc, 2);
    nsl_column_release(th);
    nsl_column_release(t);
  }
}

/* ---- unique, searchsorted ---------------------------------------------------------------- */

static void test_unique(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *c = FX_I64(3, NSL_NULL_I64, -1, 3, INT64_MAX, -1, INT64_MIN + 1);
  nsl_column *u = nsl_column_unique(c, &err);
  FX_EXPECT_I64(u, INT64_MIN + 1, -1, 3, INT64_MAX);
  nsl_column_release(u);
  nsl_column_release(c);

  c = FX_F64(2.5, NAN, -0.0, 0.0, -INFINITY, 2.5);
  u = nsl_column_unique(c, &err);
  FX_EXPECT_F64(u, -INFINITY, 0.0, 2.5);
  nsl_column_release(u);
  nsl_column_release(c);

  c = FX_I32(4, NSL_NULL_I32, 4, -7);
  u = nsl_column_unique(c, &err);
  assert_int_equal(u->type, NSL_I32);
  assert_int_equal(u->len, 2);
  assert_int_equal(nsl_i32(u)[0], -7);
  assert_int_equal(nsl_i32(u)[1], 4);
  nsl_column_release(u);
  nsl_column_release(c);

  c = FX_BOOL(1, 1, 0);
  u = nsl_column_unique(c, &err);
  assert_int_equal(u->len, 2);
  assert_int_equal(nsl_bool(u)[0], 0);
  assert_int_equal(nsl_bool(u)[1], 1);
  nsl_column_release(u);
  nsl_column_release(c);

  nsl_dict *d = nsl_dict_new();
  c = fx_str(d, 5, (const char *[]){"zeta", NULL, "alpha", "zeta", "mu"});
  u = nsl_column_unique(c, &err);
  assert_int_equal(u->type, NSL_STR);
  assert_ptr_equal(u->dict, d);
  assert_int_equal(u->len, 3);
  assert_string_equal(nsl_dict_str(d, nsl_i32(u)[0]), "alpha");
  assert_string_equal(nsl_dict_str(d, nsl_i32(u)[1]), "mu");
  assert_string_equal(nsl_dict_str(d, nsl_i32(u)[2]), "zeta");
  nsl_column_release(u);
  nsl_column_release(c);
  nsl_dict_release(d);

  c = nsl_column_new(NSL_I64, 0, NULL);
  u = nsl_column_unique(c, &err);
  assert_int_equal(u->len, 0);
  nsl_column_release(u);
  nsl_column_release(c);
  assert_null(nsl_column_unique(NULL, &err));
}

static void test_searchsorted(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *s = FX_I64(NSL_NULL_I64, 1, 3, 3, 3, 7);
  nsl_column *v = FX_I32(0, 1, 3, 4, 7, 8, NSL_NULL_I32);
  nsl_column *l = nsl_searchsorted(s, v, 0, &err), *r = nsl_searchsorted(s, v, 1, &err);
  FX_EXPECT_I64(l, 1, 1, 2, 5, 5, 6, 0);
  FX_EXPECT_I64(r, 1, 2, 5, 5, 6, 6, 1);
  nsl_column_release(l);
  nsl_column_release(r);
  nsl_column_release(v);
  /* doubles against integers compare by value */
  v = FX_F64(2.5, 3.0, -1e300, 1e300, NAN);
  l = nsl_searchsorted(s, v, 0, &err);
  FX_EXPECT_I64(l, 2, 2, 1, 6, 0);
  nsl_column_release(l);
  nsl_column_release(v);
  /* empty sorted column */
  nsl_column *e = nsl_column_new(NSL_I64, 0, NULL);
  v = FX_I64(5);
  l = nsl_searchsorted(e, v, 1, &err);
  FX_EXPECT_I64(l, 0);
  nsl_column_release(l);
  nsl_column_release(e);
  /* not sorted */
  nsl_column *bad = FX_I64(1, 3, 2);
  assert_null(nsl_searchsorted(bad, v, 0, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "row 2"));
  nsl_column_release(bad);
  nsl_column_release(v);
  nsl_column_release(s);
  /* strings by text; another dictionary is refused */
  nsl_dict *d = nsl_dict_new(), *d2 = nsl_dict_new();
  s = fx_str(d, 3, (const char *[]){"b", "d", "f"});
  v = fx_str(d, 4, (const char *[]){"a", "d", "e", "g"});
  r = nsl_searchsorted(s, v, 1, &err);
  FX_EXPECT_I64(r, 0, 2, 2, 3);
  nsl_column_release(r);
  nsl_column *v2 = fx_str(d2, 1, (const char *[]){"a"});
  assert_null(nsl_searchsorted(s, v2, 0, &err));
  nsl_column *num = FX_I64(1);
  assert_null(nsl_searchsorted(s, num, 0, &err));
  nsl_column_release(num);
  nsl_column_release(v2);
  nsl_column_release(v);
  nsl_column_release(s);
  nsl_dict_release(d);
  nsl_dict_release(d2);

  /* values mostly in ascending runs (times: a gallop from the place before), with repeats, dips and jumps
   * past either end, against a count of the sorted values below (left) or at most (right) each */
  fx_seed(23);
  for (int trial = 0; trial < 40; trial++) {
    int64_t n = fx_range(0, 400), m = fx_range(0, 3000);
    s = nsl_column_new(NSL_I64, n, NULL);
    v = nsl_column_new(NSL_I64, m, NULL);
    int64_t at = fx_range(-50, 50);
    for (int64_t i = 0; i < n; i++) nsl_i64(s)[i] = at += fx_range(0, 2) == 0 ? 0 : fx_range(1, 20);
    at = fx_range(-200, 100);
    for (int64_t j = 0; j < m; j++) {
      int k = (int)fx_range(0, 60);
      at = k == 0 ? fx_range(-200, 20 * n + 200) : k == 1 ? at - fx_range(1, 30) : at + fx_range(0, 6);
      nsl_i64(v)[j] = at;
    }
    for (int right = 0; right < 2; right++) {
      nsl_column *pos = nsl_searchsorted(s, v, right, &err);
      assert_non_null(pos);
      for (int64_t j = 0; j < m; j++) {
        int64_t want = 0, x = nsl_i64(v)[j];
        for (int64_t i = 0; i < n; i++) want += right ? nsl_i64(s)[i] <= x : nsl_i64(s)[i] < x;
        if (nsl_i64(pos)[j] != want)
          fail_msg("trial %d right %d value %lld: %lld, want %lld", trial, right, (long long)x,
                   (long long)nsl_i64(pos)[j], (long long)want);
      }
      nsl_column_release(pos);
    }
    nsl_column_release(s);
    nsl_column_release(v);
  }
}

static void test_searchsorted_random(void **state) {
  (void)state;
  nsl_error err = {0};
  fx_seed(99);
  for (int trial = 0; trial < 20; trial++) {
    int64_t n = fx_range(0, 500), m = fx_range(0, 200);
    nsl_column *s = nsl_column_new(NSL_I64, n, NULL), *v = nsl_column_new(NSL_I64, m, NULL);
    for (int64_t i = 0; i < n; i++) nsl_i64(s)[i] = fx_range(-50, 50);
    for (int64_t i = 0; i < m; i++) nsl_i64(v)[i] = fx_range(-60, 60);
    const nsl_column *k[1] = {s};
    nsl_column *p = nsl_argsort(k, NULL, 1, &err), *ss = nsl_column_gather(s, p, &err);
    for (int right = 0; right < 2; right++) {
      nsl_column *r = nsl_searchsorted(ss, v, right, &err);
      assert_non_null(r);
      for (int64_t j = 0; j < m; j++) {
        int64_t want = 0, x = nsl_i64(v)[j];
        for (int64_t i = 0; i < n; i++) want += right ? nsl_i64(ss)[i] <= x : nsl_i64(ss)[i] < x;
        assert_int_equal(nsl_i64(r)[j], want);
      }
      nsl_column_release(r);
    }
    nsl_column_release(p);
    nsl_column_release(ss);
    nsl_column_release(s);
    nsl_column_release(v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty_and_one),
      cmocka_unit_test(test_all_equal_is_identity),
      cmocka_unit_test(test_i64_extremes),
      cmocka_unit_test(test_i32_and_bool),
      cmocka_unit_test(test_f64_bits),
      cmocka_unit_test(test_strings_by_text),
      cmocka_unit_test(test_multikey_desc_stable),
      cmocka_unit_test(test_constant_keys_dropped),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_random_multikey_reference),
      cmocka_unit_test(test_random_large_radix_paths),
      cmocka_unit_test(test_radix_threads),
      cmocka_unit_test(test_scan_and_search_threads),
      cmocka_unit_test(test_trailing_keys_in_order),
      cmocka_unit_test(test_groups_in_order),
      cmocka_unit_test(test_runs_in_order),
      cmocka_unit_test(test_piles_in_order),
      cmocka_unit_test(test_windows_in_runs),
      cmocka_unit_test(test_unique),
      cmocka_unit_test(test_searchsorted),
      cmocka_unit_test(test_searchsorted_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
