/* test_dict.c -- the string dictionary (src/core/dict.c) and its error
 * convention: nsl_dict_intern puts the id through an out parameter and
 * returns an nsl_status, with err naming what failed.  Oracle: the strings
 * put in (ids dense in order of first sight, each string read back byte for
 * byte) and the contract in nsl.h (the codes, *id -1 on failure); for a
 * dictionary with aliases (a loading thread's, nsl_internal.h), a reference
 * that keeps every string added under its id and finds the first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/nsl_internal.h"
#include "nsl/nsl.h"

/* Ids are dense in order of first sight, across the index's rehashes; a
 * string met again keeps its id; every string reads back as it went in. */
static void test_ids_dense_and_stable(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  assert_non_null(d);
  enum { N = 100000 };   /* far past the first capacity (256) and many rehashes */
  char s[32];
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < N; i++) {
      int n = snprintf(s, sizeof s, "kernel_%d", i);
      int32_t id = -2;
      nsl_error err = {0};
      assert_int_equal(nsl_dict_intern(d, s, (size_t)n, &id, &err), NSL_OK);
      assert_int_equal(id, i);
      assert_int_equal(err.code, NSL_OK);   /* untouched on success */
    }
  assert_int_equal(nsl_dict_size(d), N);
  for (int i = 0; i < N; i += 997) {
    int n = snprintf(s, sizeof s, "kernel_%d", i);
    assert_string_equal(nsl_dict_str(d, i), s);
    assert_int_equal(nsl_dict_strlen(d, i), (size_t)n);
    assert_int_equal(nsl_dict_find(d, s, (size_t)n), i);
  }
  nsl_dict_release(d);
}

/* Lengths count, not NUL bytes: "a\0b", "a" and "" are three strings. */
static void test_lengths_not_terminators(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  int32_t a = -2, anb = -2, empty = -2;
  assert_int_equal(nsl_dict_intern(d, "a\0b", 3, &anb, NULL), NSL_OK);
  assert_int_equal(nsl_dict_intern(d, "a", 1, &a, NULL), NSL_OK);
  assert_int_equal(nsl_dict_intern(d, "", 0, &empty, NULL), NSL_OK);
  assert_int_equal(anb, 0);
  assert_int_equal(a, 1);
  assert_int_equal(empty, 2);
  assert_int_equal(nsl_dict_strlen(d, anb), 3);
  assert_memory_equal(nsl_dict_str(d, anb), "a\0b", 4);
  nsl_dict_release(d);
}

/* The hashed form gives what the plain one gives. */
static void test_hashed_same_ids(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  const char *words[] = {"push_pop", "start_end", "mark", "push_pop"};
  for (int i = 0; i < 4; i++) {
    size_t n = strlen(words[i]);
    int32_t id = -2, again = -2;
    assert_int_equal(nsl_dict_intern_hashed(d, words[i], n, nsl_dict_hash(words[i], n), &id, NULL), NSL_OK);
    assert_int_equal(nsl_dict_intern(d, words[i], n, &again, NULL), NSL_OK);
    assert_int_equal(id, again);
    assert_int_equal(id, i < 3 ? i : 0);
  }
  nsl_dict_release(d);
}

/* Refusals: graded codes, *id -1, a message saying what, the dictionary
 * unchanged, and err may be NULL. */
static void test_refusals(void **state) {
  (void)state;
  nsl_dict *d = nsl_dict_new();
  int32_t id = 7;
  nsl_error err = {0};
  assert_int_equal(nsl_dict_intern(d, NULL, 3, &id, &err), NSL_ERR_ARG);
  assert_int_equal(id, -1);
  assert_int_equal(err.code, NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "NULL string"));
  id = 7;
  assert_int_equal(nsl_dict_intern_hashed(d, NULL, 0, 0, &id, NULL), NSL_ERR_ARG);
  assert_int_equal(id, -1);
  /* a string longer than a dictionary holds is refused before it is read */
  static const char one = 'x';
  id = 7;
  memset(&err, 0, sizeof err);
  assert_int_equal(nsl_dict_intern_hashed(d, &one, (size_t)UINT32_MAX, 0, &id, &err), NSL_ERR_LIMIT);
  assert_int_equal(id, -1);
  assert_int_equal(err.code, NSL_ERR_LIMIT);
  assert_non_null(strstr(err.msg, "4294967295 bytes"));
  assert_int_equal(nsl_dict_size(d), 0);
  nsl_dict_release(d);
}

/* Without aliases nsl__dict_append interns; with them it adds a string
 * again under a new id, and lookups (find, intern) find the first id of a
 * string, also for strings appended since the last lookup and across the
 * index's growth.  Random appends, interns and finds against a reference. */
static void test_aliases(void **state) {
  (void)state;
  nsl_dict *plain = nsl_dict_new();
  int32_t a = -2, b = -2;
  assert_int_equal(nsl__dict_append(plain, "x", 1, &a, NULL), NSL_OK);
  assert_int_equal(nsl__dict_append(plain, "x", 1, &b, NULL), NSL_OK);
  assert_int_equal(a, 0);
  assert_int_equal(b, 0);
  assert_false(nsl__dict_aliases(plain));
  nsl_dict_release(plain);
  for (int round = 0; round < 20; round++) {
    nsl_dict *d = nsl_dict_new();
    nsl__dict_allow_aliases(d);
    assert_true(nsl__dict_aliases(d));
    enum { N = 6000, WORDS = 900 };
    static int word_of[N];   /* the reference: id -> word */
    int32_t n = 0;
    uint32_t x = 12345u + (uint32_t)round * 7919u;
    for (int step = 0; step < N; step++) {
      x = x * 1664525u + 1013904223u;
      int w = (int)((x >> 8) % (round % 2 ? WORDS : 50)), op = (int)(x >> 28) % 4;
      char s[32];
      int len = snprintf(s, sizeof s, "w%d", w);
      int32_t first = -1;
      for (int32_t k = 0; k < n && first < 0; k++)
        if (word_of[k] == w) first = k;
      int32_t id = -2;
      if (op < 2 || round == 0) {   /* append (round 0: appends alone, then the lookups below) */
        assert_int_equal(nsl__dict_append(d, s, (size_t)len, &id, NULL), NSL_OK);
        assert_int_equal(id, n);
        word_of[n++] = w;
      } else if (op == 2) {
        assert_int_equal(nsl_dict_intern(d, s, (size_t)len, &id, NULL), NSL_OK);
        if (first >= 0) assert_int_equal(id, first);
        else {
          assert_int_equal(id, n);
          word_of[n++] = w;
        }
      } else
        assert_int_equal(nsl_dict_find(d, s, (size_t)len), first);
      assert_int_equal(nsl_dict_size(d), n);
    }
    for (int32_t k = 0; k < n; k++) {   /* every id reads back; a lookup finds the first id of its string */
      char s[32];
      int len = snprintf(s, sizeof s, "w%d", word_of[k]);
      assert_int_equal(nsl_dict_strlen(d, k), (size_t)len);
      assert_memory_equal(nsl_dict_str(d, k), s, (size_t)len + 1);
      int32_t first = k;
      for (int32_t j = 0; j < k; j++)
        if (word_of[j] == word_of[k]) {
          first = j;
          break;
        }
      assert_int_equal(nsl_dict_find(d, s, (size_t)len), first);
    }
    nsl_dict_release(d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ids_dense_and_stable),
      cmocka_unit_test(test_lengths_not_terminators),
      cmocka_unit_test(test_hashed_same_ids),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_aliases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
