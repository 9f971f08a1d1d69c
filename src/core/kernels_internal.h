/* kernels_internal.h -- helpers shared by the whole-column kernels
 * (kernels.c, sort.c, groupby.c, intervals.c).  Not part of the public API.
 *
 * Order codes: every value of a column maps to a uint64 whose unsigned order
 * is the value order, with NULL (and NaN) mapped to 0, below everything:
 *   integers: two's complement with the sign bit flipped (INT64_MIN, the
 *             NULL, becomes 0 and INT64_MIN+1 becomes 1);
 *   doubles:  the IEEE-754 bit trick (negative: all bits flipped; positive:
 *             sign bit set), -0.0 folded onto +0.0, NaN -> 0;
 *   strings:  1 + the rank of the string in byte order (see nsl__str_ranks).
 * Equality codes (hashing): the same, with string ids used as they are. */
#ifndef NSL_CORE_KERNELS_INTERNAL_H
#define NSL_CORE_KERNELS_INTERNAL_H

#include <math.h>
#include <string.h>

#include "core/big_alloc.h"
#include "core/nsl_internal.h"
#include "nsl/nsl.h"

#define NSL__SIGN 0x8000000000000000ull

static inline uint64_t nsl__ocode_i64(int64_t x) { return (uint64_t)x ^ NSL__SIGN; }
static inline uint64_t nsl__ocode_i32(int32_t x) {
  return x == NSL_NULL_I32 ? 0 : (uint64_t)(int64_t)x ^ NSL__SIGN;
}
static inline int64_t nsl__ocode_to_i64(uint64_t u) { return (int64_t)(u ^ NSL__SIGN); }

static inline uint64_t nsl__ocode_f64(double d) {
  if (d != d) return 0;
  if (d == 0) d = 0.0;   /* -0.0 -> +0.0 */
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return (b & NSL__SIGN) ? ~b : b | NSL__SIGN;
}
static inline double nsl__ocode_to_f64(uint64_t u) {
  if (u == 0) return NAN;
  uint64_t b = (u & NSL__SIGN) ? u & ~NSL__SIGN : ~u;
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

/* 64-bit mixer (the splitmix64 finaliser) for hash tables. */
static inline uint64_t nsl__mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* Number of bits needed to hold x (0 for 0). */
static inline int nsl__bitwidth(uint64_t x) { return x ? 64 - __builtin_clzll(x) : 0; }

/* Index of the first of a[0..n) (ascending) that is >= x (right = 0) or > x (right = 1). */
static inline int64_t nsl__bound_u64(const uint64_t *a, int64_t n, uint64_t x, int right) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < x || (right && a[mid] == x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* A (key, value) pair sorted by key. */
typedef struct nsl__kv {
  uint64_t k;
  int64_t v;
} nsl__kv;

/* Stable LSD radix sort of a[0..n) by the bits [lo, hi) of each element
 * (lower bits are ignored, so a payload can live there).  tmp is scratch
 * of n elements.  Returns the array (a or tmp) that holds the result. */
uint64_t *nsl__radix_u64(uint64_t *a, uint64_t *tmp, int64_t n, int lo, int hi);
/* Stable LSD radix sort of (k, v) pairs by k, whose set bits all lie below
 * bit `bits` (64: anywhere); same contract. */
nsl__kv *nsl__radix_kv(nsl__kv *a, nsl__kv *tmp, int64_t n, int bits);
/* The rows of each group in (start, row) order -- what a stable argsort on
 * (group, start) gives for them -- when the rows come as a few tables in
 * time order one after the other (a GPU's kernels, copies and memsets): a
 * counting sort by group keeps each group's rows in row order, and the runs
 * of ascending start left in a group are merged (O(n + m log runs) on the
 * threads, at once for up to eight runs; against a radix sort of every
 * row).  Only the rows in a group (go >= 0) whose start is not NULL are
 * ordered.  On 1, *rows holds them (their row numbers), group g's at
 * [(*ends)[g - 1], (*ends)[g]) (from 0 for g = 0); free both with
 * nsl__big_free.  0 when the groups are too many against the rows (more
 * than a quarter of a thread's part of them: the counts are per part) or the
 * rows descend more often than one in 64 and merging them would take more
 * than four passes over the rows (a pass per group of up to eight runs, a
 * pass per halving of its runs for more): the caller sorts them.  -1 out of
 * memory.  Start is I64 or I32. */
int nsl__group_runs(const int64_t *go, int64_t ngroups, const nsl_column *start, int64_t **rows,
                    int64_t **ends);

/* Rows in the order of a stable argsort on (group, start), for a sweep of
 * each group's rows by start: row q of the order is nsl__order_row(o, q),
 * for q in [0, o->n).  When group is I64 and none of its values is NULL or
 * negative (ids of groups; with skip_negative, for a sweep that skips the
 * rows of a negative or NULL group, some may be), the order holds only the
 * rows in a group of id 0 or more whose start is not NULL, taken from the
 * runs they come in (nsl__group_runs); else it is the argsort of every row
 * (NULL groups and starts first).  A sweep that skips rows with a NULL
 * start or group (and, with skip_negative, a negative one) sees the same
 * rows in the same order either way.  Release with nsl__order_free. */
typedef struct nsl__order {
  int64_t n;
  int64_t *runs;       /* the rows (nsl__group_runs) */
  nsl_column *perm;    /* else the argsort */
} nsl__order;
nsl_status nsl__order_by_group_start(const nsl_column *group, const nsl_column *start, int skip_negative,
                                     nsl__order *o, nsl_error *err);
static inline int64_t nsl__order_row(const nsl__order *o, int64_t q) {
  return o->runs ? o->runs[q] : nsl_i64(o->perm)[q];
}
void nsl__order_free(nsl__order *o);
/* Cuts the order's places [0, o->n) into ranges of about equal length, as
 * many as nsl__run_rows would cut o->n rows into (one per thread from
 * NSL_ROWS_PARALLEL_MIN rows, one inside a job of nsl__run_parallel; at
 * most NSL__SPLIT_MAX), each cut where the group (group_of, an integer
 * column; a NULL group one of its own) changes, so that no group is in two
 * ranges: range k is [from[k], from[k + 1]) (from holds NSL__SPLIT_MAX + 1
 * places).  Returns the number of ranges (0 when the order is empty).  For
 * sweeps that run each group alone: every range on a thread of its own. */
#define NSL__SPLIT_MAX 64
int nsl__order_split(const nsl__order *o, const nsl_column *group_of, int64_t *from);

/* Sorts a[0..n) ascending in place (not stable: keys only); tmp is scratch
 * of n elements (used for large n only).  Used per group. */
void nsl__sort_u64(uint64_t *a, int64_t n, uint64_t *tmp);

/* Partially sorts a[0..n) so that a[k] is the k-th smallest (0-based),
 * a[0..k) <= a[k] <= a[k+1..n).  Expected O(n). */
void nsl__select_u64(uint64_t *a, int64_t n, int64_t k);

/* Quantile q of n sorted values: the lower order statistic k and the
 * fraction towards k+1 (linear interpolation as SQL/NumPy). */
int64_t nsl__quantile_pos(int64_t n, double q, double *frac);
/* a + (b - a) * frac for two order codes of a column of type t. */
double nsl__lerp_codes(nsl_type t, uint64_t a, uint64_t b, double frac);

/* For a string column with a dictionary: an array over the dictionary's ids
 * giving, for ids that occur in c, 1 + their rank in byte order among the
 * strings of c (absent ids get 0).  NULL on out of memory (err filled).
 * Free with free().  (A string column without a dictionary orders by id.) */
uint64_t *nsl__str_ranks(const nsl_column *c, nsl_error *err);

/* Order codes (see above) of c at rows[0..n) (rows NULL: rows first..first+n-1)
 * into out.  ranks is nsl__str_ranks(c) for string columns (NULL: ids in id
 * order), else unused. */
void nsl__order_codes(const nsl_column *c, const int64_t *rows, int64_t first, int64_t n,
                      const uint64_t *ranks, uint64_t *out);

/* Equality code of row i for hashing (strings: the id; NULL: 0 for every type;
 * I32/I64 agree on equal values). */
static inline uint64_t nsl__eq_code(const nsl_column *c, int64_t i) {
  switch (c->type) {
  case NSL_I64: return nsl__ocode_i64(nsl_i64(c)[i]);
  case NSL_I32: return nsl__ocode_i32(nsl_i32(c)[i]);
  case NSL_STR: return nsl_i32(c)[i] < 0 ? 0 : (uint64_t)nsl_i32(c)[i] + 1;
  case NSL_F64: return nsl__ocode_f64(nsl_f64(c)[i]);
  case NSL_BOOL: return nsl__ocode_i64(nsl_bool(c)[i]);
  }
  return 0;
}

/* Value i of an integer-like column (I64, I32, STR ids, BOOL) as int64;
 * *null is set for NULLs (and for F64 columns, which are not integer-like). */
static inline int64_t nsl__int_at(const nsl_column *c, int64_t i, int *null) {
  switch (c->type) {
  case NSL_I64: {
    int64_t x = nsl_i64(c)[i];
    *null = x == NSL_NULL_I64;
    return x;
  }
  case NSL_I32: {
    int32_t x = nsl_i32(c)[i];
    *null = x == NSL_NULL_I32;
    return x;
  }
  case NSL_STR: {
    int32_t x = nsl_i32(c)[i];
    *null = x < 0;
    return x;
  }
  case NSL_BOOL: *null = 0; return nsl_bool(c)[i];
  default: *null = 1; return 0;
  }
}

/* c's values as int64 (NSL_NULL_I64 for NULL): its own data when it is I64,
 * else a copy made into *copy (the caller releases it; NULL when none was
 * made).  NULL on out of memory. */
const int64_t *nsl__as_i64(const nsl_column *c, nsl_column **copy);

/* Value i as a double, NaN for NULL (any type; string ids as numbers). */
static inline double nsl__f64_at(const nsl_column *c, int64_t i) {
  if (c->type == NSL_F64) return nsl_f64(c)[i];
  int null;
  int64_t x = nsl__int_at(c, i, &null);
  return null ? NAN : (double)x;
}

/* 1 when value i is NULL (NaN for doubles). */
static inline int nsl__is_null(const nsl_column *c, int64_t i) {
  if (c->type == NSL_F64) return isnan(nsl_f64(c)[i]);
  int null;
  (void)nsl__int_at(c, i, &null);
  return null;
}

/* Group ids of key tuples a block of rows at a time, numbered as
 * nsl_groupby numbers them (by first appearance; NULL is a value of its
 * own), for kernels that need each row's group only in passing, without a
 * column of ids.  nsl__grouping_new reads the keys' ranges (NULL and err
 * filled on bad keys or out of memory); nsl__grouping_ids gives the ids of
 * rows off..off+m-1 (m <= NSL__GROUP_BLOCK) into ids, adding a group for
 * each tuple not seen before (so the first pass over the rows, in order,
 * numbers them as nsl_groupby does, and later passes find them);
 * nsl__grouping_count and nsl__grouping_first_rows: the groups so far and
 * the row where each was first seen. */
#define NSL__GROUP_BLOCK 1024
typedef struct nsl__grouping nsl__grouping;
nsl__grouping *nsl__grouping_new(const nsl_column *const *keys, int nkeys, nsl_error *err);
nsl_status nsl__grouping_ids(nsl__grouping *gr, int64_t off, int64_t m, int64_t *ids, nsl_error *err);
int64_t nsl__grouping_count(const nsl__grouping *gr);
const int64_t *nsl__grouping_first_rows(const nsl__grouping *gr);
void nsl__grouping_free(nsl__grouping *gr);

/* Checks that cols[0..n) are non-NULL columns of equal length; fills err. */
nsl_status nsl__check_keys(const nsl_column *const *cols, int n, const char *what, nsl_error *err);

/* 1 when t is an integer-valued type (I64, I32, BOOL). */
static inline int nsl__is_int(nsl_type t) { return t == NSL_I64 || t == NSL_I32 || t == NSL_BOOL; }

#endif
