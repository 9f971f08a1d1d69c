/*
 * text.c -- the embedded font (DejaVu Sans, through stb_truetype): UTF-8
 * decoding, measurement, glyph walks and a per-canvas glyph bitmap cache.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* libstb.so holds the implementation; this is the declarations only. */
#include <stb_truetype.h>

#include "render/render_internal.h"

/* Generated at build time from DejaVuSans.ttf (see CMakeLists.txt). */
extern const unsigned char nsl__font_ttf[];
extern const size_t nsl__font_ttf_len;

static stbtt_fontinfo font;
static int font_ok;
static int font_ascent, font_descent;   /* font units; descent negative */
static pthread_once_t font_once = PTHREAD_ONCE_INIT;

static void font_init(void) {
  int off = stbtt_GetFontOffsetForIndex(nsl__font_ttf, 0);
  if (off < 0 || !stbtt_InitFont(&font, nsl__font_ttf, off)) return;
  int gap;
  stbtt_GetFontVMetrics(&font, &font_ascent, &font_descent, &gap);
  font_ok = 1;
}

/* The font, initialised once for the process; NULL if unusable. */
static const stbtt_fontinfo *get_font(void) {
  pthread_once(&font_once, font_init);
  return font_ok ? &font : NULL;
}

uint32_t nsl__utf8_next(const unsigned char **s) {
  const unsigned char *p = *s;
  uint32_t c = p[0];
  if (c == 0) return 0;
  if (c < 0x80) {
    *s = p + 1;
    return c;
  }
  int n;
  uint32_t min;
  if ((c & 0xe0) == 0xc0) {
    n = 1, min = 0x80, c &= 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 2, min = 0x800, c &= 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 3, min = 0x10000, c &= 0x07;
  } else {
    *s = p + 1;
    return 0xfffd;
  }
  for (int k = 1; k <= n; k++) {
    if ((p[k] & 0xc0) != 0x80) {   /* also stops at the NUL */
      *s = p + 1;
      return 0xfffd;
    }
    c = c << 6 | (p[k] & 0x3f);
  }
  if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
    *s = p + 1;
    return 0xfffd;
  }
  *s = p + n + 1;
  return c;
}

int nsl__is_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

double nsl__bold_extra(double size) {
  return size / 16.0;
}

int nsl__text_begin(nsl__text_iter *it, const char *utf8, double size, int bold) {
  const stbtt_fontinfo *f = get_font();
  memset(it, 0, sizeof *it);
  it->s = (const unsigned char *)(utf8 ? utf8 : "");
  if (f == NULL || !(size > 0) || !isfinite(size)) return 0;
  it->scale = stbtt_ScaleForMappingEmToPixels(f, (float)size);
  it->bold_extra = bold ? nsl__bold_extra(size) : 0.0;
  return 1;
}

int nsl__text_next(nsl__text_iter *it, int *glyph, double *pen) {
  const stbtt_fontinfo *f = get_font();
  if (f == NULL) return 0;
  for (;;) {
    uint32_t cp = nsl__utf8_next(&it->s);
    if (cp == 0) return 0;
    if (nsl__is_control(cp)) continue;
    int g = stbtt_FindGlyphIndex(f, (int)cp);
    if (it->prev) it->pen += it->scale * stbtt_GetGlyphKernAdvance(f, it->prev, g);
    *glyph = g;
    *pen = it->pen;
    int adv, lsb;
    stbtt_GetGlyphHMetrics(f, g, &adv, &lsb);
    it->pen += it->scale * adv + it->bold_extra;
    it->prev = g;
    return 1;
  }
}

double nsl_text_width(const char *utf8, double size, int bold) {
  nsl__text_iter it;
  if (utf8 == NULL || !nsl__text_begin(&it, utf8, size, bold)) return 0.0;
  int g;
  double pen;
  while (nsl__text_next(&it, &g, &pen)) {
  }
  return it.pen;
}

void nsl_text_metrics(double size, double *ascent, double *descent) {
  const stbtt_fontinfo *f = get_font();
  double a = 0, d = 0;
  if (f != NULL && size > 0 && isfinite(size)) {
    double scale = stbtt_ScaleForMappingEmToPixels(f, (float)size);
    a = scale * font_ascent;
    d = -scale * font_descent;
  }
  if (ascent) *ascent = a;
  if (descent) *descent = d;
}

void nsl__text_place(const char *utf8, const nsl_style *st, double *dx, double *dy, int *rotation) {
  double size = st->font_size;
  double w = (st->anchor == NSL_ANCHOR_MIDDLE || st->anchor == NSL_ANCHOR_END)
                 ? nsl_text_width(utf8, size, st->bold) : 0.0;
  *dx = st->anchor == NSL_ANCHOR_MIDDLE ? -w / 2 : st->anchor == NSL_ANCHOR_END ? -w : 0.0;
  double asc, desc;
  nsl_text_metrics(size, &asc, &desc);
  switch (st->baseline) {
  case NSL_BASELINE_TOP: *dy = asc; break;
  case NSL_BASELINE_MIDDLE: *dy = (asc - desc) / 2; break;
  case NSL_BASELINE_BOTTOM: *dy = -desc; break;
  default: *dy = 0.0; break;
  }
  int r = st->rotation % 360;
  if (r < 0) r += 360;
  *rotation = r == 90 ? 90 : r == 270 ? -90 : 0;
}

/* ---- glyph cache ------------------------------------------------------ */

typedef struct glyph_entry {
  int used;
  int glyph, size_q, sub, bold;
  nsl__glyph g;
} glyph_entry;

#define CACHE_SLOTS 4096                 /* power of two */
#define CACHE_MAX_ENTRIES (CACHE_SLOTS / 2)
#define CACHE_MAX_BYTES ((size_t)32 << 20)

struct nsl__glyph_cache {
  glyph_entry slot[CACHE_SLOTS];
  int entries;
  size_t bytes;
  nsl__glyph scratch;   /* a glyph too big to keep */
};

nsl__glyph_cache *nsl__glyph_cache_new(void) {
  return calloc(1, sizeof(nsl__glyph_cache));
}

static void cache_flush(nsl__glyph_cache *gc) {
  for (int i = 0; i < CACHE_SLOTS; i++) {
    if (gc->slot[i].used) free(gc->slot[i].g.bits);
    gc->slot[i].used = 0;
  }
  gc->entries = 0;
  gc->bytes = 0;
}

void nsl__glyph_cache_free(nsl__glyph_cache *gc) {
  if (gc == NULL) return;
  cache_flush(gc);
  free(gc->scratch.bits);
  free(gc);
}

/* Renders glyph at scale with x shift `shift` (px) into a new bitmap; for
 * bold, a second copy shifted by the bold extra is merged in (max). */
static int render_glyph(const stbtt_fontinfo *f, int glyph, float scale, float shift, double bold_extra,
                        nsl__glyph *out) {
  int ax0, ay0, ax1, ay1;
  stbtt_GetGlyphBitmapBoxSubpixel(f, glyph, scale, scale, shift, 0.f, &ax0, &ay0, &ax1, &ay1);
  int x0 = ax0, y0 = ay0, x1 = ax1, y1 = ay1;
  int bx0 = 0, by0 = 0, bx1 = 0, by1 = 0;
  float shift2 = shift + (float)bold_extra;
  if (bold_extra > 0) {
    stbtt_GetGlyphBitmapBoxSubpixel(f, glyph, scale, scale, shift2, 0.f, &bx0, &by0, &bx1, &by1);
    if (bx1 > bx0 && by1 > by0) {
      if (bx0 < x0) x0 = bx0;
      if (by0 < y0) y0 = by0;
      if (bx1 > x1) x1 = bx1;
      if (by1 > y1) y1 = by1;
    }
  }
  out->x0 = x0;
  out->y0 = y0;
  out->w = x1 > x0 ? x1 - x0 : 0;
  out->h = y1 > y0 ? y1 - y0 : 0;
  out->bits = NULL;
  if (out->w == 0 || out->h == 0 || ax1 <= ax0 || ay1 <= ay0) {   /* a space */
    out->w = out->h = 0;
    return 1;
  }
  size_t n = (size_t)out->w * (size_t)out->h;
  out->bits = calloc(n, 1);
  if (out->bits == NULL) return 0;
  stbtt_MakeGlyphBitmapSubpixel(f, out->bits + (size_t)(ay0 - y0) * out->w + (ax0 - x0), ax1 - ax0,
                                ay1 - ay0, out->w, scale, scale, shift, 0.f, glyph);
  if (bold_extra > 0 && bx1 > bx0 && by1 > by0) {
    int bw = bx1 - bx0, bh = by1 - by0;
    uint8_t *tmp = calloc((size_t)bw * (size_t)bh, 1);
    if (tmp == NULL) {
      free(out->bits);
      out->bits = NULL;
      return 0;
    }
    stbtt_MakeGlyphBitmapSubpixel(f, tmp, bw, bh, bw, scale, scale, shift2, 0.f, glyph);
    for (int v = 0; v < bh; v++) {
      uint8_t *dst = out->bits + (size_t)(by0 - y0 + v) * out->w + (bx0 - x0);
      const uint8_t *src = tmp + (size_t)v * bw;
      for (int u = 0; u < bw; u++)
        if (src[u] > dst[u]) dst[u] = src[u];
    }
    free(tmp);
  }
  return 1;
}

const nsl__glyph *nsl__glyph_get(nsl__glyph_cache *gc, int glyph, double size, int sub, int bold) {
  const stbtt_fontinfo *f = get_font();
  if (f == NULL || gc == NULL) return NULL;
  int size_q = (int)lround(size * 64.0);
  bold = bold != 0;
  unsigned h = (unsigned)glyph * 2654435761u ^ (unsigned)size_q * 40503u ^ (unsigned)(sub * 2 + bold) * 97u;
  unsigned i = h & (CACHE_SLOTS - 1);
  while (gc->slot[i].used) {
    glyph_entry *e = &gc->slot[i];
    if (e->glyph == glyph && e->size_q == size_q && e->sub == sub && e->bold == bold) return &e->g;
    i = (i + 1) & (CACHE_SLOTS - 1);
  }
  float scale = stbtt_ScaleForMappingEmToPixels(f, (float)size);
  nsl__glyph g;
  if (!render_glyph(f, glyph, scale, (float)sub / 4.0f, bold ? nsl__bold_extra(size) : 0.0, &g)) return NULL;
  size_t bytes = (size_t)g.w * (size_t)g.h;
  if (bytes > CACHE_MAX_BYTES / 8) {   /* huge text: keep it out of the cache */
    free(gc->scratch.bits);
    gc->scratch = g;
    return &gc->scratch;
  }
  if (gc->entries >= CACHE_MAX_ENTRIES || gc->bytes + bytes > CACHE_MAX_BYTES) {
    cache_flush(gc);
    i = h & (CACHE_SLOTS - 1);
  }
  glyph_entry *e = &gc->slot[i];
  e->used = 1;
  e->glyph = glyph;
  e->size_q = size_q;
  e->sub = sub;
  e->bold = bold;
  e->g = g;
  gc->entries++;
  gc->bytes += bytes;
  return &e->g;
}
