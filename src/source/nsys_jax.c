/* nsys_jax.c -- an nsys-jax archive (the zip `nsys-jax` writes, or the one
 * `nsys-jax-combine` makes of several) seen as the data model's tables.
 *
 * Members read, lazily, each once per report:
 *   nvtx_gpu_proj_trace/trace.parquet    -> gpu_ranges (NVTX ranges projected
 *       onto the GPU; the nsys 2024.4 column layout "Projected Start", "Orig
 *       Start", ... and the 2024.5+ one "Start", "End", "Range ID", ...)
 *   report_nvtx_pushpop_trace.csv.xz or .parquet -> nvtx (host push/pop
 *       ranges with their tree: parent_id, level, num_child, dur_child,
 *       dur_nonchild; xz through liblzma)
 *   thread-metadata.parquet -> threads; device-metadata.parquet -> devices
 *       (columns named like "('TARGET_INFO_GPU', 'name')");
 *   system-metadata.parquet -> the report's host and nsys version.
 * The three metadata files are optional: nsys-jax releases of mid-2024 wrote
 * none of them (threads and devices are then empty tables, and
 * lua/nsl/jax.lua finds the devices from the launching threads, as those
 * releases did).
 * dump/ (XLA HloProto files) and sources/ are reached by the binding through
 * nsl__jax_member_read / nsl__jax_member_list.
 *
 * An archive zipped as a folder (every member under one top-level folder
 * that holds nvtx_gpu_proj_trace/) reads the same, relative to that folder.
 *
 * Combined archives: nsys-jax-combine keeps members that are equal in all
 * inputs once, and stores the others as folders of `<path>/<input stem>`.
 * Every stem under nvtx_gpu_proj_trace/trace.parquet/ is a report; a member
 * is looked up as `<path>` first, then `<path>/<stem>`.  `nsl combine` of
 * nsys-jax archives is expected to write the same layout, so one reader
 * serves both.
 *
 * Time base: nsys-jax keeps each process's times on its own session clock
 * and so does this source (start_utc is left unknown, no offset is applied
 * between reports); cross-device clock alignment is an analysis
 * (lua/nsl/jax.lua), as in nsys-jax.
 *
 * gpu_ranges.device is the global device of the launching thread when the
 * thread metadata names it (XlaLauncher:#global=N,...#), else NULL (the main
 * thread, or an archive without thread metadata; lua/nsl/jax.lua resolves
 * it: M.thread_device_map). */
#include "source/nsys_jax.h"
#include "source/csv.h"
#include "source/bundle_internal.h"
#include "source/colcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "core/text.h"
#include "source/hlo.h"
#include "source/parquet.h"

/* ---- the archive, shared by the reports it holds ----------------------- */

typedef struct jax_archive {
  nsl_bundle *b;
  int refs;
  char root[256];   /* the folder every member lies in: "" (as nsys-jax writes), or "<dir>/" */
} jax_archive;

typedef struct csv_table {   /* the push/pop trace, parsed once */
  int64_t n;
  int64_t *start, *stop, *dur_child, *dur_nonchild, *range_id, *parent_id;
  int32_t *pid, *tid, *level, *num_child;
  char **text;               /* owned strings */
} csv_table;

typedef struct jax_src {
  jax_archive *ar;
  char *stem;                /* "" for a single archive */
  char *label;               /* the archive's path, with [stem] in a combined one */
  char *name, *host;         /* the report's name and host (nsl_report_info) */
  nsl_parquet *trace, *threads, *devices;
  int64_t *keep;             /* trace rows with a RangeId (the others are the recipe's root row) */
  int64_t nkeep;
  int have_trace_keep;
  csv_table *pushpop;
  nsl_parquet *pushpop_pq;
  int pushpop_tried;
} jax_src;

static void archive_release(jax_archive *a) {
  if (a && --a->refs == 0) {
    nsl_bundle_close(a->b);
    free(a);
  }
}

/* The member the report sees as `name`: <root>name, or <root>name/<stem>. */
static const nsl_bundle_member *find_member(jax_src *s, const char *name, char *buf, size_t cap) {
  if ((size_t)snprintf(buf, cap, "%s%s", s->ar->root, name) >= cap) return NULL;
  const nsl_bundle_member *m = nsl_bundle_find(s->ar->b, buf);
  if (m || !s->stem[0]) return m;
  if ((size_t)snprintf(buf, cap, "%s%s/%s", s->ar->root, name, s->stem) >= cap) return NULL;
  return nsl_bundle_find(s->ar->b, buf);
}

nsl_status nsl__jax_member_read(void *p, const char *name, void **data, size_t *len, nsl_error *err) {
  jax_src *s = p;
  char buf[4096];
  if (!find_member(s, name, buf, sizeof buf))
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no member '%s'", s->label, name);
  return nsl_bundle_read_member(s->ar->b, buf, data, len, err);
}

size_t nsl__jax_member_list(void *p, const char *prefix, void (*fn)(void *, const char *), void *ctx) {
  jax_src *s = p;
  size_t np = strlen(prefix), count = 0, ns = strlen(s->stem);
  char buf[4096];
  size_t nr = strlen(s->ar->root);
  for (size_t i = 0; i < nsl_bundle_count(s->ar->b); i++) {
    const char *full = nsl_bundle_member_at(s->ar->b, i)->name;
    if (strncmp(full, s->ar->root, nr) != 0) continue;
    const char *name = full + nr;   /* as the report sees it */
    if (strncmp(name, prefix, np) != 0) continue;
    size_t n = strlen(name);
    const char *slash = strrchr(name, '/');
    /* a per-input copy "x/<stem>" whose folder "x" has a dotted file name */
    if (slash && slash > name) {
      size_t dir = (size_t)(slash - name);
      const char *base = slash + 1;
      int dir_is_file = memchr(name, '.', dir) && strrchr(name, '.') < slash;
      if (dir_is_file && nsl_bundle_find(s->ar->b, full) && !strchr(base, '.')) {
        if (ns == 0 || strcmp(base, s->stem) != 0) continue;   /* another input's copy */
        if (dir >= sizeof buf) continue;
        memcpy(buf, name, dir);
        buf[dir] = 0;
        fn(ctx, buf);
        count++;
        continue;
      }
    }
    (void)n;
    fn(ctx, name);
    count++;
  }
  return count;
}

const char *nsl__jax_report_stem(void *p) { return ((jax_src *)p)->stem; }

static void free_csv(csv_table *t) {
  if (!t) return;
  if (t->text)
    for (int64_t i = 0; i < t->n; i++) free(t->text[i]);
  free(t->text);
  free(t->start);
  free(t->stop);
  free(t->dur_child);
  free(t->dur_nonchild);
  free(t->range_id);
  free(t->parent_id);
  free(t->pid);
  free(t->tid);
  free(t->level);
  free(t->num_child);
  free(t);
}

static void jax_close(void *p) {
  jax_src *s = p;
  if (!s) return;
  nsl__parquet_close(s->trace);
  nsl__parquet_close(s->threads);
  nsl__parquet_close(s->devices);
  nsl__parquet_close(s->pushpop_pq);
  free_csv(s->pushpop);
  free(s->keep);
  archive_release(s->ar);
  free(s->stem);
  free(s->label);
  free(s->name);
  free(s->host);
  free(s);
}

/* Opens parquet member `name` into *pq (once). */
static nsl_status open_parquet(jax_src *s, const char *name, nsl_parquet **pq, nsl_error *err) {
  if (*pq) return NSL_OK;
  void *data = NULL;
  size_t len = 0;
  nsl_status rc = nsl__jax_member_read(s, name, &data, &len, err);
  if (rc != NSL_OK) return rc;
  char *label = nsl__printf_alloc("%s:%s", nsl_bundle_path(s->ar->b), name);
  if (!label) {
    free(data);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  rc = nsl__parquet_open_mem(pq, label, data, len, free, err);
  free(label);   /* the reader keeps its own copy */
  return rc;
}

/* ---- the push/pop trace (CSV, xz-compressed) ----------------------------- */

enum { C_START, C_END, C_DURCHILD, C_DURNONCHILD, C_NAME, C_PID, C_TID, C_LVL, C_NUMCHILD, C_RANGEID,
       C_PARENTID, C_NCOLS };
static const char *const csv_names[C_NCOLS] = {"Start (ns)", "End (ns)", "DurChild (ns)", "DurNonChild (ns)",
                                               "Name", "PID", "TID", "Lvl", "NumChild", "RangeId", "ParentId"};

static nsl_status parse_pushpop_csv(jax_src *s, const char *d, size_t len, nsl_error *err) {
  enum { MAXF = 64 };
  char *fields[MAXF];
  int idx[C_NCOLS];
  size_t pos = 0, rows_cap = 0;
  nsl_status rc = NSL_OK;
  char *scratch = malloc(len + 1);
  csv_table *t = calloc(1, sizeof *t);
  if (!scratch || !t) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < len; i++) rows_cap += d[i] == '\n';
  int nf = nsl__csv_record(d, len, &pos, scratch, fields, MAXF);
  if (nf < 0) {
    rc = nsl_error_set(err, NSL_ERR_FORMAT, "%s: report_nvtx_pushpop_trace: no header", s->label);
    goto done;
  }
  for (int c = 0; c < C_NCOLS; c++) {
    idx[c] = -1;
    for (int f = 0; f < nf; f++)
      if (strcmp(fields[f], csv_names[c]) == 0) idx[c] = f;
    if (idx[c] < 0 && c != C_DURCHILD && c != C_DURNONCHILD && c != C_LVL && c != C_NUMCHILD) {
      rc = nsl_error_set(err, NSL_ERR_FORMAT, "%s: report_nvtx_pushpop_trace: no column '%s'", s->label,
                         csv_names[c]);
      goto done;
    }
  }
  size_t cap = rows_cap + 1;
  t->start = malloc(cap * sizeof(int64_t));
  t->stop = malloc(cap * sizeof(int64_t));
  t->dur_child = malloc(cap * sizeof(int64_t));
  t->dur_nonchild = malloc(cap * sizeof(int64_t));
  t->range_id = malloc(cap * sizeof(int64_t));
  t->parent_id = malloc(cap * sizeof(int64_t));
  t->pid = malloc(cap * sizeof(int32_t));
  t->tid = malloc(cap * sizeof(int32_t));
  t->level = malloc(cap * sizeof(int32_t));
  t->num_child = malloc(cap * sizeof(int32_t));
  t->text = calloc(cap, sizeof(char *));
  if (!t->start || !t->stop || !t->dur_child || !t->dur_nonchild || !t->range_id || !t->parent_id || !t->pid ||
      !t->tid || !t->level || !t->num_child || !t->text) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  int header_nf = nf;
  while ((nf = nsl__csv_record(d, len, &pos, scratch, fields, MAXF)) != -1) {
    if (nf == -2) {
      rc = nsl_error_set(err, NSL_ERR_FORMAT, "%s: report_nvtx_pushpop_trace: unterminated quote in row %lld",
                         s->label, (long long)t->n + 1);
      goto done;
    }
    if (nf == 1 && fields[0][0] == 0) continue;   /* blank line */
    if (nf != header_nf || (size_t)t->n >= cap) {
      rc = nsl_error_set(err, NSL_ERR_FORMAT, "%s: report_nvtx_pushpop_trace: row %lld has %d fields, not %d",
                         s->label, (long long)t->n + 1, nf, header_nf);
      goto done;
    }
#define F(c) (idx[c] >= 0 ? fields[idx[c]] : NULL)
    int64_t i = t->n;
    t->start[i] = nsl__csv_i64(F(C_START));
    t->stop[i] = nsl__csv_i64(F(C_END));
    t->dur_child[i] = nsl__csv_i64(F(C_DURCHILD));
    t->dur_nonchild[i] = nsl__csv_i64(F(C_DURNONCHILD));
    t->range_id[i] = nsl__csv_i64(F(C_RANGEID));
    t->parent_id[i] = nsl__csv_i64(F(C_PARENTID));
    int64_t v;
    t->pid[i] = (v = nsl__csv_i64(F(C_PID))) == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)v;
    t->tid[i] = (v = nsl__csv_i64(F(C_TID))) == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)v;
    t->level[i] = (v = nsl__csv_i64(F(C_LVL))) == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)v;
    t->num_child[i] = (v = nsl__csv_i64(F(C_NUMCHILD))) == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)v;
    if (!(t->text[i] = strdup(fields[idx[C_NAME]]))) {
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      goto done;
    }
#undef F
    t->n++;
  }
done:
  free(scratch);
  if (rc == NSL_OK) s->pushpop = t;
  else free_csv(t);
  return rc;
}

/* Loads the push/pop trace: .csv.xz (nsys-jax) or .parquet (newer). */
static nsl_status load_pushpop(jax_src *s, nsl_error *err) {
  if (s->pushpop || s->pushpop_pq) return NSL_OK;
  if (s->pushpop_tried) return nsl_error_set(err, NSL_ERR_NOTFOUND, "%s has no push/pop trace", s->label);
  s->pushpop_tried = 1;
  void *data = NULL;
  size_t len = 0;
  nsl_status rc = nsl__jax_member_read(s, "report_nvtx_pushpop_trace.csv.xz", &data, &len, err);
  if (rc == NSL_ERR_NOTFOUND) {
    nsl_error_clear(err);
    rc = open_parquet(s, "report_nvtx_pushpop_trace.parquet", &s->pushpop_pq, err);
    if (rc == NSL_ERR_NOTFOUND)
      return nsl_error_set(err, NSL_ERR_NOTFOUND, "%s has no push/pop trace", s->label);
    return rc;
  }
  if (rc != NSL_OK) return rc;
  uint8_t *csv = NULL;
  size_t csvlen = 0;
  char *label = nsl__printf_alloc("%s:report_nvtx_pushpop_trace.csv.xz", s->label);
  rc = label ? nsl__xz_decompress(data, len, (size_t)8 << 30, label, &csv, &csvlen, err)
             : nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  free(label);
  free(data);
  if (rc != NSL_OK) return rc;
  rc = parse_pushpop_csv(s, (const char *)csv, csvlen, err);
  free(csv);
  return rc;
}

/* ---- columns from Parquet ------------------------------------------------ */

/* Reads parquet column `pqname` (or NULLs when absent) as type, keeping
 * rows keep[0..nkeep) (all rows when keep is NULL). */
static nsl_status pq_column(nsl_parquet *pq, const char *pqname, nsl_type type, nsl_dict *dict, const int64_t *keep,
                            int64_t nkeep, nsl_column **out, nsl_error *err) {
  int ci = pqname ? nsl__parquet_find(pq, pqname) : -1;
  int64_t n = keep ? nkeep : nsl__parquet_nrows(pq);
  nsl_column *c = NULL;
  *out = NULL;
  if (ci < 0) {
    c = nsl_column_new(type, n, dict);
    if (!c) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) switch (type) {
      case NSL_I64: nsl_i64(c)[i] = NSL_NULL_I64; break;
      case NSL_I32: nsl_i32(c)[i] = NSL_NULL_I32; break;
      case NSL_STR: nsl_i32(c)[i] = -1; break;
      case NSL_F64: nsl_f64(c)[i] = 0.0 / 0.0; break;
      case NSL_BOOL: break;
      }
    *out = c;
    return NSL_OK;
  }
  nsl_status rc = nsl__parquet_read_column_as(pq, ci, type, type == NSL_STR ? dict : NULL, &c, err);
  if (rc != NSL_OK) return rc;
  if (keep) {
    nsl_column *idx = nsl_column_new(NSL_I64, nkeep, NULL);
    if (!idx) {
      nsl_column_release(c);
      return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    }
    memcpy(idx->data, keep, (size_t)nkeep * sizeof *keep);
    nsl_column *g = nsl_column_gather(c, idx, err);
    nsl_column_release(idx);
    nsl_column_release(c);
    if (!g) return err && err->code ? err->code : NSL_ERR_NOMEM;
    c = g;
  }
  *out = c;
  return NSL_OK;
}

/* Adds off to the non-NULL values of an I64 column. */
static void shift(nsl_column *c, int64_t off) {
  if (!off || c->type != NSL_I64) return;
  for (int64_t i = 0; i < c->len; i++)
    if (nsl_i64(c)[i] != NSL_NULL_I64) nsl_i64(c)[i] += off;
}

/* a + b (NULL when either is). */
static nsl_column *add_cols(const nsl_column *a, const nsl_column *b) {
  nsl_column *r = nsl_column_new(NSL_I64, a->len, NULL);
  if (!r) return NULL;
  for (int64_t i = 0; i < a->len; i++) {
    int64_t x = nsl_i64(a)[i], y = nsl_i64(b)[i];
    nsl_i64(r)[i] = x == NSL_NULL_I64 || y == NSL_NULL_I64 ? NSL_NULL_I64 : x + y;
  }
  return r;
}

/* The layout of trace.parquet: 0 = nsys 2024.4 ("Projected Start"), 1 = 2024.5+ ("Start"/"End"). */
static int trace_layout(nsl_parquet *pq) { return nsl__parquet_find(pq, "Projected Start") >= 0 ? 0 : 1; }

static nsl_status open_trace(jax_src *s, nsl_error *err) {
  nsl_status rc = open_parquet(s, "nvtx_gpu_proj_trace/trace.parquet", &s->trace, err);
  if (rc != NSL_OK || s->have_trace_keep) return rc;
  int layout = trace_layout(s->trace);
  nsl_column *rid = NULL;
  rc = pq_column(s->trace, layout == 0 ? "RangeId" : "Range ID", NSL_I64, NULL, NULL, 0, &rid, err);
  if (rc != NSL_OK) return rc;
  s->keep = malloc((size_t)(rid->len ? rid->len : 1) * sizeof *s->keep);
  if (!s->keep) {
    nsl_column_release(rid);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  for (int64_t i = 0; i < rid->len; i++)
    if (nsl_i64(rid)[i] != NSL_NULL_I64) s->keep[s->nkeep++] = i;
  nsl_column_release(rid);
  s->have_trace_keep = 1;
  return NSL_OK;
}

/* Device of each (pid, tid) the thread metadata names "XlaLauncher:#global=N,...#". */
typedef struct launcher {
  int32_t pid, tid, device;
} launcher;

static nsl_status launchers(jax_src *s, launcher **out, int64_t *nout, nsl_error *err) {
  *out = NULL;
  *nout = 0;
  nsl_status rc = open_parquet(s, "thread-metadata.parquet", &s->threads, err);
  if (rc == NSL_ERR_NOTFOUND) {
    nsl_error_clear(err);
    return NSL_OK;
  }
  if (rc != NSL_OK) return rc;
  nsl_dict *d = nsl_dict_new();
  nsl_column *name = NULL, *pid = NULL, *tid = NULL;
  if (!d) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  if ((rc = pq_column(s->threads, "Name", NSL_STR, d, NULL, 0, &name, err)) != NSL_OK ||
      (rc = pq_column(s->threads, "PID", NSL_I32, NULL, NULL, 0, &pid, err)) != NSL_OK ||
      (rc = pq_column(s->threads, "TID", NSL_I32, NULL, NULL, 0, &tid, err)) != NSL_OK)
    goto done;
  launcher *l = malloc((size_t)(name->len ? name->len : 1) * sizeof *l);
  if (!l) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int64_t i = 0; i < name->len; i++) {
    const char *t = nsl_dict_str(d, nsl_i32(name)[i]);
    int g, loc, proc, sl, used = 0;
    if (t && sscanf(t, "XlaLauncher:#global=%d,local=%d,process=%d,slice=%d#%n", &g, &loc, &proc, &sl, &used) == 4 &&
        used > 0 && t[used] == 0) {
      l[*nout].pid = nsl_i32(pid)[i];
      l[*nout].tid = nsl_i32(tid)[i];
      l[*nout].device = g;
      (*nout)++;
    }
  }
  *out = l;
done:
  nsl_column_release(name);
  nsl_column_release(pid);
  nsl_column_release(tid);
  nsl_dict_release(d);
  return rc;
}

static nsl_status load_gpu_ranges(jax_src *s, const char *const *colnames, const nsl_type *types, int n,
                                  nsl_dict *dict, int64_t off, nsl_column **out, nsl_error *err) {
  nsl_status rc = open_trace(s, err);
  if (rc != NSL_OK) return rc;
  int layout = trace_layout(s->trace);
  static const char *const map[][3] = {
      /* model, 2024.4 layout, 2024.5+ layout */
      {"pid", "PID", "PID"},
      {"tid", "TID", "TID"},
      {"start", "Projected Start", "Start"},
      {"text", "Name", "Text"},
      {"level", "Lvl", "Stack Level"},
      {"range_id", "RangeId", "Range ID"},
      {"parent_id", "ParentId", "Parent ID"},
      {"orig_start", "Orig Start", NULL},
      {"orig_dur", "Orig Duration", NULL},
      {"num_gpu_ops", "NumGPUOps", NULL},
      {"num_child", "NumChild", "Children Count"},
  };
  for (int k = 0; k < n && rc == NSL_OK; k++) {
    const char *cn = colnames[k];
    const char *pqname = NULL;
    int found = 0;
    for (size_t m = 0; m < sizeof map / sizeof *map; m++)
      if (strcmp(map[m][0], cn) == 0) {
        pqname = map[m][1 + layout];
        found = 1;
      }
    if (found) {
      rc = pq_column(s->trace, pqname, types[k], dict, s->keep, s->nkeep, &out[k], err);
      if (rc == NSL_OK && (strcmp(cn, "start") == 0 || strcmp(cn, "orig_start") == 0)) shift(out[k], off);
    } else if (strcmp(cn, "stop") == 0 || strcmp(cn, "orig_stop") == 0) {
      int orig = cn[0] == 'o';
      nsl_column *a = NULL, *b = NULL;
      if (layout == 1 && !orig) {
        rc = pq_column(s->trace, "End", NSL_I64, NULL, s->keep, s->nkeep, &out[k], err);
        if (rc == NSL_OK) shift(out[k], off);
        continue;
      }
      rc = pq_column(s->trace, layout == 1 ? NULL : orig ? "Orig Start" : "Projected Start", NSL_I64, NULL, s->keep,
                     s->nkeep, &a, err);
      if (rc == NSL_OK)
        rc = pq_column(s->trace, layout == 1 ? NULL : orig ? "Orig Duration" : "Projected Duration", NSL_I64, NULL,
                       s->keep, s->nkeep, &b, err);
      if (rc == NSL_OK && !(out[k] = add_cols(a, b))) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      if (rc == NSL_OK) shift(out[k], off);
      nsl_column_release(a);
      nsl_column_release(b);
    } else if (strcmp(cn, "device") == 0) {
      nsl_column *pid = NULL, *tid = NULL;
      launcher *l = NULL;
      int64_t nl = 0;
      rc = launchers(s, &l, &nl, err);
      if (rc == NSL_OK) rc = pq_column(s->trace, "PID", NSL_I32, NULL, s->keep, s->nkeep, &pid, err);
      if (rc == NSL_OK) rc = pq_column(s->trace, "TID", NSL_I32, NULL, s->keep, s->nkeep, &tid, err);
      if (rc == NSL_OK && !(out[k] = nsl_column_new(NSL_I32, s->nkeep, NULL)))
        rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      for (int64_t i = 0; rc == NSL_OK && i < s->nkeep; i++) {
        int32_t dev = NSL_NULL_I32;
        for (int64_t j = 0; j < nl; j++)
          if (l[j].pid == nsl_i32(pid)[i] && l[j].tid == nsl_i32(tid)[i]) dev = l[j].device;
        nsl_i32(out[k])[i] = dev;
      }
      free(l);
      nsl_column_release(pid);
      nsl_column_release(tid);
    } else
      rc = pq_column(s->trace, NULL, types[k], dict, s->keep, s->nkeep, &out[k], err);
  }
  return rc;
}

/* ---- nvtx (host push/pop ranges) ----------------------------------------- */

static const char *const nvtx_extra[][2] = {{"parent_id", "ParentId"}, {"level", "Lvl"},
                                            {"num_child", "NumChild"}, {"dur_child", "DurChild (ns)"},
                                            {"dur_nonchild", "DurNonChild (ns)"}};

static nsl_status load_nvtx(jax_src *s, const char *const *colnames, const nsl_type *types, int n, nsl_dict *dict,
                            int64_t off, nsl_column **out, nsl_error *err) {
  nsl_status rc = load_pushpop(s, err);
  if (rc != NSL_OK) return rc;
  if (s->pushpop_pq) {   /* same column names as the CSV */
    static const char *const map[][2] = {{"pid", "PID"},           {"tid", "TID"},
                                         {"start", "Start (ns)"},  {"stop", "End (ns)"},
                                         {"text", "Name"},         {"range_id", "RangeId"},
                                         {"parent_id", "ParentId"}, {"level", "Lvl"},
                                         {"num_child", "NumChild"}, {"dur_child", "DurChild (ns)"},
                                         {"dur_nonchild", "DurNonChild (ns)"}};
    for (int k = 0; k < n && rc == NSL_OK; k++) {
      const char *pqname = NULL;
      for (size_t m = 0; m < sizeof map / sizeof *map; m++)
        if (strcmp(map[m][0], colnames[k]) == 0) pqname = map[m][1];
      if (strcmp(colnames[k], "kind") == 0) {
        int64_t rows = nsl__parquet_nrows(s->pushpop_pq);
        int32_t id;
        if ((rc = nsl_dict_intern(dict, "push_pop", 8, &id, err)) != NSL_OK) return rc;
        if (!(out[k] = nsl_column_new(NSL_STR, rows, dict))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; i < rows; i++) nsl_i32(out[k])[i] = id;
        continue;
      }
      rc = pq_column(s->pushpop_pq, pqname, types[k], dict, NULL, 0, &out[k], err);
      if (rc == NSL_OK && (strcmp(colnames[k], "start") == 0 || strcmp(colnames[k], "stop") == 0)) shift(out[k], off);
    }
    return rc;
  }
  csv_table *t = s->pushpop;
  for (int k = 0; k < n; k++) {
    const char *cn = colnames[k];
    nsl_column *c = nsl_column_new(types[k], t->n, dict);
    if (!c) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    out[k] = c;
    const int64_t *src64 = NULL;
    const int32_t *src32 = NULL;
    int is_time = 0;
    if (strcmp(cn, "start") == 0) src64 = t->start, is_time = 1;
    else if (strcmp(cn, "stop") == 0) src64 = t->stop, is_time = 1;
    else if (strcmp(cn, "range_id") == 0) src64 = t->range_id;
    else if (strcmp(cn, "parent_id") == 0) src64 = t->parent_id;
    else if (strcmp(cn, "dur_child") == 0) src64 = t->dur_child;
    else if (strcmp(cn, "dur_nonchild") == 0) src64 = t->dur_nonchild;
    else if (strcmp(cn, "pid") == 0) src32 = t->pid;
    else if (strcmp(cn, "tid") == 0) src32 = t->tid;
    else if (strcmp(cn, "level") == 0) src32 = t->level;
    else if (strcmp(cn, "num_child") == 0) src32 = t->num_child;
    for (int64_t i = 0; i < t->n; i++) {
      int64_t v = NSL_NULL_I64;
      if (src64) v = src64[i] != NSL_NULL_I64 && is_time ? src64[i] + off : src64[i];
      else if (src32) v = src32[i] == NSL_NULL_I32 ? NSL_NULL_I64 : src32[i];
      switch (types[k]) {
      case NSL_I64: nsl_i64(c)[i] = v; break;
      case NSL_I32: nsl_i32(c)[i] = v == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)v; break;
      case NSL_F64: nsl_f64(c)[i] = v == NSL_NULL_I64 ? 0.0 / 0.0 : (double)v; break;
      case NSL_BOOL: nsl_bool(c)[i] = v != NSL_NULL_I64 && v != 0; break;
      case NSL_STR: {
        const char *str = strcmp(cn, "text") == 0 ? t->text[i] : strcmp(cn, "kind") == 0 ? "push_pop" : NULL;
        nsl_i32(c)[i] = -1;
        if (str && (rc = nsl_dict_intern(dict, str, strlen(str), &nsl_i32(c)[i], err)) != NSL_OK) return rc;
        break;
      }
      }
    }
  }
  return NSL_OK;
}

/* ---- threads, devices ------------------------------------------------------ */

static nsl_status load_threads(jax_src *s, const char *const *colnames, const nsl_type *types, int n, nsl_dict *dict,
                               nsl_column **out, nsl_error *err) {
  nsl_status rc = open_parquet(s, "thread-metadata.parquet", &s->threads, err);
  if (rc != NSL_OK) return rc;
  for (int k = 0; k < n && rc == NSL_OK; k++) {
    const char *pq = strcmp(colnames[k], "pid") == 0 ? "PID" : strcmp(colnames[k], "tid") == 0 ? "TID"
                     : strcmp(colnames[k], "name") == 0                                          ? "Name"
                                                                                                 : NULL;
    rc = pq_column(s->threads, pq, types[k], dict, NULL, 0, &out[k], err);
  }
  return rc;
}

static nsl_status load_devices(jax_src *s, const char *const *colnames, const nsl_type *types, int n, nsl_dict *dict,
                               nsl_column **out, nsl_error *err) {
  static const char *const map[][2] = {{"device", "('TARGET_INFO_GPU', 'id')"},
                                       {"name", "('TARGET_INFO_GPU', 'name')"},
                                       {"sm_count", "('TARGET_INFO_GPU', 'smCount')"},
                                       {"memory", "('TARGET_INFO_GPU', 'totalMemory')"},
                                       {"bandwidth", "('TARGET_INFO_GPU', 'memoryBandwidth')"},
                                       {"clock", "('TARGET_INFO_GPU', 'clockRate')"},
                                       {"bus", "('TARGET_INFO_GPU', 'busLocation')"},
                                       {"uuid", "('TARGET_INFO_GPU', 'uuid')"}};
  nsl_status rc = open_parquet(s, "device-metadata.parquet", &s->devices, err);
  if (rc != NSL_OK) return rc;
  for (int k = 0; k < n && rc == NSL_OK; k++) {
    const char *pq = NULL;
    for (size_t m = 0; m < sizeof map / sizeof *map; m++)
      if (strcmp(map[m][0], colnames[k]) == 0) pq = map[m][1];
    if (strcmp(colnames[k], "compute_capability") == 0) {
      nsl_column *ma = NULL, *mi = NULL;
      rc = pq_column(s->devices, "('TARGET_INFO_GPU', 'computeMajor')", NSL_I64, NULL, NULL, 0, &ma, err);
      if (rc == NSL_OK) rc = pq_column(s->devices, "('TARGET_INFO_GPU', 'computeMinor')", NSL_I64, NULL, NULL, 0, &mi, err);
      if (rc == NSL_OK && !(out[k] = nsl_column_new(NSL_STR, ma->len, dict)))
        rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      for (int64_t i = 0; rc == NSL_OK && i < ma->len; i++) {
        char buf[64];
        if (nsl_i64(ma)[i] == NSL_NULL_I64) nsl_i32(out[k])[i] = -1;
        else {
          int len = snprintf(buf, sizeof buf, "%lld.%lld", (long long)nsl_i64(ma)[i], (long long)nsl_i64(mi)[i]);
          rc = nsl_dict_intern(dict, buf, (size_t)len, &nsl_i32(out[k])[i], err);
        }
      }
      nsl_column_release(ma);
      nsl_column_release(mi);
      continue;
    }
    /* device-metadata.parquet indexed by cuDevice (nsys-jax since 2024) may
     * lack TARGET_INFO_GPU's id */
    if (strcmp(colnames[k], "device") == 0 && nsl__parquet_find(s->devices, pq) < 0) pq = "cuDevice";
    rc = pq_column(s->devices, pq, types[k], dict, NULL, 0, &out[k], err);
  }
  return rc;
}

/* ---- the source operations -------------------------------------------------- */

static int is_table(const char *name) {
  return strcmp(name, "gpu_ranges") == 0 || strcmp(name, "nvtx") == 0 || strcmp(name, "threads") == 0 ||
         strcmp(name, "devices") == 0;
}

static nsl_status jax_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  (void)p;
  if (!is_table(name)) return nsl_error_set(err, NSL_ERR_NOTFOUND, "no %s in an nsys-jax archive", name);
  if (strcmp(name, "nvtx") == 0)
    for (size_t k = 0; k < sizeof nvtx_extra / sizeof *nvtx_extra; k++)
      if (nsl_table_find(t, nvtx_extra[k][0]) < 0)
        nsl_table_declare(t, nvtx_extra[k][0], strncmp(nvtx_extra[k][0], "dur", 3) == 0 || k == 0 ? NSL_I64 : NSL_I32, NULL);
  return NSL_OK;
}

static nsl_status jax_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                           nsl_dict *dict, int64_t off, nsl_column **out, nsl_error *err) {
  jax_src *s = p;
  nsl_status rc;
  for (int k = 0; k < n; k++) out[k] = NULL;
  if (strcmp(name, "gpu_ranges") == 0) rc = load_gpu_ranges(s, colnames, types, n, dict, off, out, err);
  else if (strcmp(name, "nvtx") == 0) rc = load_nvtx(s, colnames, types, n, dict, off, out, err);
  else if (strcmp(name, "threads") == 0) rc = load_threads(s, colnames, types, n, dict, out, err);
  else if (strcmp(name, "devices") == 0) rc = load_devices(s, colnames, types, n, dict, out, err);
  else rc = nsl_error_set(err, NSL_ERR_NOTFOUND, "no %s in an nsys-jax archive", name);
  if (rc != NSL_OK)
    for (int k = 0; k < n; k++) {
      nsl_column_release(out[k]);
      out[k] = NULL;
    }
  return rc;
}

static nsl_status jax_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  jax_src *s = p;
  nsl_status rc;
  *out = 0;
  if (strcmp(name, "gpu_ranges") == 0) {
    if ((rc = open_trace(s, err)) != NSL_OK) return rc;
    *out = s->nkeep;
  } else if (strcmp(name, "nvtx") == 0) {
    if ((rc = load_pushpop(s, err)) != NSL_OK) return rc;
    *out = s->pushpop ? s->pushpop->n : nsl__parquet_nrows(s->pushpop_pq);
  } else if (strcmp(name, "threads") == 0) {
    if ((rc = open_parquet(s, "thread-metadata.parquet", &s->threads, err)) != NSL_OK) return rc;
    *out = nsl__parquet_nrows(s->threads);
  } else if (strcmp(name, "devices") == 0) {
    if ((rc = open_parquet(s, "device-metadata.parquet", &s->devices, err)) != NSL_OK) return rc;
    *out = nsl__parquet_nrows(s->devices);
  } else return nsl_error_set(err, NSL_ERR_NOTFOUND, "no %s in an nsys-jax archive", name);
  return NSL_OK;
}

const nsl_source_ops nsl__jax_source_ops = {.version = NSL_SOURCE_VERSION,
                                           .kind = "nsys-jax",
                                           .describe = jax_describe,
                                           .load = jax_load,
                                           .count = jax_count,
                                           .close = jax_close,
                                           .members = nsl__jax_member_list,
                                           .member_read = nsl__jax_member_read};

/* ---- opening ---------------------------------------------------------------- */

#define TRACE_MEMBER "nvtx_gpu_proj_trace/trace.parquet"

/* Whether b holds root + the projection (or nsys-jax-combine's folder of it). */
static int has_trace(const nsl_bundle *b, const char *root) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s" TRACE_MEMBER, root);
  if (nsl_bundle_find(b, buf)) return 1;
  size_t np = strlen(buf);
  for (size_t i = 0; i < nsl_bundle_count(b); i++) {
    const char *name = nsl_bundle_member_at(b, i)->name;
    if (strncmp(name, buf, np) == 0 && name[np] == '/') return 1;
  }
  return 0;
}

/* The folder an nsys-jax archive's members lie in, into root (cap bytes):
 * "" as nsys-jax writes them, or "<dir>/" for an archive zipped as a folder
 * (every member under one top-level folder that holds the projection).
 * Returns 0 when b is not an nsys-jax archive. */
static int archive_root(const nsl_bundle *b, char *root, size_t cap) {
  root[0] = 0;
  if (nsl_bundle_find(b, NSL_BUNDLE_MANIFEST)) return 0;
  if (has_trace(b, "")) return 1;
  if (nsl_bundle_count(b) == 0) return 0;
  const char *first = nsl_bundle_member_at(b, 0)->name;
  const char *slash = strchr(first, '/');
  if (!slash || (size_t)(slash - first) + 2 > cap || (size_t)(slash - first) + 2 > 256) return 0;
  size_t nr = (size_t)(slash - first) + 1;
  for (size_t i = 1; i < nsl_bundle_count(b); i++)
    if (strncmp(nsl_bundle_member_at(b, i)->name, first, nr) != 0) return 0;
  memcpy(root, first, nr);
  root[nr] = 0;
  char manifest[300];
  snprintf(manifest, sizeof manifest, "%s%s", root, NSL_BUNDLE_MANIFEST);
  if (!nsl_bundle_find(b, manifest) && has_trace(b, root)) return 1;
  root[0] = 0;
  return 0;
}

int nsl__jax_bid(nsl__input *in) {
  char root[256];
  nsl_bundle *b = nsl__input_is_zip(in) ? nsl__input_zip(in) : NULL;   /* a bundle's error says what is wrong */
  return b && archive_root(b, root, sizeof root);
}

/* The file stem of path as a new string: "dir/pax_proc0.zip" -> "pax_proc0". */
static char *file_stem(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  return strndup(base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
}

/* Host and nsys version from system-metadata.parquet (name/value rows). */
static void system_info(jax_src *s, nsl_report_info *info) {
  nsl_parquet *pq = NULL;
  nsl_error e = {0};
  if (open_parquet(s, "system-metadata.parquet", &pq, &e) != NSL_OK) return;
  nsl_dict *d = nsl_dict_new();
  nsl_column *name = NULL, *value = NULL;
  if (d && pq_column(pq, "name", NSL_STR, d, NULL, 0, &name, &e) == NSL_OK &&
      nsl__parquet_find(pq, "value") >= 0 &&
      nsl__parquet_column_info(pq, nsl__parquet_find(pq, "value"))->type == NSL_STR &&
      pq_column(pq, "value", NSL_STR, d, NULL, 0, &value, &e) == NSL_OK) {
    for (int64_t i = 0; i < name->len; i++) {
      const char *k = nsl_dict_str(d, nsl_i32(name)[i]), *v = nsl_dict_str(d, nsl_i32(value)[i]);
      if (!k || !v) continue;
      if (strcmp(k, "Hostname") == 0) {   /* the last one, as before */
        free(s->host);
        info->host = s->host = strdup(v);
      }
      if (strcmp(k, "TargetInstallDir") == 0) {   /* .../nsight-systems-cli/2024.4.1/target-linux-x64 */
        const char *p = strstr(v, "nsight-systems");
        p = p ? strchr(p, '/') : NULL;
        if (p) {
          size_t n = strcspn(p + 1, "/");
          if (n < sizeof info->nsys_version) {
            memcpy(info->nsys_version, p + 1, n);
            info->nsys_version[n] = 0;
          }
        }
      }
    }
  }
  nsl_column_release(name);
  nsl_column_release(value);
  nsl_dict_release(d);
  nsl__parquet_close(pq);
}

/* Adds one report of archive ar (stem "" for a single archive). */
static nsl_status add_one(nsl_trace *tr, jax_archive *ar, const char *path, const char *stem, nsl_error *err) {
  jax_src *s = calloc(1, sizeof *s);
  if (!s) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  s->ar = ar;
  ar->refs++;
  s->stem = strdup(stem);
  s->label = stem[0] ? nsl__printf_alloc("%s[%s]", path, stem) : strdup(path);
  s->name = stem[0] ? strdup(stem) : file_stem(path);
  if (!s->stem || !s->label || !s->name) {
    jax_close(s);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  nsl_report_info info;
  memset(&info, 0, sizeof info);
  info.path = path;
  info.name = s->name;
  info.host = "";
  info.rank = -1;
  info.first_ts = info.last_ts = NSL_NULL_I64;
  system_info(s, &info);
  nsl_status rc = nsl__cache_add_source(tr, &nsl__jax_source_ops, s, &info, path, nsl__bundle_fd(ar->b), stem, err);
  if (rc != NSL_OK) jax_close(s);
  return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

nsl_status nsl__jax_add_reports(nsl_trace *tr, nsl__input *in, nsl_error *err) {
  const char *path = in->path;
  nsl_bundle *zip = nsl__input_zip(in);   /* the bid opened it: a plain zip (no manifest.json at its root) */
  if (!zip) {
    if (err) *err = in->zip_err;
    return in->zip_err.code;
  }
  jax_archive *ar = calloc(1, sizeof *ar);
  if (!ar) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl_status rc = NSL_OK;
  ar->b = nsl__bundle_retain(zip);
  ar->refs = 1;
  char trace_dir[512];   /* <root>nvtx_gpu_proj_trace/trace.parquet */
  int is = archive_root(ar->b, ar->root, sizeof ar->root);
  snprintf(trace_dir, sizeof trace_dir, "%s" TRACE_MEMBER, ar->root);
  if (!is) {
    rc = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': not an nsys-jax archive (no %s)", path, TRACE_MEMBER);
  } else if (nsl_bundle_find(ar->b, trace_dir)) {
    rc = add_one(tr, ar, path, "", err);
  } else {   /* nsys-jax-combine: one report per stem, in name order */
    strcat(trace_dir, "/");
    size_t n = nsl_bundle_count(ar->b), ns = 0, np = strlen(trace_dir);
    const char **stems = calloc(n ? n : 1, sizeof *stems);
    if (!stems) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; stems && i < n; i++) {
      const char *name = nsl_bundle_member_at(ar->b, i)->name;
      if (strncmp(name, trace_dir, np) == 0 && !strchr(name + np, '/')) stems[ns++] = name + np;
    }
    if (stems) qsort(stems, ns, sizeof *stems, cmp_str);
    for (size_t i = 0; rc == NSL_OK && i < ns; i++) rc = add_one(tr, ar, path, stems[i], err);
    free(stems);
  }
  archive_release(ar);
  return rc;
}
