-- info -- what a trace holds: reports with their nsys and schema versions,
-- time span, devices, processes, and the row count of every table.
local nsl = require("nsl")
local window = require("nsl.window")

local timed = {"kernels", "memcpy", "memset", "api", "nvtx", "osrt", "sync"}

--- What the tables need of trace, computed per report (so a distributed
-- run does it on each process's share): the earliest start and latest stop
-- per timed table and report (spans), devices, processes, and the row
-- count of every table (counts).
local function extract(trace)
  -- each table's reports' extents, measured once per trace and kept: a row per table and report
  local parts = {}
  for i, name in ipairs(timed) do parts[i] = window.report_extent_table(trace, name) end
  local spans = nsl.concat_tables(parts)
  local names, counts = {}, {}
  for _, name in ipairs(trace:tables()) do
    names[#names + 1] = name
    counts[#counts + 1] = #trace[name]
  end
  return {spans = spans, devices = trace.devices:select{"report", "device", "name", "sm_count", "memory", "compute_capability"},
          processes = trace.processes:select{"report", "pid", "name"},
          counts = nsl.table{{"table", names}, {"n", counts}}}
end

--- The info tables of trace from its extract p.
local function tabulate(trace, out, p)
  local r = trace.reports
  -- time span per report over the timed tables
  local first, last = {}, {}
  local g = p.spans
  for i = 1, #g do
    local rep = g.report[i]
    if g.lo[i] and (not first[rep] or g.lo[i] < first[rep]) then first[rep] = g.lo[i] end
    if g.hi[i] and (not last[rep] or g.hi[i] > last[rep]) then last[rep] = g.hi[i] end
  end
  local n = #r
  local span_start, span_stop, span = {}, {}, {}
  for i = 1, n do
    local rep = r.report[i]
    span_start[i] = first[rep] or 0
    span_stop[i] = last[rep] or 0
    span[i] = first[rep] and last[rep] - first[rep] or math.mininteger   -- NSL_NULL_I64: no events
  end
  local utc = {}   -- the session start as people read it (start_utc_ns keeps the number)
  for i = 1, n do
    local ns = r.start_utc[i]
    utc[i] = ns and require("nsl.bundle").rfc3339_ns(ns) or ""
  end
  out:table("reports", nsl.table{
    {"report", r.name}, {"nsys", r.nsys_version}, {"schema", r.schema_version}, {"host", r.host},
    {"rank", r.rank}, {"start (UTC)", utc}, {"start_utc_ns", r.start_utc}, {"first_ns", nsl.column(span_start)},
    {"last_ns", nsl.column(span_stop)}, {"span_ns", nsl.column(span)}, {"path", r.path}},
    {title = "Reports"})
  local rows = {}
  for i = 1, #p.counts do
    local name = p.counts.table[i]
    rows[name] = (rows[name] or 0) + p.counts.n[i]
  end
  local names, counts = {}, {}
  for _, name in ipairs(trace:tables()) do
    names[#names + 1] = name
    counts[#counts + 1] = rows[name] or 0
  end
  out:table("tables", nsl.table{{"table", names}, {"rows", counts}}, {title = "Tables (rows over all reports)"})
  -- the devices without the columns the trace leaves empty; then the processes (often hundreds)
  local d = p.devices
  if #d > 0 then
    local keep = {}
    for _, c in ipairs(d:columns()) do
      if c == "report" or c == "device" or d[c]:isnull():count() < #d then keep[#keep + 1] = c end
    end
    out:table("devices", d:select(keep), {title = "Devices"})
  end
  if #p.processes > 0 then
    out:table("processes", p.processes:sort("report", "pid"), {title = "Processes", limit = 30})
  end
end

return {
  name = "info",
  description = "Versions, time span, devices, processes and row counts of a trace",
  args = {},
  run = function(trace, args, out) tabulate(trace, out, extract(trace)) end,
  -- distributed (nsl.distributed): spans, devices, processes and row counts
  -- of each process's reports, put together on rank 0
  distributed = {
    step = function(trace) return extract(trace) end,
    combine = function(trace, parts, args, out) tabulate(trace, out, parts) end,
  },
}
