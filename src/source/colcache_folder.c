/*
 * colcache_folder.c -- the cache folder as a whole: its entries listed and
 * removed (nsl cache list|clear), and the size bound (NSL_CACHE_MAX) kept by
 * removing the least recently used entries.  The files inside an entry are
 * colcache_io.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/nsl_internal.h"
#include "core/text.h"
#include "source/colcache.h"

/* The cache root (*root malloc'd): the folder above columns/, found through
 * nsl__cache_dir as every user of the cache folder finds it. */
static nsl_status cache_root(char **root, nsl_error *err) {
  nsl_status rc = nsl__cache_dir("columns", root, err);
  if (rc == NSL_OK) {
    char *slash = strrchr(*root, '/');
    if (slash && slash != *root) *slash = '\0';
  }
  return rc;
}

/* Reads the whole small file path (NUL-terminated) or NULL; a link, a
 * folder or anything but a regular file is not read. */
char *nsl__cache_slurp(const char *path, size_t cap) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char *b = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? malloc(cap + 1) : NULL;
  size_t n = 0;
  while (b && n < cap) {
    ssize_t r = read(fd, b + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (b) b[n] = 0;
  return b;
}

/* The headers that mark a file as the cache's own: a column or table file,
 * an entry's description, an export's record (nsys_rep.c). */
static int own_header(const char *h, size_t n) {
  static const char *const marks[] = {"NSLCACHE", "nsl-cache ", "nsl-export "};
  for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
    if (n >= strlen(marks[i]) && memcmp(h, marks[i], strlen(marks[i])) == 0) return 1;
  return 0;
}

/* 1 when file `name` of folder dfd (st: its lstat) is one the cache may
 * remove: a regular file of this user that carries the cache's header, or
 * any regular file of this user in an entry marked as nsl's (marked: an
 * export's folder, whose SQLite file nsys wrote), or an empty temporary
 * file of nsl__tmpfile_open left by a killed writer.  Never a link. */
static int removable(int dfd, const char *name, const struct stat *st, int marked) {
  if (!S_ISREG(st->st_mode) || st->st_uid != geteuid()) return 0;
  if (marked || (st->st_size == 0 && strstr(name, ".nsl-tmp-"))) return 1;
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  char h[16];
  ssize_t n = pread(fd, h, sizeof h, 0);
  close(fd);
  return n > 0 && own_header(h, (size_t)n);
}

/* Whether the folder dfd is an export entry nsl made: its record
 * .report-id is a regular file of this user with the cache's header, or
 * the record of nsl before the header ("SIZE MTIME.NS DEV INO", one line),
 * so that `nsl cache clear` also empties the entries older versions made. */
static int marked_entry(int dfd) {
  struct stat st;
  if (fstatat(dfd, ".report-id", &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  if (removable(dfd, ".report-id", &st, 0)) return 1;
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > 100) return 0;
  char text[128];
  int fd = openat(dfd, ".report-id", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  ssize_t n = fd >= 0 ? pread(fd, text, sizeof text - 1, 0) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return 0;
  text[n] = 0;
  long long size, sec;
  unsigned long long dev, ino;
  long nsec;
  int end = 0;
  return sscanf(text, "%lld %lld.%ld %llu %llu\n%n", &size, &sec, &nsec, &dev, &ino, &end) == 5 && end == n;
}

/* Bytes on disk and number of files of an entry. */
typedef struct folder_tally {
  int64_t bytes, files;
} folder_tally;

/* Goes through the entry folder dir (flat: nsl makes no sub-folders in an
 * entry; a link or a sub-folder found there is left alone), counting its
 * files into t, or removing those the cache may remove when `remove`.  The
 * folder is opened without following a link, and every file is reached
 * relative to it.  -1 when dir is not a folder (a link, a file). */
static int entry_walk(const char *dir, int remove, folder_tally *t) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return -1;
  int marked = remove && marked_entry(dfd);
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return -1;
  }
  struct dirent *e;
  char *mark = NULL;   /* the record goes last: a clear interrupted half-way leaves a marked entry */
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) continue;
    if (remove) {
      if (!removable(dfd, e->d_name, &st, marked)) continue;
      if (marked && strcmp(e->d_name, ".report-id") == 0) {
        mark = strdup(e->d_name);
        if (mark) {
          t->bytes += (int64_t)st.st_blocks * 512;
          t->files++;
        }
        continue;
      }
      if (unlinkat(dfd, e->d_name, 0) != 0) continue;
    }
    t->bytes += (int64_t)st.st_blocks * 512;
    t->files++;
  }
  if (mark && unlinkat(dfd, mark, 0) != 0) t->files--;
  free(mark);
  closedir(d);
  return 0;
}

/* Removes the files of the cache in entry folder dir, then dir itself
 * (when empty) with rmdir_too; the bytes freed. */
int64_t nsl__cache_remove_files(const char *dir, int rmdir_too, int64_t *files) {
  folder_tally t = {0, 0};
  if (entry_walk(dir, 1, &t) == 0 && rmdir_too) rmdir(dir);
  if (files) *files += t.files;
  return t.bytes;
}

/* ---- size bound, list, clear ---- */

typedef struct entry_info {
  char *path;
  int64_t bytes, files, used;
} entry_info;

static int by_used_desc(const void *a, const void *b) {
  const entry_info *x = a, *y = b;
  return x->used > y->used ? -1 : x->used < y->used ? 1 : strcmp(x->path, y->path);
}

/* The entries of folder `sub` of the cache (checked by nsl__cache_dir_open:
 * refused unless it is a private folder of this user), most recently used
 * first; only real folders are entries. */
static nsl_status scan_entries(const char *sub, entry_info **out, int *n, nsl_error *err) {
  *out = NULL;
  *n = 0;
  char *dir = NULL;
  int dfd = -1;
  nsl_status rc = nsl__cache_dir_open(sub, &dir, &dfd, err);
  if (rc != NSL_OK) return rc;
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    free(dir);
    return NSL_OK;
  }
  struct dirent *e;
  int cap = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      entry_info *g = realloc(*out, (size_t)cap * sizeof *g);
      if (!g) break;
      *out = g;
    }
    entry_info *x = &(*out)[*n];
    char *path = nsl__printf_alloc("%s/%s", dir, e->d_name);
    if (!path) continue;
    struct stat st;
    if (lstat(path, &st) != 0) {
      free(path);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {   /* links and stray files are not entries: never followed, never removed */
      free(path);
      continue;
    }
    folder_tally t = {0, 0};
    char *ep = nsl__printf_alloc("%s/entry", path);
    struct stat es;
    if (entry_walk(path, 0, &t) != 0) {
      free(ep);
      free(path);
      continue;
    }
    x->path = path;
    x->bytes = t.bytes;
    x->files = t.files;
    x->used = (int64_t)st.st_mtime;
    if (ep && lstat(ep, &es) == 0 && S_ISREG(es.st_mode)) x->used = (int64_t)es.st_mtime;
    free(ep);
    (*n)++;
  }
  closedir(d);
  free(dir);
  if (*n > 1) qsort(*out, (size_t)*n, sizeof **out, by_used_desc);
  return NSL_OK;
}

static void free_entries(entry_info *v, int n) {
  for (int i = 0; i < n; i++) free(v[i].path);
  free(v);
}

/* The size bound, NSL_CACHE_MAX in bytes (nsl/cache.h). */
int64_t nsl_cache_max_bytes(void) {
  const char *v = getenv("NSL_CACHE_MAX");
  int64_t def = (int64_t)16 << 30;
  if (!v || !v[0]) return def;
  char *end;
  double x = strtod(v, &end);
  if (end == v || x < 0) return def;
  switch (*end) {
  case 'k': case 'K': x *= 1024.0; break;
  case 'm': case 'M': x *= 1024.0 * 1024; break;
  case 'g': case 'G': x *= 1024.0 * 1024 * 1024; break;
  case 't': case 'T': x *= 1024.0 * 1024 * 1024 * 1024; break;
  default: break;
  }
  return x >= 9.2e18 ? INT64_MAX : (int64_t)x;
}

/* Removes the least recently used entries of columns/ until the folder is
 * within NSL_CACHE_MAX; `except` (the entry just used) goes last. */
void nsl__cache_evict(const char *except) {
  nsl_error e;
  int64_t max = nsl_cache_max_bytes();
  entry_info *v;
  int n;
  if (scan_entries("columns", &v, &n, &e) != NSL_OK) return;
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += v[i].bytes;
  for (int pass = 0; pass < 2 && total > max; pass++)
    for (int i = n - 1; i >= 0 && total > max; i--) {
      if (!v[i].path || (pass == 0 && except && strcmp(v[i].path, except) == 0)) continue;
      nsl__cache_remove_files(v[i].path, 1, NULL);
      total -= v[i].bytes;
      free(v[i].path);
      v[i].path = NULL;
    }
  free_entries(v, n);
}

/* The value of line "key VALUE" of an entry file (malloc'd), "" when there
 * is none; NULL when out of memory. */
static char *entry_field(const char *text, const char *key) {
  size_t kl = strlen(key);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
      return strndup(l + kl + 1, strcspn(l + kl + 1, "\n"));
  return strdup("");
}

nsl_status nsl_cache_list(char **rootp, void (*fn)(void *ctx, const nsl_cache_entry *e), void *ctx, nsl_error *err) {
  char *root = NULL;
  nsl_status rc = cache_root(&root, err);
  if (rc != NSL_OK) return rc;
  static const char *const subs[] = {"columns", "exports"};
  for (int s = 0; s < 2; s++) {
    entry_info *v;
    int n;
    if ((rc = scan_entries(subs[s], &v, &n, err)) != NSL_OK) {
      free(root);
      return rc;
    }
    for (int i = 0; i < n; i++) {
      if (!v[i].path) continue;
      char *ep = nsl__printf_alloc("%s/entry", v[i].path), *input = NULL, *sub = NULL;
      char *text = s == 0 && ep ? nsl__cache_slurp(ep, 8192) : NULL;
      if (text) {
        input = entry_field(text, "input");
        sub = entry_field(text, "sub");
      }
      const char *slash = strrchr(v[i].path, '/');
      nsl_cache_entry ce = {subs[s], slash ? slash + 1 : v[i].path, input ? input : "", sub ? sub : "",
                            v[i].bytes, v[i].files, v[i].used};
      fn(ctx, &ce);
      free(input);
      free(sub);
      free(text);
      free(ep);
    }
    free_entries(v, n);
  }
  if (rootp) *rootp = root;
  else free(root);
  return NSL_OK;
}

nsl_status nsl_cache_clear(int64_t *bytes, int64_t *entries, nsl_error *err) {
  char *root = NULL;
  nsl_status rc = cache_root(&root, err);
  if (rc != NSL_OK) return rc;
  static const char *const subs[] = {"columns", "exports"};
  *bytes = *entries = 0;
  for (int s = 0; s < 2; s++) {
    entry_info *v;
    int n;
    if ((rc = scan_entries(subs[s], &v, &n, err)) != NSL_OK) {
      free(root);
      return rc;
    }
    for (int i = 0; i < n; i++) {
      if (!v[i].path) continue;
      *bytes += nsl__cache_remove_files(v[i].path, 1, NULL);
      (*entries)++;
    }
    free_entries(v, n);
  }
  free(root);
  return NSL_OK;
}
