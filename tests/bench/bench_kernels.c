/* bench_kernels.c -- times the heavy core kernels on synthetic kernel-like
 * rows (not a test; built with -DNSL_BENCH=ON).
 *
 *   bench_kernels [rows] [repeats] [filter]
 *
 * Defaults: 10000000 rows, best of 3, every benchmark (a filter runs those
 * whose label contains it).
 *
 * Rows look like CUPTI kernel records: start uniform over 60 s (ns), dur
 * log-uniform 1 us .. 10 ms, 8 devices x 32 streams, 2000 kernel names,
 * dense correlation ids.  Prints the best wall time of each kernel and, as
 * a yardstick, libc qsort on the same int64 keys. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "nsl/nsl.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next_rand(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int repeats = 3;
static const char *filter = NULL;
static int wanted(const char *label) { return !filter || strstr(label, filter); }

/* User and system CPU seconds of this process so far. */
static void cpu_times(double *user, double *sys) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  *user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
  *sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Runs body `repeats` times and prints the best wall time, with the user
 * and system (mostly page faults) CPU time of that run: on a shared machine
 * wall time includes waiting for a CPU, CPU time does not. */
#define BENCH(label, body)                                                                          \
  do {                                                                                              \
    if (!wanted(label)) break;                                                                      \
    double best = 1e30, bu = 0, bs = 0;                                                             \
    for (int rep_ = 0; rep_ < repeats; rep_++) {                                                    \
      double u0_, s0_, u1_, s1_, t0_ = now();                                                       \
      cpu_times(&u0_, &s0_);                                                                        \
      body;                                                                                         \
      double t_ = now() - t0_;                                                                      \
      cpu_times(&u1_, &s1_);                                                                        \
      if (t_ < best) {                                                                              \
        best = t_;                                                                                  \
        bu = u1_ - u0_;                                                                             \
        bs = s1_ - s0_;                                                                             \
      }                                                                                             \
    }                                                                                               \
    printf("%-42s %8.1f ms wall %7.1f ns/row | cpu user %7.1f ms sys %6.1f ms\n", label, best * 1e3, \
           best * 1e9 / (double)n, bu * 1e3, bs * 1e3);                                             \
    fflush(stdout);                                                                                 \
  } while (0)

static void check(const void *p, const nsl_error *err) {
  if (!p) {
    fprintf(stderr, "bench_kernels: %s\n", err->msg);
    exit(1);
  }
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 10000000;
  if (argc > 2) repeats = atoi(argv[2]);
  if (argc > 3) filter = argv[3];
  if (n < 1 || repeats < 1) {
    fprintf(stderr, "usage: bench_kernels [rows] [repeats]\n");
    return 2;
  }
  nsl_error err = {0};
  nsl_dict *dict = nsl_dict_new();
  nsl_column *start = nsl_column_new(NSL_I64, n, NULL), *stop = nsl_column_new(NSL_I64, n, NULL);
  nsl_column *dur = nsl_column_new(NSL_I64, n, NULL), *name = nsl_column_new(NSL_STR, n, dict);
  nsl_column *device = nsl_column_new(NSL_I32, n, NULL), *stream = nsl_column_new(NSL_I64, n, NULL);
  nsl_column *report = nsl_column_new(NSL_I32, n, NULL), *corr = nsl_column_new(NSL_I64, n, NULL);
  nsl_column *fdur = nsl_column_new(NSL_F64, n, NULL);
  if (!start || !stop || !dur || !name || !device || !stream || !report || !corr || !fdur) {
    fprintf(stderr, "bench_kernels: out of memory for %lld rows\n", (long long)n);
    return 1;
  }
  for (int k = 0; k < 2000; k++) {
    char buf[64];
    int len = snprintf(buf, sizeof buf, "void kernel_%04d<float, 128>(Params)", k);
    int32_t id;
    if (nsl_dict_intern(dict, buf, (size_t)len, &id, NULL) != NSL_OK) {
      fprintf(stderr, "bench_kernels: out of memory for the kernel names\n");
      return 1;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t s = (int64_t)(next_rand() % 60000000000ull);
    int64_t d = (int64_t)pow(10, 3 + 4 * (double)(next_rand() % 1000000) / 1e6);
    nsl_i64(start)[i] = s;
    nsl_i64(dur)[i] = d;
    nsl_i64(stop)[i] = s + d;
    nsl_f64(fdur)[i] = (double)d * 1e-3;
    nsl_i32(name)[i] = (int32_t)(next_rand() % 2000);
    nsl_i32(device)[i] = (int32_t)(next_rand() % 8);
    nsl_i64(stream)[i] = (int64_t)(next_rand() % 32);
    nsl_i32(report)[i] = (int32_t)(i % 4);
    nsl_i64(corr)[i] = i / 4 + 1;
  }
  printf("bench_kernels: %lld rows, best of %d\n", (long long)n, repeats);

  int64_t *copy = malloc((size_t)n * sizeof *copy);
  BENCH("qsort int64 start (libc, yardstick)", {
    memcpy(copy, start->data, (size_t)n * sizeof *copy);
    qsort(copy, (size_t)n, sizeof *copy, cmp_i64);
  });
  free(copy);

  const nsl_column *k_start[1] = {start};
  BENCH("argsort start (i64)", {
    nsl_column *p = nsl_argsort(k_start, NULL, 1, &err);
    check(p, &err);
    nsl_column_release(p);
  });
  const nsl_column *k_fdur[1] = {fdur};
  int desc1 = 1;
  BENCH("argsort dur desc (f64)", {
    nsl_column *p = nsl_argsort(k_fdur, &desc1, 1, &err);
    check(p, &err);
    nsl_column_release(p);
  });
  const nsl_column *k_dss[3] = {device, stream, start};
  BENCH("argsort (device, stream, start)", {
    nsl_column *p = nsl_argsort(k_dss, NULL, 3, &err);
    check(p, &err);
    nsl_column_release(p);
  });
  const nsl_column *k_name_dur[2] = {name, dur};
  int desc2[2] = {0, 1};
  BENCH("argsort (name text, dur desc)", {
    nsl_column *p = nsl_argsort(k_name_dur, desc2, 2, &err);
    check(p, &err);
    nsl_column_release(p);
  });

  const nsl_column *k_name[1] = {name};
  BENCH("groupby name (2000 groups)", {
    nsl_groups g;
    if (nsl_groupby(k_name, 1, &g, &err) != NSL_OK) check(NULL, &err);
    nsl_groups_free(&g);
  });
  BENCH("groupby name + median dur", {
    nsl_groups g;
    if (nsl_groupby(k_name, 1, &g, &err) != NSL_OK) check(NULL, &err);
    nsl_column *m = nsl_group_agg(&g, dur, NSL_AGG_MEDIAN, 0, &err);
    check(m, &err);
    nsl_column_release(m);
    nsl_groups_free(&g);
  });
  nsl_groups gn = {0};
  if ((wanted("  group_agg sum dur (name groups)") || wanted("  group_agg std dur (name groups)")) &&
      nsl_groupby(k_name, 1, &gn, &err) != NSL_OK)
    check(NULL, &err);
  BENCH("  group_agg sum dur (name groups)", {
    nsl_column *m = nsl_group_agg(&gn, dur, NSL_AGG_SUM, 0, &err);
    check(m, &err);
    nsl_column_release(m);
  });
  BENCH("  group_agg std dur (name groups)", {
    nsl_column *m = nsl_group_agg(&gn, dur, NSL_AGG_STD, 0, &err);
    check(m, &err);
    nsl_column_release(m);
  });
  nsl_groups_free(&gn);
  const nsl_column *k_start_only[1] = {start};
  BENCH("groupby start (~all distinct, hash)", {
    nsl_groups g;
    if (nsl_groupby(k_start_only, 1, &g, &err) != NSL_OK) check(NULL, &err);
    nsl_groups_free(&g);
  });
  BENCH("groupby start + median dur (1-row groups)", {
    nsl_groups g;
    if (nsl_groupby(k_start_only, 1, &g, &err) != NSL_OK) check(NULL, &err);
    nsl_column *m = nsl_group_agg(&g, dur, NSL_AGG_MEDIAN, 0, &err);
    check(m, &err);
    nsl_column_release(m);
    nsl_groups_free(&g);
  });
  BENCH("quantile p99 dur (whole column)", { (void)nsl_column_quantile(dur, 0.99); });

  const nsl_column *k_rc[2] = {report, corr};
  BENCH("join_index (report, corr) 1:1", {
    nsl_column *j = nsl_join_index(k_rc, k_rc, 2, &err);
    check(j, &err);
    nsl_column_release(j);
  });

  BENCH("interval union (unsorted)", {
    nsl_intervals u;
    if (nsl_iv_union(start, stop, NULL, &u, &err) != NSL_OK) check(NULL, &err);
    nsl_iv_free(&u);
  });
  const nsl_column *k_dev[2] = {device, stream};
  nsl_groups gd = {0};
  if (wanted("interval union per (device, stream)") && nsl_groupby(k_dev, 2, &gd, &err) != NSL_OK) check(NULL, &err);
  BENCH("interval union per (device, stream)", {
    nsl_column *b = nsl_iv_union_grouped(start, stop, gd.group_of, gd.ngroups, NULL, &err);
    check(b, &err);
    nsl_column_release(b);
  });
  nsl_groups_free(&gd);
  nsl_intervals busy = {0};
  if (wanted("interval coverage (unsorted rows)") && nsl_iv_union(start, stop, NULL, &busy, &err) != NSL_OK)
    check(NULL, &err);
  BENCH("interval coverage (unsorted rows)", {
    nsl_column *c = nsl_iv_coverage(start, stop, &busy, &err);
    check(c, &err);
    nsl_column_release(c);
  });
  nsl_iv_free(&busy);

  nsl_column *cols[] = {start, stop, dur, name, device, stream, report, corr, fdur};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  nsl_dict_release(dict);
  return 0;
}
