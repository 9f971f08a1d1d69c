/* test_sweep.c -- the NVTX projection sweep and the tree of paths against
 * hand-computed cases and a brute-force reference on random data (every
 * call against every range, every range against every range). */
#include <stdio.h>

#include "kernel_fixtures.h"
#include "core/nsl_internal.h"

/* Asserts that c is an I32 column equal to the values. */
static void expect_i32(const nsl_column *c, int64_t n, const int64_t *want) {
  assert_non_null(c);
  assert_int_equal(c->type, NSL_I32);
  assert_int_equal(c->len, n);
  for (int64_t i = 0; i < n; i++)
    if (nsl_i32(c)[i] != want[i])
      fail_msg("row %lld: got %d, want %lld", (long long)i, nsl_i32(c)[i], (long long)want[i]);
}
#define EXPECT_I32(c, ...) \
  expect_i32((c), sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

/* ---- a projection fixture ------------------------------------------------------- */

typedef struct fixture {
  nsl_column *rtid, *rstart, *rstop, *rmask;   /* ranges (one key: the thread) */
  nsl_column *atid, *astart, *astop;           /* API calls */
  nsl_column *oapi, *ostart, *ostop;           /* GPU ops */
} fixture;

static void fixture_free(fixture *f) {
  nsl_column *cols[] = {f->rtid, f->rstart, f->rstop, f->rmask, f->atid, f->astart, f->astop,
                        f->oapi, f->ostart, f->ostop};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  memset(f, 0, sizeof *f);
}

static nsl_status project(const fixture *f, nsl__nvtx_projection *p, nsl_error *err) {
  const nsl_column *rk[1] = {f->rtid}, *ak[1] = {f->atid};
  nsl__nvtx_input in = {1, rk, f->rstart, f->rstop, f->rmask, ak, f->astart, f->astop, f->oapi, f->ostart, f->ostop, 0};
  return nsl__nvtx_project(&in, p, err);
}

/* ---- hand cases ------------------------------------------------------------------ */

/* Thread 1: A [0,100) encloses B [10,50) encloses C [20,30); D [60,90) in A.
 * Thread 2: E [0,100) (same times as A, other thread).
 * Calls: c0 [21,22) t1 in C; c1 [40,45) t1 in B; c2 [95,99) t1 in A;
 * c3 [5,6) t2 in E; c4 [200,210) t1 outside; c5 [10,12) t1 starts with B:
 * in B; c6 [49,51) t1 straddles B's end: in A.
 * Ops: two ops for c0 (a graph launch), one each for c1, c2, c3, c4, c6;
 * an op of no call (-1); c5 launches nothing. */
static void test_project_nested(void **state) {
  (void)state;
  fixture f = {0};
  f.rtid = FX_I64(1, 1, 1, 1, 2);
  f.rstart = FX_I64(0, 10, 20, 60, 0);
  f.rstop = FX_I64(100, 50, 30, 90, 100);
  f.atid = FX_I64(1, 1, 1, 2, 1, 1, 1);
  f.astart = FX_I64(21, 40, 95, 5, 200, 10, 49);
  f.astop = FX_I64(22, 45, 99, 6, 210, 12, 51);
  f.oapi = FX_I64(0, 0, 1, 2, 3, 4, -1, 6);
  f.ostart = FX_I64(1000, 1010, 1100, 1300, 2000, 5000, 7000, 1200);
  f.ostop = FX_I64(1005, 1020, 1150, 1400, 2100, 5001, 7001, 1250);
  nsl__nvtx_projection p;
  nsl_error err = {0};
  assert_int_equal(project(&f, &p, &err), NSL_OK);
  FX_EXPECT_I64(p.parent, -1, 0, 1, 0, -1);
  assert_int_equal(nsl_i32(p.depth)[0], 0);
  assert_int_equal(nsl_i32(p.depth)[1], 1);
  assert_int_equal(nsl_i32(p.depth)[2], 2);
  assert_int_equal(nsl_i32(p.depth)[3], 1);
  assert_int_equal(nsl_i32(p.depth)[4], 0);
  /* A: c0 (2 ops), c1, c2, c6; B: c0, c1; C: c0; D: none; E: c3 */
  EXPECT_I32(p.ops, 5, 3, 2, 0, 1);
  EXPECT_I32(p.launches, 4, 2, 1, 0, 1);
  FX_EXPECT_I64(p.gpu_time, 5 + 10 + 50 + 100 + 50, 5 + 10 + 50, 15, 0, 100);
  FX_EXPECT_I64(p.proj_start, 1000, 1000, 1000, NSL_NULL_I64, 2000);
  FX_EXPECT_I64(p.proj_dur, 400, 150, 20, NSL_NULL_I64, 100);
  EXPECT_I32(p.children, 1, 1, 0, 0, 0);
  FX_EXPECT_I64(p.api_range, 2, 1, 0, 4, -1, 1, 0);
  FX_EXPECT_I64(p.op_range, 2, 2, 1, 0, 4, -1, -1, 0);
  nsl__nvtx_projection_free(&p);
  nsl__nvtx_projection_free(&p);   /* idempotent */
  fixture_free(&f);
}

/* The ranges of the overlap tests: r0 [0,10)  r1 [5,100)  r2 [5,100) (equal
 * to r1)  r3 [7,7] (zero)  r4 [3, open)  r5 [0,1000) masked out  r6 [50,40)
 * reversed  r7 NULL thread. */
static void overlap_ranges(fixture *f) {
  f->rtid = FX_I64(1, 1, 1, 1, 1, 1, 1, NSL_NULL_I64);
  f->rstart = FX_I64(0, 5, 5, 7, 3, 0, 50, 0);
  f->rstop = FX_I64(10, 100, 100, 7, NSL_NULL_I64, 1000, 40, 1000);
  f->rmask = FX_BOOL(1, 1, 1, 1, 1, 0, 1, 1);
}

/* Start/end ranges that overlap without nesting, equal intervals, zero
 * lengths, open ranges, masked and reversed ranges, NULL keys. */
static void test_project_overlaps(void **state) {
  (void)state;
  fixture f = {0};
  overlap_ranges(&f);
  /* c0 [6,8]: in r0 (shortest, 10), r1, r2, r4 -- not in r3
   * c1 [7,7]: in r3 (zero length), r0, r1, r2, r4
   * c2 [20,30]: in r1, r2, r4: innermost r2 (equal to r1, deeper)
   * c3 [2000,2001]: in r4 only (open); r0 ended long before but is still
   *    below r4 on the stack
   * c4 [1,2]: in r0 only (r4 starts at 3; r5 is masked out)
   * c5 [20, NULL]: matches nothing */
  f.atid = FX_I64(1, 1, 1, 1, 1, 1);
  f.astart = FX_I64(6, 7, 20, 2000, 1, 20);
  f.astop = FX_I64(8, 7, 30, 2001, 2, NSL_NULL_I64);
  f.oapi = FX_I64(0, 1, 2, 3, 4, 5);
  f.ostart = FX_I64(100, 200, 300, 400, 500, 600);
  f.ostop = FX_I64(101, 202, 303, 404, 505, 606);
  nsl__nvtx_projection p;
  nsl_error err = {0};
  assert_int_equal(project(&f, &p, &err), NSL_OK);
  /* parents: r0 top-level (r4 starts later); r4 [3,open) encloses nothing
   * before it; r1 [5,100) is enclosed by r4 only; r2 equal to r1 -> r1;
   * r3 [7,7] -> r0 (length 10 is the shortest enclosing) */
  FX_EXPECT_I64(p.parent, -1, 4, 1, 0, -1, -1, -1, -1);
  assert_int_equal(nsl_i32(p.depth)[2], 2);
  assert_int_equal(nsl_i32(p.depth)[3], 1);
  assert_int_equal(nsl_i32(p.depth)[5], NSL_NULL_I32);
  assert_int_equal(nsl_i32(p.depth)[6], NSL_NULL_I32);
  assert_int_equal(nsl_i32(p.depth)[7], NSL_NULL_I32);
  FX_EXPECT_I64(p.api_range, 0, 3, 2, 4, 0, -1);
  EXPECT_I32(p.ops, 3, 3, 3, 1, 4, 0, 0, 0);
  EXPECT_I32(p.launches, 3, 3, 3, 1, 4, 0, 0, 0);
  FX_EXPECT_I64(p.gpu_time, 5 + 1 + 2, 1 + 2 + 3, 1 + 2 + 3, 2, 1 + 2 + 3 + 4, 0, 0, 0);
  FX_EXPECT_I64(p.proj_start, 100, 100, 100, 200, 100, NSL_NULL_I64, NSL_NULL_I64, NSL_NULL_I64);
  FX_EXPECT_I64(p.proj_dur, 405, 203, 203, 2, 304, NSL_NULL_I64, NSL_NULL_I64, NSL_NULL_I64);
  EXPECT_I32(p.children, 1, 1, 0, 0, 1, 0, 0, 0);
  nsl__nvtx_projection_free(&p);
  fixture_free(&f);
}

/* parents_only: the overlapping ranges above with no calls and no ops give
 * the same hand-computed parents and depths, and no per-range sums; calls
 * with parents_only are refused. */
static void test_project_parents_only(void **state) {
  (void)state;
  fixture f = {0};
  overlap_ranges(&f);
  f.atid = nsl_column_new(NSL_I64, 0, NULL);
  f.astart = nsl_column_new(NSL_I64, 0, NULL);
  f.astop = nsl_column_new(NSL_I64, 0, NULL);
  f.oapi = nsl_column_new(NSL_I64, 0, NULL);
  f.ostart = nsl_column_new(NSL_I64, 0, NULL);
  f.ostop = nsl_column_new(NSL_I64, 0, NULL);
  const nsl_column *rk[1] = {f.rtid}, *ak[1] = {f.atid};
  nsl__nvtx_input in = {1, rk, f.rstart, f.rstop, f.rmask, ak, f.astart, f.astop, f.oapi, f.ostart, f.ostop, 1};
  nsl__nvtx_projection p;
  nsl_error err = {0};
  assert_int_equal(nsl__nvtx_project(&in, &p, &err), NSL_OK);
  FX_EXPECT_I64(p.parent, -1, 4, 1, 0, -1, -1, -1, -1);
  EXPECT_I32(p.depth, 0, 1, 2, 1, 0, NSL_NULL_I32, NSL_NULL_I32, NSL_NULL_I32);
  assert_null(p.proj_start);
  assert_null(p.proj_dur);
  assert_null(p.ops);
  assert_null(p.launches);
  assert_null(p.gpu_time);
  assert_null(p.children);
  assert_int_equal(p.api_range->len, 0);
  assert_int_equal(p.op_range->len, 0);
  nsl__nvtx_projection_free(&p);
  /* with calls: refused */
  nsl_column *tid = FX_I64(1), *t0 = FX_I64(6), *t1 = FX_I64(8);
  const nsl_column *ak2[1] = {tid};
  in.api_keys = ak2;
  in.api_start = t0;
  in.api_stop = t1;
  assert_int_equal(nsl__nvtx_project(&in, &p, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "parents only"));
  nsl_column_release(tid);
  nsl_column_release(t0);
  nsl_column_release(t1);
  fixture_free(&f);
}

static void test_project_empty_and_bad(void **state) {
  (void)state;
  nsl__nvtx_projection p;
  nsl_error err = {0};
  fixture f = {0};
  f.rtid = FX_I64();
  f.rstart = FX_I64();
  f.rstop = FX_I64();
  f.atid = FX_I64();
  f.astart = FX_I64();
  f.astop = FX_I64();
  f.oapi = FX_I64();
  f.ostart = FX_I64();
  f.ostop = FX_I64();
  assert_int_equal(project(&f, &p, &err), NSL_OK);
  assert_int_equal(p.parent->len, 0);
  assert_int_equal(p.op_range->len, 0);
  nsl__nvtx_projection_free(&p);
  fixture_free(&f);

  f.rtid = FX_I64(1, 1);
  f.rstart = FX_I64(0, 5);
  f.rstop = FX_I64(10, 8);
  f.atid = FX_I64(1);
  f.astart = FX_I64(6);
  f.astop = FX_I64(7);
  f.oapi = FX_I64(0, 3);   /* 3: past the calls */
  f.ostart = FX_I64(1, 2);
  f.ostop = FX_I64(2, 3);
  assert_int_equal(project(&f, &p, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "names API call 3"));
  assert_null(p.parent);   /* zeroed on error */
  nsl_i64(f.oapi)[1] = 0;
  nsl_column *shorter = FX_I64(1);
  nsl_column *keep = f.rstop;
  f.rstop = shorter;   /* 2 starts, 1 stop */
  assert_int_equal(project(&f, &p, &err), NSL_ERR_ARG);
  f.rstop = keep;
  nsl_column *fl = FX_F64(1, 1);
  nsl_column *keep_tid = f.rtid;
  f.rtid = fl;   /* a float key */
  assert_int_equal(project(&f, &p, &err), NSL_ERR_ARG);
  f.rtid = keep_tid;
  nsl_column *badmask = FX_BOOL(1);
  f.rmask = badmask;
  assert_int_equal(project(&f, &p, &err), NSL_ERR_ARG);
  f.rmask = NULL;
  assert_int_equal(nsl__nvtx_project(NULL, &p, &err), NSL_ERR_ARG);
  assert_int_equal(project(&f, NULL, &err), NSL_ERR_ARG);
  const nsl_column *rk[1] = {f.rtid}, *ak[1] = {f.atid};
  nsl__nvtx_input in = {0, rk, f.rstart, f.rstop, NULL, ak, f.astart, f.astop, f.oapi, f.ostart, f.ostop, 0};
  assert_int_equal(nsl__nvtx_project(&in, &p, &err), NSL_ERR_ARG);   /* no keys */
  assert_int_equal(project(&f, &p, &err), NSL_OK);
  EXPECT_I32(p.ops, 2, 2);
  nsl__nvtx_projection_free(&p);
  nsl_column_release(shorter);
  nsl_column_release(fl);
  nsl_column_release(badmask);
  fixture_free(&f);
}

/* Several key columns (report, pid, tid) of mixed types. */
static void test_project_keys(void **state) {
  (void)state;
  nsl_column *rrep = FX_I32(0, 1, 1), *rpid = FX_I32(7, 7, 7), *rtid = FX_I64(9, 9, 8);
  nsl_column *rs = FX_I64(0, 0, 0), *re = FX_I64(100, 100, 100);
  nsl_column *arep = FX_I32(1, 0, 1), *apid = FX_I32(7, 7, 7), *atid = FX_I64(9, 9, 9);
  nsl_column *as = FX_I64(5, 6, 7), *ae = FX_I64(6, 7, 8);
  nsl_column *oa = FX_I64(0, 1, 2), *os = FX_I64(0, 0, 0), *oe = FX_I64(1, 1, 1);
  const nsl_column *rk[3] = {rrep, rpid, rtid}, *ak[3] = {arep, apid, atid};
  nsl__nvtx_input in = {3, rk, rs, re, NULL, ak, as, ae, oa, os, oe, 0};
  nsl__nvtx_projection p;
  nsl_error err = {0};
  assert_int_equal(nsl__nvtx_project(&in, &p, &err), NSL_OK);
  FX_EXPECT_I64(p.api_range, 1, 0, 1);
  EXPECT_I32(p.ops, 1, 2, 0);
  nsl__nvtx_projection_free(&p);
  nsl_column *cols[] = {rrep, rpid, rtid, rs, re, arep, apid, atid, as, ae, oa, os, oe};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
}

/* ---- brute force on random data ---------------------------------------------------- */

/* The shortest range of the same thread enclosing [s, e] (ties: the first in
 * (start, -stop, row) order, i.e. the ancestor), excluding row `self`; -1. */
static int64_t brute_innermost(const fixture *f, int64_t tid, int64_t s, int64_t e, int64_t self) {
  int64_t best = -1;
  for (int64_t r = 0; r < f->rstart->len; r++) {
    int64_t rs = nsl_i64(f->rstart)[r], re = nsl_i64(f->rstop)[r];
    if (r == self || nsl_i64(f->rtid)[r] != tid || !nsl_bool(f->rmask)[r] || re < rs) continue;
    if (!(rs <= s && e <= re)) continue;
    if (self >= 0) {   /* an equal interval encloses only when it comes first in sweep order */
      if (rs == s && re == e && r > self) continue;
    }
    if (best < 0) {
      best = r;
      continue;
    }
    int64_t bl = nsl_i64(f->rstop)[best] - nsl_i64(f->rstart)[best], l = re - rs;
    /* shorter wins; among equal lengths the later in sweep order (deeper) */
    int later = rs > nsl_i64(f->rstart)[best] || (rs == nsl_i64(f->rstart)[best] && r > best);
    if (l < bl || (l == bl && later)) best = r;
  }
  return best;
}

/* Puts rows of cols (n rows each, cols[1] the start) nearly in start order,
 * as exports store them: sorted by start (stable), then a few rows moved
 * later by a random distance. */
static void nearly_sort(nsl_column **cols, int ncols, int64_t n) {
  for (int64_t i = 1; i < n; i++)
    for (int64_t j = i; j > 0 && nsl_i64(cols[1])[j - 1] > nsl_i64(cols[1])[j]; j--)
      for (int c = 0; c < ncols; c++) {
        size_t es = nsl_type_size(cols[c]->type);
        char tmp[8], *a = (char *)cols[c]->data + (size_t)(j - 1) * es;
        memcpy(tmp, a, es);
        memcpy(a, a + es, es);
        memcpy(a + es, tmp, es);
      }
  for (int64_t k = 0; k < n / 10; k++) {
    int64_t from = fx_range(0, n - 1), to = fx_range(from, n - 1);
    for (int64_t j = from; j < to; j++)
      for (int c = 0; c < ncols; c++) {
        size_t es = nsl_type_size(cols[c]->type);
        char tmp[8], *a = (char *)cols[c]->data + (size_t)j * es;
        memcpy(tmp, a, es);
        memcpy(a, a + es, es);
        memcpy(a + es, tmp, es);
      }
  }
}

static void test_project_random(void **state) {
  (void)state;
  for (int round = 0; round < 80; round++) {
    fx_seed(1000 + round);
    int64_t big = round >= 40 ? 5 : 1;   /* nearly sorted rounds: more rows, many equal starts */
    int64_t nr = fx_range(0, 60 * big), na = fx_range(0, 80 * big), no = fx_range(0, 120);
    int nested = round % 2;   /* push/pop-like (proper nesting) or free start/end */
    fixture f = {0};
    f.rtid = nsl_column_new(NSL_I64, nr, NULL);
    f.rstart = nsl_column_new(NSL_I64, nr, NULL);
    f.rstop = nsl_column_new(NSL_I64, nr, NULL);
    f.rmask = nsl_column_new(NSL_BOOL, nr, NULL);
    for (int64_t r = 0; r < nr; r++) {
      int64_t s = fx_range(0, 200), len = fx_range(0, nested ? 40 : 120);
      if (nested) {   /* snap to a grid of nested blocks: [k*L, k*L + L') */
        int64_t lvl = fx_range(0, 3), unit = 200 >> (2 * lvl);
        s = s / unit * unit + lvl;
        len = unit - 2 * lvl;
      }
      nsl_i64(f.rtid)[r] = fx_range(1, 2);
      nsl_i64(f.rstart)[r] = s;
      nsl_i64(f.rstop)[r] = s + len;
      nsl_bool(f.rmask)[r] = fx_range(0, 9) > 0;
    }
    f.atid = nsl_column_new(NSL_I64, na, NULL);
    f.astart = nsl_column_new(NSL_I64, na, NULL);
    f.astop = nsl_column_new(NSL_I64, na, NULL);
    for (int64_t a = 0; a < na; a++) {
      int64_t s = fx_range(0, 220);
      nsl_i64(f.atid)[a] = fx_range(1, 2);
      nsl_i64(f.astart)[a] = s;
      nsl_i64(f.astop)[a] = s + fx_range(0, 6);
    }
    if (round >= 40) {   /* nearly in order: most rows stay, the others are sorted apart and merged */
      nearly_sort((nsl_column *[]){f.rtid, f.rstart, f.rstop, f.rmask}, 4, nr);
      nearly_sort((nsl_column *[]){f.atid, f.astart, f.astop}, 3, na);
    }
    f.oapi = nsl_column_new(NSL_I64, no, NULL);
    f.ostart = nsl_column_new(NSL_I64, no, NULL);
    f.ostop = nsl_column_new(NSL_I64, no, NULL);
    for (int64_t o = 0; o < no; o++) {
      int64_t s = fx_range(0, 100000);
      nsl_i64(f.oapi)[o] = na ? fx_range(-1, na - 1) : -1;
      nsl_i64(f.ostart)[o] = s;
      nsl_i64(f.ostop)[o] = s + fx_range(0, 500);
    }
    nsl__nvtx_projection p;
    nsl_error err = {0};
    assert_int_equal(project(&f, &p, &err), NSL_OK);
    for (int64_t a = 0; a < na; a++) {
      int64_t want = brute_innermost(&f, nsl_i64(f.atid)[a], nsl_i64(f.astart)[a], nsl_i64(f.astop)[a], -1);
      int64_t got = nsl_i64(p.api_range)[a];
      /* equal lengths are equal intervals for calls: either is innermost */
      if (got != want && (got < 0 || want < 0 || nsl_i64(f.rstart)[got] != nsl_i64(f.rstart)[want] ||
                          nsl_i64(f.rstop)[got] != nsl_i64(f.rstop)[want]))
        fail_msg("round %d call %lld: innermost %lld, want %lld", round, (long long)a, (long long)got, (long long)want);
    }
    for (int64_t r = 0; r < nr; r++) {
      int64_t s = nsl_i64(f.rstart)[r], e = nsl_i64(f.rstop)[r];
      int in = nsl_bool(f.rmask)[r] && e >= s;   /* reversed ranges take no part */
      int64_t want_parent = in ? brute_innermost(&f, nsl_i64(f.rtid)[r], s, e, r) : -1;
      int64_t got = nsl_i64(p.parent)[r];
      if (got != want_parent && (got < 0 || want_parent < 0 || nsl_i64(f.rstart)[got] != nsl_i64(f.rstart)[want_parent] ||
                                 nsl_i64(f.rstop)[got] != nsl_i64(f.rstop)[want_parent]))
        fail_msg("round %d range %lld: parent %lld, want %lld", round, (long long)r, (long long)got,
                 (long long)want_parent);
      /* every op whose call it encloses */
      int64_t ops = 0, launches = 0, busy = 0, first = NSL_NULL_I64, last = NSL_NULL_I64;
      for (int64_t a = 0; in && a < na; a++) {
        if (nsl_i64(f.atid)[a] != nsl_i64(f.rtid)[r] || nsl_i64(f.astart)[a] < s || nsl_i64(f.astop)[a] > e) continue;
        int64_t n = 0;
        for (int64_t o = 0; o < no; o++) {
          if (nsl_i64(f.oapi)[o] != a) continue;
          int64_t os = nsl_i64(f.ostart)[o], oe = nsl_i64(f.ostop)[o];
          n++;
          busy += oe - os;
          if (first == NSL_NULL_I64 || os < first) first = os;
          if (last == NSL_NULL_I64 || oe > last) last = oe;
        }
        ops += n;
        launches += n > 0;
      }
      if (nsl_i32(p.ops)[r] != ops || nsl_i32(p.launches)[r] != launches || nsl_i64(p.gpu_time)[r] != busy ||
          nsl_i64(p.proj_start)[r] != first || nsl_i64(p.proj_dur)[r] != (first == NSL_NULL_I64 ? NSL_NULL_I64 : last - first))
        fail_msg("round %d range %lld: ops %lld/%lld launches %lld/%lld busy %lld/%lld start, dur %lld %lld / first, last %lld %lld",
                 round, (long long)r, (long long)nsl_i32(p.ops)[r], (long long)ops,
                 (long long)nsl_i32(p.launches)[r], (long long)launches, (long long)nsl_i64(p.gpu_time)[r],
                 (long long)busy, (long long)nsl_i64(p.proj_start)[r], (long long)nsl_i64(p.proj_dur)[r],
                 (long long)first, (long long)last);
    }
    /* depth is the length of the parent chain */
    for (int64_t r = 0; r < nr; r++) {
      if (!nsl_bool(f.rmask)[r] || nsl_i64(f.rstop)[r] < nsl_i64(f.rstart)[r]) {
        assert_int_equal(nsl_i32(p.depth)[r], NSL_NULL_I32);
        continue;
      }
      int32_t d = 0;
      for (int64_t q = nsl_i64(p.parent)[r]; q >= 0; q = nsl_i64(p.parent)[q]) d++;
      assert_int_equal(nsl_i32(p.depth)[r], d);
    }
    nsl__nvtx_projection_free(&p);
    fixture_free(&f);
  }
}

/* Many start/end ranges that each overlap the next (a staircase): the
 * stack must stay small (compaction) and the answers exact. */
static void test_project_staircase(void **state) {
  (void)state;
  const int64_t n = 20000;
  fixture f = {0};
  f.rtid = nsl_column_new(NSL_I64, n, NULL);
  f.rstart = nsl_column_new(NSL_I64, n, NULL);
  f.rstop = nsl_column_new(NSL_I64, n, NULL);
  f.atid = nsl_column_new(NSL_I64, n, NULL);
  f.astart = nsl_column_new(NSL_I64, n, NULL);
  f.astop = nsl_column_new(NSL_I64, n, NULL);
  f.oapi = nsl_column_new(NSL_I64, n, NULL);
  f.ostart = nsl_column_new(NSL_I64, n, NULL);
  f.ostop = nsl_column_new(NSL_I64, n, NULL);
  for (int64_t i = 0; i < n; i++) {
    nsl_i64(f.rtid)[i] = nsl_i64(f.atid)[i] = 1;
    nsl_i64(f.rstart)[i] = 10 * i;
    nsl_i64(f.rstop)[i] = 10 * i + 15;   /* overlaps the next range by 5 */
    nsl_i64(f.astart)[i] = 10 * i + 12;  /* in range i and range i+1 */
    nsl_i64(f.astop)[i] = 10 * i + 13;
    nsl_i64(f.oapi)[i] = i;
    nsl_i64(f.ostart)[i] = i;
    nsl_i64(f.ostop)[i] = i + 1;
  }
  nsl__nvtx_projection p;
  nsl_error err = {0};
  assert_int_equal(project(&f, &p, &err), NSL_OK);
  for (int64_t i = 0; i < n; i++) {
    assert_int_equal(nsl_i64(p.parent)[i], -1);
    assert_int_equal(nsl_i64(p.api_range)[i], i + 1 < n ? i + 1 : i);   /* equal lengths: the later start */
    assert_int_equal(nsl_i32(p.ops)[i], i == 0 ? 1 : 2);
  }
  nsl__nvtx_projection_free(&p);
  fixture_free(&f);
}

/* ---- tree of paths ------------------------------------------------------------------ */

static void test_tree_hand(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  /* rows: 0 a; 1 a/b; 2 a/b (same path as 1); 3 a (another root a); 4 a/c;
   * 5 b (root); 6 masked; 7 child of masked 6 -> root a; 8 NULL label under 0 */
  nsl_column *parent = FX_I64(-1, 0, 3, -1, 3, -1, -1, 6, 0);
  nsl_column *label = fx_str(d, 9, (const char *const[]){"a", "b", "b", "a", "c", "b", "x", "a", NULL});
  nsl_column *mask = FX_BOOL(1, 1, 1, 1, 1, 1, 0, 1, 1);
  nsl__tree t;
  nsl_error err = {0};
  assert_int_equal(nsl__tree_paths(parent, label, mask, &t, &err), NSL_OK);
  assert_int_equal(t.nnodes, 5);
  FX_EXPECT_I64(t.node_of, 0, 1, 1, 0, 2, 3, -1, 0, 4);
  FX_EXPECT_I64(t.node_parent, -1, 0, 0, -1, 0);
  assert_int_equal(nsl_i32(t.node_depth)[1], 1);
  assert_int_equal(nsl_i32(t.node_depth)[3], 0);
  for (int64_t k = 0; k < t.nnodes; k++) {   /* node_row is a row of the node */
    int64_t row = nsl_i64(t.node_row)[k];
    assert_int_equal(nsl_i64(t.node_of)[row], k);
  }
  nsl__tree_free(&t);
  nsl__tree_free(&t);
  /* a parent past the end, a cycle, bad types */
  nsl_column *far = FX_I64(-1, 5), *cyc = FX_I64(1, 2, 0), *lab2 = FX_I64(1, 2), *lab3 = FX_I64(1, 2, 3);
  assert_int_equal(nsl__tree_paths(far, lab2, NULL, &t, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "parent 5"));
  assert_int_equal(nsl__tree_paths(cyc, lab3, NULL, &t, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "cycle"));
  assert_null(t.node_of);
  nsl_column *fl = FX_F64(1, 2);
  assert_int_equal(nsl__tree_paths(far, fl, NULL, &t, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__tree_paths(far, lab3, NULL, &t, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__tree_paths(far, lab2, lab2, &t, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__tree_paths(far, lab2, NULL, NULL, &err), NSL_ERR_ARG);
  nsl_column *cols[] = {parent, label, mask, far, cyc, lab2, lab3, fl};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  nsl_dict_release(d);
}

/* Random forests: rows share a node exactly when their label paths are equal. */
static void test_tree_random(void **state) {
  (void)state;
  for (int round = 0; round < 20; round++) {
    fx_seed(77 + round);
    int64_t n = fx_range(1, 300);
    nsl_column *parent = nsl_column_new(NSL_I64, n, NULL), *label = nsl_column_new(NSL_I32, n, NULL);
    for (int64_t i = 0; i < n; i++) {   /* parents after children too: a random permutation of a forest */
      nsl_i32(label)[i] = (int32_t)fx_range(0, 3);
      nsl_i64(parent)[i] = -1;
    }
    for (int64_t i = 1; i < n; i++) {
      int64_t p = fx_range(-1, i - 1);
      nsl_i64(parent)[i] = p;
    }
    /* relabel rows by a permutation so that parents may come after children */
    int64_t *perm = malloc((size_t)n * sizeof *perm), *inv = malloc((size_t)n * sizeof *inv);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
      int64_t j = fx_range(0, i), t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) inv[perm[i]] = i;
    nsl_column *p2 = nsl_column_new(NSL_I64, n, NULL), *l2 = nsl_column_new(NSL_I32, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      int64_t p = nsl_i64(parent)[i];
      nsl_i64(p2)[perm[i]] = p < 0 ? -1 : perm[p];
      nsl_i32(l2)[perm[i]] = nsl_i32(label)[i];
    }
    nsl__tree t;
    nsl_error err = {0};
    assert_int_equal(nsl__tree_paths(p2, l2, NULL, &t, &err), NSL_OK);
    /* brute force: compare label paths of every pair */
    for (int64_t a = 0; a < n; a++)
      for (int64_t b = a + 1; b < n; b++) {
        int same = 1;
        int64_t x = a, y = b;
        while (same && x >= 0 && y >= 0) {
          if (nsl_i32(l2)[x] != nsl_i32(l2)[y]) same = 0;
          x = nsl_i64(p2)[x];
          y = nsl_i64(p2)[y];
        }
        if (x >= 0 || y >= 0) same = 0;
        int got = nsl_i64(t.node_of)[a] == nsl_i64(t.node_of)[b];
        if (got != same) fail_msg("round %d rows %lld %lld: same node %d, same path %d", round, (long long)a,
                                  (long long)b, got, same);
      }
    (void)inv;
    free(perm);
    free(inv);
    nsl__tree_free(&t);
    nsl_column_release(parent);
    nsl_column_release(label);
    nsl_column_release(p2);
    nsl_column_release(l2);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_project_nested),   cmocka_unit_test(test_project_overlaps),
      cmocka_unit_test(test_project_parents_only),
      cmocka_unit_test(test_project_empty_and_bad), cmocka_unit_test(test_project_keys),
      cmocka_unit_test(test_project_random),   cmocka_unit_test(test_project_staircase),
      cmocka_unit_test(test_tree_hand),        cmocka_unit_test(test_tree_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
