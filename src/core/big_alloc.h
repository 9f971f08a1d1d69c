/* big_alloc.h -- memory for large arrays (core internal; no Lua, no I/O). */
#ifndef NSL_CORE_BIG_ALLOC_H
#define NSL_CORE_BIG_ALLOC_H

#include <stddef.h>

/* malloc for large scratch arrays (free with free()): 2 MiB aligned and
 * marked for transparent huge pages where the OS offers them, so random
 * access into big hash tables and radix buckets is not dominated by TLB
 * misses (page walks are dear, above all in virtual machines). */
void *nsl__big_alloc(size_t bytes);
/* nsl__big_alloc, zero-filled; NULL on overflow. */
void *nsl__big_calloc(size_t n, size_t size);
/* Marks the 2 MiB-aligned interior of [p, p + bytes) for huge pages (for
 * large arrays allocated elsewhere, before they are first touched). */
void nsl__advise_huge(void *p, size_t bytes);

#endif
