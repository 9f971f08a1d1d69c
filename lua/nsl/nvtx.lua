-- nsl.nvtx -- NVTX ranges: their names, their summary, their projection
-- onto the GPU and the tree of their name paths; shared by the nvtx,
-- iterations and flame graph analyses.  The heavy parts are C kernels
-- (nsl.nvtx_project, nsl.tree_paths, group-by); Lua loops only over
-- distinct names and tree nodes.
--
-- Semantics (nsys's nvtx_sum, nvtx_gpu_proj_trace, nvtx_gpu_proj_sum):
--  * A range's name is "domain:text" in a named domain and its text in the
--    default (or an unnamed) domain, as nvtx_sum prints it.  nsys's
--    projection reports print ":text" for the default domain; nsl uses the
--    nvtx_sum spelling everywhere.
--  * Ranges are push/pop and start/end ranges; marks are not ranges.  A
--    range that never ended (NULL stop) has no duration and is left out of
--    the summaries.
--  * A GPU op (kernel, memcpy, memset) belongs to every range that encloses,
--    on the same thread (report, pid, tid), the CUDA API call that launched
--    it (joined on report, pid, correlation id): range start <= call start
--    and call stop <= range stop.  Only ranges that start and end on the
--    same thread take part.  A range's projection spans its first op's
--    start to its last op's stop.  "GPU ops" counts distinct launching calls
--    as nsys's NumGPUOps does (a graph launch is one); `ops` counts the
--    operations themselves.
--  * The parent of a range is the shortest range that encloses it on its
--    thread (nsys's "tightest"); depth 0 is a top-level range.
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local kept = require("nsl.kept")

local M = {}

M.style_names = {push_pop = "PushPop", start_end = "StartEnd"}

--- The default rewriting of names for trees and step detection: PyTorch's
-- per-call suffixes (", seq = N", ", op_id = N") are dropped so that all
-- calls of one operator are one node.  nvtx_sum groups the names as they are.
M.pytorch_suffixes = {", seq = %d+", ", op_id = %d+"}

--- s with every match of the patterns in strip (array of Lua patterns) removed.
function M.normalize(s, strip)
  for _, pat in ipairs(strip or {}) do s = s:gsub(pat, "") end
  return s
end

--- Range names of table t (trace.nvtx or a selection of it): the name
-- column ("domain:text" for a range with a domain, else its text; "" for a
-- range with neither where some range has a domain) and, when opts.strip
-- (array of patterns) is given, a second column with those removed ("" for
-- a range without text).  The ranges with a domain, most often a few, are
-- grouped by (domain, text); Lua sees each distinct pair once, and each
-- distinct name once for the labels.  opts.rows (0-based rows of t): the
-- names of those rows alone, as they are among all of t's.
function M.names(t, opts)
  opts = opts or {}
  t:load{"text", "domain"}
  local dm = #t > 0 and ~t.domain:isnull() or nil
  local nd = dm and dm:count() or 0
  local here = nd   -- (ranges with a domain among those named)
  if opts.rows then   -- (whether any range has a domain is every range's)
    t = t:select{"text", "domain"}:take(opts.rows)
    dm = #t > 0 and ~t.domain:isnull() or nil
    here = dm and dm:count() or 0
  end
  if nd == 0 and not opts.strip then return t.text end
  local name = t.text
  if nd > 0 and here == 0 then name = nsl.coalesce(t.text, "")
  elseif nd > 0 then
    local sub = t:select{"domain", "text"}:take(dm:indices())
    local g <close> = sub:group_by("domain", "text")
    local keys = g:keys()
    local names = {}
    local kd, kt = keys.domain, keys.text
    for i = 1, #keys do names[i] = kd[i] .. ":" .. (kt[i] or "") end
    local ids <close> = g:ids()
    -- each row with a domain: its place among them (the rows of sub)
    local at = nsl.where(dm, nsl.where(dm, 1, 0):cumsum() - 1, -1)
    name = nsl.where(dm, nsl.column(names):gather(ids):gather(at), nsl.coalesce(t.text, ""))
  end
  if not opts.strip then return name end
  local strip = opts.strip   -- (with a domain somewhere, no name is NULL already)
  return name, (nd > 0 and name or nsl.coalesce(name, "")):map(function(s) return M.normalize(s, strip) end)
end

--- Parent of every range of nv (0-based row, -1 for none) and its depth: the
-- shortest range enclosing it on the same thread (report, pid, tid), among the
-- rows in mask (all when nil).  nv's rows are ranges with a start and a stop.
-- (nsl.nvtx_project with no calls: parents and depths only.)
function M.parents(nv, mask)
  local e64, e32 = nsl.column{}:cast("i64"), nsl.column{}:cast("i32")
  local r = nsl.nvtx_project{
    range_keys = {nv.report, nv.pid, nv.tid}, range_start = nv.start, range_stop = nv.stop, range_mask = mask,
    api_keys = {e32, e32, e32}, api_start = e64, api_stop = e64, op_api = e64, op_start = e64, op_stop = e64,
    parents_only = true}
  return r.parent, r.depth
end

--- The top-level ranges of nv among the rows in mask (all when nil): a bool
-- column, true where M.parents would give depth 0 (false for a range that
-- takes no part), without making the parents (nsl.nvtx_top: one pass when
-- each thread's ranges come in start order, as exports store them); and
-- whether they did (each thread's ranges in mask by start, then longest
-- first).
function M.tops(nv, mask)
  return nsl.nvtx_top{range_keys = {nv.report, nv.pid, nv.tid}, range_start = nv.start, range_stop = nv.stop,
                      range_mask = mask}
end

--- The ranges that take part in the projection: push/pop and start/end
-- ranges that end on the thread where they started.  A bool column, one
-- per row of nv, or per row of rows (0-based rows of nv) when given.
function M.range_mask(nv, rows)
  nv:load{"kind", "tid", "end_tid"}
  local kind, tid, end_tid = nv.kind, nv.tid, nv.end_tid
  if rows then kind, tid, end_tid = kind:gather(rows), tid:gather(rows), end_tid:gather(rows) end
  return kind:isin{"push_pop", "start_end"} & (end_tid:isnull() | end_tid:eq(tid))
end

--- The trace.nvtx columns M.project reads (loading them in one call is one
-- scan of the export); it adds dur, which is made from start and stop.
M.range_columns = {"report", "pid", "tid", "start", "stop", "kind", "end_tid", "text", "domain"}

--- The GPU operations M.project sweeps (nsl.gpu_ops, in its row order):
-- report, start, stop, and api (0-based row of the launching call in
-- trace.api, -1 for none).  No duration: the few readers of it take stop -
-- start (at 1 GB a loaded one is three column loads and a concatenation).
function M.gpu_ops(trace)
  return gpu_ops.table(trace, {columns = {"report", "start", "stop"}, api = true})
end

-- The projection's columns (nsl.nvtx_project) the column cache keeps per report (nsl.kept), under
-- PROJ_KEPT .. name: of each range, and of each GPU operation (op_range, kept with the kernels, memcpy and
-- memset tables, whose rows M.gpu_ops puts one after the other).  Rows of the ranges are kept as the report's
-- own (from 0), projected starts on its own clock (less the trace's time offset of the report).  Another way
-- of projecting is another name.
local PROJ_KEPT = "nvtx_proj.1."
local PROJ_COLS = {{"parent", "i64"}, {"depth", "i32"}, {"proj_start", "i64"}, {"proj_dur", "i64"}, {"ops", "i32"},
                   {"launches", "i32"}, {"gpu_time", "i64"}, {"children", "i32"}}
local OP_TABLES = {"kernels", "memcpy", "memset"}

-- The columns of nsl.nvtx_project's result that M.project reads, from the column cache (nil when a report
-- keeps none, or a kept row is out of range).
local function kept_projection(trace)
  local r = {}
  local first, nrows = kept.first_rows(trace, "nvtx")
  local offset = kept.time_offsets(trace)
  local asks = {}   -- (read side by side: kept.parts_many)
  for i, spec in ipairs(PROJ_COLS) do asks[i] = {"nvtx", PROJ_KEPT .. spec[1], spec[2], nrows} end
  for _, tname in ipairs(OP_TABLES) do asks[#asks + 1] = {tname, PROJ_KEPT .. "op_range", "i64"} end
  local got = kept.parts_many(trace, asks)
  for i, spec in ipairs(PROJ_COLS) do
    local name = spec[1]
    local parts = got[i]
    if not parts then return nil end
    for k, c in ipairs(parts) do
      if name == "parent" then
        c = kept.trace_rows(c, nrows[k], first[k])
        if not c then return nil end
      elseif name == "proj_start" then
        c = kept.on_clock(c, offset[k])
      end
      parts[k] = c
    end
    r[name] = nsl.concat(table.unpack(parts))
  end
  local ops = {}
  for j in ipairs(OP_TABLES) do
    local parts = got[#PROJ_COLS + j]
    if not parts then return nil end
    for k, c in ipairs(parts) do
      parts[k] = kept.trace_rows(c, nrows[k], first[k])
      if not parts[k] then return nil end
    end
    ops[#ops + 1] = nsl.concat(table.unpack(parts))
  end
  r.op_range = nsl.concat(table.unpack(ops))
  return r
end

-- Keeps r (nsl.nvtx_project's result over the whole trace) in the column cache, as kept_projection reads it.
local function keep_projection(trace, r)
  if not kept.keeps(trace) then return end
  local first = kept.first_rows(trace, "nvtx")
  local offset = kept.time_offsets(trace)
  local function own_rows(c, k) return kept.own_rows(c, first[k]) end
  for _, spec in ipairs(PROJ_COLS) do
    local name = spec[1]
    local of_report
    if name == "parent" then of_report = own_rows
    elseif name == "proj_start" then
      of_report = function(c, k) return kept.on_clock(c, -offset[k]) end
    end
    kept.keep(trace, "nvtx", PROJ_KEPT .. name, r[name], of_report)
  end
  local at = 0
  for _, tname in ipairs(OP_TABLES) do
    local n = #trace[tname]
    kept.keep(trace, tname, PROJ_KEPT .. "op_range", r.op_range:gather(nsl.range(n) + at), own_rows)
    at = at + n
  end
end

--- Projects the NVTX ranges of trace onto the GPU with one sweep per
-- thread (nsl.nvtx_project).  opts.strip: patterns for the `label` column
-- (see M.names).  Returns P with
--   P.ranges  trace.nvtx's report, pid, tid, start, stop, dur and kind (every
--             row; 0-based row i is range i) plus name,
--             parent, depth (NULL: not a projected kind), proj_start and
--             proj_dur (NULL without GPU ops), ops, launches (nsys's
--             NumGPUOps), gpu_time (sum of op durations), children (child
--             ranges with GPU ops), and label with opts.strip
--   P.mask    the ranges that take part (M.range_mask)
--   P.ops     M.gpu_ops plus range: the innermost range of the launching call
-- opts.release: the caller reads neither trace.api nor the ranges' text,
-- domain and end_tid afterwards, so each is unloaded once read (t:unload:
-- they would load again) and the sweep runs with less memory held.
-- A front end that stays responsive (nsl tui) gives opts.sweep, which runs
-- the sweep for it (on a thread of its own: nsl.background("nvtx_project",
-- args)), and opts.between, called between the other pieces of work.
function M.project(trace, opts)
  opts = opts or {}
  local between = opts.between or function() end
  local nv = trace.nvtx
  nv:load(M.range_columns)   -- one pass
  local mask = M.range_mask(nv)
  local name, label = M.names(nv, {strip = opts.strip})
  if opts.release then nv:unload{"text", "domain", "end_tid"} end
  local ops = M.gpu_ops(trace)
  between()
  local r = kept_projection(trace)
  if not r then
    local api = trace.api
    api:load{"report", "pid", "tid", "corr", "start", "stop"}
    r = (opts.sweep or nsl.nvtx_project){
      range_keys = {nv.report, nv.pid, nv.tid}, range_start = nv.start, range_stop = nv.stop, range_mask = mask,
      api_keys = {api.report, api.pid, api.tid}, api_start = api.start, api_stop = api.stop,
      op_api = ops.api, op_start = ops.start, op_stop = ops.stop}
    if opts.release then api:unload() end
    keep_projection(trace, r)
  end
  between()
  -- the ranges' durations (made from start and stop, read from no source) once the sweep's scratch is freed:
  -- made before, they would add to its peak
  nv:load{"dur"}
  local ranges = nv:select{"report", "pid", "tid", "start", "stop", "dur", "kind"}:with("name", name,
    "parent", r.parent, "depth", r.depth, "proj_start", r.proj_start, "proj_dur", r.proj_dur, "ops", r.ops,
    "launches", r.launches, "gpu_time", r.gpu_time, "children", r.children)
  if label then ranges = ranges:with("label", label) end
  return {ranges = ranges, mask = mask, ops = ops:with("range", r.op_range)}
end

-- The groups' aggregates of M.summaries of a trace of one report (not per report), kept in the column cache
-- (nsl.kept) under SUMS_KEPT with or without the projection's: sum (a row per name and style: first, the
-- group's first range, whose name and style are read from the ranges again, then the aggregates) and proj (a
-- row per group with GPU ops: gid, its row of sum, then the aggregates).  Another way of summarising is
-- another name.
local SUMS_KEPT = "nvtx_sums.1"
local SUM_COLS = {"first", "total", "n", "avg", "med", "min", "max", "std"}
local PROJ_SUM_COLS = {"gid", "ptotal", "pn", "pavg", "pmed", "pmin", "pmax", "pstd", "cpu", "launches", "lvl",
                       "kids", "gpu"}

local function sums_name(proj) return kept.name(SUMS_KEPT, proj and "proj" or "sum") end

-- The ranges as what is kept reads them: n (how many) and at(rows), a table of the ranges at rows (0-based)
-- with their name, kind and (where labelled) label.  Of R (P.ranges, or trace.nvtx with a name column): its
-- rows; of trace alone (ranges_at): each row's names made where asked (M.names), the ranges unprojected.
local function lookup(R)
  return {n = #R, labelled = R:coltype("label") ~= nil, at = function(rows) return R:take(rows) end}
end
local function ranges_at(trace, strip)
  local nv = trace.nvtx
  return {n = #nv, labelled = strip ~= nil, at = function(rows)
    nv:load{"kind"}
    local name, label = M.names(nv, {strip = strip, rows = rows})
    local t = nsl.table{{"kind", nv.kind:gather(rows)}, {"name", name}}
    return label and t:with("label", label) or t
  end}
end

-- Whether every value of the row column c lies in [lo, hi) (none NULL).
local function rows_within(c, lo, hi)
  local a, b = nsl.extent(c)
  return #c == 0 or (a ~= nil and a >= lo and b < hi and c:isnull():count() == 0)
end

-- M.summaries' aggregates of the ranges L (a lookup) of trace as kept_sums keeps them: {sum =, proj = (with
-- proj)}, the keys of sum read from the ranges again; nil where none is kept or a kept row is out of range.
local function kept_sums(trace, L, proj)
  local name = sums_name(proj)
  local g = kept.table(trace, "nvtx", name .. ".sum", SUM_COLS)
  if not (g and rows_within(g.first, 0, L.n)) then return nil end
  local q
  if proj then
    q = kept.table(trace, "nvtx", name .. ".proj", PROJ_SUM_COLS)
    if not (q and rows_within(q.gid, 0, #g)) then return nil end
  end
  local keys = L.at(g.first)
  g = g:with("name", keys.name, "kind", keys.kind)
  if q then q = q:with("name", g.name:gather(q.gid), "kind", g.kind:gather(q.gid)) end
  return {sum = g:select{"name", "kind", "total", "n", "avg", "med", "min", "max", "std"}, proj = q}
end

-- Keeps g (M.summaries' groups, with first) and q (its groups with GPU ops, by gid; nil without projection).
local function keep_sums(trace, g, q)
  local name = sums_name(q ~= nil)
  g = g:select(SUM_COLS)
  if not (kept.keepable(g, SUM_COLS) and (not q or kept.keepable(q, PROJ_SUM_COLS))) then return end
  kept.keep_table(trace, "nvtx", name .. ".sum", g, SUM_COLS)
  if q then kept.keep_table(trace, "nvtx", name .. ".proj", q, PROJ_SUM_COLS) end
end

local time_cols = {"Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                   "StdDev (ns)"}

--- The two summaries of nsys over the ranges R (P.ranges, or trace.nvtx
-- with a name column for the first alone), from one group-by per name and
-- style (and report with opts.per_report):
--   nvtx_sum: Time (%), Total Time, Instances, Avg, Med, Min, Max, StdDev
--     (ns, of the CPU durations), Style, Range; sorted by total time (with
--     per_report: rows grouped by report, Time (%) within each report);
--   nvtx_gpu_proj_sum (unless opts.proj == false): over the ranges with GPU
--     ops, Time (%) of the projected time, Total Proj Time, Total Range Time
--     (their CPU time), Range Instances, Proj Avg/Med/Min/Max/StdDev, Total
--     GPU Ops (launching calls), Avg GPU Ops, Avg Range Lvl, Avg Num Child,
--     Total GPU Time (sum of op durations), Style, Range.
-- opts.aggregates: the groups' aggregates already made ({sum =, proj =}
-- from M.reduce_summaries: a distributed run's), R then unread.
-- opts.trace: the trace of R, when R is every range of it (P.ranges or
-- trace.nvtx): a trace of one report keeps the groups' aggregates in its
-- column cache (nsl.kept), and a later run reads them instead of grouping
-- the ranges again (not with opts.per_report).
-- Returns the two tables (the second nil without projection).
function M.summaries(R, opts)
  opts = opts or {}
  local got = opts.aggregates
  local proj = opts.proj ~= false and (got and got.proj or not got and R:coltype("proj_dur") ~= nil)
  local function with_report(list, t)
    if opts.per_report then table.insert(list, 1, {"report", t.report}) end
    return list
  end
  -- Time (%): of the total over all rows, or within each report with per_report
  local function percent(t, total)
    if not opts.per_report then
      local grand = total:sum() or 0
      return grand > 0 and total * 100.0 / grand or nsl.rep(0.0, #t)
    end
    local by = {}
    local rep, tot = t.report:totable(), total:totable()
    for i = 1, #t do by[rep[i]] = (by[rep[i]] or 0) + (tot[i] or 0) end
    local pct = {}
    for i = 1, #t do pct[i] = by[rep[i]] > 0 and (tot[i] or 0) * 100.0 / by[rep[i]] or 0.0 end
    return #pct > 0 and nsl.column(pct) or nsl.rep(0.0, 0)
  end
  local keys = opts.per_report and {"report", "name", "kind"} or {"name", "kind"}
  local g = got and got.sum
  local gid   -- each range's group of g where it has GPU ops, else -1 (the projection's groups)
  local trace = not got and not opts.per_report and opts.trace and opts.trace:nreports() == 1 and opts.trace
  local made   -- made here, to keep: {g = g with each group's first range}
  if trace then
    local k = kept_sums(trace, lookup(R), proj)
    if k then got = {sum = k.sum, proj = k.proj} end
    g = got and got.sum
  end
  if not g then
    local cols = {{"name", R.name}, {"kind", R.kind}, {"dur", R.dur}}
    if opts.per_report then cols[#cols + 1] = {"report", R.report} end
    local t <close> = nsl.table(cols)
    local gr <close> = t:group_by(table.unpack(keys))
    g = gr:agg{"total=sum(dur)", "n=count(dur)", "avg=mean(dur)", "med=median(dur)", "min=min(dur)", "max=max(dur)",
               "std=std(dur)"}
    if trace then made = {g = g:with("first", gr:first_rows())} end
    if proj then   -- (the groups' ids freed here, not held through the projection's group-by)
      local ids <close> = gr:ids()
      gid = nsl.where(R.ops:gt(0), ids, -1)
    end
  end
  -- nvtx_sum: ranges with a duration (marks and ranges that never ended have none)
  local s = g:filter(g.n:gt(0) & g.kind:isin{"push_pop", "start_end"})
  s = opts.per_report and s:sort("report", "-total", "name") or s:sort("-total", "name")
  local vals = {percent(s, s.total), s.total, s.n, s.avg, s.med, s.min, s.max, s.std}
  local list = {}
  for i, c in ipairs(time_cols) do list[i] = {c, vals[i]} end
  list[#list + 1] = {"Style", s.kind:map(M.style_names)}
  list[#list + 1] = {"Range", s.name}
  local sum = nsl.table(with_report(list, s))
  if not proj then
    if made then keep_sums(trace, made.g, nil) end
    return sum, nil
  end
  -- nvtx_gpu_proj_sum: the same keys plus "has GPU ops", keeping the groups that have
  local q = got and got.proj
  if not q then
    -- the ranges with GPU ops by their groups of g (-1: none, a group of its own, left out): grouped by an
    -- integer instead of the names again, the groups in the order they first have GPU ops, as grouping by
    -- (keys, has) kept them
    local pt <close> = nsl.table{{"gid", gid}, {"dur", R.dur}, {"proj_dur", R.proj_dur}, {"launches", R.launches},
                                 {"depth", R.depth}, {"children", R.children}, {"gpu_time", R.gpu_time}}
    q = pt:group_by("gid"):agg{
      "ptotal=sum(proj_dur)", "pn=count(proj_dur)", "pavg=mean(proj_dur)", "pmed=median(proj_dur)",
      "pmin=min(proj_dur)", "pmax=max(proj_dur)", "pstd=std(proj_dur)", "cpu=sum(dur)", "launches=sum(launches)",
      "lvl=mean(depth)", "kids=sum(children)", "gpu=sum(gpu_time)"}
    q = q:filter(q.gid:ge(0))
    if made then keep_sums(trace, made.g, q) end
    local of = g:select(keys):take(q.gid)
    for _, k in ipairs(keys) do q = q:with(k, of[k]) end
  end
  q = q:filter(q.pn:gt(0))
  q = opts.per_report and q:sort("report", "-ptotal", "name") or q:sort("-ptotal", "name")
  local plist = {
    {"Time (%)", percent(q, q.ptotal)},
    {"Total Proj Time (ns)", q.ptotal}, {"Total Range Time (ns)", q.cpu}, {"Range Instances", q.pn},
    {"Proj Avg (ns)", q.pavg}, {"Proj Med (ns)", q.pmed}, {"Proj Min (ns)", q.pmin}, {"Proj Max (ns)", q.pmax},
    {"Proj StdDev (ns)", q.pstd}, {"Total GPU Ops", q.launches}, {"Avg GPU Ops", q.launches / q.pn},
    {"Avg Range Lvl", q.lvl}, {"Avg Num Child", q.kids / q.pn}, {"Total GPU Time (ns)", q.gpu},
    {"Style", q.kind:map(M.style_names)}, {"Range", q.name}}
  return sum, nsl.table(with_report(plist, q))
end

--- The groups' aggregates of M.summaries made by every process of an MPI
-- job over its own ranges R (collective: nsl.stats.reduce_aggregates, the
-- bits one process's group-by gives, medians included; no range moves).
-- opts as M.summaries'; first: the whole trace's number of R's report 0
-- (for opts.per_report).  Returns {sum =, proj =} (proj with opts.proj)
-- for opts.aggregates on every process, or nil on every process where the
-- durations are too large for exact deviations (the caller then has the
-- ranges read as one process would).
function M.reduce_summaries(R, opts, first)
  local stats = require("nsl.stats")
  local keys = opts.per_report and {"report", "name", "kind"} or {"name", "kind"}
  local function rows(t, cols)
    local sel = {}
    for _, c in ipairs(cols) do sel[c] = true end
    local list = {}
    for _, c in ipairs(cols) do if c ~= "report" then list[#list + 1] = {c, t[c]} end end
    if sel.report then list[#list + 1] = {"report", t.report:cast("i64") + first} end
    return nsl.table(list)
  end
  -- (marks and other kinds have no duration: left out here, as nvtx_sum leaves out their groups)
  local cols = {"name", "kind", "dur"}
  if opts.per_report then cols[#cols + 1] = "report" end
  local ranged = R:filter(R.kind:isin{"push_pop", "start_end"})
  local sum = stats.reduce_aggregates(rows(ranged, cols), keys, "dur")
  if not sum then return nil end
  local got = {sum = sum}
  if opts.proj then
    local pcols = {"name", "kind", "dur", "proj_dur", "launches", "depth", "children", "gpu_time"}
    if opts.per_report then pcols[#pcols + 1] = "report" end
    local q = stats.reduce_aggregates(rows(R:filter(R.ops:gt(0)), pcols), keys, "proj_dur", {extra = {
      cpu = "sum(dur)", launches = "sum(launches)", lvl = "mean(depth)", kids = "sum(children)", gpu = "sum(gpu_time)"}})
    if not q then return nil end
    got.proj = q:select{table.unpack(keys)}:with("ptotal", q.total, "pn", q.n, "pavg", q.avg, "pmed", q.med,
      "pmin", q.min, "pmax", q.max, "pstd", q.std, "cpu", q.cpu, "launches", q.launches, "lvl", q.lvl, "kids", q.kids,
      "gpu", q.gpu)
  end
  return got
end

--- The projected ranges (those with GPU ops) as nsys's nvtx_gpu_proj_trace,
-- sorted by projected start, then longest first.  Columns: name,
-- proj_start, proj_dur, start, dur, style, report, pid, tid, launches (nsys's
-- NumGPUOps), ops, gpu_time, depth, children, range (0-based row of
-- trace.nvtx), parent (-1: none).
-- opts.unsorted: in R's order (rows of several traces, concatenated in
-- their order, sort as those of one: M.sort_projected); opts.first_row:
-- the number of R's row 0 (range and parent count from it).
function M.projected(R, opts)
  opts = opts or {}
  local t = R:select{"name", "proj_start", "proj_dur", "start", "dur", "kind", "report", "pid", "tid",
                     "launches", "ops", "gpu_time", "depth", "children", "parent"}
  t = t:with("range", nsl.range(#R)):filter(R.ops:gt(0))
  t = t:with("style", t.kind:map(M.style_names))
  local first = opts.first_row or 0
  if first ~= 0 then
    t = t:with("range", t.range + first, "parent", nsl.where(t.parent:ge(0), t.parent + first, t.parent))
  end
  t = t:select{"name", "proj_start", "proj_dur", "start", "dur", "style", "report", "pid", "tid", "launches",
               "ops", "gpu_time", "depth", "children", "range", "parent"}
  return opts.unsorted and t or M.sort_projected(t)
end

--- M.projected's rows in its order: by projected start, then longest first
-- (stable: ties keep the rows' order).
function M.sort_projected(t)
  return t:sort("proj_start", "-proj_dur")
end

--- The tree's paths of the ranges of P (M.project), made on a thread of
-- their own (nsl.background "tree_paths": one thread's sweep over every
-- range) while the caller goes on: a job for M.tree's opts.paths.
function M.tree_paths_job(P)
  local R = P.ranges
  return nsl.background("tree_paths", R.parent, R:coltype("label") and R.label or R.name, P.mask)
end

--- The figures of the tree of range names (M.tree's, before it is laid
-- out) over the ranges and operations of P (M.project; paths: the job of
-- M.tree_paths_job, else they are made here): C tables indexed
-- by node id + 1 -- parent (node id, -1 for roots; a parent's id is below
-- its children's), name, inst, cpu, gpu, ops (of the node's ranges), gself,
-- oself (of the operations whose innermost range is in it) -- names (the
-- names as a column), n (nodes),
-- outside {ops =, gpu_time =}, gpu_time (every operation's), node_of (per
-- range: its node, -1: not in the tree), op_node (per operation: its
-- node, NULL: none) and node_row (per node: a range of it).
function M.tree_figures(P, paths)
  local R = P.ranges
  local label = R:coltype("label") and R.label or R.name
  local tp = paths and paths:wait() or nsl.tree_paths(R.parent, label, P.mask)
  local n = tp.n
  -- (groups by node number, no key hashed: node i is row i + 1; the operations outside every range, whose
  -- innermost range is none, are group n)
  local per = nsl.table{{"node", tp.node}, {"dur", R.dur}, {"gpu", R.gpu_time}, {"ops", R.ops}}
    :group_by_id("node", n):agg{"n=count", "cpu=sum(dur)", "gpu=sum(gpu)", "ops=sum(ops)"}
  local op_node = tp.node:gather(P.ops.range)
  local op_dur = P.ops.stop - P.ops.start
  local own = nsl.table{{"node", nsl.coalesce(op_node, n)}, {"dur", op_dur}}:group_by_id("node", n + 1)
    :agg{"n=count", "gpu=sum(dur)"}
  local F = {n = n, inst = {}, cpu = {}, gpu = {}, ops = {}, gself = {}, oself = {},
             outside = {ops = own.n[n + 1], gpu_time = own.gpu[n + 1] or 0}, gpu_time = op_dur:sum() or 0,
             node_of = tp.node, op_node = op_node, node_row = tp.node_row}
  local pn, pcpu, pgpu, pops, on, ogpu = per.n:totable(), per.cpu:totable(), per.gpu:totable(), per.ops:totable(),
                                         own.n:totable(), own.gpu:totable()
  for id = 1, n do
    F.inst[id], F.cpu[id], F.gpu[id], F.ops[id] = pn[id], pcpu[id] or 0, pgpu[id] or 0, pops[id] or 0
    F.gself[id], F.oself[id] = ogpu[id] or 0, on[id]
  end
  F.names = label:gather(tp.node_row)
  F.parent, F.name = tp.node_parent:totable(), F.names:totable()
  return F
end

local tree_fields = {"inst", "cpu", "gpu", "ops", "gself", "oself"}

-- M.tree_figures of a trace of one report, kept in the column cache (nsl.kept) per way of labelling the
-- ranges: a row per node (row: a range of it, whose label names it, read from the ranges again; parent; the
-- figures), and the outside ops, their GPU time and the total GPU time (-1: none) as a table of one row.
-- Another way of making the tree is another name.
local TREE_KEPT = "nvtx_tree.1"
local TREE_COLS = {"row", "parent", "inst", "cpu", "gpu", "ops", "gself", "oself"}
local TREE_TOTALS = {"outside_ops", "outside_gpu", "gpu_time", "ops"}

local function tree_name(strip) return kept.name(TREE_KEPT, strip or {}) end

-- M.tree_figures of the ranges L (a lookup, labelled as strip says) of trace as M.keep_tree_figures kept them,
-- but node_of and op_node, and with nops: the GPU operations' number; nil where trace keeps none (or a kept
-- row is out of range).
local function kept_tree(trace, L, strip)
  local name = tree_name(strip)
  local t = kept.table(trace, "nvtx", name .. ".nodes", TREE_COLS)
  local tot = t and kept.table(trace, "nvtx", name .. ".totals", TREE_TOTALS)
  if not (t and tot and #tot == 1 and rows_within(t.row, 0, L.n)) then return nil end
  local n = #t
  -- a node's parent comes before it (as nsl.tree_paths numbers them), so the tree has no cycle
  local parent = t.parent:totable()
  for id = 1, n do
    local p = parent[id]
    if p == nil or p < -1 or p >= id - 1 then return nil end
  end
  local function opt(v) return v >= 0 and v or nil end
  local F = {n = n, parent = parent, outside = {ops = opt(tot.outside_ops[1]), gpu_time = tot.outside_gpu[1]},
             gpu_time = tot.gpu_time[1], nops = tot.ops[1]}
  for _, f in ipairs(tree_fields) do F[f] = t[f]:totable() end
  local at = L.at(t.row)
  F.names = L.labelled and at.label or at.name
  F.name = F.names:totable()
  return F
end

--- M.tree_figures of P (M.project's of trace with opts.strip = strip) as
-- M.keep_tree_figures kept them, but node_of and op_node; nil where trace
-- keeps none (or a kept row is out of range).
function M.kept_tree_figures(trace, P, strip)
  local F = kept_tree(trace, lookup(P.ranges), strip)
  return F and F.nops == #P.ops and F or nil
end

--- What the nvtx analysis prints of a trace of one report whose column
-- cache keeps all of it: the tree's figures (M.keep_tree_figures, ranges
-- labelled with opts.strip) and, with opts.sums, M.summaries' aggregates
-- (with the projection's with opts.proj).  Returns {sum =, proj =, tree =,
-- ops =} as a distributed run's parts give them (M.summaries'
-- opts.aggregates, M.tree's opts.figures, the GPU operations' number): the
-- ranges are not projected, and read only where a group or node takes its
-- name; nil where a part is not kept (or something kept does not fit).
function M.kept_parts(trace, opts)
  if trace:nreports() ~= 1 or not trace:keeps_derived(0) then return nil end
  local L = ranges_at(trace, opts.strip)
  local ops = 0
  for _, tname in ipairs(gpu_ops.tables) do ops = ops + #trace[tname] end
  local F = kept_tree(trace, L, opts.strip)
  if not (F and F.nops == ops) then return nil end
  local got = {tree = F, ops = ops}
  if opts.sums then
    local k = kept_sums(trace, L, opts.proj)
    if not k then return nil end
    got.sum, got.proj = k.sum, k.proj
  end
  return got
end

--- Keeps F (M.tree_figures of a trace of one report's P, projected with
-- opts.strip = strip) for M.kept_tree_figures.
function M.keep_tree_figures(trace, F, strip)
  if not F.node_row then return end
  local function i64(v) return (#v > 0 and nsl.column(v) or nsl.column{}):cast("i64") end
  local cols = {{"row", F.node_row}, {"parent", i64(F.parent)}}
  for _, f in ipairs(tree_fields) do cols[#cols + 1] = {f, i64(F[f])} end
  local t = nsl.table(cols)
  local tot = nsl.table{{"outside_ops", i64{F.outside.ops or -1}}, {"outside_gpu", i64{F.outside.gpu_time}},
                        {"gpu_time", i64{F.gpu_time}}, {"ops", i64{#F.op_node}}}
  if not (kept.keepable(t, TREE_COLS) and kept.keepable(tot, TREE_TOTALS)) then return end
  local name = tree_name(strip)
  kept.keep_table(trace, "nvtx", name .. ".nodes", t, TREE_COLS)
  kept.keep_table(trace, "nvtx", name .. ".totals", tot, TREE_TOTALS)
end

--- M.tree_figures as a table (one row per node: node, parent, name and the
-- figures) for another process to merge (M.merge_tree_figures); its
-- outside and total GPU time as one more row, node -1.
function M.tree_figures_table(F)
  local function i64(v) return (#v > 0 and nsl.column(v) or nsl.column{}):cast("i64") end
  local cols = {{"node", nsl.concat(nsl.range(F.n), nsl.rep(-1, 1))}, {"parent", nsl.concat(i64(F.parent), nsl.rep(-1, 1))},
                {"name", nsl.concat(F.n > 0 and F.names or nsl.column{""}:gather(nsl.range(0)), nsl.column{""})}}
  local last = {inst = 0, cpu = 0, gpu = F.gpu_time, ops = 0, gself = F.outside.gpu_time, oself = F.outside.ops}
  for _, f in ipairs(tree_fields) do
    local v = table.move(F[f], 1, F.n, 1, {})
    v[F.n + 1] = last[f]
    cols[#cols + 1] = {f, i64(v)}
  end
  return nsl.table(cols)
end

--- The figures of one tree from M.tree_figures_table rows of several
-- processes concatenated (t; each process's nodes in its order, then its
-- row -1): nodes merged where the path of names from the root is the same
-- (a node is its parent's node and its name, as nsl.tree_paths makes
-- them), their figures added up.  Returns M.tree_figures' fields but
-- node_of and op_node.
function M.merge_tree_figures(t)
  local F = {n = 0, parent = {}, name = {}, outside = {ops = 0, gpu_time = 0}, gpu_time = 0}
  for _, f in ipairs(tree_fields) do F[f] = {} end
  local node, parent, name = t.node:totable(), t.parent:totable(), t.name:totable()
  local vals = {}
  for _, f in ipairs(tree_fields) do vals[f] = t[f]:totable() end
  local kids = {[-1] = {}}   -- merged id -> {name -> merged id}
  local local_to = {}        -- this process's node id -> merged id
  for i = 1, #t do
    local id = node[i]
    if id < 0 then   -- a process's last row: its outside figures; the next process's ids start again
      F.outside.ops, F.outside.gpu_time = F.outside.ops + vals.oself[i], F.outside.gpu_time + vals.gself[i]
      F.gpu_time = F.gpu_time + vals.gpu[i]
      local_to = {}
    else
      local p = parent[i] < 0 and -1 or local_to[parent[i]]
      local m = kids[p][name[i] or false]
      if not m then
        m = F.n
        F.n = F.n + 1
        kids[p][name[i] or false], kids[m] = m, {}
        F.parent[m + 1], F.name[m + 1] = p, name[i]
        for _, f in ipairs(tree_fields) do F[f][m + 1] = 0 end
      end
      local_to[id] = m
      for _, f in ipairs(tree_fields) do F[f][m + 1] = F[f][m + 1] + vals[f][i] end
    end
  end
  return F
end

--- The tree of range names (paths of labels from the top-level range down)
-- over every thread and report, with times per node.  P from M.project
-- (with opts.strip, nodes merge the normalized labels, else the names).
-- opts.sep joins names into paths ("/" by default).  opts.figures: the
-- figures already made (M.merge_tree_figures of a distributed run's), P
-- then unread; opts.paths: M.tree_paths_job's job.  Returns T with
--   T.nodes  one row per node in depth-first order, children by GPU time:
--            node, parent (node, -1 for roots), depth, name, path,
--            instances, cpu_time (sum of range durations), cpu_self (minus
--            the children's), gpu_time (GPU op time launched inside, the
--            children's included), gpu_self (ops whose innermost range is
--            in this node), ops, ops_self (GPU operations)
--   T.node_of  per range: its node (-1: not in the tree)
--   T.op_node  per GPU op (P.ops rows): the node of its innermost range (NULL: none)
--   T.outside  {ops =, gpu_time =} of the GPU ops launched outside every range
--   T.gpu_time the GPU time of every op, inside ranges or outside (ns)
function M.tree(P, opts)
  opts = opts or {}
  local sep = opts.sep or "/"
  local F = opts.figures or M.tree_figures(P, opts.paths)
  local n, parents, names = F.n, F.parent, F.name
  local inst, cpu, gpu, ops, gself, oself = F.inst, F.cpu, F.gpu, F.ops, F.gself, F.oself
  local kids, roots, child_cpu, depths = {}, {}, {}, {}
  for id = 0, n - 1 do
    local p = parents[id + 1]
    if p < 0 then roots[#roots + 1] = id
    else
      kids[p] = kids[p] or {}
      table.insert(kids[p], id)
      child_cpu[p] = (child_cpu[p] or 0) + cpu[id + 1]
    end
  end
  local function order(list)
    table.sort(list, function(a, b)
      if gpu[a + 1] ~= gpu[b + 1] then return gpu[a + 1] > gpu[b + 1] end
      if cpu[a + 1] ~= cpu[b + 1] then return cpu[a + 1] > cpu[b + 1] end
      return names[a + 1] < names[b + 1]
    end)
  end
  local rows = {node = {}, parent = {}, depth = {}, name = {}, path = {}, instances = {}, cpu_time = {},
                cpu_self = {}, gpu_time = {}, gpu_self = {}, ops = {}, ops_self = {}}
  local paths = {}
  local function visit(id, depth)
    local p = parents[id + 1]
    paths[id] = p < 0 and names[id + 1] or (paths[p] .. sep .. names[id + 1])
    local k = #rows.node + 1
    rows.node[k], rows.parent[k], rows.depth[k], rows.name[k], rows.path[k] = id, p, depth, names[id + 1], paths[id]
    rows.instances[k], rows.cpu_time[k] = inst[id + 1], cpu[id + 1]
    rows.cpu_self[k] = cpu[id + 1] - (child_cpu[id] or 0)
    rows.gpu_time[k], rows.gpu_self[k] = gpu[id + 1], gself[id + 1]
    rows.ops[k], rows.ops_self[k] = ops[id + 1], oself[id + 1]
    if kids[id] then
      order(kids[id])
      for _, c in ipairs(kids[id]) do visit(c, depth + 1) end
    end
  end
  order(roots)
  for _, id in ipairs(roots) do visit(id, 0) end
  local cols = {}
  for _, c in ipairs{"node", "parent", "depth", "name", "path", "instances", "cpu_time", "cpu_self", "gpu_time",
                     "gpu_self", "ops", "ops_self"} do
    cols[#cols + 1] = {c, #rows[c] > 0 and nsl.column(rows[c]) or nsl.column{}}
  end
  return {nodes = nsl.table(cols), node_of = F.node_of, op_node = F.op_node, outside = F.outside, gpu_time = F.gpu_time}
end

return M
