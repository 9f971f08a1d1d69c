/* hlo_query.c -- instruction lookup by name, communication classification
 * and message sizes, heap-simulator peaks over a decoded HloProto (see
 * hlo_query.h; the rules are nsys-jax's, protobuf.py and analysis.py, and the
 * heap peak XLA's heap simulator's). */
#include "source/hlo_query.h"

#include "core/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct name_entry {
  const char *name;
  int64_t comp, inst;
} name_entry;

struct nsl_hlo_names {
  const nsl_hlo *h;
  name_entry *e;
  int64_t n;
};

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const name_entry *)a)->name, ((const name_entry *)b)->name);
}

nsl_hlo_names *nsl__hlo_names_build(const nsl_hlo *h) {
  nsl_hlo_names *ix = calloc(1, sizeof *ix);
  if (!ix) return NULL;
  int64_t n = 0;
  for (int64_t c = 0; c < h->module.ncomputations; c++) n += h->module.computations[c].ninstructions;
  ix->h = h;
  ix->e = malloc((size_t)(n ? n : 1) * sizeof *ix->e);
  if (!ix->e) {
    free(ix);
    return NULL;
  }
  for (int64_t c = 0; c < h->module.ncomputations; c++)
    for (int64_t i = 0; i < h->module.computations[c].ninstructions; i++)
      ix->e[ix->n++] = (name_entry){h->module.computations[c].instructions[i].name, c, i};
  qsort(ix->e, (size_t)ix->n, sizeof *ix->e, cmp_entry);
  return ix;
}

const nsl_hlo_instruction *nsl__hlo_names_find(const nsl_hlo_names *ix, const char *name,
                                              const nsl_hlo_computation **comp) {
  name_entry key = {name, 0, 0};
  const name_entry *e = bsearch(&key, ix->e, (size_t)ix->n, sizeof *ix->e, cmp_entry);
  if (!e) return NULL;
  const nsl_hlo_computation *c = &ix->h->module.computations[e->comp];
  if (comp) *comp = c;
  return &c->instructions[e->inst];
}

void nsl__hlo_names_free(nsl_hlo_names *ix) {
  if (!ix) return;
  free(ix->e);
  free(ix);
}

static int in_set(const char *s, const char *const *set) {
  for (; *set; set++)
    if (strcmp(s, *set) == 0) return 1;
  return 0;
}

static const char *const comm_ops[] = {"all-gather", "all-reduce", "all-to-all", "collective-broadcast",
                                       "collective-permute", "reduce-scatter", NULL};
static const char *const comm_start_ops[] = {"all-gather-start", "all-reduce-start", "collective-permute-start",
                                             NULL};

static int on_host(const nsl_hlo_shape *s) { return s->layout.memory_space == 5; }

/* A dynamic(-update)-slice moving data between host and device. */
static int is_offload(const nsl_hlo *h, const nsl_hlo_instruction *in) {
  int dest = on_host(&in->shape);
  const nsl_hlo_instruction *op0 = in->noperand_ids > 0 ? nsl__hlo_find_instruction(h, in->operand_ids[0], NULL) : NULL;
  const nsl_hlo_instruction *op1 = in->noperand_ids > 1 ? nsl__hlo_find_instruction(h, in->operand_ids[1], NULL) : NULL;
  if (strcmp(in->opcode, "dynamic-slice") == 0) return op0 && dest != on_host(&op0->shape);
  if (strcmp(in->opcode, "dynamic-update-slice") == 0)
    return op0 && op1 && dest == on_host(&op0->shape) && dest != on_host(&op1->shape);
  return 0;
}

/* One search of the computations an instruction calls: each computation is
 * searched once and its answer kept, since modules share computations (a
 * DAG) and a hostile one may call the same computation from every
 * instruction of a long chain (exponential without the memo) or call itself
 * (a cycle: the computation being searched counts as holding nothing). */
typedef struct comm_search {
  const nsl_hlo *h;
  unsigned char *state;              /* per computation: 0 not seen, 1 being searched, 2 done */
  const nsl_hlo_instruction **found; /* per computation, once done */
} comm_search;

/* The collective (or offload) inside the computations called by `comp_id`, depth-first. */
static const nsl_hlo_instruction *find_comm(comm_search *s, int64_t comp_id, int depth) {
  const nsl_hlo_computation *c = nsl__hlo_find_computation(s->h, comp_id);
  const nsl_hlo_instruction *found = NULL;
  if (!c || depth > 64) return NULL;
  size_t ci = (size_t)(c - s->h->module.computations);
  if (s->state[ci] == 1) return NULL;
  if (s->state[ci] == 2) return s->found[ci];
  s->state[ci] = 1;
  for (int64_t i = 0; i < c->ninstructions; i++) {
    const nsl_hlo_instruction *in = &c->instructions[i];
    for (int64_t k = 0; k < in->ncalled_computation_ids; k++) {
      const nsl_hlo_instruction *f = find_comm(s, in->called_computation_ids[k], depth + 1);
      if (f) found = f;
    }
    if (in_set(in->opcode, comm_ops) || is_offload(s->h, in)) found = in;
  }
  s->state[ci] = 2;
  s->found[ci] = found;
  return found;
}

/* Bytes of an array shape: product of dimensions times the element width. */
static int64_t array_bytes(const nsl_hlo_shape *s) {
  int bits = nsl__hlo_element_bits(s->element_type);
  if (bits <= 0 || s->ntuple_shapes) return -1;
  int64_t v = bits;
  for (int64_t d = 0; d < s->ndimensions; d++) {
    if (s->dimensions[d] < 0) return -1;
    v *= s->dimensions[d];
  }
  return v % 8 ? -1 : v / 8;
}

void nsl__hlo_comm_info(const nsl_hlo *h, const nsl_hlo_instruction *inst, nsl_hlo_comm *out) {
  memset(out, 0, sizeof *out);
  out->bytes = -1;
  const nsl_hlo_instruction *c = NULL;
  if (in_set(inst->opcode, comm_ops) || in_set(inst->opcode, comm_start_ops)) c = inst;
  else if ((strcmp(inst->opcode, "async-start") == 0 || strcmp(inst->opcode, "fusion") == 0) &&
           h->module.ncomputations > 0) {
    size_t n = (size_t)h->module.ncomputations;
    comm_search s = {h, calloc(n, 1), calloc(n, sizeof *s.found)};
    for (int64_t k = 0; s.state && s.found && k < inst->ncalled_computation_ids; k++) {
      const nsl_hlo_instruction *f = find_comm(&s, inst->called_computation_ids[k], 0);
      if (f) c = f;
    }
    free(s.state);
    free(s.found);
  }
  if (!c) return;
  out->is_comm = 1;
  out->opcode = c->opcode;
  if (strcmp(c->opcode, "dynamic-slice") == 0 || strcmp(c->opcode, "dynamic-update-slice") == 0) {
    int dus = c->opcode[7] == 'u';
    const nsl_hlo_instruction *src =
        c->noperand_ids > (dus ? 1 : 0) ? nsl__hlo_find_instruction(h, c->operand_ids[dus ? 1 : 0], NULL) : NULL;
    out->bytes = dus ? (src ? array_bytes(&src->shape) : -1) : array_bytes(&c->shape);
    snprintf(out->collective, sizeof out->collective, "%s", on_host(&c->shape) ? "device-to-host" : "host-to-device");
    out->size = 1;
    out->bw_correction = out->bus_correction = 1.0;
    return;
  }
  size_t ol = strlen(c->opcode);
  if (ol > 6 && strcmp(c->opcode + ol - 6, "-start") == 0) ol -= 6;
  snprintf(out->collective, sizeof out->collective, "%.*s", (int)ol, c->opcode);
  if (strncmp(c->opcode, "collective-permute", 18) == 0) out->size = 2;
  else if (c->nreplica_groups > 0) {
    out->size = c->replica_groups[0].nreplica_ids;
    for (int64_t g = 1; g < c->nreplica_groups; g++)
      if (c->replica_groups[g].nreplica_ids != out->size) out->size = 0;   /* heterogeneous: unknown */
  }
  int64_t total = 0;
  for (int64_t k = 0; k < c->noperand_ids && total >= 0; k++) {
    const nsl_hlo_instruction *op = nsl__hlo_find_instruction(h, c->operand_ids[k], NULL);
    int64_t b = op ? array_bytes(&op->shape) : -1;
    if (b < 0) total = -1;
    else if (strcmp(c->opcode, "reduce-scatter") == 0) total = out->size > 0 ? total + b / out->size : -1;
    else total += b;
  }
  out->bytes = total;
  double n = (double)out->size;
  const char *k = out->collective;
  if (out->size <= 0) out->bw_correction = out->bus_correction = 0.0 / 0.0;
  else if (strcmp(k, "all-gather") == 0 || strcmp(k, "reduce-scatter") == 0) {
    out->bw_correction = n;
    out->bus_correction = (n - 1) / n;
  } else if (strcmp(k, "all-reduce") == 0) {
    out->bw_correction = 1;
    out->bus_correction = 2 * (n - 1) / n;
  } else if (strcmp(k, "all-to-all") == 0) {
    out->bw_correction = 1;
    out->bus_correction = (n - 1) / n;
  } else out->bw_correction = out->bus_correction = 1;
}

/* Position of buffer id in the logical buffer array, or -1. */
static int64_t buffer_pos(const nsl_hlo *h, int64_t id) {
  const nsl_hlo_logical_buffer *lb = nsl__hlo_find_buffer(h, id);
  return lb ? lb - h->buffer_assignment.logical_buffers : -1;
}

int64_t nsl__hlo_heap_peak(const nsl_hlo *h, int64_t t, nsl_hlo_heap_stats *stats) {
  const nsl_hlo_buffer_assignment *ba = &h->buffer_assignment;
  if (stats) memset(stats, 0, sizeof *stats);
  if (t < 0 || t >= ba->nheap_simulator_traces) return -1;
  const nsl_hlo_heap_trace *tr = &ba->heap_simulator_traces[t];
  int64_t nb = ba->nlogical_buffers;
  /* canon[b]: the buffer whose memory b uses (itself unless it shares);
   * refs[r]: live buffers using r's memory */
  int64_t *canon = malloc((size_t)(nb ? nb : 1) * sizeof *canon);
  int64_t *refs = calloc((size_t)(nb ? nb : 1), sizeof *refs);
  if (!canon || !refs) {
    free(canon);
    free(refs);
    return -1;
  }
  for (int64_t b = 0; b < nb; b++) canon[b] = b;
  int64_t cur = 0, peak = 0;
  for (int64_t e = 0; e < tr->nevents; e++) {
    const nsl_hlo_heap_event *ev = &tr->events[e];
    int64_t b = buffer_pos(h, ev->buffer_id);
    if (stats) {
      if (ev->kind == NSL_HLO_HEAP_ALLOC) stats->alloc++;
      else if (ev->kind == NSL_HLO_HEAP_FREE) stats->free++;
      else if (ev->kind == NSL_HLO_HEAP_SHARE_WITH) stats->share++;
    }
    if (b < 0) continue;   /* a buffer the assignment does not list takes no memory */
    if (ev->kind == NSL_HLO_HEAP_ALLOC) canon[b] = b;   /* a region of its own */
    else if (ev->kind == NSL_HLO_HEAP_SHARE_WITH) {
      int64_t c = buffer_pos(h, ev->share_with_canonical_id);
      if (c >= 0) {
        for (int64_t hops = 0; canon[c] != c && hops < nb; hops++) c = canon[c];   /* the chain's root */
        canon[b] = c;
      }
    } else if (ev->kind != NSL_HLO_HEAP_FREE) continue;   /* an event kind of a later XLA */
    int64_t r = canon[b];
    if (ev->kind == NSL_HLO_HEAP_FREE) {
      if (refs[r] > 0 && --refs[r] == 0) cur -= ba->logical_buffers[r].size;
    } else if (refs[r]++ == 0) {   /* ALLOC, or SHARE_WITH a region no live buffer holds */
      cur += ba->logical_buffers[r].size;
    }
    if (cur > peak) peak = cur;
  }
  free(canon);
  free(refs);
  return peak;
}

/* ---- the public module API (nsl/hlo.h) ---------------------------------------- */

nsl_status nsl_hlo_load(const void *data, size_t size, const char *label, nsl_hlo **out, nsl_error *err) {
  return size >= 6 && memcmp(data, "\xfd" "7zXZ", 5) == 0 ? nsl__hlo_decode_xz(data, size, label, out, err)
                                                         : nsl__hlo_decode(data, size, label, out, err);
}

void nsl_hlo_summarize(const nsl_hlo *h, nsl_hlo_summary *out) {
  const nsl_hlo_module *m = &h->module;
  int64_t ni = 0;
  for (int64_t c = 0; c < m->ncomputations; c++) ni += m->computations[c].ninstructions;
  const char *fp = nsl__hlo_frontend_attr(&m->frontend_attributes, "fingerprint_before_lhs");
  *out = (nsl_hlo_summary){m->name, m->id, fp ? fp : "", m->ncomputations, ni,
                           h->buffer_assignment.nheap_simulator_traces};
}

int64_t nsl_hlo_ncomputations(const nsl_hlo *h) { return h->module.ncomputations; }

int64_t nsl_hlo_computation_size(const nsl_hlo *h, int64_t c) {
  return c >= 0 && c < h->module.ncomputations ? h->module.computations[c].ninstructions : 0;
}

int64_t nsl_hlo_computation_index(const nsl_hlo *h, int64_t id) {
  const nsl_hlo_computation *c = nsl__hlo_find_computation(h, id);
  return c ? c - h->module.computations : -1;
}

nsl_status nsl_hlo_find(nsl_hlo *h, const char *name, int64_t *c, int64_t *i, nsl_error *err) {
  if (!h->names_ && !(h->names_ = nsl__hlo_names_build(h))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  name_entry key = {name, 0, 0};
  const name_entry *e = bsearch(&key, h->names_->e, (size_t)h->names_->n, sizeof *e, cmp_entry);
  if (!e) return nsl_error_set(err, NSL_ERR_NOTFOUND, "no instruction '%s' in HLO module '%s'", name, h->module.name);
  *c = e->comp;
  *i = e->inst;
  return NSL_OK;
}

/* Instruction i of computation c, or NULL out of range. */
static const nsl_hlo_instruction *inst_at(const nsl_hlo *h, int64_t c, int64_t i) {
  if (c < 0 || c >= h->module.ncomputations || i < 0 || i >= h->module.computations[c].ninstructions) return NULL;
  return &h->module.computations[c].instructions[i];
}

nsl_status nsl_hlo_get(const nsl_hlo *h, int64_t c, int64_t i, nsl_hlo_inst *out, nsl_error *err) {
  const nsl_hlo_instruction *in = inst_at(h, c, i);
  if (!in) return nsl_error_set(err, NSL_ERR_ARG, "no instruction %lld of computation %lld", (long long)i, (long long)c);
  *out = (nsl_hlo_inst){in->name, in->opcode, in->metadata.op_name, in->metadata.op_type, in->metadata.source_file,
                        in->metadata.source_line, in->metadata.stack_frame_id, h->module.computations[c].name,
                        in->called_computation_ids, in->ncalled_computation_ids};
  return NSL_OK;
}

nsl_status nsl_hlo_comm_of(const nsl_hlo *h, int64_t c, int64_t i, nsl_hlo_comm *out, nsl_error *err) {
  const nsl_hlo_instruction *in = inst_at(h, c, i);
  if (!in) return nsl_error_set(err, NSL_ERR_ARG, "no instruction %lld of computation %lld", (long long)i, (long long)c);
  nsl__hlo_comm_info(h, in, out);
  return NSL_OK;
}

nsl_status nsl_hlo_frame_of(const nsl_hlo *h, int32_t id, nsl_hlo_frame *out, nsl_error *err) {
  if (nsl__hlo_stack_frame(&h->module.stack_frame_index, id, out) != 0)
    return nsl_error_set(err, NSL_ERR_FORMAT, "stack frame %d is out of range", (int)id);
  return NSL_OK;
}

int64_t nsl_hlo_nheap_traces(const nsl_hlo *h) { return h->buffer_assignment.nheap_simulator_traces; }

nsl_status nsl_hlo_heap(const nsl_hlo *h, int64_t t, nsl_hlo_heap_stats *out, nsl_error *err) {
  memset(out, 0, sizeof *out);
  if (t < 0 || t >= h->buffer_assignment.nheap_simulator_traces)
    return nsl_error_set(err, NSL_ERR_ARG, "no heap-simulator trace %lld", (long long)t);
  int64_t peak = nsl__hlo_heap_peak(h, t, out);
  if (peak < 0) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  out->peak = peak;
  out->events = h->buffer_assignment.heap_simulator_traces[t].nevents;
  return NSL_OK;
}

nsl_status nsl_hlo_structure(const nsl_hlo *h, char **out, size_t *len, nsl_error *err) {
  const nsl_hlo_module *m = &h->module;
  nsl__text b = {0};
  nsl__text_add(&b, m->name);
  for (int64_t c = 0; c < m->ncomputations; c++)
    for (int64_t i = 0; i < m->computations[c].ninstructions; i++) {
      const nsl_hlo_instruction *in = &m->computations[c].instructions[i];
      nsl__text_add(&b, "\n");
      nsl__text_add(&b, in->name);
      nsl__text_add(&b, " ");
      nsl__text_add(&b, in->opcode);
      nsl__text_add(&b, " ");
      nsl__text_add(&b, nsl__hlo_element_name(in->shape.element_type));
      for (int64_t d = 0; d < in->shape.ndimensions; d++) {
        char num[32];
        snprintf(num, sizeof num, "%c%lld", d ? ',' : '[', (long long)in->shape.dimensions[d]);
        nsl__text_add(&b, num);
      }
      for (int64_t t = 0; t < in->shape.ntuple_shapes; t++) {
        char num[48];
        snprintf(num, sizeof num, " t%lld:%s", (long long)t,
                 nsl__hlo_element_name(in->shape.tuple_shapes[t].element_type));
        nsl__text_add(&b, num);
      }
    }
  if (b.oom || !b.s) {
    free(b.s);
    *out = NULL;
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  *out = b.s;
  *len = b.len;
  return NSL_OK;
}
