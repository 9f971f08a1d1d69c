/* state.c -- the Lua state the commands run in: made with the nsl
 * libraries, every chunk run through one protected call with a traceback
 * handler (nsl__docall), SIGINT setting a hook instead of touching the
 * state, errors printed as one "nsl: message" (nsl__report); as lua.c. */
#include <signal.h>
#include <stdio.h>

#include <lauxlib.h>
#include <lualib.h>

#include "cli/cli.h"
#include "lua/lnsl.h"

static lua_State *globalL = NULL;   /* the state a SIGINT interrupts */

/* Stops a running script at the next hook point (SIGINT). */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

/* SIGINT during nsl__docall: arms lstop; a second SIGINT kills. */
static void laction(int i) {
  signal(i, SIG_DFL);
  if (globalL) lua_sethook(globalL, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

/* Message handler: the error message with a traceback. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Calls the function on the stack (nargs arguments, nres results) in
 * protected mode with the traceback handler and SIGINT armed. */
int nsl__docall(lua_State *L, int nargs, int nres) {
  int base = lua_gettop(L) - nargs;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  globalL = L;
  signal(SIGINT, laction);
  int status = lua_pcall(L, nargs, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

/* Prints the error on top of the stack as "nsl: message" and pops it;
 * returns status. */
int nsl__report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "nsl: %s\n", msg ? msg : "(no message)");
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

static int pmain(lua_State *L) {
  nsl__open_libs(L);
  return 0;
}

/* A new state with the nsl libraries open; NULL (said on stderr) when it
 * cannot be made. */
lua_State *nsl__new_state(void) {
  lua_State *L = luaL_newstate();
  if (!L) {
    fprintf(stderr, "nsl: cannot create the Lua state (out of memory?)\n");
    return NULL;
  }
  lua_pushcfunction(L, pmain);
  if (nsl__report(L, nsl__docall(L, 0, 0)) != LUA_OK) {
    lua_close(L);
    return NULL;
  }
  return L;
}
