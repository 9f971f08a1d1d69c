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

static void *par_worker(void *p) {
  par_run *pr = p;
  cancel_flag = pr->cancel;
  for (int i; (i = atomic_fetch_add(&pr->next, 1)) < pr->n;) pr->job(pr->ctx, i);
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
