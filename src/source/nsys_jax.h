/*
 * nsys_jax.h -- nsys-jax archives as reports of a trace (private to nsl).
 *
 * An nsys-jax archive is a zip without manifest.json that holds
 * nvtx_gpu_proj_trace/trace.parquet.  nsys-jax-combine output (several
 * processes in one zip) stores members that differ between its inputs as
 * folders: `<path>/<input stem>` (e.g. thread-metadata.parquet/proc0); each
 * stem found under nvtx_gpu_proj_trace/trace.parquet/ becomes one report.
 *
 * Basic outline:
 *   1. nsl__jax_sniff(path) tells open.c that a file is one.
 *   2. nsl__jax_add_reports(tr, path, &err) adds its report(s) to a trace.
 *   3. The binding reaches a report's members (XLA dumps, sources) through
 *      nsl__jax_member_read / nsl__jax_member_list on the source of a report
 *      whose ops are nsl__jax_source_ops.
 */
#ifndef NSL_SOURCE_NSYS_JAX_H
#define NSL_SOURCE_NSYS_JAX_H

#include "nsl/bundle.h"
#include "nsl/nsl.h"

extern const nsl_source_ops nsl__jax_source_ops;

/* 1 when the file at path is a zip that is an nsys-jax archive or an
 * nsys-jax-combine output (open.c's test). */
int nsl__jax_sniff(const char *path);

/* Opens the archive at path and adds one report per process it holds. */
nsl_status nsl__jax_add_reports(nsl_trace *tr, const char *path, nsl_error *err);

/* Reads member `name` of the report's archive (release with free()); for a
 * combined archive, `name/<stem>` when `name` itself is a folder there.
 * NSL_ERR_NOTFOUND when neither exists. */
nsl_status nsl__jax_member_read(void *src, const char *name, void **data, size_t *len, nsl_error *err);

/* Calls fn(ctx, name) for every member of the report's archive whose name
 * starts with prefix, as the report sees it (a combined archive's
 * `x/<stem>` appears as `x`; other reports' copies are hidden).  Returns
 * the number of names. */
size_t nsl__jax_member_list(void *src, const char *prefix, void (*fn)(void *ctx, const char *name),
                           void *ctx);

/* The report's stem (the archive's file stem, or the input stem inside a
 * combined archive). */
const char *nsl__jax_report_stem(void *src);

#endif
