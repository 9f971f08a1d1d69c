/*
 * colcache_internal.h -- what the files of the columnar cache share: a cache
 * file's header, the wrapper source's state, and the functions one file
 * serves to the others.  Not installed; only src/source/colcache*.c include it.
 *
 *   colcache.c          the wrapper source: its operations, the identity of
 *                       an input, the entries open in this process
 *   colcache_format.c   a cache file's bytes: hashing, names, header, the
 *                       checks, table descriptions and columns written and read
 *   colcache_io.c       an entry's files on disk: its folder set up, files read
 *                       whole into memory of their own or, when large, mapped
 *                       under a read lease (never through a link), and
 *                       published whole
 *   colcache_stored.c   columns stored in bundles: written (nsl bundle
 *                       --columns), found, and a report opened from them
 *   colcache_folder.c   the cache folder as a whole (colcache.h)
 */
#ifndef NSL_SOURCE_COLCACHE_INTERNAL_H
#define NSL_SOURCE_COLCACHE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/atomic_write.h"
#include "core/nsl_internal.h"
#include "source/colcache.h"

/* ---- a cache file ---- */

#define NSL__CACHE_MAGIC "NSLCACHE"
#define NSL__CACHE_BOM 0x0102030405060708ULL
enum { NSL__CACHE_KIND_COLUMN = 1, NSL__CACHE_KIND_TABLE = 2, NSL__CACHE_KIND_INFO = 3 };

typedef struct nsl__cache_head {
  char magic[8];
  uint32_t version, kind;
  uint64_t bom, ident;
  char table[64], column[64];
  uint32_t type, found;        /* column: its type; table: 1 when the source has it */
  int64_t rows;                /* column: its length; table: row count or -1 */
  uint64_t data_off, data_bytes, data_hash;
  uint64_t dict_off, dict_count, dict_bytes, dict_hash;
  uint8_t pad[NSL__CACHE_HEAD_BYTES - 8 - 8 - 16 - 128 - 8 - 8 - 56 - 8];
  uint64_t head_hash;          /* of the bytes before it */
} nsl__cache_head;
_Static_assert(sizeof(nsl__cache_head) == NSL__CACHE_HEAD_BYTES, "cache file header is 256 bytes");

/* A column file stored in a bundle (nsl bundle --columns): where its
 * member's data lies in the zip. */
typedef struct nsl__cache_emb {
  char *name;                  /* after "columns/<report member>/" */
  uint64_t off, size;
} nsl__cache_emb;

/* The wrapper source of one report (colcache.c), or the writer of a
 * bundle's stored columns (colcache_stored.c). */
typedef struct nsl__cache_src {
  nsl_source_ops ops;          /* the wrapper's, pointing here */
  const nsl_source_ops *in;    /* the wrapped source */
  void *src;
  char *dir;                   /* the entry's folder; NULL: no cache folder in use */
  char *label;
  uint64_t ident;
  int nowrite;                 /* a write failed: read only from now on */
  int wrote;                   /* a file was added: the size bound is checked at close */
  /* columns stored in the bundle the report comes from */
  nsl_bundle *zip;             /* that bundle (a reference of this wrapper's); NULL for none */
  nsl__cache_emb *emb;
  size_t nemb;
  uint64_t emb_ident;
  /* a bundle report opened lazily: its export is read from zip only when a column is missing or SQL is run */
  char *lazy_member;
  /* an export opened lazily from the cache folder (nsl__cache_add_lazy_export): its file, opened only when a
   * column is missing or SQL is run, and what stat said of it when the report was added */
  char *lazy_path;
  nsl__file_id lazy_id;
  int64_t lazy_ctime_ns;
  unsigned char lazy_head[100];   /* its first bytes, read with its identity */
  size_t lazy_nhead;
  const char *kind;            /* the wrapped source's kind (in may be opened later) */
  /* writing into a bundle instead of the cache folder (nsl_bundle_writer_add_columns) */
  nsl_bundle_writer *bw;
  const char *bmember;
  nsl_status bw_rc;
  nsl_error *bw_err;
} nsl__cache_src;

/* The report's metadata as its export gives it (colcache_stored.c): written as c's `info` file (nothing
 * when a field would not fit it), and read back into *info (host into host, 256 bytes; name, rank and path
 * left as they are); nsl__cache_read_info returns 1 for a sound file of c's, else 0. */
void nsl__cache_write_info(nsl__cache_src *c, const nsl_report_info *info);
int nsl__cache_read_info(const nsl__cache_src *c, nsl_report_info *info, char *host);

/* Adds c, the wrapper of an nsys export not opened yet (a bundle member's,
 * c->lazy_member, or a file's, c->lazy_path), to tr as the report info
 * describes (the trace copies its strings); c is freed when that fails. */
nsl_status nsl__cache_add_unopened(nsl_trace *tr, nsl__cache_src *c, const nsl_report_info *info, nsl_error *err);

/* A table's description: found or not, extra columns, row count. */
typedef struct nsl__cache_meta {
  int known, found;
  int64_t rows;
  int nextra;
  char names[32][64];
  nsl_type types[32];
} nsl__cache_meta;

/* ---- colcache_format.c ---- */

/* A 64-bit checksum of n bytes (archive-format/CACHE.md). */
uint64_t nsl__cache_hash64(const void *p, size_t n, uint64_t seed);
/* h made the header of a file of c's (its identity) of the given kind and names. */
void nsl__cache_head_init(nsl__cache_head *h, const nsl__cache_src *c, uint32_t kind, const char *table,
                          const char *column);
/* Whether the n bytes at h are a sound cache file of that identity, kind and names. */
int nsl__cache_sound_file(const nsl__cache_head *h, size_t n, uint64_t ident, uint32_t kind, const char *table,
                          const char *column);
/* A table's description from c's files (1) or 0; written as a file of c's. */
int nsl__cache_read_meta(const nsl__cache_src *c, const char *table, nsl__cache_meta *m);
void nsl__cache_write_meta(nsl__cache_src *c, const char *table, const nsl__cache_meta *m);
/* Column `column` of `table` from c's files, as a column of the trace
 * (strings in dict, times shifted by off), in two steps: the file mapped
 * and checked (NULL: absent or bad; it touches nothing shared, so several
 * run at once), then the column made of it (strings into dict: one at a
 * time), which releases the mapping.  nsl__cache_write_column writes col
 * (rows of this report, times unshifted) as a file of c's. */
nsl__mapping *nsl__cache_map_column(const nsl__cache_src *c, const char *table, const char *column,
                                    const nsl__cache_head **head);
nsl_column *nsl__cache_column_of(const nsl__cache_head *head, nsl__mapping *map, nsl_type type, nsl_dict *dict,
                                 int64_t off);
void nsl__cache_write_column(nsl__cache_src *c, const char *table, const char *column, const nsl_column *col);

/* ---- colcache_io.c ---- */

/* Writes header h + parts whole as file `name` of c's entry, or as a member
 * of the bundle c writes; a failure stops writing (one warning). */
void nsl__cache_publish(nsl__cache_src *c, const char *name, nsl__cache_head *h, const void *const *parts,
                        const size_t *lens, int nparts);
/* Orders stored column files by name. */
int nsl__cache_emb_cmp(const void *a, const void *b);
/* File `name` of c (the bundle's stored columns, else the entry's folder),
 * read into memory of its own (a large file of the folder mapped under a
 * read lease) and checked: *head, *size; NULL when absent or bad. */
nsl__mapping *nsl__cache_map_file(const nsl__cache_src *c, const char *name, uint32_t kind, const char *table,
                                  const char *column, const nsl__cache_head **head, size_t *size);
/* Sets up c's entry (key) in the cache folder for report sub of input file;
 * c->dir stays NULL without a usable folder. */
void nsl__cache_open_entry(nsl__cache_src *c, const char *file, const char *sub, uint64_t key);

/* ---- colcache.c: the wrapper's operations (nsl_source_ops over a nsl__cache_src) ---- */

nsl_status nsl__cache_describe(void *p, const char *name, nsl_table *t, nsl_error *err);
nsl_status nsl__cache_count(void *p, const char *name, int64_t *out, nsl_error *err);
nsl_status nsl__cache_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                           nsl_dict *dict, int64_t off, nsl_column **out, nsl_error *err);
void nsl__cache_close(void *p);
nsl_status nsl__cache_sql(void *p, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err);
nsl_status nsl__cache_metadata(void *p, nsl_metadata_fn fn, void *ctx, nsl_error *err);
/* Frees c (not the wrapped source). */
void nsl__cache_free(nsl__cache_src *c);

/* ---- colcache_stored.c ---- */

/* The identity of the columns a bundle stores for report `member` (export sha256 `sha`). */
uint64_t nsl__cache_embedded_ident(const char *member, const char *sha);
/* Finds the stored column files of report `member` in bundle b; c keeps a
 * reference to b when it found any. */
void nsl__cache_find_embedded(nsl__cache_src *c, nsl_bundle *b, const char *member);

#endif
