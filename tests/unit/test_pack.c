/* test_pack.c -- little-endian packing of columns (src/core/pack.c) against
 * bytes written out by hand: each width, the offset, NULLs, the range and
 * exactness checks. */
#include "kernel_fixtures.h"
#include "core/nsl_internal.h"

/* Packs c as type name with offset; returns the status, bytes in out. */
static nsl_status pack(const nsl_column *c, const char *name, int64_t offset, unsigned char *out, nsl_error *err) {
  int t = nsl__pack_type_of(name);
  assert_true(t >= 0);
  return nsl__column_pack_le(c, (nsl__pack_type)t, offset, out, err);
}

static void test_widths(void **state) {
  (void)state;
  assert_int_equal(nsl__pack_type_of("f64"), NSL_PACK_F64);
  assert_int_equal(nsl__pack_type_of("i64"), -1);
  assert_int_equal(nsl__pack_width(NSL_PACK_U8), 1);
  assert_int_equal(nsl__pack_width(NSL_PACK_U16), 2);
  assert_int_equal(nsl__pack_width(NSL_PACK_I32), 4);
  assert_int_equal(nsl__pack_width(NSL_PACK_F64), 8);
  assert_int_equal(nsl__pack_width((nsl__pack_type)99), 0);
}

static void test_integers(void **state) {
  (void)state;
  nsl_error err = {0};
  unsigned char b[32];
  nsl_column *c = fx_i64(3, (int64_t[]){1000, 1001, 1255});
  assert_int_equal(pack(c, "u8", 1000, b, &err), NSL_OK);
  assert_memory_equal(b, ((unsigned char[]){0, 1, 0xff}), 3);
  nsl_column_release(c);
  c = fx_i64(3, (int64_t[]){0x0102, -2, 70000});
  assert_int_equal(pack(c, "i32", 0, b, &err), NSL_OK);
  assert_memory_equal(b, ((unsigned char[]){0x02, 0x01, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x70, 0x11, 0x01, 0}), 12);
  /* 70000 does not fit u16; -2 does not fit u32 */
  assert_int_equal(pack(c, "u16", 0, b, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "row 2"));
  assert_int_equal(pack(c, "u32", 0, b, &err), NSL_ERR_ARG);
  assert_int_equal(pack(c, "u32", -2, b, &err), NSL_OK);   /* less -2: 0x0104, 0, 70002 */
  assert_memory_equal(b, ((unsigned char[]){0x04, 0x01, 0, 0, 0, 0, 0, 0, 0x72, 0x11, 0x01, 0}), 12);
  nsl_column_release(c);
  /* a NULL has no integer encoding */
  c = fx_i64(2, (int64_t[]){5, NSL_NULL_I64});
  assert_int_equal(pack(c, "u32", 0, b, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "NULL"));
  nsl_column_release(c);
}

static void test_u8_range(void **state) {
  (void)state;
  nsl_error err = {0};
  unsigned char b[4];
  nsl_column *c = fx_i64(3, (int64_t[]){1000, 1255, 1256});
  assert_int_equal(pack(c, "u8", 1000, b, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "row 3"));
  c->len = 2;
  assert_int_equal(pack(c, "u8", 1000, b, &err), NSL_OK);
  assert_int_equal(b[0], 0);
  assert_int_equal(b[1], 255);
  c->len = 3;
  nsl_column_release(c);
}

static void test_floats(void **state) {
  (void)state;
  nsl_error err = {0};
  unsigned char b[32];
  /* 1.0 = 0x3ff0000000000000, -2.5 = 0xc004000000000000 as f64; 1.0f = 0x3f800000 */
  int64_t base = (int64_t)1 << 60;
  nsl_column *c = fx_i64(3, (int64_t[]){base + 1, base - 2, NSL_NULL_I64});
  assert_int_equal(pack(c, "f64", base, b, &err), NSL_OK);
  assert_memory_equal(b, ((unsigned char[]){0, 0, 0, 0, 0, 0, 0xf0, 0x3f}), 8);
  assert_memory_equal(b + 8, ((unsigned char[]){0, 0, 0, 0, 0, 0, 0, 0xc0}), 8);
  double d;
  uint64_t bits = 0;
  for (int k = 7; k >= 0; k--) bits = bits << 8 | b[16 + k];
  memcpy(&d, &bits, 8);
  assert_true(isnan(d));
  assert_int_equal(pack(c, "f32", base, b, &err), NSL_OK);
  assert_memory_equal(b, ((unsigned char[]){0, 0, 0x80, 0x3f}), 4);
  /* an integer beyond 2^53 is not exact as a double: refused rather than rounded */
  assert_int_equal(pack(c, "f64", 0, b, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "exact"));
  nsl_column_release(c);
  /* a float column: f64 as is, less the offset; never as an integer */
  nsl_column *f = nsl_column_new(NSL_F64, 1, NULL);
  nsl_f64(f)[0] = 3.5;
  assert_int_equal(pack(f, "f64", 1, b, &err), NSL_OK);
  assert_memory_equal(b, ((unsigned char[]){0, 0, 0, 0, 0, 0, 0x04, 0x40}), 8);   /* 2.5 */
  assert_int_equal(pack(f, "u32", 0, b, &err), NSL_ERR_ARG);
  nsl_column_release(f);
}

static void test_overflow(void **state) {
  (void)state;
  nsl_error err = {0};
  unsigned char b[8];
  nsl_column *c = fx_i64(1, (int64_t[]){INT64_MIN + 5});
  assert_int_equal(pack(c, "f64", 10, b, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "overflows"));
  nsl_column_release(c);
}

/* Varints: 7 bits a byte, the lowest first, the high bit on all but a value's last byte. */
static void test_varint(void **state) {
  (void)state;
  nsl_error err = {0};
  unsigned char b[64];
  size_t n = 0;
  nsl_column *c = fx_i64(5, (int64_t[]){10, 137, 138, 310, ((int64_t)1 << 35) + 10});
  assert_int_equal(nsl__column_pack_varint(c, 10, b, &n, &err), NSL_OK);   /* 0, 127, 128, 300, 2^35 */
  assert_int_equal(n, 1 + 1 + 2 + 2 + 6);
  assert_memory_equal(b, ((unsigned char[]){0x00, 0x7f, 0x80, 0x01, 0xac, 0x02, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}),
                      12);
  /* below the offset, NULL and floats have no varint */
  assert_int_equal(nsl__column_pack_varint(c, 11, b, &n, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "row 1"));
  nsl_column_release(c);
  c = fx_i64(2, (int64_t[]){5, NSL_NULL_I64});
  assert_int_equal(nsl__column_pack_varint(c, 0, b, &n, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "NULL"));
  nsl_column_release(c);
  c = nsl_column_new(NSL_F64, 1, NULL);
  nsl_f64(c)[0] = 1.0;
  assert_int_equal(nsl__column_pack_varint(c, 0, b, &n, &err), NSL_ERR_ARG);
  nsl_column_release(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_widths), cmocka_unit_test(test_integers),
                                     cmocka_unit_test(test_u8_range), cmocka_unit_test(test_floats),
                                     cmocka_unit_test(test_overflow), cmocka_unit_test(test_varint)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
