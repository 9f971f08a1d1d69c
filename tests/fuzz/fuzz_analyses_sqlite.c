/* fuzz_analyses_sqlite.c -- libFuzzer harness: the bytes are an nsys SQLite
 * export (seeds: the small exports of ../shared/data, trimmed), and the
 * analyses diagnose, classes and summary run on it (analyses_harness.h).
 * Byte mutations of an export rename and retype columns (the schema is text
 * in page 1), change value types and values, and cut tables: the class of
 * input that once ended in "internal error" (issue 28). */
#define NSL_HARNESS_FILE "fuzz_export.sqlite"
#include "analyses_harness.h"
