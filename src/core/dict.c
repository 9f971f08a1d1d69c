/* dict.c -- string dictionary: dense int32 ids, open-addressing hash index,
 * strings kept in large arena blocks so that pointers stay valid. */
#include <stdlib.h>
#include <string.h>

#include "core/nsl_internal.h"
#include "nsl/nsl.h"

#define ARENA_BLOCK (1u << 20)

typedef struct arena_block {
  struct arena_block *next;
  size_t used, cap;
  char data[];
} arena_block;

/* A slot of the hash index carries the hash and the string, whose length
 * sits in the 4 bytes before it in the arena: a lookup touches the slot and
 * the string's cache line only.  (Interning the NVTX text of a large trace
 * row by row is bound by these memory accesses; callers that know a string
 * early prefetch its slot, see nsl_dict_prefetch.) */
typedef struct dict_slot {
  const char *str;
  uint32_t hash;
  int32_t id;            /* -1: empty */
} dict_slot;

static uint32_t stored_len(const char *str) {
  uint32_t len;
  memcpy(&len, str - sizeof len, sizeof len);
  return len;
}

struct nsl_dict {
  int refcount;
  int32_t n, cap;        /* strings, capacity of strs/hashes */
  const char **strs;     /* id -> string (NUL-terminated, in the arena; its length in the 4 bytes before it) */
  uint32_t *hashes;
  dict_slot *slots;      /* hash index (open addressing, linear probing) */
  uint32_t nslots;       /* power of two */
  int32_t indexed;       /* ids [0, indexed) are in the index (and have their hashes) */
  int aliases;           /* strings may be appended unindexed, the same string under several ids */
  arena_block *arena;
  size_t bytes;
};

/* Hash of a string, 8 bytes at a time (multiply-xorshift mixing); the
 * NVTX text of large traces is interned row by row, so this is hot. */
static uint32_t hash_bytes(const char *s, size_t len) {
  const uint64_t m = 0x9E3779B97F4A7C15ull;
  uint64_t h = (uint64_t)len * m;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * m;
    h ^= h >> 29;
  }
  uint64_t w = 0;
  if (i < len) memcpy(&w, s + i, len - i);
  h = (h ^ w) * m;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return (uint32_t)h;
}

nsl_dict *nsl_dict_new(void) {
  nsl_dict *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->refcount = 1;
  d->nslots = 1024;
  d->slots = malloc(d->nslots * sizeof *d->slots);
  if (!d->slots) {
    free(d);
    return NULL;
  }
  for (uint32_t i = 0; i < d->nslots; i++) d->slots[i].id = -1;
  return d;
}

nsl_dict *nsl_dict_retain(nsl_dict *d) {
  if (d) d->refcount++;
  return d;
}

void nsl_dict_release(nsl_dict *d) {
  if (!d || --d->refcount > 0) return;
  arena_block *b = d->arena;
  while (b) {
    arena_block *next = b->next;
    free(b);
    b = next;
  }
  free(d->strs);
  free(d->hashes);
  free(d->slots);
  free(d);
}

static char *arena_alloc(nsl_dict *d, size_t size) {
  arena_block *b = d->arena;
  if (!b || b->cap - b->used < size) {
    size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = d->arena;
    b->used = 0;
    b->cap = cap;
    d->arena = b;
    d->bytes += sizeof *b + cap;
  }
  char *p = b->data + b->used;
  b->used += size;
  return p;
}

/* The index rebuilt with nslots slots from the indexed ids (a string under
 * several ids is found under its first: ids go in in order). */
static int reindex(nsl_dict *d, uint32_t nslots) {
  dict_slot *slots = malloc(nslots * sizeof *slots);
  if (!slots) return -1;
  for (uint32_t i = 0; i < nslots; i++) slots[i].id = -1;
  for (int32_t id = 0; id < d->indexed; id++) {
    uint32_t i = d->hashes[id] & (nslots - 1);
    while (slots[i].id >= 0) i = (i + 1) & (nslots - 1);
    slots[i] = (dict_slot){d->strs[id], d->hashes[id], id};
  }
  free(d->slots);
  d->slots = slots;
  d->nslots = nslots;
  return 0;
}

static int rehash(nsl_dict *d) { return reindex(d, d->nslots * 2); }

/* Slot where s is, or the empty slot where it would go. */
static uint32_t find_slot(const nsl_dict *d, const char *s, size_t len, uint32_t h) {
  uint32_t mask = d->nslots - 1, i = h & mask;
  for (;;) {
    const dict_slot *sl = &d->slots[i];
    if (sl->id < 0) return i;
    if (sl->hash == h && stored_len(sl->str) == len && memcmp(sl->str, s, len) == 0) return i;
    i = (i + 1) & mask;
  }
}

/* The strings appended since the index was last brought up to date put in
 * it (their hashes taken now); a string the index holds already stays an
 * alias (an id of its own, found under the first).  0, or -1 out of memory. */
static int catch_up(nsl_dict *d) {
  if (d->indexed == d->n) return 0;
  uint32_t nslots = d->nslots;
  while ((uint64_t)d->n * 4 > (uint64_t)nslots * 3) nslots *= 2;
  if (nslots != d->nslots && reindex(d, nslots) != 0) return -1;
  for (int32_t id = d->indexed; id < d->n; id++) {
    const char *str = d->strs[id];
    uint32_t h = d->hashes[id] = hash_bytes(str, stored_len(str)), slot = find_slot(d, str, stored_len(str), h);
    if (d->slots[slot].id < 0) d->slots[slot] = (dict_slot){str, h, id};
  }
  d->indexed = d->n;
  return 0;
}

int32_t nsl_dict_find(const nsl_dict *d, const char *s, size_t len) {
  if (!d || !s) return -1;
  /* (only a dictionary with aliases, of one loading thread, has strings to index: nsl__dict_allow_aliases) */
  if (d->indexed != d->n && catch_up((nsl_dict *)(uintptr_t)d) != 0) return -1;
  return d->slots[find_slot(d, s, len, hash_bytes(s, len))].id;
}

uint32_t nsl_dict_hash(const char *s, size_t len) { return hash_bytes(s, len); }

void nsl_dict_prefetch(const nsl_dict *d, uint32_t hash) {
  __builtin_prefetch(&d->slots[hash & (d->nslots - 1)]);
}

void nsl_dict_prefetch_string(const nsl_dict *d, uint32_t hash) {
  const dict_slot *sl = &d->slots[hash & (d->nslots - 1)];
  if (sl->id >= 0) __builtin_prefetch(sl->str);
}

nsl_status nsl_dict_intern(nsl_dict *d, const char *s, size_t len, int32_t *id, nsl_error *err) {
  if (!s) {
    *id = -1;
    return nsl_error_set(err, NSL_ERR_ARG, "a NULL string cannot be added to a dictionary");
  }
  return nsl_dict_intern_hashed(d, s, len, hash_bytes(s, len), id, err);
}

static nsl_status append(nsl_dict *d, const char *s, size_t len, int32_t *id, nsl_error *err);

/* The error of a string (len bytes) that d cannot take: what failed. */
static nsl_status intern_failed(const nsl_dict *d, size_t len, const char *what, nsl_error *err) {
  return nsl_error_set(err, NSL_ERR_NOMEM,
                       "out of memory adding a string of %zu bytes to a dictionary of %d strings (%s)", len, (int)d->n,
                       what);
}

/* Whether a dictionary can take s (len bytes): not NULL, not longer than a
 * stored length holds. */
static nsl_status string_fits(const char *s, size_t len, nsl_error *err) {
  if (!s) return nsl_error_set(err, NSL_ERR_ARG, "a NULL string cannot be added to a dictionary");
  if (len > UINT32_MAX - 8)
    return nsl_error_set(err, NSL_ERR_LIMIT, "a string of %zu bytes is longer than a dictionary holds (4 GiB)", len);
  return NSL_OK;
}

nsl_status nsl_dict_intern_hashed(nsl_dict *d, const char *s, size_t len, uint32_t h, int32_t *id, nsl_error *err) {
  *id = -1;
  nsl_status fits = string_fits(s, len, err);
  if (fits != NSL_OK) return fits;
  if (catch_up(d) != 0) return intern_failed(d, len, "its hash index", err);
  uint32_t slot = find_slot(d, s, len, h);
  if (d->slots[slot].id >= 0) {
    *id = d->slots[slot].id;
    return NSL_OK;
  }
  int32_t nid = -1;
  nsl_status rc = append(d, s, len, &nid, err);
  if (rc != NSL_OK) return rc;
  d->hashes[nid] = h;
  d->slots[slot] = (dict_slot){d->strs[nid], h, nid};
  d->indexed = d->n;
  if ((uint64_t)d->n * 4 > (uint64_t)d->nslots * 3 && rehash(d) != 0)
    return intern_failed(d, len, "its hash index", err);
  *id = nid;
  return NSL_OK;
}

/* Adds s as a new string (a copy in the arena) under the next id, *id; the
 * index and the hash are the caller's. */
static nsl_status append(nsl_dict *d, const char *s, size_t len, int32_t *id, nsl_error *err) {
  if (d->n == INT32_MAX)
    return nsl_error_set(err, NSL_ERR_LIMIT, "a dictionary holds at most %d distinct strings", (int)INT32_MAX);
  if (d->n == d->cap) {
    int32_t cap = d->cap ? (d->cap > INT32_MAX / 2 ? INT32_MAX : d->cap * 2) : 256;
    const char **strs = realloc(d->strs, (size_t)cap * sizeof *strs);
    if (!strs) return intern_failed(d, len, "its id table", err);
    d->strs = strs;
    uint32_t *hashes = realloc(d->hashes, (size_t)cap * sizeof *hashes);
    if (!hashes) return intern_failed(d, len, "its id table", err);
    d->hashes = hashes;
    d->cap = cap;
  }
  char *copy = arena_alloc(d, len + 1 + sizeof(uint32_t));
  if (!copy) return intern_failed(d, len, "the string's copy", err);
  uint32_t len32 = (uint32_t)len;
  memcpy(copy, &len32, sizeof len32);
  copy += sizeof len32;
  memcpy(copy, s, len);
  copy[len] = '\0';
  *id = d->n++;
  d->strs[*id] = copy;
  return NSL_OK;
}

void nsl__dict_allow_aliases(nsl_dict *d) {
  if (d) d->aliases = 1;
}

int nsl__dict_aliases(const nsl_dict *d) { return d && d->aliases; }

nsl_status nsl__dict_append(nsl_dict *d, const char *s, size_t len, int32_t *id, nsl_error *err) {
  *id = -1;
  if (!d->aliases) return nsl_dict_intern(d, s, len, id, err);
  nsl_status fits = string_fits(s, len, err);
  return fits != NSL_OK ? fits : append(d, s, len, id, err);
}

const char *nsl_dict_str(const nsl_dict *d, int32_t id) {
  if (!d || id < 0 || id >= d->n) return NULL;
  return d->strs[id];
}

size_t nsl_dict_strlen(const nsl_dict *d, int32_t id) {
  if (!d || id < 0 || id >= d->n) return 0;
  return stored_len(d->strs[id]);
}

int32_t nsl_dict_size(const nsl_dict *d) { return d ? d->n : 0; }

size_t nsl_dict_bytes(const nsl_dict *d) {
  if (!d) return 0;
  return d->bytes + (size_t)d->cap * (sizeof *d->strs + sizeof *d->hashes) +
         d->nslots * sizeof *d->slots;
}
