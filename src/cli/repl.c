/* repl.c -- the interactive loop of `nsl repl`: line editing and history
 * through libedit when present (plain input otherwise), multi-line input
 * while a statement is incomplete, `=expr` and bare expressions printed,
 * Ctrl-C interrupting a computation.  What to print, the :commands and the
 * completion candidates are decided in Lua (lua/nsl/engine/repl.lua). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "cli/cli.h"

#ifdef NSL_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

#define PROMPT "nsl> "
#define PROMPT2 ">> "

static lua_State *repl_L;   /* for the completion callback */

/* Reads one line (without its newline) into a malloc'd string; NULL at EOF. */
static char *read_line(const char *prompt, int interactive) {
#ifdef NSL_HAVE_LIBEDIT
  if (interactive) return readline(prompt);
#endif
  if (interactive) {
    fputs(prompt, stdout);
    fflush(stdout);
  }
  size_t cap = 256, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  int c;
  while ((c = getchar()) != EOF && c != '\n') {
    if (len + 1 >= cap) {
      char *p = realloc(buf, cap *= 2);
      if (!p) {
        free(buf);
        return NULL;
      }
      buf = p;
    }
    buf[len++] = (char)c;
  }
  if (c == EOF && len == 0) {
    free(buf);
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

/* Pushes require("nsl.engine.repl")[name]. */
static void push_repl_fn(lua_State *L, const char *name) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "nsl.engine.repl");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, name);
  lua_remove(L, -2);
}

#ifdef NSL_HAVE_LIBEDIT
static char **candidates;   /* of the current completion */
static int ncandidates;

static char *next_candidate(const char *text, int state) {
  (void)text;
  if (state >= ncandidates) return NULL;
  return strdup(candidates[state]);
}

static int call_complete(lua_State *L) {
  push_repl_fn(L, "complete");
  lua_pushvalue(L, 1);
  lua_pushglobaltable(L);
  lua_call(L, 2, 2);
  return 2;
}

/* libedit completion: candidates from repl.complete(line up to the cursor). */
static char **complete(const char *text, int start, int end) {
  (void)start;
  rl_attempted_completion_over = 1;
  rl_completion_append_character = '\0';
  for (int i = 0; i < ncandidates; i++) free(candidates[i]);
  free(candidates);
  candidates = NULL;
  ncandidates = 0;
  lua_State *L = repl_L;
  lua_pushcfunction(L, call_complete);
  lua_pushlstring(L, rl_line_buffer, (size_t)end);
  if (lua_pcall(L, 1, 2, 0) == LUA_OK && lua_istable(L, -2)) {
    /* The names complete the partial word starting at line offset off; the
     * word libedit replaces starts at `start`: keep what lies between. */
    int off = (int)lua_tointeger(L, -1);
    int keep = off > start ? off - start : 0;
    int n = (int)luaL_len(L, -2);
    candidates = calloc((size_t)n + 1, sizeof *candidates);
    for (int i = 1; candidates && i <= n; i++) {
      lua_geti(L, -2, i);
      const char *s = lua_tostring(L, -1);
      char *full = s ? malloc((size_t)keep + strlen(s) + 1) : NULL;
      if (full) {
        memcpy(full, rl_line_buffer + start, (size_t)keep);
        strcpy(full + keep, s);
        candidates[ncandidates++] = full;
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
  } else lua_pop(L, 1);
  if (ncandidates == 0) return NULL;
  return rl_completion_matches(text, next_candidate);
}
#endif

/* Prints the n values on top of the stack with repl.show. */
static void print_values(lua_State *L, int n) {
  int base = lua_gettop(L) - n;
  for (int i = 1; i <= n; i++) {
    push_repl_fn(L, "show");
    lua_pushvalue(L, base + i);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
      fprintf(stderr, "nsl: cannot print a value: %s\n", lua_tostring(L, -1));
    } else {
      puts(lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    }
    lua_pop(L, 1);
  }
  lua_settop(L, base);
  fflush(stdout);
}

/* Compiles `return <line>` (for expressions); leaves the chunk or nothing. */
static int load_expression(lua_State *L, const char *code) {
  const char *src = code[0] == '=' ? code + 1 : code;
  lua_pushfstring(L, "return %s;", src);
  int status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin");
  lua_remove(L, -2);
  if (status != LUA_OK) lua_pop(L, 1);
  return status == LUA_OK;
}

/* Is the syntax error on top of the stack "more input needed"? */
static int incomplete(lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    if (lmsg >= 5 && strcmp(msg + lmsg - 5, "<eof>") == 0) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return 0;
}

/* Runs a :command line; returns 1 to quit. */
static int run_command(lua_State *L, const char *line) {
  push_repl_fn(L, "command");
  lua_pushstring(L, line);
  lua_pushglobaltable(L);
  int status = nsl__docall(L, 2, 2);
  if (status != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  int quit = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "quit") == 0;
  if (lua_isstring(L, -2) && lua_rawlen(L, -2) > 0) puts(lua_tostring(L, -2));
  lua_pop(L, 2);
  fflush(stdout);
  return quit;
}

static const char *history_path(void) {
  static char *path;   /* made once, kept for the life of the process */
  const char *env = getenv("NSL_HISTORY");
  if (env && *env) return env;
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  if (!path) {
    size_t n = strlen(home) + sizeof "/.nsl_history";
    if (!(path = malloc(n))) return NULL;
    snprintf(path, n, "%s/.nsl_history", home);
  }
  return path;
}

/* Opens the traces as `trace`, then reads, evaluates and prints until EOF
 * or :quit.  Returns the exit code. */
int nsl__repl(lua_State *L, const nsl_cli_args *o) {
  int interactive = isatty(0);
  repl_L = L;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "nsl");
  if (nsl__report(L, nsl__docall(L, 1, 1)) != LUA_OK) return 1;
  lua_setglobal(L, "nsl");
  if (o->ntraces > 0) {
    lua_getglobal(L, "nsl");
    lua_getfield(L, -1, "open_selected");
    lua_remove(L, -2);
    lua_createtable(L, o->ntraces, 0);
    for (int i = 0; i < o->ntraces; i++) {
      lua_pushstring(L, o->traces[i]);
      lua_seti(L, -2, i + 1);
    }
    lua_pushvalue(L, -1);
    lua_setglobal(L, "trace_paths");
    lua_newtable(L);   /* the selection (nsl.select): report = the --report values, from, to, device */
    lua_newtable(L);
    for (int k = 0, n = 0; k < o->ngiven; k++) {
      const char *name = o->given[k].opt->name;
      if (strcmp(name, "--report") == 0) {
        lua_pushstring(L, o->given[k].value);
        lua_seti(L, -2, ++n);
      } else if (strcmp(name, "--from") == 0 || strcmp(name, "--to") == 0 || strcmp(name, "--device") == 0) {
        lua_pushstring(L, o->given[k].value);
        lua_setfield(L, -3, name + 2);
      }
    }
    lua_setfield(L, -2, "report");
    if (nsl__report(L, nsl__docall(L, 2, 3)) != LUA_OK) return 1;
    if (lua_isnil(L, -3)) {
      fprintf(stderr, "nsl: %s\n", lua_tostring(L, -2));
      return (int)luaL_optinteger(L, -1, 1);
    }
    lua_pop(L, 2);
    lua_setglobal(L, "trace");
  }
  const char *hist = history_path();
#ifdef NSL_HAVE_LIBEDIT
  if (interactive) {
    rl_readline_name = "nsl";
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = " \t\n\"'`@$><=;|&{(,.:[]+-*/~#^%";
    rl_completer_word_break_characters = (char *)rl_basic_word_break_characters;
    if (hist) read_history(hist);
  }
#endif
  if (interactive)
    printf("nsl %s -- Lua 5.4 with the nsl library%s. :help for help, Ctrl-D to leave.\n", NSL_VERSION,
           o->ntraces ? "; `trace` is loaded" : "");
  char *line;
  while (signal(SIGINT, SIG_IGN), (line = read_line(PROMPT, interactive)) != NULL) {
    if (line[0] == '\0') {
      free(line);
      continue;
    }
    if (line[0] == ':') {
#ifdef NSL_HAVE_LIBEDIT
      if (interactive) add_history(line);
#endif
      int quit = run_command(L, line);
      free(line);
      if (quit) break;
      continue;
    }
    /* Collect a whole statement: an expression, or lines until complete. */
    lua_pushstring(L, line);
    free(line);
    int status;
    if (load_expression(L, lua_tostring(L, -1))) {
      status = LUA_OK;
    } else {
      for (;;) {
        status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin");
        if (!incomplete(L, status)) break;
        char *more = read_line(PROMPT2, interactive);
        if (!more) {
          lua_pushliteral(L, "unfinished statement at the end of the input");
          break;
        }
        lua_pushliteral(L, "\n");
        lua_pushstring(L, more);
        free(more);
        lua_concat(L, 3);
      }
    }
#ifdef NSL_HAVE_LIBEDIT
    if (interactive) {   /* the whole statement, as typed, goes to the history */
      add_history(lua_tostring(L, -2));
      if (hist) write_history(hist);
    }
#endif
    lua_remove(L, -2);   /* the chunk (or error) stays */
    if (status == LUA_OK) {
      int base = lua_gettop(L) - 1;
      status = nsl__docall(L, 0, LUA_MULTRET);
      if (status == LUA_OK) print_values(L, lua_gettop(L) - base);
    }
    if (status != LUA_OK) {
      const char *msg = lua_tostring(L, -1);
      fprintf(stderr, "%s\n", msg ? msg : "(error object is not a string)");
      fflush(stderr);
      lua_pop(L, 1);
    }
    lua_settop(L, 0);
  }
#ifdef NSL_HAVE_LIBEDIT
  if (interactive && hist) write_history(hist);
#endif
  if (interactive) putchar('\n');
  (void)hist;
  return 0;
}
