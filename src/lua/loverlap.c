/* loverlap.c -- the interval sweeps of src/core/overlap_join.c in Lua:
 *   rows, overlap = nsl.overlap_join(a_start, a_stop, b_start, b_stop [, a_keys, b_keys [, b_mask]])
 *   mask = nsl.overlap_any(a_start, a_stop, b_start, b_stop [, a_keys, b_keys])
 *   rows, overlap = nsl.innermost_join(a_start, a_stop, b_start, b_stop, a_keys, b_keys, b_thread, b_nested)
 *   counts = nsl.count_open(points, start, stop [, point_keys, iv_keys])
 *   group, start, stop [, row] = nsl.gaps_grouped(start, stop, group_ids, ngroups [, min_len [, mask [, rows]]])
 *   idle, n, time, largest, group, start, stop [, before, after] =
 *     nsl.gap_sums(start, stop, group_ids, ngroups [, min_len [, rows]])
 *   idle, host, group, start, stop, row = nsl.gap_hosts(start, stop, group_ids, ngroups, launch)
 *   totals, charged [, totals2 ...] = nsl.ledger_sweep(start, stop, group_ids, class, nclasses, win_group,
 *                                      win_lo, win_hi [, win_group2, win_lo2, win_hi2 ...])
 * Keys are a column or an array of columns; row numbers are 0-based (as
 * c:gather and t:take expect), -1 where nothing matches. */
#include "lua/lnsl.h"

#define MAX_KEYS 8

/* Reads the keys at idx (nil, a column, or an array of columns) into keys;
 * returns how many. */
static int check_keys(lua_State *L, int idx, const nsl_column **keys) {
  if (lua_isnoneornil(L, idx)) return 0;
  if (nsl__tocolumn(L, idx)) {
    keys[0] = nsl__tocolumn(L, idx);
    return 1;
  }
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  luaL_argcheck(L, n <= MAX_KEYS, idx, "at most 8 key columns");
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    keys[i - 1] = nsl__checkcolumn(L, -1);   /* the array keeps it alive */
    lua_pop(L, 1);
  }
  return (int)n;
}

/* Both key lists, which must have the same number of columns. */
static int check_key_pair(lua_State *L, int ia, int ib, const nsl_column **ka, const nsl_column **kb) {
  int na = check_keys(L, ia, ka), nb = check_keys(L, ib, kb);
  if (na != nb) luaL_error(L, "%d key columns on one side, %d on the other", na, nb);
  return na;
}

/* nsl.overlap_join(a_start, a_stop, b_start, b_stop [, a_keys, b_keys [, b_mask]])
 * -> rows, overlap: for each A row the B row (0-based, -1 none) with the
 * largest overlap among rows of equal keys, and that overlap in ns. */
static int l_overlap_join(lua_State *L) {
  nsl_column *as = nsl__checkcolumn(L, 1), *ae = nsl__checkcolumn(L, 2);
  nsl_column *bs = nsl__checkcolumn(L, 3), *be = nsl__checkcolumn(L, 4);
  const nsl_column *ka[MAX_KEYS], *kb[MAX_KEYS];
  int nkeys = check_key_pair(L, 5, 6, ka, kb);
  nsl_column *mask = lua_isnoneornil(L, 7) ? NULL : nsl__checkcolumn(L, 7);
  nsl_column *rows = NULL, *ov = NULL;
  nsl_error err = {0};
  if (nsl_overlap_join(as, ae, ka, bs, be, kb, nkeys, mask, &rows, &ov, &err) != NSL_OK)
    return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, rows);
  nsl__pushcolumn(L, ov);
  return 2;
}

/* nsl.overlap_any(a_start, a_stop, b_start, b_stop [, a_keys, b_keys]) ->
 * mask: for each A row whether some B row of equal keys overlaps it. */
static int l_overlap_any(lua_State *L) {
  nsl_column *as = nsl__checkcolumn(L, 1), *ae = nsl__checkcolumn(L, 2);
  nsl_column *bs = nsl__checkcolumn(L, 3), *be = nsl__checkcolumn(L, 4);
  const nsl_column *ka[MAX_KEYS], *kb[MAX_KEYS];
  int nkeys = check_key_pair(L, 5, 6, ka, kb);
  nsl_error err = {0};
  nsl_column *m = nsl_overlap_any(as, ae, ka, bs, be, kb, nkeys, &err);
  if (!m) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, m);
  return 1;
}

/* nsl.innermost_join(a_start, a_stop, b_start, b_stop, a_keys, b_keys, b_thread, b_nested) -> rows, overlap:
 * for each A row the range of B of equal keys whose innermost time (less its children's, b_thread: B's thread
 * keys, b_nested: which ranges nest) overlaps it most (nsl_innermost_join). */
static int l_innermost_join(lua_State *L) {
  nsl_column *as = nsl__checkcolumn(L, 1), *ae = nsl__checkcolumn(L, 2);
  nsl_column *bs = nsl__checkcolumn(L, 3), *be = nsl__checkcolumn(L, 4);
  const nsl_column *ka[MAX_KEYS], *kb[MAX_KEYS];
  int nkeys = check_key_pair(L, 5, 6, ka, kb);
  const nsl_column *kt[MAX_KEYS];
  int nthread = check_keys(L, 7, kt);
  nsl_column *nested = nsl__checkcolumn(L, 8);
  nsl_column *rows = NULL, *ov = NULL;
  nsl_error err = {0};
  if (nsl_innermost_join(as, ae, ka, bs, be, kb, nkeys, kt, nthread, nested, &rows, &ov, &err) != NSL_OK)
    return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, rows);
  nsl__pushcolumn(L, ov);
  return 2;
}

/* nsl.count_open(points, start, stop [, point_keys, iv_keys]) -> for each
 * point, the number of intervals of equal keys with start < point < stop. */
static int l_count_open(lua_State *L) {
  nsl_column *p = nsl__checkcolumn(L, 1), *s = nsl__checkcolumn(L, 2), *e = nsl__checkcolumn(L, 3);
  const nsl_column *kp[MAX_KEYS], *ki[MAX_KEYS];
  int nkeys = check_key_pair(L, 4, 5, kp, ki);
  nsl_error err = {0};
  nsl_column *c = nsl_iv_count_open(p, kp, s, e, ki, nkeys, &err);
  if (!c) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, c);
  return 1;
}

/* nsl.gaps_grouped(start, stop, group_ids, ngroups [, min_len [, mask [, rows]]]) ->
 * group, start, stop [, row]: the idle gaps (longer than min_len ns, default
 * 0) within each group's span, group ids as g:ids() gives them; with rows
 * true, also the row that ends each (the lowest row of the group starting
 * at the gap's stop). */
static int l_gaps_grouped(lua_State *L) {
  nsl_column *s = nsl__checkcolumn(L, 1), *e = nsl__checkcolumn(L, 2), *g = nsl__checkcolumn(L, 3);
  lua_Integer ng = luaL_checkinteger(L, 4), min_len = luaL_optinteger(L, 5, 0);
  nsl_column *mask = lua_isnoneornil(L, 6) ? NULL : nsl__checkcolumn(L, 6);
  int rows = lua_toboolean(L, 7);
  nsl_column *og = NULL, *os = NULL, *oe = NULL, *orow = NULL;
  nsl_error err = {0};
  if (nsl_iv_gaps_grouped(s, e, g, ng, mask, min_len, &og, &os, &oe, rows ? &orow : NULL, &err) != NSL_OK)
    return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, og);
  nsl__pushcolumn(L, os);
  nsl__pushcolumn(L, oe);
  if (!rows) return 3;
  nsl__pushcolumn(L, orow);
  return 4;
}

/* nsl.gap_sums(start, stop, group_ids, ngroups [, min_len [, rows]]) -> idle,
 * n, time, largest, group, start, stop [, before, after]: per group
 * 0..ngroups-1 its idle time (every gap nsl.gaps_grouped finds), the count
 * and time of its gaps longer than min_len (default 0) and its largest gap;
 * then those longer gaps as nsl.gaps_grouped gives them, and with rows true
 * the rows on either side of each (the lowest of the group stopping at its
 * start, the lowest starting at its stop: what joins on the group and
 * stop, or start, find).  One sweep, no column of every gap. */
static int l_gap_sums(lua_State *L) {
  nsl_column *s = nsl__checkcolumn(L, 1), *e = nsl__checkcolumn(L, 2), *g = nsl__checkcolumn(L, 3);
  lua_Integer ng = luaL_checkinteger(L, 4), min_len = luaL_optinteger(L, 5, 0);
  int rows = lua_toboolean(L, 6);
  nsl_column *sums[4], *og = NULL, *os = NULL, *oe = NULL, *ob = NULL, *oa = NULL;
  nsl_error err = {0};
  if (nsl_iv_gap_sums(s, e, g, ng, min_len, sums, &og, &os, &oe, rows ? &ob : NULL, rows ? &oa : NULL, &err) !=
      NSL_OK)
    return nsl__lua_error(L, &err);
  for (int k = 0; k < 4; k++) nsl__pushcolumn(L, sums[k]);
  nsl__pushcolumn(L, og);
  nsl__pushcolumn(L, os);
  nsl__pushcolumn(L, oe);
  if (!rows) return 7;
  nsl__pushcolumn(L, ob);
  nsl__pushcolumn(L, oa);
  return 9;
}

/* nsl.gap_hosts(start, stop, group_ids, ngroups, launch) -> idle, host, group,
 * start, stop, row: per group 0..ngroups-1 its idle time (every gap
 * nsl.gaps_grouped finds) and the sum of the gaps' host parts (from a gap's
 * start to when the row that ends it was launched, at most the gap; none
 * where that launch time is NULL); then the gaps with a host part, in
 * nsl.gaps_grouped's order: their group, the host part's start and stop,
 * and the row that ends the gap.  One sweep, no column of every gap. */
static int l_gap_hosts(lua_State *L) {
  nsl_column *s = nsl__checkcolumn(L, 1), *e = nsl__checkcolumn(L, 2), *g = nsl__checkcolumn(L, 3);
  lua_Integer ng = luaL_checkinteger(L, 4);
  nsl_column *launch = nsl__checkcolumn(L, 5);
  nsl_column *idle = NULL, *host = NULL, *og = NULL, *os = NULL, *oe = NULL, *orow = NULL;
  nsl_error err = {0};
  if (nsl_iv_gap_hosts(s, e, g, ng, launch, &idle, &host, &og, &os, &oe, &orow, &err) != NSL_OK)
    return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, idle);
  nsl__pushcolumn(L, host);
  nsl__pushcolumn(L, og);
  nsl__pushcolumn(L, os);
  nsl__pushcolumn(L, oe);
  nsl__pushcolumn(L, orow);
  return 6;
}

/* nsl.ledger_sweep(start, stop, group_ids, class, nclasses, win_group, win_lo, win_hi [, win_group2, win_lo2,
 * win_hi2 ...]) -> totals, charged [, totals2 ...]: per window (nclasses + 1) times, the time each class
 * took (the lowest class wins) and what none covered; per row the time its class took while it was open,
 * inside the first set's windows (src/core/ledger.c).  Each further set of windows (a run's steps beside
 * the run) is swept in the same pass: the rows are sorted once. */
static int l_ledger_sweep(lua_State *L) {
  nsl_column *s = nsl__checkcolumn(L, 1), *e = nsl__checkcolumn(L, 2), *g = nsl__checkcolumn(L, 3);
  nsl_column *c = nsl__checkcolumn(L, 4);
  lua_Integer nc = luaL_checkinteger(L, 5);
  luaL_argcheck(L, nc >= 1 && nc <= 64, 5, "1 to 64 classes");
  int top = lua_gettop(L), nsets = (top - 5) / 3;
  luaL_argcheck(L, top >= 8 && (top - 5) % 3 == 0 && nsets <= NSL_LEDGER_SETS, 6,
                "windows as group, lo and hi columns, 1 to 8 sets");
  const nsl_column *wg[NSL_LEDGER_SETS], *wl[NSL_LEDGER_SETS], *wh[NSL_LEDGER_SETS];
  for (int k = 0; k < nsets; k++) {
    wg[k] = nsl__checkcolumn(L, 6 + 3 * k);
    wl[k] = nsl__checkcolumn(L, 7 + 3 * k);
    wh[k] = nsl__checkcolumn(L, 8 + 3 * k);
  }
  nsl_column *totals[NSL_LEDGER_SETS], *charged = NULL;
  nsl_error err = {0};
  if (nsl_ledger_sweep_sets(s, e, g, c, (int)nc, nsets, wg, wl, wh, totals, &charged, &err) != NSL_OK)
    return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, totals[0]);
  nsl__pushcolumn(L, charged);
  for (int k = 1; k < nsets; k++) nsl__pushcolumn(L, totals[k]);
  return nsets + 1;
}

/* nsl.launch_waits(group, start, launch_stop) -> rows, from, to: where each device waited for its host to
 * launch (src/core/ledger.c): the rows whose previous row of their group, in (group, start) order, started
 * before the end of their launch call (at most their own start), and those waits' bounds. */
static int l_launch_waits(lua_State *L) {
  nsl_column *g = nsl__checkcolumn(L, 1), *s = nsl__checkcolumn(L, 2), *l = nsl__checkcolumn(L, 3);
  nsl_column *rows, *from, *to;
  nsl_error err = {0};
  if (nsl_launch_waits(g, s, l, &rows, &from, &to, &err) != NSL_OK) return nsl__lua_error(L, &err);
  nsl__pushcolumn(L, rows);
  nsl__pushcolumn(L, from);
  nsl__pushcolumn(L, to);
  return 3;
}

static const luaL_Reg funcs[] = {{"overlap_join", l_overlap_join},
                                 {"overlap_any", l_overlap_any},
                                 {"innermost_join", l_innermost_join},
                                 {"ledger_sweep", l_ledger_sweep},
                                 {"launch_waits", l_launch_waits},
                                 {"count_open", l_count_open},
                                 {"gaps_grouped", l_gaps_grouped},
                                 {"gap_sums", l_gap_sums}, {"gap_hosts", l_gap_hosts},
                                 {NULL, NULL}};

/* Adds the sweeps to the module table on top of the stack. */
int nsl__open_overlap(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
