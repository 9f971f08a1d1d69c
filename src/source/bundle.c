/*
 * bundle.c -- reading nsl bundles and plain zips (nsys-jax archives) with
 * libarchive, never trusting them.
 *
 * Opening reads the central directory once: the zip's tail (its end
 * records and the directory) is read into memory by nsl's own parser
 * (zipdir.c), and every later walk of libarchive's seekable zip reader
 * finds those bytes there; every entry's name, type and declared size is
 * checked before any member is decompressed.  The handle is shared by
 * reference (nsl__bundle_retain; nsl_bundle_close drops one): the reports
 * of a trace and the columnar cache keep the bundle, never its path.  A member is read on demand by walking the
 * headers again up to it; one cursor per bundle is kept positioned so that
 * reading members in archive order costs one pass.  While a member is
 * decompressed, its bytes are counted against the size the central
 * directory declared (and the manifest agreed with), so a header that lies
 * cannot make us allocate or produce more than the checked size.
 * Member-name rules and small helpers: bundle_util.c; the manifest's
 * structure: bundle_manifest.c.
 */
#include "source/bundle_internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define TAIL_MAX (16u << 20)   /* the most of a zip's tail (end records, directory) kept in memory */

/* ---- the bundle handle ------------------------------------------------------- */

/* A libarchive reader over the bundle's bytes, positioned after the header
 * of entry `ordinal` (-1: before the first). */
typedef struct cursor {
  nsl_bundle *b;
  struct archive *ar;
  int ordinal;
  uint64_t pos;                  /* next byte the read callback returns */
  unsigned char buf[CHUNK];
} cursor;

struct nsl_bundle {
  atomic_int refs;               /* nsl_bundle_close drops one; the last frees */
  char *path;
  int fd;                        /* -1 for an in-memory image */
  nsl__file_id id;               /* of the file when opened (known = 0 for an image) */
  const unsigned char *mem;
  uint64_t size;                 /* bytes of the zip */
  nsl_bundle_options opts;
  int raw;
  size_t n;                      /* regular-file members */
  nsl_bundle_member *members;    /* archive order */
  int *ordinal;                  /* libarchive entry number of members[i] */
  char (*sha)[65];               /* from the manifest; "" in raw mode */
  size_t *by_name;               /* member indices sorted by name */
  json_t *manifest;
  char *manifest_text;           /* manifest.json as read (NUL-terminated) */
  nsl__zip_dir dir;              /* the central directory as nsl parsed it */
  unsigned char *tail;           /* bytes [tail_off, size) of the file, read once at open */
  uint64_t tail_off;
  pthread_mutex_t lock;          /* guards `cached` */
  cursor *cached;
};

static la_ssize_t cb_read(struct archive *a, void *ctx, const void **out) {
  cursor *c = ctx;
  nsl_bundle *b = c->b;
  if (c->pos >= b->size) {
    *out = c->buf;
    return 0;
  }
  if (b->mem || c->pos >= b->tail_off) {   /* an image, or the tail read at open */
    uint64_t n = b->size - c->pos;
    if (n > 1024 * 1024)
      n = 1024 * 1024;
    *out = b->mem ? b->mem + c->pos : b->tail + (c->pos - b->tail_off);
    c->pos += n;
    return (la_ssize_t)n;
  }
  uint64_t want = b->tail_off - c->pos;   /* up to the tail, served from memory next */
  if (want > sizeof c->buf)
    want = sizeof c->buf;
  ssize_t got;
  do
    got = pread(b->fd, c->buf, (size_t)want, (off_t)c->pos);
  while (got < 0 && errno == EINTR);
  if (got < 0) {
    archive_set_error(a, errno, "read error: %s", strerror(errno));
    return -1;
  }
  *out = c->buf;
  c->pos += (uint64_t)got;
  return got;
}

static la_int64_t cb_skip(struct archive *a, void *ctx, la_int64_t request) {
  (void)a;
  cursor *c = ctx;
  if (request <= 0)
    return 0;
  uint64_t left = c->b->size - c->pos;
  uint64_t n = (uint64_t)request < left ? (uint64_t)request : left;
  c->pos += n;
  return (la_int64_t)n;
}

static la_int64_t cb_seek(struct archive *a, void *ctx, la_int64_t offset, int whence) {
  cursor *c = ctx;
  int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)c->pos : (int64_t)c->b->size;
  if ((offset > 0 && base > INT64_MAX - offset) || base + offset < 0 ||
      (uint64_t)(base + offset) > c->b->size) {
    archive_set_error(a, EINVAL, "seek outside the file");
    return ARCHIVE_FATAL;
  }
  c->pos = (uint64_t)(base + offset);
  return (la_int64_t)c->pos;
}

static int cb_close(struct archive *a, void *ctx) {
  (void)a;
  (void)ctx;
  return ARCHIVE_OK;
}

static void cursor_free(cursor *c) {
  if (c == NULL)
    return;
  if (c->ar)
    archive_read_free(c->ar);
  free(c);
}

/* A new libarchive reader over b, before the first entry.  verb/what make
 * the message ("cannot open 'x.zip': ..."). */
static nsl_status cursor_new(nsl_bundle *b, cursor **out, const char *verb, nsl_error *err) {
  *out = NULL;
  cursor *c = calloc(1, sizeof *c);
  if (c == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot %s '%s': out of memory", verb, b->path);
  c->b = b;
  c->ordinal = -1;
  c->ar = archive_read_new();
  if (c->ar == NULL) {
    free(c);
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot %s '%s': out of memory", verb, b->path);
  }
  /* The seekable reader trusts the central directory, not local headers,
   * and needs the whole file: exactly what a truncated zip lacks. */
  if (archive_read_support_format_zip_seekable(c->ar) != ARCHIVE_OK ||
      archive_read_set_callback_data(c->ar, c) != ARCHIVE_OK ||
      archive_read_set_read_callback(c->ar, cb_read) != ARCHIVE_OK ||
      archive_read_set_skip_callback(c->ar, cb_skip) != ARCHIVE_OK ||
      archive_read_set_seek_callback(c->ar, cb_seek) != ARCHIVE_OK ||
      archive_read_set_close_callback(c->ar, cb_close) != ARCHIVE_OK ||
      archive_read_open1(c->ar) != ARCHIVE_OK) {
    nsl_status st = nsl_error_set(err, NSL_ERR_FORMAT,
                                  "cannot %s '%s': not a zip archive, or a truncated one (%s)", verb,
                                  b->path, archive_error_string(c->ar) ? archive_error_string(c->ar)
                                                                       : "no central directory");
    cursor_free(c);
    return st;
  }
  *out = c;
  return NSL_OK;
}

/* Reads the next entry header.  Returns NSL_OK with *entry set, NSL_OK with
 * *entry NULL at the end, or NSL_ERR_FORMAT. */
static nsl_status cursor_next(cursor *c, struct archive_entry **entry, const char *verb, nsl_error *err) {
  *entry = NULL;
  int r = archive_read_next_header(c->ar, entry);
  if (r == ARCHIVE_EOF) {
    *entry = NULL;
    return NSL_OK;
  }
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
    *entry = NULL;
    const char *msg = archive_error_string(c->ar);
    return nsl_error_set(err, NSL_ERR_FORMAT, "cannot %s '%s': damaged zip after entry %d (%s)", verb,
                         c->b->path, c->ordinal + 1, msg ? msg : "unreadable header");
  }
  c->ordinal++;
  return NSL_OK;
}

static int cmp_by_name(const void *a, const void *b, void *ctx) {
  const nsl_bundle_member *m = ctx;
  return strcmp(m[*(const size_t *)a].name, m[*(const size_t *)b].name);
}

/* Sorts member indices by name.  qsort_r differs between GNU and BSD: a
 * small merge sort keeps this portable C11. */
static void sort_indices(size_t *idx, size_t n, const nsl_bundle_member *m, size_t *tmp) {
  if (n < 2)
    return;
  size_t h = n / 2;
  sort_indices(idx, h, m, tmp);
  sort_indices(idx + h, n - h, m, tmp);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n)
    tmp[k++] = cmp_by_name(&idx[j], &idx[i], (void *)m) < 0 ? idx[j++] : idx[i++];
  while (i < h)
    tmp[k++] = idx[i++];
  while (j < n)
    tmp[k++] = idx[j++];
  memcpy(idx, tmp, n * sizeof *idx);
}

static long find_index(const nsl_bundle *b, const char *name) {
  size_t lo = 0, hi = b->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(b->members[b->by_name[mid]].name, name);
    if (c == 0)
      return (long)b->by_name[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Reads len bytes at off of the file into buf; 0, or -1 with errno set. */
static int file_pread(int fd, unsigned char *p, size_t len, uint64_t off) {
  while (len > 0) {
    ssize_t n = pread(fd, p, len, (off_t)off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;   /* the file shrank under us */
      return -1;
    }
    p += n;
    off += (uint64_t)n;
    len -= (size_t)n;
  }
  return 0;
}

/* Reads len bytes at off of the zip for the directory parser (file or
 * memory image).  The parser reads from the end towards the directory's
 * start: bytes within TAIL_MAX of the end are read once into b->tail, which
 * grows towards the front, so libarchive's walks later find the end records
 * and the directory there instead of reading them again. */
static int src_pread(void *ctx, void *buf, size_t len, uint64_t off) {
  nsl_bundle *b = ctx;
  if (off > b->size || len > b->size - off) {
    errno = EINVAL;
    return -1;
  }
  if (b->mem) {
    memcpy(buf, b->mem + off, len);
    return 0;
  }
  if (off < b->tail_off && b->size - off <= TAIL_MAX) {   /* the tail grows to start at off */
    size_t n = (size_t)(b->size - off), have = (size_t)(b->size - b->tail_off);
    unsigned char *t = malloc(n ? n : 1);
    if (t == NULL)
      return -1;
    if (file_pread(b->fd, t, n - have, off) != 0) {
      free(t);
      return -1;
    }
    if (have)
      memcpy(t + (n - have), b->tail, have);
    free(b->tail);
    b->tail = t;
    b->tail_off = off;
  }
  if (off >= b->tail_off) {
    memcpy(buf, b->tail + (off - b->tail_off), len);
    return 0;
  }
  return file_pread(b->fd, buf, len, off);
}

static const char *unix_type_name(unsigned t) {
  switch (t) {
  case 0120000u: return "a symbolic link";
  case 0140000u: return "a socket";
  case 0020000u: return "a character device";
  case 0060000u: return "a block device";
  case 0010000u: return "a named pipe";
  default: return "not a regular file";
  }
}

typedef struct extent {
  uint64_t offset, end;     /* local header .. end of data, at least */
  const char *name;
} extent;

static int cmp_extent(const void *a, const void *b) {
  const extent *x = a, *y = b;
  return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Applies the rules to the central directory as nsl parsed it, filling
 * b->members: names, types, encryption, sizes, the bomb ratio, duplicates,
 * overlapping entries.  Nothing is decompressed. */
static nsl_status check_directory(nsl_bundle *b, const nsl__zip_dir *d, nsl_error *err) {
  const nsl_bundle_limits *lim = &b->opts.limits;
  uint64_t total = 0;
  char s1[32], s2[32];
  extent *ext = NULL;
  size_t *tmp = NULL;
  nsl_status st = NSL_OK;

  b->members = calloc(d->n ? d->n : 1, sizeof *b->members);
  b->ordinal = malloc((d->n ? d->n : 1) * sizeof *b->ordinal);
  ext = malloc((d->n ? d->n : 1) * sizeof *ext);
  if (b->members == NULL || b->ordinal == NULL || ext == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", b->path);
    goto done;
  }
  for (size_t k = 0; k < d->n; k++) {
    const nsl__zip_entry *z = &d->e[k];
    char shown[300];
    nsl__printable(z->name, shown, sizeof shown);
    ext[k].offset = z->offset;
    ext[k].end = z->offset + 30 + z->csize;   /* header (>= 30 bytes) + data */
    ext[k].name = z->name;
    if (z->csize > UINT64_MAX - 30 - z->offset || ext[k].end > d->cd_offset) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' runs past the start of the "
                         "central directory", b->path, shown);
      goto done;
    }
    if (z->type == 0120000u) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' is a symbolic link (links are "
                         "refused)", b->path, shown);
      goto done;
    }
    if (z->is_dir) {
      /* Folder entries carry no data: check the path, then skip them. */
      char folder[NSL__BUNDLE_NAME_MAX + 2];
      snprintf(folder, sizeof folder, "%s", z->name);
      size_t len = strlen(folder);
      if (len > 1 && folder[len - 1] == '/')
        folder[len - 1] = '\0';
      const char *problem = nsl__bundle_name_problem(folder);
      if (problem == NULL && z->usize != 0)
        problem = "is a folder but holds data";
      if (problem) {
        st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': folder entry '%s' %s", b->path, shown,
                           problem);
        goto done;
      }
      continue;
    }
    if (z->type != 0 && z->type != 0100000u) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' is %s (only regular files "
                         "are accepted)", b->path, shown, unix_type_name(z->type));
      goto done;
    }
    const char *problem = nsl__bundle_name_problem(z->name);
    if (problem) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' %s", b->path, shown, problem);
      goto done;
    }
    if (z->flags & 0x41) {   /* bit 0: encrypted, bit 6: strong encryption */
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' is encrypted", b->path, shown);
      goto done;
    }
    if (lim->max_member && z->usize > lim->max_member) {
      nsl__fmt_bytes(z->usize, s1);
      nsl__fmt_bytes(lim->max_member, s2);
      st = nsl_error_set(err, NSL_ERR_LIMIT, "cannot open '%s': member '%s' is %s, above the member "
                         "size limit (%s)", b->path, shown, s1, s2);
      goto done;
    }
    total = z->usize > UINT64_MAX - total ? UINT64_MAX : total + z->usize;
    if (lim->max_total && total > lim->max_total) {
      nsl__fmt_bytes(total, s1);
      nsl__fmt_bytes(lim->max_total, s2);
      st = nsl_error_set(err, NSL_ERR_LIMIT, "cannot open '%s': members add up to more than %s "
                         "uncompressed (at member '%s'), above the total limit (%s)", b->path, s1,
                         shown, s2);
      goto done;
    }
    nsl_bundle_member *m = &b->members[b->n];
    m->name = strdup(z->name);
    if (m->name == NULL) {
      st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", b->path);
      goto done;
    }
    m->size = z->usize;
    b->ordinal[b->n] = -1;
    b->n++;
  }
  /* A zip bomb: far more bytes inside than the file holds. */
  if (lim->max_ratio > 0 && total > lim->ratio_floor && (double)total > lim->max_ratio * (double)b->size) {
    nsl__fmt_bytes(total, s1);
    nsl__fmt_bytes(b->size, s2);
    st = nsl_error_set(err, NSL_ERR_LIMIT, "cannot open '%s': members declare %s uncompressed in a "
                       "%s file, more than %g times its size (a zip bomb? limit max_ratio)", b->path,
                       s1, s2, lim->max_ratio);
    goto done;
  }
  /* Entries sharing bytes: the trick of non-recursive zip bombs. */
  qsort(ext, d->n, sizeof *ext, cmp_extent);
  for (size_t k = 1; k < d->n; k++)
    if (ext[k].offset < ext[k - 1].end) {
      char n1[300], n2[300];
      nsl__printable(ext[k - 1].name, n1, sizeof n1);
      nsl__printable(ext[k].name, n2, sizeof n2);
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': members '%s' and '%s' overlap in the file "
                         "(a zip bomb or a damaged zip)", b->path, n1, n2);
      goto done;
    }
  /* Name index, then duplicates (adjacent once sorted). */
  b->by_name = malloc((b->n ? b->n : 1) * sizeof *b->by_name);
  tmp = malloc((b->n ? b->n : 1) * sizeof *tmp);
  b->sha = calloc(b->n ? b->n : 1, sizeof *b->sha);
  if (b->by_name == NULL || tmp == NULL || b->sha == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", b->path);
    goto done;
  }
  for (size_t i = 0; i < b->n; i++)
    b->by_name[i] = i;
  sort_indices(b->by_name, b->n, b->members, tmp);
  for (size_t i = 1; i < b->n; i++)
    if (strcmp(b->members[b->by_name[i - 1]].name, b->members[b->by_name[i]].name) == 0) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' appears twice", b->path,
                         b->members[b->by_name[i]].name);
      goto done;
    }
done:
  free(ext);
  free(tmp);
  return st;
}

/* Walks the zip once with libarchive and maps each member to libarchive's
 * entry number; libarchive's view must agree with the directory checked
 * above (same names, same sizes, no links), or the zip is ambiguous. */
static nsl_status map_entries(nsl_bundle *b, nsl_error *err) {
  cursor *c = NULL;
  size_t seen = 0;
  nsl_status st = cursor_new(b, &c, "open", err);
  if (st != NSL_OK)
    return st;
  for (;;) {
    struct archive_entry *e;
    if ((st = cursor_next(c, &e, "open", err)) != NSL_OK)
      goto done;
    if (e == NULL)
      break;
    const char *name = archive_entry_pathname_utf8(e);
    if (name == NULL)
      name = archive_entry_pathname(e);
    if (name == NULL)
      name = "";
    char shown[300];
    nsl__printable(name, shown, sizeof shown);
    mode_t type = archive_entry_filetype(e);
    if (archive_entry_symlink(e) != NULL || archive_entry_hardlink(e) != NULL || type == AE_IFLNK) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' is a link (links are refused)",
                         b->path, shown);
      goto done;
    }
    if (type == AE_IFDIR)
      continue;
    long k = find_index(b, name);
    if (k < 0 || b->ordinal[k] >= 0 || type != AE_IFREG ||
        (archive_entry_size_is_set(e) && (uint64_t)archive_entry_size(e) != b->members[k].size)) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': entry '%s' reads differently from the "
                         "central directory (an ambiguous or damaged zip)", b->path, shown);
      goto done;
    }
    b->ordinal[k] = c->ordinal;
    b->members[k].mtime = archive_entry_mtime_is_set(e) ? (int64_t)archive_entry_mtime(e) : 0;
    seen++;
  }
  if (seen != b->n) {
    for (size_t k = 0; k < b->n; k++)
      if (b->ordinal[k] < 0) {
        st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' of the central directory "
                           "cannot be read (an ambiguous or damaged zip)", b->path, b->members[k].name);
        goto done;
      }
  }
done:
  cursor_free(c);
  return st;
}

/* Parses and checks the directory (kept), then maps it to libarchive's entries. */
static nsl_status scan_entries(nsl_bundle *b, nsl_error *err) {
  nsl_status st = nsl__zip_dir_read(&b->dir, src_pread, b, b->size, b->opts.limits.max_members, b->path, err);
  if (st != NSL_OK)
    return st;
  st = check_directory(b, &b->dir, err);
  if (st == NSL_OK && b->dir.n > 0)   /* libarchive does not open a zip without entries */
    st = map_entries(b, err);
  return st;
}

/* Decompresses member idx into sink, checking the declared size while it
 * goes (never more bytes than declared reach the sink) and the manifest's
 * sha256 at the end. */
static nsl_status read_entry(nsl_bundle *b, size_t idx, nsl_bundle_sink sink, void *ctx, nsl_error *err) {
  const nsl_bundle_member *m = &b->members[idx];
  int target = b->ordinal[idx];
  cursor *c = NULL;
  int shared = 0;
  nsl_status st = NSL_OK;
  char s1[32];

  if (pthread_mutex_trylock(&b->lock) == 0) {
    shared = 1;
    c = b->cached;
    b->cached = NULL;
  }
  if (c != NULL && c->ordinal >= target) {   /* behind us: start over */
    cursor_free(c);
    c = NULL;
  }
  if (c == NULL && (st = cursor_new(b, &c, "read", err)) != NSL_OK)
    goto done;
  while (c->ordinal < target) {
    struct archive_entry *e;
    if ((st = cursor_next(c, &e, "read", err)) != NSL_OK)
      goto done;
    if (e == NULL) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot read '%s': member '%s' is no longer in the zip",
                         b->path, m->name);
      goto done;
    }
    if (c->ordinal == target) {
      const char *name = archive_entry_pathname_utf8(e);
      if (name == NULL)
        name = archive_entry_pathname(e);
      if (name == NULL || strcmp(name, m->name) != 0) {
        st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot read '%s': member '%s' changed since the zip "
                           "was opened", b->path, m->name);
        goto done;
      }
    }
  }

  struct sha256_ctx sha;
  sha256_init(&sha);
  uint64_t got = 0;
  for (;;) {
    const void *buf;
    size_t n;
    la_int64_t off;
    int r = archive_read_data_block(c->ar, &buf, &n, &off);
    if (r == ARCHIVE_EOF)
      break;
    if (r != ARCHIVE_OK) {
      const char *msg = archive_error_string(c->ar);
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot read '%s': member '%s' is damaged (%s)", b->path,
                         m->name, msg ? msg : "decompression failed");
      goto done;
    }
    if (off < 0 || (uint64_t)off != got) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot read '%s': member '%s' has a hole at byte %llu",
                         b->path, m->name, (unsigned long long)got);
      goto done;
    }
    if (n > m->size - got) {
      nsl__fmt_bytes(m->size, s1);
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot read '%s': member '%s' holds more than the %s its "
                         "header declares (a zip bomb or a damaged zip)", b->path, m->name, s1);
      goto done;
    }
    if (n == 0)
      continue;
    sha256_update(&sha, n, buf);
    if (sink(ctx, buf, n) != 0) {
      if (err == NULL || err->code == NSL_OK)
        st = nsl_error_set(err, NSL_ERR_ARG, "cannot read '%s': member '%s': the reader stopped",
                           b->path, m->name);
      else
        st = err->code;
      goto done;
    }
    got += n;
  }
  if (got != m->size) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot read '%s': member '%s' is truncated: %llu of %llu "
                       "bytes", b->path, m->name, (unsigned long long)got, (unsigned long long)m->size);
    goto done;
  }
  if (b->sha[idx][0] != '\0') {
    char hex[65];
    nsl__sha256_hex(&sha, hex);
    if (strcmp(hex, b->sha[idx]) != 0) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot read '%s': member '%s' does not match its sha256 "
                         "in manifest.json (manifest %.12s..., content %.12s...)", b->path, m->name,
                         b->sha[idx], hex);
      goto done;
    }
  }
done:
  if (st != NSL_OK) {
    cursor_free(c);
    c = NULL;
  }
  if (shared) {
    b->cached = c;
    pthread_mutex_unlock(&b->lock);
  } else {
    cursor_free(c);
  }
  return st;
}

typedef struct membuf {
  unsigned char *data;
  size_t len, cap;
} membuf;

static int sink_membuf(void *ctx, const void *data, size_t len) {
  membuf *mb = ctx;
  if (len > mb->cap - mb->len)
    return 1;   /* cannot happen: read_entry bounds by the declared size */
  memcpy(mb->data + mb->len, data, len);
  mb->len += len;
  return 0;
}

static int sink_discard(void *ctx, const void *data, size_t len) {
  (void)ctx;
  (void)data;
  (void)len;
  return 0;
}

/* Reads manifest.json, parses it and checks it against the members. */
static nsl_status load_manifest(nsl_bundle *b, long idx, nsl_error *err) {
  const nsl_bundle_member *mm = &b->members[idx];
  char s1[32], s2[32], prefix[1200];
  nsl_status st;
  membuf mb = {0};
  const char **listed = NULL;

  snprintf(prefix, sizeof prefix, "cannot open '%s'", b->path);
  if (b->opts.limits.max_manifest && mm->size > b->opts.limits.max_manifest) {
    nsl__fmt_bytes(mm->size, s1);
    nsl__fmt_bytes(b->opts.limits.max_manifest, s2);
    return nsl_error_set(err, NSL_ERR_LIMIT, "%s: manifest.json is %s, above the limit (%s)", prefix, s1,
                         s2);
  }
  mb.cap = (size_t)mm->size;
  mb.data = malloc(mb.cap + 1);
  if (mb.data == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", prefix);
  if ((st = read_entry(b, (size_t)idx, sink_membuf, &mb, err)) != NSL_OK)
    goto done;
  json_error_t jerr;
  b->manifest = json_loadb((const char *)mb.data, mb.len, JSON_REJECT_DUPLICATES, &jerr);
  if (b->manifest == NULL) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "%s: manifest.json is not valid JSON (line %d, column %d: %s)",
                       prefix, jerr.line, jerr.column, jerr.text);
    goto done;
  }
  if ((st = nsl__manifest_check(b->manifest, NSL_ERR_FORMAT, prefix, err)) != NSL_OK)
    goto done;

  /* Every listed member is present with the listed size... */
  const json_t *members = json_object_get(b->manifest, "members");
  size_t nm = json_array_size(members);
  listed = calloc(nm ? nm : 1, sizeof *listed);
  if (listed == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", prefix);
    goto done;
  }
  for (size_t i = 0; i < nm; i++) {
    const json_t *e = json_array_get(members, i);
    const char *path = json_string_value(json_object_get(e, "path"));
    uint64_t size = (uint64_t)json_integer_value(json_object_get(e, "size"));
    long k = find_index(b, path);
    if (k < 0) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "%s: manifest.json lists member '%s', which the zip does "
                         "not hold", prefix, path);
      goto done;
    }
    if (b->members[k].size != size) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "%s: member '%s' is %llu bytes in the zip but %llu in "
                         "manifest.json", prefix, path, (unsigned long long)b->members[k].size,
                         (unsigned long long)size);
      goto done;
    }
    memcpy(b->sha[k], json_string_value(json_object_get(e, "sha256")), 65);
    b->members[k].sha256 = b->sha[k];
    listed[i] = path;
  }
  /* ... and every member but the manifest is listed. */
  qsort(listed, nm, sizeof *listed, nsl__cmp_str_ptr);
  for (size_t i = 0; i < b->n; i++) {
    const char *name = b->members[i].name;
    if ((long)i == idx)
      continue;
    if (bsearch(&name, listed, nm, sizeof *listed, nsl__cmp_str_ptr) == NULL) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "%s: member '%s' is not listed in manifest.json", prefix,
                         name);
      goto done;
    }
  }
done:
  free(listed);
  if (st == NSL_OK) {
    mb.data[mb.len] = '\0';
    b->manifest_text = (char *)mb.data;   /* kept: nsl_bundle_manifest_json */
  } else {
    free(mb.data);
  }
  return st;
}

void nsl_bundle_options_init(nsl_bundle_options *o) {
  memset(o, 0, sizeof *o);
  o->limits.max_member = 4ull << 30;
  o->limits.max_total = 64ull << 30;
  o->limits.max_ratio = 200.0;
  o->limits.ratio_floor = 64ull << 20;
  o->limits.max_members = 1000000;
  o->limits.max_manifest = 64ull << 20;
  o->mode = NSL_BUNDLE_STRICT;
  o->verify = 0;
}

static nsl_bundle *bundle_alloc(const char *label, const nsl_bundle_options *opts) {
  nsl_bundle *b = calloc(1, sizeof *b);
  if (b == NULL)
    return NULL;
  atomic_init(&b->refs, 1);
  b->fd = -1;
  b->path = strdup(label ? label : "");
  if (b->path == NULL || pthread_mutex_init(&b->lock, NULL) != 0) {
    free(b->path);
    free(b);
    return NULL;
  }
  if (opts)
    b->opts = *opts;
  else
    nsl_bundle_options_init(&b->opts);
  return b;
}

/* The part of opening shared by files and memory images. */
static nsl_status bundle_init(nsl_bundle *b, nsl_error *err) {
  nsl_status st;
  b->tail_off = b->size;   /* nothing of the file read yet */
  if (b->size == 0)
    return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': empty file, not a zip archive", b->path);
  if ((st = scan_entries(b, err)) != NSL_OK)
    return st;
  long mi = find_index(b, NSL_BUNDLE_MANIFEST);
  if (b->opts.mode == NSL_BUNDLE_RAW || (b->opts.mode == NSL_BUNDLE_AUTO && mi < 0)) {
    b->raw = 1;
  } else if (mi < 0) {
    return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': not an nsl bundle (no manifest.json)",
                         b->path);
  } else if ((st = load_manifest(b, mi, err)) != NSL_OK) {
    return st;
  }
  if (b->opts.verify)
    return nsl_bundle_verify(b, err);
  return NSL_OK;
}

int nsl__bundle_file_id(const nsl_bundle *b, nsl__file_id *id) {
  *id = b->id;
  return b->id.known;
}

nsl_status nsl_bundle_open(nsl_bundle **out, const char *path, const nsl_bundle_options *opts,
                           nsl_error *err) {
  *out = NULL;
  if (path == NULL)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot open a bundle: no path");
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* a FIFO: refused below, never waited on */
  if (fd < 0)
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  return nsl__bundle_open_fd(out, path, fd, opts, err);
}

nsl_status nsl__bundle_open_fd(nsl_bundle **out, const char *path, int fd, const nsl_bundle_options *opts,
                               nsl_error *err) {
  struct stat st_;
  nsl_status st;
  *out = NULL;
  nsl_bundle *b = bundle_alloc(path, opts);
  if (b == NULL) {
    close(fd);
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", path);
  }
  b->fd = fd;
  if (fstat(b->fd, &st_) != 0) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    goto fail;
  }
  if (!S_ISREG(st_.st_mode)) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': not a regular file", path);
    goto fail;
  }
  b->size = (uint64_t)st_.st_size;
  nsl__file_id_of(&st_, &b->id);
  if ((st = bundle_init(b, err)) != NSL_OK)
    goto fail;
  *out = b;
  return NSL_OK;
fail:
  nsl_bundle_close(b);
  return st;
}

nsl_status nsl_bundle_open_memory(nsl_bundle **out, const char *label, const void *data, size_t size,
                                  const nsl_bundle_options *opts, nsl_error *err) {
  nsl_status st;
  *out = NULL;
  if (data == NULL && size > 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot open '%s': no data", label ? label : "");
  nsl_bundle *b = bundle_alloc(label ? label : "(memory)", opts);
  if (b == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", label ? label : "");
  static const unsigned char empty[1];
  b->mem = data ? data : empty;
  b->size = size;
  if ((st = bundle_init(b, err)) != NSL_OK) {
    nsl_bundle_close(b);
    return st;
  }
  *out = b;
  return NSL_OK;
}

nsl_bundle *nsl__bundle_retain(nsl_bundle *b) {
  atomic_fetch_add(&b->refs, 1);
  return b;
}

int nsl__bundle_fd(const nsl_bundle *b) { return b->fd; }

const nsl__zip_dir *nsl__bundle_zip_dir(const nsl_bundle *b) { return &b->dir; }

void nsl_bundle_close(nsl_bundle *b) {
  if (b == NULL || atomic_fetch_sub(&b->refs, 1) > 1)
    return;
  cursor_free(b->cached);
  nsl__zip_dir_free(&b->dir);
  free(b->tail);
  for (size_t i = 0; i < b->n; i++)
    free((char *)b->members[i].name);
  free(b->members);
  free(b->ordinal);
  free(b->sha);
  free(b->by_name);
  json_decref(b->manifest);
  free(b->manifest_text);
  if (b->fd >= 0)
    close(b->fd);
  pthread_mutex_destroy(&b->lock);
  free(b->path);
  free(b);
}

const char *nsl_bundle_path(const nsl_bundle *b) { return b->path; }
int nsl_bundle_is_raw(const nsl_bundle *b) { return b->raw; }
size_t nsl_bundle_count(const nsl_bundle *b) { return b->n; }
const json_t *nsl__bundle_manifest(const nsl_bundle *b) { return b->raw ? NULL : b->manifest; }

const char *nsl_bundle_manifest_json(const nsl_bundle *b) { return b->raw ? NULL : b->manifest_text; }

const nsl_bundle_member *nsl_bundle_member_at(const nsl_bundle *b, size_t i) {
  return i < b->n ? &b->members[i] : NULL;
}

const nsl_bundle_member *nsl_bundle_find(const nsl_bundle *b, const char *name) {
  long i = name ? find_index(b, name) : -1;
  return i < 0 ? NULL : &b->members[i];
}

const json_t *nsl__bundle_report_entry(const nsl_bundle *b, const char *member) {
  const json_t *reports = b->raw ? NULL : json_object_get(b->manifest, "reports");
  size_t i;
  const json_t *r;
  if (member == NULL)
    return NULL;
  json_array_foreach(reports, i, r) {
    const char *m = json_string_value(json_object_get(r, "member"));
    if (m && strcmp(m, member) == 0)
      return r;
  }
  return NULL;
}

static void copy_string_field(const json_t *r, const char *key, char *dst, size_t cap) {
  const char *s = json_string_value(json_object_get(r, key));
  if (s && s[0])
    snprintf(dst, cap, "%s", s);
}

int nsl_bundle_fill_report_info(const nsl_bundle *b, const char *member, nsl_report_info *info) {
  const json_t *r = nsl__bundle_report_entry(b, member);
  if (r == NULL)
    return 0;
  const char *host = json_string_value(json_object_get(r, "host"));
  if (host && host[0])
    info->host = host;   /* the manifest's, valid while b is open */
  copy_string_field(r, "nsys_version", info->nsys_version, sizeof info->nsys_version);
  copy_string_field(r, "schema_version", info->schema_version, sizeof info->schema_version);
  const json_t *rank = json_object_get(r, "rank");
  if (json_is_integer(rank))
    info->rank = json_integer_value(rank);
  const json_t *start = json_object_get(r, "session_start_utc_ns");
  if (json_is_integer(start))
    info->start_utc = json_integer_value(start);
  return 1;
}

nsl_status nsl_bundle_read_member(nsl_bundle *b, const char *name, void **data, size_t *len,
                                  nsl_error *err) {
  *data = NULL;
  *len = 0;
  long i = name ? find_index(b, name) : -1;
  if (i < 0)
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "cannot read '%s': no member '%s'", b->path,
                         name ? name : "");
  const nsl_bundle_member *m = &b->members[i];
  if (m->size >= SIZE_MAX)
    return nsl_error_set(err, NSL_ERR_LIMIT, "cannot read '%s': member '%s' does not fit in memory",
                         b->path, m->name);
  membuf mb = {0};
  mb.cap = (size_t)m->size;
  mb.data = malloc(mb.cap + 1);
  if (mb.data == NULL) {
    char s1[32];
    nsl__fmt_bytes(m->size, s1);
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot read '%s': no memory for member '%s' (%s)", b->path,
                         m->name, s1);
  }
  nsl_status st = read_entry(b, (size_t)i, sink_membuf, &mb, err);
  if (st != NSL_OK) {
    free(mb.data);
    return st;
  }
  mb.data[mb.len] = '\0';
  *data = mb.data;
  *len = mb.len;
  return NSL_OK;
}

nsl_status nsl_bundle_stream_member(nsl_bundle *b, const char *name, nsl_bundle_sink sink, void *ctx,
                                    nsl_error *err) {
  long i = name ? find_index(b, name) : -1;
  if (i < 0)
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "cannot read '%s': no member '%s'", b->path,
                         name ? name : "");
  if (err)
    nsl_error_clear(err);
  return read_entry(b, (size_t)i, sink, ctx, err);
}

nsl_status nsl_bundle_verify(nsl_bundle *b, nsl_error *err) {
  for (size_t i = 0; i < b->n; i++) {
    nsl_status st = read_entry(b, i, sink_discard, NULL, err);
    if (st != NSL_OK)
      return st;
  }
  return NSL_OK;
}

int nsl__zip_head(const unsigned char *h, size_t n) {
  return n >= 4 && h[0] == 'P' && h[1] == 'K' &&
         ((h[2] == 3 && h[3] == 4) || (h[2] == 5 && h[3] == 6) || (h[2] == 7 && h[3] == 8));
}

int nsl_bundle_sniff(const char *path) {
  unsigned char h[4] = {0};
  ssize_t n = nsl__read_head(path, h, sizeof h);   /* a FIFO or a device: not a bundle, never waited on */
  return n == 4 && nsl__zip_head(h, 4);
}
