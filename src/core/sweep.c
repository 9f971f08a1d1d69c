/* sweep.c -- sweeps over NVTX ranges: their projection onto the GPU
 * (nsl__nvtx_project) and the tree of their name paths (nsl__tree_paths).
 *
 * The projection gives every (report, pid, tid)-like key tuple a dense
 * thread id, groups the ranges and the API calls by thread (a counting
 * sort), orders each thread's rows by start (ranges: then longest first)
 * -- exports store them in that order already, so this is mostly a check
 * -- and walks both in one merge per thread with a stack of the ranges
 * open at the current time.  Each stack entry knows
 * whether every entry below it encloses it ("chain"); for properly nested
 * ranges (push/pop) that holds everywhere, so the innermost enclosing range
 * is found at the top.  Start/end ranges may overlap without nesting: then
 * the scan goes further down and keeps the shortest enclosing range, which
 * is nsys's "tightest" parent.  A call that launched GPU ops adds them to
 * every open range that encloses it, so sums stay exact however the ranges
 * overlap. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/parallel.h"
#include "core/nsl_internal.h"

#define MAX_KEYS 8

/* ---- the projection ---------------------------------------------------------- */

typedef struct open_range {
  int64_t row, start, stop;   /* stop INT64_MAX: open until the end */
  int chain;                  /* every entry below encloses this one */
} open_range;

typedef struct range_stack {
  open_range *e;
  int64_t n, cap, compact_at;
} range_stack;

/* GPU work launched by one API call. */
typedef struct call_ops {
  int64_t n, first, last, busy;
} call_ops;

static int int_col(const nsl_column *c) { return c && (c->type == NSL_I64 || c->type == NSL_I32); }

static nsl_status check_side(const char *side, const nsl_column *const *keys, int nkeys, const nsl_column *start,
                             const nsl_column *stop, nsl_error *err) {
  if (!keys || !int_col(start) || !int_col(stop))
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the %s need integer key, start and stop columns", side);
  for (int k = 0; k < nkeys; k++) {
    if (!int_col(keys[k]))
      return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: key %d of the %s is not an integer column", k + 1,
                           side);
    if (keys[k]->len != start->len)
      return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: key %d of the %s has %lld rows, start has %lld",
                           k + 1, side, (long long)keys[k]->len, (long long)start->len);
  }
  if (stop->len != start->len)
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the %s have %lld starts but %lld stops", side,
                         (long long)start->len, (long long)stop->len);
  if (start->len > INT32_MAX)   /* the sweep's orders hold 32-bit row numbers (half the scratch) */
    return nsl_error_set(err, NSL_ERR_LIMIT, "NVTX projection: %lld %s, at most 2^31 - 1", (long long)start->len,
                         side);
  return NSL_OK;
}

/* The ranges' side of the input: keys, times and mask (nsl__nvtx_top reads no more). */
static nsl_status check_ranges(const nsl__nvtx_input *in, nsl_error *err) {
  if (!in || in->nkeys < 1 || in->nkeys > MAX_KEYS)
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: need 1 to %d thread key columns", MAX_KEYS);
  nsl_status rc = check_side("ranges", in->range_keys, in->nkeys, in->range_start, in->range_stop, err);
  if (rc != NSL_OK) return rc;
  if (in->range_mask && (in->range_mask->type != NSL_BOOL || in->range_mask->len != in->range_start->len))
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the range mask must be a bool column of %lld rows",
                         (long long)in->range_start->len);
  return NSL_OK;
}

static nsl_status check_input(const nsl__nvtx_input *in, nsl_error *err) {
  nsl_status rc = check_ranges(in, err);
  if (rc == NSL_OK) rc = check_side("API calls", in->api_keys, in->nkeys, in->api_start, in->api_stop, err);
  if (rc != NSL_OK) return rc;
  if (!int_col(in->op_api) || !int_col(in->op_start) || !int_col(in->op_stop))
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the GPU ops need integer api, start and stop columns");
  if (in->op_start->len != in->op_api->len || in->op_stop->len != in->op_api->len)
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the GPU ops have %lld api rows, %lld starts, %lld stops",
                         (long long)in->op_api->len, (long long)in->op_start->len, (long long)in->op_stop->len);
  if (in->parents_only && (in->api_start->len > 0 || in->op_api->len > 0))
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: parents only takes no API calls and no GPU ops");
  return NSL_OK;
}

void nsl__nvtx_projection_free(nsl__nvtx_projection *p) {
  if (!p) return;
  nsl_column *cols[] = {p->parent, p->depth, p->proj_start, p->proj_dur, p->ops,
                        p->launches, p->gpu_time, p->children, p->api_range, p->op_range};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  memset(p, 0, sizeof *p);
}

static int stack_push(range_stack *s, int64_t row, int64_t start, int64_t stop) {
  if (s->n == s->cap) {
    int64_t cap = s->cap ? s->cap * 2 : 64;
    open_range *e = realloc(s->e, (size_t)cap * sizeof *e);
    if (!e) return 0;
    s->e = e;
    s->cap = cap;
  }
  int chain = s->n == 0 || (s->e[s->n - 1].stop >= stop && s->e[s->n - 1].chain);
  s->e[s->n++] = (open_range){row, start, stop, chain};
  return 1;
}

/* Drops the ranges that ended before t: from the top, and, when the stack
 * has grown past its mark (ranges that overlap without nesting leave ended
 * ones below open ones), from everywhere, recomputing the chain flags. */
static void stack_expire(range_stack *s, int64_t t) {
  while (s->n > 0 && s->e[s->n - 1].stop < t) s->n--;
  if (s->n <= s->compact_at) return;
  int64_t k = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->e[i].stop < t) continue;
    open_range e = s->e[i];
    e.chain = k == 0 || (s->e[k - 1].stop >= e.stop && s->e[k - 1].chain);
    s->e[k++] = e;
  }
  s->n = k;
  s->compact_at = 2 * k > 64 ? 2 * k : 64;
}

/* Per-range sums the calls add to (see nsl__nvtx_projection). */
typedef struct sums {
  int32_t *ops, *launches;
  int64_t *busy, *first, *last;
} sums;

static inline int32_t add_sat(int32_t a, int64_t b) {
  int64_t s = (int64_t)a + b;
  return s > INT32_MAX ? INT32_MAX : (int32_t)s;
}

/* The stack index of the shortest open range that encloses [.., stop] (all
 * open ranges start at or before the query), the topmost of equals; -1 when
 * none does.  With ops, adds them to every enclosing range. */
static int64_t stack_find(const range_stack *s, int64_t stop, const call_ops *ops, const sums *acc) {
  int64_t best = -1;
  uint64_t best_len = UINT64_MAX;
  for (int64_t i = s->n - 1; i >= 0; i--) {
    const open_range *e = &s->e[i];
    if (e->stop < stop) continue;
    uint64_t len = (uint64_t)e->stop - (uint64_t)e->start;
    if (len < best_len) {
      best = i;
      best_len = len;
    }
    if (ops) {
      int64_t r = e->row;
      acc->ops[r] = add_sat(acc->ops[r], ops->n);
      acc->launches[r] = add_sat(acc->launches[r], 1);
      acc->busy[r] += ops->busy;
      if (acc->first[r] == NSL_NULL_I64 || ops->first < acc->first[r]) acc->first[r] = ops->first;
      if (acc->last[r] == NSL_NULL_I64 || ops->last > acc->last[r]) acc->last[r] = ops->last;
    } else if (e->chain) {
      break;   /* every entry below encloses this one: none is shorter */
    }
  }
  return best;
}

/* The GPU work of every API call that launched some: slot[a] indexes ops
 * (or is -1).  api, start, stop: the ops' columns as int64.  Returns NSL_OK
 * or fills err. */
static nsl_status gather_call_ops(const int64_t *api, const int64_t *start, const int64_t *stop, int64_t no,
                                  int64_t na, int32_t *slot, call_ops **out, nsl_error *err) {
  int32_t nslots = 0;   /* at most na, fewer than 2^31 (check_side) */
  *out = NULL;
  for (int64_t a = 0; a < na; a++) slot[a] = -1;
  for (int64_t j = 0; j < no; j++) {
    int64_t a = api[j];
    if (a < 0) continue;   /* NULL included */
    if (a >= na)
      return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: GPU op %lld names API call %lld, but there are %lld",
                           (long long)j, (long long)a, (long long)na);
    if (slot[a] < 0) slot[a] = nslots++;
  }
  call_ops *ops = nsl__big_alloc((size_t)(nslots ? nslots : 1) * sizeof *ops);
  if (!ops) return nsl_error_set(err, NSL_ERR_NOMEM, "NVTX projection: out of memory for %lld calls", (long long)nslots);
  for (int64_t k = 0; k < nslots; k++) ops[k] = (call_ops){0, NSL_NULL_I64, NSL_NULL_I64, 0};
  for (int64_t j = 0; j < no; j++) {
    int64_t a = api[j], s = start[j], e = stop[j];
    if (a < 0 || s == NSL_NULL_I64 || e == NSL_NULL_I64) continue;
    call_ops *c = &ops[slot[a]];
    c->n++;
    c->busy += e - s;
    if (c->first == NSL_NULL_I64 || s < c->first) c->first = s;
    if (c->last == NSL_NULL_I64 || e > c->last) c->last = e;
  }
  *out = ops;
  return NSL_OK;
}

/* ---- threads and the order of events ---------------------------------------------- */

/* Key tuples -> dense thread ids, shared by the ranges and the calls. */
typedef struct thread_table {
  int nk;
  int64_t n, cap;        /* threads, capacity of keys */
  int64_t *keys;         /* n * nk */
  int64_t *slots;        /* hash index: -1 empty, else thread id */
  int64_t nslots;        /* power of two */
} thread_table;

static uint64_t tuple_hash(const int64_t *key, int nk) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < nk; k++) h = nsl__mix64(h ^ (uint64_t)key[k]);
  return h;
}

static int thread_grow(thread_table *t) {
  int64_t ns = t->nslots ? t->nslots * 2 : 64;
  int64_t *slots = malloc((size_t)ns * sizeof *slots);
  int64_t *keys = realloc(t->keys, (size_t)(ns / 2) * (size_t)t->nk * sizeof *keys);
  if (keys) t->keys = keys;
  if (!slots || !keys) {
    free(slots);
    return 0;
  }
  for (int64_t i = 0; i < ns; i++) slots[i] = -1;
  for (int64_t id = 0; id < t->n; id++) {
    uint64_t h = tuple_hash(t->keys + id * t->nk, t->nk) & (uint64_t)(ns - 1);
    while (slots[h] >= 0) h = (h + 1) & (uint64_t)(ns - 1);
    slots[h] = id;
  }
  free(t->slots);
  t->slots = slots;
  t->nslots = ns;
  t->cap = ns / 2;
  return 1;
}

/* The id of the thread with this key tuple, added when new; -1 on out of memory. */
static int64_t thread_id(thread_table *t, const int64_t *key) {
  if (t->n >= t->cap && !thread_grow(t)) return -1;
  uint64_t h = tuple_hash(key, t->nk) & (uint64_t)(t->nslots - 1);
  for (;;) {
    int64_t id = t->slots[h];
    if (id < 0) break;
    if (memcmp(t->keys + id * t->nk, key, (size_t)t->nk * sizeof *key) == 0) return id;
    h = (h + 1) & (uint64_t)(t->nslots - 1);
  }
  int64_t id = t->n++;
  memcpy(t->keys + id * t->nk, key, (size_t)t->nk * sizeof *key);
  t->slots[h] = id;
  return id;
}

/* One side of the sweep (ranges or calls): its usable rows grouped by
 * thread, each thread's rows sorted by start (ranges: then stop
 * descending, then row). */
typedef struct side {
  const int64_t *start, *stop;   /* the times as int64 */
  nsl_column *copy[2];           /* int64 copies of times given as I32 */
  int is_range;
  int64_t nrows;
  int32_t *thread;       /* per row: thread id, -1 when the row takes no part */
  int32_t *order;        /* usable rows (check_side: fewer than 2^31) */
  int64_t *seg;          /* per thread t: its rows are order[seg[t] .. seg[t+1]) */
} side;

/* Reads the times of a side (0 on out of memory). */
static int side_open(side *s, const nsl_column *start, const nsl_column *stop, int is_range) {
  memset(s, 0, sizeof *s);
  s->is_range = is_range;
  s->nrows = start->len;
  s->start = nsl__as_i64(start, &s->copy[0]);
  s->stop = nsl__as_i64(stop, &s->copy[1]);
  return s->start && s->stop;
}

static void side_free(side *s) {
  nsl__big_free(s->thread);
  nsl__big_free(s->order);
  free(s->seg);
  nsl_column_release(s->copy[0]);
  nsl_column_release(s->copy[1]);
  memset(s, 0, sizeof *s);
}

/* Start and stop of row i; ranges: a NULL stop is INT64_MAX.  0 when the
 * row takes no part (NULL start, NULL call stop, stop before start). */
static inline int side_times(const side *s, int64_t i, int64_t *start, int64_t *stop) {
  int64_t a = s->start[i], b = s->stop[i];
  if (b == NSL_NULL_I64 && s->is_range) b = INT64_MAX;
  *start = a;
  *stop = b;
  return a != NSL_NULL_I64 && b != NSL_NULL_I64 && b >= a;
}

#define KEY_BLOCK 512

#define RECENT 64   /* a small direct-mapped cache of threads in front of the hash table */

/* Thread ids of the rows of s (mask: NULL or the rows that may take part),
 * a block of rows at a time, each key column read with its own type.  Rows
 * of a handful of threads interleave in time order: a small cache indexed
 * by a cheap hash of the tuple answers most rows without a mispredicted
 * branch or a hash table probe. */
static int side_threads(side *s, const nsl_column *const *keys, int nk, const uint8_t *mask, thread_table *tt) {
  int64_t n = s->nrows, recent[RECENT][MAX_KEYS], recent_id[RECENT];
  int64_t kb[MAX_KEYS][KEY_BLOCK];
  uint64_t hb[KEY_BLOCK];
  uint8_t ok[KEY_BLOCK];
  for (int r = 0; r < RECENT; r++) recent_id[r] = -1;
  if (!(s->thread = nsl__big_alloc((size_t)(n ? n : 1) * sizeof *s->thread))) return 0;
  for (int64_t off = 0; off < n; off += KEY_BLOCK) {
    int64_t m = n - off < KEY_BLOCK ? n - off : KEY_BLOCK;
    for (int64_t i = 0; i < m; i++) {
      int64_t a, b;
      ok[i] = (uint8_t)((!mask || mask[off + i]) & side_times(s, off + i, &a, &b));
      hb[i] = 0;
    }
    for (int k = 0; k < nk; k++) {
      if (keys[k]->type == NSL_I64) {
        const int64_t *x = nsl_i64(keys[k]) + off;
        for (int64_t i = 0; i < m; i++) {
          kb[k][i] = x[i];
          ok[i] &= (uint8_t)(x[i] != NSL_NULL_I64);
          hb[i] = (hb[i] ^ (uint64_t)x[i]) * 0x9e3779b97f4a7c15ull;
        }
      } else {
        const int32_t *x = nsl_i32(keys[k]) + off;
        for (int64_t i = 0; i < m; i++) {
          kb[k][i] = x[i];
          ok[i] &= (uint8_t)(x[i] != NSL_NULL_I32);
          hb[i] = (hb[i] ^ (uint64_t)(int64_t)x[i]) * 0x9e3779b97f4a7c15ull;
        }
      }
    }
    for (int64_t i = 0; i < m; i++) {
      if (!ok[i]) {
        s->thread[off + i] = -1;
        continue;
      }
      int r = (int)(hb[i] >> 58);   /* top bits: RECENT = 64 entries */
      int same = recent_id[r] >= 0;
      for (int k = 0; k < nk; k++) same &= kb[k][i] == recent[r][k];
      if (!same) {   /* ask the table, then remember the answer */
        for (int k = 0; k < nk; k++) recent[r][k] = kb[k][i];
        if ((recent_id[r] = thread_id(tt, recent[r])) < 0) return 0;
      }
      s->thread[off + i] = (int32_t)recent_id[r];
    }
  }
  return 1;
}

/* 1 when row x comes before row y in the sweep order: by start, ranges
 * then by stop descending, then by row (a total order: the order a stable
 * sort by those keys gives rows taken in row order). */
static inline int precedes(const side *s, int64_t x, int64_t y) {
  int64_t xs, xe, ys, ye;
  side_times(s, x, &xs, &xe);
  side_times(s, y, &ys, &ye);
  if (xs != ys) return xs < ys;
  if (s->is_range && xe != ye) return xe > ye;
  return x < y;
}

/* Sorts order[0..n) (rows in row order) into sweep order: a stable radix
 * sort by start, then (ranges) runs of equal starts by stop descending. */
static int radix_segment(const side *s, int32_t *order, int64_t n) {
  int64_t lo = INT64_MAX, a, b;
  for (int64_t i = 0; i < n; i++) {
    side_times(s, order[i], &a, &b);
    if (a < lo) lo = a;
  }
  uint64_t span = 0;
  for (int64_t i = 0; i < n; i++) {
    side_times(s, order[i], &a, &b);
    if ((uint64_t)a - (uint64_t)lo > span) span = (uint64_t)a - (uint64_t)lo;
  }
  int pbits = nsl__bitwidth((uint64_t)n), kbits = nsl__bitwidth(span);
  if (pbits + kbits <= 64) {
    /* (start, position) packed in one word: half the scratch of pairs (the
     * threads sort at once, so this bounds the projection's peak memory) */
    uint64_t *w = nsl__big_alloc((size_t)n * sizeof *w), *tmp = nsl__big_alloc((size_t)n * sizeof *tmp);
    if (!w || !tmp) {
      nsl__big_free(w);
      nsl__big_free(tmp);
      return 0;
    }
    for (int64_t i = 0; i < n; i++) {
      side_times(s, order[i], &a, &b);
      w[i] = (((uint64_t)a - (uint64_t)lo) << pbits) | (uint64_t)i;
    }
    uint64_t *r = nsl__radix_u64(w, tmp, n, pbits, pbits + kbits);
    uint64_t *old = r == w ? tmp : w, mask = pbits == 64 ? UINT64_MAX : ((uint64_t)1 << pbits) - 1;
    for (int64_t i = 0; i < n; i++) old[i] = (uint64_t)order[i];
    for (int64_t i = 0; i < n; i++) order[i] = (int32_t)old[r[i] & mask];
    nsl__big_free(w);
    nsl__big_free(tmp);
  } else {
    nsl__kv *kv = nsl__big_alloc((size_t)n * sizeof *kv), *tmp = nsl__big_alloc((size_t)n * sizeof *tmp);
    if (!kv || !tmp) {
      nsl__big_free(kv);
      nsl__big_free(tmp);
      return 0;
    }
    for (int64_t i = 0; i < n; i++) {
      side_times(s, order[i], &a, &b);
      kv[i] = (nsl__kv){(uint64_t)a - (uint64_t)lo, order[i]};
    }
    nsl__kv *r = nsl__radix_kv(kv, tmp, n, kbits);
    for (int64_t i = 0; i < n; i++) order[i] = (int32_t)r[i].v;
    nsl__big_free(kv);
    nsl__big_free(tmp);
  }
  if (!s->is_range) return 1;
  for (int64_t i = 1; i < n; i++) {   /* insertion sort within runs of equal starts */
    int32_t x = order[i];
    int64_t j = i;
    while (j > 0 && !precedes(s, order[j - 1], x)) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = x;
  }
  return 1;
}

/* Sorts order[0..n) (rows of one thread, in row order) into sweep order.
 * Exports store rows in order or nearly: one pass keeps the rows that
 * follow the last one kept in place (a sorted run) and sets the others
 * aside; when those are few they are sorted alone and merged back, else
 * every row is radix sorted.  The order is total, so either way gives the
 * same result. */
static int sort_segment(const side *s, int32_t *order, int64_t n) {
  int64_t limit = n / 4 + 16, kept = 0, late = 0, i;
  int32_t *aside = NULL;
  for (i = 0; i < n; i++) {
    int32_t x = order[i];
    if (kept == 0 || precedes(s, order[kept - 1], x)) {
      order[kept++] = x;
      continue;
    }
    if (late == limit) break;
    if (!aside && !(aside = malloc((size_t)(limit ? limit : 1) * sizeof *aside))) return 0;
    aside[late++] = x;
  }
  if (i == n && late == 0) return 1;
  int ok;
  if (i < n) {   /* too many out of place: back to row order, then radix sort all */
    for (int64_t w = i - 1, a = kept - 1, b = late - 1; b >= 0; w--)
      order[w] = a >= 0 && order[a] > aside[b] ? order[a--] : aside[b--];
    ok = radix_segment(s, order, n);
  } else if ((ok = radix_segment(s, aside, late))) {   /* merge the two sorted runs from the back */
    for (int64_t w = n - 1, a = kept - 1, b = late - 1; b >= 0; w--)
      order[w] = a >= 0 && precedes(s, aside[b], order[a]) ? order[a--] : aside[b--];
  }
  free(aside);
  return ok;
}

/* Groups the usable rows of s by thread (counting sort, stable) and sorts
 * each thread's rows. */
static int side_group(side *s, int64_t nthreads) {
  if (!(s->seg = calloc((size_t)nthreads + 1, sizeof *s->seg))) return 0;
  int64_t used = 0;
  for (int64_t i = 0; i < s->nrows; i++)
    if (s->thread[i] >= 0) {
      s->seg[s->thread[i] + 1]++;
      used++;
    }
  for (int64_t t = 0; t < nthreads; t++) s->seg[t + 1] += s->seg[t];
  if (!(s->order = nsl__big_alloc((size_t)(used ? used : 1) * sizeof *s->order))) return 0;
  int64_t *fill = malloc((size_t)(nthreads ? nthreads : 1) * sizeof *fill);
  if (!fill) return 0;
  memcpy(fill, s->seg, (size_t)nthreads * sizeof *fill);
  for (int64_t i = 0; i < s->nrows; i++)
    if (s->thread[i] >= 0) s->order[fill[s->thread[i]]++] = (int32_t)i;
  free(fill);
  return 1;
}

/* ---- one sweep per thread, the threads shared out over workers ---- */

typedef struct sweep_job {
  side *rs, *as;
  const int32_t *slot;
  const call_ops *ops;
  sums acc;
  int64_t *parent, *api_range;
  int32_t *depth;
  atomic_int failed;    /* out of memory in some thread's sort or stack */
} sweep_job;

/* Sorts thread t's rows of both sides and sweeps them: parents, depths and
 * sums of its ranges, innermost ranges of its calls (rows of one thread only,
 * so threads run at once without sharing anything they write). */
static void sweep_thread(void *ctx, int t) {
  sweep_job *j = ctx;
  side *rs = j->rs, *as = j->as;
  int64_t ri = rs->seg[t], rend = rs->seg[t + 1], ai = as->seg[t], aend = as->seg[t + 1];
  if (!sort_segment(rs, rs->order + ri, rend - ri) || !sort_segment(as, as->order + ai, aend - ai)) {
    atomic_store(&j->failed, 1);
    return;
  }
  range_stack st = {NULL, 0, 0, 64};
  while (ri < rend || ai < aend) {
    int64_t r = ri < rend ? rs->order[ri] : -1, a = ai < aend ? as->order[ai] : -1;
    int64_t s0 = 0, e0 = 0, s1 = 0, e1 = 0;
    if (r >= 0) side_times(rs, r, &s0, &e0);
    if (a >= 0) side_times(as, a, &s1, &e1);
    if (r >= 0 && (a < 0 || s0 <= s1)) {   /* ranges first at equal starts: one may enclose the call */
      stack_expire(&st, s0);
      int64_t p = stack_find(&st, e0, NULL, NULL);
      /* each output of a range that takes part is first written here, on the worker sweeping its thread (the
       * page faults of fresh memory spread over the workers); the other rows are set before the sweep */
      j->parent[r] = p >= 0 ? st.e[p].row : -1;
      j->depth[r] = p >= 0 ? j->depth[st.e[p].row] + 1 : 0;
      if (j->acc.first) j->acc.first[r] = j->acc.last[r] = NSL_NULL_I64;   /* its calls' ops come later */
      if (!stack_push(&st, r, s0, e0)) {
        atomic_store(&j->failed, 1);
        break;
      }
      ri++;
    } else {
      stack_expire(&st, s1);
      const call_ops *c = j->slot[a] >= 0 ? &j->ops[j->slot[a]] : NULL;
      if (c && c->n == 0) c = NULL;   /* its ops have no times */
      int64_t p = stack_find(&st, e1, c, &j->acc);
      j->api_range[a] = p >= 0 ? st.e[p].row : -1;
      ai++;
    }
  }
  free(st.e);
}

/* The work around the sweep, in jobs that run at once: before it, the
 * threads and order of both sides with the outputs of the rows that take
 * no part, and the GPU work per call; after it, the durations and child
 * counts, and each op's range.  The sweep itself first writes the outputs
 * of the rows that take part, so that the page faults of that fresh memory
 * (dear) fall on all its workers. */
typedef struct around {
  const nsl__nvtx_input *in;
  nsl__nvtx_projection *out;
  int64_t nr, na, no;
  const int64_t *op_api, *op_start, *op_stop;
  int32_t *slot;
  call_ops *ops;
  side *rs, *as;
  thread_table *tt;
  int threads_ok;
  nsl_status gather_rc;
  nsl_error gather_err;
} around;

/* The outputs of the rows that take no part in the sweep (the sweep writes the others'): no parent, NULL depth
 * and projection, and calls in no range.  The per-row threads of both sides are known. */
static void outside_rows(around *w) {
  const int32_t *rt = w->rs->thread, *at = w->as->thread;
  int64_t *parent = nsl_i64(w->out->parent), *api_range = nsl_i64(w->out->api_range);
  int32_t *depth = nsl_i32(w->out->depth);
  int64_t *first = w->in->parents_only ? NULL : nsl_i64(w->out->proj_start);
  int64_t *last = w->in->parents_only ? NULL : nsl_i64(w->out->proj_dur);   /* the last stop, then the duration */
  for (int64_t r = 0; r < w->nr; r++)
    if (rt[r] < 0) {
      parent[r] = -1;
      depth[r] = NSL_NULL_I32;
      if (first) first[r] = last[r] = NSL_NULL_I64;
    }
  for (int64_t a = 0; a < w->na; a++)
    if (at[a] < 0) api_range[a] = -1;
}

static void before_sweep(void *ctx, int i) {
  around *w = ctx;
  const nsl__nvtx_input *in = w->in;
  if (i == 0) {
    w->threads_ok = side_threads(w->rs, in->range_keys, in->nkeys, in->range_mask ? nsl_bool(in->range_mask) : NULL,
                                 w->tt) &&
                    side_threads(w->as, in->api_keys, in->nkeys, NULL, w->tt) && side_group(w->rs, w->tt->n) &&
                    side_group(w->as, w->tt->n);
    if (w->threads_ok) outside_rows(w);
  } else {
    w->gather_rc = gather_call_ops(w->op_api, w->op_start, w->op_stop, w->no, w->na, w->slot, &w->ops, &w->gather_err);
  }
}

static void after_sweep(void *ctx, int i) {
  around *w = ctx;
  nsl__nvtx_projection *out = w->out;
  if (i == 0 && w->in->parents_only) return;   /* no sums: nothing to finish */
  if (i == 0) {
    int64_t *first = nsl_i64(out->proj_start), *last = nsl_i64(out->proj_dur), *parent = nsl_i64(out->parent);
    const int32_t *nops = nsl_i32(out->ops);
    int32_t *children = nsl_i32(out->children);
    for (int64_t r = 0; r < w->nr; r++) {
      if (first[r] != NSL_NULL_I64) last[r] -= first[r];
      if (nops[r] > 0 && parent[r] >= 0 && children[parent[r]] < INT32_MAX) children[parent[r]]++;
    }
  } else {
    const int64_t *api_range = nsl_i64(out->api_range);
    int64_t *op_range = nsl_i64(out->op_range);
    for (int64_t j = 0; j < w->no; j++) op_range[j] = w->op_api[j] < 0 ? -1 : api_range[w->op_api[j]];   /* NULL < 0 */
  }
}

nsl_status nsl__nvtx_project(const nsl__nvtx_input *in, nsl__nvtx_projection *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: no output");
  memset(out, 0, sizeof *out);
  nsl_status rc = check_input(in, err);
  if (rc != NSL_OK) return rc;
  const int nk = in->nkeys;
  const int64_t nr = in->range_start->len, na = in->api_start->len, no = in->op_api->len;
  int32_t *slot = NULL;
  call_ops *ops = NULL;
  thread_table tt = {nk, 0, 0, NULL, NULL, 0};
  side rs, as;
  nsl_column *op_copy[3] = {NULL, NULL, NULL};
  const int64_t *op_api = nsl__as_i64(in->op_api, &op_copy[0]);
  const int64_t *op_start = nsl__as_i64(in->op_start, &op_copy[1]), *op_stop = nsl__as_i64(in->op_stop, &op_copy[2]);
  int opened = side_open(&rs, in->range_start, in->range_stop, 1);
  opened &= side_open(&as, in->api_start, in->api_stop, 0);

  const int with_sums = !in->parents_only;   /* the per-range sums of the GPU ops (none with parents only) */
  out->parent = nsl_column_new(NSL_I64, nr, NULL);
  out->depth = nsl_column_new(NSL_I32, nr, NULL);
  if (with_sums) {
    out->proj_start = nsl_column_new(NSL_I64, nr, NULL);
    out->proj_dur = nsl_column_new(NSL_I64, nr, NULL);
    out->ops = nsl_column_new(NSL_I32, nr, NULL);
    out->launches = nsl_column_new(NSL_I32, nr, NULL);
    out->gpu_time = nsl_column_new(NSL_I64, nr, NULL);
    out->children = nsl_column_new(NSL_I32, nr, NULL);
  }
  out->api_range = nsl_column_new(NSL_I64, na, NULL);
  out->op_range = nsl_column_new(NSL_I64, no, NULL);
  slot = nsl__big_alloc((size_t)(na ? na : 1) * sizeof *slot);
  if (!out->parent || !out->depth ||
      (with_sums && (!out->proj_start || !out->proj_dur || !out->ops || !out->launches || !out->gpu_time ||
                !out->children)) ||
      !out->api_range || !out->op_range || !slot || !opened || !op_api || !op_start || !op_stop)
    goto nomem;
  around w = {in, out, nr, na, no, op_api, op_start, op_stop, slot, NULL, &rs, &as, &tt, 0, NSL_OK, {0}};
  nsl__run_parallel(2, nsl__thread_count(2), before_sweep, &w);
  ops = w.ops;
  if (w.gather_rc != NSL_OK) {
    rc = nsl_error_set(err, w.gather_rc, "%s", w.gather_err.msg);
    goto fail;
  }
  if (!w.threads_ok) goto nomem;
  int64_t *parent = nsl_i64(out->parent);
  int64_t *first = with_sums ? nsl_i64(out->proj_start) : NULL, *last = with_sums ? nsl_i64(out->proj_dur) : NULL;
  int32_t *depth = nsl_i32(out->depth);
  int64_t *api_range = nsl_i64(out->api_range);
  nsl__big_free(rs.thread);
  nsl__big_free(as.thread);
  rs.thread = as.thread = NULL;

  sweep_job job = {&rs, &as, slot, ops,
                   {with_sums ? nsl_i32(out->ops) : NULL, with_sums ? nsl_i32(out->launches) : NULL,
                    with_sums ? nsl_i64(out->gpu_time) : NULL, first, last},
                   parent, api_range, depth, 0};
  if (tt.n > INT32_MAX) goto nomem;
  nsl__run_parallel((int)tt.n, nsl__thread_count((int)tt.n), sweep_thread, &job);
  if (atomic_load(&job.failed)) goto nomem;
  /* the sweep's scratch freed before the children and op ranges are first written: they would add to the peak */
  nsl__big_free(rs.order);
  nsl__big_free(as.order);
  nsl__big_free(slot);
  nsl__big_free(ops);
  rs.order = as.order = slot = NULL;
  ops = w.ops = NULL;
  nsl__run_parallel(2, nsl__thread_count(2), after_sweep, &w);
  rc = NSL_OK;
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "NVTX projection: out of memory (%lld ranges, %lld calls, %lld ops)",
                     (long long)nr, (long long)na, (long long)no);
fail:
  nsl__nvtx_projection_free(out);
done:
  side_free(&rs);
  side_free(&as);
  for (int k = 0; k < 3; k++) nsl_column_release(op_copy[k]);
  free(tt.keys);
  free(tt.slots);
  nsl__big_free(slot);
  nsl__big_free(ops);
  return rc;
}

/* ---- the top-level ranges alone ---------------------------------------------- */

/* Per thread while its rows are read in row order: the last row's times
 * and the latest stop so far. */
typedef struct top_state {
  int64_t start, stop, max_stop;
  int seen;
} top_state;

/* Marks r top-level (top[r] = 1) when no earlier row of its thread in sweep
 * order reaches its stop: such a row starts at or before r and is still
 * open at r's start, so it encloses r (nsl__nvtx_project: depth 0 exactly
 * when no open range encloses the range). */
static inline void top_step(top_state *t, int64_t start, int64_t stop, uint8_t *top, int64_t r) {
  int outer = !t->seen || stop > t->max_stop;
  top[r] = (uint8_t)outer;
  if (outer) t->max_stop = stop;
  t->start = start;
  t->stop = stop;
  t->seen = 1;
}

typedef struct top_job {
  side *rs;
  uint8_t *top;
  atomic_int failed;
} top_job;

/* Thread t's rows sorted into sweep order, then marked. */
static void top_thread(void *ctx, int t) {
  top_job *j = ctx;
  side *rs = j->rs;
  int64_t lo = rs->seg[t], hi = rs->seg[t + 1];
  if (!sort_segment(rs, rs->order + lo, hi - lo)) {
    atomic_store(&j->failed, 1);
    return;
  }
  top_state st = {0, 0, 0, 0};
  for (int64_t i = lo; i < hi; i++) {
    int64_t r = rs->order[i], a, b;
    side_times(rs, r, &a, &b);
    top_step(&st, a, b, j->top, r);
  }
}

/* See nsl_internal.h. */
nsl_status nsl__nvtx_top(const nsl__nvtx_input *in, nsl_column **out, int *in_order, nsl_error *err) {
  *out = NULL;
  *in_order = 0;
  nsl_status rc = check_ranges(in, err);
  if (rc != NSL_OK) return rc;
  const int64_t nr = in->range_start->len;
  thread_table tt = {in->nkeys, 0, 0, NULL, NULL, 0};
  top_state *state = NULL;
  side rs;
  int opened = side_open(&rs, in->range_start, in->range_stop, 1);
  nsl_column *top = nsl_column_new(NSL_BOOL, nr, NULL);
  if (!opened || !top ||
      !side_threads(&rs, in->range_keys, in->nkeys, in->range_mask ? nsl_bool(in->range_mask) : NULL, &tt) ||
      !(state = calloc((size_t)(tt.n ? tt.n : 1), sizeof *state)))
    goto nomem;
  uint8_t *t = nsl_bool(top);
  /* Exports store each thread's ranges in sweep order (start, then stop
   * descending, then row): one pass in row order; a thread found out of
   * that order sends every thread through the sort. */
  int sorted = 1;
  for (int64_t r = 0; r < nr; r++) {
    int32_t id = rs.thread[r];
    t[r] = 0;
    if (id < 0) continue;
    int64_t a, b;
    side_times(&rs, r, &a, &b);
    top_state *s = &state[id];
    if (s->seen && (a < s->start || (a == s->start && b > s->stop))) {
      sorted = 0;
      break;
    }
    top_step(s, a, b, t, r);
  }
  if (!sorted) {
    memset(t, 0, (size_t)nr);
    if (!side_group(&rs, tt.n)) goto nomem;
    top_job job = {&rs, t, 0};
    if (tt.n > INT32_MAX) goto nomem;
    nsl__run_parallel((int)tt.n, nsl__thread_count((int)tt.n), top_thread, &job);
    if (atomic_load(&job.failed)) goto nomem;
  }
  *out = top;
  *in_order = sorted;
  top = NULL;
  rc = NSL_OK;
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "NVTX projection: out of memory (%lld ranges)", (long long)nr);
done:
  nsl_column_release(top);
  side_free(&rs);
  free(state);
  free(tt.keys);
  free(tt.slots);
  return rc;
}

/* ---- the tree of paths ------------------------------------------------------- */

typedef struct path_slot {
  int64_t parent_node, label, node;   /* node -1: empty slot */
  int label_null;
} path_slot;

typedef struct path_table {
  path_slot *s;
  int64_t cap, n;
} path_table;

/* A cheap hash of (parent node, label): two multiplies and a fold (the
 * table is small and looked up once per row). */
static inline uint64_t path_hash(int64_t pnode, int64_t label, int label_null) {
  uint64_t h = ((uint64_t)pnode * 0x9e3779b97f4a7c15ull) ^ (((uint64_t)label + (uint64_t)label_null) * 0xc2b2ae3d27d4eb4full);
  return h ^ (h >> 29) ^ (h >> 47);
}

static int path_grow(path_table *t) {
  int64_t cap = t->cap ? t->cap * 2 : 1024;
  path_slot *s = malloc((size_t)cap * sizeof *s);
  if (!s) return 0;
  for (int64_t i = 0; i < cap; i++) s[i].node = -1;
  for (int64_t i = 0; i < t->cap; i++) {
    path_slot *o = &t->s[i];
    if (o->node < 0) continue;
    uint64_t h = path_hash(o->parent_node, o->label, o->label_null) & (uint64_t)(cap - 1);
    while (s[h].node >= 0) h = (h + 1) & (uint64_t)(cap - 1);
    s[h] = *o;
  }
  free(t->s);
  t->s = s;
  t->cap = cap;
  return 1;
}

/* The slot of (pnode, label): found, or the empty one to fill. */
static path_slot *path_find(path_table *t, int64_t pnode, int64_t label, int label_null) {
  uint64_t h = path_hash(pnode, label, label_null) & (uint64_t)(t->cap - 1);
  for (;;) {
    path_slot *s = &t->s[h];
    if (s->node < 0 || (s->parent_node == pnode && s->label == label && s->label_null == label_null)) return s;
    h = (h + 1) & (uint64_t)(t->cap - 1);
  }
}

void nsl__tree_free(nsl__tree *t) {
  if (!t) return;
  nsl_column_release(t->node_of);
  nsl_column_release(t->node_parent);
  nsl_column_release(t->node_depth);
  nsl_column_release(t->node_row);
  memset(t, 0, sizeof *t);
}

/* Appends a node; returns its id or -1 on out of memory. */
static int64_t tree_add(nsl__tree *t, int64_t pnode, int32_t depth, int64_t row) {
  int64_t id = t->nnodes;
  if (id == t->node_parent->cap) {
    int64_t cap = id * 2 > 1024 ? id * 2 : 1024;
    if (nsl_column_reserve(t->node_parent, cap, NULL) != NSL_OK || nsl_column_reserve(t->node_depth, cap, NULL) != NSL_OK ||
        nsl_column_reserve(t->node_row, cap, NULL) != NSL_OK)
      return -1;
  }
  nsl_i64(t->node_parent)[id] = pnode;
  nsl_i32(t->node_depth)[id] = depth;
  nsl_i64(t->node_row)[id] = row;
  t->nnodes = id + 1;
  nsl_column_set_len(t->node_parent, t->nnodes);
  nsl_column_set_len(t->node_depth, t->nnodes);
  nsl_column_set_len(t->node_row, t->nnodes);
  return id;
}

#define NODE_UNSEEN (-2)
#define NODE_VISITING (-3)

nsl_status nsl__tree_paths(const nsl_column *parent, const nsl_column *label, const nsl_column *mask,
                          nsl__tree *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "tree paths: no output");
  memset(out, 0, sizeof *out);
  if (!int_col(parent) || !label || label->type == NSL_F64)
    return nsl_error_set(err, NSL_ERR_ARG, "tree paths: need an integer parent column and an integer or string label");
  const int64_t n = parent->len;
  if (label->len != n)
    return nsl_error_set(err, NSL_ERR_ARG, "tree paths: %lld parents but %lld labels", (long long)n,
                         (long long)label->len);
  if (mask && (mask->type != NSL_BOOL || mask->len != n))
    return nsl_error_set(err, NSL_ERR_ARG, "tree paths: the mask must be a bool column of %lld rows", (long long)n);
  nsl_status rc = NSL_OK;
  path_table tab = {NULL, 0, 0};
  int64_t *walk = NULL, nwalk = 0, capwalk = 0;
  out->node_of = nsl_column_new(NSL_I64, n, NULL);
  out->node_parent = nsl_column_new(NSL_I64, 0, NULL);
  out->node_depth = nsl_column_new(NSL_I32, 0, NULL);
  out->node_row = nsl_column_new(NSL_I64, 0, NULL);
  if (!out->node_of || !out->node_parent || !out->node_depth || !out->node_row || !path_grow(&tab)) goto nomem;
  int64_t *node = nsl_i64(out->node_of);
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  const int64_t *par = parent->type == NSL_I64 ? nsl_i64(parent) : NULL;   /* else read through int_at */
  for (int64_t i = 0; i < n; i++) node[i] = mk && !mk[i] ? -1 : NODE_UNSEEN;
  for (int64_t i = 0; i < n; i++) {
    if (node[i] != NODE_UNSEEN) continue;
    /* walk up to a resolved ancestor (or a root), then resolve downwards */
    nwalk = 0;
    int64_t j = i, pnode = -1;
    for (;;) {
      if (nwalk == capwalk) {
        int64_t cap = capwalk ? capwalk * 2 : 64;
        int64_t *w = realloc(walk, (size_t)cap * sizeof *w);
        if (!w) goto nomem;
        walk = w;
        capwalk = cap;
      }
      walk[nwalk++] = j;
      node[j] = NODE_VISITING;
      int null = 0;
      int64_t p = par ? par[j] : nsl__int_at(parent, j, &null);
      if (null || p < 0) break;   /* NSL_NULL_I64 < 0 */
      if (p >= n) {
        rc = nsl_error_set(err, NSL_ERR_ARG, "tree paths: row %lld names parent %lld, but there are %lld rows",
                           (long long)j, (long long)p, (long long)n);
        goto fail;
      }
      if (node[p] == NODE_VISITING) {
        rc = nsl_error_set(err, NSL_ERR_ARG, "tree paths: row %lld is its own ancestor (a cycle of parents)",
                           (long long)p);
        goto fail;
      }
      if (node[p] != NODE_UNSEEN) {   /* resolved, or masked out (-1: a root) */
        pnode = node[p];
        break;
      }
      j = p;
    }
    while (nwalk > 0) {
      j = walk[--nwalk];
      int null;
      int64_t lab;
      if (label->type == NSL_STR) {   /* the usual label: names */
        lab = nsl_i32(label)[j];
        null = lab < 0;
      } else lab = nsl__int_at(label, j, &null);
      if (null) lab = 0;
      if (2 * (tab.n + 1) > tab.cap && !path_grow(&tab)) goto nomem;
      path_slot *s = path_find(&tab, pnode, lab, null);
      if (s->node < 0) {
        int32_t d = pnode < 0 ? 0 : nsl_i32(out->node_depth)[pnode] + 1;
        int64_t id = tree_add(out, pnode, d, j);
        if (id < 0) goto nomem;
        *s = (path_slot){pnode, lab, id, null};
        tab.n++;
      }
      node[j] = pnode = s->node;
    }
  }
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "tree paths: out of memory (%lld rows)", (long long)n);
fail:
  nsl__tree_free(out);
done:
  free(tab.s);
  free(walk);
  return rc;
}
