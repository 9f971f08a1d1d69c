/* jax.c -- kernels over range trees (NVTX push/pop hierarchies) used by the
 * nsys-jax analyses (lua/nsl/jax.lua): nearest ancestors, descendants,
 * counters within groups, overlap sums, and the two passes over the XLA
 * compilation ranges that nsys-jax makes (grafting parallel worker threads
 * under the compiling thread, and the parallel-aware time attribution).
 *
 * A tree is given as parent_row: for every row the row index of its parent
 * (I64), or a negative value / NULL for a root.  Trees deeper than the row
 * count (cycles in bad input) are cut: every walk is bounded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nsl/nsl.h"
#include "core/nsl_internal.h"

/* Parent of row i, or -1. */
static inline int64_t parent_of(const nsl_column *p, int64_t i) {
  int64_t v = nsl_i64(p)[i];
  return v < 0 || v >= p->len ? -1 : v;
}

static int check_tree(const nsl_column *parent_row, const nsl_column *const *masks, int nmasks, const char *what,
                      nsl_error *err) {
  if (!parent_row || parent_row->type != NSL_I64) {
    nsl_error_set(err, NSL_ERR_ARG, "%s: parent rows must be an i64 column", what);
    return 0;
  }
  for (int k = 0; k < nmasks; k++)
    if (masks[k] && (masks[k]->type != NSL_BOOL || masks[k]->len != parent_row->len)) {
      nsl_error_set(err, NSL_ERR_ARG, "%s: masks must be bool columns of %lld rows", what,
                    (long long)parent_row->len);
      return 0;
    }
  return 1;
}

nsl_status nsl__tree_ancestor(const nsl_column *parent_row, const nsl_column *through, const nsl_column *target,
                             nsl_column **anc, nsl_column **inner, nsl_error *err) {
  const nsl_column *masks[] = {through, target};
  *anc = *inner = NULL;
  if (!check_tree(parent_row, masks, 2, "tree_ancestor", err) || !through || !target)
    return err && err->code ? err->code : nsl_error_set(err, NSL_ERR_ARG, "tree_ancestor: masks needed");
  int64_t n = parent_row->len;
  nsl_column *a = nsl_column_new(NSL_I64, n, NULL), *in = nsl_column_new(NSL_BOOL, n, NULL);
  if (!a || !in) {
    nsl_column_release(a);
    nsl_column_release(in);
    return nsl_error_set(err, NSL_ERR_NOMEM, "tree_ancestor: out of memory");
  }
  const uint8_t *th = nsl_bool(through), *tg = nsl_bool(target);
  for (int64_t i = 0; i < n; i++) {
    nsl_i64(a)[i] = -1;
    if (!th[i]) continue;
    int64_t p = parent_of(parent_row, i), steps = 0;
    while (p >= 0 && th[p] && !tg[p] && steps++ < n) {
      nsl_bool(in)[p] = 1;
      p = parent_of(parent_row, p);
    }
    if (p >= 0 && tg[p]) nsl_i64(a)[i] = p;
  }
  *anc = a;
  *inner = in;
  return NSL_OK;
}

nsl_column *nsl__tree_under(const nsl_column *parent_row, const nsl_column *mask, nsl_error *err) {
  const nsl_column *masks[] = {mask};
  if (!check_tree(parent_row, masks, 1, "tree_under", err) || !mask) return NULL;
  int64_t n = parent_row->len;
  nsl_column *r = nsl_column_new(NSL_BOOL, n, NULL);
  int8_t *state = calloc((size_t)(n ? n : 1), 1);   /* 0 unknown, 1 under, 2 not under */
  int64_t *path = malloc((size_t)(n ? n : 1) * sizeof *path);
  if (!r || !state || !path) {
    nsl_column_release(r);
    free(state);
    free(path);
    nsl_error_set(err, NSL_ERR_NOMEM, "tree_under: out of memory");
    return NULL;
  }
  const uint8_t *m = nsl_bool(mask);
  for (int64_t i = 0; i < n; i++) {
    if (state[i]) continue;
    int64_t np = 0, p = parent_of(parent_row, i);
    int8_t verdict = 2;
    path[np++] = i;
    while (p >= 0 && np < n) {
      if (m[p]) {
        verdict = 1;
        break;
      }
      if (state[p]) {
        verdict = state[p];
        break;
      }
      path[np++] = p;
      p = parent_of(parent_row, p);
    }
    /* rows on the path are under a masked row iff the first one found is above them */
    for (int64_t k = 0; k < np; k++) state[path[k]] = verdict;
    /* a masked row on the path itself makes the rows below it "under" (handled: loop stops at it) */
  }
  for (int64_t i = 0; i < n; i++) nsl_bool(r)[i] = state[i] == 1;
  free(state);
  free(path);
  return r;
}

nsl_column *nsl__group_cumcount(const nsl_column *group_of, nsl_error *err) {
  if (!group_of || group_of->type != NSL_I64) {
    nsl_error_set(err, NSL_ERR_ARG, "cumcount: group ids must be an i64 column");
    return NULL;
  }
  int64_t n = group_of->len, ng = 0;
  for (int64_t i = 0; i < n; i++)
    if (nsl_i64(group_of)[i] >= ng) ng = nsl_i64(group_of)[i] + 1;
  nsl_column *r = nsl_column_new(NSL_I64, n, NULL);
  int64_t *cnt = calloc((size_t)(ng ? ng : 1), sizeof *cnt);
  if (!r || !cnt) {
    nsl_column_release(r);
    free(cnt);
    nsl_error_set(err, NSL_ERR_NOMEM, "cumcount: out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t g = nsl_i64(group_of)[i];
    nsl_i64(r)[i] = g >= 0 ? cnt[g]++ : NSL_NULL_I64;
  }
  free(cnt);
  return r;
}

typedef struct ov_row {
  int64_t group, start, stop, row;
} ov_row;

static int cmp_ov(const void *a, const void *b) {
  const ov_row *x = a, *y = b;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

nsl_column *nsl__iv_overlap_sum(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                               const nsl_column *is_a, nsl_error *err) {
  if (!start || !stop || start->type != NSL_I64 || stop->type != NSL_I64 || stop->len != start->len ||
      (group_of && (group_of->type != NSL_I64 || group_of->len != start->len)) || !is_a ||
      is_a->type != NSL_BOOL || is_a->len != start->len) {
    nsl_error_set(err, NSL_ERR_ARG, "overlap_sum: start, stop (i64), groups (i64) and mask (bool) of equal length");
    return NULL;
  }
  int64_t n = start->len, nb = 0;
  nsl_column *r = nsl_column_new(NSL_I64, n, NULL);
  ov_row *b = malloc((size_t)(n ? n : 1) * sizeof *b);   /* the "b" rows (mask 0), by group and start */
  if (!r || !b) {
    nsl_column_release(r);
    free(b);
    nsl_error_set(err, NSL_ERR_NOMEM, "overlap_sum: out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t s = nsl_i64(start)[i], e = nsl_i64(stop)[i], g = group_of ? nsl_i64(group_of)[i] : 0;
    nsl_i64(r)[i] = 0;
    if (!nsl_bool(is_a)[i] && s != NSL_NULL_I64 && e != NSL_NULL_I64 && e > s && g >= 0)
      b[nb++] = (ov_row){g, s, e, i};
  }
  qsort(b, (size_t)nb, sizeof *b, cmp_ov);
  /* longest b interval per group bounds how far back a search must look */
  for (int64_t i = 0; i < n; i++) {
    if (!nsl_bool(is_a)[i]) continue;
    int64_t s = nsl_i64(start)[i], e = nsl_i64(stop)[i], g = group_of ? nsl_i64(group_of)[i] : 0;
    if (s == NSL_NULL_I64 || e == NSL_NULL_I64) {
      nsl_i64(r)[i] = NSL_NULL_I64;
      continue;
    }
    /* first b row of group g: binary search; then scan rows that start before e */
    int64_t lo = 0, hi = nb;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (b[mid].group < g) lo = mid + 1;
      else hi = mid;
    }
    int64_t sum = 0;
    for (int64_t k = lo; k < nb && b[k].group == g && b[k].start < e; k++)
      if (b[k].stop > s) {
        int64_t a0 = b[k].start > s ? b[k].start : s, a1 = b[k].stop < e ? b[k].stop : e;
        if (a1 > a0) sum += a1 - a0;
      }
    nsl_i64(r)[i] = sum;
  }
  free(b);
  return r;
}

/* ---- XLA compilation ranges ---------------------------------------------- */

/* Is row r a descendant of row a (strictly below it)? */
static int is_below(const int64_t *parent, int64_t n, int64_t r, int64_t a) {
  int64_t p = parent[r], steps = 0;
  while (p >= 0 && p < n && steps++ < n) {
    if (p == a) return 1;
    p = parent[p];
  }
  return 0;
}

/* Rows ordered by start (then row), so that the rows starting inside a
 * window are one run of the order. */
typedef struct start_row {
  int64_t start, row;
} start_row;
typedef struct by_start {
  int64_t n;
  int64_t *row;     /* rows by start */
  int64_t *start;   /* their starts */
} by_start;

static int cmp_start_row(const void *a, const void *b) {
  const start_row *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->row < y->row ? -1 : x->row > y->row;
}

static int by_start_init(by_start *o, const int64_t *start, int64_t n) {
  o->n = n;
  o->row = malloc((size_t)(n ? n : 1) * sizeof *o->row);
  o->start = malloc((size_t)(n ? n : 1) * sizeof *o->start);
  start_row *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
  if (!o->row || !o->start || !tmp) {
    free(tmp);
    return 0;
  }
  for (int64_t i = 0; i < n; i++) tmp[i] = (start_row){start[i], i};
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_start_row);
  for (int64_t i = 0; i < n; i++) {
    o->row[i] = tmp[i].row;
    o->start[i] = tmp[i].start;
  }
  free(tmp);
  return 1;
}

static void by_start_free(by_start *o) {
  free(o->row);
  free(o->start);
}

/* [*lo, *hi): the positions in o of the rows that start in [s, e]. */
static void by_start_window(const by_start *o, int64_t s, int64_t e, int64_t *lo, int64_t *hi) {
  int64_t a = 0, b = o->n;
  while (a < b) {
    int64_t m = a + (b - a) / 2;
    if (o->start[m] < s) a = m + 1;
    else b = m;
  }
  *lo = a;
  b = o->n;
  while (a < b) {
    int64_t m = a + (b - a) / 2;
    if (o->start[m] <= e) a = m + 1;
    else b = m;
  }
  *hi = a;
}

/* Every pass over the rows of a window looks only at the rows that start in
 * it (a start-sorted index), so the cost is the windows' sizes, not the
 * number of compilations times the number of ranges. */
nsl_status nsl__jax_compile_tree(const nsl__jax_compile_in *in, nsl__jax_compile_out *out, nsl_error *err) {
  int64_t n = in->n, m = n ? n : 1;
  memset(out, 0, sizeof *out);
  out->parent = malloc((size_t)m * sizeof *out->parent);
  out->num_child = malloc((size_t)m * sizeof *out->num_child);
  out->dur_child = malloc((size_t)m * sizeof *out->dur_child);
  out->dur_nonchild = malloc((size_t)m * sizeof *out->dur_nonchild);
  out->keep = calloc((size_t)m, 1);
  out->program_row = malloc((size_t)m * sizeof *out->program_row);
  int64_t *root = malloc((size_t)m * sizeof *root), *par = malloc((size_t)m * sizeof *par);
  int64_t *main_child = malloc((size_t)m * sizeof *main_child), *grafted = malloc((size_t)m * sizeof *grafted);
  uint8_t *retain = calloc((size_t)m, 1), *holds_compile = calloc((size_t)m, 1);
  by_start ord = {0, NULL, NULL};
  int ok = out->parent && out->num_child && out->dur_child && out->dur_nonchild && out->keep && out->program_row &&
           root && par && main_child && grafted && retain && holds_compile && by_start_init(&ord, in->start, n);
  if (!ok) {
    nsl__jax_compile_out_free(out);
    nsl_error_set(err, NSL_ERR_NOMEM, "compile tree: out of memory for %lld ranges", (long long)n);
    goto done;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t p = in->parent[i];
    par[i] = out->parent[i] = p >= 0 && p < n && p != i ? p : -1;
    out->num_child[i] = in->num_child[i];
    out->dur_child[i] = in->dur_child[i];
    out->dur_nonchild[i] = in->dur_nonchild[i];
    out->program_row[i] = -1;
    main_child[i] = grafted[i] = -1;
  }
  /* roots (original tree); a root that holds an XlaCompile range is another
   * compilation, never a worker of this one */
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i, steps = 0;
    while (par[r] >= 0 && steps++ < n) r = par[r];
    root[i] = r;
  }
  for (int64_t i = 0; i < n; i++)
    if (in->is_compile[i]) holds_compile[root[i]] = 1;

  /* 1. graft worker-thread ranges under the compiling thread's deepest open range */
  for (int64_t c = 0; c < n; c++) {
    if (!in->is_compile[c]) continue;
    int64_t cs = in->start[c], ce = in->stop[c], lo, hi;
    retain[c] = 1;
    by_start_window(&ord, cs, ce, &lo, &hi);
    for (int64_t k = lo; k < hi; k++) {   /* main-thread descendants within the window */
      int64_t r = ord.row[k];
      if (in->stop[r] <= ce && is_below(par, n, r, c)) {
        main_child[r] = c;
        retain[r] = 1;
      }
    }
    for (int64_t k = lo; k < hi; k++) {
      int64_t w = ord.row[k];
      if (in->stop[w] > ce || par[w] >= 0 || in->tid[w] == in->tid[c] || holds_compile[w]) continue;
      int64_t newp = -1;   /* the deepest: the last in row order, as nsys-jax picks it */
      for (int64_t j = lo; j < hi; j++) {
        int64_t r = ord.row[j];
        if (in->start[r] >= in->start[w]) break;   /* sorted by start: no later row encloses w */
        if (main_child[r] == c && in->stop[r] > in->stop[w] && r > newp) newp = r;
      }
      if (newp < 0) continue;   /* nsys-jax would fail here: no open range to graft onto */
      out->parent[w] = newp;
      out->num_child[newp] += 1;
      out->dur_child[newp] = NSL_NULL_I64;   /* meaningless now; recomputed by the statistics */
      out->dur_nonchild[newp] = NSL_NULL_I64;
      retain[w] = 1;
      grafted[w] = c;
    }
    for (int64_t k = lo; k < hi; k++) {   /* the grafted ranges' subtrees within the window */
      int64_t r = ord.row[k];
      if (in->stop[r] <= ce && grafted[root[r]] == c) retain[r] = 1;
    }
  }
  /* 2. program: XlaCompileBackend rows name it; their parents take it; the rest inherit */
  for (int64_t i = 0; i < n; i++)
    if (retain[i] && in->is_backend[i]) out->program_row[i] = i;
  for (int64_t i = 0; i < n; i++)
    if (retain[i] && in->is_backend[i] && out->parent[i] >= 0) out->program_row[out->parent[i]] = i;
  for (int64_t i = 0; i < n; i++) {   /* nearest ancestor's (values above are final first) */
    if (!retain[i] || out->program_row[i] >= 0) continue;
    int64_t p = out->parent[i], steps = 0;
    while (p >= 0 && retain[p] && steps++ < n) {
      if (out->program_row[p] >= 0) {
        out->program_row[i] = out->program_row[p];
        break;
      }
      p = out->parent[p];
    }
  }
  /* 3. fold non-TSL ranges (cuBLAS, ...) into their parents */
  for (int64_t i = 0; i < n; i++) {
    if (!retain[i]) continue;
    if (in->is_tsl[i]) {
      out->keep[i] = 1;
      continue;
    }
    int64_t p = out->parent[i], d = in->stop[i] - in->start[i];
    if (p < 0) continue;
    out->num_child[p] -= 1;
    if (out->dur_child[p] != NSL_NULL_I64) out->dur_child[p] -= d;
    if (out->dur_nonchild[p] != NSL_NULL_I64) out->dur_nonchild[p] += d;
  }
done:
  by_start_free(&ord);
  free(root);
  free(par);
  free(main_child);
  free(grafted);
  free(retain);
  free(holds_compile);
  return ok ? NSL_OK : NSL_ERR_NOMEM;
}

void nsl__jax_compile_out_free(nsl__jax_compile_out *out) {
  free(out->parent);
  free(out->num_child);
  free(out->dur_child);
  free(out->dur_nonchild);
  free(out->keep);
  free(out->program_row);
  memset(out, 0, sizeof *out);
}

/* Descendants lie inside their ancestors' windows (well-nested ranges,
 * grafts strictly inside their new parents), so each launcher looks only at
 * the rows that start in its window. */
nsl_status nsl__jax_compile_attribute(const nsl__jax_attr_in *in, double *nonchild, double *child, nsl_error *err) {
  int64_t n = in->n, m = n ? n : 1;
  int64_t *dchild = malloc((size_t)m * sizeof *dchild), *dnon = malloc((size_t)m * sizeof *dnon);
  uint8_t *launcher = calloc((size_t)m, 1);
  by_start ord = {0, NULL, NULL};
  if (!dchild || !dnon || !launcher || !by_start_init(&ord, in->start, n)) {
    free(dchild);
    free(dnon);
    free(launcher);
    by_start_free(&ord);
    return nsl_error_set(err, NSL_ERR_NOMEM, "compile attribution: out of memory");
  }
  for (int64_t i = 0; i < n; i++) {
    int col = in->collapsed && in->collapsed[i];
    dchild[i] = col ? 0 : in->dur_child[i];
    dnon[i] = col ? in->stop[i] - in->start[i] : in->dur_nonchild[i];
    nonchild[i] = child[i] = 0;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t p = in->parent[i];
    if (in->tid[i] != in->main_tid && p >= 0 && p < n && in->tid[p] == in->main_tid) launcher[p] = 1;
  }
  for (int64_t l = 0; l < n; l++) {
    if (!launcher[l]) continue;
    int64_t ps = INT64_MAX, pe = INT64_MIN, main_dur = 0, lo, hi;
    double worker_total = 0;
    by_start_window(&ord, in->start[l], in->stop[l], &lo, &hi);
    for (int64_t k = lo; k < hi; k++) {
      int64_t r = ord.row[k];
      if (!is_below(in->parent, n, r, l)) continue;
      if (in->tid[r] == in->tid[l]) main_dur += in->stop[r] - in->start[r];
      else {
        if (in->start[r] < ps) ps = in->start[r];
        if (in->stop[r] > pe) pe = in->stop[r];
        if (dnon[r] != NSL_NULL_I64) worker_total += (double)dnon[r];
      }
    }
    double pdur = (double)(pe - ps);
    for (int64_t k = lo; k < hi; k++) {
      int64_t r = ord.row[k];
      if (in->tid[r] == in->tid[l] || !is_below(in->parent, n, r, l)) continue;
      double nc = dnon[r] == NSL_NULL_I64 ? NAN : (double)dnon[r];
      double ch = dchild[r] == NSL_NULL_I64 ? NAN : (double)dchild[r];
      nonchild[r] += pdur * nc / worker_total;
      child[r] += pdur * ch / worker_total;
    }
    dchild[l] = main_dur + (pe - ps);
    dnon[l] = (in->stop[l] - in->start[l]) - dchild[l];
  }
  for (int64_t i = 0; i < n; i++)
    if (in->tid[i] == in->main_tid) {
      nonchild[i] += dnon[i] == NSL_NULL_I64 ? NAN : (double)dnon[i];
      child[i] += dchild[i] == NSL_NULL_I64 ? NAN : (double)dchild[i];
    }
  free(dchild);
  free(dnon);
  free(launcher);
  by_start_free(&ord);
  return NSL_OK;
}
