/*
 * progress.c -- how long work tells the front end how far it got, and how
 * the library passes on a warning without printing it.
 *
 * Work that may take long (a table load, an export, an analysis's loop)
 * brackets itself with nsl__progress_begin / nsl__progress_end and counts
 * what it did with nsl__progress_add, from any thread (the count is
 * atomic).  The library never prints: a front end (the CLI) polls
 * nsl__progress_snapshot from a thread of its own and decides whether and
 * how to show it.  Nested work counts into the outermost bracket.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/nsl_internal.h"

static struct {
  atomic_int depth;
  atomic_llong done, total;
  atomic_int generation;     /* bumped by each outermost begin: a poller tells runs apart */
  _Atomic double started;    /* monotonic seconds */
  char what[128], unit[16];  /* written by the outermost begin only, under text_lock */
} prog;
static pthread_mutex_t text_lock = PTHREAD_MUTEX_INITIALIZER;   /* a snapshot may run on another thread */

static nsl__warn_fn warn_sink;
static void *warn_ctx;

double nsl__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Starts counting `what` (e.g. "loading kernels") in `unit` ("rows",
 * "bytes") towards total (<= 0: unknown).  Inside another bracket it only
 * adds its total to the outer one's. */
void nsl__progress_begin(const char *what, const char *unit, int64_t total) {
  if (atomic_fetch_add(&prog.depth, 1) == 0) {
    pthread_mutex_lock(&text_lock);
    snprintf(prog.what, sizeof prog.what, "%s", what ? what : "working");
    snprintf(prog.unit, sizeof prog.unit, "%s", unit ? unit : "");
    pthread_mutex_unlock(&text_lock);
    atomic_store(&prog.done, 0);
    atomic_store(&prog.total, total > 0 ? total : 0);
    atomic_store(&prog.started, nsl__now());
    atomic_fetch_add(&prog.generation, 1);
  } else if (total > 0) {
    atomic_fetch_add(&prog.total, total);
  }
}

void nsl__progress_expect(int64_t n) {
  if (n > 0 && atomic_load(&prog.depth) > 0) atomic_fetch_add(&prog.total, n);
}

void nsl__progress_add(int64_t n) {
  if (atomic_load_explicit(&prog.depth, memory_order_relaxed) > 0) atomic_fetch_add(&prog.done, n);
}

void nsl__progress_end(void) {
  if (atomic_load(&prog.depth) > 0) atomic_fetch_sub(&prog.depth, 1);
}

int nsl__progress_snapshot(nsl__progress_info *out) {
  memset(out, 0, sizeof *out);
  if (atomic_load(&prog.depth) <= 0) return 0;
  out->generation = atomic_load(&prog.generation);
  pthread_mutex_lock(&text_lock);
  snprintf(out->what, sizeof out->what, "%s", prog.what);
  snprintf(out->unit, sizeof out->unit, "%s", prog.unit);
  pthread_mutex_unlock(&text_lock);
  out->done = atomic_load(&prog.done);
  out->total = atomic_load(&prog.total);
  out->elapsed = nsl__now() - atomic_load(&prog.started);
  return 1;
}

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;   /* warnings may come from any thread */

void nsl__set_warn_sink(nsl__warn_fn fn, void *ctx) {
  pthread_mutex_lock(&warn_lock);
  warn_sink = fn;
  warn_ctx = ctx;
  pthread_mutex_unlock(&warn_lock);
}

void nsl__get_warn_sink(nsl__warn_fn *fn, void **ctx) {
  pthread_mutex_lock(&warn_lock);
  *fn = warn_sink;
  *ctx = warn_ctx;
  pthread_mutex_unlock(&warn_lock);
}

void nsl__warn(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&warn_lock);
  if (warn_sink) warn_sink(warn_ctx, msg);
  pthread_mutex_unlock(&warn_lock);
}

static atomic_int claimed;

void nsl__terminal_claim(int on) { atomic_store(&claimed, on != 0); }
int nsl__terminal_claimed(void) { return atomic_load(&claimed); }
