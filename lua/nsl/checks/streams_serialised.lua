-- nsl.checks.streams_serialised -- diagnose check streams.serialised (the engine: nsl.diagnose).
local nsl = require("nsl")
local report = require("nsl.report")

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
    local T = ctx:gpu()
    local c = T.counts
    if c.placed == 0 or c.copies == 0 or c.kernel_streams == 0 or c.serial == 0 then return end
    local t = T.ser   -- (per device: its span, the copies on its kernel streams, their time with no kernel)
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
                where = {rank = ctx:rank(r, dev), report = r, device = dev, stream = t.top[i], from = t.lo[i],
                         to = t.hi[i]},
                next = "nsl run overlap " .. ctx:path(r)}
      end
    end
  end,
}
