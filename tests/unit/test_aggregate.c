/* test_aggregate.c -- nsl_group_aggs (several aggregates of one grouping at
 * once) against a brute-force definition of every aggregate, per group,
 * from the rows of that group in row order; on every column type, with
 * NULLs, NaN, -0.0, rows in no group, empty and single groups, on one and
 * on several threads, and against nsl_group_agg one aggregate at a time;
 * nsl__median_excess (each value less the median of the others of its
 * group, rows in any order) against the median of the others sorted by
 * brute force; the moments processes add up (nsl__moments, of rows cut
 * into shares, summed as an all-reduce would, then nsl__moments_finish)
 * against the group-by of all the rows, bit for bit, and nsl__count_le
 * against counting. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "kernel_fixtures.h"
#include "core/kernels_internal.h"
#include "core/nsl_internal.h"

/* ---- the brute-force definition -------------------------------------------------- */

typedef struct bf_vals {
  int64_t n;
  int64_t *i;   /* integer values (I64, I32, BOOL; STR ids) */
  double *f;    /* F64 values */
  int64_t first, last;   /* rows of the first and last value, -1 */
} bf_vals;

/* The non-NULL values of v at rows[0..m) (one group's rows, in row order). */
static bf_vals bf_collect(const nsl_column *v, const int64_t *rows, int64_t m) {
  bf_vals b = {0, malloc((size_t)(m + 1) * sizeof(int64_t)), malloc((size_t)(m + 1) * sizeof(double)), -1, -1};
  for (int64_t j = 0; j < m; j++) {
    int64_t i = rows[j];
    if (nsl_column_is_null(v, i)) continue;
    if (v->type == NSL_F64) b.f[b.n] = nsl_f64(v)[i];
    else b.i[b.n] = v->type == NSL_STR ? nsl_i32(v)[i] : nsl_column_get_i64(v, i);
    b.n++;
    if (b.first < 0) b.first = i;
    b.last = i;
  }
  return b;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}
static int cmp_f64(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Checks r[k] (the result of agg over group k) against the definition. */
static void bf_check(const nsl_column *r, int64_t k, nsl_agg agg, double q, const nsl_column *v, bf_vals *b,
                     const char *what) {
  int fp = v->type == NSL_F64;
  __extension__ __int128 isum = 0;
  long double fsum = 0;
  for (int64_t j = 0; j < b->n; j++) {
    if (fp) fsum += b->f[j];
    else isum += b->i[j];
  }
  double mean = !b->n ? NAN : fp ? (double)(fsum / b->n) : (double)((long double)isum / (long double)b->n);
  switch (agg) {
  case NSL_AGG_COUNT: assert_int_equal(nsl_i64(r)[k], b->n); return;
  case NSL_AGG_SUM:
    if (!fp) {
      assert_int_equal(nsl_i64(r)[k], b->n ? (int64_t)(uint64_t)isum : NSL_NULL_I64);
      return;
    }
    if (!b->n) assert_true(isnan(nsl_f64(r)[k]));
    else if (fabs(nsl_f64(r)[k] - (double)fsum) > 1e-9 * (1 + fabsl(fsum)))
      fail_msg("%s group %lld: sum %.17g, want %.17Lg", what, (long long)k, nsl_f64(r)[k], fsum);
    return;
  case NSL_AGG_MEAN:
    if (!b->n) assert_true(isnan(nsl_f64(r)[k]));
    else if (fabs(nsl_f64(r)[k] - mean) > 1e-12 * (1 + fabs(mean)))
      fail_msg("%s group %lld: mean %.17g, want %.17g", what, (long long)k, nsl_f64(r)[k], mean);
    return;
  case NSL_AGG_STD: {
    long double ss = 0;
    for (int64_t j = 0; j < b->n; j++) {
      long double d = (fp ? (long double)b->f[j] : (long double)b->i[j]) - (long double)mean;
      ss += d * d;
    }
    double want = !b->n ? NAN : b->n == 1 ? 0.0 : sqrt((double)(ss / (b->n - 1)));
    if (!fx_same_f64(nsl_f64(r)[k], want) && !(fabs(nsl_f64(r)[k] - want) <= 1e-9 * (1 + fabs(want))))
      fail_msg("%s group %lld: std %.17g, want %.17g", what, (long long)k, nsl_f64(r)[k], want);
    return;
  }
  case NSL_AGG_MIN:
  case NSL_AGG_MAX: {
    int mx = agg == NSL_AGG_MAX;
    if (!b->n) {
      assert_true(nsl_column_is_null(r, k) || (v->type == NSL_BOOL && nsl_bool(r)[k] == 0));
      return;
    }
    int64_t best = 0;
    double fbest = 0;
    for (int64_t j = 0; j < b->n; j++) {
      if (fp) {
        if (j == 0 || (mx ? b->f[j] > fbest : b->f[j] < fbest)) fbest = b->f[j];
      } else if (v->type == NSL_STR) {
        const char *s = nsl_dict_str(v->dict, (int32_t)b->i[j]), *t = nsl_dict_str(v->dict, (int32_t)best);
        if (j == 0 || (mx ? strcmp(s, t) > 0 : strcmp(s, t) < 0)) best = b->i[j];
      } else if (j == 0 || (mx ? b->i[j] > best : b->i[j] < best))
        best = b->i[j];
    }
    if (fp) assert_true(nsl_f64(r)[k] == fbest);
    else if (v->type == NSL_STR) assert_string_equal(nsl_dict_str(r->dict, nsl_i32(r)[k]), nsl_dict_str(v->dict, (int32_t)best));
    else assert_int_equal(nsl_column_get_i64(r, k), best);
    return;
  }
  case NSL_AGG_MEDIAN:
  case NSL_AGG_QUANTILE: {
    if (agg == NSL_AGG_MEDIAN) q = 0.5;
    if (!b->n) {
      assert_true(isnan(nsl_f64(r)[k]));
      return;
    }
    if (fp) qsort(b->f, (size_t)b->n, sizeof *b->f, cmp_f64);
    else qsort(b->i, (size_t)b->n, sizeof *b->i, cmp_i64);
    double pos = q * (double)(b->n - 1), frac = 0;
    int64_t lo = (int64_t)floor(pos);
    if (lo >= b->n - 1) lo = b->n - 1;
    else frac = pos - (double)lo;
    long double x = fp ? b->f[lo] : (long double)b->i[lo];
    long double y = frac > 0 ? (fp ? b->f[lo + 1] : (long double)b->i[lo + 1]) : x;
    double want = (double)(x + (y - x) * (long double)frac);
    if (fabs(nsl_f64(r)[k] - want) > 1e-12 * (1 + fabs(want)))
      fail_msg("%s group %lld: quantile %g is %.17g, want %.17g", what, (long long)k, q, nsl_f64(r)[k], want);
    return;
  }
  case NSL_AGG_COUNT_DISTINCT: {
    if (fp) qsort(b->f, (size_t)b->n, sizeof *b->f, cmp_f64);
    else qsort(b->i, (size_t)b->n, sizeof *b->i, cmp_i64);
    int64_t d = b->n > 0;
    for (int64_t j = 1; j < b->n; j++) d += fp ? b->f[j] != b->f[j - 1] : b->i[j] != b->i[j - 1];
    assert_int_equal(nsl_i64(r)[k], d);
    return;
  }
  case NSL_AGG_FIRST:
  case NSL_AGG_LAST: {
    int64_t row = agg == NSL_AGG_FIRST ? b->first : b->last;
    if (row < 0) assert_true(nsl_column_is_null(r, k) || v->type == NSL_BOOL);
    else if (fp) assert_true(nsl_f64(r)[k] == nsl_f64(v)[row]);
    else assert_int_equal(nsl_column_get_i64(r, k), nsl_column_get_i64(v, row));
    return;
  }
  }
}

static int defined_on(nsl_agg a, nsl_type t) {
  return t != NSL_STR || !(a == NSL_AGG_SUM || a == NSL_AGG_MEAN || a == NSL_AGG_MEDIAN || a == NSL_AGG_QUANTILE ||
                           a == NSL_AGG_STD);
}

static int same_column(const nsl_column *a, const nsl_column *b) {
  return a && b && a->type == b->type && a->len == b->len &&
         (a->len == 0 || memcmp(a->data, b->data, (size_t)a->len * nsl_type_size(a->type)) == 0);
}

/* Every aggregate of specs[0..n) at once on 1 and 3 threads: each result
 * equal to the definition, the same bits on either thread count, and the
 * same as nsl_group_agg alone. */
static void check_specs(const nsl_groups *g, const nsl_agg_spec *specs, int n) {
  nsl_error err = {0};
  nsl_column *one[64], *three[64];
  setenv("NSL_THREADS", "1", 1);
  assert_int_equal(nsl_group_aggs(g, specs, n, one, &err), NSL_OK);
  setenv("NSL_THREADS", "3", 1);
  assert_int_equal(nsl_group_aggs(g, specs, n, three, &err), NSL_OK);
  unsetenv("NSL_THREADS");
  /* the rows of each group, in row order */
  int64_t ng = g->ngroups, nrows = g->group_of->len, *off = calloc((size_t)ng + 2, sizeof *off);
  int64_t *rows = malloc((size_t)(nrows + 1) * sizeof *rows);
  for (int64_t i = 0; i < nrows; i++)
    if (nsl_i64(g->group_of)[i] >= 0) off[nsl_i64(g->group_of)[i] + 2]++;
  for (int64_t k = 0; k < ng; k++) off[k + 2] += off[k + 1];
  for (int64_t i = 0; i < nrows; i++)
    if (nsl_i64(g->group_of)[i] >= 0) rows[off[nsl_i64(g->group_of)[i] + 1]++] = i;
  for (int i = 0; i < n; i++) {
    char what[64];
    snprintf(what, sizeof what, "spec %d (%s, agg %d)", i, nsl_type_name(specs[i].values->type), specs[i].agg);
    assert_int_equal(one[i]->len, ng);
    if (!same_column(one[i], three[i])) fail_msg("%s: 1 and 3 threads differ", what);
    nsl_column *alone = nsl_group_agg(g, specs[i].values, specs[i].agg, specs[i].q, &err);
    if (!same_column(one[i], alone)) fail_msg("%s: differs from nsl_group_agg", what);
    for (int64_t k = 0; k < ng; k++) {
      bf_vals b = bf_collect(specs[i].values, rows + off[k], off[k + 1] - off[k]);
      bf_check(one[i], k, specs[i].agg, specs[i].q, specs[i].values, &b, what);
      free(b.i);
      free(b.f);
    }
    nsl_column_release(alone);
    nsl_column_release(one[i]);
    nsl_column_release(three[i]);
  }
  free(off);
  free(rows);
}

/* A column of type t: values in [-span, span], about one in ten NULL (BOOL:
 * 0/1), doubles with halves, now and then -0.0. */
static nsl_column *value_col(nsl_type t, int64_t n, nsl_dict *d, int64_t span) {
  nsl_column *c = nsl_column_new(t, n, d);
  for (int64_t i = 0; i < n; i++) {
    int null = fx_range(0, 9) == 0;
    int64_t v = fx_range(-span, span);
    switch (t) {
    case NSL_I64: nsl_i64(c)[i] = null ? NSL_NULL_I64 : v * 1000003; break;
    case NSL_I32: nsl_i32(c)[i] = null ? NSL_NULL_I32 : (int32_t)v; break;
    case NSL_F64: nsl_f64(c)[i] = null ? NAN : fx_range(0, 30) == 0 ? -0.0 : (double)v / 2; break;
    case NSL_BOOL: nsl_bool(c)[i] = (uint8_t)(v & 1); break;
    case NSL_STR: {
      char buf[32];
      snprintf(buf, sizeof buf, "s%03lld", (long long)(v < 0 ? -v : v));
      nsl_i32(c)[i] = null ? -1 : fx_id(d, buf, strlen(buf));
      break;
    }
    }
  }
  return c;
}

/* Groups of n rows in ng groups (ids from nsl_groupby over random keys);
 * with holes, some rows put in no group. */
static void random_groups(int64_t n, int64_t ng, int holes, nsl_groups *g) {
  nsl_error err = {0};
  nsl_column *key = nsl_column_new(NSL_I64, n, NULL);
  for (int64_t i = 0; i < n; i++) nsl_i64(key)[i] = fx_range(0, ng - 1);
  const nsl_column *keys[1] = {key};
  assert_int_equal(nsl_groupby(keys, 1, g, &err), NSL_OK);
  if (holes)
    for (int64_t i = 0; i < n; i++)
      if (fx_range(0, 7) == 0) nsl_i64(g->group_of)[i] = -1;
  nsl_column_release(key);
}

/* Every aggregate on every type, several sharing a column. */
static int all_specs(nsl_column *const *cols, const nsl_column *group_of, nsl_agg_spec *specs) {
  int n = 0;
  for (int t = 0; t < 5; t++)
    for (int a = 0; a <= NSL_AGG_COUNT_DISTINCT; a++)
      if (defined_on((nsl_agg)a, (nsl_type)t)) specs[n++] = (nsl_agg_spec){cols[t], (nsl_agg)a, 0.25};
  specs[n++] = (nsl_agg_spec){cols[NSL_I64], NSL_AGG_QUANTILE, 1.0};
  specs[n++] = (nsl_agg_spec){cols[NSL_I64], NSL_AGG_QUANTILE, 0.0};
  specs[n++] = (nsl_agg_spec){cols[NSL_F64], NSL_AGG_QUANTILE, 0.9};
  specs[n++] = (nsl_agg_spec){cols[NSL_I64], NSL_AGG_STD, 0};   /* asked twice */
  specs[n++] = (nsl_agg_spec){group_of, NSL_AGG_COUNT, 0};      /* count(): rows */
  return n;
}

static void test_aggs_random_reference(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  fx_seed(2718);
  /* rows, groups: small and large (row chunks on several threads), few and
   * many groups */
  static const int64_t shapes[][2] = {{1, 1}, {7, 3}, {300, 1}, {500, 40}, {2000, 1500}, {70000, 5}, {140000, 300}};
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    for (int holes = 0; holes < 2; holes++) {
      int64_t n = shapes[s][0], span = s % 2 ? 1000000 : 5;
      nsl_groups g;
      random_groups(n, shapes[s][1], holes, &g);
      nsl_column *cols[5];
      for (int t = 0; t < 5; t++) cols[t] = value_col((nsl_type)t, n, d, span);
      nsl_agg_spec specs[64];
      check_specs(&g, specs, all_specs(cols, g.group_of, specs));
      for (int t = 0; t < 5; t++) nsl_column_release(cols[t]);
      nsl_groups_free(&g);
    }
  nsl_dict_release(d);
}

static void test_aggs_edges(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_dict *d = nsl_dict_new();
  nsl_agg_spec specs[64];
  nsl_column *out[64];

  /* no rows, no groups */
  nsl_groups g;
  random_groups(0, 1, 0, &g);
  assert_int_equal(g.ngroups, 0);
  nsl_column *cols[5];
  for (int t = 0; t < 5; t++) cols[t] = value_col((nsl_type)t, 0, d, 5);
  check_specs(&g, specs, all_specs(cols, g.group_of, specs));
  for (int t = 0; t < 5; t++) nsl_column_release(cols[t]);
  nsl_groups_free(&g);

  /* one group; every value NULL */
  random_groups(100, 1, 0, &g);
  nsl_column *i64 = nsl_column_new(NSL_I64, 100, NULL), *f64 = nsl_column_new(NSL_F64, 100, NULL);
  for (int i = 0; i < 100; i++) {
    nsl_i64(i64)[i] = NSL_NULL_I64;
    nsl_f64(f64)[i] = NAN;
  }
  nsl_agg_spec nulls[] = {{i64, NSL_AGG_COUNT, 0},  {i64, NSL_AGG_SUM, 0},    {i64, NSL_AGG_MEDIAN, 0},
                          {i64, NSL_AGG_STD, 0},    {i64, NSL_AGG_MIN, 0},    {f64, NSL_AGG_SUM, 0},
                          {f64, NSL_AGG_MAX, 0},    {f64, NSL_AGG_MEAN, 0},   {f64, NSL_AGG_COUNT_DISTINCT, 0},
                          {f64, NSL_AGG_FIRST, 0}};
  check_specs(&g, nulls, (int)(sizeof nulls / sizeof *nulls));
  assert_int_equal(nsl_group_aggs(&g, nulls, 3, out, &err), NSL_OK);
  FX_EXPECT_I64(out[0], 0);
  FX_EXPECT_I64(out[1], NSL_NULL_I64);
  FX_EXPECT_F64(out[2], NAN);
  for (int i = 0; i < 3; i++) nsl_column_release(out[i]);

  /* values that sum past the int64 range: exact in the mean, wrapped in the sum */
  for (int i = 0; i < 100; i++) nsl_i64(i64)[i] = INT64_MAX - i;
  nsl_agg_spec big[] = {{i64, NSL_AGG_SUM, 0}, {i64, NSL_AGG_MEAN, 0}, {i64, NSL_AGG_MAX, 0}};
  assert_int_equal(nsl_group_aggs(&g, big, 3, out, &err), NSL_OK);
  assert_true(nsl_f64(out[1])[0] == (double)((long double)INT64_MAX - 49.5L));
  FX_EXPECT_I64(out[2], INT64_MAX);
  for (int i = 0; i < 3; i++) nsl_column_release(out[i]);
  check_specs(&g, big, 3);

  /* no aggregates */
  assert_int_equal(nsl_group_aggs(&g, NULL, 0, out, &err), NSL_OK);

  /* bad input: every result NULL, the error names the problem */
  nsl_column *str = fx_str(d, 100, (const char *const[100]){"a"});
  nsl_agg_spec bad[] = {{i64, NSL_AGG_SUM, 0}, {str, NSL_AGG_MEDIAN, 0}};
  out[0] = out[1] = (nsl_column *)1;
  assert_int_equal(nsl_group_aggs(&g, bad, 2, out, &err), NSL_ERR_ARG);
  assert_null(out[0]);
  assert_null(out[1]);
  assert_non_null(strstr(err.msg, "string"));
  nsl_agg_spec badq[] = {{i64, NSL_AGG_QUANTILE, 1.5}};
  assert_int_equal(nsl_group_aggs(&g, badq, 1, out, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "1.5"));
  nsl_column *short1 = FX_I64(1);
  nsl_agg_spec badlen[] = {{i64, NSL_AGG_SUM, 0}, {short1, NSL_AGG_SUM, 0}};
  assert_int_equal(nsl_group_aggs(&g, badlen, 2, out, &err), NSL_ERR_ARG);
  assert_null(out[0]);
  nsl_agg_spec noval[] = {{NULL, NSL_AGG_SUM, 0}};
  assert_int_equal(nsl_group_aggs(&g, noval, 1, out, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_group_aggs(NULL, big, 1, out, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_group_aggs(&g, big, 1, NULL, &err), NSL_ERR_ARG);
  g.checked = 0;
  nsl_i64(g.group_of)[5] = 3;   /* past ngroups */
  assert_int_equal(nsl_group_aggs(&g, big, 3, out, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "group 3"));
  nsl_column_release(short1);
  nsl_column_release(str);
  nsl_column_release(i64);
  nsl_column_release(f64);
  nsl_groups_free(&g);
  nsl_dict_release(d);
}

/* I32 and BOOL inputs by hand: sums widen, min/max keep the type. */
static void test_aggs_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *key = FX_I64(0, 1, 0, 1, 0, 2);
  const nsl_column *keys[1] = {key};
  nsl_groups g;
  assert_int_equal(nsl_groupby(keys, 1, &g, &err), NSL_OK);
  nsl_column *i32 = FX_I32(INT32_MAX, -3, INT32_MAX, NSL_NULL_I32, 1, NSL_NULL_I32);
  nsl_column *bl = FX_BOOL(1, 0, 1, 0, 0, 1);
  nsl_agg_spec s[] = {{i32, NSL_AGG_SUM, 0},    {i32, NSL_AGG_MAX, 0}, {i32, NSL_AGG_MEDIAN, 0},
                      {i32, NSL_AGG_STD, 0},    {bl, NSL_AGG_SUM, 0},  {bl, NSL_AGG_MIN, 0},
                      {bl, NSL_AGG_MEAN, 0},    {i32, NSL_AGG_COUNT, 0}};
  nsl_column *out[8];
  assert_int_equal(nsl_group_aggs(&g, s, 8, out, &err), NSL_OK);
  FX_EXPECT_I64(out[0], 2LL * INT32_MAX + 1, -3, NSL_NULL_I64);
  assert_int_equal(out[1]->type, NSL_I32);
  assert_int_equal(nsl_i32(out[1])[0], INT32_MAX);
  assert_int_equal(nsl_i32(out[1])[2], NSL_NULL_I32);
  FX_EXPECT_F64(out[2], INT32_MAX, -3, NAN);
  assert_true(nsl_f64(out[3])[1] == 0.0 && isnan(nsl_f64(out[3])[2]));
  FX_EXPECT_I64(out[4], 2, 0, 1);
  FX_EXPECT_BOOL(out[5], 0, 0, 1);
  FX_EXPECT_F64(out[6], 2.0 / 3, 0, 1);
  FX_EXPECT_I64(out[7], 3, 1, 0);
  for (int i = 0; i < 8; i++) nsl_column_release(out[i]);
  check_specs(&g, s, 8);
  nsl_column_release(i32);
  nsl_column_release(bl);
  nsl_column_release(key);
  nsl_groups_free(&g);
}

/* The agg mini-language, as the binding's g:agg{} documents it: names,
 * columns, q, blanks, defaults and the three refusals. */
static void test_agg_parse(void **state) {
  (void)state;
  nsl__agg_item it;
  nsl_error err = {0};
  assert_int_equal(nsl__agg_parse("n=count", &it, &err), NSL_OK);
  assert_string_equal(it.out, "n");
  assert_string_equal(it.col, "");
  assert_int_equal(it.agg, NSL_AGG_COUNT);
  assert_int_equal(nsl__agg_parse(" p99 = quantile( dur , 0.99 ) ", &it, &err), NSL_OK);
  assert_string_equal(it.out, "p99");
  assert_string_equal(it.col, "dur");
  assert_int_equal(it.agg, NSL_AGG_QUANTILE);
  assert_true(it.q == 0.99);
  assert_int_equal(nsl__agg_parse("avg(start)", &it, &err), NSL_OK);
  assert_string_equal(it.out, "avg_start");
  assert_int_equal(it.agg, NSL_AGG_MEAN);
  assert_true(it.q == 0.5);
  assert_int_equal(nsl__agg_parse("count_distinct(name)", &it, &err), NSL_OK);
  assert_string_equal(it.out, "count_distinct_name");
  assert_int_equal(it.agg, NSL_AGG_COUNT_DISTINCT);
  assert_int_equal(nsl__agg_parse("x=sum(dur", &it, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "missing ')'"));
  assert_int_equal(nsl__agg_parse("total=summ(dur)", &it, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "unknown aggregate 'summ'"));
  assert_int_equal(nsl__agg_parse("median", &it, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "needs a column"));
}

/* Rows laid out by group keep row order; out-of-range groups are left out;
 * strings joined per group skip NULLs. */
static void test_group_order_concat(void **state) {
  (void)state;
  const int64_t g[] = {2, 0, 2, -1, 0, 5, 2};
  int64_t *start = NULL, *rows = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl__group_order(g, 7, 3, &start, &rows, &err), NSL_OK);
  const int64_t want_start[] = {0, 2, 2, 5}, want_rows[] = {1, 4, 0, 2, 6};
  for (int k = 0; k < 4; k++) assert_int_equal(start[k], want_start[k]);
  for (int k = 0; k < 5; k++) assert_int_equal(rows[k], want_rows[k]);
  free(start);
  free(rows);
  nsl_dict *d = nsl_dict_new();
  nsl_column *gc = nsl_column_new(NSL_I64, 7, NULL), *sc = nsl_column_new(NSL_STR, 7, d);
  const char *words[] = {"c", "a", NULL, "x", "b", "y", "d"};
  for (int i = 0; i < 7; i++) {
    nsl_i64(gc)[i] = g[i];
    nsl_i32(sc)[i] = words[i] ? fx_id(d, words[i], strlen(words[i])) : -1;
  }
  nsl_column *r = nsl__group_concat(gc, 3, sc, "; ", 2, &err);
  assert_non_null(r);
  assert_string_equal(nsl_dict_str(d, nsl_i32(r)[0]), "a; b");
  assert_int_equal(nsl_i32(r)[1], -1);
  assert_string_equal(nsl_dict_str(d, nsl_i32(r)[2]), "c; d");
  nsl_column_release(r);
  nsl_column_release(gc);
  nsl_column_release(sc);
  nsl_dict_release(d);
}

/* ---- each value against the median of the other values of its group ---------- */

/* The median of the m - 1 values of vals[0..m) other than row p (sorted by hand). */
static double bf_median_others(const int64_t *vals, int64_t m, int64_t p) {
  int64_t *o = malloc((size_t)m * sizeof *o), k = 0;
  for (int64_t j = 0; j < m; j++)
    if (j != p) o[k++] = vals[j];
  qsort(o, (size_t)k, sizeof *o, cmp_i64);
  double med = k % 2 ? (double)o[k / 2] : (double)(o[k / 2 - 1] + o[k / 2]) / 2.0;
  free(o);
  return med;
}

static void test_median_excess(void **state) {
  (void)state;
  nsl_error err = {0};
  /* by hand: groups of 1 (no others: NaN), 2, 3 and 4 rows, sorted by key then value */
  int64_t keys[] = {0, 1, 1, 2, 2, 2, 5, 5, 5, 5};
  int64_t vals[] = {7, 10, 14, 1, 2, 9, 0, 4, 4, 20};
  nsl_column *k = fx_i64(10, keys), *v = fx_i64(10, vals);
  int64_t singles = -1;
  nsl_column *r = nsl__median_excess(k, v, &singles, &err);
  assert_non_null(r);
  assert_int_equal(singles, 1);
  double want[] = {NAN, -4, 4, -4.5, -3, 7.5, -4, 0, 0, 16};
  for (int i = 0; i < 10; i++) {
    if (isnan(want[i])) assert_true(isnan(nsl_f64(r)[i]));
    else assert_true(nsl_f64(r)[i] == want[i]);
  }
  nsl_column_release(r);
  /* a float column: the same definition in doubles */
  double fv[] = {7, 10.5, 14, 1, 2, 9.25, 0, 4, 4, 20};
  nsl_column *f = fx_f64(10, fv);
  r = nsl__median_excess(k, f, &singles, &err);
  assert_non_null(r);
  assert_true(nsl_f64(r)[1] == 10.5 - 14 && nsl_f64(r)[5] == 9.25 - 1.5);
  nsl_column_release(r);
  nsl_column_release(f);
  /* bad input: a float key, columns of two lengths */
  assert_null(nsl__median_excess(f = fx_f64(10, fv), v, &singles, &err));
  nsl_column_release(f);
  nsl_column *short_v = fx_i64(3, vals);
  assert_null(nsl__median_excess(k, short_v, &singles, &err));
  nsl_column_release(short_v);
  nsl_column_release(k);
  nsl_column_release(v);
  /* random groups of 1 to 40 rows (ranks at an instance), sorted, against the brute force; then shuffled */
  for (int round = 0; round < 20; round++) {
    int64_t n = 0, cap = 4000, *kk = malloc((size_t)cap * sizeof *kk), *vv = malloc((size_t)cap * sizeof *vv);
    for (int64_t g = 0; n < 3000; g++) {
      int64_t m = fx_range(1, 40);
      for (int64_t j = 0; j < m && n < cap; j++) kk[n] = g, vv[n++] = fx_range(-1000000, 1000000);
      qsort(vv + n - m, (size_t)m, sizeof *vv, cmp_i64);
    }
    k = fx_i64(n, kk), v = fx_i64(n, vv);
    r = nsl__median_excess(k, v, &singles, &err);
    assert_non_null(r);
    int64_t ones = 0;
    for (int64_t i = 0; i < n;) {
      int64_t j = i;
      while (j < n && kk[j] == kk[i]) j++;
      if (j - i == 1) ones++;
      for (int64_t p = 0; p < j - i; p++) {
        if (j - i == 1) assert_true(isnan(nsl_f64(r)[i]));
        else assert_true(nsl_f64(r)[i + p] == (double)vv[i + p] - bf_median_others(vv + i, j - i, p));
      }
      i = j;
    }
    assert_int_equal(singles, ones);
    /* the same rows shuffled: each row's result follows it */
    int64_t *perm = malloc((size_t)n * sizeof *perm), *sk = malloc((size_t)n * sizeof *sk),
            *sv = malloc((size_t)n * sizeof *sv);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = fx_range(0, i), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) sk[i] = kk[perm[i]], sv[i] = vv[perm[i]];
    nsl_column *k2 = fx_i64(n, sk), *v2 = fx_i64(n, sv);
    int64_t singles2 = -1;
    nsl_column *r2 = nsl__median_excess(k2, v2, &singles2, &err);
    assert_non_null(r2);
    assert_int_equal(singles2, singles);
    for (int64_t i = 0; i < n; i++) {
      double a = nsl_f64(r2)[i], b = nsl_f64(r)[perm[i]];
      assert_true(a == b || (isnan(a) && isnan(b)));
    }
    nsl_column_release(r2);
    nsl_column_release(k2);
    nsl_column_release(v2);
    free(perm);
    free(sk);
    free(sv);
    nsl_column_release(r);
    nsl_column_release(k);
    nsl_column_release(v);
    free(kk);
    free(vv);
  }
}


/* Row p's value less the median of the others of vals[0..m), by the
 * definition with NULLs: the others sorted as integers (NULL, INT64_MIN,
 * first), the median the mean of the middle two taken as an integer sum,
 * NaN when either is NULL or the sum overflows. */
static double bf_excess_nulls(const int64_t *vals, int64_t m, int64_t p) {
  int64_t *o = malloc((size_t)m * sizeof *o), k = 0, sum;
  for (int64_t j = 0; j < m; j++)
    if (j != p) o[k++] = vals[j];
  qsort(o, (size_t)k, sizeof *o, cmp_i64);
  int64_t a = o[(k - 1) / 2], b = o[k / 2];
  free(o);
  if (vals[p] == NSL_NULL_I64 || a == NSL_NULL_I64 || b == NSL_NULL_I64 || __builtin_add_overflow(a, b, &sum))
    return NAN;
  return (double)vals[p] - (double)sum / 2.0;
}

/* nsl__median_excess on many equal values, NULLs and values at the int64
 * limits, with keys in order, shuffled ids (the counting sort) and sparse
 * keys (the sort), against the definition. */
static void test_median_excess_ties(void **state) {
  (void)state;
  nsl_error err = {0};
  for (int round = 0; round < 30; round++) {
    int64_t n = 0, cap = 3000, *kk = malloc((size_t)cap * sizeof *kk), *vv = malloc((size_t)cap * sizeof *vv);
    int64_t *gs = malloc((size_t)cap * sizeof *gs), *gm = malloc((size_t)cap * sizeof *gm), ng = 0;
    for (int64_t g = 0; n < 2500; g++) {
      int64_t m = fx_range(1, 70);
      gs[ng] = n, gm[ng++] = m;
      for (int64_t j = 0; j < m && n < cap; j++) {
        int64_t r = fx_range(0, 99);
        kk[n] = round % 3 == 2 ? g * 1000003 : g;
        vv[n++] = r < 3 ? NSL_NULL_I64 : r < 6 ? INT64_MAX - fx_range(0, 2) : r < 9 ? INT64_MIN + 1 + fx_range(0, 2)
                                                                                   : fx_range(-3, 3);
      }
      if (gs[ng - 1] + gm[ng - 1] > n) gm[ng - 1] = n - gs[ng - 1];
    }
    int64_t *perm = malloc((size_t)n * sizeof *perm), *sk = malloc((size_t)n * sizeof *sk),
            *sv = malloc((size_t)n * sizeof *sv);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; round % 3 != 0 && i > 0; i--) {   /* rounds 1 and 2 (mod 3): rows shuffled */
      int64_t j = fx_range(0, i), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) sk[i] = kk[perm[i]], sv[i] = vv[perm[i]];
    nsl_column *k = fx_i64(n, sk), *v = fx_i64(n, sv);
    int64_t singles = -1, ones = 0;
    nsl_column *r = nsl__median_excess(k, v, &singles, &err);
    assert_non_null(r);
    for (int64_t i = 0; i < n; i++) {
      int64_t g = 0;
      while (!(perm[i] >= gs[g] && perm[i] < gs[g] + gm[g])) g++;
      int64_t m = gm[g];
      double want = m == 1 ? NAN : bf_excess_nulls(vv + gs[g], m, perm[i] - gs[g]), got = nsl_f64(r)[i];
      assert_true(got == want || (isnan(got) && isnan(want)));
    }
    for (int64_t g = 0; g < ng; g++) ones += gm[g] == 1;
    assert_int_equal(singles, ones);
    nsl_column_release(r), nsl_column_release(k), nsl_column_release(v);
    free(kk), free(vv), free(gs), free(gm), free(perm), free(sk), free(sv);
  }
}

/* nsl__median_excess_many: each column's result is nsl__median_excess's,
 * bit for bit, with the keys in order (no sort) and out of order. */
static void test_median_excess_many(void **state) {
  (void)state;
  nsl_error err = {0};
  for (int round = 0; round < 6; round++) {
    int64_t n = 2000, *k = malloc((size_t)n * sizeof *k), *a = malloc((size_t)n * sizeof *a);
    double *b = malloc((size_t)n * sizeof *b);
    for (int64_t i = 0; i < n; i++) {
      k[i] = round % 2 ? fx_range(0, 300) : i / 7;   /* odd rounds: keys out of order */
      a[i] = fx_range(-5000, 5000);
      b[i] = (double)fx_range(-5000, 5000) / 8.0;
    }
    nsl_column *kc = fx_i64(n, k), *ac = fx_i64(n, a), *bc = fx_f64(n, b), *out[2];
    const nsl_column *vs[2] = {ac, bc};
    int64_t s_many = -1, s_one = -1;
    assert_int_equal(nsl__median_excess_many(kc, vs, 2, out, &s_many, &err), NSL_OK);
    for (int c = 0; c < 2; c++) {
      nsl_column *one = nsl__median_excess(kc, vs[c], &s_one, &err);
      assert_non_null(one);
      assert_int_equal(s_one, s_many);
      assert_memory_equal(nsl_f64(one), nsl_f64(out[c]), (size_t)n * sizeof(double));
      nsl_column_release(one);
      nsl_column_release(out[c]);
    }
    nsl_column_release(kc), nsl_column_release(ac), nsl_column_release(bc);
    free(k), free(a), free(b);
  }
}

/* Over 2^16 rows the groups are shared out over the workers in stretches of
 * whole groups: 1, 2, 3 and 7 threads give the same bits and the same count
 * of single-row groups, for keys in order (one group per instance, some
 * large enough to straddle a stretch's share), out of order (grouped by a
 * counting sort) and sparse (a sort), integer and float values. */
static void test_median_excess_threads(void **state) {
  (void)state;
  nsl_error err = {0};
  for (int round = 0; round < 3; round++) {
    int64_t n = 300000, *k = malloc((size_t)n * sizeof *k), *a = malloc((size_t)n * sizeof *a);
    double *b = malloc((size_t)n * sizeof *b);
    for (int64_t i = 0, g = 0; i < n; g++) {   /* groups of 1 to 40 rows, one of 50,000 */
      int64_t m = g == 3 ? 50000 : fx_range(1, 40);
      for (int64_t j = 0; j < m && i < n; j++, i++) k[i] = round == 2 ? g * 1000003 : g;
    }
    if (round == 1)
      for (int64_t i = n - 1; i > 0; i--) {   /* shuffled: the rows out of key order */
        int64_t j = fx_range(0, i), t = k[i];
        k[i] = k[j], k[j] = t;
      }
    for (int64_t i = 0; i < n; i++) a[i] = fx_range(-5000, 5000), b[i] = (double)fx_range(-5000, 5000) / 8.0;
    nsl_column *kc = fx_i64(n, k), *ac = fx_i64(n, a), *bc = fx_f64(n, b), *first[2], *out[2];
    const nsl_column *vs[2] = {ac, bc};
    int64_t s1 = -1, s = -1;
    setenv("NSL_THREADS", "1", 1);
    assert_int_equal(nsl__median_excess_many(kc, vs, 2, first, &s1, &err), NSL_OK);
    static const char *const threads[] = {"2", "3", "7"};
    for (int t = 0; t < 3; t++) {
      setenv("NSL_THREADS", threads[t], 1);
      assert_int_equal(nsl__median_excess_many(kc, vs, 2, out, &s, &err), NSL_OK);
      assert_int_equal(s, s1);
      for (int c = 0; c < 2; c++) {
        assert_memory_equal(nsl_f64(first[c]), nsl_f64(out[c]), (size_t)n * sizeof(double));
        nsl_column_release(out[c]);
      }
    }
    unsetenv("NSL_THREADS");
    /* and the sequential result is the definition (a few rows checked by brute force) */
    for (int probe = 0; probe < 200; probe++) {
      int64_t i = fx_range(0, n - 1), m = 0, p = 0;
      int64_t *vals = malloc((size_t)n * sizeof *vals);
      for (int64_t j = 0; j < n; j++)
        if (k[j] == k[i]) {
          if (j == i) p = m;
          vals[m++] = a[j];
        }
      if (m == 1) assert_true(isnan(nsl_f64(first[0])[i]));
      else assert_true(nsl_f64(first[0])[i] == (double)a[i] - bf_median_others(vals, m, p));
      free(vals);
    }
    for (int c = 0; c < 2; c++) nsl_column_release(first[c]);
    nsl_column_release(kc), nsl_column_release(ac), nsl_column_release(bc);
    free(k), free(a), free(b);
  }
}

/* n rows: random group ids in [0, ng) and values in [lo, hi] (the caller frees both arrays). */
static void random_rows(int64_t n, int64_t ng, int64_t lo, int64_t hi, int64_t **g, int64_t **x) {
  *g = malloc((size_t)n * sizeof **g), *x = malloc((size_t)n * sizeof **x);
  assert_non_null(*g);
  assert_non_null(*x);
  for (int64_t i = 0; i < n; i++) (*g)[i] = fx_range(0, ng - 1), (*x)[i] = fx_range(lo, hi);
}

/* Moments of shares of the rows, summed as int64 (an all-reduce), equal the
 * group-by of all the rows bit for bit: counts, sums, means, deviations,
 * extremes; negative values and sums; groups empty in some shares. */
static void test_moments_shares(void **state) {
  (void)state;
  nsl_error err = {0};
  for (int round = 0; round < 10; round++) {
    int64_t n = 5000, ng = fx_range(1, 60), shares = fx_range(1, 7), *g, *x;
    int64_t span = round % 2 ? (int64_t)1 << 40 : 1000;
    random_rows(n, ng, round % 3 ? 0 : -span, span, &g, &x);
    x[0] = NSL_NULL_I64;   /* a NULL: in no count */
    nsl_column *gc = fx_i64(n, g), *xc = fx_i64(n, x);
    nsl_groups grp = {ng, gc, NULL, 0};
    nsl_agg_spec specs[] = {{xc, NSL_AGG_COUNT, 0}, {xc, NSL_AGG_SUM, 0}, {xc, NSL_AGG_MEAN, 0},
                            {xc, NSL_AGG_STD, 0},   {xc, NSL_AGG_MIN, 0}, {xc, NSL_AGG_MAX, 0}};
    nsl_column *want[6];
    assert_int_equal(nsl_group_aggs(&grp, specs, 6, want, &err), NSL_OK);
    int64_t *sum = calloc((size_t)(ng * NSL_MOMENT_PARTS), sizeof *sum), *lo = malloc((size_t)ng * sizeof *lo),
            *hi = malloc((size_t)ng * sizeof *hi);
    for (int64_t k = 0; k < ng; k++) lo[k] = INT64_MAX, hi[k] = INT64_MIN;
    for (int64_t sh = 0; sh < shares; sh++) {
      int64_t a = n * sh / shares, b = n * (sh + 1) / shares;
      nsl_column *sg = fx_i64(b - a, g + a), *sx = fx_i64(b - a, x + a), *parts, *l, *h;
      assert_int_equal(nsl__moments(sg, sx, ng, &parts, &l, &h, &err), NSL_OK);
      for (int64_t k = 0; k < ng * NSL_MOMENT_PARTS; k++) sum[k] += nsl_i64(parts)[k];
      for (int64_t k = 0; k < ng; k++) {
        if (nsl_i64(l)[k] < lo[k]) lo[k] = nsl_i64(l)[k];
        if (nsl_i64(h)[k] > hi[k]) hi[k] = nsl_i64(h)[k];
      }
      nsl_column_release(sg), nsl_column_release(sx), nsl_column_release(parts), nsl_column_release(l);
      nsl_column_release(h);
    }
    nsl_column *pc = fx_i64(ng * NSL_MOMENT_PARTS, sum), *lc = fx_i64(ng, lo), *hc = fx_i64(ng, hi), *got[6];
    int exact = 0;
    assert_int_equal(nsl__moments_finish(pc, lc, hc, got, &exact, &err), NSL_OK);
    assert_true(exact);
    for (int64_t k = 0; k < ng; k++) {
      assert_int_equal(nsl_i64(got[0])[k], nsl_i64(want[0])[k]);
      assert_int_equal(nsl_i64(got[1])[k], nsl_i64(want[1])[k]);
      for (int c = 2; c < 4; c++) {
        double a = nsl_f64(got[c])[k], b = nsl_f64(want[c])[k];
        assert_true(memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)));
      }
      assert_int_equal(nsl_i64(got[4])[k], nsl_i64(want[4])[k]);
      assert_int_equal(nsl_i64(got[5])[k], nsl_i64(want[5])[k]);
    }
    for (int c = 0; c < 6; c++) nsl_column_release(got[c]), nsl_column_release(want[c]);
    nsl_column_release(pc), nsl_column_release(lc), nsl_column_release(hc);
    nsl_column_release(gc), nsl_column_release(xc);
    free(sum), free(lo), free(hi), free(g), free(x);
  }
  /* values too large for exact deviations: said, not hidden */
  int64_t g2[] = {0, 0}, x2[] = {(int64_t)1 << 62, (int64_t)1 << 62};
  nsl_column *gc = fx_i64(2, g2), *xc = fx_i64(2, x2), *parts, *l, *h, *got[6];
  assert_int_equal(nsl__moments(gc, xc, 1, &parts, &l, &h, &err), NSL_OK);
  int exact = 1;
  assert_int_equal(nsl__moments_finish(parts, l, h, got, &exact, &err), NSL_OK);
  assert_false(exact);
  for (int c = 0; c < 6; c++) nsl_column_release(got[c]);
  nsl_column_release(parts), nsl_column_release(l), nsl_column_release(h);
  /* a group id past ng: an error, no columns */
  int64_t g3[] = {0, 1};
  nsl_column *bad = fx_i64(2, g3);
  assert_int_not_equal(nsl__moments(bad, xc, 1, &parts, &l, &h, &err), NSL_OK);
  assert_null(parts);
  nsl_column_release(bad), nsl_column_release(gc), nsl_column_release(xc);
}

/* nsl__count_le over rows sorted by group and value, against counting. */
static void test_count_le(void **state) {
  (void)state;
  nsl_error err = {0};
  int64_t g[] = {0, 0, 0, 2, 2, 5, 5, 5, 5}, x[] = {-4, 1, 1, 3, 8, 0, 0, 2, 9};
  int64_t tg[] = {0, 0, 0, 0, 1, 2, 2, 5, 5, 5, 6}, pv[] = {-5, -4, 1, 100, 7, 2, 8, -1, 0, 8, 0};
  int64_t want[] = {0, 1, 3, 3, 0, 0, 2, 0, 2, 3, 0};
  nsl_column *gc = fx_i64(9, g), *xc = fx_i64(9, x), *tc = fx_i64(11, tg), *pc = fx_i64(11, pv);
  nsl_column *r = nsl__count_le(gc, xc, tc, pc, &err);
  assert_non_null(r);
  for (int t = 0; t < 11; t++) assert_int_equal(nsl_i64(r)[t], want[t]);
  nsl_column_release(r);
  assert_null(nsl__count_le(gc, tc, tc, pc, &err));   /* rows of two lengths */
  nsl_column_release(gc), nsl_column_release(xc), nsl_column_release(tc), nsl_column_release(pc);
}

/* nsl__int_mean of each group's count and sum (as processes add them up)
 * equals the group-by's mean of its rows, bit for bit (large sums and
 * counts, where a double division could round differently from the
 * group-by's long double one); count 0: NaN. */
static void test_int_mean(void **state) {
  (void)state;
  nsl_error err = {0};
  for (int round = 0; round < 8; round++) {
    int64_t n = 20000, ng = fx_range(1, 40), *g, *x;
    int64_t span = round % 2 ? (int64_t)1 << 44 : 7;
    random_rows(n, ng, round % 4 == 3 ? -span : 0, span, &g, &x);
    nsl_column *gc = fx_i64(n, g), *xc = fx_i64(n, x), *want;
    nsl_groups grp = {ng, gc, NULL, 0};
    nsl_agg_spec spec = {xc, NSL_AGG_MEAN, 0};
    assert_int_equal(nsl_group_aggs(&grp, &spec, 1, &want, &err), NSL_OK);
    int64_t *cnt = calloc((size_t)ng, sizeof *cnt), *sum = calloc((size_t)ng, sizeof *sum);
    for (int64_t i = 0; i < n; i++) cnt[g[i]]++, sum[g[i]] += x[i];
    nsl_column *cc = fx_i64(ng, cnt), *sc = fx_i64(ng, sum);
    nsl_column *got = nsl__int_mean(cc, sc, &err);
    assert_non_null(got);
    for (int64_t k = 0; k < ng; k++) {
      double a = nsl_f64(got)[k], b = nsl_f64(want)[k];
      assert_true(memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)));
    }
    nsl_column_release(got), nsl_column_release(cc), nsl_column_release(sc), nsl_column_release(want);
    nsl_column_release(gc), nsl_column_release(xc);
    free(g), free(x), free(cnt), free(sum);
  }
  int64_t c0[] = {0, 3}, s0[] = {0, 10};
  nsl_column *cc = fx_i64(2, c0), *sc = fx_i64(2, s0), *got = nsl__int_mean(cc, sc, &err);
  assert_true(isnan(nsl_f64(got)[0]));
  double third = (double)((long double)10 / 3);
  assert_memory_equal(&nsl_f64(got)[1], &third, sizeof third);
  nsl_column_release(got);
  nsl_column *one = fx_i64(1, s0);
  assert_null(nsl__int_mean(cc, one, &err));   /* two lengths */
  nsl_column_release(cc), nsl_column_release(sc), nsl_column_release(one);
}

/* nsl__quantile_of from a group's two order statistics (found by sorting
 * here) equals the group-by's quantile, bit for bit, for quantiles whose
 * position falls between two values (a long double interpolation a double
 * one would round differently) and on one; count 0: NaN. */
static void test_quantile_of(void **state) {
  (void)state;
  nsl_error err = {0};
  const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.37, 0.0, 1.0};
  for (int round = 0; round < 6; round++) {
    int64_t n = 3000, ng = fx_range(1, 20), *g, *x;
    int64_t span = round % 2 ? (int64_t)1 << 50 : 1000;
    random_rows(n, ng, -span, span, &g, &x);
    nsl_column *gc = fx_i64(n, g), *xc = fx_i64(n, x);
    int64_t *cnt = calloc((size_t)ng, sizeof *cnt), *sorted = malloc((size_t)n * sizeof *sorted), *off = calloc((size_t)ng + 1, sizeof *off);
    for (int64_t i = 0; i < n; i++) cnt[g[i]]++;
    for (int64_t k = 0; k < ng; k++) off[k + 1] = off[k] + cnt[k];
    int64_t *at = calloc((size_t)ng, sizeof *at);
    for (int64_t i = 0; i < n; i++) sorted[off[g[i]] + at[g[i]]++] = x[i];
    for (int64_t k = 0; k < ng; k++) qsort(sorted + off[k], (size_t)cnt[k], sizeof *sorted, cmp_i64);
    for (size_t j = 0; j < sizeof qs / sizeof *qs; j++) {
      nsl_groups grp = {ng, gc, NULL, 0};
      nsl_agg_spec spec = {xc, NSL_AGG_QUANTILE, qs[j]};
      nsl_column *want;
      assert_int_equal(nsl_group_aggs(&grp, &spec, 1, &want, &err), NSL_OK);
      int64_t *lo = malloc((size_t)ng * sizeof *lo), *hi = malloc((size_t)ng * sizeof *hi);
      for (int64_t k = 0; k < ng; k++) {
        double frac;
        int64_t pos = cnt[k] ? nsl__quantile_pos(cnt[k], qs[j], &frac) : 0;
        lo[k] = cnt[k] ? sorted[off[k] + pos] : 0;
        hi[k] = cnt[k] && pos + 1 < cnt[k] ? sorted[off[k] + pos + 1] : lo[k];
      }
      nsl_column *nc = fx_i64(ng, cnt), *lc = fx_i64(ng, lo), *hc = fx_i64(ng, hi);
      nsl_column *got = nsl__quantile_of(nc, qs[j], lc, hc, &err);
      assert_non_null(got);
      for (int64_t k = 0; k < ng; k++) {
        double a = nsl_f64(got)[k], b = nsl_f64(want)[k];
        assert_true(memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)));
      }
      nsl_column_release(got), nsl_column_release(nc), nsl_column_release(lc), nsl_column_release(hc);
      nsl_column_release(want);
      free(lo), free(hi);
    }
    nsl_column_release(gc), nsl_column_release(xc);
    free(g), free(x), free(cnt), free(sorted), free(off), free(at);
  }
  int64_t c0[] = {0}, v0[] = {5};
  nsl_column *cc = fx_i64(1, c0), *vc = fx_i64(1, v0), *got = nsl__quantile_of(cc, 0.5, vc, vc, &err);
  assert_true(isnan(nsl_f64(got)[0]));
  nsl_column_release(got);
  assert_null(nsl__quantile_of(cc, 1.5, vc, vc, &err));   /* q outside [0, 1] */
  nsl_column_release(cc), nsl_column_release(vc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_aggs_hand),
      cmocka_unit_test(test_aggs_edges),
      cmocka_unit_test(test_aggs_random_reference),
      cmocka_unit_test(test_agg_parse),
      cmocka_unit_test(test_group_order_concat),
      cmocka_unit_test(test_median_excess),
      cmocka_unit_test(test_median_excess_many),
      cmocka_unit_test(test_median_excess_threads),
      cmocka_unit_test(test_median_excess_ties),
      cmocka_unit_test(test_moments_shares),
      cmocka_unit_test(test_count_le),
      cmocka_unit_test(test_int_mean),
      cmocka_unit_test(test_quantile_of),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
