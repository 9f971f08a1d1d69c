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
 *   1. nsl__jax_bid(in) tells open.c that an input is one.
 *   2. nsl__jax_add_reports(tr, in, &err) adds its report(s) to a trace,
 *      from the zip the bid opened (kept by the reports).
 *   3. The binding reaches a report's members (XLA dumps, sources) through
 *      nsl__jax_member_read / nsl__jax_member_list on the source of a report
 *      whose ops are nsl__jax_source_ops.
 */
#ifndef NSL_SOURCE_NSYS_JAX_H
#define NSL_SOURCE_NSYS_JAX_H

#include "nsl/bundle.h"
#include "nsl/nsl.h"
#include "nsl/source.h"
#include "source/input.h"

extern const nsl_source_ops nsl__jax_source_ops;

/* 1 when the input is a zip that is an nsys-jax archive or an
 * nsys-jax-combine output (open.c's bid). */
int nsl__jax_bid(nsl__input *in);

/* Adds one report per process the archive holds, from the input's zip. */
nsl_status nsl__jax_add_reports(nsl_trace *tr, nsl__input *in, nsl_error *err);

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
