#!/usr/bin/env bash
# bench_diagnose.sh [N] -- benchmark of `nsl run diagnose` (run on demand,
# never a test): on the NCCL export tiled N times (default 425: ~1 GB,
# 1.7 M kernels, 3.2 M CUDA API calls, 8.1 M NVTX ranges), wall time, CPU
# time and peak RSS of diagnose beside every single analysis whose checks it
# runs (iterations, gaps, launch, overlap, straggler, compile, heap), each
# best of 3.  diagnose loads each table once for all its checks, so the
# target is diagnose within 1.5 x the slowest of them (wall; CPU shown too,
# steadier on a busy machine).  Needs /usr/bin/time.
. "$(dirname "$0")/lib.sh"
n=${1:-425}
tiled_export "$n"
analyses="iterations gaps launch overlap straggler compile heap"
for i in 1 2 3; do
  measure diagnose "$nsl" run diagnose "$big"
  for a in $analyses; do measure "$a" "$nsl" run "$a" "$big"; done
done | tee "$work/results_diagnose.txt"
awk -v list="$analyses" '
  { if (w[$1] == "" || $2 < w[$1]) { w[$1] = $2; c[$1] = $3 } if ($4 > m[$1]) m[$1] = $4 }
  END {
    split(list, a, " ")
    for (i in a) { x = a[i]; printf "%-10s best of 3: %.2f s wall, %.2f s CPU, %d MiB\n", x, w[x], c[x], m[x] / 1024
                   if (w[x] > slow) { slow = w[x]; who = x } if (c[x] > cslow) { cslow = c[x]; cwho = x } }
    printf "%-10s best of 3: %.2f s wall, %.2f s CPU, %d MiB\n", "diagnose", w["diagnose"], c["diagnose"], m["diagnose"] / 1024
    printf "diagnose / slowest single analysis: %.2f x wall (%s; target 1.5), %.2f x CPU (%s)\n", w["diagnose"] / slow,
           who, c["diagnose"] / cslow, cwho }' \
  "$work/results_diagnose.txt"
