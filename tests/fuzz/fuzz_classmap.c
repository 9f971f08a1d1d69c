/* fuzz_classmap.c -- libFuzzer harness: the bytes are a kernel class map
 * (JSON: vLLM gputrc2graph maps or GPU Performance Analyzer's
 * kernel_to_class_map) loaded by nsl.classes through the Lua JSON reader
 * and the regex compiler, inside the Lua runtime nsl runs.  A bad file must
 * come back as nil and a message; a Lua error raised instead (an index of
 * nil, a stack overflow) is a defect and aborts, as a crash would. */
#define _GNU_SOURCE   /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <lauxlib.h>

#include "lua/lnsl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lua_State *L;
static int file = -1;      /* a memory file the class map is written to (classes.load takes a path) */
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  L = luaL_newstate();
  nsl__open_libs(L);   /* as the CLI's state */
  if (luaL_dostring(L, "classes = require('nsl.classes')") != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    abort();
  }
  file = memfd_create("classmap.json", 0);
  if (file < 0) abort();
  snprintf(path, sizeof path, "/proc/self/fd/%d", file);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (ftruncate(file, 0) != 0 || pwrite(file, data, size, 0) != (ssize_t)size) abort();
  lua_getglobal(L, "classes");
  lua_getfield(L, -1, "load");
  lua_pushstring(L, path);
  if (lua_pcall(L, 1, 2, 0) != LUA_OK) {
    fprintf(stderr, "classes.load raised instead of returning nil, message: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_settop(L, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
