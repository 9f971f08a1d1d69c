/*
 * test_parquet.c -- the Parquet reader (src/source/parquet.c).
 *
 * Oracles: the CSV copies of the nsys-jax parquet files in
 * $NSL_DATA_DIR/nsys-jax/mini/procN/ (written by pandas from the same data),
 * and, for the encodings and codecs those files do not use, small files that
 * this test writes itself from the Parquet format specification (Thrift
 * compact protocol, RLE/bit-packed hybrid) with known values.  Bad input:
 * truncations and byte flips of the real files must give errors, never
 * crashes (run under ASan/UBSan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <math.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "source/parquet.h"

/* ---- data helpers ----------------------------------------------------------- */

static const char *data_dir(void) {
  const char *d = getenv("NSL_DATA_DIR");
  return d && *d ? d : NULL;
}

/* Reads member `name` of the zip at path into a malloc'd buffer. */
static uint8_t *zip_member(const char *path, const char *name, size_t *size) {
  struct archive *a = archive_read_new();
  archive_read_support_format_zip(a);
  uint8_t *buf = NULL;
  if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) goto done;
  struct archive_entry *e;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    if (strcmp(archive_entry_pathname(e), name) != 0) continue;
    size_t cap = 1 << 16, n = 0;
    buf = malloc(cap);
    for (;;) {
      if (n == cap) buf = realloc(buf, cap *= 2);
      la_ssize_t r = archive_read_data(a, buf + n, cap - n);
      if (r < 0) {
        free(buf);
        buf = NULL;
        break;
      }
      if (r == 0) break;
      n += (size_t)r;
    }
    *size = n;
    break;
  }
done:
  archive_read_free(a);
  return buf;
}

static uint8_t *proc_member(int proc, const char *name, size_t *size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/nsys-jax/pax_fsdp4_4proc_proc%d.zip", data_dir(), proc);
  return zip_member(path, name, size);
}

/* A parsed CSV file (RFC 4180: quotes, doubled quotes, newlines in quotes). */
typedef struct csv {
  int nrows, ncols;   /* nrows excludes the header */
  char **cells;       /* (nrows + 1) * ncols, row-major, header first */
} csv;

static const char *csv_at(const csv *c, int row, int col) {
  return c->cells[(size_t)(row + 1) * (size_t)c->ncols + (size_t)col];
}

static int csv_col(const csv *c, const char *name) {
  for (int i = 0; i < c->ncols; i++)
    if (strcmp(c->cells[i], name) == 0) return i;
  return -1;
}

static void csv_free(csv *c) {
  for (size_t i = 0; i < (size_t)(c->nrows + 1) * (size_t)c->ncols; i++) free(c->cells[i]);
  free(c->cells);
}

static int csv_load(const char *path, csv *out) {
  gzFile g = gzopen(path, "rb");
  if (!g) return -1;
  size_t cap = 1 << 20, n = 0;
  char *txt = malloc(cap);
  int r;
  while ((r = gzread(g, txt + n, (unsigned)(cap - n))) > 0) {
    n += (size_t)r;
    if (n == cap) txt = realloc(txt, cap *= 2);
  }
  gzclose(g);
  size_t ncell = 0, ccap = 1024;
  char **cells = malloc(ccap * sizeof *cells);
  int ncols = 0, row_fields = 0, nrows = 0;
  size_t i = 0;
  char *field = malloc(n + 1);
  while (i < n) {
    size_t fl = 0;
    if (txt[i] == '"') {
      i++;
      while (i < n) {
        if (txt[i] == '"' && i + 1 < n && txt[i + 1] == '"') {
          field[fl++] = '"';
          i += 2;
        } else if (txt[i] == '"') {
          i++;
          break;
        } else {
          field[fl++] = txt[i++];
        }
      }
    }
    while (i < n && txt[i] != ',' && txt[i] != '\n' && txt[i] != '\r') field[fl++] = txt[i++];
    field[fl] = 0;
    if (ncell == ccap) cells = realloc(cells, (ccap *= 2) * sizeof *cells);
    cells[ncell++] = strdup(field);
    row_fields++;
    if (i < n && txt[i] == ',') {
      i++;
      continue;
    }
    if (i < n && txt[i] == '\r') i++;
    if (i < n && txt[i] == '\n') i++;
    if (nrows == 0 && ncols == 0) ncols = row_fields;
    else if (row_fields != ncols) {
      fprintf(stderr, "%s: row %d has %d fields, header %d\n", path, nrows, row_fields, ncols);
      abort();
    } else nrows++;
    row_fields = 0;
  }
  free(field);
  free(txt);
  out->nrows = nrows;
  out->ncols = ncols;
  out->cells = cells;
  return 0;
}

static int load_proc_csv(int proc, const char *file, csv *c) {
  char path[4096];
  snprintf(path, sizeof path, "%s/nsys-jax/mini/proc%d/%s", data_dir(), proc, file);
  return csv_load(path, c);
}

static nsl_parquet *open_member(int proc, const char *name) {
  size_t size = 0;
  uint8_t *buf = proc_member(proc, name, &size);
  assert_non_null(buf);
  nsl_parquet *pq = NULL;
  nsl_error err = {0};
  char label[256];
  snprintf(label, sizeof label, "proc%d:%s", proc, name);
  nsl_status st = nsl__parquet_open_mem(&pq, label, buf, size, free, &err);
  if (st != NSL_OK) fail_msg("%s", err.msg);
  return pq;
}

static nsl_column *read_col(nsl_parquet *pq, const char *name, nsl_dict *dict) {
  int idx = nsl__parquet_find(pq, name);
  if (idx < 0) fail_msg("no column '%s'", name);
  nsl_column *c = NULL;
  nsl_error err = {0};
  if (nsl__parquet_read_column(pq, idx, dict, &c, &err) != NSL_OK) fail_msg("%s", err.msg);
  assert_int_equal(c->len, nsl__parquet_nrows(pq));
  return c;
}

/* Compares a decoded column with a CSV column: strings (NULL is the empty
 * field), integers, doubles (NaN is the empty field), exactly. */
static void check_column(const nsl_column *c, const nsl_dict *d, const csv *t, int tcol,
                         const int64_t *rows, int64_t n, const char *what) {
  for (int64_t k = 0; k < n; k++) {
    int64_t r = rows ? rows[k] : k;
    const char *want = csv_at(t, (int)k, tcol);
    switch (c->type) {
    case NSL_STR: {
      int32_t id = nsl_i32(c)[r];
      const char *got = id < 0 ? "" : nsl_dict_str(d, id);
      if (strcmp(got, want) != 0) fail_msg("%s row %lld: '%s' != '%s'", what, (long long)r, got, want);
      break;
    }
    case NSL_I64: {
      int64_t v = nsl_i64(c)[r];
      if (!*want) {
        if (v != NSL_NULL_I64) fail_msg("%s row %lld: %lld, want NULL", what, (long long)r, (long long)v);
      } else if (v != strtoll(want, NULL, 10)) {
        fail_msg("%s row %lld: %lld != %s", what, (long long)r, (long long)v, want);
      }
      break;
    }
    case NSL_F64: {
      double v = nsl_f64(c)[r];
      if (!*want) {
        if (!isnan(v)) fail_msg("%s row %lld: %.17g, want NaN", what, (long long)r, v);
      } else if (v != strtod(want, NULL)) {
        fail_msg("%s row %lld: %.17g != %s", what, (long long)r, v, want);
      }
      break;
    }
    default:
      fail_msg("%s: unexpected type", what);
    }
  }
}

/* ---- real files against the CSV oracle ------------------------------------ */

static void test_trace_parquet_matches_csv(void **state) {
  (void)state;
  if (!data_dir()) skip();
  for (int proc = 0; proc < 4; proc++) {
    nsl_parquet *pq = open_member(proc, "nvtx_gpu_proj_trace/trace.parquet");
    csv t;
    assert_int_equal(load_proc_csv(proc, "nvtx_gpu_proj_trace.trace.csv.gz", &t), 0);
    assert_int_equal(nsl__parquet_nrows(pq), t.nrows);
    assert_int_equal(nsl__parquet_ncols(pq), t.ncols);
    assert_non_null(strstr(nsl__parquet_created_by(pq), "parquet-cpp-arrow"));
    assert_non_null(nsl__parquet_metadata(pq, "pandas"));
    nsl_dict *d = nsl_dict_new();
    for (int i = 0; i < t.ncols; i++) {
      const char *name = t.cells[i];
      assert_string_equal(nsl__parquet_colname(pq, i), name);
      nsl_column *c = read_col(pq, name, d);
      char what[128];
      snprintf(what, sizeof what, "proc%d %s", proc, name);
      check_column(c, d, &t, i, NULL, t.nrows, what);
      nsl_column_release(c);
    }
    /* Types as pandas wrote them: nullable integers became doubles. */
    const nsl_parquet_colinfo *ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "Name"));
    assert_int_equal(ci->physical, NSL_PQ_BYTE_ARRAY);
    assert_int_equal(ci->logical, NSL_PQ_L_STRING);
    assert_int_equal(ci->type, NSL_STR);
    assert_true(ci->nullable);
    ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "Projected Start"));
    assert_int_equal(ci->physical, NSL_PQ_INT64);
    assert_int_equal(ci->type, NSL_I64);
    ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "ParentId"));
    assert_int_equal(ci->physical, NSL_PQ_DOUBLE);
    assert_int_equal(ci->type, NSL_F64);
    nsl_dict_release(d);
    csv_free(&t);
    nsl__parquet_close(pq);
  }
}

static void test_read_as_conversions(void **state) {
  (void)state;
  if (!data_dir()) skip();
  nsl_parquet *pq = open_member(1, "nvtx_gpu_proj_trace/trace.parquet");
  csv t;
  assert_int_equal(load_proc_csv(1, "nvtx_gpu_proj_trace.trace.csv.gz", &t), 0);
  nsl_dict *d = nsl_dict_new();
  nsl_error err = {0};
  nsl_column *c;
  /* doubles holding nullable integers -> int64 with NULLs */
  const char *intlike[] = {"Orig Start", "Orig Duration", "Lvl", "RangeId", "ParentId"};
  for (size_t k = 0; k < sizeof intlike / sizeof *intlike; k++) {
    int idx = nsl__parquet_find(pq, intlike[k]);
    assert_int_equal(nsl__parquet_read_column_as(pq, idx, NSL_I64, d, &c, &err), NSL_OK);
    assert_int_equal(c->type, NSL_I64);
    check_column(c, d, &t, csv_col(&t, intlike[k]), NULL, t.nrows, intlike[k]);
    nsl_column_release(c);
  }
  /* I32 */
  int lvl = nsl__parquet_find(pq, "Lvl"), tcol = csv_col(&t, "Lvl");
  assert_int_equal(nsl__parquet_read_column_as(pq, lvl, NSL_I32, d, &c, &err), NSL_OK);
  for (int r = 0; r < t.nrows; r++) {
    const char *w = csv_at(&t, r, tcol);
    assert_int_equal(nsl_i32(c)[r], *w ? (int32_t)strtol(w, NULL, 10) : NSL_NULL_I32);
  }
  nsl_column_release(c);
  /* int64 -> F64 and BOOL */
  int ngpu = nsl__parquet_find(pq, "NumGPUOps");
  tcol = csv_col(&t, "NumGPUOps");
  assert_int_equal(nsl__parquet_read_column_as(pq, ngpu, NSL_F64, d, &c, &err), NSL_OK);
  for (int r = 0; r < t.nrows; r++) assert_true(nsl_f64(c)[r] == strtod(csv_at(&t, r, tcol), NULL));
  nsl_column_release(c);
  assert_int_equal(nsl__parquet_read_column_as(pq, ngpu, NSL_BOOL, d, &c, &err), NSL_OK);
  for (int r = 0; r < t.nrows; r++)
    assert_int_equal(nsl_bool(c)[r], strtoll(csv_at(&t, r, tcol), NULL, 10) != 0);
  nsl_column_release(c);
  /* Projected Start does not fit an int32 */
  assert_int_equal(
      nsl__parquet_read_column_as(pq, nsl__parquet_find(pq, "Projected Start"), NSL_I32, d, &c, &err),
      NSL_ERR_FORMAT);
  assert_null(c);
  assert_non_null(strstr(err.msg, "Projected Start"));
  /* strings only as strings, and only with a dictionary */
  int name = nsl__parquet_find(pq, "Name");
  assert_int_equal(nsl__parquet_read_column_as(pq, name, NSL_I64, d, &c, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__parquet_read_column(pq, name, NULL, &c, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__parquet_read_column_as(pq, lvl, NSL_STR, d, &c, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__parquet_read_column(pq, 99, d, &c, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__parquet_read_column(pq, -1, d, &c, &err), NSL_ERR_ARG);
  assert_null(nsl__parquet_colname(pq, 15));
  assert_null(nsl__parquet_column_info(pq, -1));
  assert_int_equal(nsl__parquet_find(pq, "nope"), -1);
  assert_null(nsl__parquet_metadata(pq, "nope"));
  nsl_dict_release(d);
  csv_free(&t);
  nsl__parquet_close(pq);
}

/* Does parquet row r equal CSV row k in every column? */
static int row_equal(nsl_column *const *cols, const nsl_dict *d, const csv *t, int64_t r, int k) {
  for (int i = 0; i < t->ncols; i++) {
    const char *want = csv_at(t, k, i);
    const nsl_column *c = cols[i];
    if (c->type == NSL_STR) {
      int32_t id = nsl_i32(c)[r];
      if (strcmp(id < 0 ? "" : nsl_dict_str(d, id), want) != 0) return 0;
    } else if (c->type == NSL_I64) {
      if (nsl_i64(c)[r] != (*want ? strtoll(want, NULL, 10) : NSL_NULL_I64)) return 0;
    } else {
      return 0;
    }
  }
  return 1;
}

/* thread-metadata.filtered.csv holds a subset of the rows (those nsys-jax
 * keeps), in file order: every CSV row must be found, in order. */
static void test_thread_metadata_matches_csv(void **state) {
  (void)state;
  if (!data_dir()) skip();
  for (int proc = 0; proc < 4; proc++) {
    nsl_parquet *pq = open_member(proc, "thread-metadata.parquet");
    csv t;
    assert_int_equal(load_proc_csv(proc, "thread-metadata.filtered.csv.gz", &t), 0);
    assert_int_equal(nsl__parquet_ncols(pq), t.ncols);
    assert_true(t.nrows > 1000);
    nsl_dict *d = nsl_dict_new();
    nsl_column *cols[8];
    for (int i = 0; i < t.ncols; i++) {
      assert_string_equal(nsl__parquet_colname(pq, i), t.cells[i]);
      cols[i] = read_col(pq, t.cells[i], d);
    }
    int64_t r = 0, n = nsl__parquet_nrows(pq);
    int k = 0;
    for (; k < t.nrows; k++) {
      while (r < n && !row_equal(cols, d, &t, r, k)) r++;
      if (r == n) fail_msg("proc%d: CSV row %d (%s, TID %s) not found in order", proc, k,
                           csv_at(&t, k, 0), csv_at(&t, k, 3));
      r++;
    }
    for (int i = 0; i < t.ncols; i++) nsl_column_release(cols[i]);
    nsl_dict_release(d);
    csv_free(&t);
    nsl__parquet_close(pq);
  }
}

static void test_system_metadata_matches_csv(void **state) {
  (void)state;
  if (!data_dir()) skip();
  for (int proc = 0; proc < 4; proc++) {
    nsl_parquet *pq = open_member(proc, "system-metadata.parquet");
    csv t;
    assert_int_equal(load_proc_csv(proc, "system-metadata.csv.gz", &t), 0);
    assert_int_equal(nsl__parquet_nrows(pq), t.nrows);
    assert_int_equal(nsl__parquet_ncols(pq), t.ncols);
    nsl_dict *d = nsl_dict_new();
    for (int i = 0; i < t.ncols; i++) {
      nsl_column *c = read_col(pq, t.cells[i], d);
      check_column(c, d, &t, i, NULL, t.nrows, t.cells[i]);
      nsl_column_release(c);
    }
    nsl_dict_release(d);
    csv_free(&t);
    nsl__parquet_close(pq);
  }
}

/* device-metadata has no CSV copy: check what PROVENANCE.md states (one
 * A100-SXM4-40GB per process) and the shape nsys-jax writes. */
static void test_device_metadata(void **state) {
  (void)state;
  if (!data_dir()) skip();
  for (int proc = 0; proc < 4; proc++) {
    nsl_parquet *pq = open_member(proc, "device-metadata.parquet");
    assert_int_equal(nsl__parquet_nrows(pq), 1);
    assert_int_equal(nsl__parquet_ncols(pq), 45);
    nsl_dict *d = nsl_dict_new();
    nsl_column *name = read_col(pq, "('TARGET_INFO_GPU', 'name')", d);
    assert_string_equal(nsl_dict_str(d, nsl_i32(name)[0]), "NVIDIA A100-SXM4-40GB");
    nsl_column *sm = read_col(pq, "('TARGET_INFO_GPU', 'smCount')", d);
    assert_int_equal(nsl_i64(sm)[0], 108);
    nsl_column *nvtx = read_col(pq, "('TARGET_INFO_NVTX_CUDA_DEVICE', 'name')", d);
    char want[64];
    const char *got = nsl_dict_str(d, nsl_i32(nvtx)[0]);
    snprintf(want, sizeof want, "Xla:#global=%d,", proc);
    assert_true(strncmp(got, want, strlen(want)) == 0);
    snprintf(want, sizeof want, ",process=%d,", proc);
    assert_non_null(strstr(got, want));
    for (int i = 0; i < nsl__parquet_ncols(pq); i++) {
      nsl_column *c = read_col(pq, nsl__parquet_colname(pq, i), d);
      assert_false(nsl_column_is_null(c, 0));
      nsl_column_release(c);
    }
    nsl_column_release(name);
    nsl_column_release(sm);
    nsl_column_release(nvtx);
    nsl_dict_release(d);
    nsl__parquet_close(pq);
  }
  nsl_parquet *pq = open_member(0, "nvtx_gpu_proj_trace/files.parquet");
  nsl_dict *d = nsl_dict_new();
  nsl_column *c = read_col(pq, "File", d);
  assert_int_equal(c->len, 1);
  assert_string_equal(nsl_dict_str(d, nsl_i32(c)[0]), "report");
  nsl_column_release(c);
  nsl_dict_release(d);
  nsl__parquet_close(pq);
}

static void test_open_file(void **state) {
  (void)state;
  if (!data_dir()) skip();
  size_t size;
  uint8_t *buf = proc_member(2, "thread-metadata.parquet", &size);
  assert_non_null(buf);
  char path[] = "/tmp/nsl_test_parquet_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, buf, size), (ssize_t)size);
  close(fd);
  nsl_parquet *pq = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl__parquet_open_file(&pq, path, &err), NSL_OK);
  nsl_dict *d = nsl_dict_new();
  nsl_column *c = read_col(pq, "Name", d);
  assert_string_equal(nsl_dict_str(d, nsl_i32(c)[0]), "systemd");
  nsl_column_release(c);
  nsl_dict_release(d);
  nsl__parquet_close(pq);
  /* a borrowed buffer stays the caller's */
  assert_int_equal(nsl__parquet_open_mem(&pq, "borrowed", buf, size, NULL, &err), NSL_OK);
  nsl__parquet_close(pq);
  free(buf);
  unlink(path);
  assert_int_equal(nsl__parquet_open_file(&pq, path, &err), NSL_ERR_IO);
  assert_null(pq);
  assert_non_null(strstr(err.msg, path));
}

/* ---- a spec-driven writer for the features the real files lack ------------ */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static void b_put(buf *b, const void *s, size_t n) {
  if (b->n + n > b->cap) {
    while (b->n + n > b->cap) b->cap = b->cap ? b->cap * 2 : 256;
    b->p = realloc(b->p, b->cap);
  }
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
}
static void b_byte(buf *b, int v) {
  uint8_t c = (uint8_t)v;
  b_put(b, &c, 1);
}
static void b_le32(buf *b, uint32_t v) {
  uint8_t s[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  b_put(b, s, 4);
}
static void b_le64(buf *b, uint64_t v) {
  b_le32(b, (uint32_t)v);
  b_le32(b, (uint32_t)(v >> 32));
}
static void b_varint(buf *b, uint64_t v) {
  while (v >= 0x80) {
    b_byte(b, (int)(v & 0x7f) | 0x80);
    v >>= 7;
  }
  b_byte(b, (int)v);
}

/* Thrift compact protocol writer: one field-id stack per open struct. */
typedef struct tw {
  buf b;
  int last[32];
  int depth;
} tw;
static void tw_field(tw *t, int id, int type) {
  int d = id - t->last[t->depth];
  if (d > 0 && d <= 15) b_byte(&t->b, d << 4 | type);
  else {
    b_byte(&t->b, type);
    b_varint(&t->b, (uint64_t)((id << 1) ^ (id >> 31)));
  }
  t->last[t->depth] = id;
}
static void tw_i64(tw *t, int id, int64_t v) {
  tw_field(t, id, 6);
  b_varint(&t->b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}
static void tw_i32(tw *t, int id, int32_t v) {
  tw_field(t, id, 5);
  b_varint(&t->b, ((uint64_t)(int64_t)v << 1) ^ (uint64_t)((int64_t)v >> 63));
}
static void tw_bool(tw *t, int id, int v) { tw_field(t, id, v ? 1 : 2); }
static void tw_str(tw *t, int id, const char *s) {
  tw_field(t, id, 8);
  b_varint(&t->b, strlen(s));
  b_put(&t->b, s, strlen(s));
}
static void tw_begin(tw *t, int id) {   /* struct field (id 0: list element) */
  if (id) tw_field(t, id, 12);
  t->last[++t->depth] = 0;
}
static void tw_end(tw *t) {
  b_byte(&t->b, 0);
  t->depth--;
}
static void tw_list(tw *t, int id, int etype, int n) {
  tw_field(t, id, 9);
  if (n < 15) b_byte(&t->b, n << 4 | etype);
  else {
    b_byte(&t->b, 0xf0 | etype);
    b_varint(&t->b, (uint64_t)n);
  }
}

/* RLE/bit-packed hybrid: RLE runs for 8+ equal values, else bit-packed
 * groups of 8 (the last one padded). */
static void rle_encode(buf *b, const uint32_t *v, int n, int w) {
  int i = 0;
  while (i < n) {
    int run = 1;
    while (i + run < n && v[i + run] == v[i]) run++;
    if (run >= 8) {
      b_varint(b, (uint64_t)run << 1);
      for (int k = 0; k < (w + 7) / 8; k++) b_byte(b, (int)(v[i] >> (8 * k)) & 0xff);
      i += run;
      continue;
    }
    /* bit-pack groups until an RLE run of 8 starts at a group boundary */
    int groups = 0;
    int j = i;
    while (j < n) {
      int r2 = 1;
      while (j + r2 < n && v[j + r2] == v[j]) r2++;
      if (r2 >= 8 && groups > 0) break;
      j += 8;
      groups++;
    }
    b_varint(b, (uint64_t)groups << 1 | 1);
    uint64_t acc = 0;
    int nbits = 0;
    for (int k = 0; k < groups * 8; k++) {
      uint32_t x = i + k < n ? v[i + k] : 0;
      acc |= (uint64_t)x << nbits;
      nbits += w;
      while (nbits >= 8) {
        b_byte(b, (int)(acc & 0xff));
        acc >>= 8;
        nbits -= 8;
      }
    }
    i += groups * 8;
  }
}

static int bit_width(uint32_t max) {
  int w = 0;
  while (max >> w) w++;
  return w;
}

enum { W_PLAIN, W_DICT, W_DICT_THEN_PLAIN };

/* One synthetic column. */
typedef struct wcol {
  const char *name;
  int physical, repetition, converted;  /* converted -1: none */
  int logical;                          /* LogicalType union field id, 0: none */
  int unit;                             /* TimeUnit field id for TIMESTAMP */
  int int_bits, int_signed;
  int type_length;
  int encoding;                         /* W_* */
  const int64_t *iv;
  const double *dv;
  const char *const *sv;
  const uint8_t *nulls;                 /* 1: NULL */
} wcol;

typedef struct wopts {
  int codec;          /* 0 none, 1 snappy, 2 gzip, 6 zstd */
  int v2;             /* data page V2 */
  int rows_per_page;
  int rows_per_group;
  int v2_raw;         /* V2 values left uncompressed (is_compressed = false) */
  int bitpacked_levels; /* V1 definition levels in the deprecated BIT_PACKED encoding */
} wopts;

static void compress_page(int codec, const buf *in, buf *out) {
  out->n = 0;
  if (codec == 0) {
    b_put(out, in->p, in->n);
  } else if (codec == 1) {
    size_t cap = snappy_max_compressed_length(in->n);
    uint8_t *tmp = malloc(cap);
    assert_int_equal(snappy_compress((const char *)in->p, in->n, (char *)tmp, &cap), SNAPPY_OK);
    b_put(out, tmp, cap);
    free(tmp);
  } else if (codec == 2) {
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, in->n) + 32;
    uint8_t *tmp = malloc(cap);
    z.next_in = in->p;
    z.avail_in = (uInt)in->n;
    z.next_out = tmp;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    b_put(out, tmp, cap - z.avail_out);
    deflateEnd(&z);
    free(tmp);
  } else {
    size_t cap = ZSTD_compressBound(in->n);
    uint8_t *tmp = malloc(cap);
    size_t n = ZSTD_compress(tmp, cap, in->p, in->n, 3);
    assert_false(ZSTD_isError(n));
    b_put(out, tmp, n);
    free(tmp);
  }
}

static void plain_value(buf *b, const wcol *c, int row) {
  switch (c->physical) {
  case 1: b_le32(b, (uint32_t)c->iv[row]); break;
  case 2: b_le64(b, (uint64_t)c->iv[row]); break;
  case 3: {   /* INT96 from ns since the epoch */
    int64_t ns = c->iv[row], day = ns / INT64_C(86400000000000);
    int64_t rem = ns % INT64_C(86400000000000);
    if (rem < 0) { rem += INT64_C(86400000000000); day--; }
    b_le64(b, (uint64_t)rem);
    b_le32(b, (uint32_t)(day + 2440588));
    break;
  }
  case 4: {
    float f = (float)c->dv[row];
    uint32_t u;
    memcpy(&u, &f, 4);
    b_le32(b, u);
    break;
  }
  case 5: {
    uint64_t u;
    memcpy(&u, &c->dv[row], 8);
    b_le64(b, u);
    break;
  }
  case 6:
    b_le32(b, (uint32_t)strlen(c->sv[row]));
    b_put(b, c->sv[row], strlen(c->sv[row]));
    break;
  case 7: b_put(b, c->sv[row], (size_t)c->type_length); break;
  }
}

static int same_value(const wcol *c, int a, int b) {
  if (c->physical == 6 || c->physical == 7) return strcmp(c->sv[a], c->sv[b]) == 0;
  if (c->physical == 4 || c->physical == 5) return c->dv[a] == c->dv[b];
  return c->iv[a] == c->iv[b];
}

static void page_header(tw *t, int type, size_t usize, size_t csize) {
  t->depth = 0;
  t->last[0] = 0;
  tw_i32(t, 1, type);
  tw_i32(t, 2, (int32_t)usize);
  tw_i32(t, 3, (int32_t)csize);
}

typedef struct wchunk {
  int64_t data_off, dict_off, total;
  int64_t nvalues;
} wchunk;

/* Writes the pages of rows [r0, r1) of column c at the end of file. */
static wchunk write_chunk(buf *file, const wcol *c, const wopts *o, int r0, int r1) {
  wchunk ch = {0, -1, 0, r1 - r0};
  size_t start = file->n;
  int ndict = 0;
  int *dict_row = NULL, *index = calloc((size_t)(r1 - r0) + 1, sizeof(int));
  int use_dict = c->encoding != W_PLAIN && c->physical != 0;
  if (use_dict) {
    dict_row = calloc((size_t)(r1 - r0) + 1, sizeof(int));
    for (int r = r0; r < r1; r++) {
      if (c->nulls && c->nulls[r]) continue;
      int k = 0;
      while (k < ndict && !same_value(c, dict_row[k], r)) k++;
      if (k == ndict) dict_row[ndict++] = r;
      index[r - r0] = k;
    }
    buf body = {0}, comp = {0};
    for (int k = 0; k < ndict; k++) plain_value(&body, c, dict_row[k]);
    compress_page(o->codec, &body, &comp);
    tw t = {0};
    page_header(&t, 2, body.n, comp.n);
    tw_begin(&t, 7);
    tw_i32(&t, 1, ndict);
    tw_i32(&t, 2, 0);   /* PLAIN */
    tw_end(&t);
    b_byte(&t.b, 0);
    ch.dict_off = (int64_t)file->n;
    b_put(file, t.b.p, t.b.n);
    b_put(file, comp.p, comp.n);
    free(t.b.p);
    free(body.p);
    free(comp.p);
  }
  ch.data_off = (int64_t)file->n;
  int page = 0;
  for (int p0 = r0; p0 < r1; p0 += o->rows_per_page, page++) {
    int p1 = p0 + o->rows_per_page < r1 ? p0 + o->rows_per_page : r1;
    int n = p1 - p0, nnull = 0;
    int dict_page = use_dict && !(c->encoding == W_DICT_THEN_PLAIN && page > 0);
    buf lev = {0}, vals = {0};
    uint32_t *l = calloc((size_t)n + 1, sizeof *l), *ix = calloc((size_t)n + 1, sizeof *ix);
    int nv = 0;
    for (int r = p0; r < p1; r++) {
      int isnull = c->nulls && c->nulls[r];
      l[r - p0] = !isnull;
      nnull += isnull;
      if (!isnull) ix[nv++] = (uint32_t)index[r - r0];
    }
    if (c->repetition == 1 && o->bitpacked_levels) {   /* MSB first, no header */
      for (int j = 0; j < (n + 7) / 8; j++) {
        int byte = 0;
        for (int q = 0; q < 8 && 8 * j + q < n; q++) byte |= (int)l[8 * j + q] << (7 - q);
        b_byte(&lev, byte);
      }
    } else if (c->repetition == 1) {
      rle_encode(&lev, l, n, 1);
    }
    if (dict_page) {
      int w = bit_width(ndict ? (uint32_t)ndict - 1 : 0);
      b_byte(&vals, w);
      rle_encode(&vals, ix, nv, w);
    } else if (c->physical == 0) {   /* booleans: PLAIN bits, or RLE in V2 */
      uint32_t *bits = calloc((size_t)n + 1, sizeof *bits);
      int k = 0;
      for (int r = p0; r < p1; r++)
        if (!(c->nulls && c->nulls[r])) bits[k++] = (uint32_t)(c->iv[r] != 0);
      if (o->v2) {
        buf rle = {0};
        rle_encode(&rle, bits, k, 1);
        b_le32(&vals, (uint32_t)rle.n);
        b_put(&vals, rle.p, rle.n);
        free(rle.p);
      } else {
        for (int j = 0; j < (k + 7) / 8; j++) {
          int byte = 0;
          for (int q = 0; q < 8 && 8 * j + q < k; q++) byte |= (int)bits[8 * j + q] << q;
          b_byte(&vals, byte);
        }
      }
      free(bits);
    } else {
      for (int r = p0; r < p1; r++)
        if (!(c->nulls && c->nulls[r])) plain_value(&vals, c, r);
    }
    int enc = dict_page ? 8 : (c->physical == 0 && o->v2 ? 3 : 0);
    buf comp = {0};
    tw t = {0};
    if (!o->v2) {
      buf body = {0};
      if (c->repetition == 1) {
        if (!o->bitpacked_levels) b_le32(&body, (uint32_t)lev.n);
        b_put(&body, lev.p, lev.n);
      }
      b_put(&body, vals.p, vals.n);
      compress_page(o->codec, &body, &comp);
      page_header(&t, 0, body.n, comp.n);
      tw_begin(&t, 5);
      tw_i32(&t, 1, n);
      tw_i32(&t, 2, enc);
      tw_i32(&t, 3, o->bitpacked_levels ? 4 : 3);
      tw_i32(&t, 4, 3);
      tw_end(&t);
      b_byte(&t.b, 0);
      b_put(file, t.b.p, t.b.n);
      b_put(file, comp.p, comp.n);
      free(body.p);
    } else {
      compress_page(o->v2_raw ? 0 : o->codec, &vals, &comp);
      page_header(&t, 3, lev.n + vals.n, lev.n + comp.n);
      tw_begin(&t, 8);
      tw_i32(&t, 1, n);
      tw_i32(&t, 2, nnull);
      tw_i32(&t, 3, n);
      tw_i32(&t, 4, enc);
      tw_i32(&t, 5, (int32_t)lev.n);
      tw_i32(&t, 6, 0);
      if (o->codec == 0 || o->v2_raw) tw_bool(&t, 7, 0);
      tw_end(&t);
      b_byte(&t.b, 0);
      b_put(file, t.b.p, t.b.n);
      b_put(file, lev.p, lev.n);
      b_put(file, comp.p, comp.n);
    }
    free(t.b.p);
    free(comp.p);
    free(lev.p);
    free(vals.p);
    free(l);
    free(ix);
  }
  ch.total = (int64_t)(file->n - start);
  free(dict_row);
  free(index);
  return ch;
}

/* Writes a whole file of nrows rows; returns the image. */
static buf write_file(const wcol *cols, int ncols, int nrows, const wopts *o) {
  buf file = {0};
  b_put(&file, "PAR1", 4);
  int ngroups = nrows ? (nrows + o->rows_per_group - 1) / o->rows_per_group : 0;
  wchunk *chunks = calloc((size_t)(ngroups * ncols) + 1, sizeof *chunks);
  for (int g = 0; g < ngroups; g++) {
    int r0 = g * o->rows_per_group, r1 = r0 + o->rows_per_group < nrows ? r0 + o->rows_per_group : nrows;
    for (int c = 0; c < ncols; c++) chunks[g * ncols + c] = write_chunk(&file, &cols[c], o, r0, r1);
  }
  tw t = {0};
  tw_i32(&t, 1, 2);
  tw_list(&t, 2, 12, ncols + 1);
  tw_begin(&t, 0);
  tw_str(&t, 4, "schema");
  tw_i32(&t, 5, ncols);
  tw_end(&t);
  for (int c = 0; c < ncols; c++) {
    const wcol *w = &cols[c];
    tw_begin(&t, 0);
    tw_i32(&t, 1, w->physical);
    if (w->physical == 7) tw_i32(&t, 2, w->type_length);
    tw_i32(&t, 3, w->repetition);
    tw_str(&t, 4, w->name);
    if (w->converted >= 0) tw_i32(&t, 6, w->converted);
    if (w->logical) {
      tw_begin(&t, 10);
      tw_begin(&t, w->logical);
      if (w->logical == 8) {      /* TIMESTAMP {1: utc, 2: unit} */
        tw_bool(&t, 1, 1);
        tw_begin(&t, 2);
        tw_begin(&t, w->unit);
        tw_end(&t);
        tw_end(&t);
      } else if (w->logical == 10) {   /* INTEGER {1: i8 bits, 2: signed} */
        tw_field(&t, 1, 3);
        b_byte(&t.b, w->int_bits);
        tw_bool(&t, 2, w->int_signed);
      }
      tw_end(&t);
      tw_end(&t);
    }
    tw_end(&t);
  }
  tw_i64(&t, 3, nrows);
  tw_list(&t, 4, 12, ngroups);
  for (int g = 0; g < ngroups; g++) {
    int r0 = g * o->rows_per_group, r1 = r0 + o->rows_per_group < nrows ? r0 + o->rows_per_group : nrows;
    tw_begin(&t, 0);
    tw_list(&t, 1, 12, ncols);
    for (int c = 0; c < ncols; c++) {
      wchunk *ch = &chunks[g * ncols + c];
      tw_begin(&t, 0);
      tw_i64(&t, 2, ch->dict_off >= 0 ? ch->dict_off : ch->data_off);
      tw_begin(&t, 3);
      tw_i32(&t, 1, cols[c].physical);
      tw_list(&t, 2, 5, 1);
      b_byte(&t.b, 0);
      tw_list(&t, 3, 8, 1);
      b_varint(&t.b, strlen(cols[c].name));
      b_put(&t.b, cols[c].name, strlen(cols[c].name));
      tw_i32(&t, 4, o->codec);
      tw_i64(&t, 5, ch->nvalues);
      tw_i64(&t, 6, ch->total);
      tw_i64(&t, 7, ch->total);
      tw_i64(&t, 9, ch->data_off);
      if (ch->dict_off >= 0) tw_i64(&t, 11, ch->dict_off);
      tw_end(&t);
      tw_end(&t);
    }
    tw_i64(&t, 2, 0);
    tw_i64(&t, 3, r1 - r0);
    tw_end(&t);
  }
  tw_list(&t, 5, 12, 1);
  tw_begin(&t, 0);
  tw_str(&t, 1, "writer");
  tw_str(&t, 2, "test_parquet.c");
  tw_end(&t);
  tw_str(&t, 6, "nsl test writer");
  b_byte(&t.b, 0);
  b_put(&file, t.b.p, t.b.n);
  b_le32(&file, (uint32_t)t.b.n);
  b_put(&file, "PAR1", 4);
  free(t.b.p);
  free(chunks);
  return file;
}

#define NROWS 1000

typedef struct synth {
  int64_t i32[NROWS], i64[NROWS], u32[NROWS], ts[NROWS], flag[NROWS], low[NROWS];
  double f32[NROWS], f64[NROWS];
  const char *str[NROWS], *fixed[NROWS];
  uint8_t nulls[NROWS], none[NROWS];
  char strbuf[NROWS][24];
} synth;

static void synth_init(synth *s) {
  static const char *const fixed[] = {"abcd", "wxyz", "0123"};
  uint64_t x = 12345;
  for (int r = 0; r < NROWS; r++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    s->i32[r] = (int32_t)(x >> 33) - (1 << 29);
    s->i64[r] = (int64_t)(x >> 1) - (INT64_C(1) << 61);
    s->u32[r] = (int64_t)(uint32_t)(x >> 20);   /* beyond INT32_MAX sometimes */
    s->ts[r] = INT64_C(1720425600000000000) + (int64_t)r * 1000003;
    s->flag[r] = (x >> 40) & 1;
    s->low[r] = r / 100;                          /* long runs: RLE */
    s->f32[r] = (float)((double)(int64_t)(x >> 40) / 7.0);
    s->f64[r] = (double)(int64_t)(x >> 11) / 3.0;
    snprintf(s->strbuf[r], sizeof s->strbuf[r], "s%d", (int)((x >> 50) % 37));
    s->str[r] = r % 7 == 3 ? "" : s->strbuf[r];
    s->fixed[r] = fixed[r % 3];
    s->nulls[r] = (r % 5 == 0) || (r >= 300 && r < 340);   /* scattered and a run */
    s->none[r] = 0;
  }
}

static void check_synth(const wcol *cols, int ncols, const buf *img,
                        const char *what) {
  nsl_parquet *pq = NULL;
  nsl_error err = {0};
  if (nsl__parquet_open_mem(&pq, what, img->p, img->n, NULL, &err) != NSL_OK)
    fail_msg("%s: %s", what, err.msg);
  assert_int_equal(nsl__parquet_nrows(pq), NROWS);
  assert_int_equal(nsl__parquet_ncols(pq), ncols);
  assert_string_equal(nsl__parquet_created_by(pq), "nsl test writer");
  assert_string_equal(nsl__parquet_metadata(pq, "writer"), "test_parquet.c");
  nsl_dict *d = nsl_dict_new();
  for (int c = 0; c < ncols; c++) {
    const wcol *w = &cols[c];
    nsl_column *col = NULL;
    if (nsl__parquet_read_column(pq, c, d, &col, &err) != NSL_OK)
      fail_msg("%s column %s: %s", what, w->name, err.msg);
    for (int r = 0; r < NROWS; r++) {
      int isnull = w->nulls && w->nulls[r];
      switch (col->type) {
      case NSL_I64:
        if (isnull) assert_true(nsl_i64(col)[r] == NSL_NULL_I64);
        else if (nsl_i64(col)[r] != w->iv[r])
          fail_msg("%s %s row %d: %lld != %lld", what, w->name, r, (long long)nsl_i64(col)[r],
                   (long long)w->iv[r]);
        break;
      case NSL_I32:
        assert_int_equal(nsl_i32(col)[r], isnull ? NSL_NULL_I32 : (int32_t)w->iv[r]);
        break;
      case NSL_F64:
        if (isnull) assert_true(isnan(nsl_f64(col)[r]));
        else if (nsl_f64(col)[r] != w->dv[r])
          fail_msg("%s %s row %d: %.17g != %.17g", what, w->name, r, nsl_f64(col)[r], w->dv[r]);
        break;
      case NSL_STR:
        if (isnull) assert_int_equal(nsl_i32(col)[r], -1);
        else {
          const char *got = nsl_dict_str(d, nsl_i32(col)[r]);
          if (!got || strcmp(got, w->sv[r]) != 0)
            fail_msg("%s %s row %d: '%s' != '%s'", what, w->name, r, got ? got : "(null)", w->sv[r]);
        }
        break;
      default:
        fail_msg("unexpected type");
      }
    }
    nsl_column_release(col);
  }
  nsl_dict_release(d);
  nsl__parquet_close(pq);
}

static void build_synth_cols(const synth *s, wcol *cols, int enc) {
  const uint8_t *nl = s->nulls;
  wcol c[] = {
      {"flag", 0, 1, -1, 0, 0, 0, 0, 0, enc, s->flag, NULL, NULL, nl},
      {"flag_req", 0, 0, -1, 0, 0, 0, 0, 0, enc, s->flag, NULL, NULL, NULL},
      {"i32", 1, 1, 17, 0, 0, 0, 0, 0, enc, s->i32, NULL, NULL, nl},
      {"u32", 1, 0, -1, 10, 0, 32, 0, 0, enc, s->u32, NULL, NULL, NULL},
      {"i64", 2, 1, -1, 0, 0, 0, 0, 0, enc, s->i64, NULL, NULL, nl},
      {"low", 2, 0, -1, 0, 0, 0, 0, 0, enc, s->low, NULL, NULL, NULL},
      {"ts", 2, 1, -1, 8, 3, 0, 0, 0, enc, s->ts, NULL, NULL, nl},
      {"int96", 3, 0, -1, 0, 0, 0, 0, 0, enc, s->ts, NULL, NULL, NULL},
      {"f32", 4, 1, -1, 0, 0, 0, 0, 0, enc, NULL, s->f32, NULL, nl},
      {"f64", 5, 0, -1, 0, 0, 0, 0, 0, enc, NULL, s->f64, NULL, NULL},
      {"str", 6, 1, 0, 1, 0, 0, 0, 0, enc, NULL, NULL, s->str, nl},
      {"str_req", 6, 0, -1, 0, 0, 0, 0, 0, enc, NULL, NULL, s->str, NULL},
      {"fixed", 7, 1, -1, 0, 0, 0, 0, 4, enc, NULL, NULL, s->fixed, nl},
  };
  memcpy(cols, c, sizeof c);
}
#define NSYNTH 13

static void test_synthetic_encodings_and_codecs(void **state) {
  (void)state;
  synth *s = calloc(1, sizeof *s);
  synth_init(s);
  wcol cols[NSYNTH];
  static const int codecs[] = {0, 1, 2, 6};
  static const char *const cname[] = {"none", "snappy", "gzip", "", "", "", "zstd"};
  for (int enc = W_PLAIN; enc <= W_DICT_THEN_PLAIN; enc++)
    for (int ci = 0; ci < 4; ci++)
      for (int v2 = 0; v2 <= 1; v2++) {
        build_synth_cols(s, cols, enc);
        wopts o = {codecs[ci], v2, enc == W_DICT ? 1000 : 97, enc == W_PLAIN ? 1000 : 400, 0, 0};
        /* V2 pages whose values are stored raw in a compressed chunk, and
         * V1 pages with BIT_PACKED levels, once per encoding */
        for (int variant = 0; variant < (ci == 1 ? 2 : 1); variant++) {
          o.v2_raw = variant && v2;
          o.bitpacked_levels = variant && !v2;
          buf img = write_file(cols, NSYNTH, NROWS, &o);
          char what[96];
          snprintf(what, sizeof what, "synthetic enc=%d codec=%s v%d%s", enc, cname[codecs[ci]],
                   v2 + 1, variant ? (v2 ? " raw" : " bit-packed levels") : "");
          check_synth(cols, NSYNTH, &img, what);
          free(img.p);
        }
      }
  free(s);
}

static void test_synthetic_metadata(void **state) {
  (void)state;
  synth *s = calloc(1, sizeof *s);
  synth_init(s);
  wcol cols[NSYNTH];
  build_synth_cols(s, cols, W_DICT);
  wopts o = {1, 0, 250, 1000, 0, 0};
  buf img = write_file(cols, NSYNTH, NROWS, &o);
  nsl_parquet *pq;
  nsl_error err = {0};
  assert_int_equal(nsl__parquet_open_mem(&pq, "meta", img.p, img.n, NULL, &err), NSL_OK);
  const nsl_parquet_colinfo *ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "ts"));
  assert_int_equal(ci->logical, NSL_PQ_L_TIMESTAMP);
  assert_int_equal(ci->unit, NSL_PQ_UNIT_NANOS);
  assert_int_equal(ci->utc, 1);
  ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "u32"));
  assert_int_equal(ci->logical, NSL_PQ_L_INTEGER);
  assert_int_equal(ci->int_bits, 32);
  assert_int_equal(ci->int_signed, 0);
  assert_false(ci->nullable);
  ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "i32"));   /* ConvertedType INT_32 */
  assert_int_equal(ci->logical, NSL_PQ_L_INTEGER);
  assert_int_equal(ci->converted, 17);
  assert_int_equal(ci->int_signed, 1);
  ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "str"));
  assert_int_equal(ci->logical, NSL_PQ_L_STRING);
  ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "fixed"));
  assert_int_equal(ci->physical, NSL_PQ_FIXED_LEN_BYTE_ARRAY);
  assert_int_equal(ci->type_length, 4);
  assert_int_equal(ci->type, NSL_STR);
  ci = nsl__parquet_column_info(pq, nsl__parquet_find(pq, "flag"));
  assert_int_equal(ci->type, NSL_I32);
  assert_string_equal(nsl__pq_physical_name(ci->physical), "BOOLEAN");
  nsl__parquet_close(pq);
  free(img.p);
  free(s);
}

/* A file with zero rows and zero row groups. */
static void test_empty_file(void **state) {
  (void)state;
  int64_t iv[1] = {0};
  wcol c = {"x", 2, 1, -1, 0, 0, 0, 0, 0, W_PLAIN, iv, NULL, NULL, NULL};
  wopts o = {0, 0, 10, 10, 0, 0};
  buf img = write_file(&c, 1, 0, &o);
  nsl_parquet *pq;
  nsl_error err = {0};
  assert_int_equal(nsl__parquet_open_mem(&pq, "empty", img.p, img.n, NULL, &err), NSL_OK);
  assert_int_equal(nsl__parquet_nrows(pq), 0);
  nsl_column *col;
  assert_int_equal(nsl__parquet_read_column(pq, 0, NULL, &col, &err), NSL_OK);
  assert_int_equal(col->len, 0);
  nsl_column_release(col);
  nsl__parquet_close(pq);
  free(img.p);
}

/* Hand-made footers: nested and repeated schemas are rejected by name. */
static buf footer_only(int nested) {
  tw t = {0};
  tw_i32(&t, 1, 1);
  tw_list(&t, 2, 12, nested ? 4 : 2);
  tw_begin(&t, 0);
  tw_str(&t, 4, "schema");
  tw_i32(&t, 5, nested ? 2 : 1);
  tw_end(&t);
  if (nested) {
    tw_begin(&t, 0);
    tw_i32(&t, 3, 1);
    tw_str(&t, 4, "a_list");
    tw_i32(&t, 5, 1);
    tw_end(&t);
    tw_begin(&t, 0);
    tw_i32(&t, 1, 2);
    tw_i32(&t, 3, 2);
    tw_str(&t, 4, "element");
    tw_end(&t);
  }
  tw_begin(&t, 0);
  tw_i32(&t, 1, 2);
  tw_i32(&t, 3, nested ? 1 : 2);
  tw_str(&t, 4, nested ? "flat" : "repeated_col");
  tw_end(&t);
  tw_i64(&t, 3, 0);
  tw_list(&t, 4, 12, 0);
  b_byte(&t.b, 0);
  buf f = {0};
  b_put(&f, "PAR1", 4);
  b_put(&f, t.b.p, t.b.n);
  b_le32(&f, (uint32_t)t.b.n);
  b_put(&f, "PAR1", 4);
  free(t.b.p);
  return f;
}

static void test_rejects_nested_and_bad_headers(void **state) {
  (void)state;
  nsl_parquet *pq;
  nsl_error err = {0};
  buf f = footer_only(1);
  assert_int_equal(nsl__parquet_open_mem(&pq, "nested", f.p, f.n, NULL, &err), NSL_ERR_FORMAT);
  assert_null(pq);
  assert_non_null(strstr(err.msg, "'a_list'"));
  assert_non_null(strstr(err.msg, "flat"));
  free(f.p);
  f = footer_only(0);
  assert_int_equal(nsl__parquet_open_mem(&pq, "repeated", f.p, f.n, NULL, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "'repeated_col'"));
  /* footer length larger than the file */
  f.p[f.n - 8] = 0xff;
  f.p[f.n - 7] = 0xff;
  assert_int_equal(nsl__parquet_open_mem(&pq, "longfooter", f.p, f.n, NULL, &err), NSL_ERR_FORMAT);
  free(f.p);
  static const char *const bad[] = {"", "PAR1", "PAR1PAR1", "PAR1\0\0\0\0PAR1", "hello world, no parquet"};
  static const size_t badlen[] = {0, 4, 8, 12, 23};
  for (int i = 0; i < 5; i++) {
    assert_int_equal(nsl__parquet_open_mem(&pq, "bad", bad[i], badlen[i], NULL, &err), NSL_ERR_FORMAT);
    assert_null(pq);
  }
  /* an owned buffer is freed even when opening fails */
  char *owned = malloc(16);
  memcpy(owned, "not parquet at all", 16);
  assert_int_equal(nsl__parquet_open_mem(&pq, "owned", owned, 16, free, &err), NSL_ERR_FORMAT);
  /* encrypted footer */
  uint8_t enc[16] = "PAR1\0\0\0\0\0\0\0\0PARE";
  assert_int_equal(nsl__parquet_open_mem(&pq, "enc", enc, 16, NULL, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "encrypted"));
}

/* Hostile Thrift: deep nesting, a huge list, a string past the end. */
static void test_hostile_thrift(void **state) {
  (void)state;
  nsl_parquet *pq;
  nsl_error err = {0};
  buf t = {0};
  /* field 7 (unknown) as a struct nested 1000 deep */
  for (int i = 0; i < 1000; i++) b_byte(&t, 0x7c);
  for (int i = 0; i < 1000; i++) b_byte(&t, 0);
  b_byte(&t, 0);
  buf f = {0};
  b_put(&f, "PAR1", 4);
  b_put(&f, t.p, t.n);
  b_le32(&f, (uint32_t)t.n);
  b_put(&f, "PAR1", 4);
  assert_int_not_equal(nsl__parquet_open_mem(&pq, "deep", f.p, f.n, NULL, &err), NSL_OK);
  assert_non_null(strstr(err.msg, "deep"));
  free(f.p);
  free(t.p);
  /* schema list claiming 2^40 elements */
  uint8_t huge[] = {0x29, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x00};
  f = (buf){0};
  b_put(&f, "PAR1", 4);
  b_put(&f, huge, sizeof huge);
  b_le32(&f, sizeof huge);
  b_put(&f, "PAR1", 4);
  assert_int_equal(nsl__parquet_open_mem(&pq, "huge", f.p, f.n, NULL, &err), NSL_ERR_FORMAT);
  free(f.p);
  /* created_by string longer than the footer */
  uint8_t longstr[] = {0x68, 0xff, 0x7f, 'a', 'b', 0x00};
  f = (buf){0};
  b_put(&f, "PAR1", 4);
  b_put(&f, longstr, sizeof longstr);
  b_le32(&f, sizeof longstr);
  b_put(&f, "PAR1", 4);
  assert_int_equal(nsl__parquet_open_mem(&pq, "longstr", f.p, f.n, NULL, &err), NSL_ERR_FORMAT);
  free(f.p);
}

/* ---- fuzzing the real files -------------------------------------------------- */

/* Opens img and reads every column; any status is fine, a crash is not.
 * Returns 1 when everything decoded. */
static int try_all(const uint8_t *img, size_t n) {
  nsl_parquet *pq = NULL;
  nsl_error err = {0};
  uint8_t *copy = malloc(n ? n : 1);   /* exact-size copy: ASan sees overreads */
  if (n) memcpy(copy, img, n);
  nsl_status st = nsl__parquet_open_mem(&pq, "fuzz", copy, n, free, &err);
  if (st != NSL_OK) {
    assert_null(pq);
    assert_true(err.msg[0] != 0);
    return 0;
  }
  int ok = 1;
  nsl_dict *d = nsl_dict_new();
  for (int i = 0; i < nsl__parquet_ncols(pq); i++) {
    nsl_column *c = NULL;
    err.msg[0] = 0;
    if (nsl__parquet_read_column(pq, i, d, &c, &err) != NSL_OK) {
      assert_null(c);
      assert_true(err.msg[0] != 0);
      ok = 0;
    } else {
      assert_int_equal(c->len, nsl__parquet_nrows(pq));
      nsl_column_release(c);
    }
  }
  nsl_dict_release(d);
  nsl__parquet_close(pq);
  return ok;
}

static void test_fuzz_real_files(void **state) {
  (void)state;
  if (!data_dir()) skip();
  static const char *const members[] = {"thread-metadata.parquet", "system-metadata.parquet",
                                        "nvtx_gpu_proj_trace/trace.parquet"};
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int m = 0; m < 3; m++) {
    size_t n;
    uint8_t *img = proc_member(3, members[m], &n);
    assert_non_null(img);
    assert_int_equal(try_all(img, n), 1);
    uint8_t *mut = malloc(n);
    uint32_t mlen = (uint32_t)img[n - 8] | (uint32_t)img[n - 7] << 8 |
                    (uint32_t)img[n - 6] << 16 | (uint32_t)img[n - 5] << 24;
    size_t foot = n - 8 - mlen;
    int tries = m == 2 ? 150 : 400;
    /* byte flips in the footer metadata, where every byte matters */
    for (int i = 0; i < tries; i++) {
      memcpy(mut, img, n);
      x = x * 6364136223846793005u + 1442695040888963407u;
      size_t pos = foot + (size_t)(x >> 33) % mlen;
      mut[pos] ^= (uint8_t)(1u << ((x >> 20) & 7)) | (uint8_t)((x >> 24) & 0xff);
      try_all(mut, n);
    }
    /* byte flips in the pages */
    for (int i = 0; i < tries; i++) {
      memcpy(mut, img, n);
      for (int k = 0; k < 4; k++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        mut[4 + (size_t)(x >> 33) % (foot - 4)] ^= (uint8_t)(x >> 16) | 1;
      }
      try_all(mut, n);
    }
    /* truncations: the file cut short, the original tail kept (so the footer
     * length points into the wrong bytes), and the pages cut short */
    for (int i = 0; i < 60; i++) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      size_t cut = (size_t)(x >> 33) % n;
      try_all(img, cut);
      memcpy(mut, img, cut);
      memcpy(mut + cut, img + n - 8, 8);
      try_all(mut, cut + 8);
      size_t hole = (size_t)(x >> 13) % (foot - 4) + 4;   /* drop page bytes before the footer */
      if (hole < foot) {
        size_t len = n - foot;
        memcpy(mut, img, hole);
        memcpy(mut + hole, img + foot, len);
        try_all(mut, hole + len);
      }
    }
    free(mut);
    free(img);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_parquet_matches_csv),
      cmocka_unit_test(test_read_as_conversions),
      cmocka_unit_test(test_thread_metadata_matches_csv),
      cmocka_unit_test(test_system_metadata_matches_csv),
      cmocka_unit_test(test_device_metadata),
      cmocka_unit_test(test_open_file),
      cmocka_unit_test(test_synthetic_encodings_and_codecs),
      cmocka_unit_test(test_synthetic_metadata),
      cmocka_unit_test(test_empty_file),
      cmocka_unit_test(test_rejects_nested_and_bad_headers),
      cmocka_unit_test(test_hostile_thrift),
      cmocka_unit_test(test_fuzz_real_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
