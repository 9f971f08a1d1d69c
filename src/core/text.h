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

/* Appends s to t as one POSIX shell word: as it is when it holds only
 * characters no shell treats specially (letters, digits, . _ / - + : , = @),
 * else in single quotes, a ' inside as '\''.  The one quoting of the
 * commands nsl suggests in its messages (nsl.shell_word in Lua). */
void nsl__text_add_shell_word(nsl__text *t, const char *s);

/* The length (1 to 4) of the valid UTF-8 character at s, n bytes left; 0
 * when none starts there (a stray continuation byte, an overlong form, a
 * surrogate, past U+10FFFF, or cut short by n). */
size_t nsl__utf8_len(const unsigned char *s, size_t n);

/* What a terminal may receive of s (n >= 1 bytes left): > 0, the length of
 * the character at s, safe to write as it is; < 0, -k: the k bytes at s
 * must be written as visible escapes -- a C0 control (below 0x20; tab and
 * line feed are safe when keep_layout, carriage return never: it rewrites a
 * line), DEL, a C1 control (U+0080..U+009F, k = 2) or a byte that starts no
 * valid UTF-8 character (k = 1).  ESC, and with it OSC 52, title and
 * clear-screen sequences, is C0. */
int nsl__terminal_safe(const unsigned char *s, size_t n, int keep_layout);

/* Appends s[0..n) to t with what a terminal must not receive written as
 * \xNN, one escape per byte ("\x1b]52;c;..."); the rest as it is. */
void nsl__text_add_printable(nsl__text *t, const char *s, size_t n, int keep_layout);

#endif
