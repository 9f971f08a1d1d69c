/* error.c -- error records and the library version. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
