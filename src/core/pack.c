/* pack.c -- a column as little-endian bytes of a chosen width, so that a
 * page (the HTML viewer) can decode it into a JavaScript typed array:
 * compact, exact where the type allows, the same bytes on every host; or
 * as variable-length integers, for small counts and gaps. */
#include <math.h>
#include <string.h>

#include "core/nsl_internal.h"
#include "core/varint.h"

static const struct {
  const char *name;
  size_t width;
} pack_types[] = {{"u8", 1}, {"u16", 2}, {"i32", 4}, {"u32", 4}, {"f32", 4}, {"f64", 8}};

/* The pack type named name ("u8", "u16", "i32", "u32", "f32", "f64"), or -1. */
int nsl__pack_type_of(const char *name) {
  for (int t = 0; t < (int)(sizeof pack_types / sizeof *pack_types); t++)
    if (strcmp(pack_types[t].name, name) == 0) return t;
  return -1;
}

/* Bytes per value of pack type t (0 for an unknown one). */
size_t nsl__pack_width(nsl__pack_type t) {
  return t >= NSL_PACK_U8 && t <= NSL_PACK_F64 ? pack_types[t].width : 0;
}

static void put_le(unsigned char *p, uint64_t v, size_t width) {
  for (size_t k = 0; k < width; k++) p[k] = (unsigned char)(v >> (8 * k));
}

/* Writes the values of c, less offset, as little-endian `as` to out
 * (c->len * nsl__pack_width(as) bytes).  Integer targets take integer
 * columns (NSL_STR: the string ids) and refuse a NULL or a value outside
 * their range; f64 takes any numeric column and refuses an integer it
 * cannot hold exactly (|v - offset| > 2^53); f32 rounds; NULL becomes NaN
 * in both.  Booleans are 0/1.  NSL_ERR_ARG names the row. */
nsl_status nsl__column_pack_le(const nsl_column *c, nsl__pack_type as, int64_t offset, unsigned char *out,
                              nsl_error *err) {
  size_t w = nsl__pack_width(as);
  if (!c || !w) return nsl_error_set(err, NSL_ERR_ARG, "pack: no column or an unknown type");
  int is_float = as == NSL_PACK_F32 || as == NSL_PACK_F64;
  static const int64_t lo[] = {0, 0, INT32_MIN, 0}, hi[] = {UINT8_MAX, UINT16_MAX, INT32_MAX, UINT32_MAX};
  for (int64_t i = 0; i < c->len; i++, out += w) {
    double d;
    int64_t v = 0;
    if (c->type == NSL_F64) {
      if (!is_float) return nsl_error_set(err, NSL_ERR_ARG, "pack: a float column cannot be packed as %s",
                                          pack_types[as].name);
      d = nsl_f64(c)[i] - (double)offset;
    } else {
      int64_t x = nsl_column_get_i64(c, i);
      int null = x == NSL_NULL_I64 || (c->type == NSL_STR && x < 0);
      if (null && !is_float) return nsl_error_set(err, NSL_ERR_ARG, "pack: row %lld is NULL", (long long)i + 1);
      if (!null && ((offset > 0 && x < INT64_MIN + offset) || (offset < 0 && x > INT64_MAX + offset)))
        return nsl_error_set(err, NSL_ERR_ARG, "pack: row %lld minus %lld overflows", (long long)i + 1,
                             (long long)offset);
      v = null ? 0 : x - offset;
      d = null ? NAN : (double)v;
      if (!null && as == NSL_PACK_F64 && (v > ((int64_t)1 << 53) || v < -((int64_t)1 << 53)))
        return nsl_error_set(err, NSL_ERR_ARG, "pack: row %lld (%lld) is not exact as f64", (long long)i + 1,
                             (long long)v);
      if (!is_float && (v < lo[as] || v > hi[as]))
        return nsl_error_set(err, NSL_ERR_ARG, "pack: row %lld (%lld) does not fit %s", (long long)i + 1,
                             (long long)v, pack_types[as].name);
    }
    if (as == NSL_PACK_F64) {
      uint64_t bits;
      memcpy(&bits, &d, 8);
      put_le(out, bits, 8);
    } else if (as == NSL_PACK_F32) {
      float f = (float)d;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      put_le(out, bits, 4);
    } else put_le(out, (uint64_t)v, w);
  }
  return NSL_OK;
}

/* Writes the values of c (an integer column), less offset, as unsigned
 * LEB128 varints to out (at most NSL_PACK_VARINT_MAX bytes a value: 7 bits
 * a byte, the lowest first, the high bit set on every byte but a value's
 * last) and their length to *nbytes.  Refuses a NULL, a float column and
 * a value below offset; NSL_ERR_ARG names the row. */
nsl_status nsl__column_pack_varint(const nsl_column *c, int64_t offset, unsigned char *out, size_t *nbytes,
                                  nsl_error *err) {
  *nbytes = 0;
  if (!c || c->type == NSL_F64) return nsl_error_set(err, NSL_ERR_ARG, "pack: varints want an integer column");
  unsigned char *p = out;
  for (int64_t i = 0; i < c->len; i++) {
    int64_t x = nsl_column_get_i64(c, i);
    if (x == NSL_NULL_I64 || (c->type == NSL_STR && x < 0))
      return nsl_error_set(err, NSL_ERR_ARG, "pack: row %lld is NULL", (long long)i + 1);
    if (x < offset)
      return nsl_error_set(err, NSL_ERR_ARG, "pack: row %lld (%lld) is below %lld, not a varint", (long long)i + 1,
                           (long long)x, (long long)offset);
    p = nsl__varint_put(p, (uint64_t)x - (uint64_t)offset);
  }
  *nbytes = (size_t)(p - out);
  return NSL_OK;
}
