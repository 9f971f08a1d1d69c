/*
 * bundle_internal.h -- what the bundle reader, writer and combiner share:
 * the member-name rules, the manifest checks, small formatting helpers.
 */
#ifndef NSL_SOURCE_BUNDLE_INTERNAL_H
#define NSL_SOURCE_BUNDLE_INTERNAL_H

#include <nettle/sha2.h>
#include <stdint.h>

#include "nsl/bundle.h"

#define NSL__BUNDLE_NAME_MAX 4096

/* NULL when name is an acceptable member path, else what is wrong with it
 * ("is an absolute path", "has a '..' component", ...). */
const char *nsl__bundle_name_problem(const char *name);

/* Checks the structure of a manifest (types, format name and version,
 * member list, reports entries, duplicate paths and ranks).  On failure
 * sets err to code with the message "<prefix>: manifest.json: <problem>". */
nsl_status nsl__manifest_check(const json_t *m, nsl_status code, const char *prefix, nsl_error *err);

/* "1.5 GiB", "312 bytes": human-readable size for messages. */
void nsl__fmt_bytes(uint64_t n, char out[32]);

/* Finishes ctx and writes the digest as 64 lowercase hex digits + NUL. */
void nsl__sha256_hex(struct sha256_ctx *ctx, char out[65]);

/* 1 when name looks already compressed (.xz, .zst, .gz, .png, ...), so
 * deflating it again would only cost time. */
int nsl__bundle_is_precompressed(const char *name);

/* "2025-11-25T22:09:00Z" for t (UTC). */
void nsl__iso8601_utc(int64_t t, char out[32]);

#endif
