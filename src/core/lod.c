/* lod.c -- the level of detail of a timeline (see lod.h): per lane, the
 * events sorted by start with three running sums over that order -- the
 * latest stop so far (what still runs at a time), the time each event adds
 * to the union of those before it (so the covered time before any t is a
 * difference and one correction) and, per class, the positions and
 * durations of that class's events (the class that fills a column) -- so a
 * column of any width costs a few binary searches, not its events.
 *
 * The build runs on the threads (nsl__rows_per_part decides how many): the
 * rows are cut into pieces, each piece counts its rows per lane and then
 * writes them where the pieces before it end, so every lane holds its rows
 * in input order whatever the number of threads; then the lanes are sorted
 * and summed, a lane per job. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/lod.h"
#include "core/parallel.h"

struct nsl_lod {
  int64_t nlanes, n, nrows;   /* lanes; events indexed; input rows */
  int64_t *off;               /* nlanes + 1: lane l holds positions [off[l], off[l + 1]) */
  int64_t *start, *stop;      /* per position, by lane then start */
  int64_t *maxstop;           /* latest stop of the lane's positions up to and including this one */
  int64_t *cum;               /* n + nlanes: lane g's union sums at cum + off[g] + g, m + 1 of them for
                               * its m positions: entry j is the ns its first j positions cover */
  int64_t *row;               /* per position: the input row */
  uint8_t *cls;               /* per position: class */
  uint16_t *lane_classes;     /* per lane: bit k set when class k occurs */
  int nclasses;               /* 1 + the largest class present */
  /* per class k with nclasses > 1: the positions of its events (ascending) and the running
   * sum of their durations (kn[k] + 1 entries) */
  int64_t *kpos[NSL_LOD_CLASSES], *kcum[NSL_LOD_CLASSES], kn[NSL_LOD_CLASSES];
};

/* Frees every array of l and l itself (NULL is fine). */
void nsl_lod_free(nsl_lod *l) {
  if (!l) return;
  free(l->off);
  free(l->start);
  free(l->stop);
  free(l->maxstop);
  free(l->cum);
  free(l->row);
  free(l->cls);
  free(l->lane_classes);
  for (int k = 0; k < NSL_LOD_CLASSES; k++) {
    free(l->kpos[k]);
    free(l->kcum[k]);
  }
  free(l);
}

/* Allocates the per-position arrays of n positions and the lane offsets. */
static nsl_lod *lod_alloc(int64_t nlanes, int64_t n, int64_t nrows) {
  nsl_lod *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->nlanes = nlanes, l->n = n, l->nrows = nrows;
  size_t m = (size_t)(n ? n : 1);
  l->off = calloc((size_t)nlanes + 1, sizeof *l->off);
  l->start = malloc(m * sizeof *l->start);
  l->stop = malloc(m * sizeof *l->stop);
  l->maxstop = malloc(m * sizeof *l->maxstop);
  l->cum = malloc((m + (size_t)nlanes) * sizeof *l->cum);
  l->row = malloc(m * sizeof *l->row);
  l->cls = malloc(m);
  l->lane_classes = calloc((size_t)nlanes + 1, sizeof *l->lane_classes);
  if (!l->off || !l->start || !l->stop || !l->maxstop || !l->cum || !l->row || !l->cls || !l->lane_classes) {
    nsl_lod_free(l);
    return NULL;
  }
  return l;
}

/* Lane g's maxstop, union sums and classes present. */
static void lane_finish(nsl_lod *l, int64_t g) {
  int64_t m = INT64_MIN, a = l->off[g], *cum = l->cum + a + g;
  uint16_t bits = 0;
  cum[0] = 0;
  for (int64_t p = a; p < l->off[g + 1]; p++) {
    int64_t from = l->start[p] > m ? l->start[p] : m;   /* what p adds past the union so far */
    cum[p - a + 1] = cum[p - a] + (l->stop[p] > from ? l->stop[p] - from : 0);
    if (l->stop[p] > m) m = l->stop[p];
    l->maxstop[p] = m;
    bits |= (uint16_t)(1u << l->cls[p]);
  }
  l->lane_classes[g] = bits;
}

static void finish_job(void *ctx, int i) { lane_finish(ctx, i); }

/* Fills maxstop, cum, lane_classes and the per-class arrays from start,
 * stop, cls and off (the lanes on the threads).  0 on out of memory. */
static int lod_finish(nsl_lod *l) {
  if (nsl__rows_per_part(l->n) < l->n && l->nlanes > 1 && l->nlanes <= INT32_MAX)
    nsl__run_parallel((int)l->nlanes, nsl__thread_count((int)l->nlanes), finish_job, l);
  else
    for (int64_t g = 0; g < l->nlanes; g++) lane_finish(l, g);
  uint16_t all = 0;
  for (int64_t g = 0; g < l->nlanes; g++) all |= l->lane_classes[g];
  int nclasses = all ? 32 - __builtin_clz((unsigned)all) : 0;   /* 1 + the largest class present */
  l->nclasses = nclasses;
  if (nclasses <= 1) return 1;
  for (int64_t p = 0; p < l->n; p++) l->kn[l->cls[p]]++;
  for (int k = 0; k < nclasses; k++) {
    l->kpos[k] = malloc((size_t)(l->kn[k] ? l->kn[k] : 1) * sizeof(int64_t));
    l->kcum[k] = malloc((size_t)(l->kn[k] + 1) * sizeof(int64_t));
    if (!l->kpos[k] || !l->kcum[k]) return 0;
    l->kcum[k][0] = 0;
    l->kn[k] = 0;
  }
  for (int64_t p = 0; p < l->n; p++) {
    int k = l->cls[p];
    int64_t j = l->kn[k]++;
    l->kpos[k][j] = p;
    l->kcum[k][j + 1] = l->kcum[k][j] + (l->stop[p] - l->start[p]);
  }
  return 1;
}

/* Whether column c is an integer column of length n. */
static int int_col_of(const nsl_column *c, int64_t n) {
  return c && (c->type == NSL_I64 || c->type == NSL_I32) && c->len == n;
}

/* Rows [lo, hi) of one part of the input: a piece of the build's work. */
typedef struct lod_piece {
  int part;
  int64_t lo, hi;
  int64_t first;   /* the input row of the part's row lo (rows number on from one part to the next) */
} lod_piece;

typedef struct lod_job {
  const nsl_column *const *start, *const *stop, *const *lane, *const *cls;
  int64_t nlanes;
  const lod_piece *pieces;
  int shared;       /* one counter per lane for all pieces (run in order on one thread) */
  int64_t *count;   /* per piece (or shared): its rows per lane (pass 1), then where its next one goes (pass 2) */
  int64_t *taken;   /* per piece: rows that take part */
  nsl_lod *l;
  atomic_int failed;
} lod_job;

/* One part's columns as a piece reads them: data and types in locals, so
 * the loops over its rows test no column's type in memory (the stores of
 * the lanes' arrays could alias it). */
typedef struct part_cols {
  const void *s, *e, *g, *c;
  nsl_type ts, te, tg, tc;   /* (tc unused without a class column) */
} part_cols;

static inline int64_t value_at(const void *data, nsl_type t, int64_t i, int *null) {
  switch (t) {
  case NSL_I64: {
    int64_t x = ((const int64_t *)data)[i];
    *null = x == NSL_NULL_I64;
    return x;
  }
  default: {   /* NSL_I32 (int_col_of) */
    int32_t x = ((const int32_t *)data)[i];
    *null = x == NSL_NULL_I32;
    return x;
  }
  }
}

static part_cols cols_of(const lod_job *j, int k) {
  part_cols p = {j->start[k]->data, j->stop[k]->data, j->lane[k]->data, NULL,
                 j->start[k]->type, j->stop[k]->type, j->lane[k]->type, NSL_I64};
  if (j->cls && j->cls[k]) p.c = j->cls[k]->data, p.tc = j->cls[k]->type;
  return p;
}

/* Row i of a part: its lane, or -1 when it takes no part (a NULL, a lane
 * outside, stop < start, a class outside); *s, *e, *c its start, stop and
 * class. */
static inline int64_t row_lane(const part_cols *p, int64_t nlanes, int64_t i, int64_t *s, int64_t *e, int64_t *c) {
  int ns, ne, nl, nc = 0;
  *s = value_at(p->s, p->ts, i, &ns);
  *e = value_at(p->e, p->te, i, &ne);
  int64_t g = value_at(p->g, p->tg, i, &nl);
  *c = p->c ? value_at(p->c, p->tc, i, &nc) : 0;
  if (ns || ne || nl || nc || g < 0 || g >= nlanes || *e < *s || *c < 0 || *c >= NSL_LOD_CLASSES) return -1;
  return g;
}

/* Runs the statements after `pc, p, nlanes` for every row r of piece pc
 * of a part read through p, with g its lane (-1 when it takes no part, as
 * row_lane says), s, e and c its start, stop and class.  Where starts and
 * stops are I64, lanes I32 or I64 and there is no class (the common case:
 * nsl view's), the rows are read straight from the arrays, without a type
 * test per value (a NULL lane is below zero: NSL_NULL_I32 and NSL_NULL_I64
 * are the types' least values); else through row_lane. */
#define FOR_ROWS_TYPED(T, pc, p, nlanes, ...)                                                          \
  do {                                                                                                \
    const int64_t *S_ = (p).s, *E_ = (p).e;                                                            \
    const T *G_ = (p).g;                                                                               \
    for (int64_t r = (pc)->lo; r < (pc)->hi; r++) {                                                    \
      int64_t s = S_[r], e = E_[r], c = 0;                                                             \
      int64_t g = s == NSL_NULL_I64 || e == NSL_NULL_I64 || G_[r] < 0 || (int64_t)G_[r] >= (nlanes) || \
                          e < s                                                                        \
                      ? -1                                                                             \
                      : (int64_t)G_[r];                                                                \
      __VA_ARGS__                                                                                      \
    }                                                                                                  \
  } while (0)
#define FOR_ROWS(pc, p, nlanes, ...)                                                                   \
  do {                                                                                                \
    int plain_ = (p).ts == NSL_I64 && (p).te == NSL_I64 && !(p).c;                                     \
    if (plain_ && (p).tg == NSL_I32) FOR_ROWS_TYPED(int32_t, pc, p, nlanes, __VA_ARGS__);              \
    else if (plain_ && (p).tg == NSL_I64) FOR_ROWS_TYPED(int64_t, pc, p, nlanes, __VA_ARGS__);         \
    else                                                                                               \
      for (int64_t r = (pc)->lo; r < (pc)->hi; r++) {                                                  \
        int64_t s, e, c, g = row_lane(&(p), nlanes, r, &s, &e, &c);                                    \
        __VA_ARGS__                                                                                    \
      }                                                                                                \
  } while (0)

/* Pass 1 over piece i: its rows per lane. */
static void count_piece(void *ctx, int i) {
  lod_job *j = ctx;
  const lod_piece *pc = &j->pieces[i];
  const part_cols p = cols_of(j, pc->part);
  int64_t *cnt = j->count + (j->shared ? 0 : (int64_t)i * j->nlanes), n = 0, nlanes = j->nlanes;
  FOR_ROWS(pc, p, nlanes, (void)s; (void)e; (void)c; if (g >= 0) cnt[g]++, n++;);
  j->taken[i] = n;
}

/* Pass 2 over piece i: its rows into their lanes, in input order. */
static void place_piece(void *ctx, int i) {
  lod_job *j = ctx;
  const lod_piece *pc = &j->pieces[i];
  const part_cols p = cols_of(j, pc->part);
  int64_t *at = j->count + (j->shared ? 0 : (int64_t)i * j->nlanes), nlanes = j->nlanes;
  int64_t *start = j->l->start, *stop = j->l->stop, *row = j->l->row, first = pc->first - pc->lo;
  uint8_t *cls = j->l->cls;
  FOR_ROWS(pc, p, nlanes, if (g < 0) continue; int64_t q = at[g]++;
           start[q] = s, stop[q] = e, row[q] = first + r, cls[q] = (uint8_t)c;);
}
#undef FOR_ROWS
#undef FOR_ROWS_TYPED

/* Lane g's positions [a, b) in order of start (then of position, as the
 * rows came): nothing when they are; a merge of the ascending runs when
 * there are at most MERGE_RUNS of them (the rows of a few tables put one
 * after the other: kernels, then copies, then memsets of one stream); else
 * a stable radix sort of (start, position).  0 on out of memory. */
enum { MERGE_RUNS = 8 };
static int sort_lane(nsl_lod *l, int64_t a, int64_t b) {
  int64_t run[MERGE_RUNS + 1], nruns = 1, lo = INT64_MAX, hi = INT64_MIN;
  run[0] = a;
  for (int64_t p = a; p < b; p++) {
    if (p > a && l->start[p] < l->start[p - 1]) {
      if (nruns < MERGE_RUNS) run[nruns] = p;
      nruns++;
    }
    if (l->start[p] < lo) lo = l->start[p];
    if (l->start[p] > hi) hi = l->start[p];
  }
  if (nruns == 1) return 1;
  int64_t m = b - a;
  int64_t *s2 = malloc((size_t)m * sizeof *s2), *e2 = malloc((size_t)m * sizeof *e2);
  int64_t *r2 = malloc((size_t)m * sizeof *r2);
  uint8_t *c2 = malloc((size_t)m);
  nsl__kv *kv = NULL, *tmp = NULL;
  int ok = s2 && e2 && r2 && c2;
  if (ok && nruns <= MERGE_RUNS) {
    int64_t head[MERGE_RUNS];
    run[nruns] = b;
    for (int k = 0; k < nruns; k++) head[k] = run[k];
    for (int64_t j = 0; j < m; j++) {
      int best = -1;   /* the least start at a head; of equal ones the earliest run's (its positions come first) */
      for (int k = 0; k < nruns; k++)
        if (head[k] < run[k + 1] && (best < 0 || l->start[head[k]] < l->start[head[best]])) best = k;
      int64_t p = head[best]++;
      s2[j] = l->start[p], e2[j] = l->stop[p], r2[j] = l->row[p], c2[j] = l->cls[p];
    }
  } else if (ok) {
    kv = malloc((size_t)m * sizeof *kv), tmp = malloc((size_t)m * sizeof *tmp);
    if ((ok = kv && tmp)) {
      for (int64_t j = 0; j < m; j++) kv[j].k = (uint64_t)(l->start[a + j] - lo), kv[j].v = a + j;
      nsl__kv *res = nsl__radix_kv(kv, tmp, m, nsl__bitwidth((uint64_t)(hi - lo)));
      for (int64_t j = 0; j < m; j++) {
        int64_t p = res[j].v;
        s2[j] = l->start[p], e2[j] = l->stop[p], r2[j] = l->row[p], c2[j] = l->cls[p];
      }
    }
  }
  if (ok) {
    memcpy(l->start + a, s2, (size_t)m * sizeof *s2);
    memcpy(l->stop + a, e2, (size_t)m * sizeof *e2);
    memcpy(l->row + a, r2, (size_t)m * sizeof *r2);
    memcpy(l->cls + a, c2, (size_t)m);
  }
  free(kv), free(tmp), free(s2), free(e2), free(r2), free(c2);
  return ok;
}

static void sort_job(void *ctx, int g) {
  lod_job *j = ctx;
  if (!sort_lane(j->l, j->l->off[g], j->l->off[g + 1])) atomic_store(&j->failed, 1);
}

nsl_lod *nsl_lod_build_parts(const nsl_column *const *start, const nsl_column *const *stop,
                             const nsl_column *const *lane, const nsl_column *const *cls, int nparts, int64_t nlanes,
                             nsl_error *err) {
  int64_t nrows = 0;
  int ok = nparts >= 1 && start && stop && lane;
  for (int k = 0; ok && k < nparts; k++) {
    ok = start[k] && int_col_of(start[k], start[k]->len) && int_col_of(stop[k], start[k]->len) &&
         int_col_of(lane[k], start[k]->len) && (!cls || !cls[k] || int_col_of(cls[k], start[k]->len)) &&
         (!cls || (cls[k] != NULL) == (cls[0] != NULL));
    if (ok) nrows += start[k]->len;
  }
  if (!ok) {
    nsl_error_set(err, NSL_ERR_ARG,
                  "lod: start, stop, lane (and class) must be integer columns of one length in each part");
    return NULL;
  }
  if (nlanes < 0 || nlanes > ((int64_t)1 << 31)) {
    nsl_error_set(err, NSL_ERR_ARG, "lod: %lld lanes (0 to 2^31 allowed)", (long long)nlanes);
    return NULL;
  }
  /* the pieces: on the threads (as nsl__run_rows would run all the rows), each part cut into pieces of a
   * quarter of a thread's rows, with counters per piece and lane while they stay few beside the rows; else
   * (one thread) one set of counters for all, the pieces in order */
  int64_t per = nsl__rows_per_part(nrows), npieces = 0;
  int parallel = per < nrows, shared = !parallel;
  if (parallel) per = per / 4 > 65536 ? per / 4 : 65536;   /* four pieces a thread: parts of unequal lengths even out */
  for (int k = 0; k < nparts; k++) npieces += start[k]->len ? (start[k]->len + per - 1) / per : 0;
  shared = shared || npieces > 4096 || npieces * (nlanes + 1) > (nrows / 8 > (1 << 17) ? nrows / 8 : (1 << 17));
  lod_piece *pieces = malloc((size_t)(npieces ? npieces : 1) * sizeof *pieces);
  int64_t *count = calloc((size_t)(shared ? 1 : npieces) * (size_t)(nlanes + 1), sizeof *count);
  int64_t *taken = calloc((size_t)(npieces ? npieces : 1), sizeof *taken);
  nsl_lod *l = NULL;
  lod_job job = {start, stop, lane, cls, nlanes, pieces, shared, count, taken, NULL, 0};
  if (!pieces || !count || !taken) goto nomem;
  int np = 0;
  int64_t first = 0;
  for (int k = 0; k < nparts; k++) {
    for (int64_t lo = 0; lo < start[k]->len; lo += per)
      pieces[np++] = (lod_piece){k, lo, lo + per < start[k]->len ? lo + per : start[k]->len, first + lo};
    first += start[k]->len;
  }
  int threads = shared ? 1 : nsl__thread_count(np);
  /* pass 1: which rows take part, and how many per lane */
  if (threads > 1) nsl__run_parallel(np, threads, count_piece, &job);
  else
    for (int i = 0; i < np; i++) count_piece(&job, i);
  int64_t n = 0;
  for (int i = 0; i < np; i++) n += taken[i];
  if (!(l = lod_alloc(nlanes, n, nrows))) goto nomem;
  job.l = l;
  /* each lane's place, and within it each piece's (its rows follow those of the pieces before it) */
  for (int64_t g = 0; g < nlanes; g++) {
    int64_t at = l->off[g];
    for (int i = 0; i < (shared ? 1 : np); i++) {
      int64_t c = count[(int64_t)i * nlanes + g];
      count[(int64_t)i * nlanes + g] = at;
      at += c;
    }
    l->off[g + 1] = at;
  }
  /* pass 2: the rows into their lanes, in input order (a counting sort) */
  if (threads > 1) nsl__run_parallel(np, threads, place_piece, &job);
  else
    for (int i = 0; i < np; i++) place_piece(&job, i);
  free(count), free(taken), free(pieces);
  count = taken = NULL, pieces = NULL;
  /* lanes not in start order sorted, a lane per job */
  if (parallel && nlanes > 1 && nlanes <= INT32_MAX)
    nsl__run_parallel((int)nlanes, nsl__thread_count((int)nlanes), sort_job, &job);
  else
    for (int64_t g = 0; g < nlanes; g++) sort_job(&job, (int)g);
  if (atomic_load(&job.failed) || !lod_finish(l)) goto nomem;
  return l;
nomem:
  free(count), free(taken), free(pieces);
  nsl_lod_free(l);
  nsl_error_set(err, NSL_ERR_NOMEM, "lod: out of memory for %lld rows", (long long)nrows);
  return NULL;
}

nsl_lod *nsl_lod_build(const nsl_column *start, const nsl_column *stop, const nsl_column *lane,
                       const nsl_column *cls, int64_t nlanes, nsl_error *err) {
  return nsl_lod_build_parts(&start, &stop, &lane, cls ? &cls : NULL, 1, nlanes, err);
}

nsl_lod *nsl_lod_filter(const nsl_lod *l, const nsl_column *mask, nsl_error *err) {
  if (!mask || mask->type != NSL_BOOL || mask->len != l->nrows) {
    nsl_error_set(err, NSL_ERR_ARG, "lod filter: the mask must be a bool column of %lld rows", (long long)l->nrows);
    return NULL;
  }
  const uint8_t *mk = nsl_bool(mask);
  int64_t n = 0;
  for (int64_t p = 0; p < l->n; p++) n += mk[l->row[p]] != 0;
  nsl_lod *f = lod_alloc(l->nlanes, n, l->nrows);
  if (!f) {
    nsl_error_set(err, NSL_ERR_NOMEM, "lod filter: out of memory for %lld rows", (long long)n);
    return NULL;
  }
  int64_t q = 0;
  for (int64_t g = 0; g < l->nlanes; g++) {
    f->off[g] = q;
    for (int64_t p = l->off[g]; p < l->off[g + 1]; p++) {
      if (!mk[l->row[p]]) continue;
      f->start[q] = l->start[p], f->stop[q] = l->stop[p], f->row[q] = l->row[p], f->cls[q] = l->cls[p];
      q++;
    }
  }
  f->off[l->nlanes] = q;
  if (!lod_finish(f)) {
    nsl_lod_free(f);
    nsl_error_set(err, NSL_ERR_NOMEM, "lod filter: out of memory for %lld rows", (long long)n);
    return NULL;
  }
  return f;
}

int64_t nsl_lod_nlanes(const nsl_lod *l) { return l->nlanes; }
int64_t nsl_lod_nrows(const nsl_lod *l) { return l->nrows; }
int64_t nsl_lod_count(const nsl_lod *l, int64_t lane) {
  return lane < 0 || lane >= l->nlanes ? 0 : l->off[lane + 1] - l->off[lane];
}

size_t nsl_lod_bytes(const nsl_lod *l) {
  size_t b = sizeof *l + (size_t)(l->nlanes + 1) * (sizeof *l->off + sizeof *l->lane_classes) +
             (size_t)l->n * (5 * sizeof(int64_t) + 1) + (size_t)l->nlanes * sizeof(int64_t);
  for (int k = 0; k < NSL_LOD_CLASSES; k++)
    if (l->kpos[k]) b += (size_t)(2 * l->kn[k] + 1) * sizeof(int64_t);
  return b;
}

int nsl_lod_extent(const nsl_lod *l, int64_t lane, int64_t *lo, int64_t *hi) {
  int64_t a = 0, b = l->nlanes;
  if (lane >= 0) {
    if (lane >= l->nlanes) return 0;
    a = lane, b = lane + 1;
  }
  int any = 0;
  for (int64_t g = a; g < b; g++) {
    int64_t p0 = l->off[g], p1 = l->off[g + 1];
    if (p0 == p1) continue;
    if (!any || l->start[p0] < *lo) *lo = l->start[p0];
    if (!any || l->maxstop[p1 - 1] > *hi) *hi = l->maxstop[p1 - 1];
    any = 1;
  }
  return any;
}

/* The first position in [a, b) whose start is >= t (b when none). */
static inline int64_t lower_bound(const int64_t *s, int64_t a, int64_t b, int64_t t) {
  while (a < b) {
    int64_t m = a + (b - a) / 2;
    if (s[m] < t) a = m + 1;
    else b = m;
  }
  return a;
}

/* lower_bound searched from a outward (steps of 1, 2, 4, ...), then
 * bisected: O(log d) for an answer d places past a, as a column's events
 * are a few places past the previous column's. */
static inline int64_t gallop_bound(const int64_t *s, int64_t a, int64_t b, int64_t t) {
  int64_t lo = a, hi = a, step = 1;
  while (hi < b && s[hi] < t) {   /* s[lo - 1] < t throughout */
    lo = hi + 1;
    hi = lo + step;
    step *= 2;
  }
  return lower_bound(s, lo, hi < b ? hi : b, t);
}

/* The first position in [a, b) of the sorted array v whose value is >= t. */
#define first_at_least lower_bound

/* Time of class k in positions [i0, i1) (whole durations) plus their number. */
static int64_t class_time(const nsl_lod *l, int k, int64_t i0, int64_t i1) {
  const int64_t *pos = l->kpos[k];
  int64_t a = first_at_least(pos, 0, l->kn[k], i0), b = first_at_least(pos, a, l->kn[k], i1);
  return l->kcum[k][b] - l->kcum[k][a] + (b - a);
}

/* Clipped length of position p inside [t0, t1). */
static inline int64_t clipped(const nsl_lod *l, int64_t p, int64_t t0, int64_t t1) {
  int64_t s = l->start[p] > t0 ? l->start[p] : t0, e = l->stop[p] < t1 ? l->stop[p] : t1;
  return e > s ? e - s : 0;
}

/* Subtracts from per (by class) the time past t1 of the events at
 * positions [i0, i1), which start before t1: in a lane of serial events
 * only the last to start can run past, or several starting together
 * (instants beside it); the walk back stops at 64 events. */
static void overhang(const nsl_lod *l, int64_t i0, int64_t i1, int64_t t1, int64_t *per) {
  for (int64_t p = i1 - 1, steps = 0; p >= i0 && steps < 64; p--, steps++) {
    if (l->stop[p] > t1) per[l->cls[p]] -= l->stop[p] - t1;
    else if (l->start[p] != l->start[i1 - 1]) break;
  }
}

/* The class with the most time of lane g in column [t0, t1): events at
 * positions [i0, i1) start in it, carry (or -1) runs into it.  An event
 * starting in the column counts 1 ns more (so instants count).  Exact for
 * serial events; with many overlapping ones, those running past the
 * column but the last count whole. */
static int32_t column_class(const nsl_lod *l, int64_t g, int64_t i0, int64_t i1, int64_t carry, int64_t t0,
                            int64_t t1) {
  uint16_t bits = l->lane_classes[g];
  if (bits == 0) return -1;
  if ((bits & (bits - 1)) == 0) return __builtin_ctz(bits);   /* one class in the lane */
  int64_t per[NSL_LOD_CLASSES] = {0};
  if (carry >= 0) per[l->cls[carry]] += clipped(l, carry, t0, t1);
  if (i1 - i0 <= 32) {
    for (int64_t p = i0; p < i1; p++) per[l->cls[p]] += clipped(l, p, t0, t1) + 1;   /* +1: instants count */
  } else {
    for (int k = 0; k < l->nclasses; k++)
      if (bits & (1u << k)) per[k] += class_time(l, k, i0, i1);
    overhang(l, i0, i1, t1, per);
  }
  int32_t best = -1;
  for (int k = 0; k < l->nclasses; k++)
    if (per[k] > 0 && (best < 0 || per[k] > per[best])) best = k;
  return best;
}

/* The ns before t covered by the union of lane [a, b)'s events (cum: the
 * lane's union sums), given i, the first position of the lane starting at
 * or after t: the union of the events before i, less its part past t --
 * which is [t, maxstop), as the event that stops latest started before t. */
static inline int64_t covered_before(const nsl_lod *l, const int64_t *cum, int64_t a, int64_t i, int64_t t) {
  int64_t u = cum[i - a];
  if (i > a && l->maxstop[i - 1] > t) u -= l->maxstop[i - 1] - t;
  return u;
}

/* Edge b of ncols equal columns of [from, from + span). */
static inline int64_t edge(int64_t from, int64_t span, int64_t ncols, int64_t b) {
  __extension__ __int128 p = (__int128)span * b;
  return from + (int64_t)(p / ncols);
}

/* The arguments of a query (what: its name in a message): a lane of l, a
 * window [from, to) of at least 1 ns, 1 to 2^20 columns. */
static nsl_status check_window(const nsl_lod *l, const char *what, int64_t lane, int64_t from, int64_t to,
                               int64_t ncols, nsl_error *err) {
  if (lane < 0 || lane >= l->nlanes)
    return nsl_error_set(err, NSL_ERR_ARG, "lod %s: lane %lld outside 0..%lld", what, (long long)lane,
                         (long long)l->nlanes - 1);
  if (to <= from || (from < 0 && to > INT64_MAX + from))
    return nsl_error_set(err, NSL_ERR_ARG, "lod %s: the window [%lld, %lld) is empty or too wide", what,
                         (long long)from, (long long)to);
  if (ncols < 1 || ncols > (1 << 20))
    return nsl_error_set(err, NSL_ERR_ARG, "lod %s: %lld columns (1 to 2^20 allowed)", what, (long long)ncols);
  return NSL_OK;
}

nsl_status nsl_lod_query(const nsl_lod *l, int64_t lane, int64_t from, int64_t to, int64_t ncols,
                         nsl_lod_cell *cells, nsl_error *err) {
  nsl_status rc = check_window(l, "query", lane, from, to, ncols, err);
  if (rc != NSL_OK) return rc;
  int64_t a = l->off[lane], b = l->off[lane + 1], span = to - from;
  const int64_t *cum = l->cum + a + lane;
  int64_t i0 = lower_bound(l->start, a, b, from);
  int narrow = span <= INT64_MAX / ncols;   /* span * c fits in 64 bits: the edges without 128-bit division */
  int64_t t1 = from;
  for (int64_t c = 0; c < ncols; c++) {
    int64_t t0 = t1;   /* (column c begins where c - 1 ends) */
    t1 = narrow ? from + span * (c + 1) / ncols : edge(from, span, ncols, c + 1);
    nsl_lod_cell *cell = &cells[c];
    int64_t i1 = gallop_bound(l->start, i0, b, t1 > t0 ? t1 : t0 + 1);
    if (t1 <= t0) {   /* more columns than ns: an empty column */
      cell->count = 0, cell->starts = 0, cell->busy = 0, cell->row = -1, cell->cls = -1;
      continue;
    }
    /* an earlier event still running at t0: the one before i0 when the lane's events do not overlap,
     * else the latest-starting one of those that do (a short walk back) */
    int64_t carry = -1;
    if (i0 > a && l->maxstop[i0 - 1] > t0) {
      int64_t p = i0 - 1;
      for (int steps = 0; p >= a && l->stop[p] <= t0 && steps < 64; p--, steps++) {}
      carry = p >= a && l->stop[p] > t0 ? p : i0 - 1;
    }
    cell->count = i1 - i0 + (carry >= 0);
    cell->starts = i1 - i0;
    cell->busy = covered_before(l, cum, a, i1, t1) - covered_before(l, cum, a, i0, t0);
    cell->row = carry >= 0 ? l->row[carry] : i1 > i0 ? l->row[i0] : -1;
    cell->cls = cell->count ? column_class(l, lane, i0, i1, carry, t0, t1) : -1;
    i0 = i1;
  }
  return NSL_OK;
}

/* Columns [c0, c1) of nsl_lod_bins. */
typedef struct bins_job {
  const nsl_lod *l;
  int64_t lane, from, to, ncols, per;
  int64_t *busy, *starts;
} bins_job;

static void bins_range(const bins_job *j, int64_t c0, int64_t c1) {
  const nsl_lod *l = j->l;
  int64_t a = l->off[j->lane], b = l->off[j->lane + 1], from = j->from, span = j->to - from, ncols = j->ncols;
  const int64_t *cum = l->cum + a + j->lane;
  int narrow = span <= INT64_MAX / ncols;
  int64_t t1 = narrow ? from + span * c0 / ncols : edge(from, span, ncols, c0);
  int64_t i0 = lower_bound(l->start, a, b, t1);
  for (int64_t c = c0; c < c1; c++) {
    int64_t t0 = t1;
    t1 = narrow ? from + span * (c + 1) / ncols : edge(from, span, ncols, c + 1);
    if (t1 <= t0) {   /* more columns than ns: an empty column */
      j->busy[c] = 0, j->starts[c] = 0;
      continue;
    }
    int64_t i1 = gallop_bound(l->start, i0, b, t1);
    j->starts[c] = i1 - i0;
    j->busy[c] = covered_before(l, cum, a, i1, t1) - covered_before(l, cum, a, i0, t0);
    i0 = i1;
  }
}

static void bins_part(void *ctx, int k) {
  const bins_job *j = ctx;
  int64_t c0 = j->per * k, c1 = c0 + j->per < j->ncols ? c0 + j->per : j->ncols;
  if (c0 < c1) bins_range(j, c0, c1);
}

nsl_status nsl_lod_bins(const nsl_lod *l, int64_t lane, int64_t from, int64_t to, int64_t ncols, int64_t *busy,
                        int64_t *starts, nsl_error *err) {
  nsl_status rc = check_window(l, "bins", lane, from, to, ncols, err);
  if (rc != NSL_OK) return rc;
  bins_job j = {l, lane, from, to, ncols, ncols, busy, starts};
  /* a column costs a search over the lane's events, not a row: the columns are cut for the threads from
   * 2^16 of them on (the finer levels of nsl view's), each part searching its first column afresh */
  int parts = ncols >= ((int64_t)1 << 16) ? nsl__threads_here() : 1;
  if (parts > 1) {
    j.per = (ncols + parts - 1) / parts;
    nsl__run_parallel(parts, parts, bins_part, &j);
  } else
    bins_range(&j, 0, ncols);
  return NSL_OK;
}

int64_t nsl_lod_at(const nsl_lod *l, int64_t lane, int64_t t) {
  if (lane < 0 || lane >= l->nlanes || t == INT64_MAX) return -1;
  int64_t a = l->off[lane], b = l->off[lane + 1];
  int64_t p = lower_bound(l->start, a, b, t + 1) - 1;   /* the last to start at or before t */
  for (; p >= a && l->maxstop[p] > t; p--)
    if (l->stop[p] > t) return l->row[p];
  return -1;
}

int64_t nsl_lod_step(const nsl_lod *l, int64_t lane, int64_t t, int dir) {
  if (lane < 0 || lane >= l->nlanes) return -1;
  int64_t a = l->off[lane], b = l->off[lane + 1];
  if (dir > 0) {
    if (t == INT64_MAX) return -1;
    int64_t p = lower_bound(l->start, a, b, t + 1);
    return p < b ? l->row[p] : -1;
  }
  int64_t p = lower_bound(l->start, a, b, t) - 1;
  return p >= a ? l->row[p] : -1;
}
