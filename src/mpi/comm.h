/* comm.h -- the small message layer nsl's distributed runs use: MPI when
 * nsl is built with it (comm_mpi.c), one process otherwise (comm_serial.c).
 * Nothing outside src/mpi includes mpi.h; this header is all they see.
 *
 * Basic outline:
 *   1. nsl__comm_start() joins the MPI job when the process was started by
 *      an MPI launcher (mpirun, srun) and returns the number of processes;
 *      without a launcher it is 1 and no MPI call is ever made.
 *   2. nsl__comm_rank/size say who this process is.
 *   3. Point-to-point byte messages of any size (send/recv), a broadcast,
 *      a gather to rank 0, an exchange of every process with every other
 *      (all-to-all), and an all-reduce of a status, which every
 *      process reaches before any data moves, so a failure never hangs.
 *   4. MPI is finalized at exit. */
#ifndef NSL_MPI_COMM_H
#define NSL_MPI_COMM_H
#include <stddef.h>
#include <stdint.h>

#include "nsl/nsl.h"

/* Joins the job when started by a launcher; returns the process count
 * (1 without one).  Idempotent.  Fails only when MPI refuses to start. */
int nsl__comm_start(nsl_error *err);
int nsl__comm_rank(void);
int nsl__comm_size(void);
/* 1 when this build can join MPI jobs. */
int nsl__comm_available(void);
/* The smallest of every process's v (collective). */
int nsl__comm_allmin(int v);
/* Reduces n int64 elementwise over every process, in place, with op
 * (NSL_COMM_SUM, _MIN or _MAX; the sum wraps) (collective: every process
 * passes the same n).  Without a job it leaves v as it is. */
enum { NSL_COMM_SUM, NSL_COMM_MIN, NSL_COMM_MAX };
nsl_status nsl__comm_allreduce_i64(int64_t *v, size_t n, int op, nsl_error *err);
/* Sends len bytes to process dest under tag (blocking, any size). */
nsl_status nsl__comm_send(int dest, int tag, const void *buf, size_t len, nsl_error *err);
/* Receives one message sent by nsl__comm_send from src under tag into a new
 * buffer (*buf, release with free(); never NULL on success). */
nsl_status nsl__comm_recv(int src, int tag, void **buf, size_t *len, nsl_error *err);
/* Broadcasts rank 0's buffer: on rank 0 *buf and *len are read, elsewhere they
 * receive a new buffer (collective). */
nsl_status nsl__comm_bcast(void **buf, size_t *len, nsl_error *err);
/* Gathers every process's buffer on rank 0 in rank order: bufs[r], lens[r]
 * (rank 0's own is copied); elsewhere bufs/lens are left NULL (collective). */
nsl_status nsl__comm_gather(const void *buf, size_t len, void ***bufs, size_t **lens, nsl_error *err);
/* Sends bufs[d] (lens[d] bytes; NULL with 0: nothing) to every process d,
 * its own kept, and receives what each process s sent it: (*in_bufs)[s],
 * (*in_lens)[s] (collective; free() each buffer and both arrays; a
 * buffer is never NULL on success).  The lengths go first (an all-to-all),
 * every process allocates what will come and they agree on it before any
 * data moves, so an allocation that fails anywhere fails everywhere and
 * never leaves a sender waiting; then one pairwise step per other process
 * (step k: to rank + k, from rank - k).  A process that cannot take part
 * (out of memory) passes NULL bufs and lens: every process then fails. */
nsl_status nsl__comm_exchange(const void *const *bufs, const size_t *lens, void ***in_bufs, size_t **in_lens,
                              nsl_error *err);
/* Seconds spent inside communication calls since the start (benchmarks). */
double nsl__comm_seconds(void);
/* Bytes this process sent and received in messages since the start. */
double nsl__comm_bytes(void);
/* Ends the whole job with code (a process that cannot go on safely). */
void nsl__comm_abort(int code);

#endif
