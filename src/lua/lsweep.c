/* lsweep.c -- the NVTX sweeps for Lua: nsl.nvtx_project{...} (ranges
 * projected onto the GPU) and nsl.tree_paths(parent, label [, mask]). */
#include <string.h>

#include "lua/lnsl.h"
#include "core/nsl_internal.h"

#define MAX_KEYS 8

/* The column in field `name` of the table at idx (required unless opt). */
static nsl_column *field_column(lua_State *L, int idx, const char *name, int opt) {
  lua_getfield(L, idx, name);
  nsl_column *c = nsl__tocolumn(L, -1);
  if (!c && !(opt && lua_isnil(L, -1))) luaL_error(L, "nvtx_project: field '%s' must be a column", name);
  lua_pop(L, 1);   /* the argument table keeps the column alive until prepare retains it */
  return c;
}

/* The array of key columns in field `name`; returns their number. */
static int field_keys(lua_State *L, int idx, const char *name, nsl_column **keys) {
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
  if (!*c) return;          /* not made (parents only): the field stays nil */
  nsl__pushcolumn(L, *c);   /* the Lua box owns it from here */
  *c = NULL;
  lua_setfield(L, -2, name);
}

/* nsl.nvtx_project{range_keys = {report, pid, tid}, range_start =, range_stop =,
 *   range_mask = (optional), api_keys = {...}, api_start =, api_stop =,
 *   op_api =, op_start =, op_stop =, parents_only = (optional boolean)}
 * -> {parent, depth, proj_start, proj_dur, ops, launches, gpu_time,
 *     children, api_range, op_range}: columns, row indices 0-based (-1: none).
 * parents_only (with no calls and no ops): parent, depth, api_range and
 * op_range alone, the per-range sums not made (nil). 
 * As work (nsl__work): also nsl.background("nvtx_project", {...}). */
enum { R_START, R_STOP, R_MASK, A_START, A_STOP, OP_API, OP_START, OP_STOP, NCOLS };
typedef struct project_work {
  nsl_column *rkeys[MAX_KEYS], *akeys[MAX_KEYS], *cols[NCOLS];   /* retained */
  int nkeys;
  int parents_only;
  nsl__nvtx_projection p;
  nsl_status rc;
  nsl_error err;
} project_work;

static void project_prepare(lua_State *L, int first, void *state) {
  project_work *w = state;
  luaL_checktype(L, first, LUA_TTABLE);
  nsl_column *rkeys[MAX_KEYS], *akeys[MAX_KEYS], *cols[NCOLS];
  int nr = field_keys(L, first, "range_keys", rkeys), na = field_keys(L, first, "api_keys", akeys);
  if (nr != na) luaL_error(L, "nvtx_project: %d range keys but %d API keys", nr, na);
  static const char *const names[NCOLS] = {"range_start", "range_stop", "range_mask", "api_start",
                                           "api_stop",    "op_api",     "op_start",   "op_stop"};
  for (int k = 0; k < NCOLS; k++) cols[k] = field_column(L, first, names[k], k == R_MASK);
  lua_getfield(L, first, "parents_only");
  int parents_only = lua_toboolean(L, -1);
  lua_pop(L, 1);
  w->nkeys = nr;   /* everything checked: retain */
  w->parents_only = parents_only;
  for (int k = 0; k < nr; k++) {
    w->rkeys[k] = nsl_column_retain(rkeys[k]);
    w->akeys[k] = nsl_column_retain(akeys[k]);
  }
  for (int k = 0; k < NCOLS; k++) w->cols[k] = nsl_column_retain(cols[k]);
}

static void project_run(void *state) {
  project_work *w = state;
  nsl__nvtx_input in;
  memset(&in, 0, sizeof in);
  in.nkeys = w->nkeys;
  in.range_keys = (const nsl_column *const *)w->rkeys;
  in.api_keys = (const nsl_column *const *)w->akeys;
  in.range_start = w->cols[R_START];
  in.range_stop = w->cols[R_STOP];
  in.range_mask = w->cols[R_MASK];
  in.api_start = w->cols[A_START];
  in.api_stop = w->cols[A_STOP];
  in.op_api = w->cols[OP_API];
  in.op_start = w->cols[OP_START];
  in.op_stop = w->cols[OP_STOP];
  in.parents_only = w->parents_only;
  w->rc = nsl__nvtx_project(&in, &w->p, &w->err);
}

static int project_push(lua_State *L, void *state) {
  project_work *w = state;
  if (w->rc != NSL_OK) return nsl__lua_error(L, &w->err);
  lua_createtable(L, 0, 10);
  set_column(L, "parent", &w->p.parent);
  set_column(L, "depth", &w->p.depth);
  set_column(L, "proj_start", &w->p.proj_start);
  set_column(L, "proj_dur", &w->p.proj_dur);
  set_column(L, "ops", &w->p.ops);
  set_column(L, "launches", &w->p.launches);
  set_column(L, "gpu_time", &w->p.gpu_time);
  set_column(L, "children", &w->p.children);
  set_column(L, "api_range", &w->p.api_range);
  set_column(L, "op_range", &w->p.op_range);
  return 1;
}

static void project_release(void *state) {
  project_work *w = state;
  for (int k = 0; k < w->nkeys; k++) {
    nsl_column_release(w->rkeys[k]);
    nsl_column_release(w->akeys[k]);
  }
  for (int k = 0; k < NCOLS; k++) nsl_column_release(w->cols[k]);
  nsl__nvtx_projection_free(&w->p);   /* what push did not hand over (zeroed when it failed) */
}

const nsl__work nsl__work_nvtx_project = {"nvtx_project", sizeof(project_work), project_prepare, project_run,
                                          project_push, project_release};

static int l_nvtx_project(lua_State *L) { return nsl__work_now(L, &nsl__work_nvtx_project, 1); }

/* nsl.tree_paths(parent, label [, mask]) -> {node = per row, node_parent =,
 * node_depth =, node_row = per node (0-based), n = number of nodes}; as
 * work (also nsl.background("tree_paths", ...): the sweep is one thread's,
 * so an analysis runs it beside other work). */
typedef struct paths_work {
  nsl_column *parent, *label, *mask;
  nsl__tree t;
  nsl_status rc;
  nsl_error err;
} paths_work;

static void paths_prepare(lua_State *L, int first, void *state) {
  paths_work *w = state;
  nsl_column *parent = nsl__checkcolumn(L, first), *label = nsl__checkcolumn(L, first + 1);
  nsl_column *mask = lua_isnoneornil(L, first + 2) ? NULL : nsl__checkcolumn(L, first + 2);
  w->parent = nsl_column_retain(parent);
  w->label = nsl_column_retain(label);
  w->mask = mask ? nsl_column_retain(mask) : NULL;
}

static void paths_run(void *state) {
  paths_work *w = state;
  w->rc = nsl__tree_paths(w->parent, w->label, w->mask, &w->t, &w->err);
}

static int paths_push(lua_State *L, void *state) {
  paths_work *w = state;
  if (w->rc != NSL_OK) return nsl__lua_error(L, &w->err);
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, w->t.nnodes);
  lua_setfield(L, -2, "n");
  set_column(L, "node", &w->t.node_of);
  set_column(L, "node_parent", &w->t.node_parent);
  set_column(L, "node_depth", &w->t.node_depth);
  set_column(L, "node_row", &w->t.node_row);
  return 1;
}

static void paths_release(void *state) {
  paths_work *w = state;
  nsl_column_release(w->parent);
  nsl_column_release(w->label);
  nsl_column_release(w->mask);
  nsl__tree_free(&w->t);   /* what push did not hand over */
}

const nsl__work nsl__work_tree_paths = {"tree_paths", sizeof(paths_work), paths_prepare, paths_run, paths_push,
                                        paths_release};

static int l_tree_paths(lua_State *L) { return nsl__work_now(L, &nsl__work_tree_paths, 1); }

/* nsl.nvtx_top{range_keys = {report, pid, tid}, range_start =, range_stop =,
 *   range_mask = (optional)} -> bool column: the ranges nsl.nvtx_project
 * would give depth 0 (a range that takes no part: false); and whether each
 * thread's ranges that take part came in the sweep's order (start, then
 * stop descending, then row). */
static int l_nvtx_top(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  nsl_column *keys[MAX_KEYS];
  nsl__nvtx_input in;
  memset(&in, 0, sizeof in);
  in.nkeys = field_keys(L, 1, "range_keys", keys);
  in.range_keys = (const nsl_column *const *)keys;
  in.range_start = field_column(L, 1, "range_start", 0);
  in.range_stop = field_column(L, 1, "range_stop", 0);
  in.range_mask = field_column(L, 1, "range_mask", 1);
  nsl_column *top = NULL;
  int in_order = 0;
  nsl_error err = {0};
  if (nsl__nvtx_top(&in, &top, &in_order, &err) != NSL_OK) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, top);
  lua_pushboolean(L, in_order);
  return 2;
}

static const luaL_Reg funcs[] = {
    {"nvtx_project", l_nvtx_project}, {"nvtx_top", l_nvtx_top}, {"tree_paths", l_tree_paths}, {NULL, NULL}};

/* Adds nsl.nvtx_project, nsl.nvtx_top and nsl.tree_paths to the module table on top of the stack. */
int nsl__open_sweep(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
