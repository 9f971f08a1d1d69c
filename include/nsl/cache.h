/*
 * cache.h -- nsl's columnar cache, seen from outside: whether loads go
 * through it, its entries, and columns stored in bundles.
 *
 * Basic outline:
 *   1. Traces opened with nsl_trace_open load through the cache unless
 *      their options say cache = 0 (the default: NSL_NO_CACHE=1 unset): a
 *      column loaded once is kept under the cache folder ($NSL_CACHE_DIR,
 *      else $XDG_CACHE_HOME/nsl, else ~/.cache/nsl) and read on the next
 *      open.  Results never depend on it (archive-format/CACHE.md).
 *   2. nsl_cache_list / nsl_cache_clear list and empty the folder.
 *   3. nsl_bundle_writer_add_columns stores an export's columns in a bundle
 *      being written (nsl bundle --columns); readers map them from the zip.
 * This header never includes lua.h.
 */
#ifndef NSL_CACHE_H
#define NSL_CACHE_H

#include <stdint.h>

#include "nsl/bundle.h"
#include "nsl/nsl.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Whether a trace goes through the cache is its own option
 * (nsl_open_options.cache in nsl/nsl.h). */
/* The size bound of the cache folder: NSL_CACHE_MAX (bytes, or with a K, M,
 * G, T suffix), default 16 GiB; least recently used entries go first. */
int64_t nsl_cache_max_bytes(void);

/* One entry of the cache folder. */
typedef struct nsl_cache_entry {
  const char *folder;   /* "columns" (this cache) or "exports" (.nsys-rep exports) */
  const char *name;     /* its file or folder name there */
  const char *input;    /* the input it caches ("" when unknown) */
  const char *sub;      /* the report within the input ("" for none) */
  int64_t bytes;        /* on disk */
  int64_t files;
  int64_t last_used;    /* seconds since the epoch */
} nsl_cache_entry;
/* Calls fn for every entry of columns/ and exports/, most recently used
 * first; *root (may be NULL) receives the cache folder, malloc'd. */
nsl_status nsl_cache_list(char **root, void (*fn)(void *ctx, const nsl_cache_entry *e), void *ctx, nsl_error *err);
/* Removes every entry of columns/ and exports/: *bytes freed, *entries removed. */
nsl_status nsl_cache_clear(int64_t *bytes, int64_t *entries, nsl_error *err);

/* Stores the columnar form of the export at export_path -- every table of
 * the data model it has, every column -- in w, beside its member `member`
 * (already written), as stored members columns/<member>/... aligned so that
 * readers map them straight from the zip (archive-format/CACHE.md, section 6). */
nsl_status nsl_bundle_writer_add_columns(nsl_bundle_writer *w, const char *member, const char *export_path,
                                         nsl_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif
