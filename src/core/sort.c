/* sort.c -- radix sorting of whole columns: nsl_argsort (stable, multi-key,
 * descending keys, NULLs first), nsl_column_unique, nsl_searchsorted, and the
 * primitives the other kernels share (kernels_internal.h): radix sorts,
 * selection, order codes.
 *
 * nsl_argsort maps every key to an order code (kernels_internal.h), narrows
 * it to the key's range (code - min, or max - code when descending; NULL
 * stays 0, below every value), and packs consecutive keys into one
 * composite code while they fit in 64 bits.  When a composite and the row
 * position fit in 64 bits together they are sorted as one uint64 (position
 * in the low bits), else as (code, row) pairs.  Composites are sorted from
 * the last to the first with a stable LSD radix sort (digits of at most 8
 * or 11 bits; a digit that every key shares costs no pass), so equal keys
 * keep their row order; a composite of at most 16 bits is placed by
 * counting; a last key the rows already follow costs no pass,
 * and one that each group of the keys before it (nearly) follows leaves a
 * counting sort by those (and a merge) -- by their composite, or where that
 * is wider than a counting sort takes (a thousand reports' process and
 * thread ids) by its number among their few distinct composites.
 *
 * The C sweeps over each group's rows by start (busy time, gaps, the
 * ledger, the launch waits) take their order from nsl__order_by_group_start:
 * for groups that are ids, a counting sort by group on the threads keeps
 * each group's rows in row order and merges the runs of ascending start
 * left in a group (the operations of a GPU come as a few tables in time
 * order: kernels, copies, memsets), so no pass sorts the rows that are in
 * order already; other input goes to nsl_argsort. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/parallel.h"

#define BLOCK 4096      /* rows per block when encoding keys */
#define SMALL_SORT 32   /* insertion sort below this */

/* ---- radix primitives --------------------------------------------------- */

/* Digit width for n keys of span bits: at most 11 bits for large arrays
 * (fewer passes), 8 for smaller ones (histograms that stay in L1), and the
 * passes balanced (36 bits: four 9-bit digits, not 11+11+11+3) so that the
 * buckets are as few as the pass count allows.  *nd: number of digits. */
static int digit_width(int64_t n, int span, int *nd) {
  int w = n >= (1 << 16) ? 11 : 8;
  *nd = (span + w - 1) / w;
  return (span + *nd - 1) / *nd;
}

/* ---- passes split over the threads ----------------------------------------
 * A large array is sorted with each pass in parts of its rows: every part
 * counts its digits, then writes its rows after those of lower digits and
 * those of the same digit in the parts before it.  That is where one
 * stable pass puts them, so the result is the same on any number of
 * threads.  A digit is ((key >> lo) & kmask) >> dshift & dmask, where key
 * is the element (u64) or its k (kv). */
enum { RADIX_PARTS = 64 };
typedef struct radix_job {
  const void *src;
  void *dst;
  int kv;
  int64_t per;   /* rows per part (nsl__rows_per_part) */
  int lo, dshift;
  uint64_t kmask, dmask;
  size_t nb;
  int64_t *hist;   /* parts x nb: a part's count per digit, then where its next row of that digit goes */
} radix_job;

#define RADIX_DIGIT(j, key) ((((key) >> (j)->lo) & (j)->kmask) >> (j)->dshift & (j)->dmask)

static void radix_count_rows(void *p, int64_t lo, int64_t hi) {
  const radix_job *j = p;
  int64_t *h = j->hist + (size_t)(lo / j->per) * j->nb;
  if (j->kv) {
    const nsl__kv *x = j->src;
    for (int64_t i = lo; i < hi; i++) h[RADIX_DIGIT(j, x[i].k)]++;
  } else {
    const uint64_t *x = j->src;
    for (int64_t i = lo; i < hi; i++) h[RADIX_DIGIT(j, x[i])]++;
  }
}

static void radix_scatter_rows(void *p, int64_t lo, int64_t hi) {
  const radix_job *j = p;
  int64_t *h = j->hist + (size_t)(lo / j->per) * j->nb;
  if (j->kv) {
    const nsl__kv *x = j->src;
    nsl__kv *o = j->dst;
    for (int64_t i = lo; i < hi; i++) o[h[RADIX_DIGIT(j, x[i].k)]++] = x[i];
  } else {
    const uint64_t *x = j->src;
    uint64_t *o = j->dst;
    for (int64_t i = lo; i < hi; i++) o[h[RADIX_DIGIT(j, x[i])]++] = x[i];
  }
}

/* The nd passes of w bits over a (n elements, u64 or kv) with tmp as the
 * other buffer, split over the threads; returns the sorted buffer (a or
 * tmp), or NULL when the rows are too few for parts or memory is short
 * (the caller then sorts alone). */
static void *radix_parallel(void *a, void *tmp, int64_t n, int kv, int lo, uint64_t kmask, int nd, int w) {
  int64_t per = nsl__rows_per_part(n);
  int64_t parts = (n + per - 1) / per;
  if (parts < 2 || parts > RADIX_PARTS) return NULL;
  size_t nb = (size_t)1 << w;
  int64_t *hist = malloc((size_t)parts * nb * sizeof *hist);
  if (!hist) return NULL;
  void *src = a, *dst = tmp;
  for (int d = 0; d < nd; d++) {
    radix_job j = {src, dst, kv, per, lo, d * w, kmask, nb - 1, nb, hist};
    memset(hist, 0, (size_t)parts * nb * sizeof *hist);
    nsl__run_rows(n, radix_count_rows, &j);
    int64_t sum = 0;
    int trivial = 0;
    for (size_t b = 0; b < nb; b++) {
      int64_t all = 0;
      for (int64_t q = 0; q < parts; q++) {
        int64_t c = hist[(size_t)q * nb + b];
        hist[(size_t)q * nb + b] = sum;
        sum += c;
        all += c;
      }
      if (all == n) trivial = 1;   /* every element has the same digit */
    }
    if (trivial) continue;
    nsl__run_rows(n, radix_scatter_rows, &j);
    void *t = src;
    src = dst;
    dst = t;
  }
  free(hist);
  return src;
}

uint64_t *nsl__radix_u64(uint64_t *a, uint64_t *tmp, int64_t n, int lo, int hi) {
  if (n < 2 || hi <= lo) return a;
  if (n <= SMALL_SORT) {   /* stable insertion sort on the key bits */
    int span = hi - lo;
    uint64_t m = span >= 64 ? ~0ull : ((1ull << span) - 1) << lo;
    for (int64_t i = 1; i < n; i++) {
      uint64_t x = a[i];
      int64_t j = i;
      while (j > 0 && (a[j - 1] & m) > (x & m)) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = x;
    }
    return a;
  }
  int span = hi - lo, nd, w = digit_width(n, span, &nd);
  size_t nb = (size_t)1 << w;
  uint64_t dmask = nb - 1, kmask = span >= 64 ? ~0ull : (1ull << span) - 1;
  uint64_t *par = radix_parallel(a, tmp, n, 0, lo, kmask, nd, w);
  if (par) return par;
  int64_t hist[8 * 2048];
  memset(hist, 0, (size_t)nd * nb * sizeof *hist);
  for (int64_t i = 0; i < n; i++) {
    uint64_t y = (a[i] >> lo) & kmask;
    for (int d = 0; d < nd; d++) hist[(size_t)d * nb + ((y >> (d * w)) & dmask)]++;
  }
  uint64_t *src = a, *dst = tmp;
  for (int d = 0; d < nd; d++) {
    int64_t *h = hist + (size_t)d * nb;
    int trivial = 0;
    for (size_t b = 0; b < nb; b++) {
      if (h[b] == n) trivial = 1;
      if (h[b]) break;
    }
    if (trivial) continue;   /* every element has the same digit */
    int64_t sum = 0;
    for (size_t b = 0; b < nb; b++) {
      int64_t c = h[b];
      h[b] = sum;
      sum += c;
    }
    int shift = lo + d * w;
    for (int64_t i = 0; i < n; i++) {
      uint64_t x = src[i];
      dst[h[(x >> shift) & dmask]++] = x;
    }
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  return src;
}

nsl__kv *nsl__radix_kv(nsl__kv *a, nsl__kv *tmp, int64_t n, int bits) {
  if (n < 2) return a;
  if (n <= SMALL_SORT) {
    for (int64_t i = 1; i < n; i++) {
      nsl__kv x = a[i];
      int64_t j = i;
      while (j > 0 && a[j - 1].k > x.k) {
        a[j] = a[j - 1];
        j--;
      }
      a[j] = x;
    }
    return a;
  }
  int span = bits < 1 ? 0 : bits > 64 ? 64 : bits;
  if (span == 0) return a;
  int nd, w = digit_width(n, span, &nd);
  size_t nb = (size_t)1 << w;
  uint64_t dmask = nb - 1;
  nsl__kv *par = radix_parallel(a, tmp, n, 1, 0, ~0ull, nd, w);
  if (par) return par;
  int64_t hist[8 * 2048];
  memset(hist, 0, (size_t)nd * nb * sizeof *hist);
  for (int64_t i = 0; i < n; i++) {
    uint64_t y = a[i].k;
    for (int d = 0; d < nd; d++) hist[(size_t)d * nb + ((y >> (d * w)) & dmask)]++;
  }
  nsl__kv *src = a, *dst = tmp;
  for (int d = 0; d < nd; d++) {
    int64_t *h = hist + (size_t)d * nb;
    int trivial = 0;
    for (size_t b = 0; b < nb; b++) {
      if (h[b] == n) trivial = 1;
      if (h[b]) break;
    }
    if (trivial) continue;
    int64_t sum = 0;
    for (size_t b = 0; b < nb; b++) {
      int64_t c = h[b];
      h[b] = sum;
      sum += c;
    }
    int shift = d * w;
    for (int64_t i = 0; i < n; i++) {
      nsl__kv x = src[i];
      dst[h[(x.k >> shift) & dmask]++] = x;
    }
    nsl__kv *t = src;
    src = dst;
    dst = t;
  }
  return src;
}

static void swap_u64(uint64_t *a, uint64_t *b) {
  uint64_t t = *a;
  *a = *b;
  *b = t;
}

static void sift_down(uint64_t *a, int64_t root, int64_t n) {
  for (;;) {
    int64_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && a[child + 1] > a[child]) child++;
    if (a[root] >= a[child]) return;
    swap_u64(&a[root], &a[child]);
    root = child;
  }
}

static void heapsort_u64(uint64_t *a, int64_t n) {
  for (int64_t i = n / 2 - 1; i >= 0; i--) sift_down(a, i, n);
  for (int64_t i = n - 1; i > 0; i--) {
    swap_u64(&a[0], &a[i]);
    sift_down(a, 0, i);
  }
}

static void insertion_u64(uint64_t *a, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    uint64_t x = a[i];
    int64_t j = i;
    while (j > 0 && a[j - 1] > x) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = x;
  }
}

/* Hoare partition of a[0..n) (n >= 3) around the median of three: returns
 * j in [0, n-2] with a[0..j] <= pivot <= a[j+1..n). */
static int64_t partition_u64(uint64_t *a, int64_t n) {
  int64_t mid = (n - 1) / 2;
  if (a[mid] < a[0]) swap_u64(&a[mid], &a[0]);
  if (a[n - 1] < a[0]) swap_u64(&a[n - 1], &a[0]);
  if (a[n - 1] < a[mid]) swap_u64(&a[n - 1], &a[mid]);
  uint64_t p = a[mid];
  int64_t i = -1, j = n;
  for (;;) {
    do i++;
    while (a[i] < p);
    do j--;
    while (a[j] > p);
    if (i >= j) return j;
    swap_u64(&a[i], &a[j]);
  }
}

/* Introsort on keys: quicksort, heapsort when the recursion gets too deep,
 * insertion sort for short runs. */
static void introsort(uint64_t *a, int64_t n, int depth) {
  while (n > SMALL_SORT) {
    if (depth-- == 0) {
      heapsort_u64(a, n);
      return;
    }
    int64_t left = partition_u64(a, n) + 1;
    if (left < n - left) {   /* recurse on the smaller side */
      introsort(a, left, depth);
      a += left;
      n -= left;
    } else {
      introsort(a + left, n - left, depth);
      n = left;
    }
  }
  insertion_u64(a, n);
}

void nsl__select_u64(uint64_t *a, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n;   /* k is in [lo, hi) */
  int depth = 2 * nsl__bitwidth((uint64_t)n) + 4;
  while (hi - lo > SMALL_SORT) {
    if (depth-- == 0) {
      heapsort_u64(a + lo, hi - lo);
      return;
    }
    int64_t j = lo + partition_u64(a + lo, hi - lo);
    if (k <= j) hi = j + 1;
    else lo = j + 1;
  }
  insertion_u64(a + lo, hi - lo);
}

void nsl__sort_u64(uint64_t *a, int64_t n, uint64_t *tmp) {
  if (n < 2) return;
  if (n < 1024 || !tmp) {
    introsort(a, n, 2 * nsl__bitwidth((uint64_t)n) + 4);
    return;
  }
  uint64_t *r = nsl__radix_u64(a, tmp, n, 0, 64);
  if (r != a) memcpy(a, r, (size_t)n * sizeof *a);
}

/* ---- order codes -------------------------------------------------------- */

typedef struct str_entry {
  const char *s;
  size_t len;
  int32_t id;
} str_entry;

static int cmp_str_entry(const void *pa, const void *pb) {
  const str_entry *a = pa, *b = pb;
  size_t m = a->len < b->len ? a->len : b->len;
  int r = memcmp(a->s, b->s, m);
  if (r) return r;
  return (a->len > b->len) - (a->len < b->len);
}

/* Ranks in byte order of the ids that occur in any of cols[0..ncols) (all
 * string columns over one dictionary). */
static uint64_t *str_ranks_of(const nsl_column *const *cols, int ncols, nsl_error *err) {
  const nsl_dict *d = cols[0]->dict;
  int32_t nd = nsl_dict_size(d);
  uint64_t *rank = calloc(nd ? (size_t)nd : 1, sizeof *rank);
  if (!rank) {
    nsl_error_set(err, NSL_ERR_NOMEM, "out of memory ranking %d strings", (int)nd);
    return NULL;
  }
  int64_t npresent = 0;
  for (int c = 0; c < ncols; c++) {
    const int32_t *ids = nsl_i32(cols[c]);
    for (int64_t i = 0; i < cols[c]->len; i++) {
      int32_t id = ids[i];
      if (id >= 0 && id < nd && !rank[id]) {
        rank[id] = 1;
        npresent++;
      }
    }
  }
  str_entry *e = malloc((size_t)(npresent ? npresent : 1) * sizeof *e);
  if (!e) {
    free(rank);
    nsl_error_set(err, NSL_ERR_NOMEM, "out of memory ranking %lld strings", (long long)npresent);
    return NULL;
  }
  int64_t k = 0;
  for (int32_t id = 0; id < nd; id++)
    if (rank[id]) e[k++] = (str_entry){nsl_dict_str(d, id), nsl_dict_strlen(d, id), id};
  qsort(e, (size_t)npresent, sizeof *e, cmp_str_entry);
  for (int64_t r = 0; r < npresent; r++) rank[e[r].id] = (uint64_t)r + 1;
  free(e);
  return rank;
}

uint64_t *nsl__str_ranks(const nsl_column *c, nsl_error *err) { return str_ranks_of(&c, 1, err); }

void nsl__order_codes(const nsl_column *c, const int64_t *rows, int64_t first, int64_t n,
                      const uint64_t *ranks, uint64_t *out) {
#define GATHER_CODES(expr)                                                                         \
  do {                                                                                             \
    if (rows)                                                                                      \
      for (int64_t i = 0; i < n; i++) {                                                            \
        int64_t r = rows[i];                                                                       \
        out[i] = (expr);                                                                           \
      }                                                                                            \
    else                                                                                           \
      for (int64_t i = 0; i < n; i++) {                                                            \
        int64_t r = first + i;                                                                     \
        out[i] = (expr);                                                                           \
      }                                                                                            \
  } while (0)
  switch (c->type) {
  case NSL_I64: {
    const int64_t *x = nsl_i64(c);
    GATHER_CODES(nsl__ocode_i64(x[r]));
    break;
  }
  case NSL_I32: {
    const int32_t *x = nsl_i32(c);
    GATHER_CODES(nsl__ocode_i32(x[r]));
    break;
  }
  case NSL_F64: {
    const double *x = nsl_f64(c);
    GATHER_CODES(nsl__ocode_f64(x[r]));
    break;
  }
  case NSL_BOOL: {
    const uint8_t *x = nsl_bool(c);
    GATHER_CODES((uint64_t)(x[r] != 0) + 1);
    break;
  }
  case NSL_STR: {
    const int32_t *x = nsl_i32(c);
    if (ranks) {
      uint64_t nd = (uint64_t)nsl_dict_size(c->dict);
      GATHER_CODES((uint64_t)(int64_t)x[r] < nd ? ranks[x[r]] : 0);
    } else {
      GATHER_CODES(x[r] < 0 ? 0 : (uint64_t)x[r] + 1);
    }
    break;
  }
  default: memset(out, 0, (size_t)n * sizeof *out);
  }
#undef GATHER_CODES
}

nsl_status nsl__check_keys(const nsl_column *const *cols, int n, const char *what, nsl_error *err) {
  if (!cols || n < 1) return nsl_error_set(err, NSL_ERR_ARG, "%s: needs at least one key column", what);
  for (int k = 0; k < n; k++) {
    if (!cols[k]) return nsl_error_set(err, NSL_ERR_ARG, "%s: key %d is missing", what, k + 1);
    if ((unsigned)cols[k]->type > NSL_BOOL)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: key %d has an unknown type", what, k + 1);
    if (cols[k]->len != cols[0]->len)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: key %d has %lld rows, key 1 has %lld", what, k + 1,
                           (long long)cols[k]->len, (long long)cols[0]->len);
  }
  return NSL_OK;
}

/* ---- argsort ------------------------------------------------------------ */

/* One key narrowed to its range: code' = 0 for NULL, else
 * (asc ? code - min : max - code) + has_null. */
typedef struct sort_key {
  const nsl_column *col;
  uint64_t *ranks;   /* string columns */
  uint64_t min, max;
  int has_null, desc, bits;
  int sorted;   /* the rows' own order is the key's order (narrowed codes never fall from a row to the next) */
} sort_key;

/* What scan_key finds over rows [lo, hi) of a key (one part of its rows):
 * the extremes of its codes, whether it has NULLs, whether its rows follow
 * the key's order among themselves, and its first and last non-NULL codes
 * (0: none), which tell whether the parts follow each other. */
typedef struct scan_part {
  uint64_t lo, hi, first, last;
  int has_null, sorted;
} scan_part;

enum { SCAN_PARTS = 64 };
typedef struct scan_job {
  const sort_key *k;
  int64_t per;
  scan_part part[SCAN_PARTS];
} scan_job;

static void scan_rows(void *p, int64_t from, int64_t to) {
  scan_job *j = p;
  const sort_key *k = j->k;
  uint64_t buf[BLOCK], lo = UINT64_MAX, hi = 0;
  int has_null = 0, sorted = 1;
  uint64_t prev = 0, first = 0;   /* the last and first non-NULL codes so far (0: none yet) */
  for (int64_t off = from; off < to; off += BLOCK) {
    int64_t m = to - off < BLOCK ? to - off : BLOCK;
    nsl__order_codes(k->col, NULL, off, m, k->ranks, buf);
    for (int64_t i = 0; i < m; i++) {
      uint64_t x = buf[i];
      if (!x) {
        has_null = 1;
        if (prev) sorted = 0;   /* NULLs come first in either direction */
      } else {
        if (x < lo) lo = x;
        if (x > hi) hi = x;
        if (prev && (k->desc ? x > prev : x < prev)) sorted = 0;
        if (!first) first = x;
        prev = x;
      }
    }
  }
  j->part[from / j->per] = (scan_part){lo, hi, first, prev, has_null, sorted};
}

static nsl_status scan_key(sort_key *k, nsl_error *err) {
  const nsl_column *c = k->col;
  if (c->type == NSL_STR && c->dict && !(k->ranks = nsl__str_ranks(c, err)))
    return err ? err->code : NSL_ERR_NOMEM;
  /* the rows in parts over the threads, then the parts in row order as one pass would meet them */
  scan_job j;
  memset(&j, 0, sizeof j);
  j.k = k;
  j.per = nsl__rows_per_part(c->len);
  nsl__run_rows(c->len, scan_rows, &j);
  uint64_t lo = UINT64_MAX, hi = 0;
  int has_null = 0, sorted = 1;
  uint64_t prev = 0;   /* the last non-NULL code of the parts so far (0: none yet) */
  int64_t parts = c->len > 0 ? (c->len + j.per - 1) / j.per : 0;
  for (int64_t q = 0; q < parts; q++) {
    const scan_part *sp = &j.part[q];
    if (sp->lo < lo) lo = sp->lo;
    if (sp->hi > hi) hi = sp->hi;
    has_null |= sp->has_null;
    if (!sp->sorted || (prev && sp->has_null) || (prev && sp->first && (k->desc ? sp->first > prev : sp->first < prev)))
      sorted = 0;
    if (sp->last) prev = sp->last;
  }
  k->has_null = has_null;
  k->sorted = sorted;
  if (lo > hi) {   /* only NULLs: the key orders nothing */
    k->min = k->max = 0;
    k->bits = 0;
  } else {
    k->min = lo;
    k->max = hi;
    k->bits = nsl__bitwidth(hi - lo + (uint64_t)has_null);
  }
  return NSL_OK;
}

/* Composite codes of keys[0..nk) for m rows into out: rows[off..off+m)
 * when rows is given, else rows off..off+m-1. */
static void composite_block(const sort_key *keys, int nk, const int64_t *rows, int64_t off, int64_t m,
                            uint64_t *out) {
  uint64_t buf[BLOCK];
  memset(out, 0, (size_t)m * sizeof *out);
  for (int q = 0; q < nk; q++) {
    const sort_key *k = &keys[q];
    nsl__order_codes(k->col, rows ? rows + off : NULL, off, m, k->ranks, buf);
    uint64_t hn = (uint64_t)k->has_null, mn = k->min, mx = k->max;
    int b = k->bits;
    if (b >= 64) {   /* a lone full-width key */
      for (int64_t i = 0; i < m; i++) out[i] = buf[i] ? (k->desc ? mx - buf[i] : buf[i] - mn) + hn : 0;
    } else if (k->desc) {
      for (int64_t i = 0; i < m; i++) out[i] = (out[i] << b) | (buf[i] ? mx - buf[i] + hn : 0);
    } else {
      for (int64_t i = 0; i < m; i++) out[i] = (out[i] << b) | (buf[i] ? buf[i] - mn + hn : 0);
    }
  }
}

/* Composites this narrow (with no more codes than rows) are sorted by
 * counting, with no scratch of n codes. */
enum { LEAD_BITS = 16 };

/* sort_pass for a composite of at most LEAD_BITS bits: the codes counted,
 * then each row placed, both from codes made again block by block. */
static nsl_status counting_pass(const sort_key *keys, int nk, int bits, int64_t *perm, int first, int64_t n,
                                nsl_error *err) {
  const int64_t *rows = first ? NULL : perm;
  int64_t *at = calloc(((size_t)1 << bits) + 1, sizeof *at);   /* rows per code, then where the next goes */
  int64_t *to = first ? perm : nsl__big_alloc((size_t)n * sizeof *to);
  if (!at || !to) {
    free(at);
    if (!first) nsl__big_free(to);
    return nsl_error_set(err, NSL_ERR_NOMEM, "argsort: out of memory for %lld rows", (long long)n);
  }
  uint64_t code[BLOCK];
  for (int64_t off = 0; off < n; off += BLOCK) {
    int64_t m = n - off < BLOCK ? n - off : BLOCK;
    composite_block(keys, nk, rows, off, m, code);
    for (int64_t i = 0; i < m; i++) at[code[i] + 1]++;
  }
  for (size_t c = 1; c <= (size_t)1 << bits; c++) at[c] += at[c - 1];
  for (int64_t off = 0; off < n; off += BLOCK) {
    int64_t m = n - off < BLOCK ? n - off : BLOCK;
    composite_block(keys, nk, rows, off, m, code);
    for (int64_t i = 0; i < m; i++) to[at[code[i]]++] = first ? off + i : perm[off + i];
  }
  if (!first) {
    memcpy(perm, to, (size_t)n * sizeof *perm);
    nsl__big_free(to);
  }
  free(at);
  return NSL_OK;
}

/* Stable sort of perm (n rows; identity when first) by the composite of
 * keys[0..nk) whose total width is bits. */
static nsl_status sort_pass(const sort_key *keys, int nk, int bits, int64_t *perm, int first, int64_t n,
                            nsl_error *err) {
  if (bits <= LEAD_BITS && ((int64_t)1 << bits) <= n) return counting_pass(keys, nk, bits, perm, first, n, err);
  int ib = nsl__bitwidth((uint64_t)(n - 1));
  const int64_t *rows = first ? NULL : perm;
  if (bits + ib <= 64) {   /* composite code and position in one word */
    /* scratch: the first pass sorts through perm itself */
    uint64_t *a = nsl__big_alloc((size_t)n * sizeof *a);
    uint64_t *t = first ? (uint64_t *)perm : nsl__big_alloc((size_t)n * sizeof *t);
    if (!a || !t) {
      nsl__big_free(a);
      if (!first) nsl__big_free(t);
      return nsl_error_set(err, NSL_ERR_NOMEM, "argsort: out of memory for %lld rows", (long long)n);
    }
    for (int64_t off = 0; off < n; off += BLOCK) {
      int64_t m = n - off < BLOCK ? n - off : BLOCK;
      composite_block(keys, nk, rows, off, m, a + off);
      for (int64_t i = off; i < off + m; i++) a[i] = (a[i] << ib) | (uint64_t)i;
    }
    uint64_t *r = nsl__radix_u64(a, t, n, ib, ib + bits);
    uint64_t pmask = ib ? (~0ull >> (64 - ib)) : 0;
    if (first)   /* in place when r is perm */
      for (int64_t i = 0; i < n; i++) perm[i] = (int64_t)(r[i] & pmask);
    else {
      int64_t *np = (int64_t *)(r == a ? t : a);
      for (int64_t i = 0; i < n; i++) np[i] = perm[r[i] & pmask];
      memcpy(perm, np, (size_t)n * sizeof *perm);
      nsl__big_free(t);
    }
    nsl__big_free(a);
    return NSL_OK;
  }
  nsl__kv *a = nsl__big_alloc((size_t)n * sizeof *a), *t = nsl__big_alloc((size_t)n * sizeof *t);
  if (!a || !t) {
    nsl__big_free(a);
    nsl__big_free(t);
    return nsl_error_set(err, NSL_ERR_NOMEM, "argsort: out of memory for %lld rows", (long long)n);
  }
  uint64_t buf[BLOCK];
  for (int64_t off = 0; off < n; off += BLOCK) {
    int64_t m = n - off < BLOCK ? n - off : BLOCK;
    composite_block(keys, nk, rows, off, m, buf);
    for (int64_t i = 0; i < m; i++) a[off + i] = (nsl__kv){buf[i], first ? off + i : perm[off + i]};
  }
  nsl__kv *r = nsl__radix_kv(a, t, n, bits);
  for (int64_t i = 0; i < n; i++) perm[i] = r[i].v;
  free(a);
  free(t);
  return NSL_OK;
}

/* The leading keys' composites of the rows, when wider than a counting
 * sort takes (thread ids, process ids) but of few distinct values, numbered
 * densely in their order: an open-addressing table from composite to its
 * number.  (A row's number keeps the rows' order by the leading keys, so
 * sorting by number is sorting by them.) */
enum { DENSE_MAX = 1 << LEAD_BITS };
typedef struct dense_groups {
  int tbits;
  int64_t n;        /* distinct composites */
  uint64_t *key;    /* per slot */
  uint32_t *num;    /* per slot: the composite's number (after dense_number) */
  uint8_t *used;    /* per slot */
} dense_groups;

static inline size_t dense_slot(const dense_groups *d, uint64_t x) {
  size_t s = (size_t)((x * 0x9E3779B97F4A7C15ull) >> (64 - d->tbits)), mask = ((size_t)1 << d->tbits) - 1;
  while (d->used[s] && d->key[s] != x) s = (s + 1) & mask;
  return s;
}

static void dense_free(dense_groups *d) {
  free(d->key);
  free(d->num);
  free(d->used);
  memset(d, 0, sizeof *d);
}

/* The distinct composites of keys[0..nk) over the n rows, numbered in
 * their order; 0 (d freed) when more than max or out of memory. */
static int dense_number(const sort_key *keys, int nk, int64_t n, int64_t max, dense_groups *d) {
  memset(d, 0, sizeof *d);
  d->tbits = nsl__bitwidth((uint64_t)(2 * max - 1));   /* at most half full */
  size_t slots = (size_t)1 << d->tbits;
  d->key = malloc(slots * sizeof *d->key);
  d->num = malloc(slots * sizeof *d->num);
  d->used = calloc(slots, 1);
  uint64_t *sorted = NULL, *tmp = NULL, buf[BLOCK], prev = 0;
  int have = 0;
  if (!d->key || !d->num || !d->used) goto fail;
  for (int64_t off = 0; off < n; off += BLOCK) {
    int64_t m = n - off < BLOCK ? n - off : BLOCK;
    composite_block(keys, nk, NULL, off, m, buf);
    for (int64_t i = 0; i < m; i++) {
      if (have && buf[i] == prev) continue;   /* (rows of one thread come together) */
      prev = buf[i];
      have = 1;
      size_t s = dense_slot(d, buf[i]);
      if (d->used[s]) continue;
      if (d->n == max) goto fail;
      d->used[s] = 1;
      d->key[s] = buf[i];
      d->n++;
    }
  }
  sorted = malloc((size_t)d->n * sizeof *sorted + 1);
  tmp = malloc((size_t)d->n * sizeof *tmp + 1);
  if (!sorted || !tmp) goto fail;
  int64_t k = 0;
  for (size_t s = 0; s < slots; s++)
    if (d->used[s]) sorted[k++] = d->key[s];
  nsl__sort_u64(sorted, d->n, tmp);
  for (int64_t r = 0; r < d->n; r++) d->num[dense_slot(d, sorted[r])] = (uint32_t)r;
  free(sorted);
  free(tmp);
  return 1;
fail:
  free(sorted);
  free(tmp);
  dense_free(d);
  return 0;
}

/* When the rows of every group of the leading keys nearly come in the
 * order of the last key, a wide one (a time), already -- each thread's
 * calls in start order but for a few recorded late, or a block of them
 * recorded after the others (a buffer flushed late: nsys's exports end each
 * thread's CUDA calls with one), the threads' rows interleaved; a device's
 * kernels, then its copies -- each row goes to the first of two piles whose
 * group it keeps in order (at least the latest of its group in that pile),
 * or else among the others (at most a third), which are sorted apart.  Each
 * pile is placed by a stable counting sort of the group, and the three are
 * merged by (code, row).  A group is the leading keys' composite when it has
 * at most LEAD_BITS bits, else its number among the distinct composites
 * (dense_number: at most DENSE_MAX).  Returns 1 with perm filled, else 0
 * (perm was only scratch). */
static int sort_ordered_groups(const sort_key *sk, int nk, int64_t *perm, int64_t n) {
  if (nk < 1 || n < 2) return 0;
  int lb = 0, zb = sk[nk - 1].bits;
  for (int k = 0; k < nk - 1; k++) lb += sk[k].bits;
  if (zb <= LEAD_BITS || lb > 64) return 0;   /* (a narrow last key: one counting pass) */
  dense_groups dg = {0};
  int dense = lb > LEAD_BITS;
  if (dense) {   /* wide leading keys: numbered, when they are few (a few threads' ids) */
    int64_t most = n / 8 < DENSE_MAX ? n / 8 : DENSE_MAX;
    if (most < 2 || !dense_number(sk, nk - 1, n, most, &dg)) return 0;
    lb = nsl__bitwidth((uint64_t)(dg.n > 1 ? dg.n - 1 : 0));
  }
  if (lb + zb > 64 || (dense && zb >= 64)) {   /* (a number shifted past the word) */
    dense_free(&dg);
    return 0;
  }
  size_t ng = (size_t)1 << lb;
  int64_t max_rest = n / 3, nr = 0, nb = 0;
  uint64_t *code = nsl__big_alloc((size_t)n * sizeof *code);   /* the whole composite of every row */
  int64_t *at = calloc(ng + 1, sizeof *at);   /* per group its rows in the first pile, then where the next goes */
  int64_t *bt = calloc(ng + 1, sizeof *bt);   /* the same of the second pile */
  uint64_t *last = calloc(ng, sizeof *last);  /* the group's latest code in the first pile so far */
  uint64_t *last2 = calloc(ng, sizeof *last2);   /* ... in the second */
  uint8_t *pile = nsl__big_alloc((size_t)n);  /* each row's: 0, 1, or 2 (the others) */
  nsl__kv *rest = malloc((size_t)(max_rest > 0 ? max_rest : 1) * 2 * sizeof *rest);   /* (code, row), scratch */
  int64_t *second = NULL;
  int ok = code && at && bt && last && last2 && pile && rest;
  uint64_t lead[BLOCK], prev = 0, prev_num = 0;
  int have = 0;
  for (int64_t off = 0; ok && off < n; off += BLOCK) {
    int64_t m = n - off < BLOCK ? n - off : BLOCK;
    if (dense) {   /* the group's number, then the last key's code */
      composite_block(sk, nk - 1, NULL, off, m, lead);
      composite_block(sk + nk - 1, 1, NULL, off, m, code + off);
      for (int64_t i = 0; i < m; i++) {
        if (!have || lead[i] != prev) {
          prev = lead[i];
          prev_num = dg.num[dense_slot(&dg, lead[i])];
          have = 1;
        }
        code[off + i] |= prev_num << zb;
      }
    } else
      composite_block(sk, nk, NULL, off, m, code + off);
    for (int64_t i = off; i < off + m; i++) {
      uint64_t c = code[i], g = zb >= 64 ? 0 : c >> zb;
      if (c >= last[g]) {
        last[g] = c;
        at[g + 1]++;
        pile[i] = 0;
      } else if (c >= last2[g]) {
        last2[g] = c;
        bt[g + 1]++;
        pile[i] = 1;
        nb++;
      } else if (nr < max_rest) {
        rest[nr++] = (nsl__kv){c, i};
        pile[i] = 2;
      } else {
        ok = 0;
        break;
      }
    }
    if (3 * nr > off + m + BLOCK) ok = 0;   /* a third out of order so far: keys in no order stop early */
  }
  if (ok && nb > 0 && !(second = malloc((size_t)nb * sizeof *second))) ok = 0;
  if (ok) {
    /* the first pile by group into perm[n - na, n), the second into its own array; a merge of the three
     * (by code, then row) fills perm from the front, never past the first pile's next unread row */
    int64_t na = n - nb - nr;
    at[0] = n - na;
    bt[0] = 0;
    for (size_t g = 1; g <= ng; g++) at[g] += at[g - 1], bt[g] += bt[g - 1];
    for (int64_t i = 0; i < n; i++) {
      if (pile[i] == 2) continue;
      uint64_t g = zb >= 64 ? 0 : code[i] >> zb;
      if (pile[i] == 0) perm[at[g]++] = i;
      else second[bt[g]++] = i;
    }
    nsl__kv *r = nsl__radix_kv(rest, rest + max_rest, nr, lb + zb);   /* stable: rows in order within a code */
    if (nb > 0 || nr > 0) {   /* (a row the first pile leaves goes to the second while it can: none, no others) */
      int64_t a = n - na, b = 0, c = 0, k = 0;
      while (b < nb || c < nr) {   /* (then k has reached a: the first pile's rows left are in place) */
        /* the least (code, row) of the heads: the first pile's, the second's, the others' */
        int64_t row = -1;
        uint64_t best = 0;
        int from = -1;
        if (a < n) row = perm[a], best = code[row], from = 0;
        if (b < nb && (from < 0 || code[second[b]] < best || (code[second[b]] == best && second[b] < row)))
          row = second[b], best = code[row], from = 1;
        if (c < nr && (from < 0 || r[c].k < best || (r[c].k == best && r[c].v < row))) row = r[c].v, from = 2;
        if (from == 0) a++;
        else if (from == 1) b++;
        else c++;
        perm[k++] = row;
      }
    }
  }
  nsl__big_free(code);
  nsl__big_free(pile);
  free(at);
  free(bt);
  free(last);
  free(last2);
  free(rest);
  free(second);
  dense_free(&dg);
  return ok;
}

nsl_column *nsl_argsort(const nsl_column *const *keys, const int *desc, int nkeys, nsl_error *err) {
  if (nsl__check_keys(keys, nkeys, "argsort", err) != NSL_OK) return NULL;
  int64_t n = keys[0]->len;
  int nk = 0;   /* keys that order something, in significance order */
  nsl_column *res = nsl_column_new(NSL_I64, n, NULL);
  sort_key *sk = calloc((size_t)nkeys, sizeof *sk);
  if (!res || !sk) {
    nsl_error_set(err, NSL_ERR_NOMEM, "argsort: out of memory for %lld rows", (long long)n);
    goto fail;
  }
  nsl__advise_huge(res->data, (size_t)n * sizeof(int64_t));   /* the first radix pass scatters into it */
  int64_t *perm = nsl_i64(res);
  for (int k = 0; k < nkeys; k++) {
    sk[nk].col = keys[k];
    sk[nk].desc = desc && desc[k];
    if (scan_key(&sk[nk], err) != NSL_OK) {
      nk++;
      goto fail;
    }
    if (sk[nk].bits > 0) nk++;
    else {
      free(sk[nk].ranks);   /* a constant key orders nothing; its slot is reused */
      sk[nk].ranks = NULL;
    }
  }
  /* The last key, when the rows already come in its order, needs no pass: the LSD passes start from the
   * identity, which is its stable sort (exports store most tables in start order, and filters and takes
   * keep it) -- then the key before it, likewise. */
  while (nk > 0 && sk[nk - 1].sorted) {
    free(sk[nk - 1].ranks);
    sk[nk - 1].ranks = NULL;
    nk--;
  }
  int first = 1;
  if (sort_ordered_groups(sk, nk, perm, n)) first = 0;
  else if (n > 1) {
    /* Group keys (most significant first) into composites of <= 64 bits,
     * then sort from the last composite back: one pass of (code, row)
     * pairs beats two passes of packed words and a gather. */
    int end = nk;
    while (end > 0) {
      int beg = end - 1, bits = sk[beg].bits;
      while (beg > 0 && bits + sk[beg - 1].bits <= 64) bits += sk[--beg].bits;
      if (sort_pass(sk + beg, end - beg, bits, perm, first, n, err) != NSL_OK) goto fail;
      first = 0;
      end = beg;
    }
  }
  if (first)
    for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int k = 0; k < nk; k++) free(sk[k].ranks);
  free(sk);
  return res;
fail:
  if (sk)
    for (int k = 0; k < nk; k++) free(sk[k].ranks);
  free(sk);
  nsl_column_release(res);
  return NULL;
}

/* ---- unique, searchsorted ----------------------------------------------- */

nsl_column *nsl_column_unique(const nsl_column *c, nsl_error *err) {
  if (!c || (unsigned)c->type > NSL_BOOL) {
    nsl_error_set(err, NSL_ERR_ARG, "unique: no column");
    return NULL;
  }
  int64_t n = c->len, nu = 0;
  uint64_t *ranks = NULL, *codes = NULL, *tmp = NULL;
  int32_t *id_of_rank = NULL;
  nsl_column *res = NULL;
  if (c->type == NSL_STR && c->dict && !(ranks = nsl__str_ranks(c, err))) return NULL;
  codes = nsl__big_alloc((size_t)n * sizeof *codes);
  tmp = nsl__big_alloc((size_t)n * sizeof *tmp);
  if (!codes || !tmp) goto nomem;
  nsl__order_codes(c, NULL, 0, n, ranks, codes);
  nsl__sort_u64(codes, n, tmp);
  for (int64_t i = 0; i < n; i++)   /* distinct non-NULL codes, compacted */
    if (codes[i] && (nu == 0 || codes[nu - 1] != codes[i])) codes[nu++] = codes[i];
  if (!(res = nsl_column_new(c->type, nu, c->dict))) goto nomem;
  switch (c->type) {
  case NSL_I64:
    for (int64_t i = 0; i < nu; i++) nsl_i64(res)[i] = nsl__ocode_to_i64(codes[i]);
    break;
  case NSL_I32:
    for (int64_t i = 0; i < nu; i++) nsl_i32(res)[i] = (int32_t)nsl__ocode_to_i64(codes[i]);
    break;
  case NSL_F64:
    for (int64_t i = 0; i < nu; i++) nsl_f64(res)[i] = nsl__ocode_to_f64(codes[i]);
    break;
  case NSL_BOOL:
    for (int64_t i = 0; i < nu; i++) nsl_bool(res)[i] = (uint8_t)(codes[i] - 1);
    break;
  case NSL_STR: {
    if (!ranks) {   /* no dictionary: ids in id order */
      for (int64_t i = 0; i < nu; i++) nsl_i32(res)[i] = (int32_t)(codes[i] - 1);
      break;
    }
    int32_t nd = nsl_dict_size(c->dict);
    if (!(id_of_rank = malloc((size_t)(nu + 1) * sizeof *id_of_rank))) goto nomem;
    for (int32_t id = 0; id < nd; id++)
      if (ranks[id]) id_of_rank[ranks[id] - 1] = id;
    for (int64_t i = 0; i < nu; i++) nsl_i32(res)[i] = id_of_rank[codes[i] - 1];
    break;
  }
  }
  goto done;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "unique: out of memory for %lld rows", (long long)n);
  nsl_column_release(res);
  res = NULL;
done:
  free(ranks);
  nsl__big_free(codes);
  nsl__big_free(tmp);
  free(id_of_rank);
  return res;
}

/* Codes of c in a domain shared by two columns: 0 integers (sign-flipped
 * int64), 1 doubles, 2 strings (ranks); NULL is 0 in each. */
static void domain_codes(const nsl_column *c, int dom, const uint64_t *ranks, uint64_t *out) {
  int64_t n = c->len;
  if (dom == 2) {
    nsl__order_codes(c, NULL, 0, n, ranks, out);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    if (dom == 1) out[i] = nsl__ocode_f64(nsl__f64_at(c, i));
    else {
      int null;
      int64_t x = nsl__int_at(c, i, &null);
      out[i] = null ? 0 : nsl__ocode_i64(x);
    }
  }
}

/* ---- each group's rows in start order, from runs ---------------------------------------- */

/* The work of nsl__group_runs, shared by its parts: each part's counts and
 * then places per group (part k's at cnt[k * ngroups ..]), the groups'
 * ends, the ranges of groups of the last passes ([gfrom[j], gfrom[j + 1])),
 * the rows in group order (x) and the merges' scratch (y): rows alone, a
 * row's start read from the column (the rows of a run ascend, so their
 * starts are read in address order). */
typedef struct runs_job {
  const int64_t *go, *s64;
  const int32_t *s32;
  int64_t ngroups, per, *cnt, *ends, *gfrom;
  int64_t *x, *y;
  _Atomic int64_t descents, passes;   /* passes: the merges' rows times passes over them (runs_descents) */
} runs_job;

/* The start of row i (not NULL: only such rows are ordered). */
static inline int64_t run_key(const runs_job *r, int64_t i) { return r->s64 ? r->s64[i] : r->s32[i]; }

/* The runs of x[0..n) (each ascending by start; rows in row order) merged
 * at once into y, then back into x, when they are at most MERGE_WAYS: each
 * place takes the least head (the earliest run's on ties), so one pass
 * instead of one per halving (a GPU's kernels, copies and memsets: three
 * runs, two passes pairwise).  0 (nothing done) when there are more runs. */
enum { MERGE_WAYS = 8 };
static int merge_few_runs(const runs_job *r, int64_t *x, int64_t *y, int64_t n) {
  int64_t at[MERGE_WAYS], end[MERGE_WAYS], head[MERGE_WAYS];
  int k = 0;
  for (int64_t i = 0; i < n;) {
    if (k == MERGE_WAYS) return 0;
    at[k] = i++;
    while (i < n && run_key(r, x[i]) >= run_key(r, x[i - 1])) i++;
    end[k++] = i;
  }
  for (int j = 0; j < k; j++) head[j] = run_key(r, x[at[j]]);
  for (int64_t o = 0; o < n; o++) {
    int b = -1;
    for (int j = 0; j < k; j++)
      if (at[j] < end[j] && (b < 0 || head[j] < head[b])) b = j;
    y[o] = x[at[b]++];
    if (at[b] < end[b]) head[b] = run_key(r, x[at[b]]);
  }
  memcpy(x, y, (size_t)n * sizeof *x);
  return 1;
}

/* x[0..n) by (start, row) where it ascends in runs of rows in row order:
 * a few runs merged at once (merge_few_runs), more merged pairwise
 * neighbour by neighbour (the earlier run first on ties, so the rows of
 * one start stay in row order), from one buffer into the other and back,
 * until one run is left, which ends in x; y is scratch of n. */
static void merge_runs(const runs_job *r, int64_t *x, int64_t *y, int64_t n) {
  if (merge_few_runs(r, x, y, n)) return;
  int64_t *from = x, *to = y;
  for (;;) {
    int64_t i = 0, runs = 0;
    while (i < n) {
      int64_t a0 = i++;
      while (i < n && run_key(r, from[i]) >= run_key(r, from[i - 1])) i++;
      int64_t a1 = i;
      if (i < n) i++;
      while (i < n && run_key(r, from[i]) >= run_key(r, from[i - 1])) i++;
      int64_t p = a0, q = a1, o = a0;   /* [a0, a1) and [a1, i) into to[a0, i) */
      while (p < a1 && q < i) to[o++] = run_key(r, from[q]) < run_key(r, from[p]) ? from[q++] : from[p++];
      if (p < a1) memcpy(to + o, from + p, (size_t)(a1 - p) * sizeof *to);
      else if (q < i) memcpy(to + o, from + q, (size_t)(i - q) * sizeof *to);
      runs++;
    }
    int64_t *t = from;
    from = to;
    to = t;
    if (runs <= 1) break;
  }
  if (from != x) memcpy(x, from, (size_t)n * sizeof *x);
}

/* Whether row i is ordered (in a group, start not NULL). */
static inline int runs_row(const runs_job *r, int64_t i) {
  if (r->go[i] < 0) return 0;
  return r->s64 ? r->s64[i] != NSL_NULL_I64 : r->s32[i] != NSL_NULL_I32;
}

static void runs_count(void *ctx, int64_t lo, int64_t hi) {
  runs_job *r = ctx;
  int64_t *c = r->cnt + lo / r->per * r->ngroups;
  for (int64_t i = lo; i < hi; i++)
    if (runs_row(r, i)) c[r->go[i]]++;
}

static void runs_scatter(void *ctx, int64_t lo, int64_t hi) {
  runs_job *r = ctx;
  int64_t *at = r->cnt + lo / r->per * r->ngroups;
  for (int64_t i = lo; i < hi; i++)
    if (runs_row(r, i)) r->x[at[r->go[i]]++] = i;
}

/* The descents of each group's rows, and what merging them would cost: a group of n rows in k runs, n rows
 * once for up to MERGE_WAYS runs (merge_few_runs), else n times the halvings of k (merge_runs). */
static void runs_descents(void *ctx, int j) {
  runs_job *r = ctx;
  int64_t d = 0, passes = 0, from = r->gfrom[j] ? r->ends[r->gfrom[j] - 1] : 0;
  for (int64_t g = r->gfrom[j]; g < r->gfrom[j + 1]; from = r->ends[g++]) {
    int64_t dg = 0;
    for (int64_t i = from + 1; i < r->ends[g]; i++) dg += run_key(r, r->x[i]) < run_key(r, r->x[i - 1]);
    int halvings = 0;
    for (int64_t k = dg + 1; k > 1; k = (k + 1) / 2) halvings++;
    if (dg) passes += (r->ends[g] - from) * (dg + 1 <= MERGE_WAYS ? 1 : halvings);
    d += dg;
  }
  r->descents += d;
  r->passes += passes;
}

static void runs_merge(void *ctx, int j) {
  runs_job *r = ctx;
  int64_t from = r->gfrom[j] ? r->ends[r->gfrom[j] - 1] : 0;
  for (int64_t g = r->gfrom[j]; g < r->gfrom[j + 1]; from = r->ends[g++])
    for (int64_t i = from + 1; i < r->ends[g]; i++)
      if (run_key(r, r->x[i]) < run_key(r, r->x[i - 1])) {
        merge_runs(r, r->x + from, r->y + from, r->ends[g] - from);
        break;
      }
}

/* See kernels_internal.h. */
int nsl__group_runs(const int64_t *go, int64_t ngroups, const nsl_column *start, int64_t **rows,
                    int64_t **ends) {
  *rows = NULL;
  *ends = NULL;
  int64_t n = start->len, per = nsl__rows_per_part(n), parts = n ? (n + per - 1) / per : 1;
  if (n == 0 || ngroups <= 0 || ngroups > n / 4 / parts || (start->type != NSL_I64 && start->type != NSL_I32))
    return 0;
  runs_job r = {.go = go, .ngroups = ngroups, .per = per};
  if (start->type == NSL_I64) r.s64 = nsl_i64(start);
  else r.s32 = nsl_i32(start);
  int rc = -1, threads = nsl__thread_count((int)(ngroups < 64 ? ngroups : 64));
  r.cnt = nsl__big_calloc((size_t)(ngroups * parts), sizeof *r.cnt);
  r.ends = nsl__big_alloc((size_t)ngroups * sizeof *r.ends);
  r.x = nsl__big_alloc((size_t)n * sizeof *r.x);
  r.gfrom = calloc((size_t)threads + 1, sizeof *r.gfrom);
  if (!r.cnt || !r.ends || !r.x || !r.gfrom) goto done;
  nsl__run_rows(n, runs_count, &r);
  int64_t m = 0;   /* each part's first place in each group, in part order; each group's end */
  for (int64_t g = 0; g < ngroups; g++) {
    for (int64_t k = 0; k < parts; k++) {
      int64_t c = r.cnt[k * ngroups + g];
      r.cnt[k * ngroups + g] = m;
      m += c;
    }
    r.ends[g] = m;
  }
  nsl__run_rows(n, runs_scatter, &r);
  int gparts = 0;   /* the groups cut into ranges of about m / threads rows */
  for (int64_t g = 0; g < ngroups && gparts < threads; g++)
    if (r.ends[g] >= m * (gparts + 1) / threads || g == ngroups - 1) r.gfrom[++gparts] = g + 1;
  r.gfrom[gparts] = ngroups;
  nsl__run_parallel(gparts, threads, runs_descents, &r);
  rc = 0;
  /* merged where the rows descend rarely, or where the merges take a few passes over the rows (groups of a
   * few runs each: a collective's window, its work and then the collectives around it), against the radix
   * passes of a sort */
  if (r.descents > m / 64 && r.passes > 4 * m) goto done;
  if (r.descents) {
    if (!(r.y = nsl__big_alloc((size_t)(m ? m : 1) * sizeof *r.y))) {
      rc = -1;
      goto done;
    }
    nsl__run_parallel(gparts, threads, runs_merge, &r);
  }
  *rows = r.x;
  *ends = r.ends;
  r.x = NULL;
  r.ends = NULL;
  rc = 1;
done:
  nsl__big_free(r.cnt);
  nsl__big_free(r.ends);
  nsl__big_free(r.x);
  nsl__big_free(r.y);
  free(r.gfrom);
  return rc;
}

/* See kernels_internal.h. */
nsl_status nsl__order_by_group_start(const nsl_column *group, const nsl_column *start, int skip_negative,
                                     nsl__order *o, nsl_error *err) {
  memset(o, 0, sizeof *o);
  int64_t n = group->len, lo = INT64_MAX, hi = -1;
  if (group->type == NSL_I64 && start->len == n && n > 0) {
    const int64_t *g = nsl_i64(group);
    for (int64_t i = 0; i < n; i++) {   /* (NULL is the least int64) */
      if (g[i] < lo) lo = g[i];
      if (g[i] > hi) hi = g[i];
    }
    if ((lo >= 0 || skip_negative) && hi >= 0 && hi < n) {   /* (ids: fewer groups than rows) */
      int64_t *ends;
      int r = nsl__group_runs(g, hi + 1, start, &o->runs, &ends);
      if (r < 0) return nsl_error_set(err, NSL_ERR_NOMEM, "sort: out of memory for %lld rows", (long long)n);
      if (r) {
        o->n = ends[hi];
        nsl__big_free(ends);
        return NSL_OK;
      }
    }
  }
  const nsl_column *keys[2] = {group, start};
  if (!(o->perm = nsl_argsort(keys, NULL, 2, err))) return err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
  o->n = o->perm->len;
  return NSL_OK;
}

/* The group of place q of an order as a number that never falls along it
 * (NULL before every value, as the argsort puts it): 0 for NULL, else the
 * value's order code (never 0). */
static inline uint64_t split_key(const nsl__order *o, const nsl_column *group_of, int64_t q) {
  int null;
  int64_t g = nsl__int_at(group_of, nsl__order_row(o, q), &null);
  return null ? 0 : nsl__ocode_i64(g);   /* (0 is INT64_MIN's, NULL itself in an I64 column) */
}

/* The first place in [lo, hi) whose split_key is above x (right) or at
 * least x (left); hi when none. */
static int64_t split_bound(const nsl__order *o, const nsl_column *group_of, int64_t lo, int64_t hi, uint64_t x,
                           int right) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    uint64_t k = split_key(o, group_of, mid);
    if (right ? k <= x : k < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* See kernels_internal.h.  The groups come in ascending order along the
 * order, so each cut is two binary searches: back to where the group at
 * the even cut begins, or, when it began at the previous cut, on to its end. */
int nsl__order_split(const nsl__order *o, const nsl_column *group_of, int64_t *from) {
  int64_t n = o->n, per = nsl__rows_per_part(n);
  if (n == 0) return 0;
  int64_t want = n > per ? (n + per - 1) / per : 1;   /* (the threads: at most 64) */
  int parts = want < NSL__SPLIT_MAX ? (int)want : NSL__SPLIT_MAX, k = 0;
  from[0] = 0;
  for (int p = 1; p < parts; p++) {
    int64_t q = n / parts * p + n % parts * p / parts;   /* (no overflow for any n) */
    if (q <= from[k]) continue;
    uint64_t g = split_key(o, group_of, q);
    int64_t b = split_bound(o, group_of, from[k], q, g, 0);
    if (b == from[k]) b = split_bound(o, group_of, q, n, g, 1);
    if (b >= n) break;
    from[++k] = b;
  }
  from[++k] = n;
  return k;
}

void nsl__order_free(nsl__order *o) {
  nsl__big_free(o->runs);
  nsl_column_release(o->perm);
  memset(o, 0, sizeof *o);
}

/* Values [from, to) of a search (nsl__run_rows): out[j] = the first index of
 * the n sorted codes s whose code is >= v[j] (left) or > v[j] (right). */
typedef struct search_job {
  const uint64_t *s;
  int64_t n;
  const uint64_t *v;
  int right;
  int64_t *out;
} search_job;

/* A value at or above the one before it has its place at or after that
 * one's: found by galloping from there (a step or two where the values
 * come in order, as times do), then a binary search; any other value by a
 * binary search of the whole. */
static void search_rows(void *p, int64_t from, int64_t to) {
  const search_job *sj = p;
  const uint64_t *s = sj->s;
  int64_t n = sj->n, at = -1;
  uint64_t before = 0;
  for (int64_t j = from; j < to; j++) {
    uint64_t x = sj->v[j];
    if (at >= 0 && x >= before) {   /* s[.. at) < before <= x (or <=): the place is in [at, n] */
      int64_t lo = at, hi = at, step = 1;
      while (hi < n && (sj->right ? s[hi] <= x : s[hi] < x)) {
        lo = hi + 1;
        hi += step;
        step *= 2;
      }
      if (hi > n) hi = n;
      at = lo + nsl__bound_u64(s + lo, hi - lo, x, sj->right);
    } else
      at = nsl__bound_u64(s, n, x, sj->right);
    sj->out[j] = at;
    before = x;
  }
}

nsl_column *nsl_searchsorted(const nsl_column *sorted, const nsl_column *values, int right,
                             nsl_error *err) {
  if (!sorted || !values || (unsigned)sorted->type > NSL_BOOL || (unsigned)values->type > NSL_BOOL) {
    nsl_error_set(err, NSL_ERR_ARG, "searchsorted: missing column");
    return NULL;
  }
  int sstr = sorted->type == NSL_STR, vstr = values->type == NSL_STR;
  if (sstr != vstr || (sstr && sorted->dict != values->dict)) {
    nsl_error_set(err, NSL_ERR_ARG, "searchsorted: cannot compare a %s column with a %s column%s",
                  nsl_type_name(sorted->type), nsl_type_name(values->type),
                  sstr && vstr ? " of another dictionary" : "");
    return NULL;
  }
  int dom = sstr ? 2 : (sorted->type == NSL_F64 || values->type == NSL_F64) ? 1 : 0;
  int64_t n = sorted->len, m = values->len;
  uint64_t *ranks = NULL, *s = NULL, *v = NULL;
  nsl_column *res = NULL;
  if (dom == 2) {
    const nsl_column *both[2] = {sorted, values};
    if (sorted->dict && !(ranks = str_ranks_of(both, 2, err))) return NULL;
  }
  s = nsl__big_alloc((size_t)n * sizeof *s);
  v = nsl__big_alloc((size_t)m * sizeof *v);
  res = nsl_column_new(NSL_I64, m, NULL);
  if (!s || !v || !res) {
    nsl_error_set(err, NSL_ERR_NOMEM, "searchsorted: out of memory");
    goto fail;
  }
  domain_codes(sorted, dom, ranks, s);
  domain_codes(values, dom, ranks, v);
  for (int64_t i = 1; i < n; i++)
    if (s[i] < s[i - 1]) {
      nsl_error_set(err, NSL_ERR_ARG,
                    "searchsorted: the sorted column is not in ascending order (NULLs first) at row %lld",
                    (long long)i);
      goto fail;
    }
  search_job sj = {s, n, v, right, nsl_i64(res)};
  nsl__run_rows(m, search_rows, &sj);
  free(ranks);
  nsl__big_free(s);
  nsl__big_free(v);
  return res;
fail:
  free(ranks);
  nsl__big_free(s);
  nsl__big_free(v);
  nsl_column_release(res);
  return NULL;
}
