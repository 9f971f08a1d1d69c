#!/usr/bin/env bash
# bench_straggler.sh [RANKS] [TILES] -- benchmark of the straggler analysis
# (run on demand, never a test): RANKS per-rank exports (default 16) of the
# real 2-GPU NCCL export tiled TILES times (default 40: ~100 MB each), each
# file one GPU of the tiled export (rank r: GPU r mod 2) with its clock
# shifted by a few ms and a straggler planted on rank 5 (the last rank when
# there are fewer; 2 ms more compute
# before every collective; every other rank waits for it), made by
# tests/lua/straggler_rank.sh, the script the straggler test uses.  Times
# `nsl run straggler` over the RANKS files against a script that only loads
# the columns straggler reads (kernels: report, pid, device, stream, corr,
# start, stop, name; CUDA API calls: report, pid, corr, start, for when each
# kernel was launched): wall and CPU time (best of 3) and peak RSS, and the
# ratio.  Files
# go to ${BENCH_DIR:-/tmp/nsl-bench}/straggler (RANKS x ~100 MB; kept for
# reruns, delete the folder to remake them).  Needs /usr/bin/time.
. "$(dirname "$0")/lib.sh"
ranks=${1:-16} tiles=${2:-40}
work=$work/straggler
delay=2000000 slow=$(( ranks > 5 ? 5 : ranks - 1 ))
mkdir -p "$work"
tiled="$work/tiled_$tiles.sqlite"
files=()
for ((r = 0; r < ranks; r++)); do
  f="$work/rank$(printf %02d $r)_of_${ranks}x$tiles.sqlite"
  role=wait; [ $r = $slow ] && role=slow
  offset=$(( (r * 37 % 23 - 11) * 1000000 ))   # -11 .. +11 ms, a different clock per rank
  if [ ! -f "$f" ]; then
    [ -f "$tiled" ] || "$here/make_tiled.sh" "$data/nsys/pytorch_nccl_2gpu_2026.2.sqlite" "$tiles" "$tiled"
    "$root/tests/lua/straggler_rank.sh" "$tiled" "$f" $((r % 2)) $delay $role $offset
  fi
  files+=("$f")
done
rm -f "$tiled"   # only the rank files are needed from here on
cat > "$work/load_kernels.lua" <<'EOF'
-- the baseline: load the kernel and CUDA API columns straggler reads, nothing else
return {name = "load_kernels", description = "loads the columns of straggler", run = function(trace, _, out)
  local k, api = trace.kernels, trace.api
  k:load{"report", "pid", "device", "stream", "corr", "start", "stop", "name"}
  api:load{"report", "pid", "corr", "start"}
  out:text(#k .. " kernels, " .. #api .. " CUDA API calls")
end}
EOF
cat "${files[@]}" > /dev/null   # warm the page cache for both contenders
echo "$ranks files, $(du -ch "${files[@]}" | tail -1 | cut -f1) in all, $(sqlite3 "${files[0]}" 'SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL') kernels in the first"

for i in 1 2 3; do
  measure load "$nsl" run "$work/load_kernels.lua" "${files[@]}"
  measure straggler "$nsl" run straggler "${files[@]}"
done | tee "$work/results.txt"
grep -q "STRAGGLER" "$work/straggler.out" || { echo "the planted straggler was not found" >&2; exit 1; }
awk '{ if (w[$1] == "" || $2 < w[$1]) w[$1] = $2; if (c[$1] == "" || $3 < c[$1]) c[$1] = $3; m[$1] = $4 }
     END { printf "best of 3: load %.2f s wall (%.2f s CPU) %d MiB; straggler %.2f s wall (%.2f s CPU) %d MiB; " \
                  "ratio straggler/load %.2f wall, %.2f CPU\n", w["load"], c["load"], m["load"] / 1024,
                  w["straggler"], c["straggler"], m["straggler"] / 1024, w["straggler"] / w["load"],
                  c["straggler"] / c["load"] }' "$work/results.txt"
