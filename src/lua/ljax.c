/* ljax.c -- the range-tree kernels of src/core/jax.c for Lua:
 *   nsl.tree_ancestor(parent_row, through, target) -> anc, inner
 *   nsl.tree_under(parent_row, mask) -> mask
 *   nsl.cumcount(group_ids) -> i64
 *   nsl.median_excess(keys, v) -> f64 (per row: v less the median of the others of its key), singles;
 *   nsl.median_excess(keys, {v1, v2, ...}) -> {f64, ...}, singles (one grouping for all)
 *   nsl.moments(gid, v, ng) -> parts, lo, hi (per group, for processes to sum; nsl_internal.h)
 *   nsl.moments_finish(parts, lo, hi) -> count, sum, mean, std, min, max, exact
 *   nsl.count_le(gid, v, target_gid, pivot) -> i64 (rows sorted by gid, v)
 *   nsl.int_mean(count, sum) -> f64 (the group-by's mean of count integers summing to sum)
 *   nsl.quantile_of(n, q, x, y) -> f64 (the group-by's quantile q of n integers from its two order statistics)
 *   nsl.lag_periods(gid, v, ng, lags [, spread]) -> count, median, q1, q3 of v's differences at each lag per
 *     group (with spread: a group's lags stop at the first whose q3 - q1 <= spread x median > 0)
 *       (each group's rows one run; row g * lags + lag - 1)
 *   nsl.overlap_sum(start, stop, group_ids|nil, is_a) -> i64
 *   nsl.jax_compile_tree{start=, stop=, parent=, tid=, num_child=, dur_child=,
 *       dur_nonchild=, is_compile=, is_backend=, is_tsl=} -> {parent=, num_child=,
 *       dur_child=, dur_nonchild=, keep=, program_row=}
 *   nsl.jax_compile_attribute{start=, stop=, parent=, tid=, dur_child=,
 *       dur_nonchild=, main_tid=} -> nonchild, child (f64, ns) */
#include <stdlib.h>
#include <string.h>

#include "lua/lnsl.h"
#include "core/nsl_internal.h"

static int l_tree_ancestor(lua_State *L) {
  nsl_column *anc = NULL, *inner = NULL;
  nsl_error err = {0};
  if (nsl__tree_ancestor(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), nsl__checkcolumn(L, 3), &anc, &inner, &err) !=
      NSL_OK)
    return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, anc);
  nsl__pushcolumn(L, inner);
  return 2;
}

static int l_tree_under(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl__tree_under(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

static int l_cumcount(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl__group_cumcount(nsl__checkcolumn(L, 1), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

static int l_median_excess(lua_State *L) {
  nsl_error err = {0};
  int64_t singles = 0;
  nsl_column *keys = nsl__checkcolumn(L, 1);
  if (!lua_istable(L, 2)) {
    nsl_column *r = nsl__median_excess(keys, nsl__checkcolumn(L, 2), &singles, &err);
    if (!r) return nsl__lua_error(L, &err);
    nsl__pushcolumn(L, r);
    lua_pushinteger(L, singles);
    return 2;
  }
  int nv = (int)luaL_len(L, 2);
  luaL_argcheck(L, nv >= 1 && nv <= 64, 2, "1 to 64 value columns");
  const nsl_column *vs[64];
  nsl_column *out[64];
  for (int c = 0; c < nv; c++) {
    lua_geti(L, 2, c + 1);
    vs[c] = nsl__checkcolumn(L, -1);   /* held by the argument table */
    lua_pop(L, 1);
  }
  if (nsl__median_excess_many(keys, vs, nv, out, &singles, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_createtable(L, nv, 0);
  for (int c = 0; c < nv; c++) {
    nsl__pushcolumn(L, out[c]);
    lua_rawseti(L, -2, c + 1);
  }
  lua_pushinteger(L, singles);
  return 2;
}

static int l_moments(lua_State *L) {
  nsl_error err = {0};
  nsl_column *parts, *lo, *hi;
  if (nsl__moments(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), luaL_checkinteger(L, 3), &parts, &lo, &hi, &err) !=
      NSL_OK)
    return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, parts);
  nsl__pushcolumn(L, lo);
  nsl__pushcolumn(L, hi);
  return 3;
}

static int l_moments_finish(lua_State *L) {
  nsl_error err = {0};
  nsl_column *out[6];
  int exact;
  if (nsl__moments_finish(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), nsl__checkcolumn(L, 3), out, &exact, &err) !=
      NSL_OK)
    return nsl__lua_error(L, &err);
  for (int k = 0; k < 6; k++) nsl__pushcolumn(L, out[k]);
  lua_pushboolean(L, exact);
  return 7;
}

static int l_count_le(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl__count_le(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), nsl__checkcolumn(L, 3),
                                nsl__checkcolumn(L, 4), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

static int l_int_mean(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl__int_mean(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

static int l_quantile_of(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl__quantile_of(nsl__checkcolumn(L, 1), luaL_checknumber(L, 2), nsl__checkcolumn(L, 3),
                                   nsl__checkcolumn(L, 4), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

static int l_lag_periods(lua_State *L) {
  nsl_error err = {0};
  nsl_column *out[4];
  lua_Integer ng = luaL_checkinteger(L, 3), lags = luaL_checkinteger(L, 4);
  if (lags < 1 || lags > 64) return luaL_argerror(L, 4, "lags 1 to 64");
  double spread = luaL_optnumber(L, 5, -1);
  if (nsl__lag_periods(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), (int64_t)ng, (int)lags, spread, out, &err) !=
      NSL_OK)
    return nsl__lua_error(L, &err);
  for (int c = 0; c < 4; c++) nsl__pushcolumn(L, out[c]);
  return 4;
}

static int l_overlap_sum(lua_State *L) {
  nsl_error err = {0};
  nsl_column *g = lua_isnoneornil(L, 3) ? NULL : nsl__checkcolumn(L, 3);
  nsl_column *r = nsl__iv_overlap_sum(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), g, nsl__checkcolumn(L, 4), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* Field `name` of the argument table as a column of `type` (converted when
 * needed), anchored on the stack; checks its length against *n. */
static nsl_column *field(lua_State *L, const char *name, nsl_type type, int64_t *n) {
  lua_getfield(L, 1, name);
  nsl_column *c = nsl__tocolumn(L, -1);
  if (!c) luaL_error(L, "jax: field '%s' must be a column", name);
  if (c->type != type) {
    nsl_column *cc = nsl_column_cast(c, type, NULL);
    if (!cc) luaL_error(L, "jax: field '%s' cannot be converted to %s", name, nsl_type_name(type));
    lua_pop(L, 1);
    nsl__pushcolumn(L, cc);
    c = cc;
  }
  if (*n < 0) *n = c->len;
  else if (c->len != *n) luaL_error(L, "jax: field '%s' has %d rows, not %d", name, (int)c->len, (int)*n);
  return c;
}

/* A new column of n elements copied from data, pushed. */
static void push_copy(lua_State *L, nsl_type type, const void *data, int64_t n) {
  nsl_column *c = nsl_column_new(type, n, NULL);
  if (!c) luaL_error(L, "out of memory");
  if (n) memcpy(c->data, data, (size_t)n * nsl_type_size(type));
  nsl__pushcolumn(L, c);
}

static int l_jax_compile_tree(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int64_t n = -1;
  nsl__jax_compile_in in;
  in.start = nsl_i64(field(L, "start", NSL_I64, &n));
  in.stop = nsl_i64(field(L, "stop", NSL_I64, &n));
  in.parent = nsl_i64(field(L, "parent", NSL_I64, &n));
  in.tid = nsl_i32(field(L, "tid", NSL_I32, &n));
  in.num_child = nsl_i32(field(L, "num_child", NSL_I32, &n));
  in.dur_child = nsl_i64(field(L, "dur_child", NSL_I64, &n));
  in.dur_nonchild = nsl_i64(field(L, "dur_nonchild", NSL_I64, &n));
  in.is_compile = nsl_bool(field(L, "is_compile", NSL_BOOL, &n));
  in.is_backend = nsl_bool(field(L, "is_backend", NSL_BOOL, &n));
  in.is_tsl = nsl_bool(field(L, "is_tsl", NSL_BOOL, &n));
  in.n = n < 0 ? 0 : n;
  for (int64_t i = 0; i < in.n; i++)
    if (in.start[i] == NSL_NULL_I64 || in.stop[i] == NSL_NULL_I64) return luaL_error(L, "jax: range without start/stop");
  nsl__jax_compile_out out;
  nsl_error err = {0};
  if (nsl__jax_compile_tree(&in, &out, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_createtable(L, 0, 6);
  int t = lua_gettop(L);
  /* an error while pushing would leak out: push_copy raises only on out of memory */
  push_copy(L, NSL_I64, out.parent, in.n);
  lua_setfield(L, t, "parent");
  push_copy(L, NSL_I32, out.num_child, in.n);
  lua_setfield(L, t, "num_child");
  push_copy(L, NSL_I64, out.dur_child, in.n);
  lua_setfield(L, t, "dur_child");
  push_copy(L, NSL_I64, out.dur_nonchild, in.n);
  lua_setfield(L, t, "dur_nonchild");
  push_copy(L, NSL_BOOL, out.keep, in.n);
  lua_setfield(L, t, "keep");
  push_copy(L, NSL_I64, out.program_row, in.n);
  lua_setfield(L, t, "program_row");
  nsl__jax_compile_out_free(&out);
  return 1;
}

static int l_jax_compile_attribute(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int64_t n = -1;
  nsl__jax_attr_in in;
  in.start = nsl_i64(field(L, "start", NSL_I64, &n));
  in.stop = nsl_i64(field(L, "stop", NSL_I64, &n));
  in.parent = nsl_i64(field(L, "parent", NSL_I64, &n));
  in.tid = nsl_i32(field(L, "tid", NSL_I32, &n));
  in.dur_child = nsl_i64(field(L, "dur_child", NSL_I64, &n));
  in.dur_nonchild = nsl_i64(field(L, "dur_nonchild", NSL_I64, &n));
  in.collapsed = NULL;
  lua_getfield(L, 1, "collapsed");
  if (!lua_isnil(L, -1)) {
    lua_pop(L, 1);
    in.collapsed = nsl_bool(field(L, "collapsed", NSL_BOOL, &n));
  }
  lua_getfield(L, 1, "main_tid");
  in.main_tid = (int32_t)luaL_checkinteger(L, -1);
  in.n = n < 0 ? 0 : n;
  nsl_column *nc = nsl_column_new(NSL_F64, in.n, NULL), *ch = nsl_column_new(NSL_F64, in.n, NULL);
  if (!nc || !ch) {
    nsl_column_release(nc);
    nsl_column_release(ch);
    return luaL_error(L, "out of memory");
  }
  nsl__pushcolumn(L, nc);
  nsl__pushcolumn(L, ch);
  nsl_error err = {0};
  if (nsl__jax_compile_attribute(&in, nsl_f64(nc), nsl_f64(ch), &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 2;
}

static const luaL_Reg funcs[] = {{"tree_ancestor", l_tree_ancestor},
                                 {"tree_under", l_tree_under},
                                 {"cumcount", l_cumcount}, {"median_excess", l_median_excess},
                                 {"overlap_sum", l_overlap_sum},
                                 {"moments", l_moments}, {"moments_finish", l_moments_finish}, {"int_mean", l_int_mean},
                                 {"quantile_of", l_quantile_of},
                                 {"count_le", l_count_le}, {"lag_periods", l_lag_periods},
                                 {"jax_compile_tree", l_jax_compile_tree},
                                 {"jax_compile_attribute", l_jax_compile_attribute},
                                 {NULL, NULL}};

int nsl__open_jax(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
