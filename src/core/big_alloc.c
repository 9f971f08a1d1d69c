/* big_alloc.c -- memory for large arrays: scratch buffers 2 MiB aligned and
 * marked for transparent huge pages, and the huge-page hint for column
 * buffers allocated elsewhere (big_alloc.h). */
#include "core/big_alloc.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Whether memory this thread allocates may be marked for huge pages.  Not
 * on the thread that draws a full-screen front end (nsl tui): with the
 * kernel's usual `defrag = madvise`, a fault in a marked region compacts
 * memory synchronously, and a key waited 60-90 ms for it while a trace
 * loaded.  Tasks (the background loads) keep the hint. */
static int may_advise(void) { return !nsl__terminal_claimed() || nsl__in_task(); }

/* See big_alloc.h. */
void nsl__advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (!may_advise()) return;
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
  if (p && may_advise()) (void)madvise(p, size, MADV_HUGEPAGE);   /* a hint: failure changes nothing */
#endif
  return p;
}
