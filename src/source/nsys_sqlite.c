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
 * nsys_schema.c. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "core/model.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "core/text.h"
#include "nsl/nsl.h"
#include "source/nsys_schema.h"
#include "source/nsys_sqlite.h"

/* ---- the source ---------------------------------------------------------- */

typedef struct table_info {
  char *name;
  int loaded;          /* columns read */
  int ncols;
  char **cols;
} table_info;

struct nsys_src {
  sqlite3 *db;
  char *label;          /* the path or bundle member, for messages */
  char *name, *host;    /* the report's name and host (nsl_report_info points at them) */
  int64_t db_bytes;
  int ntables;
  table_info *tables;
  /* StringIds, read once */
  int strings_state;    /* 0 not read, 1 read */
  int64_t nstr;
  int64_t *str_id;      /* sorted ids */
  int64_t *str_off;     /* into str_data */
  int32_t *str_len;
  char *str_data;
  int32_t *dense;       /* id -> index (or -1) when ids are dense, else NULL */
  int64_t ndense;
  /* local index -> id in map_dict (-2: not interned yet); map_api: the same
   * for API names without their version suffix */
  nsl_dict *map_dict;
  int32_t *map, *map_api;
  void *image;          /* the image of an in-memory source (malloc), freed after the database is closed */
  char *uri;            /* file: URI of an export on disk (parallel scans open it again); NULL for images */
};
typedef struct nsys_src nsys_src;

/* The error of SQLite result rc while reading `what` on connection db (the
 * source's own, or a parallel part's). */
static nsl_status sql_error_on(nsys_src *s, sqlite3 *db, int rc, const char *what, nsl_error *err) {
  int prim = rc & 0xff;
  if (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB || prim == SQLITE_IOERR)
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is truncated or corrupt: reading %s: %s", s->label, what,
                         sqlite3_errstr(rc));
  if (prim == SQLITE_NOMEM) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading '%s' (%s)", s->label, what);
  return nsl_error_set(err, NSL_ERR_FORMAT, "'%s': reading %s: %s", s->label, what,
                       db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

static nsl_status sql_error(nsys_src *s, int rc, const char *what, nsl_error *err) {
  return sql_error_on(s, s->db, rc, what, err);
}

static table_info *find_table(nsys_src *s, const char *name) {
  for (int i = 0; i < s->ntables; i++)
    if (strcmp(s->tables[i].name, name) == 0) return &s->tables[i];
  return NULL;
}

/* Reads the column names of t once (PRAGMA table_info). */
static nsl_status load_columns(nsys_src *s, table_info *t, nsl_error *err) {
  if (t->loaded) return NSL_OK;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(s->db, "SELECT name FROM pragma_table_info(?1)", -1, &st, NULL);
  if (rc != SQLITE_OK) return sql_error(s, rc, "the schema", err);
  sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
  nsl_status out = NSL_OK;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *c = (const char *)sqlite3_column_text(st, 0);
    char **cols = realloc(t->cols, (size_t)(t->ncols + 1) * sizeof *cols);
    if (!cols || !c) {
      if (cols) t->cols = cols;
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading the schema of '%s'", s->label);
      break;
    }
    t->cols = cols;
    if (!(t->cols[t->ncols] = strdup(c))) {
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading the schema of '%s'", s->label);
      break;
    }
    t->ncols++;
  }
  if (out == NSL_OK && rc != SQLITE_DONE) out = sql_error(s, rc, "the schema", err);
  sqlite3_finalize(st);
  if (out == NSL_OK) t->loaded = 1;
  return out;
}

static int has_column(const table_info *t, const char *col) {
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
static nsl_status pick_map(nsys_src *s, const char *name, const table_map **out, nsl_error *err) {
  *out = NULL;
  for (const table_map *m = nsl__nsys_maps; m->model; m++) {
    if (strcmp(m->model, name) != 0) continue;
    table_info *t = NULL;
    for (int k = 0; k < 4 && m->sources[k] && !t; k++) t = find_table(s, m->sources[k]);
    if (!t) continue;
    if (m->require_col) {
      nsl_status rc = load_columns(s, t, err);
      if (rc != NSL_OK) return rc;
      if (!has_column(t, m->require_col)) continue;
    }
    if (m->need_rows && !has_rows(s, t)) continue;
    *out = m;
    return NSL_OK;
  }
  return NSL_OK;
}

/* ---- StringIds ----------------------------------------------------------- */

/* Frees what a read of StringIds holds and marks it unread, so that a read
 * that failed part-way leaves no half-set state behind (the next load reads
 * again and meets the same error, instead of using arrays never allocated). */
static void strings_free(nsys_src *s) {
  free(s->str_id);
  free(s->str_off);
  free(s->str_len);
  free(s->str_data);
  free(s->dense);
  free(s->map);
  free(s->map_api);
  s->str_id = s->str_off = NULL;
  s->str_len = s->dense = s->map = s->map_api = NULL;
  s->str_data = NULL;
  s->nstr = s->ndense = 0;
  s->strings_state = 0;
}

/* Reads StringIds once; marked read only when every array is in place. */
static nsl_status load_strings(nsys_src *s, nsl_error *err) {
  if (s->strings_state) return NSL_OK;
  if (!find_table(s, "StringIds")) {   /* no strings: every id resolves to NULL */
    s->strings_state = 1;
    return NSL_OK;
  }
  sqlite3_stmt *st = NULL;
  int64_t cap = 0, dcap = 0, dlen = 0;
  nsl_status out = NSL_OK;
  int rc = sqlite3_prepare_v2(s->db, "SELECT id, value FROM StringIds", -1, &st, NULL);
  if (rc != SQLITE_OK) return sql_error(s, rc, "StringIds", err);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER) continue;
    int64_t id = sqlite3_column_int64(st, 0);
    const char *v = (const char *)sqlite3_column_text(st, 1);
    int len = sqlite3_column_bytes(st, 1);
    if (!v) continue;
    if (s->nstr == cap) {
      int64_t ncap = cap ? cap * 2 : 1024;
      int64_t *ids = realloc(s->str_id, (size_t)ncap * sizeof *ids);
      if (ids) s->str_id = ids;
      int64_t *offs = realloc(s->str_off, (size_t)ncap * sizeof *offs);
      if (offs) s->str_off = offs;
      int32_t *lens = realloc(s->str_len, (size_t)ncap * sizeof *lens);
      if (lens) s->str_len = lens;
      if (!ids || !offs || !lens) goto nomem;
      cap = ncap;
    }
    if (dlen + len + 1 > dcap) {
      int64_t ncap = dcap ? dcap * 2 : 65536;
      while (ncap < dlen + len + 1) ncap *= 2;
      char *d = realloc(s->str_data, (size_t)ncap);
      if (!d) goto nomem;
      s->str_data = d;
      dcap = ncap;
    }
    memcpy(s->str_data + dlen, v, (size_t)len);
    s->str_data[dlen + len] = '\0';
    s->str_id[s->nstr] = id;
    s->str_off[s->nstr] = dlen;
    s->str_len[s->nstr] = len;
    s->nstr++;
    dlen += len + 1;
  }
  if (rc != SQLITE_DONE) {
    out = sql_error(s, rc, "StringIds", err);
    goto done;
  }
  /* ids are the rowid: ascending.  Dense ids get a direct index. */
  int sorted = 1;
  for (int64_t i = 1; i < s->nstr; i++) sorted &= s->str_id[i - 1] < s->str_id[i];
  if (!sorted) {
    out = nsl_error_set(err, NSL_ERR_FORMAT, "'%s': StringIds ids are not unique and ascending", s->label);
    goto done;
  }
  if (s->nstr > 0 && s->str_id[0] >= 0 && s->str_id[s->nstr - 1] < 2 * s->nstr + 4096) {
    s->ndense = s->str_id[s->nstr - 1] + 1;
    if (!(s->dense = malloc((size_t)s->ndense * sizeof *s->dense))) goto nomem;
    for (int64_t i = 0; i < s->ndense; i++) s->dense[i] = -1;
    for (int64_t i = 0; i < s->nstr; i++) s->dense[s->str_id[i]] = (int32_t)i;
  }
  if (s->nstr > 0 && (!(s->map = malloc((size_t)s->nstr * sizeof *s->map)) ||
                      !(s->map_api = malloc((size_t)s->nstr * sizeof *s->map_api))))
    goto nomem;
  goto done;
nomem:
  out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading StringIds of '%s'", s->label);
done:
  sqlite3_finalize(st);
  if (out == NSL_OK) s->strings_state = 1;
  else strings_free(s);
  return out;
}

/* Index of string id in the local arrays, or -1. */
static int64_t string_index(const nsys_src *s, int64_t id) {
  if (s->dense) return id >= 0 && id < s->ndense ? s->dense[id] : -1;
  int64_t lo = 0, hi = s->nstr - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (s->str_id[mid] == id) return mid;
    if (s->str_id[mid] < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* Makes dict the target of the local-id map for one load call (the map is
 * not kept across calls: the dictionary may be a short-lived one of a
 * parallel load, and re-interning the strings a load uses is cheap). */
static void use_dict(nsys_src *s, nsl_dict *dict) {
  s->map_dict = dict;
  for (int64_t i = 0; i < s->nstr; i++) s->map[i] = s->map_api[i] = -2;
}

/* Dict id of the StringIds string at index i (interning on first use); -3
 * on out of memory. */
static int32_t index_dict_id(nsys_src *s, int64_t i) {
  if (s->map[i] == -2) {
    int32_t d = nsl_dict_intern(s->map_dict, s->str_data + s->str_off[i], (size_t)s->str_len[i]);
    if (d < 0) return -3;
    s->map[i] = d;
  }
  return s->map[i];
}

/* The same as a CUDA API name: "cudaLaunchKernel_v7000" gives
 * "cudaLaunchKernel", the rule of nsys's own reports (a "_v" six characters
 * from the end). */
static int32_t index_api_id(nsys_src *s, int64_t i) {
  if (s->map_api[i] == -2) {
    const char *v = s->str_data + s->str_off[i];
    size_t len = (size_t)s->str_len[i];
    if (len >= 6 && v[len - 6] == '_' && v[len - 5] == 'v') len -= 6;
    int32_t d = nsl_dict_intern(s->map_dict, v, len);
    if (d < 0) return -3;
    s->map_api[i] = d;
  }
  return s->map_api[i];
}

/* Dict id of StringIds id (plain, or as an API name); -1 for unknown ids, -3
 * on out of memory. */
static int32_t string_dict_id(nsys_src *s, int64_t id) {
  int64_t i = string_index(s, id);
  return i < 0 ? -1 : index_dict_id(s, i);
}

static int32_t api_name_dict_id(nsys_src *s, int64_t id) {
  int64_t i = string_index(s, id);
  return i < 0 ? -1 : index_api_id(s, i);
}

/* ---- enum values --------------------------------------------------------- */

/* Values -> dictionary ids: an enum's names, the NVTX domain names met in a
 * scan (domain-create events). */
typedef struct enum_map {
  int n, cap;
  int64_t *ids;
  int32_t *dict_ids;
} enum_map;

static void enum_map_free(enum_map *e) {
  free(e->ids);
  free(e->dict_ids);
  memset(e, 0, sizeof *e);
}

static int enum_map_add(enum_map *e, int64_t id, int32_t did) {
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
 * value when known, else the name in lower case. */
static int32_t intern_enum_name(nsl_dict *dict, const enum_def *en, const char *name) {
  size_t pl = strlen(en->prefix);
  if (strncmp(name, en->prefix, pl) == 0) name += pl;
  for (const enum_item *it = en->items; it->nsys; it++)
    if (strcmp(it->nsys, name) == 0) return nsl_dict_intern(dict, it->value, strlen(it->value));
  char buf[128];
  size_t n = 0;
  for (; name[n] && n + 1 < sizeof buf; n++) buf[n] = (char)tolower((unsigned char)name[n]);
  return nsl_dict_intern(dict, buf, n);
}

/* Reads the values of en: from the export's ENUM table when it has one,
 * else the built-in ones. */
static nsl_status build_enum(nsys_src *s, const enum_def *en, nsl_dict *dict, enum_map *e, nsl_error *err) {
  table_info *t = find_table(s, en->table);
  if (t) {
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT id, name FROM \"%s\"", en->table);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (!name || sqlite3_column_type(st, 0) != SQLITE_INTEGER) continue;
        int32_t did = intern_enum_name(dict, en, name);
        if (did < 0 || enum_map_add(e, sqlite3_column_int64(st, 0), did) < 0) {
          sqlite3_finalize(st);
          return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
        }
      }
      sqlite3_finalize(st);
      if (rc == SQLITE_DONE && e->n > 0) return NSL_OK;
      if (rc != SQLITE_DONE) return sql_error(s, rc, en->table, err);
    } else if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) {
      return sql_error(s, rc, en->table, err);
    }
    /* an ENUM table of another shape: fall back to the built-in values */
    e->n = 0;
  }
  for (const enum_item *it = en->items; it->nsys; it++) {
    int32_t did = nsl_dict_intern(dict, it->value, strlen(it->value));
    if (did < 0 || enum_map_add(e, it->id, did) < 0) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  return NSL_OK;
}

/* Dict id of enum value v: its name, or the number itself when unnamed. */
static int32_t enum_value(enum_map *e, nsl_dict *dict, int64_t v) {
  for (int i = 0; i < e->n; i++)
    if (e->ids[i] == v) return e->dict_ids[i];
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRId64, v);
  int32_t did = nsl_dict_intern(dict, buf, (size_t)n);
  if (did >= 0 && enum_map_add(e, v, did) < 0) return -3;
  return did < 0 ? -3 : did;
}

/* ---- building the SELECT ------------------------------------------------- */

typedef nsl__text sbuf;   /* core/text.h */

static void sb_add(sbuf *b, const char *s) { nsl__text_add(b, s); }

static void sb_ident(sbuf *b, const char *id) {   /* "id" (nsys names have no quotes) */
  sb_add(b, "\"");
  sb_add(b, id);
  sb_add(b, "\"");
}

/* " AS cI": result column i of every SELECT the loader builds, so that the
 * reading query (see scan_rows) can name them. */
static void sb_alias(sbuf *b, int i) {
  char name[24];
  snprintf(name, sizeof name, " AS c%d", i);
  sb_add(b, name);
}

/* One requested output column. */
typedef struct out_col {
  const col_map *map;    /* NULL: not mapped, all NULL */
  nsl_type type;
  int is_time;
  int slot;              /* first result column of the SELECT */
  int shared;            /* reads the slot of an earlier column (same nsys columns) */
  enum_map en;
} out_col;

/* The first candidate column of cm present in t, or NULL. */
static const char *pick_column(const table_info *t, const col_map *cm, int which) {
  if (cm->kind == M_NVTX_TEXT || cm->kind == M_CC) {   /* two fixed columns */
    const char *c = cm->src[which];
    return c && has_column(t, c) ? c : NULL;
  }
  for (int i = 0; i < 4 && cm->src[i]; i++)
    if (has_column(t, cm->src[i])) return cm->src[i];
  return NULL;
}

static int slots_of(const col_map *cm) {
  if (!cm) return 1;
  return cm->kind == M_NVTX_TEXT || cm->kind == M_CC ? 2 : 1;
}

/* Whether a and b read the same single nsys column in every table (pid and
 * tid both decode globalTid): the second one reads the first one's slot,
 * and SQLite decodes the column once a row. */
static int same_source(const col_map *a, const col_map *b) {
  if (!a || !b || slots_of(a) != 1 || slots_of(b) != 1 || a->kind == M_SOURCE || b->kind == M_SOURCE) return 0;
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
static int types_in_c(nsys_src *s, const table_map *m) {
  table_info *t = find_table(s, m->sources[0]);
  nsl_error ignored;
  return m->where && strcmp(m->model, "nvtx") == 0 && t && load_columns(s, t, &ignored) == NSL_OK &&
         has_column(t, "eventType");
}

/* Extra result columns after the output columns (NVTX: the event type, for
 * the filter in C and domain-create events; the text, for domain names),
 * when no output column already reads them. */
#define EXTRA_TYPE 1   /* eventType */
#define EXTRA_TEXT 2   /* text, textId */

/* Appends the SELECT of source k of m for the output columns and the extras.
 * nvtx_domains: the WHERE keeps domain-create events too; in_c: no WHERE on
 * the event types (see types_in_c); rowid_range: only rows with rowid in
 * [?1, ?2].  *ncols: how many result columns it has (c0, c1, ...). */
static nsl_status build_select(nsys_src *s, const table_map *m, int k, const out_col *cols, int n,
                               int nvtx_domains, int in_c, int extras, int rowid_range, sbuf *b, int *ncols_out,
                               nsl_error *err) {
  table_info *t = find_table(s, m->sources[k]);
  nsl_status rc = load_columns(s, t, err);
  if (rc != NSL_OK) return rc;
  sb_add(b, "SELECT ");
  int first = 1, ncols = 0;
  for (int j = 0; j < n; j++) {
    const col_map *cm = cols[j].map;
    if (cols[j].shared) continue;
    for (int w = 0; w < slots_of(cm); w++) {
      if (!first) sb_add(b, ", ");
      first = 0;
      const char *c = NULL;
      if (cm && cm->kind == M_SOURCE) {
        char num[16];
        snprintf(num, sizeof num, "%d", k);
        sb_add(b, num);
      } else {
        if (cm) c = pick_column(t, cm, w);
        if (!c && cm && cm->required)
          return nsl_error_set(err, NSL_ERR_FORMAT, "'%s': table %s has no column '%s' (needed for %s.%s)", s->label,
                               m->sources[k], cm->src[0], m->model, cm->model);
        if (c) sb_ident(b, c);
        else sb_add(b, "NULL");
      }
      sb_alias(b, ncols++);
    }
  }
  {
    const char *extra[] = {"eventType", "text", "textId"};
    for (int w = 0; w < 3; w++) {
      if (!(extras & (w == 0 ? EXTRA_TYPE : EXTRA_TEXT))) continue;
      sb_add(b, first ? "" : ", ");
      first = 0;
      if (has_column(t, extra[w])) sb_ident(b, extra[w]);
      else sb_add(b, "NULL");
      sb_alias(b, ncols++);
    }
  }
  if (m->extra) {
    sb_add(b, first ? "" : ", ");
    sb_add(b, m->extra);
    sb_alias(b, ncols++);
    first = 0;
  }
  if (first) {
    sb_add(b, "1");
    sb_alias(b, ncols++);
  }
  sb_add(b, " FROM ");
  sb_ident(b, m->sources[k]);
  int where = m->where && !in_c;
  if (where) {
    sb_add(b, " WHERE (");
    sb_add(b, nvtx_domains ? NSL__NVTX_RANGE_OR_DOMAIN_TYPES : m->where);
    sb_add(b, ")");
  }
  if (rowid_range) sb_add(b, where ? " AND rowid BETWEEN ?1 AND ?2" : " WHERE rowid BETWEEN ?1 AND ?2");
  *ncols_out = ncols;
  if (m->group_by) {
    sb_add(b, " GROUP BY ");
    sb_add(b, m->group_by);
  }
  return NSL_OK;
}

/* The full statement for m: the SELECT of every source present (*ncols:
 * the result columns of each). */
static nsl_status build_statement(nsys_src *s, const table_map *m, const out_col *cols, int n, int nvtx_domains,
                                  int in_c, int extras, sbuf *b, int *ncols, nsl_error *err) {
  int any = 0;
  for (int k = 0; k < 4 && m->sources[k]; k++) {
    if (!find_table(s, m->sources[k])) continue;
    if (any) sb_add(b, m->distinct ? " UNION " : " UNION ALL ");
    nsl_status rc = build_select(s, m, k, cols, n, nvtx_domains, in_c, extras, 0, b, ncols, err);
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
static int rowid_end(nsys_src *s, const char *t, const char *fn, int64_t *out) {
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
static int64_t estimate_rows(nsys_src *s, const table_map *m) {
  int64_t total = 0;
  if (m->distinct || m->group_by) return 16;   /* few rows (devices): grow if needed */
  for (int k = 0; k < 4 && m->sources[k]; k++) {
    int64_t hi = 0;
    if (find_table(s, m->sources[k]) && rowid_end(s, m->sources[k], "max", &hi) > 0 && hi > 0) total += hi;
  }
  int64_t bound = s->db_bytes / 2 + 16;   /* a row takes at least a few bytes of a page */
  if (total > bound) total = bound;
  return total < 16 ? 16 : total;
}

/* ---- loading ------------------------------------------------------------- */

static nsl_status grow_columns(nsl_column **out, int n, int64_t cap) {
  for (int j = 0; j < n; j++)
    if (nsl_column_reserve(out[j], cap, NULL) != NSL_OK) return NSL_ERR_NOMEM;
  return NSL_OK;
}

/* The kind of NVTX event type t: 0 push_pop (59), 1 start_end (60), 2 mark
 * (34); -1 for the other types (the nvtx map's filter, nsys_schema.c). */
static int nvtx_kind_of(int64_t t) { return t == 59 ? 0 : t == 60 ? 1 : t == 34 ? 2 : -1; }

static void put_int(nsl_column *c, int64_t row, sqlite3_value *v, int64_t add) {
  switch (c->type) {
  case NSL_I64: nsl_i64(c)[row] = v ? sqlite3_value_int64(v) + add : NSL_NULL_I64; break;
  case NSL_I32: nsl_i32(c)[row] = v ? (int32_t)(sqlite3_value_int64(v) + add) : NSL_NULL_I32; break;
  case NSL_F64: nsl_f64(c)[row] = v ? sqlite3_value_double(v) + (double)add : (double)NAN; break;
  case NSL_BOOL: nsl_bool(c)[row] = v && sqlite3_value_int64(v) != 0; break;
  case NSL_STR: nsl_i32(c)[row] = -1; break;
  }
}

static void put_i64(nsl_column *c, int64_t row, int64_t v) {   /* v may be NSL_NULL_I64 */
  switch (c->type) {
  case NSL_I64: nsl_i64(c)[row] = v; break;
  case NSL_I32: nsl_i32(c)[row] = v == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)v; break;
  case NSL_F64: nsl_f64(c)[row] = v == NSL_NULL_I64 ? (double)NAN : (double)v; break;
  case NSL_BOOL: nsl_bool(c)[row] = v != NSL_NULL_I64 && v != 0; break;
  case NSL_STR: nsl_i32(c)[row] = -1; break;
  }
}

static void put_str(nsl_column *c, int64_t row, int32_t did) {   /* a string id into a non-string column: NULL */
  if (c->type == NSL_STR) nsl_i32(c)[row] = did;
  else put_i64(c, row, NSL_NULL_I64);
}

/* Interns the text of value v into dict (NULL gives -1; -3 out of memory). */
static int32_t text_id(nsl_dict *dict, sqlite3_value *v) {
  const char *t = v ? (const char *)sqlite3_value_text(v) : NULL;
  if (!t) return -1;
  int32_t d = nsl_dict_intern(dict, t, (size_t)sqlite3_value_bytes(v));
  return d < 0 ? -3 : d;
}

/* One load: what all its parts share, read-only while they run. */
typedef struct scan {
  nsys_src *s;
  const table_map *m;
  const char *name;
  out_col *cols;
  int n, nvtx_domains, dslot;
  int type_slot, text_slot; /* NVTX: eventType; text (textId next to it) */
  int text_col;             /* the first text column (M_TEXT, M_NVTX_TEXT), or -1 */
  int types_in_c;           /* rows of NVTX event types without a kind (nvtx_kind_of) are skipped here */
  int64_t time_offset;
  const char *sql;          /* the SELECT of a serial scan (parts have their own) */
  int ncols;                /* result columns of each SELECT: c0, c1, ... (sb_alias) */
  nsl_column **out;
  nsl_dict *dict;           /* the load's dictionary */
  const void *image;        /* the database image of an in-memory source (parallel scans open it again) */
  int64_t image_size;
} scan;

/* A part of a load: a rowid range stepped on its own connection, writing the
 * rows [row0, row0 + rows) of the output columns.  A deferred part (one of a
 * parallel scan) leaves the load's dictionary alone: it interns text into its
 * own and keeps StringIds references as DEFER(index), and merge_part maps
 * both to the load's dictionary afterwards. */
typedef struct scan_part {
  scan *sc;
  char *sql;                /* its own SELECT (one source, "rowid BETWEEN ?1 AND ?2"), or NULL: sc->sql */
  sqlite3 *db;              /* NULL: the source's own connection */
  nsl_dict *dict;           /* where strings go (the load's, or the part's own) */
  int deferred;
  int32_t source_ids[4], kind_ids[3];   /* in dict */
  int32_t **enum_ids;       /* deferred: per column, its enum's values in dict (-2: not yet) */
  int64_t lo, hi;           /* rowid range; hi < lo: the whole table */
  int64_t row0, rows, cap;  /* cap: room from row0 (a serial part grows the columns) */
  enum_map dom;             /* NVTX domain names: dict ids (deferred: DEFER ids too) */
  int fallback;             /* deferred: a value the encoding cannot carry; redo serially */
  nsl_status rc;
  nsl_error err;
} scan_part;

#define DEFER(i) (-(int32_t)(i) - 4)   /* a StringIds index (0 <= i <= INT32_MAX - 4) */
#define DEFERRED_INDEX(v) (-(int64_t)(v) - 4)

/* The id of StringIds id sid (api: as a CUDA API name) for part p: interned
 * now, or deferred.  -1 unknown, -3 out of memory. */
static int32_t part_string(scan_part *p, int64_t sid, int api) {
  nsys_src *s = p->sc->s;
  if (!p->deferred) return api ? api_name_dict_id(s, sid) : string_dict_id(s, sid);
  int64_t i = string_index(s, sid);
  if (i < 0) return -1;
  if (i > (int64_t)INT32_MAX - 4) {
    p->fallback = 1;
    return -1;
  }
  return DEFER(i);
}

/* The id of enum value v of column j for part p; -3 out of memory. */
static int32_t part_enum(scan_part *p, int j, int64_t v) {
  enum_map *e = &p->sc->cols[j].en;
  if (!p->deferred) return enum_value(e, p->dict, v);
  for (int i = 0; i < e->n; i++)
    if (e->ids[i] == v) {
      int32_t *ids = p->enum_ids[j];
      if (ids[i] == -2) {   /* its name, from the load's dictionary (read-only while parts run) */
        const char *name = nsl_dict_str(p->sc->dict, e->dict_ids[i]);
        int32_t d = name ? nsl_dict_intern(p->dict, name, nsl_dict_strlen(p->sc->dict, e->dict_ids[i])) : -1;
        ids[i] = !name ? -1 : d < 0 ? -3 : d;
      }
      return ids[i] == -3 ? -3 : ids[i];
    }
  char buf[32];
  int len = snprintf(buf, sizeof buf, "%" PRId64, v);
  int32_t did = nsl_dict_intern(p->dict, buf, (size_t)len);
  return did < 0 ? -3 : did;
}

static nsl_status part_sql_error(scan_part *p, sqlite3 *db, int rc) {
  return sql_error_on(p->sc->s, db, rc, p->sc->m->sources[0], &p->err);
}

/* Texts are interned TEXT_LAG rows after they are read: the dictionary
 * entry of a text (prefetched when its row is read) and then the string it
 * points to (prefetched half-way) have time to arrive from memory.  Interning
 * at once stalled on both: the texts of 8 M NVTX rows spent more time
 * waiting there than in the rest of the row. */
#define TEXT_LAG 16

typedef struct text_lag {
  char *buf[TEXT_LAG];
  size_t cap[TEXT_LAG], len[TEXT_LAG];
  uint32_t hash[TEXT_LAG];
  int64_t row[TEXT_LAG];   /* -1: empty */
  int64_t pushed;
} text_lag;

static void lag_init(text_lag *q) {
  memset(q, 0, sizeof *q);
  for (int i = 0; i < TEXT_LAG; i++) q->row[i] = -1;
}

static void lag_free(text_lag *q) {
  for (int i = 0; i < TEXT_LAG; i++) free(q->buf[i]);
}

/* Interns queue entry i into column c; -1 out of memory. */
static int lag_pop(text_lag *q, int i, scan_part *p, nsl_column *c) {
  if (q->row[i] < 0) return 0;
  int32_t did = nsl_dict_intern_hashed(p->dict, q->buf[i], q->len[i], q->hash[i]);
  if (did < 0) return -1;
  put_str(c, q->row[i], did);
  q->row[i] = -1;
  return 0;
}

/* Queues text s (len bytes) of output row `row` of column c, interning the
 * entry it replaces; -1 out of memory. */
static int lag_push(text_lag *q, scan_part *p, nsl_column *c, int64_t row, const char *s, size_t len) {
  int i = (int)(q->pushed % TEXT_LAG);
  if (lag_pop(q, i, p, c) < 0) return -1;
  if (q->cap[i] < len + 1) {
    size_t cap = len + 1 > 64 ? len + 1 : 64;
    char *b = realloc(q->buf[i], cap);
    if (!b) return -1;
    q->buf[i] = b;
    q->cap[i] = cap;
  }
  memcpy(q->buf[i], s, len);
  q->buf[i][len] = '\0';
  q->len[i] = len;
  q->hash[i] = nsl_dict_hash(s, len);
  q->row[i] = row;
  nsl_dict_prefetch(p->dict, q->hash[i]);
  int half = (int)((q->pushed + TEXT_LAG / 2) % TEXT_LAG);   /* queued TEXT_LAG / 2 rows ago */
  if (q->row[half] >= 0) nsl_dict_prefetch_string(p->dict, q->hash[half]);
  q->pushed++;
  return 0;
}

/* Interns what is still queued, oldest first; -1 out of memory. */
static int lag_flush(text_lag *q, scan_part *p, nsl_column *c) {
  for (int64_t k = 0; k < TEXT_LAG; k++)
    if (lag_pop(q, (int)((q->pushed + k) % TEXT_LAG), p, c) < 0) return -1;
  return 0;
}

/* A result cell of the row being read (argv: its values), or NULL for SQL
 * NULL. */
static sqlite3_value *arg(sqlite3_value **argv, int i) {
  return sqlite3_value_type(argv[i]) == SQLITE_NULL ? NULL : argv[i];
}

/* An integer cell, or NSL_NULL_I64 for SQL NULL (the type is asked only
 * when the value reads 0). */
static int64_t arg_i64(sqlite3_value **argv, int i) {
  int64_t x = sqlite3_value_int64(argv[i]);
  return x == 0 && sqlite3_value_type(argv[i]) == SQLITE_NULL ? NSL_NULL_I64 : x;
}

/* One scan in progress: its part and the texts waiting to be interned. */
typedef struct row_reader {
  scan_part *p;
  text_lag lag;
  int full;   /* a deferred part met more rows than its range holds */
  int cancelled;   /* the task the load runs for was cancelled (nsl__cancelled) */
} row_reader;

/* Puts one result row (argv) into the part's output columns; 0, or -1 out
 * of memory, or 1 when a deferred part is full (cannot happen: its room is
 * its rowid range; the load is then redone serially), or 2 when the load
 * was cancelled (checked every 64k rows). */
static int put_row(row_reader *rr, sqlite3_value **argv) {
  scan_part *p = rr->p;
  scan *sc = p->sc;
  out_col *cols = sc->cols;
  nsl_column **out = sc->out;
  int64_t type = NSL_NULL_I64;   /* the NVTX event type, when read here */
  int typed = sc->nvtx_domains || sc->types_in_c;
  if (typed) {
    type = arg_i64(argv, sc->type_slot);
    if (sc->types_in_c && nvtx_kind_of(type) < 0 && !(sc->nvtx_domains && type == 75)) return 0;
    if (sc->nvtx_domains && type == 75) {   /* domain create: remember domainId -> name, emit nothing */
      int32_t did = text_id(p->dict, arg(argv, sc->text_slot));
      sqlite3_value *tid = arg(argv, sc->text_slot + 1);
      if (did == -1 && tid) did = part_string(p, sqlite3_value_int64(tid), 0);
      if (did == -3) return -1;
      sqlite3_value *dv = sc->dslot >= 0 ? arg(argv, sc->dslot) : NULL;
      if (dv && did != -1 && enum_map_add(&p->dom, sqlite3_value_int64(dv), did) < 0) return -1;
      return 0;
    }
  }
  if (p->rows == p->cap) {
    if (p->deferred) {
      p->fallback = 1;
      return 1;
    }
    int64_t cap = p->cap * 2;
    if (grow_columns(out, sc->n, p->row0 + cap) != NSL_OK) return -1;
    p->cap = cap;
  }
  int64_t row = p->row0 + p->rows;
  const char *txt = NULL;   /* the text of the first text column, queued (see text_lag) */
  if (sc->text_col >= 0) {
    sqlite3_value *tv = arg(argv, cols[sc->text_col].slot);
    if (tv && (txt = (const char *)sqlite3_value_text(tv)) &&
        lag_push(&rr->lag, p, out[sc->text_col], row, txt, (size_t)sqlite3_value_bytes(tv)) < 0)
      return -1;
  }
  for (int j = 0; j < sc->n; j++) {
    const col_map *cm = cols[j].map;
    nsl_column *c = out[j];
    int sl = cols[j].slot;
    int32_t did;
    int64_t x;
    sqlite3_value *v;
    if (!cm) {
      put_int(c, row, NULL, 0);   /* the slot is NULL */
      continue;
    }
    switch (cm->kind) {
    case M_INT:
      if (c->type == NSL_I64) {   /* the common case */
        x = arg_i64(argv, sl);
        nsl_i64(c)[row] = x == NSL_NULL_I64 || !cols[j].is_time ? x : x + sc->time_offset;
        break;
      }
      v = arg(argv, sl);
      put_int(c, row, v, cols[j].is_time ? sc->time_offset : 0);
      break;
    case M_PID:
    case M_TID: {
      x = arg_i64(argv, sl);
      x = x == NSL_NULL_I64 ? x : cm->kind == M_PID ? (x >> 24) & 0xFFFFFF : x & 0xFFFFFF;
      if (c->type == NSL_I64) nsl_i64(c)[row] = x;
      else put_i64(c, row, x);
      break;
    }
    case M_STR:
    case M_API_NAME:
      x = arg_i64(argv, sl);
      did = x != NSL_NULL_I64 ? part_string(p, x, cm->kind == M_API_NAME) : -1;
      if (did == -3) return -1;
      put_str(c, row, did);
      break;
    case M_TEXT:
    case M_NVTX_TEXT:
      if (j == sc->text_col) {
        if (txt) break;   /* queued: written when interned */
        did = -1;
      } else {
        did = text_id(p->dict, arg(argv, sl));
      }
      if (did == -3) return -1;
      if (cm->kind == M_TEXT) {
        put_str(c, row, did);
        break;
      }
      if (did == -1 && (v = arg(argv, sl + 1))) did = part_string(p, sqlite3_value_int64(v), 0);
      if (did == -3) return -1;
      put_str(c, row, did);
      break;
    case M_ENUM:
      x = arg_i64(argv, sl);
      did = x != NSL_NULL_I64 ? part_enum(p, j, x) : -1;
      if (did == -3) return -1;
      put_str(c, row, did);
      break;
    case M_CC: {
      sqlite3_value *major = arg(argv, sl), *minor = arg(argv, sl + 1);
      if (!major || !minor) did = -1;
      else {
        char buf[48];
        int len = snprintf(buf, sizeof buf, "%" PRId64 ".%" PRId64, (int64_t)sqlite3_value_int64(major),
                           (int64_t)sqlite3_value_int64(minor));
        if ((did = nsl_dict_intern(p->dict, buf, (size_t)len)) < 0) return -1;
      }
      put_str(c, row, did);
      break;
    }
    case M_SOURCE: {
      v = arg(argv, sl);
      int64_t k = v ? sqlite3_value_int64(v) : -1;
      put_str(c, row, k >= 0 && k < 4 ? p->source_ids[k] : -1);
      break;
    }
    case M_NVTX_DOMAIN: {   /* the raw id for now; names are known after the scan */
      x = arg_i64(argv, sl);
      if (c->type == NSL_STR) nsl_i32(c)[row] = x == NSL_NULL_I64 ? NSL_NULL_I32 : (int32_t)x;
      else put_i64(c, row, x);
      break;
    }
    case M_NVTX_KIND: {
      int kind = nvtx_kind_of(typed && sl == sc->type_slot ? type : arg_i64(argv, sl));
      put_str(c, row, kind >= 0 ? p->kind_ids[kind] : -1);
      break;
    }
    }
  }
  if ((++p->rows & 0xffff) == 0) {
    nsl__progress_add(0x10000);   /* what a front end shows of a long load */
    if (nsl__cancelled()) return 2;
  }
  return 0;
}

/* The rows reach put_row as the arguments of an aggregate function over the
 * SELECT, stepped once: a sqlite3_step and a call per result cell for every
 * row cost more than SQLite's own decoding of it. */
#define ROW_FUNCTION "nsl_load_row"

static void row_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  row_reader *rr = sqlite3_user_data(ctx);
  int rc = put_row(rr, argv);   /* after an error SQLite calls no more */
  if (rc < 0) sqlite3_result_error_nomem(ctx);
  else if (rc == 2) {
    rr->cancelled = 1;
    sqlite3_result_error(ctx, "cancelled", -1);
  } else if (rc > 0) {
    rr->full = 1;
    sqlite3_result_error(ctx, "part full", -1);
  }
}

static void row_final(sqlite3_context *ctx) { sqlite3_result_null(ctx); }

/* Reads the part's rows into the output columns; sets and returns p->rc. */
static nsl_status scan_rows(scan_part *p) {
  scan *sc = p->sc;
  sqlite3 *db = p->db ? p->db : sc->s->db;
  const char *select = p->sql ? p->sql : sc->sql;
  row_reader rr;
  memset(&rr, 0, sizeof rr);
  rr.p = p;
  lag_init(&rr.lag);
  sbuf b = {0};
  nsl_status rc = NSL_OK;
  /* SELECT nsl_load_row(c0, .., cN) FROM (the SELECT, which names its result
   * columns so: sb_alias) */
  int nc = sc->ncols, step;
  sqlite3_stmt *st = NULL;
  if (nc > sqlite3_limit(db, SQLITE_LIMIT_FUNCTION_ARG, -1)) {   /* 127: the model's widest load is ~30 */
    rc = nsl_error_set(&p->err, NSL_ERR_ARG, "loading %s of '%s': %d result columns, more than SQLite passes",
                       sc->name, sc->s->label, nc);
    goto done;
  }
  sb_add(&b, "SELECT " ROW_FUNCTION "(");
  for (int i = 0; i < nc; i++) {
    char name[24];
    snprintf(name, sizeof name, "%sc%d", i ? ", " : "", i);
    sb_add(&b, name);
  }
  sb_add(&b, ") FROM (");
  sb_add(&b, select);
  sb_add(&b, ")");
  if (b.oom) goto nomem;
  step = sqlite3_create_function_v2(db, ROW_FUNCTION, nc, SQLITE_UTF8 | SQLITE_DIRECTONLY, &rr, NULL, row_step,
                                    row_final, NULL);
  if (step == SQLITE_OK) step = sqlite3_prepare_v2(db, b.s, -1, &st, NULL);
  if (step == SQLITE_OK && p->hi >= p->lo) {
    sqlite3_bind_int64(st, 1, p->lo);
    sqlite3_bind_int64(st, 2, p->hi);
  }
  if (step == SQLITE_OK) step = sqlite3_step(st);
  if (rr.full) goto done;   /* p->fallback is set: the load starts again, serially */
  if (rr.cancelled) {
    rc = nsl_error_set(&p->err, NSL_ERR_LIMIT, "loading %s of '%s' was cancelled", sc->name, sc->s->label);
    goto done;
  }
  if (step == SQLITE_NOMEM) goto nomem;
  if (step != SQLITE_ROW && step != SQLITE_DONE) {
    rc = part_sql_error(p, db, step);
    goto done;
  }
  if (lag_flush(&rr.lag, p, sc->text_col >= 0 ? sc->out[sc->text_col] : NULL) < 0) goto nomem;
  goto done;
nomem:
  rc = nsl_error_set(&p->err, NSL_ERR_NOMEM, "out of memory loading %s of '%s'", sc->name, sc->s->label);
done:
  sqlite3_finalize(st);
  sqlite3_create_function_v2(db, ROW_FUNCTION, nc, SQLITE_UTF8, NULL, NULL, NULL, NULL, NULL);   /* unregister */
  free(b.s);
  lag_free(&rr.lag);
  return p->rc = rc;
}

/* Interns the constant strings of part p (source labels, NVTX kinds) into its
 * dictionary; -1 out of memory. */
static int part_constants(scan_part *p) {
  static const char *const nvtx_kinds[3] = {"push_pop", "start_end", "mark"};
  scan *sc = p->sc;
  for (int k = 0; k < 4; k++) p->source_ids[k] = -1;
  for (int k = 0; k < 3; k++) p->kind_ids[k] = -1;
  for (int j = 0; j < sc->n; j++) {
    if (!sc->cols[j].map) continue;
    if (sc->cols[j].map->kind == M_SOURCE)
      for (int k = 0; k < 4; k++)
        if (sc->m->labels[k] && (p->source_ids[k] = nsl_dict_intern(p->dict, sc->m->labels[k], strlen(sc->m->labels[k]))) < 0)
          return -1;
    if (sc->cols[j].map->kind == M_NVTX_KIND)
      for (int k = 0; k < 3; k++)
        if ((p->kind_ids[k] = nsl_dict_intern(p->dict, nvtx_kinds[k], strlen(nvtx_kinds[k]))) < 0) return -1;
  }
  return 0;
}

static void part_free(scan_part *p) {
  free(p->sql);
  p->sql = NULL;
  if (p->db) sqlite3_close_v2(p->db);
  p->db = NULL;
  if (p->deferred) nsl_dict_release(p->dict);
  p->dict = NULL;
  if (p->enum_ids)
    for (int j = 0; j < p->sc->n; j++) free(p->enum_ids[j]);
  free(p->enum_ids);
  p->enum_ids = NULL;
  enum_map_free(&p->dom);
}

/* A parallel part's job: its own connection, dictionary and rows. */
static void part_job(void *ctx, int i) {
  scan_part *p = (scan_part *)ctx + i;
  scan *sc = p->sc;
  nsys_src *s = sc->s;
  int src;
  if (sc->image) {
    src = sqlite3_open_v2(":memory:", &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (src == SQLITE_OK)   /* borrowed, read-only: the source's own connection owns the image */
      src = sqlite3_deserialize(p->db, "main", (unsigned char *)sc->image, sc->image_size, sc->image_size,
                                SQLITE_DESERIALIZE_READONLY);
  } else {
    src = sqlite3_open_v2(s->uri, &p->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
  }
  if (src != SQLITE_OK) {
    p->fallback = 1;   /* no second connection: the serial scan will do */
    return;
  }
  scan_rows(p);
}

/* Maps the strings of deferred part p to the load's dictionary and moves its
 * rows to start at row `at`; its domain names join dom. */
static nsl_status merge_part(scan_part *p, int64_t at, enum_map *dom, nsl_error *err) {
  scan *sc = p->sc;
  nsys_src *s = sc->s;
  int32_t nlocal = nsl_dict_size(p->dict);
  int32_t *lmap = malloc((size_t)(nlocal > 0 ? nlocal : 1) * sizeof *lmap);
  if (!lmap) goto nomem;
  for (int32_t i = 0; i < nlocal; i++)
    if ((lmap[i] = nsl_dict_intern(sc->dict, nsl_dict_str(p->dict, i), nsl_dict_strlen(p->dict, i))) < 0) goto nomem;
  for (int j = 0; j < sc->n; j++) {
    const col_map *cm = sc->cols[j].map;
    nsl_column *c = sc->out[j];
    if (cm && c->type == NSL_STR && cm->kind != M_NVTX_DOMAIN) {
      int api = cm->kind == M_API_NAME;
      int32_t *v = nsl_i32(c) + p->row0;
      for (int64_t r = 0; r < p->rows; r++) {
        int32_t x = v[r];
        if (x >= 0) v[r] = lmap[x];
        else if (x <= -4) {
          int32_t d = api ? index_api_id(s, DEFERRED_INDEX(x)) : index_dict_id(s, DEFERRED_INDEX(x));
          if (d == -3) goto nomem;
          v[r] = d;
        }
      }
    }
    if (at != p->row0 && p->rows > 0) {
      size_t w = nsl_type_size(c->type);
      memmove((char *)c->data + (size_t)at * w, (char *)c->data + (size_t)p->row0 * w, (size_t)p->rows * w);
    }
  }
  for (int d = 0; d < p->dom.n; d++) {
    int32_t x = p->dom.dict_ids[d];
    int32_t did = x >= 0 ? lmap[x] : x <= -4 ? index_dict_id(s, DEFERRED_INDEX(x)) : -1;
    if (did == -3 || enum_map_add(dom, p->dom.ids[d], did) < 0) goto nomem;
  }
  free(lmap);
  return NSL_OK;
nomem:
  free(lmap);
  return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory loading %s of '%s'", sc->name, s->label);
}

/* Rows below which a load is one serial scan (NSL_PARALLEL_MIN_ROWS sets
 * another bound: the tests run the parallel path on small exports). */
#define PARALLEL_MIN_ROWS 262144

static int64_t parallel_min_rows(void) {
  const char *env = getenv("NSL_PARALLEL_MIN_ROWS");
  long long v = env && *env ? strtoll(env, NULL, 10) : 0;
  return v > 0 ? (int64_t)v : PARALLEL_MIN_ROWS;
}

/* The rowid spans of the source tables of m (lo[k] > hi[k]: absent or
 * empty) when a parallel scan applies: no grouping, rows enough in all, and
 * rowids dense enough to size the columns by.  Returns the total span, 0 when
 * the scan is serial. */
static int64_t parallel_spans(nsys_src *s, const table_map *m, int64_t *lo, int64_t *hi) {
  if (m->distinct || m->group_by) return 0;
  int64_t total = 0;
  for (int k = 0; k < 4; k++) {
    lo[k] = 0;
    hi[k] = -1;
    if (!m->sources[k] || !find_table(s, m->sources[k])) continue;
    int64_t a = 0, z = -1;
    int ra = rowid_end(s, m->sources[k], "min", &a), rz = rowid_end(s, m->sources[k], "max", &z);
    if (ra < 0 || rz < 0) return 0;
    if (ra > 0 && rz > 0) {
      lo[k] = a;
      hi[k] = z;
    }
    if (hi[k] < lo[k]) continue;
    if (hi[k] - lo[k] >= INT64_MAX / 4 || total > INT64_MAX / 4) return 0;
    total += hi[k] - lo[k] + 1;
  }
  return total >= parallel_min_rows() && total <= s->db_bytes / 2 + 16 ? total : 0;
}

static nsl_status nsys_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                            nsl_dict *dict, int64_t time_offset, nsl_column **out, nsl_error *err) {
  nsys_src *s = p;
  const table_map *m = NULL;
  const nsl_model_table *mt = nsl__model_table(name);
  nsl_status rc = pick_map(s, name, &m, err);
  if (rc != NSL_OK) return rc;
  if (!m) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", s->label, name);
  out_col *cols = calloc((size_t)(n > 0 ? n : 1), sizeof *cols);
  sbuf b = {0};
  enum_map dom = {0};
  scan_part *parts = NULL;
  int nparts = 0;
  int nvtx_domains = 0, need_strings = 0;
  int64_t rows = 0;
  for (int j = 0; j < n; j++) out[j] = NULL;
  if (!cols) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");

  /* Which mapping feeds each requested column. */
  int slot = 0, dslot = -1;
  for (int j = 0; j < n; j++) {
    for (const col_map *cm = m->cols; cm->model; cm++)
      if (strcmp(cm->model, colnames[j]) == 0) cols[j].map = cm;
    const nsl_model_column *mc = mt ? nsl__model_column(mt, colnames[j]) : NULL;
    cols[j].type = types[j];
    cols[j].is_time = mc && mc->is_time;
    cols[j].slot = slot;
    for (int i = 0; i < j && !cols[j].shared; i++)
      if (!cols[i].shared && same_source(cols[i].map, cols[j].map)) {
        cols[j].slot = cols[i].slot;
        cols[j].shared = 1;
      }
    if (!cols[j].shared) slot += slots_of(cols[j].map);
    if (cols[j].map) {
      map_kind k = cols[j].map->kind;
      if (k == M_NVTX_DOMAIN) {
        nvtx_domains = 1;
        dslot = cols[j].slot;
      }
      if (k == M_STR || k == M_API_NAME || k == M_NVTX_TEXT) need_strings = 1;
      if (k == M_ENUM && (rc = build_enum(s, cols[j].map->en, dict, &cols[j].en, err)) != NSL_OK) goto done;
    }
  }
  if (nvtx_domains) need_strings = 1;
  if (need_strings) {
    if ((rc = load_strings(s, err)) != NSL_OK) goto done;
    use_dict(s, dict);
  }
  scan sc = {s, m, name, cols, n, nvtx_domains, dslot, -1, -1, -1, types_in_c(s, m), time_offset, NULL, 0, out, dict,
             NULL, 0};
  /* the extras, unless an output column reads them already */
  int extras = 0;
  for (int j = 0; j < n; j++) {
    if (cols[j].map && cols[j].map->kind == M_NVTX_KIND) sc.type_slot = cols[j].slot;
    if (cols[j].map && cols[j].map->kind == M_NVTX_TEXT) sc.text_slot = cols[j].slot;
    if (cols[j].map && (cols[j].map->kind == M_NVTX_TEXT || cols[j].map->kind == M_TEXT) && sc.text_col < 0)
      sc.text_col = j;
  }
  if ((nvtx_domains || sc.types_in_c) && sc.type_slot < 0) {
    extras |= EXTRA_TYPE;
    sc.type_slot = slot++;
  }
  if (nvtx_domains && sc.text_slot < 0) {
    extras |= EXTRA_TEXT;
    sc.text_slot = slot;
    slot += 2;
  }

  /* A large table is scanned in rowid ranges on several connections at once. */
  int64_t lo[4], hi[4];
  int threads = nsl__thread_count(0);
  int64_t total = threads > 1 ? parallel_spans(s, m, lo, hi) : 0;
  int parallel = total > 0;
  nsl__progress_expect(total);   /* rowid spans: about the rows to come, for a progress line's time left */
  if (!s->uri) {   /* an in-memory image: the parts open it again, read-only */
    sc.image = s->image;
    sc.image_size = s->db_bytes;
    parallel = parallel && sc.image != NULL;
  }
  if ((rc = build_statement(s, m, cols, n, nvtx_domains, sc.types_in_c, extras, &b, &sc.ncols, err)) != NSL_OK)
    goto done;
  sc.sql = b.s;

  int64_t cap = parallel ? total : estimate_rows(s, m);
  for (int j = 0; j < n; j++)
    if (!(out[j] = nsl_column_new(types[j], cap, dict))) goto nomem;

  if (parallel) {
    /* each source table in `threads` rowid ranges; rows of source k go after
     * those of the sources before it, a range's at its offset in the span */
    if (!(parts = calloc((size_t)threads * 4, sizeof *parts))) goto nomem;
    int64_t base = 0;
    for (int k = 0; k < 4; k++) {
      if (hi[k] < lo[k]) continue;
      int64_t span = hi[k] - lo[k] + 1;
      int chunks = span >= threads ? threads : 1;
      for (int i = 0; i < chunks; i++) {
        scan_part *q = &parts[nparts++];
        q->sc = &sc;
        q->deferred = 1;
        q->lo = lo[k] + span * i / chunks;
        q->hi = lo[k] + span * (i + 1) / chunks - 1;
        q->row0 = base + (q->lo - lo[k]);
        q->cap = q->hi - q->lo + 1;
        sbuf qb = {0};
        rc = build_select(s, m, k, cols, n, nvtx_domains, sc.types_in_c, extras, 1, &qb, &sc.ncols, err);
        q->sql = qb.s;
        if (rc != NSL_OK) goto done;
        if (qb.oom) goto nomem;
        if (!(q->dict = nsl_dict_new()) || part_constants(q) < 0) goto nomem;
        if (!(q->enum_ids = calloc((size_t)n, sizeof *q->enum_ids))) goto nomem;
        for (int j = 0; j < n; j++) {
          if (cols[j].en.n == 0) continue;
          if (!(q->enum_ids[j] = malloc((size_t)cols[j].en.n * sizeof **q->enum_ids))) goto nomem;
          for (int e = 0; e < cols[j].en.n; e++) q->enum_ids[j][e] = -2;
        }
      }
      base += span;
    }
    nsl__run_parallel(nparts, threads, part_job, parts);
    int fallback = 0;
    for (int i = 0; i < nparts; i++) fallback |= parts[i].fallback;
    for (int i = 0; i < nparts && !fallback; i++)
      if (parts[i].rc != NSL_OK) {
        rc = nsl_error_set(err, parts[i].rc, "%s", parts[i].err.msg);
        goto done;
      }
    for (int i = 0; i < nparts && !fallback; i++) {
      if ((rc = merge_part(&parts[i], rows, &dom, err)) != NSL_OK) goto done;
      rows += parts[i].rows;
    }
    for (int i = 0; i < nparts; i++) part_free(&parts[i]);
    if (fallback) {   /* start again: one serial scan */
      rows = 0;
      dom.n = 0;
      parallel = 0;
    }
  }
  if (!parallel) {
    scan_part one = {0};
    one.sc = &sc;
    one.dict = dict;
    one.lo = 0;
    one.hi = -1;
    one.cap = cap;   /* every column holds at least cap rows */
    if (part_constants(&one) < 0) goto nomem;
    one.dom = dom;
    rc = scan_rows(&one);
    dom = one.dom;
    rows = one.rows;
    if (rc != NSL_OK) {
      rc = nsl_error_set(err, rc, "%s", one.err.msg);
      goto done;
    }
  }
  /* NVTX domains: ids -> names (default domain 0 and unnamed ids: NULL). */
  for (int j = 0; j < n; j++) {
    if (!cols[j].map || cols[j].map->kind != M_NVTX_DOMAIN || out[j]->type != NSL_STR) continue;
    int32_t *v = nsl_i32(out[j]);
    for (int64_t r = 0; r < rows; r++) {
      int32_t did = -1;
      for (int d = 0; d < dom.n && v[r] != NSL_NULL_I32; d++)
        if (dom.ids[d] == v[r]) did = dom.dict_ids[d];
      v[r] = did;
    }
  }
  /* Right-size columns that were sized far above the row count. */
  for (int j = 0; j < n; j++) {
    nsl_column *c = out[j];
    if (c->cap - rows > 4096 && rows < c->cap / 4 * 3) {
      nsl_column *fit = nsl_column_new(c->type, rows, dict);
      if (!fit) goto nomem;
      memcpy(fit->data, c->data, (size_t)rows * nsl_type_size(c->type));
      nsl_column_release(c);
      out[j] = fit;
    } else {
      nsl_column_set_len(c, rows);
    }
  }
  rc = NSL_OK;
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory loading %s of '%s'", name, s->label);
done:
  if (rc != NSL_OK)
    for (int j = 0; j < n; j++) {
      nsl_column_release(out[j]);
      out[j] = NULL;
    }
  s->map_dict = NULL;
  if (parts)
    for (int i = 0; i < nparts; i++) part_free(&parts[i]);
  free(parts);
  for (int j = 0; j < n; j++) enum_map_free(&cols[j].en);
  free(cols);
  free(b.s);
  enum_map_free(&dom);
  return rc;
}

/* Exact row count of model table `name` (NSL_ERR_NOTFOUND when absent). */
static nsl_status nsys_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  nsys_src *s = p;
  const table_map *m = NULL;
  nsl_status rc = pick_map(s, name, &m, err);
  if (rc != NSL_OK) return rc;
  *out = 0;
  if (!m) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", s->label, name);
  sbuf b = {0};
  out_col key = {0};
  key.map = &m->cols[0];   /* distinct/grouped maps count their first column's rows */
  sb_add(&b, "SELECT count(*) FROM (");
  int ncols;
  rc = build_statement(s, m, &key, 1, 0, 0, 0, &b, &ncols, err);
  sb_add(&b, ")");
  if (rc == NSL_OK && b.oom) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  if (rc == NSL_OK) {
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(s->db, b.s, -1, &st, NULL);
    if (src == SQLITE_OK) src = sqlite3_step(st);
    if (src == SQLITE_ROW) *out = sqlite3_column_int64(st, 0);
    else rc = sql_error(s, src, m->sources[0], err);
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
  nsl_status rc = pick_map(s, name, &m, err);
  if (rc != NSL_OK) return rc;
  if (!m) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", s->label, name);
  return NSL_OK;
}

static void nsys_close(void *p) {
  nsys_src *s = p;
  if (!s) return;
  sqlite3_close_v2(s->db);
  free(s->image);
  free(s->uri);
  for (int i = 0; i < s->ntables; i++) {
    free(s->tables[i].name);
    for (int c = 0; c < s->tables[i].ncols; c++) free(s->tables[i].cols[c]);
    free(s->tables[i].cols);
  }
  free(s->tables);
  strings_free(s);
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
                                            .load = nsys_load,
                                            .count = nsys_count,
                                            .close = nsys_close,
                                            .sql = nsl__nsys_sql,
                                            .metadata = nsys_metadata};

/* ---- opening ------------------------------------------------------------- */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks the 100-byte SQLite header of an input of `size` bytes: the magic,
 * and that the pages the header promises are all there. */
static nsl_status check_header(const char *label, const unsigned char *h, size_t hlen, int64_t size,
                               nsl_error *err) {
  static const char magic[] = "SQLite format 3";
  if (size == 0)
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is empty, not an nsys SQLite export", label);
  if (hlen < 100 || memcmp(h, magic, sizeof magic) != 0)
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is not an nsys SQLite export: file is not a database", label);
  uint32_t page = (uint32_t)h[16] << 8 | h[17];
  if (page == 1) page = 65536;
  if (page < 512 || (page & (page - 1)))
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is corrupt: bad SQLite page size %u", label, page);
  uint32_t npages = be32(h + 28);
  /* the in-header page count is valid when the change counter matches */
  if (npages > 0 && be32(h + 24) == be32(h + 92)) {
    int64_t want = (int64_t)npages * page;
    if (want > size)
      return nsl_error_set(err, NSL_ERR_FORMAT,
                           "'%s' is truncated: its SQLite header promises %" PRId64 " bytes, it has %" PRId64, label,
                           want, size);
  }
  return NSL_OK;
}

/* Reads a text value of a (name, value) metadata table. */
/* The value of key in metadata table sql (a SELECT with ?1 for the key) as
 * a new string, or NULL when absent (or out of memory). */
static char *meta_text(nsys_src *s, const char *sql, const char *key) {
  sqlite3_stmt *st = NULL;
  char *v = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      v = strdup((const char *)sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  return v;
}

/* The same into dst (cap bytes, cut), for the short version fields. */
static void meta_value(nsys_src *s, const char *sql, const char *key, char *dst, size_t cap) {
  char *v = meta_text(s, sql, key);
  if (v) snprintf(dst, cap, "%s", v);
  free(v);
}

static int64_t meta_int(nsys_src *s, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t v = 0;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_type(st, 0) == SQLITE_INTEGER)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* The nsys version in an install path such as ".../Nsight-Systems/2022.2.1/
 * target-linux-x64" or "NsightSystems-cli-2024.6.2": the first YYYY.N[.N...]. */
static void version_from_path(const char *path, char *dst, size_t cap) {
  for (const char *p = path; *p; p++) {
    if (!(p[0] == '2' && p[1] == '0' && isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) &&
          p[4] == '.' && isdigit((unsigned char)p[5])))
      continue;
    if (p > path && (isdigit((unsigned char)p[-1]) || p[-1] == '.')) continue;
    size_t n = 0;
    while (isdigit((unsigned char)p[n]) || (p[n] == '.' && isdigit((unsigned char)p[n + 1]))) n++;
    snprintf(dst, cap, "%.*s", (int)n, p);
    return;
  }
}

int nsl__nsys_name_and_rank(const char *label, char **name, int64_t *rank) {
  const char *base = strrchr(label, '/');
  base = base ? base + 1 : label;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  /* "x.nsys-rep.sqlite" style double extensions keep their inner part */
  if (!(*name = strndup(base, n))) return -1;
  *rank = -1;
  for (const char *p = *name; *p; p++) {
    if (strncasecmp(p, "rank", 4) != 0 || !isdigit((unsigned char)p[4])) continue;
    if (p > *name && isalpha((unsigned char)p[-1])) continue;   /* "frank3" is not a rank */
    int64_t r = 0;
    const char *q = p + 4;
    while (isdigit((unsigned char)*q) && r < 100000000) r = r * 10 + (*q++ - '0');
    *rank = r;
  }
  return 0;
}

/* Reads the table list, checks that this is an nsys export, and fills info. */
static nsl_status finish_open(nsys_src *s, nsl_report_info *info, nsl_error *err) {
  sqlite3_exec(s->db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);   /* no temp files either */
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')", -1, &st,
                              NULL);
  if (rc != SQLITE_OK) {
    if ((rc & 0xff) == SQLITE_NOTADB)
      return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is not an nsys SQLite export: file is not a database",
                           s->label);
    return sql_error(s, rc, "the table list", err);
  }
  nsl_status out = NSL_OK;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (!name) continue;
    table_info *t = realloc(s->tables, (size_t)(s->ntables + 1) * sizeof *t);
    if (!t) {
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", s->label);
      break;
    }
    s->tables = t;
    memset(&s->tables[s->ntables], 0, sizeof *t);
    if (!(s->tables[s->ntables].name = strdup(name))) {
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", s->label);
      break;
    }
    s->ntables++;
  }
  if (out == NSL_OK && rc != SQLITE_DONE) out = sql_error(s, rc, "the table list", err);
  sqlite3_finalize(st);
  if (out != NSL_OK) return out;

  int nsys = find_table(s, "StringIds") != NULL;
  for (int i = 0; !nsys && nsl__nsys_markers[i]; i++) nsys = find_table(s, nsl__nsys_markers[i]) != NULL;
  if (!nsys)
    return nsl_error_set(err, NSL_ERR_FORMAT,
                         "'%s' is an SQLite database but not an nsys export (no StringIds and no nsys tables)",
                         s->label);

  /* Metadata: export tables (2022.1-2023.1: EXPORT_META_DATA; 2023.3+: META_DATA_EXPORT),
   * then the target's environment for older files. */
  const char *meta = find_table(s, "META_DATA_EXPORT") ? "SELECT value FROM META_DATA_EXPORT WHERE name = ?1"
                     : find_table(s, "EXPORT_META_DATA") ? "SELECT value FROM EXPORT_META_DATA WHERE name = ?1"
                                                         : NULL;
  const char *env = find_table(s, "TARGET_INFO_SYSTEM_ENV") ? "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = ?1"
                                                            : NULL;
  if (meta) {
    meta_value(s, meta, "EXPORT_PRODUCT_VERSION", info->nsys_version, sizeof info->nsys_version);
    meta_value(s, meta, "EXPORT_SCHEMA_VERSION", info->schema_version, sizeof info->schema_version);
  }
  if (env && !info->nsys_version[0]) {
    char *dir = meta_text(s, env, "TargetInstallDir");
    if (dir) version_from_path(dir, info->nsys_version, sizeof info->nsys_version);
    free(dir);
  }
  /* The profiled host (where the ranks ran) rather than where the export ran. */
  if (env) s->host = meta_text(s, env, "Hostname");
  if (meta && (!s->host || !s->host[0])) {
    free(s->host);
    s->host = meta_text(s, meta, "EXPORT_HOST");
  }
  info->host = s->host ? s->host : "";
  if (find_table(s, "TARGET_INFO_SESSION_START_TIME"))
    info->start_utc = meta_int(s, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1");
  if (find_table(s, "ANALYSIS_DETAILS")) info->duration = meta_int(s, "SELECT duration FROM ANALYSIS_DETAILS LIMIT 1");
  if (info->start_utc < 0) info->start_utc = 0;
  if (info->duration < 0) info->duration = 0;
  return NSL_OK;
}

static nsys_src *new_src(const char *label, nsl_report_info *info) {
  nsys_src *s = calloc(1, sizeof *s);
  if (!s || !(s->label = strdup(label))) {
    free(s);
    return NULL;
  }
  memset(info, 0, sizeof *info);
  info->path = s->label;   /* valid while the source is open, as name and host */
  info->host = "";
  if (nsl__nsys_name_and_rank(label, &s->name, &info->rank) != 0) {
    free(s->label);
    free(s);
    return NULL;
  }
  info->name = s->name;
  info->first_ts = info->last_ts = NSL_NULL_I64;
  return s;
}

/* "file:" URI of path with the characters a URI gives meaning to escaped. */
static char *file_uri(const char *path) {
  size_t n = strlen(path);
  char *u = malloc(3 * n + 32);
  if (!u) return NULL;
  char *o = u;
  o += sprintf(o, path[0] == '/' ? "file://" : "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if (*p == '%' || *p == '?' || *p == '#' || *p <= 0x20 || *p >= 0x7f) o += sprintf(o, "%%%02X", *p);
    else *o++ = (char)*p;
  }
  strcpy(o, "?immutable=1");
  return u;
}

nsl_status nsl__nsys_open_file(const char *path, void **out, nsl_report_info *info, nsl_error *err) {
  return nsl__nsys_open_export(path, NULL, 0, out, info, err);
}

nsl_status nsl__nsys_open_export(const char *path, const void *head, size_t nhead, void **out, nsl_report_info *info,
                                 nsl_error *err) {
  *out = NULL;
  struct stat sb;
  if (stat(path, &sb) != 0)
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode))
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': it is a directory, not an nsys SQLite export", path);
  if (!S_ISREG(sb.st_mode))
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': not a regular file", path);
  unsigned char h[100];
  size_t hlen = 0;
  if (head) {   /* the caller read the file's first bytes already */
    hlen = nhead < sizeof h ? nhead : sizeof h;
    memcpy(h, head, hlen);
  } else {
    FILE *f = fopen(path, "rb");
    if (!f) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    hlen = fread(h, 1, sizeof h, f);
    fclose(f);
  }
  nsl_status rc = check_header(path, h, hlen, (int64_t)sb.st_size, err);
  if (rc != NSL_OK) return rc;

  nsys_src *s = new_src(path, info);
  char *uri = file_uri(path);
  if (!s || !uri) {
    free(uri);
    nsys_close(s);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", path);
  }
  s->db_bytes = (int64_t)sb.st_size;
  s->uri = uri;
  /* no mmap: SQLite's own page cache keeps the resident set small, and on
   * large exports the scans were no faster with the file mapped */
  int src = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
  if (src != SQLITE_OK) {
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path,
                       s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
    nsys_close(s);
    return rc;
  }
  if ((rc = finish_open(s, info, err)) != NSL_OK) {
    nsys_close(s);
    return rc;
  }
  *out = s;
  return NSL_OK;
}

nsl_status nsl__nsys_open_image(const char *label, const void *data, size_t size, void **out, nsl_report_info *info,
                               nsl_error *err) {
  *out = NULL;
  nsl_status rc = check_header(label, data, size < 100 ? size : 100, (int64_t)size, err);
  if (rc != NSL_OK) return rc;
  void *copy = malloc(size ? size : 1);
  if (!copy) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", label);
  memcpy(copy, data, size);
  return nsl__nsys_adopt_image(label, copy, size, out, info, err);   /* frees the copy when it fails */
}

nsl_status nsl__nsys_adopt_image(const char *label, void *data, size_t size, void **out, nsl_report_info *info,
                                nsl_error *err) {
  *out = NULL;
  nsl_status rc = check_header(label, data, size < 100 ? size : 100, (int64_t)size, err);
  if (rc != NSL_OK) {
    free(data);
    return rc;
  }
  nsys_src *s = new_src(label, info);
  if (!s) {
    free(data);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", label);
  }
  s->image = data;   /* freed by nsys_close, after the database */
  s->db_bytes = (int64_t)size;
  unsigned char *h = data;
  /* A WAL-mode header (file format versions 2): an image has no WAL beside
   * it and an in-memory database cannot use one; read it as rollback mode. */
  if (h[18] == 2 && h[19] == 2) h[18] = h[19] = 1;
  int src = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
  /* no FREEONCLOSE: SQLite only borrows the buffer, read-only and never resized */
  if (src == SQLITE_OK)
    src = sqlite3_deserialize(s->db, "main", data, (sqlite3_int64)size, (sqlite3_int64)size,
                              SQLITE_DESERIALIZE_READONLY);
  if (src != SQLITE_OK) {
    rc = src == SQLITE_NOMEM ? nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", label)
                             : nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': %s", label, sqlite3_errstr(src));
    nsys_close(s);
    return rc;
  }
  if ((rc = finish_open(s, info, err)) != NSL_OK) {
    nsys_close(s);
    return rc;
  }
  *out = s;
  return NSL_OK;
}

/* ---- raw SQL ------------------------------------------------------------- */

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
  if (rc != SQLITE_DONE) out = sql_error(s, rc, "the query", err);
done:
  free(names);
  free(vals);
  sqlite3_finalize(st);
  return out;
}
