/*
 * zipdir.c -- the central directory of a zip, parsed from the PKWARE
 * APPNOTE (4.3.12 central directory header, 4.3.14-16 zip64 end records,
 * 4.5.3 zip64 extra field), so that the bundle reader can check every entry
 * before libarchive decompresses anything.  Reads through a window of
 * bounded size: a hostile directory size never becomes an allocation.
 */
#include "source/bundle_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u
#define SIG_END64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define WINDOW (256 * 1024)   /* > the largest central record: 46 + 3 * 65535 */

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* A window over the file: bytes [start, start+len) are in buf. */
typedef struct window {
  nsl__pread_fn rd;
  void *ctx;
  uint64_t size;
  unsigned char *buf;
  uint64_t start;
  size_t len;
} window;

/* Makes [off, off+n) available (n <= WINDOW, off+n <= size) and returns it. */
static const unsigned char *need(window *w, uint64_t off, size_t n) {
  if (off >= w->start && off + n <= w->start + w->len)
    return w->buf + (off - w->start);
  size_t len = w->size - off < WINDOW ? (size_t)(w->size - off) : WINDOW;
  if (len < n || w->rd(w->ctx, w->buf, len, off) != 0)
    return NULL;
  w->start = off;
  w->len = len;
  return w->buf;
}

/* Reads the zip64 extra field of one central record: the fields whose
 * 32-bit value was saturated come in this order. */
static int zip64_extra(const unsigned char *x, size_t xl, nsl__zip_entry *e, int need_u, int need_c,
                       int need_o) {
  size_t i = 0;
  while (i + 4 <= xl) {
    unsigned id = le16(x + i), n = le16(x + i + 2);
    if (i + 4 + n > xl)
      return -1;
    if (id == 0x0001) {
      const unsigned char *p = x + i + 4;
      size_t left = n;
      if (need_u) {
        if (left < 8) return -1;
        e->usize = le64(p), p += 8, left -= 8;
      }
      if (need_c) {
        if (left < 8) return -1;
        e->csize = le64(p), p += 8, left -= 8;
      }
      if (need_o) {
        if (left < 8) return -1;
        e->offset = le64(p);
      }
      return 0;
    }
    i += 4 + n;
  }
  return need_u || need_c || need_o ? -1 : 0;
}

nsl_status nsl__zip_dir_read(nsl__zip_dir *d, nsl__pread_fn rd, void *ctx, uint64_t size,
                             uint64_t max_entries, const char *label, nsl_error *err) {
  nsl_status st = NSL_OK;
  window w = {rd, ctx, size, NULL, 0, 0};
  memset(d, 0, sizeof *d);
  if (size < 22)
    return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': %llu bytes, too short to be a zip",
                         label, (unsigned long long)size);
  w.buf = malloc(WINDOW);
  if (w.buf == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", label);

  /* The end record: the last 22..65557 bytes, its comment reaching EOF. */
  uint64_t tail_off = size > 22 + 65535 ? size - (22 + 65535) : 0;
  const unsigned char *tail = need(&w, tail_off, (size_t)(size - tail_off));
  if (tail == NULL) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': read error: %s", label, strerror(errno));
    goto done;
  }
  size_t tail_len = (size_t)(size - tail_off);
  long at = -1;
  for (long i = (long)tail_len - 22; i >= 0; i--)
    if (le32(tail + i) == SIG_END && (size_t)i + 22 + le16(tail + i + 20) == tail_len) {
      at = i;
      break;
    }
  if (at < 0) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': no end of central directory: not a zip "
                       "archive, or a truncated one", label);
    goto done;
  }
  uint64_t end_pos = tail_off + (uint64_t)at;
  const unsigned char *e = tail + at;
  uint64_t disk = le16(e + 4), cd_disk = le16(e + 6), n_disk = le16(e + 8), n = le16(e + 10);
  uint64_t cd_size = le32(e + 12), cd_off = le32(e + 16);
  uint64_t limit = end_pos;   /* the directory ends before this */

  /* zip64: a locator right before the end record points at the zip64 end record. */
  if (end_pos >= 20) {
    const unsigned char *loc = need(&w, end_pos - 20, 20);
    if (loc && le32(loc) == SIG_LOC64) {
      uint64_t z64 = le64(loc + 8);
      if (le32(loc + 4) != 0 || le32(loc + 16) > 1 || z64 > end_pos - 20 || end_pos - 20 - z64 < 56) {
        st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': damaged zip64 end locator", label);
        goto done;
      }
      const unsigned char *r = need(&w, z64, 56);
      if (r == NULL || le32(r) != SIG_END64) {
        st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': damaged zip64 end record", label);
        goto done;
      }
      disk = le32(r + 16);
      cd_disk = le32(r + 20);
      n_disk = le64(r + 24);
      n = le64(r + 32);
      cd_size = le64(r + 40);
      cd_off = le64(r + 48);
      limit = z64;
    }
  }
  if (disk != 0 || cd_disk != 0 || n_disk != n) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': a multi-part zip (not supported)", label);
    goto done;
  }
  if (cd_off > limit || cd_size > limit - cd_off) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': the central directory lies outside the "
                       "file (truncated, or data before the zip)", label);
    goto done;
  }
  if (max_entries && n > max_entries) {
    st = nsl_error_set(err, NSL_ERR_LIMIT, "cannot open '%s': %llu entries, above the limit (%llu, "
                       "max_members)", label, (unsigned long long)n, (unsigned long long)max_entries);
    goto done;
  }
  if (n > cd_size / 46) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': %llu entries do not fit in a %llu-byte "
                       "central directory", label, (unsigned long long)n, (unsigned long long)cd_size);
    goto done;
  }
  d->e = calloc(n ? (size_t)n : 1, sizeof *d->e);
  if (d->e == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", label);
    goto done;
  }
  d->cd_offset = cd_off;

  uint64_t pos = cd_off, cd_end = cd_off + cd_size;
  for (uint64_t k = 0; k < n; k++) {
    const unsigned char *p = cd_end - pos >= 46 ? need(&w, pos, 46) : NULL;
    if (p == NULL || le32(p) != SIG_CENTRAL) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': central directory entry %llu is "
                         "damaged", label, (unsigned long long)k + 1);
      goto done;
    }
    size_t nl = le16(p + 28), xl = le16(p + 30), cl = le16(p + 32);
    uint64_t rec = 46 + (uint64_t)nl + xl + cl;
    if (cd_end - pos < rec || (p = need(&w, pos, (size_t)rec)) == NULL) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': central directory entry %llu runs past "
                         "the directory", label, (unsigned long long)k + 1);
      goto done;
    }
    nsl__zip_entry *z = &d->e[d->n];
    z->made_by = le16(p + 4);
    z->flags = le16(p + 8);
    z->method = le16(p + 10);
    z->crc = le32(p + 16);
    z->csize = le32(p + 20);
    z->usize = le32(p + 24);
    unsigned start_disk = le16(p + 34);
    z->ext_attr = le32(p + 38);
    z->offset = le32(p + 42);
    z->name = malloc(nl + 1);
    if (z->name == NULL) {
      st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot open '%s': out of memory", label);
      goto done;
    }
    memcpy(z->name, p + 46, nl);
    z->name[nl] = '\0';
    d->n++;
    char shown[300];
    nsl__printable(z->name, shown, sizeof shown);
    if (memchr(p + 46, 0, nl) != NULL) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' has a NUL byte in its name",
                         label, shown);
      goto done;
    }
    if (zip64_extra(p + 46 + nl, xl, z, z->usize == 0xFFFFFFFFu, z->csize == 0xFFFFFFFFu,
                    z->offset == 0xFFFFFFFFu) != 0) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': member '%s' has a damaged zip64 extra "
                         "field", label, shown);
      goto done;
    }
    if (start_disk != 0 && start_disk != 0xFFFF) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': a multi-part zip (not supported)", label);
      goto done;
    }
    unsigned host = z->made_by >> 8;
    if (host == 3 || host == 19)   /* Unix, OS X: st_mode in the high half */
      z->type = (z->ext_attr >> 16) & 0170000u;
    z->is_dir = (nl > 0 && z->name[nl - 1] == '/') || z->type == 0040000u ||
                (z->type == 0 && (z->ext_attr & 0x10));
    pos += rec;
  }
  if (pos != cd_end) {
    st = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': the central directory holds %llu bytes "
                       "more than its %llu entries", label, (unsigned long long)(cd_end - pos),
                       (unsigned long long)n);
    goto done;
  }
done:
  free(w.buf);
  if (st != NSL_OK)
    nsl__zip_dir_free(d);
  return st;
}

void nsl__zip_dir_free(nsl__zip_dir *d) {
  for (size_t i = 0; i < d->n; i++)
    free(d->e[i].name);
  free(d->e);
  memset(d, 0, sizeof *d);
}
