-- nsl.findings -- checks that turn a measured value into a finding on the
-- `out` object (out:finding), graded by limits, so analyses word and grade
-- their checks the same way and `--fail-on` can gate on them.
local M = {}

local order = {"info", "warning", "error"}

--- findings.add(out, severity, fmt, ...) -- one finding with a formatted
-- message; extra fields can be given as a table in place of severity:
-- findings.add(out, {severity = "warning", check = "idle"}, fmt, ...).
function M.add(out, f, fmt, ...)
  if type(f) == "string" then f = {severity = f} end
  local rec = {}
  for k, v in pairs(f) do rec[k] = v end
  rec.message = string.format(fmt, ...)
  out:finding(rec)
  return rec
end

-- The most severe level whose limit the value passes (cmp(value, limit)).
local function grade(value, limits, cmp)
  if value == nil or value ~= value then return nil end
  local found
  for _, sev in ipairs(order) do
    local limit = limits[sev]
    if limit and limit > 0 and cmp(value, limit) then found = sev end
  end
  return found
end

--- findings.above(out, value, limits, check, fmt, ...) -> severity or nil.
-- limits = {info =, warning =, error =} (any subset; a limit of 0 or nil is
-- off); the finding gets the most severe level whose limit value exceeds.
-- The message is string.format(fmt, ...); the record also carries check,
-- value and limit (for JSON output and --fail-on).
function M.above(out, value, limits, check, fmt, ...)
  local sev = grade(value, limits, function(v, l) return v > l end)
  if sev then M.add(out, {severity = sev, check = check, value = value, limit = limits[sev]}, fmt, ...) end
  return sev
end

--- findings.below(out, value, limits, check, fmt, ...) -- as above, for
-- values that are bad when they fall under the limit.
function M.below(out, value, limits, check, fmt, ...)
  local sev = grade(value, limits, function(v, l) return v < l end)
  if sev then M.add(out, {severity = sev, check = check, value = value, limit = limits[sev]}, fmt, ...) end
  return sev
end

return M
