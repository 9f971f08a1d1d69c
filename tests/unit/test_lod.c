/* test_lod.c -- the timeline's level of detail (src/core/lod.c) against a
 * hand-computed case and against brute force over every event on random
 * lanes: per column the events that overlap it and those starting in it,
 * the covered ns (a per-nanosecond bitmap, for lanes whose events overlap
 * or not), the class with the most time, the event under a time and the
 * next and previous start; the filter against an index built from the
 * kept rows alone. */
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
 * start order or shuffled; lanes 3..4 overlapping ones. */
static void random_events(int64_t *s, int64_t *e, int64_t *g, int64_t *k, int shuffled) {
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
  for (int trial = 0; trial < 40; trial++) {
    int64_t from = fx_range(0, T / 2), to = from + fx_range(1, T / 2), ncols = fx_range(1, 64);
    for (int64_t lane = 0; lane < LANES; lane++) {
      assert_int_equal(nsl_lod_query(l, lane, from, to, ncols, cells, &err), NSL_OK);
      for (int64_t c = 0; c < ncols; c++) {
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
    if (next < 0) assert_int_equal(n1, -1);
    else assert_int_equal(s[n1], s[next]);
    if (prev < 0) assert_int_equal(p1, -1);
    else assert_int_equal(s[p1], s[prev]);
  }
}

static void test_random(void **state) {
  (void)state;
  static int64_t s[N], e[N], g[N], k[N];
  static uint8_t keep[N];
  for (int round = 0; round < 6; round++) {
    fx_seed(0x10d + (uint64_t)round);
    random_events(s, e, g, k, round % 2);
    nsl_column *cs = fx_i64(N, s), *ce = fx_i64(N, e), *cg = fx_i64(N, g), *ck = fx_i64(N, k);
    nsl_error err = {0};
    nsl_lod *l = nsl_lod_build(cs, ce, cg, ck, LANES, &err);
    assert_non_null(l);
    check_against_brute(l, s, e, g, k, NULL);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand),
      cmocka_unit_test(test_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
