-- nsl.call_tables -- what diagnose's checks of CUDA calls that block read,
-- made where the calls are: over the whole trace in one process, over each
-- process's own reports in a distributed run, whose processes send these
-- tables (one row per process and a bounded list of calls per check, one
-- row per process and step) instead of the calls.
--
-- The checks of calls that block (M.checks: memcpy.pageable_async,
-- memcpy.sync, memset.sync, api.sync) each read, of the calls they match:
--   agg  per (report, pid), in that order: n, total (the calls' blocked
--        time), longest, and the longest call's api_tid and api_start (the
--        finding's where; device and stream of its copy or memset)
--   top  the M.EVIDENCE longest calls (api_dur descending, then report,
--        api_start; the sort is stable), the evidence table's rows: a
--        process's rows are of its own reports, so the longest of the whole
--        trace are among the longest of each process (M.merge)
-- The calls in all are agg's n summed.  host.sync_per_step reads, of the
-- calls that block the host (nsl.host_sync.calls) inside the steps
-- (M.step_sums): per (report, pid, iter) n and t (their blocked time), and
-- per (report, pid, name) t -- sums per step, whatever the number of calls.
local nsl = require("nsl")
local host_sync = require("nsl.host_sync")
local steps = require("nsl.steps")

local M = {}

--- The calls an evidence table of calls lists at most (the longest); its
-- title says how many there were when there were more.
M.EVIDENCE = 1000

--- Whether a CUDA call's name (lower case) is a synchronous memcpy or
-- memset (the memcpy.sync and memset.sync checks).
function M.sync_memcpy_name(s) return s:find("^cudamemcpy") ~= nil and not s:find("async") end
function M.sync_memset_name(s) return s:find("^cudamemset") ~= nil and not s:find("async") end

--- The checks of calls that block, by key: the memory operations whose
-- launching calls they read (memory: memcpy or memset, ops: which of them),
-- or the calls alone (api.sync), and the calls' test (name, lower case).
M.checks = {
  {key = "pageable", id = "memcpy.pageable_async", memory = "memcpy",
   ops = function(t) return t:filter(t.src_kind:eq("pageable") | t.dst_kind:eq("pageable")) end,
   name = function(s) return s:find("^cudamemcpy.*async") ~= nil end,
   extra = {"kind", "bytes", "src_kind", "dst_kind"}},
  {key = "memcpy_sync", id = "memcpy.sync", memory = "memcpy", name = M.sync_memcpy_name, extra = {"kind", "bytes"}},
  {key = "memset_sync", id = "memset.sync", memory = "memset",
   ops = function(t) return t:filter(t.kind:isin{"pinned", "managed"}) end,
   name = M.sync_memset_name, extra = {"kind", "bytes"}},
  {key = "api_sync", id = "api.sync",
   name = function(s) return s:find("^cudadevicesynchronize") ~= nil or s:find("^cudastreamsynchronize") ~= nil end},
}

-- The rows of one check c: its memory operations launched by a call that
-- passes its test, with api_tid, api_start, api_dur, api_name (the calls
-- whose name passes first, one test per distinct name, so the join indexes
-- those alone: a process's correlation ids are its calls' own), or its calls.
local function rows_of(c, api, mem)
  local calls = api:filter(api.name:where(function(s) return c.name(s:lower()) end))
  if not c.memory then
    return nsl.table{{"report", calls.report}, {"pid", calls.pid}, {"api_tid", calls.tid},
                     {"api_start", calls.start}, {"api_dur", calls.dur}, {"api_name", calls.name}}
  end
  local t = mem[c.memory]
  if c.ops then t = c.ops(t) end
  local j = t:join(calls, {"report", "pid", "corr"}, {"tid", "start", "dur", "name"}, "api_")
  j = j:filter(~j.api_name:isnull())
  local cols = {"report", "pid", "api_tid", "device", "stream", "api_name", "api_start", "api_dur", "start", "stop"}
  for _, x in ipairs(c.extra) do cols[#cols + 1] = x end
  return j:select(cols)
end

-- The longest n rows of rows (the evidence's order).
local function longest(rows, n) return rows:sort("-api_dur", "report", "api_start"):head(n) end

-- A check's tables of its rows: agg and top.
local function reduce(rows)
  local byp = rows:sort("report", "pid", "-api_dur", "api_start")
  local g = byp:group_by("report", "pid")
  local a = g:agg{"n=count", "total=sum(api_dur)", "longest=max(api_dur)"}
  local firsts = byp:filter(nsl.cumcount(g:ids()):eq(0))   -- row i: group i's longest call
  local cols = {{"report", a.report}, {"pid", a.pid}, {"n", a.n}, {"total", a.total}, {"longest", a.longest},
                {"api_tid", firsts.api_tid}, {"api_start", firsts.api_start}}
  if rows:coltype("device") then
    cols[#cols + 1] = {"device", firsts.device}
    cols[#cols + 1] = {"stream", firsts.stream}
  end
  return {agg = nsl.table(cols), top = longest(rows, M.EVIDENCE)}
end

--- The tables of the checks of calls that block, by key (M.checks): {agg,
-- top}.  api: the CUDA calls one per correlation id of a process
-- (nsl.host_sync.api_calls' columns); mem: {memcpy = , memset = } with the
-- columns the checks read (report, pid, device, stream, corr, start, stop,
-- bytes, kind; memcpy's src_kind, dst_kind).
function M.make(api, mem)
  local T = {}
  for _, c in ipairs(M.checks) do T[c.key] = reduce(rows_of(c, api, mem)) end
  return T
end

--- M.make's tables for the wire (names ct_KEY_agg, ct_KEY_top).
function M.wire(T)
  local w = {}
  for _, c in ipairs(M.checks) do
    w["ct_" .. c.key .. "_agg"], w["ct_" .. c.key .. "_top"] = T[c.key].agg, T[c.key].top
  end
  return w
end

--- The tables as the checks read them from a distributed run's gathered
-- parts (M.wire's, the processes' in report order): agg as gathered (each
-- process's in (report, pid) order), top the longest of all; nil when the
-- parts hold none.
function M.merge(parts)
  if not parts.ct_api_sync_agg then return nil end
  local T = {}
  for _, c in ipairs(M.checks) do
    T[c.key] = {agg = parts["ct_" .. c.key .. "_agg"], top = longest(parts["ct_" .. c.key .. "_top"], M.EVIDENCE)}
  end
  return T
end

--- host.sync_per_step's sums (M's header) of the calls that block the host
-- (nsl.host_sync.calls(trace, api, memcpy)) in the steps' ranges
-- (nsl.steps.assign; per_report: ranges per report, pid 0; nil: no steps,
-- no sums): {per = report, pid, iter, n, t; names = report, pid, name, t},
-- groups in order of first appearance.
function M.step_sums(trace, api, memcpy, ranges, per_report)
  local syncs = host_sync.calls(trace, api, memcpy)
  local pid = syncs.pid:cast("i64")
  local rep = syncs.report:cast("i64")
  local iter
  if ranges and #syncs > 0 then
    iter = steps.assign(nsl.table{{"report", rep}, {"pid", per_report and nsl.rep(0, #syncs) or pid},
                                  {"launch", syncs.start}}, ranges)
  else
    iter = nsl.column{0}:gather(nsl.rep(-1, #syncs))   -- NULL: in no step
  end
  local inside = nsl.table{{"report", rep}, {"pid", pid}, {"iter", iter:cast("i64")}, {"name", syncs.name},
                           {"dur", syncs.dur}}
  inside = inside:filter(~inside.iter:isnull())
  return {per = inside:group_by("report", "pid", "iter"):agg{"n=count", "t=sum(dur)"},
          names = inside:group_by("report", "pid", "name"):agg{"t=sum(dur)"}}
end

return M
