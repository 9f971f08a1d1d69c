/*
 * nsys_rep.h -- Nsight Systems reports (.nsys-rep, .qdrep) as inputs: nsl
 * runs `nsys export --type=sqlite` on them into its cache folder and opens
 * the export (private to nsl).
 *
 * Basic outline:
 *   1. nsl__nsys_rep_sniff(path) tells open.c that a file is a report (by
 *      its first bytes, "NVIDIA Tegra Profiler Report ", not its name).
 *   2. nsl__nsys_rep_export(path, &sqlite, &err) gives the export's path:
 *      <cache>/exports/<key>/<stem>.sqlite, reused while the report keeps
 *      its size, modification time and inode; made under an exclusive lock
 *      on the entry (two processes: one exports, the other waits and reuses
 *      it), written to a temporary name and renamed, so a reader never sees
 *      a partial export.
 *   3. The program is nsl__nsys_set_program's (--nsys), else found by
 *      nsl__nsys_find; the time limit is NSL_NSYS_TIMEOUT seconds (default
 *      7200); a progress function (set by the CLI) is called about once a
 *      second while nsys runs.
 */
#ifndef NSL_SOURCE_NSYS_REP_H
#define NSL_SOURCE_NSYS_REP_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/nsl.h"

/* 1 when the file at path starts like an Nsight Systems report. */
int nsl__nsys_rep_sniff(const char *path);

/* The nsys program used for reports from now on (NULL: find it again). */
void nsl__nsys_set_program(const char *path);

/* Finds nsys: given (a path, or a name looked up in PATH), else $NSYS, else
 * PATH, else the newest /opt/nvidia/nsight-systems[-cli]/VERSION/bin/nsys,
 * else CUDA's bin folders.  Writes the path to out and returns 0; -1 when
 * none is found (out then holds what was tried, for a message). */
int nsl__nsys_find(const char *given, char *out, size_t cap);

/* Called while nsys exports: report path, seconds so far, bytes written so
 * far, and done = 1 once at the end (success or not). */
typedef void (*nsl__export_progress_fn)(const char *report, double seconds, int64_t bytes, int done);
void nsl__nsys_set_progress(nsl__export_progress_fn fn);

/* Exports report path (or reuses the cached export); *sqlite (malloc'd)
 * receives the export's path.  NSL_ERR_NOTFOUND when nsys is not found,
 * NSL_ERR_IO when it fails or runs out of time, with the command named. */
nsl_status nsl__nsys_rep_export(const char *path, char **sqlite, nsl_error *err);

#endif
