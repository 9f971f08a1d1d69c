/* open.c -- opening the user's inputs as the reports of one trace.  Each
 * input format is a source (src/source/<format>.c) and one line of
 * `formats` below: how to recognise a path of that format, and how to add
 * its reports to a trace.  Nothing else here knows about formats. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/nsl_internal.h"
#include "nsl/bundle.h"
#include "nsl/nsl.h"
#include "source/colcache.h"
#include "source/nsys_csv.h"
#include "source/nsys_jax.h"
#include "source/nsys_sqlite.h"

/* An nsl bundle with the default limits. */
static nsl_status add_bundle(nsl_trace *tr, const char *path, nsl_error *err) {
  return nsl_bundle_add_reports(tr, path, NULL, err);
}

/* The nsys SQLite export in file as a report of tr, known to the user as
 * shown (the export itself, or the .nsys-rep it was made from), through the
 * columnar cache, which knows the export by the file it reads. */
static nsl_status add_export_as(nsl_trace *tr, const char *file, const char *shown, nsl_error *err) {
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc = nsl__nsys_open_file(file, &src, &info, err);
  if (rc != NSL_OK) return rc;
  info.path = shown;
  rc = nsl__cache_add_source(tr, &nsl__nsys_source_ops, src, &info, file, "", err);
  if (rc != NSL_OK) nsl__nsys_source_ops.close(src);
  return rc;
}

static nsl_status add_export(nsl_trace *tr, const char *path, nsl_error *err) {
  return add_export_as(tr, path, path, err);
}

/* A report (.nsys-rep): through its export in the cache folder. */
static nsl_status add_rep(nsl_trace *tr, const char *path, nsl_error *err) {
  char *exported = NULL;
  nsl_status rc = nsl_rep_export(path, &exported, err);
  if (rc == NSL_OK) rc = add_export_as(tr, exported, path, err);
  free(exported);
  return rc;
}

static int csv_sniff(const char *path) { return nsl__nsys_csv_sniff(path) != NULL; }

/* An `nsys stats` CSV file: into the report of its run, the trace's CSV
 * report with the same prefix, or a new report. */
static nsl_status add_csv(nsl_trace *tr, const char *path, nsl_error *err) {
  const char *kind = nsl__nsys_csv_sniff(path);
  char prefix[4096];
  nsl__nsys_csv_prefix(path, kind, prefix, sizeof prefix);
  for (int i = 0; i < nsl_trace_nreports(tr); i++) {
    void *other = NULL;
    if (nsl__trace_source(tr, i, &other) == &nsl__nsys_csv_source_ops &&
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

typedef struct input_format {
  int (*sniff)(const char *path);   /* 1 when path is of this format; NULL: any path (the last resort) */
  nsl_status (*add_reports)(nsl_trace *tr, const char *path, nsl_error *err);
} input_format;

/* The input formats, tried in order: the first that recognises a path
 * opens it (and its errors are the ones the user sees). */
static const input_format formats[] = {
    {nsl__jax_sniff, nsl__jax_add_reports},   /* nsys-jax archives: zips without manifest.json */
    {nsl_bundle_sniff, add_bundle},           /* nsl bundles, and any other zip (refused by name) */
    {nsl_rep_sniff, add_rep},                 /* Nsight Systems reports, through nsys export */
    {csv_sniff, add_csv},                     /* nsys stats CSV files, by their header row */
    {NULL, add_export},                       /* nsys SQLite exports, and anything else (refused by name) */
};

nsl_status nsl_trace_add_path(nsl_trace *tr, const char *path, nsl_error *err) {
  int fd = nsl__open_regular(path, 1, err);   /* a FIFO or a device refused before any sniffer reads it */
  if (fd < 0) return NSL_ERR_IO;
  close(fd);
  nsl_status rc = nsl_trace_add_input(tr, path, err);
  if (rc != NSL_OK) return rc;
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
    if (!formats[i].sniff || formats[i].sniff(path)) return formats[i].add_reports(tr, path, err);
  return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': not an input nsl reads", path);
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
