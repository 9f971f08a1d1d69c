/* main.c -- the nsl command: a thin client of the library, like lua.c.
 * The command line is parsed against the table of commands (cli.c,
 * commands.c); the command then runs in a Lua state with the nsl modules
 * (state.c), most of them in Lua (lua/nsl/engine/runner.lua, lua/nsl/engine/cmd/). */
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- every large block of malloc on transparent huge pages ----
 * nsl__big_alloc marks the columns and the kernels' scratch for huge pages
 * (big_alloc.h); every other block glibc hands out -- a kernel's plain
 * malloc'd arrays, Lua's tables and strings, the heaps of the worker
 * threads, SQLite's and libarchive's buffers -- was faulted in 4 KiB at a
 * time: at 1 GB, diagnose faulted in 4 GB of fresh memory over a run whose
 * peak is 1 GB, and the faults (on a virtual machine, each a trap to the
 * hypervisor) were a third of its CPU time.  glibc marks all of them under
 * its tunable glibc.malloc.hugetlb=1, which it reads from the environment
 * when the process starts: so the command starts itself again, once, with
 * it, and then puts the environment back as it was (the programs it runs,
 * nsys and a profiled program, see the user's).  Not for the terminal
 * front end (with the kernel's usual `defrag = madvise` a fault in a marked
 * region may compact memory while a key waits: big_alloc.c), not where the
 * user's GLIBC_TUNABLES already says how, not in a build with a sanitizer
 * (its runtime has a malloc of its own); where the command cannot start
 * itself again (no /proc), it goes on as it is. */
#define TUNED_MARK "NSL_MALLOC_TUNED"   /* in the started-again process: "-" (no GLIBC_TUNABLES before), "=VALUE" */
#define HUGE_TUNABLE "glibc.malloc.hugetlb=1"

/* GLIBC_TUNABLES as it was before (mark: TUNED_MARK's value), and no mark. */
static void restore_tunables(const char *mark) {
  if (mark[0] == '=') setenv("GLIBC_TUNABLES", mark + 1, 1);
  else unsetenv("GLIBC_TUNABLES");
  unsetenv(TUNED_MARK);
}

static void malloc_on_huge_pages(char **argv, const nsl_cli_args *a) {
  const char *mark = getenv(TUNED_MARK);
  if (mark) {   /* started again: the tunable took effect */
    char *copy = strdup(mark);
    if (copy) restore_tunables(copy);
    free(copy);
    return;
  }
#if !NSL_SANITIZER_MALLOC   /* (big_alloc.h) */
  if (a->command && strcmp(a->command->name, "tui") == 0) return;
  const char *was = getenv("GLIBC_TUNABLES");
  if (was && strstr(was, "glibc.malloc.hugetlb")) return;
  size_t n = (was ? strlen(was) : 0) + sizeof HUGE_TUNABLE + 2;
  char *tun = malloc(n), *keep = malloc(n);
  if (tun && keep) {
    snprintf(tun, n, "%s%s%s", HUGE_TUNABLE, was && *was ? ":" : "", was ? was : "");
    snprintf(keep, n, "%s%s", was ? "=" : "-", was ? was : "");
    if (setenv(TUNED_MARK, keep, 1) == 0 && setenv("GLIBC_TUNABLES", tun, 1) == 0) execv("/proc/self/exe", argv);
    restore_tunables(keep);   /* (not started again: as it was) */
  }
  free(tun);
  free(keep);
#else
  (void)argv;
  (void)a;
#endif
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
  if (code < 0) malloc_on_huge_pages(argv, &args);
  if (code < 0) {
    lua_State *L = nsl__new_state();
    code = L ? nsl__cli_dispatch(L, &args) : 1;
    if (L) lua_close(L);
  }
  nsl__cli_free(&args);
  return code;
}
