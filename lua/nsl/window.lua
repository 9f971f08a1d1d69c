-- nsl.window -- a time window of a trace from what users type in --arg
-- values: "from=1.5s to=1.6s" (durations in nsl.util.units' syntax, counted from
-- the start of the trace), resolved to absolute integer ns on the trace's
-- clock.
--   local lo, hi = window.span(trace)               -- first start, last stop
--   local from, to = window.resolve(trace, args)    -- args.from / args.to
local nsl = require("nsl")
local units = require("nsl.util.units")
local kept = require("nsl.kept")

local M = {}

-- trace -> {lo, hi, origin}: the span of a trace whose tables hold only
-- some rows (a distributed run's row filters, nsl.distributed; the window
-- of --from/--to, M.select), measured over all rows, and where its times
-- count from.
local known = setmetatable({}, {__mode = "k"})

-- trace -> {table name -> {x = {least start, greatest start, greatest stop},
-- per = each report's (M.report_extents)}}: the extents M.span combines,
-- measured once (a trace's rows never change; every analysis of a run and
-- diagnose's checks ask for them again).
local extents = setmetatable({}, {__mode = "k"})

-- The name the column cache keeps each report's extent of a table under (nsl.kept): three rows, its least
-- start, greatest start and greatest stop (NULL: none), on the report's own clock.
local EXTENT_KEPT = "extent.1"

-- Each report's {least start, greatest start, greatest stop} of trace table `name` (a value nil where it
-- has none), on the trace's clock, from every report's rows: by report (0-based); one group-by for all
-- reports (none for one).
local function measure_reports(trace, name, whole)
  local per = {}
  if trace:nreports() == 1 then
    per[0] = whole
  else
    local t = trace[name]
    t:load{"report", "start", "stop"}
    local g = t:select{"report", "start", "stop"}:group_by("report"):agg{"lo=min(start)", "hi=max(start)",
                                                                       "st=max(stop)"}
    for i = 1, #g do per[g.report[i]] = {g.lo[i], g.hi[i], g.st[i]} end
  end
  return per
end

-- Each report's extents of trace table `name` as the column cache kept them (every report its own, on its
-- own clock), moved to the trace's clock: by report (0-based), a report with none absent; nil where some
-- report kept none.
local function kept_reports(trace, name)
  local parts = kept.per_report(trace, name, EXTENT_KEPT, "i64", 3)
  if not parts then return nil end
  local offset, per = kept.time_offsets(trace), {}
  for r, c in ipairs(parts) do
    local x, any = {}, false
    for k = 1, 3 do
      if c[k] then x[k], any = c[k] + offset[r], true end
    end
    if any then per[r - 1] = x end
  end
  return per
end

-- {least start, greatest start, greatest stop} of trace table `name` (nil where it has none), read back
-- from the column cache where every report kept its own, else made (and kept); and, when made, each
-- report's (measure_reports) where it was kept or asked for (want_reports).
local function table_extent(trace, name, want_reports)
  local t = trace[name]
  local x = {}
  if #t == 0 then return x, {} end
  local per = kept_reports(trace, name)
  if per then
    for _, e in pairs(per) do
      local a, a1, b = e[1], e[2], e[3]
      if a and (not x[1] or a < x[1]) then x[1] = a end
      if a1 and (not x[2] or a1 > x[2]) then x[2] = a1 end
      if b and (not x[3] or b > x[3]) then x[3] = b end
    end
    return x, per
  end
  t:load{"start", "stop"}
  x[1], x[2] = nsl.extent(t.start)
  local _, b = nsl.extent(t.stop)
  x[3] = b
  if kept.keeps(trace) then
    local nr, offset = trace:nreports(), kept.time_offsets(trace)
    per = measure_reports(trace, name, x)
    for r = 0, nr - 1 do
      local e, vals, at = per[r] or {}, {}, {}
      for k = 1, 3 do
        vals[k] = e[k] and e[k] - offset[r + 1] or 0
        at[k] = e[k] and k - 1 or -1   -- (NULL where there is none)
      end
      trace:keep_derived(r, name, EXTENT_KEPT, nsl.column(vals):gather(nsl.column(at)))
    end
  elseif want_reports then
    per = measure_reports(trace, name, x)
  end
  return x, per
end

-- The extents of trace table `name` (table_extent), measured once per trace: {x, per} (per nil until
-- asked for where nothing kept it).
local function extents_of(trace, name, want_reports)
  local memo = extents[trace]
  if not memo then
    memo = {}
    extents[trace] = memo
  end
  local m = memo[name]
  if not m or (want_reports and not m.per) then
    local x, per = table_extent(trace, name, want_reports)
    m = {x = x, per = per}
    memo[name] = m
  end
  return m
end

--- window.report_extents(trace, name) -> {[r] = {least start, greatest
-- start, greatest stop}} of trace table `name` for each report r (0-based;
-- a value nil where the report has none, a report without rows may be
-- absent), on the trace's clock: what the column cache kept of every report
-- where it did (M.span keeps them: a warm run reads no row), else one
-- group-by of the table for all reports; measured once per trace.
function M.report_extents(trace, name) return extents_of(trace, name, true).per end

--- M.report_extents as a table: report (i64, the reports with rows), lo
-- (the least start) and hi (the greatest stop), NULL where the report has
-- none -- for a distributed run's processes to send, and for tables of
-- several trace tables' extents (nsl.concat_tables).
function M.report_extent_table(trace, name)
  local reps, los, his, lo_at, hi_at = {}, {}, {}, {}, {}
  for r, x in pairs(M.report_extents(trace, name)) do
    local k = #reps + 1
    reps[k], los[k], his[k] = r, x[1] or 0, x[3] or 0
    lo_at[k], hi_at[k] = x[1] and k - 1 or -1, x[3] and k - 1 or -1
  end
  local function i64(v) return (#v > 0 and nsl.column(v) or nsl.column{}):cast("i64") end
  return nsl.table{{"report", i64(reps)}, {"lo", i64(los):gather(i64(lo_at))}, {"hi", i64(his):gather(i64(hi_at))}}
end

--- window.set_span(trace, lo, hi [, origin]): the default span of trace (its
-- tables hold filtered rows; lo, hi were measured over all of them) and the
-- trace's start, where printed times count from (default lo).
function M.set_span(trace, lo, hi, origin) known[trace] = {lo, hi, origin or lo} end

--- window.origin(trace) -> the trace's start: its first event over the
-- event tables, before any --from/--to window (nil without events).  Every
-- printed time a user matches across outputs counts from it ("At (s from
-- start)"), so a windowed run prints the times the whole run prints.
function M.origin(trace)
  if known[trace] then return known[trace][3] end
  return (M.span(trace))
end

--- window.known_origin(trace) -> window.origin when it is known without
-- reading a table (a trace opened with --from/--to, a distributed run's),
-- else nil: for front ends that must not block on a load.
function M.known_origin(trace) return known[trace] and known[trace][3] end

--- window.check_span(lo, hi): fails (an nsl error for the user) when times
-- from lo to hi (integers, hi >= lo) span 2^62 ns (146 years) or more, which
-- no profile does: the trace's times are damaged (found by sweeping extreme
-- times through every analysis: a start of -2^62, one near -2^63).
-- Arithmetic on such a span (hi - lo, lanes laid end to end, bin edges)
-- would wrap around.
function M.check_span(lo, hi)
  local w = hi - lo   -- wraps below 0 over 2^63
  if w < 0 or w >= 1 << 62 then
    nsl.fail(string.format("the trace's times are damaged: they run from %d to %d ns, over 146 years (2^62 ns)",
                           lo, hi))
  end
end

-- Tables whose rows are events with start and stop.
M.event_tables = {"kernels", "memcpy", "memset", "nvtx", "api"}

--- window.span(trace [, tables]) -> lo, hi: the earliest start and latest
-- stop over the tables (default: kernels, memcpy, memset, nvtx, api); nil
-- when they have no events.
function M.span(trace, tables)
  if not tables and known[trace] then return known[trace][1], known[trace][2] end
  local lo, hi
  for _, name in ipairs(tables or M.event_tables) do
    local x = extents_of(trace, name).x   -- the least start, greatest start and greatest stop, once per trace
    local a, a1, b = x[1], x[2], x[3]
    if a and (not lo or a < lo) then lo = a end
    if b and (not hi or b > hi) then hi = b end
    if a1 and (not hi or a1 > hi) then hi = a1 end   -- marks without a stop
  end
  return lo, hi
end

--- window.report_starts(trace) -> {[r] = the earliest start of report r
-- (0-based)} over the event tables: where a window counts from when report
-- r is opened alone (nsl --report); reports without events are absent.
-- Each table's reports measured together (M.report_extents: a lookup per
-- report would read every row once per report).
function M.report_starts(trace)
  local lo = {}
  for _, name in ipairs(M.event_tables) do
    for r, x in pairs(M.report_extents(trace, name)) do   -- one Lua step per report
      local a = x[1]
      if a and (not lo[r] or a < lo[r]) then lo[r] = a end
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
    for r, x in pairs(M.report_extents(trace, name)) do   -- one Lua step per report
      local a, b = x[1], x[3] or x[1]
      local cur = span[r]
      if a then span[r] = {math.min(cur and cur[1] or a, a), math.max(cur and cur[2] or b, b), r} end
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
  return M.resolve_span(lo, hi, args, known[trace] and known[trace][3])
end

--- window.resolve_span(lo, hi, args [, origin]) -> from, to, lo, hi:
-- window.resolve for a trace of span lo, hi (lo nil: no events) whose times
-- count from origin (default lo).
function M.resolve_span(lo, hi, args, origin)
  if not lo then nsl.fail("the trace has no events (kernels, memory operations, NVTX ranges or CUDA API calls)") end
  if hi <= lo then hi = lo + 1 end   -- a single instant: a 1 ns window
  M.check_span(lo, hi)
  local function arg(name, default)
    local v = args[name]
    if v == nil or v == "" then return default end
    return (origin or lo) + units.duration_arg(args, name)
  end
  local from, to = arg("from", lo), arg("to", hi)
  if to <= from then
    local function show(v) return (v == nil or v == "") and "the end" or tostring(v) end
    nsl.fail(string.format("the window from %s to %s is empty (the trace lasts %s)", show(args.from), show(args.to),
      require("nsl.report").duration(hi - lo)), "usage")
  end
  if from >= hi then   -- starts after the last event: nothing would be drawn
    nsl.fail(string.format("the window starts at %s, after the trace's last event (the trace lasts %s)",
      tostring(args.from), require("nsl.report").duration(hi - lo)), "usage")
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

-- ---- the window and device of a trace (--from, --to, --device) ----

-- How a window keeps each table's rows, by the table's time columns:
-- "range": events that overlap it (start < to and stop > from; a NULL stop,
-- an NVTX mark or a range left open, counts as open until the end);
-- "start" / "time": instants inside it (from <= t < to).  Rows are kept
-- whole, never clipped.
M.window_tables = {kernels = "range", memcpy = "range", memset = "range", api = "range", nvtx = "range",
                   sync = "range", osrt = "range", overhead = "range", gpu_ranges = "range", memory = "start",
                   samples = "time"}
-- The tables whose rows belong to one GPU (their `device` column).
M.device_tables = {"kernels", "memcpy", "memset", "sync", "memory", "gpu_ranges", "devices"}

-- One bound of the window: "step:N" (the start of step N for from, its end
-- for to; steps as iterations finds them) or a time from the trace's start.
local function bound(probe, which, v, lo, steps)
  local n = v:match("^%s*step:%s*(%d+)%s*$")
  if not n then
    if v:match("^%s*step") then return nil, string.format("--%s %s: a step is step:N (N from 1)", which, v) end
    local ns, err = units.duration(v)
    if not ns then return nil, string.format("--%s: %s, or step:N", which, err) end
    return lo + ns
  end
  n = math.tointeger(tonumber(n))
  if not steps[1] then
    local st, err = require("nsl.iterations").steps(probe)
    if not st then return nil, string.format("--%s %s: %s", which, v, err) end
    steps[1] = st
  end
  local w = steps[1].windows
  local rows = w:filter(w.iter:eq(n))
  if #rows == 0 then
    return nil, string.format("--%s %s: the trace has steps 1 to %d (%s)", which, v, steps[1].n, steps[1].how)
  end
  if which == "from" then return (nsl.extent(rows.start)) end
  return select(2, nsl.extent(rows.stop))
end

-- The devices of the probe's GPU tables (sorted ids).
local function devices_of(probe)
  local seen, list = {}, {}
  for _, name in ipairs{"kernels", "memcpy", "memset", "gpu_ranges"} do
    local t = probe[name]
    if #t > 0 then
      t:load{"device"}
      local g = t:group_by("device"):agg{"n=count"}
      for i = 1, #g do   -- one Lua step per device
        local d = g.device[i]
        if d and not seen[d] then seen[d], list[#list + 1] = true, d end
      end
    end
  end
  table.sort(list)
  return list
end

--- window.select(trace, probe, sel) -> words, or nil and a message: keeps
-- in trace (no table read yet) only the rows of the window sel.from..sel.to
-- (times from the trace's start, or step:N) and of device sel.device,
-- dropped where the rows are read (trace:filter), so every analysis sees
-- only them.  probe is the same trace opened a second time, read here to
-- find the trace's start, its steps and its devices.  The trace's span
-- becomes the window (clipped to the trace), its origin stays the trace's
-- start.  words: the options as a command line repeats them; alone: per
-- report (0-based), the options that select the same rows of that report
-- opened alone (its times count from its own first event).
function M.select(trace, probe, sel)
  local words, conds, alone = {}, {}, {}   -- conds: table -> its conditions (one filter per table)
  local function given(v) return v ~= nil and v ~= "" end
  local function add(name, c) conds[name] = conds[name] or {}; table.insert(conds[name], c) end
  if given(sel.from) or given(sel.to) then
    local lo, hi = M.span(probe)
    if not lo then return nil, "--from/--to: the trace has no events (kernels, memory operations, NVTX ranges or CUDA API calls)" end
    local steps = {}
    local span = string.format("the trace lasts %s (0 to %.6fs from its first event)",
                               require("nsl.report").duration(hi - lo), (hi - lo) / 1e9)
    local at = {from = lo, to = hi}
    for _, which in ipairs{"from", "to"} do
      if given(sel[which]) then
        local v, err = bound(probe, which, sel[which], lo, steps)
        if not v then return nil, err end
        at[which] = v
        words[#words + 1] = "--" .. which .. " " .. nsl.shell_word(sel[which])
      end
    end
    local from, to = at.from, at.to
    if from >= hi then
      return nil, string.format("--from %s: the window starts after the trace's last event: %s", sel.from, span)
    end
    if to <= from then
      return nil, string.format("the window from %s to %s is empty: %s", given(sel.from) and sel.from or "the start",
                                sel.to, span)
    end
    for name, how in pairs(M.window_tables) do
      if how == "range" then
        add(name, {"start", "<", to})
        add(name, {"stop", ">", from, "or null"})
      else
        add(name, {how, ">=", from})
        add(name, {how, "<", to})
      end
    end
    M.set_span(trace, math.max(lo, from), math.min(hi, to), lo)
    local starts = M.report_starts(probe)
    for r = 0, probe:nreports() - 1 do
      local rs = starts[r] or lo
      alone[r] = {string.format("--from %dns", math.max(0, from - rs)), string.format("--to %dns", math.max(1, to - rs))}
    end
  end
  if given(sel.device) then
    local d = math.tointeger(tonumber(sel.device))
    local have, list, found = devices_of(probe), {}, false
    for i, v in ipairs(have) do list[i], found = tostring(v), found or v == d end
    if not found then
      return nil, string.format("--device %s: %s", sel.device, #list > 0 and
        ("the trace's devices are " .. table.concat(list, ", ")) or "the trace has no GPU work")
    end
    for _, name in ipairs(M.device_tables) do add(name, {"device", "in", {d}}) end
    words[#words + 1] = "--device " .. nsl.shell_word(tostring(sel.device))
    for r = 0, probe:nreports() - 1 do
      alone[r] = alone[r] or {}
      table.insert(alone[r], words[#words])
    end
  end
  for name, c in pairs(conds) do trace:filter(name, c) end
  return words, alone
end

return M
