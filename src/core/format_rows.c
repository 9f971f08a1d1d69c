/* format_rows.c -- whole columns written as text, one line per row, from a
 * small template: JSON strings escaped once per distinct dictionary id,
 * integers and ns -> µs values converted without printf.  Used to write
 * trace-event JSON (Chrome / Perfetto) for millions of events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernels_internal.h"
#include "core/nsl_internal.h"
#include "core/text.h"

/* A growable output buffer; oom set once an allocation fails. */
typedef struct obuf {
  char *p;
  size_t len, cap;
  int oom;
} obuf;

static int grow(obuf *b, size_t need) {
  if (b->oom) return 0;
  if (b->len + need <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + need) {
    if (cap > SIZE_MAX / 2) {
      b->oom = 1;
      return 0;
    }
    cap *= 2;
  }
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p, b->cap = cap;
  return 1;
}

static inline void put(obuf *b, const char *s, size_t n) {
  if (n && grow(b, n)) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
  }
}

/* Writes the decimal digits of u (backwards into the end of tmp); returns
 * the start. */
static inline char *utoa_end(uint64_t u, char *end) {
  do {
    *--end = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  return end;
}

static inline void put_i64(obuf *b, int64_t v) {
  char tmp[24], *end = tmp + sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  char *s = utoa_end(u, end);
  if (v < 0) *--s = '-';
  put(b, s, (size_t)(end - s));
}

/* ns as µs with up to three decimals, trailing zeros dropped: 1234567 ->
 * "1234.567", 1500 -> "1.5", 2000 -> "2". */
static inline void put_us(obuf *b, int64_t v) {
  char tmp[32], *end = tmp + sizeof tmp, *s = end;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  unsigned frac = (unsigned)(u % 1000);
  if (frac) {
    int digits = 3;
    while (frac % 10 == 0) frac /= 10, digits--;
    for (int d = 0; d < digits; d++) *--s = (char)('0' + frac % 10), frac /= 10;
    *--s = '.';
  }
  s = utoa_end(u / 1000, s);
  if (v < 0) *--s = '-';
  put(b, s, (size_t)(end - s));
}

/* s as a JSON string (quotes included): ", \\ and control characters
 * escaped -- C0, and also DEL and C1 (U+0080..U+009F), which JSON allows
 * raw but a terminal would obey; invalid UTF-8 bytes become U+FFFD so the
 * text stays valid. */
static void put_json_string(obuf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *us = (const unsigned char *)s;
  put(b, "\"", 1);
  size_t run = 0;   /* start of the pending plain run */
  for (size_t i = 0; i < n;) {
    unsigned char c = us[i];
    const char *esc = NULL;
    char u[6];
    size_t adv = 1, elen = 0;
    if (c == '"') esc = "\\\"", elen = 2;
    else if (c == '\\') esc = "\\\\", elen = 2;
    else if (c == '\n') esc = "\\n", elen = 2;
    else if (c == '\t') esc = "\\t", elen = 2;
    else if (c == '\r') esc = "\\r", elen = 2;
    else if (c >= 0x80 || c < 0x20 || c == 0x7f) {
      int k = nsl__terminal_safe(us + i, n - i, 0);
      if (k > 0) adv = (size_t)k;
      else if (k == -1 && c >= 0x80) esc = "\xef\xbf\xbd", elen = 3;   /* not UTF-8 */
      else {   /* C0, DEL, or C1 (its second byte is the code point) */
        unsigned cp = k == -2 ? us[i + 1] : c;
        u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0', u[4] = hex[cp >> 4], u[5] = hex[cp & 15];
        esc = u, elen = 6, adv = (size_t)-k;
      }
    }
    if (esc) {
      put(b, s + run, i - run);
      put(b, esc, elen);
      run = i + adv;
    }
    i += adv;
  }
  put(b, s + run, n - run);
  put(b, "\"", 1);
}

/* Shortest text of d that reads back as d (%.15g, else %.17g); NaN and
 * infinities as null. */
static void put_f64(obuf *b, double d) {
  if (isnan(d) || isinf(d)) {
    put(b, "null", 4);
    return;
  }
  /* Fast paths, without printf: values with at most 6 decimals.  r / 10^p
   * and the text "r with p decimals" are both the correctly rounded double
   * of the same rational, so the text reads back as d; trying p from 0 up
   * finds the shortest such text. */
  static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6};
  for (int p = 0; p <= 6; p++) {
    double scaled = d * pow10[p];
    if (!(fabs(scaled) < 9007199254740992.0)) break;   /* 2^53: r exact */
    double r = nearbyint(scaled);
    if (r != scaled || r / pow10[p] != d) continue;
    int64_t v = (int64_t)r;
    while (p > 0 && v % 10 == 0) v /= 10, p--;   /* d * 10^p may miss by a rounding: same rational */
    if (p == 0) {
      put_i64(b, v);
      return;
    }
    char tmp[32], *end = tmp + sizeof tmp, *s = end;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    for (int k = 0; k < p; k++) *--s = (char)('0' + u % 10), u /= 10;
    *--s = '.';
    s = utoa_end(u, s);
    if (v < 0 || (v == 0 && signbit(d))) *--s = '-';
    put(b, s, (size_t)(end - s));
    return;
  }
  char tmp[40];
  int n = snprintf(tmp, sizeof tmp, "%.15g", d);
  if (strtod(tmp, NULL) != d) n = snprintf(tmp, sizeof tmp, "%.17g", d);
  put(b, tmp, (size_t)n);
}

/* Ends the text in b with a NUL and hands it to *out (b keeps nothing), or
 * reports running out of memory (also when other_oom: a side buffer failed). */
static nsl_status hand_over(obuf *b, int other_oom, char **out, size_t *len, const char *what, int64_t rows,
                            nsl_error *err) {
  if (!grow(b, 1) || other_oom)
    return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory writing %lld rows", what, (long long)rows);
  b->p[b->len] = '\0';
  *out = b->p, *len = b->len;
  b->p = NULL;
  return NSL_OK;
}

/* One template piece: literal text, then (unless last) a conversion of a
 * column. */
typedef struct piece {
  const char *lit;
  size_t litlen;
  char conv;   /* 's', 'S', 'd', 't', 'f' or 0 for the tail */
  const nsl_column *col;
  /* 's': the escaped text of each dictionary id, built on first use */
  size_t *off;   /* offset + 1 into cache of id (0: not yet) */
  size_t *olen;
} piece;

/* Formats rows [0, n) of the columns cols[0..ncols) as text: for each row
 * the template fmt with its conversions replaced by values of the next
 * column in order, rows joined by sep (NULL: "\n").  Conversions:
 *   %s  a string column as a JSON string ("..." with escapes; invalid UTF-8
 *       as U+FFFD); NULL as null
 *   %S  the same, but NULL as "" (for fields that must be strings)
 *   %d  an integer column (I64, I32, BOOL as 0/1) in decimal; NULL as null
 *   %t  an integer ns column as µs with up to three decimals (1234.567);
 *       NULL as null
 *   %f  a numeric column as the shortest decimal that reads back; NaN,
 *       infinities and NULL as null
 *   %%  a literal %
 * Every conversion needs its own column (equal lengths); mask (NULL, or a
 * bool column of the same length) keeps the rows where it is 1.  *out is
 * malloc'ed, NUL-terminated, *len excludes the NUL; caller frees.  Errors:
 * NSL_ERR_ARG (bad template, wrong column count or type), NSL_ERR_NOMEM. */
nsl_status nsl__format_rows(const char *fmt, const nsl_column *const *cols, int ncols, const nsl_column *mask,
                           const char *sep, char **out, size_t *len, nsl_error *err) {
  return nsl__format_rows_range(fmt, cols, ncols, mask, sep, 0, INT64_MAX, out, len, err);
}

nsl_status nsl__format_rows_range(const char *fmt, const nsl_column *const *cols, int ncols, const nsl_column *mask,
                                 const char *sep, int64_t first, int64_t count, char **out, size_t *len,
                                 nsl_error *err) {
  const char *what = "format rows";
  if (!fmt || !out || !len || ncols < 0 || (ncols > 0 && !cols))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: missing template, columns or output", what);
  *out = NULL, *len = 0;
  if (!sep) sep = "\n";
  size_t seplen = strlen(sep), fl = strlen(fmt);
  /* count conversions */
  int nconv = 0;
  for (size_t i = 0; i < fl; i++)
    if (fmt[i] == '%') {
      char c = i + 1 < fl ? fmt[i + 1] : 0;
      if (c == '%') i++;
      else if (c == 's' || c == 'S' || c == 'd' || c == 't' || c == 'f') nconv++, i++;
      else return nsl_error_set(err, NSL_ERR_ARG, "%s: unknown conversion '%%%c' in the template", what, c ? c : ' ');
    }
  if (nconv != ncols)
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the template has %d conversions but %d columns were given", what,
                         nconv, ncols);
  int64_t n = ncols > 0 ? cols[0]->len : (mask ? mask->len : 0);
  if (mask && (mask->type != NSL_BOOL || mask->len != n))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: the mask must be a bool column of %lld rows", what, (long long)n);
  piece *pc = calloc((size_t)nconv + 1, sizeof *pc);
  char *lits = malloc(fl + 1);   /* literal text with %% unescaped */
  obuf cache = {0}, b = {0};
  nsl_status rc = NSL_OK;
  if (!pc || !lits) {
    rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", what);
    goto done;
  }
  size_t lp = 0;
  int k = 0;
  pc[0].lit = lits;
  for (size_t i = 0; i < fl; i++) {
    if (fmt[i] != '%') {
      lits[lp++] = fmt[i];
      continue;
    }
    if (fmt[i + 1] == '%') {
      lits[lp++] = '%';
      i++;
      continue;
    }
    piece *p = &pc[k];
    p->litlen = (size_t)(lits + lp - p->lit);
    p->conv = fmt[++i];
    p->col = cols[k];
    const nsl_column *c = p->col;
    if (!c || c->len != n) {
      rc = nsl_error_set(err, NSL_ERR_ARG, "%s: column %d has %lld rows, not %lld", what, k + 1,
                         (long long)(c ? c->len : -1), (long long)n);
      goto done;
    }
    int ok = p->conv == 's' || p->conv == 'S' ? c->type == NSL_STR
             : p->conv == 'f' ? c->type != NSL_STR
             : p->conv == 't' ? c->type == NSL_I64 || c->type == NSL_I32
                              : nsl__is_int(c->type);
    if (!ok) {
      rc = nsl_error_set(err, NSL_ERR_ARG, "%s: %%%c cannot format column %d of type %s", what, p->conv, k + 1,
                         nsl_type_name(c->type));
      goto done;
    }
    if (p->conv == 's' || p->conv == 'S') {
      size_t nd = (size_t)(c->dict ? nsl_dict_size(c->dict) : 0);
      p->off = calloc(nd ? nd : 1, sizeof *p->off);
      p->olen = calloc(nd ? nd : 1, sizeof *p->olen);
      if (!p->off || !p->olen) {
        rc = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", what);
        goto done;
      }
    }
    k++;
    pc[k].lit = lits + lp;
  }
  pc[k].litlen = (size_t)(lits + lp - pc[k].lit);
  const uint8_t *mk = mask ? nsl_bool(mask) : NULL;
  int any = 0;
  int64_t done_rows = 0, lo = first < 0 ? 0 : first > n ? n : first, hi = count < 0 || count > n - lo ? n : lo + count;
  for (int64_t r = lo; r < hi; r++) {
    if (mk && !mk[r]) continue;
    if (any) put(&b, sep, seplen);
    any = 1;
    if (++done_rows == 512 && hi - r > 1024) {   /* size the text once from the first rows: no doubling copies */
      double per_row = (double)b.len / 511.0 * 1.08, kept = (double)done_rows / (double)(r - lo + 1);
      double want = per_row * (double)(hi - r) * kept + 4096.0;
      if (want < (double)(SIZE_MAX / 4)) grow(&b, (size_t)want);
    }
    for (int j = 0; j <= nconv; j++) {
      piece *p = &pc[j];
      put(&b, p->lit, p->litlen);
      if (j == nconv) break;
      const nsl_column *c = p->col;
      int null = 0;
      switch (p->conv) {
      case 's':
      case 'S': {
        int32_t id = nsl_i32(c)[r];
        const char *s = id >= 0 && c->dict ? nsl_dict_str(c->dict, id) : NULL;
        if (!s) {
          if (p->conv == 's') put(&b, "null", 4);
          else put(&b, "\"\"", 2);
          break;
        }
        if (!p->off[id]) {   /* escape each distinct string once */
          size_t at = cache.len;
          put_json_string(&cache, s, nsl_dict_strlen(c->dict, id));
          p->off[id] = at + 1;
          p->olen[id] = cache.len - at;
        }
        if (!cache.oom) put(&b, cache.p + p->off[id] - 1, p->olen[id]);
        break;
      }
      case 'd': {
        int64_t v = nsl__int_at(c, r, &null);
        if (null) put(&b, "null", 4);
        else put_i64(&b, v);
        break;
      }
      case 't': {
        int64_t v = nsl__int_at(c, r, &null);
        if (null) put(&b, "null", 4);
        else put_us(&b, v);
        break;
      }
      default: {
        double d = c->type == NSL_F64 ? nsl_f64(c)[r] : (double)nsl__int_at(c, r, &null);
        if (null) put(&b, "null", 4);
        else put_f64(&b, d);
        break;
      }
      }
    }
    if (b.oom || cache.oom) break;
  }
  rc = hand_over(&b, cache.oom, out, len, what, n, err);
done:
  for (int j = 0; pc && j < nconv; j++) {
    free(pc[j].off);
    free(pc[j].olen);
  }
  free(pc);
  free(lits);
  free(cache.p);
  free(b.p);
  return rc;
}

/* s as one CSV field (RFC 4180): quoted, with quotes doubled, when it holds
 * a comma, a quote or a line feed; as it is otherwise.  RFC 4180 has no
 * escapes and no room for control characters: those a terminal would obey
 * (ESC, CR, DEL, C1, bytes that are not UTF-8) are written as visible \\xNN
 * escapes (nsl__text_add_printable), tab and line feed as they are. */
static void put_csv_string(obuf *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  int quote = 0, unsafe = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] == ',' || s[i] == '"' || s[i] == '\n') quote = 1;
    int k = u[i] < 0x20 || u[i] >= 0x7f ? nsl__terminal_safe(u + i, n - i, 1) : 1;
    if (k < 0) unsafe = 1;
    i += (size_t)(k < 0 ? -k : k);
  }
  nsl__text esc = {0};
  if (unsafe) {
    nsl__text_add_printable(&esc, s, n, 1);
    if (esc.oom) {
      b->oom = 1;
      return;
    }
    s = esc.s, n = esc.len;
  }
  if (!quote) {
    put(b, s, n);
    free(esc.s);
    return;
  }
  put(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '"') {
      put(b, s + run, i + 1 - run);   /* through the quote, which is then doubled */
      run = i;
    }
  put(b, s + run, n - run);
  put(b, "\"", 1);
  free(esc.s);
}

/* Value r of column c as a CSV field or JSON value (NULL: empty / null). */
static void put_cell(obuf *b, const nsl_column *c, int64_t r, nsl__text_format f) {
  int null = 0;
  switch (c->type) {
  case NSL_STR: {
    int32_t id = nsl_i32(c)[r];
    const char *s = id >= 0 && c->dict ? nsl_dict_str(c->dict, id) : NULL;
    if (!s) null = 1;
    else if (f == NSL_TEXT_CSV) put_csv_string(b, s, nsl_dict_strlen(c->dict, id));
    else put_json_string(b, s, nsl_dict_strlen(c->dict, id));
    break;
  }
  case NSL_F64: {
    double d = nsl_f64(c)[r];
    if (isnan(d) || isinf(d)) null = 1;   /* JSON has no NaN or infinity */
    else put_f64(b, d);
    break;
  }
  case NSL_BOOL: {
    uint8_t v = nsl_bool(c)[r];
    if (v > 1) null = 1;
    else if (v) put(b, "true", 4);
    else put(b, "false", 5);
    break;
  }
  default: {
    int64_t v = nsl__int_at(c, r, &null);
    if (!null) put_i64(b, v);
    break;
  }
  }
  if (null && f == NSL_TEXT_JSON) put(b, "null", 4);
}

/* A whole table as CSV (a header row of the names, then one line per row,
 * "\n" line ends) or as JSON (an array of one object per row, keys in
 * column order, one row per line).  NULL is an empty field in CSV and null
 * in JSON; NaN and infinities count as NULL; strings keep all their text
 * (JSON: escaped, invalid UTF-8 as U+FFFD).  *out is malloc'ed and
 * NUL-terminated; NSL_ERR_ARG (columns of unequal length), NSL_ERR_NOMEM. */
nsl_status nsl__format_table(const char *const *names, const nsl_column *const *cols, int ncols, int64_t nrows,
                            nsl__text_format f, char **out, size_t *len, nsl_error *err) {
  const char *what = "format table";
  if (!out || !len || ncols < 0 || (ncols > 0 && (!cols || !names)))
    return nsl_error_set(err, NSL_ERR_ARG, "%s: missing columns or output", what);
  *out = NULL, *len = 0;
  for (int k = 0; k < ncols; k++)
    if (!cols[k] || cols[k]->len != nrows)
      return nsl_error_set(err, NSL_ERR_ARG, "%s: column '%s' has %lld rows, not %lld", what, names[k],
                           (long long)(cols[k] ? cols[k]->len : -1), (long long)nrows);
  obuf keys = {0}, b = {0};   /* JSON: the escaped keys, "name": each */
  size_t *koff = calloc((size_t)ncols + 1, sizeof *koff);
  nsl_status rc = NSL_OK;
  if (!koff) return nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory", what);
  for (int k = 0; k < ncols; k++) {
    if (f == NSL_TEXT_CSV) {
      if (k) put(&b, ",", 1);
      put_csv_string(&b, names[k], strlen(names[k]));
    } else {
      put(&keys, k ? "," : "{", 1);
      put_json_string(&keys, names[k], strlen(names[k]));
      put(&keys, ":", 1);
    }
    koff[k + 1] = keys.len;
  }
  put(&b, f == NSL_TEXT_CSV ? "\n" : "[", 1);
  for (int64_t r = 0; r < nrows && !b.oom && !keys.oom; r++) {
    if (r == 512 && nrows > 1024) {   /* size the text once from the first rows */
      double want = (double)b.len / 512.0 * 1.08 * (double)nrows + 4096.0;
      if (want < (double)(SIZE_MAX / 4)) grow(&b, (size_t)want);
    }
    if (f == NSL_TEXT_JSON) put(&b, r ? ",\n" : "\n", r ? 2 : 1);
    for (int k = 0; k < ncols; k++) {
      if (f == NSL_TEXT_CSV) {
        if (k) put(&b, ",", 1);
      } else put(&b, keys.p + koff[k], koff[k + 1] - koff[k]);
      put_cell(&b, cols[k], r, f);
    }
    if (f == NSL_TEXT_CSV) put(&b, "\n", 1);
    else put(&b, ncols ? "}" : "{}", ncols ? 1 : 2);
  }
  if (f == NSL_TEXT_JSON) put(&b, nrows ? "\n]" : "]", nrows ? 2 : 1);
  rc = hand_over(&b, keys.oom, out, len, what, nrows, err);
  free(koff);
  free(keys.p);
  free(b.p);
  return rc;
}
