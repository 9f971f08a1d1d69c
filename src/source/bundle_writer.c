/*
 * bundle_writer.c -- writing nsl bundles: members streamed through
 * libarchive's zip writer into a temporary file beside the target, sha256
 * and size computed on the way, manifest.json last, then fsync + rename.
 */
#include "source/bundle_internal.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/atomic_write.h"
#include "core/text.h"

#ifndef NSL_VERSION
#define NSL_VERSION "unknown"
#endif

#define COPY_CHUNK (256 * 1024)
#define LOCK_WAIT_MS (10 * 60 * 1000)   /* how long a writer waits for another writer of its target */

typedef struct wmember {
  char *name;
  uint64_t size;
  char sha[65];
} wmember;

struct nsl_bundle_writer {
  char *target;
  int fd;
  char *tmp;                   /* the temporary file's name (allocated), or NULL */
  int lock_fd;                 /* flock on the target being replaced, or -1 */
  nsl__file_id replaced;       /* replace the target only if it is still this file (see _replaces) */
  unsigned char *copy_buf;     /* every byte reaches the zip writer from here: zlib may point into it until the archive is freed */
  struct archive *ar;
  struct archive_entry *entry;
  wmember *m;                  /* members written, in order */
  size_t n, cap;
  size_t *slots;               /* open-addressing name index: member index + 1, 0 empty */
  size_t nslots;
  int64_t created;             /* seconds since the epoch */
  int broken;                  /* the zip stream is unusable: only abort remains */
  int discard;                 /* aborting: drop whatever libarchive still writes */
  int io_errno;                /* errno of the last failed write */
  int started;                 /* archive_write_open2 done (on the first member) */
  uint64_t offset;             /* bytes written to the file so far (unbuffered: bytes_per_block 0) */
  uint64_t align_pad;          /* P of the aligned member being written (nsl__bundle_writer_begin_aligned) */
  /* the member being written */
  int open;
  char *cur_name;
  uint64_t expect, written;
  struct sha256_ctx sha;
};

static la_ssize_t cb_write(struct archive *a, void *ctx, const void *buf, size_t len) {
  nsl_bundle_writer *w = ctx;
  const char *p = buf;
  size_t left = len;
  if (w->discard)
    return (la_ssize_t)len;
  while (left > 0) {
    ssize_t n = write(w->fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      /* Said to libarchive as written: a failed write callback leaves it in its fatal state, where
       * archive_write_free no longer closes the entry and the member's zlib stream leaks (a full disk,
       * a file size limit).  The error is kept in w->io_errno, which every caller checks after each
       * libarchive call, and the rest is dropped. */
      w->io_errno = errno;
      w->discard = 1;
      (void)a;
      return (la_ssize_t)len;
    }
    p += n;
    left -= (size_t)n;
  }
  w->offset += len;
  return (la_ssize_t)len;
}

/* Why the last libarchive call failed: the write error if there was one. */
static const char *ar_reason(const nsl_bundle_writer *w) {
  if (w->io_errno)
    return strerror(w->io_errno);
  const char *s = archive_error_string(w->ar);
  return s ? s : "zip writer failed";
}

/* Marks w unusable and sets err: "cannot write '<target>': <message>". */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static nsl_status fail(nsl_bundle_writer *w, nsl_error *err, nsl_status code, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  w->broken = 1;
  return nsl_error_set(err, code, "cannot write '%s': %s", w->target, msg);
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static long lookup(const nsl_bundle_writer *w, const char *name) {
  if (w->nslots == 0)
    return -1;
  for (size_t i = hash_name(name) & (w->nslots - 1);; i = (i + 1) & (w->nslots - 1)) {
    size_t s = w->slots[i];
    if (s == 0)
      return -1;
    if (strcmp(w->m[s - 1].name, name) == 0)
      return (long)(s - 1);
  }
}

static void slot_insert(size_t *slots, size_t nslots, const char *name, size_t idx) {
  size_t i = hash_name(name) & (nslots - 1);
  while (slots[i] != 0)
    i = (i + 1) & (nslots - 1);
  slots[i] = idx + 1;
}

/* Records the finished member (takes name). */
static int remember(nsl_bundle_writer *w, char *name, uint64_t size, const char sha[65]) {
  if (w->n == w->cap) {
    size_t ncap = w->cap ? 2 * w->cap : 32;
    wmember *m = realloc(w->m, ncap * sizeof *m);
    if (m == NULL)
      return -1;
    w->m = m;
    w->cap = ncap;
  }
  if (2 * (w->n + 1) > w->nslots) {
    size_t ns = w->nslots ? 2 * w->nslots : 64;
    size_t *slots = calloc(ns, sizeof *slots);
    if (slots == NULL)
      return -1;
    for (size_t i = 0; i < w->n; i++)
      slot_insert(slots, ns, w->m[i].name, i);
    free(w->slots);
    w->slots = slots;
    w->nslots = ns;
  }
  w->m[w->n].name = name;
  w->m[w->n].size = size;
  memcpy(w->m[w->n].sha, sha, 65);
  slot_insert(w->slots, w->nslots, name, w->n);
  w->n++;
  return 0;
}

nsl_status nsl_bundle_writer_open(nsl_bundle_writer **out, const char *target, nsl_error *err) {
  nsl_status st;
  *out = NULL;
  nsl_bundle_writer *w = calloc(1, sizeof *w);
  if (w == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", target ? target : "");
  w->fd = -1;
  w->lock_fd = -1;
  /* Writers of one target take turns: a second --embed reads the bundle the
   * first one wrote, and no update is lost. */
  if ((st = nsl__tmpfile_lock_target(target, LOCK_WAIT_MS, &w->lock_fd, err)) != NSL_OK) {
    free(w);
    return st;
  }
  if ((st = nsl__tmpfile_open(target, &w->fd, &w->tmp, err)) != NSL_OK) {
    if (w->lock_fd >= 0) close(w->lock_fd);
    free(w);
    return st;
  }
  w->target = strdup(target);
  w->entry = archive_entry_new();
  w->ar = archive_write_new();
  w->created = (int64_t)time(NULL);
  if (w->target == NULL || w->entry == NULL || w->ar == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", target);
    goto fail;
  }
  if (archive_write_set_format_zip(w->ar) != ARCHIVE_OK ||
      archive_write_set_options(w->ar, "zip:hdrcharset=UTF-8") != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(w->ar, 0) != ARCHIVE_OK ||
      archive_write_set_bytes_in_last_block(w->ar, 1) != ARCHIVE_OK) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': %s", target, ar_reason(w));
    goto fail;
  }
  *out = w;
  return NSL_OK;
fail:
  nsl_bundle_writer_abort(w);
  return st;
}

/* Starts member name; internal=1 lets the writer add manifest.json. */
static nsl_status begin(nsl_bundle_writer *w, const char *name, uint64_t size,
                        nsl_bundle_compression comp, int internal, nsl_error *err) {
  if (w->broken)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': an earlier error left the bundle "
                         "unfinishable", w->target);
  if (w->open)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': member '%s' is not finished", w->target,
                         w->cur_name);
  const char *problem = nsl__bundle_name_problem(name);
  if (problem) {
    char shown[300];
    nsl__printable(name, shown, sizeof shown);
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': member name '%s' %s", w->target, shown,
                         problem);
  }
  if (!internal && strcmp(name, NSL_BUNDLE_MANIFEST) == 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': manifest.json is written by the bundle "
                         "writer itself", w->target);
  if (lookup(w, name) >= 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': member '%s' was already added",
                         w->target, name);
  if (size > (uint64_t)INT64_MAX)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': member '%s' is too large", w->target,
                         name);
  if (!w->started) {
    if (archive_write_open2(w->ar, w, NULL, cb_write, NULL, NULL) != ARCHIVE_OK || w->io_errno)
      return fail(w, err, NSL_ERR_IO, "%s", ar_reason(w));
    w->started = 1;
  }
  w->cur_name = strdup(name);
  if (w->cur_name == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", w->target);

  archive_entry_clear(w->entry);
  archive_entry_set_pathname_utf8(w->entry, name);
  archive_entry_set_filetype(w->entry, AE_IFREG);
  archive_entry_set_perm(w->entry, 0644);
  archive_entry_set_size(w->entry, (la_int64_t)size);
  archive_entry_set_mtime(w->entry, (time_t)w->created, 0);
  int store = comp == NSL_BUNDLE_COMPRESS_STORE ||
              (comp == NSL_BUNDLE_COMPRESS_AUTO && nsl__bundle_is_precompressed(name)) || size == 0;
  int r = store ? archive_write_zip_set_compression_store(w->ar)
                : archive_write_zip_set_compression_deflate(w->ar);
  if (r == ARCHIVE_OK)
    r = archive_write_header(w->ar, w->entry);
  if (r != ARCHIVE_OK || w->io_errno) {
    free(w->cur_name);
    w->cur_name = NULL;
    return fail(w, err, NSL_ERR_IO, "member '%s': %s", name, ar_reason(w));
  }
  w->open = 1;
  w->expect = size;
  w->written = 0;
  sha256_init(&w->sha);
  return NSL_OK;
}

nsl_status nsl_bundle_writer_begin(nsl_bundle_writer *w, const char *name, uint64_t size,
                                   nsl_bundle_compression comp, nsl_error *err) {
  return begin(w, name, size, comp, 0, err);
}

/* Passes len bytes of w->copy_buf to the zip writer.  zlib keeps a pointer
 * to the bytes it has not consumed when a write fails, and libarchive's
 * cleanup still flushes them: so only the writer's own buffer, freed after
 * the archive, is ever handed over. */
static nsl_status write_buffered(nsl_bundle_writer *w, size_t len, nsl_error *err) {
  if (len > w->expect - w->written)
    return fail(w, err, NSL_ERR_ARG, "member '%s' gets more than the %llu bytes announced", w->cur_name,
                (unsigned long long)w->expect);
  sha256_update(&w->sha, len, w->copy_buf);
  const unsigned char *p = w->copy_buf;
  while (len > 0) {
    la_ssize_t n = archive_write_data(w->ar, p, len);
    if (n <= 0 || w->io_errno)
      return fail(w, err, NSL_ERR_IO, "member '%s': %s", w->cur_name, ar_reason(w));
    p += n;
    len -= (size_t)n;
    w->written += (uint64_t)n;
  }
  return NSL_OK;
}

/* w->copy_buf, allocated on first use. */
static nsl_status need_buffer(nsl_bundle_writer *w, nsl_error *err) {
  if (w->copy_buf == NULL && (w->copy_buf = malloc(COPY_CHUNK)) == NULL)
    return nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", w->target);
  return NSL_OK;
}

nsl_status nsl_bundle_writer_write(nsl_bundle_writer *w, const void *data, size_t len, nsl_error *err) {
  if (!w->open)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no member is open", w->target);
  if (len > w->expect - w->written)
    return fail(w, err, NSL_ERR_ARG, "member '%s' gets more than the %llu bytes announced", w->cur_name,
                (unsigned long long)w->expect);
  nsl_status st = need_buffer(w, err);
  const char *p = data;
  while (st == NSL_OK && len > 0) {   /* copied: the caller's bytes may be gone before the writer is */
    size_t piece = len < COPY_CHUNK ? len : COPY_CHUNK;
    memcpy(w->copy_buf, p, piece);
    st = write_buffered(w, piece, err);
    p += piece;
    len -= piece;
  }
  return st;
}

nsl_status nsl_bundle_writer_end(nsl_bundle_writer *w, nsl_error *err) {
  if (!w->open)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no member is open", w->target);
  if (w->written != w->expect)
    return fail(w, err, NSL_ERR_ARG, "member '%s' got %llu of the %llu bytes announced", w->cur_name,
                (unsigned long long)w->written, (unsigned long long)w->expect);
  if (archive_write_finish_entry(w->ar) != ARCHIVE_OK || w->io_errno)
    return fail(w, err, NSL_ERR_IO, "member '%s': %s", w->cur_name, ar_reason(w));
  char hex[65];
  nsl__sha256_hex(&w->sha, hex);
  w->open = 0;
  if (remember(w, w->cur_name, w->expect, hex) != 0) {
    free(w->cur_name);
    w->cur_name = NULL;
    return fail(w, err, NSL_ERR_NOMEM, "out of memory");
  }
  w->cur_name = NULL;
  return NSL_OK;
}

static nsl_status add_memory(nsl_bundle_writer *w, const char *name, const void *data, size_t len,
                             nsl_bundle_compression comp, int internal, nsl_error *err) {
  nsl_status st = begin(w, name, len, comp, internal, err);
  if (st == NSL_OK && len > 0)
    st = nsl_bundle_writer_write(w, data, len, err);
  if (st == NSL_OK)
    st = nsl_bundle_writer_end(w, err);
  return st;
}

nsl_status nsl_bundle_writer_add_memory(nsl_bundle_writer *w, const char *name, const void *data,
                                        size_t len, nsl_bundle_compression comp, nsl_error *err) {
  if (data == NULL && len > 0)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': member '%s' has no data", w->target,
                         name ? name : "");
  return add_memory(w, name, data, len, comp, 0, err);
}

nsl_status nsl_bundle_writer_add_file(nsl_bundle_writer *w, const char *name, const char *path,
                                      nsl_bundle_compression comp, nsl_error *err) {
  struct stat sb;
  nsl_status st;
  unsigned char *buf = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* a FIFO: refused below, never waited on */
  if (fd < 0)
    return nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': cannot read '%s': %s", w->target, path,
                         strerror(errno));
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = nsl_error_set(err, NSL_ERR_IO, "cannot write '%s': '%s' is not a regular file", w->target, path);
    goto done;
  }
  if ((st = need_buffer(w, err)) != NSL_OK)
    goto done;
  buf = w->copy_buf;   /* read straight into the writer's buffer (see write_buffered) */
  uint64_t size = (uint64_t)sb.st_size, done = 0;
  if ((st = begin(w, name, size, comp, 0, err)) != NSL_OK)
    goto done;
  while (done < size) {
    size_t want = size - done < COPY_CHUNK ? (size_t)(size - done) : COPY_CHUNK;
    ssize_t n = read(fd, buf, want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      st = fail(w, err, NSL_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
      goto done;
    }
    if (n == 0) {
      st = fail(w, err, NSL_ERR_IO, "'%s' shrank while it was copied", path);
      goto done;
    }
    if ((st = write_buffered(w, (size_t)n, err)) != NSL_OK)
      goto done;
    done += (uint64_t)n;
  }
  ssize_t extra;
  do
    extra = read(fd, buf, 1);
  while (extra < 0 && errno == EINTR);
  if (extra > 0) {
    st = fail(w, err, NSL_ERR_IO, "'%s' grew while it was copied", path);
    goto done;
  }
  st = nsl_bundle_writer_end(w, err);
done:
  close(fd);
  return st;
}

nsl_status nsl_bundle_writer_replaces(nsl_bundle_writer *w, const nsl_bundle *b, nsl_error *err) {
  if (!nsl__bundle_file_id(b, &w->replaced))
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': the bundle given is not a file", w->target);
  return NSL_OK;
}

nsl_status nsl_bundle_writer_set_level(nsl_bundle_writer *w, int level, nsl_error *err) {
  char opt[48];
  if (w->started)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': the compression level is set before the "
                         "first member", w->target);
  if (level < 1 || level > 9)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': compression level %d is not in 1..9",
                         w->target, level);
  snprintf(opt, sizeof opt, "zip:compression-level=%d", level);
  if (archive_write_set_options(w->ar, opt) != ARCHIVE_OK)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': %s", w->target, ar_reason(w));
  return NSL_OK;
}

const char *nsl_bundle_writer_sha256(const nsl_bundle_writer *w, const char *name) {
  long i = name ? lookup(w, name) : -1;
  return i < 0 ? NULL : w->m[i].sha;
}

/* Sets key of m to a new value (taking the reference); -1 on failure. */
static int set_new(json_t *m, const char *key, json_t *v) {
  return v == NULL ? -1 : json_object_set_new(m, key, v);
}

nsl_status nsl_bundle_writer_finish(nsl_bundle_writer *w, const char *manifest_json, nsl_error *err) {
  json_t *m = NULL;
  if (manifest_json) {   /* text that is no JSON object: refused below as one that is not an object */
    m = json_loads(manifest_json, JSON_REJECT_DUPLICATES, NULL);
    if (m == NULL)
      m = json_null();
  }
  nsl_status st = nsl__bundle_writer_finish_json(w, m, err);
  json_decref(m);
  return st;
}

nsl_status nsl__bundle_writer_finish_json(nsl_bundle_writer *w, const json_t *manifest, nsl_error *err) {
  nsl_status st;
  json_t *m = NULL;
  char *text = NULL;
  char *prefix = NULL;

  if (w == NULL)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write a bundle: no writer");
  prefix = nsl__printf_alloc("cannot write '%s'", w->target);
  if (prefix == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "cannot write '%s': out of memory", w->target);
    goto fail;
  }
  if (w->broken) {
    st = nsl_error_set(err, NSL_ERR_ARG, "%s: an earlier error left the bundle unfinishable", prefix);
    goto fail;
  }
  if (w->open) {
    st = nsl_error_set(err, NSL_ERR_ARG, "%s: member '%s' is not finished", prefix, w->cur_name);
    goto fail;
  }
  if (manifest != NULL && !json_is_object(manifest)) {
    st = nsl_error_set(err, NSL_ERR_ARG, "%s: the manifest given is not a JSON object", prefix);
    goto fail;
  }
  m = manifest ? json_deep_copy(manifest) : json_object();
  json_t *members = json_array();
  char created[32];
  nsl__iso8601_utc(w->created, created);
  int bad = m == NULL || members == NULL;
  if (!bad)
    bad = set_new(m, "format", json_string(NSL_BUNDLE_FORMAT)) ||
          set_new(m, "format_version", json_integer(NSL_BUNDLE_FORMAT_VERSION)) ||
          set_new(m, "creator", json_string("nsl " NSL_VERSION)) ||
          set_new(m, "nsl_version", json_string(NSL_VERSION));
  if (!bad && !json_is_string(json_object_get(m, "created")))
    bad = set_new(m, "created", json_string(created));
  for (size_t i = 0; !bad && i < w->n; i++) {
    json_t *e = json_pack("{s:s, s:I, s:s}", "path", w->m[i].name, "size", (json_int_t)w->m[i].size,
                          "sha256", w->m[i].sha);
    bad = e == NULL || json_array_append_new(members, e) != 0;
  }
  if (!bad) {
    bad = json_object_set_new(m, "members", members) != 0;
    members = NULL;
  }
  json_decref(members);
  if (bad) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "%s: out of memory building manifest.json", prefix);
    goto fail;
  }
  if ((st = nsl__manifest_check(m, NSL_ERR_ARG, prefix, err)) != NSL_OK)
    goto fail;
  text = json_dumps(m, JSON_INDENT(2));
  if (text == NULL) {
    st = nsl_error_set(err, NSL_ERR_NOMEM, "%s: cannot serialise manifest.json", prefix);
    goto fail;
  }
  size_t len = strlen(text);
  text[len] = '\n';   /* replaces the NUL: the member is the text and a newline */
  st = add_memory(w, NSL_BUNDLE_MANIFEST, text, len + 1, NSL_BUNDLE_COMPRESS_DEFLATE, 1, err);
  if (st != NSL_OK)
    goto fail;
  if (archive_write_close(w->ar) != ARCHIVE_OK || w->io_errno) {
    st = nsl_error_set(err, NSL_ERR_IO, "%s: %s", prefix, ar_reason(w));
    goto fail;
  }
  st = nsl__tmpfile_commit(w->fd, w->tmp, w->target, &w->replaced, err);
  w->fd = -1;
  free(w->tmp);
  w->tmp = NULL;
  if (st != NSL_OK)
    goto fail;
  free(prefix);
  free(text);
  json_decref(m);
  nsl_bundle_writer_abort(w);   /* releases what is left; nothing on disk remains to remove */
  return NSL_OK;
fail:
  free(prefix);
  free(text);
  json_decref(m);
  nsl_bundle_writer_abort(w);
  return st;
}

void nsl_bundle_writer_abort(nsl_bundle_writer *w) {
  if (w == NULL)
    return;
  w->discard = 1;   /* archive_write_free may still flush: drop it */
  if (w->ar)
    archive_write_free(w->ar);   /* before copy_buf: it may still flush from it */
  if (w->entry)
    archive_entry_free(w->entry);
  nsl__tmpfile_abort(w->fd, w->tmp);
  free(w->tmp);
  if (w->lock_fd >= 0)
    close(w->lock_fd);   /* after the rename: the next writer reads what we wrote */
  free(w->copy_buf);
  for (size_t i = 0; i < w->n; i++)
    free(w->m[i].name);
  free(w->m);
  free(w->slots);
  free(w->cur_name);
  free(w->target);
  free(w);
}

nsl_status nsl__bundle_writer_begin_aligned(nsl_bundle_writer *w, const char *name, uint64_t file_bytes,
                                            nsl_error *err) {
  static const unsigned char zeros[16];
  if (file_bytes > (uint64_t)INT64_MAX - 16)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': member '%s' is too large", w->target, name);
  nsl_status st = begin(w, name, file_bytes + 16, NSL_BUNDLE_COMPRESS_STORE, 0, err);
  if (st != NSL_OK)
    return st;
  /* stored and unbuffered: the member's data starts at w->offset */
  uint64_t pad = 8 + (8 - (w->offset + 8) % 8) % 8;
  unsigned char le[8];
  for (int i = 0; i < 8; i++)
    le[i] = (unsigned char)(pad >> (8 * i));
  w->align_pad = pad;
  st = nsl_bundle_writer_write(w, le, 8, err);
  if (st == NSL_OK)
    st = nsl_bundle_writer_write(w, zeros, (size_t)pad - 8, err);
  return st;
}

nsl_status nsl__bundle_writer_end_aligned(nsl_bundle_writer *w, nsl_error *err) {
  static const unsigned char zeros[16];
  if (w->align_pad < 8 || w->align_pad >= 16)
    return nsl_error_set(err, NSL_ERR_ARG, "cannot write '%s': no aligned member is open", w->target);
  nsl_status st = nsl_bundle_writer_write(w, zeros, 16 - (size_t)w->align_pad, err);
  w->align_pad = 0;
  return st == NSL_OK ? nsl_bundle_writer_end(w, err) : st;
}

const char *nsl__bundle_writer_sha256(const nsl_bundle_writer *w, const char *name) {
  long i = lookup(w, name);
  return i < 0 ? NULL : w->m[i].sha;
}
