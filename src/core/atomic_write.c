/* atomic_write.c -- whole-or-nothing file writes and folder creation. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsl/nsl_io.h"

nsl_status nsl_write_file_atomic(const char *path, const void *data, size_t len, nsl_error *err) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 32);
  if (!tmp) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory writing '%s'", path);
  snprintf(tmp, n + 32, "%s.tmp-XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    nsl_status rc = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    free(tmp);
    return rc;
  }
  const char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) goto fail;
    p += w;
    left -= (size_t)w;
  }
  if (fchmod(fd, 0644) != 0 || fsync(fd) != 0) goto fail;
  if (close(fd) != 0) {
    fd = -1;
    goto fail;
  }
  fd = -1;
  if (rename(tmp, path) != 0) goto fail;
  free(tmp);
  return NSL_OK;
fail:;
  int e = errno;
  if (fd >= 0) close(fd);
  unlink(tmp);
  free(tmp);
  return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': %s", path, strerror(e));
}

nsl_status nsl_mkdir_p(const char *path, nsl_error *err) {
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
