/* open.c -- opening the user's inputs as the reports of one trace.  Each
 * input format is a source (src/source/<format>.c) and one line of
 * `formats` below: how to recognise a path of that format, and how to add
 * its reports to a trace.  Nothing else here knows about formats. */
#include <stddef.h>

#include "nsl/bundle.h"
#include "nsl/nsl.h"
#include "source/nsys_jax.h"
#include "source/nsys_sqlite.h"

/* An nsl bundle with the default limits. */
static nsl_status add_bundle(nsl_trace *tr, const char *path, nsl_error *err) {
  return nsl_bundle_add_reports(tr, path, NULL, err);
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
    {NULL, nsl__nsys_add_reports},            /* nsys SQLite exports, and anything else (refused by name) */
};

/* Adds the reports of path to tr, by its format. */
static nsl_status add_input(nsl_trace *tr, const char *path, nsl_error *err) {
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
    nsl_status rc = nsl_trace_add_input(tr, paths[i], err);
    if (rc == NSL_OK) rc = add_input(tr, paths[i], err);
    if (rc != NSL_OK) {
      nsl_trace_close(tr);
      return rc;
    }
  }
  *out = tr;
  return NSL_OK;
}
