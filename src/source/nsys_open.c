/* nsys_open.c -- opening an nsys SQLite export: from a file (read-only,
 * immutable) or from an image in memory (a bundle member); the header
 * checked first, then the table list and the report's metadata. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "nsl/nsl.h"
#include "source/nsys_schema.h"
#include "source/nsys_sqlite.h"
#include "source/nsys_sqlite_internal.h"

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks the 100-byte SQLite header of an input of `size` bytes: the magic,
 * and that the pages the header promises are all there. */
static nsl_status check_header(const char *label, const unsigned char *h, size_t hlen, int64_t size,
                               nsl_error *err) {
  static const char magic[] = "SQLite format 3";
  if (size == 0)
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is empty, not an nsys SQLite export", label);
  if (hlen < 100 || memcmp(h, magic, sizeof magic) != 0)
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is not an nsys SQLite export: file is not a database", label);
  uint32_t page = (uint32_t)h[16] << 8 | h[17];
  if (page == 1) page = 65536;
  if (page < 512 || (page & (page - 1)))
    return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is corrupt: bad SQLite page size %u", label, page);
  uint32_t npages = be32(h + 28);
  /* the in-header page count is valid when the change counter matches */
  if (npages > 0 && be32(h + 24) == be32(h + 92)) {
    int64_t want = (int64_t)npages * page;
    if (want > size)
      return nsl_error_set(err, NSL_ERR_FORMAT,
                           "'%s' is truncated: its SQLite header promises %" PRId64 " bytes, it has %" PRId64, label,
                           want, size);
  }
  return NSL_OK;
}

/* Reads a text value of a (name, value) metadata table. */
/* The value of key in metadata table sql (a SELECT with ?1 for the key) as
 * a new string, or NULL when absent (or out of memory). */
static char *meta_text(nsys_src *s, const char *sql, const char *key) {
  sqlite3_stmt *st = NULL;
  char *v = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      v = strdup((const char *)sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  return v;
}

/* The same into dst (cap bytes, cut), for the short version fields. */
static void meta_value(nsys_src *s, const char *sql, const char *key, char *dst, size_t cap) {
  char *v = meta_text(s, sql, key);
  if (v) snprintf(dst, cap, "%s", v);
  free(v);
}

static int64_t meta_int(nsys_src *s, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t v = 0;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_type(st, 0) == SQLITE_INTEGER)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* The nsys version in an install path such as ".../Nsight-Systems/2022.2.1/
 * target-linux-x64" or "NsightSystems-cli-2024.6.2": the first YYYY.N[.N...]. */
static void version_from_path(const char *path, char *dst, size_t cap) {
  for (const char *p = path; *p; p++) {
    if (!(p[0] == '2' && p[1] == '0' && isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) &&
          p[4] == '.' && isdigit((unsigned char)p[5])))
      continue;
    if (p > path && (isdigit((unsigned char)p[-1]) || p[-1] == '.')) continue;
    size_t n = 0;
    while (isdigit((unsigned char)p[n]) || (p[n] == '.' && isdigit((unsigned char)p[n + 1]))) n++;
    snprintf(dst, cap, "%.*s", (int)n, p);
    return;
  }
}

int nsl__nsys_name_and_rank(const char *label, char **name, int64_t *rank) {
  const char *base = strrchr(label, '/');
  base = base ? base + 1 : label;
  const char *dot = strrchr(base, '.');
  size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  /* "x.nsys-rep.sqlite" style double extensions keep their inner part */
  if (!(*name = strndup(base, n))) return -1;
  *rank = -1;
  for (const char *p = *name; *p; p++) {
    if (strncasecmp(p, "rank", 4) != 0 || !isdigit((unsigned char)p[4])) continue;
    if (p > *name && isalpha((unsigned char)p[-1])) continue;   /* "frank3" is not a rank */
    int64_t r = 0;
    const char *q = p + 4;
    while (isdigit((unsigned char)*q) && r < 100000000) r = r * 10 + (*q++ - '0');
    *rank = r;
  }
  return 0;
}

/* Reads the table list, checks that this is an nsys export, and fills info. */
static nsl_status finish_open(nsys_src *s, nsl_report_info *info, nsl_error *err) {
  sqlite3_exec(s->db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);   /* no temp files either */
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')", -1, &st,
                              NULL);
  if (rc != SQLITE_OK) {
    if ((rc & 0xff) == SQLITE_NOTADB)
      return nsl_error_set(err, NSL_ERR_FORMAT, "'%s' is not an nsys SQLite export: file is not a database",
                           s->label);
    return nsl__nsys_sql_error(s, rc, "the table list", err);
  }
  nsl_status out = NSL_OK;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (!name) continue;
    table_info *t = realloc(s->tables, (size_t)(s->ntables + 1) * sizeof *t);
    if (!t) {
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", s->label);
      break;
    }
    s->tables = t;
    memset(&s->tables[s->ntables], 0, sizeof *t);
    if (!(s->tables[s->ntables].name = strdup(name))) {
      out = nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", s->label);
      break;
    }
    s->ntables++;
  }
  if (out == NSL_OK && rc != SQLITE_DONE) out = nsl__nsys_sql_error(s, rc, "the table list", err);
  sqlite3_finalize(st);
  if (out != NSL_OK) return out;

  int nsys = nsl__nsys_find_table(s, "StringIds") != NULL;
  for (int i = 0; !nsys && nsl__nsys_markers[i]; i++) nsys = nsl__nsys_find_table(s, nsl__nsys_markers[i]) != NULL;
  if (!nsys)
    return nsl_error_set(err, NSL_ERR_FORMAT,
                         "'%s' is an SQLite database but not an nsys export (no StringIds and no nsys tables)",
                         s->label);

  /* Metadata: export tables (2022.1-2023.1: EXPORT_META_DATA; 2023.3+: META_DATA_EXPORT),
   * then the target's environment for older files. */
  const char *meta = nsl__nsys_find_table(s, "META_DATA_EXPORT")
                         ? "SELECT value FROM META_DATA_EXPORT WHERE name = ?1"
                     : nsl__nsys_find_table(s, "EXPORT_META_DATA") ? "SELECT value FROM EXPORT_META_DATA WHERE name = ?1"
                                                                   : NULL;
  const char *env = nsl__nsys_find_table(s, "TARGET_INFO_SYSTEM_ENV")
                        ? "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = ?1"
                        : NULL;
  if (meta) {
    meta_value(s, meta, "EXPORT_PRODUCT_VERSION", info->nsys_version, sizeof info->nsys_version);
    meta_value(s, meta, "EXPORT_SCHEMA_VERSION", info->schema_version, sizeof info->schema_version);
  }
  if (env && !info->nsys_version[0]) {
    char *dir = meta_text(s, env, "TargetInstallDir");
    if (dir) version_from_path(dir, info->nsys_version, sizeof info->nsys_version);
    free(dir);
  }
  /* The profiled host (where the ranks ran) rather than where the export ran. */
  if (env) s->host = meta_text(s, env, "Hostname");
  if (meta && (!s->host || !s->host[0])) {
    free(s->host);
    s->host = meta_text(s, meta, "EXPORT_HOST");
  }
  info->host = s->host ? s->host : "";
  if (nsl__nsys_find_table(s, "TARGET_INFO_SESSION_START_TIME"))
    info->start_utc = meta_int(s, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1");
  if (nsl__nsys_find_table(s, "ANALYSIS_DETAILS"))
    info->duration = meta_int(s, "SELECT duration FROM ANALYSIS_DETAILS LIMIT 1");
  if (info->start_utc < 0) info->start_utc = 0;
  if (info->duration < 0) info->duration = 0;
  return NSL_OK;
}

/* The end of both opens: rc is how opening the database went; finish_open
 * when it went well; on any failure the source is closed, else it is *out. */
static nsl_status open_done(nsys_src *s, nsl_status rc, void **out, nsl_report_info *info, nsl_error *err) {
  if (rc == NSL_OK) rc = finish_open(s, info, err);
  if (rc != NSL_OK) {
    nsl__nsys_close(s);
    return rc;
  }
  *out = s;
  return NSL_OK;
}

static nsys_src *new_src(const char *label, nsl_report_info *info) {
  nsys_src *s = calloc(1, sizeof *s);
  if (!s || !(s->label = strdup(label))) {
    free(s);
    return NULL;
  }
  memset(info, 0, sizeof *info);
  info->path = s->label;   /* valid while the source is open, as name and host */
  info->host = "";
  if (nsl__nsys_name_and_rank(label, &s->name, &info->rank) != 0) {
    free(s->label);
    free(s);
    return NULL;
  }
  info->name = s->name;
  info->first_ts = info->last_ts = NSL_NULL_I64;
  return s;
}

/* "file:" URI of path with the characters a URI gives meaning to escaped. */
static char *file_uri(const char *path) {
  size_t n = strlen(path);
  char *u = malloc(3 * n + 32);
  if (!u) return NULL;
  char *o = u;
  o += sprintf(o, path[0] == '/' ? "file://" : "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if (*p == '%' || *p == '?' || *p == '#' || *p <= 0x20 || *p >= 0x7f) o += sprintf(o, "%%%02X", *p);
    else *o++ = (char)*p;
  }
  strcpy(o, "?immutable=1");
  return u;
}

nsl_status nsl__nsys_open_file(const char *path, void **out, nsl_report_info *info, nsl_error *err) {
  return nsl__nsys_open_export(path, NULL, 0, out, info, err);
}

nsl_status nsl__nsys_open_export(const char *path, const void *head, size_t nhead, void **out, nsl_report_info *info,
                                 nsl_error *err) {
  *out = NULL;
  struct stat sb;
  if (stat(path, &sb) != 0)
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode))
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': it is a directory, not an nsys SQLite export", path);
  if (!S_ISREG(sb.st_mode))
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': not a regular file", path);
  unsigned char h[100];
  size_t hlen = 0;
  if (head) {   /* the caller read the file's first bytes already */
    hlen = nhead < sizeof h ? nhead : sizeof h;
    memcpy(h, head, hlen);
  } else {
    FILE *f = fopen(path, "rb");
    if (!f) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    hlen = fread(h, 1, sizeof h, f);
    fclose(f);
  }
  nsl_status rc = check_header(path, h, hlen, (int64_t)sb.st_size, err);
  if (rc != NSL_OK) return rc;

  nsys_src *s = new_src(path, info);
  char *uri = file_uri(path);
  if (!s || !uri) {
    free(uri);
    nsl__nsys_close(s);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", path);
  }
  s->db_bytes = (int64_t)sb.st_size;
  s->uri = uri;
  /* no mmap: SQLite's own page cache keeps the resident set small, and on
   * large exports the scans were no faster with the file mapped */
  int src = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
  rc = src == SQLITE_OK ? NSL_OK
                        : nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path,
                                        s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
  return open_done(s, rc, out, info, err);
}

nsl_status nsl__nsys_open_image(const char *label, const void *data, size_t size, void **out, nsl_report_info *info,
                               nsl_error *err) {
  *out = NULL;
  nsl_status rc = check_header(label, data, size < 100 ? size : 100, (int64_t)size, err);
  if (rc != NSL_OK) return rc;
  void *copy = malloc(size ? size : 1);
  if (!copy) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", label);
  memcpy(copy, data, size);
  return nsl__nsys_adopt_image(label, copy, size, out, info, err);   /* frees the copy when it fails */
}

nsl_status nsl__nsys_adopt_image(const char *label, void *data, size_t size, void **out, nsl_report_info *info,
                                nsl_error *err) {
  *out = NULL;
  nsl_status rc = check_header(label, data, size < 100 ? size : 100, (int64_t)size, err);
  if (rc != NSL_OK) {
    free(data);
    return rc;
  }
  nsys_src *s = new_src(label, info);
  if (!s) {
    free(data);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", label);
  }
  s->image = data;   /* freed by nsl__nsys_close, after the database */
  s->db_bytes = (int64_t)size;
  unsigned char *h = data;
  /* A WAL-mode header (file format versions 2): an image has no WAL beside
   * it and an in-memory database cannot use one; read it as rollback mode. */
  if (h[18] == 2 && h[19] == 2) h[18] = h[19] = 1;
  int src = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
  /* no FREEONCLOSE: SQLite only borrows the buffer, read-only and never resized */
  if (src == SQLITE_OK)
    src = sqlite3_deserialize(s->db, "main", data, (sqlite3_int64)size, (sqlite3_int64)size,
                              SQLITE_DESERIALIZE_READONLY);
  rc = src == SQLITE_OK      ? NSL_OK
       : src == SQLITE_NOMEM ? nsl_error_set(err, NSL_ERR_NOMEM, "out of memory opening '%s'", label)
                             : nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': %s", label, sqlite3_errstr(src));
  return open_done(s, rc, out, info, err);
}
