/* nsys_scan.c -- stepping the SELECT of a load: each result row into the
 * output columns (strings, enums, times, NVTX kinds and domains), in one
 * serial part or in rowid ranges on their own connections, whose strings
 * are merged into the load's dictionary afterwards. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "core/text.h"
#include "nsl/nsl.h"
#include "source/nsys_sqlite_internal.h"

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
  int32_t d;
  return nsl_dict_intern(dict, t, (size_t)sqlite3_value_bytes(v), &d, NULL) == NSL_OK ? d : -3;
}

#define DEFER(i) (-(int32_t)(i) - 4)   /* a StringIds index (0 <= i <= INT32_MAX - 4) */
#define DEFERRED_INDEX(v) (-(int64_t)(v) - 4)

/* The id of StringIds id sid (api: as a CUDA API name) for part p: interned
 * now, or deferred.  -1 unknown, -3 out of memory. */
static int32_t part_string(scan_part *p, int64_t sid, int api) {
  nsys_src *s = p->sc->s;
  if (!p->deferred) return api ? nsl__nsys_api_name_dict_id(s, sid) : nsl__nsys_string_dict_id(s, sid);
  int64_t i = nsl__nsys_string_index(s, sid);
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
  if (!p->deferred) return nsl__nsys_enum_value(e, p->dict, v);
  for (int i = 0; i < e->n; i++)
    if (e->ids[i] == v) {
      int32_t *ids = p->enum_ids[j];
      if (ids[i] == -2) {   /* its name, from the load's dictionary (read-only while parts run) */
        const char *name = nsl_dict_str(p->sc->dict, e->dict_ids[i]);
        int32_t d = -1;
        if (name && nsl_dict_intern(p->dict, name, nsl_dict_strlen(p->sc->dict, e->dict_ids[i]), &d, NULL) != NSL_OK)
          d = -3;
        ids[i] = d;
      }
      return ids[i] == -3 ? -3 : ids[i];
    }
  char buf[32];
  int len = snprintf(buf, sizeof buf, "%" PRId64, v);
  int32_t did;
  return nsl_dict_intern(p->dict, buf, (size_t)len, &did, NULL) == NSL_OK ? did : -3;
}

static nsl_status part_sql_error(scan_part *p, sqlite3 *db, int rc) {
  return nsl__nsys_sql_error_on(p->sc->s, db, rc, p->sc->m->sources[0], &p->err);
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
  int32_t did;
  if (nsl_dict_intern_hashed(p->dict, q->buf[i], q->len[i], q->hash[i], &did, NULL) != NSL_OK) return -1;
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
      if (dv && did != -1 && nsl__nsys_enum_map_add(&p->dom, sqlite3_value_int64(dv), did) < 0) return -1;
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
        if (nsl_dict_intern(p->dict, buf, (size_t)len, &did, NULL) != NSL_OK) return -1;
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
nsl_status nsl__nsys_scan_rows(scan_part *p) {
  scan *sc = p->sc;
  sqlite3 *db = p->db ? p->db : sc->s->db;
  const char *select = p->sql ? p->sql : sc->sql;
  row_reader rr;
  memset(&rr, 0, sizeof rr);
  rr.p = p;
  lag_init(&rr.lag);
  nsl__text b = {0};
  nsl_status rc = NSL_OK;
  /* SELECT nsl_load_row(c0, .., cN) FROM (the SELECT, which names its result
   * columns so: sb_alias in nsys_select.c) */
  int nc = sc->ncols, step;
  sqlite3_stmt *st = NULL;
  if (nc > sqlite3_limit(db, SQLITE_LIMIT_FUNCTION_ARG, -1)) {   /* 127: the model's widest load is ~30 */
    rc = nsl_error_set(&p->err, NSL_ERR_ARG, "loading %s of '%s': %d result columns, more than SQLite passes",
                       sc->name, sc->s->label, nc);
    goto done;
  }
  nsl__text_add(&b, "SELECT " ROW_FUNCTION "(");
  for (int i = 0; i < nc; i++) {
    char name[24];
    snprintf(name, sizeof name, "%sc%d", i ? ", " : "", i);
    nsl__text_add(&b, name);
  }
  nsl__text_add(&b, ") FROM (");
  nsl__text_add(&b, select);
  nsl__text_add(&b, ")");
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
int nsl__nsys_part_constants(scan_part *p) {
  static const char *const nvtx_kinds[3] = {"push_pop", "start_end", "mark"};
  scan *sc = p->sc;
  for (int k = 0; k < 4; k++) p->source_ids[k] = -1;
  for (int k = 0; k < 3; k++) p->kind_ids[k] = -1;
  for (int j = 0; j < sc->n; j++) {
    if (!sc->cols[j].map) continue;
    if (sc->cols[j].map->kind == M_SOURCE)
      for (int k = 0; k < 4; k++)
        if (sc->m->labels[k] &&
            nsl_dict_intern(p->dict, sc->m->labels[k], strlen(sc->m->labels[k]), &p->source_ids[k], NULL) != NSL_OK)
          return -1;
    if (sc->cols[j].map->kind == M_NVTX_KIND)
      for (int k = 0; k < 3; k++)
        if (nsl_dict_intern(p->dict, nvtx_kinds[k], strlen(nvtx_kinds[k]), &p->kind_ids[k], NULL) != NSL_OK) return -1;
  }
  return 0;
}

void nsl__nsys_part_free(scan_part *p) {
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
  nsl__nsys_enum_map_free(&p->dom);
}

/* A parallel part's job: its own connection, dictionary and rows. */
void nsl__nsys_part_job(void *ctx, int i) {
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
  nsl__nsys_scan_rows(p);
}

/* Maps the strings of deferred part p to the load's dictionary and moves its
 * rows to start at row `at`; its domain names join dom. */
nsl_status nsl__nsys_merge_part(scan_part *p, int64_t at, enum_map *dom, nsl_error *err) {
  scan *sc = p->sc;
  nsys_src *s = sc->s;
  int32_t nlocal = nsl_dict_size(p->dict);
  int32_t *lmap = malloc((size_t)(nlocal > 0 ? nlocal : 1) * sizeof *lmap);
  if (!lmap) goto nomem;
  for (int32_t i = 0; i < nlocal; i++)
    if (nsl_dict_intern(sc->dict, nsl_dict_str(p->dict, i), nsl_dict_strlen(p->dict, i), &lmap[i], NULL) != NSL_OK)
      goto nomem;
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
          int32_t d = api ? nsl__nsys_index_api_id(s, DEFERRED_INDEX(x))
                          : nsl__nsys_index_dict_id(s, DEFERRED_INDEX(x));
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
    int32_t did = x >= 0 ? lmap[x] : x <= -4 ? nsl__nsys_index_dict_id(s, DEFERRED_INDEX(x)) : -1;
    if (did == -3 || nsl__nsys_enum_map_add(dom, p->dom.ids[d], did) < 0) goto nomem;
  }
  free(lmap);
  return NSL_OK;
nomem:
  free(lmap);
  return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory loading %s of '%s'", sc->name, s->label);
}
