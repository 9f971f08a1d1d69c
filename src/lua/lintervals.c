/* lintervals.c -- interval sets as Lua userdata: nsl.intervals(start, stop
 * [, mask]) is the union of busy time; :intersect, :subtract, :gaps, :total. */
#include <string.h>

#include "lua/lnsl.h"

typedef struct liv {
  nsl_intervals iv;
} liv;

static liv *checkiv(lua_State *L, int idx) { return luaL_checkudata(L, idx, NSL_IV_MT); }

static liv *newiv(lua_State *L) {
  liv *b = lua_newuserdatauv(L, sizeof *b, 0);
  memset(b, 0, sizeof *b);
  luaL_setmetatable(L, NSL_IV_MT);
  return b;
}

static int iv_gc(lua_State *L) {
  nsl_iv_free(&checkiv(L, 1)->iv);
  return 0;
}

/* nsl.intervals(start, stop [, mask [, order]]) -> union of [start, stop);
 * order: the rows in an order their starts do not fall in (an argsort,
 * shared by the unions of several masks), which saves the sort. */
static int l_intervals(lua_State *L) {
  nsl_column *start = nsl__checkcolumn(L, 1), *stop = nsl__checkcolumn(L, 2);
  nsl_column *mask = lua_isnoneornil(L, 3) ? NULL : nsl__checkcolumn(L, 3);
  nsl_column *order = lua_isnoneornil(L, 4) ? NULL : nsl__checkcolumn(L, 4);
  liv *b = newiv(L);
  nsl_error err = {0};
  if ((order ? nsl_iv_union_ordered(start, stop, mask, order, &b->iv, &err)
             : nsl_iv_union(start, stop, mask, &b->iv, &err)) != NSL_OK)
    return nsl__lua_error(L, &err);
  return 1;
}

typedef nsl_status (*iv_binop)(const nsl_intervals *, const nsl_intervals *, nsl_intervals *, nsl_error *);

static int binop(lua_State *L, iv_binop fn) {
  liv *a = checkiv(L, 1), *b = checkiv(L, 2);
  liv *r = newiv(L);
  nsl_error err = {0};
  if (fn(&a->iv, &b->iv, &r->iv, &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 1;
}
static int iv_intersect(lua_State *L) { return binop(L, nsl_iv_intersect); }
static int iv_subtract(lua_State *L) { return binop(L, nsl_iv_subtract); }

/* iv:gaps([lo, hi]) -> the idle intervals between busy ones. */
static int iv_gaps(lua_State *L) {
  liv *a = checkiv(L, 1);
  lua_Integer lo = luaL_optinteger(L, 2, NSL_NULL_I64), hi = luaL_optinteger(L, 3, NSL_NULL_I64);
  liv *r = newiv(L);
  nsl_error err = {0};
  if (nsl_iv_gaps(&a->iv, lo, hi, &r->iv, &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 1;
}

static int iv_total(lua_State *L) {
  lua_pushinteger(L, nsl_iv_total(&checkiv(L, 1)->iv));
  return 1;
}

static int iv_len(lua_State *L) {
  lua_pushinteger(L, checkiv(L, 1)->iv.n);
  return 1;
}

/* iv:columns() -> start, stop as i64 columns. */
static int iv_columns(lua_State *L) {
  liv *a = checkiv(L, 1);
  nsl_column *s = nsl_column_new(NSL_I64, a->iv.n, NULL), *e = nsl_column_new(NSL_I64, a->iv.n, NULL);
  if (!s || !e) {
    nsl_column_release(s);
    nsl_column_release(e);
    return luaL_error(L, "out of memory");
  }
  if (a->iv.n) {
    memcpy(s->data, a->iv.start, (size_t)a->iv.n * sizeof(int64_t));
    memcpy(e->data, a->iv.stop, (size_t)a->iv.n * sizeof(int64_t));
  }
  nsl__pushcolumn(L, s);
  nsl__pushcolumn(L, e);
  return 2;
}

static int iv_tostring(lua_State *L) {
  liv *a = checkiv(L, 1);
  lua_pushfstring(L, "intervals[%I], total %I ns", (lua_Integer)a->iv.n, (lua_Integer)nsl_iv_total(&a->iv));
  return 1;
}

/* nsl.busy_by_group(start, stop, group_ids, ngroups [, mask]) -> i64 column:
 * the busy time (length of the union) of each group's intervals, e.g. per
 * device with group ids from t:group_by("device"):ids(). */
static int l_busy_by_group(lua_State *L) {
  nsl_column *start = nsl__checkcolumn(L, 1), *stop = nsl__checkcolumn(L, 2), *g = nsl__checkcolumn(L, 3);
  lua_Integer n = luaL_checkinteger(L, 4);
  nsl_column *mask = lua_isnoneornil(L, 5) ? NULL : nsl__checkcolumn(L, 5);
  nsl_error err = {0};
  nsl_column *r = nsl_iv_union_grouped(start, stop, g, n, mask, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* iv:coverage(start, stop) -> i64 column: for each row [start, stop), the
 * length that the set iv covers (e.g. the part of each kernel hidden under
 * communication). */
static int iv_coverage(lua_State *L) {
  liv *a = checkiv(L, 1);
  nsl_column *start = nsl__checkcolumn(L, 2), *stop = nsl__checkcolumn(L, 3);
  nsl_error err = {0};
  nsl_column *r = nsl_iv_coverage(start, stop, &a->iv, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* iv:union(b) -> the union of two sets. */
static int iv_union(lua_State *L) {
  liv *a = checkiv(L, 1), *b = checkiv(L, 2);
  int64_t n = a->iv.n + b->iv.n;
  nsl_column *s = nsl_column_new(NSL_I64, n, NULL), *e = nsl_column_new(NSL_I64, n, NULL);
  if (!s || !e) {
    nsl_column_release(s);
    nsl_column_release(e);
    return luaL_error(L, "out of memory");
  }
  if (a->iv.n) {
    memcpy(s->data, a->iv.start, (size_t)a->iv.n * sizeof(int64_t));
    memcpy(e->data, a->iv.stop, (size_t)a->iv.n * sizeof(int64_t));
  }
  if (b->iv.n) {
    memcpy(nsl_i64(s) + a->iv.n, b->iv.start, (size_t)b->iv.n * sizeof(int64_t));
    memcpy(nsl_i64(e) + a->iv.n, b->iv.stop, (size_t)b->iv.n * sizeof(int64_t));
  }
  liv *r = newiv(L);
  nsl_error err = {0};
  nsl_status rc = nsl_iv_union(s, e, NULL, &r->iv, &err);
  nsl_column_release(s);
  nsl_column_release(e);
  if (rc != NSL_OK) return nsl__lua_error(L, &err);
  return 1;
}

static const luaL_Reg methods[] = {{"intersect", iv_intersect}, {"subtract", iv_subtract}, {"gaps", iv_gaps},
                                   {"total", iv_total},         {"columns", iv_columns},   {"coverage", iv_coverage},
                                   {"union", iv_union},         {NULL, NULL}};
static const luaL_Reg meta[] = {{"__gc", iv_gc}, {"__close", iv_gc}, {"__len", iv_len}, {"__tostring", iv_tostring},
                                {NULL, NULL}};
static const luaL_Reg funcs[] = {{"intervals", l_intervals}, {"busy_by_group", l_busy_by_group}, {NULL, NULL}};

int nsl__open_intervals(lua_State *L) {
  nsl__register_type(L, NSL_IV_MT, meta, methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
