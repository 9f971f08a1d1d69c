-- nsl.steps -- training/inference iterations ("steps") marked by an NVTX
-- range, and the GPU work that belongs to each.
--
-- An iteration is a range (push/pop or start/end) whose text is NAME, or
-- starts with NAME followed by a character that is not a letter, digit or
-- '_' (PyTorch appends ", op_id = N" / ", seq = N" to its range names).  The
-- k-th such range of a process (by start time) is iteration k of that
-- process, so iteration k of every rank lines up.
--
-- GPU work (kernels, memory operations) belongs to iteration k of its
-- process when the CUDA API call that launched it (same report, process and
-- correlation id) started inside the range -- on any thread of the process,
-- since frameworks launch backward passes from worker threads.  Work with
-- no launch call in the trace is placed by its own GPU start time.  An
-- iteration's GPU window on a device is the NVTX range projected onto that
-- device: from the start of its first to the end of its last operation
-- there (nsys's nvtx_gpu_proj_trace projects the same way, per thread).
local nsl = require("nsl")
local lanes = require("nsl.lanes")

local M = {}

local function word_char(c) return c ~= "" and c:find("^[%w_]") ~= nil end

--- true when an NVTX text names an iteration called name (see above).
function M.matches(text, name)
  if text == name then return true end
  return #text > #name and text:sub(1, #name) == name and not word_char(text:sub(#name + 1, #name + 1))
end

-- The NVTX ranges of trace named name (M.matches; marks and other events
-- have no stop): a mask over trace.nvtx, its columns loaded.
local function named(trace, name)
  local nv = trace.nvtx
  nv:load{"report", "pid", "start", "stop", "text"}
  return nv.text:where(function(t) return M.matches(t, name) end) & ~nv.stop:isnull()
end

--- Whether trace has an NVTX range named name (M.ranges would find one).
function M.has_range(trace, name) return named(trace, name):count() > 0 end

--- Fails as M.ranges does when trace has no NVTX range named name.
function M.no_range(trace, name)
  nsl.fail(string.format("no NVTX range named '%s' in %s (--arg iteration=NAME takes the text of a push/pop or " ..
    "start/end range, or the text before ', op_id')", name, table.concat(trace.reports.name:totable(), ", ")))
end

--- The iteration ranges of trace named name: an nsl table sorted by report,
-- pid, start with columns report, pid, start, stop, iter (1-based per
-- process).  nsl.fail when there is none.
function M.ranges(trace, name)
  local nv = trace.nvtx
  local r = nv:filter(named(trace, name)):select{"report", "pid", "start", "stop"}:sort("report", "pid", "start")
  if #r == 0 then M.no_range(trace, name) end
  -- iteration k of a process: its row number minus the process's first row, plus one
  r = r:with("pos", nsl.range(#r))
  local g = r:group_by("report", "pid")
  local first = g:agg{"first=min(pos)"}.first
  return r:with("iter", r.pos - first:gather(g:ids()) + 1):select{"report", "pid", "start", "stop", "iter"}
end

--- The time each row of ops (a table with report, pid, corr, start) was
-- launched: the start of the CUDA API call with the same report, process
-- and correlation id (processes of one report reuse correlation ids), else
-- the row's own start.  An i64 column.  api_rows: those calls' rows in
-- trace.api when the caller has them (nsl.gpu_ops.api_rows, the api column
-- of nsl.gpu_ops.table), so nothing is joined again.
function M.launch_times(trace, ops, api_rows)
  local api = trace.api
  if #api == 0 then return ops.start end
  if api_rows then
    api:load{"start"}
    return nsl.coalesce(api.start:gather(api_rows), ops.start)
  end
  api:load{"report", "pid", "corr", "start"}
  local keys = {"report", "pid", "corr"}
  local j = ops:select{"report", "pid", "corr", "start"}:join(api:select{"report", "pid", "corr", "start"}, keys,
                                                                {"start"}, "api_")
  return nsl.coalesce(j.api_start, ops.start)
end

--- The iteration (1-based, NULL for none) of every row of ops, a table with
-- report, pid and launch (the time a row was launched: launch_times), given
-- the ranges from M.ranges: the latest range of the row's process that
-- starts at or before the launch and ends after it.  One binary search over
-- all processes' ranges laid end to end (nsl.lanes), in C.
function M.assign(ops, ranges)
  local n, nr = #ops, #ranges
  local keys = nsl.table{{"report", nsl.concat(ops.report, ranges.report)}, {"pid", nsl.concat(ops.pid, ranges.pid)}}
  local g = keys:group_by("report", "pid")
  local ids = g:ids()
  local ogid, rgid = ids:gather(nsl.range(n)), ids:gather(nsl.range(nr) + n)
  local launch = ops.launch
  local lo, hi = lanes.bounds(launch, launch, ranges.start, ranges.stop)
  if lo == nil then return ranges.iter:gather(nsl.rep(-1, n)) end
  local plan = lanes.plan(#g, lo, hi)
  local parts = {}
  for _, b in ipairs(plan.batches) do
    local rows = lanes.rows(b, ogid):indices()
    local t = lanes.shift(plan, b, ops.launch:gather(rows), ogid:gather(rows))
    local rr = lanes.rows(b, rgid):indices()
    local rs = lanes.shift(plan, b, ranges.start:gather(rr), rgid:gather(rr))
    local order = rs:argsort()
    local starts = rs:gather(order)
    local stops = lanes.shift(plan, b, ranges.stop:gather(rr), rgid:gather(rr)):gather(order)
    local iters = ranges.iter:gather(rr):gather(order)
    local j = starts:searchsorted(t, "right") - 1          -- latest range starting at or before t (-1: none)
    local inside = stops:gather(j):gt(t)                   -- and still open at t (lanes never overlap)
    parts[#parts + 1] = {rows = rows, values = iters:gather(nsl.where(inside, j, -1))}
  end
  return lanes.assemble(parts)
end

--- Everything above in one call: ranges named name, and the iteration of
-- every row of ops (a table with report, pid, corr, start).  Returns
-- iter (i64 column, NULL outside iterations), ranges.
function M.attribute(trace, ops, name)
  local ranges = M.ranges(trace, name)
  local launch = M.launch_times(trace, ops)
  local t = nsl.table{{"report", ops.report}, {"pid", ops.pid}, {"launch", launch}}
  return M.assign(t, ranges), ranges
end

return M
