/* dist.c -- a trace split among the processes of an MPI job (dist.h).
 *
 * Rank 0's whole trace is an ordinary nsl_trace whose reports are sources
 * of two kinds: "borrowed" (a report of this process's share, read here)
 * and "remote" (a report of another process's share).  A remote source's
 * describe / count / load is one request sent to every other process at
 * once; each answers for all its reports (loaded in parallel, each into a
 * dictionary of its own) and the answers wait in a cache until the trace's
 * loader takes them, report by report, so all processes read at the same
 * time and the trace assembles the tables exactly as a one-process load. */
#include "mpi/dist.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "core/rowfilter.h"
#include "core/bytes.h"
#include "core/model.h"
#include "core/wire.h"
#include "mpi/comm.h"
#include "nsl/bundle.h"
#include "nsl/source.h"
#include "source/input.h"

enum { TAG_REQ = 11, TAG_REPLY = 12 };
enum { REQ_DESCRIBE = 'D', REQ_COUNT = 'C', REQ_LOAD = 'L', REQ_CALL = 'X', REQ_QUIT = 'Q' };

/* A unit of work: an export, or one report member of a bundle. */
typedef struct unit {
  int path;     /* index into paths */
  int member;   /* report number in the bundle, -1 for an export */
} unit;

struct nsl_dist {
  int refs;
  pthread_mutex_t mu;
  int rank, size;
  char **paths;
  int npaths;
  nsl_open_options opts;     /* how the share opens its inputs (opts.nsys owned) */
  nsl_trace *share;          /* this process's reports (owned) */
  int first, count;          /* the share in the whole trace */
  int nreports;
  int *owner;                /* per report: the MPI rank that reads it */
  nsl_report_info *infos;    /* per report (paths owned) */
  int64_t *offsets;          /* per report: time offset on the whole trace's clock */
  int64_t earliest;          /* that clock's origin: the earliest session start (0: none known) */
  /* rank 0: answers of the last request, per report */
  char *key;
  void **bufs;
  size_t *lens;
  /* rank 0: the whole trace's row filters (nsl__dist_filter), encoded as sent */
  nsl__row_filters *filters;
  /* rank 0: tables of other processes' reports read, computations asked of them (nsl__dist_stats) */
  int64_t loads, calls;
};

/* ---- the hub ---- */

static nsl_dist *dist_retain(nsl_dist *d) {
  pthread_mutex_lock(&d->mu);
  d->refs++;
  pthread_mutex_unlock(&d->mu);
  return d;
}

void nsl__dist_release(nsl_dist *d) {
  if (!d) return;
  pthread_mutex_lock(&d->mu);
  int left = --d->refs;
  pthread_mutex_unlock(&d->mu);
  if (left > 0) return;
  nsl_trace_close(d->share);
  for (int i = 0; i < d->npaths; i++) free(d->paths[i]);
  free(d->paths);
  free((char *)d->opts.nsys);
  for (int i = 0; d->infos && i < d->nreports; i++) {
    free((char *)d->infos[i].path);
    free((char *)d->infos[i].name);
    free((char *)d->infos[i].host);
  }
  free(d->infos);
  free(d->owner);
  free(d->offsets);
  for (int i = 0; d->bufs && i < d->nreports; i++) free(d->bufs[i]);
  free(d->bufs);
  free(d->lens);
  free(d->key);
  nsl__row_filters_free(d->filters);
  pthread_mutex_destroy(&d->mu);
  free(d);
}

int nsl__dist_first(const nsl_dist *d) { return d->first; }
int nsl__dist_count(const nsl_dist *d) { return d->count; }
int nsl__dist_nreports(const nsl_dist *d) { return d->nreports; }

int nsl__dist_agree(int ok, const char *text, char **first_failure) {
  if (first_failure) *first_failure = NULL;
  int all = nsl__comm_allmin(ok ? 1 : 0);
  if (all) return 1;
  /* every process says why (or nothing); rank 0 keeps the first reason */
  const char *say = ok ? "" : (text ? text : "failed");
  void **bufs = NULL;
  size_t *lens = NULL;
  nsl_error e = {0};
  if (nsl__comm_gather(say, strlen(say), &bufs, &lens, &e) == NSL_OK && bufs) {
    for (int r = 0; r < nsl__comm_size(); r++) {
      if (first_failure && !*first_failure && lens[r] > 0) {
        size_t n = lens[r] + 32;
        if ((*first_failure = malloc(n)))
          snprintf(*first_failure, n, "MPI rank %d: %.*s", r, (int)lens[r], (const char *)bufs[r]);
      }
      free(bufs[r]);
    }
  }
  free(bufs);
  free(lens);
  return 0;
}

/* ---- planning and opening the shares ---- */

/* The units of paths, as open.c's formats split them: an export is one, a
 * bundle's reports one each.  A zip that is no nsl bundle (an nsys-jax
 * archive) is read whole by rank 0: *whole is set and the plan gives
 * everything to rank 0. */
static nsl_status plan(char **paths, int npaths, unit **out, int *nout, int *whole, nsl_error *err) {
  unit *u = NULL;
  int n = 0, cap = 0;
  *whole = 0;
  for (int p = 0; p < npaths; p++) {
    int members = 1, units = nsl__input_units(paths[p], &members);   /* open.c's table decides */
    if (units < 0) *whole = 1;
    for (int k = 0; k < members; k++) {
      if (n == cap) {
        cap = cap ? cap * 2 : 16;
        unit *nu = realloc(u, (size_t)cap * sizeof *u);
        if (!nu) {
          free(u);
          return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
        }
        u = nu;
      }
      u[n++] = (unit){p, units ? k : -1};
    }
  }
  *out = u;
  *nout = n;
  return NSL_OK;
}

/* The plan of rank 0, made once and broadcast (collective: every process
 * calls it), so the inputs are looked at by one process, not by all. */
static nsl_status shared_plan(nsl_dist *d, unit **u, int *nu, int *whole, nsl_error *err) {
  nsl__text m = {0};
  int32_t head[3] = {NSL_OK, 0, 0};
  if (d->rank == 0) {
    head[0] = plan(d->paths, d->npaths, u, nu, whole, err);
    head[1] = *whole;
    head[2] = head[0] == NSL_OK ? *nu : 0;
    nsl__bytes_put(&m, head, sizeof head);
    if (head[0] == NSL_OK) nsl__bytes_put(&m, *u, (size_t)*nu * sizeof **u);
    if (m.oom) {
      free(m.s);
      m = (nsl__text){0};
      head[0] = NSL_ERR_NOMEM;
      head[2] = 0;
      nsl__bytes_put(&m, head, sizeof head);
    }
  }
  void *buf = m.s;
  size_t len = m.len;
  nsl_status rc = nsl__comm_bcast(&buf, &len, err);
  if (rc == NSL_OK && d->rank != 0) {
    nsl_bytes_in r = {buf, len, 0, 0};
    nsl__bytes_get(&r, head, sizeof head);
    *whole = head[1];
    *nu = head[2];
    if (r.bad || head[2] < 0 || (size_t)head[2] > (len - r.at) / sizeof **u)
      rc = nsl_error_set(err, NSL_ERR_FORMAT, "corrupt plan from MPI rank 0");
    else if (head[0] != NSL_OK) rc = nsl_error_set(err, (nsl_status)head[0], "MPI rank 0 could not plan the shares");
    else if (!(*u = malloc((size_t)(head[2] ? head[2] : 1) * sizeof **u)))
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    else nsl__bytes_get(&r, *u, (size_t)head[2] * sizeof **u);
    free(buf);
  } else if (rc == NSL_OK) {
    rc = (nsl_status)head[0];
  }
  free(m.s);
  return rc;
}

/* Opens units [lo, hi) into a new trace. */
static nsl_status open_units(nsl_dist *d, const unit *u, int lo, int hi, int whole, nsl_error *err) {
  if (whole) {   /* rank 0 reads every input as a one-process run would */
    if (d->rank != 0) return (d->share = nsl_trace_new()) ? NSL_OK : nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    return nsl_trace_open(&d->share, (const char *const *)d->paths, d->npaths, &d->opts, err);
  }
  if (!(d->share = nsl_trace_new())) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl_status st = nsl_trace_set_options(d->share, &d->opts, err);
  if (st != NSL_OK) return st;
  for (int i = lo; i < hi; i++) {
    const char *path = d->paths[u[i].path];
    nsl_status rc;
    if (u[i].member < 0) rc = nsl_trace_add_path(d->share, path, err);   /* an export */
    else {   /* the share's report members of a bundle: one open of its central directory */
      int j = i;
      while (j + 1 < hi && u[j + 1].path == u[i].path) j++;
      rc = nsl__trace_add_path_range(d->share, path, u[i].member, j - i + 1, err);
      i = j;
    }
    if (rc != NSL_OK) return rc;
  }
  return NSL_OK;
}

/* Shares the reports' metadata: every process learns every report's info
 * and which process reads it. */
static nsl_status share_infos(nsl_dist *d, nsl_error *err) {
  nsl__text m = {0};
  int32_t n = nsl_trace_nreports(d->share);
  nsl__bytes_put(&m, &n, sizeof n);
  for (int i = 0; i < n; i++) {
    nsl_report_info info = *nsl_trace_report(d->share, i);
    nsl__bytes_put_str(&m, info.path);   /* the strings by value, the rest as it is */
    nsl__bytes_put_str(&m, info.name);
    nsl__bytes_put_str(&m, info.host);
    info.path = info.name = info.host = NULL;
    nsl__bytes_put(&m, &info, sizeof info);
  }
  if (m.oom) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  void **bufs = NULL, *all = NULL;
  size_t *lens = NULL, alllen = 0;
  nsl_status rc = nsl__comm_gather(m.s, m.len, &bufs, &lens, err);
  free(m.s);
  if (rc != NSL_OK) return rc;
  if (d->rank == 0) {   /* rank 0 joins the parts, each prefixed with its length */
    nsl__text j = {0};
    for (int r = 0; r < d->size; r++) {
      uint64_t l = lens[r];
      nsl__bytes_put(&j, &l, sizeof l);
      nsl__bytes_put(&j, bufs[r], lens[r]);
      free(bufs[r]);
    }
    free(bufs);
    free(lens);
    if (j.oom) {
      free(j.s);
      return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    }
    all = j.s;
    alllen = j.len;
  }
  rc = nsl__comm_bcast(&all, &alllen, err);
  if (rc != NSL_OK) {
    free(all);
    return rc;
  }
  nsl_bytes_in r = {all, alllen, 0, 0};
  int total = 0, cap = 16;
  d->infos = calloc((size_t)cap, sizeof *d->infos);
  d->owner = calloc((size_t)cap, sizeof *d->owner);
  for (int p = 0; p < d->size && !r.bad && d->infos && d->owner; p++) {
    uint64_t l;
    int32_t k;
    nsl__bytes_get(&r, &l, sizeof l);
    nsl__bytes_get(&r, &k, sizeof k);
    if (p == d->rank) d->first = total;
    for (int i = 0; i < k && !r.bad; i++) {
      if (total == cap) {
        cap *= 2;
        nsl_report_info *ni = realloc(d->infos, (size_t)cap * sizeof *ni);
        if (ni) d->infos = ni;
        int *no = realloc(d->owner, (size_t)cap * sizeof *no);
        if (no) d->owner = no;
        if (!ni || !no) break;
      }
      char *path = nsl__bytes_get_str(&r), *name = nsl__bytes_get_str(&r), *host = nsl__bytes_get_str(&r);
      nsl__bytes_get(&r, &d->infos[total], sizeof d->infos[total]);
      d->infos[total].path = path;
      d->infos[total].name = name;
      d->infos[total].host = host;
      d->owner[total++] = p;
    }
  }
  free(all);
  d->nreports = total;
  d->count = nsl_trace_nreports(d->share);
  if (!d->infos || !d->owner) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  if (r.bad) return nsl_error_set(err, NSL_ERR_FORMAT, "MPI rank %d: corrupt report metadata message", d->rank);
  /* the whole trace's clock: each report's session start against the earliest (as trace.c) */
  if (!(d->offsets = calloc((size_t)(total ? total : 1), sizeof *d->offsets)))
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  int64_t earliest = 0;
  for (int i = 0; i < total; i++) {
    int64_t s = d->infos[i].start_utc;
    if (s > 0 && (earliest == 0 || s < earliest)) earliest = s;
  }
  for (int i = 0; i < total; i++) {
    int64_t s = d->infos[i].start_utc;
    d->offsets[i] = s > 0 && earliest > 0 ? s - earliest : 0;
  }
  d->earliest = earliest;
  if (!(d->bufs = calloc((size_t)(total ? total : 1), sizeof *d->bufs)) ||
      !(d->lens = calloc((size_t)(total ? total : 1), sizeof *d->lens)))
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  return NSL_OK;
}

nsl_status nsl__dist_open(nsl_dist **out, const char *const *paths, int npaths, const nsl_open_options *opts,
                          nsl_error *err) {
  *out = NULL;
  if (nsl__comm_start(err) < 0) return err ? err->code : NSL_ERR_IO;
  nsl_dist *d = calloc(1, sizeof *d);
  if (!d) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  d->refs = 1;
  pthread_mutex_init(&d->mu, NULL);
  d->rank = nsl__comm_rank();
  d->size = nsl__comm_size();
  nsl_status rc = NSL_OK;
  nsl_error local = {0};
  unit *u = NULL;
  int nu = 0, whole = 0;
  if (opts) d->opts = *opts;
  else nsl_open_options_init(&d->opts);
  d->opts.nsys = d->opts.nsys ? strdup(d->opts.nsys) : NULL;
  if (!(d->paths = calloc((size_t)(npaths ? npaths : 1), sizeof *d->paths)) || (opts && opts->nsys && !d->opts.nsys))
    rc = nsl_error_set(&local, NSL_ERR_NOMEM, "out of memory");
  for (int i = 0; rc == NSL_OK && i < npaths; i++, d->npaths++)
    if (!(d->paths[i] = strdup(paths[i]))) rc = nsl_error_set(&local, NSL_ERR_NOMEM, "out of memory");
  if (rc == NSL_OK && npaths <= 0) rc = nsl_error_set(&local, NSL_ERR_ARG, "no input: give at least one nsys SQLite export");
  if (rc == NSL_OK) rc = shared_plan(d, &u, &nu, &whole, &local);
  if (rc == NSL_OK) {
    int lo = (int)((int64_t)nu * d->rank / d->size), hi = (int)((int64_t)nu * (d->rank + 1) / d->size);
    rc = open_units(d, u, lo, hi, whole, &local);
  }
  free(u);
  /* every process reaches this agreement, whatever happened above */
  char *why = NULL;
  if (!nsl__dist_agree(rc == NSL_OK, local.msg, &why)) {
    if (why) nsl_error_set(err, rc != NSL_OK ? rc : NSL_ERR_IO, "%s", why);
    else nsl_error_set(err, rc != NSL_OK ? rc : NSL_ERR_IO, "%s", rc != NSL_OK ? local.msg : "another MPI rank failed");
    free(why);
    nsl__dist_release(d);
    return err ? err->code : NSL_ERR_IO;
  }
  if ((rc = share_infos(d, err)) != NSL_OK) {
    nsl__dist_release(d);
    return rc;
  }
  *out = d;
  return NSL_OK;
}

/* ---- row filters: conditions evaluated where the rows are read (core/rowfilter.h) ---- */

nsl_status nsl__dist_filter(nsl_dist *d, const char *table, const nsl__row_cond *conds, int n, nsl_error *err) {
  return nsl__row_filters_set(&d->filters, table, conds, n, err);
}

/* The encoded filter of table (NULL, 0: none). */
static const void *filter_of(const nsl_dist *d, const char *table, size_t *len) {
  return nsl__row_filters_find(d->filters, table, len);
}

/* ---- borrowed sources: a report of the share, seen from another trace ---- */

typedef struct borrowed {
  nsl_dist *d;
  int local;          /* report index in d->share */
  int64_t offset;     /* time offset to use, or -1: the caller's */
  int filtered;       /* a report of the whole trace: d's row filters apply */
} borrowed;

static const nsl_source_ops *inner(const borrowed *b, void **src) { return nsl__trace_source(b->d->share, b->local, src); }

static nsl_status b_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  void *src;
  const nsl_source_ops *ops = inner(p, &src);
  return ops->describe ? ops->describe(src, name, t, err) : NSL_OK;
}

static nsl_status b_load(void *p, const char *name, const char *const *cols, const nsl_type *types, int n,
                         nsl_dict *dict, int64_t offset, nsl_column **out, nsl_error *err) {
  const borrowed *b = p;
  void *src;
  const nsl_source_ops *ops = inner(b, &src);
  size_t flen = 0;
  const void *f = b->filtered ? filter_of(b->d, name, &flen) : NULL;
  return nsl__row_filter_load(ops, src, name, cols, types, n, dict, b->offset >= 0 ? b->offset : offset, f, flen, out, err);
}

static nsl_status b_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  const borrowed *b = p;
  void *src;
  const nsl_source_ops *ops = inner(b, &src);
  size_t flen = 0;
  const void *f = b->filtered ? filter_of(b->d, name, &flen) : NULL;
  return nsl__row_filter_count(ops, src, name, b->d->offsets[b->d->first + b->local], f, flen, out, err);
}

static void b_close(void *p) {
  borrowed *b = p;
  nsl__dist_release(b->d);
  free(b);
}

static nsl_status b_sql(void *p, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err) {
  const borrowed *b = p;
  return nsl_trace_sql(b->d->share, b->local, sql, row, ctx, err);
}

static size_t b_members(void *p, const char *prefix, void (*fn)(void *ctx, const char *name), void *ctx) {
  const borrowed *b = p;
  return nsl_trace_members(b->d->share, b->local, prefix, fn, ctx);
}

static nsl_status b_member_read(void *p, const char *name, void **data, size_t *len, nsl_error *err) {
  const borrowed *b = p;
  return nsl_trace_member_read(b->d->share, b->local, name, data, len, err);
}

static nsl_status b_metadata(void *p, nsl_metadata_fn fn, void *ctx, nsl_error *err) {
  const borrowed *b = p;
  return nsl_trace_metadata(b->d->share, b->local, fn, ctx, err);
}

static const nsl_source_ops borrowed_ops = {.version = NSL_SOURCE_VERSION, .kind = "borrowed", .describe = b_describe,
                                            .load = b_load, .count = b_count, .close = b_close, .sql = b_sql,
                                            .members = b_members, .member_read = b_member_read,
                                            .metadata = b_metadata};

/* Adds report `local` of the share to tr (times at offset, or the trace's
 * when -1; d's row filters applied when filtered). */
static nsl_status add_borrowed(nsl_dist *d, nsl_trace *tr, int local, const nsl_report_info *info, int64_t offset,
                               int filtered, nsl_error *err) {
  borrowed *b = malloc(sizeof *b);
  if (!b) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  *b = (borrowed){dist_retain(d), local, offset, filtered};
  nsl_status rc = nsl_trace_add_source(tr, &borrowed_ops, b, info, err);
  if (rc != NSL_OK) b_close(b);
  return rc;
}

/* The inputs of the share's units: the paths its reports came from. */
nsl_status nsl__dist_view(nsl_dist *d, nsl_trace **out, nsl_error *err) {
  nsl_trace *tr = nsl_trace_new();
  if (!tr) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl__trace_set_clock_origin(tr, d->earliest);   /* its reports' time_offset: the ones their times are moved by */
  nsl_status rc = NSL_OK;
  for (int i = 0; rc == NSL_OK && i < nsl_trace_ninputs(d->share); i++)
    rc = nsl_trace_add_input(tr, nsl_trace_input_path(d->share, i), err);
  for (int i = 0; rc == NSL_OK && i < d->count; i++)
    rc = add_borrowed(d, tr, i, nsl_trace_report(d->share, i), d->offsets[d->first + i], 0, err);
  if (rc != NSL_OK) {
    nsl_trace_close(tr);
    return rc;
  }
  *out = tr;
  return NSL_OK;
}

/* ---- remote sources (rank 0): a report another process reads ---- */

typedef struct remote {
  nsl_dist *d;
  int report;   /* index in the whole trace */
  int single;   /* asked alone (a trace of some reports: nsl__dist_subtrace), not with all others */
} remote;

/* The answer of report `report` to request req (kind, key): asks every other
 * process that reads reports unless the cached answers are of this request,
 * and takes the report's answer out of the cache. */
static nsl_status fetch(nsl_dist *d, const char *key, const nsl__text *req, int report, void **buf, size_t *len,
                        nsl_error *err) {
  nsl_status rc = NSL_OK;
  pthread_mutex_lock(&d->mu);
  if (!d->key || strcmp(d->key, key) != 0 || !d->bufs[report]) {
    for (int i = 0; i < d->nreports; i++) {
      free(d->bufs[i]);
      d->bufs[i] = NULL;
    }
    free(d->key);
    d->key = strdup(key);
    for (int r = 1; rc == NSL_OK && r < d->size; r++) {
      int any = 0;
      for (int i = 0; i < d->nreports; i++) any |= d->owner[i] == r;
      if (any) rc = nsl__comm_send(r, TAG_REQ, req->s, req->len, err);
    }
    for (int r = 1; rc == NSL_OK && r < d->size; r++)
      for (int i = 0; rc == NSL_OK && i < d->nreports; i++)
        if (d->owner[i] == r) rc = nsl__comm_recv(r, TAG_REPLY, &d->bufs[i], &d->lens[i], err);
  }
  if (rc == NSL_OK) {
    *buf = d->bufs[report];
    *len = d->lens[report];
    d->bufs[report] = NULL;
    if (!*buf) rc = nsl_error_set(err, NSL_ERR_IO, "MPI rank %d sent no answer for report %d", d->owner[report], report + 1);
  }
  pthread_mutex_unlock(&d->mu);
  return rc;
}

/* The answer of report `report` alone, asked of its process only. */
static nsl_status fetch_one(nsl_dist *d, const nsl__text *req, int report, void **buf, size_t *len, nsl_error *err) {
  pthread_mutex_lock(&d->mu);
  nsl_status rc = nsl__comm_send(d->owner[report], TAG_REQ, req->s, req->len, err);
  if (rc == NSL_OK) rc = nsl__comm_recv(d->owner[report], TAG_REPLY, buf, len, err);
  pthread_mutex_unlock(&d->mu);
  return rc;
}

/* A request: kind, table, columns (name, type), then the one report asked
 * for (-1: every report of the process). */
static void request(nsl__text *m, int kind, const char *table, const char *const *cols, const nsl_type *types, int n,
                    int only, const void *filter, size_t flen) {
  uint8_t k = (uint8_t)kind;
  int32_t nc = n;
  nsl__bytes_put(m, &k, 1);
  nsl__bytes_put_str(m, table);
  nsl__bytes_put(m, &nc, sizeof nc);
  for (int i = 0; i < n; i++) {
    uint8_t t = (uint8_t)types[i];
    nsl__bytes_put_str(m, cols[i]);
    nsl__bytes_put(m, &t, 1);
  }
  int32_t o = only;
  nsl__bytes_put(m, &o, sizeof o);
  uint64_t fl = flen;   /* the table's row filter (nsl__dist_filter), 0 bytes: none */
  nsl__bytes_put(m, &fl, sizeof fl);
  nsl__bytes_put(m, filter, flen);
}

/* Reads an answer's status; on failure fills err with the process's message. */
static nsl_status answer_status(nsl_bytes_in *r, nsl_error *err) {
  int32_t st = 0;
  nsl__bytes_get(r, &st, sizeof st);
  if (r->bad) return nsl_error_set(err, NSL_ERR_FORMAT, "corrupt answer from another MPI rank");
  if (st == NSL_OK) return NSL_OK;
  char *text = nsl__bytes_get_str(r);
  nsl_error_set(err, (nsl_status)st, "%s", text ? text : "");
  free(text);
  return (nsl_status)st;
}

/* Runs request (kind, table, cols) for remote report rm; *r reads the
 * answer's body (*buf to free). */
static nsl_status ask(remote *rm, int kind, const char *table, const char *const *cols, const nsl_type *types, int n,
                      void **buf, nsl_bytes_in *r, nsl_error *err) {
  nsl__text m = {0};
  size_t flen = 0;
  const void *f = rm->single || kind == REQ_DESCRIBE ? NULL : filter_of(rm->d, table, &flen);
  if (kind == REQ_LOAD) __atomic_add_fetch(&rm->d->loads, 1, __ATOMIC_RELAXED);   /* (loads run on worker threads) */
  request(&m, kind, table, cols, types, n, rm->single ? rm->report : -1, f, flen);
  if (m.oom) {
    free(m.s);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  nsl__text key = {0};
  nsl__bytes_put(&key, m.s, m.len);
  for (size_t i = 0; i < key.len; i++)
    if (key.s && key.s[i] == '\0') key.s[i] = '\x01';
  nsl__bytes_put(&key, "", 1);
  size_t len = 0;
  nsl_status rc = key.oom       ? nsl_error_set(err, NSL_ERR_NOMEM, "out of memory")
                 : rm->single ? fetch_one(rm->d, &m, rm->report, buf, &len, err)
                              : fetch(rm->d, key.s, &m, rm->report, buf, &len, err);
  free(key.s);
  free(m.s);
  if (rc != NSL_OK) return rc;
  *r = (nsl_bytes_in){*buf, len, 0, 0};
  return answer_status(r, err);
}

static nsl_status r_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  void *buf = NULL;
  nsl_bytes_in r;
  nsl_status rc = ask(p, REQ_DESCRIBE, name, NULL, NULL, 0, &buf, &r, err);
  if (rc == NSL_OK) {
    int32_t n = 0;
    nsl__bytes_get(&r, &n, sizeof n);
    for (int i = 0; i < n && !r.bad; i++) {
      char *col = nsl__bytes_get_str(&r);
      uint8_t type = 0;
      nsl__bytes_get(&r, &type, 1);
      if (col && !r.bad && type <= NSL_BOOL && nsl_table_find(t, col) < 0) nsl_table_declare(t, col, (nsl_type)type, NULL);
      free(col);
    }
    if (r.bad) rc = nsl_error_set(err, NSL_ERR_FORMAT, "corrupt answer from another MPI rank");
  }
  free(buf);
  return rc;
}

static nsl_status r_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  void *buf = NULL;
  nsl_bytes_in r;
  nsl_status rc = ask(p, REQ_COUNT, name, NULL, NULL, 0, &buf, &r, err);
  if (rc == NSL_OK) {
    nsl__bytes_get(&r, out, sizeof *out);
    if (r.bad) rc = nsl_error_set(err, NSL_ERR_FORMAT, "corrupt answer from another MPI rank");
  }
  free(buf);
  return rc;
}

static nsl_status r_load(void *p, const char *name, const char *const *cols, const nsl_type *types, int n,
                         nsl_dict *dict, int64_t offset, nsl_column **out, nsl_error *err) {
  (void)offset;   /* the reading process applies the report's offset on the whole trace's clock */
  void *buf = NULL;
  nsl_bytes_in r;
  nsl_status rc = ask(p, REQ_LOAD, name, cols, types, n, &buf, &r, err);
  if (rc == NSL_OK) {
    char **names = NULL;
    nsl_column **got = NULL;
    int ng = 0;
    rc = nsl__wire_decode(r.p + r.at, r.len - r.at, dict, &names, &got, &ng, err);
    if (rc == NSL_OK && ng != n) rc = nsl_error_set(err, NSL_ERR_FORMAT, "another MPI rank sent %d columns, not %d", ng, n);
    for (int k = 0; rc == NSL_OK && k < n; k++) {
      out[k] = got[k];
      got[k] = NULL;
    }
    nsl__wire_free(names, got, ng);
  }
  free(buf);
  return rc;
}

static void r_close(void *p) {
  remote *rm = p;
  nsl__dist_release(rm->d);
  free(rm);
}

static nsl_status r_sql(void *p, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err) {
  (void)sql, (void)row, (void)ctx;
  const remote *rm = p;
  return nsl_error_set(err, NSL_ERR_ARG, "report %d (%s) is read by MPI rank %d: raw SQL runs on rank 0's reports only",
                       rm->report, rm->d->infos[rm->report].path, rm->d->owner[rm->report]);
}

static const nsl_source_ops remote_ops = {.version = NSL_SOURCE_VERSION, .kind = "remote", .describe = r_describe,
                                          .load = r_load, .count = r_count, .close = r_close, .sql = r_sql};

/* Adds report i of the job to tr: borrowed from this process's share when
 * it reads it, else a remote report.  whole: tr is the job's trace (times
 * on the trace's clock, the declared filters applied); else a sub-trace of
 * some reports (times at the report's offset, no filters). */
static nsl_status add_job_report(nsl_dist *d, nsl_trace *tr, int i, int whole, nsl_error *err) {
  if (d->owner[i] == d->rank)
    return add_borrowed(d, tr, i - d->first, &d->infos[i], whole ? -1 : d->offsets[i], whole, err);
  remote *rm = malloc(sizeof *rm);
  if (!rm) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  *rm = (remote){dist_retain(d), i, !whole};
  nsl_status rc = nsl_trace_add_source(tr, &remote_ops, rm, &d->infos[i], err);
  if (rc != NSL_OK) r_close(rm);
  return rc;
}

nsl_status nsl__dist_trace(nsl_dist *d, nsl_trace **out, nsl_error *err) {
  nsl_trace *tr = nsl_trace_new();
  if (!tr) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl__trace_set_clock_origin(tr, d->earliest);
  nsl_status rc = NSL_OK;
  for (int i = 0; rc == NSL_OK && i < d->npaths; i++) rc = nsl_trace_add_input(tr, d->paths[i], err);
  for (int i = 0; rc == NSL_OK && i < d->nreports; i++) rc = add_job_report(d, tr, i, 1, err);
  if (rc != NSL_OK) {
    nsl_trace_close(tr);
    return rc;
  }
  *out = tr;
  return NSL_OK;
}

nsl_status nsl__dist_subtrace(nsl_dist *d, const int *reports, int n, nsl_trace **out, nsl_error *err) {
  nsl_trace *tr = nsl_trace_new();
  if (!tr) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl__trace_set_clock_origin(tr, d->earliest);
  nsl_status rc = NSL_OK;
  for (int k = 0; rc == NSL_OK && k < n; k++) {
    int i = reports[k];
    rc = i < 0 || i >= d->nreports ? nsl_error_set(err, NSL_ERR_ARG, "no report %d in the trace", i + 1)
                                   : add_job_report(d, tr, i, 0, err);
  }
  if (rc != NSL_OK) {
    nsl_trace_close(tr);
    return rc;
  }
  *out = tr;
  return NSL_OK;
}

void nsl__dist_stats(nsl_dist *d, int64_t *loads, int64_t *calls) {
  *loads = __atomic_load_n(&d->loads, __ATOMIC_RELAXED);
  *calls = __atomic_load_n(&d->calls, __ATOMIC_RELAXED);
}

int nsl__dist_owner(const nsl_dist *d, int report) {
  return report >= 0 && report < d->nreports ? d->owner[report] : -1;
}

/* Sends computation name's request on report (argument arg, alen bytes) to the process holding it. */
static nsl_status send_call(nsl_dist *d, int report, const char *name, const void *arg, size_t alen, nsl_error *err) {
  nsl__text m = {0};   /* the request of a table's read, its name the computation's and its filter the argument */
  request(&m, REQ_CALL, name, NULL, NULL, 0, report, arg, alen);
  nsl_status rc = m.oom ? nsl_error_set(err, NSL_ERR_NOMEM, "out of memory")
                        : nsl__comm_send(d->owner[report], TAG_REQ, m.s, m.len, err);
  free(m.s);
  return rc;
}

/* A computation's answer (buf, len bytes): *out (malloc'd) the bytes of its table, or the process's error. */
static nsl_status call_answer(const void *buf, size_t len, void **out, size_t *olen, nsl_error *err) {
  nsl_bytes_in r = {buf, len, 0, 0};
  nsl_status rc = answer_status(&r, err);
  if (rc != NSL_OK) return rc;
  size_t n = r.len - r.at;
  *out = malloc(n ? n : 1);
  if (!*out) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  if (n) memcpy(*out, r.p + r.at, n);
  *olen = n;
  return NSL_OK;
}

nsl_status nsl__dist_call(nsl_dist *d, int n, const int *reports, const char *name, const void *const *args,
                          const size_t *alens, void **outs, size_t *olens, nsl_error *err) {
  for (int i = 0; i < n; i++) outs[i] = NULL, olens[i] = 0;
  for (int i = 0; i < n; i++)
    if (reports[i] < 0 || reports[i] >= d->nreports || d->owner[reports[i]] == d->rank)
      return nsl_error_set(err, NSL_ERR_ARG, "report %d is not held by another MPI rank", reports[i] + 1);
  if (n == 0) return NSL_OK;
  __atomic_add_fetch(&d->calls, n, __ATOMIC_RELAXED);
  /* per process, the computations asked of it in the order given (head, then next): one in flight each, so
   * that every process works on its own while rank 0 waits, and no request is sent to a process that may be
   * sending an answer */
  int *next = malloc((size_t)n * sizeof *next), *head = malloc((size_t)d->size * sizeof *head),
      *tail = malloc((size_t)d->size * sizeof *tail);
  nsl_status *st = calloc((size_t)n, sizeof *st);
  nsl_error *errs = calloc((size_t)n, sizeof *errs);
  nsl_status rc = next && head && tail && st && errs ? NSL_OK : nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int p = 0; rc == NSL_OK && p < d->size; p++) head[p] = tail[p] = -1;
  for (int i = 0; rc == NSL_OK && i < n; i++) {
    int p = d->owner[reports[i]];
    next[i] = -1;
    if (tail[p] < 0) head[p] = i;
    else next[tail[p]] = i;
    tail[p] = i;
  }
  if (rc == NSL_OK) {
    pthread_mutex_lock(&d->mu);
    for (int p = 0; rc == NSL_OK && p < d->size; p++)
      if (head[p] >= 0) rc = send_call(d, reports[head[p]], name, args[head[p]], alens[head[p]], err);
    for (int left = n; rc == NSL_OK && left > 0;) {
      for (int p = 0; rc == NSL_OK && p < d->size; p++) {
        int i = head[p];
        if (i < 0) continue;
        void *buf = NULL;
        size_t len = 0;
        rc = nsl__comm_recv(p, TAG_REPLY, &buf, &len, err);
        if (rc != NSL_OK) break;
        st[i] = call_answer(buf, len, &outs[i], &olens[i], &errs[i]);
        free(buf);
        left--;
        head[p] = next[i];
        if (head[p] >= 0) rc = send_call(d, reports[head[p]], name, args[head[p]], alens[head[p]], err);
      }
    }
    pthread_mutex_unlock(&d->mu);
  }
  for (int i = 0; rc == NSL_OK && i < n; i++)   /* the first failure, in the order given */
    if (st[i] != NSL_OK) {
      *err = errs[i];
      rc = st[i];
    }
  if (rc != NSL_OK)
    for (int i = 0; i < n; i++) {
      free(outs[i]);
      outs[i] = NULL, olens[i] = 0;
    }
  free(next);
  free(head);
  free(tail);
  free(st);
  free(errs);
  return rc;
}

/* ---- serving (ranks other than 0) ---- */

typedef struct serve_job {
  nsl_dist *d;
  int kind;
  const char *table;
  const char **cols;
  nsl_type *types;
  int n;
  const void *filter;   /* the table's row filter, or NULL */
  size_t flen;
  nsl__text *answers;   /* per report of the share */
} serve_job;

static void answer_error(nsl__text *m, nsl_status st, const char *text, int rank) {
  int32_t s = st;
  char line[600];
  snprintf(line, sizeof line, "MPI rank %d: %s", rank, text);
  nsl__bytes_put(m, &s, sizeof s);
  nsl__bytes_put_str(m, line);
}

/* The answer of report i of the share (run on a worker thread for loads). */
static void serve_one(void *p, int i) {
  serve_job *j = p;
  nsl_dist *d = j->d;
  nsl__text *m = &j->answers[i];
  void *src;
  const nsl_source_ops *ops = nsl__trace_source(d->share, i, &src);
  nsl_error e = {0};
  int32_t ok = NSL_OK;
  if (j->kind == REQ_DESCRIBE) {
    nsl_table *t = nsl_table_new();
    nsl_status st = !t ? nsl_error_set(&e, NSL_ERR_NOMEM, "out of memory")
                       : ops->describe ? ops->describe(src, j->table, t, &e) : NSL_OK;
    if (st != NSL_OK) {
      answer_error(m, st, e.msg, d->rank);
    } else {
      int32_t n = nsl_table_ncols(t);
      nsl__bytes_put(m, &ok, sizeof ok);
      nsl__bytes_put(m, &n, sizeof n);
      for (int c = 0; c < n; c++) {
        uint8_t type = (uint8_t)nsl_table_coltype(t, c);
        nsl__bytes_put_str(m, nsl_table_colname(t, c));
        nsl__bytes_put(m, &type, 1);
      }
    }
    nsl_table_release(t);
  } else if (j->kind == REQ_COUNT) {
    int64_t rows = 0;
    nsl_status st = nsl__row_filter_count(ops, src, j->table, d->offsets[d->first + i], j->filter, j->flen, &rows, &e);
    if (st != NSL_OK) answer_error(m, st, e.msg, d->rank);
    else {
      nsl__bytes_put(m, &ok, sizeof ok);
      nsl__bytes_put(m, &rows, sizeof rows);
    }
  } else {
    nsl_dict *dict = nsl_dict_new();
    nsl_column **cols = calloc((size_t)(j->n ? j->n : 1), sizeof *cols);
    nsl_status st = !dict || !cols ? nsl_error_set(&e, NSL_ERR_NOMEM, "out of memory")
                                   : nsl__row_filter_load(ops, src, j->table, j->cols, j->types, j->n, dict,
                                                   d->offsets[d->first + i], j->filter, j->flen, cols, &e);
    void *wire = NULL;
    size_t wlen = 0;
    if (st == NSL_OK) st = nsl__wire_encode(j->cols, cols, j->n, &wire, &wlen, &e);
    if (st != NSL_OK) answer_error(m, st, e.msg, d->rank);
    else {
      nsl__bytes_put(m, &ok, sizeof ok);
      nsl__bytes_put(m, wire, wlen);
    }
    free(wire);
    for (int k = 0; cols && k < j->n; k++) nsl_column_release(cols[k]);
    free(cols);
    nsl_dict_release(dict);
  }
}

nsl_status nsl__dist_serve(nsl_dist *d, nsl__dist_call_fn call, void *ctx, nsl_error *err) {
  for (;;) {
    void *buf = NULL;
    size_t len = 0;
    nsl_status rc = nsl__comm_recv(0, TAG_REQ, &buf, &len, err);
    if (rc != NSL_OK) return rc;
    nsl_bytes_in r = {buf, len, 0, 0};
    uint8_t kind = 0;
    nsl__bytes_get(&r, &kind, 1);
    if (kind == REQ_QUIT) {
      free(buf);
      return NSL_OK;
    }
    serve_job j = {d, kind, nsl__bytes_get_str(&r), NULL, NULL, 0, NULL, 0, NULL};
    int32_t n = 0;
    nsl__bytes_get(&r, &n, sizeof n);
    if (n < 0 || n > 4096) r.bad = 1;
    if (!r.bad) {
      j.cols = calloc((size_t)(n ? n : 1), sizeof *j.cols);
      j.types = calloc((size_t)(n ? n : 1), sizeof *j.types);
      j.n = n;
      for (int i = 0; j.cols && j.types && i < n; i++) {
        uint8_t t = 0;
        j.cols[i] = nsl__bytes_get_str(&r);
        nsl__bytes_get(&r, &t, 1);
        j.types[i] = (nsl_type)t;
      }
    }
    int32_t only = -1;
    nsl__bytes_get(&r, &only, sizeof only);
    uint64_t flen = 0;
    nsl__bytes_get(&r, &flen, sizeof flen);
    if (flen > r.len - r.at) r.bad = 1;
    else if (flen > 0) {   /* read in place: buf lives until the answers are sent */
      j.filter = r.p + r.at;
      j.flen = (size_t)flen;
      r.at += (size_t)flen;
    }
    int lo = 0, hi = d->count;   /* the reports answered: all, or the one asked for */
    if (only >= 0) {
      lo = only - d->first;
      hi = lo + 1;
      if (lo < 0 || lo >= d->count) r.bad = 1, lo = 0, hi = 1;
    }
    j.answers = calloc((size_t)(d->count ? d->count : 1), sizeof *j.answers);
    if (kind == REQ_CALL && only < 0) r.bad = 1;   /* a computation is on one report */
    if (r.bad || !j.table || !j.answers || (n > 0 && (!j.cols || !j.types))) {
      for (int i = lo; j.answers && i < hi; i++) answer_error(&j.answers[i], NSL_ERR_FORMAT, "corrupt request", d->rank);
    } else if (kind == REQ_CALL) {   /* on this thread: the computation may be the caller's interpreter */
      nsl_error e = {0};
      void *out = NULL;
      size_t olen = 0;
      nsl_status st = call ? call(ctx, only, j.table, j.filter, j.flen, &out, &olen, &e)
                           : nsl_error_set(&e, NSL_ERR_ARG, "no computation is served here");
      if (st != NSL_OK) answer_error(&j.answers[lo], st, e.msg, d->rank);
      else {
        int32_t ok = NSL_OK;
        nsl__bytes_put(&j.answers[lo], &ok, sizeof ok);
        nsl__bytes_put(&j.answers[lo], out, olen);
      }
      free(out);
    } else if (kind == REQ_LOAD && hi - lo > 1) {
      nsl__run_parallel(d->count, nsl__thread_count(d->count), serve_one, &j);
    } else {
      for (int i = lo; i < hi; i++) serve_one(&j, i);
    }
    /* one answer per report, in order, even when it could not be made */
    for (int i = lo; i < hi && rc == NSL_OK; i++) {
      nsl__text *m = j.answers ? &j.answers[i] : NULL;
      if (!m || m->oom) {
        static const char nomem[] = "\x03\0\0\0";   /* a status without text: out of memory */
        rc = nsl__comm_send(0, TAG_REPLY, nomem, 4, err);
      } else rc = nsl__comm_send(0, TAG_REPLY, m->s, m->len, err);
    }
    for (int i = 0; j.answers && i < d->count; i++) free(j.answers[i].s);
    free(j.answers);
    for (int i = 0; j.cols && i < j.n; i++) free((char *)j.cols[i]);
    free(j.cols);
    free(j.types);
    free((char *)j.table);
    free(buf);
    if (rc != NSL_OK) return rc;
  }
}

nsl_status nsl__dist_quit(nsl_dist *d, nsl_error *err) {
  uint8_t q = REQ_QUIT;
  nsl_status rc = NSL_OK;
  for (int r = 1; r < d->size; r++) {
    nsl_status s = nsl__comm_send(r, TAG_REQ, &q, 1, err);
    if (rc == NSL_OK) rc = s;
  }
  return rc;
}
