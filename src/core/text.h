/*
 * text.h -- strings made to measure, for the library's own labels, messages
 * and generated text (src/core, src/source): never cut at a fixed size.
 */
#ifndef NSL_CORE_TEXT_H
#define NSL_CORE_TEXT_H

#include <stddef.h>

/* A new string formatted as printf would (release with free()); NULL when
 * out of memory. */
char *nsl__printf_alloc(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* A growing string: zero-initialise, add to it, take t.s (malloc'ed,
 * NUL-terminated once anything was added; free() it).  Out of memory sets
 * oom, after which additions are ignored. */
typedef struct nsl__text {
  char *s;
  size_t len, cap;
  int oom;
} nsl__text;
void nsl__text_addn(nsl__text *t, const char *s, size_t n);
void nsl__text_add(nsl__text *t, const char *s);

#endif
