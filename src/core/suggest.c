/* suggest.c -- "did you mean": the known name closest to a misspelled one,
 * by edit distance (insertions, deletions, substitutions and swaps of two
 * neighbouring characters each count one). */
#include <stdlib.h>
#include <string.h>

#include "nsl/nsl.h"
#include "core/nsl_internal.h"

/* Optimal string alignment distance between a and b; stops early and
 * returns limit + 1 once every alignment costs more than limit. */
static size_t edit_distance(const char *a, const char *b, size_t limit) {
  size_t n = strlen(a), m = strlen(b);
  if ((n > m ? n - m : m - n) > limit) return limit + 1;
  size_t *rows = malloc(3 * (m + 1) * sizeof *rows);
  if (!rows) return limit + 1;
  size_t *prev2 = rows, *prev = rows + m + 1, *cur = rows + 2 * (m + 1);
  for (size_t j = 0; j <= m; j++) prev[j] = j;
  for (size_t i = 1; i <= n; i++) {
    cur[0] = i;
    size_t best = cur[0];
    for (size_t j = 1; j <= m; j++) {
      size_t cost = a[i - 1] != b[j - 1];
      size_t d = prev[j] + 1;
      if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
      if (prev[j - 1] + cost < d) d = prev[j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < d) d = prev2[j - 2] + 1;
      cur[j] = d;
      if (d < best) best = d;
    }
    if (best > limit) {
      free(rows);
      return limit + 1;
    }
    size_t *t = prev2;
    prev2 = prev, prev = cur, cur = t;
  }
  size_t d = prev[m];
  free(rows);
  return d;
}

/* The candidate closest to word, when it is close enough to be a likely
 * misspelling: at most a third of the word's length away (at least 1, at
 * most 3 edits); the first of equally close ones.  NULL when none is. */
const char *nsl__closest(const char *word, const char *const *candidates, int n) {
  if (!word || !candidates) return NULL;
  size_t len = strlen(word), limit = len / 3;
  if (limit < 1) limit = 1;
  if (limit > 3) limit = 3;
  const char *best = NULL;
  size_t bestd = limit + 1;
  for (int i = 0; i < n; i++) {
    if (!candidates[i] || strcmp(candidates[i], word) == 0) continue;
    size_t d = edit_distance(word, candidates[i], bestd - 1);
    if (d < bestd) bestd = d, best = candidates[i];
  }
  return best;
}
