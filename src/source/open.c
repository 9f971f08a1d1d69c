/* open.c -- opening the user's inputs as the reports of one trace: nsys
 * SQLite exports, zip bundles, Nsight Systems reports (.nsys-rep, through
 * `nsys export`) and `nsys stats` CSV files, each recognised by its content. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsl/bundle.h"
#include "nsl/nsl.h"
#include "source/nsys_csv.h"
#include "source/colcache.h"
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
    int jax = nsl_jax_is_archive(b);
    nsl_bundle_close(b);
    if (jax) return nsl_jax_add_reports(tr, path, err);
  }
  return nsl_bundle_add_reports(tr, path, NULL, err);
}

/* Opens one nsys export as a report of tr; a report (.nsys-rep) is opened
 * through its export in the cache folder, its own path kept as the report's. */
static nsl_status open_export(nsl_trace *tr, const char *path, nsl_error *err) {
  void *src = NULL;
  nsl_report_info info;
  char *exported = NULL;
  nsl_status rc = NSL_OK;
  if (nsl_rep_sniff(path) && (rc = nsl_rep_export(path, &exported, err)) != NSL_OK) return rc;
  rc = nsl_nsys_open_file(exported ? exported : path, &src, &info, err);
  if (rc == NSL_OK) {
    info.path = path;
    /* the cache knows the export by the file it reads: the export nsys made of a report */
    rc = nsl__cache_add_source(tr, &nsl_nsys_source_ops, src, &info, exported ? exported : path, "", err);
    if (rc != NSL_OK) nsl_nsys_source_ops.close(src);
  }
  free(exported);
  return rc;
}

/* Opens `nsys stats` CSV file path (report kind) into the report of its run:
 * the trace's CSV report with the same prefix, or a new report. */
static nsl_status open_csv(nsl_trace *tr, const char *path, const char *kind, nsl_error *err) {
  char prefix[4096];
  nsl__nsys_csv_prefix(path, kind, prefix, sizeof prefix);
  for (int i = 0; i < nsl_trace_nreports(tr); i++) {
    void *other = NULL;
    if (nsl_trace_source(tr, i, &other) == &nsl__nsys_csv_source_ops &&
        strcmp(nsl__nsys_csv_src_prefix(other), prefix) == 0)
      return nsl__nsys_csv_add(other, path, kind, err);
  }
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc = nsl__nsys_csv_open(path, kind, &src, &info, err);
  if (rc != NSL_OK) return rc;
  rc = nsl_trace_add_source(tr, &nsl__nsys_csv_source_ops, src, &info, err);
  if (rc != NSL_OK) nsl__nsys_csv_source_ops.close(src);
  return rc;
}

nsl_status nsl_trace_add_path(nsl_trace *tr, const char *path, nsl_error *err) {
  nsl_status rc = nsl_trace_add_input(tr, path, err);
  const char *kind = NULL;
  if (rc != NSL_OK) return rc;
  if (nsl_bundle_sniff(path)) return open_bundle(tr, path, err);
  if ((kind = nsl__nsys_csv_sniff(path))) return open_csv(tr, path, kind, err);
  return open_export(tr, path, err);
}

nsl_status nsl_trace_open(nsl_trace **out, const char *const *paths, int npaths, nsl_error *err) {
  *out = NULL;
  if (npaths <= 0) return nsl_error_set(err, NSL_ERR_ARG, "no input: give at least one nsys SQLite export");
  nsl_trace *tr = nsl_trace_new();
  if (!tr) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < npaths; i++) {
    nsl_status rc = nsl_trace_add_path(tr, paths[i], err);
    if (rc != NSL_OK) {
      nsl_trace_close(tr);
      return rc;
    }
  }
  *out = tr;
  return NSL_OK;
}
