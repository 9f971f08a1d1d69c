/* replay.c -- runs a libFuzzer harness over files without libFuzzer: every
 * file named (or found in a folder named) on the command line goes once
 * through LLVMFuzzerTestOneInput.  ctest runs each harness so over its
 * corpus in the ordinary builds (gcc, ASan/UBSan included), which makes the
 * seeds and every crash input kept there regression tests. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open '%s'\n", path);
    return 1;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) {
      uint8_t *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  fclose(f);
  if (!buf) return 1;
  LLVMFuzzerTestOneInput(buf, len);
  free(buf);
  return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  int bad = 0, runs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: no such file or folder '%s'\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad |= run_file(argv[i]);
      runs++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    struct dirent *e;
    char **names = NULL;
    size_t nn = 0;
    while (d && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      names = realloc(names, (nn + 1) * sizeof *names);
      names[nn++] = strdup(e->d_name);
    }
    if (d) closedir(d);
    qsort(names, nn, sizeof *names, cmp);   /* a reproducible order */
    for (size_t k = 0; k < nn; k++) {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", argv[i], names[k]);
      bad |= run_file(p);
      runs++;
      free(names[k]);
    }
    free(names);
  }
  printf("replayed %d inputs\n", runs);
  return bad || runs == 0;
}
