/*
 * lprogress.c -- progress of long work for Lua analyses, and the cache's
 * controls: nsl.progress(what, total, unit) brackets work the front end may
 * show a progress line for (src/core/progress.c decides nothing about
 * showing; the CLI does), nsl.progress_status() tells a front end that
 * draws its own (nsl tui) what work is in flight and how far it got, and
 * nsl.cache_enabled() tells whether the columnar cache is on.
 *
 *   local p <close> = nsl.progress("matching ranges", #rows, "rows")
 *   for ... do ... p:add(n) end
 *   p:done()            -- also on __close and __gc; a second call does nothing
 */
#include <lauxlib.h>
#include <lua.h>

#include "core/nsl_internal.h"
#include "lua/lnsl.h"
#include "nsl/cache.h"

#define PROGRESS_MT "nsl.progress"

typedef struct lprogress {
  int open;
} lprogress;

/* nsl.progress(what [, total [, unit]]) -> a progress object. */
static int l_progress(lua_State *L) {
  const char *what = luaL_checkstring(L, 1);
  lua_Integer total = luaL_optinteger(L, 2, 0);
  const char *unit = luaL_optstring(L, 3, "");
  lprogress *p = lua_newuserdatauv(L, sizeof *p, 0);   /* the box first: an error leaves nothing open */
  p->open = 0;
  luaL_setmetatable(L, PROGRESS_MT);
  nsl__progress_begin(what, unit, (int64_t)total);
  p->open = 1;
  return 1;
}

static lprogress *check_progress(lua_State *L) { return luaL_checkudata(L, 1, PROGRESS_MT); }

/* p:add(n): n more units done. */
static int l_progress_add(lua_State *L) {
  lprogress *p = check_progress(L);
  lua_Integer n = luaL_checkinteger(L, 2);
  if (p->open && n > 0) nsl__progress_add((int64_t)n);
  lua_settop(L, 1);
  return 1;
}

/* p:done() (also __close, __gc): ends the bracket, once. */
static int l_progress_done(lua_State *L) {
  lprogress *p = check_progress(L);
  if (p->open) {
    p->open = 0;
    nsl__progress_end();
  }
  return 0;
}

/* nsl.cache_enabled() -> whether loads go through the columnar cache. */
static int l_cache_enabled(lua_State *L) {
  lua_pushboolean(L, nsl__state_open_options(L)->cache);
  return 1;
}

static const luaL_Reg methods[] = {{"add", l_progress_add}, {"done", l_progress_done}, {NULL, NULL}};
static const luaL_Reg metamethods[] = {{"__close", l_progress_done}, {"__gc", l_progress_done}, {NULL, NULL}};
/* nsl.progress_status() -> nil, or {what, done, total (0: unknown), unit,
 * elapsed (s)} of the long work in flight, on any thread (a background
 * load, an nsys export): what a front end shows while it waits. */
static int l_progress_status(lua_State *L) {
  nsl__progress_info p;
  if (!nsl__progress_snapshot(&p)) return 0;
  lua_createtable(L, 0, 5);
  lua_pushstring(L, p.what);
  lua_setfield(L, -2, "what");
  lua_pushinteger(L, p.done);
  lua_setfield(L, -2, "done");
  lua_pushinteger(L, p.total);
  lua_setfield(L, -2, "total");
  lua_pushstring(L, p.unit);
  lua_setfield(L, -2, "unit");
  lua_pushnumber(L, p.elapsed);
  lua_setfield(L, -2, "elapsed");
  return 1;
}

static const luaL_Reg funcs[] = {{"progress", l_progress},
                                 {"progress_status", l_progress_status},
                                 {"cache_enabled", l_cache_enabled},
                                 {NULL, NULL}};

int nsl__open_progress(lua_State *L) {
  nsl__register_type(L, PROGRESS_MT, metamethods, methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
