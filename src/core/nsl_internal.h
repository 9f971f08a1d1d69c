/*
 * nsl_internal.h -- the kernels behind nsl's own analyses and figures: NVTX
 * projection, range trees, nsys-jax's compile-time rules, timeline lanes,
 * span merging, text rows.  Not installed and with no promise of
 * stability: they change with the analyses that use them.  Embedders use
 * include/nsl/nsl.h only.  This header never includes lua.h.
 */
#ifndef NSL_CORE_NSL_INTERNAL_H
#define NSL_CORE_NSL_INTERNAL_H

#include "nsl/nsl.h"
#include "nsl/source.h"

/* ---- sweeps over NVTX ranges (src/core/sweep.c) ---------------------- */

/* The projection of NVTX ranges onto the GPU (the semantics of nsys's
 * nvtx_gpu_proj_trace): a GPU operation (kernel, memcpy, memset) belongs to
 * every range that encloses, on the same thread, the API call that launched
 * it (range start <= call start and call stop <= range stop).  Threads are
 * given by key tuples (e.g. report, pid, tid) compared by value on both
 * sides; every key column is integer (I32/I64); a NULL key is on no thread.
 * A range's NULL stop means open until the end; ranges masked out, with a
 * NULL start or a stop before their start take no part (and calls like
 * that match nothing).  One sweep per thread: O(R + A) when each thread's
 * rows come in start order (as exports store them; else a radix sort),
 * plus O(D) per call, D the number of ranges open at the call. */
typedef struct nsl__nvtx_input {
  int nkeys;                          /* 1..8 key columns per side */
  const nsl_column *const *range_keys;
  const nsl_column *range_start, *range_stop;
  const nsl_column *range_mask;       /* NULL, or bool: the ranges that take part */
  const nsl_column *const *api_keys;
  const nsl_column *api_start, *api_stop;
  const nsl_column *op_api;           /* per GPU op: its API call's row or -1 (nsl_join_index) */
  const nsl_column *op_start, *op_stop; /* ops with a NULL time are not counted */
  int parents_only;                   /* parent and depth alone (the other outputs NULL): no calls, no ops */
} nsl__nvtx_input;

typedef struct nsl__nvtx_projection {
  /* one row per range */
  nsl_column *parent;     /* I64: the tightest (shortest) enclosing range on the same thread, -1 for none;
                           * of two equal intervals the first in (start, -stop, row) order is the parent */
  nsl_column *depth;      /* I32: 0 for a top-level range; NULL for ranges that take no part */
  nsl_column *proj_start; /* I64: the first start of its GPU ops (NULL without ops) */
  nsl_column *proj_dur;   /* I64: from proj_start to the last stop of its GPU ops (NULL without ops) */
  nsl_column *ops;        /* I32: GPU ops launched inside it, children's included (saturates at INT32_MAX) */
  nsl_column *launches;   /* I32: distinct API calls that launched them (nsys's NumGPUOps) */
  nsl_column *gpu_time;   /* I64: sum of the ops' durations (stop - start) */
  nsl_column *children;   /* I32: child ranges that have GPU ops (nsys's NumChild) */
  /* one row per API call / op */
  nsl_column *api_range;  /* I64: the innermost range enclosing the call, -1 */
  nsl_column *op_range;   /* I64: the innermost range enclosing the op's launching call, -1 */
} nsl__nvtx_projection;

/* Fills out (every column new) or returns an error with out zeroed. */
nsl_status nsl__nvtx_project(const nsl__nvtx_input *in, nsl__nvtx_projection *out, nsl_error *err);
void nsl__nvtx_projection_free(nsl__nvtx_projection *p);

/* The top-level ranges alone: *out (BOOL, one row per range) is 1 where
 * nsl__nvtx_project would give depth 0, else 0 (a range that takes no part
 * too).  Reads the ranges' keys, times and mask; no calls, no ops.  O(R)
 * when each thread's rows that take part come in sweep order (start, then
 * stop descending, then row; *in_order = 1), else a sort per thread. */
nsl_status nsl__nvtx_top(const nsl__nvtx_input *in, nsl_column **out, int *in_order, nsl_error *err);

/* Paths of a forest as a tree of distinct paths: rows with the same label
 * under the same parent path share a node (e.g. NVTX ranges by name under
 * their parents' names).  parent: I64/I32 row of each row's parent or -1
 * (a parent masked out also makes a root); label: integer or string ids
 * (NULL is a label of its own).  NSL_ERR_ARG for a parent out of range or
 * a cycle.  Node ids are dense, in order of creation. */
typedef struct nsl__tree {
  int64_t nnodes;
  nsl_column *node_of;      /* I64 per row: its node, -1 for rows masked out */
  nsl_column *node_parent;  /* I64 per node: the parent node, -1 for roots */
  nsl_column *node_depth;   /* I32 per node: 0 for roots */
  nsl_column *node_row;     /* I64 per node: one row of the node (to gather labels) */
} nsl__tree;
nsl_status nsl__tree_paths(const nsl_column *parent, const nsl_column *label, const nsl_column *mask,
                          nsl__tree *out, nsl_error *err);
void nsl__tree_free(nsl__tree *t);

/* ---- range trees and nsys-jax kernels (src/core/jax.c) ---------------- */

/* A tree of ranges is a parent_row column (I64): each row's parent row, or
 * a negative value for a root (e.g. nsl_join_index of (report, parent_id)
 * against (report, range_id)). */

/* For every row in `through`: the nearest ancestor in `target`, reached
 * through ancestors that are all in `through` and not in `target` (*anc,
 * I64, -1 when the walk leaves `through` or reaches a root; -1 for rows not
 * in `through`); *inner (BOOL) marks the `through` rows that lie on such a
 * walk, i.e. that have a `through` descendant.  E.g. thunk -> XlaModule. */
nsl_status nsl__tree_ancestor(const nsl_column *parent_row, const nsl_column *through, const nsl_column *target,
                             nsl_column **anc, nsl_column **inner, nsl_error *err);
/* Mask (BOOL) of rows strictly below a row of mask. */
nsl_column *nsl__tree_under(const nsl_column *parent_row, const nsl_column *mask, nsl_error *err);
/* For every row, how many earlier rows share its group (0, 1, ...): pandas'
 * groupby().cumcount().  group_of as nsl_groupby gives; negative: NULL. */
nsl_column *nsl__group_cumcount(const nsl_column *group_of, nsl_error *err);
/* Per row: its value of v minus the median of the values of the other rows
 * with its key (keys: an integer column; rows in any order), as an f64
 * column in row order; NaN for a row alone with its key, counted in
 * *singles.  Integer values are summed as integers and halved as doubles,
 * as the column arithmetic does. */
nsl_column *nsl__median_excess(const nsl_column *keys, const nsl_column *v, int64_t *singles, nsl_error *err);
/* nsl__median_excess of nv value columns with one grouping of the rows
 * (none when the keys are in order already): out[c] for vs[c]. */
nsl_status nsl__median_excess_many(const nsl_column *keys, const nsl_column *const *vs, int nv, nsl_column **out,
                                   int64_t *singles, nsl_error *err);
/* Per group and lag (1 .. max_lag): the differences v[i + lag] - v[i]
 * between rows of one group (pairs with a NULL left out) -- their count,
 * median and quartiles exactly as a group-by's count, median and
 * quantile(0.25 / 0.75) of them.  gid (I64, 0 .. ng - 1): each group's rows
 * one run (a table sorted by its group keys); v: I64.  out[0] (I64 counts),
 * out[1..3] (F64 median, q1, q3; NaN without differences), each of
 * ng * max_lag rows, row g * max_lag + lag - 1.  spread >= 0: a group's
 * lags stop at the first regular one (at least 2 differences, median > 0,
 * q3 - q1 <= spread x median); its later lags are left without
 * differences (count 0). */
nsl_status nsl__lag_periods(const nsl_column *gid, const nsl_column *v, int64_t ng, int max_lag, double spread,
                            nsl_column **out, nsl_error *err);
/* nsl_column_new without the zero fill, for a kernel that writes every
 * element (a reused large block is not cleared first, a fresh one is
 * written once, not cleared and then written); NULL on out of memory. */
nsl_column *nsl__column_new_uninit(nsl_type type, int64_t len, nsl_dict *dict);
/* The rows of cols[0..n) one after the other in a new column (n >= 1,
 * columns of one type and dictionary, which the caller checked), copied
 * on the threads (nsl__run_rows: fresh pages are faulted in by every
 * thread); NULL with err on out of memory. */
nsl_column *nsl__column_concat(const nsl_column *const *cols, int n, nsl_error *err);

/* A dictionary that may hold a string under several ids (aliases): a
 * loading thread's dictionary of one report, whose ids are moved into the
 * trace's dictionary by string (the aliases of a string to one id) before
 * any column uses them.  nsl__dict_append adds a string to it under a new
 * id without looking it up (in a dictionary without aliases: interns it);
 * the strings so added are indexed at the next lookup.  Set before the
 * dictionary is shared. */
void nsl__dict_allow_aliases(nsl_dict *d);
int nsl__dict_aliases(const nsl_dict *d);
nsl_status nsl__dict_append(nsl_dict *d, const char *s, size_t len, int32_t *id, nsl_error *err);
/* Row i of a where mask[i] is set, else row i of b (nsl.where): mask an
 * NSL_BOOL column of n rows; a and b of one type (string columns of one
 * dictionary), each of n rows, or of one row that stands for every row
 * (a_one, b_one).  NULLs are taken as they are. */
nsl_column *nsl__column_where(const nsl_column *mask, const nsl_column *a, int a_one, const nsl_column *b, int b_one,
                              nsl_error *err);
/* nsl_column_stats, with the standard deviation (a second pass over the
 * values) only when with_std; without it out->std stays 0. */
void nsl__column_stats(const nsl_column *c, nsl_stats *out, int with_std);
/* The least and greatest non-NULL value of an integer (I64, I32) column
 * into *min, *max: 1, or 0 when it has none (or is of another type). */
int nsl__int_extent(const nsl_column *c, int64_t *min, int64_t *max);
/* The mean of count integers of exact sum `sum` (NaN for none), as every
 * group mean of integers is computed. */
__extension__ double nsl__mean_i128(int64_t count, __int128 sum);
/* Whether count integers within [lo, hi] have an exact sum of squared
 * deviations from their moments (count * max(|lo|, |hi|) < 2^63). */
int nsl__moments_exact(int64_t count, int64_t lo, int64_t hi);
/* The sample standard deviation of count integers from their exact sum s1
 * and sum of squares s2 (under nsl__moments_exact): as every group std of
 * integers is computed, so sums added up in any order give the same bits. */
__extension__ double nsl__std_moments(int64_t count, __int128 s1, __int128 s2);
/* Moments that processes add up (a distributed summary): per group g of ng
 * (gid; negative or NULL: no group), over the non-NULL integers v, parts
 * holds NSL_MOMENT_PARTS int64 at g * NSL_MOMENT_PARTS: the count, the sum
 * and the sum of squares (each as three 42-bit limbs, so that the parts of
 * up to 2^21 processes sum without overflow); lo and hi the least and
 * greatest value (INT64_MAX / INT64_MIN for none).  nsl__moments_finish
 * reads the parts summed over the processes and lo / hi reduced by min /
 * max: out[0..5] count (i64), sum (i64, NULL for none), mean and std (f64,
 * the bits a group-by of all the values gives), min and max (i64, NULL
 * for none); *exact 0 when a group's
 * values are too large for exact deviations (the caller then aggregates
 * the values themselves). */
#define NSL_MOMENT_PARTS 7
nsl_status nsl__moments(const nsl_column *gid, const nsl_column *v, int64_t ng, nsl_column **parts, nsl_column **lo,
                        nsl_column **hi, nsl_error *err);
nsl_status nsl__moments_finish(const nsl_column *parts, const nsl_column *lo, const nsl_column *hi,
                               nsl_column *out[6], int *exact, nsl_error *err);
/* Per row: the mean of count[i] integers whose sum is sum[i] (both i64;
 * count 0 or NULL: NaN), with the bits a group-by's mean of integers gives
 * (nsl__mean_i128) where the sum did not wrap: means of sums that
 * processes added up. */
nsl_column *nsl__int_mean(const nsl_column *count, const nsl_column *sum, nsl_error *err);
/* Per row: the quantile q of n[i] integers (i64 columns) whose order
 * statistics at the quantile's position and the next one are x[i] and
 * y[i] (y unread where the position is whole), with the bits a group-by's
 * quantile gives (nsl__quantile_pos, nsl__lerp_codes); n 0 or NULL: NaN.
 * Quantiles that processes found together. */
nsl_column *nsl__quantile_of(const nsl_column *n, double q, const nsl_column *x, const nsl_column *y, nsl_error *err);
/* Per target t: how many rows of group tgid[t] have a value <= pivot[t],
 * where the rows (gid, v) are sorted by group, then value (all i64). */
nsl_column *nsl__count_le(const nsl_column *gid, const nsl_column *v, const nsl_column *tgid, const nsl_column *pivot,
                          nsl_error *err);
/* One aggregate of g:agg{...}, parsed from "name=fn(col, q)", "fn(col)" or
 * "count" (blanks around the parts ignored; fn: count, sum, min, max, mean
 * or avg, median, quantile, std, first, last, count_distinct): the result's
 * name (given, else "fn_col" or "fn"), the column ("" for count), the
 * aggregate and q (0.5 unless given).  NSL_ERR_ARG names what is wrong. */
typedef struct nsl__agg_item {
  char out[400];
  char col[128];
  nsl_agg agg;
  double q;
} nsl__agg_item;
nsl_status nsl__agg_parse(const char *s, nsl__agg_item *it, nsl_error *err);

/* The rows of each group, in row order (a counting sort): rows of group k
 * are (*rows)[(*start)[k] .. (*start)[k+1]); rows whose group is negative or
 * >= ngroups are left out.  *start (ngroups + 1) and *rows (n) are malloc'd. */
nsl_status nsl__group_order(const int64_t *group_of, int64_t n, int64_t ngroups, int64_t **start, int64_t **rows,
                            nsl_error *err);
/* A string column of ngroups rows: the strings of each group's rows (group
 * ids as nsl__group_order takes them, I64) joined by sep in row order; NULL
 * strings skipped, a group without strings NULL. */
nsl_column *nsl__group_concat(const nsl_column *group_of, int64_t ngroups, const nsl_column *strings, const char *sep,
                              size_t seplen, nsl_error *err);
/* For every row with is_a set: the summed overlap of [start, stop) with the
 * rows of the same group (group_of NULL: one group) whose is_a is 0 (each
 * overlap counted, not their union); 0 for the other rows.  E.g. the
 * part of each communication kernel hidden under computation.  I64. */
nsl_column *nsl__iv_overlap_sum(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                               const nsl_column *is_a, nsl_error *err);

/* The XLA compilation ranges of one process (host push/pop NVTX ranges in
 * their recorded order), as nsys-jax reads them. */
typedef struct nsl__jax_compile_in {
  int64_t n;
  const int64_t *start, *stop, *parent;   /* parent: row index or -1 */
  const int32_t *tid, *num_child;
  const int64_t *dur_child, *dur_nonchild; /* NSL_NULL_I64 = unknown */
  const uint8_t *is_compile;              /* XlaCompile ranges */
  const uint8_t *is_backend;              /* XlaCompileBackend ranges (they name the program) */
  const uint8_t *is_tsl;                  /* XLA's own ranges ("TSL:" prefix) */
} nsl__jax_compile_in;
typedef struct nsl__jax_compile_out {      /* n entries each, malloc'd */
  int64_t *parent;        /* worker-thread ranges grafted under the compiling thread */
  int32_t *num_child;
  int64_t *dur_child, *dur_nonchild;   /* NULL where grafting made them meaningless */
  uint8_t *keep;          /* the compile frame: XlaCompile ranges, what runs under them, TSL only */
  int64_t *program_row;   /* the XlaCompileBackend row naming the row's program, or -1 */
} nsl__jax_compile_out;
/* nsys-jax's _splice_parallel_ranges, program propagation and _drop_non_tsl:
 * top-level ranges of other threads inside an XlaCompile range's window are
 * grafted under the deepest enclosing range of the compiling thread; rows
 * take the program of the nearest XlaCompileBackend (or its parent); other
 * ranges are folded into their parents. */
nsl_status nsl__jax_compile_tree(const nsl__jax_compile_in *in, nsl__jax_compile_out *out, nsl_error *err);
void nsl__jax_compile_out_free(nsl__jax_compile_out *out);

typedef struct nsl__jax_attr_in {
  int64_t n;
  const int64_t *start, *stop, *parent;
  const int32_t *tid;
  const int64_t *dur_child, *dur_nonchild;
  int32_t main_tid;       /* the thread that runs XlaCompile */
  const uint8_t *collapsed; /* rows whose detail was removed (child time 0); may be NULL */
} nsl__jax_attr_in;
/* nsys-jax's parallel-aware compile-time attribution: each compiling-thread
 * range with worker-thread children spends its parallel region's wall time
 * in proportion to the workers' non-child times; nonchild[i] and child[i]
 * (ns, double) are row i's contributions (0 for rows that add nothing). */
nsl_status nsl__jax_compile_attribute(const nsl__jax_attr_in *in, double *nonchild, double *child, nsl_error *err);

/* ---- figures and exports: bins, sub-rows, spans, text rows ------------ */
/* (src/core/binning.c, src/core/format_rows.c) */

#define NSL_SPANS_EXTRA_LANES 65536   /* group / lane ids may go this far past the row count */

/* Edges of nbins equal bins over [lo, hi): nbins + 1 integers, edge b =
 * lo + floor((hi - lo) * b / nbins), exact.  NULL and err filled for hi <=
 * lo or nbins outside 1..2^31.  Result NSL_I64. */
nsl_column *nsl__bin_edges(int64_t lo, int64_t hi, int64_t nbins, nsl_error *err);
/* How many values of t (an integer column) fall in each of the bins of
 * nsl__bin_edges(lo, hi, nbins): bin b holds edge b <= v < edge b + 1;
 * values outside [lo, hi) and NULLs are left out.  One pass on the threads,
 * nothing of the rows' length allocated (a histogram of every event's start
 * where whole-column arithmetic made five columns of them).  NULL and err
 * filled for a bad range, nbins outside 1..2^20 or a column that is not
 * integer.  Result NSL_I64, nbins long. */
nsl_column *nsl__bin_counts(const nsl_column *t, int64_t lo, int64_t hi, int64_t nbins, nsl_error *err);
/* Busy time per group and bin (bins of nsl__bin_edges(lo, hi, nbins)): the
 * length of the union of each group's intervals [start, stop) inside each
 * bin, so busy / bin width is the busy fraction (utilisation heatmaps).
 * group_of: integer ids below ngroups (NULL: all rows in group 0); rows with
 * a negative or NULL id, NULL times, stop < start or masked out are skipped.
 * Unsorted rows are fine.  Result NSL_I64, ngroups * nbins, element
 * g * nbins + b. */
nsl_column *nsl__busy_per_bin(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                             int64_t ngroups, const nsl_column *mask, int64_t lo, int64_t hi, int64_t nbins,
                             nsl_error *err);
/* Rows that overlap the window [from, to): start < to and stop > from (NULL
 * times never do); one pass, nothing allocated.  -1 unless start and stop
 * are integer columns of one length.  (A window holding every row needs no
 * selection.) */
int64_t nsl__count_overlapping(const nsl_column *start, const nsl_column *stop, int64_t from, int64_t to);
/* The rows that overlap [from, to) as nsl__count_overlapping counts them:
 * their 0-based indices, ascending (NSL_I64; none when from or to is
 * NULL).  One pass, no mask: a narrow window of a large table costs its
 * rows, not the table's.  NULL and err filled for bad columns. */
nsl_column *nsl__overlapping_rows(const nsl_column *start, const nsl_column *stop, int64_t from, int64_t to,
                                 nsl_error *err);

/* Little-endian packing of a column for embedding (src/core/pack.c). */
typedef enum nsl__pack_type {
  NSL_PACK_U8, NSL_PACK_U16, NSL_PACK_I32, NSL_PACK_U32, NSL_PACK_F32, NSL_PACK_F64
} nsl__pack_type;
/* The pack type named "u8", "u16", "i32", "u32", "f32" or "f64"; -1 otherwise. */
int nsl__pack_type_of(const char *name);
/* Bytes per value of type t (0 when t is not one). */
size_t nsl__pack_width(nsl__pack_type t);
/* c's values less offset as little-endian `as` into out (len * width bytes):
 * integer targets refuse NULL and values outside their range, f64 refuses
 * integers beyond 2^53, NULL is NaN for floats; NSL_ERR_ARG names the row. */
nsl_status nsl__column_pack_le(const nsl_column *c, nsl__pack_type as, int64_t offset, unsigned char *out,
                              nsl_error *err);
/* c's values less offset as unsigned LEB128 varints into out (at most
 * NSL_PACK_VARINT_MAX bytes a value), *nbytes written: refuses NULL and
 * values below offset; NSL_ERR_ARG names the row. */
#define NSL_PACK_VARINT_MAX 10   /* NSL_VARINT_MAX (core/varint.h) */
nsl_status nsl__column_pack_varint(const nsl_column *c, int64_t offset, unsigned char *out, size_t *nbytes,
                                  nsl_error *err);

/* A sub-row per row such that rows of one group overlapping in time never
 * share one; for properly nested ranges (NVTX push/pop per thread) the
 * nesting depth, 0 outermost.  group_of: dense ids below the row count +
 * NSL_SPANS_EXTRA_LANES (NULL: one group).  Rows with NULL times, stop < start or a negative group get
 * NULL.  Result NSL_I32. */
nsl_column *nsl__nest_depth(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                           nsl_error *err);

/* Lanes of a timeline, group after group (NVTX ranges per thread, on a
 * sub-row per nesting depth; GPU streams), from nsl__nest_lanes. */
typedef struct nsl__lane_layout {
  nsl_column *lane;         /* I32 per row: its lane; NULL when left out or at a sub-row >= max_sub */
  nsl_column *row;          /* I64 per group, in lane order: the row where the group first appears */
  nsl_column *first_lane;   /* I64 per group: its first lane */
  nsl_column *lanes;        /* I64 per group: how many lanes it owns */
  nsl_column *count;        /* I64 per group: its rows (those left out too) */
} nsl__lane_layout;
/* Rows grouped by the tuple of keys[0..nkeys) (NULL is a value of its own,
 * as in nsl_groupby) get their nsl__nest_depth sub-row within the group, and
 * the groups, in the order of their key tuples (as nsl_argsort orders
 * them: ascending, NULL first), own consecutive lanes from lane first on:
 * as many as their deepest sub-row + 1, at most max_sub (0 for a group
 * none of whose rows takes part).  A row's lane is its group's first lane
 * + its sub-row.  One walk over the rows in table order when every group is
 * in start order (else as nsl__nest_depth orders them), and no column of
 * group ids.  start and stop NULL: the rows are not ranges, and every row
 * is on its group's first lane (the lanes of key tuples, e.g. a timeline's
 * GPU streams).  first, max_sub >= 0; the lanes must fit in int32.  Free
 * out with nsl__lane_layout_free. */
nsl_status nsl__nest_lanes(const nsl_column *start, const nsl_column *stop, const nsl_column *const *keys, int nkeys,
                          int64_t first, int64_t max_sub, nsl__lane_layout *out, nsl_error *err);
void nsl__lane_layout_free(nsl__lane_layout *l);

/* Spans merged for drawing (nsl__spans_merge). */
typedef struct nsl__spans {
  nsl_column *x0, *x1;   /* F64: extent of each merged span */
  nsl_column *busy;      /* F64: length of the union of the spans it holds */
  nsl_column *lane;      /* I64 */
  nsl_column *cls;       /* I64: class (NSL_NULL_I64 for NULL or no classes) */
  nsl_column *count;     /* I64: spans held */
  nsl_column *row;       /* I64: the first input row of the span (0-based) */
} nsl__spans;
/* How nsl__spans_merge maps and merges coordinates. */
typedef struct nsl__span_opts {
  double tol;                /* merge across gaps up to tol (in mapped units, e.g. px) */
  double max_len;            /* a merged span stays within this (<= 0: no bound) */
  int64_t origin;            /* x = (v - origin) * scale + offset, e.g. ns to px */
  double scale, offset;      /* scale > 0 (0 is taken as 1) */
  const nsl_column *mask;    /* bool: rows where 1 take part (NULL: all) */
} nsl__span_opts;
#define NSL_SPAN_OPTS_INIT {0, 0, 0, 1, 0, NULL}
/* Merges the spans [x0, x1) of each lane and class, coordinates mapped by
 * o (NULL: identity), visited by x within each lane: a span joins the one
 * before it of its lane and class when the gap is at most o->tol and the
 * merged span stays within o->max_len; a span wholly inside the one before
 * it always joins.  busy / (x1 - x0) is the covered fraction of a merged
 * span (its opacity when drawn).  x0, x1: numeric columns; lane: integer
 * ids below the row count + NSL_SPANS_EXTRA_LANES; cls: integer ids
 * 0..4095 (a bool column: 0 and 1) or NULL (at most 2^26 lanes x
 * classes).  Rows with a NULL or
 * non-finite coordinate, x1 < x0, or a negative lane are dropped.  Rows
 * already in order within each lane are not sorted.  Free out with
 * nsl__spans_free. */
nsl_status nsl__spans_merge(const nsl_column *x0, const nsl_column *x1, const nsl_column *lane,
                           const nsl_column *cls, const nsl__span_opts *o, nsl__spans *out, nsl_error *err);
void nsl__spans_free(nsl__spans *s);

/* Rows [0, n) of cols as text, one template fmt per row, rows joined by sep
 * (NULL: "\n").  Conversions, each taking the next column: %s a string
 * column as a JSON string (escaped; NULL as null; %S: NULL as ""), %d an
 * integer column, %t
 * an integer ns column as us with up to three decimals, %f a numeric column
 * as the shortest decimal that reads back (NaN as null), %% a literal %.
 * mask (NULL or bool) keeps the rows where it is 1.  *out is malloc'ed and
 * NUL-terminated (*len excludes the NUL).  NSL_ERR_ARG, NSL_ERR_NOMEM. */
nsl_status nsl__format_rows(const char *fmt, const nsl_column *const *cols, int ncols, const nsl_column *mask,
                           const char *sep, char **out, size_t *len, nsl_error *err);
/* nsl__format_rows over rows [first, first + count) alone (clipped to the
 * columns; count < 0: to the end): a long text made in pieces. */
nsl_status nsl__format_rows_range(const char *fmt, const nsl_column *const *cols, int ncols, const nsl_column *mask,
                                 const char *sep, int64_t first, int64_t count, char **out, size_t *len,
                                 nsl_error *err);

/* "Did you mean": of candidates[0..n), the one closest to word by edit
 * distance when it is a likely misspelling (at most max(1, min(3,
 * strlen(word) / 3)) edits away); NULL otherwise.  (src/core/suggest.c) */
const char *nsl__closest(const char *word, const char *const *candidates, int n);

/* A whole table as text for machines: CSV (RFC 4180, a header row of the
 * names) or JSON (an array of one object per row, keys in column order).
 * NULL (and NaN, infinities) is an empty CSV field and JSON null; integers
 * and strings are written whole (JSON strings escaped).  *out is malloc'ed,
 * NUL-terminated, *len excludes the NUL.  NSL_ERR_ARG, NSL_ERR_NOMEM. */
typedef enum nsl__text_format { NSL_TEXT_CSV, NSL_TEXT_JSON } nsl__text_format;
nsl_status nsl__format_table(const char *const *names, const nsl_column *const *cols, int ncols, int64_t nrows,
                            nsl__text_format f, char **out, size_t *len, nsl_error *err);


/* ---- caches, progress and warnings (src/core/cache_dir.c, progress.c) -- */

/* The source and source context of report i of tr (0-based; NULL out of
 * range), for sources that build on other sources (the CSV source joining
 * files of one run, MPI's borrowed reports).  A report loaded through the
 * columnar cache gives the cache's wrapper: call the returned ops on src. */
const nsl_source_ops *nsl__trace_source(const nsl_trace *tr, int i, void **src);
/* The session start (UTC ns) of the clock tr's reports share: each report's
 * times are moved by its start less this one (its time_offset).  By default
 * the earliest of tr's own reports; a trace of some reports of a larger job
 * (an MPI process's, src/mpi) is on the job's clock: its earliest. */
void nsl__trace_set_clock_origin(nsl_trace *tr, int64_t start_utc);

/* A hash of the sources that turn inputs into columns (generated at build
 * time by cmake/loader_id.cmake): part of the columnar cache's keys. */
extern const char nsl__loader_id[];

/* The folder of nsl's caches, subfolder `sub` (created with parents, mode
 * 0700); *out is malloc'd.  Refused (NSL_ERR_IO, one line) unless the root
 * and the subfolder are folders of this user that no one else can write,
 * the subfolder not a link.  nsl__cache_dir_open also gives the subfolder
 * open (*dirfd, close-on-exec; the caller closes it). */
nsl_status nsl__cache_dir(const char *sub, char **out, nsl_error *err);
nsl_status nsl__cache_dir_open(const char *sub, char **out, int *dirfd, nsl_error *err);
/* One warning per process that the cache could not be used (what: where,
 * detail: why); the work goes on without it. */
void nsl__cache_warn(const char *what, const char *detail);

/* Progress of long work, for a front end to show (the library never
 * prints).  begin/end bracket the work (nested brackets count into the
 * outermost); add counts units done, from any thread. */
void nsl__progress_begin(const char *what, const char *unit, int64_t total);
void nsl__progress_add(int64_t n);
/* n more units to do than the bracket's total said (an estimate learnt on the way). */
void nsl__progress_expect(int64_t n);
void nsl__progress_end(void);
typedef struct nsl__progress_info {
  int generation;           /* changes with each outermost begin */
  char what[128], unit[16];
  int64_t done, total;      /* total 0: unknown */
  double elapsed;           /* seconds since the outermost begin */
} nsl__progress_info;
/* Fills out and returns 1 while work is bracketed, else 0. */
int nsl__progress_snapshot(nsl__progress_info *out);
/* Monotonic clock, seconds. */
double nsl__now(void);
/* Warnings the library cannot return (a cache it could not write: the work
 * went on without it) go to the sink a front end installed, else nowhere. */
typedef void (*nsl__warn_fn)(void *ctx, const char *msg);
void nsl__set_warn_sink(nsl__warn_fn fn, void *ctx);
void nsl__get_warn_sink(nsl__warn_fn *fn, void **ctx);   /* the sink installed now (to put it back later) */
/* A front end that draws the whole terminal (nsl tui) claims it: whoever
 * draws a progress line of its own (the CLI) leaves the terminal alone
 * meanwhile. */
void nsl__terminal_claim(int on);
int nsl__terminal_claimed(void);
void nsl__warn(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;


/* ---- columns over mapped files (src/core/column.c) ------------------- */

/* A block of memory a cache file was read into (nsl__big_alloc), freed
 * with nsl__big_free when its last column goes, or a file mapped under a
 * read lease (leased_map.h), unmapped then. */
typedef struct nsl__mapping nsl__mapping;
/* Takes over [addr, addr + len) (one reference); NULL on out of memory. */
nsl__mapping *nsl__mapping_new(void *addr, size_t len);
/* Takes over leased mapping slot at [addr, addr + len); NULL on out of memory. */
nsl__mapping *nsl__mapping_leased(int slot, void *addr, size_t len);
nsl__mapping *nsl__mapping_retain(nsl__mapping *m);
void nsl__mapping_release(nsl__mapping *m);
/* A column of len elements at data, which lies inside m (retained). */
nsl_column *nsl__column_mapped(nsl_type type, int64_t len, void *data, nsl__mapping *m, nsl_dict *dict);
/* Gives a mapped column memory of its own (a copy; nothing for others), so
 * that writing all of it costs no copy-on-write fault per page. */
nsl_status nsl__column_unmap(nsl_column *c, nsl_error *err);


/* A table loader in the three steps of nsl_table_load_begin/_read/_end:
 * plan (caller's thread) makes *plan for columns idx[0..n) (NULL: nothing
 * to read); read (any thread) fills it; store (caller's thread) puts its
 * columns in t, keeping columns t has already; free releases a plan.  The
 * table's loader context is passed to plan. */
typedef struct nsl__load_steps {
  nsl_status (*plan)(void *ctx, nsl_table *t, const int *idx, int n, void **plan, nsl_error *err);
  nsl_status (*read)(void *plan, nsl_error *err);
  nsl_status (*store)(void *plan, nsl_table *t, nsl_error *err);
  void (*free)(void *plan);
} nsl__load_steps;
/* Gives t's loader (nsl_table_set_loader, set first) these steps too. */
void nsl__table_set_load_steps(nsl_table *t, const nsl__load_steps *steps);

#endif
