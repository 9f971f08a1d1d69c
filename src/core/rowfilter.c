/* rowfilter.c -- row filters evaluated where the rows are read (rowfilter.h).
 *
 * Encoding of one table's filter: int32 n, then per condition the column
 * (u32 length, bytes), int32 op, int32 or_null, the pattern (u32 length,
 * bytes), int32 nvalues, int64 values[nvalues]; host byte order (both ends
 * of a distributed run are the same build). */
#include "core/rowfilter.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/bytes.h"
#include "core/model.h"

struct nsl__row_filters {
  char *table;
  void *blob;
  size_t len;
  struct nsl__row_filters *next;
};

/* ---- encoding ---- */

static int is_cmp(int op) { return op >= NSL_EQ && op <= NSL_GE; }
static int is_match(int op) { return op == NSL__ROW_MATCH || op == NSL__ROW_IMATCH; }

/* conds[0..n) checked (a bad regex fails here, once, not on every read)
 * and encoded into a new buffer (*blob, *len). */
static nsl_status encode(const char *table, const nsl__row_cond *conds, int n, void **blob, size_t *len,
                         nsl_error *err) {
  if (n < 0 || n > 64) return nsl_error_set(err, NSL_ERR_ARG, "filter of table '%s': %d conditions (0 to 64)", table, n);
  for (int i = 0; i < n; i++) {
    const nsl__row_cond *c = &conds[i];
    int cmp = is_cmp(c->op), match = is_match(c->op);
    if (!c->column || !*c->column || (match && !c->pattern) || (cmp && c->nvalues != 1) ||
        (!cmp && !match && c->op != NSL__ROW_IN) || c->nvalues < 0 || (c->nvalues > 0 && !c->values))
      return nsl_error_set(err, NSL_ERR_ARG, "filter of table '%s': condition %d is not a regex, a set or a comparison",
                           table, i + 1);
    if (match) {
      nsl_regex *re = NULL;
      nsl_status rc = nsl_regex_compile(&re, c->pattern, c->op == NSL__ROW_IMATCH ? NSL_REGEX_ICASE : 0, err);
      nsl_regex_free(re);
      if (rc != NSL_OK) return rc;
    }
  }
  nsl__text m = {0};
  int32_t nc = n;
  nsl__bytes_put(&m, &nc, sizeof nc);
  for (int i = 0; i < n; i++) {
    const nsl__row_cond *c = &conds[i];
    int32_t op = c->op, or_null = c->or_null && is_cmp(c->op), nv = c->nvalues;
    nsl__bytes_put_str(&m, c->column);
    nsl__bytes_put(&m, &op, sizeof op);
    nsl__bytes_put(&m, &or_null, sizeof or_null);
    nsl__bytes_put_str(&m, is_match(c->op) ? c->pattern : "");
    nsl__bytes_put(&m, &nv, sizeof nv);
    nsl__bytes_put(&m, c->values, (size_t)nv * sizeof *c->values);
  }
  if (m.oom) {
    free(m.s);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  *blob = m.s;
  *len = m.len;
  return NSL_OK;
}

/* ---- the set ---- */

nsl_status nsl__row_filters_set(nsl__row_filters **set, const char *table, const nsl__row_cond *conds, int n,
                                nsl_error *err) {
  void *blob = NULL;
  size_t len = 0;
  nsl_status rc = encode(table, conds, n, &blob, &len, err);
  if (rc != NSL_OK) return rc;
  for (nsl__row_filters *f = *set; f; f = f->next)
    if (strcmp(f->table, table) == 0) {
      free(f->blob);
      f->blob = blob;
      f->len = len;
      return NSL_OK;
    }
  nsl__row_filters *f = malloc(sizeof *f);
  char *name = strdup(table);
  if (!f || !name) {
    free(f);
    free(name);
    free(blob);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  *f = (nsl__row_filters){name, blob, len, *set};
  *set = f;
  return NSL_OK;
}

const void *nsl__row_filters_find(const nsl__row_filters *set, const char *table, size_t *len) {
  for (const nsl__row_filters *f = set; f; f = f->next)
    if (strcmp(f->table, table) == 0) {
      *len = f->len;
      return f->blob;
    }
  *len = 0;
  return NULL;
}

void nsl__row_filters_free(nsl__row_filters *set) {
  while (set) {
    nsl__row_filters *next = set->next;
    free(set->table);
    free(set->blob);
    free(set);
    set = next;
  }
}

/* ---- decoding ---- */

/* One decoded condition (owning its strings and values). */
typedef struct cond {
  char *column, *pattern;
  int32_t op, or_null, nvalues;
  int64_t *values;
  nsl_type type;
} cond;

/* The mask of the rows of condition k over column c. */
static nsl_column *cond_mask(const nsl_column *c, const cond *k, nsl_error *err) {
  if (k->op == NSL__ROW_IN) return nsl_column_isin(c, k->values, k->nvalues, err);
  if (is_cmp(k->op)) {
    nsl_column *m = nsl_column_cmp_i64(c, (nsl_cmp)k->op, k->values[0], err);
    if (!m || !k->or_null) return m;
    nsl_column *nulls = nsl_column_nulls(c, err), *either = nulls ? nsl_mask_or(m, nulls, err) : NULL;
    nsl_column_release(m);
    nsl_column_release(nulls);
    return either;
  }
  nsl_regex *re = NULL;
  if (nsl_regex_compile(&re, k->pattern, k->op == NSL__ROW_IMATCH ? NSL_REGEX_ICASE : 0, err) != NSL_OK) return NULL;
  nsl_column *m = nsl_column_regex(c, re, err);
  nsl_regex_free(re);
  return m;
}

/* Decodes (blob, blen) into *conds (*n of them); NSL_ERR_FORMAT when it is
 * not an encoding. */
static nsl_status decode(const char *table, const void *blob, size_t blen, cond **conds, int *n, nsl_error *err) {
  nsl_bytes_in r = {blob, blen, 0, 0};
  int32_t nc = 0;
  nsl__bytes_get(&r, &nc, sizeof nc);
  *conds = NULL;
  *n = 0;
  if (r.bad || nc < 0 || nc > 64) return nsl_error_set(err, NSL_ERR_FORMAT, "corrupt row filter of table '%s'", table);
  cond *cs = calloc((size_t)(nc ? nc : 1), sizeof *cs);
  if (!cs) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  *conds = cs;
  *n = nc;
  for (int i = 0; i < nc && !r.bad; i++) {
    cond *c = &cs[i];
    c->column = nsl__bytes_get_str(&r);
    nsl__bytes_get(&r, &c->op, sizeof c->op);
    nsl__bytes_get(&r, &c->or_null, sizeof c->or_null);
    c->pattern = nsl__bytes_get_str(&r);
    nsl__bytes_get(&r, &c->nvalues, sizeof c->nvalues);
    if (r.bad || !c->column || !c->pattern || c->nvalues < 0 ||
        (size_t)c->nvalues > (r.len - r.at) / sizeof(int64_t) ||
        (is_cmp(c->op) && c->nvalues != 1) || (!is_cmp(c->op) && !is_match(c->op) && c->op != NSL__ROW_IN)) {
      r.bad = 1;
      break;
    }
    if (!(c->values = malloc((size_t)(c->nvalues ? c->nvalues : 1) * sizeof *c->values)))
      return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    nsl__bytes_get(&r, c->values, (size_t)c->nvalues * sizeof *c->values);
  }
  if (r.bad) return nsl_error_set(err, NSL_ERR_FORMAT, "corrupt row filter of table '%s'", table);
  return NSL_OK;
}

static void free_conds(cond *cs, int n) {
  for (int i = 0; cs && i < n; i++) {
    free(cs[i].column);
    free(cs[i].pattern);
    free(cs[i].values);
  }
  free(cs);
}

/* ---- applying a filter ---- */

/* The rows of report (ops, src) that pass filter (blob, blen) of table:
 * *idx receives their indices, or NULL when every row passes (a condition
 * on a column the report lacks, or no condition); *rows their number
 * (counted by the source when *idx is NULL). */
static nsl_status filter_rows(const nsl_source_ops *ops, void *src, const char *table, int64_t offset,
                              const void *blob, size_t blen, nsl_column **idx, int64_t *rows, nsl_error *err) {
  *idx = NULL;
  cond *cs = NULL;
  int n = 0;
  nsl_status rc = decode(table, blob, blen, &cs, &n, err);
  const char **names = calloc((size_t)(n ? n : 1), sizeof *names);
  nsl_type *types = calloc((size_t)(n ? n : 1), sizeof *types);
  nsl_column **got = calloc((size_t)(n ? n : 1), sizeof *got);
  nsl_table *schema = nsl_table_new();
  nsl_dict *dict = nsl_dict_new();
  nsl_column *mask = NULL;
  int all = n == 0;   /* no condition, or one on a column this report lacks: no filtering */
  if (rc != NSL_OK) goto done;
  if (!names || !types || !got || !schema || !dict) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    goto done;
  }
  rc = all ? NSL_OK : ops->describe ? ops->describe(src, table, schema, err) : NSL_OK;
  if (rc == NSL_ERR_NOTFOUND) all = 1;   /* no such table: no rows, as the source counts them */
  else if (rc != NSL_OK) goto done;
  const nsl_model_table *mt = nsl__model_table(table);   /* the model's columns, then the source's extras */
  for (const nsl_model_column *c = mt ? mt->cols : NULL; c && c->name && !all; c++)
    if (nsl_table_find(schema, c->name) < 0) nsl_table_declare(schema, c->name, c->type, NULL);
  for (int i = 0; i < n && !all; i++) {
    int ci = nsl_table_find(schema, cs[i].column);
    if (ci < 0 || strcmp(cs[i].column, "report") == 0 || strcmp(cs[i].column, "dur") == 0) all = 1;   /* derived */
    else {
      names[i] = cs[i].column;
      types[i] = nsl_table_coltype(schema, ci);
    }
  }
  if (all) {
    rc = ops->count(src, table, rows, err);
    goto done;
  }
  if ((rc = ops->load(src, table, names, types, n, dict, offset, got, err)) != NSL_OK) goto done;
  for (int i = 0; i < n; i++) {
    nsl_column *m = cond_mask(got[i], &cs[i], err);
    nsl_column *both = m && mask ? nsl_mask_and(mask, m, err) : NULL;
    if (!m || (mask && !both)) {
      nsl_column_release(m);
      rc = err && err->code ? err->code : NSL_ERR_NOMEM;
      goto done;
    }
    if (both) {
      nsl_column_release(m);
      nsl_column_release(mask);
      mask = both;
    } else mask = m;
  }
  *rows = nsl_mask_count(mask);
  if (!(*idx = nsl_mask_indices(mask, err))) rc = err && err->code ? err->code : NSL_ERR_NOMEM;
done:
  for (int i = 0; got && i < n; i++) nsl_column_release(got[i]);
  free_conds(cs, n);
  free(names);
  free(types);
  free(got);
  nsl_column_release(mask);
  nsl_table_release(schema);
  nsl_dict_release(dict);
  return rc;
}

nsl_status nsl__row_filter_count(const nsl_source_ops *ops, void *src, const char *table, int64_t offset,
                                 const void *blob, size_t blen, int64_t *out, nsl_error *err) {
  if (!blob) return ops->count(src, table, out, err);
  nsl_column *idx = NULL;
  nsl_status rc = filter_rows(ops, src, table, offset, blob, blen, &idx, out, err);
  nsl_column_release(idx);
  return rc;
}

nsl_status nsl__row_filter_load(const nsl_source_ops *ops, void *src, const char *table, const char *const *cols,
                                const nsl_type *types, int n, nsl_dict *dict, int64_t offset, const void *blob,
                                size_t blen, nsl_column **out, nsl_error *err) {
  nsl_column *idx = NULL;
  int64_t rows = 0;
  nsl_status rc = blob ? filter_rows(ops, src, table, offset, blob, blen, &idx, &rows, err) : NSL_OK;
  if (rc == NSL_OK) rc = ops->load(src, table, cols, types, n, dict, offset, out, err);
  for (int k = 0; rc == NSL_OK && idx && k < n; k++) {
    if (!out[k]) continue;
    nsl_column *kept = nsl_column_gather(out[k], idx, err);
    if (!kept) {
      rc = err && err->code ? err->code : NSL_ERR_NOMEM;
      break;
    }
    nsl_column_release(out[k]);
    out[k] = kept;
  }
  nsl_column_release(idx);
  return rc;
}
