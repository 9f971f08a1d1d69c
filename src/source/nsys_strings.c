/* nsys_strings.c -- StringIds of an nsys export, read once per source
 * (lazily), and the map from its ids to the ids of the dictionary a load
 * interns into: only the strings a load's rows use are interned. */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "nsl/nsl.h"
#include "source/nsys_sqlite_internal.h"

/* Frees what a read of StringIds holds and marks it unread, so that a read
 * that failed part-way leaves no half-set state behind (the next load reads
 * again and meets the same error, instead of using arrays never allocated). */
void nsl__nsys_strings_free(nsys_src *s) {
  free(s->str_id);
  free(s->str_off);
  free(s->str_len);
  free(s->str_data);
  free(s->dense);
  free(s->map);
  free(s->map_api);
  s->str_id = s->str_off = NULL;
  s->str_len = s->dense = s->map = s->map_api = NULL;
  s->str_data = NULL;
  s->nstr = s->ndense = 0;
  s->strings_state = 0;
}

/* Reads StringIds once; marked read only when every array is in place. */
nsl_status nsl__nsys_load_strings(nsys_src *s, nsl_error *err) {
  if (s->strings_state) return NSL_OK;
  if (!nsl__nsys_find_table(s, "StringIds")) {   /* no strings: every id resolves to NULL */
    s->strings_state = 1;
    return NSL_OK;
  }
  sqlite3_stmt *st = NULL;
  int64_t cap = 0, dcap = 0, dlen = 0;
  nsl_status out = NSL_OK;
  int rc = sqlite3_prepare_v2(s->db, "SELECT id, value FROM StringIds", -1, &st, NULL);
  if (rc != SQLITE_OK) return nsl__nsys_sql_error(s, rc, "StringIds", err);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER) continue;
    int64_t id = sqlite3_column_int64(st, 0);
    const char *v = (const char *)sqlite3_column_text(st, 1);
    int len = sqlite3_column_bytes(st, 1);
    if (!v) continue;
    if (s->nstr == cap) {
      int64_t ncap = cap ? cap * 2 : 1024;
      int64_t *ids = realloc(s->str_id, (size_t)ncap * sizeof *ids);
      if (ids) s->str_id = ids;
      int64_t *offs = realloc(s->str_off, (size_t)ncap * sizeof *offs);
      if (offs) s->str_off = offs;
      int32_t *lens = realloc(s->str_len, (size_t)ncap * sizeof *lens);
      if (lens) s->str_len = lens;
      if (!ids || !offs || !lens) goto nomem;
      cap = ncap;
    }
    if (dlen + len + 1 > dcap) {
      int64_t ncap = dcap ? dcap * 2 : 65536;
      while (ncap < dlen + len + 1) ncap *= 2;
      char *d = realloc(s->str_data, (size_t)ncap);
      if (!d) goto nomem;
      s->str_data = d;
      dcap = ncap;
    }
    memcpy(s->str_data + dlen, v, (size_t)len);
    s->str_data[dlen + len] = '\0';
    s->str_id[s->nstr] = id;
    s->str_off[s->nstr] = dlen;
    s->str_len[s->nstr] = len;
    s->nstr++;
    dlen += len + 1;
  }
  if (rc != SQLITE_DONE) {
    out = nsl__nsys_sql_error(s, rc, "StringIds", err);
    goto done;
  }
  /* ids are the rowid: ascending.  Dense ids get a direct index. */
  int sorted = 1;
  for (int64_t i = 1; i < s->nstr; i++) sorted &= s->str_id[i - 1] < s->str_id[i];
  if (!sorted) {
    out = nsl_error_set(err, NSL_ERR_FORMAT, "'%s': StringIds ids are not unique and ascending", s->label);
    goto done;
  }
  if (s->nstr > 0 && s->str_id[0] >= 0 && s->str_id[s->nstr - 1] < 2 * s->nstr + 4096) {
    s->ndense = s->str_id[s->nstr - 1] + 1;
    if (!(s->dense = malloc((size_t)s->ndense * sizeof *s->dense))) goto nomem;
    for (int64_t i = 0; i < s->ndense; i++) s->dense[i] = -1;
    for (int64_t i = 0; i < s->nstr; i++) s->dense[s->str_id[i]] = (int32_t)i;
  }
  if (s->nstr > 0 && (!(s->map = malloc((size_t)s->nstr * sizeof *s->map)) ||
                      !(s->map_api = malloc((size_t)s->nstr * sizeof *s->map_api))))
    goto nomem;
  goto done;
nomem:
  out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading StringIds of '%s'", s->label);
done:
  sqlite3_finalize(st);
  if (out == NSL_OK) s->strings_state = 1;
  else nsl__nsys_strings_free(s);
  return out;
}

/* Index of string id in the local arrays, or -1. */
int64_t nsl__nsys_string_index(const nsys_src *s, int64_t id) {
  if (s->dense) return id >= 0 && id < s->ndense ? s->dense[id] : -1;
  int64_t lo = 0, hi = s->nstr - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (s->str_id[mid] == id) return mid;
    if (s->str_id[mid] < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* Makes dict the target of the local-id map for one load call (the map is
 * not kept across calls: the dictionary may be a short-lived one of a
 * parallel load, and re-interning the strings a load uses is cheap). */
void nsl__nsys_use_dict(nsys_src *s, nsl_dict *dict) {
  s->map_dict = dict;
  for (int64_t i = 0; i < s->nstr; i++) s->map[i] = s->map_api[i] = -2;
}

/* Dict id of the StringIds string at index i (interning on first use); -3
 * on out of memory. */
int32_t nsl__nsys_index_dict_id(nsys_src *s, int64_t i) {
  if (s->map[i] == -2) {
    int32_t d;
    if (nsl_dict_intern(s->map_dict, s->str_data + s->str_off[i], (size_t)s->str_len[i], &d, NULL) != NSL_OK) return -3;
    s->map[i] = d;
  }
  return s->map[i];
}

/* The same as a CUDA API name: "cudaLaunchKernel_v7000" gives
 * "cudaLaunchKernel", the rule of nsys's own reports (a "_v" six characters
 * from the end). */
int32_t nsl__nsys_index_api_id(nsys_src *s, int64_t i) {
  if (s->map_api[i] == -2) {
    const char *v = s->str_data + s->str_off[i];
    size_t len = (size_t)s->str_len[i];
    if (len >= 6 && v[len - 6] == '_' && v[len - 5] == 'v') len -= 6;
    int32_t d;
    if (nsl_dict_intern(s->map_dict, v, len, &d, NULL) != NSL_OK) return -3;
    s->map_api[i] = d;
  }
  return s->map_api[i];
}

/* Dict id of StringIds id (plain, or as an API name); -1 for unknown ids, -3
 * on out of memory. */
int32_t nsl__nsys_string_dict_id(nsys_src *s, int64_t id) {
  int64_t i = nsl__nsys_string_index(s, id);
  return i < 0 ? -1 : nsl__nsys_index_dict_id(s, i);
}

int32_t nsl__nsys_api_name_dict_id(nsys_src *s, int64_t id) {
  int64_t i = nsl__nsys_string_index(s, id);
  return i < 0 ? -1 : nsl__nsys_index_api_id(s, i);
}
