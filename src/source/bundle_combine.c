/*
 * bundle_combine.c -- merging per-rank bundles into one (`nsl combine`).
 *
 * Everything that can be checked from the manifests (commands, nsys
 * releases, ranks, the output not being an input) is checked before the
 * output is created.  Members are then streamed from each input into one
 * writer: same name and same sha256 is stored once, a name clash with other
 * content is renamed, and every byte copied is verified against its input's
 * manifest on the way.  Stored column members (nsl bundle --columns) are
 * written again aligned for their new place, and follow their report when
 * it is renamed.
 */
#include "source/bundle_internal.h"
#include "source/colcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct input {
  const char *path;
  nsl_bundle *b;
  const json_t *m;         /* manifest, owned by b */
  json_t *renames;         /* old member name -> new name, for this input */
} input;

void nsl_combine_options_init(nsl_combine_options *o) {
  memset(o, 0, sizeof *o);
  nsl_bundle_options_init(&o->read);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* "python train.py --x" for a command array, cut to fit out. */
static void command_text(const json_t *cmd, char *out, size_t cap) {
  size_t i, len = 0;
  const json_t *v;
  out[0] = '\0';
  json_array_foreach(cmd, i, v) {
    int n = snprintf(out + len, cap - len, "%s%s", i ? " " : "", json_string_value(v));
    if (n < 0 || (size_t)n >= cap - len) {
      if (cap > 4)
        memcpy(out + cap - 4, "...", 4);
      return;
    }
    len += (size_t)n;
  }
}

/* "2026.2" from "2026.2.1.210": the release, up to the second dot. */
static void nsys_release(const char *version, char *out, size_t cap) {
  const char *dot = strchr(version, '.');
  if (dot)
    dot = strchr(dot + 1, '.');
  size_t n = dot ? (size_t)(dot - version) : strlen(version);
  if (n >= cap)
    n = cap - 1;
  memcpy(out, version, n);
  out[n] = '\0';
}

/* Checks that every input that records a command records the same one. */
static nsl_status check_commands(const input *in, int n, nsl_error *err) {
  int ref = -1;
  for (int i = 0; i < n; i++) {
    const json_t *c = json_object_get(in[i].m, "command");
    if (c == NULL || json_is_null(c))
      continue;
    if (ref < 0) {
      ref = i;
      continue;
    }
    const json_t *rc = json_object_get(in[ref].m, "command");
    if (!json_equal(rc, c)) {
      char a[160], b[160];
      command_text(rc, a, sizeof a);
      command_text(c, b, sizeof b);
      return nsl_error_set(err, NSL_ERR_ARG, "cannot combine '%s' and '%s': they were made by different "
                           "commands ('%s' vs '%s')", in[ref].path, in[i].path, a, b);
    }
  }
  return NSL_OK;
}

/* Checks that all nsys versions named (top level and per report) belong to
 * one release. */
static nsl_status check_nsys(const input *in, int n, nsl_error *err) {
  const char *ref = NULL;
  int ref_in = -1;
  char rel_ref[64], rel[64];
  for (int i = 0; i < n; i++) {
    const json_t *lists[2] = {json_object_get(in[i].m, "nsys_versions"), NULL};
    json_t *from_reports = json_array();
    if (from_reports == NULL)
      return nsl_error_set(err, NSL_ERR_NOMEM, "cannot combine: out of memory");
    size_t k;
    const json_t *r;
    json_array_foreach(json_object_get(in[i].m, "reports"), k, r) {
      const json_t *v = json_object_get(r, "nsys_version");
      if (json_is_string(v))
        json_array_append(from_reports, (json_t *)v);
    }
    lists[1] = from_reports;
    for (int l = 0; l < 2; l++) {
      const json_t *v;
      json_array_foreach(lists[l], k, v) {
        const char *s = json_string_value(v);
        if (s == NULL || s[0] == '\0')
          continue;
        if (ref == NULL) {
          ref = s;
          ref_in = i;
          nsys_release(s, rel_ref, sizeof rel_ref);
          continue;
        }
        nsys_release(s, rel, sizeof rel);
        if (strcmp(rel, rel_ref) != 0) {
          nsl_status st = nsl_error_set(err, NSL_ERR_ARG, "cannot combine '%s' (nsys %s) and '%s' (nsys "
                                        "%s): different nsys releases (%s vs %s)", in[ref_in].path,
                                        ref, in[i].path, s, rel_ref, rel);
          json_decref(from_reports);
          return st;
        }
      }
    }
    json_decref(from_reports);
  }
  return NSL_OK;
}

typedef struct rank_of {
  int64_t rank;
  int input;
} rank_of;

static int cmp_rank_of(const void *a, const void *b) {
  const rank_of *x = a, *y = b;
  if (x->rank != y->rank)
    return (x->rank > y->rank) - (x->rank < y->rank);
  return (x->input > y->input) - (x->input < y->input);
}

/* Checks that no rank (per report or top-level "ranks") is in two inputs. */
static nsl_status check_ranks(const input *in, int n, nsl_error *err) {
  size_t cap = 0, len = 0;
  for (int i = 0; i < n; i++)
    cap += json_array_size(json_object_get(in[i].m, "ranks")) +
           json_array_size(json_object_get(in[i].m, "reports"));
  rank_of *all = malloc((cap ? cap : 1) * sizeof *all);
  if (all == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot combine: out of memory");
  for (int i = 0; i < n; i++) {
    size_t k;
    const json_t *v;
    json_array_foreach(json_object_get(in[i].m, "ranks"), k, v) {
      all[len++] = (rank_of){json_integer_value(v), i};
    }
    json_array_foreach(json_object_get(in[i].m, "reports"), k, v) {
      const json_t *r = json_object_get(v, "rank");
      if (json_is_integer(r))
        all[len++] = (rank_of){json_integer_value(r), i};
    }
  }
  qsort(all, len, sizeof *all, cmp_rank_of);
  nsl_status st = NSL_OK;
  for (size_t k = 1; k < len; k++)
    if (all[k].rank == all[k - 1].rank && all[k].input != all[k - 1].input) {
      st = nsl_error_set(err, NSL_ERR_ARG, "cannot combine '%s' and '%s': both hold rank %lld",
                         in[all[k - 1].input].path, in[all[k].input].path, (long long)all[k].rank);
      break;
    }
  free(all);
  return st;
}

/* Candidate k (0, 1, ...) for a member name that clashes: a report of
 * known rank becomes <stem>.rank<R><ext>, anything else <stem>~<input><ext>;
 * later candidates add "-<k+1>". */
static int clash_name(const char *name, int input_no, const json_t *report, int k, char *out, size_t cap) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char *ext = strrchr(base, '.');
  if (ext == NULL || ext == base)
    ext = base + strlen(base);
  int stem_len = (int)(ext - name);
  char tag[64];
  const json_t *rank = json_object_get(report, "rank");
  if (json_is_integer(rank))
    snprintf(tag, sizeof tag, ".rank%lld", (long long)json_integer_value(rank));
  else
    snprintf(tag, sizeof tag, "~%d", input_no);
  char more[24] = "";
  if (k > 0)
    snprintf(more, sizeof more, "-%d", k + 1);
  int len = snprintf(out, cap, "%.*s%s%s%s", stem_len, name, tag, more, ext);
  return len > 0 && (size_t)len < cap ? 0 : -1;
}

/* A member on its way from an input to the writer.  A column file stored
 * by `nsl bundle --columns` (a columns/ member, laid out as
 * bundle_internal.h's aligned members) is written again stored and aligned
 * for where it lands, and when its report got another name, its identity
 * follows the name; anything else goes through byte for byte. */
typedef struct copy_ctx {
  nsl_bundle_writer *w;
  nsl_error *err;
  const char *as;             /* the member's name in the output */
  uint64_t size;              /* the member's bytes in the input */
  int column;                 /* a columns/ member */
  const char *report, *renamed;  /* its report's name in the input and in the output (NULL: not renamed) */
  const char *sha;            /* that report's sha256 */
  unsigned char lead[16 + NSL__CACHE_HEAD_BYTES];  /* the first bytes, held until the layout is known */
  size_t lead_len, lead_want;
  int begun;                  /* the output member is started */
  uint64_t pad;               /* the input's P when realigned, else 0 */
  uint64_t pos;               /* input bytes passed on so far */
} copy_ctx;

/* Passes input bytes [c->pos, c->pos + len) on: all of them, or for a
 * realigned member only those of the column file. */
static nsl_status pass_on(copy_ctx *c, const unsigned char *p, size_t len) {
  uint64_t from = c->pos, to = c->pos + len;
  c->pos = to;
  if (c->pad) {
    uint64_t lo = c->pad, hi = c->pad + (c->size - 16);
    if (from < lo)
      from = lo;
    if (to > hi)
      to = hi;
    if (from >= to)
      return NSL_OK;
    p += from - (c->pos - len);
  }
  return nsl_bundle_writer_write(c->w, p, (size_t)(to - from), c->err);
}

/* Starts the output member once the lead is in: realigned (the identity
 * moved to the new report name when there is one) when the input follows
 * the aligned layout, else stored or compressed as it is. */
static nsl_status start_copy(copy_ctx *c) {
  nsl_status st;
  c->pad = c->column ? nsl__aligned_pad(c->lead, c->size) : 0;
  if (c->pad) {
    if (c->renamed && c->lead_len >= c->pad + NSL__CACHE_HEAD_BYTES)
      nsl__cache_stored_rename(c->lead + c->pad, NSL__CACHE_HEAD_BYTES, c->report, c->renamed, c->sha);
    st = nsl__bundle_writer_begin_aligned(c->w, c->as, c->size - 16, c->err);
  } else
    st = nsl_bundle_writer_begin(c->w, c->as, c->size, c->column ? NSL_BUNDLE_COMPRESS_STORE : NSL_BUNDLE_COMPRESS_AUTO,
                                 c->err);
  c->begun = 1;
  return st == NSL_OK ? pass_on(c, c->lead, c->lead_len) : st;
}

/* The sink of copy_member: holds the lead, then passes bytes on. */
static int sink_copy(void *ctx, const void *data, size_t len) {
  copy_ctx *c = ctx;
  const unsigned char *p = data;
  if (!c->begun) {
    size_t take = c->lead_want - c->lead_len < len ? c->lead_want - c->lead_len : len;
    memcpy(c->lead + c->lead_len, p, take);
    c->lead_len += take;
    p += take;
    len -= take;
    if (c->lead_len < c->lead_want)
      return 0;
    if (start_copy(c) != NSL_OK)
      return 1;
  }
  return len > 0 && pass_on(c, p, len) != NSL_OK;
}

/* Streams member mem of in into w as `as`; report/renamed: for a column
 * file whose report is renamed in the output, that report's old and new
 * names (else NULL). */
static nsl_status copy_member(input *in, const nsl_bundle_member *mem, const char *as, const char *report,
                              const char *renamed, nsl_bundle_writer *w, nsl_error *err) {
  copy_ctx c;
  memset(&c, 0, sizeof c);
  c.w = w;
  c.err = err;
  c.as = as;
  c.size = mem->size;
  c.column = strncmp(mem->name, "columns/", 8) == 0;
  c.report = report;
  c.renamed = renamed;
  const nsl_bundle_member *rm = report ? nsl_bundle_find(in->b, report) : NULL;
  c.sha = rm ? rm->sha256 : NULL;
  c.lead_want = c.column ? (mem->size < sizeof c.lead ? (size_t)mem->size : sizeof c.lead) : 0;
  nsl_status st = NSL_OK;
  if (c.lead_want == 0)
    st = start_copy(&c);   /* nothing to look at first: begin now */
  if (st == NSL_OK)
    st = nsl_bundle_stream_member(in->b, mem->name, sink_copy, &c, err);
  if (st == NSL_OK && !c.begun)
    st = start_copy(&c);
  if (st != NSL_OK)
    return st;
  return c.pad ? nsl__bundle_writer_end_aligned(w, err) : nsl_bundle_writer_end(w, err);
}

nsl_status nsl_bundle_copy_members(nsl_bundle *b, nsl_bundle_writer *w, const char *exclude_prefix,
                                   nsl_error *err) {
  size_t plen = exclude_prefix ? strlen(exclude_prefix) : 0;
  input in = {nsl_bundle_path(b), b, NULL, NULL};
  for (size_t j = 0; j < nsl_bundle_count(b); j++) {
    const nsl_bundle_member *mem = nsl_bundle_member_at(b, j);
    if (strcmp(mem->name, NSL_BUNDLE_MANIFEST) == 0)
      continue;
    if (plen && strncmp(mem->name, exclude_prefix, plen) == 0)
      continue;
    nsl_status st = copy_member(&in, mem, mem->name, NULL, NULL, w, err);
    if (st != NSL_OK)
      return st;
  }
  return NSL_OK;
}

/* For member name of the form columns/<report>/<file>: *report_len, the
 * length of <report> (it starts at name + 8).  0 for any other name. */
static int column_of(const char *name, size_t *report_len) {
  const char *last = strrchr(name, '/');
  if (strncmp(name, "columns/", 8) != 0 || last == NULL || last < name + 9)
    return 0;
  *report_len = (size_t)(last - (name + 8));
  return 1;
}

/* Copies every member of input i into w (see the file comment): the column
 * files last, so that they follow their report when it was renamed.  origin
 * maps output names to the input number that wrote them. */
static nsl_status copy_input(input *in, int i, const input *all, nsl_bundle_writer *w, json_t *origin,
                             nsl_error *err) {
  char cand[NSL__BUNDLE_NAME_MAX + 64], moved[2 * NSL__BUNDLE_NAME_MAX + 16], report[NSL__BUNDLE_NAME_MAX + 1];
  for (int columns = 0; columns < 2; columns++)
    for (size_t j = 0; j < nsl_bundle_count(in->b); j++) {
      const nsl_bundle_member *mem = nsl_bundle_member_at(in->b, j);
      size_t rlen = 0;
      if (strcmp(mem->name, NSL_BUNDLE_MANIFEST) == 0 || column_of(mem->name, &rlen) != columns)
        continue;
      const json_t *entry = nsl__bundle_report_entry(in->b, mem->name);
      const char *target = mem->name, *renamed = NULL;
      if (columns && rlen < sizeof report) {   /* columns/<report>/<file>: where its report went */
        memcpy(report, mem->name + 8, rlen);
        report[rlen] = '\0';
        renamed = json_string_value(json_object_get(in->renames, report));
        if (renamed && snprintf(moved, sizeof moved, "columns/%s%s", renamed, mem->name + 8 + rlen) <
                           (int)sizeof moved)
          target = moved;
        else
          renamed = NULL;
      }
      const char *name = target;
      for (int k = 0;; k++) {
        const char *have = nsl_bundle_writer_sha256(w, target);
        if (have == NULL)
          break;                                   /* a free name: copy there */
        if (strcmp(have, mem->sha256) == 0) {      /* identical content: stored once */
          if (entry != NULL) {
            json_int_t from = json_integer_value(json_object_get(origin, target));
            return nsl_error_set(err, NSL_ERR_ARG, "cannot combine '%s' and '%s': both hold the same "
                                 "report '%s' (identical sha256)", all[from].path, in->path, mem->name);
          }
          goto mapped;
        }
        if (k > 1000 || clash_name(name, i + 1, entry, k, cand, sizeof cand) != 0)
          return nsl_error_set(err, NSL_ERR_ARG, "cannot combine '%s': no free name for member '%s'",
                               in->path, mem->name);
        target = cand;
      }
      nsl_status st = copy_member(in, mem, target, renamed ? report : NULL, renamed, w, err);
      if (st != NSL_OK)
        return st;
      if (json_object_set_new(origin, target, json_integer(i)) != 0)
        return nsl_error_set(err, NSL_ERR_NOMEM, "cannot combine: out of memory");
    mapped:
      if (strcmp(target, mem->name) != 0 && json_object_set_new(in->renames, mem->name, json_string(target)))
        return nsl_error_set(err, NSL_ERR_NOMEM, "cannot combine: out of memory");
    }
  return NSL_OK;
}

/* Appends the elements of src not already in dst (json_equal). */
static int union_into(json_t *dst, const json_t *src) {
  size_t i, j;
  const json_t *v, *d;
  json_array_foreach(src, i, v) {
    int seen = 0;
    json_array_foreach(dst, j, d) if (json_equal(d, v)) {
      seen = 1;
      break;
    }
    if (!seen && json_array_append_new(dst, json_deep_copy(v)) != 0)
      return -1;
  }
  return 0;
}

static int cmp_json_int(const void *a, const void *b) {
  json_int_t x = json_integer_value(*(json_t *const *)a), y = json_integer_value(*(json_t *const *)b);
  return (x > y) - (x < y);
}

/* The manifest of the combined bundle (members are filled by the writer). */
static json_t *merged_manifest(const input *in, int n) {
  json_t *m = json_object();
  json_t *hosts = json_array(), *ranks = json_array(), *devices = json_array(), *nsys = json_array(),
         *schema = json_array(), *reports = json_array(), *from = json_array();
  int bad = m == NULL || hosts == NULL || ranks == NULL || devices == NULL || nsys == NULL ||
            schema == NULL || reports == NULL || from == NULL;
  for (int i = 0; !bad && i < n; i++) {
    const json_t *im = in[i].m;
    const json_t *cmd = json_object_get(im, "command");
    if (json_is_array(cmd) && json_object_get(m, "command") == NULL)
      bad |= json_object_set_new(m, "command", json_deep_copy(cmd)) != 0;
    bad |= union_into(hosts, json_object_get(im, "hosts")) != 0;
    bad |= union_into(ranks, json_object_get(im, "ranks")) != 0;
    bad |= union_into(devices, json_object_get(im, "devices")) != 0;
    bad |= union_into(nsys, json_object_get(im, "nsys_versions")) != 0;
    bad |= union_into(schema, json_object_get(im, "schema_versions")) != 0;
    size_t k;
    const json_t *r;
    json_array_foreach(json_object_get(im, "reports"), k, r) {
      json_t *copy = json_deep_copy(r);
      const char *old = json_string_value(json_object_get(r, "member"));
      const json_t *renamed = json_object_get(in[i].renames, old);
      if (copy == NULL) {
        bad = 1;
        break;
      }
      if (renamed)
        bad |= json_object_set(copy, "member", (json_t *)renamed) != 0;
      const json_t *rank = json_object_get(r, "rank");
      if (json_is_integer(rank)) {
        json_t *one = json_pack("[O]", rank);
        bad |= one == NULL || union_into(ranks, one) != 0;
        json_decref(one);
      }
      bad |= json_object_set_new(copy, "bundle", json_string(base_name(in[i].path))) != 0;
      bad |= json_array_append_new(reports, copy) != 0;
    }
    json_t *f = json_pack("{s:s, s:O?, s:O?}", "file", base_name(in[i].path), "created",
                          json_object_get(im, "created"), "renamed", in[i].renames);
    bad |= f == NULL || json_array_append_new(from, f) != 0;
  }
  if (!bad) {
    /* ranks sorted ascending */
    size_t nr = json_array_size(ranks);
    json_t **v = malloc((nr ? nr : 1) * sizeof *v);
    json_t *sorted = json_array();
    bad = v == NULL || sorted == NULL;
    for (size_t k = 0; !bad && k < nr; k++)
      v[k] = json_array_get(ranks, k);
    if (!bad) {
      qsort(v, nr, sizeof *v, cmp_json_int);
      for (size_t k = 0; !bad && k < nr; k++)
        bad = json_array_append(sorted, v[k]) != 0;
    }
    free(v);
    json_decref(ranks);
    ranks = sorted;
  }
  if (!bad) {
    bad = json_object_set(m, "hosts", hosts) || json_object_set(m, "ranks", ranks) ||
          json_object_set(m, "devices", devices) || json_object_set(m, "nsys_versions", nsys) ||
          json_object_set(m, "schema_versions", schema) || json_object_set(m, "reports", reports) ||
          json_object_set(m, "combined_from", from);
  }
  json_decref(hosts);
  json_decref(ranks);
  json_decref(devices);
  json_decref(nsys);
  json_decref(schema);
  json_decref(reports);
  json_decref(from);
  if (bad) {
    json_decref(m);
    return NULL;
  }
  return m;
}

nsl_status nsl_bundle_combine(const char *const *inputs, int n, const char *out_path,
                              const nsl_combine_options *opts, nsl_error *err) {
  nsl_combine_options defaults;
  nsl_status st = NSL_OK;
  input *in = NULL;
  nsl_bundle_writer *w = NULL;
  json_t *origin = NULL, *manifest = NULL;
  struct stat so, si;

  if (opts == NULL) {
    nsl_combine_options_init(&defaults);
    opts = &defaults;
  }
  if (inputs == NULL || n < 1 || out_path == NULL)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot combine: no inputs or no output path");
  int have_out = stat(out_path, &so) == 0;
  in = calloc((size_t)n, sizeof *in);
  origin = json_object();
  if (in == NULL || origin == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot combine: out of memory");
    goto done;
  }
  nsl_bundle_options ropts = opts->read;
  ropts.mode = NSL_BUNDLE_STRICT;
  for (int i = 0; i < n; i++) {
    in[i].path = inputs[i];
    if (inputs[i] == NULL) {
      st = nsl_error_set(err, NSL_ERR_ARG, "cannot combine: input %d is NULL", i + 1);
      goto done;
    }
    if (stat(inputs[i], &si) == 0) {
      if (have_out && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
        st = nsl_error_set(err, NSL_ERR_ARG, "cannot combine into '%s': it is also input '%s' (inputs "
                           "are never modified)", out_path, inputs[i]);
        goto done;
      }
      for (int j = 0; j < i; j++) {
        struct stat sj;
        if (stat(inputs[j], &sj) == 0 && sj.st_dev == si.st_dev && sj.st_ino == si.st_ino) {
          st = nsl_error_set(err, NSL_ERR_ARG, "cannot combine: '%s' and '%s' are the same file",
                             inputs[j], inputs[i]);
          goto done;
        }
      }
    }
    if ((st = nsl_bundle_open(&in[i].b, inputs[i], &ropts, err)) != NSL_OK)
      goto done;
    in[i].m = nsl__bundle_manifest(in[i].b);
    in[i].renames = json_object();
    if (in[i].renames == NULL) {
      st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot combine: out of memory");
      goto done;
    }
  }
  if ((!opts->allow_mixed_commands && (st = check_commands(in, n, err)) != NSL_OK) ||
      (!opts->allow_mixed_nsys && (st = check_nsys(in, n, err)) != NSL_OK) ||
      (st = check_ranks(in, n, err)) != NSL_OK)
    goto done;

  if ((st = nsl_bundle_writer_open(&w, out_path, err)) != NSL_OK)
    goto done;
  for (int i = 0; i < n; i++)
    if ((st = copy_input(&in[i], i, in, w, origin, err)) != NSL_OK)
      goto done;
  manifest = merged_manifest(in, n);
  if (manifest == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot combine: out of memory building the manifest");
    goto done;
  }
  st = nsl__bundle_writer_finish_json(w, manifest, err);
  w = NULL;
done:
  nsl_bundle_writer_abort(w);
  json_decref(manifest);
  json_decref(origin);
  for (int i = 0; in && i < n; i++) {
    nsl_bundle_close(in[i].b);
    json_decref(in[i].renames);
  }
  free(in);
  return st;
}
