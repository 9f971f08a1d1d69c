/*
 * test_big_alloc.c -- nsl__big_alloc / nsl__big_calloc / nsl__big_free: a
 * freed large block (NSL_BIG_KEEP_MIN or more) is handed out again (same
 * address) for a request it fits, zero-filled by nsl__big_calloc though it was written; a request it
 * does not fit (too large, or under 3/4 of it) gets fresh memory and frees
 * every kept block (so kept blocks never add to a peak); smaller blocks are
 * never kept; at most NSL_BIG_KEEP_BLOCKS blocks and NSL_BIG_KEEP_BYTES are
 * kept, and only in the room below the process's peak so far;
 * nsl__big_release_kept frees them; and threads allocating, writing and
 * freeing at once never share a block.  Under AddressSanitizer nothing is
 * kept (every free reaches ASan's malloc), which the same checks confirm.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/big_alloc.h"
#include "core/parallel.h"

#define MIB ((size_t)1 << 20)

/* Blocks are kept only in the room below the process's peak so far: make
 * room, a block that large touched and freed to the kernel (once). */
static void make_headroom(void) {
  static int done;
  if (done || !NSL_BIG_KEEP) return;
  size_t n = 640 * MIB;
  char *p = nsl__big_alloc(n);
  assert_non_null(p);
  memset(p, 1, n);
  volatile char last = p[n - 1];   /* the writes happen (not elided before free) */
  assert_int_equal(last, 1);
  free(p);   /* to the kernel: the peak stays, the resident memory falls */
  done = 1;
}

static int setup(void **state) {
  (void)state;
  nsl__big_release_kept();
  make_headroom();
  return 0;
}

/* Run first, at the process's peak: nothing is kept where keeping would
 * raise the peak later. */
static void test_no_headroom_not_kept(void **state) {
  (void)state;
  nsl__big_release_kept();
  size_t n = NSL_BIG_KEEP_MIN + 2 * MIB;
  char *a = nsl__big_alloc(n);
  assert_non_null(a);
  memset(a, 2, n);
  nsl__big_free(a);
  assert_int_equal(nsl__big_kept_bytes(), 0);
}

static void test_reuse_and_zeroing(void **state) {
  (void)state;
  size_t n = 4 * NSL_BIG_KEEP_MIN + 2 * MIB;
  unsigned char *a = nsl__big_alloc(n);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % (2 * MIB), 0);   /* 2 MiB aligned for huge pages */
  memset(a, 0xab, n);
  nsl__big_free(a);
  assert_int_equal(nsl__big_kept_bytes() >= n, NSL_BIG_KEEP);
  unsigned char *b = nsl__big_calloc(n / 8, 8);   /* the same size: takes the kept block */
  assert_non_null(b);
  if (NSL_BIG_KEEP) assert_ptr_equal(a, b);
  assert_int_equal(nsl__big_kept_bytes(), 0);
  for (size_t i = 0; i < n; i += 4093) assert_int_equal(b[i], 0);   /* written 0xab before */
  assert_int_equal(b[n - 1], 0);
  nsl__big_free(b);
  size_t m = n - n / 8;   /* an eighth less: the block (its usable size up to 2 MiB more) still fits */
  unsigned char *c = nsl__big_alloc(m);
  if (NSL_BIG_KEEP) assert_ptr_equal(c, b);
  memset(c, 1, m);
  nsl__big_free(c);
}

static void test_a_miss_frees_the_kept(void **state) {
  (void)state;
  size_t k = NSL_BIG_KEEP_MIN;
  void *a = nsl__big_alloc(2 * k), *b = nsl__big_alloc(k);
  assert_non_null(a);
  assert_non_null(b);
  nsl__big_free(a);
  nsl__big_free(b);
  assert_int_equal(nsl__big_kept_bytes() >= 3 * k, NSL_BIG_KEEP);
  /* 5 MiB fits neither (larger than the one, or under 3/4 of it): fresh
   * memory, and both freed (kept blocks never add to the memory a fresh
   * allocation takes) */
  void *c = nsl__big_alloc(5 * MIB);
  assert_non_null(c);
  assert_int_equal(nsl__big_kept_bytes(), 0);
  free(c);
  /* larger than any kept block: the same */
  nsl__big_free(nsl__big_alloc(k));
  assert_int_equal(nsl__big_kept_bytes() > 0, NSL_BIG_KEEP);
  void *d = nsl__big_calloc(k / MIB + 8, MIB);
  assert_non_null(d);
  assert_int_equal(nsl__big_kept_bytes(), 0);
  nsl__big_free(d);
}

static void test_small_never_kept(void **state) {
  (void)state;
  void *a = nsl__big_alloc(NSL_BIG_MIN / 2), *b = malloc(1000), *c = malloc(NSL_BIG_KEEP_MIN - MIB);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  nsl__big_free(a);
  nsl__big_free(b);
  nsl__big_free(c);
  nsl__big_free(NULL);
  assert_int_equal(nsl__big_kept_bytes(), 0);
}

static void test_bounds_and_release(void **state) {
  (void)state;
  enum { N = NSL_BIG_KEEP_BLOCKS + 4 };
  void *p[N];
  if (!NSL_BIG_KEEP) return;   /* nothing kept; no need to make ASan map 640 MiB */
  /* virtual memory only: never touched */
  for (int i = 0; i < N; i++) assert_non_null(p[i] = nsl__big_alloc(NSL_BIG_KEEP_MIN));
  for (int i = 0; i < N; i++) nsl__big_free(p[i]);
  size_t kept = nsl__big_kept_bytes();
  assert_true(kept <= NSL_BIG_KEEP_BYTES);
  /* NSL_BIG_KEEP_BLOCKS blocks of a little over NSL_BIG_KEEP_MIN each */
  assert_true(kept >= NSL_BIG_KEEP_BLOCKS * NSL_BIG_KEEP_MIN);
  assert_true(kept < (NSL_BIG_KEEP_BLOCKS + 1) * NSL_BIG_KEEP_MIN);
  nsl__big_release_kept();
  assert_int_equal(nsl__big_kept_bytes(), 0);
  /* a block over the byte bound is not kept */
  void *big = nsl__big_alloc(NSL_BIG_KEEP_BYTES + MIB);
  if (big) {
    nsl__big_free(big);
    assert_int_equal(nsl__big_kept_bytes(), 0);
  }
}

/* Each job takes blocks of NSL_BIG_KEEP_MIN to 2 MiB more (so they fit one another's), checks a
 * calloc'd one is zero, fills it with its own byte, checks that no other
 * job wrote into it, and frees it. */
static void job_blocks(void *ctx, int i) {
  int *bad = ctx;
  for (int round = 0; round < 4; round++) {
    size_t n = NSL_BIG_KEEP_MIN + (size_t)((i + round) % 3) * MIB;
    unsigned char *p = round % 2 ? nsl__big_calloc(n, 1) : nsl__big_alloc(n);
    if (!p) {
      __atomic_store_n(bad, 1, __ATOMIC_RELAXED);
      return;
    }
    if (round % 2)
      for (size_t k = 0; k < n; k += 4096)
        if (p[k]) __atomic_store_n(bad, 1, __ATOMIC_RELAXED);
    memset(p, i + 1, n);
    for (size_t k = 0; k < n; k += 4096)
      if (p[k] != (unsigned char)(i + 1)) __atomic_store_n(bad, 1, __ATOMIC_RELAXED);
    nsl__big_free(p);
  }
}

/* nsl__big_trim gives back the kept blocks (and malloc's free heap pages):
 * none kept after it, and the next request is served fresh. */
static void test_trim(void **state) {
  (void)state;
  void *a = nsl__big_alloc(8 * MIB), *b = nsl__big_alloc(8 * MIB);
  assert_non_null(a);
  assert_non_null(b);
  nsl__big_free(a);
  nsl__big_free(b);
  assert_int_equal(nsl__big_kept_bytes() >= 16 * MIB, NSL_BIG_KEEP);
  nsl__big_trim();
  assert_int_equal(nsl__big_kept_bytes(), 0);
  void *c = nsl__big_alloc(8 * MIB);
  assert_non_null(c);
  assert_int_equal(nsl__big_kept_bytes(), 0);
  nsl__big_free(c);
  nsl__big_trim();
  assert_int_equal(nsl__big_kept_bytes(), 0);
}

static void test_threads(void **state) {
  (void)state;
  int bad = 0;
  nsl__run_parallel(6, 3, job_blocks, &bad);
  assert_int_equal(bad, 0);
  assert_true(nsl__big_kept_bytes() <= NSL_BIG_KEEP_BYTES);
  nsl__big_release_kept();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_headroom_not_kept),
      cmocka_unit_test_setup(test_reuse_and_zeroing, setup),
      cmocka_unit_test_setup(test_a_miss_frees_the_kept, setup),
      cmocka_unit_test_setup(test_small_never_kept, setup),
      cmocka_unit_test_setup(test_bounds_and_release, setup),
      cmocka_unit_test_setup(test_trim, setup),
      cmocka_unit_test_setup(test_threads, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
