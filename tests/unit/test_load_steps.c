/* test_load_steps.c -- a table load in three steps (nsl_table_load_begin /
 * nsl_load_read / nsl_load_end) with the read on another thread, as nsl tui
 * does it: while the read runs the caller interns strings into the trace's
 * dictionary, loads another table of the same trace and runs SQL on it; the
 * columns then equal SQL run by SQLite itself on the same file, and the
 * strings equal a load made at once.  Also: a cancelled read, a trace
 * closed under a planned load, a column loaded meanwhile, a table without a
 * trace's loader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "core/parallel.h"
#include "nsl/nsl.h"
#include "table_rows.h"

/* The table's row count (nsl_table_nrows), -1 when it cannot be had. */
static char path[1024];

static int setup(void **state) {
  (void)state;
  const char *data = getenv("NSL_DATA_DIR");
  if (data) snprintf(path, sizeof path, "%s/nsys/pytorch_nccl_2gpu_2026.2.sqlite", data);
  return 0;
}

#define NEED_DATA()                      \
  do {                                   \
    FILE *f_ = fopen(path, "rb");        \
    if (!f_) skip();                     \
    fclose(f_);                          \
  } while (0)

/* One integer from SQL run by SQLite on the export. */
static int64_t sql_int(const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

static nsl_trace *open_two(void) {
  const char *paths[] = {path, path};
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_trace_open(&tr, paths, 2, NULL, &err), NSL_OK);
  return tr;
}

static nsl_table *table(nsl_trace *tr, const char *name) {
  nsl_table *t = NULL;
  assert_int_equal(nsl_trace_table(tr, name, &t, NULL), NSL_OK);
  return t;
}

static int64_t sum(const nsl_column *c) {
  int64_t s = 0;
  for (int64_t i = 0; i < c->len; i++) s += nsl_i64(c)[i];
  return s;
}

typedef struct reader {
  nsl_load *load;
  nsl_status rc;
  nsl_error err;
  atomic_int go;   /* 0: wait before reading (the cancel test) */
} reader;

static void read_task(void *p) {
  reader *r = p;
  while (!atomic_load(&r->go)) {
  }
  r->rc = nsl_load_read(r->load, &r->err);
}

static int count_row(void *ctx, int ncols, const char *const *names, const nsl_sql_value *values) {
  (void)ncols;
  (void)names;
  *(int64_t *)ctx = values[0].i;
  return 0;
}

static void test_background_read(void **state) {
  (void)state;
  NEED_DATA();
  nsl_trace *tr = open_two();
  nsl_table *k = table(tr, "kernels");
  const char *names[] = {"report", "start", "stop", "dur", "name"};
  reader r = {0};
  r.go = 1;
  nsl_error err = {0};
  assert_int_equal(nsl_table_load_begin(k, names, 5, &r.load, &err), NSL_OK);
  nsl__task *task = nsl__task_start(read_task, &r);
  assert_non_null(task);
  /* meanwhile, on this thread: the dictionary grows (rehashes, moves its
   * arrays), another table loads, SQL runs -- all on the same trace */
  nsl_dict *d = nsl_trace_dict(tr);
  for (int i = 0; i < 5000; i++) {
    char s[32];
    int n = snprintf(s, sizeof s, "caller string %d", i);
    int32_t id = -1;
    assert_int_equal(nsl_dict_intern(d, s, (size_t)n, &id, NULL), NSL_OK);
    assert_true(id >= 0);
  }
  nsl_table *m = table(tr, "memcpy");
  const char *mnames[] = {"start", "bytes"};
  assert_int_equal(nsl_table_require(m, mnames, 2, &err), NSL_OK);
  int64_t n_sql = -1;
  assert_int_equal(nsl_trace_sql(tr, 1, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", count_row, &n_sql, &err),
                   NSL_OK);
  nsl__task_join(task);
  assert_int_equal(r.rc, NSL_OK);
  assert_int_equal(nsl_load_end(r.load, &err), NSL_OK);

  int64_t n = sql_int("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  assert_int_equal(n_sql, n);
  assert_int_equal(table_rows(k, NULL), 2 * n);
  assert_int_equal(table_rows(m, NULL), 2 * sql_int("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"));
  assert_true(sum(nsl_table_column(m, "bytes", NULL)) == 2 * sql_int("SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY"));
  /* the two reports share a session start: no shift */
  assert_true(sum(nsl_table_column(k, "start", NULL)) == 2 * sql_int("SELECT sum(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  assert_true(sum(nsl_table_column(k, "stop", NULL)) == 2 * sql_int("SELECT sum(end) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  assert_true(sum(nsl_table_column(k, "dur", NULL)) ==
              2 * sql_int("SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  nsl_column *rep = nsl_table_column(k, "report", NULL);
  for (int64_t i = 0; i < 2 * n; i++) assert_int_equal(nsl_i32(rep)[i], i < n ? 0 : 1);
  /* names: each kernel's short name, as SQL joins it, counted per name */
  nsl_column *name = nsl_table_column(k, "name", NULL);
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                      "JOIN StringIds s ON s.id = k.shortName GROUP BY 1",
                                      -1, &st, NULL),
                   SQLITE_OK);
  int64_t seen = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    int32_t id = nsl_dict_find(d, (const char *)sqlite3_column_text(st, 0), (size_t)sqlite3_column_bytes(st, 0));
    assert_true(id >= 0);
    int64_t c = 0;
    for (int64_t i = 0; i < 2 * n; i++) c += nsl_i32(name)[i] == id;
    assert_int_equal(c, 2 * sqlite3_column_int64(st, 1));
    seen += c;
  }
  assert_int_equal(seen, 2 * n);
  sqlite3_finalize(st);
  sqlite3_close(db);
  /* and the same ids as a load made at once into the same dictionary */
  nsl_trace *again = open_two();
  assert_int_equal(nsl_trace_set_dict(again, d, NULL), NSL_OK);
  nsl_column *name2 = nsl_table_column(table(again, "kernels"), "name", NULL);
  assert_int_equal(name2->len, name->len);
  assert_memory_equal(name2->data, name->data, (size_t)name->len * sizeof(int32_t));
  nsl_trace_close(again);
  nsl_trace_close(tr);
}

static void test_cancelled_read(void **state) {
  (void)state;
  NEED_DATA();
  nsl_trace *tr = open_two();
  nsl_table *nv = table(tr, "nvtx");
  const char *names[] = {"start", "text"};
  reader r = {0};
  nsl_error err = {0};
  assert_int_equal(nsl_table_load_begin(nv, names, 2, &r.load, &err), NSL_OK);
  nsl__task *task = nsl__task_start(read_task, &r);
  assert_non_null(task);
  nsl__task_cancel(task);
  atomic_store(&r.go, 1);   /* the read starts after the cancel: it must not read */
  nsl__task_join(task);
  assert_int_equal(r.rc, NSL_ERR_LIMIT);
  assert_non_null(strstr(r.err.msg, "cancelled"));
  assert_int_not_equal(nsl_load_end(r.load, &err), NSL_OK);   /* nothing stored */
  assert_false(nsl_table_is_loaded(nv, nsl_table_find(nv, "text")));
  /* the trace is still usable */
  assert_int_equal(nsl_table_require(nv, names, 2, &err), NSL_OK);
  assert_int_equal(table_rows(nv, NULL), 2 * sql_int("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)"));
  assert_true(sum(nsl_table_column(nv, "start", NULL)) ==
              2 * sql_int("SELECT sum(start) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)"));
  nsl_trace_close(tr);
}

static void test_closed_trace(void **state) {
  (void)state;
  NEED_DATA();
  nsl_trace *tr = open_two();
  nsl_table *k = table(tr, "kernels");
  const char *names[] = {"start", "name"};
  nsl_load *l = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_table_load_begin(k, names, 2, &l, &err), NSL_OK);
  nsl_trace_close(tr);   /* the plan keeps the table and the guard, not the sources */
  assert_int_not_equal(nsl_load_read(l, &err), NSL_OK);
  assert_non_null(strstr(err.msg, "closed"));
  assert_int_not_equal(nsl_load_end(l, &err), NSL_OK);
}

static void test_loaded_meanwhile(void **state) {
  (void)state;
  NEED_DATA();
  nsl_trace *tr = open_two();
  nsl_table *k = table(tr, "kernels");
  const char *names[] = {"start", "name"};
  nsl_load *l = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_table_load_begin(k, names, 2, &l, &err), NSL_OK);
  assert_int_equal(nsl_load_read(l, &err), NSL_OK);
  nsl_column *start = nsl_table_column(k, "start", &err);   /* loaded by the caller in between */
  assert_non_null(start);
  assert_int_equal(nsl_load_end(l, &err), NSL_OK);
  assert_ptr_equal(nsl_table_column(k, "start", NULL), start);   /* kept */
  assert_true(sum(start) == 2 * sql_int("SELECT sum(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  nsl_trace_close(tr);
}

static void test_plain_table(void **state) {
  (void)state;
  nsl_table *t = nsl_table_new();
  nsl_column *c = nsl_column_new(NSL_I64, 3, NULL);
  for (int i = 0; i < 3; i++) nsl_i64(c)[i] = i;
  assert_true(nsl_table_add(t, "x", c, NULL) == NSL_OK);
  nsl_column_release(c);
  const char *ok[] = {"x"}, *bad[] = {"nope"};
  nsl_load *l = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_table_load_begin(t, ok, 1, &l, &err), NSL_OK);
  assert_int_equal(nsl_load_end(l, &err), NSL_OK);
  assert_int_equal(nsl_table_load_begin(t, bad, 1, &l, &err), NSL_ERR_NOTFOUND);
  assert_null(l);
  assert_int_equal(nsl_table_load_begin(t, ok, 1, &l, &err), NSL_OK);
  nsl_load_free(l);   /* abandoned */
  nsl_table_release(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_background_read), cmocka_unit_test(test_cancelled_read),
      cmocka_unit_test(test_closed_trace),    cmocka_unit_test(test_loaded_meanwhile),
      cmocka_unit_test(test_plain_table),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
