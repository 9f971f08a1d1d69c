/* lbundle.c -- bundles in Lua: reading (nsl.bundle_open), writing
 * (nsl.bundle_writer), combining (nsl.bundle_combine).  The members of the
 * bundles a trace was opened from are trace:members / trace:member.
 *
 * Environmental failures (a missing file, a refused archive, a member that
 * fails its check) return nil and a message; misuse raises. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lua/lnsl.h"
#include "nsl/bundle.h"
#include "nsl/cache.h"

#define NSL_BUNDLE_MT "nsl.bundle"
#define NSL_WRITER_MT "nsl.bundle_writer"

typedef struct lbundle {
  nsl_bundle *b;
} lbundle;

typedef struct lwriter {
  nsl_bundle_writer *w;
} lwriter;

/* ---- JSON values as Lua values ------------------------------------------ */

/* Pushes v: objects and arrays become tables (null members are left out),
 * integers Lua integers, reals floats. */
static void push_json(lua_State *L, const json_t *v, int depth) {
  luaL_checkstack(L, 4, "manifest too deeply nested");
  if (depth > 100) luaL_error(L, "manifest too deeply nested");
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    const char *key;
    json_t *x;
    lua_createtable(L, 0, (int)json_object_size(v));
    json_object_foreach((json_t *)v, key, x) {
      if (json_is_null(x)) continue;
      push_json(L, x, depth + 1);
      lua_setfield(L, -2, key);
    }
    break;
  }
  case JSON_ARRAY: {
    size_t i;
    json_t *x;
    lua_createtable(L, (int)json_array_size(v), 0);
    json_array_foreach(v, i, x) {
      push_json(L, x, depth + 1);
      lua_seti(L, -2, (lua_Integer)i + 1);
    }
    break;
  }
  case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); break;
  case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
  case JSON_REAL: lua_pushnumber(L, json_real_value(v)); break;
  case JSON_TRUE: lua_pushboolean(L, 1); break;
  case JSON_FALSE: lua_pushboolean(L, 0); break;
  default: lua_pushnil(L); break;
  }
}

/* Parses JSON text at stack index idx into a new object; raises on text
 * that is not a JSON object (a caller's mistake: the text comes from
 * nsl.report.json). */
static json_t *check_json_object(lua_State *L, int idx) {
  size_t len;
  const char *text = luaL_checklstring(L, idx, &len);
  json_error_t jerr;
  json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!j || !json_is_object(j)) {
    json_decref(j);
    luaL_argerror(L, idx, j ? "not a JSON object" : jerr.text);
  }
  return j;
}

/* ---- reading ------------------------------------------------------------ */

static nsl_bundle *checkbundle(lua_State *L, int idx) {
  lbundle *b = luaL_checkudata(L, idx, NSL_BUNDLE_MT);
  if (!b->b) luaL_argerror(L, idx, "bundle is closed");
  return b->b;
}

static int bundle_gc(lua_State *L) {
  lbundle *b = luaL_checkudata(L, 1, NSL_BUNDLE_MT);
  nsl_bundle_close(b->b);
  b->b = NULL;
  return 0;
}

/* Fills o from an options table at idx: mode ("bundle", "raw", "auto"),
 * verify, and the limits by name. */
static void check_open_options(lua_State *L, int idx, nsl_bundle_options *o) {
  nsl_bundle_options_init(o);
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  if (lua_getfield(L, idx, "mode") != LUA_TNIL) {
    static const char *const modes[] = {"bundle", "raw", "auto", NULL};
    static const nsl_bundle_mode values[] = {NSL_BUNDLE_STRICT, NSL_BUNDLE_RAW, NSL_BUNDLE_AUTO};
    o->mode = values[luaL_checkoption(L, -1, NULL, modes)];
  }
  lua_pop(L, 1);
  lua_getfield(L, idx, "verify");
  o->verify = lua_toboolean(L, -1);
  lua_pop(L, 1);
  static const char *const limits[] = {"max_member", "max_total", "ratio_floor", "max_members", "max_manifest"};
  uint64_t *fields[] = {&o->limits.max_member, &o->limits.max_total, &o->limits.ratio_floor,
                        &o->limits.max_members, &o->limits.max_manifest};
  for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
    if (lua_getfield(L, idx, limits[k]) != LUA_TNIL) {
      lua_Integer v = luaL_checkinteger(L, -1);
      luaL_argcheck(L, v >= 0, idx, "limits are >= 0");
      *fields[k] = (uint64_t)v;
    }
    lua_pop(L, 1);
  }
  if (lua_getfield(L, idx, "max_ratio") != LUA_TNIL) o->limits.max_ratio = luaL_checknumber(L, -1);
  lua_pop(L, 1);
}

/* nsl.bundle_open(path [, {mode=, verify=, max_member=, ...}]) -> bundle,
 * or nil and a message.  The default mode wants an nsl bundle. */
static int l_bundle_open(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  nsl_bundle_options o;
  check_open_options(L, 2, &o);
  lbundle *b = lua_newuserdatauv(L, sizeof *b, 0);   /* box first: no leak on error */
  b->b = NULL;
  luaL_setmetatable(L, NSL_BUNDLE_MT);
  nsl_error err = {0};
  if (nsl_bundle_open(&b->b, path, &o, &err) != NSL_OK) return nsl__push_fail(L, &err);
  return 1;
}

static int bundle_path(lua_State *L) {
  lua_pushstring(L, nsl_bundle_path(checkbundle(L, 1)));
  return 1;
}

static int bundle_is_raw(lua_State *L) {
  lua_pushboolean(L, nsl_bundle_is_raw(checkbundle(L, 1)));
  return 1;
}

/* b:members([prefix]) -> array of {name=, size=, sha256=} in archive order
 * (manifest.json left out), only names starting with prefix when given. */
static int bundle_members(lua_State *L) {
  nsl_bundle *b = checkbundle(L, 1);
  size_t plen = 0;
  const char *prefix = luaL_optlstring(L, 2, "", &plen);
  lua_newtable(L);
  lua_Integer k = 0;
  for (size_t i = 0; i < nsl_bundle_count(b); i++) {
    const nsl_bundle_member *m = nsl_bundle_member_at(b, i);
    if (strcmp(m->name, NSL_BUNDLE_MANIFEST) == 0 || strncmp(m->name, prefix, plen) != 0) continue;
    lua_createtable(L, 0, 3);
    lua_pushstring(L, m->name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, (lua_Integer)m->size);
    lua_setfield(L, -2, "size");
    if (m->sha256) {
      lua_pushstring(L, m->sha256);
      lua_setfield(L, -2, "sha256");
    }
    lua_seti(L, -2, ++k);
  }
  return 1;
}

/* b:manifest() -> the manifest as Lua tables, or nil for a plain zip. */
static int bundle_manifest(lua_State *L) {
  const char *text = nsl_bundle_manifest_json(checkbundle(L, 1));
  json_t *m = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;   /* checked at open: it parses */
  if (text && !m) return luaL_error(L, "out of memory");
  if (!m) lua_pushnil(L);
  else push_json(L, m, 0);
  json_decref(m);
  return 1;
}

/* b:read(name) -> the member's bytes (checked against the manifest), or nil
 * and a message. */
static int bundle_read(lua_State *L) {
  nsl_bundle *b = checkbundle(L, 1);
  const char *name = luaL_checkstring(L, 2);
  void *data = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl_bundle_read_member(b, name, &data, &len, &err) != NSL_OK) return nsl__push_fail(L, &err);
  lua_pushlstring(L, data, len);
  free(data);
  return 1;
}

/* b:verify() -> true, or nil and a message: every member decompressed and
 * checked. */
static int bundle_verify(lua_State *L) {
  nsl_error err = {0};
  if (nsl_bundle_verify(checkbundle(L, 1), &err) != NSL_OK) return nsl__push_fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

/* ---- writing ------------------------------------------------------------ */

static nsl_bundle_writer *checkwriter(lua_State *L, int idx) {
  lwriter *w = luaL_checkudata(L, idx, NSL_WRITER_MT);
  if (!w->w) luaL_argerror(L, idx, "bundle writer is finished");
  return w->w;
}

/* __gc, __close and w:abort(): drops an unfinished bundle (the target is
 * untouched). */
static int writer_abort(lua_State *L) {
  lwriter *w = luaL_checkudata(L, 1, NSL_WRITER_MT);
  nsl_bundle_writer_abort(w->w);
  w->w = NULL;
  return 0;
}

/* nsl.bundle_writer(target [, level]) -> writer, or nil and a message. */
static int l_bundle_writer(lua_State *L) {
  const char *target = luaL_checkstring(L, 1);
  lua_Integer level = luaL_optinteger(L, 2, 0);
  lwriter *w = lua_newuserdatauv(L, sizeof *w, 0);
  w->w = NULL;
  luaL_setmetatable(L, NSL_WRITER_MT);
  nsl_error err = {0};
  if (nsl_bundle_writer_open(&w->w, target, &err) != NSL_OK) return nsl__push_fail(L, &err);
  if (level != 0 && nsl_bundle_writer_set_level(w->w, (int)level, &err) != NSL_OK)
    return luaL_argerror(L, 2, err.msg);
  return 1;
}

static nsl_bundle_compression check_compression(lua_State *L, int idx) {
  static const char *const names[] = {"auto", "deflate", "store", NULL};
  static const nsl_bundle_compression values[] = {NSL_BUNDLE_COMPRESS_AUTO, NSL_BUNDLE_COMPRESS_DEFLATE,
                                                  NSL_BUNDLE_COMPRESS_STORE};
  return values[luaL_checkoption(L, idx, "auto", names)];
}

static int writer_result(lua_State *L, nsl_status st, const nsl_error *err) {
  if (st != NSL_OK) return nsl__push_fail(L, err);
  lua_pushboolean(L, 1);
  return 1;
}

/* w:add(name, data [, "auto"|"deflate"|"store"]) -> true, or nil and a message. */
static int writer_add(lua_State *L) {
  nsl_bundle_writer *w = checkwriter(L, 1);
  const char *name = luaL_checkstring(L, 2);
  size_t len;
  const char *data = luaL_checklstring(L, 3, &len);
  nsl_error err = {0};
  return writer_result(L, nsl_bundle_writer_add_memory(w, name, data, len, check_compression(L, 4), &err), &err);
}

/* w:add_file(name, path [, compression]) -> true, or nil and a message. */
static int writer_add_file(lua_State *L) {
  nsl_bundle_writer *w = checkwriter(L, 1);
  const char *name = luaL_checkstring(L, 2), *path = luaL_checkstring(L, 3);
  nsl_error err = {0};
  return writer_result(L, nsl_bundle_writer_add_file(w, name, path, check_compression(L, 4), &err), &err);
}

/* w:add_columns(member, export_path) -> true, or nil and a message: the
 * columnar form of the export, already in w as `member`, stored beside it
 * (nsl bundle --columns). */
static int writer_add_columns(lua_State *L) {
  nsl_bundle_writer *w = checkwriter(L, 1);
  const char *member = luaL_checkstring(L, 2), *path = luaL_checkstring(L, 3);
  nsl_error err = {0};
  return writer_result(L, nsl_bundle_writer_add_columns(w, member, path, &err), &err);
}

/* w:copy(bundle [, exclude_prefix]) -> true, or nil and a message: every
 * member of bundle but manifest.json and those under exclude_prefix,
 * verified on the way. */
static int writer_copy(lua_State *L) {
  nsl_bundle_writer *w = checkwriter(L, 1);
  nsl_bundle *b = checkbundle(L, 2);
  const char *exclude = luaL_optstring(L, 3, NULL);
  nsl_error err = {0};
  return writer_result(L, nsl_bundle_copy_members(b, w, exclude, &err), &err);
}

/* w:replaces(bundle) -> true, or nil and a message: the writer rewrites
 * bundle (opened from the writer's own target after the writer, which
 * holds the target's lock); finish fails rather than lose an update if the
 * file changed meanwhile. */
static int writer_replaces(lua_State *L) {
  nsl_bundle_writer *w = checkwriter(L, 1);
  nsl_bundle *b = checkbundle(L, 2);
  nsl_error err = {0};
  return writer_result(L, nsl_bundle_writer_replaces(w, b, &err), &err);
}

/* w:sha256(name) -> hex digest of a member already written, or nil. */
static int writer_sha256(lua_State *L) {
  const char *sha = nsl_bundle_writer_sha256(checkwriter(L, 1), luaL_checkstring(L, 2));
  if (sha) lua_pushstring(L, sha);
  else lua_pushnil(L);
  return 1;
}

/* w:finish(manifest [, extra]) -> true, or nil and a message.  manifest is
 * JSON text of an object, or a bundle whose manifest is taken as it is;
 * extra (JSON text of an object) sets top-level fields over it.  The writer
 * is finished either way. */
static int writer_finish(lua_State *L) {
  lwriter *box = luaL_checkudata(L, 1, NSL_WRITER_MT);
  checkwriter(L, 1);
  json_t *m = NULL;
  if (luaL_testudata(L, 2, NSL_BUNDLE_MT)) {
    const char *bm = nsl_bundle_manifest_json(checkbundle(L, 2));
    luaL_argcheck(L, bm != NULL, 2, "a plain zip has no manifest");
    m = json_loads(bm, JSON_REJECT_DUPLICATES, NULL);
    if (!m) return luaL_error(L, "out of memory");
  } else {
    m = check_json_object(L, 2);
  }
  if (!lua_isnoneornil(L, 3)) {
    size_t len;
    const char *text = lua_tolstring(L, 3, &len);
    json_error_t jerr;
    json_t *extra = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (!extra || !json_is_object(extra) || json_object_update(m, extra) != 0) {
      json_decref(extra);
      json_decref(m);
      return luaL_argerror(L, 3, "not JSON text of an object");
    }
    json_decref(extra);
  }
  char *text = json_dumps(m, 0);
  json_decref(m);
  if (!text) return luaL_error(L, "out of memory");
  nsl_error err = {0};
  nsl_bundle_writer *w = box->w;
  box->w = NULL;   /* finish releases it, whatever happens */
  nsl_status st = nsl_bundle_writer_finish(w, text, &err);
  free(text);
  return writer_result(L, st, &err);
}

/* ---- combining and names ------------------------------------------------ */

/* nsl.bundle_combine(inputs, out [, {allow_mixed_commands=, allow_mixed_nsys=}])
 * -> true, or nil and a message naming the inputs in conflict. */
static int l_bundle_combine(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  const char *out = luaL_checkstring(L, 2);
  nsl_combine_options o;
  nsl_combine_options_init(&o);
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_getfield(L, 3, "allow_mixed_commands");
    o.allow_mixed_commands = lua_toboolean(L, -1);
    lua_getfield(L, 3, "allow_mixed_nsys");
    o.allow_mixed_nsys = lua_toboolean(L, -1);
    lua_pop(L, 2);
  }
  lua_Integer n = luaL_len(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 100000, 1, "give 1 to 100000 bundles");
  const char **inputs = lua_newuserdatauv(L, (size_t)n * sizeof *inputs, 0);   /* freed by the GC */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    inputs[i - 1] = luaL_checkstring(L, -1);
    lua_pop(L, 1);   /* the string stays referenced by the inputs table */
  }
  nsl_error err = {0};
  if (nsl_bundle_combine(inputs, (int)n, out, &o, &err) != NSL_OK) return nsl__push_fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

/* nsl.bundle_check_name(name) -> true, or nil and what is wrong with it. */
static int l_bundle_check_name(lua_State *L) {
  nsl_error err = {0};
  if (nsl_bundle_check_name(luaL_checkstring(L, 1), &err) != NSL_OK) return nsl__push_fail(L, &err);
  lua_pushboolean(L, 1);
  return 1;
}

/* nsl.is_zip(path) -> true when the file starts like a zip (a bundle to
 * nsl.open). */
static int l_is_zip(lua_State *L) {
  lua_pushboolean(L, nsl_bundle_sniff(luaL_checkstring(L, 1)));
  return 1;
}

static const luaL_Reg bundle_methods[] = {{"path", bundle_path},     {"is_raw", bundle_is_raw},
                                          {"members", bundle_members}, {"manifest", bundle_manifest},
                                          {"read", bundle_read},     {"verify", bundle_verify},
                                          {"close", bundle_gc},      {NULL, NULL}};
static const luaL_Reg writer_methods[] = {{"add", writer_add},       {"add_file", writer_add_file},
                                          {"add_columns", writer_add_columns},
                                          {"copy", writer_copy},     {"sha256", writer_sha256},
                                          {"replaces", writer_replaces},
                                          {"finish", writer_finish}, {"abort", writer_abort},
                                          {NULL, NULL}};

static const luaL_Reg funcs[] = {{"bundle_open", l_bundle_open},
                                 {"bundle_writer", l_bundle_writer},
                                 {"bundle_combine", l_bundle_combine},
                                 {"bundle_check_name", l_bundle_check_name},
                                 {"is_zip", l_is_zip},
                                 {NULL, NULL}};

static const luaL_Reg bundle_meta[] = {{"__gc", bundle_gc}, {"__close", bundle_gc}, {NULL, NULL}};
static const luaL_Reg writer_meta[] = {{"__gc", writer_abort}, {"__close", writer_abort}, {NULL, NULL}};

int nsl__open_bundle(lua_State *L) {
  nsl__register_type(L, NSL_BUNDLE_MT, bundle_meta, bundle_methods);
  nsl__register_type(L, NSL_WRITER_MT, writer_meta, writer_methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
