/*
 * test_render.c -- the render layer: raster primitives checked against
 * geometry (areas, coverage, ink boxes), PNG output decoded back with
 * stb_image, SVG output checked for well-formedness by a small XML checker,
 * ticks and label formats against hand-computed values, colours against
 * the published Okabe-Ito and viridis values.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* libstb.so holds the implementation; declarations only. */
#include <stb_image.h>

#include "nsl/nsl_io.h"
#include "nsl/render.h"

/* ---- helpers ------------------------------------------------------------ */

/* A decoded PNG (RGBA). */
typedef struct image {
  int w, h;
  unsigned char *px;
} image;

/* CRC-32 of the PNG spec (ISO 3309 polynomial, reflected), bit by bit. */
static uint32_t crc32_bitwise(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The chunk structure of a PNG file: IHDR first (w x h, 8-bit RGBA), then
 * IDAT chunks, IEND last and empty, every CRC right (stb_image does not
 * check CRCs, so this does). */
static void check_png_chunks(const unsigned char *png, size_t len, int w, int h) {
  assert_true(len >= 8 + 25 + 12);
  assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
  size_t i = 8;
  int k = 0, idat = 0, iend = 0;
  while (i < len) {
    assert_true(i + 12 <= len);
    uint32_t n = be32(png + i);
    assert_true(i + 12 + n <= len);
    const unsigned char *type = png + i + 4;
    assert_int_equal(be32(png + i + 8 + n), crc32_bitwise(type, n + 4));
    if (k == 0) {
      assert_memory_equal(type, "IHDR", 4);
      assert_int_equal(n, 13);
      assert_int_equal(be32(type + 4), w);
      assert_int_equal(be32(type + 8), h);
      assert_memory_equal(type + 12, "\x08\x06\x00\x00\x00", 5);
    } else if (memcmp(type, "IDAT", 4) == 0) {
      idat++;
    } else if (memcmp(type, "IEND", 4) == 0) {
      assert_int_equal(n, 0);
      iend = 1;
      assert_int_equal(i + 12, len);   /* last */
    }
    i += 12 + n;
    k++;
  }
  assert_true(idat >= 1 && iend);
}

/* Encodes cv as PNG, checks its chunks, decodes it with stb_image and
 * checks the round trip against the canvas's own pixels. */
static image decode(nsl_canvas *cv) {
  unsigned char *png = NULL;
  size_t len = 0;
  nsl_error err = {0};
  assert_int_equal(nsl_canvas_to_memory(cv, &png, &len, &err), NSL_OK);
  check_png_chunks(png, len, nsl_canvas_width(cv), nsl_canvas_height(cv));
  image im;
  int n = 0;
  im.px = stbi_load_from_memory(png, (int)len, &im.w, &im.h, &n, 4);
  assert_non_null(im.px);
  assert_int_equal(im.w, nsl_canvas_width(cv));
  assert_int_equal(im.h, nsl_canvas_height(cv));
  assert_memory_equal(im.px, nsl_canvas_pixels(cv), (size_t)im.w * im.h * 4);
  free(png);
  return im;
}

static const unsigned char *at(const image *im, int x, int y) {
  return im->px + ((size_t)y * im->w + x) * 4;
}

static nsl_rgba rgba_at(const image *im, int x, int y) {
  const unsigned char *p = at(im, x, y);
  return NSL_RGBA(p[0], p[1], p[2], p[3]);
}

/* Sum of alpha/255 over the image (coverage area on a transparent canvas). */
static double alpha_area(const image *im) {
  double s = 0;
  for (size_t i = 0; i < (size_t)im->w * im->h; i++) s += im->px[i * 4 + 3] / 255.0;
  return s;
}

/* Pixels whose alpha is strictly between 0 and 255. */
static int partial_pixels(const image *im) {
  int n = 0;
  for (size_t i = 0; i < (size_t)im->w * im->h; i++) n += im->px[i * 4 + 3] > 0 && im->px[i * 4 + 3] < 255;
  return n;
}

/* Bounding box of pixels with alpha above `min` ({x0, y0, x1, y1}
 * inclusive); returns the number of such pixels. */
static int ink_box(const image *im, int min, int box[4]) {
  int n = 0;
  box[0] = im->w, box[1] = im->h, box[2] = -1, box[3] = -1;
  for (int y = 0; y < im->h; y++)
    for (int x = 0; x < im->w; x++)
      if (at(im, x, y)[3] > min) {
        n++;
        if (x < box[0]) box[0] = x;
        if (y < box[1]) box[1] = y;
        if (x > box[2]) box[2] = x;
        if (y > box[3]) box[3] = y;
      }
  return n;
}

static char *svg_text(nsl_canvas *cv, size_t *len) {
  unsigned char *d = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_canvas_to_memory(cv, &d, len, &err), NSL_OK);
  assert_int_equal(strlen((char *)d), *len);
  return (char *)d;
}

/* ---- a small XML well-formedness checker -------------------------------- */

/* Valid UTF-8 without the control characters XML 1.0 forbids. */
static int xml_chars_ok(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return 0;
      i++;
      continue;
    }
    int k = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (k < 0 || i + k >= n + 1) return 0;
    uint32_t cp = c & (0x3f >> k);
    for (int j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    static const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
      return 0;
    i += (size_t)k + 1;
  }
  return 1;
}

static int is_name_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || c >= 0x80;
}
static int is_name_char(int c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* Checks an entity or character reference at *p ('&'); advances past ';'. */
static int xml_ref(const char **p) {
  const char *s = *p + 1;
  static const char *named[] = {"amp;", "lt;", "gt;", "quot;", "apos;"};
  for (int i = 0; i < 5; i++)
    if (strncmp(s, named[i], strlen(named[i])) == 0) {
      *p = s + strlen(named[i]);
      return 1;
    }
  if (*s != '#') return 0;
  s++;
  int hex = *s == 'x';
  if (hex) s++;
  const char *d = s;
  while ((*s >= '0' && *s <= '9') || (hex && ((*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))) s++;
  if (s == d || *s != ';') return 0;
  *p = s + 1;
  return 1;
}

/* 1 when doc is a well-formed XML document (elements balanced, attributes
 * quoted and unique, references valid, one root, optional prolog,
 * comments and CDATA sections). */
static int xml_well_formed(const char *doc) {
  char stack[64][64];
  int depth = 0, roots = 0;
  const char *p = doc;
  if (!xml_chars_ok((const unsigned char *)doc, strlen(doc))) return 0;
  if (strncmp(p, "<?xml", 5) == 0) {
    p = strstr(p, "?>");
    if (!p) return 0;
    p += 2;
  }
  while (*p) {
    if (*p != '<') {
      if (depth == 0 && !(*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) return 0;
      if (*p == '&') {
        if (!xml_ref(&p)) return 0;
        continue;
      }
      p++;
      continue;
    }
    if (strncmp(p, "<!--", 4) == 0) {
      p = strstr(p + 4, "-->");
      if (!p) return 0;
      p += 3;
      continue;
    }
    if (strncmp(p, "<![CDATA[", 9) == 0) {
      if (depth == 0) return 0;
      p = strstr(p + 9, "]]>");
      if (!p) return 0;
      p += 3;
      continue;
    }
    if (p[1] == '/') {   /* end tag */
      const char *n = p + 2, *e = n;
      while (is_name_char((unsigned char)*e)) e++;
      if (depth == 0 || (size_t)(e - n) != strlen(stack[depth - 1]) || strncmp(n, stack[depth - 1], e - n))
        return 0;
      while (*e == ' ') e++;
      if (*e != '>') return 0;
      depth--;
      p = e + 1;
      continue;
    }
    /* start tag */
    const char *n = p + 1, *e = n;
    if (!is_name_start((unsigned char)*e)) return 0;
    while (is_name_char((unsigned char)*e)) e++;
    if (e - n >= 64 || depth >= 64) return 0;
    if (depth == 0 && ++roots > 1) return 0;
    char name[64];
    memcpy(name, n, e - n);
    name[e - n] = '\0';
    char attrs[32][64];
    int nattrs = 0;
    p = e;
    for (;;) {
      int space = 0;
      while (*p == ' ' || *p == '\n' || *p == '\t') p++, space = 1;
      if (*p == '/' && p[1] == '>') {
        p += 2;
        break;
      }
      if (*p == '>') {
        memcpy(stack[depth++], name, sizeof name);
        p++;
        break;
      }
      if (!space || !is_name_start((unsigned char)*p)) return 0;
      const char *an = p;
      while (is_name_char((unsigned char)*p)) p++;
      if (p - an >= 64 || nattrs >= 32) return 0;
      char aname[64];
      memcpy(aname, an, p - an);
      aname[p - an] = '\0';
      for (int i = 0; i < nattrs; i++)
        if (strcmp(attrs[i], aname) == 0) return 0;   /* duplicate attribute */
      strcpy(attrs[nattrs++], aname);
      if (*p++ != '=') return 0;
      char q = *p++;
      if (q != '"' && q != '\'') return 0;
      while (*p != q) {
        if (*p == '\0' || *p == '<') return 0;
        if (*p == '&') {
          if (!xml_ref(&p)) return 0;
        } else {
          p++;
        }
      }
      p++;
    }
  }
  return depth == 0 && roots == 1;
}

static void test_xml_checker_itself(void **state) {
  (void)state;
  assert_true(xml_well_formed("<?xml version=\"1.0\"?>\n<a x=\"1\"><b/>t&amp;u</a>\n"));
  assert_false(xml_well_formed("<a><b></a></b>"));
  assert_false(xml_well_formed("<a x=\"1\" x=\"2\"/>"));
  assert_false(xml_well_formed("<a>&bogus;</a>"));
  assert_false(xml_well_formed("<a>x</a><b/>"));
  assert_false(xml_well_formed("<a x=\"<\"/>"));
  assert_false(xml_well_formed("<a>\x01</a>"));
  assert_false(xml_well_formed("<a>\xff</a>"));
  assert_false(xml_well_formed("<a>"));
}

/* ---- canvas basics ------------------------------------------------------ */

static void test_canvas_new_bounds(void **state) {
  (void)state;
  assert_null(nsl_canvas_new(NSL_CANVAS_PNG, 0, 10));
  assert_null(nsl_canvas_new(NSL_CANVAS_PNG, 10, -1));
  assert_null(nsl_canvas_new(NSL_CANVAS_SVG, NSL_CANVAS_MAX_SIDE + 1, 10));
  assert_null(nsl_canvas_new((nsl_canvas_kind)7, 10, 10));
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 3, 2);
  assert_non_null(cv);
  assert_int_equal(nsl_canvas_get_kind(cv), NSL_CANVAS_PNG);
  assert_int_equal(nsl_canvas_width(cv), 3);
  assert_int_equal(nsl_canvas_height(cv), 2);
  const uint8_t *px = nsl_canvas_pixels(cv);
  for (int i = 0; i < 3 * 2 * 4; i++) assert_int_equal(px[i], 0);   /* transparent */
  nsl_canvas_free(cv);
  cv = nsl_canvas_new(NSL_CANVAS_SVG, 3, 2);
  assert_null(nsl_canvas_pixels(cv));
  nsl_canvas_free(cv);
  nsl_canvas_free(NULL);
}

static void test_clear_and_rect(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 48);
  nsl_canvas_clear(cv, NSL_WHITE);
  nsl_style st = NSL_STYLE_INIT;
  st.fill = 0xd55e00ffu;
  nsl_canvas_rect(cv, 10, 10, 20, 10, &st);   /* integer edges: crisp */
  st.fill = NSL_BLACK;
  nsl_canvas_rect(cv, 40.5, 30, 10, 5, &st);   /* half-pixel edges: AA columns */
  nsl_canvas_rect(cv, 20, 40, -5, -4, &st);    /* negative size: [15, 20) x [36, 40) */
  image im = decode(cv);
  for (int y = 10; y < 20; y++)
    for (int x = 10; x < 30; x++) assert_int_equal(rgba_at(&im, x, y), 0xd55e00ffu);
  assert_int_equal(rgba_at(&im, 9, 15), NSL_WHITE);
  assert_int_equal(rgba_at(&im, 30, 15), NSL_WHITE);
  assert_int_equal(rgba_at(&im, 15, 9), NSL_WHITE);
  assert_int_equal(rgba_at(&im, 15, 20), NSL_WHITE);
  /* the half-covered columns are mid-grey, the inside black */
  for (int y = 30; y < 35; y++) {
    assert_in_range(at(&im, 40, y)[0], 120, 136);
    assert_in_range(at(&im, 50, y)[0], 120, 136);
    assert_int_equal(rgba_at(&im, 45, y), NSL_BLACK);
    assert_int_equal(at(&im, 40, y)[3], 255);
  }
  assert_int_equal(rgba_at(&im, 15, 36), NSL_BLACK);
  assert_int_equal(rgba_at(&im, 19, 39), NSL_BLACK);
  assert_int_equal(rgba_at(&im, 14, 36), NSL_WHITE);
  assert_int_equal(rgba_at(&im, 20, 39), NSL_WHITE);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_rect_area_exact(void **state) {
  (void)state;
  /* a rectangle at arbitrary fractional coordinates covers its area */
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 40, 40);
  nsl_canvas_rect(cv, 3.3, 4.7, 17.45, 9.2, NULL);
  image im = decode(cv);
  assert_true(fabs(alpha_area(&im) - 17.45 * 9.2) < 0.5);
  assert_true(partial_pixels(&im) > 0);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_rect_stroke(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 40, 40);
  nsl_canvas_clear(cv, NSL_WHITE);
  nsl_style st = NSL_STYLE_INIT;
  st.fill = 0x56b4e9ffu;
  st.stroke = NSL_BLACK;
  st.line_width = 2;
  nsl_canvas_rect(cv, 10, 10, 20, 20, &st);   /* outline covers [9, 11) around each edge */
  image im = decode(cv);
  assert_int_equal(rgba_at(&im, 9, 20), NSL_BLACK);
  assert_int_equal(rgba_at(&im, 10, 20), NSL_BLACK);
  assert_int_equal(rgba_at(&im, 11, 20), 0x56b4e9ffu);
  assert_int_equal(rgba_at(&im, 20, 9), NSL_BLACK);
  assert_int_equal(rgba_at(&im, 20, 30), NSL_BLACK);
  assert_int_equal(rgba_at(&im, 30, 30), NSL_BLACK);
  assert_int_equal(rgba_at(&im, 8, 20), NSL_WHITE);
  assert_int_equal(rgba_at(&im, 31, 31), NSL_WHITE);
  assert_int_equal(rgba_at(&im, 20, 20), 0x56b4e9ffu);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_rects_batch(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 30, 10);
  double x[3] = {0, 10, 20}, y[3] = {0, 0, NAN}, w[3] = {10, 10, 10}, h[3] = {10, 10, 10};
  nsl_rgba f[3] = {0xe69f00ffu, 0x009e73ffu, 0x0072b2ffu};
  nsl_canvas_rects(cv, 3, x, y, w, h, f, NULL);
  image im = decode(cv);
  assert_int_equal(rgba_at(&im, 5, 5), 0xe69f00ffu);
  assert_int_equal(rgba_at(&im, 15, 5), 0x009e73ffu);
  assert_int_equal(rgba_at(&im, 25, 5), 0);   /* the NaN one is skipped */
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_lines(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 100, 100);
  nsl_style st = NSL_STYLE_INIT;
  st.stroke = NSL_BLACK;
  nsl_canvas_line(cv, 5, 10.5, 95, 10.5, &st);   /* crisp horizontal line on row 10 */
  nsl_canvas_line(cv, 20, 30, 80, 90, &st);       /* 45 degrees */
  image im = decode(cv);
  for (int x = 5; x < 95; x++) {
    assert_int_equal(at(&im, x, 10)[3], 255);
    assert_int_equal(at(&im, x, 9)[3], 0);
    assert_int_equal(at(&im, x, 11)[3], 0);
  }
  /* A column through the diagonal's middle holds width / cos(45°) of ink. */
  for (int x = 40; x < 60; x++) {
    double s = 0;
    for (int y = 20; y < 100; y++) s += at(&im, x, y)[3] / 255.0;
    assert_true(fabs(s - sqrt(2.0)) < 0.03);
  }
  assert_true(partial_pixels(&im) > 60);   /* anti-aliased edges */
  stbi_image_free(im.px);
  nsl_canvas_free(cv);

  /* total ink of a slanted, thick line = length x width */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 100, 100);
  st.line_width = 3.5;
  nsl_canvas_line(cv, 10.2, 20.7, 85.3, 61.9, &st);
  im = decode(cv);
  double len = hypot(85.3 - 10.2, 61.9 - 20.7);
  assert_true(fabs(alpha_area(&im) - len * 3.5) < 0.01 * len * 3.5);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);

  /* no stroke colour, zero width, NaN: nothing */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 20, 20);
  nsl_style none = NSL_STYLE_INIT;
  nsl_canvas_line(cv, 0, 0, 20, 20, &none);
  st.line_width = 0;
  nsl_canvas_line(cv, 0, 0, 20, 20, &st);
  st.line_width = 1;
  nsl_canvas_line(cv, NAN, 0, 20, 20, &st);
  nsl_canvas_line(cv, 0, 0, INFINITY, 20, &st);
  st.line_width = INFINITY;
  nsl_canvas_line(cv, 0, 0, 20, 20, &st);
  st.line_width = 1;
  st.opacity = NAN;
  nsl_canvas_line(cv, 0, 0, 20, 20, &st);
  st.opacity = 1;
  st.dash = INFINITY;
  nsl_canvas_line(cv, 0, 0, 20, 20, &st);
  st.dash = 0;
  im = decode(cv);
  assert_true(alpha_area(&im) == 0);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_dashed_line(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 40, 10);
  nsl_style st = NSL_STYLE_INIT;
  st.stroke = NSL_BLACK;
  st.line_width = 2;
  st.dash = 4;
  st.gap = 4;
  nsl_canvas_line(cv, 0, 5, 40, 5, &st);   /* ink on [0,4), [8,12), ... rows 4 and 5 */
  image im = decode(cv);
  for (int x = 0; x < 40; x++) {
    int on = (x % 8) < 4;
    assert_int_equal(at(&im, x, 4)[3], on ? 255 : 0);
    assert_int_equal(at(&im, x, 5)[3], on ? 255 : 0);
    assert_int_equal(at(&im, x, 3)[3], 0);
  }
  stbi_image_free(im.px);
  nsl_canvas_free(cv);

  /* the same pattern when the line runs on to 1e300 (or starts far left) */
  for (int k = 0; k < 2; k++) {
    cv = nsl_canvas_new(NSL_CANVAS_PNG, 40, 10);
    if (k == 0)
      nsl_canvas_line(cv, 0, 5, 1e300, 5, &st);
    else
      nsl_canvas_line(cv, -8e12, 5, 40, 5, &st);   /* a whole number of periods before 0 */
    im = decode(cv);
    for (int x = 0; x < 40; x++) assert_int_equal(at(&im, x, 4)[3], (x % 8) < 4 ? 255 : 0);
    stbi_image_free(im.px);
    nsl_canvas_free(cv);
  }

  /* a dashed diagonal across a huge span: bounded work, ink about half */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 100, 100);
  st.line_width = 1;
  st.dash = 3, st.gap = 3;
  nsl_canvas_line(cv, -1e9, -1e9, 1e9, 1e9, &st);
  im = decode(cv);
  double a = alpha_area(&im), full = 100 * sqrt(2.0);
  assert_true(a > 0.4 * full && a < 0.65 * full);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_polyline_composited_once(void **state) {
  (void)state;
  /* a zig-zag at 50% alpha: where segments overlap (joins), the ink is not
   * applied twice */
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 60, 60);
  nsl_style st = NSL_STYLE_INIT;
  st.stroke = 0x0072b280u;
  st.line_width = 6;
  double x[5] = {5, 30, 10, 50, 50}, y[5] = {5, 30, 50, 10, 55};
  nsl_canvas_polyline(cv, x, y, 5, &st);
  image im = decode(cv);
  int maxa = 0;
  for (size_t i = 0; i < 60 * 60; i++)
    if (im.px[i * 4 + 3] > maxa) maxa = im.px[i * 4 + 3];
  assert_in_range(maxa, 127, 129);
  assert_int_equal(at(&im, 30, 30)[3], 128);   /* on the join */
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static double shoelace(const double *x, const double *y, int n) {
  double s = 0;
  for (int k = 0; k < n; k++) s += x[k] * y[(k + 1) % n] - x[(k + 1) % n] * y[k];
  return fabs(s) / 2;
}

static void test_polygon(void **state) {
  (void)state;
  double x[3] = {10.3, 70.8, 25.1}, y[3] = {5.2, 30.6, 55.9};
  double rx[3] = {25.1, 70.8, 10.3}, ry[3] = {55.9, 30.6, 5.2};
  double area = shoelace(x, y, 3);
  for (int rev = 0; rev < 2; rev++) {   /* either orientation */
    nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 80, 64);
    nsl_canvas_polygon(cv, rev ? rx : x, rev ? ry : y, 3, NULL);
    image im = decode(cv);
    assert_true(fabs(alpha_area(&im) - area) < 0.002 * area);
    assert_true(partial_pixels(&im) > 50);
    assert_int_equal(at(&im, 35, 30)[3], 255);   /* inside */
    assert_int_equal(at(&im, 70, 55)[3], 0);     /* outside */
    stbi_image_free(im.px);
    nsl_canvas_free(cv);
  }
  /* a pentagram: non-zero winding fills the centre */
  double sx[5], sy[5];
  for (int k = 0; k < 5; k++) {
    double t = -M_PI / 2 + k * 4 * M_PI / 5;
    sx[k] = 32 + 28 * cos(t), sy[k] = 32 + 28 * sin(t);
  }
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 64);
  nsl_canvas_polygon(cv, sx, sy, 5, NULL);
  image im = decode(cv);
  assert_int_equal(at(&im, 32, 33)[3], 255);
  assert_int_equal(at(&im, 2, 2)[3], 0);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
  /* far outside the canvas, huge coordinates, too few points: no crash */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 16, 16);
  double hx[4] = {-1e15, 1e15, 1e15, -1e15}, hy[4] = {-1e15, -1e15, 1e15, 1e15};
  nsl_canvas_polygon(cv, hx, hy, 4, NULL);
  nsl_canvas_polygon(cv, hx, hy, 2, NULL);
  nsl_canvas_polygon(cv, NULL, hy, 4, NULL);
  im = decode(cv);
  assert_true(fabs(alpha_area(&im) - 256) < 1e-9);   /* covers everything */
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_circle(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 64);
  nsl_canvas_circle(cv, 31.3, 30.8, 20, NULL);
  image im = decode(cv);
  double area = M_PI * 400;
  assert_true(fabs(alpha_area(&im) - area) < 0.005 * area);
  assert_true(partial_pixels(&im) > 100);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);

  /* an outline: ink = circumference x width, centre empty */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 64);
  nsl_style st = NSL_STYLE_INIT;
  st.fill = NSL_NONE;
  st.stroke = NSL_BLACK;
  st.line_width = 2;
  nsl_canvas_circle(cv, 32, 32, 20, &st);
  im = decode(cv);
  area = 2 * M_PI * 20 * 2;
  assert_true(fabs(alpha_area(&im) - area) < 0.02 * area);
  assert_int_equal(at(&im, 32, 32)[3], 0);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);

  /* dashed outline: about half the ink */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 64);
  st.dash = 5, st.gap = 5;
  nsl_canvas_circle(cv, 32, 32, 20, &st);
  im = decode(cv);
  assert_true(alpha_area(&im) > 0.4 * area && alpha_area(&im) < 0.6 * area);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_stroke_area(void **state) {
  (void)state;
  /* A closed stroke along a fine regular polygon covers 2 hw x perimeter
   * (the outer join slices and the inner overlaps cancel): joins must not
   * count their anti-aliased edges twice. */
  double x[62], y[62];
  for (int k = 0; k < 62; k++) x[k] = 32 + 20 * cos(2 * M_PI * k / 62), y[k] = 32 + 20 * sin(2 * M_PI * k / 62);
  double per = 62 * 2 * 20 * sin(M_PI / 62);
  for (int wide = 0; wide < 2; wide++) {
    nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 64);
    nsl_style st = NSL_STYLE_INIT;
    st.fill = NSL_NONE;
    st.stroke = NSL_BLACK;
    st.line_width = wide ? 5 : 1;
    nsl_canvas_polygon(cv, x, y, 62, &st);
    image im = decode(cv);
    double want = per * st.line_width;
    assert_true(fabs(alpha_area(&im) - want) < 0.015 * want);
    stbi_image_free(im.px);
    nsl_canvas_free(cv);
  }
  /* a right-angle corner with round join: two 40 x 8 arms overlapping in a
   * 4 x 4 square, plus a quarter disc of radius 4 */
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 64);
  nsl_style st = NSL_STYLE_INIT;
  st.stroke = NSL_BLACK;
  st.line_width = 8;
  double cx[3] = {10.3, 50.3, 50.3}, cy[3] = {10.6, 10.6, 50.6};
  nsl_canvas_polyline(cv, cx, cy, 3, &st);
  image im = decode(cv);
  double want = 2 * 40 * 8 - 16 + M_PI * 16 / 4;
  assert_true(fabs(alpha_area(&im) - want) < 0.005 * want);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
  /* a U-turn: the join is a half disc beyond the turning point (the arms
   * lie on each other; their edges are kept on pixel boundaries, where
   * coinciding edges are exact) */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 64, 64);
  double ux[3] = {10, 40, 10}, uy[3] = {30, 30, 30};
  nsl_canvas_polyline(cv, ux, uy, 3, &st);
  im = decode(cv);
  want = 30 * 8 + M_PI * 16 / 2;
  assert_true(fabs(alpha_area(&im) - want) < 0.01 * want);
  assert_true(at(&im, 42, 30)[3] == 255);   /* inside the half disc */
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_clip_and_opacity(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 40, 40);
  nsl_canvas_clear(cv, NSL_WHITE);
  nsl_canvas_clip(cv, 10, 10, 20, 20);
  nsl_canvas_rect(cv, 0, 0, 40, 40, NULL);
  nsl_canvas_circle(cv, 0, 0, 30, NULL);
  nsl_style st = NSL_STYLE_INIT;
  st.font_size = 30;
  nsl_canvas_text(cv, 0, 35, "WWWW", &st);
  nsl_canvas_unclip(cv);
  st.fill = 0x0000ffffu;
  st.opacity = 0.5;
  nsl_canvas_rect(cv, 0, 0, 5, 5, &st);
  image im = decode(cv);
  for (int y = 0; y < 40; y++)
    for (int x = 0; x < 40; x++) {
      int inside = x >= 10 && x < 30 && y >= 10 && y < 30;
      if (inside) assert_int_equal(rgba_at(&im, x, y), NSL_BLACK);
      else if (!(x < 5 && y < 5)) assert_int_equal(rgba_at(&im, x, y), NSL_WHITE);
    }
  /* 50% blue over white */
  assert_in_range(at(&im, 2, 2)[0], 126, 129);
  assert_in_range(at(&im, 2, 2)[1], 126, 129);
  assert_int_equal(at(&im, 2, 2)[2], 255);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);

  /* semi-transparent paint on a transparent canvas keeps its colour */
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 4, 4);
  nsl_canvas_rect(cv, 0, 0, 4, 4, &st);
  nsl_canvas_rect(cv, 0, 0, 4, 4, &st);
  im = decode(cv);
  assert_int_equal(at(&im, 1, 1)[2], 255);
  assert_int_equal(at(&im, 1, 1)[0], 0);
  assert_in_range(at(&im, 1, 1)[3], 190, 192);   /* 1 - 0.5^2 */
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

/* ---- text --------------------------------------------------------------- */

static void test_text_measure(void **state) {
  (void)state;
  assert_true(nsl_text_width(NULL, 12, 0) == 0);
  assert_true(nsl_text_width("", 12, 0) == 0);
  assert_true(nsl_text_width("abc", 0, 0) == 0);
  assert_true(nsl_text_width("abc", NAN, 0) == 0);
  double w12 = nsl_text_width("Kernel time", 12, 0);
  double w24 = nsl_text_width("Kernel time", 24, 0);
  assert_true(w12 > 40 && w12 < 90);
  assert_true(fabs(w24 - 2 * w12) < 1e-6 * w24);
  assert_true(nsl_text_width("iiii", 12, 0) < nsl_text_width("WWWW", 12, 0));
  assert_true(nsl_text_width("abc", 12, 1) > nsl_text_width("abc", 12, 0));
  /* control characters take no room; invalid UTF-8 draws one U+FFFD each */
  assert_true(nsl_text_width("a\tb\n", 12, 0) == nsl_text_width("ab", 12, 0));
  assert_true(nsl_text_width("\xff", 12, 0) == nsl_text_width("\xef\xbf\xbd", 12, 0));
  /* DejaVu Sans: 'M' advances 1767/2048 em, ascent 1901, descent 483 units */
  assert_true(fabs(nsl_text_width("M", 20.48, 0) - 17.67) < 0.01);
  double asc, desc;
  nsl_text_metrics(20.48, &asc, &desc);
  assert_true(fabs(asc - 19.01) < 0.01);
  assert_true(fabs(desc - 4.83) < 0.01);
  nsl_text_metrics(12, NULL, NULL);
}

/* Draws s with st at (x, y) on a fresh canvas and returns the ink box. */
static int text_ink(const char *s, double x, double y, const nsl_style *st, int box[4]) {
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 200, 200);
  nsl_canvas_text(cv, x, y, s, st);
  image im = decode(cv);
  int n = ink_box(&im, 40, box);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
  return n;
}

static void test_text_ink_in_measured_box(void **state) {
  (void)state;
  const char *s = "Hxg 1.5 ms";
  nsl_style st = NSL_STYLE_INIT;
  st.font_size = 16;
  double w = nsl_text_width(s, 16, 0), asc, desc;
  nsl_text_metrics(16, &asc, &desc);
  int b[4];

  /* start / baseline: ink within [x, x+w] x [y-asc, y+desc], spanning it */
  assert_true(text_ink(s, 20, 100, &st, b) > 50);
  assert_in_range(b[0], 20, 23);
  assert_in_range(b[2], (int)(20 + w) - 3, (int)(20 + w));
  assert_true(b[1] >= 100 - asc - 1 && b[1] <= 100 - 16 * 0.7);   /* 'H' reaches cap height */
  assert_true(b[3] >= 100 + 1 && b[3] <= 100 + desc);            /* 'g' descends */

  /* middle / end anchors shift by w/2 and w */
  st.anchor = NSL_ANCHOR_MIDDLE;
  text_ink(s, 100, 100, &st, b);
  assert_in_range(b[0], (int)(100 - w / 2) - 1, (int)(100 - w / 2) + 3);
  st.anchor = NSL_ANCHOR_END;
  text_ink(s, 180, 100, &st, b);
  assert_in_range(b[2], (int)(180 - 3), 180);

  /* baselines: top puts the ink below y, bottom above it */
  st.anchor = NSL_ANCHOR_START;
  st.baseline = NSL_BASELINE_TOP;
  text_ink("HHH", 20, 50, &st, b);
  assert_true(b[1] >= 50 && b[1] <= 50 + asc - 16 * 0.7 + 1);
  st.baseline = NSL_BASELINE_BOTTOM;
  text_ink("HHH", 20, 50, &st, b);
  assert_true(b[3] < 50 && b[3] >= 50 - desc - 2);
  st.baseline = NSL_BASELINE_MIDDLE;
  text_ink("ggg", 20, 50, &st, b);
  assert_true(b[1] < 50 && b[3] > 50);

  /* rotated 90°: reads upwards from y, ink right of x up to the descent */
  st.baseline = NSL_BASELINE_ALPHABETIC;
  st.rotation = 90;
  text_ink(s, 100, 180, &st, b);
  assert_in_range(b[3], 180 - 4, 180);
  assert_in_range(b[1], (int)(180 - w), (int)(180 - w) + 4);
  assert_true(b[0] >= 100 - asc - 1 && b[2] <= 100 + desc + 1);
  assert_true(b[2] > 100);   /* the 'g' descender, right of the baseline */
  st.rotation = -90;
  text_ink(s, 100, 20, &st, b);
  assert_in_range(b[1], 20, 24);
  assert_in_range(b[3], (int)(20 + w) - 4, (int)(20 + w));
  assert_true(b[0] < 100 && b[2] <= 100 + asc + 1);

  /* bold adds ink */
  st.rotation = 0;
  int b2[4];
  int regular = text_ink("Bold", 20, 100, &st, b);
  st.bold = 1;
  int bold = text_ink("Bold", 20, 100, &st, b2);
  assert_true(bold > regular);
  assert_true(b2[2] >= b[2]);

  /* nothing for NULL, empty, zero size, transparent */
  st.bold = 0;
  assert_int_equal(text_ink("", 20, 100, &st, b), 0);
  st.font_size = 0;
  assert_int_equal(text_ink("abc", 20, 100, &st, b), 0);
  st.font_size = 12;
  st.fill = NSL_NONE;
  assert_int_equal(text_ink("abc", 20, 100, &st, b), 0);
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 10, 10);
  nsl_canvas_text(cv, 0, 0, NULL, NULL);
  nsl_canvas_free(cv);
}

static void test_text_bad_input(void **state) {
  (void)state;
  /* invalid UTF-8, lone surrogates, overlongs, controls, a very long
   * string running off the canvas: draws, no crash */
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 50, 20);
  nsl_canvas_text(cv, 2, 15, "\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80\x01z\xe2\x82", NULL);
  size_t n = 1 << 20;
  char *big = malloc(n + 1);
  memset(big, 'W', n);
  big[n] = '\0';
  nsl_canvas_text(cv, -1e6, 15, big, NULL);
  nsl_style st = NSL_STYLE_INIT;
  st.anchor = NSL_ANCHOR_END;
  st.rotation = 90;
  nsl_canvas_text(cv, 25, 10, big, &st);
  st.rotation = 45;   /* unsupported angles draw upright */
  st.font_size = 5000;
  nsl_canvas_text(cv, 25, 10, "x", &st);
  st.font_size = 12;
  nsl_canvas_text(cv, 1e300, -1e300, "far away", &st);
  nsl_canvas_circle(cv, 1e300, 5, 3, NULL);
  nsl_canvas_circle(cv, -1e300, 5, 1e300, NULL);
  nsl_style huge = NSL_STYLE_INIT;
  huge.stroke = NSL_BLACK;
  huge.line_width = 1e300;
  double hx[3] = {0, 1e300, 5}, hy[3] = {0, 1e-8, 1e300};
  nsl_canvas_polyline(cv, hx, hy, 3, &huge);
  huge.dash = 1e-300, huge.gap = 1e-300;
  nsl_canvas_polyline(cv, hx, hy, 3, &huge);
  nsl_canvas_polygon(cv, hx, hy, 3, &huge);
  nsl_canvas_clip(cv, 1e300, 1e300, 1e300, 1e300);
  nsl_canvas_rect(cv, 0, 0, 10, 10, NULL);   /* clipped away entirely */
  nsl_canvas_clip(cv, -1e300, -1e300, 1e300, 1e300);
  nsl_canvas_unclip(cv);
  free(big);
  image im = decode(cv);
  assert_true(alpha_area(&im) > 0);
  stbi_image_free(im.px);
  assert_int_equal(nsl_canvas_status(cv, NULL), NSL_OK);
  nsl_canvas_free(cv);
}

/* ---- a whole chart ------------------------------------------------------- */

/* Draws a small histogram-like chart with every primitive. */
static void draw_chart(nsl_canvas *cv) {
  nsl_style st = NSL_STYLE_INIT;
  nsl_canvas_clear(cv, NSL_WHITE);
  st.stroke = NSL_BLACK;
  nsl_canvas_line(cv, 40.5, 10, 40.5, 170.5, &st);
  nsl_canvas_line(cv, 40, 170.5, 300, 170.5, &st);
  nsl_ticks t;
  nsl_ticks_linear(0, 2.5e6, 5, NSL_UNIT_NS, &t, NULL);
  nsl_style lab = NSL_STYLE_INIT;
  lab.font_size = 10;
  lab.anchor = NSL_ANCHOR_MIDDLE;
  lab.baseline = NSL_BASELINE_TOP;
  for (int i = 0; i < t.n; i++) {
    double x = 40 + t.value[i] / 2.5e6 * 250;
    nsl_canvas_line(cv, x, 170, x, 175, &st);
    nsl_canvas_text(cv, x, 177, t.label[i], &lab);
  }
  nsl_canvas_clip(cv, 41, 10, 260, 160);
  for (int i = 0; i < 10; i++) {
    nsl_style bar = NSL_STYLE_INIT;
    bar.fill = nsl_palette(i);
    bar.title = "bin <&> \"quoted\"";
    bar.class_name = "bar";
    nsl_canvas_rect(cv, 41 + i * 26, 170 - (i + 1) * 14, 25, (i + 1) * 14, &bar);
  }
  double px[4] = {50, 120, 200, 290}, py[4] = {150, 60, 100, 20};
  st.stroke = 0xd55e00ffu;
  st.line_width = 2;
  st.dash = 6, st.gap = 3;
  nsl_canvas_polyline(cv, px, py, 4, &st);
  nsl_canvas_unclip(cv);
  nsl_style circ = NSL_STYLE_INIT;
  circ.fill = 0xcc79a7ffu;
  circ.opacity = 0.7;
  nsl_canvas_circle(cv, 280, 30, 8, &circ);
  double gx[3] = {250, 270, 260}, gy[3] = {50, 50, 65};
  nsl_canvas_polygon(cv, gx, gy, 3, &circ);
  lab.rotation = 90;
  lab.baseline = NSL_BASELINE_BOTTOM;
  lab.bold = 1;
  nsl_canvas_text(cv, 20, 90, "count <&>", &lab);
  nsl_style g = NSL_STYLE_INIT;
  g.id = "frame-1";
  g.class_name = "frame";
  g.title = "main() 100%";
  nsl_canvas_group_begin(cv, &g);
  nsl_canvas_rect(cv, 41, 185, 259, 12, NULL);
  nsl_canvas_group_begin(cv, NULL);   /* left open on purpose */
  nsl_canvas_svg_raw(cv, "<script><![CDATA[ if (1 < 2) {} ]]></script>");
}

static void test_chart_png_not_blank(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 320, 200);
  draw_chart(cv);
  image im = decode(cv);
  int colours = 0, seen_black = 0, seen_white = 0;
  for (size_t i = 0; i < (size_t)im.w * im.h; i++) {
    nsl_rgba c = NSL_RGBA(im.px[4 * i], im.px[4 * i + 1], im.px[4 * i + 2], im.px[4 * i + 3]);
    seen_black |= c == NSL_BLACK;
    seen_white |= c == NSL_WHITE;
    colours += c != NSL_WHITE;
  }
  assert_true(seen_black && seen_white);
  assert_true(colours > 320 * 200 / 10);
  assert_int_equal(rgba_at(&im, 41 + 9 * 26 + 10, 100), nsl_palette(9));   /* the last bar */
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

static void test_chart_svg_well_formed(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_SVG, 320, 200);
  draw_chart(cv);
  nsl_style st = NSL_STYLE_INIT;
  st.title = "bad \xff\x01 utf8 \xef\xbf\xbe";
  st.id = "a\"b";
  nsl_canvas_text(cv, 10, 10, "tab\there \xc0\xaf <tag> & \x7f", &st);
  double big[2] = {1e300, -1e300};
  nsl_canvas_polyline(cv, big, big, 2, &st);
  size_t len;
  char *doc = svg_text(cv, &len);
  assert_true(xml_well_formed(doc));
  assert_non_null(strstr(doc, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  assert_non_null(strstr(doc, "width=\"320\" height=\"200\""));
  assert_non_null(strstr(doc, "<title>bin &lt;&amp;&gt; &quot;quoted&quot;</title>"));
  assert_non_null(strstr(doc, "class=\"bar\""));
  assert_non_null(strstr(doc, "<clipPath id=\"nsl-clip-1\">"));
  assert_non_null(strstr(doc, "clip-path=\"url(#nsl-clip-1)\""));
  assert_non_null(strstr(doc, "stroke-dasharray=\"6 3\""));
  assert_non_null(strstr(doc, "transform=\"rotate(-90"));
  assert_non_null(strstr(doc, "font-weight=\"bold\""));
  assert_non_null(strstr(doc, "fill-opacity=\"0.7\""));
  assert_non_null(strstr(doc, "<g id=\"frame-1\" class=\"frame\"><title>main() 100%</title>"));
  assert_non_null(strstr(doc, "<![CDATA[ if (1 < 2) {} ]]>"));
  assert_non_null(strstr(doc, "id=\"a&quot;b\""));
  assert_non_null(strstr(doc, ">0.5 ms</text>"));
  assert_non_null(strstr(doc, "&lt;tag&gt; &amp;"));
  assert_null(strstr(doc, "xml:space"));   /* only where spaces must be kept */
  assert_null(strstr(doc, "NaN"));
  assert_null(strstr(doc, "nan"));
  free(doc);
  nsl_canvas_free(cv);
}

static void test_svg_clear_and_groups(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_SVG, 10, 10);
  nsl_canvas_clip(cv, 0, 0, 5, 5);
  nsl_canvas_rect(cv, 1, 1, 2, 2, NULL);
  nsl_canvas_group_begin(cv, NULL);
  nsl_canvas_clear(cv, 0x123456ffu);   /* drops the rect, the group and the clip path */
  nsl_canvas_group_end(cv);            /* unmatched now: ignored */
  nsl_canvas_circle(cv, 5, 5, 2, NULL);
  size_t len;
  char *doc = svg_text(cv, &len);
  assert_true(xml_well_formed(doc));
  assert_null(strstr(doc, "<rect x=\"1\""));
  assert_non_null(strstr(doc, "fill=\"#123456\""));
  assert_non_null(strstr(doc, "<clipPath id=\"nsl-clip-1\">"));   /* re-emitted for the circle */
  assert_non_null(strstr(doc, "<circle"));
  /* the canvas stays usable after producing the document */
  nsl_canvas_rect(cv, 1, 1, 2, 2, NULL);
  char *doc2 = svg_text(cv, &len);
  assert_true(xml_well_formed(doc2));
  assert_non_null(strstr(doc2, "<rect x="));
  free(doc);
  free(doc2);
  nsl_canvas_free(cv);
}

static void test_svg_rects_batch(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_SVG, 100, 10);
  double x[2] = {0, 10}, y[2] = {0, 0}, w[2] = {5, -5}, h[2] = {10, 10};
  nsl_rgba f[2] = {0x112233ffu, 0x44556680u};
  nsl_style st = NSL_STYLE_INIT;
  st.class_name = "k";
  st.title = "kernels";
  nsl_canvas_rects(cv, 2, x, y, w, h, f, &st);
  size_t len;
  char *doc = svg_text(cv, &len);
  assert_true(xml_well_formed(doc));
  assert_non_null(strstr(doc, "<rect class=\"k\" x=\"0\" y=\"0\" width=\"5\" height=\"10\" fill=\"#112233\"/>"));
  assert_non_null(strstr(doc, "x=\"5\" y=\"0\" width=\"5\" height=\"10\" fill=\"#445566\" fill-opacity=\"0.502\""));
  free(doc);
  nsl_canvas_free(cv);
}

static void test_svg_numbers(void **state) {
  (void)state;
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_SVG, 10, 10);
  nsl_canvas_rect(cv, -0.004, 3.1, 1e12, -7.25, NULL);
  nsl_canvas_line(cv, -1234567.891, 0.07, 5, 5, NULL);
  nsl_canvas_text(cv, 1, 1, "a  b", NULL);
  size_t len;
  char *doc = svg_text(cv, &len);
  assert_non_null(strstr(doc, "<rect x=\"0\" y=\"-4.15\" width=\"1e+12\" height=\"7.25\" fill=\"#000000\"/>"));
  assert_non_null(strstr(doc, "<line x1=\"-1234567.89\" y1=\"0.07\" x2=\"5\" y2=\"5\"/>"));
  assert_non_null(strstr(doc, "xml:space=\"preserve\""));
  assert_non_null(strstr(doc, ">a  b</text>"));
  assert_true(xml_well_formed(doc));
  free(doc);
  nsl_canvas_free(cv);
}

static void test_png_noise(void **state) {
  (void)state;
  /* an image that does not compress: the encoder's worst case */
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 257, 131);
  unsigned s = 7;
  for (int y = 0; y < 131; y++)
    for (int x = 0; x < 257; x++) {
      s = s * 1103515245u + 12345u;
      nsl_style st = NSL_STYLE_INIT;
      st.fill = s | 1;   /* random colour, random non-zero alpha */
      nsl_canvas_rect(cv, x, y, 1, 1, &st);
    }
  image im = decode(cv);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
  cv = nsl_canvas_new(NSL_CANVAS_PNG, 1, 1);   /* the smallest */
  im = decode(cv);
  stbi_image_free(im.px);
  nsl_canvas_free(cv);
}

/* A value for the random-input test: mostly ordinary, sometimes extreme. */
static double wild(unsigned *s) {
  static const double extreme[] = {0, -0.0, 1e-300, -1e-300, 1e300, -1e300, 1e15, -1e15, 0.5, 1e9};
  *s = *s * 1103515245u + 12345u;
  unsigned r = *s >> 8;
  if (r % 16 == 0) return NAN;
  if (r % 16 == 1) return (r & 256) ? INFINITY : -INFINITY;
  if (r % 16 < 5) return extreme[(r >> 4) % 10];
  return (double)(r % 15000) / 100.0 - 25;
}

static void test_random_input_never_crashes(void **state) {
  (void)state;
  /* every primitive with random, often absurd, numbers on both back ends
   * (run under ASan/UBSan in the Asan build) */
  for (int kind = 0; kind < 2; kind++) {
    unsigned s = 99 + kind;
    nsl_canvas *cv = nsl_canvas_new(kind ? NSL_CANVAS_SVG : NSL_CANVAS_PNG, 120, 90);
    for (int it = 0; it < 3000; it++) {
      nsl_style st = NSL_STYLE_INIT;
      st.fill = (nsl_rgba)(s * 2654435761u);
      st.stroke = (nsl_rgba)(s * 40503u) | 0xff;
      st.line_width = fabs(wild(&s)) < 50 ? wild(&s) : 1;
      if (it % 3 == 0) st.dash = wild(&s), st.gap = wild(&s);
      st.opacity = it % 7 ? 1 : wild(&s);
      st.font_size = it % 5 ? 12 : wild(&s);
      st.anchor = (int)(s % 4), st.baseline = (int)(s % 5), st.rotation = (int)(s % 4) * 90 - 90;
      st.title = it % 11 ? NULL : "t<&>";
      double x[6], y[6];
      for (int k = 0; k < 6; k++) x[k] = wild(&s), y[k] = wild(&s);
      switch (it % 9) {
      case 0: nsl_canvas_rect(cv, x[0], y[0], x[1], y[1], &st); break;
      case 1: nsl_canvas_line(cv, x[0], y[0], x[1], y[1], &st); break;
      case 2: nsl_canvas_polyline(cv, x, y, 2 + it % 5, &st); break;
      case 3: nsl_canvas_polygon(cv, x, y, 3 + it % 4, &st); break;
      case 4: nsl_canvas_circle(cv, x[0], y[0], x[1], &st); break;
      case 5: nsl_canvas_text(cv, x[0], y[0], "Wq\xc3\xa9\xff", &st); break;
      case 6: nsl_canvas_rects(cv, 3, x, y, x + 3, y + 3, NULL, &st); break;
      case 7: nsl_canvas_clip(cv, x[0], y[0], x[1], y[1]); break;
      default: nsl_canvas_unclip(cv); break;
      }
    }
    assert_int_equal(nsl_canvas_status(cv, NULL), NSL_OK);
    if (kind == 0) {
      image im = decode(cv);
      stbi_image_free(im.px);
    } else {
      size_t len;
      char *doc = svg_text(cv, &len);
      assert_true(xml_well_formed(doc));
      assert_null(strstr(doc, "nan"));
      assert_null(strstr(doc, "inf"));
      free(doc);
    }
    nsl_canvas_free(cv);
  }
}

/* ---- files ----------------------------------------------------------------- */

static char tmpdir[256];

static int setup_tmpdir(void **state) {
  (void)state;
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/nsl-render-XXXXXX", base && base[0] ? base : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmpdir(void **state) {
  (void)state;
  DIR *d = opendir(tmpdir);
  if (d) {
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
        continue;
      snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(tmpdir);
  return 0;
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void test_write_files(void **state) {
  (void)state;
  char path[512];
  nsl_error err = {0};
  nsl_canvas *cv = nsl_canvas_new(NSL_CANVAS_PNG, 320, 200);
  draw_chart(cv);
  snprintf(path, sizeof path, "%s/chart.png", tmpdir);
  assert_int_equal(nsl_canvas_write(cv, path, &err), NSL_OK);
  int w, h, n;
  unsigned char *px = stbi_load(path, &w, &h, &n, 4);
  assert_non_null(px);
  assert_int_equal(w, 320);
  assert_int_equal(h, 200);
  assert_memory_equal(px, nsl_canvas_pixels(cv), 320 * 200 * 4);
  stbi_image_free(px);
  nsl_canvas_free(cv);

  cv = nsl_canvas_new(NSL_CANVAS_SVG, 320, 200);
  draw_chart(cv);
  snprintf(path, sizeof path, "%s/chart.svg", tmpdir);
  assert_int_equal(nsl_canvas_write(cv, path, &err), NSL_OK);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char buf[1 << 16];
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[got] = '\0';
  assert_true(xml_well_formed(buf));
  /* a second opinion from libxml2's xmllint, when the machine has it */
  if (system("command -v xmllint >/dev/null 2>&1") == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
    assert_int_equal(system(cmd), 0);
  }
  assert_int_equal(count_entries(tmpdir), 2);   /* no temporary files left */

  /* a folder that does not exist: an error naming the path, nothing written */
  snprintf(path, sizeof path, "%s/missing/chart.svg", tmpdir);
  assert_int_equal(nsl_canvas_write(cv, path, &err), NSL_ERR_IO);
  assert_non_null(strstr(err.msg, path));
  assert_int_equal(count_entries(tmpdir), 2);
  nsl_canvas_free(cv);
}

/* ---- ticks and labels -------------------------------------------------------- */

static void assert_labels(const nsl_ticks *t, const char *const *want, int n) {
  if (t->n != n) {
    for (int i = 0; i < t->n; i++) print_error("tick %d: %g '%s'\n", i, t->value[i], t->label[i]);
  }
  assert_int_equal(t->n, n);
  for (int i = 0; i < n; i++) assert_string_equal(t->label[i], want[i]);
}

static void test_ticks_linear(void **state) {
  (void)state;
  nsl_ticks t;
  nsl_error err = {0};
  assert_int_equal(nsl_ticks_linear(0, 1, 5, NSL_UNIT_NUMBER, &t, &err), NSL_OK);
  assert_labels(&t, (const char *[]){"0", "0.2", "0.4", "0.6", "0.8", "1"}, 6);
  assert_true(t.step == 0.2 && t.lo == 0 && t.hi == 1);

  nsl_ticks_linear(3, 97, 5, NSL_UNIT_NUMBER, &t, &err);
  assert_labels(&t, (const char *[]){"20", "40", "60", "80"}, 4);
  assert_true(t.lo == 0 && t.hi == 100);

  nsl_ticks_linear(0, 2.5e6, 5, NSL_UNIT_NS, &t, &err);
  assert_labels(&t, (const char *[]){"0", "0.5 ms", "1 ms", "1.5 ms", "2 ms", "2.5 ms"}, 6);

  nsl_ticks_linear(0, 1500, 4, NSL_UNIT_NS, &t, &err);
  assert_labels(&t, (const char *[]){"0", "0.5 \xc2\xb5s", "1 \xc2\xb5s", "1.5 \xc2\xb5s"}, 4);

  nsl_ticks_linear(0, 40, 4, NSL_UNIT_NS, &t, &err);
  assert_labels(&t, (const char *[]){"0", "10 ns", "20 ns", "30 ns", "40 ns"}, 5);

  nsl_ticks_linear(0, 3.0 * 1073741824, 6, NSL_UNIT_BYTES, &t, &err);
  assert_labels(&t, (const char *[]){"0", "0.5 GiB", "1 GiB", "1.5 GiB", "2 GiB", "2.5 GiB", "3 GiB"}, 7);

  nsl_ticks_linear(0, 3000, 3, NSL_UNIT_BYTES, &t, &err);
  assert_labels(&t, (const char *[]){"0", "1 KiB", "2 KiB"}, 3);
  assert_true(t.value[1] == 1024);

  nsl_ticks_linear(0, 1, 5, NSL_UNIT_PERCENT, &t, &err);
  assert_labels(&t, (const char *[]){"0%", "20%", "40%", "60%", "80%", "100%"}, 6);

  nsl_ticks_linear(0, 50000, 5, NSL_UNIT_NUMBER, &t, &err);
  assert_labels(&t, (const char *[]){"0", "10k", "20k", "30k", "40k", "50k"}, 6);

  /* reversed bounds, negative ranges */
  nsl_ticks_linear(-3, -7, 4, NSL_UNIT_NUMBER, &t, &err);
  assert_labels(&t, (const char *[]){"-7", "-6", "-5", "-4", "-3"}, 5);
  nsl_ticks_linear(-1, 1, 4, NSL_UNIT_NUMBER, &t, &err);
  assert_labels(&t, (const char *[]){"-1", "-0.5", "0", "0.5", "1"}, 5);
}

static void test_ticks_edge_ranges(void **state) {
  (void)state;
  nsl_ticks t;
  nsl_error err = {0};
  /* zero span: widened around the value, which stays inside */
  assert_int_equal(nsl_ticks_linear(5, 5, 5, NSL_UNIT_NUMBER, &t, &err), NSL_OK);
  assert_true(t.n >= 2 && t.lo < 5 && t.hi > 5);
  assert_true(t.value[0] <= 5 && t.value[t.n - 1] >= 5);
  nsl_ticks_linear(0, 0, 5, NSL_UNIT_NS, &t, &err);
  assert_true(t.n >= 2 && t.lo < 0 && t.hi > 0);
  nsl_ticks_linear(1e6, 1e6, 5, NSL_UNIT_NS, &t, &err);
  assert_true(t.n >= 2 && t.lo < 1e6 && t.hi > 1e6);
  /* steps never go below 1 ns or 1 byte */
  nsl_ticks_linear(100, 101, 10, NSL_UNIT_NS, &t, &err);
  assert_labels(&t, (const char *[]){"100 ns", "101 ns"}, 2);
  nsl_ticks_linear(7, 7, 10, NSL_UNIT_BYTES, &t, &err);
  assert_labels(&t, (const char *[]){"6 B", "7 B", "8 B"}, 3);
  /* the whole int64 ns range */
  nsl_ticks_linear(0, (double)INT64_MAX, 5, NSL_UNIT_NS, &t, &err);
  assert_labels(&t, (const char *[]){"0", "2000000000 s", "4000000000 s", "6000000000 s", "8000000000 s"}, 5);
  nsl_ticks_linear((double)INT64_MIN, (double)INT64_MAX, 5, NSL_UNIT_NS, &t, &err);
  assert_true(t.n >= 3 && t.value[0] >= (double)INT64_MIN && t.value[t.n - 1] <= (double)INT64_MAX);
  /* a span far below the values' precision */
  nsl_ticks_linear(1e18, 1e18 + 1, 5, NSL_UNIT_NUMBER, &t, &err);
  assert_true(t.n >= 1);
  for (int i = 1; i < t.n; i++) assert_true(t.value[i] > t.value[i - 1]);
  nsl_ticks_linear(1e-300, 2e-300, 5, NSL_UNIT_NUMBER, &t, &err);
  assert_true(t.n >= 2);
  nsl_ticks_linear(-1e308, 1e308, 5, NSL_UNIT_NUMBER, &t, &err);
  assert_true(t.n >= 2);
  /* bad bounds */
  assert_int_equal(nsl_ticks_linear(NAN, 1, 5, NSL_UNIT_NUMBER, &t, &err), NSL_ERR_ARG);
  assert_int_equal(t.n, 0);
  assert_non_null(strstr(err.msg, "finite"));
  assert_int_equal(nsl_ticks_linear(0, INFINITY, 5, NSL_UNIT_NUMBER, &t, NULL), NSL_ERR_ARG);
}

/* 1, 2 or 5 times a power of ten (within rounding). */
static int is_nice(double step) {
  double e = floor(log10(step) + 1e-9), m = step / pow(10, e);
  return fabs(m - 1) < 1e-6 || fabs(m - 2) < 1e-6 || fabs(m - 5) < 1e-6 || fabs(m - 10) < 1e-6;
}

static void test_ticks_properties(void **state) {
  (void)state;
  /* many ranges: ticks ascending, inside the range, evenly spaced by a
   * nice step, about the asked number, labels distinct */
  unsigned seed = 12345;
  for (int it = 0; it < 3000; it++) {
    seed = seed * 1103515245u + 12345u;
    double e = (int)(seed >> 16) % 24 - 8;
    seed = seed * 1103515245u + 12345u;
    double a = ((int)(seed >> 8) % 20000 - 10000) / 1000.0 * pow(10, e);
    seed = seed * 1103515245u + 12345u;
    double b = a + ((seed >> 8) % 10000 + 1) / 1000.0 * pow(10, e);
    int target = 2 + it % 10;
    nsl_ticks t;
    assert_int_equal(nsl_ticks_linear(a, b, target, NSL_UNIT_NUMBER, &t, NULL), NSL_OK);
    assert_true(t.n >= 1 && t.n <= 3 * target);
    assert_true(is_nice(t.step));
    assert_true(t.lo <= a + 1e-9 * t.step && t.hi >= b - 1e-9 * t.step);
    for (int i = 0; i < t.n; i++) {
      assert_true(t.value[i] >= a - 1e-9 * fabs(a) - 1e-300 && t.value[i] <= b + 1e-9 * fabs(b) + 1e-300);
      if (i) {
        assert_true(fabs(t.value[i] - t.value[i - 1] - t.step) < 1e-6 * t.step);
        assert_string_not_equal(t.label[i], t.label[i - 1]);
      }
    }
  }
}

static void test_ticks_log(void **state) {
  (void)state;
  nsl_ticks t;
  nsl_error err = {0};
  assert_int_equal(nsl_ticks_log(1, 1e6, 10, NSL_UNIT_NUMBER, &t, &err), NSL_OK);
  assert_labels(&t, (const char *[]){"1", "10", "100", "1000", "10k", "100k", "1M"}, 7);
  assert_true(t.step == 10);
  nsl_ticks_log(500, 3e9, 10, NSL_UNIT_NS, &t, &err);
  assert_labels(&t, (const char *[]){"1 \xc2\xb5s", "10 \xc2\xb5s", "100 \xc2\xb5s", "1 ms", "10 ms", "100 ms", "1 s"}, 7);
  assert_true(t.lo == 100 && t.hi == 1e10);
  nsl_ticks_log(1, 1e12, 5, NSL_UNIT_NUMBER, &t, &err);   /* every third power */
  assert_labels(&t, (const char *[]){"1", "1000", "1M", "1G", "1T"}, 5);
  assert_true(t.step == 1000);
  nsl_ticks_log(1, 1e12, 4, NSL_UNIT_NUMBER, &t, &err);   /* every fifth */
  assert_labels(&t, (const char *[]){"1", "100k", "10G"}, 3);
  nsl_ticks_log(1, 1073741824.0, 8, NSL_UNIT_BYTES, &t, &err);
  assert_labels(&t, (const char *[]){"1 B", "1 KiB", "1 MiB", "1 GiB"}, 4);
  nsl_ticks_log(64, 16 * 1048576.0, 5, NSL_UNIT_BYTES, &t, &err);   /* too few KiB/MiB: every 2^5 */
  assert_labels(&t, (const char *[]){"1 KiB", "32 KiB", "1 MiB"}, 3);
  assert_true(t.step == 32);
  nsl_ticks_log(3, 200, 10, NSL_UNIT_BYTES, &t, &err);
  assert_labels(&t, (const char *[]){"4 B", "8 B", "16 B", "32 B", "64 B", "128 B"}, 6);
  nsl_ticks_log(1, 50, 10, NSL_UNIT_NUMBER, &t, &err);   /* under two decades: 1-2-5 */
  assert_labels(&t, (const char *[]){"1", "2", "5", "10", "20", "50"}, 6);
  nsl_ticks_log(0.001, 0.5, 10, NSL_UNIT_PERCENT, &t, &err);
  assert_labels(&t, (const char *[]){"0.1%", "1%", "10%"}, 3);
  nsl_ticks_log(2.1, 2.9, 5, NSL_UNIT_NUMBER, &t, &err);   /* no 1-2-5 inside: linear */
  assert_true(t.n >= 2 && t.value[0] >= 2.1 && t.value[t.n - 1] <= 2.9);
  nsl_ticks_log(1e-300, 1e300, 10, NSL_UNIT_NUMBER, &t, &err);
  assert_true(t.n >= 2 && t.n <= 10);
  assert_int_equal(nsl_ticks_log(0, 10, 5, NSL_UNIT_NUMBER, &t, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_ticks_log(-1, 10, 5, NSL_UNIT_NUMBER, &t, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_ticks_log(1, NAN, 5, NSL_UNIT_NUMBER, &t, &err), NSL_ERR_ARG);
  assert_int_equal(t.n, 0);
}

static void test_format_value(void **state) {
  (void)state;
  char b[32];
  assert_string_equal(nsl_format_value(1234567, NSL_UNIT_NS, 3, b, sizeof b), "1.23 ms");
  assert_string_equal(nsl_format_value(999.96, NSL_UNIT_NS, 3, b, sizeof b), "1 \xc2\xb5s");
  assert_string_equal(nsl_format_value(-2500, NSL_UNIT_NS, 3, b, sizeof b), "-2.5 \xc2\xb5s");
  assert_string_equal(nsl_format_value(42, NSL_UNIT_NS, 3, b, sizeof b), "42 ns");
  assert_string_equal(nsl_format_value(3.6e12, NSL_UNIT_NS, 3, b, sizeof b), "3600 s");
  assert_string_equal(nsl_format_value(1536, NSL_UNIT_BYTES, 3, b, sizeof b), "1.5 KiB");
  assert_string_equal(nsl_format_value(1023.9, NSL_UNIT_BYTES, 3, b, sizeof b), "1 KiB");
  assert_string_equal(nsl_format_value(0.125, NSL_UNIT_PERCENT, 3, b, sizeof b), "12.5%");
  assert_string_equal(nsl_format_value(0, NSL_UNIT_PERCENT, 3, b, sizeof b), "0%");
  assert_string_equal(nsl_format_value(0, NSL_UNIT_NS, 3, b, sizeof b), "0");
  assert_string_equal(nsl_format_value(12345, NSL_UNIT_NUMBER, 3, b, sizeof b), "12.3k");
  assert_string_equal(nsl_format_value(1500, NSL_UNIT_NUMBER, 3, b, sizeof b), "1500");
  assert_string_equal(nsl_format_value(2.5e9, NSL_UNIT_NUMBER, 2, b, sizeof b), "2.5G");
  assert_string_equal(nsl_format_value(0.000123, NSL_UNIT_NUMBER, 3, b, sizeof b), "0.000123");
  assert_string_equal(nsl_format_value(NAN, NSL_UNIT_NUMBER, 3, b, sizeof b), "nan");
  assert_string_equal(nsl_format_value(-INFINITY, NSL_UNIT_NS, 3, b, sizeof b), "-inf");
  assert_string_equal(nsl_format_value(1e300, NSL_UNIT_NUMBER, 3, b, sizeof b), "1e+300");
  char small[4];
  assert_string_equal(nsl_format_value(123456, NSL_UNIT_NS, 3, small, sizeof small), "123");
}

/* ---- colours ------------------------------------------------------------------ */

static double luma(nsl_rgba c) {
  return 0.2126 * NSL_RGBA_R(c) + 0.7152 * NSL_RGBA_G(c) + 0.0722 * NSL_RGBA_B(c);
}

static void test_colours(void **state) {
  (void)state;
  /* Okabe & Ito (2008) */
  static const nsl_rgba oi[8] = {0xe69f00ffu, 0x56b4e9ffu, 0x009e73ffu, 0xf0e442ffu,
                                 0x0072b2ffu, 0xd55e00ffu, 0xcc79a7ffu, 0x000000ffu};
  for (int i = 0; i < 8; i++) assert_int_equal(nsl_palette(i), oi[i]);
  assert_int_equal(nsl_palette(-5), oi[0]);
  /* the extension: deterministic, opaque, distinct from each other */
  for (int i = 0; i < 40; i++) {
    assert_int_equal(nsl_palette(i), nsl_palette(i));
    assert_int_equal(NSL_RGBA_A(nsl_palette(i)), 255);
    for (int j = 0; j < i; j++) assert_int_not_equal(nsl_palette(i), nsl_palette(j));
  }
  assert_true(luma(nsl_palette(8)) > luma(nsl_palette(0)));    /* lighter */
  assert_true(luma(nsl_palette(16)) < luma(nsl_palette(0)));   /* darker */

  /* viridis end points and middle (matplotlib: #440154, #21918c, #fde725) */
  assert_int_equal(nsl_colormap(0), 0x440154ffu);
  assert_int_equal(nsl_colormap(-3), 0x440154ffu);
  assert_int_equal(nsl_colormap(1), 0xfde725ffu);
  assert_int_equal(nsl_colormap(7), 0xfde725ffu);
  nsl_rgba mid = nsl_colormap(0.5);
  assert_in_range(NSL_RGBA_R(mid), 0x1f, 0x23);
  assert_in_range(NSL_RGBA_G(mid), 0x8f, 0x92);
  assert_in_range(NSL_RGBA_B(mid), 0x8b, 0x8d);
  for (int i = 1; i <= 100; i++)   /* lightness grows with t */
    assert_true(luma(nsl_colormap(i / 100.0)) > luma(nsl_colormap((i - 1) / 100.0)));
  assert_int_equal(nsl_colormap(NAN), 0xd9d9d9ffu);

  nsl_rgba c = 0;
  char buf[10];
  assert_int_equal(nsl_rgba_parse("#E69F00", &c, NULL), NSL_OK);
  assert_int_equal(c, 0xe69f00ffu);
  assert_int_equal(nsl_rgba_parse("0072b280", &c, NULL), NSL_OK);
  assert_int_equal(c, 0x0072b280u);
  assert_int_equal(nsl_rgba_parse("#fff", &c, NULL), NSL_OK);
  assert_int_equal(c, NSL_WHITE);
  nsl_error err = {0};
  assert_int_equal(nsl_rgba_parse("#12345g", &c, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "#12345g"));
  assert_int_equal(c, NSL_WHITE);
  assert_int_equal(nsl_rgba_parse("", &c, NULL), NSL_ERR_ARG);
  assert_int_equal(nsl_rgba_parse(NULL, &c, NULL), NSL_ERR_ARG);
  assert_int_equal(nsl_rgba_parse("#1234567", &c, NULL), NSL_ERR_ARG);
  assert_string_equal(nsl_rgba_format(0xe69f00ffu, buf), "#e69f00");
  assert_string_equal(nsl_rgba_format(0x0072b280u, buf), "#0072b280");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_xml_checker_itself),
      cmocka_unit_test(test_canvas_new_bounds),
      cmocka_unit_test(test_clear_and_rect),
      cmocka_unit_test(test_rect_area_exact),
      cmocka_unit_test(test_rect_stroke),
      cmocka_unit_test(test_rects_batch),
      cmocka_unit_test(test_lines),
      cmocka_unit_test(test_dashed_line),
      cmocka_unit_test(test_polyline_composited_once),
      cmocka_unit_test(test_polygon),
      cmocka_unit_test(test_circle),
      cmocka_unit_test(test_stroke_area),
      cmocka_unit_test(test_clip_and_opacity),
      cmocka_unit_test(test_text_measure),
      cmocka_unit_test(test_text_ink_in_measured_box),
      cmocka_unit_test(test_text_bad_input),
      cmocka_unit_test(test_chart_png_not_blank),
      cmocka_unit_test(test_chart_svg_well_formed),
      cmocka_unit_test(test_svg_clear_and_groups),
      cmocka_unit_test(test_svg_rects_batch),
      cmocka_unit_test(test_svg_numbers),
      cmocka_unit_test(test_png_noise),
      cmocka_unit_test(test_random_input_never_crashes),
      cmocka_unit_test_setup_teardown(test_write_files, setup_tmpdir, teardown_tmpdir),
      cmocka_unit_test(test_ticks_linear),
      cmocka_unit_test(test_ticks_edge_ranges),
      cmocka_unit_test(test_ticks_properties),
      cmocka_unit_test(test_ticks_log),
      cmocka_unit_test(test_format_value),
      cmocka_unit_test(test_colours),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
