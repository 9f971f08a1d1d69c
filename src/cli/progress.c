/*
 * progress.c -- what the nsl program shows on stderr besides results: a
 * progress line for work that runs longer than a second (only when stderr
 * is a terminal and --quiet was not given), the library's warnings, and
 * the `nsl cache list|clear` command.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/nsl_internal.h"
#include "lua/lnsl.h"
#include "nsl/cache.h"

static pthread_t ticker;
static atomic_int ticking;   /* read by the ticker thread */
static atomic_int drawn;   /* a progress line is on the terminal (ticker and warnings) */

/* n with a k/M/G suffix into out. */
static void human(char *out, size_t cap, double n) {
  if (n >= 1e9) snprintf(out, cap, "%.2fG", n / 1e9);
  else if (n >= 1e6) snprintf(out, cap, "%.2fM", n / 1e6);
  else if (n >= 1e4) snprintf(out, cap, "%.1fk", n / 1e3);
  else snprintf(out, cap, "%.0f", n);
}

/* Draws (or, with active 0, clears) the progress line. */
static void draw(const nsl__progress_info *p, int active) {
  if (!active) {
    if (drawn) fputs("\r\033[K", stderr);
    drawn = 0;
    return;
  }
  char done[32], total[32], rate[32], line[256];
  double r = p->elapsed > 0 ? (double)p->done / p->elapsed : 0;
  human(done, sizeof done, (double)p->done);
  human(total, sizeof total, (double)p->total);
  human(rate, sizeof rate, r);
  int n;
  if (p->done == 0 && p->total <= 0)   /* nothing counted (a notebook cell, a check): what, and for how long */
    n = snprintf(line, sizeof line, "%s, %.1f s", p->what, p->elapsed);
  else {
    n = snprintf(line, sizeof line, "%s: %s", p->what, done);
    if (p->total > 0 && n < (int)sizeof line) n += snprintf(line + n, sizeof line - (size_t)n, " of %s", total);
    if (n < (int)sizeof line)
      n += snprintf(line + n, sizeof line - (size_t)n, " %s, %s %s/s, %.1f s", p->unit, rate, p->unit, p->elapsed);
  }
  if (p->total > 0 && r > 0 && p->done < p->total && n < (int)sizeof line)
    snprintf(line + n, sizeof line - (size_t)n, ", %.1f s left", (double)(p->total - p->done) / r);
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
  drawn = 1;
}

static void *tick(void *arg) {
  (void)arg;
  int shown = -1;
  while (ticking) {
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    nsl__progress_info p;
    if (nsl__terminal_claimed()) {   /* a full-screen front end owns the terminal */
      drawn = 0;
      shown = -1;
      continue;
    }
    int active = nsl__progress_snapshot(&p) && p.elapsed >= 1.0;
    if (active) {
      draw(&p, 1);
      shown = p.generation;
    } else if (shown >= 0) {
      draw(&p, 0);
      shown = -1;
    }
  }
  return NULL;
}

void nsl__cli_progress_start(int quiet) {
  if (quiet || !isatty(2) || ticking) return;
  ticking = 1;
  if (pthread_create(&ticker, NULL, tick, NULL) != 0) ticking = 0;
}

void nsl__cli_progress_stop(void) {
  if (!ticking) return;
  ticking = 0;
  pthread_join(ticker, NULL);
  nsl__progress_info p;
  memset(&p, 0, sizeof p);
  draw(&p, 0);
}

static void print_warning(void *ctx, const char *msg) {
  (void)ctx;
  if (drawn) fputs("\r\033[K", stderr);
  fprintf(stderr, "nsl: warning: %s\n", msg);
}

void nsl__cli_warnings(void) { nsl__set_warn_sink(print_warning, NULL); }

/* ---- nsl cache list|clear ---- */

static void size_text(char *out, size_t cap, int64_t b) {
  if (b >= (int64_t)1 << 30) snprintf(out, cap, "%.2f GiB", (double)b / (1 << 30));
  else if (b >= 1 << 20) snprintf(out, cap, "%.1f MiB", (double)b / (1 << 20));
  else snprintf(out, cap, "%.1f KiB", (double)b / 1024);
}

typedef struct list_ctx {
  int n;
  int64_t bytes;
} list_ctx;

static void list_one(void *p, const nsl_cache_entry *e) {
  list_ctx *lc = p;
  char size[32], when[32];
  time_t t = (time_t)e->last_used;
  struct tm tm;
  strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime_r(&t, &tm));
  size_text(size, sizeof size, e->bytes);
  printf("%-8s %-18s %10s %5lld files  %s  %s%s%s\n", e->folder, e->name, size, (long long)e->files, when,
         e->input[0] ? e->input : "-", e->sub[0] ? " : " : "", e->sub);
  lc->n++;
  lc->bytes += e->bytes;
}

int nsl__cli_cache(lua_State *L, const nsl_cli_args *a) {
  (void)L;
  const char *what = a->first ? a->first : "list";
  nsl_error err;
  if (a->ntraces > 0 || (strcmp(what, "list") != 0 && strcmp(what, "clear") != 0)) {
    fprintf(stderr, "nsl: cache: unknown subcommand '%s' (one of: list, clear)\nTry 'nsl cache --help'.\n",
            a->ntraces > 0 ? a->traces[0] : what);
    return 2;
  }
  if (strcmp(what, "clear") == 0) {
    int64_t bytes, entries;
    if (nsl_cache_clear(&bytes, &entries, &err) != NSL_OK) {
      fprintf(stderr, "nsl: %s\n", err.msg);
      return 1;
    }
    char size[32];
    size_text(size, sizeof size, bytes);
    printf("removed %lld cache entries (%s)\n", (long long)entries, size);
    return 0;
  }
  list_ctx lc = {0, 0};
  char *root = NULL;
  if (nsl_cache_list(&root, list_one, &lc, &err) != NSL_OK) {
    fprintf(stderr, "nsl: %s\n", err.msg);
    return 1;
  }
  char size[32], max[32];
  size_text(size, sizeof size, lc.bytes);
  size_text(max, sizeof max, nsl_cache_max_bytes());
  printf("%d entries, %s in %s (bound %s: NSL_CACHE_MAX)%s\n", lc.n, size, root ? root : "?", max,
         nsl__state_open_options(L)->cache ? "" : "; the cache is off (NSL_NO_CACHE)");
  free(root);
  return 0;
}
