/*
 * colcache_io.c -- an entry's files on disk: the entry's folder set up
 * (made, emptied when it holds another version of the input, touched when
 * current), a file read whole into memory of its own and checked, from the
 * bundle's stored columns or the entry's folder (a large file of the folder
 * mapped under a read lease instead, leased_map.h: no write in place reaches
 * it; never through a link, never a FIFO, only a regular file of this user),
 * and a file published whole (a temporary file renamed) or as a bundle member.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/big_alloc.h"
#include "core/leased_map.h"
#include "core/nsl_internal.h"
#include "core/text.h"
#include "source/bundle_internal.h"
#include "source/colcache_internal.h"

static char *path_in(const nsl__cache_src *c, const char *name) {
  size_t n = strlen(c->dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", c->dir, name);
  return p;
}

/* Writes header + parts atomically as file `name` of the entry.  A failure
 * stops writing to this entry and warns once. */
void nsl__cache_publish(nsl__cache_src *c, const char *name, nsl__cache_head *h, const void *const *parts,
                        const size_t *lens, int nparts) {
  size_t total = NSL__CACHE_HEAD_BYTES;
  for (int i = 0; i < nparts; i++) total += lens[i];
  h->head_hash = nsl__cache_hash64(h, offsetof(nsl__cache_head, head_hash), 0);
  if (c->bw) {   /* an aligned member of the bundle (bundle_internal.h): its values 8-aligned in the zip */
    if (c->bw_rc != NSL_OK) return;
    size_t mn = strlen(c->bmember) + strlen(name) + 16;
    char *member = malloc(mn);
    if (!member) {
      c->bw_rc = nsl_error_set(c->bw_err, NSL_ERR_NOMEM, "out of memory");
      return;
    }
    snprintf(member, mn, "columns/%s/%s", c->bmember, name);
    nsl_status rc = nsl__bundle_writer_begin_aligned(c->bw, member, total, c->bw_err);
    if (rc == NSL_OK) rc = nsl_bundle_writer_write(c->bw, h, NSL__CACHE_HEAD_BYTES, c->bw_err);
    for (int i = 0; rc == NSL_OK && i < nparts; i++)
      if (lens[i]) rc = nsl_bundle_writer_write(c->bw, parts[i], lens[i], c->bw_err);
    if (rc == NSL_OK) rc = nsl__bundle_writer_end_aligned(c->bw, c->bw_err);
    c->bw_rc = rc;
    free(member);
    return;
  }
  if (c->nowrite || !c->dir) return;
  if ((int64_t)total > nsl_cache_max_bytes()) return;   /* would never stay */
  char *target = path_in(c, name), *tmp = NULL;
  nsl_error e;
  int fd = -1;
  if (!target || nsl__tmpfile_open(target, &fd, &tmp, &e) != NSL_OK) {
    c->nowrite = 1;
    nsl__cache_warn(c->dir, target ? e.msg : "out of memory");
    free(target);
    return;
  }
  int code = nsl__write_all(fd, h, NSL__CACHE_HEAD_BYTES);
  for (int i = 0; !code && i < nparts; i++) code = nsl__write_all(fd, parts[i], lens[i]);
  if (code) {
    nsl__tmpfile_abort(fd, tmp);
    c->nowrite = 1;
    nsl__cache_warn(target, strerror(code));
  } else if (nsl__tmpfile_publish(fd, tmp, target, &e) != NSL_OK) {   /* checked on every read: no fsync */
    c->nowrite = 1;
    nsl__cache_warn(target, e.msg);
  } else
    c->wrote = 1;
  free(tmp);
  free(target);
}

int nsl__cache_emb_cmp(const void *a, const void *b) {
  return strcmp(((const nsl__cache_emb *)a)->name, ((const nsl__cache_emb *)b)->name);
}

/* Reads len bytes at off of fd into memory of its own (nsl__big_alloc, so
 * a file's pages are ones freed earlier, not fresh ones the kernel must
 * zero; nsl__mapping frees them with nsl__big_free): a file changed in place
 * later (cp over it, truncate) cannot reach them, where a mapping of the
 * file would take a SIGBUS on a page cut off.  MAP_FAILED when the file no
 * longer holds them (it changed) or cannot be read. */
static void *read_private(int fd, uint64_t off, size_t len) {
  void *addr = nsl__big_alloc(len);
  if (!addr) return MAP_FAILED;
  size_t done = 0;
  while (done < len) {
    size_t want = len - done > ((size_t)1 << 30) ? (size_t)1 << 30 : len - done;
    ssize_t n = pread(fd, (char *)addr + done, want, (off_t)(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      nsl__big_free(addr);
      return MAP_FAILED;
    }
    done += (size_t)n;
  }
  return addr;
}

/* Reads file `name` from the bundle's stored columns, else from the entry's
 * folder, into memory of its own, and checks it; NULL when absent or bad. */
nsl__mapping *nsl__cache_map_file(const nsl__cache_src *c, const char *name, uint32_t kind, const char *table,
                                  const char *column, const nsl__cache_head **head, size_t *size) {
  nsl__cache_emb key = {(char *)name, 0, 0};
  const nsl__cache_emb *e = c->nemb ? bsearch(&key, c->emb, c->nemb, sizeof *c->emb, nsl__cache_emb_cmp) : NULL;
  if (e && e->size >= 16 + NSL__CACHE_HEAD_BYTES && e->size < SIZE_MAX / 2) {
    long page = sysconf(_SC_PAGESIZE);
    uint64_t base = e->off & ~(uint64_t)(page > 0 ? page - 1 : 4095);   /* the alignment the zip gives the data */
    size_t len = (size_t)(e->off - base + e->size);
    void *addr = read_private(nsl__bundle_fd(c->zip), base, len);
    if (addr != MAP_FAILED) {
      const unsigned char *m = (const unsigned char *)addr + (e->off - base);
      uint64_t pad = nsl__aligned_pad(m, e->size);
      const nsl__cache_head *h = (const nsl__cache_head *)(m + pad);
      nsl__mapping *map = NULL;
      if (pad && ((uintptr_t)h & 7) == 0 &&
          nsl__cache_sound_file(h, (size_t)(e->size - pad), c->emb_ident, kind, table, column))
        map = nsl__mapping_new(addr, len);
      if (map) {
        *head = h;
        *size = (size_t)(e->size - pad);
        return map;
      }
      nsl__big_free(addr);
    }
  }
  if (!c->dir) return NULL;
  char *path = path_in(c, name);
  if (!path) return NULL;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);   /* never a link, never a FIFO */
  free(path);
  if (fd < 0) return NULL;
  struct stat st;
  void *addr = MAP_FAILED;
  size_t n = 0;
  int slot = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size >= NSL__CACHE_HEAD_BYTES &&
      (uint64_t)st.st_size < SIZE_MAX / 2) {
    /* a large file mapped under a lease: no copy, and no fresh pages the kernel must zero */
    if (st.st_size >= NSL__CACHE_LEASE_MIN && (slot = nsl__leased_map(fd, &addr, &n)) >= 0) fd = -1;
    else if ((addr = read_private(fd, 0, (size_t)st.st_size)) != MAP_FAILED) n = (size_t)st.st_size;
  }
  if (fd >= 0) close(fd);
  if (addr == MAP_FAILED) return NULL;
  nsl__mapping *m = NULL;
  if (n >= NSL__CACHE_HEAD_BYTES && nsl__cache_sound_file(addr, n, c->ident, kind, table, column))
    m = slot >= 0 ? nsl__mapping_leased(slot, addr, n) : nsl__mapping_new(addr, n);
  if (!m) {
    if (slot >= 0) nsl__leased_unmap(slot);
    else nsl__big_free(addr);
    return NULL;
  }
  *head = addr;
  *size = n;
  return m;
}

/* Writes the entry's description (text) as a whole file, without fsync as
 * every file of the cache (a torn one is not the current ident: the entry
 * starts again). */
static nsl_status publish_text(const char *target, const char *text, nsl_error *err) {
  int fd = -1;
  char *tmp = NULL;
  nsl_status rc = nsl__tmpfile_open(target, &fd, &tmp, err);
  if (rc != NSL_OK) return rc;
  int code = nsl__write_all(fd, text, strlen(text));
  if (code) {
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': %s", target, strerror(code));
    nsl__tmpfile_abort(fd, tmp);
  } else
    rc = nsl__tmpfile_publish(fd, tmp, target, err);
  free(tmp);
  return rc;
}

/* Sets up c's entry in the cache folder: made, or emptied when it holds
 * another version of the input; touched (LRU) when it is current.  Without
 * a usable folder c->dir stays NULL (one warning). */
void nsl__cache_open_entry(nsl__cache_src *c, const char *file, const char *sub, uint64_t key) {
  char *root = NULL;
  nsl_error e;
  if (nsl__cache_dir("columns", &root, &e) != NSL_OK) {
    nsl__cache_warn("the cache folder", e.msg);
    return;
  }
  size_t dn = strlen(root) + 20;
  if (!(c->dir = malloc(dn))) {
    free(root);
    return;
  }
  snprintf(c->dir, dn, "%s/%016llx", root, (unsigned long long)key);
  free(root);
  c->nowrite = nsl_cache_max_bytes() <= 0;
  char *entry = path_in(c, "entry"), *text = NULL, want[64];
  snprintf(want, sizeof want, "ident %016llx\n", (unsigned long long)c->ident);
  if (entry) text = nsl__cache_slurp(entry, 8192);
  if (!entry) c->nowrite = 1;
  else if (!text || !strstr(text, want)) {
    if (text) nsl__cache_remove_files(c->dir, 0, NULL);
    struct stat ds;
    if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
      nsl__cache_warn(c->dir, strerror(errno));
      c->nowrite = 1;
    } else if (lstat(c->dir, &ds) != 0 || !S_ISDIR(ds.st_mode) || ds.st_uid != geteuid()) {
      nsl__cache_warn(c->dir, "not a folder of this user (a link?); it is not followed");
      free(c->dir);
      c->dir = NULL;
    } else if (!c->nowrite) {
      char *abs = realpath(file, NULL);
      char *body = nsl__printf_alloc("nsl-cache %d\n%skind %s\ninput %s\nsub %s\n", NSL_CACHE_FORMAT, want,
                                     c->kind ? c->kind : "", abs ? abs : file, sub ? sub : "");
      if (body == NULL) {
        nsl__cache_warn(c->dir, "out of memory");
        c->nowrite = 1;
      } else if (publish_text(entry, body, &e) != NSL_OK) {
        nsl__cache_warn(c->dir, e.msg);
        c->nowrite = 1;
      }
      free(body);
      free(abs);
    }
  } else {
    utimensat(AT_FDCWD, entry, NULL, AT_SYMLINK_NOFOLLOW);   /* last used: the LRU order (a link's target never touched) */
  }
  free(entry);
  free(text);
}

