/* binning.c -- kernels behind figures: equal time bins in exact integer
 * ns, busy time per (group, bin) for utilisation heatmaps, a nesting depth
 * per row so overlapping ranges of one thread get their own sub-rows, and
 * the merging of spans that share a lane into one rectangle each when they
 * are too small to tell apart (the level of detail of a timeline). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"

static int int_col(const nsl_column *c) { return c && (c->type == NSL_I64 || c->type == NSL_I32); }
static int num_col(const nsl_column *c) { return c && (int_col(c) || c->type == NSL_F64); }

__extension__ typedef __int128 i128;

/* Edge b of nbins equal bins over [lo, lo + span): lo + floor(span * b / nbins). */
static inline int64_t edge_at(int64_t lo, int64_t span, int64_t nbins, int64_t b) {
  i128 p = (i128)span * b;
  return lo + (int64_t)(p / nbins);
}

/* The bin holding v (lo <= v < lo + span). */
static inline int64_t bin_of(int64_t lo, int64_t span, int64_t nbins, int64_t v) {
  i128 p = (i128)(v - lo) * nbins;
  int64_t b = (int64_t)(p / span);
  if (b >= nbins) b = nbins - 1;
  while (b > 0 && edge_at(lo, span, nbins, b) > v) b--;
  while (b < nbins - 1 && edge_at(lo, span, nbins, b + 1) <= v) b++;
  return b;
}

/* Checks a bin layout: lo < hi (span within int64), 1 <= nbins <= 2^31. */
static nsl_status check_bins(const char *what, int64_t lo, int64_t hi, int64_t nbins, nsl_error *err) {
  if (lo == NSL_NULL_I64 || hi == NSL_NULL_I64 || hi <= lo || (lo < 0 && hi > INT64_MAX + lo))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the range [%lld, %lld) is empty or too wide", what,
                         (long long)lo, (long long)hi);
  if (nbins < 1 || nbins > ((int64_t)1 << 31))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: %lld bins (1 to 2^31 allowed)", what, (long long)nbins);
  return NSL_OK;
}

/* Edges of nbins equal bins over [lo, hi): nbins + 1 ascending integers,
 * edge b = lo + floor((hi - lo) * b / nbins) (exact, no rounding drift);
 * the first is lo and the last hi.  NULL and err filled for hi <= lo or
 * nbins outside 1..2^31.  Result NSL_I64. */
nsl_column *nsl_bin_edges(int64_t lo, int64_t hi, int64_t nbins, nsl_error *err) {
  if (check_bins("bin edges", lo, hi, nbins, err) != NSL_OK) return NULL;
  nsl_column *c = nsl_column_new(NSL_I64, nbins + 1, NULL);
  if (!c) {
    nsl_error_set(err, NSL_ERR_NOMEM, "bin edges: out of memory for %lld bins", (long long)nbins);
    return NULL;
  }
  for (int64_t b = 0; b <= nbins; b++) nsl_i64(c)[b] = edge_at(lo, hi - lo, nbins, b);
  return c;
}

/* Group id of row i (0 without groups); -1 for a NULL or negative id. */
static inline int64_t group_at(const nsl_column *group_of, int64_t i) {
  if (!group_of) return 0;
  int null;
  int64_t g = nsl__int_at(group_of, i, &null);
  return null || g < 0 ? -1 : g;
}

/* Row indices of the rows that take part (mask set or absent, start and
 * stop not NULL, start <= stop, a group), ordered by start and, when
 * by_stop, by stop descending among equal starts (so an enclosing range
 * comes before the ranges it encloses).  Radix sorts only when the rows are
 * not already in that order.  *rows is malloc'ed. */
static nsl_status order_rows(const char *what, const nsl_column *start, const nsl_column *stop,
                             const nsl_column *group_of, const nsl_column *mask, int by_stop, int64_t **rows,
                             int64_t *m_out, nsl_error *err) {
  int64_t n = start->len, m = 0, smin = INT64_MAX, emax = INT64_MIN;
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  nsl__kv *a = malloc((size_t)(n ? n : 1) * sizeof *a), *tmp = NULL;
  int64_t *out = malloc((size_t)(n ? n : 1) * sizeof *out);
  if (!a || !out) {
    free(a);
    free(out);
    return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
  }
  int sorted = 1;
  int64_t ps = 0, pe = 0;
  for (int64_t i = 0; i < n; i++) {
    int ns, ne;
    int64_t s = nsl__int_at(start, i, &ns), e = nsl__int_at(stop, i, &ne);
    if ((mk && !mk[i]) || ns || ne || e < s || group_at(group_of, i) < 0) continue;
    if (m > 0 && (s < ps || (by_stop && s == ps && e > pe))) sorted = 0;
    ps = s, pe = e;
    if (s < smin) smin = s;
    if (e > emax) emax = e;
    a[m++] = (nsl__kv){0, i};
  }
  if (!sorted) {
    if (!(tmp = malloc((size_t)m * sizeof *tmp))) {
      free(a);
      free(out);
      return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)m);
    }
    nsl__kv *r = a;
    if (by_stop) {   /* first by stop descending, then (stable) by start */
      for (int64_t j = 0; j < m; j++) r[j].k = (uint64_t)emax - (uint64_t)nsl__int_at(stop, r[j].v, &(int){0});
      r = nsl__radix_kv(r, r == a ? tmp : a, m);
    }
    for (int64_t j = 0; j < m; j++) r[j].k = (uint64_t)nsl__int_at(start, r[j].v, &(int){0}) - (uint64_t)smin;
    r = nsl__radix_kv(r, r == a ? tmp : a, m);
    for (int64_t j = 0; j < m; j++) out[j] = r[j].v;
  } else {
    for (int64_t j = 0; j < m; j++) out[j] = a[j].v;
  }
  free(a);
  free(tmp);
  *rows = out;
  *m_out = m;
  return NSL_OK;
}

static nsl_status check_rows(const char *what, const nsl_column *start, const nsl_column *stop,
                             const nsl_column *group_of, const nsl_column *mask, nsl_error *err) {
  if (!int_col(start) || !int_col(stop))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: start and stop must be integer (ns) columns", what);
  if (start->len != stop->len)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: %lld starts but %lld stops", what, (long long)start->len,
                         (long long)stop->len);
  if (group_of && (!int_col(group_of) || group_of->len != start->len))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the group ids must be an integer column of %lld rows", what,
                         (long long)start->len);
  if (mask && (mask->type != NSL_BOOL || mask->len != start->len))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the mask must be a bool column of %lld rows", what,
                         (long long)start->len);
  return NSL_OK;
}

/* Adds the part of [s, e) inside the bins to busy[0..nbins). */
static void add_to_bins(int64_t *busy, int64_t lo, int64_t span, int64_t nbins, int64_t s, int64_t e) {
  int64_t hi = lo + span;
  if (s < lo) s = lo;
  if (e > hi) e = hi;
  if (s >= e) return;
  int64_t b = bin_of(lo, span, nbins, s);
  while (s < e && b < nbins) {
    int64_t be = edge_at(lo, span, nbins, b + 1), seg = e < be ? e : be;
    busy[b] += seg - s;
    s = seg;
    b++;
  }
}

/* Busy time per group and bin: for every group g in 0..ngroups-1 and bin b
 * of nsl_bin_edges(lo, hi, nbins), the length of the union of the group's
 * intervals [start, stop) inside bin b, so that busy / bin width is the
 * fraction of the bin during which the group (a device, a stream) was
 * busy.  Overlapping rows of one group count once.  group_of is an integer
 * column of ids (NULL: every row in group 0); rows with a negative or NULL
 * id, NULL times, stop < start or masked out (mask NULL or 1 as in
 * nsl_iv_union) are skipped; an id >= ngroups is NSL_ERR_ARG.  Rows need
 * not be sorted.  Result NSL_I64, ngroups * nbins long, group-major
 * (element g * nbins + b). */
nsl_column *nsl_busy_per_bin(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                             int64_t ngroups, const nsl_column *mask, int64_t lo, int64_t hi, int64_t nbins,
                             nsl_error *err) {
  const char *what = "busy time per bin";
  if (check_rows(what, start, stop, group_of, mask, err) != NSL_OK) return NULL;
  if (check_bins(what, lo, hi, nbins, err) != NSL_OK) return NULL;
  if (ngroups < 1 || ngroups > ((int64_t)1 << 40) / nbins) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: %lld groups of %lld bins is out of range", what, (long long)ngroups,
                  (long long)nbins);
    return NULL;
  }
  for (int64_t i = 0; group_of && i < group_of->len; i++)
    if (group_at(group_of, i) >= ngroups) {
      nsl_error_set(err, NSL_ERR_ARG, "%s: row %lld is in group %lld, but there are %lld groups", what,
                    (long long)i, (long long)group_at(group_of, i), (long long)ngroups);
      return NULL;
    }
  nsl_column *busy = nsl_column_new(NSL_I64, ngroups * nbins, NULL);
  int64_t *cs = malloc((size_t)ngroups * sizeof *cs), *ce = malloc((size_t)ngroups * sizeof *ce);
  int64_t *rows = NULL, m = 0;
  if (!busy || !cs || !ce) {
    nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld groups x %lld bins", what, (long long)ngroups,
                  (long long)nbins);
    goto fail;
  }
  if (order_rows(what, start, stop, group_of, mask, 0, &rows, &m, err) != NSL_OK) goto fail;
  for (int64_t g = 0; g < ngroups; g++) cs[g] = ce[g] = INT64_MIN;   /* no open interval */
  int64_t span = hi - lo, *b = nsl_i64(busy);
  for (int64_t j = 0; j < m; j++) {   /* per group, merge intervals in start order */
    int64_t i = rows[j], g = group_at(group_of, i), s, e;
    int null;
    s = nsl__int_at(start, i, &null);
    e = nsl__int_at(stop, i, &null);
    if (s >= e) continue;
    if (ce[g] != INT64_MIN && s <= ce[g]) {
      if (e > ce[g]) ce[g] = e;
      continue;
    }
    if (ce[g] != INT64_MIN) add_to_bins(b + g * nbins, lo, span, nbins, cs[g], ce[g]);
    cs[g] = s, ce[g] = e;
  }
  for (int64_t g = 0; g < ngroups; g++)
    if (ce[g] != INT64_MIN) add_to_bins(b + g * nbins, lo, span, nbins, cs[g], ce[g]);
  free(rows);
  free(cs);
  free(ce);
  return busy;
fail:
  nsl_column_release(busy);
  free(rows);
  free(cs);
  free(ce);
  return NULL;
}

/* Largest group id of group_of (NULL: 0); -1 when every id is negative or
 * NULL.  NSL_ERR_ARG when an id is not below limit (ids must be dense). */
static nsl_status max_group(const char *what, const nsl_column *group_of, int64_t limit, int64_t *out,
                            nsl_error *err) {
  int64_t mx = group_of ? -1 : 0;
  for (int64_t i = 0; group_of && i < group_of->len; i++) {
    int64_t g = group_at(group_of, i);
    if (g > mx) mx = g;
  }
  if (mx >= limit)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: id %lld is not below %lld (ids must be dense)", what,
                         (long long)mx, (long long)limit);
  *out = mx;
  return NSL_OK;
}

/* A sub-row ("depth") for every row so that rows of one group that overlap
 * in time never share one: rows are visited by start (an enclosing range,
 * the longer of two with one start, first); each takes one more than the
 * depth of the innermost range of its group still open at its start (stop
 * > start), or 0 when none is.  For properly nested ranges (NVTX push/pop
 * on a thread) this is the nesting depth, 0 for the outermost.  group_of:
 * dense integer ids (below the row count + NSL_SPANS_EXTRA_LANES), as
 * nsl_groupby gives (NULL: one group).  Rows with NULL times, stop < start or a negative group get NULL.
 * Result NSL_I32. */
nsl_column *nsl_nest_depth(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                           nsl_error *err) {
  const char *what = "nesting depth";
  if (check_rows(what, start, stop, group_of, NULL, err) != NSL_OK) return NULL;
  int64_t n = start->len, mx, *rows = NULL, m = 0;
  if (max_group(what, group_of, n + NSL_SPANS_EXTRA_LANES, &mx, err) != NSL_OK) return NULL;
  nsl_column *depth = nsl_column_new(NSL_I32, n, NULL);
  int64_t *top = malloc((size_t)(mx + 1 > 0 ? mx + 1 : 1) * sizeof *top);
  int64_t *below = malloc((size_t)(n ? n : 1) * sizeof *below);
  if (!depth || !top || !below) {
    nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
    goto fail;
  }
  if (order_rows(what, start, stop, group_of, NULL, 1, &rows, &m, err) != NSL_OK) goto fail;
  int32_t *d = nsl_i32(depth);
  for (int64_t i = 0; i < n; i++) d[i] = NSL_NULL_I32;
  for (int64_t g = 0; g <= mx; g++) top[g] = -1;
  int null;
  for (int64_t j = 0; j < m; j++) {
    int64_t i = rows[j], g = group_at(group_of, i), s = nsl__int_at(start, i, &null);
    int64_t t = top[g];
    while (t >= 0 && nsl__int_at(stop, t, &null) <= s) t = below[t];   /* closed before i starts */
    d[i] = t >= 0 ? d[t] + 1 : 0;
    below[i] = t;
    top[g] = i;
  }
  free(rows);
  free(top);
  free(below);
  return depth;
fail:
  nsl_column_release(depth);
  free(rows);
  free(top);
  free(below);
  return NULL;
}

void nsl_spans_free(nsl_spans *s) {
  if (!s) return;
  nsl_column_release(s->x0);
  nsl_column_release(s->x1);
  nsl_column_release(s->lane);
  nsl_column_release(s->cls);
  nsl_column_release(s->count);
  nsl_column_release(s->busy);
  memset(s, 0, sizeof *s);
}

static inline double num_at(const nsl_column *c, int64_t i) {
  switch (c->type) {
  case NSL_F64: return nsl_f64(c)[i];
  case NSL_I64: return nsl_i64(c)[i] == NSL_NULL_I64 ? NAN : (double)nsl_i64(c)[i];
  case NSL_I32: return nsl_i32(c)[i] == NSL_NULL_I32 ? NAN : (double)nsl_i32(c)[i];
  default: return NAN;
  }
}

/* The span being merged in one lane. */
typedef struct open_span {
  double x0, x1, busy;
  int64_t cls, count;
} open_span;

/* Merges the spans [x0, x1) that share a lane and a class into fewer, for
 * drawing: visited by x0, a span joins the one before it of its lane and
 * class when the gap between them is at most tol and the merged span stays
 * within max_len (max_len <= 0: no bound); a span that lies wholly inside
 * the one before it always joins it.  A merged
 * span records how many spans it holds (count) and the length of their
 * union (busy), so busy / (x1 - x0) is how much of it is covered: drawn
 * with that opacity, a run of spans too small to see keeps its density.
 * With tol = 0 and max_len <= 0 only overlapping or touching spans of one
 * class merge.  x0, x1: numeric columns (pixels, ns); lane: integer ids,
 * dense (below the row count + NSL_SPANS_EXTRA_LANES); cls: integer column
 * of ids 0..4095 or NULL (one class; NULL values are a class of their
 * own), at most 2^26 lanes x classes.  Rows with a NULL or NaN
 * coordinate, x1 < x0, or a negative or NULL lane are dropped.  out
 * receives x0, x1, busy (F64), lane, cls, count (I64); spans of one lane
 * are in x0 order; free with nsl_spans_free. */
nsl_status nsl_spans_merge(const nsl_column *x0, const nsl_column *x1, const nsl_column *lane,
                           const nsl_column *cls, double tol, double max_len, nsl_spans *out, nsl_error *err) {
  const char *what = "span merge";
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  memset(out, 0, sizeof *out);
  if (!num_col(x0) || !num_col(x1) || !int_col(lane) || (cls && !int_col(cls)))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: x0 and x1 must be numeric columns, lane and class integer ones",
                         what);
  int64_t n = x0->len;
  if (x1->len != n || lane->len != n || (cls && cls->len != n))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: columns of %lld, %lld, %lld and %lld rows", what, (long long)n,
                         (long long)x1->len, (long long)lane->len, (long long)(cls ? cls->len : n));
  if (!(tol >= 0) || isinf(tol) || isnan(max_len))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the tolerance must be a finite number >= 0", what);
  if (!(max_len > 0)) max_len = INFINITY;
  int64_t mx, ncls = 0;
  nsl_status rc = max_group(what, lane, n + NSL_SPANS_EXTRA_LANES, &mx, err);
  if (rc != NSL_OK) return rc;
  for (int64_t i = 0; cls && i < n; i++) {   /* classes: ids 0..ncls-1, NULL in slot ncls */
    int null;
    int64_t c = nsl__int_at(cls, i, &null);
    if (null) continue;
    if (c < 0 || c >= 4096)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: class %lld of row %lld is outside 0..4095", what, (long long)c,
                           (long long)i);
    if (c + 1 > ncls) ncls = c + 1;
  }
  int64_t nslots = (mx + 1) * (ncls + 1);
  if (nslots > ((int64_t)1 << 26))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: %lld lanes x %lld classes is too many", what, (long long)(mx + 1),
                         (long long)(ncls + 1));
  nsl_column *perm = NULL;
  int sorted = 1;
  for (int64_t i = 1; i < n && sorted; i++)
    if (num_at(x0, i) < num_at(x0, i - 1)) sorted = 0;
  if (!sorted && !(perm = nsl_argsort(&x0, NULL, 1, err))) return err ? err->code : NSL_ERR_NOMEM;
  open_span *st = malloc((size_t)(nslots > 0 ? nslots : 1) * sizeof *st);
  out->x0 = nsl_column_new(NSL_F64, n, NULL);
  out->x1 = nsl_column_new(NSL_F64, n, NULL);
  out->busy = nsl_column_new(NSL_F64, n, NULL);
  out->lane = nsl_column_new(NSL_I64, n, NULL);
  out->cls = nsl_column_new(NSL_I64, n, NULL);
  out->count = nsl_column_new(NSL_I64, n, NULL);
  if (!st || !out->x0 || !out->x1 || !out->busy || !out->lane || !out->cls || !out->count) {
    free(st);
    nsl_column_release(perm);
    nsl_spans_free(out);
    return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld spans", what, (long long)n);
  }
  for (int64_t q = 0; q < nslots; q++) st[q].count = 0;
  int64_t k = 0;
  double *ox0 = nsl_f64(out->x0), *ox1 = nsl_f64(out->x1), *obusy = nsl_f64(out->busy);
  int64_t *olane = nsl_i64(out->lane), *ocls = nsl_i64(out->cls), *ocount = nsl_i64(out->count);
#define FLUSH(q)                                                                                    \
  do {                                                                                              \
    ox0[k] = st[q].x0, ox1[k] = st[q].x1, obusy[k] = st[q].busy;                                   \
    olane[k] = q / (ncls + 1), ocls[k] = st[q].cls, ocount[k] = st[q].count;                       \
    k++;                                                                                            \
  } while (0)
  const int64_t *p = perm ? nsl_i64(perm) : NULL;
  for (int64_t j = 0; j < n; j++) {
    int64_t i = p ? p[j] : j, l = group_at(lane, i), c = NSL_NULL_I64;
    double a = num_at(x0, i), b = num_at(x1, i);
    if (l < 0 || !(a <= b) || isinf(a) || isinf(b)) continue;
    if (cls) {
      int null;
      c = nsl__int_at(cls, i, &null);
      if (null) c = NSL_NULL_I64;
    }
    int64_t q = l * (ncls + 1) + (c == NSL_NULL_I64 ? ncls : c);
    open_span *s = &st[q];
    if (s->count > 0) {
      if (b <= s->x1) {   /* inside: adds nothing */
        s->count++;
        continue;
      }
      if (a - s->x1 <= tol && b - s->x0 <= max_len) {
        s->busy += b - (a > s->x1 ? a : s->x1);
        s->x1 = b;
        s->count++;
        continue;
      }
    }
    if (s->count > 0) FLUSH(q);
    *s = (open_span){a, b, b - a, c, 1};
  }
  for (int64_t q = 0; q < nslots; q++)
    if (st[q].count > 0) FLUSH(q);
#undef FLUSH
  nsl_column *cols[] = {out->x0, out->x1, out->busy, out->lane, out->cls, out->count};
  for (size_t q = 0; q < sizeof cols / sizeof *cols; q++) nsl_column_set_len(cols[q], k);
  free(st);
  nsl_column_release(perm);
  return NSL_OK;
}
