/* test_regex.c -- Python-syntax regular expressions (src/core/regex.c).  The
 * oracle is Python's re.search: every expected answer below is what
 * `re.search(pattern, string) is not None` gives (checked with CPython 3.11),
 * including the patterns of vLLM's gputrc2graph kernel maps. */
#include <stdio.h>

#include "kernel_fixtures.h"

typedef struct rcase {
  const char *pattern, *subject;
  int want;
} rcase;

static const rcase cases[] = {
    /* vLLM gputrc2graph maps (vllm_engine_model.json) on real kernel names */
    {"gemm|nvjet", "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", 1},
    {"fused_moe_kernel|GroupProblemShape|group_gemm_starts|bmm_|GemmUniversal", "ampere_bf16_s16816gemm", 0},
    {".*", "", 1},
    {"ncclDevKernel|cross_device_reduce", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", 1},
    {"_norm_|Norm", "vectorized_layer_norm_kernel", 1},
    {"flash::prepare_varlen", "void flash::prepare_varlen_num_blocks_kernel<int>", 1},
    {"CUDA mem", "[CUDA memcpy Host-to-Device]", 1},
    {"\\[CUDA", "[CUDA memset]", 1},
    {"[A-Z][a-z]+Kernel", "ncclDevKernel", 1},
    /* classes and anchors */
    {"\\d+x\\d+", "nvjet_tst_192x192", 1},
    {"\\d", "abc", 0},
    {"\\s", "a b", 1},
    {"\\S", "   ", 0},
    {"\\W", "abc_1", 0},
    {"\\D", "123", 0},
    {"^void ", "void foo", 1},
    {"^foo", "void foo", 0},
    {"\\bgemm\\b", "a gemm b", 1},
    {"\\bgemm\\b", "sgemm", 0},
    /* quantifiers, literal braces */
    {"a{2}", "caab", 1},
    {"a{2}", "cab", 0},
    {"x{,2}y", "y", 1},
    {"a{", "a{", 1},
    {"a{b}", "a{b}", 1},
    {"a}", "a}", 1},
    {"a{1,}b", "aab", 1},
    {"a.*?b", "a123b", 1},
    /* groups and flags */
    {"(?i)GEMM", "sgemm", 1},
    {"(?:ab)+c", "ababc", 1},
    {"(?P<k>gemm)_\\w+", "gemm_x", 1},
    {"(?#note)gemm", "xgemm", 1},
    {"a|", "zzz", 1},
    {"x|^$", "", 1},
    /* sets */
    {"[\\d_]+x", "__x", 1},
    {"[^a-c]", "abc", 0},
    {"[]a]", "]", 1},
    {"[a\\]]", "]", 1},
    {"[\\-]", "-", 1},
    {"[a-]", "-", 1},
    {"[\\^]", "^", 1},
    {"[^^]", "^", 0},
    {"[.]", "x", 0},
    {"[.]", ".", 1},
    {"[%-/]", ".", 1},
    {"[\\w-]+$", "ab-c", 1},
    /* escapes */
    {"\\.", "a.b", 1},
    {"\\.", "ab", 0},
    {"\\x41", "A", 1},
    {"C\\+\\+", "C++", 1},
};

static void test_python_semantics(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    nsl_regex *re = NULL;
    nsl_error err = {0};
    if (nsl_regex_compile(&re, cases[i].pattern, 0, &err) != NSL_OK)
      fail_msg("'%s' does not compile: %s", cases[i].pattern, err.msg);
    int got = nsl_regex_search(re, cases[i].subject);
    if (got != cases[i].want)
      fail_msg("'%s' on '%s': %d, want %d (POSIX: %s)", cases[i].pattern, cases[i].subject, got, cases[i].want,
               nsl_regex_posix(re));
    nsl_regex_free(re);
  }
}

static void test_icase_flag(void **state) {
  (void)state;
  nsl_regex *re = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_regex_compile(&re, "allreduce", NSL_REGEX_ICASE, &err), NSL_OK);
  assert_true(nsl_regex_search(re, "ncclKernel_AllReduce_RING_LL_Sum_float"));
  nsl_regex_free(re);
  assert_int_equal(nsl_regex_compile(&re, "allreduce", 0, &err), NSL_OK);
  assert_false(nsl_regex_search(re, "ncclKernel_AllReduce_RING_LL_Sum_float"));
  assert_false(nsl_regex_search(re, NULL));
  nsl_regex_free(re);
  nsl_regex_free(NULL);
}

/* Constructs Python accepts but POSIX cannot express, and broken patterns:
 * an error naming the pattern, never a crash. */
static void test_refused(void **state) {
  (void)state;
  static const struct {
    const char *pattern, *msg;
  } bad[] = {
      {"(?=x)", "lookahead"},      {"(?<=a)b", "lookbehind"},     {"(?P=k)", "backreference"},
      {"\\1", "backreference"},    {"(a", "missing ')'"},         {"a)", "unbalanced"},
      {"[abc", "unterminated"},    {"[\\W]", "not supported"},    {"\\q", "unsupported escape"},
      {"[z-a]", "bad character range"}, {"(?x)a", "inline flag"}, {"\\", "unsupported escape"},
      {"(?P<name", "group name"},  {"\\x4", "unsupported escape"},
      /* Python's "multiple repeat" (a+++ took glibc's compiler minutes) */
      {"a**", "multiple repeat"},  {"a+++", "multiple repeat"},   {"a{2}{3}", "multiple repeat"},
      {"a?+*", "multiple repeat"}, {"a{2,22222}", "above 255"}, {"a{256}", "above 255"},
      /* nested counts multiply in glibc's compiler */
      {"((a{255}){255}){255}", "multiply above"}, {"(a{100}b){100}c{10}", "multiply above"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    nsl_regex *re = (nsl_regex *)&re;   /* must be reset to NULL */
    nsl_error err = {0};
    nsl_status rc = nsl_regex_compile(&re, bad[i].pattern, 0, &err);
    if (rc != NSL_ERR_ARG) fail_msg("'%s' compiled (rc %d)", bad[i].pattern, rc);
    assert_null(re);
    if (!strstr(err.msg, bad[i].msg) || !strstr(err.msg, bad[i].pattern))
      fail_msg("'%s': message '%s' lacks '%s'", bad[i].pattern, err.msg, bad[i].msg);
  }
  nsl_regex *re;
  nsl_error err = {0};
  assert_int_equal(nsl_regex_compile(&re, NULL, 0, &err), NSL_ERR_ARG);
}

static void test_column_mask(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  const char *names[] = {"sgemm_128", "elementwise_kernel", NULL, "sgemm_128", "nvjet_tst", "", "elementwise_kernel"};
  nsl_column *c = fx_str(d, 7, names);
  nsl_regex *re = NULL;
  nsl_error err = {0};
  assert_int_equal(nsl_regex_compile(&re, "gemm|nvjet", 0, &err), NSL_OK);
  nsl_column *m = nsl_column_regex(c, re, &err);
  assert_non_null(m);
  assert_int_equal(m->type, NSL_BOOL);
  const uint8_t want[] = {1, 0, 0, 1, 1, 0, 0};
  for (int i = 0; i < 7; i++) assert_int_equal(nsl_bool(m)[i], want[i]);
  nsl_column_release(m);
  nsl_regex_free(re);
  /* a catch-all matches the empty string but never a NULL row */
  assert_int_equal(nsl_regex_compile(&re, ".*", 0, &err), NSL_OK);
  m = nsl_column_regex(c, re, &err);
  const uint8_t all[] = {1, 1, 0, 1, 1, 1, 1};
  for (int i = 0; i < 7; i++) assert_int_equal(nsl_bool(m)[i], all[i]);
  nsl_column_release(m);
  /* not a string column */
  nsl_column *n = FX_I64(1, 2);
  assert_null(nsl_column_regex(n, re, &err));
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_null(nsl_column_regex(NULL, re, &err));
  nsl_regex_free(re);
  nsl_column_release(n);
  nsl_column_release(c);
  nsl_dict_release(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_python_semantics),
      cmocka_unit_test(test_icase_flag),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_column_mask),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
