/* A C program embedding libnsl, as README.md shows: total kernel time of an export. */
#include <stdio.h>
#include <nsl/nsl.h>
int main(int argc, char **argv) {
  nsl_trace *tr; nsl_table *k; nsl_error err;
  const char *paths[] = {argv[1]};
  if (nsl_trace_open(&tr, paths, 1, NULL, &err) != NSL_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
  nsl_trace_table(tr, "kernels", &k, &err);
  nsl_column *dur = nsl_table_column(k, "dur", &err);
  nsl_stats s; nsl_column_stats(dur, &s);
  printf("%lld kernels, %lld ns\n", (long long)s.count, (long long)s.isum);
  nsl_trace_close(tr);
  return argc > 2;
}
