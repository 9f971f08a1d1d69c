/* ltrace.c -- traces as Lua userdata: nsl.open(paths), trace.kernels,
 * trace:sql(report, query), trace:metadata(report), trace:tables(),
 * trace:inputs(), trace:report_rows(table), trace:derived / keep_derived /
 * keeps_derived
 * (columns derived from a report's rows, kept in the column cache); archive
 * members are trace:members / trace:member (lhlo.c). */
#include <stdlib.h>
#include <string.h>

#include "core/nsl_internal.h"
#include "core/rowfilter.h"
#include "lua/lnsl.h"

typedef struct ltrace {
  nsl_trace *tr;
} ltrace;

static nsl_trace *checktrace(lua_State *L, int idx) {
  ltrace *b = luaL_checkudata(L, idx, NSL_TRACE_MT);
  if (!b->tr) luaL_argerror(L, idx, "trace is closed");
  return b->tr;
}

nsl_trace *nsl__checktrace(lua_State *L, int idx) { return checktrace(L, idx); }

/* nsl.open(path, ...) or nsl.open{paths}, each with an option table last
 * ({cache = false}: loads bypass the column cache; nsys = the nsys that
 * exports .nsys-rep inputs) -> trace, or nil and the message; as work
 * (nsl__work: also nsl.background("open", ...)). */
typedef struct open_work {
  char **paths;
  int n;
  nsl_open_options opts;   /* the state's, opts.nsys a copy of its own (the work may run on another thread) */
  nsl_trace *tr;
  nsl_status rc;
  nsl_error err;
} open_work;

/* The options of nsl.open at stack index idx (a table: cache = boolean, nsys = string) into *o. */
static void open_options(lua_State *L, int idx, nsl_open_options *o) {
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    if (strcmp(k, "cache") == 0) {
      luaL_argcheck(L, lua_isboolean(L, -1), idx, "nsl.open: option cache must be true or false");
      o->cache = lua_toboolean(L, -1);
    } else if (strcmp(k, "nsys") == 0) {
      luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, idx, "nsl.open: option nsys must be a string");
      o->nsys = lua_tostring(L, -1);   /* (copied below, while the table holds it) */
    } else
      luaL_error(L, "nsl.open: unknown option '%s' (cache, nsys)", lua_type(L, -2) == LUA_TSTRING ? k : "?");
    lua_pop(L, 1);
  }
}

static void open_prepare(lua_State *L, int first, void *p) {
  open_work *w = p;
  const char *paths[1024];
  int top = lua_gettop(L), n = 0;
  int opts = top > first && lua_istable(L, top) ? top : 0;   /* nsl.open(paths..., {options}) */
  w->opts = *nsl__state_open_options(L);
  if (opts) open_options(L, opts, &w->opts);
  if (lua_istable(L, first)) {
    luaL_argcheck(L, top == first || (opts && top == first + 1), first + 1,
                  "nsl.open{paths} takes an option table alone after it");
    n = nsl__check_strings(L, first, paths, 1024, "reports");
  } else {
    int last = opts ? opts - 1 : top;
    luaL_argcheck(L, last - first + 1 <= 1024, first, "at most 1024 reports");
    for (int i = first; i <= last; i++) paths[n++] = luaL_checkstring(L, i);
  }
  if (n == 0) luaL_error(L, "nsl.open: no file given");
  char **copy = calloc((size_t)n, sizeof *copy);
  for (int i = 0; copy && i < n; i++)
    if (!(copy[i] = strdup(paths[i]))) {
      while (i-- > 0) free(copy[i]);
      free(copy);
      copy = NULL;
    }
  if (!copy) luaL_error(L, "out of memory");
  w->paths = copy;
  w->n = n;
  if (w->opts.nsys && !(w->opts.nsys = strdup(w->opts.nsys))) luaL_error(L, "out of memory");
}

static void open_run(void *p) {
  open_work *w = p;
  w->rc = nsl_trace_open(&w->tr, (const char *const *)w->paths, w->n, &w->opts, &w->err);
}

static int open_push(lua_State *L, void *p) {
  open_work *w = p;
  if (w->rc != NSL_OK) {
    return nsl__push_fail(L, &w->err);
  }
  nsl_trace **slot = nsl__newtrace(L);
  *slot = w->tr;   /* the box owns it from here */
  w->tr = NULL;
  nsl_error err = {0};
  if (nsl_trace_set_dict(*slot, nsl__state_dict(L), &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 1;
}

static void open_release(void *p) {
  open_work *w = p;
  for (int i = 0; i < w->n; i++) free(w->paths[i]);
  free(w->paths);
  free((char *)w->opts.nsys);
  nsl_trace_close(w->tr);
}

const nsl__work nsl__work_open = {"open", sizeof(open_work), open_prepare, open_run, open_push, open_release};

static int l_open(lua_State *L) { return nsl__work_now(L, &nsl__work_open, 1); }

nsl_trace **nsl__newtrace(lua_State *L) {
  nsl__state_dict(L);
  ltrace *b = lua_newuserdatauv(L, sizeof *b, 1);   /* box first: no leak on error */
  b->tr = NULL;
  luaL_setmetatable(L, NSL_TRACE_MT);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 1);   /* cache of table userdata */
  return &b->tr;
}

static int tr_gc(lua_State *L) {
  ltrace *b = luaL_checkudata(L, 1, NSL_TRACE_MT);
  nsl_trace_close(b->tr);
  b->tr = NULL;
  return 0;
}

/* trace:table(name) -> the data-model table (same userdata each time). */
static int tr_table(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  const char *name = luaL_checkstring(L, 2);
  lua_getiuservalue(L, 1, 1);
  if (lua_getfield(L, -1, name) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  nsl_table *t = NULL;
  nsl_error err = {0};
  nsl_status rc = nsl_trace_table(tr, name, &t, &err);
  if (rc == NSL_ERR_NOTFOUND) return nsl__push_fail(L, &err);
  if (rc != NSL_OK) return nsl__input_error(L, &err);
  nsl__pushtable(L, nsl_table_retain(t), 1);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  return 1;
}

static int tr_index(lua_State *L) {
  checktrace(L, 1);
  luaL_getmetatable(L, NSL_TRACE_MT);
  lua_getfield(L, -1, "methods");
  lua_pushvalue(L, 2);
  if (lua_rawget(L, -2) != LUA_TNIL || lua_type(L, 2) != LUA_TSTRING) return 1;
  lua_settop(L, 2);
  for (const char *const *n = nsl_model_tables(); *n; n++)
    if (strcmp(*n, lua_tostring(L, 2)) == 0) {
      if (tr_table(L) == 2) lua_pop(L, 1);   /* nil, message -> nil */
      return 1;
    }
  lua_pushnil(L);
  return 1;
}

/* trace:tables() -> names of the data-model tables. */
static int tr_tables(lua_State *L) {
  checktrace(L, 1);
  lua_newtable(L);
  int i = 1;
  for (const char *const *n = nsl_model_tables(); *n; n++) {
    lua_pushstring(L, *n);
    lua_seti(L, -2, i++);
  }
  return 1;
}

/* trace:inputs() -> the paths the trace was opened from (exports, bundles). */
static int tr_inputs(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  int n = nsl_trace_ninputs(tr);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, nsl_trace_input_path(tr, i));
    lua_seti(L, -2, i + 1);
  }
  return 1;
}

static int tr_nreports(lua_State *L) {
  lua_pushinteger(L, nsl_trace_nreports(checktrace(L, 1)));
  return 1;
}

typedef struct sql_ctx {
  lua_State *L;
  lua_Integer row;
  lua_Integer limit;
} sql_ctx;

static int sql_row(void *p, int ncols, const char *const *names, const nsl_sql_value *v) {
  sql_ctx *c = p;
  lua_State *L = c->L;
  lua_createtable(L, 0, ncols);
  for (int k = 0; k < ncols; k++) {
    switch (v[k].type) {
    case 1: lua_pushinteger(L, v[k].i); break;
    case 2: lua_pushnumber(L, v[k].d); break;
    case 3:
    case 4: lua_pushlstring(L, v[k].s, v[k].len); break;
    default: lua_pushnil(L); break;
    }
    lua_setfield(L, -2, names[k]);
  }
  lua_seti(L, -2, ++c->row);
  return c->limit > 0 && c->row >= c->limit;
}

/* trace:sql(report, query [, limit]) -> array of rows {column = value};
 * report counts from 0, as every report index; read-only statements only. */
static int tr_sql(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  lua_Integer r = luaL_checkinteger(L, 2);
  const char *q = luaL_checkstring(L, 3);
  luaL_argcheck(L, r >= 0 && r < nsl_trace_nreports(tr), 2, "no such report");
  sql_ctx c = {L, 0, luaL_optinteger(L, 4, 0)};
  lua_newtable(L);
  nsl_error err = {0};
  if (nsl_trace_sql(tr, (int)r, q, sql_row, &c, &err) != NSL_OK) return nsl__input_error(L, &err);
  return 1;
}

static int set_metadata(void *ctx, const char *name, const char *value) {
  lua_State *L = ctx;
  lua_pushstring(L, value);
  lua_setfield(L, -2, name);
  return 0;
}

/* trace:metadata(report) -> {name = value} of what the report records about
 * its capture (an nsys export's META_DATA_CAPTURE; {} when it has none);
 * report is 0-based, as the `report` column and trace:members. */
static int tr_metadata(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  lua_Integer r = luaL_checkinteger(L, 2);
  luaL_argcheck(L, r >= 0 && r < nsl_trace_nreports(tr), 2, "no such report");
  lua_newtable(L);
  nsl_error err = {0};
  if (nsl_trace_metadata(tr, (int)r, set_metadata, L, &err) != NSL_OK) return nsl__input_error(L, &err);
  return 1;
}

/* The report a selector names: a report's name (as `nsl info` lists it),
 * else a 0-based index written in decimal; -1 when none. */
static int report_named(const nsl_trace *tr, const char *sel) {
  int n = nsl_trace_nreports(tr);
  for (int i = 0; i < n; i++)
    if (strcmp(nsl_trace_report(tr, i)->name, sel) == 0) return i;
  char *end = NULL;
  long v = *sel >= '0' && *sel <= '9' ? strtol(sel, &end, 10) : -1;
  return end && *end == '\0' && v >= 0 && v < n ? (int)v : -1;
}

/* trace:keep_reports{sel, ...} -> true, or nil and the message: keeps only
 * the reports named (names or 0-based indices; nsl_trace_keep_reports,
 * before any table is loaded), renumbered 0.. in trace order.  An unknown
 * name's message lists the reports and the closest name. */
static int tr_keep_reports(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  const char *sels[1024];
  int n = nsl__check_strings(L, 2, sels, 1024, "reports");
  int nr = nsl_trace_nreports(tr);
  int *keep = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *keep, 0);
  for (int k = 0; k < n; k++) {
    if ((keep[k] = report_named(tr, sels[k])) >= 0) continue;
    const char **names = lua_newuserdatauv(L, (size_t)(nr > 0 ? nr : 1) * sizeof *names, 0);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushfstring(L, "no report '%s': the reports are ", sels[k]);
    luaL_addvalue(&b);
    for (int i = 0; i < nr; i++) {
      names[i] = nsl_trace_report(tr, i)->name;
      if (i < 20) {
        if (i) luaL_addstring(&b, ", ");
        luaL_addstring(&b, names[i]);
      }
    }
    if (nr > 20) {
      lua_pushfstring(L, " and %d more", nr - 20);
      luaL_addvalue(&b);
    }
    lua_pushfstring(L, " (by name, or 0 to %d)", nr - 1);
    luaL_addvalue(&b);
    const char *near = nsl__closest(sels[k], names, nr);
    if (near) {
      lua_pushfstring(L, "; did you mean '%s'?", near);
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  nsl_error err = {0};
  if (nsl_trace_keep_reports(tr, keep, n, &err) != NSL_OK) {
    return nsl__push_fail(L, &err);
  }
  lua_pushboolean(L, 1);
  return 1;
}

const nsl__row_cond *nsl__check_row_conds(lua_State *L, int idx, int *n) {
  static const char *const ops[] = {"==", "~=", "<", "<=", ">", ">=", "match", "imatch", "in", NULL};
  static const int codes[] = {NSL_EQ, NSL_NE, NSL_LT, NSL_LE, NSL_GT, NSL_GE, NSL__ROW_MATCH, NSL__ROW_IMATCH,
                              NSL__ROW_IN};
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer nc = luaL_len(L, idx);
  luaL_argcheck(L, nc >= 0 && nc <= 64, idx, "at most 64 conditions");
  nsl__row_cond *conds = lua_newuserdatauv(L, (size_t)(nc ? nc : 1) * sizeof *conds, 0);
  for (lua_Integer i = 1; i <= nc; i++) {   /* the strings and values stay on the stack until the call */
    nsl__row_cond *c = &conds[i - 1];
    luaL_checkstack(L, 8, "row conditions");
    if (lua_geti(L, idx, i) != LUA_TTABLE) luaL_error(L, "row filter: condition %d is not {column, op, value}", (int)i);
    int at = lua_gettop(L);
    lua_geti(L, at, 1);
    c->column = luaL_checkstring(L, -1);
    lua_geti(L, at, 2);
    c->op = codes[luaL_checkoption(L, -1, NULL, ops)];
    lua_geti(L, at, 4);
    c->or_null = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "or null") == 0;
    lua_geti(L, at, 3);
    c->pattern = NULL;
    c->values = NULL;
    c->nvalues = 0;
    if (c->op == NSL__ROW_MATCH || c->op == NSL__ROW_IMATCH) {
      c->pattern = luaL_checkstring(L, -1);
    } else if (c->op == NSL__ROW_IN) {
      luaL_checktype(L, -1, LUA_TTABLE);
      lua_Integer nv = luaL_len(L, -1);
      luaL_argcheck(L, nv >= 0 && nv <= (1 << 24), idx, "too many values in a set");
      int64_t *v = lua_newuserdatauv(L, (size_t)(nv ? nv : 1) * sizeof *v, 0);
      for (lua_Integer k = 1; k <= nv; k++) {
        lua_geti(L, -2, k);
        v[k - 1] = (int64_t)luaL_checkinteger(L, -1);
        lua_pop(L, 1);
      }
      c->values = v;
      c->nvalues = (int)nv;
    } else {
      int64_t *v = lua_newuserdatauv(L, sizeof *v, 0);
      *v = (int64_t)luaL_checkinteger(L, -2);
      c->values = v;
      c->nvalues = 1;
    }
  }
  *n = (int)nc;
  return conds;
}

/* trace:filter(table, conds) (before any table is read): the trace's
 * `table` holds only the rows passing every condition
 * (nsl__check_row_conds), evaluated where the rows are read; a later call
 * for the same table replaces the earlier one. */
static int tr_filter(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  const char *table = luaL_checkstring(L, 2);
  int n = 0;
  const nsl__row_cond *conds = nsl__check_row_conds(L, 3, &n);
  nsl_error err = {0};
  if (nsl__trace_filter(tr, table, conds, n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 0;
}

/* tr:report_rows(table) -> the table's rows in each report, an array
 * (report r + 1 at [r + 1]). */
static int tr_report_rows(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  const char *name = luaL_checkstring(L, 2);
  int n = nsl_trace_nreports(tr);
  int64_t *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
  if (!rows) return luaL_error(L, "out of memory");
  nsl_error err = {0};
  if (nsl_trace_report_rows(tr, name, rows, &err) != NSL_OK) {
    free(rows);
    return nsl__input_error(L, &err);
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)rows[i]);
    lua_rawseti(L, -2, i + 1);
  }
  free(rows);
  return 1;
}

static const char *const derived_types[] = {"i64", "i32", "f64", "bool", NULL};
static const nsl_type derived_type_of[] = {NSL_I64, NSL_I32, NSL_F64, NSL_BOOL};

/* tr:derived(report, table, name, type, rows) -> the column that
 * tr:keep_derived kept for report (0-based) under (table, name), of that
 * type ("i64", "i32", "f64", "bool") and number of rows, or nil: none kept
 * (no cache, a filtered trace, another build, not that shape).  What a
 * deriver reads back is the file of a folder others may write: it checks
 * the values before it trusts them. */
static int tr_derived(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  lua_Integer r = luaL_checkinteger(L, 2);
  const char *table = luaL_checkstring(L, 3), *name = luaL_checkstring(L, 4);
  nsl_type type = derived_type_of[luaL_checkoption(L, 5, NULL, derived_types)];
  lua_Integer rows = luaL_checkinteger(L, 6);
  luaL_argcheck(L, r >= 0 && r < nsl_trace_nreports(tr), 2, "no such report");
  nsl_column *c = nsl_trace_derived_get(tr, (int)r, table, name, type, rows);
  if (!c) {
    lua_pushnil(L);
    return 1;
  }
  nsl__pushcolumn(L, c);
  return 1;
}

/* tr:derived_many{{report, table, name, type, rows}, ...} -> a list of the
 * answers tr:derived would give, in order (false for none), read side by
 * side (nsl_trace_derived_get_many). */
static int tr_derived_many(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 0 && n <= 4096, 2, "at most 4096 columns");
  nsl_derived_ask *d = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *d, 0);   /* freed by the collector */
  for (lua_Integer k = 0; k < n; k++) {
    lua_geti(L, 2, k + 1);
    luaL_argcheck(L, lua_istable(L, -1), 2, "each column asked is {report, table, name, type, rows}");
    int top = lua_gettop(L);
    for (int f = 1; f <= 5; f++) lua_geti(L, top, f);
    lua_Integer r = luaL_checkinteger(L, top + 1);
    luaL_argcheck(L, r >= 0 && r < nsl_trace_nreports(tr), 2, "no such report");
    d[k] = (nsl_derived_ask){(int)r, luaL_checkstring(L, top + 2), luaL_checkstring(L, top + 3),
                             derived_type_of[luaL_checkoption(L, top + 4, NULL, derived_types)],
                             (int64_t)luaL_checkinteger(L, top + 5), NULL};
    lua_pop(L, 6);   /* (the strings stay alive in the list, argument 2) */
  }
  nsl_trace_derived_get_many(tr, d, (int)n);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer k = 0; k < n; k++) {
    if (d[k].col) nsl__pushcolumn(L, d[k].col);
    else lua_pushboolean(L, 0);
    lua_seti(L, -2, k + 1);
  }
  return 1;
}

/* tr:keep_derived(report, table, name, column): keeps column (not of
 * strings), derived from report's rows alone, for tr:derived in later runs
 * of this build on this input (nothing without a cache folder). */
static int tr_keep_derived(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  lua_Integer r = luaL_checkinteger(L, 2);
  const char *table = luaL_checkstring(L, 3), *name = luaL_checkstring(L, 4);
  nsl_column *c = nsl__checkcolumn(L, 5);
  luaL_argcheck(L, r >= 0 && r < nsl_trace_nreports(tr), 2, "no such report");
  luaL_argcheck(L, c->type != NSL_STR, 5, "a column of strings is not kept");
  nsl_trace_derived_put(tr, (int)r, table, name, c);
  return 0;
}

/* tr:keeps_derived(report) -> whether tr:keep_derived keeps anything for
 * report (0-based) in this trace: a cache folder, no --from/--to/--device. */
static int tr_keeps_derived(lua_State *L) {
  nsl_trace *tr = checktrace(L, 1);
  lua_pushboolean(L, nsl_trace_keeps_derived(tr, (int)luaL_checkinteger(L, 2)));
  return 1;
}

static const luaL_Reg tr_methods[] = {{"table", tr_table}, {"tables", tr_tables}, {"nreports", tr_nreports},
                                      {"inputs", tr_inputs}, {"sql", tr_sql},     {"metadata", tr_metadata},
                                      {"close", tr_gc}, {"keep_reports", tr_keep_reports},
                                      {"filter", tr_filter}, {"report_rows", tr_report_rows},
                                      {"derived", tr_derived}, {"derived_many", tr_derived_many},
                                      {"keep_derived", tr_keep_derived},
                                      {"keeps_derived", tr_keeps_derived},
                                      {NULL, NULL}};

static const luaL_Reg tr_meta[] = {{"__gc", tr_gc}, {"__close", tr_gc}, {"__index", tr_index}, {NULL, NULL}};

static const luaL_Reg funcs[] = {{"open", l_open}, {NULL, NULL}};

int nsl__open_trace(lua_State *L) {
  nsl__register_type(L, NSL_TRACE_MT, tr_meta, tr_methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
