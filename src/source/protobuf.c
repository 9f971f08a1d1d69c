/*
 * protobuf.c -- protobuf wire-format decoding into C structs described by
 * field tables.  See protobuf.h.
 *
 * Wire format: a message is a sequence of (tag, value); tag = field number
 * << 3 | wire type, as a varint.  Wire types: 0 varint, 1 fixed 8 bytes,
 * 2 length-delimited (strings, bytes, nested messages, packed repeated
 * scalars), 5 fixed 4 bytes; 3/4 (groups) are obsolete.
 *
 * Each message is read in two passes over its own bytes: the first counts
 * the elements of every repeated field (nested messages are skipped by
 * length, so this is cheap), the second fills exactly-sized arrays.
 */
#include "source/protobuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/varint.h"

/* ---- arena ------------------------------------------------------------------ */

typedef struct arena_block {
  struct arena_block *next;
  size_t size, used;
  max_align_t data[];
} arena_block;

struct nsl_pb_arena {
  arena_block *head;
  size_t limit, used;
};

#define ARENA_BLOCK ((size_t)64 << 10)

nsl_pb_arena *nsl__pb_arena_new(size_t limit) {
  nsl_pb_arena *a = calloc(1, sizeof *a);
  if (a) a->limit = limit;
  return a;
}

void *nsl__pb_arena_alloc(nsl_pb_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  if (a->limit && (n > a->limit || a->used > a->limit - n)) return NULL;
  arena_block *b = a->head;
  if (!b || b->size - b->used < n) {
    size_t sz = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
    b = malloc(sizeof *b + sz);
    if (!b) return NULL;
    b->size = sz;
    b->used = 0;
    if (n > ARENA_BLOCK / 4 && a->head) {   /* a big block: keep filling the current one */
      b->next = a->head->next;
      a->head->next = b;
    } else {
      b->next = a->head;
      a->head = b;
    }
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  a->used += n;
  memset(p, 0, n);
  return p;
}

size_t nsl__pb_arena_used(const nsl_pb_arena *a) { return a->used; }

void nsl__pb_arena_free(nsl_pb_arena *a) {
  if (!a) return;
  arena_block *b = a->head;
  while (b) {
    arena_block *n = b->next;
    free(b);
    b = n;
  }
  free(a);
}

/* ---- raw wire format -------------------------------------------------------- */

int nsl__pb_read_varint(nsl_pb_reader *r, uint64_t *v) { return nsl__varint_get(&r->p, r->end, v); }

int nsl__pb_read_tag(nsl_pb_reader *r, uint32_t *number, int *wire) {
  uint64_t t;
  if (nsl__pb_read_varint(r, &t)) return -1;
  if ((t >> 3) == 0 || (t >> 3) > 0x1fffffff) return -1;   /* field numbers 1..2^29-1 */
  *number = (uint32_t)(t >> 3);
  *wire = (int)(t & 7);
  return 0;
}

int nsl__pb_skip(nsl_pb_reader *r, int wire) {
  uint64_t v;
  switch (wire) {
  case 0: return nsl__pb_read_varint(r, &v);
  case 1:
    if (r->end - r->p < 8) return -1;
    r->p += 8;
    return 0;
  case 2:
    if (nsl__pb_read_varint(r, &v) || v > (uint64_t)(r->end - r->p)) return -1;
    r->p += v;
    return 0;
  case 5:
    if (r->end - r->p < 4) return -1;
    r->p += 4;
    return 0;
  default: return -1;
  }
}

/* ---- tables --------------------------------------------------------------------- */

/* Bytes of one value of field f in its C struct (or array element). */
static size_t elem_size(const nsl_pb_field *f) {
  switch (f->kind) {
  case NSL_PB_INT64: return sizeof(int64_t);
  case NSL_PB_INT32:
  case NSL_PB_BOOL: return sizeof(int32_t);
  case NSL_PB_DOUBLE: return sizeof(double);
  case NSL_PB_FLOAT: return sizeof(float);
  case NSL_PB_STRING: return sizeof(const char *);
  case NSL_PB_BYTES: return sizeof(nsl_pb_bytes);
  case NSL_PB_MESSAGE: return f->msg ? f->msg->size : 0;
  }
  return 0;
}

/* nsl__pb_check_table, recursing into nested tables a bounded depth. */
static nsl_status check_table(const nsl_pb_msg *m, int depth, nsl_error *err) {
  if (depth > 32) return NSL_OK;   /* recursive tables: checked once is enough */
  if (m->nfields > NSL_PB_MAX_FIELDS)
    return nsl_error_set(err, NSL_ERR_ARG, "protobuf table %s has %d fields (max %d)", m->name,
                         m->nfields, NSL_PB_MAX_FIELDS);
  for (int i = 0; i < m->nfields; i++) {
    const nsl_pb_field *f = &m->fields[i];
    if (i > 0 && f->number <= m->fields[i - 1].number)
      return nsl_error_set(err, NSL_ERR_ARG, "protobuf table %s: field %u out of order", m->name,
                           f->number);
    if (f->kind > NSL_PB_MESSAGE || (f->kind == NSL_PB_MESSAGE) != (f->msg != NULL))
      return nsl_error_set(err, NSL_ERR_ARG, "protobuf table %s: field %u has a bad kind",
                           m->name, f->number);
    size_t end = f->offset + (f->repeated ? sizeof(void *) : elem_size(f));
    if (end > m->size || (f->repeated && f->count_offset + sizeof(int64_t) > m->size))
      return nsl_error_set(err, NSL_ERR_ARG, "protobuf table %s: field %u lies outside the struct",
                           m->name, f->number);
    if (f->kind == NSL_PB_MESSAGE && f->msg != m) {
      nsl_status st = check_table(f->msg, depth + 1, err);
      if (st != NSL_OK) return st;
    }
  }
  return NSL_OK;
}

nsl_status nsl__pb_check_table(const nsl_pb_msg *m, nsl_error *err) { return check_table(m, 0, err); }

void nsl__pb_init(const nsl_pb_msg *m, void *out) {
  for (int i = 0; i < m->nfields; i++) {
    const nsl_pb_field *f = &m->fields[i];
    if (f->repeated) continue;
    if (f->kind == NSL_PB_STRING) *(const char **)((char *)out + f->offset) = "";
    else if (f->kind == NSL_PB_MESSAGE) nsl__pb_init(f->msg, (char *)out + f->offset);
  }
}

static const nsl_pb_field *find_field(const nsl_pb_msg *m, uint32_t number) {
  int lo = 0, hi = m->nfields - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    uint32_t n = m->fields[mid].number;
    if (n == number) return &m->fields[mid];
    if (n < number) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

/* ---- decoding ---------------------------------------------------------------------- */

typedef struct pb_dec {
  nsl_pb_arena *a;
  const char *label;
  const uint8_t *base;   /* start of the whole input, for offsets in messages */
  nsl_error *err;
} pb_dec;

/* Fills the error: input, message, field, byte offset, what went wrong. */
static nsl_status dec_fail(pb_dec *d, nsl_status code, const nsl_pb_msg *m, uint32_t field,
                           const uint8_t *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
static nsl_status dec_fail(pb_dec *d, nsl_status code, const nsl_pb_msg *m, uint32_t field,
                           const uint8_t *at, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!field)
    return nsl_error_set(d->err, code, "protobuf '%s': %s (byte %lld): %s", d->label, m->name,
                         (long long)(at - d->base), msg);
  return nsl_error_set(d->err, code, "protobuf '%s': %s field %u (byte %lld): %s", d->label,
                       m->name, field, (long long)(at - d->base), msg);
}

/* The wire type a field of this kind must have when it is not packed. */
static int wire_of(int kind) {
  switch (kind) {
  case NSL_PB_INT64:
  case NSL_PB_INT32:
  case NSL_PB_BOOL: return 0;
  case NSL_PB_DOUBLE: return 1;
  case NSL_PB_FLOAT: return 5;
  default: return 2;
  }
}

/* Stores one scalar value read from r (wire type of the kind) at dst. */
static int read_scalar(nsl_pb_reader *r, int kind, void *dst) {
  uint64_t v;
  switch (kind) {
  case NSL_PB_INT64:
    if (nsl__pb_read_varint(r, &v)) return -1;
    *(int64_t *)dst = (int64_t)v;
    return 0;
  case NSL_PB_INT32:
    if (nsl__pb_read_varint(r, &v)) return -1;
    *(int32_t *)dst = (int32_t)(uint32_t)v;   /* protobuf semantics: truncate */
    return 0;
  case NSL_PB_BOOL:
    if (nsl__pb_read_varint(r, &v)) return -1;
    *(int32_t *)dst = v != 0;
    return 0;
  case NSL_PB_DOUBLE:
    if (r->end - r->p < 8) return -1;
    {
      uint64_t u = 0;
      for (int k = 7; k >= 0; k--) u = u << 8 | r->p[k];
      memcpy(dst, &u, 8);
    }
    r->p += 8;
    return 0;
  case NSL_PB_FLOAT:
    if (r->end - r->p < 4) return -1;
    {
      uint32_t u = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                   (uint32_t)r->p[3] << 24;
      memcpy(dst, &u, 4);
    }
    r->p += 4;
    return 0;
  }
  return -1;
}

/* Number of packed elements of a scalar kind in [p, end), or -1. */
static int64_t packed_count(int kind, const uint8_t *p, const uint8_t *end) {
  size_t n = (size_t)(end - p);
  if (kind == NSL_PB_DOUBLE) return n % 8 ? -1 : (int64_t)(n / 8);
  if (kind == NSL_PB_FLOAT) return n % 4 ? -1 : (int64_t)(n / 4);
  int64_t c = 0;
  for (; p < end; p++) c += !(*p & 0x80);
  if (n && (end[-1] & 0x80)) return -1;   /* last varint unterminated */
  return c;
}

static nsl_status decode_msg(pb_dec *d, const nsl_pb_msg *m, const uint8_t *p, const uint8_t *end,
                             void *out, int depth);

static void *copy_bytes(pb_dec *d, const uint8_t *s, size_t n) {
  char *c = nsl__pb_arena_alloc(d->a, n + 1);
  if (c && n) memcpy(c, s, n);
  return c;
}

/* The arena refused an allocation (limit reached or out of memory). */
static nsl_status nomem(pb_dec *d, const nsl_pb_msg *m, uint32_t field, const uint8_t *at) {
  return dec_fail(d, NSL_ERR_LIMIT, m, field, at,
                  "decoded data exceed the memory limit (or out of memory)");
}

/* Decodes message m from [p, end) into out (two passes, see the top). */
static nsl_status decode_msg(pb_dec *d, const nsl_pb_msg *m, const uint8_t *p, const uint8_t *end,
                             void *out, int depth) {
  if (depth > NSL_PB_MAX_DEPTH)
    return dec_fail(d, NSL_ERR_FORMAT, m, 0, p, "messages nested deeper than %d", NSL_PB_MAX_DEPTH);
  int64_t count[NSL_PB_MAX_FIELDS] = {0};
  nsl_pb_reader r = {p, end};
  uint32_t num = 0;
  int wire = 0;
  /* pass 1: validate the framing and count repeated elements */
  while (r.p < r.end) {
    const uint8_t *at = r.p;
    if (nsl__pb_read_tag(&r, &num, &wire))
      return dec_fail(d, NSL_ERR_FORMAT, m, 0, at, "bad or truncated tag");
    const nsl_pb_field *f = find_field(m, num);
    const uint8_t *val = r.p;
    if (nsl__pb_skip(&r, wire))
      return dec_fail(d, NSL_ERR_FORMAT, m, num, at,
                      wire == 3 || wire == 4 ? "groups are not supported"
                                             : "value truncated or wire type %d invalid", wire);
    if (!f) continue;
    int fw = wire_of(f->kind);
    int packed = f->repeated && wire == 2 && fw != 2;
    if (wire != fw && !packed)
      return dec_fail(d, NSL_ERR_FORMAT, m, num, at, "%s has wire type %d, expected %d", f->name,
                      wire, fw);
    if (!f->repeated) continue;
    int64_t add = 1;
    if (packed) {
      nsl_pb_reader lr = {val, r.p};
      uint64_t len;
      nsl__pb_read_varint(&lr, &len);
      add = packed_count(f->kind, lr.p, r.p);
      if (add < 0) return dec_fail(d, NSL_ERR_FORMAT, m, num, at, "bad packed %s", f->name);
    }
    count[f - m->fields] += add;
  }
  /* allocate the arrays */
  for (int i = 0; i < m->nfields; i++) {
    const nsl_pb_field *f = &m->fields[i];
    if (!f->repeated) continue;
    void **items = (void **)((char *)out + f->offset);
    int64_t *n = (int64_t *)((char *)out + f->count_offset);
    *items = NULL;
    *n = 0;
    if (!count[i]) continue;
    size_t es = elem_size(f);
    if ((uint64_t)count[i] > SIZE_MAX / es) return nomem(d, m, f->number, p);
    if (!(*items = nsl__pb_arena_alloc(d->a, (size_t)count[i] * es)))
      return nomem(d, m, f->number, p);
    if (f->kind == NSL_PB_MESSAGE)
      for (int64_t k = 0; k < count[i]; k++) nsl__pb_init(f->msg, (char *)*items + (size_t)k * es);
  }
  /* pass 2: fill */
  r.p = p;
  while (r.p < r.end) {
    const uint8_t *at = r.p;
    nsl__pb_read_tag(&r, &num, &wire);   /* validated in pass 1 */
    const nsl_pb_field *f = find_field(m, num);
    if (!f) {
      nsl__pb_skip(&r, wire);
      continue;
    }
    char *slot;
    size_t es = elem_size(f);
    if (f->repeated) {
      int64_t *n = (int64_t *)((char *)out + f->count_offset);
      char *items = *(char **)((char *)out + f->offset);
      if (wire == 2 && wire_of(f->kind) != 2) {   /* packed */
        uint64_t len = 0;   /* (the first pass checked the message's varints) */
        nsl__pb_read_varint(&r, &len);
        nsl_pb_reader pr = {r.p, r.p + len};
        while (pr.p < pr.end) {
          if (read_scalar(&pr, f->kind, items + (size_t)*n * es))
            return dec_fail(d, NSL_ERR_FORMAT, m, num, at, "bad packed %s", f->name);
          (*n)++;
        }
        r.p = pr.end;
        continue;
      }
      slot = items + (size_t)(*n)++ * es;
    } else {
      slot = (char *)out + f->offset;
    }
    if (wire != 2) {
      if (read_scalar(&r, f->kind, slot))
        return dec_fail(d, NSL_ERR_FORMAT, m, num, at, "bad %s", f->name);
      continue;
    }
    uint64_t len = 0;
    nsl__pb_read_varint(&r, &len);
    const uint8_t *s = r.p;
    r.p += len;
    if (f->kind == NSL_PB_STRING) {
      const char *c = copy_bytes(d, s, (size_t)len);
      if (!c) return nomem(d, m, num, at);
      *(const char **)slot = c;
    } else if (f->kind == NSL_PB_BYTES) {
      nsl_pb_bytes *b = (nsl_pb_bytes *)slot;
      if (!(b->data = copy_bytes(d, s, (size_t)len))) return nomem(d, m, num, at);
      b->len = (size_t)len;
    } else {
      nsl_status st = decode_msg(d, f->msg, s, s + len, slot, depth + 1);
      if (st != NSL_OK) return st;
    }
  }
  return NSL_OK;
}

nsl_status nsl__pb_decode(const nsl_pb_msg *m, const void *data, size_t size, void *out, int init,
                         nsl_pb_arena *a, const char *label, nsl_error *err) {
  pb_dec d = {a, label ? label : "(memory)", data, err};
  if (init) nsl__pb_init(m, out);
  const uint8_t *p = data;
  return decode_msg(&d, m, p, p + size, out, 0);
}
