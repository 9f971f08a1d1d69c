/* regex.c -- regular expressions in the syntax of Python's `re` module (the
 * one kernel-classification maps such as vLLM's gputrc2graph JSON files are
 * written in), run by the C library's POSIX extended regex engine.
 *
 * Only whether a pattern matches somewhere in a string (re.search) is
 * answered, so the differences that matter for captures and match extents
 * (leftmost-longest vs. leftmost-first, lazy vs. greedy quantifiers) do not
 * change any answer.  The pattern is translated once:
 *   \d \D \w \W \s \S           -> bracket expressions ([0-9], [^[:alnum:]_], ...)
 *   \A \Z                       -> ^ $
 *   \t \n \r \f \v \xHH \\ \.   -> the literal character
 *   (?:...) (?P<name>...)       -> (...)
 *   (?i) at the start           -> case-insensitive matching
 *   *? +? ?? {m,n}? *+ ...      -> the greedy quantifier
 *   { not starting a quantifier -> a literal {
 *   [...] sets                  -> POSIX sets (escapes resolved, ']' first, '-' last)
 * Lookarounds, backreferences and conditionals have no POSIX equivalent and
 * are refused with an error that names the construct. */
#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "nsl/nsl.h"

struct nsl_regex {
  regex_t re;
  char *pattern;     /* as given */
  char *posix;       /* the translation */
};

/* A growable output string (core/text.h). */
typedef nsl__text sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n) { nsl__text_addn(b, s, n); }
static void sb_puts(sbuf *b, const char *s) { nsl__text_add(b, s); }
static void sb_putc(sbuf *b, char c) { sb_putn(b, &c, 1); }

/* Characters with a meaning in POSIX EREs, escaped when meant literally. */
static int ere_special(int c) { return c != '\0' && strchr(".[]()*+?{}|^$\\", c) != NULL; }

static void put_literal(sbuf *b, int c) {
  if (ere_special(c)) sb_putc(b, '\\');
  sb_putc(b, (char)c);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The character a single-character escape stands for (\t, \x41, \.), or
 * -1 when p (just after the backslash) is not one; *used gets its length. */
static int escaped_char(const char *p, int *used) {
  *used = 1;
  switch (*p) {
  case 't': return '\t';
  case 'n': return '\n';
  case 'r': return '\r';
  case 'f': return '\f';
  case 'v': return '\v';
  case 'a': return '\a';
  case '0': return '\0';
  case 'x':
    if (hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
      *used = 3;
      return hexval(p[1]) * 16 + hexval(p[2]);
    }
    return -1;
  default:
    if (*p && !isalnum((unsigned char)*p)) return (unsigned char)*p;   /* \. \\ \- \] ... */
    return -1;
  }
}

/* Length of a valid Python quantifier {m}, {m,}, {,n}, {m,n} at p (which
 * points at '{'), or 0; *lo_missing says the lower bound was left out. */
static size_t quantifier_len(const char *p, int *lo_missing) {
  const char *q = p + 1;
  size_t lo = 0, hi = 0;
  while (isdigit((unsigned char)q[lo])) lo++;
  q += lo;
  if (*q == '}') return lo ? (size_t)(q - p + 1) : 0;
  if (*q != ',') return 0;
  q++;
  while (isdigit((unsigned char)q[hi])) hi++;
  q += hi;
  if (*q != '}') return 0;
  *lo_missing = lo == 0;
  return (size_t)(q - p + 1);
}

/* Translates the set starting at p (just after '['); returns the position
 * after its closing ']', or NULL with err filled. */
#define MAX_REPEAT_COUNT 255
/* Nested counted repetitions multiply ((a{255}){255}){255} copies the
 * pattern 16 M times in glibc's compiler; the product of every counted
 * repetition's largest count is bounded (a conservative bound: side-by-side
 * counts are multiplied too). */
#define MAX_REPEAT_PRODUCT 65536

/* Whether a quantifier starts at p. */
static int starts_quantifier(const char *p) {
  int lo_missing;
  return *p == '*' || *p == '+' || *p == '?' || (*p == '{' && quantifier_len(p, &lo_missing) > 0);
}

/* Python refuses a quantifier after a quantifier ("multiple repeat"); the C
 * library would take one, and a run of them (a+++++...) makes its compiler
 * take minutes. */
static nsl_status multiple_repeat(const char *pattern, nsl_error *err) {
  return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': multiple repeat (a quantifier after a quantifier)",
                       pattern);
}

static const char *translate_set(const char *pattern, const char *p, sbuf *out, nsl_error *err) {
  int negate = 0;
  if (*p == '^') {
    negate = 1;
    p++;
  }
  uint8_t lit[256] = {0};
  sbuf classes = {0};
  int nitems = 0;
  int first = 1;
  for (;;) {
    if (*p == '\0') {
      nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': unterminated character set", pattern);
      goto fail;
    }
    if (*p == ']' && !first) {
      p++;
      break;
    }
    first = 0;
    int c, used = 1;
    if (*p == '\\') {
      const char *cls = NULL;
      switch (p[1]) {
      case 'd': cls = "[:digit:]"; break;
      case 'w': cls = "[:alnum:]_"; break;
      case 's': cls = "[:space:]"; break;
      case 'D': case 'W': case 'S':
        nsl_error_set(err, NSL_ERR_ARG,
                      "regular expression '%s': \\%c inside a character set is not supported", pattern, p[1]);
        goto fail;
      default: break;
      }
      if (cls) {
        sb_puts(&classes, cls);
        nitems++;
        p += 2;
        continue;
      }
      c = escaped_char(p + 1, &used);
      if (c < 0) {
        nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': unsupported escape \\%c in a character set",
                      pattern, p[1] ? p[1] : ' ');
        goto fail;
      }
      used += 1;
    } else c = (unsigned char)*p;
    p += used;
    /* a range c-d? ('-' before ']' is a literal '-') */
    if (p[0] == '-' && p[1] != ']' && p[1] != '\0') {
      int d, dused = 1;
      const char *q = p + 1;
      if (*q == '\\') {
        d = escaped_char(q + 1, &dused);
        if (d < 0) {
          nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': bad range end in a character set", pattern);
          goto fail;
        }
        dused += 1;
      } else d = (unsigned char)*q;
      if (d < c) {
        nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': bad character range %c-%c", pattern, c, d);
        goto fail;
      }
      /* POSIX ranges depend on the collation order; list the bytes instead. */
      for (int x = c; x <= d; x++) lit[x] = 1;
      nitems++;
      p = q + dused;
      continue;
    }
    lit[c] = 1;
    nitems++;
  }
  if (nitems == 0) {   /* cannot happen: ']' first is a literal */
    nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': empty character set", pattern);
    goto fail;
  }
  /* Emit: ']' first, '^' not first, '-' last, NUL impossible (regexec
   * works on C strings). */
  int only_caret = lit['^'] && classes.len == 0;
  for (int x = 1; x < 256 && only_caret; x++)
    if (x != '^' && lit[x]) only_caret = 0;
  if (only_caret && !negate) {
    sb_puts(out, "\\^");
  } else {
    sb_putc(out, '[');
    if (negate) sb_putc(out, '^');
    int wrote = 0;
    if (lit[']']) {
      sb_putc(out, ']');
      wrote = 1;
    }
    for (int x = 1; x < 256; x++) {
      if (!lit[x] || x == ']' || x == '-' || x == '^') continue;
      sb_putc(out, (char)x);
      wrote = 1;
    }
    if (classes.len) {
      /* classes.s holds e.g. "[:digit:][:alnum:]_" */
      sb_puts(out, classes.s);
      wrote = 1;
    }
    if (lit['^']) {
      if (!wrote) sb_puts(out, "[.^.]");   /* a lone '^' after '[^' */
      else sb_putc(out, '^');
    }
    if (lit['-']) sb_putc(out, '-');
    sb_putc(out, ']');
  }
  free(classes.s);
  return p;
fail:
  free(classes.s);
  return NULL;
}

/* Translates a Python pattern into a POSIX ERE in out; *icase is set by a
 * leading (?i).  NSL_OK or NSL_ERR_ARG (err names the construct). */
static nsl_status translate(const char *pattern, sbuf *out, int *icase, nsl_error *err) {
  const char *p = pattern;
  int depth = 0;
  uint64_t copies = 1;   /* product of the counted repetitions' largest counts */
  while (*p) {
    int c = (unsigned char)*p;
    if (c == '\\') {
      int n = (unsigned char)p[1];
      const char *cls = NULL;
      switch (n) {
      case 'd': cls = "[0-9]"; break;
      case 'D': cls = "[^0-9]"; break;
      case 'w': cls = "[[:alnum:]_]"; break;
      case 'W': cls = "[^[:alnum:]_]"; break;
      case 's': cls = "[[:space:]]"; break;
      case 'S': cls = "[^[:space:]]"; break;
      case 'A': cls = "^"; break;
      case 'Z': cls = "$"; break;
      case 'b': cls = "\\b"; break;   /* word boundaries: a GNU extension of glibc's regcomp */
      case 'B': cls = "\\B"; break;
      default: break;
      }
      if (cls) {
        sb_puts(out, cls);
        p += 2;
        continue;
      }
      if (n >= '1' && n <= '9')
        return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': backreferences (\\%c) are not supported",
                             pattern, n);
      int used;
      int lc = escaped_char(p + 1, &used);
      if (lc < 0)
        return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': unsupported escape \\%c", pattern,
                             n ? n : ' ');
      if (lc == '\0')
        return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': a NUL character cannot be matched", pattern);
      put_literal(out, lc);
      p += 1 + used;
      continue;
    }
    if (c == '[') {
      p = translate_set(pattern, p + 1, out, err);
      if (!p) return err ? err->code : NSL_ERR_ARG;
      continue;
    }
    if (c == '(') {
      if (p[1] == '?') {
        const char *q = p + 2;
        if (*q == ':') {
          sb_putc(out, '(');
          depth++;
          p = q + 1;
          continue;
        }
        if (*q == 'P' && q[1] == '<') {
          const char *close = strchr(q, '>');
          if (!close)
            return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': unterminated group name", pattern);
          sb_putc(out, '(');
          depth++;
          p = close + 1;
          continue;
        }
        if (*q == 'i' && q[1] == ')' && p == pattern) {
          *icase = 1;
          p = q + 2;
          continue;
        }
        if (*q == '#') {   /* comment group */
          const char *close = strchr(q, ')');
          if (!close)
            return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': unterminated comment", pattern);
          p = close + 1;
          continue;
        }
        const char *what = (*q == '=' || *q == '!') ? "lookahead"
                           : (*q == '<' && (q[1] == '=' || q[1] == '!')) ? "lookbehind"
                           : (*q == 'P' && q[1] == '=') ? "named backreference"
                           : (*q == '(') ? "conditional"
                           : "inline flag (only a leading (?i) is)";
        return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': %s groups are not supported", pattern, what);
      }
      sb_putc(out, '(');
      depth++;
      p++;
      continue;
    }
    if (c == ')') {
      if (depth == 0)
        return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': unbalanced parenthesis", pattern);
      depth--;
      sb_putc(out, ')');
      p++;
      continue;
    }
    if (c == '{') {
      int lo_missing = 0;
      size_t n = quantifier_len(p, &lo_missing);
      if (n == 0) {
        sb_puts(out, "\\{");
        p++;
        continue;
      }
      for (const char *d = p + 1; d < p + n; d++)   /* every count within POSIX's smallest RE_DUP_MAX */
        if (isdigit((unsigned char)*d) && strtol(d, NULL, 10) > MAX_REPEAT_COUNT)
          return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': a repetition count above %d (the C "
                               "library's regex compiler would copy the pattern that many times)", pattern,
                               MAX_REPEAT_COUNT);
      long most = 1;
      for (const char *d = p + 1; d < p + n; d++)
        if (isdigit((unsigned char)*d) && (d == p + 1 || !isdigit((unsigned char)d[-1]))) {
          long v = strtol(d, NULL, 10);
          if (v > most) most = v;
        }
      copies *= (uint64_t)most;
      if (copies > MAX_REPEAT_PRODUCT)
        return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': counted repetitions whose counts multiply "
                             "above %d (the C library's regex compiler would copy the pattern that many times)",
                             pattern, MAX_REPEAT_PRODUCT);
      sb_putc(out, '{');
      if (lo_missing) sb_putc(out, '0');
      sb_putn(out, p + 1, n - 1);
      p += n;
      if (*p == '?' || *p == '+') p++;   /* lazy / possessive: same matches */
      if (starts_quantifier(p)) return multiple_repeat(pattern, err);
      continue;
    }
    if (c == '}') {
      sb_puts(out, "\\}");
      p++;
      continue;
    }
    if (c == '*' || c == '+' || c == '?') {
      sb_putc(out, (char)c);
      p++;
      if (*p == '?' || *p == '+') p++;   /* *? +? ?? *+ ++ ?+ */
      if (starts_quantifier(p)) return multiple_repeat(pattern, err);
      continue;
    }
    sb_putc(out, (char)c);   /* . ^ $ | and ordinary characters */
    p++;
  }
  if (depth != 0)
    return nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': missing ')'", pattern);
  if (out->oom) return nsl_error_set(err, NSL_ERR_NOMEM, "regular expression '%s': out of memory", pattern);
  if (!out->s) sb_puts(out, "");
  return out->oom ? nsl_error_set(err, NSL_ERR_NOMEM, "out of memory") : NSL_OK;
}

nsl_status nsl_regex_compile(nsl_regex **out, const char *pattern, int flags, nsl_error *err) {
  *out = NULL;
  if (!pattern) return nsl_error_set(err, NSL_ERR_ARG, "regular expression: no pattern");
  nsl_regex *r = calloc(1, sizeof *r);
  if (!r) return nsl_error_set(err, NSL_ERR_NOMEM, "regular expression '%s': out of memory", pattern);
  sbuf b = {0};
  int icase = (flags & NSL_REGEX_ICASE) != 0;
  nsl_status rc = translate(pattern, &b, &icase, err);
  if (rc != NSL_OK) {
    free(b.s);
    free(r);
    return rc;
  }
  r->pattern = strdup(pattern);
  r->posix = b.s;
  if (!r->pattern) {
    free(r->posix);
    free(r);
    return nsl_error_set(err, NSL_ERR_NOMEM, "regular expression '%s': out of memory", pattern);
  }
  int cflags = REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0);
  int e = regcomp(&r->re, r->posix, cflags);
  if (e != 0) {
    char msg[200];
    regerror(e, &r->re, msg, sizeof msg);
    nsl_error_set(err, NSL_ERR_ARG, "regular expression '%s': %s", pattern, msg);
    free(r->pattern);
    free(r->posix);
    free(r);
    return NSL_ERR_ARG;
  }
  *out = r;
  return NSL_OK;
}

int nsl_regex_search(const nsl_regex *re, const char *s) {
  if (!re || !s) return 0;
  return regexec(&re->re, s, 0, NULL, 0) == 0;
}

const char *nsl_regex_posix(const nsl_regex *re) { return re ? re->posix : NULL; }

void nsl_regex_free(nsl_regex *re) {
  if (!re) return;
  regfree(&re->re);
  free(re->pattern);
  free(re->posix);
  free(re);
}

nsl_column *nsl_column_regex(const nsl_column *c, const nsl_regex *re, nsl_error *err) {
  if (!c || !re || c->type != NSL_STR) {
    nsl_error_set(err, NSL_ERR_ARG, "regex mask: need a string column, got %s",
                  c ? nsl_type_name(c->type) : "nothing");
    return NULL;
  }
  int32_t nd = nsl_dict_size(c->dict);
  nsl_column *m = nsl_column_new(NSL_BOOL, c->len, NULL);
  uint8_t *seen = calloc((size_t)nd + 1, 1);   /* 0 unknown, 1 no, 2 yes */
  if (!m || !seen) {
    nsl_column_release(m);
    free(seen);
    nsl_error_set(err, NSL_ERR_NOMEM, "regex mask: out of memory for %lld rows", (long long)c->len);
    return NULL;
  }
  const int32_t *v = nsl_i32(c);
  uint8_t *o = nsl_bool(m);
  for (int64_t i = 0; i < c->len; i++) {
    int32_t id = v[i];
    if (id < 0 || id >= nd) continue;   /* NULL: no match */
    if (!seen[id]) seen[id] = nsl_regex_search(re, nsl_dict_str(c->dict, id)) ? 2 : 1;
    o[i] = seen[id] == 2;
  }
  free(seen);
  return m;
}
