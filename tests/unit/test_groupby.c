/* test_groupby.c -- nsl_groupby, nsl_group_agg and nsl_join_index against
 * hand-computed groups and O(n^2) brute-force references on random data. */
#include <float.h>
#include <stdio.h>

#include "kernel_fixtures.h"

/* Key equality as SQL GROUP BY sees it: NULL equals NULL, -0.0 equals 0.0. */
static int key_equal(const nsl_column *c, int64_t a, int64_t b) {
  int na = nsl_column_is_null(c, a), nb = nsl_column_is_null(c, b);
  if (na || nb) return na && nb;
  if (c->type == NSL_F64) return nsl_f64(c)[a] == nsl_f64(c)[b];
  return nsl_column_get_i64(c, a) == nsl_column_get_i64(c, b);
}

static int tuple_equal(const nsl_column *const *keys, int nk, int64_t a, int64_t b) {
  for (int k = 0; k < nk; k++)
    if (!key_equal(keys[k], a, b)) return 0;
  return 1;
}

/* Brute force: group ids in first-appearance order. */
static void check_groups(const nsl_column *const *keys, int nk) {
  nsl_error err = {0};
  nsl_groups g;
  assert_int_equal(nsl_groupby(keys, nk, &g, &err), NSL_OK);
  int64_t n = keys[0]->len, ng = 0;
  int64_t *want = malloc((size_t)(n ? n : 1) * sizeof *want);
  int64_t *first = malloc((size_t)(n ? n : 1) * sizeof *first);
  for (int64_t i = 0; i < n; i++) {
    want[i] = -1;
    for (int64_t j = 0; j < i; j++)
      if (tuple_equal(keys, nk, i, j)) {
        want[i] = want[j];
        break;
      }
    if (want[i] < 0) {
      first[ng] = i;
      want[i] = ng++;
    }
  }
  assert_int_equal(g.ngroups, ng);
  int64_t distinct = -1;   /* the count alone, as nsl_count_distinct finds it */
  assert_int_equal(nsl_count_distinct(keys, nk, &distinct, &err), NSL_OK);
  assert_int_equal(distinct, ng);
  fx_expect_i64(g.group_of, n, want);
  fx_expect_i64(g.first_row, ng, first);
  free(want);
  free(first);
  nsl_groups_free(&g);
}

static void test_groupby_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *k = FX_I64(5, 3, 5, NSL_NULL_I64, 3, NSL_NULL_I64);
  const nsl_column *keys[1] = {k};
  nsl_groups g;
  assert_int_equal(nsl_groupby(keys, 1, &g, &err), NSL_OK);
  assert_int_equal(g.ngroups, 3);
  FX_EXPECT_I64(g.group_of, 0, 1, 0, 2, 1, 2);
  FX_EXPECT_I64(g.first_row, 0, 1, 3);
  nsl_groups_free(&g);
  nsl_groups_free(&g);   /* idempotent */
  nsl_column_release(k);

  /* (device, stream, name) */
  nsl_dict *d = nsl_dict_new();
  nsl_column *dev = FX_I32(0, 0, 1, 0, 1), *stream = FX_I64(7, 7, 7, 8, 7);
  nsl_column *name = fx_str(d, 5, (const char *[]){"gemm", "gemm", "gemm", "gemm", NULL});
  const nsl_column *k3[3] = {dev, stream, name};
  assert_int_equal(nsl_groupby(k3, 3, &g, &err), NSL_OK);
  FX_EXPECT_I64(g.group_of, 0, 0, 1, 2, 3);
  nsl_groups_free(&g);
  check_groups(k3, 3);
  nsl_column_release(dev);
  nsl_column_release(stream);
  nsl_column_release(name);
  nsl_dict_release(d);

  nsl_column *f = FX_F64(0.0, NAN, -0.0, 1.5, NAN);
  const nsl_column *kf[1] = {f};
  assert_int_equal(nsl_groupby(kf, 1, &g, &err), NSL_OK);
  FX_EXPECT_I64(g.group_of, 0, 1, 0, 2, 1);
  nsl_groups_free(&g);
  nsl_column_release(f);
}

static void test_groupby_edges(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_groups g;
  nsl_column *e = nsl_column_new(NSL_I64, 0, NULL);
  const nsl_column *ke[1] = {e};
  assert_int_equal(nsl_groupby(ke, 1, &g, &err), NSL_OK);
  assert_int_equal(g.ngroups, 0);
  assert_int_equal(g.group_of->len, 0);
  assert_int_equal(g.first_row->len, 0);
  nsl_column *v = nsl_column_new(NSL_F64, 0, NULL);
  nsl_column *r = nsl_group_agg(&g, v, NSL_AGG_MEDIAN, 0, &err);
  assert_int_equal(r->len, 0);
  nsl_column_release(r);
  nsl_column_release(v);
  nsl_groups_free(&g);
  nsl_column_release(e);

  nsl_column *one = FX_I64(INT64_MAX);
  const nsl_column *k1[1] = {one};
  check_groups(k1, 1);
  nsl_column_release(one);

  nsl_column *same = nsl_column_new(NSL_I64, 5000, NULL);
  for (int i = 0; i < 5000; i++) nsl_i64(same)[i] = INT64_MIN + 1;
  const nsl_column *ks[1] = {same};
  assert_int_equal(nsl_groupby(ks, 1, &g, &err), NSL_OK);
  assert_int_equal(g.ngroups, 1);
  nsl_groups_free(&g);
  nsl_column_release(same);

  /* extremes: a range too wide for a direct table */
  nsl_column *ext = FX_I64(INT64_MAX, INT64_MIN + 1, NSL_NULL_I64, INT64_MAX, 0, INT64_MIN + 1);
  const nsl_column *kx[1] = {ext};
  assert_int_equal(nsl_groupby(kx, 1, &g, &err), NSL_OK);
  FX_EXPECT_I64(g.group_of, 0, 1, 2, 0, 3, 1);
  nsl_groups_free(&g);
  nsl_column_release(ext);

  /* bad input */
  nsl_column *a = FX_I64(1, 2), *b = FX_I64(1);
  const nsl_column *kb[2] = {a, b};
  assert_int_equal(nsl_groupby(kb, 2, &g, &err), NSL_ERR_ARG);
  assert_null(g.group_of);
  assert_int_equal(nsl_groupby(kb, 0, &g, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_groupby(kb, 1, NULL, &err), NSL_ERR_ARG);
  nsl_column_release(a);
  nsl_column_release(b);

  /* more keys than fit the on-stack tuple */
  nsl_column *cols[70];
  for (int k = 0; k < 70; k++) cols[k] = FX_I32(k % 3, 1, k % 3, 1);
  check_groups((const nsl_column *const *)cols, 70);
  for (int k = 0; k < 70; k++) nsl_column_release(cols[k]);
}

static nsl_column *random_col(nsl_type t, int64_t n, nsl_dict *d, int64_t span) {
  nsl_column *c = nsl_column_new(t, n, d);
  for (int64_t i = 0; i < n; i++) {
    int null = fx_range(0, 11) == 0;
    int64_t v = span ? fx_range(-span, span) : (int64_t)fx_next();
    switch (t) {
    case NSL_I64: nsl_i64(c)[i] = null || v == NSL_NULL_I64 ? NSL_NULL_I64 : v; break;
    case NSL_I32: nsl_i32(c)[i] = null ? NSL_NULL_I32 : (int32_t)(span ? v : v >> 33); break;
    case NSL_F64: nsl_f64(c)[i] = null ? NAN : (span ? (double)v / 2 : (double)v * 1e-3); break;
    case NSL_STR: {
      char buf[32];
      snprintf(buf, sizeof buf, "k%lld", (long long)(span ? v : v % 1000));
      nsl_i32(c)[i] = null ? -1 : fx_id(d, buf, strlen(buf));
      break;
    }
    case NSL_BOOL: nsl_bool(c)[i] = (uint8_t)(v & 1); break;
    }
  }
  return c;
}

static void test_groupby_random_reference(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  fx_seed(31337);
  for (int trial = 0; trial < 40; trial++) {
    int64_t n = fx_range(1, 1500);
    int nk = (int)fx_range(1, 3);
    nsl_column *cols[3];
    for (int k = 0; k < nk; k++) {
      int64_t span = trial % 4 == 0 ? 0 : fx_range(1, 40);   /* 0: full range (hash table) */
      cols[k] = random_col((nsl_type)fx_range(0, 4), n, d, span);
    }
    check_groups((const nsl_column *const *)cols, nk);
    for (int k = 0; k < nk; k++) nsl_column_release(cols[k]);
  }
  nsl_dict_release(d);
}

/* Integer keys only, in small ranges (a direct table): the positions are
 * read straight from the columns; NULLs, negative values, mixed I32 / I64
 * keys, keys of one value (not read), all NULL, or one value and NULLs,
 * against the brute force. */
static void test_groupby_int_keys_reference(void **state) {
  (void)state;
  fx_seed(4242);
  for (int trial = 0; trial < 90; trial++) {
    int64_t n = fx_range(1, 3000);
    int nk = (int)fx_range(1, 4);
    nsl_column *cols[4];
    for (int k = 0; k < nk; k++) {
      nsl_type t = fx_range(0, 1) ? NSL_I32 : NSL_I64;
      int64_t kind = fx_range(0, 5), v = fx_range(-3, 3);
      cols[k] = random_col(t, n, NULL, fx_range(1, 30));
      for (int64_t i = 0; kind < 3 && i < n; i++) {   /* 0: one value; 1: all NULL; 2: one value and NULLs */
        int null = kind == 1 || (kind == 2 && i % 7 == 3);
        if (t == NSL_I32) nsl_i32(cols[k])[i] = null ? NSL_NULL_I32 : (int32_t)v;
        else nsl_i64(cols[k])[i] = null ? NSL_NULL_I64 : v;
      }
    }
    check_groups((const nsl_column *const *)cols, nk);
    for (int k = 0; k < nk; k++) nsl_column_release(cols[k]);
  }
}

/* nsl_count_distinct over many rows: (report, pid, correlation id) with wide,
 * sparse ids (sorted as mixed-radix numbers), some repeated, NULLs among
 * them, and narrow keys (a direct table), against nsl_groupby's count. */
static void test_count_distinct_large(void **state) {
  (void)state;
  nsl_error err = {0};
  fx_seed(777);
  for (int trial = 0; trial < 6; trial++) {
    int64_t n = fx_range(50000, 300000);
    nsl_column *rep = nsl_column_new(NSL_I32, n, NULL), *pid = nsl_column_new(NSL_I32, n, NULL),
               *corr = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      nsl_i32(rep)[i] = (int32_t)fx_range(0, 3);
      nsl_i32(pid)[i] = trial == 5 && i % 11 == 0 ? NSL_NULL_I32 : (int32_t)(1000 + fx_range(0, 2) * 977);
      int64_t id = trial < 3 ? (int64_t)fx_range(0, 1 << 30) * 4099 : fx_range(0, n);   /* wide, or narrow */
      if (i > 0 && i % 13 == 0) id = nsl_i64(corr)[fx_range(0, i - 1)];                  /* repeats */
      nsl_i64(corr)[i] = trial == 4 && i % 17 == 0 ? NSL_NULL_I64 : id;
    }
    const nsl_column *keys[3] = {rep, pid, corr};
    for (int nk = 1; nk <= 3; nk++) {
      const nsl_column *const *kk = nk == 1 ? keys + 2 : nk == 2 ? keys + 1 : keys;
      nsl_groups g;
      assert_int_equal(nsl_groupby(kk, nk, &g, &err), NSL_OK);
      int64_t count = -1;
      assert_int_equal(nsl_count_distinct(kk, nk, &count, &err), NSL_OK);
      if (count != g.ngroups)
        fail_msg("trial %d, %d keys: %lld distinct, group-by %lld", trial, nk, (long long)count, (long long)g.ngroups);
      nsl_groups_free(&g);
    }
    nsl_column_release(rep);
    nsl_column_release(pid);
    nsl_column_release(corr);
  }
  int64_t count = -1;   /* no rows; bad keys */
  nsl_column *none = nsl_column_new(NSL_I64, 0, NULL), *one = nsl_column_new(NSL_I64, 1, NULL);
  const nsl_column *k0[1] = {none}, *k2[2] = {none, one};
  assert_int_equal(nsl_count_distinct(k0, 1, &count, &err), NSL_OK);
  assert_int_equal(count, 0);
  assert_int_equal(nsl_count_distinct(k2, 2, &count, &err), NSL_ERR_ARG);
  nsl_column_release(none);
  nsl_column_release(one);
}

/* Group-by over more rows than one thread takes (the rows' positions in a
 * direct table found in parts): group ids, first rows and counts the same
 * on 1, 2, 3 and 7 threads, for integer keys read straight from their
 * columns, string and integer keys together, a double key (read through
 * its codes), and groups first seen past the first part. */
static void test_groupby_large_threads(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  fx_seed(2718);
  const int64_t n = ((int64_t)1 << 21) + 333;
  nsl_column *i64 = random_col(NSL_I64, n, d, 40), *str = random_col(NSL_STR, n, d, 12),
             *i32 = random_col(NSL_I32, n, d, 9), *f64 = random_col(NSL_F64, n, d, 40);
  nsl_column *late = nsl_column_new(NSL_I64, n, NULL);
  for (int64_t i = 0; i < n; i++) nsl_i64(late)[i] = i < n / 2 ? fx_range(0, 10) : fx_range(0, 20);
  const nsl_column *sets[4][2] = {{i64, NULL}, {str, i32}, {f64, NULL}, {late, NULL}};
  const int nks[4] = {1, 2, 1, 1};
  const char *threads[] = {"1", "2", "3", "7"};
  for (int s = 0; s < 4; s++) {
    nsl_groups want = {0};
    for (int t = 0; t < 4; t++) {
      setenv("NSL_THREADS", threads[t], 1);
      nsl_groups g;
      nsl_error err = {0};
      assert_int_equal(nsl_groupby(sets[s], nks[s], &g, &err), NSL_OK);
      if (t == 0) {
        want = g;
        continue;
      }
      assert_int_equal(g.ngroups, want.ngroups);
      if (memcmp(nsl_i64(g.group_of), nsl_i64(want.group_of), (size_t)n * sizeof(int64_t)) != 0 ||
          memcmp(nsl_i64(g.first_row), nsl_i64(want.first_row), (size_t)g.ngroups * sizeof(int64_t)) != 0)
        fail_msg("key set %d: groups differ on %s threads", s, threads[t]);
      nsl_groups_free(&g);
    }
    /* the one-thread result: ids by first appearance, each row in its first row's group */
    int64_t next = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t g = nsl_i64(want.group_of)[i];
      if (g < 0 || g > next) fail_msg("key set %d row %lld: group %lld", s, (long long)i, (long long)g);
      if (g == next) {
        if (nsl_i64(want.first_row)[g] != i) fail_msg("key set %d: first row of group %lld", s, (long long)g);
        next++;
      } else if (!tuple_equal(sets[s], nks[s], i, nsl_i64(want.first_row)[g]))
        fail_msg("key set %d row %lld: not its group's key", s, (long long)i);
    }
    assert_int_equal(next, want.ngroups);
    nsl_groups_free(&want);
  }
  unsetenv("NSL_THREADS");
  nsl_column *cols[] = {i64, str, i32, f64, late};
  for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) nsl_column_release(cols[k]);
  nsl_dict_release(d);
}

/* ---- aggregates ---------------------------------------------------------------- */

static void test_agg_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  /* groups: a = rows 0,2,4,5; b = rows 1,3; c = row 6 (only a NULL value) */
  nsl_dict *d = nsl_dict_new();
  nsl_column *key = fx_str(d, 7, (const char *[]){"a", "b", "a", "b", "a", "a", "c"});
  nsl_column *dur = FX_I64(4, 10, 1, 20, NSL_NULL_I64, 3, NSL_NULL_I64);
  const nsl_column *keys[1] = {key};
  nsl_groups g;
  assert_int_equal(nsl_groupby(keys, 1, &g, &err), NSL_OK);
  assert_int_equal(g.ngroups, 3);
  nsl_column *r;
  r = nsl_group_agg(&g, dur, NSL_AGG_COUNT, 0, &err);
  FX_EXPECT_I64(r, 3, 2, 0);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_SUM, 0, &err);
  FX_EXPECT_I64(r, 8, 30, NSL_NULL_I64);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_MIN, 0, &err);
  FX_EXPECT_I64(r, 1, 10, NSL_NULL_I64);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_MAX, 0, &err);
  FX_EXPECT_I64(r, 4, 20, NSL_NULL_I64);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_MEAN, 0, &err);
  FX_EXPECT_F64(r, 8.0 / 3, 15, NAN);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_MEDIAN, 0, &err);
  FX_EXPECT_F64(r, 3, 15, NAN);   /* b: mean of the two middle values */
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_QUANTILE, 0.25, &err);
  FX_EXPECT_F64(r, 2, 12.5, NAN);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_STD, 0, &err);
  assert_true(fabs(nsl_f64(r)[0] - sqrt(7.0 / 3.0)) < 1e-15);   /* values 4 1 3: mean 8/3 */
  assert_true(fabs(nsl_f64(r)[1] - sqrt(50.0)) < 1e-14);
  assert_true(isnan(nsl_f64(r)[2]));
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_FIRST, 0, &err);
  FX_EXPECT_I64(r, 4, 10, NSL_NULL_I64);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_LAST, 0, &err);
  FX_EXPECT_I64(r, 3, 20, NSL_NULL_I64);
  nsl_column_release(r);
  r = nsl_group_agg(&g, dur, NSL_AGG_COUNT_DISTINCT, 0, &err);
  FX_EXPECT_I64(r, 3, 2, 0);
  nsl_column_release(r);

  /* strings: min/max by text, first/last keep ids, distinct count */
  nsl_column *nm = fx_str(d, 7, (const char *[]){"zz", "m", "aa", NULL, "zz", "b", NULL});
  r = nsl_group_agg(&g, nm, NSL_AGG_MIN, 0, &err);
  assert_int_equal(r->type, NSL_STR);
  assert_string_equal(nsl_dict_str(d, nsl_i32(r)[0]), "aa");
  assert_string_equal(nsl_dict_str(d, nsl_i32(r)[1]), "m");
  assert_int_equal(nsl_i32(r)[2], -1);
  nsl_column_release(r);
  r = nsl_group_agg(&g, nm, NSL_AGG_MAX, 0, &err);
  assert_string_equal(nsl_dict_str(d, nsl_i32(r)[0]), "zz");
  nsl_column_release(r);
  r = nsl_group_agg(&g, nm, NSL_AGG_LAST, 0, &err);
  assert_string_equal(nsl_dict_str(d, nsl_i32(r)[0]), "b");
  assert_string_equal(nsl_dict_str(d, nsl_i32(r)[1]), "m");
  nsl_column_release(r);
  r = nsl_group_agg(&g, nm, NSL_AGG_COUNT_DISTINCT, 0, &err);
  FX_EXPECT_I64(r, 3, 1, 0);
  nsl_column_release(r);
  r = nsl_group_agg(&g, nm, NSL_AGG_COUNT, 0, &err);
  FX_EXPECT_I64(r, 4, 1, 0);
  nsl_column_release(r);
  assert_null(nsl_group_agg(&g, nm, NSL_AGG_SUM, 0, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl_group_agg(&g, nm, NSL_AGG_MEDIAN, 0, &err));
  nsl_column_release(nm);

  /* doubles and bools */
  nsl_column *f = FX_F64(0.5, NAN, 1.5, 2.0, -1.0, NAN, 3.0);
  r = nsl_group_agg(&g, f, NSL_AGG_SUM, 0, &err);
  FX_EXPECT_F64(r, 1.0, 2.0, 3.0);
  nsl_column_release(r);
  r = nsl_group_agg(&g, f, NSL_AGG_MAX, 0, &err);
  FX_EXPECT_F64(r, 1.5, 2.0, 3.0);
  nsl_column_release(r);
  r = nsl_group_agg(&g, f, NSL_AGG_STD, 0, &err);
  assert_true(fabs(nsl_f64(r)[0] - sqrt(19.0 / 12.0)) < 1e-15);   /* 0.5 1.5 -1 */
  assert_true(nsl_f64(r)[1] == 0.0 && nsl_f64(r)[2] == 0.0);       /* one value: 0, as nsys stats */
  nsl_column_release(r);
  nsl_column *bl = FX_BOOL(1, 1, 0, 1, 1, 0, 0);
  r = nsl_group_agg(&g, bl, NSL_AGG_SUM, 0, &err);
  FX_EXPECT_I64(r, 2, 2, 0);
  nsl_column_release(r);
  r = nsl_group_agg(&g, bl, NSL_AGG_MIN, 0, &err);
  FX_EXPECT_BOOL(r, 0, 1, 0);
  nsl_column_release(r);
  nsl_column_release(bl);

  /* bad input */
  assert_null(nsl_group_agg(&g, dur, NSL_AGG_QUANTILE, 1.5, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl_group_agg(&g, dur, (nsl_agg)99, 0, &err));
  nsl_column *short1 = FX_I64(1);
  assert_null(nsl_group_agg(&g, short1, NSL_AGG_SUM, 0, &err));
  assert_non_null(strstr(err.msg, "rows"));
  g.checked = 0;                /* group ids edited by hand: each aggregation checks them */
  nsl_i64(g.group_of)[2] = 7;   /* a group id past ngroups */
  assert_null(nsl_group_agg(&g, dur, NSL_AGG_SUM, 0, &err));
  assert_non_null(strstr(err.msg, "group 7"));
  nsl_i64(g.group_of)[2] = -1;   /* a row left out */
  r = nsl_group_agg(&g, dur, NSL_AGG_SUM, 0, &err);
  FX_EXPECT_I64(r, 7, 30, NSL_NULL_I64);
  nsl_column_release(r);
  assert_null(nsl_group_agg(NULL, dur, NSL_AGG_SUM, 0, &err));
  nsl_column_release(short1);
  nsl_column_release(f);
  nsl_groups_free(&g);
  nsl_column_release(dur);
  nsl_column_release(key);
  nsl_dict_release(d);
}

static void test_agg_int_sum_exact(void **state) {
  (void)state;
  nsl_error err = {0};
  /* sums past 2^53 stay exact; MEAN of huge values is from the exact sum */
  nsl_column *key = FX_I32(0, 0, 0, 1);
  nsl_column *v = FX_I64(INT64_C(4611686018427387904), INT64_C(4611686018427387903), 0, 7);
  const nsl_column *keys[1] = {key};
  nsl_groups g;
  assert_int_equal(nsl_groupby(keys, 1, &g, &err), NSL_OK);
  nsl_column *r = nsl_group_agg(&g, v, NSL_AGG_SUM, 0, &err);
  FX_EXPECT_I64(r, INT64_MAX, 7);
  nsl_column_release(r);
  r = nsl_group_agg(&g, v, NSL_AGG_MEAN, 0, &err);
  FX_EXPECT_F64(r, 9223372036854775807.0 / 3, 7);
  nsl_column_release(r);
  r = nsl_group_agg(&g, v, NSL_AGG_MEDIAN, 0, &err);
  FX_EXPECT_F64(r, 4611686018427387903.0, 7);
  nsl_column_release(r);
  nsl_groups_free(&g);
  nsl_column_release(key);
  nsl_column_release(v);
}

/* Rows of `nsys stats` reports (osrt_sum, cuda_api_sum, nvtx_sum) published
 * with their inputs recoverable: groups of one to three calls whose Min, Med
 * and Max give every value.  From the README of the public repository
 * ayush-os/nsight-systems-deep-dive (nsys profile --stats=true on an A100).
 * Total, Avg, Med, StdDev as nsys printed them (one decimal). */
static void test_agg_matches_nsys_stats(void **state) {
  (void)state;
  nsl_error err = {0};
  static const struct {
    int64_t v[3];
    int n;
    double total, avg, med, std;
  } rows[] = {
      {{2971823, 333015608}, 2, 335987431, 167993715.5, 167993715.5, 233376198.5},   /* sem_wait */
      {{8929, 11488}, 2, 20417, 10208.5, 10208.5, 1809.5},                           /* putc */
      {{6098, 18247, 23816}, 3, 48161, 16053.7, 18247.0, 9060.3},                    /* cudaMemcpy */
      {{2925, 9850, 166679}, 3, 179454, 59818.0, 9850.0, 92609.1},                   /* cudaFree */
      {{4697, 6584, 106901129}, 3, 106912410, 35637470.0, 6584.0, 61716139.1},       /* cudaMalloc */
      {{9165}, 1, 9165, 9165.0, 9165.0, 0.0},                                        /* pipe2: one call */
  };
  int nr = (int)(sizeof rows / sizeof *rows);
  nsl_column *key = nsl_column_new(NSL_I64, 14, NULL), *dur = nsl_column_new(NSL_I64, 14, NULL);
  int64_t i = 0;
  for (int pass = 0; pass < 3; pass++)   /* interleave the groups' rows */
    for (int r = 0; r < nr; r++)
      if (pass < rows[r].n) {
        nsl_i64(key)[i] = r;
        nsl_i64(dur)[i++] = rows[r].v[(pass + r) % rows[r].n];
      }
  assert_int_equal(i, 14);
  const nsl_column *keys[1] = {key};
  nsl_groups g;
  assert_int_equal(nsl_groupby(keys, 1, &g, &err), NSL_OK);
  nsl_column *sum = nsl_group_agg(&g, dur, NSL_AGG_SUM, 0, &err);
  nsl_column *avg = nsl_group_agg(&g, dur, NSL_AGG_MEAN, 0, &err);
  nsl_column *med = nsl_group_agg(&g, dur, NSL_AGG_MEDIAN, 0, &err);
  nsl_column *std = nsl_group_agg(&g, dur, NSL_AGG_STD, 0, &err);
  for (int r = 0; r < nr; r++) {
    assert_int_equal(nsl_i64(sum)[r], (int64_t)rows[r].total);
    assert_true(round(nsl_f64(avg)[r] * 10) == round(rows[r].avg * 10));
    assert_true(nsl_f64(med)[r] == rows[r].med);
    if (round(nsl_f64(std)[r] * 10) != round(rows[r].std * 10))
      fail_msg("row %d: std %.3f, nsys printed %.1f", r, nsl_f64(std)[r], rows[r].std);
  }
  nsl_column_release(sum);
  nsl_column_release(avg);
  nsl_column_release(med);
  nsl_column_release(std);
  nsl_groups_free(&g);
  nsl_column_release(key);
  nsl_column_release(dur);
}

/* Kernels of a real export grouped by (device, name): every aggregate
 * against SQL over the same file (median by row numbers, variance by the
 * two-pass formula, both in SQL). */
static void test_real_kernels_against_sql(void **state) {
  (void)state;
  sqlite3 *db = fx_sql_open("pytorch_nccl_2gpu_2026.2.sqlite");
  nsl_dict *d = nsl_dict_new();
  nsl_error err = {0};
  nsl_column *k[3];
  int64_t n = fx_sql_columns(db,
                             "SELECT k.deviceId, s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                             "JOIN StringIds s ON s.id = k.shortName ORDER BY k.start, k.rowid",
                             "isi", k, d);
  assert_true(n > 1000);
  const nsl_column *keys[2] = {k[0], k[1]};
  nsl_groups g;
  assert_int_equal(nsl_groupby(keys, 2, &g, &err), NSL_OK);
  nsl_column *agg[8];
  nsl_agg which[8] = {NSL_AGG_COUNT, NSL_AGG_SUM, NSL_AGG_MIN, NSL_AGG_MAX,
                      NSL_AGG_MEAN,  NSL_AGG_MEDIAN, NSL_AGG_STD, NSL_AGG_QUANTILE};
  for (int a = 0; a < 8; a++) assert_non_null(agg[a] = nsl_group_agg(&g, k[2], which[a], 0.9, &err));
  nsl_column *dev = nsl_column_gather(k[0], g.first_row, &err), *name = nsl_column_gather(k[1], g.first_row, &err);

  nsl_column *q[10];
  int64_t nq = fx_sql_columns(
      db,
      "WITH v AS (SELECT k.deviceId AS dev, s.value AS name, k.end - k.start AS d "
      "           FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName), "
      "r AS (SELECT dev, name, d, ROW_NUMBER() OVER (PARTITION BY dev, name ORDER BY d) AS rn, "
      "      COUNT(*) OVER (PARTITION BY dev, name) AS c, AVG(d) OVER (PARTITION BY dev, name) AS m FROM v) "
      "SELECT dev, name, COUNT(*), SUM(d), MIN(d), MAX(d), AVG(d), "
      "  AVG(CASE WHEN rn IN ((c + 1) / 2, (c + 2) / 2) THEN d END), "
      "  CASE WHEN COUNT(*) > 1 THEN SUM((d - m) * (d - m)) / (COUNT(*) - 1) ELSE 0 END, "
      /* p90 by linear interpolation: lower order statistic + fraction of the step */
      "  MAX(CASE WHEN rn = CAST(0.9 * (c - 1) AS INTEGER) + 1 THEN d END) + (0.9 * (MAX(c) - 1) - "
      "  CAST(0.9 * (MAX(c) - 1) AS INTEGER)) * (COALESCE(MAX(CASE WHEN rn = CAST(0.9 * (c - 1) AS INTEGER) + 2 "
      "  THEN d END), MAX(CASE WHEN rn = CAST(0.9 * (c - 1) AS INTEGER) + 1 THEN d END)) - "
      "  MAX(CASE WHEN rn = CAST(0.9 * (c - 1) AS INTEGER) + 1 THEN d END)) "
      "FROM r GROUP BY dev, name",
      "isiiiiffff", q, d);
  assert_int_equal(nq, g.ngroups);
  for (int64_t r = 0; r < nq; r++) {
    int64_t gi = -1;
    for (int64_t j = 0; j < g.ngroups && gi < 0; j++)
      if (nsl_i64(dev)[j] == nsl_i64(q[0])[r] && nsl_i32(name)[j] == nsl_i32(q[1])[r]) gi = j;
    assert_true(gi >= 0);
    assert_int_equal(nsl_i64(agg[0])[gi], nsl_i64(q[2])[r]);
    assert_int_equal(nsl_i64(agg[1])[gi], nsl_i64(q[3])[r]);
    assert_int_equal(nsl_i64(agg[2])[gi], nsl_i64(q[4])[r]);
    assert_int_equal(nsl_i64(agg[3])[gi], nsl_i64(q[5])[r]);
    double mean = nsl_f64(q[6])[r], med = nsl_f64(q[7])[r], sd = sqrt(nsl_f64(q[8])[r]), p90 = nsl_f64(q[9])[r];
    assert_true(fabs(nsl_f64(agg[4])[gi] - mean) <= 1e-9 * fabs(mean));
    assert_true(nsl_f64(agg[5])[gi] == med);
    if (!(fabs(nsl_f64(agg[6])[gi] - sd) <= 1e-9 * (1 + sd)))
      fail_msg("group %lld: std %.17g, SQL %.17g", (long long)gi, nsl_f64(agg[6])[gi], sd);
    if (!(fabs(nsl_f64(agg[7])[gi] - p90) <= 1e-9 * (1 + p90)))
      fail_msg("group %lld: p90 %.17g, SQL %.17g", (long long)gi, nsl_f64(agg[7])[gi], p90);
  }
  for (int a = 0; a < 8; a++) nsl_column_release(agg[a]);
  for (int c = 0; c < 10; c++) nsl_column_release(q[c]);
  for (int c = 0; c < 3; c++) nsl_column_release(k[c]);
  nsl_column_release(dev);
  nsl_column_release(name);
  nsl_groups_free(&g);
  nsl_dict_release(d);
  sqlite3_close(db);
}

/* Brute-force reference of one aggregate for one group. */
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void check_agg_random(const nsl_groups *g, const nsl_column *v, nsl_agg agg, double q) {
  nsl_error err = {0};
  nsl_column *r = nsl_group_agg(g, v, agg, q, &err);
  if (!r) fail_msg("agg %d: %s", agg, err.msg);
  assert_int_equal(r->len, g->ngroups);
  int64_t n = v->len;
  double *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
  int64_t *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
  for (int64_t k = 0; k < g->ngroups; k++) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
      if (nsl_i64(g->group_of)[i] == k && !nsl_column_is_null(v, i)) {
        vals[m] = nsl_column_get_f64(v, i);
        rows[m++] = i;
      }
    double want = NAN;
    int64_t iwant = NSL_NULL_I64;
    switch (agg) {
    case NSL_AGG_COUNT: iwant = m; break;
    case NSL_AGG_SUM:
      if (m) {
        if (v->type == NSL_F64) {
          want = 0;
          for (int64_t i = 0; i < m; i++) want += vals[i];
        } else {
          iwant = 0;
          for (int64_t i = 0; i < m; i++) iwant += nsl_column_get_i64(v, rows[i]);
        }
      }
      break;
    case NSL_AGG_MEAN:
    case NSL_AGG_STD:
      if (m) {
        double s = 0;
        for (int64_t i = 0; i < m; i++) s += vals[i];
        want = s / (double)m;
        if (agg == NSL_AGG_STD) {
          double ss = 0;
          for (int64_t i = 0; i < m; i++) ss += (vals[i] - s / (double)m) * (vals[i] - s / (double)m);
          want = m == 1 ? 0 : sqrt(ss / (double)(m - 1));
        }
      }
      break;
    case NSL_AGG_MIN:
    case NSL_AGG_MAX:
      if (m) {
        int64_t best = rows[0];
        for (int64_t i = 1; i < m; i++) {
          int better = agg == NSL_AGG_MIN ? vals[i] < nsl_column_get_f64(v, best)
                                          : vals[i] > nsl_column_get_f64(v, best);
          if (v->type == NSL_STR) {
            int c = strcmp(nsl_dict_str(v->dict, nsl_i32(v)[rows[i]]), nsl_dict_str(v->dict, nsl_i32(v)[best]));
            better = agg == NSL_AGG_MIN ? c < 0 : c > 0;
          }
          if (better) best = rows[i];
        }
        iwant = best;   /* a row: compared by value below */
      }
      break;
    case NSL_AGG_FIRST: iwant = m ? rows[0] : -1; break;
    case NSL_AGG_LAST: iwant = m ? rows[m - 1] : -1; break;
    case NSL_AGG_MEDIAN:
    case NSL_AGG_QUANTILE:
      if (m) {
        qsort(vals, (size_t)m, sizeof *vals, cmp_dbl);
        double qq = agg == NSL_AGG_MEDIAN ? 0.5 : q, pos = qq * (double)(m - 1);
        int64_t lo = (int64_t)floor(pos);
        want = lo >= m - 1 ? vals[m - 1] : vals[lo] + (vals[lo + 1] - vals[lo]) * (pos - (double)lo);
      }
      break;
    case NSL_AGG_COUNT_DISTINCT: {
      iwant = 0;
      for (int64_t i = 0; i < m; i++) {
        int seen = 0;
        for (int64_t j = 0; j < i && !seen; j++) seen = key_equal(v, rows[i], rows[j]);
        iwant += !seen;
      }
      break;
    }
    }
    switch (agg) {
    case NSL_AGG_COUNT:
    case NSL_AGG_COUNT_DISTINCT:
      if (nsl_i64(r)[k] != iwant) fail_msg("agg %d group %lld: %lld, want %lld", agg, (long long)k,
                                          (long long)nsl_i64(r)[k], (long long)iwant);
      break;
    case NSL_AGG_SUM:
      if (v->type == NSL_F64) assert_true(fx_same_f64(nsl_f64(r)[k], want) || fabs(nsl_f64(r)[k] - want) < 1e-9);
      else assert_int_equal(nsl_i64(r)[k], iwant);
      break;
    case NSL_AGG_MIN:
    case NSL_AGG_MAX:
    case NSL_AGG_FIRST:
    case NSL_AGG_LAST:
      assert_int_equal(r->type, v->type);
      if (iwant < 0 || iwant == NSL_NULL_I64) assert_true(v->type == NSL_BOOL || nsl_column_is_null(r, k));
      else if (v->type == NSL_F64) assert_true(nsl_f64(r)[k] == nsl_f64(v)[iwant]);
      else assert_int_equal(nsl_column_get_i64(r, k), nsl_column_get_i64(v, iwant));
      break;
    default: {
      double got = nsl_f64(r)[k];
      if (!(fx_same_f64(got, want) || fabs(got - want) <= 1e-9 * (1 + fabs(want))))
        fail_msg("agg %d group %lld: %.17g, want %.17g", agg, (long long)k, got, want);
    }
    }
  }
  free(vals);
  free(rows);
  nsl_column_release(r);
}

/* check_agg_random for every aggregate the values' type takes. */
static void check_every_agg(const nsl_groups *g, const nsl_column *v) {
  for (int a = NSL_AGG_COUNT; a <= NSL_AGG_COUNT_DISTINCT; a++) {
    int numeric_only = a == NSL_AGG_SUM || a == NSL_AGG_MEAN || a == NSL_AGG_MEDIAN ||
                       a == NSL_AGG_QUANTILE || a == NSL_AGG_STD;
    if (v->type == NSL_STR && numeric_only) continue;
    check_agg_random(g, v, (nsl_agg)a, a == NSL_AGG_QUANTILE ? 0.9 : 0);
  }
}

static void test_agg_random_reference(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  nsl_error err = {0};
  fx_seed(4242);
  for (int trial = 0; trial < 24; trial++) {
    int64_t n = fx_range(1, 1200);
    nsl_column *key = random_col(trial % 2 ? NSL_I32 : NSL_STR, n, d, fx_range(1, 30));
    const nsl_column *keys[1] = {key};
    nsl_groups g;
    assert_int_equal(nsl_groupby(keys, 1, &g, &err), NSL_OK);
    nsl_type vt = (nsl_type)(trial % 5);
    nsl_column *v = random_col(vt, n, d, trial % 3 ? 1000 : 4);
    check_every_agg(&g, v);
    nsl_groups_free(&g);
    nsl_column_release(v);
    nsl_column_release(key);
  }
  nsl_dict_release(d);
}

/* Groups given by number (nsl_groups_by_id): each aggregate equals the brute
 * force over the rows whose id is the group (negative ids and NULL in none),
 * empty groups included; an id at or above the count fails, naming it. */
static void test_groups_by_id(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  nsl_error err = {0};
  fx_seed(777);
  for (int trial = 0; trial < 16; trial++) {
    int64_t n = fx_range(0, 900), span = fx_range(1, 20);
    nsl_column *ids = random_col(trial % 2 ? NSL_I32 : NSL_I64, n, NULL, span);
    nsl_groups g;
    int64_t ng = span + 1 + trial % 3;   /* some groups never named */
    assert_int_equal(nsl_groups_by_id(ids, ng, &g, &err), NSL_OK);
    assert_int_equal(g.ngroups, ng);
    assert_int_equal(g.group_of->len, n);
    for (int64_t i = 0; i < n; i++)   /* the ids as they are: NULL and negative stay out of every group */
      assert_true(nsl_column_is_null(ids, i) ? nsl_i64(g.group_of)[i] < 0
                                             : nsl_i64(g.group_of)[i] == nsl_column_get_i64(ids, i));
    nsl_type vt = (nsl_type)(trial % 5);
    nsl_column *v = random_col(vt, n, d, trial % 3 ? 1000 : 4);
    check_every_agg(&g, v);
    nsl_groups_free(&g);
    if (n > 0 && span > 1) {   /* one group fewer than the largest id needs */
      int64_t top = -1;
      for (int64_t i = 0; i < n; i++)
        if (!nsl_column_is_null(ids, i) && nsl_column_get_i64(ids, i) > top) top = nsl_column_get_i64(ids, i);
      if (top >= 0) {
        assert_int_equal(nsl_groups_by_id(ids, top, &g, &err), NSL_ERR_ARG);
        assert_non_null(strstr(err.msg, "not below"));
        assert_null(g.group_of);
      }
    }
    nsl_column_release(v);
    nsl_column_release(ids);
  }
  nsl_column *f = FX_F64(1.0, 2.0);
  nsl_groups g;
  assert_int_equal(nsl_groups_by_id(f, 3, &g, &err), NSL_ERR_ARG);
  nsl_column_release(f);
  nsl_column *neg = FX_I64(-1, -5);
  assert_int_equal(nsl_groups_by_id(neg, 0, &g, &err), NSL_OK);   /* no group, no row in one */
  nsl_column *r = nsl_group_agg(&g, neg, NSL_AGG_COUNT, 0, &err);
  assert_non_null(r);
  assert_int_equal(r->len, 0);
  nsl_column_release(r);
  nsl_groups_free(&g);
  nsl_column_release(neg);
  nsl_dict_release(d);
}

/* ---- join ------------------------------------------------------------------------ */

static void test_join_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  /* kernels (report, corr) against api (report, corr); api has a duplicate */
  nsl_column *kr = FX_I32(0, 0, 1, 1, 0, NSL_NULL_I32), *kc = FX_I64(10, 11, 10, 99, 12, 10);
  nsl_column *ar = FX_I32(1, 0, 0, 0, 0), *ac = FX_I64(10, 12, 10, 12, NSL_NULL_I64);
  const nsl_column *left[2] = {kr, kc}, *right[2] = {ar, ac};
  nsl_column *j = nsl_join_index(left, right, 2, &err);
  FX_EXPECT_I64(j, 2, -1, 0, -1, 1, -1);
  nsl_column_release(j);
  /* I64 report on one side, I32 on the other: same values */
  nsl_column *kr64 = FX_I64(0, 0, 1, 1, 0, NSL_NULL_I64);
  const nsl_column *left64[2] = {kr64, kc};
  j = nsl_join_index(left64, right, 2, &err);
  FX_EXPECT_I64(j, 2, -1, 0, -1, 1, -1);
  nsl_column_release(j);
  /* doubles against integers */
  nsl_column *fc = FX_F64(10.0, 10.5, NAN);
  const nsl_column *lf[1] = {fc}, *rc[1] = {ac};
  j = nsl_join_index(lf, rc, 1, &err);
  FX_EXPECT_I64(j, 0, -1, -1);
  nsl_column_release(j);
  /* empty sides */
  nsl_column *e = nsl_column_new(NSL_I64, 0, NULL);
  const nsl_column *le[1] = {e};
  j = nsl_join_index(le, rc, 1, &err);
  assert_int_equal(j->len, 0);
  nsl_column_release(j);
  j = nsl_join_index(rc, le, 1, &err);
  FX_EXPECT_I64(j, -1, -1, -1, -1, -1);
  nsl_column_release(j);
  nsl_column_release(e);
  /* strings across dictionaries match by text */
  nsl_dict *d1 = nsl_dict_new(), *d2 = nsl_dict_new();
  nsl_column *s1 = fx_str(d1, 4, (const char *[]){"x", "y", NULL, "w"});
  nsl_column *s2 = fx_str(d2, 3, (const char *[]){"q", "y", "x"});
  const nsl_column *ls[1] = {s1}, *rs[1] = {s2};
  j = nsl_join_index(ls, rs, 1, &err);
  FX_EXPECT_I64(j, 2, 1, -1, -1);
  nsl_column_release(j);
  /* type mismatch and length mismatch */
  assert_null(nsl_join_index(ls, rc, 1, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  nsl_column *short1 = FX_I64(1);
  const nsl_column *bad[2] = {kr, short1};
  assert_null(nsl_join_index(bad, right, 2, &err));
  assert_null(nsl_join_index(left, right, 0, &err));
  nsl_column_release(short1);
  nsl_column_release(s1);
  nsl_column_release(s2);
  nsl_dict_release(d1);
  nsl_dict_release(d2);
  nsl_column_release(fc);
  nsl_column_release(kr64);
  nsl_column_release(kr);
  nsl_column_release(kc);
  nsl_column_release(ar);
  nsl_column_release(ac);
}

static void test_join_random_reference(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_dict *d = nsl_dict_new();
  fx_seed(8);
  for (int trial = 0; trial < 20; trial++) {
    int64_t nl = fx_range(0, 800), nr = fx_range(0, 800);
    int64_t span = trial % 3 == 0 ? 0 : fx_range(1, 300);
    nsl_type t1 = (nsl_type)fx_range(0, 1), t2 = trial % 2 ? NSL_STR : NSL_I64;
    nsl_column *l1 = random_col(t1, nl, d, 3), *l2 = random_col(t2, nl, d, span);
    nsl_column *r1 = random_col(t1 == NSL_I64 ? NSL_I32 : NSL_I64, nr, d, 3), *r2 = random_col(t2, nr, d, span);
    if (span == 0 && t2 == NSL_I64)   /* make some full-range keys match */
      for (int64_t i = 0; i < nl && nr > 0; i += 2) nsl_i64(l2)[i] = nsl_i64(r2)[fx_range(0, nr - 1)];
    const nsl_column *left[2] = {l1, l2}, *right[2] = {r1, r2};
    nsl_column *j = nsl_join_index(left, right, 2, &err);
    assert_non_null(j);
    for (int64_t i = 0; i < nl; i++) {
      int64_t want = -1;
      if (!nsl_column_is_null(l1, i) && !nsl_column_is_null(l2, i))
        for (int64_t k = 0; k < nr && want < 0; k++)
          if (!nsl_column_is_null(r1, k) && !nsl_column_is_null(r2, k) &&
              nsl_column_get_i64(l1, i) == nsl_column_get_i64(r1, k) &&
              nsl_column_get_i64(l2, i) == nsl_column_get_i64(r2, k))
            want = k;
      if (nsl_i64(j)[i] != want)
        fail_msg("trial %d row %lld: %lld, want %lld", trial, (long long)i, (long long)nsl_i64(j)[i], (long long)want);
    }
    nsl_column_release(j);
    nsl_column_release(l1);
    nsl_column_release(l2);
    nsl_column_release(r1);
    nsl_column_release(r2);
  }
  nsl_dict_release(d);
}

/* Every way a key table holds tuples: a direct table (small ranges), a hash
 * table keyed by one mixed-radix number (ranges whose product passes the
 * direct table's bound but fits 64 bits: wide correlation ids under report
 * and pid), and hashed tuples compared key by key (full 64-bit ranges); keys
 * of every type, strings and bools read straight from their columns.  Groups
 * and joins (probes outside the build side's ranges included) against the
 * brute force. */
static void test_key_table_modes_reference(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_dict *d = nsl_dict_new();
  fx_seed(99);
  static const int64_t spans[] = {3, 40, 1 << 20, (int64_t)1 << 40, 0};
  for (int trial = 0; trial < 120; trial++) {
    int64_t nl = fx_range(0, 600), nr = fx_range(0, 600);
    int nk = (int)fx_range(1, 3);
    nsl_column *l[3], *r[3];
    for (int k = 0; k < nk; k++) {
      int64_t span = spans[fx_range(0, 4)];
      nsl_type t = (nsl_type)fx_range(0, 4);
      if (t == NSL_F64) t = NSL_I64;   /* F64 keys: tested above */
      if (t == NSL_I32 && (span == 0 || span > (1 << 20))) span = 1 << 20;
      l[k] = random_col(t, nl, d, span);
      r[k] = random_col(t == NSL_I32 ? NSL_I64 : t, nr, d, span);
      for (int64_t i = 0; i < nl && nr > 0; i += 3) {   /* make some tuples match */
        int64_t from = fx_range(0, nr - 1);
        switch (t) {
        case NSL_I64: nsl_i64(l[k])[i] = nsl_i64(r[k])[from]; break;
        case NSL_I32: nsl_i32(l[k])[i] = nsl_i64(r[k])[from] == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)nsl_i64(r[k])[from]; break;
        case NSL_STR: nsl_i32(l[k])[i] = nsl_i32(r[k])[from]; break;
        default: nsl_bool(l[k])[i] = nsl_bool(r[k])[from];
        }
      }
    }
    check_groups((const nsl_column *const *)l, nk);
    check_groups((const nsl_column *const *)r, nk);
    nsl_column *j = nsl_join_index((const nsl_column *const *)l, (const nsl_column *const *)r, nk, &err);
    assert_non_null(j);
    for (int64_t i = 0; i < nl; i++) {
      int64_t want = -1;
      for (int64_t m = 0; m < nr && want < 0; m++) {
        int eq = 1;
        for (int k = 0; k < nk && eq; k++)
          eq = !nsl_column_is_null(l[k], i) && !nsl_column_is_null(r[k], m) &&
               nsl_column_get_i64(l[k], i) == nsl_column_get_i64(r[k], m);
        if (eq) want = m;
      }
      if (nsl_i64(j)[i] != want)
        fail_msg("trial %d row %lld: %lld, want %lld", trial, (long long)i, (long long)nsl_i64(j)[i], (long long)want);
    }
    nsl_column_release(j);
    for (int k = 0; k < nk; k++) {
      nsl_column_release(l[k]);
      nsl_column_release(r[k]);
    }
  }
  nsl_dict_release(d);
}

/* A join big enough to probe in parts on several threads: (report, corr)
 * of ops against calls with wide, sparse correlation ids, duplicates on the
 * right (the first row wins) and keys that match nothing, against a
 * reference from sorting the right side. */
typedef struct ref_key {
  int64_t report, corr, row;
} ref_key;

static int cmp_ref_key(const void *a, const void *b) {
  const ref_key *x = a, *y = b;
  if (x->report != y->report) return x->report < y->report ? -1 : 1;
  if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

static void test_join_large_parallel(void **state) {
  (void)state;
  nsl_error err = {0};
  fx_seed(77);
  int64_t nr = 150000, nl = 200000;
  nsl_column *rrep = nsl_column_new(NSL_I32, nr, NULL), *rcorr = nsl_column_new(NSL_I64, nr, NULL);
  nsl_column *lrep = nsl_column_new(NSL_I32, nl, NULL), *lcorr = nsl_column_new(NSL_I64, nl, NULL);
  ref_key *ref = malloc((size_t)nr * sizeof *ref);
  for (int64_t i = 0; i < nr; i++) {
    nsl_i32(rrep)[i] = (int32_t)fx_range(0, 3);
    nsl_i64(rcorr)[i] = fx_range(0, 9) == 0 ? NSL_NULL_I64 : fx_range(0, 3000000) * 331;
    ref[i] = (ref_key){nsl_i32(rrep)[i], nsl_i64(rcorr)[i], i};
  }
  qsort(ref, (size_t)nr, sizeof *ref, cmp_ref_key);
  for (int64_t i = 0; i < nl; i++) {
    int64_t from = fx_range(0, nr - 1);
    int hit = fx_range(0, 3) > 0;
    nsl_i32(lrep)[i] = hit ? nsl_i32(rrep)[from] : (int32_t)fx_range(0, 5);
    nsl_i64(lcorr)[i] = hit ? nsl_i64(rcorr)[from] : fx_range(-5, 3000000) * 331 + fx_range(0, 1);
  }
  const nsl_column *left[2] = {lrep, lcorr}, *right[2] = {rrep, rcorr};
  for (int threads = 1; threads <= 3; threads += 2) {
    setenv("NSL_THREADS", threads == 1 ? "1" : "3", 1);
    nsl_column *j = nsl_join_index(left, right, 2, &err);
    assert_non_null(j);
    for (int64_t i = 0; i < nl; i++) {
      int64_t want = -1;
      if (nsl_i64(lcorr)[i] != NSL_NULL_I64) {
        ref_key k = {nsl_i32(lrep)[i], nsl_i64(lcorr)[i], -1};
        int64_t a = 0, b = nr;   /* first ref entry >= k: the lowest row of equal keys */
        while (a < b) {
          int64_t mid = (a + b) / 2;
          if (cmp_ref_key(&ref[mid], &k) < 0) a = mid + 1;
          else b = mid;
        }
        if (a < nr && ref[a].report == k.report && ref[a].corr == k.corr) want = ref[a].row;
      }
      if (nsl_i64(j)[i] != want)
        fail_msg("threads %d row %lld: %lld, want %lld", threads, (long long)i, (long long)nsl_i64(j)[i], (long long)want);
    }
    nsl_column_release(j);
  }
  unsetenv("NSL_THREADS");
  free(ref);
  nsl_column_release(rrep);
  nsl_column_release(rcorr);
  nsl_column_release(lrep);
  nsl_column_release(lcorr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groupby_hand),
      cmocka_unit_test(test_groupby_edges),
      cmocka_unit_test(test_groupby_random_reference),
      cmocka_unit_test(test_groupby_int_keys_reference),
      cmocka_unit_test(test_groupby_large_threads),
      cmocka_unit_test(test_count_distinct_large),
      cmocka_unit_test(test_agg_hand),
      cmocka_unit_test(test_agg_int_sum_exact),
      cmocka_unit_test(test_agg_matches_nsys_stats),
      cmocka_unit_test(test_real_kernels_against_sql),
      cmocka_unit_test(test_agg_random_reference),
      cmocka_unit_test(test_groups_by_id),
      cmocka_unit_test(test_join_hand),
      cmocka_unit_test(test_join_random_reference),
      cmocka_unit_test(test_key_table_modes_reference),
      cmocka_unit_test(test_join_large_parallel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
