/* comm_serial.c -- the message layer of a build without MPI (comm.h): one
 * process, rank 0 of 1; collectives are the identity, point-to-point
 * messages have no peer. */
#include <stdlib.h>
#include <string.h>

#include "mpi/comm.h"

int nsl__comm_available(void) { return 0; }
int nsl__comm_start(nsl_error *err) {
  (void)err;
  return 1;
}
int nsl__comm_rank(void) { return 0; }
int nsl__comm_size(void) { return 1; }
int nsl__comm_allmin(int v) { return v; }
double nsl__comm_seconds(void) { return 0.0; }
double nsl__comm_bytes(void) { return 0.0; }

nsl_status nsl__comm_allreduce_i64(int64_t *v, size_t n, int op, nsl_error *err) {
  (void)v, (void)n, (void)op, (void)err;
  return NSL_OK;
}

nsl_status nsl__comm_send(int dest, int tag, const void *buf, size_t len, nsl_error *err) {
  (void)dest, (void)tag, (void)buf, (void)len;
  return nsl_error_set(err, NSL_ERR_ARG, "this nsl was built without MPI");
}

nsl_status nsl__comm_recv(int src, int tag, void **buf, size_t *len, nsl_error *err) {
  (void)src, (void)tag;
  *buf = NULL;
  *len = 0;
  return nsl_error_set(err, NSL_ERR_ARG, "this nsl was built without MPI");
}

nsl_status nsl__comm_bcast(void **buf, size_t *len, nsl_error *err) {
  (void)buf, (void)len, (void)err;
  return NSL_OK;
}

nsl_status nsl__comm_gather(const void *buf, size_t len, void ***bufs, size_t **lens, nsl_error *err) {
  void **b = calloc(1, sizeof *b);
  size_t *l = calloc(1, sizeof *l);
  if (!b || !l || !(b[0] = malloc(len ? len : 1))) {
    free(b);
    free(l);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  if (len) memcpy(b[0], buf, len);
  l[0] = len;
  *bufs = b;
  *lens = l;
  return NSL_OK;
}

nsl_status nsl__comm_exchange(const void *const *bufs, const size_t *lens, void ***in_bufs, size_t **in_lens,
                              nsl_error *err) {
  if (!bufs || !lens) {
    *in_bufs = NULL;
    *in_lens = NULL;
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory exchanging tables");
  }
  return nsl__comm_gather(bufs[0], lens[0], in_bufs, in_lens, err);   /* one process: its own */
}

void nsl__comm_abort(int code) { exit(code); }
