/* open.c -- opening the user's inputs as the reports of one trace: nsys
 * SQLite exports and zip bundles. */
#include <stdio.h>
#include <string.h>

#include "nsl/bundle.h"
#include "nsl/nsl.h"

typedef enum input_kind { INPUT_SQLITE, INPUT_ZIP } input_kind;

/* What the first bytes of path say it is.  Unreadable files count as
 * SQLite: nsl_nsys_open_file gives the precise error. */
static input_kind sniff(const char *path) {
  unsigned char h[4] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return INPUT_SQLITE;
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  if (n == 4 && h[0] == 'P' && h[1] == 'K' &&
      ((h[2] == 3 && h[3] == 4) || (h[2] == 5 && h[3] == 6) || (h[2] == 7 && h[3] == 8)))
    return INPUT_ZIP;
  return INPUT_SQLITE;
}

/* A zip: an nsl bundle (manifest.json + reports/ + ...), each of whose
 * reports becomes a report of tr. */
static nsl_status open_bundle(nsl_trace *tr, const char *path, nsl_error *err) {
  return nsl_bundle_add_reports(tr, path, NULL, err);
}

/* Opens one nsys export as a report of tr. */
static nsl_status open_export(nsl_trace *tr, const char *path, nsl_error *err) {
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc = nsl_nsys_open_file(path, &src, &info, err);
  if (rc != NSL_OK) return rc;
  rc = nsl_trace_add_source(tr, &nsl_nsys_source_ops, src, &info, err);
  if (rc != NSL_OK) nsl_nsys_source_ops.close(src);
  return rc;
}

nsl_status nsl_trace_open(nsl_trace **out, const char *const *paths, int npaths, nsl_error *err) {
  *out = NULL;
  if (npaths <= 0) return nsl_error_set(err, NSL_ERR_ARG, "no input: give at least one nsys SQLite export");
  nsl_trace *tr = nsl_trace_new();
  if (!tr) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < npaths; i++) {
    nsl_status rc = sniff(paths[i]) == INPUT_ZIP ? open_bundle(tr, paths[i], err) : open_export(tr, paths[i], err);
    if (rc != NSL_OK) {
      nsl_trace_close(tr);
      return rc;
    }
  }
  *out = tr;
  return NSL_OK;
}
