#!/usr/bin/env bash
# bench_gaps_launch.sh [N] -- benchmark of the gaps and launch analyses (run on
# demand, never a test): on the NCCL export tiled N times (default 100: ~400 k
# kernels, ~750 k CUDA API calls, ~1.9 M NVTX ranges), wall time, CPU time
# and peak RSS of `nsl run gaps` and `nsl run launch`, beside the sqlite3 CLI
# computing the core of each on the same file: the device gaps (a window
# function over kernels, memcpy and memset) and the launch latency per kernel
# name (the correlation-id join, count/sum/avg/max; SQL has no percentiles).
# The peers do less than nsl (no attribution, no percentiles, no queue
# depth), so the ratio is an upper bound of nsl's cost.  Needs /usr/bin/time.
. "$(dirname "$0")/lib.sh"
n=${1:-100}
tiled_export "$n"

gapq="WITH o AS (SELECT deviceId AS d, start AS s, end AS e FROM CUPTI_ACTIVITY_KIND_KERNEL
                 UNION ALL SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY
                 UNION ALL SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMSET),
      m AS (SELECT d, s, max(e) OVER (PARTITION BY d ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe
            FROM o WHERE e > s)
      SELECT d, count(*), total(s - pe), max(s - pe) FROM m WHERE s > pe GROUP BY d"
launchq="SELECT s.value, count(*), sum(k.start - r.start), avg(k.start - r.start), max(k.start - r.start)
         FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
           AND ((r.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215)
         JOIN StringIds s ON s.id = k.demangledName GROUP BY k.demangledName ORDER BY 3 DESC"
for i in 1 2 3; do
  measure sqlite3_gaps sqlite3 -readonly "file:$big?immutable=1" "$gapq"
  measure nsl_gaps "$nsl" run gaps "$big"
  measure sqlite3_launch sqlite3 -readonly "file:$big?immutable=1" "$launchq"
  measure nsl_launch "$nsl" run launch "$big"
done | tee "$work/results_gl.txt"
awk '{ if (w[$1] == "" || $2 < w[$1]) { w[$1] = $2; c[$1] = $3 } m[$1] = $4 }
     END { for (a in w) if (a ~ /^nsl_/) { p = "sqlite3_" substr(a, 5)
             printf "%s best of 3: nsl %.2f s wall (%.2f s CPU) %d MiB; sqlite3 %.2f s wall (%.2f s CPU) %d MiB; " \
                    "wall ratio nsl/sqlite3 %.2f\n", substr(a, 5), w[a], c[a], m[a] / 1024, w[p], c[p], m[p] / 1024,
                    w[a] / w[p] } }' "$work/results_gl.txt"
