/*
 * colcache_format.c -- a cache file's bytes (archive-format/CACHE.md): the
 * checksum, file names, the header, the checks of a file, and table
 * descriptions and columns written into files and read back from them
 * (their files on disk or in a bundle are colcache_io.c's).
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "source/colcache_internal.h"

/* ---- hashing ---- */

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL

static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

/* A 64-bit checksum of n bytes: four independent lanes over 32-byte
 * blocks (several GB/s), then the tail, then a final mix. */
uint64_t nsl__cache_hash64(const void *p, size_t n, uint64_t seed) {
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

/* ---- file names, the header, the checks ---- */

/* A file name for table (and column): the names when they are plain, else a hash. */
static void file_name(char *out, size_t cap, const char *table, const char *column) {
  int plain = strlen(table) < 60 && (!column || strlen(column) < 60);
  for (const char *s = table; *s; s++) plain &= (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_';
  for (const char *s = column; s && *s; s++) plain &= (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_';
  if (plain && column) snprintf(out, cap, "c-%s-%s", table, column);
  else if (plain) snprintf(out, cap, "t-%s", table);
  else {
    uint64_t h = nsl__cache_hash64(table, strlen(table), column ? nsl__cache_hash64(column, strlen(column), 1) : 2);
    snprintf(out, cap, "%c-x%016llx", column ? 'c' : 't', (unsigned long long)h);
  }
}

void nsl__cache_head_init(nsl__cache_head *h, const nsl__cache_src *c, uint32_t kind, const char *table,
                          const char *column) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, NSL__CACHE_MAGIC, 8);
  h->version = NSL_CACHE_FORMAT;
  h->kind = kind;
  h->bom = NSL__CACHE_BOM;
  h->ident = c->ident;
  snprintf(h->table, sizeof h->table, "%s", table);
  if (column) snprintf(h->column, sizeof h->column, "%s", column);
}

/* Whether the n bytes at h are a sound cache file of the given identity,
 * kind and names (section 5 of archive-format/CACHE.md). */
int nsl__cache_sound_file(const nsl__cache_head *h, size_t n, uint64_t ident, uint32_t kind, const char *table,
                          const char *column) {
  return n >= NSL__CACHE_HEAD_BYTES && memcmp(h->magic, NSL__CACHE_MAGIC, 8) == 0 &&
         h->version == NSL_CACHE_FORMAT && h->kind == kind && h->bom == NSL__CACHE_BOM && h->ident == ident &&
         h->head_hash == nsl__cache_hash64(h, offsetof(nsl__cache_head, head_hash), 0) &&
         memchr(h->table, 0, sizeof h->table) && memchr(h->column, 0, sizeof h->column) &&
         strcmp(h->table, table) == 0 && strcmp(h->column, column ? column : "") == 0 &&
         h->data_off >= NSL__CACHE_HEAD_BYTES && h->data_off <= n && h->data_bytes <= n - h->data_off &&
         h->dict_off >= NSL__CACHE_HEAD_BYTES && h->dict_off <= n && h->dict_bytes <= n - h->dict_off &&
         nsl__cache_hash64((const char *)h + h->data_off, h->data_bytes, 3) == h->data_hash &&
         nsl__cache_hash64((const char *)h + h->dict_off, h->dict_bytes, 4) == h->dict_hash;
}

/* ---- table descriptions ---- */

/* The description in table file h (already nsl__cache_sound_file), or 0 when it is not one. */
static int meta_from(const nsl__cache_head *h, nsl__cache_meta *m) {
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

int nsl__cache_read_meta(const nsl__cache_src *c, const char *table, nsl__cache_meta *m) {
  char name[160];
  const nsl__cache_head *h;
  size_t size;
  memset(m, 0, sizeof *m);
  file_name(name, sizeof name, table, NULL);
  nsl__mapping *map = nsl__cache_map_file(c, name, NSL__CACHE_KIND_TABLE, table, NULL, &h, &size);
  if (!map) return 0;
  int ok = meta_from(h, m);
  nsl__mapping_release(map);
  return ok;
}

void nsl__cache_write_meta(nsl__cache_src *c, const char *table, const nsl__cache_meta *m) {
  char name[160], buf[32 * 72];
  size_t len = 0;
  nsl__cache_head h;
  nsl__cache_head_init(&h, c, NSL__CACHE_KIND_TABLE, table, NULL);
  for (int k = 0; k < m->nextra; k++) {
    uint32_t type = (uint32_t)m->types[k];
    memcpy(buf + len, &type, 4);
    size_t nl = strlen(m->names[k]) + 1;
    memcpy(buf + len + 4, m->names[k], nl);
    len += 4 + nl;
  }
  h.found = (uint32_t)m->found;
  h.rows = m->rows;
  h.data_off = h.dict_off = NSL__CACHE_HEAD_BYTES;
  h.dict_count = (uint64_t)m->nextra;
  h.dict_bytes = len;
  h.data_hash = nsl__cache_hash64(buf, 0, 3);
  h.dict_hash = nsl__cache_hash64(buf, len, 4);
  const void *parts[] = {buf};
  size_t lens[] = {len};
  file_name(name, sizeof name, table, NULL);
  nsl__cache_publish(c, name, &h, parts, lens, 1);
}

/* ---- columns ---- */

/* A string column file's ids, on the threads of nsl__run_rows: checked against its dictionary's ns strings
 * (bad set where one is out of range), or moved through map into out. */
typedef struct ids_job {
  const int32_t *ids;
  int32_t *out;
  const int32_t *map;
  int64_t ns;
  atomic_int bad;
} ids_job;

static void check_ids_rows(void *p, int64_t lo, int64_t hi) {
  ids_job *j = p;
  int bad = 0;
  for (int64_t r = lo; r < hi; r++) bad |= j->ids[r] < -1 || j->ids[r] >= j->ns;
  if (bad) atomic_store_explicit(&j->bad, 1, memory_order_relaxed);
}

static void remap_ids_rows(void *p, int64_t lo, int64_t hi) {
  ids_job *j = p;
  for (int64_t r = lo; r < hi; r++) j->out[r] = j->ids[r] < 0 ? -1 : j->map[j->ids[r]];
}

/* Column `column` of `table` from the entry, as a column of the trace:
 * strings in dict, times shifted by off; NULL when the entry lacks it (or
 * its file is bad). */
/* The column in column file h (already nsl__cache_sound_file) as a column of the
 * trace: strings in dict, times shifted by off; over the file's memory when
 * map is given and nothing needs changing, else a copy.  NULL when the file
 * does not hold a sound column of that type. */
static nsl_column *column_from(const nsl__cache_head *h, nsl__mapping *map, nsl_type type, nsl_dict *dict,
                               int64_t off) {
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
    ids_job j = {ids, NULL, NULL, (int64_t)ns, 0};
    nsl__run_rows(n, check_ids_rows, &j);
    if (atomic_load_explicit(&j.bad, memory_order_relaxed)) return NULL;
    for (uint64_t k = 0; k < ns; k++)
      if (offs[k] > offs[k + 1] || offs[k + 1] > blen) return NULL;
    int32_t *map_ids = malloc((size_t)(ns ? ns : 1) * sizeof *map_ids);
    if (!map_ids) return NULL;
    int same = 1;
    /* (a loading thread's dictionary takes the strings without a lookup: nsl__dict_allow_aliases) */
    for (uint64_t k = 0; k < ns; k++) {
      if (nsl__dict_append(dict, bytes + offs[k], (size_t)(offs[k + 1] - offs[k]), &map_ids[k], NULL) != NSL_OK) {
        free(map_ids);
        return NULL;
      }
      same &= map_ids[k] == (int32_t)k;
    }
    if (same && map) col = nsl__column_mapped(type, n, (void *)data, map, dict);
    else if ((col = nsl__column_new_uninit(type, n, dict))) {
      j.out = nsl_i32(col);
      j.map = map_ids;
      nsl__run_rows(n, remap_ids_rows, &j);
    }
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

/* The file of column `column` of `table` from the bundle or the entry,
 * mapped and checked; NULL when neither has a sound file of it. */
nsl__mapping *nsl__cache_map_column(const nsl__cache_src *c, const char *table, const char *column,
                                    const nsl__cache_head **head) {
  char name[200];
  size_t size;
  file_name(name, sizeof name, table, column);
  return nsl__cache_map_file(c, name, NSL__CACHE_KIND_COLUMN, table, column, head, &size);
}

nsl_column *nsl__cache_column_of(const nsl__cache_head *head, nsl__mapping *map, nsl_type type, nsl_dict *dict,
                                 int64_t off) {
  nsl_column *col = column_from(head, map, type, dict, off);
  nsl__mapping_release(map);
  return col;
}

/* ---- the checks alone, over bytes in memory (tests, fuzzing) ---- */

nsl_column *nsl__cache_column_from_bytes(const void *file, size_t n, uint64_t ident, const char *table,
                                         const char *column, nsl_type type, nsl_dict *dict, int64_t off) {
  if (((uintptr_t)file & 7) || !nsl__cache_sound_file(file, n, ident, NSL__CACHE_KIND_COLUMN, table, column))
    return NULL;
  return column_from(file, NULL, type, dict, off);
}

int nsl__cache_table_from_bytes(const void *file, size_t n, uint64_t ident, const char *table, int *found,
                                int64_t *rows, int *nextra) {
  nsl__cache_meta m;
  if (((uintptr_t)file & 7) || !nsl__cache_sound_file(file, n, ident, NSL__CACHE_KIND_TABLE, table, NULL) ||
      !meta_from(file, &m))
    return 0;
  *found = m.found;
  *rows = m.rows;
  *nextra = m.nextra;
  return 1;
}

void nsl__cache_seal(void *file, size_t n, uint64_t ident) {
  nsl__cache_head *h = file;
  if (n < NSL__CACHE_HEAD_BYTES || ((uintptr_t)file & 7)) return;
  memcpy(h->magic, NSL__CACHE_MAGIC, 8);
  h->version = NSL_CACHE_FORMAT;
  h->bom = NSL__CACHE_BOM;
  h->ident = ident;
  h->table[sizeof h->table - 1] = h->column[sizeof h->column - 1] = 0;
  if (h->data_off <= n && h->data_bytes <= n - h->data_off)
    h->data_hash = nsl__cache_hash64((const char *)file + h->data_off, h->data_bytes, 3);
  if (h->dict_off <= n && h->dict_bytes <= n - h->dict_off)
    h->dict_hash = nsl__cache_hash64((const char *)file + h->dict_off, h->dict_bytes, 4);
  h->head_hash = nsl__cache_hash64(h, offsetof(nsl__cache_head, head_hash), 0);
}

/* Writes column col (rows of this report, times unshifted) to the entry. */
void nsl__cache_write_column(nsl__cache_src *c, const char *table, const char *column, const nsl_column *col) {
  char name[200];
  nsl__cache_head h;
  nsl__cache_head_init(&h, c, NSL__CACHE_KIND_COLUMN, table, column);
  size_t es = nsl_type_size(col->type), dlen = (size_t)col->len * es;
  h.type = (uint32_t)col->type;
  h.rows = col->len;
  h.data_off = NSL__CACHE_HEAD_BYTES;
  h.data_bytes = dlen;
  h.dict_off = NSL__CACHE_HEAD_BYTES + ((dlen + 7) & ~(size_t)7);
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
  h.data_hash = nsl__cache_hash64(data, dlen, 3);
  h.dict_hash = nsl__cache_hash64(dictbuf ? (const void *)dictbuf : zeros, dictlen, 4);
  const void *parts[] = {data, zeros, dictbuf};
  size_t lens[] = {dlen, (size_t)(h.dict_off - NSL__CACHE_HEAD_BYTES - dlen), dictlen};
  file_name(name, sizeof name, table, column);
  nsl__cache_publish(c, name, &h, parts, lens, 3);
done:
  free(local);
  free(ids);
  free(dictbuf);
}

