/* column.c -- typed, contiguous, reference-counted columns. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/leased_map.h"
#include "core/nsl_internal.h"
#include "kernels_internal.h"
#include "nsl/nsl.h"

size_t nsl_type_size(nsl_type t) {
  switch (t) {
  case NSL_I64: return sizeof(int64_t);
  case NSL_F64: return sizeof(double);
  case NSL_I32:
  case NSL_STR: return sizeof(int32_t);
  case NSL_BOOL: return sizeof(uint8_t);
  }
  return 0;
}

const char *nsl_type_name(nsl_type t) {
  static const char *const names[] = {"i64", "i32", "f64", "str", "bool"};
  return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

/* A column and its reference count, which nsl.h does not show: users hold
 * references through nsl_column_retain / nsl_column_release only. */
typedef struct column_box {
  nsl_column c;   /* first: a column's address is its box's */
  int refcount;
  struct nsl__mapping *mapping;   /* data lies in a mapped cache file (retained), not in malloc'd
                                    memory; NULL for columns nsl_column_new makes */
} column_box;

static column_box *box_of(const nsl_column *c) { return (column_box *)(void *)(uintptr_t)c; }

/* A new column of len elements, zero-filled or not (its data to be written
 * whole by the caller); NULL on out of memory. */
static nsl_column *column_new(nsl_type type, int64_t len, nsl_dict *dict, int zero) {
  if (len < 0) return NULL;
  size_t es = nsl_type_size(type);
  if ((uint64_t)len > SIZE_MAX / es) return NULL;
  column_box *box = calloc(1, sizeof *box);
  if (!box) return NULL;
  nsl_column *c = &box->c;
  box->refcount = 1;
  c->type = type;
  /* a large buffer is a freed one reused, or fresh memory marked for huge
   * pages before its first write (faults were ~20% of a large load) */
  size_t n = len ? (size_t)len : 1;
  c->data = zero ? nsl__big_calloc(n, es) : nsl__big_alloc(n * es);
  if (!c->data) {
    free(box);
    return NULL;
  }
  c->len = c->cap = len;
  if (type == NSL_STR) c->dict = nsl_dict_retain(dict);
  return c;
}

/* New zero-filled column of len elements; NULL on out of memory. */
nsl_column *nsl_column_new(nsl_type type, int64_t len, nsl_dict *dict) { return column_new(type, len, dict, 1); }

/* See kernels_internal.h. */
nsl_column *nsl__column_new_uninit(nsl_type type, int64_t len, nsl_dict *dict) {
  return column_new(type, len, dict, 0);
}

nsl_column *nsl_column_retain(nsl_column *c) {
  if (c) box_of(c)->refcount++;
  return c;
}

void nsl_column_release(nsl_column *c) {
  if (!c || --box_of(c)->refcount > 0) return;
  if (box_of(c)->mapping) nsl__mapping_release(box_of(c)->mapping);
  else nsl__big_free(c->data);
  nsl_dict_release(c->dict);
  free(box_of(c));
}

int nsl_column_is_shared(const nsl_column *c) { return box_of(c)->refcount > 1; }

nsl_status nsl__column_unmap(nsl_column *c, nsl_error *err) {
  column_box *box = box_of(c);
  if (!box->mapping) return NSL_OK;
  size_t es = nsl_type_size(c->type);
  void *p = nsl__big_alloc(c->len ? (size_t)c->len * es : 1);
  if (!p) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory: a column of %lld values", (long long)c->len);
  memcpy(p, c->data, (size_t)c->len * es);
  nsl__mapping_release(box->mapping);
  box->mapping = NULL;
  c->data = p;
  c->cap = c->len;
  return NSL_OK;
}

nsl_status nsl_column_reserve(nsl_column *c, int64_t cap, nsl_error *err) {
  if (cap <= c->cap) return NSL_OK;
  size_t es = nsl_type_size(c->type);
  if (cap < 0 || (uint64_t)cap > SIZE_MAX / es)
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory: a column of %lld values", (long long)cap);
  void *p;
  column_box *box = box_of(c);
  if (box->mapping) {   /* a mapped column grows into memory of its own */
    if (!(p = malloc((size_t)cap * es)))
      return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory: a column of %lld values", (long long)cap);
    memcpy(p, c->data, (size_t)c->len * es);
    nsl__mapping_release(box->mapping);
    box->mapping = NULL;
  } else if (!(p = realloc(c->data, (size_t)cap * es)))
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory: a column of %lld values", (long long)cap);
  c->data = p;
  nsl__advise_huge(p, (size_t)cap * es);   /* the part not yet written (see nsl_column_new) */
  c->cap = cap;
  return NSL_OK;
}

void nsl_column_set_len(nsl_column *c, int64_t len) {
  if (len >= 0 && len <= c->cap) c->len = len;
}

size_t nsl_column_bytes(const nsl_column *c) {
  return c ? (size_t)c->cap * nsl_type_size(c->type) : 0;
}

int nsl_column_is_null(const nsl_column *c, int64_t i) {
  switch (c->type) {
  case NSL_I64: return nsl_i64(c)[i] == NSL_NULL_I64;
  case NSL_I32: return nsl_i32(c)[i] == NSL_NULL_I32;
  case NSL_STR: return nsl_i32(c)[i] < 0;
  case NSL_F64: return isnan(nsl_f64(c)[i]);
  case NSL_BOOL: return 0;
  }
  return 1;
}

/* Value i as int64 (a double truncated toward zero); NULL, NaN and doubles
 * outside int64's range give NSL_NULL_I64. */
int64_t nsl_column_get_i64(const nsl_column *c, int64_t i) {
  if (i < 0 || i >= c->len || nsl_column_is_null(c, i)) return NSL_NULL_I64;
  switch (c->type) {
  case NSL_I64: return nsl_i64(c)[i];
  case NSL_I32:
  case NSL_STR: return nsl_i32(c)[i];
  case NSL_F64: {
    double v = nsl_f64(c)[i];
    /* the cast is undefined outside [-2^63, 2^63) (and for NaN, which fails both tests) */
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : NSL_NULL_I64;
  }
  case NSL_BOOL: return nsl_bool(c)[i];
  }
  return NSL_NULL_I64;
}

/* Value i as double; NULL gives NaN. */
double nsl_column_get_f64(const nsl_column *c, int64_t i) {
  if (i < 0 || i >= c->len || nsl_column_is_null(c, i)) return NAN;
  if (c->type == NSL_F64) return nsl_f64(c)[i];
  return (double)nsl_column_get_i64(c, i);
}

/* ---- columns over mapped files ---- */

struct nsl__mapping {
  void *addr;
  size_t len;
  atomic_int refs;
  int slot;   /* a leased mapping's slot (leased_map.h), else -1: memory of nsl__big_alloc */
};

nsl__mapping *nsl__mapping_new(void *addr, size_t len) {
  nsl__mapping *m = malloc(sizeof *m);
  if (!m) return NULL;
  m->addr = addr;
  m->len = len;
  atomic_init(&m->refs, 1);
  m->slot = -1;
  return m;
}

nsl__mapping *nsl__mapping_leased(int slot, void *addr, size_t len) {
  nsl__mapping *m = nsl__mapping_new(addr, len);
  if (m) m->slot = slot;
  return m;
}

nsl__mapping *nsl__mapping_retain(nsl__mapping *m) {
  if (m) atomic_fetch_add(&m->refs, 1);
  return m;
}

void nsl__mapping_release(nsl__mapping *m) {
  if (!m || atomic_fetch_sub(&m->refs, 1) > 1) return;
  if (m->slot >= 0) nsl__leased_unmap(m->slot);
  else nsl__big_free(m->addr);
  free(m);
}

nsl_column *nsl__column_mapped(nsl_type type, int64_t len, void *data, nsl__mapping *m, nsl_dict *dict) {
  column_box *box = calloc(1, sizeof *box);
  if (!box) return NULL;
  nsl_column *c = &box->c;
  c->type = type;
  box->refcount = 1;
  c->len = c->cap = len;
  c->data = data;
  box->mapping = nsl__mapping_retain(m);
  if (type == NSL_STR) c->dict = nsl_dict_retain(dict);
  return c;
}
