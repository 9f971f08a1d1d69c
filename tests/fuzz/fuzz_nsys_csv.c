/* fuzz_nsys_csv.c -- libFuzzer harness: the bytes are an `nsys stats` CSV
 * file (src/source/nsys_csv.c), opened as a trace when its header is
 * recognised, with every column of the tables it fills loaded.  A bad file
 * must come back as an error, never a crash. */
#define _GNU_SOURCE   /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nsl/nsl.h"
#include "source/nsys_csv.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int file = -1;      /* a memory file the CSV is written to (sources open paths) */
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  file = memfd_create("report_cuda_gpu_kern_sum.csv", 0);
  if (file < 0) abort();
  snprintf(path, sizeof path, "/proc/self/fd/%d", file);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (ftruncate(file, 0) != 0 || pwrite(file, data, size, 0) != (ssize_t)size) abort();
  if (!nsl__nsys_csv_sniff(path)) return 0;
  const char *paths[1] = {path};
  nsl_trace *tr = NULL;
  nsl_error err = {0};
  if (nsl_trace_open(&tr, paths, 1, NULL, &err) != NSL_OK) return 0;
  static const char *const sums[] = {"kind", "name", "style", "count", "total", "avg", "med", "min", "max", "std", "pct"};
  static const char *const ranges[] = {"text", "start", "stop", "dur", "orig_start", "orig_stop", "pid", "tid",
                                       "num_gpu_ops", "level", "num_child", "range_id", "parent_id", "device"};
  nsl_table *t = NULL;
  if (nsl_trace_table(tr, "sums", &t, &err) == NSL_OK) nsl_table_require(t, sums, 11, &err);
  if (nsl_trace_table(tr, "gpu_ranges", &t, &err) == NSL_OK) nsl_table_require(t, ranges, 14, &err);
  static const char *const events[] = {"start", "stop", "dur", "corr", "device", "context", "stream", "bytes", "kind"};
  if (nsl_trace_table(tr, "memcpy", &t, &err) == NSL_OK) nsl_table_require(t, events, 9, &err);
  if (nsl_trace_table(tr, "memset", &t, &err) == NSL_OK) nsl_table_require(t, events, 8, &err);
  static const char *const kernels[] = {"start", "stop", "dur", "name", "demangled", "grid_x", "block_z", "regs",
                                        "smem_static", "smem_dynamic", "device", "stream"};
  if (nsl_trace_table(tr, "kernels", &t, &err) == NSL_OK) nsl_table_require(t, kernels, 12, &err);
  nsl_trace_close(tr);
  return 0;
}
