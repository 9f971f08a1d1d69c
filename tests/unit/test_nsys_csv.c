/* test_nsys_csv.c -- nsys stats CSV files as a trace (src/source/nsys_csv.c)
 * and the recognition of Nsight Systems reports (src/source/nsys_rep.c):
 * header variants of several nsys releases, RFC 4180 quoting, CRLF, a
 * byte-order mark, files of one prefix forming one report, and refusals of
 * malformed files with one message naming the file.  The expected numbers
 * are the ones written into the files here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nsl/nsl.h"
#include "source/nsys_csv.h"
#include "table_rows.h"

/* The table's row count (nsl_table_nrows), -1 when it cannot be had. */
static char dir[256];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "%s/nsl-csv-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to dir/name; returns the path (static buffer per call site). */
static const char *write_file(const char *name, const char *text, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static void test_sniff_kinds(void **state) {
  (void)state;
  char p[512];
  static const struct {
    const char *name, *text, *kind;
  } cases[] = {
      {"a_cuda_gpu_kern_sum.csv",
       "\"Time (%)\",\"Total Time (ns)\",Instances,\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\",\"Max (ns)\",\"StdDev (ns)\",Name\n",
       "cuda_gpu_kern_sum"},
      {"old.csv", "Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\r\n", "cuda_gpu_kern_sum"},
      {"m.csv", "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n",
       "cuda_gpu_mem_time_sum"},
      {"api.csv", "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n",
       "cuda_api_sum"},
      {"r_osrt_sum.csv", "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n",
       "osrt_sum"},
      {"n.csv", "\xEF\xBB\xBFTime (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range\n",
       "nvtx_sum"},
      {"p.csv",
       "\n\nName,Projected Start (ns),Projected Duration (ns),Orig Start (ns),Orig Duration (ns),Style,PID,TID,"
       "NumGPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack\n",
       "nvtx_gpu_proj_trace"},
      {"jax.csv", "Name,Projected Start,Projected Duration,Orig Start,Orig Duration,Style,PID,TID\n", "nvtx_gpu_proj_trace"},
      {"t.csv",
       "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),"
       "Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n",
       "cuda_gpu_trace"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *kind = nsl__nsys_csv_sniff(write_file(cases[i].name, cases[i].text, p, sizeof p));
    assert_non_null(kind);
    assert_string_equal(kind, cases[i].kind);
  }
  assert_null(nsl__nsys_csv_sniff(write_file("x.csv", "a,b,c\n1,2,3\n", p, sizeof p)));
  assert_null(nsl__nsys_csv_sniff(write_file("y.csv", "Total Time (ns),Name\n", p, sizeof p)));
  assert_null(nsl__nsys_csv_sniff(write_file("bin.csv", "SQLite format 3\0\0\0", p, sizeof p)));
  assert_null(nsl__nsys_csv_sniff(write_file("nohead.csv", "", p, sizeof p)));
  /* reports: by the version tag, whatever the name */
  assert_true(nsl_rep_sniff(write_file("r.bin", "NVIDIA Tegra Profiler Report 2026@1@1@1-0v0.\n", p, sizeof p)));
  assert_false(nsl_rep_sniff(write_file("r.nsys-rep", "NVIDIA Tegra Profiler", p, sizeof p)));
  assert_false(nsl_rep_sniff("/nonexistent/x.nsys-rep"));
}

static nsl_trace *open2(const char *a, const char *b, nsl_error *err) {
  const char *paths[2] = {a, b};
  nsl_trace *tr = NULL;
  nsl_status rc = nsl_trace_open(&tr, paths, b ? 2 : 1, NULL, err);
  return rc == NSL_OK ? tr : NULL;
}

static void test_one_report_per_prefix(void **state) {
  (void)state;
  char k[512], m[512];
  write_file("run_cuda_gpu_kern_sum.csv",
             "\"Time (%)\",\"Total Time (ns)\",Instances,\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\",\"Max (ns)\","
             "\"StdDev (ns)\",Name\r\n"
             "75.0,300,3,100.0,90.0,50,160,55.7,\"void k<(int)1, \"\"x\"\">(int)\"\r\n"
             "\r\n"
             "25.0,100,1,100.0,100.0,100,100,0.0,gemm_kernel\r\n",
             k, sizeof k);
  write_file("run_cuda_gpu_mem_time_sum.csv",
             "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation\n"
             "100.0,40,2,20.0,20.0,10,30,14.1,[CUDA memcpy Host-to-Device]",   /* no final newline */
             m, sizeof m);
  nsl_error err = {0};
  nsl_trace *tr = open2(k, m, &err);
  assert_non_null(tr);
  assert_int_equal(nsl_trace_nreports(tr), 1);
  assert_string_equal(nsl_trace_report(tr, 0)->name, "run");
  nsl_table *t = NULL;
  assert_int_equal(nsl_trace_table(tr, "sums", &t, &err), NSL_OK);
  const char *cols[] = {"kind", "name", "count", "total", "med", "min"};
  assert_int_equal(nsl_table_require(t, cols, 6, &err), NSL_OK);
  nsl_column *kind = nsl_table_column(t, "kind", &err), *name = nsl_table_column(t, "name", &err),
             *count = nsl_table_column(t, "count", &err), *total = nsl_table_column(t, "total", &err),
             *med = nsl_table_column(t, "med", &err);
  assert_int_equal(total->len, 3);
  assert_string_equal(nsl_dict_str(kind->dict, nsl_i32(kind)[0]), "cuda_gpu_kern_sum");
  assert_string_equal(nsl_dict_str(name->dict, nsl_i32(name)[0]), "void k<(int)1, \"x\">(int)");
  assert_int_equal(nsl_i64(count)[0], 3);
  assert_int_equal(nsl_i64(total)[1], 100);
  assert_true(fabs(nsl_f64(med)[0] - 90.0) < 1e-9);
  assert_string_equal(nsl_dict_str(kind->dict, nsl_i32(kind)[2]), "cuda_gpu_mem_time_sum");
  assert_string_equal(nsl_dict_str(name->dict, nsl_i32(name)[2]), "[CUDA memcpy Host-to-Device]");
  assert_int_equal(nsl_i64(total)[2], 40);
  assert_int_equal(nsl_i64(count)[2], 2);
  nsl_table *kern = NULL;
  assert_int_equal(nsl_trace_table(tr, "kernels", &kern, &err), NSL_OK);
  assert_int_equal(table_rows(kern, &err), 0);   /* summaries fill no event table */
  nsl_trace_close(tr);

  /* the same report twice for one prefix is refused */
  tr = open2(k, k, &err);
  assert_null(tr);
  assert_non_null(strstr(err.msg, "already gives cuda_gpu_kern_sum"));
}

static void test_projection_rows(void **state) {
  (void)state;
  char p[512];
  write_file("x_nvtx_gpu_proj_trace.csv",
             "Name,Projected Start (ns),Projected Duration (ns),Orig Start (ns),Orig Duration (ns),Style,PID,TID,"
             "NumGPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack\n"
             "step,1000,500,900,700,PushPop,11,12,3,0,1,7,,:7\n"
             "\"a, b\",1100,50,1000,60,PushPop,11,12,1,1,0,8,7,:7:8\n",
             p, sizeof p);
  nsl_error err = {0};
  nsl_trace *tr = open2(p, NULL, &err);
  assert_non_null(tr);
  nsl_table *t = NULL;
  assert_int_equal(nsl_trace_table(tr, "gpu_ranges", &t, &err), NSL_OK);
  const char *cols[] = {"text", "start", "stop", "dur", "orig_stop", "pid", "parent_id", "num_gpu_ops"};
  assert_int_equal(nsl_table_require(t, cols, 8, &err), NSL_OK);
  nsl_column *text = nsl_table_column(t, "text", &err), *stop = nsl_table_column(t, "stop", &err),
             *dur = nsl_table_column(t, "dur", &err), *ostop = nsl_table_column(t, "orig_stop", &err),
             *parent = nsl_table_column(t, "parent_id", &err);
  assert_int_equal(text->len, 2);
  assert_string_equal(nsl_dict_str(text->dict, nsl_i32(text)[1]), "a, b");
  assert_int_equal(nsl_i64(stop)[0], 1500);
  assert_int_equal(nsl_i64(dur)[1], 50);
  assert_int_equal(nsl_i64(ostop)[0], 1600);
  assert_true(nsl_column_is_null(parent, 0));
  assert_int_equal(nsl_i64(parent)[1], 7);
  nsl_trace_close(tr);
}

static void test_malformed(void **state) {
  (void)state;
  char p[512];
  nsl_error err = {0};
  write_file("q_cuda_gpu_kern_sum.csv",
             "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
             "1,2,3,4,5,6,7,8,\"unterminated\n",
             p, sizeof p);
  assert_null(open2(p, NULL, &err));
  assert_non_null(strstr(err.msg, "unterminated quote"));
  assert_non_null(strstr(err.msg, p));
  write_file("w_cuda_gpu_kern_sum.csv",
             "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
             "1,2,3,4,5,6,7,8,n,extra\n",
             p, sizeof p);
  assert_null(open2(p, NULL, &err));
  assert_non_null(strstr(err.msg, "has 10 fields, the header 9"));
  /* a number nsys always writes that is missing or not a number: refused, naming line and column */
  write_file("x_cuda_gpu_kern_sum.csv",
             "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
             "1,2,3,4,5,6,7,8,a\n"
             "x,12\n",
             p, sizeof p);
  assert_null(open2(p, NULL, &err));
  assert_non_null(strstr(err.msg, "line 3: Time (%) is 'x', not a number >= 0"));
  write_file("y_cuda_gpu_kern_sum.csv",
             "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
             "50,12\n",
             p, sizeof p);
  assert_null(open2(p, NULL, &err));
  assert_non_null(strstr(err.msg, "line 2: Instances is '', not a whole number >= 0"));
  write_file("z_cuda_gpu_kern_sum.csv",
             "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
             "50,-12,1\n",
             p, sizeof p);
  assert_null(open2(p, NULL, &err));
  assert_non_null(strstr(err.msg, "line 2: Total Time (ns) is '-12', not a whole number >= 0"));
  /* short rows with those numbers read the rest as NULL */
  write_file("s_cuda_gpu_kern_sum.csv",
             "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
             ",12,3\n",
             p, sizeof p);
  nsl_trace *tr = open2(p, NULL, &err);
  assert_non_null(tr);
  nsl_table *t = NULL;
  assert_int_equal(nsl_trace_table(tr, "sums", &t, &err), NSL_OK);
  const char *cols[] = {"total", "pct", "name"};
  assert_int_equal(nsl_table_require(t, cols, 3, &err), NSL_OK);
  assert_int_equal(nsl_i64(nsl_table_column(t, "total", &err))[0], 12);
  assert_true(isnan(nsl_f64(nsl_table_column(t, "pct", &err))[0]));
  assert_true(nsl_column_is_null(nsl_table_column(t, "name", &err), 0));
  nsl_trace_close(tr);
}

static void test_gpu_trace_rows(void **state) {
  (void)state;
  char p[512];
  write_file("g_cuda_gpu_trace.csv",
             "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),"
             "Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n"
             "100,10,5,2,1,1,128,1,1,32,0.001,0.000,,,,,NVIDIA H100 80GB HBM3 (1),1,,7,\"void k<(int)2>(float *)\"\n"
             "120,4,6,,,,,,,,,,1.048576,262.144,Pageable,Device,NVIDIA H100 80GB HBM3 (1),1,,7,[CUDA memcpy Host-to-Device]\n"
             "130,2,7,,,,,,,,,,0.000512,256.0,Device,,2,1,,8,[CUDA memset]\n",
             p, sizeof p);
  nsl_error err = {0};
  nsl_trace *tr = open2(p, NULL, &err);
  assert_non_null(tr);
  nsl_table *k = NULL, *mc = NULL, *ms = NULL;
  assert_int_equal(nsl_trace_table(tr, "kernels", &k, &err), NSL_OK);
  assert_int_equal(nsl_trace_table(tr, "memcpy", &mc, &err), NSL_OK);
  assert_int_equal(nsl_trace_table(tr, "memset", &ms, &err), NSL_OK);
  const char *kc[] = {"start", "stop", "device", "stream", "grid_x", "regs", "smem_static", "demangled"};
  assert_int_equal(nsl_table_require(k, kc, 8, &err), NSL_OK);
  assert_int_equal(nsl_table_column(k, "stop", &err)->len, 1);
  assert_int_equal(nsl_i64(nsl_table_column(k, "stop", &err))[0], 110);
  assert_int_equal(nsl_i32(nsl_table_column(k, "device", &err))[0], 1);
  assert_int_equal(nsl_i32(nsl_table_column(k, "stream", &err))[0], 7);
  assert_int_equal(nsl_i32(nsl_table_column(k, "grid_x", &err))[0], 2);
  assert_int_equal(nsl_i32(nsl_table_column(k, "smem_static", &err))[0], 1000);
  nsl_column *dm = nsl_table_column(k, "demangled", &err);
  assert_string_equal(nsl_dict_str(dm->dict, nsl_i32(dm)[0]), "void k<(int)2>(float *)");
  const char *mcc[] = {"bytes", "kind", "stop"};
  assert_int_equal(nsl_table_require(mc, mcc, 3, &err), NSL_OK);
  nsl_column *kind = nsl_table_column(mc, "kind", &err);
  assert_int_equal(kind->len, 1);
  assert_string_equal(nsl_dict_str(kind->dict, nsl_i32(kind)[0]), "HtoD");
  assert_int_equal(nsl_i64(nsl_table_column(mc, "bytes", &err))[0], 1048576);
  const char *msc[] = {"bytes", "device"};
  assert_int_equal(nsl_table_require(ms, msc, 2, &err), NSL_OK);
  assert_int_equal(nsl_i64(nsl_table_column(ms, "bytes", &err))[0], 512);
  assert_int_equal(nsl_i32(nsl_table_column(ms, "device", &err))[0], 2);
  nsl_trace_close(tr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sniff_kinds),
      cmocka_unit_test(test_one_report_per_prefix),
      cmocka_unit_test(test_projection_rows),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_gpu_trace_rows),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
