#!/usr/bin/env bash
# bench_inputs.sh [TILES] -- the cost of the inputs of issue 19, side by side with the sqlite3 CLI:
#   1. a .nsys-rep whose export is cached: `nsl info run.nsys-rep` (the export reused: a stat, a lock, a
#      compare) against `nsl info run.sqlite` on the export itself;
#   2. nsys stats CSV files: nsl reading nvtx_gpu_proj_trace (gpu_ranges, the sum of projected durations)
#      against sqlite3 importing the same CSV and summing the same column.
# The export is the sample tiled TILES times in time (default 40; make_tiled.sh), the CSV files are made from
# it by tests/e2e/make_stats_csv.sh.  Prints "label wall_s cpu_s peak_kib" rows and the ratios.
. "$(dirname "$0")/lib.sh"
tiles=${1:-40}
tiled_export "$tiles"
export NSL_CACHE_DIR=$work/cache FAKE_NSYS_EXPORT=$big
rep=$work/tiled_$tiles.nsys-rep
printf 'NVIDIA Tegra Profiler Report 2026@2@1@210-1v0.\nbench\n' > "$rep"
"$nsl" info "$rep" --nsys "$root/tests/e2e/fake_nsys.sh" > /dev/null   # the one export (a copy), not timed
echo "label wall_s cpu_s peak_kib"
a=$(measure rep_cached "$nsl" info "$rep" --nsys "$root/tests/e2e/fake_nsys.sh")
b=$(measure sqlite_direct "$nsl" info "$big")
echo "$a"; echo "$b"

csv=$work/csv_$tiles
[ -f "${csv}_nvtx_gpu_proj_trace.csv" ] || bash "$root/tests/e2e/make_stats_csv.sh" "$big" "$csv"
cat > "$work/proj_sum.lua" <<'EOF'
return {name = "proj_sum", description = "sum of projected durations", args = {},
        run = function(trace, _, out) out:text(tostring(#trace.gpu_ranges) .. " " .. tostring(trace.gpu_ranges.dur:sum())) end}
EOF
c=$(measure nsl_csv "$nsl" run "$work/proj_sum.lua" "${csv}_nvtx_gpu_proj_trace.csv")
d=$(measure sqlite3_csv sqlite3 :memory: ".import --csv ${csv}_nvtx_gpu_proj_trace.csv p" \
      "SELECT count(*), sum(\"Projected Duration (ns)\") FROM p")
echo "$c"; echo "$d"
echo "nsl: $(cat "$work/nsl_csv.out")  sqlite3: $(cat "$work/sqlite3_csv.out")"
ratio() { echo "scale=2; $(echo "$1" | cut -d' ' -f2) / $(echo "$2" | cut -d' ' -f2)" | bc; }
echo "ratio rep_cached/sqlite_direct (wall): $(ratio "$a" "$b")"
echo "ratio nsl_csv/sqlite3_csv (wall): $(ratio "$c" "$d")"
