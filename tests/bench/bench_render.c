/*
 * bench_render.c -- how long the render layer takes for a kernel-timeline
 * figure: 1600 x 900 px, 100,000 thin rectangles in 16 stream lanes (most
 * narrower than a pixel, as in a real trace), 1,000 text labels, axes
 * with ticks; then the PNG encoding and, for comparison, the same figure
 * as SVG; and a plain histogram figure.  Prints the median CPU time of
 * several runs per phase.
 *
 * Not part of ctest (figures are measured, never asserted).  Build and run:
 *   cmake --build build --target nsl_static
 *   cc -O2 -Iinclude tests/bench/bench_render.c build/libnsl.a -lstb -lz -lm -lpthread -o build/bench_render
 *   build/bench_render [runs [timeline.png [histogram.png]]]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nsl/render.h"

#define W 1600
#define H 900
#define NRECT 100000
#define NLABEL 1000
#define LANES 16
#define SPAN 1e9   /* ns shown on the time axis */

/* CPU time of this process: the build machine is shared, so wall time
 * would measure the neighbours too. */
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A synthetic trace: per kernel a lane, a start and a duration in ns. */
static double *kx, *ky, *kw, *kh;
static nsl_rgba *kc;
static char labels[NLABEL][48];

static void make_trace(void) {
  unsigned s = 42;
  kx = malloc(NRECT * sizeof *kx), ky = malloc(NRECT * sizeof *ky);
  kw = malloc(NRECT * sizeof *kw), kh = malloc(NRECT * sizeof *kh);
  kc = malloc(NRECT * sizeof *kc);
  double lane_h = (H - 120.0) / LANES;
  /* Each stream runs its kernels one after the other: durations
   * log-uniform in 2 µs .. 400 µs, gaps exponential with mean 80 µs, so a
   * lane holds about 1 s and most kernels are narrower than a pixel. */
  double t[LANES] = {0};
  for (int i = 0; i < NRECT; i++) {
    int lane = i % LANES;
    s = s * 1103515245u + 12345u;
    double dur = 2e3 * exp((double)((s >> 8) % 1000) / 1000.0 * log(200.0));
    s = s * 1103515245u + 12345u;
    double gap = -8e4 * log(((s >> 8) + 1.0) / (1u << 24));
    t[lane] += gap;
    kx[i] = 80 + t[lane] / SPAN * (W - 100);
    kw[i] = dur / SPAN * (W - 100);
    ky[i] = 40 + lane * lane_h + 2;
    kh[i] = lane_h - 4;
    kc[i] = nsl_palette((int)((s >> 4) % 12));
    t[lane] += dur;
  }
  for (int i = 0; i < NLABEL; i++) snprintf(labels[i], sizeof labels[i], "ampere_sgemm_%d %.2f ms", i, i * 0.37);
}

static void draw_timeline(nsl_canvas *cv) {
  nsl_canvas_clear(cv, NSL_WHITE);
  nsl_style st = NSL_STYLE_INIT;
  nsl_canvas_rects(cv, NRECT, kx, ky, kw, kh, kc, &st);
  nsl_style ax = NSL_STYLE_INIT;
  ax.stroke = NSL_BLACK;
  nsl_canvas_line(cv, 80, H - 79.5, W - 20, H - 79.5, &ax);
  nsl_ticks t;
  nsl_ticks_linear(0, SPAN, 10, NSL_UNIT_NS, &t, NULL);
  nsl_style lab = NSL_STYLE_INIT;
  lab.font_size = 11;
  lab.anchor = NSL_ANCHOR_MIDDLE;
  lab.baseline = NSL_BASELINE_TOP;
  for (int i = 0; i < t.n; i++) {
    double x = floor(80 + t.value[i] / SPAN * (W - 100)) + 0.5;
    nsl_canvas_line(cv, x, H - 80, x, H - 75, &ax);
    nsl_canvas_text(cv, x, H - 72, t.label[i], &lab);
  }
  nsl_style kl = NSL_STYLE_INIT;
  kl.font_size = 10;
  for (int i = 0; i < NLABEL; i++)
    nsl_canvas_text(cv, 80 + (i % 10) * 150, 45 + (i / 10) * 7.5, labels[i], &kl);
}

/* A histogram figure: 100 bars, axes, ticks and titles, 800 x 500. */
static void draw_histogram(nsl_canvas *cv) {
  nsl_canvas_clear(cv, NSL_WHITE);
  nsl_ticks tx, ty;
  nsl_ticks_linear(0, 2.5e6, 8, NSL_UNIT_NS, &tx, NULL);
  nsl_ticks_linear(0, 48000, 6, NSL_UNIT_NUMBER, &ty, NULL);
  nsl_style bar = NSL_STYLE_INIT, ax = NSL_STYLE_INIT, lab = NSL_STYLE_INIT;
  bar.fill = nsl_palette(4);
  ax.stroke = NSL_BLACK;
  lab.font_size = 11;
  for (int i = 0; i < 100; i++) {
    double h = 400 * exp(-(i - 30) * (i - 30) / 300.0);
    nsl_canvas_rect(cv, 70 + i * 7, 450 - h, 6, h, &bar);
  }
  nsl_canvas_line(cv, 69.5, 40, 69.5, 450, &ax);
  nsl_canvas_line(cv, 69, 450.5, 780, 450.5, &ax);
  lab.anchor = NSL_ANCHOR_MIDDLE, lab.baseline = NSL_BASELINE_TOP;
  for (int i = 0; i < tx.n; i++) {
    double x = floor(70 + tx.value[i] / tx.hi * 700) + 0.5;
    nsl_canvas_line(cv, x, 450, x, 455, &ax);
    nsl_canvas_text(cv, x, 457, tx.label[i], &lab);
  }
  lab.anchor = NSL_ANCHOR_END, lab.baseline = NSL_BASELINE_MIDDLE;
  for (int i = 0; i < ty.n; i++) {
    double y = floor(450 - ty.value[i] / ty.hi * 400) + 0.5;
    nsl_canvas_line(cv, 64, y, 69, y, &ax);
    nsl_canvas_text(cv, 62, y, ty.label[i], &lab);
  }
  lab.anchor = NSL_ANCHOR_MIDDLE, lab.baseline = NSL_BASELINE_TOP, lab.rotation = 90;
  nsl_canvas_text(cv, 8, 245, "kernels", &lab);
  lab.rotation = 0, lab.bold = 1, lab.font_size = 14;
  nsl_canvas_text(cv, 425, 12, "Kernel duration", &lab);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 7;
  if (runs < 1) runs = 1;
  make_trace();
  double *t_draw = calloc(runs, sizeof(double)), *t_png = calloc(runs, sizeof(double));
  double *t_svg = calloc(runs, sizeof(double)), *t_doc = calloc(runs, sizeof(double));
  size_t png_len = 0, svg_len = 0;
  for (int r = 0; r < runs; r++) {
    nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, W, H);
    double t0 = now();
    draw_timeline(cv);
    double t1 = now();
    unsigned char *png;
    nsl_error err;
    if (nsl_canvas_to_memory(cv, &png, &png_len, &err) != NSL_OK) {
      fprintf(stderr, "%s\n", err.msg);
      return 1;
    }
    double t2 = now();
    t_draw[r] = t1 - t0, t_png[r] = t2 - t1;
    if (r == 0 && argc > 2) nsl_canvas_write(cv, argv[2], &err);
    free(png);
    nsl_canvas_free(cv);

    cv = nsl_canvas_new(NSL_CANVAS_SVG, W, H);
    t0 = now();
    draw_timeline(cv);
    t1 = now();
    unsigned char *svg;
    nsl_canvas_to_memory(cv, &svg, &svg_len, &err);
    t2 = now();
    t_svg[r] = t1 - t0, t_doc[r] = t2 - t1;
    free(svg);
    nsl_canvas_free(cv);
  }
  double *t_hist = calloc(runs, sizeof(double));
  size_t hist_len = 0;
  for (int r = 0; r < runs; r++) {
    nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 800, 500);
    unsigned char *png;
    nsl_error err;
    double t0 = now();
    draw_histogram(cv);
    nsl_canvas_to_memory(cv, &png, &hist_len, &err);
    t_hist[r] = now() - t0;
    if (r == 0 && argc > 3) nsl_canvas_write(cv, argv[3], &err);
    free(png);
    nsl_canvas_free(cv);
  }
  qsort(t_hist, runs, sizeof(double), cmp_double);
  qsort(t_draw, runs, sizeof(double), cmp_double);
  qsort(t_png, runs, sizeof(double), cmp_double);
  qsort(t_svg, runs, sizeof(double), cmp_double);
  qsort(t_doc, runs, sizeof(double), cmp_double);
  int m = runs / 2;
  printf("timeline %dx%d, %d rects, %d labels, median of %d runs\n", W, H, NRECT, NLABEL, runs);
  printf("  PNG: draw %.1f ms, encode %.1f ms, total %.1f ms, %zu bytes\n", t_draw[m] * 1e3, t_png[m] * 1e3,
         (t_draw[m] + t_png[m]) * 1e3, png_len);
  printf("  SVG: draw %.1f ms, document %.1f ms, total %.1f ms, %zu bytes\n", t_svg[m] * 1e3, t_doc[m] * 1e3,
         (t_svg[m] + t_doc[m]) * 1e3, svg_len);
  printf("histogram 800x500, 100 bars: draw + PNG %.1f ms, %zu bytes\n", t_hist[m] * 1e3, hist_len);
  return 0;
}
