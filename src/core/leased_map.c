/*
 * leased_map.c -- files mapped read-only under a read lease (leased_map.h).
 *
 * A table of NSL_LEASED_MAX slots that the SIGIO handler can walk without a
 * lock: each slot's state is atomic, and only the one that moves a slot out
 * of LIVE (to BUSY) may touch its mapping until it puts the slot back.
 * The state that matters is the kernel's, not the signal: a lease being
 * broken reads F_UNLCK from F_GETLEASE until it is given up, so signals
 * that merge, or come while a slot is BUSY, lose nothing -- whoever holds
 * the slot looks again before letting it go.
 */
#define _GNU_SOURCE
#include "core/leased_map.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

enum { FREE, CLAIMED, LIVE, BUSY, COPIED };

typedef struct {
  atomic_int state;
  int fd;
  void *addr;
  size_t len;
} slot_t;

static slot_t slots[NSL_LEASED_MAX];
static atomic_long copies;
static struct sigaction old_io;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int installed;
static long fd_room;   /* a lease's descriptor only below half the process's limit: the rest stay for the others */

/* Puts a copy of s's file pages at its address and gives the lease up (the
 * caller holds s as BUSY).  Only system calls and memcpy: safe in the
 * handler.  Returns 0 when the mapping could not be copied (no memory): the
 * lease is then kept, and the kernel ends it after lease-break-time. */
static int copy_out(slot_t *s) {
  void *p = mmap(NULL, s->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 0;
  memcpy(p, s->addr, s->len);
  mprotect(p, s->len, PROT_READ);
  if (mremap(p, s->len, s->len, MREMAP_MAYMOVE | MREMAP_FIXED, s->addr) == MAP_FAILED) {
    munmap(p, s->len);
    return 0;
  }
  fcntl(s->fd, F_SETLEASE, F_UNLCK);
  atomic_fetch_add(&copies, 1);
  return 1;
}

/* Copies slot s out when its lease is being broken, looking again after
 * letting it go (a break that began while it was BUSY sent its signal to a
 * handler that passed it by).  Returns 1 when s was being broken. */
static int settle(slot_t *s) {
  int broke = 0;
  for (;;) {
    int want = LIVE;
    if (!atomic_compare_exchange_strong(&s->state, &want, BUSY)) return broke;
    if (fcntl(s->fd, F_GETLEASE) != F_RDLCK) {
      atomic_store(&s->state, copy_out(s) ? COPIED : LIVE);
      return 1;
    }
    atomic_store(&s->state, LIVE);
    if (fcntl(s->fd, F_GETLEASE) == F_RDLCK) return broke;
    broke = 1;
  }
}

static void on_io(int sig, siginfo_t *info, void *uc) {
  int saved = errno, ours = 0;
  for (int i = 0; i < NSL_LEASED_MAX; i++)
    if (atomic_load(&slots[i].state) == LIVE) ours |= settle(&slots[i]);
  errno = saved;
  if (ours) return;
  /* not a lease of ours: whoever had SIGIO before gets it */
  if ((old_io.sa_flags & SA_SIGINFO) && old_io.sa_sigaction) old_io.sa_sigaction(sig, info, uc);
  else if (!(old_io.sa_flags & SA_SIGINFO) && old_io.sa_handler != SIG_DFL && old_io.sa_handler != SIG_IGN)
    old_io.sa_handler(sig);
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_io;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct rlimit rl;
  fd_room = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)(rl.rlim_cur / 2) : 1024;
  if (sigaction(SIGIO, &sa, &old_io) == 0) atomic_store(&installed, 1);
}

int nsl__leased_map(int fd, void **addr, size_t *len) {
  pthread_once(&once, install);
  if (!atomic_load(&installed) || fd >= fd_room) return -1;
  int k = -1;
  for (int i = 0; i < NSL_LEASED_MAX && k < 0; i++) {
    int want = FREE;
    if (atomic_compare_exchange_strong(&slots[i].state, &want, CLAIMED)) k = i;
  }
  if (k < 0) return -1;
  slot_t *s = &slots[k];
  struct stat st;
  void *p = MAP_FAILED;
  /* the size is read under the lease: a cut before it is seen here, one after it waits for the lease */
  if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
      p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) fcntl(fd, F_SETLEASE, F_UNLCK);
  }
  if (p == MAP_FAILED) {
    atomic_store(&s->state, FREE);
    return -1;
  }
  s->fd = fd;
  s->addr = p;
  s->len = (size_t)st.st_size;
  atomic_store(&s->state, LIVE);
  settle(s);   /* a break that began before the slot was LIVE */
  *addr = p;
  *len = s->len;
  return k;
}

void nsl__leased_unmap(int k) {
  if (k < 0 || k >= NSL_LEASED_MAX) return;
  slot_t *s = &slots[k];
  for (;;) {   /* BUSY: a handler or settle on another thread, for the time of one copy at most */
    int want = LIVE;
    if (atomic_compare_exchange_strong(&s->state, &want, BUSY)) break;
    want = COPIED;
    if (atomic_compare_exchange_strong(&s->state, &want, BUSY)) break;
    sched_yield();
  }
  munmap(s->addr, s->len);
  fcntl(s->fd, F_SETLEASE, F_UNLCK);
  close(s->fd);
  atomic_store(&s->state, FREE);
}

long nsl__leased_copies(void) { return atomic_load(&copies); }
