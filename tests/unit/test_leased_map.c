/*
 * test_leased_map.c -- nsl__leased_map: a file mapped under a read lease
 * keeps the values it was mapped with when another process opens it for
 * writing and rewrites it (open with O_TRUNC, then new bytes) or cuts it
 * (truncate(2)): the writer waits until nsl's SIGIO handler has copied the
 * mapping into anonymous memory at the same address, then goes on.  A file
 * left alone is never copied; the slots are given back when unmapped; a
 * file open for writing elsewhere is refused (the caller reads it instead).
 * The moments are states: the writer blocks in the kernel until the lease
 * is given up, and the test waits for the writer's exit.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/leased_map.h"

#define LEN ((size_t)3 << 20)

static char dir[] = "/tmp/nsl-leased-XXXXXX";
static char path[256];

static unsigned char byte_at(size_t i, int seed) { return (unsigned char)((i * 2654435761u >> 7) + (unsigned)seed); }

static void write_file(int seed, size_t len) {
  unsigned char *b = malloc(len);
  assert_non_null(b);
  for (size_t i = 0; i < len; i++) b[i] = byte_at(i, seed);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, b, len), (ssize_t)len);
  close(fd);
  free(b);
}

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(dir)) return -1;
  snprintf(path, sizeof path, "%s/col", dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  rmdir(dir);
  return 0;
}

/* Maps path under a lease; skips the test where this file system grants none. */
static int map_or_skip(void **addr, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  assert_true(fd >= 0);
  int slot = nsl__leased_map(fd, addr, len);
  if (slot < 0) {
    close(fd);
    skip();
  }
  return slot;
}

static int same_as(const void *addr, size_t len, int seed) {
  const unsigned char *p = addr;
  for (size_t i = 0; i < len; i++)
    if (p[i] != byte_at(i, seed)) return 0;
  return 1;
}

/* Runs how(path) in a child and waits for it to end (it blocks on the lease until the handler gives it up). */
static void in_child(int (*how)(void)) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(how());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static int rewrite(void) {   /* as cp over the file does */
  int fd = open(path, O_WRONLY | O_TRUNC);
  if (fd < 0) return 1;
  unsigned char b[4096];
  for (size_t i = 0; i < sizeof b; i++) b[i] = byte_at(i, 99);
  for (size_t off = 0; off < LEN; off += sizeof b)
    if (write(fd, b, sizeof b) != (ssize_t)sizeof b) return 2;
  return close(fd) == 0 ? 0 : 3;
}

static int cut(void) { return truncate(path, 100) == 0 ? 0 : 1; }

static void test_untouched(void **state) {
  (void)state;
  write_file(1, LEN);
  long before = nsl__leased_copies();
  void *addr;
  size_t len;
  int slot = map_or_skip(&addr, &len);
  assert_int_equal(len, LEN);
  assert_true(same_as(addr, len, 1));
  nsl__leased_unmap(slot);
  assert_int_equal(nsl__leased_copies(), before);
  /* the slot and the lease are given back: the file opens for writing at once (no wait) */
  int fd = open(path, O_WRONLY | O_NONBLOCK);
  assert_true(fd >= 0);
  close(fd);
}

/* Maps a file written with seed, lets how() change it from a child, and
 * checks that the mapping was copied once and kept its values at the same
 * address while the writer did its work (the file now size_after bytes). */
static void broken_by(int seed, int (*how)(void), off_t size_after) {
  write_file(seed, LEN);
  long before = nsl__leased_copies();
  void *addr;
  size_t len;
  int slot = map_or_skip(&addr, &len);
  in_child(how);
  assert_int_equal(nsl__leased_copies(), before + 1);
  assert_true(same_as(addr, len, seed));   /* no SIGBUS past a new end, no new bytes */
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, size_after);
  nsl__leased_unmap(slot);
}

static void test_rewritten(void **state) {
  (void)state;
  broken_by(2, rewrite, (off_t)LEN);
}

static void test_cut(void **state) {
  (void)state;
  broken_by(3, cut, 100);
}

static void test_open_for_writing(void **state) {
  (void)state;
  write_file(4, LEN);
  int w = open(path, O_WRONLY);
  assert_true(w >= 0);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  void *addr;
  size_t len;
  assert_int_equal(nsl__leased_map(fd, &addr, &len), -1);   /* a lease is refused while a writer holds it open */
  close(fd);
  close(w);
}

static void test_many(void **state) {
  (void)state;
  write_file(5, 8192);
  int slots[NSL_LEASED_MAX + 1];
  int got = 0;
  for (int i = 0; i <= NSL_LEASED_MAX; i++) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    void *addr;
    size_t len;
    slots[i] = nsl__leased_map(fd, &addr, &len);
    if (slots[i] < 0) close(fd);
    else got++;
  }
  if (got == 0) skip();
  assert_int_equal(got, NSL_LEASED_MAX);   /* the table is full: the last one is read instead */
  assert_int_equal(slots[NSL_LEASED_MAX], -1);
  long before = nsl__leased_copies();
  in_child(cut);   /* every slot's lease broken at once: signals merge, every mapping is copied */
  assert_int_equal(nsl__leased_copies(), before + NSL_LEASED_MAX);
  for (int i = 0; i < NSL_LEASED_MAX; i++) nsl__leased_unmap(slots[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_untouched),
      cmocka_unit_test(test_rewritten),
      cmocka_unit_test(test_cut),
      cmocka_unit_test(test_open_for_writing),
      cmocka_unit_test(test_many),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
