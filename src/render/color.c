/*
 * color.c -- categorical palette (Okabe-Ito, then a deterministic
 * extension), the sequential heatmap colour map, and colour text.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nsl/render.h"

/* Okabe & Ito (2008), "Color Universal Design": distinguishable under the
 * common colour-vision deficiencies.  Black last: it is the axes' colour. */
static const nsl_rgba okabe_ito[NSL_PALETTE_BASE] = {
    0xe69f00ffu,   /* orange */
    0x56b4e9ffu,   /* sky blue */
    0x009e73ffu,   /* bluish green */
    0xf0e442ffu,   /* yellow */
    0x0072b2ffu,   /* blue */
    0xd55e00ffu,   /* vermillion */
    0xcc79a7ffu,   /* reddish purple */
    0x000000ffu,   /* black */
};

/* Mixes c towards target (0 = c, 1 = target), opaque. */
static nsl_rgba mix(nsl_rgba c, unsigned target, double amount) {
  unsigned r = NSL_RGBA_R(c), g = NSL_RGBA_G(c), b = NSL_RGBA_B(c);
  r = (unsigned)lround(r + (double)((int)target - (int)r) * amount);
  g = (unsigned)lround(g + (double)((int)target - (int)g) * amount);
  b = (unsigned)lround(b + (double)((int)target - (int)b) * amount);
  return NSL_RGBA(r, g, b, 255);
}

nsl_rgba nsl_palette(int i) {
  if (i < 0) i = 0;
  int base = i % NSL_PALETTE_BASE, round = i / NSL_PALETTE_BASE;
  nsl_rgba c = okabe_ito[base];
  if (round == 0) return c;
  /* rounds alternate lighter / darker, each pair further from the base:
   * 1 lighter 40%, 2 darker 40%, 3 lighter 64%, 4 darker 64%, ... (<= 85%) */
  int level = (round + 1) / 2;
  double amount = 1 - pow(0.6, level);
  if (amount > 0.85) amount = 0.85;
  if (round % 2 == 1) return mix(c, 255, amount);
  if (base == 7) return mix(c, 255, amount / 2);   /* black cannot get darker: dark greys */
  return mix(c, 0, amount);
}

/* viridis (Stéfan van der Walt and Nathaniel Smith, matplotlib, CC0) at
 * t = 0, 0.1, ..., 1 */
static const nsl_rgba viridis[11] = {
    0x440154ffu, 0x482576ffu, 0x414487ffu, 0x35608dffu, 0x2a788effu, 0x21908cffu,
    0x22a884ffu, 0x43bf71ffu, 0x7ad151ffu, 0xbbdf27ffu, 0xfde725ffu,
};

nsl_rgba nsl_colormap(double t) {
  if (isnan(t)) return 0xd9d9d9ffu;
  if (t <= 0) return viridis[0];
  if (t >= 1) return viridis[10];
  double x = t * 10;
  int k = (int)x;
  if (k > 9) k = 9;
  double f = x - k;
  nsl_rgba a = viridis[k], b = viridis[k + 1];
  unsigned r = (unsigned)lround(NSL_RGBA_R(a) + ((double)NSL_RGBA_R(b) - NSL_RGBA_R(a)) * f);
  unsigned g = (unsigned)lround(NSL_RGBA_G(a) + ((double)NSL_RGBA_G(b) - NSL_RGBA_G(a)) * f);
  unsigned bl = (unsigned)lround(NSL_RGBA_B(a) + ((double)NSL_RGBA_B(b) - NSL_RGBA_B(a)) * f);
  return NSL_RGBA(r, g, bl, 255);
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

nsl_status nsl_rgba_parse(const char *text, nsl_rgba *out, nsl_error *err) {
  if (text == NULL) return nsl_error_set(err, NSL_ERR_ARG, "no colour given");
  const char *s = text[0] == '#' ? text + 1 : text;
  size_t n = strlen(s);
  int d[8];
  if (n != 3 && n != 6 && n != 8) goto bad;
  for (size_t k = 0; k < n; k++)
    if ((d[k] = hexval((unsigned char)s[k])) < 0) goto bad;
  if (n == 3) {
    *out = NSL_RGBA(d[0] * 17, d[1] * 17, d[2] * 17, 255);
  } else {
    unsigned a = n == 8 ? (unsigned)(d[6] * 16 + d[7]) : 255u;
    *out = NSL_RGBA(d[0] * 16 + d[1], d[2] * 16 + d[3], d[4] * 16 + d[5], a);
  }
  return NSL_OK;
bad:
  return nsl_error_set(err, NSL_ERR_ARG, "invalid colour '%.64s': expected #rgb, #rrggbb or #rrggbbaa", text);
}

char *nsl_rgba_format(nsl_rgba c, char *buf) {
  if (NSL_RGBA_A(c) == 255)
    snprintf(buf, 10, "#%06x", (unsigned)(c >> 8));
  else
    snprintf(buf, 10, "#%08x", (unsigned)c);
  return buf;
}
