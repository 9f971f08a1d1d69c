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

nsl_status nsl_bundle_add_reports(nsl_trace *tr, const char *path, const nsl_bundle_options *opts,
                                  nsl_error *err) {
  nsl_bundle_options o;
  nsl_bundle *b = NULL;
  if (opts)
    o = *opts;
  else
    nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_STRICT;
  nsl_status st = nsl_bundle_open(&b, path, &o, err);
  if (st != NSL_OK)
    return st;
  /* the manifest's reports first, in its order ... */
  size_t i;
  const json_t *r;
  int added = 0;
  json_array_foreach(json_object_get(nsl_bundle_manifest(b), "reports"), i, r) {
    if ((st = add_report(tr, b, json_string_value(json_object_get(r, "member")), err)) != NSL_OK)
      goto done;
    added++;
  }
  /* ... then any other .sqlite member under reports/, in archive order */
  for (i = 0; i < nsl_bundle_count(b); i++) {
    const char *name = nsl_bundle_member_at(b, i)->name;
    if (!is_report_name(name) || nsl_bundle_report_entry(b, name) != NULL)
      continue;
    if ((st = add_report(tr, b, name, err)) != NSL_OK)
      goto done;
    added++;
  }
  if (added == 0)
    st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': the bundle holds no report (reports/*.sqlite)",
                       path);
done:
  nsl_bundle_close(b);
  return st;
}
