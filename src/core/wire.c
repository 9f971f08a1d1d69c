/* wire.c -- columns to a flat buffer and back (wire.h). */
#include "core/wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/varint.h"

static const char MAGIC[8] = {'N', 'S', 'L', 'W', 'I', 'R', 'E', '2'};

enum { RAW = 0, DELTAS = 1, RUNS = 2 };   /* how a column's values travel (wire.h) */

/* NSL_WIRE_VARINTS=0 sends every column as it is in memory (for benchmarks and tests that measure what the
 * varints save). */
static int varints_wanted(void) {
  const char *v = getenv("NSL_WIRE_VARINTS");
  return !(v && strcmp(v, "0") == 0);
}

typedef struct wbuf {
  char *p;
  size_t len, cap;
  int oom;
} wbuf;

/* Room for n more bytes; 0 (and oom remembered) when an allocation fails. */
static int reserve(wbuf *w, size_t n) {
  if (w->oom) return 0;
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) cap *= 2;
    char *p = realloc(w->p, cap);
    if (!p) {
      w->oom = 1;
      return 0;
    }
    w->p = p;
    w->cap = cap;
  }
  return 1;
}

/* Appends n bytes (remembers a failed allocation). */
static void put(wbuf *w, const void *src, size_t n) {
  if (!reserve(w, n)) return;
  if (n) memcpy(w->p + w->len, src, n);
  w->len += n;
}

/* Row r of an integer, string or bool column as it travels: the value (an i32 NULL stays INT32_MIN), a string's
 * id through map (the strings sent, nd ids), -1 for NULL, a bool 0 or 1. */
static inline int64_t int_value(const nsl_column *c, int64_t r, const int32_t *map, int32_t nd) {
  if (c->type == NSL_I64) return nsl_i64(c)[r];
  if (c->type == NSL_BOOL) return nsl_bool(c)[r] != 0;
  int32_t v = nsl_i32(c)[r];
  if (c->type == NSL_I32) return v;
  return v >= 0 && v < nd ? map[v] : -1;
}

/* The shortest way for the nrows values of col to travel (wire.h) and, unless RAW (bytes as they are), the bytes
 * its varints take: each value's difference from the one before (integers and string ids: times in order, small
 * ids), or each run of equal values as its difference from the run before and its length (report, process,
 * device and stream columns: a few bytes for a whole table). */
static uint8_t choose(const nsl_column *col, int64_t nrows, const int32_t *map, int32_t nd, size_t bytes,
                      uint64_t *vbytes) {
  if (col->type == NSL_F64 || nrows == 0) return RAW;
  uint64_t best = bytes, dbytes = 0, rbytes = 0, prev = 0;
  uint8_t how = RAW;
  if (col->type != NSL_BOOL) {   /* (a bool's difference takes its byte) */
    for (int64_t r = 0; r < nrows && dbytes < best; r++) {
      uint64_t v = (uint64_t)int_value(col, r, map, nd);
      dbytes += nsl__varint_len(nsl__zigzag(v - prev));
      prev = v;
    }
    if (dbytes < best) best = dbytes, how = DELTAS;
  }
  prev = 0;
  for (int64_t r = 0; r < nrows && rbytes < best;) {
    uint64_t v = (uint64_t)int_value(col, r, map, nd);
    int64_t e = r + 1;
    while (e < nrows && (uint64_t)int_value(col, e, map, nd) == v) e++;
    rbytes += nsl__varint_len(nsl__zigzag(v - prev)) + nsl__varint_len((uint64_t)(e - r));
    prev = v;
    r = e;
  }
  if (rbytes < best) best = rbytes, how = RUNS;
  *vbytes = best;
  return how;
}

/* Writes col's varints as how (DELTAS or RUNS) says at q (the bytes choose counted). */
static void put_varints(const nsl_column *col, int64_t nrows, const int32_t *map, int32_t nd, uint8_t how,
                        unsigned char *q) {
  uint64_t prev = 0;
  for (int64_t r = 0; r < nrows;) {
    uint64_t v = (uint64_t)int_value(col, r, map, nd);
    int64_t e = r + 1;
    if (how == RUNS)
      while (e < nrows && (uint64_t)int_value(col, e, map, nd) == v) e++;
    q = nsl__varint_put(q, nsl__zigzag(v - prev));
    if (how == RUNS) q = nsl__varint_put(q, (uint64_t)(e - r));
    prev = v;
    r = e;
  }
}

/* Stores value v (as it traveled) at row i of column c: a string id through map (nstr strings); -1 when v
 * cannot be one of c's type. */
static int store(nsl_column *c, int64_t i, int64_t v, const int32_t *map, uint32_t nstr) {
  switch (c->type) {
  case NSL_I64: nsl_i64(c)[i] = v; return 0;
  case NSL_BOOL:
    if (v != 0 && v != 1) return -1;
    nsl_bool(c)[i] = (uint8_t)v;
    return 0;
  default:
    if (v < INT32_MIN || v > INT32_MAX) return -1;
    if (c->type == NSL_I32) nsl_i32(c)[i] = (int32_t)v;
    else nsl_i32(c)[i] = v >= 0 && (uint64_t)v < nstr ? map[v] : -1;
    return 0;
  }
}

nsl_status nsl__wire_encode(const char *const *names, nsl_column *const *cols, int n, void **buf, size_t *len,
                            nsl_error *err) {
  *buf = NULL;
  *len = 0;
  int64_t nrows = n > 0 ? cols[0]->len : 0;
  nsl_dict *dict = NULL;
  for (int c = 0; c < n; c++) {
    if (cols[c]->len != nrows)
      return nsl_error_set(err, NSL_ERR_ARG, "cannot send columns of different lengths ('%s')", names[c]);
    if (cols[c]->type != NSL_STR) continue;
    if (dict && cols[c]->dict != dict)
      return nsl_error_set(err, NSL_ERR_ARG, "cannot send string columns of different dictionaries ('%s')", names[c]);
    dict = cols[c]->dict;
  }
  /* the strings used, numbered in the order of their ids */
  int32_t nd = dict ? nsl_dict_size(dict) : 0, nused = 0;
  int32_t *map = malloc((size_t)(nd > 0 ? nd : 1) * sizeof *map);
  if (!map) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int32_t k = 0; k < nd; k++) map[k] = -1;
  for (int c = 0; c < n; c++) {
    if (cols[c]->type != NSL_STR) continue;
    const int32_t *v = nsl_i32(cols[c]);
    for (int64_t r = 0; r < nrows; r++)
      if (v[r] >= 0 && v[r] < nd) map[v[r]] = 0;
  }
  for (int32_t k = 0; k < nd; k++)
    if (map[k] == 0) map[k] = nused++;
  wbuf w = {0};
  const int varints = varints_wanted();
  uint32_t u32 = (uint32_t)n;
  put(&w, MAGIC, sizeof MAGIC);
  put(&w, &u32, sizeof u32);
  put(&w, &nrows, sizeof nrows);
  u32 = (uint32_t)nused;
  put(&w, &u32, sizeof u32);
  for (int32_t k = 0; k < nd; k++) {
    if (map[k] < 0) continue;
    uint32_t sl = (uint32_t)nsl_dict_strlen(dict, k);
    put(&w, &sl, sizeof sl);
    put(&w, nsl_dict_str(dict, k), sl);
  }
  for (int c = 0; c < n && !w.oom; c++) {
    const nsl_column *col = cols[c];
    uint16_t nl = (uint16_t)strlen(names[c]);
    uint8_t type = (uint8_t)col->type;
    put(&w, &nl, sizeof nl);
    put(&w, names[c], nl);
    put(&w, &type, 1);
    size_t bytes = (size_t)nrows * nsl_type_size(col->type);
    uint64_t vbytes = 0;
    uint8_t how = varints ? choose(col, nrows, map, nd, bytes, &vbytes) : RAW;
    put(&w, &how, 1);
    if (how != RAW) {
      put(&w, &vbytes, sizeof vbytes);
      if (w.oom || !reserve(&w, (size_t)vbytes)) break;
      put_varints(col, nrows, map, nd, how, (unsigned char *)w.p + w.len);
      w.len += (size_t)vbytes;
      continue;
    }
    if (col->type != NSL_STR) {
      put(&w, col->data, bytes);
      continue;
    }
    size_t at = w.len;
    put(&w, col->data, bytes);   /* then ids rewritten in place */
    if (w.oom) break;
    int32_t *v = (int32_t *)(void *)(w.p + at);
    for (int64_t r = 0; r < nrows; r++) {
      int32_t id;
      memcpy(&id, &v[r], sizeof id);
      id = id >= 0 && id < nd ? map[id] : -1;
      memcpy(&v[r], &id, sizeof id);
    }
  }
  free(map);
  if (w.oom) {
    free(w.p);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory encoding %lld rows", (long long)nrows);
  }
  *buf = w.p;
  *len = w.len;
  return NSL_OK;
}

typedef struct rbuf {
  const char *p;
  size_t len, at;
} rbuf;

/* Takes n bytes; NULL past the end. */
static const char *take(rbuf *r, size_t n) {
  if (n > r->len - r->at) return NULL;
  const char *p = r->p + r->at;
  r->at += n;
  return p;
}

void nsl__wire_free(char **names, nsl_column **cols, int n) {
  for (int c = 0; c < n; c++) {
    if (names) free(names[c]);
    if (cols) nsl_column_release(cols[c]);
  }
  free(names);
  free(cols);
}

nsl_status nsl__wire_decode(const void *buf, size_t len, nsl_dict *dict, char ***names_out, nsl_column ***cols_out,
                            int *n_out, nsl_error *err) {
  *names_out = NULL;
  *cols_out = NULL;
  *n_out = 0;
  rbuf r = {buf, len, 0};
  const char *p;
  uint32_t ncols, nstr;
  int64_t nrows;
  if (!(p = take(&r, sizeof MAGIC)) || memcmp(p, MAGIC, sizeof MAGIC) != 0 || !(p = take(&r, 4)))
    return nsl_error_set(err, NSL_ERR_FORMAT, "not a table message");
  memcpy(&ncols, p, 4);
  if (!(p = take(&r, 8))) return nsl_error_set(err, NSL_ERR_FORMAT, "truncated table message");
  memcpy(&nrows, p, 8);
  if (!(p = take(&r, 4))) return nsl_error_set(err, NSL_ERR_FORMAT, "truncated table message");
  memcpy(&nstr, p, 4);
  if (nrows < 0 || ncols > 65536 || nstr > len) return nsl_error_set(err, NSL_ERR_FORMAT, "corrupt table message");
  int32_t *map = malloc((size_t)(nstr ? nstr : 1) * sizeof *map);
  char **names = calloc((size_t)(ncols ? ncols : 1), sizeof *names);
  nsl_column **cols = calloc((size_t)(ncols ? ncols : 1), sizeof *cols);
  nsl_status rc = NSL_OK;
  if (!map || !names || !cols) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (uint32_t k = 0; k < nstr; k++) {
    uint32_t sl;
    if (!(p = take(&r, 4))) goto corrupt;
    memcpy(&sl, p, 4);
    if (!(p = take(&r, sl))) goto corrupt;
    if ((rc = nsl_dict_intern(dict, p, sl, &map[k], err)) != NSL_OK) goto done;
  }
  for (uint32_t c = 0; c < ncols; c++) {
    uint16_t nl;
    uint8_t type;
    if (!(p = take(&r, 2))) goto corrupt;
    memcpy(&nl, p, 2);
    if (!(p = take(&r, nl))) goto corrupt;
    if (!(names[c] = malloc((size_t)nl + 1))) {
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      goto done;
    }
    memcpy(names[c], p, nl);
    names[c][nl] = '\0';
    if (!(p = take(&r, 2))) goto corrupt;
    type = (uint8_t)p[0];
    uint8_t how = (uint8_t)p[1];
    if (type > NSL_BOOL || how > RUNS || (how != RAW && type == NSL_F64) || (how == DELTAS && type == NSL_BOOL))
      goto corrupt;
    if (how != RAW) {
      uint64_t vbytes;
      if (!(p = take(&r, 8))) goto corrupt;
      memcpy(&vbytes, p, 8);
      /* a difference takes a byte at least: no more rows than bytes (a short message never asks for a large
       * column); runs are bounded by the rows the message says it holds */
      if (vbytes > r.len - r.at || (how == DELTAS && (uint64_t)nrows > vbytes) || !(p = take(&r, (size_t)vbytes)))
        goto corrupt;
      if (!(cols[c] = nsl_column_new((nsl_type)type, nrows, type == NSL_STR ? dict : NULL))) {
        rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory receiving %lld rows", (long long)nrows);
        goto done;
      }
      const unsigned char *q = (const unsigned char *)p, *end = q + vbytes;
      uint64_t prev = 0;
      if (how == DELTAS && type == NSL_I64) {   /* (the usual column of times, without a test per row) */
        int64_t *v = nsl_i64(cols[c]);
        for (int64_t i = 0; i < nrows; i++) {
          uint64_t z;
          if (nsl__varint_get(&q, end, &z) != 0) goto corrupt;
          prev += nsl__unzigzag(z);
          v[i] = (int64_t)prev;
        }
      } else
        for (int64_t i = 0; i < nrows;) {
          uint64_t z, run = 1;
          if (nsl__varint_get(&q, end, &z) != 0 || (how == RUNS && nsl__varint_get(&q, end, &run) != 0))
            goto corrupt;
          if (run == 0 || run > (uint64_t)(nrows - i)) goto corrupt;
          prev += nsl__unzigzag(z);
          for (int64_t e = i + (int64_t)run; i < e; i++)
            if (store(cols[c], i, (int64_t)prev, map, nstr) != 0) goto corrupt;
        }
      if (q != end) goto corrupt;
      continue;
    }
    size_t es = nsl_type_size((nsl_type)type);
    if ((uint64_t)nrows > (r.len - r.at) / es) goto corrupt;
    if (!(p = take(&r, (size_t)nrows * es))) goto corrupt;
    if (!(cols[c] = nsl_column_new((nsl_type)type, nrows, type == NSL_STR ? dict : NULL))) {
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory receiving %lld rows", (long long)nrows);
      goto done;
    }
    memcpy(cols[c]->data, p, (size_t)nrows * es);
    if (type == NSL_STR) {
      int32_t *v = nsl_i32(cols[c]);
      for (int64_t i = 0; i < nrows; i++) v[i] = v[i] >= 0 && (uint32_t)v[i] < nstr ? map[v[i]] : -1;
    }
  }
  if (r.at != r.len) goto corrupt;
  free(map);
  *names_out = names;
  *cols_out = cols;
  *n_out = (int)ncols;
  return NSL_OK;
corrupt:
  rc = nsl_error_set(err, NSL_ERR_FORMAT, "corrupt table message");
done:
  free(map);
  nsl__wire_free(names, cols, (int)ncols);
  return rc;
}
