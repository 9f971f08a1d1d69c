/* nsys_load.c -- the load operation of the nsys source: which mapping feeds
 * each requested column, a serial or a parallel scan (nsys_scan.c), then
 * NVTX domain names and right-sized columns. */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "core/model.h"
#include "core/nsl_internal.h"
#include "core/parallel.h"
#include "core/text.h"
#include "nsl/nsl.h"
#include "source/nsys_sqlite_internal.h"

/* Rows below which a load is one serial scan (NSL_PARALLEL_MIN_ROWS sets
 * another bound: the tests run the parallel path on small exports). */
#define PARALLEL_MIN_ROWS 262144

static int64_t parallel_min_rows(void) {
  const char *env = getenv("NSL_PARALLEL_MIN_ROWS");
  long long v = env && *env ? strtoll(env, NULL, 10) : 0;
  return v > 0 ? (int64_t)v : PARALLEL_MIN_ROWS;
}

/* The rowid spans of the source tables of m (lo[k] > hi[k]: absent or
 * empty) when a parallel scan applies: no grouping, rows enough in all, and
 * rowids dense enough to size the columns by.  Returns the total span, 0 when
 * the scan is serial. */
static int64_t parallel_spans(nsys_src *s, const table_map *m, int64_t *lo, int64_t *hi) {
  if (m->distinct || m->group_by) return 0;
  int64_t total = 0;
  for (int k = 0; k < 4; k++) {
    lo[k] = 0;
    hi[k] = -1;
    if (!m->sources[k] || !nsl__nsys_find_table(s, m->sources[k])) continue;
    int64_t a = 0, z = -1;
    int ra = nsl__nsys_rowid_end(s, m->sources[k], "min", &a), rz = nsl__nsys_rowid_end(s, m->sources[k], "max", &z);
    if (ra < 0 || rz < 0) return 0;
    if (ra > 0 && rz > 0) {
      lo[k] = a;
      hi[k] = z;
    }
    if (hi[k] < lo[k]) continue;
    if (hi[k] - lo[k] >= INT64_MAX / 4 || total > INT64_MAX / 4) return 0;
    total += hi[k] - lo[k] + 1;
  }
  return total >= parallel_min_rows() && total <= s->db_bytes / 2 + 16 ? total : 0;
}

nsl_status nsl__nsys_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                          nsl_dict *dict, int64_t time_offset, nsl_column **out, nsl_error *err) {
  nsys_src *s = p;
  const table_map *m = NULL;
  const nsl_model_table *mt = nsl__model_table(name);
  nsl_status rc = nsl__nsys_pick_map(s, name, &m, err);
  if (rc != NSL_OK) return rc;
  if (!m) return nsl_error_set(err, NSL_ERR_NOTFOUND, "'%s' has no %s", s->label, name);
  out_col *cols = calloc((size_t)(n > 0 ? n : 1), sizeof *cols);
  nsl__text b = {0};
  enum_map dom = {0};
  scan_part *parts = NULL;
  int nparts = 0;
  int nvtx_domains = 0, need_strings = 0;
  int64_t rows = 0;
  for (int j = 0; j < n; j++) out[j] = NULL;
  if (!cols) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");

  /* Which mapping feeds each requested column. */
  int slot = 0, dslot = -1;
  for (int j = 0; j < n; j++) {
    for (const col_map *cm = m->cols; cm->model; cm++)
      if (strcmp(cm->model, colnames[j]) == 0) cols[j].map = cm;
    const nsl_model_column *mc = mt ? nsl__model_column(mt, colnames[j]) : NULL;
    cols[j].type = types[j];
    cols[j].is_time = mc && mc->is_time;
    cols[j].slot = slot;
    for (int i = 0; i < j && !cols[j].shared; i++)
      if (!cols[i].shared && nsl__nsys_same_source(cols[i].map, cols[j].map)) {
        cols[j].slot = cols[i].slot;
        cols[j].shared = 1;
      }
    if (!cols[j].shared) slot += nsl__nsys_slots_of(cols[j].map);
    if (cols[j].map) {
      map_kind k = cols[j].map->kind;
      if (k == M_NVTX_DOMAIN) {
        nvtx_domains = 1;
        dslot = cols[j].slot;
      }
      if (k == M_STR || k == M_API_NAME || k == M_NVTX_TEXT) need_strings = 1;
      if (k == M_ENUM && (rc = nsl__nsys_build_enum(s, cols[j].map->en, dict, &cols[j].en, err)) != NSL_OK) goto done;
    }
  }
  if (nvtx_domains) need_strings = 1;
  if (need_strings) {
    if ((rc = nsl__nsys_load_strings(s, err)) != NSL_OK) goto done;
    nsl__nsys_use_dict(s, dict);
  }
  scan sc = {s, m, name, cols, n, nvtx_domains, dslot, -1, -1, -1, nsl__nsys_types_in_c(s, m), time_offset, NULL, 0,
             out, dict, NULL, 0};
  /* the extras, unless an output column reads them already */
  int extras = 0;
  for (int j = 0; j < n; j++) {
    if (cols[j].map && cols[j].map->kind == M_NVTX_KIND) sc.type_slot = cols[j].slot;
    if (cols[j].map && cols[j].map->kind == M_NVTX_TEXT) sc.text_slot = cols[j].slot;
    if (cols[j].map && (cols[j].map->kind == M_NVTX_TEXT || cols[j].map->kind == M_TEXT) && sc.text_col < 0)
      sc.text_col = j;
  }
  if ((nvtx_domains || sc.types_in_c) && sc.type_slot < 0) {
    extras |= EXTRA_TYPE;
    sc.type_slot = slot++;
  }
  if (nvtx_domains && sc.text_slot < 0) {
    extras |= EXTRA_TEXT;
    sc.text_slot = slot;
    slot += 2;
  }

  /* A large table is scanned in rowid ranges on several connections at once. */
  int64_t lo[4], hi[4];
  int threads = nsl__thread_count(0);
  int64_t total = threads > 1 ? parallel_spans(s, m, lo, hi) : 0;
  int parallel = total > 0;
  nsl__progress_expect(total);   /* rowid spans: about the rows to come, for a progress line's time left */
  if (!s->uri) {   /* an in-memory image: the parts open it again, read-only */
    sc.image = s->image;
    sc.image_size = s->db_bytes;
    parallel = parallel && sc.image != NULL;
  }
  rc = nsl__nsys_build_statement(s, m, cols, n, nvtx_domains, sc.types_in_c, extras, &b, &sc.ncols, err);
  if (rc != NSL_OK) goto done;
  sc.sql = b.s;

  int64_t cap = parallel ? total : nsl__nsys_estimate_rows(s, m);
  for (int j = 0; j < n; j++)
    if (!(out[j] = nsl_column_new(types[j], cap, dict))) goto nomem;

  if (parallel) {
    /* each source table in `threads` rowid ranges; rows of source k go after
     * those of the sources before it, a range's at its offset in the span */
    if (!(parts = calloc((size_t)threads * 4, sizeof *parts))) goto nomem;
    int64_t base = 0;
    for (int k = 0; k < 4; k++) {
      if (hi[k] < lo[k]) continue;
      int64_t span = hi[k] - lo[k] + 1;
      int chunks = span >= threads ? threads : 1;
      for (int i = 0; i < chunks; i++) {
        scan_part *q = &parts[nparts++];
        q->sc = &sc;
        q->deferred = 1;
        q->lo = lo[k] + span * i / chunks;
        q->hi = lo[k] + span * (i + 1) / chunks - 1;
        q->row0 = base + (q->lo - lo[k]);
        q->cap = q->hi - q->lo + 1;
        nsl__text qb = {0};
        rc = nsl__nsys_build_select(s, m, k, cols, n, nvtx_domains, sc.types_in_c, extras, 1, &qb, &sc.ncols, err);
        q->sql = qb.s;
        if (rc != NSL_OK) goto done;
        if (qb.oom) goto nomem;
        if (!(q->dict = nsl_dict_new()) || nsl__nsys_part_constants(q) < 0) goto nomem;
        if (!(q->enum_ids = calloc((size_t)n, sizeof *q->enum_ids))) goto nomem;
        for (int j = 0; j < n; j++) {
          if (cols[j].en.n == 0) continue;
          if (!(q->enum_ids[j] = malloc((size_t)cols[j].en.n * sizeof **q->enum_ids))) goto nomem;
          for (int e = 0; e < cols[j].en.n; e++) q->enum_ids[j][e] = -2;
        }
      }
      base += span;
    }
    nsl__run_parallel(nparts, threads, nsl__nsys_part_job, parts);
    int fallback = 0;
    for (int i = 0; i < nparts; i++) fallback |= parts[i].fallback;
    for (int i = 0; i < nparts && !fallback; i++)
      if (parts[i].rc != NSL_OK) {
        rc = nsl_error_set(err, parts[i].rc, "%s", parts[i].err.msg);
        goto done;
      }
    for (int i = 0; i < nparts && !fallback; i++) {
      if ((rc = nsl__nsys_merge_part(&parts[i], rows, &dom, err)) != NSL_OK) goto done;
      rows += parts[i].rows;
    }
    for (int i = 0; i < nparts; i++) nsl__nsys_part_free(&parts[i]);
    if (fallback) {   /* start again: one serial scan */
      rows = 0;
      dom.n = 0;
      parallel = 0;
    }
  }
  if (!parallel) {
    scan_part one = {0};
    one.sc = &sc;
    one.dict = dict;
    one.lo = 0;
    one.hi = -1;
    one.cap = cap;   /* every column holds at least cap rows */
    if (nsl__nsys_part_constants(&one) < 0) goto nomem;
    one.dom = dom;
    rc = nsl__nsys_scan_rows(&one);
    dom = one.dom;
    rows = one.rows;
    if (rc != NSL_OK) {
      rc = nsl_error_set(err, rc, "%s", one.err.msg);
      goto done;
    }
  }
  /* NVTX domains: ids -> names (default domain 0 and unnamed ids: NULL). */
  for (int j = 0; j < n; j++) {
    if (!cols[j].map || cols[j].map->kind != M_NVTX_DOMAIN || out[j]->type != NSL_STR) continue;
    int32_t *v = nsl_i32(out[j]);
    for (int64_t r = 0; r < rows; r++) {
      int32_t did = -1;
      for (int d = 0; d < dom.n && v[r] != NSL_NULL_I32; d++)
        if (dom.ids[d] == v[r]) did = dom.dict_ids[d];
      v[r] = did;
    }
  }
  /* A time column every source table declares NOT NULL holds no NULL in a
   * sound export; one that does comes from a damaged database (SQLite may
   * read a damaged index, a covering one too, as NULLs without an error), and
   * analyses of events without a time would go wrong, so the load fails. */
  for (int j = 0; j < n; j++) {
    const col_map *cm = cols[j].map;
    if (!cm || !cols[j].is_time || cm->kind != M_INT || !cm->src[0] || out[j]->type != NSL_I64) continue;
    const char *tname = NULL;
    int declared = 0;
    for (int k = 0; k < 4 && m->sources[k]; k++) {
      table_info *t = nsl__nsys_find_table(s, m->sources[k]);
      if (!t) continue;
      declared = nsl__nsys_column_notnull(t, cm->src[0]);
      if (!declared) break;
      if (!tname) tname = m->sources[k];
    }
    if (!declared) continue;
    const int64_t *v = nsl_i64(out[j]);
    for (int64_t r = 0; r < rows; r++)
      if (v[r] == NSL_NULL_I64) {
        rc = nsl_error_set(err, NSL_ERR_FORMAT,
                           "'%s' is damaged: %s.%s holds NULL though the export declares it NOT NULL (sqlite3's "
                           "PRAGMA quick_check tells where)",
                           s->label, tname, cm->src[0]);
        goto done;
      }
  }
  /* Right-size columns that were sized far above the row count. */
  for (int j = 0; j < n; j++) {
    nsl_column *c = out[j];
    if (c->cap - rows > 4096 && rows < c->cap / 4 * 3) {
      nsl_column *fit = nsl_column_new(c->type, rows, dict);
      if (!fit) goto nomem;
      memcpy(fit->data, c->data, (size_t)rows * nsl_type_size(c->type));
      nsl_column_release(c);
      out[j] = fit;
    } else {
      nsl_column_set_len(c, rows);
    }
  }
  rc = NSL_OK;
  goto done;
nomem:
  rc = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory loading %s of '%s'", name, s->label);
done:
  if (rc != NSL_OK)
    for (int j = 0; j < n; j++) {
      nsl_column_release(out[j]);
      out[j] = NULL;
    }
  s->map_dict = NULL;
  if (parts)
    for (int i = 0; i < nparts; i++) nsl__nsys_part_free(&parts[i]);
  free(parts);
  for (int j = 0; j < n; j++) nsl__nsys_enum_map_free(&cols[j].en);
  free(cols);
  free(b.s);
  nsl__nsys_enum_map_free(&dom);
  return rc;
}
