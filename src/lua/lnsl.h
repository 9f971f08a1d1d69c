/* lnsl.h -- the Lua binding of nsl: userdata types and their checkers. */
#ifndef NSL_LUA_LNSL_H
#define NSL_LUA_LNSL_H

#include <lauxlib.h>
#include <lua.h>

#include "nsl/nsl.h"

#define NSL_COLUMN_MT "nsl.column"
#define NSL_TABLE_MT "nsl.table"
#define NSL_TRACE_MT "nsl.trace"
#define NSL_GROUPS_MT "nsl.groups"
#define NSL_IV_MT "nsl.intervals"
#define NSL_CANVAS_MT "nsl.canvas"

/* Raise nsl error objects {message [, internal]} (laux.c).  nsl__raise: a failure
 * of the input or the environment (nsl.fail), shown to the user as one line.
 * nsl__lua_error: err from a kernel; its refusal of the arguments
 * (NSL_ERR_ARG: lengths, types, column names) is a broken precondition of
 * the calling script, marked internal (the runner reports it as a bug, with
 * the analysis, the input and a traceback); other codes are input failures.
 * nsl__input_error: err from reading an input (sources, user patterns), an
 * input failure whatever its code. */
int nsl__raise(lua_State *L, const char *msg);
/* nsl__raise for a value the analysis rejects (usage = true: exit 2, as a usage error). */
int nsl__raise_usage(lua_State *L, const char *msg);
int nsl__lua_error(lua_State *L, const nsl_error *err);
int nsl__input_error(lua_State *L, const nsl_error *err);
/* nsl__lua_error with what failed before the message ("nsl.pack: ..."):
 * fmt and its arguments, printf-style. */
int nsl__lua_errorf(lua_State *L, const nsl_error *err, const char *fmt, ...);
/* The failure return of a function that reports environmental failure as
 * values (as luaL_fileresult): pushes nil and err's message, returns 2. */
int nsl__push_fail(lua_State *L, const nsl_error *err);

/* Registers userdata type `name` (laux.c): luaL_newmetatable(L, name), the
 * metamethods `meta` (NULL: none) set in it, and the methods `methods` in
 * one new table kept as the metatable's field "methods" (where Lua adds
 * methods: nsl.core.methods) and, unless `meta` has its own __index (a
 * placeholder {"__index", NULL} does not count), as __index.  Leaves the
 * stack as it was. */
void nsl__register_type(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods);

/* The collector's view of C memory (lcolumn.c): boxes charge the bytes
 * they alone own when made and credit them when collected; a full
 * collection runs when the live total has grown by an eighth. */
void nsl__gc_charge(lua_State *L, size_t bytes);
void nsl__gc_credit(lua_State *L, size_t bytes);

/* Columns: the box holds one reference. */
nsl_column *nsl__checkcolumn(lua_State *L, int idx);
nsl_column *nsl__tocolumn(lua_State *L, int idx);        /* NULL when not a column */
/* Pushes c, taking over the caller's reference (NULL raises out-of-memory). */
void nsl__pushcolumn(lua_State *L, nsl_column *c);
/* Makes a column from a Lua value: a column (retained), or an array of
 * numbers/strings (dict used for strings). */
nsl_column *nsl__tocolumn_any(lua_State *L, int idx, nsl_dict *dict);
int nsl__open_column(lua_State *L);

/* Tables: the box holds one reference and, as user value, whatever keeps
 * its loader valid (the trace). */
nsl_table *nsl__checktable(lua_State *L, int idx);
/* Pushes t (taking over the reference); keep_idx (0 for none) is a stack
 * value kept alive as long as the table. */
void nsl__pushtable(lua_State *L, nsl_table *t, int keep_idx);
int nsl__open_table(lua_State *L);

/* The strings of the array at idx, or the string arguments from idx on
 * (t:load{"a", "b"} or t:load("a", "b")), into out (at most max, else an
 * argument error: "at most MAX WHAT"); returns their number.  They stay valid while the
 * arguments are on the stack. */
int nsl__check_strings(lua_State *L, int idx, const char **out, int max, const char *what);
/* The state's shared dictionary (laux.c): every trace and every string
 * column made in this Lua state uses it, so string ids compare across traces. */
nsl_dict *nsl__state_dict(lua_State *L);
/* The options the state's traces open with (host state in the registry,
 * never a process global): the CLI sets them from --nsys and --no-cache;
 * nsl__state_set_nsys sets the nsys (copied; NULL: searched). */
nsl_open_options *nsl__state_open_options(lua_State *L);
void nsl__state_set_nsys(lua_State *L, const char *nsys);

int nsl__open_trace(lua_State *L);
/* The row conditions {column, op, value [, "or null"]} of the list at idx
 * (core/rowfilter.h): op "match" or "imatch" (value a regex; imatch ignores
 * case), "in" (a list of integers), or one of == ~= < <= > >= (an integer;
 * "or null": NULL passes too).  The conditions, their strings and values
 * live on the stack (pushed above idx) until the caller returns. */
struct nsl__row_cond;
const struct nsl__row_cond *nsl__check_row_conds(lua_State *L, int idx, int *n);
/* The trace of a trace userdata (raises when closed or not a trace). */
nsl_trace *nsl__checktrace(lua_State *L, int idx);
/* Pushes an empty trace box and returns its slot: the caller stores a
 * trace there (owned by the box from then on), then sets the state's
 * dictionary on it (nsl_trace_set_dict). */
nsl_trace **nsl__newtrace(lua_State *L);
/* nsl.mpi: distributed runs (lmpi.c). */
int nsl__open_mpi(lua_State *L);
int nsl__open_jax(lua_State *L);   /* range-tree kernels (ljax.c) */
int nsl__open_hlo(lua_State *L);   /* XLA metadata (lhlo.c); after nsl__open_trace */
int nsl__open_intervals(lua_State *L);
int nsl__open_io(lua_State *L);
/* Bundles (lbundle.c): nsl.bundle_open, nsl.bundle_writer, nsl.bundle_combine. */
int nsl__open_bundle(lua_State *L);
/* Processes and files for the command modules (lsys.c): nsl.spawn, ... */
int nsl__open_sys(lua_State *L);
/* nsl.progress, nsl.cache_enabled (lprogress.c) */
int nsl__open_progress(lua_State *L);
/* Regular expressions (lregex.c) and the interval sweeps by key (loverlap.c). */
int nsl__open_regex(lua_State *L);
int nsl__open_overlap(lua_State *L);
/* nsl.nvtx_project, nsl.tree_paths (lsweep.c) */
int nsl__open_sweep(lua_State *L);
int nsl__open_render(lua_State *L);    /* nsl.canvas, ticks, palette (lrender.c) */
int nsl__open_binning(lua_State *L);   /* bins, depths, spans, format_rows (lbinning.c) */
int nsl__open_lod(lua_State *L);       /* nsl.lod: a timeline's level of detail (llod.c) */
int nsl__open_curses(lua_State *L);    /* nsl.curses: the terminal of nsl tui (lcurses.c; nil without ncurses) */

/* Work that can run on a thread of its own (ljob.c): the same work as a
 * synchronous function (nsl.lod, ...) and as nsl.background(kind, ...).
 * Its state is `size` bytes, zeroed, kept in a job box on the Lua stack.
 *   prepare (Lua thread): reads the arguments from stack index first on
 *     (raising on bad ones), retains what run needs;
 *   run (any thread): the work, touching nothing the Lua thread uses;
 *   push (Lua thread): pushes the results (or raises) and returns their
 *     number; what it pushes is no longer the state's to release; the job
 *     box is on top of the stack, its user value 1 the list of arguments;
 *   release (Lua thread): frees what the state still holds (after push,
 *     after a cancel, or after a failed prepare: fields may be zero). */
typedef struct nsl__work {
  const char *name;   /* the kind nsl.background names */
  size_t size;
  void (*prepare)(lua_State *L, int first, void *state);
  void (*run)(void *state);
  int (*push)(lua_State *L, void *state);
  void (*release)(void *state);
} nsl__work;
/* Does w now on the calling thread with the arguments from first on and
 * returns push's count: the synchronous function of w. */
int nsl__work_now(lua_State *L, const nsl__work *w, int first);
extern const nsl__work nsl__work_open, nsl__work_load, nsl__work_lod, nsl__work_nest_lanes, nsl__work_nvtx_project,
    nsl__work_tree_paths;
int nsl__open_job(lua_State *L);   /* nsl.background (ljob.c) */

/* luaopen for the C core module ("nsl.core"). */
int luaopen_nsl_core(lua_State *L);
/* Opens Lua's standard libraries and makes require find nsl.core and the
 * Lua files (embedded, or under NSL_LUA_PATH): every state nsl runs starts
 * so (the CLI's, the fuzzing harness's). */
void nsl__open_libs(lua_State *L);

#endif
