/* binning.c -- kernels behind figures: equal time bins in exact integer
 * ns, busy time per (group, bin) for utilisation heatmaps, a nesting depth
 * per row so overlapping ranges of one thread get their own sub-rows, and
 * the merging of spans that share a lane into one rectangle each when they
 * are too small to tell apart (the level of detail of a timeline). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"

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
nsl_column *nsl__bin_edges(int64_t lo, int64_t hi, int64_t nbins, nsl_error *err) {
  if (check_bins("bin edges", lo, hi, nbins, err) != NSL_OK) return NULL;
  nsl_column *c = nsl_column_new(NSL_I64, nbins + 1, NULL);
  if (!c) {
    nsl_error_set(err, NSL_ERR_NOMEM, "bin edges: out of memory for %lld bins", (long long)nbins);
    return NULL;
  }
  for (int64_t b = 0; b <= nbins; b++) nsl_i64(c)[b] = edge_at(lo, hi - lo, nbins, b);
  return c;
}

/* ---- values per bin ---------------------------------------------------------------- */

enum { COUNT_PARTS = 64 };
typedef struct count_job {
  const nsl_column *t;
  int64_t lo, hi, nbins, per;
  const int64_t *edges;   /* nbins + 1 */
  double scale;           /* nbins / (hi - lo): a first guess of the bin */
  int64_t *counts;        /* parts x nbins */
} count_job;

static void count_rows(void *p, int64_t from, int64_t to) {
  const count_job *j = p;
  int64_t *c = j->counts + (from / j->per) * j->nbins;
  const int64_t *e = j->edges;
  const int64_t lo = j->lo, hi = j->hi, last = j->nbins - 1;
  const int64_t *t64 = j->t->type == NSL_I64 ? nsl_i64(j->t) : NULL;
  const int32_t *t32 = t64 ? NULL : nsl_i32(j->t);
  for (int64_t i = from; i < to; i++) {
    int64_t v;
    if (t64) {
      if ((v = t64[i]) == NSL_NULL_I64) continue;
    } else if (t32[i] == NSL_NULL_I32) continue;
    else v = t32[i];
    if (v < lo || v >= hi) continue;
    double g = (double)((uint64_t)v - (uint64_t)lo) * j->scale;   /* the guess, then the edges decide */
    int64_t b = g >= (double)last ? last : (int64_t)g;
    while (b > 0 && e[b] > v) b--;
    while (b < last && e[b + 1] <= v) b++;
    c[b]++;
  }
}

/* See nsl_internal.h. */
nsl_column *nsl__bin_counts(const nsl_column *t, int64_t lo, int64_t hi, int64_t nbins, nsl_error *err) {
  const char *what = "values per bin";
  if (!int_col(t)) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: needs an integer column", what);
    return NULL;
  }
  if (check_bins(what, lo, hi, nbins, err) != NSL_OK) return NULL;
  if (nbins > ((int64_t)1 << 20)) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: %lld bins (1 to 2^20 allowed)", what, (long long)nbins);
    return NULL;
  }
  nsl_column *edges = nsl__bin_edges(lo, hi, nbins, err), *res = nsl_column_new(NSL_I64, nbins, NULL);
  int64_t n = t->len, per = nsl__rows_per_part(n), parts = n > 0 ? (n + per - 1) / per : 1;
  int64_t *counts = parts <= COUNT_PARTS ? calloc((size_t)(parts * nbins), sizeof *counts) : NULL;
  if (!edges || !res || !counts) {
    if (edges) nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld bins", what, (long long)nbins);
    nsl_column_release(edges);
    nsl_column_release(res);
    free(counts);
    return NULL;
  }
  count_job j = {t, lo, hi, nbins, per, nsl_i64(edges), (double)nbins / ((double)hi - (double)lo), counts};
  nsl__run_rows(n, count_rows, &j);
  int64_t *r = nsl_i64(res);
  for (int64_t k = 0; k < parts; k++)
    for (int64_t b = 0; b < nbins; b++) r[b] += counts[k * nbins + b];
  nsl_column_release(edges);
  free(counts);
  return res;
}

/* Group id of row i (0 without groups); -1 for a NULL or negative id. */
static inline int64_t group_at(const nsl_column *group_of, int64_t i) {
  if (!group_of) return 0;
  int null;
  int64_t g = nsl__int_at(group_of, i, &null);
  return null || g < 0 ? -1 : g;
}

/* The rows of one call as plain int64 arrays: start, stop, group ids
 * (NULL: one group), each the column's own data when it is I64, else a
 * converted copy kept in tmp[]. */
typedef struct rows_i64 {
  const int64_t *s, *e, *g;
  nsl_column *tmp[3];
} rows_i64;

static void rows_free(rows_i64 *r) {
  for (int k = 0; k < 3; k++) nsl_column_release(r->tmp[k]);
}

static nsl_status rows_load(const char *what, const nsl_column *start, const nsl_column *stop,
                            const nsl_column *group_of, rows_i64 *r, nsl_error *err) {
  memset(r, 0, sizeof *r);
  const nsl_column *cols[3] = {start, stop, group_of};
  const int64_t **dst[3] = {&r->s, &r->e, &r->g};
  for (int k = 0; k < 3; k++)
    if (cols[k] && !(*dst[k] = nsl__as_i64(cols[k], &r->tmp[k]))) {
      rows_free(r);
      return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)cols[k]->len);
    }
  return NSL_OK;
}

/* Group of row i: its id, or -1 for a NULL or negative one (0 without groups). */
static inline int64_t grp(const int64_t *g, int64_t i) {
  if (!g) return 0;
  return g[i] < 0 ? -1 : g[i];   /* NSL_NULL_I64 is negative too */
}

/* Whether row i takes part: mask set or absent, start and stop not NULL,
 * start <= stop, a group id in 0..ng-1. */
static inline int row_ok(const rows_i64 *rw, const uint8_t *mk, int64_t ng, int64_t i) {
  int64_t s = rw->s[i], e = rw->e[i], g = grp(rw->g, i);
  return !(mk && !mk[i]) && s != NSL_NULL_I64 && e != NSL_NULL_I64 && e >= s && g >= 0 && g < ng;
}

/* Row indices of the rows that take part (mask set or absent, start and
 * stop not NULL, start <= stop, a group below ngroups), ordered within each
 * group by start and, when by_stop, by stop descending among equal starts
 * (so an enclosing range comes before the ranges it encloses).  Callers
 * treat every group on its own, so rows already in that order within their
 * group keep the table's order (one pass, no sort).  When reversed is not
 * NULL, rows whose table order is the mirror image (by stop ascending, a
 * later start first among equal stops, as NVTX tables list ranges when
 * they end) come back in reverse table order with *reversed set, for
 * callers that can walk time backwards.  When every group is in start
 * order and only runs of equal starts break the stop order (NVTX tables of
 * nsys list a thread's ranges by start), the rows are grouped by group
 * (counting sort, stable) and each such run ordered by insertion: one array
 * of row indices, no sort.  Otherwise the rows are radix sorted by start,
 * and runs of equal starts by stop.  *rows is malloc'ed,
 * or NULL when the table order (or its reverse) is the order: the caller
 * then walks the rows itself and skips those row_ok rejects. */
static nsl_status order_rows(const char *what, const rows_i64 *rw, int64_t n, int64_t ngroups,
                             const nsl_column *mask, int by_stop, int64_t **rows, int64_t *m_out, int *reversed,
                             nsl_error *err) {
  const int64_t *S = rw->s, *E = rw->e, *G = rw->g;
  int64_t m = 0, smin = INT64_MAX, smax = INT64_MIN, emin = INT64_MAX, emax = INT64_MIN;
  int64_t ng = ngroups > 0 ? ngroups : 1;
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  nsl__kv *a = NULL, *tmp = NULL;
  int64_t *out = NULL;
  int64_t *last = malloc((size_t)ng * 4 * sizeof *last);   /* per group: start, stop; and stop, start */
  nsl_status rc = NSL_OK;
  *rows = NULL;
  if (!last) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
    goto done;
  }
  int64_t *back = last + 2 * ng;   /* the mirror order */
  for (int64_t g = 0; g < ng; g++) {
    last[2 * g] = INT64_MIN, last[2 * g + 1] = INT64_MAX;
    back[2 * g] = INT64_MIN, back[2 * g + 1] = INT64_MAX;
  }
  if (reversed) *reversed = 0;
  int sorted = 1, mirrored = reversed != NULL, start_sorted = 1;
  for (int64_t i = 0; i < n; i++) {
    if (!row_ok(rw, mk, ng, i)) continue;
    int64_t s = S[i], e = E[i], g = grp(G, i);
    int64_t *l = last + 2 * g, *bk = back + 2 * g;
    if (s < l[0]) sorted = start_sorted = 0;
    else if (by_stop && s == l[0] && e > l[1]) sorted = 0;
    if (e < bk[0] || (e == bk[0] && s > bk[1])) mirrored = 0;
    l[0] = s, l[1] = e, bk[0] = e, bk[1] = s;
    if (s < smin) smin = s;
    if (s > smax) smax = s;
    if (e < emin) emin = e;
    if (e > emax) emax = e;
    m++;
  }
  if (sorted) goto done;
  if (mirrored) {
    *reversed = 1;
    goto done;
  }
  if (start_sorted && (out = malloc((size_t)(m ? m : 1) * sizeof *out))) {
    /* group-major, each group in table (= start) order; then each run of
     * equal starts by stop descending (stable), unless a run is long */
    int64_t *pos = calloc((size_t)ng + 1, sizeof *pos);
    int long_run = !pos;
    for (int64_t i = 0; i < n && pos; i++)
      if (row_ok(rw, mk, ng, i)) pos[grp(G, i) + 1]++;
    for (int64_t g = 0; g < ng && pos; g++) pos[g + 1] += pos[g];
    for (int64_t i = 0; i < n && pos; i++)
      if (row_ok(rw, mk, ng, i)) out[pos[grp(G, i)]++] = i;
    free(pos);
    for (int64_t j = 0; j < m && !long_run;) {   /* runs of one group and one start */
      int64_t q = j + 1;
      while (q < m && S[out[q]] == S[out[j]] && grp(G, out[q]) == grp(G, out[j])) q++;
      if (q - j > 64) long_run = 1;
      for (int64_t x = j + 1; x < q && !long_run; x++) {
        int64_t y = out[x], ye = E[y], z = x;
        while (z > j && E[out[z - 1]] < ye) out[z] = out[z - 1], z--;
        out[z] = y;
      }
      j = q;
    }
    if (!long_run) goto done;
    free(out);   /* many equal starts: the sort below */
    out = NULL;
  }
  a = malloc((size_t)(m ? m : 1) * sizeof *a);
  tmp = malloc((size_t)(m ? m : 1) * sizeof *tmp);
  out = malloc((size_t)(m ? m : 1) * sizeof *out);
  if (!a || !tmp || !out) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)m);
    goto done;
  }
  m = 0;
  for (int64_t i = 0; i < n; i++)
    if (row_ok(rw, mk, ng, i)) a[m++] = (nsl__kv){(uint64_t)S[i] - (uint64_t)smin, i};
  int sbits = nsl__bitwidth((uint64_t)smax - (uint64_t)smin), ebits = nsl__bitwidth((uint64_t)emax - (uint64_t)emin);
  nsl__kv *r = nsl__radix_kv(a, tmp, m, sbits);
  if (by_stop) {   /* equal starts: longer first, by insertion in short runs */
    int long_run = 0;
    for (int64_t j = 0; j < m && !long_run;) {
      int64_t q = j + 1;
      while (q < m && r[q].k == r[j].k) q++;
      if (q - j > 64) long_run = 1;
      for (int64_t x = j + 1; x < q && !long_run; x++) {
        nsl__kv y = r[x];
        int64_t ye = E[y.v], z = x;
        while (z > j && E[r[z - 1].v] < ye) r[z] = r[z - 1], z--;
        r[z] = y;
      }
      j = q;
    }
    if (long_run) {   /* many equal starts: by stop descending, then (stable) by start */
      for (int64_t j = 0; j < m; j++) r[j].k = (uint64_t)emax - (uint64_t)E[r[j].v];
      r = nsl__radix_kv(r, r == a ? tmp : a, m, ebits);
      for (int64_t j = 0; j < m; j++) r[j].k = (uint64_t)S[r[j].v] - (uint64_t)smin;
      r = nsl__radix_kv(r, r == a ? tmp : a, m, sbits);
    }
  }
  for (int64_t j = 0; j < m; j++) out[j] = r[j].v;
done:
  free(a);
  free(tmp);
  free(last);
  if (rc != NSL_OK) {
    free(out);
    return rc;
  }
  *rows = out;
  *m_out = out ? m : n;
  return NSL_OK;
}

/* Row i of the walk: rows[j] when sorted, else j or n-1-j in table order. */
static inline int64_t walk_row(const int64_t *rows, int reversed, int64_t n, int64_t j) {
  return rows ? rows[j] : reversed ? n - 1 - j : j;
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
 * of nsl__bin_edges(lo, hi, nbins), the length of the union of the group's
 * intervals [start, stop) inside bin b, so that busy / bin width is the
 * fraction of the bin during which the group (a device, a stream) was
 * busy.  Overlapping rows of one group count once.  group_of is an integer
 * column of ids (NULL: every row in group 0); rows with a negative or NULL
 * id, NULL times, stop < start or masked out (mask NULL or 1 as in
 * nsl_iv_union) are skipped; an id >= ngroups is NSL_ERR_ARG.  Rows need
 * not be sorted.  Result NSL_I64, ngroups * nbins long, group-major
 * (element g * nbins + b). */
nsl_column *nsl__busy_per_bin(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
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
  rows_i64 rw;
  if (rows_load(what, start, stop, group_of, &rw, err) != NSL_OK) return NULL;
  nsl_column *busy = nsl_column_new(NSL_I64, ngroups * nbins, NULL);
  int64_t *cs = malloc((size_t)ngroups * sizeof *cs), *ce = malloc((size_t)ngroups * sizeof *ce);
  int64_t *rows = NULL, m = 0;
  if (!busy || !cs || !ce) {
    nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld groups x %lld bins", what, (long long)ngroups,
                  (long long)nbins);
    goto fail;
  }
  if (order_rows(what, &rw, start->len, ngroups, mask, 0, &rows, &m, NULL, err) != NSL_OK) goto fail;
  for (int64_t g = 0; g < ngroups; g++) cs[g] = ce[g] = INT64_MIN;   /* no open interval */
  int64_t span = hi - lo, *b = nsl_i64(busy);
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  for (int64_t j = 0; j < m; j++) {   /* per group, merge intervals in start order */
    int64_t i = walk_row(rows, 0, m, j);
    if (!rows && !row_ok(&rw, mk, ngroups, i)) continue;
    int64_t g = grp(rw.g, i), s = rw.s[i], e = rw.e[i];
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
  rows_free(&rw);
  return busy;
fail:
  nsl_column_release(busy);
  free(rows);
  free(cs);
  free(ce);
  rows_free(&rw);
  return NULL;
}

/* Whether row i overlaps [from, to): start < to and stop > from, neither NULL. */
static inline int overlaps(const nsl_column *start, const nsl_column *stop, int64_t i, int64_t from, int64_t to) {
  int ns, ne;
  int64_t s = nsl__int_at(start, i, &ns), e = nsl__int_at(stop, i, &ne);
  return !ns && !ne && s < to && e > from;
}

int64_t nsl__count_overlapping(const nsl_column *start, const nsl_column *stop, int64_t from, int64_t to) {
  if (!int_col(start) || !int_col(stop) || start->len != stop->len) return -1;
  int64_t n = start->len, k = 0;
  if (start->type == NSL_I64 && stop->type == NSL_I64) {   /* the common case, in one tight loop */
    const int64_t *s = nsl_i64(start), *e = nsl_i64(stop);
    for (int64_t i = 0; i < n; i++)   /* NULL is INT64_MIN: never after from, and a NULL start never counts */
      k += s[i] < to && e[i] > from && s[i] != NSL_NULL_I64;
    return k;
  }
  for (int64_t i = 0; i < n; i++) k += overlaps(start, stop, i, from, to);
  return k;
}

nsl_column *nsl__overlapping_rows(const nsl_column *start, const nsl_column *stop, int64_t from, int64_t to,
                                 nsl_error *err) {
  if (!int_col(start) || !int_col(stop) || start->len != stop->len) {
    nsl_error_set(err, NSL_ERR_ARG, "overlapping rows: start and stop must be integer columns of one length");
    return NULL;
  }
  nsl_column *r = nsl_column_new(NSL_I64, 0, NULL);
  int64_t n = start->len, k = 0, cap = 0;
  if (!r) goto nomem;
  if (from == NSL_NULL_I64 || to == NSL_NULL_I64) return r;   /* nothing compares with NULL */
  int fast = start->type == NSL_I64 && stop->type == NSL_I64;
  const int64_t *s = fast ? nsl_i64(start) : NULL, *e = fast ? nsl_i64(stop) : NULL;
  for (int64_t i = 0; i < n; i++) {
    if (fast ? !(s[i] < to && e[i] > from && s[i] != NSL_NULL_I64) : !overlaps(start, stop, i, from, to)) continue;
    if (k == cap) {
      cap = cap ? cap * 2 : 1024;
      if (nsl_column_reserve(r, cap, NULL) != NSL_OK) goto nomem;
    }
    nsl_i64(r)[k++] = i;
  }
  nsl_column_set_len(r, k);
  return r;
nomem:
  nsl_column_release(r);
  nsl_error_set(err, NSL_ERR_NOMEM, "overlapping rows: out of memory for %lld rows", (long long)n);
  return NULL;
}

/* ---- nesting depth ----------------------------------------------------------------
 *
 * A sub-row ("depth") for every row so that rows of one group that overlap
 * in time never share one: rows are visited by start (an enclosing range,
 * the longer of two with one start, first); each takes one more than the
 * depth of the innermost range of its group still open at its start (stop
 * > start), or 0 when none is.  For properly nested ranges (NVTX push/pop
 * on a thread) this is the nesting depth, 0 for the outermost.  Rows with
 * NULL times, stop < start or a negative group get NULL.  Rows in start
 * order within their group take one pass; rows in stop order (as NVTX
 * tables list ranges, when they end) are walked backwards, the mirror
 * image, which gives the same depths to nested ranges of positive length
 * (a zero-length range at an edge of another may take the other sub-row);
 * other rows are sorted first.
 *
 * The ranges of each group still open form a stack, innermost on top, so
 * a range's depth is its place on the stack: a group keeps the ends that
 * close its open ranges for the walk (stops walking forward, starts walking
 * back) in an array of its own, a few inside the group and more on the
 * heap; the memory grows with the ranges open at once, not with the rows. */

#define NEST_INLINE 6   /* open ranges a group holds without the heap */

/* A group: its stack (edge[0..size), edge pointing into own[] until it
 * outgrows it), the start of its previous row (walking in table order the
 * top of the stack is the previous row's stop: the walk checks their
 * order), its deepest depth (-1: none) and its rows (kept by
 * nsl__nest_lanes). */
typedef struct nest_group {
  int64_t *edge, start, count;
  int32_t size, cap, deepest;
  int64_t own[NEST_INLINE];
} nest_group;

/* The state of a walk: the groups. */
typedef struct nest_walk {
  int64_t ngroups, gcap;
  nest_group *grp;
} nest_walk;

static void nest_walk_free(nest_walk *w) {
  for (int64_t g = 0; g < w->ngroups; g++)
    if (w->grp[g].edge != w->grp[g].own) free(w->grp[g].edge);
  free(w->grp);
  memset(w, 0, sizeof *w);
}

static void nest_group_clear(nest_group *q) {
  q->start = INT64_MIN, q->count = 0;
  q->size = 0, q->deepest = -1;
}

/* Room for groups 0..ng-1, the new ones with nothing open; -1 on out of
 * memory. */
static int nest_walk_groups(nest_walk *w, int64_t ng) {
  if (ng > w->gcap) {
    int64_t cap = w->gcap ? w->gcap : 64;
    while (cap < ng) cap *= 2;
    nest_group *grp = realloc(w->grp, (size_t)cap * sizeof *grp);
    if (!grp) return -1;
    for (int64_t g = 0; g < w->ngroups; g++)   /* stacks held inside moved with their groups */
      if (grp[g].cap == NEST_INLINE) grp[g].edge = grp[g].own;
    w->grp = grp, w->gcap = cap;
  }
  for (int64_t g = w->ngroups; g < ng; g++) {
    nest_group *q = &w->grp[g];
    q->edge = q->own, q->cap = NEST_INLINE;
    nest_group_clear(q);
  }
  if (ng > w->ngroups) w->ngroups = ng;
  return 0;
}

/* Every group back to nothing open. */
static void nest_walk_reset(nest_walk *w) {
  for (int64_t g = 0; g < w->ngroups; g++) nest_group_clear(&w->grp[g]);
}

/* A group's stack, full, twice as large; -1 on out of memory. */
static __attribute__((noinline)) int nest_grow(nest_group *q) {
  if (q->cap > INT32_MAX / 2) return -1;
  int64_t *e = malloc((size_t)q->cap * 2 * sizeof *e);
  if (!e) return -1;
  memcpy(e, q->edge, (size_t)q->size * sizeof *e);
  if (q->edge != q->own) free(q->edge);
  q->edge = e, q->cap *= 2;
  return 0;
}

/* Row [s, e) enters the walk in group q: the ranges it leaves behind close
 * (walking forward, those that stop by s; backward, those that start at e
 * or later), it takes the depth one below the innermost still open (0:
 * none) and opens.  Returns the depth, or -1 on out of memory. */
static inline int32_t nest_enter(nest_group *q, int64_t s, int64_t e, int backward) {
  int64_t *edge = q->edge;
  int32_t k = q->size;
  if (backward)
    while (k > 0 && edge[k - 1] >= e) k--;
  else
    while (k > 0 && edge[k - 1] <= s) k--;
  if (k == q->cap) {
    q->size = k;
    if (nest_grow(q) != 0) return -1;
    edge = q->edge;
  }
  edge[k] = backward ? s : e;
  q->size = k + 1;
  if (k > q->deepest) q->deepest = k;
  return k;
}

/* The walk in table order over rows 0..m-1 of S, E in groups G (NULL: all
 * in group 0; negative: none), counting the rows of each group: depths
 * into d (lanes_of < 0), or provisional lanes g * lanes_of + depth (NULL
 * from depth lanes_of on); NULL for rows left out.  Returns the first row
 * out of that order (before the previous row of its group, or as early and
 * longer; the walk gives up there), m, or -1 on out of memory. */
static int64_t nest_in_order(nest_walk *w, const int64_t *S, const int64_t *E, const int64_t *G, int64_t m,
                             int64_t lanes_of, int32_t *d) {
  nest_group *grp = w->grp;
  for (int64_t i = 0; i < m; i++) {
    int64_t s = S[i], e = E[i], g = G ? G[i] : 0;
    if (s == NSL_NULL_I64 || e < s || g < 0) {   /* a NULL stop is below every start */
      if (g >= 0) grp[g].count++;
      d[i] = NSL_NULL_I32;
      continue;
    }
    nest_group *q = &grp[g];   /* the top of its stack is its previous row */
    if (s < q->start || (s == q->start && q->edge[q->size - 1] < e)) return i;
    q->start = s;
    q->count++;
    int32_t dd = nest_enter(q, s, e, 0);
    if (dd < 0) return -1;
    d[i] = lanes_of < 0 ? dd : dd < lanes_of ? (int32_t)(g * lanes_of + dd) : NSL_NULL_I32;
  }
  return m;
}

/* Rows 0..m-1 of groups G that are not ranges: each at depth 0 of its
 * group, written as nest_in_order writes them (counted; provisional lanes
 * when lanes_of >= 0).  Returns m. */
static int64_t nest_flat(nest_walk *w, const int64_t *G, int64_t m, int64_t lanes_of, int32_t *d) {
  for (int64_t i = 0; i < m; i++) {
    nest_group *q = &w->grp[G[i]];
    q->count++, q->deepest = 0;
    d[i] = lanes_of < 0 ? 0 : lanes_of > 0 ? (int32_t)(G[i] * lanes_of) : NSL_NULL_I32;
  }
  return m;
}

/* The walk over every row of rw (groups below w->ngroups) in the order
 * order_rows gives (by start, or the table backwards), from scratch:
 * depths into d, NULL for rows left out. */
static nsl_status nest_ordered(const char *what, const rows_i64 *rw, int64_t n, nest_walk *w, int32_t *d,
                               nsl_error *err) {
  int64_t *rows = NULL, m = 0;
  int reversed = 0;
  nsl_status rc = order_rows(what, rw, n, w->ngroups, NULL, 1, &rows, &m, &reversed, err);
  if (rc != NSL_OK) return rc;
  if (rows)   /* rows left out of the walk stay NULL (the walk sets them otherwise) */
    for (int64_t i = 0; i < n; i++) d[i] = NSL_NULL_I32;
  nest_walk_reset(w);
  for (int64_t j = 0; j < m; j++) {
    int64_t i = walk_row(rows, reversed, n, j);
    if (!rows && !row_ok(rw, NULL, w->ngroups, i)) {
      d[i] = NSL_NULL_I32;
      continue;
    }
    if ((d[i] = nest_enter(&w->grp[grp(rw->g, i)], rw->s[i], rw->e[i], reversed)) < 0) {
      free(rows);
      return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for the open ranges", what);
    }
  }
  free(rows);
  return NSL_OK;
}

/* nsl__nest_depth: the depths above; group_of: dense integer ids (below the
 * row count + NSL_SPANS_EXTRA_LANES), as nsl_groupby gives (NULL: one
 * group).  Result NSL_I32. */
nsl_column *nsl__nest_depth(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                           nsl_error *err) {
  const char *what = "nesting depth";
  if (check_rows(what, start, stop, group_of, NULL, err) != NSL_OK) return NULL;
  int64_t n = start->len, mx = group_of ? -1 : 0;
  nest_walk w = {0};
  rows_i64 rw;
  if (rows_load(what, start, stop, group_of, &rw, err) != NSL_OK) return NULL;
  const int64_t *S = rw.s, *E = rw.e, *G = rw.g;
  if (G)
    for (int64_t i = 0; i < n; i++) mx = G[i] > mx ? G[i] : mx;   /* NULL ids are negative */
  nsl_column *depth = NULL;
  if (mx >= n + NSL_SPANS_EXTRA_LANES) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: id %lld is not below %lld (ids must be dense)", what, (long long)mx,
                  (long long)(n + NSL_SPANS_EXTRA_LANES));
    goto fail;
  }
  depth = nsl_column_new(NSL_I32, n, NULL);
  if (!depth || nest_walk_groups(&w, mx + 1 > 0 ? mx + 1 : 1) != 0) goto nomem;
  nest_walk_reset(&w);
  /* First, hopefully, one walk in table order; it gives up at the first
   * row out of that order, and the rows are walked in their order. */
  int32_t *d = nsl_i32(depth);
  int64_t j0 = nest_in_order(&w, S, E, G, n, -1, d);
  if (j0 < 0) goto nomem;
  if (j0 < n && nest_ordered(what, &rw, n, &w, d, err) != NSL_OK) goto fail;
  nest_walk_free(&w);
  rows_free(&rw);
  return depth;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
fail:
  nsl_column_release(depth);
  nest_walk_free(&w);
  rows_free(&rw);
  return NULL;
}

void nsl__lane_layout_free(nsl__lane_layout *l) {
  if (!l) return;
  nsl_column_release(l->lane);
  nsl_column_release(l->row);
  nsl_column_release(l->first_lane);
  nsl_column_release(l->lanes);
  nsl_column_release(l->count);
  memset(l, 0, sizeof *l);
}

/* The groups of gr in the order of their key tuples (read at each group's
 * first row): an I64 column of group ids, NULL and err filled on failure. */
static nsl_column *groups_in_key_order(const nsl__grouping *gr, const nsl_column *const *keys, int nkeys,
                                       nsl_error *err) {
  int64_t ng = nsl__grouping_count(gr);
  nsl_column *first = nsl_column_new(NSL_I64, ng, NULL), *at[16] = {NULL}, *order = NULL;
  if (!first) {
    nsl_error_set(err, NSL_ERR_NOMEM, "nest lanes: out of memory for %lld groups", (long long)ng);
    return NULL;
  }
  if (ng) memcpy(first->data, nsl__grouping_first_rows(gr), (size_t)ng * sizeof(int64_t));
  int k = 0;
  for (; k < nkeys; k++)
    if (!(at[k] = nsl_column_gather(keys[k], first, err))) break;
  if (k == nkeys) order = nsl_argsort((const nsl_column *const *)at, NULL, nkeys, err);
  for (int q = 0; q < k; q++) nsl_column_release(at[q]);
  nsl_column_release(first);
  return order;
}

#define PROVISIONAL_LANES ((int64_t)1 << 20)   /* groups x max_sub up to this: provisional lanes, no group ids */

/* nsl__nest_lanes: one walk in table order, a block of group ids at a time
 * (nsl__grouping), where each row keeps g * max_sub + its sub-row (a
 * provisional lane) until the groups' lanes are known, then one pass maps
 * provisional lanes to lanes through a table.  Rows out of order, or too
 * many groups x max_sub for the table, take the column of group ids and
 * nest_ordered instead. */
nsl_status nsl__nest_lanes(const nsl_column *start, const nsl_column *stop, const nsl_column *const *keys, int nkeys,
                          int64_t first, int64_t max_sub, nsl__lane_layout *out, nsl_error *err) {
  const char *what = "nest lanes";
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  memset(out, 0, sizeof *out);
  int ranges = start || stop;   /* else every row of a group on its first lane */
  nsl_status rc = ranges ? check_rows(what, start, stop, NULL, NULL, err) : NSL_OK;
  if (rc != NSL_OK) return rc;
  if (nkeys < 1 || nkeys > 16 || !keys || !keys[0])
    return nsl_error_set(err, NSL_ERR_ARG, "%s: 1 to 16 key columns, not %d", what, nkeys);
  int64_t n = ranges ? start->len : keys[0]->len;
  for (int k = 0; k < nkeys; k++)
    if (keys[k] && keys[k]->len != n)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: key %d has %lld rows, not %lld", what, k + 1,
                           (long long)keys[k]->len, (long long)n);
  if (first < 0 || max_sub < 0)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the first lane (%lld) and the sub-rows (%lld) must be >= 0", what,
                         (long long)first, (long long)max_sub);
  int64_t ids[NSL__GROUP_BLOCK], *G = NULL, *base = NULL, j0 = n;
  int32_t *remap = NULL;
  nest_walk w = {0};
  nsl_column *order = NULL;
  rows_i64 rw = {0};
  if (ranges && rows_load(what, start, stop, NULL, &rw, err) != NSL_OK) return err ? err->code : NSL_ERR_NOMEM;
  nsl__grouping *gr = nsl__grouping_new(keys, nkeys, err);
  if (!gr) goto fail;
  if (!(out->lane = nsl_column_new(NSL_I32, n, NULL))) goto nomem;
  int32_t *d = nsl_i32(out->lane);   /* sub-rows, then (provisional) lanes in place */
  nest_walk_reset(&w);
  for (int64_t off = 0; off < n; off += NSL__GROUP_BLOCK) {
    int64_t m = n - off < NSL__GROUP_BLOCK ? n - off : NSL__GROUP_BLOCK;
    if (nsl__grouping_ids(gr, off, m, ids, err) != NSL_OK) goto fail;
    int64_t ng = nsl__grouping_count(gr);
    if (nest_walk_groups(&w, ng) != 0) goto nomem;
    int64_t j = max_sub > 0 && ng > PROVISIONAL_LANES / max_sub ? 0
                : ranges ? nest_in_order(&w, rw.s + off, rw.e + off, ids, m, max_sub, d + off)
                         : nest_flat(&w, ids, m, max_sub, d + off);
    if (j < 0) goto nomem;
    if (j < m) {
      j0 = off + j;
      break;
    }
  }
  if (j0 < n) {   /* every row's group, then the rows walked in their order */
    if (!(G = nsl__big_alloc((size_t)n * sizeof *G))) goto nomem;
    for (int64_t off = 0; off < n; off += NSL__GROUP_BLOCK) {
      int64_t m = n - off < NSL__GROUP_BLOCK ? n - off : NSL__GROUP_BLOCK;
      if (nsl__grouping_ids(gr, off, m, G + off, err) != NSL_OK) goto fail;   /* finds the groups seen so far */
    }
    if (nest_walk_groups(&w, nsl__grouping_count(gr)) != 0) goto nomem;
    rw.g = G;
    if (ranges && nest_ordered(what, &rw, n, &w, d, err) != NSL_OK) goto fail;
    rw.g = NULL;
    for (int64_t i = 0; i < n && !ranges; i++) d[i] = 0, w.grp[G[i]].deepest = 0;
    for (int64_t g = 0; g < w.ngroups; g++) w.grp[g].count = 0;
    for (int64_t i = 0; i < n; i++) w.grp[G[i]].count++;
  }
  /* the groups' lanes, in key order */
  int64_t ng = nsl__grouping_count(gr), next = first;
  if (!(order = groups_in_key_order(gr, keys, nkeys, err))) goto fail;
  out->row = nsl_column_new(NSL_I64, ng, NULL);
  out->first_lane = nsl_column_new(NSL_I64, ng, NULL);
  out->lanes = nsl_column_new(NSL_I64, ng, NULL);
  out->count = nsl_column_new(NSL_I64, ng, NULL);
  base = malloc((size_t)(ng ? ng : 1) * sizeof *base);
  if (!out->row || !out->first_lane || !out->lanes || !out->count || !base) goto nomem;
  int64_t *orow = nsl_i64(out->row), *ofirst = nsl_i64(out->first_lane), *olanes = nsl_i64(out->lanes);
  int64_t *ocount = nsl_i64(out->count);
  for (int64_t j = 0; j < ng; j++) {
    int64_t g = nsl_i64(order)[j], k = (int64_t)w.grp[g].deepest + 1;
    if (k > max_sub) k = max_sub;
    base[g] = next;
    orow[j] = nsl__grouping_first_rows(gr)[g], ofirst[j] = next, olanes[j] = k, ocount[j] = w.grp[g].count;
    next += k;
    if (next > INT32_MAX) {
      nsl_error_set(err, NSL_ERR_ARG, "%s: %lld lanes or more do not fit in int32", what, (long long)next);
      goto fail;
    }
  }
  /* the lane of every row, in place */
  if (G) {
    for (int64_t i = 0; i < n; i++) {
      int64_t sub = d[i];
      d[i] = sub >= 0 && sub < max_sub ? (int32_t)(base[G[i]] + sub) : NSL_NULL_I32;
    }
  } else if (ng && max_sub) {   /* provisional lane g * max_sub + sub -> base[g] + sub */
    if (!(remap = malloc((size_t)(ng * max_sub) * sizeof *remap))) goto nomem;
    for (int64_t g = 0; g < ng; g++)   /* sub-rows past the deepest never occur */
      for (int64_t sub = 0; sub < max_sub; sub++)
        remap[g * max_sub + sub] = sub <= w.grp[g].deepest ? (int32_t)(base[g] + sub) : NSL_NULL_I32;
    for (int64_t i = 0; i < n; i++) d[i] = d[i] >= 0 ? remap[d[i]] : NSL_NULL_I32;
  }
  rc = NSL_OK;
  goto done;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
fail:
  rc = err ? err->code : NSL_ERR_NOMEM;
  nsl__lane_layout_free(out);
done:
  nsl_column_release(order);
  free(base);
  free(remap);
  nsl__big_free(G);
  nest_walk_free(&w);
  nsl__grouping_free(gr);
  rows_free(&rw);
  return rc;
}

void nsl__spans_free(nsl__spans *s) {
  if (!s) return;
  nsl_column_release(s->x0);
  nsl_column_release(s->x1);
  nsl_column_release(s->lane);
  nsl_column_release(s->cls);
  nsl_column_release(s->count);
  nsl_column_release(s->busy);
  nsl_column_release(s->row);
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
  int64_t cls, count, row;
} open_span;

/* x coordinate of row i of c under the transform: (v - origin) * scale +
 * offset; NaN for NULL. */
static inline double xform_at(const nsl_column *c, int64_t i, const nsl__span_opts *o) {
  if (c->type == NSL_F64) return (nsl_f64(c)[i] - (double)o->origin) * o->scale + o->offset;
  int null;
  int64_t v = nsl__int_at(c, i, &null), d;
  if (null) return NAN;
  if (__builtin_sub_overflow(v, o->origin, &d)) return ((double)v - (double)o->origin) * o->scale + o->offset;
  return (double)d * o->scale + o->offset;
}

/* Merges the spans [x0, x1) that share a lane and a class into fewer, for
 * drawing.  Coordinates are first mapped to x = (v - origin) * scale +
 * offset (o: NSL_SPAN_OPTS_INIT is the identity; pixels from ns in one
 * pass, without temporary columns).  Visited by x within each lane, a span
 * joins the one before it of its lane and class when the gap between them
 * is at most o->tol and the merged span stays within o->max_len (<= 0: no
 * bound); a span that lies wholly inside the one before it always joins
 * it.  A merged span records how many spans it holds (count) and the
 * length of their union (busy), so busy / (x1 - x0) is how much of it is
 * covered: drawn with that opacity, a run of spans too small to see keeps
 * its density.  With tol = 0 and max_len <= 0 only overlapping or touching
 * spans of one class merge.  x0, x1: numeric columns; lane: integer ids,
 * dense (below the row count + NSL_SPANS_EXTRA_LANES); cls: integer (or
 * bool: classes 0 and 1) column of ids 0..4095 or NULL (one class; NULL
 * values are a class of their own), at most 2^26 lanes x classes; o->mask (NULL or bool) keeps the
 * rows where it is 1.  Rows with a NULL or non-finite coordinate, x1 < x0,
 * or a negative or NULL lane are dropped.  Rows already in x order within
 * each lane are merged in one pass; others are sorted first.  out receives
 * x0, x1, busy (F64), lane, cls, count and row (I64: the first input row
 * of the span, e.g. to label spans that hold one event); spans of one lane
 * and class are in x order; free with nsl__spans_free. */
/* The typed arrays behind the columns of one span merge, for the common
 * case (int64 times; int64 or int32 lanes; int64, int32 or bool classes),
 * where the loops read them directly; the generic path reads through the
 * columns.  The loops below are instantiated per mode (SP_* bits, constant
 * in each call). */
typedef struct span_in {
  const nsl_column *x0, *x1, *lane, *cls;
  const int64_t *X0, *X1, *L, *C;   /* the fast path: X0, X1, and L or L32, C, C32 or C8 (when cls is) */
  const int32_t *L32, *C32;
  const uint8_t *C8;
  const uint8_t *mk;
  nsl__span_opts o;
} span_in;

enum { SP_FAST = 1, SP_L32 = 2, SP_C32 = 4, SP_C8 = 8, SP_PERM = 16 };   /* the fast path: no mask */

#define SPAN_INLINE static inline __attribute__((always_inline))

/* Lane of row i (-1 for NULL or negative). */
SPAN_INLINE int64_t sp_lane(const span_in *in, int mode, int64_t i) {
  if (mode & SP_FAST) {
    int64_t l = mode & SP_L32 ? in->L32[i] : in->L[i];
    return l < 0 ? -1 : l;
  }
  return group_at(in->lane, i);
}

/* Class of row i: NSL_NULL_I64 for NULL (or no classes). */
SPAN_INLINE int64_t sp_cls(const span_in *in, int mode, int64_t i) {
  if (!in->cls) return NSL_NULL_I64;
  if (mode & SP_FAST) {
    if (mode & SP_C8) return in->C8[i];
    if (!(mode & SP_C32)) return in->C[i];
    int32_t c = in->C32[i];
    return c == NSL_NULL_I32 ? NSL_NULL_I64 : c;
  }
  int null;
  int64_t c = nsl__int_at(in->cls, i, &null);
  return null ? NSL_NULL_I64 : c;
}

/* Mapped x of v under the transform; NaN for NULL. */
SPAN_INLINE double sp_map(int64_t v, int64_t origin, double scale, double offset) {
  int64_t d;
  if (v == NSL_NULL_I64) return NAN;
  if (__builtin_sub_overflow(v, origin, &d)) return ((double)v - (double)origin) * scale + offset;
  return (double)d * scale + offset;
}

/* Raw x0 of row i for the order check (the transform keeps the order);
 * NaN for NULL. */
SPAN_INLINE double sp_raw0(const span_in *in, int mode, int64_t i) {
  if (mode & SP_FAST) return in->X0[i] == NSL_NULL_I64 ? NAN : (double)in->X0[i];
  return num_at(in->x0, i);
}

/* One pass: the largest lane (*mx, -1 when none), the class count (*ncls:
 * largest id + 1), and NSL_ERR_ARG for a class outside 0..4095. */
SPAN_INLINE nsl_status sp_scan(const span_in *in, int mode, int64_t n, int64_t *mx, int64_t *ncls, nsl_error *err) {
  int64_t m = -1, nc = 0;
  if (!in->cls && (mode & SP_L32)) {   /* int32 lanes only: a plain maximum, vectorised */
    int32_t m32 = INT32_MIN;
    for (int64_t i = 0; i < n; i++) m32 = in->L32[i] > m32 ? in->L32[i] : m32;
    *mx = m32 < 0 ? -1 : m32, *ncls = 0;
    return NSL_OK;
  }
  if (!in->cls) {   /* lanes only: a plain maximum */
    for (int64_t i = 0; i < n; i++) {
      int64_t l = sp_lane(in, mode, i);
      m = l > m ? l : m;
    }
    *mx = m, *ncls = 0;
    return NSL_OK;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t l = sp_lane(in, mode, i);
    if (l > m) m = l;
    if (in->mk && !in->mk[i]) continue;
    int64_t c = sp_cls(in, mode, i);
    if (c == NSL_NULL_I64) continue;
    if (c < 0 || c >= 4096)
      return nsl_error_set(err, NSL_ERR_ARG, "span merge: class %lld of row %lld is outside 0..4095", (long long)c,
                           (long long)i);
    if (c + 1 > nc) nc = c + 1;
  }
  *mx = m, *ncls = nc;
  return NSL_OK;
}

/* The merged spans so far: the output columns, grown as spans come. */
typedef struct span_out {
  nsl__spans *s;
  int64_t k, cap;
  double *x0, *x1, *busy;
  int64_t *lane, *cls, *count, *row;
} span_out;

/* Room for cap spans in every output column; -1 on out of memory. */
static int span_out_reserve(span_out *o, int64_t cap) {
  nsl_column *cols[] = {o->s->x0, o->s->x1, o->s->busy, o->s->lane, o->s->cls, o->s->count, o->s->row};
  for (size_t q = 0; q < sizeof cols / sizeof *cols; q++)
    if (nsl_column_reserve(cols[q], cap, NULL) != NSL_OK) return -1;
  o->cap = cap;
  o->x0 = nsl_f64(o->s->x0), o->x1 = nsl_f64(o->s->x1), o->busy = nsl_f64(o->s->busy);
  o->lane = nsl_i64(o->s->lane), o->cls = nsl_i64(o->s->cls), o->count = nsl_i64(o->s->count);
  o->row = nsl_i64(o->s->row);
  return 0;
}

/* Writes the open span of slot q (lane q / (ncls + 1)); -1 on out of memory. */
static int span_flush(span_out *o, const open_span *sp, int64_t q, int64_t ncls) {
  if (o->k == o->cap && span_out_reserve(o, o->cap * 2) != 0) return -1;
  int64_t k = o->k++;
  o->x0[k] = sp->x0, o->x1[k] = sp->x1, o->busy[k] = sp->busy;
  o->lane[k] = q / (ncls + 1), o->cls[k] = sp->cls, o->count[k] = sp->count, o->row[k] = sp->row;
  return 0;
}

/* The merge itself over the rows in order p (SP_PERM on the fast path;
 * else p not NULL), or in table order, where it checks that the rows are
 * in x order within every lane (last: one slot per lane, -inf) and gives
 * up at the first that is not.  Returns 0, 1 when it gave up, -1 on out of
 * memory. */
SPAN_INLINE int sp_merge(const span_in *in_, int mode, int64_t n, const int64_t *p, double *last, open_span *st,
                         int64_t ncls, double tol, double max_len, span_out *out) {
  const span_in loc = *in_, *in = &loc;   /* a local copy: its pointers stay in registers across the stores */
  const int fast = mode & SP_FAST, perm = fast ? (mode & SP_PERM) != 0 : p != NULL;
  const int64_t origin = in->o.origin, nc1 = ncls + 1;   /* in locals: the stores below cannot change them */
  const double scale = in->o.scale, offset = in->o.offset;
  /* int64 times map to finite x unless the scale is huge: then no row needs the check */
  const int finite = fast && isfinite(73786976294838206464.0 * scale + 2 * fabs(offset));   /* 2^66: room for rounding */
  const uint8_t *mk = in->mk;
  for (int64_t j = 0; j < n; j++) {
    int64_t i = perm ? p[j] : j, l = sp_lane(in, mode, i);
    if (l < 0) continue;
    double a, b;
    if (fast) {
      int64_t r0 = in->X0[i];
      if (r0 == NSL_NULL_I64) continue;   /* NaN: neither in the order check nor drawn */
      if (!perm) {   /* the order check, on the raw x0 as before any transform */
        double v = (double)r0;
        if (v < last[l]) return 1;
        last[l] = v;
      }
      a = sp_map(r0, origin, scale, offset), b = sp_map(in->X1[i], origin, scale, offset);
    } else {
      if (mk && !mk[i]) continue;
      if (!perm) {
        double v = sp_raw0(in, mode, i);
        if (v < last[l]) return 1;
        if (v == v) last[l] = v;
      }
      a = xform_at(in->x0, i, &in->o), b = xform_at(in->x1, i, &in->o);
    }
    if (!(a <= b) || (!finite && (isinf(a) || isinf(b)))) continue;
    int64_t c = sp_cls(in, mode, i);
    int64_t q = l * nc1 + (c == NSL_NULL_I64 ? ncls : c);
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
      if (span_flush(out, s, q, ncls) != 0) return -1;
    }
    *s = (open_span){a, b, b - a, c, 1, i};
  }
  return 0;
}

/* sp_scan and sp_merge for each mode of the fast path (the merge also over
 * sorted rows), and the generic ones. */
#define SP_MODES(X) X(0) X(1) X(3) X(5) X(7) X(9) X(11)
#define SP_DEFINE(m)                                                                                                \
  static nsl_status sp_scan_##m(const span_in *in, int64_t n, int64_t *mx, int64_t *ncls, nsl_error *err) {       \
    return sp_scan(in, m, n, mx, ncls, err);                                                                      \
  }                                                                                                               \
  static int sp_merge_##m(const span_in *in, int64_t n, const int64_t *p, double *last, open_span *st,            \
                          int64_t ncls, double tol, double max_len, span_out *out) {                              \
    return sp_merge(in, m, n, p, last, st, ncls, tol, max_len, out);                                              \
  }                                                                                                               \
  static int sp_merge_p##m(const span_in *in, int64_t n, const int64_t *p, double *last, open_span *st,           \
                           int64_t ncls, double tol, double max_len, span_out *out) {                             \
    return sp_merge(in, m ? m | SP_PERM : 0, n, p, last, st, ncls, tol, max_len, out);                            \
  }
SP_MODES(SP_DEFINE)
#undef SP_DEFINE

typedef nsl_status (*sp_scan_fn)(const span_in *, int64_t, int64_t *, int64_t *, nsl_error *);
typedef int (*sp_merge_fn)(const span_in *, int64_t, const int64_t *, double *, open_span *, int64_t, double,
                           double, span_out *);

nsl_status nsl__spans_merge(const nsl_column *x0, const nsl_column *x1, const nsl_column *lane,
                           const nsl_column *cls, const nsl__span_opts *opts, nsl__spans *out, nsl_error *err) {
  const char *what = "span merge";
  nsl__span_opts o = NSL_SPAN_OPTS_INIT;
  if (opts) o = *opts;
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  memset(out, 0, sizeof *out);
  if (!num_col(x0) || !num_col(x1) || !int_col(lane) || (cls && !int_col(cls) && cls->type != NSL_BOOL))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: x0 and x1 must be numeric columns, lane and class integer ones",
                         what);
  int64_t n = x0->len;
  if (x1->len != n || lane->len != n || (cls && cls->len != n))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: columns of %lld, %lld, %lld and %lld rows", what, (long long)n,
                         (long long)x1->len, (long long)lane->len, (long long)(cls ? cls->len : n));
  if (o.mask && (o.mask->type != NSL_BOOL || o.mask->len != n))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the mask must be a bool column of %lld rows", what, (long long)n);
  if (!(o.tol >= 0) || isinf(o.tol) || isnan(o.max_len))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the tolerance must be a finite number >= 0", what);
  if (o.scale == 0) o.scale = 1;
  if (!(o.scale > 0) || isinf(o.scale) || !isfinite(o.offset))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the scale must be positive and finite, the offset finite", what);
  double tol = o.tol, max_len = o.max_len > 0 ? o.max_len : INFINITY;
  span_in in = {x0, x1, lane, cls, NULL, NULL, NULL, NULL, NULL, NULL, NULL, o.mask ? nsl_bool(o.mask) : NULL, o};
  int mode = 0;
  if (x0->type == NSL_I64 && x1->type == NSL_I64 && !o.mask) {   /* lanes and classes: integer columns (checked) */
    mode = SP_FAST | (lane->type == NSL_I32 ? SP_L32 : 0) | (cls && cls->type == NSL_I32 ? SP_C32 : 0) |
           (cls && cls->type == NSL_BOOL ? SP_C8 : 0);
    in.X0 = nsl_i64(x0), in.X1 = nsl_i64(x1);
    if (mode & SP_L32) in.L32 = nsl_i32(lane);
    else in.L = nsl_i64(lane);
    if (mode & SP_C32) in.C32 = nsl_i32(cls);
    else if (mode & SP_C8) in.C8 = nsl_bool(cls);
    else if (cls) in.C = nsl_i64(cls);
  }
  sp_scan_fn scan = sp_scan_0;
  sp_merge_fn merge = sp_merge_0, merge_sorted = sp_merge_p0;
#define SP_PICK(m)                                                                                                  \
  if (mode == m) scan = sp_scan_##m, merge = sp_merge_##m, merge_sorted = sp_merge_p##m;
  SP_MODES(SP_PICK)
#undef SP_PICK
  int64_t mx = -1, ncls = 0;
  nsl_status rc = scan(&in, n, &mx, &ncls, err);
  if (rc != NSL_OK) return rc;
  if (mx >= n + NSL_SPANS_EXTRA_LANES)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: id %lld is not below %lld (ids must be dense)", what,
                         (long long)mx, (long long)(n + NSL_SPANS_EXTRA_LANES));
  int64_t nslots = (mx + 1) * (ncls + 1);
  if (nslots > ((int64_t)1 << 26))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: %lld lanes x %lld classes is too many", what, (long long)(mx + 1),
                         (long long)(ncls + 1));
  open_span *st = malloc((size_t)(nslots > 0 ? nslots : 1) * sizeof *st);
  double *last = malloc((size_t)(mx + 1 > 0 ? mx + 1 : 1) * sizeof *last);
  nsl_column *perm = NULL;
  span_out so = {out, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  out->x0 = nsl_column_new(NSL_F64, 0, NULL);
  out->x1 = nsl_column_new(NSL_F64, 0, NULL);
  out->busy = nsl_column_new(NSL_F64, 0, NULL);
  out->lane = nsl_column_new(NSL_I64, 0, NULL);
  out->cls = nsl_column_new(NSL_I64, 0, NULL);
  out->count = nsl_column_new(NSL_I64, 0, NULL);
  out->row = nsl_column_new(NSL_I64, 0, NULL);
  if (!st || !last || !out->x0 || !out->x1 || !out->busy || !out->lane || !out->cls || !out->count || !out->row ||
      span_out_reserve(&so, 1024) != 0)
    goto nomem;
  for (int64_t l = 0; l <= mx; l++) last[l] = -INFINITY;
  for (int64_t q = 0; q < nslots; q++) st[q].count = 0;
  int r = merge(&in, n, NULL, last, st, ncls, tol, max_len, &so);   /* in table order, if the rows are in x order */
  if (r > 0) {   /* they are not: by x, from the start */
    if (!(perm = nsl_argsort(&x0, NULL, 1, err))) goto fail;
    so.k = 0;
    for (int64_t q = 0; q < nslots; q++) st[q].count = 0;
    r = merge_sorted(&in, n, nsl_i64(perm), last, st, ncls, tol, max_len, &so);
  }
  if (r < 0) goto nomem;
  for (int64_t q = 0; q < nslots; q++)   /* the spans still open */
    if (st[q].count > 0 && span_flush(&so, &st[q], q, ncls) != 0) goto nomem;
  nsl_column *cols[] = {out->x0, out->x1, out->busy, out->lane, out->cls, out->count, out->row};
  for (size_t q = 0; q < sizeof cols / sizeof *cols; q++) nsl_column_set_len(cols[q], so.k);
  free(st);
  free(last);
  nsl_column_release(perm);
  return NSL_OK;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows and %lld lanes", what, (long long)n,
                (long long)(mx + 1));
fail:
  free(st);
  free(last);
  nsl_column_release(perm);
  nsl__spans_free(out);
  return err ? err->code : NSL_ERR_NOMEM;
}
