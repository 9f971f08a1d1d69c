/* parallel.h -- running independent jobs on a few threads (internal to the
 * library: the trace's per-report loads, a source's chunked scans), and one
 * piece of work on a thread of its own while the caller goes on (a task:
 * what a front end runs in the background, nsl.spawn). */
#ifndef NSL_CORE_PARALLEL_H
#define NSL_CORE_PARALLEL_H

#include <stdint.h>

/* Threads for n jobs: NSL_THREADS when set (1 = sequential), else the online
 * CPUs; at least 1, never more than n (when n >= 1) or 64. */
int nsl__thread_count(int n);

/* Runs job(ctx, i) for every i in [0, n) on up to nthreads threads (the
 * caller's included; each i exactly once) and returns when all are done.
 * Runs on fewer threads when some cannot be started.  The workers see the
 * caller's cancellation (nsl__cancelled). */
void nsl__run_parallel(int n, int nthreads, void (*job)(void *ctx, int i), void *ctx);

/* Rows from which an element-wise kernel splits its rows over the threads
 * (below it, starting threads costs more than they save). */
#define NSL_ROWS_PARALLEL_MIN ((int64_t)1 << 20)

/* Runs rows(ctx, lo, hi) over [0, n) in contiguous parts, one per thread
 * (nsl__thread_count), when n is at least NSL_ROWS_PARALLEL_MIN; else one
 * call on the caller's thread (also inside a job of nsl__run_parallel,
 * whose threads are busy already).  Part k is the rows from k *
 * nsl__rows_per_part(n) on (n itself: one part); the size is a multiple of
 * 4096 rows, so parts that write one byte per row never share a cache
 * line.  Each row is in exactly one part, so a kernel whose rows are
 * independent gives the same bytes on any number of threads. */
int64_t nsl__rows_per_part(int64_t n);
/* The threads a kernel called here may run on: nsl__thread_count's, or 1
 * inside a job of nsl__run_parallel (its threads are busy already).  For
 * work cut by something other than rows (nsl__rows_per_part decides those). */
int nsl__threads_here(void);
void nsl__run_rows(int64_t n, void (*rows)(void *ctx, int64_t lo, int64_t hi), void *ctx);

/* A task: run(ctx) on a thread of its own.
 *   1. t = nsl__task_start(run, ctx): NULL when no thread can be started
 *      (the caller then runs run(ctx) itself);
 *   2. nsl__task_done(t) tells, without waiting, whether run returned;
 *   3. nsl__task_cancel(t) asks run to stop early: nsl__cancelled() turns
 *      true on its thread and on the workers it starts (long loops poll it);
 *   4. nsl__task_join(t) waits for run and frees t (exactly once).
 * What run touches must not be touched by the caller until done says so. */
typedef struct nsl__task nsl__task;
nsl__task *nsl__task_start(void (*run)(void *ctx), void *ctx);
int nsl__task_done(const nsl__task *t);
void nsl__task_cancel(nsl__task *t);
void nsl__task_join(nsl__task *t);
/* Whether the task the calling thread works for was cancelled (0 outside
 * tasks). */
int nsl__cancelled(void);
/* Whether the calling thread works for a task (its own thread or a worker
 * it started). */
int nsl__in_task(void);

#endif
