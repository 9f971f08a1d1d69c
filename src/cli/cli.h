/* cli.h -- the command line of nsl: the one table of commands and their
 * options (commands.c), the parser, help and dispatch built on it (cli.c),
 * the Lua state the commands run in (state.c) and the REPL (repl.c).
 *
 * Adding a command or an option is one entry in commands.c: the parser,
 * `nsl COMMAND --help`, `nsl --help`, the usage errors and the README's
 * synopsis (`nsl --help-synopsis`) all follow from it. */
#ifndef NSL_CLI_CLI_H
#define NSL_CLI_CLI_H

#include <lua.h>

/* How an option takes its value; on the Lua side opts[field] is the last
 * value (ONE), an array of every value in order (LIST), or true (FLAG).
 * An option not given leaves opts[field] nil. */
typedef enum nsl_cli_kind { NSL_CLI_ONE, NSL_CLI_LIST, NSL_CLI_FLAG } nsl_cli_kind;

enum {
  NSL_CLI_REQUIRED = 1,   /* the command refuses to run without it (usage error) */
  NSL_CLI_CHOICES = 2,    /* value: the accepted values, '|'-separated ("text|csv|json") */
};

typedef struct nsl_cli_option {
  const char *name;    /* "--rank" */
  const char *alias;   /* a second spelling ("-o" of "--output"), shown in synopses; or NULL */
  nsl_cli_kind kind;
  const char *value;   /* the value's name in help ("N", "FILE|DIR"); a '=' in it ("KEY=VALUE")
                          makes a value without '=' a usage error; NULL for a flag */
  const char *field;   /* opts[field] in Lua; NULL: name without dashes, '-' as '_' */
  unsigned flags;      /* NSL_CLI_REQUIRED, NSL_CLI_CHOICES */
  const char *help;    /* one line, lower case, no final period */
} nsl_cli_option;

struct nsl_cli_args;
typedef int (*nsl_cli_main)(lua_State *L, const struct nsl_cli_args *a);

#define NSL_CLI_MAX_GROUPS 5

typedef struct nsl_cli_command {
  const char *name;          /* "bundle" */
  const char *args;          /* the words it takes, for synopses ("EXPORT...", "[TRACE...]"), or NULL */
  int min_args;              /* fewer words is a usage error ... */
  const char *missing;       /* ... that says this ("no export given") */
  const char *first;         /* opts[first] is the first word ("script" of run); the rest are traces */
  int first_help;            /* --help after the first word is the module's (nsl run NAME --help) */
  const char *passthrough;   /* unknown options and words before "--" go to opts.rest, in order
                                (profile: to nsys); this names them in synopses; NULL: refused */
  const char *program;       /* the words after "--" go to opts.program and are required
                                ("COMMAND..."); NULL: "--" only ends the options */
  const nsl_cli_option *options[NSL_CLI_MAX_GROUPS];   /* option groups, in order, each ending with
                                                          {NULL}; shared groups are declared once */
  const char *summary;       /* one line for nsl --help and the synopsis */
  const char *description;   /* the paragraph under the usage in nsl COMMAND --help */
  const char *epilog;        /* more text after the options, or NULL */
  const char *module;        /* the Lua module whose main(opts) runs it ("nsl.engine.cmd.bundle") ... */
  nsl_cli_main run;          /* ... or a C function (repl) */
} nsl_cli_command;

/* The declared commands, ending with {NULL} (commands.c), and the texts of
 * nsl --help around them. */
extern const nsl_cli_command nsl__cli_commands[];
extern const char nsl__cli_about[];
extern const char nsl__cli_exit_codes[];

/* One command line, parsed. */
typedef struct nsl_cli_given {
  const nsl_cli_option *opt;
  const char *value;         /* NULL for a flag */
} nsl_cli_given;

typedef struct nsl_cli_args {
  const nsl_cli_command *command;
  const char *first;         /* the first word when the command declares `first` */
  const char **traces;       /* the other words */
  int ntraces;
  nsl_cli_given *given;      /* the options, in order */
  int ngiven;
  const char **rest;         /* passthrough: unknown options and words before "--" */
  int nrest;
  const char **program;      /* the words after "--" */
  int nprogram;
  int help;                  /* --help or -h after the command */
} nsl_cli_args;

/* Parses argv (argv[0] is the program).  Returns -1 when a command is to
 * run (a->command), else the exit code of what was done instead: help,
 * version or synopsis printed (0), a usage error printed (2). */
int nsl__cli_parse(int argc, char **argv, nsl_cli_args *a);
void nsl__cli_free(nsl_cli_args *a);
/* For commands written in C: the last value given to the option called
 * name ("--nsys"), "" for a flag given, NULL when not given. */
const char *nsl__cli_value(const nsl_cli_args *a, const char *name);
/* Runs the parsed command; returns the process exit code. */
int nsl__cli_dispatch(lua_State *L, const nsl_cli_args *a);

/* progress.c: a progress line on stderr while the library reports long
 * work (only on a terminal and without --quiet), the library's warnings on
 * stderr, and `nsl cache list|clear` (returns the exit code). */
void nsl__cli_progress_start(int quiet);
void nsl__cli_progress_stop(void);
void nsl__cli_warnings(void);
int nsl__cli_cache(lua_State *L, const nsl_cli_args *a);

/* state.c: a Lua state with the nsl libraries (NULL, with the reason on
 * stderr, when it cannot be made); every chunk runs through nsl__docall:
 * the function and its nargs arguments on the stack, protected, with a
 * traceback handler and SIGINT interrupting it; nsl__report prints the
 * error on top of the stack as "nsl: message" and pops it. */
lua_State *nsl__new_state(void);
int nsl__docall(lua_State *L, int nargs, int nres);
int nsl__report(lua_State *L, int status);

/* The interactive REPL (repl.c) on a->traces; returns the exit code. */
int nsl__repl(lua_State *L, const nsl_cli_args *a);

#endif
