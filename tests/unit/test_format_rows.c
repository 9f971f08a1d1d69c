/* test_format_rows.c -- columns formatted as JSON rows: exact text for hand
 * cases (escapes, ns -> µs, NULLs, masks), and every row of random data
 * parsed back by jansson (an independent JSON parser) to the values it
 * was made from. */
#include <stdio.h>

#include <jansson.h>

#include "kernel_fixtures.h"

static char *fmt_rows(const char *fmt, const nsl_column *const *cols, int n, const nsl_column *mask,
                      const char *sep) {
  char *out = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl_format_rows(fmt, cols, n, mask, sep, &out, &len, &err) != NSL_OK) fail_msg("format: %s", err.msg);
  assert_int_equal(strlen(out), len);
  return out;
}

static void test_hand(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  const char *names[] = {"gemm \"big\"", "a\\b\n\t\x01", NULL, "caf\xc3\xa9 \xff bad"};
  nsl_column *name = fx_str(d, 4, names);
  nsl_column *ts = FX_I64(1234567, 1500, NSL_NULL_I64, -2001), *pid = FX_I32(7, -1, 0, NSL_NULL_I32);
  nsl_column *f = FX_F64(0.1, NAN, 1e300, -2.5);
  const nsl_column *cols[] = {name, ts, pid, f};
  char *s = fmt_rows("{\"n\":%s,\"ts\":%t,\"pid\":%d,\"v\":%f,\"p\":\"100%%\"}", cols, 4, NULL, ",\n");
  assert_string_equal(s,
                      "{\"n\":\"gemm \\\"big\\\"\",\"ts\":1234.567,\"pid\":7,\"v\":0.1,\"p\":\"100%\"},\n"
                      "{\"n\":\"a\\\\b\\n\\t\\u0001\",\"ts\":1.5,\"pid\":-1,\"v\":null,\"p\":\"100%\"},\n"
                      "{\"n\":null,\"ts\":null,\"pid\":0,\"v\":1e+300,\"p\":\"100%\"},\n"
                      "{\"n\":\"caf\xc3\xa9 \xef\xbf\xbd bad\",\"ts\":-2.001,\"pid\":null,\"v\":-2.5,\"p\":\"100%\"}");
  free(s);
  /* %S: NULL as an empty string */
  const nsl_column *c1[] = {name};
  s = fmt_rows("%S", c1, 1, NULL, "|");
  assert_string_equal(s, "\"gemm \\\"big\\\"\"|\"a\\\\b\\n\\t\\u0001\"|\"\"|\"caf\xc3\xa9 \xef\xbf\xbd bad\"");
  free(s);
  /* mask, default separator, whole µs */
  nsl_column *m = FX_BOOL(0, 1, 0, 1), *t2 = FX_I64(0, 2000, 3, 999);
  const nsl_column *c2[] = {t2};
  s = fmt_rows("%t", c2, 1, m, NULL);
  assert_string_equal(s, "2\n0.999");
  free(s);
  s = fmt_rows("[%t]", c2, 1, NULL, "");
  assert_string_equal(s, "[0][2][0.003][0.999]");
  free(s);
  /* no rows */
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL);
  const nsl_column *cz[] = {z};
  s = fmt_rows("%d", cz, 1, NULL, ",");
  assert_string_equal(s, "");
  free(s);
  /* extremes */
  nsl_column *ext = FX_I64(INT64_MAX, INT64_MIN + 1);
  const nsl_column *ce[] = {ext, ext};
  s = fmt_rows("%d %t", ce, 2, NULL, "|");
  assert_string_equal(s, "9223372036854775807 9223372036854775.807|-9223372036854775807 -9223372036854775.807");
  free(s);
  /* errors */
  char *out = NULL;
  size_t len = 0;
  nsl_error err = {0};
  assert_int_equal(nsl_format_rows("%s", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "%s"));
  assert_int_equal(nsl_format_rows("%t", (const nsl_column *[]){f}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_format_rows("%d", (const nsl_column *[]){name}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_format_rows("%d %d", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "2 conversions"));
  assert_int_equal(nsl_format_rows("%q", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_format_rows("%d%", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_format_rows("%d %d", (const nsl_column *[]){ts, z}, 2, NULL, NULL, &out, &len, &err),
                   NSL_ERR_ARG);
  assert_int_equal(nsl_format_rows("%d", (const nsl_column *[]){ts}, 1, z, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_format_rows(NULL, NULL, 0, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_null(out);
  nsl_column *all[] = {name, ts, pid, f, m, t2, z, ext};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
  nsl_dict_release(d);
}

/* Random strings (any bytes), integers and times: the output is one JSON
 * array that jansson parses, with every value as it was made (strings as
 * their valid UTF-8 with U+FFFD for bad bytes, checked where valid). */
static void test_random_roundtrip(void **state) {
  (void)state;
  fx_seed(99);
  nsl_dict *d = nsl_dict_new();
  for (int round = 0; round < 20; round++) {
    int64_t n = fx_range(0, 300);
    nsl_column *sc = nsl_column_new(NSL_STR, n, d), *ic = nsl_column_new(NSL_I64, n, NULL);
    nsl_column *tc = nsl_column_new(NSL_I64, n, NULL), *fc = nsl_column_new(NSL_F64, n, NULL);
    for (int64_t i = 0; i < n; i++) {
      char buf[16];
      int len = (int)fx_range(0, 15), ascii = fx_range(0, 1) == 1;
      for (int k = 0; k < len; k++) buf[k] = (char)(ascii ? fx_range(1, 127) : fx_range(1, 255));
      nsl_i32(sc)[i] = fx_range(0, 9) == 0 ? -1 : nsl_dict_intern(d, buf, (size_t)len);
      nsl_i64(ic)[i] = (int64_t)fx_next();
      nsl_i64(tc)[i] = fx_range(-5000000, 5000000000000);
      nsl_f64(fc)[i] = (double)(int64_t)fx_next() / (double)(1 + fx_range(0, 1000000));
    }
    const nsl_column *cols[] = {sc, ic, tc, fc};
    char *s = fmt_rows("{\"s\":%s,\"i\":%d,\"t\":%t,\"f\":%f}", cols, 4, NULL, ",");
    size_t tl = strlen(s) + 3;
    char *doc = malloc(tl);
    snprintf(doc, tl, "[%s]", s);
    json_error_t je;
    json_t *root = json_loads(doc, 0, &je);
    if (!root) fail_msg("round %d: jansson: %s at %d", round, je.text, je.position);
    assert_int_equal(json_array_size(root), n);
    for (int64_t i = 0; i < n; i++) {
      json_t *o = json_array_get(root, (size_t)i);
      json_t *js = json_object_get(o, "s");
      int32_t id = nsl_i32(sc)[i];
      if (id < 0) assert_true(json_is_null(js));
      else {
        assert_true(json_is_string(js));
        const char *want = nsl_dict_str(d, id);
        int ascii = 1;
        for (const char *p = want; *p; p++) ascii &= (unsigned char)*p < 0x80;
        if (ascii) assert_string_equal(json_string_value(js), want);
      }
      assert_int_equal(json_integer_value(json_object_get(o, "i")), nsl_i64(ic)[i]);
      /* µs text: compare as exact decimal through the integer ns */
      json_t *jt = json_object_get(o, "t");
      double us = json_number_value(jt);
      assert_true(fabs(us * 1000 - (double)nsl_i64(tc)[i]) <= fabs((double)nsl_i64(tc)[i]) * 1e-15 + 1e-6);
      assert_true(json_number_value(json_object_get(o, "f")) == nsl_f64(fc)[i]);
    }
    json_decref(root);
    free(doc);
    free(s);
    nsl_column *all[] = {sc, ic, tc, fc};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nsl_column_release(all[i]);
  }
  nsl_dict_release(d);
}

/* Many rows (the output is sized from the first 512), with and without a
 * sparse mask: the text equals the rows printed one by one. */
static void test_many_rows(void **state) {
  (void)state;
  int64_t n = 20000;
  nsl_column *c = nsl_column_new(NSL_I64, n, NULL), *m = nsl_column_new(NSL_BOOL, n, NULL);
  for (int64_t i = 0; i < n; i++) {
    nsl_i64(c)[i] = i * 7919 - 5000;
    nsl_bool(m)[i] = i % 97 == 0 || i < 600;
  }
  for (int masked = 0; masked < 2; masked++) {
    size_t cap = (size_t)n * 48 + 1, len = 0;
    char *want = malloc(cap);
    for (int64_t i = 0; i < n; i++) {
      if (masked && !nsl_bool(m)[i]) continue;
      len += (size_t)snprintf(want + len, cap - len, "%s[%lld]", len ? "," : "", (long long)nsl_i64(c)[i]);
    }
    const nsl_column *cols[] = {c};
    char *got = fmt_rows("[%d]", cols, 1, masked ? m : NULL, ",");
    assert_string_equal(got, want);
    free(got);
    free(want);
  }
  nsl_column_release(c);
  nsl_column_release(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand),
      cmocka_unit_test(test_random_roundtrip),
      cmocka_unit_test(test_many_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
