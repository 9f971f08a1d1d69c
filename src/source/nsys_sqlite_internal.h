/*
 * nsys_sqlite_internal.h -- what the files of the nsys SQLite export source
 * share (private to them; everything else goes through nsys_sqlite.h):
 *   nsys_sqlite.c   the source: the table list, schema questions, the ops
 *   nsys_strings.c  StringIds, read once, and its ids -> dictionary ids
 *   nsys_enums.c    enum values -> dictionary ids
 *   nsys_select.c   the SELECT of a load or a count
 *   nsys_scan.c     stepping a SELECT: result rows into the output columns,
 *                   in one part or in parallel rowid ranges merged after
 *   nsys_load.c     a load: the columns, the plan, the scan, the finish
 *   nsys_open.c     opening a file or an image
 *   nsys_sql.c      raw SQL (trace:sql)
 */
#ifndef NSL_SOURCE_NSYS_SQLITE_INTERNAL_H
#define NSL_SOURCE_NSYS_SQLITE_INTERNAL_H

#include <stdint.h>

#include <sqlite3.h>

#include "core/text.h"
#include "nsl/nsl.h"
#include "source/nsys_schema.h"

/* ---- the source (nsys_sqlite.c) ---------------------------------------- */

typedef struct table_info {
  char *name;
  int loaded;          /* columns read */
  int ncols;
  char **cols;
  unsigned char *notnull;   /* per column: declared NOT NULL */
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

nsl_status nsl__nsys_sql_error_on(nsys_src *s, sqlite3 *db, int rc, const char *what, nsl_error *err);
nsl_status nsl__nsys_sql_error(nsys_src *s, int rc, const char *what, nsl_error *err);
table_info *nsl__nsys_find_table(nsys_src *s, const char *name);
nsl_status nsl__nsys_load_columns(nsys_src *s, table_info *t, nsl_error *err);
int nsl__nsys_has_column(const table_info *t, const char *col);
/* 1 when t has column col declared NOT NULL (a sound export never holds NULL there). */
int nsl__nsys_column_notnull(const table_info *t, const char *col);
nsl_status nsl__nsys_pick_map(nsys_src *s, const char *name, const table_map **out, nsl_error *err);
void nsl__nsys_close(void *p);

/* ---- StringIds (nsys_strings.c) ----------------------------------------- */

void nsl__nsys_strings_free(nsys_src *s);
nsl_status nsl__nsys_load_strings(nsys_src *s, nsl_error *err);
int64_t nsl__nsys_string_index(const nsys_src *s, int64_t id);
void nsl__nsys_use_dict(nsys_src *s, nsl_dict *dict);
int32_t nsl__nsys_index_dict_id(nsys_src *s, int64_t i);
int32_t nsl__nsys_index_api_id(nsys_src *s, int64_t i);
int32_t nsl__nsys_string_dict_id(nsys_src *s, int64_t id);
int32_t nsl__nsys_api_name_dict_id(nsys_src *s, int64_t id);

/* ---- enum values (nsys_enums.c) ----------------------------------------- */

/* Values -> dictionary ids: an enum's names, the NVTX domain names met in a
 * scan (domain-create events). */
typedef struct enum_map {
  int n, cap;
  int64_t *ids;
  int32_t *dict_ids;
} enum_map;

void nsl__nsys_enum_map_free(enum_map *e);
int nsl__nsys_enum_map_add(enum_map *e, int64_t id, int32_t did);
nsl_status nsl__nsys_build_enum(nsys_src *s, const enum_def *en, nsl_dict *dict, enum_map *e, nsl_error *err);
int32_t nsl__nsys_enum_value(enum_map *e, nsl_dict *dict, int64_t v);

/* ---- building the SELECT (nsys_select.c) -------------------------------- */

/* One requested output column. */
typedef struct out_col {
  const col_map *map;    /* NULL: not mapped, all NULL */
  nsl_type type;
  int is_time;
  int slot;              /* first result column of the SELECT */
  int shared;            /* reads the slot of an earlier column (same nsys columns) */
  enum_map en;
} out_col;

/* Extra result columns after the output columns (NVTX: the event type, for
 * the filter in C and domain-create events; the text, for domain names),
 * when no output column already reads them. */
#define EXTRA_TYPE 1   /* eventType */
#define EXTRA_TEXT 2   /* text, textId */

int nsl__nsys_slots_of(const col_map *cm);
int nsl__nsys_same_source(const col_map *a, const col_map *b);
int nsl__nsys_types_in_c(nsys_src *s, const table_map *m);
nsl_status nsl__nsys_build_select(nsys_src *s, const table_map *m, int k, const out_col *cols, int n, int nvtx_domains,
                                  int in_c, int extras, int rowid_range, nsl__text *b, int *ncols_out, nsl_error *err);
nsl_status nsl__nsys_build_statement(nsys_src *s, const table_map *m, const out_col *cols, int n, int nvtx_domains,
                                     int in_c, int extras, nsl__text *b, int *ncols, nsl_error *err);
int nsl__nsys_rowid_end(nsys_src *s, const char *t, const char *fn, int64_t *out);
int64_t nsl__nsys_estimate_rows(nsys_src *s, const table_map *m);

/* ---- scanning (nsys_scan.c) --------------------------------------------- */

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
  int ncols;                /* result columns of each SELECT: c0, c1, ... (sb_alias, nsys_select.c) */
  nsl_column **out;
  nsl_dict *dict;           /* the load's dictionary */
  const void *image;        /* the database image of an in-memory source (parallel scans open it again) */
  int64_t image_size;
} scan;

/* A part of a load: a rowid range stepped on its own connection, writing the
 * rows [row0, row0 + rows) of the output columns.  A deferred part (one of a
 * parallel scan) leaves the load's dictionary alone: it interns text into its
 * own and keeps StringIds references as DEFER(index), and nsl__nsys_merge_part maps
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

nsl_status nsl__nsys_scan_rows(scan_part *p);
int nsl__nsys_part_constants(scan_part *p);
void nsl__nsys_part_free(scan_part *p);
void nsl__nsys_part_job(void *ctx, int i);
nsl_status nsl__nsys_merge_part(scan_part *p, int64_t at, enum_map *dom, nsl_error *err);

/* ---- loading (nsys_load.c) ---------------------------------------------- */

nsl_status nsl__nsys_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                          nsl_dict *dict, int64_t time_offset, nsl_column **out, nsl_error *err);

#endif
