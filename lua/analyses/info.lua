-- info -- what a trace holds: reports with their nsys and schema versions,
-- time span, devices, processes, and the row count of every table.
local nsl = require("nsl")

local timed = {"kernels", "memcpy", "memset", "api", "nvtx", "osrt", "sync"}

return {
  name = "info",
  description = "Versions, time span, devices, processes and row counts of a trace",
  args = {},
  run = function(trace, args, out)
    local r = trace.reports
    -- Time span per report over the timed tables.
    local first, last = {}, {}
    for _, name in ipairs(timed) do
      local t = trace[name]
      if #t > 0 then
        t:load{"report", "start", "stop"}
        local g = t:group_by("report"):agg{"lo=min(start)", "hi=max(stop)"}
        for i = 1, #g do
          local rep = g.report[i]
          if g.lo[i] and (not first[rep] or g.lo[i] < first[rep]) then first[rep] = g.lo[i] end
          if g.hi[i] and (not last[rep] or g.hi[i] > last[rep]) then last[rep] = g.hi[i] end
        end
      end
    end
    local n = #r
    local span_start, span_stop, span = {}, {}, {}
    for i = 1, n do
      local rep = r.report[i]
      span_start[i] = first[rep] or 0
      span_stop[i] = last[rep] or 0
      span[i] = first[rep] and last[rep] - first[rep] or math.mininteger   -- NSL_NULL_I64: no events
    end
    out:table("reports", nsl.table{
      {"report", r.name}, {"nsys", r.nsys_version}, {"schema", r.schema_version}, {"host", r.host},
      {"rank", r.rank}, {"start_utc_ns", r.start_utc}, {"first_ns", nsl.column(span_start)},
      {"last_ns", nsl.column(span_stop)}, {"span_ns", nsl.column(span)}, {"path", r.path}},
      {title = "Reports"})

    local d = trace.devices
    if #d > 0 then
      out:table("devices", d:select{"report", "device", "name", "sm_count", "memory", "compute_capability"},
        {title = "Devices"})
    end
    local p = trace.processes
    if #p > 0 then
      out:table("processes", p:select{"report", "pid", "name"}:sort("report", "pid"), {title = "Processes", limit = 30})
    end
    local names, counts = {}, {}
    for _, name in ipairs(trace:tables()) do
      names[#names + 1] = name
      counts[#counts + 1] = #trace[name]
    end
    out:table("tables", nsl.table{{"table", names}, {"rows", counts}}, {title = "Tables (rows over all reports)"})
  end,
}
