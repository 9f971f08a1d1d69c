#!/usr/bin/env bash
# bench_plot.sh [N] -- figures on a large export (run on demand, never a
# test): on the sample export tiled N times (default 425: ~1.7 M kernels,
# ~8 M NVTX ranges, ~1 GB; made by make_tiled.sh when missing), after the
# columns are loaded, the time to draw and encode
#   - a histogram PNG of every kernel duration (log bins),
#   - a timeline PNG of the whole trace (every kernel, memcpy, memset and NVTX
#     range, merged per lane in C) and of a 50 ms window,
#   - a utilisation heatmap PNG,
#   - the export analysis (Perfetto JSON) of a 1 s window, and the JSON text
#     of all kernels through format_rows against string.format in Lua.
# Wall time (date) and CPU time (os.clock) per step; the load is reported apart.
. "$(dirname "$0")/lib.sh"
n=${1:-425}
tiled_export "$n"

cat > "$work/bench_plot.lua" <<'LUA'
local nsl = require("nsl")
local plot = require("nsl.plot")
local function wall()
  local p = io.popen("date +%s%N")
  local ns = tonumber(p:read("l"))
  p:close()
  return ns / 1e9
end
local function step(label, fn)
  local w0, c0 = wall(), os.clock()
  local what = fn()
  io.write(string.format("%-44s %7.3f s wall %7.3f s cpu  %s\n", label, wall() - w0, os.clock() - c0, what or ""))
end
return { needs_trace = true, run = function(trace)
  step("load kernels, memcpy, memset, nvtx, api columns", function()
    trace.kernels:load{"report", "device", "stream", "start", "stop", "dur", "name", "demangled", "corr", "pid",
                       "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "regs", "smem_static",
                       "smem_dynamic"}
    trace.memcpy:load{"report", "pid", "device", "stream", "corr", "start", "stop", "dur", "bytes", "kind"}
    trace.memset:load{"report", "pid", "device", "stream", "corr", "start", "stop", "dur", "bytes"}
    trace.nvtx:load{"report", "pid", "tid", "start", "stop", "dur", "text", "domain", "kind"}
    trace.api:load{"report", "pid", "tid", "corr", "start", "stop", "dur", "name", "ret"}
    trace.devices:load{"report", "device", "name"}
    trace.processes:load{"report", "pid", "name"}
    trace.threads:load{"report", "pid", "tid", "name"}
    return string.format("%d kernels, %d memcpy, %d memset, %d NVTX, %d API", #trace.kernels, #trace.memcpy,
                         #trace.memset, #trace.nvtx, #trace.api)
  end)
  local k = trace.kernels
  step("histogram PNG of kernel durations (log)", function()
    local cv, d = plot.histogram(k.dur, {bins = 60, log = true, unit = "ns", title = "Kernel durations"})
    local png = cv:to_string()
    return string.format("%d values, %d bytes", d.total, #png)
  end)
  local lo, hi = require("nsl.window").span(trace)
  step("timeline PNG, whole trace", function()
    local cv, d = plot.timeline(trace, {from = lo, to = hi, title = "Timeline"})
    local png = cv:to_string()
    return string.format("%d lanes, %d spans, %d bytes", #d.lanes, d.spans, #png)
  end)
  step("timeline PNG, 50 ms window", function()
    local cv, d = plot.timeline(trace, {from = lo + 10e9 // 1, to = lo + 10050000000, title = "Timeline"})
    local png = cv:to_string()
    return string.format("%d lanes, %d spans, %d labels, %d bytes", #d.lanes, d.spans, d.labels, #png)
  end)
  step("utilisation heatmap PNG, 400 bins", function()
    local cv = plot.utilization(trace, {bins = 400})
    return string.format("%d bytes", #cv:to_string())
  end)
  step("trace-event JSON of all kernels (format_rows)", function()
    local pid = nsl.rep(1, #k)
    local s = nsl.format_rows('{"ph":"X","cat":"kernel","name":%S,"pid":%d,"tid":%d,"ts":%t,"dur":%t,"args":{' ..
      '"demangled":%s,"corr":%d,"grid":[%d,%d,%d],"block":[%d,%d,%d],"registers":%d}}',
      {k.name, pid, k.stream, k.start, k.dur, k.demangled, k.corr, k.grid_x, k.grid_y, k.grid_z, k.block_x,
       k.block_y, k.block_z, k.regs}, ",\n")
    return string.format("%d bytes", #s)
  end)
  step("export analysis, a 1 s window, to a file", function()
    local runner, output = require("nsl.engine.runner"), require("nsl.engine.output")
    local a = assert(runner.load_analysis("export"))
    local dir = assert(os.getenv("BENCH_OUT"), "BENCH_OUT names the export's folder")
    local out = output.new{analysis = "export", format = "csv", dir = dir, trace = trace}
    local args = assert(runner.parse_args(a, {"from=10s", "to=11s"}))
    io.stdout:flush()
    a.run(trace, args, out)
    local f = assert(io.open(dir .. "/trace.json", "rb"))
    local size = f:seek("end")
    f:close()
    return string.format("%d bytes", size)
  end)
  step("the same in Lua (string.format per row)", function()
    local parts, fmt = {}, string.format
    local name, stream, start, dur, corr = k.name, k.stream, k.start, k.dur, k.corr
    for i = 1, #k do
      parts[i] = fmt('{"ph":"X","cat":"kernel","name":"%s","pid":1,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{"corr":%d}}',
                     name[i], stream[i], start[i] / 1e3, dur[i] / 1e3, corr[i])
    end
    return string.format("%d bytes (fewer fields, no escaping)", #table.concat(parts, ",\n"))
  end)
end }
LUA
echo "file: $big ($(stat -c %s "$big") bytes)"
BENCH_OUT=${BENCH_OUT:-$work/export} /usr/bin/time -f "total: %e s wall, %M KiB peak RSS" "$nsl" run "$work/bench_plot.lua" "$big"
