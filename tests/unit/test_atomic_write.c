/*
 * test_atomic_write.c -- nsl_write_file_atomic: the target holds either its
 * old content or all the new bytes, and no temporary file outlives a call,
 * whether it succeeds or fails (missing folder, target that is a folder, a
 * write cut short by the file-size limit); a replaced file keeps its mode, a
 * read-only one is refused, and a killed writer's leftover is swept.  And
 * nsl__open_regular / nsl__read_head: a FIFO with no writer and /dev/zero are
 * refused at once, never waited on or read without end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/atomic_write.h"
#include "nsl/nsl_io.h"

static char dir[256];

static int setup(void **state) {
  (void)state;
  const char *base = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/nsl-atomic-XXXXXX", base && base[0] ? base : "/tmp");
  return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir and what is in it (files and one level of folders). */
static int teardown(void **state) {
  (void)state;
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      if (unlink(p) != 0) rmdir(p);
    }
    closedir(d);
  }
  rmdir(dir);
  return 0;
}

/* Names in dir, sorted, joined by spaces (to see leftovers in a failure). */
static void listing(char *out, size_t n) {
  DIR *d = opendir(dir);
  struct dirent *e;
  out[0] = '\0';
  char names[32][256];
  int k = 0;
  while ((e = readdir(d)) != NULL && k < 32)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) snprintf(names[k++], 256, "%s", e->d_name);
  closedir(d);
  for (int i = 0; i < k; i++)
    for (int j = i + 1; j < k; j++)
      if (strcmp(names[j], names[i]) < 0) {
        char t[256];
        memcpy(t, names[i], 256), memcpy(names[i], names[j], 256), memcpy(names[j], t, 256);
      }
  for (int i = 0; i < k; i++) {
    if (i) strncat(out, " ", n - strlen(out) - 1);
    strncat(out, names[i], n - strlen(out) - 1);
  }
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char *buf = malloc(1 << 20);
  *len = fread(buf, 1, 1 << 20, f);
  fclose(f);
  return buf;
}

static void test_write_and_replace(void **state) {
  (void)state;
  char path[512], ls[1024];
  nsl_error err = {0};
  size_t len;
  snprintf(path, sizeof path, "%s/out.txt", dir);
  assert_int_equal(nsl_write_file_atomic(path, "first", 5, &err), NSL_OK);
  char *got = slurp(path, &len);
  assert_int_equal(len, 5);
  assert_memory_equal(got, "first", 5);
  free(got);
  assert_int_equal(nsl_write_file_atomic(path, "second, longer", 14, &err), NSL_OK);
  got = slurp(path, &len);
  assert_int_equal(len, 14);
  assert_memory_equal(got, "second, longer", 14);
  free(got);
  assert_int_equal(nsl_write_file_atomic(path, NULL, 0, &err), NSL_OK);   /* empty file */
  got = slurp(path, &len);
  assert_int_equal(len, 0);
  free(got);
  listing(ls, sizeof ls);
  assert_string_equal(ls, "out.txt");
  /* the mode is the usual one (0666 less the umask), not mkstemp's 0600 */
  struct stat sb;
  mode_t um = umask(022);
  umask(um);
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0666 & ~um);

  /* a relative path (no folder part) goes to the current folder */
  char cwd[512];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(dir), 0);
  assert_int_equal(nsl_write_file_atomic("rel.txt", "r", 1, &err), NSL_OK);
  assert_int_equal(chdir(cwd), 0);
  listing(ls, sizeof ls);
  assert_string_equal(ls, "out.txt rel.txt");
}

/* A FIFO nobody writes to, a character device and a folder: refused at
 * once (the call returns: open is non-blocking), with a message naming the
 * path and what it is; a regular file opens, blocking again; a folder only
 * with allow_dir. */
static void test_open_regular_only(void **state) {
  (void)state;
  char fifo[512], file[512];
  nsl_error err = {0};
  snprintf(fifo, sizeof fifo, "%s/trace.fifo", dir);
  snprintf(file, sizeof file, "%s/trace.sqlite", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(nsl__open_regular(fifo, 1, &err), -1);
  assert_non_null(strstr(err.msg, fifo));
  assert_non_null(strstr(err.msg, "it is a FIFO, not a regular file"));
  assert_int_equal(nsl__open_regular("/dev/zero", 0, &err), -1);
  assert_non_null(strstr(err.msg, "'/dev/zero': it is a character device, not a regular file"));
  assert_int_equal(nsl__open_regular(dir, 0, &err), -1);
  assert_non_null(strstr(err.msg, "it is a folder"));
  int fd = nsl__open_regular(dir, 1, &err);
  assert_true(fd >= 0);
  close(fd);
  FILE *f = fopen(file, "wb");
  assert_non_null(f);
  fputs("SQLite format 3", f);
  fclose(f);
  fd = nsl__open_regular(file, 0, &err);
  assert_true(fd >= 0);
  assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  close(fd);
  char h[8];
  assert_int_equal(nsl__read_head(file, h, sizeof h), 8);
  assert_memory_equal(h, "SQLite f", 8);
  assert_int_equal(nsl__read_head(fifo, h, sizeof h), -1);
  assert_int_equal(nsl__read_head("/dev/zero", h, sizeof h), -1);
}

static void test_missing_folder(void **state) {
  (void)state;
  char path[512], ls[1024];
  nsl_error err = {0};
  snprintf(path, sizeof path, "%s/no/such/folder/out.png", dir);
  assert_int_equal(nsl_write_file_atomic(path, "x", 1, &err), NSL_ERR_IO);
  assert_int_equal(err.code, NSL_ERR_IO);
  assert_non_null(strstr(err.msg, path));
  assert_non_null(strstr(err.msg, "No such file or directory"));
  listing(ls, sizeof ls);
  assert_string_equal(ls, "");
}

static void test_target_is_a_folder(void **state) {
  (void)state;
  char path[512], ls[1024];
  nsl_error err = {0};
  snprintf(path, sizeof path, "%s/sub", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  /* refused before anything is written: no temporary is made */
  assert_int_equal(nsl_write_file_atomic(path, "data", 4, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "not a regular file"));
  listing(ls, sizeof ls);
  assert_string_equal(ls, "sub");
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  /* a path ending in '/' or naming '.' is refused before anything */
  snprintf(path, sizeof path, "%s/", dir);
  assert_int_equal(nsl_write_file_atomic(path, "x", 1, &err), NSL_ERR_ARG);
  snprintf(path, sizeof path, "%s/sub/..", dir);
  assert_int_equal(nsl_write_file_atomic(path, "x", 1, &err), NSL_ERR_ARG);
}

static void test_bad_arguments(void **state) {
  (void)state;
  nsl_error err = {0};
  assert_int_equal(nsl_write_file_atomic(NULL, "x", 1, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_write_file_atomic("", "x", 1, &err), NSL_ERR_ARG);
  char path[512];
  snprintf(path, sizeof path, "%s/x", dir);
  assert_int_equal(nsl_write_file_atomic(path, NULL, 3, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_write_file_atomic(path, NULL, 3, NULL), NSL_ERR_ARG);   /* no error object */
  assert_int_equal(access(path, F_OK), -1);
}

static void test_write_cut_short(void **state) {
  (void)state;
  /* The file-size limit makes write() fail part-way (EFBIG): the old
   * content must survive whole and the partial temporary must go. */
  char path[512], ls[1024];
  nsl_error err = {0};
  size_t len;
  snprintf(path, sizeof path, "%s/keep.bin", dir);
  assert_int_equal(nsl_write_file_atomic(path, "old content", 11, &err), NSL_OK);

  size_t big = 1 << 16;
  char *data = malloc(big);
  memset(data, 'n', big);
  struct rlimit old, lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  lim = old;
  lim.rlim_cur = 4096;
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  nsl_status st = nsl_write_file_atomic(path, data, big, &err);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, prev);
  free(data);

  assert_int_equal(st, NSL_ERR_IO);
  assert_non_null(strstr(err.msg, "writing 65536 bytes failed"));
  char *got = slurp(path, &len);
  assert_int_equal(len, 11);
  assert_memory_equal(got, "old content", 11);
  free(got);
  listing(ls, sizeof ls);
  assert_string_equal(ls, "keep.bin");
}

/* A file replaced keeps its mode (a private 0600 file stays private); a
 * read-only one (no write bit: root too) is refused and left as it was. */
static void test_mode_kept_read_only_refused(void **state) {
  (void)state;
  char path[512], ls[1024];
  nsl_error err = {0};
  struct stat sb;
  size_t len;
  snprintf(path, sizeof path, "%s/private.json", dir);
  assert_int_equal(nsl_write_file_atomic(path, "one", 3, &err), NSL_OK);
  const mode_t modes[] = {0600, 0640, 0604};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(chmod(path, modes[i]), 0);
    assert_int_equal(nsl_write_file_atomic(path, "two", 3, &err), NSL_OK);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, modes[i]);
    assert_int_equal(sb.st_uid, geteuid());
  }
  assert_int_equal(chmod(path, 0444), 0);
  assert_int_equal(nsl_write_file_atomic(path, "three", 5, &err), NSL_ERR_IO);
  assert_non_null(strstr(err.msg, path));
  assert_non_null(strstr(err.msg, "read-only"));
  char *got = slurp(path, &len);
  assert_int_equal(len, 3);
  assert_memory_equal(got, "two", 3);
  free(got);
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0444);
  listing(ls, sizeof ls);
  assert_string_equal(ls, "private.json");
  chmod(path, 0644);
}

/* The temporary file of a killed writer (ours by its name, its lock free)
 * is removed by the next write to the folder; one whose writer lives (the
 * lock held) and files of other names are left alone. */
static void test_stale_temporaries_swept(void **state) {
  (void)state;
  char p[512], ls[1024];
  nsl_error err = {0};
  const char *names[] = {".a.zip.nsl-tmp-k3x9q0", ".b.json.nsl-tmp-000000", ".live.zip.nsl-tmp-abcdef",
                         ".c.nsl-tmp-ABCDEF", "d.nsl-tmp-abcdef", ".e.nsl-tmp-abc"};
  int live = -1;
  for (int i = 0; i < 6; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    int f = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(f >= 0);
    assert_int_equal(write(f, "partial", 7), 7);
    if (i == 2) {
      assert_int_equal(flock(f, LOCK_EX), 0);   /* a writer at work */
      live = f;
    } else {
      close(f);
    }
  }
  snprintf(p, sizeof p, "%s/out.txt", dir);
  assert_int_equal(nsl_write_file_atomic(p, "x", 1, &err), NSL_OK);
  listing(ls, sizeof ls);
  assert_string_equal(ls, ".c.nsl-tmp-ABCDEF .e.nsl-tmp-abc .live.zip.nsl-tmp-abcdef d.nsl-tmp-abcdef out.txt");
  close(live);   /* that writer is gone now: the next write removes it */
  assert_int_equal(nsl_write_file_atomic(p, "y", 1, &err), NSL_OK);
  listing(ls, sizeof ls);
  assert_string_equal(ls, ".c.nsl-tmp-ABCDEF .e.nsl-tmp-abc d.nsl-tmp-abcdef out.txt");
}

/* The rename fails at commit (a folder took the target's name while the
 * bytes were written): the error says so, the temporary file goes, and what
 * holds the name is left as it is. */
static void test_rename_fails(void **state) {
  (void)state;
  char path[512], inner[600], *tmp = NULL, ls[1024];
  nsl_error err = {0};
  int fd;
  snprintf(path, sizeof path, "%s/late.json", dir);
  assert_int_equal(nsl__tmpfile_open(path, &fd, &tmp, &err), NSL_OK);
  assert_non_null(tmp);
  assert_int_equal(write(fd, "{}", 2), 2);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(inner, sizeof inner, "%s/keep", path);
  assert_int_equal(mkdir(inner, 0755), 0);   /* not empty: rename cannot replace it */
  assert_int_equal(nsl__tmpfile_commit(fd, tmp, path, NULL, &err), NSL_ERR_IO);
  assert_non_null(strstr(err.msg, "rename failed"));
  free(tmp);
  listing(ls, sizeof ls);
  assert_string_equal(ls, "late.json");
  struct stat sb;
  assert_int_equal(stat(inner, &sb), 0);
  rmdir(inner);
}

/* Writers of different files in one folder at once: each one's sweep must
 * never take another's finished-but-not-yet-renamed file for a leftover. */
static void test_writers_share_a_folder(void **state) {
  (void)state;
  enum { WRITERS = 4, WRITES = 150 };
  pid_t pids[WRITERS];
  for (int w = 0; w < WRITERS; w++) {
    pids[w] = fork();
    assert_true(pids[w] >= 0);
    if (pids[w] == 0) {
      char path[512];
      nsl_error err = {0};
      snprintf(path, sizeof path, "%s/w%d.txt", dir, w);
      for (int i = 0; i < WRITES; i++)
        if (nsl_write_file_atomic(path, "0123456789", 10, &err) != NSL_OK) {
          fprintf(stderr, "writer %d, write %d: %s\n", w, i, err.msg);
          _exit(1);
        }
      _exit(0);
    }
  }
  for (int w = 0; w < WRITERS; w++) {
    int status = 0;
    assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  char ls[1024];
  listing(ls, sizeof ls);
  assert_string_equal(ls, "w0.txt w1.txt w2.txt w3.txt");
}

static void test_mkdir_p(void **state) {
  (void)state;
  char path[512], file[512];
  nsl_error err = {0};
  struct stat sb;
  snprintf(path, sizeof path, "%s/a/b/c", dir);
  assert_int_equal(nsl_mkdir_p(path, &err), NSL_OK);
  assert_int_equal(stat(path, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(nsl_mkdir_p(path, &err), NSL_OK);   /* already there */
  snprintf(file, sizeof file, "%s/a/f", dir);
  assert_int_equal(nsl_write_file_atomic(file, "x", 1, &err), NSL_OK);
  assert_int_equal(nsl_mkdir_p(file, &err), NSL_ERR_IO);   /* a file is in the way */
  snprintf(path, sizeof path, "%s/a/f/g", dir);
  assert_int_equal(nsl_mkdir_p(path, &err), NSL_ERR_IO);
  assert_int_equal(nsl_mkdir_p("", &err), NSL_ERR_ARG);
  assert_int_equal(nsl_mkdir_p(NULL, &err), NSL_ERR_ARG);
  /* clean up the nested folders for the teardown (one level deep) */
  snprintf(path, sizeof path, "%s/a/b/c", dir);
  rmdir(path);
  snprintf(path, sizeof path, "%s/a/b", dir);
  rmdir(path);
  unlink(file);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_write_and_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_regular_only, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_folder, setup, teardown),
      cmocka_unit_test_setup_teardown(test_target_is_a_folder, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_cut_short, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mkdir_p, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mode_kept_read_only_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stale_temporaries_swept, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rename_fails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_writers_share_a_folder, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
