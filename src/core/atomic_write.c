/*
 * atomic_write.c -- whole-or-nothing file writes: a temporary file beside
 * the target + fsync + rename (the one implementation every writer uses:
 * nsl_write_file_atomic here, the bundle writer through nsl__tmpfile_*),
 * and folder creation.  See atomic_write.h for the contract.
 */
#include "core/atomic_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/text.h"
#include "nsl/nsl_io.h"

#define TMP_TAG ".nsl-tmp-"
#define TMP_SUFFIX_LEN 6
/* Where a file system has no locks, a leftover is removed only once it is
 * this old (no writer takes a day). */
#define STALE_WITHOUT_LOCKS_S (24 * 3600)

/* Splits target into its folder ("." when none; *dir allocated, to free)
 * and base name.  Returns 0, -1 when the target has no base name, -2 when
 * out of memory. */
static int split_target(const char *target, char **dir, const char **base) {
  const char *slash = strrchr(target, '/');
  size_t n;
  *dir = NULL;
  if (slash == NULL) {
    *base = target;
  } else {
    *base = slash + 1;
  }
  if (**base == '\0' || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0)
    return -1;
  if (slash == NULL) {
    target = ".";
    n = 1;
  } else {
    n = (size_t)(slash - target);
    if (n == 0)
      n = 1;                     /* "/x": the folder is "/" */
  }
  *dir = malloc(n + 1);
  if (*dir == NULL)
    return -2;
  memcpy(*dir, target, n);
  (*dir)[n] = '\0';
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

void nsl__file_id_of(const struct stat *st, nsl__file_id *id) {
  id->known = 1;
  id->dev = (uint64_t)st->st_dev;
  id->ino = (uint64_t)st->st_ino;
  id->size = (int64_t)st->st_size;
  id->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* See atomic_write.h. */
int nsl__file_id_same(const nsl__file_id *now, const nsl__file_id *was) {
  return now->known && now->dev == was->dev && now->ino == was->ino && now->size == was->size &&
         now->mtime_ns == was->mtime_ns;
}

/* What a file that is not regular is, for messages. */
static const char *file_kind(mode_t m) {
  return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
       : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a folder" : "not a regular file";
}

int nsl__open_regular(const char *path, int allow_dir, nsl_error *err) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* a FIFO without a writer does not block */
  if (fd < 0) {
    nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode) && !(allow_dir && S_ISDIR(st.st_mode))) {
    nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': it is %s, not a regular file", path, file_kind(st.st_mode));
    close(fd);
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

ssize_t nsl__read_head(const char *path, void *buf, size_t n) {
  int fd = nsl__open_regular(path, 0, NULL);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  return (ssize_t)got;
}

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether name is one of ours: ".<base>.nsl-tmp-XXXXXX". */
static int is_tmp_name(const char *name) {
  size_t n = strlen(name), tag = strlen(TMP_TAG);
  if (name[0] != '.' || n < 1 + tag + TMP_SUFFIX_LEN + 1) return 0;
  const char *suffix = name + n - TMP_SUFFIX_LEN;
  if (strncmp(suffix - tag, TMP_TAG, tag) != 0) return 0;
  for (int i = 0; i < TMP_SUFFIX_LEN; i++)
    if (!((suffix[i] >= 'a' && suffix[i] <= 'z') || (suffix[i] >= '0' && suffix[i] <= '9'))) return 0;
  return 1;
}

/* Removes the temporary files of our naming in dir whose writer is gone:
 * a live writer holds the flock of its file, so a lock we can take means
 * nobody is writing it.  Best effort: nothing here fails the write. */
static void sweep_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) return;
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!is_tmp_name(e->d_name)) continue;
    int f = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (f < 0) continue;
    struct stat held, now;
    int gone = 0;
    if (fstat(f, &held) == 0 && S_ISREG(held.st_mode)) {
      if (flock(f, LOCK_EX | LOCK_NB) == 0) gone = 1;
      else if (errno != EWOULDBLOCK && errno != EINTR)   /* no locks here: only the very old */
        gone = time(NULL) - held.st_mtim.tv_sec > STALE_WITHOUT_LOCKS_S;
    }
    /* still the file we locked (not a new one of the same name) */
    if (gone && fstatat(dfd, e->d_name, &now, AT_SYMLINK_NOFOLLOW) == 0 && same_file(&held, &now))
      (void)unlinkat(dfd, e->d_name, 0);
    close(f);
  }
  closedir(d);
}

/* Gives the new file f the owner, group and mode of the target it replaces
 * (owner and group where the system permits: a user cannot give a file
 * away, and then the file is theirs with the same mode). */
static void keep_mode_and_owner(int f, const struct stat *target) {
  struct stat mine;
  if (fstat(f, &mine) == 0 && (mine.st_uid != target->st_uid || mine.st_gid != target->st_gid)) {
    if (fchown(f, target->st_uid, target->st_gid) != 0) (void)fchown(f, (uid_t)-1, target->st_gid);
  }
  (void)fchmod(f, target->st_mode & 0777);
}

nsl_status nsl__tmpfile_open(const char *target, int *fd, char **tmp_path, nsl_error *err) {
  char *dir = NULL;
  const char *base;
  struct stat st;
  nsl_status rc;

  *fd = -1;
  *tmp_path = NULL;
  if (target == NULL || target[0] == '\0')
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write: empty output path");
  int sr = split_target(target, &dir, &base);
  if (sr == -2)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", target);
  if (sr != 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': not a file name", target);
  int exists = stat(target, &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    rc = nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': it exists and is not a regular file",
                       target);
    goto cleanup;
  }
  /* root may write anything: the mode bits, not access(), say read-only */
  if (exists && (st.st_mode & 0222) == 0) {
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': it is read-only (mode %04o); make it writable "
                       "or write elsewhere", target, (unsigned)(st.st_mode & 07777));
    goto cleanup;
  }
  sweep_stale(dir);
  for (int attempt = 0; attempt < 100; attempt++) {
    char suffix[TMP_SUFFIX_LEN + 1];
    random_suffix(suffix);
    char *name = nsl__printf_alloc("%s/.%s" TMP_TAG "%s", dir, base, suffix);
    if (name == NULL) {
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", target);
      goto cleanup;
    }
    /* over an existing file, private until it has that file's mode */
    int f = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0600 : 0666);
    if (f < 0 && errno == EEXIST) {
      free(name);
      continue;
    }
    if (f < 0) {
      int e = errno;
      free(name);
      rc = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': cannot create a file in '%s': %s",
                         target, dir, strerror(e));
      goto cleanup;
    }
    /* The lock marks the file as being written.  Only a sweeper can hold it
     * now, briefly, and it removes the file: then take another name. */
    struct stat mine;
    int r;
    while ((r = flock(f, LOCK_EX)) != 0 && errno == EINTR) {}
    if (r == 0 && fstat(f, &mine) == 0 && mine.st_nlink == 0) {
      close(f);
      free(name);
      continue;
    }
    if (exists) keep_mode_and_owner(f, &st);
    *fd = f;
    *tmp_path = name;
    rc = NSL_OK;
    goto cleanup;
  }
  rc = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': no free temporary name in '%s'", target,
                     dir);
cleanup:
  free(dir);
  return rc;
}

nsl_status nsl__tmpfile_lock_target(const char *target, int wait_ms, int *lock_fd, nsl_error *err) {
  *lock_fd = -1;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int f = -1;
  for (;;) {
    if (f < 0 && (f = open(target, O_RDONLY | O_CLOEXEC)) < 0) {
      if (errno == ENOENT) return NSL_OK;   /* a new file: nothing to read, nothing to lose */
      return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': %s", target, strerror(errno));
    }
    if (flock(f, LOCK_EX | LOCK_NB) == 0) {
      struct stat held, named;
      if (fstat(f, &held) == 0 && stat(target, &named) == 0 && same_file(&held, &named)) {
        *lock_fd = f;
        return NSL_OK;
      }
      close(f);   /* replaced while we waited: lock the new file */
      f = -1;
      continue;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {   /* no locks on this file system */
      close(f);
      return NSL_OK;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t waited = (int64_t)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
    if (waited >= wait_ms) {
      close(f);
      return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': another process is writing it (waited %d s)",
                           target, wait_ms / 1000);
    }
    struct timespec nap = {0, 20 * 1000000};
    nanosleep(&nap, NULL);
  }
}

/* fsyncs the folder holding target so that the rename itself is durable.
 * Failures are ignored: some file systems cannot fsync a folder. */
static void sync_folder(const char *target) {
  char *dir;
  const char *base;
  if (split_target(target, &dir, &base) != 0)
    return;
  int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  if (d < 0)
    return;
  (void)fsync(d);
  close(d);
}

/* nsl__tmpfile_commit, and with durable = 0 nsl__tmpfile_publish. */
static nsl_status commit(int fd, const char *tmp_path, const char *target, const nsl__file_id *expect, int durable,
                         nsl_error *err) {
  if (fd < 0 || tmp_path == NULL || tmp_path[0] == '\0') {
    nsl__tmpfile_abort(fd, tmp_path);
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no temporary file to commit",
                         target ? target : "");
  }
  if (durable && fsync(fd) != 0) {
    int e = errno;
    nsl__tmpfile_abort(fd, tmp_path);
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': fsync failed: %s", target, strerror(e));
  }
  if (expect != NULL && expect->known) {
    struct stat now;
    nsl__file_id id = {0};
    if (stat(target, &now) == 0) nsl__file_id_of(&now, &id);
    if (!nsl__file_id_same(&id, expect)) {
      nsl__tmpfile_abort(fd, tmp_path);
      return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': it changed while it was being rewritten "
                           "(another program wrote it); nothing was written, run again", target);
    }
  }
  /* Renamed while still open, so still locked: a writer sweeping the folder
   * in between must not take the finished file for a dead writer's. */
  if (rename(tmp_path, target) != 0) {
    int e = errno;
    nsl__tmpfile_abort(fd, tmp_path);
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': rename failed: %s", target,
                         strerror(e));
  }
  (void)close(fd);   /* the bytes are on disk already (fsync), or need not be: nothing left to fail */
  if (durable) sync_folder(target);
  return NSL_OK;
}

nsl_status nsl__tmpfile_commit(int fd, const char *tmp_path, const char *target, const nsl__file_id *expect,
                               nsl_error *err) {
  return commit(fd, tmp_path, target, expect, 1, err);
}

nsl_status nsl__tmpfile_publish(int fd, const char *tmp_path, const char *target, nsl_error *err) {
  return commit(fd, tmp_path, target, NULL, 0, err);
}

void nsl__tmpfile_abort(int fd, const char *tmp_path) {
  if (tmp_path != NULL && tmp_path[0] != '\0')
    (void)unlink(tmp_path);   /* before the close drops the lock */
  if (fd >= 0)
    close(fd);
}

/* See atomic_write.h. */
int nsl__write_all(int fd, const void *p, size_t len) {
  const unsigned char *data = p;
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
 * writers swept, fsync and rename: nsl__tmpfile_* above (one way to
 * replace a file); this adds only the bytes. */
nsl_status nsl_write_file_atomic(const char *path, const void *data, size_t len, nsl_error *err) {
  char *tmp = NULL;
  int fd = -1;
  if (path == NULL || path[0] == '\0')
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write a file: no path given");
  if (data == NULL && len > 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no data given for %zu bytes", path, len);
  nsl_status st = nsl__tmpfile_open(path, &fd, &tmp, err);
  if (st != NSL_OK) return st;
  int e = nsl__write_all(fd, data, len);
  if (e != 0) {
    nsl__tmpfile_abort(fd, tmp);
    free(tmp);
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': writing %zu bytes failed: %s", path, len,
                         strerror(e));
  }
  st = nsl__tmpfile_commit(fd, tmp, path, NULL, err);
  free(tmp);
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
