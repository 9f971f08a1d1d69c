/* main.c -- the nsl command: a thin client of the library, like lua.c.
 * It parses the command line, builds one Lua state with the nsl modules,
 * and hands the work to the Lua runner (lua/nsl/runner.lua). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lua/lnsl.h"

#include <lualib.h>

static const char *progname = "nsl";
static lua_State *globalL = NULL;

static void print_usage(FILE *f) {
  fprintf(f,
          "usage: nsl COMMAND [ARGS]\n"
          "\n"
          "Analyse NVIDIA Nsight Systems profiles: SQLite exports (nsys export --type sqlite)\n"
          "and nsl bundles (.zip).\n"
          "\n"
          "commands:\n"
          "  run SCRIPT|NAME [TRACE...] [--arg KEY=VALUE]... [--out DIR]\n"
          "      [--format text|csv|json|md|tex] [--fail-on info|warning|error] [--embed]\n"
          "      [--label \"A,B,...\"]  (the runs' labels, for compare: --arg labels=)\n"
          "                       run a shipped analysis (by name) or your own script\n"
          "  run NAME --help      the analysis's description and arguments\n"
          "  list                 the shipped analyses\n"
          "  info TRACE...        versions, time span, devices, processes, row counts\n"
          "  repl [TRACE...]      interactive Lua with `trace` loaded\n"
          "  bundle EXPORT... -o OUT.zip [--rank N]... [--meta FILE|DIR]... [--source FILE|DIR]...\n"
          "      [--note TEXT]    a bundle of exports, metadata and sources\n"
          "  combine IN.zip... -o OUT.zip\n"
          "                       per-rank bundles merged into one\n"
          "  profile [--analysis NAME]... [-o OUT.zip] [--nsys PATH] [--condition EXPR]\n"
          "      [nsys options] -- COMMAND...\n"
          "                       nsys profile, export, bundle and analyse in one go\n"
          "  notebook NOTEBOOK.md|NAME [TRACE...] -o OUT.html|OUT.ipynb [--stop-on-error]\n"
          "                       run a literate analysis (Markdown with Lua cells) into a report\n"
          "                       (shipped: analysis, compare)\n"
          "  cache [list|clear]   the columnar cache of loaded traces (NSL_CACHE_DIR, NSL_CACHE_MAX)\n"
          "  COMMAND --help       the options of any command\n"
          "  --no-cache           (any command) neither read nor write the columnar cache\n"
          "  --quiet              (any command) no progress line on stderr for long work\n"
          "  --help, --version\n"
          "\n"
          "exit codes: 0 success, 1 error (bad input, failing script), 2 usage,\n"
          "            3 a finding at or above --fail-on; profile: the command's when it failed\n");
}

/* Stops a running script at the next hook point (SIGINT). */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

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

/* Prints the error on top of the stack as "nsl: message". */
int nsl__report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "%s: %s\n", progname, msg ? msg : "(no message)");
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

static int pmain(lua_State *L) {
  nsl__open_libs(L);
  return 0;
}

lua_State *nsl__new_state(void) {
  lua_State *L = luaL_newstate();
  if (!L) return NULL;
  lua_pushcfunction(L, pmain);
  if (nsl__report(L, nsl__docall(L, 0, 0)) != LUA_OK) {
    lua_close(L);
    return NULL;
  }
  return L;
}

int main(int argc, char **argv) {
  /* Past the file-size limit (ulimit -f) a write fails with EFBIG, which
   * nsl reports and cleans up after (the temporary file removed, the target
   * left as it was), rather than the process dying mid-write. */
  signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    print_usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("nsl %s (%s)\n", nsl_version(), LUA_RELEASE);
    return 0;
  }
  nsl_cli_options opts;
  if (nsl__cli_parse(argc - 1, argv + 1, &opts) != 0) {
    nsl__cli_free(&opts);
    return 2;
  }
  lua_State *L = nsl__new_state();
  if (!L) {
    fprintf(stderr, "%s: cannot create the Lua state (out of memory?)\n", progname);
    nsl__cli_free(&opts);
    return 1;
  }
  nsl__cli_warnings();
  nsl__cli_progress_start(opts.quiet);
  int code = nsl__cli_dispatch(L, &opts);
  nsl__cli_progress_stop();
  nsl__cli_free(&opts);
  lua_close(L);
  return code;
}
