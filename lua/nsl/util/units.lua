-- nsl.util.units -- the one parser of durations that users type in --arg values
-- ("250" ns, "10us", "1.5 ms", "2s"), giving integer nanoseconds.  Turning
-- nanoseconds back into text is nsl.report.duration.
local nsl = require("nsl")

local M = {}

-- Nanoseconds per unit; µ (U+00B5) and μ (U+03BC) both spell micro.
local ns_per = {
  [""] = 1, ns = 1,
  us = 1e3, ["µs"] = 1e3, ["μs"] = 1e3,
  ms = 1e6,
  s = 1e9, sec = 1e9,
  min = 60e9,
  h = 3600e9,
}

local HELP = "a duration: a number of ns, or a number with a unit (500ns, 10us, 1.5ms, 2s, 1min, 1h)"

--- units.duration(v) -> integer ns, or nil and a message.  v is a number
-- (ns) or a string: a non-negative number, optional spaces, an optional unit
-- (ns, us, µs, ms, s, min, h; case-insensitive).  Rounds to the nearest ns.
function M.duration(v)
  local x, unit
  if type(v) == "number" then
    x, unit = v, ""
  elseif type(v) == "string" then
    local text = v:match("^%s*(.-)%s*$")
    local num, rest = text:match("^([%d%.]+[eE][%+%-]?%d+)%s*(.*)$")
    if not num then num, rest = text:match("^([%d%.]+)%s*(.*)$") end
    x, unit = tonumber(num or ""), rest and rest:lower()
  end
  local mult = unit and ns_per[unit]
  if not x or not mult then
    return nil, string.format("'%s' is not %s", tostring(v), HELP)
  end
  if x ~= x or x < 0 then return nil, string.format("'%s' is not %s", tostring(v), HELP) end
  local ns = x * mult
  if ns >= 2^63 then return nil, string.format("'%s' is too long a duration", tostring(v)) end
  return math.tointeger(ns) or math.floor(ns + 0.5)
end

--- units.duration_arg(args, name) -> args[name] as integer ns; an argument
-- that is not a duration fails with a one-line message naming it (a usage
-- error: exit 2).
function M.duration_arg(args, name)
  local ns, err = M.duration(args[name])
  if not ns then nsl.fail(string.format("--arg %s: %s", name, err), "usage") end
  return ns
end

return M
