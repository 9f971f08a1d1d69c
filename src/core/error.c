/* error.c -- error records, strings made to measure, the library version. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "nsl/nsl.h"

/* Fills err (when not NULL) with code and a formatted message; returns code. */
nsl_status nsl_error_set(nsl_error *err, nsl_status code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

void nsl_error_clear(nsl_error *err) {
  if (err) {
    err->code = NSL_OK;
    err->msg[0] = '\0';
  }
}

const char *nsl_version(void) { return NSL_VERSION; }

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
