/* fuzz_nsys_sqlite.c -- libFuzzer harness: the bytes are an nsys SQLite
 * export (as a bundle member is: an in-memory image).  Every data-model
 * table is loaded with every column, twice: the second pass runs after the
 * first one's errors, as the REPL, notebooks and pcall do (a failed
 * StringIds read once left state that crashed the next load). */
#include <stdint.h>
#include <stdlib.h>

#include "nsl/nsl.h"
#include "source/nsys_sqlite.h"

/* The table's row count (nsl_table_nrows), -1 when it cannot be had. */
static int64_t table_rows(nsl_table *t, nsl_error *err) {
  int64_t n;
  return nsl_table_nrows(t, &n, err) == NSL_OK ? n : -1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("NSL_THREADS", "1", 1);   /* one connection: reproducible runs */
  return 0;
}

static void load_all(nsl_trace *tr) {
  for (const char *const *t = nsl_model_tables(); *t; t++) {
    nsl_error err = {0};
    nsl_table *tab = NULL;
    if (nsl_trace_table(tr, *t, &tab, &err) != NSL_OK) continue;
    int nc = nsl_table_ncols(tab);
    const char *names[64];
    if (nc > 64) nc = 64;
    for (int i = 0; i < nc; i++) names[i] = nsl_table_colname(tab, i);
    (void)nsl_table_require(tab, names, nc, &err);
    (void)table_rows(tab, &err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nsl_error err = {0};
  nsl_report_info info = {0};
  void *src = NULL;
  if (nsl__nsys_open_image("fuzz.sqlite", data, size, &src, &info, &err) != NSL_OK) return 0;
  nsl_trace *tr = nsl_trace_new();
  if (!tr || nsl_trace_add_source(tr, &nsl__nsys_source_ops, src, &info, &err) != NSL_OK) {
    nsl__nsys_source_ops.close(src);
    nsl_trace_close(tr);
    return 0;
  }
  load_all(tr);
  load_all(tr);
  nsl_trace_close(tr);
  return 0;
}
