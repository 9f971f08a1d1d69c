#!/usr/bin/env bash
# bench_cache.sh [N] -- the columnar cache (run on demand, never a test): on
# an export tiled N times (default 425: ~1 GB, 1.7 M kernels, 8.1 M NVTX
# ranges; BENCH_FILE=PATH measures another export), side by side in one run:
#   - `nsl run nvtx` and `nsl run summary`, cold (cache emptied first) and warm;
#   - the load part alone (a script that loads the columns nvtx reads), cold
#     and warm, and their ratio (target 20x);
#   - the REPL opening the cached trace and printing a row count (target 0.5 s);
#   - cache bytes per kernel and per NVTX row;
#   - memory of a warm load: heap (RssAnon) against mapped file pages
#     (RssFile), to show mapped columns are not copied.
# Wall, CPU (user + sys) and peak RSS by /usr/bin/time; warm figures best of 3.
. "$(dirname "$0")/lib.sh"
n=${1:-425}
if [ -n "${BENCH_FILE:-}" ]; then big=$BENCH_FILE; cat "$big" > /dev/null; else tiled_export "$n"; fi
export NSL_CACHE_DIR="$work/cache"
echo "input: $big ($(stat -c %s "$big") bytes); load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

cat > "$work/cache_load.lua" <<'LUA'
-- the columns `nsl run nvtx` reads, loaded and nothing else
return { run = function(trace)
  trace.nvtx:load{"report", "pid", "tid", "start", "stop", "dur", "kind", "end_tid", "text", "domain"}
  trace.api:load{"report", "pid", "tid", "corr", "start", "stop"}
  for _, t in ipairs{"kernels", "memcpy", "memset"} do trace[t]:load{"report", "pid", "corr", "start", "stop"} end
  local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
  print(string.format("rows kernels=%d nvtx=%d; RssAnon %d MiB, RssFile %d MiB", #trace.kernels, #trace.nvtx,
                      s:match("RssAnon:%s*(%d+)") // 1024, s:match("RssFile:%s*(%d+)") // 1024))
end }
LUA

best() { # LABEL CMD...: best wall of 3 runs
  for i in 1 2 3; do measure "$@"; done | sort -k2 -n | head -1
}
rm -rf "$NSL_CACHE_DIR"
{
  measure nvtx_cold "$nsl" run nvtx "$big"
  best nvtx_warm "$nsl" run nvtx "$big"
  measure nvtx_nocache "$nsl" run nvtx "$big" --no-cache
  rm -rf "$NSL_CACHE_DIR"
  measure summary_cold "$nsl" run summary "$big"
  best summary_warm "$nsl" run summary "$big"
  rm -rf "$NSL_CACHE_DIR"
  measure load_cold "$nsl" run "$work/cache_load.lua" "$big"
  best load_warm "$nsl" run "$work/cache_load.lua" "$big"
  best repl_open sh -c "printf 'print(#trace.kernels, #trace.nvtx)\n' | '$nsl' repl '$big'"
} | tee "$work/cache_results.txt"
echo "load_cold: $(cat "$work/load_cold.out")"
echo "load_warm: $(cat "$work/load_warm.out")"
awk '{ w[$1] = $2; c[$1] = $3; m[$1] = $4 }
  END {
    printf "nvtx:    cold %.2f s, warm %.2f s (%.1fx; target under 3 s), no cache %.2f s\n", w["nvtx_cold"], w["nvtx_warm"],
           w["nvtx_cold"] / w["nvtx_warm"], w["nvtx_nocache"]
    printf "summary: cold %.2f s, warm %.2f s (%.1fx)\n", w["summary_cold"], w["summary_warm"], w["summary_cold"] / w["summary_warm"]
    printf "load:    cold %.2f s wall %.2f s CPU, warm %.2f s wall %.2f s CPU: %.1fx wall (target 20x); peak RSS %d / %d MiB\n",
           w["load_cold"], c["load_cold"], w["load_warm"], c["load_warm"], w["load_cold"] / w["load_warm"],
           m["load_cold"] / 1024, m["load_warm"] / 1024
    printf "repl:    open of the cached trace and a row count: %.2f s (target 0.5 s)\n", w["repl_open"]
  }' "$work/cache_results.txt"
entry=$(dirname "$(grep -lx "input $(readlink -f "$big")" "$NSL_CACHE_DIR"/columns/*/entry | head -1)")
read -r nk nn < <(sed -n 's/^rows kernels=\([0-9]*\) nvtx=\([0-9]*\).*/\1 \2/p' "$work/load_warm.out")
kb=$(cat "$entry"/c-kernels-* | wc -c); vb=$(cat "$entry"/c-nvtx-* | wc -c)
echo "cache: $(du -sh "$entry" | cut -f1) for the entry; kernels $kb bytes for $nk rows ($(echo "scale=1; $kb / $nk" | bc) B/row, $(ls "$entry" | grep -c '^c-kernels-') columns); NVTX $vb bytes for $nn rows ($(echo "scale=1; $vb / $nn" | bc) B/row, $(ls "$entry" | grep -c '^c-nvtx-') columns)"

# BUNDLE=1: nsl bundle --columns of the same export, and what opening it costs without any cache
# (the columns mapped from the zip, the export not decompressed) against the plain export, cold.
if [ "${BUNDLE:-0}" = 1 ]; then
  rm -f "$work/tiled_cols.zip"
  bc=$(measure bundle_columns "$nsl" bundle "$big" -o "$work/tiled_cols.zip" --columns)
  {
    best bundle_summary "$nsl" run summary "$work/tiled_cols.zip" --no-cache
    best bundle_load "$nsl" run "$work/cache_load.lua" "$work/tiled_cols.zip" --no-cache
    best bundle_repl sh -c "printf 'print(#trace.kernels, #trace.nvtx)\n' | '$nsl' repl --no-cache '$work/tiled_cols.zip'"
  } | tee "$work/bundle_results.txt"
  echo "bundle --columns: $(echo "$bc" | awk '{print $2}') s to write; $(stat -c %s "$work/tiled_cols.zip") bytes" \
       "(the export deflated, the columns stored)"
  awk '{ printf "%s: %.2f s wall, %.2f s CPU, peak RSS %d MiB\n", $1, $2, $3, $4 / 1024 }' "$work/bundle_results.txt"
fi
