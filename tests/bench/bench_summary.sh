#!/usr/bin/env bash
# bench_summary.sh [N] -- the core benchmark (run on demand, never a test):
# on an export tiled N times (default 425: ~1.7 M kernels, ~8 M NVTX, ~1 GB),
# `nsl run summary --arg only=kernels` against the sqlite3 CLI running the same
# GROUP BY, side by side: wall time, peak RSS, ratio; and nsl's bytes per
# loaded kernel event.  Needs /usr/bin/time (Debian package `time`).
. "$(dirname "$0")/lib.sh"
n=${1:-425}
tiled_export "$n"

sqlq="SELECT s.value, sum(k.end - k.start), count(*), avg(k.end - k.start), min(k.end - k.start),
      max(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
      GROUP BY k.demangledName ORDER BY 2 DESC"
for i in 1 2 3; do
  measure sqlite3 sqlite3 -readonly "file:$big?immutable=1" "$sqlq"
  measure nsl "$nsl" run summary "$big" --arg only=kernels
done | tee "$work/results.txt"
awk '{ w[$1] = (w[$1] == "" || $2 < w[$1]) ? $2 : w[$1]; m[$1] = $4 }
     END { printf "best of 3: sqlite3 %.2f s %d MiB; nsl %.2f s %d MiB; nsl/sqlite3 wall ratio %.2f\n",
           w["sqlite3"], m["sqlite3"] / 1024, w["nsl"], m["nsl"] / 1024, w["nsl"] / w["sqlite3"] }' "$work/results.txt"
# Where the memory goes: heap (anonymous) against file-backed pages (near
# zero: exports are read through SQLite's page cache, not mapped).
cat > "$work/bytes.lua" <<'LUA'
return { run = function(trace, args, out)
  local k = trace.kernels
  k:load{"start", "stop", "demangled"}
  local loaded = k:nbytes()
  local a = require("nsl.engine.runner").load_analysis("summary")
  a.run(trace, {only = "kernels", limit = 0, base = false, mangled = false, per_report = false},
        require("nsl.engine.output").new{analysis = "summary", format = "csv"})
  local f = io.open("/proc/self/status"); local s = f:read("a"); f:close()
  io.stderr:write(string.format("kernels: %d rows; start+stop+demangled %.1f B/kernel; after summary: " ..
    "peak RSS %d MiB = heap (RssAnon) %d MiB + file-backed pages (RssFile) %d MiB; heap %.1f B/kernel\n",
    #k, loaded / #k, s:match("VmHWM:%s*(%d+)") // 1024, s:match("RssAnon:%s*(%d+)") // 1024,
    s:match("RssFile:%s*(%d+)") // 1024, s:match("RssAnon:%s*(%d+)") * 1024 / #k))
end }
LUA
"$nsl" run "$work/bytes.lua" "$big" > /dev/null
