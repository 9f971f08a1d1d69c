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

/* Looks name up in PATH; 1 and the path in out when found. */
static int in_path(const char *name, char *out, size_t cap) {
  const char *path = getenv("PATH");
  if (!path) return 0;
  while (*path) {
    size_t n = strcspn(path, ":");
    int len = snprintf(out, cap, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", name);
    if (len > 0 && (size_t)len < cap && executable(out)) return 1;
    path += n;
    if (*path == ':') path++;
  }
  return 0;
}

/* The newest <dir>/<version>/bin/nsys (versions compared as versions). */
static int newest_in(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  char best[256] = "";
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof best) continue;
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s/bin/nsys", dir, e->d_name) >= (int)sizeof p || !executable(p)) continue;
    if (!best[0] || strverscmp(e->d_name, best) > 0) snprintf(best, sizeof best, "%s", e->d_name);
  }
  closedir(d);
  if (!best[0]) return 0;
  return snprintf(out, cap, "%s/%s/bin/nsys", dir, best) < (int)cap;
}

int nsl_rep_find_nsys(const char *given, char *out, size_t cap) {
  if (!given || !*given) given = g_program;
  if (given && *given) {
    if (strchr(given, '/')) {
      snprintf(out, cap, "%s", given);
      return executable(given) ? 0 : -1;
    }
    if (in_path(given, out, cap)) return 0;
    snprintf(out, cap, "%s", given);
    return -1;
  }
  const char *env = getenv("NSYS");
  if (env && *env) {
    if (strchr(env, '/') ? (snprintf(out, cap, "%s", env), executable(env)) : in_path(env, out, cap)) return 0;
    snprintf(out, cap, "%s", env);
    return -1;
  }
  if (in_path("nsys", out, cap)) return 0;
  if (newest_in("/opt/nvidia/nsight-systems", out, cap) || newest_in("/opt/nvidia/nsight-systems-cli", out, cap))
    return 0;
  static const char *const cuda[] = {"/usr/local/cuda/bin/nsys", "/usr/local/cuda/nsight-systems/bin/nsys"};
  for (size_t i = 0; i < sizeof cuda / sizeof *cuda; i++)
    if (executable(cuda[i])) return snprintf(out, cap, "%s", cuda[i]) < (int)cap ? 0 : -1;
  snprintf(out, cap, "nsys");
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
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) return -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
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
  char p[PATH_MAX];
  while ((e = readdir(d)))
    if (strncmp(e->d_name, ".export-", 8) == 0 && snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
      unlink(p);
  closedir(d);
}

/* Runs argv with stdout and stderr to log; waits at most timeout_s seconds
 * (then SIGTERM, and SIGKILL 5 s later), reporting the size of watch as
 * progress (nsl__progress_*: the front end decides whether to show it).  Returns the exit status
 * (128 + signal), -1 when it could not start (errno), -2 on timeout. */
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
    if (!timed_out && timeout_s > 0 && t - t0 > timeout_s) {
      timed_out = 1;
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
  if (timed_out) return -2;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* The export command for messages: nsys export --type=sqlite --output=OUT REP. */
static void command_text(const char *nsys, const char *out, const char *rep, char *buf, size_t cap) {
  if (snprintf(buf, cap, "%s export --type=sqlite --output=%s %s", nsys, out, rep) >= (int)cap) buf[cap - 1] = 0;
}

nsl_status nsl_rep_export(const char *path, char **sqlite, nsl_error *err) {
  *sqlite = NULL;
  struct stat st;
  if (stat(path, &st) != 0) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  char real[PATH_MAX];
  if (!realpath(path, real)) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  /* the export keeps the report's stem, so the report keeps its name */
  const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
  char stem[256];
  if (snprintf(stem, sizeof stem, "%s", base) >= (int)sizeof stem) stem[sizeof stem - 1] = 0;
  char *dot = strrchr(stem, '.');
  if (dot && dot != stem) *dot = 0;

  char nsys[PATH_MAX];
  if (nsl_rep_find_nsys(NULL, nsys, sizeof nsys) != 0) {
    char cmd[3 * PATH_MAX], outname[300];
    snprintf(outname, sizeof outname, "%s.sqlite", stem);
    command_text("nsys", outname, path, cmd, sizeof cmd);
    int searched = strcmp(nsys, "nsys") == 0;
    return nsl_error_set(err, NSL_ERR_NOTFOUND,
                         "cannot open '%s': it is an Nsight Systems report and nsys was not found (%s%s; give "
                         "--nsys PATH or set NSYS); or export it yourself: %s",
                         path, searched ? "looked in PATH, /opt/nvidia/nsight-systems/*/bin and /usr/local/cuda/bin"
                                        : "no program ", searched ? "" : nsys, cmd);
  }

  char *root = NULL;
  nsl_status rc = nsl__cache_dir("exports", &root, err);
  if (rc != NSL_OK) return rc;
  char dir[PATH_MAX], lock[PATH_MAX], out[PATH_MAX], idp[PATH_MAX], tmp[PATH_MAX], log[PATH_MAX];
  int too_long = snprintf(dir, sizeof dir, "%s/%016llx", root, (unsigned long long)fnv1a(real)) >= (int)sizeof dir;
  free(root);
  too_long = too_long || snprintf(lock, sizeof lock, "%s/.lock", dir) >= (int)sizeof lock ||
             snprintf(out, sizeof out, "%s/%s.sqlite", dir, stem) >= (int)sizeof out ||
             snprintf(idp, sizeof idp, "%s/.report-id", dir) >= (int)sizeof idp ||
             snprintf(tmp, sizeof tmp, "%s/.export-%ld.sqlite", dir, (long)getpid()) >= (int)sizeof tmp ||
             snprintf(log, sizeof log, "%s/export.log", dir) >= (int)sizeof log;
  if (too_long) return nsl_error_set(err, NSL_ERR_ARG, "cannot open '%s': the cache path is too long", path);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot create '%s': %s", path, dir, strerror(errno));
  int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lfd < 0) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot create '%s': %s", path, lock, strerror(errno));
  while (flock(lfd, LOCK_EX) != 0)   /* another nsl exporting the same report: wait for it */
    if (errno != EINTR) break;

  char want[256], have[256];
  identity(&st, want, sizeof want);
  if (read_small(idp, have, sizeof have) > 0 && strcmp(want, have) == 0 && is_sqlite(out)) {
    close(lfd);   /* reuse */
    if (!(*sqlite = strdup(out))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    return NSL_OK;
  }
  remove_leftovers(dir);
  unlink(idp);
  const char *t = getenv("NSL_NSYS_TIMEOUT");
  double timeout = t && *t ? strtod(t, NULL) : DEFAULT_TIMEOUT_S;
  char outarg[PATH_MAX + 16];
  snprintf(outarg, sizeof outarg, "--output=%s", tmp);
  char *argv[] = {nsys, "export", "--type=sqlite", outarg, "--force-overwrite=true", (char *)real, NULL};
  int code = run_export(argv, log, tmp, path, timeout);
  char cmd[3 * PATH_MAX];
  command_text(nsys, tmp, real, cmd, sizeof cmd);
  char tail[512];
  last_line(log, tail, sizeof tail);
  struct stat after;
  if (code == -1) rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot run '%s': %s", path, nsys, strerror(errno));
  else if (code == -2)
    rc = nsl_error_set(err, NSL_ERR_IO,
                       "cannot open '%s': nsys export did not finish within %g s (NSL_NSYS_TIMEOUT); it was stopped: %s",
                       path, timeout, cmd);
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
  close(lfd);
  if (rc == NSL_OK && !(*sqlite = strdup(out))) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  return rc;
}
