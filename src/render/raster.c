/*
 * raster.c -- the PNG back end: an RGBA8 buffer with anti-aliased drawing.
 *
 * Axis-aligned rectangles are filled analytically (each pixel gets the
 * exact fraction of its area the rectangle covers).  Polygons go through a
 * coverage accumulator: every edge adds, per pixel row, the signed area it
 * puts to its right into a float row; a running sum along the row then
 * gives each pixel's exact covered fraction (non-zero winding, saturated
 * at 1).  A stroke is accumulated the same way as a quadrilateral per
 * segment plus, at each join, the pie slice that fills the outer gap
 * (round joins), all with one orientation, and composited once: pieces
 * overlap only inside the stroke, so neither their anti-aliased edges nor
 * a translucent colour add up twice.  Circles
 * use the distance to the centre; text blits cached stb_truetype glyph
 * bitmaps.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render_internal.h"

#define PI 3.14159265358979323846

int nsl__raster_init(nsl_canvas *cv) {
  cv->px = calloc((size_t)cv->width * (size_t)cv->height, 4);
  cv->glyphs = nsl__glyph_cache_new();
  if (cv->px == NULL || cv->glyphs == NULL) return 0;
  nsl__raster_update_clip(cv);
  return 1;
}

void nsl__raster_free(nsl_canvas *cv) {
  free(cv->px);
  free(cv->acc);
  free(cv->spans);
  free(cv->pts);
  nsl__glyph_cache_free(cv->glyphs);
}

void nsl__raster_update_clip(nsl_canvas *cv) {
  cv->cx0 = 0, cv->cy0 = 0, cv->cx1 = cv->width, cv->cy1 = cv->height;
  if (!cv->has_clip) return;
  double x0 = floor(cv->clip_x + 0.5), y0 = floor(cv->clip_y + 0.5);
  double x1 = floor(cv->clip_x + cv->clip_w + 0.5), y1 = floor(cv->clip_y + cv->clip_h + 0.5);
  if (x0 > cv->cx0) cv->cx0 = x0 > cv->width ? cv->width : (int)x0;
  if (y0 > cv->cy0) cv->cy0 = y0 > cv->height ? cv->height : (int)y0;
  if (x1 < cv->cx1) cv->cx1 = x1 < 0 ? 0 : (int)x1;
  if (y1 < cv->cy1) cv->cy1 = y1 < 0 ? 0 : (int)y1;
  if (cv->cx1 < cv->cx0) cv->cx1 = cv->cx0;
  if (cv->cy1 < cv->cy0) cv->cy1 = cv->cy0;
}

/* ---- compositing -------------------------------------------------------- */

/* A colour ready to blend: components in 0..255 and alpha in 0..255 (as a
 * double, already multiplied by the style's opacity). */
typedef struct paint {
  uint32_t r, g, b;
  double a;
} paint;

static int make_paint(nsl_rgba c, double opacity, paint *p) {
  double o = opacity > 1 ? 1 : opacity;
  p->r = NSL_RGBA_R(c), p->g = NSL_RGBA_G(c), p->b = NSL_RGBA_B(c);
  p->a = NSL_RGBA_A(c) * o;
  return p->a > 0.0;
}

/* t / 255 rounded, exact for t in [0, 255 * 255]. */
static inline uint32_t div255(uint32_t t) {
  t += 128;
  return (t + (t >> 8)) >> 8;
}

/* Source-over of colour c at alpha a (0..255) onto the straight-alpha
 * pixel p. */
static inline void blend(uint8_t *p, const paint *c, int a) {
  if (a <= 0) return;
  if (a >= 255) {
    p[0] = (uint8_t)c->r, p[1] = (uint8_t)c->g, p[2] = (uint8_t)c->b, p[3] = 255;
    return;
  }
  uint32_t ua = (uint32_t)a, da = p[3], ia = 255 - ua;
  if (da == 255) {   /* the usual case: an opaque background */
    p[0] = (uint8_t)div255(c->r * ua + p[0] * ia);
    p[1] = (uint8_t)div255(c->g * ua + p[1] * ia);
    p[2] = (uint8_t)div255(c->b * ua + p[2] * ia);
  } else if (da == 0) {
    p[0] = (uint8_t)c->r, p[1] = (uint8_t)c->g, p[2] = (uint8_t)c->b, p[3] = (uint8_t)ua;
  } else {
    uint32_t oa = ua * 255 + da * ia;   /* result alpha, times 255 */
    p[0] = (uint8_t)((c->r * ua * 255 + p[0] * da * ia + oa / 2) / oa);
    p[1] = (uint8_t)((c->g * ua * 255 + p[1] * da * ia + oa / 2) / oa);
    p[2] = (uint8_t)((c->b * ua * 255 + p[2] * da * ia + oa / 2) / oa);
    p[3] = (uint8_t)div255(oa);
  }
}

static inline int alpha_of(const paint *c, double cov) {
  return (int)(cov * c->a + 0.5);
}

static inline void blend_cov(uint8_t *p, const paint *c, double cov) {
  blend(p, c, alpha_of(c, cov));
}

void nsl__raster_clear(nsl_canvas *cv, nsl_rgba bg) {
  uint8_t v[4] = {(uint8_t)NSL_RGBA_R(bg), (uint8_t)NSL_RGBA_G(bg), (uint8_t)NSL_RGBA_B(bg),
                  (uint8_t)NSL_RGBA_A(bg)};
  size_t n = (size_t)cv->width * (size_t)cv->height;
  uint8_t *p = cv->px;
  for (size_t i = 0; i < n; i++, p += 4) memcpy(p, v, 4);
}

/* ---- axis-aligned rectangles -------------------------------------------- */

/* Fills [x0, x1) x [y0, y1) (x0 <= x1, y0 <= y1) with exact area
 * coverage: the first and last column and row are partly covered, the
 * rest fully.  The hot path of timelines (many thin rectangles), so the
 * alphas of the three kinds of column are computed once per row kind. */
static void fill_box(nsl_canvas *cv, double x0, double y0, double x1, double y1, const paint *c) {
  if (x0 < cv->cx0) x0 = cv->cx0;
  if (y0 < cv->cy0) y0 = cv->cy0;
  if (x1 > cv->cx1) x1 = cv->cx1;
  if (y1 > cv->cy1) y1 = cv->cy1;
  if (!(x0 < x1 && y0 < y1)) return;
  int i0 = (int)floor(x0), i1 = (int)ceil(x1), j0 = (int)floor(y0), j1 = (int)ceil(y1);
  int single = i1 - i0 == 1;
  double cl = single ? x1 - x0 : (i0 + 1) - x0;   /* first column's coverage */
  double cr = x1 - (i1 - 1);                        /* last column's (when not the first) */
  int full_l = alpha_of(c, cl), full_m = alpha_of(c, 1.0), full_r = alpha_of(c, cr);
  size_t stride = (size_t)cv->width * 4;
  uint8_t *row = cv->px + (size_t)j0 * stride + (size_t)i0 * 4;
  for (int j = j0; j < j1; j++, row += stride) {
    int al = full_l, am = full_m, ar = full_r;
    if (j == j0 || j == j1 - 1) {   /* partly covered row */
      double top = y0 > j ? y0 : j, bottom = y1 < j + 1 ? y1 : j + 1, cy = bottom - top;
      al = alpha_of(c, cl * cy), am = alpha_of(c, cy), ar = alpha_of(c, cr * cy);
    }
    blend(row, c, al);
    if (single) continue;
    uint8_t *p = row + 4;
    if (am > 0)
      for (int i = i0 + 1; i < i1 - 1; i++, p += 4) blend(p, c, am);
    blend(row + (size_t)(i1 - 1 - i0) * 4, c, ar);
  }
}

/* ---- coverage accumulator ----------------------------------------------- */

typedef struct acc {
  float *a;           /* accumulation rows: signed area differences */
  int *lo, *hi;       /* per row: first and last touched column */
  int x0, y0, w, h;   /* pixel box of the shape within the drawable area */
  size_t stride;      /* w + 2 */
} acc;

/* Grows a zero-filled float scratch to n elements. */
static float *scratch_floats(nsl_canvas *cv, float **buf, size_t *cap, size_t n) {
  if (n > *cap) {
    float *p = realloc(*buf, n * sizeof(float));
    if (p == NULL) {
      nsl__canvas_fail(cv, NSL_ERR_NOMEM, "out of memory filling a shape");
      return NULL;
    }
    memset(p + *cap, 0, (n - *cap) * sizeof(float));
    *buf = p;
    *cap = n;
  }
  return *buf;
}

/* Prepares an accumulator over the pixels a shape with bounds [minx, maxx]
 * x [miny, maxy] can touch; 0 when it touches none (or memory runs out). */
static int acc_begin(nsl_canvas *cv, acc *A, double minx, double miny, double maxx, double maxy) {
  double fx0 = floor(minx) - 1, fy0 = floor(miny) - 1, fx1 = ceil(maxx) + 1, fy1 = ceil(maxy) + 1;
  if (fx0 < cv->cx0) fx0 = cv->cx0;
  if (fy0 < cv->cy0) fy0 = cv->cy0;
  if (fx1 > cv->cx1) fx1 = cv->cx1;
  if (fy1 > cv->cy1) fy1 = cv->cy1;
  if (!(fx0 < fx1 && fy0 < fy1)) return 0;
  A->x0 = (int)fx0, A->y0 = (int)fy0, A->w = (int)(fx1 - fx0), A->h = (int)(fy1 - fy0);
  A->stride = (size_t)A->w + 2;
  size_t need = A->stride * (size_t)A->h;
  A->a = scratch_floats(cv, &cv->acc, &cv->acc_cap, need);
  if (A->a == NULL) return 0;
  if ((size_t)A->h * 2 > cv->spans_cap) {
    int *p = realloc(cv->spans, (size_t)A->h * 2 * sizeof(int));
    if (p == NULL) {
      nsl__canvas_fail(cv, NSL_ERR_NOMEM, "out of memory filling a shape");
      return 0;
    }
    cv->spans = p;
    cv->spans_cap = (size_t)A->h * 2;
  }
  A->lo = cv->spans, A->hi = A->lo + A->h;
  for (int j = 0; j < A->h; j++) A->lo[j] = INT_MAX, A->hi[j] = -1;
  return 1;
}

/* Integral from i to x of min(1, max(0, i + 1 - t)) dt, with t = x - i:
 * the area a pixel column [i, i+1) keeps to the right of a vertical edge. */
static inline double right_area(double t) {
  if (t <= 0) return t;
  if (t >= 1) return 0.5;
  return t - t * t / 2;
}

/* Adds the part of an edge that lies within pixel row j: it runs from x =
 * xa to xb (within [0, w]) while descending dy (signed by direction) px. */
static void acc_row_span(acc *A, int j, double xa, double xb, double d) {
  float *row = A->a + (size_t)j * A->stride;
  double lo = xa < xb ? xa : xb, hi = xa < xb ? xb : xa;
  int first, last;
  if (hi - lo < 1e-9) {
    double x = (lo + hi) / 2;
    int i = (int)floor(x);
    double f = x - i;
    row[i] += (float)(d * (1 - f));
    row[i + 1] += (float)(d * f);
    first = i, last = i + 1;
  } else {
    int i0 = (int)floor(lo), i1 = (int)ceil(hi);
    double inv = 1.0 / (hi - lo), prev = 0;
    for (int i = i0; i < i1; i++) {
      /* mean over the span of the fraction of column i right of the edge */
      double ai = (right_area(hi - i) - right_area(lo - i)) * inv;
      row[i] += (float)(d * (ai - prev));
      prev = ai;
    }
    row[i1] += (float)(d * (1 - prev));
    first = i0, last = i1;
  }
  if (first < A->lo[j]) A->lo[j] = first;
  if (last > A->hi[j]) A->hi[j] = last;
}

/* Adds the edge (x0, y0) -> (x1, y1), in canvas coordinates. */
static void acc_edge(acc *A, double x0, double y0, double x1, double y1) {
  double dir = 1;
  if (y0 > y1) {
    double t = x0;
    x0 = x1, x1 = t;
    t = y0, y0 = y1, y1 = t;
    dir = -1;
  }
  if (y1 - y0 < 1e-9) return;
  x0 -= A->x0, x1 -= A->x0, y0 -= A->y0, y1 -= A->y0;
  if (y1 <= 0 || y0 >= A->h) return;
  double dxdy = (x1 - x0) / (y1 - y0);
  if (!isfinite(dxdy)) return;   /* flat beyond 1e-300: adds no coverage */
  int j0 = (int)floor(y0 < 0 ? 0 : y0);
  int j1 = (int)ceil(y1 > A->h ? A->h : y1);
  double w = A->w;
  for (int j = j0; j < j1; j++) {
    double ya = y0 > j ? y0 : j, yb = y1 < j + 1 ? y1 : j + 1;
    if (yb <= ya) continue;
    double xa = x0 + (ya - y0) * dxdy, xb = x0 + (yb - y0) * dxdy;
    /* Clamping x to the box changes no coverage inside it (and maps a
     * NaN from overflowing arithmetic to 0). */
    xa = xa > 0 ? (xa < w ? xa : w) : 0;
    xb = xb > 0 ? (xb < w ? xb : w) : 0;
    acc_row_span(A, j, xa, xb, (yb - ya) * dir);
  }
}

/* Adds the closed polygon of n points (xy interleaved). */
static void acc_poly(acc *A, const double *xy, size_t n) {
  for (size_t k = 0; k < n; k++) {
    size_t m = k + 1 == n ? 0 : k + 1;
    acc_edge(A, xy[2 * k], xy[2 * k + 1], xy[2 * m], xy[2 * m + 1]);
  }
}

/* Composites the accumulated coverage with colour c and clears it.  Only
 * the touched columns of each row are visited: a closed shape's running
 * sum is back to 0 after its last edge. */
static void acc_composite(nsl_canvas *cv, acc *A, const paint *c) {
  for (int j = 0; j < A->h; j++) {
    if (A->hi[j] < 0) continue;
    float *row = A->a + (size_t)j * A->stride;
    int lo = A->lo[j], hi = A->hi[j], end = hi < A->w ? hi : A->w - 1;
    uint8_t *p = cv->px + (((size_t)(A->y0 + j)) * (size_t)cv->width + (size_t)(A->x0 + lo)) * 4;
    float s = 0;
    for (int i = lo; i <= end; i++, p += 4) {
      s += row[i];
      float cov = fabsf(s);
      if (cov > 1.0f / 512) blend_cov(p, c, cov > 1 ? 1 : cov);
    }
    memset(row + lo, 0, (size_t)(hi - lo + 1) * sizeof(float));
    A->lo[j] = INT_MAX, A->hi[j] = -1;
  }
}

/* ---- polygons ----------------------------------------------------------- */

static void bounds(const double *x, const double *y, size_t n, double *b) {
  b[0] = b[2] = x[0];
  b[1] = b[3] = y[0];
  for (size_t k = 1; k < n; k++) {
    if (x[k] < b[0]) b[0] = x[k];
    if (x[k] > b[2]) b[2] = x[k];
    if (y[k] < b[1]) b[1] = y[k];
    if (y[k] > b[3]) b[3] = y[k];
  }
}

static void fill_polygon(nsl_canvas *cv, const double *x, const double *y, size_t n, const paint *c) {
  double b[4];
  acc A;
  if (n < 3) return;
  bounds(x, y, n, b);
  if (!acc_begin(cv, &A, b[0], b[1], b[2], b[3])) return;
  for (size_t k = 0; k < n; k++) {
    size_t m = k + 1 == n ? 0 : k + 1;
    acc_edge(&A, x[k], y[k], x[m], y[m]);
  }
  acc_composite(cv, &A, c);
}

/* ---- strokes ------------------------------------------------------------ */

/* Clips the segment p + t (q - p), t in [0, 1], to box b (minx, miny, maxx,
 * maxy) (Liang-Barsky); 0 when nothing is left. */
static int clip_segment(const double *b, double px, double py, double qx, double qy, double *t0,
                        double *t1) {
  double dx = qx - px, dy = qy - py;
  double p[4] = {-dx, dx, -dy, dy};
  double q[4] = {px - b[0], b[2] - px, py - b[1], b[3] - py};
  double lo = 0, hi = 1;
  for (int k = 0; k < 4; k++) {
    if (p[k] == 0) {
      if (q[k] < 0) return 0;
      continue;
    }
    double r = q[k] / p[k];
    if (p[k] < 0) {
      if (r > lo) lo = r;
    } else if (r < hi) {
      hi = r;
    }
  }
  if (lo > hi) return 0;
  *t0 = lo, *t1 = hi;
  return 1;
}

/* Adds the closed polygon of n points (xy interleaved) with negative
 * orientation (sum of x[k] y[k+1] - x[k+1] y[k] below 0), reversing it if
 * needed: the pieces of a stroke then add up instead of cancelling. */
static void acc_poly_oriented(acc *A, const double *xy, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) {
    size_t m = k + 1 == n ? 0 : k + 1;
    s += xy[2 * k] * xy[2 * m + 1] - xy[2 * m] * xy[2 * k + 1];
  }
  if (s <= 0) {
    acc_poly(A, xy, n);
    return;
  }
  for (size_t k = n; k-- > 0;) {
    size_t m = k == 0 ? n - 1 : k - 1;
    acc_edge(A, xy[2 * k], xy[2 * k + 1], xy[2 * m], xy[2 * m + 1]);
  }
}

/* Adds a segment as a quadrilateral of half-width hw (butt ends). */
static void acc_quad(acc *A, double px, double py, double qx, double qy, double hw) {
  double dx = qx - px, dy = qy - py, len = hypot(dx, dy);
  if (len == 0 || !isfinite(len)) return;
  double nx = -dy / len * hw, ny = dx / len * hw;
  double q[8] = {px + nx, py + ny, qx + nx, qy + ny, qx - nx, qy - ny, px - nx, py - ny};
  acc_poly_oriented(A, q, 4);
}

/* Adds the round join at (cx, cy) between a segment arriving in unit
 * direction a and one leaving in unit direction b: the pie slice on the
 * outer side of the turn, which exactly fills the gap between the two
 * quadrilaterals (the inner side needs nothing: the quadrilaterals
 * overlap there, inside the stroke). */
static void acc_join(acc *A, double cx, double cy, double ax, double ay, double bx, double by, double hw) {
  double cross = ax * by - ay * bx, dot = ax * bx + ay * by;
  if (fabs(cross) < 1e-12 && dot > 0) return;   /* straight on */
  double ox = ax - bx, oy = ay - by;            /* points out of the corner */
  double n0x = -ay, n0y = ax, n1x = -by, n1y = bx;
  if (n0x * ox + n0y * oy < 0) n0x = -n0x, n0y = -n0y;
  if (n1x * ox + n1y * oy < 0) n1x = -n1x, n1y = -n1y;
  double a0 = atan2(n0y, n0x), a1 = atan2(n1y, n1x), am = atan2(oy, ox);
  double d = remainder(a1 - a0, 2 * PI);
  if (cos(a0 + d / 2 - am) < 0) d -= copysign(2 * PI, d);   /* round the outer side (U-turns too) */
  int steps = (int)ceil(fabs(d) * hw / 0.25);
  if (steps < 2) steps = 2;
  if (steps > 64) steps = 64;
  double xy[2 * 66];
  xy[0] = cx, xy[1] = cy;
  for (int k = 0; k <= steps; k++) {
    double t = a0 + d * k / steps;
    xy[2 * k + 2] = cx + hw * cos(t), xy[2 * k + 3] = cy + hw * sin(t);
  }
  acc_poly_oriented(A, xy, (size_t)steps + 2);
}

static int inside_box(const double *b, double x, double y) {
  return x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3];
}

/* Adds the stroke of the path of n points (x[k * step], y[k * step]);
 * closed joins the last point to the first): a quadrilateral per segment,
 * a round join at each vertex between two segments.  Zero-length segments
 * are skipped; parts outside box b are dropped. */
static void acc_path(acc *A, const double *b, const double *px, const double *py, size_t step, size_t n,
                     int closed, double hw) {
  size_t nseg = closed ? n : n - 1;
  double pux = 0, puy = 0;   /* direction of the previous drawn segment */
  int have_prev = 0;
  double fux = 0, fuy = 0;   /* direction of the first one (closing join) */
  for (size_t k = 0; k < nseg; k++) {
    size_t m = k + 1 == n ? 0 : k + 1;
    double xk = px[k * step], yk = py[k * step], xm = px[m * step], ym = py[m * step];
    double dx = xm - xk, dy = ym - yk, len = hypot(dx, dy);
    if (len == 0 || !isfinite(len)) continue;
    double ux = dx / len, uy = dy / len, t0, t1;
    if (have_prev && inside_box(b, xk, yk)) acc_join(A, xk, yk, pux, puy, ux, uy, hw);
    if (!have_prev) fux = ux, fuy = uy;
    have_prev = 1;
    pux = ux, puy = uy;
    if (clip_segment(b, xk, yk, xm, ym, &t0, &t1))
      acc_quad(A, xk + t0 * dx, yk + t0 * dy, xk + t1 * dx, yk + t1 * dy, hw);
  }
  if (closed && have_prev && inside_box(b, px[0], py[0])) acc_join(A, px[0], py[0], pux, puy, fux, fuy, hw);
}

/* Makes room for n points in the canvas's point scratch. */
static double *pts_reserve(nsl_canvas *cv, size_t n) {
  if (n > ((size_t)-1) / (2 * sizeof(double))) return NULL;
  if (2 * n > cv->pts_cap) {
    size_t cap = 2 * n < 256 ? 256 : 2 * n;
    double *p = realloc(cv->pts, cap * sizeof(double));
    if (p == NULL) {
      nsl__canvas_fail(cv, NSL_ERR_NOMEM, "out of memory stroking a path");
      return NULL;
    }
    cv->pts = p;
    cv->pts_cap = cap;
  }
  return cv->pts;
}

/* State of a dash walk: the piece being drawn and the pattern phase. */
typedef struct dasher {
  nsl_canvas *cv;
  acc *A;
  const double *box;
  double hw, dash, period;
  double phase;   /* position within the period; "on" while < dash */
  size_t n;       /* points in the current piece (in cv->pts) */
  int failed;
} dasher;

static void dash_point(dasher *D, double x, double y) {
  double *p = pts_reserve(D->cv, D->n + 1);
  if (p == NULL) {
    D->failed = 1;
    return;
  }
  p[2 * D->n] = x, p[2 * D->n + 1] = y;
  D->n++;
}

static void dash_flush(dasher *D) {
  if (D->n >= 2) acc_path(D->A, D->box, D->cv->pts, D->cv->pts + 1, 2, D->n, 0, D->hw);
  D->n = 0;
}

/* Walks the segment p -> q through the dash pattern.  Only its part within
 * the box is walked (from that part's start, so positions stay precise);
 * the rest just advances the phase. */
static void dash_segment(dasher *D, double px, double py, double qx, double qy) {
  double dx = qx - px, dy = qy - py, len = hypot(dx, dy);
  double t0, t1;
  if (len == 0) return;
  if (!isfinite(len) || !clip_segment(D->box, px, py, qx, qy, &t0, &t1)) {
    dash_flush(D);
    if (isfinite(len)) D->phase = fmod(D->phase + len, D->period);
    return;
  }
  double ux = dx / len, uy = dy / len, L = (t1 - t0) * len;
  double bx = px + t0 * dx, by = py + t0 * dy;   /* start of the visible part */
  if (t0 > 0) {
    dash_flush(D);
    D->phase = fmod(D->phase + t0 * len, D->period);
  }
  if (L / D->period > 4e6) {
    /* dashes far finer than the part (only with an enormous pen, whose
     * every dash covers the canvas anyway): draw it solid */
    dash_flush(D);
    dash_point(D, bx, by);
    dash_point(D, bx + ux * L, by + uy * L);
    dash_flush(D);
    D->phase = fmod(D->phase + L, D->period);
  } else {
    double s = 0;
    while (s < L && !D->failed) {
      if (D->phase < D->dash) {
        double end = s + (D->dash - D->phase);
        double e = end < L ? end : L;
        if (D->n == 0) dash_point(D, bx + ux * s, by + uy * s);
        dash_point(D, bx + ux * e, by + uy * e);
        if (e >= end) {
          dash_flush(D);
          D->phase = D->dash;
        } else {
          D->phase += e - s;
        }
        s = e;
      } else {
        double end = s + (D->period - D->phase);
        if (end <= L) {
          D->phase = 0;
          s = end;
        } else {
          D->phase += L - s;
          s = L;
        }
      }
    }
  }
  if (t1 < 1) {
    dash_flush(D);
    D->phase = fmod(D->phase + (1 - t1) * len, D->period);
  }
}

void nsl__raster_stroke(nsl_canvas *cv, const double *x, const double *y, size_t n, int closed,
                        const nsl_style *st) {
  paint c;
  double b[4];
  acc A;
  double hw = st->line_width / 2;
  if (n < 2 || !(hw > 0) || !make_paint(st->stroke, st->opacity, &c)) return;
  bounds(x, y, n, b);
  if (!acc_begin(cv, &A, b[0] - hw, b[1] - hw, b[2] + hw, b[3] + hw)) return;
  /* Geometry outside the accumulator (plus the pen) cannot touch it. */
  double box[4] = {A.x0 - hw - 2, A.y0 - hw - 2, A.x0 + A.w + hw + 2, A.y0 + A.h + hw + 2};
  if (st->dash > 0 && st->gap > 0) {
    size_t nseg = closed ? n : n - 1;
    dasher D = {cv, &A, box, hw, st->dash < 0.25 ? 0.25 : st->dash, 0, 0, 0, 0};
    D.period = D.dash + (st->gap < 0.25 ? 0.25 : st->gap);
    for (size_t k = 0; k < nseg && !D.failed; k++) {
      size_t m = k + 1 == n ? 0 : k + 1;
      dash_segment(&D, x[k], y[k], x[m], y[m]);
    }
    if (!D.failed) dash_flush(&D);
  } else {
    acc_path(&A, box, x, y, 1, n, closed, hw);
  }
  acc_composite(cv, &A, &c);
}

/* ---- public shapes ------------------------------------------------------ */

void nsl__raster_rect(nsl_canvas *cv, double x, double y, double w, double h, nsl_rgba fill,
                      const nsl_style *st) {
  paint c;
  if (w < 0) x += w, w = -w;
  if (h < 0) y += h, h = -h;
  if (make_paint(fill, st->opacity, &c)) fill_box(cv, x, y, x + w, y + h, &c);
  double lw = st->line_width;
  if (!(lw > 0) || !make_paint(st->stroke, st->opacity, &c)) return;
  if (st->dash > 0 && st->gap > 0) {
    double px[4] = {x, x + w, x + w, x}, py[4] = {y, y, y + h, y + h};
    nsl__raster_stroke(cv, px, py, 4, 1, st);
    return;
  }
  double hw = lw / 2;
  if (w <= lw || h <= lw) {   /* the outline covers the whole rectangle */
    fill_box(cv, x - hw, y - hw, x + w + hw, y + h + hw, &c);
    return;
  }
  /* four bands that do not overlap: top, bottom, left, right */
  fill_box(cv, x - hw, y - hw, x + w + hw, y + hw, &c);
  fill_box(cv, x - hw, y + h - hw, x + w + hw, y + h + hw, &c);
  fill_box(cv, x - hw, y + hw, x + hw, y + h - hw, &c);
  fill_box(cv, x + w - hw, y + hw, x + w + hw, y + h - hw, &c);
}

void nsl__raster_polygon(nsl_canvas *cv, const double *x, const double *y, size_t n, const nsl_style *st) {
  paint c;
  if (make_paint(st->fill, st->opacity, &c)) fill_polygon(cv, x, y, n, &c);
  nsl__raster_stroke(cv, x, y, n, 1, st);
}

void nsl__raster_circle(nsl_canvas *cv, double cx, double cy, double r, const nsl_style *st) {
  paint f = {0, 0, 0, 0}, s = {0, 0, 0, 0};
  int do_fill = make_paint(st->fill, st->opacity, &f);
  int do_stroke = st->line_width > 0 && make_paint(st->stroke, st->opacity, &s);
  double hw = do_stroke ? st->line_width / 2 : 0;
  if (r < 0) r = -r;
  if (do_stroke && st->dash > 0 && st->gap > 0) {
    /* dashed outline: a fine polygon walked by the dasher */
    double circ = 2 * PI * r;
    size_t n = circ < 32 ? 16 : circ > 8192 ? 4096 : (size_t)(circ / 2);
    double *p = malloc(2 * n * sizeof(double));
    if (p == NULL) {
      nsl__canvas_fail(cv, NSL_ERR_NOMEM, "out of memory drawing a circle");
      return;
    }
    for (size_t k = 0; k < n; k++) {
      p[k] = cx + r * cos(2 * PI * k / n);
      p[n + k] = cy + r * sin(2 * PI * k / n);
    }
    if (do_fill) {
      nsl_style only_fill = *st;
      only_fill.line_width = 0;
      nsl__raster_circle(cv, cx, cy, r, &only_fill);
    }
    nsl__raster_stroke(cv, p, p + n, n, 1, st);
    free(p);
    return;
  }
  double ext = r + hw + 1;
  double fi0 = fmax(floor(cx - ext), cv->cx0), fi1 = fmin(ceil(cx + ext), cv->cx1);
  double fj0 = fmax(floor(cy - ext), cv->cy0), fj1 = fmin(ceil(cy + ext), cv->cy1);
  if (!(fi0 < fi1 && fj0 < fj1)) return;   /* off the drawable area */
  int i0 = (int)fi0, i1 = (int)fi1, j0 = (int)fj0, j1 = (int)fj1;
  for (int j = j0; j < j1; j++) {
    uint8_t *p = cv->px + ((size_t)j * (size_t)cv->width + (size_t)i0) * 4;
    double dy = j + 0.5 - cy;
    for (int i = i0; i < i1; i++, p += 4) {
      double dx = i + 0.5 - cx, d = sqrt(dx * dx + dy * dy);
      if (do_fill) {
        double cov = r - d + 0.5;   /* signed distance to the rim, as coverage */
        if (r < 0.5) cov = PI * r * r * fmax(0, 1 - d);   /* a dot: fainter, not bigger */
        if (cov > 0) blend_cov(p, &f, cov > 1 ? 1 : cov);
      }
      if (do_stroke) {
        double cov = hw - fabs(d - r) + 0.5;
        if (hw < 0.5) cov = cov > 0 ? 2 * hw * fmin(1, cov) : 0;
        if (cov > 0) blend_cov(p, &s, cov > 1 ? 1 : cov);
      }
    }
  }
}

/* ---- text --------------------------------------------------------------- */

/* Blends glyph g whose local top-left is (lx, ly) (x along the text, y down
 * from the baseline) onto the canvas for the text anchored at integer
 * (ax, ay) and rotated by rot. */
static void blit_glyph(nsl_canvas *cv, const nsl__glyph *g, int lx, int ly, int ax, int ay, int rot,
                       const paint *c) {
  for (int v = 0; v < g->h; v++) {
    const uint8_t *src = g->bits + (size_t)v * g->w;
    for (int u = 0; u < g->w; u++) {
      if (src[u] == 0) continue;
      int sx, sy;
      if (rot == 0) {
        sx = ax + lx + u, sy = ay + ly + v;
      } else if (rot == 90) {   /* local x goes up, local y goes right */
        sx = ax + ly + v, sy = ay - (lx + u) - 1;
      } else {                  /* local x goes down, local y goes left */
        sx = ax - (ly + v) - 1, sy = ay + lx + u;
      }
      if (sx < cv->cx0 || sx >= cv->cx1 || sy < cv->cy0 || sy >= cv->cy1) continue;
      blend(cv->px + ((size_t)sy * (size_t)cv->width + (size_t)sx) * 4, c,
            (int)(src[u] * c->a / 255.0 + 0.5));
    }
  }
}

void nsl__raster_text(nsl_canvas *cv, double x, double y, const char *utf8, const nsl_style *st) {
  paint c;
  double size = st->font_size, dx, dy;
  int rot;
  if (!(size > 0) || size > 2048 || !make_paint(st->fill, st->opacity, &c)) return;
  if (fabs(x) > 1e9 || fabs(y) > 1e9) return;   /* keeps pixel arithmetic in int */
  nsl__text_place(utf8, st, &dx, &dy, &rot);
  double margin = size + 2;
  /* Split the anchor into whole pixels and the fraction along the text,
   * which becomes part of the pen position (sub-pixel glyph placement);
   * the baseline snaps to whole pixels. */
  int ax, ay;
  double pen0;
  if (rot == 0) {
    ax = (int)floor(x);
    pen0 = dx + (x - ax);
    ay = (int)floor(y + dy + 0.5);
  } else if (rot == 90) {
    ay = (int)floor(y);
    pen0 = dx - (y - ay);
    ax = (int)floor(x + dy + 0.5);
  } else {
    ay = (int)floor(y);
    pen0 = dx + (y - ay);
    ax = (int)floor(x - dy + 0.5);
  }
  /* the clip in the text's own frame, to skip glyphs that cannot show */
  double lo, hi;
  if (rot == 0) {
    lo = cv->cx0 - ax - margin, hi = cv->cx1 - ax + margin;
  } else if (rot == 90) {
    lo = ay - cv->cy1 - margin, hi = ay - cv->cy0 + margin;
  } else {
    lo = cv->cy0 - ay - margin, hi = cv->cy1 - ay + margin;
  }
  nsl__text_iter it;
  if (!nsl__text_begin(&it, utf8, size, st->bold)) return;
  int glyph;
  double pen;
  while (nsl__text_next(&it, &glyph, &pen)) {
    double p = pen0 + pen;
    if (p > hi) break;            /* the pen only moves forward */
    if (p < lo) continue;
    double fp = floor(p);
    int sub = (int)floor((p - fp) * 4 + 0.5);
    int ip = (int)fp;
    if (sub == 4) sub = 0, ip++;
    const nsl__glyph *g = nsl__glyph_get(cv->glyphs, glyph, size, sub, st->bold);
    if (g == NULL) {
      nsl__canvas_fail(cv, NSL_ERR_NOMEM, "out of memory drawing text");
      return;
    }
    if (g->bits) blit_glyph(cv, g, ip + g->x0, g->y0, ax, ay, rot, &c);
  }
}

/* ---- output ------------------------------------------------------------- */

nsl_status nsl__raster_png(nsl_canvas *cv, unsigned char **data, size_t *len, nsl_error *err) {
  return nsl__png_encode(cv->px, cv->width, cv->height, data, len, err);
}
