/* dist.h -- a trace split among the processes of an MPI job.
 *
 * Basic outline (every call marked collective is made by every process):
 *   1. nsl__dist_open(paths) (collective) plans the reports of the inputs
 *      (an export is one, a bundle's report members one each), gives each
 *      process a contiguous share, opens only that share (a bundle's
 *      members read through its central directory), agrees on success (an
 *      all-reduce of the status before any data moves: a process that
 *      cannot read its share fails the run, named with the file on rank 0)
 *      and shares the reports' metadata.
 *   2. nsl__dist_view(d): a trace of this process's reports alone, times on
 *      the whole trace's clock (the per-report step of an analysis runs
 *      over it).
 *   3. nsl__dist_trace(d) on rank 0: the whole trace; its own reports are
 *      read here, the others' tables are asked of their process (column
 *      buffers, moved as they are) when an analysis first reads them.
 *   4. The other processes nsl__dist_serve(d) those requests until rank 0
 *      calls nsl__dist_quit(d).
 *   5. nsl__dist_release(d) when the traces made from it are closed too.
 *   Before 3., rank 0 may nsl__dist_filter(d, table, ...): the whole
 *   trace's `table` then holds only the rows that pass every condition,
 *   evaluated where the rows are read (the owning process), so only those
 *   rows move. */
#ifndef NSL_MPI_DIST_H
#define NSL_MPI_DIST_H
#include "core/rowfilter.h"
#include "nsl/nsl.h"

typedef struct nsl_dist nsl_dist;

nsl_status nsl__dist_open(nsl_dist **out, const char *const *paths, int npaths, const nsl_open_options *opts,
                          nsl_error *err);
void nsl__dist_release(nsl_dist *d);
/* This process's share: its first report's index in the whole trace and
 * the number of its reports. */
int nsl__dist_first(const nsl_dist *d);
int nsl__dist_count(const nsl_dist *d);
int nsl__dist_nreports(const nsl_dist *d);
nsl_status nsl__dist_view(nsl_dist *d, nsl_trace **out, nsl_error *err);
nsl_status nsl__dist_trace(nsl_dist *d, nsl_trace **out, nsl_error *err);
/* On rank 0: a trace of the given reports of the whole trace (indices,
 * numbered 0.. in the order given; times on the whole trace's clock), each
 * read from its process alone when first used: an analysis that needs a
 * few reports' tables in full (a straggler's host activity) moves only
 * theirs. */
nsl_status nsl__dist_subtrace(nsl_dist *d, const int *reports, int n, nsl_trace **out, nsl_error *err);
/* On rank 0, before nsl__dist_trace: the rows of `table` in the whole trace
 * are those passing every condition (core/rowfilter.h: one call per table;
 * a later call replaces an earlier one).  NSL_ERR_ARG for a bad regex. */
nsl_status nsl__dist_filter(nsl_dist *d, const char *table, const nsl__row_cond *conds, int n, nsl_error *err);
/* A computation on one report that rank 0 asks of the process holding it
 * (nsl__dist_call), run there by the serving process: name says which (the
 * caller's business), arg (alen bytes) what it computes on; *out (malloc'd,
 * *olen bytes) the answer.  report: its index in the whole trace. */
typedef nsl_status (*nsl__dist_call_fn)(void *ctx, int report, const char *name, const void *arg, size_t alen,
                                        void **out, size_t *olen, nsl_error *err);
/* On rank 0: how many tables of other processes' reports it has read (one
 * per report and table) and how many computations it asked of them. */
void nsl__dist_stats(nsl_dist *d, int64_t *loads, int64_t *calls);
/* The process that holds report (an MPI rank). */
int nsl__dist_owner(const nsl_dist *d, int report);
/* On rank 0: runs computation name on each of reports[0..n) (none its own)
 * in the process holding it, which answers it through its nsl__dist_serve's
 * call, with argument args[i] (alens[i] bytes): every process holding some
 * works on its own at once, one at a time.  outs[i] (malloc'd, olens[i]
 * bytes) the answers; on failure none, err the first failing one's error
 * in the order given (every answer is still received). */
nsl_status nsl__dist_call(nsl_dist *d, int n, const int *reports, const char *name, const void *const *args,
                          const size_t *alens, void **outs, size_t *olens, nsl_error *err);
/* Answers rank 0's requests (reads of its reports' tables, and
 * computations on them through call, which may be NULL: none served)
 * until rank 0 says quit. */
nsl_status nsl__dist_serve(nsl_dist *d, nsl__dist_call_fn call, void *ctx, nsl_error *err);
nsl_status nsl__dist_quit(nsl_dist *d, nsl_error *err);
/* Collective: 1 when every process passed ok != 0.  On rank 0, when some
 * did not, *msg receives the first failing process's message prefixed with
 * its MPI rank (release with free()); msg is what this process says. */
int nsl__dist_agree(int ok, const char *msg, char **first_failure);

#endif
