/* bench_nsys_load.c -- load speed of the nsys SQLite source: rows/s for
 * kernels and NVTX, and bytes per loaded kernel for start, stop, name.
 *
 *   cmake --build build --target nsl_static
 *   cc -O2 -Iinclude tests/bench/bench_nsys_load.c build/libnsl.a -lsqlite3 -lm -lpthread \
 *      -o build/bench_nsys_load
 *   build/bench_nsys_load EXPORT.sqlite [EXPORT2.sqlite ...]
 *
 * Each measurement opens the exports afresh (the OS page cache stays warm:
 * run once before to measure decoding, not the disk).  Compare with
 *   time sqlite3 EXPORT "SELECT start, end, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL" > /dev/null */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsl/nsl.h"

/* The table's row count (nsl_table_nrows), -1 when it cannot be had. */
static int64_t table_rows(nsl_table *t, nsl_error *err) {
  int64_t n;
  return nsl_table_nrows(t, &n, err) == NSL_OK ? n : -1;
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* Loads cols of table in a fresh trace; returns seconds, sets rows and the
 * bytes held by those columns (and the dictionary). */
static double load(const char *const *paths, int n, const char *table, const char *const *cols, int ncols,
                   int64_t *rows, size_t *col_bytes, size_t *dict_bytes, double *cpu) {
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  double t0 = now(), c0 = cpu_now();
  if (nsl_trace_open(&tr, paths, n, NULL, &err) != NSL_OK) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  nsl_table *t = NULL;
  if (nsl_trace_table(tr, table, &t, &err) != NSL_OK || nsl_table_require(t, cols, ncols, &err) != NSL_OK) {
    fprintf(stderr, "%s\n", err.msg);
    exit(1);
  }
  double dt = now() - t0;
  *cpu = cpu_now() - c0;
  *rows = table_rows(t, &err);
  *col_bytes = 0;
  for (int i = 0; i < ncols; i++) *col_bytes += nsl_column_bytes(nsl_table_column(t, cols[i], &err));
  *dict_bytes = nsl_dict_bytes(nsl_trace_dict(tr));
  nsl_trace_close(tr);
  return dt;
}

static void bench(const char *const *paths, int n, const char *table, const char *const *cols, int ncols,
                  const char *what) {
  double best = 1e30, best_cpu = 1e30;
  int64_t rows = 0;
  size_t cb = 0, db = 0;
  for (int rep = 0; rep < 3; rep++) {
    double cpu, dt = load(paths, n, table, cols, ncols, &rows, &cb, &db, &cpu);
    if (dt < best) best = dt;
    if (cpu < best_cpu) best_cpu = cpu;
  }
  printf("%-8s %-24s %9lld rows  wall %6.3f s %6.2f M rows/s  cpu %6.3f s %6.2f M rows/s  %5.1f B/row (+ dict %zu B)\n",
         table, what, (long long)rows, best, rows / best / 1e6, best_cpu, rows / best_cpu / 1e6,
         rows ? (double)cb / (double)rows : 0.0, db);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s EXPORT.sqlite [...]\n", argv[0]);
    return 2;
  }
  const char *const *paths = (const char *const *)argv + 1;
  int n = argc - 1;
  const char *k3[] = {"start", "stop", "name"};
  const char *kall[] = {"pid", "device", "stream", "corr", "start", "stop", "name", "demangled", "grid_x",
                        "block_x", "regs"};
  const char *n4[] = {"start", "stop", "text", "tid"};
  const char *nall[] = {"pid", "tid", "start", "stop", "text", "domain", "kind"};
  const char *a4[] = {"start", "stop", "name", "corr"};
  bench(paths, n, "kernels", k3, 3, "start, stop, name");
  bench(paths, n, "kernels", kall, 11, "11 columns");
  bench(paths, n, "nvtx", n4, 4, "start, stop, text, tid");
  bench(paths, n, "nvtx", nall, 7, "7 columns (with domain)");
  bench(paths, n, "api", a4, 4, "start, stop, name, corr");
  return 0;
}
