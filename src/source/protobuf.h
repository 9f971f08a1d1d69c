/*
 * protobuf.h -- a protobuf wire-format decoder driven by field tables
 * (private to nsl).
 *
 * A table (nsl_pb_msg) describes how the fields of one message map onto a
 * plain C struct: field number, kind, repeated or not, and the offsets of
 * the member (and of its count, for repeated fields).  nsl__pb_decode fills
 * such a struct from bytes; fields the table does not name are skipped.
 * Everything it allocates (strings, arrays, nested structs) comes from one
 * arena, released in one call.
 *
 * Basic outline:
 *   1. static const nsl_pb_field foo_fields[] = {
 *        NSL_PB_F(1, NSL_PB_STRING, foo, name), NSL_PB_R(2, NSL_PB_INT64, foo, ids, nids)};
 *      static const nsl_pb_msg foo_msg = NSL_PB_MSG("pkg.Foo", foo, foo_fields);
 *      (fields sorted by number; nsl__pb_check_table verifies a table)
 *   2. nsl_pb_arena *a = nsl__pb_arena_new(limit);
 *      foo *f = nsl__pb_arena_alloc(a, sizeof *f);
 *      nsl__pb_decode(&foo_msg, data, size, f, a, "label", &err);
 *   3. nsl__pb_arena_free(a) releases f and all it points to.
 *
 * C types by kind: INT64 int64_t (int64, uint64, sint not supported), INT32
 * int32_t (int32, uint32, enums), BOOL int32_t (0/1), DOUBLE double, FLOAT
 * float, STRING const char * (NUL-terminated copy, "" when absent), BYTES
 * nsl_pb_bytes, MESSAGE the nested struct itself (embedded; repeated: an
 * array of structs).  A repeated field is a pointer to its elements plus an
 * int64_t count; packed and unpacked encodings are both accepted.
 *
 * Bad input (truncated varints, lengths past the end, wrong wire types,
 * nesting deeper than NSL_PB_MAX_DEPTH, groups) gives NSL_ERR_FORMAT; an
 * arena past its limit gives NSL_ERR_LIMIT.  Never a crash.
 */
#ifndef NSL_SOURCE_PROTOBUF_H
#define NSL_SOURCE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include "nsl/nsl.h"

#define NSL_PB_MAX_DEPTH 100
#define NSL_PB_MAX_FIELDS 64   /* per message table */

typedef enum nsl_pb_kind {
  NSL_PB_INT64 = 0,
  NSL_PB_INT32,
  NSL_PB_BOOL,
  NSL_PB_DOUBLE,
  NSL_PB_FLOAT,
  NSL_PB_STRING,
  NSL_PB_BYTES,
  NSL_PB_MESSAGE
} nsl_pb_kind;

typedef struct nsl_pb_bytes {
  const uint8_t *data;   /* arena copy, followed by a NUL; NULL when absent */
  size_t len;
} nsl_pb_bytes;

struct nsl_pb_msg;

typedef struct nsl_pb_field {
  uint32_t number;
  uint8_t kind;                   /* nsl_pb_kind */
  uint8_t repeated;
  size_t offset;                  /* of the member (repeated: of the element pointer) */
  size_t count_offset;            /* repeated: of the int64_t count */
  const struct nsl_pb_msg *msg;   /* MESSAGE: the nested table */
  const char *name;               /* for messages */
} nsl_pb_field;

typedef struct nsl_pb_msg {
  const char *name;               /* "xla.HloInstructionProto", for messages */
  size_t size;                    /* sizeof the C struct */
  const nsl_pb_field *fields;     /* sorted by number */
  int nfields;
} nsl_pb_msg;

/* Table helpers: T is the struct type, m a member, c its count member. */
#define NSL_PB_F(num, kind, T, m) {(num), (kind), 0, offsetof(T, m), 0, NULL, #m}
#define NSL_PB_R(num, kind, T, m, c) {(num), (kind), 1, offsetof(T, m), offsetof(T, c), NULL, #m}
#define NSL_PB_M(num, T, m, sub) {(num), NSL_PB_MESSAGE, 0, offsetof(T, m), 0, &(sub), #m}
#define NSL_PB_RM(num, T, m, c, sub) {(num), NSL_PB_MESSAGE, 1, offsetof(T, m), offsetof(T, c), &(sub), #m}
#define NSL_PB_MSG(pbname, T, fields) \
  {(pbname), sizeof(T), (fields), (int)(sizeof(fields) / sizeof((fields)[0]))}

/* ---- arena ---------------------------------------------------------------- */

typedef struct nsl_pb_arena nsl_pb_arena;

/* A new arena that refuses to hold more than limit bytes (0: no limit). */
nsl_pb_arena *nsl__pb_arena_new(size_t limit);
/* n zeroed bytes, 16-aligned; NULL when out of memory or past the limit. */
void *nsl__pb_arena_alloc(nsl_pb_arena *a, size_t n);
/* Bytes handed out so far. */
size_t nsl__pb_arena_used(const nsl_pb_arena *a);
void nsl__pb_arena_free(nsl_pb_arena *a);

/* ---- decoding --------------------------------------------------------------- */

/* Checks a table (sorted unique field numbers, sizes, nested tables,
 * recursively).  Returns NSL_OK or NSL_ERR_ARG naming the problem. */
nsl_status nsl__pb_check_table(const nsl_pb_msg *m, nsl_error *err);
/* Sets the defaults of a zeroed struct of message m: "" for strings,
 * recursively into embedded messages. */
void nsl__pb_init(const nsl_pb_msg *m, void *out);
/* Decodes size bytes at data as message m into out, a struct of m->size
 * bytes, zeroed (then pass init = 1 to apply nsl__pb_init) or already
 * decoded (init = 0: fields present in data overwrite scalars and replace
 * repeated fields -- protobuf merging of repeated fields is not done).
 * A non-repeated message field seen twice is likewise decoded twice into
 * the same struct.  label names the input in errors. */
nsl_status nsl__pb_decode(const nsl_pb_msg *m, const void *data, size_t size, void *out, int init,
                         nsl_pb_arena *a, const char *label, nsl_error *err);

/* Raw wire-format reading, for callers walking a message by hand.  Each
 * returns 0, or -1 at a truncated / malformed input. */
typedef struct nsl_pb_reader {
  const uint8_t *p, *end;
} nsl_pb_reader;
int nsl__pb_read_varint(nsl_pb_reader *r, uint64_t *v);
/* Reads a tag: field number and wire type (0 varint, 1 fixed64, 2 bytes, 5 fixed32). */
int nsl__pb_read_tag(nsl_pb_reader *r, uint32_t *number, int *wire);
/* Skips a value of the given wire type (groups are refused). */
int nsl__pb_skip(nsl_pb_reader *r, int wire);

#endif
