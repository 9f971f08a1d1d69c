/*
 * hlo.c -- XLA HloProto decoding: field tables for the protobuf decoder,
 * xz decompression, and lookups over the decoded tree.  See hlo.h.
 *
 * Field numbers: xla/service/hlo.proto and xla/xla_data.proto as shipped in
 * nsys-jax archives (protos/); the number of each field is noted beside its
 * member in hlo.h.
 */
#include "source/hlo.h"
#include "source/hlo_query.h"

#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what one dump may cost. */
#define HLO_MAX_PB ((size_t)1 << 30)          /* decompressed protobuf */
#define HLO_XZ_MEMLIMIT ((uint64_t)256 << 20) /* liblzma's own memory */

/* ---- field tables (sorted by field number) ----------------------------------- */

static const nsl_pb_msg layout_msg, shape_msg, metadata_msg, attr_msg, attrs_msg,
    replica_group_msg, source_target_msg, instruction_msg, computation_msg, file_location_msg,
    stack_frame_msg, stack_frame_index_msg, module_msg, location_msg, logical_buffer_msg,
    buffer_alias_msg, assigned_msg, buffer_allocation_msg, heap_event_msg, heap_trace_msg,
    buffer_assignment_msg, hlo_msg;

static const nsl_pb_field layout_fields[] = {
    NSL_PB_R(1, NSL_PB_INT64, nsl_hlo_layout, minor_to_major, n_minor_to_major),
    NSL_PB_F(7, NSL_PB_INT64, nsl_hlo_layout, element_size_in_bits),
    NSL_PB_F(8, NSL_PB_INT64, nsl_hlo_layout, memory_space),
};
static const nsl_pb_msg layout_msg = NSL_PB_MSG("xla.LayoutProto", nsl_hlo_layout, layout_fields);

static const nsl_pb_field shape_fields[] = {
    NSL_PB_F(2, NSL_PB_INT32, nsl_hlo_shape, element_type),
    NSL_PB_R(3, NSL_PB_INT64, nsl_hlo_shape, dimensions, ndimensions),
    NSL_PB_RM(4, nsl_hlo_shape, tuple_shapes, ntuple_shapes, shape_msg),
    NSL_PB_M(5, nsl_hlo_shape, layout, layout_msg),
};
static const nsl_pb_msg shape_msg = NSL_PB_MSG("xla.ShapeProto", nsl_hlo_shape, shape_fields);

static const nsl_pb_field metadata_fields[] = {
    NSL_PB_F(1, NSL_PB_STRING, nsl_hlo_metadata, op_type),
    NSL_PB_F(2, NSL_PB_STRING, nsl_hlo_metadata, op_name),
    NSL_PB_F(3, NSL_PB_STRING, nsl_hlo_metadata, source_file),
    NSL_PB_F(4, NSL_PB_INT32, nsl_hlo_metadata, source_line),
    NSL_PB_F(12, NSL_PB_STRING, nsl_hlo_metadata, deduplicated_name),
    NSL_PB_F(15, NSL_PB_INT32, nsl_hlo_metadata, stack_frame_id),
};
static const nsl_pb_msg metadata_msg =
    NSL_PB_MSG("xla.OpMetadata", nsl_hlo_metadata, metadata_fields);

static const nsl_pb_field attr_fields[] = {
    NSL_PB_F(1, NSL_PB_STRING, nsl_hlo_attr, key),
    NSL_PB_F(2, NSL_PB_STRING, nsl_hlo_attr, value),
};
static const nsl_pb_msg attr_msg = NSL_PB_MSG("xla.FrontendAttributes.MapEntry", nsl_hlo_attr, attr_fields);

static const nsl_pb_field attrs_fields[] = {
    NSL_PB_RM(1, nsl_hlo_attrs, map, nmap, attr_msg),
};
static const nsl_pb_msg attrs_msg =
    NSL_PB_MSG("xla.FrontendAttributes", nsl_hlo_attrs, attrs_fields);

static const nsl_pb_field replica_group_fields[] = {
    NSL_PB_R(1, NSL_PB_INT64, nsl_hlo_replica_group, replica_ids, nreplica_ids),
};
static const nsl_pb_msg replica_group_msg =
    NSL_PB_MSG("xla.ReplicaGroup", nsl_hlo_replica_group, replica_group_fields);

static const nsl_pb_field source_target_fields[] = {
    NSL_PB_F(1, NSL_PB_INT64, nsl_hlo_source_target, source),
    NSL_PB_F(2, NSL_PB_INT64, nsl_hlo_source_target, target),
};
static const nsl_pb_msg source_target_msg =
    NSL_PB_MSG("xla.SourceTarget", nsl_hlo_source_target, source_target_fields);

static const nsl_pb_field instruction_fields[] = {
    NSL_PB_F(1, NSL_PB_STRING, nsl_hlo_instruction, name),
    NSL_PB_F(2, NSL_PB_STRING, nsl_hlo_instruction, opcode),
    NSL_PB_M(3, nsl_hlo_instruction, shape, shape_msg),
    NSL_PB_M(7, nsl_hlo_instruction, metadata, metadata_msg),
    NSL_PB_F(9, NSL_PB_INT64, nsl_hlo_instruction, parameter_number),
    NSL_PB_F(11, NSL_PB_STRING, nsl_hlo_instruction, fusion_kind),
    NSL_PB_F(13, NSL_PB_INT64, nsl_hlo_instruction, tuple_index),
    NSL_PB_R(14, NSL_PB_INT64, nsl_hlo_instruction, dimensions, ndimensions),
    NSL_PB_F(26, NSL_PB_INT64, nsl_hlo_instruction, channel_id),
    NSL_PB_F(28, NSL_PB_STRING, nsl_hlo_instruction, custom_call_target),
    NSL_PB_F(35, NSL_PB_INT64, nsl_hlo_instruction, id),
    NSL_PB_R(36, NSL_PB_INT64, nsl_hlo_instruction, operand_ids, noperand_ids),
    NSL_PB_R(37, NSL_PB_INT64, nsl_hlo_instruction, control_predecessor_ids,
             ncontrol_predecessor_ids),
    NSL_PB_R(38, NSL_PB_INT64, nsl_hlo_instruction, called_computation_ids,
             ncalled_computation_ids),
    NSL_PB_F(43, NSL_PB_BYTES, nsl_hlo_instruction, backend_config),
    NSL_PB_F(47, NSL_PB_BOOL, nsl_hlo_instruction, is_host_transfer),
    NSL_PB_RM(49, nsl_hlo_instruction, replica_groups, nreplica_groups, replica_group_msg),
    NSL_PB_RM(52, nsl_hlo_instruction, source_target_pairs, nsource_target_pairs,
              source_target_msg),
    NSL_PB_F(63, NSL_PB_STRING, nsl_hlo_instruction, comparison_direction),
    NSL_PB_M(68, nsl_hlo_instruction, frontend_attributes, attrs_msg),
    NSL_PB_F(71, NSL_PB_BOOL, nsl_hlo_instruction, use_global_device_ids),
    NSL_PB_F(79, NSL_PB_STRING, nsl_hlo_instruction, async_execution_thread),
};
static const nsl_pb_msg instruction_msg =
    NSL_PB_MSG("xla.HloInstructionProto", nsl_hlo_instruction, instruction_fields);

static const nsl_pb_field computation_fields[] = {
    NSL_PB_F(1, NSL_PB_STRING, nsl_hlo_computation, name),
    NSL_PB_RM(2, nsl_hlo_computation, instructions, ninstructions, instruction_msg),
    NSL_PB_F(5, NSL_PB_INT64, nsl_hlo_computation, id),
    NSL_PB_F(6, NSL_PB_INT64, nsl_hlo_computation, root_id),
    NSL_PB_F(7, NSL_PB_BOOL, nsl_hlo_computation, is_fusion_computation),
    NSL_PB_F(8, NSL_PB_STRING, nsl_hlo_computation, execution_thread),
};
static const nsl_pb_msg computation_msg =
    NSL_PB_MSG("xla.HloComputationProto", nsl_hlo_computation, computation_fields);

static const nsl_pb_field file_location_fields[] = {
    NSL_PB_F(1, NSL_PB_INT32, nsl_hlo_file_location, file_name_id),
    NSL_PB_F(2, NSL_PB_INT32, nsl_hlo_file_location, function_name_id),
    NSL_PB_F(3, NSL_PB_INT32, nsl_hlo_file_location, line),
    NSL_PB_F(4, NSL_PB_INT32, nsl_hlo_file_location, column),
};
static const nsl_pb_msg file_location_msg = NSL_PB_MSG(
    "xla.StackFrameIndexProto.FileLocation", nsl_hlo_file_location, file_location_fields);

static const nsl_pb_field stack_frame_fields[] = {
    NSL_PB_F(1, NSL_PB_INT32, nsl_hlo_stack_frame_entry, file_location_id),
    NSL_PB_F(2, NSL_PB_INT32, nsl_hlo_stack_frame_entry, parent_frame_id),
};
static const nsl_pb_msg stack_frame_msg = NSL_PB_MSG(
    "xla.StackFrameIndexProto.StackFrame", nsl_hlo_stack_frame_entry, stack_frame_fields);

static const nsl_pb_field stack_frame_index_fields[] = {
    NSL_PB_R(1, NSL_PB_STRING, nsl_hlo_stack_frame_index, file_names, nfile_names),
    NSL_PB_R(2, NSL_PB_STRING, nsl_hlo_stack_frame_index, function_names, nfunction_names),
    NSL_PB_RM(3, nsl_hlo_stack_frame_index, file_locations, nfile_locations, file_location_msg),
    NSL_PB_RM(4, nsl_hlo_stack_frame_index, stack_frames, nstack_frames, stack_frame_msg),
};
static const nsl_pb_msg stack_frame_index_msg = NSL_PB_MSG(
    "xla.StackFrameIndexProto", nsl_hlo_stack_frame_index, stack_frame_index_fields);

static const nsl_pb_field module_fields[] = {
    NSL_PB_F(1, NSL_PB_STRING, nsl_hlo_module, name),
    NSL_PB_F(2, NSL_PB_STRING, nsl_hlo_module, entry_computation_name),
    NSL_PB_RM(3, nsl_hlo_module, computations, ncomputations, computation_msg),
    NSL_PB_F(5, NSL_PB_INT64, nsl_hlo_module, id),
    NSL_PB_F(6, NSL_PB_INT64, nsl_hlo_module, entry_computation_id),
    NSL_PB_M(17, nsl_hlo_module, stack_frame_index, stack_frame_index_msg),
    NSL_PB_M(19, nsl_hlo_module, frontend_attributes, attrs_msg),
};
static const nsl_pb_msg module_msg = NSL_PB_MSG("xla.HloModuleProto", nsl_hlo_module, module_fields);

static const nsl_pb_field location_fields[] = {
    NSL_PB_F(2, NSL_PB_STRING, nsl_hlo_location, instruction_name),
    NSL_PB_R(3, NSL_PB_INT64, nsl_hlo_location, shape_index, nshape_index),
    NSL_PB_F(4, NSL_PB_INT64, nsl_hlo_location, instruction_id),
};
static const nsl_pb_msg location_msg =
    NSL_PB_MSG("xla.LogicalBufferProto.Location", nsl_hlo_location, location_fields);

static const nsl_pb_field logical_buffer_fields[] = {
    NSL_PB_F(1, NSL_PB_INT64, nsl_hlo_logical_buffer, id),
    NSL_PB_F(2, NSL_PB_INT64, nsl_hlo_logical_buffer, size),
    NSL_PB_M(3, nsl_hlo_logical_buffer, defined_at, location_msg),
    NSL_PB_F(4, NSL_PB_INT64, nsl_hlo_logical_buffer, color),
};
static const nsl_pb_msg logical_buffer_msg =
    NSL_PB_MSG("xla.LogicalBufferProto", nsl_hlo_logical_buffer, logical_buffer_fields);

static const nsl_pb_field buffer_alias_fields[] = {
    NSL_PB_F(1, NSL_PB_INT64, nsl_hlo_buffer_alias, source_buffer_id),
    NSL_PB_M(2, nsl_hlo_buffer_alias, location, location_msg),
};
static const nsl_pb_msg buffer_alias_msg = NSL_PB_MSG(
    "xla.BufferAssignmentProto.BufferAlias", nsl_hlo_buffer_alias, buffer_alias_fields);

static const nsl_pb_field assigned_fields[] = {
    NSL_PB_F(1, NSL_PB_INT64, nsl_hlo_assigned, logical_buffer_id),
    NSL_PB_F(2, NSL_PB_INT64, nsl_hlo_assigned, offset),
    NSL_PB_F(3, NSL_PB_INT64, nsl_hlo_assigned, size),
};
static const nsl_pb_msg assigned_msg =
    NSL_PB_MSG("xla.BufferAllocationProto.Assigned", nsl_hlo_assigned, assigned_fields);

static const nsl_pb_field buffer_allocation_fields[] = {
    NSL_PB_F(1, NSL_PB_INT64, nsl_hlo_buffer_allocation, index),
    NSL_PB_F(2, NSL_PB_INT64, nsl_hlo_buffer_allocation, size),
    NSL_PB_F(3, NSL_PB_BOOL, nsl_hlo_buffer_allocation, is_thread_local),
    NSL_PB_F(5, NSL_PB_BOOL, nsl_hlo_buffer_allocation, is_entry_computation_parameter),
    NSL_PB_F(6, NSL_PB_INT64, nsl_hlo_buffer_allocation, parameter_number),
    NSL_PB_F(7, NSL_PB_BOOL, nsl_hlo_buffer_allocation, maybe_live_out),
    NSL_PB_F(8, NSL_PB_INT64, nsl_hlo_buffer_allocation, color),
    NSL_PB_RM(9, nsl_hlo_buffer_allocation, assigned, nassigned, assigned_msg),
    NSL_PB_R(10, NSL_PB_INT64, nsl_hlo_buffer_allocation, parameter_shape_index,
             nparameter_shape_index),
    NSL_PB_F(11, NSL_PB_BOOL, nsl_hlo_buffer_allocation, is_tuple),
    NSL_PB_F(12, NSL_PB_BOOL, nsl_hlo_buffer_allocation, is_constant),
};
static const nsl_pb_msg buffer_allocation_msg =
    NSL_PB_MSG("xla.BufferAllocationProto", nsl_hlo_buffer_allocation, buffer_allocation_fields);

static const nsl_pb_field heap_event_fields[] = {
    NSL_PB_F(1, NSL_PB_INT32, nsl_hlo_heap_event, kind),
    NSL_PB_F(2, NSL_PB_INT64, nsl_hlo_heap_event, buffer_id),
    NSL_PB_F(3, NSL_PB_STRING, nsl_hlo_heap_event, computation_name),
    NSL_PB_F(4, NSL_PB_STRING, nsl_hlo_heap_event, instruction_name),
    NSL_PB_F(5, NSL_PB_INT64, nsl_hlo_heap_event, share_with_canonical_id),
};
static const nsl_pb_msg heap_event_msg =
    NSL_PB_MSG("xla.HeapSimulatorTrace.Event", nsl_hlo_heap_event, heap_event_fields);

static const nsl_pb_field heap_trace_fields[] = {
    NSL_PB_RM(1, nsl_hlo_heap_trace, events, nevents, heap_event_msg),
    NSL_PB_F(2, NSL_PB_BOOL, nsl_hlo_heap_trace, whole_module_simulation),
    NSL_PB_F(3, NSL_PB_INT64, nsl_hlo_heap_trace, buffer_allocation_index),
};
static const nsl_pb_msg heap_trace_msg =
    NSL_PB_MSG("xla.HeapSimulatorTrace", nsl_hlo_heap_trace, heap_trace_fields);

static const nsl_pb_field buffer_assignment_fields[] = {
    NSL_PB_RM(1, nsl_hlo_buffer_assignment, logical_buffers, nlogical_buffers, logical_buffer_msg),
    NSL_PB_RM(2, nsl_hlo_buffer_assignment, buffer_aliases, nbuffer_aliases, buffer_alias_msg),
    NSL_PB_RM(3, nsl_hlo_buffer_assignment, buffer_allocations, nbuffer_allocations,
              buffer_allocation_msg),
    NSL_PB_RM(4, nsl_hlo_buffer_assignment, heap_simulator_traces, nheap_simulator_traces,
              heap_trace_msg),
};
static const nsl_pb_msg buffer_assignment_msg =
    NSL_PB_MSG("xla.BufferAssignmentProto", nsl_hlo_buffer_assignment, buffer_assignment_fields);

static const nsl_pb_field hlo_fields[] = {
    NSL_PB_M(1, nsl_hlo, module, module_msg),
    NSL_PB_M(3, nsl_hlo, buffer_assignment, buffer_assignment_msg),
};
static const nsl_pb_msg hlo_msg = NSL_PB_MSG("xla.HloProto", nsl_hlo, hlo_fields);

/* The table of xla.HloProto, for tests. */
const nsl_pb_msg *nsl__hlo_table(void);
const nsl_pb_msg *nsl__hlo_table(void) { return &hlo_msg; }

/* ---- id indexes ----------------------------------------------------------------- */

struct nsl_hlo_index_entry {
  int64_t id;
  int64_t a, b;   /* computation index; instruction index within it */
};

/* Orders index entries by id, then by position in the file. */
static int cmp_entry(const void *x, const void *y) {
  const struct nsl_hlo_index_entry *p = x, *q = y;
  if (p->id != q->id) return p->id < q->id ? -1 : 1;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;   /* ties: first in file order */
  return p->b < q->b ? -1 : p->b > q->b;
}

/* Sorted (id -> position) arrays for computations, instructions and
 * logical buffers, in the arena. */
static int build_indexes(nsl_hlo *h) {
  const nsl_hlo_module *m = &h->module;
  int64_t ni = 0;
  for (int64_t c = 0; c < m->ncomputations; c++) ni += m->computations[c].ninstructions;
  struct nsl_hlo_index_entry *ce = nsl__pb_arena_alloc(h->arena_, (size_t)m->ncomputations * sizeof *ce);
  struct nsl_hlo_index_entry *ie = nsl__pb_arena_alloc(h->arena_, (size_t)ni * sizeof *ie);
  int64_t nb = h->buffer_assignment.nlogical_buffers;
  struct nsl_hlo_index_entry *be = nsl__pb_arena_alloc(h->arena_, (size_t)nb * sizeof *be);
  if (!ce || !ie || !be) return -1;
  int64_t k = 0;
  for (int64_t c = 0; c < m->ncomputations; c++) {
    ce[c] = (struct nsl_hlo_index_entry){m->computations[c].id, c, 0};
    for (int64_t i = 0; i < m->computations[c].ninstructions; i++)
      ie[k++] = (struct nsl_hlo_index_entry){m->computations[c].instructions[i].id, c, i};
  }
  for (int64_t i = 0; i < nb; i++)
    be[i] = (struct nsl_hlo_index_entry){h->buffer_assignment.logical_buffers[i].id, i, 0};
  qsort(ce, (size_t)m->ncomputations, sizeof *ce, cmp_entry);
  qsort(ie, (size_t)ni, sizeof *ie, cmp_entry);
  qsort(be, (size_t)nb, sizeof *be, cmp_entry);
  h->comp_index_ = ce;
  h->ncomp_index_ = m->ncomputations;
  h->inst_index_ = ie;
  h->ninst_index_ = ni;
  h->buffer_index_ = be;
  h->nbuffer_index_ = nb;
  return 0;
}

/* The first entry with this id, or NULL. */
static const struct nsl_hlo_index_entry *index_find(const struct nsl_hlo_index_entry *e, int64_t n,
                                                    int64_t id) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (e[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && e[lo].id == id ? &e[lo] : NULL;
}

/* ---- decoding ------------------------------------------------------------------ */

nsl_status nsl__hlo_decode(const void *data, size_t size, const char *label, nsl_hlo **out,
                          nsl_error *err) {
  *out = NULL;
  if (size > HLO_MAX_PB)
    return nsl_error_set(err, NSL_ERR_LIMIT, "HLO '%s': %zu bytes exceed the %zu-byte limit",
                         label ? label : "(memory)", size, HLO_MAX_PB);
  /* The decoded tree is a few times the protobuf: bound it so that a
   * hostile file cannot ask for unbounded memory. */
  nsl_pb_arena *a = nsl__pb_arena_new(size * 64 + ((size_t)16 << 20));
  if (!a) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory decoding HLO");
  nsl_hlo *h = nsl__pb_arena_alloc(a, sizeof *h);
  if (!h) {
    nsl__pb_arena_free(a);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory decoding HLO");
  }
  nsl_status st = nsl__pb_decode(&hlo_msg, data, size, h, 1, a, label, err);
  if (st != NSL_OK) {
    nsl__pb_arena_free(a);
    return st;
  }
  h->arena_ = a;
  h->names_ = NULL;
  if (build_indexes(h) != 0) {
    nsl__pb_arena_free(a);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory indexing HLO '%s'",
                         label ? label : "(memory)");
  }
  *out = h;
  return NSL_OK;
}

nsl_status nsl__xz_decompress(const void *data, size_t size, size_t limit, const char *label,
                             uint8_t **out, size_t *outlen, nsl_error *err) {
  *out = NULL;
  *outlen = 0;
  lzma_stream z = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&z, HLO_XZ_MEMLIMIT, LZMA_CONCATENATED) != LZMA_OK)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot start the xz decoder for '%s'", label);
  size_t cap = size * 4 + 4096, n = 0;
  if (cap > limit + 1) cap = limit + 1;
  uint8_t *buf = malloc(cap);
  nsl_status st = NSL_OK;
  if (!buf) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory decompressing '%s'", label);
    goto done;
  }
  z.next_in = data;
  z.avail_in = size;
  for (;;) {
    if (n == cap) {
      if (cap > limit) {
        st = nsl_error_set(err, NSL_ERR_LIMIT, "'%s' decompresses to more than %zu bytes", label,
                           limit);
        goto done;
      }
      size_t nc = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
      uint8_t *nb = realloc(buf, nc);
      if (!nb) {
        st = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory decompressing '%s'", label);
        goto done;
      }
      buf = nb;
      cap = nc;
    }
    z.next_out = buf + n;
    z.avail_out = cap - n;
    lzma_ret r = lzma_code(&z, LZMA_FINISH);
    n = cap - z.avail_out;
    if (r == LZMA_STREAM_END) break;
    if (r == LZMA_OK) continue;
    if (r == LZMA_BUF_ERROR && z.avail_out > 0) {
      st = nsl_error_set(err, NSL_ERR_FORMAT, "'%s': truncated xz data", label);
      goto done;
    }
    if (r == LZMA_BUF_ERROR) continue;
    const char *why = r == LZMA_FORMAT_ERROR    ? "not xz data"
                      : r == LZMA_DATA_ERROR    ? "corrupt xz data"
                      : r == LZMA_OPTIONS_ERROR ? "unsupported xz options"
                      : r == LZMA_MEMLIMIT_ERROR ? "xz dictionary too large"
                      : r == LZMA_MEM_ERROR     ? "out of memory"
                                                : "xz decoder error";
    st = nsl_error_set(err, r == LZMA_MEM_ERROR ? NSL_ERR_NOMEM : NSL_ERR_FORMAT, "'%s': %s",
                       label, why);
    goto done;
  }
  if (n > limit) {
    st = nsl_error_set(err, NSL_ERR_LIMIT, "'%s' decompresses to more than %zu bytes", label, limit);
    goto done;
  }
  *out = buf;
  *outlen = n;
  buf = NULL;
done:
  lzma_end(&z);
  free(buf);
  return st;
}

nsl_status nsl__hlo_decode_xz(const void *data, size_t size, const char *label, nsl_hlo **out,
                             nsl_error *err) {
  *out = NULL;
  uint8_t *pb;
  size_t n;
  if (!label) label = "(memory)";
  nsl_status st = nsl__xz_decompress(data, size, HLO_MAX_PB, label, &pb, &n, err);
  if (st != NSL_OK) return st;
  st = nsl__hlo_decode(pb, n, label, out, err);
  free(pb);
  return st;
}

nsl_status nsl_hlo_read_file(const char *path, nsl_hlo **out, nsl_error *err) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return nsl_error_set(err, NSL_ERR_IO, "cannot open HLO dump '%s'", path);
  uint8_t *buf = NULL;
  size_t cap = 0, n = 0;
  nsl_status st = NSL_OK;
  for (;;) {
    if (n == cap) {
      if (cap > HLO_MAX_PB) {
        st = nsl_error_set(err, NSL_ERR_LIMIT, "HLO dump '%s' is larger than %zu bytes", path,
                           HLO_MAX_PB);
        goto done;
      }
      size_t nc = cap ? cap * 2 : 65536;
      uint8_t *nb = realloc(buf, nc);
      if (!nb) {
        st = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading '%s'", path);
        goto done;
      }
      buf = nb;
      cap = nc;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
  }
  if (ferror(f)) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot read HLO dump '%s'", path);
    goto done;
  }
  static const uint8_t xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0};
  if (n >= 6 && memcmp(buf, xz_magic, 6) == 0) st = nsl__hlo_decode_xz(buf, n, path, out, err);
  else st = nsl__hlo_decode(buf, n, path, out, err);
done:
  fclose(f);
  free(buf);
  return st;
}

void nsl_hlo_free(nsl_hlo *h) {
  if (!h) return;
  nsl__hlo_names_free(h->names_);
  nsl__pb_arena_free(h->arena_);
}

/* ---- lookups -------------------------------------------------------------------- */

const nsl_hlo_computation *nsl__hlo_find_computation(const nsl_hlo *h, int64_t id) {
  const struct nsl_hlo_index_entry *e = index_find(h->comp_index_, h->ncomp_index_, id);
  return e ? &h->module.computations[e->a] : NULL;
}

const nsl_hlo_instruction *nsl__hlo_find_instruction(const nsl_hlo *h, int64_t id,
                                                    const nsl_hlo_computation **comp) {
  const struct nsl_hlo_index_entry *e = index_find(h->inst_index_, h->ninst_index_, id);
  if (!e) return NULL;
  const nsl_hlo_computation *c = &h->module.computations[e->a];
  if (comp) *comp = c;
  return &c->instructions[e->b];
}

const nsl_hlo_logical_buffer *nsl__hlo_find_buffer(const nsl_hlo *h, int64_t id) {
  const struct nsl_hlo_index_entry *e = index_find(h->buffer_index_, h->nbuffer_index_, id);
  return e ? &h->buffer_assignment.logical_buffers[e->a] : NULL;
}

const char *nsl__hlo_frontend_attr(const nsl_hlo_attrs *a, const char *key) {
  for (int64_t i = a->nmap - 1; i >= 0; i--)   /* a map: the last entry wins */
    if (strcmp(a->map[i].key, key) == 0) return a->map[i].value;
  return NULL;
}

int nsl__hlo_stack_frame(const nsl_hlo_stack_frame_index *s, int32_t id, nsl_hlo_frame *out) {
  if (id < 1 || id > s->nstack_frames) return -1;
  const nsl_hlo_stack_frame_entry *f = &s->stack_frames[id - 1];
  if (f->file_location_id < 1 || f->file_location_id > s->nfile_locations) return -1;
  const nsl_hlo_file_location *l = &s->file_locations[f->file_location_id - 1];
  if (l->file_name_id < 1 || l->file_name_id > s->nfile_names) return -1;
  if (l->function_name_id < 1 || l->function_name_id > s->nfunction_names) return -1;
  if (f->parent_frame_id < 0 || f->parent_frame_id > s->nstack_frames) return -1;
  out->file = s->file_names[l->file_name_id - 1];
  out->function = s->function_names[l->function_name_id - 1];
  out->line = l->line;
  out->column = l->column;
  out->parent = f->parent_frame_id;
  return 0;
}

int nsl__hlo_element_bits(int32_t t) {
  switch (t) {
  case 26: case 27: return 2;                   /* S2, U2 */
  case 21: case 22: return 4;                   /* S4, U4 */
  case 1: case 2: case 6: return 8;             /* PRED, S8, U8 */
  case 19: case 20: case 23: case 24: case 25: return 8;   /* F8 variants */
  case 3: case 7: case 10: case 16: return 16;  /* S16, U16, F16, BF16 */
  case 4: case 8: case 11: return 32;           /* S32, U32, F32 */
  case 5: case 9: case 12: case 15: return 64;  /* S64, U64, F64, C64 */
  case 18: return 128;                          /* C128 */
  default: return 0;                            /* TUPLE, OPAQUE, TOKEN, unknown */
  }
}

const char *nsl__hlo_element_name(int32_t t) {
  static const char *const names[] = {
      "invalid", "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
      "f16", "f32", "f64", "tuple", "opaque", "c64", "bf16", "token", "c128", "f8e5m2",
      "f8e4m3fn", "s4", "u4", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz", "s2", "u2"};
  return t >= 0 && t < (int32_t)(sizeof names / sizeof names[0]) ? names[t] : "?";
}

/* nsl__hlo_shape_bytes with a bound on tuple nesting. */
static int64_t shape_bytes(const nsl_hlo_shape *s, int depth) {
  if (depth > NSL_PB_MAX_DEPTH) return -1;
  if (s->element_type == NSL_HLO_TUPLE) {
    int64_t total = 0;
    for (int64_t i = 0; i < s->ntuple_shapes; i++) {
      int64_t b = shape_bytes(&s->tuple_shapes[i], depth + 1);
      if (b < 0 || b > INT64_MAX - total) return -1;
      total += b;
    }
    return total;
  }
  int bits = nsl__hlo_element_bits(s->element_type);
  int64_t n = 1;
  for (int64_t i = 0; i < s->ndimensions; i++) {
    int64_t d = s->dimensions[i];
    if (d < 0) return -1;
    if (d && n > INT64_MAX / 128 / d) return -1;
    n *= d;
  }
  return (n * bits + 7) / 8;
}

int64_t nsl__hlo_shape_bytes(const nsl_hlo_shape *s) { return shape_bytes(s, 0); }
