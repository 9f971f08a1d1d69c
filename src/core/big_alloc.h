/* big_alloc.h -- memory for large arrays (core internal; no Lua, no I/O). */
#ifndef NSL_CORE_BIG_ALLOC_H
#define NSL_CORE_BIG_ALLOC_H

#include <stddef.h>

/* Blocks of NSL_BIG_MIN bytes and more are 2 MiB aligned.  Blocks of
 * NSL_BIG_KEEP_MIN and more are kept for reuse when freed with nsl__big_free
 * (NSL_BIG_KEEP), NSL_BIG_KEEP_BLOCKS and NSL_BIG_KEEP_BYTES at most: under
 * the process's malloc policy (nsl__malloc_policy) glibc maps each of them
 * on its own and unmaps it when freed, so the next one would fault in fresh
 * pages.  (Under glibc's default policy, which the nsl command does not use,
 * blocks under 32 MiB come from its heap and keeping them would only make
 * other allocations grow it.)  Not under a sanitizer's malloc
 * (NSL_SANITIZER_MALLOC), which must see every free to find a use after it. */
#define NSL_BIG_MIN ((size_t)4 << 20)
#define NSL_BIG_KEEP_MIN ((size_t)4 << 20)
#define NSL_BIG_KEEP_BLOCKS 16
#define NSL_BIG_KEEP_BYTES ((size_t)1 << 30)
/* 1 where a sanitizer's runtime (AddressSanitizer, ThreadSanitizer,
 * MemorySanitizer) has a malloc of its own, which must see every block as
 * it is asked for and freed: then no block is kept (NSL_BIG_KEEP) and the
 * command does not ask glibc's malloc for huge pages (src/cli/main.c). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NSL_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define NSL_SANITIZER_MALLOC 1
#endif
#endif
#ifndef NSL_SANITIZER_MALLOC
#define NSL_SANITIZER_MALLOC 0
#endif
#define NSL_BIG_KEEP (!NSL_SANITIZER_MALLOC)

/* malloc for large arrays (free with nsl__big_free): 2 MiB aligned and
 * marked for transparent huge pages where the OS offers them, so random
 * access into big hash tables and radix buckets is not dominated by TLB
 * misses (page walks are dear, above all in virtual machines); a large
 * block may be one freed earlier (nsl__big_free), whose pages need no fault
 * and no zeroing by the kernel.  Safe from any thread. */
void *nsl__big_alloc(size_t bytes);
/* nsl__big_alloc, zero-filled (not 2 MiB aligned); NULL on overflow. */
void *nsl__big_calloc(size_t n, size_t size);
/* free for any malloc'd block (NULL too): one of NSL_BIG_KEEP_MIN or more is kept for
 * the next nsl__big_alloc it fits, within a bound (see above); plain
 * free() of a nsl__big_alloc block stays correct, it just is not kept. */
void nsl__big_free(void *p);
/* The process's malloc policy, set once at start (before the first large
 * allocation): blocks of NSL_BIG_MIN and more always mapped on their own
 * and unmapped when freed (nsl__big_free keeps some for reuse).  glibc's
 * default raises that threshold with every such block freed, up to 32 MiB,
 * and then serves them from its heap, where the freed ones stay resident
 * between live ones: at 1 GB, diagnose kept 120-200 MB more resident and
 * peaked at 1,393 MiB against 1,274. */
void nsl__malloc_policy(void);
/* Frees every kept block (when a trace closes: memory back to the OS). */
void nsl__big_release_kept(void);
/* Gives back what is freed but held: every kept block, and malloc's free
 * heap pages (malloc_trim).  For the end of a phase whose blocks the next
 * one would not reuse (nsl view after its run of diagnose): held, they
 * add to the next phase's peak. */
void nsl__big_trim(void);
/* Gives malloc's free heap pages back (malloc_trim) and nothing else: for
 * a phase that frees many small blocks while it allocates a large one. */
void nsl__heap_trim(void);
/* Bytes kept now (malloc_usable_size of each kept block). */
size_t nsl__big_kept_bytes(void);
/* Marks the 2 MiB-aligned interior of [p, p + bytes) for huge pages (for
 * large arrays allocated elsewhere, before they are first touched). */
void nsl__advise_huge(void *p, size_t bytes);

#endif
