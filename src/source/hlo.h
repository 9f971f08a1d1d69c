/*
 * hlo.h -- XLA HloProto decoding (private to nsl): the parts of the HLO
 * dumps (dump/module_NNNN.*.hlo.pb.xz in nsys-jax archives) that the nsys-jax
 * analyses use, as a plain C struct tree.
 *
 * Basic outline:
 *   1. nsl__hlo_decode_xz(data, size, label, &hlo, &err) (an xz-compressed
 *      member), nsl__hlo_decode(data, size, ...) (raw protobuf) or
 *      nsl_hlo_read_file(path, &hlo, &err) (either, by content).
 *   2. Walk hlo->module.computations[i].instructions[j]; look up with
 *      nsl__hlo_find_computation / nsl__hlo_find_instruction /
 *      nsl__hlo_find_buffer / nsl__hlo_frontend_attr; resolve stack frames with nsl__hlo_stack_frame;
 *      message sizes with nsl__hlo_shape_bytes; the static heap simulation
 *      from hlo->buffer_assignment.
 *   3. nsl_hlo_free(hlo) releases the whole tree.
 *
 * Field numbers are those of xla/service/hlo.proto and xla/xla_data.proto.
 * Strings are never NULL ("" when absent); repeated fields are an array and
 * an int64_t count.  Ids are those of the proto (instruction ids are unique
 * within a module; stack frame and file location ids are 1-based, 0 = none).
 */
#ifndef NSL_SOURCE_HLO_H
#define NSL_SOURCE_HLO_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/hlo.h"
#include "nsl/nsl.h"
#include "source/protobuf.h"

/* xla.PrimitiveType values used by callers. */
enum {
  NSL_HLO_PRED = 1, NSL_HLO_S8 = 2, NSL_HLO_S16 = 3, NSL_HLO_S32 = 4, NSL_HLO_S64 = 5,
  NSL_HLO_U8 = 6, NSL_HLO_U16 = 7, NSL_HLO_U32 = 8, NSL_HLO_U64 = 9, NSL_HLO_F16 = 10,
  NSL_HLO_F32 = 11, NSL_HLO_F64 = 12, NSL_HLO_TUPLE = 13, NSL_HLO_OPAQUE = 14, NSL_HLO_C64 = 15,
  NSL_HLO_BF16 = 16, NSL_HLO_TOKEN = 17, NSL_HLO_C128 = 18
};

typedef struct nsl_hlo_layout {             /* xla.LayoutProto */
  int64_t *minor_to_major;                  /* 1 */
  int64_t n_minor_to_major;
  int64_t element_size_in_bits;             /* 7 */
  int64_t memory_space;                     /* 8 */
} nsl_hlo_layout;

typedef struct nsl_hlo_shape {              /* xla.ShapeProto */
  int32_t element_type;                     /* 2: xla.PrimitiveType */
  int64_t *dimensions;                      /* 3 */
  int64_t ndimensions;
  struct nsl_hlo_shape *tuple_shapes;       /* 4 */
  int64_t ntuple_shapes;
  nsl_hlo_layout layout;                    /* 5 */
} nsl_hlo_shape;

typedef struct nsl_hlo_metadata {           /* xla.OpMetadata */
  const char *op_type;                      /* 1 */
  const char *op_name;                      /* 2 */
  const char *source_file;                  /* 3 */
  int32_t source_line;                      /* 4 */
  const char *deduplicated_name;            /* 12 */
  int32_t stack_frame_id;                   /* 15 */
} nsl_hlo_metadata;

typedef struct nsl_hlo_attr {               /* map<string, string> entry */
  const char *key;                          /* 1 */
  const char *value;                        /* 2 */
} nsl_hlo_attr;

typedef struct nsl_hlo_attrs {              /* xla.FrontendAttributes */
  nsl_hlo_attr *map;                        /* 1 */
  int64_t nmap;
} nsl_hlo_attrs;

typedef struct nsl_hlo_replica_group {      /* xla.ReplicaGroup */
  int64_t *replica_ids;                     /* 1 */
  int64_t nreplica_ids;
} nsl_hlo_replica_group;

typedef struct nsl_hlo_source_target {      /* xla.SourceTarget */
  int64_t source, target;                   /* 1, 2 */
} nsl_hlo_source_target;

typedef struct nsl_hlo_instruction {        /* xla.HloInstructionProto */
  const char *name;                         /* 1 */
  const char *opcode;                       /* 2 */
  nsl_hlo_shape shape;                      /* 3 */
  nsl_hlo_metadata metadata;                /* 7 */
  int64_t parameter_number;                 /* 9 */
  const char *fusion_kind;                  /* 11 */
  int64_t tuple_index;                      /* 13 */
  int64_t *dimensions;                      /* 14 */
  int64_t ndimensions;
  int64_t channel_id;                       /* 26 */
  const char *custom_call_target;           /* 28 */
  int64_t id;                               /* 35 */
  int64_t *operand_ids;                     /* 36 */
  int64_t noperand_ids;
  int64_t *control_predecessor_ids;         /* 37 */
  int64_t ncontrol_predecessor_ids;
  int64_t *called_computation_ids;          /* 38 */
  int64_t ncalled_computation_ids;
  nsl_pb_bytes backend_config;              /* 43 */
  int32_t is_host_transfer;                 /* 47 */
  nsl_hlo_replica_group *replica_groups;    /* 49 */
  int64_t nreplica_groups;
  nsl_hlo_source_target *source_target_pairs; /* 52 */
  int64_t nsource_target_pairs;
  const char *comparison_direction;         /* 63 */
  nsl_hlo_attrs frontend_attributes;        /* 68 */
  int32_t use_global_device_ids;            /* 71 */
  const char *async_execution_thread;       /* 79 */
} nsl_hlo_instruction;

typedef struct nsl_hlo_computation {        /* xla.HloComputationProto */
  const char *name;                         /* 1 */
  nsl_hlo_instruction *instructions;        /* 2 */
  int64_t ninstructions;
  int64_t id;                               /* 5 */
  int64_t root_id;                          /* 6 */
  int32_t is_fusion_computation;            /* 7 */
  const char *execution_thread;             /* 8 */
} nsl_hlo_computation;

typedef struct nsl_hlo_file_location {      /* xla.StackFrameIndexProto.FileLocation */
  int32_t file_name_id;                     /* 1: 1-based into file_names */
  int32_t function_name_id;                 /* 2: 1-based into function_names */
  int32_t line;                             /* 3 */
  int32_t column;                           /* 4 */
} nsl_hlo_file_location;

typedef struct nsl_hlo_stack_frame_entry {  /* xla.StackFrameIndexProto.StackFrame */
  int32_t file_location_id;                 /* 1: 1-based into file_locations */
  int32_t parent_frame_id;                  /* 2: 1-based into stack_frames, 0 = root */
} nsl_hlo_stack_frame_entry;

typedef struct nsl_hlo_stack_frame_index {  /* xla.StackFrameIndexProto */
  const char **file_names;                  /* 1 */
  int64_t nfile_names;
  const char **function_names;              /* 2 */
  int64_t nfunction_names;
  nsl_hlo_file_location *file_locations;    /* 3 */
  int64_t nfile_locations;
  nsl_hlo_stack_frame_entry *stack_frames;  /* 4 */
  int64_t nstack_frames;
} nsl_hlo_stack_frame_index;

typedef struct nsl_hlo_module {             /* xla.HloModuleProto */
  const char *name;                         /* 1 */
  const char *entry_computation_name;       /* 2 */
  nsl_hlo_computation *computations;        /* 3 */
  int64_t ncomputations;
  int64_t id;                               /* 5 */
  int64_t entry_computation_id;             /* 6 */
  nsl_hlo_stack_frame_index stack_frame_index; /* 17 */
  nsl_hlo_attrs frontend_attributes;        /* 19 */
} nsl_hlo_module;

typedef struct nsl_hlo_location {           /* xla.LogicalBufferProto.Location */
  const char *instruction_name;             /* 2 (deprecated; older dumps) */
  int64_t *shape_index;                     /* 3 */
  int64_t nshape_index;
  int64_t instruction_id;                   /* 4 */
} nsl_hlo_location;

typedef struct nsl_hlo_logical_buffer {     /* xla.LogicalBufferProto */
  int64_t id;                               /* 1 */
  int64_t size;                             /* 2 */
  nsl_hlo_location defined_at;              /* 3 */
  int64_t color;                            /* 4 */
} nsl_hlo_logical_buffer;

typedef struct nsl_hlo_buffer_alias {       /* xla.BufferAssignmentProto.BufferAlias */
  int64_t source_buffer_id;                 /* 1 */
  nsl_hlo_location location;                /* 2 */
} nsl_hlo_buffer_alias;

typedef struct nsl_hlo_assigned {           /* xla.BufferAllocationProto.Assigned */
  int64_t logical_buffer_id;                /* 1 */
  int64_t offset;                           /* 2 */
  int64_t size;                             /* 3 */
} nsl_hlo_assigned;

typedef struct nsl_hlo_buffer_allocation {  /* xla.BufferAllocationProto */
  int64_t index;                            /* 1 */
  int64_t size;                             /* 2 */
  int32_t is_thread_local;                  /* 3 */
  int32_t is_entry_computation_parameter;   /* 5 */
  int64_t parameter_number;                 /* 6 */
  int32_t maybe_live_out;                   /* 7 */
  int64_t color;                            /* 8 */
  nsl_hlo_assigned *assigned;               /* 9 */
  int64_t nassigned;
  int64_t *parameter_shape_index;           /* 10 */
  int64_t nparameter_shape_index;
  int32_t is_tuple;                         /* 11 */
  int32_t is_constant;                      /* 12 */
} nsl_hlo_buffer_allocation;

enum { NSL_HLO_HEAP_ALLOC = 0, NSL_HLO_HEAP_FREE = 1, NSL_HLO_HEAP_SHARE_WITH = 2 };

typedef struct nsl_hlo_heap_event {         /* xla.HeapSimulatorTrace.Event */
  int32_t kind;                             /* 1: NSL_HLO_HEAP_* */
  int64_t buffer_id;                        /* 2 */
  const char *computation_name;             /* 3 */
  const char *instruction_name;             /* 4 */
  int64_t share_with_canonical_id;          /* 5 */
} nsl_hlo_heap_event;

typedef struct nsl_hlo_heap_trace {         /* xla.HeapSimulatorTrace */
  nsl_hlo_heap_event *events;               /* 1 */
  int64_t nevents;
  int32_t whole_module_simulation;          /* 2 */
  int64_t buffer_allocation_index;          /* 3 */
} nsl_hlo_heap_trace;

typedef struct nsl_hlo_buffer_assignment {  /* xla.BufferAssignmentProto */
  nsl_hlo_logical_buffer *logical_buffers;  /* 1 */
  int64_t nlogical_buffers;
  nsl_hlo_buffer_alias *buffer_aliases;     /* 2 */
  int64_t nbuffer_aliases;
  nsl_hlo_buffer_allocation *buffer_allocations; /* 3 */
  int64_t nbuffer_allocations;
  nsl_hlo_heap_trace *heap_simulator_traces; /* 4 */
  int64_t nheap_simulator_traces;
} nsl_hlo_buffer_assignment;

struct nsl_hlo_index_entry;
struct nsl_hlo_names;

typedef struct nsl_hlo {                    /* xla.HloProto */
  nsl_hlo_module module;                    /* 1: hlo_module */
  nsl_hlo_buffer_assignment buffer_assignment; /* 3 */
  /* private: the arena that owns the tree, and id indexes (sorted) */
  struct nsl_pb_arena *arena_;
  struct nsl_hlo_index_entry *comp_index_, *inst_index_, *buffer_index_;
  int64_t ncomp_index_, ninst_index_, nbuffer_index_;
  struct nsl_hlo_names *names_;             /* instruction names, built by the first nsl_hlo_find */
} nsl_hlo;

/* Decodes a serialized xla.HloProto of size bytes.  label names it in
 * errors.  *out is freed with nsl_hlo_free. */
nsl_status nsl__hlo_decode(const void *data, size_t size, const char *label, nsl_hlo **out,
                          nsl_error *err);
/* Same for an xz-compressed one (as nsys-jax stores them). */
nsl_status nsl__hlo_decode_xz(const void *data, size_t size, const char *label, nsl_hlo **out,
                             nsl_error *err);
/* nsl_hlo_read_file, nsl_hlo_load and nsl_hlo_free: see nsl/hlo.h. */

/* Decompresses an xz stream into a malloc'd buffer (*out, *outlen); refuses
 * output above limit bytes (NSL_ERR_LIMIT). */
nsl_status nsl__xz_decompress(const void *data, size_t size, size_t limit, const char *label,
                             uint8_t **out, size_t *outlen, nsl_error *err);

/* The computation with this id, or NULL (O(log n): indexed when decoded). */
const nsl_hlo_computation *nsl__hlo_find_computation(const nsl_hlo *h, int64_t id);
/* The instruction with this id (and its computation in *comp if not NULL),
 * or NULL.  Instruction ids are unique within a module. */
const nsl_hlo_instruction *nsl__hlo_find_instruction(const nsl_hlo *h, int64_t id,
                                                    const nsl_hlo_computation **comp);
/* The logical buffer with this id (heap-simulator events name them), or NULL. */
const nsl_hlo_logical_buffer *nsl__hlo_find_buffer(const nsl_hlo *h, int64_t id);
/* The value of frontend attribute key, or NULL. */
const char *nsl__hlo_frontend_attr(const nsl_hlo_attrs *a, const char *key);

/* Resolves frame id (1-based) of the index.  Returns 0, or -1 when the id
 * or one of the ids it refers to is out of range. */
int nsl__hlo_stack_frame(const nsl_hlo_stack_frame_index *s, int32_t id, nsl_hlo_frame *out);

/* Bits per element of a primitive type (PRED 8, S4 4, BF16 16, C64 64...),
 * 0 for TUPLE / TOKEN / OPAQUE / unknown. */
int nsl__hlo_element_bits(int32_t element_type);
/* Bytes of a shape: product of dimensions times the element size (rounded
 * up to whole bytes), summed over the leaves of a tuple; -1 when a
 * dimension is negative or the size overflows. */
int64_t nsl__hlo_shape_bytes(const nsl_hlo_shape *s);
/* Name of a primitive type ("f32", "bf16", "tuple"...), "?" when unknown. */
const char *nsl__hlo_element_name(int32_t element_type);

#endif
