/*
 * render.h -- nsl's render layer: one drawing interface with two back ends
 * (a PNG raster and an SVG writer), axis tick helpers, and colours that
 * colour-blind readers can tell apart.  Plots (histograms, timelines, flame
 * graphs, ...) are built on top of it in Lua; this layer knows nothing
 * about traces or analyses.
 *
 * Basic outline:
 *   1. cv = nsl_canvas_new(NSL_CANVAS_PNG or NSL_CANVAS_SVG, width, height).
 *   2. nsl_canvas_clear(cv, NSL_WHITE) paints the background.
 *   3. Fill an nsl_style (start from NSL_STYLE_INIT) and draw: rect, rects,
 *      line, polyline, polygon, circle, text.  Coordinates are pixels from
 *      the top-left corner with y pointing down; pixel (i, j) covers the
 *      square [i, i+1) x [j, j+1), so a 1 px line is crisp at x = i + 0.5
 *      and a rectangle is crisp on integer edges.
 *   4. nsl_ticks_linear / nsl_ticks_log place axis ticks and format their
 *      labels; nsl_text_width / nsl_text_metrics measure text for layout.
 *   5. nsl_canvas_write(cv, "out.png", &err) writes the file atomically, or
 *      nsl_canvas_to_memory returns the PNG bytes / SVG text (for HTML).
 *   6. nsl_canvas_free(cv).
 *
 * Drawing calls never fail loudly: a shape with a NaN or infinite
 * coordinate or style number, a too small count or a NULL array draws
 * nothing, and an
 * allocation failure is remembered by the canvas and reported by
 * nsl_canvas_status, nsl_canvas_write and nsl_canvas_to_memory.
 * A canvas is not thread-safe; different canvases may be drawn on by
 * different threads at once.  The measuring and tick functions are pure.
 * This header never includes lua.h.
 */
#ifndef NSL_RENDER_H
#define NSL_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/nsl.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---- colours ------------------------------------------------------------ */

/* A colour with straight (not premultiplied) alpha, as 0xRRGGBBAA. */
typedef uint32_t nsl_rgba;

#define NSL_RGBA(r, g, b, a) \
  ((nsl_rgba)(((uint32_t)(r) & 255u) << 24 | ((uint32_t)(g) & 255u) << 16 | \
              ((uint32_t)(b) & 255u) << 8 | ((uint32_t)(a) & 255u)))
#define NSL_RGBA_R(c) (((c) >> 24) & 255u)
#define NSL_RGBA_G(c) (((c) >> 16) & 255u)
#define NSL_RGBA_B(c) (((c) >> 8) & 255u)
#define NSL_RGBA_A(c) ((c) & 255u)
#define NSL_NONE ((nsl_rgba)0x00000000u)   /* fully transparent: "no fill" / "no stroke" */
#define NSL_BLACK ((nsl_rgba)0x000000ffu)
#define NSL_WHITE ((nsl_rgba)0xffffffffu)

/* Number of colours of the Okabe-Ito palette (Okabe & Ito 2008, "Color
 * Universal Design"): orange, sky blue, bluish green, yellow, blue,
 * vermillion, reddish purple, black. */
#define NSL_PALETTE_BASE 8

/* Categorical colour i (i >= 0): the Okabe-Ito colours for 0..7, then the
 * same eight hues made lighter or darker in turn (8..15 lighter, 16..23
 * darker, 24..31 lighter still, ...).  Deterministic; a negative i gives
 * colour 0. */
nsl_rgba nsl_palette(int i);

/* Sequential colour map for heatmaps: t in [0, 1] (clamped) from dark
 * purple through blue and green to yellow (viridis-like: interpolated in
 * RGB between eleven evenly spaced samples of matplotlib's viridis), so
 * lightness grows with t and the map survives grey-scale printing.  NaN
 * gives a light grey, so missing cells stand out. */
nsl_rgba nsl_colormap(double t);

/* Parses "#rgb", "#rrggbb" or "#rrggbbaa" (case-insensitive, leading '#'
 * optional) into *out.  Returns NSL_OK or NSL_ERR_ARG (out untouched). */
nsl_status nsl_rgba_parse(const char *text, nsl_rgba *out, nsl_error *err);

/* Writes c as "#rrggbb" (or "#rrggbbaa" when not opaque) into buf (at least
 * 10 bytes); returns buf. */
char *nsl_rgba_format(nsl_rgba c, char *buf);

/* ---- styles --------------------------------------------------------------- */

typedef enum nsl_text_anchor {
  NSL_ANCHOR_START = 0,    /* x is where the text begins */
  NSL_ANCHOR_MIDDLE = 1,   /* x is the middle of the text */
  NSL_ANCHOR_END = 2       /* x is where the text ends */
} nsl_text_anchor;

typedef enum nsl_text_baseline {
  NSL_BASELINE_ALPHABETIC = 0,   /* y is the baseline */
  NSL_BASELINE_TOP = 1,          /* y is the top of the font's ascent */
  NSL_BASELINE_MIDDLE = 2,       /* y is halfway between ascent and descent */
  NSL_BASELINE_BOTTOM = 3        /* y is the bottom of the font's descent */
} nsl_text_baseline;

/* How a shape is painted.  Start from NSL_STYLE_INIT and change fields.
 * Shapes (rect, polygon, circle) are filled with `fill` and outlined with
 * `stroke`; lines and polylines use `stroke` only; text uses `fill` only.
 * A colour with alpha 0 (NSL_NONE) paints nothing. */
typedef struct nsl_style {
  nsl_rgba fill;            /* interior and text colour */
  nsl_rgba stroke;          /* outline and line colour */
  double line_width;        /* stroke width in px (centred on the path) */
  double dash, gap;         /* dashed stroke: dash px drawn, gap px skipped; dash <= 0: solid */
  double opacity;           /* multiplies the alpha of fill and stroke, in [0, 1] */
  double font_size;         /* text em size in px */
  int anchor;               /* nsl_text_anchor */
  int baseline;             /* nsl_text_baseline */
  int rotation;             /* text: 0, 90 (reads bottom to top, y-axis titles) or -90 (top to bottom) */
  int bold;                 /* text: nonzero for bold */
  const char *title;        /* SVG only: tooltip shown on hover (<title>), or NULL */
  const char *id;           /* SVG only: id attribute, or NULL */
  const char *class_name;   /* SVG only: class attribute, or NULL */
} nsl_style;

/* Black fill, no stroke, 1 px lines, opaque, 12 px text at its start and
 * baseline, upright, regular weight, no SVG metadata. */
#define NSL_STYLE_INIT \
  { NSL_BLACK, NSL_NONE, 1.0, 0.0, 0.0, 1.0, 12.0, NSL_ANCHOR_START, NSL_BASELINE_ALPHABETIC, 0, 0, NULL, NULL, NULL }

/* ---- canvas --------------------------------------------------------------- */

typedef enum nsl_canvas_kind {
  NSL_CANVAS_PNG = 0,   /* RGBA8 raster, anti-aliased, written as PNG */
  NSL_CANVAS_SVG = 1    /* SVG 1.1 document */
} nsl_canvas_kind;

#define NSL_CANVAS_MAX_SIDE 16384   /* largest width or height in px */

typedef struct nsl_canvas nsl_canvas;

/* A new canvas of width x height px (1..NSL_CANVAS_MAX_SIDE each), fully
 * transparent and without clipping.  NULL for a bad kind or size, or when
 * memory runs out. */
nsl_canvas *nsl_canvas_new(nsl_canvas_kind kind, int width, int height);
/* Releases cv and everything it holds; NULL is allowed. */
void nsl_canvas_free(nsl_canvas *cv);
nsl_canvas_kind nsl_canvas_get_kind(const nsl_canvas *cv);
int nsl_canvas_width(const nsl_canvas *cv);
int nsl_canvas_height(const nsl_canvas *cv);
/* NSL_OK, or the first error met while drawing (out of memory). */
nsl_status nsl_canvas_status(const nsl_canvas *cv, nsl_error *err);

/* Paints the whole canvas (ignoring the clip rectangle) with background;
 * on an SVG canvas it also drops everything drawn before.  NSL_NONE makes
 * it transparent. */
void nsl_canvas_clear(nsl_canvas *cv, nsl_rgba background);

/* Restricts later drawing to the rectangle [x, x+w) x [y, y+h) (the raster
 * back end rounds its edges to whole pixels).  Replaces any earlier clip;
 * it does not intersect with it. */
void nsl_canvas_clip(nsl_canvas *cv, double x, double y, double w, double h);
/* Removes the clip rectangle: the whole canvas is drawable again. */
void nsl_canvas_unclip(nsl_canvas *cv);

/* The rectangle with corner (x, y) and size w x h (negative sizes extend
 * left/up), filled and outlined as st says.  st NULL means NSL_STYLE_INIT. */
void nsl_canvas_rect(nsl_canvas *cv, double x, double y, double w, double h, const nsl_style *st);
/* n filled rectangles in one call (timelines, flame graphs): rectangle k is
 * x[k], y[k], w[k], h[k], filled with fills[k] (or st->fill when fills is
 * NULL) and outlined with st->stroke.  st's title and id are not repeated
 * on each rectangle; class_name is. */
void nsl_canvas_rects(nsl_canvas *cv, size_t n, const double *x, const double *y, const double *w,
                      const double *h, const nsl_rgba *fills, const nsl_style *st);
/* A straight line from (x0, y0) to (x1, y1) with st->stroke, line_width
 * and dash; the ends are cut square at the end points (butt caps). */
void nsl_canvas_line(nsl_canvas *cv, double x0, double y0, double x1, double y1, const nsl_style *st);
/* An open path through the n points (x[k], y[k]) with round joins. */
void nsl_canvas_polyline(nsl_canvas *cv, const double *x, const double *y, size_t n, const nsl_style *st);
/* A closed polygon through the n points, filled (non-zero winding) and
 * outlined as st says. */
void nsl_canvas_polygon(nsl_canvas *cv, const double *x, const double *y, size_t n, const nsl_style *st);
/* A circle of radius r around (cx, cy), filled and outlined as st says. */
void nsl_canvas_circle(nsl_canvas *cv, double cx, double cy, double r, const nsl_style *st);
/* UTF-8 text at (x, y) in st->fill, st->font_size, anchored as st->anchor
 * and st->baseline say, rotated by st->rotation (other angles than 0, 90
 * and -90 draw upright).  Invalid UTF-8 is drawn as U+FFFD; characters the
 * font lacks as its empty box; control characters are skipped.  The
 * raster back end draws sizes up to 2048 px and anchors within 10^9 px of
 * the origin. */
void nsl_canvas_text(nsl_canvas *cv, double x, double y, const char *utf8, const nsl_style *st);

/* Opens an SVG group (<g>) carrying st's id, class_name and title, so that
 * the shapes drawn until the matching nsl_canvas_group_end share them (a
 * flame-graph frame: its rectangle and its label, one tooltip).  Groups
 * nest; the ones left open are closed when the document is produced.  The
 * raster back end ignores groups. */
void nsl_canvas_group_begin(nsl_canvas *cv, const nsl_style *st);
void nsl_canvas_group_end(nsl_canvas *cv);
/* Appends xml verbatim to an SVG document at the current position (a
 * <script>, <style> or <defs> element for interactive figures).  The caller
 * is responsible for it being well-formed.  The raster back end ignores
 * it. */
void nsl_canvas_svg_raw(nsl_canvas *cv, const char *xml);

/* The raster's pixels: height rows of width RGBA8 pixels (straight alpha),
 * top row first, no padding.  NULL for an SVG canvas.  Valid until
 * nsl_canvas_free (drawing changes them in place). */
const uint8_t *nsl_canvas_pixels(const nsl_canvas *cv);

/* The finished figure in memory: PNG bytes (8-bit RGBA, zlib level 6), or
 * the SVG document as UTF-8 text (NUL-terminated; *len excludes the NUL).
 * *data is malloc'ed and owned by the caller (free()).  The canvas stays usable.  Errors:
 * NSL_ERR_NOMEM, or the canvas's own error (nsl_canvas_status). */
nsl_status nsl_canvas_to_memory(nsl_canvas *cv, unsigned char **data, size_t *len, nsl_error *err);
/* Writes the figure to path atomically (nsl_write_file_atomic): the file
 * is either absent / unchanged or complete. */
nsl_status nsl_canvas_write(nsl_canvas *cv, const char *path, nsl_error *err);

/* ---- text measurement ------------------------------------------------------ */

/* Advance width in px of utf8 at em size `size` (kerning included), as the
 * raster back end draws it and as SVG viewers with DejaVu Sans draw it.
 * 0 for NULL or empty text. */
double nsl_text_width(const char *utf8, double size, int bold);
/* The font's ascent (above the baseline) and descent (below it, as a
 * positive number) in px at em size `size`; either pointer may be NULL. */
void nsl_text_metrics(double size, double *ascent, double *descent);

/* ---- axis ticks ------------------------------------------------------------ */

typedef enum nsl_axis_unit {
  NSL_UNIT_NUMBER = 0,    /* plain numbers: 1500, 25k, 3.5M */
  NSL_UNIT_NS = 1,        /* durations in ns: 500 ns, 2.5 µs, 40 ms, 3 s */
  NSL_UNIT_BYTES = 2,     /* bytes: 512 B, 1.5 KiB, 2 MiB, 4 GiB (binary prefixes) */
  NSL_UNIT_PERCENT = 3    /* fractions shown as percentages: 0.25 -> 25% */
} nsl_axis_unit;

#define NSL_TICKS_MAX 64
#define NSL_TICK_LABEL_MAX 32

/* Tick marks for one axis. */
typedef struct nsl_ticks {
  int n;                                          /* number of ticks */
  double value[NSL_TICKS_MAX];                    /* positions, in data units, ascending */
  char label[NSL_TICKS_MAX][NSL_TICK_LABEL_MAX];  /* formatted labels (UTF-8) */
  double step;        /* linear: distance between ticks; log: factor between ticks,
                         0 for 1-2-5 ticks, the distance when it fell back to linear */
  double lo, hi;      /* nice bounds: the range widened to the enclosing ticks */
} nsl_ticks;

/* Ticks for the range [lo, hi] (swapped if reversed) at 1, 2 or 5 times a
 * power of ten (in the unit's own scale: percent points, or bytes in B /
 * KiB / MiB / GiB), aiming at about `target` ticks (clamped to 2..20).
 * Only ticks inside [lo, hi] are listed; out->lo / out->hi are the range
 * widened to whole steps.  A zero span is widened around its value first.
 * Labels share one unit, chosen from the largest tick (durations: ns / µs /
 * ms / s; numbers: k, M, G, T from 10^4 on; bytes: the unit of the span),
 * and the decimals the step needs, without trailing zeros: "0", "0.5 ms",
 * "1 ms".  Steps never go below 1 ns or 1 byte.
 * Returns NSL_ERR_ARG (and n = 0) for a NaN or infinite bound. */
nsl_status nsl_ticks_linear(double lo, double hi, int target, nsl_axis_unit unit, nsl_ticks *out,
                            nsl_error *err);
/* Ticks for a logarithmic axis over [lo, hi] (both > 0): powers of ten
 * (of 1024 for bytes: 1 KiB, 1 MiB, ...; of two when that gives too few),
 * every k-th power when there are more than `target`, and 1-2-5 steps
 * within a decade when the range spans less than two decades.  out->lo /
 * out->hi are the enclosing powers.  Each label is formatted on its own
 * (1 µs, 10 µs, 100 µs, 1 ms).  NSL_ERR_ARG for bounds that are not
 * positive and finite. */
nsl_status nsl_ticks_log(double lo, double hi, int target, nsl_axis_unit unit, nsl_ticks *out,
                         nsl_error *err);
/* Formats one value with about `digits` significant digits (1..17; 3 is
 * typical) in the unit that suits its own magnitude: 1.25 ms, 3.5 GiB,
 * 12.5%, 1.2M.  Writes at most n bytes (NUL included) into buf; returns
 * buf. */
char *nsl_format_value(double v, nsl_axis_unit unit, int digits, char *buf, size_t n);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
