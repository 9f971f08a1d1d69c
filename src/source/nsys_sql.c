/* nsys_sql.c -- raw SQL on an nsys export (trace:sql): one read-only
 * statement, with an authorizer that denies ATTACH and changing pragmas. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "nsl/nsl.h"
#include "source/nsys_sqlite.h"
#include "source/nsys_sqlite_internal.h"

/* Denies what a read-only query never needs: ATTACH/DETACH (new files) and
 * pragmas other than schema introspection (they change the connection). */
static int sql_authorizer(void *ctx, int action, const char *a, const char *b, const char *c, const char *d) {
  static const char *const pragmas[] = {"table_info", "table_xinfo", "table_list", "index_list", "index_info",
                                        "index_xinfo", "foreign_key_list", "database_list", "page_size",
                                        "page_count", "schema_version", "user_version", "compile_options", NULL};
  (void)ctx;
  (void)c;
  (void)d;
  if (action == SQLITE_ATTACH || action == SQLITE_DETACH) return SQLITE_DENY;
  if (action == SQLITE_PRAGMA) {
    for (int i = 0; pragmas[i]; i++)
      if (a && strcasecmp(a, pragmas[i]) == 0 && (i < 8 || !b)) return SQLITE_OK;
    return SQLITE_DENY;
  }
  return SQLITE_OK;
}

nsl_status nsl__nsys_sql(void *p, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err) {
  nsys_src *s = p;
  sqlite3_stmt *st = NULL;
  const char *tail = NULL;
  sqlite3_set_authorizer(s->db, sql_authorizer, NULL);
  int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, &tail);
  sqlite3_set_authorizer(s->db, NULL, NULL);
  if (rc != SQLITE_OK) return nsl_error_set(err, NSL_ERR_ARG, "SQL on '%s': %s", s->label, sqlite3_errmsg(s->db));
  if (!st) return nsl_error_set(err, NSL_ERR_ARG, "SQL on '%s': empty statement", s->label);
  while (tail && (isspace((unsigned char)*tail) || *tail == ';')) tail++;
  if (tail && *tail) {
    sqlite3_finalize(st);
    return nsl_error_set(err, NSL_ERR_ARG, "SQL on '%s': one statement at a time", s->label);
  }
  if (!sqlite3_stmt_readonly(st)) {
    sqlite3_finalize(st);
    return nsl_error_set(err, NSL_ERR_ARG, "SQL on '%s': only read-only statements are allowed (the export is never modified)",
                         s->label);
  }
  int ncols = sqlite3_column_count(st);
  const char **names = calloc((size_t)(ncols > 0 ? ncols : 1), sizeof *names);
  nsl_sql_value *vals = calloc((size_t)(ncols > 0 ? ncols : 1), sizeof *vals);
  nsl_status out = NSL_OK;
  if (!names || !vals) {
    out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int i = 0; i < ncols; i++) names[i] = sqlite3_column_name(st, i);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int i = 0; i < ncols; i++) {
      nsl_sql_value *v = &vals[i];
      memset(v, 0, sizeof *v);
      switch (sqlite3_column_type(st, i)) {
      case SQLITE_INTEGER:
        v->type = 1;
        v->i = sqlite3_column_int64(st, i);
        v->d = (double)v->i;
        break;
      case SQLITE_FLOAT:
        v->type = 2;
        v->d = sqlite3_column_double(st, i);
        break;
      case SQLITE_TEXT:
        v->type = 3;
        v->s = (const char *)sqlite3_column_text(st, i);
        v->len = (size_t)sqlite3_column_bytes(st, i);
        break;
      case SQLITE_BLOB:
        v->type = 4;
        v->s = sqlite3_column_blob(st, i);
        v->len = (size_t)sqlite3_column_bytes(st, i);
        break;
      default: v->type = 0; break;
      }
    }
    if (row && row(ctx, ncols, names, vals) != 0) {
      rc = SQLITE_DONE;
      break;
    }
  }
  if (rc != SQLITE_DONE) out = nsl__nsys_sql_error(s, rc, "the query", err);
done:
  free(names);
  free(vals);
  sqlite3_finalize(st);
  return out;
}
