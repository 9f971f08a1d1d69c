/*
 * bundle_trace.c -- the reports of a bundle as reports of a trace: each
 * SQLite export is decompressed into memory and opened from there
 * (sqlite3_deserialize, read-only); nothing is extracted to disk.
 */
#include "source/bundle_internal.h"
#include "source/colcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds report member `name` of b to tr. */
static nsl_status add_report(nsl_trace *tr, nsl_bundle *b, const char *name, nsl_error *err) {
  void *data = NULL, *src = NULL;
  size_t len = 0;
  nsl_report_info info;
  nsl_status st;
  if (nsl__cache_add_stored_report(tr, b, name, &st, err))   /* its columns stored beside it: no export read */
    return st;
  st = nsl_bundle_read_member(b, name, &data, &len, err);
  if (st != NSL_OK)
    return st;
  size_t lsize = strlen(nsl_bundle_path(b)) + strlen(name) + 2;
  char *label = malloc(lsize);
  if (!label) {
    free(data);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  snprintf(label, lsize, "%s:%s", nsl_bundle_path(b), name);
  memset(&info, 0, sizeof info);
  st = nsl_nsys_adopt_image(label, data, len, &src, &info, err);   /* takes data over */
  free(label);   /* the source keeps its own copy */
  if (st != NSL_OK)
    return st;
  nsl_bundle_fill_report_info(b, name, &info);
  st = nsl__cache_add_bundle_source(tr, &nsl_nsys_source_ops, src, &info, b, name, err);
  if (st != NSL_OK)
    nsl_nsys_source_ops.close(src);
  return st;
}

static int is_report_name(const char *name) {
  size_t n = strlen(name);
  return strncmp(name, "reports/", 8) == 0 && n > 15 && strcmp(name + n - 7, ".sqlite") == 0;
}

/* Visits the report members of b in the order they become reports: the
 * manifest's reports first, in its order, then any other .sqlite member
 * under reports/, in archive order.  Adds to tr those numbered first ..
 * first+count-1 (none when tr is NULL); *total receives the count of all. */
static nsl_status add_report_range(nsl_trace *tr, nsl_bundle *b, int first, int count, int *total,
                                   nsl_error *err) {
  size_t i;
  const json_t *r;
  int k = 0;
  nsl_status st = NSL_OK;
  json_array_foreach(json_object_get(nsl_bundle_manifest(b), "reports"), i, r) {
    if (tr && k >= first && k - first < count &&
        (st = add_report(tr, b, json_string_value(json_object_get(r, "member")), err)) != NSL_OK)
      return st;
    k++;
  }
  for (i = 0; i < nsl_bundle_count(b); i++) {
    const char *name = nsl_bundle_member_at(b, i)->name;
    if (!is_report_name(name) || nsl_bundle_report_entry(b, name) != NULL)
      continue;
    if (tr && k >= first && k - first < count && (st = add_report(tr, b, name, err)) != NSL_OK)
      return st;
    k++;
  }
  if (k == 0)
    return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': the bundle holds no report (reports/*.sqlite)",
                         nsl_bundle_path(b));
  *total = k;
  return NSL_OK;
}

/* Opens path as a strict bundle with opts (NULL: defaults). */
static nsl_status open_strict(nsl_bundle **b, const char *path, const nsl_bundle_options *opts, nsl_error *err) {
  nsl_bundle_options o;
  if (opts)
    o = *opts;
  else
    nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_STRICT;
  return nsl_bundle_open(b, path, &o, err);
}

nsl_status nsl_bundle_add_reports(nsl_trace *tr, const char *path, const nsl_bundle_options *opts,
                                  nsl_error *err) {
  int total = 0;
  return nsl_bundle_add_report_range(tr, path, opts, 0, 1 << 30, &total, err);
}

nsl_status nsl_bundle_add_report_range(nsl_trace *tr, const char *path, const nsl_bundle_options *opts, int first,
                                       int count, int *total, nsl_error *err) {
  nsl_bundle *b = NULL;
  nsl_status st = open_strict(&b, path, opts, err);
  if (st != NSL_OK)
    return st;
  st = add_report_range(tr, b, first, count, total, err);
  nsl_bundle_close(b);
  return st;
}
