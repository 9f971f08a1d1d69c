/* analyses_harness.h -- the body of the libFuzzer harnesses that drive the
 * shipped analyses (fuzz_analyses_sqlite.c, fuzz_analyses_csv.c): the bytes
 * are written to a memory file, opened as a trace by nsl.open as the CLI
 * would, and diagnose, classes and summary run on it with their default
 * arguments, their tables then rendered by the one printer (text and JSON).
 * A mutated input must end in a result or an nsl error for the user
 * (nsl.fail, a source's error); an internal error -- a Lua error in a shipped
 * analysis, a kernel refusing its arguments -- is a defect and aborts, as a
 * crash would, with the message and traceback on stderr.  Included by one
 * harness each; NSL_HARNESS_FILE names the file the bytes are written to, in
 * a temporary folder removed at exit (a real file: SQLite resolves the link
 * of a /proc/self/fd path, which for a memory file leads nowhere). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <lauxlib.h>

#include "lua/lnsl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lua_State *L;
static int file = -1;
static char dir[4096], path[4200];

static void remove_file(void) {
  unlink(path);
  rmdir(dir);
}

/* fuzz_run(path) -> true, or false and the internal error (analysis, message, traceback). */
static const char harness_lua[] =
    "local nsl = require('nsl')\n"
    "local runner, output, report = require('nsl.engine.runner'), require('nsl.engine.output'), require('nsl.report')\n"
    "local list = {}\n"
    "for _, name in ipairs{'diagnose', 'classes', 'summary'} do list[#list + 1] = assert(runner.load_analysis(name)) end\n"
    "function fuzz_run(path)\n"
    "  local trace = nsl.open{path}\n"
    "  if not trace then return true end\n"
    "  for _, a in ipairs(list) do\n"
    "    local args = assert(runner.parse_args(a, {}))\n"
    "    local out = assert(output.new{analysis = a.name, format = 'json', trace = trace, traces = {path}})\n"
    "    local ok, e = xpcall(a.run, nsl.error_handler, trace, args, out)\n"
    "    if not ok and type(e) == 'table' and e.bug then\n"
    "      trace:close()\n"
    "      return false, a.name .. ': ' .. tostring(e.bug) .. (e.traceback or '')\n"
    "    end\n"
    "    if ok then\n"
    "      local pok, perr = xpcall(function()\n"
    "        for _, it in ipairs(out.items) do\n"
    "          if it.kind == 'table' then report.text(it.t, {limit = 50}); report.md(it.t, {limit = 50}) end\n"
    "        end\n"
    "        report.json(out:document())\n"
    "      end, debug.traceback)\n"
    "      if not pok then trace:close() return false, a.name .. ' (printing): ' .. tostring(perr) end\n"
    "    end\n"
    "  end\n"
    "  trace:close()\n"
    "  return true\n"
    "end\n";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("NSL_NO_CACHE", "1", 1);   /* nothing written: every run reads the bytes themselves */
  setenv("NSL_THREADS", "1", 1);    /* reproducible runs */
  L = luaL_newstate();
  nsl__open_libs(L);   /* as the CLI's state */
  if (luaL_dostring(L, harness_lua) != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    abort();
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/nsl-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) abort();
  snprintf(path, sizeof path, "%s/%s", dir, NSL_HARNESS_FILE);
  file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (file < 0) abort();
  atexit(remove_file);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (ftruncate(file, 0) != 0 || pwrite(file, data, size, 0) != (ssize_t)size) abort();
  lua_getglobal(L, "fuzz_run");
  lua_pushstring(L, path);
  if (lua_pcall(L, 1, 2, 0) != LUA_OK) {
    fprintf(stderr, "the harness raised: %s\n", lua_tostring(L, -1));
    abort();
  }
  if (!lua_toboolean(L, -2)) {
    fprintf(stderr, "internal error in analysis %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_settop(L, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  return 0;
}
