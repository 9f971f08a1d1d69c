/* intervals.c -- interval algebra over half-open [start, stop) int64 ns:
 * union of unsorted intervals (radix sort by start, then one sweep), per
 * group busy time (each group's rows by start, nsl__order_by_group_start,
 * then one sweep), intersection, difference, gaps, and coverage of
 * intervals by a set.  Sets (nsl_intervals) are sorted and disjoint; the
 * set operations check that and say so when an input is not. */
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"

static int int_col(const nsl_column *c) { return c && (c->type == NSL_I64 || c->type == NSL_I32); }

/* Start and stop of row i; 0 when either is NULL. */
static inline int row_interval(const nsl_column *start, const nsl_column *stop, int64_t i, int64_t *s,
                               int64_t *e) {
  int ns, ne;
  *s = nsl__int_at(start, i, &ns);
  *e = nsl__int_at(stop, i, &ne);
  return !ns && !ne;
}

static nsl_status check_rows(const char *what, const nsl_column *start, const nsl_column *stop,
                             const nsl_column *mask, nsl_error *err) {
  if (!int_col(start) || !int_col(stop))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: start and stop must be integer (ns) columns", what);
  if (start->len != stop->len)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: %lld starts but %lld stops", what, (long long)start->len,
                         (long long)stop->len);
  if (mask && (mask->type != NSL_BOOL || mask->len != start->len))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the mask must be a bool column of %lld rows", what,
                         (long long)start->len);
  return NSL_OK;
}

/* Checks that a is sorted and disjoint. */
static nsl_status check_set(const char *what, const nsl_intervals *a, nsl_error *err) {
  if (!a || a->n < 0 || (a->n > 0 && (!a->start || !a->stop)))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: missing interval set", what);
  for (int64_t i = 0; i < a->n; i++) {
    if (a->start[i] > a->stop[i])
      return nsl_error_set(err, NSL_ERR_ARG, "%s: interval %lld ends (%lld) before it starts (%lld)", what,
                           (long long)i, (long long)a->stop[i], (long long)a->start[i]);
    if (i > 0 && a->start[i] < a->stop[i - 1])
      return nsl_error_set(err, NSL_ERR_ARG,
                           "%s: intervals %lld and %lld overlap or are not sorted "
                           "(make a set with nsl_iv_union)",
                           what, (long long)i - 1, (long long)i);
  }
  return NSL_OK;
}

/* An empty set with room for cap intervals. */
static nsl_status set_alloc(nsl_intervals *out, int64_t cap, const char *what, nsl_error *err) {
  out->n = 0;
  out->start = malloc((size_t)(cap ? cap : 1) * sizeof *out->start);
  out->stop = malloc((size_t)(cap ? cap : 1) * sizeof *out->stop);
  if (!out->start || !out->stop) {
    nsl_iv_free(out);
    return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld intervals", what, (long long)cap);
  }
  return NSL_OK;
}

static inline void set_push(nsl_intervals *out, int64_t s, int64_t e) {
  if (s >= e) return;
  out->start[out->n] = s;
  out->stop[out->n] = e;
  out->n++;
}

void nsl_iv_free(nsl_intervals *a) {
  if (!a) return;
  free(a->start);
  free(a->stop);
  a->start = a->stop = NULL;
  a->n = 0;
}

int64_t nsl_iv_total(const nsl_intervals *a) {
  int64_t t = 0;
  if (!a || !a->start || !a->stop) return 0;
  for (int64_t i = 0; i < a->n; i++) t += a->stop[i] - a->start[i];
  return t;
}

/* ---- union ---------------------------------------------------------------------- */

/* The union of the m intervals r[0..m) (k: start, v: stop) in start order:
 * merged in place, then copied into out. */
static nsl_status union_sorted(nsl__kv *r, int64_t m, nsl_intervals *out, nsl_error *err) {
  int64_t k = 0;   /* merge in place into r */
  for (int64_t i = 0; i < m; i++) {
    int64_t s = (int64_t)r[i].k, e = r[i].v;
    if (k > 0 && s <= r[k - 1].v) {
      if (e > r[k - 1].v) r[k - 1].v = e;
    } else r[k++] = (nsl__kv){(uint64_t)s, e};
  }
  nsl_status rc = set_alloc(out, k, "interval union", err);
  if (rc == NSL_OK) {
    for (int64_t i = 0; i < k; i++) {
      out->start[i] = (int64_t)r[i].k;
      out->stop[i] = r[i].v;
    }
    out->n = k;
  }
  return rc;
}

/* The union of the intervals of the rows order lists (all rows in row
 * order when order is NULL), sorted by start first unless they come in
 * start order. */
static nsl_status union_rows(const nsl_column *start, const nsl_column *stop, const nsl_column *mask,
                             const nsl_column *order, nsl_intervals *out, nsl_error *err) {
  memset(out, 0, sizeof *out);
  nsl_status rc = check_rows("interval union", start, stop, mask, err);
  if (rc != NSL_OK) return rc;
  int64_t n = start->len, nq = order ? order->len : n, m = 0, lo = INT64_MAX, hi = INT64_MIN;
  if (order && order->type != NSL_I64)
    return nsl_error_set(err, NSL_ERR_ARG, "interval union: the order must be an i64 column of rows");
  const int64_t *ord = order ? nsl_i64(order) : NULL;
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  nsl__kv *a = nsl__big_alloc((size_t)(nq ? nq : 1) * sizeof *a), *tmp = NULL;
  if (!a)
    return nsl_error_set(err, NSL_ERR_NOMEM, "interval union: out of memory for %lld rows", (long long)nq);
  int sorted = 1;
  for (int64_t q = 0; q < nq; q++) {   /* the non-empty intervals, as (start, stop) */
    int64_t i = ord ? ord[q] : q, s, e;
    if (i < 0 || i >= n) {
      nsl__big_free(a);
      return nsl_error_set(err, NSL_ERR_ARG, "interval union: the order names row %lld of %lld", (long long)i,
                           (long long)n);
    }
    if ((mk && !mk[i]) || !row_interval(start, stop, i, &s, &e) || s >= e) continue;
    if (m > 0 && s < (int64_t)a[m - 1].k) sorted = 0;
    if (s < lo) lo = s;
    if (s > hi) hi = s;
    a[m++] = (nsl__kv){(uint64_t)s, e};
  }
  nsl__kv *r = a;
  if (!sorted) {
    if (!(tmp = nsl__big_alloc((size_t)m * sizeof *tmp))) {
      nsl__big_free(a);
      return nsl_error_set(err, NSL_ERR_NOMEM, "interval union: out of memory for %lld rows", (long long)m);
    }
    for (int64_t i = 0; i < m; i++) a[i].k -= (uint64_t)lo;   /* offsets from the least start */
    r = nsl__radix_kv(a, tmp, m, nsl__bitwidth((uint64_t)hi - (uint64_t)lo));
    for (int64_t i = 0; i < m; i++) r[i].k += (uint64_t)lo;
  }
  rc = union_sorted(r, m, out, err);
  nsl__big_free(a);
  nsl__big_free(tmp);
  return rc;
}

nsl_status nsl_iv_union(const nsl_column *start, const nsl_column *stop, const nsl_column *mask,
                        nsl_intervals *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "interval union: no output");
  return union_rows(start, stop, mask, NULL, out, err);
}

nsl_status nsl_iv_union_ordered(const nsl_column *start, const nsl_column *stop, const nsl_column *mask,
                                const nsl_column *order, nsl_intervals *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "interval union: no output");
  if (!order) return nsl_error_set(err, NSL_ERR_ARG, "interval union: no order");
  return union_rows(start, stop, mask, order, out, err);
}

nsl_column *nsl_iv_union_grouped(const nsl_column *start, const nsl_column *stop,
                                 const nsl_column *group_of, int64_t ngroups, const nsl_column *mask,
                                 nsl_error *err) {
  const char *what = "grouped interval union";
  if (check_rows(what, start, stop, mask, err) != NSL_OK) return NULL;
  if (!group_of || group_of->type != NSL_I64 || group_of->len != start->len || ngroups < 0) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: group ids must be an i64 column of %lld rows", what,
                  (long long)start->len);
    return NULL;
  }
  int64_t n = start->len;
  const int64_t *go = nsl_i64(group_of);
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  for (int64_t i = 0; i < n; i++)
    if (go[i] >= ngroups) {
      nsl_error_set(err, NSL_ERR_ARG, "%s: row %lld is in group %lld of %lld", what, (long long)i,
                    (long long)go[i], (long long)ngroups);
      return NULL;
    }
  nsl_column *res = nsl_column_new(NSL_I64, ngroups, NULL);
  nsl__order ord;   /* each group's rows by start, then one sweep */
  if (!res) {
    nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld groups", what, (long long)ngroups);
    return NULL;
  }
  if (nsl__order_by_group_start(group_of, start, 1, &ord, err) != NSL_OK) {
    nsl_column_release(res);
    return NULL;
  }
  int64_t *busy = nsl_i64(res), cur = -1, cs = 0, ce = 0;
  for (int64_t q = 0; q < ord.n; q++) {
    int64_t i = nsl__order_row(&ord, q), g = go[i], s, e;
    if (g < 0 || (mk && !mk[i]) || !row_interval(start, stop, i, &s, &e) || s >= e) continue;
    if (g != cur || s > ce) {
      if (cur >= 0) busy[cur] += ce - cs;
      cur = g;
      cs = s;
      ce = e;
    } else if (e > ce)
      ce = e;
  }
  if (cur >= 0) busy[cur] += ce - cs;
  nsl__order_free(&ord);
  return res;
}

/* ---- set operations ------------------------------------------------------------- */

nsl_status nsl_iv_intersect(const nsl_intervals *a, const nsl_intervals *b, nsl_intervals *out,
                            nsl_error *err) {
  const char *what = "interval intersection";
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  memset(out, 0, sizeof *out);
  nsl_status rc;
  if ((rc = check_set(what, a, err)) != NSL_OK || (rc = check_set(what, b, err)) != NSL_OK) return rc;
  if ((rc = set_alloc(out, a->n + b->n, what, err)) != NSL_OK) return rc;
  int64_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    int64_t s = a->start[i] > b->start[j] ? a->start[i] : b->start[j];
    int64_t e = a->stop[i] < b->stop[j] ? a->stop[i] : b->stop[j];
    set_push(out, s, e);
    if (a->stop[i] < b->stop[j]) i++;
    else j++;
  }
  return NSL_OK;
}

nsl_status nsl_iv_subtract(const nsl_intervals *a, const nsl_intervals *b, nsl_intervals *out,
                           nsl_error *err) {
  const char *what = "interval difference";
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  memset(out, 0, sizeof *out);
  nsl_status rc;
  if ((rc = check_set(what, a, err)) != NSL_OK || (rc = check_set(what, b, err)) != NSL_OK) return rc;
  if ((rc = set_alloc(out, a->n + b->n, what, err)) != NSL_OK) return rc;
  int64_t j = 0;
  for (int64_t i = 0; i < a->n; i++) {
    int64_t s = a->start[i], e = a->stop[i], cur = s;
    while (j < b->n && b->stop[j] <= s) j++;   /* b ends before this a: done with it */
    for (int64_t k = j; k < b->n && b->start[k] < e && cur < e; k++) {
      if (b->start[k] > cur) set_push(out, cur, b->start[k]);
      if (b->stop[k] > cur) cur = b->stop[k];
    }
    set_push(out, cur, e);
  }
  return NSL_OK;
}

nsl_status nsl_iv_gaps(const nsl_intervals *a, int64_t lo, int64_t hi, nsl_intervals *out, nsl_error *err) {
  const char *what = "interval gaps";
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  memset(out, 0, sizeof *out);
  nsl_status rc = check_set(what, a, err);
  if (rc != NSL_OK) return rc;
  if (lo == NSL_NULL_I64) lo = a->n ? a->start[0] : 0;
  if (hi == NSL_NULL_I64) hi = a->n ? a->stop[a->n - 1] : 0;
  int64_t s = lo, e = hi;
  nsl_intervals whole = {lo < hi ? 1 : 0, &s, &e};
  return nsl_iv_subtract(&whole, a, out, err);
}

/* ---- coverage ------------------------------------------------------------------- */

/* Index of the first interval of b with start >= t, searched outward from
 * hint (cheap when the queries come in order). */
static int64_t first_start_at_or_after(const nsl_intervals *b, int64_t t, int64_t hint) {
  int64_t lo, hi;   /* answer in [lo, hi] */
  if (hint > b->n) hint = b->n;
  if (hint < b->n && b->start[hint] < t) {   /* gallop right */
    int64_t step = 1;
    lo = hint + 1;
    hi = hint + step;
    while (hi < b->n && b->start[hi] < t) {
      lo = hi + 1;
      step *= 2;
      hi = hint + step;
    }
    if (hi > b->n) hi = b->n;
  } else {   /* gallop left */
    int64_t step = 1;
    hi = hint;
    lo = hint - step;
    while (lo > 0 && b->start[lo] >= t) {
      hi = lo;
      step *= 2;
      lo = hint - step;
    }
    if (lo < 0) lo = 0;
  }
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (b->start[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

nsl_column *nsl_iv_coverage(const nsl_column *start, const nsl_column *stop, const nsl_intervals *b,
                            nsl_error *err) {
  const char *what = "interval coverage";
  if (check_rows(what, start, stop, NULL, err) != NSL_OK || check_set(what, b, err) != NSL_OK) return NULL;
  int64_t n = start->len;
  nsl_column *res = nsl_column_new(NSL_I64, n, NULL);
  int64_t *pre = malloc((size_t)(b->n + 1) * sizeof *pre);   /* covered length before interval j */
  if (!res || !pre) {
    nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
    nsl_column_release(res);
    free(pre);
    return NULL;
  }
  pre[0] = 0;
  for (int64_t j = 0; j < b->n; j++) pre[j + 1] = pre[j] + (b->stop[j] - b->start[j]);
  int64_t *o = nsl_i64(res), hs = 0, he = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t s, e;
    if (!row_interval(start, stop, i, &s, &e)) {
      o[i] = NSL_NULL_I64;
      continue;
    }
    if (s >= e || b->n == 0) {
      o[i] = 0;
      continue;
    }
    /* covered(t): length of b before t */
    int64_t cov[2], t[2] = {s, e}, *hint[2] = {&hs, &he};
    for (int q = 0; q < 2; q++) {
      int64_t j = first_start_at_or_after(b, t[q], *hint[q]);
      *hint[q] = j;
      if (j == 0) cov[q] = 0;
      else {
        int64_t end = b->stop[j - 1] < t[q] ? b->stop[j - 1] : t[q];
        cov[q] = pre[j - 1] + (end - b->start[j - 1]);
      }
    }
    o[i] = cov[1] - cov[0];
  }
  free(pre);
  return res;
}
