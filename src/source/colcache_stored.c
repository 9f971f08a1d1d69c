/*
 * colcache_stored.c -- columns stored in bundles (nsl bundle --columns):
 * their identity (the report member's name and sha256, whatever file the
 * bundle is), written into a bundle, found in one, and a bundle report
 * opened from them without reading its export.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/model.h"
#include "core/nsl_internal.h"
#include "source/bundle_internal.h"
#include "source/colcache_internal.h"
#include "source/nsys_sqlite.h"

/* A report's metadata as its export gives it (the info file of stored
 * columns), so that a bundle report opens without its export. */
typedef struct stored_info {
  char host[256], nsys_version[64], schema_version[32];
  int64_t start_utc, duration;
} stored_info;

/* See colcache_internal.h.  A host, version or schema version too long for
 * its field writes no file: the report is then always opened from its
 * export, which gives them whole. */
void nsl__cache_write_info(nsl__cache_src *c, const nsl_report_info *info) {
  stored_info si;
  memset(&si, 0, sizeof si);
  const char *host = info->host ? info->host : "";
  if (strlen(host) >= sizeof si.host || strlen(info->nsys_version) >= sizeof si.nsys_version ||
      strlen(info->schema_version) >= sizeof si.schema_version)
    return;
  snprintf(si.host, sizeof si.host, "%s", host);
  snprintf(si.nsys_version, sizeof si.nsys_version, "%s", info->nsys_version);
  snprintf(si.schema_version, sizeof si.schema_version, "%s", info->schema_version);
  si.start_utc = info->start_utc;
  si.duration = info->duration;
  nsl__cache_head h;
  nsl__cache_head_init(&h, c, NSL__CACHE_KIND_INFO, "", NULL);
  h.data_off = h.dict_off = NSL__CACHE_HEAD_BYTES;
  h.dict_bytes = sizeof si;
  h.data_hash = nsl__cache_hash64(&si, 0, 3);
  h.dict_hash = nsl__cache_hash64(&si, sizeof si, 4);
  const void *parts[] = {&si};
  size_t lens[] = {sizeof si};
  nsl__cache_publish(c, "info", &h, parts, lens, 1);
}

/* See colcache_internal.h. */
int nsl__cache_read_info(const nsl__cache_src *c, nsl_report_info *info, char *host) {
  const nsl__cache_head *h;
  size_t size;
  nsl__mapping *map = nsl__cache_map_file(c, "info", NSL__CACHE_KIND_INFO, "", NULL, &h, &size);
  if (!map || h->dict_bytes != sizeof(stored_info) || h->dict_off % 8 != 0) {
    nsl__mapping_release(map);
    return 0;
  }
  stored_info si;
  memcpy(&si, (const char *)h + h->dict_off, sizeof si);
  nsl__mapping_release(map);
  si.host[sizeof si.host - 1] = si.nsys_version[sizeof si.nsys_version - 1] = si.schema_version[sizeof si.schema_version - 1] = 0;
  memcpy(host, si.host, sizeof si.host);
  info->host = host;
  snprintf(info->nsys_version, sizeof info->nsys_version, "%s", si.nsys_version);
  snprintf(info->schema_version, sizeof info->schema_version, "%s", si.schema_version);
  info->start_utc = si.start_utc > 0 ? si.start_utc : 0;
  info->duration = si.duration > 0 ? si.duration : 0;
  info->first_ts = info->last_ts = NSL_NULL_I64;
  return 1;
}

/* The identity of columns stored in a bundle: the report member's name and
 * sha256 (from the manifest), whatever file the bundle is. */
uint64_t nsl__cache_embedded_ident(const char *member, const char *sha) {
  uint64_t h = nsl__cache_hash64("nsl bundle columns", 18, NSL_CACHE_FORMAT);
  h = nsl__cache_hash64(nsl__loader_id, strlen(nsl__loader_id), h);   /* stored by this very build of nsl */
  h = nsl__cache_hash64(member, strlen(member), h);
  return nsl__cache_hash64(sha, strlen(sha), h);
}

int nsl__cache_stored_rename(void *head, size_t n, const char *old_member, const char *new_member, const char *sha) {
  nsl__cache_head h;
  if (n < NSL__CACHE_HEAD_BYTES || !old_member || !new_member || !sha) return -1;
  memcpy(&h, head, NSL__CACHE_HEAD_BYTES);
  if (memcmp(h.magic, NSL__CACHE_MAGIC, 8) != 0 || h.version != NSL_CACHE_FORMAT || h.bom != NSL__CACHE_BOM ||
      h.head_hash != nsl__cache_hash64(&h, offsetof(nsl__cache_head, head_hash), 0) ||
      h.ident != nsl__cache_embedded_ident(old_member, sha))
    return -1;
  h.ident = nsl__cache_embedded_ident(new_member, sha);
  h.head_hash = nsl__cache_hash64(&h, offsetof(nsl__cache_head, head_hash), 0);
  memcpy(head, &h, NSL__CACHE_HEAD_BYTES);
  return 0;
}

/* Finds the stored column files of report `member` in bundle b (its
 * central directory as the bundle parsed it, its file as the bundle holds
 * it open): members columns/<member>/<file>, stored, unencrypted, their
 * data inside the archive before the central directory.  Anything else is
 * not used.  c keeps a reference to b when it found any. */
void nsl__cache_find_embedded(nsl__cache_src *c, nsl_bundle *b, const char *member) {
  const nsl__zip_dir *d = nsl__bundle_zip_dir(b);
  int fd = nsl__bundle_fd(b);
  if (fd < 0) return;
  size_t pl = strlen(member) + 10;
  char *prefix = malloc(pl);
  if (prefix) snprintf(prefix, pl, "columns/%s/", member);
  for (size_t i = 0; prefix && i < d->n; i++) {
    const nsl__zip_entry *z = &d->e[i];
    unsigned char lh[30];
    if (strncmp(z->name, prefix, pl - 1) != 0 || z->is_dir || z->method != 0 || (z->flags & 1) || z->csize != z->usize ||
        pread(fd, lh, 30, (off_t)z->offset) != 30 || memcmp(lh, "PK\3\4", 4) != 0)
      continue;
    uint64_t data = z->offset + 30 + (lh[26] | lh[27] << 8) + (lh[28] | lh[29] << 8);
    if (data > d->cd_offset || z->usize > d->cd_offset - data) continue;
    nsl__cache_emb *g = realloc(c->emb, (c->nemb + 1) * sizeof *g);
    if (!g) break;
    c->emb = g;
    if (!(g[c->nemb].name = strdup(z->name + pl - 1))) break;
    g[c->nemb].off = data;
    g[c->nemb].size = z->usize;
    c->nemb++;
  }
  free(prefix);
  if (c->nemb == 0) return;
  qsort(c->emb, c->nemb, sizeof *c->emb, nsl__cache_emb_cmp);
  c->zip = nsl__bundle_retain(b);
}

/* ---- nsl bundle --columns ---- */

nsl_status nsl_bundle_writer_add_columns(nsl_bundle_writer *w, const char *member, const char *export_path, nsl_error *err) {
  const char *sha = nsl__bundle_writer_sha256(w, member);
  if (!sha) return nsl_error_set(err, NSL_ERR_ARG, "cannot store the columns of '%s': no member %s yet", export_path, member);
  void *src = NULL;
  nsl_report_info info;
  nsl_status rc = nsl__nsys_open_file(export_path, &src, &info, err);
  if (rc != NSL_OK) return rc;
  const nsl_source_ops *ops = &nsl__nsys_source_ops;
  nsl__cache_src c;
  memset(&c, 0, sizeof c);
  c.in = ops;
  c.src = src;
  c.label = (char *)export_path;
  c.ident = nsl__cache_embedded_ident(member, sha);
  c.bw = w;
  c.bmember = member;
  c.bw_err = err;
  const char *const *tables = nsl_model_tables();
  int ntables = 0;
  while (tables[ntables]) ntables++;
  nsl__progress_begin("storing columns", "tables", ntables);
  for (int ti = 0; rc == NSL_OK && c.bw_rc == NSL_OK && tables[ti]; ti++) {
    const char *name = tables[ti];
    const nsl_model_table *mt = nsl__model_table(name);
    nsl_table *probe = nsl_table_new();
    nsl_dict *dict = nsl_dict_new();
    nsl__cache_meta m;
    memset(&m, 0, sizeof m);
    m.known = 1;
    m.rows = -1;
    if (!mt || !probe || !dict) rc = mt ? nsl_error_set(err, NSL_ERR_NOMEM, "out of memory") : NSL_OK;
    else {
      nsl_status d = ops->describe(src, name, probe, err);
      if (d != NSL_OK && d != NSL_ERR_NOTFOUND) rc = d;
      m.found = d == NSL_OK;
    }
    int ncols = 0;
    const char *names[128];
    nsl_type types[128];
    if (rc == NSL_OK && mt && m.found) {
      for (int k = 0; k < nsl_table_ncols(probe) && m.nextra < 32; k++) {
        snprintf(m.names[m.nextra], sizeof m.names[0], "%s", nsl_table_colname(probe, k));
        m.types[m.nextra++] = nsl_table_coltype(probe, k);
      }
      for (const nsl_model_column *mc = mt->cols; mc->name && ncols < 96; mc++)
        if (strcmp(mc->name, "report") != 0 && strcmp(mc->name, "dur") != 0) {
          names[ncols] = mc->name;
          types[ncols++] = mc->type;
        }
      for (int k = 0; k < m.nextra; k++) {
        int dup = 0;
        for (int j = 0; j < ncols; j++) dup |= strcmp(names[j], m.names[k]) == 0;
        if (!dup) {
          names[ncols] = m.names[k];
          types[ncols++] = m.types[k];
        }
      }
      nsl_column *out[128] = {0};
      nsl_status l = ops->load(src, name, names, types, ncols, dict, 0, out, err);
      if (l == NSL_OK) {
        m.rows = ncols > 0 ? out[0]->len : -1;
        for (int k = 0; k < ncols; k++) nsl__cache_write_column(&c, name, names[k], out[k]);
      } else if (l == NSL_ERR_NOTFOUND) m.found = 0;
      else rc = l;
      for (int k = 0; k < ncols; k++) nsl_column_release(out[k]);
    }
    if (rc == NSL_OK && mt) {
      nsl_error_clear(err);
      nsl__cache_write_meta(&c, name, &m);
    }
    nsl_table_release(probe);
    nsl_dict_release(dict);
    nsl__progress_add(1);
  }
  if (rc == NSL_OK) nsl__cache_write_info(&c, &info);   /* the bundle opens without decompressing the export */
  nsl__progress_end();
  ops->close(src);
  return rc != NSL_OK ? rc : c.bw_rc;
}

/* ---- bundle reports opened from their stored columns ---- */

int nsl__cache_add_stored_report(nsl_trace *tr, nsl_bundle *b, const char *member, nsl_status *st,
                                 nsl_error *err) {
  nsl__file_id id;
  const nsl_bundle_member *bm = nsl_bundle_find(b, member);
  char info_name[4200];
  if (!bm || !bm->sha256 || !bm->sha256[0] || !nsl__bundle_file_id(b, &id) ||
      snprintf(info_name, sizeof info_name, "columns/%s/info", member) >= (int)sizeof info_name ||
      !nsl_bundle_find(b, info_name))
    return 0;
  nsl__cache_src *c = calloc(1, sizeof *c);
  size_t ln = strlen(nsl_bundle_path(b)) + strlen(member) + 2;
  if (!c) return 0;
  c->emb_ident = nsl__cache_embedded_ident(member, bm->sha256);
  if (!(c->label = malloc(ln)) || !(c->lazy_member = strdup(member))) {
    nsl__cache_free(c);
    return 0;
  }
  snprintf(c->label, ln, "%s:%s", nsl_bundle_path(b), member);
  nsl__cache_find_embedded(c, b, member);   /* c keeps b: the export is read from it when needed */
  nsl_report_info info;
  memset(&info, 0, sizeof info);
  char host[256];
  if (!c->nemb || !nsl__cache_read_info(c, &info, host)) {
    nsl__cache_free(c);
    return 0;   /* open it from the export, as any report */
  }
  info.path = c->label;
  char *name = NULL;
  if (nsl__nsys_name_and_rank(c->label, &name, &info.rank) != 0) {
    nsl__cache_free(c);
    return 0;
  }
  info.name = name;   /* the trace keeps its own copies of name and host */
  nsl_bundle_fill_report_info(b, member, &info);
  *st = nsl__cache_add_unopened(tr, c, &info, err);
  free(name);
  return 1;
}
