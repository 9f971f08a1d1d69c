/* big_alloc.c -- memory for large arrays: scratch buffers 2 MiB aligned and
 * marked for transparent huge pages, the huge-page hint for column buffers
 * allocated elsewhere, and a small cache of freed large blocks
 * (big_alloc.h). */
#include "core/big_alloc.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
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

/* ---- the cache of freed large blocks ----------------------------------------
 * glibc serves a block this large (big_alloc.h) with mmap and unmaps it on
 * free, so the next filter or sort of the same length faults in fresh pages
 * that the kernel zeroes (the largest single cost of an analysis at 1 GB).
 * A freed block is kept instead, and the next request it fits takes it.  To
 * keep the peak near glibc's own: a large request no kept block fits first
 * frees them all, a block is only taken for a request of at least 3/4 its
 * size, and a block is only kept within the room below the peak so far
 * (nsl__big_free).  Off under AddressSanitizer (NSL_BIG_KEEP, big_alloc.h). */
enum { BIG_SLOTS = NSL_BIG_KEEP_BLOCKS };

static struct {
  pthread_mutex_t lock;
  void *p[BIG_SLOTS];
  size_t size[BIG_SLOTS];   /* malloc_usable_size, fixed while kept */
  int n;
  size_t bytes;
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A kept block of at least `bytes` and at most 4/3 of it, taken out of the
 * cache; NULL when none fits, after freeing every kept block (see above). */
static void *take_kept(size_t bytes) {
#if NSL_BIG_KEEP
  void *drop[BIG_SLOTS], *p = NULL;
  int ndrop = 0;
  pthread_mutex_lock(&kept.lock);
  int best = -1;
  for (int i = 0; i < kept.n; i++)
    if (kept.size[i] >= bytes && kept.size[i] - bytes <= bytes / 3 && (best < 0 || kept.size[i] < kept.size[best]))
      best = i;
  if (best >= 0) {
    p = kept.p[best];
    kept.bytes -= kept.size[best];
    kept.n--;
    kept.p[best] = kept.p[kept.n];
    kept.size[best] = kept.size[kept.n];
  } else {
    for (int i = 0; i < kept.n; i++) drop[ndrop++] = kept.p[i];
    kept.n = 0;
    kept.bytes = 0;
  }
  pthread_mutex_unlock(&kept.lock);
  for (int i = 0; i < ndrop; i++) free(drop[i]);   /* outside the lock: munmap is slow */
  return p;
#else
  (void)bytes;
  return NULL;
#endif
}

#if NSL_BIG_KEEP
/* How far the process's resident memory is below its peak so far
 * (/proc/self/status: VmHWM - VmRSS); 0 when unknown. */
static size_t rss_headroom(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[128];
  unsigned long long rss = 0, hwm = 0, v;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "VmHWM: %llu kB", &v) == 1) hwm = v;
    else if (sscanf(line, "VmRSS: %llu kB", &v) == 1) rss = v;
  }
  fclose(f);
  return hwm > rss ? (size_t)(hwm - rss) << 10 : 0;
}
#endif

/* See big_alloc.h. */
void nsl__big_free(void *p) {
#if NSL_BIG_KEEP
  if (!p) return;
  size_t size = malloc_usable_size(p);
  /* Kept blocks stay resident: while the process grows towards a new peak
   * (memory allocated but not yet written, other allocations), they would
   * add to it.  So a block is kept only where all kept blocks fit in the
   * room below the peak so far, the phase of transient work after a load. */
  if (size >= NSL_BIG_KEEP_MIN && rss_headroom() >= nsl__big_kept_bytes() + size) {
    pthread_mutex_lock(&kept.lock);
    int keep = kept.n < BIG_SLOTS && kept.bytes + size <= NSL_BIG_KEEP_BYTES;
    if (keep) {
      kept.p[kept.n] = p;
      kept.size[kept.n++] = size;
      kept.bytes += size;
    }
    pthread_mutex_unlock(&kept.lock);
    if (keep) return;
  }
#endif
  free(p);
}

/* See big_alloc.h. */
void nsl__malloc_policy(void) {
#ifdef M_MMAP_THRESHOLD
  (void)mallopt(M_MMAP_THRESHOLD, (int)NSL_BIG_MIN);
#endif
}

/* See big_alloc.h. */
void nsl__big_release_kept(void) { (void)take_kept(SIZE_MAX); }

/* See big_alloc.h. */
void nsl__heap_trim(void) { (void)malloc_trim(0); }

/* See big_alloc.h. */
void nsl__big_trim(void) {
  nsl__big_release_kept();
  nsl__heap_trim();
}

/* See big_alloc.h. */
size_t nsl__big_kept_bytes(void) {
  pthread_mutex_lock(&kept.lock);
  size_t b = kept.bytes;
  pthread_mutex_unlock(&kept.lock);
  return b;
}

/* See big_alloc.h. */
void *nsl__big_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  size_t bytes = n * size;
  if (bytes < NSL_BIG_MIN) return calloc(bytes ? bytes : 1, 1);
  void *p = take_kept(bytes);   /* frees the kept blocks when none fits */
  if (p) return memset(p, 0, bytes);
  /* fresh mapped memory calloc need not clear; marked for huge pages before
   * its first write, it costs one fault per 2 MiB instead of per 4 KiB */
  if ((p = calloc(bytes, 1))) nsl__advise_huge(p, bytes);
  return p;
}

/* See big_alloc.h. */
void *nsl__big_alloc(size_t bytes) {
  const size_t huge = (size_t)2 << 20;
  if (bytes < NSL_BIG_MIN) return malloc(bytes ? bytes : 1);
  void *p = take_kept(bytes);   /* frees the kept blocks when none fits */
  if (p) return p;
  size_t size = (bytes + huge - 1) & ~(huge - 1);
  /* the whole huge pages of the block only: a last one partly used would be
   * faulted in whole, memory that was never asked for */
  if ((p = aligned_alloc(huge, size))) nsl__advise_huge(p, bytes);
  return p;
}
