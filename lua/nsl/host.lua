-- nsl.host -- what the CPU threads of a process were doing during a time
-- interval: the CUDA API call, OS runtime call and innermost NVTX range that
-- overlapped it most.  gaps attributes GPU idle gaps with it, straggler the
-- time a late rank's host took to launch its collective, the ledger the GPU
-- idle time while the host was not launching.
local nsl = require("nsl")
local nvtx_mod = require("nsl.nvtx")
local distributed = require("nsl.distributed")
local kept = require("nsl.kept")

local M = {}

-- The CPU-side tables, in the order M.sources lists them: key, label, the
-- trace table, its text column, the columns read, and for NVTX ranges
-- innermost (marks have no stop, or a zero-length one, so only ranges can
-- overlap an interval; a range counts for the time none of its children
-- covers, M.attribute: the innermost range the thread was in).
local SOURCES = {
  {key = "api", label = "CUDA API", tab = "api", text = "name",
   cols = {"report", "pid", "tid", "start", "stop", "name"}},
  {key = "osrt", label = "OS runtime", tab = "osrt", text = "name",
   cols = {"report", "pid", "tid", "start", "stop", "name"}},
  {key = "nvtx", label = "NVTX range", tab = "nvtx", text = "text", innermost = true,
   cols = {"report", "pid", "tid", "start", "stop", "text", "kind", "end_tid"}},
}

--- The keys of the CPU-side sources, in M.sources' order (api, osrt, nvtx).
M.keys = {}
for i, spec in ipairs(SOURCES) do M.keys[i] = spec.key end

--- Intervals d attributed (M.attribute) by a trace that lacks some of the
-- sources keys (M.keys) names, with those sources' columns as M.attribute
-- gives them where a source covers none of an interval: <key>_text and
-- <key>_tid NULL, <key>_ov 0 and <key>_cover 0.0 -- so that the attributions
-- of reports read apart (a distributed run's) line up.
function M.covering_nothing(d, keys)
  local n = #d
  for _, k in ipairs(keys) do
    if not d:coltype(k .. "_text") then
      d = d:with(k .. "_text", nsl.column{""}:gather(nsl.rep(-1, n)), k .. "_tid", nsl.column{0}:gather(nsl.rep(-1, n)),
                 k .. "_ov", nsl.rep(0, n), k .. "_cover", nsl.rep(0.0, n))
    end
  end
  return d
end

--- The CPU-side tables of trace that have rows, in M.sources' order: a
-- list of {key, label, tab (the trace table's name), text, cols,
-- innermost}, none read.
function M.present(trace)
  local list = {}
  for _, spec in ipairs(SOURCES) do
    if #trace[spec.tab] > 0 then list[#list + 1] = spec end
  end
  return list
end

-- Whether M.attribute may keep what it finds in trace (one report, a cache folder): then the host tables are
-- not loaded ahead (M.preload, M.prefetch, M.sources), as a later run reads two columns of the rows kept
local function keeps_rows(trace) return trace:nreports() == 1 and trace:keeps_derived(0) end

--- Loads the columns M.sources reads, for an analysis that attributes idle
-- time later in its run: loaded first, their load lends memory the later
-- work reuses, where loaded late they stand on top of it (1,024 per-rank
-- exports: diagnose peaked at 2.5 GB against 1.9).  Not where M.attribute
-- keeps its rows: a run that finds them kept reads the rows' text and
-- thread alone (at 1 GB 0.1 s of CPU and 220 MiB less).
function M.preload(trace)
  if #trace.kernels > 0 and not keeps_rows(trace) then M.sources(trace) end
end

-- Per trace (weak keys), the loads M.prefetch started and M.sources has not waited for yet: a list of jobs.
local pending = setmetatable({}, {__mode = "k"})

--- Starts loading the columns M.sources reads on a thread of its own
-- (nsl.background "load"), for an analysis that computes on what it has
-- loaded meanwhile: M.sources waits for them.  (A load of the trace's own
-- meanwhile waits for them too: a trace reads its sources on one thread at
-- a time.)  At 1 GB the 14 columns take 0.1-0.2 s, mostly their checks and
-- the ranges' and calls' names moved to the trace's string ids.
function M.prefetch(trace)
  if pending[trace] or #trace.kernels == 0 or keeps_rows(trace) then return end
  local jobs = {}
  for _, spec in ipairs(M.present(trace)) do jobs[#jobs + 1] = nsl.background("load", trace[spec.tab], spec.cols) end
  pending[trace] = jobs
end

--- The CPU-side tables an interval is attributed to: a list of {key, label,
-- t (the trace table), text (its text column), cols (the columns
-- M.attribute reads)}, only those with rows; loaded, but where M.attribute
-- may keep its rows (a trace of one report with a cache folder: it loads
-- what it reads).
function M.sources(trace)
  local jobs = pending[trace]
  if jobs then   -- (a failed load raises here, as the load itself would)
    pending[trace] = nil
    for _, job in ipairs(jobs) do job:wait() end
  end
  local list = {}
  for _, spec in ipairs(M.present(trace)) do
    local t = trace[spec.tab]
    if not keeps_rows(trace) then t:load(spec.cols) end
    list[#list + 1] = {key = spec.key, label = spec.label, t = t, text = spec.text, innermost = spec.innermost,
                       cols = spec.cols}
  end
  return list
end

-- The traces of the reports reps (0-based) of trace, each read from the
-- process that has it, when trace is a distributed run's whole trace; nil
-- elsewhere (or without reps).
local function report_traces(trace, reps)
  local first = reps and #reps > 0 and distributed.report_trace(trace, {reps[1]})
  if not first then return nil end
  local own = {first}
  for i = 2, #reps do own[i] = distributed.report_trace(trace, {reps[i]}) end
  return own
end

-- Columns cols (report among them) of table tab of the reports reps, read
-- from their traces own (report_traces), as one table numbering reports as
-- the whole trace does.
local function rows_of(own, reps, tab, cols)
  local parts = {}
  for i, rep in ipairs(reps) do
    local t = own[i][tab]
    if #t > 0 or i == 1 then   -- (the first report's, rows or not, gives the columns' types)
      t:load(cols)
      local sel = t:select(cols)
      parts[#parts + 1] = sel:with("report", nsl.rep(rep, #sel):cast("i32"))
    end
  end
  return #parts == 1 and parts[1] or nsl.concat_tables(parts)
end

--- M.sources(trace) for intervals of the reports reps (0-based) alone: in a
-- distributed run's whole trace, each table holds those reports' rows, each
-- read from the process that has it (where the trace's tables would be read
-- from every process); elsewhere M.sources(trace).
function M.sources_of(trace, reps)
  local own = report_traces(trace, reps)
  if not own then return M.sources(trace) end
  local list = {}
  for _, spec in ipairs(M.present(trace)) do
    list[#list + 1] = {key = spec.key, label = spec.label, t = rows_of(own, reps, spec.tab, spec.cols),
                       text = spec.text, innermost = spec.innermost}
  end
  return list
end

--- The thread that launched each row of d (a table with report, pid, corr):
-- the tid of the CUDA API call of its process with its correlation id (NULL
-- when none).  reps: the reports of d's rows, whose calls alone a
-- distributed run then reads, each from its process (as M.sources_of).
function M.launcher(trace, d, reps)
  local cols = {"report", "pid", "corr", "tid"}
  local own = report_traces(trace, reps)
  local api = own and rows_of(own, reps, "api", cols) or trace.api
  if not own then api:load(cols) end
  if #d * 8 <= #api then   -- a few rows: the calls with their ids first, so the join indexes those alone
    api = api:filter(api.corr:isin(d.corr:totable()))
  end
  return (d:join(api, {"report", "pid", "corr"}, {"tid"}, "launch_")).launch_tid
end

-- ---- M.attribute's rows kept in the column cache (a trace of one report) ----

local TAB = {}
for _, spec in ipairs(SOURCES) do TAB[spec.key] = spec.tab end

-- The intervals' columns the rows found depend on
local function in_columns(by_launcher)
  return by_launcher and {"report", "pid", "start", "stop", "launch_tid"} or {"report", "pid", "start", "stop"}
end

-- The kept table's columns: the intervals', then each source's rows and overlaps
local function memo_columns(sources, by_launcher)
  local cols = in_columns(by_launcher)
  for _, src in ipairs(sources) do cols[#cols + 1], cols[#cols + 2] = src.key .. "_row", src.key .. "_ov" end
  return cols
end

-- The name M.attribute's rows are kept under for keep (its caller's name), sources and by_launcher; nil where
-- none is kept: a trace of several reports, no cache folder, a source that is not the trace's own table
local function memo_name(keep, sources, by_launcher)
  local trace = keep.trace
  if trace:nreports() ~= 1 or not trace:keeps_derived(0) or #sources == 0 then return nil end
  local keys = {}
  for i, src in ipairs(sources) do
    if not TAB[src.key] or not rawequal(src.t, trace[TAB[src.key]]) then return nil end
    keys[i] = src.key
  end
  return kept.name("attribute.1", keep.name, keys, by_launcher and 1 or 0)
end

-- The rows and overlaps (a list by source: {rows, ov}) M.attribute kept under name for intervals d, nil where
-- none are kept for these intervals: another interval, or a row out of its table's range (a kept file is not
-- to be trusted)
local function kept_rows(trace, name, d, sources, by_launcher)
  local t = kept.table(trace, "kernels", name, memo_columns(sources, by_launcher))
  if not t or #t ~= #d then return nil end
  for _, c in ipairs(in_columns(by_launcher)) do
    if not kept.same(t[c], d[c]) then return nil end
  end
  local found = {}
  for i, src in ipairs(sources) do
    local rows = t[src.key .. "_row"]
    local lo, hi = nsl.extent(rows)
    if lo and (lo < -1 or hi >= #src.t) then return nil end
    found[i] = {rows, t[src.key .. "_ov"]}
  end
  return found
end

-- Keeps M.attribute's rows and overlaps got (by source) for intervals d under name
local function keep_rows(trace, name, d, sources, by_launcher, got)
  local list = {}
  for _, c in ipairs(in_columns(by_launcher)) do list[#list + 1] = {c, d[c]} end
  for i, src in ipairs(sources) do
    list[#list + 1] = {src.key .. "_row", nsl.coalesce(got[i][1], -1)}
    list[#list + 1] = {src.key .. "_ov", got[i][2]}
  end
  local t = nsl.table(list)
  local cols = memo_columns(sources, by_launcher)
  if kept.keepable(t, cols) then kept.keep_table(trace, "kernels", name, t, cols) end
end

--- For every interval of d (report, pid, start, stop, dur; and launch_tid
-- when by_launcher), the row of each source (M.sources) on the same (report,
-- pid) -- or, by_launcher, the same (report, pid, launching thread) -- that
-- overlaps it most: adds <key>_text, <key>_tid, <key>_ov (ns of the interval
-- it covers) and <key>_cover (the same in % of the interval).  NVTX ranges
-- nest: a range covers the time none of its children does
-- (nsl.innermost_join), so a thread that spent a gap in "data_loader" inside
-- "train_step" names "data_loader", not the enclosing step.
--
-- keep (optional): {trace = the trace whose own tables sources are
-- (M.sources), name = the caller's name for this attribution}: in a trace
-- of one report the rows found are kept in the column cache with the
-- intervals they were found for, and a later call whose intervals are the
-- same (report, pid, start, stop, launch_tid, value for value) reads them
-- instead of sweeping the host tables again.
function M.attribute(d, sources, by_launcher, keep)
  local memo = keep and memo_name(keep, sources, by_launcher)
  local found = memo and kept_rows(keep.trace, memo, d, sources, by_launcher)
  local function keys(t, tid) return by_launcher and {t.report, t.pid, t[tid]} or {t.report, t.pid} end
  local dk = keys(d, "launch_tid")
  local got = {}
  for i, src in ipairs(sources) do
    local t = src.t
    if src.cols then t:load(found and {src.text, "tid"} or src.cols) end   -- (a trace table: M.sources')
    local rows, ov   -- (rows of t: NULL or -1 where none)
    if found then
      rows, ov = found[i][1], found[i][2]
    elseif src.innermost then
      -- the ranges that overlap an interval of d on its keys (with every range enclosing one: they overlap it
      -- too), each counting for its time less its children's
      local near = nsl.overlap_any(t.start, t.stop, d.start, d.stop, keys(t, "tid"), dk):indices()
      local function near_of(c) return c:gather(near) end
      local report, pid, tid = near_of(t.report), near_of(t.pid), near_of(t.tid)
      rows, ov = nsl.innermost_join(d.start, d.stop, near_of(t.start), near_of(t.stop), dk,
                                    by_launcher and {report, pid, tid} or {report, pid}, {report, pid, tid},
                                    nvtx_mod.range_mask(t, near))
      rows = near:gather(rows)
    else
      rows, ov = nsl.overlap_join(d.start, d.stop, t.start, t.stop, dk, keys(t, "tid"))
    end
    got[i] = {rows, ov}
    d = d:with(src.key .. "_text", t[src.text]:gather(rows), src.key .. "_tid", t.tid:gather(rows),
               src.key .. "_ov", ov, src.key .. "_cover", ov * 100.0 / d.dur)
  end
  if memo and not found then keep_rows(keep.trace, memo, d, sources, by_launcher, got) end
  return d
end

--- M.attribute of several tables of intervals (a list) in one sweep over
-- the sources, each interval's attribution being its own: a list of each
-- table with the columns M.attribute adds.  The tables need the columns it
-- reads alone (report, pid, start, stop, dur; launch_tid by_launcher); their
-- other columns stay as they are.  keep: as M.attribute's.
function M.attribute_together(list, sources, by_launcher, keep)
  local cols = {"report", "pid", "start", "stop", "dur"}
  if by_launcher then cols[#cols + 1] = "launch_tid" end
  local parts = {}
  for i, d in ipairs(list) do parts[i] = d:select(cols) end
  local a = M.attribute(nsl.concat_tables(parts), sources, by_launcher, keep)
  local read = {}
  for _, c in ipairs(cols) do read[c] = true end
  local out, at = {}, 0
  for i, d in ipairs(list) do
    local mine = a:take(nsl.range(#d) + at)
    at = at + #d
    for _, c in ipairs(a:columns()) do   -- (the columns M.attribute added, in its order)
      if not read[c] then d = d:with(c, mine[c]) end
    end
    out[i] = d
  end
  return out
end

return M
