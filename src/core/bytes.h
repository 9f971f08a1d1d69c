/* bytes.h -- flat byte messages: values appended to a growing buffer (an
 * nsl__text), and a bounded reader that takes them back in the same order
 * (host byte order: both ends are the same build).  Row filters
 * (rowfilter.c) and a distributed run's requests (src/mpi/dist.c) are
 * encoded with them. */
#ifndef NSL_CORE_BYTES_H
#define NSL_CORE_BYTES_H
#include <stddef.h>

#include "core/text.h"

/* A message is written into an nsl__text (text.h: m.s, m.len; m.oom set
 * once an allocation failed, every later put then ignored).  Appends n
 * bytes of src (n = 0: nothing, src may be NULL). */
void nsl__bytes_put(nsl__text *m, const void *src, size_t n);
/* Appends a string: u32 length, bytes (NULL as ""). */
void nsl__bytes_put_str(nsl__text *m, const char *s);

/* A message being read: p[at..len); bad set once a take ran past the end. */
typedef struct nsl_bytes_in {
  const char *p;
  size_t len, at;
  int bad;
} nsl_bytes_in;

/* Takes n bytes into dst (zeros, and bad set, past the end). */
void nsl__bytes_get(nsl_bytes_in *r, void *dst, size_t n);
/* Takes a string of nsl__bytes_put_str: a new one (release with free()),
 * "" with bad set past the end, NULL out of memory. */
char *nsl__bytes_get_str(nsl_bytes_in *r);

#endif
