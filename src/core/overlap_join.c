/* overlap_join.c -- sweeps that join intervals (or points) with the
 * intervals of another table sharing a key:
 *   nsl_overlap_join     for each row of A, the row of B that overlaps it
 *                        most (the CUDA API call, OS call or NVTX range a
 *                        GPU idle gap fell into);
 *   nsl_overlap_any      whether some row of B overlaps each row of A (the
 *                        NVTX ranges near an idle gap);
 *   nsl_innermost_join   for each row of A, the range of B whose own time
 *                        (less its children's) overlaps it most (the
 *                        innermost NVTX range a thread spent a gap in);
 *   nsl_iv_count_open    for each point, how many intervals are open at it
 *                        (kernels launched but not yet started at a launch);
 *   nsl_iv_gaps_grouped  the idle gaps of every group's busy time (per
 *                        device, per stream);
 *   nsl_iv_gap_sums      the same gaps' sums per group, and the long ones.
 *
 * Keys follow nsl_join_index: B's key tuples are grouped (nsl_groupby) and
 * A's tuples probe those groups, so NULL keys match nothing, integers match
 * by value and strings by text.  Within a group both sides are visited in
 * start order. */
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"

/* to - from for to > from, without signed overflow (saturates at INT64_MAX). */
static inline int64_t span(int64_t from, int64_t to) {
  uint64_t d = (uint64_t)to - (uint64_t)from;
  return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

static int int_col(const nsl_column *c) { return c && (c->type == NSL_I64 || c->type == NSL_I32); }

/* Start and stop of row i; 0 when either is NULL. */
static inline int bounds(const nsl_column *start, const nsl_column *stop, int64_t i, int64_t *s, int64_t *e) {
  int ns, ne;
  *s = nsl__int_at(start, i, &ns);
  *e = nsl__int_at(stop, i, &ne);
  return !ns && !ne;
}

/* Checks a (start, stop) pair of integer columns of equal length. */
static nsl_status check_pair(const char *what, const char *side, const nsl_column *start,
                             const nsl_column *stop, nsl_error *err) {
  if (!int_col(start) || !int_col(stop))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: %s start and stop must be integer (ns) columns", what, side);
  if (start->len != stop->len)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: %s has %lld starts but %lld stops", what, side,
                         (long long)start->len, (long long)stop->len);
  return NSL_OK;
}

/* Group ids of the rows of both sides: B's rows are grouped by their key
 * tuple (nsl_groupby), an A row gets the group of the B rows with equal keys
 * (-1: none, or a NULL key).  Without keys every row is in group 0.  *ga and
 * *gb receive new I64 columns of na and nb rows. */
static nsl_status key_groups(const char *what, const nsl_column *const *a_keys, int64_t na,
                             const nsl_column *const *b_keys, int64_t nb, int nkeys, nsl_column **ga,
                             nsl_column **gb, nsl_error *err) {
  *ga = *gb = NULL;
  if (nkeys < 0 || (nkeys > 0 && (!a_keys || !b_keys)))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: missing key columns", what);
  for (int k = 0; k < nkeys; k++) {
    if (!a_keys[k] || !b_keys[k]) return nsl_error_set(err, NSL_ERR_ARG, "%s: key %d is missing", what, k + 1);
    if (a_keys[k]->len != na || b_keys[k]->len != nb)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: key %d has %lld and %lld rows, the intervals %lld and %lld",
                           what, k + 1, (long long)a_keys[k]->len, (long long)b_keys[k]->len, (long long)na,
                           (long long)nb);
  }
  if (nkeys == 0) {
    *ga = nsl_column_new(NSL_I64, na, NULL);   /* zero-filled: group 0 */
    *gb = nsl_column_new(NSL_I64, nb, NULL);
    if (!*ga || !*gb) goto nomem;
    return NSL_OK;
  }
  nsl_groups g = {0};
  nsl_status rc = nsl_groupby(b_keys, nkeys, &g, err);
  if (rc != NSL_OK) return rc;
  nsl_column *first = nsl_join_index(a_keys, b_keys, nkeys, err);
  if (!first) {
    nsl_groups_free(&g);
    return err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
  }
  *gb = nsl_column_retain(g.group_of);
  *ga = nsl_column_new(NSL_I64, na, NULL);
  if (*ga) {
    const int64_t *f = nsl_i64(first), *gof = nsl_i64(g.group_of);
    for (int64_t i = 0; i < na; i++) nsl_i64(*ga)[i] = f[i] < 0 ? -1 : gof[f[i]];
  }
  nsl_column_release(first);
  nsl_groups_free(&g);
  if (!*ga) goto nomem;
  return NSL_OK;
nomem:
  nsl_column_release(*ga);
  nsl_column_release(*gb);
  *ga = *gb = NULL;
  return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory (%lld and %lld rows)", what, (long long)na,
                       (long long)nb);
}

/* ---- overlap join ---------------------------------------------------------------- */

/* The rows of B that can match, in (group, start) order. */
typedef struct b_rows {
  int64_t n;
  int64_t *g, *s, *e, *row;
} b_rows;

static void b_rows_free(b_rows *b) {
  free(b->g);
  free(b->s);
  free(b->e);
  free(b->row);
  memset(b, 0, sizeof *b);
}

/* Whether B row j beats B row k at equal overlap: the later start (the inner
 * of nested ranges), then the earlier stop, then the lower row. */
static inline int wins_tie(const b_rows *b, int64_t j, int64_t k) {
  if (b->s[j] != b->s[k]) return b->s[j] > b->s[k];
  if (b->e[j] != b->e[k]) return b->e[j] < b->e[k];
  return b->row[j] < b->row[k];
}

/* The sweep of the overlap join, its rows' groups given (key_groups: ga per
 * A row, gb per B row; -1 in none): checked bounds, b_mask NULL or a bool
 * per B row.  Ties between B rows go by wins_tie (in the end to the lower row). */
static nsl_status overlap_sweep(const nsl_column *ga, const nsl_column *a_start, const nsl_column *a_stop,
                                const nsl_column *gb, const nsl_column *b_start, const nsl_column *b_stop,
                                const nsl_column *b_mask, nsl_column **rows, nsl_column **overlap,
                                nsl_error *err) {
  const char *what = "overlap join";
  int64_t na = a_start->len, nb = b_start->len;
  nsl_status rc;
  nsl_column *pa = NULL, *pb = NULL, *res = NULL, *ov = NULL;
  b_rows b = {0};
  int64_t *act = NULL;
  const nsl_column *ka[2] = {ga, a_start}, *kb[2] = {gb, b_start};
  if (!(pa = nsl_argsort(ka, NULL, 2, err)) || !(pb = nsl_argsort(kb, NULL, 2, err))) {
    rc = err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
    goto fail;
  }
  res = nsl_column_new(NSL_I64, na, NULL);
  ov = nsl_column_new(NSL_I64, na, NULL);
  b.g = malloc((size_t)(nb ? nb : 1) * sizeof *b.g);
  b.s = malloc((size_t)(nb ? nb : 1) * sizeof *b.s);
  b.e = malloc((size_t)(nb ? nb : 1) * sizeof *b.e);
  b.row = malloc((size_t)(nb ? nb : 1) * sizeof *b.row);
  act = malloc((size_t)(nb ? nb : 1) * sizeof *act);
  if (!res || !ov || !b.g || !b.s || !b.e || !b.row || !act) goto nomem;
  const uint8_t *mk = b_mask ? nsl_bool(b_mask) : NULL;
  for (int64_t q = 0; q < nb; q++) {   /* the usable rows of B, in (group, start) order */
    int64_t j = nsl_i64(pb)[q], g = nsl_i64(gb)[j], s, e;
    if (g < 0 || (mk && !mk[j]) || !bounds(b_start, b_stop, j, &s, &e) || s >= e) continue;
    b.g[b.n] = g;
    b.s[b.n] = s;
    b.e[b.n] = e;
    b.row[b.n++] = j;
  }
  int64_t *o = nsl_i64(res), *olen = nsl_i64(ov);
  int64_t next = 0, nact = 0, cur = -1;
  for (int64_t p = 0; p < na; p++) {
    int64_t i = nsl_i64(pa)[p], g = nsl_i64(ga)[i], s, e;
    o[i] = -1;
    olen[i] = 0;
    if (!bounds(a_start, a_stop, i, &s, &e)) {
      olen[i] = NSL_NULL_I64;
      continue;
    }
    if (g < 0) continue;
    if (g != cur) {   /* a new key: B rows of earlier keys are done */
      cur = g;
      nact = 0;
      while (next < b.n && b.g[next] < g) next++;
    }
    /* B rows that start before s join the open set; those that ended by s leave it */
    while (next < b.n && b.g[next] == g && b.s[next] < s) act[nact++] = next++;
    int64_t keep = 0, best = 0, bj = -1;
    for (int64_t k = 0; k < nact; k++) {
      int64_t j = act[k];
      if (b.e[j] <= s) continue;
      act[keep++] = j;
      if (s >= e) continue;
      int64_t len = span(s, b.e[j] < e ? b.e[j] : e);
      if (len > best || (len == best && bj >= 0 && wins_tie(&b, j, bj))) {
        best = len;
        bj = j;
      }
    }
    nact = keep;
    /* B rows that start within [s, e): overlap at most e - start, so stop
     * once that falls below the best (equal may still win the tie) */
    for (int64_t j = next; j < b.n && b.g[j] == g && b.s[j] < e; j++) {
      if (span(b.s[j], e) < best) break;
      int64_t len = span(b.s[j], b.e[j] < e ? b.e[j] : e);
      if (len > best || (len == best && bj >= 0 && wins_tie(&b, j, bj))) {
        best = len;
        bj = j;
      }
    }
    if (bj >= 0) {
      o[i] = b.row[bj];
      olen[i] = best;
    }
  }
  *rows = res;
  *overlap = ov;
  res = ov = NULL;
  rc = NSL_OK;
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory (%lld and %lld rows)", what, (long long)na,
                     (long long)nb);
fail:
done:
  nsl_column_release(pa);
  nsl_column_release(pb);
  nsl_column_release(res);
  nsl_column_release(ov);
  b_rows_free(&b);
  free(act);
  return rc;
}

/* The checks a join starts with: outputs cleared, A's and B's (start, stop) pairs, and mask: NULL (unless
 * required) or a bool column of B's rows (named mask_name in the message). */
static nsl_status check_join(const char *what, nsl_column **rows, nsl_column **overlap, const nsl_column *a_start,
                             const nsl_column *a_stop, const nsl_column *b_start, const nsl_column *b_stop,
                             const nsl_column *mask, const char *mask_name, int required, nsl_error *err) {
  if (!rows || !overlap) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  *rows = *overlap = NULL;
  nsl_status rc;
  if ((rc = check_pair(what, "A", a_start, a_stop, err)) != NSL_OK ||
      (rc = check_pair(what, "B", b_start, b_stop, err)) != NSL_OK)
    return rc;
  if ((mask || required) && (!mask || mask->type != NSL_BOOL || mask->len != b_start->len))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the %s must be a bool column of %lld rows", what, mask_name,
                         (long long)b_start->len);
  return NSL_OK;
}

/* The sweep over all of B (nsl_overlap_join without the pruning below). */
static nsl_status overlap_join_all(const nsl_column *a_start, const nsl_column *a_stop,
                                   const nsl_column *const *a_keys, const nsl_column *b_start,
                                   const nsl_column *b_stop, const nsl_column *const *b_keys, int nkeys,
                                   const nsl_column *b_mask, nsl_column **rows, nsl_column **overlap,
                                   nsl_error *err) {
  const char *what = "overlap join";
  nsl_status rc = check_join(what, rows, overlap, a_start, a_stop, b_start, b_stop, b_mask, "mask", 0, err);
  if (rc != NSL_OK) return rc;
  int64_t na = a_start->len, nb = b_start->len;
  nsl_column *ga = NULL, *gb = NULL;
  if ((rc = key_groups(what, a_keys, na, b_keys, nb, nkeys, &ga, &gb, err)) != NSL_OK) return rc;
  rc = overlap_sweep(ga, a_start, a_stop, gb, b_start, b_stop, b_mask, rows, overlap, err);
  nsl_column_release(ga);
  nsl_column_release(gb);
  return rc;
}

/* A few A rows against a large B (a few hundred idle gaps against every CUDA
 * API call and NVTX range of a trace): only the B rows that overlap the
 * union of the A intervals can be any A row's answer (it needs an overlap
 * above 0), so B is cut to those first -- one pass with a binary search
 * each -- and the sweep groups and sorts those alone instead of all of B.
 * Row order is kept, so ties go to the same rows. */
typedef struct span_pair {
  int64_t s, e;
} span_pair;

static int cmp_span(const void *x, const void *y) {
  const span_pair *a = x, *b = y;
  return a->s < b->s ? -1 : a->s > b->s;
}

/* Rows [lo, hi) of b_rows_near_a's pass (nsl__run_rows): keep[j] = whether
 * B row j passes the mask and overlaps one of the m disjoint spans u,
 * ascending.  Each row's answer is searched from the previous row's (a
 * part starts from the first span): only where the search starts differs. */
typedef struct near_job {
  const nsl_column *b_start, *b_stop;
  const uint8_t *mk;
  const span_pair *u;
  int64_t m;
  uint8_t *k;
} near_job;

static void near_rows(void *p, int64_t first, int64_t last) {
  const near_job *job = p;
  const nsl_column *b_start = job->b_start, *b_stop = job->b_stop;
  const uint8_t *mk = job->mk;
  const span_pair *u = job->u;
  const int64_t m = job->m;
  uint8_t *k = job->k;
  int64_t at = 0;   /* the previous row's answer: rows in start order find theirs a step or two away */
  const int64_t *s64 = b_start->type == NSL_I64 && b_stop->type == NSL_I64 ? nsl_i64(b_start) : NULL;
  const int64_t *e64 = s64 ? nsl_i64(b_stop) : NULL;
  for (int64_t j = first; j < last; j++) {
    int64_t s, e;
    k[j] = 0;
    if (mk && !mk[j]) continue;
    if (s64) {   /* (I64 read straight, as the times mostly are) */
      s = s64[j];
      e = e64[j];
      if (s == NSL_NULL_I64 || e == NSL_NULL_I64) continue;
    } else if (!bounds(b_start, b_stop, j, &s, &e))
      continue;
    if (s >= e) continue;
    /* the first span that ends after s: in [lo, hi), found by galloping from at, then bisecting */
    int64_t lo, hi;
    if ((at == m || s < u[at].e) && (at == 0 || u[at - 1].e <= s)) {   /* the previous row's (as a rule) */
      k[j] = at < m && u[at].s < e;
      continue;
    }
    if (at < m && u[at].e <= s) {   /* forward */
      int64_t step = 1;
      lo = at + 1;
      while (lo + step <= m && u[lo + step - 1].e <= s) {
        lo += step;
        step *= 2;
      }
      hi = lo + step <= m ? lo + step : m;
    } else {   /* backward (or here) */
      int64_t step = 1;
      hi = at;
      while (hi - step >= 0 && u[hi - step].e > s) {
        hi -= step;
        step *= 2;
      }
      lo = hi - step >= 0 ? hi - step : 0;
    }
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (u[mid].e <= s) lo = mid + 1;
      else hi = mid;
    }
    at = lo;
    k[j] = lo < m && u[lo].s < e;
  }
}

/* The B rows that overlap some A interval and pass b_mask: a new I64
 * column of their row numbers, ascending; NULL when out of memory. */
static nsl_column *b_rows_near_a(const nsl_column *a_start, const nsl_column *a_stop, const nsl_column *b_start,
                                 const nsl_column *b_stop, const nsl_column *b_mask, nsl_error *err) {
  int64_t na = a_start->len, nb = b_start->len, nu = 0;
  span_pair *u = malloc((size_t)(na ? na : 1) * sizeof *u);
  nsl_column *keep = nsl_column_new(NSL_BOOL, nb, NULL), *sel = NULL;
  if (!u || !keep) goto nomem;
  for (int64_t i = 0; i < na; i++) {
    int64_t s, e;
    if (bounds(a_start, a_stop, i, &s, &e) && s < e) u[nu++] = (span_pair){s, e};
  }
  qsort(u, (size_t)nu, sizeof *u, cmp_span);
  int64_t m = 0;   /* merge into disjoint spans, ascending */
  for (int64_t i = 0; i < nu; i++) {
    if (m > 0 && u[i].s <= u[m - 1].e) {
      if (u[i].e > u[m - 1].e) u[m - 1].e = u[i].e;
    } else u[m++] = u[i];
  }
  near_job job = {b_start, b_stop, b_mask ? nsl_bool(b_mask) : NULL, u, m, nsl_bool(keep)};
  nsl__run_rows(nb, near_rows, &job);
  sel = nsl_mask_indices(keep, err);
  free(u);
  nsl_column_release(keep);
  return sel;
nomem:
  free(u);
  nsl_column_release(keep);
  nsl_error_set(err, NSL_ERR_NOMEM, "overlap join: out of memory (%lld and %lld rows)", (long long)na,
                (long long)nb);
  return NULL;
}

/* Whether the keys (0 to 16 per side, each as long as its side) and b_mask
 * (NULL, or a bool per B row) are what the pruned paths take; else the
 * sweep over all of B runs, and says what is wrong. */
static int well_formed(int64_t na, const nsl_column *const *a_keys, int64_t nb, const nsl_column *const *b_keys,
                       int nkeys, const nsl_column *b_mask) {
  if ((b_mask && (b_mask->type != NSL_BOOL || b_mask->len != nb)) || nkeys < 0 || nkeys > 16 ||
      (nkeys > 0 && (!a_keys || !b_keys)))
    return 0;
  for (int k = 0; k < nkeys; k++)
    if (!a_keys[k] || a_keys[k]->len != na || !b_keys[k] || b_keys[k]->len != nb) return 0;
  return 1;
}

/* At least eight A rows per B row: A is cut to the rows near B (join_near_b). */
static int many_a(int64_t na, int64_t nb) { return nb > 0 && na / 8 >= nb; }

/* Many A rows against a few B rows (every NVTX range of a trace against a
 * few thousand idle gaps): only the A rows that overlap the union of the
 * (usable) B intervals can match, so A is cut to those -- one pass with a
 * search each (b_rows_near_a) -- and only they are grouped, sorted and
 * joined.  *sel receives the rows of A kept (ascending), *r and *o the
 * sweep's answer for each of them. */
static nsl_status join_near_b(const nsl_column *a_start, const nsl_column *a_stop, const nsl_column *const *a_keys,
                              const nsl_column *b_start, const nsl_column *b_stop, const nsl_column *const *b_keys,
                              int nkeys, const nsl_column *b_mask, nsl_column **sel, nsl_column **r,
                              nsl_column **o, nsl_error *err) {
  nsl_column *bsel = NULL, *bs = NULL, *be = NULL, *sub[2 + 16] = {NULL};
  const nsl_column *sub_keys[16];
  nsl_status rc = NSL_OK;
  *sel = *r = *o = NULL;
  if (b_mask) {   /* the usable B rows' bounds, for the union */
    if (!(bsel = nsl_mask_indices(b_mask, err)) || !(bs = nsl_column_gather(b_start, bsel, err)) ||
        !(be = nsl_column_gather(b_stop, bsel, err)))
      goto fail;
  }
  if (!(*sel = b_rows_near_a(b_mask ? bs : b_start, b_mask ? be : b_stop, a_start, a_stop, NULL, err))) goto fail;
  if (!(sub[0] = nsl_column_gather(a_start, *sel, err)) || !(sub[1] = nsl_column_gather(a_stop, *sel, err)))
    goto fail;
  for (int k = 0; k < nkeys; k++) {
    if (!(sub[2 + k] = nsl_column_gather(a_keys[k], *sel, err))) goto fail;
    sub_keys[k] = sub[2 + k];
  }
  rc = overlap_join_all(sub[0], sub[1], nkeys ? sub_keys : NULL, b_start, b_stop, b_keys, nkeys, b_mask, r, o, err);
  goto done;
fail:
  rc = err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
  if (rc == NSL_ERR_NOMEM && err && err->code == NSL_OK)
    nsl_error_set(err, NSL_ERR_NOMEM, "overlap join: out of memory (%lld and %lld rows)", (long long)a_start->len,
                  (long long)b_start->len);
done:
  if (rc != NSL_OK) {
    nsl_column_release(*sel);
    *sel = NULL;
  }
  nsl_column_release(bsel);
  nsl_column_release(bs);
  nsl_column_release(be);
  for (int k = 0; k < 2 + nkeys; k++) nsl_column_release(sub[k]);
  return rc;
}

/* nsl_overlap_join by join_near_b: the A rows it leaves out get -1 and
 * overlap 0 (NULL where a bound is NULL), as the sweep gives them. */
static nsl_status overlap_join_large_a(const nsl_column *a_start, const nsl_column *a_stop,
                                       const nsl_column *const *a_keys, const nsl_column *b_start,
                                       const nsl_column *b_stop, const nsl_column *const *b_keys, int nkeys,
                                       const nsl_column *b_mask, nsl_column **rows, nsl_column **overlap,
                                       nsl_error *err) {
  int64_t na = a_start->len;
  nsl_column *sel, *r, *o, *res = NULL, *ov = NULL;
  nsl_status rc = join_near_b(a_start, a_stop, a_keys, b_start, b_stop, b_keys, nkeys, b_mask, &sel, &r, &o, err);
  if (rc != NSL_OK) return rc;
  res = nsl_column_new(NSL_I64, na, NULL);
  ov = nsl_column_new(NSL_I64, na, NULL);
  if (res && ov) {
    int64_t *ro = nsl_i64(res), *oo = nsl_i64(ov);
    for (int64_t i = 0; i < na; i++) {
      int64_t s, e;
      ro[i] = -1;
      oo[i] = bounds(a_start, a_stop, i, &s, &e) ? 0 : NSL_NULL_I64;
    }
    const int64_t *to = nsl_i64(sel), *rs = nsl_i64(r), *os = nsl_i64(o);
    for (int64_t q = 0; q < sel->len; q++) {
      ro[to[q]] = rs[q];
      oo[to[q]] = os[q];
    }
    *rows = res;
    *overlap = ov;
    res = ov = NULL;
  } else rc = nsl_error_set(err, NSL_ERR_NOMEM, "overlap join: out of memory (%lld rows)", (long long)na);
  nsl_column_release(sel);
  nsl_column_release(r);
  nsl_column_release(o);
  nsl_column_release(res);
  nsl_column_release(ov);
  return rc;
}

nsl_status nsl_overlap_join(const nsl_column *a_start, const nsl_column *a_stop,
                            const nsl_column *const *a_keys, const nsl_column *b_start,
                            const nsl_column *b_stop, const nsl_column *const *b_keys, int nkeys,
                            const nsl_column *b_mask, nsl_column **rows, nsl_column **overlap,
                            nsl_error *err) {
  nsl_status rc = check_join("overlap join", rows, overlap, a_start, a_stop, b_start, b_stop, b_mask, "mask", 0, err);
  if (rc != NSL_OK) return rc;
  int64_t na = a_start->len, nb = b_start->len;
  if (na == 0 || !well_formed(na, a_keys, nb, b_keys, nkeys, b_mask))   /* the sweep says what is wrong */
    return overlap_join_all(a_start, a_stop, a_keys, b_start, b_stop, b_keys, nkeys, b_mask, rows, overlap, err);
  if (many_a(na, nb))
    return overlap_join_large_a(a_start, a_stop, a_keys, b_start, b_stop, b_keys, nkeys, b_mask, rows, overlap, err);
  if (na > nb / 8)
    return overlap_join_all(a_start, a_stop, a_keys, b_start, b_stop, b_keys, nkeys, b_mask, rows, overlap, err);
  nsl_column *sel = b_rows_near_a(a_start, a_stop, b_start, b_stop, b_mask, err);
  if (!sel) return err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
  nsl_column *sub[2 + 16] = {NULL};
  const nsl_column *sub_keys[16];
  rc = NSL_OK;
  if (!(sub[0] = nsl_column_gather(b_start, sel, err)) || !(sub[1] = nsl_column_gather(b_stop, sel, err))) rc = NSL_ERR_NOMEM;
  for (int k = 0; rc == NSL_OK && k < nkeys; k++)
    if (!(sub[2 + k] = nsl_column_gather(b_keys[k], sel, err))) rc = NSL_ERR_NOMEM;
    else sub_keys[k] = sub[2 + k];
  if (rc == NSL_OK)
    rc = overlap_join_all(a_start, a_stop, a_keys, sub[0], sub[1], nkeys ? sub_keys : NULL, nkeys, NULL, rows,
                          overlap, err);
  else rc = err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
  if (rc == NSL_OK) {   /* rows of the cut B back to rows of B */
    int64_t *o = nsl_i64(*rows);
    const int64_t *to = nsl_i64(sel);
    for (int64_t i = 0; i < na; i++)
      if (o[i] >= 0) o[i] = to[o[i]];
  }
  for (int k = 0; k < 2 + nkeys; k++) nsl_column_release(sub[k]);
  nsl_column_release(sel);
  return rc;
}

/* See nsl.h. */
nsl_column *nsl_overlap_any(const nsl_column *a_start, const nsl_column *a_stop, const nsl_column *const *a_keys,
                            const nsl_column *b_start, const nsl_column *b_stop, const nsl_column *const *b_keys,
                            int nkeys, nsl_error *err) {
  if (check_pair("overlap join", "A", a_start, a_stop, err) != NSL_OK ||
      check_pair("overlap join", "B", b_start, b_stop, err) != NSL_OK)
    return NULL;
  int64_t na = a_start->len, nb = b_start->len;
  int near = many_a(na, nb) && well_formed(na, a_keys, nb, b_keys, nkeys, NULL);
  nsl_column *sel = NULL, *r = NULL, *o = NULL, *m = NULL;
  nsl_status rc = near ? join_near_b(a_start, a_stop, a_keys, b_start, b_stop, b_keys, nkeys, NULL, &sel, &r, &o, err)
                       : nsl_overlap_join(a_start, a_stop, a_keys, b_start, b_stop, b_keys, nkeys, NULL, &r, &o, err);
  if (rc == NSL_OK && !(m = nsl_column_new(NSL_BOOL, na, NULL)))
    nsl_error_set(err, NSL_ERR_NOMEM, "overlap join: out of memory (%lld rows)", (long long)na);
  if (m) {
    uint8_t *k = nsl_bool(m);
    const int64_t *rs = nsl_i64(r);
    if (sel) {
      const int64_t *to = nsl_i64(sel);
      for (int64_t q = 0; q < sel->len; q++) k[to[q]] = rs[q] >= 0;
    } else
      for (int64_t i = 0; i < na; i++) k[i] = rs[i] >= 0;
  }
  nsl_column_release(sel);
  nsl_column_release(r);
  nsl_column_release(o);
  return m;
}

/* ---- the innermost range over an interval ------------------------------------------ */

/* The segments of the innermost ranges (nsl_innermost_join): row of B,
 * start, stop, in the order the ties of the sweep go by. */
typedef struct segments {
  int64_t n;
  nsl_column *row, *s, *e;
} segments;

static void segments_free(segments *g) {
  nsl_column_release(g->row);
  nsl_column_release(g->s);
  nsl_column_release(g->e);
  memset(g, 0, sizeof *g);
}

static inline void segment_push(segments *g, int64_t row, int64_t s, int64_t e) {
  if (e <= s) return;   /* empty: a child at its parent's start, siblings that overlap, ... */
  nsl_i64(g->row)[g->n] = row;
  nsl_i64(g->s)[g->n] = s;
  nsl_i64(g->e)[g->n++] = e;
}

/* child[0..n): rows of one parent's children, in row order, sorted by (start, row): an insertion sort, as they
 * come in start order or nearly; a sort of (start, row) pairs when far from it (0: out of memory). */
typedef struct start_row {
  int64_t s, row;
} start_row;

static int cmp_start_row(const void *x, const void *y) {
  const start_row *a = x, *b = y;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  return a->row < b->row ? -1 : a->row > b->row;
}

static int sort_children(int64_t *child, int64_t n, const int64_t *start) {
  int64_t moves = 0, limit = 4 * n + 64;
  for (int64_t i = 1; i < n && moves <= limit; i++) {
    int64_t x = child[i], j = i;
    while (j > 0 && start[child[j - 1]] > start[x] && moves++ <= limit) {
      child[j] = child[j - 1];
      j--;
    }
    child[j] = x;
  }
  if (moves <= limit) return 1;
  start_row *p = malloc((size_t)n * sizeof *p);   /* far from start order: (start, row) is a total order */
  if (!p) return 0;
  for (int64_t i = 0; i < n; i++) p[i] = (start_row){start[child[i]], child[i]};
  qsort(p, (size_t)n, sizeof *p, cmp_start_row);
  for (int64_t i = 0; i < n; i++) child[i] = p[i].row;
  free(p);
  return 1;
}

/* The innermost segments of the ranges of B (nsl_innermost_join): each nesting range (nested[i], with both
 * bounds) less its children's time -- its parent the tightest enclosing nesting range on its thread
 * (nsl__nvtx_project) -- and every other range whole.  In the order: the pieces before each child, by
 * (parent, child start, child row), the piece after each parent's last child, by parent; then the ranges
 * without children and those that do not nest, by row.  Empty segments are left out. */
static nsl_status innermost_segments(const nsl_column *b_start, const nsl_column *b_stop,
                                     const nsl_column *const *thread, int nthread, const nsl_column *nested,
                                     segments *out, nsl_error *err) {
  const char *what = "innermost join";
  int64_t nb = b_start->len;
  memset(out, 0, sizeof *out);
  nsl_status rc = NSL_OK;
  nsl_column *nest = nsl_column_new(NSL_BOOL, nb, NULL);
  nsl__nvtx_projection pr = {0};
  int64_t *s = NULL, *e = NULL, *first = NULL, *child = NULL;
  uint8_t *ok = NULL;   /* both bounds */
  if (!nest || !(s = malloc((size_t)(nb ? nb : 1) * sizeof *s)) || !(e = malloc((size_t)(nb ? nb : 1) * sizeof *e)) ||
      !(ok = malloc((size_t)(nb ? nb : 1))))
    goto nomem;
  const uint8_t *nd = nsl_bool(nested);
  uint8_t *ns = nsl_bool(nest);
  for (int64_t i = 0; i < nb; i++) {
    int null_s, null_e;
    s[i] = nsl__int_at(b_start, i, &null_s);
    e[i] = nsl__int_at(b_stop, i, &null_e);
    ok[i] = !null_s && !null_e;
    ns[i] = nd[i] && !null_e;   /* (a NULL start takes no part in the parents, and makes no segment) */
  }
  nsl_column *none64 = nsl_column_new(NSL_I64, 0, NULL), *none32 = nsl_column_new(NSL_I32, 0, NULL);
  const nsl_column *api_keys[8] = {none32, none32, none32, none32, none32, none32, none32, none32};
  nsl__nvtx_input in = {nthread, thread, b_start, b_stop, nest, api_keys, none64, none64, none64, none64, none64, 1};
  rc = none64 && none32 ? nsl__nvtx_project(&in, &pr, err) : NSL_ERR_NOMEM;
  nsl_column_release(none64);
  nsl_column_release(none32);
  if (rc != NSL_OK) goto fail;
  /* children grouped by parent (first[p]..first[p + 1]), in row order, then by start */
  const int64_t *par = nsl_i64(pr.parent);
  if (!(first = calloc((size_t)nb + 1, sizeof *first))) goto nomem;
  int64_t nkids = 0;
  for (int64_t i = 0; i < nb; i++)
    if (ns[i] && par[i] >= 0) {
      first[par[i] + 1]++;
      nkids++;
    }
  for (int64_t p = 0; p < nb; p++) first[p + 1] += first[p];
  if (!(child = malloc((size_t)(nkids ? nkids : 1) * sizeof *child))) goto nomem;
  {
    int64_t *fill = malloc((size_t)(nb ? nb : 1) * sizeof *fill);
    if (!fill) goto nomem;
    memcpy(fill, first, (size_t)nb * sizeof *fill);
    for (int64_t i = 0; i < nb; i++)
      if (ns[i] && par[i] >= 0) child[fill[par[i]]++] = i;
    free(fill);
  }
  int64_t cap = nkids + nb;   /* a piece before each child, a tail per parent, the rest whole */
  out->row = nsl_column_new(NSL_I64, cap, NULL);
  out->s = nsl_column_new(NSL_I64, cap, NULL);
  out->e = nsl_column_new(NSL_I64, cap, NULL);
  if (!out->row || !out->s || !out->e) goto nomem;
  for (int64_t p = 0; p < nb; p++) {   /* before each child: from the parent's start or the previous child's stop */
    int64_t n = first[p + 1] - first[p];
    if (n == 0) continue;
    int64_t *c = child + first[p];
    if (!sort_children(c, n, s)) goto nomem;
    for (int64_t k = 0; k < n; k++) segment_push(out, p, k == 0 ? s[p] : e[c[k - 1]], s[c[k]]);
  }
  for (int64_t p = 0; p < nb; p++) {   /* after the last child: from the latest child stop */
    int64_t n = first[p + 1] - first[p];
    if (n == 0) continue;
    int64_t last = INT64_MIN;
    for (int64_t k = first[p]; k < first[p + 1]; k++)
      if (e[child[k]] > last) last = e[child[k]];
    segment_push(out, p, last, e[p]);
  }
  for (int64_t i = 0; i < nb; i++)   /* whole: nesting ranges without children, and the others */
    if (ok[i] && (ns[i] ? first[i + 1] == first[i] : 1)) segment_push(out, i, s[i], e[i]);
  nsl_column_set_len(out->row, out->n);
  nsl_column_set_len(out->s, out->n);
  nsl_column_set_len(out->e, out->n);
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory (%lld ranges)", what, (long long)nb);
fail:
  segments_free(out);
done:
  nsl_column_release(nest);
  nsl__nvtx_projection_free(&pr);
  free(s);
  free(e);
  free(ok);
  free(first);
  free(child);
  return rc;
}

/* See nsl.h. */
nsl_status nsl_innermost_join(const nsl_column *a_start, const nsl_column *a_stop, const nsl_column *const *a_keys,
                              const nsl_column *b_start, const nsl_column *b_stop, const nsl_column *const *b_keys,
                              int nkeys, const nsl_column *const *b_thread, int nthread, const nsl_column *b_nested,
                              nsl_column **rows, nsl_column **overlap, nsl_error *err) {
  const char *what = "innermost join";
  nsl_status rc = check_join(what, rows, overlap, a_start, a_stop, b_start, b_stop, b_nested, "nesting mask", 1, err);
  if (rc != NSL_OK) return rc;
  int64_t na = a_start->len, nb = b_start->len;
  if (nthread < 1 || nthread > 8 || !b_thread)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: need 1 to 8 thread key columns", what);
  for (int k = 0; k < nthread; k++)
    if (!int_col(b_thread[k]) || b_thread[k]->len != nb)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: thread key %d must be an integer column of %lld rows", what,
                           k + 1, (long long)nb);
  if (nb > INT32_MAX)
    return nsl_error_set(err, NSL_ERR_LIMIT, "%s: %lld ranges, at most 2^31 - 1", what, (long long)nb);
  nsl_column *ga = NULL, *gb = NULL, *sg = NULL, *r = NULL;
  segments seg = {0};
  if ((rc = key_groups(what, a_keys, na, b_keys, nb, nkeys, &ga, &gb, err)) != NSL_OK) return rc;
  if ((rc = innermost_segments(b_start, b_stop, b_thread, nthread, b_nested, &seg, err)) != NSL_OK) goto done;
  if (!(sg = nsl_column_gather(gb, seg.row, err))) {   /* each segment on its range's thread */
    rc = err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
    goto done;
  }
  if ((rc = overlap_sweep(ga, a_start, a_stop, sg, seg.s, seg.e, NULL, &r, overlap, err)) != NSL_OK) goto done;
  int64_t *o = nsl_i64(r);   /* segments back to their ranges */
  const int64_t *to = nsl_i64(seg.row);
  for (int64_t i = 0; i < na; i++)
    if (o[i] >= 0) o[i] = to[o[i]];
  *rows = r;
  r = NULL;
done:
  nsl_column_release(ga);
  nsl_column_release(gb);
  nsl_column_release(sg);
  nsl_column_release(r);
  segments_free(&seg);
  return rc;
}

/* ---- open intervals at points ---------------------------------------------------- */

nsl_column *nsl_iv_count_open(const nsl_column *points, const nsl_column *const *point_keys,
                              const nsl_column *start, const nsl_column *stop,
                              const nsl_column *const *iv_keys, int nkeys, nsl_error *err) {
  const char *what = "open-interval count";
  if (!int_col(points)) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: the points must be an integer (ns) column", what);
    return NULL;
  }
  if (check_pair(what, "the intervals'", start, stop, err) != NSL_OK) return NULL;
  int64_t np = points->len, ni = start->len;
  nsl_column *gp = NULL, *gi = NULL, *res = NULL;
  int64_t *off = NULL, ngroups = 0;
  uint64_t *S = NULL, *E = NULL, *tmp = NULL;
  if (key_groups(what, point_keys, np, iv_keys, ni, nkeys, &gp, &gi, err) != NSL_OK) return NULL;
  const int64_t *gpv = nsl_i64(gp), *giv = nsl_i64(gi);
  for (int64_t j = 0; j < ni; j++)
    if (giv[j] + 1 > ngroups) ngroups = giv[j] + 1;
  res = nsl_column_new(NSL_I64, np, NULL);
  off = calloc((size_t)ngroups + 2, sizeof *off);
  S = malloc((size_t)(ni ? ni : 1) * sizeof *S);
  E = malloc((size_t)(ni ? ni : 1) * sizeof *E);
  tmp = malloc((size_t)(ni ? ni : 1) * sizeof *tmp);
  if (!res || !off || !S || !E || !tmp) goto nomem;
  /* counting sort of the non-empty intervals by group, then each group's
   * starts and stops sorted on their own */
  for (int64_t j = 0; j < ni; j++) {
    int64_t s, e;
    if (giv[j] >= 0 && bounds(start, stop, j, &s, &e) && s < e) off[giv[j] + 2]++;
  }
  for (int64_t g = 0; g < ngroups; g++) off[g + 2] += off[g + 1];
  for (int64_t j = 0; j < ni; j++) {
    int64_t s, e;
    if (giv[j] < 0 || !bounds(start, stop, j, &s, &e) || s >= e) continue;
    int64_t at = off[giv[j] + 1]++;
    S[at] = nsl__ocode_i64(s);
    E[at] = nsl__ocode_i64(e);
  }
  /* now off[g] .. off[g + 1] is group g */
  for (int64_t g = 0; g < ngroups; g++) {
    nsl__sort_u64(S + off[g], off[g + 1] - off[g], tmp);
    nsl__sort_u64(E + off[g], off[g + 1] - off[g], tmp);
  }
  int64_t *o = nsl_i64(res);
  for (int64_t i = 0; i < np; i++) {
    int isnull;
    int64_t t = nsl__int_at(points, i, &isnull), g = gpv[i];
    if (isnull) {
      o[i] = NSL_NULL_I64;
      continue;
    }
    if (g < 0) {
      o[i] = 0;
      continue;
    }
    /* open at t: start < t < stop = #(start < t) - #(stop <= t), as stop <= t implies start < t */
    int64_t n = off[g + 1] - off[g];
    uint64_t c = nsl__ocode_i64(t);
    o[i] = nsl__bound_u64(S + off[g], n, c, 0) - nsl__bound_u64(E + off[g], n, c, 1);
  }
  goto done;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory (%lld points, %lld intervals)", what, (long long)np,
                (long long)ni);
  nsl_column_release(res);
  res = NULL;
done:
  nsl_column_release(gp);
  nsl_column_release(gi);
  free(off);
  free(S);
  free(E);
  free(tmp);
  return res;
}

/* ---- gaps per group -------------------------------------------------------------- */

/* One range of the grouped gaps' sweep (whole groups of the order,
 * nsl__order_split): its gaps written from place from[k] of the outputs,
 * their number into found[k]; the sums of its own groups. */
typedef struct gaps_job {
  const nsl_column *start, *stop;
  const int64_t *go;
  const uint8_t *mk;
  int64_t min_len;
  const nsl__order *ord;
  const int64_t *from;
  int64_t *found;
  int64_t *g, *gs, *ge, *gr, *gb;               /* outputs (gr, gb: NULL when not asked) */
  int64_t *idle, *nbig, *bigtime, *largest;     /* sums (NULL when not asked) */
  const nsl_column *launch;                     /* nsl_iv_gap_hosts: when each row was launched */
  int64_t *host;                                /* nsl_iv_gap_hosts: the host parts' sums (NULL: not that) */
} gaps_job;

/* The row that ends a gap: the first in (group, start) order of group g starting at s, its place at most q
 * (the stable sort puts the lowest row first). */
static inline int64_t first_starting(const nsl__order *ord, const int64_t *go, const nsl_column *start, int64_t q,
                                     int64_t g, int64_t s) {
  for (int isnull; q > 0; q--) {
    int64_t i = nsl__order_row(ord, q - 1);
    if (go[i] != g || nsl__int_at(start, i, &isnull) != s || isnull) break;
  }
  return nsl__order_row(ord, q);
}

static void gaps_range(void *p, int k) {
  const gaps_job *j = p;
  const nsl_column *start = j->start, *stop = j->stop;
  const nsl__order *ord = j->ord;
  const int64_t *go = j->go;
  const uint8_t *mk = j->mk;
  int64_t *idle = j->idle, *nbig = j->nbig, *bigtime = j->bigtime, *largest = j->largest;
  int64_t q0 = j->from[k], q1 = j->from[k + 1], m = q0;
#define ROW_AT(q) nsl__order_row(ord, q)
  /* ce: the latest stop of the group's rows so far; ce_row: the lowest of those rows stopping then (every
   * row stopping at a gap's start starts before it, so is swept before it: the row a join on group and stop
   * finds) */
  int64_t cur = -1, ce = 0, ce_row = -1;
  for (int64_t q = q0; q < q1; q++) {
    int64_t i = ROW_AT(q), s, e;
    if (go[i] < 0 || (mk && !mk[i]) || !bounds(start, stop, i, &s, &e) || s >= e) continue;
    if (go[i] != cur) {
      cur = go[i];
      ce = e;
      ce_row = i;
      continue;
    }
    if (s > ce) {
      int64_t d = span(ce, s);
      if (idle) {   /* (sums as the columns' arithmetic makes them: wrapping) */
        idle[cur] = (int64_t)((uint64_t)idle[cur] + (uint64_t)d);
        if (d > largest[cur]) largest[cur] = d;
      }
      if (j->host) {   /* the gap's host part: up to when the row that ends it was launched (none: NULL) */
        int64_t at = first_starting(ord, go, start, q, cur, s), hp = 0;
        int nul;
        int64_t launched = nsl__int_at(j->launch, at, &nul);
        if (!nul) {   /* (as the columns' arithmetic makes it: wrapping) */
          int64_t early = (int64_t)((uint64_t)launched - (uint64_t)ce);
          hp = early < 0 ? 0 : early < d ? early : d;
        }
        j->host[cur] = (int64_t)((uint64_t)j->host[cur] + (uint64_t)hp);
        if (hp > 0) {
          j->g[m] = cur;
          j->gs[m] = ce;
          j->ge[m] = ce + hp;
          j->gr[m] = at;
          m++;
        }
      } else if (d > j->min_len) {
        if (nbig) {
          nbig[cur]++;
          bigtime[cur] = (int64_t)((uint64_t)bigtime[cur] + (uint64_t)d);
        }
        j->g[m] = cur;
        j->gs[m] = ce;
        j->ge[m] = s;
        if (j->gr) j->gr[m] = first_starting(ord, go, start, q, cur, s);
        if (j->gb) j->gb[m] = ce_row;
        m++;
      }
    }
    if (e > ce || (e == ce && i < ce_row)) {
      ce = e;
      ce_row = i;
    }
  }
#undef ROW_AT
  j->found[k] = m - q0;
}

/* The grouped gaps' sweep: the gaps longer than min_len into group, gap_start,
 * gap_stop (and gap_row, gap_before when not NULL: the row that ends each
 * gap, the row that begins it); with sums (four I64 columns of ngroups
 * rows, zero-filled) also each group's idle time, count of gaps longer than
 * min_len, their time and its largest gap, over every gap. */
static nsl_status gaps_sweep(const char *what, const nsl_column *start, const nsl_column *stop,
                             const nsl_column *group_of, int64_t ngroups, const nsl_column *mask, int64_t min_len,
                             nsl_column **group, nsl_column **gap_start, nsl_column **gap_stop,
                             nsl_column **gap_row, nsl_column **gap_before, nsl_column *const *sums,
                             const nsl_column *launch, nsl_column *host, nsl_error *err) {
  if (!group || !gap_start || !gap_stop) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  *group = *gap_start = *gap_stop = NULL;
  if (gap_row) *gap_row = NULL;
  if (gap_before) *gap_before = NULL;
  nsl_status rc = check_pair(what, "the intervals'", start, stop, err);
  if (rc != NSL_OK) return rc;
  int64_t n = start->len;
  if (!group_of || group_of->type != NSL_I64 || group_of->len != n || ngroups < 0)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: group ids must be an i64 column of %lld rows", what, (long long)n);
  if (mask && (mask->type != NSL_BOOL || mask->len != n))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the mask must be a bool column of %lld rows", what, (long long)n);
  const int64_t *go = nsl_i64(group_of);
  for (int64_t i = 0; i < n; i++)
    if (go[i] >= ngroups)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: row %lld is in group %lld of %lld", what, (long long)i,
                           (long long)go[i], (long long)ngroups);
  nsl__order ord;   /* the rows in (group, start, row) order */
  if ((rc = nsl__order_by_group_start(group_of, start, 1, &ord, err)) != NSL_OK) return rc;
  nsl_column *g = nsl_column_new(NSL_I64, 0, NULL), *gs = nsl_column_new(NSL_I64, 0, NULL),
             *ge = nsl_column_new(NSL_I64, 0, NULL), *gr = gap_row ? nsl_column_new(NSL_I64, 0, NULL) : NULL,
             *gb = gap_before ? nsl_column_new(NSL_I64, 0, NULL) : NULL;
  if (!g || !gs || !ge || (gap_row && !gr) || (gap_before && !gb) || nsl_column_reserve(g, n, NULL) != NSL_OK ||
      nsl_column_reserve(gs, n, NULL) != NSL_OK || nsl_column_reserve(ge, n, NULL) != NSL_OK ||
      (gr && nsl_column_reserve(gr, n, NULL) != NSL_OK) || (gb && nsl_column_reserve(gb, n, NULL) != NSL_OK)) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
    nsl_column_release(g);
    nsl_column_release(gs);
    nsl_column_release(ge);
    nsl_column_release(gr);
    nsl_column_release(gb);
    nsl__order_free(&ord);
    return rc;
  }
  /* the groups in ranges of the order, one per thread: range k writes its gaps from place from[k] of the
   * outputs (a range of m places has fewer than m gaps), moved together after */
  int64_t from[NSL__SPLIT_MAX + 1], found[NSL__SPLIT_MAX];
  int parts = nsl__order_split(&ord, group_of, from);
  gaps_job job = {start, stop, go, mask ? nsl_bool(mask) : NULL, min_len, &ord, from, found,
                  nsl_i64(g), nsl_i64(gs), nsl_i64(ge), gr ? nsl_i64(gr) : NULL, gb ? nsl_i64(gb) : NULL,
                  sums ? nsl_i64(sums[0]) : NULL, sums ? nsl_i64(sums[1]) : NULL, sums ? nsl_i64(sums[2]) : NULL,
                  sums ? nsl_i64(sums[3]) : NULL, launch, host ? nsl_i64(host) : NULL};
  nsl__run_parallel(parts, parts, gaps_range, &job);
  int64_t m = 0;
  for (int k = 0; k < parts; k++) {
    if (from[k] != m) {
      nsl_column *outs[5] = {g, gs, ge, gr, gb};
      for (int c = 0; c < 5; c++)
        if (outs[c]) memmove(nsl_i64(outs[c]) + m, nsl_i64(outs[c]) + from[k], (size_t)found[k] * sizeof(int64_t));
    }
    m += found[k];
  }
  nsl__order_free(&ord);
  nsl_column_set_len(g, m);
  nsl_column_set_len(gs, m);
  nsl_column_set_len(ge, m);
  if (gr) nsl_column_set_len(gr, m);
  if (gb) nsl_column_set_len(gb, m);
  *group = g;
  *gap_start = gs;
  *gap_stop = ge;
  if (gap_row) *gap_row = gr;
  if (gap_before) *gap_before = gb;
  return NSL_OK;
}

nsl_status nsl_iv_gaps_grouped(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                               int64_t ngroups, const nsl_column *mask, int64_t min_len, nsl_column **group,
                               nsl_column **gap_start, nsl_column **gap_stop, nsl_column **gap_row,
                               nsl_error *err) {
  return gaps_sweep("grouped gaps", start, stop, group_of, ngroups, mask, min_len, group, gap_start, gap_stop,
                    gap_row, NULL, NULL, NULL, NULL, err);
}

nsl_status nsl_iv_gap_sums(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                           int64_t ngroups, int64_t min_len, nsl_column *sums[4], nsl_column **group,
                           nsl_column **gap_start, nsl_column **gap_stop, nsl_column **gap_before,
                           nsl_column **gap_after, nsl_error *err) {
  const char *what = "gap sums";
  if (!sums) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  for (int k = 0; k < 4; k++) sums[k] = NULL;
  if (ngroups < 0) return nsl_error_set(err, NSL_ERR_ARG, "%s: %lld groups", what, (long long)ngroups);
  for (int k = 0; k < 4; k++)
    if (!(sums[k] = nsl_column_new(NSL_I64, ngroups, NULL))) {
      for (int j = 0; j < k; j++) {
        nsl_column_release(sums[j]);
        sums[j] = NULL;
      }
      return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld groups", what, (long long)ngroups);
    }
  nsl_status rc = gaps_sweep(what, start, stop, group_of, ngroups, NULL, min_len, group, gap_start, gap_stop,
                             gap_after, gap_before, sums, NULL, NULL, err);
  if (rc != NSL_OK)
    for (int k = 0; k < 4; k++) {
      nsl_column_release(sums[k]);
      sums[k] = NULL;
    }
  return rc;
}

nsl_status nsl_iv_gap_hosts(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                            int64_t ngroups, const nsl_column *launch, nsl_column **idle, nsl_column **host,
                            nsl_column **group, nsl_column **gap_start, nsl_column **host_stop,
                            nsl_column **gap_row, nsl_error *err) {
  const char *what = "gap host parts";
  if (!idle || !host || !gap_row) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  *idle = *host = *gap_row = NULL;
  if (ngroups < 0) return nsl_error_set(err, NSL_ERR_ARG, "%s: %lld groups", what, (long long)ngroups);
  nsl_status rc = check_pair(what, "the intervals'", start, stop, err);
  if (rc != NSL_OK) return rc;
  if (!launch || (launch->type != NSL_I64 && launch->type != NSL_I32) || launch->len != start->len)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the launch times must be an integer column of %lld rows", what,
                         (long long)start->len);
  nsl_column *sums[4] = {NULL, NULL, NULL, NULL}, *h = nsl_column_new(NSL_I64, ngroups, NULL);
  int oom = !h;
  for (int k = 0; k < 4; k++) oom |= !(sums[k] = nsl_column_new(NSL_I64, ngroups, NULL));
  rc = oom ? nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld groups", what, (long long)ngroups)
           : gaps_sweep(what, start, stop, group_of, ngroups, NULL, 0, group, gap_start, host_stop, gap_row, NULL, sums,
                        launch, h, err);
  if (rc == NSL_OK) {
    *idle = sums[0];
    *host = h;
    sums[0] = h = NULL;
  }
  for (int k = 0; k < 4; k++) nsl_column_release(sums[k]);
  nsl_column_release(h);
  return rc;
}
