/* lhlo.c -- XLA metadata of nsys-jax reports for Lua.
 *
 * Trace methods (report is the 0-based index of the `report` column):
 *   trace:members(report, prefix) -> array of the names of the archive
 *       members the report sees (an nsys-jax report: "dump/...",
 *       "sources/..."; a report of an nsl bundle: the bundle's "meta/...",
 *       "sources/...", ...); {} for a report read from no archive
 *   trace:member(report, name) -> the member's bytes, or nil, message
 *   trace:hlo(report, name) -> an HLO module (decoded HloProto; name is a
 *       member such as dump/ ... .hlo.pb.xz, xz or raw), or nil, message
 *   nsl.hlo_read(path) -> an HLO module from a file (xz or raw)
 *   nsl.hlo_decode(bytes [, label]) -> an HLO module from a string (xz or raw
 *       HloProto, e.g. trace:member of a bundle's meta/xla_dump/ member);
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
 *       per heap-simulator trace (peak: nsl_hlo_heap, XLA's semantics)
 *   h:instructions() -> nsl table: computation, name, opcode, op_name,
 *       source_file, source_line, frame (one row per instruction)
 *   h:structure() -> a string that is equal for modules of the same shape:
 *       module name, then every instruction's name, opcode, element type and
 *       dimensions (tuple shapes: element types). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua/lnsl.h"
#include "nsl/hlo.h"

#define NSL_HLO_MT "nsl.hlo"

typedef struct lhlo {
  nsl_hlo *h;
} lhlo;

static nsl_hlo *checkhlo(lua_State *L, int idx) {
  lhlo *b = luaL_checkudata(L, idx, NSL_HLO_MT);
  if (!b->h) luaL_argerror(L, idx, "HLO module is released");
  return b->h;
}

static int hlo_gc(lua_State *L) {
  lhlo *b = luaL_checkudata(L, 1, NSL_HLO_MT);
  nsl_hlo_free(b->h);
  b->h = NULL;
  return 0;
}

static lhlo *newhlo(lua_State *L) {
  lhlo *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->h = NULL;
  luaL_setmetatable(L, NSL_HLO_MT);
  return b;
}

/* Pushes nil and err's message; returns 2. */
/* The trace and 0-based report of the (trace, report) arguments. */
static nsl_trace *report_arg(lua_State *L, int tr_idx, int rep_idx, int *rep) {
  nsl_trace *tr = nsl__checktrace(L, tr_idx);
  lua_Integer r = luaL_checkinteger(L, rep_idx);
  luaL_argcheck(L, r >= 0 && r < nsl_trace_nreports(tr), rep_idx, "no such report");
  *rep = (int)r;
  return tr;
}

static void add_name(void *ctx, const char *name) {
  lua_State *L = ctx;
  lua_pushstring(L, name);
  lua_rawseti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
}

static int tr_members(lua_State *L) {
  int rep;
  nsl_trace *tr = report_arg(L, 1, 2, &rep);
  const char *prefix = luaL_optstring(L, 3, "");
  lua_newtable(L);
  nsl_trace_members(tr, rep, prefix, add_name, L);
  return 1;
}

/* Reads member `name` of report rep; pushes nil, message and returns 0 when
 * it cannot. */
static int read_member(lua_State *L, nsl_trace *tr, int rep, const char *name, void **data, size_t *len) {
  nsl_error err = {0};
  if (nsl_trace_member_read(tr, rep, name, data, len, &err) != NSL_OK) {
    nsl__push_fail(L, &err);
    return 0;
  }
  return 1;
}

static int tr_member(lua_State *L) {
  int rep;
  nsl_trace *tr = report_arg(L, 1, 2, &rep);
  const char *name = luaL_checkstring(L, 3);
  void *data = NULL;
  size_t len = 0;
  if (!read_member(L, tr, rep, name, &data, &len)) return 2;
  lua_pushlstring(L, data, len);
  free(data);
  return 1;
}

static int tr_hlo(lua_State *L) {
  int rep;
  nsl_trace *tr = report_arg(L, 1, 2, &rep);
  const char *name = luaL_checkstring(L, 3);
  lhlo *b = newhlo(L);
  void *data = NULL;
  size_t len = 0;
  if (!read_member(L, tr, rep, name, &data, &len)) return 2;
  nsl_error err = {0};
  nsl_status rc = nsl_hlo_load(data, len, name, &b->h, &err);
  free(data);
  if (rc != NSL_OK) return nsl__push_fail(L, &err);
  return 1;
}

static int l_hlo_decode(lua_State *L) {
  size_t len = 0;
  const char *data = luaL_checklstring(L, 1, &len);
  const char *label = luaL_optstring(L, 2, "HLO module");
  lhlo *b = newhlo(L);
  nsl_error err = {0};
  if (nsl_hlo_load(data, len, label, &b->h, &err) != NSL_OK) return nsl__push_fail(L, &err);
  return 1;
}

static int l_hlo_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lhlo *b = newhlo(L);
  nsl_error err = {0};
  if (nsl_hlo_read_file(path, &b->h, &err) != NSL_OK) return nsl__push_fail(L, &err);
  return 1;
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
  nsl_hlo_summary s;
  nsl_hlo_summarize(checkhlo(L, 1), &s);
  lua_createtable(L, 0, 6);
  setstr(L, "name", s.name);
  setint(L, "id", s.id);
  setstr(L, "fingerprint", s.fingerprint);
  setint(L, "ncomputations", s.ncomputations);
  setint(L, "ninstructions", s.ninstructions);
  setint(L, "nheap_traces", s.nheap_traces);
  return 1;
}

/* Looks up instruction name (argument 2) of h: 1 and *c, *i when found, 0
 * when the module has none; raises out of memory. */
static int find_arg(lua_State *L, nsl_hlo *h, int64_t *c, int64_t *i) {
  nsl_error err = {0};
  nsl_status rc = nsl_hlo_find(h, luaL_checkstring(L, 2), c, i, &err);
  if (rc == NSL_ERR_NOTFOUND) return 0;
  if (rc != NSL_OK) nsl__lua_error(L, &err);
  return 1;
}

/* The instruction (c, i) of h, which exists (found or walked). */
static nsl_hlo_inst get_inst(lua_State *L, const nsl_hlo *h, int64_t c, int64_t i) {
  nsl_hlo_inst in;
  nsl_error err = {0};
  if (nsl_hlo_get(h, c, i, &in, &err) != NSL_OK) nsl__lua_error(L, &err);
  return in;
}

static int hlo_instruction(lua_State *L) {
  nsl_hlo *h = checkhlo(L, 1);
  int64_t c, i;
  if (!find_arg(L, h, &c, &i)) return 0;
  nsl_hlo_inst in = get_inst(L, h, c, i);
  lua_createtable(L, 0, 9);
  setstr(L, "name", in.name);
  setstr(L, "opcode", in.opcode);
  setstr(L, "op_name", in.op_name);
  setstr(L, "op_type", in.op_type);
  setstr(L, "source_file", in.source_file);
  setint(L, "source_line", in.source_line);
  setint(L, "frame", in.frame);
  setstr(L, "computation", in.computation);
  lua_createtable(L, (int)in.ncalled, 0);
  for (int64_t k = 0; k < in.ncalled; k++) {
    lua_pushinteger(L, in.called[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, "called");
  return 1;
}

static int hlo_called(lua_State *L) {
  nsl_hlo *h = checkhlo(L, 1);
  int64_t c, i;
  if (!find_arg(L, h, &c, &i)) return 0;
  nsl_hlo_inst in = get_inst(L, h, c, i);
  lua_newtable(L);
  lua_Integer n = 0;
  for (int64_t k = 0; k < in.ncalled; k++) {
    int64_t cc = nsl_hlo_computation_index(h, in.called[k]);
    for (int64_t j = 0; cc >= 0 && j < nsl_hlo_computation_size(h, cc); j++) {
      nsl_hlo_inst ci = get_inst(L, h, cc, j);
      lua_createtable(L, 0, 3);
      setstr(L, "opcode", ci.opcode);
      setstr(L, "op_name", ci.op_name);
      setint(L, "frame", ci.frame);
      lua_rawseti(L, -2, ++n);
    }
  }
  return 1;
}

static int hlo_comm(lua_State *L) {
  nsl_hlo *h = checkhlo(L, 1);
  int64_t ci, i;
  if (!find_arg(L, h, &ci, &i)) return 0;
  nsl_hlo_comm c;
  nsl_error err = {0};
  if (nsl_hlo_comm_of(h, ci, i, &c, &err) != NSL_OK) return nsl__lua_error(L, &err);
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
  const nsl_hlo *h = checkhlo(L, 1);
  lua_Integer id = luaL_checkinteger(L, 2);
  int32_t ids[4096];
  int n = 0;
  while (id > 0 && n < (int)(sizeof ids / sizeof *ids)) {
    nsl_hlo_frame f;
    nsl_error err = {0};
    if (id > INT32_MAX || nsl_hlo_frame_of(h, (int32_t)id, &f, &err) != NSL_OK)
      return luaL_error(L, "stack frame %d is out of range", (int)id);
    ids[n++] = (int32_t)id;
    id = f.parent;
  }
  lua_createtable(L, n, 0);
  for (int k = n - 1, out = 1; k >= 0; k--, out++) {
    nsl_hlo_frame f;
    nsl_hlo_frame_of(h, ids[k], &f, NULL);
    if (f.column) lua_pushfstring(L, "%s:%d:%d[%s]", f.file, (int)f.line, (int)f.column, f.function);
    else lua_pushfstring(L, "%s:%d[%s]", f.file, (int)f.line, f.function);
    lua_rawseti(L, -2, out);
  }
  return 1;
}

static int hlo_heap(lua_State *L) {
  const nsl_hlo *h = checkhlo(L, 1);
  int64_t n = nsl_hlo_nheap_traces(h);
  lua_createtable(L, (int)n, 0);
  for (int64_t t = 0; t < n; t++) {
    nsl_hlo_heap_stats st;
    nsl_error err = {0};
    if (nsl_hlo_heap(h, t, &st, &err) != NSL_OK) return nsl__lua_error(L, &err);
    lua_createtable(L, 0, 5);
    setint(L, "n_events", st.events);
    setint(L, "peak_bytes", st.peak);
    setint(L, "n_alloc", st.alloc);
    setint(L, "n_free", st.free);
    setint(L, "n_share", st.share);
    lua_rawseti(L, -2, t + 1);
  }
  return 1;
}

static int hlo_instructions(lua_State *L) {
  const nsl_hlo *h = checkhlo(L, 1);
  nsl_hlo_summary s;
  nsl_hlo_summarize(h, &s);
  int64_t n = s.ninstructions;
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
  nsl_error ierr = {0};   /* a string that could not be interned */
  for (int64_t c = 0; ok && c < s.ncomputations; c++)
    for (int64_t i = 0; ok && i < nsl_hlo_computation_size(h, c); i++, r++) {
      nsl_hlo_inst in;
      nsl_hlo_get(h, c, i, &in, NULL);
      const char *str[] = {in.computation, in.name, in.opcode, in.op_name, in.source_file};
      for (int k = 0; ok && k < 5; k++) {
        nsl_i32(cols[k])[r] = -1;
        if (str[k][0] && nsl_dict_intern(d, str[k], strlen(str[k]), &nsl_i32(cols[k])[r], &ierr) != NSL_OK) ok = 0;
      }
      nsl_i64(line)[r] = in.source_line;
      nsl_i64(frame)[r] = in.frame;
    }
  nsl_table *t = ok ? nsl_table_new() : NULL;
  nsl_error err = {0};
  for (int k = 0; k < 7; k++) {
    if (t && nsl_table_add(t, names[k], cols[k], &err) != NSL_OK) ok = 0;
    nsl_column_release(cols[k]);
  }
  if (!t || !ok) {
    nsl_table_release(t);
    if (ierr.code != NSL_OK) return nsl__lua_error(L, &ierr);
    return luaL_error(L, "out of memory");
  }
  nsl__pushtable(L, t, 0);
  return 1;
}

static int hlo_structure(lua_State *L) {
  char *text = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl_hlo_structure(checkhlo(L, 1), &text, &len, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_pushlstring(L, text, len);
  free(text);
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
  nsl__register_type(L, NSL_HLO_MT, hlo_meta, hlo_methods);
  luaL_getmetatable(L, NSL_TRACE_MT);   /* trace methods join the trace's own */
  lua_getfield(L, -1, "methods");
  luaL_setfuncs(L, tr_methods, 0);
  lua_pop(L, 2);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
