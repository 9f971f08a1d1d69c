/*
 * atomic_write.c -- whole-or-nothing file writes (readers see either the
 * old content or all of the new one: temporary file, fsync, rename) and
 * folder creation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/tmpfile.h"
#include "nsl/nsl_io.h"

/* Writes all of data to fd, retrying short writes and EINTR; 0 or errno. */
static int write_all(int fd, const unsigned char *data, size_t len) {
  while (len > 0) {
    size_t chunk = len > (size_t)1 << 30 ? (size_t)1 << 30 : len;
    ssize_t n = write(fd, data, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

/* The temporary file, its lock, the mode kept, the leftovers of killed
 * writers swept, fsync and rename: all tmpfile.c's (one way to replace a
 * file); this adds only the bytes. */
nsl_status nsl_write_file_atomic(const char *path, const void *data, size_t len, nsl_error *err) {
  char tmp[NSL__TMPFILE_PATH_MAX];
  int fd = -1;
  if (path == NULL || path[0] == '\0')
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write a file: no path given");
  if (data == NULL && len > 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no data given for %zu bytes", path, len);
  nsl_status st = nsl__tmpfile_open(path, &fd, tmp, err);
  if (st != NSL_OK) return st;
  int e = write_all(fd, data, len);
  if (e != 0) {
    nsl__tmpfile_abort(fd, tmp);
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': writing %zu bytes failed: %s", path, len,
                         strerror(e));
  }
  return nsl__tmpfile_commit(fd, tmp, path, NULL, err);
}

/* Creates path and the folders above it that are missing; NSL_ERR_IO when
 * one cannot be created or path exists as something else. */
nsl_status nsl_mkdir_p(const char *path, nsl_error *err) {
  if (path == NULL || path[0] == '\0') return nsl_error_set(err, NSL_ERR_ARG, "cannot create a folder: no path given");
  char *buf = strdup(path);
  if (!buf) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        nsl_status rc = nsl_error_set(err, NSL_ERR_IO, "cannot create folder '%s': %s", buf, strerror(errno));
        free(buf);
        return rc;
      }
      *p = c;
      if (c == '\0') break;
    }
  }
  struct stat st;
  nsl_status rc = NSL_OK;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    rc = nsl_error_set(err, NSL_ERR_IO, "'%s' exists and is not a folder", path);
  free(buf);
  return rc;
}
