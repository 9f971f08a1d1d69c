/*
 * tmpfile.h -- atomic replacement of a file: write a temporary file beside
 * the target, fsync it, rename it over the target.
 *
 * Basic outline:
 *   1. nsl__tmpfile_open(target, &fd, tmp, &err) creates an empty file
 *      "<dir>/.<name>.nsl-tmp-XXXXXX" in the target's folder (same file
 *      system, so the rename is atomic); the target is not touched.
 *   2. The caller writes through fd.
 *   3. nsl__tmpfile_commit(fd, tmp, target, &err) fsyncs, closes and renames
 *      the file over the target, then fsyncs the folder; on failure it
 *      removes the temporary file itself.  Or nsl__tmpfile_abort(fd, tmp)
 *      closes and removes it.
 * Either way fd is closed and the temporary file is gone (renamed or
 * removed) when commit/abort returns.  Only a process killed between open
 * and commit can leave a temporary file behind; the target is never partial.
 */
#ifndef NSL_CORE_TMPFILE_H
#define NSL_CORE_TMPFILE_H

#include "nsl/nsl.h"

#define NSL__TMPFILE_PATH_MAX 4096

/* Creates the temporary file for target (mode 0666 & ~umask, O_EXCL,
 * close-on-exec).  tmp_path receives its name (NSL__TMPFILE_PATH_MAX
 * bytes).  NSL_ERR_IO when the folder is missing or not writable,
 * NSL_ERR_ARG when target names a folder or is too long. */
nsl_status nsl__tmpfile_open(const char *target, int *fd, char *tmp_path, nsl_error *err);

/* fsync + close + rename(tmp_path, target) + fsync of the folder.  On any
 * failure the temporary file is removed and the target is left as it was. */
nsl_status nsl__tmpfile_commit(int fd, const char *tmp_path, const char *target, nsl_error *err);

/* Closes fd (if >= 0) and removes tmp_path (if not empty).  Never fails. */
void nsl__tmpfile_abort(int fd, const char *tmp_path);

#endif
