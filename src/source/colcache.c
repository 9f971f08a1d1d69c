/*
 * colcache.c -- the columnar cache (see colcache.h and archive-format/CACHE.md):
 * the wrapper source, the identity of an input, the entries open in this
 * process.  What its files share is colcache_internal.h.
 *
 * An entry is a folder <root>/columns/<key>/ per report of an input, key a
 * hash of the input's device, inode, kind and report; it holds
 *   entry                 the input's identity, as text (for `nsl cache list`)
 *   t-<table>             a table's description: found or not, extra
 *                         columns the source declares, row count
 *   c-<table>-<column>    one column of the report, unshifted in time:
 *                         a 256-byte header, the values, for strings the
 *                         column's own dictionary
 *   info                  an export's metadata: a later open of the same
 *                         file reads no SQLite (nsl__cache_add_lazy_export)
 * Each file is written whole to a temporary file and renamed (two processes
 * filling one entry both publish complete, equal files), and checked on
 * every read: magic, format version, byte order, the identity hash of the
 * input it was made from, names and type asked for, bounds, and checksums of
 * header, values and dictionary.  A file that fails is ignored and written
 * again from the input.
 *
 * A file is read whole into anonymous memory (read_private, colcache_io.c) and checked
 * there; numeric columns are handed out from it without a further copy,
 * except time columns of a report whose clock is shifted (a multi-report
 * trace): those are copied with the offset added.  String columns are used
 * in place too when their dictionary matches the trace's ids (the first
 * string columns of a fresh trace); otherwise the ids are remapped into a
 * new column.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/model.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "source/bundle_internal.h"
#include "source/colcache_internal.h"
#include "source/nsys_sqlite.h"

/* ---- the wrapper's operations ---- */

/* The change time of a file, ns (an edit in place that restores the modification time still changes it). */
static int64_t ctime_ns(const struct stat *st) { return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec; }

/* The export of a report added from the cache folder without it
 * (nsl__cache_add_lazy_export), opened now: it must still be the file whose
 * columns were read (a file changed since is said so, before its new bytes
 * are parsed). */
static nsl_status open_lazy_export(nsl__cache_src *c, nsl_error *err) {
  struct stat st;
  nsl__file_id now;
  if (stat(c->lazy_path, &st) != 0)
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", c->lazy_path, strerror(errno));
  nsl__file_id_of(&st, &now);
  if (!nsl__file_id_same(&now, &c->lazy_id) || ctime_ns(&st) != c->lazy_ctime_ns)
    return nsl_error_set(err, NSL_ERR_IO, "cannot read '%s': the file changed while it was read", c->lazy_path);
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc = nsl__nsys_open_export(c->lazy_path, c->lazy_head, c->lazy_nhead, &src, &info, err);
  if (rc != NSL_OK) return rc;
  c->in = &nsl__nsys_source_ops;
  c->src = src;
  return NSL_OK;
}

/* The wrapped source, opened now for a lazily opened bundle report: the
 * export decompressed from the bundle the report keeps open (it must still
 * be the file whose columns are read: a file changed in place is said so,
 * before its new bytes are parsed) and opened from memory. */
static nsl_status ensure_inner(nsl__cache_src *c, nsl_error *err) {
  if (c->in) return NSL_OK;
  if (c->lazy_path) return open_lazy_export(c, err);
  nsl__file_id was, now;
  void *data = NULL, *src = NULL;
  size_t len = 0;
  nsl_report_info info;
  struct stat st;
  nsl__bundle_file_id(c->zip, &was);
  if (fstat(nsl__bundle_fd(c->zip), &st) == 0) nsl__file_id_of(&st, &now);
  else now.known = 0;
  if (!nsl__file_id_same(&now, &was))
    return nsl_error_set(err, NSL_ERR_IO, "cannot read '%s': the bundle changed while it was read",
                         nsl_bundle_path(c->zip));
  nsl_status rc = nsl_bundle_read_member(c->zip, c->lazy_member, &data, &len, err);
  if (rc == NSL_OK) rc = nsl__nsys_adopt_image(c->label, data, len, &src, &info, err);   /* takes data over */
  if (rc != NSL_OK) return rc;
  c->in = &nsl__nsys_source_ops;
  c->src = src;
  return NSL_OK;
}

nsl_status nsl__cache_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  nsl__cache_src *c = p;
  nsl__cache_meta m;
  if (!nsl__cache_read_meta(c, name, &m)) {
    nsl_table *probe = nsl_table_new();
    if (!probe) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    nsl_status rc = ensure_inner(c, err);
    if (rc == NSL_OK) rc = c->in->describe(c->src, name, probe, err);
    if (rc != NSL_OK && rc != NSL_ERR_NOTFOUND) {
      nsl_table_release(probe);
      return rc;
    }
    memset(&m, 0, sizeof m);
    m.known = 1;
    m.found = rc == NSL_OK;
    m.rows = -1;
    for (int k = 0; k < nsl_table_ncols(probe) && m.nextra < 32; k++)
      if (strlen(nsl_table_colname(probe, k)) < 64) {
        snprintf(m.names[m.nextra], sizeof m.names[0], "%s", nsl_table_colname(probe, k));
        m.types[m.nextra++] = nsl_table_coltype(probe, k);
      }
    int complete = nsl_table_ncols(probe) == m.nextra;
    nsl_table_release(probe);
    if (complete) nsl__cache_write_meta(c, name, &m);
  }
  if (!m.found) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", c->label, name);
  for (int k = 0; k < m.nextra; k++)
    if (nsl_table_find(t, m.names[k]) < 0) nsl_table_declare(t, m.names[k], m.types[k], NULL);
  return NSL_OK;
}

nsl_status nsl__cache_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  nsl__cache_src *c = p;
  nsl__cache_meta m;
  int known = nsl__cache_read_meta(c, name, &m);
  if (known && !m.found) {
    *out = 0;
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", c->label, name);
  }
  if (known && m.rows >= 0) {
    *out = m.rows;
    return NSL_OK;
  }
  nsl_status rc = ensure_inner(c, err);
  if (rc == NSL_OK) rc = c->in->count(c->src, name, out, err);
  if (rc == NSL_OK && known) {
    m.rows = *out;
    nsl__cache_write_meta(c, name, &m);
  }
  return rc;
}

/* nsl__cache_load's files, mapped and checked by the threads (nsl__run_parallel). */
typedef struct map_run {
  const nsl__cache_src *c;
  const char *table;
  const char *const *colnames;
  nsl__mapping **maps;
  const nsl__cache_head **heads;
} map_run;

static void map_one(void *ctx, int k) {
  map_run *mr = ctx;
  mr->maps[k] = nsl__cache_map_column(mr->c, mr->table, mr->colnames[k], &mr->heads[k]);
}

nsl_status nsl__cache_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                           nsl_dict *dict, int64_t off, nsl_column **out, nsl_error *err) {
  nsl__cache_src *c = p;
  const nsl_model_table *mt = nsl__model_table(name);
  for (int k = 0; k < n; k++) out[k] = NULL;
  /* the table's description: an unopened export need not open to say it lacks the table, and the row count
   * is kept for later counts (read once for both) */
  nsl__cache_meta tm;
  int known = (!c->in || n > 0) && nsl__cache_read_meta(c, name, &tm);
  if (!c->in && known && !tm.found) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", c->label, name);
  int *miss = malloc((size_t)(n > 0 ? n : 1) * sizeof *miss), *is_time = calloc((size_t)(n > 0 ? n : 1), sizeof *is_time);
  const char **mnames = malloc((size_t)(n > 0 ? n : 1) * sizeof *mnames);
  nsl_type *mtypes = malloc((size_t)(n > 0 ? n : 1) * sizeof *mtypes);
  nsl_column **got = calloc((size_t)(n > 0 ? n : 1), sizeof *got);
  nsl_status rc = NSL_OK;
  int nmiss = 0, direct = 0;
  if (!miss || !is_time || !mnames || !mtypes || !got) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int k = 0; k < n; k++) {
    const nsl_model_column *mc = mt ? nsl__model_column(mt, colnames[k]) : NULL;
    is_time[k] = mc && mc->is_time;
    if (is_time[k] && off != 0 && types[k] != NSL_I64) direct = 1;   /* shifted where the cache does not shift */
  }
  if (direct) {
    if ((rc = ensure_inner(c, err)) == NSL_OK) rc = c->in->load(c->src, name, colnames, types, n, dict, off, out, err);
    goto done;
  }
  /* the files mapped and checked (their checksums: a pass over every byte) at once, the columns made in turn */
  map_run mr = {c, name, colnames, calloc((size_t)(n > 0 ? n : 1), sizeof *mr.maps),
                calloc((size_t)(n > 0 ? n : 1), sizeof *mr.heads)};
  if (!mr.maps || !mr.heads) {
    free(mr.maps);
    free(mr.heads);
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  nsl__run_parallel(n, nsl__thread_count(n), map_one, &mr);
  for (int k = 0; k < n; k++) {
    out[k] = mr.maps[k] ? nsl__cache_column_of(mr.heads[k], mr.maps[k], types[k], dict, is_time[k] ? off : 0) : NULL;
    if (!out[k]) {
      mnames[nmiss] = colnames[k];
      mtypes[nmiss] = types[k];
      miss[nmiss++] = k;
    }
  }
  free(mr.maps);
  free(mr.heads);
  if (nmiss > 0) {
    if ((rc = ensure_inner(c, err)) == NSL_OK) rc = c->in->load(c->src, name, mnames, mtypes, nmiss, dict, 0, got, err);
    if (rc != NSL_OK) goto done;
    for (int j = 0; j < nmiss; j++) {
      int k = miss[j];
      nsl_column *col = got[j];
      if (!col || col->type != types[k]) {
        rc = nsl_error_set(err, NSL_ERR_FORMAT, "'%s': table %s: column %s did not load", c->label, name, colnames[k]);
        goto done;
      }
      nsl__cache_write_column(c, name, colnames[k], col);
      if (is_time[k] && off != 0)
        for (int64_t r = 0; r < col->len; r++)
          if (nsl_i64(col)[r] != NSL_NULL_I64) nsl_i64(col)[r] += off;
      out[k] = col;
      got[j] = NULL;
    }
  }
  /* every column one length, else the cached ones were of another load: read it all again */
  for (int k = 1; k < n; k++)
    if (out[k]->len != out[0]->len) {
      for (int j = 0; j < n; j++) {
        nsl_column_release(out[j]);
        out[j] = NULL;
      }
      if ((rc = ensure_inner(c, err)) == NSL_OK) rc = c->in->load(c->src, name, colnames, types, n, dict, off, out, err);
      goto done;
    }
  if (n > 0 && known && tm.found && tm.rows < 0) {   /* the row count, for later counts */
    tm.rows = out[0]->len;
    nsl__cache_write_meta(c, name, &tm);
  }
done:
  if (rc != NSL_OK)
    for (int k = 0; k < n; k++) {
      nsl_column_release(out[k]);
      out[k] = NULL;
    }
  for (int j = 0; got && j < n; j++) nsl_column_release(got[j]);
  free(miss);
  free(is_time);
  free(mnames);
  free(mtypes);
  free(got);
  return rc;
}

void nsl__cache_close(void *p) {
  nsl__cache_src *c = p;
  if (!c) return;
  if (c->in) c->in->close(c->src);
  nsl__cache_free(c);
}

nsl_status nsl__cache_sql(void *p, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err) {
  nsl__cache_src *c = p;
  nsl_status rc = ensure_inner(c, err);
  return rc != NSL_OK ? rc : c->in->sql(c->src, sql, row, ctx, err);
}

static size_t cache_members(void *p, const char *prefix, void (*fn)(void *ctx, const char *name), void *ctx) {
  nsl__cache_src *c = p;
  return c->in->members(c->src, prefix, fn, ctx);
}

static nsl_status cache_member_read(void *p, const char *name, void **data, size_t *len, nsl_error *err) {
  nsl__cache_src *c = p;
  return c->in->member_read(c->src, name, data, len, err);
}

nsl_status nsl__cache_metadata(void *p, nsl_metadata_fn fn, void *ctx, nsl_error *err) {
  nsl__cache_src *c = p;
  nsl_status rc = ensure_inner(c, err);
  return rc != NSL_OK ? rc : c->in->metadata(c->src, fn, ctx, err);
}

/* ---- columns derived from the report's rows (nsl_source_ops' derived_get, derived_put) ---- */

/* The file name's column part of derived column `name`: never a data-model
 * column's (those have no ':'). */
static int derived_column(char *out, size_t cap, const char *name) {
  int n = snprintf(out, cap, "derived:%s", name);
  return n > 0 && (size_t)n < cap;
}

static nsl_column *cache_derived_get(void *p, const char *table, const char *name, nsl_type type, int64_t rows) {
  nsl__cache_src *c = p;
  char col[64];
  if (!c->dir || type == NSL_STR || !derived_column(col, sizeof col, name)) return NULL;
  const nsl__cache_head *head = NULL;
  nsl__mapping *m = nsl__cache_map_column(c, table, col, &head);   /* checked: sound, this input's, this name's */
  if (!m) return NULL;
  if (head->type != (uint32_t)type || head->rows != rows) {
    nsl__mapping_release(m);
    return NULL;
  }
  return nsl__cache_column_of(head, m, type, NULL, 0);
}

static void cache_derived_put(void *p, const char *table, const char *name, const nsl_column *col) {
  nsl__cache_src *c = p;
  char cn[64];
  if (!c->dir || c->bw || !col || col->type == NSL_STR || !derived_column(cn, sizeof cn, name)) return;
  nsl__cache_write_column(c, table, cn, col);
}

/* ---- identity of an input ---- */

typedef struct input_id {
  uint64_t dev, ino;
  int64_t size, mtime_ns, ctime_ns;   /* ctime: an edit in place that restores the mtime still shows */
  uint64_t head, pages;
  uint32_t version;
  uint64_t loader;   /* nsl__loader_id: columns another build made are not these */
} input_id;

/* The identity of report `sub` of input `file`: file system identity, the
 * first 100 bytes (an SQLite header: its change counter and schema cookie),
 * 17 pages sampled across the file, and the cache format; nothing the
 * source reads, so that a report is known before its source opens
 * (nsl__cache_add_lazy_export).  *key names the entry (same input and
 * report: same entry, whatever its content); *out receives the stat. */
static int identify(const char *file, int input_fd, const char *kind, const char *sub, uint64_t *ident,
                    uint64_t *key, struct stat *out, unsigned char *head, size_t *nhead) {
  struct stat st;
  int fd = input_fd >= 0 ? input_fd : open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd != input_fd) close(fd);
    return -1;
  }
  input_id id;
  memset(&id, 0, sizeof id);
  id.dev = (uint64_t)st.st_dev;
  id.ino = (uint64_t)st.st_ino;
  id.size = (int64_t)st.st_size;
  id.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  id.ctime_ns = ctime_ns(&st);
  id.version = NSL_CACHE_FORMAT;
  id.loader = nsl__cache_hash64(nsl__loader_id, strlen(nsl__loader_id), 7);
  unsigned char buf[4096];
  ssize_t got = pread(fd, buf, 100, 0);
  id.head = nsl__cache_hash64(buf, got > 0 ? (size_t)got : 0, 5);
  if (head) {
    *nhead = got > 0 ? (size_t)got : 0;
    memcpy(head, buf, *nhead);
  }
  id.pages = 6;
  for (int i = 0; i <= 16; i++) {
    off_t at = i == 16 ? (st.st_size > 4096 ? st.st_size - 4096 : 0) : (off_t)((st.st_size / 16 * i) & ~(off_t)4095);
    got = pread(fd, buf, sizeof buf, at);
    id.pages = nsl__cache_hash64(buf, got > 0 ? (size_t)got : 0, id.pages);
  }
  if (fd != input_fd) close(fd);
  if (out) *out = st;
  uint64_t k = nsl__cache_hash64(kind, strlen(kind), nsl__cache_hash64(sub, strlen(sub), 8));
  *ident = nsl__cache_hash64(&id, sizeof id, k);
  uint64_t where[2] = {id.dev, id.ino};
  *key = nsl__cache_hash64(where, sizeof where, k);
  return 0;
}

/* ---- entries ---- */

/* Entries open in this process, and whether one of those closed had added
 * files: the size bound is kept once, when the last entry closes, not once
 * per report (a scan of the whole folder each: a trace of 100 small reports
 * scanned it 100 times). */
static atomic_int live_entries;
static atomic_int wrote_pending;

/* Frees c (not the wrapped source); the size bound is kept when it was the
 * last entry open. */
void nsl__cache_free(nsl__cache_src *c) {
  if (!c) return;
  if (c->dir) {   /* one of the entries open in this process: the last one keeps the size bound */
    if (c->wrote) atomic_store(&wrote_pending, 1);
    if (atomic_fetch_sub(&live_entries, 1) == 1 && atomic_exchange(&wrote_pending, 0)) nsl__cache_evict(c->dir);
  }
  free(c->lazy_member);
  free(c->lazy_path);
  nsl_bundle_close(c->zip);
  for (size_t i = 0; i < c->nemb; i++) free(c->emb[i].name);
  free(c->emb);
  free(c->dir);
  free(c->label);
  free(c);
}

/* nsl__cache_add_source and nsl__cache_add_bundle_source: the wrapper with
 * the cache folder (when on) and the bundle's stored columns (when given). */
static nsl_status add_wrapped(nsl_trace *tr, const nsl_source_ops *ops, void *src, const nsl_report_info *info,
                              const char *file, int fd, const char *sub, nsl_bundle *zip, const char *sha,
                              nsl_error *err) {
  int use_dir = nsl_trace_options(tr)->cache;
  if ((!use_dir && !sha) || !ops->load || !ops->count || !ops->close) return nsl_trace_add_source(tr, ops, src, info, err);
  uint64_t ident = 0, key = 0;
  if (use_dir && identify(file, fd, ops->kind ? ops->kind : "", sub ? sub : "", &ident, &key, NULL, NULL, NULL) != 0)
    use_dir = 0;
  nsl__cache_src *c = calloc(1, sizeof *c);
  if (!c || !(c->label = strdup(info->path ? info->path : file))) {
    free(c);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  c->in = ops;
  c->src = src;
  c->kind = ops->kind;
  c->ident = ident;
  if (sha) {
    c->emb_ident = nsl__cache_embedded_ident(sub, sha);
    nsl__cache_find_embedded(c, zip, sub);
  }
  if (use_dir) nsl__cache_open_entry(c, file, sub, key);
  if (c->dir) atomic_fetch_add(&live_entries, 1);
  /* an export's metadata, for the next open (nsl__cache_add_lazy_export), which found none */
  if (c->dir && !c->nowrite && ops == &nsl__nsys_source_ops && !sub[0]) nsl__cache_write_info(c, info);
  if (!c->dir && c->nemb == 0) {
    nsl__cache_free(c);
    return nsl_trace_add_source(tr, ops, src, info, err);
  }
  c->ops.version = NSL_SOURCE_VERSION;
  c->ops.kind = ops->kind;
  c->ops.describe = ops->describe ? nsl__cache_describe : NULL;
  c->ops.load = nsl__cache_load;
  c->ops.count = nsl__cache_count;
  c->ops.close = nsl__cache_close;
  c->ops.sql = ops->sql ? nsl__cache_sql : NULL;
  c->ops.members = ops->members ? cache_members : NULL;
  c->ops.member_read = ops->member_read ? cache_member_read : NULL;
  c->ops.metadata = ops->metadata ? nsl__cache_metadata : NULL;
  c->ops.derived_get = c->dir ? cache_derived_get : NULL;   /* (kept in the folder alone, not in a bundle) */
  c->ops.derived_put = c->dir ? cache_derived_put : NULL;
  nsl_status rc = nsl_trace_add_source(tr, &c->ops, c, info, err);
  if (rc != NSL_OK) nsl__cache_free(c);   /* the caller closes src */
  return rc;
}

/* See colcache.h. */
int nsl__cache_add_lazy_export(nsl_trace *tr, const char *file, int fd, const char *shown, nsl_status *st,
                               nsl_error *err) {
  const nsl_source_ops *ops = &nsl__nsys_source_ops;
  uint64_t ident = 0, key = 0;
  struct stat fs;
  unsigned char head[100];
  size_t nhead = 0;
  if (!nsl_trace_options(tr)->cache || identify(file, fd, ops->kind, "", &ident, &key, &fs, head, &nhead) != 0)
    return 0;
  nsl__cache_src *c = calloc(1, sizeof *c);
  if (!c || !(c->label = strdup(shown)) || !(c->lazy_path = strdup(file))) {
    if (c) free(c->label);
    free(c);
    return 0;
  }
  memcpy(c->lazy_head, head, nhead);   /* (the header the export is checked by, read with the identity) */
  c->lazy_nhead = nhead;
  c->kind = ops->kind;
  c->ident = ident;
  nsl__file_id_of(&fs, &c->lazy_id);
  c->lazy_ctime_ns = ctime_ns(&fs);
  nsl__cache_open_entry(c, file, "", key);
  if (c->dir) atomic_fetch_add(&live_entries, 1);
  nsl_report_info info;
  memset(&info, 0, sizeof info);
  char host[256], *name = NULL;
  /* an entry of this identity has its metadata: the export opened well before, and is the same file */
  if (!c->dir || !nsl__cache_read_info(c, &info, host) || nsl__nsys_name_and_rank(file, &name, &info.rank) != 0) {
    nsl__cache_free(c);
    return 0;
  }
  info.path = shown;
  info.name = name;   /* the trace keeps its own copies of name and host */
  *st = nsl__cache_add_unopened(tr, c, &info, err);
  free(name);
  return 1;
}

/* See colcache_internal.h. */
nsl_status nsl__cache_add_unopened(nsl_trace *tr, nsl__cache_src *c, const nsl_report_info *info, nsl_error *err) {
  c->ops.version = NSL_SOURCE_VERSION;
  c->ops.kind = nsl__nsys_source_ops.kind;
  c->ops.describe = nsl__cache_describe;
  c->ops.load = nsl__cache_load;
  c->ops.count = nsl__cache_count;
  c->ops.close = nsl__cache_close;
  c->ops.sql = nsl__cache_sql;
  c->ops.metadata = nsl__cache_metadata;
  c->ops.derived_get = c->dir ? cache_derived_get : NULL;   /* (kept in the folder alone, not in a bundle) */
  c->ops.derived_put = c->dir ? cache_derived_put : NULL;
  nsl_status st = nsl_trace_add_source(tr, &c->ops, c, info, err);
  if (st != NSL_OK) nsl__cache_free(c);
  return st;
}

nsl_status nsl__cache_add_source(nsl_trace *tr, const nsl_source_ops *ops, void *src, const nsl_report_info *info,
                                 const char *file, int fd, const char *sub, nsl_error *err) {
  return add_wrapped(tr, ops, src, info, file, fd, sub ? sub : "", NULL, NULL, err);
}

nsl_status nsl__cache_add_bundle_source(nsl_trace *tr, const nsl_source_ops *ops, void *src,
                                        const nsl_report_info *info, nsl_bundle *b, const char *member,
                                        nsl_error *err) {
  nsl__file_id id;
  const char *sha = NULL;
  for (size_t i = 0; i < nsl_bundle_count(b); i++)
    if (strcmp(nsl_bundle_member_at(b, i)->name, member) == 0) sha = nsl_bundle_member_at(b, i)->sha256;
  if (!nsl__bundle_file_id(b, &id) || !sha || !sha[0]) sha = NULL;
  return add_wrapped(tr, ops, src, info, nsl_bundle_path(b), nsl__bundle_fd(b), member, b, sha, err);
}

