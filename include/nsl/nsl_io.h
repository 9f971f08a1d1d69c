/*
 * nsl_io.h -- files nsl writes: whole or not at all.  Shared by every layer
 * that writes output (figures, bundles, analysis results).  Core level: no
 * Lua, never prints.
 */
#ifndef NSL_NSL_IO_H
#define NSL_NSL_IO_H

#include <stddef.h>

#include "nsl/nsl.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Writes len bytes of data to path so that path either keeps its old
 * content or holds all the new bytes, never a part of them: the bytes go to
 * a new temporary file in the same folder (".<name>.nsl-tmp-XXXXXX"), which
 * is flushed to disk (fsync), closed and renamed over path; the folder is
 * then synced too.  On any error the temporary file is removed and path is
 * untouched; a temporary file left by a killed writer is removed by the next
 * write to that folder.  A new file gets mode 0666 minus the umask; a file
 * replaced keeps its mode and owner, and a read-only one is refused.
 * Errors: NSL_ERR_ARG (NULL or empty path, NULL data with len > 0, a path
 * naming a folder), NSL_ERR_IO (read-only target, cannot create, write,
 * sync or rename; the message names the path and the system's reason). */
nsl_status nsl_write_file_atomic(const char *path, const void *data, size_t len, nsl_error *err);
/* Creates a folder and its parents (like mkdir -p). */
nsl_status nsl_mkdir_p(const char *path, nsl_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
