/*
 * bundle_internal.h -- what the bundle reader, writer and combiner share:
 * the member-name rules and small formatting helpers (bundle_util.c), the
 * manifest checks (bundle_manifest.c), the zip central directory (zipdir.c).
 */
#ifndef NSL_SOURCE_BUNDLE_INTERNAL_H
#define NSL_SOURCE_BUNDLE_INTERNAL_H

#include <jansson.h>
#include <nettle/sha2.h>
#include <stdint.h>

#include "core/atomic_write.h"
#include "nsl/bundle.h"

#define NSL__BUNDLE_NAME_MAX 4096

/* NULL when name is an acceptable member path, else what is wrong with it
 * ("is an absolute path", "has a '..' component", ...). */
const char *nsl__bundle_name_problem(const char *name);

/* Checks the structure of a manifest (types, format name and version,
 * member list, reports entries, duplicate paths and ranks).  On failure
 * sets err to code with the message "<prefix>: manifest.json: <problem>". */
nsl_status nsl__manifest_check(const json_t *m, nsl_status code, const char *prefix, nsl_error *err);

/* Copies name into out (cap bytes) for a message: control characters and
 * invalid UTF-8 become '?', a long name is cut with "...". */
void nsl__printable(const char *name, char *out, size_t cap);

/* "1.5 GiB", "312 bytes": human-readable size for messages. */
void nsl__fmt_bytes(uint64_t n, char out[32]);

/* Finishes ctx and writes the digest as 64 lowercase hex digits + NUL. */
void nsl__sha256_hex(struct sha256_ctx *ctx, char out[65]);

/* 1 when name looks already compressed (.xz, .zst, .gz, .png, ...), so
 * deflating it again would only cost time. */
int nsl__bundle_is_precompressed(const char *name);

/* The identity of the file b was read from, as it was when opened; 0 for a
 * bundle in memory (nothing to compare with). */
int nsl__bundle_file_id(const nsl_bundle *b, nsl__file_id *id);

/* 1 when the n bytes at h start with a zip signature (nsl_bundle_sniff's test). */
int nsl__zip_head(const unsigned char *h, size_t n);

/* nsl_bundle_open over fd, open for reading on path (the bundle owns it
 * from now on, closed on failure too): the opening of an input that
 * src/source/open.c has already opened, never a second open of the path. */
nsl_status nsl__bundle_open_fd(nsl_bundle **out, const char *path, int fd, const nsl_bundle_options *opts,
                               nsl_error *err);
/* One more reference to b: the holder calls nsl_bundle_close once when done
 * (the last close frees).  Returns b. */
nsl_bundle *nsl__bundle_retain(nsl_bundle *b);
/* The bundle's file, open for reading (-1 for a memory image): what the
 * columnar cache reads a bundle's stored columns and identity from. */
int nsl__bundle_fd(const nsl_bundle *b);

/* nsl_bundle_add_report_range over a bundle already open (an nsl bundle:
 * STRICT); the reports added keep references to b. */
nsl_status nsl__bundle_add_range(nsl_trace *tr, nsl_bundle *b, int first, int count, int *total, nsl_error *err);

/* The manifest parsed (borrowed), or NULL in raw mode; its "reports" entry
 * whose "member" is member (borrowed), or NULL. */
const json_t *nsl__bundle_manifest(const nsl_bundle *b);
const json_t *nsl__bundle_report_entry(const nsl_bundle *b, const char *member);
/* nsl_bundle_writer_finish with the caller's fields as a JSON object
 * (copied, never modified; NULL: none). */
nsl_status nsl__bundle_writer_finish_json(nsl_bundle_writer *w, const json_t *manifest, nsl_error *err);

/* "2025-11-25T22:09:00Z" for t (UTC). */
void nsl__iso8601_utc(int64_t t, char out[32]);

/* An aligned member (archive-format/CACHE.md, section 6: the columns of
 * `nsl bundle --columns`) holds a file of n bytes as: P (uint64, little
 * endian, 8 <= P < 16), P - 8 zeros, the file, 16 - P zeros; P puts the
 * file at an offset of the zip that is a multiple of 8, so a reader maps it
 * straight from the zip.  Every writer of such a member, a copy included,
 * goes through these two: begin_aligned starts the stored member of n + 16
 * bytes and writes what comes before the file (P chosen for where the
 * member lands), the caller writes the n bytes of the file, end_aligned
 * writes the trailing zeros and ends the member. */
nsl_status nsl__bundle_writer_begin_aligned(nsl_bundle_writer *w, const char *name, uint64_t n, nsl_error *err);
nsl_status nsl__bundle_writer_end_aligned(nsl_bundle_writer *w, nsl_error *err);
/* P of an aligned member of `size` bytes whose first 8 bytes are `lead`;
 * 0 when they do not follow the layout above. */
uint64_t nsl__aligned_pad(const unsigned char lead[8], uint64_t size);
/* The sha256 (hex) of a member already written, or NULL. */
const char *nsl__bundle_writer_sha256(const nsl_bundle_writer *w, const char *name);
/* qsort / bsearch comparator of two `const char *` (strcmp order). */
int nsl__cmp_str_ptr(const void *a, const void *b);

/* ---- the zip central directory, parsed by nsl itself (zipdir.c) ---------
 * The reader trusts neither libarchive's view nor the archive alone: the
 * central directory is parsed here from the PKWARE APPNOTE (zip64
 * included), every rule is applied to it, and libarchive's walk over the
 * same file must then agree with it entry for entry. */

typedef struct nsl__zip_entry {
  char *name;              /* raw name bytes + NUL (a name holding NUL is refused) */
  uint64_t usize, csize;   /* uncompressed / compressed bytes */
  uint64_t offset;         /* of the local header */
  uint32_t crc;
  uint16_t flags, method, made_by;
  uint32_t ext_attr;
  unsigned type;           /* S_IFMT bits from Unix attributes, 0 when not given */
  int is_dir;              /* a folder entry (name ends in '/', or folder attribute) */
} nsl__zip_entry;

typedef struct nsl__zip_dir {
  nsl__zip_entry *e;
  size_t n;
  uint64_t cd_offset;      /* where the central directory starts: entries end before it */
} nsl__zip_dir;

/* Reads len bytes at off into buf; 0, or -1 with errno set. */
typedef int (*nsl__pread_fn)(void *ctx, void *buf, size_t len, uint64_t off);

/* Parses the central directory of a zip of `size` bytes.  NSL_ERR_FORMAT
 * for anything that is not a complete, single-disk zip whose records fit in
 * the file; NSL_ERR_LIMIT when it declares more than max_entries entries
 * (0: no bound).  Messages start "cannot open '<label>': ". */
nsl_status nsl__zip_dir_read(nsl__zip_dir *d, nsl__pread_fn rd, void *ctx, uint64_t size,
                             uint64_t max_entries, const char *label, nsl_error *err);
void nsl__zip_dir_free(nsl__zip_dir *d);
/* The central directory of b as parsed and checked at open (every entry,
 * folders included), valid while b is open. */
const nsl__zip_dir *nsl__bundle_zip_dir(const nsl_bundle *b);

#endif
