/* lio.c -- file helpers for Lua: nsl.read_file (regular files only),
 * nsl.write_file (atomic), nsl.mkdir_p, and the
 * encodings that embed data in a page: nsl.base64, nsl.pack. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lua/lnsl.h"
#include "core/atomic_write.h"
#include "nsl/nsl_io.h"
#include "core/nsl_internal.h"
#include "core/text.h"

/* nsl.read_file(path [, max]) -> the whole file, or nil and a message: a
 * FIFO, a device or a folder is refused before anything is read (so
 * --arg map=/dev/zero or a FIFO cannot make nsl wait or read without end),
 * and with max a file of more than max bytes too. */
static int l_read_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  lua_Integer max = luaL_optinteger(L, 2, -1);
  nsl_error err = {0};
  int fd = nsl__open_regular(path, 0, &err);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) != 0) nsl_error_set(&err, NSL_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
  else if (fd >= 0 && max >= 0 && st.st_size > max)
    nsl_error_set(&err, NSL_ERR_LIMIT, "cannot read '%s': %lld bytes, above the limit of %lld", path,
                  (long long)st.st_size, (long long)max);
  else if (fd >= 0) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_Integer total = 0;
    for (;;) {
      char *p = luaL_prepbuffer(&b);
      ssize_t n = read(fd, p, LUAL_BUFFERSIZE);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int e = errno;
        close(fd);
        return luaL_error(L, "cannot read '%s': %s", path, strerror(e));
      }
      if (n == 0) break;
      luaL_addsize(&b, (size_t)n);
      total += n;
      if (max >= 0 && total > max) {   /* it grew while read */
        close(fd);
        lua_pushnil(L);
        lua_pushfstring(L, "cannot read '%s': more than the limit of %I bytes", path, max);
        return 2;
      }
    }
    close(fd);
    luaL_pushresult(&b);
    return 1;
  }
  if (fd >= 0) close(fd);
  return nsl__push_fail(L, &err);
}

/* nsl.readable(path) -> true when path is a regular file (or a folder) that
 * opens for reading, else false and a message; never blocks on a FIFO. */
static int l_readable(lua_State *L) {
  nsl_error err = {0};
  int fd = nsl__open_regular(luaL_checkstring(L, 1), 1, &err);
  if (fd >= 0) close(fd);
  lua_pushboolean(L, fd >= 0);
  if (fd >= 0) return 1;
  lua_pushstring(L, err.msg);
  return 2;
}

/* The state of a file nsl.write_file writes in pieces. */
typedef struct piece_file {
  int fd;   /* -1 once committed or removed */
  const char *path;
} piece_file;

/* write(s): the next piece of the file (the upvalue's); raises when the
 * write fails or the file is done. */
static int l_write_piece(lua_State *L) {
  piece_file *w = lua_touserdata(L, lua_upvalueindex(1));
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  if (w->fd < 0) return luaL_error(L, "nsl.write_file: a piece written after the file was done");
  int code = nsl__write_all(w->fd, s, n);
  if (code) return luaL_error(L, "cannot write '%s': %s", w->path, strerror(code));
  return 0;
}

/* nsl.write_file(path, data) -> true, or nil and a message.  data: the
 * whole text, or a function called once with write, which it calls with
 * each piece in order (a long text never held whole); the file appears
 * whole when the function returns, and not at all when it raises (the
 * error, or a failed write's, is raised again once the temporary file is
 * removed). */
static int l_write_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  nsl_error err = {0};
  if (lua_isfunction(L, 2)) {
    lua_settop(L, 2);
    piece_file *w = lua_newuserdatauv(L, sizeof *w, 0);   /* stack 3 */
    char *tmp = NULL;
    w->fd = -1;
    w->path = path;
    if (nsl__tmpfile_open(path, &w->fd, &tmp, &err) != NSL_OK) return nsl__push_fail(L, &err);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_pushcclosure(L, l_write_piece, 1);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
      nsl__tmpfile_abort(w->fd, tmp);
      w->fd = -1;
      free(tmp);
      return lua_error(L);
    }
    nsl_status rc = nsl__tmpfile_commit(w->fd, tmp, path, NULL, &err);
    w->fd = -1;
    free(tmp);
    if (rc != NSL_OK) return nsl__push_fail(L, &err);
    lua_pushboolean(L, 1);
    return 1;
  }
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  if (nsl_write_file_atomic(path, data, len, &err) != NSL_OK) {
    return nsl__push_fail(L, &err);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* nsl.mkdir_p(path) -> true, or nil and a message. */
static int l_mkdir_p(lua_State *L) {
  nsl_error err = {0};
  if (nsl_mkdir_p(luaL_checkstring(L, 1), &err) != NSL_OK) {
    return nsl__push_fail(L, &err);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* Pushes the text t built, frees it, and returns 1 (raises when building it
 * ran out of memory): the one ending of the functions that build text. */
static int push_text(lua_State *L, nsl__text *t) {
  if (t->oom) {
    free(t->s);
    return luaL_error(L, "out of memory");
  }
  lua_pushlstring(L, t->s, t->len);
  free(t->s);
  return 1;
}

/* nsl.printable(s [, keep_layout]) -> s with every byte a terminal would
 * obey as a control (C0 such as ESC, DEL, C1, bytes that are not UTF-8)
 * written as a visible \xNN escape; tabs and line feeds kept when
 * keep_layout.  s itself when it holds none: names from a trace pass
 * through here on their way to stdout (nsl.report, nsl.output). */
static int l_printable(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  int keep = lua_toboolean(L, 2);
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  for (int k; i < n; i += (size_t)k)
    if ((k = u[i] >= 0x20 && u[i] < 0x7f ? 1 : nsl__terminal_safe(u + i, n - i, keep)) < 0) break;
  if (i == n) {
    lua_settop(L, 1);
    return 1;
  }
  nsl__text t = {0};
  nsl__text_add_printable(&t, s, n, keep);
  return push_text(L, &t);
}

/* nsl.json_plain(s) -> whether s is printable ASCII without a quote or a
 * backslash: a JSON string of it is s in quotes, nothing escaped (the
 * megabytes of base64 in an nsl view page need no scan in Lua). */
static int l_json_plain(lua_State *L) {
  size_t n;
  const unsigned char *u = (const unsigned char *)luaL_checklstring(L, 1, &n);
  int plain = 1;
  for (size_t i = 0; i < n; i++) plain &= u[i] >= 0x20 && u[i] < 0x7f && u[i] != '"' && u[i] != '\\';
  lua_pushboolean(L, plain);
  return 1;
}

/* nsl.shell_word(s) -> s as one POSIX shell word (quoted when it must
 * be), for the commands a message or a finding suggests. */
static int l_shell_word(lua_State *L) {
  nsl__text t = {0};
  nsl__text_add_shell_word(&t, luaL_checkstring(L, 1));
  return push_text(L, &t);
}

/* nsl.base64(data) -> the standard base64 encoding (RFC 4648, padded), for
 * embedding PNG figures in HTML and notebooks. */
static int l_base64(lua_State *L) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n;
  const unsigned char *p = (const unsigned char *)luaL_checklstring(L, 1, &n);
  luaL_Buffer b;
  char *o = luaL_buffinitsize(L, &b, (n + 2) / 3 * 4 + 1);
  size_t k = 0, i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    o[k++] = abc[v >> 18];
    o[k++] = abc[(v >> 12) & 63];
    o[k++] = abc[(v >> 6) & 63];
    o[k++] = abc[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
    o[k++] = abc[v >> 18];
    o[k++] = abc[(v >> 12) & 63];
    o[k++] = i + 1 < n ? abc[(v >> 6) & 63] : '=';
    o[k++] = '=';
  }
  luaL_pushresultsize(&b, k);
  return 1;
}

/* nsl.pack(column, type [, offset]) -> the values less offset as
 * little-endian bytes of type "u8", "u16", "i32", "u32", "f32" or "f64" (for
 * a page's typed arrays), or as unsigned LEB128 varints ("uv"); raises for a
 * value the type cannot hold. */
static int l_pack(lua_State *L) {
  nsl_column *c = nsl__checkcolumn(L, 1);
  const char *name = luaL_checkstring(L, 2);
  lua_Integer offset = luaL_optinteger(L, 3, 0);
  if (strcmp(name, "uv") == 0) {
    luaL_Buffer b;
    unsigned char *out = (unsigned char *)luaL_buffinitsize(L, &b, (size_t)c->len * NSL_PACK_VARINT_MAX + 1);
    nsl_error err = {0};
    size_t n = 0;
    if (nsl__column_pack_varint(c, offset, out, &n, &err) != NSL_OK) return nsl__lua_errorf(L, &err, "nsl.pack");
    luaL_pushresultsize(&b, n);
    return 1;
  }
  int t = nsl__pack_type_of(name);
  luaL_argcheck(L, t >= 0, 2, "one of u8, u16, i32, u32, f32, f64, uv");
  size_t w = nsl__pack_width((nsl__pack_type)t);
  luaL_Buffer b;
  unsigned char *out = (unsigned char *)luaL_buffinitsize(L, &b, (size_t)c->len * w + 1);
  nsl_error err = {0};
  if (nsl__column_pack_le(c, (nsl__pack_type)t, offset, out, &err) != NSL_OK) return nsl__lua_errorf(L, &err, "nsl.pack");
  luaL_pushresultsize(&b, (size_t)c->len * w);
  return 1;
}

static const luaL_Reg funcs[] = {{"read_file", l_read_file}, {"readable", l_readable}, {"write_file", l_write_file}, {"mkdir_p", l_mkdir_p}, {"base64", l_base64},
                                 {"printable", l_printable}, {"shell_word", l_shell_word}, {"json_plain", l_json_plain},
                                 {"pack", l_pack}, {NULL, NULL}};

int nsl__open_io(lua_State *L) {
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
