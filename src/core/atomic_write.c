/*
 * atomic_write.c -- whole-or-nothing file writes (readers see either the
 * old content or all of the new one: temporary file, fsync, rename) and
 * folder creation.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsl/nsl_io.h"

static atomic_uint tmp_counter;

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

/* Syncs the folder dir so that a rename inside it is durable; best effort
 * (some file systems refuse fsync on folders). */
static void sync_folder(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)fsync(fd);
  close(fd);
}

nsl_status nsl_write_file_atomic(const char *path, const void *data, size_t len, nsl_error *err) {
  nsl_status st = NSL_OK;
  char *dir = NULL, *tmp = NULL;
  int fd = -1;
  int created = 0;   /* the temporary file exists and is ours to remove */

  if (path == NULL || path[0] == '\0')
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write a file: no path given");
  if (data == NULL && len > 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no data given for %zu bytes", path, len);

  size_t plen = strlen(path);
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': the path names a folder, not a file", path);

  size_t dlen = slash ? (size_t)(slash - path) : 1;
  dir = malloc(dlen + 1);
  tmp = malloc(plen + 64);
  if (dir == NULL || tmp == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", path);
    goto cleanup;
  }
  if (slash == NULL) {
    strcpy(dir, ".");
  } else if (dlen == 0) {
    strcpy(dir, "/");   /* a file directly under the root */
  } else {
    memcpy(dir, path, dlen);
    dir[dlen] = '\0';
  }

  /* An unpredictable-enough, unique name beside the target: O_EXCL makes a
   * collision (with another writer or a stale file) just a retry. */
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned n = atomic_fetch_add(&tmp_counter, 1u);
    snprintf(tmp, plen + 64, "%.*s.%s.tmp-%ld-%u", slash ? (int)(base - path) : 0, path, base,
             (long)getpid(), n);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) break;
  }
  if (fd < 0) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': cannot create a temporary file in '%s': %s",
                       path, dir, strerror(errno));
    goto cleanup;
  }
  created = 1;

  int e = write_all(fd, data, len);
  if (e != 0) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': writing %zu bytes failed: %s", path, len,
                       strerror(e));
    goto cleanup;
  }
  if (fsync(fd) != 0) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': flushing to disk failed: %s", path,
                       strerror(errno));
    goto cleanup;
  }
  e = close(fd);
  fd = -1;
  if (e != 0) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': closing the temporary file failed: %s", path,
                       strerror(errno));
    goto cleanup;
  }
  if (rename(tmp, path) != 0) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': renaming the temporary file failed: %s", path,
                       strerror(errno));
    goto cleanup;
  }
  created = 0;   /* renamed: nothing left to remove */
  sync_folder(dir);

cleanup:
  if (fd >= 0) close(fd);
  if (created) unlink(tmp);
  free(tmp);
  free(dir);
  return st;
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
