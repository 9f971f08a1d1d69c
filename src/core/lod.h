/*
 * lod.h -- level of detail of a timeline (src/core/lod.c): the events of
 * each lane (a GPU stream, an NVTX nesting row) indexed once, so that a
 * window of any width is summarised per pixel or character column in
 * O(columns x log events), whatever the number of events inside it.  The
 * terminal timeline (nsl tui) and the HTML viewer's levels of detail (nsl
 * view) draw from it.  Never
 * includes lua.h.
 *
 * Basic outline:
 *   1. nsl_lod_build(start, stop, lane, cls, nlanes) indexes the rows;
 *   2. nsl_lod_query(lod, lane, from, to, ncols, cells) summarises a window;
 *   3. nsl_lod_at / nsl_lod_step find the event under a time, or the next
 *      or previous one (selection, snapping);
 *   4. nsl_lod_filter(lod, mask) keeps a subset (a name filter) without
 *      sorting again;
 *   5. nsl_lod_free.
 */
#ifndef NSL_CORE_LOD_H
#define NSL_CORE_LOD_H

#include "nsl/nsl.h"

#define NSL_LOD_CLASSES 16   /* class ids 0..15 */

typedef struct nsl_lod nsl_lod;

/* The summary of one column [t0, t1) of a lane. */
typedef struct nsl_lod_cell {
  int64_t count;   /* events overlapping the column: those starting in it, plus one running into it */
  int64_t starts;  /* events starting in the column (summed over columns: each event once) */
  int64_t busy;    /* ns of the column covered by at least one event (the union of the lane's
                    * events, clipped to the column): exact, overlapping events or not */
  int64_t row;     /* the event covering t0, else the first one starting in the column; -1: none */
  int32_t cls;     /* the class with the most time in the column; -1: none */
} nsl_lod_cell;

/* Indexes rows [start, stop) by lane (ids 0..nlanes-1) and start.  cls:
 * class ids 0..NSL_LOD_CLASSES-1 (NULL: all 0).  Rows with a NULL start,
 * stop or lane, a lane outside 0..nlanes-1 or stop < start take no part.
 * Integer columns of one length.  O(n) when each lane's rows come in start
 * order (as exports store them), else a radix sort per lane.  NULL and err
 * filled on bad arguments or out of memory. */
nsl_lod *nsl_lod_build(const nsl_column *start, const nsl_column *stop, const nsl_column *lane,
                       const nsl_column *cls, int64_t nlanes, nsl_error *err);
/* nsl_lod_build over the rows of nparts parts put one after the other,
 * without making them one column: part k is start[k], stop[k], lane[k]
 * and cls[k] (cls NULL, or NULL in every part: all 0), columns of one
 * length, its rows numbered on from the last part's (as nsl_lod_at and
 * the cells give them).  The same index as of the concatenated columns. */
nsl_lod *nsl_lod_build_parts(const nsl_column *const *start, const nsl_column *const *stop,
                             const nsl_column *const *lane, const nsl_column *const *cls, int nparts, int64_t nlanes,
                             nsl_error *err);
void nsl_lod_free(nsl_lod *l);
/* A new index with the rows of l where mask (bool, one per input row) is
 * set: the same lanes, rows and order, no sort.  NULL and err filled on a
 * mask of another length or out of memory. */
nsl_lod *nsl_lod_filter(const nsl_lod *l, const nsl_column *mask, nsl_error *err);
int64_t nsl_lod_nlanes(const nsl_lod *l);
int64_t nsl_lod_nrows(const nsl_lod *l);    /* input rows (the length of the columns) */
int64_t nsl_lod_count(const nsl_lod *l, int64_t lane);   /* events of a lane; 0 outside */
/* Bytes held. */
size_t nsl_lod_bytes(const nsl_lod *l);
/* The earliest start and latest stop of lane's events (lane -1: of all);
 * 0 when it has none. */
int nsl_lod_extent(const nsl_lod *l, int64_t lane, int64_t *lo, int64_t *hi);
/* Summaries of ncols equal columns of [from, to) (column c is [edge c,
 * edge c+1), edges as nsl__bin_edges: exact integers) of lane into
 * cells[0..ncols).  NSL_ERR_ARG for a lane outside, to <= from or ncols
 * outside 1..2^20. */
nsl_status nsl_lod_query(const nsl_lod *l, int64_t lane, int64_t from, int64_t to, int64_t ncols,
                         nsl_lod_cell *cells, nsl_error *err);
/* The busy ns and the events starting of nsl_lod_query's cells (the same
 * numbers) into busy[0..ncols) and starts[0..ncols), without the rest of
 * a cell (no search for the event running into a column, whose cost grows
 * with nesting), the columns cut for the threads when they are many. */
nsl_status nsl_lod_bins(const nsl_lod *l, int64_t lane, int64_t from, int64_t to, int64_t ncols, int64_t *busy,
                        int64_t *starts, nsl_error *err);
/* The input row of the event of lane that covers t (start <= t < stop; of
 * several, the latest to start), or -1. */
int64_t nsl_lod_at(const nsl_lod *l, int64_t lane, int64_t t);
/* The input row of the first event of lane starting after t (dir > 0), or
 * the last starting before t (dir < 0); -1 when there is none.  (Another
 * event starting at t itself is neither.) */
int64_t nsl_lod_step(const nsl_lod *l, int64_t lane, int64_t t, int dir);

#endif
