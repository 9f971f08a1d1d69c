/* lhlo.c -- XLA metadata of nsys-jax reports for Lua.
 *
 * Trace methods (report is the 0-based index of the `report` column):
 *   trace:members(report, prefix) -> array of member names the report sees
 *       (e.g. "dump/", "sources/"); {} for a report that is not an nsys-jax one
 *   trace:member(report, name) -> the member's bytes, or nil, message
 *   trace:hlo(report, name) -> an HLO module (decoded HloProto; name is a
 *       dump/ ... .hlo.pb.xz member), or nil, message
 *   nsl.hlo_read(path) -> an HLO module from a file (xz or raw)
 *   nsl.hlo_decode(bytes [, label]) -> an HLO module from a string (xz or raw
 *       HloProto, e.g. trace.meta:read of a bundle's meta/xla_dump/ member);
 *       label names it in messages; nil, message when it does not decode
 * HLO module methods:
 *   h:info() -> {name, id, fingerprint, ncomputations, ninstructions, nheap_traces}
 *   h:instruction(name) -> {name, opcode, op_name, op_type, source_file,
 *       source_line, frame, computation, called = {ids}} or nil
 *   h:called(name) -> the instructions of the computations name calls (one
 *       level), as an array of {opcode, op_name, frame}
 *   h:comm(name) -> {collective, opcode, size, bytes, bw_correction,
 *       bus_correction} when the instruction is communication, false when not,
 *       nil when there is no such instruction
 *   h:stack(frame) -> array of "file:line[:column][function]", outermost first
 *   h:heap() -> array of {n_events, peak_bytes, n_alloc, n_free, n_share}, one
 *       per heap-simulator trace (peak: nsl_hlo_heap_peak, XLA's semantics)
 *   h:instructions() -> nsl table: computation, name, opcode, op_name,
 *       source_file, source_line, frame (one row per instruction)
 *   h:structure() -> a string that is equal for modules of the same shape:
 *       module name, then every instruction's name, opcode, element type and
 *       dimensions (tuple shapes: element types). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lnsl.h"
#include "source/hlo.h"
#include "source/hlo_query.h"

#define NSL_HLO_MT "nsl.hlo"

typedef struct lhlo {
  nsl_hlo *h;
  nsl_hlo_names *names;
} lhlo;

static lhlo *checkhlo(lua_State *L, int idx) {
  lhlo *b = luaL_checkudata(L, idx, NSL_HLO_MT);
  if (!b->h) luaL_argerror(L, idx, "HLO module is released");
  return b;
}

static int hlo_gc(lua_State *L) {
  lhlo *b = luaL_checkudata(L, 1, NSL_HLO_MT);
  nsl_hlo_names_free(b->names);
  nsl_hlo_free(b->h);
  b->h = NULL;
  b->names = NULL;
  return 0;
}

static lhlo *newhlo(lua_State *L) {
  lhlo *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->h = NULL;
  b->names = NULL;
  luaL_setmetatable(L, NSL_HLO_MT);
  return b;
}

static int finish_hlo(lua_State *L, lhlo *b) {
  b->names = nsl_hlo_names_build(b->h);
  if (!b->names) return luaL_error(L, "out of memory");
  return 1;
}

/* The trace and 0-based report of the (trace, report) arguments; whether the
 * report's source has archive members in *members. */
static nsl_trace *report_arg(lua_State *L, int tr_idx, int rep_idx, int *rep, int *members) {
  nsl_trace *tr = nsl__checktrace(L, tr_idx);
  lua_Integer r = luaL_checkinteger(L, rep_idx);
  luaL_argcheck(L, r >= 0 && r < nsl_trace_nreports(tr), rep_idx, "no such report");
  *rep = (int)r;
  *members = nsl_trace_has_members(tr, (int)r);
  return tr;
}

static void add_name(void *ctx, const char *name) {
  lua_State *L = ctx;
  lua_pushstring(L, name);
  lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
}

static int tr_members(lua_State *L) {
  int rep, members;
  nsl_trace *tr = report_arg(L, 1, 2, &rep, &members);
  const char *prefix = luaL_optstring(L, 3, "");
  lua_newtable(L);
  nsl_trace_members(tr, rep, prefix, add_name, L);
  return 1;
}

static int tr_member(lua_State *L) {
  int rep, members;
  nsl_trace *tr = report_arg(L, 1, 2, &rep, &members);
  const char *name = luaL_checkstring(L, 3);
  if (!members) {
    lua_pushnil(L);
    lua_pushstring(L, "not an nsys-jax report");
    return 2;
  }
  void *data = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl_trace_member_read(tr, rep, name, &data, &len, &err) != NSL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_pushlstring(L, data, len);
  free(data);
  return 1;
}

/* Decodes data (xz when it starts with the xz magic, else raw protobuf) into b. */
static nsl_status decode_bytes(lhlo *b, const void *data, size_t len, const char *label, nsl_error *err) {
  return len >= 6 && memcmp(data, "\xfd" "7zXZ", 5) == 0 ? nsl_hlo_decode_xz(data, len, label, &b->h, err)
                                                        : nsl_hlo_decode(data, len, label, &b->h, err);
}

static int tr_hlo(lua_State *L) {
  int rep, members;
  nsl_trace *tr = report_arg(L, 1, 2, &rep, &members);
  const char *name = luaL_checkstring(L, 3);
  if (!members) {
    lua_pushnil(L);
    lua_pushstring(L, "not an nsys-jax report");
    return 2;
  }
  lhlo *b = newhlo(L);
  void *data = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl_trace_member_read(tr, rep, name, &data, &len, &err) != NSL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  nsl_status rc = decode_bytes(b, data, len, name, &err);
  free(data);
  if (rc != NSL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  return finish_hlo(L, b);
}

static int l_hlo_decode(lua_State *L) {
  size_t len = 0;
  const char *data = luaL_checklstring(L, 1, &len);
  const char *label = luaL_optstring(L, 2, "HLO module");
  lhlo *b = newhlo(L);
  nsl_error err = {0};
  if (decode_bytes(b, data, len, label, &err) != NSL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  return finish_hlo(L, b);
}

static int l_hlo_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lhlo *b = newhlo(L);
  nsl_error err = {0};
  if (nsl_hlo_read_file(path, &b->h, &err) != NSL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  return finish_hlo(L, b);
}

static void setstr(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v ? v : "");
  lua_setfield(L, -2, k);
}
static void setint(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static int hlo_info(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  const nsl_hlo_module *m = &b->h->module;
  int64_t ni = 0;
  for (int64_t c = 0; c < m->ncomputations; c++) ni += m->computations[c].ninstructions;
  lua_createtable(L, 0, 6);
  setstr(L, "name", m->name);
  setint(L, "id", m->id);
  setstr(L, "fingerprint", nsl_hlo_frontend_attr(&m->frontend_attributes, "fingerprint_before_lhs"));
  setint(L, "ncomputations", m->ncomputations);
  setint(L, "ninstructions", ni);
  setint(L, "nheap_traces", b->h->buffer_assignment.nheap_simulator_traces);
  return 1;
}

static int hlo_instruction(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  const nsl_hlo_computation *comp = NULL;
  const nsl_hlo_instruction *in = nsl_hlo_names_find(b->names, luaL_checkstring(L, 2), &comp);
  if (!in) return 0;
  lua_createtable(L, 0, 9);
  setstr(L, "name", in->name);
  setstr(L, "opcode", in->opcode);
  setstr(L, "op_name", in->metadata.op_name);
  setstr(L, "op_type", in->metadata.op_type);
  setstr(L, "source_file", in->metadata.source_file);
  setint(L, "source_line", in->metadata.source_line);
  setint(L, "frame", in->metadata.stack_frame_id);
  setstr(L, "computation", comp->name);
  lua_createtable(L, (int)in->ncalled_computation_ids, 0);
  for (int64_t k = 0; k < in->ncalled_computation_ids; k++) {
    lua_pushinteger(L, in->called_computation_ids[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, "called");
  return 1;
}

static int hlo_called(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  const nsl_hlo_instruction *in = nsl_hlo_names_find(b->names, luaL_checkstring(L, 2), NULL);
  if (!in) return 0;
  lua_newtable(L);
  lua_Integer n = 0;
  for (int64_t k = 0; k < in->ncalled_computation_ids; k++) {
    const nsl_hlo_computation *c = nsl_hlo_find_computation(b->h, in->called_computation_ids[k]);
    for (int64_t i = 0; c && i < c->ninstructions; i++) {
      const nsl_hlo_instruction *ci = &c->instructions[i];
      lua_createtable(L, 0, 3);
      setstr(L, "opcode", ci->opcode);
      setstr(L, "op_name", ci->metadata.op_name);
      setint(L, "frame", ci->metadata.stack_frame_id);
      lua_rawseti(L, -2, ++n);
    }
  }
  return 1;
}

static int hlo_comm(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  const nsl_hlo_instruction *in = nsl_hlo_names_find(b->names, luaL_checkstring(L, 2), NULL);
  if (!in) return 0;
  nsl_hlo_comm c;
  nsl_hlo_comm_info(b->h, in, &c);
  if (!c.is_comm) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_createtable(L, 0, 6);
  setstr(L, "collective", c.collective);
  setstr(L, "opcode", c.opcode);
  setint(L, "size", c.size);
  if (c.bytes >= 0) setint(L, "bytes", c.bytes);
  lua_pushnumber(L, c.bw_correction);
  lua_setfield(L, -2, "bw_correction");
  lua_pushnumber(L, c.bus_correction);
  lua_setfield(L, -2, "bus_correction");
  return 1;
}

static int hlo_stack(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  lua_Integer id = luaL_checkinteger(L, 2);
  const nsl_hlo_stack_frame_index *s = &b->h->module.stack_frame_index;
  int32_t ids[4096];
  int n = 0;
  while (id > 0 && n < (int)(sizeof ids / sizeof *ids)) {
    nsl_hlo_frame f;
    if (nsl_hlo_stack_frame(s, (int32_t)id, &f) != 0) return luaL_error(L, "stack frame %d is out of range", (int)id);
    ids[n++] = (int32_t)id;
    id = f.parent;
  }
  lua_createtable(L, n, 0);
  for (int k = n - 1, out = 1; k >= 0; k--, out++) {
    nsl_hlo_frame f;
    nsl_hlo_stack_frame(s, ids[k], &f);
    if (f.column) lua_pushfstring(L, "%s:%d:%d[%s]", f.file, (int)f.line, (int)f.column, f.function);
    else lua_pushfstring(L, "%s:%d[%s]", f.file, (int)f.line, f.function);
    lua_rawseti(L, -2, out);
  }
  return 1;
}

static int hlo_heap(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  const nsl_hlo_buffer_assignment *ba = &b->h->buffer_assignment;
  lua_createtable(L, (int)ba->nheap_simulator_traces, 0);
  for (int64_t t = 0; t < ba->nheap_simulator_traces; t++) {
    nsl_hlo_heap_stats st;
    int64_t peak = nsl_hlo_heap_peak(b->h, t, &st);
    if (peak < 0) return luaL_error(L, "out of memory");
    lua_createtable(L, 0, 5);
    setint(L, "n_events", ba->heap_simulator_traces[t].nevents);
    setint(L, "peak_bytes", peak);
    setint(L, "n_alloc", st.alloc);
    setint(L, "n_free", st.free);
    setint(L, "n_share", st.share);
    lua_rawseti(L, -2, t + 1);
  }
  return 1;
}

static int hlo_instructions(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  const nsl_hlo_module *m = &b->h->module;
  int64_t n = 0;
  for (int64_t c = 0; c < m->ncomputations; c++) n += m->computations[c].ninstructions;
  nsl_dict *d = nsl__state_dict(L);
  nsl_column *comp = nsl_column_new(NSL_STR, n, d), *name = nsl_column_new(NSL_STR, n, d),
             *opcode = nsl_column_new(NSL_STR, n, d), *op_name = nsl_column_new(NSL_STR, n, d),
             *file = nsl_column_new(NSL_STR, n, d), *line = nsl_column_new(NSL_I64, n, NULL),
             *frame = nsl_column_new(NSL_I64, n, NULL);
  nsl_column *cols[] = {comp, name, opcode, op_name, file, line, frame};
  const char *names[] = {"computation", "name", "opcode", "op_name", "source_file", "source_line", "frame"};
  int ok = 1;
  for (int k = 0; k < 7; k++) ok &= cols[k] != NULL;
  int64_t r = 0;
  for (int64_t c = 0; ok && c < m->ncomputations; c++)
    for (int64_t i = 0; i < m->computations[c].ninstructions; i++, r++) {
      const nsl_hlo_instruction *in = &m->computations[c].instructions[i];
      const char *s[] = {m->computations[c].name, in->name, in->opcode, in->metadata.op_name, in->metadata.source_file};
      for (int k = 0; k < 5; k++) nsl_i32(cols[k])[r] = s[k][0] ? nsl_dict_intern(d, s[k], strlen(s[k])) : -1;
      nsl_i64(line)[r] = in->metadata.source_line;
      nsl_i64(frame)[r] = in->metadata.stack_frame_id;
    }
  nsl_table *t = ok ? nsl_table_new() : NULL;
  nsl_error err = {0};
  for (int k = 0; k < 7; k++) {
    if (t && nsl_table_add(t, names[k], cols[k], &err) < 0) ok = 0;
    nsl_column_release(cols[k]);
  }
  if (!t || !ok) {
    nsl_table_release(t);
    return luaL_error(L, "out of memory");
  }
  nsl__pushtable(L, t, 0);
  return 1;
}

static int hlo_structure(lua_State *L) {
  lhlo *b = checkhlo(L, 1);
  const nsl_hlo_module *m = &b->h->module;
  luaL_Buffer buf;
  luaL_buffinit(L, &buf);
  luaL_addstring(&buf, m->name);
  for (int64_t c = 0; c < m->ncomputations; c++)
    for (int64_t i = 0; i < m->computations[c].ninstructions; i++) {
      luaL_addchar(&buf, '\n');
      luaL_addstring(&buf, m->computations[c].instructions[i].name);
      const nsl_hlo_instruction *in = &m->computations[c].instructions[i];
      luaL_addchar(&buf, ' ');
      luaL_addstring(&buf, in->opcode);
      luaL_addchar(&buf, ' ');
      luaL_addstring(&buf, nsl_hlo_element_name(in->shape.element_type));
      for (int64_t d = 0; d < in->shape.ndimensions; d++) {
        char num[32];
        snprintf(num, sizeof num, "%c%lld", d ? ',' : '[', (long long)in->shape.dimensions[d]);
        luaL_addstring(&buf, num);
      }
      for (int64_t t = 0; t < in->shape.ntuple_shapes; t++) {
        char num[48];
        snprintf(num, sizeof num, " t%lld:%s", (long long)t, nsl_hlo_element_name(in->shape.tuple_shapes[t].element_type));
        luaL_addstring(&buf, num);
      }
    }
  luaL_pushresult(&buf);
  return 1;
}

static const luaL_Reg hlo_methods[] = {{"info", hlo_info},       {"instruction", hlo_instruction},
                                       {"called", hlo_called},   {"comm", hlo_comm},
                                       {"stack", hlo_stack},     {"heap", hlo_heap},
                                       {"instructions", hlo_instructions}, {"structure", hlo_structure},
                                       {"release", hlo_gc},      {NULL, NULL}};
static const luaL_Reg hlo_meta[] = {{"__gc", hlo_gc}, {"__close", hlo_gc}, {NULL, NULL}};
static const luaL_Reg tr_methods[] = {
    {"members", tr_members}, {"member", tr_member}, {"hlo", tr_hlo}, {NULL, NULL}};
static const luaL_Reg funcs[] = {{"hlo_read", l_hlo_read}, {"hlo_decode", l_hlo_decode}, {NULL, NULL}};

int nsl__open_hlo(lua_State *L) {
  luaL_newmetatable(L, NSL_HLO_MT);
  luaL_setfuncs(L, hlo_meta, 0);
  luaL_newlib(L, hlo_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_getmetatable(L, NSL_TRACE_MT);   /* trace methods join the trace's own */
  lua_getfield(L, -1, "methods");
  luaL_setfuncs(L, tr_methods, 0);
  lua_pop(L, 2);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
