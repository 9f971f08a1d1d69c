/*
 * parquet.h -- a focused Apache Parquet reader (private to nsl).
 *
 * Reads the flat Parquet files that nsys and nsys-jax write (pandas /
 * pyarrow output): the footer's Thrift compact metadata, data pages V1 and
 * V2, dictionary pages, the encodings PLAIN, PLAIN_DICTIONARY,
 * RLE_DICTIONARY and RLE (booleans, definition levels), and the codecs
 * UNCOMPRESSED, SNAPPY, GZIP and ZSTD.  Nested schemas (lists, maps,
 * groups, repeated fields) are rejected when the file is opened.
 *
 * Basic outline:
 *   1. nsl__parquet_open_mem(&pq, label, data, size, free_fn, &err) (a zip
 *      member already in memory) or nsl__parquet_open_file(&pq, path, &err)
 *      parses the footer; no column data is read yet.
 *   2. nsl__parquet_ncols / nsl__parquet_nrows / nsl__parquet_colname /
 *      nsl__parquet_find / nsl__parquet_column_info describe the columns.
 *   3. nsl__parquet_read_column(pq, idx, dict, &col, &err) decodes one whole
 *      column (every row group) into a new nsl_column;
 *      nsl__parquet_read_column_as picks the nsl type.
 *   4. nsl__parquet_close(pq).
 *
 * Every offset and length in the file is checked: a truncated or corrupt
 * file gives NSL_ERR_FORMAT (or NSL_ERR_LIMIT for absurd sizes), never a
 * crash.  Reading a column does not modify the handle: several threads may
 * read columns of one file at once, each interning into its own nsl_dict
 * (dictionaries are not thread-safe).
 */
#ifndef NSL_SOURCE_PARQUET_H
#define NSL_SOURCE_PARQUET_H

#include "nsl/nsl.h"

/* Physical types (values of the Parquet Thrift enum Type). */
typedef enum nsl_pq_physical {
  NSL_PQ_BOOLEAN = 0,
  NSL_PQ_INT32 = 1,
  NSL_PQ_INT64 = 2,
  NSL_PQ_INT96 = 3,     /* legacy timestamps: decoded to ns since the epoch */
  NSL_PQ_FLOAT = 4,
  NSL_PQ_DOUBLE = 5,
  NSL_PQ_BYTE_ARRAY = 6,
  NSL_PQ_FIXED_LEN_BYTE_ARRAY = 7
} nsl_pq_physical;

/* The logical meaning of a column, merged from the LogicalType and the
 * older ConvertedType annotations (LogicalType wins when both exist). */
typedef enum nsl_pq_logical {
  NSL_PQ_L_NONE = 0,
  NSL_PQ_L_STRING,      /* UTF8 */
  NSL_PQ_L_ENUM,
  NSL_PQ_L_JSON,
  NSL_PQ_L_BSON,
  NSL_PQ_L_UUID,
  NSL_PQ_L_DECIMAL,     /* scale, precision */
  NSL_PQ_L_DATE,        /* days since the epoch */
  NSL_PQ_L_TIME,        /* unit */
  NSL_PQ_L_TIMESTAMP,   /* unit, utc */
  NSL_PQ_L_INTEGER,     /* int_bits, int_signed */
  NSL_PQ_L_FLOAT16,
  NSL_PQ_L_NULL,        /* always-NULL column */
  NSL_PQ_L_OTHER        /* an annotation this reader does not interpret */
} nsl_pq_logical;

typedef enum nsl_pq_unit {
  NSL_PQ_UNIT_NONE = 0,
  NSL_PQ_UNIT_MILLIS = 1,
  NSL_PQ_UNIT_MICROS = 2,
  NSL_PQ_UNIT_NANOS = 3
} nsl_pq_unit;

/* One column of a flat file. */
typedef struct nsl_parquet_colinfo {
  const char *name;
  nsl_pq_physical physical;
  int type_length;          /* FIXED_LEN_BYTE_ARRAY width, else 0 */
  int nullable;             /* OPTIONAL (may hold NULLs) */
  int converted;            /* raw ConvertedType, -1 when absent */
  nsl_pq_logical logical;
  nsl_pq_unit unit;         /* TIME / TIMESTAMP */
  int utc;                  /* TIMESTAMP isAdjustedToUTC */
  int int_bits, int_signed; /* INTEGER: 8/16/32/64; signed 1/0 */
  int scale, precision;     /* DECIMAL */
  nsl_type type;            /* the nsl type nsl__parquet_read_column gives */
} nsl_parquet_colinfo;

typedef struct nsl_parquet nsl_parquet;

/* Opens a Parquet image of size bytes at data.  label names it in error
 * messages (e.g. "proc0.zip:thread-metadata.parquet").  When free_data is
 * not NULL the reader owns data and calls free_data(data) on close, and
 * also when opening fails; otherwise data must outlive the handle. */
nsl_status nsl__parquet_open_mem(nsl_parquet **out, const char *label, const void *data, size_t size,
                                void (*free_data)(void *), nsl_error *err);
/* Reads the file at path into memory and opens it. */
nsl_status nsl__parquet_open_file(nsl_parquet **out, const char *path, nsl_error *err);
/* Releases the handle (NULL is fine). */
void nsl__parquet_close(nsl_parquet *pq);

int nsl__parquet_ncols(const nsl_parquet *pq);
int64_t nsl__parquet_nrows(const nsl_parquet *pq);
int nsl__parquet_nrowgroups(const nsl_parquet *pq);
/* Name of column idx, or NULL when out of range. */
const char *nsl__parquet_colname(const nsl_parquet *pq, int idx);
/* Index of the column called name, or -1. */
int nsl__parquet_find(const nsl_parquet *pq, const char *name);
/* Description of column idx, or NULL when out of range. */
const nsl_parquet_colinfo *nsl__parquet_column_info(const nsl_parquet *pq, int idx);
/* The writer ("parquet-cpp-arrow version 16.1.0"), or "" when absent. */
const char *nsl__parquet_created_by(const nsl_parquet *pq);
/* Value of the file's key/value metadata entry key (e.g. "pandas"), or NULL. */
const char *nsl__parquet_metadata(const nsl_parquet *pq, const char *key);
/* Name of a physical type / logical type, for messages. */
const char *nsl__pq_physical_name(nsl_pq_physical t);
const char *nsl__pq_logical_name(nsl_pq_logical t);

/* Decodes column idx over every row group into a new column (*out, one
 * reference owned by the caller) of the column's default type
 * (colinfo->type): BOOLEAN -> NSL_I32 (0/1), INT32 / INT64 / INT96 ->
 * NSL_I64, FLOAT / DOUBLE -> NSL_F64, BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY ->
 * NSL_STR (bytes interned into dict, which must then be non-NULL).  NULLs
 * are the sentinels of nsl.h.  Integer values are raw (a TIMESTAMP column
 * keeps its unit; see colinfo). */
nsl_status nsl__parquet_read_column(nsl_parquet *pq, int idx, nsl_dict *dict, nsl_column **out,
                                   nsl_error *err);
/* Same, converting to type:
 *   integer/boolean columns -> NSL_I64, NSL_I32 (NSL_ERR_FORMAT when a value
 *     does not fit), NSL_F64, NSL_BOOL (nonzero is 1, NULL is 0);
 *   FLOAT / DOUBLE columns -> NSL_F64, or NSL_I64 / NSL_I32 when every value
 *     is integral (NaN becomes NULL; pandas stores nullable integers so);
 *   string columns -> NSL_STR only. */
nsl_status nsl__parquet_read_column_as(nsl_parquet *pq, int idx, nsl_type type, nsl_dict *dict,
                                      nsl_column **out, nsl_error *err);

#endif
