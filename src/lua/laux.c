/* laux.c -- the binding's helpers, as Lua keeps them in lauxlib.c: the
 * error objects and failure returns, the state's string dictionary and open
 * options (host state in the registry), and the registration of a userdata
 * type.  The "nsl.core" module and the loader of the Lua files: lnsl.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lualib.h>
#include "lua/embedded.h"
#include "lua/lnsl.h"
#include "core/nsl_internal.h"

/* ---- error objects ---------------------------------------------------- */

/* Raises an nsl error object: a table {message = ...} whose metatable is
 * "nsl.error".  These are failures of the input or the environment (a
 * corrupt file, out of memory), shown as one line without a traceback. */
static int error_tostring(lua_State *L) {
  lua_getfield(L, 1, "message");
  return 1;
}

/* Raises an nsl error object {message [, flag = true]} (flag: "internal",
 * "usage" or NULL). */
static int raise_error(lua_State *L, const char *msg, const char *flag) {
  lua_createtable(L, 0, 2);
  lua_pushstring(L, msg);
  lua_setfield(L, -2, "message");
  if (flag) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, flag);
  }
  if (luaL_newmetatable(L, "nsl.error")) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  return lua_error(L);
}

int nsl__raise(lua_State *L, const char *msg) { return raise_error(L, msg, NULL); }

int nsl__raise_usage(lua_State *L, const char *msg) { return raise_error(L, msg, "usage"); }

int nsl__lua_error(lua_State *L, const nsl_error *err) {
  return raise_error(L, err && err->msg[0] ? err->msg : "out of memory",
                     err && err->code == NSL_ERR_ARG ? "internal" : NULL);
}

int nsl__input_error(lua_State *L, const nsl_error *err) {
  return raise_error(L, err && err->msg[0] ? err->msg : "out of memory", NULL);
}

int nsl__lua_errorf(lua_State *L, const nsl_error *err, const char *fmt, ...) {
  nsl_error e = {err ? err->code : NSL_ERR_NOMEM, {0}};
  char what[256];   /* the message cut to its size by nsl_error_set */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  nsl_error_set(&e, e.code, "%s: %s", what, err && err->msg[0] ? err->msg : "out of memory");
  return nsl__lua_error(L, &e);
}

int nsl__push_fail(lua_State *L, const nsl_error *err) {
  lua_pushnil(L);
  lua_pushstring(L, err && err->msg[0] ? err->msg : "out of memory");
  return 2;
}

/* ---- the state's string dictionary ------------------------------------ */

typedef struct ldict {
  nsl_dict *d;
} ldict;

static const char DICT_KEY[] = "nsl.dict";
static const char OPTIONS_KEY[] = "nsl.open_options";

static int dict_gc(lua_State *L) {
  ldict *b = lua_touserdata(L, 1);
  nsl_dict_release(b->d);
  b->d = NULL;
  return 0;
}

int nsl__check_strings(lua_State *L, int idx, const char **out, int max, const char *what) {
  int n = 0;
  if (lua_istable(L, idx)) {
    lua_Integer len = luaL_len(L, idx);
    luaL_argcheck(L, len <= max, idx, lua_pushfstring(L, "at most %d %s", max, what));
    for (lua_Integer i = 1; i <= len; i++) {
      lua_geti(L, idx, i);
      out[n++] = luaL_checkstring(L, -1);
      lua_pop(L, 1);   /* the string stays alive in the array */
    }
  } else {
    int top = lua_gettop(L);
    luaL_argcheck(L, top - idx + 1 <= max, idx, lua_pushfstring(L, "at most %d %s", max, what));
    for (int i = idx; i <= top; i++) out[n++] = luaL_checkstring(L, i);
  }
  return n;
}

/* The state's shared dictionary: every trace and every string column made
 * in this Lua state uses it, so string ids compare across traces. */
nsl_dict *nsl__state_dict(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, DICT_KEY) == LUA_TUSERDATA) {
    nsl_dict *d = ((ldict *)lua_touserdata(L, -1))->d;
    lua_pop(L, 1);
    return d;
  }
  lua_pop(L, 1);
  ldict *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->d = NULL;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, dict_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  b->d = nsl_dict_new();
  if (!b->d) luaL_error(L, "out of memory");
  lua_setfield(L, LUA_REGISTRYINDEX, DICT_KEY);
  return b->d;
}

/* The state's open options: a registry userdata (no __gc: the nsys path
 * lives in it). */
typedef struct lopts {
  nsl_open_options o;
  char nsys[4096];
} lopts;

static lopts *state_opts(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, OPTIONS_KEY) == LUA_TUSERDATA) {
    lopts *p = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return p;
  }
  lua_pop(L, 1);
  lopts *p = lua_newuserdatauv(L, sizeof *p, 0);
  nsl_open_options_init(&p->o);
  p->nsys[0] = 0;
  lua_setfield(L, LUA_REGISTRYINDEX, OPTIONS_KEY);
  return p;
}

nsl_open_options *nsl__state_open_options(lua_State *L) { return &state_opts(L)->o; }

void nsl__state_set_nsys(lua_State *L, const char *nsys) {
  lopts *p = state_opts(L);
  if (nsys && strlen(nsys) >= sizeof p->nsys) luaL_error(L, "the nsys path is too long");
  snprintf(p->nsys, sizeof p->nsys, "%s", nsys ? nsys : "");
  p->o.nsys = p->nsys[0] ? p->nsys : NULL;
}

/* One metatable per userdata type, its methods both "methods" and (by
 * default) __index: see lnsl.h. */
void nsl__register_type(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods) {
  luaL_newmetatable(L, name);
  if (meta)
    luaL_setfuncs(L, meta, 0);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "methods");
  lua_getfield(L, -2, "__index");
  if (!lua_toboolean(L, -1)) {   /* none, or the placeholder false ({"__index", NULL} in meta) */
    lua_pop(L, 1);
    lua_setfield(L, -2, "__index");
  } else
    lua_pop(L, 2);
  lua_pop(L, 1);
}
