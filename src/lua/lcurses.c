/* lcurses.c -- the terminal for nsl tui: a small binding of ncursesw (the
 * wide-character build), only what a full-screen front end in Lua needs.
 * nsl.curses (nil when nsl was built without ncurses):
 *   info = curses.init()         {colors = n, utf8 = bool}; raw keys, no echo
 *   curses.done()                the terminal as it was (also at exit)
 *   rows, cols = curses.size()
 *   key = curses.getch(ms)       a key name ("q", "up", "pgdn", "resize", "C-a", ...) or nil on timeout
 *   curses.erase(); curses.refresh()
 *   curses.put(y, x, text, pair, attrs)   UTF-8 text clipped at the right edge
 *   curses.pair(id, fg, bg)      colour pair id (1..) from colours (-1: the terminal's default)
 *   curses.cursor(visible [, y, x])
 *   curses.interrupted()         "idle" (Ctrl-C while waiting for a key), "busy" (while computing), or nil;
 *                                clears it
 *   curses.now()                 monotonic ns (redraw timings)
 *   curses.warnings()            the library's warnings since the last call (a list of lines), kept
 *                                while the terminal is claimed (between init and done: neither they nor
 *                                the CLI's progress line are written to it)
 *   curses.BOLD, REVERSE, UNDERLINE, DIM
 * Ctrl-C (SIGINT) while Lua computes stops the computation with the error
 * "interrupted" (as lua.c does); while waiting for a key it makes getch
 * return "interrupt".  The terminal is restored by done(), by an error
 * that unwinds to the caller's pcall (the caller calls done()), and at exit. */
#if defined(NSL_HAVE_NCURSES) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700   /* wcwidth */
#endif
#include "lua/lnsl.h"

#ifdef NSL_HAVE_NCURSES
#include <pthread.h>

#include "core/nsl_internal.h"
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

static int active = 0;                       /* between init and done */
static lua_State *hookL = NULL;              /* the state a Ctrl-C stops */
static volatile sig_atomic_t waiting = 0;    /* inside getch */
static volatile sig_atomic_t interrupt = 0;  /* 1: while waiting, 2: while computing */
static struct sigaction old_int;

/* Raises "interrupted" at the next Lua instruction (set from the handler). */
static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted");
}

static void on_sigint(int sig) {
  (void)sig;
  if (waiting) {
    interrupt = 1;
  } else {
    interrupt = 2;
    if (hookL) lua_sethook(hookL, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  }
}

/* Warnings given while the terminal is claimed (from any thread): the
 * last WARNINGS of them, for curses.warnings. */
#define WARNINGS 8
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char warnings[WARNINGS][256];
static int nwarnings;
static nsl__warn_fn old_sink;
static void *old_sink_ctx;

static void keep_warning(void *ctx, const char *msg) {
  (void)ctx;
  pthread_mutex_lock(&warn_lock);
  if (nwarnings == WARNINGS) {
    memmove(warnings[0], warnings[1], sizeof warnings - sizeof warnings[0]);
    nwarnings--;
  }
  snprintf(warnings[nwarnings++], sizeof warnings[0], "%s", msg);
  pthread_mutex_unlock(&warn_lock);
}

/* The terminal back to its state before init (idempotent). */
static void restore(void) {
  if (!active) return;
  nsl__set_warn_sink(old_sink, old_sink_ctx);
  nsl__terminal_claim(0);
  endwin();
  sigaction(SIGINT, &old_int, NULL);
  active = 0;
  hookL = NULL;
}

static int l_init(lua_State *L) {
  static int registered = 0;
  if (!active) {
    /* wide characters: main.c set a UTF-8 LC_CTYPE at start-up */
    if (!isatty(0) || !isatty(1)) return luaL_error(L, "nsl tui needs a terminal (standard input and output)");
    if (!registered) {
      atexit(restore);
      registered = 1;
    }
    const char *term = getenv("TERM");
    SCREEN *s = newterm(term && *term ? term : "xterm", stdout, stdin);
    if (!s) return luaL_error(L, "cannot use terminal type '%s' (set TERM)", term ? term : "");
    set_term(s);
    active = 1;
    nsl__terminal_claim(1);
    nsl__get_warn_sink(&old_sink, &old_sink_ctx);
    nsl__set_warn_sink(keep_warning, NULL);
    cbreak();   /* keys one by one; Ctrl-C still raises SIGINT, caught below */
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    intrflush(stdscr, FALSE);
    set_escdelay(25);
    curs_set(0);
    if (has_colors()) {
      start_color();
      use_default_colors();
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
  }
  hookL = L;
  interrupt = 0;
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, has_colors() ? COLORS : 0);
  lua_setfield(L, -2, "colors");
  const char *cs = nl_langinfo(CODESET);
  lua_pushboolean(L, cs && strcmp(cs, "UTF-8") == 0);
  lua_setfield(L, -2, "utf8");
  return 1;
}

/* curses.warnings() -> {line, ...} (forgotten once returned) */
static int l_warnings(lua_State *L) {
  pthread_mutex_lock(&warn_lock);
  lua_createtable(L, nwarnings, 0);
  for (int i = 0; i < nwarnings; i++) {
    lua_pushstring(L, warnings[i]);
    lua_seti(L, -2, i + 1);
  }
  nwarnings = 0;
  pthread_mutex_unlock(&warn_lock);
  return 1;
}

static int l_done(lua_State *L) {
  (void)L;
  restore();
  return 0;
}

static int check_active(lua_State *L) {
  if (!active) return luaL_error(L, "the terminal is not in curses mode (curses.init first)");
  return 1;
}

static int l_size(lua_State *L) {
  check_active(L);
  lua_pushinteger(L, LINES);
  lua_pushinteger(L, COLS);
  return 2;
}

static const struct {
  int code;
  const char *name;
} key_names[] = {{KEY_UP, "up"},         {KEY_DOWN, "down"},     {KEY_LEFT, "left"},       {KEY_RIGHT, "right"},
                 {KEY_PPAGE, "pgup"},    {KEY_NPAGE, "pgdn"},    {KEY_HOME, "home"},       {KEY_END, "end"},
                 {KEY_RESIZE, "resize"}, {KEY_ENTER, "enter"},   {KEY_BACKSPACE, "backspace"},
                 {KEY_DC, "delete"},     {KEY_IC, "insert"},     {KEY_BTAB, "btab"},       {KEY_SLEFT, "S-left"},
                 {KEY_SRIGHT, "S-right"}, {KEY_F(1), "f1"},      {0, NULL}};

/* curses.getch(ms) -> key name or nil after ms (negative: wait). */
static int l_getch(lua_State *L) {
  check_active(L);
  lua_Integer ms = luaL_optinteger(L, 1, -1);
  timeout(ms < 0 ? -1 : (int)ms);
  wint_t ch = 0;
  waiting = 1;
  int rc = interrupt == 1 ? ERR : get_wch(&ch);
  waiting = 0;
  if (interrupt == 1) {
    lua_pushliteral(L, "interrupt");
    return 1;
  }
  if (rc == ERR) return 0;
  if (rc == KEY_CODE_YES) {
    for (int i = 0; key_names[i].name; i++)
      if (key_names[i].code == (int)ch) {
        lua_pushstring(L, key_names[i].name);
        return 1;
      }
    lua_pushfstring(L, "key%d", (int)ch);
    return 1;
  }
  if (ch == '\r' || ch == '\n') lua_pushliteral(L, "enter");
  else if (ch == 27) lua_pushliteral(L, "esc");
  else if (ch == '\t') lua_pushliteral(L, "tab");
  else if (ch == 127 || ch == 8) lua_pushliteral(L, "backspace");
  else if (ch < 32) lua_pushfstring(L, "C-%c", (int)ch + 'a' - 1);
  else {
    char buf[MB_LEN_MAX + 1];
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t n = wcrtomb(buf, (wchar_t)ch, &st);
    if (n == (size_t)-1) return 0;
    lua_pushlstring(L, buf, n);
  }
  return 1;
}

static int l_erase(lua_State *L) {
  check_active(L);
  erase();
  return 0;
}

static int l_refresh(lua_State *L) {
  check_active(L);
  refresh();
  return 0;
}

#define ATTR_BOLD 1
#define ATTR_REVERSE 2
#define ATTR_UNDERLINE 4
#define ATTR_DIM 8

/* curses.put(y, x, text [, pair [, attrs]]): text clipped at the right edge
 * (a character that does not fit is left out); invalid UTF-8 shows as '?'. */
static int l_put(lua_State *L) {
  check_active(L);
  lua_Integer y = luaL_checkinteger(L, 1), x = luaL_checkinteger(L, 2);
  size_t len;
  const char *s = luaL_checklstring(L, 3, &len);
  lua_Integer pair = luaL_optinteger(L, 4, 0), attrs = luaL_optinteger(L, 5, 0);
  if (y < 0 || y >= LINES || x >= COLS) return 0;
  wchar_t buf[1024];
  int n = 0, width = 0, room = (int)(COLS - (x < 0 ? 0 : x));
  mbstate_t st;
  memset(&st, 0, sizeof st);
  lua_Integer col = x;
  for (size_t i = 0; i < len && n < 1023;) {
    wchar_t w;
    size_t k = mbrtowc(&w, s + i, len - i, &st);
    if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
      w = L'?';
      k = 1;
      memset(&st, 0, sizeof st);
    }
    i += k;
    int cw = wcwidth(w);
    if (cw < 0) w = L'?', cw = 1;
    if (col < 0) {   /* left of the screen: skipped */
      col += cw;
      continue;
    }
    if (width + cw > room) break;
    buf[n++] = w;
    width += cw;
    col += cw;
  }
  buf[n] = 0;
  attr_t a = 0;
  if (attrs & ATTR_BOLD) a |= A_BOLD;
  if (attrs & ATTR_REVERSE) a |= A_REVERSE;
  if (attrs & ATTR_UNDERLINE) a |= A_UNDERLINE;
  if (attrs & ATTR_DIM) a |= A_DIM;
  attr_set(a, (short)pair, NULL);
  mvaddnwstr((int)y, (int)(x < 0 ? 0 : x), buf, n);
  attr_set(A_NORMAL, 0, NULL);
  return 0;
}

static int l_pair(lua_State *L) {
  check_active(L);
  lua_Integer id = luaL_checkinteger(L, 1), fg = luaL_checkinteger(L, 2), bg = luaL_checkinteger(L, 3);
  if (has_colors() && id > 0 && id < COLOR_PAIRS) init_pair((short)id, (short)fg, (short)bg);
  return 0;
}

static int l_cursor(lua_State *L) {
  check_active(L);
  curs_set(lua_toboolean(L, 1) ? 1 : 0);
  if (!lua_isnoneornil(L, 2)) move((int)luaL_checkinteger(L, 2), (int)luaL_checkinteger(L, 3));
  return 0;
}

static int l_interrupted(lua_State *L) {
  int k = interrupt;
  interrupt = 0;
  if (k == 0) return 0;
  lua_pushstring(L, k == 1 ? "idle" : "busy");
  return 1;
}

/* curses.now() -> monotonic ns (redraw timings). */
static int l_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushinteger(L, (lua_Integer)ts.tv_sec * 1000000000 + ts.tv_nsec);
  return 1;
}

static const luaL_Reg curses_funcs[] = {{"now", l_now}, {"warnings", l_warnings}, {"init", l_init},       {"done", l_done},     {"size", l_size},
                                        {"getch", l_getch},     {"erase", l_erase},   {"refresh", l_refresh},
                                        {"put", l_put},         {"pair", l_pair},     {"cursor", l_cursor},
                                        {"interrupted", l_interrupted}, {NULL, NULL}};

int nsl__open_curses(lua_State *L) {
  luaL_newlib(L, curses_funcs);
  const struct {
    const char *name;
    int v;
  } consts[] = {{"BOLD", ATTR_BOLD}, {"REVERSE", ATTR_REVERSE}, {"UNDERLINE", ATTR_UNDERLINE}, {"DIM", ATTR_DIM}};
  for (size_t i = 0; i < sizeof consts / sizeof *consts; i++) {
    lua_pushinteger(L, consts[i].v);
    lua_setfield(L, -2, consts[i].name);
  }
  lua_setfield(L, -2, "curses");
  return 0;
}

#else

/* Built without ncurses: nsl.curses stays nil (nsl tui says so). */
int nsl__open_curses(lua_State *L) {
  (void)L;
  return 0;
}

#endif
