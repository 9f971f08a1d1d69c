/*
 * atomic_write.h -- atomic replacement of a file: write a temporary file beside
 * the target, fsync it, rename it over the target.
 *
 * Basic outline:
 *   1. nsl__tmpfile_open(target, &fd, tmp, &err) creates an empty file
 *      "<dir>/.<name>.nsl-tmp-XXXXXX" in the target's folder (same file
 *      system, so the rename is atomic); the target is not touched.  It
 *      refuses a read-only target, gives the new file the mode and owner of
 *      the target it will replace, and first removes the temporary files of
 *      this naming in that folder whose writer is gone (killed).
 *   2. The caller writes through fd.
 *   3. nsl__tmpfile_commit(fd, tmp, target, expect, &err) fsyncs the file,
 *      renames it over the target and closes it, then fsyncs the folder; on failure
 *      it removes the temporary file itself.  Or nsl__tmpfile_abort(fd, tmp)
 *      closes and removes it.
 * Either way fd is closed and the temporary file is gone (renamed or
 * removed) when commit/abort returns.  Only a process killed between open
 * and commit can leave a temporary file behind; the target is never partial,
 * and the next write to that folder removes the leftover.
 *
 * A writer holds an exclusive flock on its temporary file while it lives:
 * that is how the next writer tells a leftover (lock free: its writer is
 * gone) from a file being written (locked).  The lock goes with the process,
 * so kill -9 frees it.
 *
 * Read-modify-write (rewriting a file from its own old content, as --embed
 * does) adds two steps: nsl__tmpfile_lock_target before reading serialises
 * writers of the same target, and the identity of what was read, passed to
 * commit, makes the rename a compare-and-swap: it fails with a clear error
 * when the target is no longer the file that was read (a writer that did not
 * lock, or a file system without locks).
 */
#ifndef NSL_CORE_ATOMIC_WRITE_H
#define NSL_CORE_ATOMIC_WRITE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/stat.h>

#include "nsl/nsl.h"

/* Which file a path named when it was read: device, inode, size and
 * modification time (ns).  known = 0: no expectation. */
typedef struct nsl__file_id {
  int known;
  uint64_t dev, ino;
  int64_t size, mtime_ns;
} nsl__file_id;

/* The identity of a file from its stat. */
void nsl__file_id_of(const struct stat *st, nsl__file_id *id);
/* Whether now is known and names the file was named: the same device,
 * inode, size and modification time. */
int nsl__file_id_same(const nsl__file_id *now, const nsl__file_id *was);

/* Opens path for reading, but only a regular file (a folder too with
 * allow_dir): it is opened without blocking and checked with fstat before
 * anything is read, so a FIFO, /dev/zero or a device is refused at once
 * ("cannot open 'P': it is a FIFO, not a regular file").  The descriptor
 * (blocking, close-on-exec) or -1 with err set. */
int nsl__open_regular(const char *path, int allow_dir, nsl_error *err);
/* The first (up to) n bytes of the regular file path, for the sniffers that
 * tell formats apart: the count read, -1 when path is not a regular file
 * (never waiting on a FIFO) or cannot be read. */
ssize_t nsl__read_head(const char *path, void *buf, size_t n);

/* Writes all of the len bytes at p to fd, in pieces of at most 1 GiB,
 * retrying short writes and EINTR: 0, or the errno of the failed write
 * (EIO when one wrote nothing). */
int nsl__write_all(int fd, const void *p, size_t len);

/* Creates the temporary file for target (O_EXCL, close-on-exec, locked).
 * For a new target its mode is 0666 & ~umask; over an existing one it gets
 * that file's mode and (where permitted) owner and group.  *tmp_path
 * receives its name, allocated (free() it after commit or abort; NULL on
 * failure).  NSL_ERR_IO when the folder is missing or not writable or the
 * target is read-only (no write permission bit), NSL_ERR_ARG when target
 * names a folder, NSL_ERR_NOMEM when out of memory. */
nsl_status nsl__tmpfile_open(const char *target, int *fd, char **tmp_path, nsl_error *err);

/* fsync + rename(tmp_path, target) + close + fsync of the folder.  With
 * expect (may be NULL) known, the rename happens only if target is still
 * that file; otherwise NSL_ERR_IO "changed while ...".  On any failure the
 * temporary file is removed and the target is left as it was. */
nsl_status nsl__tmpfile_commit(int fd, const char *tmp_path, const char *target, const nsl__file_id *expect,
                               nsl_error *err);

/* nsl__tmpfile_commit without fsync (of the file or the folder) and without
 * expect: the rename is as atomic for other processes, but a crash may leave
 * the file empty or torn.  Only for files whose readers check them whole and
 * make them again when they fail (the columnar cache's checksummed files):
 * an fsync per file made filling the cache from many small reports ten
 * times slower than reading them without it. */
nsl_status nsl__tmpfile_publish(int fd, const char *tmp_path, const char *target, nsl_error *err);

/* Closes fd (if >= 0) and removes tmp_path (if not empty).  Never fails. */
void nsl__tmpfile_abort(int fd, const char *tmp_path);

/* Waits (up to wait_ms) for an exclusive lock on the existing file target
 * and returns its descriptor in *lock_fd (to close after commit or abort),
 * -1 when target does not exist yet or its file system has no locks (then
 * only the compare-and-swap of commit guards it).  The lock is taken on the
 * file that target names once locked: a writer that renamed a new file over
 * it while we waited makes us lock the new one.  NSL_ERR_IO when another
 * process held it for all of wait_ms. */
nsl_status nsl__tmpfile_lock_target(const char *target, int wait_ms, int *lock_fd, nsl_error *err);

#endif
