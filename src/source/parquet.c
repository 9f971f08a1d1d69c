/*
 * parquet.c -- a focused Apache Parquet reader: flat schemas, the
 * encodings and codecs that pyarrow writes by default.  See parquet.h.
 *
 * File layout (parquet-format): "PAR1", column chunks (pages), the
 * FileMetaData struct in the Thrift compact protocol, its 4-byte length,
 * "PAR1".  Each column chunk is an optional dictionary page followed by
 * data pages; each page is a Thrift PageHeader followed by its body.
 */
#include "source/parquet.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

/* Bounds on what a file may ask us to allocate. */
#define PQ_MAX_PAGE ((size_t)1 << 30)     /* one decompressed page */
#define PQ_MAX_DEPTH 64                   /* Thrift struct nesting */
#define PQ_MAX_COLS 100000

/* Parquet Thrift enums used here. */
enum { PAGE_DATA = 0, PAGE_INDEX = 1, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };
enum {
  ENC_PLAIN = 0, ENC_PLAIN_DICTIONARY = 2, ENC_RLE = 3, ENC_BIT_PACKED = 4,
  ENC_DELTA_BINARY_PACKED = 5, ENC_DELTA_LENGTH_BYTE_ARRAY = 6, ENC_DELTA_BYTE_ARRAY = 7,
  ENC_RLE_DICTIONARY = 8, ENC_BYTE_STREAM_SPLIT = 9
};
enum { CODEC_UNCOMPRESSED = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_ZSTD = 6 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };

/* Thrift compact protocol type codes. */
enum {
  TT_STOP = 0, TT_TRUE = 1, TT_FALSE = 2, TT_BYTE = 3, TT_I16 = 4, TT_I32 = 5, TT_I64 = 6,
  TT_DOUBLE = 7, TT_BINARY = 8, TT_LIST = 9, TT_SET = 10, TT_MAP = 11, TT_STRUCT = 12
};

/* One column chunk (a column within a row group). */
typedef struct pq_chunk {
  int have_meta;
  int external;               /* file_path set: data lives in another file */
  int type;                   /* physical type as the chunk states it */
  int codec;
  int64_t num_values;
  int64_t total_compressed;
  int64_t data_page_offset;
  int64_t dict_page_offset;   /* -1 when absent */
} pq_chunk;

typedef struct pq_rowgroup {
  int64_t num_rows;
  int nchunks;
  pq_chunk *chunks;
} pq_rowgroup;

typedef struct pq_kv {
  char *key, *value;
} pq_kv;

struct nsl_parquet {
  char label[256];
  const uint8_t *data;
  size_t size;
  void (*free_data)(void *);
  int ncols;
  nsl_parquet_colinfo *cols;
  char **names;
  int64_t nrows;
  int nrg;
  pq_rowgroup *rgs;
  int nkv;
  pq_kv *kv;
  char *created_by;
};

/* ---- small helpers ------------------------------------------------------ */

/* Little-endian loads (the file may be unaligned). */
static uint32_t rd_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_le64(const uint8_t *p) {
  return (uint64_t)rd_le32(p) | (uint64_t)rd_le32(p + 4) << 32;
}

static char *dup_bytes(const uint8_t *s, size_t n) {
  char *r = malloc(n + 1);
  if (r) {
    if (n) memcpy(r, s, n);
    r[n] = 0;
  }
  return r;
}

/* ---- Thrift compact protocol reader -------------------------------------- */

typedef struct tcr {
  const uint8_t *p, *end;
  int depth;
  int failed;
  nsl_status code;     /* of the first failure */
  const char *what;    /* what went wrong */
  const char *where;   /* the struct being parsed, for messages */
} tcr;

/* Records the first failure (what went wrong, in which struct) and
 * returns -1; the caller turns it into an nsl_error. */
static int tc_fail(tcr *t, nsl_status code, const char *what) {
  if (!t->failed) {
    t->failed = 1;
    t->code = code;
    t->what = what;
  }
  return -1;
}

/* Reads an unsigned LEB128 varint of at most 64 bits. */
static int tc_varint(tcr *t, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (t->p >= t->end) return tc_fail(t, NSL_ERR_FORMAT, "truncated varint");
    uint8_t b = *t->p++;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return 0;
    }
  }
  return tc_fail(t, NSL_ERR_FORMAT, "varint longer than 10 bytes");
}

/* Reads a zigzag-encoded signed varint (Thrift i16/i32/i64). */
static int tc_zigzag(tcr *t, int64_t *v) {
  uint64_t u;
  if (tc_varint(t, &u)) return -1;
  *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
  return 0;
}

/* Reads the next field header of a struct: 1 with *type and *id set, 0 at
 * the STOP byte, -1 on error.  *last carries the previous field id. */
static int tc_field(tcr *t, int *last, int *type, int *id) {
  if (t->p >= t->end) return tc_fail(t, NSL_ERR_FORMAT, "truncated struct");
  uint8_t b = *t->p++;
  if (b == TT_STOP) return 0;
  *type = b & 0x0f;
  int delta = b >> 4;
  if (delta) {
    *id = *last + delta;
  } else {
    int64_t v;
    if (tc_zigzag(t, &v)) return -1;
    if (v < INT16_MIN || v > INT16_MAX) return tc_fail(t, NSL_ERR_FORMAT, "field id out of range");
    *id = (int)v;
  }
  *last = *id;
  return 1;
}

/* Reads a list/set header: element type and count (checked against the
 * bytes left, since every element takes at least one byte). */
static int tc_list(tcr *t, int *etype, int64_t *n) {
  if (t->p >= t->end) return tc_fail(t, NSL_ERR_FORMAT, "truncated list header");
  uint8_t b = *t->p++;
  *etype = b & 0x0f;
  uint64_t size = b >> 4;
  if (size == 15 && tc_varint(t, &size)) return -1;
  if (size > (uint64_t)(t->end - t->p)) return tc_fail(t, NSL_ERR_FORMAT, "list longer than the data");
  *n = (int64_t)size;
  return 0;
}

static int tc_skip(tcr *t, int type, int in_list);

/* Skips a struct (after its opening). */
static int tc_skip_struct(tcr *t) {
  if (++t->depth > PQ_MAX_DEPTH) return tc_fail(t, NSL_ERR_LIMIT, "structs nested too deeply");
  int last = 0, type, id, r;
  while ((r = tc_field(t, &last, &type, &id)) == 1)
    if (tc_skip(t, type, 0)) return -1;
  t->depth--;
  return r;
}

/* Skips one value of the given type; in_list: a bool is a whole byte. */
static int tc_skip(tcr *t, int type, int in_list) {
  uint64_t u;
  switch (type) {
  case TT_TRUE:
  case TT_FALSE:
    if (!in_list) return 0;
    /* fallthrough */
  case TT_BYTE:
    if (t->p >= t->end) return tc_fail(t, NSL_ERR_FORMAT, "truncated byte");
    t->p++;
    return 0;
  case TT_I16:
  case TT_I32:
  case TT_I64:
    return tc_varint(t, &u);
  case TT_DOUBLE:
    if (t->end - t->p < 8) return tc_fail(t, NSL_ERR_FORMAT, "truncated double");
    t->p += 8;
    return 0;
  case TT_BINARY:
    if (tc_varint(t, &u)) return -1;
    if (u > (uint64_t)(t->end - t->p)) return tc_fail(t, NSL_ERR_FORMAT, "string longer than the data");
    t->p += u;
    return 0;
  case TT_LIST:
  case TT_SET: {
    int et;
    int64_t n;
    if (tc_list(t, &et, &n)) return -1;
    if (++t->depth > PQ_MAX_DEPTH) return tc_fail(t, NSL_ERR_LIMIT, "lists nested too deeply");
    for (int64_t i = 0; i < n; i++)
      if (tc_skip(t, et, 1)) return -1;
    t->depth--;
    return 0;
  }
  case TT_MAP: {
    if (tc_varint(t, &u)) return -1;
    if (u == 0) return 0;
    if (u > (uint64_t)(t->end - t->p)) return tc_fail(t, NSL_ERR_FORMAT, "map longer than the data");
    if (t->p >= t->end) return tc_fail(t, NSL_ERR_FORMAT, "truncated map header");
    uint8_t kv = *t->p++;
    if (++t->depth > PQ_MAX_DEPTH) return tc_fail(t, NSL_ERR_LIMIT, "maps nested too deeply");
    for (uint64_t i = 0; i < u; i++)
      if (tc_skip(t, kv >> 4, 1) || tc_skip(t, kv & 0x0f, 1)) return -1;
    t->depth--;
    return 0;
  }
  case TT_STRUCT:
    return tc_skip_struct(t) < 0 ? -1 : 0;
  default:
    return tc_fail(t, NSL_ERR_FORMAT, "unknown Thrift type code");
  }
}

/* Reads an integer field of any integer type into *v. */
static int tc_int(tcr *t, int type, int64_t *v) {
  switch (type) {
  case TT_BYTE:
    if (t->p >= t->end) return tc_fail(t, NSL_ERR_FORMAT, "truncated byte");
    *v = (int8_t)*t->p++;
    return 0;
  case TT_I16:
  case TT_I32:
  case TT_I64:
    return tc_zigzag(t, v);
  default:
    return tc_fail(t, NSL_ERR_FORMAT, "integer field has a non-integer type");
  }
}

/* Reads an i32-valued field (also range-checks). */
static int tc_i32(tcr *t, int type, int32_t *v) {
  int64_t x;
  if (tc_int(t, type, &x)) return -1;
  if (x < INT32_MIN || x > INT32_MAX) return tc_fail(t, NSL_ERR_FORMAT, "i32 field out of range");
  *v = (int32_t)x;
  return 0;
}

/* Reads a binary field: pointer into the data and its length. */
static int tc_binary(tcr *t, int type, const uint8_t **s, size_t *n) {
  uint64_t u;
  if (type != TT_BINARY) return tc_fail(t, NSL_ERR_FORMAT, "string field has a non-string type");
  if (tc_varint(t, &u)) return -1;
  if (u > (uint64_t)(t->end - t->p)) return tc_fail(t, NSL_ERR_FORMAT, "string longer than the data");
  *s = t->p;
  *n = (size_t)u;
  t->p += u;
  return 0;
}

/* Enters a nested struct field (checks the type and the depth). */
static int tc_enter(tcr *t, int type) {
  if (type != TT_STRUCT) return tc_fail(t, NSL_ERR_FORMAT, "struct field has a non-struct type");
  if (++t->depth > PQ_MAX_DEPTH) return tc_fail(t, NSL_ERR_LIMIT, "structs nested too deeply");
  return 0;
}

/* ---- FileMetaData --------------------------------------------------------- */

typedef struct pq_schema_el {
  int type;              /* -1: a group */
  int32_t type_length;
  int repetition;        /* -1 when absent */
  char *name;
  int32_t num_children;  /* -1 when absent */
  int32_t converted;     /* -1 when absent */
  int32_t scale, precision;
  int logical;           /* nsl_pq_logical from LogicalType, NONE when absent */
  int unit, utc, int_bits, int_signed;
  int lscale, lprecision;
} pq_schema_el;

/* TimeUnit union: {1: MILLIS, 2: MICROS, 3: NANOS} of empty structs. */
static int parse_time_unit(tcr *t, int *unit) {
  int last = 0, type, id, r;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    if (id >= 1 && id <= 3) *unit = id;
    if (tc_skip(t, type, 0)) return -1;
  }
  return r;
}

/* LogicalType union (parquet-format 2.4+). */
static int parse_logical(tcr *t, pq_schema_el *el) {
  int last = 0, type, id, r;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    int l = NSL_PQ_L_OTHER;
    switch (id) {
    case 1: l = NSL_PQ_L_STRING; break;
    case 4: l = NSL_PQ_L_ENUM; break;
    case 5: l = NSL_PQ_L_DECIMAL; break;
    case 6: l = NSL_PQ_L_DATE; break;
    case 7: l = NSL_PQ_L_TIME; break;
    case 8: l = NSL_PQ_L_TIMESTAMP; break;
    case 10: l = NSL_PQ_L_INTEGER; break;
    case 11: l = NSL_PQ_L_NULL; break;
    case 12: l = NSL_PQ_L_JSON; break;
    case 13: l = NSL_PQ_L_BSON; break;
    case 14: l = NSL_PQ_L_UUID; break;
    case 15: l = NSL_PQ_L_FLOAT16; break;
    default: break;
    }
    el->logical = l;
    if (l == NSL_PQ_L_TIME || l == NSL_PQ_L_TIMESTAMP || l == NSL_PQ_L_INTEGER ||
        l == NSL_PQ_L_DECIMAL) {
      if (tc_enter(t, type)) return -1;
      int l2 = 0, ty2, id2, r2;
      while ((r2 = tc_field(t, &l2, &ty2, &id2)) == 1) {
        int64_t v;
        if (l == NSL_PQ_L_INTEGER && id2 == 1) {
          if (tc_int(t, ty2, &v)) return -1;
          el->int_bits = (int)v;
        } else if (l == NSL_PQ_L_INTEGER && id2 == 2) {
          el->int_signed = ty2 == TT_TRUE;
        } else if (l == NSL_PQ_L_DECIMAL && (id2 == 1 || id2 == 2)) {
          int32_t x;
          if (tc_i32(t, ty2, &x)) return -1;
          if (id2 == 1) el->lscale = x; else el->lprecision = x;
        } else if (l != NSL_PQ_L_INTEGER && l != NSL_PQ_L_DECIMAL && id2 == 1) {
          el->utc = ty2 == TT_TRUE;
        } else if (l != NSL_PQ_L_INTEGER && l != NSL_PQ_L_DECIMAL && id2 == 2) {
          if (tc_enter(t, ty2) || parse_time_unit(t, &el->unit) < 0) return -1;
          t->depth--;
        } else if (tc_skip(t, ty2, 0)) {
          return -1;
        }
      }
      if (r2 < 0) return -1;
      t->depth--;
    } else if (tc_skip(t, type, 0)) {
      return -1;
    }
  }
  return r;
}

/* SchemaElement: type, width, repetition, name, children, annotations. */
static int parse_schema_el(tcr *t, pq_schema_el *el) {
  int last = 0, type, id, r;
  const uint8_t *s;
  size_t n;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    int32_t v;
    switch (id) {
    case 1: if (tc_i32(t, type, &v)) return -1; el->type = v; break;
    case 2: if (tc_i32(t, type, &el->type_length)) return -1; break;
    case 3: if (tc_i32(t, type, &v)) return -1; el->repetition = v; break;
    case 4:
      if (tc_binary(t, type, &s, &n)) return -1;
      free(el->name);
      if (!(el->name = dup_bytes(s, n))) return tc_fail(t, NSL_ERR_NOMEM, "out of memory");
      break;
    case 5: if (tc_i32(t, type, &el->num_children)) return -1; break;
    case 6: if (tc_i32(t, type, &el->converted)) return -1; break;
    case 7: if (tc_i32(t, type, &el->scale)) return -1; break;
    case 8: if (tc_i32(t, type, &el->precision)) return -1; break;
    case 10:
      if (tc_enter(t, type) || parse_logical(t, el) < 0) return -1;
      t->depth--;
      break;
    default:
      if (tc_skip(t, type, 0)) return -1;
    }
  }
  return r;
}

/* ColumnMetaData: the fields needed to find and decode the pages. */
static int parse_column_meta(tcr *t, pq_chunk *c) {
  int last = 0, type, id, r;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    int32_t v;
    switch (id) {
    case 1: if (tc_i32(t, type, &v)) return -1; c->type = v; break;
    case 4: if (tc_i32(t, type, &v)) return -1; c->codec = v; break;
    case 5: if (tc_int(t, type, &c->num_values)) return -1; break;
    case 7: if (tc_int(t, type, &c->total_compressed)) return -1; break;
    case 9: if (tc_int(t, type, &c->data_page_offset)) return -1; break;
    case 11: if (tc_int(t, type, &c->dict_page_offset)) return -1; break;
    default:
      if (tc_skip(t, type, 0)) return -1;
    }
  }
  c->have_meta = 1;
  return r;
}

/* ColumnChunk: file_path (external data, refused later) and meta_data. */
static int parse_column_chunk(tcr *t, pq_chunk *c) {
  int last = 0, type, id, r;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    if (id == 1) {
      const uint8_t *s;
      size_t n;
      if (tc_binary(t, type, &s, &n)) return -1;
      if (n) c->external = 1;
    } else if (id == 3) {
      if (tc_enter(t, type) || parse_column_meta(t, c) < 0) return -1;
      t->depth--;
    } else if (tc_skip(t, type, 0)) {
      return -1;
    }
  }
  return r;
}

/* RowGroup: its column chunks and row count. */
static int parse_row_group(tcr *t, pq_rowgroup *g) {
  int last = 0, type, id, r;
  g->num_rows = -1;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    if (id == 1 && type == TT_LIST && !g->chunks) {
      int et;
      int64_t n;
      if (tc_list(t, &et, &n)) return -1;
      if (et != TT_STRUCT) return tc_fail(t, NSL_ERR_FORMAT, "row group columns are not structs");
      if (n > PQ_MAX_COLS) return tc_fail(t, NSL_ERR_LIMIT, "too many column chunks");
      g->chunks = calloc(n ? (size_t)n : 1, sizeof *g->chunks);
      if (!g->chunks) return tc_fail(t, NSL_ERR_NOMEM, "out of memory");
      g->nchunks = (int)n;
      for (int64_t i = 0; i < n; i++) {
        g->chunks[i].dict_page_offset = -1;
        g->chunks[i].type = -1;
        g->chunks[i].codec = -1;
        if (tc_enter(t, TT_STRUCT) || parse_column_chunk(t, &g->chunks[i]) < 0) return -1;
        t->depth--;
      }
    } else if (id == 3) {
      if (tc_int(t, type, &g->num_rows)) return -1;
    } else if (tc_skip(t, type, 0)) {
      return -1;
    }
  }
  return r;
}

/* KeyValue: one entry of the file's key/value metadata. */
static int parse_kv(tcr *t, pq_kv *kv) {
  int last = 0, type, id, r;
  const uint8_t *s;
  size_t n;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    if (id == 1 || id == 2) {
      if (tc_binary(t, type, &s, &n)) return -1;
      char **dst = id == 1 ? &kv->key : &kv->value;
      free(*dst);
      if (!(*dst = dup_bytes(s, n))) return tc_fail(t, NSL_ERR_NOMEM, "out of memory");
    } else if (tc_skip(t, type, 0)) {
      return -1;
    }
  }
  return r;
}

typedef struct pq_meta {
  int nschema;
  pq_schema_el *schema;
  int64_t num_rows;
} pq_meta;

/* Parses FileMetaData into pq (row groups, key/value, created_by) and m
 * (schema elements, to be checked by the caller). */
static int parse_file_meta(tcr *t, nsl_parquet *pq, pq_meta *m) {
  int last = 0, type, id, r, et;
  int64_t n;
  m->num_rows = -1;
  while ((r = tc_field(t, &last, &type, &id)) == 1) {
    if (id == 2 && type == TT_LIST && !m->schema) {
      t->where = "the schema";
      if (tc_list(t, &et, &n)) return -1;
      if (et != TT_STRUCT) return tc_fail(t, NSL_ERR_FORMAT, "schema elements are not structs");
      if (n > PQ_MAX_COLS) return tc_fail(t, NSL_ERR_LIMIT, "too many schema elements");
      m->schema = calloc(n ? (size_t)n : 1, sizeof *m->schema);
      if (!m->schema) return tc_fail(t, NSL_ERR_NOMEM, "out of memory");
      m->nschema = (int)n;
      for (int64_t i = 0; i < n; i++) {
        pq_schema_el *el = &m->schema[i];
        el->type = -1;
        el->repetition = -1;
        el->num_children = -1;
        el->converted = -1;
        if (tc_enter(t, TT_STRUCT) || parse_schema_el(t, el) < 0) return -1;
        t->depth--;
      }
    } else if (id == 3) {
      t->where = "FileMetaData";
      if (tc_int(t, type, &m->num_rows)) return -1;
    } else if (id == 4 && type == TT_LIST && !pq->rgs) {
      t->where = "the row groups";
      if (tc_list(t, &et, &n)) return -1;
      if (et != TT_STRUCT) return tc_fail(t, NSL_ERR_FORMAT, "row groups are not structs");
      if (n > INT_MAX / 2) return tc_fail(t, NSL_ERR_LIMIT, "too many row groups");
      pq->rgs = calloc(n ? (size_t)n : 1, sizeof *pq->rgs);
      if (!pq->rgs) return tc_fail(t, NSL_ERR_NOMEM, "out of memory");
      pq->nrg = (int)n;
      for (int64_t i = 0; i < n; i++) {
        if (tc_enter(t, TT_STRUCT) || parse_row_group(t, &pq->rgs[i]) < 0) return -1;
        t->depth--;
      }
    } else if (id == 5 && type == TT_LIST && !pq->kv) {
      t->where = "the key/value metadata";
      if (tc_list(t, &et, &n)) return -1;
      if (et != TT_STRUCT) return tc_fail(t, NSL_ERR_FORMAT, "key/value entries are not structs");
      if (n > INT_MAX / 2) return tc_fail(t, NSL_ERR_LIMIT, "too many key/value entries");
      pq->kv = calloc(n ? (size_t)n : 1, sizeof *pq->kv);
      if (!pq->kv) return tc_fail(t, NSL_ERR_NOMEM, "out of memory");
      pq->nkv = (int)n;
      for (int64_t i = 0; i < n; i++) {
        if (tc_enter(t, TT_STRUCT) || parse_kv(t, &pq->kv[i]) < 0) return -1;
        t->depth--;
      }
    } else if (id == 6 && type == TT_BINARY) {
      const uint8_t *s;
      size_t len;
      t->where = "FileMetaData";
      if (tc_binary(t, type, &s, &len)) return -1;
      free(pq->created_by);
      if (!(pq->created_by = dup_bytes(s, len))) return tc_fail(t, NSL_ERR_NOMEM, "out of memory");
    } else {
      t->where = "FileMetaData";
      if (tc_skip(t, type, 0)) return -1;
    }
  }
  return r;
}

/* Maps a ConvertedType (when no LogicalType is present) to the merged view. */
static void apply_converted(nsl_parquet_colinfo *ci, int32_t conv) {
  switch (conv) {
  case 0: ci->logical = NSL_PQ_L_STRING; break;                 /* UTF8 */
  case 4: ci->logical = NSL_PQ_L_ENUM; break;
  case 5: ci->logical = NSL_PQ_L_DECIMAL; break;
  case 6: ci->logical = NSL_PQ_L_DATE; break;
  case 7: ci->logical = NSL_PQ_L_TIME; ci->unit = NSL_PQ_UNIT_MILLIS; break;
  case 8: ci->logical = NSL_PQ_L_TIME; ci->unit = NSL_PQ_UNIT_MICROS; break;
  case 9: ci->logical = NSL_PQ_L_TIMESTAMP; ci->unit = NSL_PQ_UNIT_MILLIS; ci->utc = 1; break;
  case 10: ci->logical = NSL_PQ_L_TIMESTAMP; ci->unit = NSL_PQ_UNIT_MICROS; ci->utc = 1; break;
  case 11: case 12: case 13: case 14:                           /* UINT_8..UINT_64 */
    ci->logical = NSL_PQ_L_INTEGER;
    ci->int_bits = 8 << (conv - 11);
    ci->int_signed = 0;
    break;
  case 15: case 16: case 17: case 18:                           /* INT_8..INT_64 */
    ci->logical = NSL_PQ_L_INTEGER;
    ci->int_bits = 8 << (conv - 15);
    ci->int_signed = 1;
    break;
  case 19: ci->logical = NSL_PQ_L_JSON; break;
  case 20: ci->logical = NSL_PQ_L_BSON; break;
  case -1: break;
  default: ci->logical = NSL_PQ_L_OTHER; break;
  }
}

/* The nsl type a physical type decodes to by default (see parquet.h). */
static nsl_type default_type(nsl_pq_physical p) {
  switch (p) {
  case NSL_PQ_FLOAT:
  case NSL_PQ_DOUBLE: return NSL_F64;
  case NSL_PQ_BYTE_ARRAY:
  case NSL_PQ_FIXED_LEN_BYTE_ARRAY: return NSL_STR;
  case NSL_PQ_BOOLEAN: return NSL_I32;
  default: return NSL_I64;
  }
}

/* Checks the schema is flat and builds the column descriptions. */
static nsl_status build_columns(nsl_parquet *pq, pq_meta *m, nsl_error *err) {
  if (m->nschema < 1)
    return nsl_error_set(err, NSL_ERR_FORMAT, "parquet '%s': the schema is empty", pq->label);
  /* Name the first group or repeated field: the clearest message for a
   * nested file, whatever its shape. */
  for (int i = 1; i < m->nschema; i++) {
    pq_schema_el *el = &m->schema[i];
    const char *nm = el->name ? el->name : "?";
    if (el->num_children > 0 || el->type < 0)
      return nsl_error_set(err, NSL_ERR_FORMAT,
                           "parquet '%s': column '%s' is a nested group; only flat schemas are "
                           "supported", pq->label, nm);
    if (el->repetition == REP_REPEATED)
      return nsl_error_set(err, NSL_ERR_FORMAT,
                           "parquet '%s': column '%s' is repeated (a list); only flat schemas are "
                           "supported", pq->label, nm);
  }
  int nch = m->schema[0].num_children;
  if (nch < 0 || nch != m->nschema - 1)
    return nsl_error_set(err, NSL_ERR_FORMAT,
                         "parquet '%s': the schema root has %d children but %d elements follow",
                         pq->label, nch, m->nschema - 1);
  pq->ncols = nch;
  pq->cols = calloc(nch ? (size_t)nch : 1, sizeof *pq->cols);
  pq->names = calloc(nch ? (size_t)nch : 1, sizeof *pq->names);
  if (!pq->cols || !pq->names) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int i = 0; i < nch; i++) {
    pq_schema_el *el = &m->schema[i + 1];
    const char *nm = el->name ? el->name : "?";
    if (el->type > NSL_PQ_FIXED_LEN_BYTE_ARRAY)
      return nsl_error_set(err, NSL_ERR_FORMAT, "parquet '%s': column '%s' has unknown type %d",
                           pq->label, nm, el->type);
    if (!el->name)
      return nsl_error_set(err, NSL_ERR_FORMAT, "parquet '%s': column %d has no name", pq->label, i);
    if (el->type == NSL_PQ_FIXED_LEN_BYTE_ARRAY && el->type_length < 0)
      return nsl_error_set(err, NSL_ERR_FORMAT, "parquet '%s': column '%s' has a negative width",
                           pq->label, nm);
    nsl_parquet_colinfo *ci = &pq->cols[i];
    pq->names[i] = el->name;
    el->name = NULL;
    ci->name = pq->names[i];
    ci->physical = (nsl_pq_physical)el->type;
    ci->type_length = el->type == NSL_PQ_FIXED_LEN_BYTE_ARRAY ? el->type_length : 0;
    ci->nullable = el->repetition == REP_OPTIONAL;
    ci->converted = el->converted;
    ci->scale = el->scale;
    ci->precision = el->precision;
    ci->int_signed = 1;
    apply_converted(ci, el->converted);
    if (el->logical != NSL_PQ_L_NONE) {
      ci->logical = (nsl_pq_logical)el->logical;
      if (el->logical == NSL_PQ_L_TIME || el->logical == NSL_PQ_L_TIMESTAMP) {
        ci->unit = (nsl_pq_unit)el->unit;
        ci->utc = el->utc;
      } else if (el->logical == NSL_PQ_L_INTEGER) {
        ci->int_bits = el->int_bits;
        ci->int_signed = el->int_signed;
      } else if (el->logical == NSL_PQ_L_DECIMAL) {
        ci->scale = el->lscale;
        ci->precision = el->lprecision;
      }
    }
    ci->type = default_type(ci->physical);
  }
  return NSL_OK;
}

/* Checks the row groups against the schema (counts, offsets, types). */
static nsl_status check_row_groups(nsl_parquet *pq, int64_t num_rows, nsl_error *err) {
  int64_t total = 0;
  size_t data_end = pq->size;
  for (int g = 0; g < pq->nrg; g++) {
    pq_rowgroup *rg = &pq->rgs[g];
    if (rg->num_rows < 0 || rg->num_rows > INT64_MAX - total)
      return nsl_error_set(err, NSL_ERR_FORMAT, "parquet '%s': row group %d has a bad row count",
                           pq->label, g);
    total += rg->num_rows;
    if (rg->nchunks != pq->ncols)
      return nsl_error_set(err, NSL_ERR_FORMAT,
                           "parquet '%s': row group %d has %d column chunks for %d columns",
                           pq->label, g, rg->nchunks, pq->ncols);
    for (int c = 0; c < rg->nchunks; c++) {
      pq_chunk *ch = &rg->chunks[c];
      const char *nm = pq->names[c];
      if (!ch->have_meta)
        return nsl_error_set(err, NSL_ERR_FORMAT,
                             "parquet '%s': column '%s' in row group %d has no metadata "
                             "(encrypted files are not supported)", pq->label, nm, g);
      if (ch->type != (int)pq->cols[c].physical)
        return nsl_error_set(err, NSL_ERR_FORMAT,
                             "parquet '%s': column '%s' in row group %d has type %d, the schema "
                             "says %d", pq->label, nm, g, ch->type, (int)pq->cols[c].physical);
      if (ch->data_page_offset < 4 || ch->total_compressed < 0 ||
          (uint64_t)ch->data_page_offset > data_end ||
          (uint64_t)ch->total_compressed > data_end)
        return nsl_error_set(err, NSL_ERR_FORMAT,
                             "parquet '%s': column '%s' in row group %d lies outside the file",
                             pq->label, nm, g);
    }
  }
  if (num_rows != total)
    return nsl_error_set(err, NSL_ERR_FORMAT,
                         "parquet '%s': the file says %lld rows, its row groups hold %lld",
                         pq->label, (long long)num_rows, (long long)total);
  /* A page of a few bytes can hold many RLE-encoded rows, but not without
   * bound: refuse row counts that no real file of this size could hold. */
  if ((uint64_t)total > (uint64_t)pq->size * 4096u + ((uint64_t)1 << 20))
    return nsl_error_set(err, NSL_ERR_LIMIT,
                         "parquet '%s': %lld rows is implausible for a %zu-byte file", pq->label,
                         (long long)total, pq->size);
  pq->nrows = total;
  return NSL_OK;
}

/* Frees the schema elements kept while opening. */
static void free_meta(pq_meta *m) {
  for (int i = 0; i < m->nschema; i++) free(m->schema[i].name);
  free(m->schema);
}

nsl_status nsl__parquet_open_mem(nsl_parquet **out, const char *label, const void *data, size_t size,
                                void (*free_data)(void *), nsl_error *err) {
  *out = NULL;
  nsl_parquet *pq = calloc(1, sizeof *pq);
  if (!pq) {
    if (free_data) free_data((void *)data);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening parquet '%s'", label);
  }
  snprintf(pq->label, sizeof pq->label, "%s", label ? label : "(memory)");
  pq->data = data;
  pq->size = size;
  pq->free_data = free_data;
  pq_meta m = {0};
  nsl_status st;
  const uint8_t *d = data;
  if (size < 12 || memcmp(d, "PAR1", 4) != 0 ||
      (memcmp(d + size - 4, "PAR1", 4) != 0 && memcmp(d + size - 4, "PARE", 4) != 0)) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "parquet '%s': not a Parquet file (no PAR1 magic)",
                       pq->label);
    goto fail;
  }
  if (memcmp(d + size - 4, "PARE", 4) == 0) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "parquet '%s': encrypted footers are not supported",
                       pq->label);
    goto fail;
  }
  uint32_t mlen = rd_le32(d + size - 8);
  if (mlen > size - 12) {
    st = nsl_error_set(err, NSL_ERR_FORMAT,
                       "parquet '%s': footer length %u is larger than the file (%zu bytes)",
                       pq->label, mlen, size);
    goto fail;
  }
  /* Column data may not reach into the footer. */
  tcr t = {.p = d + size - 8 - mlen, .end = d + size - 8, .where = "FileMetaData"};
  if (parse_file_meta(&t, pq, &m) < 0) {
    st = nsl_error_set(err, t.code, "parquet '%s': corrupt footer metadata in %s: %s", pq->label,
                       t.where, t.what);
    goto fail;
  }
  if (!m.schema || m.num_rows < 0 || !pq->rgs) {
    st = nsl_error_set(err, NSL_ERR_FORMAT,
                       "parquet '%s': FileMetaData lacks the schema, row count or row groups",
                       pq->label);
    goto fail;
  }
  pq->size = size - 8 - mlen;   /* pages must lie before the footer */
  if ((st = build_columns(pq, &m, err)) != NSL_OK) goto fail;
  if ((st = check_row_groups(pq, m.num_rows, err)) != NSL_OK) goto fail;
  free_meta(&m);
  *out = pq;
  return NSL_OK;
fail:
  free_meta(&m);
  nsl__parquet_close(pq);
  return st;
}

nsl_status nsl__parquet_open_file(nsl_parquet **out, const char *path, nsl_error *err) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return nsl_error_set(err, NSL_ERR_IO, "cannot open parquet '%s'", path);
  uint8_t *buf = NULL;
  nsl_status st = NSL_OK;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
  if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot read parquet '%s': not a seekable file", path);
    goto done;
  }
  if (!(buf = malloc(len ? (size_t)len : 1))) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading parquet '%s' (%ld bytes)", path,
                       len);
    goto done;
  }
  if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot read parquet '%s'", path);
    goto done;
  }
  fclose(f);
  f = NULL;
  st = nsl__parquet_open_mem(out, path, buf, (size_t)len, free, err);
  buf = NULL;   /* owned (or freed) by open_mem */
done:
  if (f) fclose(f);
  free(buf);
  return st;
}

void nsl__parquet_close(nsl_parquet *pq) {
  if (!pq) return;
  for (int g = 0; g < pq->nrg; g++) free(pq->rgs[g].chunks);
  free(pq->rgs);
  for (int i = 0; i < pq->ncols; i++) free(pq->names[i]);
  free(pq->names);
  free(pq->cols);
  for (int i = 0; i < pq->nkv; i++) {
    free(pq->kv[i].key);
    free(pq->kv[i].value);
  }
  free(pq->kv);
  free(pq->created_by);
  if (pq->free_data) pq->free_data((void *)pq->data);
  free(pq);
}

int nsl__parquet_ncols(const nsl_parquet *pq) { return pq->ncols; }
int64_t nsl__parquet_nrows(const nsl_parquet *pq) { return pq->nrows; }
int nsl__parquet_nrowgroups(const nsl_parquet *pq) { return pq->nrg; }

const char *nsl__parquet_colname(const nsl_parquet *pq, int idx) {
  return idx >= 0 && idx < pq->ncols ? pq->names[idx] : NULL;
}

int nsl__parquet_find(const nsl_parquet *pq, const char *name) {
  for (int i = 0; i < pq->ncols; i++)
    if (strcmp(pq->names[i], name) == 0) return i;
  return -1;
}

const nsl_parquet_colinfo *nsl__parquet_column_info(const nsl_parquet *pq, int idx) {
  return idx >= 0 && idx < pq->ncols ? &pq->cols[idx] : NULL;
}

const char *nsl__parquet_created_by(const nsl_parquet *pq) {
  return pq->created_by ? pq->created_by : "";
}

const char *nsl__parquet_metadata(const nsl_parquet *pq, const char *key) {
  for (int i = 0; i < pq->nkv; i++)
    if (pq->kv[i].key && strcmp(pq->kv[i].key, key) == 0) return pq->kv[i].value;
  return NULL;
}

const char *nsl__pq_physical_name(nsl_pq_physical t) {
  static const char *const names[] = {"BOOLEAN", "INT32", "INT64", "INT96",
                                      "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

const char *nsl__pq_logical_name(nsl_pq_logical t) {
  static const char *const names[] = {"NONE", "STRING", "ENUM", "JSON", "BSON", "UUID",
                                      "DECIMAL", "DATE", "TIME", "TIMESTAMP", "INTEGER",
                                      "FLOAT16", "NULL", "OTHER"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* ---- column decoding ------------------------------------------------------ */

/* The state of one nsl__parquet_read_column call. */
typedef struct pq_reader {
  const nsl_parquet *pq;
  const nsl_parquet_colinfo *ci;
  int col, rg;
  int is_real;            /* FLOAT/DOUBLE: values kept as double, else int64 */
  int is_str;
  nsl_dict *dict;
  nsl_column *out;
  nsl_error *err;
  uint8_t *page;          /* decompressed page */
  size_t page_cap;
  uint32_t *lev;          /* definition levels */
  uint32_t *idx;          /* dictionary indices */
  size_t lev_cap, idx_cap;
  int64_t *iv;            /* decoded non-null values */
  double *dv;
  size_t v_cap;
  int64_t *dict_iv;       /* dictionary page values */
  double *dict_dv;
  int64_t dict_n;
  int have_dict;
} pq_reader;

/* Fills err with "parquet 'file': column 'c' (row group g): <message>". */
static nsl_status rd_fail(pq_reader *r, nsl_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static nsl_status rd_fail(pq_reader *r, nsl_status code, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return nsl_error_set(r->err, code, "parquet '%s': column '%s' (row group %d): %s", r->pq->label,
                       r->ci->name, r->rg, msg);
}

/* Grows *buf to hold n elements of size es. */
static int grow(void **buf, size_t *cap, size_t n, size_t es) {
  if (n <= *cap) return 0;
  size_t c = *cap ? *cap : 1024;
  while (c < n) c *= 2;
  void *p = realloc(*buf, c * es);
  if (!p) return -1;
  *buf = p;
  *cap = c;
  return 0;
}

/* Makes room for n decoded values (int64 or double by column class). */
static nsl_status ensure_values(pq_reader *r, int64_t n) {
  size_t cap = r->v_cap;
  if ((size_t)n <= cap) return NSL_OK;
  if (r->is_real) {
    if (grow((void **)&r->dv, &cap, (size_t)n, sizeof(double))) goto nomem;
  } else {
    if (grow((void **)&r->iv, &cap, (size_t)n, sizeof(int64_t))) goto nomem;
  }
  r->v_cap = cap;
  return NSL_OK;
nomem:
  return rd_fail(r, NSL_ERR_NOMEM, "out of memory for %lld values", (long long)n);
}

/* Decompresses a page body of clen bytes into r->page (ulen bytes); *body
 * points at the result (the input itself when uncompressed). */
static nsl_status decompress(pq_reader *r, int codec, const uint8_t *src, size_t clen, size_t ulen,
                             const uint8_t **body) {
  if (codec == CODEC_UNCOMPRESSED) {
    if (clen != ulen)
      return rd_fail(r, NSL_ERR_FORMAT, "uncompressed page of %zu bytes claims %zu", clen, ulen);
    *body = src;
    return NSL_OK;
  }
  if (ulen > PQ_MAX_PAGE)
    return rd_fail(r, NSL_ERR_LIMIT, "page of %zu bytes exceeds the %zu-byte limit", ulen,
                   PQ_MAX_PAGE);
  if (grow((void **)&r->page, &r->page_cap, ulen ? ulen : 1, 1))
    return rd_fail(r, NSL_ERR_NOMEM, "out of memory for a %zu-byte page", ulen);
  *body = r->page;
  switch (codec) {
  case CODEC_SNAPPY: {
    size_t n = 0;
    if (snappy_uncompressed_length((const char *)src, clen, &n) != SNAPPY_OK || n != ulen)
      return rd_fail(r, NSL_ERR_FORMAT, "bad snappy page (expected %zu bytes)", ulen);
    n = ulen;
    if (snappy_uncompress((const char *)src, clen, (char *)r->page, &n) != SNAPPY_OK || n != ulen)
      return rd_fail(r, NSL_ERR_FORMAT, "corrupt snappy page");
    return NSL_OK;
  }
  case CODEC_GZIP: {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) return rd_fail(r, NSL_ERR_NOMEM, "zlib init failed");
    size_t got = 0;
    int zr = Z_OK;
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)(clen > UINT_MAX ? UINT_MAX : clen);
    /* Concatenated gzip members are allowed: reset at each member end. */
    while (got < ulen) {
      z.next_out = r->page + got;
      z.avail_out = (uInt)((ulen - got) > UINT_MAX ? UINT_MAX : ulen - got);
      zr = inflate(&z, Z_NO_FLUSH);
      got = (size_t)(z.next_out - r->page);
      if (zr == Z_STREAM_END) {
        if (got < ulen && z.avail_in > 0) {
          if (inflateReset(&z) != Z_OK) break;
          continue;
        }
        break;
      }
      if (zr != Z_OK) break;
      if (z.avail_in == 0 && got < ulen) break;
    }
    inflateEnd(&z);
    if ((zr != Z_OK && zr != Z_STREAM_END) || got != ulen)
      return rd_fail(r, NSL_ERR_FORMAT, "corrupt gzip page (%zu of %zu bytes)", got, ulen);
    return NSL_OK;
  }
  case CODEC_ZSTD: {
    size_t n = ZSTD_decompress(r->page, ulen, src, clen);
    if (ZSTD_isError(n) || n != ulen)
      return rd_fail(r, NSL_ERR_FORMAT, "corrupt zstd page (%s)",
                     ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size");
    return NSL_OK;
  }
  default: {
    static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                        "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
    return rd_fail(r, NSL_ERR_FORMAT, "compression %s is not supported (only snappy, gzip, zstd)",
                   codec >= 0 && codec < 8 ? names[codec] : "unknown");
  }
  }
}

/* Decodes n values of the RLE / bit-packed hybrid encoding with bit width w
 * from [p, end) into out.  Returns the bytes consumed, or -1 (*why set). */
static int64_t rle_decode(const uint8_t *p, const uint8_t *end, int w, uint32_t *out, int64_t n,
                          const char **why) {
  const uint8_t *start = p;
  int64_t k = 0;
  int vbytes = (w + 7) / 8;
  uint32_t mask = w >= 32 ? 0xffffffffu : ((1u << w) - 1);
  while (k < n) {
    uint64_t h = 0;
    int shift = 0;
    for (;;) {
      if (p >= end) {
        *why = "RLE run header past the end of the data";
        return -1;
      }
      uint8_t b = *p++;
      h |= (uint64_t)(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
      if ((shift += 7) > 63) {
        *why = "RLE run header too long";
        return -1;
      }
    }
    int64_t left = n - k;
    if (h & 1) {   /* bit-packed groups of 8 values */
      uint64_t groups = h >> 1;
      int64_t take = groups > (uint64_t)left / 8 + 1 ? left : (int64_t)groups * 8;
      if (take > left) take = left;
      if (w == 0) {
        memset(out + k, 0, (size_t)take * sizeof *out);
        k += take;
        continue;
      }
      size_t avail = (size_t)(end - p);
      size_t need = ((size_t)take * (size_t)w + 7) / 8;
      if (need > avail) {
        *why = "bit-packed run past the end of the data";
        return -1;
      }
      uint64_t acc = 0;
      int nbits = 0;
      const uint8_t *q = p;
      for (int64_t j = 0; j < take; j++) {
        while (nbits < w) {
          acc |= (uint64_t)*q++ << nbits;
          nbits += 8;
        }
        out[k + j] = (uint32_t)acc & mask;
        acc >>= w;
        nbits -= w;
      }
      k += take;
      /* The run's full length (padding of the last group included) when
       * present; a writer may drop the padding of the very last run. */
      size_t full = groups <= avail ? (size_t)groups * (size_t)w : avail;
      p += full < need ? need : (full > avail ? avail : full);
    } else {       /* one value repeated */
      uint64_t count = h >> 1;
      if (vbytes > end - p) {
        *why = "RLE run value past the end of the data";
        return -1;
      }
      uint32_t v = 0;
      for (int b = 0; b < vbytes; b++) v |= (uint32_t)p[b] << (8 * b);
      p += vbytes;
      if (v & ~mask) {
        *why = "RLE run value wider than the bit width";
        return -1;
      }
      int64_t take = count > (uint64_t)left ? left : (int64_t)count;
      for (int64_t j = 0; j < take; j++) out[k + j] = v;
      k += take;
    }
  }
  return p - start;
}

/* Decodes count PLAIN values from [p, p+len) into the reader's value
 * arrays (dst_i / dst_d).  Strings are interned into r->dict. */
static nsl_status decode_plain(pq_reader *r, const uint8_t *p, size_t len, int64_t count,
                               int64_t *dst_i, double *dst_d) {
  const nsl_parquet_colinfo *ci = r->ci;
  size_t need;
  switch (ci->physical) {
  case NSL_PQ_BOOLEAN:
    need = ((size_t)count + 7) / 8;
    if (need > len) goto short_data;
    for (int64_t i = 0; i < count; i++) dst_i[i] = (p[i >> 3] >> (i & 7)) & 1;
    return NSL_OK;
  case NSL_PQ_INT32:
    if ((size_t)count > len / 4) goto short_data;
    if (ci->logical == NSL_PQ_L_INTEGER && !ci->int_signed)
      for (int64_t i = 0; i < count; i++) dst_i[i] = (int64_t)rd_le32(p + 4 * i);
    else
      for (int64_t i = 0; i < count; i++) dst_i[i] = (int32_t)rd_le32(p + 4 * i);
    return NSL_OK;
  case NSL_PQ_INT64:
    if ((size_t)count > len / 8) goto short_data;
    for (int64_t i = 0; i < count; i++) dst_i[i] = (int64_t)rd_le64(p + 8 * i);
    return NSL_OK;
  case NSL_PQ_INT96:
    /* nanoseconds within the day (8 bytes), then the Julian day (4 bytes) */
    if ((size_t)count > len / 12) goto short_data;
    for (int64_t i = 0; i < count; i++) {
      int64_t ns = (int64_t)rd_le64(p + 12 * i);
      int64_t day = (int32_t)rd_le32(p + 12 * i + 8);
      /* wraps (no undefined behaviour) for days no real file holds */
      dst_i[i] = (int64_t)((uint64_t)(day - 2440588) * UINT64_C(86400000000000) + (uint64_t)ns);
    }
    return NSL_OK;
  case NSL_PQ_FLOAT:
    if ((size_t)count > len / 4) goto short_data;
    for (int64_t i = 0; i < count; i++) {
      uint32_t u = rd_le32(p + 4 * i);
      float f;
      memcpy(&f, &u, 4);
      dst_d[i] = f;
    }
    return NSL_OK;
  case NSL_PQ_DOUBLE:
    if ((size_t)count > len / 8) goto short_data;
    for (int64_t i = 0; i < count; i++) {
      uint64_t u = rd_le64(p + 8 * i);
      memcpy(&dst_d[i], &u, 8);
    }
    return NSL_OK;
  case NSL_PQ_BYTE_ARRAY: {
    size_t off = 0;
    for (int64_t i = 0; i < count; i++) {
      if (len - off < 4) goto short_data;
      uint32_t n = rd_le32(p + off);
      off += 4;
      if (n > len - off) goto short_data;
      int32_t id;
      nsl_error e;
      if (nsl_dict_intern(r->dict, (const char *)p + off, n, &id, &e) != NSL_OK) return rd_fail(r, e.code, "%s", e.msg);
      dst_i[i] = id;
      off += n;
    }
    return NSL_OK;
  }
  case NSL_PQ_FIXED_LEN_BYTE_ARRAY: {
    size_t w = (size_t)ci->type_length;
    if (w && (size_t)count > len / w) goto short_data;
    for (int64_t i = 0; i < count; i++) {
      int32_t id;
      nsl_error e;
      if (nsl_dict_intern(r->dict, (const char *)p + w * (size_t)i, w, &id, &e) != NSL_OK)
        return rd_fail(r, e.code, "%s", e.msg);
      dst_i[i] = id;
    }
    return NSL_OK;
  }
  }
short_data:
  return rd_fail(r, NSL_ERR_FORMAT, "%lld PLAIN %s values do not fit in %zu bytes",
                 (long long)count, nsl__pq_physical_name(ci->physical), len);
}

/* A dictionary page: PLAIN values kept for the data pages that follow. */
static nsl_status read_dictionary(pq_reader *r, const uint8_t *body, size_t len, int64_t n,
                                  int enc) {
  if (enc != ENC_PLAIN && enc != ENC_PLAIN_DICTIONARY)
    return rd_fail(r, NSL_ERR_FORMAT, "dictionary page encoding %d is not PLAIN", enc);
  if (n < 0 || (uint64_t)n > (uint64_t)len * 8 + 8)
    return rd_fail(r, NSL_ERR_FORMAT, "dictionary page claims %lld values in %zu bytes",
                   (long long)n, len);
  free(r->dict_iv);
  free(r->dict_dv);
  r->dict_iv = NULL;
  r->dict_dv = NULL;
  r->dict_n = 0;
  r->have_dict = 0;
  if (r->is_real) r->dict_dv = malloc((size_t)(n ? n : 1) * sizeof(double));
  else r->dict_iv = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
  if (!r->dict_iv && !r->dict_dv) return rd_fail(r, NSL_ERR_NOMEM, "out of memory for a dictionary");
  nsl_status st = decode_plain(r, body, len, n, r->dict_iv, r->dict_dv);
  if (st != NSL_OK) return st;
  r->dict_n = n;
  r->have_dict = 1;
  return NSL_OK;
}

/* Stores n rows starting at row0 of the output: values v (nnz of them)
 * spread over the rows whose level is set (all rows when lev is NULL),
 * converted to the output type. */
static nsl_status put_rows(pq_reader *r, const uint32_t *lev, int64_t n, int64_t row0,
                           const int64_t *iv, const double *dv) {
  nsl_column *o = r->out;
  int64_t j = 0;
  switch (o->type) {
  case NSL_I64: {
    int64_t *d = nsl_i64(o) + row0;
    if (!r->is_real) {
      for (int64_t k = 0; k < n; k++) d[k] = !lev || lev[k] ? iv[j++] : NSL_NULL_I64;
    } else {
      for (int64_t k = 0; k < n; k++) {
        if (lev && !lev[k]) { d[k] = NSL_NULL_I64; continue; }
        double x = dv[j++];
        if (isnan(x)) { d[k] = NSL_NULL_I64; continue; }
        if (x != floor(x) || x < -9.2233720368547758e18 || x >= 9.2233720368547758e18)
          return rd_fail(r, NSL_ERR_FORMAT, "row %lld: %.17g is not an int64",
                         (long long)(row0 + k), x);
        d[k] = (int64_t)x;
      }
    }
    return NSL_OK;
  }
  case NSL_I32:
  case NSL_STR: {
    int32_t *d = nsl_i32(o) + row0;
    int32_t null = o->type == NSL_STR ? -1 : NSL_NULL_I32;
    for (int64_t k = 0; k < n; k++) {
      if (lev && !lev[k]) { d[k] = null; continue; }
      if (r->is_real) {
        double x = dv[j++];
        if (isnan(x)) { d[k] = null; continue; }
        if (x != floor(x) || x < INT32_MIN || x > INT32_MAX)
          return rd_fail(r, NSL_ERR_FORMAT, "row %lld: %.17g is not an int32",
                         (long long)(row0 + k), x);
        d[k] = (int32_t)x;
      } else {
        int64_t x = iv[j++];
        if (x < INT32_MIN || x > INT32_MAX)
          return rd_fail(r, NSL_ERR_FORMAT, "row %lld: %lld does not fit an int32",
                         (long long)(row0 + k), (long long)x);
        d[k] = (int32_t)x;
      }
    }
    return NSL_OK;
  }
  case NSL_F64: {
    double *d = nsl_f64(o) + row0;
    for (int64_t k = 0; k < n; k++) {
      if (lev && !lev[k]) d[k] = NAN;
      else d[k] = r->is_real ? dv[j++] : (double)iv[j++];
    }
    return NSL_OK;
  }
  case NSL_BOOL: {
    uint8_t *d = nsl_bool(o) + row0;
    for (int64_t k = 0; k < n; k++) {
      if (lev && !lev[k]) d[k] = 0;
      else d[k] = r->is_real ? dv[j++] != 0 : iv[j++] != 0;
    }
    return NSL_OK;
  }
  }
  return rd_fail(r, NSL_ERR_ARG, "unknown output type");
}

/* Decodes the values section of a data page: nnz non-null values spread
 * over n rows from row0. */
static nsl_status read_values(pq_reader *r, int enc, const uint8_t *p, size_t len,
                              const uint32_t *lev, int64_t n, int64_t nnz, int64_t row0) {
  nsl_status st;
  if ((st = ensure_values(r, nnz)) != NSL_OK) return st;
  const char *why = NULL;
  if (enc == ENC_PLAIN) {
    if ((st = decode_plain(r, p, len, nnz, r->iv, r->dv)) != NSL_OK) return st;
  } else if (enc == ENC_PLAIN_DICTIONARY || enc == ENC_RLE_DICTIONARY) {
    if (!r->have_dict)
      return rd_fail(r, NSL_ERR_FORMAT, "dictionary-encoded page without a dictionary page");
    if (nnz > 0) {
      if (len < 1) return rd_fail(r, NSL_ERR_FORMAT, "dictionary-encoded page without bit width");
      int w = p[0];
      if (w > 32) return rd_fail(r, NSL_ERR_FORMAT, "dictionary index bit width %d > 32", w);
      if (grow((void **)&r->idx, &r->idx_cap, (size_t)nnz, sizeof *r->idx))
        return rd_fail(r, NSL_ERR_NOMEM, "out of memory for dictionary indices");
      if (rle_decode(p + 1, p + len, w, r->idx, nnz, &why) < 0)
        return rd_fail(r, NSL_ERR_FORMAT, "dictionary indices: %s", why);
      uint64_t dn = (uint64_t)r->dict_n;
      for (int64_t i = 0; i < nnz; i++)
        if (r->idx[i] >= dn)
          return rd_fail(r, NSL_ERR_FORMAT, "dictionary index %u past the %lld entries",
                         r->idx[i], (long long)r->dict_n);
      if (r->is_real)
        for (int64_t i = 0; i < nnz; i++) r->dv[i] = r->dict_dv[r->idx[i]];
      else
        for (int64_t i = 0; i < nnz; i++) r->iv[i] = r->dict_iv[r->idx[i]];
    }
  } else if (enc == ENC_RLE && r->ci->physical == NSL_PQ_BOOLEAN) {
    /* booleans: 4-byte length, then the hybrid with bit width 1 */
    if (len < 4) return rd_fail(r, NSL_ERR_FORMAT, "RLE boolean page without length");
    uint32_t blen = rd_le32(p);
    if (blen > len - 4) return rd_fail(r, NSL_ERR_FORMAT, "RLE boolean data past the page end");
    if (grow((void **)&r->idx, &r->idx_cap, (size_t)(nnz ? nnz : 1), sizeof *r->idx))
      return rd_fail(r, NSL_ERR_NOMEM, "out of memory for boolean values");
    if (rle_decode(p + 4, p + 4 + blen, 1, r->idx, nnz, &why) < 0)
      return rd_fail(r, NSL_ERR_FORMAT, "RLE booleans: %s", why);
    for (int64_t i = 0; i < nnz; i++) r->iv[i] = r->idx[i];
  } else {
    static const char *const names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE",
                                        "BIT_PACKED", "DELTA_BINARY_PACKED",
                                        "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                        "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return rd_fail(r, NSL_ERR_FORMAT, "encoding %s of %s values is not supported",
                   enc >= 0 && enc < 10 ? names[enc] : "unknown",
                   nsl__pq_physical_name(r->ci->physical));
  }
  return put_rows(r, lev, n, row0, r->iv, r->dv);
}

/* Decodes the definition levels of n rows (max level 1) and counts the
 * rows that hold a value. */
static nsl_status read_levels(pq_reader *r, int enc, const uint8_t *p, size_t len, int64_t n,
                              int64_t *nnz) {
  const char *why = NULL;
  if (grow((void **)&r->lev, &r->lev_cap, (size_t)(n ? n : 1), sizeof *r->lev))
    return rd_fail(r, NSL_ERR_NOMEM, "out of memory for definition levels");
  if (enc == ENC_RLE) {
    if (rle_decode(p, p + len, 1, r->lev, n, &why) < 0)
      return rd_fail(r, NSL_ERR_FORMAT, "definition levels: %s", why);
  } else if (enc == ENC_BIT_PACKED) {   /* deprecated: MSB first, no header */
    if (((size_t)n + 7) / 8 > len) return rd_fail(r, NSL_ERR_FORMAT, "definition levels truncated");
    for (int64_t i = 0; i < n; i++) r->lev[i] = (p[i >> 3] >> (7 - (i & 7))) & 1;
  } else {
    return rd_fail(r, NSL_ERR_FORMAT, "definition level encoding %d is not supported", enc);
  }
  int64_t c = 0;
  for (int64_t i = 0; i < n; i++) c += r->lev[i];
  *nnz = c;
  return NSL_OK;
}

typedef struct pq_page {
  int type;
  int32_t usize, csize;
  int32_t nvalues, encoding, def_enc;
  int32_t nnulls, nrows, def_len, rep_len;
  int v2_compressed;
  int have_dp, have_dict, have_v2;
} pq_page;

/* PageHeader with its DataPageHeader, DictionaryPageHeader or
 * DataPageHeaderV2 (field numbers of parquet.thrift). */
static int parse_page_header(tcr *t, pq_page *h) {
  int last = 0, type, id, rr;
  h->type = -1;
  h->usize = h->csize = -1;
  h->v2_compressed = 1;
  while ((rr = tc_field(t, &last, &type, &id)) == 1) {
    int32_t v;
    if (id == 1) {
      if (tc_i32(t, type, &v)) return -1;
      h->type = v;
    } else if (id == 2) {
      if (tc_i32(t, type, &h->usize)) return -1;
    } else if (id == 3) {
      if (tc_i32(t, type, &h->csize)) return -1;
    } else if (id == 5 || id == 7 || id == 8) {
      if (tc_enter(t, type)) return -1;
      int l2 = 0, ty2, id2, r2;
      if (id == 5) h->have_dp = 1;
      if (id == 7) h->have_dict = 1;
      if (id == 8) h->have_v2 = 1;
      while ((r2 = tc_field(t, &l2, &ty2, &id2)) == 1) {
        int32_t *dst = NULL;
        if (id2 == 1) dst = &h->nvalues;
        else if (id == 5 && id2 == 2) dst = &h->encoding;
        else if (id == 5 && id2 == 3) dst = &h->def_enc;
        else if (id == 7 && id2 == 2) dst = &h->encoding;
        else if (id == 8 && id2 == 2) dst = &h->nnulls;
        else if (id == 8 && id2 == 3) dst = &h->nrows;
        else if (id == 8 && id2 == 4) dst = &h->encoding;
        else if (id == 8 && id2 == 5) dst = &h->def_len;
        else if (id == 8 && id2 == 6) dst = &h->rep_len;
        if (dst) {
          if (tc_i32(t, ty2, dst)) return -1;
        } else if (id == 8 && id2 == 7 && (ty2 == TT_TRUE || ty2 == TT_FALSE)) {
          h->v2_compressed = ty2 == TT_TRUE;
        } else if (tc_skip(t, ty2, 0)) {
          return -1;
        }
      }
      if (r2 < 0) return -1;
      t->depth--;
    } else if (tc_skip(t, type, 0)) {
      return -1;
    }
  }
  return rr;
}

/* Decodes one column chunk into rows [row0, row0 + rg->num_rows). */
static nsl_status read_chunk(pq_reader *r, const pq_chunk *ch, int64_t row0, int64_t nrows) {
  const nsl_parquet *pq = r->pq;
  nsl_status st;
  if (ch->external)
    return rd_fail(r, NSL_ERR_FORMAT, "column data in an external file is not supported");
  if (ch->num_values != nrows)
    return rd_fail(r, NSL_ERR_FORMAT, "%lld values for %lld rows (nested data?)",
                   (long long)ch->num_values, (long long)nrows);
  int64_t start = ch->data_page_offset;
  if (ch->dict_page_offset >= 4 && ch->dict_page_offset < start) start = ch->dict_page_offset;
  if ((uint64_t)start > pq->size || (uint64_t)ch->total_compressed > pq->size - (uint64_t)start)
    return rd_fail(r, NSL_ERR_FORMAT, "column chunk [%lld, +%lld) lies outside the file data",
                   (long long)start, (long long)ch->total_compressed);
  const uint8_t *p = pq->data + start, *end = p + ch->total_compressed;
  r->have_dict = 0;
  int64_t done = 0;
  int npage = 0;
  while (done < nrows) {
    pq_page h;
    memset(&h, 0, sizeof h);
    tcr t = {.p = p, .end = end, .where = "a page header"};
    if (parse_page_header(&t, &h) < 0)
      return rd_fail(r, t.code, "page %d: corrupt page header: %s", npage, t.what);
    if (h.type < 0 || h.usize < 0 || h.csize < 0)
      return rd_fail(r, NSL_ERR_FORMAT, "page %d: header lacks type or sizes", npage);
    const uint8_t *src = t.p;
    if ((size_t)h.csize > (size_t)(end - src))
      return rd_fail(r, NSL_ERR_FORMAT, "page %d: %d bytes run past the column chunk", npage,
                     h.csize);
    p = src + h.csize;
    const uint8_t *body;
    if (h.type == PAGE_DICTIONARY) {
      if (!h.have_dict) return rd_fail(r, NSL_ERR_FORMAT, "dictionary page without its header");
      if ((st = decompress(r, ch->codec, src, (size_t)h.csize, (size_t)h.usize, &body)) != NSL_OK)
        return st;
      if ((st = read_dictionary(r, body, (size_t)h.usize, h.nvalues, h.encoding)) != NSL_OK)
        return st;
    } else if (h.type == PAGE_DATA) {
      if (!h.have_dp) return rd_fail(r, NSL_ERR_FORMAT, "data page without its header");
      int64_t n = h.nvalues;
      if (n < 0 || n > nrows - done)
        return rd_fail(r, NSL_ERR_FORMAT, "page %d: %lld values past the %lld rows", npage,
                       (long long)n, (long long)nrows);
      if ((st = decompress(r, ch->codec, src, (size_t)h.csize, (size_t)h.usize, &body)) != NSL_OK)
        return st;
      const uint8_t *q = body, *qend = body + h.usize;
      int64_t nnz = n;
      const uint32_t *lev = NULL;
      if (r->ci->nullable) {
        if (h.def_enc == ENC_RLE) {
          if (qend - q < 4) return rd_fail(r, NSL_ERR_FORMAT, "page %d: truncated levels", npage);
          uint32_t llen = rd_le32(q);
          q += 4;
          if (llen > (size_t)(qend - q))
            return rd_fail(r, NSL_ERR_FORMAT, "page %d: definition levels past the page", npage);
          if ((st = read_levels(r, ENC_RLE, q, llen, n, &nnz)) != NSL_OK) return st;
          q += llen;
        } else {
          if ((st = read_levels(r, h.def_enc, q, (size_t)(qend - q), n, &nnz)) != NSL_OK)
            return st;
          q += ((size_t)n + 7) / 8;
        }
        lev = r->lev;
      }
      if ((st = read_values(r, h.encoding, q, (size_t)(qend - q), lev, n, nnz, row0 + done)) !=
          NSL_OK)
        return st;
      done += n;
    } else if (h.type == PAGE_DATA_V2) {
      if (!h.have_v2) return rd_fail(r, NSL_ERR_FORMAT, "data page v2 without its header");
      int64_t n = h.nvalues;
      if (n < 0 || n > nrows - done || h.nrows != h.nvalues)
        return rd_fail(r, NSL_ERR_FORMAT, "page %d: %lld values / %d rows past the %lld rows",
                       npage, (long long)n, h.nrows, (long long)nrows);
      if (h.rep_len != 0)
        return rd_fail(r, NSL_ERR_FORMAT, "page %d: repetition levels in a flat column", npage);
      if (h.def_len < 0 || h.def_len > h.csize || h.def_len > h.usize)
        return rd_fail(r, NSL_ERR_FORMAT, "page %d: bad definition level length", npage);
      int64_t nnz = n;
      const uint32_t *lev = NULL;
      if (r->ci->nullable) {
        if ((st = read_levels(r, ENC_RLE, src, (size_t)h.def_len, n, &nnz)) != NSL_OK) return st;
        if (h.nnulls != n - nnz)
          return rd_fail(r, NSL_ERR_FORMAT, "page %d: %d NULLs declared, %lld found", npage,
                         h.nnulls, (long long)(n - nnz));
        lev = r->lev;
      } else if (h.def_len != 0 || h.nnulls != 0) {
        return rd_fail(r, NSL_ERR_FORMAT, "page %d: NULLs in a required column", npage);
      }
      size_t vc = (size_t)(h.csize - h.def_len), vu = (size_t)(h.usize - h.def_len);
      int codec = h.v2_compressed ? ch->codec : CODEC_UNCOMPRESSED;
      if ((st = decompress(r, codec, src + h.def_len, vc, vu, &body)) != NSL_OK) return st;
      if ((st = read_values(r, h.encoding, body, vu, lev, n, nnz, row0 + done)) != NSL_OK)
        return st;
      done += n;
    }
    /* index pages and unknown page types are skipped */
    npage++;
    if (done < nrows && p >= end)
      return rd_fail(r, NSL_ERR_FORMAT, "the pages hold %lld of %lld rows", (long long)done,
                     (long long)nrows);
  }
  return NSL_OK;
}

/* Whether a column may be read as nsl type want. */
static int type_ok(const nsl_parquet_colinfo *ci, nsl_type want) {
  int is_str = ci->physical == NSL_PQ_BYTE_ARRAY || ci->physical == NSL_PQ_FIXED_LEN_BYTE_ARRAY;
  if (is_str) return want == NSL_STR;
  return want == NSL_I64 || want == NSL_I32 || want == NSL_F64 || want == NSL_BOOL;
}

nsl_status nsl__parquet_read_column_as(nsl_parquet *pq, int idx, nsl_type type, nsl_dict *dict,
                                      nsl_column **out, nsl_error *err) {
  *out = NULL;
  if (idx < 0 || idx >= pq->ncols)
    return nsl_error_set(err, NSL_ERR_ARG, "parquet '%s': no column %d (it has %d)", pq->label, idx,
                         pq->ncols);
  const nsl_parquet_colinfo *ci = &pq->cols[idx];
  if (!type_ok(ci, type))
    return nsl_error_set(err, NSL_ERR_ARG, "parquet '%s': column '%s' (%s) cannot be read as %s",
                         pq->label, ci->name, nsl__pq_physical_name(ci->physical),
                         nsl_type_name(type));
  if (type == NSL_STR && !dict)
    return nsl_error_set(err, NSL_ERR_ARG, "parquet '%s': string column '%s' needs a dictionary",
                         pq->label, ci->name);
  pq_reader r;
  memset(&r, 0, sizeof r);
  r.pq = pq;
  r.ci = ci;
  r.col = idx;
  r.is_real = ci->physical == NSL_PQ_FLOAT || ci->physical == NSL_PQ_DOUBLE;
  r.is_str = type == NSL_STR;
  r.dict = dict;
  r.err = err;
  nsl_status st = NSL_OK;
  r.out = nsl_column_new(type, pq->nrows, type == NSL_STR ? dict : NULL);
  if (!r.out) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "parquet '%s': out of memory for %lld rows of '%s'",
                       pq->label, (long long)pq->nrows, ci->name);
    goto done;
  }
  int64_t row = 0;
  for (int g = 0; g < pq->nrg; g++) {
    r.rg = g;
    const pq_rowgroup *rg = &pq->rgs[g];
    if (rg->num_rows == 0) continue;
    if ((st = read_chunk(&r, &rg->chunks[idx], row, rg->num_rows)) != NSL_OK) goto done;
    row += rg->num_rows;
  }
done:
  free(r.page);
  free(r.lev);
  free(r.idx);
  free(r.iv);
  free(r.dv);
  free(r.dict_iv);
  free(r.dict_dv);
  if (st != NSL_OK) {
    nsl_column_release(r.out);
    return st;
  }
  *out = r.out;
  return NSL_OK;
}

nsl_status nsl__parquet_read_column(nsl_parquet *pq, int idx, nsl_dict *dict, nsl_column **out,
                                   nsl_error *err) {
  if (idx < 0 || idx >= pq->ncols) {
    *out = NULL;
    return nsl_error_set(err, NSL_ERR_ARG, "parquet '%s': no column %d (it has %d)", pq->label, idx,
                         pq->ncols);
  }
  return nsl__parquet_read_column_as(pq, idx, pq->cols[idx].type, dict, out, err);
}
