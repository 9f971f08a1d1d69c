/*
 * colcache_folder.c -- the cache folder as a whole: its entries listed and
 * removed (nsl cache list|clear), and the size bound (NSL_CACHE_MAX) kept by
 * removing the least recently used entries.  The files inside an entry are
 * colcache.c's.
 */
#include <dirent.h>
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

/* Reads the whole small file path (NUL-terminated) or NULL. */
char *nsl__cache_slurp(const char *path, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = malloc(cap + 1);
  size_t n = b ? fread(b, 1, cap, f) : 0;
  fclose(f);
  if (b) b[n] = 0;
  return b;
}

/* Called by walk_folder for each file under a folder, and for each
 * sub-folder after what it holds. */
typedef void (*folder_visitor)(void *ctx, const char *path, const struct stat *st);

/* Visits everything under dir, depth first, links not followed. */
static void walk_folder(const char *dir, folder_visitor visit, void *ctx) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char *path = nsl__printf_alloc("%s/%s", dir, e->d_name);
    if (!path) continue;
    struct stat st;
    if (lstat(path, &st) == 0) {
      if (S_ISDIR(st.st_mode)) walk_folder(path, visit, ctx);
      visit(ctx, path, &st);
    }
    free(path);
  }
  closedir(d);
}

/* Bytes on disk and number of the files a walk saw. */
typedef struct folder_tally {
  int64_t bytes, files;
} folder_tally;

/* Visitor: counts each file. */
static void count_file(void *ctx, const char *path, const struct stat *st) {
  folder_tally *t = ctx;
  (void)path;
  if (S_ISDIR(st->st_mode)) return;
  t->bytes += (int64_t)st->st_blocks * 512;
  t->files++;
}

/* Visitor: removes each file (counting those removed) and each emptied sub-folder. */
static void remove_file(void *ctx, const char *path, const struct stat *st) {
  if (S_ISDIR(st->st_mode)) rmdir(path);
  else if (unlink(path) == 0) count_file(ctx, path, st);
}

/* Removes the files under folder dir (sub-folders too), then dir itself when rmdir_too. */
int64_t nsl__cache_remove_files(const char *dir, int rmdir_too, int64_t *files) {
  folder_tally t = {0, 0};
  walk_folder(dir, remove_file, &t);
  if (rmdir_too) rmdir(dir);
  if (files) *files += t.files;
  return t.bytes;
}

/* Size on disk and number of the files under dir (recursively). */
static int64_t folder_size(const char *dir, int64_t *files) {
  folder_tally t = {0, 0};
  walk_folder(dir, count_file, &t);
  *files += t.files;
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

/* The entries of folder `sub` of the cache, most recently used first. */
static int scan_entries(const char *root, const char *sub, entry_info **out, int *n) {
  *out = NULL;
  *n = 0;
  char *dir = nsl__printf_alloc("%s/%s", root, sub);
  if (!dir) return -1;
  DIR *d = opendir(dir);
  if (!d) {
    free(dir);
    return 0;
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
    x->path = path;
    x->files = 0;
    x->used = (int64_t)st.st_mtime;
    if (S_ISDIR(st.st_mode)) {
      char *ep = nsl__printf_alloc("%s/entry", path);
      struct stat es;
      x->bytes = folder_size(path, &x->files);
      if (ep && stat(ep, &es) == 0) x->used = (int64_t)es.st_mtime;
      free(ep);
    } else {
      x->bytes = (int64_t)st.st_blocks * 512;
      x->files = 1;
    }
    (*n)++;
  }
  closedir(d);
  free(dir);
  if (*n > 1) qsort(*out, (size_t)*n, sizeof **out, by_used_desc);
  return 0;
}

static void free_entries(entry_info *v, int n) {
  for (int i = 0; i < n; i++) free(v[i].path);
  free(v);
}

/* Removes the least recently used entries of columns/ until the folder is
 * within NSL_CACHE_MAX; `except` (the entry just used) goes last. */
void nsl__cache_evict(const char *except) {
  char *root = NULL;
  nsl_error e;
  int64_t max = nsl_cache_max_bytes();
  if (cache_root(&root, &e) != NSL_OK) return;
  entry_info *v;
  int n;
  scan_entries(root, "columns", &v, &n);
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
  free(root);
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
    scan_entries(root, subs[s], &v, &n);
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
    scan_entries(root, subs[s], &v, &n);
    for (int i = 0; i < n; i++) {
      struct stat st;
      if (!v[i].path || lstat(v[i].path, &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) *bytes += nsl__cache_remove_files(v[i].path, 1, NULL);
      else if (unlink(v[i].path) == 0) *bytes += (int64_t)st.st_blocks * 512;
      (*entries)++;
    }
    free_entries(v, n);
  }
  free(root);
  return NSL_OK;
}
