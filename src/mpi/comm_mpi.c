/* comm_mpi.c -- the message layer over MPI (comm.h).  Only this file
 * includes mpi.h.  Messages of any size go as a length, then chunks of at
 * most 1 GiB (MPI counts are ints); MPI keeps messages of one sender and
 * tag in order, so the chunks of two messages never mix. */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi/comm.h"

#define CHUNK ((size_t)1 << 30)

static int started, joined, my_rank, my_size = 1;
static double comm_secs, comm_bytes;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Finalizes at exit, after the job's last message. */
static void finalize(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

/* 1 when an MPI launcher started this process: OpenMPI's mpirun, a PMI or
 * PMIx server (MPICH's hydra, Slurm's srun --mpi=pmi2|pmix). */
static int under_launcher(void) {
  const char *off = getenv("NSL_MPI");
  if (off && strcmp(off, "0") == 0) return 0;
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", NULL};
  for (int i = 0; vars[i]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

int nsl__comm_available(void) { return 1; }

int nsl__comm_start(nsl_error *err) {
  if (started) return my_size;
  started = 1;
  if (!under_launcher()) return 1;
  int provided = 0;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    nsl_error_set(err, NSL_ERR_IO, "cannot join the MPI job (MPI_Init failed)");
    return -1;
  }
  joined = 1;
  atexit(finalize);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &my_size);
  return my_size;
}

int nsl__comm_rank(void) { return my_rank; }
int nsl__comm_size(void) { return my_size; }
double nsl__comm_seconds(void) { return comm_secs; }
double nsl__comm_bytes(void) { return comm_bytes; }

int nsl__comm_allmin(int v) {
  if (!joined) return v;
  double t = now();
  int r = v;
  MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  comm_secs += now() - t;
  return r;
}

nsl_status nsl__comm_allreduce_i64(int64_t *v, size_t n, int op, nsl_error *err) {
  if (!joined) return NSL_OK;
  double t = now();
  MPI_Op mop = op == NSL_COMM_MIN ? MPI_MIN : op == NSL_COMM_MAX ? MPI_MAX : MPI_SUM;
  int rc = MPI_SUCCESS;
  for (size_t off = 0; rc == MPI_SUCCESS && off < n; off += CHUNK / sizeof *v) {
    size_t k = n - off < CHUNK / sizeof *v ? n - off : CHUNK / sizeof *v;
    rc = MPI_Allreduce(MPI_IN_PLACE, v + off, (int)k, MPI_INT64_T, mop, MPI_COMM_WORLD);
  }
  comm_bytes += 2.0 * (double)(n * sizeof *v);   /* what one process sends and receives, at the least */
  comm_secs += now() - t;
  return rc == MPI_SUCCESS ? NSL_OK : nsl_error_set(err, NSL_ERR_IO, "MPI rank %d: an all-reduce failed", my_rank);
}

static nsl_status failed(nsl_error *err, const char *what, int peer) {
  return nsl_error_set(err, NSL_ERR_IO, "MPI rank %d: %s with rank %d failed", my_rank, what, peer);
}

nsl_status nsl__comm_send(int dest, int tag, const void *buf, size_t len, nsl_error *err) {
  if (!joined) return nsl_error_set(err, NSL_ERR_ARG, "not in an MPI job");
  double t = now();
  uint64_t n = len;
  comm_bytes += (double)len;
  int rc = MPI_Send(&n, 1, MPI_UINT64_T, dest, tag, MPI_COMM_WORLD);
  for (size_t off = 0; rc == MPI_SUCCESS && off < len; off += CHUNK) {
    size_t k = len - off < CHUNK ? len - off : CHUNK;
    rc = MPI_Send((const char *)buf + off, (int)k, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
  }
  comm_secs += now() - t;
  return rc == MPI_SUCCESS ? NSL_OK : failed(err, "sending", dest);
}

nsl_status nsl__comm_recv(int src, int tag, void **buf, size_t *len, nsl_error *err) {
  *buf = NULL;
  *len = 0;
  if (!joined) return nsl_error_set(err, NSL_ERR_ARG, "not in an MPI job");
  double t = now();
  uint64_t n = 0;
  int rc = MPI_Recv(&n, 1, MPI_UINT64_T, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  char *b = NULL;
  if (rc == MPI_SUCCESS && !(b = malloc(n ? n : 1))) {
    comm_secs += now() - t;
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory receiving %llu bytes from MPI rank %d",
                         (unsigned long long)n, src);
  }
  if (rc == MPI_SUCCESS) comm_bytes += (double)n;
  for (size_t off = 0; rc == MPI_SUCCESS && off < n; off += CHUNK) {
    size_t k = n - off < CHUNK ? n - off : CHUNK;
    rc = MPI_Recv(b + off, (int)k, MPI_BYTE, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  comm_secs += now() - t;
  if (rc != MPI_SUCCESS) {
    free(b);
    return failed(err, "receiving", src);
  }
  *buf = b;
  *len = n;
  return NSL_OK;
}

nsl_status nsl__comm_bcast(void **buf, size_t *len, nsl_error *err) {
  if (!joined) return NSL_OK;
  double t = now();
  uint64_t n = my_rank == 0 ? *len : 0;
  int rc = MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  char *b = my_rank == 0 ? *buf : NULL;
  if (rc == MPI_SUCCESS && my_rank != 0 && !(b = malloc(n ? n : 1))) rc = MPI_ERR_NO_MEM;
  for (size_t off = 0; rc == MPI_SUCCESS && off < n; off += CHUNK) {
    size_t k = n - off < CHUNK ? n - off : CHUNK;
    rc = MPI_Bcast(b + off, (int)k, MPI_BYTE, 0, MPI_COMM_WORLD);
  }
  comm_secs += now() - t;
  if (rc != MPI_SUCCESS) {
    if (my_rank != 0) free(b);
    return failed(err, "broadcast", 0);
  }
  if (my_rank != 0) {
    *buf = b;
    *len = n;
  }
  return NSL_OK;
}

/* Frees n buffers and the arrays. */
static void free_bufs(void **b, size_t *l, int n) {
  for (int i = 0; b && i < n; i++) free(b[i]);
  free(b);
  free(l);
}

/* Tag of the gather's messages, apart from those of comm users (< 1000). */
#define GATHER_TAG 1001

nsl_status nsl__comm_gather(const void *buf, size_t len, void ***bufs, size_t **lens, nsl_error *err) {
  *bufs = NULL;
  *lens = NULL;
  if (my_rank != 0) return nsl__comm_send(0, GATHER_TAG, buf, len, err);
  void **b = calloc((size_t)my_size, sizeof *b);
  size_t *l = calloc((size_t)my_size, sizeof *l);
  nsl_status rc = NSL_OK;
  if (!b || !l || !(b[0] = malloc(len ? len : 1))) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  else {
    if (len) memcpy(b[0], buf, len);
    l[0] = len;
  }
  /* every message is received even after a failure, so no sender blocks */
  for (int r = 1; r < my_size; r++) {
    nsl_error e = {0};
    void *m = NULL;
    size_t n = 0;
    nsl_status s = nsl__comm_recv(r, GATHER_TAG, &m, &n, &e);
    if (s != NSL_OK && rc == NSL_OK) {
      rc = s;
      if (err) *err = e;
    }
    if (rc == NSL_OK) {
      b[r] = m;
      l[r] = n;
    } else free(m);
  }
  if (rc != NSL_OK) {
    free_bufs(b, l, my_size);
    return rc;
  }
  *bufs = b;
  *lens = l;
  return NSL_OK;
}

/* Tag of the exchange's messages. */
#define EXCHANGE_TAG 1002

nsl_status nsl__comm_exchange(const void *const *bufs, const size_t *lens, void ***in_bufs, size_t **in_lens,
                              nsl_error *err) {
  *in_bufs = NULL;
  *in_lens = NULL;
  int P = joined ? my_size : 1, me = joined ? my_rank : 0;
  void **ib = calloc((size_t)P, sizeof *ib);
  size_t *il = calloc((size_t)P, sizeof *il);
  uint64_t *out_n = calloc((size_t)P, sizeof *out_n), *in_n = calloc((size_t)P, sizeof *in_n);
  MPI_Request *req = NULL;
  int ok = ib && il && out_n && in_n && bufs && lens;   /* (no bufs: this process failed before; all fail) */
  double t = now();
  /* 1. the lengths, once every process has its arrays */
  if (joined) ok = nsl__comm_allmin(ok);
  int rc = MPI_SUCCESS;
  if (ok) {
    for (int d = 0; d < P; d++) out_n[d] = lens[d];
    if (joined) rc = MPI_Alltoall(out_n, 1, MPI_UINT64_T, in_n, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    else in_n[0] = out_n[0];
  }
  /* 2. room for what comes, agreed on */
  size_t most_in = 0, most_out = 0;   /* the most chunks from one process and to one: a step's requests */
  for (int s = 0; ok && rc == MPI_SUCCESS && s < P; s++) {
    il[s] = (size_t)in_n[s];
    if (!(ib[s] = malloc(il[s] ? il[s] : 1))) ok = 0;
    size_t ki = (il[s] + CHUNK - 1) / CHUNK, ko = (out_n[s] + CHUNK - 1) / CHUNK;
    if (ki > most_in) most_in = ki;
    if (ko > most_out) most_out = ko;
  }
  if (ok && rc == MPI_SUCCESS && !(req = malloc((most_in + most_out + 1) * sizeof *req))) ok = 0;
  if (joined) ok = nsl__comm_allmin(ok && rc == MPI_SUCCESS);
  if (!ok) {
    comm_secs += now() - t;
    free(out_n), free(in_n), free(req);
    free_bufs(ib, il, P);
    return rc != MPI_SUCCESS ? failed(err, "exchanging lengths", me)
                             : nsl_error_set(err, NSL_ERR_NOMEM, "out of memory exchanging tables between MPI ranks");
  }
  /* 3. its own, then one step per other process: both sides know every length, so each posts its chunks */
  if (il[me]) memcpy(ib[me], bufs[me], il[me]);
  int peer = me;
  for (int step = 1; rc == MPI_SUCCESS && step < P; step++) {
    int dest = (me + step) % P, src = (me - step + P) % P, nr = 0;
    for (size_t off = 0; rc == MPI_SUCCESS && off < il[src]; off += CHUNK) {
      size_t k = il[src] - off < CHUNK ? il[src] - off : CHUNK;
      rc = MPI_Irecv((char *)ib[src] + off, (int)k, MPI_BYTE, src, EXCHANGE_TAG, MPI_COMM_WORLD, &req[nr++]);
    }
    for (size_t off = 0; rc == MPI_SUCCESS && off < lens[dest]; off += CHUNK) {
      size_t k = lens[dest] - off < CHUNK ? lens[dest] - off : CHUNK;
      rc = MPI_Isend((const char *)bufs[dest] + off, (int)k, MPI_BYTE, dest, EXCHANGE_TAG, MPI_COMM_WORLD, &req[nr++]);
    }
    if (rc == MPI_SUCCESS && nr > 0) rc = MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
    comm_bytes += (double)il[src] + (double)lens[dest];
    peer = src;
  }
  comm_secs += now() - t;
  free(out_n), free(in_n), free(req);
  if (rc != MPI_SUCCESS) {
    free_bufs(ib, il, P);
    return failed(err, "an exchange", peer);
  }
  *in_bufs = ib;
  *in_lens = il;
  return NSL_OK;
}

void nsl__comm_abort(int code) {
  if (joined) MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}
