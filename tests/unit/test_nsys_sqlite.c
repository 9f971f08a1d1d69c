/* test_nsys_sqlite.c -- the nsys SQLite source against SQL run by SQLite
 * itself on the same files: every export in $NSL_DATA_DIR/nsys, every table,
 * row counts, kernel names and durations, NVTX text, pid/tid bits, reports
 * aligned by start_utc, inputs left untouched, and bad inputs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "nsl/nsl.h"
#include "source/nsys_sqlite.h"
#include "table_rows.h"

/* The table's row count (nsl_table_nrows), -1 when it cannot be had. */
#define MAX_FILES 64


static char *files[MAX_FILES];
static int nfiles;
static char tmpdir[256];

/* ---- helpers ----------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int setup(void **state) {
  (void)state;
  const char *data = getenv("NSL_DATA_DIR");
  if (!data) return 0;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/nsys", data);
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) && nfiles < MAX_FILES) {
    size_t n = strlen(e->d_name);
    if (n > 7 && strcmp(e->d_name + n - 7, ".sqlite") == 0) {
      char *p = malloc(strlen(dir) + n + 2);
      sprintf(p, "%s/%s", dir, e->d_name);
      files[nfiles++] = p;
    }
  }
  closedir(d);
  qsort(files, (size_t)nfiles, sizeof *files, cmp_str);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/nsl_test_nsys_XXXXXX");
  if (!mkdtemp(tmpdir)) return -1;
  return 0;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(p);
    else unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

static int teardown(void **state) {
  (void)state;
  for (int i = 0; i < nfiles; i++) free(files[i]);
  if (tmpdir[0]) remove_tree(tmpdir);
  return 0;
}

static const char *base(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

#define NEED_DATA()                                                                                \
  do {                                                                                             \
    if (nfiles == 0) {                                                                             \
      print_message("NSL_DATA_DIR/nsys has no exports: skipped\n");                                \
      skip();                                                                                      \
    }                                                                                              \
  } while (0)

/* The oracle: SQLite on the same file, read-only. */
static sqlite3 *oracle_open(const char *path) {
  sqlite3 *db = NULL;
  char uri[2048];
  snprintf(uri, sizeof uri, "file:%s?immutable=1", path);
  if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) fail_msg("oracle cannot open %s", path);
  return db;
}

static int has_table(sqlite3 *db, const char *t) {
  sqlite3_stmt *st;
  sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?1", -1, &st, NULL);
  sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
  int r = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return r;
}

static int has_column(sqlite3 *db, const char *t, const char *c) {
  sqlite3_stmt *st;
  sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &st, NULL);
  sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, c, -1, SQLITE_STATIC);
  int r = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return r;
}

static int64_t sql_i64(sqlite3 *db, const char *fmt, ...) {
  char sql[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("oracle SQL failed: %s: %s", sql, sqlite3_errmsg(db));
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

static int64_t count_if(sqlite3 *db, const char *table, const char *where) {
  return has_table(db, table) ? sql_i64(db, "SELECT count(*) FROM \"%s\" %s", table, where ? where : "") : 0;
}

/* The expected row count of each model table, by plain SQL. */
static int64_t oracle_rows(sqlite3 *db, const char *table) {
  if (!strcmp(table, "kernels")) return count_if(db, "CUPTI_ACTIVITY_KIND_KERNEL", NULL);
  if (!strcmp(table, "memcpy")) return count_if(db, "CUPTI_ACTIVITY_KIND_MEMCPY", NULL);
  if (!strcmp(table, "memset")) return count_if(db, "CUPTI_ACTIVITY_KIND_MEMSET", NULL);
  if (!strcmp(table, "api"))
    return count_if(db, "CUPTI_ACTIVITY_KIND_RUNTIME", NULL) + count_if(db, "CUPTI_ACTIVITY_KIND_DRIVER", NULL);
  if (!strcmp(table, "nvtx")) return count_if(db, "NVTX_EVENTS", "WHERE eventType IN (34, 59, 60)");
  if (!strcmp(table, "sync")) return count_if(db, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", NULL);
  if (!strcmp(table, "osrt")) return count_if(db, "OSRT_API", NULL);
  if (!strcmp(table, "memory")) return count_if(db, "CUDA_GPU_MEMORY_USAGE_EVENTS", NULL);
  if (!strcmp(table, "samples")) return count_if(db, "COMPOSITE_EVENTS", NULL);
  if (!strcmp(table, "frames")) return count_if(db, "SAMPLING_CALLCHAINS", NULL);
  if (!strcmp(table, "callchains")) return count_if(db, "CUDA_CALLCHAINS", NULL);
  if (!strcmp(table, "overhead")) return count_if(db, "CUPTI_ACTIVITY_KIND_OVERHEAD", NULL);
  if (!strcmp(table, "threads")) return count_if(db, "ThreadNames", NULL);
  if (!strcmp(table, "processes"))
    return has_table(db, "PROCESSES") ? count_if(db, "PROCESSES", NULL)
           : has_table(db, "ThreadNames") ? sql_i64(db, "SELECT count(DISTINCT (globalTid >> 24) & 16777215) FROM ThreadNames")
                                          : 0;
  if (!strcmp(table, "devices")) {
    /* the first GPU table with rows: TARGET_INFO_GPU (id), TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE */
    if (has_table(db, "TARGET_INFO_GPU") && has_column(db, "TARGET_INFO_GPU", "id") && count_if(db, "TARGET_INFO_GPU", NULL) > 0)
      return count_if(db, "TARGET_INFO_GPU", NULL);
    if (count_if(db, "TARGET_INFO_CUDA_GPU", NULL) > 0) return count_if(db, "TARGET_INFO_CUDA_GPU", NULL);
    if (count_if(db, "TARGET_INFO_CUDA_DEVICE", NULL) > 0)
      return sql_i64(db, "SELECT count(DISTINCT gpuId) FROM TARGET_INFO_CUDA_DEVICE");
    const char *t[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                       "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"};
    char sql[1024] = "SELECT count(*) FROM (";
    int any = 0;
    for (int i = 0; i < 4; i++)
      if (has_table(db, t[i])) {
        if (any) strcat(sql, " UNION ");
        strcat(sql, "SELECT deviceId FROM ");
        strcat(sql, t[i]);
        any = 1;
      }
    strcat(sql, ")");
    return any ? sql_i64(db, "%s", sql) : 0;
  }
  /* projected NVTX ranges come from nsys-jax archives; an export has none */
  if (!strcmp(table, "gpu_ranges")) return 0;
  /* summaries come from nsys stats CSV files; an export has none */
  if (!strcmp(table, "sums")) return 0;
  fail_msg("no oracle for table %s", table);
  return -1;
}

static nsl_trace *open_trace(const char *const *paths, int n) {
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  if (nsl_trace_open(&tr, paths, n, NULL, &err) != NSL_OK) fail_msg("nsl_trace_open(%s): %s", paths[0], err.msg);
  return tr;
}

/* Loads every declared column of model table name. */
static nsl_table *load_all(nsl_trace *tr, const char *name) {
  nsl_table *t = NULL;
  nsl_error err = {0};
  if (nsl_trace_table(tr, name, &t, &err) != NSL_OK) fail_msg("table %s: %s", name, err.msg);
  int n = nsl_table_ncols(t);
  const char **names = calloc((size_t)n, sizeof *names);
  for (int i = 0; i < n; i++) names[i] = nsl_table_colname(t, i);
  if (nsl_table_require(t, names, n, &err) != NSL_OK) fail_msg("loading %s: %s", name, err.msg);
  free(names);
  return t;
}

static nsl_column *col(nsl_table *t, const char *name) {
  nsl_error err = {0};
  nsl_column *c = nsl_table_column(t, name, &err);
  if (!c) fail_msg("column %s: %s", name, err.msg);
  return c;
}

static const char *find_file(const char *part) {
  for (int f = 0; f < nfiles; f++)
    if (strstr(base(files[f]), part)) return files[f];
  return NULL;
}

static char *read_all(const char *path, size_t *len) {
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}

static void write_all(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  fclose(f);
}

static char *listing(const char *dir) {
  char *names[256];
  int n = 0;
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) && n < 256) names[n++] = strdup(e->d_name);
  if (d) closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  char *out = calloc(1, 256 * 300);
  for (int i = 0; i < n; i++) {
    strcat(out, names[i]);
    strcat(out, "\n");
    free(names[i]);
  }
  return out;
}

static int count_row(void *ctx, int ncols, const char *const *names, const nsl_sql_value *v) {
  (void)ncols;
  (void)names;
  *(int64_t *)ctx = v[0].i;
  return 0;
}

/* ---- every file, every table ------------------------------------------ */

static void test_every_table_row_counts(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    const char *const *tables = nsl_model_tables();
    /* 1: counts through the count op (nothing loaded) */
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    for (int i = 0; tables[i]; i++) {
      if (!strcmp(tables[i], "reports")) continue;
      nsl_table *t = NULL;
      nsl_error err = {0};
      assert_int_equal(nsl_trace_table(tr, tables[i], &t, &err), NSL_OK);
      int64_t want = oracle_rows(db, tables[i]), got = table_rows(t, &err);
      if (got != want) fail_msg("%s: %s counted %lld rows, SQL says %lld", base(files[f]), tables[i], (long long)got, (long long)want);
    }
    nsl_trace_close(tr);
    /* 2: every column loaded */
    tr = open_trace((const char *const *)&files[f], 1);
    for (int i = 0; tables[i]; i++) {
      nsl_table *t = load_all(tr, tables[i]);
      if (!strcmp(tables[i], "reports")) {
        assert_int_equal(table_rows(t, NULL), 1);
        continue;
      }
      int64_t want = oracle_rows(db, tables[i]);
      for (int c = 0; c < nsl_table_ncols(t); c++) {
        nsl_column *cc = nsl_table_column_at(t, c, NULL);
        assert_non_null(cc);
        if (cc->len != want)
          fail_msg("%s: %s.%s has %lld rows, SQL says %lld", base(files[f]), tables[i], nsl_table_colname(t, c),
                   (long long)cc->len, (long long)want);
      }
    }
    nsl_trace_close(tr);
    sqlite3_close(db);
  }
}

/* ---- kernels: per-name count and total duration ----------------------- */

static void test_kernel_names_and_durations(void **state) {
  (void)state;
  NEED_DATA();
  int checked = 0;
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    if (!has_table(db, "CUPTI_ACTIVITY_KIND_KERNEL")) {
      sqlite3_close(db);
      continue;
    }
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    nsl_table *t = load_all(tr, "kernels");
    nsl_dict *dict = nsl_trace_dict(tr);
    nsl_column *name = col(t, "demangled"), *dur = col(t, "dur"), *shortname = col(t, "name");
    int32_t nd = nsl_dict_size(dict);
    int64_t *cnt = calloc((size_t)nd + 1, sizeof *cnt), *sum = calloc((size_t)nd + 1, sizeof *sum);
    for (int64_t i = 0; i < name->len; i++) {
      int32_t id = nsl_i32(name)[i];
      assert_true(id >= 0 && id < nd);
      assert_true(nsl_i32(shortname)[i] >= 0);
      cnt[id]++;
      sum[id] += nsl_i64(dur)[i];
    }
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                        "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int64_t groups = 0, rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      const char *v = (const char *)sqlite3_column_text(st, 0);
      int32_t id = nsl_dict_find(dict, v, (size_t)sqlite3_column_bytes(st, 0));
      if (id < 0) fail_msg("%s: kernel '%s' missing", base(files[f]), v);
      if (cnt[id] != sqlite3_column_int64(st, 1) || sum[id] != sqlite3_column_int64(st, 2))
        fail_msg("%s: kernel '%.80s': %lld/%lld vs SQL %lld/%lld", base(files[f]), v, (long long)cnt[id],
                 (long long)sum[id], (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2));
      groups++;
      rows += cnt[id];
    }
    sqlite3_finalize(st);
    assert_int_equal(rows, name->len);   /* every loaded kernel is in some SQL group */
    /* short names against shortName */
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                                        "ORDER BY k.rowid",
                                        -1, &st, NULL),
                     SQLITE_OK);
    for (int64_t i = 0; sqlite3_step(st) == SQLITE_ROW; i++)
      assert_string_equal(nsl_dict_str(dict, nsl_i32(shortname)[i]), (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    free(cnt);
    free(sum);
    nsl_trace_close(tr);
    sqlite3_close(db);
    checked += groups > 0;
  }
  assert_true(checked >= 5);
}

/* ---- API names: nsys's reports cut the "_vNNNN" version suffix ---------- */

static void test_api_names(void **state) {
  (void)state;
  NEED_DATA();
  int checked = 0;
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    if (!has_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME")) {
      sqlite3_close(db);
      continue;
    }
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    nsl_table *t = load_all(tr, "api");
    nsl_dict *dict = nsl_trace_dict(tr);
    nsl_column *name = col(t, "name"), *dur = col(t, "dur");
    int32_t nd = nsl_dict_size(dict);
    int64_t *cnt = calloc((size_t)nd + 1, sizeof *cnt), *sum = calloc((size_t)nd + 1, sizeof *sum);
    for (int64_t i = 0; i < name->len; i++) {
      assert_true(nsl_i32(name)[i] >= 0);
      cnt[nsl_i32(name)[i]]++;
      sum[nsl_i32(name)[i]] += nsl_i64(dur)[i];
    }
    /* the query of nsys's cuda_api_sum report */
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT CASE substr(s.value, -6, 2) WHEN '_v' THEN substr(s.value, 1, length(s.value) - 6) "
                                        "ELSE s.value END AS n, count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                                        "JOIN StringIds s ON s.id = r.nameId GROUP BY n",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int64_t rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      const char *v = (const char *)sqlite3_column_text(st, 0);
      int32_t id = nsl_dict_find(dict, v, strlen(v));
      if (id < 0) fail_msg("%s: API '%s' missing", base(files[f]), v);
      assert_int_equal(cnt[id], sqlite3_column_int64(st, 1));
      assert_int_equal(sum[id], sqlite3_column_int64(st, 2));
      rows += cnt[id];
    }
    sqlite3_finalize(st);
    assert_int_equal(rows, name->len);
    assert_true(nsl_dict_find(dict, "cudaLaunchKernel_v7000", 22) < 0);
    free(cnt);
    free(sum);
    nsl_trace_close(tr);
    sqlite3_close(db);
    checked++;
  }
  assert_true(checked >= 5);
}

/* ---- NVTX text, domain and kind ---------------------------------------- */

static void test_nvtx_text(void **state) {
  (void)state;
  NEED_DATA();
  int checked = 0;
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    if (!has_table(db, "NVTX_EVENTS")) {
      sqlite3_close(db);
      continue;
    }
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    nsl_table *t = load_all(tr, "nvtx");
    nsl_dict *dict = nsl_trace_dict(tr);
    nsl_column *text = col(t, "text"), *kind = col(t, "kind"), *domain = col(t, "domain"), *stop = col(t, "stop");
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT coalesce(e.text, (SELECT value FROM StringIds WHERE id = e.textId)), e.eventType, "
                                        "d.name, e.end FROM NVTX_EVENTS e LEFT JOIN "
                                        "(SELECT domainId, coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) AS name "
                                        " FROM NVTX_EVENTS WHERE eventType = 75 GROUP BY domainId) d ON d.domainId = e.domainId "
                                        "WHERE e.eventType IN (34, 59, 60) ORDER BY e.rowid",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int64_t i = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; i++) {
      const char *want = (const char *)sqlite3_column_text(st, 0);
      const char *got = nsl_dict_str(dict, nsl_i32(text)[i]);
      if (!want) assert_null(got);
      else if (!got || strcmp(want, got) != 0) fail_msg("%s: nvtx row %lld: '%s' vs SQL '%s'", base(files[f]), (long long)i, got, want);
      int ty = sqlite3_column_int(st, 1);
      assert_string_equal(nsl_dict_str(dict, nsl_i32(kind)[i]), ty == 59 ? "push_pop" : ty == 60 ? "start_end" : "mark");
      const char *dom = (const char *)sqlite3_column_text(st, 2);
      if (dom) assert_string_equal(nsl_dict_str(dict, nsl_i32(domain)[i]), dom);
      else assert_int_equal(nsl_i32(domain)[i], -1);
      if (sqlite3_column_type(st, 3) == SQLITE_NULL) assert_true(nsl_i64(stop)[i] == NSL_NULL_I64);
      else assert_true(nsl_i64(stop)[i] == sqlite3_column_int64(st, 3));
    }
    sqlite3_finalize(st);
    assert_int_equal(i, text->len);
    checked++;
    nsl_trace_close(tr);
    sqlite3_close(db);
  }
  assert_true(checked >= 4);
}

/* The MPI export names its domain in an event of type 75. */
static void test_nvtx_domain_names(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    if (!strstr(files[f], "mpi_cuda_rank0")) continue;
    sqlite3 *db = oracle_open(files[f]);
    int64_t want = sql_i64(db, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34,59,60) AND domainId = "
                               "(SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI')");
    assert_true(want > 0);
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    nsl_table *t = load_all(tr, "nvtx");
    nsl_column *domain = col(t, "domain");
    int32_t mpi = nsl_dict_find(nsl_trace_dict(tr), "MPI", 3);
    int64_t got = 0;
    for (int64_t i = 0; i < domain->len; i++) got += nsl_i32(domain)[i] == mpi;
    assert_int_equal(got, want);
    nsl_trace_close(tr);
    sqlite3_close(db);
    return;
  }
  skip();
}

/* ---- pid / tid bits ---------------------------------------------------- */

static void check_ids(sqlite3 *db, const char *file, nsl_table *t, const char *sql, int with_tid) {
  nsl_column *pid = col(t, "pid"), *tid = with_tid ? col(t, "tid") : NULL;
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  int64_t i = 0;
  for (; sqlite3_step(st) == SQLITE_ROW; i++) {
    if (nsl_i32(pid)[i] != sqlite3_column_int(st, 0))
      fail_msg("%s: row %lld pid %d vs SQL %d", file, (long long)i, nsl_i32(pid)[i], sqlite3_column_int(st, 0));
    if (tid && nsl_i32(tid)[i] != sqlite3_column_int(st, 1))
      fail_msg("%s: row %lld tid %d vs SQL %d", file, (long long)i, nsl_i32(tid)[i], sqlite3_column_int(st, 1));
  }
  sqlite3_finalize(st);
  assert_int_equal(i, pid->len);
}

static void test_pid_tid(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    if (has_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME"))
      check_ids(db, base(files[f]), load_all(tr, "api"),
                "SELECT (globalTid >> 24) & 16777215, globalTid & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY rowid", 1);
    if (has_table(db, "CUPTI_ACTIVITY_KIND_KERNEL"))
      check_ids(db, base(files[f]), load_all(tr, "kernels"),
                "SELECT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid", 0);
    if (has_table(db, "ThreadNames"))
      check_ids(db, base(files[f]), load_all(tr, "threads"),
                "SELECT (globalTid >> 24) & 16777215, globalTid & 16777215 FROM ThreadNames ORDER BY rowid", 1);
    if (has_table(db, "PROCESSES"))   /* the bits agree with the pid column nsys also writes */
      check_ids(db, base(files[f]), load_all(tr, "processes"), "SELECT pid FROM PROCESSES ORDER BY rowid", 0);
    else if (has_table(db, "ThreadNames")) {   /* one per pid, named after its main thread */
      nsl_table *t = load_all(tr, "processes");
      nsl_column *pid = col(t, "pid"), *name = col(t, "name");
      for (int64_t i = 0; i < pid->len; i++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, "SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                                                "WHERE (t.globalTid >> 24) & 16777215 = ?1 AND t.globalTid & 16777215 = ?1",
                                            -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_int(st, 1, nsl_i32(pid)[i]);
        if (sqlite3_step(st) == SQLITE_ROW)
          assert_string_equal(nsl_dict_str(nsl_trace_dict(tr), nsl_i32(name)[i]), (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
      }
    }
    nsl_trace_close(tr);
    sqlite3_close(db);
  }
}

/* ---- values of the other tables ---------------------------------------- */

static void test_memcpy_sync_memory_values(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    nsl_dict *dict = nsl_trace_dict(tr);
    if (has_table(db, "CUPTI_ACTIVITY_KIND_MEMCPY")) {
      nsl_table *t = load_all(tr, "memcpy");
      nsl_column *kind = col(t, "kind"), *bytes = col(t, "bytes"), *src = col(t, "src_kind");
      sqlite3_stmt *st;
      /* CUPTI's copy kinds (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP) and nsys's memory kinds (0 pageable, 1 pinned, 2 device) */
      assert_int_equal(sqlite3_prepare_v2(db,
                                          "SELECT CASE copyKind WHEN 1 THEN 'HtoD' WHEN 2 THEN 'DtoH' WHEN 8 THEN 'DtoD' "
                                          "WHEN 10 THEN 'PtoP' ELSE '?' END, bytes, CASE srcKind WHEN 0 THEN 'pageable' "
                                          "WHEN 1 THEN 'pinned' WHEN 2 THEN 'device' ELSE '?' END "
                                          "FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY rowid",
                                          -1, &st, NULL),
                       SQLITE_OK);
      for (int64_t i = 0; sqlite3_step(st) == SQLITE_ROW; i++) {
        assert_string_equal(nsl_dict_str(dict, nsl_i32(kind)[i]), (const char *)sqlite3_column_text(st, 0));
        assert_true(nsl_i64(bytes)[i] == sqlite3_column_int64(st, 1));
        assert_string_equal(nsl_dict_str(dict, nsl_i32(src)[i]), (const char *)sqlite3_column_text(st, 2));
      }
      sqlite3_finalize(st);
    }
    if (has_table(db, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) {
      nsl_table *t = load_all(tr, "sync");
      nsl_column *kind = col(t, "kind");
      sqlite3_stmt *st;
      assert_int_equal(sqlite3_prepare_v2(db,
                                          "SELECT CASE syncType WHEN 1 THEN 'event_sync' WHEN 2 THEN 'stream_wait_event' "
                                          "WHEN 3 THEN 'stream_sync' WHEN 4 THEN 'context_sync' ELSE '?' END "
                                          "FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ORDER BY rowid",
                                          -1, &st, NULL),
                       SQLITE_OK);
      for (int64_t i = 0; sqlite3_step(st) == SQLITE_ROW; i++)
        assert_string_equal(nsl_dict_str(dict, nsl_i32(kind)[i]), (const char *)sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
    if (has_table(db, "OSRT_API")) {
      nsl_table *t = load_all(tr, "osrt");
      nsl_column *name = col(t, "name");
      sqlite3_stmt *st;
      assert_int_equal(sqlite3_prepare_v2(db, "SELECT s.value FROM OSRT_API o LEFT JOIN StringIds s ON s.id = o.nameId ORDER BY o.rowid",
                                          -1, &st, NULL),
                       SQLITE_OK);
      for (int64_t i = 0; sqlite3_step(st) == SQLITE_ROW; i++)
        assert_string_equal(nsl_dict_str(dict, nsl_i32(name)[i]), (const char *)sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
    if (has_table(db, "SAMPLING_CALLCHAINS")) {
      nsl_table *t = load_all(tr, "frames");
      nsl_column *sym = col(t, "symbol"), *depth = col(t, "depth"), *stack = col(t, "stack");
      sqlite3_stmt *st;
      assert_int_equal(sqlite3_prepare_v2(db, "SELECT s.value, c.stackDepth, c.id FROM SAMPLING_CALLCHAINS c "
                                              "LEFT JOIN StringIds s ON s.id = c.symbol ORDER BY c.rowid",
                                          -1, &st, NULL),
                       SQLITE_OK);
      for (int64_t i = 0; sqlite3_step(st) == SQLITE_ROW; i++) {
        const char *want = (const char *)sqlite3_column_text(st, 0);
        if (want) assert_string_equal(nsl_dict_str(dict, nsl_i32(sym)[i]), want);
        assert_int_equal(nsl_i32(depth)[i], sqlite3_column_int(st, 1));
        assert_true(nsl_i64(stack)[i] == sqlite3_column_int64(st, 2));
      }
      sqlite3_finalize(st);
    }
    nsl_trace_close(tr);
    sqlite3_close(db);
  }
}

static void test_devices(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    nsl_trace *tr = open_trace((const char *const *)&files[f], 1);
    nsl_table *t = load_all(tr, "devices");
    nsl_dict *dict = nsl_trace_dict(tr);
    nsl_column *name = col(t, "name"), *sm = col(t, "sm_count"), *cc = col(t, "compute_capability");
    if (has_table(db, "TARGET_INFO_GPU")) {
      sqlite3_stmt *st;
      assert_int_equal(sqlite3_prepare_v2(db, "SELECT name, smCount, computeMajor || '.' || computeMinor FROM TARGET_INFO_GPU ORDER BY rowid",
                                          -1, &st, NULL),
                       SQLITE_OK);
      for (int64_t i = 0; sqlite3_step(st) == SQLITE_ROW; i++) {
        assert_string_equal(nsl_dict_str(dict, nsl_i32(name)[i]), (const char *)sqlite3_column_text(st, 0));
        assert_int_equal(nsl_i32(sm)[i], sqlite3_column_int(st, 1));
        assert_string_equal(nsl_dict_str(dict, nsl_i32(cc)[i]), (const char *)sqlite3_column_text(st, 2));
      }
      sqlite3_finalize(st);
    } else {   /* no GPU table: the devices of the activity tables, names unknown */
      nsl_column *dev = col(t, "device");
      assert_true(dev->len > 0);
      for (int64_t i = 0; i < dev->len; i++) {
        assert_int_equal(nsl_i32(name)[i], -1);
        assert_int_equal(sql_i64(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = %d", nsl_i32(dev)[i]) > 0, 1);
      }
    }
    nsl_trace_close(tr);
    sqlite3_close(db);
  }
}

/* Exports whose GPU tables are empty or partial: the next source of devices. */
static void test_devices_fallbacks(void **state) {
  (void)state;
  NEED_DATA();
  const char *real = find_file("tiny");
  if (!real) skip();
  char path[1024];
  size_t len;
  char *bytes = read_all(real, &len);
  const char *edits[] = {"DELETE FROM TARGET_INFO_GPU", "DELETE FROM TARGET_INFO_GPU; DELETE FROM TARGET_INFO_CUDA_DEVICE"};
  for (int e = 0; e < 2; e++) {
    snprintf(path, sizeof path, "%s/devices%d.sqlite", tmpdir, e);
    write_all(path, bytes, len);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, edits[e], NULL, NULL, NULL), SQLITE_OK);
    int64_t want = oracle_rows(db, "devices");
    int64_t sm = e == 0 ? sql_i64(db, "SELECT numMultiprocessors FROM TARGET_INFO_CUDA_DEVICE") : NSL_NULL_I32;
    int64_t dev = e == 0 ? sql_i64(db, "SELECT gpuId FROM TARGET_INFO_CUDA_DEVICE") : sql_i64(db, "SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL");
    sqlite3_close(db);
    assert_int_equal(want, 1);
    nsl_trace *tr = open_trace((const char *const *)&(const char *){path}, 1);
    nsl_table *t = load_all(tr, "devices");
    assert_int_equal(table_rows(t, NULL), want);
    assert_int_equal(nsl_i32(col(t, "device"))[0], dev);
    assert_int_equal(nsl_i32(col(t, "sm_count"))[0], sm);
    assert_int_equal(nsl_i32(col(t, "name"))[0], -1);
    nsl_trace_close(tr);
  }
  free(bytes);
}

/* ---- report metadata --------------------------------------------------- */

static void test_report_info(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    sqlite3 *db = oracle_open(files[f]);
    void *src = NULL;
    nsl_report_info info;
    nsl_error err = {0};
    if (nsl__nsys_open_file(files[f], &src, &info, &err) != NSL_OK) fail_msg("%s", err.msg);
    assert_string_equal(info.path, files[f]);
    char stem[256];
    snprintf(stem, sizeof stem, "%s", base(files[f]));
    *strrchr(stem, '.') = '\0';
    assert_string_equal(info.name, stem);
    assert_int_equal(info.rank, strstr(stem, "rank0") ? 0 : -1);
    const char *meta = has_table(db, "META_DATA_EXPORT") ? "META_DATA_EXPORT" : has_table(db, "EXPORT_META_DATA") ? "EXPORT_META_DATA" : NULL;
    char want[256] = "";
    if (meta) {
      sqlite3_stmt *st;
      char sql[256];
      snprintf(sql, sizeof sql, "SELECT value FROM %s WHERE name = 'EXPORT_PRODUCT_VERSION'", meta);
      sqlite3_prepare_v2(db, sql, -1, &st, NULL);
      if (sqlite3_step(st) == SQLITE_ROW) snprintf(want, sizeof want, "%s", (const char *)sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
      assert_string_equal(info.nsys_version, want);
      assert_true(info.schema_version[0] != '\0');
    } else if (!has_table(db, "TARGET_INFO_SYSTEM_ENV")) {
      assert_string_equal(info.nsys_version, "");   /* nothing in the file says */
    }
    if (has_table(db, "TARGET_INFO_SESSION_START_TIME"))
      assert_true(info.start_utc == sql_i64(db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME"));
    else assert_true(info.start_utc == 0);
    if (has_table(db, "ANALYSIS_DETAILS")) assert_true(info.duration == sql_i64(db, "SELECT duration FROM ANALYSIS_DETAILS"));
    if (has_table(db, "TARGET_INFO_SYSTEM_ENV")) {
      sqlite3_stmt *st;
      sqlite3_prepare_v2(db, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'", -1, &st, NULL);
      if (sqlite3_step(st) == SQLITE_ROW) assert_string_equal(info.host, (const char *)sqlite3_column_text(st, 0));
      sqlite3_finalize(st);
    }
    if (strstr(stem, "mpi_cuda_rank0")) {   /* EXPORT_META_DATA (2022.2) */
      assert_string_equal(info.nsys_version, "2022.2.1.31");
      assert_string_equal(info.schema_version, "2.9.1");
    }
    nsl__nsys_source_ops.close(src);
    sqlite3_close(db);
  }
}

/* ---- several reports --------------------------------------------------- */

static void test_two_reports_same_file(void **state) {
  (void)state;
  NEED_DATA();
  const char *p = find_file("pytorch_nccl");
  if (!p) skip();
  const char *paths[] = {p, p};
  nsl_trace *one = open_trace(paths, 1), *two = open_trace(paths, 2);
  assert_int_equal(nsl_trace_nreports(two), 2);
  assert_string_not_equal(nsl_trace_report(two, 0)->name, nsl_trace_report(two, 1)->name);
  const char *tables[] = {"kernels", "nvtx", "api", "memcpy", "threads"};
  for (int i = 0; i < 5; i++) {
    nsl_table *a = load_all(one, tables[i]), *b = load_all(two, tables[i]);
    int64_t n = table_rows(a, NULL);
    assert_int_equal(table_rows(b, NULL), 2 * n);
    nsl_column *rep = col(b, "report");
    for (int64_t r = 0; r < 2 * n; r++) assert_int_equal(nsl_i32(rep)[r], r < n ? 0 : 1);
    if (nsl_table_find(a, "start") >= 0) {
      nsl_column *s1 = col(a, "start"), *s2 = col(b, "start");
      for (int64_t r = 0; r < n; r++) {   /* same session start: no shift */
        assert_true(nsl_i64(s2)[r] == nsl_i64(s1)[r]);
        assert_true(nsl_i64(s2)[n + r] == nsl_i64(s1)[r]);
      }
    }
    if (nsl_table_find(a, "name") >= 0) {   /* one dictionary: equal strings, equal ids */
      nsl_column *n1 = col(a, "name"), *n2 = col(b, "name");
      for (int64_t r = 0; r < n; r++) {
        assert_int_equal(nsl_i32(n2)[r], nsl_i32(n2)[n + r]);
        const char *x = nsl_dict_str(nsl_trace_dict(one), nsl_i32(n1)[r]), *y = nsl_dict_str(nsl_trace_dict(two), nsl_i32(n2)[r]);
        if (x || y) assert_string_equal(x, y);
      }
    }
  }
  nsl_trace_close(one);
  nsl_trace_close(two);
}

static void test_two_reports_aligned(void **state) {
  (void)state;
  NEED_DATA();
  const char *pa = find_file("pytorch_h100"), *pb = find_file("pytorch_nccl");
  if (!pa || !pb) skip();
  const char *paths[] = {pa, pb};
  nsl_trace *tr = open_trace(paths, 2);
  int64_t ua = nsl_trace_report(tr, 0)->start_utc, ub = nsl_trace_report(tr, 1)->start_utc;
  assert_true(ua > 0 && ub > 0 && ua != ub);
  int64_t first = ua < ub ? ua : ub;
  const char *tables[] = {"kernels", "nvtx", "api"};
  const char *sql[] = {"SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid",
                       "SELECT start, end FROM NVTX_EVENTS WHERE eventType IN (34,59,60) ORDER BY rowid",
                       "SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY rowid"};
  for (int i = 0; i < 3; i++) {
    nsl_table *t = load_all(tr, tables[i]);
    nsl_column *start = col(t, "start"), *stop = col(t, "stop"), *rep = col(t, "report");
    int64_t row = 0;
    for (int r = 0; r < 2; r++) {
      sqlite3 *db = oracle_open(paths[r]);
      int64_t shift = (r == 0 ? ua : ub) - first;
      sqlite3_stmt *st;
      assert_int_equal(sqlite3_prepare_v2(db, sql[i], -1, &st, NULL), SQLITE_OK);
      int64_t n = 0;
      for (; sqlite3_step(st) == SQLITE_ROW; n++, row++) {
        assert_int_equal(nsl_i32(rep)[row], r);
        assert_true(nsl_i64(start)[row] == sqlite3_column_int64(st, 0) + shift);
        if (sqlite3_column_type(st, 1) != SQLITE_NULL) assert_true(nsl_i64(stop)[row] == sqlite3_column_int64(st, 1) + shift);
      }
      sqlite3_finalize(st);
      assert_int_equal(n, oracle_rows(db, tables[i]));
      sqlite3_close(db);
    }
    assert_int_equal(row, start->len);
  }
  /* the reports table */
  nsl_table *rt = load_all(tr, "reports");
  assert_int_equal(table_rows(rt, NULL), 2);
  nsl_trace_close(tr);
}

/* ---- parallel load: the same columns and string ids as a sequential one --- */

static void test_parallel_equals_sequential(void **state) {
  (void)state;
  NEED_DATA();
  if (nfiles < 3) skip();
  const char *paths[MAX_FILES + 2];
  int n = 0;
  for (int f = 0; f < nfiles; f++) paths[n++] = files[f];
  paths[n++] = files[0];   /* a report twice */
  const char *saved = getenv("NSL_THREADS");
  char *keep = saved ? strdup(saved) : NULL;
  setenv("NSL_THREADS", "1", 1);
  nsl_trace *seq = open_trace(paths, n);
  setenv("NSL_THREADS", "5", 1);
  nsl_trace *par = open_trace(paths, n);
  for (const char *const *t = nsl_model_tables(); *t; t++) {
    nsl_table *a = load_all(seq, *t), *b = load_all(par, *t);
    assert_int_equal(nsl_table_ncols(a), nsl_table_ncols(b));
    assert_int_equal(table_rows(a, NULL), table_rows(b, NULL));
    assert_int_equal(table_rows(a, NULL), table_rows(b, NULL));
    for (int c = 0; c < nsl_table_ncols(a); c++) {
      nsl_column *x = nsl_table_column_at(a, c, NULL), *y = nsl_table_column_at(b, c, NULL);
      assert_int_equal(x->type, y->type);
      assert_int_equal(x->len, y->len);
      if (x->len && memcmp(x->data, y->data, (size_t)x->len * nsl_type_size(x->type)) != 0)
        fail_msg("%s.%s differs between sequential and parallel loads", *t, nsl_table_colname(a, c));
      if (x->type == NSL_STR) assert_ptr_equal(y->dict, nsl_trace_dict(par));
    }
  }
  /* counts before any load, in parallel */
  nsl_trace *cnt = open_trace(paths, n);
  nsl_table *k = NULL;
  assert_int_equal(nsl_trace_table(cnt, "nvtx", &k, NULL), NSL_OK);
  nsl_table *ks = NULL;
  assert_int_equal(nsl_trace_table(seq, "nvtx", &ks, NULL), NSL_OK);
  assert_int_equal(table_rows(k, NULL), table_rows(ks, NULL));
  nsl_trace_close(cnt);
  /* equal dictionaries: the parallel load interned in the same order */
  assert_int_equal(nsl_dict_size(nsl_trace_dict(seq)), nsl_dict_size(nsl_trace_dict(par)));
  for (int32_t i = 0; i < nsl_dict_size(nsl_trace_dict(seq)); i++)
    assert_string_equal(nsl_dict_str(nsl_trace_dict(seq), i), nsl_dict_str(nsl_trace_dict(par), i));
  nsl_trace_close(seq);
  nsl_trace_close(par);
  if (keep) setenv("NSL_THREADS", keep, 1);
  else unsetenv("NSL_THREADS");
  free(keep);
}

/* ---- the input is never touched --------------------------------------- */

static void test_input_untouched(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    char dir[512], copy[1024];
    snprintf(dir, sizeof dir, "%s/untouched%d", tmpdir, f);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(copy, sizeof copy, "%s/%s", dir, base(files[f]));
    size_t len, len2;
    char *bytes = read_all(files[f], &len);
    write_all(copy, bytes, len);
    struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};   /* a known mtime */
    assert_int_equal(utimensat(AT_FDCWD, copy, old, 0), 0);
    struct stat before, after;
    assert_int_equal(stat(copy, &before), 0);
    char *list_before = listing(dir);

    nsl_trace *tr = open_trace((const char *const *)&(const char *){copy}, 1);
    for (const char *const *t = nsl_model_tables(); *t; t++) load_all(tr, *t);
    int64_t n = -1;
    nsl_error err = {0};
    assert_int_equal(nsl_trace_sql(tr, 0, "SELECT count(*) FROM StringIds", count_row, &n, &err), NSL_OK);
    assert_true(n > 0);
    char *list_during = listing(dir);   /* nothing beside it while open, either */
    assert_string_equal(list_during, list_before);
    nsl_trace_close(tr);

    assert_int_equal(stat(copy, &after), 0);
    char *list_after = listing(dir);
    char *bytes2 = read_all(copy, &len2);
    assert_string_equal(list_after, list_before);
    assert_int_equal(len2, len);
    assert_memory_equal(bytes2, bytes, len);
    assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    assert_true(after.st_size == before.st_size);
    free(bytes);
    free(bytes2);
    free(list_before);
    free(list_during);
    free(list_after);
  }
}

/* ---- paths URIs give meaning to, relative paths, WAL-mode files -------- */

static void test_odd_paths_and_wal(void **state) {
  (void)state;
  NEED_DATA();
  const char *real = find_file("tiny");
  if (!real) real = files[0];
  char dir[512], path[1024];
  snprintf(dir, sizeof dir, "%s/we ird?#%%25dir", tmpdir);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/a b?c#d%%e.sqlite", dir);
  size_t len;
  char *bytes = read_all(real, &len);
  write_all(path, bytes, len);
  /* switch the copy to WAL mode (SQLite writes it: before the fingerprint) */
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  size_t wlen;
  char *wal = read_all(path, &wlen);
  assert_int_equal(wal[18], 2);
  char *list_before = listing(dir);
  sqlite3 *oracle = oracle_open(real);
  int64_t kernels = oracle_rows(oracle, "kernels"), threads = oracle_rows(oracle, "threads");
  sqlite3_close(oracle);

  nsl_trace *tr = open_trace((const char *const *)&(const char *){path}, 1);
  assert_int_equal(table_rows(load_all(tr, "kernels"), NULL), kernels);
  assert_int_equal(table_rows(load_all(tr, "threads"), NULL), threads);
  char *list_open = listing(dir);
  assert_string_equal(list_open, list_before);   /* no -wal, no -shm */
  nsl_trace_close(tr);

  /* relative to the working directory */
  char cwd[1024];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(dir), 0);
  tr = open_trace((const char *const *)&(const char *){"a b?c#d%e.sqlite"}, 1);
  assert_int_equal(table_rows(load_all(tr, "kernels"), NULL), kernels);
  assert_string_equal(nsl_trace_report(tr, 0)->name, "a b?c#d%e");
  nsl_trace_close(tr);
  assert_int_equal(chdir(cwd), 0);

  /* the same image from memory */
  void *src = NULL;
  nsl_report_info info;
  nsl_error err = {0};
  if (nsl__nsys_open_image("wal.sqlite", wal, wlen, &src, &info, &err) != NSL_OK) fail_msg("%s", err.msg);
  tr = nsl_trace_new();
  assert_int_equal(nsl_trace_add_source(tr, &nsl__nsys_source_ops, src, &info, &err), NSL_OK);
  assert_int_equal(table_rows(load_all(tr, "kernels"), NULL), kernels);
  nsl_trace_close(tr);

  size_t len2;
  char *after = read_all(path, &len2);
  assert_int_equal(len2, wlen);
  assert_memory_equal(after, wal, wlen);
  char *list_after = listing(dir);
  assert_string_equal(list_after, list_before);
  free(bytes);
  free(wal);
  free(after);
  free(list_before);
  free(list_open);
  free(list_after);
}

/* ---- in-memory images --------------------------------------------------- */

static void test_open_image(void **state) {
  (void)state;
  NEED_DATA();
  for (int f = 0; f < nfiles; f++) {
    size_t len;
    char *bytes = read_all(files[f], &len);
    void *src = NULL;
    nsl_report_info info;
    nsl_error err = {0};
    char label[512];
    snprintf(label, sizeof label, "bundle.zip:reports/rank7.sqlite");
    if (nsl__nsys_open_image(label, bytes, len, &src, &info, &err) != NSL_OK) fail_msg("%s", err.msg);
    memset(bytes, 0, len);   /* the image was copied */
    free(bytes);
    assert_string_equal(info.name, "rank7");
    assert_int_equal(info.rank, 7);
    sqlite3 *db = oracle_open(files[f]);
    nsl_trace *tr = nsl_trace_new();
    assert_int_equal(nsl_trace_add_source(tr, &nsl__nsys_source_ops, src, &info, &err), NSL_OK);
    const char *tables[] = {"kernels", "nvtx", "api", "threads"};
    for (int i = 0; i < 4; i++) {
      nsl_table *t = load_all(tr, tables[i]);
      assert_int_equal(table_rows(t, NULL), oracle_rows(db, tables[i]));
    }
    nsl_trace_close(tr);
    sqlite3_close(db);
  }
}

/* ---- bad input ---------------------------------------------------------- */

static void expect_open_error(const char *path, const char *what) {
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  nsl_status rc = nsl_trace_open(&tr, &path, 1, NULL, &err);
  if (rc == NSL_OK) fail_msg("%s: opened without error", path);
  assert_null(tr);
  if (!strstr(err.msg, path)) fail_msg("error does not name the file: %s", err.msg);
  if (what && !strstr(err.msg, what)) fail_msg("error does not say '%s': %s", what, err.msg);
}

static void test_bad_inputs(void **state) {
  (void)state;
  char p[1024];
  snprintf(p, sizeof p, "%s/no-such-file.sqlite", tmpdir);
  expect_open_error(p, "No such file");
  expect_open_error(tmpdir, "directory");
  snprintf(p, sizeof p, "%s/notes.txt", tmpdir);
  write_all(p, "this is text, not a database\n", 29);
  expect_open_error(p, "not a database");
  snprintf(p, sizeof p, "%s/empty.sqlite", tmpdir);
  write_all(p, "", 0);
  expect_open_error(p, "empty");
  snprintf(p, sizeof p, "%s/bundle.zip", tmpdir);
  write_all(p, "PK\x03\x04 rest of a zip", 19);
  expect_open_error(p, "zip");   /* a zip goes to the bundle reader, which refuses this one */

  /* an SQLite database with one unrelated table */
  snprintf(p, sizeof p, "%s/other.sqlite", tmpdir);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "CREATE TABLE recipes (name TEXT, minutes INTEGER); INSERT INTO recipes VALUES ('soup', 30);",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  expect_open_error(p, "not an nsys export");

  /* nothing given */
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_trace_open(&tr, NULL, 0, NULL, &err), NSL_ERR_ARG);

  /* image of text */
  void *src = NULL;
  nsl_report_info info;
  assert_int_equal(nsl__nsys_open_image("member.sqlite", "hello", 5, &src, &info, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "member.sqlite"));
}

static void test_truncated(void **state) {
  (void)state;
  NEED_DATA();
  const char *real = find_file("pytorch_nccl");
  if (!real) skip();
  size_t len;
  char *bytes = read_all(real, &len);
  char p[1024];
  /* the first half of the bytes: the header promises more pages than there are */
  snprintf(p, sizeof p, "%s/half.sqlite", tmpdir);
  write_all(p, bytes, len / 2);
  expect_open_error(p, "truncated");
  void *src = NULL;
  nsl_report_info info;
  nsl_error err = {0};
  assert_int_equal(nsl__nsys_open_image(p, bytes, len / 2, &src, &info, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "truncated"));

  /* the same with the header's page count marked invalid and a whole number
   * of pages: open succeeds, reading the missing pages fails */
  unsigned page = (unsigned)((unsigned char)bytes[16] << 8 | (unsigned char)bytes[17]);
  size_t cut = (len / 2) / page * page;
  bytes[92] ^= 0x55;   /* version-valid-for != change counter: in-header size ignored */
  snprintf(p, sizeof p, "%s/cut.sqlite", tmpdir);
  write_all(p, bytes, cut);
  nsl_trace *tr = NULL;
  const char *path = p;
  nsl_status rc = nsl_trace_open(&tr, &path, 1, NULL, &err);
  if (rc == NSL_OK) {
    int failed = 0;
    for (const char *const *t = nsl_model_tables(); *t && !failed; t++) {
      nsl_table *tab = NULL;
      if (nsl_trace_table(tr, *t, &tab, &err) != NSL_OK) {
        failed = 1;
        break;
      }
      int nc = nsl_table_ncols(tab);
      const char **names = calloc((size_t)nc, sizeof *names);
      for (int i = 0; i < nc; i++) names[i] = nsl_table_colname(tab, i);
      failed = nsl_table_require(tab, names, nc, &err) != NSL_OK;
      free(names);
    }
    assert_true(failed);
    nsl_trace_close(tr);
  }
  if (!strstr(err.msg, p) || !strstr(err.msg, "truncated or corrupt")) fail_msg("unclear error: %s", err.msg);
  free(bytes);
}

/* ---- raw SQL ------------------------------------------------------------ */

static void test_sql_read_only(void **state) {
  (void)state;
  NEED_DATA();
  const char *p = find_file("tiny");
  if (!p) p = files[0];
  void *src = NULL;
  nsl_report_info info;
  nsl_error err = {0};
  assert_int_equal(nsl__nsys_open_file(p, &src, &info, &err), NSL_OK);
  int64_t n = -1;
  assert_int_equal(nsl__nsys_sql(src, "SELECT count(*) FROM StringIds;", count_row, &n, &err), NSL_OK);
  assert_true(n > 0);
  const char *bad[] = {"DELETE FROM StringIds", "CREATE TABLE x (a)", "ATTACH '/tmp/nsl_x.db' AS x",
                       "PRAGMA journal_mode = WAL", "SELECT 1; DELETE FROM StringIds", "SELECT * FROM no_such_table", "",
                       "VACUUM INTO '/tmp/nsl_x.db'", "PRAGMA mmap_size = 0"};
  for (int i = 0; i < 9; i++) {
    nsl_error_clear(&err);
    if (nsl__nsys_sql(src, bad[i], count_row, &n, &err) == NSL_OK) fail_msg("accepted: %s", bad[i]);
    assert_true(err.msg[0] != '\0');
  }
  assert_int_equal(access("/tmp/nsl_x.db", F_OK), -1);
  assert_int_equal(nsl__nsys_sql(src, "PRAGMA table_info(StringIds)", NULL, NULL, &err), NSL_OK);
  n = -1;
  assert_int_equal(nsl__nsys_sql(src, "SELECT count(*) FROM pragma_table_info('StringIds')", count_row, &n, &err), NSL_OK);
  assert_int_equal(n, 2);
  nsl__nsys_source_ops.close(src);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_table_row_counts),
      cmocka_unit_test(test_kernel_names_and_durations),
      cmocka_unit_test(test_api_names),
      cmocka_unit_test(test_nvtx_text),
      cmocka_unit_test(test_nvtx_domain_names),
      cmocka_unit_test(test_pid_tid),
      cmocka_unit_test(test_memcpy_sync_memory_values),
      cmocka_unit_test(test_devices),
      cmocka_unit_test(test_devices_fallbacks),
      cmocka_unit_test(test_report_info),
      cmocka_unit_test(test_two_reports_same_file),
      cmocka_unit_test(test_two_reports_aligned),
      cmocka_unit_test(test_parallel_equals_sequential),
      cmocka_unit_test(test_input_untouched),
      cmocka_unit_test(test_open_image),
      cmocka_unit_test(test_odd_paths_and_wal),
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_sql_read_only),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
