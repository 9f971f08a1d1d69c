/* table.c -- tables of named columns; columns may be declared first and
 * loaded later, on demand, through the table's loader. */
#include <stdlib.h>
#include <string.h>

#include "core/nsl_internal.h"
#include "nsl/nsl.h"

struct nsl_table {
  int refcount;
  int ncols, cap;
  char **names;
  nsl_type *types;
  nsl_column **cols;          /* NULL while not loaded */
  int64_t nrows;              /* -1 while unknown */
  nsl_table_loader loader;
  void *loader_ctx;
  void (*free_ctx)(void *);
  const nsl__load_steps *steps;   /* the loader's steps for nsl_table_load_begin, or NULL */
};

nsl_table *nsl_table_new(void) {
  nsl_table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->refcount = 1;
  t->nrows = -1;
  return t;
}

nsl_table *nsl_table_retain(nsl_table *t) {
  if (t) t->refcount++;
  return t;
}

void nsl_table_release(nsl_table *t) {
  if (!t || --t->refcount > 0) return;
  for (int i = 0; i < t->ncols; i++) {
    free(t->names[i]);
    nsl_column_release(t->cols[i]);
  }
  free(t->names);
  free(t->types);
  free(t->cols);
  if (t->free_ctx) t->free_ctx(t->loader_ctx);
  free(t);
}

static int grow(nsl_table *t) {
  if (t->ncols < t->cap) return 0;
  int cap = t->cap ? t->cap * 2 : 16;
  char **names = realloc(t->names, (size_t)cap * sizeof *names);
  if (!names) return -1;
  t->names = names;
  nsl_type *types = realloc(t->types, (size_t)cap * sizeof *types);
  if (!types) return -1;
  t->types = types;
  nsl_column **cols = realloc(t->cols, (size_t)cap * sizeof *cols);
  if (!cols) return -1;
  t->cols = cols;
  t->cap = cap;
  return 0;
}

int nsl_table_find(const nsl_table *t, const char *name) {
  for (int i = 0; i < t->ncols; i++)
    if (strcmp(t->names[i], name) == 0) return i;
  return -1;
}

nsl_status nsl_table_declare(nsl_table *t, const char *name, nsl_type type, nsl_error *err) {
  int i = nsl_table_find(t, name);
  if (i >= 0 && !t->cols[i] && t->types[i] != type)
    return nsl_error_set(err, NSL_ERR_ARG, "column '%s' is already declared as %s, not %s", name,
                         nsl_type_name(t->types[i]), nsl_type_name(type));
  if (i >= 0) return NSL_OK;
  char *copy = grow(t) == 0 ? strdup(name) : NULL;
  if (!copy) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  i = t->ncols++;
  t->names[i] = copy;
  t->types[i] = type;
  t->cols[i] = NULL;
  return NSL_OK;
}

nsl_status nsl_table_set_column(nsl_table *t, int idx, nsl_column *c, nsl_error *err) {
  if (idx < 0 || idx >= t->ncols)
    return nsl_error_set(err, NSL_ERR_ARG, "no column %d in table", idx);
  if (t->nrows >= 0 && c->len != t->nrows)
    return nsl_error_set(err, NSL_ERR_ARG, "column '%s' has %lld rows, the table %lld", t->names[idx],
                         (long long)c->len, (long long)t->nrows);
  nsl_column_retain(c);
  nsl_column_release(t->cols[idx]);
  t->cols[idx] = c;
  t->types[idx] = c->type;
  t->nrows = c->len;
  return NSL_OK;
}

nsl_status nsl_table_add(nsl_table *t, const char *name, nsl_column *c, nsl_error *err) {
  int i = nsl_table_find(t, name);
  if (i < 0) {
    char *copy = grow(t) == 0 ? strdup(name) : NULL;
    if (!copy) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory adding column '%s'", name);
    i = t->ncols++;
    t->names[i] = copy;
    t->types[i] = c->type;
    t->cols[i] = NULL;
  }
  nsl_status st = nsl_table_set_column(t, i, c, err);
  if (st != NSL_OK && !t->cols[i] && i == t->ncols - 1) {   /* undo a fresh declaration */
    free(t->names[i]);
    t->ncols--;
  }
  return st;
}

void nsl_table_set_loader(nsl_table *t, nsl_table_loader fn, void *ctx, void (*free_ctx)(void *)) {
  if (t->free_ctx) t->free_ctx(t->loader_ctx);
  t->loader = fn;
  t->loader_ctx = ctx;
  t->steps = NULL;
  t->free_ctx = free_ctx;
}

void nsl_table_set_nrows(nsl_table *t, int64_t n) { t->nrows = n; }
int nsl_table_ncols(const nsl_table *t) { return t->ncols; }
const char *nsl_table_colname(const nsl_table *t, int idx) {
  return idx >= 0 && idx < t->ncols ? t->names[idx] : NULL;
}
nsl_type nsl_table_coltype(const nsl_table *t, int idx) { return t->types[idx]; }
int nsl_table_is_loaded(const nsl_table *t, int idx) {
  return idx >= 0 && idx < t->ncols && t->cols[idx] != NULL;
}

nsl_status nsl_table_unload(nsl_table *t, int idx, nsl_error *err) {
  if (idx < 0 || idx >= t->ncols) return nsl_error_set(err, NSL_ERR_NOTFOUND, "no column %d", idx);
  if (!t->loader)
    return nsl_error_set(err, NSL_ERR_ARG, "column '%s': this table holds its columns, nothing would load it again",
                         t->names[idx]);
  nsl_column_release(t->cols[idx]);
  t->cols[idx] = NULL;
  return NSL_OK;
}

/* Loads the columns idx[0..n) that are not loaded yet, in one loader call. */
static nsl_status load_indices(nsl_table *t, const int *idx, int n, nsl_error *err) {
  int *missing = malloc((size_t)(n ? n : 1) * sizeof *missing);
  if (!missing) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  int m = 0;
  for (int k = 0; k < n; k++) {
    int dup = 0;
    for (int j = 0; j < m; j++) dup |= missing[j] == idx[k];
    if (!t->cols[idx[k]] && !dup) missing[m++] = idx[k];
  }
  nsl_status rc = NSL_OK;
  if (m > 0) {
    if (!t->loader)
      rc = nsl_error_set(err, NSL_ERR_ARG, "column '%s' has no data and no loader", t->names[missing[0]]);
    else
      rc = t->loader(t->loader_ctx, t, missing, m, err);
    for (int j = 0; rc == NSL_OK && j < m; j++)
      if (!t->cols[missing[j]])
        rc = nsl_error_set(err, NSL_ERR_FORMAT, "loader did not provide column '%s'", t->names[missing[j]]);
  }
  free(missing);
  return rc;
}

nsl_status nsl_table_nrows(nsl_table *t, int64_t *out, nsl_error *err) {
  nsl_status st = NSL_OK;
  *out = -1;
  if (t->nrows < 0 && t->ncols == 0) t->nrows = 0;
  if (t->nrows < 0 && t->loader) st = t->loader(t->loader_ctx, t, NULL, 0, err);   /* n = 0: count only */
  if (st == NSL_OK && t->nrows < 0) {
    int best = 0;   /* otherwise load the narrowest column */
    for (int i = 1; i < t->ncols; i++)
      if (nsl_type_size(t->types[i]) < nsl_type_size(t->types[best])) best = i;
    st = load_indices(t, &best, 1, err);
  }
  if (st == NSL_OK) *out = t->nrows;
  return st;
}

/* The indices of names in t (*idx malloc'd); NSL_ERR_NOTFOUND for an unknown name. */
static nsl_status find_all(nsl_table *t, const char *const *names, int n, int **idx, nsl_error *err) {
  *idx = malloc((size_t)(n ? n : 1) * sizeof **idx);
  if (!*idx) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int k = 0; k < n; k++)
    if (((*idx)[k] = nsl_table_find(t, names[k])) < 0) {
      free(*idx);
      *idx = NULL;
      return nsl_error_set(err, NSL_ERR_NOTFOUND, "no column '%s'", names[k]);
    }
  return NSL_OK;
}

nsl_status nsl_table_require(nsl_table *t, const char *const *names, int n, nsl_error *err) {
  int *idx;
  nsl_status rc = find_all(t, names, n, &idx, err);
  if (rc == NSL_OK) rc = load_indices(t, idx, n, err);
  free(idx);
  return rc;
}

void nsl__table_set_load_steps(nsl_table *t, const nsl__load_steps *steps) { t->steps = steps; }

struct nsl_load {
  nsl_table *t;        /* retained */
  int *idx, n;         /* the columns asked for */
  const nsl__load_steps *steps;
  void *plan;          /* NULL: nothing to read in step 2 */
  int read;            /* step 2 ran */
  nsl_status rc;       /* its outcome */
  nsl_error err;
};

nsl_status nsl_table_load_begin(nsl_table *t, const char *const *names, int n, nsl_load **out, nsl_error *err) {
  *out = NULL;
  nsl_load *l = calloc(1, sizeof *l);
  if (!l) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl_status rc = find_all(t, names, n, &l->idx, err);
  if (rc != NSL_OK) {
    free(l);
    return rc;
  }
  l->n = n;
  l->t = nsl_table_retain(t);
  if (t->steps) {
    int *missing = malloc((size_t)(n ? n : 1) * sizeof *missing), m = 0;
    if (!missing) rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    for (int k = 0; missing && k < n; k++) {
      int dup = 0;
      for (int j = 0; j < m; j++) dup |= missing[j] == l->idx[k];
      if (!t->cols[l->idx[k]] && !dup) missing[m++] = l->idx[k];
    }
    if (rc == NSL_OK && m > 0) {
      l->steps = t->steps;
      rc = t->steps->plan(t->loader_ctx, t, missing, m, &l->plan, err);
    }
    free(missing);
  }
  if (rc != NSL_OK) {
    nsl_load_free(l);
    return rc;
  }
  *out = l;
  return NSL_OK;
}

nsl_status nsl_load_read(nsl_load *l, nsl_error *err) {
  if (!l->read) {
    l->read = 1;
    l->rc = l->plan ? l->steps->read(l->plan, &l->err) : NSL_OK;
  }
  if (l->rc != NSL_OK && err) *err = l->err;
  return l->rc;
}

nsl_status nsl_load_end(nsl_load *l, nsl_error *err) {
  nsl_status rc = nsl_load_read(l, err);
  if (rc == NSL_OK && l->plan) rc = l->steps->store(l->plan, l->t, err);
  if (rc == NSL_OK) rc = load_indices(l->t, l->idx, l->n, err);   /* a table without steps loads here */
  nsl_load_free(l);
  return rc;
}

void nsl_load_free(nsl_load *l) {
  if (!l) return;
  if (l->plan) l->steps->free(l->plan);
  nsl_table_release(l->t);
  free(l->idx);
  free(l);
}

nsl_column *nsl_table_column_at(nsl_table *t, int idx, nsl_error *err) {
  if (idx < 0 || idx >= t->ncols) {
    nsl_error_set(err, NSL_ERR_NOTFOUND, "no column %d", idx);
    return NULL;
  }
  if (!t->cols[idx] && load_indices(t, &idx, 1, err) != NSL_OK) return NULL;
  return t->cols[idx];
}

nsl_column *nsl_table_column(nsl_table *t, const char *name, nsl_error *err) {
  int idx = nsl_table_find(t, name);
  if (idx < 0) {
    nsl_error_set(err, NSL_ERR_NOTFOUND, "no column '%s'", name);
    return NULL;
  }
  return nsl_table_column_at(t, idx, err);
}

size_t nsl_table_bytes(const nsl_table *t) {
  size_t b = 0;
  for (int i = 0; i < t->ncols; i++) b += nsl_column_bytes(t->cols[i]);
  return b;
}

/* ---- take: a row subset whose unloaded columns load from the parent ---- */

typedef struct take_ctx {
  nsl_table *parent;
  nsl_column *idx;   /* NULL: every row of the parent, in place */
  int64_t rows;
} take_ctx;

static void take_free(void *p) {
  take_ctx *c = p;
  nsl_table_release(c->parent);
  nsl_column_release(c->idx);
  free(c);
}

static nsl_status take_load(void *p, nsl_table *t, const int *idx, int n, nsl_error *err) {
  take_ctx *c = p;
  if (n == 0) {
    nsl_table_set_nrows(t, c->rows);
    return NSL_OK;
  }
  const char **names = calloc((size_t)n, sizeof *names);
  if (!names) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  for (int k = 0; k < n; k++) names[k] = nsl_table_colname(t, idx[k]);
  nsl_status rc = nsl_table_require(c->parent, names, n, err);
  for (int k = 0; rc == NSL_OK && k < n; k++) {
    nsl_column *src = nsl_table_column(c->parent, names[k], err);
    nsl_column *g = !src ? NULL : c->idx ? nsl_column_gather(src, c->idx, err) : nsl_column_retain(src);
    if (!g) rc = err && err->code ? err->code : NSL_ERR_NOMEM;
    else {
      rc = nsl_table_set_column(t, idx[k], g, err);
      nsl_column_release(g);
    }
  }
  free(names);
  return rc;
}

/* Rows idx of t, or with idx NULL every one of its rows (rows of them) in
 * place: then, or where idx is every row in order, the columns are shared,
 * not copied (columns never change once made). */
static nsl_table *take_rows(nsl_table *t, const nsl_column *idx, int64_t rows, nsl_error *err) {
  nsl_table *r = nsl_table_new();
  take_ctx *ctx = calloc(1, sizeof *ctx);
  if (!r || !ctx) goto nomem;
  int same = !idx;
  for (int i = 0; i < t->ncols && !same; i++)
    if (t->cols[i]) same = t->cols[i]->len == idx->len;
  const int64_t *ix = idx ? nsl_i64(idx) : NULL;
  for (int64_t j = 0; idx && same && j < idx->len; j++) same = ix[j] == j;
  for (int i = 0; i < t->ncols; i++) {
    if (t->cols[i]) {
      nsl_column *g = same ? nsl_column_retain(t->cols[i]) : nsl_column_gather(t->cols[i], idx, err);
      if (!g) goto fail;
      nsl_status rc = nsl_table_add(r, t->names[i], g, err);
      nsl_column_release(g);
      if (rc != NSL_OK) goto fail;
    } else if (nsl_table_declare(r, t->names[i], t->types[i], NULL) != NSL_OK) goto nomem;
  }
  nsl_table_set_nrows(r, rows);
  ctx->parent = nsl_table_retain(t);
  ctx->idx = idx ? nsl_column_retain((nsl_column *)idx) : NULL;
  ctx->rows = rows;
  nsl_table_set_loader(r, take_load, ctx, take_free);
  return r;
nomem:
  nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
fail:
  free(ctx);
  nsl_table_release(r);
  return NULL;
}

nsl_table *nsl_table_take(nsl_table *t, const nsl_column *idx, nsl_error *err) {
  if (idx->type != NSL_I64) {
    nsl_error_set(err, NSL_ERR_ARG, "row indices must be an i64 column");
    return NULL;
  }
  return take_rows(t, idx, idx->len, err);
}

nsl_table *nsl_table_filter(nsl_table *t, const nsl_column *mask, nsl_error *err) {
  int64_t n;
  if (nsl_table_nrows(t, &n, err) != NSL_OK) return NULL;
  if (!mask || mask->type != NSL_BOOL || mask->len != n) {
    nsl_error_set(err, NSL_ERR_ARG, "filter: need a mask of %lld rows, got a %s column of %lld", (long long)n,
                  mask ? nsl_type_name(mask->type) : "missing", mask ? (long long)mask->len : 0LL);
    return NULL;
  }
  if (nsl_mask_count(mask) == n) return take_rows(t, NULL, n, err);   /* (no row indices to make) */
  nsl_column *idx = nsl_mask_indices(mask, err);
  if (!idx) return NULL;
  nsl_table *r = take_rows(t, idx, idx->len, err);
  nsl_column_release(idx);
  return r;
}
