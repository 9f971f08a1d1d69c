/* groupby.c -- group-by on key tuples and the join on key tuples
 * (nsl_join_index), which is a group-by of the right side probed with the
 * left side.  Aggregates per group: aggregate.c.
 *
 * Keys are read as equality codes (kernels_internal.h), a block of rows at
 * a time (integer, string and bool keys straight from their columns).  When
 * the keys' ranges multiply to at most 2^64, a key tuple is one mixed-radix
 * number; when that product is small (device, stream, report, string ids,
 * dense correlation ids) the number indexes a direct table, else an
 * open-addressing hash table keyed by it maps the tuple to its group.
 * Tuples too wide for one number are hashed and compared key by key.
 * Group ids are given in order of first appearance.  Memory grows with the
 * number of groups, never per row. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"

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
  uint64_t h;   /* the key itself (radix number, or one key's code) or the tuple hash */
  int64_t g;    /* group, -1 empty */
} slot;

typedef struct key_table {
  int nk;
  /* tuples as mixed-radix numbers: sum over keys of (code - kmin + 1) * stride,
   * a NULL key adding 0; possible when the keys' ranges multiply to at most 2^64 */
  int radix;
  uint64_t *kmin, *span, *stride;   /* per key: least code, codes + NULL slot, place value */
  /* direct table: the radix number indexes it */
  int dense;
  int32_t *dtab;
  uint64_t dsize;
  /* hash table */
  slot *slots;
  uint64_t cap;              /* slots: any size (a key's first slot is home(), not a power-of-two mask) */
  int exact;                 /* slot.h is the key itself (radix, or one key): no tuple compare */
  int slot_rows;             /* slot.g holds the group's first row, not its id (exact tables for joins) */
  /* groups */
  int64_t ngroups, gcap;
  uint64_t *gkeys;           /* ngroups * nk codes (hashed tuples only) */
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

/* A key whose codes are read straight from its column (integers, string
 * ids, bools), without a code buffer. */
static inline int direct_key(const key_col *k) { return k->mode == KEY_EQ && k->col->type != NSL_F64; }

/* Runs body with `c` the equality code of row (off + i) of direct key col,
 * for i in [0, m): the loop typed once per block. */
#define FOR_DIRECT_CODES(col, off, m, body)                                                        \
  do {                                                                                             \
    switch ((col)->type) {                                                                         \
    case NSL_I64: {                                                                                \
      const int64_t *a_ = nsl_i64(col) + (off);                                                    \
      for (int64_t i = 0; i < (m); i++) {                                                          \
        uint64_t c = nsl__ocode_i64(a_[i]);                                                        \
        body;                                                                                      \
      }                                                                                            \
      break;                                                                                       \
    }                                                                                              \
    case NSL_I32: {                                                                                \
      const int32_t *a_ = nsl_i32(col) + (off);                                                    \
      for (int64_t i = 0; i < (m); i++) {                                                          \
        uint64_t c = nsl__ocode_i32(a_[i]);                                                        \
        body;                                                                                      \
      }                                                                                            \
      break;                                                                                       \
    }                                                                                              \
    case NSL_STR: {                                                                                \
      const int32_t *a_ = nsl_i32(col) + (off);                                                    \
      for (int64_t i = 0; i < (m); i++) {                                                          \
        uint64_t c = a_[i] < 0 ? 0 : (uint64_t)a_[i] + 1;                                         \
        body;                                                                                      \
      }                                                                                            \
      break;                                                                                       \
    }                                                                                              \
    default: {                                                                                     \
      const uint8_t *a_ = nsl_bool(col) + (off);                                                   \
      for (int64_t i = 0; i < (m); i++) {                                                          \
        uint64_t c = nsl__ocode_i64(a_[i]);                                                        \
        body;                                                                                      \
      }                                                                                            \
    }                                                                                              \
    }                                                                                              \
  } while (0)

static void key_table_free(key_table *t) {
  free(t->kmin);
  free(t->span);
  free(t->stride);
  nsl__big_free(t->dtab);
  nsl__big_free(t->slots);
  free(t->gkeys);
  nsl__big_free(t->first_row);
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

/* The least and greatest non-NULL value of x[0..n) as order codes via
 * code(), where NULL is null0, the type's least value (so any other value
 * raises the maximum); lo > hi when every value is NULL.  Min and max in
 * the column's own type, so the loop vectorizes. */
#define NATIVE_RANGE(T, x, n, null0, tmax, code)                                                     \
  do {                                                                                             \
    T mn = tmax, mx = null0;                                                                       \
    for (int64_t i = 0; i < (n); i++) {                                                            \
      T y = (x)[i];                                                                                \
      mn = y != (null0) && y < mn ? y : mn;                                                        \
      mx = y > mx ? y : mx;                                                                        \
    }                                                                                              \
    if (mx != (null0)) {                                                                           \
      lo = code(mn);                                                                               \
      hi = code(mx);                                                                               \
    }                                                                                              \
  } while (0)

/* The least and greatest non-NULL code of a key over rows [a, b) (lo > hi
 * when every row is NULL). */
static void key_range_rows(const key_col *k, int64_t a, int64_t b, uint64_t *lo_out, uint64_t *hi_out) {
  uint64_t lo = UINT64_MAX, hi = 0;
  const nsl_column *col = k->col;
  int64_t n = b - a;
  if (k->mode == KEY_EQ && col->type == NSL_I64)
    NATIVE_RANGE(int64_t, nsl_i64(col) + a, n, NSL_NULL_I64, INT64_MAX, nsl__ocode_i64);
  else if (k->mode == KEY_EQ && col->type == NSL_I32)
    NATIVE_RANGE(int32_t, nsl_i32(col) + a, n, NSL_NULL_I32, INT32_MAX, nsl__ocode_i32);
  else if (k->mode == KEY_EQ && col->type == NSL_STR) {   /* any negative id is NULL */
    const int32_t *x = nsl_i32(col) + a;
    int32_t mn = INT32_MAX, mx = -1;
    for (int64_t i = 0; i < n; i++) {
      int32_t y = x[i];
      mn = y >= 0 && y < mn ? y : mn;
      mx = y > mx ? y : mx;
    }
    if (mx >= 0) {
      lo = (uint64_t)mn + 1;
      hi = (uint64_t)mx + 1;
    }
  }
  else if (direct_key(k))
    FOR_DIRECT_CODES(col, a, n, {
      lo = c && c < lo ? c : lo;
      hi = c > hi ? c : hi;
    });
  else {
    uint64_t buf[BLOCK];
    key_col kk = *k;   /* (KEY_EQ or KEY_F64: key_codes writes nothing of it) */
    for (int64_t off = a; off < b; off += BLOCK) {
      int64_t m = b - off < BLOCK ? b - off : BLOCK;
      key_codes(&kk, off, m, buf);
      for (int64_t i = 0; i < m; i++) {
        uint64_t x = buf[i];
        if (x && x < lo) lo = x;
        if (x > hi) hi = x;
      }
    }
  }
  *lo_out = lo;
  *hi_out = hi;
}

/* key_range's parts (nsl__run_rows): each part's extremes at its index. */
enum { RANGE_PARTS = 64 };
typedef struct range_job {
  const key_col *k;
  int64_t per;
  uint64_t lo[RANGE_PARTS], hi[RANGE_PARTS];
} range_job;

static void range_rows(void *p, int64_t lo, int64_t hi) {
  range_job *j = p;
  int64_t part = lo / j->per;
  key_range_rows(j->k, lo, hi, &j->lo[part], &j->hi[part]);
}

/* The least and greatest non-NULL code of a key over n rows (lo > hi when
 * every row is NULL), the rows split over the threads (a translating key,
 * whose cache fills as it reads, in one pass). */
static void key_range(key_col *k, int64_t n, uint64_t *lo_out, uint64_t *hi_out) {
  if (k->mode == KEY_XLATE || nsl__rows_per_part(n) >= n) {
    key_range_rows(k, 0, n, lo_out, hi_out);
    return;
  }
  range_job j;
  j.k = k;
  j.per = nsl__rows_per_part(n);
  for (int p = 0; p < RANGE_PARTS; p++) {
    j.lo[p] = UINT64_MAX;
    j.hi[p] = 0;
  }
  nsl__run_rows(n, range_rows, &j);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int p = 0; p < RANGE_PARTS; p++) {
    lo = j.lo[p] < lo ? j.lo[p] : lo;
    hi = j.hi[p] > hi ? j.hi[p] : hi;
  }
  *lo_out = lo;
  *hi_out = hi;
}
#undef NATIVE_RANGE

/* The keys' mixed-radix layout (t->kmin, span, stride; t->radix when their
 * spans multiply to at most 2^64) of a table t with nk keys and nothing
 * else yet; *whole receives the product.  NSL_ERR_NOMEM, or NSL_OK. */
static nsl_status radix_layout(key_table *t, key_col *keys, int nk, int64_t n, uint64_t *whole_out) {
  memset(t, 0, sizeof *t);
  t->nk = nk;
  t->kmin = calloc((size_t)nk, sizeof *t->kmin);
  t->span = calloc((size_t)nk, sizeof *t->span);
  t->stride = calloc((size_t)nk, sizeof *t->stride);
  if (!t->kmin || !t->span || !t->stride) return NSL_ERR_NOMEM;
  __extension__ unsigned __int128 whole = 1;   /* product of the spans so far: at most 2^64 */
  int radix = n > 0;
  for (int k = nk - 1; k >= 0 && radix; k--) {
    uint64_t lo, hi;
    key_range(&keys[k], n, &lo, &hi);
    if (lo <= hi && hi - lo >= UINT64_MAX - 1) radix = 0;   /* values plus a NULL slot do not fit */
    uint64_t span = lo > hi ? 1 : hi - lo + 2;
    if (!radix || whole * span > (__extension__(unsigned __int128)1 << 64)) {
      radix = 0;
      break;
    }
    t->kmin[k] = lo > hi ? 0 : lo;
    t->span[k] = span;
    t->stride[k] = (uint64_t)whole;
    whole *= span;
  }
  t->radix = radix;
  /* (2^64 itself as UINT64_MAX: above every limit) */
  *whole_out = !radix ? 0 : whole > (__extension__(unsigned __int128)UINT64_MAX) ? UINT64_MAX : (uint64_t)whole;
  return NSL_OK;
}

/* The most entries of a direct table for n rows: a few per row. */
static uint64_t direct_limit(int64_t n) {
  uint64_t limit = (uint64_t)n * 2 + 65536;
  return limit > (1ull << 27) ? 1ull << 27 : limit;
}

/* Slots of a join's hash table (its index of one side's keys) per group
 * expected: the other side's rows probe it, and where most of them find
 * nothing, each miss walks from its first slot on to an empty one (about
 * 2.5 slots in a table half full, 1.1 an eighth full): a small table is
 * kept an eighth full (up to 2^20 slots, 16 MiB), a larger one half. */
static uint64_t join_slots(uint64_t est) { return est * 8 <= (1u << 20) ? 8 : 2; }

/* Reads the keys' ranges: radix numbers when their spans (each plus a NULL
 * slot) multiply to at most 2^64, and a direct table indexed by them when
 * that product is at most direct_limit; else a hash table, at most half
 * full as estimated (for a join, join_slots). */
static nsl_status key_table_init(key_table *t, key_col *keys, int nk, int64_t n, int join, nsl_error *err) {
  uint64_t est, whole;
  if (radix_layout(t, keys, nk, n, &whole) != NSL_OK) goto nomem;
  if (t->radix && whole <= direct_limit(n)) {
    uint64_t prod = (uint64_t)whole;
    t->dense = 1;
    t->dsize = prod;
    t->dtab = nsl__big_alloc(prod * sizeof *t->dtab);
    if (!t->dtab) goto nomem;
    memset(t->dtab, 0xff, prod * sizeof *t->dtab);
    est = prod < (uint64_t)n ? prod : (uint64_t)n;
  } else {
    est = estimate_groups(keys, nk, n);
    uint64_t per = join ? join_slots(est) : 2, cap = est * per > 1024 ? est * per : 1024;
    t->slots = nsl__big_alloc(cap * sizeof *t->slots);
    if (!t->slots) goto nomem;
    for (uint64_t s = 0; s < cap; s++) t->slots[s].g = -1;
    t->cap = cap;
    t->exact = t->radix || nk == 1;
  }
  /* room for the expected groups up front (untouched pages cost nothing) */
  t->gcap = est > 1024 ? (int64_t)est : 1024;
  if (!(t->first_row = nsl__big_alloc((size_t)t->gcap * sizeof *t->first_row))) goto nomem;
  if (t->slots && !t->exact && !(t->gkeys = malloc((size_t)t->gcap * (size_t)nk * sizeof *t->gkeys))) goto nomem;
  return NSL_OK;
nomem:
  key_table_free(t);
  return nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory");
}

/* The group of key h (codes: its tuple, for hashed tuples), searched from
 * slot s = home(h); *slot_out: where it is or would go. */
/* The first slot of key h in a table of cap slots: the hash scaled onto
 * [0, cap) by a multiply (so the table needs no power-of-two size). */
static inline uint64_t home(uint64_t h, uint64_t cap) {
  return (uint64_t)(((__extension__(unsigned __int128)nsl__mix64(h)) * cap) >> 64);
}

static inline int64_t hash_find(const key_table *t, const uint64_t *codes, uint64_t h, uint64_t s,
                                uint64_t *slot_out) {
  for (;;) {
    int64_t g = t->slots[s].g;
    if (g < 0) break;
    if (t->slots[s].h == h &&
        (t->exact || memcmp(t->gkeys + (size_t)g * (size_t)t->nk, codes, (size_t)t->nk * 8) == 0))
      break;
    s = s + 1 == t->cap ? 0 : s + 1;
  }
  *slot_out = s;
  return t->slots[s].g;
}

/* 1 when the table is over 3/4 full. */
static inline int crowded(const key_table *t) { return (uint64_t)t->ngroups * 4 > t->cap * 3; }

static int grow_slots(key_table *t) {
  uint64_t cap = t->cap * 2;
  slot *ns = nsl__big_alloc(cap * sizeof *ns);
  if (!ns) return -1;
  for (uint64_t s = 0; s < cap; s++) ns[s].g = -1;
  for (uint64_t s = 0; s < t->cap; s++) {
    if (t->slots[s].g < 0) continue;
    uint64_t j = home(t->slots[s].h, cap);
    while (ns[j].g >= 0) j = j + 1 == cap ? 0 : j + 1;
    ns[j] = t->slots[s];
  }
  nsl__big_free(t->slots);
  t->slots = ns;
  t->cap = cap;
  return 0;
}

/* Adds a group for codes (read only for hashed tuples), first seen at row;
 * returns its id or -1.  Tables whose slots hold rows count groups only. */
static int64_t new_group(key_table *t, const uint64_t *codes, int64_t row) {
  if (t->slot_rows) return t->ngroups++;
  if (t->ngroups == t->gcap) {
    int64_t cap = t->gcap ? t->gcap * 2 : 1024;
    if (t->gkeys) {
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
  if (t->gkeys) memcpy(t->gkeys + (size_t)g * (size_t)t->nk, codes, (size_t)t->nk * sizeof *codes);
  t->first_row[g] = row;
  return g;
}

#define PREFETCH 16   /* rows ahead whose table entry is prefetched */

/* For the m rows of a block: the radix number (or, for hashed tuples, the
 * tuple hash; one key without radix numbers: its code) of each row into
 * pos, and skip[i] set for rows that match nothing: a NULL key when
 * skip_null, or (probing) a key outside the table's ranges.  Codes come from
 * buf (key k's at buf[k * BLOCK + i]), or, with buf NULL, straight from the
 * direct keys' columns at rows off.. */
static void block_positions(const key_table *t, const key_col *keys, const uint64_t *buf, int64_t off, int64_t m,
                            int skip_null, int probing, uint64_t *pos, uint8_t *skip) {
  int nk = t->nk;
  memset(skip, 0, (size_t)m);
  if (t->radix) {   /* key by key over the block: sum of (code - min + 1) * stride */
    memset(pos, 0, (size_t)m * sizeof *pos);
    uint8_t sn = (uint8_t)skip_null;
    for (int k = 0; k < nk; k++) {
      uint64_t kmin = t->kmin[k], base = kmin - 1, span = t->span[k], stride = t->stride[k];
      if (buf) {
        const uint64_t *cb = buf + (size_t)k * BLOCK;
        for (int64_t i = 0; i < m; i++) {
          uint64_t c = cb[i], x = c ? c - base : 0;   /* 1.. for values, 0 for NULL */
          skip[i] |= (uint8_t)((sn & (c == 0)) | (probing & (c != 0) & ((c < kmin) | (x >= span))));
          pos[i] += x * stride;
        }
      } else if (probing)
        FOR_DIRECT_CODES(keys[k].col, off, m, {
          uint64_t x = c ? c - base : 0;
          skip[i] |= (uint8_t)((sn & (c == 0)) | ((c != 0) & ((c < kmin) | (x >= span))));
          pos[i] += x * stride;
        });
      else   /* building: every code lies in its range */
        FOR_DIRECT_CODES(keys[k].col, off, m, {
          pos[i] += (c ? c - base : 0) * stride;
          skip[i] |= (uint8_t)(sn & (c == 0));
        });
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

/* 1 when the keys' codes can be read straight from their columns into radix
 * numbers (no code buffer). */
static int all_direct(const key_table *t, const key_col *keys) {
  int direct = t->radix;
  for (int k = 0; k < t->nk; k++) direct = direct && direct_key(&keys[k]);
  return direct;
}

static inline void tuple_at(const uint64_t *buf, int nk, int64_t i, uint64_t *tup) {
  for (int k = 0; k < nk; k++) tup[k] = buf[(size_t)k * BLOCK + i];
}

/* Scratch of one pass over the rows: the codes of a block of rows per key
 * (none when they are read straight from the columns) and one key tuple.
 * Initialised in place (tup may point into it). */
typedef struct key_pass {
  uint64_t *buf, *tup, codes[64];
  int direct;
} key_pass;

static void key_pass_free(key_pass *p) {
  free(p->buf);
  if (p->tup != p->codes) free(p->tup);
  memset(p, 0, sizeof *p);
}

static nsl_status key_pass_init(key_pass *p, const key_table *t, const key_col *keys, int nk) {
  memset(p, 0, sizeof *p);
  p->direct = all_direct(t, keys);
  p->tup = nk <= 64 ? p->codes : malloc((size_t)nk * sizeof *p->tup);
  p->buf = p->direct ? NULL : malloc((size_t)nk * BLOCK * sizeof *p->buf);
  if (!p->tup || (!p->direct && !p->buf)) {
    key_pass_free(p);
    return NSL_ERR_NOMEM;
  }
  return NSL_OK;
}

/* The groups of rows off..off+m-1 (m <= BLOCK) into go[0..m) (may be NULL),
 * adding a group for each tuple not seen before.  skip_null: rows with a
 * NULL key join no group (-1).  NSL_ERR_NOMEM when a group cannot be added. */
static nsl_status key_table_assign(key_table *t, key_col *keys, key_pass *p, int64_t off, int64_t m, int skip_null,
                                   int64_t *go) {
  int nk = t->nk;
  uint64_t *buf = p->buf, *tup = p->tup, pos[BLOCK];
  uint8_t skip[BLOCK];
  if (!p->direct)
    for (int k = 0; k < nk; k++) key_codes(&keys[k], off, m, buf + (size_t)k * BLOCK);
  block_positions(t, keys, buf, off, m, skip_null, 0, pos, skip);
  if (t->dense) {
    for (int64_t i = 0; i < m; i++) {
      int64_t g = -1;
      if (i + PREFETCH < m) __builtin_prefetch(&t->dtab[pos[i + PREFETCH]]);
      if (!skip[i] && (g = t->dtab[pos[i]]) < 0) {   /* a new group (rare) */
        if ((g = new_group(t, NULL, off + i)) < 0) return NSL_ERR_NOMEM;
        t->dtab[pos[i]] = (int32_t)g;   /* groups <= dsize <= 2^27 */
      }
      if (go) go[i] = g;
    }
    return NSL_OK;
  }
  uint64_t hx[BLOCK];   /* each row's first slot */
  for (int64_t i = 0; i < m; i++) hx[i] = home(pos[i], t->cap);
  for (int64_t i = 0; i < m; i++) {
    int64_t g = -1;
    if (i + PREFETCH < m) __builtin_prefetch(&t->slots[hx[i + PREFETCH]]);
    if (!skip[i]) {
      uint64_t sl;
      if (!t->exact) tuple_at(buf, nk, i, tup);
      if ((g = hash_find(t, tup, pos[i], hx[i], &sl)) < 0) {
        if ((g = new_group(t, tup, off + i)) < 0) return NSL_ERR_NOMEM;
        t->slots[sl] = (slot){pos[i], t->slot_rows ? off + i : g};
        if (crowded(t)) {   /* a bigger table: the block's first slots move */
          if (grow_slots(t) != 0) return NSL_ERR_NOMEM;
          for (int64_t k = i + 1; k < m; k++) hx[k] = home(pos[k], t->cap);
        }
      }
    }
    if (go) go[i] = g;
  }
  return NSL_OK;
}

/* A direct table's positions over the threads: each part of the rows
 * writes its rows' positions (-1: a skipped row) into out (nsl__run_rows);
 * the table and the keys are only read. */
typedef struct positions_job {
  const key_table *t;
  const key_col *keys;
  int skip_null, direct;
  int64_t *out;
  atomic_int failed;
} positions_job;

static void positions_rows(void *p, int64_t lo, int64_t hi) {
  positions_job *j = p;
  int nk = j->t->nk;
  uint64_t *buf = j->direct ? NULL : malloc((size_t)nk * BLOCK * sizeof *buf), pos[BLOCK];
  uint8_t skip[BLOCK];
  if (!j->direct && !buf) {
    atomic_store(&j->failed, 1);
    return;
  }
  for (int64_t off = lo; off < hi; off += BLOCK) {
    int64_t m = hi - off < BLOCK ? hi - off : BLOCK;
    if (buf)
      for (int k = 0; k < nk; k++) {
        key_col kk = j->keys[k];   /* (KEY_EQ or KEY_F64: key_codes writes nothing of it) */
        key_codes(&kk, off, m, buf + (size_t)k * BLOCK);
      }
    block_positions(j->t, j->keys, buf, off, m, j->skip_null, 0, pos, skip);
    for (int64_t i = 0; i < m; i++) j->out[off + i] = skip[i] ? -1 : (int64_t)pos[i];
  }
  free(buf);
}

/* key_table_build for a direct table with group_of (t->dense): the rows'
 * positions in parts over the threads, into group_of, then each row's group
 * in row order (a group's id is the order of its first row, as one pass
 * gives).  Returns NSL_ERR_NOMEM, or -1 when it did nothing (the caller
 * then assigns in one pass). */
static int assign_dense_parallel(key_table *t, const key_col *keys, int64_t n, int skip_null, int64_t *group_of) {
  if (nsl__rows_per_part(n) >= n) return -1;
  for (int k = 0; k < t->nk; k++)
    if (keys[k].mode == KEY_XLATE) return -1;
  positions_job j = {t, keys, skip_null, all_direct(t, keys), group_of, 0};
  nsl__run_rows(n, positions_rows, &j);
  if (atomic_load(&j.failed)) return NSL_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) {
    int64_t g = -1, at = group_of[i];
    if (i + PREFETCH < n && group_of[i + PREFETCH] >= 0) __builtin_prefetch(&t->dtab[group_of[i + PREFETCH]]);
    if (at >= 0 && (g = t->dtab[at]) < 0) {   /* a new group (rare) */
      if ((g = new_group(t, NULL, i)) < 0) return NSL_ERR_NOMEM;
      t->dtab[at] = (int32_t)g;   /* groups <= dsize <= 2^27 */
    }
    group_of[i] = g;
  }
  return NSL_OK;
}

/* Groups the n rows of keys; group_of (may be NULL) receives each row's
 * group.  skip_null: rows with a NULL key join no group (-1).  Without
 * group_of, the slots of a hash table of exact keys hold each group's first
 * row instead of its id (a join then finds the row in one step). */
static nsl_status key_table_build(key_table *t, key_col *keys, int nk, int64_t n, int skip_null,
                                  int64_t *group_of, nsl_error *err) {
  nsl_status rc = key_table_init(t, keys, nk, n, !group_of, err);   /* (no group ids: a join's index, or a count) */
  if (rc != NSL_OK) return rc;
  t->slot_rows = !group_of && t->exact;
  if (t->dense && group_of) {
    int r = assign_dense_parallel(t, keys, n, skip_null, group_of);
    if (r == NSL_OK) return NSL_OK;
    if (r != -1) goto nomem;
  }
  key_pass p;
  if (key_pass_init(&p, t, keys, nk) != NSL_OK) goto nomem;
  for (int64_t off = 0; off < n; off += BLOCK) {
    int64_t m = n - off < BLOCK ? n - off : BLOCK;
    if (key_table_assign(t, keys, &p, off, m, skip_null, group_of ? group_of + off : NULL) != NSL_OK) {
      key_pass_free(&p);
      goto nomem;
    }
  }
  key_pass_free(&p);
  return NSL_OK;
nomem:
  key_table_free(t);
  return nsl_error_set(err, NSL_ERR_NOMEM, "group-by: out of memory");
}

/* The groups of the m rows of a block at rows off.. into out (their first
 * rows when the slots hold rows), -1 where none matches; codes in buf as key_table_build reads them, or (buf NULL) read
 * straight from the direct keys' columns.  tup: scratch of nk codes. */
static void key_table_probe(const key_table *t, const key_col *keys, const uint64_t *buf, int64_t off, int64_t m,
                            uint64_t *tup, int64_t *out) {
  uint64_t pos[BLOCK];
  uint8_t skip[BLOCK];
  block_positions(t, keys, buf, off, m, 1, 1, pos, skip);
  uint64_t hx[BLOCK];   /* each row's first slot */
  if (!t->dense)
    for (int64_t i = 0; i < m; i++) hx[i] = home(pos[i], t->cap);
  for (int64_t i = 0; i < m; i++) {
    int64_t g = -1;
    if (t->dense) {
      if (i + PREFETCH < m) __builtin_prefetch(&t->dtab[pos[i + PREFETCH]]);
      if (!skip[i]) g = t->dtab[pos[i]];
    } else {
      if (i + PREFETCH < m) __builtin_prefetch(&t->slots[hx[i + PREFETCH]]);
      if (!skip[i]) {
        uint64_t sl;
        if (!t->exact) tuple_at(buf, t->nk, i, tup);
        g = hash_find(t, tup, pos[i], hx[i], &sl);
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

/* ---- groups given by number ------------------------------------------------------- */

nsl_status nsl_groups_by_id(const nsl_column *ids, int64_t ngroups, nsl_groups *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "groups by id: no output");
  memset(out, 0, sizeof *out);
  if (!ids || (ids->type != NSL_I64 && ids->type != NSL_I32))
    return nsl_error_set(err, NSL_ERR_ARG, "groups by id: the ids must be an integer column");
  if (ngroups < 0) return nsl_error_set(err, NSL_ERR_ARG, "groups by id: %lld groups", (long long)ngroups);
  out->group_of = ids->type == NSL_I64 ? nsl_column_retain((nsl_column *)ids) : nsl_column_cast(ids, NSL_I64, err);
  if (!out->group_of) return err ? err->code : NSL_ERR_NOMEM;
  const int64_t *g = nsl_i64(out->group_of);
  for (int64_t i = 0; i < out->group_of->len; i++)
    if (g[i] >= ngroups) {
      nsl_error_set(err, NSL_ERR_ARG, "groups by id: row %lld has id %lld, not below %lld", (long long)i,
                    (long long)g[i], (long long)ngroups);
      nsl_groups_free(out);
      return NSL_ERR_ARG;
    }
  out->ngroups = ngroups;
  out->checked = 1;
  return NSL_OK;
}

/* ---- distinct tuples, counted ----------------------------------------------------- */

/* The number of distinct key tuples (what nsl_groupby's ngroups would be)
 * without a group id per row: tuples that make mixed-radix numbers too wide
 * for a direct table are sorted as those numbers (two arrays of n words,
 * read in order) and their runs counted, instead of a hash table of 2n
 * slots probed at random; other keys go through the group table without
 * ids. */
nsl_status nsl_count_distinct(const nsl_column *const *keys, int nkeys, int64_t *count, nsl_error *err) {
  if (!count) return nsl_error_set(err, NSL_ERR_ARG, "distinct count: no output");
  *count = 0;
  nsl_status rc = nsl__check_keys(keys, nkeys, "distinct count", err);
  if (rc != NSL_OK) return rc;
  int64_t n = keys[0]->len;
  if (n == 0) return NSL_OK;
  key_col *kc = calloc((size_t)nkeys, sizeof *kc);
  if (!kc) return nsl_error_set(err, NSL_ERR_NOMEM, "distinct count: out of memory");
  for (int k = 0; k < nkeys; k++) kc[k] = (key_col){keys[k], KEY_EQ, NULL, NULL};
  key_table t;
  uint64_t whole, *a = NULL, *tmp = NULL;
  key_pass p = {0};
  int oom = 0;   /* out of memory here (key_table_build says so itself) */
  if (radix_layout(&t, kc, nkeys, n, &whole) != NSL_OK) {
    oom = 1;
  } else if (!t.radix || whole <= direct_limit(n)) {   /* a direct table, or hashed tuples: the group table, no ids */
    key_table_free(&t);
    if ((rc = key_table_build(&t, kc, nkeys, n, 0, NULL, err)) == NSL_OK) *count = t.ngroups;
  } else if (!(a = nsl__big_alloc((size_t)n * sizeof *a)) || !(tmp = nsl__big_alloc((size_t)n * sizeof *tmp)) ||
             key_pass_init(&p, &t, kc, nkeys) != NSL_OK) {
    oom = 1;
  } else {
    uint8_t skip[BLOCK];
    for (int64_t off = 0; off < n; off += BLOCK) {
      int64_t m = n - off < BLOCK ? n - off : BLOCK;
      if (!p.direct)
        for (int k = 0; k < nkeys; k++) key_codes(&kc[k], off, m, p.buf + (size_t)k * BLOCK);
      block_positions(&t, kc, p.buf, off, m, 0, 0, a + off, skip);
    }
    int bits = 64 - __builtin_clzll(whole - 1);   /* the numbers lie in [0, whole) */
    const uint64_t *sorted = nsl__radix_u64(a, tmp, n, 0, bits);
    int64_t runs = 1;
    for (int64_t i = 1; i < n; i++) runs += sorted[i] != sorted[i - 1];
    *count = runs;
  }
  key_pass_free(&p);
  nsl__big_free(a);
  nsl__big_free(tmp);
  key_table_free(&t);
  free(kc);
  return oom ? nsl_error_set(err, NSL_ERR_NOMEM, "distinct count: out of memory for %lld rows", (long long)n) : rc;
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
  if (key_table_init(&gr->t, gr->keys, nkeys, keys[0]->len, 0, err) != NSL_OK) {
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

/* The probe of a join cut into parts of the left rows, run at once (the
 * table is only read). */
typedef struct probe_run {
  const key_table *t;
  key_col *lk;
  int64_t nl, nparts;
  int64_t *out;
  atomic_int failed;
} probe_run;

static void probe_part(void *ctx, int part) {
  probe_run *pr = ctx;
  const key_table *t = pr->t;
  int nk = t->nk, direct = all_direct(t, pr->lk);
  int64_t lo = pr->nl * part / pr->nparts, hi = pr->nl * (part + 1) / pr->nparts, gb[BLOCK];
  uint64_t *buf = direct ? NULL : malloc((size_t)nk * BLOCK * sizeof *buf), *tup = malloc((size_t)nk * sizeof *tup);
  if ((!direct && !buf) || !tup) {
    atomic_store(&pr->failed, 1);
    goto done;
  }
  for (int64_t off = lo; off < hi; off += BLOCK) {
    int64_t m = hi - off < BLOCK ? hi - off : BLOCK;
    if (!direct)
      for (int k = 0; k < nk; k++) key_codes(&pr->lk[k], off, m, buf + (size_t)k * BLOCK);
    key_table_probe(t, pr->lk, buf, off, m, tup, gb);
    if (t->slot_rows) memcpy(pr->out + off, gb, (size_t)m * sizeof *gb);
    else
      for (int64_t i = 0; i < m; i++) pr->out[off + i] = gb[i] < 0 ? -1 : t->first_row[gb[i]];
  }
done:
  free(buf);
  free(tup);
}

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
  if (!(res = nsl_column_new(NSL_I64, nl, NULL))) goto nomem;
  int xlate = 0;   /* translated string keys fill a lookup cache as they go: one part */
  for (int k = 0; k < nkeys; k++) xlate |= lk[k].mode == KEY_XLATE;
  int threads = xlate || nl < 65536 ? 1 : nsl__thread_count(64);
  probe_run pr = {&t, lk, nl, threads > 1 ? 4 * threads : 1, nsl_i64(res), 0};
  nsl__run_parallel((int)pr.nparts, threads, probe_part, &pr);
  if (atomic_load(&pr.failed)) goto nomem;
  goto done;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "join: out of memory (%lld and %lld rows)", (long long)nl, (long long)nr);
fail:
  nsl_column_release(res);
  res = NULL;
done:
  if (built) key_table_free(&t);
  for (int k = 0; lk && k < nkeys; k++) free(lk[k].xl);
  free(lk);
  free(rk);
  return res;
}

/* ---- rows laid out by group, and strings joined per group ---- */

nsl_status nsl__group_order(const int64_t *group_of, int64_t n, int64_t ngroups, int64_t **start, int64_t **rows,
                            nsl_error *err) {
  *start = calloc((size_t)ngroups + 1, sizeof **start);
  *rows = malloc((size_t)(n ? n : 1) * sizeof **rows);
  int64_t *fill = malloc((size_t)(ngroups ? ngroups : 1) * sizeof *fill);
  if (!*start || !*rows || !fill) {
    free(*start);
    free(*rows);
    free(fill);
    *start = *rows = NULL;
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  for (int64_t i = 0; i < n; i++)   /* a counting sort: sizes, offsets, then the rows in order */
    if (group_of[i] >= 0 && group_of[i] < ngroups) (*start)[group_of[i] + 1]++;
  for (int64_t k = 0; k < ngroups; k++) (*start)[k + 1] += (*start)[k];
  memcpy(fill, *start, (size_t)ngroups * sizeof *fill);
  for (int64_t i = 0; i < n; i++)
    if (group_of[i] >= 0 && group_of[i] < ngroups) (*rows)[fill[group_of[i]]++] = i;
  free(fill);
  return NSL_OK;
}

nsl_column *nsl__group_concat(const nsl_column *group_of, int64_t ngroups, const nsl_column *strings, const char *sep,
                              size_t seplen, nsl_error *err) {
  if (group_of->type != NSL_I64 || strings->type != NSL_STR || group_of->len != strings->len || ngroups < 0) {
    nsl_error_set(err, NSL_ERR_ARG, "group_concat: i64 group ids as long as a string column, and a group count");
    return NULL;
  }
  int64_t *start = NULL, *rows = NULL;
  if (nsl__group_order(nsl_i64(group_of), strings->len, ngroups, &start, &rows, err) != NSL_OK) return NULL;
  nsl_dict *d = strings->dict;
  nsl_column *r = nsl_column_new(NSL_STR, ngroups, d);
  char *buf = NULL;
  size_t cap = 0;
  int oom = !r;
  nsl_status rc = NSL_OK;   /* of interning a group's text (err set) */
  for (int64_t k = 0; !oom && rc == NSL_OK && k < ngroups; k++) {
    size_t len = 0;
    int any = 0;
    for (int64_t j = start[k]; j < start[k + 1]; j++) {
      int32_t id = nsl_i32(strings)[rows[j]];
      if (id < 0) continue;
      size_t sl = nsl_dict_strlen(d, id), need = len + (any ? seplen : 0) + sl + 1;
      if (need > cap) {
        size_t ncap = cap ? cap : 256;
        while (ncap < need) ncap *= 2;
        char *p = realloc(buf, ncap);
        if (!p) {
          oom = 1;
          break;
        }
        buf = p;
        cap = ncap;
      }
      if (any) {
        memcpy(buf + len, sep, seplen);
        len += seplen;
      }
      memcpy(buf + len, nsl_dict_str(d, id), sl);
      len += sl;
      any = 1;
    }
    if (oom) break;
    nsl_i32(r)[k] = -1;
    if (any) rc = nsl_dict_intern(d, buf, len, &nsl_i32(r)[k], err);
  }
  free(buf);
  free(start);
  free(rows);
  if (oom || rc != NSL_OK) {
    nsl_column_release(r);
    if (oom) nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    return NULL;
  }
  return r;
}
