/* test_wire.c -- columns through the flat buffer of src/core/wire.c and
 * back: every type, NULLs, strings remapped into another dictionary (in the
 * sender's id order, as a one-process load interns them), and buffers that
 * are not one refused.  Oracle: the values put in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/wire.h"
#include "kernel_fixtures.h"
#include "nsl/nsl.h"

/* i64, i32, f64, bool and string columns of 4 rows, with NULLs. */
static void make(nsl_dict *d, nsl_column **c) {
  c[0] = nsl_column_new(NSL_I64, 4, NULL);
  c[1] = nsl_column_new(NSL_I32, 4, NULL);
  c[2] = nsl_column_new(NSL_F64, 4, NULL);
  c[3] = nsl_column_new(NSL_BOOL, 4, NULL);
  c[4] = nsl_column_new(NSL_STR, 4, d);
  int64_t i64[] = {1, NSL_NULL_I64, -5, INT64_MAX};
  int32_t i32[] = {7, NSL_NULL_I32, 0, -1};
  double f64[] = {1.5, -0.0, 1e300, 3.25};
  uint8_t b[] = {1, 0, 0, 1};
  memcpy(c[0]->data, i64, sizeof i64);
  memcpy(c[1]->data, i32, sizeof i32);
  memcpy(c[2]->data, f64, sizeof f64);
  memcpy(c[3]->data, b, sizeof b);
  fx_id(d, "unused", 6);   /* not sent: only the strings the rows use travel */
  int32_t s[] = {fx_id(d, "ncclKernel", 10), -1, fx_id(d, "gemm", 4), fx_id(d, "ncclKernel", 10)};
  memcpy(c[4]->data, s, sizeof s);
}

static void test_round_trip(void **state) {
  (void)state;
  nsl_dict *from = nsl_dict_new(), *to = nsl_dict_new();
  fx_id(to, "gemm", 4);   /* the receiver already knows one string */
  nsl_column *c[5];
  make(from, c);
  const char *names[] = {"start", "device", "ratio", "mask", "name"};
  void *buf = NULL;
  size_t len = 0;
  nsl_error err = {0};
  assert_int_equal(nsl__wire_encode(names, c, 5, &buf, &len, &err), NSL_OK);
  char **got_names = NULL;
  nsl_column **got = NULL;
  int n = 0;
  assert_int_equal(nsl__wire_decode(buf, len, to, &got_names, &got, &n, &err), NSL_OK);
  assert_int_equal(n, 5);
  for (int k = 0; k < 5; k++) {
    assert_string_equal(got_names[k], names[k]);
    assert_int_equal(got[k]->type, c[k]->type);
    assert_int_equal(got[k]->len, 4);
    if (k < 4) assert_memory_equal(got[k]->data, c[k]->data, 4 * nsl_type_size(c[k]->type));
  }
  const int32_t *s = nsl_i32(got[4]);
  assert_string_equal(nsl_dict_str(to, s[0]), "ncclKernel");
  assert_int_equal(s[1], -1);
  assert_int_equal(s[2], 0);   /* "gemm" keeps the receiver's id */
  assert_int_equal(s[3], s[0]);
  assert_int_equal(nsl_dict_size(to), 2);   /* "unused" did not travel */
  /* strings arrive in the order of the sender's ids: ncclKernel (id 1) before gemm (id 2) */
  assert_int_equal(s[0], 1);
  /* every truncation of the buffer is refused, never read past */
  for (size_t cut = 0; cut < len; cut += 7) {
    char **nn = NULL;
    nsl_column **cc = NULL;
    int k = 0;
    assert_int_equal(nsl__wire_decode(buf, cut, to, &nn, &cc, &k, &err), NSL_ERR_FORMAT);
    assert_null(cc);
  }
  nsl__wire_free(got_names, got, n);
  free(buf);
  for (int k = 0; k < 5; k++) nsl_column_release(c[k]);
  nsl_dict_release(from);
  nsl_dict_release(to);
}

static void test_refusals(void **state) {
  (void)state;
  nsl_dict *a = nsl_dict_new(), *b = nsl_dict_new();
  nsl_column *c[2] = {nsl_column_new(NSL_STR, 2, a), nsl_column_new(NSL_STR, 2, b)};
  const char *names[] = {"x", "y"};
  void *buf = NULL;
  size_t len = 0;
  nsl_error err = {0};
  assert_int_equal(nsl__wire_encode(names, c, 2, &buf, &len, &err), NSL_ERR_ARG);   /* two dictionaries */
  nsl_column *d[2] = {nsl_column_new(NSL_I64, 2, NULL), nsl_column_new(NSL_I64, 3, NULL)};
  assert_int_equal(nsl__wire_encode(names, d, 2, &buf, &len, &err), NSL_ERR_ARG);   /* two lengths */
  char **nn = NULL;
  nsl_column **cc = NULL;
  int k = 0;
  assert_int_equal(nsl__wire_decode("NSLWIRE2........", 16, a, &nn, &cc, &k, &err), NSL_ERR_FORMAT);
  /* no columns at all is a valid (empty) message */
  assert_int_equal(nsl__wire_encode(names, d, 0, &buf, &len, &err), NSL_OK);
  assert_int_equal(nsl__wire_decode(buf, len, a, &nn, &cc, &k, &err), NSL_OK);
  assert_int_equal(k, 0);
  nsl__wire_free(nn, cc, k);
  free(buf);
  for (int i = 0; i < 2; i++) {
    nsl_column_release(c[i]);
    nsl_column_release(d[i]);
  }
  nsl_dict_release(a);
  nsl_dict_release(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip), cmocka_unit_test(test_refusals)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
