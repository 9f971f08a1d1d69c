/* embedded.h -- the Lua files compiled into the binary (generated table). */
#ifndef NSL_LUA_EMBEDDED_H
#define NSL_LUA_EMBEDDED_H
#include <stddef.h>

struct nsl_embedded_file {
  const char *path;     /* "lua/nsl/report.lua" */
  const char *source;
  size_t len;
};
extern const struct nsl_embedded_file nsl__lua_files[];

#endif
