/* lregex.c -- regular expressions in Python `re` syntax for Lua:
 * nsl.regex(pattern [, "i"]) -> a compiled expression with :search(s) and
 * :posix(); c:regex(pattern [, "i"]) -> mask of a string column's rows that
 * match (each distinct string tested once, in C). */
#include <string.h>

#include "lua/lnsl.h"

#define NSL_REGEX_MT "nsl.regex"

typedef struct lregex {
  nsl_regex *re;
} lregex;

static int flags_of(lua_State *L, int idx) {
  const char *f = luaL_optstring(L, idx, "");
  int flags = 0;
  for (; *f; f++) {
    if (*f == 'i') flags |= NSL_REGEX_ICASE;
    else luaL_argerror(L, idx, "flags: only \"i\" (ignore case) is known");
  }
  return flags;
}

static lregex *checkregex(lua_State *L, int idx) {
  lregex *b = luaL_checkudata(L, idx, NSL_REGEX_MT);
  if (!b->re) luaL_argerror(L, idx, "regex already released");
  return b;
}

/* Pushes a compiled regex (box first, so an error never leaks); raises an
 * nsl error naming the pattern when it does not compile. */
static lregex *push_compiled(lua_State *L, const char *pattern, int flags) {
  lregex *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->re = NULL;
  luaL_setmetatable(L, NSL_REGEX_MT);
  nsl_error err = {0};
  if (nsl_regex_compile(&b->re, pattern, flags, &err) != NSL_OK) nsl__input_error(L, &err);
  return b;
}

/* nsl.regex(pattern [, flags]) -> regex */
static int l_regex(lua_State *L) {
  const char *pattern = luaL_checkstring(L, 1);
  push_compiled(L, pattern, flags_of(L, 2));
  return 1;
}

/* re:search(s) -> true when the expression matches somewhere in s. */
static int re_search(lua_State *L) {
  lregex *b = checkregex(L, 1);
  size_t len;
  const char *s = luaL_checklstring(L, 2, &len);
  lua_pushboolean(L, strlen(s) == len && nsl_regex_search(b->re, s));   /* embedded NUL: no match */
  return 1;
}

/* re:posix() -> the POSIX ERE the pattern was translated to. */
static int re_posix(lua_State *L) {
  lua_pushstring(L, nsl_regex_posix(checkregex(L, 1)->re));
  return 1;
}

static int re_gc(lua_State *L) {
  lregex *b = luaL_checkudata(L, 1, NSL_REGEX_MT);
  nsl_regex_free(b->re);
  b->re = NULL;
  return 0;
}

/* c:regex(pattern_or_regex [, flags]) -> mask of the rows that match. */
static int col_regex(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  if (c->type != NSL_STR) return luaL_error(L, "regex: not a string column");
  lregex *b = luaL_testudata(L, 2, NSL_REGEX_MT);
  if (!b) b = push_compiled(L, luaL_checkstring(L, 2), flags_of(L, 3));
  else if (!b->re) return luaL_argerror(L, 2, "regex already released");
  nsl_error err = {0};
  nsl_column *m = nsl_column_regex(c, b->re, &err);
  if (!m) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, m);
  return 1;
}

static const luaL_Reg methods[] = {{"search", re_search}, {"posix", re_posix}, {NULL, NULL}};
static const luaL_Reg meta[] = {{"__gc", re_gc}, {"__close", re_gc}, {NULL, NULL}};
static const luaL_Reg funcs[] = {{"regex", l_regex}, {NULL, NULL}};

/* Registers the regex metatable, adds c:regex to the column methods and
 * nsl.regex to the module table on top of the stack. */
int nsl__open_regex(lua_State *L) {
  nsl__register_type(L, NSL_REGEX_MT, meta, methods);
  luaL_getmetatable(L, NSL_COLUMN_MT);
  lua_getfield(L, -1, "methods");
  lua_pushcfunction(L, col_regex);
  lua_setfield(L, -2, "regex");
  lua_pop(L, 2);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
