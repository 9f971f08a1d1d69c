-- nsl.window -- a time window of a trace from what users type in --arg
-- values: "from=1.5s to=1.6s" (durations in nsl.util.units' syntax, counted from
-- the start of the trace), resolved to absolute integer ns on the trace's
-- clock.
--   local lo, hi = window.span(trace)               -- first start, last stop
--   local from, to = window.resolve(trace, args)    -- args.from / args.to
local nsl = require("nsl")
local units = require("nsl.util.units")

local M = {}

-- trace -> {lo, hi}: the span of a trace whose tables hold only some rows
-- (a distributed run's row filters, nsl.distributed), measured over all rows.
local known = setmetatable({}, {__mode = "k"})

--- window.set_span(trace, lo, hi): the default span of trace (its tables
-- hold filtered rows; lo, hi were measured over all of them).
function M.set_span(trace, lo, hi) known[trace] = {lo, hi} end

-- Tables whose rows are events with start and stop.
M.event_tables = {"kernels", "memcpy", "memset", "nvtx", "api"}

--- window.span(trace [, tables]) -> lo, hi: the earliest start and latest
-- stop over the tables (default: kernels, memcpy, memset, nvtx, api); nil
-- when they have no events.
function M.span(trace, tables)
  if not tables and known[trace] then return known[trace][1], known[trace][2] end
  local lo, hi
  for _, name in ipairs(tables or M.event_tables) do
    local t = trace[name]
    if #t > 0 then
      t:load{"start", "stop"}
      local a, a1 = nsl.extent(t.start)
      local _, b = nsl.extent(t.stop)
      if a and (not lo or a < lo) then lo = a end
      if b and (not hi or b > hi) then hi = b end
      if a1 and (not hi or a1 > hi) then hi = a1 end   -- marks without a stop
    end
  end
  return lo, hi
end

--- window.report_start(trace, r) -> the earliest start of report r (0-based)
-- over the event tables: where a window counts from when report r is
-- opened alone (nsl --report); nil when it has no events.
function M.report_start(trace, r)
  local lo
  for _, name in ipairs(M.event_tables) do
    local t = trace[name]
    if #t > 0 then
      t:load{"report", "start"}
      local g = t:group_by("report"):agg{"a=min(start)"}
      for i = 1, #g do   -- one Lua step per report
        if g.report[i] == r and g.a[i] and (not lo or g.a[i] < lo) then lo = g.a[i] end
      end
    end
  end
  return lo
end

--- window.disjoint(trace [, tables]) -> a sentence when the trace's reports
-- do not all overlap in time (each report's first start to last stop over
-- the tables, default kernels, memcpy, memset and nvtx, on the trace's
-- aligned clock): the reports on either side of the first gap and its
-- length; nil for one report or reports that overlap.  A timeline that
-- stacks such reports shows slivers on a long axis: front ends say so.
function M.disjoint(trace, tables)
  if trace:nreports() < 2 then return nil end
  local span = {}
  for _, name in ipairs(tables or {"kernels", "memcpy", "memset", "nvtx"}) do
    local t = trace[name]
    if #t > 0 then
      t:load{"report", "start", "stop"}
      local g = t:group_by("report"):agg{"a=min(start)", "b=max(stop)"}
      for i = 1, #g do   -- one Lua step per report
        local r, a, b = g.report[i], g.a[i], g.b[i] or g.a[i]
        local cur = span[r]
        if a then span[r] = {math.min(cur and cur[1] or a, a), math.max(cur and cur[2] or b, b), r} end
      end
    end
  end
  local list = {}
  for _, v in pairs(span) do list[#list + 1] = v end
  table.sort(list, function(x, y) return x[1] < y[1] or (x[1] == y[1] and x[3] < y[3]) end)
  local reach, who = nil, nil
  for _, v in ipairs(list) do
    if reach and v[1] > reach then
      local names = trace.reports.name
      return string.format("reports %s and %s do not overlap in time: %s pass between the end of one and the start " ..
        "of the other (each report keeps its session's clock)", names[who + 1], names[v[3] + 1],
        require("nsl.report").duration(v[1] - reach))
    end
    if not reach or v[2] > reach then reach, who = v[2], v[3] end
  end
  return nil
end

--- window.resolve(trace, args [, tables]) -> from, to (absolute ns): args.from
-- and args.to are times counted from the trace's first event (to empty or
-- absent: the last stop).  Fails with one line for a bad time, an empty
-- window or one that starts after the last event.
function M.resolve(trace, args, tables)
  local lo, hi = M.span(trace, tables)
  return M.resolve_span(lo, hi, args)
end

--- window.resolve_span(lo, hi, args) -> from, to, lo, hi: window.resolve
-- for a trace of span lo, hi (lo nil: no events).
function M.resolve_span(lo, hi, args)
  if not lo then nsl.fail("the trace has no events (kernels, memory operations, NVTX ranges or CUDA API calls)") end
  if hi <= lo then hi = lo + 1 end   -- a single instant: a 1 ns window
  local function arg(name, default)
    local v = args[name]
    if v == nil or v == "" then return default end
    return lo + units.duration_arg(args, name)
  end
  local from, to = arg("from", lo), arg("to", hi)
  if to <= from then
    local function show(v) return (v == nil or v == "") and "the end" or tostring(v) end
    nsl.fail(string.format("the window from %s to %s is empty (the trace lasts %s)", show(args.from), show(args.to),
      require("nsl.report").duration(hi - lo)))
  end
  if from >= hi then   -- starts after the last event: nothing would be drawn
    nsl.fail(string.format("the window starts at %s, after the trace's last event (the trace lasts %s)",
      tostring(args.from), require("nsl.report").duration(hi - lo)))
  end
  return from, to, lo, hi
end

--- window.rows(t, cols, from, to) -> the rows of table t (columns cols)
-- overlapping [from, to): start < to and stop > from; nil when t has none.
-- Only the named columns are loaded; every row: no copy.
function M.rows(t, cols, from, to)
  if #t == 0 then return nil end
  local s = t:select(cols)
  local n = nsl.count_overlapping(s.start, s.stop, from, to)
  if n == #s then return s end   -- every row: no copy
  if n == 0 then return nil end
  return s:take(nsl.overlapping_rows(s.start, s.stop, from, to))   -- the rows inside, no masks
end

--- window.gather(pick) -> a `gather` declaration (nsl.distributed) for an
-- analysis of the window of args.from / args.to: pick(args) names the
-- tables to filter, each "overlap" (rows with start < to and stop > from,
-- window.rows) or "before" (rows with start < to: ranges and marks).
-- Without from and to (the whole trace) nothing is filtered.
local function whole(args) return (args.from == nil or args.from == "") and (args.to == nil or args.to == "") end

function M.gather(pick)
  return {span = function(args) return not whole(args) end, where = function(args, lo, hi)
    if whole(args) then return nil end
    local from, to = M.resolve_span(lo, hi, args)
    local where = {}
    for name, how in pairs(pick(args)) do
      where[name] = how == "overlap" and {{"start", "<", to}, {"stop", ">", from}} or {{"start", "<", to}}
    end
    return where
  end}
end

return M
