/* parallel.c -- a minimal job runner over pthreads, and tasks (see
 * parallel.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "core/parallel.h"

/* The cancellation flag of the task the thread works for (NULL: none). */
static _Thread_local atomic_int *cancel_flag;

int nsl__cancelled(void) { return cancel_flag && atomic_load_explicit(cancel_flag, memory_order_relaxed); }
int nsl__in_task(void) { return cancel_flag != NULL; }

int nsl__thread_count(int n) {
  const char *env = getenv("NSL_THREADS");
  long t = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  if (t < 1) t = 1;
  if (t > 64) t = 64;
  return n >= 1 && t > n ? n : (int)t;
}

typedef struct par_run {
  void (*job)(void *ctx, int i);
  void *ctx;
  int n;
  atomic_int next;
  atomic_int *cancel;   /* the caller's, passed on to the workers */
} par_run;

/* Whether the thread runs a job of nsl__run_parallel: the kernels it calls
 * then keep to it (the other threads have jobs of their own). */
static _Thread_local int in_job;

static void *par_worker(void *p) {
  par_run *pr = p;
  int was = in_job;
  cancel_flag = pr->cancel;
  in_job = 1;
  for (int i; (i = atomic_fetch_add(&pr->next, 1)) < pr->n;) pr->job(pr->ctx, i);
  in_job = was;
  return NULL;
}

void nsl__run_parallel(int n, int nthreads, void (*job)(void *ctx, int i), void *ctx) {
  par_run pr = {job, ctx, n, 0, cancel_flag};
  pthread_t th[64];
  int started = 0;
  for (int k = 1; k < nthreads && k < 64 && k < n; k++)
    if (pthread_create(&th[started], NULL, par_worker, &pr) == 0) started++;
  par_worker(&pr);
  for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
}

typedef struct rows_run {
  void (*rows)(void *ctx, int64_t lo, int64_t hi);
  void *ctx;
  int64_t n, per;
} rows_run;

static void rows_part(void *p, int i) {
  rows_run *r = p;
  int64_t lo = r->per * i, hi = lo + r->per < r->n ? lo + r->per : r->n;
  if (lo < hi) r->rows(r->ctx, lo, hi);
}

int nsl__threads_here(void) { return in_job ? 1 : nsl__thread_count(64); }

int64_t nsl__rows_per_part(int64_t n) {
  int threads = n >= NSL_ROWS_PARALLEL_MIN ? nsl__threads_here() : 1;
  if (threads <= 1) return n > 0 ? n : 1;
  return ((n + threads - 1) / threads + 4095) / 4096 * 4096;
}

void nsl__run_rows(int64_t n, void (*rows)(void *ctx, int64_t lo, int64_t hi), void *ctx) {
  int64_t per = nsl__rows_per_part(n);
  if (per >= n) {
    if (n > 0) rows(ctx, 0, n);
    return;
  }
  rows_run r = {rows, ctx, n, per};
  int parts = (int)((n + per - 1) / per);
  nsl__run_parallel(parts, parts, rows_part, &r);
}

struct nsl__task {
  pthread_t thread;
  void (*run)(void *ctx);
  void *ctx;
  atomic_int done, cancel;
};

/* Background work gives way to the thread that reads keys and draws: on
 * Linux the nice value is per thread, and the workers it starts with
 * nsl__run_parallel inherit it.  (Raising it needs no privilege.) */
#define TASK_NICE 5
static void lower_priority(void) {
#ifdef __linux__
  id_t tid = (id_t)syscall(SYS_gettid);
  errno = 0;
  int now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) setpriority(PRIO_PROCESS, tid, now + TASK_NICE > 19 ? 19 : now + TASK_NICE);
#endif
}

static void *task_main(void *p) {
  nsl__task *t = p;
  lower_priority();
  cancel_flag = &t->cancel;
  t->run(t->ctx);
  cancel_flag = NULL;
  atomic_store_explicit(&t->done, 1, memory_order_release);
  return NULL;
}

nsl__task *nsl__task_start(void (*run)(void *ctx), void *ctx) {
  nsl__task *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->run = run;
  t->ctx = ctx;
  atomic_init(&t->done, 0);
  atomic_init(&t->cancel, 0);
  if (pthread_create(&t->thread, NULL, task_main, t) != 0) {
    free(t);
    return NULL;
  }
  return t;
}

int nsl__task_done(const nsl__task *t) {
  return !t || atomic_load_explicit(&((nsl__task *)(uintptr_t)t)->done, memory_order_acquire);
}

void nsl__task_cancel(nsl__task *t) {
  if (t) atomic_store(&t->cancel, 1);
}

void nsl__task_join(nsl__task *t) {
  if (!t) return;
  pthread_join(t->thread, NULL);
  free(t);
}
