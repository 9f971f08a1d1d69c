/*
 * nsys_csv.h -- the CSV files `nsys stats --format csv` writes, as one
 * report of a trace (private to nsl).
 *
 * A file is recognised by its header row, whichever nsys release wrote it
 * (names compared without blanks, case or "(ns)": "Time (%)" and "Time(%)",
 * "Avg (ns)" and "Average" are one column):
 *   cuda_gpu_kern_sum      Total Time, Instances, ..., Name
 *   cuda_gpu_mem_time_sum  Total Time, Count, ..., Operation
 *   cuda_api_sum           Total Time, Num Calls, ..., Name (osrt_sum: same header, told by the file name)
 *   nvtx_sum               Total Time, Instances, ..., [Style,] Range
 *   nvtx_gpu_proj_trace    Name, Projected Start, Projected Duration, Orig Start, Orig Duration, Style, PID,
 *                          TID, NumGPUOps, Lvl, NumChild, RangeId, ParentId, RangeStack
 *   cuda_gpu_trace         Start, Duration, CorrId, GrdX.., BlkX.., Reg/Trd, StcSMem (MB), DymSMem (MB),
 *                          Bytes (MB), ..., Device, Ctx, [GreenCtx,] Strm, Name
 * The files of one run share a prefix (`nsys stats -o PREFIX` writes
 * PREFIX_<report>.csv) and form one report.  Tables:
 *   sums        one row per row of every summary report: kind (the report's
 *               name), name, style, count, total, avg, med, min, max, std, pct
 *   gpu_ranges  nvtx_gpu_proj_trace's rows (start/stop projected, orig_*, ...)
 *   kernels, memcpy, memset  cuda_gpu_trace's rows, told apart by their names ("[CUDA memcpy <kind>]",
 *               "[CUDA memset]", else a kernel: name = demangled = Name); megabytes become bytes,
 *               "NVIDIA H100 (0)" device 0, memcpy labels the model's kinds (HtoD, ...); no pid
 */
#ifndef NSL_SOURCE_NSYS_CSV_H
#define NSL_SOURCE_NSYS_CSV_H

#include <stddef.h>

#include "nsl/nsl.h"
#include "nsl/source.h"

extern const nsl_source_ops nsl__nsys_csv_source_ops;

/* The report a CSV file holds ("cuda_gpu_kern_sum", ...; a static string),
 * or NULL when the file is not one nsl reads. */
const char *nsl__nsys_csv_sniff(const char *path);
/* The same from the file's first n bytes (up to 4095 are looked at). */
const char *nsl__nsys_csv_kind(const char *head, size_t n, const char *path);

/* The run prefix of a file: path without "_<kind>.csv" (or ".csv"). */
void nsl__nsys_csv_prefix(const char *path, const char *kind, char *out, size_t cap);

/* Opens one file as a new source (named after its prefix), fills info. */
nsl_status nsl__nsys_csv_open(const char *path, const char *kind, void **src, nsl_report_info *info,
                              nsl_error *err);
/* Adds another file of the same run to src; NSL_ERR_ARG when src has that report already. */
nsl_status nsl__nsys_csv_add(void *src, const char *path, const char *kind, nsl_error *err);
/* The prefix of src. */
const char *nsl__nsys_csv_src_prefix(void *src);

#endif
