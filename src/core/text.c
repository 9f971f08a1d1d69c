/* text.c -- strings made to measure (text.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"

char *nsl__printf_alloc(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

void nsl__text_addn(nsl__text *t, const char *s, size_t n) {
  if (t->oom) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 64;
    while (t->len + n + 1 > cap) cap *= 2;
    char *p = realloc(t->s, cap);
    if (!p) {
      t->oom = 1;
      return;
    }
    t->s = p;
    t->cap = cap;
  }
  memcpy(t->s + t->len, s, n);
  t->len += n;
  t->s[t->len] = '\0';
}

void nsl__text_add(nsl__text *t, const char *s) { nsl__text_addn(t, s, strlen(s)); }

size_t nsl__utf8_len(const unsigned char *s, size_t n) {
  if (n == 0) return 0;
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xF0 && c < 0xF5 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  for (size_t k = 1; k < len; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xF0 && s[1] < 0x90)) return 0;   /* overlong */
  if (c == 0xED && s[1] >= 0xA0) return 0;                                 /* surrogate */
  if (c == 0xF4 && s[1] >= 0x90) return 0;                                 /* past U+10FFFF */
  return len;
}

int nsl__terminal_safe(const unsigned char *s, size_t n, int keep_layout) {
  unsigned c = s[0];
  if (c < 0x20) return keep_layout && (c == '\t' || c == '\n') ? 1 : -1;
  if (c == 0x7F) return -1;
  if (c < 0x80) return 1;
  size_t len = nsl__utf8_len(s, n);
  if (len == 0) return -1;
  if (c == 0xC2 && s[1] < 0xA0) return -2;   /* U+0080..U+009F: C1 controls (CSI, OSC, ...) */
  return (int)len;
}

void nsl__text_add_printable(nsl__text *t, const char *s, size_t n, int keep_layout) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *u = (const unsigned char *)s;
  size_t run = 0, i = 0;
  while (i < n) {
    int k = nsl__terminal_safe(u + i, n - i, keep_layout);
    if (k > 0) {
      i += (size_t)k;
      continue;
    }
    nsl__text_addn(t, s + run, i - run);
    for (int j = 0; j < -k; j++) {
      char e[4] = {'\\', 'x', hex[u[i] >> 4], hex[u[i] & 15]};
      nsl__text_addn(t, e, 4);
      i++;
    }
    run = i;
  }
  nsl__text_addn(t, s + run, n - run);
}

void nsl__text_add_shell_word(nsl__text *t, const char *s) {
  static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-+:,=@";
  size_t n = strlen(s);
  if (n > 0 && strspn(s, plain) == n) {
    nsl__text_addn(t, s, n);
    return;
  }
  nsl__text_addn(t, "'", 1);
  for (const char *q; (q = strchr(s, '\'')) != NULL; s = q + 1) {
    nsl__text_addn(t, s, (size_t)(q - s));
    nsl__text_addn(t, "'\\''", 4);
  }
  nsl__text_add(t, s);
  nsl__text_addn(t, "'", 1);
}
