/*
 * nsl.h -- public C API of nsl, the Nsight Systems profile analyser.
 *
 * Basic outline of a program that embeds nsl:
 *   1. nsl_trace_open(&trace, paths, npaths, &opts, &err) opens one or more
 *      exports (or bundles) with options (nsl_open_options_init; NULL: the
 *      defaults); nothing but metadata is read yet.
 *   2. nsl_trace_table(trace, "kernels", &t, &err) returns a data-model table
 *      whose columns load lazily; nsl_table_require(t, names, n, &err) loads
 *      several columns in one pass over each report.
 *   3. nsl_table_column(t, "dur") returns a column: typed, contiguous memory.
 *   4. Kernels (nsl_col_*, nsl_groupby_*, nsl_iv_*) compute over whole columns.
 *   5. nsl_column_release / nsl_table_release / nsl_trace_close release
 *      everything; handles are reference counted.
 * This header is for programs that embed nsl; a new kind of input (a
 * source) implements nsl/source.h.
 *
 * Conventions: every function that can fail takes an nsl_error *err as
 * its last argument (NULL when the caller wants no message) and fills it
 * when it fails (code and message text, never printed): a function that
 * makes a new object (column, table, mask) returns it, or NULL; any other
 * returns an nsl_status (NSL_OK or the error's code).  Two kinds of
 * function take no err: constructors whose only failure is memory
 * (nsl_*_new, which return NULL) and questions that cannot fail (accessors,
 * counts, finds, predicates such as nsl_bundle_sniff).  Times are int64
 * nanoseconds.  Missing values are sentinels: NSL_NULL_I64,
 * NSL_NULL_I32, NaN for doubles, -1 for string ids.
 * This header never includes lua.h.
 */
#ifndef NSL_NSL_H
#define NSL_NSL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
/* libnsl is built with hidden visibility: what the installed headers
 * declare is exported, nothing else (tests/e2e/test_symbols.sh). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---- errors ----------------------------------------------------------- */

typedef enum nsl_status {
  NSL_OK = 0,
  NSL_ERR_IO = 1,       /* missing file, unreadable, cannot write */
  NSL_ERR_FORMAT = 2,   /* not what it claims to be: not SQLite, not nsys, bad zip */
  NSL_ERR_NOMEM = 3,
  NSL_ERR_ARG = 4,      /* a caller's mistake: bad column name, length mismatch */
  NSL_ERR_LIMIT = 5,    /* a configured bound was exceeded */
  NSL_ERR_NOTFOUND = 6
} nsl_status;

typedef struct nsl_error {
  nsl_status code;
  char msg[512];
} nsl_error;

/* Fills err (if not NULL) and returns code.  printf-style. */
nsl_status nsl_error_set(nsl_error *err, nsl_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void nsl_error_clear(nsl_error *err);
const char *nsl_version(void);

/* ---- string dictionary ------------------------------------------------ */

/* An append-only set of strings with dense int32 ids 0..n-1.  Shared by
 * every string column of a trace, reference counted. */
typedef struct nsl_dict nsl_dict;

nsl_dict *nsl_dict_new(void);
nsl_dict *nsl_dict_retain(nsl_dict *d);
void nsl_dict_release(nsl_dict *d);
/* Puts the id of s (len bytes) into *id, adding s if new.  On failure *id
 * is -1 and err says what failed: NSL_ERR_NOMEM (the dictionary could not
 * grow), NSL_ERR_LIMIT (2^31 - 1 strings, or a string of 4 GiB),
 * NSL_ERR_ARG (s is NULL). */
nsl_status nsl_dict_intern(nsl_dict *d, const char *s, size_t len, int32_t *id, nsl_error *err);
/* The same with hash = nsl_dict_hash(s, len), computed ahead: a caller that
 * knows a string early calls nsl_dict_prefetch(d, hash) and does other work
 * while the index entry comes into cache. */
uint32_t nsl_dict_hash(const char *s, size_t len);
void nsl_dict_prefetch(const nsl_dict *d, uint32_t hash);
/* The second step, once the entry had time to arrive: brings in the string
 * the entry points to (the compare that confirms a match reads it). */
void nsl_dict_prefetch_string(const nsl_dict *d, uint32_t hash);
nsl_status nsl_dict_intern_hashed(nsl_dict *d, const char *s, size_t len, uint32_t hash, int32_t *id,
                                  nsl_error *err);
/* Returns the id of s, or -1 when absent. */
int32_t nsl_dict_find(const nsl_dict *d, const char *s, size_t len);
/* The string of id (NUL-terminated), or NULL for -1 / out of range. */
const char *nsl_dict_str(const nsl_dict *d, int32_t id);
size_t nsl_dict_strlen(const nsl_dict *d, int32_t id);
int32_t nsl_dict_size(const nsl_dict *d);
/* Bytes held by the dictionary (strings + index). */
size_t nsl_dict_bytes(const nsl_dict *d);

/* ---- columns ---------------------------------------------------------- */

typedef enum nsl_type {
  NSL_I64 = 0,   /* int64_t; NULL is NSL_NULL_I64 */
  NSL_I32 = 1,   /* int32_t; NULL is NSL_NULL_I32 */
  NSL_F64 = 2,   /* double; NULL is NaN */
  NSL_STR = 3,   /* int32_t ids into dict; NULL is -1 */
  NSL_BOOL = 4   /* uint8_t 0/1: masks */
} nsl_type;

#define NSL_NULL_I64 INT64_MIN
#define NSL_NULL_I32 INT32_MIN

/* A typed, contiguous, immutable-once-built array.  Fields are read-only
 * for users; build columns with nsl_column_new (never declare one: columns
 * are reference counted, nsl_column_retain / _release) and fill data
 * before sharing them. */
typedef struct nsl_column {
  nsl_type type;
  int64_t len;
  int64_t cap;      /* allocated elements */
  void *data;       /* int64_t*, int32_t*, double*, int32_t* ids, uint8_t* */
  nsl_dict *dict;   /* NSL_STR only (retained) */
} nsl_column;

/* New column of len elements (zero-filled); dict is retained for NSL_STR. */
nsl_column *nsl_column_new(nsl_type type, int64_t len, nsl_dict *dict);
nsl_column *nsl_column_retain(nsl_column *c);
void nsl_column_release(nsl_column *c);
/* 1 when c has other holders than the caller's one reference (a table, a
 * view), so releasing it would free nothing. */
int nsl_column_is_shared(const nsl_column *c);
/* Grows capacity to at least cap elements (len unchanged); NSL_ERR_NOMEM. */
nsl_status nsl_column_reserve(nsl_column *c, int64_t cap, nsl_error *err);
/* Sets len (within cap), e.g. after filling a reserved column. */
void nsl_column_set_len(nsl_column *c, int64_t len);
size_t nsl_type_size(nsl_type t);
const char *nsl_type_name(nsl_type t);
/* Bytes of data held. */
size_t nsl_column_bytes(const nsl_column *c);

static inline int64_t *nsl_i64(const nsl_column *c) { return (int64_t *)c->data; }
static inline int32_t *nsl_i32(const nsl_column *c) { return (int32_t *)c->data; }
static inline double *nsl_f64(const nsl_column *c) { return (double *)c->data; }
static inline uint8_t *nsl_bool(const nsl_column *c) { return (uint8_t *)c->data; }
/* Value i as int64 (any integer type; NULLs map to NSL_NULL_I64) / double. */
int64_t nsl_column_get_i64(const nsl_column *c, int64_t i);
double nsl_column_get_f64(const nsl_column *c, int64_t i);
int nsl_column_is_null(const nsl_column *c, int64_t i);

/* ---- tables ----------------------------------------------------------- */

/* A table is a list of named columns of equal length.  A table made by a
 * source may have columns not yet loaded: nsl_table_require loads them. */
typedef struct nsl_table nsl_table;

/* Loads the columns idx[0..n) of t (declared but not yet loaded) in one
 * pass and stores them with nsl_table_set_column. */
typedef nsl_status (*nsl_table_loader)(void *ctx, nsl_table *t, const int *idx, int n,
                                       nsl_error *err);

nsl_table *nsl_table_new(void);
nsl_table *nsl_table_retain(nsl_table *t);
void nsl_table_release(nsl_table *t);
/* Declares a column (not loaded) of the given type (nsl_table_find gives
 * its index): NSL_ERR_NOMEM, or NSL_ERR_ARG when it is declared already
 * with another type. */
nsl_status nsl_table_declare(nsl_table *t, const char *name, nsl_type type, nsl_error *err);
/* Adds (or replaces) a loaded column; retains c.  Its length must equal the
 * table's row count once one is known (NSL_ERR_ARG). */
nsl_status nsl_table_add(nsl_table *t, const char *name, nsl_column *c, nsl_error *err);
/* Stores c as the data of declared column idx; retains c. */
nsl_status nsl_table_set_column(nsl_table *t, int idx, nsl_column *c, nsl_error *err);
void nsl_table_set_loader(nsl_table *t, nsl_table_loader fn, void *ctx, void (*free_ctx)(void *));
/* Row count into *out; for a table whose row count is not yet known, loads
 * the cheapest column first (may fail: *out is then -1). */
nsl_status nsl_table_nrows(nsl_table *t, int64_t *out, nsl_error *err);
void nsl_table_set_nrows(nsl_table *t, int64_t n);
int nsl_table_ncols(const nsl_table *t);
const char *nsl_table_colname(const nsl_table *t, int idx);
nsl_type nsl_table_coltype(const nsl_table *t, int idx);
int nsl_table_find(const nsl_table *t, const char *name);   /* index or -1 */
int nsl_table_is_loaded(const nsl_table *t, int idx);
/* Forgets the data of column idx of a table that loads its columns (a
 * trace's, or rows taken from one): the table's reference is released, and
 * the column loads again when next read.  Others holding the column keep it.
 * NSL_ERR_ARG for a table without a loader (its data could not come back). */
nsl_status nsl_table_unload(nsl_table *t, int idx, nsl_error *err);
/* Loads the named columns that are not yet loaded, in one pass. */
nsl_status nsl_table_require(nsl_table *t, const char *const *names, int n, nsl_error *err);
/* The same load in three steps, so that a front end can read on a thread
 * of its own and stay responsive:
 *   1. nsl_table_load_begin(t, names, n, &l, &err) on the caller's thread
 *      plans the load of the named columns not yet loaded (reads nothing);
 *   2. nsl_load_read(l, &err) reads them, on any thread, touching neither t
 *      nor the dictionaries the caller uses (a trace table's sources are
 *      locked meanwhile: the caller's own loads and SQL on that trace wait);
 *   3. nsl_load_end(l, &err) on the caller's thread stores the columns in t
 *      (reading first if step 2 did not run) and frees l; nsl_load_free(l)
 *      abandons the load instead.
 * A column the caller loaded meanwhile is kept.  A read of a trace that was
 * closed fails.  Tables without a trace's loader load in step 3. */
typedef struct nsl_load nsl_load;
nsl_status nsl_table_load_begin(nsl_table *t, const char *const *names, int n, nsl_load **out, nsl_error *err);
nsl_status nsl_load_read(nsl_load *l, nsl_error *err);
nsl_status nsl_load_end(nsl_load *l, nsl_error *err);
void nsl_load_free(nsl_load *l);
/* The loaded column (borrowed reference), loading it if needed; NULL and
 * err filled when unknown or the load fails. */
nsl_column *nsl_table_column(nsl_table *t, const char *name, nsl_error *err);
nsl_column *nsl_table_column_at(nsl_table *t, int idx, nsl_error *err);
/* A new table with rows idx[0..n) of every loaded column of t (columns
 * not loaded are loaded first). */
nsl_table *nsl_table_take(nsl_table *t, const nsl_column *idx, nsl_error *err);
/* A new table with the rows of t where mask (NSL_BOOL, a row of t each) is
 * 1, as nsl_table_take of its indices; where every row is kept, the
 * columns are t's (no row indices made, nothing copied). */
nsl_table *nsl_table_filter(nsl_table *t, const nsl_column *mask, nsl_error *err);
/* Bytes held by loaded columns (dictionaries not counted). */
size_t nsl_table_bytes(const nsl_table *t);

/* ---- kernels over whole columns (src/core/kernels.c, intervals.c) ----- */

typedef enum nsl_cmp { NSL_EQ, NSL_NE, NSL_LT, NSL_LE, NSL_GT, NSL_GE } nsl_cmp;

/* Mask (NSL_BOOL) of c OP value; NULLs compare false (NE: true).  For
 * NSL_STR columns value is a string id (EQ/NE only are meaningful). */
nsl_column *nsl_column_cmp_i64(const nsl_column *c, nsl_cmp op, int64_t value, nsl_error *err);
nsl_column *nsl_column_cmp_f64(const nsl_column *c, nsl_cmp op, double value, nsl_error *err);
/* Mask of a OP b, element-wise (same length). */
nsl_column *nsl_column_cmp_col(const nsl_column *a, nsl_cmp op, const nsl_column *b, nsl_error *err);
/* Mask of rows whose value (int or string id) is in ids[0..n); NULL rows
 * are never in; F64 values are in when integral and equal. */
nsl_column *nsl_column_isin(const nsl_column *c, const int64_t *ids, int64_t n, nsl_error *err);
nsl_column *nsl_column_nulls(const nsl_column *c, nsl_error *err);
/* Mask algebra: and/or of equal-length masks, not. */
nsl_column *nsl_mask_and(const nsl_column *a, const nsl_column *b, nsl_error *err);
nsl_column *nsl_mask_or(const nsl_column *a, const nsl_column *b, nsl_error *err);
nsl_column *nsl_mask_not(const nsl_column *a, nsl_error *err);
/* Number of set rows (-1 when mask is not a bool column). */
int64_t nsl_mask_count(const nsl_column *mask);
/* Row indices (NSL_I64) where mask is 1. */
nsl_column *nsl_mask_indices(const nsl_column *mask, nsl_error *err);
/* c[idx[i]] for every i; idx entries < 0 give NULL (0 for bool columns);
 * an entry past the end is NSL_ERR_ARG.  idx is NSL_I64 (or NSL_I32). */
nsl_column *nsl_column_gather(const nsl_column *c, const nsl_column *idx, nsl_error *err);
/* Element-wise arithmetic (NULL in, NULL out); result I64 unless either is F64.
 * Integer results that overflow, and integer division by zero, give NULL;
 * integer division truncates toward zero.  The scalar v counts as an
 * integer when it is integral (so `start - t0` stays exact); string
 * columns are refused (NULL / NSL_ERR_ARG). */
typedef enum nsl_arith { NSL_ADD, NSL_SUB, NSL_MUL, NSL_DIV } nsl_arith;
nsl_column *nsl_column_arith(const nsl_column *a, nsl_arith op, const nsl_column *b, nsl_error *err);
nsl_column *nsl_column_arith_scalar(const nsl_column *a, nsl_arith op, double v, nsl_error *err);
/* The same with an integer scalar, exact at any magnitude (a double holds
 * integers exactly only up to 2^53: a time offset of years in ns does not
 * fit); an F64 column gives F64 (v converted). */
nsl_column *nsl_column_arith_scalar_i64(const nsl_column *a, nsl_arith op, int64_t v, nsl_error *err);
/* Converts to another numeric type (NSL_STR -> NSL_I64 gives ids).  Values
 * that do not fit (and NaN) become NULL; doubles truncate toward zero; to
 * NSL_BOOL: 1 for non-NULL non-zero values.  Nothing converts to NSL_STR
 * but a string column (a copy). */
nsl_column *nsl_column_cast(const nsl_column *c, nsl_type to, nsl_error *err);

/* Stable ascending argsort by keys[0] then keys[1]...; desc[k] nonzero
 * sorts that key descending (desc may be NULL).  NULLs (and NaN) sort
 * first, in either direction; -0.0 equals 0.0; strings sort in byte
 * order of their text.  Radix sort for every key type (doubles by their
 * IEEE bits); result is NSL_I64 row indices. */
nsl_column *nsl_argsort(const nsl_column *const *keys, const int *desc, int nkeys, nsl_error *err);

/* Reductions over a whole column, skipping NULLs.  With no values: count 0,
 * sums 0, min/max/mean NaN.  String columns: count only.  isum wraps
 * modulo 2^64 past the int64 range (sum and mean stay exact). */
typedef struct nsl_stats {
  int64_t count;
  double sum, min, max, mean, std;   /* std: sample standard deviation (n-1), 0 when count<2 */
  int64_t isum;                      /* exact integer sum for integer columns */
  int64_t imin, imax;                /* exact min/max for integer columns (NSL_NULL_I64 if none) */
} nsl_stats;
void nsl_column_stats(const nsl_column *c, nsl_stats *out);
/* Quantile q in [0,1] with linear interpolation between order statistics
 * (q=0.5 is the median of SQL/NumPy: mean of the two middle values).
 * NaN when there are no values, q is outside [0,1], or c is a string column. */
double nsl_column_quantile(const nsl_column *c, double q);

/* Group-by: rows grouped by equal key tuples.  group_of[row] is the dense
 * group id (0..ngroups-1, in order of first appearance); first_row[g] is a
 * row of group g (so keys can be gathered).  NULL keys form a group of
 * their own, like SQL. */
typedef struct nsl_groups {
  int64_t ngroups;
  nsl_column *group_of;   /* NSL_I64, one per row */
  nsl_column *first_row;  /* NSL_I64, one per group */
  int checked;            /* group_of is known to lie below ngroups, negative: no group (nsl_groupby sets it; else each
                             aggregation checks) */
} nsl_groups;
nsl_status nsl_groupby(const nsl_column *const *keys, int nkeys, nsl_groups *out, nsl_error *err);
void nsl_groups_free(nsl_groups *g);
/* Groups given by number: group_of is ids (I64 or I32; a negative id or
 * NULL puts its row in no group), groups 0..ngroups-1 in that order, empty
 * ones included; first_row is NULL.  Fails when an id is ngroups or above.
 * No key is hashed: for ids a kernel made (tree nodes, a grouping's ids). */
nsl_status nsl_groups_by_id(const nsl_column *ids, int64_t ngroups, nsl_groups *out, nsl_error *err);
/* The number of distinct key tuples (nsl_groupby's ngroups: NULL a value of
 * its own) into *count, without a group id per row. */
nsl_status nsl_count_distinct(const nsl_column *const *keys, int nkeys, int64_t *count, nsl_error *err);

typedef enum nsl_agg {
  NSL_AGG_COUNT, NSL_AGG_SUM, NSL_AGG_MIN, NSL_AGG_MAX, NSL_AGG_MEAN,
  NSL_AGG_MEDIAN, NSL_AGG_QUANTILE, NSL_AGG_STD, NSL_AGG_FIRST, NSL_AGG_LAST,
  NSL_AGG_COUNT_DISTINCT
} nsl_agg;
/* One value per group.  COUNT gives I64 (non-NULL count); SUM of integers
 * gives I64 (exact), of doubles F64; MIN/MAX/FIRST/LAST keep the type;
 * MEAN/MEDIAN/QUANTILE/STD give F64 (q used by QUANTILE only).  NULLs are
 * skipped: a group without values gives NULL (COUNT, COUNT_DISTINCT: 0).
 * STD is the sample deviation (n-1), 0 for one value, as `nsys stats`.
 * FIRST/LAST are the first/last non-NULL value in row order; MIN/MAX of
 * strings compare their text.  Rows with a negative group id are in no
 * group (so g can be edited to leave rows out). */
nsl_column *nsl_group_agg(const nsl_groups *g, const nsl_column *values, nsl_agg agg, double q,
                          nsl_error *err);
/* One aggregate of nsl_group_aggs: agg of values (q for QUANTILE). */
typedef struct nsl_agg_spec {
  const nsl_column *values;
  nsl_agg agg;
  double q;
} nsl_agg_spec;
/* out[i] = nsl_group_agg(g, specs[i].values, specs[i].agg, specs[i].q) for
 * every i < n, the same values, computed together: the aggregates of one
 * column share their passes over the rows (count, sums, min and max in one;
 * quantiles, distinct counts and deviations from one copy of the values laid
 * out by group), and the passes run on up to NSL_THREADS threads.  On error
 * every out[i] is NULL and err says what failed. */
nsl_status nsl_group_aggs(const nsl_groups *g, const nsl_agg_spec *specs, int n, nsl_column **out,
                          nsl_error *err);

/* Histogram of c over nbins+1 ascending edges: counts[b] counts values in
 * [edges[b], edges[b+1]) (the last bin includes its right edge); values
 * outside are not counted.  Returns NSL_I64 counts. */
nsl_column *nsl_column_histogram(const nsl_column *c, const double *edges, int nbins, nsl_error *err);

/* Join on keys: for every row of the left key tuple, the row of the right
 * key tuple with equal keys (the first one), or -1.  Typically (report,
 * corr) of kernels against (report, corr) of api.  NULL keys match
 * nothing; I32/I64 keys match by value, F64 against integers by value;
 * string keys by text, even across dictionaries.  Result NSL_I64. */
nsl_column *nsl_join_index(const nsl_column *const *left, const nsl_column *const *right,
                           int nkeys, nsl_error *err);

/* Distinct non-NULL values of c, ascending (strings in byte order), with
 * c's type (and dictionary). */
nsl_column *nsl_column_unique(const nsl_column *c, nsl_error *err);
/* For each value v of values, its insertion index into sorted (ascending
 * with NULLs first, as nsl_argsort orders): the first i with sorted[i] >= v
 * (right = 0) or > v (right = 1); a NULL v gives 0 (right: the number of
 * NULLs).  Integer and F64 columns compare numerically with each other;
 * string columns must share a dictionary and compare in byte order.
 * NSL_ERR_ARG when sorted is not sorted.  Result NSL_I64. */
nsl_column *nsl_searchsorted(const nsl_column *sorted, const nsl_column *values, int right,
                             nsl_error *err);
/* Running sum over the rows; a NULL row adds nothing and reads NULL.
 * NSL_I64 for integer columns, NSL_F64 for F64. */
nsl_column *nsl_column_cumsum(const nsl_column *c, nsl_error *err);
/* Running maximum of an integer column: row i holds the largest value of
 * rows 0..i, NULLs skipped (NULL until the first value).  NSL_I64. */
nsl_column *nsl_column_cummax(const nsl_column *c, nsl_error *err);
/* x[i] - x[j], j the previous row (of the same group when group_of, I64
 * group ids as nsl_groupby gives, is not NULL; a negative id is in no group).
 * NULL for the first row of each group and where either value is NULL.
 * NSL_I64 for integer columns, NSL_F64 for F64. */
nsl_column *nsl_column_diff(const nsl_column *c, const nsl_column *group_of, nsl_error *err);

/* ---- interval algebra (half-open [start, stop), int64 ns) ------------- */

/* A set of intervals, sorted and disjoint after union. */
typedef struct nsl_intervals {
  int64_t n;
  int64_t *start;
  int64_t *stop;
} nsl_intervals;

/* Union of the intervals [start[i], stop[i]) over rows where mask is NULL
 * or 1.  The inputs need not be sorted.  Rows with a NULL end or stop <=
 * start add nothing; touching intervals merge.  Set operations below
 * take sorted disjoint sets and answer NSL_ERR_ARG for others. */
nsl_status nsl_iv_union(const nsl_column *start, const nsl_column *stop, const nsl_column *mask,
                        nsl_intervals *out, nsl_error *err);
/* nsl_iv_union with the rows' start order given: order (I64) lists rows
 * (each below the row count) in an order in which their starts do not fall
 * (an argsort by start, or by a group and start where each group's times
 * lie after the group before's), so no sort is made: several unions of
 * masks of the same rows share one order.  Rows the order leaves out add
 * nothing.  Where a start does fall after all, the rows are sorted as
 * nsl_iv_union does (the same set).  NSL_ERR_ARG for a row out of range. */
nsl_status nsl_iv_union_ordered(const nsl_column *start, const nsl_column *stop, const nsl_column *mask,
                                const nsl_column *order, nsl_intervals *out, nsl_error *err);
nsl_status nsl_iv_intersect(const nsl_intervals *a, const nsl_intervals *b, nsl_intervals *out,
                            nsl_error *err);
/* a minus b. */
nsl_status nsl_iv_subtract(const nsl_intervals *a, const nsl_intervals *b, nsl_intervals *out,
                           nsl_error *err);
/* The gaps between consecutive intervals of a (sorted, disjoint) within
 * [lo, hi); lo/hi = NSL_NULL_I64 mean the first start / last stop. */
nsl_status nsl_iv_gaps(const nsl_intervals *a, int64_t lo, int64_t hi, nsl_intervals *out,
                       nsl_error *err);
int64_t nsl_iv_total(const nsl_intervals *a);
void nsl_iv_free(nsl_intervals *a);
/* Busy time per group: for every group g in 0..ngroups-1, the length of the
 * union of the intervals of the rows with group_of[row] == g (I64 group
 * ids as nsl_groupby gives; rows with a negative id, or masked out as in
 * nsl_iv_union, are skipped).  E.g. GPU busy time per (device, stream).
 * Result NSL_I64, ngroups long. */
nsl_column *nsl_iv_union_grouped(const nsl_column *start, const nsl_column *stop,
                                 const nsl_column *group_of, int64_t ngroups, const nsl_column *mask,
                                 nsl_error *err);
/* For every row of [start, stop): the length of it that b (sorted and
 * disjoint, e.g. from nsl_iv_union) covers, e.g. the part of each kernel
 * hidden under communication.  NULL rows give NULL, empty ones 0.  The rows
 * need not be sorted.  Result NSL_I64. */
nsl_column *nsl_iv_coverage(const nsl_column *start, const nsl_column *stop, const nsl_intervals *b,
                            nsl_error *err);

/* ---- regular expressions (src/core/regex.c) --------------------------- */

/* A compiled regular expression in Python `re` syntax (as kernel maps such
 * as vLLM's gputrc2graph JSON files use), answered by re.search semantics:
 * does it match anywhere in the string.  Translated to a POSIX ERE; \d \w
 * \s (and negations), (?:...), (?P<name>...), a leading (?i), lazy and
 * possessive quantifiers are understood; lookarounds and backreferences
 * are refused (NSL_ERR_ARG naming the construct). */
typedef struct nsl_regex nsl_regex;
#define NSL_REGEX_ICASE 1
nsl_status nsl_regex_compile(nsl_regex **out, const char *pattern, int flags, nsl_error *err);
/* 1 when re matches somewhere in s (NUL-terminated), else 0. */
int nsl_regex_search(const nsl_regex *re, const char *s);
/* The POSIX ERE the pattern was translated to (for messages and tests). */
const char *nsl_regex_posix(const nsl_regex *re);
void nsl_regex_free(nsl_regex *re);
/* Mask (NSL_BOOL) of the rows of string column c that re matches; each
 * distinct string is tested once; NULL rows never match. */
nsl_column *nsl_column_regex(const nsl_column *c, const nsl_regex *re, nsl_error *err);

/* ---- interval sweeps by key (src/core/overlap_join.c) ---------------- */

/* For every row i of A = [a_start, a_stop): the row j of B = [b_start,
 * b_stop) that overlaps it most (by more than 0 ns), among the B rows whose
 * key tuple equals A's (a_keys[k][i] == b_keys[k][j] for every k < nkeys;
 * nkeys 0: all rows) and, with b_mask, where b_mask is 1.  Keys match as in
 * nsl_join_index (NULL keys match nothing).  Ties go to the B row that
 * starts last (the innermost of nested ranges), then stops first, then the
 * lowest row.  *rows receives j (I64, -1 when none), *overlap the overlap in
 * ns (0 when none; NULL for A rows with a NULL bound).  Rows need not be
 * sorted; B rows with a NULL bound or stop <= start never match.  Cost: two
 * sorts, then per A row the B rows open at its start plus those starting
 * inside it (pruned once they cannot win). */
nsl_status nsl_overlap_join(const nsl_column *a_start, const nsl_column *a_stop,
                            const nsl_column *const *a_keys, const nsl_column *b_start,
                            const nsl_column *b_stop, const nsl_column *const *b_keys, int nkeys,
                            const nsl_column *b_mask, nsl_column **rows, nsl_column **overlap,
                            nsl_error *err);
/* For each row of A (intervals), the NVTX-like range of B with an equal key
 * tuple (as nsl_overlap_join) in which A spent most of its time, a range
 * counting for the time none of its children covers: nsl_overlap_join
 * against the innermost segments of B's ranges.  A range with b_nested 1
 * (push/pop, start/end on one thread) and a stop nests on its thread
 * (b_thread: 1 to 8 integer key columns): its parent is the tightest
 * nesting range enclosing it there (nsys's), and its segments are its time
 * before each child (from its start or the previous child's stop, children
 * by start then row) and after its last child (from the latest child
 * stop); a nesting range without children and any other range with both
 * bounds is one whole segment.  Ties of overlap go as in nsl_overlap_join,
 * the segments in the order: the pieces before each child by (parent, child
 * start, child row), those after the last child by parent, the whole ones
 * by row.  *rows receives the B row (I64, -1 when none), *overlap the ns (0
 * when none, NULL for an A row with a NULL bound).  Pass the ranges an
 * interval can fall in with every range enclosing one of them
 * (nsl_overlap_any gives those), or nesting is lost. */
nsl_status nsl_innermost_join(const nsl_column *a_start, const nsl_column *a_stop, const nsl_column *const *a_keys,
                              const nsl_column *b_start, const nsl_column *b_stop, const nsl_column *const *b_keys,
                              int nkeys, const nsl_column *const *b_thread, int nthread, const nsl_column *b_nested,
                              nsl_column **rows, nsl_column **overlap, nsl_error *err);
/* Whether each row of A overlaps some row of B with an equal key tuple (by
 * more than 0 ns): nsl_overlap_join's *rows >= 0, as a BOOL column, without
 * its two I64 results (every NVTX range of a trace against a few thousand
 * gaps: a mask of 8 M bytes instead of 130 MB).  NULL on error. */
nsl_column *nsl_overlap_any(const nsl_column *a_start, const nsl_column *a_stop, const nsl_column *const *a_keys,
                            const nsl_column *b_start, const nsl_column *b_stop, const nsl_column *const *b_keys,
                            int nkeys, nsl_error *err);
/* For every point t: the number of intervals [start, stop) with the same key
 * tuple (as nsl_overlap_join) open at t, strictly: start < t < stop.  E.g.
 * kernels launched (API start) but not yet started at each launch.  NULL
 * points give NULL; empty intervals and NULL bounds never count.  Result I64. */
nsl_column *nsl_iv_count_open(const nsl_column *points, const nsl_column *const *point_keys,
                              const nsl_column *start, const nsl_column *stop,
                              const nsl_column *const *iv_keys, int nkeys, nsl_error *err);
/* Idle gaps per group: for every group g (I64 ids 0..ngroups-1 as
 * nsl_groupby gives; negative ids, masked rows, NULL bounds and empty rows
 * are skipped), the intervals between g's first start and last stop that
 * none of its rows covers, longer than min_len ns.  Outputs three new I64
 * columns of equal length: group, gap start, gap stop, sorted by group then
 * start; and when gap_row is not NULL a fourth, the row that ends each gap:
 * the lowest row of the group starting at the gap's stop (skipped rows
 * too: the row a join on group and start finds). */
nsl_status nsl_iv_gaps_grouped(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                               int64_t ngroups, const nsl_column *mask, int64_t min_len, nsl_column **group,
                               nsl_column **gap_start, nsl_column **gap_stop, nsl_column **gap_row,
                               nsl_error *err);
/* The gaps of nsl_iv_gaps_grouped (no mask) summed per group, in one sweep:
 * sums receives four new I64 columns of ngroups rows -- each group's idle
 * time (every gap), count of gaps longer than min_len, their time, and its
 * largest gap (0 for a group without gaps) -- and group, gap_start,
 * gap_stop the gaps longer than min_len alone, as nsl_iv_gaps_grouped.
 * When not NULL, gap_before and gap_after receive the rows on either side
 * of each of those gaps: the lowest row of the group (among the rows swept:
 * bounds known, not empty) stopping at the gap's start, and gap_row of
 * nsl_iv_gaps_grouped (the rows joins on group and stop, and on group and
 * start, find). */
nsl_status nsl_iv_gap_sums(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                           int64_t ngroups, int64_t min_len, nsl_column *sums[4], nsl_column **group,
                           nsl_column **gap_start, nsl_column **gap_stop, nsl_column **gap_before,
                           nsl_column **gap_after, nsl_error *err);
/* The host parts of the gaps of nsl_iv_gaps_grouped (no mask, every gap),
 * in one sweep: a gap's host part is its start up to when the row that ends
 * it (gap_row) was launched (launch, an integer column of the rows; a NULL
 * launch time: none), at most the whole gap -- the GPU waiting for the host
 * to launch its next piece of work.  *idle and *host receive I64 columns of
 * ngroups rows, each group's idle time and the sum of its host parts;
 * group, gap_start, host_stop and gap_row the gaps with a host part, in
 * nsl_iv_gaps_grouped's order: the host part's span and the row that ends
 * the gap. */
nsl_status nsl_iv_gap_hosts(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                            int64_t ngroups, const nsl_column *launch, nsl_column **idle, nsl_column **host,
                            nsl_column **group, nsl_column **gap_start, nsl_column **host_stop,
                            nsl_column **gap_row, nsl_error *err);

/* ---- the ledger of lost time (src/core/ledger.c) --------------------- */

/* Wall time of windows split among classes of intervals, each nanosecond
 * counted once.  Interval row i belongs to group group_of[i] (e.g. a device
 * of a rank) and class cls[i] in 0..nclasses-1 (at most 64); where rows of
 * several classes of a group are open, the lowest class number takes the
 * time.  Window w covers [win_lo[w], win_hi[w]) of group win_group[w];
 * windows of one group must not overlap (NSL_ERR_ARG).  *totals receives an
 * I64 column of nwin * (nclasses + 1): element w * (nclasses + 1) + c is the
 * time of window w taken by class c, and the last of each window the time
 * no row covers, so each window's elements sum to its length exactly.  With
 * row_charged, *row_charged receives per row the time inside windows that
 * its class took while the row was open (0 for rows left out: NULL bounds,
 * stop <= start, a negative group, a class out of range). */
nsl_status nsl_ledger_sweep(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                            const nsl_column *cls, int nclasses, const nsl_column *win_group,
                            const nsl_column *win_lo, const nsl_column *win_hi, nsl_column **totals,
                            nsl_column **row_charged, nsl_error *err);
/* nsl_ledger_sweep over nsets (1 to NSL_LEDGER_SETS) sets of windows in one
 * sweep, the rows sorted once: set k is win_group[k], win_lo[k], win_hi[k]
 * (windows of one group disjoint within a set; the sets may overlap each
 * other: a run and its steps), its totals in totals[k]; row_charged is of
 * set 0's windows. */
#define NSL_LEDGER_SETS 8
nsl_status nsl_ledger_sweep_sets(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                                 const nsl_column *cls, int nclasses, int nsets, const nsl_column *const *win_group,
                                 const nsl_column *const *win_lo, const nsl_column *const *win_hi,
                                 nsl_column **totals, nsl_column **row_charged, nsl_error *err);

/* Where each device waited for its host to launch work (the ledger's
 * idle_host).  The rows (GPU operations) in (group, start) order, a stable
 * sort: before each row whose group equals the previous row's, the time
 * from the previous row's start to the end of the row's launch call
 * (launch_stop, at most the row's own start), where that is later.  Rows
 * with a NULL group, start or launch_stop wait for nothing (a NULL row
 * still precedes the next).  *rows receives the waiting rows' numbers in
 * that order, *from and *to the waits' bounds (I64 columns, one row per
 * wait). */
nsl_status nsl_launch_waits(const nsl_column *group, const nsl_column *start, const nsl_column *launch_stop,
                            nsl_column **rows, nsl_column **from, nsl_column **to, nsl_error *err);

/* ---- traces ----------------------------------------------------------- */

typedef struct nsl_trace nsl_trace;

/* Raw SQL rows: nsl_trace_sql calls row(ctx, ncols, names, values) per row
 * of the result; non-zero from row stops early. */
typedef struct nsl_sql_value {
  int type;            /* 0 NULL, 1 integer, 2 real, 3 text, 4 blob */
  int64_t i;
  double d;
  const char *s;       /* text or blob bytes (valid during the callback) */
  size_t len;
} nsl_sql_value;
typedef int (*nsl_sql_row_fn)(void *ctx, int ncols, const char *const *names,
                              const nsl_sql_value *values);
/* One metadata entry of a report (nsl_trace_metadata); non-zero stops. */
typedef int (*nsl_metadata_fn)(void *ctx, const char *name, const char *value);

/* Report metadata, filled by the source when it opens. */
typedef struct nsl_report_info {
  /* Strings: a source fills them with its own, valid until it is added to a
   * trace (nsl_trace_add_source), which keeps copies of them. */
  const char *path;       /* as given by the user */
  const char *name;       /* unique report name within the trace, e.g. file stem */
  const char *host;       /* "" when unknown */
  char nsys_version[64];  /* "2026.2.1.210" or "" */
  char schema_version[32];/* "3.25.0" or "" */
  int64_t rank;           /* -1 when unknown */
  int64_t start_utc;      /* session start, ns since the epoch; 0 when unknown */
  int64_t duration;       /* ns; 0 when unknown */
  int64_t first_ts, last_ts; /* earliest and latest event time seen (raw), or NSL_NULL_I64 */
} nsl_report_info;

/* How a trace opens its inputs: set by the embedder per trace, never
 * process-wide.  nsl_open_options_init gives the defaults. */
typedef struct nsl_open_options {
  const char *nsys;   /* the nsys that exports .nsys-rep inputs (a path or a name in PATH); NULL: found by
                       * nsl_rep_find_nsys's search.  Copied by the trace. */
  int cache;          /* 1: loads go through the columnar cache, 0: not; default 1 unless NSL_NO_CACHE is set */
} nsl_open_options;
void nsl_open_options_init(nsl_open_options *o);

/* Opens each path (an nsys SQLite export, an nsys-jax archive, or a bundle:
 * nsl_bundle_add_reports; src/source/open.c knows them all)
 * as reports of one trace, with options opts (NULL: the defaults), and
 * records the paths as its inputs.  Nothing but metadata is read (a
 * bundle's reports are decompressed into memory). */
nsl_status nsl_trace_open(nsl_trace **out, const char *const *paths, int npaths, const nsl_open_options *opts,
                          nsl_error *err);
/* The options later nsl_trace_add_path calls on tr use (a new trace has the
 * defaults); NSL_ERR_NOMEM when the copy fails. */
nsl_status nsl_trace_set_options(nsl_trace *tr, const nsl_open_options *opts, nsl_error *err);
const nsl_open_options *nsl_trace_options(const nsl_trace *tr);
/* Opens path (an export, a bundle, an nsys-jax archive) as nsl_trace_open
 * does one of its paths and adds its reports to tr, recording the input. */
nsl_status nsl_trace_add_path(nsl_trace *tr, const char *path, nsl_error *err);
/* Records path as one of the inputs the trace was made from, as the user
 * gave it (an export or a bundle); nsl_trace_open records each of its paths.
 * A bundle input may add several reports, so inputs and reports differ. */
nsl_status nsl_trace_add_input(nsl_trace *tr, const char *path, nsl_error *err);
/* The number of inputs recorded, and the path of input i (0-based; NULL
 * when out of range). */
int nsl_trace_ninputs(const nsl_trace *tr);
const char *nsl_trace_input_path(const nsl_trace *tr, int i);
nsl_trace *nsl_trace_new(void);
/* Keeps only reports keep[0..n) of tr (0-based, in any order; duplicates
 * count once) and closes the others' sources; the kept reports are
 * renumbered 0.. in their order in the trace, so the trace is the one that
 * opening those reports alone would give.  Only before any table was
 * loaded (NSL_ERR_ARG otherwise, and for an index out of range). */
nsl_status nsl_trace_keep_reports(nsl_trace *tr, const int *keep, int n, nsl_error *err);
void nsl_trace_close(nsl_trace *tr);
int nsl_trace_nreports(const nsl_trace *tr);
const nsl_report_info *nsl_trace_report(const nsl_trace *tr, int i);
nsl_dict *nsl_trace_dict(nsl_trace *tr);
/* Makes the trace intern its strings into d (retained) instead of its own
 * dictionary, so that several traces share string ids; only before any
 * table was loaded (NSL_ERR_ARG otherwise). */
nsl_status nsl_trace_set_dict(nsl_trace *tr, nsl_dict *d, nsl_error *err);
/* Data-model table `name` (borrowed; owned by the trace), every report's
 * rows concatenated with a `report` column (report index, I32).  A table no
 * report has is an empty table with the declared columns. */
nsl_status nsl_trace_table(nsl_trace *tr, const char *name, nsl_table **out, nsl_error *err);
/* Names of the data-model tables, NULL-terminated. */
const char *const *nsl_model_tables(void);
/* Rows of table `name` in each report, into rows[0..nreports) (counted
 * where no load has told them yet). */
nsl_status nsl_trace_report_rows(nsl_trace *tr, const char *name, int64_t *rows, nsl_error *err);

/* A column an analysis derived from report i's rows alone, kept by the
 * report's source beside its columns (the column cache: nsl_source_ops'
 * derived_get): a new column of `rows` rows and type `type` (not NSL_STR),
 * or NULL -- none kept, a source that keeps none, or a trace whose rows are
 * filtered (--from/--to, --device: its rows are not the source's).  Names
 * are the deriver's (each names what it derives and how: a new way is a new
 * name).  nsl_trace_derived_put keeps one (nothing where it cannot). */
nsl_column *nsl_trace_derived_get(nsl_trace *tr, int i, const char *table, const char *name, nsl_type type,
                                  int64_t rows);
void nsl_trace_derived_put(nsl_trace *tr, int i, const char *table, const char *name, const nsl_column *col);
/* nsl_trace_derived_get of n columns at once -- d[k] asks report d[k].report's
 * (table, name) of that type and rows -- into d[k].col (NULL: none), read on
 * up to NSL_THREADS threads: the checks of their files (the cache reads
 * every byte of one) run side by side. */
typedef struct nsl_derived_ask {
  int report;
  const char *table, *name;
  nsl_type type;
  int64_t rows;
  nsl_column *col;   /* the answer */
} nsl_derived_ask;
void nsl_trace_derived_get_many(nsl_trace *tr, nsl_derived_ask *d, int n);
/* Whether report i keeps derived columns in this trace (what a deriver
 * asks before it cuts a report's part to keep). */
int nsl_trace_keeps_derived(const nsl_trace *tr, int i);

/* Runs one read-only SQL statement on report i's database: NSL_ERR_ARG for
 * a report out of range, NSL_ERR_NOTFOUND when its source has no SQL. */
nsl_status nsl_trace_sql(nsl_trace *tr, int i, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err);
/* Calls fn(ctx, name, value) for each entry of report i's capture metadata; NSL_ERR_ARG for a report out of range, NSL_OK
 * without a call for a source that records none. */
nsl_status nsl_trace_metadata(nsl_trace *tr, int i, nsl_metadata_fn fn, void *ctx, nsl_error *err);
/* Whether report i's source is read from an archive whose members
 * nsl_trace_members / nsl_trace_member_read reach. */
int nsl_trace_has_members(const nsl_trace *tr, int i);
/* Calls fn(ctx, name) for each archive member of report i whose name starts
 * with prefix; returns the number of calls (0 for a source without members
 * or a report out of range). */
size_t nsl_trace_members(nsl_trace *tr, int i, const char *prefix, void (*fn)(void *ctx, const char *name),
                         void *ctx);
/* Reads archive member `name` of report i whole (release with free());
 * NSL_ERR_ARG for a report out of range, NSL_ERR_NOTFOUND for a source
 * without members or no such member. */
nsl_status nsl_trace_member_read(nsl_trace *tr, int i, const char *name, void **data, size_t *len,
                                 nsl_error *err);

/* ---- Nsight Systems reports (src/source/nsys_rep.c) ------------------ */

/* A report (.nsys-rep, .qdrep) is recognised by its first bytes ("NVIDIA
 * Tegra Profiler Report ") and opened through `nsys export --type=sqlite`
 * into <cache>/exports/<key>/<stem>.sqlite (nsl__cache_dir): reused while
 * the report keeps its size, modification time and inode; made under an
 * exclusive lock on the entry (of two processes one exports, the other
 * waits and reuses it), written under a temporary name and renamed.  nsys
 * is the trace's option (--nsys), else nsl_rep_find_nsys's; the time limit
 * is NSL_NSYS_TIMEOUT seconds (default 7200). */
/* 1 when the file at path starts like an Nsight Systems report. */
int nsl_rep_sniff(const char *path);

/* Finds nsys: given (a path, or a name looked up in PATH), else $NSYS, else
 * PATH, else the newest /opt/nvidia/nsight-systems[-cli]/VERSION/bin/nsys,
 * else CUDA's bin folders.  Sets *out to the path (malloc'd; free() it);
 * NSL_ERR_NOTFOUND when none is found (the message says where it looked or
 * what did not run; *out then holds what was tried), NSL_ERR_NOMEM. */
nsl_status nsl_rep_find_nsys(const char *given, char **out, nsl_error *err);

/* Finds the QdstrmImporter shipped with the nsys at path (which turns the
 * .qdstrm that `nsys profile` leaves when it cannot find its importer into a
 * report): beside it or in the host-linux-x64 folder beside its folder, at
 * each link from path to the program.  Sets *out (malloc'd) and returns 0;
 * -1 when none is found. */
int nsl_rep_find_importer(const char *nsys, char **out);

/* Exports report path (or reuses the cached export) with nsys (as
 * nsl_rep_find_nsys's given: NULL searches); *sqlite (malloc'd) receives
 * the export's path.  NSL_ERR_NOTFOUND when nsys is not found, NSL_ERR_IO
 * when it fails or runs out of time, with the command named. */
nsl_status nsl_rep_export(const char *path, const char *nsys, char **sqlite, nsl_error *err);


#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
