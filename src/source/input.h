/*
 * input.h -- an input opened once (src/source/open.c), for the formats
 * that bid on it and the one that wins (private to nsl).
 *
 * Basic outline, as libarchive's format bidders over one read-ahead:
 *   1. open.c opens the path once (a regular file, never waiting on a
 *      FIFO) and reads its first bytes into an nsl__input.
 *   2. Each format of open.c's table bids on it, cheapest first: most look
 *      at `head` only; a zip's formats ask nsl__input_zip, which opens the
 *      zip from the same descriptor on the first ask (its central directory
 *      parsed once) and keeps it for the rest.
 *   3. The winner adds the input's reports from what the input holds (the
 *      zip already open, the descriptor); the reports and the cache keep
 *      references to the zip, never its path.
 */
#ifndef NSL_SOURCE_INPUT_H
#define NSL_SOURCE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/bundle.h"
#include "nsl/nsl.h"

#define NSL__INPUT_HEAD 4095   /* the first bytes every bid may look at (a CSV header row within them) */

typedef struct nsl__input {
  const char *path;              /* as the user gave it */
  int fd;                        /* open for reading: a regular file */
  unsigned char head[NSL__INPUT_HEAD + 1];   /* the first nhead bytes, then NUL */
  size_t nhead;
  /* the zip, opened (AUTO: a bundle with manifest.json, else a plain zip) on the first nsl__input_zip */
  int zip_tried;
  nsl_bundle *zip;
  nsl_error zip_err;             /* why it is not one, when zip is NULL */
} nsl__input;

/* 1 when the input starts with a zip signature (a local header, an empty
 * archive's end record or a spanning marker). */
int nsl__input_is_zip(const nsl__input *in);
/* The input as a zip, opened from in->fd once (later calls return the
 * same); NULL when it is none (in->zip_err says why).  Owned by the input:
 * a holder takes a reference with nsl__bundle_retain. */
nsl_bundle *nsl__input_zip(nsl__input *in);

/* For MPI's planning (src/mpi/dist.c), through the same table:
 * nsl__input_units says how the input at path splits among processes: 1
 * when its format reads reports by range (*n: how many it holds), 0 when it
 * is one report (an export, a CSV run, a .nsys-rep: also when it cannot be
 * opened, its error coming when it is), -1 when one process must read it
 * whole (an nsys-jax archive, a zip that does not open as a bundle);
 * nsl__trace_add_path_range adds reports first .. first+count-1 of such an
 * input to tr, recording the input. */
int nsl__input_units(const char *path, int *n);
nsl_status nsl__trace_add_path_range(nsl_trace *tr, const char *path, int first, int count, nsl_error *err);

/* 1 when the n bytes at head start as an Nsight Systems report (.nsys-rep,
 * .qdrep) does: nsl_rep_sniff's test (nsys_rep.c). */
int nsl__rep_head(const void *head, size_t n);

#endif
