/* cli.c -- the one argument parser of nsl, and dispatch to the Lua runner. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "cli/cli.h"
#include "nsl/nsl.h"
#include "core/nsl_internal.h"

static const char *const commands[] = {"run", "info", "list", "repl", "bundle", "combine", "profile",
                                       "notebook"};
enum { NCOMMANDS = sizeof commands / sizeof *commands };

static int one_of(const char *s, const char *const *list, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, list[i]) == 0) return 1;
  return 0;
}

/* Options of single commands, handed to the Lua side as opts[field]: a
 * list of the values when the option may repeat, the last value otherwise,
 * true for a flag (no value). */
typedef enum opt_kind { OPT_ONE, OPT_LIST, OPT_FLAG } opt_kind;
static const struct command_option {
  const char *command, *opt, *field;
  opt_kind kind;
} command_options[] = {
    {"bundle", "--rank", "rank", OPT_LIST},         {"bundle", "--meta", "meta", OPT_LIST},
    {"bundle", "--source", "source", OPT_LIST},     {"bundle", "--note", "note", OPT_ONE},
    {"combine", "--allow-mixed-commands", "allow_mixed_commands", OPT_FLAG},
    {"combine", "--allow-mixed-nsys", "allow_mixed_nsys", OPT_FLAG},
    {"profile", "--analysis", "analysis", OPT_LIST}, {"profile", "--nsys", "nsys", OPT_ONE},
    {"profile", "--condition", "condition", OPT_ONE}, {"profile", "--rank", "rank", OPT_ONE},
    {"profile", "--meta", "meta", OPT_LIST},         {"profile", "--source", "source", OPT_LIST},
    {"profile", "--note", "note", OPT_ONE},          {"profile", "--xla-dump", "xla_dump", OPT_LIST},
    {"profile", "--notebook", "notebook", OPT_LIST}, {"profile", "--no-rep", "no_rep", OPT_FLAG},
    {"run", "--label", "label", OPT_ONE},   /* the runs' labels: --arg labels= of compare */
    {NULL, NULL, NULL, OPT_ONE}};

/* The help of the commands the C side runs itself (run without an
 * analysis, info, list, repl); bundle, combine, profile and notebook print
 * their own (lua/nsl/cmd/, one file a command). */
static const struct command_help {
  const char *command, *text;
} command_help[] = {
    {"run", "usage: nsl run SCRIPT|NAME [TRACE...] [--arg KEY=VALUE]... [--out DIR]\n"
            "               [--format text|csv|json|md|tex] [--fail-on info|warning|error] [--embed]\n"
            "               [--label \"A,B,...\"]\n"
            "\n"
            "Runs a shipped analysis (by name: nsl list) or your own Lua script on the traces.\n"
            "  --arg KEY=VALUE  an argument of the analysis (nsl run NAME --help lists them)\n"
            "  --out DIR        write every table as CSV, results.json and the figures under DIR\n"
            "  --format F       text (default), csv, json, md or tex on stdout\n"
            "  --fail-on S      exit 3 when a finding has severity S or worse\n"
            "  --embed          store the results in the bundle (one .zip) under analyses/NAME/\n"
            "  --label A,B,...  the runs' labels, for compare (its --arg labels=)\n"
            "nsl run NAME --help prints the analysis's description and arguments."},
    {"info", "usage: nsl info TRACE... [--format text|csv|json|md|tex] [--out DIR]\n"
             "\n"
             "Versions, time span, devices, processes and the row count of every table\n"
             "(the same as nsl run info)."},
    {"list", "usage: nsl list\n\nThe shipped analyses, with what each does (nsl run NAME --help for one)."},
    {"repl", "usage: nsl repl [TRACE...]\n"
             "\n"
             "Interactive Lua 5.4 with the nsl library; `trace` is the loaded trace.  Line\n"
             "editing, history (~/.nsl_history, or $NSL_HISTORY) and Tab completion of\n"
             "globals, tables, columns and methods; :help inside lists the commands."},
    {NULL, NULL}};

static int usage_error(const char *fmt, const char *what) {
  fprintf(stderr, "nsl: ");
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\nTry 'nsl --help'.\n");
  return 2;
}

/* A usage error for an unknown word, with the closest known one (or, when
 * none is close, the few known ones). */
static int unknown_error(const char *kind, const char *word, const char *const *known, int n, const char *cmd) {
  const char *best = nsl_closest(word, known, n);
  fprintf(stderr, "nsl: unknown %s '%s'", kind, word);
  if (best) fprintf(stderr, " (did you mean '%s'?)", best);
  else if (n <= 8)
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s%s", i ? ", " : " (one of: ", known[i], i == n - 1 ? ")" : "");
  if (cmd) fprintf(stderr, "\nTry 'nsl %s --help'.\n", cmd);
  else fprintf(stderr, "\nTry 'nsl --help'.\n");
  return 2;
}

/* The options `command` takes: nsl's own, then the command's. */
static const char *const general_options[] = {"--arg", "--out", "--format", "--fail-on", "-o", "--output",
                                              "--embed", "--help", NULL};
static int known_options(const char *command, const char **out, int cap) {
  int n = 0;
  for (const char *const *g = general_options; *g && n < cap; g++) out[n++] = *g;
  for (const struct command_option *co = command_options; co->command && n < cap; co++)
    if (strcmp(co->command, command) == 0) out[n++] = co->opt;
  if (strcmp(command, "notebook") == 0 && n < cap) out[n++] = "--stop-on-error";
  return n;
}

/* Matches option opt as "opt VALUE" or "opt=VALUE" at argv[*i]; a missing
 * value is a usage error that ends the program (exit code 2). */
static int take(int argc, char **argv, int *i, const char *opt, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(opt);
  if (strcmp(a, opt) == 0) {
    if (*i + 1 >= argc) exit(usage_error("option %s needs a value", opt));
    *value = argv[++*i];
    return 1;
  }
  if (strncmp(a, opt, n) == 0 && a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  return 0;
}

int nsl__cli_parse(int argc, char **argv, nsl_cli_options *o) {
  memset(o, 0, sizeof *o);
  o->traces = calloc((size_t)argc + 1, sizeof *o->traces);
  o->args = calloc((size_t)argc + 1, sizeof *o->args);
  o->rest = calloc((size_t)argc + 1, sizeof *o->rest);
  o->program = calloc((size_t)argc + 1, sizeof *o->program);
  o->named = calloc(2 * (size_t)argc + 2, sizeof *o->named);
  if (!o->traces || !o->args || !o->rest || !o->program || !o->named) return usage_error("%s", "out of memory");
  o->command = argv[0];
  if (!one_of(o->command, commands, NCOMMANDS)) {
    /* `nsl TRACE...` with no command, on a terminal: the REPL on those traces. */
    if (isatty(0) && isatty(1) && access(o->command, R_OK) == 0) {
      o->command = "repl";
      for (int i = 0; i < argc; i++) o->traces[o->ntraces++] = argv[i];
      return 0;
    }
    return unknown_error("command", o->command, commands, NCOMMANDS, NULL);
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *value = NULL;
#define TAKE(opt) take(argc, argv, &i, opt, &value)
    const struct command_option *co = command_options;
    for (; co->command; co++)
      if (strcmp(co->command, o->command) == 0 &&
          (co->kind == OPT_FLAG ? strcmp(a, co->opt) == 0 : TAKE(co->opt)))
        break;
    if (co->command) {
      o->named[2 * o->nnamed] = co->field;
      o->named[2 * o->nnamed + 1] = co->kind == OPT_FLAG ? NULL : value;
      o->nnamed++;
    } else if (strcmp(a, "--") == 0) {
      for (i++; i < argc; i++) o->program[o->nprogram++] = argv[i];
      break;
    } else if (TAKE("--arg")) {
      if (!strchr(value, '=')) return usage_error("--arg wants KEY=VALUE, got '%s'", value);
      o->args[o->nargs++] = value;
    } else if (TAKE("--out")) o->out_dir = value;
    else if (TAKE("--format")) {
      static const char *const formats[] = {"text", "csv", "json", "md", "tex"};
      if (!one_of(value, formats, 5)) return unknown_error("--format", value, formats, 5, o->command);
      o->format = value;
    } else if (TAKE("--fail-on")) {
      static const char *const severities[] = {"info", "warning", "error"};
      if (!one_of(value, severities, 3)) return unknown_error("--fail-on", value, severities, 3, o->command);
      o->fail_on = value;
    } else if (TAKE("-o") || TAKE("--output")) o->output = value;
    else if (strcmp(a, "--embed") == 0) o->embed = 1;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) o->help = 1;
    else if (a[0] == '-' && a[1] != '\0') {
      /* profile passes the options it does not know to nsys; notebook's go to its Lua side */
      if (strcmp(o->command, "profile") != 0 && strcmp(o->command, "notebook") != 0) {
        const char *known[64];
        char name[128];   /* "--opt=value": the option part */
        snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
        return unknown_error("option", name, known, known_options(o->command, known, 64), o->command);
      }
      o->rest[o->nrest++] = a;
    } else if (strcmp(o->command, "profile") == 0) o->rest[o->nrest++] = a;   /* a value of an nsys option */
    else if (strcmp(o->command, "run") == 0 && !o->script) o->script = a;
    else o->traces[o->ntraces++] = a;
#undef TAKE
  }
  if (o->help) return 0;   /* --help needs nothing else */
  if (strcmp(o->command, "run") == 0 && !o->script) return usage_error("%s", "run: which analysis? (nsl list)");
  if (strcmp(o->command, "info") == 0 && o->ntraces == 0) return usage_error("%s", "info: no trace given");
  return 0;
}

void nsl__cli_free(nsl_cli_options *o) {
  free(o->traces);
  free(o->args);
  free(o->rest);
  free(o->program);
  free(o->named);
}

static void set_list(lua_State *L, const char *field, const char **v, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, v[i]);
    lua_seti(L, -2, i + 1);
  }
  lua_setfield(L, -2, field);
}

static void set_str(lua_State *L, const char *field, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, -2, field);
}

/* Sets the command's own options (see command_options) on the table on top. */
static void set_named(lua_State *L, const nsl_cli_options *o) {
  for (int k = 0; k < o->nnamed; k++) {
    const char *field = o->named[2 * k], *value = o->named[2 * k + 1];
    opt_kind kind = OPT_ONE;
    for (const struct command_option *co = command_options; co->command; co++)
      if (strcmp(co->command, o->command) == 0 && strcmp(co->field, field) == 0) kind = co->kind;
    if (kind == OPT_LIST) {
      if (lua_getfield(L, -1, field) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, field);
      }
      lua_pushstring(L, value);
      lua_seti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
      lua_pop(L, 1);
    } else {
      if (kind == OPT_FLAG) lua_pushboolean(L, 1);
      else lua_pushstring(L, value);
      lua_setfield(L, -2, field);
    }
  }
}

static int call_main(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "nsl.runner");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "main");
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  return 1;
}

int nsl__cli_dispatch(lua_State *L, const nsl_cli_options *o) {
  if (o->help && !(strcmp(o->command, "run") == 0 && o->script))
    for (const struct command_help *h = command_help; h->command; h++)
      if (strcmp(h->command, o->command) == 0) {
        puts(h->text);
        return 0;
      }
  if (strcmp(o->command, "repl") == 0) return nsl__repl(L, o);
  lua_pushcfunction(L, call_main);
  lua_createtable(L, 0, 16);
  set_str(L, "command", o->command);
  set_str(L, "script", o->script);
  set_list(L, "traces", o->traces, o->ntraces);
  set_list(L, "args", o->args, o->nargs);
  set_list(L, "rest", o->rest, o->nrest);
  set_list(L, "program", o->program, o->nprogram);
  set_named(L, o);
  set_str(L, "out", o->out_dir);
  set_str(L, "format", o->format);
  set_str(L, "fail_on", o->fail_on);
  set_str(L, "output", o->output);
  lua_pushboolean(L, o->embed);
  lua_setfield(L, -2, "embed");
  lua_pushboolean(L, o->help);
  lua_setfield(L, -2, "help");
  int status = nsl__docall(L, 1, 1);
  if (status != LUA_OK) {
    nsl__report(L, status);
    return 1;
  }
  int code = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return code;
}
