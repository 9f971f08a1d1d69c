/* nsys_rep.c -- .nsys-rep reports through `nsys export --type=sqlite` into
 * the cache folder (the contract: include/nsl/nsl.h, "Nsight Systems reports"). */
#define _GNU_SOURCE   /* strverscmp */
#include "nsl/nsl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "core/text.h"
#include "source/input.h"

extern char **environ;

/* The version tag every report starts with (nsys's ReportFile checks it:
 * "NVIDIA Tegra Profiler Report 2026@4@1@191-...").  .qdrep files too. */
#define REP_MAGIC "NVIDIA Tegra Profiler Report "
#define DEFAULT_TIMEOUT_S 7200


int nsl__rep_head(const void *head, size_t n) {
  return n >= sizeof REP_MAGIC - 1 && memcmp(head, REP_MAGIC, sizeof REP_MAGIC - 1) == 0;
}

int nsl_rep_sniff(const char *path) {
  char h[sizeof REP_MAGIC - 1];
  ssize_t n = nsl__read_head(path, h, sizeof h);
  return n > 0 && nsl__rep_head(h, (size_t)n);
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

/* nsl_rep_find_nsys's search: 0 with *out, or -1 with what was tried in *out. */
static int find_nsys(const char *given, char **out) {
  *out = NULL;
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

nsl_status nsl_rep_find_nsys(const char *given, char **out, nsl_error *err) {
  if (find_nsys(given, out) == 0) return NSL_OK;
  if (!*out) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  if (strcmp(*out, "nsys") == 0)
    return nsl_error_set(err, NSL_ERR_NOTFOUND, "nsys was not found (looked in PATH, /opt/nvidia/nsight-systems/*/bin "
                                                "and /usr/local/cuda/bin; give --nsys PATH or set NSYS)");
  return nsl_error_set(err, NSL_ERR_NOTFOUND, "cannot run nsys '%s': not an executable program", *out);
}

/* 1 when dir holds the importer, directly or in the host folder beside it
 * (NVIDIA's layout: target-linux-x64/nsys, host-linux-x64/QdstrmImporter);
 * *out receives its path. */
static int importer_in(const char *dir, char **out) {
  static const char *const rel[] = {"QdstrmImporter", "../host-linux-x64/QdstrmImporter"};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
    char *p = nsl__printf_alloc("%s/%s", dir, rel[i]);
    if (p && executable(p)) {
      char *real = realpath(p, NULL);   /* named without the hops that found it */
      if (real) free(p);
      *out = real ? real : p;
      return 1;
    }
    free(p);
  }
  return 0;
}

int nsl_rep_find_importer(const char *nsys, char **out) {
  *out = NULL;
  char *path = strdup(nsys), *dir = NULL;
  for (int hop = 0; path && hop < 16; hop++) {   /* each link of the chain, as nsys's packagers laid it */
    const char *slash = strrchr(path, '/');
    free(dir);
    dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir || importer_in(dir, out)) break;
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) break;
    target[n] = 0;
    char *next = target[0] == '/' ? strdup(target) : nsl__printf_alloc("%s/%s", dir, target);
    free(path);
    path = next;
  }
  if (!*out) {   /* links among the folders above it */
    char *real = realpath(nsys, NULL);
    char *slash = real ? strrchr(real, '/') : NULL;
    if (slash) {
      *slash = 0;
      importer_in(real, out);
    }
    free(real);
  }
  free(path);
  free(dir);
  return *out ? 0 : -1;
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

/* The identity of a report: size, modification and change times, device,
 * inode (the change time: an edit in place that restores the mtime). */
static void identity(const struct stat *st, char *out, size_t cap) {
  snprintf(out, cap, "report %lld %lld.%09ld %lld.%09ld %llu %llu\n", (long long)st->st_size,
           (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec,
           (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
}

/* The identity of an export nsl made: size, modification time, device, inode. */
static void export_identity(const struct stat *st, char *out, size_t cap) {
  snprintf(out, cap, "export %lld %lld.%09ld %llu %llu\n", (long long)st->st_size, (long long)st->st_mtim.tv_sec,
           st->st_mtim.tv_nsec, (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
}

/* The first line of an export's record (.report-id): what marks the entry as
 * nsl's (colcache_folder.c removes only marked entries). */
#define RECORD_HEAD "nsl-export 2\n"

/* Reads at most cap-1 bytes of file `name` of folder dfd into out
 * (NUL-terminated) when it is a regular file of this user, never through a
 * link; length or -1. */
static ssize_t read_own(int dfd, const char *name, char *out, size_t cap) {
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) n = read(fd, out, cap - 1);
  close(fd);
  if (n < 0) return -1;
  out[n] = 0;
  return n;
}

/* Writes text as file `name` of folder dfd atomically (a fresh temporary
 * file, never through a link: fsync + rename). */
static int write_own(int dfd, const char *name, const char *text) {
  char *tmp = nsl__printf_alloc(".%s.tmp%ld", name, (long)getpid());
  if (!tmp) return -1;
  unlinkat(dfd, tmp, 0);
  int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    free(tmp);
    return -1;
  }
  size_t n = strlen(text);
  int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
  close(fd);
  if (!ok || renameat(dfd, tmp, dfd, name) != 0) {
    unlinkat(dfd, tmp, 0);
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}

/* 1 when file `name` of folder dfd is a regular file (not a link) that
 * starts with SQLite's header; its stat in *st. */
static int is_sqlite_at(int dfd, const char *name, struct stat *st) {
  char h[16];
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  int ok = fstat(fd, st) == 0 && S_ISREG(st->st_mode) && pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h &&
           memcmp(h, "SQLite format 3", 16) == 0;
  close(fd);
  return ok;
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

/* Removes the leftovers of exports whose process is gone (we hold the
 * lock), and the old log: names, not what links point to. */
static void remove_leftovers(int dfd) {
  int d2 = dup(dfd);
  DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
  if (!d) {
    if (d2 >= 0) close(d2);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, ".export-", 8) == 0 || strcmp(e->d_name, "export.log") == 0) unlinkat(dfd, e->d_name, 0);
  closedir(d);
}

/* Private folders made for exports when the cache folder is refused,
 * removed with what they hold at exit. */
static char *g_tmpdirs[64];
static int g_ntmpdirs;
static pthread_mutex_t g_tmp_lock = PTHREAD_MUTEX_INITIALIZER;

static void remove_tmpdirs(void) {
  for (int i = 0; i < g_ntmpdirs; i++) {
    int dfd = open(g_tmpdirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) {
      DIR *d = fdopendir(dfd);
      struct dirent *e;
      while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlinkat(dfd, e->d_name, 0);
      if (d) closedir(d);
      else close(dfd);
    }
    rmdir(g_tmpdirs[i]);
    free(g_tmpdirs[i]);
  }
  g_ntmpdirs = 0;
}

/* A fresh private folder (mode 0700, under $TMPDIR or /tmp) for one
 * export, removed at exit; NULL when none can be made. */
static char *private_tmpdir(void) {
  const char *t = getenv("TMPDIR");
  char *p = nsl__printf_alloc("%s/nsl-export-XXXXXX", t && t[0] == '/' ? t : "/tmp");
  if (!p || !mkdtemp(p)) {
    free(p);
    return NULL;
  }
  pthread_mutex_lock(&g_tmp_lock);
  int ok = g_ntmpdirs < (int)(sizeof g_tmpdirs / sizeof *g_tmpdirs);
  if (ok) {
    if (g_ntmpdirs == 0) atexit(remove_tmpdirs);
    g_tmpdirs[g_ntmpdirs++] = p;
  }
  pthread_mutex_unlock(&g_tmp_lock);
  if (!ok) {
    rmdir(p);
    free(p);
    return NULL;
  }
  return strdup(p);
}

/* Runs argv with stdout and stderr to log; waits at most timeout_s seconds
 * (then SIGTERM, and SIGKILL 5 s later), reporting the size of watch as
 * progress (nsl__progress_*: the front end decides whether to show it); a
 * cancelled task (nsl__cancelled: the front end gave up) stops it the same
 * way.  Returns the exit status (128 + signal), -1 when it could not start
 * (errno), -2 on timeout, -3 when cancelled. */
static int run_export(char *const argv[], const char *log, const char *watch, const char *report, double timeout_s) {
  /* the log is made afresh (O_EXCL, no link followed: remove_leftovers took the old one away) */
  int lfd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (lfd < 0 || nfd < 0) {
    int e = errno;
    if (lfd >= 0) close(lfd);
    if (nfd >= 0) close(nfd);
    errno = e;
    return -1;
  }
  int pipefd[2];   /* the child reports a failed exec through it */
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    close(lfd);
    close(nfd);
    return -1;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {   /* the child: async-signal-safe calls only */
    /* its own process group (ended as a whole), and ended when nsl dies, even by kill -9 */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (dup2(nfd, 0) < 0 || dup2(lfd, 1) < 0 || dup2(lfd, 2) < 0) _exit(127);
    execve(argv[0], argv, environ);
    int e = errno;
    ssize_t w = write(pipefd[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  int fork_errno = errno;
  close(lfd);
  close(nfd);
  close(pipefd[1]);
  if (pid < 0) {
    close(pipefd[0]);
    errno = fork_errno;
    return -1;
  }
  setpgid(pid, pid);   /* as the child does: whichever runs first */
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(pipefd[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {}
  close(pipefd[0]);
  if (got == (ssize_t)sizeof exec_errno) {
    waitpid(pid, NULL, 0);
    errno = exec_errno;
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
      kill(-pid, SIGTERM);   /* nsys and whatever it started */
      for (int i = 0; i < 50 && waitpid(pid, &status, WNOHANG) == 0; i++) nanosleep(&(struct timespec){0, 100000000}, NULL);
      if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
      }
      kill(-pid, SIGKILL);   /* what is left of the group */
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

/* The release that wrote the report at path, from its first line: reports
 * of nsys 2023 and later start "NVIDIA Tegra Profiler Report
 * 2026@4@1@191-264138605071v0.", and an nsys refuses a report of a release
 * newer than its own ("Version number is invalid"); older reports carry
 * "1." there (2022.4 writes so).  Returns 1 with v = {year, major, minor,
 * build} and the build text in out; 0 when the header names no release. */
static int report_release(const char *path, int v[4], char *out, size_t cap) {
  char head[sizeof REP_MAGIC + 128];
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  head[n] = 0;
  if (n < sizeof REP_MAGIC || memcmp(head, REP_MAGIC, sizeof REP_MAGIC - 1) != 0) return 0;
  const char *s = head + sizeof REP_MAGIC - 1;
  size_t len = strcspn(s, "\n");
  if (len == 0 || s[len] != '\n' || s[len - 1] != '.') return 0;
  int used = 0;
  if (sscanf(s, "%d@%d@%d@%d%n", &v[0], &v[1], &v[2], &v[3], &used) != 4 || v[0] < 2000) return 0;
  snprintf(out, cap, "%d.%d.%d.%d%.*s", v[0], v[1], v[2], v[3], (int)(len - 1 - (size_t)used), s + used);
  for (char *c = out; *c; c++)   /* header bytes reach the terminal only as printable text */
    if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
  return 1;
}

/* The version of the nsys at path ("NVIDIA Nsight Systems version
 * 2022.4.2.1-df9881f"), run with its output to log: 1 with v and the text
 * in out, 0 when it cannot be told. */
static int nsys_release(char *nsys, const char *log, const char *report, int v[4], char *out, size_t cap) {
  char *argv[] = {nsys, "--version", NULL};
  unlink(log);   /* run_export makes the log afresh (never through a link): the export's log goes */
  if (run_export(argv, log, log, report, 30) != 0) return 0;
  char text[512];
  if (read_own(AT_FDCWD, log, text, sizeof text) <= 0) return 0;
  const char *s = strstr(text, "version ");
  if (!s || sscanf(s + 8, "%d.%d.%d.%d", &v[0], &v[1], &v[2], &v[3]) != 4) return 0;
  size_t len = strcspn(s + 8, " \r\n");
  snprintf(out, cap, "%.*s", (int)(len < cap ? len : cap - 1), s + 8);
  return 1;
}

static char *command_text(const char *nsys, const char *out, const char *rep);

/* When the report at path was written by a release newer than nsys, sets
 * err to a message that names both and what to install, and returns 1. */
static int newer_than_nsys(const char *path, char *nsys, const char *log, const char *stem, nsl_error *err) {
  int rv[4], nv[4];
  char rtext[128], ntext[128];
  if (!report_release(path, rv, rtext, sizeof rtext) || !nsys_release(nsys, log, path, nv, ntext, sizeof ntext))
    return 0;
  int cmp = 0;
  for (int i = 0; i < 3 && cmp == 0; i++) cmp = (rv[i] > nv[i]) - (rv[i] < nv[i]);
  if (cmp <= 0) return 0;
  char *out = nsl__printf_alloc("%s.sqlite", stem);
  char *cmd = out ? command_text("nsys", out, path) : NULL;   /* shell words a user can paste */
  nsl_error_set(err, NSL_ERR_IO,
                "cannot open '%s': the report was written by Nsight Systems %s and %s is %s, which reads only "
                "reports of its own release or older; install Nsight Systems %d.%d.%d or newer (NVIDIA's "
                "nsight-systems-cli packages) and give it with --nsys PATH, or export the report there: %s",
                path, rtext, nsys, ntext, rv[0], rv[1], rv[2], cmd ? cmd : "nsys export --type=sqlite");
  free(cmd);
  free(out);
  return 1;
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

nsl_status nsl_rep_export(const char *path, const char *nsys_given, char **sqlite, nsl_error *err) {
  *sqlite = NULL;
  struct stat st;
  if (stat(path, &st) != 0) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  char *real = realpath(path, NULL);
  if (!real) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  char *nsys = NULL, *root = NULL, *dir = NULL, *out = NULL, *tmp = NULL, *log = NULL;
  char *outarg = NULL, *cmd = NULL;
  int lfd = -1, dfd = -1;
  nsl_status rc = NSL_OK;
  /* the export keeps the report's stem, so the report keeps its name */
  const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
  char stem[256];
  if (snprintf(stem, sizeof stem, "%s", base) >= (int)sizeof stem) stem[sizeof stem - 1] = 0;
  char *dot = strrchr(stem, '.');
  if (dot && dot != stem) *dot = 0;

  if (find_nsys(nsys_given, &nsys) != 0) {
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

  /* the entry: a folder of the trusted exports/ (nsl__cache_dir_open), else a private temporary one */
  int rfd = -1;
  nsl_error ce;
  char name[32];
  snprintf(name, sizeof name, "%016llx", (unsigned long long)fnv1a(real));
  if (nsl__cache_dir_open("exports", &root, &rfd, &ce) == NSL_OK) {
    dir = nsl__printf_alloc("%s/%s", root, name);
    if (dir && mkdirat(rfd, name, 0700) != 0 && errno != EEXIST) {
      rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot create '%s': %s", path, dir, strerror(errno));
      close(rfd);
      goto cleanup;
    }
    dfd = dir ? openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    close(rfd);
    struct stat ds;
    if (dir && (dfd < 0 || fstat(dfd, &ds) != 0 || ds.st_uid != geteuid() || (ds.st_mode & 022))) {
      nsl__cache_warn(dir, "not a private folder of this user (a link?); it is not used");
      if (dfd >= 0) close(dfd);
      dfd = -1;
      free(dir);
      dir = NULL;
    }
  } else
    nsl__cache_warn("the cache folder", ce.msg);
  if (dfd < 0) {
    free(dir);
    if ((dir = private_tmpdir())) dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (!dir || dfd < 0) {
      rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': no private folder for its export: %s", path,
                         strerror(errno));
      goto cleanup;
    }
  }
  char outname[300];
  snprintf(outname, sizeof outname, "%s.sqlite", stem);
  out = nsl__printf_alloc("%s/%s", dir, outname);
  tmp = nsl__printf_alloc("%s/.export-%ld.sqlite", dir, (long)getpid());
  log = nsl__printf_alloc("%s/export.log", dir);
  if (!out || !tmp || !log) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto cleanup;
  }
  lfd = openat(dfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lfd < 0) {
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot create '%s/.lock': %s", path, dir, strerror(errno));
    goto cleanup;
  }
  while (flock(lfd, LOCK_EX) != 0)   /* another nsl exporting the same report: wait for it */
    if (errno != EINTR) break;

  /* reused only when nsl made it: the record and the export regular files of this user (read_own,
   * is_sqlite_at), the record naming this very report and this very export */
  char want[256], have[512], exp_id[256];
  identity(&st, want, sizeof want);
  struct stat es;
  if (read_own(dfd, ".report-id", have, sizeof have) > 0 && is_sqlite_at(dfd, outname, &es) &&
      es.st_uid == geteuid()) {
    export_identity(&es, exp_id, sizeof exp_id);
    char *rec = nsl__printf_alloc(RECORD_HEAD "%s%s", want, exp_id);
    int same = rec && strcmp(rec, have) == 0;
    free(rec);
    if (same) {
      if (!(*sqlite = strdup(out))) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
      goto cleanup;
    }
  }
  unlinkat(dfd, ".report-id", 0);
  unlinkat(dfd, outname, 0);
  remove_leftovers(dfd);
  write_own(dfd, ".report-id", RECORD_HEAD);   /* the entry is nsl's (for nsl cache clear); no export yet */
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
  const char *tmpname = strrchr(tmp, '/') + 1;
  if (code == -1) rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot run '%s': %s", path, nsys, strerror(run_errno));
  else if (code == -2)
    rc = nsl_error_set(err, NSL_ERR_IO,
                       "cannot open '%s': nsys export did not finish within %g s (NSL_NSYS_TIMEOUT); it was stopped: %s",
                       path, timeout, cmd);
  else if (code == -3)
    rc = nsl_error_set(err, NSL_ERR_LIMIT, "cannot open '%s': the nsys export was cancelled", path);
  else if (code != 0 && newer_than_nsys(path, nsys, log, stem, err))
    rc = NSL_ERR_IO;
  else if (code != 0)
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': nsys export failed (exit code %d)%s%s; the command was: %s",
                       path, code, tail[0] ? ": " : "", tail, cmd);
  else if (!is_sqlite_at(dfd, tmpname, &es))
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': nsys export wrote no SQLite database; the command was: %s",
                       path, cmd);
  else if (stat(path, &after) != 0 || (identity(&after, have, sizeof have), strcmp(want, have) != 0))
    rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': the report changed while nsys exported it; try again", path);
  else {
    int fd = openat(dfd, tmpname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      fsync(fd);
      close(fd);
    }
    char *rec = NULL;
    if (renameat(dfd, tmpname, dfd, outname) != 0 || !is_sqlite_at(dfd, outname, &es) ||
        (export_identity(&es, exp_id, sizeof exp_id), !(rec = nsl__printf_alloc(RECORD_HEAD "%s%s", want, exp_id))) ||
        write_own(dfd, ".report-id", rec) != 0)
      rc = nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': cannot store the export in '%s': %s", path, dir,
                         strerror(errno));
    free(rec);
  }
  if (rc != NSL_OK) unlinkat(dfd, tmpname, 0);
  if (rc == NSL_OK && !(*sqlite = strdup(out))) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
cleanup:
  if (lfd >= 0) close(lfd);
  if (dfd >= 0) close(dfd);
  free(real);
  free(nsys);
  free(root);
  free(dir);
  free(out);
  free(tmp);
  free(log);
  free(outarg);
  free(cmd);
  return rc;
}
