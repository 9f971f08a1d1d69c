/* llod.c -- the level of detail of a timeline in Lua (src/core/lod.h):
 *   l = nsl.lod(start, stop, lane, class|nil, nlanes)   lanes 0-based; each a column or a list of
 *       columns (parts of the rows, one after the other)
 *   count, busy, row, class = l:query(lane, from, to, ncols)   arrays of ncols
 *   busy, starts = l:bins(lane, from, to, nbins)   i64 columns of nbins
 *   l:at(lane, t), l:step(lane, t, dir)   input rows (0-based) or nil
 *   l:filter(mask) -> a new index of the rows where mask is set
 *   l:extent([lane]) -> lo, hi (nil without events); l:count(lane); #l lanes */
#include "lua/lnsl.h"
#include "core/lod.h"

#define NSL_LOD_MT "nsl.lod"

typedef struct lod_box {
  nsl_lod *lod;
  size_t charged;
} lod_box;

static lod_box *checklod(lua_State *L, int idx) {
  lod_box *b = luaL_checkudata(L, idx, NSL_LOD_MT);
  if (!b->lod) luaL_error(L, "the level-of-detail index is closed");
  return b;
}

/* A new empty box on the stack (before the index exists, so no error leaks it). */
static lod_box *newbox(lua_State *L) {
  lod_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->lod = NULL;
  b->charged = 0;
  luaL_setmetatable(L, NSL_LOD_MT);
  return b;
}

static void adopt(lua_State *L, lod_box *b, nsl_lod *l) {
  b->lod = l;
  b->charged = nsl_lod_bytes(l);
  nsl__gc_charge(L, b->charged);
}

/* nsl.lod(start, stop, lane, class|nil, nlanes), as work (nsl__work: also nsl.background("lod", ...)).
 * Each of start, stop, lane and class may be a list of columns instead, the parts of the rows (one after the
 * other; nsl_lod_build_parts), so a caller with several tables of events makes no concatenation. */
#define LOD_MAX_PARTS 64
typedef struct lod_work {
  nsl_column *start[LOD_MAX_PARTS], *stop[LOD_MAX_PARTS], *lane[LOD_MAX_PARTS], *cls[LOD_MAX_PARTS];
  int nparts, has_cls;
  int64_t nlanes;
  nsl_lod *lod;
  nsl_error err;
} lod_work;

/* The parts of argument idx (a column, or a list of them) into cols; their number. */
static int lod_parts(lua_State *L, int idx, nsl_column **cols) {
  if (!lua_istable(L, idx)) {
    cols[0] = nsl__checkcolumn(L, idx);
    return 1;
  }
  lua_Integer n = luaL_len(L, idx);
  luaL_argcheck(L, n >= 1 && n <= LOD_MAX_PARTS, idx, "a column or a list of 1 to 64 columns");
  for (lua_Integer k = 1; k <= n; k++) {
    lua_geti(L, idx, k);
    if (!(cols[k - 1] = nsl__tocolumn(L, -1))) luaL_argerror(L, idx, lua_pushfstring(L, "part %d is not a column", (int)k));
    lua_pop(L, 1);   /* (the list keeps it alive until the work retains it) */
  }
  return (int)n;
}

static void lod_prepare(lua_State *L, int first, void *p) {
  lod_work *w = p;
  nsl_column *s[LOD_MAX_PARTS], *e[LOD_MAX_PARTS], *g[LOD_MAX_PARTS], *k[LOD_MAX_PARTS];
  int n = lod_parts(L, first, s);
  int has_cls = !lua_isnoneornil(L, first + 3);
  if (lod_parts(L, first + 1, e) != n || lod_parts(L, first + 2, g) != n || (has_cls && lod_parts(L, first + 3, k) != n))
    luaL_error(L, "nsl.lod: start, stop, lane and class need the same number of parts");
  w->nlanes = luaL_checkinteger(L, first + 4);
  w->nparts = n;
  w->has_cls = has_cls;
  for (int i = 0; i < n; i++) {
    w->start[i] = nsl_column_retain(s[i]);
    w->stop[i] = nsl_column_retain(e[i]);
    w->lane[i] = nsl_column_retain(g[i]);
    w->cls[i] = has_cls ? nsl_column_retain(k[i]) : NULL;
  }
}

static void lod_run(void *p) {
  lod_work *w = p;
  w->lod = nsl_lod_build_parts((const nsl_column *const *)w->start, (const nsl_column *const *)w->stop,
                               (const nsl_column *const *)w->lane,
                               w->has_cls ? (const nsl_column *const *)w->cls : NULL, w->nparts, w->nlanes, &w->err);
}

static int lod_push(lua_State *L, void *p) {
  lod_work *w = p;
  if (!w->lod) return nsl__lua_error(L, &w->err);
  lod_box *b = newbox(L);
  adopt(L, b, w->lod);
  w->lod = NULL;
  return 1;
}

static void lod_release(void *p) {
  lod_work *w = p;
  for (int i = 0; i < w->nparts; i++) {
    nsl_column_release(w->start[i]);
    nsl_column_release(w->stop[i]);
    nsl_column_release(w->lane[i]);
    nsl_column_release(w->cls[i]);
  }
  nsl_lod_free(w->lod);
}

const nsl__work nsl__work_lod = {"lod", sizeof(lod_work), lod_prepare, lod_run, lod_push, lod_release};

static int l_lod(lua_State *L) { return nsl__work_now(L, &nsl__work_lod, 1); }

/* l:query(lane, from, to, ncols) -> count, busy, row, class (arrays of ncols). */
static int l_query(lua_State *L) {
  lod_box *b = checklod(L, 1);
  lua_Integer lane = luaL_checkinteger(L, 2), from = luaL_checkinteger(L, 3), to = luaL_checkinteger(L, 4);
  lua_Integer ncols = luaL_checkinteger(L, 5);
  luaL_argcheck(L, ncols >= 1 && ncols <= 4096, 5, "1 to 4096 columns");
  nsl_lod_cell *cells = lua_newuserdatauv(L, (size_t)ncols * sizeof *cells, 0);
  nsl_error err = {0};
  if (nsl_lod_query(b->lod, lane, from, to, ncols, cells, &err) != NSL_OK) return nsl__lua_error(L, &err);
  int base = lua_gettop(L);
  for (int k = 0; k < 4; k++) lua_createtable(L, (int)ncols, 0);
  for (lua_Integer c = 0; c < ncols; c++) {
    lua_pushinteger(L, cells[c].count);
    lua_seti(L, base + 1, c + 1);
    lua_pushinteger(L, cells[c].busy);
    lua_seti(L, base + 2, c + 1);
    lua_pushinteger(L, cells[c].row);
    lua_seti(L, base + 3, c + 1);
    lua_pushinteger(L, cells[c].cls);
    lua_seti(L, base + 4, c + 1);
  }
  return 4;
}

/* l:bins(lane, from, to, nbins) -> busy, starts: i64 columns of nbins
 * (up to 2^20) -- per bin the ns covered by the lane's events and the
 * events starting in it, for summaries kept as columns (nsl view). */
static int l_bins(lua_State *L) {
  lod_box *b = checklod(L, 1);
  lua_Integer lane = luaL_checkinteger(L, 2), from = luaL_checkinteger(L, 3), to = luaL_checkinteger(L, 4);
  lua_Integer nbins = luaL_checkinteger(L, 5);
  luaL_argcheck(L, nbins >= 1 && nbins <= (1 << 20), 5, "1 to 2^20 bins");
  nsl_column *busy = nsl_column_new(NSL_I64, nbins, NULL);
  if (!busy) return luaL_error(L, "out of memory for %d bins", (int)nbins);
  nsl__pushcolumn(L, busy);
  nsl_column *starts = nsl_column_new(NSL_I64, nbins, NULL);
  if (!starts) return luaL_error(L, "out of memory for %d bins", (int)nbins);
  nsl__pushcolumn(L, starts);
  nsl_error err = {0};
  if (nsl_lod_bins(b->lod, lane, from, to, nbins, nsl_i64(busy), nsl_i64(starts), &err) != NSL_OK)
    return nsl__lua_error(L, &err);
  return 2;
}

static void push_row(lua_State *L, int64_t row) {
  if (row < 0) lua_pushnil(L);
  else lua_pushinteger(L, row);
}

/* l:at(lane, t) -> the row of the event covering t, or nil. */
static int l_at(lua_State *L) {
  push_row(L, nsl_lod_at(checklod(L, 1)->lod, luaL_checkinteger(L, 2), luaL_checkinteger(L, 3)));
  return 1;
}

/* l:step(lane, t, dir) -> the row of the next (dir > 0) or previous event start, or nil. */
static int l_step(lua_State *L) {
  lod_box *b = checklod(L, 1);
  push_row(L, nsl_lod_step(b->lod, luaL_checkinteger(L, 2), luaL_checkinteger(L, 3), (int)luaL_checkinteger(L, 4)));
  return 1;
}

/* l:filter(mask) -> a new index of the rows where mask (bool column) is set. */
static int l_filter(lua_State *L) {
  lod_box *b = checklod(L, 1);
  nsl_column *mask = nsl__checkcolumn(L, 2);
  lod_box *f = newbox(L);
  nsl_error err = {0};
  nsl_lod *l = nsl_lod_filter(b->lod, mask, &err);
  if (!l) return nsl__lua_error(L, &err);
  adopt(L, f, l);
  return 1;
}

/* l:extent([lane]) -> lo, hi of the lane's events (all lanes without one), or nil. */
static int l_extent(lua_State *L) {
  lod_box *b = checklod(L, 1);
  int64_t lo = 0, hi = 0;
  if (!nsl_lod_extent(b->lod, luaL_optinteger(L, 2, -1), &lo, &hi)) return 0;
  lua_pushinteger(L, lo);
  lua_pushinteger(L, hi);
  return 2;
}

/* l:count(lane) -> events on the lane. */
static int l_count(lua_State *L) {
  lua_pushinteger(L, nsl_lod_count(checklod(L, 1)->lod, luaL_checkinteger(L, 2)));
  return 1;
}

static int l_len(lua_State *L) {
  lua_pushinteger(L, nsl_lod_nlanes(checklod(L, 1)->lod));
  return 1;
}

static int l_bytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)nsl_lod_bytes(checklod(L, 1)->lod));
  return 1;
}

/* __gc and __close: frees the index once. */
static int l_release(lua_State *L) {
  lod_box *b = luaL_checkudata(L, 1, NSL_LOD_MT);
  if (b->lod) {
    nsl_lod_free(b->lod);
    b->lod = NULL;
    nsl__gc_credit(L, b->charged);
    b->charged = 0;
  }
  return 0;
}

static const luaL_Reg methods[] = {{"query", l_query},   {"bins", l_bins},   {"at", l_at},       {"step", l_step},
                                   {"filter", l_filter}, {"extent", l_extent}, {"count", l_count},
                                   {"bytes", l_bytes},   {NULL, NULL}};
static const luaL_Reg metamethods[] = {{"__gc", l_release}, {"__close", l_release}, {"__len", l_len}, {NULL, NULL}};
static const luaL_Reg funcs[] = {{"lod", l_lod}, {NULL, NULL}};

int nsl__open_lod(lua_State *L) {
  nsl__register_type(L, NSL_LOD_MT, metamethods, methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
