/* ledger.c -- the sweep under nsl.ledger: wall time of windows (a rank's
 * device over a step, or over the profiled run) split among classes of
 * intervals by priority, so every nanosecond is counted once and the parts
 * sum to the window.
 *
 * Every interval row has a group (a device of a rank) and a class; a class
 * with a lower number wins where intervals of several classes are open (a
 * kernel over a copy, any GPU work over the host-side causes of idle time).
 * One sweep per group over the rows' starts, in (group, start) order
 * (nsl__order_by_group_start: merged from the runs the rows come in, else a
 * radix argsort), with the open rows in a binary heap by stop: O(rows log
 * open) after the ordering.  The groups are swept in ranges of the order
 * (nsl__order_split: whole groups), one per thread from a million rows:
 * each range writes only its own groups' windows and rows. */
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/parallel.h"

static int int_col(const nsl_column *c) { return c && (c->type == NSL_I64 || c->type == NSL_I32); }

/* to - from for to >= from, saturating at INT64_MAX. */
static inline int64_t span(int64_t from, int64_t to) {
  uint64_t d = (uint64_t)to - (uint64_t)from;
  return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* Row i's bounds, group and class when it takes part (1), else 0. */
static inline int row_of(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                         const nsl_column *cls, int nclasses, int64_t i, int64_t *s, int64_t *e, int64_t *g,
                         int *c) {
  int ns, ne, ng, nc;
  *s = nsl__int_at(start, i, &ns);
  *e = nsl__int_at(stop, i, &ne);
  *g = nsl__int_at(group_of, i, &ng);
  int64_t k = nsl__int_at(cls, i, &nc);
  if (ns || ne || ng || nc || *e <= *s || *g < 0 || k < 0 || k >= nclasses) return 0;
  *c = (int)k;
  return 1;
}

/* A window in a set's (group, lo) order: its bounds and its row. */
typedef struct ledger_win {
  int64_t g, lo, hi, w;
} ledger_win;

typedef struct ledger_state {
  const ledger_win *win;   /* the set's windows in (group, lo) order */
  int64_t nw, k;           /* k: the first window of the current group not yet behind the sweep */
  int nclasses;
  int64_t *out;            /* nw x (nclasses + 1) */
  int64_t *charged;        /* per class: time it was on top inside windows, so far in this group */
} ledger_state;

static inline int64_t win_val(const nsl_column *c, int64_t w) {
  int null;
  return nsl__int_at(c, w, &null);
}

/* Adds segment [a, b) of group g, whose top class is top (nclasses: none),
 * to the windows it overlaps. */
static inline void add_segment(ledger_state *st, int64_t g, int64_t a, int64_t b, int top) {
  if (b <= a || top >= st->nclasses) return;   /* uncovered time is the windows' remainder */
  const ledger_win *win = st->win;
  while (st->k < st->nw && (win[st->k].g < g || (win[st->k].g == g && win[st->k].hi <= a)))
    st->k++;   /* windows of earlier groups, or ended before a, are done */
  for (int64_t q = st->k; q < st->nw && win[q].g == g && win[q].lo < b; q++) {
    int64_t x = a > win[q].lo ? a : win[q].lo, y = b < win[q].hi ? b : win[q].hi;
    if (y > x) {
      st->out[win[q].w * (st->nclasses + 1) + top] += span(x, y);
      st->charged[top] += span(x, y);
    }
  }
}

/* The windows of one set checked (groups, bounds) and ordered by (group, lo), with no two of a group overlapping:
 * *order receives them in that order (free).  NSL_OK or err filled. */
static nsl_status window_order(const char *what, int set, const nsl_column *win_group, const nsl_column *win_lo,
                               const nsl_column *win_hi, ledger_win **order, nsl_error *err) {
  *order = NULL;
  if (!int_col(win_group) || !int_col(win_lo) || !int_col(win_hi) || win_lo->len != win_group->len ||
      win_hi->len != win_group->len)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: windows need integer group, lo and hi columns of one length", what);
  int64_t nw = win_group->len;
  for (int64_t w = 0; w < nw; w++) {
    int n1, n2, n3;
    int64_t g = nsl__int_at(win_group, w, &n1), lo = nsl__int_at(win_lo, w, &n2), hi = nsl__int_at(win_hi, w, &n3);
    if (n1 || n2 || n3 || g < 0 || hi < lo)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: window %lld%s has no group or ends before it starts", what,
                           (long long)w, set ? " of a later set" : "");
  }
  const nsl_column *wkeys[2] = {win_group, win_lo};
  nsl_column *worder = nsl_argsort(wkeys, NULL, 2, err);
  if (!worder) return err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
  ledger_win *win = malloc((size_t)(nw ? nw : 1) * sizeof *win);
  if (win) {
    const int64_t *wo = nsl_i64(worder);
    for (int64_t q = 0; q < nw; q++)
      win[q] = (ledger_win){win_val(win_group, wo[q]), win_val(win_lo, wo[q]), win_val(win_hi, wo[q]), wo[q]};
  }
  nsl_column_release(worder);
  if (!win) return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld windows", what, (long long)nw);
  const ledger_win *last = NULL;   /* the group's latest-ending non-empty window so far */
  for (int64_t q = 0; q < nw; q++) {
    if (win[q].lo == win[q].hi) continue;   /* an empty window overlaps nothing */
    if (last && last->g == win[q].g && last->hi > win[q].lo) {
      nsl_status rc = nsl_error_set(err, NSL_ERR_ARG, "%s: windows %lld and %lld of group %lld overlap", what,
                                    (long long)last->w, (long long)win[q].w, (long long)win[q].g);
      free(win);
      return rc;
    }
    last = &win[q];
  }
  *order = win;
  return NSL_OK;
}

/* The class on top: the lowest with a row open (nclasses: none). */
static inline int top_class(const int64_t *open, int nclasses) {
  for (int k = 0; k < nclasses; k++)
    if (open[k] > 0) return k;
  return nclasses;
}

/* The rows open at the sweep's time: a binary min-heap by stop. */
typedef struct open_row {
  int64_t stop, row;
  int cls;
} open_row;

static void heap_push(open_row *h, int64_t *n, open_row x) {
  int64_t i = (*n)++;   /* (room for it: the caller's) */
  while (i > 0) {
    int64_t p = (i - 1) / 2;
    if (h[p].stop <= x.stop) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = x;
}

static open_row heap_pop(open_row *h, int64_t *n) {
  open_row top = h[0], x = h[--*n];
  int64_t i = 0, m = *n;
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= m) break;
    if (c + 1 < m && h[c + 1].stop < h[c].stop) c++;
    if (x.stop <= h[c].stop) break;
    h[i] = h[c];
    i = c;
  }
  if (m > 0) h[i] = x;
  return top;
}

nsl_status nsl_ledger_sweep(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                            const nsl_column *cls, int nclasses, const nsl_column *win_group,
                            const nsl_column *win_lo, const nsl_column *win_hi, nsl_column **totals,
                            nsl_column **row_charged, nsl_error *err) {
  return nsl_ledger_sweep_sets(start, stop, group_of, cls, nclasses, 1, &win_group, &win_lo, &win_hi, totals,
                               row_charged, err);
}

/* One range of the sweep's order (nsl__order_split: whole groups), swept
 * on a thread of its own with its own open rows; the windows and rows it
 * writes are its groups' alone. */
typedef struct sweep_job {
  const nsl_column *start, *stop, *group_of, *cls;
  int nclasses, nsets;
  const nsl__order *by_start;
  const int64_t *from;
  ledger_state st0[NSL_LEDGER_SETS];   /* per set: the windows and outputs (k, charged set per range) */
  int64_t *chv;                         /* NULL: no row_charged */
  nsl_status *rc;                       /* per range */
} sweep_job;

static nsl_status sweep_range(const sweep_job *j, int64_t q0, int64_t q1) {
  const nsl_column *start = j->start, *stop = j->stop, *group_of = j->group_of, *cls = j->cls;
  const nsl__order *by_start = j->by_start;
  int nclasses = j->nclasses, nsets = j->nsets;
  int64_t *chv = j->chv;
  int64_t *open = calloc((size_t)nclasses, sizeof *open), *mark = calloc((size_t)nclasses, sizeof *mark),
          *spare = calloc((size_t)nclasses, sizeof *spare);
  int64_t cap = 1024;   /* the heap grows with the rows open at once (a few, as a rule) */
  open_row *heap = malloc((size_t)cap * sizeof *heap);
  nsl_status rc = NSL_OK;
  if (!open || !mark || !spare || !heap) {
    rc = NSL_ERR_NOMEM;
    goto done;
  }
  /* mark doubles as the per-class running total of time on top (st.charged) of the first set, the one
   * row_charged is of; the later sets' running totals go to spare, never read */
  ledger_state st[NSL_LEDGER_SETS];
  for (int k = 0; k < nsets; k++) {
    st[k] = j->st0[k];
    st[k].k = 0;
    st[k].charged = k == 0 ? mark : spare;
  }
  int64_t qs = q0, cur = -1, t = 0, nopen = 0;
  for (;;) {
    /* the next start that takes part; before it, every open row of its group stopping at or before it (a stop
     * and a start at one time: the stop first), or of the group before it */
    int64_t s = 0, e = 0, g = 0, i = -1;
    int c = 0;
    while (qs < q1 && !row_of(start, stop, group_of, cls, nclasses, nsl__order_row(by_start, qs), &s, &e, &g, &c))
      qs++;
    if (qs < q1) i = nsl__order_row(by_start, qs++);
    while (nopen > 0 && (i < 0 || g != cur || heap[0].stop <= s)) {
      open_row r = heap_pop(heap, &nopen);
      if (r.stop > t) {
        int top = top_class(open, nclasses);
        for (int k = 0; k < nsets; k++) add_segment(&st[k], cur, t, r.stop, top);
        t = r.stop;
      }
      open[r.cls]--;
      if (chv) chv[r.row] += mark[r.cls];
    }
    if (i < 0) break;
    if (g != cur) {   /* a new group: nothing open */
      cur = g;
      t = s;
      memset(open, 0, (size_t)nclasses * sizeof *open);
      memset(mark, 0, (size_t)nclasses * sizeof *mark);
    }
    if (s > t) {
      int top = top_class(open, nclasses);
      for (int k = 0; k < nsets; k++) add_segment(&st[k], cur, t, s, top);
      t = s;
    }
    open[c]++;
    if (chv) chv[i] = -mark[c];
    if (nopen == cap) {
      open_row *h = realloc(heap, (size_t)(cap *= 2) * sizeof *heap);
      if (!h) {
        rc = NSL_ERR_NOMEM;
        goto done;
      }
      heap = h;
    }
    heap_push(heap, &nopen, (open_row){e, i, c});
  }
done:
  free(open);
  free(mark);
  free(spare);
  free(heap);
  return rc;
}

static void sweep_job_run(void *p, int k) {
  sweep_job *j = p;
  j->rc[k] = sweep_range(j, j->from[k], j->from[k + 1]);
}

nsl_status nsl_ledger_sweep_sets(const nsl_column *start, const nsl_column *stop, const nsl_column *group_of,
                                 const nsl_column *cls, int nclasses, int nsets, const nsl_column *const *win_group,
                                 const nsl_column *const *win_lo, const nsl_column *const *win_hi,
                                 nsl_column **totals, nsl_column **row_charged, nsl_error *err) {
  const char *what = "ledger";
  if (!totals) return nsl_error_set(err, NSL_ERR_ARG, "%s: no output", what);
  if (nsets < 1 || nsets > NSL_LEDGER_SETS) return nsl_error_set(err, NSL_ERR_ARG, "%s: 1 to %d window sets", what,
                                                                  NSL_LEDGER_SETS);
  for (int k = 0; k < nsets; k++) totals[k] = NULL;
  if (row_charged) *row_charged = NULL;
  if (!int_col(start) || !int_col(stop) || !int_col(group_of) || !int_col(cls))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: start, stop, group and class must be integer columns", what);
  int64_t n = start->len;
  if (stop->len != n || group_of->len != n || cls->len != n)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: start, stop, group and class must have one length", what);
  if (nclasses < 1 || nclasses > 64) return nsl_error_set(err, NSL_ERR_ARG, "%s: 1 to 64 classes", what);
  nsl_status rc = NSL_OK;
  ledger_win *worder[NSL_LEDGER_SETS] = {NULL};
  nsl_column *out[NSL_LEDGER_SETS] = {NULL};
  nsl_column *ch = NULL;
  nsl__order by_start = {0};
  for (int k = 0; k < nsets; k++)
    if ((rc = window_order(what, k, win_group[k], win_lo[k], win_hi[k], &worder[k], err)) != NSL_OK) goto done;
  if ((rc = nsl__order_by_group_start(group_of, start, 1, &by_start, err)) != NSL_OK) goto done;
  int oom = 0;
  for (int k = 0; k < nsets; k++)
    oom |= !(out[k] = nsl_column_new(NSL_I64, win_group[k]->len * (nclasses + 1), NULL));   /* zero-filled */
  if (row_charged) ch = nsl_column_new(NSL_I64, n, NULL);
  if (oom || (row_charged && !ch)) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld rows", what, (long long)n);
    goto done;
  }
  /* the groups in ranges, each swept on a thread of its own */
  int64_t from[NSL__SPLIT_MAX + 1];
  nsl_status prc[NSL__SPLIT_MAX];
  int parts = nsl__order_split(&by_start, group_of, from);
  sweep_job job = {start, stop, group_of, cls, nclasses, nsets, &by_start, from, {{0}}, ch ? nsl_i64(ch) : NULL, prc};
  for (int k = 0; k < nsets; k++)
    job.st0[k] = (ledger_state){worder[k], win_group[k]->len, 0, nclasses, nsl_i64(out[k]), NULL};
  nsl__run_parallel(parts, parts, sweep_job_run, &job);
  for (int k = 0; k < parts; k++)
    if (prc[k] != NSL_OK) {
      rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for the open rows of %lld rows", what, (long long)n);
      goto done;
    }
  for (int k = 0; k < nsets; k++)
    for (int64_t q = 0; q < win_group[k]->len; q++) {   /* what no class covers: the window less its classes */
      const ledger_win *w = &worder[k][q];
      int64_t *row = nsl_i64(out[k]) + w->w * (nclasses + 1), sum = 0;
      for (int c = 0; c < nclasses; c++) sum += row[c];
      row[nclasses] = span(w->lo, w->hi) - sum;
    }
  for (int k = 0; k < nsets; k++) {
    totals[k] = out[k];
    out[k] = NULL;
  }
  if (row_charged) {
    *row_charged = ch;
    ch = NULL;
  }
done:
  for (int k = 0; k < nsets; k++) {
    free(worder[k]);
    nsl_column_release(out[k]);
  }
  nsl__order_free(&by_start);
  nsl_column_release(ch);
  return rc;
}

/* One range of the launch waits' order (whole groups, nsl__order_split): pass 0 counts its waits into
 * count[k], pass 1 writes them from at[k]. */
typedef struct waits_job {
  const nsl_column *group, *start, *launch_stop;
  const nsl__order *ord;
  const int64_t *from;
  int64_t *count, *at;
  int pass;
  int64_t *r, *f, *t;
} waits_job;

static void waits_range(void *p, int part) {
  waits_job *j = p;
  int64_t k = j->pass ? j->at[part] : 0, pg = 0, ps = 0;
  int pnull = 1;   /* the previous row's group or start is NULL (or there is none) */
  for (int64_t q = j->from[part]; q < j->from[part + 1]; q++) {
    int64_t i = nsl__order_row(j->ord, q);
    int ng, ns, nl;
    int64_t g = nsl__int_at(j->group, i, &ng), s = nsl__int_at(j->start, i, &ns),
            l = nsl__int_at(j->launch_stop, i, &nl);
    if (!pnull && !ng && !ns && !nl && g == pg) {
      int64_t hi = l < s ? l : s;
      if (hi > ps) {
        if (j->pass) {
          j->r[k] = i;
          j->f[k] = ps;
          j->t[k] = hi;
        }
        k++;
      }
    }
    pg = g;
    ps = s;
    pnull = ng || ns;
  }
  if (!j->pass) j->count[part] = k;
}

nsl_status nsl_launch_waits(const nsl_column *group, const nsl_column *start, const nsl_column *launch_stop,
                            nsl_column **rows, nsl_column **from, nsl_column **to, nsl_error *err) {
  const char *what = "launch waits";
  *rows = *from = *to = NULL;
  if (!int_col(group) || !int_col(start) || !int_col(launch_stop))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: group, start and launch stop must be integer columns", what);
  int64_t n = group->len;
  if (start->len != n || launch_stop->len != n)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: group, start and launch stop must have one length", what);
  nsl__order ord;
  nsl_status rc = nsl__order_by_group_start(group, start, 0, &ord, err);
  if (rc != NSL_OK) return rc;
  /* two passes over the order, its groups in ranges on the threads: how many wait, then the waits (no column
   * of every row) */
  int64_t cut[NSL__SPLIT_MAX + 1], count[NSL__SPLIT_MAX], at[NSL__SPLIT_MAX], m = 0;
  int parts = nsl__order_split(&ord, group, cut);
  waits_job job = {group, start, launch_stop, &ord, cut, count, at, 0, NULL, NULL, NULL};
  nsl__run_parallel(parts, parts, waits_range, &job);
  for (int k = 0; k < parts; k++) {
    at[k] = m;
    m += count[k];
  }
  *rows = nsl_column_new(NSL_I64, m, NULL);
  *from = nsl_column_new(NSL_I64, m, NULL);
  *to = nsl_column_new(NSL_I64, m, NULL);
  if (!*rows || !*from || !*to) {
    nsl__order_free(&ord);
    nsl_column_release(*rows);
    nsl_column_release(*from);
    nsl_column_release(*to);
    *rows = *from = *to = NULL;
    return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory for %lld waits", what, (long long)m);
  }
  job.pass = 1;
  job.r = nsl_i64(*rows);
  job.f = nsl_i64(*from);
  job.t = nsl_i64(*to);
  nsl__run_parallel(parts, parts, waits_range, &job);
  nsl__order_free(&ord);
  return NSL_OK;
}
