/* ljob.c -- work on a thread of its own, for front ends that stay
 * responsive while a trace opens or loads (nsl tui):
 *   job = nsl.background(kind, ...)   kind: "open", "load", "lod",
 *       "nest_lanes", "nvtx_project" or "tree_paths", with the arguments of
 *       nsl.open, t:load, nsl.lod, nsl.nest_lanes, nsl.nvtx_project and
 *       nsl.tree_paths; returns at once
 *   job:done()    true once wait will not block
 *   job:wait()    the results of the synchronous function (once)
 *   job:cancel()  stops the work as soon as it can (a load within ~64k rows,
 *                 an nsys export is killed), waits for it, drops the results
 * A job collected or closed (local job <close> = ...) is cancelled.  The
 * work itself is an nsl__work (lnsl.h); its synchronous function is the
 * same work done at once (nsl__work_now). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lua/lnsl.h"
#include "core/parallel.h"

#define NSL_JOB_MT "nsl.job"

enum { PREPARED, RUNNING, RAN, FINISHED };

typedef struct job {
  const nsl__work *w;
  nsl__task *task;   /* while RUNNING on a thread of its own */
  int stage;
  union {   /* w->size bytes, aligned as Lua aligns userdata (8 bytes, not max_align_t's 16) */
    int64_t i;
    double d;
    void *p;
  } state[];
} job;

/* Cancels and waits for the work (if running), then releases the state. */
static void finish(job *j) {
  if (j->task) {
    nsl__task_cancel(j->task);
    nsl__task_join(j->task);
    j->task = NULL;
  }
  if (j->stage != FINISHED) j->w->release(j->state);
  j->stage = FINISHED;
}

/* Prepares w with the arguments from first on (their stack places do not
 * move: error messages name them as the synchronous function's) and pushes
 * the job box that holds the state from then on, with the arguments kept
 * alive in its user value. */
static job *prepare(lua_State *L, const nsl__work *w, int first) {
  union {
    max_align_t align;
    unsigned char bytes[4096];
  } tmp;
  if (w->size > sizeof tmp.bytes) luaL_error(L, "nsl: work state too large");   /* a build mistake */
  memset(tmp.bytes, 0, w->size);
  int top = lua_gettop(L);
  w->prepare(L, first, tmp.bytes);   /* raises before it retains anything */
  lua_settop(L, top);
  job *j = lua_newuserdatauv(L, sizeof *j + w->size, 1);
  j->w = w;
  j->task = NULL;
  j->stage = PREPARED;
  memcpy(j->state, tmp.bytes, w->size);
  luaL_setmetatable(L, NSL_JOB_MT);
  lua_createtable(L, top >= first ? top - first + 1 : 0, 0);
  for (int i = first; i <= top; i++) {
    lua_pushvalue(L, i);
    lua_seti(L, -2, i - first + 1);
  }
  lua_setiuservalue(L, -2, 1);
  return j;
}

/* Pushes the results of a job that ran (the job stays on the stack). */
static int deliver(lua_State *L, job *j) {
  j->stage = RAN;   /* push raising leaves the rest to the box's __gc */
  int n = j->w->push(L, j->state);
  j->w->release(j->state);
  j->stage = FINISHED;
  return n;
}

int nsl__work_now(lua_State *L, const nsl__work *w, int first) {
  job *j = prepare(L, w, first);
  int box = lua_gettop(L);
  w->run(j->state);
  int n = deliver(L, j);
  lua_remove(L, box);
  return n;
}

static void run_task(void *p) {
  job *j = p;
  j->w->run(j->state);
}

static const nsl__work *const kinds[] = {&nsl__work_open, &nsl__work_load, &nsl__work_lod, &nsl__work_nest_lanes,
                                         &nsl__work_nvtx_project, &nsl__work_tree_paths};

/* nsl.background(kind, ...) -> job */
static int l_background(lua_State *L) {
  const char *kind = luaL_checkstring(L, 1);
  const nsl__work *w = NULL;
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
    if (strcmp(kinds[k]->name, kind) == 0) w = kinds[k];
  if (!w) return luaL_error(L, "nsl.background: unknown kind '%s' (open, load, lod, nest_lanes, nvtx_project, tree_paths)", kind);
  job *j = prepare(L, w, 2);
  j->stage = RUNNING;
  if (!(j->task = nsl__task_start(run_task, j))) {   /* no thread: the work is done now */
    w->run(j->state);
    j->stage = RAN;
  }
  return 1;
}

static job *checkjob(lua_State *L) { return luaL_checkudata(L, 1, NSL_JOB_MT); }

/* job:done() -> boolean */
static int l_done(lua_State *L) {
  job *j = checkjob(L);
  if (j->stage == RUNNING && nsl__task_done(j->task)) {
    nsl__task_join(j->task);
    j->task = NULL;
    j->stage = RAN;
  }
  lua_pushboolean(L, j->stage != RUNNING);
  return 1;
}

/* job:wait() -> the results */
static int l_wait(lua_State *L) {
  job *j = checkjob(L);
  lua_settop(L, 1);   /* the box on top, for push */
  if (j->stage == FINISHED) return luaL_error(L, "job:wait: the job was waited for or cancelled already");
  if (j->task) {
    nsl__task_join(j->task);
    j->task = NULL;
  }
  return deliver(L, j);
}

/* job:cancel() */
static int l_cancel(lua_State *L) {
  finish(checkjob(L));
  return 0;
}

static int l_gc(lua_State *L) {
  finish(luaL_checkudata(L, 1, NSL_JOB_MT));
  return 0;
}

static int l_tostring(lua_State *L) {
  job *j = checkjob(L);
  static const char *const names[] = {"prepared", "running", "done", "finished"};
  lua_pushfstring(L, "nsl.job(%s, %s)", j->w->name, names[j->stage]);
  return 1;
}

static const luaL_Reg methods[] = {{"done", l_done}, {"wait", l_wait}, {"cancel", l_cancel}, {NULL, NULL}};
static const luaL_Reg metamethods[] = {{"__gc", l_gc}, {"__close", l_gc}, {"__tostring", l_tostring}, {NULL, NULL}};
static const luaL_Reg funcs[] = {{"background", l_background}, {NULL, NULL}};

int nsl__open_job(lua_State *L) {
  nsl__register_type(L, NSL_JOB_MT, metamethods, methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
