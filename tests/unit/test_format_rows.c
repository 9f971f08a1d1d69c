/* test_format_rows.c -- columns formatted as JSON rows: exact text for hand
 * cases (escapes, ns -> µs, NULLs, masks), and every row of random data
 * parsed back by jansson (an independent JSON parser) to the values it
 * was made from; whole tables as CSV and JSON (nsl__format_table): exact
 * text with int64 extremes, NULLs and quoting, JSON read back by jansson;
 * floats with few decimals written short and read back exactly (strtod);
 * "did you mean" (nsl__closest). */
#include <stdio.h>

#include <jansson.h>

#include "kernel_fixtures.h"
#include "core/nsl_internal.h"

static char *fmt_rows(const char *fmt, const nsl_column *const *cols, int n, const nsl_column *mask,
                      const char *sep) {
  char *out = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl__format_rows(fmt, cols, n, mask, sep, &out, &len, &err) != NSL_OK) fail_msg("format: %s", err.msg);
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
  assert_int_equal(nsl__format_rows("%s", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "%s"));
  assert_int_equal(nsl__format_rows("%t", (const nsl_column *[]){f}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__format_rows("%d", (const nsl_column *[]){name}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__format_rows("%d %d", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "2 conversions"));
  assert_int_equal(nsl__format_rows("%q", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__format_rows("%d%", (const nsl_column *[]){ts}, 1, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__format_rows("%d %d", (const nsl_column *[]){ts, z}, 2, NULL, NULL, &out, &len, &err),
                   NSL_ERR_ARG);
  assert_int_equal(nsl__format_rows("%d", (const nsl_column *[]){ts}, 1, z, NULL, &out, &len, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__format_rows(NULL, NULL, 0, NULL, NULL, &out, &len, &err), NSL_ERR_ARG);
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
      nsl_i32(sc)[i] = fx_range(0, 9) == 0 ? -1 : fx_id(d, buf, (size_t)len);
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

static char *fmt_table(const char *const *names, const nsl_column *const *cols, int n, int64_t rows,
                       nsl__text_format f) {
  char *out = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl__format_table(names, cols, n, rows, f, &out, &len, &err) != NSL_OK) fail_msg("format table: %s", err.msg);
  assert_int_equal(strlen(out), len);
  return out;
}

/* A table with int64 extremes, NULLs of every type, strings that need CSV
 * quoting and JSON escapes, booleans and floats: exact CSV and JSON text,
 * and the JSON read back by jansson. */
static void test_table(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  const char *strs[] = {"plain", "a,b \"q\"", NULL, "line\nbreak"};
  nsl_column *s = fx_str(d, 4, strs);
  nsl_column *i = FX_I64(INT64_MAX, INT64_MIN + 1, NSL_NULL_I64, 0);
  nsl_column *k = FX_I32(INT32_MAX, NSL_NULL_I32, -7, 1);
  nsl_column *f = FX_F64(0.25, NAN, -1e300, 1.0 / 3.0);
  nsl_column *b = FX_BOOL(1, 0, 1, 0);
  const nsl_column *cols[] = {s, i, k, f, b};
  const char *names[] = {"name", "total_ns", "rows", "ratio, %", "ok"};
  char *csv = fmt_table(names, cols, 5, 4, NSL_TEXT_CSV);
  assert_string_equal(csv, "name,total_ns,rows,\"ratio, %\",ok\n"
                           "plain,9223372036854775807,2147483647,0.25,true\n"
                           "\"a,b \"\"q\"\"\",-9223372036854775807,,,false\n"
                           ",,-7,-1e+300,true\n"
                           "\"line\nbreak\",0,1,0.33333333333333331,false\n");
  char *js = fmt_table(names, cols, 5, 4, NSL_TEXT_JSON);
  assert_string_equal(js, "[\n"
      "{\"name\":\"plain\",\"total_ns\":9223372036854775807,\"rows\":2147483647,\"ratio, %\":0.25,\"ok\":true},\n"
      "{\"name\":\"a,b \\\"q\\\"\",\"total_ns\":-9223372036854775807,\"rows\":null,\"ratio, %\":null,\"ok\":false},\n"
      "{\"name\":null,\"total_ns\":null,\"rows\":-7,\"ratio, %\":-1e+300,\"ok\":true},\n"
      "{\"name\":\"line\\nbreak\",\"total_ns\":0,\"rows\":1,\"ratio, %\":0.33333333333333331,\"ok\":false}\n]");
  json_error_t je;
  json_t *root = json_loads(js, 0, &je);
  if (!root) fail_msg("jansson: %s at %d", je.text, je.position);
  assert_int_equal(json_array_size(root), 4);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(root, 0), "total_ns")), INT64_MAX);
  assert_true(json_real_value(json_object_get(json_array_get(root, 3), "ratio, %")) == 1.0 / 3.0);
  assert_int_equal(json_object_size(json_array_get(root, 2)), 5);   /* NULLs are keys with null */
  json_decref(root);
  free(csv);
  free(js);
  /* columns of another length than the table's: an error, no text */
  char *out = NULL;
  size_t len = 0;
  nsl_error err = {0};
  assert_int_equal(nsl__format_table(names, cols, 1, 3, NSL_TEXT_CSV, &out, &len, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "'name'"));
  assert_null(out);
  /* no rows */
  nsl_column *z = nsl_column_new(NSL_I64, 0, NULL);
  const nsl_column *cz[] = {z};
  csv = fmt_table(names + 1, cz, 1, 0, NSL_TEXT_CSV);
  assert_string_equal(csv, "total_ns\n");
  free(csv);
  js = fmt_table(names + 1, cz, 1, 0, NSL_TEXT_JSON);
  assert_string_equal(js, "[]");
  free(js);
  nsl_column *all[] = {s, i, k, f, b, z};
  for (size_t c = 0; c < sizeof all / sizeof *all; c++) nsl_column_release(all[c]);
  nsl_dict_release(d);
}

/* Floats that are integers or have a few decimals are written as their
 * shortest decimal (the fast path without printf), any other as the
 * shortest of %.15g / %.17g; every one reads back exactly. */
static void test_float_text(void **state) {
  (void)state;
  fx_seed(7);
  int64_t n = 5000;
  nsl_column *f = nsl_column_new(NSL_F64, n, NULL);
  static const double scale[] = {1, 10, 100, 1000, 1e4, 1e5, 1e6};
  for (int64_t r = 0; r < n; r++) {
    int p = (int)fx_range(0, 6);
    double v = (double)fx_range(-100000000000, 100000000000) / scale[p];
    if (r % 7 == 0) v = (double)(int64_t)fx_next() / 3.0;   /* needs 17 digits */
    nsl_f64(f)[r] = v;
  }
  const nsl_column *cols[] = {f};
  const char *names[] = {"v"};
  char *csv = fmt_table(names, cols, 1, n, NSL_TEXT_CSV);
  char *line = csv + strcspn(csv, "\n") + 1;   /* (an offset: gcc's -Wdangling-pointer misreads strchr here) */
  for (int64_t r = 0; r < n; r++) {
    char *end = strchr(line, '\n');
    *end = '\0';
    double v = nsl_f64(f)[r];
    assert_true(strtod(line, NULL) == v);
    if (r % 7 != 0 && !strchr(line, 'e')) {   /* a few decimals: no shorter text reads back */
      int digits = 1;
      char shortest[40];
      for (; digits <= 17; digits++) {
        snprintf(shortest, sizeof shortest, "%.*g", digits, v);
        if (strtod(shortest, NULL) == v) break;
      }
      if (!strchr(shortest, 'e') && strlen(line) != strlen(shortest)) fail_msg("%s, shortest %s", line, shortest);
    }
    line = end + 1;
  }
  free(csv);
  nsl_column_release(f);
}

static void test_closest(void **state) {
  (void)state;
  const char *commands[] = {"run", "info", "list", "repl", "bundle", "combine", "profile", "notebook"};
  assert_string_equal(nsl__closest("rn", commands, 8), "run");
  assert_string_equal(nsl__closest("notbook", commands, 8), "notebook");
  assert_string_equal(nsl__closest("porfile", commands, 8), "profile");   /* a swap is one edit */
  assert_null(nsl__closest("zzzzzz", commands, 8));
  assert_null(nsl__closest("run", commands, 8));   /* the word itself is no suggestion */
  const char *args[] = {"limit", "per_report", "only"};
  assert_string_equal(nsl__closest("limt", args, 3), "limit");
  assert_string_equal(nsl__closest("per-report", args, 3), "per_report");
  assert_null(nsl__closest("x", args, 3));
  assert_null(nsl__closest("limit", NULL, 0));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hand),
      cmocka_unit_test(test_random_roundtrip),
      cmocka_unit_test(test_many_rows),
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_float_text),
      cmocka_unit_test(test_closest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
