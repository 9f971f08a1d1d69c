/* parallel.h -- running independent jobs on a few threads (internal to the
 * library: the trace's per-report loads, a source's chunked scans). */
#ifndef NSL_CORE_PARALLEL_H
#define NSL_CORE_PARALLEL_H

/* Threads for n jobs: NSL_THREADS when set (1 = sequential), else the online
 * CPUs; at least 1, never more than n (when n >= 1) or 64. */
int nsl__thread_count(int n);

/* Runs job(ctx, i) for every i in [0, n) on up to nthreads threads (the
 * caller's included; each i exactly once) and returns when all are done.
 * Runs on fewer threads when some cannot be started. */
void nsl__run_parallel(int n, int nthreads, void (*job)(void *ctx, int i), void *ctx);

#endif
