/* test_binning.c -- bin edges, busy time per bin, nesting depth and span
 * merging against hand-computed cases and brute-force references on random
 * data: a per-nanosecond bitmap per group (busy time), the definition of
 * nesting (depth), and per-pixel coverage sums (span merging). */
#include <stdio.h>

#include "kernel_fixtures.h"
#include "core/nsl_internal.h"

#define SPAN 400   /* bitmap references use coordinates in [0, SPAN) */

/* ---- bin edges ---------------------------------------------------------------------- */

static void test_edges(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *e = nsl__bin_edges(0, 10, 4, &err);
  FX_EXPECT_I64(e, 0, 2, 5, 7, 10);   /* floor(10 * b / 4) */
  nsl_column_release(e);
  e = nsl__bin_edges(-7, 2, 3, &err);
  FX_EXPECT_I64(e, -7, -4, -1, 2);
  nsl_column_release(e);
  e = nsl__bin_edges(5, 6, 1, &err);
  FX_EXPECT_I64(e, 5, 6);
  nsl_column_release(e);
  /* more bins than ns: empty bins, still ascending and exact at the ends */
  e = nsl__bin_edges(0, 3, 6, &err);
  FX_EXPECT_I64(e, 0, 0, 1, 1, 2, 2, 3);
  nsl_column_release(e);
  /* near the int64 limits: no overflow */
  e = nsl__bin_edges(INT64_MAX - 1000, INT64_MAX, 1000, &err);
  assert_non_null(e);
  assert_int_equal(nsl_i64(e)[1000], INT64_MAX);
  assert_int_equal(nsl_i64(e)[500], INT64_MAX - 500);
  nsl_column_release(e);
  e = nsl__bin_edges(INT64_MIN + 1, INT64_MIN + 1 + INT64_MAX, 7, &err);
  assert_non_null(e);
  for (int b = 0; b < 7; b++) assert_true(nsl_i64(e)[b] < nsl_i64(e)[b + 1]);
  nsl_column_release(e);
  /* bad layouts */
  assert_null(nsl__bin_edges(10, 10, 4, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl__bin_edges(10, 0, 4, &err));
  assert_null(nsl__bin_edges(0, 10, 0, &err));
  assert_null(nsl__bin_edges(0, 10, -3, &err));
  assert_null(nsl__bin_edges(INT64_MIN + 1, INT64_MAX, 4, &err));   /* span past int64 */
  assert_null(nsl__bin_edges(NSL_NULL_I64, 0, 4, &err));
  assert_non_null(strstr(err.msg, "bin edges"));
}

/* ---- values per bin ----------------------------------------------------------------- */

/* nsl__bin_counts against the edges: each value in the last bin whose edge is at or below it, values outside
 * [lo, hi) and NULLs left out; I64 and I32; over a million rows (counted in parts on the threads) on 1 and 3
 * threads; bad arguments refused. */
static void test_bin_counts(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *t = FX_I64(0, 1, 2, 4, 5, 9, 10, -1, NSL_NULL_I64, 7), *c = nsl__bin_counts(t, 0, 10, 4, &err);
  FX_EXPECT_I64(c, 2, 2, 1, 2);   /* edges 0 2 5 7 10: {0,1} {2,4} {5} {7,9}; 10, -1 and NULL outside */
  nsl_column_release(c);
  nsl_column_release(t);
  fx_seed(31);
  static const int64_t cases[][3] = {{0, 10, 4}, {-7, 2, 3}, {0, 3, 6}, {100, 100000, 1024}, {-5000, 5000000017, 777}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    int64_t lo = cases[k][0], hi = cases[k][1], nb = cases[k][2], n = k == 3 ? 1300000 : 3000;
    nsl_column *e = nsl__bin_edges(lo, hi, nb, &err), *v = nsl_column_new(NSL_I64, n, NULL);
    nsl_column *v32 = nsl_column_new(NSL_I32, n, NULL);
    int64_t *want = calloc((size_t)nb, sizeof *want), span = hi - lo;
    for (int64_t i = 0; i < n; i++) {
      int64_t x = i % 5 == 0 ? nsl_i64(e)[fx_range(0, nb)] - fx_range(0, 1)   /* at an edge or just below */
                             : lo - 3 + (int64_t)(fx_next() % (uint64_t)(span + 6));
      if (fx_range(0, 40) == 0) x = NSL_NULL_I64;
      nsl_i64(v)[i] = x;
      nsl_i32(v32)[i] = x == NSL_NULL_I64 || x < INT32_MIN + 1 || x > INT32_MAX ? NSL_NULL_I32 : (int32_t)x;
      if (x == NSL_NULL_I64 || x < lo || x >= hi) continue;
      int64_t b = nb - 1;
      while (nsl_i64(e)[b] > x) b--;
      want[b]++;
    }
    static const char *const threads[] = {"1", "3"};
    for (int th = 0; th < 2; th++) {
      setenv("NSL_THREADS", threads[th], 1);
      c = nsl__bin_counts(v, lo, hi, nb, &err);
      assert_non_null(c);
      for (int64_t b = 0; b < nb; b++)
        if (nsl_i64(c)[b] != want[b])
          fail_msg("[%lld, %lld) in %lld bins, %s threads: bin %lld holds %lld, the edges say %lld", (long long)lo,
                   (long long)hi, (long long)nb, threads[th], (long long)b, (long long)nsl_i64(c)[b],
                   (long long)want[b]);
      nsl_column_release(c);
    }
    unsetenv("NSL_THREADS");
    if (lo > INT32_MIN && hi < INT32_MAX) {   /* the same values as I32, where they fit */
      c = nsl__bin_counts(v32, lo, hi, nb, &err);
      for (int64_t b = 0; b < nb; b++) assert_int_equal(nsl_i64(c)[b], want[b]);
      nsl_column_release(c);
    }
    free(want);
    nsl_column_release(e);
    nsl_column_release(v);
    nsl_column_release(v32);
  }
  nsl_column *f = FX_F64(1.0), *one = FX_I64(1);
  assert_null(nsl__bin_counts(f, 0, 4, 2, &err));
  assert_non_null(strstr(err.msg, "integer"));
  assert_null(nsl__bin_counts(one, 4, 4, 2, &err));
  assert_null(nsl__bin_counts(one, 0, 4, 0, &err));
  assert_null(nsl__bin_counts(one, 0, 4, ((int64_t)1 << 20) + 1, &err));
  assert_null(nsl__bin_counts(NULL, 0, 4, 2, &err));
  nsl_column_release(f);
  nsl_column_release(one);
}

/* ---- busy per bin ------------------------------------------------------------------- */

static void test_busy_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  /* group 0: [0,10) and [5,15) overlap -> [0,15); group 1: [20,30); a NULL row; a reversed row */
  nsl_column *s = FX_I64(5, 0, 20, NSL_NULL_I64, 9), *e = FX_I64(15, 10, 30, 40, 8), *g = FX_I64(0, 0, 1, 1, 0);
  nsl_column *b = nsl__busy_per_bin(s, e, g, 2, NULL, 0, 40, 4, &err);   /* bins of 10 ns */
  FX_EXPECT_I64(b, 10, 5, 0, 0, /* group 1 */ 0, 0, 10, 0);
  nsl_column_release(b);
  /* window clips: [3, 23) in 2 bins [3,13) [13,23) */
  b = nsl__busy_per_bin(s, e, g, 2, NULL, 3, 23, 2, &err);
  FX_EXPECT_I64(b, 10, 2, 0, 3);
  nsl_column_release(b);
  /* no groups: union over all rows */
  b = nsl__busy_per_bin(s, e, NULL, 1, NULL, 0, 40, 1, &err);
  FX_EXPECT_I64(b, 25);
  nsl_column_release(b);
  /* mask drops the [0,10) row */
  nsl_column *m = FX_BOOL(1, 0, 1, 1, 1);
  b = nsl__busy_per_bin(s, e, g, 2, m, 0, 40, 4, &err);
  FX_EXPECT_I64(b, 5, 5, 0, 0, 0, 0, 10, 0);
  nsl_column_release(b);
  /* i32 times, a negative group id skipped */
  nsl_column *s32 = FX_I32(0, 2), *e32 = FX_I32(4, 6), *g2 = FX_I64(-1, 0);
  b = nsl__busy_per_bin(s32, e32, g2, 1, NULL, 0, 8, 2, &err);
  FX_EXPECT_I64(b, 2, 2);
  nsl_column_release(b);
  /* errors: a group id past ngroups, float times, length mismatch, bad mask, bad bins */
  assert_null(nsl__busy_per_bin(s, e, g, 1, NULL, 0, 40, 4, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "group"));
  nsl_column *f = FX_F64(1, 2, 3, 4, 5), *short1 = FX_I64(1);
  assert_null(nsl__busy_per_bin(f, e, g, 2, NULL, 0, 40, 4, &err));
  assert_null(nsl__busy_per_bin(s, short1, g, 2, NULL, 0, 40, 4, &err));
  assert_null(nsl__busy_per_bin(s, e, short1, 2, NULL, 0, 40, 4, &err));
  assert_null(nsl__busy_per_bin(s, e, g, 2, f, 0, 40, 4, &err));
  assert_null(nsl__busy_per_bin(s, e, g, 2, NULL, 40, 0, 4, &err));
  assert_null(nsl__busy_per_bin(s, e, g, 0, NULL, 0, 40, 4, &err));
  /* empty input: all zeros */
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL);
  b = nsl__busy_per_bin(z, z, NULL, 1, NULL, 0, 10, 2, &err);
  FX_EXPECT_I64(b, 0, 0);
  nsl_column_release(b);
  nsl_column *all[] = {s, e, g, m, s32, e32, g2, f, short1, z};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
}

/* Random rows against a bitmap per group: busy[g][b] = number of ns t in
 * bin b covered by some interval of group g. */
static void test_busy_random(void **state) {
  (void)state;
  fx_seed(11);
  nsl_error err = {0};
  for (int round = 0; round < 60; round++) {
    int64_t n = fx_range(0, 80), ngroups = fx_range(1, 5), nbins = fx_range(1, 50);
    int64_t lo = fx_range(-20, 100), hi = lo + fx_range(1, SPAN - 100);
    nsl_column *s = nsl_column_new(NSL_I64, n, NULL), *e = nsl_column_new(NSL_I64, n, NULL);
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL), *m = nsl_column_new(NSL_BOOL, n, NULL);
    static uint8_t cover[5][SPAN + 100];
    memset(cover, 0, sizeof cover);
    for (int64_t i = 0; i < n; i++) {
      int64_t a = fx_range(-20, SPAN - 1), len = fx_range(-3, 60);
      nsl_i64(s)[i] = a;
      nsl_i64(e)[i] = a + len;
      nsl_i64(g)[i] = fx_range(-1, ngroups - 1);
      nsl_bool(m)[i] = fx_range(0, 4) != 0;
      if (fx_range(0, 20) == 0) nsl_i64(s)[i] = NSL_NULL_I64;
      if (nsl_bool(m)[i] && nsl_i64(g)[i] >= 0 && nsl_i64(s)[i] != NSL_NULL_I64)
        for (int64_t t = a; t < a + len; t++) cover[nsl_i64(g)[i]][t + 20] = 1;
    }
    nsl_column *edges = nsl__bin_edges(lo, hi, nbins, &err);
    nsl_column *b = nsl__busy_per_bin(s, e, g, ngroups, m, lo, hi, nbins, &err);
    assert_non_null(b);
    assert_int_equal(b->len, ngroups * nbins);
    for (int64_t gi = 0; gi < ngroups; gi++)
      for (int64_t bi = 0; bi < nbins; bi++) {
        int64_t want = 0;
        for (int64_t t = nsl_i64(edges)[bi]; t < nsl_i64(edges)[bi + 1]; t++) want += cover[gi][t + 20];
        if (nsl_i64(b)[gi * nbins + bi] != want)
          fail_msg("round %d group %lld bin %lld: %lld, want %lld", round, (long long)gi, (long long)bi,
                   (long long)nsl_i64(b)[gi * nbins + bi], (long long)want);
      }
    nsl_column *all[] = {s, e, g, m, edges, b};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
  }
}

/* ---- nesting depth ------------------------------------------------------------------ */

static void test_depth_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  /* thread 0: A [0,100) > B [10,50) > C [20,30); D [60,90) inside A; E [100,120) after A.
   * thread 1: F [0,10); G [0,40) with the same start (enclosing, listed second); a NULL row. */
  nsl_column *s = FX_I64(20, 0, 10, 60, 100, 0, 0, NSL_NULL_I64);
  nsl_column *e = FX_I64(30, 100, 50, 90, 120, 10, 40, 5);
  nsl_column *g = FX_I64(0, 0, 0, 0, 0, 1, 1, 1);
  nsl_column *d = nsl__nest_depth(s, e, g, &err);
  assert_non_null(d);
  assert_int_equal(d->type, NSL_I32);
  int32_t want[] = {2, 0, 1, 1, 0, 1, 0, NSL_NULL_I32};
  for (int i = 0; i < 8; i++) assert_int_equal(nsl_i32(d)[i], want[i]);
  nsl_column_release(d);
  /* one group: thread 1's rows now nest inside A too */
  d = nsl__nest_depth(s, e, NULL, &err);
  assert_int_equal(nsl_i32(d)[5], 2);   /* A(0) > G(1) > F(2) */
  assert_int_equal(nsl_i32(d)[6], 1);
  nsl_column_release(d);
  /* crossing ranges (start/end): [0,10) [5,20) [12,15) [16,30) -> 0 1 2 2, never sharing a row while overlapping */
  nsl_column *s2 = FX_I64(0, 5, 12, 16), *e2 = FX_I64(10, 20, 15, 30);
  d = nsl__nest_depth(s2, e2, NULL, &err);
  assert_int_equal(nsl_i32(d)[0], 0);
  assert_int_equal(nsl_i32(d)[1], 1);
  assert_int_equal(nsl_i32(d)[2], 2);
  assert_int_equal(nsl_i32(d)[3], 2);
  nsl_column_release(d);
  /* two groups interleaved, each in start order, but an enclosing range listed after the shorter one with the
   * same start (the runs are reordered, no sort): g0 [0,10) [0,40) [5,8) [50,60); g1 [0,100) [10,20) [10,30) */
  nsl_column *s3 = FX_I64(0, 0, 0, 10, 5, 10, 50), *e3 = FX_I64(10, 100, 40, 20, 8, 30, 60);
  nsl_column *g3 = FX_I64(0, 1, 0, 1, 0, 1, 0);
  d = nsl__nest_depth(s3, e3, g3, &err);
  int32_t want3[] = {1, 0, 0, 2, 2, 1, 0};
  for (int i = 0; i < 7; i++) assert_int_equal(nsl_i32(d)[i], want3[i]);
  nsl_column_release(d);
  nsl_column_release(s3);
  nsl_column_release(e3);
  nsl_column_release(g3);
  /* errors: ids not dense, float times */
  nsl_column *gbad = FX_I64(0, 0, 0, 99999), *f = FX_F64(1, 2, 3, 4);
  assert_null(nsl__nest_depth(s2, e2, gbad, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl__nest_depth(f, e2, NULL, &err));
  nsl_column *all[] = {s, e, g, s2, e2, gbad, f};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
}

/* Appends properly nested ranges of group g to rows n.. of ss, ee, gg (at
 * most cap rows in all), made by recursive splitting as push/pop makes
 * them; returns the new row count. */
static int64_t nested_ranges(int64_t *ss, int64_t *ee, int64_t *gg, int64_t n, int64_t cap, int64_t g) {
  int64_t stack_s[32], stack_e[32], top = 0;
  stack_s[top] = 0, stack_e[top++] = 2000;
  while (top > 0 && n < cap) {
    top--;
    int64_t cur = stack_s[top], pe = stack_e[top], kids = fx_range(0, 3);
    for (int64_t k = 0; k < kids && top < 30 && n < cap; k++) {
      int64_t a0 = cur + fx_range(0, 30), z = a0 + fx_range(1, 300);
      if (z > pe) break;
      ss[n] = a0, ee[n] = z, gg[n] = g, n++;
      stack_s[top] = a0, stack_e[top++] = z;
      cur = z;
    }
  }
  return n;
}

/* Random properly nested ranges (a random push/pop stack per group, rows
 * shuffled): the depth equals the number of ranges of the group that
 * strictly enclose the row.  Random crossing ranges: no two overlapping
 * rows of a group share a depth. */
static void test_depth_random(void **state) {
  (void)state;
  fx_seed(23);
  nsl_error err = {0};
  for (int round = 0; round < 40; round++) {
    int64_t n = 0, cap = 200, ngroups = fx_range(1, 4);
    int64_t *ss = malloc(cap * sizeof *ss), *ee = malloc(cap * sizeof *ee), *gg = malloc(cap * sizeof *gg);
    for (int64_t gi = 0; gi < ngroups; gi++) n = nested_ranges(ss, ee, gg, n, cap, gi);
    for (int64_t i = n - 1; i > 0; i--) {   /* shuffle */
      int64_t j = fx_range(0, i), ts = ss[i], te = ee[i], tg = gg[i];
      ss[i] = ss[j], ee[i] = ee[j], gg[i] = gg[j];
      ss[j] = ts, ee[j] = te, gg[j] = tg;
    }
    nsl_column *s = fx_i64(n, ss), *e = fx_i64(n, ee), *g = fx_i64(n, gg);
    nsl_column *d = nsl__nest_depth(s, e, g, &err);
    assert_non_null(d);
    for (int64_t i = 0; i < n; i++) {
      int32_t want = 0;
      for (int64_t j = 0; j < n; j++) {
        if (j == i || gg[j] != gg[i]) continue;
        int encl = ss[j] <= ss[i] && ee[i] <= ee[j];
        if (encl && ss[j] == ss[i] && ee[j] == ee[i]) encl = j < i;   /* identical ranges: the first encloses */
        want += encl;
      }
      if (nsl_i32(d)[i] != want)
        fail_msg("round %d row %lld [%lld,%lld): depth %d, want %d", round, (long long)i, (long long)ss[i],
                 (long long)ee[i], nsl_i32(d)[i], want);
    }
    /* the rows ordered by (group, start, longer first): the one-pass path gives the same depths */
    const nsl_column *keys[3] = {g, s, e};
    int desc[3] = {0, 0, 1};
    nsl_column *perm = nsl_argsort(keys, desc, 3, &err);
    nsl_column *ps = nsl_column_gather(s, perm, &err), *pe = nsl_column_gather(e, perm, &err);
    nsl_column *pg = nsl_column_gather(g, perm, &err), *pd = nsl__nest_depth(ps, pe, pg, &err);
    for (int64_t j = 0; j < n; j++) {
      int64_t i = nsl_i64(perm)[j];
      int same_twin = 0;   /* identical ranges may swap their depths */
      for (int64_t q = 0; q < n; q++) same_twin |= q != i && gg[q] == gg[i] && ss[q] == ss[i] && ee[q] == ee[i];
      if (!same_twin) assert_int_equal(nsl_i32(pd)[j], nsl_i32(d)[i]);
    }
    /* ordered by (group, stop, later start first), as NVTX tables are: the mirror walk, same depths */
    const nsl_column *bkeys[3] = {g, e, s};
    nsl_column *bperm = nsl_argsort(bkeys, desc, 3, &err);
    nsl_column *bs = nsl_column_gather(s, bperm, &err), *be = nsl_column_gather(e, bperm, &err);
    nsl_column *bg = nsl_column_gather(g, bperm, &err), *bd = nsl__nest_depth(bs, be, bg, &err);
    for (int64_t j = 0; j < n; j++) {
      int64_t i = nsl_i64(bperm)[j];
      int same_twin = 0;
      for (int64_t q = 0; q < n; q++) same_twin |= q != i && gg[q] == gg[i] && ss[q] == ss[i] && ee[q] == ee[i];
      if (!same_twin && nsl_i32(bd)[j] != nsl_i32(d)[i])
        fail_msg("round %d: mirror walk gives depth %d to [%lld,%lld), want %d", round, nsl_i32(bd)[j],
                 (long long)ss[i], (long long)ee[i], nsl_i32(d)[i]);
    }
    nsl_column *sorted_cols[] = {perm, ps, pe, pg, pd, bperm, bs, be, bg, bd};
    for (size_t i = 0; i < sizeof sorted_cols / sizeof *sorted_cols; i++) nsl_column_release(sorted_cols[i]);
    nsl_column *all[] = {s, e, g, d};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
    /* crossing */
    for (int64_t i = 0; i < n; i++) {
      ss[i] = fx_range(0, 500);
      ee[i] = ss[i] + fx_range(0, 80);
    }
    s = fx_i64(n, ss), e = fx_i64(n, ee), g = fx_i64(n, gg);
    d = nsl__nest_depth(s, e, g, &err);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++)
        if (gg[i] == gg[j] && nsl_i32(d)[i] == nsl_i32(d)[j] && ss[i] < ee[j] && ss[j] < ee[i])
          fail_msg("rows %lld and %lld overlap at depth %d", (long long)i, (long long)j, nsl_i32(d)[i]);
    {   /* the same rows in stop order (the mirror walk): still never two overlapping rows on one depth */
      const nsl_column *xbkeys[3] = {g, e, s};
      int xbdesc[3] = {0, 0, 1};
      nsl_column *xbperm = nsl_argsort(xbkeys, xbdesc, 3, &err);
      nsl_column *xbs = nsl_column_gather(s, xbperm, &err), *xbe = nsl_column_gather(e, xbperm, &err);
      nsl_column *xbg = nsl_column_gather(g, xbperm, &err), *xbd = nsl__nest_depth(xbs, xbe, xbg, &err);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++)
          if (nsl_i64(xbg)[i] == nsl_i64(xbg)[j] && nsl_i32(xbd)[i] == nsl_i32(xbd)[j] &&
              nsl_i64(xbs)[i] < nsl_i64(xbe)[j] && nsl_i64(xbs)[j] < nsl_i64(xbe)[i])
            fail_msg("mirror walk: rows %lld and %lld overlap at depth %d", (long long)i, (long long)j,
                     nsl_i32(xbd)[i]);
      nsl_column *xbcols[] = {xbperm, xbs, xbe, xbg, xbd};
      for (size_t i = 0; i < sizeof xbcols / sizeof *xbcols; i++) nsl_column_release(xbcols[i]);
    }
    nsl_column *all2[] = {s, e, g, d};
    for (size_t i = 0; i < sizeof all2 / sizeof *all2; i++) nsl_column_release(all2[i]);
    free(ss);
    free(ee);
    free(gg);
  }
}

/* Depth by definition: the ranges of the row's group that enclose it (of
 * identical ranges, the earlier row encloses); NULL for rows left out. */
static int32_t depth_by_definition(const int64_t *ss, const int64_t *ee, const int64_t *gg, int64_t n, int64_t i) {
  if (ss[i] == NSL_NULL_I64 || ee[i] == NSL_NULL_I64 || ee[i] < ss[i] || gg[i] < 0) return NSL_NULL_I32;
  int32_t want = 0;
  for (int64_t j = 0; j < n; j++) {
    if (j == i || gg[j] != gg[i] || ss[j] == NSL_NULL_I64 || ee[j] == NSL_NULL_I64 || ee[j] < ss[j]) continue;
    int encl = ss[j] <= ss[i] && ee[i] <= ee[j];
    if (encl && ss[j] == ss[i] && ee[j] == ee[i]) encl = j < i;
    want += encl;
  }
  return want;
}


/* Properly nested ranges in start order (longer first among equal starts)
 * within each group: the one walk in table order, with rows left out (NULL
 * start, stop before start, NULL group) inside it; then the same rows with
 * the earliest moved to the end, out of order (the walk gives up and the
 * rows are ordered from the start).  Depths as the definition says (rows
 * with an identical twin, whose depths may swap, are not checked). */
static void test_depth_in_order_then_not(void **state) {
  (void)state;
  fx_seed(77);
  nsl_error err = {0};
  for (int round = 0; round < 30; round++) {
    int64_t n = 0, cap = 300, ngroups = fx_range(1, 3);
    int64_t *ss = malloc(cap * sizeof *ss), *ee = malloc(cap * sizeof *ee), *gg = malloc(cap * sizeof *gg);
    for (int64_t gi = 0; gi < ngroups; gi++) n = nested_ranges(ss, ee, gg, n, cap, gi);
    nsl_column *s0 = fx_i64(n, ss), *e0 = fx_i64(n, ee);
    const nsl_column *keys[2] = {s0, e0};
    int desc[2] = {0, 1};
    nsl_column *perm = nsl_argsort(keys, desc, 2, &err);
    int64_t *os = malloc(cap * sizeof *os), *oe = malloc(cap * sizeof *oe), *og = malloc(cap * sizeof *og);
    for (int64_t j = 0; j < n; j++) {
      int64_t i = nsl_i64(perm)[j];
      os[j] = ss[i], oe[j] = ee[i], og[j] = gg[i];
      int r = (int)fx_range(0, 40);
      if (r == 0) os[j] = NSL_NULL_I64;
      if (r == 1) oe[j] = os[j] - 1;
      if (r == 2) og[j] = NSL_NULL_I64;
    }
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1 && n > 1) {   /* the earliest row to the end */
        int64_t ts = os[0], te = oe[0], tg = og[0];
        memmove(os, os + 1, (size_t)(n - 1) * sizeof *os);
        memmove(oe, oe + 1, (size_t)(n - 1) * sizeof *oe);
        memmove(og, og + 1, (size_t)(n - 1) * sizeof *og);
        os[n - 1] = ts, oe[n - 1] = te, og[n - 1] = tg;
      }
      nsl_column *s = fx_i64(n, os), *e = fx_i64(n, oe), *g = fx_i64(n, og);
      nsl_column *d = nsl__nest_depth(s, e, g, &err);
      assert_non_null(d);
      for (int64_t i = 0; i < n; i++) {
        int twin = 0;
        for (int64_t q = 0; q < n; q++) twin |= q != i && og[q] == og[i] && os[q] == os[i] && oe[q] == oe[i];
        int32_t want = depth_by_definition(os, oe, og, n, i);
        if (!twin && nsl_i32(d)[i] != want)
          fail_msg("round %d pass %d row %lld [%lld,%lld) group %lld: depth %d, want %d", round, pass,
                   (long long)i, (long long)os[i], (long long)oe[i], (long long)og[i], nsl_i32(d)[i], want);
      }
      nsl_column *cols[] = {s, e, g, d};
      for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
    }
    nsl_column *all[] = {s0, e0, perm};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
    free(ss), free(ee), free(gg), free(os), free(oe), free(og);
  }
}

/* ---- lanes of nested ranges ---------------------------------------------------------- */

/* Order of two key tuples as the lanes take them: by each key in turn,
 * ascending, NULL (nul[k] set) first. */
static int tuple_cmp(const int64_t *a, const int *an, const int64_t *b, const int *bn, int nk) {
  for (int k = 0; k < nk; k++) {
    if (an[k] != bn[k]) return an[k] ? -1 : 1;
    if (!an[k] && a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  }
  return 0;
}

/* nsl__nest_lanes against its definition, computed the slow way: groups are
 * the distinct key tuples; a row's depth is 1 + the depth of the row of
 * its group visited last before it (visits by start, longer first, table
 * order among identical ranges) that is still open at its start (stop >
 * start), 0 when none is; groups in key order own min(max_sub, deepest +
 * 1) lanes from `first` on.  keys[k][i] with nul[k][i] set is NULL; ss,
 * ee: the ranges (NULL_I64 allowed). */
static void nest_lanes_reference(int64_t n, int nk, int64_t keys[][160], int nul[][160], const int64_t *ss,
                                 const int64_t *ee, int64_t first, int64_t max_sub, int64_t *lane, int64_t *ngroups,
                                 int64_t *grow, int64_t *gfirst, int64_t *glanes, int64_t *gcount) {
  int64_t group[160], ng = 0, rep[160], depth[160], deepest[160], visit[160], nv = 0;
  for (int64_t i = 0; i < n; i++) {   /* groups by first appearance, each with the row that names it */
    int64_t ti[16], tj[16];
    int ni[16], nj[16];
    for (int k = 0; k < nk; k++) ti[k] = keys[k][i], ni[k] = nul[k][i];
    group[i] = -1;
    for (int64_t g = 0; g < ng && group[i] < 0; g++) {
      for (int k = 0; k < nk; k++) tj[k] = keys[k][rep[g]], nj[k] = nul[k][rep[g]];
      if (tuple_cmp(ti, ni, tj, nj, nk) == 0) group[i] = g;
    }
    if (group[i] < 0) rep[ng] = i, group[i] = ng++;
  }
  for (int64_t i = 0; i < n; i++)   /* the rows that take part, in visiting order (insertion: stable) */
    if (ss[i] != NSL_NULL_I64 && ee[i] != NSL_NULL_I64 && ee[i] >= ss[i]) {
      int64_t z = nv++;
      while (z > 0 && (ss[visit[z - 1]] > ss[i] || (ss[visit[z - 1]] == ss[i] && ee[visit[z - 1]] < ee[i]))) {
        visit[z] = visit[z - 1];
        z--;
      }
      visit[z] = i;
    }
  for (int64_t g = 0; g < ng; g++) deepest[g] = -1;
  for (int64_t i = 0; i < n; i++) depth[i] = -1;
  for (int64_t v = 0; v < nv; v++) {
    int64_t i = visit[v], d = 0;
    for (int64_t u = v - 1; u >= 0; u--)
      if (group[visit[u]] == group[i] && ee[visit[u]] > ss[i]) {
        d = depth[visit[u]] + 1;
        break;
      }
    depth[i] = d;
    if (d > deepest[group[i]]) deepest[group[i]] = d;
  }
  int64_t order[160], base[160];
  for (int64_t g = 0; g < ng; g++) {   /* groups in key order */
    int64_t z = g;
    while (z > 0) {
      int64_t ta[16], tb[16];
      int na[16], nb[16];
      for (int k = 0; k < nk; k++)
        ta[k] = keys[k][rep[order[z - 1]]], na[k] = nul[k][rep[order[z - 1]]], tb[k] = keys[k][rep[g]],
        nb[k] = nul[k][rep[g]];
      if (tuple_cmp(ta, na, tb, nb, nk) <= 0) break;
      order[z] = order[z - 1];
      z--;
    }
    order[z] = g;
  }
  int64_t next = first;
  for (int64_t j = 0; j < ng; j++) {
    int64_t g = order[j], k = deepest[g] + 1 < max_sub ? deepest[g] + 1 : max_sub, count = 0;
    for (int64_t i = 0; i < n; i++) count += group[i] == g;
    base[g] = next;
    grow[j] = rep[g], gfirst[j] = next, glanes[j] = k, gcount[j] = count;
    next += k;
  }
  for (int64_t i = 0; i < n; i++)
    lane[i] = depth[i] >= 0 && depth[i] < max_sub ? base[group[i]] + depth[i] : NSL_NULL_I64;
  *ngroups = ng;
}

/* Random rows against the reference: nested ranges (shuffled: the rows are
 * ordered first) or crossing ones (in start order: the walk in table
 * order), one to three keys of either integer type with NULLs and
 * constants, rows left out, max_sub from 0 to past the depth and huge (the
 * path through a column of group ids), lanes from an offset. */
static void test_nest_lanes_random(void **state) {
  (void)state;
  fx_seed(31);
  nsl_error err = {0};
  for (int round = 0; round < 300; round++) {
    int64_t n = 0, cap = 150, nk = fx_range(1, 3), nthreads = fx_range(1, 4);
    static int64_t keys[3][160];
    static int nul[3][160];
    int64_t ss[160], ee[160], tid[160];
    int crossing = round % 3 == 2, shuffle = !crossing && round % 2;
    for (int64_t t = 0; t < nthreads && n < cap; t++) n = nested_ranges(ss, ee, tid, n, cap, t);
    if (crossing)
      for (int64_t i = 0; i < n; i++) ss[i] = fx_range(0, 600), ee[i] = ss[i] + fx_range(0, 90);
    if (shuffle)
      for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = fx_range(0, i), a = ss[i], b = ee[i], c = tid[i];
        ss[i] = ss[j], ee[i] = ee[j], tid[i] = tid[j];
        ss[j] = a, ee[j] = b, tid[j] = c;
      }
    else   /* by start, longer first: every group in order, so the one walk in table order */
      for (int64_t i = 1; i < n; i++) {
        int64_t a = ss[i], b = ee[i], c = tid[i], z = i;
        while (z > 0 && (ss[z - 1] > a || (ss[z - 1] == a && ee[z - 1] < b))) {
          ss[z] = ss[z - 1], ee[z] = ee[z - 1], tid[z] = tid[z - 1];
          z--;
        }
        ss[z] = a, ee[z] = b, tid[z] = c;
      }
    for (int64_t i = 0; i < n; i++) {
      int r = (int)fx_range(0, 30);   /* rows left out (a NULL stop keeps the order of the walk) */
      if (r == 0) ee[i] = NSL_NULL_I64;
      if (r == 1 && !shuffle && !crossing) ee[i] = ss[i] - 1;
    }
    nsl_column *kc[3];
    for (int k = 0; k < nk; k++) {   /* key k: a function of the thread (several threads may share a tuple) */
      int32_t v32[160];
      int64_t v64[160];
      int64_t mode = fx_range(0, 3), type32 = fx_range(0, 1);
      for (int64_t i = 0; i < n; i++) {
        int64_t v = mode == 0 ? 7 : mode == 1 ? tid[i] * 1000 - 1500 : mode == 2 ? tid[i] % 2 : -tid[i];
        nul[k][i] = mode == 3 && tid[i] == 1;
        keys[k][i] = nul[k][i] ? 0 : v;
        v32[i] = nul[k][i] ? NSL_NULL_I32 : (int32_t)v;
        v64[i] = nul[k][i] ? NSL_NULL_I64 : v;
      }
      kc[k] = type32 ? fx_i32(n, v32) : fx_i64(n, v64);
    }
    int64_t first = fx_range(0, 5), max_sub = round % 7 == 0 ? (int64_t)1 << 30 : fx_range(0, 5);
    int64_t want[160], ng = 0, wrow[160], wfirst[160], wlanes[160], wcount[160];
    nest_lanes_reference(n, (int)nk, keys, nul, ss, ee, first, max_sub, want, &ng, wrow, wfirst, wlanes, wcount);
    nsl_column *s = fx_i64(n, ss), *e = fx_i64(n, ee);
    nsl__lane_layout lo;
    if (nsl__nest_lanes(s, e, (const nsl_column *const *)kc, (int)nk, first, max_sub, &lo, &err) != NSL_OK)
      fail_msg("round %d: %s", round, err.msg);
    assert_int_equal(lo.lane->type, NSL_I32);
    assert_int_equal(lo.lane->len, n);
    assert_int_equal(lo.row->len, ng);
    for (int64_t i = 0; i < n; i++) {
      int64_t got = nsl_i32(lo.lane)[i] == NSL_NULL_I32 ? NSL_NULL_I64 : nsl_i32(lo.lane)[i];
      int twin = 0;   /* identical ranges of one group may swap their sub-rows when the rows are ordered */
      for (int64_t q = 0; q < n && shuffle; q++) twin |= q != i && tid[q] == tid[i] && ss[q] == ss[i] && ee[q] == ee[i];
      if (got != want[i] && !twin)
        fail_msg("round %d row %lld [%lld,%lld) thread %lld: lane %lld, want %lld", round, (long long)i,
                 (long long)ss[i], (long long)ee[i], (long long)tid[i], (long long)got, (long long)want[i]);
    }
    for (int64_t j = 0; j < ng; j++) {
      assert_int_equal(nsl_i64(lo.row)[j], wrow[j]);
      assert_int_equal(nsl_i64(lo.first_lane)[j], wfirst[j]);
      assert_int_equal(nsl_i64(lo.lanes)[j], wlanes[j]);
      assert_int_equal(nsl_i64(lo.count)[j], wcount[j]);
    }
    nsl__lane_layout_free(&lo);
    nsl__lane_layout_free(&lo);   /* idempotent */
    nsl_column_release(s);
    nsl_column_release(e);
    for (int k = 0; k < nk; k++) nsl_column_release(kc[k]);
  }
}

/* Cases by hand: equal starts (the longer encloses, in either table order),
 * rows out of order after a first run in order, a NULL key, max_sub
 * cutting sub-rows, no rows, many groups, rows that are not ranges, and
 * bad arguments. */
static void test_nest_lanes_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl__lane_layout lo;
  /* thread 5: A [0,100) > B [10,50) > C [20,30); D [60,90) in A.  thread NULL: F [0,10) and G [0,40) (G encloses
   * F, listed after it); the last row [5,6) of thread 5 is out of order (the walk gives up there). */
  nsl_column *s = FX_I64(0, 0, 10, 0, 20, 60, 5), *e = FX_I64(100, 10, 50, 40, 30, 90, 6);
  nsl_column *t = FX_I32(5, NSL_NULL_I32, 5, NSL_NULL_I32, 5, 5, 5);
  const nsl_column *keys[] = {t};
  assert_int_equal(nsl__nest_lanes(s, e, keys, 1, 3, 8, &lo, &err), NSL_OK);
  /* NULL thread first: lanes 3 (G), 4 (F); thread 5: lanes 5.. (A 5, B 6, C 7, D 6, [5,6) in A at 6) */
  int32_t want[] = {5, 4, 6, 3, 7, 6, 6};
  for (int i = 0; i < 7; i++) assert_int_equal(nsl_i32(lo.lane)[i], want[i]);
  FX_EXPECT_I64(lo.row, 1, 0);
  FX_EXPECT_I64(lo.first_lane, 3, 5);
  FX_EXPECT_I64(lo.lanes, 2, 3);
  FX_EXPECT_I64(lo.count, 2, 5);
  nsl__lane_layout_free(&lo);
  /* without the last row: only G, as early as F and longer, breaks the walk in table order */
  nsl_column *s6 = FX_I64(0, 0, 10, 0, 20, 60), *e6 = FX_I64(100, 10, 50, 40, 30, 90);
  nsl_column *t6 = FX_I64(5, NSL_NULL_I64, 5, NSL_NULL_I64, 5, 5);
  const nsl_column *keys6[] = {t6};
  assert_int_equal(nsl__nest_lanes(s6, e6, keys6, 1, 3, 8, &lo, &err), NSL_OK);
  for (int i = 0; i < 6; i++) assert_int_equal(nsl_i32(lo.lane)[i], want[i]);
  nsl__lane_layout_free(&lo);
  /* at most 2 sub-rows: C (depth 2) has no lane; a NULL stop takes none but counts */
  nsl_column *e2 = FX_I64(100, 10, 50, 40, 30, NSL_NULL_I64, 6);
  assert_int_equal(nsl__nest_lanes(s, e2, keys, 1, 0, 2, &lo, &err), NSL_OK);
  int32_t want2[] = {2, 1, 3, 0, NSL_NULL_I32, NSL_NULL_I32, 3};
  for (int i = 0; i < 7; i++) assert_int_equal(nsl_i32(lo.lane)[i], want2[i]);
  FX_EXPECT_I64(lo.lanes, 2, 2);
  FX_EXPECT_I64(lo.count, 2, 5);
  nsl__lane_layout_free(&lo);
  /* max_sub 0: no lanes at all */
  assert_int_equal(nsl__nest_lanes(s, e, keys, 1, 0, 0, &lo, &err), NSL_OK);
  for (int i = 0; i < 7; i++) assert_int_equal(nsl_i32(lo.lane)[i], NSL_NULL_I32);
  FX_EXPECT_I64(lo.lanes, 0, 0);
  nsl__lane_layout_free(&lo);
  /* no rows */
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL);
  const nsl_column *zk[] = {z, z};
  assert_int_equal(nsl__nest_lanes(z, z, zk, 2, 0, 8, &lo, &err), NSL_OK);
  assert_int_equal(lo.lane->len, 0);
  assert_int_equal(lo.row->len, 0);
  nsl__lane_layout_free(&lo);
  /* i32 times, one key of one value: one group */
  nsl_column *s32 = FX_I32(0, 1, 3), *e32 = FX_I32(5, 2, 4), *one = FX_I64(9, 9, 9);
  const nsl_column *ok1[] = {one};
  assert_int_equal(nsl__nest_lanes(s32, e32, ok1, 1, 0, 8, &lo, &err), NSL_OK);
  assert_int_equal(nsl_i32(lo.lane)[0], 0);
  assert_int_equal(nsl_i32(lo.lane)[1], 1);
  assert_int_equal(nsl_i32(lo.lane)[2], 1);
  nsl__lane_layout_free(&lo);
  /* many threads, one after the other, each with five nested ranges, the outermost open to the end: threads
   * keep coming while earlier ones have ranges open (their state moves as it grows); thread t owns lanes
   * 5t..5t+4 */
  enum { NT = 300, NR = 5 };
  int64_t ms[NR * NT], me[NR * NT], mt[NR * NT];
  for (int64_t th = 0; th < NT; th++)
    for (int64_t k = 0; k < NR; k++)
      ms[th * NR + k] = th * 100 + k, me[th * NR + k] = k ? th * 100 + 60 - k : 1000000 - th, mt[th * NR + k] = th;
  nsl_column *mcs = fx_i64(NR * NT, ms), *mce = fx_i64(NR * NT, me), *mct = fx_i64(NR * NT, mt);
  const nsl_column *mk[] = {mct};
  assert_int_equal(nsl__nest_lanes(mcs, mce, mk, 1, 0, 8, &lo, &err), NSL_OK);
  for (int64_t i = 0; i < NR * NT; i++) assert_int_equal(nsl_i32(lo.lane)[i], NR * mt[i] + i % NR);
  assert_int_equal(lo.row->len, NT);
  nsl__lane_layout_free(&lo);
  nsl_column *md = nsl__nest_depth(mcs, mce, mct, &err);
  for (int64_t i = 0; i < NR * NT; i++) assert_int_equal(nsl_i32(md)[i], i % NR);
  nsl_column_release(md);
  nsl_column_release(mcs), nsl_column_release(mce), nsl_column_release(mct);
  /* no ranges: each key tuple on one lane from lane 2, in key order (NULL first): (NULL,3) (0,7) (1,5) (1,7); also
   * through the column of group ids (a huge max_sub), and with no lanes at all */
  nsl_column *dv = FX_I32(1, 0, NSL_NULL_I32, 1, 0), *sm = FX_I64(7, 7, 3, 5, 7);
  const nsl_column *gk[] = {dv, sm};
  int64_t subs[] = {1, 8, (int64_t)1 << 30};
  for (int v = 0; v < 3; v++) {
    assert_int_equal(nsl__nest_lanes(NULL, NULL, gk, 2, 2, subs[v], &lo, &err), NSL_OK);
    int32_t wl[] = {5, 3, 2, 4, 3};
    for (int i = 0; i < 5; i++) assert_int_equal(nsl_i32(lo.lane)[i], wl[i]);
    FX_EXPECT_I64(lo.row, 2, 1, 3, 0);
    FX_EXPECT_I64(lo.first_lane, 2, 3, 4, 5);
    FX_EXPECT_I64(lo.lanes, 1, 1, 1, 1);
    FX_EXPECT_I64(lo.count, 1, 2, 1, 1);
    nsl__lane_layout_free(&lo);
  }
  assert_int_equal(nsl__nest_lanes(NULL, NULL, gk, 2, 2, 0, &lo, &err), NSL_OK);
  for (int i = 0; i < 5; i++) assert_int_equal(nsl_i32(lo.lane)[i], NSL_NULL_I32);
  FX_EXPECT_I64(lo.lanes, 0, 0, 0, 0);
  nsl__lane_layout_free(&lo);
  assert_int_equal(nsl__nest_lanes(s, NULL, gk, 2, 0, 1, &lo, &err), NSL_ERR_ARG);   /* a start without a stop */
  nsl_column_release(dv), nsl_column_release(sm);
  /* errors: lanes past int32, negative first or max_sub, float times, keys of another length, no keys */
  assert_int_equal(nsl__nest_lanes(s, e, keys, 1, INT32_MAX - 1, 8, &lo, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "int32"));
  assert_null(lo.lane);
  assert_int_equal(nsl__nest_lanes(s, e, keys, 1, -1, 8, &lo, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__nest_lanes(s, e, keys, 1, 0, -1, &lo, &err), NSL_ERR_ARG);
  nsl_column *f = FX_F64(1, 2, 3, 4, 5, 6, 7);
  assert_int_equal(nsl__nest_lanes(f, e, keys, 1, 0, 8, &lo, &err), NSL_ERR_ARG);
  const nsl_column *short_keys[] = {one};
  assert_int_equal(nsl__nest_lanes(s, e, short_keys, 1, 0, 8, &lo, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__nest_lanes(s, e, keys, 0, 0, 8, &lo, &err), NSL_ERR_ARG);
  const nsl_column *null_key[] = {NULL};
  assert_int_equal(nsl__nest_lanes(s, e, null_key, 1, 0, 8, &lo, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__nest_lanes(s, e, keys, 1, 0, 8, NULL, &err), NSL_ERR_ARG);
  nsl_column *all[] = {s, e, t, s6, e6, t6, e2, z, s32, e32, one, f};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
}

/* Rows overlapping a window (their count and the rows themselves) against
 * the definition, row by row, on both the all-int64 loop and the generic
 * one (an int32 stop column), NULLs, touching ends (start == to and stop ==
 * from do not overlap), a NULL bound, many rows and bad arguments. */
static void test_count_overlapping(void **state) {
  (void)state;
  nsl_column *s = FX_I64(0, 10, 20, NSL_NULL_I64, 5, 30, 15), *e = FX_I64(10, 20, 30, 8, NSL_NULL_I64, 30, 40);
  nsl_column *e32 = FX_I32(10, 20, 30, 8, NSL_NULL_I32, 30, 40);
  const int64_t windows[][2] = {{0, 40}, {10, 20}, {-5, 0}, {30, 31}, {19, 21}, {INT64_MIN + 1, INT64_MAX}, {40, 50}};
  for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
    int64_t from = windows[w][0], to = windows[w][1], want = 0;
    for (int64_t i = 0; i < s->len; i++) {
      int64_t a = nsl_i64(s)[i], b = nsl_i64(e)[i];
      if (a != NSL_NULL_I64 && b != NSL_NULL_I64 && a < to && b > from) want++;
    }
    assert_int_equal(nsl__count_overlapping(s, e, from, to), want);
    assert_int_equal(nsl__count_overlapping(s, e32, from, to), want);
    nsl_error err = {0};
    for (int v = 0; v < 2; v++) {   /* the rows themselves, ascending, on both loops */
      nsl_column *rows = nsl__overlapping_rows(s, v ? e32 : e, from, to, &err);
      assert_non_null(rows);
      assert_int_equal(rows->type, NSL_I64);
      assert_int_equal(rows->len, want);
      int64_t k = 0;
      for (int64_t i = 0; i < s->len; i++) {
        int64_t a = nsl_i64(s)[i], b = nsl_i64(e)[i];
        if (a != NSL_NULL_I64 && b != NSL_NULL_I64 && a < to && b > from) assert_int_equal(nsl_i64(rows)[k++], i);
      }
      nsl_column_release(rows);
    }
  }
  assert_int_equal(nsl__count_overlapping(s, e, 0, 40), 5);   /* a zero-length row inside the window counts */
  nsl_column *f = FX_F64(1.0), *one = FX_I64(1);
  assert_int_equal(nsl__count_overlapping(f, e, 0, 1), -1);
  assert_int_equal(nsl__count_overlapping(s, one, 0, 1), -1);
  nsl_error err = {0};
  assert_null(nsl__overlapping_rows(f, e, 0, 1, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl__overlapping_rows(s, one, 0, 1, &err));
  nsl_column *none = nsl__overlapping_rows(s, e, NSL_NULL_I64, 40, &err);   /* nothing compares with NULL */
  assert_int_equal(none->len, 0);
  nsl_column_release(none);
  /* many rows (the output grows): every other one of 5000 */
  nsl_column *ms = nsl_column_new(NSL_I64, 5000, NULL), *me = nsl_column_new(NSL_I64, 5000, NULL);
  for (int64_t i = 0; i < 5000; i++) nsl_i64(ms)[i] = i % 2 ? 100 : 0, nsl_i64(me)[i] = i % 2 ? 200 : 50;
  nsl_column *half = nsl__overlapping_rows(ms, me, 60, 150, &err);
  assert_int_equal(half->len, 2500);
  for (int64_t k = 0; k < 2500; k++) assert_int_equal(nsl_i64(half)[k], 2 * k + 1);
  nsl_column_release(half), nsl_column_release(ms), nsl_column_release(me);
  nsl_column *all[] = {s, e, e32, f, one};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
}

/* ---- span merging ------------------------------------------------------------------- */

#define SPO(tol, max_len) (&(nsl__span_opts){(tol), (max_len), 0, 1, 0, NULL})

static void test_spans_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl__spans sp;
  /* lane 0: [0,1) [1,2) touch; [2.3,3) gap 0.3; [5,9) far; [6,7) inside; lane 1: [0,4) class 1 and [1,2) class 2 */
  nsl_column *x0 = FX_F64(0, 1, 2.3, 5, 6, 0, 1), *x1 = FX_F64(1, 2, 3, 9, 7, 4, 2);
  nsl_column *ln = FX_I64(0, 0, 0, 0, 0, 1, 1), *cl = FX_I64(0, 0, 0, 0, 0, 1, 2);
  assert_int_equal(nsl__spans_merge(x0, x1, ln, cl, SPO(0, 0), &sp, &err), NSL_OK);
  /* tol 0: [0,2) (2 spans), [2.3,3), [5,9) (holds [6,7)); lane 1 two classes stay apart */
  assert_int_equal(sp.x0->len, 5);
  double total_busy = 0;
  int64_t total_count = 0;
  for (int64_t k = 0; k < sp.x0->len; k++) total_busy += nsl_f64(sp.busy)[k], total_count += nsl_i64(sp.count)[k];
  assert_int_equal(total_count, 7);
  assert_true(fabs(total_busy - (2 + 0.7 + 4 + 4 + 1)) < 1e-12);
  nsl__spans_free(&sp);
  /* tol 0.5: lane 0 first three join into [0,3) with busy 2.7 */
  assert_int_equal(nsl__spans_merge(x0, x1, ln, cl, SPO(0.5, 0), &sp, &err), NSL_OK);
  assert_int_equal(sp.x0->len, 4);
  int found = 0;
  for (int64_t k = 0; k < sp.x0->len; k++)
    if (nsl_i64(sp.lane)[k] == 0 && nsl_f64(sp.x0)[k] == 0) {
      found = 1;
      assert_true(nsl_f64(sp.x1)[k] == 3);
      assert_true(fabs(nsl_f64(sp.busy)[k] - 2.7) < 1e-12);
      assert_int_equal(nsl_i64(sp.count)[k], 3);
      assert_int_equal(nsl_i64(sp.cls)[k], 0);
    }
  assert_true(found);
  nsl__spans_free(&sp);
  /* max_len 2.5 stops [0,2)+[2.3,3) from joining; row: the first input row of each span */
  assert_int_equal(nsl__spans_merge(x0, x1, ln, cl, SPO(0.5, 2.5), &sp, &err), NSL_OK);
  assert_int_equal(sp.x0->len, 5);
  for (int64_t q = 0; q < 5; q++) {
    int64_t r = nsl_i64(sp.row)[q];
    assert_true(nsl_f64(x0)[r] == nsl_f64(sp.x0)[q]);
    assert_int_equal(nsl_i64(ln)[r], nsl_i64(sp.lane)[q]);
  }
  nsl__spans_free(&sp);
  /* no classes, integer coordinates, a NaN and a negative lane dropped */
  nsl_column *ix0 = FX_I64(10, 0, 20), *ix1 = FX_I64(15, 10, NSL_NULL_I64), *iln = FX_I32(0, 0, 0);
  assert_int_equal(nsl__spans_merge(ix0, ix1, iln, NULL, SPO(0, 0), &sp, &err), NSL_OK);
  assert_int_equal(sp.x0->len, 1);
  assert_true(nsl_f64(sp.x0)[0] == 0 && nsl_f64(sp.x1)[0] == 15);
  assert_int_equal(nsl_i64(sp.cls)[0], NSL_NULL_I64);
  nsl__spans_free(&sp);
  nsl_column *fn = FX_F64(0, NAN), *fx = FX_F64(1, 2), *fl = FX_I64(-1, 0);
  assert_int_equal(nsl__spans_merge(fn, fx, fl, NULL, SPO(0, 0), &sp, &err), NSL_OK);
  assert_int_equal(sp.x0->len, 0);
  nsl__spans_free(&sp);
  nsl__spans_free(&sp);   /* idempotent */
  /* the transform (ns -> px) and a mask; rows sorted within each lane but not overall */
  nsl_column *ns0 = FX_I64(1000000, 5000, 1002000, 9000), *ns1 = FX_I64(1001000, 6000, 1003000, 9500);
  nsl_column *nl = FX_I64(0, 1, 0, 1), *nm = FX_BOOL(1, 1, 1, 0);
  nsl__span_opts o = {0, 0, 1000, 0.01, 50, nm};   /* x = (v - 1000) * 0.01 + 50 */
  assert_int_equal(nsl__spans_merge(ns0, ns1, nl, NULL, &o, &sp, &err), NSL_OK);
  assert_int_equal(sp.x0->len, 3);
  for (int64_t q = 0; q < 3; q++) {
    double a = nsl_f64(sp.x0)[q], b = nsl_f64(sp.x1)[q];
    if (nsl_i64(sp.lane)[q] == 1) assert_true(a == 90 && b == 100);
    else assert_true((a == 10040 && b == 10050) || (a == 10060 && b == 10070));
  }
  nsl__spans_free(&sp);
  o.scale = -1;
  assert_int_equal(nsl__spans_merge(ns0, ns1, nl, NULL, &o, &sp, &err), NSL_ERR_ARG);
  o.scale = 1, o.mask = fx;   /* not a bool column */
  assert_int_equal(nsl__spans_merge(ns0, ns1, nl, NULL, &o, &sp, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__spans_merge(ns0, ns1, nl, NULL, NULL, &sp, &err), NSL_OK);   /* NULL: identity */
  assert_true(nsl_f64(sp.x1)[0] > 1000);
  nsl__spans_free(&sp);
  nsl_column *more[] = {ns0, ns1, nl, nm};
  for (size_t i = 0; i < sizeof more / sizeof *more; i++) nsl_column_release(more[i]);
  /* errors */
  nsl_column *bad_lane = FX_I64(0, 1000000), *sl = FX_F64(1);
  assert_int_equal(nsl__spans_merge(fx, fx, bad_lane, NULL, SPO(0, 0), &sp, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__spans_merge(fx, sl, fl, NULL, SPO(0, 0), &sp, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__spans_merge(fx, fx, fx, NULL, SPO(0, 0), &sp, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__spans_merge(fx, fx, fl, NULL, SPO(-1, 0), &sp, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__spans_merge(fx, fx, fl, NULL, SPO(NAN, 0), &sp, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__spans_merge(fx, fx, fl, NULL, SPO(0, 0), NULL, &err), NSL_ERR_ARG);
  nsl_column *neg_cls = FX_I64(0, -2), *big_cls = FX_I64(0, 5000);
  assert_int_equal(nsl__spans_merge(fx, fx, fl, neg_cls, SPO(0, 0), &sp, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "class"));
  assert_int_equal(nsl__spans_merge(fx, fx, fl, big_cls, SPO(0, 0), &sp, &err), NSL_ERR_ARG);
  nsl_column_release(neg_cls);
  nsl_column_release(big_cls);
  nsl_column *all[] = {x0, x1, ln, cl, ix0, ix1, iln, fn, fx, fl, bad_lane, sl};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
}

/* Random spans in a few lanes and classes: per (lane, class) the union of
 * the merged spans' busy parts equals the union of the input; every input
 * is counted once; merged spans of one lane and class never overlap; with
 * tol and max_len, gaps within a merged span are <= tol and no span
 * (unless a single input) exceeds max_len. */
static void test_spans_random(void **state) {
  (void)state;
  fx_seed(5);
  nsl_error err = {0};
  for (int round = 0; round < 60; round++) {
    int64_t n = fx_range(0, 120), nl = fx_range(1, 4), nc = fx_range(1, 3);
    double tol = round % 3 == 0 ? 0 : fx_range(0, 20) / 4.0, maxlen = round % 2 ? 0 : fx_range(1, 40);
    nsl_column *x0 = nsl_column_new(NSL_F64, n, NULL), *x1 = nsl_column_new(NSL_F64, n, NULL);
    nsl_column *ln = nsl_column_new(NSL_I64, n, NULL), *cl = nsl_column_new(NSL_I64, n, NULL);
    static uint8_t cover[4][3][SPAN * 4];   /* quarter units */
    memset(cover, 0, sizeof cover);
    for (int64_t i = 0; i < n; i++) {
      int64_t a = fx_range(0, SPAN * 4 - 100), len = fx_range(0, 40);
      nsl_f64(x0)[i] = a / 4.0;
      nsl_f64(x1)[i] = (a + len) / 4.0;
      nsl_i64(ln)[i] = fx_range(0, nl - 1);
      nsl_i64(cl)[i] = fx_range(0, nc - 1);
      for (int64_t t = a; t < a + len; t++) cover[nsl_i64(ln)[i]][nsl_i64(cl)[i]][t] = 1;
    }
    nsl__spans sp;
    assert_int_equal(nsl__spans_merge(x0, x1, ln, cl, SPO(tol, maxlen), &sp, &err), NSL_OK);
    int64_t m = sp.x0->len, counted = 0;
    double want_busy[4][3] = {{0}}, got_busy[4][3] = {{0}};
    for (int64_t l = 0; l < 4; l++)
      for (int64_t c = 0; c < 3; c++)
        for (int64_t t = 0; t < SPAN * 4; t++) want_busy[l][c] += cover[l][c][t] / 4.0;
    for (int64_t k = 0; k < m; k++) {
      int64_t l = nsl_i64(sp.lane)[k], c = nsl_i64(sp.cls)[k];
      double a = nsl_f64(sp.x0)[k], b = nsl_f64(sp.x1)[k];
      counted += nsl_i64(sp.count)[k];
      got_busy[l][c] += nsl_f64(sp.busy)[k];
      assert_true(nsl_f64(sp.busy)[k] <= b - a + 1e-9);
      if (maxlen > 0 && nsl_i64(sp.count)[k] > 1 && b - a > maxlen + 1e-9) {
        /* only a single long input may exceed max_len: some input must span [a, b) alone */
        int alone = 0;
        for (int64_t i = 0; i < n; i++)
          if (nsl_i64(ln)[i] == l && nsl_i64(cl)[i] == c && nsl_f64(x0)[i] == a && nsl_f64(x1)[i] == b) alone = 1;
        if (!alone) fail_msg("round %d: span [%g,%g) longer than %g", round, a, b, maxlen);
      }
      for (int64_t q = k + 1; q < m; q++)
        if (nsl_i64(sp.lane)[q] == l && nsl_i64(sp.cls)[q] == c && nsl_f64(sp.x0)[q] < b &&
            a < nsl_f64(sp.x1)[q] && nsl_f64(sp.busy)[q] > 0 && nsl_f64(sp.busy)[k] > 0) {
          /* overlaps are allowed only when max_len split an overlapping run */
          if (maxlen <= 0) fail_msg("round %d: merged spans %lld and %lld overlap", round, (long long)k, (long long)q);
        }
    }
    assert_int_equal(counted, n);
    if (maxlen <= 0)
      for (int l = 0; l < 4; l++)
        for (int c = 0; c < 3; c++)
          if (fabs(got_busy[l][c] - want_busy[l][c]) > 1e-9)
            fail_msg("round %d lane %d class %d: busy %g, want %g", round, l, c, got_busy[l][c], want_busy[l][c]);
    /* the same rows ordered by (lane, x0): the one-pass path must give the same spans */
    const nsl_column *keys[2] = {ln, x0};
    nsl_column *perm = nsl_argsort(keys, NULL, 2, &err);
    nsl_column *px0 = nsl_column_gather(x0, perm, &err), *px1 = nsl_column_gather(x1, perm, &err);
    nsl_column *pln = nsl_column_gather(ln, perm, &err), *pcl = nsl_column_gather(cl, perm, &err);
    nsl__spans sp2;
    assert_int_equal(nsl__spans_merge(px0, px1, pln, pcl, SPO(tol, maxlen), &sp2, &err), NSL_OK);
    assert_int_equal(sp2.x0->len, m);
    double s1 = 0, s2 = 0;
    for (int64_t q = 0; q < m; q++) {
      s1 += nsl_f64(sp.x0)[q] * 3 + nsl_f64(sp.x1)[q] * 7 + nsl_f64(sp.busy)[q] * 11 + (double)nsl_i64(sp.count)[q];
      s2 += nsl_f64(sp2.x0)[q] * 3 + nsl_f64(sp2.x1)[q] * 7 + nsl_f64(sp2.busy)[q] * 11 + (double)nsl_i64(sp2.count)[q];
    }
    assert_true(fabs(s1 - s2) < 1e-6);
    nsl__spans_free(&sp2);
    nsl__spans_free(&sp);
    nsl_column *all[] = {x0, x1, ln, cl, perm, px0, px1, pln, pcl};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
  }
}

/* Integer spans through each fast path of the merge (int64 or int32 lanes
 * and classes, or no classes), against the coverage of the input per
 * (lane, class): every row that takes part is counted once, the busy parts
 * add up to the union (tol 0: no span reaches past its rows), merged spans
 * of one lane and class never overlap; and every column type gives the
 * same spans.  Rows in x order except a late one (the merge in table order
 * gives up there and starts again sorted), NULL lanes and times dropped,
 * NULL classes a class of their own, a bool column as classes 0 and 1,
 * and more spans than the first output block holds. */
static void test_spans_types(void **state) {
  (void)state;
  fx_seed(9);
  nsl_error err = {0};
  for (int round = 0; round < 40; round++) {
    int64_t n = round % 10 == 9 ? 3000 : fx_range(0, 150), nl = fx_range(1, 4), nc = fx_range(1, 3);
    int64_t *a = malloc((size_t)(n + 1) * sizeof *a), *b = malloc((size_t)(n + 1) * sizeof *b);
    int64_t *ln = malloc((size_t)(n + 1) * sizeof *ln), *cl = malloc((size_t)(n + 1) * sizeof *cl);
    int32_t *ln32 = malloc((size_t)(n + 1) * sizeof *ln32), *cl32 = malloc((size_t)(n + 1) * sizeof *cl32);
    int64_t x = 0;
    for (int64_t i = 0; i < n; i++) {   /* in x order; far apart when n is large (no merging) */
      x += n > 1000 ? 10 : fx_range(0, 3);
      a[i] = x, b[i] = x + (n > 1000 ? 2 : fx_range(0, 8));
      ln[i] = fx_range(0, nl - 1), cl[i] = fx_range(0, nc - 1);
      int r = (int)fx_range(0, 25);
      if (r == 0) ln[i] = NSL_NULL_I64;
      if (r == 1) cl[i] = NSL_NULL_I64;
      if (r == 2) b[i] = NSL_NULL_I64;
      ln32[i] = ln[i] == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)ln[i];
      cl32[i] = cl[i] == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)cl[i];
    }
    if (round % 2 && n > 4) {   /* a late row early in x: out of order */
      int64_t j = n - 2;
      a[j] = 0, b[j] = 5;
    }
    double tol = round % 3 == 0 ? 0 : (double)fx_range(0, 4);
    nsl_column *c0 = fx_i64(n, a), *c1 = fx_i64(n, b), *l64 = fx_i64(n, ln), *l32 = fx_i32(n, ln32);
    nsl_column *k64 = fx_i64(n, cl), *k32 = fx_i32(n, cl32);
    nsl_column *lanes[2] = {l64, l32}, *classes[3] = {k64, k32, NULL};
    nsl__spans ref = {0};
    for (int v = 0; v < 6; v++) {
      nsl__spans sp;
      nsl_column *cls = classes[v % 3];
      assert_int_equal(nsl__spans_merge(c0, c1, lanes[v / 3], cls, SPO(tol, 0), &sp, &err), NSL_OK);
      int64_t counted = 0, want_count = 0;
      for (int64_t i = 0; i < n; i++) want_count += ln[i] != NSL_NULL_I64 && b[i] != NSL_NULL_I64 && b[i] >= a[i];
      for (int64_t k = 0; k < sp.x0->len; k++) {
        int64_t l = nsl_i64(sp.lane)[k], c = nsl_i64(sp.cls)[k];
        double s0 = nsl_f64(sp.x0)[k], s1 = nsl_f64(sp.x1)[k], busy = 0;
        counted += nsl_i64(sp.count)[k];
        if (!cls) assert_int_equal(c, NSL_NULL_I64);
        for (int64_t q = k + 1; q < sp.x0->len; q++)
          if (nsl_i64(sp.lane)[q] == l && nsl_i64(sp.cls)[q] == c && nsl_f64(sp.x0)[q] < s1 && s0 < nsl_f64(sp.x1)[q])
            fail_msg("round %d variant %d: spans %lld and %lld overlap", round, v, (long long)k, (long long)q);
        for (int64_t t = (int64_t)s0; t < (int64_t)s1 && n <= 200; t++) {   /* busy: the ns some row covers */
          int covered = 0;
          for (int64_t i = 0; i < n && !covered; i++)
            covered = ln[i] == l && (!cls || cl[i] == c) && b[i] != NSL_NULL_I64 && a[i] <= t && t < b[i];
          busy += covered;
        }
        if (fabs(busy - nsl_f64(sp.busy)[k]) > 1e-9 && tol == 0 && n <= 200)
          fail_msg("round %d variant %d span %lld: busy %g, want %g", round, v, (long long)k, nsl_f64(sp.busy)[k], busy);
      }
      assert_int_equal(counted, want_count);
      if (v % 3 < 2) {   /* with classes: the same spans whatever the column types */
        if (v == 0) ref = sp;
        else {
          assert_int_equal(sp.x0->len, ref.x0->len);
          for (int64_t k = 0; k < sp.x0->len; k++) {
            assert_true(nsl_f64(sp.x0)[k] == nsl_f64(ref.x0)[k] && nsl_f64(sp.x1)[k] == nsl_f64(ref.x1)[k]);
            assert_true(nsl_f64(sp.busy)[k] == nsl_f64(ref.busy)[k]);
            assert_int_equal(nsl_i64(sp.lane)[k], nsl_i64(ref.lane)[k]);
            assert_int_equal(nsl_i64(sp.cls)[k], nsl_i64(ref.cls)[k]);
            assert_int_equal(nsl_i64(sp.count)[k], nsl_i64(ref.count)[k]);
            assert_int_equal(nsl_i64(sp.row)[k], nsl_i64(ref.row)[k]);
          }
        }
      }
      if (n > 1000 && v == 2) assert_true(sp.x0->len > 2000);   /* far apart: nothing merges */
      if (v != 0) nsl__spans_free(&sp);
    }
    nsl__spans_free(&ref);
    {   /* a bool column as classes 0 and 1: the same spans as those ids in an int64 column */
      uint8_t *kb = malloc((size_t)(n + 1));
      int64_t *k01 = malloc((size_t)(n + 1) * sizeof *k01);
      for (int64_t i = 0; i < n; i++) kb[i] = cl[i] == 1, k01[i] = cl[i] == 1;
      nsl_column *cb = fx_bool(n, kb), *c01 = fx_i64(n, k01);
      nsl__spans sb, s01;
      assert_int_equal(nsl__spans_merge(c0, c1, l32, cb, SPO(tol, 0), &sb, &err), NSL_OK);
      assert_int_equal(nsl__spans_merge(c0, c1, l32, c01, SPO(tol, 0), &s01, &err), NSL_OK);
      assert_int_equal(sb.x0->len, s01.x0->len);
      for (int64_t k = 0; k < sb.x0->len; k++) {
        assert_true(nsl_f64(sb.x0)[k] == nsl_f64(s01.x0)[k] && nsl_f64(sb.busy)[k] == nsl_f64(s01.busy)[k]);
        assert_int_equal(nsl_i64(sb.cls)[k], nsl_i64(s01.cls)[k]);
        assert_int_equal(nsl_i64(sb.count)[k], nsl_i64(s01.count)[k]);
      }
      nsl__spans_free(&sb), nsl__spans_free(&s01);
      nsl_column_release(cb), nsl_column_release(c01);
      free(kb), free(k01);
    }
    nsl_column *all[] = {c0, c1, l64, l32, k64, k32};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
    free(a), free(b), free(ln), free(cl), free(ln32), free(cl32);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_edges),        cmocka_unit_test(test_bin_counts),   cmocka_unit_test(test_busy_hand),  cmocka_unit_test(test_busy_random),
      cmocka_unit_test(test_depth_hand),   cmocka_unit_test(test_depth_random),
      cmocka_unit_test(test_depth_in_order_then_not), cmocka_unit_test(test_spans_hand),
      cmocka_unit_test(test_spans_random), cmocka_unit_test(test_spans_types),
      cmocka_unit_test(test_nest_lanes_random),
      cmocka_unit_test(test_nest_lanes_hand),
      cmocka_unit_test(test_count_overlapping),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
