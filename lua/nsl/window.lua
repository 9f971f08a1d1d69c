-- nsl.window -- a time window of a trace from what users type in --arg
-- values: "from=1.5s to=1.6s" (times with units, counted from the start of
-- the trace), resolved to absolute integer ns on the trace's clock.
--   local lo, hi = window.span(trace)               -- first start, last stop
--   local from, to = window.resolve(trace, args)    -- args.from / args.to
local nsl = require("nsl")

local M = {}

-- Nanoseconds per unit; µ (U+00B5) and μ (U+03BC) both spell micro.
local ns_per = {[""] = 1, ns = 1, us = 1e3, ["µs"] = 1e3, ["μs"] = 1e3, ms = 1e6, s = 1e9, min = 60e9, h = 3600e9}

local HELP = "a time: a number of ns, or a number with a unit (500ns, 10us, 1.5ms, 2s, 1min)"

--- window.parse_time(v) -> integer ns, or nil and a message.  v: a number
-- (ns) or a string "<number>[ ]<unit>" (unit ns, us, µs, ms, s, min, h;
-- case-insensitive), not negative; rounded to the nearest ns.
function M.parse_time(v)
  local x, unit
  if math.type(v) then
    x, unit = v, ""
  elseif type(v) == "string" then
    local text = v:match("^%s*(.-)%s*$")
    local num, rest = text:match("^([%d%.]+[eE][%+%-]?%d+)%s*(.*)$")
    if not num then num, rest = text:match("^([%d%.]+)%s*(.*)$") end
    x, unit = tonumber(num or ""), rest and rest:lower()
  end
  local mult = unit and ns_per[unit]
  if not x or not mult or x ~= x or x < 0 then return nil, string.format("'%s' is not %s", tostring(v), HELP) end
  local ns = x * mult
  if ns >= 2 ^ 62 then return nil, string.format("'%s' is too far", tostring(v)) end
  return math.tointeger(ns) or math.floor(ns + 0.5)
end

-- Tables whose rows are events with start and stop.
M.event_tables = {"kernels", "memcpy", "memset", "nvtx", "api"}

--- window.span(trace [, tables]) -> lo, hi: the earliest start and latest
-- stop over the tables (default: kernels, memcpy, memset, nvtx, api); nil
-- when they have no events.
function M.span(trace, tables)
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

--- window.resolve(trace, args [, tables]) -> from, to (absolute ns): args.from
-- and args.to are times counted from the trace's first event (to empty or
-- absent: the last stop).  Fails with one line for a bad time or an empty
-- window.
function M.resolve(trace, args, tables)
  local lo, hi = M.span(trace, tables)
  if not lo then nsl.fail("the trace has no events (kernels, memory operations, NVTX ranges or CUDA API calls)") end
  if hi <= lo then hi = lo + 1 end   -- a single instant: a 1 ns window
  local function arg(name, default)
    local v = args[name]
    if v == nil or v == "" then return default end
    local ns, err = M.parse_time(v)
    if not ns then nsl.fail(string.format("--arg %s: %s", name, err)) end
    return lo + ns
  end
  local from, to = arg("from", lo), arg("to", hi)
  if to <= from then
    local function show(v) return (v == nil or v == "") and "the end" or tostring(v) end
    nsl.fail(string.format("the window from %s to %s is empty (the trace lasts %s)", show(args.from), show(args.to),
      require("nsl.report").duration(hi - lo)))
  end
  return from, to, lo, hi
end

return M
