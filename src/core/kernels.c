/* kernels.c -- element-wise kernels over whole columns: comparison masks,
 * membership, mask algebra, gather, arithmetic, casts, reductions,
 * quantiles, histograms, running sums and differences.  (Sorting is in
 * sort.c, group-by and joins in groupby.c, interval algebra in intervals.c.)
 *
 * NULLs are the sentinels of nsl.h; kernels skip them or propagate them as
 * each contract says.  Functions without an nsl_error return NULL on bad
 * input or out of memory.
 *
 * A kernel's row loop is a function of a range of rows (name_rows(ctx, lo,
 * hi)) run by nsl__run_rows (parallel.h): on a large column, one part of
 * the rows per thread, each row in one part, so the bytes are one pass's;
 * reductions keep a result per part and combine them in part order. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/parallel.h"

static int valid_col(const nsl_column *c) { return c && (unsigned)c->type <= NSL_BOOL; }

#define int_at nsl__int_at

/* Three-way exact comparison of an integer with a double (d not NaN). */
static inline int cmp_i64_f64(int64_t x, double d) {
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  double t = trunc(d);
  int64_t ti = (int64_t)t;
  if (x != ti) return x < ti ? -1 : 1;
  return d > t ? -1 : d < t ? 1 : 0;
}

/* Bit (c + 1) of hits[op] says whether a three-way result c in {-1,0,1}
 * satisfies op. */
static const uint8_t hits[] = {
    [NSL_EQ] = 2, [NSL_NE] = 5, [NSL_LT] = 1, [NSL_LE] = 3, [NSL_GT] = 4, [NSL_GE] = 6};
#define HIT(op, c) ((uint8_t)((hits[op] >> ((c) + 1)) & 1))
#define CMP3(x, y) (((x) > (y)) - ((x) < (y)))

static int valid_cmp(nsl_cmp op) { return (unsigned)op <= NSL_GE; }

/* Fills err with NSL_ERR_ARG (a caller's mistake) and returns NULL. */
static nsl_column *arg_error(nsl_error *err, const char *msg) {
  nsl_error_set(err, NSL_ERR_ARG, "%s", msg);
  return NULL;
}

/* Fills err with NSL_ERR_NOMEM and returns NULL. */
static nsl_column *nomem(nsl_error *err) {
  nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  return NULL;
}

/* ---- comparison masks ----------------------------------------------------- */

/* One comparison of every row of a column with one value (cmp_i64_rows,
 * cmp_f64_rows) or of two columns row by row (cmp_col_rows), over rows
 * [lo, hi) (nsl__run_rows). */
typedef struct cmp_job {
  const nsl_column *a, *b;
  nsl_cmp op;
  int64_t v;
  double d;
  uint8_t *o;
} cmp_job;

static void cmp_i64_rows(void *p, int64_t lo, int64_t hi) {
  const cmp_job *j = p;
  const nsl_column *c = j->a;
  nsl_cmp op = j->op;
  int64_t v = j->v;
  uint8_t *o = j->o, ne = op == NSL_NE;
  switch (c->type) {
  case NSL_I64: {
    const int64_t *x = nsl_i64(c);
    for (int64_t i = lo; i < hi; i++) o[i] = x[i] == NSL_NULL_I64 ? ne : HIT(op, CMP3(x[i], v));
    break;
  }
  case NSL_I32: {
    const int32_t *x = nsl_i32(c);
    for (int64_t i = lo; i < hi; i++) o[i] = x[i] == NSL_NULL_I32 ? ne : HIT(op, CMP3((int64_t)x[i], v));
    break;
  }
  case NSL_STR: {
    const int32_t *x = nsl_i32(c);
    for (int64_t i = lo; i < hi; i++) o[i] = x[i] < 0 ? ne : HIT(op, CMP3((int64_t)x[i], v));
    break;
  }
  case NSL_BOOL: {
    const uint8_t *x = nsl_bool(c);
    for (int64_t i = lo; i < hi; i++) o[i] = HIT(op, CMP3((int64_t)x[i], v));
    break;
  }
  case NSL_F64: {
    const double *x = nsl_f64(c);
    for (int64_t i = lo; i < hi; i++) o[i] = isnan(x[i]) ? ne : HIT(op, -cmp_i64_f64(v, x[i]));
    break;
  }
  }
}

nsl_column *nsl_column_cmp_i64(const nsl_column *c, nsl_cmp op, int64_t v, nsl_error *err) {
  if (!valid_col(c) || !valid_cmp(op)) return arg_error(err, "compare: missing column or unknown operator");
  nsl_column *m = nsl__column_new_uninit(NSL_BOOL, c->len, NULL);   /* every row is written below */
  if (!m) return nomem(err);
  if (v == NSL_NULL_I64) {   /* comparing with NULL */
    memset(nsl_bool(m), op == NSL_NE, (size_t)c->len);
    return m;
  }
  cmp_job j = {c, NULL, op, v, 0, nsl_bool(m)};
  nsl__run_rows(c->len, cmp_i64_rows, &j);
  return m;
}

static void cmp_f64_rows(void *p, int64_t lo, int64_t hi) {
  const cmp_job *j = p;
  const nsl_column *c = j->a;
  nsl_cmp op = j->op;
  double v = j->d;
  uint8_t *o = j->o, ne = op == NSL_NE;
  if (c->type == NSL_F64) {
    const double *x = nsl_f64(c);
    for (int64_t i = lo; i < hi; i++) o[i] = isnan(x[i]) ? ne : HIT(op, CMP3(x[i], v));
  } else {
    for (int64_t i = lo; i < hi; i++) {
      int null;
      int64_t x = int_at(c, i, &null);
      o[i] = null ? ne : HIT(op, cmp_i64_f64(x, v));
    }
  }
}

nsl_column *nsl_column_cmp_f64(const nsl_column *c, nsl_cmp op, double v, nsl_error *err) {
  if (!valid_col(c) || !valid_cmp(op)) return arg_error(err, "compare: missing column or unknown operator");
  nsl_column *m = nsl__column_new_uninit(NSL_BOOL, c->len, NULL);   /* every row is written below */
  if (!m) return nomem(err);
  if (isnan(v)) {
    memset(nsl_bool(m), op == NSL_NE, (size_t)c->len);
    return m;
  }
  cmp_job j = {c, NULL, op, 0, v, nsl_bool(m)};
  nsl__run_rows(c->len, cmp_f64_rows, &j);
  return m;
}

/* Three-way byte-order comparison of two strings. */
static int cmp_str(const nsl_dict *da, int32_t a, const nsl_dict *db, int32_t b) {
  size_t la = nsl_dict_strlen(da, a), lb = nsl_dict_strlen(db, b);
  const char *sa = nsl_dict_str(da, a), *sb = nsl_dict_str(db, b);
  int r = memcmp(sa ? sa : "", sb ? sb : "", la < lb ? la : lb);
  if (r) return r < 0 ? -1 : 1;
  return CMP3(la, lb);
}

static void cmp_col_rows(void *p, int64_t lo, int64_t hi) {
  const cmp_job *j = p;
  const nsl_column *a = j->a, *b = j->b;
  nsl_cmp op = j->op;
  uint8_t *o = j->o, ne = op == NSL_NE;
  if (a->type == NSL_STR) {
    int by_id = a->dict == b->dict && (op == NSL_EQ || op == NSL_NE);
    const int32_t *x = nsl_i32(a), *y = nsl_i32(b);
    for (int64_t i = lo; i < hi; i++) {
      if (x[i] < 0 || y[i] < 0) o[i] = ne;
      else o[i] = HIT(op, by_id ? CMP3(x[i], y[i]) : cmp_str(a->dict, x[i], b->dict, y[i]));
    }
  } else if (a->type == NSL_F64 && b->type == NSL_F64) {
    const double *x = nsl_f64(a), *y = nsl_f64(b);
    for (int64_t i = lo; i < hi; i++) o[i] = isnan(x[i]) || isnan(y[i]) ? ne : HIT(op, CMP3(x[i], y[i]));
  } else if (a->type == NSL_F64 || b->type == NSL_F64) {
    int flip = a->type == NSL_F64;   /* compare the integer side with the double side */
    const nsl_column *ic = flip ? b : a;
    const double *y = nsl_f64(flip ? a : b);
    for (int64_t i = lo; i < hi; i++) {
      int null;
      int64_t x = int_at(ic, i, &null);
      if (null || isnan(y[i])) o[i] = ne;
      else {
        int c = cmp_i64_f64(x, y[i]);
        o[i] = HIT(op, flip ? -c : c);
      }
    }
  } else if (a->type == NSL_I64 && b->type == NSL_I64) {
    const int64_t *x = nsl_i64(a), *y = nsl_i64(b);
    for (int64_t i = lo; i < hi; i++)
      o[i] = x[i] == NSL_NULL_I64 || y[i] == NSL_NULL_I64 ? ne : HIT(op, CMP3(x[i], y[i]));
  } else if (a->type == NSL_I32 && b->type == NSL_I32) {   /* (ids, thread ids: without a type test per row) */
    const int32_t *x = nsl_i32(a), *y = nsl_i32(b);
    for (int64_t i = lo; i < hi; i++)
      o[i] = x[i] == NSL_NULL_I32 || y[i] == NSL_NULL_I32 ? ne : HIT(op, CMP3(x[i], y[i]));
  } else {
    for (int64_t i = lo; i < hi; i++) {
      int na, nb;
      int64_t x = int_at(a, i, &na), y = int_at(b, i, &nb);
      o[i] = na || nb ? ne : HIT(op, CMP3(x, y));
    }
  }
}

nsl_column *nsl_column_cmp_col(const nsl_column *a, nsl_cmp op, const nsl_column *b, nsl_error *err) {
  if (!valid_col(a) || !valid_col(b) || !valid_cmp(op)) {
    nsl_error_set(err, NSL_ERR_ARG, "compare: missing column or unknown operator");
    return NULL;
  }
  if (a->len != b->len) {
    nsl_error_set(err, NSL_ERR_ARG, "compare: columns of %lld and %lld rows", (long long)a->len,
                  (long long)b->len);
    return NULL;
  }
  if ((a->type == NSL_STR) != (b->type == NSL_STR)) {
    nsl_error_set(err, NSL_ERR_ARG, "compare: cannot compare a %s column with a %s column",
                  nsl_type_name(a->type), nsl_type_name(b->type));
    return NULL;
  }
  nsl_column *m = nsl__column_new_uninit(NSL_BOOL, a->len, NULL);   /* every row is written below */
  if (!m) {
    nsl_error_set(err, NSL_ERR_NOMEM, "compare: out of memory for %lld rows", (long long)a->len);
    return NULL;
  }
  cmp_job j = {a, b, op, 0, 0, nsl_bool(m)};
  nsl__run_rows(a->len, cmp_col_rows, &j);
  return m;
}

/* ---- membership, NULL tests ----------------------------------------------- */

/* Rows [lo, hi) of an isin (nsl__run_rows): o[i] = whether row i of c is
 * in the set (open addressing, cap slots, NSL_NULL_I64 empty; filter: one
 * bit per hash, fbits of them, or NULL), or for small ids in the table in
 * (in[id] for ids 0..hi). */
typedef struct isin_job {
  const nsl_column *c;
  uint8_t *o;
  const int64_t *set;
  uint64_t cap;
  const uint64_t *filter;
  uint64_t fbits;
  const uint8_t *in;
  int64_t hi;
} isin_job;

static void isin_small_rows(void *p, int64_t lo, int64_t hi) {
  const isin_job *j = p;
  const int32_t *restrict v = nsl_i32(j->c);   /* NULLs are negative */
  const uint8_t *restrict in = j->in;
  uint8_t *restrict o = j->o;
  const int64_t top = j->hi;
  for (int64_t i = lo; i < hi; i++) o[i] = v[i] >= 0 && v[i] <= top && in[v[i]];
}

static void isin_set_rows(void *p, int64_t lo, int64_t hi) {
  const isin_job *j = p;
  const nsl_column *c = j->c;
  const int64_t *set = j->set;
  const uint64_t *filter = j->filter;
  const uint64_t cap = j->cap, fbits = j->fbits;
  uint8_t *o = j->o;
  if (c->type == NSL_I64) {   /* the usual case, without a type test per row */
    const int64_t *v = nsl_i64(c);
    for (int64_t i = lo; i < hi; i++) {
      int64_t x = v[i];
      if (x == NSL_NULL_I64) continue;
      uint64_t mixed = nsl__mix64((uint64_t)x);
      if (filter) {
        uint64_t h = mixed >> 40 & (fbits - 1);
        if (!(filter[h >> 6] >> (h & 63) & 1)) continue;
      }
      uint64_t s = mixed & (cap - 1);
      while (set[s] != NSL_NULL_I64 && set[s] != x) s = (s + 1) & (cap - 1);
      o[i] = set[s] == x;
    }
    return;
  }
  for (int64_t i = lo; i < hi; i++) {
    int64_t x;
    if (c->type == NSL_F64) {
      double d = nsl_f64(c)[i];
      if (!(d >= -9223372036854775807.0 && d < 9223372036854775808.0) || d != trunc(d)) continue;
      x = (int64_t)d;
    } else {
      int null;
      x = int_at(c, i, &null);
      if (null) continue;
    }
    uint64_t s = nsl__mix64((uint64_t)x) & (cap - 1);
    while (set[s] != NSL_NULL_I64 && set[s] != x) s = (s + 1) & (cap - 1);
    o[i] = set[s] == x;
  }
}

nsl_column *nsl_column_isin(const nsl_column *c, const int64_t *ids, int64_t n, nsl_error *err) {
  if (!valid_col(c) || n < 0 || (n > 0 && !ids)) return arg_error(err, "isin: needs a column and a list of values");
  nsl_column *m = nsl_column_new(NSL_BOOL, c->len, NULL);
  if (!m) return nomem(err);
  if (n == 0) return m;
  uint8_t *o = nsl_bool(m);
  if (c->type == NSL_STR || c->type == NSL_I32) {   /* small ids (strings): a table indexed by the value */
    int64_t hi = -1;
    for (int64_t j = 0; j < n; j++) hi = ids[j] != NSL_NULL_I64 && ids[j] > hi ? ids[j] : hi;
    int small = hi < ((int64_t)1 << 24) || hi < c->len;
    for (int64_t j = 0; j < n && small; j++) small = ids[j] == NSL_NULL_I64 || ids[j] >= 0;
    uint8_t *in = small ? calloc((size_t)hi + 1, 1) : NULL;
    if (in) {
      for (int64_t j = 0; j < n; j++)
        if (ids[j] != NSL_NULL_I64) in[ids[j]] = 1;
      isin_job j = {c, o, NULL, 0, NULL, 0, in, hi};
      nsl__run_rows(c->len, isin_small_rows, &j);
      free(in);
      return m;
    }
  }
  /* open-addressing set of the ids; NSL_NULL_I64 marks an empty slot (a
   * NULL is never "in") */
  uint64_t cap = 16;
  while (cap < (uint64_t)n * 2) cap <<= 1;
  int64_t *set = malloc(cap * sizeof *set);
  if (!set) {
    nsl_column_release(m);
    return nomem(err);
  }
  for (uint64_t s = 0; s < cap; s++) set[s] = NSL_NULL_I64;
  for (int64_t j = 0; j < n; j++) {
    if (ids[j] == NSL_NULL_I64) continue;
    uint64_t s = nsl__mix64((uint64_t)ids[j]) & (cap - 1);
    while (set[s] != NSL_NULL_I64 && set[s] != ids[j]) s = (s + 1) & (cap - 1);
    set[s] = ids[j];
  }
  /* a set beyond the caches costs a miss per probe, and most rows probed are not in it (the ops at a few gaps'
   * edges among all ops): a filter of one bit per hash, 2 to 16 bits per id and at most 1 MiB, answers most of
   * those from the cache */
  uint64_t fbits = 0, *filter = NULL;
  if (c->type == NSL_I64 && cap * sizeof *set > ((size_t)256 << 10)) {   /* (read by the i64 loop below) */
    fbits = (uint64_t)1 << 23;
    while (fbits > 16 * (uint64_t)n && fbits > ((uint64_t)1 << 16)) fbits >>= 1;
    filter = calloc(fbits / 64, sizeof *filter);
  }
  if (filter) {
    for (int64_t j = 0; j < n; j++) {
      if (ids[j] == NSL_NULL_I64) continue;
      uint64_t h = nsl__mix64((uint64_t)ids[j]) >> 40 & (fbits - 1);
      filter[h >> 6] |= (uint64_t)1 << (h & 63);
    }
  }
  isin_job j = {c, o, set, cap, filter, fbits, NULL, 0};
  nsl__run_rows(c->len, isin_set_rows, &j);
  free(filter);
  free(set);
  return m;
}

/* One pass of a kernel that writes one row of o per row of a (and b): rows
 * [lo, hi) of it (nsl__run_rows). */
typedef struct rows_job {
  const nsl_column *a, *b;
  int flag;
  void *o;
} rows_job;

static void nulls_rows(void *p, int64_t lo, int64_t hi) {
  const rows_job *j = p;
  const nsl_column *c = j->a;
  uint8_t *restrict o = j->o;
  switch (c->type) {
  case NSL_I64: {
    const int64_t *restrict x = nsl_i64(c);
    for (int64_t i = lo; i < hi; i++) o[i] = x[i] == NSL_NULL_I64;
    break;
  }
  case NSL_I32: {
    const int32_t *restrict x = nsl_i32(c);
    for (int64_t i = lo; i < hi; i++) o[i] = x[i] == NSL_NULL_I32;
    break;
  }
  case NSL_STR: {
    const int32_t *restrict x = nsl_i32(c);
    for (int64_t i = lo; i < hi; i++) o[i] = x[i] < 0;
    break;
  }
  case NSL_F64: {
    const double *restrict x = nsl_f64(c);
    for (int64_t i = lo; i < hi; i++) o[i] = isnan(x[i]);
    break;
  }
  case NSL_BOOL: memset(o + lo, 0, (size_t)(hi - lo)); break;
  }
}

nsl_column *nsl_column_nulls(const nsl_column *c, nsl_error *err) {
  if (!valid_col(c)) return arg_error(err, "isnull: missing column");
  nsl_column *m = nsl__column_new_uninit(NSL_BOOL, c->len, NULL);   /* every row is written below */
  if (!m) return nomem(err);
  rows_job j = {c, NULL, 0, nsl_bool(m)};
  nsl__run_rows(c->len, nulls_rows, &j);
  return m;
}

/* ---- masks ------------------------------------------------------------------ */

/* (the pointers in locals: a store through o may alias the columns, which would reload them per row and keep the
 * loops from vectorising) */
static void mask_binop_rows(void *p, int64_t lo, int64_t hi) {
  const rows_job *j = p;
  const uint8_t *restrict x = nsl_bool(j->a), *restrict y = nsl_bool(j->b);
  uint8_t *restrict o = j->o;
  if (j->flag)
    for (int64_t i = lo; i < hi; i++) o[i] = (x[i] != 0) & (y[i] != 0);
  else
    for (int64_t i = lo; i < hi; i++) o[i] = (x[i] != 0) | (y[i] != 0);
}

static void mask_not_rows(void *p, int64_t lo, int64_t hi) {
  const rows_job *j = p;
  const uint8_t *restrict x = nsl_bool(j->a);
  uint8_t *restrict o = j->o;
  for (int64_t i = lo; i < hi; i++) o[i] = x[i] == 0;
}

static nsl_column *mask_binop(const nsl_column *a, const nsl_column *b, int is_and, nsl_error *err) {
  const char *what = is_and ? "mask and" : "mask or";
  if (!a || !b || a->type != NSL_BOOL || b->type != NSL_BOOL) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: both operands must be bool masks", what);
    return NULL;
  }
  if (a->len != b->len) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: masks of %lld and %lld rows", what, (long long)a->len,
                  (long long)b->len);
    return NULL;
  }
  nsl_column *m = nsl__column_new_uninit(NSL_BOOL, a->len, NULL);   /* every row is written below */
  if (!m) {
    nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", what);
    return NULL;
  }
  rows_job j = {a, b, is_and, nsl_bool(m)};
  nsl__run_rows(a->len, mask_binop_rows, &j);
  return m;
}

nsl_column *nsl_mask_and(const nsl_column *a, const nsl_column *b, nsl_error *err) {
  return mask_binop(a, b, 1, err);
}

nsl_column *nsl_mask_or(const nsl_column *a, const nsl_column *b, nsl_error *err) {
  return mask_binop(a, b, 0, err);
}

nsl_column *nsl_mask_not(const nsl_column *a, nsl_error *err) {
  if (!a || a->type != NSL_BOOL) return arg_error(err, "mask not: the operand must be a bool mask");
  nsl_column *m = nsl__column_new_uninit(NSL_BOOL, a->len, NULL);   /* every row is written below */
  if (!m) return nomem(err);
  rows_job j = {a, NULL, 0, nsl_bool(m)};
  nsl__run_rows(a->len, mask_not_rows, &j);
  return m;
}

/* See nsl_internal.h: one pass writing the result alone (the Lua form made
 * a range, a negated mask, its cast, a product and a sum for an index, the
 * concatenation of a and b, and a gather by that index). */
typedef struct where_job {
  const nsl_column *mask, *a, *b;
  size_t as, bs;   /* 0: a (b) is one value for every row */
  nsl_column *r;
} where_job;

static void where_rows(void *p, int64_t lo, int64_t hi) {
  const where_job *j = p;
  const uint8_t *restrict m = nsl_bool(j->mask);
  const size_t as = j->as, bs = j->bs;
#define WHERE_LOOP(T)                                                                  \
  do {                                                                                 \
    const T *restrict x = (const T *)j->a->data, *restrict y = (const T *)j->b->data;  \
    T *restrict o = (T *)j->r->data;                                                   \
    for (int64_t i = lo; i < hi; i++) o[i] = m[i] ? x[(size_t)i * as] : y[(size_t)i * bs]; \
  } while (0)
  switch (nsl_type_size(j->a->type)) {
  case 8: WHERE_LOOP(uint64_t); break;
  case 4: WHERE_LOOP(uint32_t); break;
  default: WHERE_LOOP(uint8_t); break;
  }
#undef WHERE_LOOP
}

nsl_column *nsl__column_where(const nsl_column *mask, const nsl_column *a, int a_one, const nsl_column *b, int b_one,
                              nsl_error *err) {
  if (!mask || mask->type != NSL_BOOL || !a || !b) return arg_error(err, "where: needs a bool mask and two columns");
  const int64_t n = mask->len;
  if (a->type != b->type || (a->type == NSL_STR && a->dict != b->dict)) {
    nsl_error_set(err, NSL_ERR_ARG, "where: values of %s and of %s%s", nsl_type_name(a->type),
                  nsl_type_name(b->type), a->type == b->type ? " with another dictionary" : "");
    return NULL;
  }
  if (a->len != (a_one ? 1 : n) || b->len != (b_one ? 1 : n)) {
    nsl_error_set(err, NSL_ERR_ARG, "where: a mask of %lld rows, values of %lld and %lld", (long long)n,
                  (long long)a->len, (long long)b->len);
    return NULL;
  }
  nsl_column *r = nsl__column_new_uninit(a->type, n, a->dict);   /* every row is written below */
  if (!r) return nomem(err);
  where_job j = {mask, a, b, a_one ? 0 : 1, b_one ? 0 : 1, r};
  nsl__run_rows(n, where_rows, &j);
  return r;
}

/* A mask's set rows counted, then written, per part: part k of rows
 * [lo, hi) finds its count at counts[k] and its first output row at
 * first[k] (the counts of the parts before it). */
enum { MASK_PARTS_MAX = 64 };
typedef struct mask_job {
  const uint8_t *x;
  int64_t per;   /* rows per part (nsl__rows_per_part) */
  int64_t counts[MASK_PARTS_MAX], first[MASK_PARTS_MAX];
  int64_t *o;
} mask_job;

static void mask_count_rows(void *p, int64_t lo, int64_t hi) {
  mask_job *j = p;
  const uint8_t *restrict x = j->x;
  int64_t k = 0;
  for (int64_t i = lo; i < hi; i++) k += x[i] != 0;
  j->counts[lo / j->per] = k;
}

static void mask_write_rows(void *p, int64_t lo, int64_t hi) {
  mask_job *j = p;
  const uint8_t *restrict x = j->x;
  int64_t *restrict o = j->o, w = j->first[lo / j->per];
  for (int64_t i = lo; i < hi; i++)
    if (x[i]) o[w++] = i;
}

/* The parts' counts of mask (bool, len n) in j; returns the total. */
static int64_t mask_counts(const nsl_column *mask, mask_job *j) {
  const int64_t n = mask->len;
  memset(j, 0, sizeof *j);
  j->x = nsl_bool(mask);
  j->per = nsl__rows_per_part(n);
  nsl__run_rows(n, mask_count_rows, j);
  int64_t k = 0;
  for (int p = 0; p < MASK_PARTS_MAX; p++) {
    j->first[p] = k;
    k += j->counts[p];
  }
  return k;
}

/* Number of set rows; -1 when mask is not a bool column. */
int64_t nsl_mask_count(const nsl_column *mask) {
  if (!mask || mask->type != NSL_BOOL) return -1;
  mask_job j;
  return mask_counts(mask, &j);
}

nsl_column *nsl_mask_indices(const nsl_column *mask, nsl_error *err) {
  if (!mask || mask->type != NSL_BOOL) return arg_error(err, "mask indices: the operand must be a bool mask");
  mask_job j;
  int64_t k = mask_counts(mask, &j);
  nsl_column *r = nsl__column_new_uninit(NSL_I64, k, NULL);   /* every row is written below */
  if (!r) return nomem(err);
  j.o = nsl_i64(r);
  nsl__run_rows(mask->len, mask_write_rows, &j);
  return r;
}

/* ---- gather --------------------------------------------------------------- */

/* Rows [lo, hi) of a gather: r[i] = c[idx[i]], NULL for a negative index.
 * Returns the first i whose index is past the end of c, or -1.  One loop
 * per element size and index type, so no type is tested per row. */
#define GATHER_LOOP(ET, SRC, DST, NULLV, IDX)                     \
  do {                                                            \
    const ET *src_ = (SRC);                                       \
    ET *dst_ = (DST);                                             \
    for (int64_t i = lo; i < hi; i++) {                           \
      int64_t j = (IDX)[i];                                       \
      if (j < 0) dst_[i] = (NULLV);                               \
      else if (j < len) dst_[i] = src_[j];                        \
      else return i;                                              \
    }                                                             \
  } while (0)
#define GATHER_TYPED(ET, SRC, DST, NULLV)                                              \
  do {                                                                                 \
    if (idx->type == NSL_I64) GATHER_LOOP(ET, SRC, DST, NULLV, (const int64_t *)idx->data); \
    else GATHER_LOOP(ET, SRC, DST, NULLV, (const int32_t *)idx->data);                 \
  } while (0)

static int64_t gather_rows(const nsl_column *c, const nsl_column *idx, nsl_column *r, int64_t lo, int64_t hi) {
  int64_t len = c->len;
  switch (c->type) {
  case NSL_I64: GATHER_TYPED(int64_t, nsl_i64(c), nsl_i64(r), NSL_NULL_I64); break;
  case NSL_I32: GATHER_TYPED(int32_t, nsl_i32(c), nsl_i32(r), NSL_NULL_I32); break;
  case NSL_STR: GATHER_TYPED(int32_t, nsl_i32(c), nsl_i32(r), -1); break;
  case NSL_F64: GATHER_TYPED(double, nsl_f64(c), nsl_f64(r), NAN); break;
  case NSL_BOOL: GATHER_TYPED(uint8_t, nsl_bool(c), nsl_bool(r), 0); break;
  }
  return -1;
}
#undef GATHER_TYPED
#undef GATHER_LOOP

/* Rows [lo, hi) of a concatenation (nsl__run_rows): the pieces of the
 * columns that fall there, copied. */
typedef struct concat_run {
  const nsl_column *const *cols;
  int n;
  size_t es;
  nsl_column *r;
} concat_run;

static void concat_rows(void *ctx, int64_t lo, int64_t hi) {
  const concat_run *j = ctx;
  int64_t at = 0;   /* the first row of column k in the result */
  for (int k = 0; k < j->n && at < hi; at += j->cols[k]->len, k++) {
    int64_t a = lo > at ? lo : at, b = hi < at + j->cols[k]->len ? hi : at + j->cols[k]->len;
    if (a < b) memcpy((char *)j->r->data + (size_t)a * j->es, (const char *)j->cols[k]->data + (size_t)(a - at) * j->es,
                      (size_t)(b - a) * j->es);
  }
}

/* See nsl_internal.h. */
nsl_column *nsl__column_concat(const nsl_column *const *cols, int n, nsl_error *err) {
  int64_t total = 0;
  for (int k = 0; k < n; k++) total += cols[k]->len;
  nsl_column *r = nsl__column_new_uninit(cols[0]->type, total, cols[0]->dict);   /* every row is copied below */
  if (!r) {
    nsl_error_set(err, NSL_ERR_NOMEM, "concat: out of memory for %lld rows", (long long)total);
    return NULL;
  }
  concat_run j = {cols, n, nsl_type_size(cols[0]->type), r};
  nsl__run_rows(total, concat_rows, &j);
  return r;
}

/* A large gather in parts, one per thread (nsl__run_rows; random reads: the cores' loads overlap). */
typedef struct gather_run {
  const nsl_column *c, *idx;
  nsl_column *r;
  int64_t per;
  int64_t bad[64];   /* per part: gather_rows' answer */
} gather_run;

static void gather_part(void *ctx, int64_t lo, int64_t hi) {
  gather_run *g = ctx;
  g->bad[lo / g->per] = gather_rows(g->c, g->idx, g->r, lo, hi);
}

nsl_column *nsl_column_gather(const nsl_column *c, const nsl_column *idx, nsl_error *err) {
  if (!valid_col(c) || !idx || (idx->type != NSL_I64 && idx->type != NSL_I32)) {
    nsl_error_set(err, NSL_ERR_ARG, "gather: needs a column and i64 (or i32) row indices");
    return NULL;
  }
  int64_t n = idx->len;
  nsl_column *r = nsl__column_new_uninit(c->type, n, c->dict);   /* every row is written below */
  if (!r) {
    nsl_error_set(err, NSL_ERR_NOMEM, "gather: out of memory for %lld rows", (long long)n);
    return NULL;
  }
  int64_t bad = -1;
  gather_run g = {c, idx, r, nsl__rows_per_part(n), {0}};
  for (int p = 0; p < 64; p++) g.bad[p] = -1;
  nsl__run_rows(n, gather_part, &g);
  for (int p = 0; p < 64 && bad < 0; p++) bad = g.bad[p];   /* the first bad row, as one pass finds */
  if (bad >= 0) {
    int64_t j = idx->type == NSL_I64 ? nsl_i64(idx)[bad] : (int64_t)nsl_i32(idx)[bad];
    nsl_error_set(err, NSL_ERR_ARG, "gather: index %lld (at %lld) is past the end of a %lld-row column",
                  (long long)j, (long long)bad, (long long)c->len);
    nsl_column_release(r);
    return NULL;
  }
  return r;
}

/* ---- arithmetic ------------------------------------------------------------ */

/* x op y on integers; NSL_NULL_I64 on overflow or division by zero. */
static inline int64_t arith_i64(int64_t x, nsl_arith op, int64_t y) {
  int64_t r;
  switch (op) {
  case NSL_ADD: return __builtin_add_overflow(x, y, &r) ? NSL_NULL_I64 : r;
  case NSL_SUB: return __builtin_sub_overflow(x, y, &r) ? NSL_NULL_I64 : r;
  case NSL_MUL: return __builtin_mul_overflow(x, y, &r) ? NSL_NULL_I64 : r;
  case NSL_DIV: return y == 0 || (y == -1 && x == INT64_MIN) ? NSL_NULL_I64 : x / y;
  }
  return NSL_NULL_I64;
}

/* Runs LOOP(OP) with OP the constant operator op: one loop per operator,
 * so the switch of arith_i64 leaves the row loop. */
#define PER_OPERATOR(op, LOOP)          \
  do {                                  \
    switch (op) {                       \
    case NSL_ADD: LOOP(NSL_ADD) break;  \
    case NSL_SUB: LOOP(NSL_SUB) break;  \
    case NSL_MUL: LOOP(NSL_MUL) break;  \
    case NSL_DIV: LOOP(NSL_DIV) break;  \
    }                                   \
  } while (0)

static inline double arith_f64(double x, nsl_arith op, double y) {
  switch (op) {
  case NSL_ADD: return x + y;
  case NSL_SUB: return x - y;
  case NSL_MUL: return x * y;
  case NSL_DIV: return x / y;
  }
  return NAN;
}

/* Rows [lo, hi) of r = a op b (b a column) or a op the scalar y / v
 * (nsl__run_rows). */
typedef struct arith_job {
  const nsl_column *a, *b;
  nsl_arith op;
  int64_t y;   /* the scalar as an integer (arith_scalar_i64_rows) */
  double v;    /* the scalar (arith_scalar_f64_rows) */
  nsl_column *r;
} arith_job;

static void arith_rows(void *p, int64_t lo, int64_t hi) {
  const arith_job *j = p;
  const nsl_column *a = j->a, *b = j->b;
  nsl_arith op = j->op;
  if (j->r->type == NSL_F64) {
    double *o = nsl_f64(j->r);
    for (int64_t i = lo; i < hi; i++)
      o[i] = arith_f64(nsl__f64_at(a, i), op, nsl__f64_at(b, i));
  } else if (a->type == NSL_I64 && b->type == NSL_I64) {
    const int64_t *x = nsl_i64(a), *y = nsl_i64(b);
    int64_t *o = nsl_i64(j->r);
#define ARITH_LOOP(OP)                                                                                          \
  for (int64_t i = lo; i < hi; i++)                                                                             \
    o[i] = x[i] == NSL_NULL_I64 || y[i] == NSL_NULL_I64 ? NSL_NULL_I64 : arith_i64(x[i], OP, y[i]);
    PER_OPERATOR(op, ARITH_LOOP);
#undef ARITH_LOOP
  } else {
    int64_t *o = nsl_i64(j->r);
    for (int64_t i = lo; i < hi; i++) {
      int na, nb;
      int64_t x = int_at(a, i, &na), y = int_at(b, i, &nb);
      o[i] = na || nb ? NSL_NULL_I64 : arith_i64(x, op, y);
    }
  }
}

static void arith_scalar_i64_rows(void *p, int64_t lo, int64_t hi) {
  const arith_job *j = p;
  const nsl_column *a = j->a;
  nsl_arith op = j->op;
  int64_t y = j->y, *o = nsl_i64(j->r);
  if (a->type == NSL_I64) {   /* one loop per operator, without a type test per row */
    const int64_t *x = nsl_i64(a);
#define ARITH_LOOP(OP) \
  for (int64_t i = lo; i < hi; i++) o[i] = x[i] == NSL_NULL_I64 ? NSL_NULL_I64 : arith_i64(x[i], OP, y);
    PER_OPERATOR(op, ARITH_LOOP);
#undef ARITH_LOOP
    return;
  }
  for (int64_t i = lo; i < hi; i++) {
    int null;
    int64_t x = int_at(a, i, &null);
    o[i] = null ? NSL_NULL_I64 : arith_i64(x, op, y);
  }
}

static void arith_scalar_f64_rows(void *p, int64_t lo, int64_t hi) {
  const arith_job *j = p;
  double *o = nsl_f64(j->r), v = j->v;
  for (int64_t i = lo; i < hi; i++) o[i] = arith_f64(nsl__f64_at(j->a, i), j->op, v);
}

nsl_column *nsl_column_arith(const nsl_column *a, nsl_arith op, const nsl_column *b, nsl_error *err) {
  if (!valid_col(a) || !valid_col(b) || (unsigned)op > NSL_DIV) {
    nsl_error_set(err, NSL_ERR_ARG, "arithmetic: missing column or unknown operator");
    return NULL;
  }
  if (a->type == NSL_STR || b->type == NSL_STR) {
    nsl_error_set(err, NSL_ERR_ARG, "arithmetic: not defined on string columns");
    return NULL;
  }
  if (a->len != b->len) {
    nsl_error_set(err, NSL_ERR_ARG, "arithmetic: columns of %lld and %lld rows", (long long)a->len,
                  (long long)b->len);
    return NULL;
  }
  int fp = a->type == NSL_F64 || b->type == NSL_F64;
  int64_t n = a->len;
  nsl_column *r = nsl__column_new_uninit(fp ? NSL_F64 : NSL_I64, n, NULL);   /* every row is written below */
  if (!r) {
    nsl_error_set(err, NSL_ERR_NOMEM, "arithmetic: out of memory for %lld rows", (long long)n);
    return NULL;
  }
  arith_job j = {a, b, op, 0, 0, r};
  nsl__run_rows(n, arith_rows, &j);
  return r;
}

/* a op the integer y, as I64 (a not F64). */
static nsl_column *arith_by_int(const nsl_column *a, nsl_arith op, int64_t y, nsl_error *err) {
  nsl_column *r = nsl__column_new_uninit(NSL_I64, a->len, NULL);   /* every row is written below */
  if (!r) return nomem(err);
  arith_job j = {a, NULL, op, y, (double)y, r};
  nsl__run_rows(a->len, arith_scalar_i64_rows, &j);
  return r;
}

/* Whether column a and op take a scalar (the two functions below); when not, scalar_refused says why. */
static int scalar_ok(const nsl_column *a, nsl_arith op) {
  return valid_col(a) && a->type != NSL_STR && (unsigned)op <= NSL_DIV;
}
static nsl_column *scalar_refused(const nsl_column *a, nsl_error *err) {
  return arg_error(err, a && a->type == NSL_STR ? "arithmetic on a str column" : "arithmetic: missing column or unknown operator");
}

nsl_column *nsl_column_arith_scalar_i64(const nsl_column *a, nsl_arith op, int64_t v, nsl_error *err) {
  if (!scalar_ok(a, op)) return scalar_refused(a, err);
  if (a->type == NSL_F64) return nsl_column_arith_scalar(a, op, (double)v, err);
  return arith_by_int(a, op, v, err);
}

nsl_column *nsl_column_arith_scalar(const nsl_column *a, nsl_arith op, double v, nsl_error *err) {
  if (!scalar_ok(a, op)) return scalar_refused(a, err);
  int64_t n = a->len;
  int int_scalar = v >= -9223372036854775807.0 && v < 9223372036854775808.0 && v == trunc(v);
  if (a->type != NSL_F64 && int_scalar) return arith_by_int(a, op, (int64_t)v, err);
  nsl_column *r = nsl__column_new_uninit(NSL_F64, n, NULL);   /* every row is written below */
  if (!r) return nomem(err);
  arith_job j = {a, NULL, op, 0, v, r};
  nsl__run_rows(n, arith_scalar_f64_rows, &j);
  return r;
}

/* ---- casts ----------------------------------------------------------------- */

const int64_t *nsl__as_i64(const nsl_column *c, nsl_column **copy) {
  *copy = NULL;
  if (c->type == NSL_I64) return nsl_i64(c);
  if (!(*copy = nsl_column_cast(c, NSL_I64, NULL))) return NULL;
  return nsl_i64(*copy);
}

/* Rows [lo, hi) of column c cast into r (another type; nsl__run_rows). */
static void cast_rows(void *p, int64_t lo, int64_t hi) {
  const rows_job *j = p;
  const nsl_column *c = j->a;
  nsl_column *r = j->o;
  nsl_type to = r->type;
  if (to == NSL_I64 && (c->type == NSL_I32 || c->type == NSL_BOOL)) {   /* the common widenings, without a test per row */
    int64_t *restrict o = nsl_i64(r);
    if (c->type == NSL_I32) {
      const int32_t *restrict x = nsl_i32(c);
      for (int64_t i = lo; i < hi; i++) o[i] = x[i] == NSL_NULL_I32 ? NSL_NULL_I64 : x[i];
    } else {
      const uint8_t *restrict x = nsl_bool(c);
      for (int64_t i = lo; i < hi; i++) o[i] = x[i];
    }
    return;
  }
  for (int64_t i = lo; i < hi; i++) {
    int null = 0;
    int64_t x = 0;
    double d = 0;
    if (c->type == NSL_F64) {
      d = nsl_f64(c)[i];
      null = isnan(d);
    } else {
      x = int_at(c, i, &null);
      d = (double)x;
    }
    switch (to) {
    case NSL_I64:
      if (c->type == NSL_F64)
        nsl_i64(r)[i] = null || !(d > -9223372036854775808.0 && d < 9223372036854775808.0)
                            ? NSL_NULL_I64
                            : (int64_t)d;
      else nsl_i64(r)[i] = null ? NSL_NULL_I64 : x;
      break;
    case NSL_I32:
      if (c->type == NSL_F64)
        nsl_i32(r)[i] = null || !(d > -2147483648.0 && d < 2147483648.0) ? NSL_NULL_I32 : (int32_t)d;
      else nsl_i32(r)[i] = null || x <= INT32_MIN || x > INT32_MAX ? NSL_NULL_I32 : (int32_t)x;
      break;
    case NSL_F64: nsl_f64(r)[i] = null ? NAN : d; break;
    case NSL_BOOL: nsl_bool(r)[i] = !null && (c->type == NSL_STR || d != 0); break;
    case NSL_STR: break;
    }
  }
}

nsl_column *nsl_column_cast(const nsl_column *c, nsl_type to, nsl_error *err) {
  if (!valid_col(c) || (unsigned)to > NSL_BOOL) return arg_error(err, "cast: missing column or unknown type");
  if (to == NSL_STR && c->type != NSL_STR) {   /* no dictionary to map into */
    nsl_error_set(err, NSL_ERR_ARG, "cast: a %s column cannot become a str column", nsl_type_name(c->type));
    return NULL;
  }
  int64_t n = c->len;
  nsl_column *r = nsl__column_new_uninit(to, n, c->dict);   /* every row is written below */
  if (!r) return nomem(err);
  if (to == c->type) {
    memcpy(r->data, c->data, (size_t)n * nsl_type_size(to));
    return r;
  }
  rows_job j = {c, NULL, 0, r};
  nsl__run_rows(n, cast_rows, &j);
  return r;
}

/* ---- reductions ------------------------------------------------------------ */

void nsl_column_stats(const nsl_column *c, nsl_stats *out) { nsl__column_stats(c, out, 1); }

/* The count, sum and extremes of an integer column's rows [lo, hi), per
 * part (nsl__rows_per_part) of nsl__run_rows. */
enum { INT_STATS_PARTS = 64 };
typedef struct int_stats_job {
  const nsl_column *c;
  int64_t per;
  struct {
    int64_t count, min, max;
    __extension__ __int128 sum;
  } part[INT_STATS_PARTS];
} int_stats_job;

static void int_stats_rows(void *p, int64_t lo, int64_t hi) {
  int_stats_job *j = p;
  const nsl_column *c = j->c;
  __extension__ __int128 s = 0;
  int64_t count = 0, mn = INT64_MAX, mx = INT64_MIN;
  /* one row loop, read through VALUE (null set when the row is NULL): an I64 column without a type test per row */
#define INT_STATS_LOOP(VALUE)        \
  for (int64_t i = lo; i < hi; i++) { \
    int null;                        \
    int64_t v = VALUE;               \
    if (null) continue;              \
    count++;                         \
    s += v;                          \
    if (v < mn) mn = v;              \
    if (v > mx) mx = v;              \
  }
  if (c->type == NSL_I64) {
    const int64_t *x = nsl_i64(c);
    INT_STATS_LOOP((null = x[i] == NSL_NULL_I64, x[i]))
  } else
    INT_STATS_LOOP(int_at(c, i, &null))
#undef INT_STATS_LOOP
  int k = (int)(lo / j->per);
  j->part[k].count = count;
  j->part[k].sum = s;
  j->part[k].min = mn;
  j->part[k].max = mx;
}

/* nsl__int_extent's parts: the least and greatest non-NULL value of rows
 * [lo, hi).  NULL is the type's least value, so the greatest needs no test
 * and the least reads NULL as the greatest: both loops vectorise. */
typedef struct int_extent_job {
  const nsl_column *c;
  int64_t per;
  int64_t min[INT_STATS_PARTS], max[INT_STATS_PARTS];
} int_extent_job;

static void int_extent_rows(void *p, int64_t lo, int64_t hi) {
  int_extent_job *j = p;
  int64_t mn = INT64_MAX, mx = INT64_MIN;
  if (j->c->type == NSL_I64) {
    const int64_t *x = nsl_i64(j->c);
    for (int64_t i = lo; i < hi; i++) {
      int64_t v = x[i];
      mx = v > mx ? v : mx;
      v = v == NSL_NULL_I64 ? INT64_MAX : v;
      mn = v < mn ? v : mn;
    }
  } else {
    const int32_t *x = nsl_i32(j->c);
    int32_t a = INT32_MAX, b = INT32_MIN;
    for (int64_t i = lo; i < hi; i++) {
      int32_t v = x[i];
      b = v > b ? v : b;
      v = v == NSL_NULL_I32 ? INT32_MAX : v;
      a = v < a ? v : a;
    }
    mn = a;
    mx = b == NSL_NULL_I32 ? INT64_MIN : b;
  }
  int k = (int)(lo / j->per);
  j->min[k] = mn;
  j->max[k] = mx;
}

/* See nsl_internal.h. */
int nsl__int_extent(const nsl_column *c, int64_t *min, int64_t *max) {
  if (!c || (c->type != NSL_I64 && c->type != NSL_I32) || c->len == 0) return 0;
  int_extent_job j;
  j.c = c;
  j.per = nsl__rows_per_part(c->len);
  for (int p = 0; p < INT_STATS_PARTS; p++) {
    j.min[p] = INT64_MAX;
    j.max[p] = INT64_MIN;
  }
  nsl__run_rows(c->len, int_extent_rows, &j);
  int64_t mn = INT64_MAX, mx = INT64_MIN;
  for (int p = 0; p < INT_STATS_PARTS; p++) {
    if (j.min[p] < mn) mn = j.min[p];
    if (j.max[p] > mx) mx = j.max[p];
  }
  if (mx == INT64_MIN) return 0;   /* every row NULL (a value is never the NULL code) */
  *min = mn;
  *max = mx;
  return 1;
}

/* See nsl_internal.h. */
void nsl__column_stats(const nsl_column *c, nsl_stats *out, int with_std) {
  if (!out) return;
  *out = (nsl_stats){0, 0, NAN, NAN, NAN, 0, 0, NSL_NULL_I64, NSL_NULL_I64};
  if (!valid_col(c) || c->len == 0) return;
  int64_t n = c->len, count = 0;
  if (c->type == NSL_STR) {
    for (int64_t i = 0; i < n; i++) count += nsl_i32(c)[i] >= 0;
    out->count = count;
    return;
  }
  double mean;
  if (c->type == NSL_F64) {
    const double *x = nsl_f64(c);
    double s = 0, comp = 0, mn = INFINITY, mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      double v = x[i];
      if (isnan(v)) continue;
      count++;
      double t = s + v;   /* Neumaier compensated sum */
      comp += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
      s = t;
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    if (!count) return;
    out->sum = s + comp;
    out->min = mn;
    out->max = mx;
    mean = out->sum / (double)count;
  } else {
    /* integers: exact in any order, so the parts' sums, counts and extremes add up to one pass's */
    int_stats_job j;
    memset(&j, 0, sizeof j);
    j.c = c;
    j.per = nsl__rows_per_part(n);
    nsl__run_rows(n, int_stats_rows, &j);
    __extension__ __int128 s = 0;
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    for (int p = 0; p < INT_STATS_PARTS; p++) {
      if (!j.part[p].count) continue;
      count += j.part[p].count;
      s += j.part[p].sum;
      if (j.part[p].min < mn) mn = j.part[p].min;
      if (j.part[p].max > mx) mx = j.part[p].max;
    }
    if (!count) return;
    out->isum = (int64_t)(uint64_t)s;   /* modulo 2^64 past the int64 range */
    out->sum = (double)s;
    out->imin = mn;
    out->imax = mx;
    out->min = (double)mn;
    out->max = (double)mx;
    mean = (double)((long double)s / (long double)count);
  }
  out->count = count;
  out->mean = mean;
  if (count > 1 && with_std) {   /* second pass: sum of squared deviations */
    long double ss = 0;
    for (int64_t i = 0; i < n; i++) {
      if (nsl__is_null(c, i)) continue;
      double dv = nsl__f64_at(c, i) - mean;
      ss += (long double)dv * dv;
    }
    out->std = sqrt((double)(ss / (long double)(count - 1)));
  }
}

double nsl__lerp_codes(nsl_type t, uint64_t a, uint64_t b, double frac) {
  if (t == NSL_F64) {
    double x = nsl__ocode_to_f64(a), y = nsl__ocode_to_f64(b);
    if (frac == 0 || x == y) return x;
    return (double)((long double)x + ((long double)y - (long double)x) * (long double)frac);
  }
  int64_t x = t == NSL_BOOL ? (int64_t)a - 1 : nsl__ocode_to_i64(a);
  int64_t y = t == NSL_BOOL ? (int64_t)b - 1 : nsl__ocode_to_i64(b);
  if (frac == 0 || x == y) return (double)x;
  /* long double holds every int64 and the half-way points exactly */
  return (double)((long double)x + ((long double)y - (long double)x) * (long double)frac);
}

int64_t nsl__quantile_pos(int64_t n, double q, double *frac) {
  double pos = q * (double)(n - 1);
  int64_t k = (int64_t)floor(pos);
  if (k >= n - 1) {
    k = n - 1;
    *frac = 0;
  } else *frac = pos - (double)k;
  return k;
}

double nsl_column_quantile(const nsl_column *c, double q) {
  if (!valid_col(c) || c->type == NSL_STR || !(q >= 0 && q <= 1) || c->len == 0) return NAN;
  uint64_t *a = nsl__big_alloc((size_t)c->len * sizeof *a);
  if (!a) return NAN;
  nsl__order_codes(c, NULL, 0, c->len, NULL, a);
  int64_t n = 0;
  for (int64_t i = 0; i < c->len; i++)
    if (a[i]) a[n++] = a[i];
  double r = NAN;
  if (n > 0) {
    double frac;
    int64_t k = nsl__quantile_pos(n, q, &frac);
    nsl__select_u64(a, n, k);
    uint64_t hi = a[k];
    if (frac > 0) {   /* the next order statistic: the least of the upper part */
      hi = a[k + 1];
      for (int64_t i = k + 2; i < n; i++)
        if (a[i] < hi) hi = a[i];
    }
    r = nsl__lerp_codes(c->type, a[k], hi, frac);
  }
  nsl__big_free(a);
  return r;
}

/* ---- histogram ---------------------------------------------------------------- */

nsl_column *nsl_column_histogram(const nsl_column *c, const double *edges, int nbins, nsl_error *err) {
  if (!valid_col(c) || c->type == NSL_STR) {
    nsl_error_set(err, NSL_ERR_ARG, "histogram: needs a numeric column");
    return NULL;
  }
  if (nbins < 1 || !edges) {
    nsl_error_set(err, NSL_ERR_ARG, "histogram: needs at least one bin (%d given)", nbins);
    return NULL;
  }
  for (int b = 0; b <= nbins; b++)
    if (isnan(edges[b]) || (b > 0 && edges[b] < edges[b - 1])) {
      nsl_error_set(err, NSL_ERR_ARG, "histogram: edge %d (%g) is not in ascending order", b, edges[b]);
      return NULL;
    }
  nsl_column *r = nsl_column_new(NSL_I64, nbins, NULL);
  if (!r) {
    nsl_error_set(err, NSL_ERR_NOMEM, "histogram: out of memory");
    return NULL;
  }
  int64_t *cnt = nsl_i64(r);
  double lo = edges[0], hi = edges[nbins];
  for (int64_t i = 0; i < c->len; i++) {
    double x = nsl__f64_at(c, i);
    if (!(x >= lo && x <= hi)) continue;   /* outside, or NULL */
    int b;
    if (x == hi) {
      b = nbins - 1;
      while (b > 0 && edges[b] == hi) b--;   /* the last bin of non-zero width */
    } else {
      int l = 0, h = nbins;   /* last b with edges[b] <= x */
      while (h - l > 1) {
        int mid = (l + h) / 2;
        if (edges[mid] <= x) l = mid;
        else h = mid;
      }
      b = l;
    }
    cnt[b]++;
  }
  return r;
}

/* ---- running sums and differences ------------------------------------------------ */

nsl_column *nsl_column_cummax(const nsl_column *c, nsl_error *err) {
  if (!valid_col(c) || c->type == NSL_STR || c->type == NSL_F64 || c->type == NSL_BOOL) {
    nsl_error_set(err, NSL_ERR_ARG, "cummax: needs an integer column");
    return NULL;
  }
  int64_t n = c->len;
  nsl_column *r = nsl_column_new(NSL_I64, n, NULL);
  if (!r) {
    nsl_error_set(err, NSL_ERR_NOMEM, "cummax: out of memory for %lld rows", (long long)n);
    return NULL;
  }
  int64_t m = NSL_NULL_I64;   /* no value yet */
  for (int64_t i = 0; i < n; i++) {
    int null;
    int64_t v = int_at(c, i, &null);
    if (!null && (m == NSL_NULL_I64 || v > m)) m = v;
    nsl_i64(r)[i] = m;
  }
  return r;
}

nsl_column *nsl_column_cumsum(const nsl_column *c, nsl_error *err) {
  if (!valid_col(c) || c->type == NSL_STR) {
    nsl_error_set(err, NSL_ERR_ARG, "cumsum: needs a numeric column");
    return NULL;
  }
  int64_t n = c->len;
  nsl_column *r = nsl_column_new(c->type == NSL_F64 ? NSL_F64 : NSL_I64, n, NULL);
  if (!r) {
    nsl_error_set(err, NSL_ERR_NOMEM, "cumsum: out of memory for %lld rows", (long long)n);
    return NULL;
  }
  if (c->type == NSL_F64) {
    double s = 0, comp = 0;
    for (int64_t i = 0; i < n; i++) {
      double v = nsl_f64(c)[i];
      if (isnan(v)) {
        nsl_f64(r)[i] = NAN;
        continue;
      }
      double t = s + v;
      comp += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
      s = t;
      nsl_f64(r)[i] = s + comp;
    }
  } else {
    uint64_t s = 0;   /* wraps modulo 2^64 rather than overflowing */
    for (int64_t i = 0; i < n; i++) {
      int null;
      int64_t v = int_at(c, i, &null);
      if (null) {
        nsl_i64(r)[i] = NSL_NULL_I64;
        continue;
      }
      s += (uint64_t)v;
      nsl_i64(r)[i] = (int64_t)s;
    }
  }
  return r;
}

nsl_column *nsl_column_diff(const nsl_column *c, const nsl_column *group_of, nsl_error *err) {
  if (!valid_col(c) || c->type == NSL_STR) {
    nsl_error_set(err, NSL_ERR_ARG, "diff: needs a numeric column");
    return NULL;
  }
  int64_t n = c->len, ng = 1;
  if (group_of) {
    if (group_of->type != NSL_I64 || group_of->len != n) {
      nsl_error_set(err, NSL_ERR_ARG, "diff: group ids must be an i64 column of %lld rows", (long long)n);
      return NULL;
    }
    ng = 0;
    for (int64_t i = 0; i < n; i++)
      if (nsl_i64(group_of)[i] >= ng) ng = nsl_i64(group_of)[i] + 1;
  }
  int fp = c->type == NSL_F64;
  nsl_column *r = nsl_column_new(fp ? NSL_F64 : NSL_I64, n, NULL);
  int64_t *prev = malloc((size_t)(ng ? ng : 1) * sizeof *prev);   /* last row of each group */
  if (!r || !prev) {
    nsl_error_set(err, NSL_ERR_NOMEM, "diff: out of memory for %lld rows", (long long)n);
    nsl_column_release(r);
    free(prev);
    return NULL;
  }
  for (int64_t g = 0; g < ng; g++) prev[g] = -1;
  for (int64_t i = 0; i < n; i++) {
    int64_t g = group_of ? nsl_i64(group_of)[i] : 0, j = -1;
    if (g >= 0) {
      j = prev[g];
      prev[g] = i;
    }
    if (fp) {
      nsl_f64(r)[i] = j < 0 ? NAN : nsl_f64(c)[i] - nsl_f64(c)[j];
    } else {
      int na = 1, nb = 1;
      int64_t x = int_at(c, i, &na), y = j < 0 ? 0 : int_at(c, j, &nb);
      nsl_i64(r)[i] = na || nb || j < 0 ? NSL_NULL_I64 : arith_i64(x, NSL_SUB, y);
    }
  }
  free(prev);
  return r;
}
