/* bytes.c -- flat byte messages (bytes.h). */
#include "core/bytes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void nsl__bytes_put(nsl__text *m, const void *src, size_t n) {
  if (n) nsl__text_addn(m, src, n);
}

void nsl__bytes_put_str(nsl__text *m, const char *s) {
  if (!s) s = "";
  uint32_t n = (uint32_t)strlen(s);
  nsl__bytes_put(m, &n, sizeof n);
  nsl__bytes_put(m, s, n);
}

void nsl__bytes_get(nsl_bytes_in *r, void *dst, size_t n) {
  if (r->bad || n > r->len - r->at) {
    r->bad = 1;
    memset(dst, 0, n);
    return;
  }
  memcpy(dst, r->p + r->at, n);
  r->at += n;
}

char *nsl__bytes_get_str(nsl_bytes_in *r) {
  uint32_t n = 0;
  nsl__bytes_get(r, &n, sizeof n);
  if (r->bad || n > r->len - r->at) {
    r->bad = 1;
    return strdup("");
  }
  char *s = malloc((size_t)n + 1);
  if (s) {
    memcpy(s, r->p + r->at, n);
    s[n] = '\0';
  }
  r->at += n;
  return s;
}
