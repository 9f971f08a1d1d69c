/*
 * test_bundle.c -- bundles: round trip over real exports, a corpus of
 * hostile zips built here byte by byte, atomic writes, combine.
 *
 * Oracles: the original files (bytes), nettle and sha256sum (hashes), a zip
 * central-directory parser written here from the PKWARE spec (member list,
 * methods, CRCs), and unzip -t where installed (an independent reader).
 */
#define _XOPEN_SOURCE 700   /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <sqlite3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/atomic_write.h"
#include "nsl/bundle.h"
#include "source/bundle_internal.h"

#ifndef NSL_VERSION
#define NSL_VERSION "unknown"
#endif

static char g_dir[512];   /* scratch folder for this run, under the current folder */

/* ---- small helpers ---------------------------------------------------- */

static const char *tpath(const char *name) {
  static char buf[8][1024];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 1024, "%s/%s", g_dir, name);
  return p;
}

/* Path of a file under NSL_DATA_DIR, or NULL when the data is absent. */
static const char *data_path(const char *rel) {
  static char buf[4][1024];
  static int k;
  const char *d = getenv("NSL_DATA_DIR");
  if (d == NULL)
    return NULL;
  char *p = buf[k++ % 4];
  snprintf(p, 1024, "%s/%s", d, rel);
  return access(p, R_OK) == 0 ? p : NULL;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc((size_t)n + 1);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return p;
}

static void spit(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  if (len)
    assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

static void sha_hex(const void *data, size_t len, char out[65]) {
  struct sha256_ctx c;
  uint8_t d[32];
  sha256_init(&c);
  sha256_update(&c, len, data);
  sha256_digest(&c, 32, d);
  for (int i = 0; i < 32; i++)
    sprintf(out + 2 * i, "%02x", d[i]);
}

/* sha256sum's verdict on path, or 0 when the tool is missing. */
static int sha256sum(const char *path, char out[65]) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "sha256sum '%s' 2>/dev/null", path);
  FILE *p = popen(cmd, "r");
  if (p == NULL)
    return 0;
  int ok = fscanf(p, "%64s", out) == 1 && strlen(out) == 64;
  pclose(p);
  return ok;
}

static int have_tool(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

/* Sorted names in folder dir, joined by '\n' (caller frees). */
static char *listing(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  char *names[256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < 256)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      names[n++] = strdup(e->d_name);
  closedir(d);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  size_t len = 1;
  for (int i = 0; i < n; i++)
    len += strlen(names[i]) + 1;
  char *s = calloc(1, len);
  for (int i = 0; i < n; i++) {
    strcat(s, names[i]);
    strcat(s, "\n");
    free(names[i]);
  }
  return s;
}

static int count_tmp(const char *dir) {
  char *l = listing(dir);
  int n = 0;
  for (const char *p = l; (p = strstr(p, "nsl-tmp")) != NULL; p++)
    n++;
  free(l);
  return n;
}

static long maxrss_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

#define assert_msg_has(err, s)                                                                     \
  do {                                                                                             \
    if (strstr((err).msg, (s)) == NULL)                                                            \
      fail_msg("message '%s' lacks '%s'", (err).msg, (s));                                         \
  } while (0)

/* Shorthands for adding members in tests (AUTO compression). */
static nsl_status add_text(nsl_bundle_writer *w, const char *name, const char *text, nsl_error *err) {
  return nsl_bundle_writer_add_memory(w, name, text, strlen(text), NSL_BUNDLE_COMPRESS_AUTO, err);
}

static nsl_status add_path(nsl_bundle_writer *w, const char *name, const char *path, nsl_error *err) {
  return nsl_bundle_writer_add_file(w, name, path, NSL_BUNDLE_COMPRESS_AUTO, err);
}

/* ---- a zip writer by hand (PKWARE APPNOTE 4.3), for hostile archives ---- */

typedef struct buf {
  unsigned char *p;
  size_t len, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
  if (n == 0)
    return;
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

static void put16(buf *b, unsigned v) {
  unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  put(b, x, 2);
}

static void put32(buf *b, uint32_t v) {
  unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  put(b, x, 4);
}

typedef struct zip {
  buf out, cd;
  int n;
  int zip64_end;           /* write zip64 end records */
  uint32_t last_crc;       /* the last entry, for zip_alias */
  uint64_t last_plen, last_usize, last_offset;
  int last_method;
} zip;

typedef struct zspec {
  const char *name;
  const void *data;        /* content, compressed here with `method` */
  size_t len;
  int method;              /* 0 store, 8 deflate */
  const void *raw;         /* or: ready payload with its crc and real size */
  size_t raw_len;
  uint32_t raw_crc;
  uint64_t raw_usize;
  int64_t declared;        /* uncompressed size written in both headers; -1 = true size */
  uint32_t unix_mode;      /* 0: an MS-DOS entry without Unix attributes */
  uint16_t flags;
  int zip64;               /* sizes and offset in a zip64 extra field */
} zspec;

static unsigned char *deflate_raw(const void *data, size_t len, size_t *out_len) {
  z_stream s;
  memset(&s, 0, sizeof s);
  assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&s, (uLong)len) + 16;
  unsigned char *out = malloc(cap);
  s.next_in = (Bytef *)data;
  s.avail_in = (uInt)len;
  s.next_out = out;
  s.avail_out = (uInt)cap;
  assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
  *out_len = s.total_out;
  deflateEnd(&s);
  return out;
}

/* A deflate stream of mib MiB of zeros, a few KiB per GiB: one 1 MiB block
 * ending on a full flush (no back-reference across it), repeated, then an
 * empty final block. */
static unsigned char *deflate_zeros(unsigned mib, size_t *out_len, uint32_t *crc) {
  size_t one = 1u << 20;
  unsigned char *zeros = calloc(1, one);
  z_stream s;
  memset(&s, 0, sizeof s);
  assert_int_equal(deflateInit2(&s, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
  unsigned char blk[16384];
  s.next_in = zeros;
  s.avail_in = (uInt)one;
  s.next_out = blk;
  s.avail_out = sizeof blk;
  assert_int_equal(deflate(&s, Z_FULL_FLUSH), Z_OK);
  assert_int_equal(s.avail_in, 0);
  size_t blen = sizeof blk - s.avail_out;
  deflateEnd(&s);
  unsigned char *out = malloc(blen * mib + 2);
  for (unsigned i = 0; i < mib; i++)
    memcpy(out + blen * i, blk, blen);
  out[blen * mib] = 0x03;   /* final fixed-Huffman block holding only end-of-block */
  out[blen * mib + 1] = 0x00;
  *out_len = blen * mib + 2;
  uLong c1 = crc32(0, zeros, (uInt)one), c = 0;
  for (unsigned i = 0; i < mib; i++)
    c = crc32_combine(c, c1, (z_off_t)one);
  *crc = (uint32_t)c;
  free(zeros);
  return out;
}

static void zip_add(zip *z, const zspec *e) {
  const unsigned char *payload;
  size_t plen;
  unsigned char *owned = NULL;
  uint32_t crc;
  uint64_t usize;
  if (e->raw) {
    payload = e->raw;
    plen = e->raw_len;
    crc = e->raw_crc;
    usize = e->raw_usize;
  } else {
    crc = (uint32_t)crc32(0, e->data, (uInt)e->len);
    usize = e->len;
    if (e->method == 8) {
      owned = deflate_raw(e->data, e->len, &plen);
      payload = owned;
    } else {
      payload = e->data;
      plen = e->len;
    }
  }
  uint64_t declared = e->declared >= 0 ? (uint64_t)e->declared : usize;
  uint64_t offset = z->out.len;
  size_t nlen = strlen(e->name);
  unsigned need = e->zip64 ? 45 : 20;
  put32(&z->out, 0x04034b50);
  put16(&z->out, need);
  put16(&z->out, e->flags);
  put16(&z->out, (unsigned)e->method);
  put16(&z->out, 0);         /* time */
  put16(&z->out, 0x21);      /* date 1980-01-01 */
  put32(&z->out, crc);
  put32(&z->out, e->zip64 ? 0xFFFFFFFFu : (uint32_t)plen);
  put32(&z->out, e->zip64 ? 0xFFFFFFFFu : (uint32_t)declared);
  put16(&z->out, (unsigned)nlen);
  put16(&z->out, e->zip64 ? 20 : 0);
  put(&z->out, e->name, nlen);
  if (e->zip64) {
    put16(&z->out, 1);
    put16(&z->out, 16);
    put32(&z->out, (uint32_t)declared);
    put32(&z->out, (uint32_t)(declared >> 32));
    put32(&z->out, (uint32_t)plen);
    put32(&z->out, 0);
  }
  put(&z->out, payload, plen);

  put32(&z->cd, 0x02014b50);
  put16(&z->cd, e->unix_mode ? (3u << 8) | need : need);
  put16(&z->cd, need);
  put16(&z->cd, e->flags);
  put16(&z->cd, (unsigned)e->method);
  put16(&z->cd, 0);
  put16(&z->cd, 0x21);
  put32(&z->cd, crc);
  put32(&z->cd, e->zip64 ? 0xFFFFFFFFu : (uint32_t)plen);
  put32(&z->cd, e->zip64 ? 0xFFFFFFFFu : (uint32_t)declared);
  put16(&z->cd, (unsigned)nlen);
  put16(&z->cd, e->zip64 ? 28 : 0);
  put16(&z->cd, 0);
  put16(&z->cd, 0);
  put16(&z->cd, 0);
  put32(&z->cd, e->unix_mode << 16);
  put32(&z->cd, e->zip64 ? 0xFFFFFFFFu : (uint32_t)offset);
  put(&z->cd, e->name, nlen);
  if (e->zip64) {
    put16(&z->cd, 1);
    put16(&z->cd, 24);
    put32(&z->cd, (uint32_t)declared);
    put32(&z->cd, (uint32_t)(declared >> 32));
    put32(&z->cd, (uint32_t)plen);
    put32(&z->cd, 0);
    put32(&z->cd, (uint32_t)offset);
    put32(&z->cd, 0);
  }
  z->last_crc = crc;
  z->last_plen = plen;
  z->last_usize = declared;
  z->last_offset = offset;
  z->last_method = e->method;
  z->n++;
  free(owned);
}

/* A second central record for the last entry's bytes under another name:
 * two members sharing data, as in non-recursive zip bombs. */
static void zip_alias(zip *z, const char *name) {
  size_t nlen = strlen(name);
  put32(&z->cd, 0x02014b50);
  put16(&z->cd, 20);
  put16(&z->cd, 20);
  put16(&z->cd, 0);
  put16(&z->cd, (unsigned)z->last_method);
  put16(&z->cd, 0);
  put16(&z->cd, 0x21);
  put32(&z->cd, z->last_crc);
  put32(&z->cd, (uint32_t)z->last_plen);
  put32(&z->cd, (uint32_t)z->last_usize);
  put16(&z->cd, (unsigned)nlen);
  put16(&z->cd, 0);
  put16(&z->cd, 0);
  put16(&z->cd, 0);
  put16(&z->cd, 0);
  put32(&z->cd, 0);
  put32(&z->cd, (uint32_t)z->last_offset);
  put(&z->cd, name, nlen);
  z->n++;
}

/* Appends the central directory and end record; writes the zip to path. */
static void zip_save(zip *z, const char *path) {
  uint64_t cd_off = z->out.len;
  put(&z->out, z->cd.p, z->cd.len);
  if (z->zip64_end) {
    uint64_t rec = z->out.len;
    put32(&z->out, 0x06064b50);
    put32(&z->out, 44);
    put32(&z->out, 0);
    put16(&z->out, 45);
    put16(&z->out, 45);
    put32(&z->out, 0);
    put32(&z->out, 0);
    put32(&z->out, (uint32_t)z->n);
    put32(&z->out, 0);
    put32(&z->out, (uint32_t)z->n);
    put32(&z->out, 0);
    put32(&z->out, (uint32_t)z->cd.len);
    put32(&z->out, 0);
    put32(&z->out, (uint32_t)cd_off);
    put32(&z->out, 0);
    put32(&z->out, 0x07064b50);
    put32(&z->out, 0);
    put32(&z->out, (uint32_t)rec);
    put32(&z->out, 0);
    put32(&z->out, 1);
    put32(&z->out, 0x06054b50);
    put16(&z->out, 0);
    put16(&z->out, 0);
    put16(&z->out, 0xFFFF);
    put16(&z->out, 0xFFFF);
    put32(&z->out, 0xFFFFFFFFu);
    put32(&z->out, 0xFFFFFFFFu);
    put16(&z->out, 0);
    spit(path, z->out.p, z->out.len);
    free(z->out.p);
    free(z->cd.p);
    memset(z, 0, sizeof *z);
    return;
  }
  put32(&z->out, 0x06054b50);
  put16(&z->out, 0);
  put16(&z->out, 0);
  put16(&z->out, (unsigned)z->n);
  put16(&z->out, (unsigned)z->n);
  put32(&z->out, (uint32_t)z->cd.len);
  put32(&z->out, (uint32_t)cd_off);
  put16(&z->out, 0);
  spit(path, z->out.p, z->out.len);
  free(z->out.p);
  free(z->cd.p);
  memset(z, 0, sizeof *z);
}

/* One-member zip. */
static void zip1(const char *path, const zspec *e) {
  zip z = {0};
  zip_add(&z, e);
  zip_save(&z, path);
}

/* ---- a central-directory parser (the oracle for what writers produce) -- */

typedef struct cdent {
  char name[512];
  int method;
  uint32_t crc;
  uint32_t csize, usize;
} cdent;

static uint32_t rd32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static unsigned rd16(const unsigned char *p) { return p[0] | p[1] << 8; }

static int parse_cd(const unsigned char *z, size_t len, cdent *out, int max) {
  size_t i = len >= 22 ? len - 22 : 0;
  for (;; i--) {
    if (rd32(z + i) == 0x06054b50)
      break;
    if (i == 0 || len - i > 22 + 65535)
      return -1;
  }
  unsigned n = rd16(z + i + 10);
  size_t off = rd32(z + i + 16);
  int k = 0;
  for (unsigned e = 0; e < n && k < max; e++) {
    const unsigned char *p = z + off;
    if (rd32(p) != 0x02014b50)
      return -1;
    unsigned nl = rd16(p + 28), xl = rd16(p + 30), cl = rd16(p + 32);
    out[k].method = (int)rd16(p + 10);
    out[k].crc = rd32(p + 16);
    out[k].csize = rd32(p + 20);
    out[k].usize = rd32(p + 24);
    snprintf(out[k].name, sizeof out[k].name, "%.*s", (int)nl, (const char *)p + 46);
    k++;
    off += 46 + nl + xl + cl;
  }
  return k;
}

static const cdent *cd_find(const cdent *cd, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(cd[i].name, name) == 0)
      return &cd[i];
  return NULL;
}

/* ---- fixtures --------------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(p);
}

static int setup_dir(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "test_bundle.XXXXXX");
  if (mkdtemp(g_dir) == NULL)
    return -1;
  return 0;
}

static int teardown_dir(void **state) {
  (void)state;
  nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

static const char k_env[] = "CUDA_VISIBLE_DEVICES=0,1\nNCCL_DEBUG=INFO\n";
static const char k_train[] = "import torch\nprint(torch.cuda.device_count())\n";

/* A manifest as `nsl bundle` would pass it. */
static json_t *caller_manifest(const char *cmd, int rank0, const char *report, const char *nsys) {
  json_t *m = json_pack("{s:[s,s], s:[s], s:[i], s:[{s:s, s:i, s:s}], s:[s], s:[s]}",  //
                        "command", "python", cmd, "hosts", "node0", "ranks", rank0, "devices", "host",
                        "node0", "id", 0, "name", "NVIDIA H100 80GB HBM3", "nsys_versions", nsys,
                        "schema_versions", "3.25.0");
  assert_non_null(m);
  json_t *reports = json_pack("[{s:s, s:i, s:s, s:s, s:s, s:I}]", "member", report, "rank", rank0, "host",
                              "node0", "nsys_version", nsys, "schema_version", "3.25.0",
                              "session_start_utc_ns", (json_int_t)1732572540123456789LL);
  assert_non_null(reports);
  json_object_set_new(m, "reports", reports);
  return m;
}

/* Writes the round-trip bundle at path; returns 0, or -1 when data is absent. */
static int write_roundtrip(const char *path) {
  const char *tiny = data_path("nsys/tiny_2026.1.sqlite");
  const char *h100 = data_path("nsys/pytorch_h100_2gpu_2026.2.sqlite");
  const char *xz = data_path("nsys-jax/mini/module_0001.jit__psum.before_optimizations.hlo.pb.xz");
  if (!tiny || !h100 || !xz)
    return -1;
  nsl_error err = {0};
  nsl_bundle_writer *w;
  assert_int_equal(nsl_bundle_writer_open(&w, path, &err), NSL_OK);
  assert_int_equal(add_path(w, "reports/tiny.sqlite", tiny, &err), NSL_OK);
  assert_int_equal(add_path(w, "reports/h100.sqlite", h100, &err), NSL_OK);
  assert_int_equal(add_text(w, "meta/env.txt", k_env, &err), NSL_OK);
  assert_int_equal(add_text(w, "sources/train.py", k_train, &err), NSL_OK);
  assert_int_equal(add_path(w, "meta/module_0001.hlo.pb.xz", xz, &err), NSL_OK);
  assert_int_equal(add_text(w, "analyses/empty.txt", "", &err), NSL_OK);
  json_t *m = caller_manifest("train.py", 0, "reports/tiny.sqlite", "2026.1.1");
  char *text = json_dumps(m, 0);   /* the public API takes the caller's fields as JSON text */
  assert_non_null(text);
  assert_int_equal(nsl_bundle_writer_finish(w, text, &err), NSL_OK);
  free(text);
  json_decref(m);
  return 0;
}

/* ---- round trip ------------------------------------------------------------- */

static void check_member(nsl_bundle *b, const char *name, const void *want, size_t want_len) {
  nsl_error err = {0};
  void *data;
  size_t len;
  assert_int_equal(nsl_bundle_read_member(b, name, &data, &len, &err), NSL_OK);
  assert_int_equal(len, want_len);
  assert_memory_equal(data, want, len);
  assert_int_equal(((char *)data)[len], '\0');
  const nsl_bundle_member *m = nsl_bundle_find(b, name);
  assert_non_null(m);
  assert_int_equal(m->size, want_len);
  if (!nsl_bundle_is_raw(b)) {
    char hex[65];
    sha_hex(want, want_len, hex);
    assert_string_equal(m->sha256, hex);
  }
  free(data);
}

static void test_roundtrip(void **state) {
  (void)state;
  const char *path = tpath("round.zip");
  if (write_roundtrip(path) != 0)
    skip();
  /* nothing but the bundle is left in the folder */
  assert_int_equal(count_tmp(g_dir), 0);

  nsl_error err = {0};
  nsl_bundle *b;
  assert_int_equal(nsl_bundle_open(&b, path, NULL, &err), NSL_OK);
  assert_false(nsl_bundle_is_raw(b));
  assert_int_equal(nsl_bundle_count(b), 7);   /* six members + manifest.json */

  static const struct {
    const char *member, *file;
  } files[] = {{"reports/tiny.sqlite", "nsys/tiny_2026.1.sqlite"},
               {"reports/h100.sqlite", "nsys/pytorch_h100_2gpu_2026.2.sqlite"},
               {"meta/module_0001.hlo.pb.xz",
                "nsys-jax/mini/module_0001.jit__psum.before_optimizations.hlo.pb.xz"}};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    size_t len;
    const char *orig = data_path(files[i].file);
    unsigned char *want = slurp(orig, &len);
    check_member(b, files[i].member, want, len);
    char sum[65];
    if (sha256sum(orig, sum))
      assert_string_equal(nsl_bundle_find(b, files[i].member)->sha256, sum);
    free(want);
  }
  check_member(b, "meta/env.txt", k_env, strlen(k_env));
  check_member(b, "sources/train.py", k_train, strlen(k_train));
  check_member(b, "analyses/empty.txt", "", 0);
  /* out of archive order: the cursor starts over */
  check_member(b, "meta/env.txt", k_env, strlen(k_env));
  assert_int_equal(nsl_bundle_verify(b, &err), NSL_OK);

  /* the manifest's text is the member's bytes, as unzip reads them */
  const char *mtext = nsl_bundle_manifest_json(b);
  assert_non_null(mtext);
  if (have_tool("unzip")) {
    char cmd[1200], got[65536];
    snprintf(cmd, sizeof cmd, "unzip -p '%s' manifest.json", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(got, 1, sizeof got - 1, p);
    pclose(p);
    got[n] = 0;
    assert_string_equal(mtext, got);
  }

  /* what the manifest says */
  const json_t *m = nsl__bundle_manifest(b);
  assert_string_equal(json_string_value(json_object_get(m, "format")), "nsl-bundle");
  assert_int_equal(json_integer_value(json_object_get(m, "format_version")), 1);
  assert_string_equal(json_string_value(json_object_get(m, "nsl_version")), NSL_VERSION);
  assert_non_null(json_string_value(json_object_get(m, "created")));
  assert_string_equal(json_string_value(json_array_get(json_object_get(m, "command"), 1)), "train.py");
  assert_int_equal(json_array_size(json_object_get(m, "members")), 6);
  nsl_report_info info;
  memset(&info, 0, sizeof info);
  info.rank = -1;
  assert_int_equal(nsl_bundle_fill_report_info(b, "reports/tiny.sqlite", &info), 1);
  assert_int_equal(info.rank, 0);
  assert_string_equal(info.host, "node0");
  assert_string_equal(info.nsys_version, "2026.1.1");
  assert_int_equal(info.start_utc, 1732572540123456789LL);
  assert_int_equal(nsl_bundle_fill_report_info(b, "reports/h100.sqlite", &info), 0);

  void *data;
  size_t len;
  assert_int_equal(nsl_bundle_read_member(b, "reports/none.sqlite", &data, &len, &err), NSL_ERR_NOTFOUND);
  assert_msg_has(err, "reports/none.sqlite");
  nsl_bundle_close(b);

  /* the zip as another reader sees it: compression chosen per member */
  unsigned char *zbytes = slurp(path, &len);
  cdent cd[16];
  int n = parse_cd(zbytes, len, cd, 16);
  assert_int_equal(n, 7);
  assert_int_equal(cd_find(cd, n, "reports/tiny.sqlite")->method, 8);
  assert_int_equal(cd_find(cd, n, "meta/module_0001.hlo.pb.xz")->method, 0);
  assert_string_equal(cd[n - 1].name, "manifest.json");
  /* the same bytes open from memory too */
  assert_int_equal(nsl_bundle_open_memory(&b, "round.zip (memory)", zbytes, len, NULL, &err), NSL_OK);
  check_member(b, "sources/train.py", k_train, strlen(k_train));
  nsl_bundle_close(b);
  free(zbytes);

  if (have_tool("unzip")) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "unzip -tqq '%s' >/dev/null 2>&1", path);
    assert_int_equal(system(cmd), 0);
  }
}

/* One integer from SQL on the export at path, by SQLite itself (read-only). */
static int64_t sql_int(const char *path, const char *sql) {
  char uri[1200];
  sqlite3 *db;
  sqlite3_stmt *st;
  snprintf(uri, sizeof uri, "file:%s?mode=ro&immutable=1", path);
  assert_int_equal(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

static int first_int(void *ctx, int ncols, const char *const *names, const nsl_sql_value *v) {
  (void)names;
  if (ncols > 0)
    *(int64_t *)ctx = v[0].i;
  return 1;
}

/* A bundle's reports as a trace: opened from memory, info from the manifest,
 * and the same rows as SQLite reads from the original files. */
static void test_trace_from_bundle(void **state) {
  (void)state;
  const char *path = tpath("trace.zip");
  if (write_roundtrip(path) != 0)
    skip();
  nsl_error err = {0};
  nsl_trace *tr = nsl_trace_new();
  assert_non_null(tr);
  if (nsl_bundle_add_reports(tr, path, NULL, &err) != NSL_OK)
    fail_msg("%s", err.msg);
  assert_int_equal(nsl_trace_nreports(tr), 2);
  const nsl_report_info *r0 = nsl_trace_report(tr, 0), *r1 = nsl_trace_report(tr, 1);
  assert_true(strstr(r0->path, "trace.zip:reports/tiny.sqlite") != NULL);
  assert_true(strstr(r1->path, "trace.zip:reports/h100.sqlite") != NULL);
  assert_int_equal(r0->rank, 0);
  assert_string_equal(r0->host, "node0");
  assert_int_equal(r0->start_utc, 1732572540123456789LL);
  const char *files[2] = {data_path("nsys/tiny_2026.1.sqlite"),
                          data_path("nsys/pytorch_h100_2gpu_2026.2.sqlite")};
  for (int i = 0; i < 2; i++) {
    int64_t n = -1;
    const char *q = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL";
    assert_int_equal(nsl_trace_sql(tr, i, q, first_int, &n, &err), NSL_OK);
    assert_int_equal(n, sql_int(files[i], q));
    assert_true(n > 0);
  }
  nsl_trace_close(tr);

  /* a plain zip is not a bundle */
  const char *jax = data_path("nsys-jax/pax_fsdp4_4proc_proc0.zip");
  if (jax) {
    tr = nsl_trace_new();
    assert_int_equal(nsl_bundle_add_reports(tr, jax, NULL, &err), NSL_ERR_FORMAT);
    assert_msg_has(err, "manifest.json");
    nsl_trace_close(tr);
  }
}

/* --embed: rewrite a bundle in place with analyses/ replaced. */
static void test_rewrite_in_place(void **state) {
  (void)state;
  const char *path = tpath("embed.zip");
  if (write_roundtrip(path) != 0)
    skip();
  nsl_error err = {0};
  nsl_bundle *b;
  nsl_bundle_writer *w;
  assert_int_equal(nsl_bundle_open(&b, path, NULL, &err), NSL_OK);
  json_t *m = json_deep_copy(nsl__bundle_manifest(b));
  assert_int_equal(nsl_bundle_writer_open(&w, path, &err), NSL_OK);
  assert_int_equal(nsl_bundle_copy_members(b, w, "analyses/", &err), NSL_OK);
  assert_int_equal(add_text(w, "analyses/straggler/table.csv", "rank,ratio\n1,1.07\n", &err), NSL_OK);
  assert_int_equal(nsl__bundle_writer_finish_json(w, m, &err), NSL_OK);
  json_decref(m);
  nsl_bundle_close(b);

  assert_int_equal(nsl_bundle_open(&b, path, NULL, &err), NSL_OK);
  assert_int_equal(nsl_bundle_count(b), 7);
  assert_null(nsl_bundle_find(b, "analyses/empty.txt"));
  check_member(b, "analyses/straggler/table.csv", "rank,ratio\n1,1.07\n", 18);
  check_member(b, "sources/train.py", k_train, strlen(k_train));
  size_t len;
  unsigned char *want = slurp(data_path("nsys/tiny_2026.1.sqlite"), &len);
  check_member(b, "reports/tiny.sqlite", want, len);
  free(want);
  nsl_report_info info;
  memset(&info, 0, sizeof info);
  assert_int_equal(nsl_bundle_fill_report_info(b, "reports/tiny.sqlite", &info), 1);   /* kept */
  nsl_bundle_close(b);
  assert_int_equal(count_tmp(g_dir), 0);
}

typedef struct reader_arg {
  nsl_bundle *b;
  int ok;
} reader_arg;

static void *reader_thread(void *p) {
  reader_arg *a = p;
  a->ok = 1;
  for (int round = 0; round < 3; round++)
    for (size_t i = 0; i < nsl_bundle_count(a->b); i++) {
      const nsl_bundle_member *m = nsl_bundle_member_at(a->b, i);
      void *data;
      size_t len;
      nsl_error err = {0};
      if (nsl_bundle_read_member(a->b, m->name, &data, &len, &err) != NSL_OK || len != m->size)
        a->ok = 0;
      else
        free(data);
    }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  const char *path = tpath("threads.zip");
  if (write_roundtrip(path) != 0)
    skip();
  nsl_bundle *b;
  nsl_error err = {0};
  assert_int_equal(nsl_bundle_open(&b, path, NULL, &err), NSL_OK);
  pthread_t t[4];
  reader_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i].b = b;
    assert_int_equal(pthread_create(&t[i], NULL, reader_thread, &a[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    assert_true(a[i].ok);
  }
  nsl_bundle_close(b);
}

/* ---- raw mode: an nsys-jax archive ------------------------------------------ */

static void test_raw_nsys_jax(void **state) {
  (void)state;
  const char *path = data_path("nsys-jax/pax_fsdp4_4proc_proc0.zip");
  if (path == NULL)
    skip();
  nsl_error err = {0};
  nsl_bundle *b;
  assert_int_equal(nsl_bundle_open(&b, path, NULL, &err), NSL_ERR_FORMAT);
  assert_msg_has(err, "manifest.json");
  assert_msg_has(err, "pax_fsdp4_4proc_proc0.zip");

  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_AUTO;
  assert_int_equal(nsl_bundle_open(&b, path, &o, &err), NSL_OK);
  assert_true(nsl_bundle_is_raw(b));
  assert_null(nsl__bundle_manifest(b));

  size_t zlen;
  unsigned char *z = slurp(path, &zlen);
  cdent *cd = calloc(1024, sizeof *cd);
  int n = parse_cd(z, zlen, cd, 1024);
  assert_true(n > 0);
  int files = 0;
  for (int i = 0; i < n; i++) {
    size_t nl = strlen(cd[i].name);
    if (nl && cd[i].name[nl - 1] == '/')
      continue;   /* folder entries are not members */
    files++;
    const nsl_bundle_member *m = nsl_bundle_find(b, cd[i].name);
    assert_non_null(m);
    assert_null(m->sha256);
    assert_int_equal(m->size, cd[i].usize);
    void *data;
    size_t len;
    assert_int_equal(nsl_bundle_read_member(b, cd[i].name, &data, &len, &err), NSL_OK);
    assert_int_equal(len, cd[i].usize);
    assert_int_equal((uint32_t)crc32(0, data, (uInt)len), cd[i].crc);
    free(data);
  }
  assert_int_equal(nsl_bundle_count(b), (size_t)files);
  free(cd);
  free(z);
  nsl_bundle_close(b);
}

/* ---- hostile archives -------------------------------------------------------- */

/* Opens path in raw and in strict mode; both must fail with code and a
 * message naming the file and `needle`. */
static void expect_refused(const char *path, nsl_status code, const char *needle) {
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  for (int mode = 0; mode < 2; mode++) {
    o.mode = mode ? NSL_BUNDLE_RAW : NSL_BUNDLE_STRICT;
    nsl_error err = {0};
    nsl_bundle *b = (nsl_bundle *)&err;   /* must be reset to NULL */
    nsl_status st = nsl_bundle_open(&b, path, &o, &err);
    if (st != code)
      fail_msg("'%s' (mode %d): status %d, want %d: %s", path, mode, st, code, err.msg);
    assert_null(b);
    assert_msg_has(err, path);
    if (needle)
      assert_msg_has(err, needle);
    for (const char *p = err.msg; *p; p++)   /* hostile names never reach a terminal raw */
      assert_true((unsigned char)*p >= 0x20 && *p != 0x7F);
  }
}

/* Opening path as a bundle fails (NSL_ERR_FORMAT, message with needle). */
static void expect_refused_strict(const char *path, const char *needle) {
  nsl_error err = {0};
  nsl_bundle *b;
  assert_int_equal(nsl_bundle_open(&b, path, NULL, &err), NSL_ERR_FORMAT);
  assert_null(b);
  assert_msg_has(err, path);
  assert_msg_has(err, needle);
}

static void test_hostile_paths(void **state) {
  (void)state;
  static const struct {
    const char *name, *why;
  } bad[] = {
      {"../x", "'..'"},
      {"reports/../../etc/passwd", "'..'"},
      {"..", "'..'"},
      {"/etc/x", "absolute"},
      {"/", NULL},
      {"a//b", "empty path component"},
      {"./a", "'.' component"},
      {"a/./b", "'.' component"},
      {"C:/x", "drive letter"},
      {"a\\..\\x", "backslash"},
      {"a\x01" "b", "control character"},
      {"a\x1b[2J", "control character"},
      {"", "empty name"},
      {"a\xff" "b", NULL},
  };
  mkdir(tpath("hostile"), 0755);
  char *before = listing(tpath("hostile"));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char path[1100];
    snprintf(path, sizeof path, "%s/path%zu.zip", tpath("hostile"), i);
    zspec e = {.name = bad[i].name, .data = "x", .len = 1, .declared = -1};
    zip1(path, &e);
    expect_refused(path, NSL_ERR_FORMAT, bad[i].why);
    unlink(path);
  }
  /* a folder entry with '..' is refused as well */
  zspec d = {.name = "../evil/", .data = "", .len = 0, .declared = -1, .unix_mode = 040755};
  zip1(tpath("hostile/dir.zip"), &d);
  expect_refused(tpath("hostile/dir.zip"), NSL_ERR_FORMAT, "'..'");
  unlink(tpath("hostile/dir.zip"));
  /* reading wrote nothing anywhere */
  char *after = listing(tpath("hostile"));
  assert_string_equal(before, after);
  free(before);
  free(after);
}

static void test_links_and_special_files(void **state) {
  (void)state;
  zspec link = {.name = "reports/r0.sqlite", .data = "/etc/passwd", .len = 11, .declared = -1,
                .unix_mode = 0120777};
  zip1(tpath("link.zip"), &link);
  expect_refused(tpath("link.zip"), NSL_ERR_FORMAT, "symbolic link");

  zspec fifo = {.name = "fifo", .data = "", .len = 0, .declared = -1, .unix_mode = 010644};
  zip1(tpath("fifo.zip"), &fifo);
  expect_refused(tpath("fifo.zip"), NSL_ERR_FORMAT, "'fifo'");

  zspec dev = {.name = "dev", .data = "", .len = 0, .declared = -1, .unix_mode = 020644};
  zip1(tpath("dev.zip"), &dev);
  expect_refused(tpath("dev.zip"), NSL_ERR_FORMAT, "'dev'");

  zspec enc = {.name = "secret.txt", .data = "0123456789ab", .len = 12, .declared = -1, .flags = 1};
  zip1(tpath("enc.zip"), &enc);
  expect_refused(tpath("enc.zip"), NSL_ERR_FORMAT, "encrypted");

  /* folder entries are fine and are not members */
  zip z = {0};
  zspec folder = {.name = "dir/", .data = "", .len = 0, .declared = -1, .unix_mode = 040755};
  zspec file = {.name = "dir/a.txt", .data = "hello", .len = 5, .declared = -1, .method = 8,
                .unix_mode = 0100644};
  zip_add(&z, &folder);
  zip_add(&z, &file);
  zip_save(&z, tpath("folder.zip"));
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_RAW;
  nsl_bundle *b;
  nsl_error err = {0};
  assert_int_equal(nsl_bundle_open(&b, tpath("folder.zip"), &o, &err), NSL_OK);
  assert_int_equal(nsl_bundle_count(b), 1);
  check_member(b, "dir/a.txt", "hello", 5);
  nsl_bundle_close(b);
}

static void test_zip64_and_overlap(void **state) {
  (void)state;
  /* zip64 records (sizes, offsets and the end record) read like plain ones */
  zip z = {.zip64_end = 1};
  zspec a = {.name = "reports/a.sqlite", .data = "zip64 stored", .len = 12, .declared = -1, .zip64 = 1};
  zspec b = {.name = "meta/b.txt", .data = "zip64 deflated zip64 deflated", .len = 29, .declared = -1,
             .method = 8, .zip64 = 1};
  zip_add(&z, &a);
  zip_add(&z, &b);
  zip_save(&z, tpath("z64.zip"));
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_RAW;
  nsl_bundle *bd;
  nsl_error err = {0};
  if (nsl_bundle_open(&bd, tpath("z64.zip"), &o, &err) != NSL_OK)
    fail_msg("%s", err.msg);
  check_member(bd, "reports/a.sqlite", "zip64 stored", 12);
  check_member(bd, "meta/b.txt", "zip64 deflated zip64 deflated", 29);
  nsl_bundle_close(bd);

  /* a 64-bit size is read as such: 5 GiB declared is above the 4 GiB bound */
  size_t clen;
  uint32_t crc;
  unsigned char *c = deflate_zeros(4, &clen, &crc);
  zspec huge = {.name = "reports/huge.sqlite", .method = 8, .raw = c, .raw_len = clen, .raw_crc = crc,
                .raw_usize = 4u << 20, .declared = 5ll << 30, .zip64 = 1};
  z = (zip){.zip64_end = 1};
  zip_add(&z, &huge);
  zip_save(&z, tpath("z64huge.zip"));
  free(c);
  expect_refused(tpath("z64huge.zip"), NSL_ERR_LIMIT, "5.0 GiB");

  /* two names over the same bytes */
  z = (zip){0};
  zspec k = {.name = "meta/kernel.txt", .data = "shared kernel", .len = 13, .declared = -1, .method = 8};
  zip_add(&z, &k);
  zip_alias(&z, "meta/alias.txt");
  zip_save(&z, tpath("overlap.zip"));
  expect_refused(tpath("overlap.zip"), NSL_ERR_FORMAT, "overlap");
}

static void test_empty(void **state) {
  (void)state;
  /* a zip with no entry at all: a valid plain zip, not a bundle */
  zip z = {0};
  zip_save(&z, tpath("nothing.zip"));
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_RAW;
  nsl_bundle *b;
  nsl_error err = {0};
  if (nsl_bundle_open(&b, tpath("nothing.zip"), &o, &err) != NSL_OK)
    fail_msg("%s", err.msg);
  assert_int_equal(nsl_bundle_count(b), 0);
  nsl_bundle_close(b);
  expect_refused_strict(tpath("nothing.zip"), "manifest.json");

  /* a bundle of nothing but its manifest */
  nsl_bundle_writer *w;
  assert_int_equal(nsl_bundle_writer_open(&w, tpath("bare.zip"), &err), NSL_OK);
  assert_int_equal(nsl__bundle_writer_finish_json(w, NULL, &err), NSL_OK);
  assert_int_equal(nsl_bundle_open(&b, tpath("bare.zip"), NULL, &err), NSL_OK);
  assert_int_equal(nsl_bundle_count(b), 1);
  assert_int_equal(json_array_size(json_object_get(nsl__bundle_manifest(b), "members")), 0);
  assert_int_equal(nsl_bundle_verify(b, &err), NSL_OK);
  nsl_bundle_close(b);
}

static void test_duplicates(void **state) {
  (void)state;
  zip z = {0};
  zspec a = {.name = "reports/a.sqlite", .data = "first", .len = 5, .declared = -1};
  zspec b = {.name = "reports/a.sqlite", .data = "second", .len = 6, .declared = -1};
  zip_add(&z, &a);
  zip_add(&z, &b);
  zip_save(&z, tpath("dup.zip"));
  expect_refused(tpath("dup.zip"), NSL_ERR_FORMAT, "appears twice");
}

static void test_bomb_declared(void **state) {
  (void)state;
  size_t clen;
  uint32_t crc;
  unsigned char *c = deflate_zeros(2048, &clen, &crc);   /* 2 GiB of zeros */
  assert_true(clen < 8u << 20);
  zspec e = {.name = "reports/zeros.sqlite", .method = 8, .raw = c, .raw_len = clen, .raw_crc = crc,
             .raw_usize = 2048ull << 20, .declared = -1};
  zip1(tpath("bomb.zip"), &e);
  free(c);
  long rss0 = maxrss_kib();
  expect_refused(tpath("bomb.zip"), NSL_ERR_LIMIT, "zip bomb");

  /* with the ratio bound off, the member bound and the total bound hold */
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_RAW;
  o.limits.max_ratio = 0;
  o.limits.max_member = 1ull << 30;
  nsl_error err = {0};
  nsl_bundle *b;
  assert_int_equal(nsl_bundle_open(&b, tpath("bomb.zip"), &o, &err), NSL_ERR_LIMIT);
  assert_msg_has(err, "reports/zeros.sqlite");
  assert_msg_has(err, "member size limit");
  o.limits.max_member = 0;
  o.limits.max_total = 1ull << 30;
  assert_int_equal(nsl_bundle_open(&b, tpath("bomb.zip"), &o, &err), NSL_ERR_LIMIT);
  assert_msg_has(err, "total limit");
  /* nothing near 2 GiB was ever allocated */
  assert_true(maxrss_kib() - rss0 < 256 * 1024);
}

static void test_bomb_lying_headers(void **state) {
  (void)state;
  size_t clen;
  uint32_t crc;
  unsigned char *c = deflate_zeros(2048, &clen, &crc);
  /* Both headers claim 1 MiB: the ratio check passes, decompression must
   * stop right after the first MiB. */
  zspec e = {.name = "reports/zeros.sqlite", .method = 8, .raw = c, .raw_len = clen, .raw_crc = crc,
             .raw_usize = 2048ull << 20, .declared = 1 << 20};
  zip1(tpath("liar.zip"), &e);
  free(c);
  long rss0 = maxrss_kib();
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.mode = NSL_BUNDLE_RAW;
  nsl_error err = {0};
  nsl_bundle *b;
  assert_int_equal(nsl_bundle_open(&b, tpath("liar.zip"), &o, &err), NSL_OK);
  void *data = (void *)&err;
  size_t len = 7;
  nsl_status st = nsl_bundle_read_member(b, "reports/zeros.sqlite", &data, &len, &err);
  assert_int_not_equal(st, NSL_OK);
  assert_null(data);
  assert_int_equal(len, 0);
  assert_msg_has(err, "reports/zeros.sqlite");
  assert_int_not_equal(nsl_bundle_verify(b, &err), NSL_OK);
  nsl_bundle_close(b);
  assert_true(maxrss_kib() - rss0 < 256 * 1024);

  /* a header that claims more than the data holds */
  zspec shorter = {.name = "meta/a.txt", .data = "only this", .len = 9, .declared = 4096, .method = 8};
  zip1(tpath("short.zip"), &shorter);
  assert_int_equal(nsl_bundle_open(&b, tpath("short.zip"), &o, &err), NSL_OK);
  assert_int_not_equal(nsl_bundle_read_member(b, "meta/a.txt", &data, &len, &err), NSL_OK);
  assert_msg_has(err, "meta/a.txt");
  nsl_bundle_close(b);
}

/* A bundle by hand: meta/a.txt (+ extra) and manifest text m. */
static void hand_bundle(const char *path, const char *manifest, int extra) {
  zip z = {0};
  zspec a = {.name = "meta/a.txt", .data = "hello bundle\n", .len = 13, .declared = -1, .method = 8};
  zip_add(&z, &a);
  if (extra) {
    zspec x = {.name = "meta/extra.txt", .data = "x", .len = 1, .declared = -1};
    zip_add(&z, &x);
  }
  zspec m = {.name = "manifest.json", .data = manifest, .len = strlen(manifest), .declared = -1};
  zip_add(&z, &m);
  zip_save(&z, path);
}

/* The start of a manifest listing meta/a.txt (13 bytes, sha256 %s). */
#define BUNDLE_A                                                                                   \
  "{\"format\":\"nsl-bundle\",\"format_version\":1,\"members\":[{\"path\":\"meta/a.txt\",\"size\":13," \
  "\"sha256\":\"%s\"}"

static void test_manifest_lies(void **state) {
  (void)state;
  char sha[65], good[512];
  sha_hex("hello bundle\n", 13, sha);
  snprintf(good, sizeof good,
           BUNDLE_A "]}", sha);
  nsl_error err = {0};
  nsl_bundle *b;
  void *data;
  size_t len;

  hand_bundle(tpath("good.zip"), good, 0);
  assert_int_equal(nsl_bundle_open(&b, tpath("good.zip"), NULL, &err), NSL_OK);
  check_member(b, "meta/a.txt", "hello bundle\n", 13);
  nsl_bundle_close(b);

  char text[1024];
  struct {
    const char *fmt;
    int extra;
    const char *needle;
  } cases[] = {
      {"{\"format\":\"nsl-bundle\",\"format_version\":1,"
       "\"members\":[{\"path\":\"meta/a.txt\",\"size\":14,\"sha256\":\"%s\"}]}", 0, "manifest.json"},
      {BUNDLE_A ","
       "{\"path\":\"meta/gone.txt\",\"size\":1,\"sha256\":\"%s\"}]}", 0, "meta/gone.txt"},
      {BUNDLE_A "]}", 1, "meta/extra.txt"},
      {"{\"format\":\"nsl-bundle\",\"format_version\":2,"
       "\"members\":[{\"path\":\"meta/a.txt\",\"size\":13,\"sha256\":\"%s\"}]}", 0, "newer"},
      {"{\"format\":\"zip-bundle\",\"format_version\":1,"
       "\"members\":[{\"path\":\"meta/a.txt\",\"size\":13,\"sha256\":\"%s\"}]}", 0, "zip-bundle"},
      {"{\"format\":\"nsl-bundle\",\"format_version\":1,"
       "\"members\":[{\"path\":\"meta/a.txt\",\"size\":13,\"sha256\":\"%.10s\"}]}", 0, "sha256"},
      {BUNDLE_A ","
       "{\"path\":\"meta/a.txt\",\"size\":13,\"sha256\":\"%s\"}]}", 0, "listed twice"},
      {"{\"format\":\"nsl-bundle\",\"format_version\":1,"
       "\"members\":[{\"path\":\"../a.txt\",\"size\":13,\"sha256\":\"%s\"}]}", 0, "'..'"},
      {"{\"format\":\"nsl-bundle\",\"format_version\":1,\"format\":\"nsl-bundle\","
       "\"members\":[]}", 0, "not valid JSON"},
      {BUNDLE_A "],"
       "\"reports\":[{\"member\":\"meta/a.txt\",\"rank\":0}"
       ",{\"member\":\"meta/a.txt\",\"rank\":1}]}", 0, "appears twice"},
      {BUNDLE_A "],"
       "\"reports\":[{\"member\":\"reports/r.sqlite\"}]}", 0, "reports/r.sqlite"},
      {BUNDLE_A "],"
       "\"ranks\":[\"zero\"]}", 0, "ranks"},
      {BUNDLE_A ",{\"path\":\"meta/extra.txt\",\"size\":1,\"sha256\":\"%s\"}],"
       "\"reports\":[{\"member\":\"meta/a.txt\",\"rank\":0},"
       "{\"member\":\"meta/extra.txt\",\"rank\":0}]}", 1, "rank 0 belongs to two reports"},
      {"[1,2,3]", 0, "not a JSON object"},
      {"{\"format\":", 0, "not valid JSON"},
  };
  nsl_bundle_options auto_mode;
  nsl_bundle_options_init(&auto_mode);
  auto_mode.mode = NSL_BUNDLE_AUTO;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(text, sizeof text, cases[i].fmt, sha, sha);
    hand_bundle(tpath("lie.zip"), text, cases[i].extra);
    nsl_status st = nsl_bundle_open(&b, tpath("lie.zip"), NULL, &err);
    if (st != NSL_ERR_FORMAT)
      fail_msg("case %zu: status %d (%s)", i, st, err.msg);
    assert_msg_has(err, cases[i].needle);
    assert_msg_has(err, "lie.zip");
    /* a zip that claims to be a bundle never falls back to raw */
    assert_int_equal(nsl_bundle_open(&b, tpath("lie.zip"), &auto_mode, &err), NSL_ERR_FORMAT);
  }

  /* a wrong sha256 opens (sizes agree) but no read gets past it */
  char wrong[65];
  sha_hex("hello bundlE\n", 13, wrong);
  snprintf(text, sizeof text,
           BUNDLE_A "]}", wrong);
  hand_bundle(tpath("badsha.zip"), text, 0);
  assert_int_equal(nsl_bundle_open(&b, tpath("badsha.zip"), NULL, &err), NSL_OK);
  assert_int_equal(nsl_bundle_read_member(b, "meta/a.txt", &data, &len, &err), NSL_ERR_FORMAT);
  assert_msg_has(err, "meta/a.txt");
  assert_msg_has(err, "sha256");
  assert_null(data);
  assert_int_equal(nsl_bundle_verify(b, &err), NSL_ERR_FORMAT);
  nsl_bundle_close(b);
  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  o.verify = 1;
  assert_int_equal(nsl_bundle_open(&b, tpath("badsha.zip"), &o, &err), NSL_ERR_FORMAT);
  assert_msg_has(err, "sha256");

  /* a manifest above its bound */
  o.verify = 0;
  o.limits.max_manifest = 16;
  assert_int_equal(nsl_bundle_open(&b, tpath("good.zip"), &o, &err), NSL_ERR_LIMIT);
  assert_msg_has(err, "manifest.json");
}

/* The example in archive-format/ is a valid version-1 manifest. */
static void test_spec_example(void **state) {
  (void)state;
  const char *src = getenv("NSL_SOURCE_DIR");
  if (src == NULL)
    skip();
  char path[1024];
  snprintf(path, sizeof path, "%s/archive-format/manifest.json", src);
  json_error_t jerr;
  json_t *m = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (m == NULL)
    fail_msg("%s: %s", path, jerr.text);
  nsl_error err = {0};
  if (nsl__manifest_check(m, NSL_ERR_FORMAT, path, &err) != NSL_OK)
    fail_msg("%s", err.msg);
  assert_string_equal(json_string_value(json_object_get(m, "format")), NSL_BUNDLE_FORMAT);
  assert_int_equal(json_integer_value(json_object_get(m, "format_version")), NSL_BUNDLE_FORMAT_VERSION);
  json_decref(m);
}

static void test_truncated_and_garbage(void **state) {
  (void)state;
  const char *path = tpath("whole.zip");
  if (write_roundtrip(path) != 0)
    skip();
  size_t len;
  unsigned char *z = slurp(path, &len);
  size_t cuts[] = {1, 2, 4, 30, 100, len / 4, len / 2, len - 4096, len - 200, len - 23, len - 22, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
    spit(tpath("cut.zip"), z, cuts[i]);
    expect_refused(tpath("cut.zip"), NSL_ERR_FORMAT, NULL);
  }
  /* bytes cut out of the middle: the directory no longer fits */
  unsigned char *spliced = malloc(len);
  memcpy(spliced, z, len / 2);
  memcpy(spliced + len / 2, z + len / 2 + 1000, len - len / 2 - 1000);
  spit(tpath("splice.zip"), spliced, len - 1000);
  free(spliced);
  expect_refused(tpath("splice.zip"), NSL_ERR_FORMAT, NULL);

  /* one flipped byte inside a stored member: caught by CRC or sha256 */
  cdent cd[16];
  int n = parse_cd(z, len, cd, 16);
  assert_int_equal(n, 7);
  size_t hit = 0;   /* the stored .xz payload starts with its magic */
  while (hit + 5 < len && memcmp(z + hit, "\xfd" "7zXZ", 5) != 0)
    hit++;
  assert_true(hit + 5 < len);
  z[hit + 40] ^= 0x20;
  spit(tpath("flip.zip"), z, len);
  nsl_bundle *b;
  nsl_error err = {0};
  void *data;
  assert_int_equal(nsl_bundle_open(&b, tpath("flip.zip"), NULL, &err), NSL_OK);
  assert_int_equal(nsl_bundle_read_member(b, "meta/module_0001.hlo.pb.xz", &data, &len, &err),
                   NSL_ERR_FORMAT);
  assert_msg_has(err, "meta/module_0001.hlo.pb.xz");
  nsl_bundle_close(b);
  free(z);

  spit(tpath("empty.zip"), "", 0);
  expect_refused(tpath("empty.zip"), NSL_ERR_FORMAT, "empty");
  unsigned char noise[65536];
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < sizeof noise; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    noise[i] = (unsigned char)x;
  }
  spit(tpath("noise.zip"), noise, sizeof noise);
  expect_refused(tpath("noise.zip"), NSL_ERR_FORMAT, NULL);
  memcpy(noise, "PK\x03\x04", 4);
  memcpy(noise + sizeof noise - 22, "PK\x05\x06", 4);   /* an end record pointing anywhere */
  spit(tpath("noise2.zip"), noise, sizeof noise);
  expect_refused(tpath("noise2.zip"), NSL_ERR_FORMAT, NULL);
  expect_refused(g_dir, NSL_ERR_IO, "not a regular file");
  expect_refused(tpath("missing.zip"), NSL_ERR_IO, NULL);

  nsl_bundle_options o;
  nsl_bundle_options_init(&o);
  assert_int_equal(nsl_bundle_open_memory(&b, "mem", noise, sizeof noise, &o, &err), NSL_ERR_FORMAT);
  assert_int_equal(nsl_bundle_open_memory(&b, "mem", NULL, 0, &o, &err), NSL_ERR_FORMAT);
  assert_msg_has(err, "empty");
}

/* ---- atomic writes -------------------------------------------------------------- */

static void test_tmpfile(void **state) {
  (void)state;
  nsl_error err = {0};
  int fd;
  char *tmp = NULL;
  mkdir(tpath("atomic"), 0755);
  const char *target = tpath("atomic/out.bin");
  assert_int_equal(nsl__tmpfile_open(target, &fd, &tmp, &err), NSL_OK);
  assert_true(strstr(tmp, "atomic/.out.bin.nsl-tmp-") != NULL);
  assert_int_equal(write(fd, "new", 3), 3);
  assert_int_equal(access(target, F_OK), -1);   /* not there before commit */
  assert_int_equal(nsl__tmpfile_commit(fd, tmp, target, NULL, &err), NSL_OK);
  free(tmp);
  size_t len;
  unsigned char *p = slurp(target, &len);
  assert_int_equal(len, 3);
  assert_memory_equal(p, "new", 3);
  free(p);

  /* abort: the existing target keeps its bytes, no temporary file left */
  assert_int_equal(nsl__tmpfile_open(target, &fd, &tmp, &err), NSL_OK);
  assert_int_equal(write(fd, "garbage", 7), 7);
  nsl__tmpfile_abort(fd, tmp);
  free(tmp);
  p = slurp(target, &len);
  assert_memory_equal(p, "new", 3);
  free(p);
  char *l = listing(tpath("atomic"));
  assert_string_equal(l, "out.bin\n");
  free(l);

  assert_int_equal(nsl__tmpfile_open(tpath("no/such/dir/out.bin"), &fd, &tmp, &err), NSL_ERR_IO);
  assert_int_equal(fd, -1);
  assert_null(tmp);
  assert_int_equal(nsl__tmpfile_open(tpath("atomic"), &fd, &tmp, &err), NSL_ERR_ARG);
  assert_null(tmp);
  assert_int_equal(nsl__tmpfile_open(tpath("atomic/"), &fd, &tmp, &err), NSL_ERR_ARG);
  assert_null(tmp);
}

/* The folder holds exactly `want` (names joined by '\n'), and out.zip
 * still holds "old". */
static void expect_untouched(const char *dir, const char *target) {
  char *l = listing(dir);
  assert_string_equal(l, "out.zip\n");
  free(l);
  size_t len;
  unsigned char *p = slurp(target, &len);
  assert_int_equal(len, 3);
  assert_memory_equal(p, "old", 3);
  free(p);
}

/* A bundle rewritten from itself (--embed): the writer locks the target,
 * so a second writer waits and then reads the first one's result; and the
 * rename is a compare-and-swap on the file read, so a program that replaced
 * the bundle without the lock makes the rewrite fail instead of losing its
 * update. */
static void test_writer_replaces(void **state) {
  (void)state;
  mkdir(tpath("cas"), 0755);
  char target[1024];
  snprintf(target, sizeof target, "%s", tpath("cas/b.zip"));
  nsl_error err = {0};
  nsl_bundle_writer *w, *w2;
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  assert_int_equal(add_text(w, "meta/a.txt", "a", &err), NSL_OK);
  assert_int_equal(nsl__bundle_writer_finish_json(w, NULL, &err), NSL_OK);

  /* rewrite: replaced by another program between read and rename */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  nsl_bundle *b = NULL;
  assert_int_equal(nsl_bundle_open(&b, target, NULL, &err), NSL_OK);
  assert_int_equal(nsl_bundle_writer_replaces(w, b, &err), NSL_OK);
  assert_int_equal(nsl_bundle_copy_members(b, w, NULL, &err), NSL_OK);
  assert_int_equal(add_text(w, "analyses/x/results.json", "{}", &err), NSL_OK);
  size_t len;
  unsigned char *theirs = slurp(target, &len);
  spit(tpath("cas/other.zip"), theirs, len);
  assert_int_equal(rename(tpath("cas/other.zip"), target), 0);   /* what a writer without the lock does */
  assert_int_equal(nsl__bundle_writer_finish_json(w, nsl__bundle_manifest(b), &err), NSL_ERR_IO);
  assert_msg_has(err, "changed while it was being rewritten");
  nsl_bundle_close(b);
  char *l = listing(tpath("cas"));
  assert_string_equal(l, "b.zip\n");   /* theirs kept, no temporary */
  free(l);
  free(theirs);

  /* the lock: a second writer of the same target waits for the first
   * (here: it gives up after its wait; in nsl the wait is minutes) */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  int fd = -1;
  assert_int_equal(nsl__tmpfile_lock_target(target, 200, &fd, &err), NSL_ERR_IO);
  assert_msg_has(err, "another process is writing it");
  assert_int_equal(fd, -1);
  nsl_bundle_writer_abort(w);
  assert_int_equal(nsl__tmpfile_lock_target(target, 200, &fd, &err), NSL_OK);   /* free again */
  assert_true(fd >= 0);
  close(fd);
  /* a writer that replaced the file while another waited: the waiter locks
   * the new file, not the old one */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  assert_int_equal(add_text(w, "meta/b.txt", "b", &err), NSL_OK);
  assert_int_equal(nsl__bundle_writer_finish_json(w, NULL, &err), NSL_OK);
  assert_int_equal(nsl_bundle_writer_open(&w2, target, &err), NSL_OK);
  assert_int_equal(nsl_bundle_open(&b, target, NULL, &err), NSL_OK);
  assert_non_null(nsl_bundle_find(b, "meta/b.txt"));
  assert_int_equal(nsl_bundle_writer_replaces(w2, b, &err), NSL_OK);
  assert_int_equal(nsl_bundle_copy_members(b, w2, NULL, &err), NSL_OK);
  assert_int_equal(nsl__bundle_writer_finish_json(w2, nsl__bundle_manifest(b), &err), NSL_OK);
  nsl_bundle_close(b);
}

static void test_writer_failures(void **state) {
  (void)state;
  mkdir(tpath("w"), 0755);
  const char *target = tpath("w/out.zip");
  spit(target, "old", 3);
  nsl_error err = {0};
  nsl_bundle_writer *w;

  /* names: refused, the writer stays usable */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  const char *bad[] = {"../x", "/abs", "a//b", "manifest.json", "a\\b", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(add_text(w, bad[i], "x", &err), NSL_ERR_ARG);
  assert_int_equal(add_text(w, "meta/a.txt", "x", &err), NSL_OK);
  assert_int_equal(add_text(w, "meta/a.txt", "y", &err), NSL_ERR_ARG);
  assert_msg_has(err, "already");
  assert_int_equal(add_path(w, "meta/b.txt", tpath("w/missing"), &err), NSL_ERR_IO);
  assert_non_null(nsl_bundle_writer_sha256(w, "meta/a.txt"));
  assert_null(nsl_bundle_writer_sha256(w, "meta/b.txt"));
  /* a manifest that names a member never written: refused, nothing left */
  json_t *m = json_pack("{s:[{s:s}]}", "reports", "member", "reports/r0.sqlite");
  assert_int_equal(nsl__bundle_writer_finish_json(w, m, &err), NSL_ERR_ARG);
  assert_msg_has(err, "reports/r0.sqlite");
  json_decref(m);
  expect_untouched(tpath("w"), target);

  /* fewer bytes than announced */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  assert_int_equal(nsl_bundle_writer_begin(w, "meta/a.txt", 10, NSL_BUNDLE_COMPRESS_AUTO, &err), NSL_OK);
  assert_int_equal(nsl_bundle_writer_write(w, "12345", 5, &err), NSL_OK);
  assert_int_equal(nsl_bundle_writer_end(w, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__bundle_writer_finish_json(w, NULL, &err), NSL_ERR_ARG);
  expect_untouched(tpath("w"), target);

  /* the disk fills up mid-member (a file size limit stands in for it) */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  size_t big = 4u << 20;
  unsigned char *noise = malloc(big);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < big; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    noise[i] = (unsigned char)x;
  }
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 1u << 20;
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  nsl_status st =
      nsl_bundle_writer_add_memory(w, "meta/noise.bin", noise, big, NSL_BUNDLE_COMPRESS_STORE, &err);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  assert_int_equal(st, NSL_ERR_IO);
  assert_msg_has(err, "out.zip");
  assert_int_equal(nsl__bundle_writer_finish_json(w, NULL, &err), NSL_ERR_ARG);
  expect_untouched(tpath("w"), target);

  /* the same while a file is deflated (nsl bundle's path): zlib still points
   * into the copy buffer when the write fails, and the abort that follows
   * must not flush the stream over it (a use after free under ASan) */
  char noise_path[1024];
  snprintf(noise_path, sizeof noise_path, "%s", tpath("noise.bin"));
  spit(noise_path, noise, big);
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  prev = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  st = nsl_bundle_writer_add_file(w, "meta/noise.bin", noise_path, NSL_BUNDLE_COMPRESS_DEFLATE, &err);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  assert_int_equal(st, NSL_ERR_IO);
  assert_msg_has(err, "File too large");
  nsl_bundle_writer_abort(w);
  unlink(noise_path);
  expect_untouched(tpath("w"), target);
  free(noise);

  /* abort */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  assert_int_equal(add_text(w, "meta/a.txt", "x", &err), NSL_OK);
  nsl_bundle_writer_abort(w);
  expect_untouched(tpath("w"), target);

  /* success replaces the target */
  assert_int_equal(nsl_bundle_writer_open(&w, target, &err), NSL_OK);
  assert_int_equal(nsl_bundle_writer_set_level(w, 0, &err), NSL_ERR_ARG);
  assert_int_equal(nsl_bundle_writer_set_level(w, 1, &err), NSL_OK);
  assert_int_equal(add_text(w, "meta/a.txt", "x", &err), NSL_OK);
  assert_int_equal(nsl_bundle_writer_set_level(w, 9, &err), NSL_ERR_ARG);
  assert_int_equal(nsl__bundle_writer_finish_json(w, NULL, &err), NSL_OK);
  nsl_bundle *b;
  assert_int_equal(nsl_bundle_open(&b, target, NULL, &err), NSL_OK);
  check_member(b, "meta/a.txt", "x", 1);
  nsl_bundle_close(b);
  char *l = listing(tpath("w"));
  assert_string_equal(l, "out.zip\n");
  free(l);

  assert_int_equal(nsl_bundle_writer_open(&w, tpath("w/no/such/out.zip"), &err), NSL_ERR_IO);
  assert_int_equal(nsl_bundle_check_name("reports/ok.sqlite", &err), NSL_OK);
  assert_int_equal(nsl_bundle_check_name("reports/../x", &err), NSL_ERR_ARG);
}

/* ---- combine ------------------------------------------------------------------------ */

/* A per-rank bundle: reports/report.sqlite = data file `report`, the shared
 * source, and an env file that differs per rank. */
static void rank_bundle(const char *path, const char *report, int rank, const char *cmd, const char *nsys,
                        const char *env) {
  nsl_error err = {0};
  nsl_bundle_writer *w;
  assert_int_equal(nsl_bundle_writer_open(&w, path, &err), NSL_OK);
  assert_int_equal(add_path(w, "reports/report.sqlite", report, &err), NSL_OK);
  assert_int_equal(add_text(w, "sources/train.py", k_train, &err), NSL_OK);
  assert_int_equal(add_text(w, "meta/env.txt", env, &err), NSL_OK);
  json_t *m = caller_manifest(cmd, rank, "reports/report.sqlite", nsys);
  json_array_set_new(json_object_get(m, "hosts"), 0, json_sprintf("node%d", rank));
  json_object_set_new(json_array_get(json_object_get(m, "reports"), 0), "host", json_sprintf("node%d", rank));
  assert_int_equal(nsl__bundle_writer_finish_json(w, m, &err), NSL_OK);
  json_decref(m);
}

static void test_combine(void **state) {
  (void)state;
  const char *tiny = data_path("nsys/tiny_2026.1.sqlite");
  const char *nvf = data_path("nsys/nvfuser_2024.6.sqlite");
  if (!tiny || !nvf)
    skip();
  mkdir(tpath("c"), 0755);
  rank_bundle(tpath("c/r0.zip"), tiny, 0, "train.py", "2026.1.1.100", "RANK=0\n");
  rank_bundle(tpath("c/r1.zip"), nvf, 1, "train.py", "2026.1.3.5", "RANK=1\n");
  rank_bundle(tpath("c/r0bis.zip"), nvf, 0, "train.py", "2026.1.1.100", "RANK=0\n");
  rank_bundle(tpath("c/eval.zip"), nvf, 2, "eval.py", "2026.1.1.100", "RANK=2\n");
  rank_bundle(tpath("c/old.zip"), nvf, 3, "train.py", "2024.6.2.225", "RANK=3\n");
  nsl_error err = {0};
  char out[1024];
  snprintf(out, sizeof out, "%s", tpath("c/all.zip"));

  const char *ok[] = {tpath("c/r0.zip"), tpath("c/r1.zip")};
  assert_int_equal(nsl_bundle_combine(ok, 2, out, NULL, &err), NSL_OK);
  nsl_bundle *b;
  assert_int_equal(nsl_bundle_open(&b, out, NULL, &err), NSL_OK);
  /* report (x2, one renamed), train.py once, env (x2, one renamed), manifest */
  assert_int_equal(nsl_bundle_count(b), 6);
  size_t len;
  unsigned char *want = slurp(tiny, &len);
  check_member(b, "reports/report.sqlite", want, len);
  free(want);
  want = slurp(nvf, &len);
  check_member(b, "reports/report.rank1.sqlite", want, len);
  free(want);
  check_member(b, "sources/train.py", k_train, strlen(k_train));
  check_member(b, "meta/env.txt", "RANK=0\n", 7);
  check_member(b, "meta/env~2.txt", "RANK=1\n", 7);
  const json_t *m = nsl__bundle_manifest(b);
  const json_t *ranks = json_object_get(m, "ranks");
  assert_int_equal(json_array_size(ranks), 2);
  assert_int_equal(json_integer_value(json_array_get(ranks, 0)), 0);
  assert_int_equal(json_integer_value(json_array_get(ranks, 1)), 1);
  assert_int_equal(json_array_size(json_object_get(m, "hosts")), 2);
  assert_int_equal(json_array_size(json_object_get(m, "reports")), 2);
  nsl_report_info info;
  memset(&info, 0, sizeof info);
  assert_int_equal(nsl_bundle_fill_report_info(b, "reports/report.rank1.sqlite", &info), 1);
  assert_int_equal(info.rank, 1);
  assert_string_equal(info.host, "node1");
  assert_string_equal(json_string_value(json_array_get(json_object_get(m, "command"), 1)), "train.py");
  assert_int_equal(nsl_bundle_verify(b, &err), NSL_OK);
  nsl_bundle_close(b);

  /* conflicts: each refused naming both inputs, nothing written */
  char *before = listing(tpath("c"));
  struct {
    const char *a, *b, *needle;
  } bad[] = {
      {"c/r0.zip", "c/r0bis.zip", "rank 0"},
      {"c/r0.zip", "c/eval.zip", "different commands"},
      {"c/r0.zip", "c/old.zip", "nsys releases"},
      {"c/r0.zip", "c/r0.zip", "same file"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *in[] = {tpath(bad[i].a), tpath(bad[i].b)};
    assert_int_equal(nsl_bundle_combine(in, 2, tpath("c/bad.zip"), NULL, &err), NSL_ERR_ARG);
    assert_msg_has(err, bad[i].needle);
    assert_msg_has(err, in[0]);
    if (i < 3)
      assert_msg_has(err, in[1]);
  }
  const char *self[] = {tpath("c/r0.zip"), tpath("c/r1.zip")};
  assert_int_equal(nsl_bundle_combine(self, 2, tpath("c/r1.zip"), NULL, &err), NSL_ERR_ARG);
  assert_msg_has(err, "never modified");
  char *after = listing(tpath("c"));
  assert_string_equal(before, after);
  free(before);
  free(after);

  /* allowed on request */
  nsl_combine_options o;
  nsl_combine_options_init(&o);
  o.allow_mixed_commands = 1;
  const char *mixed[] = {tpath("c/r0.zip"), tpath("c/eval.zip")};
  assert_int_equal(nsl_bundle_combine(mixed, 2, tpath("c/mixed.zip"), &o, &err), NSL_OK);
  unlink(tpath("c/mixed.zip"));

  /* combining the combined bundle with another rank keeps working */
  const char *again[] = {out, tpath("c/old.zip")};
  o.allow_mixed_nsys = 1;
  if (nsl_bundle_combine(again, 2, tpath("c/again.zip"), &o, &err) != NSL_OK)
    fail_msg("%s", err.msg);
  assert_int_equal(nsl_bundle_open(&b, tpath("c/again.zip"), NULL, &err), NSL_OK);
  assert_non_null(nsl_bundle_find(b, "reports/report.rank3.sqlite"));
  assert_non_null(nsl_bundle_find(b, "meta/env~2-2.txt"));
  nsl_bundle_close(b);

  /* an input whose manifest lies about a hash: refused while copying */
  char sha[65], text[600];
  sha_hex("something else", 14, sha);
  snprintf(text, sizeof text,
           BUNDLE_A "]}", sha);
  hand_bundle(tpath("c/liar.zip"), text, 0);
  before = listing(tpath("c"));
  const char *liar[] = {tpath("c/r0.zip"), tpath("c/liar.zip")};
  assert_int_equal(nsl_bundle_combine(liar, 2, tpath("c/bad.zip"), NULL, &err), NSL_ERR_FORMAT);
  assert_msg_has(err, "liar.zip");
  assert_msg_has(err, "sha256");
  after = listing(tpath("c"));
  assert_string_equal(before, after);
  free(before);
  free(after);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_rewrite_in_place),
      cmocka_unit_test(test_trace_from_bundle),
      cmocka_unit_test(test_raw_nsys_jax),
      cmocka_unit_test(test_hostile_paths),
      cmocka_unit_test(test_links_and_special_files),
      cmocka_unit_test(test_zip64_and_overlap),
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_duplicates),
      cmocka_unit_test(test_bomb_declared),
      cmocka_unit_test(test_bomb_lying_headers),
      cmocka_unit_test(test_manifest_lies),
      cmocka_unit_test(test_spec_example),
      cmocka_unit_test(test_truncated_and_garbage),
      cmocka_unit_test(test_tmpfile),
      cmocka_unit_test(test_writer_failures),
      cmocka_unit_test(test_writer_replaces),
      cmocka_unit_test(test_combine),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
