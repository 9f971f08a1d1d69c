/* fuzz_analyses_csv.c -- libFuzzer harness: the bytes are an `nsys stats`
 * CSV file (seeds: the reports tests/e2e/make_stats_csv.sh makes), and the
 * analyses diagnose, classes and summary run on it (analyses_harness.h):
 * missing, renamed and extra columns, empty and non-numeric cells, short
 * and doubled rows must give a result or one error (issue 28). */
#define NSL_HARNESS_FILE "fuzz_cuda_gpu_kern_sum.csv"
#include "analyses_harness.h"
