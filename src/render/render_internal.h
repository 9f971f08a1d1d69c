/*
 * render_internal.h -- what the files of src/render/ share: the canvas
 * structure, the two back ends' entry points, the font and UTF-8 helpers.
 * Not installed; nothing outside src/render/ includes it.
 */
#ifndef NSL_RENDER_INTERNAL_H
#define NSL_RENDER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/render.h"

/* A growable byte string (the SVG document).  oom is set, and later
 * appends are dropped, once an allocation fails. */
typedef struct nsl__buf {
  char *p;
  size_t len, cap;
  int oom;
} nsl__buf;

void nsl__buf_free(nsl__buf *b);
void nsl__buf_putn(nsl__buf *b, const char *s, size_t n);
void nsl__buf_puts(nsl__buf *b, const char *s);
void nsl__buf_printf(nsl__buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* One rendered glyph: an 8-bit coverage bitmap w x h whose top-left pixel
 * sits x0 px right of the pen and y0 px below the baseline (y0 < 0 above). */
typedef struct nsl__glyph {
  int w, h, x0, y0;
  uint8_t *bits;
} nsl__glyph;

/* Rendered glyphs of one canvas, keyed by glyph, size, sub-pixel position
 * and weight. */
typedef struct nsl__glyph_cache nsl__glyph_cache;

struct nsl_canvas {
  nsl_canvas_kind kind;
  int width, height;
  nsl_error err;          /* first error met while drawing (err.code NSL_OK when none) */

  int has_clip;           /* the clip rectangle below is set */
  double clip_x, clip_y, clip_w, clip_h;

  /* raster back end */
  uint8_t *px;            /* width * height * 4 bytes, RGBA8 */
  int cx0, cy0, cx1, cy1; /* drawable pixels [cx0, cx1) x [cy0, cy1): canvas and clip */
  float *acc;             /* coverage accumulation scratch (polygons, strokes) */
  size_t acc_cap;         /* floats allocated in acc */
  int *spans;             /* per-row touched column ranges of acc */
  size_t spans_cap;       /* ints allocated in spans */
  double *pts;            /* point scratch (dash pieces, circle outlines) */
  size_t pts_cap;         /* doubles allocated in pts */
  nsl__glyph_cache *glyphs;

  /* SVG back end */
  nsl__buf svg;           /* the document body drawn so far */
  int svg_depth;          /* open groups */
  int svg_clip_id;        /* id of the current clip path, 0 when none */
  int svg_clip_emitted;   /* the current clip path was written into svg */
  int svg_next_id;
};

/* Records the first drawing error of cv (later ones are dropped). */
void nsl__canvas_fail(nsl_canvas *cv, nsl_status code, const char *what);

/* ---- font and text (text.c) ---- */

/* Decodes one UTF-8 character at *s and advances *s past it; invalid or
 * overlong sequences, surrogates and values above U+10FFFF decode as
 * U+FFFD and advance one byte.  Returns 0 at the terminating NUL. */
uint32_t nsl__utf8_next(const unsigned char **s);
/* Characters text never draws: C0 and C1 controls, DEL. */
int nsl__is_control(uint32_t cp);
/* Extra advance per glyph of faux bold text at em size `size`. */
double nsl__bold_extra(double size);

/* Walks the glyphs of a string: pen is the x (px, relative to the start)
 * where glyph `glyph` is drawn. */
typedef struct nsl__text_iter {
  const unsigned char *s;
  double scale, bold_extra, pen;
  int prev;               /* previous glyph for kerning, 0 at the start */
} nsl__text_iter;
/* Starts a walk; returns 0 when the font is unusable. */
int nsl__text_begin(nsl__text_iter *it, const char *utf8, double size, int bold);
/* Next glyph: fills *glyph and *pen and returns 1; returns 0 at the end,
 * with it->pen the total advance. */
int nsl__text_next(nsl__text_iter *it, int *glyph, double *pen);

nsl__glyph_cache *nsl__glyph_cache_new(void);
void nsl__glyph_cache_free(nsl__glyph_cache *gc);
/* The bitmap of `glyph` at em size `size`, shifted right by sub/4 px,
 * faux bold when bold; NULL when memory runs out.  Owned by the cache,
 * valid until the next call. */
const nsl__glyph *nsl__glyph_get(nsl__glyph_cache *gc, int glyph, double size, int sub, int bold);

/* ---- back ends (raster.c, svg.c): arguments already checked ---- */

int nsl__raster_init(nsl_canvas *cv);
void nsl__raster_free(nsl_canvas *cv);
void nsl__raster_update_clip(nsl_canvas *cv);
void nsl__raster_clear(nsl_canvas *cv, nsl_rgba bg);
void nsl__raster_rect(nsl_canvas *cv, double x, double y, double w, double h, nsl_rgba fill,
                      const nsl_style *st);
void nsl__raster_stroke(nsl_canvas *cv, const double *x, const double *y, size_t n, int closed,
                        const nsl_style *st);
void nsl__raster_polygon(nsl_canvas *cv, const double *x, const double *y, size_t n, const nsl_style *st);
void nsl__raster_circle(nsl_canvas *cv, double cx, double cy, double r, const nsl_style *st);
void nsl__raster_text(nsl_canvas *cv, double x, double y, const char *utf8, const nsl_style *st);
nsl_status nsl__raster_png(nsl_canvas *cv, unsigned char **data, size_t *len, nsl_error *err);
/* Encodes w x h RGBA8 pixels as a PNG file image (png.c); *data is
 * malloc'ed. */
nsl_status nsl__png_encode(const uint8_t *rgba, int w, int h, unsigned char **data, size_t *len,
                           nsl_error *err);

void nsl__svg_free(nsl_canvas *cv);
void nsl__svg_clear(nsl_canvas *cv, nsl_rgba bg);
void nsl__svg_clip_changed(nsl_canvas *cv);
void nsl__svg_rect(nsl_canvas *cv, double x, double y, double w, double h, const nsl_style *st);
void nsl__svg_rects(nsl_canvas *cv, size_t n, const double *x, const double *y, const double *w,
                    const double *h, const nsl_rgba *fills, const nsl_style *st);
void nsl__svg_line(nsl_canvas *cv, double x0, double y0, double x1, double y1, const nsl_style *st);
void nsl__svg_poly(nsl_canvas *cv, const double *x, const double *y, size_t n, int closed,
                   const nsl_style *st);
void nsl__svg_circle(nsl_canvas *cv, double cx, double cy, double r, const nsl_style *st);
void nsl__svg_text(nsl_canvas *cv, double x, double y, const char *utf8, const nsl_style *st);
void nsl__svg_group_begin(nsl_canvas *cv, const nsl_style *st);
void nsl__svg_group_end(nsl_canvas *cv);
void nsl__svg_raw(nsl_canvas *cv, const char *xml);
nsl_status nsl__svg_document(nsl_canvas *cv, unsigned char **data, size_t *len, nsl_error *err);

/* Text placement shared by both back ends: the offset from x to where the
 * text starts (anchor) and from y to the baseline (baseline), in the text's
 * own (possibly rotated) frame; rotation normalised to 0, 90 or -90. */
void nsl__text_place(const char *utf8, const nsl_style *st, double *dx, double *dy, int *rotation);

#endif
