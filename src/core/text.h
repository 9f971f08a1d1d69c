/*
 * text.h -- strings made to measure, for the library's own labels and
 * messages (src/core, src/source): never cut at a fixed size.
 */
#ifndef NSL_CORE_TEXT_H
#define NSL_CORE_TEXT_H

/* A new string formatted as printf would (release with free()); NULL when
 * out of memory. */
char *nsl__printf_alloc(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
