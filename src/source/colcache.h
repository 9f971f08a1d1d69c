/*
 * colcache.h -- the columnar cache: a layer around a report's source that
 * keeps the columns it loaded in files under <cache root>/columns/ and reads
 * them on later opens, whole, into memory of its own -- or maps a large one
 * under a read lease (src/core/leased_map.h), which no write in place
 * reaches: the file may change under a run (format: archive-format/CACHE.md).
 *
 * Basic outline:
 *   1. A source that opened a report calls nsl__cache_add_source instead of
 *      nsl_trace_add_source, naming the input file (and, for a report inside
 *      an archive, its member or stem).  With the cache on and usable the
 *      trace gets a wrapper that answers describe/count/load from the cache
 *      entry and goes to the wrapped source for what the entry lacks, adding
 *      it; otherwise (off, unwritable: one warning) the source as it is.
 *   2. nsl_cache_list / nsl_cache_clear (nsl/cache.h) serve `nsl cache list|clear`.
 * Every file of an entry is checked before use (format version, the input's
 * identity, checksums of header and data, bounds); a file that fails is
 * ignored and written again.  Results never depend on the cache.
 */
#ifndef NSL_SOURCE_COLCACHE_H
#define NSL_SOURCE_COLCACHE_H

#include <stdint.h>

#include "nsl/bundle.h"
#include "nsl/cache.h"
#include "nsl/nsl.h"
#include "nsl/source.h"

#define NSL_CACHE_FORMAT 3   /* bump with every change of archive-format/CACHE.md */
#define NSL__CACHE_HEAD_BYTES 256   /* a cache file's header */
/* A cache file of at least this many bytes is mapped under a read lease
 * (leased_map.h) where the file system grants one; a smaller one is read:
 * the table of leased mappings stays small, as do the descriptors they hold. */
#define NSL__CACHE_LEASE_MIN ((int64_t)1 << 20)

/* Adds the report (ops, src, info) to tr, through the cache when it is on:
 * file is the input on disk (an export, a bundle, an nsys-jax archive), fd
 * that file as the caller holds it open (its identity is read from there;
 * -1: the cache opens file), sub the report within it ("" for a plain
 * export).  On failure src is not closed (as nsl_trace_add_source). */
nsl_status nsl__cache_add_source(nsl_trace *tr, const nsl_source_ops *ops, void *src, const nsl_report_info *info,
                                 const char *file, int fd, const char *sub, nsl_error *err);
/* When the cache folder holds the columns of nsys export `file` (fd: as
 * the caller holds it open, or -1) with its metadata, as an earlier open of
 * the same file (its identity, archive-format/CACHE.md section 3) left them,
 * adds the report to tr as `shown` without opening the export: SQLite opens
 * it only if a column the entry lacks, or SQL, is asked for (at 1,024
 * exports the opens took 0.45 s of every run).  Returns 1 and sets *st when
 * it did, 0 when the export must be opened. */
int nsl__cache_add_lazy_export(nsl_trace *tr, const char *file, int fd, const char *shown, nsl_status *st,
                               nsl_error *err);
/* The same for report `member` of bundle b: besides the cache folder, the
 * columns the bundle stores (nsl bundle --columns) are used, read from the
 * zip through b (the wrapper keeps a reference), even with the cache off. */
nsl_status nsl__cache_add_bundle_source(nsl_trace *tr, const nsl_source_ops *ops, void *src,
                                        const nsl_report_info *info, nsl_bundle *b, const char *member,
                                        nsl_error *err);
/* When bundle b stores the columns of report `member` with its metadata
 * (nsl bundle --columns), adds the report to tr without reading its export:
 * the export is decompressed only if a column the bundle lacks, or SQL, is
 * asked for, from b, which the report keeps open.  Returns 1 and sets *st when it did, 0 when the report must be
 * opened from its export. */
int nsl__cache_add_stored_report(nsl_trace *tr, nsl_bundle *b, const char *member, nsl_status *st,
                                 nsl_error *err);
/* A stored column file (its first n bytes at head) of report old_member,
 * whose export has sha256 `sha`, made a file of report new_member: the
 * same export under another name (nsl combine renames clashing reports).
 * 0 when done; -1, head untouched, when the header is not a sound one of
 * old_member (the copy then holds what the reader ignores). */
int nsl__cache_stored_rename(void *head, size_t n, const char *old_member, const char *new_member, const char *sha);
/* The cache folder as a whole (colcache_folder.c): the small file path read
 * whole (NUL-terminated; NULL when unreadable or not a regular file: links
 * are not followed), the cache's own files of entry folder dir removed
 * (regular files of the user with the cache's header; never a link, never a
 * sub-folder; dir itself with rmdir_too; returns the bytes freed), and the
 * least recently used entries of columns/ removed until the folder is
 * within NSL_CACHE_MAX (`except`, the entry just used, last). */
char *nsl__cache_slurp(const char *path, size_t cap);
int64_t nsl__cache_remove_files(const char *dir, int rmdir_too, int64_t *files);
void nsl__cache_evict(const char *except);
/* The checks of a cache file alone, over bytes in memory (8-aligned), for
 * tests and fuzzing: the column (a copy) or NULL; the table description
 * (1) or 0.  nsl__cache_seal makes magic, version, identity and checksums
 * right for whatever the rest of the bytes say, so that a fuzzer reaches the
 * checks behind them. */
nsl_column *nsl__cache_column_from_bytes(const void *file, size_t n, uint64_t ident, const char *table,
                                         const char *column, nsl_type type, nsl_dict *dict, int64_t off);
int nsl__cache_table_from_bytes(const void *file, size_t n, uint64_t ident, const char *table, int *found,
                                int64_t *rows, int *nextra);
void nsl__cache_seal(void *file, size_t n, uint64_t ident);

#endif
