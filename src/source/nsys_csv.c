/* nsys_csv.c -- `nsys stats --format csv` report files as a report of a
 * trace (see nsys_csv.h). */
#include "source/nsys_csv.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/atomic_write.h"
#include "core/text.h"
#include "source/csv.h"

#define MAX_FIELDS 64
#define MAX_FILES 16
#define MAX_CSV_BYTES ((size_t)4 << 30)

/* One CSV file: its report kind, normalized header names and rows. */
typedef struct csv_file {
  char *path;
  const char *kind;      /* the report: a static string of kind_of */
  char *text;            /* the file, NUL-terminated */
  char *scratch;         /* fields of every record, one after another */
  int ncols;
  char **head;           /* normalized header names */
  int64_t nrows;
  char ***rows;          /* rows[i][k]: field k of row i ("" when short) */
  char *rowtab;          /* cuda_gpu_trace: per row 'k' kernel, 'c' memcpy, 's' memset */
} csv_file;

typedef struct csv_src {
  char prefix[4096];
  int nfiles;
  csv_file files[MAX_FILES];
} csv_src;

/* "Total Time (ns)" -> "totaltime": lower case, no blanks, no unit suffix. */
static void normalize(const char *in, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = in; *p && o + 1 < cap; p++) {
    if (*p == ' ' || *p == '_') continue;
    out[o++] = (char)tolower((unsigned char)*p);
  }
  out[o] = 0;
  size_t n = strlen(out);
  if (n > 4 && strcmp(out + n - 4, "(ns)") == 0) out[n - 4] = 0;
}

static int has(char **head, int n, const char *name) {
  for (int k = 0; k < n; k++)
    if (strcmp(head[k], name) == 0) return k;
  return -1;
}

/* The report kind of a header (normalized names), the file name deciding
 * between reports of the same header (cuda_api_sum and osrt_sum); NULL when
 * it is none of the reports nsl reads. */
static const char *kind_of(char **head, int n, const char *path) {
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (has(head, n, "start") >= 0 && has(head, n, "duration") >= 0 && has(head, n, "name") >= 0 &&
      (has(head, n, "grdx") >= 0 || has(head, n, "corrid") >= 0))
    return "cuda_gpu_trace";
  if (has(head, n, "projectedstart") >= 0 && has(head, n, "projectedduration") >= 0 && has(head, n, "name") >= 0)
    return "nvtx_gpu_proj_trace";
  if (has(head, n, "totaltime") < 0) return NULL;
  if (has(head, n, "operation") >= 0) return "cuda_gpu_mem_time_sum";
  if (has(head, n, "range") >= 0) return "nvtx_sum";
  if (has(head, n, "name") < 0) return NULL;
  if (has(head, n, "numcalls") >= 0 || has(head, n, "calls") >= 0)
    return strstr(base, "osrt_sum") ? "osrt_sum" : "cuda_api_sum";
  if (has(head, n, "instances") >= 0) return "cuda_gpu_kern_sum";
  return NULL;
}

/* Reads the whole file (at most MAX_CSV_BYTES) into a NUL-terminated buffer. */
static nsl_status read_all(const char *path, char **out, size_t *len, nsl_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_CSV_BYTES) {
    fclose(f);
    return nsl_error_set(err, NSL_ERR_IO, "cannot open '%s': not a regular file of at most 4 GiB", path);
  }
  char *buf = malloc((size_t)st.st_size + 1);
  if (!buf) {
    fclose(f);
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading '%s'", path);
  }
  size_t n = fread(buf, 1, (size_t)st.st_size, f);
  fclose(f);
  buf[n] = 0;
  *out = buf;
  *len = n;
  return NSL_OK;
}

/* Where the header starts: after a UTF-8 byte-order mark and blank lines. */
static size_t header_start(const char *d, size_t len) {
  size_t i = 0;
  if (len >= 3 && (unsigned char)d[0] == 0xEF && (unsigned char)d[1] == 0xBB && (unsigned char)d[2] == 0xBF) i = 3;
  while (i < len && (d[i] == '\n' || d[i] == '\r' || d[i] == ' ')) i++;
  return i;
}

const char *nsl__nsys_csv_sniff(const char *path) {
  char buf[4096];
  ssize_t got = nsl__read_head(path, buf, sizeof buf - 1);   /* regular files only, never waiting on a FIFO */
  if (got < 0) return NULL;
  return nsl__nsys_csv_kind(buf, (size_t)got, path);
}

const char *nsl__nsys_csv_kind(const char *bytes, size_t n, const char *path) {
  char buf[4096];
  if (n > sizeof buf - 1) n = sizeof buf - 1;
  memcpy(buf, bytes, n);
  buf[n] = 0;
  if (memchr(buf, 0, n)) return NULL;   /* binary */
  size_t pos = header_start(buf, n);
  const char *eol = memchr(buf + pos, '\n', n - pos);
  if (!eol) return NULL;   /* the header must end within the first 4 KiB */
  size_t hlen = (size_t)(eol - buf) + 1;
  char scratch[4096], *fields[MAX_FIELDS], norm[MAX_FIELDS][64], *head[MAX_FIELDS];
  int nf = nsl__csv_record(buf, hlen, &pos, scratch, fields, MAX_FIELDS);
  if (nf < 3 || nf > MAX_FIELDS) return NULL;
  for (int k = 0; k < nf; k++) {
    normalize(fields[k], norm[k], sizeof norm[k]);
    head[k] = norm[k];
  }
  return kind_of(head, nf, path);
}

void nsl__nsys_csv_prefix(const char *path, const char *kind, char *out, size_t cap) {
  snprintf(out, cap, "%s", path);
  size_t n = strlen(out), k = strlen(kind);
  if (n > 4 && strcmp(out + n - 4, ".csv") == 0) {
    n -= 4;
    if (n > k && strncmp(out + n - k, kind, k) == 0 && (out[n - k - 1] == '_' || out[n - k - 1] == '.')) n -= k + 1;
    out[n] = 0;
  }
}

static void free_file(csv_file *f) {
  free(f->path);
  free(f->text);
  free(f->scratch);
  if (f->head)
    for (int k = 0; k < f->ncols; k++) free(f->head[k]);
  free(f->head);
  if (f->rows)
    for (int64_t i = 0; i < f->nrows; i++) free(f->rows[i]);
  free(f->rows);
  free(f->rowtab);
}

static void csv_close(void *p) {
  csv_src *s = p;
  if (!s) return;
  for (int i = 0; i < s->nfiles; i++) free_file(&s->files[i]);
  free(s);
}

static int is_sum(const char *kind);

/* The checks of one column of a report's rows: nsys fills it with a number
 * always (required) or may leave it empty; an integer, and whether it can
 * be negative. */
typedef struct field_rule {
  int col;   /* -1: the file has no such column */
  int required, integer, negative;
} field_rule;

/* The rules of a file's numeric columns (at most MAX_FIELDS); returns how many. */
static int field_rules(const csv_file *f, field_rule *rules) {
  static const struct {
    const char *name;
    char which;   /* 's' summaries, 't' cuda_gpu_trace, 'p' nvtx_gpu_proj_trace */
    int required, integer, negative;
  } known[] = {
      {"totaltime", 's', 1, 1, 0}, {"instances", 's', 1, 1, 0}, {"count", 's', 1, 1, 0}, {"numcalls", 's', 1, 1, 0},
      {"calls", 's', 1, 1, 0},     {"time(%)", 's', 0, 0, 0},   {"avg", 's', 0, 0, 0},   {"average", 's', 0, 0, 0},
      {"med", 's', 0, 0, 0},       {"median", 's', 0, 0, 0},    {"min", 's', 0, 0, 0},   {"minimum", 's', 0, 0, 0},
      {"max", 's', 0, 0, 0},       {"maximum", 's', 0, 0, 0},   {"stddev", 's', 0, 0, 0},
      {"start", 't', 1, 1, 1},     {"duration", 't', 1, 1, 0},  {"corrid", 't', 0, 1, 0},
      {"projectedstart", 'p', 1, 1, 1}, {"projectedduration", 'p', 1, 1, 0}, {"numgpuops", 'p', 0, 1, 0}};
  char which = is_sum(f->kind) ? 's' : strcmp(f->kind, "cuda_gpu_trace") == 0 ? 't' : 'p';
  int n = 0;
  for (size_t i = 0; i < sizeof known / sizeof *known && n < MAX_FIELDS; i++)
    if (known[i].which == which) {
      int col = has(f->head, f->ncols, known[i].name);
      if (col >= 0) rules[n++] = (field_rule){col, known[i].required, known[i].integer, known[i].negative};
    }
  for (int i = 1; i < n; i++)   /* in the file's column order: a row's first bad field is the one named */
    for (int j = i; j > 0 && rules[j].col < rules[j - 1].col; j--) {
      field_rule r = rules[j];
      rules[j] = rules[j - 1], rules[j - 1] = r;
    }
  return n;
}

/* Whether v satisfies rule r: a finite number (an integer of magnitude
 * below 2^62 when r asks -- 146 years of ns, so a start plus a duration
 * cannot overflow; "123.0" counts, as pandas writes them), >= 0 unless r
 * allows negative, or empty when r does not require it. */
static int field_ok(const char *v, const field_rule *r) {
  if (!*v) return !r->required;
  char *end;
  double d = strtod(v, &end);
  if (*end || !isfinite(d)) return 0;
  if (r->integer && (nsl__csv_i64(v) == NSL_NULL_I64 || !(fabs(d) < 4611686018427387904.0))) return 0;
  return r->negative || d >= 0;
}

/* Parses the file at path (its kind known) into f.  Every row must have
 * the numbers nsys always writes (a summary's total and count, a trace's
 * start and duration) and numbers where nsys writes numbers: a file that
 * does not is refused here, naming the line and the column, so no analysis
 * meets a row it cannot use. */
static nsl_status parse_file(csv_file *f, const char *path, const char *kind, nsl_error *err) {
  memset(f, 0, sizeof *f);
  size_t len = 0;
  nsl_status rc = read_all(path, &f->text, &len, err);
  if (rc != NSL_OK) return rc;
  f->kind = kind;
  if (!(f->path = strdup(path)) || !(f->scratch = malloc(len + 1)))
    return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading '%s'", path);
  size_t pos = header_start(f->text, len);
  char *fields[MAX_FIELDS];
  int nf = nsl__csv_record(f->text, len, &pos, f->scratch, fields, MAX_FIELDS);
  if (nf < 3 || nf > MAX_FIELDS) return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': no CSV header", path);
  f->ncols = nf;
  if (!(f->head = calloc((size_t)nf, sizeof *f->head))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  char titles[MAX_FIELDS][64];   /* the header as written, for messages */
  for (int k = 0; k < nf; k++) {
    char norm[64];
    normalize(fields[k], norm, sizeof norm);
    snprintf(titles[k], sizeof titles[k], "%s", fields[k]);
    if (!(f->head[k] = strdup(norm))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  }
  field_rule rules[MAX_FIELDS];
  int nrules = field_rules(f, rules);
  int64_t cap = 0;
  char *scratch = f->scratch;
  for (int64_t line = 2;; line++) {
    int n = nsl__csv_record(f->text, len, &pos, scratch, fields, MAX_FIELDS);
    if (n == -1) break;
    if (n == -2) return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': line %lld: unterminated quote", path, (long long)line);
    if (n == 1 && fields[0][0] == 0) continue;   /* a blank line */
    if (n > nf)
      return nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': line %lld has %d fields, the header %d", path,
                           (long long)line, n, nf);
    if (f->nrows == cap) {
      cap = cap ? 2 * cap : 1024;
      char ***r = realloc(f->rows, (size_t)cap * sizeof *r);
      if (!r) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading '%s'", path);
      f->rows = r;
    }
    char **row = malloc((size_t)nf * sizeof *row);
    if (!row) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory reading '%s'", path);
    for (int k = 0; k < nf; k++) row[k] = k < n ? fields[k] : (char *)"";
    f->rows[f->nrows++] = row;
    for (int j = 0; j < nrules; j++)
      if (!field_ok(row[rules[j].col], &rules[j])) {
        const char *v = row[rules[j].col];
        nsl__text shown = {0};
        nsl__text_add_printable(&shown, v, strnlen(v, 40), 0);
        rc = nsl_error_set(err, NSL_ERR_FORMAT, "cannot open '%s': line %lld: %s is '%s%s', not %s", path,
                           (long long)line, titles[rules[j].col], shown.s ? shown.s : "", strlen(v) > 40 ? "..." : "",
                           rules[j].integer ? (rules[j].negative ? "a whole number" : "a whole number >= 0")
                                            : (rules[j].negative ? "a number" : "a number >= 0"));
        free(shown.s);
        return rc;
      }
    /* the next record's fields go after this one's (never more bytes than the records, plus one NUL) */
    scratch = fields[n - 1] + strlen(fields[n - 1]) + 1;
  }
  if (strcmp(kind, "cuda_gpu_trace") == 0) {   /* which table each row goes to, by its name */
    int k = has(f->head, f->ncols, "name");
    if (!(f->rowtab = malloc((size_t)f->nrows + 1))) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < f->nrows; i++) {
      const char *name = f->rows[i][k];
      f->rowtab[i] = strncmp(name, "[CUDA memcpy", 12) == 0 ? 'c' : strncmp(name, "[CUDA memset", 12) == 0 ? 's' : 'k';
    }
  }
  return NSL_OK;
}

nsl_status nsl__nsys_csv_open(const char *path, const char *kind, void **src, nsl_report_info *info,
                              nsl_error *err) {
  *src = NULL;
  csv_src *s = calloc(1, sizeof *s);
  if (!s) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  nsl__nsys_csv_prefix(path, kind, s->prefix, sizeof s->prefix);
  nsl_status rc = nsl__nsys_csv_add(s, path, kind, err);
  if (rc != NSL_OK) {
    csv_close(s);
    return rc;
  }
  memset(info, 0, sizeof *info);
  info->path = path;
  const char *base = strrchr(s->prefix, '/') ? strrchr(s->prefix, '/') + 1 : s->prefix;
  info->name = base;   /* valid while the source is open (the trace keeps a copy) */
  info->host = "";
  info->rank = -1;
  info->first_ts = info->last_ts = NSL_NULL_I64;
  *src = s;
  return NSL_OK;
}

const char *nsl__nsys_csv_src_prefix(void *src) { return ((csv_src *)src)->prefix; }

nsl_status nsl__nsys_csv_add(void *src, const char *path, const char *kind, nsl_error *err) {
  csv_src *s = src;
  for (int i = 0; i < s->nfiles; i++)
    if (s->files[i].kind == kind)
      return nsl_error_set(err, NSL_ERR_ARG, "cannot open '%s': '%s' already gives %s for run '%s'", path,
                           s->files[i].path, kind, s->prefix);
  if (s->nfiles == MAX_FILES) return nsl_error_set(err, NSL_ERR_LIMIT, "cannot open '%s': too many CSV files", path);
  nsl_status rc = parse_file(&s->files[s->nfiles], path, kind, err);
  s->nfiles++;   /* freed by csv_close whatever happened */
  return rc;
}

/* ---- tables ---------------------------------------------------------------- */

static int is_sum(const char *kind) {
  return strcmp(kind, "nvtx_gpu_proj_trace") != 0 && strcmp(kind, "cuda_gpu_trace") != 0;
}

/* The row-table letter of an event table fed by cuda_gpu_trace, 0 for others. */
static char trace_table(const char *name) {
  return strcmp(name, "kernels") == 0 ? 'k' : strcmp(name, "memcpy") == 0 ? 'c' : strcmp(name, "memset") == 0 ? 's' : 0;
}

/* Whether row j of f belongs to table name. */
static int row_in(const csv_file *f, const char *name, int64_t j) {
  return !f->rowtab || f->rowtab[j] == trace_table(name);
}

/* The column of f that model column `col` of table `table` comes from, -1
 * when f has none. */
static int source_col(const csv_file *f, const char *table, const char *col) {
  static const char *const sums_map[][4] = {
      {"name", "name", "operation", "range"}, {"style", "style", NULL, NULL},
      {"count", "instances", "count", "numcalls"}, {"total", "totaltime", NULL, NULL},
      {"avg", "avg", "average", NULL},       {"med", "med", "median", NULL},
      {"min", "min", "minimum", NULL},       {"max", "max", "maximum", NULL},
      {"std", "stddev", NULL, NULL},         {"pct", "time(%)", NULL, NULL}};
  static const char *const ranges_map[][2] = {
      {"text", "name"},       {"start", "projectedstart"}, {"dur", "projectedduration"}, {"orig_start", "origstart"},
      {"orig_dur", "origduration"}, {"pid", "pid"},        {"tid", "tid"},  {"num_gpu_ops", "numgpuops"},
      {"level", "lvl"},       {"num_child", "numchild"},   {"range_id", "rangeid"}, {"parent_id", "parentid"},
      {"style", "style"}};
  char **head = f->head;
  if (strcmp(table, "sums") == 0) {
    for (size_t m = 0; m < sizeof sums_map / sizeof *sums_map; m++)
      if (strcmp(sums_map[m][0], col) == 0)
        for (int j = 1; j < 4; j++)
          if (sums_map[m][j] && has(head, f->ncols, sums_map[m][j]) >= 0) return has(head, f->ncols, sums_map[m][j]);
    if (strcmp(col, "count") == 0 && has(head, f->ncols, "calls") >= 0) return has(head, f->ncols, "calls");
    return -1;
  }
  if (f->rowtab) {   /* cuda_gpu_trace */
    static const char *const trace_map[][2] = {
        {"start", "start"},   {"dur", "duration"},  {"corr", "corrid"},     {"grid_x", "grdx"},
        {"grid_y", "grdy"},   {"grid_z", "grdz"},   {"block_x", "blkx"},    {"block_y", "blky"},
        {"block_z", "blkz"},  {"regs", "reg/trd"},  {"smem_static", "stcsmem(mb)"}, {"smem_dynamic", "dymsmem(mb)"},
        {"bytes", "bytes(mb)"}, {"device", "device"}, {"context", "ctx"},   {"stream", "strm"},
        {"name", "name"},     {"demangled", "name"}, {"kind", "name"}};
    for (size_t m = 0; m < sizeof trace_map / sizeof *trace_map; m++)
      if (strcmp(trace_map[m][0], col) == 0) return has(head, f->ncols, trace_map[m][1]);
    return -1;
  }
  for (size_t m = 0; m < sizeof ranges_map / sizeof *ranges_map; m++)
    if (strcmp(ranges_map[m][0], col) == 0) return has(head, f->ncols, ranges_map[m][1]);
  return -1;
}

/* nsys's memcpy label ("[CUDA memcpy Host-to-Device]") as the data model's kind ("HtoD"). */
static const char *memcpy_kind(const char *label) {
  static const char *const kinds[][2] = {
      {"Host-to-Device", "HtoD"},   {"Device-to-Host", "DtoH"},   {"Device-to-Device", "DtoD"},
      {"Host-to-Host", "HtoH"},     {"Peer-to-Peer", "PtoP"},     {"Host-to-Array", "HtoA"},
      {"Array-to-Host", "AtoH"},    {"Array-to-Array", "AtoA"},   {"Array-to-Device", "AtoD"},
      {"Device-to-Array", "DtoA"},  {"Unified Host-to-Device", "UVM_HtoD"},
      {"Unified Device-to-Host", "UVM_DtoH"}, {"Unified Device-to-Device", "UVM_DtoD"}};
  const char *p = label + (strncmp(label, "[CUDA memcpy ", 13) == 0 ? 13 : 0);
  size_t n = strcspn(p, "]");
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (strlen(kinds[i][0]) == n && strncmp(p, kinds[i][0], n) == 0) return kinds[i][1];
  return "Unknown";
}

/* A cuda_gpu_trace field as the model column wants it: megabytes as bytes,
 * "NVIDIA H100 (0)" as device 0.  Writes into buf when it converts. */
static const char *trace_value(const char *col, const char *v, char *buf, size_t cap) {
  if (!*v) return v;
  if (strcmp(col, "bytes") == 0 || strcmp(col, "smem_static") == 0 || strcmp(col, "smem_dynamic") == 0) {
    char *end;
    double mb = strtod(v, &end);
    if (*end) return "";
    snprintf(buf, cap, "%.0f", mb * 1e6);
    return buf;
  }
  if (strcmp(col, "device") == 0) {
    const char *open = strrchr(v, '(');
    if (!open) return v;
    snprintf(buf, cap, "%.*s", (int)strcspn(open + 1, ")"), open + 1);
    return buf;
  }
  if (strcmp(col, "kind") == 0) return strncmp(v, "[CUDA memcpy", 12) == 0 ? memcpy_kind(v) : "";
  return v;
}

/* The files that feed table name. */
static int feeds(const csv_file *f, const char *name) {
  if (strcmp(name, "sums") == 0) return is_sum(f->kind);
  if (strcmp(name, "gpu_ranges") == 0) return strcmp(f->kind, "nvtx_gpu_proj_trace") == 0;
  return f->rowtab && trace_table(name);
}

static nsl_status csv_describe(void *p, const char *name, nsl_table *t, nsl_error *err) {
  csv_src *s = p;
  (void)t;
  for (int i = 0; i < s->nfiles; i++)
    if (feeds(&s->files[i], name)) {
      if (strcmp(name, "gpu_ranges") == 0 && nsl_table_find(t, "style") < 0) nsl_table_declare(t, "style", NSL_STR, NULL);
      return NSL_OK;
    }
  return nsl_error_set(err, NSL_ERR_NOTFOUND, "no %s in nsys stats CSV files", name);
}

static nsl_status csv_count(void *p, const char *name, int64_t *out, nsl_error *err) {
  csv_src *s = p;
  (void)err;
  *out = 0;
  for (int i = 0; i < s->nfiles; i++)
    if (feeds(&s->files[i], name))
      for (int64_t j = 0; j < s->files[i].nrows; j++) *out += row_in(&s->files[i], name, j);
  return NSL_OK;
}

/* Sets element r of column c (of type type) from text v ("" is NULL); fails
 * only when a string cannot be added to dict. */
static nsl_status set_value(nsl_column *c, int64_t r, const char *v, nsl_dict *dict, int64_t off, int is_time,
                            nsl_error *err) {
  switch (c->type) {
  case NSL_I64: {
    int64_t x = nsl__csv_i64(v);
    int64_t t;   /* a time shifted past int64's range is no time: NULL */
    if (x != NSL_NULL_I64 && is_time) x = __builtin_add_overflow(x, off, &t) ? NSL_NULL_I64 : t;
    nsl_i64(c)[r] = x;
    break;
  }
  case NSL_I32: {
    int64_t x = nsl__csv_i64(v);
    nsl_i32(c)[r] = x == NSL_NULL_I64 || x < INT32_MIN || x > INT32_MAX ? NSL_NULL_I32 : (int32_t)x;
    break;
  }
  case NSL_F64: {
    char *end;
    double x = *v ? strtod(v, &end) : NAN;
    nsl_f64(c)[r] = *v && *end == 0 ? x : NAN;
    break;
  }
  case NSL_STR: {
    nsl_i32(c)[r] = -1;
    if (*v) return nsl_dict_intern(dict, v, strlen(v), &nsl_i32(c)[r], err);
    break;
  }
  case NSL_BOOL: nsl_bool(c)[r] = *v && strcmp(v, "0") != 0; break;
  }
  return NSL_OK;
}

static void set_null(nsl_column *c, int64_t r) {
  switch (c->type) {
  case NSL_I64: nsl_i64(c)[r] = NSL_NULL_I64; break;
  case NSL_I32: nsl_i32(c)[r] = NSL_NULL_I32; break;
  case NSL_F64: nsl_f64(c)[r] = NAN; break;
  case NSL_STR: nsl_i32(c)[r] = -1; break;
  case NSL_BOOL: nsl_bool(c)[r] = 0; break;
  }
}

/* Builds model column col of table name over every file that feeds it. */
static nsl_status load_column(csv_src *s, const char *name, const char *col, nsl_type type, nsl_dict *dict,
                              int64_t off, nsl_column **out, nsl_error *err) {
  int64_t n = 0;
  csv_count(s, name, &n, err);
  nsl_column *c = nsl_column_new(type, n, dict);
  if (!c) return nsl_error_set(err, NSL_ERR_NOMEM, "out of memory");
  int64_t r = 0;
  int stop = strcmp(col, "stop") == 0, ostop = strcmp(col, "orig_stop") == 0;
  int is_time = stop || ostop || strcmp(col, "start") == 0 || strcmp(col, "orig_start") == 0;
  for (int i = 0; i < s->nfiles; i++) {
    csv_file *f = &s->files[i];
    if (!feeds(f, name)) continue;
    int k = -1, k2 = -1;
    if (stop || ostop) {   /* start + duration */
      k = source_col(f, name, stop ? "start" : "orig_start");
      k2 = source_col(f, name, stop ? "dur" : "orig_dur");
    } else if (f->rowtab || strcmp(col, "kind") != 0)
      k = source_col(f, name, col);
    for (int64_t j = 0; j < f->nrows; j++) {
      if (!row_in(f, name, j)) continue;
      nsl_status rc = NSL_OK;
      char buf[64];
      if (stop || ostop) {
        int64_t a = k >= 0 ? nsl__csv_i64(f->rows[j][k]) : NSL_NULL_I64;
        int64_t b = k2 >= 0 ? nsl__csv_i64(f->rows[j][k2]) : NSL_NULL_I64;
        int64_t t;   /* start + duration (+ the clock offset) past int64's range: NULL */
        if (a == NSL_NULL_I64 || b == NSL_NULL_I64 || type != NSL_I64 || __builtin_add_overflow(a, b, &t) ||
            __builtin_add_overflow(t, off, &t))
          set_null(c, r);
        else nsl_i64(c)[r] = t;
      } else if (k < 0 && !(strcmp(col, "kind") == 0 && !f->rowtab)) set_null(c, r);
      else if (f->rowtab)
        rc = set_value(c, r, trace_value(col, f->rows[j][k], buf, sizeof buf), dict, off, is_time, err);
      else if (strcmp(col, "kind") == 0) rc = set_value(c, r, f->kind, dict, 0, 0, err);
      else rc = set_value(c, r, f->rows[j][k], dict, off, is_time, err);
      if (rc != NSL_OK) {
        nsl_column_release(c);
        return rc;
      }
      r++;
    }
  }
  *out = c;
  return NSL_OK;
}

static nsl_status csv_load(void *p, const char *name, const char *const *colnames, const nsl_type *types, int n,
                           nsl_dict *dict, int64_t off, nsl_column **out, nsl_error *err) {
  csv_src *s = p;
  for (int k = 0; k < n; k++) out[k] = NULL;
  for (int k = 0; k < n; k++) {
    nsl_status rc = load_column(s, name, colnames[k], types[k], dict, off, &out[k], err);
    if (rc != NSL_OK) {
      for (int j = 0; j < k; j++) {
        nsl_column_release(out[j]);
        out[j] = NULL;
      }
      return rc;
    }
  }
  return NSL_OK;
}

const nsl_source_ops nsl__nsys_csv_source_ops = {
    .version = NSL_SOURCE_VERSION, .kind = "nsys-stats-csv", .describe = csv_describe, .load = csv_load, .count = csv_count, .close = csv_close};
