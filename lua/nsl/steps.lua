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

local M = {}

local function word_char(c) return c ~= "" and c:find("^[%w_]") ~= nil end

--- true when an NVTX text names an iteration called name (see above).
function M.matches(text, name)
  if text == name then return true end
  return #text > #name and text:sub(1, #name) == name and not word_char(text:sub(#name + 1, #name + 1))
end

--- The iteration ranges of trace named name: an nsl table sorted by report,
-- pid, start with columns report, pid, tid, start, stop, iter (1-based per
-- process).  nsl.fail when there is none.
function M.ranges(trace, name)
  local nv = trace.nvtx
  nv:load{"report", "pid", "tid", "start", "stop", "text", "kind"}
  local mask = nv.text:where(function(t) return M.matches(t, name) end) & nv.kind:ne("mark") & ~nv.stop:isnull()
  local r = nv:filter(mask):select{"report", "pid", "tid", "start", "stop"}:sort("report", "pid", "start")
  if #r == 0 then
    nsl.fail(string.format("no NVTX range named '%s' in %s (--arg iteration=NAME takes the text of a push/pop or " ..
      "start/end range, or the text before ', op_id')", name, table.concat(trace.reports.name:totable(), ", ")))
  end
  local rep, pid = r.report:totable(), r.pid:totable()
  local iter, k = {}, 0
  for i = 1, #r do
    if i == 1 or rep[i] ~= rep[i - 1] or pid[i] ~= pid[i - 1] then k = 0 end
    k = k + 1
    iter[i] = k
  end
  return r:with("iter", nsl.column(iter))
end

--- coalesce(a, b): a where it is not NULL, else b (columns of one type).
function M.coalesce(a, b)
  local n = #a
  local pick = nsl.range(n) + a:isnull():cast("i64") * n
  return nsl.concat(a, b):gather(pick)
end

--- The time each row of ops (a table with report, pid, corr, start) was
-- launched: the start of the CUDA API call with the same report, process
-- and correlation id (processes of one report reuse correlation ids), else
-- the row's own start.  An i64 column.
function M.launch_times(trace, ops)
  local api = trace.api
  if #api == 0 then return ops.start end
  api:load{"report", "pid", "corr", "start"}
  local keys = {"report", "pid", "corr"}
  local j = ops:select{"report", "pid", "corr", "start"}:join(api:select{"report", "pid", "corr", "start"}, keys,
                                                                {"start"}, "api_")
  return M.coalesce(j.api_start, ops.start)
end

--- The iteration (1-based, NULL for none) of every row of ops, a table with
-- report, pid and launch (the time a row was launched: launch_times), given
-- the ranges from M.ranges.  Rows are matched per process with a binary
-- search over its ranges (the latest that starts at or before the launch
-- and ends after it), all in C over whole columns.
function M.assign(ops, ranges)
  local n = #ops
  local rep_r, pid_r = ranges.report:totable(), ranges.pid:totable()
  local idx_parts, iter_parts = {}, {}
  local covered = nsl.rep(0, n):cast("i64"):eq(1)   -- all false
  local first = 1
  while first <= #ranges do
    local last = first
    while last < #ranges and rep_r[last + 1] == rep_r[first] and pid_r[last + 1] == pid_r[first] do last = last + 1 end
    local sel = ops.report:eq(rep_r[first]) & ops.pid:eq(pid_r[first])
    covered = covered | sel
    local rows = sel:indices()
    local t = ops.launch:gather(rows)
    local span = nsl.range(last - first + 1) + (first - 1)
    local starts, stops = ranges.start:gather(span), ranges.stop:gather(span)
    local iters = ranges.iter:gather(span)
    local j = starts:searchsorted(t, true) - 1             -- latest range starting at or before t (-1: none)
    local inside = stops:gather(j):gt(t):cast("i64")       -- and it is still open at t
    iter_parts[#iter_parts + 1] = iters:gather((j + 1) * inside - 1)
    idx_parts[#idx_parts + 1] = rows
    first = last + 1
  end
  local rest = (~covered):indices()
  idx_parts[#idx_parts + 1] = rest
  iter_parts[#iter_parts + 1] = ranges.iter:gather(nsl.rep(-1, #rest))
  local idx, iter = nsl.concat(table.unpack(idx_parts)), nsl.concat(table.unpack(iter_parts))
  return iter:gather(idx:argsort())
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
