#!/usr/bin/env bash
# bench_nvtx.sh [N] -- the NVTX benchmark (run on demand, never a test): on an
# export tiled N times (default 425: ~1.7 M kernels, ~8.1 M NVTX ranges,
# ~1 GB; shared with bench_summary.sh), `nsl run nvtx` (nvtx_sum, the GPU
# projection of every range, nvtx_gpu_proj_sum and the range tree) measured
# with /usr/bin/time: wall, CPU (user + sys) and peak RSS, best of 3; then
# one instrumented run that splits the time into loading the columns and the
# analysis, and the memory into heap and pages of the memory-mapped export.
# Targets: 10 s wall and 1.5 GB peak RSS on the project's 2-core machine
# (nsys-ai's NVTX layer breakdown of the same trace: 53 s, 3.4 GB).
# Needs /usr/bin/time (Debian package `time`).
. "$(dirname "$0")/lib.sh"
n=${1:-425}
tiled_export "$n"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"

for i in 1 2 3; do
  measure nvtx "$nsl" run nvtx "$big"
done | tee "$work/nvtx_results.txt"
awk '{ if (w == "" || $2 < w) { w = $2; c = $3 }; if ($4 > m) m = $4 }
     END { printf "best of 3: nsl run nvtx %.2f s wall, %.2f s CPU; peak RSS %d MiB (targets: 10 s, 1536 MiB)\n",
           w, c, m / 1024 }' "$work/nvtx_results.txt"

# Where the time and the memory go (one run, in process).
cat > "$work/nvtx_split.lua" <<'LUA'
return { run = function(trace, args, out)
  local function status()
    local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
    return s:match("VmHWM:%s*(%d+)") // 1024, s:match("RssAnon:%s*(%d+)") // 1024, s:match("RssFile:%s*(%d+)") // 1024
  end
  local c0, w0 = os.clock(), os.time()
  trace.nvtx:load{"report", "pid", "tid", "start", "stop", "dur", "kind", "end_tid", "text", "domain"}
  trace.api:load{"report", "pid", "tid", "corr", "start", "stop"}
  for _, t in ipairs{"kernels", "memcpy", "memset"} do trace[t]:load{"report", "pid", "corr", "start", "stop"} end
  local c1 = os.clock()
  local _, anon_loaded, file_loaded = status()
  local a = require("nsl.engine.runner").load_analysis("nvtx")
  a.run(trace, {only = "sum,proj_sum,tree", per_report = false, normalize = true, max_depth = -1, limit = 0},
        require("nsl.engine.output").new{analysis = "nvtx", format = "csv"})
  local c2 = os.clock()
  local hwm, anon, file = status()
  io.stderr:write(string.format(
    "NVTX ranges %d, API calls %d, GPU ops %d\n" ..
    "CPU: loading the columns %.2f s, the analysis %.2f s\n" ..
    "memory: after loading heap %d MiB + mapped export %d MiB; at the end heap %d MiB + mapped export %d MiB; " ..
    "peak RSS %d MiB (so heap at most %d MiB)\n",
    #trace.nvtx, #trace.api, #trace.kernels + #trace.memcpy + #trace.memset, c1 - c0, c2 - c1,
    anon_loaded, file_loaded, anon, file, hwm, hwm - file))
end }
LUA
"$nsl" run "$work/nvtx_split.lua" "$big" > /dev/null

# The peer floor: the sqlite3 CLI reading the same columns of the same rows
# (one thread, summing them so nothing is printed) -- what any SQLite-based
# tool pays before it computes anything.
floor_sql="SELECT total(globalTid), total(start), total(\"end\"), total(eventType), total(endGlobalTid),
  total(length(text)), total(textId), total(domainId) FROM NVTX_EVENTS;"
present() { [ "$(sqlite3 "$big" "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='$1'")" = 1 ]; }
for t in CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_DRIVER; do
  present "$t" || continue
  floor_sql="$floor_sql SELECT total(globalTid), total(correlationId), total(start), total(\"end\") FROM $t;"
done
for t in CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET; do
  present "$t" || continue
  floor_sql="$floor_sql SELECT total(globalPid), total(correlationId), total(start), total(\"end\") FROM $t;"
done
measure floor sqlite3 "$big" "$floor_sql" | tee "$work/nvtx_floor.txt"
read -r _ fw fc _ < "$work/nvtx_floor.txt"
echo "sqlite3 CLI reading the same columns: $fw s wall, $fc s CPU (one thread)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
