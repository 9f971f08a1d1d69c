/* wire.h -- columns as one flat byte buffer and back, to move tables
 * between processes (distributed runs) as native buffers, not Lua values.
 *
 * Layout (little-endian host order: both ends run the same build):
 *   "NSLWIRE2", u32 ncols, i64 nrows, u32 nstrings, the strings (u32 len,
 *   bytes) in the order of their ids in the sender's dictionary, then per
 *   column: u16 name length, name, u8 type, u8 how, and the values, the
 *   shortest way: how 0, nrows values as they are in memory; how 1
 *   (integers and string ids), u64 byte count, then each value less the one
 *   before it (the first less 0, modulo 2^64) zigzagged as a varint
 *   (core/varint.h): times in order, ids and small numbers take a byte or
 *   two instead of 8; how 2 (integers, string ids, bools), u64 byte count,
 *   then per run of equal values its value less the run before's (zigzag
 *   varint) and its length (varint, at least 1): a report, device or stream
 *   column takes a few bytes for a whole table.  An i32 NULL travels as
 *   INT32_MIN, a string NULL as -1, a bool as 0 or 1.  The messages come
 *   from nsl's own processes (the same build); a damaged one is refused,
 *   though a header's row count is trusted for columns sent as runs.  String
 *   columns hold indices into the strings (-1 NULL); the receiver interns the
 *   strings into its dictionary in that order, as a report loaded on a
 *   thread of its own is remapped into a trace's (trace.c), so string ids
 *   come out as a one-process load gives them. */
#ifndef NSL_CORE_WIRE_H
#define NSL_CORE_WIRE_H
#include <stddef.h>

#include "nsl/nsl.h"

/* Encodes cols[0..n) (all of one length; string columns of one dictionary)
 * under names into a new buffer (*buf, release with free()). */
nsl_status nsl__wire_encode(const char *const *names, nsl_column *const *cols, int n, void **buf, size_t *len,
                            nsl_error *err);
/* Decodes a buffer of nsl__wire_encode: *names (strings and array, one
 * allocation each: nsl__wire_free) and *cols (new columns, strings interned
 * into dict).  NSL_ERR_FORMAT for a buffer that is not one. */
nsl_status nsl__wire_decode(const void *buf, size_t len, nsl_dict *dict, char ***names, nsl_column ***cols, int *n,
                            nsl_error *err);
/* Releases what nsl__wire_decode returned. */
void nsl__wire_free(char **names, nsl_column **cols, int n);

#endif
