/* main.c -- the nsl command: a thin client of the library, like lua.c.
 * The command line is parsed against the table of commands (cli.c,
 * commands.c); the command then runs in a Lua state with the nsl modules
 * (state.c), most of them in Lua (lua/nsl/engine/runner.lua, lua/nsl/engine/cmd/). */
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <string.h>

#include "cli/cli.h"
#include "core/big_alloc.h"

/* The locale's character type, once for the whole run: the user's when it
 * is UTF-8, else C.UTF-8, so that libarchive writes and reads member names
 * (prøfil.sqlite, café.py, 名前.py) as UTF-8 and the TUI draws wide
 * characters.  Only LC_CTYPE: numbers keep the C locale. */
static void set_utf8_ctype(void) {
  const char *set = setlocale(LC_CTYPE, "");
  if (set == NULL || strcmp(nl_langinfo(CODESET), "UTF-8") != 0) setlocale(LC_CTYPE, "C.UTF-8");
}

int main(int argc, char **argv) {
  set_utf8_ctype();
  /* Past the file-size limit (ulimit -f) a write fails with EFBIG, which
   * nsl reports and cleans up after (the temporary file removed, the target
   * left as it was), rather than the process dying mid-write. */
  signal(SIGXFSZ, SIG_IGN);
  nsl__malloc_policy();   /* large blocks mapped on their own and given back when freed (big_alloc.h) */
  nsl_cli_args args;
  int code = nsl__cli_parse(argc, argv, &args);
  if (code < 0) {
    lua_State *L = nsl__new_state();
    code = L ? nsl__cli_dispatch(L, &args) : 1;
    if (L) lua_close(L);
  }
  nsl__cli_free(&args);
  return code;
}
