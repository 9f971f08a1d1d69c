/* test_wire.c -- columns through the flat buffer of src/core/wire.c and
 * back: every type, NULLs, strings remapped into another dictionary (in the
 * sender's id order, as a one-process load interns them), integers, ids and
 * flags as varints of their differences or of their runs, and buffers that
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

/* Every cut of buf (len bytes) at multiples of step is refused, never read past. */
static void refuses_cuts(const void *buf, size_t len, size_t step, nsl_dict *to) {
  nsl_error err = {0};
  for (size_t cut = 0; cut < len; cut += step) {
    char **nn = NULL;
    nsl_column **cc = NULL;
    int k = 0;
    assert_int_equal(nsl__wire_decode(buf, cut, to, &nn, &cc, &k, &err), NSL_ERR_FORMAT);
    assert_null(cc);
  }
}

/* String column got (ids of dictionary to) holds the strings of sent (ids of from), NULLs as -1. */
static void same_strings(const nsl_column *sent, nsl_dict *from, const nsl_column *got, nsl_dict *to) {
  assert_int_equal(got->len, sent->len);
  for (int64_t i = 0; i < sent->len; i++) {
    int32_t a = nsl_i32(sent)[i], b = nsl_i32(got)[i];
    if (a < 0) assert_int_equal(b, -1);
    else assert_string_equal(nsl_dict_str(to, b), nsl_dict_str(from, a));
  }
}

/* Sends the n columns c (strings of dictionary from) and decodes them into dictionary to: the same names, types,
 * lengths and values (strings by their text, NULLs as -1).  Returns the message (to free), its length in *len. */
static void *round_trip(const char *const *names, nsl_column *const *c, int n, nsl_dict *from, nsl_dict *to,
                        size_t *len) {
  void *buf = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl__wire_encode(names, c, n, &buf, len, &err), NSL_OK);
  char **gn = NULL;
  nsl_column **got = NULL;
  int k = 0;
  assert_int_equal(nsl__wire_decode(buf, *len, to, &gn, &got, &k, &err), NSL_OK);
  assert_int_equal(k, n);
  for (int i = 0; i < n; i++) {
    assert_string_equal(gn[i], names[i]);
    assert_int_equal(got[i]->type, c[i]->type);
    if (c[i]->type == NSL_STR) same_strings(c[i], from, got[i], to);
    else {
      assert_int_equal(got[i]->len, c[i]->len);
      assert_memory_equal(got[i]->data, c[i]->data, (size_t)c[i]->len * nsl_type_size(c[i]->type));
    }
  }
  nsl__wire_free(gn, got, k);
  return buf;
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
  refuses_cuts(buf, len, 7, to);
  nsl__wire_free(got_names, got, n);
  free(buf);
  for (int k = 0; k < 5; k++) nsl_column_release(c[k]);
  nsl_dict_release(from);
  nsl_dict_release(to);
}

/* Integer and string columns long enough to travel as varints of their differences: times in order, NULLs, the
 * extremes (differences that wrap around 2^64), i32 extremes, string ids; equal after the trip, fewer bytes than
 * the values, and every truncation or damaged varint refused. */
static void test_deltas(void **state) {
  (void)state;
  enum { N = 1000 };
  nsl_dict *from = nsl_dict_new(), *to = nsl_dict_new();
  nsl_column *c[4] = {nsl_column_new(NSL_I64, N, NULL), nsl_column_new(NSL_I32, N, NULL),
                      nsl_column_new(NSL_STR, N, from), nsl_column_new(NSL_F64, N, NULL)};
  const int32_t ids[3] = {fx_id(from, "a", 1), fx_id(from, "bb", 2), fx_id(from, "ccc", 3)};
  for (int i = 0; i < N; i++) {
    nsl_i64(c[0])[i] = 1700000000000000000 + (int64_t)i * 1234;
    nsl_i32(c[1])[i] = i % 7;
    nsl_i32(c[2])[i] = i % 5 == 4 ? -1 : ids[i % 3];
    nsl_f64(c[3])[i] = i * 0.5;
  }
  int64_t edges[] = {NSL_NULL_I64, INT64_MAX, NSL_NULL_I64, -1, 0, INT64_MAX, INT64_MIN + 1};
  memcpy(nsl_i64(c[0]) + 100, edges, sizeof edges);
  int32_t edges32[] = {NSL_NULL_I32, INT32_MAX, NSL_NULL_I32, -1, INT32_MIN + 1};
  memcpy(nsl_i32(c[1]) + 200, edges32, sizeof edges32);
  const char *names[] = {"start", "device", "name", "x"};
  size_t len = 0;
  nsl_error err = {0};
  void *buf = round_trip(names, c, 4, from, to, &len);
  assert_true(len < (size_t)N * (8 + 4 + 4) / 3 + (size_t)N * 8);   /* the integers and ids in a third or less */
  refuses_cuts(buf, len, 5, to);
  /* damage: the first column's first varint made endless (every byte with its high bit), or its way of travel
   * set on the float column */
  unsigned char *b = buf;
  size_t at = 8 + 4 + 8 + 4 + (4 + 1) + (4 + 2) + (4 + 3) + 2 + 5 + 1 + 1 + 8;   /* header, strings, "start" */
  assert_int_equal(b[at - 9], 1);   /* how: varints of differences */
  unsigned char *bad = malloc(len);
  memcpy(bad, buf, len);
  memset(bad + at, 0xff, 11);
  char **nn = NULL;
  nsl_column **cc = NULL;
  int k = 0;
  assert_int_equal(nsl__wire_decode(bad, len, to, &nn, &cc, &k, &err), NSL_ERR_FORMAT);
  free(bad);
  for (int i = 0; i < 4; i++) nsl_column_release(c[i]);
  free(buf);
  /* a float column claiming varints is refused */
  nsl_column *f = nsl_column_new(NSL_F64, 1, NULL);
  const char *fname[] = {"x"};
  assert_int_equal(nsl__wire_encode(fname, &f, 1, &buf, &len, &err), NSL_OK);
  b = buf;
  assert_int_equal(b[len - 10], NSL_F64);
  assert_int_equal(b[len - 9], 0);   /* as it is */
  b[len - 9] = 1;
  assert_int_equal(nsl__wire_decode(buf, len, to, &nn, &cc, &k, &err), NSL_ERR_FORMAT);
  free(buf);
  nsl_column_release(f);
  nsl_dict_release(from);
  nsl_dict_release(to);
}

/* Columns of long runs of equal values (a report, a device, a flag) travel as runs: a few bytes each, equal after
 * the trip; a run of no rows, or past the rows the message holds, is refused. */
static void test_runs(void **state) {
  (void)state;
  enum { N = 1000 };
  nsl_dict *from = nsl_dict_new(), *to = nsl_dict_new();
  nsl_column *c[4] = {nsl_column_new(NSL_I64, N, NULL), nsl_column_new(NSL_BOOL, N, NULL),
                      nsl_column_new(NSL_STR, N, from), nsl_column_new(NSL_I32, N, NULL)};
  const int32_t ids[2] = {fx_id(from, "rank0", 5), fx_id(from, "rank1", 5)};
  for (int i = 0; i < N; i++) {
    nsl_i64(c[0])[i] = i / 300;
    nsl_bool(c[1])[i] = i >= 500;
    nsl_i32(c[2])[i] = i < 250 ? -1 : ids[i / 500];
    nsl_i32(c[3])[i] = NSL_NULL_I32;
  }
  const char *names[] = {"report", "memop", "name", "device"};
  size_t len = 0;
  nsl_error err = {0};
  void *buf = round_trip(names, c, 4, from, to, &len);
  assert_true(len < 200);   /* header, names and two strings; the 4,000 values in a few dozen bytes */
  free(buf);
  /* one column alone: its runs start at byte 37 (header 24, name length, "r", type, how, byte count) */
  const char *rname[] = {"r"};
  assert_int_equal(nsl__wire_encode(rname, c, 1, &buf, &len, &err), NSL_OK);
  unsigned char *b = buf;
  assert_int_equal(b[28], 2);   /* how: runs */
  assert_int_equal(b[37], 0);   /* the first run: 0 (less 0), 300 rows */
  assert_int_equal(b[38], 0xac);
  assert_int_equal(b[39], 0x02);
  char **nn = NULL;
  nsl_column **cc = NULL;
  int k = 0;
  b[38] = 0;   /* a run of no rows */
  b[39] = 0;
  assert_int_equal(nsl__wire_decode(buf, len, to, &nn, &cc, &k, &err), NSL_ERR_FORMAT);
  b[38] = 0xac;   /* a run of 1,196 rows in a message of 1,000 */
  b[39] = 0x09;
  assert_int_equal(nsl__wire_decode(buf, len, to, &nn, &cc, &k, &err), NSL_ERR_FORMAT);
  assert_null(cc);
  free(buf);
  for (int i = 0; i < 4; i++) nsl_column_release(c[i]);
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
  assert_int_equal(nsl__wire_decode("NSLWIRE1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24, a, &nn, &cc, &k, &err),
                   NSL_ERR_FORMAT);   /* the layout before this one */
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
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_round_trip), cmocka_unit_test(test_deltas),
                                     cmocka_unit_test(test_runs), cmocka_unit_test(test_refusals)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
