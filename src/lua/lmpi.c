/* lmpi.c -- distributed runs in Lua: nsl.mpi.start(), nsl.mpi.open(paths)
 * (a split trace: dist:view(), dist:trace(), dist:subtrace(reports),
 * dist:share(), dist:serve(), dist:quit()), nsl.mpi.agree(ok, msg),
 * nsl.mpi.gather(table), nsl.mpi.exchange(tables), nsl.mpi.bcast(n), nsl.mpi.seconds(),
 * nsl.mpi.wtime().  The policy (which analysis step runs where) is
 * lua/nsl/distributed.lua's; MPI itself stays in src/mpi. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/wire.h"
#include "lua/lnsl.h"
#include "mpi/comm.h"
#include "mpi/dist.h"

#define DIST_MT "nsl.mpi.dist"

typedef struct ldist {
  nsl_dist *d;
} ldist;

static nsl_dist *checkdist(lua_State *L) {
  ldist *b = luaL_checkudata(L, 1, DIST_MT);
  if (!b->d) luaL_argerror(L, 1, "closed");
  return b->d;
}

/* nsl.mpi.start() -> processes, this process's rank, whether the build has MPI. */
static int l_start(lua_State *L) {
  nsl_error err = {0};
  int n = nsl__comm_start(&err);
  if (n < 0) return nsl__input_error(L, &err);
  lua_pushinteger(L, n);
  lua_pushinteger(L, nsl__comm_rank());
  lua_pushboolean(L, nsl__comm_available());
  return 3;
}

/* nsl.mpi.open{paths} (collective) -> dist, or nil and a message (the
 * failing MPI rank's, with its rank, on rank 0). */
static int l_open(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 1);
  luaL_argcheck(L, n >= 0 && n <= 65536, 1, "too many inputs");
  const char **paths = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *paths, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    paths[i - 1] = luaL_checkstring(L, -1);
    lua_pop(L, 1);   /* the string stays alive in the argument table */
  }
  ldist *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->d = NULL;
  luaL_setmetatable(L, DIST_MT);
  nsl_error err = {0};
  if (nsl__dist_open(&b->d, paths, (int)n, nsl__state_open_options(L), &err) != NSL_OK) {
    return nsl__push_fail(L, &err);
  }
  return 1;
}

static int dist_gc(lua_State *L) {
  ldist *b = luaL_checkudata(L, 1, DIST_MT);
  nsl__dist_release(b->d);
  b->d = NULL;
  return 0;
}

/* Pushes a trace made by fn (a view or the whole trace). */
static int push_made(lua_State *L, nsl_status (*fn)(nsl_dist *, nsl_trace **, nsl_error *)) {
  nsl_dist *d = checkdist(L);
  nsl_trace **slot = nsl__newtrace(L);
  nsl_error err = {0};
  if (fn(d, slot, &err) != NSL_OK) return nsl__input_error(L, &err);
  if (nsl_trace_set_dict(*slot, nsl__state_dict(L), &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 1;
}

/* dist:view() -> a trace of this process's reports (whole trace's clock). */
static int dist_view(lua_State *L) { return push_made(L, nsl__dist_view); }
/* dist:trace() -> the whole trace (rank 0). */
static int dist_trace(lua_State *L) { return push_made(L, nsl__dist_trace); }

/* dist:subtrace{reports} (rank 0) -> a trace of those reports of the whole
 * trace (0-based indices), each read from its process alone when used. */
static int dist_subtrace(lua_State *L) {
  nsl_dist *d = checkdist(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 1 && n <= 65536, 2, "one report or more");
  int *reports = lua_newuserdatauv(L, (size_t)n * sizeof *reports, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    reports[i - 1] = (int)luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
  nsl_trace **slot = nsl__newtrace(L);
  nsl_error err = {0};
  if (nsl__dist_subtrace(d, reports, (int)n, slot, &err) != NSL_OK) return nsl__lua_error(L, &err);
  if (nsl_trace_set_dict(*slot, nsl__state_dict(L), &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 1;
}

/* dist:filter(table, conds) (rank 0, before the trace's tables are read):
 * the whole trace's `table` holds the rows passing every condition
 * (nsl__check_row_conds), evaluated where the rows are read. */
static int dist_filter(lua_State *L) {
  nsl_dist *d = checkdist(L);
  const char *table = luaL_checkstring(L, 2);
  int n = 0;
  const nsl__row_cond *conds = nsl__check_row_conds(L, 3, &n);
  nsl_error err = {0};
  if (nsl__dist_filter(d, table, conds, n, &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 0;
}

/* dist:share() -> index (0-based) of this process's first report, its report count, all reports. */
static int dist_share(lua_State *L) {
  nsl_dist *d = checkdist(L);
  lua_pushinteger(L, nsl__dist_first(d));
  lua_pushinteger(L, nsl__dist_count(d));
  lua_pushinteger(L, nsl__dist_nreports(d));
  return 3;
}

typedef struct serve_ctx {
  lua_State *L;
} serve_ctx;
static nsl_status serve_call(void *p, int report, const char *name, const void *arg, size_t alen, void **out,
                             size_t *olen, nsl_error *err);

/* dist:serve() answers rank 0's requests until it says quit: reads of its
 * reports' tables, and computations on one of them (dist:call), which
 * nsl.distributed.serve_call(dist, report, name, table) makes. */
static int dist_serve(lua_State *L) {
  nsl_error err = {0};
  serve_ctx c = {L};
  if (nsl__dist_serve(checkdist(L), serve_call, &c, &err) != NSL_OK) {   /* the link to rank 0 is broken: end the job */
    fprintf(stderr, "nsl: MPI rank %d: %s\n", nsl__comm_rank(), err.msg);
    nsl__comm_abort(1);
  }
  return 0;
}

/* dist:quit() (rank 0) ends the other processes' serve(). */
static int dist_quit(lua_State *L) {
  nsl_error err = {0};
  if (nsl__dist_quit(checkdist(L), &err) != NSL_OK) return nsl__input_error(L, &err);
  return 0;
}

/* nsl.mpi.agree(ok [, message]) (collective) -> true when every process
 * passed a true ok; else false and, on rank 0, the first failing process's
 * message prefixed with its MPI rank. */
static int l_agree(lua_State *L) {
  int ok = lua_toboolean(L, 1);
  const char *msg = luaL_optstring(L, 2, "failed");
  char *why = NULL;
  if (nsl__dist_agree(ok, msg, &why)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushboolean(L, 0);
  if (why) lua_pushstring(L, why);
  else lua_pushnil(L);
  free(why);
  return 2;
}

/* Encodes table t (every column loaded) with its integer column `report`
 * shifted by shift. */
static nsl_status encode_table(nsl_table *t, int shift, void **buf, size_t *len, nsl_error *err) {
  int n = nsl_table_ncols(t);
  const char **names = calloc((size_t)(n ? n : 1), sizeof *names);
  nsl_column **cols = calloc((size_t)(n ? n : 1), sizeof *cols);
  nsl_status rc = names && cols ? NSL_OK : nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int c = 0; rc == NSL_OK && c < n; c++) {
    names[c] = nsl_table_colname(t, c);
    nsl_column *col = nsl_table_column_at(t, c, err);
    if (!col) {
      rc = err && err->code ? err->code : NSL_ERR_NOMEM;
      break;
    }
    if (shift && (col->type == NSL_I32 || col->type == NSL_I64) && strcmp(names[c], "report") == 0) {
      nsl_column *moved = nsl_column_new(col->type, col->len, NULL);
      if (!moved) {
        rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
        break;
      }
      for (int64_t i = 0; i < col->len; i++) {
        if (col->type == NSL_I32) {
          int32_t v = nsl_i32(col)[i];
          nsl_i32(moved)[i] = v == NSL_NULL_I32 ? v : v + shift;
        } else {
          int64_t v = nsl_i64(col)[i];
          nsl_i64(moved)[i] = v == NSL_NULL_I64 ? v : v + shift;
        }
      }
      col = moved;
    } else nsl_column_retain(col);
    cols[c] = col;
  }
  if (rc == NSL_OK) rc = nsl__wire_encode(names, cols, n, buf, len, err);
  for (int c = 0; cols && c < n; c++) nsl_column_release(cols[c]);
  free(cols);
  free(names);
  return rc;
}

/* Pushes the table encoded in buf (encode_table's); 0 with err set when it
 * cannot be read (nothing pushed). */
static int push_decoded(lua_State *L, const void *buf, size_t len, nsl_error *err) {
  char **names = NULL;
  nsl_column **cols = NULL;
  int n = 0;
  nsl_table *tt = NULL;
  nsl_status rc = nsl__wire_decode(buf, len, nsl__state_dict(L), &names, &cols, &n, err);
  if (rc == NSL_OK && !(tt = nsl_table_new())) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int c = 0; rc == NSL_OK && c < n; c++) rc = nsl_table_add(tt, names[c], cols[c], err);
  nsl__wire_free(names, cols, n);
  if (rc != NSL_OK) {
    nsl_table_release(tt);
    return 0;
  }
  nsl__pushtable(L, tt, 0);
  return 1;
}

/* The computation name on report (rank 0's dist:call), run by
 * nsl.distributed.serve_call with the dist at stack index 1 (dist:serve's
 * own argument) and the table decoded from arg; its table, encoded, is the
 * answer.  Its failure (a message it returns, or an error it raises) is
 * the answer's error. */
static nsl_status serve_call(void *p, int report, const char *name, const void *arg, size_t alen, void **out,
                             size_t *olen, nsl_error *err) {
  lua_State *L = ((serve_ctx *)p)->L;
  int top = lua_gettop(L);
  nsl_status rc = NSL_OK;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "nsl.distributed");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK || !lua_istable(L, -1)) {
    rc = nsl_error_set(err, NSL_ERR_ARG, "nsl.distributed does not load");
  } else {
    lua_getfield(L, -1, "serve_call");
    lua_pushvalue(L, 1);
    lua_pushinteger(L, report);
    lua_pushstring(L, name);
    if (!push_decoded(L, arg, alen, err)) rc = err->code ? err->code : NSL_ERR_FORMAT;
    else if (lua_pcall(L, 4, 2, 0) != LUA_OK) {
      const char *m = lua_tostring(L, -1);
      rc = nsl_error_set(err, NSL_ERR_ARG, "%s: %s", name, m ? m : "failed");
    } else if (!luaL_testudata(L, -2, NSL_TABLE_MT)) {
      const char *m = lua_tostring(L, -1);
      rc = nsl_error_set(err, NSL_ERR_ARG, "%s: %s", name, m ? m : "no table");
    } else {
      rc = encode_table(nsl__checktable(L, -2), 0, out, olen, err);
    }
  }
  lua_settop(L, top);
  return rc;
}

/* dist:call(reports, name, tables) (rank 0) -> a list: the table
 * computation name makes of tables[i] on reports[i] (0-based, each held by
 * another process: dist:owner) in the process holding it
 * (nsl.distributed.serve_call there), every such process working at once;
 * raises the first failing one's error. */
static int dist_call(lua_State *L) {
  nsl_dist *d = checkdist(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *name = luaL_checkstring(L, 3);
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  luaL_argcheck(L, n >= 0 && n <= 1 << 24 && luaL_len(L, 4) == n, 4, "one table per report");
  size_t k = (size_t)(n ? n : 1);
  int *reports = lua_newuserdatauv(L, k * sizeof *reports, 0);
  void **bufs = lua_newuserdatauv(L, k * sizeof *bufs, 0);
  size_t *lens = lua_newuserdatauv(L, k * sizeof *lens, 0);
  void **outs = lua_newuserdatauv(L, k * sizeof *outs, 0);
  size_t *olens = lua_newuserdatauv(L, k * sizeof *olens, 0);
  nsl_error err = {0};
  nsl_status rc = NSL_OK;
  for (lua_Integer i = 0; i < n; i++) {   /* (the arguments checked before anything is allocated) */
    bufs[i] = NULL, lens[i] = 0;
    lua_geti(L, 2, i + 1);
    reports[i] = (int)luaL_checkinteger(L, -1);
    lua_geti(L, 4, i + 1);
    nsl__checktable(L, -1);
    lua_pop(L, 2);
  }
  for (lua_Integer i = 0; i < n && rc == NSL_OK; i++) {
    lua_geti(L, 4, i + 1);
    rc = encode_table(nsl__checktable(L, -1), 0, &bufs[i], &lens[i], &err);
    lua_pop(L, 1);
  }
  if (rc == NSL_OK) rc = nsl__dist_call(d, (int)n, reports, name, (const void *const *)bufs, lens, outs, olens, &err);
  for (lua_Integer i = 0; i < n; i++) free(bufs[i]);
  if (rc != NSL_OK) return nsl__input_error(L, &err);
  lua_createtable(L, (int)n, 0);
  int okd = 1;
  for (lua_Integer i = 0; i < n; i++) {
    if (okd && (okd = push_decoded(L, outs[i], olens[i], &err))) lua_rawseti(L, -2, i + 1);
    free(outs[i]);
  }
  if (!okd) return nsl__input_error(L, &err);
  return 1;
}

/* dist:stats() (rank 0) -> tables of other processes' reports read (one per
 * report and table), computations asked of them (dist:call). */
static int dist_stats(lua_State *L) {
  int64_t loads = 0, calls = 0;
  nsl__dist_stats(checkdist(L), &loads, &calls);
  lua_pushinteger(L, loads);
  lua_pushinteger(L, calls);
  return 2;
}

/* dist:owner(report) -> the MPI rank holding report (0-based). */
static int dist_owner(lua_State *L) {
  lua_pushinteger(L, nsl__dist_owner(checkdist(L), (int)luaL_checkinteger(L, 2)));
  return 1;
}

/* Frees n received buffers (NULL ones too) and both arrays. */
static void free_received(void **bufs, size_t *lens, int n) {
  for (int r = 0; bufs && r < n; r++) free(bufs[r]);
  free(bufs);
  free(lens);
}

/* Pushes the tables of n received buffers as a list (index rank + 1: a
 * table, or false where that process sent none) and returns 1, or pushes
 * nil and a message naming the rank whose table cannot be read and returns
 * 2; frees the buffers and both arrays either way. */
static int push_tables(lua_State *L, void **bufs, size_t *lens, int n) {
  nsl_error err = {0};
  lua_createtable(L, n, 0);
  for (int r = 0; r < n; r++) {
    if (lens[r] == 0) lua_pushboolean(L, 0);   /* nothing sent (its buffer may still be a byte: the gather's) */
    else if (!push_decoded(L, bufs[r], lens[r], &err)) {
      free_received(bufs, lens, n);
      lua_pushnil(L);
      lua_pushfstring(L, "table from MPI rank %d: %s", r, err.msg);
      return 2;
    }
    free(bufs[r]);
    bufs[r] = NULL;
    lua_rawseti(L, -2, r + 1);
  }
  free_received(bufs, lens, n);
  return 1;
}

/* nsl.mpi.gather(t, shift) (collective): every process's table t (or nil)
 * to rank 0, which gets an array with one entry per process (false for
 * nil), in rank order; an integer column `report` is shifted by shift (the
 * process's first report in the whole trace).  Other processes get true.
 * A failure (a table that cannot be sent or read) returns nil and a
 * message instead of raising, so the caller can agree on it with the
 * other processes (nsl.mpi.agree) before anyone waits for anyone. */
static int l_gather(lua_State *L) {
  nsl_table *t = lua_isnoneornil(L, 1) ? NULL : nsl__checktable(L, 1);
  int shift = (int)luaL_optinteger(L, 2, 0);
  void *buf = NULL;
  size_t len = 0;
  nsl_error err = {0};
  nsl_status rc = t ? encode_table(t, shift, &buf, &len, &err) : NSL_OK;
  if (rc != NSL_OK) {   /* the others still gather: send nothing, then raise */
    len = 0;
  }
  void **bufs = NULL;
  size_t *lens = NULL;
  nsl_error gerr = {0};
  nsl_status grc = nsl__comm_gather(buf ? buf : "", len, &bufs, &lens, &gerr);
  free(buf);
  if (rc != NSL_OK || grc != NSL_OK) {
    free_received(bufs, lens, nsl__comm_size());
    return nsl__push_fail(L, rc != NSL_OK ? &err : &gerr);
  }
  if (!bufs) {
    lua_pushboolean(L, 1);
    return 1;
  }
  return push_tables(L, bufs, lens, nsl__comm_size());
}

/* nsl.mpi.bcast_table(t) (collective) -> rank 0's table t (the others pass
 * nil), on every process; nil and a message instead of raising when it
 * cannot be sent or read, to be agreed on (nsl.mpi.agree) as gather's. */
static int l_bcast_table(lua_State *L) {
  int root = nsl__comm_rank() == 0;
  void *buf = NULL;
  size_t len = 0;
  nsl_error err = {0};
  nsl_status rc = NSL_OK;
  if (root) {   /* (never raises before the broadcast: the others wait in it) */
    if (luaL_testudata(L, 1, NSL_TABLE_MT)) rc = encode_table(nsl__checktable(L, 1), 0, &buf, &len, &err);
    else rc = nsl_error_set(&err, NSL_ERR_ARG, "bcast_table: rank 0 must give a table");
  }
  if (rc != NSL_OK) {   /* the others still wait for it: send an empty message, then fail */
    free(buf);
    buf = NULL, len = 0;
  }
  void *msg = root ? (buf ? buf : (void *)"") : NULL;
  nsl_error berr = {0};
  nsl_status brc = nsl__comm_bcast(&msg, &len, &berr);
  if (root) free(buf);
  if (rc != NSL_OK || brc != NSL_OK || len == 0) {
    if (!root) free(msg);
    if (rc == NSL_OK && brc == NSL_OK) nsl_error_set(&err, NSL_ERR_IO, "rank 0 sent no table");
    return nsl__push_fail(L, rc != NSL_OK || brc == NSL_OK ? &err : &berr);
  }
  if (root) {   /* its own table as it is */
    lua_pushvalue(L, 1);
    return 1;
  }
  int okd = push_decoded(L, msg, len, &err);
  free(msg);
  if (!okd) return nsl__push_fail(L, &err);
  return 1;
}

/* nsl.mpi.exchange(list) (collective) -> a list: what each process sent
 * this one (index rank + 1: a table, or false where it sent none), from
 * list[d + 1] sent to process d (a table, or nil/false: none; its own is
 * kept).  nil and a message instead of raising when a table cannot be
 * sent or read, to be agreed on (nsl.mpi.agree) as gather's; a process
 * whose tables cannot be encoded still takes part, sending none. */
static int l_exchange(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int P = nsl__comm_size();
  void **bufs = calloc((size_t)P, sizeof *bufs);
  size_t *lens = calloc((size_t)P, sizeof *lens);
  nsl_error err = {0};
  nsl_status rc = bufs && lens ? NSL_OK : nsl_error_set(&err, NSL_ERR_NOMEM, "out of memory");
  for (int d = 0; rc == NSL_OK && d < P; d++) {
    lua_geti(L, 1, d + 1);
    if (luaL_testudata(L, -1, NSL_TABLE_MT)) rc = encode_table(nsl__checktable(L, -1), 0, &bufs[d], &lens[d], &err);
    lua_pop(L, 1);
  }
  if (rc != NSL_OK && lens) memset(lens, 0, (size_t)P * sizeof *lens);   /* the exchange still runs: send none */
  void **in = NULL;
  size_t *ilen = NULL;
  nsl_error xerr = {0};
  /* (without its arrays this process still takes part, so that every process fails with it) */
  nsl_status xrc = bufs && lens ? nsl__comm_exchange((const void *const *)bufs, lens, &in, &ilen, &xerr)
                                : nsl__comm_exchange(NULL, NULL, &in, &ilen, &xerr);
  free_received(bufs, lens, P);
  if (rc != NSL_OK || xrc != NSL_OK) {
    free_received(in, ilen, P);
    return nsl__push_fail(L, rc != NSL_OK ? &err : &xerr);
  }
  return push_tables(L, in, ilen, P);
}

/* nsl.mpi.allreduce(col, op) (collective) -> an i64 column: col (i64, of
 * one length on every process) reduced elementwise over the processes by
 * op, "sum" (wrapping), "min" or "max"; the same on every process.  Raises
 * on a length that differs between processes (checked first, so none is
 * left waiting) or a failed exchange. */
static int l_allreduce(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  static const char *const ops[] = {"sum", "min", "max", NULL};
  static const int codes[] = {NSL_COMM_SUM, NSL_COMM_MIN, NSL_COMM_MAX};
  int op = codes[luaL_checkoption(L, 2, NULL, ops)];
  int len = c->type == NSL_I64 && c->len < INT32_MAX ? (int)c->len : -1;
  int least = nsl__comm_allmin(len), most = -nsl__comm_allmin(-len);
  if (least < 0 || least != most)
    return luaL_error(L, "nsl.mpi.allreduce: every process must give an i64 column of one length (%d to %d rows)",
                      least, most);
  nsl_column *r = nsl_column_new(NSL_I64, c->len, NULL);
  if (!r) return luaL_error(L, "out of memory");
  if (c->len) memcpy(r->data, c->data, (size_t)c->len * sizeof(int64_t));
  nsl__pushcolumn(L, r);
  nsl_error err = {0};
  if (nsl__comm_allreduce_i64(nsl_i64(r), (size_t)r->len, op, &err) != NSL_OK) return nsl__lua_error(L, &err);
  return 1;
}

/* nsl.mpi.bcast(n) (collective) -> rank 0's integer n. */
static int l_bcast(lua_State *L) {
  lua_Integer v = luaL_optinteger(L, 1, 0);
  void *buf = &v;
  size_t len = sizeof v;
  nsl_error err = {0};
  if (nsl__comm_rank() != 0) buf = NULL;
  if (nsl__comm_bcast(&buf, &len, &err) != NSL_OK) return nsl__input_error(L, &err);
  if (nsl__comm_rank() != 0) {
    if (buf && len == sizeof v) memcpy(&v, buf, sizeof v);
    free(buf);
  }
  lua_pushinteger(L, v);
  return 1;
}

/* nsl.mpi.seconds() -> seconds this process spent in communication calls,
 * and the bytes it sent and received. */
static int l_seconds(lua_State *L) {
  lua_pushnumber(L, nsl__comm_seconds());
  lua_pushnumber(L, nsl__comm_bytes());
  return 2;
}

/* nsl.mpi.wtime() -> seconds on a monotonic clock (the benchmark's timings). */
static int l_wtime(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
  return 1;
}

static const luaL_Reg dist_methods[] = {{"view", dist_view},   {"trace", dist_trace}, {"share", dist_share},
                                        {"subtrace", dist_subtrace}, {"filter", dist_filter},
                                        {"serve", dist_serve}, {"quit", dist_quit},   {"call", dist_call},
                                        {"owner", dist_owner}, {"stats", dist_stats}, {NULL, NULL}};
static const luaL_Reg dist_meta[] = {{"__gc", dist_gc}, {"__close", dist_gc}, {NULL, NULL}};
static const luaL_Reg funcs[] = {{"start", l_start},     {"open", l_open},   {"agree", l_agree},
                                 {"gather", l_gather},   {"bcast", l_bcast}, {"bcast_table", l_bcast_table},
                                 {"exchange", l_exchange},
                                 {"allreduce", l_allreduce},
                                 {"seconds", l_seconds}, {"wtime", l_wtime}, {NULL, NULL}};

int nsl__open_mpi(lua_State *L) {
  nsl__register_type(L, DIST_MT, dist_meta, dist_methods);
  luaL_newlib(L, funcs);
  lua_setfield(L, -2, "mpi");
  return 0;
}
