/* test_ledger.c -- the ledger sweep of ledger.c against a hand-computed case
 * and a per-nanosecond brute force on random data: at every nanosecond of a
 * window, the lowest class with a row of the window's group open takes it;
 * a row's charge is the nanoseconds its class took while it was open.  The
 * launch waits against a hand-computed case and a reference that sorts the
 * rows by insertion (NULL first, ties in row order) and applies the rules
 * of nsl.h to each row and the one before it. */
#include <stdio.h>
#include <stdlib.h>

#include "kernel_fixtures.h"

#define SPAN 120
#define NCLS 4

static void sweep(const nsl_column *s, const nsl_column *e, const nsl_column *g, const nsl_column *c, int nc,
                  const nsl_column *wg, const nsl_column *wl, const nsl_column *wh, nsl_column **tot,
                  nsl_column **ch) {
  nsl_error err = {0};
  if (nsl_ledger_sweep(s, e, g, c, nc, wg, wl, wh, tot, ch, &err) != NSL_OK) fail_msg("ledger failed: %s", err.msg);
}

static void test_ledger_hand(void **state) {
  (void)state;
  /* group 0: class 0 [10,20), class 1 [15,40), class 2 [0,100); group 1: class 1 [5,10);
   * a NULL row, an empty row and a row of group -1 take nothing */
  nsl_column *s = FX_I64(10, 15, 0, 5, NSL_NULL_I64, 50, 0), *e = FX_I64(20, 40, 100, 10, 9, 50, 100);
  nsl_column *g = FX_I64(0, 0, 0, 1, 0, 0, -1), *c = FX_I64(0, 1, 2, 1, 0, 0, 0);
  /* windows: group 0 [0,30) and [30,120); group 1 [0,20) */
  nsl_column *wg = FX_I64(0, 1, 0), *wl = FX_I64(0, 0, 30), *wh = FX_I64(30, 20, 120);
  nsl_column *tot, *ch;
  sweep(s, e, g, c, 3, wg, wl, wh, &tot, &ch);
  /* [0,30): 0 takes 10 ([10,20)), 1 takes 10 ([20,30)), 2 takes 10 ([0,10)), none 0
   * group 1 [0,20): 1 takes 5, none 15;  [30,120): 1 takes 10, 2 takes 60, none 20 */
  FX_EXPECT_I64(tot, 10, 10, 10, 0, 0, 5, 0, 15, 0, 10, 60, 20);
  FX_EXPECT_I64(ch, 10, 20, 70, 5, 0, 0, 0);
  nsl_column_release(tot);
  nsl_column_release(ch);
  /* overlapping windows of one group are refused */
  nsl_column *og = FX_I64(0, 0), *ol = FX_I64(0, 10), *oh = FX_I64(20, 30);
  nsl_error err = {0};
  assert_int_equal(nsl_ledger_sweep(s, e, g, c, 3, og, ol, oh, &tot, NULL, &err), NSL_ERR_ARG);
  assert_null(tot);
  /* a window with no rows is all remainder */
  nsl_column *eg = FX_I64(5), *el = FX_I64(3), *eh = FX_I64(11);
  sweep(s, e, g, c, 3, eg, el, eh, &tot, NULL);
  FX_EXPECT_I64(tot, 0, 0, 0, 8);
  nsl_column_release(tot);
  nsl_column *cols[] = {s, e, g, c, wg, wl, wh, og, ol, oh, eg, el, eh};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

static void test_ledger_random(void **state) {
  (void)state;
  for (int round = 0; round < 300; round++) {
    fx_seed(4200 + (uint64_t)round);
    int64_t n = fx_range(0, 50), ng = fx_range(1, 3);
    nsl_column *s = nsl_column_new(NSL_I64, n, NULL), *e = nsl_column_new(NSL_I64, n, NULL);
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL), *c = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      int64_t a = fx_range(0, SPAN - 1), b = a + fx_range(-3, 40);
      nsl_i64(s)[i] = a;
      nsl_i64(e)[i] = b;
      nsl_i64(g)[i] = fx_range(-1, ng - 1);
      nsl_i64(c)[i] = fx_range(0, NCLS - 1);
    }
    /* per group, disjoint windows over [0, SPAN + 40) cut at random points */
    int64_t wgv[64], wlv[64], whv[64], nw = 0;
    for (int64_t grp = 0; grp < ng; grp++) {
      int64_t t = fx_range(0, 10);
      while (t < SPAN + 40 && nw < 64) {
        int64_t len = fx_range(0, 50);
        wgv[nw] = grp;
        wlv[nw] = t;
        whv[nw++] = t + len;
        t += len + fx_range(0, 5);
      }
    }
    nsl_column *wg = nsl_column_new(NSL_I64, nw, NULL), *wl = nsl_column_new(NSL_I64, nw, NULL),
               *wh = nsl_column_new(NSL_I64, nw, NULL);
    for (int64_t w = nw - 1, q = 0; w >= 0; w--, q++) {   /* given in reverse: the sweep sorts them */
      nsl_i64(wg)[q] = wgv[w];
      nsl_i64(wl)[q] = wlv[w];
      nsl_i64(wh)[q] = whv[w];
    }
    nsl_column *tot, *ch;
    sweep(s, e, g, c, NCLS, wg, wl, wh, &tot, &ch);
    int64_t charged[64] = {0};
    for (int64_t q = 0; q < nw; q++) {
      int64_t want[NCLS + 1] = {0};
      for (int64_t t = nsl_i64(wl)[q]; t < nsl_i64(wh)[q]; t++) {
        int top = NCLS;
        for (int64_t i = 0; i < n; i++)
          if (nsl_i64(g)[i] == nsl_i64(wg)[q] && nsl_i64(s)[i] <= t && t < nsl_i64(e)[i] && nsl_i64(c)[i] < top)
            top = (int)nsl_i64(c)[i];
        want[top]++;
        for (int64_t i = 0; i < n; i++)
          if (nsl_i64(g)[i] == nsl_i64(wg)[q] && nsl_i64(s)[i] <= t && t < nsl_i64(e)[i] && nsl_i64(c)[i] == top)
            charged[i]++;
      }
      for (int k = 0; k <= NCLS; k++)
        if (nsl_i64(tot)[q * (NCLS + 1) + k] != want[k])
          fail_msg("round %d window %lld class %d: %lld, brute force %lld", round, (long long)q, k,
                   (long long)nsl_i64(tot)[q * (NCLS + 1) + k], (long long)want[k]);
    }
    for (int64_t i = 0; i < n; i++)
      if (nsl_i64(ch)[i] != charged[i])
        fail_msg("round %d row %lld: charged %lld, brute force %lld", round, (long long)i,
                 (long long)nsl_i64(ch)[i], (long long)charged[i]);
    /* the same windows beside a second set that overlaps them (one window per group over the whole span, as a
     * run beside its steps), in one sweep: each set's totals as its own sweep gives, the charges of the first */
    nsl_column *rg = nsl_column_new(NSL_I64, ng, NULL), *rl = nsl_column_new(NSL_I64, ng, NULL),
               *rh = nsl_column_new(NSL_I64, ng, NULL);
    for (int64_t grp = 0; grp < ng; grp++) {
      nsl_i64(rg)[grp] = grp;
      nsl_i64(rl)[grp] = 0;
      nsl_i64(rh)[grp] = SPAN + 40;
    }
    const nsl_column *sg[2] = {wg, rg}, *sl[2] = {wl, rl}, *sh[2] = {wh, rh};
    nsl_column *both[2], *ch2, *rtot;
    nsl_error err = {0};
    if (nsl_ledger_sweep_sets(s, e, g, c, NCLS, 2, sg, sl, sh, both, &ch2, &err) != NSL_OK)
      fail_msg("ledger sets failed: %s", err.msg);
    sweep(s, e, g, c, NCLS, rg, rl, rh, &rtot, NULL);
    for (int64_t k = 0; k < nw * (NCLS + 1); k++)
      if (nsl_i64(both[0])[k] != nsl_i64(tot)[k]) fail_msg("round %d: set 0 element %lld differs", round, (long long)k);
    for (int64_t k = 0; k < ng * (NCLS + 1); k++)
      if (nsl_i64(both[1])[k] != nsl_i64(rtot)[k]) fail_msg("round %d: set 1 element %lld differs", round, (long long)k);
    for (int64_t i = 0; i < n; i++)
      if (nsl_i64(ch2)[i] != nsl_i64(ch)[i]) fail_msg("round %d row %lld: the charge of set 0 differs", round, (long long)i);
    nsl_column *cols[] = {s, e, g, c, wg, wl, wh, tot, ch, rg, rl, rh, both[0], both[1], ch2, rtot};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
}

/* Many rows open at once (past the first room of the sweep's heap of open rows): 3,000 rows of class 1
 * over [0, 100 + i) and, every tenth, one of class 0 over [i, i + 5); window [0, 5000). */
static void test_ledger_many_open(void **state) {
  (void)state;
  enum { N = 3000 };
  nsl_column *s = nsl_column_new(NSL_I64, N + N / 10, NULL), *e = nsl_column_new(NSL_I64, N + N / 10, NULL);
  nsl_column *g = nsl_column_new(NSL_I64, N + N / 10, NULL), *c = nsl_column_new(NSL_I64, N + N / 10, NULL);
  for (int64_t i = 0; i < N; i++) {
    nsl_i64(s)[i] = 0;
    nsl_i64(e)[i] = 100 + i;
    nsl_i64(c)[i] = 1;
  }
  for (int64_t k = 0; k < N / 10; k++) {   /* [10k, 10k + 5): class 0 over half of each ten ns up to 3,000 */
    nsl_i64(s)[N + k] = 10 * k;
    nsl_i64(e)[N + k] = 10 * k + 5;
    nsl_i64(c)[N + k] = 0;
  }
  nsl_column *wg = FX_I64(0), *wl = FX_I64(0), *wh = FX_I64(5000);
  nsl_column *tot, *ch;
  sweep(s, e, g, c, 2, wg, wl, wh, &tot, &ch);
  /* class 0: 300 x 5 ns; class 1: [0, 3099) less those; none: [3099, 5000) */
  FX_EXPECT_I64(tot, 1500, 3099 - 1500, 5000 - 3099);
  for (int64_t i = 0; i < N; i++) {   /* a class 1 row: its time less class 0's inside it */
    int64_t hi = 100 + i, over = 0;
    for (int64_t k = 0; k < N / 10; k++) {
      int64_t a = 10 * k, b = 10 * k + 5 < hi ? 10 * k + 5 : hi;
      if (b > a) over += b - a;
    }
    if (nsl_i64(ch)[i] != hi - over) fail_msg("row %lld: charged %lld, want %lld", (long long)i,
                                             (long long)nsl_i64(ch)[i], (long long)(hi - over));
  }
  for (int64_t k = 0; k < N / 10; k++) assert_int_equal(nsl_i64(ch)[N + k], 5);
  nsl_column *cols[] = {s, e, g, c, wg, wl, wh, tot, ch};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

/* Window sets: overlapping windows within a later set are refused with every output left NULL; the number
 * of sets is bounded. */
static void test_ledger_sets_refused(void **state) {
  (void)state;
  nsl_column *s = FX_I64(0), *e = FX_I64(10), *g = FX_I64(0), *c = FX_I64(0);
  nsl_column *wg = FX_I64(0), *wl = FX_I64(0), *wh = FX_I64(10);
  nsl_column *og = FX_I64(0, 0), *ol = FX_I64(0, 5), *oh = FX_I64(8, 10);
  const nsl_column *sg[2] = {wg, og}, *sl[2] = {wl, ol}, *sh[2] = {wh, oh};
  nsl_column *tot[2] = {s, s}, *ch = s;   /* not NULL before: the refusal must clear them */
  nsl_error err = {0};
  assert_int_equal(nsl_ledger_sweep_sets(s, e, g, c, 1, 2, sg, sl, sh, tot, &ch, &err), NSL_ERR_ARG);
  assert_null(tot[0]);
  assert_null(tot[1]);
  assert_null(ch);
  assert_int_equal(nsl_ledger_sweep_sets(s, e, g, c, 1, 0, sg, sl, sh, tot, NULL, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_ledger_sweep_sets(s, e, g, c, 1, NSL_LEDGER_SETS + 1, sg, sl, sh, tot, NULL, &err), NSL_ERR_ARG);
  nsl_column *cols[] = {s, e, g, c, wg, wl, wh, og, ol, oh};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

static void launch_waits(const nsl_column *g, const nsl_column *s, const nsl_column *l, nsl_column **rows,
                         nsl_column **from, nsl_column **to) {
  nsl_error err = {0};
  if (nsl_launch_waits(g, s, l, rows, from, to, &err) != NSL_OK) fail_msg("launch waits failed: %s", err.msg);
}

/* Two devices, rows in no order.  Device 0 by start: rows 2 (10), 0 (30), 3 (50), 4 (80), 6 (90).  Row 0's
 * launch ended at 28, after row 2 started: it waits [10, 28); row 3's at 45: [30, 45); row 4's at 95, after
 * its own start: [50, 80); row 6's at 70, before row 4 started: none.  Device 1: row 1 has none before it,
 * row 5's launch stop is NULL: none. */
static void test_launch_waits_hand(void **state) {
  (void)state;
  nsl_column *g = FX_I64(0, 1, 0, 0, 0, 1, 0), *s = FX_I64(30, 5, 10, 50, 80, 20, 90);
  nsl_column *l = FX_I64(28, 1, 2, 45, 95, NSL_NULL_I64, 70);
  nsl_column *rows, *from, *to;
  launch_waits(g, s, l, &rows, &from, &to);
  FX_EXPECT_I64(rows, 0, 3, 4);
  FX_EXPECT_I64(from, 10, 30, 50);
  FX_EXPECT_I64(to, 28, 45, 80);
  nsl_column *cols[] = {g, s, l, rows, from, to};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  /* groups that are not ids (the largest int64 among them): sorted, no counting by group */
  g = FX_I64(INT64_MAX, 0, INT64_MAX);
  s = FX_I64(10, 5, 20);
  l = FX_I64(0, 0, 15);
  launch_waits(g, s, l, &rows, &from, &to);
  FX_EXPECT_I64(rows, 2);
  FX_EXPECT_I64(from, 10);
  FX_EXPECT_I64(to, 15);
  nsl_column *more[] = {g, s, l, rows, from, to};
  for (size_t i = 0; i < sizeof more / sizeof *more; i++) nsl_column_release(more[i]);
  /* refusals: a string column, columns of different lengths */
  nsl_column *a = FX_I64(1, 2), *b = FX_I64(1);
  nsl_error err = {0};
  assert_int_equal(nsl_launch_waits(a, b, a, &rows, &from, &to, &err), NSL_ERR_ARG);
  assert_null(rows);
  nsl_column_release(a);
  nsl_column_release(b);
}

/* nsl_launch_waits over n rows (group as g holds it: I32 or I64; gv its values, INT64_MIN for NULL) against
 * the reference. */
static void check_launch_waits(const char *what, int round, const nsl_column *g, const int64_t *gv,
                               const nsl_column *s, const int64_t *sv, const nsl_column *l, const int64_t *lv,
                               int64_t n) {
  /* the reference order: insertion sort by (group, start), NULL first, stable */
  int64_t *ord = malloc((size_t)(n ? n : 1) * sizeof *ord), *wr = malloc((size_t)(n ? n : 1) * 3 * sizeof *wr);
  int64_t *wf = wr + n, *wt = wr + 2 * n, nw = 0;
  assert_true(ord && wr);
  for (int64_t i = 0; i < n; i++) {
    int64_t j = i;
    while (j > 0) {
      int64_t p = ord[j - 1];
      int64_t sp = sv[p] == NSL_NULL_I64 ? INT64_MIN : sv[p], si = sv[i] == NSL_NULL_I64 ? INT64_MIN : sv[i];
      if (gv[p] < gv[i] || (gv[p] == gv[i] && sp <= si)) break;
      ord[j] = p;
      j--;
    }
    ord[j] = i;
  }
  for (int64_t q = 1; q < n; q++) {
    int64_t i = ord[q], p = ord[q - 1];
    if (gv[i] == INT64_MIN || gv[p] == INT64_MIN || gv[i] != gv[p]) continue;
    if (sv[i] == NSL_NULL_I64 || sv[p] == NSL_NULL_I64 || lv[i] == NSL_NULL_I64) continue;
    int64_t hi = lv[i] < sv[i] ? lv[i] : sv[i];
    if (hi <= sv[p]) continue;
    wr[nw] = i;
    wf[nw] = sv[p];
    wt[nw++] = hi;
  }
  nsl_column *rows, *from, *to;
  launch_waits(g, s, l, &rows, &from, &to);
  if (rows->len != nw)
    fail_msg("%s round %d: %lld waits, the reference %lld", what, round, (long long)rows->len, (long long)nw);
  for (int64_t k = 0; k < nw; k++)
    if (nsl_i64(rows)[k] != wr[k] || nsl_i64(from)[k] != wf[k] || nsl_i64(to)[k] != wt[k])
      fail_msg("%s round %d wait %lld: row %lld [%lld, %lld), the reference row %lld [%lld, %lld)", what, round,
               (long long)k, (long long)nsl_i64(rows)[k], (long long)nsl_i64(from)[k], (long long)nsl_i64(to)[k],
               (long long)wr[k], (long long)wf[k], (long long)wt[k]);
  nsl_column *cols[] = {rows, from, to};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  free(ord);
  free(wr);
}

/* Random rows (ties, NULL groups, starts and launch stops) against the reference. */
static void test_launch_waits_random(void **state) {
  (void)state;
  for (int round = 0; round < 400; round++) {
    fx_seed(7700 + (uint64_t)round);
    int64_t n = fx_range(0, 60), gv[64], sv[64], lv[64];
    nsl_column *g = nsl_column_new(NSL_I32, n, NULL), *s = nsl_column_new(NSL_I64, n, NULL),
               *l = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      int32_t gi = fx_range(0, 9) == 0 ? NSL_NULL_I32 : (int32_t)fx_range(0, 2);
      gv[i] = gi == NSL_NULL_I32 ? INT64_MIN : gi;
      sv[i] = fx_range(0, 12) == 0 ? NSL_NULL_I64 : fx_range(0, 40);
      lv[i] = fx_range(0, 8) == 0 ? NSL_NULL_I64 : fx_range(-5, 45);
      nsl_i32(g)[i] = gi;
      nsl_i64(s)[i] = sv[i];
      nsl_i64(l)[i] = lv[i];
    }
    check_launch_waits("random", round, g, gv, s, sv, l, lv, n);
    nsl_column *cols[] = {g, s, l};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
}

/* Rows as one to four tables, each in start order with ties (a GPU's kernels, copies and memsets), in groups
 * that are I64 ids: the sweeps take each group's rows merged from those runs instead of sorted.  The ledger
 * against the same rows shuffled (sorted: the brute force of test_ledger_random vouches for that path), the
 * launch waits against the reference. */
static void tables_rows(int64_t n, int64_t ng, int negative, nsl_column *s, nsl_column *e, nsl_column *g,
                        nsl_column *c) {
  /* (a GPU's kernels, copies and memsets: a few tables, merged at once; now and then more than eight, merged
   * pairwise) */
  int64_t tables = fx_range(0, 3) == 0 ? fx_range(9, 14) : fx_range(1, 4), per = n / tables + 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t a = (i % per) * SPAN / per;
    nsl_i64(s)[i] = fx_range(0, 80) == 0 ? NSL_NULL_I64 : a;
    nsl_i64(e)[i] = a + fx_range(-1, 6);
    nsl_i64(g)[i] = fx_range(negative ? -1 : 0, ng - 1);
    if (c) nsl_i64(c)[i] = fx_range(0, NCLS - 1);
  }
}

static void test_sweeps_of_tables(void **state) {
  (void)state;
  for (int round = 0; round < 40; round++) {
    fx_seed(9100 + (uint64_t)round);
    int64_t n = fx_range(700, 1200), ng = fx_range(1, 2);
    nsl_column *s = nsl_column_new(NSL_I64, n, NULL), *e = nsl_column_new(NSL_I64, n, NULL);
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL), *c = nsl_column_new(NSL_I64, n, NULL);
    tables_rows(n, ng, round % 4 == 3, s, e, g, c);   /* a negative group (not ids: sorted) in every fourth */
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    assert_non_null(perm);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = fx_range(0, i), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    nsl_column *ps = nsl_column_new(NSL_I64, n, NULL), *pe = nsl_column_new(NSL_I64, n, NULL),
               *pg = nsl_column_new(NSL_I64, n, NULL), *pc = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      nsl_i64(ps)[i] = nsl_i64(s)[perm[i]];
      nsl_i64(pe)[i] = nsl_i64(e)[perm[i]];
      nsl_i64(pg)[i] = nsl_i64(g)[perm[i]];
      nsl_i64(pc)[i] = nsl_i64(c)[perm[i]];
    }
    nsl_column *wg = nsl_column_new(NSL_I64, ng, NULL), *wl = nsl_column_new(NSL_I64, ng, NULL),
               *wh = nsl_column_new(NSL_I64, ng, NULL);
    for (int64_t k = 0; k < ng; k++) {
      nsl_i64(wg)[k] = k;
      nsl_i64(wl)[k] = fx_range(0, 20);
      nsl_i64(wh)[k] = SPAN + fx_range(-20, 10);
    }
    nsl_column *tot, *ch, *ptot, *pch;
    sweep(s, e, g, c, NCLS, wg, wl, wh, &tot, &ch);
    sweep(ps, pe, pg, pc, NCLS, wg, wl, wh, &ptot, &pch);
    for (int64_t k = 0; k < ng * (NCLS + 1); k++)
      if (nsl_i64(tot)[k] != nsl_i64(ptot)[k])
        fail_msg("round %d total %lld: %lld, shuffled %lld", round, (long long)k, (long long)nsl_i64(tot)[k],
                 (long long)nsl_i64(ptot)[k]);
    for (int64_t i = 0; i < n; i++)
      if (nsl_i64(pch)[i] != nsl_i64(ch)[perm[i]])
        fail_msg("round %d row %lld: charged %lld, shuffled %lld", round, (long long)perm[i],
                 (long long)nsl_i64(ch)[perm[i]], (long long)nsl_i64(pch)[i]);
    /* the launch waits of the same rows, with launch stops about their starts */
    nsl_column *l = nsl_column_new(NSL_I64, n, NULL);
    int64_t *gv = malloc((size_t)n * 3 * sizeof *gv), *sv = gv + n, *lv = gv + 2 * n;
    assert_non_null(gv);
    for (int64_t i = 0; i < n; i++) {
      gv[i] = nsl_i64(g)[i];
      sv[i] = nsl_i64(s)[i];
      lv[i] = nsl_i64(l)[i] = fx_range(0, 50) == 0 ? NSL_NULL_I64 : (sv[i] == NSL_NULL_I64 ? 0 : sv[i]) + fx_range(-3, 2);
    }
    check_launch_waits("tables", round, g, gv, s, sv, l, lv, n);
    free(gv);
    free(perm);
    nsl_column *cols[] = {s, e, g, c, ps, pe, pg, pc, wg, wl, wh, tot, ch, ptot, pch, l};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
}

/* A sweep of over a million rows runs its groups in ranges on threads (nsl__order_split cuts the order where
 * the group changes): the totals of windows (steps, and one over each group's run) and the rows' charges on
 * 2, 3 and 7 threads as on one, whose sweep the brute force above vouches for -- groups of very different
 * sizes (one of most rows, some of a few; the cuts fall inside large groups and move to their ends), a
 * negative one, NULL starts, rows as tables in start order (the runs path) and shuffled (the argsort). */
static void test_ledger_threads(void **state) {
  (void)state;
  for (int round = 0; round < 4; round++) {
    fx_seed(7700 + (uint64_t)round);
    int64_t n = fx_range(1100000, 1300000), ng = round == 0 ? 1 : fx_range(2, 9);
    nsl_column *s = nsl_column_new(NSL_I64, n, NULL), *e = nsl_column_new(NSL_I64, n, NULL);
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL), *c = nsl_column_new(NSL_I64, n, NULL);
    tables_rows(n, ng, round == 3, s, e, g, c);
    for (int64_t i = 0; i < n; i++)   /* group 0 takes most rows, the last group a few */
      if (nsl_i64(g)[i] > 0 && fx_range(0, 3) > 0) nsl_i64(g)[i] = ng > 2 && fx_range(0, 9) ? 0 : nsl_i64(g)[i];
    if (round == 2)   /* shuffled: no runs, the argsort's order */
      for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = fx_range(0, i);
        nsl_column *cols[] = {s, e, g, c};
        for (int k = 0; k < 4; k++) {
          int64_t t = nsl_i64(cols[k])[i];
          nsl_i64(cols[k])[i] = nsl_i64(cols[k])[j];
          nsl_i64(cols[k])[j] = t;
        }
      }
    int64_t nw = 0, cap = ng * 12;
    nsl_column *wg = nsl_column_new(NSL_I64, cap, NULL), *wl = nsl_column_new(NSL_I64, cap, NULL),
               *wh = nsl_column_new(NSL_I64, cap, NULL);
    for (int64_t k = 0; k < ng; k++)
      for (int64_t t = fx_range(0, 5); t < SPAN && nw < cap; t += 12) {
        nsl_i64(wg)[nw] = k;
        nsl_i64(wl)[nw] = t;
        nsl_i64(wh)[nw++] = t + fx_range(0, 12);
      }
    nsl_column_set_len(wg, nw);
    nsl_column_set_len(wl, nw);
    nsl_column_set_len(wh, nw);
    nsl_column *rg = nsl_column_new(NSL_I64, ng, NULL), *rl = nsl_column_new(NSL_I64, ng, NULL),
               *rh = nsl_column_new(NSL_I64, ng, NULL);
    for (int64_t k = 0; k < ng; k++) {
      nsl_i64(rg)[k] = k;
      nsl_i64(rl)[k] = 0;
      nsl_i64(rh)[k] = SPAN + 10;
    }
    const nsl_column *sg[2] = {wg, rg}, *sl[2] = {wl, rl}, *sh[2] = {wh, rh};
    nsl_column *one[2], *one_ch;
    nsl_error err = {0};
    setenv("NSL_THREADS", "1", 1);
    if (nsl_ledger_sweep_sets(s, e, g, c, NCLS, 2, sg, sl, sh, one, &one_ch, &err) != NSL_OK)
      fail_msg("ledger failed: %s", err.msg);
    static const char *const threads[] = {"2", "3", "7"};
    for (int t = 0; t < 3; t++) {
      setenv("NSL_THREADS", threads[t], 1);
      nsl_column *many[2], *many_ch;
      if (nsl_ledger_sweep_sets(s, e, g, c, NCLS, 2, sg, sl, sh, many, &many_ch, &err) != NSL_OK)
        fail_msg("ledger failed: %s", err.msg);
      for (int k = 0; k < 2; k++)
        for (int64_t q = 0; q < one[k]->len; q++)
          if (nsl_i64(many[k])[q] != nsl_i64(one[k])[q])
            fail_msg("round %d, %s threads: set %d element %lld is %lld, on one thread %lld", round, threads[t], k,
                     (long long)q, (long long)nsl_i64(many[k])[q], (long long)nsl_i64(one[k])[q]);
      for (int64_t i = 0; i < n; i++)
        if (nsl_i64(many_ch)[i] != nsl_i64(one_ch)[i])
          fail_msg("round %d, %s threads: row %lld charged %lld, on one thread %lld", round, threads[t], (long long)i,
                   (long long)nsl_i64(many_ch)[i], (long long)nsl_i64(one_ch)[i]);
      nsl_column_release(many[0]);
      nsl_column_release(many[1]);
      nsl_column_release(many_ch);
    }
    /* the launch waits of the same rows (launch stops about their starts, a few NULL groups in the last round)
     * likewise: each range counts its waits, then writes them where the ranges before it end */
    nsl_column *l = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) {   /* (the starts spread out first: rows that start later than the one before) */
      int64_t a = nsl_i64(s)[i] == NSL_NULL_I64 ? NSL_NULL_I64 : nsl_i64(s)[i] * (n / 16) + i % (n / 16);
      nsl_i64(s)[i] = a;
      nsl_i64(l)[i] = fx_range(0, 50) == 0 ? NSL_NULL_I64 : (a == NSL_NULL_I64 ? 0 : a) + fx_range(-3, 2);
      if (round == 3 && fx_range(0, 99) == 0) nsl_i64(g)[i] = NSL_NULL_I64;
    }
    nsl_column *w1[3], *wm[3];
    setenv("NSL_THREADS", "1", 1);
    launch_waits(g, s, l, &w1[0], &w1[1], &w1[2]);
    assert_true(w1[0]->len > 1000);
    for (int t = 0; t < 3; t++) {
      setenv("NSL_THREADS", threads[t], 1);
      launch_waits(g, s, l, &wm[0], &wm[1], &wm[2]);
      for (int k = 0; k < 3; k++) {
        assert_int_equal(wm[k]->len, w1[k]->len);
        for (int64_t q = 0; q < w1[k]->len; q++)
          if (nsl_i64(wm[k])[q] != nsl_i64(w1[k])[q])
            fail_msg("round %d, %s threads: launch wait %lld output %d is %lld, on one thread %lld", round,
                     threads[t], (long long)q, k, (long long)nsl_i64(wm[k])[q], (long long)nsl_i64(w1[k])[q]);
        nsl_column_release(wm[k]);
      }
    }
    unsetenv("NSL_THREADS");
    nsl_column *cols[] = {s, e, g, c, wg, wl, wh, rg, rl, rh, one[0], one[1], one_ch, l, w1[0], w1[1], w1[2]};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_ledger_hand), cmocka_unit_test(test_ledger_random),
                                     cmocka_unit_test(test_ledger_sets_refused), cmocka_unit_test(test_ledger_many_open),
                                     cmocka_unit_test(test_launch_waits_hand),
                                     cmocka_unit_test(test_launch_waits_random),
                                     cmocka_unit_test(test_sweeps_of_tables),
                                     cmocka_unit_test(test_ledger_threads)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
