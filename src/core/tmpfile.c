/*
 * tmpfile.c -- temporary file beside a target + fsync + rename.
 * See tmpfile.h for the contract.
 */
#include "core/tmpfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Splits target into its folder ("." when none) and base name.  Returns 0,
 * or -1 when the target has no base name or does not fit. */
static int split_target(const char *target, char *dir, size_t dircap, const char **base) {
  const char *slash = strrchr(target, '/');
  if (slash == NULL) {
    if (dircap < 2)
      return -1;
    strcpy(dir, ".");
    *base = target;
  } else {
    size_t n = (size_t)(slash - target);
    if (n == 0)
      n = 1;                     /* "/x": the folder is "/" */
    if (n >= dircap)
      return -1;
    memcpy(dir, target, n);
    dir[n] = '\0';
    *base = slash + 1;
  }
  if (**base == '\0' || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0)
    return -1;
  return 0;
}

/* A name suffix that differs between calls, threads and processes; O_EXCL
 * makes a collision harmless (we try again). */
static void random_suffix(char out[7]) {
  static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  static atomic_uint counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 32) ^
               ((uint64_t)atomic_fetch_add(&counter, 1u) * 0x9E3779B97F4A7C15ull);
  for (int i = 0; i < 6; i++) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    out[i] = digits[x % 36];
  }
  out[6] = '\0';
}

nsl_status nsl__tmpfile_open(const char *target, int *fd, char *tmp_path, nsl_error *err) {
  char dir[NSL__TMPFILE_PATH_MAX];
  const char *base;
  struct stat st;

  *fd = -1;
  tmp_path[0] = '\0';
  if (target == NULL || target[0] == '\0')
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write: empty output path");
  if (split_target(target, dir, sizeof dir, &base) != 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': not a file name", target);
  if (stat(target, &st) == 0 && !S_ISREG(st.st_mode))
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': it exists and is not a regular file",
                         target);
  for (int attempt = 0; attempt < 100; attempt++) {
    char suffix[7];
    random_suffix(suffix);
    int n = snprintf(tmp_path, NSL__TMPFILE_PATH_MAX, "%s/.%s.nsl-tmp-%s", dir, base, suffix);
    if (n < 0 || n >= NSL__TMPFILE_PATH_MAX) {
      tmp_path[0] = '\0';
      return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': path too long", target);
    }
    int f = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f >= 0) {
      *fd = f;
      return NSL_OK;
    }
    if (errno != EEXIST) {
      int e = errno;
      tmp_path[0] = '\0';
      return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': cannot create a file in '%s': %s",
                           target, dir, strerror(e));
    }
  }
  tmp_path[0] = '\0';
  return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': no free temporary name in '%s'", target,
                       dir);
}

/* fsyncs the folder holding target so that the rename itself is durable.
 * Failures are ignored: some file systems cannot fsync a folder. */
static void sync_folder(const char *target) {
  char dir[NSL__TMPFILE_PATH_MAX];
  const char *base;
  if (split_target(target, dir, sizeof dir, &base) != 0)
    return;
  int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0)
    return;
  (void)fsync(d);
  close(d);
}

nsl_status nsl__tmpfile_commit(int fd, const char *tmp_path, const char *target, nsl_error *err) {
  if (fd < 0 || tmp_path == NULL || tmp_path[0] == '\0') {
    nsl__tmpfile_abort(fd, tmp_path);
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no temporary file to commit",
                         target ? target : "");
  }
  if (fsync(fd) != 0) {
    int e = errno;
    nsl__tmpfile_abort(fd, tmp_path);
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': fsync failed: %s", target, strerror(e));
  }
  if (close(fd) != 0) {
    int e = errno;
    nsl__tmpfile_abort(-1, tmp_path);
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': close failed: %s", target, strerror(e));
  }
  if (rename(tmp_path, target) != 0) {
    int e = errno;
    nsl__tmpfile_abort(-1, tmp_path);
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': rename failed: %s", target,
                         strerror(e));
  }
  sync_folder(target);
  return NSL_OK;
}

void nsl__tmpfile_abort(int fd, const char *tmp_path) {
  if (fd >= 0)
    close(fd);
  if (tmp_path != NULL && tmp_path[0] != '\0')
    (void)unlink(tmp_path);
}
