#!/usr/bin/env bash
# make_tiled.sh SRC N OUT -- a large export made from a real one by tiling it
# N times in time: every activity row is repeated N times, copy k shifted by
# k x (the trace's span + 1 ms) with correlation ids offset so that kernels
# still join their launching API calls.  The schema, names and distributions
# stay the real ones (only SQL through sqlite3; the source is never touched).
# Tables without start/end columns (CUDA_EVENT in 2026 exports has `timestamp`)
# are kept as they are.
set -euo pipefail
src=$1 n=$2 out=$3
[ "$n" -ge 1 ] || { echo "N must be >= 1" >&2; exit 2; }
tmp="$out.tmp-$$"
cp "$src" "$tmp"
chmod u+w "$tmp"
q() { sqlite3 "$tmp" "$@"; }
tables=$(q "SELECT m.name FROM sqlite_master AS m WHERE m.type='table' AND m.name IN
  ('CUPTI_ACTIVITY_KIND_KERNEL','CUPTI_ACTIVITY_KIND_RUNTIME','CUPTI_ACTIVITY_KIND_DRIVER','NVTX_EVENTS',
   'CUPTI_ACTIVITY_KIND_MEMCPY','CUPTI_ACTIVITY_KIND_MEMSET','CUPTI_ACTIVITY_KIND_SYNCHRONIZATION',
   'CUPTI_ACTIVITY_KIND_CUDA_EVENT','OSRT_API')")
has_col() { [ "$(q "SELECT count(*) FROM pragma_table_info('$1') WHERE name='$2'")" = 1 ]; }
timed=$(for t in $tables; do has_col "$t" start && echo "$t" || true; done)
lo=$(for t in $timed; do q "SELECT min(start) FROM $t"; done | grep -v '^$' | sort -n | head -1)
hi=$(for t in $timed; do q "SELECT max(coalesce(end, start)) FROM $t"; done | grep -v '^$' | sort -n | tail -1)
span=$(( hi - lo + 1000000 ))
corr=$(for t in $tables; do has_col "$t" correlationId && q "SELECT max(correlationId) FROM $t" || true; done | grep -v '^$' | sort -n | tail -1)
corr=$(( ${corr:-0} + 1 ))
sql="PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
for t in $tables; do
  cols=$(q "SELECT group_concat(name, ',') FROM pragma_table_info('$t')")
  sel=$(q "SELECT group_concat(CASE name WHEN 'start' THEN 'start + r.k * $span'
                                         WHEN 'end' THEN 'end + r.k * $span'
                                         WHEN 'timestamp' THEN 'timestamp + r.k * $span'
                                         WHEN 'correlationId' THEN 'correlationId + r.k * $corr'
                                         ELSE '\"' || name || '\"' END, ',')
           FROM pragma_table_info('$t')")
  sql="$sql CREATE TEMP TABLE base AS SELECT * FROM $t;
       INSERT INTO $t ($cols) SELECT $sel FROM base, (WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < $n - 1) SELECT k FROM r) AS r;
       DROP TABLE base;"
done
sql="$sql COMMIT; VACUUM;"
[ "$n" -gt 1 ] && q "$sql" > /dev/null
mv "$tmp" "$out"
echo "$out: $(stat -c %s "$out") bytes, $(sqlite3 "$out" 'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL') kernels, $(sqlite3 "$out" 'SELECT count(*) FROM NVTX_EVENTS') NVTX events"
