/* open.c -- opening the user's inputs as the reports of one trace: nsys
 * SQLite exports and zip bundles. */
#include <stdio.h>
#include <string.h>

#include "nsl/bundle.h"
#include "nsl/nsl.h"
#include "source/nsys_sqlite.h"
#include "source/nsys_jax.h"

/* A zip: an nsys-jax archive (no manifest.json, nvtx_gpu_proj_trace/
 * trace.parquet, or nsys-jax-combine's per-input folders of it), whose
 * processes become reports of tr; else an nsl bundle (manifest.json +
 * reports/ + ...), each of whose reports becomes a report of tr. */
static nsl_status open_bundle(nsl_trace *tr, const char *path, nsl_error *err) {
  nsl_bundle_options o;
  nsl_bundle *b = NULL;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_AUTO;
  if (nsl_bundle_open(&b, path, &o, NULL) == NSL_OK) {
    int jax = nsl__jax_is_archive(b);
    nsl_bundle_close(b);
    if (jax) return nsl__jax_add_reports(tr, path, err);
  }
  return nsl_bundle_add_reports(tr, path, NULL, err);
}

/* Opens one nsys export as a report of tr. */
static nsl_status open_export(nsl_trace *tr, const char *path, nsl_error *err) {
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc = nsl__nsys_open_file(path, &src, &info, err);
  if (rc != NSL_OK) return rc;
  rc = nsl_trace_add_source(tr, &nsl__nsys_source_ops, src, &info, err);
  if (rc != NSL_OK) nsl__nsys_source_ops.close(src);
  return rc;
}

nsl_status nsl_trace_open(nsl_trace **out, const char *const *paths, int npaths, nsl_error *err) {
  *out = NULL;
  if (npaths <= 0) return nsl_error_set(err, NSL_ERR_ARG, "no input: give at least one nsys SQLite export");
  nsl_trace *tr = nsl_trace_new();
  if (!tr) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < npaths; i++) {
    nsl_status rc = nsl_trace_add_input(tr, paths[i], err);
    if (rc == NSL_OK) rc = nsl_bundle_sniff(paths[i]) ? open_bundle(tr, paths[i], err) : open_export(tr, paths[i], err);
    if (rc != NSL_OK) {
      nsl_trace_close(tr);
      return rc;
    }
  }
  *out = tr;
  return NSL_OK;
}
