/* fuzz_hlo.c -- libFuzzer harness: the bytes are a serialized xla.HloProto
 * (the protobuf decoder and the HLO tree built from it), then the lookups
 * the analyses make over the decoded tree (names, communication info, heap
 * peak). */
#include <stdint.h>
#include <stdlib.h>

#include "source/hlo.h"
#include "source/hlo_query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nsl_error err = {0};
  nsl_hlo *h = NULL;
  if (nsl__hlo_decode(data, size, "fuzz.hlo.pb", &h, &err) != NSL_OK) return 0;
  nsl_hlo_names *ix = nsl__hlo_names_build(h);
  const nsl_hlo_module *mod = &h->module;
  for (int64_t c = 0; c < mod->ncomputations; c++) {
    const nsl_hlo_computation *comp = &mod->computations[c];
    (void)nsl__hlo_find_computation(h, comp->id);
    for (int64_t i = 0; i < comp->ninstructions; i++) {
      const nsl_hlo_instruction *inst = &comp->instructions[i];
      nsl_hlo_comm info;
      nsl__hlo_comm_info(h, inst, &info);
      (void)nsl__hlo_find_instruction(h, inst->id, NULL);
      const nsl_hlo_computation *owner = NULL;
      if (inst->name) (void)nsl__hlo_names_find(ix, inst->name, &owner);
    }
  }
  for (int64_t t = 0; t < h->buffer_assignment.nheap_simulator_traces; t++) {
    nsl_hlo_heap_stats st;
    (void)nsl__hlo_heap_peak(h, t, &st);
  }
  nsl__hlo_names_free(ix);
  nsl_hlo_free(h);
  return 0;
}
