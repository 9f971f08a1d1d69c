/* lnsl.c -- the "nsl.core" module and the loader of the Lua files compiled
 * into the binary (or found under NSL_LUA_PATH during development), as Lua
 * keeps linit.c apart from lauxlib.c; the helpers: laux.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lualib.h>
#include "lua/embedded.h"
#include "lua/lnsl.h"
#include "core/nsl_internal.h"
#include "core/big_alloc.h"

/* ---- nsl.core ----------------------------------------------------------- */

static int l_version(lua_State *L) {
  lua_pushstring(L, nsl_version());
  return 1;
}

/* nsl.trim_memory() -- gives back to the system the memory freed but held
 * for reuse (nsl__big_trim), at the end of a phase whose blocks the next
 * would not reuse. */
static int l_trim_memory(lua_State *L) {
  (void)L;
  nsl__big_trim();
  return 0;
}

/* nsl.core.metatables() -> {column=, table=, trace=, groups=, intervals=}
 * method tables, so Lua modules can add methods written in Lua. */
static int l_methods(lua_State *L) {
  static const char *const mts[][2] = {{"column", NSL_COLUMN_MT}, {"table", NSL_TABLE_MT}, {"trace", NSL_TRACE_MT},
                                       {"groups", NSL_GROUPS_MT}, {"intervals", NSL_IV_MT},
                                       {"canvas", NSL_CANVAS_MT}};
  lua_newtable(L);
  for (size_t i = 0; i < sizeof mts / sizeof *mts; i++) {
    luaL_getmetatable(L, mts[i][1]);
    lua_getfield(L, -1, "methods");
    lua_setfield(L, -3, mts[i][0]);
    lua_pop(L, 1);
  }
  return 1;
}

/* nsl.core.metatable(name) -> the metatable itself (e.g. to set __tostring). */
static int l_metatable(lua_State *L) {
  lua_pushfstring(L, "nsl.%s", luaL_checkstring(L, 1));
  luaL_getmetatable(L, lua_tostring(L, -1));
  return 1;
}

/* nsl.core.type(v) -> "column" | "table" | "trace" | "groups" | "intervals" | "canvas" | nil */
static int l_type(lua_State *L) {
  static const char *const mts[][2] = {{"column", NSL_COLUMN_MT}, {"table", NSL_TABLE_MT}, {"trace", NSL_TRACE_MT},
                                       {"groups", NSL_GROUPS_MT}, {"intervals", NSL_IV_MT},
                                       {"canvas", NSL_CANVAS_MT}};
  for (size_t i = 0; i < sizeof mts / sizeof *mts; i++)
    if (luaL_testudata(L, 1, mts[i][1])) {
      lua_pushstring(L, mts[i][0]);
      return 1;
    }
  lua_pushnil(L);
  return 1;
}

/* nsl.core.embedded() -> array of the paths of embedded Lua files. */
static int l_embedded(lua_State *L) {
  lua_newtable(L);
  for (int i = 0; nsl__lua_files[i].path; i++) {
    lua_pushstring(L, nsl__lua_files[i].path);
    lua_seti(L, -2, i + 1);
  }
  return 1;
}

/* Looks up "lua/<rel>" on disk under NSL_LUA_PATH, then among the embedded
 * files; pushes the loaded chunk or returns 0. rel is e.g. "nsl/report.lua". */
static int load_lua_file(lua_State *L, const char *rel) {
  const char *dev = getenv("NSL_LUA_PATH");
  if (dev && *dev) {
    lua_pushfstring(L, "%s/%s", dev, rel);
    FILE *f = fopen(lua_tostring(L, -1), "rb");
    if (f) {
      fclose(f);
      int rc = luaL_loadfilex(L, lua_tostring(L, -1), "t");
      lua_remove(L, -2);
      if (rc != LUA_OK) lua_error(L);
      return 1;
    }
    lua_pop(L, 1);
  }
  for (int i = 0; nsl__lua_files[i].path; i++) {
    const char *p = nsl__lua_files[i].path;
    if (strncmp(p, "lua/", 4) == 0 && strcmp(p + 4, rel) == 0) {
      lua_pushfstring(L, "@%s", p);
      int rc = luaL_loadbufferx(L, nsl__lua_files[i].source, nsl__lua_files[i].len, lua_tostring(L, -1), "t");
      lua_remove(L, -2);
      if (rc != LUA_OK) lua_error(L);
      return 1;
    }
  }
  return 0;
}

/* package.searchers entry: module "nsl.report" -> lua/nsl/report.lua,
 * "nsl" -> lua/nsl/init.lua, "analyses.summary" -> lua/analyses/summary.lua. */
static int searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (const char *p = name; *p; p++) luaL_addchar(&b, *p == '.' ? '/' : *p);
  luaL_pushresult(&b);
  const char *base = lua_tostring(L, -1);
  lua_pushfstring(L, "%s.lua", base);
  if (load_lua_file(L, lua_tostring(L, -1))) {
    lua_pushfstring(L, "lua/%s.lua", base);
    return 2;
  }
  lua_pushfstring(L, "%s/init.lua", base);
  if (load_lua_file(L, lua_tostring(L, -1))) {
    lua_pushfstring(L, "lua/%s/init.lua", base);
    return 2;
  }
  lua_pushfstring(L, "\n\tno embedded file 'lua/%s.lua'", base);
  return 1;
}

/* nsl.core.embedded_file(path) -> the text of an embedded file (e.g.
 * "notebooks/analysis.md"), or nil. */
static int l_embedded_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  for (int i = 0; nsl__lua_files[i].path; i++)
    if (strcmp(nsl__lua_files[i].path, path) == 0) {
      lua_pushlstring(L, nsl__lua_files[i].source, nsl__lua_files[i].len);
      return 1;
    }
  lua_pushnil(L);
  return 1;
}

/* nsl.core.load_embedded(rel) -> chunk or nil (e.g. "analyses/summary.lua"). */
static int l_load_embedded(lua_State *L) {
  if (!load_lua_file(L, luaL_checkstring(L, 1))) lua_pushnil(L);
  return 1;
}

/* Adds the searcher for embedded files and NSL_LUA_PATH after preload. */
static void install_searcher(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "searchers");
  lua_Integer n = luaL_len(L, -1);
  for (lua_Integer i = n; i >= 2; i--) {   /* insert at position 2, after preload */
    lua_geti(L, -1, i);
    lua_seti(L, -2, i + 1);
  }
  lua_pushcfunction(L, searcher);
  lua_seti(L, -2, 2);
  lua_pop(L, 2);
}

/* nsl.fail(message) -- raises an nsl error: a failure of the input or the
 * environment, reported as one line without a traceback. */
/* nsl.fail(msg [, "usage"]): raises an nsl error object {message}; "usage"
 * marks a value the analysis rejects (out of range, bad format, not one of
 * its choices): usage = true, and the run exits 2, as for any usage error. */
static int l_fail(lua_State *L) {
  static const char *const kinds[] = {"input", "usage", NULL};
  const char *msg = luaL_checkstring(L, 1);
  return luaL_checkoption(L, 2, "input", kinds) == 1 ? nsl__raise_usage(L, msg) : nsl__raise(L, msg);
}

/* nsl.is_error(e) -> true when e is an nsl error object ({message}, and
 * internal = true when a kernel refused its arguments: see nsl__lua_error). */
static int l_is_error(lua_State *L) {
  int is = 0;
  if (lua_getmetatable(L, 1)) {
    luaL_getmetatable(L, "nsl.error");
    is = lua_rawequal(L, -1, -2);
  }
  lua_pushboolean(L, is);
  return 1;
}

/* nsl.closest(word, {names...}) -> the name word is likely a misspelling
 * of ("did you mean"), or nil. */
static int l_closest(lua_State *L) {
  const char *word = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 0 && n <= 100000, 2, "too many names");
  const char **names = lua_newuserdatauv(L, sizeof *names * (size_t)(n + 1), 0);
  for (lua_Integer i = 0; i < n; i++) {
    lua_geti(L, 2, i + 1);
    names[i] = lua_tostring(L, -1);   /* kept alive by the table */
    lua_pop(L, 1);
  }
  const char *best = nsl__closest(word, names, (int)n);
  if (best) lua_pushstring(L, best);
  else lua_pushnil(L);
  return 1;
}

static const luaL_Reg funcs[] = {{"fail", l_fail}, {"is_error", l_is_error}, {"version", l_version},   {"methods", l_methods},
                                 {"closest", l_closest},     {"metatable", l_metatable}, {"type", l_type},
                                 {"embedded", l_embedded}, {"load_embedded", l_load_embedded},
                                 {"embedded_file", l_embedded_file}, {"trim_memory", l_trim_memory},
                                 {NULL, NULL}};

void nsl__open_libs(lua_State *L) {
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_nsl_core);
  lua_setfield(L, -2, "nsl.core");
  lua_pop(L, 1);
  install_searcher(L);
}

int luaopen_nsl_core(lua_State *L) {
  luaL_newlib(L, funcs);
  nsl__open_column(L);
  nsl__open_table(L);
  nsl__open_trace(L);
  nsl__open_intervals(L);
  nsl__open_io(L);
  nsl__open_bundle(L);
  nsl__open_sys(L);
  nsl__open_progress(L);
  nsl__open_regex(L);
  nsl__open_overlap(L);
  nsl__open_sweep(L);
  nsl__open_jax(L);
  nsl__open_hlo(L);
  nsl__open_render(L);
  nsl__open_binning(L);
  nsl__open_lod(L);
  nsl__open_job(L);
  nsl__open_curses(L);
  nsl__open_mpi(L);
  return 1;
}
