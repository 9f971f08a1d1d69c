/* varint.h -- unsigned LEB128 varints (7 bits a byte, the lowest first, the
 * high bit set on every byte but a value's last; at most NSL_VARINT_MAX
 * bytes for 64 bits) and the zigzag map that makes small negative numbers
 * short too.  Written by the viewer's packed columns (pack.c) and the
 * distributed runs' messages (wire.c), read by those and the protobuf
 * reader (source/protobuf.c). */
#ifndef NSL_CORE_VARINT_H
#define NSL_CORE_VARINT_H
#include <stddef.h>
#include <stdint.h>

#define NSL_VARINT_MAX 10

/* Writes v at p; returns the byte after it. */
static inline unsigned char *nsl__varint_put(unsigned char *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}

/* The bytes nsl__varint_put writes for v. */
static inline size_t nsl__varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* Reads a varint from *p (before end) into *v and moves *p past it; -1
 * (nothing read) when it runs past end or holds more than 64 bits. */
static inline int nsl__varint_get(const unsigned char **p, const unsigned char *end, uint64_t *v) {
  const unsigned char *q = *p;
  if (q < end && *q < 0x80) {   /* the common one-byte case */
    *v = *q;
    *p = q + 1;
    return 0;
  }
  if (end - q >= 2 && q[1] < 0x80) {   /* and two bytes (differences of times a few µs apart) */
    *v = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
    *p = q + 2;
    return 0;
  }
  uint64_t x = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q >= end) return -1;
    unsigned char b = *q++;
    if (shift == 63 && (b & 0x7e)) return -1;   /* more than 64 bits */
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      *p = q;
      return 0;
    }
  }
  return -1;
}

/* The zigzag map: 0, -1, 1, -2, ... to 0, 1, 2, 3, ... (every 64-bit value, and back). */
static inline uint64_t nsl__zigzag(uint64_t d) { return d << 1 ^ (uint64_t)-(int64_t)(d >> 63); }
static inline uint64_t nsl__unzigzag(uint64_t z) { return z >> 1 ^ (uint64_t)-(int64_t)(z & 1); }

#endif
