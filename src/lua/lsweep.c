/* lsweep.c -- the NVTX sweeps for Lua: nsl.nvtx_project{...} (ranges
 * projected onto the GPU) and nsl.tree_paths(parent, label [, mask]). */
#include <string.h>

#include "lua/lnsl.h"
#include "core/nsl_internal.h"

#define MAX_KEYS 8

/* The column in field `name` of the table at idx (required unless opt). */
static const nsl_column *field_column(lua_State *L, int idx, const char *name, int opt) {
  lua_getfield(L, idx, name);
  nsl_column *c = nsl__tocolumn(L, -1);
  if (!c && !(opt && lua_isnil(L, -1))) luaL_error(L, "nvtx_project: field '%s' must be a column", name);
  lua_pop(L, 1);   /* the argument table keeps the column alive */
  return c;
}

/* The array of key columns in field `name`; returns their number. */
static int field_keys(lua_State *L, int idx, const char *name, const nsl_column **keys) {
  if (lua_getfield(L, idx, name) != LUA_TTABLE) luaL_error(L, "nvtx_project: field '%s' must be an array of columns", name);
  int n = (int)luaL_len(L, -1);
  if (n < 1 || n > MAX_KEYS) luaL_error(L, "nvtx_project: '%s' needs 1 to %d key columns", name, MAX_KEYS);
  for (int k = 0; k < n; k++) {
    lua_geti(L, -1, k + 1);
    keys[k] = nsl__tocolumn(L, -1);
    if (!keys[k]) luaL_error(L, "nvtx_project: %s[%d] is not a column", name, k + 1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return n;
}

static void set_column(lua_State *L, const char *name, nsl_column **c) {
  nsl__pushcolumn(L, *c);   /* the Lua box owns it from here */
  *c = NULL;
  lua_setfield(L, -2, name);
}

/* nsl.nvtx_project{range_keys = {report, pid, tid}, range_start =, range_stop =,
 *   range_mask = (optional), api_keys = {...}, api_start =, api_stop =,
 *   op_api =, op_start =, op_stop =}
 * -> {parent, depth, proj_start, proj_dur, ops, launches, gpu_time,
 *     children, api_range, op_range}: columns, row indices 0-based (-1: none). */
static int l_nvtx_project(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const nsl_column *rkeys[MAX_KEYS], *akeys[MAX_KEYS];
  nsl_nvtx_input in;
  memset(&in, 0, sizeof in);
  int nr = field_keys(L, 1, "range_keys", rkeys), na = field_keys(L, 1, "api_keys", akeys);
  if (nr != na) return luaL_error(L, "nvtx_project: %d range keys but %d API keys", nr, na);
  in.nkeys = nr;
  in.range_keys = rkeys;
  in.api_keys = akeys;
  in.range_start = field_column(L, 1, "range_start", 0);
  in.range_stop = field_column(L, 1, "range_stop", 0);
  in.range_mask = field_column(L, 1, "range_mask", 1);
  in.api_start = field_column(L, 1, "api_start", 0);
  in.api_stop = field_column(L, 1, "api_stop", 0);
  in.op_api = field_column(L, 1, "op_api", 0);
  in.op_start = field_column(L, 1, "op_start", 0);
  in.op_stop = field_column(L, 1, "op_stop", 0);
  lua_createtable(L, 0, 10);   /* made before the work, so pushing cannot fail after it */
  nsl_nvtx_projection p;
  nsl_error err = {0};
  if (nsl_nvtx_project(&in, &p, &err) != NSL_OK) return nsl__lua_error(L, &err);
  set_column(L, "parent", &p.parent);
  set_column(L, "depth", &p.depth);
  set_column(L, "proj_start", &p.proj_start);
  set_column(L, "proj_dur", &p.proj_dur);
  set_column(L, "ops", &p.ops);
  set_column(L, "launches", &p.launches);
  set_column(L, "gpu_time", &p.gpu_time);
  set_column(L, "children", &p.children);
  set_column(L, "api_range", &p.api_range);
  set_column(L, "op_range", &p.op_range);
  return 1;
}

/* nsl.tree_paths(parent, label [, mask]) -> {node = per row, node_parent =,
 * node_depth =, node_row = per node (0-based), n = number of nodes}. */
static int l_tree_paths(lua_State *L) {
  nsl_column *parent = nsl__checkcolumn(L, 1), *label = nsl__checkcolumn(L, 2);
  nsl_column *mask = lua_isnoneornil(L, 3) ? NULL : nsl__checkcolumn(L, 3);
  lua_createtable(L, 0, 5);
  nsl_tree t;
  nsl_error err = {0};
  if (nsl_tree_paths(parent, label, mask, &t, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_pushinteger(L, t.nnodes);
  lua_setfield(L, -2, "n");
  set_column(L, "node", &t.node_of);
  set_column(L, "node_parent", &t.node_parent);
  set_column(L, "node_depth", &t.node_depth);
  set_column(L, "node_row", &t.node_row);
  return 1;
}

static const luaL_Reg funcs[] = {{"nvtx_project", l_nvtx_project}, {"tree_paths", l_tree_paths}, {NULL, NULL}};

/* Adds nsl.nvtx_project and nsl.tree_paths to the module table on top of the stack. */
int nsl__open_sweep(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
