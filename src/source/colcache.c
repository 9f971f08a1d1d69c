/*
 * colcache.c -- the columnar cache (see colcache.h and archive-format/CACHE.md).
 *
 * An entry is a folder <root>/columns/<key>/ per report of an input, key a
 * hash of the input's device, inode, kind and report; it holds
 *   entry                 the input's identity, as text (for `nsl cache list`)
 *   t-<table>             a table's description: found or not, extra
 *                         columns the source declares, row count
 *   c-<table>-<column>    one column of the report, unshifted in time:
 *                         a 256-byte header, the values, for strings the
 *                         column's own dictionary
 * Each file is written whole to a temporary file and renamed (two processes
 * filling one entry both publish complete, equal files), and checked on
 * every read: magic, format version, byte order, the identity hash of the
 * input it was made from, names and type asked for, bounds, and checksums of
 * header, values and dictionary.  A file that fails is ignored and written
 * again from the input.
 *
 * A file is read whole into anonymous memory (read_private) and checked
 * there; numeric columns are handed out from it without a further copy,
 * except time columns of a report whose clock is shifted (a multi-report
 * trace): those are copied with the offset added.  String columns are used
 * in place too when their dictionary matches the trace's ids (the first
 * string columns of a fresh trace); otherwise the ids are remapped into a
 * new column.
 */
#include "source/colcache.h"
#include "source/nsys_sqlite.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/big_alloc.h"
#include "core/model.h"
#include "core/nsl_internal.h"
#include "core/text.h"
#include "nsl/nsl_io.h"
#include "source/bundle_internal.h"

/* ---- hashing ---- */

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL

static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

/* A 64-bit checksum of n bytes: four independent lanes over 32-byte
 * blocks (several GB/s), then the tail, then a final mix. */
static uint64_t hash64(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = p;
  uint64_t a0 = seed + P1, a1 = seed ^ P2, a2 = seed + P3, a3 = seed ^ P4;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    memcpy(w, b + i, 32);
    a0 = rotl(a0 + w[0] * P2, 31) * P1;
    a1 = rotl(a1 + w[1] * P2, 31) * P1;
    a2 = rotl(a2 + w[2] * P2, 31) * P1;
    a3 = rotl(a3 + w[3] * P2, 31) * P1;
  }
  uint64_t h = rotl(a0, 1) + rotl(a1, 7) + rotl(a2, 12) + rotl(a3, 18) + (uint64_t)n;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    h = rotl(h ^ rotl(w * P2, 31) * P1, 27) * P1 + P4;
  }
  for (; i < n; i++) h = rotl(h ^ (b[i] * P3), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

/* ---- settings ---- */

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

/* ---- files of an entry ---- */

#define HEAD_BYTES NSL__CACHE_HEAD_BYTES
#define MAGIC "NSLCACHE"
#define BOM 0x0102030405060708ULL
enum { KIND_COLUMN = 1, KIND_TABLE = 2, KIND_INFO = 3 };

/* A report's metadata as its export gives it (the info file of stored
 * columns), so that a bundle report opens without its export. */
typedef struct stored_info {
  char host[256], nsys_version[64], schema_version[32];
  int64_t start_utc, duration;
} stored_info;

typedef struct file_head {
  char magic[8];
  uint32_t version, kind;
  uint64_t bom, ident;
  char table[64], column[64];
  uint32_t type, found;        /* column: its type; table: 1 when the source has it */
  int64_t rows;                /* column: its length; table: row count or -1 */
  uint64_t data_off, data_bytes, data_hash;
  uint64_t dict_off, dict_count, dict_bytes, dict_hash;
  uint8_t pad[HEAD_BYTES - 8 - 8 - 16 - 128 - 8 - 8 - 56 - 8];
  uint64_t head_hash;          /* of the bytes before it */
} file_head;
_Static_assert(sizeof(file_head) == HEAD_BYTES, "cache file header is 256 bytes");

/* A column file stored in a bundle (nsl bundle --columns): where its
 * member's data lies in the zip. */
typedef struct emb_file {
  char *name;                  /* after "columns/<report member>/" */
  uint64_t off, size;
} emb_file;

typedef struct cache_src {
  nsl_source_ops ops;          /* the wrapper's, pointing here */
  const nsl_source_ops *in;    /* the wrapped source */
  void *src;
  char *dir;                   /* the entry's folder; NULL: no cache folder in use */
  char *label;
  uint64_t ident;
  int nowrite;                 /* a write failed: read only from now on */
  int wrote;                   /* a file was added: the size bound is checked at close */
  /* columns stored in the bundle the report comes from */
  nsl_bundle *zip;             /* that bundle (a reference of this wrapper's); NULL for none */
  emb_file *emb;
  size_t nemb;
  uint64_t emb_ident;
  /* a bundle report opened lazily: its export is read from zip only when a column is missing or SQL is run */
  char *lazy_member;
  /* writing into a bundle instead of the cache folder (nsl_bundle_writer_add_columns) */
  nsl_bundle_writer *bw;
  const char *bmember;
  nsl_status bw_rc;
  nsl_error *bw_err;
} cache_src;

/* A file name for table (and column): the names when they are plain, else a hash. */
static void file_name(char *out, size_t cap, const char *table, const char *column) {
  int plain = strlen(table) < 60 && (!column || strlen(column) < 60);
  for (const char *s = table; *s; s++) plain &= (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_';
  for (const char *s = column; s && *s; s++) plain &= (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_';
  if (plain && column) snprintf(out, cap, "c-%s-%s", table, column);
  else if (plain) snprintf(out, cap, "t-%s", table);
  else {
    uint64_t h = hash64(table, strlen(table), column ? hash64(column, strlen(column), 1) : 2);
    snprintf(out, cap, "%c-x%016llx", column ? 'c' : 't', (unsigned long long)h);
  }
}

static char *path_in(const cache_src *c, const char *name) {
  size_t n = strlen(c->dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", c->dir, name);
  return p;
}

static void head_init(file_head *h, const cache_src *c, uint32_t kind, const char *table, const char *column) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, MAGIC, 8);
  h->version = NSL_CACHE_FORMAT;
  h->kind = kind;
  h->bom = BOM;
  h->ident = c->ident;
  snprintf(h->table, sizeof h->table, "%s", table);
  if (column) snprintf(h->column, sizeof h->column, "%s", column);
}

static int write_all(int fd, const void *p, size_t n) {
  const char *b = p;
  while (n > 0) {
    ssize_t w = write(fd, b, n > ((size_t)1 << 30) ? (size_t)1 << 30 : n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Writes header + parts atomically as file `name` of the entry.  A failure
 * stops writing to this entry and warns once. */
static void publish(cache_src *c, const char *name, file_head *h, const void *const *parts, const size_t *lens,
                    int nparts) {
  size_t total = HEAD_BYTES;
  for (int i = 0; i < nparts; i++) total += lens[i];
  h->head_hash = hash64(h, offsetof(file_head, head_hash), 0);
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
    if (rc == NSL_OK) rc = nsl_bundle_writer_write(c->bw, h, HEAD_BYTES, c->bw_err);
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
  int bad = write_all(fd, h, HEAD_BYTES);
  for (int i = 0; !bad && i < nparts; i++) bad = lens[i] && write_all(fd, parts[i], lens[i]);
  if (bad) {
    int code = errno;
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

/* Whether the n bytes at h are a sound cache file of the given identity,
 * kind and names (section 5 of archive-format/CACHE.md). */
static int sound_file(const file_head *h, size_t n, uint64_t ident, uint32_t kind, const char *table,
                      const char *column) {
  return n >= HEAD_BYTES && memcmp(h->magic, MAGIC, 8) == 0 && h->version == NSL_CACHE_FORMAT && h->kind == kind &&
         h->bom == BOM && h->ident == ident && h->head_hash == hash64(h, offsetof(file_head, head_hash), 0) &&
         memchr(h->table, 0, sizeof h->table) && memchr(h->column, 0, sizeof h->column) &&
         strcmp(h->table, table) == 0 && strcmp(h->column, column ? column : "") == 0 &&
         h->data_off >= HEAD_BYTES && h->data_off <= n && h->data_bytes <= n - h->data_off &&
         h->dict_off >= HEAD_BYTES && h->dict_off <= n && h->dict_bytes <= n - h->dict_off &&
         hash64((const char *)h + h->data_off, h->data_bytes, 3) == h->data_hash &&
         hash64((const char *)h + h->dict_off, h->dict_bytes, 4) == h->dict_hash;
}

static int emb_cmp(const void *a, const void *b) {
  return strcmp(((const emb_file *)a)->name, ((const emb_file *)b)->name);
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
static nsl__mapping *map_file(const cache_src *c, const char *name, uint32_t kind, const char *table,
                             const char *column, const file_head **head, size_t *size) {
  emb_file key = {(char *)name, 0, 0};
  const emb_file *e = c->nemb ? bsearch(&key, c->emb, c->nemb, sizeof *c->emb, emb_cmp) : NULL;
  if (e && e->size >= 16 + HEAD_BYTES && e->size < SIZE_MAX / 2) {
    long page = sysconf(_SC_PAGESIZE);
    uint64_t base = e->off & ~(uint64_t)(page > 0 ? page - 1 : 4095);   /* the alignment the zip gives the data */
    size_t len = (size_t)(e->off - base + e->size);
    void *addr = read_private(nsl__bundle_fd(c->zip), base, len);
    if (addr != MAP_FAILED) {
      const unsigned char *m = (const unsigned char *)addr + (e->off - base);
      uint64_t pad = nsl__aligned_pad(m, e->size);
      const file_head *h = (const file_head *)(m + pad);
      nsl__mapping *map = NULL;
      if (pad && ((uintptr_t)h & 7) == 0 &&
          sound_file(h, (size_t)(e->size - pad), c->emb_ident, kind, table, column))
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
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size >= HEAD_BYTES &&
      (uint64_t)st.st_size < SIZE_MAX / 2)
    addr = read_private(fd, 0, (size_t)st.st_size);
  close(fd);
  if (addr == MAP_FAILED) return NULL;
  size_t n = (size_t)st.st_size;
  nsl__mapping *m = sound_file(addr, n, c->ident, kind, table, column) ? nsl__mapping_new(addr, n) : NULL;
  if (!m) {
    nsl__big_free(addr);
    return NULL;
  }
  *head = addr;
  *size = n;
  return m;
}

/* ---- table descriptions ---- */

typedef struct table_meta {
  int known, found;
  int64_t rows;
  int nextra;
  char names[32][64];
  nsl_type types[32];
} table_meta;

/* The description in table file h (already sound_file), or 0 when it is not one. */
static int meta_from(const file_head *h, table_meta *m) {
  memset(m, 0, sizeof *m);
  const unsigned char *d = (const unsigned char *)h + h->dict_off, *end = d + h->dict_bytes;
  int ok = h->found <= 1 && h->rows >= -1 && h->dict_count <= 32;
  for (uint64_t k = 0; ok && k < h->dict_count; k++) {   /* u32 type, then the name, NUL-terminated */
    uint32_t type;
    const unsigned char *z = end - d > 4 ? memchr(d + 4, 0, (size_t)(end - d - 4)) : NULL;
    if (!z || z - (d + 4) >= 64) ok = 0;
    else {
      memcpy(&type, d, 4);
      if (type > NSL_BOOL) ok = 0;
      m->types[k] = (nsl_type)type;
      memcpy(m->names[k], d + 4, (size_t)(z - d - 3));
      d = z + 1;
    }
  }
  if (ok) {
    m->known = 1;
    m->found = (int)h->found;
    m->rows = h->rows;
    m->nextra = (int)h->dict_count;
  } else
    memset(m, 0, sizeof *m);
  return ok;
}

static int read_meta(const cache_src *c, const char *table, table_meta *m) {
  char name[160];
  const file_head *h;
  size_t size;
  memset(m, 0, sizeof *m);
  file_name(name, sizeof name, table, NULL);
  nsl__mapping *map = map_file(c, name, KIND_TABLE, table, NULL, &h, &size);
  if (!map) return 0;
  int ok = meta_from(h, m);
  nsl__mapping_release(map);
  return ok;
}

static void write_meta(cache_src *c, const char *table, const table_meta *m) {
  char name[160], buf[32 * 72];
  size_t len = 0;
  file_head h;
  head_init(&h, c, KIND_TABLE, table, NULL);
  for (int k = 0; k < m->nextra; k++) {
    uint32_t type = (uint32_t)m->types[k];
    memcpy(buf + len, &type, 4);
    size_t nl = strlen(m->names[k]) + 1;
    memcpy(buf + len + 4, m->names[k], nl);
    len += 4 + nl;
  }
  h.found = (uint32_t)m->found;
  h.rows = m->rows;
  h.data_off = h.dict_off = HEAD_BYTES;
  h.dict_count = (uint64_t)m->nextra;
  h.dict_bytes = len;
  h.data_hash = hash64(buf, 0, 3);
  h.dict_hash = hash64(buf, len, 4);
  const void *parts[] = {buf};
  size_t lens[] = {len};
  file_name(name, sizeof name, table, NULL);
  publish(c, name, &h, parts, lens, 1);
}

/* ---- columns ---- */

/* Column `column` of `table` from the entry, as a column of the trace:
 * strings in dict, times shifted by off; NULL when the entry lacks it (or
 * its file is bad). */
/* The column in column file h (already sound_file) as a column of the
 * trace: strings in dict, times shifted by off; over the file's memory when
 * map is given and nothing needs changing, else a copy.  NULL when the file
 * does not hold a sound column of that type. */
static nsl_column *column_from(const file_head *h, nsl__mapping *map, nsl_type type, nsl_dict *dict, int64_t off) {
  size_t es = nsl_type_size(type);
  if (h->type != (uint32_t)type || h->rows < 0 || h->data_off % 8 != 0 || (uint64_t)h->rows > h->data_bytes / es ||
      h->data_bytes != (uint64_t)h->rows * es)
    return NULL;
  const void *data = (const char *)h + h->data_off;
  int64_t n = h->rows;
  nsl_column *col = NULL;
  if (type == NSL_STR) {
    /* the dictionary: dict_count + 1 offsets (u64), then the bytes */
    uint64_t ns = h->dict_count;
    if (h->dict_off % 8 != 0 || ns >= INT32_MAX || h->dict_bytes / 8 < ns + 1) return NULL;
    const uint64_t *offs = (const uint64_t *)((const char *)h + h->dict_off);
    const char *bytes = (const char *)(offs + ns + 1);
    uint64_t blen = h->dict_bytes - (ns + 1) * 8;
    const int32_t *ids = data;
    for (int64_t r = 0; r < n; r++)
      if (ids[r] < -1 || ids[r] >= (int64_t)ns) return NULL;
    for (uint64_t k = 0; k < ns; k++)
      if (offs[k] > offs[k + 1] || offs[k + 1] > blen) return NULL;
    int32_t *map_ids = malloc((size_t)(ns ? ns : 1) * sizeof *map_ids);
    if (!map_ids) return NULL;
    int same = 1;
    for (uint64_t k = 0; k < ns; k++) {
      if ((map_ids[k] = nsl_dict_intern(dict, bytes + offs[k], (size_t)(offs[k + 1] - offs[k]))) < 0) {
        free(map_ids);
        return NULL;
      }
      same &= map_ids[k] == (int32_t)k;
    }
    if (same && map) col = nsl__column_mapped(type, n, (void *)data, map, dict);
    else if ((col = nsl_column_new(type, n, dict)))
      for (int64_t r = 0; r < n; r++) nsl_i32(col)[r] = ids[r] < 0 ? -1 : map_ids[ids[r]];
    free(map_ids);
  } else if (type == NSL_BOOL) {   /* masks hold 0 and 1 only */
    const uint8_t *v = data;
    for (int64_t r = 0; r < n; r++)
      if (v[r] > 1) return NULL;
    col = map ? nsl__column_mapped(type, n, (void *)data, map, NULL) : nsl_column_new(type, n, NULL);
    if (col && !map) memcpy(col->data, data, (size_t)n);
  } else if (off != 0 && type == NSL_I64) {
    if ((col = nsl_column_new(type, n, NULL))) {
      const int64_t *v = data;
      for (int64_t r = 0; r < n; r++) {
        int64_t t = v[r];
        /* a time that the clock offset moves past int64's range is no sound column: rebuilt from the input */
        if (t != NSL_NULL_I64 && __builtin_add_overflow(t, off, &t)) {
          nsl_column_release(col);
          return NULL;
        }
        nsl_i64(col)[r] = t;
      }
    }
  } else if (map) {
    col = nsl__column_mapped(type, n, (void *)data, map, NULL);
  } else if ((col = nsl_column_new(type, n, NULL))) {
    memcpy(col->data, data, (size_t)n * es);
  }
  return col;
}

/* Column `column` of `table` from the bundle or the entry; NULL when
 * neither has a sound file of it. */
static nsl_column *read_column(const cache_src *c, const char *table, const char *column, nsl_type type,
                               nsl_dict *dict, int64_t off) {
  char name[200];
  const file_head *h;
  size_t size;
  file_name(name, sizeof name, table, column);
  nsl__mapping *map = map_file(c, name, KIND_COLUMN, table, column, &h, &size);
  if (!map) return NULL;
  nsl_column *col = column_from(h, map, type, dict, off);
  nsl__mapping_release(map);
  return col;
}

/* ---- the checks alone, over bytes in memory (tests, fuzzing) ---- */

nsl_column *nsl__cache_column_from_bytes(const void *file, size_t n, uint64_t ident, const char *table,
                                         const char *column, nsl_type type, nsl_dict *dict, int64_t off) {
  if (((uintptr_t)file & 7) || !sound_file(file, n, ident, KIND_COLUMN, table, column)) return NULL;
  return column_from(file, NULL, type, dict, off);
}

int nsl__cache_table_from_bytes(const void *file, size_t n, uint64_t ident, const char *table, int *found,
                                int64_t *rows, int *nextra) {
  table_meta m;
  if (((uintptr_t)file & 7) || !sound_file(file, n, ident, KIND_TABLE, table, NULL) || !meta_from(file, &m)) return 0;
  *found = m.found;
  *rows = m.rows;
  *nextra = m.nextra;
  return 1;
}

void nsl__cache_seal(void *file, size_t n, uint64_t ident) {
  file_head *h = file;
  if (n < HEAD_BYTES || ((uintptr_t)file & 7)) return;
  memcpy(h->magic, MAGIC, 8);
  h->version = NSL_CACHE_FORMAT;
  h->bom = BOM;
  h->ident = ident;
  h->table[sizeof h->table - 1] = h->column[sizeof h->column - 1] = 0;
  if (h->data_off <= n && h->data_bytes <= n - h->data_off)
    h->data_hash = hash64((const char *)file + h->data_off, h->data_bytes, 3);
  if (h->dict_off <= n && h->dict_bytes <= n - h->dict_off)
    h->dict_hash = hash64((const char *)file + h->dict_off, h->dict_bytes, 4);
  h->head_hash = hash64(h, offsetof(file_head, head_hash), 0);
}

/* Writes column col (rows of this report, times unshifted) to the entry. */
static void write_column(cache_src *c, const char *table, const char *column, const nsl_column *col) {
  char name[200];
  file_head h;
  head_init(&h, c, KIND_COLUMN, table, column);
  size_t es = nsl_type_size(col->type), dlen = (size_t)col->len * es;
  h.type = (uint32_t)col->type;
  h.rows = col->len;
  h.data_off = HEAD_BYTES;
  h.data_bytes = dlen;
  h.dict_off = HEAD_BYTES + ((dlen + 7) & ~(size_t)7);
  static const char zeros[8];
  const void *data = col->data;
  int32_t *local = NULL, *ids = NULL;
  uint64_t *dictbuf = NULL;
  size_t dictlen = 0;
  if (col->type == NSL_STR) {   /* the strings it uses, in the order of their ids, numbered from 0 */
    int32_t nd = nsl_dict_size(col->dict);
    local = malloc((size_t)(nd > 0 ? nd : 1) * sizeof *local);
    ids = malloc((size_t)(col->len ? col->len : 1) * sizeof *ids);
    if (!local || !ids) goto done;
    for (int32_t k = 0; k < nd; k++) local[k] = -1;
    const int32_t *v = nsl_i32(col);
    for (int64_t r = 0; r < col->len; r++)
      if (v[r] >= 0 && v[r] < nd) local[v[r]] = 0;
    uint64_t ns = 0, bytes = 0;
    for (int32_t k = 0; k < nd; k++)
      if (local[k] == 0) {
        local[k] = (int32_t)ns++;
        bytes += nsl_dict_strlen(col->dict, k);
      }
    for (int64_t r = 0; r < col->len; r++) ids[r] = v[r] >= 0 && v[r] < nd ? local[v[r]] : -1;
    dictlen = (size_t)((ns + 1) * 8 + bytes);
    if (!(dictbuf = malloc(dictlen))) goto done;
    char *sb = (char *)(dictbuf + ns + 1);
    uint64_t at = 0, j = 0;
    for (int32_t k = 0; k < nd; k++)
      if (local[k] >= 0) {
        size_t l = nsl_dict_strlen(col->dict, k);
        dictbuf[j++] = at;
        memcpy(sb + at, nsl_dict_str(col->dict, k), l);
        at += l;
      }
    dictbuf[j] = at;
    h.dict_count = ns;
    data = ids;
  }
  h.dict_bytes = dictlen;
  h.data_hash = hash64(data, dlen, 3);
  h.dict_hash = hash64(dictbuf ? (const void *)dictbuf : zeros, dictlen, 4);
  const void *parts[] = {data, zeros, dictbuf};
  size_t lens[] = {dlen, (size_t)(h.dict_off - HEAD_BYTES - dlen), dictlen};
  file_name(name, sizeof name, table, column);
  publish(c, name, &h, parts, lens, 3);
done:
  free(local);
  free(ids);
  free(dictbuf);
}

/* ---- the wrapper's operations ---- */

/* The wrapped source, opened now for a lazily opened bundle report: the
 * export decompressed from the bundle the report keeps open (it must still
 * be the file whose columns are read: a file changed in place is said so,
 * before its new bytes are parsed) and opened from memory. */
static nsl_status ensure_inner(cache_src *c, nsl_error *err) {
  if (c->in) return NSL_OK;
  nsl__file_id was, now;
  void *data = NULL, *src = NULL;
  size_t len = 0;
  nsl_report_info info;
  struct stat st;
  nsl__bundle_file_id(c->zip, &was);
  if (fstat(nsl__bundle_fd(c->zip), &st) == 0) nsl__file_id_of(&st, &now);
  else now.known = 0;
  if (!now.known || now.dev != was.dev || now.ino != was.ino || now.size != was.size || now.mtime_ns != was.mtime_ns)
    return nsl_error_set(err, NSL_ERR_IO, "cannot read '%s': the bundle changed while it was read",
                         nsl_bundle_path(c->zip));
  nsl_status rc = nsl_bundle_read_member(c->zip, c->lazy_member, &data, &len, err);
  if (rc == NSL_OK) rc = nsl__nsys_adopt_image(c->label, data, len, &src, &info, err);   /* takes data over */
  if (rc != NSL_OK) return rc;
  c->in = &nsl__nsys_source_ops;
  c->src = src;
  return NSL_OK;
}

static nsl_status cache_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  cache_src *c = p;
  table_meta m;
  if (!read_meta(c, name, &m)) {
    nsl_table *probe = nsl_table_new();
    if (!probe) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    nsl_status rc = ensure_inner(c, err);
    if (rc == NSL_OK) rc = c->in->describe(c->src, name, probe, err);
    if (rc != NSL_OK && rc != NSL_ERR_NOTFOUND) {
      nsl_table_release(probe);
      return rc;
    }
    memset(&m, 0, sizeof m);
    m.known = 1;
    m.found = rc == NSL_OK;
    m.rows = -1;
    for (int k = 0; k < nsl_table_ncols(probe) && m.nextra < 32; k++)
      if (strlen(nsl_table_colname(probe, k)) < 64) {
        snprintf(m.names[m.nextra], sizeof m.names[0], "%s", nsl_table_colname(probe, k));
        m.types[m.nextra++] = nsl_table_coltype(probe, k);
      }
    int complete = nsl_table_ncols(probe) == m.nextra;
    nsl_table_release(probe);
    if (complete) write_meta(c, name, &m);
  }
  if (!m.found) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", c->label, name);
  for (int k = 0; k < m.nextra; k++)
    if (nsl_table_find(t, m.names[k]) < 0) nsl_table_declare(t, m.names[k], m.types[k], NULL);
  return NSL_OK;
}

static nsl_status cache_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  cache_src *c = p;
  table_meta m;
  int known = read_meta(c, name, &m);
  if (known && !m.found) {
    *out = 0;
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", c->label, name);
  }
  if (known && m.rows >= 0) {
    *out = m.rows;
    return NSL_OK;
  }
  nsl_status rc = ensure_inner(c, err);
  if (rc == NSL_OK) rc = c->in->count(c->src, name, out, err);
  if (rc == NSL_OK && known) {
    m.rows = *out;
    write_meta(c, name, &m);
  }
  return rc;
}

static nsl_status cache_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                             nsl_dict *dict, int64_t off, nsl_column **out, nsl_error *err) {
  cache_src *c = p;
  const nsl_model_table *mt = nsl__model_table(name);
  for (int k = 0; k < n; k++) out[k] = NULL;
  int *miss = malloc((size_t)(n > 0 ? n : 1) * sizeof *miss), *is_time = calloc((size_t)(n > 0 ? n : 1), sizeof *is_time);
  const char **mnames = malloc((size_t)(n > 0 ? n : 1) * sizeof *mnames);
  nsl_type *mtypes = malloc((size_t)(n > 0 ? n : 1) * sizeof *mtypes);
  nsl_column **got = calloc((size_t)(n > 0 ? n : 1), sizeof *got);
  nsl_status rc = NSL_OK;
  int nmiss = 0, direct = 0;
  if (!miss || !is_time || !mnames || !mtypes || !got) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (int k = 0; k < n; k++) {
    const nsl_model_column *mc = mt ? nsl__model_column(mt, colnames[k]) : NULL;
    is_time[k] = mc && mc->is_time;
    if (is_time[k] && off != 0 && types[k] != NSL_I64) direct = 1;   /* shifted where the cache does not shift */
  }
  if (direct) {
    if ((rc = ensure_inner(c, err)) == NSL_OK) rc = c->in->load(c->src, name, colnames, types, n, dict, off, out, err);
    goto done;
  }
  for (int k = 0; k < n; k++) {
    out[k] = read_column(c, name, colnames[k], types[k], dict, is_time[k] ? off : 0);
    if (!out[k]) {
      mnames[nmiss] = colnames[k];
      mtypes[nmiss] = types[k];
      miss[nmiss++] = k;
    }
  }
  if (nmiss > 0) {
    if ((rc = ensure_inner(c, err)) == NSL_OK) rc = c->in->load(c->src, name, mnames, mtypes, nmiss, dict, 0, got, err);
    if (rc != NSL_OK) goto done;
    for (int j = 0; j < nmiss; j++) {
      int k = miss[j];
      nsl_column *col = got[j];
      if (!col || col->type != types[k]) {
        rc = nsl_error_set(err, NSL_ERR_FORMAT, "'%s': table %s: column %s did not load", c->label, name, colnames[k]);
        goto done;
      }
      write_column(c, name, colnames[k], col);
      if (is_time[k] && off != 0)
        for (int64_t r = 0; r < col->len; r++)
          if (nsl_i64(col)[r] != NSL_NULL_I64) nsl_i64(col)[r] += off;
      out[k] = col;
      got[j] = NULL;
    }
  }
  /* every column one length, else the cached ones were of another load: read it all again */
  for (int k = 1; k < n; k++)
    if (out[k]->len != out[0]->len) {
      for (int j = 0; j < n; j++) {
        nsl_column_release(out[j]);
        out[j] = NULL;
      }
      if ((rc = ensure_inner(c, err)) == NSL_OK) rc = c->in->load(c->src, name, colnames, types, n, dict, off, out, err);
      goto done;
    }
  if (n > 0) {   /* the row count, for later counts */
    table_meta m;
    if (read_meta(c, name, &m) && m.found && m.rows < 0) {
      m.rows = out[0]->len;
      write_meta(c, name, &m);
    }
  }
done:
  if (rc != NSL_OK)
    for (int k = 0; k < n; k++) {
      nsl_column_release(out[k]);
      out[k] = NULL;
    }
  for (int j = 0; got && j < n; j++) nsl_column_release(got[j]);
  free(miss);
  free(is_time);
  free(mnames);
  free(mtypes);
  free(got);
  return rc;
}

static void cache_free(cache_src *c);

static void cache_close(void *p) {
  cache_src *c = p;
  if (!c) return;
  if (c->in) c->in->close(c->src);
  cache_free(c);
}

static nsl_status cache_sql(void *p, const char *sql, nsl_sql_row_fn row, void *ctx, nsl_error *err) {
  cache_src *c = p;
  nsl_status rc = ensure_inner(c, err);
  return rc != NSL_OK ? rc : c->in->sql(c->src, sql, row, ctx, err);
}

static size_t cache_members(void *p, const char *prefix, void (*fn)(void *ctx, const char *name), void *ctx) {
  cache_src *c = p;
  return c->in->members(c->src, prefix, fn, ctx);
}

static nsl_status cache_member_read(void *p, const char *name, void **data, size_t *len, nsl_error *err) {
  cache_src *c = p;
  return c->in->member_read(c->src, name, data, len, err);
}

static nsl_status cache_metadata(void *p, nsl_metadata_fn fn, void *ctx, nsl_error *err) {
  cache_src *c = p;
  nsl_status rc = ensure_inner(c, err);
  return rc != NSL_OK ? rc : c->in->metadata(c->src, fn, ctx, err);
}

/* ---- identity of an input ---- */

static int schema_row(void *ctx, int ncols, const char *const *names, const nsl_sql_value *values) {
  uint64_t *h = ctx;
  (void)names;
  for (int i = 0; i < ncols; i++) {
    *h = hash64(&values[i].type, sizeof values[i].type, *h);
    if (values[i].type == 3) *h = hash64(values[i].s, values[i].len, *h);
  }
  return 0;
}

typedef struct input_id {
  uint64_t dev, ino;
  int64_t size, mtime_ns, ctime_ns;   /* ctime: an edit in place that restores the mtime still shows */
  uint64_t head, pages, schema;
  uint32_t version;
  uint64_t loader;   /* nsl__loader_id: columns another build made are not these */
} input_id;

/* The identity of report `sub` of input `file`: file system identity, the
 * first 100 bytes (an SQLite header: its change counter and schema cookie),
 * 17 pages sampled across the file, the database schema where the source
 * has SQL, and the cache format.  *key names the entry (same input and
 * report: same entry, whatever its content). */
static int identify(const char *file, int input_fd, const char *kind, const char *sub, const nsl_source_ops *ops,
                    void *src, uint64_t *ident, uint64_t *key) {
  struct stat st;
  int fd = input_fd >= 0 ? input_fd : open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd != input_fd) close(fd);
    return -1;
  }
  input_id id;
  memset(&id, 0, sizeof id);
  id.dev = (uint64_t)st.st_dev;
  id.ino = (uint64_t)st.st_ino;
  id.size = (int64_t)st.st_size;
  id.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  id.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
  id.version = NSL_CACHE_FORMAT;
  id.loader = hash64(nsl__loader_id, strlen(nsl__loader_id), 7);
  unsigned char buf[4096];
  ssize_t got = pread(fd, buf, 100, 0);
  id.head = hash64(buf, got > 0 ? (size_t)got : 0, 5);
  id.pages = 6;
  for (int i = 0; i <= 16; i++) {
    off_t at = i == 16 ? (st.st_size > 4096 ? st.st_size - 4096 : 0) : (off_t)((st.st_size / 16 * i) & ~(off_t)4095);
    got = pread(fd, buf, sizeof buf, at);
    id.pages = hash64(buf, got > 0 ? (size_t)got : 0, id.pages);
  }
  if (fd != input_fd) close(fd);
  if (ops->sql) {
    uint64_t h = 7;
    nsl_error e;
    if (ops->sql(src, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid", schema_row, &h, &e) !=
        NSL_OK)
      return -1;
    id.schema = h;
  }
  uint64_t k = hash64(kind, strlen(kind), hash64(sub, strlen(sub), 8));
  *ident = hash64(&id, sizeof id, k);
  uint64_t where[2] = {id.dev, id.ino};
  *key = hash64(where, sizeof where, k);
  return 0;
}

/* ---- entries ---- */


/* Entries open in this process, and whether one of those closed had added
 * files: the size bound is kept once, when the last entry closes, not once
 * per report (a scan of the whole folder each: a trace of 100 small reports
 * scanned it 100 times). */
static atomic_int live_entries;
static atomic_int wrote_pending;

/* Frees c (not the wrapped source); the size bound is kept when it was the
 * last entry open. */
static void cache_free(cache_src *c) {
  if (!c) return;
  if (c->dir) {   /* one of the entries open in this process: the last one keeps the size bound */
    if (c->wrote) atomic_store(&wrote_pending, 1);
    if (atomic_fetch_sub(&live_entries, 1) == 1 && atomic_exchange(&wrote_pending, 0)) nsl__cache_evict(c->dir);
  }
  free(c->lazy_member);
  nsl_bundle_close(c->zip);
  for (size_t i = 0; i < c->nemb; i++) free(c->emb[i].name);
  free(c->emb);
  free(c->dir);
  free(c->label);
  free(c);
}

/* Writes the entry's description (text) as a whole file, without fsync as
 * every file of the cache (a torn one is not the current ident: the entry
 * starts again). */
static nsl_status publish_text(const char *target, const char *text, nsl_error *err) {
  int fd = -1;
  char *tmp = NULL;
  nsl_status rc = nsl__tmpfile_open(target, &fd, &tmp, err);
  if (rc != NSL_OK) return rc;
  if (write_all(fd, text, strlen(text)) != 0) {
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': %s", target, strerror(errno));
    nsl__tmpfile_abort(fd, tmp);
  } else
    rc = nsl__tmpfile_publish(fd, tmp, target, err);
  free(tmp);
  return rc;
}

/* Sets up c's entry in the cache folder: made, or emptied when it holds
 * another version of the input; touched (LRU) when it is current.  Without
 * a usable folder c->dir stays NULL (one warning). */
static void open_entry(cache_src *c, const char *file, const char *sub, uint64_t key) {
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
                                     c->in->kind ? c->in->kind : "", abs ? abs : file, sub ? sub : "");
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

/* The identity of columns stored in a bundle: the report member's name and
 * sha256 (from the manifest), whatever file the bundle is. */
static uint64_t embedded_ident(const char *member, const char *sha) {
  uint64_t h = hash64("nsl bundle columns", 18, NSL_CACHE_FORMAT);
  h = hash64(nsl__loader_id, strlen(nsl__loader_id), h);   /* stored by this very build of nsl */
  h = hash64(member, strlen(member), h);
  return hash64(sha, strlen(sha), h);
}

int nsl__cache_stored_rename(void *head, size_t n, const char *old_member, const char *new_member, const char *sha) {
  file_head h;
  if (n < HEAD_BYTES || !old_member || !new_member || !sha) return -1;
  memcpy(&h, head, HEAD_BYTES);
  if (memcmp(h.magic, MAGIC, 8) != 0 || h.version != NSL_CACHE_FORMAT || h.bom != BOM ||
      h.head_hash != hash64(&h, offsetof(file_head, head_hash), 0) || h.ident != embedded_ident(old_member, sha))
    return -1;
  h.ident = embedded_ident(new_member, sha);
  h.head_hash = hash64(&h, offsetof(file_head, head_hash), 0);
  memcpy(head, &h, HEAD_BYTES);
  return 0;
}

/* Finds the stored column files of report `member` in bundle b (its
 * central directory as the bundle parsed it, its file as the bundle holds
 * it open): members columns/<member>/<file>, stored, unencrypted, their
 * data inside the archive before the central directory.  Anything else is
 * not used.  c keeps a reference to b when it found any. */
static void find_embedded(cache_src *c, nsl_bundle *b, const char *member) {
  const nsl__zip_dir *d = nsl__bundle_zip_dir(b);
  int fd = nsl__bundle_fd(b);
  if (fd < 0) return;
  size_t pl = strlen(member) + 10;
  char *prefix = malloc(pl);
  if (prefix) snprintf(prefix, pl, "columns/%s/", member);
  for (size_t i = 0; prefix && i < d->n; i++) {
    const nsl__zip_entry *z = &d->e[i];
    unsigned char lh[30];
    if (strncmp(z->name, prefix, pl - 1) != 0 || z->is_dir || z->method != 0 || (z->flags & 1) || z->csize != z->usize ||
        pread(fd, lh, 30, (off_t)z->offset) != 30 || memcmp(lh, "PK\3\4", 4) != 0)
      continue;
    uint64_t data = z->offset + 30 + (lh[26] | lh[27] << 8) + (lh[28] | lh[29] << 8);
    if (data > d->cd_offset || z->usize > d->cd_offset - data) continue;
    emb_file *g = realloc(c->emb, (c->nemb + 1) * sizeof *g);
    if (!g) break;
    c->emb = g;
    if (!(g[c->nemb].name = strdup(z->name + pl - 1))) break;
    g[c->nemb].off = data;
    g[c->nemb].size = z->usize;
    c->nemb++;
  }
  free(prefix);
  if (c->nemb == 0) return;
  qsort(c->emb, c->nemb, sizeof *c->emb, emb_cmp);
  c->zip = nsl__bundle_retain(b);
}

/* nsl__cache_add_source and nsl__cache_add_bundle_source: the wrapper with
 * the cache folder (when on) and the bundle's stored columns (when given). */
static nsl_status add_wrapped(nsl_trace *tr, const nsl_source_ops *ops, void *src, const nsl_report_info *info,
                              const char *file, int fd, const char *sub, nsl_bundle *zip, const char *sha,
                              nsl_error *err) {
  int use_dir = nsl_trace_options(tr)->cache;
  if ((!use_dir && !sha) || !ops->load || !ops->count || !ops->close) return nsl_trace_add_source(tr, ops, src, info, err);
  uint64_t ident = 0, key = 0;
  if (use_dir && identify(file, fd, ops->kind ? ops->kind : "", sub ? sub : "", ops, src, &ident, &key) != 0)
    use_dir = 0;
  cache_src *c = calloc(1, sizeof *c);
  if (!c || !(c->label = strdup(info->path ? info->path : file))) {
    free(c);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  c->in = ops;
  c->src = src;
  c->ident = ident;
  if (sha) {
    c->emb_ident = embedded_ident(sub, sha);
    find_embedded(c, zip, sub);
  }
  if (use_dir) open_entry(c, file, sub, key);
  if (c->dir) atomic_fetch_add(&live_entries, 1);
  if (!c->dir && c->nemb == 0) {
    cache_free(c);
    return nsl_trace_add_source(tr, ops, src, info, err);
  }
  c->ops.version = NSL_SOURCE_VERSION;
  c->ops.kind = ops->kind;
  c->ops.describe = ops->describe ? cache_describe : NULL;
  c->ops.load = cache_load;
  c->ops.count = cache_count;
  c->ops.close = cache_close;
  c->ops.sql = ops->sql ? cache_sql : NULL;
  c->ops.members = ops->members ? cache_members : NULL;
  c->ops.member_read = ops->member_read ? cache_member_read : NULL;
  c->ops.metadata = ops->metadata ? cache_metadata : NULL;
  nsl_status rc = nsl_trace_add_source(tr, &c->ops, c, info, err);
  if (rc != NSL_OK) cache_free(c);   /* the caller closes src */
  return rc;
}

nsl_status nsl__cache_add_source(nsl_trace *tr, const nsl_source_ops *ops, void *src, const nsl_report_info *info,
                                 const char *file, int fd, const char *sub, nsl_error *err) {
  return add_wrapped(tr, ops, src, info, file, fd, sub ? sub : "", NULL, NULL, err);
}

nsl_status nsl__cache_add_bundle_source(nsl_trace *tr, const nsl_source_ops *ops, void *src,
                                        const nsl_report_info *info, nsl_bundle *b, const char *member,
                                        nsl_error *err) {
  nsl__file_id id;
  const char *sha = NULL;
  for (size_t i = 0; i < nsl_bundle_count(b); i++)
    if (strcmp(nsl_bundle_member_at(b, i)->name, member) == 0) sha = nsl_bundle_member_at(b, i)->sha256;
  if (!nsl__bundle_file_id(b, &id) || !sha || !sha[0]) sha = NULL;
  return add_wrapped(tr, ops, src, info, nsl_bundle_path(b), nsl__bundle_fd(b), member, b, sha, err);
}

/* ---- nsl bundle --columns ---- */

nsl_status nsl_bundle_writer_add_columns(nsl_bundle_writer *w, const char *member, const char *export_path, nsl_error *err) {
  const char *sha = nsl__bundle_writer_sha256(w, member);
  if (!sha) return nsl_error_set(err, NSL_ERR_ARG, "cannot store the columns of '%s': no member %s yet", export_path, member);
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc = nsl__nsys_open_file(export_path, &src, &info, err);
  if (rc != NSL_OK) return rc;
  const nsl_source_ops *ops = &nsl__nsys_source_ops;
  cache_src c;
  memset(&c, 0, sizeof c);
  c.in = ops;
  c.src = src;
  c.label = (char *)export_path;
  c.ident = embedded_ident(member, sha);
  c.bw = w;
  c.bmember = member;
  c.bw_err = err;
  const char *const *tables = nsl_model_tables();
  int ntables = 0;
  while (tables[ntables]) ntables++;
  nsl__progress_begin("storing columns", "tables", ntables);
  for (int ti = 0; rc == NSL_OK && c.bw_rc == NSL_OK && tables[ti]; ti++) {
    const char *name = tables[ti];
    const nsl_model_table *mt = nsl__model_table(name);
    nsl_table *probe = nsl_table_new();
    nsl_dict *dict = nsl_dict_new();
    table_meta m;
    memset(&m, 0, sizeof m);
    m.known = 1;
    m.rows = -1;
    if (!mt || !probe || !dict) rc = mt ? nsl_error_set(err, NSL_ERR_NOMEM, "out of memory") : NSL_OK;
    else {
      nsl_status d = ops->describe(src, name, probe, err);
      if (d != NSL_OK && d != NSL_ERR_NOTFOUND) rc = d;
      m.found = d == NSL_OK;
    }
    int ncols = 0;
    const char *names[128];
    nsl_type types[128];
    if (rc == NSL_OK && mt && m.found) {
      for (int k = 0; k < nsl_table_ncols(probe) && m.nextra < 32; k++) {
        snprintf(m.names[m.nextra], sizeof m.names[0], "%s", nsl_table_colname(probe, k));
        m.types[m.nextra++] = nsl_table_coltype(probe, k);
      }
      for (const nsl_model_column *mc = mt->cols; mc->name && ncols < 96; mc++)
        if (strcmp(mc->name, "report") != 0 && strcmp(mc->name, "dur") != 0) {
          names[ncols] = mc->name;
          types[ncols++] = mc->type;
        }
      for (int k = 0; k < m.nextra; k++) {
        int dup = 0;
        for (int j = 0; j < ncols; j++) dup |= strcmp(names[j], m.names[k]) == 0;
        if (!dup) {
          names[ncols] = m.names[k];
          types[ncols++] = m.types[k];
        }
      }
      nsl_column *out[128] = {0};
      nsl_status l = ops->load(src, name, names, types, ncols, dict, 0, out, err);
      if (l == NSL_OK) {
        m.rows = ncols > 0 ? out[0]->len : -1;
        for (int k = 0; k < ncols; k++) write_column(&c, name, names[k], out[k]);
      } else if (l == NSL_ERR_NOTFOUND) m.found = 0;
      else rc = l;
      for (int k = 0; k < ncols; k++) nsl_column_release(out[k]);
    }
    if (rc == NSL_OK && mt) {
      nsl_error_clear(err);
      write_meta(&c, name, &m);
    }
    nsl_table_release(probe);
    nsl_dict_release(dict);
    nsl__progress_add(1);
  }
  if (rc == NSL_OK) {   /* the report's metadata: the bundle opens without decompressing the export */
    stored_info si;
    memset(&si, 0, sizeof si);
    snprintf(si.host, sizeof si.host, "%s", info.host);
    snprintf(si.nsys_version, sizeof si.nsys_version, "%s", info.nsys_version);
    snprintf(si.schema_version, sizeof si.schema_version, "%s", info.schema_version);
    si.start_utc = info.start_utc;
    si.duration = info.duration;
    file_head h;
    head_init(&h, &c, KIND_INFO, "", NULL);
    h.data_off = h.dict_off = HEAD_BYTES;
    h.dict_bytes = sizeof si;
    h.data_hash = hash64(&si, 0, 3);
    h.dict_hash = hash64(&si, sizeof si, 4);
    const void *parts[] = {&si};
    size_t lens[] = {sizeof si};
    publish(&c, "info", &h, parts, lens, 1);
  }
  nsl__progress_end();
  ops->close(src);
  return rc != NSL_OK ? rc : c.bw_rc;
}

/* ---- bundle reports opened from their stored columns ---- */

int nsl__cache_add_stored_report(nsl_trace *tr, nsl_bundle *b, const char *member, nsl_status *st,
                                 nsl_error *err) {
  nsl__file_id id;
  const nsl_bundle_member *bm = nsl_bundle_find(b, member);
  char info_name[4200];
  if (!bm || !bm->sha256 || !bm->sha256[0] || !nsl__bundle_file_id(b, &id) ||
      snprintf(info_name, sizeof info_name, "columns/%s/info", member) >= (int)sizeof info_name ||
      !nsl_bundle_find(b, info_name))
    return 0;
  cache_src *c = calloc(1, sizeof *c);
  size_t ln = strlen(nsl_bundle_path(b)) + strlen(member) + 2;
  if (!c) return 0;
  c->emb_ident = embedded_ident(member, bm->sha256);
  if (!(c->label = malloc(ln)) || !(c->lazy_member = strdup(member))) {
    cache_free(c);
    return 0;
  }
  snprintf(c->label, ln, "%s:%s", nsl_bundle_path(b), member);
  find_embedded(c, b, member);   /* c keeps b: the export is read from it when needed */
  const file_head *h;
  size_t size;
  nsl__mapping *map = c->nemb ? map_file(c, "info", KIND_INFO, "", NULL, &h, &size) : NULL;
  if (!map || h->dict_bytes != sizeof(stored_info) || h->dict_off % 8 != 0) {
    nsl__mapping_release(map);
    cache_free(c);
    return 0;   /* open it from the export, as any report */
  }
  stored_info si;
  memcpy(&si, (const char *)h + h->dict_off, sizeof si);
  nsl__mapping_release(map);
  nsl_report_info info;
  memset(&info, 0, sizeof info);
  info.path = c->label;
  char *name = NULL;
  if (nsl__nsys_name_and_rank(c->label, &name, &info.rank) != 0) {
    cache_free(c);
    return 0;
  }
  info.name = name;   /* the trace keeps its own copies of name and host */
  si.host[sizeof si.host - 1] = si.nsys_version[sizeof si.nsys_version - 1] = si.schema_version[sizeof si.schema_version - 1] = 0;
  info.host = si.host;
  snprintf(info.nsys_version, sizeof info.nsys_version, "%s", si.nsys_version);
  snprintf(info.schema_version, sizeof info.schema_version, "%s", si.schema_version);
  info.start_utc = si.start_utc > 0 ? si.start_utc : 0;
  info.duration = si.duration > 0 ? si.duration : 0;
  info.first_ts = info.last_ts = NSL_NULL_I64;
  nsl_bundle_fill_report_info(b, member, &info);
  c->ops.version = NSL_SOURCE_VERSION;
  c->ops.kind = nsl__nsys_source_ops.kind;
  c->ops.describe = cache_describe;
  c->ops.load = cache_load;
  c->ops.count = cache_count;
  c->ops.close = cache_close;
  c->ops.sql = cache_sql;
  c->ops.metadata = cache_metadata;
  *st = nsl_trace_add_source(tr, &c->ops, c, &info, err);
  free(name);
  if (*st != NSL_OK) cache_free(c);
  return 1;
}
