/*
 * nsys_sqlite.h -- the nsys SQLite export source (private to nsl): opening
 * an export from a file or from an image in memory (bundle members).
 * Everything else reaches it through nsl_source_ops and nsl_trace_*.
 */
#ifndef NSL_SOURCE_NSYS_SQLITE_H
#define NSL_SOURCE_NSYS_SQLITE_H

#include "nsl/nsl.h"
#include "nsl/source.h"

/* Opens an nsys SQLite export read-only (immutable, never writes beside
 * it) from a path, or from an in-memory image (copied; used for bundle
 * members).  Fills info. */
nsl_status nsl__nsys_open_file(const char *path, void **src, nsl_report_info *info, nsl_error *err);
/* The same with the file's first nhead bytes already read (head; NULL: read
 * them from path), as open.c has them: the file is not opened again for
 * its header. */
nsl_status nsl__nsys_open_export(const char *path, const void *head, size_t nhead, void **src, nsl_report_info *info,
                                 nsl_error *err);
nsl_status nsl__nsys_open_image(const char *label, const void *data, size_t size, void **src,
                               nsl_report_info *info, nsl_error *err);
/* The same over an image in a buffer allocated with malloc, which the
 * source takes over instead of copying it (half the peak memory of
 * nsl__nsys_open_image): data is released with free() when the source is
 * closed, and before returning when the open fails. */
nsl_status nsl__nsys_adopt_image(const char *label, void *data, size_t size, void **src,
                                nsl_report_info *info, nsl_error *err);
extern const nsl_source_ops nsl__nsys_source_ops;
/* nsl__nsys_sql: the nsys source's sql operation (nsl_source_ops.sql). */
nsl_status nsl__nsys_sql(void *src, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err);
/* The report name (*name malloc'd) and rank (-1: none) the nsys source
 * gives a label; -1 when out of memory. */
int nsl__nsys_name_and_rank(const char *label, char **name, int64_t *rank);

#endif
