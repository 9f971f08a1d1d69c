/*
 * hlo_query.h -- questions the nsys-jax analyses ask of a decoded HloProto
 * (private to nsl): instructions by name, whether an instruction is
 * communication and its message size (nsys-jax's rules, which follow the
 * NCCL tests' conventions), and the static heap simulation's peak.
 *
 * Basic outline:
 *   1. nsl_hlo_names *ix = nsl__hlo_names_build(hlo) indexes instruction names.
 *   2. nsl__hlo_names_find(ix, "all-gather-start.2", &comp) looks one up.
 *   3. nsl__hlo_comm_info(hlo, inst, &info) classifies it; nsl__hlo_heap_peak
 *      gives one heap-simulator trace's peak.
 *   4. nsl__hlo_names_free(ix).
 */
#ifndef NSL_SOURCE_HLO_QUERY_H
#define NSL_SOURCE_HLO_QUERY_H

#include "source/hlo.h"

typedef struct nsl_hlo_names nsl_hlo_names;

/* Index of the instruction names of h (NULL when out of memory). */
nsl_hlo_names *nsl__hlo_names_build(const nsl_hlo *h);
/* The instruction called name (and its computation), or NULL. */
const nsl_hlo_instruction *nsl__hlo_names_find(const nsl_hlo_names *ix, const char *name,
                                              const nsl_hlo_computation **comp);
void nsl__hlo_names_free(nsl_hlo_names *ix);


/* Classifies inst: a collective opcode (all-gather, all-reduce, all-to-all,
 * collective-broadcast, collective-permute, reduce-scatter and the -start
 * forms) is communication; so is an async-start or fusion whose called
 * computations (recursively) hold one, or a dynamic(-update)-slice that
 * moves data between host (memory space 5) and device.  Fills the message
 * size: the operands' bytes (reduce-scatter: divided by the group size),
 * group size from replica_groups (collective-permute: 2; host transfers: 1),
 * and the nccl-tests bandwidth corrections. */
void nsl__hlo_comm_info(const nsl_hlo *h, const nsl_hlo_instruction *inst, nsl_hlo_comm *out);


/* Peak bytes of heap-simulator trace t with XLA's semantics
 * (xla.HeapSimulatorTrace): ALLOC takes the logical buffer's size; SHARE_WITH
 * takes no new memory -- the buffer uses the region of its canonical buffer
 * (the root of a chain of shares), whose lifetime extends to the union of
 * the lifetimes of the buffers sharing it; a region is freed when the last
 * buffer using it is, and a share of a region already freed takes it again.
 * Counts the events by kind into stats->alloc, free, share when not NULL.  -1 when t is out of
 * range (or out of memory). */
int64_t nsl__hlo_heap_peak(const nsl_hlo *h, int64_t t, nsl_hlo_heap_stats *stats);

#endif
