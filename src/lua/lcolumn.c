/* lcolumn.c -- columns as Lua userdata: #c, c[i] (1-based, nil past the
 * end), comparisons to masks, mask algebra (&, |, ~), arithmetic, and
 * reductions that run the core kernels over the whole column. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/nsl_internal.h"
#include "lua/lnsl.h"

typedef struct lcolumn {
  nsl_column *c;
  size_t charged;   /* bytes counted in the state's live total (nsl__gc_charge) */
} lcolumn;

nsl_column *nsl__tocolumn(lua_State *L, int idx) {
  lcolumn *b = luaL_testudata(L, idx, NSL_COLUMN_MT);
  return b ? b->c : NULL;
}

nsl_column *nsl__checkcolumn(lua_State *L, int idx) {
  lcolumn *b = luaL_checkudata(L, idx, NSL_COLUMN_MT);
  if (!b->c) luaL_argerror(L, idx, "column already released");
  return b->c;
}

/* The Lua collector does not see the memory that columns, tables and
 * groups hold in C, so whole-column expressions would pile up garbage it
 * thinks is a few bytes each.  Each state keeps a running total of the C
 * bytes its boxes own alone (charged when boxed, credited when
 * collected); when the total grows by an eighth of what survived the last
 * full collection (and at least NSL_GC_MIN_GROWTH), a full collection
 * runs.  The eighth keeps peak memory within a few percent of collecting
 * by hand between an analysis's phases.  A full collection costs in
 * proportion to the Lua heap, which is small next to the columns of one
 * trace (at most 5 MB at 1 GB) but grows with the reports of a trace of
 * many (24 MB at 1,024 in `compare`): so the growth is also at least
 * NSL_GC_HEAP_FACTOR times the heap, or the collections' cost would grow
 * with the reports squared (1,024 reports: 246 collections of a 24 MB
 * heap, a fifth of the run). */
#define NSL_GC_MIN_GROWTH ((size_t)32 << 20)
#define NSL_GC_HEAP_FACTOR 8

typedef struct gc_account {
  size_t live;        /* bytes charged by boxes not yet collected */
  size_t threshold;   /* live total that triggers the next full collection */
} gc_account;

static const char gc_account_key = 0;

static gc_account *gc_account_of(lua_State *L) {
  gc_account *a;
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &gc_account_key) == LUA_TUSERDATA) {
    a = lua_touserdata(L, -1);
  } else {
    a = lua_newuserdatauv(L, sizeof *a, 0);
    a->live = 0;
    a->threshold = NSL_GC_MIN_GROWTH;
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &gc_account_key);
    lua_remove(L, -2);
  }
  lua_pop(L, 1);   /* anchored in the registry */
  return a;
}

void nsl__gc_charge(lua_State *L, size_t bytes) {
  if (!bytes) return;
  gc_account *a = gc_account_of(L);
  a->live += bytes;
  if (a->live < a->threshold) return;
  lua_gc(L, LUA_GCCOLLECT);   /* the finalizers credit what they free */
  size_t grow = a->live / 8 > NSL_GC_MIN_GROWTH ? a->live / 8 : NSL_GC_MIN_GROWTH;
  size_t heap = (size_t)lua_gc(L, LUA_GCCOUNT) << 10;
  if (grow < NSL_GC_HEAP_FACTOR * heap) grow = NSL_GC_HEAP_FACTOR * heap;
  a->threshold = a->live + grow;
}

void nsl__gc_credit(lua_State *L, size_t bytes) {
  if (!bytes) return;
  gc_account *a = gc_account_of(L);
  a->live = a->live > bytes ? a->live - bytes : 0;
}

/* The box of the next column, made before that column exists (kept in the
 * registry under &spare_key): nsl__pushcolumn puts the column into it at
 * once, with no allocation between, then makes the next spare.  So a
 * failure to allocate a box never leaks a column: the box came first. */
static const char spare_key = 0;

/* Makes a new empty box and keeps it as the spare (may raise: no column is
 * at stake then; a lua_CFunction, for a protected call). */
static int make_spare(lua_State *L) {
  lcolumn *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->c = NULL;
  b->charged = 0;
  luaL_setmetatable(L, NSL_COLUMN_MT);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &spare_key);
  return 0;
}

/* A column counts when the box holds its only reference: a column shared
 * with a table or another box frees nothing when the box goes. */
void nsl__pushcolumn(lua_State *L, nsl_column *c) {
  if (!c) luaL_error(L, "out of memory");
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &spare_key) != LUA_TUSERDATA) {   /* none yet (or a failed refill) */
    lua_pop(L, 1);
    lua_pushcfunction(L, make_spare);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {   /* no box: the column is given up, never left unowned */
      nsl_column_release(c);
      lua_error(L);
    }
    lua_rawgetp(L, LUA_REGISTRYINDEX, &spare_key);
  }
  lcolumn *b = lua_touserdata(L, -1);
  b->c = c;   /* owned by the box from here */
  lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &spare_key);   /* the slot exists: no allocation */
  if (!nsl_column_is_shared(c)) {
    b->charged = nsl_column_bytes(c);
    nsl__gc_charge(L, b->charged);
  }
  make_spare(L);
}

/* A new column from a Lua array: all integers -> i64, any float -> f64,
 * strings -> str; nil holes are not allowed (use nsl.null? no: NaN/none). */
nsl_column *nsl__tocolumn_any(lua_State *L, int idx, nsl_dict *dict) {
  nsl_column *c = nsl__tocolumn(L, idx);
  if (c) return nsl_column_retain(c);
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  nsl_type type = NSL_I64;
  for (lua_Integer i = 1; i <= n; i++) {
    int t = lua_geti(L, idx, i);
    if (t == LUA_TSTRING) type = NSL_STR;
    else if (t == LUA_TNUMBER && !lua_isinteger(L, -1) && type != NSL_STR) type = NSL_F64;
    else if (t == LUA_TBOOLEAN && n > 0 && i == 1) type = NSL_BOOL;
    else if (t != LUA_TNUMBER && t != LUA_TBOOLEAN) luaL_error(L, "element %d of the array is a %s", (int)i, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  c = nsl_column_new(type, n, dict);
  if (!c) luaL_error(L, "out of memory");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    switch (type) {
    case NSL_I64: nsl_i64(c)[i - 1] = lua_tointeger(L, -1); break;
    case NSL_F64: nsl_f64(c)[i - 1] = lua_tonumber(L, -1); break;
    case NSL_BOOL: nsl_bool(c)[i - 1] = (uint8_t)lua_toboolean(L, -1); break;
    case NSL_STR: {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      nsl_error err;
      nsl_i32(c)[i - 1] = -1;   /* a boolean among strings: NULL */
      if (s && nsl_dict_intern(dict, s, len, &nsl_i32(c)[i - 1], &err) != NSL_OK) {
        nsl_column_release(c);
        nsl__lua_error(L, &err);
      }
      break;
    }
    case NSL_I32: break;
    }
    lua_pop(L, 1);
  }
  return c;
}

/* Pushes element i (0-based) of c: integer, number, string or nil. */
static void push_value(lua_State *L, const nsl_column *c, int64_t i) {
  if (i < 0 || i >= c->len || nsl_column_is_null(c, i)) {
    lua_pushnil(L);
    return;
  }
  switch (c->type) {
  case NSL_I64: lua_pushinteger(L, nsl_i64(c)[i]); break;
  case NSL_I32: lua_pushinteger(L, nsl_i32(c)[i]); break;
  case NSL_F64: lua_pushnumber(L, nsl_f64(c)[i]); break;
  case NSL_BOOL: lua_pushboolean(L, nsl_bool(c)[i]); break;
  case NSL_STR: {
    const char *s = nsl_dict_str(c->dict, nsl_i32(c)[i]);
    if (s) lua_pushlstring(L, s, nsl_dict_strlen(c->dict, nsl_i32(c)[i]));
    else lua_pushnil(L);
    break;
  }
  }
}

static int col_gc(lua_State *L) {
  lcolumn *b = luaL_checkudata(L, 1, NSL_COLUMN_MT);
  nsl_column_release(b->c);
  b->c = NULL;
  nsl__gc_credit(L, b->charged);
  b->charged = 0;
  return 0;
}

static int col_len(lua_State *L) {
  lua_pushinteger(L, nsl__checkcolumn(L, 1)->len);
  return 1;
}

static int col_index(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  if (lua_type(L, 2) == LUA_TNUMBER) {
    lua_Integer i = luaL_checkinteger(L, 2);
    push_value(L, c, (int64_t)i - 1);
    return 1;
  }
  luaL_getmetatable(L, NSL_COLUMN_MT);
  lua_getfield(L, -1, "methods");
  lua_pushvalue(L, 2);
  lua_rawget(L, -2);
  return 1;
}

static int col_tostring(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "column<%s>[%I]:", nsl_type_name(c->type), (lua_Integer)c->len);
  luaL_addvalue(&b);
  int64_t shown = c->len < 8 ? c->len : 8;
  for (int64_t i = 0; i < shown; i++) {
    luaL_addchar(&b, ' ');
    push_value(L, c, i);
    if (lua_type(L, -1) == LUA_TSTRING) {   /* quoted, at most 40 bytes */
      size_t len;
      const char *str = lua_tolstring(L, -1, &len);
      lua_pushfstring(L, "\"%s%s\"", len > 40 ? lua_pushlstring(L, str, 40) : str, len > 40 ? "..." : "");
      if (len > 40) lua_remove(L, -2);
      lua_remove(L, -2);
    } else {
      luaL_tolstring(L, -1, NULL);
      lua_remove(L, -2);
    }
    luaL_addvalue(&b);
  }
  if (c->len > shown) luaL_addstring(&b, " ...");
  luaL_pushresult(&b);
  return 1;
}

static int col_type(lua_State *L) {
  lua_pushstring(L, nsl_type_name(nsl__checkcolumn(L, 1)->type));
  return 1;
}

/* ---- comparisons ---- */

static int compare(lua_State *L, nsl_cmp op) {
  nsl_column *c = nsl__checkcolumn(L, 1), *r = NULL;
  nsl_error err = {0};
  if (nsl__tocolumn(L, 2)) r = nsl_column_cmp_col(c, op, nsl__tocolumn(L, 2), &err);
  else if (c->type == NSL_STR) {
    size_t len;
    const char *s = luaL_checklstring(L, 2, &len);
    int32_t id = nsl_dict_find(c->dict, s, len);
    if (op != NSL_EQ && op != NSL_NE) luaL_argerror(L, 2, "strings compare with eq/ne only");
    if (id < 0) { /* a string never seen: nothing equals it */
      r = nsl_column_new(NSL_BOOL, c->len, NULL);
      if (r && op == NSL_NE) memset(r->data, 1, (size_t)c->len);
    } else r = nsl_column_cmp_i64(c, op, id, NULL);
  } else if (lua_isinteger(L, 2)) r = nsl_column_cmp_i64(c, op, lua_tointeger(L, 2), NULL);
  else r = nsl_column_cmp_f64(c, op, luaL_checknumber(L, 2), NULL);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}
static int col_eq(lua_State *L) { return compare(L, NSL_EQ); }
static int col_ne(lua_State *L) { return compare(L, NSL_NE); }
static int col_lt(lua_State *L) { return compare(L, NSL_LT); }
static int col_le(lua_State *L) { return compare(L, NSL_LE); }
static int col_gt(lua_State *L) { return compare(L, NSL_GT); }
static int col_ge(lua_State *L) { return compare(L, NSL_GE); }

/* c:isin{v1, v2, ...}: numbers, or strings for string columns. */
static int col_isin(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  int64_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
  if (!ids) return luaL_error(L, "out of memory");
  int64_t m = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    if (c->type == NSL_STR) {
      size_t len;
      const char *s = lua_tolstring(L, -1, &len);
      int32_t id = s ? nsl_dict_find(c->dict, s, len) : -1;
      if (id >= 0) ids[m++] = id;
    } else if (lua_isinteger(L, -1)) ids[m++] = lua_tointeger(L, -1);
    else if (lua_type(L, -1) == LUA_TNUMBER) ids[m++] = (int64_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  nsl_column *r = nsl_column_isin(c, ids, m, NULL);
  free(ids);
  nsl__pushcolumn(L, r);
  return 1;
}

/* Ids of the dictionary entries used by string column c whose text passes
 * the Lua predicate at stack index fn (called once per distinct string). */
static nsl_column *match_ids(lua_State *L, nsl_column *c, int fn) {
  int32_t nd = nsl_dict_size(c->dict);
  uint8_t *seen = calloc((size_t)nd + 1, 1);
  if (!seen) luaL_error(L, "out of memory");
  const int32_t *v = nsl_i32(c);
  for (int64_t i = 0; i < c->len; i++)
    if (v[i] >= 0 && v[i] < nd) seen[v[i]] = 1;
  int64_t m = 0, cap = 64;
  int64_t *ids = malloc((size_t)cap * sizeof *ids);
  for (int32_t id = 0; ids && id < nd; id++) {
    if (!seen[id]) continue;
    lua_pushvalue(L, fn);
    lua_pushlstring(L, nsl_dict_str(c->dict, id), nsl_dict_strlen(c->dict, id));
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
      free(seen);
      free(ids);
      lua_error(L);
    }
    if (lua_toboolean(L, -1)) {
      if (m == cap) {
        int64_t *p = realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
        if (!p) break;
        ids = p;
      }
      ids[m++] = id;
    }
    lua_pop(L, 1);
  }
  free(seen);
  if (!ids) luaL_error(L, "out of memory");
  nsl_column *r = nsl_column_isin(c, ids, m, NULL);
  free(ids);
  return r;
}

/* c:match(pattern) -- mask of rows whose string matches the Lua pattern;
 * c:contains(text) -- plain substring; c:where(fn) -- fn(string) -> bool.
 * Each distinct string is tested once, then rows are masked in C. */
static int string_predicate(lua_State *L, const char *kind) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  if (c->type != NSL_STR) return luaL_error(L, "%s: not a string column", kind);
  if (strcmp(kind, "where") == 0) luaL_checktype(L, 2, LUA_TFUNCTION);
  else {
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    luaL_loadstring(L, "local find, pat, plain = ... return function(s) return find(s, pat, 1, plain) ~= nil end");
    lua_getglobal(L, "string");
    lua_getfield(L, -1, "find");
    lua_remove(L, -2);
    lua_pushvalue(L, 2);
    lua_pushboolean(L, strcmp(kind, "contains") == 0);
    lua_call(L, 3, 1);
    lua_replace(L, 2);
  }
  nsl__pushcolumn(L, match_ids(L, c, 2));
  return 1;
}
static int col_match(lua_State *L) { return string_predicate(L, "match"); }
static int col_contains(lua_State *L) { return string_predicate(L, "contains"); }
static int col_where(lua_State *L) { return string_predicate(L, "where"); }

static int col_isnull(lua_State *L) {
  nsl__pushcolumn(L, nsl_column_nulls(nsl__checkcolumn(L, 1), NULL));
  return 1;
}

/* ---- masks ---- */

static int mask_binop(lua_State *L, int is_and) {
  nsl_column *a = nsl__checkcolumn(L, 1), *b = nsl__checkcolumn(L, 2);
  nsl_error err = {0};
  nsl_column *r = is_and ? nsl_mask_and(a, b, &err) : nsl_mask_or(a, b, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}
static int col_band(lua_State *L) { return mask_binop(L, 1); }
static int col_bor(lua_State *L) { return mask_binop(L, 0); }
static int col_bnot(lua_State *L) {
  nsl__pushcolumn(L, nsl_mask_not(nsl__checkcolumn(L, 1), NULL));
  return 1;
}
static int col_indices(lua_State *L) {
  nsl__pushcolumn(L, nsl_mask_indices(nsl__checkcolumn(L, 1), NULL));
  return 1;
}

/* ---- arithmetic: column op column|number, with Lua's rules ----
 * +, -, * stay integer for integer operands and become f64 with a float;
 * / always gives f64; // is integer (floor) division of integers. */

/* A float copy of integer column c for float arithmetic, or c retained. */
static nsl_column *as_float(nsl_column *c) {
  return c->type == NSL_F64 ? nsl_column_retain(c) : nsl_column_cast(c, NSL_F64, NULL);
}

static int arith(lua_State *L, nsl_arith op, int floor_div) {
  nsl_column *a = nsl__tocolumn(L, 1), *b = nsl__tocolumn(L, 2), *r = NULL;
  nsl_error err = {0};
  int want_float = op == NSL_DIV && !floor_div;
  if (a && b) {
    if (want_float) {
      nsl_column *fa = as_float(a);
      r = fa ? nsl_column_arith(fa, op, b, &err) : NULL;
      nsl_column_release(fa);
    } else r = nsl_column_arith(a, op, b, &err);
  } else if (a && lua_isinteger(L, 2) && !want_float) {   /* exact, whatever its magnitude */
    r = nsl_column_arith_scalar_i64(a, op, lua_tointeger(L, 2), NULL);
  } else if (a) {
    double v = luaL_checknumber(L, 2);
    if ((want_float || !lua_isinteger(L, 2)) && a->type != NSL_F64) {
      nsl_column *fa = as_float(a);
      r = fa ? nsl_column_arith_scalar(fa, op, v, NULL) : NULL;
      nsl_column_release(fa);
    } else r = nsl_column_arith_scalar(a, op, v, NULL);
  } else {   /* number op column */
    double v = luaL_checknumber(L, 1);
    nsl_type kt = (want_float || !lua_isinteger(L, 1) || b->type == NSL_F64) ? NSL_F64 : NSL_I64;
    nsl_column *k = nsl_column_new(kt, b->len, NULL);
    if (!k) return luaL_error(L, "out of memory");
    for (int64_t i = 0; i < b->len; i++) {
      if (kt == NSL_F64) nsl_f64(k)[i] = v;
      else nsl_i64(k)[i] = lua_tointeger(L, 1);
    }
    r = nsl_column_arith(k, op, b, &err);
    nsl_column_release(k);
  }
  if (r && floor_div && r->type == NSL_F64) {   /* // of floats: floor */
    for (int64_t i = 0; i < r->len; i++) nsl_f64(r)[i] = floor(nsl_f64(r)[i]);
  }
  if (!r) return err.msg[0] ? nsl__lua_error(L, &err) : luaL_error(L, "arithmetic on a %s column", nsl_type_name((a ? a : b)->type));
  nsl__pushcolumn(L, r);
  return 1;
}
static int col_add(lua_State *L) { return arith(L, NSL_ADD, 0); }
static int col_sub(lua_State *L) { return arith(L, NSL_SUB, 0); }
static int col_mul(lua_State *L) { return arith(L, NSL_MUL, 0); }
static int col_div(lua_State *L) { return arith(L, NSL_DIV, 0); }
static int col_idiv(lua_State *L) { return arith(L, NSL_DIV, 1); }
static int col_unm(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  nsl__pushcolumn(L, c->type == NSL_F64 ? nsl_column_arith_scalar(c, NSL_MUL, -1.0, NULL) : nsl_column_arith_scalar(c, NSL_MUL, -1, NULL));
  return 1;
}

static int col_cast(lua_State *L) {
  static const char *const names[] = {"i64", "i32", "f64", NULL};
  static const nsl_type types[] = {NSL_I64, NSL_I32, NSL_F64};
  nsl_column *c = nsl__checkcolumn(L, 1);
  nsl__pushcolumn(L, nsl_column_cast(c, types[luaL_checkoption(L, 2, NULL, names)], NULL));
  return 1;
}

/* ---- reductions ---- */

static void push_number(lua_State *L, double v) {
  if (isnan(v)) lua_pushnil(L);
  else if (v == floor(v) && fabs(v) < 9.0e15) lua_pushinteger(L, (lua_Integer)v);
  else lua_pushnumber(L, v);
}

/* Pushes the stats table of column c; the median (a selection over a copy
 * of the column) only when with_median, the std (a second pass) only when
 * with_std (else it is 0). */
static int push_stats(lua_State *L, nsl_column *c, int with_median, int with_std) {
  nsl_stats s;
  nsl__column_stats(c, &s, with_std);
  lua_createtable(L, 0, 8);
  lua_pushinteger(L, s.count);
  lua_setfield(L, -2, "count");
  if (c->type == NSL_F64) lua_pushnumber(L, s.sum);
  else lua_pushinteger(L, s.isum);
  lua_setfield(L, -2, "sum");
  if (s.count > 0) {
    if (c->type == NSL_F64) {
      push_number(L, s.min);
      lua_setfield(L, -2, "min");
      push_number(L, s.max);
      lua_setfield(L, -2, "max");
    } else {   /* exact: times past 2^53 ns (reports captured months apart, aligned) stay integers */
      lua_pushinteger(L, s.imin);
      lua_setfield(L, -2, "min");
      lua_pushinteger(L, s.imax);
      lua_setfield(L, -2, "max");
    }
    lua_pushnumber(L, s.mean);
    lua_setfield(L, -2, "mean");
    lua_pushnumber(L, s.std);
    lua_setfield(L, -2, "std");
    if (with_median) {
      lua_pushnumber(L, nsl_column_quantile(c, 0.5));
      lua_setfield(L, -2, "median");
    }
  }
  return 1;
}

static int col_stats(lua_State *L) { return push_stats(L, nsl__checkcolumn(L, 1), 1, 1); }

static int stat_field(lua_State *L, const char *field) {
  /* sum, count, min, max, mean, std: no median needed, and the second pass for std only for std */
  push_stats(L, nsl__checkcolumn(L, 1), 0, strcmp(field, "std") == 0);
  lua_getfield(L, -1, field);
  return 1;
}
static int col_sum(lua_State *L) { return stat_field(L, "sum"); }
static int col_count(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  if (c->type == NSL_BOOL) {
    lua_pushinteger(L, nsl_mask_count(c));
    return 1;
  }
  return stat_field(L, "count");
}
static int col_min(lua_State *L) { return stat_field(L, "min"); }
static int col_max(lua_State *L) { return stat_field(L, "max"); }
static int col_mean(lua_State *L) { return stat_field(L, "mean"); }
static int col_std(lua_State *L) { return stat_field(L, "std"); }
static int col_quantile(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  double q = luaL_optnumber(L, 2, 0.5);
  luaL_argcheck(L, q >= 0 && q <= 1, 2, "quantile must be within [0, 1]");
  double v = nsl_column_quantile(c, q);
  if (isnan(v)) lua_pushnil(L);
  else lua_pushnumber(L, v);
  return 1;
}
static int col_median(lua_State *L) {
  lua_settop(L, 1);
  lua_pushnumber(L, 0.5);
  return col_quantile(L);
}

/* c:histogram(edges) -> array of counts (edges: ascending array of n+1). */
static int col_histogram(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 2, 2, "need at least two edges");
  double *edges = malloc((size_t)n * sizeof *edges);
  if (!edges) return luaL_error(L, "out of memory");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    edges[i - 1] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  nsl_error err = {0};
  nsl_column *h = nsl_column_histogram(c, edges, (int)(n - 1), &err);
  free(edges);
  if (!h) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, h);
  return 1;
}

/* c:gather(idx) -> c[idx] (idx: 0-based i64 column of row indices). */
static int col_gather(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1), *idx = nsl__checkcolumn(L, 2);
  nsl_error err = {0};
  nsl_column *r = nsl_column_gather(c, idx, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* c:argsort([desc]) -> 0-based row indices. */
static int col_argsort(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  int desc = lua_toboolean(L, 2);
  nsl_error err = {0};
  const nsl_column *keys[1] = {c};
  nsl_column *r = nsl_argsort(keys, &desc, 1, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* c:totable([first, last]) -> Lua array of the values (NULL -> nil holes). */
static int col_totable(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  lua_Integer first = luaL_optinteger(L, 2, 1), last = luaL_optinteger(L, 3, c->len);
  if (first < 1) first = 1;
  if (last > c->len) last = c->len;
  lua_createtable(L, last >= first ? (int)(last - first + 1) : 0, 0);
  for (lua_Integer i = first; i <= last; i++) {
    push_value(L, c, i - 1);
    lua_seti(L, -2, i - first + 1);
  }
  return 1;
}

/* c:id(i) -> the raw string id / integer of element i (1-based). */
static int col_raw(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  int64_t v = nsl_column_get_i64(c, i - 1);
  if (v == NSL_NULL_I64) lua_pushnil(L);
  else lua_pushinteger(L, v);
  return 1;
}

/* c:nbytes() -> bytes held. */
static int col_bytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)nsl_column_bytes(nsl__checkcolumn(L, 1)));
  return 1;
}

/* nsl.column(array) -> column. */
static int l_column(lua_State *L) {
  nsl__pushcolumn(L, nsl__tocolumn_any(L, 1, nsl__state_dict(L)));
  return 1;
}

/* nsl.range(n) -> i64 column 0..n-1 (row indices). */
static int l_range(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 0, 1, "negative length");
  nsl_column *c = nsl__column_new_uninit(NSL_I64, n, NULL);   /* every row is written below */
  if (!c) return luaL_error(L, "out of memory");
  for (lua_Integer i = 0; i < n; i++) nsl_i64(c)[i] = i;
  nsl__pushcolumn(L, c);
  return 1;
}


/* The mapping of the value on top of the stack (popped) through the map at
 * index 2 (a function or a table): its id in dict, -1 for none. */
static int32_t map_one(lua_State *L, int is_fn, nsl_dict *dict) {
  if (is_fn) {
    lua_pushvalue(L, 2);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 1);
  } else {
    lua_pushvalue(L, -1);
    lua_gettable(L, 2);
  }
  int32_t id = -1;
  if (!lua_isnil(L, -1)) {
    size_t len;
    const char *str = luaL_tolstring(L, -1, &len);
    nsl_error err;
    if (nsl_dict_intern(dict, str, len, &id, &err) != NSL_OK) nsl__lua_error(L, &err);   /* all anchored */
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return id;
}

/* c:map(t_or_fn) -> a string column: each distinct value v of c becomes
 * t[v] (or fn(v)); values without a mapping become NULL.  The lookup runs
 * once per distinct value, the rows are rewritten in C: a string column
 * through an array indexed by its dictionary ids (no Lua value per row;
 * unless the dictionary is much larger than the column, as for a few rows
 * of a large trace), other columns through a Lua table of the values seen. */
static int col_map(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  int is_fn = lua_isfunction(L, 2);
  if (!is_fn) luaL_checktype(L, 2, LUA_TTABLE);
  nsl_dict *dict = nsl__state_dict(L);
  nsl_column *r = nsl_column_new(NSL_STR, c->len, dict);
  if (!r) return luaL_error(L, "out of memory");
  nsl__pushcolumn(L, r);   /* anchored */
  int32_t *out = nsl_i32(r);
  int32_t nd = c->type == NSL_STR ? nsl_dict_size(c->dict) : 0;
  if (c->type == NSL_STR && nd <= 4 * c->len + 4096) {   /* the array costs no more than the rows do */
    const int32_t *src = nsl_i32(c);
    /* memo[id]: the mapped id, INT32_MIN before the first row of id (a
     * userdata, so an error in the map frees it) */
    int32_t *memo = lua_newuserdatauv(L, (size_t)(nd > 0 ? nd : 1) * sizeof *memo, 0);
    for (int32_t d = 0; d < nd; d++) memo[d] = INT32_MIN;
    for (int64_t i = 0; i < c->len; i++) {
      int32_t v = src[i];
      if (v < 0 || v >= nd) {   /* NULL */
        out[i] = -1;
        continue;
      }
      if (memo[v] == INT32_MIN) {
        const char *s = nsl_dict_str(c->dict, v);
        if (!s) {
          out[i] = -1;
          continue;
        }
        lua_pushlstring(L, s, nsl_dict_strlen(c->dict, v));
        memo[v] = map_one(L, is_fn, dict);
      }
      out[i] = memo[v];
    }
    lua_pop(L, 1);
    return 1;
  }
  lua_newtable(L);         /* cache: value -> mapped id */
  int cache = lua_gettop(L);
  for (int64_t i = 0; i < c->len; i++) {
    push_value(L, c, i);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      out[i] = -1;
      continue;
    }
    lua_pushvalue(L, -1);
    if (lua_rawget(L, cache) == LUA_TNUMBER) {
      out[i] = (int32_t)lua_tointeger(L, -1);
      lua_pop(L, 2);
      continue;
    }
    lua_pop(L, 1);
    lua_pushvalue(L, -1);   /* the value stays for the cache's key */
    int32_t id = map_one(L, is_fn, dict);
    lua_pushinteger(L, id);
    lua_rawset(L, cache);   /* cache[value] = id */
    out[i] = id;
  }
  lua_settop(L, cache - 1);
  return 1;
}

/* nsl.concat(c1, c2, ...) -> one column with the rows of all (same type;
 * string columns must share the state dictionary, as all nsl columns do);
 * the only one with rows, or c1 when none has, is itself the result
 * (columns never change): no copy. */
static int l_concat(lua_State *L) {
  int n = lua_gettop(L);
  luaL_argcheck(L, n >= 1, 1, "nothing to concatenate");
  nsl_column *first = nsl__checkcolumn(L, 1);
  int filled = 1, nfilled = 0;   /* the columns with rows */
  for (int k = 1; k <= n; k++) {
    nsl_column *c = nsl__checkcolumn(L, k);
    if (c->type != first->type)
      return luaL_error(L, "concat: column %d is %s, column 1 %s", k, nsl_type_name(c->type), nsl_type_name(first->type));
    if (c->type == NSL_STR && c->dict != first->dict) return luaL_error(L, "concat: string columns of different dictionaries");
    if (c->len) filled = k, nfilled++;
  }
  if (nfilled <= 1) {
    lua_settop(L, filled);
    return 1;
  }
  const nsl_column **cols = lua_newuserdatauv(L, (size_t)n * sizeof *cols, 0);   /* (freed by the collector) */
  for (int k = 1; k <= n; k++) cols[k - 1] = nsl__checkcolumn(L, k);
  nsl_error err = {0};
  nsl_column *r = nsl__column_concat(cols, n, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* A column of n copies of the value at stack index idx (integer: i64,
 * number: f64, string: the state dictionary's); NULL with err set when out
 * of memory (raises only for a value of another type). */
static nsl_column *rep_value(lua_State *L, int idx, lua_Integer n, nsl_error *err) {
  nsl_column *c;
  if (lua_isinteger(L, idx)) {
    lua_Integer v = lua_tointeger(L, idx);
    c = nsl__column_new_uninit(NSL_I64, n, NULL);
    if (c) for (lua_Integer i = 0; i < n; i++) nsl_i64(c)[i] = v;
  } else if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Number v = lua_tonumber(L, idx);
    c = nsl__column_new_uninit(NSL_F64, n, NULL);
    if (c) for (lua_Integer i = 0; i < n; i++) nsl_f64(c)[i] = v;
  } else {
    size_t len;
    const char *str = luaL_checklstring(L, idx, &len);
    nsl_dict *d = nsl__state_dict(L);
    int32_t id;
    if (nsl_dict_intern(d, str, len, &id, err) != NSL_OK) return NULL;
    c = nsl__column_new_uninit(NSL_STR, n, d);
    if (c) for (lua_Integer i = 0; i < n; i++) nsl_i32(c)[i] = id;
  }
  if (!c) nsl_error_set(err, NSL_ERR_NOMEM, "out of memory: a column of %lld values", (long long)n);
  return c;
}

/* nsl.rep(value, n) -> a column of n copies of value (integer, number, string). */
static int l_rep(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 0, 2, "negative length");
  nsl_error err = {0};
  nsl_column *c = rep_value(L, 1, n, &err);
  if (!c) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, c);
  return 1;
}

/* nsl.where(mask, a, b) -> a column with a's value where mask is true and
 * b's elsewhere (a, b: columns of one type and mask's length, or a single
 * value -- integer, number, string -- for every row).  One pass. */
static int l_where(lua_State *L) {
  nsl_column *mask = nsl__checkcolumn(L, 1), *v[2];
  int one[2];
  for (int k = 0; k < 2; k++)   /* (checked before any is made: an error raised here leaks nothing) */
    if (!nsl__tocolumn(L, 2 + k) && lua_type(L, 2 + k) != LUA_TNUMBER && lua_type(L, 2 + k) != LUA_TSTRING)
      return luaL_typeerror(L, 2 + k, "column, number or string");
  nsl_error err = {0};
  for (int k = 0; k < 2; k++) {
    one[k] = nsl__tocolumn(L, 2 + k) == NULL;
    v[k] = one[k] ? rep_value(L, 2 + k, 1, &err) : nsl_column_retain(nsl__tocolumn(L, 2 + k));
  }
  nsl_column *r = v[0] && v[1] ? nsl__column_where(mask, v[0], one[0], v[1], one[1], &err) : NULL;
  nsl_column_release(v[0]);
  nsl_column_release(v[1]);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* c:unique() -> distinct non-NULL values, ascending. */
static int col_unique(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl_column_unique(nsl__checkcolumn(L, 1), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* sorted:searchsorted(values [, "right"]) -> 0-based insertion indices. */
static int col_searchsorted(lua_State *L) {
  nsl_column *sorted = nsl__checkcolumn(L, 1), *values = nsl__checkcolumn(L, 2);
  int right;   /* "left" / "right", or a boolean (true: right) */
  if (lua_isboolean(L, 3) || lua_isnoneornil(L, 3)) right = lua_toboolean(L, 3);
  else {
    const char *side = luaL_checkstring(L, 3);
    luaL_argcheck(L, strcmp(side, "left") == 0 || strcmp(side, "right") == 0, 3, "'left' or 'right'");
    right = side[0] == 'r';
  }
  nsl_error err = {0};
  nsl_column *r = nsl_searchsorted(sorted, values, right, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* c:cumsum() -> running sum. */
static int col_cumsum(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl_column_cumsum(nsl__checkcolumn(L, 1), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* c:cummax() -> running maximum (integer columns). */
static int col_cummax(lua_State *L) {
  nsl_error err = {0};
  nsl_column *r = nsl_column_cummax(nsl__checkcolumn(L, 1), &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* c:diff([group_ids]) -> x[i] - x[previous row (of the same group)]; NULL first. */
static int col_diff(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  nsl_column *g = lua_isnoneornil(L, 2) ? NULL : nsl__checkcolumn(L, 2);
  nsl_error err = {0};
  nsl_column *r = nsl_column_diff(c, g, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* c:shift(k) -> the column moved by k rows: r[i] = c[i + k], NULL where
 * i + k falls outside (k = 1: the next row's value, -1: the previous). */
static int col_shift(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  lua_Integer k = luaL_checkinteger(L, 2);
  nsl_column *idx = nsl_column_new(NSL_I64, c->len, NULL);
  if (!idx) return luaL_error(L, "out of memory");
  for (int64_t i = 0; i < c->len; i++) {
    int64_t j = i + (int64_t)k;
    nsl_i64(idx)[i] = j >= 0 && j < c->len ? j : -1;
  }
  nsl_error err = {0};
  nsl_column *r = nsl_column_gather(c, idx, &err);
  nsl_column_release(idx);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

/* nsl.group_concat(group_ids, ngroups, strings [, sep]) -> a string column
 * of ngroups rows: the strings of each group's rows joined by sep (";" by
 * default) in row order -- e.g. the frames of each call stack, root first.
 * NULL strings are skipped; a group without strings gives NULL. */
static int l_group_concat(lua_State *L) {
  nsl_column *g = nsl__checkcolumn(L, 1);
  lua_Integer ng = luaL_checkinteger(L, 2);
  nsl_column *sc = nsl__checkcolumn(L, 3);
  size_t seplen;
  const char *sep = luaL_optlstring(L, 4, ";", &seplen);
  luaL_argcheck(L, g->type == NSL_I64 && g->len == sc->len, 1, "group ids: an i64 column as long as the strings");
  luaL_argcheck(L, sc->type == NSL_STR, 3, "a string column");
  luaL_argcheck(L, ng >= 0, 2, "negative group count");
  nsl_error err = {0};
  nsl_column *r = nsl__group_concat(g, (int64_t)ng, sc, sep, seplen, &err);
  if (!r) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, r);
  return 1;
}

static const luaL_Reg methods[] = {
    {"type", col_type},         {"eq", col_eq},
    {"ne", col_ne},             {"lt", col_lt},
    {"le", col_le},             {"gt", col_gt},
    {"ge", col_ge},             {"isin", col_isin},
    {"match", col_match},       {"contains", col_contains},
    {"where", col_where},       {"isnull", col_isnull},
    {"indices", col_indices},   {"cast", col_cast},
    {"stats", col_stats},       {"sum", col_sum},
    {"count", col_count},       {"min", col_min},
    {"max", col_max},           {"mean", col_mean},
    {"std", col_std},           {"median", col_median},
    {"quantile", col_quantile}, {"histogram", col_histogram},
    {"gather", col_gather},     {"argsort", col_argsort},
    {"totable", col_totable},   {"raw", col_raw},
    {"nbytes", col_bytes},      {"map", col_map},
    {"unique", col_unique},     {"searchsorted", col_searchsorted},
    {"cumsum", col_cumsum}, {"cummax", col_cummax},     {"diff", col_diff},
    {"shift", col_shift},
    {NULL, NULL}};

static const luaL_Reg metamethods[] = {
    {"__gc", col_gc},    {"__close", col_gc}, {"__len", col_len},   {"__index", col_index},
    {"__tostring", col_tostring}, {"__band", col_band}, {"__bor", col_bor}, {"__bnot", col_bnot},
    {"__add", col_add},  {"__sub", col_sub},  {"__mul", col_mul},   {"__div", col_div}, {"__idiv", col_idiv},
    {"__unm", col_unm},  {NULL, NULL}};

static const luaL_Reg funcs[] = {{"column", l_column}, {"range", l_range}, {"concat", l_concat},
                                 {"rep", l_rep},       {"group_concat", l_group_concat}, {"where", l_where},
                                 {NULL, NULL}};

/* Registers the column metatable and adds nsl.column/nsl.range to the
 * module table on top of the stack. */
int nsl__open_column(lua_State *L) {
  nsl__register_type(L, NSL_COLUMN_MT, metamethods, methods);
  make_spare(L);   /* the first column's box */
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
