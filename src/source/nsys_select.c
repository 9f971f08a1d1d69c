/* nsys_select.c -- the SELECT of a load or a count: for every requested
 * column the first nsys column of its mapping that the table has, the
 * extras the scan reads, the filter, and the size a load starts from. */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "core/text.h"
#include "nsl/nsl.h"
#include "source/nsys_sqlite_internal.h"

static void sb_ident(nsl__text *b, const char *id) {   /* "id" (nsys names have no quotes) */
  nsl__text_add(b, "\"");
  nsl__text_add(b, id);
  nsl__text_add(b, "\"");
}

/* " AS cI": result column i of every SELECT the loader builds, so that the
 * reading query (see nsl__nsys_scan_rows) can name them. */
static void sb_alias(nsl__text *b, int i) {
  char name[24];
  snprintf(name, sizeof name, " AS c%d", i);
  nsl__text_add(b, name);
}

/* The first candidate column of cm present in t, or NULL. */
static const char *pick_column(const table_info *t, const col_map *cm, int which) {
  if (cm->kind == M_NVTX_TEXT || cm->kind == M_CC) {   /* two fixed columns */
    const char *c = cm->src[which];
    return c && nsl__nsys_has_column(t, c) ? c : NULL;
  }
  for (int i = 0; i < 4 && cm->src[i]; i++)
    if (nsl__nsys_has_column(t, cm->src[i])) return cm->src[i];
  return NULL;
}

int nsl__nsys_slots_of(const col_map *cm) {
  if (!cm) return 1;
  return cm->kind == M_NVTX_TEXT || cm->kind == M_CC ? 2 : 1;
}

/* Whether a and b read the same single nsys column in every table (pid and
 * tid both decode globalTid): the second one reads the first one's slot,
 * and SQLite decodes the column once a row. */
int nsl__nsys_same_source(const col_map *a, const col_map *b) {
  if (!a || !b || nsl__nsys_slots_of(a) != 1 || nsl__nsys_slots_of(b) != 1 || a->kind == M_SOURCE ||
      b->kind == M_SOURCE)
    return 0;
  for (int i = 0; i < 4; i++) {
    if (!a->src[i] != !b->src[i]) return 0;
    if (!a->src[i]) return 1;
    if (strcmp(a->src[i], b->src[i]) != 0) return 0;
  }
  return 1;
}

/* Whether the loads of m filter NVTX event types in C rather than in SQL: a
 * WHERE on eventType cost a quarter of the scan of NVTX_EVENTS, and the loader
 * reads the column anyway.  Counts keep the WHERE. */
int nsl__nsys_types_in_c(nsys_src *s, const table_map *m) {
  table_info *t = nsl__nsys_find_table(s, m->sources[0]);
  nsl_error ignored;
  return m->where && strcmp(m->model, "nvtx") == 0 && t && nsl__nsys_load_columns(s, t, &ignored) == NSL_OK &&
         nsl__nsys_has_column(t, "eventType");
}

/* Appends the SELECT of source k of m for the output columns and the extras.
 * nvtx_domains: the WHERE keeps domain-create events too; in_c: no WHERE on
 * the event types (see nsl__nsys_types_in_c); rowid_range: only rows with rowid in
 * [?1, ?2].  *ncols: how many result columns it has (c0, c1, ...). */
nsl_status nsl__nsys_build_select(nsys_src *s, const table_map *m, int k, const out_col *cols, int n, int nvtx_domains,
                                  int in_c, int extras, int rowid_range, nsl__text *b, int *ncols_out, nsl_error *err) {
  table_info *t = nsl__nsys_find_table(s, m->sources[k]);
  nsl_status rc = nsl__nsys_load_columns(s, t, err);
  if (rc != NSL_OK) return rc;
  nsl__text_add(b, "SELECT ");
  int first = 1, ncols = 0;
  for (int j = 0; j < n; j++) {
    const col_map *cm = cols[j].map;
    if (cols[j].shared) continue;
    for (int w = 0; w < nsl__nsys_slots_of(cm); w++) {
      if (!first) nsl__text_add(b, ", ");
      first = 0;
      const char *c = NULL;
      if (cm && cm->kind == M_SOURCE) {
        char num[16];
        snprintf(num, sizeof num, "%d", k);
        nsl__text_add(b, num);
      } else {
        if (cm) c = pick_column(t, cm, w);
        if (!c && cm && cm->required)
          return nsl_error_set(err, NSL_ERR_FORMAT, "'%s': table %s has no column '%s' (needed for %s.%s)", s->label,
                               m->sources[k], cm->src[0], m->model, cm->model);
        if (c) sb_ident(b, c);
        else nsl__text_add(b, "NULL");
      }
      sb_alias(b, ncols++);
    }
  }
  {
    const char *extra[] = {"eventType", "text", "textId"};
    for (int w = 0; w < 3; w++) {
      if (!(extras & (w == 0 ? EXTRA_TYPE : EXTRA_TEXT))) continue;
      nsl__text_add(b, first ? "" : ", ");
      first = 0;
      if (nsl__nsys_has_column(t, extra[w])) sb_ident(b, extra[w]);
      else nsl__text_add(b, "NULL");
      sb_alias(b, ncols++);
    }
  }
  if (m->extra) {
    nsl__text_add(b, first ? "" : ", ");
    nsl__text_add(b, m->extra);
    sb_alias(b, ncols++);
    first = 0;
  }
  if (first) {
    nsl__text_add(b, "1");
    sb_alias(b, ncols++);
  }
  nsl__text_add(b, " FROM ");
  sb_ident(b, m->sources[k]);
  int where = m->where && !in_c;
  if (where) {
    nsl__text_add(b, " WHERE (");
    nsl__text_add(b, nvtx_domains ? NSL__NVTX_RANGE_OR_DOMAIN_TYPES : m->where);
    nsl__text_add(b, ")");
  }
  if (rowid_range) nsl__text_add(b, where ? " AND rowid BETWEEN ?1 AND ?2" : " WHERE rowid BETWEEN ?1 AND ?2");
  *ncols_out = ncols;
  if (m->group_by) {
    nsl__text_add(b, " GROUP BY ");
    nsl__text_add(b, m->group_by);
  }
  return NSL_OK;
}

/* The full statement for m: the SELECT of every source present (*ncols:
 * the result columns of each). */
nsl_status nsl__nsys_build_statement(nsys_src *s, const table_map *m, const out_col *cols, int n, int nvtx_domains,
                                     int in_c, int extras, nsl__text *b, int *ncols, nsl_error *err) {
  int any = 0;
  for (int k = 0; k < 4 && m->sources[k]; k++) {
    if (!nsl__nsys_find_table(s, m->sources[k])) continue;
    if (any) nsl__text_add(b, m->distinct ? " UNION " : " UNION ALL ");
    nsl_status rc = nsl__nsys_build_select(s, m, k, cols, n, nvtx_domains, in_c, extras, 0, b, ncols, err);
    if (rc != NSL_OK) return rc;
    any = 1;
  }
  if (b->oom) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  return NSL_OK;
}

/* The smallest (fn "min") or largest ("max") rowid of table t into *out: 1;
 * 0 when t is empty, -1 when the query fails.  One aggregate per query: SQLite
 * answers a lone min(rowid) or max(rowid) from one end of the b-tree, but
 * both in one SELECT scan the whole table (2 s on 8 M NVTX rows). */
int nsl__nsys_rowid_end(nsys_src *s, const char *t, const char *fn, int64_t *out) {
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT %s(rowid) FROM \"%s\"", fn, t);
  sqlite3_stmt *st = NULL;
  int ok = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW ? 0 : -1;
  if (ok == 0 && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
    *out = sqlite3_column_int64(st, 0);
    ok = 1;
  }
  sqlite3_finalize(st);
  return ok;
}

/* An upper estimate of the rows of m (max rowid of each source), bounded by
 * what the database's size can hold; at least 16. */
int64_t nsl__nsys_estimate_rows(nsys_src *s, const table_map *m) {
  int64_t total = 0;
  if (m->distinct || m->group_by) return 16;   /* few rows (devices): grow if needed */
  for (int k = 0; k < 4 && m->sources[k]; k++) {
    int64_t hi = 0;
    if (nsl__nsys_find_table(s, m->sources[k]) && nsl__nsys_rowid_end(s, m->sources[k], "max", &hi) > 0 && hi > 0)
      total += hi;
  }
  int64_t bound = s->db_bytes / 2 + 16;   /* a row takes at least a few bytes of a page */
  if (total > bound) total = bound;
  return total < 16 ? 16 : total;
}
