/* lbinning.c -- the kernels behind figures and exports in Lua:
 * nsl.extent (min and max in one pass), nsl.bin_edges, nsl.busy_per_bin (utilisation heatmaps), nsl.nest_depth
 * (sub-rows of nested ranges), nsl.nest_lanes (their lanes, group after group), nsl.spans_merge (a timeline's level of
 * detail), nsl.count_overlapping and nsl.overlapping_rows (a window's rows) and nsl.format_rows (JSON text from whole
 * columns). */
#include <stdlib.h>

#include "lua/lnsl.h"
#include "core/nsl_internal.h"

/* A column argument that may be nil. */
static nsl_column *optcolumn(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : nsl__checkcolumn(L, idx);
}

/* nsl.bin_edges(lo, hi, nbins) -> i64 column of nbins + 1 exact edges. */
static int l_bin_edges(lua_State *L) {
  nsl_error err = {0};
  nsl_column *c = nsl__bin_edges(luaL_checkinteger(L, 1), luaL_checkinteger(L, 2), luaL_checkinteger(L, 3), &err);
  if (!c) return nsl__lua_errorf(L, &err, "nsl.bin_edges");
  nsl__pushcolumn(L, c);
  return 1;
}

/* nsl.bin_counts(t, lo, hi, nbins) -> i64 column of nbins: how many values
 * of t fall in each bin of nsl.bin_edges(lo, hi, nbins). */
static int l_bin_counts(lua_State *L) {
  nsl_error err = {0};
  nsl_column *c = nsl__bin_counts(nsl__checkcolumn(L, 1), luaL_checkinteger(L, 2), luaL_checkinteger(L, 3),
                                  luaL_checkinteger(L, 4), &err);
  if (!c) return nsl__lua_errorf(L, &err, "nsl.bin_counts");
  nsl__pushcolumn(L, c);
  return 1;
}

/* nsl.busy_per_bin(start, stop, group_ids|nil, ngroups, lo, hi, nbins [, mask])
 * -> i64 column of ngroups * nbins busy ns, element g * nbins + b + 1. */
static int l_busy_per_bin(lua_State *L) {
  nsl_column *start = nsl__checkcolumn(L, 1), *stop = nsl__checkcolumn(L, 2), *groups = optcolumn(L, 3);
  lua_Integer ngroups = luaL_checkinteger(L, 4), lo = luaL_checkinteger(L, 5), hi = luaL_checkinteger(L, 6);
  lua_Integer nbins = luaL_checkinteger(L, 7);
  nsl_column *mask = optcolumn(L, 8);
  nsl_error err = {0};
  nsl_column *c = nsl__busy_per_bin(start, stop, groups, ngroups, mask, lo, hi, nbins, &err);
  if (!c) return nsl__lua_errorf(L, &err, "nsl.busy_per_bin");
  nsl__pushcolumn(L, c);
  return 1;
}

/* nsl.nest_depth(start, stop [, group_ids]) -> i32 column of sub-rows, an
 * array of the deepest sub-row of each group (index id + 1; -1 for a group
 * without rows that take part), so a figure can size each group, and an
 * array of the number of rows of each group (NULL sub-rows included). */
static int l_nest_depth(lua_State *L) {
  nsl_column *groups = optcolumn(L, 3);
  nsl_error err = {0};
  nsl_column *c = nsl__nest_depth(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), groups, &err);
  if (!c) return nsl__lua_errorf(L, &err, "nsl.nest_depth");
  nsl__pushcolumn(L, c);
  int64_t ngroups = groups ? 0 : 1;
  const int64_t *g64 = groups && groups->type == NSL_I64 ? nsl_i64(groups) : NULL;
  for (int64_t i = 0; groups && i < groups->len; i++) {
    int64_t g = g64 ? g64[i] : nsl_column_get_i64(groups, i);
    if (g != NSL_NULL_I64 && g + 1 > ngroups) ngroups = g + 1;   /* below rows + 65536: checked by the kernel */
  }
  int64_t *acc = lua_newuserdatauv(L, (size_t)(ngroups ? ngroups : 1) * 2 * sizeof *acc, 0);
  int64_t *deepest = acc, *count = acc + ngroups;
  for (int64_t g = 0; g < ngroups; g++) deepest[g] = -1, count[g] = 0;
  const int32_t *d = nsl_i32(c);
  for (int64_t i = 0; i < c->len; i++) {
    int64_t g = !groups ? 0 : g64 ? g64[i] : nsl_column_get_i64(groups, i);
    if (g < 0 || g >= ngroups) continue;   /* NULL ids are negative */
    count[g]++;
    if (d[i] > deepest[g]) deepest[g] = d[i];   /* NULL sub-rows are negative */
  }
  for (int k = 0; k < 2; k++) {
    lua_createtable(L, (int)ngroups, 0);
    for (int64_t g = 0; g < ngroups; g++) {
      lua_pushinteger(L, acc[k * ngroups + g]);
      lua_seti(L, -2, (lua_Integer)g + 1);
    }
  }
  lua_remove(L, -3);
  return 3;
}

/* nsl.nest_lanes(start, stop, {key columns}, first, max_sub) -> i32 column:
 * the lane of every row (nested ranges of each key tuple on consecutive
 * lanes from first, at most max_sub each; NULL past them; start and stop
 * nil: each key tuple on one lane), and a table of the groups in lane
 * order (key order, NULL first) with columns row (where the group first
 * appears, 0-based, to read its keys), first_lane, lanes and count (its
 * rows). */
typedef struct nest_work {
  nsl_column *start, *stop, *keys[16];
  int nk;
  int64_t first, max_sub;
  nsl_status rc;
  nsl__lane_layout lo;
  int have_lo;
  nsl_error err;
} nest_work;

static void nest_prepare(lua_State *L, int first, void *p) {
  nest_work *w = p;
  nsl_column *start = optcolumn(L, first), *stop = optcolumn(L, first + 1);
  luaL_checktype(L, first + 2, LUA_TTABLE);
  lua_Integer nk = luaL_len(L, first + 2);
  luaL_argcheck(L, nk >= 1 && nk <= 16, first + 2, "1 to 16 key columns");
  nsl_column *keys[16];
  for (lua_Integer k = 0; k < nk; k++) {
    lua_geti(L, first + 2, k + 1);
    if (!(keys[k] = nsl__tocolumn(L, -1)))
      luaL_error(L, "nsl.nest_lanes: key %d is a %s, not a column", (int)k + 1, luaL_typename(L, -1));
    lua_pop(L, 1);   /* still referenced by the table */
  }
  w->first = luaL_checkinteger(L, first + 3);
  w->max_sub = luaL_checkinteger(L, first + 4);
  w->start = nsl_column_retain(start);
  w->stop = nsl_column_retain(stop);
  for (lua_Integer k = 0; k < nk; k++) w->keys[k] = nsl_column_retain(keys[k]);
  w->nk = (int)nk;
}

static void nest_run(void *p) {
  nest_work *w = p;
  w->rc = nsl__nest_lanes(w->start, w->stop, (const nsl_column *const *)w->keys, w->nk, w->first, w->max_sub, &w->lo,
                         &w->err);
  w->have_lo = w->rc == NSL_OK;
}

static int nest_push(lua_State *L, void *p) {
  nest_work *w = p;
  if (w->rc != NSL_OK) return nsl__lua_errorf(L, &w->err, "nsl.nest_lanes");
  nsl_table *t = nsl_table_new();
  if (!t) return luaL_error(L, "out of memory");
  nsl__pushtable(L, t, 0);   /* owned by Lua before anything can raise */
  const char *names[] = {"row", "first_lane", "lanes", "count"};
  nsl_column *cols[] = {w->lo.row, w->lo.first_lane, w->lo.lanes, w->lo.count};
  nsl_error err = {0};
  int ok = 1;
  for (int k = 0; k < 4 && ok; k++) ok = nsl_table_add(t, names[k], cols[k], &err) == NSL_OK;
  nsl_table_set_nrows(t, w->lo.row->len);
  nsl__pushcolumn(L, nsl_column_retain(w->lo.lane));
  if (!ok) return nsl__lua_error(L, &err);
  lua_insert(L, -2);   /* the lanes, then the groups */
  return 2;
}

static void nest_release(void *p) {
  nest_work *w = p;
  nsl_column_release(w->start);
  nsl_column_release(w->stop);
  for (int k = 0; k < w->nk; k++) nsl_column_release(w->keys[k]);
  if (w->have_lo) nsl__lane_layout_free(&w->lo);
}

const nsl__work nsl__work_nest_lanes = {"nest_lanes", sizeof(nest_work), nest_prepare, nest_run, nest_push,
                                        nest_release};

static int l_nest_lanes(lua_State *L) { return nsl__work_now(L, &nsl__work_nest_lanes, 1); }

/* nsl.spans_merge(x0, x1, lane [, class] [, {tol = 0, max_len = 0, origin = 0,
 * scale = 1, offset = 0, mask = nil}]) -> a table with columns x0, x1, busy,
 * lane, class, count, row (the first input row, 0-based): coordinates mapped to (v - origin) * scale + offset
 * (ns to px in one pass), then merged per lane and class. */
static int l_spans_merge(lua_State *L) {
  nsl_column *x0 = nsl__checkcolumn(L, 1), *x1 = nsl__checkcolumn(L, 2), *lane = nsl__checkcolumn(L, 3);
  nsl_column *cls = optcolumn(L, 4);
  nsl__span_opts o = NSL_SPAN_OPTS_INIT;
  if (!lua_isnoneornil(L, 5)) {
    luaL_checktype(L, 5, LUA_TTABLE);
    lua_getfield(L, 5, "tol");
    o.tol = luaL_optnumber(L, -1, 0);
    lua_getfield(L, 5, "max_len");
    o.max_len = luaL_optnumber(L, -1, 0);
    lua_getfield(L, 5, "origin");
    o.origin = luaL_optinteger(L, -1, 0);
    lua_getfield(L, 5, "scale");
    o.scale = luaL_optnumber(L, -1, 1);
    lua_getfield(L, 5, "offset");
    o.offset = luaL_optnumber(L, -1, 0);
    lua_getfield(L, 5, "mask");
    o.mask = lua_isnil(L, -1) ? NULL : nsl__checkcolumn(L, -1);   /* stays referenced by the options table */
    lua_pop(L, 6);
  }
  nsl_table *t = nsl_table_new();
  nsl__pushtable(L, t, 0);   /* owned by Lua before anything can raise */
  nsl__spans sp;
  nsl_error err = {0};
  if (nsl__spans_merge(x0, x1, lane, cls, &o, &sp, &err) != NSL_OK) return nsl__lua_errorf(L, &err, "nsl.spans_merge");
  const char *names[] = {"x0", "x1", "busy", "lane", "class", "count", "row"};
  nsl_column *cols[] = {sp.x0, sp.x1, sp.busy, sp.lane, sp.cls, sp.count, sp.row};
  int ok = 1;
  for (int k = 0; k < 7 && ok; k++) ok = nsl_table_add(t, names[k], cols[k], &err) == NSL_OK;
  nsl_table_set_nrows(t, sp.x0->len);
  nsl__spans_free(&sp);
  if (!ok) return nsl__lua_error(L, &err);
  return 1;
}

/* nsl.format_rows(template, {col1, col2, ...} [, sep = "\n" [, mask [, first, count]]]) ->
 * text: the template per row with %s (string column as a JSON string, NULL
 * as null), %S (the same, NULL as ""), %d (integer), %t (ns as µs), %f
 * (number) and %% replaced; with first and count, rows [first, first +
 * count) alone (0-based), so that a long text is made in pieces. */
static int l_format_rows(lua_State *L) {
  const char *fmt = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *sep = luaL_optstring(L, 3, "\n");
  nsl_column *mask = optcolumn(L, 4);
  lua_Integer first = luaL_optinteger(L, 5, 0), count = luaL_optinteger(L, 6, -1);
  luaL_argcheck(L, first >= 0, 5, "the first row is 0 or more");
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 0 && n <= 256, 2, "at most 256 columns");
  const nsl_column *cols[256];
  for (lua_Integer i = 0; i < n; i++) {
    lua_geti(L, 2, i + 1);
    nsl_column *c = nsl__tocolumn(L, -1);
    if (!c) return luaL_error(L, "nsl.format_rows: element %d of the columns is a %s, not a column", (int)i + 1,
                              luaL_typename(L, -1));
    cols[i] = c;
    lua_pop(L, 1);   /* still referenced by the table */
  }
  char *out = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl__format_rows_range(fmt, cols, (int)n, mask, sep, first, count, &out, &len, &err) != NSL_OK) {
    if (err.code == NSL_ERR_NOMEM) return nsl__lua_error(L, &err);
    return nsl__lua_errorf(L, &err, "nsl.format_rows");
  }
  lua_pushlstring(L, out, len);
  free(out);
  return 1;
}

/* nsl.format_table(t, "csv" | "json") -> the whole table as CSV (header row,
 * one line per row) or as a JSON array of row objects, written in C in one
 * pass (NULL: empty field / null). */
static int l_format_table(lua_State *L) {
  nsl_table *t = nsl__checktable(L, 1);
  static const char *const kinds[] = {"csv", "json", NULL};
  nsl__text_format f = luaL_checkoption(L, 2, NULL, kinds) == 0 ? NSL_TEXT_CSV : NSL_TEXT_JSON;
  nsl_error err = {0};
  int n = nsl_table_ncols(t);
  const char **names = lua_newuserdatauv(L, sizeof *names * (size_t)(n + 1), 0);   /* freed by the GC */
  const nsl_column **cols = lua_newuserdatauv(L, sizeof *cols * (size_t)(n + 1), 0);
  for (int i = 0; i < n; i++) names[i] = nsl_table_colname(t, i);
  if (nsl_table_require(t, names, n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  for (int i = 0; i < n; i++)
    if (!(cols[i] = nsl_table_column_at(t, i, &err))) return nsl__lua_error(L, &err);
  int64_t nrows;
  if (nsl_table_nrows(t, &nrows, &err) != NSL_OK) return nsl__lua_error(L, &err);
  char *out = NULL;
  size_t len = 0;
  if (nsl__format_table(names, cols, n, nrows, f, &out, &len, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_pushlstring(L, out, len);
  free(out);
  return 1;
}

/* nsl.extent(c) -> min, max of a numeric column (NULLs skipped; nil, nil
 * when it has no values): one pass, no median (c:min() and c:max() go
 * through c:stats(), which also finds the median). */
static int l_extent(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  luaL_argcheck(L, c->type != NSL_STR, 1, "a string column has no extent");
  int64_t lo, hi;
  if (c->type == NSL_I64 || c->type == NSL_I32) {   /* two vectorised extremes, no sum */
    if (nsl__int_extent(c, &lo, &hi)) {
      lua_pushinteger(L, lo);
      lua_pushinteger(L, hi);
    } else {
      lua_pushnil(L);
      lua_pushnil(L);
    }
    return 2;
  }
  nsl_stats st;
  nsl__column_stats(c, &st, 0);   /* no standard deviation: its second pass would double the cost */
  if (st.count == 0) {
    lua_pushnil(L);
    lua_pushnil(L);
  } else if (c->type == NSL_F64) {
    lua_pushnumber(L, st.min);
    lua_pushnumber(L, st.max);
  } else {
    lua_pushinteger(L, st.imin);
    lua_pushinteger(L, st.imax);
  }
  return 2;
}

/* nsl.count_overlapping(start, stop, from, to) -> the rows with start < to
 * and stop > from (NULL times never). */
static int l_count_overlapping(lua_State *L) {
  int64_t k = nsl__count_overlapping(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), luaL_checkinteger(L, 3),
                                    luaL_checkinteger(L, 4));
  if (k < 0) return luaL_error(L, "nsl.count_overlapping: start and stop must be integer columns of one length");
  lua_pushinteger(L, k);
  return 1;
}

/* nsl.overlapping_rows(start, stop, from, to) -> i64 column of the 0-based
 * rows with start < to and stop > from (for t:take). */
static int l_overlapping_rows(lua_State *L) {
  nsl_error err = {0};
  nsl_column *c = nsl__overlapping_rows(nsl__checkcolumn(L, 1), nsl__checkcolumn(L, 2), luaL_checkinteger(L, 3),
                                       luaL_checkinteger(L, 4), &err);
  if (!c) return nsl__lua_errorf(L, &err, "nsl.overlapping_rows");
  nsl__pushcolumn(L, c);
  return 1;
}

static const luaL_Reg funcs[] = {{"count_overlapping", l_count_overlapping},
                                 {"overlapping_rows", l_overlapping_rows},
                                 {"extent", l_extent},
                                 {"bin_edges", l_bin_edges},
                                 {"bin_counts", l_bin_counts},
                                 {"busy_per_bin", l_busy_per_bin},
                                 {"nest_depth", l_nest_depth},
                                 {"nest_lanes", l_nest_lanes},
                                 {"spans_merge", l_spans_merge},
                                 {"format_rows", l_format_rows},   {"format_table", l_format_table},
                                 {NULL, NULL}};

int nsl__open_binning(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
