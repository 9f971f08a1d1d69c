/* lsys.c -- processes and files for the command modules (nsl profile,
 * nsl bundle): nsl.spawn runs a program with posix_spawnp (an argv, never
 * a shell string) and passes on its exit code or signal; the rest are the
 * few file-system calls Lua's os library lacks (temporary folders, folder
 * listings, file types, the environment, the terminal's width).
 *
 * Environmental failures return nil and a message; misuse raises. */
#define _XOPEN_SOURCE 700   /* nftw */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lua/lnsl.h"

extern char **environ;

static int push_errno(lua_State *L, const char *what, const char *path) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s '%s': %s", what, path, strerror(errno));
  return 2;
}

/* ---- nsl.spawn ---------------------------------------------------------- */

/* The child being waited for, for the forwarding handler (0: none). */
static volatile sig_atomic_t g_child;

static void forward_signal(int sig) {
  pid_t pid = (pid_t)g_child;
  if (pid > 0) kill(pid, sig);
}

/* A NULL-terminated array of the strings of the table at idx (kept alive by
 * the table), in a userdata pushed on the stack.  With as_env, the table
 * maps names to values and the strings "NAME=VALUE" are made (and kept in
 * a table pushed below the array). */
static char **string_array(lua_State *L, int idx, int as_env) {
  idx = lua_absindex(L, idx);
  if (!as_env) {
    lua_Integer n = luaL_len(L, idx);
    luaL_argcheck(L, n >= 1 && n < 100000, idx, "argv needs a program and at most 99999 arguments");
    char **v = lua_newuserdatauv(L, ((size_t)n + 1) * sizeof *v, 0);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, idx, i);
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "nsl.spawn: argv[%d] is not a string", (int)i);
      v[i - 1] = (char *)lua_tostring(L, -1);
      lua_pop(L, 1);
    }
    v[n] = NULL;
    return v;
  }
  lua_newtable(L);   /* keeps the "NAME=VALUE" strings alive */
  int keep = lua_gettop(L);
  lua_Integer n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) != LUA_TSTRING || !lua_isstring(L, -1))
      luaL_error(L, "nsl.spawn: env maps names (strings) to values (strings)");
    const char *name = lua_tostring(L, -2);
    if (!*name || strchr(name, '=')) luaL_error(L, "nsl.spawn: bad environment variable name '%s'", name);
    lua_pushfstring(L, "%s=%s", name, lua_tostring(L, -1));
    lua_seti(L, keep, ++n);
    lua_pop(L, 1);
  }
  char **v = lua_newuserdatauv(L, ((size_t)n + 1) * sizeof *v, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, keep, i);
    v[i - 1] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  v[n] = NULL;
  return v;
}

/* The string field of the options table at opts (0: none), or NULL. */
static const char *opt_path(lua_State *L, int opts, const char *field) {
  if (opts == 0) return NULL;
  lua_getfield(L, opts, field);
  const char *path = lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
  lua_pop(L, 1);   /* still referenced by the options table */
  return path;
}

/* Adds "open path on fd" (created or truncated when writing) to fa. */
static int redirect(posix_spawn_file_actions_t *fa, int fd, const char *path) {
  if (!path) return 0;
  return posix_spawn_file_actions_addopen(fa, fd, path, fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0644);
}

/* nsl.spawn(argv [, {env = {NAME = value}, stdin =, stdout =, stderr = path}])
 * -> code, how ("exit" or "signal"), number; or nil and a message when the
 * program cannot be started.  argv[1] is looked up in PATH unless it holds
 * a "/"; env (when given) is the whole environment of the program, else it
 * inherits nsl's.  code is the exit status, or 128 + the signal that ended
 * the program (as shells report it).  While it runs, nsl ignores SIGINT and
 * SIGQUIT (a terminal sends them to the program too) and passes SIGTERM
 * and SIGHUP on to it, so that nsl outlives the program and can finish its
 * work. */
static int l_spawn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int opts = 0;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    opts = 2;
  }
  char **argv = string_array(L, 1, 0);
  char **envp = environ;
  if (opts && lua_getfield(L, opts, "env") != LUA_TNIL) {
    luaL_checktype(L, -1, LUA_TTABLE);
    envp = string_array(L, -1, 1);
  }

  const char *in = opt_path(L, opts, "stdin"), *out = opt_path(L, opts, "stdout"),
             *errp = opt_path(L, opts, "stderr");
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  if (posix_spawn_file_actions_init(&fa) != 0) return luaL_error(L, "out of memory");
  if (posix_spawnattr_init(&attr) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    return luaL_error(L, "out of memory");
  }
  int rc = redirect(&fa, 0, in);
  if (rc == 0) rc = redirect(&fa, 1, out);
  if (rc == 0) rc = redirect(&fa, 2, errp);

  /* the program starts with default dispositions and nothing blocked */
  sigset_t none, deflt, fwd, old_mask;
  sigemptyset(&none);
  sigemptyset(&deflt);
  int defaults[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t k = 0; k < sizeof defaults / sizeof *defaults; k++) sigaddset(&deflt, defaults[k]);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr, &deflt);
  if (rc == 0) rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (rc != 0) {
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    lua_pushnil(L);
    lua_pushfstring(L, "cannot run '%s': %s", argv[0], strerror(rc));
    return 2;
  }

  /* ignore SIGINT/SIGQUIT, forward SIGTERM/SIGHUP; block the forwarded ones
   * until the child's pid is known */
  struct sigaction ign, fw, old_int, old_quit, old_term, old_hup;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  memset(&fw, 0, sizeof fw);
  fw.sa_handler = forward_signal;
  sigemptyset(&fw.sa_mask);
  fw.sa_flags = SA_RESTART;
  sigemptyset(&fwd);
  sigaddset(&fwd, SIGTERM);
  sigaddset(&fwd, SIGHUP);
  sigprocmask(SIG_BLOCK, &fwd, &old_mask);
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  sigaction(SIGTERM, &fw, &old_term);
  sigaction(SIGHUP, &fw, &old_hup);

  pid_t pid = 0;
  rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, envp);
  int status = 0;
  if (rc == 0) {
    g_child = (sig_atomic_t)pid;
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) {
        rc = errno;
        break;
      }
    g_child = 0;
  } else {
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGHUP, &old_hup, NULL);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);

  if (rc != 0) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot run '%s': %s", argv[0], strerror(rc));
    return 2;
  }
  if (WIFSIGNALED(status)) {
    lua_pushinteger(L, 128 + WTERMSIG(status));
    lua_pushliteral(L, "signal");
    lua_pushinteger(L, WTERMSIG(status));
  } else {
    lua_pushinteger(L, WIFEXITED(status) ? WEXITSTATUS(status) : 1);
    lua_pushliteral(L, "exit");
    lua_pushinteger(L, WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  return 3;
}

/* ---- the environment and the host --------------------------------------- */

/* nsl.environ() -> {NAME = value} of nsl's environment. */
static int l_environ(lua_State *L) {
  lua_newtable(L);
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || eq == *e) continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    lua_pushstring(L, eq + 1);
    lua_rawset(L, -3);
  }
  return 1;
}

/* nsl.hostname() -> the name of this machine. */
static int l_hostname(lua_State *L) {
  char name[256];
  if (gethostname(name, sizeof name) != 0) return push_errno(L, "cannot read the host name", "");
  name[sizeof name - 1] = '\0';
  lua_pushstring(L, name);
  return 1;
}

/* nsl.getpid() -> nsl's process id. */
static int l_getpid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

/* ---- files and folders ---------------------------------------------------- */

/* nsl.mkdtemp(prefix) -> a new folder "<prefix>XXXXXX" (mode 0700), or nil
 * and a message. */
static int l_mkdtemp(lua_State *L) {
  const char *prefix = luaL_checkstring(L, 1);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, prefix);
  luaL_addstring(&b, "XXXXXX");
  luaL_pushresult(&b);
  char *tmpl = (char *)lua_newuserdatauv(L, lua_rawlen(L, -1) + 1, 0);
  memcpy(tmpl, lua_tostring(L, -2), lua_rawlen(L, -2) + 1);
  if (!mkdtemp(tmpl)) return push_errno(L, "cannot create a temporary folder", lua_tostring(L, -2));
  lua_pushstring(L, tmpl);
  return 1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  int r = flag == FTW_DP ? rmdir(path) : unlink(path);
  return r != 0 && errno != ENOENT ? -1 : 0;
}

/* nsl.rmtree(path) -> true, or nil and a message: removes a folder and
 * everything in it, never following links (a link is removed, not what it
 * points to).  Meant for nsl's own temporary folders. */
static int l_rmtree(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat sb;
  if (lstat(path, &sb) != 0) {
    if (errno == ENOENT) {
      lua_pushboolean(L, 1);
      return 1;
    }
    return push_errno(L, "cannot remove", path);
  }
  int r = S_ISDIR(sb.st_mode) ? nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) : unlink(path);
  if (r != 0) return push_errno(L, "cannot remove", path);
  lua_pushboolean(L, 1);
  return 1;
}

/* nsl.stat(path [, follow]) -> {type = "file"|"dir"|"link"|"other", size =,
 * mtime = (seconds), mtime_ns =}, or nil and a message.  Links are followed
 * unless follow is false. */
static int l_stat(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int follow = lua_isnoneornil(L, 2) || lua_toboolean(L, 2);
  struct stat sb;
  if ((follow ? stat(path, &sb) : lstat(path, &sb)) != 0) return push_errno(L, "cannot read", path);
  lua_createtable(L, 0, 4);
  lua_pushstring(L, S_ISREG(sb.st_mode) ? "file" : S_ISDIR(sb.st_mode) ? "dir" : S_ISLNK(sb.st_mode) ? "link" : "other");
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)sb.st_size);
  lua_setfield(L, -2, "size");
  lua_pushinteger(L, (lua_Integer)sb.st_mtim.tv_sec);
  lua_setfield(L, -2, "mtime");
  lua_pushinteger(L, (lua_Integer)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec);
  lua_setfield(L, -2, "mtime_ns");
  return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* nsl.listdir(path) -> the names in a folder ("." and ".." left out),
 * sorted, or nil and a message. */
static int l_listdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  if (!d) return push_errno(L, "cannot list", path);
  lua_newtable(L);
  lua_Integer n = 0;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    lua_pushstring(L, e->d_name);
    lua_seti(L, -2, ++n);
  }
  int failed = errno != 0;
  closedir(d);
  if (failed) return push_errno(L, "cannot list", path);
  /* sort by byte order for a stable result */
  const char **names = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *names, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, -2, i);
    names[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1);   /* still referenced by the table */
  }
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  lua_createtable(L, (int)n, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_pushstring(L, names[i - 1]);
    lua_seti(L, -2, i);
  }
  return 1;
}

/* nsl.realpath(path) -> the absolute path without links, ".." or ".", or
 * nil and a message. */
static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char *r = realpath(path, NULL);
  if (!r) return push_errno(L, "cannot resolve", path);
  lua_pushstring(L, r);
  free(r);
  return 1;
}

/* nsl.same_file(a, b) -> true when both paths name one file (the same
 * device and inode, through links and hard links), false otherwise (also
 * when either does not exist). */
static int l_same_file(lua_State *L) {
  struct stat sa, sb;
  const char *a = luaL_checkstring(L, 1), *b = luaL_checkstring(L, 2);
  lua_pushboolean(L, stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
  return 1;
}

/* nsl.terminal_width() -> the columns of the terminal stdout writes to, or
 * nil when stdout is not a terminal (a file, a pipe): tables fit a
 * terminal, never a file. */
static int l_terminal_width(lua_State *L) {
  struct winsize ws;
  if (!isatty(1) || ioctl(1, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, ws.ws_col);
  return 1;
}

/* ---- nsys ----------------------------------------------------------------- */

/* nsl.find_nsys([given]) -> path, or nil and a message: the one search for
 * nsys (--nsys, NSYS, PATH, the install folders), shared with the export of
 * .nsys-rep inputs. */
static int l_find_nsys(lua_State *L) {
  char *out = NULL;
  const char *given = luaL_optstring(L, 1, NULL);
  nsl_error err = {0};
  nsl_status rc = nsl_rep_find_nsys(given && *given ? given : nsl__state_open_options(L)->nsys, &out, &err);
  if (rc == NSL_OK) lua_pushstring(L, out);
  free(out);
  if (rc == NSL_ERR_NOMEM) return luaL_error(L, "out of memory");
  return rc == NSL_OK ? 1 : nsl__push_fail(L, &err);
}

/* nsl.set_nsys(path|nil) -- the nsys program for .nsys-rep inputs (--nsys). */
static int l_set_nsys(lua_State *L) {
  nsl__state_set_nsys(L, luaL_optstring(L, 1, NULL));
  return 0;
}

/* nsl.qdstrm_importer(nsys) -> the QdstrmImporter shipped with that nsys,
 * or nil. */
static int l_qdstrm_importer(lua_State *L) {
  char *out = NULL;
  if (nsl_rep_find_importer(luaL_checkstring(L, 1), &out) != 0) lua_pushnil(L);
  else lua_pushstring(L, out);
  free(out);
  return 1;
}

/* nsl.is_nsys_rep(path) -> true when the file is an Nsight Systems report. */
static int l_is_nsys_rep(lua_State *L) {
  lua_pushboolean(L, nsl_rep_sniff(luaL_checkstring(L, 1)));
  return 1;
}

/* nsl.nsys_export(report) -> the path of its SQLite export in the cache
 * folder (exported now, or reused), or nil and a message. */
static int l_nsys_export(lua_State *L) {
  char *out = NULL;
  nsl_error err = {0};
  if (nsl_rep_export(luaL_checkstring(L, 1), nsl__state_open_options(L)->nsys, &out, &err) != NSL_OK) {
    return nsl__push_fail(L, &err);
  }
  lua_pushstring(L, out);
  free(out);
  return 1;
}

static const luaL_Reg funcs[] = {{"find_nsys", l_find_nsys}, {"set_nsys", l_set_nsys},
                                 {"qdstrm_importer", l_qdstrm_importer},
                                 {"is_nsys_rep", l_is_nsys_rep}, {"nsys_export", l_nsys_export},{"spawn", l_spawn},     {"environ", l_environ}, {"hostname", l_hostname},
                                 {"getpid", l_getpid},   {"mkdtemp", l_mkdtemp}, {"rmtree", l_rmtree},
                                 {"stat", l_stat},       {"listdir", l_listdir}, {"realpath", l_realpath},
                                 {"same_file", l_same_file},
                                 {"terminal_width", l_terminal_width},
                                 {NULL, NULL}};

int nsl__open_sys(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
