/*
 * test_protobuf.c -- the table-driven protobuf decoder (src/source/protobuf.c)
 * and the XLA HloProto decoder on top of it (src/source/hlo.c).
 *
 * Oracles: $NSL_DATA_DIR/nsys-jax/mini/module_0001.jit__psum.expected.txt
 * (the decode made with protobuf's own Python library), the golden results
 * of NVIDIA's nsys-jax (module fingerprints in notebook_module_table.csv,
 * heap-simulator event counts and peaks in heap_peaks.json), the protobuf
 * wire-format specification for hand-encoded messages, and the structure
 * every HLO module must have (ids that refer to existing instructions,
 * computations, stack frames, logical buffers).  Hostile inputs (truncated
 * varints, lengths past the end, deep nesting, byte flips) must give errors,
 * never crashes (run under ASan/UBSan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/hlo.h"
#include "source/protobuf.h"

const nsl_pb_msg *nsl__hlo_table(void);

static const char *data_dir(void) {
  const char *d = getenv("NSL_DATA_DIR");
  return d && *d ? d : NULL;
}

static uint8_t *read_path(const char *path, size_t *n) {
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16;
  uint8_t *b = malloc(cap);
  size_t r;
  while ((r = fread(b + *n, 1, cap - *n, f)) > 0) {
    *n += r;
    if (*n == cap) b = realloc(b, cap *= 2);
  }
  fclose(f);
  return b;
}

static uint8_t *mini_file(const char *name, size_t *n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/nsys-jax/mini/%s", data_dir(), name);
  uint8_t *b = read_path(path, n);
  if (!b) fail_msg("cannot read %s", path);
  return b;
}

/* ---- a wire-format encoder (from the protobuf encoding spec) -------------- */

typedef struct enc {
  uint8_t *p;
  size_t n, cap;
} enc;

static void e_put(enc *e, const void *s, size_t n) {
  if (e->n + n > e->cap) {
    while (e->n + n > e->cap) e->cap = e->cap ? e->cap * 2 : 64;
    e->p = realloc(e->p, e->cap);
  }
  memcpy(e->p + e->n, s, n);
  e->n += n;
}
static void e_varint(enc *e, uint64_t v) {
  do {
    uint8_t b = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b |= 0x80;
    e_put(e, &b, 1);
  } while (v);
}
static void e_tag(enc *e, uint32_t field, int wire) { e_varint(e, (uint64_t)field << 3 | (uint64_t)wire); }
static void e_int(enc *e, uint32_t field, int64_t v) {
  e_tag(e, field, 0);
  e_varint(e, (uint64_t)v);
}
static void e_bytes(enc *e, uint32_t field, const void *s, size_t n) {
  e_tag(e, field, 2);
  e_varint(e, n);
  e_put(e, s, n);
}
static void e_str(enc *e, uint32_t field, const char *s) { e_bytes(e, field, s, strlen(s)); }
static void e_fixed64(enc *e, uint32_t field, uint64_t v) {
  e_tag(e, field, 1);
  for (int i = 0; i < 8; i++) {
    uint8_t b = (uint8_t)(v >> (8 * i));
    e_put(e, &b, 1);
  }
}
static void e_fixed32(enc *e, uint32_t field, uint32_t v) {
  e_tag(e, field, 5);
  for (int i = 0; i < 4; i++) {
    uint8_t b = (uint8_t)(v >> (8 * i));
    e_put(e, &b, 1);
  }
}

/* ---- a small table exercising every kind ------------------------------------ */

typedef struct t_sub {
  int64_t x;
  const char *label;
  struct t_sub *kids;
  int64_t nkids;
} t_sub;

typedef struct t_all {
  int64_t i64;
  int32_t i32;
  int32_t flag;
  double dbl;
  float flt;
  const char *str;
  nsl_pb_bytes raw;
  int64_t *ids;
  int64_t nids;
  double *dbls;
  int64_t ndbls;
  const char **names;
  int64_t nnames;
  t_sub sub;
  t_sub *subs;
  int64_t nsubs;
} t_all;

static const nsl_pb_msg t_sub_msg;
static const nsl_pb_field t_sub_fields[] = {
    NSL_PB_F(1, NSL_PB_INT64, t_sub, x),
    NSL_PB_F(2, NSL_PB_STRING, t_sub, label),
    NSL_PB_RM(3, t_sub, kids, nkids, t_sub_msg),
};
static const nsl_pb_msg t_sub_msg = NSL_PB_MSG("test.Sub", t_sub, t_sub_fields);

static const nsl_pb_field t_all_fields[] = {
    NSL_PB_F(1, NSL_PB_INT64, t_all, i64),
    NSL_PB_F(2, NSL_PB_INT32, t_all, i32),
    NSL_PB_F(3, NSL_PB_BOOL, t_all, flag),
    NSL_PB_F(4, NSL_PB_DOUBLE, t_all, dbl),
    NSL_PB_F(5, NSL_PB_FLOAT, t_all, flt),
    NSL_PB_F(6, NSL_PB_STRING, t_all, str),
    NSL_PB_F(7, NSL_PB_BYTES, t_all, raw),
    NSL_PB_R(8, NSL_PB_INT64, t_all, ids, nids),
    NSL_PB_R(9, NSL_PB_DOUBLE, t_all, dbls, ndbls),
    NSL_PB_R(10, NSL_PB_STRING, t_all, names, nnames),
    NSL_PB_M(11, t_all, sub, t_sub_msg),
    NSL_PB_RM(12, t_all, subs, nsubs, t_sub_msg),
};
static const nsl_pb_msg t_all_msg = NSL_PB_MSG("test.All", t_all, t_all_fields);

static nsl_status decode_all(const enc *e, t_all **out, nsl_pb_arena **a, nsl_error *err) {
  *a = nsl__pb_arena_new(1 << 20);
  *out = nsl__pb_arena_alloc(*a, sizeof **out);
  return nsl__pb_decode(&t_all_msg, e->p, e->n, *out, 1, *a, "test", err);
}

static void test_tables(void **state) {
  (void)state;
  nsl_error err = {0};
  assert_int_equal(nsl__pb_check_table(nsl__hlo_table(), &err), NSL_OK);
  assert_int_equal(nsl__pb_check_table(&t_all_msg, &err), NSL_OK);
  static const nsl_pb_field unsorted[] = {
      NSL_PB_F(2, NSL_PB_INT64, t_sub, x),
      NSL_PB_F(1, NSL_PB_STRING, t_sub, label),
  };
  static const nsl_pb_msg bad = NSL_PB_MSG("test.Bad", t_sub, unsorted);
  assert_int_equal(nsl__pb_check_table(&bad, &err), NSL_ERR_ARG);
  assert_non_null(strstr(err.msg, "test.Bad"));
}

static void test_wire_format(void **state) {
  (void)state;
  enc e = {0}, sub = {0}, kid = {0}, packed = {0};
  e_int(&e, 1, -5);                       /* int64: 10-byte varint */
  e_int(&e, 2, -7);                       /* int32: sign-extended on the wire */
  e_int(&e, 3, 2);                        /* bool: nonzero is true */
  e_fixed64(&e, 4, 0x400921fb54442d18u);  /* pi */
  e_fixed32(&e, 5, 0x3fc00000u);          /* 1.5f */
  e_str(&e, 6, "first");
  e_str(&e, 6, "héllo");                  /* last one wins */
  e_bytes(&e, 7, "a\0b", 3);
  e_int(&e, 8, 10);                       /* repeated: unpacked ... */
  for (int i = 11; i <= 13; i++) e_varint(&packed, (uint64_t)i * 1000000);
  e_bytes(&e, 8, packed.p, packed.n);     /* ... and packed, mixed */
  e_int(&e, 8, -1);
  e_fixed64(&e, 9, 0x3ff0000000000000u);  /* repeated double, unpacked */
  e_str(&e, 10, "n0");
  e_str(&e, 10, "");
  e_str(&e, 10, "n2");
  e_int(&kid, 1, 99);
  e_int(&sub, 1, 42);
  e_bytes(&sub, 3, kid.p, kid.n);
  e_bytes(&sub, 3, kid.p, kid.n);
  e_bytes(&e, 11, sub.p, sub.n);
  e_bytes(&e, 12, sub.p, sub.n);
  e_bytes(&e, 12, "", 0);                 /* an empty element */
  /* unknown fields of every wire type are skipped */
  e_int(&e, 100, 1);
  e_fixed64(&e, 101, 1);
  e_fixed32(&e, 102, 1);
  e_str(&e, 103, "skipped");
  e_int(&e, 536870911, 7);                /* the largest field number */
  t_all *t;
  nsl_pb_arena *a;
  nsl_error err = {0};
  if (decode_all(&e, &t, &a, &err) != NSL_OK) fail_msg("%s", err.msg);
  assert_int_equal(t->i64, -5);
  assert_int_equal(t->i32, -7);
  assert_int_equal(t->flag, 1);
  assert_true(t->dbl > 3.14159 && t->dbl < 3.1416);
  assert_true(t->flt == 1.5f);
  assert_string_equal(t->str, "héllo");
  assert_int_equal(t->raw.len, 3);
  assert_memory_equal(t->raw.data, "a\0b", 3);
  assert_int_equal(t->nids, 5);
  int64_t want[] = {10, 11000000, 12000000, 13000000, -1};
  for (int i = 0; i < 5; i++) assert_int_equal(t->ids[i], want[i]);
  assert_int_equal(t->ndbls, 1);
  assert_true(t->dbls[0] == 1.0);
  assert_int_equal(t->nnames, 3);
  assert_string_equal(t->names[0], "n0");
  assert_string_equal(t->names[1], "");
  assert_string_equal(t->names[2], "n2");
  assert_int_equal(t->sub.x, 42);
  assert_string_equal(t->sub.label, "");   /* absent string: "" */
  assert_int_equal(t->sub.nkids, 2);
  assert_int_equal(t->sub.kids[1].x, 99);
  assert_int_equal(t->nsubs, 2);
  assert_int_equal(t->subs[0].nkids, 2);
  assert_int_equal(t->subs[1].x, 0);
  assert_string_equal(t->subs[1].label, "");
  assert_null(t->subs[1].kids);
  assert_true(nsl__pb_arena_used(a) > 0);
  nsl__pb_arena_free(a);
  /* an empty message: all defaults */
  enc empty = {0};
  assert_int_equal(decode_all(&empty, &t, &a, &err), NSL_OK);
  assert_string_equal(t->str, "");
  assert_string_equal(t->sub.label, "");
  assert_int_equal(t->nids, 0);
  assert_null(t->raw.data);
  nsl__pb_arena_free(a);
  free(e.p);
  free(sub.p);
  free(kid.p);
  free(packed.p);
}

static void expect_error(const uint8_t *b, size_t n, nsl_status code, const char *needle) {
  enc e = {(uint8_t *)b, n, n};
  t_all *t;
  nsl_pb_arena *a;
  nsl_error err = {0};
  nsl_status st = decode_all(&e, &t, &a, &err);
  nsl__pb_arena_free(a);
  if (st != code) fail_msg("status %d, want %d (%s)", st, code, err.msg);
  if (needle && !strstr(err.msg, needle)) fail_msg("'%s' lacks '%s'", err.msg, needle);
}

static void test_hostile_wire(void **state) {
  (void)state;
  /* truncated varint value */
  expect_error((const uint8_t *)"\x08\x80\x80", 3, NSL_ERR_FORMAT, "test.All field 1");
  /* varint of 11 bytes */
  expect_error((const uint8_t *)"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12,
               NSL_ERR_FORMAT, NULL);
  /* truncated tag */
  expect_error((const uint8_t *)"\x80", 1, NSL_ERR_FORMAT, "tag");
  /* field number 0 */
  expect_error((const uint8_t *)"\x00\x01", 2, NSL_ERR_FORMAT, "tag");
  /* string length past the end */
  expect_error((const uint8_t *)"\x32\x05" "abc", 5, NSL_ERR_FORMAT, "field 6");
  /* huge length */
  expect_error((const uint8_t *)"\x32\xff\xff\xff\xff\x0f", 6, NSL_ERR_FORMAT, NULL);
  /* wrong wire type: a string field sent as a varint */
  expect_error((const uint8_t *)"\x30\x01", 2, NSL_ERR_FORMAT, "wire type");
  /* groups (wire types 3 and 4) */
  expect_error((const uint8_t *)"\x0b\x0c", 2, NSL_ERR_FORMAT, "group");
  /* wire types 6 and 7 do not exist */
  expect_error((const uint8_t *)"\x0e\x00", 2, NSL_ERR_FORMAT, NULL);
  /* truncated fixed64 / fixed32 */
  expect_error((const uint8_t *)"\x21\x00\x00", 3, NSL_ERR_FORMAT, NULL);
  expect_error((const uint8_t *)"\x2d\x00", 2, NSL_ERR_FORMAT, NULL);
  /* packed ints whose last varint is unterminated; packed doubles of 5 bytes */
  expect_error((const uint8_t *)"\x42\x02\x01\x80", 4, NSL_ERR_FORMAT, "packed");
  expect_error((const uint8_t *)"\x4a\x05\x00\x00\x00\x00\x00", 7, NSL_ERR_FORMAT, "packed");
  /* a nested message whose content is truncated */
  expect_error((const uint8_t *)"\x5a\x02\x08\x80", 4, NSL_ERR_FORMAT, "test.Sub");
  /* nesting deeper than the limit: Sub.kids inside Sub.kids ... */
  enc e = {0};
  int depth = 200;
  enc *levels = calloc((size_t)depth + 1, sizeof *levels);
  e_int(&levels[0], 1, 1);
  for (int i = 1; i <= depth; i++) e_bytes(&levels[i], 3, levels[i - 1].p, levels[i - 1].n);
  e_bytes(&e, 11, levels[depth].p, levels[depth].n);
  expect_error(e.p, e.n, NSL_ERR_FORMAT, "deeper");
  for (int i = 0; i <= depth; i++) free(levels[i].p);
  free(levels);
  free(e.p);
  /* the arena limit: a million empty sub-messages in 2 MB */
  e = (enc){0};
  for (int i = 0; i < 1000000; i++) e_bytes(&e, 12, "", 0);
  expect_error(e.p, e.n, NSL_ERR_LIMIT, "limit");
  free(e.p);
}

/* ---- the HLO decoder against the expected decode ----------------------------- */

typedef struct sbuf {
  char *s;
  size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (b->n + (size_t)k + 1 > b->cap) {
    while (b->n + (size_t)k + 1 > b->cap) b->cap = b->cap ? b->cap * 2 : 4096;
    b->s = realloc(b->s, b->cap);
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

/* A string as Python's repr() writes it (the texts here are ASCII). */
static void sb_repr(sbuf *b, const char *s) {
  char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
  sb_printf(b, "%c", q);
  for (; *s; s++) {
    if (*s == q || *s == '\\') sb_printf(b, "\\%c", *s);
    else sb_printf(b, "%c", *s);
  }
  sb_printf(b, "%c", q);
}

static void sb_ints(sbuf *b, const int64_t *v, int64_t n) {
  sb_printf(b, "[");
  for (int64_t i = 0; i < n; i++) sb_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
  sb_printf(b, "]");
}

static void sb_strs(sbuf *b, const char *const *v, int64_t n) {
  sb_printf(b, "[");
  for (int64_t i = 0; i < n; i++) {
    if (i) sb_printf(b, ", ");
    sb_repr(b, v[i]);
  }
  sb_printf(b, "]");
}

/* Renders the decode in the layout of module_0001.jit__psum.expected.txt
 * (its '->' lines are nsys-jax analysis results, not decode, and are left
 * out). */
static void render(const nsl_hlo *h, sbuf *b) {
  const nsl_hlo_module *m = &h->module;
  sb_printf(b, "module.name = %s ; module.id = %lld ; entry = %s\n", m->name, (long long)m->id,
            m->entry_computation_name);
  const char *fp = nsl__hlo_frontend_attr(&m->frontend_attributes, "fingerprint_before_lhs");
  sb_printf(b, "fingerprint_before_lhs = %s\n", fp ? fp : "None");
  for (int64_t c = 0; c < m->ncomputations; c++) {
    const nsl_hlo_computation *comp = &m->computations[c];
    sb_printf(b, "computation %lld %s\n", (long long)comp->id, comp->name);
    for (int64_t i = 0; i < comp->ninstructions; i++) {
      const nsl_hlo_instruction *in = &comp->instructions[i];
      sb_printf(b, "  inst id=%lld name=%s opcode=%s elem_type=%d dims=", (long long)in->id,
                in->name, in->opcode, in->shape.element_type);
      sb_ints(b, in->shape.dimensions, in->shape.ndimensions);
      sb_printf(b, " tuple=%lld operands=", (long long)in->shape.ntuple_shapes);
      sb_ints(b, in->operand_ids, in->noperand_ids);
      sb_printf(b, " called=");
      sb_ints(b, in->called_computation_ids, in->ncalled_computation_ids);
      sb_printf(b, " op_name=");
      sb_repr(b, in->metadata.op_name);
      sb_printf(b, " stack_frame_id=%d mem_space=%lld\n", in->metadata.stack_frame_id,
                (long long)in->shape.layout.memory_space);
    }
  }
  const nsl_hlo_stack_frame_index *s = &m->stack_frame_index;
  sb_printf(b, "stack_frame_index: files ");
  sb_strs(b, s->file_names, s->nfile_names);
  sb_printf(b, " functions ");
  sb_strs(b, s->function_names, s->nfunction_names);
  sb_printf(b, "\n");
  for (int32_t id = 1; id <= s->nstack_frames; id++) {
    /* outermost frame first */
    char *items[64];
    int n = 0;
    nsl_hlo_frame f;
    for (int32_t cur = id; cur && n < 64; cur = f.parent) {
      assert_int_equal(nsl__hlo_stack_frame(s, cur, &f), 0);
      char buf[1024];
      snprintf(buf, sizeof buf, "%s:%d[%s]", f.file, f.line, f.function);
      items[n++] = strdup(buf);
    }
    sb_printf(b, "frame %d [", id);
    for (int k = n - 1; k >= 0; k--) {
      sb_repr(b, items[k]);
      if (k) sb_printf(b, ", ");
      free(items[k]);
    }
    sb_printf(b, "]\n");
  }
  const nsl_hlo_buffer_assignment *ba = &h->buffer_assignment;
  sb_printf(b, "logical_buffers [");
  for (int64_t i = 0; i < ba->nlogical_buffers; i++)
    sb_printf(b, "%s(%lld, %lld)", i ? ", " : "", (long long)ba->logical_buffers[i].id,
              (long long)ba->logical_buffers[i].size);
  sb_printf(b, "]\nbuffer_allocations [");
  for (int64_t i = 0; i < ba->nbuffer_allocations; i++)
    sb_printf(b, "%s(%lld, %lld)", i ? ", " : "", (long long)ba->buffer_allocations[i].index,
              (long long)ba->buffer_allocations[i].size);
  sb_printf(b, "]\nheap_simulator_traces %lld\n", (long long)ba->nheap_simulator_traces);
}

static void test_expected_decode(void **state) {
  (void)state;
  if (!data_dir()) skip();
  size_t n, en;
  uint8_t *xz = mini_file("module_0001.jit__psum.sm_8.0_gpu_after_optimizations.hlo.pb.xz", &n);
  uint8_t *expected = mini_file("module_0001.jit__psum.expected.txt", &en);
  nsl_hlo *h;
  nsl_error err = {0};
  if (nsl__hlo_decode_xz(xz, n, "module_0001", &h, &err) != NSL_OK) fail_msg("%s", err.msg);
  sbuf got = {0};
  render(h, &got);
  /* the expected text without its title line and its analysis lines */
  sbuf want = {0};
  char *text = strndup((const char *)expected, en);
  int line = 0;
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (line++ == 0) continue;
    if (strncmp(l, "    -> ", 7) == 0) continue;
    sb_printf(&want, "%s\n", l);
  }
  if (strcmp(got.s, want.s) != 0) {
    /* show the first differing line */
    const char *g = got.s, *w = want.s;
    while (*g && *g == *w) g++, w++;
    while (g > got.s && g[-1] != '\n') g--, w--;
    fail_msg("decode differs:\n got: %.300s\nwant: %.300s", g, w);
  }
  /* the analysis line's message size is the all-reduce's shape bytes */
  const nsl_hlo_instruction *ar = nsl__hlo_find_instruction(h, 45, NULL);
  assert_non_null(ar);
  assert_string_equal(ar->opcode, "all-reduce-start");
  assert_int_equal(nsl__hlo_shape_bytes(&ar->shape), 4);
  /* ... and its collective size (4) the size of its one replica group */
  assert_int_equal(ar->nreplica_groups, 1);
  assert_int_equal(ar->replica_groups[0].nreplica_ids, 4);
  for (int64_t k = 0; k < 4; k++) assert_int_equal(ar->replica_groups[0].replica_ids[k], k);
  const nsl_hlo_computation *comp = NULL;
  assert_non_null(nsl__hlo_find_instruction(h, 11, &comp));
  assert_string_equal(comp->name, "region_0.3.clone");
  assert_string_equal(nsl__hlo_find_computation(h, 49)->name, "wrapped_copy_computation");
  assert_int_equal(nsl__hlo_find_buffer(h, 7)->size, 4);
  assert_null(nsl__hlo_find_instruction(h, 12345, NULL));
  assert_null(nsl__hlo_find_computation(h, -1));
  assert_null(nsl__hlo_find_buffer(h, 3));
  nsl_hlo_free(h);
  free(got.s);
  free(want.s);
  free(text);
  free(xz);
  free(expected);
}

static void test_before_optimizations(void **state) {
  (void)state;
  if (!data_dir()) skip();
  char path[4096];
  snprintf(path, sizeof path, "%s/nsys-jax/mini/module_0001.jit__psum.before_optimizations.hlo.pb.xz",
           data_dir());
  nsl_hlo *h;
  nsl_error err = {0};
  if (nsl_hlo_read_file(path, &h, &err) != NSL_OK) fail_msg("%s", err.msg);
  assert_string_equal(h->module.name, "jit__psum");
  assert_int_equal(h->module.id, 1);
  assert_true(h->module.ncomputations >= 1);
  assert_non_null(nsl__hlo_find_computation(h, h->module.entry_computation_id));
  assert_int_equal(h->buffer_assignment.nlogical_buffers, 0);   /* no buffers before optimizing */
  nsl_hlo_free(h);
  /* the same protobuf, uncompressed, read from a file */
  size_t n, pn;
  uint8_t *xz = read_path(path, &n), *pb;
  assert_int_equal(nsl__xz_decompress(xz, n, 1 << 20, "x", &pb, &pn, &err), NSL_OK);
  char tmp[] = "/tmp/nsl_test_hlo_XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, pb, pn), (ssize_t)pn);
  close(fd);
  if (nsl_hlo_read_file(tmp, &h, &err) != NSL_OK) fail_msg("%s", err.msg);
  assert_string_equal(h->module.name, "jit__psum");
  nsl_hlo_free(h);
  unlink(tmp);
  assert_int_equal(nsl_hlo_read_file(tmp, &h, &err), NSL_ERR_IO);
  assert_null(h);
  /* xz errors: a limit, a truncation, not xz at all */
  uint8_t *out;
  size_t on;
  assert_int_equal(nsl__xz_decompress(xz, n, 100, "small", &out, &on, &err), NSL_ERR_LIMIT);
  assert_int_equal(nsl__xz_decompress(xz, n / 2, 1 << 20, "half", &out, &on, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "half"));
  assert_int_equal(nsl__hlo_decode_xz(pb, pn, "raw", &h, &err), NSL_ERR_FORMAT);
  assert_null(h);
  free(pb);
  free(xz);
}

/* ---- every dump of the four archives ------------------------------------------ */

typedef struct fp_seen {
  char fp[64];
  char name[128];
} fp_seen;

/* Checks what every decoded module must satisfy. */
static void check_module(const nsl_hlo *h, const char *member) {
  const nsl_hlo_module *m = &h->module;
  /* dump/module_0040.pjit__wrapped_step_fn.<stage>.hlo.pb.xz */
  const char *base = strrchr(member, '/') + 1;
  long id = strtol(base + 7, NULL, 10);
  const char *name = base + 12;
  assert_int_equal(m->id, id);
  assert_true(strncmp(name, m->name, strlen(m->name)) == 0 && name[strlen(m->name)] == '.');
  assert_true(m->ncomputations > 0);
  const nsl_hlo_computation *entry = nsl__hlo_find_computation(h, m->entry_computation_id);
  if (!entry) fail_msg("%s: no entry computation %lld", member, (long long)m->entry_computation_id);
  assert_string_equal(entry->name, m->entry_computation_name);
  for (int64_t c = 0; c < m->ncomputations; c++) {
    const nsl_hlo_computation *comp = &m->computations[c];
    assert_true(comp->ninstructions > 0);
    int root_found = 0;
    for (int64_t i = 0; i < comp->ninstructions; i++) {
      const nsl_hlo_instruction *in = &comp->instructions[i];
      assert_true(in->name[0] && in->opcode[0]);
      root_found |= in->id == comp->root_id;
      for (int64_t k = 0; k < in->noperand_ids; k++) {
        const nsl_hlo_computation *oc = NULL;
        if (!nsl__hlo_find_instruction(h, in->operand_ids[k], &oc) || oc != comp)
          fail_msg("%s: %s operand %lld not in its computation", member, in->name,
                   (long long)in->operand_ids[k]);
      }
      for (int64_t k = 0; k < in->ncalled_computation_ids; k++)
        if (!nsl__hlo_find_computation(h, in->called_computation_ids[k]))
          fail_msg("%s: %s calls unknown computation %lld", member, in->name,
                   (long long)in->called_computation_ids[k]);
      if (in->metadata.stack_frame_id) {
        nsl_hlo_frame f;
        if (nsl__hlo_stack_frame(&m->stack_frame_index, in->metadata.stack_frame_id, &f) != 0)
          fail_msg("%s: %s has unresolved stack frame %d", member, in->name,
                   in->metadata.stack_frame_id);
      }
      if (in->shape.element_type != NSL_HLO_TUPLE && in->shape.element_type != NSL_HLO_TOKEN)
        assert_true(nsl__hlo_shape_bytes(&in->shape) >= 0);
      for (int64_t g = 0; g < in->nreplica_groups; g++)
        assert_true(in->replica_groups[g].nreplica_ids > 0);
    }
    if (!root_found) fail_msg("%s: computation %s has no root %lld", member, comp->name,
                              (long long)comp->root_id);
  }
  const nsl_hlo_buffer_assignment *ba = &h->buffer_assignment;
  for (int64_t t = 0; t < ba->nheap_simulator_traces; t++) {
    const nsl_hlo_heap_trace *tr = &ba->heap_simulator_traces[t];
    for (int64_t e = 0; e < tr->nevents; e++) {
      assert_in_range(tr->events[e].kind, 0, 2);
      int64_t b = tr->events[e].buffer_id;
      if (!nsl__hlo_find_buffer(h, b))
        fail_msg("%s: heap event for unknown buffer %lld", member, (long long)b);
    }
  }
}

/* Peak of the static heap simulation the way nsys-jax computes it: ALLOC
 * and SHARE_WITH add the buffer's size, FREE subtracts it. */
static int64_t heap_peak(const nsl_hlo *h, int64_t *nevents) {
  const nsl_hlo_buffer_assignment *ba = &h->buffer_assignment;
  int64_t peak = 0;
  *nevents = 0;
  for (int64_t t = 0; t < ba->nheap_simulator_traces; t++) {
    const nsl_hlo_heap_trace *tr = &ba->heap_simulator_traces[t];
    int64_t cur = 0;
    *nevents += tr->nevents;
    for (int64_t e = 0; e < tr->nevents; e++) {
      const nsl_hlo_logical_buffer *lb = nsl__hlo_find_buffer(h, tr->events[e].buffer_id);
      int64_t size = lb ? lb->size : 0;
      cur += tr->events[e].kind == NSL_HLO_HEAP_FREE ? -size : size;
      if (cur > peak) peak = cur;
    }
  }
  return peak;
}

static void test_all_archive_dumps(void **state) {
  (void)state;
  if (!data_dir()) skip();
  int ndumps = 0;
  fp_seen *seen = calloc(256, sizeof *seen);
  int nseen = 0;
  json_error_t jerr;
  char path[4096];
  snprintf(path, sizeof path, "%s/nsys-jax/golden/combined4/heap_peaks.json", data_dir());
  json_t *peaks = json_load_file(path, 0, &jerr);
  assert_non_null(peaks);
  int heap_checked = 0;
  for (int proc = 0; proc < 4; proc++) {
    snprintf(path, sizeof path, "%s/nsys-jax/pax_fsdp4_4proc_proc%d.zip", data_dir(), proc);
    struct archive *ar = archive_read_new();
    archive_read_support_format_zip(ar);
    assert_int_equal(archive_read_open_filename(ar, path, 1 << 16), ARCHIVE_OK);
    struct archive_entry *ent;
    while (archive_read_next_header(ar, &ent) == ARCHIVE_OK) {
      const char *member = archive_entry_pathname(ent);
      size_t ml = strlen(member);
      if (strncmp(member, "dump/", 5) != 0 || ml < 10 || strcmp(member + ml - 10, ".hlo.pb.xz") != 0)
        continue;
      size_t n = (size_t)archive_entry_size(ent);
      uint8_t *xz = malloc(n ? n : 1);
      assert_int_equal(archive_read_data(ar, xz, n), (la_ssize_t)n);
      nsl_hlo *h;
      nsl_error err = {0};
      if (nsl__hlo_decode_xz(xz, n, member, &h, &err) != NSL_OK) fail_msg("%s", err.msg);
      check_module(h, member);
      const char *fp = nsl__hlo_frontend_attr(&h->module.frontend_attributes, "fingerprint_before_lhs");
      if (strstr(member, "after_optimizations")) {
        assert_non_null(fp);
        assert_int_equal(strlen(fp), 32);
        if (nseen < 256) {
          snprintf(seen[nseen].fp, sizeof seen[nseen].fp, "%s", fp);
          snprintf(seen[nseen].name, sizeof seen[nseen].name, "%s", h->module.name);
          nseen++;
        }
        json_t *want = json_object_get(peaks, fp);
        if (want && json_array_size(want) == 1) {
          int64_t nev;
          int64_t peak = heap_peak(h, &nev);
          assert_int_equal(nev, json_integer_value(json_object_get(json_array_get(want, 0), "n_events")));
          assert_int_equal(peak, json_integer_value(json_object_get(json_array_get(want, 0), "peak_bytes")));
          heap_checked++;
        }
      }
      nsl_hlo_free(h);
      free(xz);
      ndumps++;
    }
    archive_read_free(ar);
  }
  assert_int_equal(ndumps, 136);
  assert_true(heap_checked >= 2);
  json_decref(peaks);
  /* every module nsys-jax's notebook lists has our fingerprint and name */
  snprintf(path, sizeof path, "%s/nsys-jax/golden/combined4/notebook_module_table.csv", data_dir());
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[1024];
  int rows = 0;
  assert_non_null(fgets(line, sizeof line, f));   /* header */
  while (fgets(line, sizeof line, f)) {
    char *fp = strtok(line, ","), *name = strtok(NULL, ",");
    int k = 0;
    while (k < nseen && !(strcmp(seen[k].fp, fp) == 0 && strcmp(seen[k].name, name) == 0)) k++;
    if (k == nseen) fail_msg("module %s (%s) of the golden table not found", fp, name);
    rows++;
  }
  fclose(f);
  assert_true(rows >= 3);
  free(seen);
}

/* ---- hostile HLO inputs -------------------------------------------------------- */

static void test_fuzz_hlo(void **state) {
  (void)state;
  if (!data_dir()) skip();
  size_t n, pn;
  uint8_t *xz = mini_file("module_0001.jit__psum.sm_8.0_gpu_after_optimizations.hlo.pb.xz", &n), *pb;
  nsl_error err = {0};
  assert_int_equal(nsl__xz_decompress(xz, n, 1 << 24, "x", &pb, &pn, &err), NSL_OK);
  nsl_hlo *h;
  int ok = 0, bad = 0;
  /* every truncation: exact-size copies so ASan sees any overread */
  for (size_t cut = 0; cut < pn; cut++) {
    uint8_t *c = malloc(cut ? cut : 1);
    memcpy(c, pb, cut);
    if (nsl__hlo_decode(c, cut, "cut", &h, &err) == NSL_OK) {
      nsl_hlo_free(h);
      ok++;
    } else {
      assert_null(h);
      assert_true(err.msg[0]);
      bad++;
    }
    free(c);
  }
  assert_true(bad > 0);
  /* byte flips */
  uint64_t x = 88172645463325252u;
  uint8_t *c = malloc(pn);
  for (int i = 0; i < 3000; i++) {
    memcpy(c, pb, pn);
    for (int k = 0; k < 1 + i % 3; k++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c[x % pn] ^= (uint8_t)(x >> 32) | 1;
    }
    if (nsl__hlo_decode(c, pn, "flip", &h, &err) == NSL_OK) nsl_hlo_free(h);
    if (i % 10) continue;
    /* xz truncations and flips too (fewer: each starts an xz decoder) */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    memcpy(c, xz, n);
    c[x % n] ^= (uint8_t)(x >> 40) | 1;
    if (nsl__hlo_decode_xz(c, n, "xzflip", &h, &err) == NSL_OK) nsl_hlo_free(h);
    if (nsl__hlo_decode_xz(xz, (size_t)(x >> 20) % n, "xzcut", &h, &err) == NSL_OK) nsl_hlo_free(h);
  }
  free(c);
  (void)ok;
  /* a shape nested 10000 deep (tuple_shapes inside tuple_shapes) */
  enc e = {0};
  e_int(&e, 2, 11);
  for (int i = 0; i < 10000; i++) {
    enc outer = {0};
    e_int(&outer, 2, 13);
    e_bytes(&outer, 4, e.p, e.n);
    free(e.p);
    e = outer;
  }
  enc inst = {0}, comp = {0}, mod = {0}, top = {0};
  e_bytes(&inst, 3, e.p, e.n);
  e_bytes(&comp, 2, inst.p, inst.n);
  e_bytes(&mod, 3, comp.p, comp.n);
  e_bytes(&top, 1, mod.p, mod.n);
  assert_int_equal(nsl__hlo_decode(top.p, top.n, "deep", &h, &err), NSL_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "deeper"));
  free(e.p);
  free(inst.p);
  free(comp.p);
  free(mod.p);
  free(top.p);
  free(pb);
  free(xz);
}

static void test_lookups(void **state) {
  (void)state;
  assert_int_equal(nsl__hlo_element_bits(NSL_HLO_F32), 32);
  assert_int_equal(nsl__hlo_element_bits(NSL_HLO_BF16), 16);
  assert_int_equal(nsl__hlo_element_bits(NSL_HLO_PRED), 8);
  assert_int_equal(nsl__hlo_element_bits(21), 4);            /* S4 */
  assert_int_equal(nsl__hlo_element_bits(NSL_HLO_C128), 128);
  assert_int_equal(nsl__hlo_element_bits(NSL_HLO_TUPLE), 0);
  assert_int_equal(nsl__hlo_element_bits(999), 0);
  assert_string_equal(nsl__hlo_element_name(NSL_HLO_BF16), "bf16");
  assert_string_equal(nsl__hlo_element_name(-3), "?");
  int64_t d1[] = {3, 5}, d2[] = {7}, big[] = {INT64_C(1) << 40, INT64_C(1) << 40}, neg[] = {-1};
  nsl_hlo_shape leaves[2] = {{NSL_HLO_F32, d1, 2, NULL, 0, {0}}, {21, d2, 1, NULL, 0, {0}}};
  nsl_hlo_shape tup = {NSL_HLO_TUPLE, NULL, 0, leaves, 2, {0}};
  assert_int_equal(nsl__hlo_shape_bytes(&leaves[0]), 60);
  assert_int_equal(nsl__hlo_shape_bytes(&leaves[1]), 4);     /* 7 x 4 bits, rounded up */
  assert_int_equal(nsl__hlo_shape_bytes(&tup), 64);
  nsl_hlo_shape scalar = {NSL_HLO_F64, NULL, 0, NULL, 0, {0}};
  assert_int_equal(nsl__hlo_shape_bytes(&scalar), 8);
  nsl_hlo_shape huge = {NSL_HLO_F32, big, 2, NULL, 0, {0}};
  assert_int_equal(nsl__hlo_shape_bytes(&huge), -1);
  nsl_hlo_shape negative = {NSL_HLO_F32, neg, 1, NULL, 0, {0}};
  assert_int_equal(nsl__hlo_shape_bytes(&negative), -1);
  /* stack frames with ids out of range */
  const char *files[] = {"a.py"}, *funcs[] = {"f"};
  nsl_hlo_file_location locs[] = {{1, 1, 10, 2}, {2, 1, 11, 0}};
  nsl_hlo_stack_frame_entry frames[] = {{1, 0}, {1, 1}, {2, 1}, {1, 9}};
  nsl_hlo_stack_frame_index s = {files, 1, funcs, 1, locs, 2, frames, 4};
  nsl_hlo_frame f;
  assert_int_equal(nsl__hlo_stack_frame(&s, 2, &f), 0);
  assert_string_equal(f.file, "a.py");
  assert_int_equal(f.line, 10);
  assert_int_equal(f.parent, 1);
  assert_int_equal(nsl__hlo_stack_frame(&s, 0, &f), -1);
  assert_int_equal(nsl__hlo_stack_frame(&s, 5, &f), -1);
  assert_int_equal(nsl__hlo_stack_frame(&s, 3, &f), -1);    /* file name id 2 of 1 */
  assert_int_equal(nsl__hlo_stack_frame(&s, 4, &f), -1);    /* parent 9 of 4 */
  nsl_hlo_attr kv[] = {{"k", "v1"}, {"k", "v2"}};
  nsl_hlo_attrs attrs = {kv, 2};
  assert_string_equal(nsl__hlo_frontend_attr(&attrs, "k"), "v2");
  assert_null(nsl__hlo_frontend_attr(&attrs, "x"));
  nsl_hlo_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables),
      cmocka_unit_test(test_wire_format),
      cmocka_unit_test(test_hostile_wire),
      cmocka_unit_test(test_expected_decode),
      cmocka_unit_test(test_before_optimizations),
      cmocka_unit_test(test_all_archive_dumps),
      cmocka_unit_test(test_fuzz_hlo),
      cmocka_unit_test(test_lookups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
