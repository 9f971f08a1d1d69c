/* test_lod.c -- the timeline's level of detail (src/core/lod.c) against a
 * hand-computed case and against brute force over every event on random
 * lanes: per column the events that overlap it and those starting in it,
 * the covered ns (a per-nanosecond bitmap, for lanes whose events overlap
 * or not), the class with the most time, the event under a time and the
 * next and previous start; the filter against an index built from the
 * kept rows alone; rows given as several parts (nsl_lod_build_parts) and
 * lanes of a few sorted runs (a table after another) against the same
 * brute force; the bins (busy ns and starts alone) against the cells; and,
 * over a million rows, the index the threads build and the bins of many
 * columns they count against one thread's. */
#include <stdlib.h>
#include <stdio.h>

#include "kernel_fixtures.h"
#include "core/lod.h"

static void test_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  /* lane 0: [0,10) [10,15) [30,60); lane 1: [5,6); lane 2: none; a row on lane 7 (outside) and one with stop < start */
  nsl_column *s = FX_I64(30, 0, 10, 5, 1, 9), *e = FX_I64(60, 10, 15, 6, 2, 8);
  nsl_column *g = FX_I64(0, 0, 0, 1, 7, 0), *k = FX_I64(1, 0, 0, 2, 0, 0);
  nsl_lod *l = nsl_lod_build(s, e, g, k, 3, &err);
  assert_non_null(l);
  assert_int_equal(nsl_lod_count(l, 0), 3);
  assert_int_equal(nsl_lod_count(l, 1), 1);
  assert_int_equal(nsl_lod_count(l, 2), 0);
  int64_t lo = 0, hi = 0;
  assert_true(nsl_lod_extent(l, 0, &lo, &hi));
  assert_int_equal(lo, 0);
  assert_int_equal(hi, 60);
  assert_false(nsl_lod_extent(l, 2, &lo, &hi));
  nsl_lod_cell c[4];
  /* columns [0,20) [20,40) [40,60) [60,80) */
  assert_int_equal(nsl_lod_query(l, 0, 0, 80, 4, c, &err), NSL_OK);
  assert_int_equal(c[0].count, 2);
  assert_int_equal(c[0].starts, 2);
  assert_int_equal(c[0].busy, 15);
  assert_int_equal(c[0].row, 1);   /* covers t0 = 0 */
  assert_int_equal(c[0].cls, 0);
  assert_int_equal(c[1].count, 1);
  assert_int_equal(c[1].busy, 10);
  assert_int_equal(c[1].row, 0);
  assert_int_equal(c[1].cls, 1);
  assert_int_equal(c[2].count, 1);
  assert_int_equal(c[2].starts, 0);   /* [30,60) runs into it */
  assert_int_equal(c[2].busy, 20);
  assert_int_equal(c[2].row, 0);
  assert_int_equal(c[3].count, 0);
  assert_int_equal(c[3].row, -1);
  assert_int_equal(c[3].cls, -1);
  assert_int_equal(nsl_lod_at(l, 0, 12), 2);
  assert_int_equal(nsl_lod_at(l, 0, 15), -1);
  assert_int_equal(nsl_lod_at(l, 0, 59), 0);
  assert_int_equal(nsl_lod_step(l, 0, 0, 1), 2);
  assert_int_equal(nsl_lod_step(l, 0, 10, 1), 0);
  assert_int_equal(nsl_lod_step(l, 0, 30, 1), -1);
  assert_int_equal(nsl_lod_step(l, 0, 30, -1), 2);
  assert_int_equal(nsl_lod_step(l, 0, 0, -1), -1);
  /* bad arguments */
  assert_int_equal(nsl_lod_query(l, 3, 0, 10, 1, c, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_lod_query(l, 0, 10, 10, 1, c, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_lod_query(l, 0, 0, 10, 0, c, &err), NSL_ERR_ARG);
  int64_t bb[4], bs[4];
  assert_int_equal(nsl_lod_bins(l, 3, 0, 10, 1, bb, bs, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_lod_bins(l, 0, 10, 10, 1, bb, bs, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_lod_bins(l, 0, 0, 10, 0, bb, bs, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_lod_bins(l, 0, 0, 80, 4, bb, bs, &err), NSL_OK);   /* the hand columns above */
  assert_int_equal(bb[0], 15);
  assert_int_equal(bb[1], 10);
  assert_int_equal(bb[2], 20);
  assert_int_equal(bb[3], 0);
  assert_int_equal(bs[0], 2);
  assert_int_equal(bs[2], 0);
  nsl_column *b = FX_BOOL(1, 0, 1, 0, 1, 0);
  assert_null(nsl_lod_build(s, e, b, NULL, 3, &err));   /* a lane column must hold integers */
  nsl_column_release(b);
  nsl_lod_free(l);
  nsl_column *cols[] = {s, e, g, k};
  for (int i = 0; i < 4; i++) nsl_column_release(cols[i]);
}

#define N 600
#define LANES 5
#define T 2000

/* Random events: lanes 0..2 hold non-overlapping events (a GPU stream), in
 * start order (mode 0), shuffled (1) or in three runs (2: every third
 * row, then the next, as tables of one stream put one after the other);
 * lanes 3..4 overlapping ones. */
static void random_events(int64_t *s, int64_t *e, int64_t *g, int64_t *k, int mode) {
  int shuffled = mode == 1;
  int64_t at[LANES] = {0};
  for (int i = 0; i < N; i++) {
    g[i] = fx_range(0, LANES - 1);
    k[i] = fx_range(0, 3);
    if (g[i] < 3) {
      s[i] = at[g[i]] + fx_range(0, 12);
      e[i] = s[i] + fx_range(0, 9);
      at[g[i]] = e[i];
    } else {
      s[i] = fx_range(0, T - 40);
      e[i] = s[i] + fx_range(0, 40);
    }
  }
  for (int i = 0; shuffled && i < N; i++) {
    int j = (int)fx_range(i, N - 1);
    int64_t *a[4] = {s, e, g, k};
    for (int q = 0; q < 4; q++) {
      int64_t t = a[q][i];
      a[q][i] = a[q][j];
      a[q][j] = t;
    }
  }
  if (mode == 2) {   /* rows 0, 3, 6, ..., then 1, 4, ..., then 2, 5, ...: each lane in three ascending runs */
    static int64_t tmp[4][N];
    int64_t *a[4] = {s, e, g, k};
    int w = 0;
    for (int r = 0; r < 3; r++)
      for (int i = r; i < N; i += 3, w++)
        for (int q = 0; q < 4; q++) tmp[q][w] = a[q][i];
    for (int q = 0; q < 4; q++) memcpy(a[q], tmp[q], sizeof tmp[q]);
  }
}

/* Brute force over every row of lane g for column [t0, t1). */
static void brute(const int64_t *s, const int64_t *e, const int64_t *g, const int64_t *k, const uint8_t *keep,
                  int64_t lane, int64_t t0, int64_t t1, int64_t *count, int64_t *busy, int64_t *starts,
                  int *cls) {
  static uint8_t cover[T + 64];
  int64_t per[4] = {0};
  memset(cover, 0, sizeof cover);
  *count = 0, *starts = 0;
  for (int i = 0; i < N; i++) {
    if (g[i] != lane || (keep && !keep[i])) continue;
    int starts_in = s[i] >= t0 && s[i] < t1;
    if (starts_in || (s[i] < t0 && e[i] > t0)) (*count)++;
    *starts += starts_in;
    int64_t a = s[i] > t0 ? s[i] : t0, b = e[i] < t1 ? e[i] : t1;
    for (int64_t t = a; t < b; t++) cover[t] = 1;
    if (b > a) per[k[i]] += b - a;
    if (starts_in) per[k[i]] += 1;
  }
  *busy = 0;
  for (int64_t t = t0; t < t1; t++) *busy += cover[t];
  *cls = -1;
  for (int c = 0; c < 4; c++)
    if (per[c] > 0 && (*cls < 0 || per[c] > per[*cls])) *cls = c;
}

static void check_against_brute(const nsl_lod *l, const int64_t *s, const int64_t *e, const int64_t *g,
                                 const int64_t *k, const uint8_t *keep) {
  nsl_error err = {0};
  nsl_lod_cell cells[64];
  int64_t bbusy[64], bstarts[64];
  for (int trial = 0; trial < 40; trial++) {
    int64_t from = fx_range(0, T / 2), to = from + fx_range(1, T / 2), ncols = fx_range(1, 64);
    for (int64_t lane = 0; lane < LANES; lane++) {
      assert_int_equal(nsl_lod_query(l, lane, from, to, ncols, cells, &err), NSL_OK);
      assert_int_equal(nsl_lod_bins(l, lane, from, to, ncols, bbusy, bstarts, &err), NSL_OK);
      for (int64_t c = 0; c < ncols; c++) {
        assert_int_equal(bbusy[c], cells[c].busy);   /* the bins: the cells' numbers */
        assert_int_equal(bstarts[c], cells[c].starts);
        int64_t t0 = from + (to - from) * c / ncols, t1 = from + (to - from) * (c + 1) / ncols;
        int64_t count, busy, starts;
        int cls;
        brute(s, e, g, k, keep, lane, t0, t1, &count, &busy, &starts, &cls);
        if (t1 <= t0) count = 0, starts = 0;
        assert_int_equal(cells[c].busy, busy);       /* the union, overlapping events or not */
        assert_int_equal(cells[c].starts, starts);
        if (lane < 3) {   /* streams: everything exact */
          assert_int_equal(cells[c].count, count);
          if (count) assert_int_equal(cells[c].cls, cls);
        } else {          /* overlapping events: empty exactly when nothing overlaps */
          assert_int_equal(cells[c].count > 0, count > 0);
        }
        if (cells[c].row >= 0) {   /* the row overlaps the column, on the lane */
          int64_t r = cells[c].row;
          assert_int_equal(g[r], lane);
          assert_true(s[r] < t1 && (e[r] > t0 || s[r] >= t0));
        } else {
          assert_int_equal(count, 0);
        }
      }
    }
  }
  /* the event under t and the next / previous start */
  for (int trial = 0; trial < 300; trial++) {
    int64_t lane = fx_range(0, LANES - 1), t = fx_range(0, T);
    int64_t at = nsl_lod_at(l, lane, t), next = -1, prev = -1, covering = -1;
    for (int i = 0; i < N; i++) {
      if (g[i] != lane || (keep && !keep[i])) continue;
      if (s[i] <= t && e[i] > t && (covering < 0 || s[i] >= s[covering])) covering = i;
      if (s[i] > t && (next < 0 || s[i] < s[next])) next = i;
      if (s[i] < t && (prev < 0 || s[i] >= s[prev])) prev = i;
    }
    if (covering < 0) assert_int_equal(at, -1);
    else assert_true(at >= 0 && s[at] == s[covering] && e[at] > t && g[at] == lane);
    int64_t n1 = nsl_lod_step(l, lane, t, 1), p1 = nsl_lod_step(l, lane, t, -1);
    assert_int_equal(n1, next);   /* of equal starts, the lowest row (rows keep their order in a lane) */
    assert_int_equal(p1, prev);   /* and the highest */
  }
}

static void test_random(void **state) {
  (void)state;
  static int64_t s[N], e[N], g[N], k[N];
  static uint8_t keep[N];
  for (int round = 0; round < 9; round++) {
    fx_seed(0x10d + (uint64_t)round);
    random_events(s, e, g, k, round % 3);
    nsl_column *cs = fx_i64(N, s), *ce = fx_i64(N, e), *cg = fx_i64(N, g), *ck = fx_i64(N, k);
    nsl_error err = {0};
    nsl_lod *l = nsl_lod_build(cs, ce, cg, ck, LANES, &err);
    assert_non_null(l);
    check_against_brute(l, s, e, g, k, NULL);
    /* the same rows in 1 to 4 parts (a part may be empty): the same answers, rows numbered across the parts */
    {
      int nparts = (int)fx_range(1, 4);
      int64_t cut[5] = {0};
      for (int q = 1; q < nparts; q++) cut[q] = fx_range(cut[q - 1], N);
      cut[nparts] = N;
      nsl_column *ps[4], *pe[4], *pg[4], *pk[4];
      for (int q = 0; q < nparts; q++) {
        int64_t m = cut[q + 1] - cut[q];
        ps[q] = fx_i64(m, s + cut[q]), pe[q] = fx_i64(m, e + cut[q]), pg[q] = fx_i64(m, g + cut[q]);
        pk[q] = fx_i64(m, k + cut[q]);
      }
      nsl_lod *pl = nsl_lod_build_parts((const nsl_column *const *)ps, (const nsl_column *const *)pe,
                                        (const nsl_column *const *)pg, (const nsl_column *const *)pk, nparts, LANES,
                                        &err);
      assert_non_null(pl);
      check_against_brute(pl, s, e, g, k, NULL);
      nsl_lod_free(pl);
      for (int q = 0; q < nparts; q++) {
        nsl_column_release(ps[q]), nsl_column_release(pe[q]), nsl_column_release(pg[q]);
        nsl_column_release(pk[q]);
      }
    }
    /* the filter equals an index of the kept rows (rows keep their numbers) */
    for (int i = 0; i < N; i++) keep[i] = fx_range(0, 2) != 0;
    nsl_column *mask = fx_bool(N, keep);
    nsl_lod *f = nsl_lod_filter(l, mask, &err);
    assert_non_null(f);
    check_against_brute(f, s, e, g, k, keep);
    int64_t kept = 0;
    for (int i = 0; i < N; i++) kept += keep[i];
    int64_t sum = 0;
    for (int64_t lane = 0; lane < LANES; lane++) sum += nsl_lod_count(f, lane);
    assert_int_equal(sum, kept);
    assert_true(nsl_lod_bytes(f) > 0);
    nsl_lod_free(f);
    nsl_lod_free(l);
    nsl_column *cols[] = {cs, ce, cg, ck, mask};
    for (int i = 0; i < 5; i++) nsl_column_release(cols[i]);
  }
}

/* Over a million rows (the build then runs on the threads): six lanes -- two GPU streams in start order, two
 * in three runs, one shuffled, one of overlapping events -- and rows that take no part; built in three parts
 * on 2, 3 and 7 threads, the index answers every query as the one built from one column on one thread. */
#define BIG 1300000
static const int64_t *sort_s, *sort_g;
static int by_lane_start_row(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  if (sort_g[a] != sort_g[b]) return sort_g[a] < sort_g[b] ? -1 : 1;
  if (sort_s[a] != sort_s[b]) return sort_s[a] < sort_s[b] ? -1 : 1;
  return a < b ? -1 : a > b;
}

static void test_threads(void **state) {
  (void)state;
  int64_t *s = malloc(BIG * sizeof *s), *e = malloc(BIG * sizeof *e), *g = malloc(BIG * sizeof *g);
  int64_t *k = malloc(BIG * sizeof *k);
  assert_true(s && e && g && k);
  fx_seed(0x7ad);
  int64_t at[6] = {0}, third = BIG / 3;
  for (int64_t i = 0; i < BIG; i++) {
    int64_t lane = fx_range(0, 6), run = i / third;
    g[i] = lane;   /* lane 6: outside */
    k[i] = fx_range(0, 2);
    if (lane == 5) {
      s[i] = fx_range(0, 40000000);
      e[i] = s[i] + fx_range(0, 5000);
    } else {
      s[i] = at[lane < 6 ? lane : 0] + fx_range(0, 30);
      e[i] = s[i] + fx_range(0, 20);
      if (lane < 6) at[lane] = e[i];
      if (lane == 2 || lane == 3) s[i] += run * 7, e[i] += run * 7;   /* each third later than its run's own */
    }
    if (fx_range(0, 999) == 0) e[i] = s[i] - 1;   /* stops before it starts: no part */
  }
  /* lanes 2 and 3: the later thirds start before the earlier ones end (three ascending runs); lane 4 shuffled */
  for (int64_t i = 0; i < BIG; i++)
    if (g[i] == 2 || g[i] == 3) s[i] -= (i / third) * (at[g[i]] / 2), e[i] -= (i / third) * (at[g[i]] / 2);
  for (int64_t i = 0; i < BIG; i++)
    if (g[i] == 4) {
      int64_t j = fx_range(i, BIG - 1);
      if (g[j] == 4) {
        int64_t t = s[i];
        s[i] = s[j], s[j] = t;
        t = e[i], e[i] = e[j], e[j] = t;
      }
    }
  for (int64_t i = 0; i < BIG; i += 4999) s[i] = NSL_NULL_I64;   /* NULLs take no part */
  for (int64_t i = 3; i < BIG; i += 7001) g[i] = NSL_NULL_I64;
  nsl_error err = {0};
  nsl_column *cs = fx_i64(BIG, s), *ce = fx_i64(BIG, e), *cg = fx_i64(BIG, g), *ck = fx_i64(BIG, k);
  setenv("NSL_THREADS", "1", 1);
  nsl_lod *ref = nsl_lod_build(cs, ce, cg, ck, 6, &err);
  assert_non_null(ref);
  int64_t cut[4] = {0, 400000, 1000000, BIG};
  nsl_column *ps[3], *pe[3], *pg[3], *pk[3];
  for (int q = 0; q < 3; q++) {
    int64_t m = cut[q + 1] - cut[q];
    ps[q] = fx_i64(m, s + cut[q]), pe[q] = fx_i64(m, e + cut[q]), pg[q] = fx_i64(m, g + cut[q]);
    pk[q] = fx_i64(m, k + cut[q]);
  }
  const char *threads[] = {"2", "3", "7"};
  static nsl_lod_cell want[700], got[700];
  for (int t = 0; t < 3; t++) {
    setenv("NSL_THREADS", threads[t], 1);
    nsl_lod *l = nsl_lod_build_parts((const nsl_column *const *)ps, (const nsl_column *const *)pe,
                                     (const nsl_column *const *)pg, (const nsl_column *const *)pk, 3, 6, &err);
    assert_non_null(l);
    assert_int_equal(nsl_lod_bytes(l), nsl_lod_bytes(ref));
    for (int64_t lane = 0; lane < 6; lane++) {
      assert_int_equal(nsl_lod_count(l, lane), nsl_lod_count(ref, lane));
      int64_t lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
      assert_int_equal(nsl_lod_extent(l, lane, &lo1, &hi1), nsl_lod_extent(ref, lane, &lo2, &hi2));
      assert_int_equal(lo1, lo2);
      assert_int_equal(hi1, hi2);
      for (int trial = 0; trial < 40; trial++) {
        int64_t from = fx_range(0, hi2 > 0 ? hi2 : 1), to = from + fx_range(1, trial % 2 ? 5000 : hi2 + 1);
        int64_t ncols = fx_range(1, 700);
        assert_int_equal(nsl_lod_query(l, lane, from, to, ncols, got, &err), NSL_OK);
        assert_int_equal(nsl_lod_query(ref, lane, from, to, ncols, want, &err), NSL_OK);
        for (int64_t c = 0; c < ncols; c++) {
          assert_int_equal(got[c].count, want[c].count);
          assert_int_equal(got[c].starts, want[c].starts);
          assert_int_equal(got[c].busy, want[c].busy);
          assert_int_equal(got[c].row, want[c].row);
          assert_int_equal(got[c].cls, want[c].cls);
        }
        int64_t x = fx_range(0, hi2 + 1);
        assert_int_equal(nsl_lod_at(l, lane, x), nsl_lod_at(ref, lane, x));
        assert_int_equal(nsl_lod_step(l, lane, x, 1), nsl_lod_step(ref, lane, x, 1));
        assert_int_equal(nsl_lod_step(l, lane, x, -1), nsl_lod_step(ref, lane, x, -1));
      }
    }
    nsl_lod_free(l);
  }
  /* without classes, lanes I64 or I32 (the pieces' loops without a type test): the same as one thread's index
   * with a class column of zeros (the general loops) */
  {
    int64_t *zero = calloc(BIG, sizeof *zero);
    int32_t *g32 = malloc(BIG * sizeof *g32);
    assert_true(zero && g32);
    for (int64_t i = 0; i < BIG; i++) g32[i] = g[i] == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)g[i];
    nsl_column *cz = fx_i64(BIG, zero), *cg32 = fx_i32(BIG, g32);
    setenv("NSL_THREADS", "1", 1);
    nsl_lod *want0 = nsl_lod_build(cs, ce, cg, cz, 6, &err);
    setenv("NSL_THREADS", "3", 1);
    nsl_lod *a64 = nsl_lod_build(cs, ce, cg, NULL, 6, &err), *a32 = nsl_lod_build(cs, ce, cg32, NULL, 6, &err);
    assert_true(want0 && a64 && a32);
    for (int64_t lane = 0; lane < 6; lane++) {
      int64_t lo = 0, hi = 0;
      nsl_lod_extent(want0, lane, &lo, &hi);
      assert_int_equal(nsl_lod_count(a64, lane), nsl_lod_count(want0, lane));
      assert_int_equal(nsl_lod_count(a32, lane), nsl_lod_count(want0, lane));
      for (int trial = 0; trial < 20; trial++) {
        int64_t from = fx_range(lo - 10, hi), to = from + fx_range(1, trial % 2 ? 3000 : hi - lo + 20);
        int64_t ncols = fx_range(1, 700);
        assert_int_equal(nsl_lod_query(want0, lane, from, to, ncols, want, &err), NSL_OK);
        nsl_lod *both[2] = {a64, a32};
        for (int b = 0; b < 2; b++) {
          assert_int_equal(nsl_lod_query(both[b], lane, from, to, ncols, got, &err), NSL_OK);
          for (int64_t c = 0; c < ncols; c++) {
            assert_int_equal(got[c].count, want[c].count);
            assert_int_equal(got[c].busy, want[c].busy);
            assert_int_equal(got[c].row, want[c].row);
            assert_int_equal(got[c].cls, want[c].cls);
          }
        }
      }
    }
    nsl_lod_free(want0), nsl_lod_free(a64), nsl_lod_free(a32);
    nsl_column_release(cz), nsl_column_release(cg32);
    free(zero), free(g32);
  }
  /* the bins of many columns (cut for the threads) as one thread's cells: a window wider and one narrower
   * (in ns) than the columns */
  int64_t nb = 300000;
  nsl_lod_cell *cells = malloc((size_t)nb * sizeof *cells);
  int64_t *busy = malloc((size_t)nb * sizeof *busy), *starts = malloc((size_t)nb * sizeof *starts);
  assert_true(cells && busy && starts);
  for (int64_t lane = 0; lane < 6; lane++) {
    int64_t lo = 0, hi = 0;
    nsl_lod_extent(ref, lane, &lo, &hi);
    int64_t wins[2][2] = {{lo - 5, hi + 5}, {lo + (hi - lo) / 3, lo + (hi - lo) / 3 + nb / 2}};
    for (int w = 0; w < 2; w++) {
      setenv("NSL_THREADS", "1", 1);
      assert_int_equal(nsl_lod_query(ref, lane, wins[w][0], wins[w][1], nb, cells, &err), NSL_OK);
      setenv("NSL_THREADS", "3", 1);
      assert_int_equal(nsl_lod_bins(ref, lane, wins[w][0], wins[w][1], nb, busy, starts, &err), NSL_OK);
      for (int64_t c = 0; c < nb; c++) {
        assert_int_equal(busy[c], cells[c].busy);
        assert_int_equal(starts[c], cells[c].starts);
      }
    }
  }
  free(cells), free(busy), free(starts);
  unsetenv("NSL_THREADS");
  /* each lane in order of start, then of input row (equal starts abound where runs overlap): the first event
   * starting after s - 1 is the lowest row starting at s, the last starting before s + 1 the highest */
  int64_t *ord = malloc(BIG * sizeof *ord), n = 0;
  assert_non_null(ord);
  for (int64_t i = 0; i < BIG; i++)
    if (g[i] >= 0 && g[i] < 6 && s[i] != NSL_NULL_I64 && e[i] >= s[i]) ord[n++] = i;   /* (the rows that take part) */
  sort_s = s, sort_g = g;
  qsort(ord, (size_t)n, sizeof *ord, by_lane_start_row);
  int64_t ties = 0;
  for (int64_t a = 0, b; a < n; a = b) {
    for (b = a + 1; b < n && g[ord[b]] == g[ord[a]] && s[ord[b]] == s[ord[a]]; b++) {}
    ties += b - a > 1;
    assert_int_equal(nsl_lod_step(ref, g[ord[a]], s[ord[a]] - 1, 1), ord[a]);
    assert_int_equal(nsl_lod_step(ref, g[ord[a]], s[ord[a]] + 1, -1), ord[b - 1]);
  }
  assert_true(ties > 1000);
  free(ord);
  nsl_lod_free(ref);
  nsl_column *all[] = {cs, ce, cg, ck};
  for (int q = 0; q < 4; q++) nsl_column_release(all[q]);
  for (int q = 0; q < 3; q++) {
    nsl_column_release(ps[q]), nsl_column_release(pe[q]), nsl_column_release(pg[q]);
    nsl_column_release(pk[q]);
  }
  free(s), free(e), free(g), free(k);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand),
      cmocka_unit_test(test_random),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
