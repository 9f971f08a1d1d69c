/* loverlap.c -- the core kernels that overlap and iteration analyses need,
 * bound for Lua:
 *   iv:coverage(start, stop) -> i64 column: for every row [start, stop), the
 *       length of it that the interval set iv covers (nsl_iv_coverage);
 *   sorted:searchsorted(values [, right]) -> i64 column of 0-based insertion
 *       indices of values into the ascending column sorted (nsl_searchsorted). */
#include "lua/lnsl.h"

static int iv_coverage(lua_State *L) {
  const nsl_intervals *b = luaL_checkudata(L, 1, NSL_IV_MT);   /* the box starts with the set */
  nsl_column *start = nsl__checkcolumn(L, 2), *stop = nsl__checkcolumn(L, 3);
  nsl_error err = {0};
  nsl_column *r = nsl_iv_coverage(start, stop, b, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

static int col_searchsorted(lua_State *L) {
  nsl_column *sorted = nsl__checkcolumn(L, 1), *values = nsl__checkcolumn(L, 2);
  int right = lua_toboolean(L, 3);
  nsl_error err = {0};
  nsl_column *r = nsl_searchsorted(sorted, values, right, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* Adds fn as method `name` of the userdata type whose metatable is mt. */
static void add_method(lua_State *L, const char *mt, const char *name, lua_CFunction fn) {
  luaL_getmetatable(L, mt);
  lua_getfield(L, -1, "methods");
  lua_pushcfunction(L, fn);
  lua_setfield(L, -2, name);
  lua_pop(L, 2);
}

/* Adds the methods above to the interval and column types (opened before). */
int nsl__open_overlap(lua_State *L) {
  add_method(L, NSL_IV_MT, "coverage", iv_coverage);
  add_method(L, NSL_COLUMN_MT, "searchsorted", col_searchsorted);
  return 0;
}
