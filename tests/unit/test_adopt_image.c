/* test_adopt_image.c -- reports opened from a buffer the source takes over
 * (nsl__nsys_adopt_image, used for bundle members), the inputs a trace
 * records, the zip sniffing of nsl_trace_open, the options a trace opens
 * with (the cache folder, seen by the file system) and the version of a
 * source's operations.  Oracle: SQL run by
 * SQLite itself on the same export; the failure paths run under ASan, which
 * reports a buffer that is not released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "nsl/bundle.h"
#include "nsl/nsl.h"
#include "nsl/source.h"
#include "source/nsys_sqlite.h"
#include "table_rows.h"

/* The table's row count (nsl_table_nrows), -1 when it cannot be had. */
static char export_path[1024];

static int setup(void **state) {
  (void)state;
  const char *data = getenv("NSL_DATA_DIR");
  snprintf(export_path, sizeof export_path, "%s/nsys/pytorch_nccl_2gpu_2026.2.sqlite", data ? data : "../shared/data");
  return 0;
}

/* The whole file in a malloc'd buffer. */
static void *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc((size_t)n);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static int64_t sql_int(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int64_t v = -1;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

static void test_adopted_image_reads_like_the_file(void **state) {
  (void)state;
  size_t len;
  void *buf = slurp(export_path, &len);
  void *src = NULL;
  nsl_report_info info, finfo;
  nsl_error err = {0};
  assert_int_equal(nsl__nsys_adopt_image("mem/nccl.sqlite", buf, len, &src, &info, &err), NSL_OK);
  void *fsrc = NULL;
  assert_int_equal(nsl__nsys_open_file(export_path, &fsrc, &finfo, &err), NSL_OK);
  assert_string_equal(info.nsys_version, finfo.nsys_version);
  assert_string_equal(info.schema_version, finfo.schema_version);
  assert_string_equal(info.host, finfo.host);
  assert_true(info.start_utc == finfo.start_utc);
  assert_string_equal(info.name, "nccl");
  int64_t n = -1;
  assert_int_equal(nsl__nsys_source_ops.count(src, "kernels", &n, &err), NSL_OK);
  assert_true(n == sql_int(export_path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  nsl__nsys_source_ops.close(src);   /* frees buf */
  nsl__nsys_source_ops.close(fsrc);
}

static void test_adopted_image_is_released_on_failure(void **state) {
  (void)state;
  nsl_error err = {0};
  void *src = (void *)1;
  nsl_report_info info;
  char *text = strdup("not an SQLite database, just text that is long enough to have a header ........."
                      "........................................................................");
  assert_int_equal(nsl__nsys_adopt_image("mem:text", text, strlen(text), &src, &info, &err), NSL_ERR_FORMAT);
  assert_null(src);
  assert_non_null(strstr(err.msg, "mem:text"));
  /* a truncated export: header fine, pages missing */
  size_t len;
  unsigned char *buf = slurp(export_path, &len);
  assert_int_equal(nsl__nsys_adopt_image("mem:half", buf, len / 2, &src, &info, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "truncated"));
  /* an SQLite database that is not an export */
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1)", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_int64 size = 0;
  unsigned char *img = sqlite3_serialize(db, "main", &size, 0);
  assert_non_null(img);
  void *copy = malloc((size_t)size);
  memcpy(copy, img, (size_t)size);
  sqlite3_free(img);
  sqlite3_close(db);
  assert_int_equal(nsl__nsys_adopt_image("mem:other", copy, (size_t)size, &src, &info, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "not an nsys export"));
  /* nothing to free here: every buffer was taken over (ASan checks) */
}

static void test_trace_records_inputs(void **state) {
  (void)state;
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  const char *paths[] = {export_path, export_path};
  assert_int_equal(nsl_trace_open(&tr, paths, 2, NULL, &err), NSL_OK);
  assert_int_equal(nsl_trace_ninputs(tr), 2);
  assert_string_equal(nsl_trace_input_path(tr, 0), export_path);
  assert_string_equal(nsl_trace_input_path(tr, 1), export_path);
  assert_null(nsl_trace_input_path(tr, 2));
  assert_null(nsl_trace_input_path(tr, -1));
  assert_int_equal(nsl_trace_nreports(tr), 2);
  nsl_trace_close(tr);
  tr = nsl_trace_new();
  assert_int_equal(nsl_trace_ninputs(tr), 0);
  nsl_trace_close(tr);
}

/* The entries of folder path (0 when it does not exist). */
static int entries(const char *path) {
  DIR *d = opendir(path);
  int n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

/* Options are the trace's: cache = 0 leaves the cache folder alone, cache =
 * 1 fills it, whatever the process did before; the rows are SQLite's. */
static void test_open_options(void **state) {
  (void)state;
  char dir[] = "/tmp/nsl-opts-XXXXXX", columns[64];
  assert_non_null(mkdtemp(dir));
  snprintf(columns, sizeof columns, "%s/columns", dir);
  setenv("NSL_CACHE_DIR", dir, 1);
  int64_t want = sql_int(export_path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  const char *paths[] = {export_path};
  for (int cache = 0; cache <= 1; cache++) {
    nsl_open_options o;
    nsl_open_options_init(&o);
    o.cache = cache;
    o.nsys = "/nonexistent/nsys";
    nsl_trace *tr = NULL;
    nsl_table *k = NULL;
    nsl_error err = {0};
    assert_int_equal(nsl_trace_open(&tr, paths, 1, &o, &err), NSL_OK);
    assert_int_equal(nsl_trace_options(tr)->cache, cache);
    assert_string_equal(nsl_trace_options(tr)->nsys, "/nonexistent/nsys");
    assert_int_equal(nsl_trace_table(tr, "kernels", &k, &err), NSL_OK);
    assert_int_equal(table_rows(k, &err), want);
    nsl_trace_close(tr);
    if (cache == 0) assert_int_equal(entries(columns), 0);
    else assert_true(entries(columns) > 0);
  }
  unsetenv("NSL_CACHE_DIR");
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* A source says which version of the operations it fills: 1 is known,
 * 0 and a later one are refused (the source stays the caller's). */
static void test_source_version(void **state) {
  (void)state;
  void *src = NULL;
  nsl_report_info info;
  nsl_error err = {0};
  assert_int_equal(nsl__nsys_open_file(export_path, &src, &info, &err), NSL_OK);
  nsl_trace *tr = nsl_trace_new();
  assert_non_null(tr);
  nsl_source_ops ops = nsl__nsys_source_ops;
  for (int v = 0; v <= NSL_SOURCE_VERSION + 1; v += NSL_SOURCE_VERSION + 1) {
    ops.version = v;
    assert_int_equal(nsl_trace_add_source(tr, &ops, src, &info, &err), NSL_ERR_ARG);
    assert_non_null(strstr(err.msg, "version"));
  }
  assert_int_equal(nsl_trace_nreports(tr), 0);
  assert_int_equal(nsl__nsys_source_ops.version, NSL_SOURCE_VERSION);
  assert_int_equal(nsl_trace_add_source(tr, &nsl__nsys_source_ops, src, &info, &err), NSL_OK);
  assert_int_equal(nsl_trace_nreports(tr), 1);
  nsl_trace_close(tr);
}

static void test_sniff(void **state) {
  (void)state;
  char dir[] = "/tmp/nsl-test-sniff-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  static const struct {
    const char *bytes;
    size_t len;
    int zip;
  } cases[] = {{"PK\3\4rest", 8, 1}, {"PK\5\6", 4, 1}, {"PK\7\x08", 4, 1}, {"PK\1\2", 4, 0},
               {"SQLite format 3", 15, 0}, {"PK", 2, 0}, {"", 0, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(path, sizeof path, "%s/f%zu", dir, i);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(cases[i].bytes, 1, cases[i].len, f);
    fclose(f);
    assert_int_equal(nsl_bundle_sniff(path), cases[i].zip);
    remove(path);
  }
  snprintf(path, sizeof path, "%s/missing", dir);
  assert_int_equal(nsl_bundle_sniff(path), 0);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_adopted_image_reads_like_the_file),
      cmocka_unit_test(test_adopted_image_is_released_on_failure),
      cmocka_unit_test(test_trace_records_inputs),
      cmocka_unit_test(test_sniff),
      cmocka_unit_test(test_open_options),
      cmocka_unit_test(test_source_version),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
