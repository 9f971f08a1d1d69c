/* intervals.c -- interval algebra over half-open [start, stop) int64 ns:
 * union of unsorted intervals (radix sort by start, then one sweep), per
 * group busy time, intersection, difference, gaps, and coverage of
 * intervals by a set.  Sets (nsl_intervals) are sorted and disjoint; the
 * set operations check that and say so when an input is not. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/parallel.h"

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

nsl_status nsl_iv_union(const nsl_column *start, const nsl_column *stop, const nsl_column *mask,
                        nsl_intervals *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "interval union: no output");
  memset(out, 0, sizeof *out);
  nsl_status rc = check_rows("interval union", start, stop, mask, err);
  if (rc != NSL_OK) return rc;
  int64_t n = start->len, m = 0, lo = INT64_MAX, hi = INT64_MIN;
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  nsl__kv *a = nsl__big_alloc((size_t)n * sizeof *a), *tmp = NULL;
  if (!a)
    return nsl_error_set(err, NSL_ERR_NOMEM, "interval union: out of memory for %lld rows", (long long)n);
  int sorted = 1;
  for (int64_t i = 0; i < n; i++) {   /* the non-empty intervals, as (start, stop) */
    int64_t s, e;
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
  int64_t k = 0;   /* merge in place into r */
  for (int64_t i = 0; i < m; i++) {
    int64_t s = (int64_t)r[i].k, e = r[i].v;
    if (k > 0 && s <= r[k - 1].v) {
      if (e > r[k - 1].v) r[k - 1].v = e;
    } else r[k++] = (nsl__kv){(uint64_t)s, e};
  }
  rc = set_alloc(out, k, "interval union", err);
  if (rc == NSL_OK) {
    for (int64_t i = 0; i < k; i++) {
      out->start[i] = (int64_t)r[i].k;
      out->stop[i] = r[i].v;
    }
    out->n = k;
  }
  nsl__big_free(a);
  nsl__big_free(tmp);
  return rc;
}

/* Union by group through a general argsort on (group, start): for keys too
 * wide to pack into one word. */
static nsl_status union_grouped_sorted(const nsl_column *start, const nsl_column *stop,
                                       const nsl_column *group_of, const nsl_column *mask, int64_t *busy,
                                       nsl_error *err) {
  const nsl_column *keys[2] = {group_of, start};
  nsl_column *perm = nsl_argsort(keys, NULL, 2, err);
  if (!perm) return err ? err->code : NSL_ERR_NOMEM;
  const int64_t *p = nsl_i64(perm), *go = nsl_i64(group_of);
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  int64_t cur_g = -1, cs = 0, ce = 0;
  for (int64_t q = 0; q < perm->len; q++) {
    int64_t i = p[q], g = go[i], s, e;
    if (g < 0 || (mk && !mk[i]) || !row_interval(start, stop, i, &s, &e) || s >= e) continue;
    if (g != cur_g || s > ce) {
      if (cur_g >= 0) busy[cur_g] += ce - cs;
      cur_g = g;
      cs = s;
      ce = e;
    } else if (e > ce) ce = e;
  }
  if (cur_g >= 0) busy[cur_g] += ce - cs;
  nsl_column_release(perm);
  return NSL_OK;
}

/* ---- union by group over runs -------------------------------------------------- */

/* An interval of the run path: start, stop. */
typedef struct iv_pair {
  int64_t s, e;
} iv_pair;

/* x[0..n) sorted by start where it ascends in runs (a few tables, each in time order, one after the other):
 * neighbouring runs merged pairwise until one is left; y is scratch of n. */
static void merge_runs(iv_pair *x, iv_pair *y, int64_t n) {
  for (;;) {
    int64_t i = 0, runs = 0;
    while (i < n) {
      int64_t a0 = i++;
      while (i < n && x[i].s >= x[i - 1].s) i++;
      int64_t a1 = i;
      if (i < n) i++;
      while (i < n && x[i].s >= x[i - 1].s) i++;
      int64_t p = a0, q = a1, o = a0;   /* [a0, a1) and [a1, i) into y[a0, i) */
      while (p < a1 && q < i) y[o++] = x[q].s < x[p].s ? x[q++] : x[p++];
      while (p < a1) y[o++] = x[p++];
      while (q < i) y[o++] = x[q++];
      runs++;
    }
    memcpy(x, y, (size_t)n * sizeof *x);
    if (runs <= 1) return;
  }
}

/* The run path's work, shared by its parts: the rows, each part's counts
 * and then places per group (part k's at cnt[k * ngroups ..]), the groups'
 * ends, the rows in group order (x) and the merges' scratch (y). */
typedef struct runs_job {
  const nsl_column *start, *stop;
  const int64_t *s64, *e64, *go;
  const uint8_t *mk;
  int64_t n, ngroups, per, *cnt, *off, *busy;
  int64_t gparts, *gfrom;   /* the group ranges of the last passes: [gfrom[j], gfrom[j + 1]) */
  iv_pair *x, *y;
  _Atomic int64_t descents;
} runs_job;

/* Whether row i counts (in a group, not masked out, neither end NULL, not empty), and its ends: start and
 * stop read straight when they are I64, as they mostly are. */
static inline int run_row(const runs_job *r, int64_t i, int64_t *s, int64_t *e) {
  if (r->go[i] < 0 || (r->mk && !r->mk[i])) return 0;
  if (r->s64) {
    *s = r->s64[i];
    *e = r->e64[i];
    if (*s == NSL_NULL_I64 || *e == NSL_NULL_I64) return 0;
  } else if (!row_interval(r->start, r->stop, i, s, e))
    return 0;
  return *s < *e;
}

static void runs_count(void *ctx, int64_t lo, int64_t hi) {
  runs_job *r = ctx;
  int64_t *c = r->cnt + lo / r->per * r->ngroups, s, e;
  for (int64_t i = lo; i < hi; i++)
    if (run_row(r, i, &s, &e)) c[r->go[i]]++;
}

static void runs_scatter(void *ctx, int64_t lo, int64_t hi) {
  runs_job *r = ctx;
  int64_t *at = r->cnt + lo / r->per * r->ngroups, s, e;
  for (int64_t i = lo; i < hi; i++)
    if (run_row(r, i, &s, &e)) r->x[at[r->go[i]]++] = (iv_pair){s, e};
}

static void runs_descents(void *ctx, int j) {
  runs_job *r = ctx;
  int64_t d = 0, from = r->gfrom[j] ? r->off[r->gfrom[j] - 1] : 0;
  for (int64_t g = r->gfrom[j]; g < r->gfrom[j + 1]; from = r->off[g++])
    for (int64_t i = from + 1; i < r->off[g]; i++) d += r->x[i].s < r->x[i - 1].s;
  r->descents += d;
}

static void runs_sweep(void *ctx, int j) {
  runs_job *r = ctx;
  int64_t from = r->gfrom[j] ? r->off[r->gfrom[j] - 1] : 0;
  for (int64_t g = r->gfrom[j]; g < r->gfrom[j + 1]; from = r->off[g++]) {
    int64_t len = r->off[g] - from;
    if (len == 0) continue;
    iv_pair *x = r->x + from;
    for (int64_t i = 1; i < len; i++)
      if (x[i].s < x[i - 1].s) {
        merge_runs(x, r->y + from, len);
        break;
      }
    int64_t cs = x[0].s, ce = x[0].e, t = 0;
    for (int64_t i = 1; i < len; i++) {
      if (x[i].s > ce) {
        t += ce - cs;
        cs = x[i].s;
        ce = x[i].e;
      } else if (x[i].e > ce) ce = x[i].e;
    }
    r->busy[g] = t + (ce - cs);
  }
}

/* The busy time of each group through a stable counting sort of the rows
 * that count by group (each part of the rows counted and scattered on a
 * thread of its own), each group's rows then in their order, whose runs of
 * ascending start are merged, the groups swept in ranges of about equal
 * rows on the threads: O(n) plus O(n log runs) for rows that come as a few
 * tables in time order one after the other (a GPU's kernels, copies and
 * memsets), against a radix sort of every row on (group, start).  0 when
 * the groups are too many for the counts or the rows descend more often
 * than one in 64 (the caller then sorts them); -1 out of memory. */
static int union_grouped_runs(const nsl_column *start, const nsl_column *stop, const int64_t *go,
                              const uint8_t *mk, int64_t ngroups, int64_t *busy) {
  int64_t n = start->len, per = nsl__rows_per_part(n), parts = (n + per - 1) / per;
  if (n == 0 || ngroups <= 0 || ngroups * parts > n / 4) return 0;
  runs_job r = {.start = start, .stop = stop, .go = go, .mk = mk, .n = n, .ngroups = ngroups, .per = per,
                .busy = busy};
  if (start->type == NSL_I64 && stop->type == NSL_I64) {
    r.s64 = nsl_i64(start);
    r.e64 = nsl_i64(stop);
  }
  int rc = -1;
  r.cnt = nsl__big_calloc((size_t)(ngroups * parts), sizeof *r.cnt);
  r.off = nsl__big_alloc((size_t)ngroups * sizeof *r.off);
  r.x = nsl__big_alloc((size_t)n * sizeof *r.x);
  int threads = nsl__thread_count((int)(ngroups < 64 ? ngroups : 64));
  r.gfrom = calloc((size_t)threads + 1, sizeof *r.gfrom);
  if (!r.cnt || !r.off || !r.x || !r.gfrom) goto done;
  nsl__run_rows(n, runs_count, &r);
  int64_t m = 0;   /* each part's first place in each group, in part order; each group's end */
  for (int64_t g = 0; g < ngroups; g++) {
    for (int64_t k = 0; k < parts; k++) {
      int64_t c = r.cnt[k * ngroups + g];
      r.cnt[k * ngroups + g] = m;
      m += c;
    }
    r.off[g] = m;
  }
  nsl__run_rows(n, runs_scatter, &r);
  r.gparts = 0;   /* the groups cut into ranges of about m / threads rows */
  for (int64_t g = 0; g < ngroups && r.gparts < threads; g++)
    if (r.off[g] >= m * (r.gparts + 1) / threads || g == ngroups - 1) r.gfrom[++r.gparts] = g + 1;
  r.gfrom[r.gparts] = ngroups;
  nsl__run_parallel((int)r.gparts, threads, runs_descents, &r);
  rc = 0;
  if (r.descents > m / 64) goto done;
  if (r.descents && !(r.y = nsl__big_alloc((size_t)m * sizeof *r.y))) {
    rc = -1;
    goto done;
  }
  nsl__run_parallel((int)r.gparts, threads, runs_sweep, &r);
  rc = 1;
done:
  nsl__big_free(r.cnt);
  nsl__big_free(r.off);
  nsl__big_free(r.x);
  nsl__big_free(r.y);
  free(r.gfrom);
  return rc;
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
  int64_t n = start->len, m = 0, lo = INT64_MAX, hi = INT64_MIN;
  const int64_t *go = nsl_i64(group_of);
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  for (int64_t i = 0; i < n; i++)
    if (go[i] >= ngroups) {
      nsl_error_set(err, NSL_ERR_ARG, "%s: row %lld is in group %lld of %lld", what, (long long)i,
                    (long long)go[i], (long long)ngroups);
      return NULL;
    }
  nsl__kv *a = NULL, *tmp = NULL;
  nsl_column *res = nsl_column_new(NSL_I64, ngroups, NULL);
  if (!res) goto nomem;
  int64_t *busy = nsl_i64(res);
  int runs = union_grouped_runs(start, stop, go, mk, ngroups, busy);   /* few groups, rows in time order */
  if (runs < 0) goto nomem;
  if (runs) return res;
  if (!(a = nsl__big_alloc((size_t)n * sizeof *a))) goto nomem;
  for (int64_t i = 0; i < n; i++) {
    int64_t s, e;
    if (go[i] < 0 || (mk && !mk[i]) || !row_interval(start, stop, i, &s, &e) || s >= e) continue;
    if (s < lo) lo = s;
    if (s > hi) hi = s;
    a[m++] = (nsl__kv){(uint64_t)s, i};
  }
  if (m == 0) goto done;
  int sb = nsl__bitwidth((uint64_t)hi - (uint64_t)lo), gb = nsl__bitwidth((uint64_t)(ngroups - 1));
  if (sb + gb > 64) {   /* too wide for one word: the general path */
    nsl__big_free(a);
    a = NULL;
    if (union_grouped_sorted(start, stop, group_of, mask, busy, err) != NSL_OK) goto fail;
    goto done;
  }
  for (int64_t i = 0; i < m; i++) {   /* key: group, then start - lo; value: stop */
    int64_t row = a[i].v;
    a[i].k = ((gb ? (uint64_t)go[row] << sb : 0) | (a[i].k - (uint64_t)lo));
    int64_t s, e;
    row_interval(start, stop, row, &s, &e);
    a[i].v = e;
  }
  if (!(tmp = nsl__big_alloc((size_t)m * sizeof *tmp))) goto nomem;
  nsl__kv *r = nsl__radix_kv(a, tmp, m, sb + gb);
  uint64_t smask = sb >= 64 ? ~0ull : (1ull << sb) - 1;
  int64_t cur_g = -1, cs = 0, ce = 0;
  for (int64_t i = 0; i < m; i++) {
    int64_t g = gb ? (int64_t)(r[i].k >> sb) : 0;
    int64_t s = (int64_t)((r[i].k & smask) + (uint64_t)lo), e = r[i].v;
    if (g != cur_g || s > ce) {
      if (cur_g >= 0) busy[cur_g] += ce - cs;
      cur_g = g;
      cs = s;
      ce = e;
    } else if (e > ce) ce = e;
  }
  busy[cur_g] += ce - cs;
done:
  nsl__big_free(a);
  nsl__big_free(tmp);
  return res;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
fail:
  nsl__big_free(a);
  nsl__big_free(tmp);
  nsl_column_release(res);
  return NULL;
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
