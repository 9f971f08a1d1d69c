/* open.c -- opening the user's inputs as the reports of one trace.  Each
 * input format is a source (src/source/<format>.c) and one line of
 * `formats` below: its bid on an input, and how to add its reports to a
 * trace.  An input is opened once (source/input.h): the bids look at the
 * same first bytes and the same zip, cheapest first, and the winner reads
 * what they opened.  Nothing else here knows about formats; MPI's planning
 * (src/mpi/dist.c) asks this table too. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/nsl_internal.h"
#include "nsl/bundle.h"
#include "nsl/nsl.h"
#include "source/bundle_internal.h"
#include "source/colcache.h"
#include "source/input.h"
#include "source/nsys_csv.h"
#include "source/nsys_jax.h"
#include "source/nsys_sqlite.h"

/* ---- the input, opened once ---- */

int nsl__input_is_zip(const nsl__input *in) { return nsl__zip_head(in->head, in->nhead); }

nsl_bundle *nsl__input_zip(nsl__input *in) {
  if (in->zip_tried) return in->zip;
  in->zip_tried = 1;
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_AUTO;
  int fd = dup(in->fd);   /* the bundle's own descriptor of the same open file */
  if (fd < 0)
    nsl_error_set(&in->zip_err, NSL_ERR_IO, "cannot open '%s': %s", in->path, strerror(errno));
  else
    nsl__bundle_open_fd(&in->zip, in->path, fd, &o, &in->zip_err);
  return in->zip;
}

/* Opens path once into in: a regular file (a FIFO or a device refused
 * before anything reads it), its first bytes read. */
static nsl_status input_open(nsl__input *in, const char *path, nsl_error *err) {
  memset(in, 0, sizeof *in);
  in->path = path;
  in->fd = nsl__open_regular(path, 1, err);
  if (in->fd < 0) return NSL_ERR_IO;
  ssize_t n;
  while (in->nhead < NSL__INPUT_HEAD &&
         ((n = pread(in->fd, in->head + in->nhead, NSL__INPUT_HEAD - in->nhead, (off_t)in->nhead)) > 0 ||
          (n < 0 && errno == EINTR)))
    if (n > 0) in->nhead += (size_t)n;
  return NSL_OK;
}

static void input_close(nsl__input *in) {
  nsl_bundle_close(in->zip);   /* the reports added keep references of their own */
  if (in->fd >= 0) close(in->fd);
}

/* ---- the formats ---- */

/* An nsl bundle: the input's zip, which must hold manifest.json.  Reports
 * first .. first+count-1 only; *total receives how many it holds. */
static nsl_status bundle_range(nsl_trace *tr, nsl__input *in, int first, int count, int *total, nsl_error *err) {
  nsl_bundle *b = nsl__input_zip(in);
  if (!b) {
    if (err) *err = in->zip_err;
    return in->zip_err.code;
  }
  if (nsl_bundle_is_raw(b))
    return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': not an nsl bundle (no manifest.json)", in->path);
  return nsl__bundle_add_range(tr, b, first, count, total, err);
}

static nsl_status add_bundle(nsl_trace *tr, nsl__input *in, nsl_error *err) {
  int total = 0;
  return bundle_range(tr, in, 0, 1 << 30, &total, err);
}

static int bundle_bid(nsl__input *in) { return nsl__input_is_zip(in); }

/* The nsys SQLite export in file as a report of tr, known to the user as
 * shown (the export itself, or the .nsys-rep it was made from), through the
 * columnar cache, which knows the export by the file it reads.  in: file as
 * open.c opened it (its descriptor and first bytes), or NULL. */
static nsl_status add_export_as(nsl_trace *tr, const char *file, const nsl__input *in, const char *shown,
                                nsl_error *err) {
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc;
  if (nsl__cache_add_lazy_export(tr, file, in ? in->fd : -1, shown, &rc, err)) return rc;
  rc = nsl__nsys_open_export(file, in ? in->head : NULL, in ? in->nhead : 0, &src, &info, err);
  if (rc != NSL_OK) return rc;
  info.path = shown;
  rc = nsl__cache_add_source(tr, &nsl__nsys_source_ops, src, &info, file, in ? in->fd : -1, "", err);
  if (rc != NSL_OK) nsl__nsys_source_ops.close(src);
  return rc;
}

static nsl_status add_export(nsl_trace *tr, nsl__input *in, nsl_error *err) {
  return add_export_as(tr, in->path, in, in->path, err);
}

/* A report (.nsys-rep): through its export in the cache folder. */
static nsl_status add_rep(nsl_trace *tr, nsl__input *in, nsl_error *err) {
  char *exported = NULL;
  nsl_status rc = nsl_rep_export(in->path, nsl_trace_options(tr)->nsys, &exported, err);
  if (rc == NSL_OK) rc = add_export_as(tr, exported, NULL, in->path, err);
  free(exported);
  return rc;
}

static int rep_bid(nsl__input *in) { return nsl__rep_head(in->head, in->nhead); }

static int csv_bid(nsl__input *in) { return nsl__nsys_csv_kind((const char *)in->head, in->nhead, in->path) != NULL; }

/* An `nsys stats` CSV file: into the report of its run, the trace's CSV
 * report with the same prefix, or a new report. */
static nsl_status add_csv(nsl_trace *tr, nsl__input *in, nsl_error *err) {
  const char *path = in->path, *kind = nsl__nsys_csv_kind((const char *)in->head, in->nhead, path);
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
  int (*bid)(nsl__input *in);   /* 1 when the input is of this format; NULL: any input (the last resort) */
  nsl_status (*add_reports)(nsl_trace *tr, nsl__input *in, nsl_error *err);
  /* reports first .. first+count-1 only (none when tr is NULL), *total: all of them; NULL when the input is
   * read as a whole */
  nsl_status (*add_range)(nsl_trace *tr, nsl__input *in, int first, int count, int *total, nsl_error *err);
  int one_report;               /* without add_range: 1 when the input is one report, 0 when it may be several */
} input_format;

/* The input formats, cheapest bid first: the first that bids on an input
 * opens it (and its errors are the ones the user sees).  The head's
 * formats exclude each other; of the zips, an nsys-jax archive is told
 * from other zips by its members (the zip opened once, for both). */
static const input_format formats[] = {
    {rep_bid, add_rep, NULL, 1},                      /* Nsight Systems reports, through nsys export */
    {csv_bid, add_csv, NULL, 1},                      /* nsys stats CSV files, by their header row */
    {nsl__jax_bid, nsl__jax_add_reports, NULL, 0},    /* nsys-jax archives: zips without manifest.json */
    {bundle_bid, add_bundle, bundle_range, 0},        /* nsl bundles, and any other zip (refused by name) */
    {NULL, add_export, NULL, 1},                      /* nsys SQLite exports, and anything else (refused by name) */
};

static const input_format *winner(nsl__input *in) {
  for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
    if (!formats[i].bid || formats[i].bid(in)) return &formats[i];
  return NULL;
}

nsl_status nsl_trace_add_path(nsl_trace *tr, const char *path, nsl_error *err) {
  nsl__input in;
  nsl_status rc = input_open(&in, path, err);
  if (rc != NSL_OK) return rc;
  rc = nsl_trace_add_input(tr, path, err);
  const input_format *f = rc == NSL_OK ? winner(&in) : NULL;
  if (rc == NSL_OK)
    rc = f ? f->add_reports(tr, &in, err)
           : nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': not an input nsl reads", path);
  input_close(&in);
  return rc;
}

int nsl__input_units(const char *path, int *n) {
  nsl__input in;
  nsl_error e;
  *n = 1;
  if (input_open(&in, path, &e) != NSL_OK) return 0;   /* its error comes when it is opened as a unit */
  const input_format *f = winner(&in);
  int kind = 0;
  if (f && f->add_range) kind = f->add_range(NULL, &in, 0, 0, n, &e) == NSL_OK ? 1 : -1;
  else if (f && !f->one_report) kind = -1;
  if (kind < 0) *n = 1;
  input_close(&in);
  return kind;
}

nsl_status nsl__trace_add_path_range(nsl_trace *tr, const char *path, int first, int count, nsl_error *err) {
  nsl__input in;
  int total = 0;
  nsl_status rc = input_open(&in, path, err);
  if (rc != NSL_OK) return rc;
  rc = nsl_trace_add_input(tr, path, err);
  const input_format *f = rc == NSL_OK ? winner(&in) : NULL;
  if (rc == NSL_OK)
    rc = f && f->add_range ? f->add_range(tr, &in, first, count, &total, err)
                           : nsl_error_set(err, NSL_ERR_ARG, "cannot open '%s': its reports are not read by range", path);
  input_close(&in);
  return rc;
}

nsl_status nsl_trace_open(nsl_trace **out, const char *const *paths, int npaths, const nsl_open_options *opts,
                          nsl_error *err) {
  *out = NULL;
  if (npaths <= 0) return nsl_error_set(err, NSL_ERR_ARG, "no input: give at least one nsys SQLite export");
  nsl_trace *tr = nsl_trace_new();
  if (!tr) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl_status st = opts ? nsl_trace_set_options(tr, opts, err) : NSL_OK;
  if (st != NSL_OK) {
    nsl_trace_close(tr);
    return st;
  }
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
