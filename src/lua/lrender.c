/* lrender.c -- the render layer in Lua: nsl.canvas("png"|"svg", w, h) is a
 * canvas whose methods mirror the C primitives (rect, line, polyline,
 * polygon, circle, text, clip, groups, raw SVG), with the style as a Lua
 * table; cv:rects draws whole columns of rectangles (a timeline of a
 * million kernels without per-row Lua); cv:to_string gives the PNG bytes
 * or the SVG text and cv:write(path) writes the file atomically.  Module
 * functions: nsl.ticks, nsl.format_value, nsl.text_width, nsl.text_metrics,
 * nsl.palette, nsl.colormap, nsl.png_probe.
 *
 * Colours are strings ("#rgb", "#rrggbb", "#rrggbbaa", "none") or integers
 * 0xRRGGBBAA.  Style keys: fill, stroke, line_width, dash, gap, opacity,
 * font_size, anchor ("start", "middle", "end"), baseline ("alphabetic",
 * "top", "middle", "bottom"), rotation (0, 90, -90), bold, title, id, class
 * (the last three for SVG).  Lines and polylines are drawn black unless the
 * style gives a stroke. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <stb_image.h>

#include "lua/lnsl.h"
#include "nsl/render.h"

typedef struct lcanvas {
  nsl_canvas *cv;
} lcanvas;

static nsl_canvas *checkcanvas(lua_State *L, int idx) {
  lcanvas *b = luaL_checkudata(L, idx, NSL_CANVAS_MT);
  if (!b->cv) luaL_argerror(L, idx, "canvas already released");
  return b->cv;
}

static int cv_gc(lua_State *L) {
  lcanvas *b = luaL_checkudata(L, 1, NSL_CANVAS_MT);
  nsl_canvas_free(b->cv);
  b->cv = NULL;
  return 0;
}

/* ---- colours and styles ------------------------------------------------- */

/* The colour at idx: an integer 0xRRGGBBAA or a string; raises naming what. */
static nsl_rgba check_color(lua_State *L, int idx, const char *what) {
  if (lua_isinteger(L, idx)) return (nsl_rgba)(lua_tointeger(L, idx) & 0xffffffff);
  const char *s = lua_tostring(L, idx);
  if (!s || lua_type(L, idx) != LUA_TSTRING)
    luaL_error(L, "%s: a colour is a string like \"#0072b2\" or an integer 0xRRGGBBAA, not a %s", what,
               luaL_typename(L, idx));
  if (strcmp(s, "none") == 0) return NSL_NONE;
  nsl_rgba c;
  nsl_error err = {0};
  if (nsl_rgba_parse(s, &c, &err) != NSL_OK)
    luaL_error(L, "%s: '%s' is not a colour (#rgb, #rrggbb, #rrggbbaa or none)", what, s);
  return c;
}

static void push_color(lua_State *L, nsl_rgba c) {
  char buf[16];
  lua_pushstring(L, nsl_rgba_format(c, buf));
}

static int option_index(lua_State *L, int idx, const char *const *names, const char *what) {
  const char *s = luaL_checkstring(L, idx);
  for (int i = 0; names[i]; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return luaL_error(L, "style: '%s' is not a valid %s", s, what);
}

static double style_number(lua_State *L, int idx, const char *key) {
  if (!lua_isnumber(L, idx)) luaL_error(L, "style: %s must be a number, not a %s", key, luaL_typename(L, idx));
  return lua_tonumber(L, idx);
}

/* Fills st from the style table at idx (none or nil: the defaults).  line:
 * the shape is a line, so the stroke defaults to black.  Keys listed in
 * extra are accepted and left to the caller; any other key raises, so a
 * misspelt key does not pass unnoticed.  The strings title, id and class
 * point into the table, which must stay on the stack while st is used. */
static void read_style(lua_State *L, int idx, nsl_style *st, int line, const char *const *extra) {
  static const char *const anchors[] = {"start", "middle", "end", NULL};
  static const char *const baselines[] = {"alphabetic", "top", "middle", "bottom", NULL};
  *st = (nsl_style)NSL_STYLE_INIT;
  if (line) st->stroke = NSL_BLACK;
  if (lua_isnoneornil(L, idx)) return;
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (!k) luaL_error(L, "style: keys are names, not %s", luaL_typename(L, -2));
    if (strcmp(k, "fill") == 0) st->fill = check_color(L, -1, "style fill");
    else if (strcmp(k, "stroke") == 0) st->stroke = check_color(L, -1, "style stroke");
    else if (strcmp(k, "line_width") == 0) st->line_width = style_number(L, -1, k);
    else if (strcmp(k, "dash") == 0) st->dash = style_number(L, -1, k);
    else if (strcmp(k, "gap") == 0) st->gap = style_number(L, -1, k);
    else if (strcmp(k, "opacity") == 0) st->opacity = style_number(L, -1, k);
    else if (strcmp(k, "font_size") == 0) st->font_size = style_number(L, -1, k);
    else if (strcmp(k, "anchor") == 0) st->anchor = option_index(L, -1, anchors, "anchor (start, middle, end)");
    else if (strcmp(k, "baseline") == 0)
      st->baseline = option_index(L, -1, baselines, "baseline (alphabetic, top, middle, bottom)");
    else if (strcmp(k, "rotation") == 0) st->rotation = (int)style_number(L, -1, k);
    else if (strcmp(k, "bold") == 0) st->bold = lua_toboolean(L, -1);
    else if (strcmp(k, "title") == 0) st->title = luaL_checkstring(L, -1);
    else if (strcmp(k, "id") == 0) st->id = luaL_checkstring(L, -1);
    else if (strcmp(k, "class") == 0) st->class_name = luaL_checkstring(L, -1);
    else {
      int known = 0;
      for (int i = 0; extra && extra[i] && !known; i++) known = strcmp(k, extra[i]) == 0;
      if (!known) luaL_error(L, "style: unknown key '%s'", k);
    }
    lua_pop(L, 1);
  }
  if (st->dash > 0 && !(st->gap > 0)) st->gap = st->dash;   /* dash alone: equal gaps */
}

/* ---- number arrays ------------------------------------------------------- */

/* Length of the values at idx: a column's rows, a Lua array's length; -1
 * for a number (broadcast). */
static int64_t values_len(lua_State *L, int idx) {
  nsl_column *c = nsl__tocolumn(L, idx);
  if (c) return c->len;
  if (lua_type(L, idx) == LUA_TNUMBER) return -1;
  if (lua_type(L, idx) == LUA_TTABLE) return (int64_t)luaL_len(L, idx);
  return luaL_argerror(L, idx, "expected a column, an array of numbers or a number");
}

/* n doubles from the values at idx (column, Lua array, or a number
 * repeated): the column's own data when it is F64, else a converted copy
 * in a scratch userdata pushed on the stack (so an error does not leak
 * it).  NULLs become NaN, which draws nothing. */
static const double *values_doubles(lua_State *L, int idx, int64_t n) {
  idx = lua_absindex(L, idx);
  nsl_column *c = nsl__tocolumn(L, idx);
  if (c && c->type == NSL_F64) {
    lua_pushnil(L);   /* keep the stack shape the same in every case */
    return nsl_f64(c);
  }
  double *d = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *d, 0);
  if (c) {
    if (c->type == NSL_STR) luaL_argerror(L, idx, "a string column has no coordinates");
    for (int64_t i = 0; i < n; i++) d[i] = nsl_column_is_null(c, i) ? NAN : nsl_column_get_f64(c, i);
  } else if (lua_type(L, idx) == LUA_TNUMBER) {
    double v = lua_tonumber(L, idx);
    for (int64_t i = 0; i < n; i++) d[i] = v;
  } else {
    for (int64_t i = 0; i < n; i++) {
      lua_geti(L, idx, (lua_Integer)i + 1);
      d[i] = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : NAN;
      lua_pop(L, 1);
    }
  }
  return d;
}

/* ---- canvas ------------------------------------------------------------------ */

/* nsl.canvas("png" | "svg", width, height) -> canvas, cleared to
 * transparent (cv:clear("#ffffff") paints a background). */
static int l_canvas(lua_State *L) {
  static const char *const kinds[] = {"png", "svg", NULL};
  int kind = luaL_checkoption(L, 1, NULL, kinds);
  lua_Integer w = luaL_checkinteger(L, 2), h = luaL_checkinteger(L, 3);
  luaL_argcheck(L, w >= 1 && w <= NSL_CANVAS_MAX_SIDE, 2, "width must be 1..16384 px");
  luaL_argcheck(L, h >= 1 && h <= NSL_CANVAS_MAX_SIDE, 3, "height must be 1..16384 px");
  lcanvas *b = lua_newuserdatauv(L, sizeof *b, 0);   /* the box first: no leak if this raises */
  b->cv = NULL;
  luaL_setmetatable(L, NSL_CANVAS_MT);
  b->cv = nsl_canvas_new(kind == 0 ? NSL_CANVAS_PNG : NSL_CANVAS_SVG, (int)w, (int)h);
  if (!b->cv) return luaL_error(L, "out of memory for a %dx%d canvas", (int)w, (int)h);
  return 1;
}

static int cv_kind(lua_State *L) {
  lua_pushstring(L, nsl_canvas_get_kind(checkcanvas(L, 1)) == NSL_CANVAS_PNG ? "png" : "svg");
  return 1;
}

/* cv:size() -> width, height in px. */
static int cv_size(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  lua_pushinteger(L, nsl_canvas_width(cv));
  lua_pushinteger(L, nsl_canvas_height(cv));
  return 2;
}

/* cv:clear([colour]) -- paints everything (default white). */
static int cv_clear(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_canvas_clear(cv, lua_isnoneornil(L, 2) ? NSL_WHITE : check_color(L, 2, "clear"));
  lua_settop(L, 1);
  return 1;
}

/* cv:clip(x, y, w, h) / cv:unclip() */
static int cv_clip(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_canvas_clip(cv, luaL_checknumber(L, 2), luaL_checknumber(L, 3), luaL_checknumber(L, 4),
                  luaL_checknumber(L, 5));
  lua_settop(L, 1);
  return 1;
}

static int cv_unclip(lua_State *L) {
  nsl_canvas_unclip(checkcanvas(L, 1));
  lua_settop(L, 1);
  return 1;
}

/* cv:rect(x, y, w, h [, style]) */
static int cv_rect(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_style st;
  read_style(L, 6, &st, 0, NULL);
  nsl_canvas_rect(cv, luaL_checknumber(L, 2), luaL_checknumber(L, 3), luaL_checknumber(L, 4),
                  luaL_checknumber(L, 5), &st);
  lua_settop(L, 1);
  return 1;
}

/* cv:line(x0, y0, x1, y1 [, style]) -- black unless style.stroke. */
static int cv_line(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_style st;
  read_style(L, 6, &st, 1, NULL);
  nsl_canvas_line(cv, luaL_checknumber(L, 2), luaL_checknumber(L, 3), luaL_checknumber(L, 4),
                  luaL_checknumber(L, 5), &st);
  lua_settop(L, 1);
  return 1;
}

/* The points of polyline/polygon: xs and ys (columns or arrays) of one
 * length; returns it. */
static int64_t check_points(lua_State *L, const double **x, const double **y) {
  int64_t n = values_len(L, 2), m = values_len(L, 3);
  if (n < 0 || m < 0 || n != m) luaL_error(L, "points: xs and ys must be columns or arrays of one length (%d and %d)",
                                         (int)n, (int)m);
  *x = values_doubles(L, 2, n);
  *y = values_doubles(L, 3, n);
  return n;
}

/* cv:polyline(xs, ys [, style]) -- black unless style.stroke. */
static int cv_polyline(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_style st;
  read_style(L, 4, &st, 1, NULL);
  const double *x, *y;
  int64_t n = check_points(L, &x, &y);
  nsl_canvas_polyline(cv, x, y, (size_t)n, &st);
  lua_settop(L, 1);
  return 1;
}

/* cv:polygon(xs, ys [, style]) */
static int cv_polygon(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_style st;
  read_style(L, 4, &st, 0, NULL);
  const double *x, *y;
  int64_t n = check_points(L, &x, &y);
  nsl_canvas_polygon(cv, x, y, (size_t)n, &st);
  lua_settop(L, 1);
  return 1;
}

/* cv:circle(cx, cy, r [, style]) */
static int cv_circle(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_style st;
  read_style(L, 5, &st, 0, NULL);
  nsl_canvas_circle(cv, luaL_checknumber(L, 2), luaL_checknumber(L, 3), luaL_checknumber(L, 4), &st);
  lua_settop(L, 1);
  return 1;
}

/* cv:text(x, y, text [, style]) -- in style.fill (black). */
static int cv_text(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_style st;
  read_style(L, 5, &st, 0, NULL);
  nsl_canvas_text(cv, luaL_checknumber(L, 2), luaL_checknumber(L, 3), luaL_checkstring(L, 4), &st);
  lua_settop(L, 1);
  return 1;
}

/* cv:group_begin([style]) / cv:group_end() -- an SVG <g> with the style's
 * id, class and title (a tooltip); the raster ignores groups. */
static int cv_group_begin(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_style st;
  read_style(L, 2, &st, 0, NULL);
  nsl_canvas_group_begin(cv, &st);
  lua_settop(L, 1);
  return 1;
}

static int cv_group_end(lua_State *L) {
  nsl_canvas_group_end(checkcanvas(L, 1));
  lua_settop(L, 1);
  return 1;
}

/* cv:svg_raw(xml) -- appended verbatim to an SVG (scripts, styles). */
static int cv_svg_raw(lua_State *L) {
  nsl_canvas_svg_raw(checkcanvas(L, 1), luaL_checkstring(L, 2));
  lua_settop(L, 1);
  return 1;
}

static const char *const rect_extra[] = {"colors", "colormap", "alpha", "alpha_min", "min_width", NULL};

/* cv:rects(x0, x1, y0, y1 [, color] [, opts]) -> number of rectangles.
 * Rectangle k spans [x0[k], x1[k]) x [y0[k], y1[k]); each argument is a
 * column, an array or one number for all.  color: nil (opts.fill), or a
 * column / array / number of colour indices, 0-based into opts.colors (a
 * list of colours; without it the palette, nsl.palette), or with
 * opts.colormap = true numbers t in [0, 1] through the sequential colour
 * map.  opts: the style (fill, stroke, line_width, opacity, class) and
 * alpha (column, array or number in [0, 1] multiplying each rectangle's
 * alpha, e.g. the covered fraction of a merged span), alpha_min (a floor
 * for it), min_width (px: narrower rectangles are widened to it, from x0). */
static int cv_rects(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  int has_color = !lua_isnoneornil(L, 6);
  nsl_style st;
  read_style(L, 7, &st, 0, rect_extra);
  int64_t n = -1;
  for (int a = 2; a <= 5; a++) {
    int64_t m = values_len(L, a);
    if (m >= 0 && n >= 0 && m != n) return luaL_error(L, "rects: argument %d has %d rows, not %d", a, (int)m, (int)n);
    if (m >= 0) n = m;
  }
  if (has_color && values_len(L, 6) >= 0) {
    int64_t m = values_len(L, 6);
    if (n >= 0 && m != n) return luaL_error(L, "rects: the colours are %d, not %d", (int)m, (int)n);
    n = m;
  }
  if (n < 0) n = 1;   /* all numbers: one rectangle */
  int colormap = 0, have_colors = 0;
  double alpha_min = 0, min_width = 0;
  int alpha_idx = 0;
  if (lua_istable(L, 7)) {
    lua_getfield(L, 7, "colormap");
    colormap = lua_toboolean(L, -1);
    lua_getfield(L, 7, "colors");
    have_colors = lua_istable(L, -1);
    lua_getfield(L, 7, "alpha_min");
    alpha_min = luaL_optnumber(L, -1, 0);
    lua_getfield(L, 7, "min_width");
    min_width = luaL_optnumber(L, -1, 0);
    lua_pop(L, 4);
    lua_getfield(L, 7, "alpha");
    if (!lua_isnil(L, -1)) {
      alpha_idx = lua_gettop(L);
      int64_t m = values_len(L, alpha_idx);
      if (m >= 0 && m != n) return luaL_error(L, "rects: alpha has %d rows, not %d", (int)m, (int)n);
    }
  }
  const double *x0 = values_doubles(L, 2, n), *x1 = values_doubles(L, 3, n);
  const double *y0 = values_doubles(L, 4, n), *y1 = values_doubles(L, 5, n);
  double *x = lua_newuserdatauv(L, (size_t)n * 4 * sizeof *x + 1, 0), *y = x + n, *w = y + n, *h = w + n;
  for (int64_t k = 0; k < n; k++) {
    x[k] = x0[k], w[k] = x1[k] - x0[k];
    y[k] = y0[k], h[k] = y1[k] - y0[k];
    if (w[k] < min_width) w[k] = min_width;
  }
  nsl_rgba *fills = NULL;
  if (has_color || alpha_idx) {
    fills = lua_newuserdatauv(L, (size_t)n * sizeof *fills + 1, 0);
    const double *ci = has_color ? values_doubles(L, 6, n) : NULL;
    nsl_rgba table[256];
    int ntable = 0;
    if (have_colors) {   /* colours of opts.colors, up to 256 */
      lua_getfield(L, 7, "colors");
      ntable = (int)luaL_len(L, -1);
      if (ntable > 256) ntable = 256;
      for (int i = 0; i < ntable; i++) {
        lua_geti(L, -1, i + 1);
        table[i] = check_color(L, -1, "rects colors");
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    const double *al = alpha_idx ? values_doubles(L, alpha_idx, n) : NULL;
    for (int64_t k = 0; k < n; k++) {
      nsl_rgba c = st.fill;
      if (ci) {
        double v = ci[k];
        if (colormap) c = nsl_colormap(v);
        else if (isnan(v)) c = NSL_NONE;
        else if (have_colors) c = v >= 0 && v < ntable ? table[(int)v] : NSL_NONE;
        else c = nsl_palette(v >= 0 && v < 1e6 ? (int)v : 0);
      }
      if (al) {
        double a = al[k];
        if (!(a >= alpha_min)) a = alpha_min;   /* NaN too */
        if (a > 1) a = 1;
        c = (c & 0xffffff00u) | (nsl_rgba)lround(NSL_RGBA_A(c) * a);
      }
      fills[k] = c;
    }
  }
  nsl_canvas_rects(cv, (size_t)n, x, y, w, h, fills, &st);
  lua_pushinteger(L, n);
  return 1;
}

/* cv:to_string() -> the PNG bytes or the SVG text. */
static int cv_to_string(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  unsigned char *data = NULL;
  size_t len = 0;
  nsl_error err = {0};
  if (nsl_canvas_to_memory(cv, &data, &len, &err) != NSL_OK) return nsl__lua_error(L, &err);
  lua_pushlstring(L, (const char *)data, len);
  free(data);
  return 1;
}

/* cv:write(path) -> true, or nil and a message (written atomically). */
static int cv_write(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  nsl_error err = {0};
  if (nsl_canvas_write(cv, luaL_checkstring(L, 2), &err) != NSL_OK) {
    return nsl__push_fail(L, &err);
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* Pixels of a PNG canvas, raising for an SVG one. */
static const uint8_t *check_pixels(lua_State *L, nsl_canvas *cv) {
  const uint8_t *px = nsl_canvas_pixels(cv);
  if (!px) luaL_error(L, "an SVG canvas has no pixels");
  return px;
}

/* cv:pixel(x, y) -> r, g, b, a of pixel (x, y) (0-based), nil outside. */
static int cv_pixel(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  const uint8_t *px = check_pixels(L, cv);
  lua_Integer x = luaL_checkinteger(L, 2), y = luaL_checkinteger(L, 3);
  if (x < 0 || y < 0 || x >= nsl_canvas_width(cv) || y >= nsl_canvas_height(cv)) return 0;
  const uint8_t *p = px + ((size_t)y * (size_t)nsl_canvas_width(cv) + (size_t)x) * 4;
  for (int k = 0; k < 4; k++) lua_pushinteger(L, p[k]);
  return 4;
}

/* Pixels of the RGBA image px (w x h) that differ from bg. */
static int64_t count_differing(const uint8_t *px, int64_t w, int64_t h, nsl_rgba bg) {
  uint8_t ref[4] = {(uint8_t)NSL_RGBA_R(bg), (uint8_t)NSL_RGBA_G(bg), (uint8_t)NSL_RGBA_B(bg), (uint8_t)NSL_RGBA_A(bg)};
  int64_t n = 0;
  for (int64_t i = 0; i < w * h; i++) n += memcmp(px + i * 4, ref, 4) != 0;
  return n;
}

/* cv:count_pixels([bg]) -> the number of pixels that differ from bg
 * (default white): 0 for a blank figure. */
static int cv_count_pixels(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  const uint8_t *px = check_pixels(L, cv);
  nsl_rgba bg = lua_isnoneornil(L, 2) ? NSL_WHITE : check_color(L, 2, "count_pixels");
  lua_pushinteger(L, count_differing(px, nsl_canvas_width(cv), nsl_canvas_height(cv), bg));
  return 1;
}

static int cv_tostring(lua_State *L) {
  nsl_canvas *cv = checkcanvas(L, 1);
  lua_pushfstring(L, "canvas<%s> %dx%d", nsl_canvas_get_kind(cv) == NSL_CANVAS_PNG ? "png" : "svg",
                  nsl_canvas_width(cv), nsl_canvas_height(cv));
  return 1;
}

/* ---- module functions ------------------------------------------------------- */

static nsl_axis_unit check_unit(lua_State *L, int idx) {
  static const char *const units[] = {"number", "ns", "bytes", "percent", NULL};
  return (nsl_axis_unit)luaL_checkoption(L, idx, "number", units);
}

/* nsl.ticks(lo, hi [, {target = 6, unit = "number"|"ns"|"bytes"|"percent",
 * log = false}]) -> {values = {...}, labels = {...}, step =, lo =, hi =}
 * (lo, hi: the range widened to whole ticks). */
static int l_ticks(lua_State *L) {
  double lo = luaL_checknumber(L, 1), hi = luaL_checknumber(L, 2);
  int target = 6, log = 0;
  nsl_axis_unit unit = NSL_UNIT_NUMBER;
  if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_getfield(L, 3, "target");
    target = (int)luaL_optinteger(L, -1, 6);
    lua_getfield(L, 3, "unit");
    unit = check_unit(L, lua_gettop(L));
    lua_getfield(L, 3, "log");
    log = lua_toboolean(L, -1);
    lua_pop(L, 3);
  }
  nsl_ticks *t = lua_newuserdatauv(L, sizeof *t, 0);   /* ~2.5 KB: scratch the GC owns */
  nsl_error err = {0};
  nsl_status rc = log ? nsl_ticks_log(lo, hi, target, unit, t, &err) : nsl_ticks_linear(lo, hi, target, unit, t, &err);
  if (rc != NSL_OK) return nsl__lua_errorf(L, &err, "nsl.ticks");
  lua_createtable(L, 0, 5);
  lua_createtable(L, t->n, 0);
  lua_createtable(L, t->n, 0);
  for (int i = 0; i < t->n; i++) {
    lua_pushnumber(L, t->value[i]);
    lua_seti(L, -3, i + 1);
    lua_pushstring(L, t->label[i]);
    lua_seti(L, -2, i + 1);
  }
  lua_setfield(L, -3, "labels");
  lua_setfield(L, -2, "values");
  lua_pushnumber(L, t->step);
  lua_setfield(L, -2, "step");
  lua_pushnumber(L, t->lo);
  lua_setfield(L, -2, "lo");
  lua_pushnumber(L, t->hi);
  lua_setfield(L, -2, "hi");
  return 1;
}

/* nsl.format_value(v [, unit [, digits = 3]]) -> "1.25 ms", "3.5 GiB", "12.5%". */
static int l_format_value(lua_State *L) {
  double v = luaL_checknumber(L, 1);
  nsl_axis_unit unit = check_unit(L, 2);
  int digits = (int)luaL_optinteger(L, 3, 3);
  char buf[64];
  lua_pushstring(L, nsl_format_value(v, unit, digits, buf, sizeof buf));
  return 1;
}

/* nsl.text_width(text, size [, bold]) -> advance width in px. */
static int l_text_width(lua_State *L) {
  lua_pushnumber(L, nsl_text_width(luaL_checkstring(L, 1), luaL_checknumber(L, 2), lua_toboolean(L, 3)));
  return 1;
}

/* nsl.text_metrics(size) -> ascent, descent (px, both positive). */
static int l_text_metrics(lua_State *L) {
  double a = 0, d = 0;
  nsl_text_metrics(luaL_checknumber(L, 1), &a, &d);
  lua_pushnumber(L, a);
  lua_pushnumber(L, d);
  return 2;
}

/* nsl.palette(i) -> colour i (0-based) of the colour-blind-safe palette,
 * as "#rrggbb"; nsl.palette() -> the 8 base colours as an array. */
static int l_palette(lua_State *L) {
  if (lua_isnoneornil(L, 1)) {
    lua_createtable(L, NSL_PALETTE_BASE, 0);
    for (int i = 0; i < NSL_PALETTE_BASE; i++) {
      push_color(L, nsl_palette(i));
      lua_seti(L, -2, i + 1);
    }
    return 1;
  }
  lua_Integer i = luaL_checkinteger(L, 1);
  push_color(L, nsl_palette(i < 0 || i > 1000000 ? 0 : (int)i));
  return 1;
}

/* nsl.colormap(t) -> the sequential (viridis-like) colour at t in [0, 1]. */
static int l_colormap(lua_State *L) {
  push_color(L, nsl_colormap(luaL_checknumber(L, 1)));
  return 1;
}

/* nsl.png_probe(bytes [, bg]) -> {width =, height =, differing =} with
 * differing the pixels not equal to bg (default white), decoded with
 * stb_image; nil and a message when the bytes are not a PNG that decodes. */
static int l_png_probe(lua_State *L) {
  size_t len;
  const char *data = luaL_checklstring(L, 1, &len);
  nsl_rgba bg = lua_isnoneornil(L, 2) ? NSL_WHITE : check_color(L, 2, "png_probe");
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (len < 8 || memcmp(data, sig, 8) != 0 || len > INT32_MAX) {
    lua_pushnil(L);
    lua_pushstring(L, "not a PNG file (no PNG signature)");
    return 2;
  }
  int w = 0, h = 0, comp = 0;
  unsigned char *px = stbi_load_from_memory((const unsigned char *)data, (int)len, &w, &h, &comp, 4);
  if (!px) {
    lua_pushnil(L);
    lua_pushfstring(L, "PNG does not decode: %s", stbi_failure_reason());
    return 2;
  }
  int64_t diff = count_differing(px, w, h, bg);
  stbi_image_free(px);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, w);
  lua_setfield(L, -2, "width");
  lua_pushinteger(L, h);
  lua_setfield(L, -2, "height");
  lua_pushinteger(L, diff);
  lua_setfield(L, -2, "differing");
  return 1;
}

static const luaL_Reg methods[] = {
    {"kind", cv_kind},       {"size", cv_size},           {"clear", cv_clear},
    {"clip", cv_clip},       {"unclip", cv_unclip},       {"rect", cv_rect},
    {"rects", cv_rects},     {"line", cv_line},           {"polyline", cv_polyline},
    {"polygon", cv_polygon}, {"circle", cv_circle},       {"text", cv_text},
    {"group_begin", cv_group_begin}, {"group_end", cv_group_end}, {"svg_raw", cv_svg_raw},
    {"to_string", cv_to_string}, {"write", cv_write},     {"pixel", cv_pixel},
    {"count_pixels", cv_count_pixels}, {"close", cv_gc},  {NULL, NULL}};
static const luaL_Reg meta[] = {{"__gc", cv_gc}, {"__close", cv_gc}, {"__tostring", cv_tostring}, {NULL, NULL}};
static const luaL_Reg funcs[] = {{"canvas", l_canvas},           {"ticks", l_ticks},
                                 {"format_value", l_format_value}, {"text_width", l_text_width},
                                 {"text_metrics", l_text_metrics}, {"palette", l_palette},
                                 {"colormap", l_colormap},       {"png_probe", l_png_probe},
                                 {NULL, NULL}};

int nsl__open_render(lua_State *L) {
  nsl__register_type(L, NSL_CANVAS_MT, meta, methods);
  luaL_setfuncs(L, funcs, 0);
  return 0;
}
