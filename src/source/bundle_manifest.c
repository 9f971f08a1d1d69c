/*
 * bundle_manifest.c -- the structure a bundle's manifest.json must have
 * (archive-format/): types, format name and version, the member list, the
 * reports entries, no duplicate paths or ranks.  The reader checks it
 * before trusting a manifest, the writer before writing one.
 */
#include "source/bundle_internal.h"

#include <stdlib.h>
#include <string.h>

static int is_sha256_hex(const char *s) {
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return s[64] == '\0';
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Checks that field key of m, when present and not null, is an array whose
 * elements all have JSON type `type`. */
static nsl_status check_array_of(const json_t *m, const char *key, json_type type, const char *what,
                                 nsl_status code, const char *prefix, nsl_error *err) {
  const json_t *a = json_object_get(m, key);
  if (a == NULL || json_is_null(a))
    return NSL_OK;
  if (!json_is_array(a))
    return nsl_error_set(err, code, "%s: manifest.json: \"%s\" is not an array", prefix, key);
  size_t i;
  const json_t *v;
  json_array_foreach(a, i, v) {
    if (json_typeof(v) != type)
      return nsl_error_set(err, code, "%s: manifest.json: \"%s\"[%zu] is not %s", prefix, key, i,
                           what);
    if (type == JSON_INTEGER && json_integer_value(v) < 0)
      return nsl_error_set(err, code, "%s: manifest.json: \"%s\"[%zu] is negative", prefix, key, i);
  }
  return NSL_OK;
}

static nsl_status check_string_field(const json_t *obj, const char *key, const char *where,
                                     nsl_status code, const char *prefix, nsl_error *err) {
  const json_t *v = json_object_get(obj, key);
  if (v != NULL && !json_is_null(v) && !json_is_string(v))
    return nsl_error_set(err, code, "%s: manifest.json: %s\"%s\" is not a string", prefix, where, key);
  return NSL_OK;
}

nsl_status nsl__manifest_check(const json_t *m, nsl_status code, const char *prefix, nsl_error *err) {
  nsl_status st = NSL_OK;
  const char **paths = NULL, **rep_members = NULL;
  int64_t *ranks = NULL;

  if (!json_is_object(m))
    return nsl_error_set(err, code, "%s: manifest.json is not a JSON object", prefix);
  const json_t *fmt = json_object_get(m, "format");
  if (!json_is_string(fmt))
    return nsl_error_set(err, code, "%s: manifest.json: no \"format\" string", prefix);
  if (strcmp(json_string_value(fmt), NSL_BUNDLE_FORMAT) != 0)
    return nsl_error_set(err, code, "%s: manifest.json: format is '%s', not '" NSL_BUNDLE_FORMAT "'",
                         prefix, json_string_value(fmt));
  const json_t *ver = json_object_get(m, "format_version");
  if (!json_is_integer(ver))
    return nsl_error_set(err, code, "%s: manifest.json: no integer \"format_version\"", prefix);
  json_int_t v = json_integer_value(ver);
  if (v < 1)
    return nsl_error_set(err, code, "%s: manifest.json: format_version %lld is not valid", prefix,
                         (long long)v);
  if (v > NSL_BUNDLE_FORMAT_VERSION)
    return nsl_error_set(err, code,
                         "%s: manifest.json: format_version %lld is newer than this nsl reads (%d); "
                         "update nsl",
                         prefix, (long long)v, NSL_BUNDLE_FORMAT_VERSION);

  static const char *const strings[] = {"creator", "nsl_version", "created", NULL};
  for (int i = 0; strings[i]; i++)
    if ((st = check_string_field(m, strings[i], "", code, prefix, err)) != NSL_OK)
      return st;
  if ((st = check_array_of(m, "command", JSON_STRING, "a string", code, prefix, err)) != NSL_OK ||
      (st = check_array_of(m, "hosts", JSON_STRING, "a string", code, prefix, err)) != NSL_OK ||
      (st = check_array_of(m, "ranks", JSON_INTEGER, "an integer", code, prefix, err)) != NSL_OK ||
      (st = check_array_of(m, "devices", JSON_OBJECT, "an object", code, prefix, err)) != NSL_OK ||
      (st = check_array_of(m, "nsys_versions", JSON_STRING, "a string", code, prefix, err)) != NSL_OK ||
      (st = check_array_of(m, "schema_versions", JSON_STRING, "a string", code, prefix, err)) !=
          NSL_OK ||
      (st = check_array_of(m, "reports", JSON_OBJECT, "an object", code, prefix, err)) != NSL_OK)
    return st;

  /* members: [{path, size, sha256}], no duplicates, safe names */
  const json_t *members = json_object_get(m, "members");
  if (!json_is_array(members))
    return nsl_error_set(err, code, "%s: manifest.json: no \"members\" array", prefix);
  size_t nm = json_array_size(members);
  paths = calloc(nm ? nm : 1, sizeof *paths);
  if (paths == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", prefix);
  size_t i;
  const json_t *e;
  json_array_foreach(members, i, e) {
    const json_t *p = json_object_get(e, "path"), *s = json_object_get(e, "size"),
                 *h = json_object_get(e, "sha256");
    if (!json_is_object(e) || !json_is_string(p)) {
      st = nsl_error_set(err, code, "%s: manifest.json: members[%zu] has no \"path\" string", prefix, i);
      goto done;
    }
    const char *path = json_string_value(p);
    const char *problem = nsl__bundle_name_problem(path);
    if (problem) {
      char shown[300];
      nsl__printable(path, shown, sizeof shown);
      st = nsl_error_set(err, code, "%s: manifest.json: member '%s' %s", prefix, shown, problem);
      goto done;
    }
    if (strcmp(path, NSL_BUNDLE_MANIFEST) == 0) {
      st = nsl_error_set(err, code, "%s: manifest.json: lists manifest.json itself", prefix);
      goto done;
    }
    if (!json_is_integer(s) || json_integer_value(s) < 0) {
      st = nsl_error_set(err, code, "%s: manifest.json: member '%s' has no valid \"size\"", prefix, path);
      goto done;
    }
    if (!json_is_string(h) || !is_sha256_hex(json_string_value(h))) {
      st = nsl_error_set(err, code,
                         "%s: manifest.json: member '%s' has no valid \"sha256\" (64 lowercase hex "
                         "digits)",
                         prefix, path);
      goto done;
    }
    paths[i] = path;
  }
  qsort(paths, nm, sizeof *paths, nsl__cmp_str_ptr);
  for (i = 1; i < nm; i++)
    if (strcmp(paths[i - 1], paths[i]) == 0) {
      st = nsl_error_set(err, code, "%s: manifest.json: member '%s' is listed twice", prefix, paths[i]);
      goto done;
    }

  /* reports: [{member, rank, host, ...}]: member listed, no report or rank twice */
  const json_t *reports = json_object_get(m, "reports");
  size_t nr = json_is_array(reports) ? json_array_size(reports) : 0;
  rep_members = calloc(nr ? nr : 1, sizeof *rep_members);
  ranks = calloc(nr ? nr : 1, sizeof *ranks);
  if (rep_members == NULL || ranks == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", prefix);
    goto done;
  }
  size_t nranks = 0;
  for (i = 0; i < nr; i++) {
    const json_t *r = json_array_get(reports, i);
    const json_t *mem = json_object_get(r, "member");
    if (!json_is_string(mem)) {
      st = nsl_error_set(err, code, "%s: manifest.json: reports[%zu] has no \"member\" string", prefix, i);
      goto done;
    }
    const char *name = json_string_value(mem);
    if (bsearch(&name, paths, nm, sizeof *paths, nsl__cmp_str_ptr) == NULL) {
      st = nsl_error_set(err, code,
                         "%s: manifest.json: reports[%zu] names member '%s', which \"members\" does "
                         "not list",
                         prefix, i, name);
      goto done;
    }
    rep_members[i] = name;
    const json_t *rank = json_object_get(r, "rank");
    if (rank != NULL && !json_is_null(rank)) {
      if (!json_is_integer(rank) || json_integer_value(rank) < 0) {
        st = nsl_error_set(err, code, "%s: manifest.json: report '%s' has a rank that is not an "
                           "integer >= 0", prefix, name);
        goto done;
      }
      ranks[nranks++] = json_integer_value(rank);
    }
    static const char *const rstrings[] = {"host", "nsys_version", "schema_version", "session_start",
                                           NULL};
    char where[64];
    snprintf(where, sizeof where, "reports[%zu].", i);
    for (int k = 0; rstrings[k]; k++)
      if ((st = check_string_field(r, rstrings[k], where, code, prefix, err)) != NSL_OK)
        goto done;
    const json_t *start = json_object_get(r, "session_start_utc_ns");
    if (start != NULL && !json_is_null(start) && !json_is_integer(start)) {
      st = nsl_error_set(err, code, "%s: manifest.json: report '%s': session_start_utc_ns is not an "
                         "integer", prefix, name);
      goto done;
    }
  }
  qsort(rep_members, nr, sizeof *rep_members, nsl__cmp_str_ptr);
  for (i = 1; i < nr; i++)
    if (strcmp(rep_members[i - 1], rep_members[i]) == 0) {
      st = nsl_error_set(err, code, "%s: manifest.json: report member '%s' appears twice in \"reports\"",
                         prefix, rep_members[i]);
      goto done;
    }
  qsort(ranks, nranks, sizeof *ranks, cmp_i64);
  for (i = 1; i < nranks; i++)
    if (ranks[i - 1] == ranks[i]) {
      st = nsl_error_set(err, code, "%s: manifest.json: rank %lld belongs to two reports", prefix,
                         (long long)ranks[i]);
      goto done;
    }
done:
  free(paths);
  free(rep_members);
  free(ranks);
  return st;
}

