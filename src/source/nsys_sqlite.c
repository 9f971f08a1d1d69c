/* nsys_sqlite.c -- an nsys SQLite export (`nsys export --type sqlite`, every
 * schema from 2020 to today) seen as the data model's tables.
 *
 * The export is opened read-only and immutable (no journal, no WAL, no lock,
 * no file of any kind written beside it), read through SQLite's page cache.
 * Each data-model table is mapped to one or more nsys tables by a declarative
 * description (table_map below): which nsys tables, which filter, and for
 * every model column the nsys columns it comes from, picked by name so that
 * columns added or missing across versions are handled alike (nsys_schema.c:
 * "add a table" means a table_map there).  A load is one
 * SELECT of only the requested columns, whose rows reach pre-sized arrays as
 * the arguments of an aggregate function (one sqlite3_step per load, not one
 * per row plus a call per cell); a large single table is split into rowid
 * ranges read at once on their own connections (each part with its own
 * dictionary, merged afterwards).
 *
 * Strings: StringIds is read once per source (lazily); a load interns into
 * the dictionary it is given only the strings its rows use (through a
 * local-id -> dict-id map); inline text is interned directly.
 *
 * Time base: event times are kept as nsys wrote them (ns on the session's
 * clock, whose zero is the session start TARGET_INFO_SESSION_START_TIME.
 * utcEpochNs); the trace adds the offset that aligns reports by start_utc.
 *
 * The mapping itself (which nsys tables and columns make each data-model
 * table, in every schema version, and the choices it makes) is declared in
 * nsys_schema.c.  This file holds the source itself (the table list, schema
 * questions, the ops); the other parts are files of their own, listed in
 * nsys_sqlite_internal.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "nsl/nsl.h"
#include "source/nsys_schema.h"
#include "source/nsys_sqlite.h"
#include "source/nsys_sqlite_internal.h"

/* The error of SQLite result rc while reading `what` on connection db (the
 * source's own, or a parallel part's). */
nsl_status nsl__nsys_sql_error_on(nsys_src *s, sqlite3 *db, int rc, const char *what, nsl_error *err) {
  int prim = rc & 0xff;
  if (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB || prim == SQLITE_IOERR)
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is truncated or corrupt: reading %s: %s", s->label, what,
                         sqlite3_errstr(rc));
  if (prim == SQLITE_NOMEM) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading '%s' (%s)", s->label, what);
  return nsl_error_set(err, NSL_ERR_FORMAT, "'%s': reading %s: %s", s->label, what,
                       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

nsl_status nsl__nsys_sql_error(nsys_src *s, int rc, const char *what, nsl_error *err) {
  return nsl__nsys_sql_error_on(s, s->db, rc, what, err);
}

table_info *nsl__nsys_find_table(nsys_src *s, const char *name) {
  for (int i = 0; i < s->ntables; i++)
    if (strcmp(s->tables[i].name, name) == 0) return &s->tables[i];
  return NULL;
}

/* Reads the column names of t once (PRAGMA table_info). */
nsl_status nsl__nsys_load_columns(nsys_src *s, table_info *t, nsl_error *err) {
  if (t->loaded) return NSL_OK;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(s->db, "SELECT name, \"notnull\" FROM pragma_table_info(?1)", -1, &st, NULL);
  if (rc != SQLITE_OK) return nsl__nsys_sql_error(s, rc, "the schema", err);
  sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
  nsl_status out = NSL_OK;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *c = (const char *)sqlite3_column_text(st, 0);
    char **cols = realloc(t->cols, (size_t)(t->ncols + 1) * sizeof *cols);
    if (cols) t->cols = cols;
    unsigned char *nn = cols ? realloc(t->notnull, (size_t)(t->ncols + 1)) : NULL;
    if (nn) t->notnull = nn;
    if (!cols || !nn || !c) {
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading the schema of '%s'", s->label);
      break;
    }
    t->notnull[t->ncols] = sqlite3_column_int(st, 1) != 0;
    if (!(t->cols[t->ncols] = strdup(c))) {
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading the schema of '%s'", s->label);
      break;
    }
    t->ncols++;
  }
  if (out == NSL_OK && rc != SQLITE_DONE) out = nsl__nsys_sql_error(s, rc, "the schema", err);
  sqlite3_finalize(st);
  if (out == NSL_OK) t->loaded = 1;
  return out;
}

int nsl__nsys_column_notnull(const table_info *t, const char *col) {
  for (int i = 0; i < t->ncols; i++)
    if (strcmp(t->cols[i], col) == 0) return t->notnull[i];
  return 0;
}

int nsl__nsys_has_column(const table_info *t, const char *col) {
  for (int i = 0; i < t->ncols; i++)
    if (strcmp(t->cols[i], col) == 0) return 1;
  return 0;
}

/* Whether table t has at least one row (an empty GPU table, as exports with
 * lazy=false write, gives way to the next alternative). */
static int has_rows(nsys_src *s, const table_info *t) {
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT 1 FROM \"%s\" LIMIT 1", t->name);
  sqlite3_stmt *st = NULL;
  int rows = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return rows;
}

/* The alternative of model table `name` that this export supports, or NULL
 * (and NSL_OK) when it has none; an error only when the schema is unreadable. */
nsl_status nsl__nsys_pick_map(nsys_src *s, const char *name, const table_map **out, nsl_error *err) {
  *out = NULL;
  for (const table_map *m = nsl__nsys_maps; m->model; m++) {
    if (strcmp(m->model, name) != 0) continue;
    table_info *t = NULL;
    for (int k = 0; k < 4 && m->sources[k] && !t; k++) t = nsl__nsys_find_table(s, m->sources[k]);
    if (!t) continue;
    if (m->require_col) {
      nsl_status rc = nsl__nsys_load_columns(s, t, err);
      if (rc != NSL_OK) return rc;
      if (!nsl__nsys_has_column(t, m->require_col)) continue;
    }
    if (m->need_rows && !has_rows(s, t)) continue;
    *out = m;
    return NSL_OK;
  }
  return NSL_OK;
}

/* Exact row count of model table `name` (NSL_ERR_NOTFOUND when absent). */
static nsl_status nsys_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  nsys_src *s = p;
  const table_map *m = NULL;
  nsl_status rc = nsl__nsys_pick_map(s, name, &m, err);
  if (rc != NSL_OK) return rc;
  *out = 0;
  if (!m) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", s->label, name);
  nsl__text b = {0};
  out_col key = {0};
  key.map = &m->cols[0];   /* distinct/grouped maps count their first column's rows */
  nsl__text_add(&b, "SELECT count(*) FROM (");
  int ncols;
  rc = nsl__nsys_build_statement(s, m, &key, 1, 0, 0, 0, &b, &ncols, err);
  nsl__text_add(&b, ")");
  if (rc == NSL_OK && b.oom) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  if (rc == NSL_OK) {
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(s->db, b.s, -1, &st, NULL);
    if (src == SQLITE_OK) src = sqlite3_step(st);
    if (src == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
    else rc = nsl__nsys_sql_error(s, src, m->sources[0], err);
    sqlite3_finalize(st);
  }
  free(b.s);
  return rc;
}

/* Declares nothing beyond the model's columns; tells whether the table exists. */
static nsl_status nsys_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  nsys_src *s = p;
  const table_map *m = NULL;
  (void)t;
  nsl_status rc = nsl__nsys_pick_map(s, name, &m, err);
  if (rc != NSL_OK) return rc;
  if (!m) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", s->label, name);
  return NSL_OK;
}

void nsl__nsys_close(void *p) {
  nsys_src *s = p;
  if (!s) return;
  sqlite3_close_v2(s->db);
  free(s->image);
  free(s->uri);
  for (int i = 0; i < s->ntables; i++) {
    free(s->tables[i].name);
    for (int c = 0; c < s->tables[i].ncols; c++) free(s->tables[i].cols[c]);
    free(s->tables[i].cols);
    free(s->tables[i].notnull);
  }
  free(s->tables);
  nsl__nsys_strings_free(s);
  free(s->label);
  free(s->name);
  free(s->host);
  free(s);
}

typedef struct metadata_ctx {
  nsl_metadata_fn fn;
  void *ctx;
  int64_t tables;
} metadata_ctx;

static int count_row(void *p, int ncols, const char *const *names, const nsl_sql_value *v) {
  (void)names;
  if (ncols == 1 && v[0].type == 1) ((metadata_ctx *)p)->tables = v[0].i;
  return 0;
}

static int metadata_row(void *p, int ncols, const char *const *names, const nsl_sql_value *v) {
  (void)names;
  metadata_ctx *m = p;
  if (ncols != 2 || v[0].type != 3 || v[1].type != 3) return 0;   /* no value: left out */
  return m->fn(m->ctx, v[0].s, v[1].s);
}

/* The metadata operation: META_DATA_CAPTURE's (name, value) rows, in table
 * order, where the export has that table (nsys 2023.3 and later). */
static nsl_status nsys_metadata(void *p, nsl_metadata_fn fn, void *ctx, nsl_error *err) {
  metadata_ctx m = {fn, ctx, 0};
  nsl_status rc = nsl__nsys_sql(p, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'META_DATA_CAPTURE'",
                               count_row, &m, err);
  if (rc != NSL_OK || m.tables == 0) return rc;
  return nsl__nsys_sql(p, "SELECT name, CAST(value AS TEXT) FROM META_DATA_CAPTURE", metadata_row, &m, err);
}

const nsl_source_ops nsl__nsys_source_ops = {.version = NSL_SOURCE_VERSION,
                                            .kind = "nsys-sqlite",
                                            .describe = nsys_describe,
                                            .load = nsl__nsys_load,
                                            .count = nsys_count,
                                            .close = nsl__nsys_close,
                                            .sql = nsl__nsys_sql,
                                            .metadata = nsys_metadata};
