/*
 * cache_dir.c -- where nsl keeps its caches: $NSL_CACHE_DIR, else
 * $XDG_CACHE_HOME/nsl, else $HOME/.cache/nsl.  The columnar cache lives in
 * the subfolder columns/, .nsys-rep exports in exports/.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/nsl_internal.h"

/* Creates path and the missing folders above it with mode 0700; a folder
 * that exists already is kept as it is.  0 or errno. */
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
  struct stat st;
  if (stat(path, &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* The folder of nsl's caches, subfolder `sub` (created with parents, mode 0700); *out is malloc'd. */
nsl_status nsl__cache_dir(const char *sub, char **out, nsl_error *err) {
  *out = NULL;
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
  size_t n = strlen(base) + strlen(tail) + (sub ? strlen(sub) : 0) + 2;
  char *p = malloc(n);
  if (!p) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  snprintf(p, n, "%s%s%s%s", base, tail, sub && sub[0] ? "/" : "", sub ? sub : "");
  int e = mkdirs_private(p);
  if (e) {
    nsl_status rc = nsl_error_set(err, NSL_ERR_IO, "cannot use cache folder '%s': %s", p, strerror(e));
    free(p);
    return rc;
  }
  *out = p;
  return NSL_OK;
}
