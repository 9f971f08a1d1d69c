/*
 * cache_dir.c -- where nsl keeps its caches: $NSL_CACHE_DIR, else
 * $XDG_CACHE_HOME/nsl, else $HOME/.cache/nsl.  The columnar cache lives in
 * the subfolder columns/, .nsys-rep exports in exports/.
 *
 * The folder is trusted as ssh trusts ~/.ssh: nsl makes its folders 0700
 * and uses the root and the subfolder only when each is a real folder (the
 * subfolder not a link), owned by the user, that no one else can write.
 * Anything else is refused with one line and the run goes on without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/nsl_internal.h"

/* Creates path and the missing folders above it with mode 0700; a folder
 * that exists already is kept as it is (and checked by the caller).  0 or errno. */
static int mkdirs_private(char *path) {
  for (char *p = path + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      int e = mkdir(path, 0700) != 0 && errno != EEXIST ? errno : 0;
      *p = c;
      if (e) return e;
      if (c == '\0') break;
    }
  }
  return 0;
}

/* NSL_OK when the folder open at fd (path, for the message) may hold nsl's
 * cache: a folder of this user that neither group nor others can write. */
static nsl_status check_private(int fd, const char *path, nsl_error *err) {
  struct stat st;
  if (fstat(fd, &st) != 0) return nsl_error_set(err, NSL_ERR_IO, "cannot use cache folder '%s': %s", path, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return nsl_error_set(err, NSL_ERR_IO, "cannot use cache folder '%s': not a folder", path);
  if (st.st_uid != geteuid())
    return nsl_error_set(err, NSL_ERR_IO,
                         "refusing cache folder '%s': it belongs to another user (uid %lu); nsl uses only a folder "
                         "of its own that no one else can write",
                         path, (unsigned long)st.st_uid);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return nsl_error_set(err, NSL_ERR_IO,
                         "refusing cache folder '%s': others can write to it (mode %04o); chmod go-w it or choose "
                         "another NSL_CACHE_DIR",
                         path, (unsigned)(st.st_mode & 07777));
  return NSL_OK;
}

nsl_status nsl__cache_dir_open(const char *sub, char **out, int *dirfd, nsl_error *err) {
  *out = NULL;
  if (dirfd) *dirfd = -1;
  const char *base = getenv("NSL_CACHE_DIR"), *tail = "";
  if (!base || !base[0]) {
    base = getenv("XDG_CACHE_HOME");
    tail = "/nsl";
    if (!base || base[0] != '/') {   /* the XDG spec ignores a relative XDG_CACHE_HOME */
      base = getenv("HOME");
      tail = "/.cache/nsl";
    }
  }
  if (!base || !base[0])
    return nsl_error_set(err, NSL_ERR_IO, "no cache folder: set NSL_CACHE_DIR, XDG_CACHE_HOME or HOME");
  if (sub && (!sub[0] || strchr(sub, '/') || sub[0] == '.'))
    return nsl_error_set(err, NSL_ERR_ARG, "cache subfolder '%s' is not a plain name", sub);
  size_t n = strlen(base) + strlen(tail) + (sub ? strlen(sub) : 0) + 2;
  char *p = malloc(n);
  if (!p) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  snprintf(p, n, "%s%s", base, tail);
  int e = mkdirs_private(p), rfd = -1, sfd = -1;
  nsl_status rc = NSL_OK;
  if (e) rc = nsl_error_set(err, NSL_ERR_IO, "cannot use cache folder '%s': %s", p, strerror(e));
  else if ((rfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)   /* the root may be reached through a link */
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot use cache folder '%s': %s", p, strerror(errno));
  else rc = check_private(rfd, p, err);
  if (rc == NSL_OK && sub) {
    snprintf(p + strlen(p), n - strlen(p), "/%s", sub);
    if (mkdirat(rfd, sub, 0700) != 0 && errno != EEXIST)
      rc = nsl_error_set(err, NSL_ERR_IO, "cannot use cache folder '%s': %s", p, strerror(errno));
    else if ((sfd = openat(rfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
      rc = nsl_error_set(err, NSL_ERR_IO, "refusing cache folder '%s': %s", p,
                         errno == ELOOP || errno == ENOTDIR ? "not a folder (a link or a file)" : strerror(errno));
    else rc = check_private(sfd, p, err);
  }
  if (rfd >= 0) close(rfd);
  if (rc != NSL_OK) {
    if (sfd >= 0) close(sfd);
    free(p);
    return rc;
  }
  if (dirfd) *dirfd = sfd;
  else if (sfd >= 0) close(sfd);
  *out = p;
  return NSL_OK;
}

nsl_status nsl__cache_dir(const char *sub, char **out, nsl_error *err) {
  return nsl__cache_dir_open(sub, out, NULL, err);
}

static int cache_warned;

void nsl__cache_warn(const char *what, const char *detail) {
  if (cache_warned) return;
  cache_warned = 1;
  nsl__warn("cannot use the cache: %s: %s; going on without it (--no-cache turns it off)", what, detail);
}
