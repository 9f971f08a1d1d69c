/* nsys_enums.c -- nsys enum values (from the export's ENUM tables, or the
 * built-in ones of nsys_schema.c) as dictionary ids. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "nsl/nsl.h"
#include "source/nsys_sqlite_internal.h"

void nsl__nsys_enum_map_free(enum_map *e) {
  free(e->ids);
  free(e->dict_ids);
  memset(e, 0, sizeof *e);
}

int nsl__nsys_enum_map_add(enum_map *e, int64_t id, int32_t did) {
  if (e->n == e->cap) {
    int cap = e->cap ? e->cap * 2 : 16;
    int64_t *ids = realloc(e->ids, (size_t)cap * sizeof *ids);
    if (ids) e->ids = ids;
    int32_t *dids = realloc(e->dict_ids, (size_t)cap * sizeof *dids);
    if (dids) e->dict_ids = dids;
    if (!ids || !dids) return -1;
    e->cap = cap;
  }
  e->ids[e->n] = id;
  e->dict_ids[e->n++] = did;
  return 0;
}

/* The short form of nsys enum name `name` (prefix stripped): the built-in
 * value when known, else the name in lower case; its id into *id. */
static nsl_status intern_enum_name(nsl_dict *dict, const enum_def *en, const char *name, int32_t *id, nsl_error *err) {
  size_t pl = strlen(en->prefix);
  if (strncmp(name, en->prefix, pl) == 0) name += pl;
  for (const enum_item *it = en->items; it->nsys; it++)
    if (strcmp(it->nsys, name) == 0) return nsl_dict_intern(dict, it->value, strlen(it->value), id, err);
  char buf[128];
  size_t n = 0;
  for (; name[n] && n + 1 < sizeof buf; n++) buf[n] = (char)tolower((unsigned char)name[n]);
  return nsl_dict_intern(dict, buf, n, id, err);
}

/* Reads the values of en: from the export's ENUM table when it has one,
 * else the built-in ones. */
nsl_status nsl__nsys_build_enum(nsys_src *s, const enum_def *en, nsl_dict *dict, enum_map *e, nsl_error *err) {
  table_info *t = nsl__nsys_find_table(s, en->table);
  if (t) {
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT id, name FROM \"%s\"", en->table);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (!name || sqlite3_column_type(st, 0) != SQLITE_INTEGER) continue;
        int32_t did;
        nsl_status irc = intern_enum_name(dict, en, name, &did, err);
        if (irc == NSL_OK && nsl__nsys_enum_map_add(e, sqlite3_column_int64(st, 0), did) < 0)
          irc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
        if (irc != NSL_OK) {
          sqlite3_finalize(st);
          return irc;
        }
      }
      sqlite3_finalize(st);
      if (rc == SQLITE_DONE && e->n > 0) return NSL_OK;
      if (rc != SQLITE_DONE) return nsl__nsys_sql_error(s, rc, en->table, err);
    } else if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) {
      return nsl__nsys_sql_error(s, rc, en->table, err);
    }
    /* an ENUM table of another shape: fall back to the built-in values */
    e->n = 0;
  }
  for (const enum_item *it = en->items; it->nsys; it++) {
    int32_t did;
    nsl_status irc = nsl_dict_intern(dict, it->value, strlen(it->value), &did, err);
    if (irc != NSL_OK) return irc;
    if (nsl__nsys_enum_map_add(e, it->id, did) < 0) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  return NSL_OK;
}

/* Dict id of enum value v: its name, or the number itself when unnamed. */
int32_t nsl__nsys_enum_value(enum_map *e, nsl_dict *dict, int64_t v) {
  for (int i = 0; i < e->n; i++)
    if (e->ids[i] == v) return e->dict_ids[i];
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRId64, v);
  int32_t did;
  if (nsl_dict_intern(dict, buf, (size_t)n, &did, NULL) != NSL_OK || nsl__nsys_enum_map_add(e, v, did) < 0) return -3;
  return did;
}
