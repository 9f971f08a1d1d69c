-- nsl.findings -- checks that turn a measured value into a finding on the
-- `out` object (out:finding), graded by limits, so analyses word and grade
-- their checks the same way and `--fail-on` can gate on them; and the one
-- way a finding reads as text (M.lines), which output prints first.
--
-- The finding record: severity ("info" | "warning" | "error") and message,
-- and optionally
--   id        stable dotted id of the check ("straggler.host_idle", "gpu.gaps")
--   cost_ns   integer ns the problem costs: per step when step_ns is set,
--             else over the run
--   step_ns   integer ns of the (median steady) step, when steps are known
--   share     cost_ns / step_ns (or of the run), a fraction; with lost_ns,
--             lost_ns / the job's wall time (never above 1)
--   lost_ns   integer ns the whole job would save over the profiled run
--             without this cause (diagnose's ledger); lost_per_step_ns
--             that over the steps; once: a one-time cost (never per step)
--   where     {rank = label, host (the ranks' host, for a cause of a host),
--             report = 0-based, device, stream, pid, tid, from, to (ns on
--             the trace's aligned clock), nvtx = range text}
--   next      the next command to run (a string)
--   evidence  the name of the out:table that backs it
local report = require("nsl.report")

local M = {}

local severities = {info = 1, warning = 2, error = 3}

--- The rank of a severity (info 1, warning 2, error 3; anything else 0).
function M.severity_rank(s) return severities[s] or 0 end

local where_keys = {rank = "string", host = "string", report = "integer", device = "integer", stream = "integer", pid = "integer",
                    tid = "integer", from = "integer", to = "integer", nvtx = "string"}

local function kind(v)
  return math.type(v) or type(v)
end

--- findings.validate(f) -- raises when an optional field of the record has
-- the wrong type (a misuse by an analysis, not bad input).
function M.validate(f)
  local function want(name, v, ty)
    if v ~= nil and kind(v) ~= ty and not (ty == "number" and type(v) == "number") then
      error(string.format("finding field %s must be %s, not %s", name, ty == "integer" and "an integer" or
        "a " .. ty, kind(v)), 3)
    end
  end
  want("id", f.id, "string")
  want("cost_ns", f.cost_ns, "integer")
  want("step_ns", f.step_ns, "integer")
  want("share", f.share, "number")
  want("lost_ns", f.lost_ns, "integer")
  want("lost_per_step_ns", f.lost_per_step_ns, "integer")
  want("next", f.next, "string")
  want("evidence", f.evidence, "string")
  want("where", f.where, "table")
  for k, v in pairs(f.where or {}) do
    if not where_keys[k] then error(string.format("finding field where.%s is not one of the record's", k), 3) end
    want("where." .. k, v, where_keys[k])
  end
end

--- The lines of a finding as text (a few at most): "[severity id] message";
-- then what it costs, in ms/µs with the share of the step, and where; then
-- the next command.  at_time(ns) -> text, when given, words the time
-- window where.from/where.to (e.g. relative to the trace's start).
function M.lines(f, at_time)
  local lines = {string.format("[%s%s] %s", f.severity, f.id and (" " .. f.id) or "", f.message)}
  local parts = {}
  if f.lost_ns then   -- the job's cost (diagnose's ledger): over the run, per step, share of the job's wall time
    parts[#parts + 1] = string.format("%s %s%s (%.1f%% of the job's wall time)",
      f.once and "a one-time cost of" or "the job loses", report.duration(f.lost_ns),
      (f.lost_per_step_ns and not f.once) and string.format(", %s per step", report.duration(f.lost_per_step_ns)) or "",
      100 * (f.share or 0))
  elseif f.cost_ns then
    if f.step_ns then
      parts[#parts + 1] = string.format("costs %s per step (%.1f%% of the %s step)", report.duration(f.cost_ns),
        100 * (f.share or (f.step_ns > 0 and f.cost_ns / f.step_ns or 0)), report.duration(f.step_ns))
    else
      parts[#parts + 1] = string.format("costs %s%s", report.duration(f.cost_ns),
        f.share and string.format(" (%.1f%% of the run)", 100 * f.share) or "")
    end
  end
  local w = f.where
  if w then
    local where = {}
    for _, k in ipairs{"rank", "host", "device", "stream", "pid", "tid"} do
      if w[k] ~= nil then where[#where + 1] = k .. " " .. tostring(w[k]) end
    end
    if w.nvtx then where[#where + 1] = "NVTX '" .. w.nvtx .. "'" end
    if w.from and w.to and at_time then where[#where + 1] = string.format("from %s to %s", at_time(w.from), at_time(w.to)) end
    if #where > 0 then parts[#parts + 1] = "at " .. table.concat(where, ", ") end
  end
  if f.evidence then parts[#parts + 1] = "evidence: table " .. f.evidence end
  if #parts > 0 then lines[#lines + 1] = "  " .. table.concat(parts, "; ") end
  if f.next then lines[#lines + 1] = "  next: " .. f.next end
  return lines
end

--- A list of findings as text, one block of M.lines each.
function M.text(list, at_time)
  local out = {}
  for _, f in ipairs(list) do out[#out + 1] = table.concat(M.lines(f, at_time), "\n") end
  return table.concat(out, "\n")
end

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
