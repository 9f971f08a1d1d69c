/* test_intervals.c -- interval algebra against hand-computed sets and two
 * brute-force references on random data: a per-nanosecond bitmap (small
 * coordinates) and a per-event-boundary sweep (any coordinates). */
#include <stdio.h>

#include "kernel_fixtures.h"

#define SPAN 256   /* bitmap references use coordinates in [0, SPAN) */

static void expect_set(const nsl_intervals *s, int64_t n, const int64_t *pairs) {
  if (s->n != n) {
    for (int64_t i = 0; i < s->n; i++)
      fprintf(stderr, "  [%lld, %lld)\n", (long long)s->start[i], (long long)s->stop[i]);
    fail_msg("%lld intervals, want %lld", (long long)s->n, (long long)n);
  }
  for (int64_t i = 0; i < n; i++)
    if (s->start[i] != pairs[2 * i] || s->stop[i] != pairs[2 * i + 1])
      fail_msg("interval %lld: [%lld, %lld), want [%lld, %lld)", (long long)i, (long long)s->start[i],
               (long long)s->stop[i], (long long)pairs[2 * i], (long long)pairs[2 * i + 1]);
}
#define EXPECT_SET(s, ...)                                                                          \
  expect_set((s), sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t) / 2, (int64_t[]){__VA_ARGS__})
#define EXPECT_EMPTY(s) assert_int_equal((s)->n, 0)

/* ---- union -------------------------------------------------------------------------- */

static void test_union_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_intervals u;
  /* unsorted; nested; touching [30,40)+[40,45); empty [50,50); reversed [70,60); NULL */
  nsl_column *s = FX_I64(30, 0, 5, 40, 50, 70, NSL_NULL_I64, 100, 2);
  nsl_column *e = FX_I64(40, 10, 8, 45, 50, 60, 200, 110, 12);
  assert_int_equal(nsl_iv_union(s, e, NULL, &u, &err), NSL_OK);
  EXPECT_SET(&u, 0, 12, 30, 45, 100, 110);
  assert_int_equal(nsl_iv_total(&u), 12 + 15 + 10);
  nsl_iv_free(&u);
  nsl_iv_free(&u);   /* idempotent */
  nsl_column *m = FX_BOOL(1, 1, 1, 0, 1, 1, 1, 0, 0);
  assert_int_equal(nsl_iv_union(s, e, m, &u, &err), NSL_OK);
  EXPECT_SET(&u, 0, 10, 30, 40);
  nsl_iv_free(&u);
  /* i32 columns, already sorted input */
  nsl_column *s32 = FX_I32(1, 3, 9), *e32 = FX_I32(4, 5, NSL_NULL_I32);
  assert_int_equal(nsl_iv_union(s32, e32, NULL, &u, &err), NSL_OK);
  EXPECT_SET(&u, 1, 5);
  nsl_iv_free(&u);
  /* empty input */
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL);
  assert_int_equal(nsl_iv_union(z, z, NULL, &u, &err), NSL_OK);
  EXPECT_EMPTY(&u);
  assert_int_equal(nsl_iv_total(&u), 0);
  nsl_iv_free(&u);
  /* extremes: the whole int64 line but the NULL */
  nsl_column *xs = FX_I64(INT64_MAX - 5, INT64_MIN + 1, 0), *xe = FX_I64(INT64_MAX, INT64_MIN + 3, 1);
  assert_int_equal(nsl_iv_union(xs, xe, NULL, &u, &err), NSL_OK);
  EXPECT_SET(&u, INT64_MIN + 1, INT64_MIN + 3, 0, 1, INT64_MAX - 5, INT64_MAX);
  nsl_iv_free(&u);
  /* bad input */
  nsl_column *f = FX_F64(1, 2, 3), *short1 = FX_I64(1);
  assert_int_equal(nsl_iv_union(f, f, NULL, &u, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_union(s, short1, NULL, &u, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "stops"));
  assert_int_equal(nsl_iv_union(s, e, short1, &u, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_union(s, e, NULL, NULL, &err), NSL_ERR_ARG);
  assert_int_equal(u.n, 0);
  nsl_column_release(f);
  nsl_column_release(short1);
  nsl_column_release(xs);
  nsl_column_release(xe);
  nsl_column_release(z);
  nsl_column_release(s32);
  nsl_column_release(e32);
  nsl_column_release(m);
  nsl_column_release(s);
  nsl_column_release(e);
}

/* Marks [s, e) of the bitmap. */
static void mark(uint8_t *bits, int64_t s, int64_t e) {
  for (int64_t t = s < 0 ? 0 : s; t < e && t < SPAN; t++) bits[t] = 1;
}

/* The maximal runs of a bitmap as a set. */
static void runs(const uint8_t *bits, nsl_intervals *out) {
  out->n = 0;
  out->start = malloc(SPAN * sizeof *out->start);
  out->stop = malloc(SPAN * sizeof *out->stop);
  for (int64_t t = 0; t < SPAN; t++) {
    if (!bits[t] || (t > 0 && bits[t - 1])) continue;
    int64_t u = t;
    while (u < SPAN && bits[u]) u++;
    out->start[out->n] = t;
    out->stop[out->n++] = u;
  }
}

/* Random intervals in [0, SPAN) with NULLs, empty and reversed ones. */
static void random_rows(int64_t n, nsl_column **s, nsl_column **e, nsl_column **m, uint8_t *bits) {
  *s = nsl_column_new(NSL_I64, n, NULL);
  *e = nsl_column_new(NSL_I64, n, NULL);
  *m = nsl_column_new(NSL_BOOL, n, NULL);
  if (bits) memset(bits, 0, SPAN);
  for (int64_t i = 0; i < n; i++) {
    int64_t a = fx_range(0, SPAN - 1), len = fx_range(-3, 20);
    int64_t b = a + len > SPAN ? SPAN : a + len;
    int null = fx_range(0, 15) == 0;
    nsl_i64(*s)[i] = null ? NSL_NULL_I64 : a;
    nsl_i64(*e)[i] = b;
    nsl_bool(*m)[i] = fx_range(0, 3) != 0;
    if (bits && !null && nsl_bool(*m)[i]) mark(bits, a, b);
  }
}

static void set_equal(const nsl_intervals *got, const nsl_intervals *want) {
  int64_t *pairs = malloc((size_t)(2 * want->n + 1) * sizeof *pairs);
  for (int64_t i = 0; i < want->n; i++) {
    pairs[2 * i] = want->start[i];
    pairs[2 * i + 1] = want->stop[i];
  }
  expect_set(got, want->n, pairs);
  free(pairs);
}

static void test_union_random_bitmap(void **state) {
  (void)state;
  nsl_error err = {0};
  fx_seed(17);
  for (int trial = 0; trial < 200; trial++) {
    int64_t n = fx_range(0, 60);
    uint8_t bits[SPAN];
    nsl_column *s, *e, *m;
    random_rows(n, &s, &e, &m, bits);
    nsl_intervals got, want;
    assert_int_equal(nsl_iv_union(s, e, m, &got, &err), NSL_OK);
    runs(bits, &want);
    set_equal(&got, &want);
    nsl_iv_free(&got);
    nsl_iv_free(&want);
    nsl_column_release(s);
    nsl_column_release(e);
    nsl_column_release(m);
  }
  /* a large unsorted input (radix path with 11-bit digits) */
  int64_t n = 100000;
  uint8_t bits[SPAN];
  nsl_column *s, *e, *m;
  random_rows(n, &s, &e, &m, bits);
  for (int64_t i = 0; i < n; i++) nsl_bool(m)[i] = 1;
  memset(bits, 0, SPAN);
  for (int64_t i = 0; i < n; i++)
    if (nsl_i64(s)[i] != NSL_NULL_I64) mark(bits, nsl_i64(s)[i], nsl_i64(e)[i]);
  nsl_intervals got, want;
  assert_int_equal(nsl_iv_union(s, e, NULL, &got, &err), NSL_OK);
  runs(bits, &want);
  set_equal(&got, &want);
  nsl_iv_free(&got);
  nsl_iv_free(&want);
  nsl_column_release(s);
  nsl_column_release(e);
  nsl_column_release(m);
}

/* ---- set operations ---------------------------------------------------------------------- */

/* The union with the rows' order given (nsl_iv_union_ordered) against the bitmap: the argsort by start (no
 * sort made), an order that leaves rows out (they add nothing), one whose starts fall (sorted after all); a
 * row out of range refused. */
static void test_union_ordered(void **state) {
  (void)state;
  nsl_error err = {0};
  fx_seed(23);
  for (int trial = 0; trial < 200; trial++) {
    int64_t n = fx_range(0, 60);
    uint8_t bits[SPAN];
    nsl_column *s, *e, *m;
    random_rows(n, &s, &e, &m, bits);
    const nsl_column *keys[1] = {s};
    nsl_column *ord = nsl_argsort(keys, NULL, 1, &err);
    assert_non_null(ord);
    if (trial % 3 == 1 && n > 1) {   /* rows left out: only those kept count */
      int64_t k = 0;
      memset(bits, 0, SPAN);
      for (int64_t q = 0; q < n; q++) {
        int64_t i = nsl_i64(ord)[q];
        if (fx_range(0, 2) == 0) continue;
        nsl_i64(ord)[k++] = i;
        if (nsl_bool(m)[i] && nsl_i64(s)[i] != NSL_NULL_I64) mark(bits, nsl_i64(s)[i], nsl_i64(e)[i]);
      }
      nsl_column_set_len(ord, k);
    } else if (trial % 3 == 2 && n > 1)   /* starts that fall: the rows in row order */
      for (int64_t q = 0; q < n; q++) nsl_i64(ord)[q] = n - 1 - q;
    nsl_intervals got, want;
    assert_int_equal(nsl_iv_union_ordered(s, e, m, ord, &got, &err), NSL_OK);
    runs(bits, &want);
    set_equal(&got, &want);
    nsl_iv_free(&got);
    nsl_iv_free(&want);
    if (ord->len > 0) {
      nsl_i64(ord)[0] = trial % 2 ? n : -1;
      assert_int_equal(nsl_iv_union_ordered(s, e, m, ord, &got, &err), NSL_ERR_ARG);
      assert_non_null(strstr(err.msg, "order names row"));
      assert_int_equal(got.n, 0);
    }
    nsl_column_release(ord);
    nsl_column_release(s);
    nsl_column_release(e);
    nsl_column_release(m);
  }
  nsl_column *s = FX_I64(1, 2), *e = FX_I64(3, 4), *f = FX_F64(0, 1);
  nsl_intervals u;
  assert_int_equal(nsl_iv_union_ordered(s, e, NULL, NULL, &u, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_union_ordered(s, e, NULL, f, &u, &err), NSL_ERR_ARG);
  nsl_column_release(s);
  nsl_column_release(e);
  nsl_column_release(f);
}

static void test_set_ops_hand(void **state) {
  (void)state;
  nsl_error err = {0};
  int64_t as[] = {0, 20, 50}, ae[] = {10, 30, 60};
  int64_t bs[] = {5, 25, 40}, be[] = {22, 27, 55};
  nsl_intervals a = {3, as, ae}, b = {3, bs, be}, r;
  assert_int_equal(nsl_iv_intersect(&a, &b, &r, &err), NSL_OK);
  EXPECT_SET(&r, 5, 10, 20, 22, 25, 27, 50, 55);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_subtract(&a, &b, &r, &err), NSL_OK);
  EXPECT_SET(&r, 0, 5, 22, 25, 27, 30, 55, 60);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_subtract(&b, &a, &r, &err), NSL_OK);
  EXPECT_SET(&r, 10, 20, 40, 50);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_gaps(&a, NSL_NULL_I64, NSL_NULL_I64, &r, &err), NSL_OK);
  EXPECT_SET(&r, 10, 20, 30, 50);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_gaps(&a, -5, 100, &r, &err), NSL_OK);
  EXPECT_SET(&r, -5, 0, 10, 20, 30, 50, 60, 100);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_gaps(&a, 25, 52, &r, &err), NSL_OK);
  EXPECT_SET(&r, 30, 50);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_gaps(&a, 52, 25, &r, &err), NSL_OK);   /* lo >= hi */
  EXPECT_EMPTY(&r);
  nsl_iv_free(&r);
  nsl_intervals none = {0, NULL, NULL};
  assert_int_equal(nsl_iv_gaps(&none, NSL_NULL_I64, NSL_NULL_I64, &r, &err), NSL_OK);
  EXPECT_EMPTY(&r);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_gaps(&none, 3, 9, &r, &err), NSL_OK);
  EXPECT_SET(&r, 3, 9);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_intersect(&a, &none, &r, &err), NSL_OK);
  EXPECT_EMPTY(&r);
  nsl_iv_free(&r);
  assert_int_equal(nsl_iv_subtract(&a, &none, &r, &err), NSL_OK);
  EXPECT_SET(&r, 0, 10, 20, 30, 50, 60);
  nsl_iv_free(&r);
  /* not a set: overlapping, unsorted, reversed */
  int64_t os[] = {0, 5}, oe[] = {10, 12};
  nsl_intervals bad = {2, os, oe};
  assert_int_equal(nsl_iv_intersect(&a, &bad, &r, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "nsl_iv_union"));
  int64_t rs[] = {10}, re[] = {0};
  nsl_intervals rev = {1, rs, re};
  assert_int_equal(nsl_iv_subtract(&rev, &a, &r, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_gaps(&bad, 0, 1, &r, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_intersect(NULL, &a, &r, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_intersect(&a, &a, NULL, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_iv_total(NULL), 0);
}

static void test_set_ops_random_bitmap(void **state) {
  (void)state;
  nsl_error err = {0};
  fx_seed(23);
  for (int trial = 0; trial < 200; trial++) {
    uint8_t ba[SPAN], bb[SPAN], want_bits[SPAN];
    nsl_column *s, *e, *m;
    nsl_intervals a, b, r, want;
    random_rows(fx_range(0, 25), &s, &e, &m, ba);
    assert_int_equal(nsl_iv_union(s, e, m, &a, &err), NSL_OK);
    nsl_column_release(s);
    nsl_column_release(e);
    nsl_column_release(m);
    random_rows(fx_range(0, 25), &s, &e, &m, bb);
    assert_int_equal(nsl_iv_union(s, e, m, &b, &err), NSL_OK);
    nsl_column_release(s);
    nsl_column_release(e);
    nsl_column_release(m);

    for (int t = 0; t < SPAN; t++) want_bits[t] = ba[t] && bb[t];
    assert_int_equal(nsl_iv_intersect(&a, &b, &r, &err), NSL_OK);
    runs(want_bits, &want);
    set_equal(&r, &want);
    nsl_iv_free(&r);
    nsl_iv_free(&want);

    for (int t = 0; t < SPAN; t++) want_bits[t] = ba[t] && !bb[t];
    assert_int_equal(nsl_iv_subtract(&a, &b, &r, &err), NSL_OK);
    runs(want_bits, &want);
    set_equal(&r, &want);
    nsl_iv_free(&r);
    nsl_iv_free(&want);

    int64_t lo = fx_range(0, SPAN / 2), hi = fx_range(SPAN / 2, SPAN);
    for (int t = 0; t < SPAN; t++) want_bits[t] = t >= lo && t < hi && !ba[t];
    assert_int_equal(nsl_iv_gaps(&a, lo, hi, &r, &err), NSL_OK);
    runs(want_bits, &want);
    set_equal(&r, &want);
    nsl_iv_free(&r);
    nsl_iv_free(&want);

    int64_t total = 0;
    for (int t = 0; t < SPAN; t++) total += ba[t];
    assert_int_equal(nsl_iv_total(&a), total);
    nsl_iv_free(&a);
    nsl_iv_free(&b);
  }
}

/* ---- grouped union ---------------------------------------------------------------------- */

/* 1 when row i has both ends, is in group g and not masked out. */
static int ref_row_in(const nsl_column *s, const nsl_column *e, const nsl_column *go, int64_t g,
                      const nsl_column *m, int64_t i) {
  return nsl_i64(go)[i] == g && (!m || nsl_bool(m)[i]) && !nsl_column_is_null(s, i) && !nsl_column_is_null(e, i);
}

/* Per-event-boundary reference: busy time of the rows of group g, summing
 * the elementary segments between distinct boundaries that a row covers. */
static int64_t ref_busy(const nsl_column *s, const nsl_column *e, const nsl_column *go, int64_t g,
                        const nsl_column *m) {
  int64_t n = s->len, nb = 0, busy = 0;
  int64_t *bd = malloc((size_t)(2 * n + 1) * sizeof *bd);
  for (int64_t i = 0; i < n; i++) {
    if (!ref_row_in(s, e, go, g, m, i)) continue;
    bd[nb++] = nsl_column_get_i64(s, i);
    bd[nb++] = nsl_column_get_i64(e, i);
  }
  for (int64_t i = 1; i < nb; i++)   /* insertion sort of the boundaries */
    for (int64_t j = i; j > 0 && bd[j - 1] > bd[j]; j--) {
      int64_t t = bd[j];
      bd[j] = bd[j - 1];
      bd[j - 1] = t;
    }
  for (int64_t k = 0; k + 1 < nb; k++) {
    int64_t a = bd[k], b = bd[k + 1];
    if (a == b) continue;
    for (int64_t i = 0; i < n; i++) {
      if (!ref_row_in(s, e, go, g, m, i)) continue;
      if (nsl_column_get_i64(s, i) <= a && b <= nsl_column_get_i64(e, i)) {
        busy += b - a;
        break;
      }
    }
  }
  free(bd);
  return busy;
}

/* The grouped union of the rows against the boundary reference, group by group; releases the columns. */
static void check_union_grouped(const char *what, int trial, nsl_column *s, nsl_column *e, nsl_column *g,
                                int64_t ng, nsl_column *m) {
  nsl_error err = {0};
  nsl_column *b = nsl_iv_union_grouped(s, e, g, ng, m, &err);
  assert_non_null(b);
  for (int64_t k = 0; k < ng; k++) {
    int64_t want = ref_busy(s, e, g, k, m);
    if (nsl_i64(b)[k] != want)
      fail_msg("%s %d group %lld: %lld, want %lld", what, trial, (long long)k, (long long)nsl_i64(b)[k],
               (long long)want);
  }
  nsl_column *cols[] = {b, s, e, g};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

static void test_union_grouped(void **state) {
  (void)state;
  nsl_error err = {0};
  /* two streams: busy 15 (0..10 + 5..15) and 5; a row in no group; a masked row */
  nsl_column *s = FX_I64(0, 100, 5, 7, 200, 300), *e = FX_I64(10, 105, 15, 9, 260, 400);
  nsl_column *g = FX_I64(0, 1, 0, -1, 1, 2), *m = FX_BOOL(1, 1, 1, 1, 0, 1);
  nsl_column *b = nsl_iv_union_grouped(s, e, g, 3, m, &err);
  FX_EXPECT_I64(b, 15, 5, 100);
  nsl_column_release(b);
  b = nsl_iv_union_grouped(s, e, g, 4, NULL, &err);   /* an empty group reads 0 */
  FX_EXPECT_I64(b, 15, 65, 100, 0);
  nsl_column_release(b);
  assert_null(nsl_iv_union_grouped(s, e, g, 2, NULL, &err));
  assert_non_null(strstr(err.msg, "group 2"));
  nsl_column *g32 = FX_I32(0, 0, 0, 0, 0, 0);
  assert_null(nsl_iv_union_grouped(s, e, g32, 1, NULL, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL);
  b = nsl_iv_union_grouped(z, z, z, 2, NULL, &err);
  FX_EXPECT_I64(b, 0, 0);
  nsl_column_release(b);
  nsl_column_release(z);
  nsl_column_release(g32);
  nsl_column_release(s);
  nsl_column_release(e);
  nsl_column_release(g);
  nsl_column_release(m);

  /* random against the boundary reference, with starts near either end of the int64 range in every third */
  fx_seed(51);
  for (int trial = 0; trial < 60; trial++) {
    int64_t n = fx_range(0, 300), ng = fx_range(1, 6);
    int wide = trial % 3 == 0;
    s = nsl_column_new(NSL_I64, n, NULL);
    e = nsl_column_new(NSL_I64, n, NULL);
    g = nsl_column_new(NSL_I64, n, NULL);
    m = nsl_column_new(NSL_BOOL, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      int64_t base = wide ? (fx_range(0, 1) ? INT64_MIN + 2 : INT64_MAX - 2000) : 0;
      int64_t a = base + fx_range(0, 1000), len = fx_range(-2, 60);
      nsl_i64(s)[i] = fx_range(0, 20) == 0 ? NSL_NULL_I64 : a;
      nsl_i64(e)[i] = len > 0 && a > INT64_MAX - len ? INT64_MAX : a + len;
      nsl_i64(g)[i] = fx_range(-1, ng - 1);
      nsl_bool(m)[i] = fx_range(0, 4) != 0;
    }
    check_union_grouped("trial", trial, s, e, g, ng, trial % 2 ? m : NULL);
    nsl_column_release(m);
  }

  /* rows as one to five tables, each in time order, one after the other (a GPU's kernels, copies and
   * memsets): each group's rows come in runs of ascending start, merged without a sort of every row; with
   * ties, wide starts, NULLs and a mask; every eighth trial shuffled (too many descents: the sort) */
  for (int trial = 0; trial < 80; trial++) {
    int64_t n = fx_range(0, 3000), ng = fx_range(1, 40), tables = fx_range(1, 5);
    int wide = trial % 5 == 0, shuffled = trial % 8 == 7;
    s = nsl_column_new(NSL_I64, n, NULL);
    e = nsl_column_new(NSL_I64, n, NULL);
    g = nsl_column_new(NSL_I64, n, NULL);
    m = nsl_column_new(NSL_BOOL, n, NULL);
    int64_t base = wide ? INT64_MIN + 5 : fx_range(-1000, 1000), at = base;
    for (int64_t i = 0; i < n; i++) {
      if (i > 0 && i % (n / tables + 1) == 0) at = base + fx_range(0, 50);   /* the next table */
      at += fx_range(0, 3) == 0 ? 0 : fx_range(0, 40);
      int64_t a = shuffled ? base + fx_range(0, 40 * n + 1) : at, len = fx_range(-2, 90);
      nsl_i64(s)[i] = fx_range(0, 30) == 0 ? NSL_NULL_I64 : a;
      nsl_i64(e)[i] = fx_range(0, 40) == 0 ? NSL_NULL_I64 : a + len;
      nsl_i64(g)[i] = fx_range(0, 25) == 0 ? -1 : fx_range(0, ng - 1);
      nsl_bool(m)[i] = fx_range(0, 6) != 0;
    }
    check_union_grouped("tables trial", trial, s, e, g, ng, trial % 2 ? m : NULL);
    nsl_column_release(m);
  }
}

/* An interval and its group (the reference of the large case). */
typedef struct ref_pair {
  int64_t g, s, e;
} ref_pair;

static int cmp_ref_pair(const void *x, const void *y) {
  const ref_pair *a = x, *b = y;
  return a->g != b->g ? (a->g < b->g ? -1 : 1) : a->s < b->s ? -1 : a->s > b->s;
}

/* Rows enough to be split over the threads (each part counted and scattered on its own): a million and a
 * half, as four tables in time order one after the other, in 300 groups, against a sort by group and start. */
static void test_union_grouped_large(void **state) {
  (void)state;
  nsl_error err = {0};
  int64_t n = 1500000, ng = 300;
  nsl_column *s = nsl_column_new(NSL_I64, n, NULL), *e = nsl_column_new(NSL_I64, n, NULL);
  nsl_column *g = nsl_column_new(NSL_I64, n, NULL), *m = nsl_column_new(NSL_BOOL, n, NULL);
  fx_seed(77);
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    if (i % (n / 4) == 0) at = fx_range(0, 1000);
    at += fx_range(0, 30);
    nsl_i64(s)[i] = at;
    nsl_i64(e)[i] = fx_range(0, 100) == 0 ? NSL_NULL_I64 : at + fx_range(-1, 60);
    nsl_i64(g)[i] = fx_range(0, 50) == 0 ? -1 : fx_range(0, ng - 1);
    nsl_bool(m)[i] = fx_range(0, 9) != 0;
  }
  ref_pair *p = malloc((size_t)n * sizeof *p);
  int64_t *want = calloc((size_t)ng, sizeof *want);
  assert_true(p && want);
  for (int masked = 0; masked < 2; masked++) {
    nsl_column *b = nsl_iv_union_grouped(s, e, g, ng, masked ? m : NULL, &err);
    assert_non_null(b);
    int64_t np = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t k = nsl_i64(g)[i], a = nsl_i64(s)[i], z = nsl_i64(e)[i];
      if (k >= 0 && (!masked || nsl_bool(m)[i]) && z != NSL_NULL_I64 && a < z) p[np++] = (ref_pair){k, a, z};
    }
    qsort(p, (size_t)np, sizeof *p, cmp_ref_pair);
    memset(want, 0, (size_t)ng * sizeof *want);
    for (int64_t i = 0, cs = 0, ce = 0; i <= np; i++) {
      if (i == np || i == 0 || p[i].g != p[i - 1].g || p[i].s > ce) {
        if (i > 0) want[p[i - 1].g] += ce - cs;
        if (i < np) cs = p[i].s, ce = p[i].e;
      } else if (p[i].e > ce)
        ce = p[i].e;
    }
    for (int64_t k = 0; k < ng; k++)
      if (nsl_i64(b)[k] != want[k])
        fail_msg("masked %d group %lld: %lld, want %lld", masked, (long long)k, (long long)nsl_i64(b)[k],
                 (long long)want[k]);
    nsl_column_release(b);
  }
  free(p);
  free(want);
  nsl_column_release(s);
  nsl_column_release(e);
  nsl_column_release(g);
  nsl_column_release(m);
}

/* ---- coverage -------------------------------------------------------------------------- */

static void test_coverage(void **state) {
  (void)state;
  nsl_error err = {0};
  int64_t bs[] = {10, 30}, be[] = {20, 40};
  nsl_intervals b = {2, bs, be};
  nsl_column *s = FX_I64(0, 15, 25, 35, 0, NSL_NULL_I64, 50, 18, 12);
  nsl_column *e = FX_I64(100, 35, 28, 36, 10, 5, 60, 12, 18);
  nsl_column *c = nsl_iv_coverage(s, e, &b, &err);
  FX_EXPECT_I64(c, 20, 10, 0, 1, 0, NSL_NULL_I64, 0, 0, 6);
  nsl_column_release(c);
  nsl_intervals none = {0, NULL, NULL};
  c = nsl_iv_coverage(s, e, &none, &err);
  FX_EXPECT_I64(c, 0, 0, 0, 0, 0, NSL_NULL_I64, 0, 0, 0);
  nsl_column_release(c);
  int64_t os[] = {0, 5}, oe[] = {10, 12};
  nsl_intervals bad = {2, os, oe};
  assert_null(nsl_iv_coverage(s, e, &bad, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  nsl_column_release(s);
  nsl_column_release(e);

  fx_seed(77);
  for (int trial = 0; trial < 100; trial++) {
    uint8_t bits[SPAN];
    nsl_column *rs, *re, *rm;
    random_rows(fx_range(0, 30), &rs, &re, &rm, bits);
    nsl_intervals set;
    assert_int_equal(nsl_iv_union(rs, re, rm, &set, &err), NSL_OK);
    nsl_column_release(rs);
    nsl_column_release(re);
    nsl_column_release(rm);
    int64_t n = fx_range(0, 80);
    random_rows(n, &rs, &re, &rm, NULL);
    if (trial % 2) {   /* in start order: the searches walk forward */
      const nsl_column *k[1] = {rs};
      nsl_column *p = nsl_argsort(k, NULL, 1, &err);
      nsl_column *ss = nsl_column_gather(rs, p, &err), *ee = nsl_column_gather(re, p, &err);
      nsl_column_release(rs);
      nsl_column_release(re);
      nsl_column_release(p);
      rs = ss;
      re = ee;
    }
    nsl_column *cov = nsl_iv_coverage(rs, re, &set, &err);
    assert_non_null(cov);
    for (int64_t i = 0; i < n; i++) {
      int64_t want = 0;
      if (nsl_i64(rs)[i] == NSL_NULL_I64) want = NSL_NULL_I64;
      else
        for (int64_t t = nsl_i64(rs)[i]; t < nsl_i64(re)[i]; t++) want += bits[t];
      assert_int_equal(nsl_i64(cov)[i], want);
    }
    nsl_column_release(cov);
    nsl_column_release(rs);
    nsl_column_release(re);
    nsl_column_release(rm);
    nsl_iv_free(&set);
  }
}

/* GPU busy time per device of two real exports against a gaps-and-islands
 * query in SQL over the same files. */
static void test_real_busy_against_sql(void **state) {
  (void)state;
  const char *files[] = {"pytorch_h100_2gpu_2026.2.sqlite", "pytorch_nccl_2gpu_2026.2.sqlite"};
  for (int f = 0; f < 2; f++) {
    sqlite3 *db = fx_sql_open(files[f]);
    nsl_error err = {0};
    nsl_column *k[3], *q[2];
    int64_t n = fx_sql_columns(db, "SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL", "iii", k, NULL);
    assert_true(n > 1000);
    int64_t nq = fx_sql_columns(
        db,
        "WITH m AS (SELECT deviceId AS d, start AS s, end AS e, MAX(end) OVER (PARTITION BY deviceId "
        "  ORDER BY start, end ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pm "
        "  FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end > start), "
        "i AS (SELECT d, s, e, SUM(CASE WHEN pm IS NULL OR s > pm THEN 1 ELSE 0 END) OVER (PARTITION BY d "
        "  ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island FROM m) "
        "SELECT d, SUM(len) FROM (SELECT d, MAX(e) - MIN(s) AS len FROM i GROUP BY d, island) GROUP BY d ORDER BY d",
        "ii", q, NULL);
    assert_true(nq >= 1);
    nsl_column *busy = nsl_iv_union_grouped(k[1], k[2], k[0], nsl_i64(q[0])[nq - 1] + 1, NULL, &err);
    assert_non_null(busy);
    int64_t all = 0;
    for (int64_t r = 0; r < nq; r++) {
      assert_int_equal(nsl_i64(busy)[nsl_i64(q[0])[r]], nsl_i64(q[1])[r]);
      /* the same through a mask and the plain union */
      nsl_column *m = nsl_column_cmp_i64(k[0], NSL_EQ, nsl_i64(q[0])[r], NULL);
      nsl_intervals u;
      assert_int_equal(nsl_iv_union(k[1], k[2], m, &u, &err), NSL_OK);
      assert_int_equal(nsl_iv_total(&u), nsl_i64(q[1])[r]);
      all += nsl_iv_total(&u);
      nsl_iv_free(&u);
      nsl_column_release(m);
    }
    assert_true(all > 0);
    nsl_column_release(busy);
    for (int c = 0; c < 3; c++) nsl_column_release(k[c]);
    for (int c = 0; c < 2; c++) nsl_column_release(q[c]);
    sqlite3_close(db);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_union_hand),
      cmocka_unit_test(test_union_random_bitmap),
      cmocka_unit_test(test_union_ordered),
      cmocka_unit_test(test_set_ops_hand),
      cmocka_unit_test(test_set_ops_random_bitmap),
      cmocka_unit_test(test_union_grouped),
      cmocka_unit_test(test_union_grouped_large),
      cmocka_unit_test(test_coverage),
      cmocka_unit_test(test_real_busy_against_sql),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
