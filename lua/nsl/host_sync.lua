-- nsl.host_sync -- the CUDA API calls that block the host thread: explicit
-- synchronisation (device, stream, event), synchronous memory copies, and
-- Async copies that pageable memory makes synchronous.  Shared by the launch
-- analysis (host_sync table) and diagnose (host synchronisation per step).
local nsl = require("nsl")
local kept = require("nsl.kept")

local M = {}

-- Host synchronisation calls by their name without a _vNNNN suffix.
local sync_calls = {
  cudaDeviceSynchronize = "device sync", cuCtxSynchronize = "device sync",
  cudaStreamSynchronize = "stream sync", cuStreamSynchronize = "stream sync",
  cudaEventSynchronize = "event sync", cuEventSynchronize = "event sync",
  cudaStreamWaitEvent = "stream wait event", cuStreamWaitEvent = "stream wait event",
}

--- The sync category of a CUDA API call name, or nil: the explicit syncs
-- above, and memory copies that are not Async (cudaMemcpy, cudaMemcpy2D,
-- cuMemcpyDtoH, ...), which return only once the copy is done.
function M.category(name)
  local base = name:gsub("_v%d+$", "")
  if sync_calls[base] then return sync_calls[base] end
  if (base:match("^cudaMemcpy") or base:match("^cuMemcpy")) and not base:find("Async", 1, true) then
    return "synchronous memcpy"
  end
  return nil
end

-- The columns of the CUDA API calls M.api_calls reads.
M.columns = {"report", "pid", "tid", "corr", "start", "stop", "dur", "name"}

--- The calls of api (a table or the trace's api table, with M.columns),
-- one per correlation id of a process: some exports record a call twice,
-- nested, under one id (e.g. 2022 exports with eventClass 67 beside 0); the
-- earliest-starting (outer) record stays.  Correlation ids are numbered per
-- process.  Returns api itself when no call is recorded twice (no copy),
-- else the calls kept, in start order.
function M.unique_calls(api)
  -- every id once (the usual case): nothing to drop, whatever the order -- found without sorting, by the
  -- number of distinct ids when no key is NULL, else by a join (where NULL keys match nothing)
  local raw = api:select{"report", "pid", "corr"}
  if raw.pid:isnull():count() == 0 and raw.corr:isnull():count() == 0 then
    if raw:count_distinct("report", "pid", "corr") == #api then return api end
  else
    local _, own = raw:join(raw, {"report", "pid", "corr"}, {})
    if (own:eq(nsl.range(#raw)) | raw.corr:isnull()):count() == #api then return api end
  end
  -- the first of each id in start order, found on the key columns alone
  local order = api.start:argsort()
  local keys = nsl.table{{"report", api.report:gather(order)}, {"pid", api.pid:gather(order)},
                         {"corr", api.corr:gather(order)}}
  local _, first = keys:join(keys, {"report", "pid", "corr"}, {})
  local keep = first:eq(nsl.range(#keys)) | keys.corr:isnull()   -- (not all: the same test as above)
  return api:take(order:gather(keep:indices()))
end

-- The name each report keeps its flag under (nsl.kept): whether no call of it is recorded twice.
local DISTINCT = "api_ids_distinct.1"

--- The CUDA API calls of trace, one per correlation id of a process
-- (M.unique_calls).  Columns: M.columns; the trace's own api table when no
-- call is recorded twice.  That every report's ids are distinct (the usual
-- case) is kept in the column cache per report (nsl.kept): read back, no
-- id is counted (a sort of every call: 3.2 M at 1 GB).
function M.api_calls(trace)
  local api = trace.api
  api:load(M.columns)
  local flags = kept.per_report(trace, "api", DISTINCT, "bool")
  if flags then
    local all = true
    for _, f in ipairs(flags) do all = all and f[1] end
    if all then return api end
  end
  local calls = M.unique_calls(api)
  if calls == api and not flags then   -- (then so are each report's; where some report's are not, none is kept)
    for r = 0, trace:nreports() - 1 do trace:keep_derived(r, "api", DISTINCT, kept.flag(true)) end
  end
  return calls
end

-- The name each report keeps the order of its calls by thread under (nsl.kept): its own rows by pid, tid and
-- start, equal ones in row order.
local BY_THREAD = "api_by_thread.1"

--- The rows of calls (M.api_calls') by report, pid, tid and start, equal
-- ones in row order: calls:order's.  Where calls are the trace's own api
-- table, that order is kept in the column cache per report (nsl.kept):
-- read back, the calls are not sorted (3.2 M at 1 GB).  A kept order is
-- read only as rows within its report's calls, none NULL.
function M.by_thread(trace, calls)
  if calls ~= trace.api then return calls:order("report", "pid", "tid", "start") end
  local parts = kept.parts(trace, "api", BY_THREAD, "i64")
  local first, rows = kept.first_rows(trace, "api")
  if parts then
    for r, c in ipairs(parts) do
      parts[r] = kept.trace_rows(c, rows[r], first[r], true)
      if not parts[r] then
        parts = nil
        break
      end
    end
    if parts then return #parts == 1 and parts[1] or nsl.concat(table.unpack(parts)) end
  end
  local ord = calls:order("report", "pid", "tid", "start")
  kept.keep(trace, "api", BY_THREAD, ord, function(c, r) return kept.own_rows(c, first[r]) end)
  return ord
end

--- The CUDA API calls of api (M.api_calls) that block the host: report, pid,
-- tid, start, name, dur, category.  mc: the memcpy rows to read (report,
-- pid, corr, src_kind, dst_kind), at least the pageable ones (nil: the
-- trace's).
function M.calls(trace, api, mc)
  local cat = api.name:map(M.category)
  local explicit = api:with("category", cat):filter(~cat:isnull())
  -- Async copies whose host side is pageable memory: the call returns only
  -- once the data is staged, so it blocks like a synchronous copy
  if not mc then
    mc = trace.memcpy
    mc:load{"report", "pid", "corr", "src_kind", "dst_kind"}
  end
  local pageable = mc:filter(mc.src_kind:eq("pageable") | mc.dst_kind:eq("pageable"))
  -- (the Async calls alone are joined: a few of the calls, most being launches)
  local async = api.name:contains("Async"):indices()
  local cand = nsl.table{{"report", api.report:gather(async)}, {"pid", api.pid:gather(async)},
                         {"corr", api.corr:gather(async)}}
  local _, idx = cand:join(pageable, {"report", "pid", "corr"}, {})
  local implicit = api:take(async:gather(idx:ge(0):indices()))
  local cols = {}
  for _, c in ipairs{"report", "pid", "tid", "start", "name", "dur"} do
    cols[#cols + 1] = {c, nsl.concat(explicit[c], implicit[c])}
  end
  cols[#cols + 1] = {"category", nsl.concat(explicit.category, nsl.rep("pageable memcpy (Async call)", #implicit))}
  return nsl.table(cols)
end

return M
