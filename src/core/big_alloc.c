/* big_alloc.c -- memory for large arrays: scratch buffers 2 MiB aligned and
 * marked for transparent huge pages, and the huge-page hint for column
 * buffers allocated elsewhere (big_alloc.h). */
#include "core/big_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* See big_alloc.h. */
void nsl__advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hi = ((uintptr_t)p + bytes) & ~(huge - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/* See big_alloc.h. */
void *nsl__big_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  void *p = nsl__big_alloc(n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

/* See big_alloc.h. */
void *nsl__big_alloc(size_t bytes) {
  const size_t huge = (size_t)2 << 20;
  if (bytes < 2 * huge) return malloc(bytes ? bytes : 1);
  size_t size = (bytes + huge - 1) & ~(huge - 1);
  void *p = aligned_alloc(huge, size);
#ifdef MADV_HUGEPAGE
  if (p) (void)madvise(p, size, MADV_HUGEPAGE);   /* a hint: failure changes nothing */
#endif
  return p;
}
