/* test_overlap_join.c -- the interval sweeps of overlap_join.c against
 * hand-computed cases and brute-force references on random data: the best
 * overlap by trying every pair, open intervals by testing every interval,
 * and grouped gaps from a per-nanosecond busy bitmap. */
#include <stdio.h>

#include "kernel_fixtures.h"

#define SPAN 200   /* random coordinates lie in [0, SPAN) */

/* ---- overlap join ---------------------------------------------------------------- */

static void join(const nsl_column *as, const nsl_column *ae, const nsl_column *const *ak, const nsl_column *bs,
                 const nsl_column *be, const nsl_column *const *bk, int nkeys, const nsl_column *mask,
                 nsl_column **rows, nsl_column **ov) {
  nsl_error err = {0};
  if (nsl_overlap_join(as, ae, ak, bs, be, bk, nkeys, mask, rows, ov, &err) != NSL_OK)
    fail_msg("overlap join failed: %s", err.msg);
}

static void test_overlap_hand(void **state) {
  (void)state;
  nsl_column *rows, *ov;
  /* B: 0 [0,100) outer; 1 [10,20) inner; 2 [30,90) ; 3 [95,120); 4 [50,50) empty; 5 NULL */
  nsl_column *bs = FX_I64(0, 10, 30, 95, 50, NSL_NULL_I64), *be = FX_I64(100, 20, 90, 120, 50, 60);
  /* A: [12,18) inside 0 and 1 (tie 6: inner 1 wins); [25,85) 0 covers 60, 2 covers 55 -> 0;
   * [92,130) 0: 8, 3: 25 -> 3; [200,300) none; [40,40) empty; NULL stop; [-5,5) 0: 5 */
  nsl_column *as = FX_I64(12, 25, 92, 200, 40, 7, -5), *ae = FX_I64(18, 85, 130, 300, 40, NSL_NULL_I64, 5);
  join(as, ae, NULL, bs, be, NULL, 0, NULL, &rows, &ov);
  FX_EXPECT_I64(rows, 1, 0, 3, -1, -1, -1, 0);
  FX_EXPECT_I64(ov, 6, 60, 25, 0, 0, NSL_NULL_I64, 5);
  nsl_column_release(rows);
  nsl_column_release(ov);
  /* the mask removes the outer range: [25,85) -> 2; [12,18) -> 1; [-5,5) -> none */
  nsl_column *m = FX_BOOL(0, 1, 1, 1, 1, 1);
  join(as, ae, NULL, bs, be, NULL, 0, m, &rows, &ov);
  FX_EXPECT_I64(rows, 1, 2, 3, -1, -1, -1, -1);
  FX_EXPECT_I64(ov, 6, 55, 25, 0, 0, NSL_NULL_I64, 0);
  nsl_column_release(rows);
  nsl_column_release(ov);
  /* keys: pid per row; A keys i32 against B keys i64 match by value; NULL keys match nothing */
  nsl_column *bk = FX_I64(1, 2, 1, 1, 1, 1), *ak = FX_I32(2, 1, 1, 1, 1, 1, NSL_NULL_I32);
  const nsl_column *akeys[1] = {ak}, *bkeys[1] = {bk};
  join(as, ae, akeys, bs, be, bkeys, 1, NULL, &rows, &ov);
  FX_EXPECT_I64(rows, 1, 0, 3, -1, -1, -1, -1);
  FX_EXPECT_I64(ov, 6, 60, 25, 0, 0, NSL_NULL_I64, 0);
  nsl_column_release(rows);
  nsl_column_release(ov);
  /* equal starts: the one that stops first wins the tie; equal rows: the lower row */
  nsl_column *cs = FX_I64(0, 0, 0), *ce = FX_I64(50, 30, 30), *xs = FX_I64(5), *xe = FX_I64(10);
  join(xs, xe, NULL, cs, ce, NULL, 0, NULL, &rows, &ov);
  FX_EXPECT_I64(rows, 1);
  FX_EXPECT_I64(ov, 5);
  nsl_column_release(rows);
  nsl_column_release(ov);
  /* empty sides */
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL);
  join(as, ae, NULL, z, z, NULL, 0, NULL, &rows, &ov);
  FX_EXPECT_I64(rows, -1, -1, -1, -1, -1, -1, -1);
  nsl_column_release(rows);
  nsl_column_release(ov);
  join(z, z, NULL, bs, be, NULL, 0, NULL, &rows, &ov);
  assert_int_equal(rows->len, 0);
  nsl_column_release(rows);
  nsl_column_release(ov);
  /* extreme coordinates: no overflow, the overlap saturates at INT64_MAX */
  nsl_column *es = FX_I64(INT64_MIN + 1), *ee = FX_I64(INT64_MAX);
  join(es, ee, NULL, es, ee, NULL, 0, NULL, &rows, &ov);
  FX_EXPECT_I64(rows, 0);
  FX_EXPECT_I64(ov, INT64_MAX);
  nsl_column_release(rows);
  nsl_column_release(ov);
  nsl_column *cols[] = {bs, be, as, ae, m, bk, ak, cs, ce, xs, xe, z, es, ee};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

static void test_overlap_string_keys(void **state) {
  (void)state;
  nsl_dict *d1 = nsl_dict_new(), *d2 = nsl_dict_new();
  fx_id(d2, "zzz", 3);   /* different ids for the same text */
  nsl_column *ak = fx_str(d1, 3, (const char *[]){"x", "y", NULL});
  nsl_column *bk = fx_str(d2, 3, (const char *[]){"y", "x", "w"});
  nsl_column *as = FX_I64(0, 0, 0), *ae = FX_I64(10, 10, 10), *bs = FX_I64(1, 2, 0), *be = FX_I64(3, 9, 10);
  const nsl_column *akeys[1] = {ak}, *bkeys[1] = {bk};
  nsl_column *rows, *ov;
  join(as, ae, akeys, bs, be, bkeys, 1, NULL, &rows, &ov);
  FX_EXPECT_I64(rows, 1, 0, -1);
  FX_EXPECT_I64(ov, 7, 2, 0);
  nsl_column_release(rows);
  nsl_column_release(ov);
  nsl_column *cols[] = {ak, bk, as, ae, bs, be};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  nsl_dict_release(d1);
  nsl_dict_release(d2);
}

static void test_overlap_bad_input(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *rows = (nsl_column *)1, *ov = (nsl_column *)1;
  nsl_column *s = FX_I64(0, 1), *e = FX_I64(2, 3), *f = FX_F64(0, 1), *one = FX_I64(1), *m = FX_BOOL(1);
  assert_int_equal(nsl_overlap_join(f, e, NULL, s, e, NULL, 0, NULL, &rows, &ov, &err), NSL_ERR_ARG);
  assert_null(rows);
  assert_int_equal(nsl_overlap_join(s, one, NULL, s, e, NULL, 0, NULL, &rows, &ov, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_overlap_join(s, e, NULL, s, e, NULL, 0, m, &rows, &ov, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "mask"));
  const nsl_column *k1[1] = {one}, *k2[1] = {s};
  assert_int_equal(nsl_overlap_join(s, e, k1, s, e, k2, 1, NULL, &rows, &ov, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "key 1"));
  assert_int_equal(nsl_overlap_join(s, e, NULL, s, e, NULL, 1, NULL, &rows, &ov, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_overlap_join(s, e, NULL, s, e, NULL, 0, NULL, NULL, &ov, &err), NSL_ERR_ARG);
  nsl_column *cols[] = {s, e, f, one, m};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

/* Random intervals: some nested, some equal, some empty or NULL. */
static void random_intervals(int64_t n, nsl_column **s, nsl_column **e, nsl_column **k, int null_keys) {
  *s = nsl_column_new(NSL_I64, n, NULL);
  *e = nsl_column_new(NSL_I64, n, NULL);
  *k = nsl_column_new(NSL_I32, n, NULL);
  for (int64_t i = 0; i < n; i++) {
    int64_t a = fx_range(0, SPAN - 1), len = fx_range(0, 3) == 0 ? fx_range(0, 5) : fx_range(0, SPAN / 3);
    nsl_i64(*s)[i] = a;
    nsl_i64(*e)[i] = fx_range(0, 30) == 0 ? a - 1 : a + len;
    if (fx_range(0, 40) == 0) nsl_i64(*s)[i] = NSL_NULL_I64;
    if (fx_range(0, 40) == 0) nsl_i64(*e)[i] = NSL_NULL_I64;
    nsl_i32(*k)[i] = null_keys && fx_range(0, 25) == 0 ? NSL_NULL_I32 : (int32_t)fx_range(0, 3);
  }
}

/* Random rounds of A (na_lo..na_hi rows) against B (nb_lo..nb_hi rows),
 * each row checked against the best overlap found by trying every pair;
 * at least min_pct % of the A rows must match, and some must not. */
static void overlap_rounds(uint64_t seed, int64_t na_lo, int64_t na_hi, int64_t nb_lo, int64_t nb_hi,
                           int64_t min_pct) {
  int64_t seen = 0, matched = 0;
  for (int round = 0; round < 200; round++) {
    fx_seed(seed + (uint64_t)round);
    int64_t na = fx_range(na_lo, na_hi), nb = fx_range(nb_lo, nb_hi);
    int nkeys = round % 3 == 0 ? 0 : 1;
    nsl_column *as, *ae, *ak, *bs, *be, *bk;
    random_intervals(na, &as, &ae, &ak, 1);
    random_intervals(nb, &bs, &be, &bk, 1);
    nsl_column *m = nsl_column_new(NSL_BOOL, nb, NULL);
    for (int64_t j = 0; j < nb; j++) nsl_bool(m)[j] = fx_range(0, 5) != 0;
    int use_mask = round % 2;
    const nsl_column *akeys[1] = {ak}, *bkeys[1] = {bk};
    nsl_column *rows, *ov, *any = NULL;
    join(as, ae, akeys, bs, be, bkeys, nkeys, use_mask ? m : NULL, &rows, &ov);
    if (!use_mask) {   /* nsl_overlap_any: whether the join finds a row */
      nsl_error e = {0};
      any = nsl_overlap_any(as, ae, akeys, bs, be, bkeys, nkeys, &e);
      if (!any) fail_msg("round %d: overlap_any: %s", round, e.msg);
      assert_int_equal(any->len, na);
    }
    for (int64_t i = 0; i < na; i++) {
      int64_t s = nsl_i64(as)[i], e = nsl_i64(ae)[i], best = 0, bj = -1;
      int a_null = s == NSL_NULL_I64 || e == NSL_NULL_I64;
      for (int64_t j = 0; !a_null && j < nb; j++) {
        int64_t t = nsl_i64(bs)[j], u = nsl_i64(be)[j];
        if (t == NSL_NULL_I64 || u == NSL_NULL_I64 || t >= u || (use_mask && !nsl_bool(m)[j])) continue;
        if (nkeys && (nsl_i32(ak)[i] == NSL_NULL_I32 || nsl_i32(ak)[i] != nsl_i32(bk)[j])) continue;
        int64_t lo = s > t ? s : t, hi = e < u ? e : u, len = hi - lo;
        if (len <= 0) continue;
        int better = len > best;
        if (len == best && bj >= 0) {
          int64_t bt = nsl_i64(bs)[bj], bu = nsl_i64(be)[bj];
          better = t > bt || (t == bt && (u < bu || (u == bu && j < bj)));
        }
        if (better) {
          best = len;
          bj = j;
        }
      }
      seen++;
      matched += bj >= 0;
      if (any && nsl_bool(any)[i] != (bj >= 0))
        fail_msg("round %d, row %lld: overlap_any says %d, the best overlap is row %lld", round, (long long)i,
                 nsl_bool(any)[i], (long long)bj);
      if (nsl_i64(rows)[i] != bj || nsl_i64(ov)[i] != (a_null ? NSL_NULL_I64 : best))
        fail_msg("round %d, row %lld [%lld, %lld): got row %lld overlap %lld, want row %lld overlap %lld", round,
                 (long long)i, (long long)s, (long long)e, (long long)nsl_i64(rows)[i], (long long)nsl_i64(ov)[i],
                 (long long)bj, (long long)best);
    }
    nsl_column_release(any);
    nsl_column *cols[] = {as, ae, ak, bs, be, bk, m, rows, ov};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
  if (matched * 100 < seen * min_pct || matched == seen)
    fail_msg("%lld of %lld rows matched: the data does not exercise the sweep", (long long)matched, (long long)seen);
}

static void test_overlap_random(void **state) {
  (void)state;
  overlap_rounds(1000, 0, 60, 0, 120, 50);
}

/* A few A rows against many B rows: the path that first cuts B to the rows
 * overlapping the A intervals (at most one A row per eight B rows). */
static void test_overlap_few_a(void **state) {
  (void)state;
  overlap_rounds(5000, 1, 9, 80, 400, 50);
}

/* Many A rows against a few B rows: the path that first cuts A to the rows
 * overlapping the B intervals (at least eight A rows per B row). */
static void test_overlap_few_b(void **state) {
  (void)state;
  overlap_rounds(7000, 80, 400, 1, 9, 20);   /* a few B rows leave most A rows unmatched */
}

/* Many rows against a few (more than one thread takes: the pass that cuts
 * the many rows to those near the few runs in parts), in both directions:
 * the same answers on 1, 2 and 3 threads, and whether a few row overlaps
 * anything equal to trying every row. */
static void test_overlap_large_threads(void **state) {
  (void)state;
  const int64_t nb = ((int64_t)3 << 19) + 77, na = 40;
  fx_seed(91);
  nsl_column *bs = nsl_column_new(NSL_I64, nb, NULL), *be = nsl_column_new(NSL_I64, nb, NULL);
  for (int64_t j = 0; j < nb; j++) {   /* in start order, as a trace's ranges mostly are, some out of order */
    int64_t a = j * 10 + (fx_range(0, 50) == 0 ? -fx_range(0, 5000) : 0);
    nsl_i64(bs)[j] = a;
    nsl_i64(be)[j] = fx_range(0, 60) == 0 ? NSL_NULL_I64 : a + fx_range(0, 4);
  }
  nsl_column *as = nsl_column_new(NSL_I64, na, NULL), *ae = nsl_column_new(NSL_I64, na, NULL);
  for (int64_t i = 0; i < na; i++) {
    int64_t a = fx_range(0, nb * 10);
    nsl_i64(as)[i] = a;
    nsl_i64(ae)[i] = a + fx_range(1, 5);
  }
  const char *threads[] = {"1", "2", "3"};
  nsl_column *want_any = NULL, *want_rows = NULL, *want_ov = NULL, *want_back = NULL;
  for (int t = 0; t < 3; t++) {
    setenv("NSL_THREADS", threads[t], 1);
    nsl_error err = {0};
    nsl_column *any = nsl_overlap_any(as, ae, NULL, bs, be, NULL, 0, &err), *rows, *ov;
    nsl_column *back = nsl_overlap_any(bs, be, NULL, as, ae, NULL, 0, &err);   /* many A, a few B */
    assert_non_null(any);
    assert_non_null(back);
    join(as, ae, NULL, bs, be, NULL, 0, NULL, &rows, &ov);
    if (t == 0) {
      want_any = any, want_rows = rows, want_ov = ov, want_back = back;
      continue;
    }
    if (memcmp(any->data, want_any->data, (size_t)na) || memcmp(back->data, want_back->data, (size_t)nb) ||
        memcmp(rows->data, want_rows->data, (size_t)na * 8) || memcmp(ov->data, want_ov->data, (size_t)na * 8))
      fail_msg("answers differ on %s threads", threads[t]);
    nsl_column *cols[] = {any, back, rows, ov};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
  unsetenv("NSL_THREADS");
  int64_t hits = 0, back_hits = 0;
  for (int64_t i = 0; i < na; i++) {
    int found = 0;
    for (int64_t j = 0; j < nb && !found; j++) {
      int64_t t = nsl_i64(bs)[j], u = nsl_i64(be)[j];
      found = u != NSL_NULL_I64 && t < u && t < nsl_i64(ae)[i] && u > nsl_i64(as)[i];
    }
    if (nsl_bool(want_any)[i] != found) fail_msg("row %lld: any %d, want %d", (long long)i, nsl_bool(want_any)[i], found);
    hits += found;
  }
  for (int64_t j = 0; j < nb; j++) {
    int64_t t = nsl_i64(bs)[j], u = nsl_i64(be)[j];
    int found = 0;
    for (int64_t i = 0; i < na && !found && u != NSL_NULL_I64 && t < u; i++)
      found = nsl_i64(as)[i] < u && nsl_i64(ae)[i] > t;
    if (nsl_bool(want_back)[j] != found) fail_msg("many row %lld: any %d, want %d", (long long)j, nsl_bool(want_back)[j], found);
    back_hits += found;
  }
  if (hits == 0 || hits == na || back_hits == 0) fail_msg("%lld / %lld hits: the data does not exercise the cut", (long long)hits, (long long)back_hits);
  nsl_column *cols[] = {as, ae, bs, be, want_any, want_rows, want_ov, want_back};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

/* ---- open intervals at points ---------------------------------------------------- */

static void test_count_open_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  /* [0,10) [5,15) [5,5) empty [20,30) NULL */
  nsl_column *s = FX_I64(0, 5, 5, 20, NSL_NULL_I64), *e = FX_I64(10, 15, 5, 30, 40);
  nsl_column *p = FX_I64(0, 5, 7, 10, 15, 25, 35, NSL_NULL_I64, -3);
  nsl_column *c = nsl_iv_count_open(p, NULL, s, e, NULL, 0, &err);
  /* strict on both ends: at 0 none (starts there), at 5 only [0,10), at 10 only [5,15) */
  FX_EXPECT_I64(c, 0, 1, 2, 1, 0, 1, 0, NSL_NULL_I64, 0);
  nsl_column_release(c);
  /* keyed: points of key 2 see only [5,15) and [20,30) */
  nsl_column *ik = FX_I32(1, 2, 2, 2, 2), *pk = FX_I64(2, 2, 2, 1, 1, 2, 3, 2, 2);
  const nsl_column *pkeys[1] = {pk}, *ikeys[1] = {ik};
  c = nsl_iv_count_open(p, pkeys, s, e, ikeys, 1, &err);
  FX_EXPECT_I64(c, 0, 0, 1, 0, 0, 1, 0, NSL_NULL_I64, 0);
  nsl_column_release(c);
  /* no intervals */
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL), *zk = nsl_column_new(NSL_I32, 0, NULL);
  c = nsl_iv_count_open(p, NULL, z, z, NULL, 0, &err);
  FX_EXPECT_I64(c, 0, 0, 0, 0, 0, 0, 0, NSL_NULL_I64, 0);
  nsl_column_release(c);
  const nsl_column *zkeys[1] = {zk};
  c = nsl_iv_count_open(p, pkeys, z, z, zkeys, 1, &err);
  FX_EXPECT_I64(c, 0, 0, 0, 0, 0, 0, 0, NSL_NULL_I64, 0);
  nsl_column_release(c);
  /* bad input */
  nsl_column *f = FX_F64(1);
  assert_null(nsl_iv_count_open(f, NULL, s, e, NULL, 0, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl_iv_count_open(p, NULL, s, p, NULL, 0, &err));
  assert_null(nsl_iv_count_open(p, ikeys, s, e, pkeys, 1, &err));
  nsl_column *cols[] = {s, e, p, ik, pk, z, zk, f};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

static void test_count_open_random(void **state) {
  (void)state;
  nsl_error err = {0};
  for (int round = 0; round < 100; round++) {
    fx_seed(5000 + (uint64_t)round);
    int64_t np = fx_range(0, 80), ni = fx_range(0, 150);
    nsl_column *ps, *pe, *pk, *is, *ie, *ik;
    random_intervals(np, &ps, &pe, &pk, 1);
    random_intervals(ni, &is, &ie, &ik, 1);
    int nkeys = round % 2;
    const nsl_column *pkeys[1] = {pk}, *ikeys[1] = {ik};
    nsl_column *c = nsl_iv_count_open(ps, pkeys, is, ie, ikeys, nkeys, &err);
    assert_non_null(c);
    for (int64_t i = 0; i < np; i++) {
      int64_t t = nsl_i64(ps)[i], want = 0;
      if (t == NSL_NULL_I64) want = NSL_NULL_I64;
      for (int64_t j = 0; t != NSL_NULL_I64 && j < ni; j++) {
        int64_t a = nsl_i64(is)[j], b = nsl_i64(ie)[j];
        if (a == NSL_NULL_I64 || b == NSL_NULL_I64) continue;
        if (nkeys && (nsl_i32(pk)[i] == NSL_NULL_I32 || nsl_i32(pk)[i] != nsl_i32(ik)[j])) continue;
        want += a < t && t < b;
      }
      if (nsl_i64(c)[i] != want)
        fail_msg("round %d point %lld (%lld): got %lld, want %lld", round, (long long)i, (long long)t,
                 (long long)nsl_i64(c)[i], (long long)want);
    }
    nsl_column *cols[] = {ps, pe, pk, is, ie, ik, c};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
}

/* ---- grouped gaps ---------------------------------------------------------------- */

/* The gaps, and the rows that end them (released here unless orow is given). */
static void gaps_rows(const nsl_column *s, const nsl_column *e, const nsl_column *g, int64_t ng, const nsl_column *m,
                      int64_t min_len, nsl_column **og, nsl_column **os, nsl_column **oe, nsl_column **orow) {
  nsl_error err = {0};
  nsl_column *r = NULL;
  if (nsl_iv_gaps_grouped(s, e, g, ng, m, min_len, og, os, oe, &r, &err) != NSL_OK)
    fail_msg("grouped gaps failed: %s", err.msg);
  assert_int_equal(r->len, (*og)->len);
  if (orow) *orow = r;
  else nsl_column_release(r);
}

static void gaps(const nsl_column *s, const nsl_column *e, const nsl_column *g, int64_t ng, const nsl_column *m,
                 int64_t min_len, nsl_column **og, nsl_column **os, nsl_column **oe) {
  gaps_rows(s, e, g, ng, m, min_len, og, os, oe, NULL);
}

static void release3(nsl_column *a, nsl_column *b, nsl_column *c) {
  nsl_column_release(a);
  nsl_column_release(b);
  nsl_column_release(c);
}

static void test_gaps_hand(void **state) {
  (void)state;
  nsl_column *og, *os, *oe;
  /* group 0: [0,10) [5,20) [25,30) [30,40) [100,110) -> gaps [20,25) [40,100)
   * group 1: [50,60) [0,5) (unsorted) NULL [7,7) -> gap [5,50); group 2: one row, no gap;
   * row with group -1 skipped */
  nsl_column *s = FX_I64(0, 50, 5, 25, 30, 100, 0, NSL_NULL_I64, 7, 3, 1);
  nsl_column *e = FX_I64(10, 60, 20, 30, 40, 110, 5, 9, 7, 4, 200);
  nsl_column *g = FX_I64(0, 1, 0, 0, 0, 0, 1, 1, 1, 2, -1);
  nsl_column *orow;
  gaps_rows(s, e, g, 3, NULL, 0, &og, &os, &oe, &orow);
  FX_EXPECT_I64(og, 0, 0, 1);
  FX_EXPECT_I64(os, 20, 40, 5);
  FX_EXPECT_I64(oe, 25, 100, 50);
  FX_EXPECT_I64(orow, 3, 5, 1);   /* the rows starting at each gap's stop */
  release3(og, os, oe);
  nsl_column_release(orow);
  /* longer than 5: [20,25) is exactly 5, so it goes */
  gaps(s, e, g, 3, NULL, 5, &og, &os, &oe);
  FX_EXPECT_I64(os, 40, 5);
  release3(og, os, oe);
  /* the mask drops [30,40): gap [30,100) */
  nsl_column *m = FX_BOOL(1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1);
  gaps(s, e, g, 3, m, 0, &og, &os, &oe);
  FX_EXPECT_I64(os, 20, 30, 5);
  FX_EXPECT_I64(oe, 25, 100, 50);
  release3(og, os, oe);
  /* the row ending a gap is the lowest starting there, an empty one too (as a join on group and start finds);
   * another group's row at that start is not */
  nsl_column *ts = FX_I64(9, 0, 9, 9, 9), *te = FX_I64(12, 5, 9, 15, 10), *tg = FX_I64(1, 0, 0, 0, 0);
  gaps_rows(ts, te, tg, 2, NULL, 0, &og, &os, &oe, &orow);
  FX_EXPECT_I64(os, 5);
  FX_EXPECT_I64(oe, 9);
  FX_EXPECT_I64(orow, 2);
  release3(og, os, oe);
  release3(ts, te, tg);
  nsl_column_release(orow);
  /* bad input */
  nsl_error err = {0};
  assert_int_equal(nsl_iv_gaps_grouped(s, e, g, 2, NULL, 0, &og, &os, &oe, NULL, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "group 2 of 2"));
  nsl_column *g32 = FX_I32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  assert_int_equal(nsl_iv_gaps_grouped(s, e, g32, 1, NULL, 0, &og, &os, &oe, NULL, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_gaps_grouped(s, e, g, 3, g, 0, &og, &os, &oe, NULL, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_gaps_grouped(s, g32, g, 3, NULL, 0, &og, &os, &oe, NULL, &err), NSL_OK);
  release3(og, os, oe);
  nsl_column *f = FX_F64(1);
  assert_int_equal(nsl_iv_gaps_grouped(f, f, g, 3, NULL, 0, &og, &os, &oe, NULL, &err), NSL_ERR_ARG);
  nsl_column *cols[] = {s, e, g, m, g32, f};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

/* Group grp's gaps laid out unit by unit (its busy time marked in a map
 * of SPAN units): their starts and stops into gs, ge; returns how many. */
static int64_t ref_gaps(const nsl_column *s, const nsl_column *e, const nsl_column *g, int64_t n, int64_t grp,
                        int64_t *gs, int64_t *ge) {
  uint8_t busy[3 * SPAN] = {0};
  int64_t lo = INT64_MAX, hi = INT64_MIN, m = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t a = nsl_i64(s)[i], b = nsl_i64(e)[i];
    if (nsl_i64(g)[i] != grp || a == NSL_NULL_I64 || b == NSL_NULL_I64 || a >= b) continue;
    for (int64_t t = a; t < b; t++) busy[t] = 1;
    if (a < lo) lo = a;
    if (b > hi) hi = b;
  }
  for (int64_t t = lo; t < hi;) {
    if (busy[t]) {
      t++;
      continue;
    }
    int64_t u = t;
    while (u < hi && !busy[u]) u++;
    gs[m] = t;
    ge[m++] = u;
    t = u;
  }
  return m;
}

static void test_gaps_random(void **state) {
  (void)state;
  for (int round = 0; round < 200; round++) {
    fx_seed(9000 + (uint64_t)round);
    int64_t n = fx_range(0, 60), ng = fx_range(1, 4), min_len = fx_range(0, 2) ? fx_range(0, 12) : 0;
    nsl_column *s, *e, *k;
    random_intervals(n, &s, &e, &k, 0);
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) nsl_i64(g)[i] = fx_range(-1, ng - 1);
    nsl_column *og, *os, *oe, *orow;
    gaps_rows(s, e, g, ng, NULL, min_len, &og, &os, &oe, &orow);
    for (int64_t q = 0; q < og->len; q++) {   /* the row ending each gap: the lowest of its group starting there */
      int64_t want = -1;
      for (int64_t i = 0; i < n && want < 0; i++)
        if (nsl_i64(g)[i] == nsl_i64(og)[q] && nsl_i64(s)[i] == nsl_i64(oe)[q]) want = i;
      if (nsl_i64(orow)[q] != want)
        fail_msg("round %d: gap %lld ends at row %lld, want %lld", round, (long long)q, (long long)nsl_i64(orow)[q],
                 (long long)want);
    }
    nsl_column_release(orow);
    int64_t at = 0;
    for (int64_t grp = 0; grp < ng; grp++) {
      int64_t gs[3 * SPAN], ge[3 * SPAN], m = ref_gaps(s, e, g, n, grp, gs, ge);
      for (int64_t q = 0; q < m; q++) {
        int64_t t = gs[q], u = ge[q];
        if (u - t <= min_len) continue;
        if (at >= og->len || nsl_i64(og)[at] != grp || nsl_i64(os)[at] != t || nsl_i64(oe)[at] != u)
          fail_msg("round %d: gap %lld should be group %lld [%lld, %lld)", round, (long long)at, (long long)grp,
                   (long long)t, (long long)u);
        at++;
      }
    }
    assert_int_equal(at, og->len);
    nsl_column *cols[] = {s, e, k, g, og, os, oe};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
}

/* nsl_iv_gap_sums against each group's busy time laid out unit by unit: idle
 * time, count and time of the gaps longer than min_len, the largest gap; its
 * long gaps are nsl_iv_gaps_grouped's. */
/* Rows as one to four tables, each in start order (with ties), one after the other, as a GPU's kernels, copies
 * and memsets come: short intervals, some empty or ending before they start, a few NULL ends. */
static void table_intervals(int64_t n, nsl_column **s, nsl_column **e, nsl_column **k) {
  *s = nsl_column_new(NSL_I64, n, NULL);
  *e = nsl_column_new(NSL_I64, n, NULL);
  *k = nsl_column_new(NSL_I32, n, NULL);
  /* (a GPU's kernels, copies and memsets: a few tables, merged at once; now and then more than eight, merged
   * pairwise) */
  int64_t tables = fx_range(0, 3) == 0 ? fx_range(9, 14) : fx_range(1, 4), per = n / tables + 1;
  for (int64_t i = 0; i < n; i++) {
    int64_t a = (i % per) * (SPAN - 1) / per, len = fx_range(0, 2);
    nsl_i64(*s)[i] = a;
    nsl_i64(*e)[i] = fx_range(0, 30) == 0 ? a - 1 : a + len;
    if (fx_range(0, 60) == 0) nsl_i64(*s)[i] = NSL_NULL_I64;
    if (fx_range(0, 60) == 0) nsl_i64(*e)[i] = NSL_NULL_I64;
    nsl_i32(*k)[i] = 0;
  }
}

/* Over a million rows, the gaps' sweep runs its groups in ranges on threads (nsl__order_split), each writing its
 * gaps where its range of the order begins, moved together after: every output (the long gaps, the rows on
 * either side, the sums) on 2, 3 and 7 threads as on one, whose sweep test_gap_sums_random vouches for --
 * groups of very different sizes, a negative one, rows as tables (the runs path) and shuffled (the argsort). */
static void test_gap_sums_threads(void **state) {
  (void)state;
  for (int round = 0; round < 4; round++) {
    fx_seed(12900 + (uint64_t)round);
    int64_t n = fx_range(1100000, 1300000), ng = round == 0 ? 1 : fx_range(2, 9), min_len = round;
    nsl_column *s, *e, *k;
    table_intervals(n, &s, &e, &k);   /* (then spread over a longer span, with gaps) */
    for (int64_t i = 0; i < n; i++) {
      int64_t a = nsl_i64(s)[i] == NSL_NULL_I64 ? NSL_NULL_I64 : (i % (n / 3 + 1)) * 8;
      if (nsl_i64(e)[i] != NSL_NULL_I64) nsl_i64(e)[i] = (a == NSL_NULL_I64 ? 0 : a) + fx_range(-1, 20);
      nsl_i64(s)[i] = a;
    }
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) {   /* group 0 takes most rows, the others a few */
      int64_t grp = fx_range(round == 3 ? -1 : 0, ng - 1);
      nsl_i64(g)[i] = grp > 0 && fx_range(0, 9) ? 0 : grp;
    }
    if (round == 2)
      for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = fx_range(0, i);
        nsl_column *cols[] = {s, e, g};
        for (int c = 0; c < 3; c++) {
          int64_t t = nsl_i64(cols[c])[i];
          nsl_i64(cols[c])[i] = nsl_i64(cols[c])[j];
          nsl_i64(cols[c])[j] = t;
        }
      }
    nsl_column *launch = nsl_column_new(NSL_I64, n, NULL);   /* (for nsl_iv_gap_hosts: some before, some after) */
    for (int64_t i = 0; i < n; i++)
      nsl_i64(launch)[i] = nsl_i64(s)[i] == NSL_NULL_I64 ? NSL_NULL_I64 : nsl_i64(s)[i] - fx_range(-9, 3);
    /* sums 0-3, group, start, stop, before, after; then gap_hosts' idle, host, group, start, stop, row */
    nsl_column *one[15], *many[15];
    nsl_error err = {0};
    static const char *const threads[] = {"1", "2", "3", "7"};
    for (int t = 0; t < 4; t++) {
      setenv("NSL_THREADS", threads[t], 1);
      nsl_column **o = t ? many : one;
      if (nsl_iv_gap_sums(s, e, g, ng, min_len, o, &o[4], &o[5], &o[6], &o[7], &o[8], &err) != NSL_OK)
        fail_msg("gap sums failed: %s", err.msg);
      if (nsl_iv_gap_hosts(s, e, g, ng, launch, &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &err) != NSL_OK)
        fail_msg("gap host parts failed: %s", err.msg);
      if (!t) continue;
      for (int c = 0; c < 15; c++) {
        assert_int_equal(many[c]->len, one[c]->len);
        for (int64_t q = 0; q < one[c]->len; q++)
          if (nsl_i64(many[c])[q] != nsl_i64(one[c])[q])
            fail_msg("round %d, %s threads: output %d row %lld is %lld, on one thread %lld", round, threads[t], c,
                     (long long)q, (long long)nsl_i64(many[c])[q], (long long)nsl_i64(one[c])[q]);
        nsl_column_release(many[c]);
      }
    }
    unsetenv("NSL_THREADS");
    assert_true(one[4]->len > 1000);
    assert_true(one[11]->len > 1000);
    for (int c = 0; c < 15; c++) nsl_column_release(one[c]);
    release3(s, e, k);
    nsl_column_release(launch);
    nsl_column_release(g);
  }
}

static void test_gap_sums_random(void **state) {
  (void)state;
  for (int round = 0; round < 300; round++) {
    fx_seed(12000 + (uint64_t)round);
    int tables = round >= 200;   /* rows in a few runs of start order: each group's rows merged, not sorted */
    int64_t n = tables ? fx_range(600, 1200) : fx_range(0, 60), ng = fx_range(1, tables ? 3 : 4),
            min_len = fx_range(0, 2) ? fx_range(0, 12) : 0;
    nsl_column *s, *e, *k;
    if (tables) table_intervals(n, &s, &e, &k);
    else random_intervals(n, &s, &e, &k, 0);
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) nsl_i64(g)[i] = fx_range(-1, ng - 1);
    nsl_column *sums[4], *og, *os, *oe, *wg, *ws, *we, *ob = NULL, *oa = NULL;
    nsl_error err = {0};
    int rows = round % 2;   /* the rows on either side asked for in every other round */
    if (nsl_iv_gap_sums(s, e, g, ng, min_len, sums, &og, &os, &oe, rows ? &ob : NULL, rows ? &oa : NULL, &err) !=
        NSL_OK)
      fail_msg("gap sums failed: %s", err.msg);
    gaps(s, e, g, ng, NULL, min_len, &wg, &ws, &we);
    assert_int_equal(og->len, wg->len);
    for (int64_t q = 0; q < og->len; q++)
      if (nsl_i64(og)[q] != nsl_i64(wg)[q] || nsl_i64(os)[q] != nsl_i64(ws)[q] || nsl_i64(oe)[q] != nsl_i64(we)[q])
        fail_msg("round %d: long gap %lld differs from the grouped gaps'", round, (long long)q);
    if (rows) {
      /* before: the lowest row of the group (bounds known, not empty) stopping at the gap's start; after: the
       * lowest row of the group starting at its stop -- what joins on group and stop, and on group and start,
       * find among the rows swept and among all rows */
      assert_int_equal(ob->len, og->len);
      assert_int_equal(oa->len, og->len);
      for (int64_t q = 0; q < og->len; q++) {
        int64_t grp = nsl_i64(og)[q], want_b = -1, want_a = -1;
        for (int64_t i = n - 1; i >= 0; i--) {
          int64_t a = nsl_i64(s)[i], z = nsl_i64(e)[i];
          if (nsl_i64(g)[i] != grp || a == NSL_NULL_I64) continue;
          if (a == nsl_i64(oe)[q]) want_a = i;
          if (z != NSL_NULL_I64 && a < z && z == nsl_i64(os)[q]) want_b = i;
        }
        if (nsl_i64(ob)[q] != want_b || nsl_i64(oa)[q] != want_a || want_b < 0 || want_a < 0)
          fail_msg("round %d gap %lld: rows %lld and %lld on either side, want %lld and %lld", round, (long long)q,
                   (long long)nsl_i64(ob)[q], (long long)nsl_i64(oa)[q], (long long)want_b, (long long)want_a);
      }
      release3(ob, oa, NULL);
    }
    for (int64_t grp = 0; grp < ng; grp++) {
      int64_t gs[3 * SPAN], ge[3 * SPAN], m = ref_gaps(s, e, g, n, grp, gs, ge), want[4] = {0, 0, 0, 0};
      for (int64_t q = 0; q < m; q++) {
        int64_t d = ge[q] - gs[q];
        want[0] += d;
        if (d > min_len) {
          want[1]++;
          want[2] += d;
        }
        if (d > want[3]) want[3] = d;
      }
      for (int c = 0; c < 4; c++) {
        assert_int_equal(sums[c]->len, ng);
        if (nsl_i64(sums[c])[grp] != want[c])
          fail_msg("round %d group %lld: sum %d is %lld, want %lld", round, (long long)grp, c,
                   (long long)nsl_i64(sums[c])[grp], (long long)want[c]);
      }
    }
    nsl_column *cols[] = {s, e, k, g, og, os, oe, wg, ws, we, sums[0], sums[1], sums[2], sums[3]};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
  /* bad input: nothing comes out */
  nsl_column *s = FX_I64(0, 5), *e = FX_I64(1, 6), *g = FX_I64(0, 2), *sums[4], *og, *os, *oe;
  nsl_error err = {0};
  assert_int_equal(nsl_iv_gap_sums(s, e, g, 2, 0, sums, &og, &os, &oe, NULL, NULL, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "gap sums"));
  for (int c = 0; c < 4; c++) assert_null(sums[c]);
  assert_int_equal(nsl_iv_gap_sums(s, e, g, -1, 0, sums, &og, &os, &oe, NULL, NULL, &err), NSL_ERR_ARG);
  release3(s, e, g);
}

/* nsl_iv_gap_hosts against nsl_iv_gaps_grouped's gaps and the rows that end them: a gap's host part is from
 * its start to the launch time of the row that ends it (none where that is NULL or at most the start), at most
 * the gap; per group the idle time and the host parts' sum; the gaps with a host part, in order, with that part's
 * span and the row.  Rows as tables (the runs path) and at random; some launch times NULL, some long after the
 * gap ends. */
static void test_gap_hosts_random(void **state) {
  (void)state;
  for (int round = 0; round < 300; round++) {
    fx_seed(13000 + (uint64_t)round);
    int tables = round >= 200;
    int64_t n = tables ? fx_range(600, 1200) : fx_range(0, 60), ng = fx_range(1, tables ? 3 : 4);
    nsl_column *s, *e, *k;
    if (tables) table_intervals(n, &s, &e, &k);
    else random_intervals(n, &s, &e, &k, 0);
    nsl_column *g = nsl_column_new(NSL_I64, n, NULL), *launch = nsl_column_new(NSL_I64, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      nsl_i64(g)[i] = fx_range(-1, ng - 1);
      int64_t a = nsl_i64(s)[i] == NSL_NULL_I64 ? 0 : nsl_i64(s)[i];
      nsl_i64(launch)[i] = fx_range(0, 12) == 0 ? NSL_NULL_I64 : a - fx_range(-3, 3) * fx_range(0, 4);
    }
    nsl_column *idle, *host, *hg, *hs, *he, *hr, *wg, *ws, *we, *wr;
    nsl_error err = {0};
    if (nsl_iv_gap_hosts(s, e, g, ng, launch, &idle, &host, &hg, &hs, &he, &hr, &err) != NSL_OK)
      fail_msg("gap host parts failed: %s", err.msg);
    if (nsl_iv_gaps_grouped(s, e, g, ng, NULL, 0, &wg, &ws, &we, &wr, &err) != NSL_OK)
      fail_msg("grouped gaps failed: %s", err.msg);
    int64_t want_idle[4] = {0}, want_host[4] = {0}, m = 0;
    for (int64_t q = 0; q < wg->len; q++) {
      int64_t grp = nsl_i64(wg)[q], gs = nsl_i64(ws)[q], d = nsl_i64(we)[q] - gs, row = nsl_i64(wr)[q];
      int64_t l = nsl_i64(launch)[row], hp = l == NSL_NULL_I64 || l <= gs ? 0 : l - gs < d ? l - gs : d;
      want_idle[grp] += d;
      want_host[grp] += hp;
      if (hp == 0) continue;
      if (m >= hg->len || nsl_i64(hg)[m] != grp || nsl_i64(hs)[m] != gs || nsl_i64(he)[m] != gs + hp ||
          nsl_i64(hr)[m] != row)
        fail_msg("round %d: host part %lld is not gap %lld's (group %lld, [%lld, %lld), row %lld)", round,
                 (long long)m, (long long)q, (long long)grp, (long long)gs, (long long)(gs + hp), (long long)row);
      m++;
    }
    assert_int_equal(hg->len, m);
    assert_int_equal(idle->len, ng);
    assert_int_equal(host->len, ng);
    for (int64_t grp = 0; grp < ng; grp++)
      if (nsl_i64(idle)[grp] != want_idle[grp] || nsl_i64(host)[grp] != want_host[grp])
        fail_msg("round %d group %lld: idle %lld and host %lld, want %lld and %lld", round, (long long)grp,
                 (long long)nsl_i64(idle)[grp], (long long)nsl_i64(host)[grp], (long long)want_idle[grp],
                 (long long)want_host[grp]);
    nsl_column *cols[] = {s, e, k, g, launch, idle, host, hg, hs, he, hr, wg, ws, we, wr};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
  /* bad input: a launch column of another length, or of text; nothing comes out */
  nsl_column *s = FX_I64(0, 5), *e = FX_I64(1, 6), *g = FX_I64(0, 0), *l = FX_I64(0);
  nsl_column *idle, *host, *og, *os, *oe, *orow;
  nsl_error err = {0};
  assert_int_equal(nsl_iv_gap_hosts(s, e, g, 1, l, &idle, &host, &og, &os, &oe, &orow, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "launch times"));
  assert_null(idle);
  assert_null(host);
  assert_int_equal(nsl_iv_gap_hosts(NULL, e, g, 1, l, &idle, &host, &og, &os, &oe, &orow, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "gap host parts"));
  assert_null(idle);
  release3(s, e, g);
  nsl_column_release(l);
}

/* ---- innermost join ---------------------------------------------------------------- */

/* B's ranges for nsl_innermost_join: report and tid keys, bounds, the nesting flag. */
typedef struct ranges {
  int64_t n;
  nsl_column *rep, *tid, *s, *e, *nest;
} ranges;

static void ranges_free(ranges *r) {
  nsl_column *cols[] = {r->rep, r->tid, r->s, r->e, r->nest};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

/* n random ranges on threads (report 0..1, tid 0..1): most inside an earlier range of their thread (nesting,
 * siblings that overlap too), some copies of one, some that do not nest, a few NULL or reversed bounds.  With
 * children > 0: one parent of that many children, in random row order (far from start order). */
static ranges random_ranges(int64_t n, int64_t children) {
  ranges r = {n, nsl_column_new(NSL_I32, n, NULL), nsl_column_new(NSL_I32, n, NULL), nsl_column_new(NSL_I64, n, NULL),
              nsl_column_new(NSL_I64, n, NULL), nsl_column_new(NSL_BOOL, n, NULL)};
  int32_t *rep = nsl_i32(r.rep), *tid = nsl_i32(r.tid);
  int64_t *s = nsl_i64(r.s), *e = nsl_i64(r.e);
  uint8_t *nest = nsl_bool(r.nest);
  for (int64_t i = 0; i < n; i++) {
    nest[i] = fx_range(0, 7) != 0;
    if (children > 0) {   /* row 0 the parent, the others its children */
      rep[i] = 0;
      tid[i] = 0;
      nest[i] = 1;
      if (i == 0) {
        s[i] = 0;
        e[i] = SPAN;
      } else {
        s[i] = fx_range(1, SPAN - 10);
        e[i] = s[i] + fx_range(1, 8);
      }
      continue;
    }
    int64_t k = i > 0 ? fx_range(0, i - 1) : 0, how = i > 0 ? fx_range(0, 9) : 9;
    if (how < 6 && s[k] != NSL_NULL_I64 && e[k] != NSL_NULL_I64 && e[k] > s[k]) {   /* inside row k */
      rep[i] = rep[k];
      tid[i] = tid[k];
      s[i] = fx_range(s[k], e[k]);
      e[i] = fx_range(s[i], e[k]);
    } else if (how == 6) {   /* a copy of row k */
      rep[i] = rep[k];
      tid[i] = tid[k];
      s[i] = s[k];
      e[i] = e[k];
    } else {
      rep[i] = (int32_t)fx_range(0, 1);
      tid[i] = (int32_t)fx_range(0, 1);
      s[i] = fx_range(0, SPAN - 1);
      e[i] = fx_range(0, 20) == 0 ? s[i] - 1 : fx_range(s[i], SPAN);
    }
    if (fx_range(0, 40) == 0) s[i] = NSL_NULL_I64;
    if (fx_range(0, 40) == 0) e[i] = NSL_NULL_I64;
    if (fx_range(0, 40) == 0) tid[i] = NSL_NULL_I32;
  }
  if (children > 0)   /* children in random row order */
    for (int64_t i = n - 1; i > 1; i--) {
      int64_t j = fx_range(1, i), t = s[i], u = e[i];
      s[i] = s[j];
      e[i] = e[j];
      s[j] = t;
      e[j] = u;
    }
  return r;
}

/* Whether range i of r nests (nsl__nvtx_project takes it: flagged, bounds, thread, stop not before start). */
static int ref_nests(const ranges *r, int64_t i) {
  int64_t s = nsl_i64(r->s)[i], e = nsl_i64(r->e)[i];
  return nsl_bool(r->nest)[i] && s != NSL_NULL_I64 && e != NSL_NULL_I64 && e >= s &&
         nsl_i32(r->tid)[i] != NSL_NULL_I32;
}

/* The tightest nesting range enclosing nesting range c on its thread (of equal intervals the one first in
 * (start, -stop, row) order encloses; of equal lengths the later in that order, the deeper), or -1. */
static int64_t ref_parent(const ranges *r, int64_t c) {
  int64_t best = -1, cs = nsl_i64(r->s)[c], ce = nsl_i64(r->e)[c];
  for (int64_t q = 0; q < r->n; q++) {
    if (q == c || !ref_nests(r, q) || nsl_i32(r->rep)[q] != nsl_i32(r->rep)[c] ||
        nsl_i32(r->tid)[q] != nsl_i32(r->tid)[c])
      continue;
    int64_t qs = nsl_i64(r->s)[q], qe = nsl_i64(r->e)[q];
    if (!(qs <= cs && ce <= qe) || (qs == cs && qe == ce && q > c)) continue;
    if (best >= 0) {
      int64_t bs = nsl_i64(r->s)[best], bl = nsl_i64(r->e)[best] - bs, l = qe - qs;
      if (l > bl || (l == bl && !(qs > bs || (qs == bs && q > best)))) continue;
    }
    best = q;
  }
  return best;
}

/* The innermost segments of r, as nsl_innermost_join documents them: row, start, stop, in tie order. */
static int64_t ref_segments(const ranges *r, int64_t *row, int64_t *ss, int64_t *se) {
  int64_t n = r->n, m = 0, *par = malloc((size_t)(n ? n : 1) * sizeof *par);
  const int64_t *s = nsl_i64(r->s), *e = nsl_i64(r->e);
  for (int64_t i = 0; i < n; i++) par[i] = ref_nests(r, i) ? ref_parent(r, i) : -1;
#define PUSH(R, A, B)                   \
  do {                                  \
    if ((B) > (A)) {                    \
      row[m] = (R), ss[m] = (A), se[m] = (B); \
      m++;                              \
    }                                   \
  } while (0)
  for (int64_t p = 0; p < n; p++) {   /* before each child, children by (start, row) */
    int64_t prev = -1;
    for (;;) {
      int64_t next = -1;
      for (int64_t c = 0; c < n; c++) {
        if (par[c] != p) continue;
        int after_prev = prev < 0 || s[c] > s[prev] || (s[c] == s[prev] && c > prev);
        if (after_prev && (next < 0 || s[c] < s[next] || (s[c] == s[next] && c < next))) next = c;
      }
      if (next < 0) break;
      PUSH(p, prev < 0 ? s[p] : e[prev], s[next]);
      prev = next;
    }
  }
  for (int64_t p = 0; p < n; p++) {   /* after the last child */
    int64_t last = INT64_MIN;
    for (int64_t c = 0; c < n; c++)
      if (par[c] == p && e[c] > last) last = e[c];
    if (last != INT64_MIN) PUSH(p, last, e[p]);
  }
  for (int64_t i = 0; i < n; i++) {   /* whole: nesting ranges without children, ranges that do not nest */
    int kids = 0;
    for (int64_t c = 0; c < n; c++) kids |= par[c] == i;
    int nests = nsl_bool(r->nest)[i] && e[i] != NSL_NULL_I64;
    if (s[i] != NSL_NULL_I64 && e[i] != NSL_NULL_I64 && !(nests && kids)) PUSH(i, s[i], e[i]);
  }
#undef PUSH
  free(par);
  return m;
}

/* Rounds of random intervals (report, tid keys) against random ranges, joined on (report, tid) or on report
 * alone, each answer checked against the best overlap of the reference segments found by trying each. */
static void innermost_rounds(uint64_t seed, int rounds, int64_t children) {
  int64_t seen = 0, matched = 0;
  for (int round = 0; round < rounds; round++) {
    fx_seed(seed + (uint64_t)round);
    int64_t nb = children > 0 ? children + 1 : fx_range(0, 60), na = fx_range(0, 40);
    ranges r = random_ranges(nb, children);
    nsl_column *as, *ae, *ak, *arep = nsl_column_new(NSL_I32, na, NULL);
    random_intervals(na, &as, &ae, &ak, 1);   /* ak: tid 0..3, some NULL */
    for (int64_t i = 0; i < na; i++) nsl_i32(arep)[i] = children > 0 ? 0 : (int32_t)fx_range(0, 1);
    if (children > 0)
      for (int64_t i = 0; i < na; i++)
        if (nsl_i32(ak)[i] != NSL_NULL_I32) nsl_i32(ak)[i] = 0;
    int by_thread = round % 2 == 0;
    const nsl_column *akeys[2] = {arep, ak}, *bkeys[2] = {r.rep, r.tid}, *thread[2] = {r.rep, r.tid};
    nsl_column *rows, *ov;
    nsl_error err = {0};
    if (nsl_innermost_join(as, ae, akeys, r.s, r.e, bkeys, by_thread ? 2 : 1, thread, 2, r.nest, &rows, &ov,
                           &err) != NSL_OK)
      fail_msg("round %d: innermost join failed: %s", round, err.msg);
    int64_t cap = 2 * nb + 1, *row = malloc((size_t)cap * sizeof *row), *ss = malloc((size_t)cap * sizeof *ss),
            *se = malloc((size_t)cap * sizeof *se), m = ref_segments(&r, row, ss, se);
    for (int64_t i = 0; i < na; i++) {
      int64_t s = nsl_i64(as)[i], e = nsl_i64(ae)[i], best = 0, bj = -1;
      int a_null = s == NSL_NULL_I64 || e == NSL_NULL_I64;
      for (int64_t j = 0; !a_null && j < m; j++) {
        int64_t b = row[j];
        if (nsl_i32(arep)[i] != nsl_i32(r.rep)[b]) continue;
        if (by_thread && (nsl_i32(ak)[i] == NSL_NULL_I32 || nsl_i32(ak)[i] != nsl_i32(r.tid)[b])) continue;
        int64_t lo = s > ss[j] ? s : ss[j], hi = e < se[j] ? e : se[j], len = hi - lo;
        if (len <= 0) continue;
        int better = len > best || (len == best && (ss[j] > ss[bj] || (ss[j] == ss[bj] && se[j] < se[bj])));
        if (better) {
          best = len;
          bj = j;
        }
      }
      int64_t want = bj >= 0 ? row[bj] : -1;
      seen++;
      matched += want >= 0;
      if (nsl_i64(rows)[i] != want || nsl_i64(ov)[i] != (a_null ? NSL_NULL_I64 : best))
        fail_msg("round %d, interval %lld [%lld, %lld): got range %lld overlap %lld, want range %lld overlap %lld",
                 round, (long long)i, (long long)s, (long long)e, (long long)nsl_i64(rows)[i],
                 (long long)nsl_i64(ov)[i], (long long)want, (long long)best);
    }
    free(row);
    free(ss);
    free(se);
    ranges_free(&r);
    nsl_column *cols[] = {as, ae, ak, arep, rows, ov};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  }
  if (matched * 100 < seen * 30 || matched == seen)
    fail_msg("%lld of %lld intervals matched: the data does not exercise the join", (long long)matched,
             (long long)seen);
}

/* nsl_innermost_join against the reference segments on random nested ranges; and one parent with hundreds of
 * children far from start order (their sort's second path). */
static void test_innermost_random(void **state) {
  (void)state;
  innermost_rounds(15000, 400, 0);
  innermost_rounds(16000, 20, 300);
}

/* A hand case on one thread: "step" [0, 100) holding "fwd" [10, 40) (holding "mm" [20, 30)) and "bwd"
 * [50, 90), and X [0, 100), which first does not nest.  Each piece counts alone: an interval [12, 32) has 8 ns
 * in fwd's [10, 20), 2 in its [30, 40), 10 in mm -- and 20 in X. */
static void test_innermost_hand(void **state) {
  (void)state;
  nsl_column *bs = FX_I64(0, 10, 20, 50, 0), *be = FX_I64(100, 40, 30, 90, 100), *bt = FX_I32(1, 1, 1, 1, 1);
  nsl_column *nest = nsl_column_new(NSL_BOOL, 5, NULL);
  for (int i = 0; i < 4; i++) nsl_bool(nest)[i] = 1;
  nsl_column *as = FX_I64(12, 41, 60, 5), *ae = FX_I64(32, 49, 70, 6), *at = FX_I32(1, 1, 1, 2);
  const nsl_column *ak[1] = {at}, *bk[1] = {bt};
  nsl_column *rows, *ov;
  nsl_error err = {0};
  assert_int_equal(nsl_innermost_join(as, ae, ak, bs, be, bk, 1, bk, 1, nest, &rows, &ov, &err), NSL_OK);
  /* X covers all of [12, 32); [41, 49) is 8 ns in step's [40, 50) and in X, the later start wins the tie, as
   * bwd's does at [60, 70); the interval on another thread falls in nothing */
  FX_EXPECT_I64(rows, 4, 0, 3, -1);
  FX_EXPECT_I64(ov, 20, 8, 10, 0);
  release3(rows, ov, NULL);
  /* X nests: step (first in row order) is its parent, and X the tightest around fwd and bwd, so mm wins [12,
   * 32) and X's [40, 50) has [41, 49) */
  nsl_bool(nest)[4] = 1;
  assert_int_equal(nsl_innermost_join(as, ae, ak, bs, be, bk, 1, bk, 1, nest, &rows, &ov, &err), NSL_OK);
  FX_EXPECT_I64(rows, 2, 4, 3, -1);
  FX_EXPECT_I64(ov, 10, 8, 10, 0);
  release3(rows, ov, NULL);
  /* bad input: a mask of another length, no thread keys */
  nsl_column *short_mask = nsl_column_new(NSL_BOOL, 2, NULL);
  assert_int_equal(nsl_innermost_join(as, ae, ak, bs, be, bk, 1, bk, 1, short_mask, &rows, &ov, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "innermost join"));
  assert_null(rows);
  assert_int_equal(nsl_innermost_join(as, ae, ak, bs, be, bk, 1, bk, 0, nest, &rows, &ov, &err), NSL_ERR_ARG);
  nsl_column *cols[] = {bs, be, bt, nest, as, ae, at, short_mask};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_overlap_hand),      cmocka_unit_test(test_overlap_string_keys),
      cmocka_unit_test(test_overlap_bad_input), cmocka_unit_test(test_overlap_random),
      cmocka_unit_test(test_overlap_few_a),
      cmocka_unit_test(test_overlap_few_b),
      cmocka_unit_test(test_overlap_large_threads),
      cmocka_unit_test(test_count_open_hand),   cmocka_unit_test(test_count_open_random),
      cmocka_unit_test(test_gaps_hand),         cmocka_unit_test(test_gaps_random),
      cmocka_unit_test(test_gap_sums_random),
      cmocka_unit_test(test_gap_sums_threads),
      cmocka_unit_test(test_gap_hosts_random),
      cmocka_unit_test(test_innermost_hand),    cmocka_unit_test(test_innermost_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
