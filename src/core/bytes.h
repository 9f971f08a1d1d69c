/* bytes.h -- flat byte messages: a growing buffer to append values to, and
 * a bounded reader that takes them back in the same order (host byte order:
 * both ends are the same build).  Row filters (rowfilter.c) and a
 * distributed run's requests (src/mpi/dist.c) are encoded with them. */
#ifndef NSL_CORE_BYTES_H
#define NSL_CORE_BYTES_H
#include <stddef.h>

/* A message being written: p (malloc'd, len bytes used of cap); oom set
 * once an allocation failed (every later put is then ignored). */
typedef struct nsl_bytes_out {
  char *p;
  size_t len, cap;
  int oom;
} nsl_bytes_out;

/* Appends n bytes of src. */
void nsl__bytes_put(nsl_bytes_out *m, const void *src, size_t n);
/* Appends a string: u32 length, bytes (NULL as ""). */
void nsl__bytes_put_str(nsl_bytes_out *m, const char *s);

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
