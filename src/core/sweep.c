/* sweep.c -- sweeps over NVTX ranges: their projection onto the GPU
 * (nsl_nvtx_project) and the tree of their name paths (nsl_tree_paths).
 *
 * The projection sorts the ranges by (thread, start, -stop) and the API
 * calls by (thread, start), then walks both in one merge per thread with a
 * stack of the ranges open at the current time.  Each stack entry knows
 * whether every entry below it encloses it ("chain"); for properly nested
 * ranges (push/pop) that holds everywhere, so the innermost enclosing range
 * is found at the top.  Start/end ranges may overlap without nesting: then
 * the scan goes further down and keeps the shortest enclosing range, which
 * is nsys's "tightest" parent.  A call that launched GPU ops adds them to
 * every open range that encloses it, so sums stay exact however the ranges
 * overlap. */
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"

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
  return NSL_OK;
}

static nsl_status check_input(const nsl_nvtx_input *in, nsl_error *err) {
  if (!in || in->nkeys < 1 || in->nkeys > MAX_KEYS)
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: need 1 to %d thread key columns", MAX_KEYS);
  nsl_status rc = check_side("ranges", in->range_keys, in->nkeys, in->range_start, in->range_stop, err);
  if (rc == NSL_OK) rc = check_side("API calls", in->api_keys, in->nkeys, in->api_start, in->api_stop, err);
  if (rc != NSL_OK) return rc;
  if (in->range_mask && (in->range_mask->type != NSL_BOOL || in->range_mask->len != in->range_start->len))
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the range mask must be a bool column of %lld rows",
                         (long long)in->range_start->len);
  if (!int_col(in->op_api) || !int_col(in->op_start) || !int_col(in->op_stop))
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the GPU ops need integer api, start and stop columns");
  if (in->op_start->len != in->op_api->len || in->op_stop->len != in->op_api->len)
    return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: the GPU ops have %lld api rows, %lld starts, %lld stops",
                         (long long)in->op_api->len, (long long)in->op_start->len, (long long)in->op_stop->len);
  return NSL_OK;
}

void nsl_nvtx_projection_free(nsl_nvtx_projection *p) {
  if (!p) return;
  nsl_column *cols[] = {p->parent, p->depth, p->proj_start, p->proj_stop, p->ops,
                        p->launches, p->gpu_time, p->children, p->api_range, p->op_range};
  for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) nsl_column_release(cols[i]);
  memset(p, 0, sizeof *p);
}

/* Reads the key tuple of row i into out; returns 0 when a key is NULL. */
static int key_tuple(const nsl_column *const *keys, int nk, int64_t i, int64_t *out) {
  for (int k = 0; k < nk; k++) {
    int null;
    out[k] = nsl__int_at(keys[k], i, &null);
    if (null) return 0;
  }
  return 1;
}

static int cmp_tuple(const int64_t *a, const int64_t *b, int nk) {
  for (int k = 0; k < nk; k++)
    if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
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

/* The stack index of the shortest open range that encloses [.., stop] (all
 * open ranges start at or before the query), the topmost of equals; -1 when
 * none does.  With ops, adds them to every enclosing range. */
static int64_t stack_find(const range_stack *s, int64_t stop, const call_ops *ops, int64_t *r_ops,
                          int64_t *r_launch, int64_t *r_busy, int64_t *r_first, int64_t *r_last) {
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
      r_ops[r] += ops->n;
      r_launch[r] += 1;
      r_busy[r] += ops->busy;
      if (r_first[r] == NSL_NULL_I64 || ops->first < r_first[r]) r_first[r] = ops->first;
      if (r_last[r] == NSL_NULL_I64 || ops->last > r_last[r]) r_last[r] = ops->last;
    } else if (e->chain) {
      break;   /* every entry below encloses this one: none is shorter */
    }
  }
  return best;
}

/* The GPU work of every API call that launched some: slot[a] indexes ops
 * (or is -1).  Returns NSL_OK or fills err. */
static nsl_status gather_call_ops(const nsl_nvtx_input *in, int64_t na, int64_t *slot, call_ops **out,
                                  nsl_error *err) {
  const nsl_column *api = in->op_api;
  int64_t no = api->len, nslots = 0;
  *out = NULL;
  for (int64_t a = 0; a < na; a++) slot[a] = -1;
  for (int64_t j = 0; j < no; j++) {
    int null;
    int64_t a = nsl__int_at(api, j, &null);
    if (null || a < 0) continue;
    if (a >= na)
      return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: GPU op %lld names API call %lld, but there are %lld",
                           (long long)j, (long long)a, (long long)na);
    if (slot[a] < 0) slot[a] = nslots++;
  }
  call_ops *ops = calloc(nslots ? (size_t)nslots : 1, sizeof *ops);
  if (!ops) return nsl_error_set(err, NSL_ERR_NOMEM, "NVTX projection: out of memory for %lld calls", (long long)nslots);
  for (int64_t k = 0; k < nslots; k++) ops[k].first = ops[k].last = NSL_NULL_I64;
  for (int64_t j = 0; j < no; j++) {
    int null, ns, ne;
    int64_t a = nsl__int_at(api, j, &null);
    if (null || a < 0) continue;
    int64_t s = nsl__int_at(in->op_start, j, &ns), e = nsl__int_at(in->op_stop, j, &ne);
    if (ns || ne) continue;
    call_ops *c = &ops[slot[a]];
    c->n++;
    c->busy += e - s;
    if (c->first == NSL_NULL_I64 || s < c->first) c->first = s;
    if (c->last == NSL_NULL_I64 || e > c->last) c->last = e;
  }
  *out = ops;
  return NSL_OK;
}

/* Row order of one side: by (keys..., start[, stop descending]). */
static nsl_column *side_order(const nsl_column *const *keys, int nk, const nsl_column *start,
                              const nsl_column *stop, nsl_error *err) {
  const nsl_column *cols[MAX_KEYS + 2];
  int desc[MAX_KEYS + 2] = {0};
  int n = 0;
  for (int k = 0; k < nk; k++) cols[n++] = keys[k];
  cols[n++] = start;
  if (stop) {
    desc[n] = 1;   /* NULL stops (open ranges) sort first: the longest */
    cols[n++] = stop;
  }
  return nsl_argsort(cols, desc, n, err);
}

nsl_status nsl_nvtx_project(const nsl_nvtx_input *in, nsl_nvtx_projection *out, nsl_error *err) {
  if (!out) return nsl_error_set(err, NSL_ERR_ARG, "NVTX projection: no output");
  memset(out, 0, sizeof *out);
  nsl_status rc = check_input(in, err);
  if (rc != NSL_OK) return rc;
  const int nk = in->nkeys;
  const int64_t nr = in->range_start->len, na = in->api_start->len, no = in->op_api->len;
  nsl_column *rorder = NULL, *aorder = NULL;
  int64_t *slot = NULL;
  call_ops *ops = NULL;
  range_stack st = {NULL, 0, 0, 64};

  out->parent = nsl_column_new(NSL_I64, nr, NULL);
  out->depth = nsl_column_new(NSL_I32, nr, NULL);
  out->proj_start = nsl_column_new(NSL_I64, nr, NULL);
  out->proj_stop = nsl_column_new(NSL_I64, nr, NULL);
  out->ops = nsl_column_new(NSL_I64, nr, NULL);
  out->launches = nsl_column_new(NSL_I64, nr, NULL);
  out->gpu_time = nsl_column_new(NSL_I64, nr, NULL);
  out->children = nsl_column_new(NSL_I64, nr, NULL);
  out->api_range = nsl_column_new(NSL_I64, na, NULL);
  out->op_range = nsl_column_new(NSL_I64, no, NULL);
  slot = malloc((size_t)(na ? na : 1) * sizeof *slot);
  if (!out->parent || !out->depth || !out->proj_start || !out->proj_stop || !out->ops || !out->launches ||
      !out->gpu_time || !out->children || !out->api_range || !out->op_range || !slot)
    goto nomem;
  int64_t *parent = nsl_i64(out->parent), *first = nsl_i64(out->proj_start), *last = nsl_i64(out->proj_stop);
  int32_t *depth = nsl_i32(out->depth);
  int64_t *api_range = nsl_i64(out->api_range), *op_range = nsl_i64(out->op_range);
  for (int64_t r = 0; r < nr; r++) {
    parent[r] = -1;
    depth[r] = NSL_NULL_I32;
    first[r] = last[r] = NSL_NULL_I64;
  }
  for (int64_t a = 0; a < na; a++) api_range[a] = -1;

  if ((rc = gather_call_ops(in, na, slot, &ops, err)) != NSL_OK) goto fail;
  if (!(rorder = side_order(in->range_keys, nk, in->range_start, in->range_stop, err))) goto fail_rc;
  if (!(aorder = side_order(in->api_keys, nk, in->api_start, NULL, err))) goto fail_rc;

  const int64_t *ro = nsl_i64(rorder), *ao = nsl_i64(aorder);
  const uint8_t *mask = in->range_mask ? nsl_bool(in->range_mask) : NULL;
  int64_t rkey[MAX_KEYS], akey[MAX_KEYS], cur[MAX_KEYS];
  int have_cur = 0;
  int64_t ir = 0, ia = 0;
  /* The next usable range / call in sweep order, with its times and keys. */
  int64_t r = -1, rs = 0, re = 0, a = -1, as = 0, ae = 0;
  for (;;) {
    while (r < 0 && ir < nr) {
      int64_t i = ro[ir++];
      int ns, ne;
      rs = nsl__int_at(in->range_start, i, &ns);
      re = nsl__int_at(in->range_stop, i, &ne);
      if (ne) re = INT64_MAX;
      if ((mask && !mask[i]) || ns || re < rs || !key_tuple(in->range_keys, nk, i, rkey)) continue;
      r = i;
    }
    while (a < 0 && ia < na) {
      int64_t i = ao[ia++];
      int ns, ne;
      as = nsl__int_at(in->api_start, i, &ns);
      ae = nsl__int_at(in->api_stop, i, &ne);
      if (ns || ne || ae < as || !key_tuple(in->api_keys, nk, i, akey)) continue;
      a = i;
    }
    if (r < 0 && a < 0) break;
    /* ranges go first at equal (thread, start): a range enclosing a call may start with it */
    int take_range;
    if (r < 0) take_range = 0;
    else if (a < 0) take_range = 1;
    else {
      int c = cmp_tuple(rkey, akey, nk);
      take_range = c < 0 || (c == 0 && rs <= as);
    }
    const int64_t *key = take_range ? rkey : akey;
    if (!have_cur || cmp_tuple(key, cur, nk) != 0) {   /* a new thread: nothing is open */
      memcpy(cur, key, (size_t)nk * sizeof *cur);
      have_cur = 1;
      st.n = 0;
      st.compact_at = 64;
    }
    if (take_range) {
      stack_expire(&st, rs);
      int64_t p = stack_find(&st, re, NULL, NULL, NULL, NULL, NULL, NULL);
      if (p >= 0) {
        parent[r] = st.e[p].row;
        depth[r] = depth[st.e[p].row] + 1;
      } else depth[r] = 0;
      if (!stack_push(&st, r, rs, re)) goto nomem;
      r = -1;
    } else {
      stack_expire(&st, as);
      const call_ops *c = slot[a] >= 0 ? &ops[slot[a]] : NULL;
      if (c && c->n == 0) c = NULL;   /* its ops have no times */
      int64_t p = stack_find(&st, ae, c, nsl_i64(out->ops), nsl_i64(out->launches), nsl_i64(out->gpu_time),
                             first, last);
      api_range[a] = p >= 0 ? st.e[p].row : -1;
      a = -1;
    }
  }
  for (int64_t j = 0; j < no; j++) {
    int null;
    int64_t c = nsl__int_at(in->op_api, j, &null);
    op_range[j] = null || c < 0 ? -1 : api_range[c];
  }
  const int64_t *nops = nsl_i64(out->ops);
  int64_t *children = nsl_i64(out->children);
  for (int64_t i = 0; i < nr; i++)
    if (nops[i] > 0 && parent[i] >= 0) children[parent[i]]++;
  rc = NSL_OK;
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "NVTX projection: out of memory (%lld ranges, %lld calls, %lld ops)",
                     (long long)nr, (long long)na, (long long)no);
  goto fail;
fail_rc:
  rc = err && err->code != NSL_OK ? err->code : NSL_ERR_NOMEM;
fail:
  nsl_nvtx_projection_free(out);
done:
  nsl_column_release(rorder);
  nsl_column_release(aorder);
  free(slot);
  free(ops);
  free(st.e);
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

static uint64_t path_hash(int64_t pnode, int64_t label, int label_null) {
  return nsl__mix64((uint64_t)pnode * 0x9e3779b97f4a7c15ull ^ nsl__mix64((uint64_t)label + (uint64_t)label_null));
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

void nsl_tree_free(nsl_tree *t) {
  if (!t) return;
  nsl_column_release(t->node_of);
  nsl_column_release(t->node_parent);
  nsl_column_release(t->node_depth);
  nsl_column_release(t->node_row);
  memset(t, 0, sizeof *t);
}

/* Appends a node; returns its id or -1 on out of memory. */
static int64_t tree_add(nsl_tree *t, int64_t pnode, int32_t depth, int64_t row) {
  int64_t id = t->nnodes;
  if (id == t->node_parent->cap) {
    int64_t cap = id * 2 > 1024 ? id * 2 : 1024;
    if (nsl_column_reserve(t->node_parent, cap) != NSL_OK || nsl_column_reserve(t->node_depth, cap) != NSL_OK ||
        nsl_column_reserve(t->node_row, cap) != NSL_OK)
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

nsl_status nsl_tree_paths(const nsl_column *parent, const nsl_column *label, const nsl_column *mask,
                          nsl_tree *out, nsl_error *err) {
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
      int null;
      int64_t p = nsl__int_at(parent, j, &null);
      if (null || p < 0) break;
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
      int64_t lab = nsl__int_at(label, j, &null);
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
  nsl_tree_free(out);
done:
  free(tab.s);
  free(walk);
  return rc;
}
