/* rowfilter.h -- row filters: conditions on a table's rows, evaluated where
 * the rows are read, so that only the passing rows are ever loaded.
 *
 * One mechanism for two users: a trace's own filters (nsl__trace_filter: the
 * window and device of --from/--to/--device) and a distributed run's
 * (src/mpi/dist.c: evaluated by the process that owns the report, so only
 * passing rows move).  A filter is kept encoded (a flat byte buffer: what a
 * distributed run sends in its requests) and applied around a source's load
 * and count (nsl__row_filter_load, nsl__row_filter_count).
 *
 * Basic outline:
 *   1. nsl__row_filters_set(&set, table, conds, n): the rows of `table`
 *      are those passing every condition (a later call for the same table
 *      replaces the earlier one).
 *   2. nsl__row_filters_find(set, table, &len): its encoding, or NULL.
 *   3. nsl__row_filter_load / _count: a source's load or count with an
 *      encoding applied (NULL: the source's own). */
#ifndef NSL_CORE_ROWFILTER_H
#define NSL_CORE_ROWFILTER_H
#include <stddef.h>

#include "nsl/nsl.h"
#include "nsl/source.h"

/* A condition on a column of the table: a regex search on a string column
 * (case-insensitive: NSL__ROW_IMATCH), membership in a set of integers, or a
 * comparison with values[0] (an nsl_cmp).  NULLs never pass, except that a
 * comparison with or_null set passes them (an NVTX mark has no stop: it
 * overlaps every window it starts in).  A condition on a column the
 * report lacks, or on `report` or `dur` (derived), filters none of that
 * report's rows. */
enum { NSL__ROW_MATCH = 100, NSL__ROW_IMATCH = 101, NSL__ROW_IN = 102 };
typedef struct nsl__row_cond {
  const char *column;
  int op;                  /* NSL__ROW_MATCH, NSL__ROW_IMATCH, NSL__ROW_IN or an nsl_cmp */
  const char *pattern;     /* NSL__ROW_MATCH, NSL__ROW_IMATCH */
  const int64_t *values;   /* NSL__ROW_IN: the set; a comparison: the value */
  int nvalues;
  int or_null;             /* a comparison: NULL passes too */
} nsl__row_cond;

/* The filters of some tables, each encoded (NULL: none). */
typedef struct nsl__row_filters nsl__row_filters;

/* Sets table's filter in *set (created when NULL) to conds[0..n), checked
 * and encoded here: NSL_ERR_ARG for a malformed condition or a bad regex,
 * naming the table. */
nsl_status nsl__row_filters_set(nsl__row_filters **set, const char *table, const nsl__row_cond *conds, int n,
                                nsl_error *err);
/* The encoding of table's filter (*len its size), or NULL (*len 0). */
const void *nsl__row_filters_find(const nsl__row_filters *set, const char *table, size_t *len);
void nsl__row_filters_free(nsl__row_filters *set);

/* The trace's own filter of table (before any of its tables is loaded,
 * else NSL_ERR_ARG): every report's rows of `table` are those passing
 * conds[0..n), times compared on the trace's clock. */
nsl_status nsl__trace_filter(nsl_trace *tr, const char *table, const nsl__row_cond *conds, int n, nsl_error *err);

/* ops->load of the report (src), with the filter (blob, blen; NULL: none)
 * applied: out[k] holds the passing rows only.  The condition columns are
 * read into a dictionary of their own (at time offset `offset`, as the
 * load's), so dict sees only the loaded rows' strings. */
nsl_status nsl__row_filter_load(const nsl_source_ops *ops, void *src, const char *table, const char *const *cols,
                                const nsl_type *types, int n, nsl_dict *dict, int64_t offset, const void *blob,
                                size_t blen, nsl_column **out, nsl_error *err);
/* ops->count, with the filter (blob, blen; NULL: none) applied. */
nsl_status nsl__row_filter_count(const nsl_source_ops *ops, void *src, const char *table, int64_t offset,
                                 const void *blob, size_t blen, int64_t *out, nsl_error *err);

#endif
