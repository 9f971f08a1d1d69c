/* cache_dir.c -- the folder of nsl's caches: $NSL_CACHE_DIR, else
 * $XDG_CACHE_HOME/nsl, else $HOME/.cache/nsl (shared by the export cache of
 * .nsys-rep reports and the columnar cache). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/nsl_internal.h"

/* Creates every missing folder of path (mode 0700).  0, or -1 with errno. */
static int make_folders(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    int rc = mkdir(path, 0700);
    *p = '/';
    if (rc != 0 && errno != EEXIST) return -1;
  }
  if (mkdir(path, 0700) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

/* The folder of nsl's caches, subfolder `sub` (created with parents, mode 0700); *out is malloc'd. */
nsl_status nsl__cache_dir(const char *sub, char **out, nsl_error *err) {
  *out = NULL;
  const char *root = getenv("NSL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  const char *base, *tail;
  if (root && *root) base = root, tail = "";
  else if (xdg && *xdg) base = xdg, tail = "/nsl";
  else if (home && *home) base = home, tail = "/.cache/nsl";
  else
    return nsl_error_set(err, NSL_ERR_IO,
                         "no cache folder: set NSL_CACHE_DIR (or XDG_CACHE_HOME or HOME) to a writable folder");
  size_t n = strlen(base) + strlen(tail) + (sub && *sub ? strlen(sub) + 1 : 0) + 1;
  char *p = malloc(n);
  if (!p) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  snprintf(p, n, "%s%s%s%s", base, tail, sub && *sub ? "/" : "", sub && *sub ? sub : "");
  if (make_folders(p) != 0) {
    nsl_status rc = nsl_error_set(err, NSL_ERR_IO, "cannot create the cache folder '%s': %s", p, strerror(errno));
    free(p);
    return rc;
  }
  *out = p;
  return NSL_OK;
}
