/* ltable.c -- tables as Lua userdata: t.col, #t, t:filter(mask),
 * t:sort("-dur", "name"), t:order(...), t:head(n), t:group_by(...):agg{...},
 * t:count_distinct(...), t:join(...).
 * Every operation names the columns it needs first, so a lazily loaded
 * table reads them in one pass. */
#include <stdlib.h>
#include <string.h>

#include "core/nsl_internal.h"
#include "lua/lnsl.h"

typedef struct ltable {
  nsl_table *t;
  size_t charged;   /* bytes counted in the state's live total (nsl__gc_charge) */
} ltable;

typedef struct lgroups {
  nsl_groups g;
  nsl_table *keys;   /* one row per group: the key columns */
  size_t charged;    /* bytes counted in the state's live total (nsl__gc_charge) */
} lgroups;

nsl_table *nsl__checktable(lua_State *L, int idx) {
  ltable *b = luaL_checkudata(L, idx, NSL_TABLE_MT);
  if (!b->t) luaL_argerror(L, idx, "table already released");
  return b->t;
}

void nsl__pushtable(lua_State *L, nsl_table *t, int keep_idx) {
  if (!t) luaL_error(L, "out of memory");
  if (keep_idx) keep_idx = lua_absindex(L, keep_idx);
  ltable *b = lua_newuserdatauv(L, sizeof *b, 1);
  b->t = t;
  b->charged = 0;
  luaL_setmetatable(L, NSL_TABLE_MT);
  if (keep_idx) {
    lua_pushvalue(L, keep_idx);
    lua_setiuservalue(L, -2, 1);
  }
}

/* Charges the collector (nsl__gc_charge) with the loaded columns that the
 * new, complete table at idx alone holds: what its collection will free. */
static void charge_table(lua_State *L, int idx) {
  ltable *b = luaL_checkudata(L, idx, NSL_TABLE_MT);
  size_t bytes = 0;
  for (int i = 0; i < nsl_table_ncols(b->t); i++) {
    if (!nsl_table_is_loaded(b->t, i)) continue;
    nsl_column *c = nsl_table_column_at(b->t, i, NULL);
    if (c && !nsl_column_is_shared(c)) bytes += nsl_column_bytes(c);
  }
  b->charged += bytes;
  nsl__gc_charge(L, bytes);
}

/* Pushes a new table derived from the one at index 1, keeping alive what it keeps. */
static void push_derived(lua_State *L, nsl_table *t) {
  if (!t) luaL_error(L, "out of memory");
  lua_getiuservalue(L, 1, 1);
  nsl__pushtable(L, t, lua_isnil(L, -1) ? 0 : -1);
  lua_remove(L, -2);
  charge_table(L, -1);
}

static int tbl_gc(lua_State *L) {
  ltable *b = luaL_checkudata(L, 1, NSL_TABLE_MT);
  nsl_table_release(b->t);
  b->t = NULL;
  nsl__gc_credit(L, b->charged);
  b->charged = 0;
  return 0;
}

static int tbl_len(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  nsl_error err = {0};
  int64_t n;
  if (nsl_table_nrows(t, &n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_pushinteger(L, n);
  return 1;
}

static nsl_column *checkcol(lua_State *L, nsl_table *t, const char *name) {
  nsl_error err = {0};
  nsl_column *c = nsl_table_column(t, name, &err);
  if (!c) {
    if (err.code == NSL_ERR_NOTFOUND) luaL_error(L, "no column '%s' in this table", name);
    nsl__lua_error(L, &err);
  }
  return c;
}

/* t.name -> the method of that name, else the column: methods come first,
 * so no column can hide one (a table may have a column called "rows" or
 * "sort"); t:col(name) reaches every column, whatever its name. */
static int tbl_index(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  luaL_getmetatable(L, NSL_TABLE_MT);
  lua_getfield(L, -1, "methods");
  lua_pushvalue(L, 2);
  if (lua_rawget(L, -2) != LUA_TNIL) return 1;
  if (lua_type(L, 2) == LUA_TSTRING && nsl_table_find(t, lua_tostring(L, 2)) >= 0) {
    nsl__pushcolumn(L, nsl_column_retain(checkcol(L, t, lua_tostring(L, 2))));
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* t:col(name) -> the column called name (any name, a method's too); an
 * unknown name is an error. */
static int tbl_col(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  nsl__pushcolumn(L, nsl_column_retain(checkcol(L, t, luaL_checkstring(L, 2))));
  return 1;
}

/* t:columns() -> array of column names. */
static int tbl_columns(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  int n = nsl_table_ncols(t);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, nsl_table_colname(t, i));
    lua_seti(L, -2, i + 1);
  }
  return 1;
}

/* t:coltype(name) -> "i64" | "i32" | "f64" | "str" | "bool" | nil */
static int tbl_coltype(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  int i = nsl_table_find(t, luaL_checkstring(L, 2));
  if (i < 0) lua_pushnil(L);
  else lua_pushstring(L, nsl_type_name(nsl_table_coltype(t, i)));
  return 1;
}

/* Raises the error of a load. */
static void load_error(lua_State *L, const nsl_error *err) {
  if (err->code == NSL_ERR_NOTFOUND) {   /* a column the script names wrongly: its bug */
    nsl_error e = {NSL_ERR_ARG, {0}};
    nsl_error_set(&e, NSL_ERR_ARG, "%s in this table", err->msg);
    nsl__lua_error(L, &e);
  }
  nsl__lua_error(L, err);
}

/* Loads the named columns of t. */
static void require_names(lua_State *L, nsl_table *t, const char **names, int n) {
  nsl_error err = {0};
  if (nsl_table_require(t, names, n, &err) != NSL_OK) load_error(L, &err);
}

/* t:load{"a", "b"} or t:load("a", "b") -- loads columns in one pass; returns
 * t.  As work (nsl__work: also nsl.background("load", t, names)): planned
 * here, read on any thread, stored by push (nsl_table_load_begin). */
typedef struct load_work {
  nsl_load *load;
  nsl_status rc;
  nsl_error err;
} load_work;

static void load_prepare(lua_State *L, int first, void *p) {
  load_work *w = p;
  nsl_table *t = nsl__checktable(L, first);
  const char *names[256];
  int n = nsl__check_strings(L, first + 1, names, 256, "columns");
  nsl_error err = {0};
  if (nsl_table_load_begin(t, names, n, &w->load, &err) != NSL_OK) load_error(L, &err);
}

static void load_run(void *p) {
  load_work *w = p;
  w->rc = nsl_load_read(w->load, &w->err);
}

static int load_push(lua_State *L, void *p) {
  load_work *w = p;
  nsl_load *l = w->load;
  w->load = NULL;
  nsl_error err = {0};
  if (nsl_load_end(l, &err) != NSL_OK) load_error(L, &err);   /* a failed read fails here too */
  lua_getiuservalue(L, -1, 1);   /* the job's arguments: the table first */
  lua_geti(L, -1, 1);
  lua_remove(L, -2);
  return 1;
}

static void load_release(void *p) {
  load_work *w = p;
  nsl_load_free(w->load);
}

const nsl__work nsl__work_load = {"load", sizeof(load_work), load_prepare, load_run, load_push, load_release};

static int tbl_load(lua_State *L) { return nsl__work_now(L, &nsl__work_load, 1); }

/* t:take(idx) -> rows idx (0-based i64 column). */
static int tbl_take(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  nsl_column *idx = nsl__checkcolumn(L, 2);
  nsl_error err = {0};
  nsl_table *r = nsl_table_take(t, idx, &err);
  if (!r) return nsl__lua_error(L, &err);
  push_derived(L, r);
  return 1;
}

/* t:filter(mask) -> rows where mask is true. */
static int tbl_filter(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  nsl_column *mask = nsl__checkcolumn(L, 2);
  nsl_error err = {0};
  int64_t n;
  if (nsl_table_nrows(t, &n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  if (mask->type != NSL_BOOL || mask->len != n)
    return luaL_error(L, "filter: need a mask of %I rows, got a %s column of %I", (lua_Integer)n,
                      nsl_type_name(mask->type), (lua_Integer)mask->len);
  nsl_table *r = nsl_table_filter(t, mask, &err);
  if (!r) return nsl__lua_error(L, &err);
  push_derived(L, r);
  return 1;
}

/* t:head(n) -> the first n rows (10 by default). */
static int tbl_head(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  lua_Integer k = luaL_optinteger(L, 2, 10);
  nsl_error err = {0};
  int64_t n;
  if (nsl_table_nrows(t, &n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  if (k > n) k = n;
  if (k < 0) k = 0;
  nsl_column *idx = nsl_column_new(NSL_I64, k, NULL);
  if (!idx) return luaL_error(L, "out of memory");
  for (lua_Integer i = 0; i < k; i++) nsl_i64(idx)[i] = i;
  nsl_table *r = nsl_table_take(t, idx, &err);
  nsl_column_release(idx);
  if (!r) return nsl__lua_error(L, &err);
  push_derived(L, r);
  return 1;
}

/* The row order of t by the key names from stack index 2 on ("a", "-b":
 * a ascending then b descending; a stable sort): an i64 column of 0-based
 * rows, owned by the caller. */
static nsl_column *sort_order(lua_State *L, nsl_table *t) {
  int nkeys = lua_gettop(L) - 1;
  luaL_argcheck(L, nkeys >= 1 && nkeys <= 16, 2, "sort needs 1 to 16 column names");
  const char *names[16];
  int desc[16];
  for (int k = 0; k < nkeys; k++) {
    const char *s = luaL_checkstring(L, k + 2);
    desc[k] = s[0] == '-';
    names[k] = s + (s[0] == '-' || s[0] == '+');
  }
  require_names(L, t, names, nkeys);
  const nsl_column *keys[16];
  for (int k = 0; k < nkeys; k++) keys[k] = checkcol(L, t, names[k]);
  nsl_error err = {0};
  nsl_column *idx = nsl_argsort(keys, desc, nkeys, &err);
  if (!idx) nsl__lua_error(L, &err);
  return idx;
}

/* t:sort("a", "-b", ...) -> rows sorted by a ascending then b descending. */
static int tbl_sort(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  nsl_column *idx = sort_order(L, t);
  nsl_error err = {0};
  nsl_table *r = nsl_table_take(t, idx, &err);
  nsl_column_release(idx);
  if (!r) return nsl__lua_error(L, &err);
  push_derived(L, r);
  return 1;
}

/* t:order("a", "-b", ...) -> the rows t:sort would give, as an i64 column of
 * 0-based rows of t (to read a few columns of a few rows in that order
 * without moving every column). */
static int tbl_order(lua_State *L) {
  nsl__pushcolumn(L, sort_order(L, nsl__checktable(L, 1)));
  return 1;
}

/* t:select{"a", "b"} -> a table of just these columns (shared, not copied). */
static int tbl_select(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  const char *names[128];
  luaL_argcheck(L, n <= 128, 2, "at most 128 columns");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    names[i - 1] = luaL_checkstring(L, -1);
    lua_pop(L, 1);
  }
  require_names(L, t, names, (int)n);
  nsl_table *r = nsl_table_new();
  nsl_error err = {0};
  for (lua_Integer i = 0; r && i < n; i++)
    if (nsl_table_add(r, names[i], checkcol(L, t, names[i]), &err) != NSL_OK) {
      nsl_table_release(r);
      return nsl__lua_error(L, &err);
    }
  push_derived(L, r);
  return 1;
}

/* t:with(name, column_or_array [, name2, col2 ...]) -> a new table with every loaded
 * column of t plus (or replacing) the given ones. */
static int tbl_with(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  nsl_error err = {0};
  int64_t n;
  if (nsl_table_nrows(t, &n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  nsl_table *r = nsl_table_new();
  if (!r) return luaL_error(L, "out of memory");
  for (int i = 0; i < nsl_table_ncols(t); i++)
    if (nsl_table_is_loaded(t, i)) nsl_table_add(r, nsl_table_colname(t, i), nsl_table_column_at(t, i, &err), &err);
  nsl_table_set_nrows(r, n);
  push_derived(L, r);   /* owns r from here */
  for (int a = 2; a + 1 <= lua_gettop(L) - 1; a += 2) {
    const char *name = luaL_checkstring(L, a);
    nsl_column *c = nsl__tocolumn_any(L, a + 1, nsl__state_dict(L));
    int ok = nsl_table_add(r, name, c, &err) == NSL_OK;
    nsl_column_release(c);
    if (!ok) return nsl__lua_error(L, &err);
  }
  return 1;
}

/* t:nbytes() -> bytes held by loaded columns. */
static int tbl_bytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)nsl_table_bytes(nsl__checktable(L, 1)));
  return 1;
}

/* t:is_loaded(name) -> boolean */
static int tbl_is_loaded(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  lua_pushboolean(L, nsl_table_is_loaded(t, nsl_table_find(t, luaL_checkstring(L, 2))));
  return 1;
}

/* t:unload{"a", "b"} or t:unload("a", "b"); t:unload() for every column --
 * forgets loaded columns of a table that loads them (a trace's: they load
 * again when next read), so that an analysis done with them lowers its
 * peak; returns t.  Columns taken into other tables stay with those. */
static int tbl_unload(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  const char *names[256];
  int n = nsl__check_strings(L, 2, names, 256, "columns"), all = lua_gettop(L) < 2;
  nsl_error err = {0};
  for (int k = 0; k < (all ? nsl_table_ncols(t) : n); k++) {
    int i = all ? k : nsl_table_find(t, names[k]);
    if (i < 0) return luaL_error(L, "no column '%s' in this table", names[k]);
    if (nsl_table_is_loaded(t, i) && nsl_table_unload(t, i, &err) != NSL_OK) return nsl__lua_error(L, &err);
  }
  lua_settop(L, 1);
  return 1;
}

/* t:join(other, {"report", "corr"} [, {"name", "tid"} [, prefix]]) -> t plus
 * the named columns of other's matching row (NULL where none matches),
 * renamed prefix..name (prefix defaults to ""). */
static int tbl_join(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1), *o = nsl__checktable(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  const char *prefix = luaL_optstring(L, 5, "");
  int nk = (int)luaL_len(L, 3);
  luaL_argcheck(L, nk >= 1 && nk <= 8, 3, "1 to 8 key columns");
  const char *keys[8];
  for (int k = 0; k < nk; k++) {
    lua_geti(L, 3, k + 1);
    keys[k] = luaL_checkstring(L, -1);
    lua_pop(L, 1);
  }
  require_names(L, t, keys, nk);
  require_names(L, o, keys, nk);
  const nsl_column *lk[8], *rk[8];
  for (int k = 0; k < nk; k++) {
    lk[k] = checkcol(L, t, keys[k]);
    rk[k] = checkcol(L, o, keys[k]);
  }
  nsl_error err = {0};
  nsl_column *idx = nsl_join_index(lk, rk, nk, &err);
  if (!idx) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, idx);   /* anchored for error paths */
  const char *want[64];
  int nw = 0;
  if (lua_istable(L, 4)) {
    for (lua_Integer i = 1; i <= luaL_len(L, 4) && nw < 64; i++) {
      lua_geti(L, 4, i);
      want[nw++] = luaL_checkstring(L, -1);
      lua_pop(L, 1);
    }
  }
  require_names(L, o, want, nw);
  int64_t n;
  if (nsl_table_nrows(t, &n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  nsl_table *r = nsl_table_new();
  if (!r) return luaL_error(L, "out of memory");
  for (int i = 0; i < nsl_table_ncols(t); i++)
    if (nsl_table_is_loaded(t, i)) nsl_table_add(r, nsl_table_colname(t, i), nsl_table_column_at(t, i, &err), &err);
  nsl_table_set_nrows(r, n);
  push_derived(L, r);
  for (int k = 0; k < nw; k++) {
    nsl_column *g = nsl_column_gather(checkcol(L, o, want[k]), idx, &err);
    if (!g) return nsl__lua_error(L, &err);
    lua_pushfstring(L, "%s%s", prefix, want[k]);
    int ok = nsl_table_add(r, lua_tostring(L, -1), g, &err) == NSL_OK;
    lua_pop(L, 1);
    nsl_column_release(g);
    if (!ok) return nsl__lua_error(L, &err);
  }
  lua_pushvalue(L, -2);   /* also return the index column */
  return 2;
}

/* ---- group-by ---- */

static int grp_gc(lua_State *L) {
  lgroups *g = luaL_checkudata(L, 1, NSL_GROUPS_MT);
  nsl_groups_free(&g->g);
  nsl_table_release(g->keys);
  g->keys = NULL;
  nsl__gc_credit(L, g->charged);
  g->charged = 0;
  return 0;
}

/* The key columns t:group_by and t:count_distinct name from stack index 2
 * on (1 to 16 names; method `what`), loaded in one pass, into names and
 * keys: returns how many. */
static int key_args(lua_State *L, nsl_table *t, const char *what, const char **names, const nsl_column **keys) {
  int nkeys = lua_gettop(L) - 1;
  luaL_argcheck(L, nkeys >= 1 && nkeys <= 16, 2, lua_pushfstring(L, "%s needs 1 to 16 column names", what));
  for (int k = 0; k < nkeys; k++) names[k] = luaL_checkstring(L, k + 2);
  require_names(L, t, names, nkeys);
  for (int k = 0; k < nkeys; k++) keys[k] = checkcol(L, t, names[k]);
  return nkeys;
}

/* Pushes new, empty groups of the table at stack index 1 (their user value). */
static lgroups *push_groups(lua_State *L) {
  lgroups *g = lua_newuserdatauv(L, sizeof *g, 1);
  memset(g, 0, sizeof *g);
  luaL_setmetatable(L, NSL_GROUPS_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);   /* the grouped table */
  return g;
}

/* t:group_by("a", "b") -> groups; keys loaded in one pass. */
static int tbl_group_by(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  const char *names[16];
  const nsl_column *keys[16];
  int nkeys = key_args(L, t, "group_by", names, keys);
  lgroups *g = push_groups(L);
  nsl_error err = {0};
  if (nsl_groupby(keys, nkeys, &g->g, &err) != NSL_OK) return nsl__lua_error(L, &err);
  g->keys = nsl_table_new();
  if (!g->keys) return luaL_error(L, "out of memory");
  for (int k = 0; k < nkeys; k++) {
    nsl_column *kc = nsl_column_gather(keys[k], g->g.first_row, &err);
    if (!kc || nsl_table_add(g->keys, names[k], kc, &err) != NSL_OK) {
      nsl_column_release(kc);
      return nsl__lua_error(L, &err);
    }
    nsl_column_release(kc);
  }
  nsl_table_set_nrows(g->keys, g->g.ngroups);
  g->charged = nsl_column_bytes(g->g.group_of) + nsl_column_bytes(g->g.first_row) + nsl_table_bytes(g->keys);
  nsl__gc_charge(L, g->charged);
  return 1;
}

/* t:group_by_id("node", n) -> groups 0..n-1 given by the integer column
 * `node` (a negative id or NULL: the row is in no group), in that order,
 * empty ones included; their keys: `node` = 0..n-1.  No key is hashed. */
static int tbl_group_by_id(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  const char *name = luaL_checkstring(L, 2);
  lua_Integer n = luaL_checkinteger(L, 3);
  luaL_argcheck(L, n >= 0, 3, "the number of groups must be 0 or more");
  require_names(L, t, &name, 1);
  const nsl_column *ids = checkcol(L, t, name);
  lgroups *g = push_groups(L);
  nsl_error err = {0};
  if (nsl_groups_by_id(ids, (int64_t)n, &g->g, &err) != NSL_OK) return nsl__lua_error(L, &err);
  nsl_column *kc = nsl_column_new(NSL_I64, (int64_t)n, NULL);
  g->keys = nsl_table_new();
  if (!kc || !g->keys) {
    nsl_column_release(kc);
    return luaL_error(L, "out of memory");
  }
  for (lua_Integer i = 0; i < n; i++) nsl_i64(kc)[i] = (int64_t)i;
  int ok = nsl_table_add(g->keys, name, kc, &err) == NSL_OK;
  nsl_column_release(kc);
  if (!ok) return nsl__lua_error(L, &err);
  nsl_table_set_nrows(g->keys, (int64_t)n);
  g->charged = nsl_table_bytes(g->keys) + (ids->type == NSL_I64 ? 0 : nsl_column_bytes(g->g.group_of));
  nsl__gc_charge(L, g->charged);
  return 1;
}

static lgroups *checkgroups(lua_State *L, int idx) {
  lgroups *g = luaL_checkudata(L, idx, NSL_GROUPS_MT);
  if (!g->keys) luaL_argerror(L, idx, "groups already released");
  return g;
}

static int grp_len(lua_State *L) {
  lua_pushinteger(L, checkgroups(L, 1)->g.ngroups);
  return 1;
}

/* g:ids() -> i64 column: the group of every row (0-based). */
static int grp_ids(lua_State *L) {
  nsl__pushcolumn(L, nsl_column_retain(checkgroups(L, 1)->g.group_of));
  return 1;
}

/* g:first_rows() -> column: each group's first row (0-based), one row per group. */
static int grp_first_rows(lua_State *L) {
  nsl__pushcolumn(L, nsl_column_retain(checkgroups(L, 1)->g.first_row));
  return 1;
}

/* g:keys() -> table of the key columns, one row per group. */
static int grp_keys(lua_State *L) {
  lgroups *g = checkgroups(L, 1);
  nsl__pushtable(L, nsl_table_retain(g->keys), 0);
  return 1;
}

/* g:agg{"n=count", "total=sum(dur)", "med=median(dur)", "p99=quantile(dur, 0.99)"}
 * -> table: key columns, then one column per aggregate, in the given order. */
static int grp_agg(lua_State *L) {
  lgroups *g = checkgroups(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_getiuservalue(L, 1, 1);
  nsl_table *t = nsl__checktable(L, -1);
  int tidx = lua_gettop(L);
  lua_Integer n = luaL_len(L, 2);
  nsl_table *r = nsl_table_new();
  if (!r) return luaL_error(L, "out of memory");
  nsl_error err = {0};
  for (int i = 0; i < nsl_table_ncols(g->keys); i++)
    nsl_table_add(r, nsl_table_colname(g->keys, i), nsl_table_column_at(g->keys, i, &err), &err);
  nsl_table_set_nrows(r, g->g.ngroups);
  nsl__pushtable(L, r, tidx);
  /* First pass: which columns are needed, so they load together. */
  const char *need[64];
  int nneed = 0;
  char specs[64][3][400];
  double qs[64];
  nsl_agg aggs[64];
  luaL_argcheck(L, n <= 64, 2, "at most 64 aggregates");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    nsl__agg_item it;
    if (nsl__agg_parse(luaL_checkstring(L, -1), &it, &err) != NSL_OK) return nsl__lua_error(L, &err);
    memcpy(specs[i - 1][0], it.out, sizeof it.out);
    memcpy(specs[i - 1][2], it.col, sizeof it.col);
    aggs[i - 1] = it.agg;
    qs[i - 1] = it.q;
    if (it.col[0]) need[nneed++] = specs[i - 1][2];
    lua_pop(L, 1);
  }
  require_names(L, t, need, nneed);
  nsl_agg_spec as[64];
  nsl_column *res[64];
  for (lua_Integer i = 0; i < n; i++)   /* count(): count rows */
    as[i] = (nsl_agg_spec){specs[i][2][0] ? checkcol(L, t, specs[i][2]) : g->g.group_of, aggs[i], qs[i]};
  if (nsl_group_aggs(&g->g, as, (int)n, res, &err) != NSL_OK) return nsl__lua_error(L, &err);
  int ok = 1;
  for (lua_Integer i = 0; i < n; i++) {   /* the table takes its own reference */
    ok = ok && nsl_table_add(r, specs[i][0], res[i], &err) == NSL_OK;
    nsl_column_release(res[i]);
  }
  if (!ok) return nsl__lua_error(L, &err);
  charge_table(L, -1);
  return 1;
}

/* nsl.table{ {"name", column_or_array}, ... } or nsl.table(names, columns)
 * -> a new table from columns of equal length. */
static int l_table(lua_State *L) {
  nsl_table *r = nsl_table_new();
  nsl__pushtable(L, r, 0);
  nsl_error err = {0};
  if (lua_istable(L, 1) && lua_istable(L, 2)) {   /* names, columns */
    lua_Integer n = luaL_len(L, 1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, 1, i);
      const char *name = luaL_checkstring(L, -1);
      lua_geti(L, 2, i);
      nsl_column *c = nsl__tocolumn_any(L, -1, nsl__state_dict(L));
      int ok = nsl_table_add(r, name, c, &err) == NSL_OK;
      nsl_column_release(c);
      if (!ok) return nsl__lua_errorf(L, &err, "nsl.table: column '%s'", name);
      lua_pop(L, 2);
    }
  } else {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 1);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, 1, i);
      luaL_checktype(L, -1, LUA_TTABLE);
      lua_geti(L, -1, 1);
      const char *name = luaL_checkstring(L, -1);
      lua_geti(L, -2, 2);
      nsl_column *c = nsl__tocolumn_any(L, -1, nsl__state_dict(L));
      int ok = nsl_table_add(r, name, c, &err) == NSL_OK;
      nsl_column_release(c);
      if (!ok) return nsl__lua_errorf(L, &err, "nsl.table: column '%s'", name);
      lua_pop(L, 3);
    }
  }
  if (nsl_table_ncols(r) == 0) nsl_table_set_nrows(r, 0);
  lua_settop(L, lua_gettop(L));
  return 1;
}

/* t:count_distinct("a", "b", ...) -> the number of distinct tuples of those
 * columns (#t:group_by(...), NULL a value of its own), without a group id
 * per row. */
static int tbl_count_distinct(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  const char *names[16];
  const nsl_column *keys[16];
  int nkeys = key_args(L, t, "count_distinct", names, keys);
  nsl_error err = {0};
  int64_t n;
  if (nsl_count_distinct(keys, nkeys, &n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

static const luaL_Reg tbl_methods[] = {
    {"col", tbl_col},         {"columns", tbl_columns}, {"coltype", tbl_coltype}, {"load", tbl_load},     {"unload", tbl_unload},
    {"take", tbl_take},       {"filter", tbl_filter},   {"head", tbl_head},
    {"sort", tbl_sort},       {"order", tbl_order},     {"select", tbl_select},   {"with", tbl_with},
    {"nbytes", tbl_bytes},     {"is_loaded", tbl_is_loaded}, {"join", tbl_join},
    {"group_by", tbl_group_by}, {"group_by_id", tbl_group_by_id}, {"count_distinct", tbl_count_distinct}, {NULL, NULL}};

static const luaL_Reg tbl_meta[] = {{"__gc", tbl_gc},       {"__close", tbl_gc},
                                    {"__len", tbl_len},     {"__index", tbl_index},
                                    {NULL, NULL}};

static const luaL_Reg grp_methods[] = {{"agg", grp_agg},
                                       {"ids", grp_ids},
                                       {"first_rows", grp_first_rows},
                                       {"keys", grp_keys},
                                       {NULL, NULL}};

static const luaL_Reg grp_meta[] = {{"__gc", grp_gc}, {"__close", grp_gc}, {"__len", grp_len}, {NULL, NULL}};

static const luaL_Reg funcs[] = {{"table", l_table}, {NULL, NULL}};

/* Registers the table and groups metatables; adds nsl.table to the module
 * table on top of the stack. */
int nsl__open_table(lua_State *L) {
  nsl__register_type(L, NSL_TABLE_MT, tbl_meta, tbl_methods);
  nsl__register_type(L, NSL_GROUPS_MT, grp_meta, grp_methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
