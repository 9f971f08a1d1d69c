/*
 * hlo.h -- XLA HLO modules (the after-optimizations dumps that nsys-jax
 * archives keep under dump/ and nsl bundles under meta/xla_dump/): what the
 * JAX analyses ask of them, through an opaque handle.
 *
 * Basic outline:
 *   1. nsl_hlo_load(bytes, len, label, &h, &err) decodes a serialized
 *      xla.HloProto, xz-compressed or raw (told by its magic), e.g. the bytes
 *      of a trace's archive member (nsl_trace_member_read); or
 *      nsl_hlo_read_file(path, &h, &err).
 *   2. nsl_hlo_summarize(h, &s): module name, id, fingerprint, sizes.
 *   3. Instructions are addressed by (computation index, instruction index):
 *      nsl_hlo_ncomputations / nsl_hlo_computation_size walk them,
 *      nsl_hlo_find looks one up by name, nsl_hlo_computation_index by the
 *      id an instruction's `called` list holds; nsl_hlo_get describes one,
 *      nsl_hlo_comm_of classifies it as communication.
 *   4. nsl_hlo_frame_of resolves stack frames, nsl_hlo_heap gives the heap
 *      simulator's peaks, nsl_hlo_structure the module's shape as text.
 *   5. nsl_hlo_free(h).
 *
 * Strings are owned by the module and live until nsl_hlo_free; they are
 * never NULL ("" when absent).  A module may be read from several threads
 * once nsl_hlo_find has been called once (it builds its name index then).
 */
#ifndef NSL_HLO_H
#define NSL_HLO_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/nsl.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct nsl_hlo nsl_hlo;

/* Decodes an xla.HloProto of size bytes, xz-compressed (by its magic) or
 * raw; label names it in messages.  NSL_ERR_FORMAT for bytes that do not
 * decode, NSL_ERR_LIMIT above the size bounds. */
nsl_status nsl_hlo_load(const void *data, size_t size, const char *label, nsl_hlo **out, nsl_error *err);
/* Reads a file, xz-compressed or not, and decodes it (NSL_ERR_IO when it
 * cannot be read). */
nsl_status nsl_hlo_read_file(const char *path, nsl_hlo **out, nsl_error *err);
void nsl_hlo_free(nsl_hlo *h);

typedef struct nsl_hlo_summary {
  const char *name;
  int64_t id;
  const char *fingerprint;   /* frontend attribute fingerprint_before_lhs, "" when absent */
  int64_t ncomputations, ninstructions, nheap_traces;
} nsl_hlo_summary;
void nsl_hlo_summarize(const nsl_hlo *h, nsl_hlo_summary *out);

/* One instruction. */
typedef struct nsl_hlo_inst {
  const char *name, *opcode;
  const char *op_name, *op_type, *source_file;   /* its metadata */
  int32_t source_line;
  int32_t frame;               /* stack frame id (nsl_hlo_frame_of), 0 for none */
  const char *computation;     /* the name of the computation that holds it */
  const int64_t *called;       /* ids of the computations it calls */
  int64_t ncalled;
} nsl_hlo_inst;

int64_t nsl_hlo_ncomputations(const nsl_hlo *h);
/* Instructions of computation c (0 when c is out of range). */
int64_t nsl_hlo_computation_size(const nsl_hlo *h, int64_t c);
/* The index of the computation with proto id `id`, or -1. */
int64_t nsl_hlo_computation_index(const nsl_hlo *h, int64_t id);
/* Looks instruction `name` up: *c, *i its computation and instruction
 * index.  NSL_ERR_NOTFOUND when the module has none; NSL_ERR_NOMEM. */
nsl_status nsl_hlo_find(nsl_hlo *h, const char *name, int64_t *c, int64_t *i, nsl_error *err);
/* Describes instruction i of computation c; NSL_ERR_ARG out of range. */
nsl_status nsl_hlo_get(const nsl_hlo *h, int64_t c, int64_t i, nsl_hlo_inst *out, nsl_error *err);

/* An instruction as communication (nsys-jax's rules, after the NCCL tests'
 * conventions). */
typedef struct nsl_hlo_comm {
  int is_comm;              /* the instruction is (or wraps) a collective or a host offload */
  const char *opcode;       /* of the collective instruction itself */
  char collective[40];      /* "all-gather", "all-reduce", ..., "device-to-host", "host-to-device" */
  int64_t size;             /* devices per collective; 0 when unknown */
  int64_t bytes;            /* message size as NCCL counts it; -1 when unknown */
  double bw_correction;     /* algorithm bandwidth factor */
  double bus_correction;    /* bus bandwidth factor */
} nsl_hlo_comm;
/* Classifies instruction i of computation c: a collective opcode
 * (all-gather, all-reduce, all-to-all, collective-broadcast,
 * collective-permute, reduce-scatter and the -start forms) is
 * communication; so is an async-start or fusion whose called computations
 * (recursively) hold one, or a dynamic(-update)-slice that moves data
 * between host (memory space 5) and device.  Fills the message size: the
 * operands' bytes (reduce-scatter: divided by the group size), group size
 * from replica_groups (collective-permute: 2; host transfers: 1), and the
 * nccl-tests bandwidth corrections.  NSL_ERR_ARG out of range. */
nsl_status nsl_hlo_comm_of(const nsl_hlo *h, int64_t c, int64_t i, nsl_hlo_comm *out, nsl_error *err);

/* One resolved stack frame. */
typedef struct nsl_hlo_frame {
  const char *file, *function;
  int32_t line, column;
  int32_t parent;   /* parent frame id, 0 at the outermost frame */
} nsl_hlo_frame;
/* Resolves frame id (1-based) of the module's stack frame index;
 * NSL_ERR_FORMAT when the id, or one it refers to, is out of range. */
nsl_status nsl_hlo_frame_of(const nsl_hlo *h, int32_t id, nsl_hlo_frame *out, nsl_error *err);

/* Events and peak of one heap-simulator trace. */
typedef struct nsl_hlo_heap_stats {
  int64_t events;              /* events of the trace, any kind */
  int64_t alloc, free, share;  /* events by kind */
  int64_t peak;                /* peak bytes (nsl_hlo_heap) */
} nsl_hlo_heap_stats;
int64_t nsl_hlo_nheap_traces(const nsl_hlo *h);
/* Peak bytes of heap-simulator trace t with XLA's semantics
 * (xla.HeapSimulatorTrace): ALLOC takes the logical buffer's size;
 * SHARE_WITH takes no new memory -- the buffer uses the region of its
 * canonical buffer (the root of a chain of shares), whose lifetime extends
 * to the union of the lifetimes of the buffers sharing it; a region is
 * freed when the last buffer using it is, and a share of a region already
 * freed takes it again.  NSL_ERR_ARG for t out of range, NSL_ERR_NOMEM. */
nsl_status nsl_hlo_heap(const nsl_hlo *h, int64_t t, nsl_hlo_heap_stats *out, nsl_error *err);

/* A text that is equal for modules of the same shape: the module name, then
 * per instruction (computations in order) a line with its name, opcode,
 * element type and dimensions (tuple shapes: their element types).  *out
 * is malloc'ed and NUL-terminated, *len excludes the NUL. */
nsl_status nsl_hlo_structure(const nsl_hlo *h, char **out, size_t *len, nsl_error *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
