/* aggregate.c -- per-group aggregates: nsl_group_aggs (several at once) and
 * nsl_group_agg (one).
 *
 * The aggregates asked of one grouping are planned per value column.  One
 * pass over the rows gives every group's count, sum (int128 for integers,
 * compensated for doubles) and least and greatest order code
 * (kernels_internal.h); quantiles, distinct counts and, with them, standard
 * deviations read one copy of the column's order codes laid out group after
 * group (a counting sort that keeps row order within each group).  So the
 * seven aggregates of nvtx_sum over one column cost two passes over the
 * rows, not seven.
 *
 * The work runs on nsl__thread_count threads in three stages: (1) the
 * per-column passes, cut into row chunks whose partial counts, integer
 * sums and extremes merge exactly (a double sum is one chunk: compensated
 * sums depend on their order); (2) the scatter of codes by chunk (each
 * chunk writes its own part of every group) and the row pass of deviations
 * for columns without codes; (3) quantiles, distinct counts and deviations
 * over ranges of groups.  Results are the same bits as one thread gives. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"

#define BLOCK 1024
#define MAX_CHUNKS 8

__extension__ typedef __int128 i128;

/* ---- checks ------------------------------------------------------------------- */

static const char *agg_name(nsl_agg a) {
  static const char *const names[] = {"count", "sum",      "min",   "max",  "mean",          "median",
                                      "quantile", "std", "first", "last", "count_distinct"};
  return (unsigned)a < sizeof names / sizeof *names ? names[a] : "?";
}

static int is_quantile(nsl_agg a) { return a == NSL_AGG_MEDIAN || a == NSL_AGG_QUANTILE; }

/* Checks the shape of one aggregate: a value column as long as the groups. */
static nsl_status check_shape(const nsl_groups *g, const nsl_column *v, nsl_agg agg, nsl_error *err) {
  const char *an = agg_name(agg);
  if (!v || (unsigned)v->type > NSL_BOOL || (unsigned)agg > NSL_AGG_COUNT_DISTINCT)
    return nsl_error_set(err, NSL_ERR_ARG, "group %s: needs groups and a value column", an);
  if (g->group_of->len != v->len)
    return nsl_error_set(err, NSL_ERR_ARG, "group %s: %lld values for %lld grouped rows", an, (long long)v->len,
                         (long long)g->group_of->len);
  return NSL_OK;
}

/* Checks that the aggregate is defined on its column; *q becomes the
 * quantile it asks for. */
static nsl_status check_kind(const nsl_column *v, nsl_agg agg, double *q, nsl_error *err) {
  int numeric_only = agg == NSL_AGG_SUM || agg == NSL_AGG_MEAN || is_quantile(agg) || agg == NSL_AGG_STD;
  if (numeric_only && v->type == NSL_STR)
    return nsl_error_set(err, NSL_ERR_ARG, "group %s: not defined on a string column", agg_name(agg));
  if (agg == NSL_AGG_MEDIAN) *q = 0.5;
  if (agg == NSL_AGG_QUANTILE && !(*q >= 0 && *q <= 1))
    return nsl_error_set(err, NSL_ERR_ARG, "group quantile: q = %g is not in [0, 1]", *q);
  return NSL_OK;
}

/* ---- plans: what one value column needs ------------------------------------------- */

typedef struct quant_out {
  double q;
  double *out;          /* one per group */
} quant_out;

/* One group's partial results in one chunk of rows: one cache line to
 * touch per row. */
typedef struct gstat {
  i128 isum;          /* integer sum */
  int64_t count;      /* non-NULL values */
  uint64_t lo, hi;    /* least / greatest order code (hi 0: none) */
} gstat;

typedef struct plan {
  const nsl_column *v;
  int fp;                     /* F64: compensated sums */
  int want_sum;               /* sums (SUM, MEAN, STD) */
  int want_minmax;
  int want_codes;             /* codes by group (quantiles, distinct counts) */
  int want_distinct;
  int std;                    /* a STD is asked */
  int std_sq;                 /* integers: sums of squares in stage 1, deviations from them (nsl__std_moments) */
  int std_codes;              /* deviations from the codes (row order kept) instead of a row pass */
  int nchunks;
  int64_t bound[MAX_CHUNKS + 1];
  gstat *st[MAX_CHUNKS];      /* per chunk and group; st[0] holds the totals after the merge */
  i128 *sq[MAX_CHUNKS];       /* std_sq: sums of squares per chunk and group (exact while count * max|x| < 2^63) */
  int64_t *cur[MAX_CHUNKS];   /* per chunk and group: where its next code goes */
  double *fsum, *comp;        /* F64 sums, one chunk */
  uint64_t *ranks;            /* STR min/max: nsl__str_ranks */
  double *mean;               /* means (SUM, MEAN, STD) */
  double *sd;                 /* standard deviations */
  uint64_t *codes;            /* group g's codes at codes[off[g] .. off[g+1]) */
  int64_t *off;
  quant_out *qs;
  int nq;
  int64_t *distinct;          /* distinct counts, NULL when not asked */
} plan;

static void plan_free(plan *p) {
  for (int c = 0; c < MAX_CHUNKS; c++) {
    nsl__big_free(p->st[c]);
    nsl__big_free(p->sq[c]);
    nsl__big_free(p->cur[c]);
  }
  nsl__big_free(p->fsum);
  nsl__big_free(p->comp);
  free(p->ranks);
  nsl__big_free(p->mean);
  nsl__big_free(p->codes);
  nsl__big_free(p->off);
  for (int j = 0; j < p->nq && p->qs; j++) free(p->qs[j].out);
  free(p->qs);
  free(p->sd);
  free(p->distinct);
  memset(p, 0, sizeof *p);
}

/* A FIRST or LAST aggregate: the row of each group's value. */
typedef struct pick {
  const nsl_column *v;
  int last;
  int64_t *rows;
} pick;

typedef struct agg_run {
  const int64_t *go;
  int64_t n, ng;
  plan *plans;
  int nplans;
  pick *picks;
  int npicks;
  atomic_int failed;   /* out of memory in a task */
} agg_run;

/* ---- stage 1: counts, sums and extremes of one chunk of rows ------------------------ */

/* The row loop of stats_chunk over an integer column of element type T:
 * NULL when x == null; one copy per combination of asked parts, so the
 * loop carries no test of them. */
#define INT_STATS(T, null, code)                                                                     \
  do {                                                                                             \
    const T *x = (const T *)v->data;                                                               \
    if (p->std_sq)                                                                                 \
      INT_STATS_ROWS(T, null, code, e->isum += y; sq[g] += (i128)y * y; STATS_MINMAX(code(y)))     \
    else if (isum && minmax)                                                                       \
      INT_STATS_ROWS(T, null, code, e->isum += y; STATS_MINMAX(code(y)))                           \
    else if (isum)                                                                                 \
      INT_STATS_ROWS(T, null, code, e->isum += y)                                                  \
    else if (minmax)                                                                               \
      INT_STATS_ROWS(T, null, code, STATS_MINMAX(code(y)))                                         \
    else                                                                                           \
      INT_STATS_ROWS(T, null, code, (void)0)                                                       \
  } while (0)
#define INT_STATS_ROWS(T, null, code, more)                                                          \
  for (int64_t i = r0; i < r1; i++) {                                                              \
    int64_t g = go[i];                                                                             \
    T y = x[i];                                                                                    \
    if (g < 0 || y == (null)) continue;                                                            \
    gstat *e = &st[g];                                                                             \
    e->count++;                                                                                    \
    more;                                                                                          \
  }
#define STATS_MINMAX(u_)                                                                             \
  do {                                                                                             \
    uint64_t u = (u_);                                                                             \
    if (u < e->lo) e->lo = u;                                                                      \
    if (u > e->hi) e->hi = u;                                                                      \
  } while (0)

/* Adds rows [r0, r1) of chunk c of p to its partial results. */
static void stats_rows(const agg_run *r, plan *p, int c, int64_t r0, int64_t r1) {
  const int64_t *go = r->go;
  const nsl_column *v = p->v;
  gstat *st = p->st[c];
  i128 *sq = p->sq[c];
  int isum = p->want_sum && !p->fp, minmax = p->want_minmax;
  if (v->type == NSL_I64) {   /* the common cases, straight over the column */
    INT_STATS(int64_t, NSL_NULL_I64, nsl__ocode_i64);
    return;
  }
  if (v->type == NSL_I32) {
    INT_STATS(int32_t, NSL_NULL_I32, nsl__ocode_i32);
    return;
  }
  if (v->type == NSL_BOOL && !minmax && !p->std_sq) {   /* counts and sums of a mask (never NULL) */
    const uint8_t *x = nsl_bool(v);
    for (int64_t i = r0; i < r1; i++) {
      int64_t g = go[i];
      if (g < 0) continue;
      st[g].count++;
      if (isum) st[g].isum += x[i];
    }
    return;
  }
  uint64_t buf[BLOCK];
  for (int64_t b = r0; b < r1; b += BLOCK) {
    int64_t m = r1 - b < BLOCK ? r1 - b : BLOCK;
    if (minmax) nsl__order_codes(v, NULL, b, m, p->ranks, buf);
    for (int64_t i = 0; i < m; i++) {
      int64_t g = go[b + i], row = b + i;
      if (g < 0) continue;
      gstat *e = &st[g];
      if (v->type == NSL_F64) {
        double y = nsl_f64(v)[row];
        if (isnan(y)) continue;
        e->count++;
        if (p->fsum) {
          double a = p->fsum[g], t = a + y;
          p->comp[g] += fabs(a) >= fabs(y) ? (a - t) + y : (y - t) + a;
          p->fsum[g] = t;
        }
      } else {
        int null;
        int64_t y = nsl__int_at(v, row, &null);
        if (null) continue;
        e->count++;
        if (isum) e->isum += y;
      }
      if (minmax && buf[i]) {
        if (buf[i] < e->lo) e->lo = buf[i];
        if (buf[i] > e->hi) e->hi = buf[i];
      }
    }
  }
}

#undef INT_STATS
#undef INT_STATS_ROWS
#undef STATS_MINMAX

/* Chunk c of every plan cut into nchunks chunks, a block of rows at a time:
 * the plans share one read of the group ids (which stay in cache). */
static void stats_chunk(const agg_run *r, int nchunks, int c) {
  enum { ROWS = 8192 };
  int64_t r0 = r->n * c / nchunks, r1 = r->n * (c + 1) / nchunks;
  for (int64_t b = r0; b < r1; b += ROWS)
    for (int pi = 0; pi < r->nplans; pi++)
      if (r->plans[pi].nchunks == nchunks)
        stats_rows(r, &r->plans[pi], c, b, r1 - b < ROWS ? r1 : b + ROWS);
}

/* ---- stage 2: codes by group, deviations by rows ---------------------------------- */

/* Writes chunk c's codes at its cursors. */
static void scatter_chunk(const agg_run *r, plan *p, int c) {
  const int64_t *go = r->go;
  int64_t r0 = p->bound[c], r1 = p->bound[c + 1], *cur = p->cur[c];
  uint64_t *codes = p->codes;
  if (p->v->type == NSL_I64) {
    const int64_t *x = nsl_i64(p->v);
    for (int64_t i = r0; i < r1; i++) {
      int64_t g = go[i];
      if (g >= 0 && x[i] != NSL_NULL_I64) codes[cur[g]++] = nsl__ocode_i64(x[i]);
    }
    return;
  }
  uint64_t buf[BLOCK];
  for (int64_t b = r0; b < r1; b += BLOCK) {
    int64_t m = r1 - b < BLOCK ? r1 - b : BLOCK;
    nsl__order_codes(p->v, NULL, b, m, NULL, buf);
    for (int64_t i = 0; i < m; i++)
      if (buf[i] && go[b + i] >= 0) codes[cur[go[b + i]]++] = buf[i];
  }
}

static double std_of(long double ss, int64_t count) {
  return count == 0 ? NAN : count == 1 ? 0.0 : sqrt((double)(ss / (long double)(count - 1)));
}

/* See nsl_internal.h. */
__extension__ double nsl__mean_i128(int64_t count, __int128 sum) {
  return count ? (double)((long double)sum / (long double)count) : NAN;
}

/* See nsl_internal.h. */
int nsl__moments_exact(int64_t count, int64_t lo, int64_t hi) {
  unsigned __int128 a = (unsigned __int128)(lo < 0 ? -(i128)lo : lo), b = (unsigned __int128)(hi < 0 ? -(i128)hi : hi);
  return count >= 0 && (unsigned __int128)count * (a > b ? a : b) < ((unsigned __int128)1 << 63);
}

/* See nsl_internal.h.  The sum of squared deviations from the mean is
 * (count s2 - s1^2) / count; its numerator is exact in 128 bits under
 * nsl__moments_exact (both terms are below 2^126), and rounds once. */
__extension__ double nsl__std_moments(int64_t count, __int128 s1, __int128 s2) {
  if (count <= 1) return count == 1 ? 0.0 : NAN;
  i128 num = (i128)count * s2 - s1 * s1;
  return sqrt((double)((long double)num / ((long double)count * (long double)(count - 1))));
}

/* Sample deviations by a pass over the rows (sums of squared deviations
 * from the means, each group's in row order, in long double). */
static int std_rows(const agg_run *r, plan *p) {
  long double *ss = nsl__big_calloc((size_t)(r->ng ? r->ng : 1), sizeof *ss);
  if (!ss) return -1;
  const nsl_column *v = p->v;
  int fp = p->fp;
  for (int64_t i = 0; i < r->n; i++) {
    int64_t k = r->go[i];
    if (k < 0 || nsl__is_null(v, i)) continue;
    int null;
    long double d = (fp ? (long double)nsl_f64(v)[i] : (long double)nsl__int_at(v, i, &null)) - (long double)p->mean[k];
    ss[k] += d * d;
  }
  for (int64_t k = 0; k < r->ng; k++) p->sd[k] = std_of(ss[k], p->st[0][k].count);
  nsl__big_free(ss);
  return 0;
}

/* ---- stage 3: per group, over its codes -------------------------------------------- */

/* The value of an order code of v's type as the row pass reads it (only for
 * I64, I32 and F64, whose codes give their values back; -0.0 reads as 0.0,
 * which leaves squared deviations as they are). */
static long double code_value(nsl_type t, uint64_t u) {
  if (t == NSL_F64) return (long double)nsl__ocode_to_f64(u);
  return (long double)nsl__ocode_to_i64(u);
}

/* The order statistic at pos of the m order codes a (reordered), and, when
 * frac > 0, interpolated towards the next one (the least above it). */
static double code_quantile_at(nsl_type t, uint64_t *a, int64_t m, int64_t pos, double frac) {
  nsl__select_u64(a, m, pos);
  uint64_t hi = a[pos];
  if (frac > 0) {
    hi = a[pos + 1];
    for (int64_t i = pos + 2; i < m; i++)
      if (a[i] < hi) hi = a[i];
  }
  return nsl__lerp_codes(t, a[pos], hi, frac);
}

/* The quantile q of the m order codes a (reordered) of a column of type t,
 * as a group-by takes it: the order statistic at q * (m - 1) and, between
 * two, the next one (the least above it), interpolated. */
static double code_quantile(nsl_type t, uint64_t *a, int64_t m, double q) {
  double frac;
  int64_t pos = nsl__quantile_pos(m, q, &frac);
  return code_quantile_at(t, a, m, pos, frac);
}

/* The median and quartiles of the m order codes a (reordered), each as
 * code_quantile takes it; the quartiles select only within the half the
 * median's selection left them in (every code before its position is at
 * most, every code after at least, the median's).  The lower quartile goes
 * first: its selection within a[0..mid] may leave another code there, no
 * greater than the median, in the median's place mid, which the upper
 * quartile's window starts with; that changes nothing past the window's
 * first, and the upper quartile is the first only for m <= 3, where mid
 * still holds the median (m = 3: the greater of a two-code window) or every
 * code was selected (m = 2). */
static void code_quartiles(nsl_type t, uint64_t *a, int64_t m, double *med, double *q1, double *q3) {
  double frac;
  int64_t mid = nsl__quantile_pos(m, 0.5, &frac);
  *med = code_quantile(t, a, m, 0.5);
  /* the lower quartile's position and the next (when it interpolates) are within a[0..mid] */
  int64_t p1 = nsl__quantile_pos(m, 0.25, &frac);
  *q1 = p1 + (frac > 0) <= mid ? code_quantile_at(t, a, mid + 1, p1, frac) : code_quantile(t, a, m, 0.25);
  int64_t p3 = nsl__quantile_pos(m, 0.75, &frac);
  *q3 = p3 >= mid ? code_quantile_at(t, a + mid, m - mid, p3 - mid, frac) : code_quantile(t, a, m, 0.75);
}

/* Groups g0..g1-1 of p: deviations (before anything reorders the codes),
 * quantiles, distinct counts.  tmp: scratch for the largest group (distinct
 * counts only). */
static void groups_range(plan *p, int64_t g0, int64_t g1, uint64_t *tmp) {
  nsl_type t = p->v->type;
  for (int64_t k = g0; k < g1; k++) {
    uint64_t *a = p->codes + p->off[k];
    int64_t m = p->off[k + 1] - p->off[k];
    if (p->std_codes) {
      long double ss = 0, mu = (long double)p->mean[k];
      for (int64_t i = 0; i < m; i++) {
        long double d = code_value(t, a[i]) - mu;
        ss += d * d;
      }
      p->sd[k] = std_of(ss, p->st[0][k].count);
    }
    for (int j = 0; j < p->nq; j++) {
      if (m == 0) {
        p->qs[j].out[k] = NAN;
        continue;
      }
      p->qs[j].out[k] = code_quantile(t, a, m, p->qs[j].q);
    }
    if (p->distinct) {
      nsl__sort_u64(a, m, tmp);
      int64_t d = m > 0;
      for (int64_t i = 1; i < m; i++) d += a[i] != a[i - 1];
      p->distinct[k] = d;
    }
  }
}

/* ---- the task lists of the stages ---------------------------------------------------- */

typedef struct task {
  int kind;             /* T_STATS, T_PICK, T_SCATTER, T_STD, T_GROUPS */
  int plan, chunk;      /* T_STATS: plan is the number of chunks of the plans it serves */
  int64_t g0, g1;
} task;

enum { T_STATS, T_PICK, T_SCATTER, T_STD, T_GROUPS };

typedef struct stage {
  agg_run *run;
  task *tasks;
  int n;
} stage;

static void pick_rows(const agg_run *r, pick *k) {
  for (int64_t g = 0; g < r->ng; g++) k->rows[g] = -1;
  for (int64_t i = 0; i < r->n; i++) {
    int64_t g = r->go[i];
    if (g < 0 || nsl__is_null(k->v, i)) continue;
    if (k->last || k->rows[g] < 0) k->rows[g] = i;
  }
}

static void run_task(void *ctx, int i) {
  stage *s = ctx;
  agg_run *r = s->run;
  const task *t = &s->tasks[i];
  plan *p = t->kind == T_PICK || t->kind == T_STATS ? NULL : &r->plans[t->plan];
  switch (t->kind) {
  case T_STATS: stats_chunk(r, t->plan, t->chunk); break;
  case T_PICK: pick_rows(r, &r->picks[t->plan]); break;
  case T_SCATTER: scatter_chunk(r, p, t->chunk); break;
  case T_STD:
    if (std_rows(r, p) != 0) atomic_store(&r->failed, 1);
    break;
  case T_GROUPS: {
    uint64_t *tmp = NULL;
    if (p->distinct) {
      int64_t maxn = 1;
      for (int64_t k = t->g0; k < t->g1; k++)
        if (p->off[k + 1] - p->off[k] > maxn) maxn = p->off[k + 1] - p->off[k];
      if (!(tmp = malloc((size_t)maxn * sizeof *tmp))) {
        atomic_store(&r->failed, 1);
        return;
      }
    }
    groups_range(p, t->g0, t->g1, tmp);
    free(tmp);
    break;
  }
  }
}

static int run_stage(agg_run *r, task *tasks, int n) {
  stage s = {r, tasks, n};
  if (n > 0) nsl__run_parallel(n, nsl__thread_count(n), run_task, &s);
  return atomic_load(&r->failed) ? -1 : 0;
}

/* ---- planning and merging ------------------------------------------------------------ */

/* Allocates what the stages fill for p (0, or -1 on out of memory). */
static int plan_alloc(const agg_run *r, plan *p, int threads) {
  size_t m = (size_t)(r->ng ? r->ng : 1);
  int chunkable = !(p->fp && p->want_sum);   /* compensated sums follow the row order */
  /* chunks only where the partial results per group are small beside the rows */
  p->nchunks = chunkable && threads > 1 && r->n >= (1 << 16) && r->ng <= r->n / 16 ? threads : 1;
  if (p->nchunks > MAX_CHUNKS) p->nchunks = MAX_CHUNKS;
  for (int c = 0; c <= p->nchunks; c++) p->bound[c] = r->n * c / p->nchunks;
  for (int c = 0; c < p->nchunks; c++) {
    if (!(p->st[c] = nsl__big_alloc(m * sizeof *p->st[c]))) return -1;
    for (int64_t g = 0; g < r->ng; g++) p->st[c][g] = (gstat){.lo = UINT64_MAX};
    if (p->std_sq && !(p->sq[c] = nsl__big_calloc(m, sizeof *p->sq[c]))) return -1;
    if (p->want_codes && !(p->cur[c] = nsl__big_alloc(m * sizeof *p->cur[c]))) return -1;
  }
  if (p->want_sum && p->fp &&
      (!(p->fsum = nsl__big_calloc(m, sizeof *p->fsum)) || !(p->comp = nsl__big_calloc(m, sizeof *p->comp))))
    return -1;
  if (p->std && !(p->sd = malloc(m * sizeof *p->sd))) return -1;
  if (p->want_distinct && !(p->distinct = malloc(m * sizeof *p->distinct))) return -1;
  for (int j = 0; j < p->nq; j++)
    if (!(p->qs[j].out = malloc(m * sizeof *p->qs[j].out))) return -1;
  return 0;
}

/* Merges the chunks of p into totals (in st[0]), computes the means, and
 * lays out the codes: offsets per group and each chunk's cursors. */
static int plan_merge(const agg_run *r, plan *p) {
  int64_t ng = r->ng;
  size_t m = (size_t)(ng ? ng : 1);
  gstat *tot = p->st[0];
  if (p->want_codes) {   /* chunk c's codes of group g follow those of chunks before it */
    if (!(p->off = nsl__big_alloc((m + 1) * sizeof *p->off))) return -1;
    p->off[0] = 0;
    for (int64_t g = 0; g < ng; g++) {
      int64_t at = p->off[g];
      for (int c = 0; c < p->nchunks; c++) {
        p->cur[c][g] = at;
        at += p->st[c][g].count;
      }
      p->off[g + 1] = at;
    }
    if (!(p->codes = nsl__big_alloc((size_t)(p->off[ng] ? p->off[ng] : 1) * sizeof *p->codes))) return -1;
  }
  for (int c = 1; c < p->nchunks; c++)
    for (int64_t g = 0; g < ng; g++) {
      const gstat *e = &p->st[c][g];
      tot[g].count += e->count;
      tot[g].isum += e->isum;
      if (p->std_sq) p->sq[0][g] += p->sq[c][g];
      if (e->lo < tot[g].lo) tot[g].lo = e->lo;
      if (e->hi > tot[g].hi) tot[g].hi = e->hi;
    }
  if (p->std_sq) {   /* exact from the moments, else (a value too large) the deviations as for other types */
    int exact = 1;
    for (int64_t g = 0; g < ng && exact; g++)
      exact = !tot[g].hi || nsl__moments_exact(tot[g].count, nsl__ocode_to_i64(tot[g].lo), nsl__ocode_to_i64(tot[g].hi));
    for (int64_t g = 0; g < ng && exact; g++) p->sd[g] = nsl__std_moments(tot[g].count, tot[g].isum, p->sq[0][g]);
    if (!exact) {
      p->std_sq = 0;
      p->std_codes = p->want_codes;
    }
  }
  if (p->want_sum) {
    if (!(p->mean = nsl__big_alloc(m * sizeof *p->mean))) return -1;
    for (int64_t g = 0; g < ng; g++) {
      int64_t c = tot[g].count;
      p->mean[g] = !c      ? NAN
                   : p->fp ? (p->fsum[g] + p->comp[g]) / (double)c
                           : nsl__mean_i128(c, tot[g].isum);
    }
  }
  return 0;
}

/* Cuts p's groups into about `want` ranges of similar numbers of codes and
 * appends a task per range. */
static int group_tasks(const agg_run *r, int pi, const plan *p, int want, task *tasks, int n) {
  int64_t total = p->off[r->ng], per = total / want + 1, g0 = 0, at = 0;
  for (int64_t g = 0; g < r->ng; g++) {
    at += p->off[g + 1] - p->off[g];
    if (at >= per || g == r->ng - 1) {
      tasks[n++] = (task){T_GROUPS, pi, 0, g0, g + 1};
      g0 = g + 1;
      at = 0;
    }
  }
  return n;
}

/* ---- nsl_group_aggs ------------------------------------------------------------------ */

/* The result column of aggregate s from its plan p (FIRST, LAST: pick k;
 * quantiles: the values its stage 3 wrote). */
static nsl_column *spec_result(const agg_run *r, const nsl_agg_spec *s, const plan *p, const pick *k,
                               const double *quantiles, nsl_error *err) {
  int64_t ng = r->ng;
  nsl_column *c = NULL;
  const nsl_column *v = s->values;
  const gstat *tot = p ? p->st[0] : NULL;
  switch (s->agg) {
  case NSL_AGG_COUNT:
    if ((c = nsl_column_new(NSL_I64, ng, NULL)))
      for (int64_t g = 0; g < ng; g++) nsl_i64(c)[g] = tot[g].count;
    break;
  case NSL_AGG_SUM:
    if (!(c = nsl_column_new(p->fp ? NSL_F64 : NSL_I64, ng, NULL))) break;
    for (int64_t g = 0; g < ng; g++) {
      if (p->fp) nsl_f64(c)[g] = tot[g].count ? p->fsum[g] + p->comp[g] : NAN;
      else nsl_i64(c)[g] = tot[g].count ? (int64_t)(uint64_t)tot[g].isum : NSL_NULL_I64;
    }
    break;
  case NSL_AGG_MEAN:
    if ((c = nsl_column_new(NSL_F64, ng, NULL)) && ng) memcpy(c->data, p->mean, (size_t)ng * sizeof *p->mean);
    break;
  case NSL_AGG_STD:
    if ((c = nsl_column_new(NSL_F64, ng, NULL)) && ng) memcpy(c->data, p->sd, (size_t)ng * sizeof *p->sd);
    break;
  case NSL_AGG_MIN:
  case NSL_AGG_MAX: {
    int mx = s->agg == NSL_AGG_MAX;
    int32_t *id_of_rank = NULL;
    if (p->ranks) {
      int32_t nd = nsl_dict_size(v->dict);
      if (!(id_of_rank = malloc((size_t)(nd ? nd : 1) * sizeof *id_of_rank))) break;
      for (int32_t id = 0; id < nd; id++)
        if (p->ranks[id]) id_of_rank[p->ranks[id] - 1] = id;
    }
    if ((c = nsl_column_new(v->type, ng, v->dict)))
      for (int64_t g = 0; g < ng; g++) {
        uint64_t x = !tot[g].hi ? 0 : mx ? tot[g].hi : tot[g].lo;   /* hi 0: no value */
        switch (v->type) {
        case NSL_I64: nsl_i64(c)[g] = nsl__ocode_to_i64(x); break;
        case NSL_I32: nsl_i32(c)[g] = x ? (int32_t)nsl__ocode_to_i64(x) : NSL_NULL_I32; break;
        case NSL_F64: nsl_f64(c)[g] = nsl__ocode_to_f64(x); break;
        case NSL_BOOL: nsl_bool(c)[g] = x ? (uint8_t)(x - 1) : 0; break;
        case NSL_STR: nsl_i32(c)[g] = !x ? -1 : id_of_rank ? id_of_rank[x - 1] : (int32_t)(x - 1); break;
        }
      }
    free(id_of_rank);
    break;
  }
  case NSL_AGG_MEDIAN:
  case NSL_AGG_QUANTILE:
    if ((c = nsl_column_new(NSL_F64, ng, NULL)) && ng) memcpy(c->data, quantiles, (size_t)ng * sizeof *quantiles);
    break;
  case NSL_AGG_COUNT_DISTINCT:
    if ((c = nsl_column_new(NSL_I64, ng, NULL)) && ng) memcpy(c->data, p->distinct, (size_t)ng * sizeof(int64_t));
    break;
  case NSL_AGG_FIRST:
  case NSL_AGG_LAST: {
    nsl_column *rows = nsl_column_new(NSL_I64, ng, NULL);
    if (!rows) break;
    if (ng) memcpy(rows->data, k->rows, (size_t)ng * sizeof *k->rows);
    c = nsl_column_gather(v, rows, err);
    nsl_column_release(rows);
    return c;
  }
  }
  if (!c)
    nsl_error_set(err, NSL_ERR_NOMEM, "group %s: out of memory for %lld groups", agg_name(s->agg), (long long)ng);
  return c;
}

nsl_status nsl_group_aggs(const nsl_groups *g, const nsl_agg_spec *specs, int n, nsl_column **out,
                          nsl_error *err) {
  if (!out || n < 0 || (n > 0 && !specs))
    return nsl_error_set(err, NSL_ERR_ARG, "group aggregates: needs specs and room for the results");
  for (int i = 0; i < n; i++) out[i] = NULL;
  if (n == 0) return NSL_OK;
  const char *an = agg_name(specs[0].agg);
  if (!g || !g->group_of || g->group_of->type != NSL_I64 || g->ngroups < 0)
    return nsl_error_set(err, NSL_ERR_ARG, "group %s: needs groups and a value column", an);
  const int64_t *go = nsl_i64(g->group_of), nrows = g->group_of->len, ng = g->ngroups;
  nsl_status rc = NSL_OK;
  for (int i = 0; i < n && rc == NSL_OK; i++) rc = check_shape(g, specs[i].values, specs[i].agg, err);
  for (int64_t i = 0; i < nrows && !g->checked && rc == NSL_OK; i++)
    if (go[i] >= ng)
      rc = nsl_error_set(err, NSL_ERR_ARG, "group %s: row %lld is in group %lld of %lld", an, (long long)i,
                         (long long)go[i], (long long)ng);
  if (rc != NSL_OK) return rc;

  agg_run r = {go, nrows, ng, NULL, 0, NULL, 0, 0};
  int *slot = malloc((size_t)n * sizeof *slot);   /* spec i: its plan or pick, then its quantile */
  int *qslot = malloc((size_t)n * sizeof *qslot);
  double *q = malloc((size_t)n * sizeof *q);
  r.plans = calloc((size_t)n, sizeof *r.plans);
  r.picks = calloc((size_t)n, sizeof *r.picks);
  task *tasks = NULL;
  int threads = nsl__thread_count(MAX_CHUNKS), nt = 0;
  if (!slot || !qslot || !q || !r.plans || !r.picks) goto nomem;
  for (int i = 0; i < n && rc == NSL_OK; i++) {
    q[i] = specs[i].q;
    rc = check_kind(specs[i].values, specs[i].agg, &q[i], err);
  }
  if (rc != NSL_OK) goto done;

  /* one plan per value column (FIRST and LAST apart) */
  for (int i = 0; i < n; i++) {
    const nsl_agg_spec *s = &specs[i];
    if (s->agg == NSL_AGG_FIRST || s->agg == NSL_AGG_LAST) {
      pick *k = &r.picks[r.npicks];
      slot[i] = r.npicks++;
      *k = (pick){s->values, s->agg == NSL_AGG_LAST, NULL};
      if (!(k->rows = malloc((size_t)(ng ? ng : 1) * sizeof *k->rows))) goto nomem;
      continue;
    }
    int pi = 0;
    while (pi < r.nplans && r.plans[pi].v != s->values) pi++;
    plan *p = &r.plans[pi];
    if (pi == r.nplans) {
      r.nplans++;
      p->v = s->values;
      p->fp = s->values->type == NSL_F64;
      if (!(p->qs = calloc((size_t)n, sizeof *p->qs))) goto nomem;
    }
    slot[i] = pi;
    switch (s->agg) {
    case NSL_AGG_SUM:
    case NSL_AGG_MEAN: p->want_sum = 1; break;
    case NSL_AGG_STD: p->want_sum = p->std = 1; break;
    case NSL_AGG_MIN:
    case NSL_AGG_MAX: p->want_minmax = 1; break;
    case NSL_AGG_MEDIAN:
    case NSL_AGG_QUANTILE:
      p->want_codes = 1;
      qslot[i] = p->nq;
      p->qs[p->nq++].q = q[i];
      break;
    case NSL_AGG_COUNT_DISTINCT: p->want_codes = p->want_distinct = 1; break;
    default: break;
    }
  }
  for (int pi = 0; pi < r.nplans; pi++) {
    plan *p = &r.plans[pi];
    p->std_sq = p->std && (p->v->type == NSL_I64 || p->v->type == NSL_I32);
    p->std_codes = p->std && !p->std_sq && p->want_codes && p->v->type != NSL_BOOL;
    if (p->want_minmax && p->v->type == NSL_STR && p->v->dict && !(p->ranks = nsl__str_ranks(p->v, err))) {
      rc = err ? err->code : NSL_ERR_NOMEM;
      goto done;
    }
    if (plan_alloc(&r, p, threads) != 0) goto nomem;
  }

  /* stage 1: counts, sums, extremes; FIRST and LAST */
  int maxt = r.npicks;
  for (int pi = 0; pi < r.nplans; pi++) maxt += MAX_CHUNKS + 4 * threads + 2;
  if (!(tasks = malloc((size_t)(maxt ? maxt : 1) * sizeof *tasks))) goto nomem;
  int chunking[MAX_CHUNKS + 1] = {0};   /* one task per chunk of each number of chunks */
  for (int pi = 0; pi < r.nplans; pi++) {
    int k = r.plans[pi].nchunks;
    for (int c = 0; c < k && !chunking[k]; c++) tasks[nt++] = (task){T_STATS, k, c, 0, 0};
    chunking[k] = 1;
  }
  for (int k = 0; k < r.npicks; k++) tasks[nt++] = (task){T_PICK, k, 0, 0, 0};
  run_stage(&r, tasks, nt);
  for (int pi = 0; pi < r.nplans; pi++)
    if (plan_merge(&r, &r.plans[pi]) != 0) goto nomem;

  /* stage 2: codes by group; deviations of columns without codes */
  nt = 0;
  for (int pi = 0; pi < r.nplans; pi++) {
    plan *p = &r.plans[pi];
    if (p->want_codes)
      for (int c = 0; c < p->nchunks; c++) tasks[nt++] = (task){T_SCATTER, pi, c, 0, 0};
    if (p->std && !p->std_sq && !p->std_codes) tasks[nt++] = (task){T_STD, pi, 0, 0, 0};
  }
  if (run_stage(&r, tasks, nt) != 0) goto nomem;

  /* stage 3: deviations, quantiles and distinct counts per range of groups */
  nt = 0;
  for (int pi = 0; pi < r.nplans; pi++)
    if (r.plans[pi].want_codes && ng > 0) nt = group_tasks(&r, pi, &r.plans[pi], 4 * threads, tasks, nt);
  if (run_stage(&r, tasks, nt) != 0) goto nomem;

  for (int i = 0; i < n && rc == NSL_OK; i++) {
    int pk = specs[i].agg == NSL_AGG_FIRST || specs[i].agg == NSL_AGG_LAST;
    const plan *p = pk ? NULL : &r.plans[slot[i]];
    out[i] = spec_result(&r, &specs[i], p, pk ? &r.picks[slot[i]] : NULL,
                         p && is_quantile(specs[i].agg) ? p->qs[qslot[i]].out : NULL, err);
    if (!out[i]) rc = err ? err->code : NSL_ERR_NOMEM;
  }
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "group %s: out of memory for %lld rows in %lld groups", an,
                     (long long)nrows, (long long)ng);
done:
  if (rc != NSL_OK)
    for (int i = 0; i < n; i++) {
      nsl_column_release(out[i]);
      out[i] = NULL;
    }
  for (int pi = 0; r.plans && pi < r.nplans; pi++) plan_free(&r.plans[pi]);
  for (int k = 0; r.picks && k < r.npicks; k++) free(r.picks[k].rows);
  free(r.plans);
  free(r.picks);
  free(slot);
  free(qslot);
  free(q);
  free(tasks);
  return rc;
}

nsl_column *nsl_group_agg(const nsl_groups *g, const nsl_column *values, nsl_agg agg, double q,
                          nsl_error *err) {
  nsl_agg_spec s = {values, agg, q};
  nsl_column *c = NULL;
  if (nsl_group_aggs(g, &s, 1, &c, err) != NSL_OK) return NULL;
  return c;
}

/* ---- the agg mini-language ---- */

static const struct {
  const char *name;
  nsl_agg agg;
} agg_names[] = {{"count", NSL_AGG_COUNT},   {"sum", NSL_AGG_SUM},   {"min", NSL_AGG_MIN},
                 {"max", NSL_AGG_MAX},       {"mean", NSL_AGG_MEAN}, {"avg", NSL_AGG_MEAN},
                 {"median", NSL_AGG_MEDIAN}, {"quantile", NSL_AGG_QUANTILE},
                 {"std", NSL_AGG_STD},       {"first", NSL_AGG_FIRST}, {"last", NSL_AGG_LAST},
                 {"count_distinct", NSL_AGG_COUNT_DISTINCT}};

/* Blanks off both ends of p, in place. */
static void trim(char *p) {
  while (*p == ' ') memmove(p, p + 1, strlen(p));
  size_t len = strlen(p);
  while (len > 0 && p[len - 1] == ' ') p[--len] = '\0';
}

nsl_status nsl__agg_parse(const char *s, nsl__agg_item *it, nsl_error *err) {
  memset(it, 0, sizeof *it);
  char fn[128] = "";
  it->q = 0.5;
  const char *eq = strchr(s, '=');
  const char *body = eq ? eq + 1 : s;
  if (eq) snprintf(it->out, sizeof it->out, "%.*s", (int)(eq - s), s);
  const char *paren = strchr(body, '(');
  if (paren) {
    snprintf(fn, sizeof fn, "%.*s", (int)(paren - body), body);
    const char *close = strchr(paren, ')');
    const char *comma = strchr(paren, ',');
    if (!close) return nsl_error_set(err, NSL_ERR_ARG, "agg: missing ')' in '%s'", s);
    const char *colend = comma && comma < close ? comma : close;
    snprintf(it->col, sizeof it->col, "%.*s", (int)(colend - paren - 1), paren + 1);
    if (comma && comma < close) it->q = strtod(comma + 1, NULL);
  } else {
    snprintf(fn, sizeof fn, "%s", body);
  }
  trim(it->out);
  trim(fn);
  trim(it->col);
  int found = -1;
  for (size_t k = 0; k < sizeof agg_names / sizeof *agg_names; k++)
    if (strcmp(fn, agg_names[k].name) == 0) found = (int)k;
  if (found < 0) return nsl_error_set(err, NSL_ERR_ARG, "agg: unknown aggregate '%s' in '%s'", fn, s);
  if (!it->col[0] && agg_names[found].agg != NSL_AGG_COUNT)
    return nsl_error_set(err, NSL_ERR_ARG, "agg: '%s' needs a column, as in %s(dur)", fn, fn);
  if (!it->out[0]) snprintf(it->out, sizeof it->out, "%s%s%s", fn, it->col[0] ? "_" : "", it->col);
  it->agg = agg_names[found].agg;
  return NSL_OK;
}

/* ---- each value against the median of the others in its group ------------------- */

typedef struct ex_pair {
  double f;    /* the value (NaN, NULL, first) */
  int64_t row;
} ex_pair;

static int cmp_ex_f(const void *a, const void *b) {
  const ex_pair *x = a, *y = b;
  int nx = isnan(x->f), ny = isnan(y->f);
  if (nx != ny) return nx ? -1 : 1;
  if (!nx && x->f != y->f) return x->f < y->f ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

/* One group of m rows of an F64 column (p[0..m), sorted by value): out[row]
 * for each. */
static void group_excess_f64(const ex_pair *p, int64_t m, double *out) {
  if (m < 2) {
    if (m == 1) out[p[0].row] = NAN;
    return;
  }
  /* the others of sorted row q are the group without it: their median is the mean of their rows
   * (m-2)/2 and (m-1)/2, row k of the others being row k + (k >= q) of the group */
  int64_t lo = (m - 2) / 2, hi = (m - 1) / 2;
  for (int64_t q = 0; q < m; q++) out[p[q].row] = p[q].f - (p[lo + (lo >= q)].f + p[hi + (hi >= q)].f) / 2.0;
}

/* The values at sorted positions lo, lo + 1 and lo + 2 (those below m) of
 * the m integers a[] (reordered): a selection around lo, then the two
 * smallest above it -- what a sort would put there, in O(m). */
static void order_stats3(int64_t *a, int64_t m, int64_t lo, int64_t s[3]) {
  int64_t l = 0, r = m - 1;
  while (r > l) {   /* Hoare's selection, pivot the median of three */
    int64_t x = a[l], y = a[l + (r - l) / 2], z = a[r];
    int64_t piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    int64_t i = l, j = r;
    while (i <= j) {
      while (a[i] < piv) i++;
      while (a[j] > piv) j--;
      if (i <= j) {
        int64_t t = a[i];
        a[i++] = a[j], a[j--] = t;
      }
    }
    if (lo <= j) r = j;
    else if (lo >= i) l = i;
    else break;   /* between j and i: every value there is the pivot */
  }
  s[0] = a[lo];
  int64_t m1 = INT64_MAX, m2 = INT64_MAX;   /* everything after lo is >= a[lo] */
  for (int64_t k = lo + 1; k < m; k++) {
    if (a[k] < m1) m2 = m1, m1 = a[k];
    else if (a[k] < m2) m2 = a[k];
  }
  s[1] = m1, s[2] = m2;
}

/* group_excess for an integer column, without a sort: the median of a row's
 * others takes the others' sorted rows lo and hi, which are the group's rows
 * lo and hi, or the next ones when the row's value is at or below them (the
 * others lose a value at or below that place; which of equal values goes
 * does not change what is left).  The group's m rows: rows[0..m), or
 * first .. first + m - 1 when rows is NULL; a: scratch of m. */
static void group_excess_int(const nsl_column *v, const int64_t *rows, int64_t first, int64_t m, int64_t *a,
                             double *out) {
  int null;
  if (m < 2) {
    if (m == 1) out[rows ? rows[0] : first] = NAN;
    return;
  }
  for (int64_t k = 0; k < m; k++) a[k] = nsl__int_at(v, rows ? rows[k] : first + k, &null);
  int64_t lo = (m - 2) / 2, hi = (m - 1) / 2, s[3];
  order_stats3(a, m, lo, s);
  int64_t slo = s[0], slo1 = s[1], shi = s[hi - lo], shi1 = s[hi - lo + 1];
  for (int64_t k = 0; k < m; k++) {
    int64_t row = rows ? rows[k] : first + k, x = nsl__int_at(v, row, &null);
    int64_t ax = x <= slo ? slo1 : slo, bx = x <= shi ? shi1 : shi, sum;
    /* as the column arithmetic: an integer sum (NULL on overflow), then halved as a double */
    double med = ax == NSL_NULL_I64 || bx == NSL_NULL_I64 || __builtin_add_overflow(ax, bx, &sum)
                     ? NAN : (double)sum / 2.0;
    out[row] = nsl__f64_at(v, row) - med;
  }
}

/* The rows of a stretch of median_excess's work: below this, one worker. */
#define EX_STRETCH_ROWS ((int64_t)1 << 16)

typedef struct ex_job {
  const nsl_column *keys;
  const nsl_column *const *vs;
  int nv;
  const int64_t *ix;   /* the rows grouped by key (NULL: in order) */
  int64_t n;
  int nt;              /* stretches */
  ex_pair *p;          /* (F64 columns) pairs, a group's at its places */
  nsl_column **out;
  int64_t *singles;    /* per stretch */
  atomic_int failed;   /* out of memory for a stretch's scratch */
} ex_job;

/* The first place at or after i where a group starts (n: none). */
static int64_t ex_group_start(const ex_job *j, int64_t i) {
  int null;
  if (i <= 0) return 0;
  if (i >= j->n) return j->n;
  int64_t before = nsl__int_at(j->keys, j->ix ? j->ix[i - 1] : i - 1, &null);
  while (i < j->n && nsl__int_at(j->keys, j->ix ? j->ix[i] : i, &null) == before) i++;
  return i;
}

/* Stretch t of the grouped rows: the groups that start in its share of the places. */
static void ex_stretch(void *ctx, int t) {
  ex_job *j = ctx;
  const int64_t *ix = j->ix;
  int null;
  int64_t i = ex_group_start(j, j->n * t / j->nt), end = ex_group_start(j, j->n * (t + 1) / j->nt), singles = 0;
  int64_t *a = NULL, cap = 0;   /* the integer columns' scratch: the stretch's largest group */
  while (i < end) {
    int64_t key = nsl__int_at(j->keys, ix ? ix[i] : i, &null), k2 = i;
    while (k2 < j->n && nsl__int_at(j->keys, ix ? ix[k2] : k2, &null) == key) k2++;
    for (int c = 0; c < j->nv; c++) {
      const nsl_column *v = j->vs[c];
      if (v->type != NSL_F64) {
        if (k2 - i > cap) {
          int64_t *b = realloc(a, (size_t)(k2 - i) * sizeof *b);
          if (!b) {
            atomic_store(&j->failed, 1);
            free(a);
            return;
          }
          a = b, cap = k2 - i;
        }
        group_excess_int(v, ix ? ix + i : NULL, i, k2 - i, a, nsl_f64(j->out[c]));
        continue;
      }
      ex_pair *p = j->p;
      for (int64_t k = i; k < k2; k++) {
        ex_pair *e = &p[k];
        e->row = ix ? ix[k] : k;
        e->f = nsl_f64(v)[e->row];
      }
      qsort(p + i, (size_t)(k2 - i), sizeof *p, cmp_ex_f);
      group_excess_f64(p + i, k2 - i, nsl_f64(j->out[c]));
    }
    if (k2 - i == 1) singles++;
    i = k2;
  }
  free(a);
  j->singles[t] = singles;
}

/* See nsl_internal.h. */
nsl_status nsl__median_excess_many(const nsl_column *keys, const nsl_column *const *vs, int nv, nsl_column **out,
                                   int64_t *singles, nsl_error *err) {
  for (int c = 0; c < nv; c++) out[c] = NULL;
  int bad = !keys || nv < 1 || keys->type == NSL_STR || keys->type == NSL_F64 || keys->type == NSL_BOOL;
  for (int c = 0; !bad && c < nv; c++)
    bad = !vs[c] || vs[c]->type == NSL_STR || vs[c]->type == NSL_BOOL || keys->len != vs[c]->len;
  if (bad)
    return nsl_error_set(err, NSL_ERR_ARG, "median_excess: an integer key column and numeric columns of its length");
  int64_t n = keys->len;
  int null;
  /* the rows grouped by key, in row order within a group: the rows as they are when the keys are in order
   * already (rows sorted by key); by a counting sort when the keys are i64 ids of at most twice as many groups
   * as rows (instances numbered from 0); else a stable sort of the keys.  Made once for every value column. */
  int sorted = 1, dense = keys->type == NSL_I64 && n > 0;
  int64_t kmax = 0;
  for (int64_t i = 0; i < n && (sorted || dense); i++) {
    int64_t k = nsl__int_at(keys, i, &null);
    if (i > 0 && sorted) sorted = nsl__int_at(keys, i - 1, &null) <= k;
    if (k < 0 || k > 2 * n) dense = 0;
    else if (k > kmax) kmax = k;
  }
  nsl_column *order = NULL;
  int64_t *start = NULL, *rows = NULL;
  nsl_status rc = NSL_OK;
  if (!sorted && dense) rc = nsl__group_order(nsl_i64(keys), n, kmax + 1, &start, &rows, err);
  else if (!sorted) {
    const nsl_column *kc[1] = {keys};
    int desc = 0;
    if (!(order = nsl_argsort(kc, &desc, 1, err))) rc = err ? err->code : NSL_ERR_NOMEM;
  }
  if (rc != NSL_OK) return rc;
  const int64_t *ix = rows ? rows : order ? nsl_i64(order) : NULL;   /* NULL: the rows in order */
  int any_f64 = 0;
  for (int c = 0; c < nv; c++) any_f64 |= vs[c]->type == NSL_F64;
  /* (pairs to sort for F64 columns; each stretch of the work has its integer scratch) */
  ex_pair *p = any_f64 ? malloc((size_t)(n ? n : 1) * sizeof *p) : NULL;
  rc = p || !any_f64 ? NSL_OK : NSL_ERR_NOMEM;
  for (int c = 0; rc == NSL_OK && c < nv; c++)
    if (!(out[c] = nsl__column_new_uninit(NSL_F64, n, NULL))) rc = NSL_ERR_NOMEM;   /* every row written */
  if (rc != NSL_OK) {
    nsl_error_set(err, NSL_ERR_NOMEM, "median_excess: out of memory for %lld rows", (long long)n);
    for (int c = 0; c < nv; c++) nsl_column_release(out[c]), out[c] = NULL;
  }
  *singles = 0;
  if (rc == NSL_OK && n > 0) {
    /* the groups shared out over the workers in stretches of whole groups (each writes its groups' rows and
     * uses its groups' places of the scratch: nothing shared) */
    int nt = nsl__thread_count((int)(n / EX_STRETCH_ROWS + 1));
    int64_t part[64];
    ex_job job = {keys, vs, nv, ix, n, nt, p, out, part, 0};
    nsl__run_parallel(nt, nt, ex_stretch, &job);
    for (int t = 0; t < nt; t++) *singles += part[t];
    if (atomic_load(&job.failed)) {
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "median_excess: out of memory for %lld rows", (long long)n);
      for (int c = 0; c < nv; c++) nsl_column_release(out[c]), out[c] = NULL;
    }
  }
  free(p);
  free(start);
  free(rows);
  nsl_column_release(order);
  return rc;
}

/* See nsl_internal.h. */
nsl_column *nsl__median_excess(const nsl_column *keys, const nsl_column *v, int64_t *singles, nsl_error *err) {
  nsl_column *r = NULL;
  return nsl__median_excess_many(keys, &v, 1, &r, singles, err) == NSL_OK ? r : NULL;
}

/* ---- periods at lags: the marker-kernel detection ------------------------------------ */

typedef struct lag_job {
  const int64_t *run;       /* the runs of rows of one group: rows run[k] .. run[k + 1] - 1 */
  const int64_t *gid, *v;
  int max_lag;
  double spread;            /* < 0: every lag; else a group's lags stop at the first regular one */
  int64_t *m;
  double *med, *q1, *q3;
  atomic_int failed;
} lag_job;

/* One run of rows (one group): its differences at every lag, and their
 * count, median and quartiles. */
static void lag_run(void *ctx, int k) {
  lag_job *j = ctx;
  int64_t lo = j->run[k], hi = j->run[k + 1], len = hi - lo, g = j->gid[lo];
  uint64_t *a = malloc((size_t)(len ? len : 1) * sizeof *a);
  if (!a) {
    atomic_store(&j->failed, 1);
    return;
  }
  for (int lag = 1; lag <= j->max_lag; lag++) {
    int64_t m = 0, at = g * j->max_lag + lag - 1;
    for (int64_t i = lo; i + lag < hi; i++) {
      int64_t x = j->v[i], y = j->v[i + lag];
      if (x != NSL_NULL_I64 && y != NSL_NULL_I64) a[m++] = nsl__ocode_i64(y - x);
    }
    j->m[at] = m;
    if (m == 0) continue;   /* NULL quantiles, as set */
    code_quartiles(NSL_I64, a, m, &j->med[at], &j->q1[at], &j->q3[at]);
    /* regular at this lag: the later lags are not asked for */
    if (j->spread >= 0 && m >= 2 && j->med[at] > 0 && j->q3[at] - j->q1[at] <= j->spread * j->med[at]) break;
  }
  free(a);
}

/* See nsl_internal.h. */
nsl_status nsl__lag_periods(const nsl_column *gid, const nsl_column *v, int64_t ng, int max_lag, double spread,
                            nsl_column **out, nsl_error *err) {
  for (int c = 0; c < 4; c++) out[c] = NULL;
  int ints = gid && v && (gid->type == NSL_I64 || gid->type == NSL_I32) && (v->type == NSL_I64 || v->type == NSL_I32);
  if (!ints || gid->len != v->len || ng < 0 || max_lag < 1 || max_lag > 64)
    return nsl_error_set(err, NSL_ERR_ARG, "lag_periods: integer group ids and values of one length, groups >= 0, "
                                           "lags 1 to 64");
  if (ng > INT64_MAX / max_lag) return nsl_error_set(err, NSL_ERR_ARG, "lag_periods: too many groups");
  nsl_column *copy[2] = {NULL, NULL};
  const int64_t n = gid->len, rows = ng * max_lag, *g = nsl__as_i64(gid, &copy[0]), *x = nsl__as_i64(v, &copy[1]);
  /* the runs of equal ids; each id one run, within [0, ng) */
  uint8_t *seen = calloc((size_t)(ng ? ng : 1), 1);
  int64_t *run = malloc((size_t)(n + 1) * sizeof *run), nrun = 0;
  nsl_status rc = NSL_OK;
  if (!g || !x || !seen || !run) goto nomem;
  for (int64_t i = 0; i < n; i++) {
    if (i > 0 && g[i] == g[i - 1]) continue;
    if (g[i] < 0 || g[i] >= ng || seen[g[i]]) {
      rc = nsl_error_set(err, NSL_ERR_ARG, "lag_periods: row %lld: group id %lld %s", (long long)i, (long long)g[i],
                         g[i] < 0 || g[i] >= ng ? "out of range" : "in two runs (rows not grouped)");
      goto done;
    }
    seen[g[i]] = 1;
    run[nrun++] = i;
  }
  run[nrun] = n;
  out[0] = nsl_column_new(NSL_I64, rows, NULL);
  for (int c = 1; c < 4; c++) out[c] = nsl__column_new_uninit(NSL_F64, rows, NULL);
  for (int c = 0; c < 4; c++)
    if (!out[c]) goto nomem;
  for (int c = 1; c < 4; c++)
    for (int64_t i = 0; i < rows; i++) nsl_f64(out[c])[i] = NAN;
  if (nrun > INT32_MAX) goto nomem;
  lag_job job = {run, g, x, max_lag, spread, nsl_i64(out[0]), nsl_f64(out[1]), nsl_f64(out[2]), nsl_f64(out[3]), 0};
  nsl__run_parallel((int)nrun, nsl__thread_count((int)nrun), lag_run, &job);
  if (atomic_load(&job.failed)) goto nomem;
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "lag_periods: out of memory for %lld rows", (long long)n);
done:
  if (rc != NSL_OK)
    for (int c = 0; c < 4; c++) nsl_column_release(out[c]), out[c] = NULL;
  free(seen);
  free(run);
  nsl_column_release(copy[0]);
  nsl_column_release(copy[1]);
  return rc;
}

/* ---- moments that processes add up (distributed summaries) -------------------------- */

/* An integer of up to 126 bits as three 42-bit limbs (two's complement,
 * modulo 2^126): limbs of up to 2^21 processes add without overflow, and
 * their sum, carried and read back modulo 2^126, is the sum of the values. */
#define LIMB_BITS 42
#define LIMB_MASK (((int64_t)1 << LIMB_BITS) - 1)

static void limbs_put(int64_t *at, i128 x) {
  unsigned __int128 u = (unsigned __int128)x;
  for (int k = 0; k < 3; k++) at[k] = (int64_t)(u >> (k * LIMB_BITS)) & LIMB_MASK;
}

static i128 limbs_get(const int64_t *at) {
  unsigned __int128 u = 0;
  for (int k = 2; k >= 0; k--) u = (u << LIMB_BITS) + (unsigned __int128)(uint64_t)at[k];
  u &= ((unsigned __int128)1 << 126) - 1;
  if (u >> 125) u |= ~(((unsigned __int128)1 << 126) - 1);   /* bit 125 is the sign */
  return (i128)u;
}

/* See nsl_internal.h. */
nsl_status nsl__moments(const nsl_column *gid, const nsl_column *v, int64_t ng, nsl_column **parts, nsl_column **lo,
                        nsl_column **hi, nsl_error *err) {
  *parts = *lo = *hi = NULL;
  if (!gid || !v || (gid->type != NSL_I64 && gid->type != NSL_I32) || (v->type != NSL_I64 && v->type != NSL_I32) ||
      gid->len != v->len || ng < 0 || ng > INT64_MAX / NSL_MOMENT_PARTS)
    return nsl_error_set(err, NSL_ERR_ARG, "moments: integer group ids and integer values of one length, ng >= 0");
  int64_t m = ng ? ng : 1;
  i128 *s1 = calloc((size_t)m, sizeof *s1), *s2 = calloc((size_t)m, sizeof *s2);
  int64_t *cnt = calloc((size_t)m, sizeof *cnt);
  *parts = nsl_column_new(NSL_I64, ng * NSL_MOMENT_PARTS, NULL);
  *lo = nsl_column_new(NSL_I64, ng, NULL);
  *hi = nsl_column_new(NSL_I64, ng, NULL);
  nsl_status rc = NSL_OK;
  if (!s1 || !s2 || !cnt || !*parts || !*lo || !*hi) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "moments: out of memory for %lld groups", (long long)ng);
    goto done;
  }
  int64_t *l = nsl_i64(*lo), *h = nsl_i64(*hi);
  for (int64_t g = 0; g < ng; g++) l[g] = INT64_MAX, h[g] = INT64_MIN;
  for (int64_t i = 0; i < v->len; i++) {
    int null;
    int64_t g = nsl__int_at(gid, i, &null);
    if (null || g < 0) continue;
    if (g >= ng) {
      rc = nsl_error_set(err, NSL_ERR_ARG, "moments: row %lld is in group %lld of %lld", (long long)i, (long long)g,
                         (long long)ng);
      goto done;
    }
    int64_t x = nsl__int_at(v, i, &null);
    if (null) continue;
    cnt[g]++;
    s1[g] += x;
    s2[g] += (i128)x * x;
    if (x < l[g]) l[g] = x;
    if (x > h[g]) h[g] = x;
  }
  int64_t *o = nsl_i64(*parts);
  for (int64_t g = 0; g < ng; g++) {
    o[g * NSL_MOMENT_PARTS] = cnt[g];
    limbs_put(o + g * NSL_MOMENT_PARTS + 1, s1[g]);
    limbs_put(o + g * NSL_MOMENT_PARTS + 4, s2[g]);
  }
done:
  free(s1);
  free(s2);
  free(cnt);
  if (rc != NSL_OK) {
    nsl_column_release(*parts);
    nsl_column_release(*lo);
    nsl_column_release(*hi);
    *parts = *lo = *hi = NULL;
  }
  return rc;
}

/* See nsl_internal.h. */
nsl_status nsl__moments_finish(const nsl_column *parts, const nsl_column *lo, const nsl_column *hi,
                               nsl_column *out[6], int *exact, nsl_error *err) {
  for (int k = 0; k < 6; k++) out[k] = NULL;
  *exact = 1;
  if (!parts || !lo || !hi || parts->type != NSL_I64 || lo->type != NSL_I64 || hi->type != NSL_I64 ||
      lo->len != hi->len || parts->len != lo->len * NSL_MOMENT_PARTS)
    return nsl_error_set(err, NSL_ERR_ARG, "moments_finish: the columns of nsl.moments (summed, least, greatest)");
  int64_t ng = lo->len;
  out[0] = nsl_column_new(NSL_I64, ng, NULL);   /* count */
  out[1] = nsl_column_new(NSL_I64, ng, NULL);   /* sum */
  out[2] = nsl_column_new(NSL_F64, ng, NULL);   /* mean */
  out[3] = nsl_column_new(NSL_F64, ng, NULL);   /* std */
  out[4] = nsl_column_new(NSL_I64, ng, NULL);   /* min */
  out[5] = nsl_column_new(NSL_I64, ng, NULL);   /* max */
  if (!out[0] || !out[1] || !out[2] || !out[3] || !out[4] || !out[5]) {
    for (int k = 0; k < 6; k++) nsl_column_release(out[k]), out[k] = NULL;
    return nsl_error_set(err, NSL_ERR_NOMEM, "moments_finish: out of memory");
  }
  const int64_t *p = nsl_i64(parts);
  for (int64_t g = 0; g < ng; g++) {
    int64_t c = p[g * NSL_MOMENT_PARTS];
    i128 s1 = limbs_get(p + g * NSL_MOMENT_PARTS + 1), s2 = limbs_get(p + g * NSL_MOMENT_PARTS + 4);
    if (c > 0 && !nsl__moments_exact(c, nsl_i64(lo)[g], nsl_i64(hi)[g])) *exact = 0;
    nsl_i64(out[0])[g] = c;
    nsl_i64(out[1])[g] = c ? (int64_t)(uint64_t)s1 : NSL_NULL_I64;
    nsl_f64(out[2])[g] = nsl__mean_i128(c, s1);
    nsl_f64(out[3])[g] = nsl__std_moments(c, s1, s2);
    nsl_i64(out[4])[g] = c ? nsl_i64(lo)[g] : NSL_NULL_I64;
    nsl_i64(out[5])[g] = c ? nsl_i64(hi)[g] : NSL_NULL_I64;
  }
  return NSL_OK;
}

/* See nsl_internal.h. */
nsl_column *nsl__int_mean(const nsl_column *count, const nsl_column *sum, nsl_error *err) {
  if (!count || !sum || count->type != NSL_I64 || sum->type != NSL_I64 || count->len != sum->len) {
    nsl_error_set(err, NSL_ERR_ARG, "int_mean: two i64 columns of one length (counts, sums)");
    return NULL;
  }
  nsl_column *out = nsl_column_new(NSL_F64, count->len, NULL);
  if (!out) {
    nsl_error_set(err, NSL_ERR_NOMEM, "int_mean: out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < count->len; i++) {
    int64_t c = nsl_i64(count)[i], s = nsl_i64(sum)[i];
    nsl_f64(out)[i] = c == NSL_NULL_I64 || c <= 0 || s == NSL_NULL_I64 ? NAN : nsl__mean_i128(c, s);
  }
  return out;
}

/* See nsl_internal.h. */
nsl_column *nsl__quantile_of(const nsl_column *n, double q, const nsl_column *x, const nsl_column *y, nsl_error *err) {
  if (!n || !x || !y || n->type != NSL_I64 || x->type != NSL_I64 || y->type != NSL_I64 || x->len != n->len ||
      y->len != n->len || !(q >= 0 && q <= 1)) {
    nsl_error_set(err, NSL_ERR_ARG, "quantile_of: three i64 columns of one length (counts, order statistics), q in [0, 1]");
    return NULL;
  }
  nsl_column *out = nsl_column_new(NSL_F64, n->len, NULL);
  if (!out) {
    nsl_error_set(err, NSL_ERR_NOMEM, "quantile_of: out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < n->len; i++) {
    int64_t c = nsl_i64(n)[i];
    if (c == NSL_NULL_I64 || c <= 0) {
      nsl_f64(out)[i] = NAN;
      continue;
    }
    double frac;
    nsl__quantile_pos(c, q, &frac);
    uint64_t a = nsl__ocode_i64(nsl_i64(x)[i]), b = frac > 0 ? nsl__ocode_i64(nsl_i64(y)[i]) : a;
    nsl_f64(out)[i] = nsl__lerp_codes(NSL_I64, a, b, frac);
  }
  return out;
}

/* See nsl_internal.h. */
nsl_column *nsl__count_le(const nsl_column *gid, const nsl_column *v, const nsl_column *tgid, const nsl_column *pivot,
                          nsl_error *err) {
  if (!gid || !v || !tgid || !pivot || gid->type != NSL_I64 || v->type != NSL_I64 || tgid->type != NSL_I64 ||
      pivot->type != NSL_I64 || gid->len != v->len || tgid->len != pivot->len) {
    nsl_error_set(err, NSL_ERR_ARG, "count_le: i64 group ids and values of one length (sorted by both), "
                                    "i64 target groups and pivots of one length");
    return NULL;
  }
  nsl_column *out = nsl_column_new(NSL_I64, tgid->len, NULL);
  if (!out) {
    nsl_error_set(err, NSL_ERR_NOMEM, "count_le: out of memory");
    return NULL;
  }
  const int64_t *g = nsl_i64(gid), *x = nsl_i64(v), *tg = nsl_i64(tgid), *pv = nsl_i64(pivot);
  int64_t n = gid->len;
  for (int64_t t = 0; t < tgid->len; t++) {
    int64_t a = 0, b = n;   /* the first row of group tg[t] */
    while (a < b) {
      int64_t mid = a + (b - a) / 2;
      if (g[mid] < tg[t]) a = mid + 1;
      else b = mid;
    }
    int64_t c = n;   /* the first row past it, or with a value above the pivot */
    b = a;
    while (b < c) {
      int64_t mid = b + (c - b) / 2;
      if (g[mid] < tg[t] || (g[mid] == tg[t] && x[mid] <= pv[t])) b = mid + 1;
      else c = mid;
    }
    nsl_i64(out)[t] = b - a;
  }
  return out;
}
