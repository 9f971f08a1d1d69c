/*
 * bundle.h -- nsl bundles: zip archives of nsys exports, metadata and
 * sources with a manifest (format "nsl-bundle", see archive-format/).
 *
 * Basic outline of reading:
 *   1. nsl_bundle_options_init(&o) gives the default limits and mode;
 *      change o.limits or o.mode (RAW opens any zip, e.g. nsys-jax archives).
 *   2. nsl_bundle_open(&b, "run.zip", &o, &err) checks every member's path,
 *      type and declared size from the zip's central directory, and the
 *      manifest against the members.  Nothing but manifest.json is
 *      decompressed, nothing is ever written to disk.
 *   3. nsl_bundle_count / nsl_bundle_member_at / nsl_bundle_find list the
 *      members (regular files; folder entries are skipped).
 *   4. nsl_bundle_read_member(b, "reports/r0.sqlite", &buf, &len, &err)
 *      decompresses one member into memory (release with free()); its size
 *      and sha256 are checked against the manifest on the way.
 *      nsl_bundle_stream_member hands it over in chunks instead.
 *   5. nsl_bundle_close(b) (reports added to a trace from b keep it open
 *      until they close: each holds a reference).
 *
 * Basic outline of writing:
 *   1. nsl_bundle_writer_open(&w, "out.zip", &err) creates a temporary file
 *      beside out.zip; out.zip itself is untouched until step 3.
 *   2. nsl_bundle_writer_add_memory / _add_file / _begin+_write+_end add
 *      members; sha256 and size are computed as the bytes go by.
 *   3. nsl_bundle_writer_finish(w, manifest, &err) adds manifest.json (the
 *      caller's fields plus format, versions, time and the member list),
 *      fsyncs and renames over out.zip; or nsl_bundle_writer_abort(w).
 *      Both release w; on any failure nothing is left on disk.
 *
 * nsl_bundle_add_reports adds a bundle's reports to a trace (nsl.open);
 * nsl_bundle_copy_members rewrites a bundle with members replaced (--embed);
 * nsl_bundle_combine merges per-rank bundles into one (nsl combine).
 *
 * Reading handles may be used from several threads at once
 * (nsl_bundle_read_member and nsl_bundle_stream_member lock internally);
 * a writer belongs to one thread.
 */
#ifndef NSL_BUNDLE_H
#define NSL_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/nsl.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define NSL_BUNDLE_FORMAT "nsl-bundle"
#define NSL_BUNDLE_FORMAT_VERSION 1      /* highest version this nsl reads and the one it writes */
#define NSL_BUNDLE_MANIFEST "manifest.json"

/* ---- reading ---------------------------------------------------------- */

/* Bounds a reader enforces before it allocates anything, and again while it
 * decompresses (headers may lie). 0 disables a bound. */
typedef struct nsl_bundle_limits {
  uint64_t max_member;     /* uncompressed bytes of one member (default 4 GiB) */
  uint64_t max_total;      /* uncompressed bytes of all members (default 64 GiB) */
  double max_ratio;        /* total uncompressed / archive bytes (default 200) ... */
  uint64_t ratio_floor;    /* ... checked only once the total passes this (default 64 MiB) */
  uint64_t max_members;    /* entries in the zip (default 1,000,000) */
  uint64_t max_manifest;   /* bytes of manifest.json (default 64 MiB) */
} nsl_bundle_limits;

typedef enum nsl_bundle_mode {
  NSL_BUNDLE_STRICT = 0,   /* must be an nsl bundle: manifest.json required and checked */
  NSL_BUNDLE_RAW = 1,      /* any zip (nsys-jax archives): no manifest, same safety rules */
  NSL_BUNDLE_AUTO = 2      /* a bundle if manifest.json is present, else raw */
} nsl_bundle_mode;

typedef struct nsl_bundle_options {
  nsl_bundle_limits limits;
  nsl_bundle_mode mode;
  int verify;              /* nonzero: decompress and hash every member at open */
} nsl_bundle_options;

/* A member (a regular file) of an opened zip.  Strings are owned by the
 * bundle and live until nsl_bundle_close. */
typedef struct nsl_bundle_member {
  const char *name;        /* UTF-8 path inside the zip, e.g. "reports/r0.sqlite" */
  uint64_t size;           /* uncompressed bytes, as the central directory declares */
  const char *sha256;      /* 64 lowercase hex digits from the manifest; NULL in raw mode */
  int64_t mtime;           /* seconds since the epoch, 0 when unknown */
} nsl_bundle_member;

typedef struct nsl_bundle nsl_bundle;

/* 1 when the file at path starts with a zip signature (a local header, an
 * empty archive's end record or a spanning marker): what nsl_trace_open
 * takes for a bundle.  0 otherwise, unreadable files included. */
int nsl_bundle_sniff(const char *path);

/* Fills o with the defaults above, mode STRICT, verify off. */
void nsl_bundle_options_init(nsl_bundle_options *o);

/* Opens the zip at path (opts NULL = defaults).  Refuses (with the file and
 * member named in err): a file that is not a complete zip (NSL_ERR_FORMAT),
 * absolute member paths, "..", "." or empty components, backslashes,
 * links and other non-regular entries, encrypted entries, duplicate names
 * (NSL_ERR_FORMAT), a member or a total above the limits (NSL_ERR_LIMIT);
 * in STRICT mode also a zip without manifest.json and a manifest that does
 * not match the members (NSL_ERR_FORMAT). */
nsl_status nsl_bundle_open(nsl_bundle **out, const char *path, const nsl_bundle_options *opts,
                           nsl_error *err);
/* The same over an in-memory zip image; data is borrowed and must outlive
 * the bundle.  label names it in messages. */
nsl_status nsl_bundle_open_memory(nsl_bundle **out, const char *label, const void *data,
                                  size_t size, const nsl_bundle_options *opts, nsl_error *err);
void nsl_bundle_close(nsl_bundle *b);

/* The path (or label) given to open. */
const char *nsl_bundle_path(const nsl_bundle *b);
/* 1 when opened as a plain zip (no manifest), 0 for an nsl bundle. */
int nsl_bundle_is_raw(const nsl_bundle *b);
/* Members in archive order (manifest.json included). */
size_t nsl_bundle_count(const nsl_bundle *b);
const nsl_bundle_member *nsl_bundle_member_at(const nsl_bundle *b, size_t i);
/* The member called name, or NULL. */
const nsl_bundle_member *nsl_bundle_find(const nsl_bundle *b, const char *name);
/* manifest.json as read and checked (JSON text, NUL-terminated, borrowed),
 * or NULL in raw mode. */
const char *nsl_bundle_manifest_json(const nsl_bundle *b);
/* Copies what the manifest says about report member into info (overriding):
 * host (a string of the manifest: valid while b is open), rank, nsys and
 * schema versions, session start; fields it does not give are left as they
 * are.  Returns 1 when the manifest has an entry for member. */
int nsl_bundle_fill_report_info(const nsl_bundle *b, const char *member, nsl_report_info *info);

/* Decompresses member name into a new buffer (*data, release with free();
 * one NUL byte follows the *len bytes, so text members are C strings).
 * Checks while decompressing that the member holds exactly its declared size
 * (never allocating more) and, for a bundle, that its sha256 matches the
 * manifest.  NSL_ERR_NOTFOUND for no such member. */
nsl_status nsl_bundle_read_member(nsl_bundle *b, const char *name, void **data, size_t *len,
                                  nsl_error *err);

/* Receives a member chunk by chunk; return nonzero to stop (the read then
 * fails with NSL_ERR_ARG unless the sink set err itself). */
typedef int (*nsl_bundle_sink)(void *ctx, const void *data, size_t len);
/* Streams member name to sink with the checks of nsl_bundle_read_member;
 * the size and sha256 verdict comes after the last chunk, so a sink must
 * treat what it got as unverified until this returns NSL_OK. */
nsl_status nsl_bundle_stream_member(nsl_bundle *b, const char *name, nsl_bundle_sink sink,
                                    void *ctx, nsl_error *err);
/* Decompresses every member and checks sizes and hashes (no output). */
nsl_status nsl_bundle_verify(nsl_bundle *b, nsl_error *err);

/* Opens the bundle at path (opts NULL = default limits; the mode is always
 * STRICT) and adds its reports to tr: the members its manifest's "reports"
 * name, in that order, then any other .sqlite member under reports/.  Each
 * is read into memory and opened from there as an nsys export (labelled "<path>:<member>");
 * the manifest's host, rank, versions and session start then override what
 * the export says.  NSL_ERR_FORMAT for a bundle without reports. */
nsl_status nsl_bundle_add_reports(nsl_trace *tr, const char *path, const nsl_bundle_options *opts,
                                  nsl_error *err);
/* The same for the reports numbered first .. first+count-1 (0-based, in
 * the order nsl_bundle_add_reports adds them) only: a process of a
 * distributed run reads just its share of one bundle, each member through
 * the central directory with its size and sha256 checked.  tr NULL adds
 * none; *total receives the number of reports the bundle holds. */
nsl_status nsl_bundle_add_report_range(nsl_trace *tr, const char *path, const nsl_bundle_options *opts, int first,
                                       int count, int *total, nsl_error *err);

/* Checks a member name as a bundle writer would accept it (relative, "/"
 * separated, no empty, "." or ".." component, no backslash or control
 * character, valid UTF-8, at most 4096 bytes).  NSL_OK or NSL_ERR_ARG. */
nsl_status nsl_bundle_check_name(const char *name, nsl_error *err);

/* ---- writing ---------------------------------------------------------- */

typedef struct nsl_bundle_writer nsl_bundle_writer;

typedef enum nsl_bundle_compression {
  NSL_BUNDLE_COMPRESS_AUTO = 0,    /* store .xz .zst .gz .bz2 .zip .png ... names, deflate others */
  NSL_BUNDLE_COMPRESS_DEFLATE = 1,
  NSL_BUNDLE_COMPRESS_STORE = 2
} nsl_bundle_compression;

/* Starts a bundle that will replace target (created in its folder under a
 * temporary name, with the mode and owner of the target it replaces).
 * Waits while another writer holds the target (see _replaces).  NSL_ERR_IO
 * when the folder cannot be written or the target is read-only. */
nsl_status nsl_bundle_writer_open(nsl_bundle_writer **out, const char *target, nsl_error *err);
/* Adds a member from memory.  NSL_ERR_ARG for a bad or duplicate name or
 * "manifest.json" (the writer makes that one). */
nsl_status nsl_bundle_writer_add_memory(nsl_bundle_writer *w, const char *name, const void *data,
                                        size_t len, nsl_bundle_compression comp, nsl_error *err);
/* Adds a member streamed from a regular file (never modified).  The file
 * must keep its size while it is copied. */
nsl_status nsl_bundle_writer_add_file(nsl_bundle_writer *w, const char *name, const char *path,
                                      nsl_bundle_compression comp, nsl_error *err);
/* Adds a member of exactly size bytes given in pieces: begin, any number
 * of writes, end. */
nsl_status nsl_bundle_writer_begin(nsl_bundle_writer *w, const char *name, uint64_t size,
                                   nsl_bundle_compression comp, nsl_error *err);
nsl_status nsl_bundle_writer_write(nsl_bundle_writer *w, const void *data, size_t len,
                                   nsl_error *err);
nsl_status nsl_bundle_writer_end(nsl_bundle_writer *w, nsl_error *err);
/* Declares that w rewrites bundle b, read from w's own target (--embed):
 * finish then renames over the target only if it is still the very file b
 * read (same device, inode, size and modification time), and fails
 * otherwise, so that no other writer's update is lost.  The writer also
 * holds a lock on its target from open to finish: open the writer before
 * opening b, and writers of one target take turns.  NSL_ERR_ARG for a
 * bundle read from memory. */
nsl_status nsl_bundle_writer_replaces(nsl_bundle_writer *w, const nsl_bundle *b, nsl_error *err);
/* Deflate level, 1 (fastest) .. 9 (smallest); default 6.  Only before the
 * first member is added. */
nsl_status nsl_bundle_writer_set_level(nsl_bundle_writer *w, int level, nsl_error *err);
/* The sha256 (hex) of member name already written, or NULL. */
const char *nsl_bundle_writer_sha256(const nsl_bundle_writer *w, const char *name);
/* Writes manifest.json and commits.  manifest_json (JSON text of an
 * object; may be NULL) holds the caller's fields: command (array of strings), hosts, ranks, devices,
 * nsys_versions, schema_versions, reports ([{member, rank, host,
 * nsys_version, schema_version, session_start_utc_ns, ...}]) and anything
 * else.  The writer sets format,
 * format_version, creator, nsl_version, created (unless given) and members.
 * Releases w whatever happens; on failure the target is untouched and no
 * temporary file remains. */
nsl_status nsl_bundle_writer_finish(nsl_bundle_writer *w, const char *manifest_json, nsl_error *err);
/* Drops everything written so far; the target is untouched.  NULL is fine. */
void nsl_bundle_writer_abort(nsl_bundle_writer *w);

/* Streams every member of b except manifest.json and names starting with
 * exclude_prefix (NULL: none) into w under the same names, verifying each
 * against b's manifest on the way.  With the manifest of b passed to
 * nsl_bundle_writer_finish, this rewrites a bundle with some members
 * replaced, e.g. `--embed` replacing "analyses/<name>/"; the writer may
 * target b's own path (the rename happens after b is read).  Stored column
 * members (columns/, nsl bundle --columns) stay stored and aligned. */
nsl_status nsl_bundle_copy_members(nsl_bundle *b, nsl_bundle_writer *w, const char *exclude_prefix,
                                   nsl_error *err);

/* ---- combining -------------------------------------------------------- */

typedef struct nsl_combine_options {
  nsl_bundle_options read;     /* limits for the inputs (mode is forced to STRICT) */
  int allow_mixed_commands;    /* accept inputs whose manifests record different commands */
  int allow_mixed_nsys;        /* accept nsys versions of different releases (YYYY.N) */
} nsl_combine_options;

void nsl_combine_options_init(nsl_combine_options *o);

/* Merges the bundles inputs[0..n) into a new bundle at out_path (written
 * atomically; out_path must not be one of the inputs).  Members with the
 * same name and sha256 are stored once; a name that clashes with different
 * content is renamed (reports/<stem>.rank<R><ext> for a report of known
 * rank, else <stem>~<input number><ext>) and the manifest's reports entries
 * follow the rename.  Refused with NSL_ERR_ARG, naming both inputs: different
 * commands, nsys versions of different releases, a rank present in two
 * inputs, the same report in two inputs.  Every input member is verified
 * (size and sha256) while it is copied. */
nsl_status nsl_bundle_combine(const char *const *inputs, int n, const char *out_path,
                              const nsl_combine_options *opts, nsl_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
