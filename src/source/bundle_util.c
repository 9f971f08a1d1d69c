/*
 * bundle_util.c -- what the bundle reader, writer and combiner share (see
 * bundle_internal.h): the member-name rules, names made printable for
 * messages, sizes and times as text, sha256 digests in hex.
 */
#include "source/bundle_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Length of the UTF-8 sequence at s (1..4), or 0 when it is invalid
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static int utf8_seq(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  if (c < 0xC2)
    return 0;
  if (c < 0xE0)
    return (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c < 0xF0) {
    if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
      return 0;
    if (c == 0xE0 && s[1] < 0xA0)
      return 0;   /* overlong */
    if (c == 0xED && s[1] >= 0xA0)
      return 0;   /* surrogate */
    return 3;
  }
  if (c < 0xF5) {
    if ((s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
      return 0;
    if (c == 0xF0 && s[1] < 0x90)
      return 0;   /* overlong */
    if (c == 0xF4 && s[1] >= 0x90)
      return 0;   /* above U+10FFFF */
    return 4;
  }
  return 0;
}

const char *nsl__bundle_name_problem(const char *name) {
  if (name == NULL || name[0] == '\0')
    return "has an empty name";
  size_t len = strlen(name);
  if (len > NSL__BUNDLE_NAME_MAX)
    return "has a name longer than 4096 bytes";
  if (name[0] == '/')
    return "is an absolute path";
  if (((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')) && name[1] == ':')
    return "starts with a drive letter (an absolute path)";
  for (const unsigned char *p = (const unsigned char *)name; *p;) {
    if (*p == '\\')
      return "contains a backslash (a path separator elsewhere)";
    if (*p < 0x20 || *p == 0x7F)
      return "contains a control character";
    int n = utf8_seq(p);
    if (n == 0)
      return "is not valid UTF-8";
    p += n;
  }
  /* Components: none empty, none "." or "..". */
  const char *c = name;
  for (;;) {
    const char *slash = strchr(c, '/');
    size_t n = slash ? (size_t)(slash - c) : strlen(c);
    if (n == 0)
      return "has an empty path component ('//' or a trailing '/')";
    if (n == 1 && c[0] == '.')
      return "has a '.' component";
    if (n == 2 && c[0] == '.' && c[1] == '.')
      return "has a '..' component (it would point outside the bundle)";
    if (slash == NULL)
      break;
    c = slash + 1;
  }
  return NULL;
}

void nsl__printable(const char *name, char *out, size_t cap) {
  size_t o = 0;
  if (cap < 4) {
    if (cap)
      out[0] = '\0';
    return;
  }
  for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p;) {
    int n = utf8_seq(p);
    if (n == 0 || *p < 0x20 || *p == 0x7F)
      n = 1;
    if (o + (size_t)n + 4 > cap) {
      memcpy(out + o, "...", 4);
      return;
    }
    if (n == 1 && (*p < 0x20 || *p >= 0x7F))
      out[o++] = '?';
    else
      memcpy(out + o, p, (size_t)n), o += (size_t)n;
    p += n;
  }
  out[o] = '\0';
}

nsl_status nsl_bundle_check_name(const char *name, nsl_error *err) {
  const char *problem = nsl__bundle_name_problem(name);
  if (problem) {
    char shown[300];
    nsl__printable(name, shown, sizeof shown);
    return nsl_error_set(err, NSL_ERR_ARG, "member name '%s' %s", shown, problem);
  }
  return NSL_OK;
}

void nsl__fmt_bytes(uint64_t n, char out[32]) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) {
    snprintf(out, 32, "%llu bytes", (unsigned long long)n);
    return;
  }
  double v = (double)n / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    u++;
  }
  snprintf(out, 32, "%.1f %s", v, units[u]);
}

void nsl__sha256_hex(struct sha256_ctx *ctx, char out[65]) {
  static const char hex[] = "0123456789abcdef";
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_digest(ctx, sizeof d, d);
  for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[64] = '\0';
}

int nsl__bundle_is_precompressed(const char *name) {
  static const char *const ext[] = {".xz",  ".zst", ".zstd", ".gz",  ".tgz", ".bz2",  ".lz4",
                                    ".lzma", ".zip", ".7z",  ".png", ".jpg", ".jpeg", ".gif",
                                    ".webp", ".parquet", NULL};
  size_t len = strlen(name);
  for (int i = 0; ext[i]; i++) {
    size_t n = strlen(ext[i]);
    if (len > n && strcasecmp(name + len - n, ext[i]) == 0)
      return 1;
  }
  return 0;
}

void nsl__iso8601_utc(int64_t t, char out[32]) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (gmtime_r(&tt, &tm) == NULL || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(out, 32, "1970-01-01T00:00:00Z");
}


int nsl__cmp_str_ptr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

uint64_t nsl__aligned_pad(const unsigned char lead[8], uint64_t size) {
  uint64_t pad = 0;
  for (int i = 7; i >= 0; i--)
    pad = pad << 8 | lead[i];
  return size >= 16 && pad >= 8 && pad < 16 ? pad : 0;
}
