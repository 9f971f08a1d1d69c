#!/usr/bin/env bash
# straggler_rank.sh SRC DST DEVICE [DELAY_NS ROLE [OFFSET_NS]] -- one rank's
# export made from a real multi-GPU export: a copy of SRC at DST that keeps
# only GPU DEVICE's activity, optionally with a planted straggler and a
# shifted clock.  Used by tests/lua/test_straggler.lua and
# tests/bench/bench_straggler.sh (only SQL through sqlite3; SRC is never
# touched; the schema and names stay the real ones).
#
#   DELAY_NS > 0, ROLE slow  this rank computes DELAY_NS longer before every
#                            NCCL collective: the last non-NCCL kernel before
#                            collective k ends DELAY_NS later, and collective
#                            k and everything after it move by k x DELAY_NS.
#   DELAY_NS > 0, ROLE wait  another rank, which waits for the slow one: its
#                            collective k starts (k-1) x DELAY_NS later (it had
#                            waited before) and ends k x DELAY_NS later; its
#                            other kernels move with the collectives before them.
#   OFFSET_NS != 0           every timed row (kernels, memcpy, memset, CUDA
#                            API, synchronisation, NVTX) moves by OFFSET_NS:
#                            a clock that runs ahead by that much.
# Collective k (1-based) is the k-th NCCL kernel in start order; "before" it
# means a start at or before its start (the count of collectives started at
# or before a kernel's start is a window sum over the kernels in start order).
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 SRC DST DEVICE [DELAY_NS slow|wait [OFFSET_NS]]" >&2; exit 2; }
src=$1 dst=$2 dev=$3 delay=${4:-0} role=${5:-} offset=${6:-0}
case "$dev$delay$offset" in *[!0-9-]*) echo "$0: DEVICE, DELAY_NS and OFFSET_NS are integers" >&2; exit 2 ;; esac
case "$role" in slow|wait|"") ;; *) echo "$0: ROLE is slow or wait" >&2; exit 2 ;; esac
[ "$delay" = 0 ] || [ -n "$role" ] || { echo "$0: a delay needs a ROLE (slow or wait)" >&2; exit 2; }

K=CUPTI_ACTIVITY_KIND_KERNEL
tmp="$dst.tmp-$$"
cp "$src" "$tmp"
chmod u+w "$tmp"
trap 'rm -f "$tmp"' EXIT
has_table() { [ "$(sqlite3 "$tmp" "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='$1'")" = 1 ]; }

sql="PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
for t in $K CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; do
  has_table $t && sql="$sql DELETE FROM $t WHERE deviceId <> $dev;"
done
if [ "$delay" != 0 ]; then
  # n: collectives started at or before each kernel's start (peers included)
  sql="$sql
    CREATE TEMP TABLE kk(rid INTEGER PRIMARY KEY, s INTEGER, c INTEGER, n INTEGER);
    INSERT INTO kk SELECT rid, s, c, sum(c) OVER (ORDER BY s RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
      FROM (SELECT k.rowid AS rid, k.start AS s, (n.value LIKE 'nccl%') AS c
            FROM $K k JOIN StringIds n ON n.id = k.shortName);
    CREATE TEMP TABLE comp AS SELECT rid, s FROM kk WHERE c = 0;
    CREATE INDEX temp.comp_s ON comp(s);
    CREATE TEMP TABLE lastc(rid INTEGER PRIMARY KEY);
    INSERT OR IGNORE INTO lastc SELECT (SELECT comp.rid FROM comp WHERE comp.s < coll.s ORDER BY comp.s DESC LIMIT 1) AS r
      FROM kk coll WHERE coll.c = 1 AND r IS NOT NULL;"
  if [ "$role" = slow ]; then
    sql="$sql
      UPDATE $K SET start = start + $delay * kk.n,
                    end = end + $delay * kk.n + CASE WHEN $K.rowid IN (SELECT rid FROM lastc) THEN $delay ELSE 0 END
        FROM kk WHERE kk.rid = $K.rowid;"
  else
    sql="$sql
      UPDATE $K SET start = start + $delay * (kk.n - kk.c), end = end + $delay * kk.n
        FROM kk WHERE kk.rid = $K.rowid;"
  fi
fi
if [ "$offset" != 0 ]; then
  for t in $K CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET CUPTI_ACTIVITY_KIND_RUNTIME \
           CUPTI_ACTIVITY_KIND_SYNCHRONIZATION NVTX_EVENTS; do
    has_table $t && sql="$sql UPDATE $t SET start = start + $offset, end = end + $offset;"
  done
fi
sql="$sql COMMIT;"
sqlite3 "$tmp" "$sql" > /dev/null
mv "$tmp" "$dst"
trap - EXIT
