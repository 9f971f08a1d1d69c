/* cli.c -- the one argument parser of nsl, the help texts and the dispatch
 * to the Lua modules, all made from the declarations of commands.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "cli/cli.h"
#include "nsl/nsl.h"
#include "core/nsl_internal.h"
#include "lua/lnsl.h"
#include "nsl/cache.h"

#define WIDTH 80   /* prose and usage lines of the help */
#define SYNOPSIS_WIDTH 116   /* the README's synopsis block */

static const nsl_cli_option help_option = {"--help", "-h", NSL_CLI_FLAG, NULL, NULL, 0, "this help"};

/* ---- looking things up in the table ---------------------------------------- */

/* The command called name, or NULL. */
static const nsl_cli_command *find_command(const char *name) {
  for (const nsl_cli_command *c = nsl__cli_commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

/* Loops o over every option of c, groups in order. */
#define FOR_OPTIONS(c, o)                                              \
  for (int g_ = 0; g_ < NSL_CLI_MAX_GROUPS && (c)->options[g_]; g_++) \
    for (const nsl_cli_option *o = (c)->options[g_]; o->name; o++)

/* The option of c spelled `word` (its name or alias), or NULL. */
static const nsl_cli_option *find_option(const nsl_cli_command *c, const char *word, size_t len) {
  FOR_OPTIONS(c, o) {
    if (strlen(o->name) == len && strncmp(o->name, word, len) == 0) return o;
    if (o->alias && strlen(o->alias) == len && strncmp(o->alias, word, len) == 0) return o;
  }
  return NULL;
}

/* opt's name in synopses: the alias when shorter ("-o"). */
static const char *short_name(const nsl_cli_option *o) {
  return o->alias && strlen(o->alias) < strlen(o->name) ? o->alias : o->name;
}

/* Whether value is one of the '|'-separated choices. */
static int is_choice(const char *choices, const char *value) {
  size_t n = strlen(value);
  for (const char *p = choices; *p;) {
    size_t m = strcspn(p, "|");
    if (m == n && strncmp(p, value, n) == 0) return 1;
    p += m + (p[m] == '|');
  }
  return 0;
}

/* ---- usage errors ---------------------------------------------------------------- */

/* Ends a usage error with where help is (c's, or nsl's); returns 2, the
 * exit code of a usage error. */
static int try_help(const nsl_cli_command *c) {
  if (c) fprintf(stderr, "\nTry 'nsl %s --help'.\n", c->name);
  else fprintf(stderr, "\nTry 'nsl --help'.\n");
  return 2;
}

/* Prints "nsl: MESSAGE" (printf's fmt and arguments) and where help is;
 * returns 2, the exit code of a usage error. */
static int usage_error(const nsl_cli_command *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(const nsl_cli_command *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nsl: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  return try_help(c);
}

/* A usage error for an unknown word, with the closest known one (or, when
 * none is close, the few known ones). */
static int unknown_error(const nsl_cli_command *c, const char *kind, const char *word, const char *const *known,
                         int n) {
  const char *best = nsl__closest(word, known, n);
  fprintf(stderr, "nsl: unknown %s '%s'", kind, word);
  if (best) fprintf(stderr, " (did you mean '%s'?)", best);
  else if (n <= 8)
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s%s", i ? ", " : " (one of: ", known[i], i == n - 1 ? ")" : "");
  return try_help(c);
}

/* A first word that is no command (nor one of nsl's own options: --verison finds --version). */
static int unknown_command(const char *word) {
  const char *names[66];
  int n = 0;
  for (const nsl_cli_command *c = nsl__cli_commands; c->name && n < 64; c++) names[n++] = c->name;
  if (word[0] == '-') {   /* an option: only the options are candidates */
    n = 0;
    names[n++] = "--version";
    names[n++] = "--help";
  }
  return unknown_error(NULL, word[0] == '-' ? "option" : "command", word, names, n);
}

/* An option word ("--opt" or "--opt=value") that c does not declare. */
static int unknown_option(const nsl_cli_command *c, const char *word) {
  const char *names[128];
  int n = 0;
  FOR_OPTIONS(c, o) {
    if (n < 126) names[n++] = o->name;
    if (o->alias && n < 126) names[n++] = o->alias;
  }
  names[n++] = help_option.name;
  char name[128];   /* "--opt=value": the option part */
  snprintf(name, sizeof name, "%.*s", (int)strcspn(word, "="), word);
  return unknown_error(c, "option", name, names, n);
}

/* A value of a NSL_CLI_CHOICES option that is not one of its choices. */
static int bad_choice(const nsl_cli_command *c, const nsl_cli_option *o, const char *value) {
  const char *names[32];
  char buf[256];
  snprintf(buf, sizeof buf, "%s", o->value);
  int n = 0;
  for (char *p = strtok(buf, "|"); p && n < 32; p = strtok(NULL, "|")) names[n++] = p;
  return unknown_error(c, o->name, value, names, n);
}

/* ---- text: wrapped words, synopses, help ----------------------------------------- */

/* Words laid out on lines of at most `width` columns, the lines after the
 * first indented by `indent`; `fresh` while the line has no word yet. */
typedef struct layout {
  FILE *f;
  int width, indent, col, fresh;
} layout;

static void put_word(layout *l, const char *word) {
  int w = (int)strlen(word);
  if (!l->fresh && l->col + 1 + w > l->width) {
    fprintf(l->f, "\n%*s", l->indent, "");
    l->col = l->indent;
    l->fresh = 1;
  }
  if (!l->fresh) {
    fputc(' ', l->f);
    l->col++;
  }
  fputs(word, l->f);
  l->col += w;
  l->fresh = 0;
}

/* Lays out the words of text[0..len) (separated by spaces). */
static void put_words(layout *l, const char *text, size_t len) {
  char word[256];
  const char *end = text + len;
  while (text < end) {
    while (text < end && *text == ' ') text++;
    size_t w = 0;
    while (text + w < end && text[w] != ' ') w++;
    if (w == 0) break;
    snprintf(word, sizeof word, "%.*s", (int)w, text);
    put_word(l, word);
    text += w;
  }
}

/* Prints text wrapped at WIDTH; a line that starts with a space is printed
 * as it is (a list or an example). */
static void print_prose(FILE *f, const char *text) {
  while (*text) {
    size_t len = strcspn(text, "\n");
    if (text[0] == ' ' || len <= WIDTH) fprintf(f, "%.*s", (int)len, text);
    else {
      layout l = {f, WIDTH, 0, 0, 1};
      put_words(&l, text, len);
    }
    fputc('\n', f);
    text += len + (text[len] == '\n');
  }
}

/* Prints `prefix` and c's synopsis: the words, every option (required ones
 * bare, the others in brackets, "..." when they repeat), the passthrough
 * and the program, wrapped under the first word; ends the line. */
static void print_synopsis(FILE *f, const nsl_cli_command *c, const char *prefix, int width) {
  fputs(prefix, f);
  layout l = {f, width, (int)strlen(prefix) + 1, (int)strlen(prefix), 0};
  char word[256];
  if (c->args) put_word(&l, c->args);
  FOR_OPTIONS(c, o) {
    int req = (o->flags & NSL_CLI_REQUIRED) != 0;
    snprintf(word, sizeof word, "%s%s%s%s%s%s", req ? "" : "[", short_name(o), o->value ? " " : "",
             o->value ? o->value : "", req ? "" : "]", o->kind == NSL_CLI_LIST ? "..." : "");
    put_word(&l, word);
  }
  if (c->passthrough) {
    snprintf(word, sizeof word, "[%s]", c->passthrough);
    put_word(&l, word);
  }
  if (c->program) {
    snprintf(word, sizeof word, "-- %s", c->program);
    put_word(&l, word);
  }
  fputc('\n', f);
}

/* The left column of an option in the help: "-o, --output OUT.zip". */
static void option_label(const nsl_cli_option *o, char *buf, size_t cap) {
  if (o->alias) snprintf(buf, cap, "%s, %s", short_name(o), short_name(o) == o->name ? o->alias : o->name);
  else snprintf(buf, cap, "%s", o->name);
  if (o->value) snprintf(buf + strlen(buf), cap - strlen(buf), " %s", o->value);
}

/* Prints one option of the help: its label, then its help wrapped beside it
 * (under it when the label is wide). */
static void print_option(FILE *f, const nsl_cli_option *o) {
  enum { COL = 26 };
  char label[256];
  option_label(o, label, sizeof label);
  int n = fprintf(f, "  %s", label);
  if (n + 2 > COL) fprintf(f, "\n%*s", COL, "");
  else fprintf(f, "%*s", COL - n, "");
  layout l = {f, WIDTH, COL, COL, 1};
  put_words(&l, o->help, strlen(o->help));
  fputc('\n', f);
}

/* nsl COMMAND --help: usage, description, options, epilog. */
static void print_command_help(FILE *f, const nsl_cli_command *c) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "usage: nsl %s", c->name);
  print_synopsis(f, c, prefix, WIDTH);
  fputc('\n', f);
  print_prose(f, c->description);
  fprintf(f, "\noptions:\n");
  FOR_OPTIONS(c, o) print_option(f, o);
  print_option(f, &help_option);
  if (c->epilog) {
    fputc('\n', f);
    print_prose(f, c->epilog);
  }
}

/* The command's words and required options ("bundle EXPORT... -o OUT.zip"). */
static void short_usage(const nsl_cli_command *c, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", c->name);
  if (c->args) snprintf(buf + strlen(buf), cap - strlen(buf), " %s", c->args);
  FOR_OPTIONS(c, o)
  if (o->flags & NSL_CLI_REQUIRED)
    snprintf(buf + strlen(buf), cap - strlen(buf), " %s %s", short_name(o), o->value ? o->value : "");
  if (c->program) snprintf(buf + strlen(buf), cap - strlen(buf), " [OPTIONS] -- %s", c->program);
}

/* nsl --help: what nsl is, every command with its summary, exit codes. */
static void print_usage(FILE *f) {
  fprintf(f, "usage: nsl COMMAND [ARGS]\n\n%s\n\ncommands:\n", nsl__cli_about);
  char buf[256];
  for (const nsl_cli_command *c = nsl__cli_commands; c->name; c++) {
    short_usage(c, buf, sizeof buf);
    if (strlen(buf) <= 20) fprintf(f, "  %-20s %s\n", buf, c->summary);
    else fprintf(f, "  %s\n  %-20s %s\n", buf, "", c->summary);
  }
  fprintf(f, "  %-20s %s\n", "COMMAND --help", "the options of a command");
  fprintf(f, "  %-20s %s\n", "run NAME --help", "an analysis's description and arguments");
  fprintf(f, "  %-20s %s\n", "--help-synopsis", "the synopsis of every command");
  fprintf(f, "  --help, --version\n\n%s\n", nsl__cli_exit_codes);
}

/* nsl --help-synopsis: every command with all its options (the README's
 * "The command line" block is this text). */
static void print_all_synopses(FILE *f) {
  char prefix[64];
  for (const nsl_cli_command *c = nsl__cli_commands; c->name; c++) {
    fprintf(f, "# %s\n", c->summary);
    snprintf(prefix, sizeof prefix, "nsl %s", c->name);
    print_synopsis(f, c, prefix, SYNOPSIS_WIDTH);
  }
  fprintf(f, "# the options of a command; an analysis's description and arguments\n"
             "nsl COMMAND --help\nnsl run NAME --help\nnsl --help | --version | --help-synopsis\n");
}

/* ---- parsing ------------------------------------------------------------------------ */

/* Records option o with its value. */
static void add_given(nsl_cli_args *a, const nsl_cli_option *o, const char *value) {
  a->given[a->ngiven].opt = o;
  a->given[a->ngiven].value = value;
  a->ngiven++;
}

/* Parses the words after the command name. */
static int parse_command(int argc, char **argv, nsl_cli_args *a) {
  const nsl_cli_command *c = a->command;
  int i = 2;
  for (; i < argc; i++) {
    const char *w = argv[i];
    if (strcmp(w, "--") == 0) {
      i++;
      break;
    }
    if (w[0] == '-' && w[1] != '\0') {
      size_t len = strcspn(w, "=");
      const nsl_cli_option *o = find_option(c, w, len);
      if (!o) {
        if (strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0) a->help = 1;
        else if (c->passthrough) a->rest[a->nrest++] = w;
        else return unknown_option(c, w);
        continue;
      }
      const char *value = NULL;
      if (o->kind == NSL_CLI_FLAG) {
        if (w[len] == '=') return usage_error(c, "option %s takes no value", o->name);
      } else if (w[len] == '=') value = w + len + 1;
      else if (i + 1 < argc) value = argv[++i];
      else return usage_error(c, "option %s needs a value", o->name);
      if (value && (o->flags & NSL_CLI_CHOICES) && !is_choice(o->value, value)) return bad_choice(c, o, value);
      if (value && strchr(o->value, '=') && !strchr(value, '='))
        return usage_error(c, "%s wants KEY=VALUE, got '%s'", o->name, value);
      add_given(a, o, value);
    } else if (c->passthrough) a->rest[a->nrest++] = w;   /* a value of a passed-on option */
    else if (c->first && !a->first) a->first = w;
    else a->traces[a->ntraces++] = w;
  }
  for (; i < argc; i++) {
    if (c->program) a->program[a->nprogram++] = argv[i];
    else if (c->first && !a->first) a->first = argv[i];
    else a->traces[a->ntraces++] = argv[i];
  }
  if (a->help) return -1;   /* --help needs nothing else */
  if (!c->args && (a->first || a->ntraces > 0))   /* a command that takes no words */
    return usage_error(c, "%s takes no arguments (got '%s')", c->name, a->first ? a->first : a->traces[0]);
  char buf[256];
  if ((a->first != NULL) + a->ntraces < c->min_args) {
    short_usage(c, buf, sizeof buf);
    return usage_error(c, "%s: %s (nsl %s)", c->name, c->missing, buf);
  }
  FOR_OPTIONS(c, o) {
    if (!(o->flags & NSL_CLI_REQUIRED)) continue;
    int k = 0;
    while (k < a->ngiven && a->given[k].opt != o) k++;
    if (k == a->ngiven)
      return usage_error(c, "%s: give %s%s%s (%s)", c->name, short_name(o), o->value ? " " : "",
                         o->value ? o->value : "", o->help);
  }
  if (c->program && a->nprogram == 0) {
    short_usage(c, buf, sizeof buf);
    return usage_error(c, "%s: give the command after '--' (nsl %s)", c->name, buf);
  }
  return -1;
}

int nsl__cli_parse(int argc, char **argv, nsl_cli_args *a) {
  memset(a, 0, sizeof *a);
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
  if (strcmp(cmd, "--help-synopsis") == 0) {
    print_all_synopses(stdout);
    return 0;
  }
  a->traces = calloc((size_t)argc + 1, sizeof *a->traces);
  a->given = calloc((size_t)argc + 1, sizeof *a->given);
  a->rest = calloc((size_t)argc + 1, sizeof *a->rest);
  a->program = calloc((size_t)argc + 1, sizeof *a->program);
  if (!a->traces || !a->given || !a->rest || !a->program) {
    fprintf(stderr, "nsl: out of memory\n");
    return 1;
  }
  a->command = find_command(cmd);
  if (!a->command) {
    /* `nsl TRACE...` with no command, on a terminal: the REPL on those traces. */
    if (isatty(0) && isatty(1) && access(cmd, R_OK) == 0) {
      a->command = find_command("repl");
      for (int i = 1; i < argc; i++) a->traces[a->ntraces++] = argv[i];
      return -1;
    }
    return unknown_command(cmd);
  }
  return parse_command(argc, argv, a);
}

const char *nsl__cli_value(const nsl_cli_args *a, const char *name) {
  const char *v = NULL;
  for (int k = 0; k < a->ngiven; k++)
    if (strcmp(a->given[k].opt->name, name) == 0) v = a->given[k].opt->kind == NSL_CLI_FLAG ? "" : a->given[k].value;
  return v;
}

void nsl__cli_free(nsl_cli_args *a) {
  free(a->traces);
  free(a->given);
  free(a->rest);
  free(a->program);
}

/* ---- dispatch ------------------------------------------------------------------------ */

static void set_list(lua_State *L, const char *field, const char **v, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, v[i]);
    lua_seti(L, -2, i + 1);
  }
  lua_setfield(L, -2, field);
}

/* Pushes o's field name in opts: declared, or the name without its
 * leading dashes with '-' as '_'. */
static void push_field(lua_State *L, const nsl_cli_option *o) {
  if (o->field) {
    lua_pushstring(L, o->field);
    return;
  }
  char buf[128];
  snprintf(buf, sizeof buf, "%s", o->name + strspn(o->name, "-"));
  for (char *p = buf; *p; p++)
    if (*p == '-') *p = '_';
  lua_pushstring(L, buf);
}

/* Sets the options given on the table on top (see nsl_cli_kind). */
static void set_given(lua_State *L, const nsl_cli_args *a) {
  for (int k = 0; k < a->ngiven; k++) {
    const nsl_cli_option *o = a->given[k].opt;
    push_field(L, o);
    if (o->kind == NSL_CLI_LIST) {
      lua_pushvalue(L, -1);
      if (lua_rawget(L, -3) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -2);
        lua_pushvalue(L, -2);
        lua_rawset(L, -5);
      }
      lua_pushstring(L, a->given[k].value);
      lua_seti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
      lua_pop(L, 2);
    } else {
      if (o->kind == NSL_CLI_FLAG) lua_pushboolean(L, 1);
      else lua_pushstring(L, a->given[k].value);
      lua_rawset(L, -3);
    }
  }
}

/* require(module).main(opts): the module and opts are arguments 1 and 2. */
static int call_main(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "main");
  lua_pushvalue(L, 2);
  lua_call(L, 1, 1);
  return 1;
}

/* Runs the parsed command in L: its C function or its module's main(opts). */
static int run_command(lua_State *L, const nsl_cli_args *a) {
  const nsl_cli_command *c = a->command;
  if (c->run) return c->run(L, a);
  lua_pushcfunction(L, call_main);
  lua_pushstring(L, c->module);
  lua_createtable(L, 0, 16);
  lua_pushstring(L, c->name);
  lua_setfield(L, -2, "command");
  if (c->first && a->first) {
    lua_pushstring(L, a->first);
    lua_setfield(L, -2, c->first);
  }
  set_list(L, "traces", a->traces, a->ntraces);
  set_list(L, "rest", a->rest, a->nrest);
  set_list(L, "program", a->program, a->nprogram);
  set_given(L, a);
  lua_pushboolean(L, a->help);
  lua_setfield(L, -2, "help");
  int status = nsl__docall(L, 2, 1);
  if (status != LUA_OK) {
    nsl__report(L, status);
    return 1;
  }
  int code = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return code;
}

int nsl__cli_dispatch(lua_State *L, const nsl_cli_args *a) {
  const nsl_cli_command *c = a->command;
  if (a->help && !(c->first_help && a->first)) {
    print_command_help(stdout, c);
    return 0;
  }
  const char *nsys = nsl__cli_value(a, "--nsys");   /* the nsys that exports .nsys-rep inputs */
  if (nsys && *nsys) nsl__state_set_nsys(L, nsys);
  if (nsl__cli_value(a, "--no-cache")) nsl__state_open_options(L)->cache = 0;
  nsl__cli_warnings();
  nsl__cli_progress_start(nsl__cli_value(a, "--quiet") != NULL);
  int code = run_command(L, a);
  nsl__cli_progress_stop();
  return code;
}
