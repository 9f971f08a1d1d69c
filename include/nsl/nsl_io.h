/* nsl_io.h -- files nsl writes: whole or not at all. */
#ifndef NSL_NSL_IO_H
#define NSL_NSL_IO_H

#include <stddef.h>

#include "nsl/nsl.h"

/* Writes data to path atomically: a temporary file in the same folder,
 * fsync, rename over path.  On failure the temporary file is removed and
 * an existing path is left untouched. */
nsl_status nsl_write_file_atomic(const char *path, const void *data, size_t len, nsl_error *err);
/* Creates a folder and its parents (like mkdir -p). */
nsl_status nsl_mkdir_p(const char *path, nsl_error *err);

#endif
