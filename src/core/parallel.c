/* parallel.c -- a minimal job runner over pthreads (see parallel.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/parallel.h"

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
} par_run;

static void *par_worker(void *p) {
  par_run *pr = p;
  for (int i; (i = atomic_fetch_add(&pr->next, 1)) < pr->n;) pr->job(pr->ctx, i);
  return NULL;
}

void nsl__run_parallel(int n, int nthreads, void (*job)(void *ctx, int i), void *ctx) {
  par_run pr = {job, ctx, n, 0};
  pthread_t th[64];
  int started = 0;
  for (int k = 1; k < nthreads && k < 64 && k < n; k++)
    if (pthread_create(&th[started], NULL, par_worker, &pr) == 0) started++;
  par_worker(&pr);
  for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
}
