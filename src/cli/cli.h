/* cli.h -- command-line parsing and dispatch of the nsl program. */
#ifndef NSL_CLI_CLI_H
#define NSL_CLI_CLI_H

#include <lua.h>

typedef struct nsl_cli_options {
  const char *command;      /* run, info, list, repl, ... */
  const char *script;       /* run: analysis name or path */
  const char **traces;      /* input files */
  int ntraces;
  const char **args;        /* --arg KEY=VALUE, as given */
  int nargs;
  const char *out_dir;      /* --out */
  const char *format;       /* --format */
  const char *fail_on;      /* --fail-on */
  const char *output;       /* -o */
  int embed;                /* --embed */
  int help;                 /* --help after the command */
  int no_cache;             /* --no-cache: neither read nor write the columnar cache */
  int quiet;                /* --quiet: no progress line */
  const char **rest;        /* options this parser does not know, in order (profile: with
                               their values: everything before "--" that is not nsl's) */
  int nrest;
  const char **program;     /* words after "--" (profile: the command to run) */
  int nprogram;
  const char **named;       /* options of bundle/combine/profile: field, value pairs */
  int nnamed;
} nsl_cli_options;

/* Parses argv (argv[0] is the command); prints a usage error and returns
 * non-zero on a bad command line. */
int nsl__cli_parse(int argc, char **argv, nsl_cli_options *o);
void nsl__cli_free(nsl_cli_options *o);
/* Runs the parsed command; returns the process exit code. */
int nsl__cli_dispatch(lua_State *L, const nsl_cli_options *o);
int nsl__docall(lua_State *L, int nargs, int nres);
int nsl__report(lua_State *L, int status);
lua_State *nsl__new_state(void);
/* Progress line on stderr while the library reports long work (progress.c):
 * only on a terminal and without --quiet; the library's warnings on stderr. */
void nsl__cli_progress_start(int quiet);
void nsl__cli_progress_stop(void);
void nsl__cli_warnings(void);
/* nsl cache list|clear; returns the exit code. */
int nsl__cli_cache(const nsl_cli_options *o);
/* The interactive REPL (repl.c); returns the exit code. */
int nsl__repl(lua_State *L, const nsl_cli_options *o);

#endif
