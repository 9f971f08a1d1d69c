/*
 * source.h -- the interface of a report source, for those who implement a
 * new kind of input (nsl's own are in src/source/); a program that only
 * embeds nsl needs nsl/nsl.h alone.
 *
 * Basic outline of a source:
 *   1. Fill a static nsl_source_ops with .version = NSL_SOURCE_VERSION, the
 *      kind, and the operations the input has (describe, load, count and
 *      close always; sql, members, member_read, metadata when it has them).
 *   2. Open the input into a state of your own and an nsl_report_info.
 *   3. nsl_trace_add_source(trace, &ops, state, &info, &err) adds it as a
 *      report; the trace owns the state from then on (ops.close frees it).
 *      describe declares a table's columns with nsl_table_declare.
 * This header never includes lua.h.
 */
#ifndef NSL_SOURCE_H
#define NSL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/nsl.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The highest version of nsl_source_ops this nsl knows. */
#define NSL_SOURCE_VERSION 2

/* A report source: one SQLite export (or other input) seen as the data
 * model's tables.  Implemented in src/source/; the trace owns it.  Versioned
 * as SQLite's VFS is: `version` says which operations the structure has (1:
 * those up to metadata, 2: also derived_get and derived_put); a later
 * version only adds operations at the end, and the
 * trace calls only those of the version a source gives.  The
 * operations after close are optional (NULL when the source has no such
 * thing); callers go through nsl_trace_sql / nsl_trace_members /
 * nsl_trace_member_read / nsl_trace_metadata, never through a source's own
 * functions. */
typedef struct nsl_source_ops {
  int version;        /* the version of this structure the source fills: NSL_SOURCE_VERSION when it was built */
  const char *kind;   /* "nsys-sqlite", ... */
  /* Declares the columns of data-model table `name` on t (nsl_table_declare),
   * or returns NSL_ERR_NOTFOUND when the source has no such table. */
  nsl_status (*describe)(void *src, const char *name, nsl_table *t, nsl_error *err);
  /* Loads the columns colnames[0..n) of table `name`: out[k] receives a new
   * column (rows of this report only).  Strings interned into dict; times
   * shifted by time_offset ns. */
  nsl_status (*load)(void *src, const char *name, const char *const *colnames, const nsl_type *types,
                     int n, nsl_dict *dict, int64_t time_offset, nsl_column **out, nsl_error *err);
  /* Row count of table `name` (exact). */
  nsl_status (*count)(void *src, const char *name, int64_t *out, nsl_error *err);
  void (*close)(void *src);
  /* Runs one read-only SQL statement on the source's own database (a
   * source that has one: an SQLite export). */
  nsl_status (*sql)(void *src, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err);
  /* Calls fn(ctx, name) for each member of the source's archive whose name
   * starts with prefix (a source read from an archive: nsys-jax); returns
   * the number of calls. */
  size_t (*members)(void *src, const char *prefix, void (*fn)(void *ctx, const char *name), void *ctx);
  /* Reads archive member `name` whole into *data (release with free());
   * NSL_ERR_NOTFOUND when there is no such member. */
  nsl_status (*member_read)(void *src, const char *name, void **data, size_t *len, nsl_error *err);
  /* Calls fn(ctx, name, value) for each entry of the metadata the report
   * records about its capture (an nsys export: META_DATA_CAPTURE, in table
   * order, entries without a value left out); fn returning non-zero stops. */
  nsl_status (*metadata)(void *src, nsl_metadata_fn fn, void *ctx, nsl_error *err);
  /* Version 2.  A column nsl derived from this report's rows alone (what
   * those rows decide: each kernel's launching call), kept beside the
   * source's own columns -- the column cache -- so that a later run reads it
   * instead of deriving it again.  derived_get returns a new column of
   * `rows` rows of type `type` (not NSL_STR) kept under (table, name), or
   * NULL: none, or not of that shape; derived_put keeps col under that name
   * (whole or not at all; nothing when it cannot). */
  nsl_column *(*derived_get)(void *src, const char *table, const char *name, nsl_type type, int64_t rows);
  void (*derived_put)(void *src, const char *table, const char *name, const nsl_column *col);
} nsl_source_ops;

/* Adds a report from an already-opened source: NSL_ERR_ARG for a version
 * this nsl does not know (0, or above NSL_SOURCE_VERSION). */
nsl_status nsl_trace_add_source(nsl_trace *tr, const nsl_source_ops *ops, void *src,
                                const nsl_report_info *info, nsl_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif
