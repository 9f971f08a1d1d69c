-- nsl.checks.streams_serialised -- diagnose check streams.serialised (the engine: nsl.diagnose).
local nsl = require("nsl")
local report = require("nsl.report")
local overlap = require("nsl.overlap")
local D = require("nsl.diagnose")
local none = D.none
local devices = D.devices

return {
  id = "streams.serialised",
  description = "Per device, memcpy on streams that also run kernels while no kernel runs on the device: " ..
    "copies a stream of their own would overlap with compute; the job loses at most the device's " ..
    "compute time (a copy hides only under compute that exists)",
  tables = {},
  reads = {"GPU operations (nsl.gpu_ops): report, device, stream, start, stop, name, memop"},
  claims = {},
  capped_by = "compute",
  thresholds = {},
  run = function(ctx)
    local dv = devices(ctx)
    local ops = dv.ops
    if #ops == 0 then return end
    -- (only the columns read below: the filter copies no others)
    local kern = ops:select{"report", "device", "stream", "start", "stop", "memop"}:filter(~ops.memop)
    local ks = kern:group_by("report", "device", "stream"):agg{"kernels=count"}
    local copies = ops:filter(ops.memop & ops.name:where(function(s) return s:find("^%[CUDA memcpy") ~= nil end))
    if #copies == 0 or #ks == 0 then return end
    local on_k = copies:join(ks, {"report", "device", "stream"}, {"kernels"})
    local serial = ~on_k.kernels:isnull()
    if serial:count() == 0 then return end
    -- kernels and the copies on kernel streams, grouped by device as in devices()
    local sub = nsl.table{{"report", nsl.concat(kern.report, copies.report)},
      {"device", nsl.concat(kern.device, copies.device)}, {"stream", nsl.concat(kern.stream, copies.stream)},
      {"start", nsl.concat(kern.start, copies.start)}, {"stop", nsl.concat(kern.stop, copies.stop)},
      {"memop", nsl.concat(kern.memop, copies.memop)},
      {"keep", nsl.concat(nsl.rep(1, #kern), serial:cast("i64"))}}
    sub = sub:filter(sub.keep:eq(1))
    local g = sub:group_by("report", "device")
    local keys = g:keys()
    local sp = keys:join(dv.span, {"report", "device"}, {"lo", "hi"})
    local m = overlap.measure(sub, none(#sub), g:ids(), #g, {{gid = nsl.range(#g), lo = sp.lo, hi = sp.hi}},
                             {"memory_only"})[1]
    local exposed_copies = m.memory_only
    local ser = on_k:filter(serial)
    ser = ser:with("dur", ser.stop - ser.start)
    local cs = ser:group_by("report", "device"):agg{"n=count", "t=sum(dur)"}
    -- the stream with the most copy time on each device
    local per_stream = ser:group_by("report", "device", "stream"):agg{"t=sum(dur)"}:sort("-t", "stream")
    local top = {}
    for i = 1, #per_stream do
      local k = per_stream.report[i] .. ":" .. per_stream.device[i]
      if not top[k] then top[k] = per_stream.stream[i] end
    end
    local t = keys:with("span", sp.hi - sp.lo, "copy_exposed", exposed_copies):join(cs, {"report", "device"}, {"n", "t"})
    local ev = ctx:table("streams_serialised", nsl.table{
      {"report", t.report:map(function(r) return ctx:rank(r) end)}, {"device", t.device},
      {"copies on kernel streams", nsl.coalesce(t.n, 0)}, {"copy time (ns)", nsl.coalesce(t.t, 0)},
      {"with no kernel running (ns)", t.copy_exposed}, {"span (ns)", t.span}},
      "Memory copies issued on streams that also run kernels, and their time with no kernel running on the device")
    for i = 1, #t do
      local o = t.copy_exposed[i]
      if o > 0 then
        local r, dev = t.report[i], t.device[i]
        -- a copy can hide only under compute that exists: the job loses at most the device's compute time
        local row = ctx:ledger().run[r .. ":" .. dev]
        ctx:add{id = "streams.serialised", total = o, window = t.span[i], evidence = ev,
                lost = row and math.min(o, row.compute) or o,
                text = string.format("%s: %s of memory copies on compute streams run with no kernel beside them " ..
                  "(issue copies on their own stream to overlap them with compute)", ctx:rank(r, dev),
                  report.duration(o)),
                where = {rank = ctx:rank(r, dev), report = r, device = dev, stream = top[r .. ":" .. dev],
                         from = sp.lo[i], to = sp.hi[i]},
                next = "nsl run overlap " .. ctx:path(r)}
      end
    end
  end,
}
