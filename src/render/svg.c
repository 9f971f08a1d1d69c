/*
 * svg.c -- the SVG back end: every primitive becomes one element of an SVG
 * 1.1 document kept as text.  Colours with alpha become fill-opacity /
 * stroke-opacity (times the style's opacity), so shapes look as the raster
 * back end draws them; text is escaped and always valid UTF-8.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

/* ---- growable buffer ---------------------------------------------------- */

void nsl__buf_free(nsl__buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* Makes room for n more bytes plus a NUL; 0 (and oom set) on failure. */
static int buf_grow(nsl__buf *b, size_t n) {
  if (b->oom) return 0;
  if (n > (size_t)-1 / 2 - b->len) {
    b->oom = 1;
    return 0;
  }
  if (b->len + n + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + n + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (p == NULL) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

void nsl__buf_putn(nsl__buf *b, const char *s, size_t n) {
  if (!buf_grow(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void nsl__buf_puts(nsl__buf *b, const char *s) {
  nsl__buf_putn(b, s, strlen(s));
}

void nsl__buf_printf(nsl__buf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    nsl__buf_putn(b, small, (size_t)n);
    return;
  }
  if (!buf_grow(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* ---- formatting --------------------------------------------------------- */

/* A coordinate: at most two decimals (rounded half away from zero), no
 * trailing zeros, no "-0"; very large magnitudes in exponent form (valid
 * in SVG attributes).  Integer arithmetic: SVG output of big timelines is
 * mostly numbers. */
static const char *num(char *buf, double v) {
  if (!(fabs(v) < 1e9)) {
    snprintf(buf, 32, "%.9g", v);
    return buf;
  }
  long long c = llround(v * 100);
  char tmp[32], *p = tmp + sizeof tmp;
  int neg = c < 0;
  unsigned long long u = neg ? (unsigned long long)-c : (unsigned long long)c;
  unsigned frac = (unsigned)(u % 100);
  u /= 100;
  *--p = '\0';
  if (frac) {
    if (frac % 10) *--p = (char)('0' + frac % 10);
    *--p = (char)('0' + frac / 10);
    *--p = '.';
  }
  do *--p = (char)('0' + u % 10); while (u /= 10);
  if (neg && (frac || p[0] != '0' || p[1] != '\0')) *--p = '-';
  memcpy(buf, p, (size_t)(tmp + sizeof tmp - p));
  return buf;
}

static void put_num(nsl__buf *b, double v) {
  char t[32];
  nsl__buf_puts(b, num(t, v));
}

/* Appends text with XML escaping; control characters are dropped and
 * invalid UTF-8 becomes U+FFFD, so the document stays well-formed. */
static void put_escaped(nsl__buf *b, const char *text) {
  const unsigned char *s = (const unsigned char *)text;
  const unsigned char *run = s;   /* start of bytes copied verbatim */
  for (;;) {
    const unsigned char *at = s;
    uint32_t cp = nsl__utf8_next(&s);
    const char *rep = NULL;
    if (cp == 0) break;
    switch (cp) {
    case '&': rep = "&amp;"; break;
    case '<': rep = "&lt;"; break;
    case '>': rep = "&gt;"; break;
    case '"': rep = "&quot;"; break;
    case '\'': rep = "&apos;"; break;
    case 0xfffe:
    case 0xffff: rep = "\xef\xbf\xbd"; break;
    case 0xfffd:
      /* an invalid byte decodes as U+FFFD too (consuming one byte):
       * write a real one instead of copying it */
      if (s - at != 3) rep = "\xef\xbf\xbd";
      break;
    default:
      if (nsl__is_control(cp)) rep = "";
      break;
    }
    if (rep) {
      nsl__buf_putn(b, (const char *)run, (size_t)(at - run));
      nsl__buf_puts(b, rep);
      run = s;
    }
  }
  nsl__buf_putn(b, (const char *)run, (size_t)(s - run));
}

static void put_attr(nsl__buf *b, const char *name, const char *value) {
  if (value == NULL) return;
  nsl__buf_printf(b, " %s=\"", name);
  put_escaped(b, value);
  nsl__buf_puts(b, "\"");
}

/* name="#rrggbb" (and name-opacity="a" below 1), or name="none". */
static void put_paint(nsl__buf *b, const char *name, nsl_rgba c, double opacity) {
  if (c == NSL_NONE) {
    nsl__buf_printf(b, " %s=\"none\"", name);
    return;
  }
  static const char hex[] = "0123456789abcdef";
  char h[8] = {'#'};
  for (int k = 0; k < 6; k++) h[1 + k] = hex[(c >> (28 - 4 * k)) & 15];
  h[7] = '\0';
  nsl__buf_puts(b, " ");
  nsl__buf_puts(b, name);
  nsl__buf_puts(b, "=\"");
  nsl__buf_puts(b, h);
  nsl__buf_puts(b, "\"");
  double o = NSL_RGBA_A(c) / 255.0 * (opacity > 1 ? 1 : opacity < 0 ? 0 : opacity);
  if (o < 1) {
    char t[32];
    snprintf(t, sizeof t, "%.3g", o);
    nsl__buf_printf(b, " %s-opacity=\"%s\"", name, t);
  }
}

/* The stroke attributes, or nothing when the style has no stroke. */
static void put_stroke(nsl__buf *b, const nsl_style *st) {
  if (st->stroke == NSL_NONE || !(st->line_width > 0)) return;
  put_paint(b, "stroke", st->stroke, st->opacity);
  nsl__buf_puts(b, " stroke-width=\"");
  put_num(b, st->line_width);
  nsl__buf_puts(b, "\"");
  if (st->dash > 0 && st->gap > 0) {
    nsl__buf_puts(b, " stroke-dasharray=\"");
    put_num(b, st->dash);
    nsl__buf_puts(b, " ");
    put_num(b, st->gap);
    nsl__buf_puts(b, "\"");
  }
}

/* ---- clip paths and element framing ------------------------------------- */

void nsl__svg_clip_changed(nsl_canvas *cv) {
  cv->svg_clip_id = cv->has_clip ? ++cv->svg_next_id : 0;
  cv->svg_clip_emitted = 0;
}

/* Writes the current clip path (once) before the element that uses it. */
static void ensure_clip(nsl_canvas *cv) {
  nsl__buf *b = &cv->svg;
  if (cv->svg_clip_id == 0 || cv->svg_clip_emitted) return;
  nsl__buf_printf(b, "<clipPath id=\"nsl-clip-%d\"><rect x=\"", cv->svg_clip_id);
  put_num(b, cv->clip_x);
  nsl__buf_puts(b, "\" y=\"");
  put_num(b, cv->clip_y);
  nsl__buf_puts(b, "\" width=\"");
  put_num(b, cv->clip_w);
  nsl__buf_puts(b, "\" height=\"");
  put_num(b, cv->clip_h);
  nsl__buf_puts(b, "\"/></clipPath>\n");
  cv->svg_clip_emitted = 1;
}

/* "<tag" with id, class and clip-path; geometry and paint follow. */
static void open_elem(nsl_canvas *cv, const char *tag, const nsl_style *st) {
  nsl__buf *b = &cv->svg;
  ensure_clip(cv);
  nsl__buf_printf(b, "<%s", tag);
  put_attr(b, "id", st->id);
  put_attr(b, "class", st->class_name);
  if (cv->svg_clip_id) nsl__buf_printf(b, " clip-path=\"url(#nsl-clip-%d)\"", cv->svg_clip_id);
}

/* Ends an element opened by open_elem, with its tooltip if any. */
static void close_elem(nsl_canvas *cv, const char *tag, const nsl_style *st) {
  nsl__buf *b = &cv->svg;
  if (st->title == NULL) {
    nsl__buf_puts(b, "/>\n");
    return;
  }
  nsl__buf_puts(b, "><title>");
  put_escaped(b, st->title);
  nsl__buf_printf(b, "</title></%s>\n", tag);
}

static void put_xy(nsl__buf *b, const char *xn, double x, const char *yn, double y) {
  nsl__buf_printf(b, " %s=\"", xn);
  put_num(b, x);
  nsl__buf_printf(b, "\" %s=\"", yn);
  put_num(b, y);
  nsl__buf_puts(b, "\"");
}

/* ---- primitives --------------------------------------------------------- */

void nsl__svg_free(nsl_canvas *cv) {
  nsl__buf_free(&cv->svg);
}

void nsl__svg_clear(nsl_canvas *cv, nsl_rgba bg) {
  cv->svg.len = 0;
  if (cv->svg.p) cv->svg.p[0] = '\0';
  cv->svg_depth = 0;
  cv->svg_clip_emitted = 0;   /* the clip path was dropped with the rest */
  if (bg == NSL_NONE) return;
  nsl__buf_puts(&cv->svg, "<rect width=\"100%\" height=\"100%\"");
  put_paint(&cv->svg, "fill", bg, 1.0);
  nsl__buf_puts(&cv->svg, "/>\n");
}

/* One rectangle's geometry (normalised to a non-negative size). */
static void put_rect_geometry(nsl__buf *b, double x, double y, double w, double h) {
  if (w < 0) x += w, w = -w;
  if (h < 0) y += h, h = -h;
  put_xy(b, "x", x, "y", y);
  put_xy(b, "width", w, "height", h);
}

void nsl__svg_rect(nsl_canvas *cv, double x, double y, double w, double h, const nsl_style *st) {
  open_elem(cv, "rect", st);
  put_rect_geometry(&cv->svg, x, y, w, h);
  put_paint(&cv->svg, "fill", st->fill, st->opacity);
  put_stroke(&cv->svg, st);
  close_elem(cv, "rect", st);
}

void nsl__svg_rects(nsl_canvas *cv, size_t n, const double *x, const double *y, const double *w,
                    const double *h, const nsl_rgba *fills, const nsl_style *st) {
  nsl__buf *b = &cv->svg;
  ensure_clip(cv);
  nsl__buf_puts(b, "<g");
  put_attr(b, "id", st->id);
  if (cv->svg_clip_id) nsl__buf_printf(b, " clip-path=\"url(#nsl-clip-%d)\"", cv->svg_clip_id);
  put_stroke(b, st);
  nsl__buf_puts(b, ">\n");
  if (st->title) {
    nsl__buf_puts(b, "<title>");
    put_escaped(b, st->title);
    nsl__buf_puts(b, "</title>\n");
  }
  for (size_t k = 0; k < n && !b->oom; k++) {
    if (!isfinite(x[k]) || !isfinite(y[k]) || !isfinite(w[k]) || !isfinite(h[k])) continue;
    nsl__buf_puts(b, "<rect");
    put_attr(b, "class", st->class_name);
    put_rect_geometry(b, x[k], y[k], w[k], h[k]);
    put_paint(b, "fill", fills ? fills[k] : st->fill, st->opacity);
    nsl__buf_puts(b, "/>\n");
  }
  nsl__buf_puts(b, "</g>\n");
}

void nsl__svg_line(nsl_canvas *cv, double x0, double y0, double x1, double y1, const nsl_style *st) {
  open_elem(cv, "line", st);
  put_xy(&cv->svg, "x1", x0, "y1", y0);
  put_xy(&cv->svg, "x2", x1, "y2", y1);
  put_stroke(&cv->svg, st);
  close_elem(cv, "line", st);
}

void nsl__svg_poly(nsl_canvas *cv, const double *x, const double *y, size_t n, int closed,
                   const nsl_style *st) {
  nsl__buf *b = &cv->svg;
  const char *tag = closed ? "polygon" : "polyline";
  open_elem(cv, tag, st);
  nsl__buf_puts(b, " points=\"");
  for (size_t k = 0; k < n && !b->oom; k++) {
    if (k) nsl__buf_puts(b, " ");
    put_num(b, x[k]);
    nsl__buf_puts(b, ",");
    put_num(b, y[k]);
  }
  nsl__buf_puts(b, "\"");
  put_paint(b, "fill", closed ? st->fill : NSL_NONE, st->opacity);
  put_stroke(b, st);
  nsl__buf_puts(b, " stroke-linejoin=\"round\"");
  close_elem(cv, tag, st);
}

void nsl__svg_circle(nsl_canvas *cv, double cx, double cy, double r, const nsl_style *st) {
  open_elem(cv, "circle", st);
  put_xy(&cv->svg, "cx", cx, "cy", cy);
  nsl__buf_puts(&cv->svg, " r=\"");
  put_num(&cv->svg, fabs(r));
  nsl__buf_puts(&cv->svg, "\"");
  put_paint(&cv->svg, "fill", st->fill, st->opacity);
  put_stroke(&cv->svg, st);
  close_elem(cv, "circle", st);
}

void nsl__svg_text(nsl_canvas *cv, double x, double y, const char *utf8, const nsl_style *st) {
  nsl__buf *b = &cv->svg;
  double dx, dy;
  int rot;
  nsl__text_place(utf8, st, &dx, &dy, &rot);
  /* the baseline point: dy is along the text's own downward axis */
  double bx = rot == 0 ? x : rot == 90 ? x + dy : x - dy;
  double by = rot == 0 ? y + dy : y;
  open_elem(cv, "text", st);
  put_xy(b, "x", bx, "y", by);
  nsl__buf_puts(b, " font-size=\"");
  put_num(b, st->font_size);
  nsl__buf_puts(b, "\"");
  if (st->anchor == NSL_ANCHOR_MIDDLE) nsl__buf_puts(b, " text-anchor=\"middle\"");
  if (st->anchor == NSL_ANCHOR_END) nsl__buf_puts(b, " text-anchor=\"end\"");
  if (st->bold) nsl__buf_puts(b, " font-weight=\"bold\"");
  size_t tl = strlen(utf8);
  if (strstr(utf8, "  ") || utf8[0] == ' ' || (tl && utf8[tl - 1] == ' '))
    nsl__buf_puts(b, " xml:space=\"preserve\"");   /* keep spaces as the raster does */
  put_paint(b, "fill", st->fill, st->opacity);
  if (rot != 0) {
    nsl__buf_printf(b, " transform=\"rotate(%d ", -rot);
    put_num(b, bx);
    nsl__buf_puts(b, " ");
    put_num(b, by);
    nsl__buf_puts(b, ")\"");
  }
  nsl__buf_puts(b, ">");
  if (st->title) {
    nsl__buf_puts(b, "<title>");
    put_escaped(b, st->title);
    nsl__buf_puts(b, "</title>");
  }
  put_escaped(b, utf8);
  nsl__buf_puts(b, "</text>\n");
}

void nsl__svg_group_begin(nsl_canvas *cv, const nsl_style *st) {
  nsl__buf *b = &cv->svg;
  nsl__buf_puts(b, "<g");
  put_attr(b, "id", st->id);
  put_attr(b, "class", st->class_name);
  nsl__buf_puts(b, ">");
  if (st->title) {
    nsl__buf_puts(b, "<title>");
    put_escaped(b, st->title);
    nsl__buf_puts(b, "</title>");
  }
  nsl__buf_puts(b, "\n");
  cv->svg_depth++;
}

void nsl__svg_group_end(nsl_canvas *cv) {
  if (cv->svg_depth == 0) return;
  nsl__buf_puts(&cv->svg, "</g>\n");
  cv->svg_depth--;
}

void nsl__svg_raw(nsl_canvas *cv, const char *xml) {
  nsl__buf_puts(&cv->svg, xml);
  nsl__buf_puts(&cv->svg, "\n");
}

nsl_status nsl__svg_document(nsl_canvas *cv, unsigned char **data, size_t *len, nsl_error *err) {
  nsl__buf d = {0};
  nsl__buf_printf(&d,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" font-family=\"'DejaVu Sans', Verdana, sans-serif\">\n",
                  cv->width, cv->height, cv->width, cv->height);
  if (cv->svg.len) nsl__buf_putn(&d, cv->svg.p, cv->svg.len);
  for (int k = 0; k < cv->svg_depth; k++) nsl__buf_puts(&d, "</g>\n");
  nsl__buf_puts(&d, "</svg>\n");
  if (d.oom) {
    nsl__buf_free(&d);
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot produce the SVG document (%zu bytes drawn): out of memory",
                         cv->svg.len);
  }
  *data = (unsigned char *)d.p;
  *len = d.len;
  return NSL_OK;
}
