/* test_jax.c -- the range-tree kernels of src/core/jax.c against hand-built
 * trees and brute-force references on random data, and the nsys-jax source
 * on the real archive (row counts against the CSV copies in mini/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_fixtures.h"
#include "source/nsys_jax.h"
#include "core/nsl_internal.h"
#include "table_rows.h"

/* The table's row count (nsl_table_nrows), -1 when it cannot be had. */
/*        0
 *      /   \
 *     1     4        rows 1, 2, 3 are "thunks" (through), 0 and 5 "modules"
 *     |
 *     2    5 -- 6    row 6 is a thunk under module 5
 *     |
 *     3                                                                       */
static void test_tree_ancestor(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *parent = FX_I64(-1, 0, 1, 2, 0, -1, 5);
  nsl_column *through = FX_BOOL(0, 1, 1, 1, 0, 0, 1);
  nsl_column *target = FX_BOOL(1, 0, 0, 0, 0, 1, 0);
  nsl_column *anc = NULL, *inner = NULL;
  assert_int_equal(nsl__tree_ancestor(parent, through, target, &anc, &inner, &err), NSL_OK);
  FX_EXPECT_I64(anc, -1, 0, 0, 0, -1, -1, 5);
  FX_EXPECT_BOOL(inner, 0, 1, 1, 0, 0, 0, 0);
  nsl_column *under = nsl__tree_under(parent, target, &err);
  FX_EXPECT_BOOL(under, 0, 1, 1, 1, 1, 0, 1);
  nsl_column *m2 = FX_BOOL(0, 0, 1, 0, 0, 0, 0);
  nsl_column *under2 = nsl__tree_under(parent, m2, &err);
  FX_EXPECT_BOOL(under2, 0, 0, 0, 1, 0, 0, 0);
  /* a cycle (bad input) ends the walk */
  nsl_column *cyc = FX_I64(1, 0);
  nsl_column *all = FX_BOOL(1, 1), *none = FX_BOOL(0, 0), *a2 = NULL, *i2 = NULL;
  assert_int_equal(nsl__tree_ancestor(cyc, all, none, &a2, &i2, &err), NSL_OK);
  FX_EXPECT_I64(a2, -1, -1);
  nsl_column *u3 = nsl__tree_under(cyc, none, &err);
  FX_EXPECT_BOOL(u3, 0, 0);
  nsl_column_release(a2);
  nsl_column_release(i2);
  /* wrong types are refused */
  assert_int_equal(nsl__tree_ancestor(through, through, target, &a2, &i2, &err), NSL_ERR_ARG);
  nsl_column *cols[] = {parent, through, target, anc, inner, under, m2, under2, cyc, all, none, u3};
  for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) nsl_column_release(cols[k]);
  nsl_column_release(a2);
  nsl_column_release(i2);
}

static void test_cumcount(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *g = FX_I64(0, 1, 0, 2, 1, 0, -1);
  nsl_column *c = nsl__group_cumcount(g, &err);
  FX_EXPECT_I64(c, 0, 0, 1, 0, 1, 2, NSL_NULL_I64);
  nsl_column_release(c);
  nsl_column_release(g);
}

/* overlap_sum against a brute force over random intervals. */
static void test_overlap_sum(void **state) {
  (void)state;
  nsl_error err = {0};
  nsl_column *s = FX_I64(0, 5, 8, 20, 0, 30);
  nsl_column *e = FX_I64(10, 7, 12, 25, 100, 31);
  nsl_column *g = FX_I64(0, 0, 0, 0, 1, 0);
  nsl_column *a = FX_BOOL(1, 0, 0, 1, 0, 0);
  nsl_column *r = nsl__iv_overlap_sum(s, e, g, a, &err);
  FX_EXPECT_I64(r, 4, 0, 0, 0, 0, 0);   /* [5,7) and [8,10) hide 4 of [0,10); group 1 does not count */
  nsl_column *refs[] = {s, e, g, a, r};
  for (size_t k = 0; k < 5; k++) nsl_column_release(refs[k]);
  fx_seed(42);
  for (int round = 0; round < 50; round++) {
    int64_t n = fx_range(1, 60);
    int64_t sv[64], ev[64], gv[64];
    uint8_t av[64];
    for (int64_t i = 0; i < n; i++) {
      sv[i] = fx_range(0, 200);
      ev[i] = sv[i] + fx_range(0, 40);
      gv[i] = fx_range(0, 3);
      av[i] = (uint8_t)fx_range(0, 2);
    }
    s = fx_i64(n, sv), e = fx_i64(n, ev), g = fx_i64(n, gv), a = fx_bool(n, av);
    r = nsl__iv_overlap_sum(s, e, g, a, &err);
    assert_non_null(r);
    for (int64_t i = 0; i < n; i++) {
      int64_t want = 0;
      for (int64_t j = 0; av[i] && j < n; j++)
        if (!av[j] && gv[j] == gv[i]) {
          int64_t lo = sv[i] > sv[j] ? sv[i] : sv[j], hi = ev[i] < ev[j] ? ev[i] : ev[j];
          if (hi > lo) want += hi - lo;
        }
      assert_int_equal(nsl_i64(r)[i], want);
    }
    nsl_column *more[] = {s, e, g, a, r};
    for (size_t k = 0; k < 5; k++) nsl_column_release(more[k]);
  }
}

/* A compiling thread (tid 1) with a parallel region: worker ranges of tid 2
 * are grafted under the deepest range of tid 1 that encloses them. */
static void test_compile_tree(void **state) {
  (void)state;
  /* rows: 0 XlaCompile [0,100) tid1; 1 Backend [10,90) tid1 parent 0; 2 Pass [20,80) tid1 parent 1;
   *       3 worker [30,40) tid2 root; 4 worker child [31,35) tid2 parent 3; 5 cuBLAS [50,60) tid1 parent 2 (non-TSL);
   *       6 unrelated [200,210) tid2 root */
  int64_t start[] = {0, 10, 20, 30, 31, 50, 200}, stop[] = {100, 90, 80, 40, 35, 60, 210};
  int64_t parent[] = {-1, 0, 1, -1, 3, 2, -1};
  int32_t tid[] = {1, 1, 1, 2, 2, 1, 2}, nchild[] = {1, 1, 1, 1, 0, 0, 0};
  int64_t dchild[] = {80, 60, 10, 4, 0, 0, 0}, dnon[] = {20, 20, 50, 6, 4, 10, 10};
  uint8_t is_compile[] = {1, 0, 0, 0, 0, 0, 0}, is_backend[] = {0, 1, 0, 0, 0, 0, 0},
          is_tsl[] = {1, 1, 1, 1, 1, 0, 1};
  nsl__jax_compile_in in = {7, start, stop, parent, tid, nchild, dchild, dnon, is_compile, is_backend, is_tsl};
  nsl__jax_compile_out out;
  nsl_error err = {0};
  assert_int_equal(nsl__jax_compile_tree(&in, &out, &err), NSL_OK);
  assert_int_equal(out.parent[3], 2);            /* grafted under the pass */
  assert_int_equal(out.parent[4], 3);
  assert_int_equal(out.num_child[2], 1 + 1 - 1); /* +1 worker, -1 folded cuBLAS */
  assert_true(out.dur_child[2] == NSL_NULL_I64);
  uint8_t keep[] = {1, 1, 1, 1, 1, 0, 0};
  for (int i = 0; i < 7; i++) assert_int_equal(out.keep[i], keep[i]);
  assert_int_equal(out.program_row[0], 1);       /* the backend's parent takes its program */
  assert_int_equal(out.program_row[1], 1);
  assert_int_equal(out.program_row[4], 1);       /* inherited through the graft */
  /* attribution: the pass (row 2) launches the worker region [30,40) */
  int64_t dch2[] = {80, 60, 0, 4, 0}, dnon2[] = {20, 20, 0, 6, 4};
  nsl__jax_attr_in ain = {5, start, stop, out.parent, tid, dch2, dnon2, 1, NULL};
  double nc[5], ch[5];
  assert_int_equal(nsl__jax_compile_attribute(&ain, nc, ch, &err), NSL_OK);
  /* region of 10 ns split by the workers' non-child times 6 : 4 */
  assert_true(nc[3] == 10.0 * 6 / 10 && nc[4] == 10.0 * 4 / 10);
  assert_true(ch[3] == 10.0 * 4 / 10);
  assert_true(ch[2] == 10.0 && nc[2] == 60.0 - 10.0);   /* child = parallel region; no main children */
  assert_true(nc[0] == 20 && nc[1] == 20);
  nsl__jax_compile_out_free(&out);
}

/* Two compilations at once: an XlaCompile root of another thread inside the
 * first one's window is a compilation of its own, never a worker; rows not
 * in start order; a worker range whose parent lies outside the window stays
 * where it is. */
static void test_compile_tree_two_threads(void **state) {
  (void)state;
  /* rows: 0 worker [40,50) tid2 root (listed first); 1 XlaCompile [0,100) tid1; 2 Pass [30,70) tid1 parent 1;
   *       3 XlaCompile [10,25) tid3 root (another compilation); 4 Pass [12,20) tid3 parent 3;
   *       5 task [90,200) tid2 root; 6 worker [92,95) tid2 parent 5 (not top-level) */
  int64_t start[] = {40, 0, 30, 10, 12, 90, 92}, stop[] = {50, 100, 70, 25, 20, 200, 95};
  int64_t parent[] = {-1, -1, 1, -1, 3, -1, 5};
  int32_t tid[] = {2, 1, 1, 3, 3, 2, 2}, nchild[] = {0, 1, 0, 1, 0, 1, 0};
  int64_t dchild[] = {0, 40, 0, 8, 0, 3, 0}, dnon[] = {10, 60, 40, 7, 8, 107, 3};
  uint8_t is_compile[] = {0, 1, 0, 1, 0, 0, 0}, is_backend[] = {0, 0, 0, 0, 0, 0, 0},
          is_tsl[] = {1, 1, 1, 1, 1, 0, 1};
  nsl__jax_compile_in in = {7, start, stop, parent, tid, nchild, dchild, dnon, is_compile, is_backend, is_tsl};
  nsl__jax_compile_out out;
  nsl_error err = {0};
  assert_int_equal(nsl__jax_compile_tree(&in, &out, &err), NSL_OK);
  assert_int_equal(out.parent[0], 2);   /* grafted under the pass of thread 1 */
  assert_int_equal(out.parent[3], -1);  /* the other compilation stays a root */
  assert_int_equal(out.parent[6], 5);   /* not top-level: not grafted */
  uint8_t keep[] = {1, 1, 1, 1, 1, 0, 0};
  for (int i = 0; i < 7; i++) assert_int_equal(out.keep[i], keep[i]);
  assert_int_equal(out.num_child[2], 1);
  assert_int_equal(out.num_child[1], 1);
  /* each compiling thread attributed on its own: thread 1's rows */
  int64_t s1[] = {40, 0, 30}, e1[] = {50, 100, 70}, p1[] = {2, -1, 1};
  int32_t t1[] = {2, 1, 1};
  int64_t dc1[] = {0, 40, NSL_NULL_I64}, dn1[] = {10, 60, NSL_NULL_I64};
  nsl__jax_attr_in ain = {3, s1, e1, p1, t1, dc1, dn1, 1, NULL};
  double nc[3], ch[3];
  assert_int_equal(nsl__jax_compile_attribute(&ain, nc, ch, &err), NSL_OK);
  assert_true(nc[0] == 10.0 && ch[0] == 0.0);        /* the whole region [40,50) to the one worker */
  assert_true(nc[2] == 30.0 && ch[2] == 10.0);       /* the pass: 40 ns, 10 of them the region */
  assert_true(nc[1] + nc[0] + nc[2] == 100.0);       /* the parts add up to the compilation */
  nsl__jax_compile_out_free(&out);
}

static const char *data_dir(void) {
  const char *d = getenv("NSL_DATA_DIR");
  return d ? d : "../shared/data";
}

static void test_source_archive(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/nsys-jax/pax_fsdp4_4proc_proc1.zip", data_dir());
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  const char *paths[] = {path};
  assert_int_equal(nsl_trace_open(&tr, paths, 1, NULL, &err), NSL_OK);
  assert_int_equal(nsl_trace_nreports(tr), 1);
  nsl_table *t = NULL;
  assert_int_equal(nsl_trace_table(tr, "gpu_ranges", &t, &err), NSL_OK);
  /* the CSV copy has a header and the recipe's root row, which has no RangeId */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "zcat '%s/nsys-jax/mini/proc1/nvtx_gpu_proj_trace.trace.csv.gz' | "
           "python3 -c 'import csv,sys; r=list(csv.reader(sys.stdin)); "
           "i=r[0].index(\"RangeId\"); print(sum(1 for x in r[1:] if x[i]))'", data_dir());
  FILE *p = popen(cmd, "r");
  long want = -1;
  assert_non_null(p);
  assert_int_equal(fscanf(p, "%ld", &want), 1);
  pclose(p);
  assert_int_equal(table_rows(t, &err), want);
  nsl_column *dev = nsl_table_column(t, "device", &err);
  assert_non_null(dev);
  nsl_trace_close(tr);
}

static void test_source_bad(void **state) {
  (void)state;
  char dir[] = "/tmp/nsl_jax_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cmd[512], zip[600];
  snprintf(cmd, sizeof cmd,
           "cd %s && mkdir -p nvtx_gpu_proj_trace && printf 'x' > nvtx_gpu_proj_trace/trace.parquet && "
           "printf 'a,b\\n\"1,2\\n' | xz > report_nvtx_pushpop_trace.csv.xz && zip -q -r a.zip nvtx_gpu_proj_trace "
           "report_nvtx_pushpop_trace.csv.xz",
           dir);
  assert_int_equal(system(cmd), 0);
  snprintf(zip, sizeof zip, "%s/a.zip", dir);
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  const char *paths[] = {zip};
  assert_int_equal(nsl_trace_open(&tr, paths, 1, NULL, &err), NSL_OK);
  nsl_table *t = NULL;
  assert_int_equal(nsl_trace_table(tr, "gpu_ranges", &t, &err), NSL_OK);
  assert_true(table_rows(t, &err) < 0);
  assert_non_null(strstr(err.msg, "trace.parquet"));
  assert_int_equal(nsl_trace_table(tr, "nvtx", &t, &err), NSL_OK);
  assert_true(table_rows(t, &err) < 0);   /* missing columns / unterminated quote */
  nsl_trace_close(tr);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tree_ancestor), cmocka_unit_test(test_cumcount),
      cmocka_unit_test(test_overlap_sum),   cmocka_unit_test(test_compile_tree),
      cmocka_unit_test(test_compile_tree_two_threads),
      cmocka_unit_test(test_source_archive), cmocka_unit_test(test_source_bad),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
