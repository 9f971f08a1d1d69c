/* leased_map.h -- a file of this user mapped read-only under a read lease
 * (core internal; no Lua).
 *
 * A mapping of a file shows what the file holds now: a file cut in place
 * (truncate) raises SIGBUS on the pages cut off, and one rewritten in place
 * (cp over it) changes values already checked.  A read lease (fcntl
 * F_SETLEASE) closes both: the kernel holds back any other open of the file
 * for writing, and any truncate, until the holder gives the lease up, and
 * tells the holder with SIGIO.  nsl's handler then copies each mapping whose
 * lease is being broken into anonymous memory at the same address (mremap)
 * and gives the lease up: the writer goes on, and every column over the
 * mapping keeps the values it was checked with.
 *
 * Where the file system grants no lease (NFS, some overlays), the file is
 * open for writing somewhere, the table of mappings is full, or fd is in
 * the upper half of the process's descriptor limit, nothing is mapped and
 * the caller reads the file as before.  The handler is installed with the
 * first mapping; a SIGIO that no lease of nsl's caused goes to the handler
 * there was before. */
#ifndef NSL_CORE_LEASED_MAP_H
#define NSL_CORE_LEASED_MAP_H

#include <stddef.h>

/* Mappings held at once (each keeps its file descriptor open). */
#define NSL_LEASED_MAX 256

/* Maps the whole of fd (a regular file opened read-only, O_CLOEXEC) under
 * a read lease; on success returns the slot (>= 0), the address in *addr and
 * the length in *len, and the slot owns fd from then on.  -1 when it cannot
 * (fd is then still the caller's): no lease, an empty file, no free slot. */
int nsl__leased_map(int fd, void **addr, size_t *len);
/* Unmaps slot's memory, gives its lease up and closes its fd. */
void nsl__leased_unmap(int slot);
/* Copies of mappings made because their lease was broken (for tests). */
long nsl__leased_copies(void);

#endif
