/*
 * canvas.c -- the drawing interface: checks arguments once, then hands
 * each primitive to the raster (raster.c) or SVG (svg.c) back end.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nsl/nsl_io.h"
#include "render/render_internal.h"

static const nsl_style default_style = NSL_STYLE_INIT;

static int finite4(double a, double b, double c, double d) {
  return isfinite(a) && isfinite(b) && isfinite(c) && isfinite(d);
}

static int all_finite(const double *v, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (!isfinite(v[k])) return 0;
  return 1;
}

/* The style to draw with: st, or the defaults for NULL; NULL (draw
 * nothing) when a number in it is NaN or infinite, or the opacity leaves
 * nothing to see. */
static const nsl_style *style_of(const nsl_style *st) {
  if (st == NULL) return &default_style;
  if (!finite4(st->line_width, st->dash, st->gap, st->font_size) || !isfinite(st->opacity) ||
      !(st->opacity > 0))
    return NULL;
  return st;
}

void nsl__canvas_fail(nsl_canvas *cv, nsl_status code, const char *what) {
  if (cv->err.code != NSL_OK) return;
  nsl_error_set(&cv->err, code, "drawing on a %dx%d %s canvas: %s", cv->width, cv->height,
                cv->kind == NSL_CANVAS_SVG ? "SVG" : "PNG", what);
}

nsl_canvas *nsl_canvas_new(nsl_canvas_kind kind, int width, int height) {
  if (kind != NSL_CANVAS_PNG && kind != NSL_CANVAS_SVG) return NULL;
  if (width < 1 || height < 1 || width > NSL_CANVAS_MAX_SIDE || height > NSL_CANVAS_MAX_SIDE) return NULL;
  nsl_canvas *cv = calloc(1, sizeof *cv);
  if (cv == NULL) return NULL;
  cv->kind = kind;
  cv->width = width;
  cv->height = height;
  if (kind == NSL_CANVAS_PNG && !nsl__raster_init(cv)) {
    nsl_canvas_free(cv);
    return NULL;
  }
  return cv;
}

void nsl_canvas_free(nsl_canvas *cv) {
  if (cv == NULL) return;
  nsl__raster_free(cv);
  nsl__svg_free(cv);
  free(cv);
}

nsl_canvas_kind nsl_canvas_get_kind(const nsl_canvas *cv) {
  return cv->kind;
}

int nsl_canvas_width(const nsl_canvas *cv) {
  return cv->width;
}

int nsl_canvas_height(const nsl_canvas *cv) {
  return cv->height;
}

nsl_status nsl_canvas_status(const nsl_canvas *cv, nsl_error *err) {
  if (cv->err.code != NSL_OK) {
    if (err) *err = cv->err;
    return cv->err.code;
  }
  if (cv->svg.oom)
    return nsl_error_set(err, NSL_ERR_NOMEM, "drawing on a %dx%d SVG canvas: out of memory", cv->width,
                         cv->height);
  return NSL_OK;
}

void nsl_canvas_clear(nsl_canvas *cv, nsl_rgba background) {
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_clear(cv, background);
  else
    nsl__svg_clear(cv, background);
}

void nsl_canvas_clip(nsl_canvas *cv, double x, double y, double w, double h) {
  if (!finite4(x, y, w, h)) return;
  if (w < 0) x += w, w = -w;
  if (h < 0) y += h, h = -h;
  cv->has_clip = 1;
  cv->clip_x = x, cv->clip_y = y, cv->clip_w = w, cv->clip_h = h;
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_update_clip(cv);
  else
    nsl__svg_clip_changed(cv);
}

void nsl_canvas_unclip(nsl_canvas *cv) {
  if (!cv->has_clip) return;
  cv->has_clip = 0;
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_update_clip(cv);
  else
    nsl__svg_clip_changed(cv);
}

void nsl_canvas_rect(nsl_canvas *cv, double x, double y, double w, double h, const nsl_style *st) {
  if (!finite4(x, y, w, h) || (st = style_of(st)) == NULL) return;
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_rect(cv, x, y, w, h, st->fill, st);
  else
    nsl__svg_rect(cv, x, y, w, h, st);
}

void nsl_canvas_rects(nsl_canvas *cv, size_t n, const double *x, const double *y, const double *w,
                      const double *h, const nsl_rgba *fills, const nsl_style *st) {
  if (n == 0 || !x || !y || !w || !h || (st = style_of(st)) == NULL) return;
  if (cv->kind == NSL_CANVAS_SVG) {
    nsl__svg_rects(cv, n, x, y, w, h, fills, st);
    return;
  }
  for (size_t k = 0; k < n; k++) {
    if (!finite4(x[k], y[k], w[k], h[k])) continue;
    nsl__raster_rect(cv, x[k], y[k], w[k], h[k], fills ? fills[k] : st->fill, st);
  }
}

void nsl_canvas_line(nsl_canvas *cv, double x0, double y0, double x1, double y1, const nsl_style *st) {
  if (!finite4(x0, y0, x1, y1) || (st = style_of(st)) == NULL) return;
  if (cv->kind == NSL_CANVAS_SVG) {
    nsl__svg_line(cv, x0, y0, x1, y1, st);
    return;
  }
  int solid = !(st->dash > 0 && st->gap > 0);
  if (solid && (x0 == x1 || y0 == y1)) {
    /* axis-aligned (grid lines, ticks): an exactly covered rectangle */
    nsl_style band = *st;
    double hw = st->line_width / 2;
    band.stroke = NSL_NONE;
    if (!(hw > 0)) return;
    if (y0 == y1)
      nsl__raster_rect(cv, fmin(x0, x1), y0 - hw, fabs(x1 - x0), 2 * hw, st->stroke, &band);
    else
      nsl__raster_rect(cv, x0 - hw, fmin(y0, y1), 2 * hw, fabs(y1 - y0), st->stroke, &band);
    return;
  }
  double xs[2] = {x0, x1}, ys[2] = {y0, y1};
  nsl__raster_stroke(cv, xs, ys, 2, 0, st);
}

void nsl_canvas_polyline(nsl_canvas *cv, const double *x, const double *y, size_t n, const nsl_style *st) {
  if (n < 2 || !x || !y || !all_finite(x, n) || !all_finite(y, n) || (st = style_of(st)) == NULL) return;
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_stroke(cv, x, y, n, 0, st);
  else
    nsl__svg_poly(cv, x, y, n, 0, st);
}

void nsl_canvas_polygon(nsl_canvas *cv, const double *x, const double *y, size_t n, const nsl_style *st) {
  if (n < 3 || !x || !y || !all_finite(x, n) || !all_finite(y, n) || (st = style_of(st)) == NULL) return;
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_polygon(cv, x, y, n, st);
  else
    nsl__svg_poly(cv, x, y, n, 1, st);
}

void nsl_canvas_circle(nsl_canvas *cv, double cx, double cy, double r, const nsl_style *st) {
  if (!isfinite(cx) || !isfinite(cy) || !isfinite(r) || (st = style_of(st)) == NULL) return;
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_circle(cv, cx, cy, r, st);
  else
    nsl__svg_circle(cv, cx, cy, r, st);
}

void nsl_canvas_text(nsl_canvas *cv, double x, double y, const char *utf8, const nsl_style *st) {
  if (utf8 == NULL || utf8[0] == '\0' || !isfinite(x) || !isfinite(y) || (st = style_of(st)) == NULL)
    return;
  if (!(st->font_size > 0) || !isfinite(st->font_size)) return;
  if (cv->kind == NSL_CANVAS_PNG)
    nsl__raster_text(cv, x, y, utf8, st);
  else
    nsl__svg_text(cv, x, y, utf8, st);
}

void nsl_canvas_group_begin(nsl_canvas *cv, const nsl_style *st) {
  if (cv->kind == NSL_CANVAS_SVG) nsl__svg_group_begin(cv, st ? st : &default_style);
}

void nsl_canvas_group_end(nsl_canvas *cv) {
  if (cv->kind == NSL_CANVAS_SVG) nsl__svg_group_end(cv);
}

void nsl_canvas_svg_raw(nsl_canvas *cv, const char *xml) {
  if (cv->kind == NSL_CANVAS_SVG && xml != NULL) nsl__svg_raw(cv, xml);
}

const uint8_t *nsl_canvas_pixels(const nsl_canvas *cv) {
  return cv->kind == NSL_CANVAS_PNG ? cv->px : NULL;
}

nsl_status nsl_canvas_to_memory(nsl_canvas *cv, unsigned char **data, size_t *len, nsl_error *err) {
  if (data == NULL || len == NULL)
    return nsl_error_set(err, NSL_ERR_ARG, "nsl_canvas_to_memory: no place given for the result");
  *data = NULL;
  *len = 0;
  nsl_status st = nsl_canvas_status(cv, err);
  if (st != NSL_OK) return st;
  if (cv->kind == NSL_CANVAS_PNG) return nsl__raster_png(cv, data, len, err);
  return nsl__svg_document(cv, data, len, err);
}

nsl_status nsl_canvas_write(nsl_canvas *cv, const char *path, nsl_error *err) {
  unsigned char *data = NULL;
  size_t len = 0;
  nsl_status st = nsl_canvas_to_memory(cv, &data, &len, err);
  if (st == NSL_OK) st = nsl_write_file_atomic(path, data, len, err);
  free(data);
  return st;
}
