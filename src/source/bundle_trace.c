/*
 * bundle_trace.c -- the reports of a bundle as reports of a trace: each
 * SQLite export is decompressed into memory and opened from there
 * (sqlite3_deserialize, read-only); nothing is extracted to disk.  The
 * bundle stays open while its reports live: their archive members
 * (nsl_trace_members) are the bundle's members: each report holds a
 * reference to the bundle (nsl__bundle_retain), never its path.
 */
#include "source/bundle_internal.h"
#include "source/colcache.h"
#include "source/nsys_sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A report of a bundle: an nsys SQLite export read from memory, whose
 * archive members are its bundle's. */
typedef struct bundle_report {
  void *nsys;   /* the nsys source (nsl__nsys_source_ops) */
  nsl_bundle *b;   /* a reference of its own */
} bundle_report;

static nsl_status br_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  return nsl__nsys_source_ops.describe(((bundle_report *)p)->nsys, name, t, err);
}

static nsl_status br_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                          nsl_dict *dict, int64_t time_offset, nsl_column **out, nsl_error *err) {
  return nsl__nsys_source_ops.load(((bundle_report *)p)->nsys, name, colnames, types, n, dict, time_offset, out, err);
}

static nsl_status br_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  return nsl__nsys_source_ops.count(((bundle_report *)p)->nsys, name, out, err);
}

static void br_close(void *p) {
  bundle_report *r = p;
  if (!r) return;
  nsl__nsys_source_ops.close(r->nsys);
  nsl_bundle_close(r->b);
  free(r);
}

static nsl_status br_sql(void *p, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err) {
  return nsl__nsys_source_ops.sql(((bundle_report *)p)->nsys, sql, row, ctx, err);
}

static nsl_status br_metadata(void *p, nsl_metadata_fn fn, void *ctx, nsl_error *err) {
  return nsl__nsys_source_ops.metadata(((bundle_report *)p)->nsys, fn, ctx, err);
}

/* The members of the bundle whose names start with prefix, in archive
 * order (manifest.json left out: the manifest is the bundle's, not data). */
static size_t br_members(void *p, const char *prefix, void (*fn)(void *ctx, const char *name), void *ctx) {
  const nsl_bundle *b = ((bundle_report *)p)->b;
  size_t plen = prefix ? strlen(prefix) : 0, n = 0;
  for (size_t i = 0; i < nsl_bundle_count(b); i++) {
    const char *name = nsl_bundle_member_at(b, i)->name;
    if (strcmp(name, NSL_BUNDLE_MANIFEST) == 0 || (plen && strncmp(name, prefix, plen) != 0)) continue;
    fn(ctx, name);
    n++;
  }
  return n;
}

/* Reads a member of the bundle, checked against its manifest. */
static nsl_status br_member_read(void *p, const char *name, void **data, size_t *len, nsl_error *err) {
  nsl_bundle *b = ((bundle_report *)p)->b;
  if (!nsl_bundle_find(b, name))
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "no member '%s' in '%s'", name, nsl_bundle_path(b));
  return nsl_bundle_read_member(b, name, data, len, err);
}

static const nsl_source_ops bundle_report_ops = {.version = NSL_SOURCE_VERSION,
                                                 .kind = "nsl-bundle",
                                                 .describe = br_describe,
                                                 .load = br_load,
                                                 .count = br_count,
                                                 .close = br_close,
                                                 .sql = br_sql,
                                                 .members = br_members,
                                                 .member_read = br_member_read,
                                                 .metadata = br_metadata};

/* Adds report member `name` of bundle b to tr. */
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
  st = nsl__nsys_adopt_image(label, data, len, &src, &info, err);   /* takes data over */
  free(label);   /* the source keeps its own copy */
  if (st != NSL_OK)
    return st;
  nsl_bundle_fill_report_info(b, name, &info);
  bundle_report *r = malloc(sizeof *r);
  if (!r) {
    nsl__nsys_source_ops.close(src);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  r->nsys = src;
  r->b = nsl__bundle_retain(b);
  st = nsl__cache_add_bundle_source(tr, &bundle_report_ops, r, &info, b, name, err);
  if (st != NSL_OK)
    br_close(r);
  return st;
}

static int is_report_name(const char *name) {
  size_t n = strlen(name);
  return strncmp(name, "reports/", 8) == 0 && n > 15 && strcmp(name + n - 7, ".sqlite") == 0;
}

/* Visits the report members of bundle b in the order they become
 * reports: the manifest's reports first, in its order, then any other
 * .sqlite member under reports/, in archive order.  Adds to tr those
 * numbered first .. first+count-1 (none when tr is NULL); *total receives
 * the count of all. */
nsl_status nsl__bundle_add_range(nsl_trace *tr, nsl_bundle *b, int first, int count, int *total, nsl_error *err) {
  size_t i;
  const json_t *r;
  int k = 0;
  nsl_status st = NSL_OK;
  json_array_foreach(json_object_get(nsl__bundle_manifest(b), "reports"), i, r) {
    if (tr && k >= first && k - first < count &&
        (st = add_report(tr, b, json_string_value(json_object_get(r, "member")), err)) != NSL_OK)
      return st;
    k++;
  }
  for (i = 0; i < nsl_bundle_count(b); i++) {
    const char *name = nsl_bundle_member_at(b, i)->name;
    if (!is_report_name(name) || nsl__bundle_report_entry(b, name) != NULL)
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

nsl_status nsl_bundle_add_reports(nsl_trace *tr, const char *path, const nsl_bundle_options *opts,
                                  nsl_error *err) {
  int total = 0;
  return nsl_bundle_add_report_range(tr, path, opts, 0, 1 << 30, &total, err);
}

nsl_status nsl_bundle_add_report_range(nsl_trace *tr, const char *path, const nsl_bundle_options *opts, int first,
                                       int count, int *total, nsl_error *err) {
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
  st = nsl__bundle_add_range(tr, b, first, count, total, err);
  nsl_bundle_close(b);   /* the reports added keep references of their own */
  return st;
}
