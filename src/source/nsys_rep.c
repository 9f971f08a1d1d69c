/* nsys_rep.c -- .nsys-rep reports through `nsys export --type=sqlite` into
 * the cache folder (the contract: include/nsl/nsl.h, "Nsight Systems reports"). */
#define _GNU_SOURCE   /* strverscmp */
#include "nsl/nsl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "core/text.h"

extern char **environ;

/* The version tag every report starts with (nsys's ReportFile checks it:
 * "NVIDIA Tegra Profiler Report 2026@4@1@191-...").  .qdrep files too. */
#define REP_MAGIC "NVIDIA Tegra Profiler Report "
#define DEFAULT_TIMEOUT_S 7200

static char *g_program;                     /* --nsys */

int nsl_rep_sniff(const char *path) {
  char h[sizeof REP_MAGIC - 1];
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  return n == sizeof h && memcmp(h, REP_MAGIC, sizeof h) == 0;
}

void nsl_rep_set_nsys(const char *path) {
  free(g_program);
  g_program = path ? strdup(path) : NULL;
}

/* 1 when path is an executable regular file. */
static int executable(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Looks name up in PATH: the path found (malloc'd) or NULL. */
static char *in_path(const char *name) {
  const char *path = getenv("PATH");
  if (!path) return NULL;
  while (*path) {
    size_t n = strcspn(path, ":");
    char *p = nsl__printf_alloc("%.*s/%s", (int)(n ? n : 1), n ? path : ".", name);
    if (p && executable(p)) return p;
    free(p);
    path += n;
    if (*path == ':') path++;
  }
  return NULL;
}

/* The newest <dir>/<version>/bin/nsys (versions compared as versions),
 * malloc'd, or NULL. */
static char *newest_in(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return NULL;
  char *best = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strlen(e->d_name) >= 256) continue;
    char *p = nsl__printf_alloc("%s/%s/bin/nsys", dir, e->d_name);
    int ok = p && executable(p);
    free(p);
    if (!ok) continue;
    if (!best || strverscmp(e->d_name, best) > 0) {
      char *b = strdup(e->d_name);
      if (b) {
        free(best);
        best = b;
      }
    }
  }
  closedir(d);
  if (!best) return NULL;
  char *out = nsl__printf_alloc("%s/%s/bin/nsys", dir, best);
  free(best);
  return out;
}

int nsl_rep_find_nsys(const char *given, char **out) {
  *out = NULL;
  if (!given || !*given) given = g_program;
  if (given && *given) {
    if (strchr(given, '/')) {
      *out = strdup(given);
      return executable(given) ? 0 : -1;
    }
    if ((*out = in_path(given))) return 0;
    *out = strdup(given);
    return -1;
  }
  const char *env = getenv("NSYS");
  if (env && *env) {
    if (strchr(env, '/')) {
      *out = strdup(env);
      return executable(env) ? 0 : -1;
    }
    if ((*out = in_path(env))) return 0;
    *out = strdup(env);
    return -1;
  }
  if ((*out = in_path("nsys"))) return 0;
  if ((*out = newest_in("/opt/nvidia/nsight-systems")) || (*out = newest_in("/opt/nvidia/nsight-systems-cli")))
    return 0;
  static const char *const cuda[] = {"/usr/local/cuda/bin/nsys", "/usr/local/cuda/nsight-systems/bin/nsys"};
  for (size_t i = 0; i < sizeof cuda / sizeof *cuda; i++)
    if (executable(cuda[i])) return (*out = strdup(cuda[i])) ? 0 : -1;
  *out = strdup("nsys");
  return -1;
}

/* 64-bit FNV-1a of s. */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The identity of a report: size, modification time, device, inode. */
static void identity(const struct stat *st, char *out, size_t cap) {
  snprintf(out, cap, "%lld %lld.%09ld %llu %llu\n", (long long)st->st_size, (long long)st->st_mtim.tv_sec,
           st->st_mtim.tv_nsec, (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
}

/* Reads at most cap-1 bytes of path into out (NUL-terminated); length or -1. */
static ssize_t read_small(const char *path, char *out, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, out, cap - 1);
  close(fd);
  if (n < 0) return -1;
  out[n] = 0;
  return n;
}

/* Writes text to path atomically (temporary name + fsync + rename). */
static int write_small(const char *path, const char *text) {
  char *tmp = nsl__printf_alloc("%s.tmp%ld", path, (long)getpid());
  if (!tmp) return -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    free(tmp);
    return -1;
  }
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}

/* 1 when path starts with SQLite's header. */
static int is_sqlite(const char *path) {
  char h[16];
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  return n == sizeof h && memcmp(h, "SQLite format 3", 16) == 0;
}

/* The last non-empty line of the log at path, in out ("" when none). */
static void last_line(const char *path, char *out, size_t cap) {
  char buf[4096];
  out[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  if (fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
  }
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = 0;
  char *line = strrchr(buf, '\n');
  if (snprintf(out, cap, "%s", line ? line + 1 : buf) >= (int)cap) out[cap - 1] = 0;   /* cut */
}

/* Removes the leftovers of exports whose process is gone (we hold the lock). */
static void remove_leftovers(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, ".export-", 8) == 0) {
      char *p = nsl__printf_alloc("%s/%s", dir, e->d_name);
      if (p) unlink(p);
      free(p);
    }
  closedir(d);
}

/* Runs argv with stdout and stderr to log; waits at most timeout_s seconds
 * (then SIGTERM, and SIGKILL 5 s later), reporting the size of watch as
 * progress (nsl__progress_*: the front end decides whether to show it); a
 * cancelled task (nsl__cancelled: the front end gave up) stops it the same
 * way.  Returns the exit status (128 + signal), -1 when it could not start
 * (errno), -2 on timeout, -3 when cancelled. */
static int run_export(char *const argv[], const char *log, const char *watch, const char *report, double timeout_s) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  double t0 = now_s();
  int status = 0, timed_out = 0;
  const char *base = strrchr(report, '/');
  char what[128];
  snprintf(what, sizeof what, "exporting %s with nsys", base ? base + 1 : report);
  nsl__progress_begin(what, "B", 0);
  int64_t written = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      status = 0x7f00;
      break;
    }
    double t = now_s();
    int cancelled = nsl__cancelled();
    if (!timed_out && (cancelled || (timeout_s > 0 && t - t0 > timeout_s))) {
      timed_out = cancelled ? 2 : 1;
      kill(pid, SIGTERM);
      for (int i = 0; i < 50 && waitpid(pid, &status, WNOHANG) == 0; i++) nanosleep(&(struct timespec){0, 100000000}, NULL);
      if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
      break;
    }
    struct stat st;
    if (stat(watch, &st) == 0 && (int64_t)st.st_size > written) {
      nsl__progress_add((int64_t)st.st_size - written);
      written = (int64_t)st.st_size;
    }
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  }
  nsl__progress_end();
  if (timed_out) return timed_out == 2 ? -3 : -2;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* The export command for messages, as shell words a user can paste:
 * nsys export --type=sqlite --output=OUT REP (malloc'd; NULL when out of
 * memory). */
static char *command_text(const char *nsys, const char *out, const char *rep) {
  nsl__text t = {0};
  char *outarg = nsl__printf_alloc("--output=%s", out);
  if (outarg) {
    nsl__text_add_shell_word(&t, nsys);
    nsl__text_add(&t, " export --type=sqlite ");
    nsl__text_add_shell_word(&t, outarg);
    nsl__text_add(&t, " ");
    nsl__text_add_shell_word(&t, rep);
  }
  free(outarg);
  if (!outarg || t.oom) {
    free(t.s);
    return NULL;
  }
  return t.s;
}

nsl_status nsl_rep_export(const char *path, char **sqlite, nsl_error *err) {
  *sqlite = NULL;
  struct stat st;
  if (stat(path, &st) != 0) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  char *real = realpath(path, NULL);
  if (!real) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  char *nsys = NULL, *root = NULL, *dir = NULL, *lock = NULL, *out = NULL, *idp = NULL, *tmp = NULL, *log = NULL;
  char *outarg = NULL, *cmd = NULL;
  int lfd = -1;
  nsl_status rc;
  /* the export keeps the report's stem, so the report keeps its name */
  const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
  char stem[256];
  if (snprintf(stem, sizeof stem, "%s", base) >= (int)sizeof stem) stem[sizeof stem - 1] = 0;
  char *dot = strrchr(stem, '.');
  if (dot && dot != stem) *dot = 0;

  if (nsl_rep_find_nsys(NULL, &nsys) != 0) {
    char outname[300];
    snprintf(outname, sizeof outname, "%s.sqlite", stem);
    if (!nsys || !(cmd = command_text("nsys", outname, path))) {
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      goto cleanup;
    }
    int searched = strcmp(nsys, "nsys") == 0;
    rc = nsl_error_set(err, NSL_ERR_NOTFOUND,
                       "cannot open '%s': it is an Nsight Systems report and nsys was not found (%s%s; give "
                       "--nsys PATH or set NSYS); or export it yourself: %s",
                       path, searched ? "looked in PATH, /opt/nvidia/nsight-systems/*/bin and /usr/local/cuda/bin"
                                      : "no program ", searched ? "" : nsys, cmd);
    goto cleanup;
  }

  rc = nsl__cache_dir("exports", &root, err);
  if (rc != NSL_OK) goto cleanup;
  dir = nsl__printf_alloc("%s/%016llx", root, (unsigned long long)fnv1a(real));
  if (dir) {
    lock = nsl__printf_alloc("%s/.lock", dir);
    out = nsl__printf_alloc("%s/%s.sqlite", dir, stem);
    idp = nsl__printf_alloc("%s/.report-id", dir);
    tmp = nsl__printf_alloc("%s/.export-%ld.sqlite", dir, (long)getpid());
    log = nsl__printf_alloc("%s/export.log", dir);
  }
  if (!dir || !lock || !out || !idp || !tmp || !log) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto cleanup;
  }
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot create '%s': %s", path, dir, strerror(errno));
    goto cleanup;
  }
  lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lfd < 0) {
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot create '%s': %s", path, lock, strerror(errno));
    goto cleanup;
  }
  while (flock(lfd, LOCK_EX) != 0)   /* another nsl exporting the same report: wait for it */
    if (errno != EINTR) break;

  char want[256], have[256];
  identity(&st, want, sizeof want);
  if (read_small(idp, have, sizeof have) > 0 && strcmp(want, have) == 0 && is_sqlite(out)) {
    /* reuse */
    if (!(*sqlite = strdup(out))) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto cleanup;
  }
  remove_leftovers(dir);
  unlink(idp);
  const char *t = getenv("NSL_NSYS_TIMEOUT");
  double timeout = t && *t ? strtod(t, NULL) : DEFAULT_TIMEOUT_S;
  outarg = nsl__printf_alloc("--output=%s", tmp);
  cmd = command_text(nsys, tmp, real);
  if (!outarg || !cmd) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto cleanup;
  }
  char *argv[] = {nsys, "export", "--type=sqlite", outarg, "--force-overwrite=true", real, NULL};
  int code = run_export(argv, log, tmp, path, timeout);
  int run_errno = errno;
  char tail[512];
  last_line(log, tail, sizeof tail);
  struct stat after;
  if (code == -1) rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot run '%s': %s", path, nsys, strerror(run_errno));
  else if (code == -2)
    rc = nsl_error_set(err, NSL_ERR_IO,
                       "cannot open '%s': nsys export did not finish within %g s (NSL_NSYS_TIMEOUT); it was stopped: %s",
                       path, timeout, cmd);
  else if (code == -3)
    rc = nsl_error_set(err, NSL_ERR_LIMIT, "cannot open '%s': the nsys export was cancelled", path);
  else if (code != 0)
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': nsys export failed (exit code %d)%s%s; the command was: %s",
                       path, code, tail[0] ? ": " : "", tail, cmd);
  else if (!is_sqlite(tmp))
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': nsys export wrote no SQLite database; the command was: %s",
                       path, cmd);
  else if (stat(path, &after) != 0 || (identity(&after, have, sizeof have), strcmp(want, have) != 0))
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': the report changed while nsys exported it; try again", path);
  else {
    int fd = open(tmp, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      fsync(fd);
      close(fd);
    }
    if (rename(tmp, out) != 0 || write_small(idp, want) != 0)
      rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot store the export in '%s': %s", path, dir,
                         strerror(errno));
  }
  if (rc != NSL_OK) unlink(tmp);
  if (rc == NSL_OK && !(*sqlite = strdup(out))) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
cleanup:
  if (lfd >= 0) close(lfd);
  free(real);
  free(nsys);
  free(root);
  free(dir);
  free(lock);
  free(out);
  free(idp);
  free(tmp);
  free(log);
  free(outarg);
  free(cmd);
  return rc;
}
