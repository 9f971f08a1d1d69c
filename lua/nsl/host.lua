-- nsl.host -- what the CPU threads of a process were doing during a time
-- interval: the CUDA API call, OS runtime call and NVTX range that overlapped
-- it most.  gaps attributes GPU idle gaps with it, straggler the time a late
-- rank's host took to launch its collective.
local nsl = require("nsl")

local M = {}

--- The CPU-side tables an interval is attributed to: a list of {key, label,
-- t (the trace table), text (its text column)}, only those with rows.
function M.sources(trace)
  local list = {}
  local api, osrt, nvtx = trace.api, trace.osrt, trace.nvtx
  if #api > 0 then
    api:load{"report", "pid", "tid", "start", "stop", "name"}
    list[#list + 1] = {key = "api", label = "CUDA API", t = api, text = "name"}
  end
  if #osrt > 0 then
    osrt:load{"report", "pid", "tid", "start", "stop", "name"}
    list[#list + 1] = {key = "osrt", label = "OS runtime", t = osrt, text = "name"}
  end
  if #nvtx > 0 then
    -- marks have no stop (or a zero-length one), so only ranges can overlap an interval
    nvtx:load{"report", "pid", "tid", "start", "stop", "text"}
    list[#list + 1] = {key = "nvtx", label = "NVTX range", t = nvtx, text = "text"}
  end
  return list
end

--- The thread that launched each row of d (a table with report, pid, corr):
-- the tid of the CUDA API call of its process with its correlation id (NULL
-- when none).
function M.launcher(trace, d)
  local api = trace.api
  api:load{"report", "pid", "corr", "tid"}
  if #d * 8 <= #api then   -- a few rows: the calls with their ids first, so the join indexes those alone
    api = api:filter(api.corr:isin(d.corr:totable()))
  end
  return (d:join(api, {"report", "pid", "corr"}, {"tid"}, "launch_")).launch_tid
end

--- For every interval of d (report, pid, start, stop, dur; and launch_tid
-- when by_launcher), the row of each source (M.sources) on the same (report,
-- pid) -- or, by_launcher, the same (report, pid, launching thread) -- that
-- overlaps it most: adds <key>_text, <key>_tid, <key>_ov (ns of the interval
-- it covers) and <key>_cover (the same in % of the interval).
function M.attribute(d, sources, by_launcher)
  for _, src in ipairs(sources) do
    local t = src.t
    local dk, tk = {d.report, d.pid}, {t.report, t.pid}
    if by_launcher then dk[3], tk[3] = d.launch_tid, t.tid end
    local rows, ov = nsl.overlap_join(d.start, d.stop, t.start, t.stop, dk, tk)
    d = d:with(src.key .. "_text", t[src.text]:gather(rows), src.key .. "_tid", t.tid:gather(rows),
               src.key .. "_ov", ov, src.key .. "_cover", ov * 100.0 / d.dur)
  end
  return d
end

return M
