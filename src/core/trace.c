/* trace.c -- a trace: reports (one source each), the shared string
 * dictionary, and data-model tables that load lazily, column by column,
 * with every report's rows concatenated and times aligned.
 *
 * Several reports load in parallel, one thread per report at a time (each
 * source has its own connection): each report's strings go into a
 * dictionary of its own, remapped into the trace's afterwards in report
 * order, so string ids come out as a sequential load would give them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/big_alloc.h"
#include "core/model.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "core/rowfilter.h"
#include "nsl/nsl.h"
#include "nsl/source.h"

/* What keeps the trace's sources to one thread at a time: the caller's
 * loads, SQL and member reads, and a load read in the background
 * (nsl_load_read).  Recursive: an SQL row callback may load.  A load plan
 * holds a reference, so that a read that starts after nsl_trace_close finds
 * it closed instead of the sources gone. */
typedef struct source_guard {
  pthread_mutex_t lock;
  atomic_int refs;
  int closed;               /* set under lock by nsl_trace_close */
} source_guard;

static source_guard *guard_new(void) {
  source_guard *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  int bad = pthread_mutex_init(&g->lock, &a) != 0;
  pthread_mutexattr_destroy(&a);
  if (bad) {
    free(g);
    return NULL;
  }
  atomic_init(&g->refs, 1);
  return g;
}

static source_guard *guard_retain(source_guard *g) {
  atomic_fetch_add(&g->refs, 1);
  return g;
}

static void guard_release(source_guard *g) {
  if (!g || atomic_fetch_sub(&g->refs, 1) > 1) return;
  pthread_mutex_destroy(&g->lock);
  free(g);
}

static void guard_enter(source_guard *g) { pthread_mutex_lock(&g->lock); }
static void guard_leave(source_guard *g) { pthread_mutex_unlock(&g->lock); }

typedef struct report_src {
  const nsl_source_ops *ops;
  void *src;
  nsl_report_info info;
} report_src;

typedef struct trace_table {
  char *name;
  nsl_table *table;
  int64_t *rows;      /* rows per report, -1 until known */
  struct trace_table *next;
} trace_table;

struct nsl_trace {
  int nreports, cap;
  report_src *reports;
  nsl_dict *dict;
  trace_table *tables;
  char **inputs;      /* the paths the trace was opened from */
  int ninputs;
  nsl_open_options opts;   /* opts.nsys: a copy of its own */
  source_guard *guard;
  nsl__row_filters *filters;   /* nsl__trace_filter: rows dropped where they are read */
  int64_t clock_origin;          /* nsl__trace_set_clock_origin; 0: the earliest report's start */
  /* derived columns being kept (nsl_trace_derived_put): written by a task of their own, in order; items
   * [0, kept_next) are written and released by the caller's thread (the columns' counts are not atomic) */
  pthread_mutex_t keep_lock;
  struct keep_item *keeping;
  int nkeeping, kept_next, keep_cap, keeper_busy;
  nsl__task *keeper;
};

nsl_trace *nsl_trace_new(void) {
  nsl_trace *tr = calloc(1, sizeof *tr);
  if (!tr) return NULL;
  nsl_open_options_init(&tr->opts);
  tr->dict = nsl_dict_new();
  tr->guard = guard_new();
  if (!tr->dict || !tr->guard || pthread_mutex_init(&tr->keep_lock, NULL) != 0) {
    nsl_dict_release(tr->dict);
    guard_release(tr->guard);
    free(tr);
    return NULL;
  }
  return tr;
}

static void keeping_drain(nsl_trace *tr);
static void keeping_release(nsl_trace *tr, int all);

void nsl_trace_close(nsl_trace *tr) {
  if (!tr) return;
  keeping_drain(tr);   /* what is being kept is written first: a later run reads it */
  keeping_release(tr, 1);
  free(tr->keeping);
  pthread_mutex_destroy(&tr->keep_lock);
  guard_enter(tr->guard);   /* a read in flight ends first; one not begun finds the trace closed */
  tr->guard->closed = 1;
  guard_leave(tr->guard);
  trace_table *tt = tr->tables;
  while (tt) {
    trace_table *next = tt->next;
    nsl_table_set_loader(tt->table, NULL, NULL, NULL);
    nsl_table_release(tt->table);
    free(tt->name);
    free(tt->rows);
    free(tt);
    tt = next;
  }
  for (int i = 0; i < tr->nreports; i++)
    if (tr->reports[i].ops->close) tr->reports[i].ops->close(tr->reports[i].src);
  for (int i = 0; i < tr->nreports; i++) {
    free((char *)tr->reports[i].info.path);
    free((char *)tr->reports[i].info.name);
    free((char *)tr->reports[i].info.host);
  }
  free(tr->reports);
  for (int i = 0; i < tr->ninputs; i++) free(tr->inputs[i]);
  free(tr->inputs);
  free((char *)tr->opts.nsys);
  nsl__row_filters_free(tr->filters);
  nsl_dict_release(tr->dict);
  guard_release(tr->guard);
  free(tr);
  nsl__big_release_kept();   /* freed large blocks kept for reuse go back to the OS */
}

void nsl_open_options_init(nsl_open_options *o) {
  const char *v = getenv("NSL_NO_CACHE");
  memset(o, 0, sizeof *o);
  o->cache = !(v && v[0] && strcmp(v, "0") != 0);
}

nsl_status nsl_trace_set_options(nsl_trace *tr, const nsl_open_options *opts, nsl_error *err) {
  char *nsys = opts->nsys ? strdup(opts->nsys) : NULL;
  if (opts->nsys && !nsys) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  free((char *)tr->opts.nsys);
  tr->opts = *opts;
  tr->opts.nsys = nsys;
  return NSL_OK;
}

const nsl_open_options *nsl_trace_options(const nsl_trace *tr) { return &tr->opts; }

nsl_status nsl_trace_add_input(nsl_trace *tr, const char *path, nsl_error *err) {
  char **in = realloc(tr->inputs, (size_t)(tr->ninputs + 1) * sizeof *in);
  if (!in) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  tr->inputs = in;
  if (!(in[tr->ninputs] = strdup(path))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  tr->ninputs++;
  return NSL_OK;
}

int nsl_trace_ninputs(const nsl_trace *tr) { return tr->ninputs; }
const char *nsl_trace_input_path(const nsl_trace *tr, int i) {
  return i >= 0 && i < tr->ninputs ? tr->inputs[i] : NULL;
}

nsl_status nsl_trace_add_source(nsl_trace *tr, const nsl_source_ops *ops, void *src,
                                const nsl_report_info *info, nsl_error *err) {
  if (ops->version < 1 || ops->version > NSL_SOURCE_VERSION)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot add report '%s': its source is of version %d, this nsl knows 1 to %d",
                         info->path, ops->version, NSL_SOURCE_VERSION);
  if (tr->tables)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot add report '%s' after tables were loaded", info->path);
  if (tr->nreports == tr->cap) {
    int cap = tr->cap ? tr->cap * 2 : 4;
    report_src *r = realloc(tr->reports, (size_t)cap * sizeof *r);
    if (!r) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    tr->reports = r;
    tr->cap = cap;
  }
  report_src *r = &tr->reports[tr->nreports];
  r->ops = ops;
  r->src = src;
  r->info = *info;
  const char *name = info->name ? info->name : "";
  r->info.path = strdup(info->path ? info->path : "");
  r->info.host = strdup(info->host ? info->host : "");
  r->info.name = strdup(name);
  /* Report names are unique within a trace: a clash gets "#2", "#3", ... */
  for (int k = 2; r->info.name; k++) {
    int clash = 0;
    for (int i = 0; i < tr->nreports; i++) clash |= strcmp(tr->reports[i].info.name, r->info.name) == 0;
    if (!clash) break;
    size_t n = strlen(name) + 16;
    char *unique = malloc(n);
    if (unique) snprintf(unique, n, "%s#%d", name, k);
    free((char *)r->info.name);
    r->info.name = unique;
  }
  if (!r->info.path || !r->info.host || !r->info.name) {
    free((char *)r->info.path);
    free((char *)r->info.host);
    free((char *)r->info.name);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  tr->nreports++;
  return NSL_OK;
}

nsl_status nsl_trace_keep_reports(nsl_trace *tr, const int *keep, int n, nsl_error *err) {
  if (tr->tables) return nsl_error_set(err, NSL_ERR_ARG, "cannot select reports after tables were loaded");
  if (n <= 0) return nsl_error_set(err, NSL_ERR_ARG, "no report selected");
  char *kept = calloc((size_t)tr->nreports + 1, 1);
  if (!kept) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int k = 0; k < n; k++) {
    if (keep[k] < 0 || keep[k] >= tr->nreports) {
      free(kept);
      return nsl_error_set(err, NSL_ERR_ARG, "no report %d: the trace has %d", keep[k], tr->nreports);
    }
    kept[keep[k]] = 1;
  }
  int m = 0;
  for (int i = 0; i < tr->nreports; i++) {
    report_src *r = &tr->reports[i];
    if (kept[i]) {
      tr->reports[m++] = *r;   /* renumbered in trace order, as if only the kept reports were opened */
      continue;
    }
    if (r->ops->close) r->ops->close(r->src);
    free((char *)r->info.path);
    free((char *)r->info.name);
    free((char *)r->info.host);
  }
  tr->nreports = m;
  free(kept);
  return NSL_OK;
}

nsl_status nsl__trace_filter(nsl_trace *tr, const char *table, const nsl__row_cond *conds, int n, nsl_error *err) {
  if (tr->tables) return nsl_error_set(err, NSL_ERR_ARG, "cannot filter rows after tables were loaded");
  return nsl__row_filters_set(&tr->filters, table, conds, n, err);
}

int nsl_trace_nreports(const nsl_trace *tr) { return tr->nreports; }
const nsl_report_info *nsl_trace_report(const nsl_trace *tr, int i) {
  return i >= 0 && i < tr->nreports ? &tr->reports[i].info : NULL;
}
nsl_dict *nsl_trace_dict(nsl_trace *tr) { return tr->dict; }

nsl_status nsl_trace_set_dict(nsl_trace *tr, nsl_dict *d, nsl_error *err) {
  if (tr->tables) return nsl_error_set(err, NSL_ERR_ARG, "cannot change the dictionary after tables were loaded");
  nsl_dict_retain(d);
  nsl_dict_release(tr->dict);
  tr->dict = d;
  return NSL_OK;
}

const nsl_source_ops *nsl__trace_source(const nsl_trace *tr, int i, void **src) {
  if (i < 0 || i >= tr->nreports) return NULL;
  if (src) *src = tr->reports[i].src;
  return tr->reports[i].ops;
}

nsl_status nsl_trace_sql(nsl_trace *tr, int i, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err) {
  if (i < 0 || i >= tr->nreports) return nsl_error_set(err, NSL_ERR_ARG, "no report %d", i + 1);
  const report_src *r = &tr->reports[i];
  if (!r->ops->sql)
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "report %d (%s) is not an SQLite export", i + 1, r->info.path);
  guard_enter(tr->guard);
  nsl_status rc = r->ops->sql(r->src, sql, row, ctx, err);
  guard_leave(tr->guard);
  return rc;
}

nsl_status nsl_trace_metadata(nsl_trace *tr, int i, nsl_metadata_fn fn, void *ctx, nsl_error *err) {
  if (i < 0 || i >= tr->nreports) return nsl_error_set(err, NSL_ERR_ARG, "no report %d", i + 1);
  const report_src *r = &tr->reports[i];
  if (!r->ops->metadata) return NSL_OK;
  guard_enter(tr->guard);
  nsl_status rc = r->ops->metadata(r->src, fn, ctx, err);
  guard_leave(tr->guard);
  return rc;
}

int nsl_trace_has_members(const nsl_trace *tr, int i) {
  return i >= 0 && i < tr->nreports && tr->reports[i].ops->members && tr->reports[i].ops->member_read;
}

size_t nsl_trace_members(nsl_trace *tr, int i, const char *prefix, void (*fn)(void *ctx, const char *name),
                         void *ctx) {
  if (!nsl_trace_has_members(tr, i)) return 0;
  guard_enter(tr->guard);
  size_t n = tr->reports[i].ops->members(tr->reports[i].src, prefix, fn, ctx);
  guard_leave(tr->guard);
  return n;
}

nsl_status nsl_trace_member_read(nsl_trace *tr, int i, const char *name, void **data, size_t *len,
                                 nsl_error *err) {
  if (i < 0 || i >= tr->nreports) return nsl_error_set(err, NSL_ERR_ARG, "no report %d", i + 1);
  if (!nsl_trace_has_members(tr, i))
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "report %d (%s) has no archive members", i + 1,
                         tr->reports[i].info.path);
  guard_enter(tr->guard);
  nsl_status rc = tr->reports[i].ops->member_read(tr->reports[i].src, name, data, len, err);
  guard_leave(tr->guard);
  return rc;
}

/* Offset added to report i's times so that all reports share one clock:
 * each report's session start (UTC) relative to the earliest (or to the
 * clock's origin, nsl__trace_set_clock_origin). */
static int64_t time_offset(const nsl_trace *tr, int i) {
  int64_t first = tr->clock_origin;
  if (first == 0)
    for (int k = 0; k < tr->nreports; k++) {
      int64_t s = tr->reports[k].info.start_utc;
      if (s > 0 && (first == 0 || s < first)) first = s;
    }
  int64_t s = tr->reports[i].info.start_utc;
  return s > 0 && first > 0 ? s - first : 0;
}

void nsl__trace_set_clock_origin(nsl_trace *tr, int64_t start_utc) { tr->clock_origin = start_utc > 0 ? start_utc : 0; }

/* ---- the reports table, built from the reports' metadata ---- */

static nsl_status build_reports(nsl_trace *tr, nsl_table *t, nsl_error *err) {
  int n = tr->nreports;
  nsl_column *report = nsl_column_new(NSL_I32, n, NULL), *path = nsl_column_new(NSL_STR, n, tr->dict),
             *name = nsl_column_new(NSL_STR, n, tr->dict), *rank = nsl_column_new(NSL_I64, n, NULL),
             *host = nsl_column_new(NSL_STR, n, tr->dict), *ver = nsl_column_new(NSL_STR, n, tr->dict),
             *schema = nsl_column_new(NSL_STR, n, tr->dict), *start = nsl_column_new(NSL_I64, n, NULL),
             *dur = nsl_column_new(NSL_I64, n, NULL), *offset = nsl_column_new(NSL_I64, n, NULL);
  nsl_column *all[] = {report, path, name, rank, host, ver, schema, start, dur, offset};
  const char *names[] = {"report", "path", "name", "rank", "host", "nsys_version", "schema_version",
                         "start_utc", "duration", "time_offset"};
  nsl_status rc = NSL_OK;
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    if (!all[k]) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int i = 0; rc == NSL_OK && i < n; i++) {
    const nsl_report_info *in = &tr->reports[i].info;
    /* path and name always; host and versions NULL when empty */
    const char *texts[] = {in->path, in->name, in->host, in->nsys_version, in->schema_version};
    nsl_column *strs[] = {path, name, host, ver, schema};
    for (int k = 0; k < 5; k++) {
      nsl_i32(strs[k])[i] = -1;
      if ((k < 2 || texts[k][0]) &&
          (rc = nsl_dict_intern(tr->dict, texts[k], strlen(texts[k]), &nsl_i32(strs[k])[i], err)) != NSL_OK)
        break;
    }
    nsl_i32(report)[i] = i;
    nsl_i64(rank)[i] = in->rank >= 0 ? in->rank : NSL_NULL_I64;
    nsl_i64(start)[i] = in->start_utc > 0 ? in->start_utc : NSL_NULL_I64;
    nsl_i64(dur)[i] = in->duration > 0 ? in->duration : NSL_NULL_I64;
    nsl_i64(offset)[i] = time_offset(tr, i);
  }
  for (size_t k = 0; k < sizeof all / sizeof *all; k++) {
    if (rc == NSL_OK) rc = nsl_table_add(t, names[k], all[k], err);
    nsl_column_release(all[k]);
  }
  return rc;
}

/* ---- lazily loaded model tables ---- */

typedef struct load_ctx {
  nsl_trace *tr;
  trace_table *tt;
} load_ctx;

/* One report's count, run on a worker thread. */
typedef struct count_work {
  nsl_trace *tr;
  const char *name;
  nsl_status *rc;
  nsl_error *errs;
  int64_t *counts;
  const int *which;         /* job k counts report which[k] */
} count_work;

static void count_job(void *p, int k) {
  count_work *j = p;
  int i = j->which[k];
  report_src *r = &j->tr->reports[i];
  size_t flen = 0;
  const void *f = nsl__row_filters_find(j->tr->filters, j->name, &flen);
  j->rc[i] = nsl__row_filter_count(r->ops, r->src, j->name, time_offset(j->tr, i), f, flen, &j->counts[i], &j->errs[i]);
}

/* Counts the rows of table `name` in each report whose rows[i] is not known
 * (< 0), reports in parallel with the sources locked: rows[i] gets the
 * count (0 where the report has no such table), rc[i] and errs[i] the
 * outcome (rows[i] stays unknown after an error).  Any thread; NSL_ERR_NOMEM
 * when there is no room to count. */
static nsl_status count_reports(nsl_trace *tr, const char *name, int64_t *rows, nsl_status *rc, nsl_error *errs) {
  int todo = 0;
  for (int i = 0; i < tr->nreports; i++) todo += rows[i] < 0;
  if (todo == 0) return NSL_OK;
  int *which = malloc((size_t)todo * sizeof *which);
  int64_t *counts = calloc((size_t)tr->nreports, sizeof *counts);
  if (!which || !counts) {
    free(which);
    free(counts);
    return NSL_ERR_NOMEM;
  }
  for (int i = 0, k = 0; i < tr->nreports; i++)
    if (rows[i] < 0) which[k++] = i;
  count_work j = {tr, name, rc, errs, counts, which};
  guard_enter(tr->guard);
  nsl__run_parallel(todo, nsl__thread_count(todo), count_job, &j);
  guard_leave(tr->guard);
  for (int k = 0; k < todo; k++) {
    int i = which[k];
    if (rc[i] == NSL_ERR_NOTFOUND) rows[i] = 0;
    else if (rc[i] == NSL_OK) rows[i] = counts[i];
  }
  free(which);
  free(counts);
  return NSL_OK;
}

/* The first error among rc[0..n) other than NSL_ERR_NOTFOUND (a report
 * without the table), with its message copied to err; else NSL_OK. */
static nsl_status first_error(const nsl_status *rc, const nsl_error *errs, int n, nsl_error *err) {
  for (int i = 0; i < n; i++)
    if (rc[i] != NSL_OK && rc[i] != NSL_ERR_NOTFOUND) {
      if (err) *err = errs[i];
      return rc[i];
    }
  return NSL_OK;
}

/* The table's row count from every report's (counted where not known). */
static nsl_status count_rows(nsl_trace *tr, trace_table *tt, nsl_error *err) {
  size_t nr = (size_t)(tr->nreports ? tr->nreports : 1);
  nsl_status *rc = calloc(nr, sizeof *rc);
  nsl_error *errs = calloc(nr, sizeof *errs);
  nsl_status st = rc && errs ? count_reports(tr, tt->name, tt->rows, rc, errs) : NSL_ERR_NOMEM;
  if (st == NSL_ERR_NOMEM) nsl_error_set(err, st, "out of memory");
  else st = first_error(rc, errs, tr->nreports, err);
  free(rc);
  free(errs);
  if (st != NSL_OK) return st;
  int64_t total = 0;
  for (int i = 0; i < tr->nreports; i++) total += tt->rows[i];
  nsl_table_set_nrows(tt->table, total);
  return NSL_OK;
}

/* Whether dictionaries a and b hold the same strings under the same ids. */
static int same_dict(const nsl_dict *a, const nsl_dict *b) {
  int32_t n = nsl_dict_size(a);
  if (nsl_dict_size(b) != n) return 0;
  for (int32_t k = 0; k < n; k++) {
    size_t len = nsl_dict_strlen(a, k);
    if (nsl_dict_strlen(b, k) != len || memcmp(nsl_dict_str(a, k), nsl_dict_str(b, k), len) != 0) return 0;
  }
  return 1;
}

/* The ids in the trace's dictionary of local's strings (*n of them), interned in id order (so ids come out as
 * a load straight into it would give them); *map malloc'd.  prev, prev_map: the report before's dictionary and
 * map (NULL for none): reports of one job (ranks of one program) often read the same strings in the same order,
 * and then local's map is prev's, found without a lookup in the trace's dictionary. */
static nsl_status intern_all(nsl_trace *tr, const nsl_dict *local, int32_t **map, int32_t *n, const nsl_dict *prev,
                             const int32_t *prev_map, nsl_error *err) {
  int32_t nl = nsl_dict_size(local);
  *n = nl;
  if (!(*map = malloc((size_t)(nl > 0 ? nl : 1) * sizeof **map))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  if (prev && same_dict(prev, local)) {
    memcpy(*map, prev_map, (size_t)nl * sizeof **map);
    return NSL_OK;
  }
  for (int32_t k = 0; k < nl; k++) {
    nsl_status rc = nsl_dict_intern(tr->dict, nsl_dict_str(local, k), nsl_dict_strlen(local, k), &(*map)[k], err);
    if (rc != NSL_OK) return rc;
  }
  return NSL_OK;
}

/* A column of n NULLs of the given type (no dictionary yet). */
static nsl_column *null_column(nsl_type type, int64_t n) {
  nsl_column *c = nsl_column_new(type, n, NULL);
  if (!c) return NULL;
  for (int64_t i = 0; i < n; i++) switch (type) {
    case NSL_I64: nsl_i64(c)[i] = NSL_NULL_I64; break;
    case NSL_I32: nsl_i32(c)[i] = NSL_NULL_I32; break;
    case NSL_STR: nsl_i32(c)[i] = -1; break;
    case NSL_F64: nsl_f64(c)[i] = 0.0 / 0.0; break;
    case NSL_BOOL: break;
    }
  return c;
}

/* A load of some columns of one table from every report, in the three steps
 * of nsl__load_steps.  plan_load (caller's thread): names, types, where
 * they go.  read_load (any thread, sources locked): each report's part of
 * each column, its strings in a dictionary of the read's own (unless the
 * load is serial on the caller's thread), then the parts concatenated (as
 * each is read, where every report's rows are known: a direct load) and
 * `report` and `dur` derived -- everything that touches every row.
 * store_load (caller's thread): the strings into the trace's dictionary
 * (one pass over string columns), the columns into the table. */
typedef struct load_plan {
  source_guard *guard;      /* retained: tr and tt are valid while it is not closed */
  nsl_trace *tr;
  trace_table *tt;
  int nreports;
  const char **names;       /* from the sources: names[0..nsrc), their types and target columns */
  nsl_type *types;
  int *target, nsrc;
  int want_report, want_dur;   /* derived here; want_dur: its column index, or -1 */
  nsl_column **parts;       /* nreports x stride */
  size_t stride;
  nsl_dict **dicts;         /* per report, or NULL: the trace's dictionary */
  int64_t *offsets;         /* per report: time offset (copied at plan time) */
  int64_t *rows;            /* per report: rows (from tt at plan time, -1 unknown; then from the read) */
  nsl_column **whole;       /* nsrc: the reports' parts concatenated (string ids still the parts') */
  int64_t *at;              /* direct loads: per report, its first row in whole; else NULL */
  nsl_column *report_col, *dur_col;   /* derived by the read, or NULL */
  nsl_status *rc;
  nsl_error *errs;
} load_plan;

/* The checks of report i's parts out[0..nsrc) (assemble's, and a direct
 * load's): as many rows in each, and as many as the report had before
 * (lp->rows[i], when known).  A sound source gives a table the same rows on
 * every read; a damaged SQLite file may not (a count or one column through a
 * damaged index, another column past it), and columns of different lengths
 * make no table. */
static nsl_status check_parts(const load_plan *lp, int i, nsl_column *const *out, nsl_error *err) {
  for (int k = 1; k < lp->nsrc; k++)
    if (out[k]->len != out[0]->len)
      return nsl_error_set(err, NSL_ERR_FORMAT, "%s: table %s: columns of different lengths",
                           lp->tr->reports[i].info.path, lp->tt->name);
  if (lp->rows[i] >= 0 && out[0]->len != lp->rows[i])
    return nsl_error_set(err, NSL_ERR_FORMAT,
                         "'%s' is damaged: its %s table reads as %lld rows for %s, as %lld before (sqlite3's "
                         "PRAGMA quick_check tells where)",
                         lp->tr->reports[i].info.path, lp->tt->name, (long long)out[0]->len, lp->names[0],
                         (long long)lp->rows[i]);
  return NSL_OK;
}

/* A direct load (read_load): report i's parts, checked, copied to their
 * place in the whole columns and released at once, so that the next
 * report's parts reuse their memory. */
static nsl_status place_part(load_plan *lp, int i, nsl_column **out, nsl_error *err) {
  nsl_status rc = check_parts(lp, i, out, err);
  for (int k = 0; k < lp->nsrc; k++) {
    size_t es = nsl_type_size(lp->types[k]);
    if (rc == NSL_OK && out[k]->len > 0)
      memcpy((char *)lp->whole[k]->data + (size_t)lp->at[i] * es, out[k]->data, (size_t)out[k]->len * es);
    nsl_column_release(out[k]);
    out[k] = NULL;
  }
  return rc;
}

static void load_job(void *p, int i) {
  load_plan *lp = p;
  report_src *r = &lp->tr->reports[i];
  if (nsl__cancelled()) {
    lp->rc[i] = nsl_error_set(&lp->errs[i], NSL_ERR_LIMIT, "loading %s was cancelled", lp->tt->name);
    return;
  }
  size_t flen = 0;
  const void *f = nsl__row_filters_find(lp->tr->filters, lp->tt->name, &flen);
  nsl_column **out = lp->parts + (size_t)i * lp->stride;
  lp->rc[i] = nsl__row_filter_load(r->ops, r->src, lp->tt->name, lp->names, lp->types, lp->nsrc,
                                   lp->dicts ? lp->dicts[i] : lp->tr->dict, lp->offsets[i], f, flen, out,
                                   &lp->errs[i]);
  if (lp->at && lp->rc[i] == NSL_OK) lp->rc[i] = place_part(lp, i, out, &lp->errs[i]);
}

static void free_plan(void *p) {
  load_plan *lp = p;
  if (!lp) return;
  if (lp->parts)
    for (size_t i = 0; i < lp->stride * (size_t)(lp->nreports ? lp->nreports : 1); i++)
      nsl_column_release(lp->parts[i]);
  if (lp->whole)
    for (int k = 0; k < lp->nsrc; k++) nsl_column_release(lp->whole[k]);
  if (lp->dicts)
    for (int i = 0; i < lp->nreports; i++) nsl_dict_release(lp->dicts[i]);
  nsl_column_release(lp->report_col);
  nsl_column_release(lp->dur_col);
  guard_release(lp->guard);
  free(lp->dicts);
  free(lp->offsets);
  free(lp->rows);
  free(lp->whole);
  free(lp->at);
  free(lp->rc);
  free(lp->errs);
  free(lp->parts);
  free(lp->names);
  free(lp->types);
  free(lp->target);
  free(lp);
}

/* Plans the load of columns idx[0..n) of the trace table; own_dicts: each
 * report's strings go into a dictionary of its own (a read on another
 * thread, or reports in parallel). */
static nsl_status plan_load(load_ctx *ctx, nsl_table *t, const int *idx, int n, int own_dicts, load_plan **out,
                            nsl_error *err) {
  nsl_trace *tr = ctx->tr;
  size_t nr = (size_t)(tr->nreports ? tr->nreports : 1);
  load_plan *lp = calloc(1, sizeof *lp);
  *out = NULL;
  if (!lp) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  lp->guard = guard_retain(tr->guard);
  lp->tr = tr;
  lp->tt = ctx->tt;
  lp->nreports = tr->nreports;
  lp->want_dur = -1;
  lp->stride = (size_t)n + 2;
  lp->names = calloc((size_t)n + 2, sizeof *lp->names);
  lp->types = calloc((size_t)n + 2, sizeof *lp->types);
  lp->target = calloc((size_t)n + 2, sizeof *lp->target);
  lp->whole = calloc((size_t)n + 2, sizeof *lp->whole);
  lp->parts = calloc(lp->stride * nr, sizeof *lp->parts);
  lp->offsets = calloc(nr, sizeof *lp->offsets);
  lp->rows = calloc(nr, sizeof *lp->rows);
  lp->rc = calloc(nr, sizeof *lp->rc);
  lp->errs = calloc(nr, sizeof *lp->errs);
  if (!lp->names || !lp->types || !lp->target || !lp->whole || !lp->parts || !lp->offsets || !lp->rows || !lp->rc ||
      !lp->errs)
    goto nomem;
  /* Split the request: `report` and `dur` are derived here, the rest comes from the sources. */
  for (int k = 0; k < n; k++) {
    const char *name = nsl_table_colname(t, idx[k]);
    if (strcmp(name, "report") == 0) lp->want_report = 1;
    else if (strcmp(name, "dur") == 0) lp->want_dur = idx[k];
    else {
      lp->names[lp->nsrc] = name;
      lp->types[lp->nsrc] = nsl_table_coltype(t, idx[k]);
      lp->target[lp->nsrc++] = idx[k];
    }
  }
  if (lp->want_dur >= 0) {   /* dur needs start and stop */
    const char *need[] = {"start", "stop"};
    for (int j = 0; j < 2; j++) {
      int ci = nsl_table_find(t, need[j]), have = 0;
      for (int k = 0; k < lp->nsrc; k++) have |= lp->target[k] == ci;
      if (ci >= 0 && !have && !nsl_table_is_loaded(t, ci)) {
        lp->names[lp->nsrc] = need[j];
        lp->types[lp->nsrc] = NSL_I64;
        lp->target[lp->nsrc++] = ci;
      }
    }
  }
  for (int i = 0; i < tr->nreports; i++) {
    lp->offsets[i] = time_offset(tr, i);
    lp->rows[i] = ctx->tt->rows[i];
  }
  if (lp->nsrc > 0 && own_dicts) {
    if (!(lp->dicts = calloc(nr, sizeof *lp->dicts))) goto nomem;
    for (int i = 0; i < tr->nreports; i++) {
      if (!(lp->dicts[i] = nsl_dict_new())) goto nomem;
      nsl__dict_allow_aliases(lp->dicts[i]);   /* its ids go through the trace's dictionary by string (store) */
    }
  }
  *out = lp;
  return NSL_OK;
nomem:
  free_plan(lp);
  return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
}

/* The index in lp->names of a column read, or -1. */
static int read_index(const load_plan *lp, const char *name) {
  for (int k = 0; k < lp->nsrc; k++)
    if (strcmp(lp->names[k], name) == 0) return k;
  return -1;
}

/* After the sources: each report's parts checked (a report without the
 * table gives none), concatenated, and report and dur derived. */
static nsl_status assemble(load_plan *lp, nsl_error *err) {
  int nsrc = lp->nsrc;
  for (int i = 0; i < lp->nreports && nsrc > 0; i++) {
    nsl_column **out = lp->parts + (size_t)i * lp->stride;
    if (lp->at) {   /* placed by load_job; a report without the table had no rows */
      if (lp->rc[i] == NSL_ERR_NOTFOUND && lp->rows[i] != 0)
        return nsl_error_set(err, NSL_ERR_FORMAT,
                             "'%s' is damaged: its %s table reads as 0 rows for %s, as %lld before (sqlite3's "
                             "PRAGMA quick_check tells where)",
                             lp->tr->reports[i].info.path, lp->tt->name, lp->names[0], (long long)lp->rows[i]);
      continue;
    }
    if (lp->rc[i] == NSL_ERR_NOTFOUND)
      for (int k = 0; k < nsrc; k++) {
        nsl_column_release(out[k]);
        if (!(out[k] = null_column(lp->types[k], 0))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      }
    nsl_status crc = check_parts(lp, i, out, err);
    if (crc != NSL_OK) return crc;
    lp->rows[i] = out[0]->len;
  }
  int64_t total = 0;
  for (int i = 0; i < lp->nreports; i++) total += lp->rows[i];
  for (int k = 0; k < nsrc && !lp->at; k++) {
    if (lp->nreports == 1) {
      lp->whole[k] = nsl_column_retain(lp->parts[k]);
      /* string ids are rewritten by the store, on the caller's thread: a
       * column mapped from the cache is copied here, not page by page there */
      nsl_status urc = lp->types[k] == NSL_STR && lp->dicts ? nsl__column_unmap(lp->whole[k], err) : NSL_OK;
      if (urc != NSL_OK) return urc;
      continue;
    }
    nsl_column *whole = lp->whole[k] = nsl_column_new(lp->types[k], total, NULL);
    if (!whole) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory loading %s.%s", lp->tt->name, lp->names[k]);
    size_t es = nsl_type_size(lp->types[k]), off = 0, freed = 0;
    for (int i = 0; i < lp->nreports; i++) {
      nsl_column **slot = &lp->parts[(size_t)i * lp->stride + (size_t)k];
      size_t bytes = (size_t)(*slot)->len * es;
      memcpy((char *)whole->data + off, (*slot)->data, bytes);
      off += bytes;
      /* each part goes once copied, and malloc's heap gives their pages back every 32 MiB: the parts of many
       * small reports come from the heap, where freed blocks stay resident, and all of them stood beside the
       * whole column (1,024 per-rank exports: diagnose peaked 1.2 GB higher where the NVTX ranges loaded late) */
      nsl_column_release(*slot);
      *slot = NULL;
      if ((freed += bytes) >= (size_t)32 << 20) {
        nsl__heap_trim();
        freed = 0;
      }
    }
  }
  if (lp->want_report) {
    if (!(lp->report_col = nsl_column_new(NSL_I32, total, NULL))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    int32_t *v = nsl_i32(lp->report_col) + (lp->nreports > 0 ? lp->rows[0] : 0);
    /* report 0's rows are left as nsl_column_new zeroed them: fresh memory never written is never faulted in,
     * so the column of a one-report trace costs no memory until something writes it */
    for (int i = 1; i < lp->nreports; i++)
      for (int64_t j = 0; j < lp->rows[i]; j++) *v++ = i;
  }
  int ks = read_index(lp, "start"), ke = read_index(lp, "stop");
  if (lp->want_dur >= 0 && ks >= 0 && ke >= 0) {   /* else store derives it from the table's start and stop */
    if (!(lp->dur_col = nsl_column_new(NSL_I64, total, NULL))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    const int64_t *a = nsl_i64(lp->whole[ks]), *b = nsl_i64(lp->whole[ke]);
    for (int64_t i = 0; i < total; i++)
      nsl_i64(lp->dur_col)[i] = a[i] == NSL_NULL_I64 || b[i] == NSL_NULL_I64 ? NSL_NULL_I64 : b[i] - a[i];
  }
  return NSL_OK;
}

/* The whole columns of a direct load (read_load), before any report is
 * read: lp->at[i], report i's first row in them. */
static nsl_status direct_columns(load_plan *lp, nsl_error *err) {
  if (!(lp->at = malloc((size_t)lp->nreports * sizeof *lp->at))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  int64_t total = 0;
  for (int i = 0; i < lp->nreports; i++) {
    lp->at[i] = total;
    total += lp->rows[i];
  }
  for (int k = 0; k < lp->nsrc; k++)
    if (!(lp->whole[k] = nsl__column_new_uninit(lp->types[k], total, NULL)))
      return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory loading %s.%s", lp->tt->name, lp->names[k]);
  return NSL_OK;
}

/* Reads the planned columns from every report (one load call per report
 * for all its columns; reports in parallel when each has a dictionary of its
 * own), or only the row counts when no column comes from the sources, with
 * the sources locked; then assembles them. */
static nsl_status read_load(void *p, nsl_error *err) {
  load_plan *lp = p;
  int counts = 0;
  for (int i = 0; i < lp->nreports; i++) counts |= lp->rows[i] < 0;
  if (lp->nsrc == 0 && !(lp->want_report && counts)) return lp->want_report ? assemble(lp, err) : NSL_OK;
  guard_enter(lp->guard);
  if (lp->guard->closed) {
    guard_leave(lp->guard);
    return nsl_error_set(err, NSL_ERR_ARG, "the trace was closed while its tables loaded");
  }
  if (lp->nsrc > 0 && lp->nreports > 1 && !counts) {
    /* every report's rows known (a warm cache knows them all): a direct load, each report's parts copied
     * into the whole columns as soon as they are read.  Read first and concatenated after, all the
     * parts stood beside the whole columns, and at 1,024 per-rank exports their heap was given back
     * (malloc_trim) and faulted in again by the next load: the NVTX ranges' load took 5.8 x the time
     * of 256 exports' for 4 x the rows. */
    nsl_status drc = direct_columns(lp, err);
    if (drc != NSL_OK) {
      guard_leave(lp->guard);
      return drc;
    }
  }
  if (lp->nsrc > 0) {
    char what[96];   /* the total is the sources' to tell (nsl__progress_expect) */
    snprintf(what, sizeof what, "loading %s", lp->tt->name);
    nsl__progress_begin(what, "rows", 0);
    int nthreads = lp->dicts ? nsl__thread_count(lp->nreports) : 1;
    if (nthreads > 1) nsl__run_parallel(lp->nreports, nthreads, load_job, lp);
    else
      for (int i = 0; i < lp->nreports; i++) {
        load_job(lp, i);
        if (lp->rc[i] != NSL_OK && lp->rc[i] != NSL_ERR_NOTFOUND) break;   /* the first error stops */
      }
    nsl__progress_end();
  } else if (count_reports(lp->tr, lp->tt->name, lp->rows, lp->rc, lp->errs) != NSL_OK) {   /* `report` alone */
    guard_leave(lp->guard);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  nsl_status rc = first_error(lp->rc, lp->errs, lp->nreports, err);
  if (rc == NSL_OK) rc = assemble(lp, err);   /* still locked: its messages name the report and table */
  guard_leave(lp->guard);
  return rc;
}

/* Moving string ids through the maps of their reports' dictionaries: the
 * one pass over every row the store does, in pieces on a few threads (the
 * maps are read only, the pieces disjoint). */
#define REMAP_ROWS ((int64_t)1 << 20)
typedef struct remap_piece {
  int32_t *ids;
  int64_t n;
  int report;
} remap_piece;
typedef struct remap_work {
  int32_t **maps, *nl;   /* per report */
  remap_piece *pieces;
  int n;
} remap_work;

static void remap_job(void *p, int j) {
  remap_work *w = p;
  const remap_piece *pc = &w->pieces[j];
  const int32_t *map = w->maps[pc->report], nl = w->nl[pc->report];
  int32_t *v = pc->ids;
  for (int64_t r = 0; r < pc->n; r++) v[r] = v[r] >= 0 && v[r] < nl ? map[v[r]] : -1;
}

/* Stores what read_load read in t: string ids moved into the trace's
 * dictionary, columns t has already kept. */
static nsl_status store_load(void *p, nsl_table *t, nsl_error *err) {
  load_plan *lp = p;
  if (lp->guard->closed) return nsl_error_set(err, NSL_ERR_ARG, "the trace was closed while its tables loaded");
  nsl_trace *tr = lp->tr;
  trace_table *tt = lp->tt;
  nsl_status rc = NSL_OK;
  int have_strings = 0;
  for (int k = 0; k < lp->nsrc; k++) have_strings |= lp->types[k] == NSL_STR;
  if (have_strings && lp->dicts) {   /* each report's range through its dictionary's map */
    remap_work w = {calloc((size_t)lp->nreports, sizeof *w.maps), calloc((size_t)lp->nreports, sizeof *w.nl),
                    NULL, 0};
    int cap = 0;
    if (!w.maps || !w.nl) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    for (int i = 0; rc == NSL_OK && i < lp->nreports; i++)
      rc = intern_all(tr, lp->dicts[i], &w.maps[i], &w.nl[i], i > 0 ? lp->dicts[i - 1] : NULL,
                      i > 0 ? w.maps[i - 1] : NULL, err);
    int64_t off = 0;   /* pieces of at most REMAP_ROWS rows of one report and column */
    for (int i = 0; rc == NSL_OK && i < lp->nreports; off += lp->rows[i++])
      for (int k = 0; rc == NSL_OK && k < lp->nsrc; k++)
        for (int64_t lo = 0; rc == NSL_OK && lp->types[k] == NSL_STR && lo < lp->rows[i]; lo += REMAP_ROWS) {
          if (w.n == cap) {
            cap = cap ? 2 * cap : 64;
            remap_piece *pc = realloc(w.pieces, (size_t)cap * sizeof *pc);
            if (!pc) {
              rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
              break;
            }
            w.pieces = pc;
          }
          int64_t n = lp->rows[i] - lo < REMAP_ROWS ? lp->rows[i] - lo : REMAP_ROWS;
          w.pieces[w.n++] = (remap_piece){nsl_i32(lp->whole[k]) + off + lo, n, i};
        }
    if (rc == NSL_OK) nsl__run_parallel(w.n, nsl__thread_count(w.n), remap_job, &w);
    for (int i = 0; w.maps && i < lp->nreports; i++) free(w.maps[i]);
    free(w.maps);
    free(w.nl);
    free(w.pieces);
    if (rc != NSL_OK) return rc;
  }
  for (int k = 0; k < lp->nsrc; k++)
    if (lp->types[k] == NSL_STR && lp->whole[k]->dict != tr->dict) {
      nsl_dict_release(lp->whole[k]->dict);
      lp->whole[k]->dict = nsl_dict_retain(tr->dict);
    }
  int64_t total = 0;
  for (int i = 0; i < tr->nreports; i++) total += tt->rows[i] = lp->rows[i];
  for (int k = 0; k < lp->nsrc; k++) {
    if (nsl_table_is_loaded(t, lp->target[k])) continue;   /* the caller loaded it meanwhile */
    if ((rc = nsl_table_set_column(t, lp->target[k], lp->whole[k], err)) != NSL_OK) return rc;
  }
  if (lp->report_col && !nsl_table_is_loaded(t, nsl_table_find(t, "report"))) {
    nsl_table_set_nrows(t, total);
    if ((rc = nsl_table_set_column(t, nsl_table_find(t, "report"), lp->report_col, err)) != NSL_OK) return rc;
  }
  if (lp->want_dur >= 0 && !nsl_table_is_loaded(t, lp->want_dur)) {
    nsl_column *dur = nsl_column_retain(lp->dur_col);
    if (!dur) {   /* start and stop were loaded before: from the table's */
      nsl_column *start = nsl_table_column(t, "start", err), *stop = nsl_table_column(t, "stop", err);
      if (!start || !stop) return err ? err->code : NSL_ERR_FORMAT;
      if (!(dur = nsl_column_new(NSL_I64, start->len, NULL))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      const int64_t *a = nsl_i64(start), *b = nsl_i64(stop);
      for (int64_t i = 0; i < start->len; i++)
        nsl_i64(dur)[i] = a[i] == NSL_NULL_I64 || b[i] == NSL_NULL_I64 ? NSL_NULL_I64 : b[i] - a[i];
    }
    rc = nsl_table_set_column(t, lp->want_dur, dur, err);
    nsl_column_release(dur);
  }
  return rc;
}

static nsl_status plan_step(void *ctx, nsl_table *t, const int *idx, int n, void **plan, nsl_error *err) {
  load_plan *lp;
  nsl_status rc = plan_load(ctx, t, idx, n, 1, &lp, err);
  *plan = lp;
  return rc;
}

static const nsl__load_steps trace_steps = {plan_step, read_load, store_load, free_plan};

/* The table loader: the three steps on the caller's thread (n = 0: the row
 * count only). */
static nsl_status trace_load(void *p, nsl_table *t, const int *idx, int n, nsl_error *err) {
  load_ctx *ctx = p;
  if (n == 0) return count_rows(ctx->tr, ctx->tt, err);
  load_plan *lp;
  nsl_status rc = plan_load(ctx, t, idx, n, nsl__thread_count(ctx->tr->nreports) > 1, &lp, err);
  if (rc == NSL_OK) rc = read_load(lp, err);
  if (rc == NSL_OK) rc = store_load(lp, t, err);
  free_plan(lp);
  return rc;
}

nsl_status nsl_trace_table(nsl_trace *tr, const char *name, nsl_table **out, nsl_error *err) {
  for (trace_table *tt = tr->tables; tt; tt = tt->next)
    if (strcmp(tt->name, name) == 0) {
      *out = tt->table;
      return NSL_OK;
    }
  const nsl_model_table *mt = nsl__model_table(name);
  if (!mt && strcmp(name, "reports") != 0)
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "no table '%s' in the data model", name);
  trace_table *tt = calloc(1, sizeof *tt);
  load_ctx *ctx = calloc(1, sizeof *ctx);
  if (!tt || !ctx || !(tt->name = strdup(name)) || !(tt->table = nsl_table_new()) ||
      !(tt->rows = malloc((size_t)(tr->nreports ? tr->nreports : 1) * sizeof *tt->rows))) {
    nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto fail;
  }
  for (int i = 0; i < tr->nreports; i++) tt->rows[i] = -1;
  if (!mt) {   /* reports */
    if (build_reports(tr, tt->table, err) != NSL_OK) goto fail;
    free(ctx);
  } else {
    nsl_table_declare(tt->table, "report", NSL_I32, NULL);
    for (const nsl_model_column *c = mt->cols; c->name; c++) nsl_table_declare(tt->table, c->name, c->type, NULL);
    for (int i = 0; i < tr->nreports; i++) {   /* extra columns a source offers */
      report_src *r = &tr->reports[i];
      if (r->ops->describe) {
        guard_enter(tr->guard);
        nsl_status rc = r->ops->describe(r->src, name, tt->table, err);
        guard_leave(tr->guard);
        if (rc == NSL_ERR_NOTFOUND) {
          tt->rows[i] = 0;
          nsl_error_clear(err);
        } else if (rc != NSL_OK) goto fail;
      }
    }
    ctx->tr = tr;
    ctx->tt = tt;
    nsl_table_set_loader(tt->table, trace_load, ctx, free);
    nsl__table_set_load_steps(tt->table, &trace_steps);
  }
  tt->next = tr->tables;
  tr->tables = tt;
  *out = tt->table;
  return NSL_OK;
fail:
  free(ctx);
  if (tt) {
    nsl_table_release(tt->table);
    free(tt->name);
    free(tt->rows);
    free(tt);
  }
  return err && err->code ? err->code : NSL_ERR_NOMEM;
}

nsl_status nsl_trace_report_rows(nsl_trace *tr, const char *name, int64_t *rows, nsl_error *err) {
  nsl_table *t;
  nsl_status rc = nsl_trace_table(tr, name, &t, err);
  if (rc != NSL_OK) return rc;
  trace_table *tt = tr->tables;
  while (tt && tt->table != t) tt = tt->next;
  if (!tt) return nsl_error_set(err, NSL_ERR_ARG, "no table '%s'", name);
  int known = 1;
  for (int i = 0; i < tr->nreports; i++) known &= tt->rows[i] >= 0;
  if (!known && (rc = count_rows(tr, tt, err)) != NSL_OK) return rc;
  for (int i = 0; i < tr->nreports; i++) rows[i] = tt->rows[i];
  return NSL_OK;
}

/* Report i's source when it keeps derived columns and the trace's rows are
 * its rows (no filter of any table: a derived column may read several). */
static const report_src *deriving_source(const nsl_trace *tr, int i) {
  if (i < 0 || i >= tr->nreports || tr->filters) return NULL;
  const report_src *r = &tr->reports[i];
  return r->ops->version >= 2 && r->ops->derived_get && r->ops->derived_put ? r : NULL;
}

int nsl_trace_keeps_derived(const nsl_trace *tr, int i) { return deriving_source(tr, i) != NULL; }

nsl_column *nsl_trace_derived_get(nsl_trace *tr, int i, const char *table, const char *name, nsl_type type,
                                  int64_t rows) {
  nsl_derived_ask a = {i, table, name, type, rows, NULL};
  nsl_trace_derived_get_many(tr, &a, 1);
  return a.col;
}

/* The source that answers ask a, or NULL when none can (no name, strings, no source keeping any). */
static const report_src *ask_source(const nsl_trace *tr, const nsl_derived_ask *a) {
  return a->table && a->name && a->type != NSL_STR && a->rows >= 0 ? deriving_source(tr, a->report) : NULL;
}

/* One column of nsl_trace_derived_get_many (the guard held by the caller). */
static void derived_one(void *ctx, int k) {
  nsl_trace *tr = ((void **)ctx)[0];
  nsl_derived_ask *a = (nsl_derived_ask *)((void **)ctx)[1] + k;
  const report_src *r = ask_source(tr, a);
  nsl_column *c = r ? r->ops->derived_get(r->src, a->table, a->name, a->type, a->rows) : NULL;
  if (c && (c->type != a->type || c->len != a->rows)) {   /* (a source's promise, checked) */
    nsl_column_release(c);
    c = NULL;
  }
  a->col = c;
}

void nsl_trace_derived_get_many(nsl_trace *tr, nsl_derived_ask *d, int n) {
  int any = 0;
  for (int k = 0; k < n; k++) {
    d[k].col = NULL;
    any |= ask_source(tr, &d[k]) != NULL;
  }
  if (!any) return;
  keeping_drain(tr);   /* what this run kept is read back as kept */
  guard_enter(tr->guard);   /* (held for all: a trace reads its sources on one thread at a time, its workers aside) */
  void *ctx[2] = {tr, d};
  if (!tr->guard->closed) nsl__run_parallel(n, nsl__thread_count(n), derived_one, ctx);
  guard_leave(tr->guard);
}

/* A derived column being kept: the source's operation and state (taken when it was given: the reports
 * array may move), the names, the column (retained). */
typedef struct keep_item {
  void (*put)(void *src, const char *table, const char *name, const nsl_column *col);
  void *src;
  char *table, *name;
  nsl_column *col;
} keep_item;

/* Doubles the room for items (the keep lock held); 0 when out of memory. */
static int grow_keeping(nsl_trace *tr) {
  int cap = tr->keep_cap ? 2 * tr->keep_cap : 16;
  keep_item *k = realloc(tr->keeping, (size_t)cap * sizeof *k);
  if (!k) return 0;
  tr->keeping = k;
  tr->keep_cap = cap;
  return 1;
}

/* The keeper task: writes the items in order until none is left, each under the guard (a load of the same
 * source waits for it, a closed trace writes nothing). */
static void keeper_run(void *p) {
  nsl_trace *tr = p;
  for (;;) {
    pthread_mutex_lock(&tr->keep_lock);
    if (tr->kept_next == tr->nkeeping) {
      tr->keeper_busy = 0;
      pthread_mutex_unlock(&tr->keep_lock);
      return;
    }
    keep_item it = tr->keeping[tr->kept_next];
    pthread_mutex_unlock(&tr->keep_lock);
    guard_enter(tr->guard);
    if (!tr->guard->closed) it.put(it.src, it.table, it.name, it.col);
    guard_leave(tr->guard);
    pthread_mutex_lock(&tr->keep_lock);
    tr->kept_next++;
    pthread_mutex_unlock(&tr->keep_lock);
  }
}

/* Waits until every item given is written (the caller's thread). */
static void keeping_drain(nsl_trace *tr) {
  if (tr->keeper) {
    nsl__task_join(tr->keeper);
    tr->keeper = NULL;
  }
}

/* Releases the items written (all: every item, the keeper drained), moving the others to the front. */
static void keeping_release(nsl_trace *tr, int all) {
  pthread_mutex_lock(&tr->keep_lock);
  int done = all ? tr->nkeeping : tr->kept_next;
  for (int k = 0; k < done; k++) {
    nsl_column_release(tr->keeping[k].col);
    free(tr->keeping[k].table);
    free(tr->keeping[k].name);
  }
  if (done > 0 && done < tr->nkeeping)
    memmove(tr->keeping, tr->keeping + done, (size_t)(tr->nkeeping - done) * sizeof *tr->keeping);
  tr->nkeeping -= done;
  tr->kept_next = 0;   /* (done is every written item: none of those left is written) */
  pthread_mutex_unlock(&tr->keep_lock);
}

/* Keeps col on the keeper task, so that the caller goes on while it is written (at 1 GB a column of every
 * NVTX range is 65 MB, copied into pages the kernel must provide); written now where no task starts. */
void nsl_trace_derived_put(nsl_trace *tr, int i, const char *table, const char *name, const nsl_column *col) {
  const report_src *r = table && name ? deriving_source(tr, i) : NULL;
  if (!r || !col || col->type == NSL_STR) return;
  keeping_release(tr, 0);
  keep_item it = {r->ops->derived_put, r->src, strdup(table), strdup(name), nsl_column_retain((nsl_column *)col)};
  pthread_mutex_lock(&tr->keep_lock);
  int queued = 0;
  if (it.table && it.name && (tr->nkeeping < tr->keep_cap || grow_keeping(tr))) {
    tr->keeping[tr->nkeeping++] = it;
    queued = 1;
  }
  int start = queued && !tr->keeper_busy;
  if (start) tr->keeper_busy = 1;
  pthread_mutex_unlock(&tr->keep_lock);
  if (!queued) {   /* out of memory: not kept (a later run derives it again) */
    nsl_column_release(it.col);
    free(it.table);
    free(it.name);
    return;
  }
  if (!start) return;   /* the running keeper takes it */
  keeping_drain(tr);    /* (a keeper that found none left and is ending) */
  if (!(tr->keeper = nsl__task_start(keeper_run, tr))) keeper_run(tr);
}
