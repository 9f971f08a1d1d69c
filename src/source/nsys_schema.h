/*
 * nsys_schema.h -- the declarative mapping of nsys SQLite exports onto the
 * data model (private to nsl): the types nsys_schema.c fills and
 * nsys_sqlite.c reads.  A model column names candidate nsys columns (the
 * first present wins), so columns added or missing across nsys versions are
 * handled alike; a model table names candidate nsys tables in order of
 * preference.
 */
#ifndef NSL_SOURCE_NSYS_SCHEMA_H
#define NSL_SOURCE_NSYS_SCHEMA_H

typedef enum map_kind {
  M_INT,          /* integer (or real) column as is */
  M_PID,          /* (globalPid or globalTid >> 24) & 0xFFFFFF */
  M_TID,          /* globalTid & 0xFFFFFF */
  M_STR,          /* id into StringIds */
  M_API_NAME,     /* id into StringIds of a CUDA API name, "_vNNNN" suffix cut as nsys's reports do */
  M_TEXT,         /* inline text */
  M_ENUM,         /* integer through an nsys ENUM_* table (or the built-in values) */
  M_CC,           /* compute capability "major.minor" from two columns */
  M_SOURCE,       /* the label of the nsys table the row comes from */
  M_NVTX_TEXT,    /* text if not NULL else StringIds[textId] */
  M_NVTX_DOMAIN,  /* domainId -> the name its domain-create event (type 75) gave */
  M_NVTX_KIND     /* eventType -> push_pop, start_end, mark */
} map_kind;

typedef struct enum_item {
  int id;
  const char *nsys;    /* the nsys enum name without its prefix */
  const char *value;   /* the data model's short form */
} enum_item;

typedef struct enum_def {
  const char *table;   /* nsys ENUM_* table (id, name, label), when the export has it */
  const char *prefix;
  const enum_item *items;   /* built-in values (ended by nsys == NULL) */
} enum_def;

typedef struct col_map {
  const char *model;
  map_kind kind;
  const char *src[4];       /* candidate nsys columns, first present wins */
  const enum_def *en;
  int required;             /* a load that asks for it fails when the table has none of src (see build_select) */
} col_map;

typedef struct table_map {
  const char *model;
  const char *sources[4];   /* nsys tables, rows concatenated (UNION ALL); those present */
  const char *labels[4];    /* M_SOURCE value per source */
  const char *require_col;  /* this alternative applies only when its first present source has it */
  const char *where;        /* row filter, or NULL */
  const char *group_by;     /* one row per group, or NULL */
  int distinct;             /* UNION instead of UNION ALL (distinct rows) */
  int need_rows;            /* applies only when sources[0] has rows (else the next one) */
  const col_map *cols;      /* ended by model == NULL */
  const char *extra;        /* an extra result column (not read), e.g. the aggregate that picks a group's row */
} table_map;

/* Alternatives per model table, in order of preference: the first of which
 * the export has a source table (with require_col) is used.  Ended by an
 * entry with model == NULL. */
extern const table_map nsl__nsys_maps[];

/* Tables whose presence marks an nsys export (beside StringIds); NULL-ended. */
extern const char *const nsl__nsys_markers[];

/* The NVTX event types the nvtx table reads (34 mark, 59 push/pop, 60
 * start/end) and the domain-create events (75) that name domains. */
#define NSL__NVTX_RANGE_OR_DOMAIN_TYPES "\"eventType\" IN (34, 59, 60, 75)"

#endif
