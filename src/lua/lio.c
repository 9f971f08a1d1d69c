/* lio.c -- file helpers for Lua: nsl.write_file (atomic), nsl.mkdir_p. */
#include "lua/lnsl.h"
#include "nsl/nsl_io.h"

/* nsl.write_file(path, data) -> true, or nil and a message. */
static int l_write_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  nsl_error err = {0};
  if (nsl_write_file_atomic(path, data, len, &err) != NSL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* nsl.mkdir_p(path) -> true, or nil and a message. */
static int l_mkdir_p(lua_State *L) {
  nsl_error err = {0};
  if (nsl_mkdir_p(luaL_checkstring(L, 1), &err) != NSL_OK) {
    lua_pushnil(L);
    lua_pushstring(L, err.msg);
    return 2;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg funcs[] = {{"write_file", l_write_file}, {"mkdir_p", l_mkdir_p}, {NULL, NULL}};

int nsl__open_io(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
