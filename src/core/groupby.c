/* groupby.c -- group-by on key tuples, per-group aggregates, and the join
 * on key tuples (nsl_join_index), which is a group-by of the right side
 * probed with the left side.
 *
 * Keys are read as equality codes (kernels_internal.h), a block of rows at
 * a time.  When the product of the keys' ranges is small (device, stream,
 * report, string ids, dense correlation ids) a key tuple indexes a direct
 * table; otherwise an open-addressing hash table maps the tuple to its group.
 * Group ids are given in order of first appearance.  Memory grows with the
 * number of groups, never per row. */
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"

#define BLOCK NSL__GROUP_BLOCK   /* rows per block of codes */

/* ---- key tables ------------------------------------------------------------- */

/* How a key column is read into codes. */
typedef enum key_mode {
  KEY_EQ,      /* nsl__eq_code: the column's own equality code */
  KEY_F64,     /* numeric value as a double (integer keys joined with F64 keys) */
  KEY_XLATE    /* string ids translated into another dictionary */
} key_mode;

typedef struct key_col {
  const nsl_column *col;
  key_mode mode;
  const nsl_dict *to;   /* KEY_XLATE: target dictionary */
  int32_t *xl;          /* KEY_XLATE: id -> target id, -2 not yet looked up, -1 absent */
} key_col;

typedef struct slot {
  uint64_t h;   /* the code (one key) or the tuple hash */
  int64_t g;    /* group, -1 empty */
} slot;

typedef struct key_table {
  int nk;
  /* direct table */
  int dense;
  uint64_t *kmin, *span, *stride;   /* per key: least code, codes + NULL slot, place value */
  uint8_t *konst;                   /* per key: one value and no NULL (its place adds konst_pos to every row) */
  uint64_t konst_pos;
  int32_t *dtab;
  uint64_t dsize;
  /* hash table */
  slot *slots;
  uint64_t mask;
  /* groups */
  int64_t ngroups, gcap;
  uint64_t *gkeys;           /* ngroups * nk codes (hash table of several keys only) */
  int keep_keys;
  int64_t *first_row;
} key_table;

/* Codes of rows off..off+m-1 of a key into out (0 means NULL, or a string
 * that the target dictionary lacks). */
static void key_codes(key_col *k, int64_t off, int64_t m, uint64_t *out) {
  const nsl_column *c = k->col;
  switch (k->mode) {
  case KEY_EQ:
    switch (c->type) {
    case NSL_I64:
      for (int64_t i = 0; i < m; i++) out[i] = nsl__ocode_i64(nsl_i64(c)[off + i]);
      break;
    case NSL_I32:
      for (int64_t i = 0; i < m; i++) out[i] = nsl__ocode_i32(nsl_i32(c)[off + i]);
      break;
    default:
      for (int64_t i = 0; i < m; i++) out[i] = nsl__eq_code(c, off + i);
    }
    break;
  case KEY_F64:
    for (int64_t i = 0; i < m; i++) out[i] = nsl__ocode_f64(nsl__f64_at(c, off + i));
    break;
  case KEY_XLATE: {
    int32_t nd = nsl_dict_size(c->dict);
    for (int64_t i = 0; i < m; i++) {
      int32_t id = nsl_i32(c)[off + i];
      if (id < 0 || id >= nd) {
        out[i] = 0;
        continue;
      }
      if (k->xl[id] == -2)
        k->xl[id] = nsl_dict_find(k->to, nsl_dict_str(c->dict, id), nsl_dict_strlen(c->dict, id));
      out[i] = k->xl[id] < 0 ? 0 : (uint64_t)k->xl[id] + 1;
    }
    break;
  }
  }
}

/* An integer key read as its own codes (the direct paths below). */
static inline int int_key(const key_col *k) {
  return k->mode == KEY_EQ && (k->col->type == NSL_I32 || k->col->type == NSL_I64);
}

static void key_table_free(key_table *t) {
  free(t->kmin);
  free(t->span);
  free(t->stride);
  free(t->konst);
  free(t->dtab);
  free(t->slots);
  free(t->gkeys);
  free(t->first_row);
  memset(t, 0, sizeof *t);
}

/* A guess at the number of groups from a sample of rows spread over the
 * column: n when nearly every sampled tuple is distinct (so the hash table
 * is sized once instead of doubling through every size), else the number
 * of distinct sampled tuples. */
static uint64_t estimate_groups(key_col *keys, int nk, int64_t n) {
  enum { SAMPLE = 2048, SLOTS = 4096 };
  uint64_t seen[SLOTS] = {0}, distinct = 0;
  int64_t ns = n < SAMPLE ? n : SAMPLE;
  for (int64_t j = 0; j < ns; j++) {
    int64_t row = (int64_t)((__extension__(unsigned __int128)j * (uint64_t)n) / (uint64_t)ns);
    uint64_t h = 0x9e3779b97f4a7c15ull, c = 0;
    for (int k = 0; k < nk; k++) {
      key_codes(&keys[k], row, 1, &c);
      h = nsl__mix64(h ^ c);
    }
    h |= 1;   /* 0 marks an empty slot */
    uint64_t s = h & (SLOTS - 1);
    while (seen[s] && seen[s] != h) s = (s + 1) & (SLOTS - 1);
    if (!seen[s]) {
      seen[s] = h;
      distinct++;
    }
  }
  if (ns && distinct * 10 >= (uint64_t)ns * 9) return (uint64_t)n;
  return distinct;
}

/* The least and greatest codes of the values of an integer key column
 * (lo > hi when all are NULL), and whether it holds a NULL; in one pass the
 * compiler can vectorise (NULL is the least integer of its type). */
static void int_key_range(const nsl_column *c, int64_t n, uint64_t *lo, uint64_t *hi, int *nulls) {
  if (c->type == NSL_I32) {
    const int32_t *a = nsl_i32(c);
    int32_t mn = INT32_MAX, mx = NSL_NULL_I32, nul = 0;
    for (int64_t i = 0; i < n; i++) {   /* masks, not branches: SSE2 vectorises this */
      int32_t v = a[i], isnull = -(int32_t)(v == NSL_NULL_I32), u = (v & ~isnull) | (INT32_MAX & isnull);
      nul |= isnull;
      mn = u < mn ? u : mn;
      mx = v > mx ? v : mx;
    }
    *nulls = nul != 0;
    if (mx != NSL_NULL_I32) *lo = nsl__ocode_i32(mn), *hi = nsl__ocode_i32(mx);
    return;
  }
  const int64_t *a = nsl_i64(c);
  int64_t mn = INT64_MAX, mx = NSL_NULL_I64, nul = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = a[i], isnull = -(int64_t)(v == NSL_NULL_I64), u = (v & ~isnull) | (INT64_MAX & isnull);
    nul |= isnull;
    mn = u < mn ? u : mn;
    mx = v > mx ? v : mx;
  }
  *nulls = nul != 0;
  if (mx != NSL_NULL_I64) *lo = nsl__ocode_i64(mn), *hi = nsl__ocode_i64(mx);
}

/* Chooses a direct table when the product of the key ranges (each plus a
 * NULL slot) is at most a few entries per row. */
static nsl_status key_table_init(key_table *t, key_col *keys, int nk, int64_t n, nsl_error *err) {
  memset(t, 0, sizeof *t);
  t->nk = nk;
  t->kmin = calloc((size_t)nk, sizeof *t->kmin);
  t->span = calloc((size_t)nk, sizeof *t->span);
  t->stride = calloc((size_t)nk, sizeof *t->stride);
  t->konst = calloc((size_t)nk, sizeof *t->konst);
  if (!t->kmin || !t->span || !t->stride || !t->konst) goto nomem;
  uint64_t limit = (uint64_t)n * 2 + 65536, prod = 1, est;
  if (limit > (1ull << 27)) limit = 1ull << 27;
  int dense = n > 0;
  uint64_t buf[BLOCK];
  for (int k = nk - 1; k >= 0 && dense; k--) {
    uint64_t lo = UINT64_MAX, hi = 0;
    int nulls = 0;
    if (int_key(&keys[k])) int_key_range(keys[k].col, n, &lo, &hi, &nulls);   /* straight over the column */
    for (int64_t off = 0; off < n && !int_key(&keys[k]); off += BLOCK) {
      int64_t m = n - off < BLOCK ? n - off : BLOCK;
      key_codes(&keys[k], off, m, buf);
      for (int64_t i = 0; i < m; i++) {
        uint64_t x = buf[i];
        if (x && x < lo) lo = x;
        if (x > hi) hi = x;
        nulls |= x == 0;
      }
    }
    uint64_t span = lo > hi ? 1 : hi - lo + 2;   /* values plus the NULL slot */
    if (lo <= hi && hi - lo >= limit) dense = 0;
    else if (prod > limit / span) dense = 0;
    else {
      t->kmin[k] = lo > hi ? 0 : lo;
      t->span[k] = span;
      t->stride[k] = prod;
      if (lo == hi && !nulls) t->konst[k] = 1, t->konst_pos += prod;   /* code - (kmin - 1) is 1 on every row */
      prod *= span;
    }
  }
  if (dense) {
    t->dense = 1;
    t->dsize = prod;
    t->dtab = nsl__big_alloc(prod * sizeof *t->dtab);
    if (!t->dtab) goto nomem;
    memset(t->dtab, 0xff, prod * sizeof *t->dtab);
    est = prod < (uint64_t)n ? prod : (uint64_t)n;
  } else {
    est = estimate_groups(keys, nk, n);
    uint64_t cap = 1024;
    while (cap < est * 2) cap <<= 1;
    t->slots = nsl__big_alloc(cap * sizeof *t->slots);
    if (!t->slots) goto nomem;
    for (uint64_t s = 0; s < cap; s++) t->slots[s].g = -1;
    t->mask = cap - 1;
    t->keep_keys = nk > 1;   /* one key: the slot holds the code itself */
  }
  /* room for the expected groups up front (untouched pages cost nothing) */
  t->gcap = est > 1024 ? (int64_t)est : 1024;
  if (!(t->first_row = malloc((size_t)t->gcap * sizeof *t->first_row))) goto nomem;
  if (t->keep_keys && !(t->gkeys = malloc((size_t)t->gcap * (size_t)nk * sizeof *t->gkeys))) goto nomem;
  return NSL_OK;
nomem:
  key_table_free(t);
  return nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory");
}

static inline int64_t hash_find(const key_table *t, const uint64_t *codes, uint64_t h, uint64_t *slot_out) {
  uint64_t s = nsl__mix64(h) & t->mask;
  for (;;) {
    int64_t g = t->slots[s].g;
    if (g < 0) break;
    if (t->slots[s].h == h &&
        (t->nk == 1 || memcmp(t->gkeys + (size_t)g * (size_t)t->nk, codes, (size_t)t->nk * 8) == 0))
      break;
    s = (s + 1) & t->mask;
  }
  *slot_out = s;
  return t->slots[s].g;
}

static int grow_slots(key_table *t) {
  uint64_t cap = (t->mask + 1) * 2;
  slot *ns = nsl__big_alloc(cap * sizeof *ns);
  if (!ns) return -1;
  for (uint64_t s = 0; s < cap; s++) ns[s].g = -1;
  for (uint64_t s = 0; s <= t->mask; s++) {
    if (t->slots[s].g < 0) continue;
    uint64_t j = nsl__mix64(t->slots[s].h) & (cap - 1);
    while (ns[j].g >= 0) j = (j + 1) & (cap - 1);
    ns[j] = t->slots[s];
  }
  free(t->slots);
  t->slots = ns;
  t->mask = cap - 1;
  return 0;
}

/* Adds a group for codes, first seen at row; returns its id or -1. */
static int64_t new_group(key_table *t, const uint64_t *codes, int64_t row) {
  if (t->ngroups == t->gcap) {
    int64_t cap = t->gcap ? t->gcap * 2 : 1024;
    if (t->keep_keys) {
      uint64_t *gk = realloc(t->gkeys, (size_t)cap * (size_t)t->nk * sizeof *gk);
      if (!gk) return -1;
      t->gkeys = gk;
    }
    int64_t *fr = realloc(t->first_row, (size_t)cap * sizeof *fr);
    if (!fr) return -1;
    t->first_row = fr;
    t->gcap = cap;
  }
  int64_t g = t->ngroups++;
  if (t->keep_keys) memcpy(t->gkeys + (size_t)g * (size_t)t->nk, codes, (size_t)t->nk * sizeof *codes);
  t->first_row[g] = row;
  return g;
}

#define PREFETCH 16   /* rows ahead whose table entry is prefetched */

/* For the m rows of a block (codes of key k at buf[k * BLOCK + i]): the
 * direct-table index or the hash of each row's tuple into pos, and skip[i]
 * set for rows that match nothing: a NULL key when skip_null, or (probing)
 * a tuple outside the direct table's ranges. */
static void block_positions(const key_table *t, const uint64_t *buf, int64_t m, int skip_null, int probing,
                            uint64_t *pos, uint8_t *skip) {
  int nk = t->nk;
  memset(skip, 0, (size_t)m);
  if (t->dense) {   /* key by key over the block: sum of (code - min + 1) * stride */
    memset(pos, 0, (size_t)m * sizeof *pos);
    for (int k = 0; k < nk; k++) {
      const uint64_t *c = buf + (size_t)k * BLOCK;
      uint64_t base = t->kmin[k] - 1, span = t->span[k], stride = t->stride[k];
      for (int64_t i = 0; i < m; i++) {
        uint64_t x = c[i] ? c[i] - base : 0;   /* 1.. for values, 0 for NULL */
        int outside = c[i] != 0 && (c[i] < t->kmin[k] || x >= span);
        skip[i] |= (uint8_t)((skip_null & (c[i] == 0)) | (probing & outside));
        pos[i] += x * stride;
      }
    }
    if (probing)   /* keep skipped rows' positions inside the table for prefetching */
      for (int64_t i = 0; i < m; i++)
        if (skip[i]) pos[i] = 0;
    return;
  }
  if (nk == 1) {
    memcpy(pos, buf, (size_t)m * sizeof *pos);
    if (skip_null)
      for (int64_t i = 0; i < m; i++) skip[i] = buf[i] == 0;
    return;
  }
  for (int64_t i = 0; i < m; i++) pos[i] = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < nk; k++) {
    const uint64_t *c = buf + (size_t)k * BLOCK;
    for (int64_t i = 0; i < m; i++) {
      pos[i] = nsl__mix64(pos[i] ^ c[i]);
      skip[i] |= (uint8_t)(skip_null & (c[i] == 0));
    }
  }
}

/* block_positions of a direct table whose keys are all integer columns,
 * read straight from the columns (the same positions, no code buffer). */
static void direct_positions(const key_table *t, const key_col *keys, int64_t off, int64_t m, int skip_null,
                             uint64_t *pos, uint8_t *skip) {
  for (int64_t i = 0; i < m; i++) pos[i] = t->konst_pos, skip[i] = 0;   /* keys of one value: not read */
  for (int k = 0; k < t->nk; k++) {
    if (t->konst[k]) continue;
    uint64_t base = t->kmin[k] - 1, stride = t->stride[k];
    uint8_t sn = (uint8_t)skip_null;
    if (keys[k].col->type == NSL_I32) {   /* the same in 32 bits, with masks: SSE2 vectorises it */
      const int32_t *a = nsl_i32(keys[k].col) + off;
      uint32_t vmin = (uint32_t)nsl__ocode_to_i64(t->kmin[k]), stride32 = (uint32_t)stride;   /* strides < 2^27 */
      for (int64_t i = 0; i < m; i++) {
        uint32_t v = (uint32_t)a[i], isnull = -(uint32_t)(v == (uint32_t)NSL_NULL_I32);
        uint32_t x = (v - vmin + 1) & ~isnull;   /* 1.. for values, 0 for NULL */
        pos[i] += (uint64_t)x * stride32;
        skip[i] |= (uint8_t)(sn & isnull);
      }
    } else {
      const int64_t *a = nsl_i64(keys[k].col) + off;
      for (int64_t i = 0; i < m; i++) {
        uint64_t c = nsl__ocode_i64(a[i]);
        pos[i] += (c ? c - base : 0) * stride;
        skip[i] |= (uint8_t)(sn & (c == 0));
      }
    }
  }
}

static inline void tuple_at(const uint64_t *buf, int nk, int64_t i, uint64_t *tup) {
  for (int k = 0; k < nk; k++) tup[k] = buf[(size_t)k * BLOCK + i];
}

/* Scratch of one pass over the rows: the codes of a block of rows per key
 * and one key tuple. */
typedef struct key_pass {
  uint64_t *buf, *tup, codes[16];
  int direct;   /* dense table of integer keys: positions straight from the columns */
} key_pass;

static void key_pass_free(key_pass *p) {
  free(p->buf);
  if (p->tup != p->codes) free(p->tup);
  memset(p, 0, sizeof *p);
}

static nsl_status key_pass_init(key_pass *p, const key_table *t, const key_col *keys, int nk) {
  memset(p, 0, sizeof *p);
  p->tup = nk <= 16 ? p->codes : malloc((size_t)nk * sizeof *p->tup);
  p->buf = malloc((size_t)nk * BLOCK * sizeof *p->buf);
  if (!p->buf || !p->tup) {
    key_pass_free(p);
    return NSL_ERR_NOMEM;
  }
  p->direct = t->dense;
  for (int k = 0; k < nk; k++) p->direct = p->direct && int_key(&keys[k]);
  return NSL_OK;
}

/* The groups of rows off..off+m-1 (m <= BLOCK) into group_of[0..m) (may be
 * NULL), adding a group for each tuple not seen before.  skip_null: rows
 * with a NULL key join no group (-1).  NSL_ERR_NOMEM when a group cannot
 * be added. */
static nsl_status key_table_assign(key_table *t, key_col *keys, key_pass *p, int64_t off, int64_t m, int skip_null,
                                   int64_t *group_of) {
  int nk = t->nk;
  uint64_t *buf = p->buf, *tup = p->tup, pos[BLOCK];
  uint8_t skip[BLOCK];
  if (p->direct)
    direct_positions(t, keys, off, m, skip_null, pos, skip);
  else {
    for (int k = 0; k < nk; k++) key_codes(&keys[k], off, m, buf + (size_t)k * BLOCK);
    block_positions(t, buf, m, skip_null, 0, pos, skip);
  }
  for (int64_t i = 0; i < m; i++) {
    int64_t g = -1;
    if (t->dense) {
      if (t->dsize > 8192 && i + PREFETCH < m) __builtin_prefetch(&t->dtab[pos[i + PREFETCH]]);   /* past L1 */
      if (!skip[i] && (g = t->dtab[pos[i]]) < 0) {
        if (p->direct)   /* a new group (rare): its codes */
          for (int k = 0; k < nk; k++) key_codes(&keys[k], off + i, 1, tup + k);
        else
          tuple_at(buf, nk, i, tup);
        if ((g = new_group(t, tup, off + i)) < 0) return NSL_ERR_NOMEM;
        t->dtab[pos[i]] = (int32_t)g;   /* groups <= dsize <= 2^27 */
      }
    } else {
      if (i + PREFETCH < m) __builtin_prefetch(&t->slots[nsl__mix64(pos[i + PREFETCH]) & t->mask]);
      if (!skip[i]) {
        uint64_t sl;
        tuple_at(buf, nk, i, tup);
        if ((g = hash_find(t, tup, pos[i], &sl)) < 0) {
          if ((g = new_group(t, tup, off + i)) < 0) return NSL_ERR_NOMEM;
          t->slots[sl] = (slot){pos[i], g};
          if ((uint64_t)t->ngroups * 2 > t->mask && grow_slots(t) != 0) return NSL_ERR_NOMEM;
        }
      }
    }
    if (group_of) group_of[i] = g;
  }
  return NSL_OK;
}

/* Groups the n rows of keys; group_of (may be NULL) receives each row's
 * group.  skip_null: rows with a NULL key join no group (-1). */
static nsl_status key_table_build(key_table *t, key_col *keys, int nk, int64_t n, int skip_null,
                                  int64_t *group_of, nsl_error *err) {
  nsl_status rc = key_table_init(t, keys, nk, n, err);
  if (rc != NSL_OK) return rc;
  key_pass p;
  if (key_pass_init(&p, t, keys, nk) != NSL_OK) goto nomem;
  for (int64_t off = 0; off < n; off += BLOCK) {
    int64_t m = n - off < BLOCK ? n - off : BLOCK;
    if (key_table_assign(t, keys, &p, off, m, skip_null, group_of ? group_of + off : NULL) != NSL_OK) goto nomem;
  }
  key_pass_free(&p);
  return NSL_OK;
nomem:
  key_pass_free(&p);
  key_table_free(t);
  return nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory");
}

/* The groups of the m rows of a block (codes in buf, as key_table_build
 * reads them) into out, -1 where none matches.  tup: scratch of nk codes. */
static void key_table_probe(const key_table *t, const uint64_t *buf, int64_t m, uint64_t *tup, int64_t *out) {
  uint64_t pos[BLOCK];
  uint8_t skip[BLOCK];
  block_positions(t, buf, m, 1, 1, pos, skip);
  for (int64_t i = 0; i < m; i++) {
    int64_t g = -1;
    if (t->dense) {
      if (i + PREFETCH < m) __builtin_prefetch(&t->dtab[pos[i + PREFETCH]]);
      if (!skip[i]) g = t->dtab[pos[i]];
    } else {
      if (i + PREFETCH < m) __builtin_prefetch(&t->slots[nsl__mix64(pos[i + PREFETCH]) & t->mask]);
      if (!skip[i]) {
        uint64_t sl;
        tuple_at(buf, t->nk, i, tup);
        g = hash_find(t, tup, pos[i], &sl);
      }
    }
    out[i] = g;
  }
}

/* ---- group-by ------------------------------------------------------------------ */

nsl_status nsl_groupby(const nsl_column *const *keys, int nkeys, nsl_groups *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "group-by: no output");
  memset(out, 0, sizeof *out);
  nsl_status rc = nsl__check_keys(keys, nkeys, "group-by", err);
  if (rc != NSL_OK) return rc;
  int64_t n = keys[0]->len;
  key_col *kc = calloc((size_t)nkeys, sizeof *kc);
  out->group_of = nsl_column_new(NSL_I64, n, NULL);
  if (!kc || !out->group_of) {
    free(kc);
    nsl_groups_free(out);
    return nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory for %lld rows", (long long)n);
  }
  for (int k = 0; k < nkeys; k++) kc[k] = (key_col){keys[k], KEY_EQ, NULL, NULL};
  key_table t;
  rc = key_table_build(&t, kc, nkeys, n, 0, nsl_i64(out->group_of), err);
  free(kc);
  if (rc != NSL_OK) {
    nsl_groups_free(out);
    return rc;
  }
  out->ngroups = t.ngroups;
  out->checked = 1;
  out->first_row = nsl_column_new(NSL_I64, t.ngroups, NULL);
  if (!out->first_row) {
    key_table_free(&t);
    nsl_groups_free(out);
    return nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory for %lld groups", (long long)t.ngroups);
  }
  if (t.ngroups) memcpy(out->first_row->data, t.first_row, (size_t)t.ngroups * sizeof *t.first_row);
  key_table_free(&t);
  return NSL_OK;
}

void nsl_groups_free(nsl_groups *g) {
  if (!g) return;
  nsl_column_release(g->group_of);
  nsl_column_release(g->first_row);
  memset(g, 0, sizeof *g);
}

/* ---- group ids a block at a time ------------------------------------------------- */

struct nsl__grouping {
  key_table t;
  key_col *keys;
  key_pass pass;
};

nsl__grouping *nsl__grouping_new(const nsl_column *const *keys, int nkeys, nsl_error *err) {
  if (nsl__check_keys(keys, nkeys, "group-by", err) != NSL_OK) return NULL;
  nsl__grouping *gr = calloc(1, sizeof *gr);
  if (!gr || !(gr->keys = calloc((size_t)nkeys, sizeof *gr->keys))) {
    free(gr);
    nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory");
    return NULL;
  }
  for (int k = 0; k < nkeys; k++) gr->keys[k] = (key_col){keys[k], KEY_EQ, NULL, NULL};
  if (key_table_init(&gr->t, gr->keys, nkeys, keys[0]->len, err) != NSL_OK) {
    free(gr->keys);
    free(gr);
    return NULL;
  }
  if (key_pass_init(&gr->pass, &gr->t, gr->keys, nkeys) != NSL_OK) {
    nsl__grouping_free(gr);
    nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory");
    return NULL;
  }
  return gr;
}

nsl_status nsl__grouping_ids(nsl__grouping *gr, int64_t off, int64_t m, int64_t *ids, nsl_error *err) {
  if (key_table_assign(&gr->t, gr->keys, &gr->pass, off, m, 0, ids) != NSL_OK)
    return nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory for %lld groups", (long long)gr->t.ngroups);
  return NSL_OK;
}

int64_t nsl__grouping_count(const nsl__grouping *gr) { return gr->t.ngroups; }

const int64_t *nsl__grouping_first_rows(const nsl__grouping *gr) { return gr->t.first_row; }

void nsl__grouping_free(nsl__grouping *gr) {
  if (!gr) return;
  key_pass_free(&gr->pass);
  key_table_free(&gr->t);
  free(gr->keys);
  free(gr);
}

/* ---- join ------------------------------------------------------------------------ */

nsl_column *nsl_join_index(const nsl_column *const *left, const nsl_column *const *right, int nkeys,
                           nsl_error *err) {
  if (nsl__check_keys(left, nkeys, "join (left keys)", err) != NSL_OK ||
      nsl__check_keys(right, nkeys, "join (right keys)", err) != NSL_OK)
    return NULL;
  int64_t nl = left[0]->len, nr = right[0]->len;
  key_col *lk = calloc((size_t)nkeys, sizeof *lk), *rk = calloc((size_t)nkeys, sizeof *rk);
  nsl_column *res = NULL;
  key_table t;
  int built = 0;
  uint64_t *buf = NULL, *tup = NULL;
  if (!lk || !rk) goto nomem;
  for (int k = 0; k < nkeys; k++) {
    const nsl_column *l = left[k], *r = right[k];
    lk[k] = (key_col){l, KEY_EQ, NULL, NULL};
    rk[k] = (key_col){r, KEY_EQ, NULL, NULL};
    if ((l->type == NSL_STR) != (r->type == NSL_STR)) {
      nsl_error_set(err, NSL_ERR_ARG, "join: key %d is %s on the left and %s on the right", k + 1,
                    nsl_type_name(l->type), nsl_type_name(r->type));
      goto fail;
    }
    if (l->type == NSL_STR && l->dict != r->dict) {
      int32_t nd = nsl_dict_size(l->dict);
      lk[k].mode = KEY_XLATE;
      lk[k].to = r->dict;
      if (!(lk[k].xl = malloc((size_t)(nd ? nd : 1) * sizeof *lk[k].xl))) goto nomem;
      for (int32_t i = 0; i < nd; i++) lk[k].xl[i] = -2;
    } else if (l->type == NSL_F64 || r->type == NSL_F64) {
      lk[k].mode = rk[k].mode = KEY_F64;
    }
  }
  if (key_table_build(&t, rk, nkeys, nr, 1, NULL, err) != NSL_OK) goto fail;
  built = 1;
  res = nsl_column_new(NSL_I64, nl, NULL);
  buf = malloc((size_t)nkeys * BLOCK * sizeof *buf);
  if (!res || !buf) goto nomem;
  if (!(tup = malloc((size_t)nkeys * sizeof *tup))) goto nomem;
  int64_t *o = nsl_i64(res), gb[BLOCK];
  for (int64_t off = 0; off < nl; off += BLOCK) {
    int64_t m = nl - off < BLOCK ? nl - off : BLOCK;
    for (int k = 0; k < nkeys; k++) key_codes(&lk[k], off, m, buf + (size_t)k * BLOCK);
    key_table_probe(&t, buf, m, tup, gb);
    for (int64_t i = 0; i < m; i++) o[off + i] = gb[i] < 0 ? -1 : t.first_row[gb[i]];
  }
  goto done;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "join: out of memory (%lld and %lld rows)", (long long)nl, (long long)nr);
fail:
  nsl_column_release(res);
  res = NULL;
done:
  if (built) key_table_free(&t);
  free(buf);
  free(tup);
  for (int k = 0; lk && k < nkeys; k++) free(lk[k].xl);
  free(lk);
  free(rk);
  return res;
}

/* ---- aggregates ---------------------------------------------------------------------- */

static const char *agg_name(nsl_agg a) {
  static const char *const names[] = {"count", "sum",      "min",   "max",  "mean",          "median",
                                      "quantile", "std", "first", "last", "count_distinct"};
  return (unsigned)a < sizeof names / sizeof *names ? names[a] : "?";
}

/* Per-group count, int128 sum (integers) or compensated double sum (F64) of
 * the non-NULL values. */
typedef struct sums {
  int64_t *count;
  __extension__ __int128 *isum;
  double *fsum, *comp;
} sums;

static void sums_free(sums *s) {
  free(s->count);
  free(s->isum);
  free(s->fsum);
  free(s->comp);
}

static int sums_compute(const int64_t *go, int64_t ng, const nsl_column *v, sums *s) {
  int64_t n = v->len;
  int fp = v->type == NSL_F64;
  memset(s, 0, sizeof *s);
  size_t m = (size_t)(ng ? ng : 1);
  s->count = nsl__big_calloc(m, sizeof *s->count);
  if (fp) {
    s->fsum = nsl__big_calloc(m, sizeof *s->fsum);
    s->comp = nsl__big_calloc(m, sizeof *s->comp);
  } else s->isum = nsl__big_calloc(m, sizeof *s->isum);
  if (!s->count || (fp ? !s->fsum || !s->comp : !s->isum)) {
    sums_free(s);
    return -1;
  }
  if (fp) {
    const double *x = nsl_f64(v);
    for (int64_t i = 0; i < n; i++) {
      int64_t g = go[i];
      double y = x[i];
      if (g < 0 || isnan(y)) continue;
      s->count[g]++;
      double a = s->fsum[g], t = a + y;
      s->comp[g] += fabs(a) >= fabs(y) ? (a - t) + y : (y - t) + a;
      s->fsum[g] = t;
    }
  } else if (v->type == NSL_I64) {
    const int64_t *x = nsl_i64(v);
    for (int64_t i = 0; i < n; i++) {
      int64_t g = go[i];
      if (g < 0 || x[i] == NSL_NULL_I64) continue;
      s->count[g]++;
      s->isum[g] += x[i];
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      int64_t g = go[i];
      int null;
      int64_t y = nsl__int_at(v, i, &null);
      if (g < 0 || null) continue;
      s->count[g]++;
      s->isum[g] += y;
    }
  }
  return 0;
}

static double sums_mean(const sums *s, int64_t g) {
  if (!s->count[g]) return NAN;
  if (s->fsum) return (s->fsum[g] + s->comp[g]) / (double)s->count[g];
  return (double)((long double)s->isum[g] / (long double)s->count[g]);
}

/* Group-contiguous order codes of the non-NULL values: codes[off[g] ..
 * off[g+1]) are group g's, in row order. */
static int contiguous_codes(const int64_t *go, int64_t ng, const nsl_column *v, uint64_t **codes_out,
                            int64_t **off_out) {
  int64_t n = v->len;
  int64_t *off = nsl__big_calloc((size_t)ng + 1, sizeof *off);
  uint64_t *buf = malloc(BLOCK * sizeof *buf), *codes = NULL;
  if (!off || !buf) goto fail;
  for (int64_t b = 0; b < n; b += BLOCK) {   /* counts */
    int64_t m = n - b < BLOCK ? n - b : BLOCK;
    nsl__order_codes(v, NULL, b, m, NULL, buf);
    for (int64_t i = 0; i < m; i++)
      if (buf[i] && go[b + i] >= 0) off[go[b + i] + 1]++;
  }
  for (int64_t g = 0; g < ng; g++) off[g + 1] += off[g];
  codes = nsl__big_alloc((size_t)off[ng] * sizeof *codes);
  if (!codes) goto fail;
  int64_t *pos = off;   /* scatter with off[g] as the cursor, then shift back */
  for (int64_t b = 0; b < n; b += BLOCK) {
    int64_t m = n - b < BLOCK ? n - b : BLOCK;
    nsl__order_codes(v, NULL, b, m, NULL, buf);
    for (int64_t i = 0; i < m; i++)
      if (buf[i] && go[b + i] >= 0) codes[pos[go[b + i]]++] = buf[i];
  }
  for (int64_t g = ng; g > 0; g--) off[g] = off[g - 1];
  off[0] = 0;
  free(buf);
  *codes_out = codes;
  *off_out = off;
  return 0;
fail:
  free(off);
  free(buf);
  free(codes);
  return -1;
}

/* Order codes of a value column, strings by rank (for MIN and MAX). */
static nsl_column *agg_minmax(const int64_t *go, int64_t ng, const nsl_column *v, int is_max,
                              nsl_error *err) {
  int64_t n = v->len;
  uint64_t *ranks = NULL, *best = nsl__big_alloc((size_t)ng * sizeof *best), buf[BLOCK];
  nsl_column *r = NULL;
  if (!best) goto nomem;
  if (v->type == NSL_STR && v->dict && !(ranks = nsl__str_ranks(v, err))) goto fail;
  uint64_t none = is_max ? 0 : UINT64_MAX;
  for (int64_t g = 0; g < ng; g++) best[g] = none;
  for (int64_t b = 0; b < n; b += BLOCK) {
    int64_t m = n - b < BLOCK ? n - b : BLOCK;
    nsl__order_codes(v, NULL, b, m, ranks, buf);
    for (int64_t i = 0; i < m; i++) {
      int64_t g = go[b + i];
      uint64_t x = buf[i];
      if (g < 0 || !x) continue;
      if (is_max ? x > best[g] : x < best[g]) best[g] = x;
    }
  }
  if (!(r = nsl_column_new(v->type, ng, v->dict))) goto nomem;
  int32_t *id_of_rank = NULL;
  if (ranks) {
    int32_t nd = nsl_dict_size(v->dict);
    if (!(id_of_rank = malloc((size_t)(nd ? nd : 1) * sizeof *id_of_rank))) goto nomem;
    for (int32_t id = 0; id < nd; id++)
      if (ranks[id]) id_of_rank[ranks[id] - 1] = id;
  }
  for (int64_t g = 0; g < ng; g++) {
    uint64_t x = best[g] == UINT64_MAX ? 0 : best[g];
    switch (v->type) {
    case NSL_I64: nsl_i64(r)[g] = nsl__ocode_to_i64(x); break;
    case NSL_I32: nsl_i32(r)[g] = x ? (int32_t)nsl__ocode_to_i64(x) : NSL_NULL_I32; break;
    case NSL_F64: nsl_f64(r)[g] = nsl__ocode_to_f64(x); break;
    case NSL_BOOL: nsl_bool(r)[g] = x ? (uint8_t)(x - 1) : 0; break;
    case NSL_STR: nsl_i32(r)[g] = !x ? -1 : id_of_rank ? id_of_rank[x - 1] : (int32_t)(x - 1); break;
    }
  }
  free(id_of_rank);
  goto done;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "group %s: out of memory", is_max ? "max" : "min");
fail:
  nsl_column_release(r);
  r = NULL;
done:
  free(ranks);
  free(best);
  return r;
}

nsl_column *nsl_group_agg(const nsl_groups *g, const nsl_column *values, nsl_agg agg, double q,
                          nsl_error *err) {
  const char *an = agg_name(agg);
  if (!g || !g->group_of || g->group_of->type != NSL_I64 || g->ngroups < 0 || !values ||
      (unsigned)values->type > NSL_BOOL || (unsigned)agg > NSL_AGG_COUNT_DISTINCT) {
    nsl_error_set(err, NSL_ERR_ARG, "group %s: needs groups and a value column", an);
    return NULL;
  }
  int64_t n = values->len, ng = g->ngroups;
  const int64_t *go = nsl_i64(g->group_of);
  if (g->group_of->len != n) {
    nsl_error_set(err, NSL_ERR_ARG, "group %s: %lld values for %lld grouped rows", an, (long long)n,
                  (long long)g->group_of->len);
    return NULL;
  }
  for (int64_t i = 0; i < n && !g->checked; i++)
    if (go[i] >= ng) {
      nsl_error_set(err, NSL_ERR_ARG, "group %s: row %lld is in group %lld of %lld", an, (long long)i,
                    (long long)go[i], (long long)ng);
      return NULL;
    }
  int numeric_only = agg == NSL_AGG_SUM || agg == NSL_AGG_MEAN || agg == NSL_AGG_MEDIAN ||
                     agg == NSL_AGG_QUANTILE || agg == NSL_AGG_STD;
  if (numeric_only && values->type == NSL_STR) {
    nsl_error_set(err, NSL_ERR_ARG, "group %s: not defined on a string column", an);
    return NULL;
  }
  if (agg == NSL_AGG_MEDIAN) q = 0.5;
  if (agg == NSL_AGG_QUANTILE && !(q >= 0 && q <= 1)) {
    nsl_error_set(err, NSL_ERR_ARG, "group quantile: q = %g is not in [0, 1]", q);
    return NULL;
  }
  nsl_column *r = NULL;
  sums s = {0};
  uint64_t *codes = NULL, *tmp = NULL;
  int64_t *off = NULL, *rows = NULL;
  switch (agg) {
  case NSL_AGG_COUNT: {
    if (!(r = nsl_column_new(NSL_I64, ng, NULL))) goto nomem;
    int64_t *o = nsl_i64(r);
    for (int64_t i = 0; i < n; i++)
      if (go[i] >= 0 && !nsl__is_null(values, i)) o[go[i]]++;
    break;
  }
  case NSL_AGG_SUM:
  case NSL_AGG_MEAN:
  case NSL_AGG_STD: {
    if (sums_compute(go, ng, values, &s) != 0) goto nomem;
    int fp = values->type == NSL_F64;
    if (!(r = nsl_column_new(agg == NSL_AGG_SUM && !fp ? NSL_I64 : NSL_F64, ng, NULL))) goto nomem;
    if (agg == NSL_AGG_SUM) {
      for (int64_t k = 0; k < ng; k++) {
        if (fp) nsl_f64(r)[k] = s.count[k] ? s.fsum[k] + s.comp[k] : NAN;
        else nsl_i64(r)[k] = s.count[k] ? (int64_t)(uint64_t)s.isum[k] : NSL_NULL_I64;
      }
    } else if (agg == NSL_AGG_MEAN) {
      for (int64_t k = 0; k < ng; k++) nsl_f64(r)[k] = sums_mean(&s, k);
    } else {   /* sample standard deviation, second pass over the deviations */
      double *o = nsl_f64(r);
      for (int64_t k = 0; k < ng; k++) o[k] = sums_mean(&s, k);   /* means first */
      long double *ss = nsl__big_calloc((size_t)(ng ? ng : 1), sizeof *ss);
      if (!ss) goto nomem;
      for (int64_t i = 0; i < n; i++) {
        int64_t k = go[i];
        if (k < 0 || nsl__is_null(values, i)) continue;
        int null;
        long double d = (fp ? (long double)nsl_f64(values)[i]
                            : (long double)nsl__int_at(values, i, &null)) - (long double)o[k];
        ss[k] += d * d;
      }
      for (int64_t k = 0; k < ng; k++)
        o[k] = s.count[k] == 0   ? NAN
               : s.count[k] == 1 ? 0.0
                                 : sqrt((double)(ss[k] / (long double)(s.count[k] - 1)));
      free(ss);
    }
    break;
  }
  case NSL_AGG_MIN:
  case NSL_AGG_MAX:
    r = agg_minmax(go, ng, values, agg == NSL_AGG_MAX, err);
    break;
  case NSL_AGG_MEDIAN:
  case NSL_AGG_QUANTILE:
  case NSL_AGG_COUNT_DISTINCT: {
    if (contiguous_codes(go, ng, values, &codes, &off) != 0) goto nomem;
    int distinct = agg == NSL_AGG_COUNT_DISTINCT;
    int64_t maxn = 0;
    for (int64_t k = 0; k < ng; k++)
      if (off[k + 1] - off[k] > maxn) maxn = off[k + 1] - off[k];
    if (distinct && !(tmp = malloc((size_t)(maxn ? maxn : 1) * sizeof *tmp))) goto nomem;
    if (!(r = nsl_column_new(distinct ? NSL_I64 : NSL_F64, ng, NULL))) goto nomem;
    for (int64_t k = 0; k < ng; k++) {
      uint64_t *a = codes + off[k];
      int64_t m = off[k + 1] - off[k];
      if (distinct) {
        nsl__sort_u64(a, m, tmp);
        int64_t d = m > 0;
        for (int64_t i = 1; i < m; i++) d += a[i] != a[i - 1];
        nsl_i64(r)[k] = d;
        continue;
      }
      if (m == 0) {
        nsl_f64(r)[k] = NAN;
        continue;
      }
      double frac;
      int64_t j = nsl__quantile_pos(m, q, &frac);
      nsl__select_u64(a, m, j);
      uint64_t hi = a[j];
      if (frac > 0) {
        hi = a[j + 1];
        for (int64_t i = j + 2; i < m; i++)
          if (a[i] < hi) hi = a[i];
      }
      nsl_f64(r)[k] = nsl__lerp_codes(values->type, a[j], hi, frac);
    }
    break;
  }
  case NSL_AGG_FIRST:
  case NSL_AGG_LAST: {
    nsl_column *rc = nsl_column_new(NSL_I64, ng, NULL);
    if (!rc) goto nomem;
    rows = nsl_i64(rc);
    for (int64_t k = 0; k < ng; k++) rows[k] = -1;
    for (int64_t i = 0; i < n; i++) {
      int64_t k = go[i];
      if (k < 0 || nsl__is_null(values, i)) continue;
      if (agg == NSL_AGG_LAST || rows[k] < 0) rows[k] = i;
    }
    r = nsl_col_gather(values, rc, err);
    nsl_column_release(rc);
    rows = NULL;
    break;
  }
  }
  goto done;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "group %s: out of memory for %lld rows in %lld groups", an,
                (long long)n, (long long)ng);
  nsl_column_release(r);
  r = NULL;
done:
  sums_free(&s);
  free(codes);
  free(tmp);
  free(off);
  return r;
}
