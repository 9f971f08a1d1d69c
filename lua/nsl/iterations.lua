-- nsl.iterations -- training/inference steps: found by an NVTX range name
-- (or Lua pattern), or detected from the periodic structure of the trace,
-- and the GPU work of each.
--
-- How iterations are found (M.find):
--  0. A JAX trace (nsl.jax.is_jax: an nsys-jax archive, or an export with
--     XLA's module ranges): the steps are the executions of the step
--     program -- the XLA program name (or --arg range=NAME when it names
--     one) with the most GPU time among those run at least 3 times on a
--     device -- one iteration per execution on each device (rank), numbered
--     per device in time order, so that iteration k lines up across devices.
--     Times are the executions' spans projected onto the GPU, with every
--     device's clock corrected as nsys-jax aligns them (nsl.jax.alignment).
--  1. --arg range=NAME: ranges whose name ("domain:text", as nvtx_sum
--     prints it) is NAME, or starts with NAME followed by a character that
--     is not a letter, digit or '_' (nsl.steps.matches: "ProfilerStep"
--     finds "ProfilerStep#3"); when no range matches so, NAME is a Lua
--     pattern.  Of matching ranges nested in each other (on one thread) only
--     the outermost count.
--  2. Otherwise, an NVTX step range: among top-level ranges (no enclosing
--     range on their thread), names are compared after dropping PyTorch's
--     ", seq = N" / ", op_id = N" and a trailing number ("ProfilerStep#7");
--     a name is a step on a thread when it occurs at least 3 times there,
--     its start-to-start periods are regular (interquartile range at most
--     a quarter of the median, and every period within a factor
--     M.range_ratio of the median -- the first may be longer, a warm-up
--     step), its ranges fill at least half of the time from the first start
--     to the last end, and that time is at least half of the report's NVTX
--     span.  The name with the most such instances wins (then the longest
--     period) -- provided every one of its ranges holds GPU work (an
--     operation launched inside it, as below); else the next name.  A name
--     whose ranges hold no GPU work is not a step.
--  3. Otherwise, a marker kernel: per report, the kernel name (per device)
--     with the longest regular period, whose occurrences span at least half
--     of the report's kernel activity.  A name's period is the time from an
--     occurrence to its L-th next, for the smallest L (1 to 8) that makes
--     these times regular (interquartile range at most 5% of the median),
--     with at least 3 periods: a kernel run L times per step at fixed
--     offsets marks steps too.  Ties: the smaller L, then the earliest first
--     occurrence.  Iteration k runs from the marker's k-th period start to
--     the next: n period starts make n - 1 iterations; the work before the
--     first and after the last is left out.
-- Limits: a trace shorter than three periods has no detectable period; the
-- longest regular period wins, so a marker that repeats once per step is
-- found even when layers repeat more often, but a run whose steps vary by
-- more than the thresholds above needs --arg range; with several markers of
-- one period the earliest one sets where iterations start.
--
-- GPU work of an iteration: for ranges, the operations (kernels, memcpy,
-- memset) whose launching CUDA API call started inside the range in the same
-- process, on any thread (nsl.steps.assign: backward passes are launched from
-- worker threads), work without a launch call by its own start; for kernel
-- markers, the operations of the report that start in the window.
local nsl = require("nsl")
local nvtx = require("nsl.nvtx")
local steps = require("nsl.steps")
local kept = require("nsl.kept")
local classes = require("nsl.classes")
local gpu_ops = require("nsl.gpu_ops")
local distributed = require("nsl.distributed")
local window = require("nsl.window")

local M = {}

--- Name rewriting for step detection: PyTorch's per-call suffixes and a
-- trailing step number.
M.step_strip = {", seq = %d+", ", op_id = %d+", "[%s_#]*%d+$"}

M.min_count = 3           -- iterations a detected period needs
M.range_spread = 0.25     -- NVTX steps: IQR / median period at most this
M.range_duty = 0.5        -- NVTX steps: ranges fill at least this share of their span
M.range_cover = 0.5       -- NVTX steps: first start to last end over the report's NVTX span
M.range_ratio = 2         -- NVTX steps: every period (the first: at least) within median / this .. median x this
M.kernel_spread = 0.05    -- marker kernels: IQR / median period at most this
M.kernel_cover = 0.5      -- marker kernels: first to last occurrence over the activity span

-- Iteration ranges table from the rows of nv in mask: report, pid, tid,
-- start, stop, iter (1-based per process), sorted by report, pid, start.
local function ranges_table(nv, mask)
  local r = nv:select{"report", "pid", "tid", "start", "stop"}:filter(mask):sort("report", "pid", "start")
  local rep, pid = r.report:totable(), r.pid:totable()
  local iter, k = {}, 0
  for i = 1, #r do   -- one Lua step per iteration
    if i == 1 or rep[i] ~= rep[i - 1] or pid[i] ~= pid[i - 1] then k = 0 end
    k = k + 1
    iter[i] = k
  end
  return r:with("iter", #iter > 0 and nsl.column(iter) or nsl.column{})
end

local function load_nvtx(trace)
  local nv = trace.nvtx
  -- no dur: it is made (stop - start) for every range at load; the detection needs it of top-level ranges only
  nv:load{"report", "pid", "tid", "start", "stop", "kind", "end_tid", "text", "domain"}
  return nv
end

-- Why M.by_name finds no range: the trace has none, or none is named spec
local NO_NVTX = "the trace has no NVTX ranges"
local function none_named(spec)
  return string.format("no NVTX range named '%s' (nor matching it as a Lua pattern)", spec)
end

-- The ranges nv (load_nvtx's) as M.by_name compares them with spec: their
-- names, the usable ones (with an end), and those of them named spec.
local function named(nv, spec)
  local name = nvtx.names(nv)
  local usable = nvtx.range_mask(nv) & ~nv.stop:isnull()
  return name, usable, name:where(function(s) return steps.matches(s, spec) end) & usable
end

-- The usable ranges whose names match spec as a Lua pattern; nil when it does not compile.
local function matching(name, usable, spec)
  local ok, m = pcall(function() return name:match(spec) end)
  return ok and (m & usable) or nil
end

-- The outermost of the ranges of nv in mask (of nested matches), as ranges_table gives them.
local function outermost(nv, mask) return ranges_table(nv, mask & nvtx.parents(nv, mask):lt(0)) end

--- Iteration ranges named spec (see 1. above): a ranges table, or nil and
-- a message when no range matches.
function M.by_name(trace, spec)
  local nv = load_nvtx(trace)
  if #nv == 0 then return nil, NO_NVTX end
  local name, usable, mask = named(nv, spec)
  local how = "name"
  if mask:count() == 0 then
    local m = matching(name, usable, spec)
    if m then mask, how = m, "pattern" end
  end
  if mask:count() == 0 then return nil, none_named(spec) end
  return outermost(nv, mask), how
end

-- Start-to-start periods of the rows of t (sorted by key columns then
-- start) per group of the keys: a table with the keys, n, med, q1, q3,
-- first (start), last (start), dmin (shortest period), lmin, lmax (shortest
-- and longest period after the first; NULL with fewer than 2 periods), busy
-- (sum of dur, when t has dur).
local function periods(t, keys)
  local g = t:group_by(table.unpack(keys))
  local d = t.start:diff(g:ids())
  local pos = nsl.cumcount(g:ids())   -- 0 for a group's first row, 1 for the row after its first period
  local later = d:gather(nsl.where(pos:ge(2), nsl.range(#t), -1))   -- NULL: none, or the first period
  local cols = {{"g", g:ids()}, {"d", d}, {"start", t.start}, {"later", later}}
  if t:coltype("dur") then cols[#cols + 1] = {"dur", t.dur} end
  local aggs = {"n=count(start)", "med=median(d)", "q1=quantile(d, 0.25)", "q3=quantile(d, 0.75)",
                "first=min(start)", "last=max(start)", "dmin=min(d)", "lmin=min(later)", "lmax=max(later)"}
  if t:coltype("dur") then aggs[#aggs + 1] = "busy=sum(dur)"; aggs[#aggs + 1] = "lastdur=last(dur)" end
  local s = nsl.table(cols):group_by("g"):agg(aggs)
  local keyt = g:keys()
  local out = {}
  for _, k in ipairs(keys) do out[#out + 1] = {k, keyt[k]} end
  for _, c in ipairs(s:columns()) do if c ~= "g" then out[#out + 1] = {c, s[c]} end end
  return nsl.table(out)
end

--- Adds n instances of name with median period med to totals.
local function add_total(totals, name, n, med)
  local e = totals[name] or {n = 0, med = 0}
  totals[name] = e
  e.n, e.med = e.n + n, math.max(e.med, med)
end

-- The names the column cache keeps top_ranges' columns under (nsl.kept): is_top per range, and in_order per
-- report (a column of one row).
local TOPS, IN_ORDER = "nvtx_top.1", "nvtx_top_in_order.1"

-- The top-level ranges among the usable ones of nv (trace.nvtx) and whether every thread's came in start order
-- (nsl.nvtx.tops): kept per report in the column cache, read back there (a kept in_order that is false only
-- costs a sort of rows in order).  usable(): the usable ranges' mask.
local function top_ranges(trace, nv, usable)
  local tops = kept.parts(trace, "nvtx", TOPS, "bool")
  local order = tops and kept.per_report(trace, "nvtx", IN_ORDER, "bool")
  if order then
    local in_order = true
    for _, c in ipairs(order) do in_order = in_order and c[1] end
    return nsl.concat(table.unpack(tops)), in_order
  end
  local is_top, in_order = nvtx.tops(nv, usable())
  kept.keep(trace, "nvtx", TOPS, is_top)
  for r = 1, trace:nreports() do trace:keep_derived(r - 1, "nvtx", IN_ORDER, kept.flag(in_order)) end
  return is_top, in_order
end

-- nvtx_candidates' result made from the ranges of trace (which has some), and also each report's totals
-- (per[r], 1-based r) and the top-level ranges' rows of trace.nvtx.
local function top_candidates(trace)
  local nv = load_nvtx(trace)
  local usable_mask
  local function usable()
    usable_mask = usable_mask or nvtx.range_mask(nv) & ~nv.stop:isnull()
    return usable_mask
  end
  local is_top, in_order = top_ranges(trace, nv, usable)
  -- the names of the top-level ranges alone (a fifth of them at 1 GB)
  local top = nv:select{"report", "pid", "tid", "start", "stop", "text", "domain"}:filter(is_top)
  local _, label = nvtx.names(top, {strip = M.step_strip})
  top = top:select{"report", "pid", "tid", "start", "stop"}
  local totals, per = {}, {}
  if #top == 0 then return {top = top, label = label, totals = totals}, per, is_top end
  -- each report's NVTX span, made when a name first gets as far as its test (on most traces none does): the
  -- three columns it needs, as filtering every loaded column of the ranges costs more than the rest
  local act
  local function span_of(r)
    if not act then
      act = {}
      local spans = nv:select{"report", "start", "stop"}:filter(usable()):group_by("report")
                      :agg{"lo=min(start)", "hi=max(stop)"}
      for i = 1, #spans do act[spans.report[i]] = spans.hi[i] - spans.lo[i] end
    end
    return act[r]
  end
  local t = top:with("label", label, "dur", top.stop - top.start)
  -- periods needs each name's ranges on a thread by start: so they are already when every thread's were
  if not in_order then t = t:sort("report", "pid", "tid", "label", "start") end
  local p = periods(t, {"report", "pid", "tid", "label"})
  local ratio = M.range_ratio
  for i = 1, #p do
    local n, med, q1, q3 = p.n[i], p.med[i], p.q1[i], p.q3[i]
    local lmin, lmax = p.lmin[i], p.lmax[i]
    local even = med and med > 0 and p.dmin[i] * ratio >= med and
                 (lmin == nil or (lmin * ratio >= med and lmax <= ratio * med))
    if n >= M.min_count and even and q3 - q1 <= M.range_spread * med then
      local span = p.last[i] + p.lastdur[i] - p.first[i]
      if span > 0 and p.busy[i] >= M.range_duty * span and span >= M.range_cover * span_of(p.report[i]) then
        add_total(totals, p.label[i], n, med)
        local r = p.report[i] + 1
        per[r] = per[r] or {}
        add_total(per[r], p.label[i], n, med)
      end
    end
  end
  return {top = top, label = label, totals = totals}, per, is_top
end

-- The names the column cache keeps each report's step candidates under (nsl.kept): .count (one row: how
-- many), then per candidate .row (a top-level range of that name, the report's own row), .n and .med
-- (add_total's); the thresholds and name rewriting of the NVTX detection are part of the name.
local function candidates_name()
  return kept.name("nvtx_steps.1", M.min_count, M.range_spread, M.range_duty, M.range_cover, M.range_ratio,
                       M.step_strip)
end

-- Each report's candidates, read back from the column cache: a list of {row (the trace's row of trace.nvtx),
-- n, med}, or nil when some report keeps none (or kept a row that is not one of its ranges).
local function kept_candidates(trace)
  local key, nr = candidates_name(), trace:nreports()
  local counts = kept.per_report(trace, "nvtx", key .. ".count", "i64")
  if not counts then return nil end
  local lens = {}
  for r, c in ipairs(counts) do
    lens[r] = c[1]
    if not lens[r] or lens[r] < 0 or lens[r] > 1000000 then return nil end
  end
  local rows = kept.parts(trace, "nvtx", key .. ".row", "i64", lens)
  local ns = rows and kept.parts(trace, "nvtx", key .. ".n", "i64", lens)
  local meds = ns and kept.parts(trace, "nvtx", key .. ".med", "f64", lens)
  if not meds then return nil end
  local first, nrows = kept.first_rows(trace, "nvtx")
  local list = {}
  for r = 1, nr do
    local rr, nn, mm = rows[r]:totable(), ns[r]:totable(), meds[r]:totable()
    for i = 1, lens[r] do
      local row, n, med = rr[i], nn[i], mm[i]
      if not (row and row >= 0 and row < nrows[r] and n and n >= 0 and med) then return nil end
      list[#list + 1] = {row = row + first[r], n = n, med = med}
    end
  end
  return list
end

-- Keeps each report's candidates, per[r] = {label -> {n, med}} (1-based r), for kept_candidates: a range of
-- each name is found among the top-level ones (top, their labels label; is_top: which ranges they are).
local function keep_candidates(trace, per, top, label, is_top)
  if not kept.keeps(trace) then return end
  local key = candidates_name()
  local first = kept.first_rows(trace, "nvtx")
  -- the first top-level range of each report and candidate name, from one pass over the ranges of those names
  local names, seen = {}, {}
  for _, p in pairs(per) do
    for name in pairs(p) do
      if not seen[name] then seen[name] = true; names[#names + 1] = name end
    end
  end
  local first_row = {}
  if #names > 0 then
    local at = label:isin(names):indices()
    local of = nsl.table{{"report", top.report:gather(at)}, {"label", label:gather(at)},
                         {"row", is_top:indices():gather(at)}}:group_by("report", "label"):agg{"row=first(row)"}
    for i = 1, #of do first_row[of.report[i] .. "\0" .. of.label[i]] = of.row[i] end
  end
  for r = 1, trace:nreports() do
    local rows, ns, meds = {}, {}, {}
    for name, e in pairs(per[r] or {}) do
      rows[#rows + 1] = first_row[(r - 1) .. "\0" .. name] - first[r]
      ns[#ns + 1], meds[#meds + 1] = e.n, e.med
    end
    local function col(list, ctype) return (#list > 0 and nsl.column(list) or nsl.rep(0, 0)):cast(ctype) end
    trace:keep_derived(r - 1, "nvtx", key .. ".count", nsl.rep(#rows, 1))
    trace:keep_derived(r - 1, "nvtx", key .. ".row", col(rows, "i64"))
    trace:keep_derived(r - 1, "nvtx", key .. ".n", col(ns, "i64"))
    trace:keep_derived(r - 1, "nvtx", key .. ".med", col(meds, "f64"))
  end
end

--- The candidates of the NVTX step detection (see 2. above): the
-- top-level usable ranges (top: report, pid, tid, start, stop, in row
-- order), their names as compared (label), and totals: {name -> {n, med}}
-- of the names that are a step on some thread (n: their instances on
-- those threads, med: the longest median period); nil without ranges.
-- Per report: a distributed run's processes add up their totals
-- (M.reduce_steps).  Each report's totals are kept in the column cache
-- (kept_candidates): read back, top and label are made only when asked.
local function nvtx_candidates(trace)
  if #trace.nvtx == 0 then return nil end
  local list = kept_candidates(trace)
  if list then
    local totals = {}
    if #list > 0 then
      local nv = load_nvtx(trace)
      local at = {}
      for i, e in ipairs(list) do at[i] = e.row end
      local sub = nv:select{"report", "pid", "tid", "start", "stop", "text", "domain"}:take(nsl.column(at))
      local _, label = nvtx.names(sub, {strip = M.step_strip})
      local names = label:totable()
      for i, e in ipairs(list) do add_total(totals, names[i], e.n, e.med) end
    end
    local made
    return setmetatable({totals = totals}, {__index = function(_, k)   -- top and label, made when first read
      if k ~= "top" and k ~= "label" then return nil end
      if not made then made = top_candidates(trace) end
      return made[k]
    end})
  end
  local d, per, is_top = top_candidates(trace)
  keep_candidates(trace, per, d.top, d.label, is_top)
  return d
end

--- The names of totals in the order they are tried: most instances, then
-- the longest period, then by name.
local function ordered(totals)
  local cands = {}
  for l, e in pairs(totals) do cands[#cands + 1] = {label = l, n = e.n, med = e.med} end
  table.sort(cands, function(a, b)
    if a.n ~= b.n then return a.n > b.n end
    if a.med ~= b.med then return a.med > b.med end
    return a.label < b.label
  end)
  return cands
end

--- The ranges of candidate name (of nvtx_candidates' d) as iterations
-- (ranges_table), how many of them hold GPU work, and whether any does
-- (cache: the GPU operations' launches, read for the first name asked).
local function holding(trace, d, name, cache)
  local r = ranges_table(d.top, d.label:eq(name))
  if not cache.launched then
    local ops = gpu_ops.table(trace, {columns = {"report", "pid", "start"}, api = true})
    cache.launched = nsl.table{{"report", ops.report}, {"pid", ops.pid},
                               {"launch", steps.launch_times(trace, ops, ops.api)}}
  end
  local launched = cache.launched
  local iter = steps.assign(launched, r)
  local held = nsl.table{{"report", launched.report}, {"pid", launched.pid}, {"iter", iter}}
  held = held:filter(~iter:isnull())
  if #held == 0 then return r, 0, false end
  return r, #held:group_by("report", "pid", "iter"):keys(), true
end

--- How M.find says an NVTX step name was detected.
local function nvtx_how(name, n, med)
  return string.format("NVTX range '%s' detected: %d top-level instances with a regular period of about %s, " ..
                       "each holding GPU work", name, n, require("nsl.report").duration(med))
end

--- The NVTX step name of the trace (see 2. above), or nil; also a
-- description and the detected name's ranges table.
function M.detect_nvtx(trace)
  local d = nvtx_candidates(trace)
  if not d then return nil end
  local cache = {}
  for _, c in ipairs(ordered(d.totals)) do
    local r, held, any = holding(trace, d, c.label, cache)
    if any and held == #r then return c.label, nvtx_how(c.label, c.n, c.med), r end   -- every range holds work
  end
  return nil
end

--- Marker kernels per report (see 3. above): an array of {report, device,
-- name, starts (column of the marker times: every lag-th occurrence),
-- period, lag} or an empty array.  A name's period is its fundamental one:
-- the smallest lag L (1 to M.max_lag) such that the times from each
-- occurrence to the L-th next are regular; so a kernel that runs L times
-- per step at fixed offsets marks steps too.
M.max_lag = 8

-- The names the column cache keeps each report's marker kernel under (nsl.kept): .n (one row: how many
-- marker times, 0 for no marker), then with a marker .row (one row: a kernel of the marker's name and device,
-- the report's own row), .period (one row), .lag (one row) and .starts (the marker times, on the report's
-- own clock); the detection's thresholds are part of the name.
local function markers_name()
  return kept.name("step_markers.1", M.max_lag, M.kernel_spread, M.kernel_cover, M.min_count)
end

-- M.detect_kernels' list read back from the column cache, or nil when some report keeps none (or kept what
-- cannot be: a row that is not one of its kernels, a lag out of range).
local function kept_markers(trace)
  local key, nr = markers_name(), trace:nreports()
  local counts = kept.per_report(trace, "kernels", key .. ".n", "i64")
  if not counts then return nil end
  local first, nrows = kept.first_rows(trace, "kernels")
  local offset = kept.time_offsets(trace)
  local k = trace.kernels
  local list = {}
  for r = 1, nr do
    local n = counts[r][1]
    if not n or n < 0 or n > nrows[r] then return nil end
    if n > 0 then
      local function one(what, ctype)
        local c = trace:derived(r - 1, "kernels", key .. "." .. what, ctype, 1)
        return c and c[1]
      end
      local row, period, lag = one("row", "i64"), one("period", "f64"), one("lag", "i64")
      local starts = trace:derived(r - 1, "kernels", key .. ".starts", "i64", n)
      if not (row and period and lag and starts and row >= 0 and row < nrows[r] and lag >= 1 and lag <= M.max_lag) then
        return nil
      end
      k:load{"device", "name"}
      list[#list + 1] = {report = r - 1, device = k.device[row + first[r] + 1], name = k.name[row + first[r] + 1],
                         starts = kept.on_clock(starts, offset[r]), period = period, lag = lag}
    end
  end
  return list
end

-- Keeps M.detect_kernels' list for kept_markers (rows: each marker's kernel row of trace.kernels).
local function keep_markers(trace, list, rows)
  if not kept.keeps(trace) then return end
  local key = markers_name()
  local first = kept.first_rows(trace, "kernels")
  local offset = kept.time_offsets(trace)
  local at = {}
  for i, m in ipairs(list) do at[m.report + 1] = i end
  for r = 1, trace:nreports() do
    local m = at[r] and list[at[r]]
    trace:keep_derived(r - 1, "kernels", key .. ".n", nsl.rep(m and #m.starts or 0, 1))
    if m then
      trace:keep_derived(r - 1, "kernels", key .. ".row", nsl.rep(rows[at[r]] - first[r], 1))
      trace:keep_derived(r - 1, "kernels", key .. ".period", nsl.rep(m.period + 0.0, 1))
      trace:keep_derived(r - 1, "kernels", key .. ".lag", nsl.rep(m.lag, 1))
      trace:keep_derived(r - 1, "kernels", key .. ".starts", kept.on_clock(m.starts, -offset[r]))
    end
  end
end

--- The names under which the column cache keeps each report's step
-- detection (nsl.kept): {candidates = (the NVTX step candidates' prefix),
-- markers = (the marker kernel's prefix)}, each with the current thresholds.
function M.kept_names() return {candidates = candidates_name(), markers = markers_name()} end

function M.detect_kernels(trace)
  local k = trace.kernels
  if #k == 0 then return {} end
  local got = kept_markers(trace)
  if got then return got end
  k:load{"report", "device", "name", "start", "stop"}
  local act = {}   -- each report's active span of kernels (measured once per trace)
  for r, x in pairs(window.report_extents(trace, "kernels")) do act[r] = x[1] and x[3] and x[3] - x[1] end
  local keeps = kept.keeps(trace)
  local t = k:select{"report", "device", "name", "start"}
  if keeps then t = t:with("row", nsl.range(#k)) end   -- (each marker's kernel row, kept)
  t = t:sort("report", "device", "name", "start")
  local g = t:group_by("report", "device", "name")
  local gid, keys = g:ids(), g:keys()
  local gs = nsl.table{{"g", gid}, {"start", t.start}, keeps and {"row", t.row} or nil}
  local base = gs:group_by("g"):agg{"n=count(start)", "first=min(start)", "last=max(start)"}
  local fundamental = {}   -- group id -> {lag, period}
  -- per group and lag: the times from each occurrence to the lag-th next, their count, median and quartiles
  local L = M.max_lag
  local cm, cmed, cq1, cq3 = nsl.lag_periods(gid, t.start, #keys, L, M.kernel_spread)   -- lags up to the first regular one
  local ms, meds, q1s, q3s = cm:totable(), cmed:totable(), cq1:totable(), cq3:totable()
  for id = 0, #keys - 1 do
    for lag = 1, L do
      local i = id * L + lag
      local m, med = ms[i], meds[i]
      if m >= 2 and med > 0 and q3s[i] - q1s[i] <= M.kernel_spread * med then
        fundamental[id] = {lag = lag, period = med}
        break
      end
    end
  end
  local best = {}
  for i = 1, #base do
    local id = base.g[i]
    local f = fundamental[id]
    local r = keys.report[id + 1]
    local cover = base.last[i] - base.first[i]
    if f and (base.n[i] - 1) // f.lag >= M.min_count and cover >= M.kernel_cover * act[r] then
      local b = best[r]
      local better = not b or f.period > b.period or
        (f.period == b.period and (f.lag < b.lag or (f.lag == b.lag and base.first[i] < b.first)))
      if better then
        best[r] = {period = f.period, lag = f.lag, first = base.first[i], device = keys.device[id + 1],
                   name = keys.name[id + 1], g = id}
      end
    end
  end
  local list = {}
  local of_group   -- the rows of each group, in t's order (by start): one grouping for every report's marker
  for r, b in pairs(best) do
    -- a kernel without device or name (NULL: a column the export lacks) marks no step
    if b.device ~= nil and b.name ~= nil then
      of_group = of_group or gs:slices("g")
      local grp = of_group(b.g)
      local starts = grp.start
      local every = nsl.range((#starts - 1) // b.lag + 1) * b.lag   -- occurrences 0, L, 2L, ...
      list[#list + 1] = {report = r, device = b.device, name = b.name, starts = starts:gather(every),
                         period = b.period, lag = b.lag, row = keeps and grp.row[1] or nil}
    end
  end
  table.sort(list, function(a, b) return a.report < b.report end)
  if keeps then
    local rows = {}
    for i, m in ipairs(list) do rows[i], m.row = m.row, nil end
    keep_markers(trace, list, rows)
  end
  return list
end

--- The steps of a JAX trace (see 0. above): it = {mode = "jax", steps =
-- table report, device, iter (1-based per device), start, stop (ns, clocks
-- aligned), dur, program (ProgramId), name, thunks, busy (union of the
-- thunks' GPU time), comm (exposed communication, ns), warm (nsys-jax's
-- warm-up: the first execution of a program compiled in the profile, one
-- more with communication), how}, or nil and a message.
function M.jax_steps(trace, spec)
  local jax = require("nsl.jax")
  local d = jax.load(trace, {programs = "structure"})   -- one program on every device, for the alignment
  local module = d.module
  if #module == 0 then return nil, "no XLA module executions on the GPU" end
  local per = module:group_by("Name", "Device"):agg{"n=count"}:group_by("Name"):agg{"n=max(n)"}
  local tot = module:group_by("Name"):agg{"ms=sum(ProjDurMs)"}:join(per, {"Name"}, {"n"})
  local best, best_ms
  for i = 1, #tot do
    local name = tot.Name[i]
    if (spec and spec ~= "" and name == spec) or
       (not (spec and spec ~= "") and tot.n[i] >= M.min_count and (not best or tot.ms[i] > best_ms)) then
      best, best_ms = name, tot.ms[i]
    end
  end
  if not best then
    if spec and spec ~= "" then return nil, string.format("no XLA program named '%s'", spec) end
    return nil, string.format("no XLA program ran %d times or more on a device", M.min_count)
  end
  local corr = jax.alignment(d.communication)
  local m = module:filter(module.Name:eq(best))
  local shift = jax.per_group(m, {"Device"}, function(k, i)   -- the device's clock correction, ns
    return math.floor((corr and corr[k.Device[i]] or 0) * 1e6 + 0.5)
  end, "int")
  m = m:with("a_start", m.start - shift, "a_stop", m.stop - shift):sort("Device", "start")
  local iter = nsl.cumcount(m:group_by("Device"):ids()) + 1
  -- the thunks of each execution: count, busy time, exposed communication
  local th = d.thunk:join(m:select{"ProgramId", "ProgramExecution", "Device"}:with("x", nsl.range(#m)),
               {"ProgramId", "ProgramExecution", "Device"}, {"x"})
  th = th:filter(~th.x:isnull())
  local g = th:group_by("x")
  local a = g:agg{"thunks=count"}
  local ca = nsl.table{{"x", th.x}, {"c", nsl.where(th.Communication, th.ProjDurMs, 0.0)}}:group_by("x"):agg{"c=sum(c)"}
  a = a:with("busy", nsl.busy_by_group(th.start, th.stop, g:ids(), #a))
  local rows = nsl.table{{"x", nsl.range(#m)}}:join(a, {"x"}, {"thunks", "busy"}):join(ca, {"x"}, {"c"})
  local compiled = jax.compiled_programs(d.compile_parts)
  local threshold = m.ProgramId:isin(compiled):cast("i64") + (#d.communication > 0 and 1 or 0)
  local steps = nsl.table{
    {"report", m.report}, {"device", m.Device}, {"iter", iter}, {"start", m.a_start}, {"stop", m.a_stop},
    {"dur", m.stop - m.start}, {"program", m.ProgramId}, {"name", m.Name},
    {"thunks", nsl.coalesce(rows.thunks, 0)}, {"busy", nsl.coalesce(rows.busy, 0)},
    {"comm", (nsl.coalesce(rows.c, 0.0) * 1e6):cast("i64")}, {"warm", (iter - 1 - threshold):lt(0)}}
  local ndev = #steps:group_by("device"):keys()
  return {mode = "jax", steps = steps, name = best,
          how = string.format("XLA step program '%s': %d executions on %d device%s%s", best, #steps, ndev,
                              ndev == 1 and "" or "s", corr and ", clocks aligned across devices" or "")}
end

local NO_STEPS = "no iterations found: no NVTX range repeats as a step and no kernel repeats with a regular " ..
  "period over the trace; name the step range with --arg range=NAME"

--- How M.find says marker kernels were detected: list of {report, name,
-- device, lag, period, and n (iterations) or starts (M.detect_kernels'
-- markers: n is one less)}, by report.
local function markers_how(list)
  local parts = {}
  for _, m in ipairs(list) do
    parts[#parts + 1] = string.format("report %d: kernel '%s' on device %d%s, %d iterations of %s", m.report,
      m.name, m.device, m.lag > 1 and string.format(" (every %d-th run)", m.lag) or "", m.n or #m.starts - 1,
      require("nsl.report").duration(m.period))
  end
  return "marker kernels detected: " .. table.concat(parts, "; ")
end

--- Finds the iterations of trace: spec (a range name or pattern, or on a
-- JAX trace a program name; "" to detect).  Returns it = M.jax_steps on a
-- JAX trace, else {mode = "range" | "kernel", ranges = (range mode)
-- ranges table, markers = (kernel mode) M.detect_kernels list, how = text},
-- or nil and a message.
function M.find(trace, spec)
  if require("nsl.jax").is_jax(trace) then
    local it, err = M.jax_steps(trace, spec)
    if it or not (spec and spec ~= "") then return it, err end
  end
  if spec and spec ~= "" then
    local r, how = M.by_name(trace, spec)
    if not r then return nil, how end
    return {mode = "range", ranges = r, how = string.format("NVTX ranges matching '%s' (by %s): %d", spec, how, #r)}
  end
  local name, how, r = M.detect_nvtx(trace)
  if name then return {mode = "range", ranges = r, how = how, name = name} end
  local markers = M.detect_kernels(trace)
  if #markers == 0 then return nil, NO_STEPS end
  return {mode = "kernel", markers = markers, how = markers_how(markers)}
end

--- The step of a list of steady steps' durations: the median (integer
-- ns) and the mean; nil without steps.
local function steady_step(steady)
  local d = M.describe(steady)
  if not d then return nil end
  return math.floor(d.median + 0.5), d.mean
end

--- M.steps of the iterations it (M.find's) with warm-up steps per group
-- warmup (-1 or nil: automatic).
local function steps_of(it, warmup)
  if warmup and warmup < 0 then warmup = nil end
  local W, by, jax_warm
  if it.mode == "jax" then   -- the step program's executions, per device (M.jax_steps)
    local st = it.steps:sort("report", "device", "iter")
    local nulls = nsl.column{0}:gather(nsl.rep(-1, #st))
    W = nsl.table{{"report", st.report}, {"pid", nulls}, {"tid", nulls}, {"device", st.device}, {"iter", st.iter},
                  {"start", st.start}, {"stop", st.stop}}
    by, jax_warm = st.device:totable(), st.warm:totable()
  else
    W = M.windows(it):sort("report", "pid", "iter")
    W = W:with("device", nsl.column{0}:gather(nsl.rep(-1, #W)))   -- NULL: not per device
    W = W:select{"report", "pid", "tid", "device", "iter", "start", "stop"}
    by = W.pid:totable()
  end
  local rep, s, e = W.report:totable(), W.start:totable(), W.stop:totable()
  local groups, order, group = {}, {}, {}
  for i = 1, #W do   -- one Lua step per step
    local key = rep[i] .. ":" .. tostring(by[i])
    if not groups[key] then groups[key] = {}; order[#order + 1] = key end
    table.insert(groups[key], i)
    group[i] = key
  end
  local warm, steady, flag, n = {}, {}, {}, 0
  for _, key in ipairs(order) do
    local rows = groups[key]
    local durs = {}
    for k, i in ipairs(rows) do durs[k] = e[i] - s[i] end
    local nw
    if jax_warm and not warmup then
      nw = 0
      for _, i in ipairs(rows) do if jax_warm[i] then nw = nw + 1 end end
    else
      nw = M.warmup(durs, warmup)
    end
    warm[key] = nw
    n = math.max(n, #rows)
    for k, i in ipairs(rows) do
      flag[i] = k <= nw
      if k > nw then steady[#steady + 1] = durs[k] end
    end
  end
  W = W:with("dur", W.stop - W.start, "warm", #flag > 0 and nsl.column(flag) or nsl.column{}:eq(0))
  local step_ns, mean_ns = steady_step(steady)
  return {it = it, how = it.how, windows = W, group = group, groups = groups, order = order, warm = warm,
          steady = steady, n = n, step_ns = step_ns, mean_ns = mean_ns}
end

--- The steps of a trace: the one detection every analysis of a trace uses
-- (iterations, diagnose, ledger, straggler), so that they all work with one step.
-- opts.spec: a range name or pattern, or on a JAX trace a program name (""
-- or nil: detect, M.find); opts.warmup: warm-up steps per group (-1 or nil:
-- automatic -- on a JAX trace nsys-jax's rule, it.steps.warm; else
-- M.warmup); opts.parts: on rank 0 of a distributed run, the tables of
-- M.reduce_steps with windows (the default detection is then made by the
-- processes: M.reduced_find).  Returns nil and a message when there are no
-- steps, else:
--   it         M.find's result (mode "jax", "range" or "kernel", how, ...)
--   windows    one row per step, sorted by report, group, iter: report, pid,
--              tid (NULL for JAX and marker kernels), device (the JAX
--              device, else NULL), iter (1-based per group), start, stop
--              (ns; JAX: projected onto the GPU, clocks aligned), dur
--              (stop - start), warm (boolean: a warm-up step)
--   group      per row of windows its group's key: "report:pid" (ranges),
--              "report:nil" (marker kernels, per report), "report:device"
--              (JAX)
--   groups     {key -> array of the rows of windows (1-based), in order};
--              order: the keys in order of first row
--   warm       {key -> warm-up steps of that group}
--   steady     array of the steady steps' durations (ns), in row order
--   step_ns    the median steady step (integer ns); mean_ns its mean
--   n          the most steps of one group
--   how        text: how the steps were found
-- step_ns is nil when no step is steady (then steady is empty).
function M.steps(trace, opts)
  opts = opts or {}
  local it, err = false, nil
  if opts.parts then it, err = M.reduced_find(trace, opts.parts, opts.spec) end
  if it == false then it, err = M.find(trace, opts.spec) end
  if not it then return nil, err end
  return steps_of(it, opts.warmup)
end

-- ---- a distributed run: steps found where the reports are read ----
--
-- The straggler analysis measures its costs against the median steady
-- step (M.steps' step_ns and how).  Under MPI each process runs the
-- default detection over its own reports (M.reduce_steps, in the
-- straggler's distributed step) and agrees with the others where the
-- detection compares reports: the NVTX names' totals go to rank 0, which
-- orders them for all; a name is the step when every process finds all of
-- its ranges holding GPU work and some process finds one (one agreement
-- per name tried); marker kernels and warm-up steps are per report anyway.
-- Rank 0 receives one row per steady step and per marker report
-- (M.reduced_steps), not the NVTX ranges and kernels; with the windows
-- (diagnose, whose ledger splits each step), one row per step range or
-- marker occurrence too (M.reduced_find).  A JAX trace is read whole on
-- rank 0, as before.

local MODE = {whole = 0, range = 1, kernel = 2, named = 3, none = 4}

-- The columns of the step windows a process sends (M.reduce_steps with
-- windows), all i64 on the wire: steps_ranges (range mode: ranges_table's
-- rows) and steps_starts (kernel mode: each marker's starts).
local RANGE_COLS = {"report", "pid", "tid", "start", "stop", "iter"}

--- The step windows of one process for the wire: ranges (ranges_table's
-- table, or nil) and markers (M.detect_kernels' list, or nil) as the
-- tables steps_ranges and steps_starts.
local function windows_wire(ranges, markers)
  local function i64s(v) return v:cast("i64") end
  local none = nsl.rep(0, 0)
  local rc = {}
  for _, c in ipairs(RANGE_COLS) do rc[#rc + 1] = {c, ranges and i64s(ranges[c]) or none} end
  local rep, st = {none}, {none}
  for _, m in ipairs(markers or {}) do
    rep[#rep + 1], st[#st + 1] = nsl.rep(m.report, #m.starts), i64s(m.starts)
  end
  return nsl.table(rc), nsl.table{{"report", nsl.concat(table.unpack(rep))}, {"start", nsl.concat(table.unpack(st))}}
end

--- The tables of M.reduce_steps: mode (MODE), and for range mode the name,
-- its instances and period; the steady steps' durations; the markers; with
-- windows, the step windows (windows_wire) of ranges or markers.
local function reduced_tables(mode, name, n, med, steady, markers, windows, ranges, by)
  local strings = nsl.column{name or ""}
  local function ints(v) return #v > 0 and nsl.column(v):cast("i64") or nsl.rep(0, 0) end
  local m = {report = {}, device = {}, name = {}, n = {}, period = {}, lag = {}}
  for i, x in ipairs(markers or {}) do
    m.report[i], m.device[i], m.name[i], m.n[i], m.period[i], m.lag[i] =
      x.report, x.device, x.name, #x.starts - 1, x.period + 0.0, x.lag
  end
  local nm = #m.name
  local t = {
    steps_found = nsl.table{{"mode", nsl.rep(MODE[mode], 1)}, {"name", strings}, {"n", nsl.rep(n or 0, 1)},
                            {"med", nsl.rep((med or 0) + 0.0, 1)}, {"by", nsl.column{by or ""}}},
    steps_steady = nsl.table{{"dur", ints(steady or {})}},
    steps_markers = nsl.table{{"report", ints(m.report)}, {"device", ints(m.device)},
                              {"name", nm > 0 and nsl.column(m.name) or strings:gather(nsl.rep(0, 0))},
                              {"n", ints(m.n)}, {"period", nm > 0 and nsl.column(m.period) or nsl.rep(0.0, 0)},
                              {"lag", ints(m.lag)}}}
  if windows then t.steps_ranges, t.steps_starts = windows_wire(ranges, markers) end
  return t
end

--- M.by_name of a distributed run on every process over view (collective):
-- the processes agree whether any range has the name (else the pattern is
-- tried, as M.by_name tries it over every report) and on the count; each
-- keeps the outermost of its ranges.  reduced: M.reduce_steps' maker of
-- its tables.  Mode named (name: spec, n: the ranges over all reports, by:
-- "name" or "pattern", the ranges as windows), or none (by: M.by_name's
-- message).
function M.reduce_by_name(view, spec, reduced)
  local mpi = nsl.mpi
  local ok, d = pcall(function()
    local nv = load_nvtx(view)
    if #nv == 0 then return {n = 0} end
    local name, usable, exact = named(nv, spec)
    return {n = #nv, nv = nv, name = name, usable = usable, mask = exact}
  end)
  if not mpi.all_ok(ok, d) then return reduced("whole") end
  local function total(n) return mpi.allreduce(nsl.column{n}, "sum")[1] end
  if total(d.n) == 0 then return reduced("none", spec, nil, nil, nil, nil, nil, NO_NVTX) end
  local how = "name"
  if total(d.mask and d.mask:count() or 0) == 0 then
    local m = d.name and matching(d.name, d.usable, spec)
    if m then d.mask, how = m, "pattern" end
    -- (one spec: it compiles on every process with ranges, or on none)
    how = mpi.allreduce(nsl.column{how == "pattern" and 1 or 0}, "max")[1] == 1 and "pattern" or "name"
  end
  if total(d.mask and d.mask:count() or 0) == 0 then
    return reduced("none", spec, nil, nil, nil, nil, nil, none_named(spec))
  end
  local r
  ok, r = pcall(function() return d.mask and outermost(d.nv, d.mask) end)
  if not mpi.all_ok(ok, r) then return reduced("whole") end
  return reduced("named", spec, total(r and #r or 0), nil, nil, nil, r, how)
end

--- The step detection of a distributed run on every process, over view
-- (its reports; collective: see above).  Returns the tables the straggler
-- step sends: steps_found, steps_steady, steps_markers (M.reduced_steps
-- reads them on rank 0); with opts.windows also steps_ranges and
-- steps_starts, the windows of the steps (M.reduced_find).
function M.reduce_steps(view, opts)
  local mpi = nsl.mpi
  local w = opts and opts.windows
  local function reduced(mode, name, n, med, steady, markers, ranges, by)   -- (every process sends the same names)
    return reduced_tables(mode, name, n, med, steady, markers, w, ranges, by)
  end
  local spec = opts and opts.spec or ""
  local ok, d = pcall(function()
    if require("nsl.jax").is_jax(view) then return "jax" end
    if spec ~= "" then return false end
    return nvtx_candidates(view) or false
  end)
  if not mpi.all_ok(ok, d) then return reduced("whole") end
  if not mpi.agree(d ~= "jax") then return reduced("whole") end   -- JAX steps align devices: rank 0 reads all
  if spec ~= "" then return M.reduce_by_name(view, spec, reduced) end
  -- the names' totals on rank 0, which orders them for every process
  local names, nn, nmed = {}, {}, {}
  for name, e in pairs(d and d.totals or {}) do names[#names + 1], nn[#nn + 1], nmed[#nmed + 1] = name, e.n, e.med end
  local tot = #names > 0 and nsl.table{{"name", nsl.column(names)}, {"n", nsl.column(nn):cast("i64")},
                                       {"med", nsl.column(nmed):cast("f64")}} or nil
  local got, err = mpi.gather(tot, 0)
  if not mpi.all_ok(got ~= nil, err) then return reduced("whole") end
  local cands
  if type(got) == "table" then
    local totals = {}
    for _, t in ipairs(got) do
      for i = 1, t and #t or 0 do add_total(totals, t.name[i], t.n[i], t.med[i]) end
    end
    local list = ordered(totals)
    local cn, cc, cm = {}, {}, {}
    for i, c in ipairs(list) do cn[i], cc[i], cm[i] = c.label, c.n, c.med end
    cands = nsl.table{{"name", nsl.column(#cn > 0 and cn or {""})}, {"n", nsl.column(#cc > 0 and cc or {0})},
                      {"med", nsl.column(#cm > 0 and cm or {0.0}):cast("f64")}}
    if #cn == 0 then cands = cands:head(0) end
  end
  cands, err = mpi.bcast_table(cands)
  if not mpi.all_ok(cands ~= nil, err) then return reduced("whole") end
  -- the first name whose every range holds work, as one process finds it over all reports
  local cache = {}
  for i = 1, #cands do
    local name = cands.name[i]
    local hok, r, held, any = pcall(function()
      if not d then return nil, 0, false end   -- no ranges here
      return holding(view, d, name, cache)
    end)
    if not mpi.all_ok(hok, r) then return reduced("whole") end
    local every = mpi.agree(held == (r and #r or 0))
    local none = mpi.agree(not any)
    if every and not none then
      return reduced("range", name, cands.n[i], cands.med[i], r and steps_of({mode = "range", ranges = r}).steady,
                     nil, r)
    end
  end
  -- no step name: marker kernels, per report
  local markers = M.detect_kernels(view)
  local st = steps_of({mode = "kernel", markers = markers})
  return reduced("kernel", nil, nil, nil, st.steady, markers)
end

--- The collective part of the iterations analysis's distributed form, on
-- every process over view (its reports): the steps found together
-- (M.reduce_steps with the windows, for the range args.range names or the
-- detection), then each process's per-iteration figures over its own
-- operations (M.ops, M.metrics: tables iter_w and iter_class, one row per
-- iteration and per iteration and class) and its span (table iter_span), with
-- iter_form's mode 0.  Mode 1 where rank 0 measures over the whole trace
-- instead: nsys-jax steps (they align devices), no steps in any report (rank
-- 0 then fails as one process does), a class map that does not load (its
-- message is rank 0's).
function M.reduce_iterations(view, args)
  local mpi = nsl.mpi
  local t = M.reduce_steps(view, {windows = true, spec = args.range})
  local function form(mode) t.iter_form = nsl.table{{"mode", nsl.rep(mode, 1)}}; return t end
  local f = t.steps_found
  local mode = f.mode[1]
  if mode == MODE.whole or mode == MODE.none then return form(1) end   -- (the same on every process)
  local map = classes.default_map()
  if args.map ~= "" then
    local ok, m = pcall(classes.load, args.map, args.model ~= "" and args.model or nil)
    map = ok and m or nil
  end
  if not mpi.agree(map ~= nil) then return form(1) end
  local ok, res = pcall(function()
    local it = M.reduced_find(view, t, args.range)
    if not it then   -- (no marker kernel in these reports: no iteration here)
      if mode == MODE.kernel then it = {mode = "kernel", markers = {}} else return false end
    end
    local w, per_class = M.metrics(it, M.ops(view, it, map))
    return {w, per_class, distributed.span_table(view)}
  end)
  if not mpi.all_ok(ok, res) then return form(1) end
  if not mpi.agree(res ~= false) then return form(1) end
  t.iter_w, t.iter_class, t.iter_span = res[1], res[2], res[3]
  return form(0)
end

--- On rank 0 of a distributed run: the steps as M.steps(trace) finds them,
-- from the tables M.reduce_steps made on every process (parts, gathered
-- in report order) -- {how, steady, step_ns, mean_ns} -- or nil and why
-- when there are none; false when the detection needs the whole trace.
function M.reduced_steps(parts)
  local f = parts.steps_found
  if not f or #f == 0 or f.mode[1] == MODE.whole or f.mode[1] == MODE.named or f.mode[1] == MODE.none then
    return false
  end
  local how
  if f.mode[1] == MODE.range then
    how = nvtx_how(f.name[1], f.n[1], f.med[1])
  else
    local m = parts.steps_markers
    if #m == 0 then return nil, NO_STEPS end
    local list = {}
    for i = 1, #m do
      list[i] = {report = m.report[i], name = m.name[i], device = m.device[i], lag = m.lag[i], n = m.n[i],
                 period = m.period[i]}
    end
    how = markers_how(list)
  end
  local steady = parts.steps_steady.dur:totable()
  local step_ns, mean_ns = steady_step(steady)
  return {how = how, steady = steady, step_ns = step_ns, mean_ns = mean_ns}
end

--- On rank 0 of a distributed run: M.find(trace, spec) from the tables
-- M.reduce_steps(view, {windows = true, spec = spec}) made on every process
-- (parts) -- it; nil and why when there are no steps (or no range named
-- spec); false when the detection needs the whole trace (JAX), or parts
-- lack the windows or are of another spec.  The ranges get the column types
-- trace's NVTX ranges have, as M.find's.
function M.reduced_find(trace, parts, spec)
  spec = spec or ""
  local f, r = parts.steps_found, parts.steps_ranges
  if not f or #f == 0 or f.mode[1] == MODE.whole or not r or not parts.steps_starts then return false end
  local named = f.mode[1] == MODE.named or f.mode[1] == MODE.none
  if named ~= (spec ~= "") or (named and f.name[1] ~= spec) then return false end
  if f.mode[1] == MODE.none then return nil, f.by[1] end
  if f.mode[1] == MODE.range or named then
    local cols = {}
    for _, c in ipairs(RANGE_COLS) do
      local ty = c ~= "iter" and trace.nvtx:coltype(c) or "i64"
      cols[#cols + 1] = {c, ty and ty ~= "i64" and r[c]:cast(ty) or r[c]}
    end
    if named then   -- (as M.find says it of M.by_name's ranges)
      return {mode = "range", ranges = nsl.table(cols),
              how = string.format("NVTX ranges matching '%s' (by %s): %d", spec, f.by[1], f.n[1])}
    end
    local name = f.name[1]
    return {mode = "range", ranges = nsl.table(cols), how = nvtx_how(name, f.n[1], f.med[1]), name = name}
  end
  local m = parts.steps_markers
  if #m == 0 then return nil, NO_STEPS end
  local starts_of = parts.steps_starts:slices("report")
  local markers = {}
  for i = 1, #m do
    markers[i] = {report = m.report[i], device = m.device[i], name = m.name[i], starts = starts_of(m.report[i]).start,
                  period = m.period[i], lag = m.lag[i]}
  end
  return {mode = "kernel", markers = markers, how = markers_how(markers)}
end

--- The GPU operations of trace with their class (nsl.classes' built-in map
-- unless map is given), a kernel flag, bytes (memcpy and memset), and the
-- iteration each belongs to: a table with report, pid, device, start, stop,
-- dur, name, memop, class, kernel (1/0), memcpy (1/0), memset (1/0),
-- memcpy_bytes, iter (1-based per process in range mode, per report in
-- kernel mode; NULL outside iterations).
function M.ops(trace, it, map)
  local ops = gpu_ops.table(trace, {columns = {"report", "pid", "device", "start", "stop", "dur"}, names = "demangled",
                                    memop = true, api = true})
  local k, mc, ms = #trace.kernels, #trace.memcpy, #trace.memset
  trace.memcpy:load{"bytes"}
  local cls = classes.classify_column(ops.name, map or classes.default_map())
  -- which rows are kernels, copies and memsets (summed per iteration): one byte a row, from the operations'
  -- order (the kernels, then the copies, then the memsets)
  local memset = nsl.range(#ops):ge(k + mc)
  local t = ops:select{"report", "pid", "device", "start", "stop", "dur", "name", "memop"}:with(
    "class", cls,
    "kernel", ~ops.memop,
    "memcpy", ops.memop & ~memset,
    "memset", memset,
    "memcpy_bytes", nsl.concat(nsl.rep(0, k), trace.memcpy.bytes, nsl.rep(0, ms)))
  -- the window of marker m each start lies in: the occurrences at or before it, after the first and before the
  -- last (NULL outside)
  local function window_of(m, starts)
    local j = m.starts:searchsorted(starts, true)
    local inside = j:ge(1) & j:le(#m.starts - 1)
    return j:gather(nsl.where(inside, nsl.range(#starts), -1))
  end
  local iter
  if it.mode == "range" then
    iter = steps.assign(nsl.table{{"report", ops.report}, {"pid", ops.pid},
                                  {"launch", steps.launch_times(trace, ops, ops.api)}}, it.ranges)
  elseif #it.markers == 1 and trace:nreports() == 1 then   -- (one report: its marker reads every row, in order)
    iter = window_of(it.markers[1], ops.start)
  else   -- by GPU start time within the report's marker windows
    -- a marker reads its own report's rows alone (t:slices: O(operations + markers), not their product over a
    -- job of many reports)
    local of_report = nsl.table{{"report", ops.report}, {"row", nsl.range(#ops)}}:slices("report")
    local idx, vals, marked = {}, {}, {}
    for _, m in ipairs(it.markers) do
      marked[#marked + 1] = m.report
      local rows = of_report(m.report).row
      vals[#vals + 1] = window_of(m, ops.start:gather(rows))
      idx[#idx + 1] = rows
    end
    local rest = (~ops.report:isin(marked)):indices()   -- reports without a marker: no iteration
    idx[#idx + 1] = rest
    vals[#vals + 1] = nsl.column{0}:gather(nsl.rep(-1, #rest))
    iter = nsl.concat(table.unpack(vals)):gather(nsl.concat(table.unpack(idx)):argsort())
  end
  return t:with("iter", iter)
end

--- The iteration windows of `it` as a table: report, pid (NULL in kernel
-- mode), tid (likewise), iter, start, stop (the range, or the window from a
-- marker occurrence to the next).
function M.windows(it)
  if it.mode == "range" then
    return it.ranges:select{"report", "pid", "tid", "iter", "start", "stop"}
  end
  local cols = {report = {}, iter = {}, start = {}, stop = {}}
  for _, m in ipairs(it.markers) do
    local s = m.starts:totable()
    for k = 1, #s - 1 do   -- one Lua step per iteration
      local i = #cols.iter + 1
      cols.report[i], cols.iter[i], cols.start[i], cols.stop[i] = m.report, k, s[k], s[k + 1]
    end
  end
  local function col(v) return #v > 0 and nsl.column(v) or nsl.column{} end
  local nulls = nsl.column{0}:gather(nsl.rep(-1, #cols.iter))
  return nsl.table{{"report", col(cols.report)}, {"pid", nulls}, {"tid", nulls}, {"iter", col(cols.iter)},
                   {"start", col(cols.start)}, {"stop", col(cols.stop)}}
end

--- The key columns of an iteration: (report, pid, iter) for ranges,
-- (report, iter) for kernel markers.
function M.keys(it) return it.mode == "range" and {"report", "pid", "iter"} or {"report", "iter"} end

--- Per-iteration figures: the windows (M.windows) with gpu_start, gpu_stop
-- (first start and last end of the iteration's GPU work), gpu_busy (length
-- of the union of its operations), kernels, memcpy, memcpy_bytes, memset
-- (counts; 0 without work); and the time per class as a second table: the
-- keys, class, time (sum of durations), count.
function M.metrics(it, ops)
  local keys = M.keys(it)
  local W = M.windows(it)
  -- every operation grouped, those outside the iterations (NULL iter) in groups of their own that are then
  -- dropped: the groups keep their order (first appearance), and no copy of every column of the operations
  -- is made to leave those rows out
  local g = ops:group_by(table.unpack(keys))
  local a = g:agg{"gpu_start=min(start)", "gpu_stop=max(stop)", "kernels=sum(kernel)", "memcpy=sum(memcpy)",
                  "memcpy_bytes=sum(memcpy_bytes)", "memset=sum(memset)"}
  a = a:with("gpu_busy", nsl.busy_by_group(ops.start, ops.stop, g:ids(), #a))
  local function steps_only(t)
    local real = ~t.iter:isnull()
    return real:count() < #t and t:filter(real) or t
  end
  a = steps_only(a)
  local w = W:join(a, keys, {"gpu_start", "gpu_stop", "gpu_busy", "kernels", "memcpy", "memcpy_bytes", "memset"})
  for _, c in ipairs{"gpu_busy", "kernels", "memcpy", "memcpy_bytes", "memset"} do
    w = w:with(c, nsl.coalesce(w[c], 0))
  end
  local ckeys = {table.unpack(keys)}
  ckeys[#ckeys + 1] = "class"
  local per_class = steps_only(ops:group_by(table.unpack(ckeys)):agg{"time=sum(dur)", "count=count"})
  return w, per_class
end

--- Which iterations are warm-up (see the analysis): with warmup >= 0 the
-- first `warmup`; else (automatic) the first one when there are at least 3,
-- and then every following one slower than 1.2 x the median of those after
-- it, at most half of them.  durs: array in iteration order; returns the
-- number of warm-up iterations.
function M.warmup(durs, warmup)
  local n = #durs
  if warmup and warmup >= 0 then return math.min(warmup, n) end
  if n < 3 then return 0 end
  local k = 1
  while k < n // 2 do
    local rest = {}
    for i = k + 2, n do rest[#rest + 1] = durs[i] end
    table.sort(rest)
    local m = #rest % 2 == 1 and rest[(#rest + 1) // 2] or (rest[#rest // 2] + rest[#rest // 2 + 1]) / 2
    if durs[k + 1] > 1.2 * m then k = k + 1 else break end
  end
  return k
end

--- Median, mean, sample std, min, max of an array of numbers (nil when empty).
function M.describe(v)
  local n = #v
  if n == 0 then return nil end
  local s = {}
  local sum = 0
  for i, x in ipairs(v) do s[i] = x; sum = sum + x end
  table.sort(s)
  local mean = sum / n
  local ss = 0
  for _, x in ipairs(v) do ss = ss + (x - mean) ^ 2 end
  local med = n % 2 == 1 and s[(n + 1) // 2] or (s[n // 2] + s[n // 2 + 1]) / 2
  return {n = n, median = med, mean = mean, std = n > 1 and math.sqrt(ss / (n - 1)) or 0.0, min = s[1], max = s[n]}
end

--- The steady state of each process (each report for kernel markers) of
-- windows w (M.metrics, sorted by M.keys) under steps (M.steps: its warm-up
-- counts): {groups (key "report:pid" -> {report, pid, rows = row numbers
-- of w, in iteration order}), order (the keys in order of first row), warm
-- ("yes" or "" per row of w), st (per group, columns as Lua lists: report,
-- pid (-1 none), n, warm, steady, med, mean, std, min, max (-1 without
-- steady steps), busy (median GPU busy % of the steady steps)), and per row
-- of w as Lua lists: dur, gs and ge (its GPU work's first start and last
-- stop)}.
function M.steady_state(w, steps)
  local rep, pid, dur = w.report:totable(), w.pid:totable(), (w.stop - w.start):totable()
  local busy, gs, ge = w.gpu_busy:totable(), w.gpu_start:totable(), w.gpu_stop:totable()
  local warm, groups, order = {}, {}, {}
  for i = 1, #w do
    local key = rep[i] .. ":" .. tostring(pid[i])
    if not groups[key] then
      groups[key] = {report = rep[i], pid = pid[i], rows = {}}
      order[#order + 1] = key
    end
    table.insert(groups[key].rows, i)
  end
  local st = {report = {}, pid = {}, n = {}, warm = {}, steady = {}, med = {}, mean = {}, std = {}, min = {},
              max = {}, busy = {}}
  for _, key in ipairs(order) do
    local gr = groups[key]
    local durs = {}
    for k, i in ipairs(gr.rows) do durs[k] = dur[i] end
    local nw = steps.warm[key]
    local steady, pct = {}, {}
    for k, i in ipairs(gr.rows) do
      warm[i] = k <= nw and "yes" or ""
      if k > nw then
        steady[#steady + 1] = durs[k]
        if gs[i] and ge[i] > gs[i] then pct[#pct + 1] = busy[i] * 100.0 / (ge[i] - gs[i]) end
      end
    end
    local d = M.describe(steady)
    local j = #st.report + 1
    st.report[j], st.pid[j], st.n[j], st.warm[j], st.steady[j] = gr.report, gr.pid or -1, #durs, nw, #steady
    st.med[j], st.mean[j], st.std[j] = d and d.median or -1, d and d.mean or -1, d and d.std or -1
    st.min[j], st.max[j] = d and d.min or -1, d and d.max or -1
    local b = M.describe(pct)
    st.busy[j] = b and b.median or -1.0
  end
  return {groups = groups, order = order, warm = warm, st = st, dur = dur, gs = gs, ge = ge}
end

--- GPU time per class and window of w (M.metrics' per_class, joined on
-- keys), for the classes of map present, in the map's order: a list of
-- {class, column of ns per row of w}.
function M.class_time(w, per_class, map, keys)
  local present = {}
  for _, c in ipairs(per_class.class:totable()) do present[c] = true end
  local class_time = {}   -- {class, column} in the map's order, for the figure
  for _, c in ipairs(map:classes()) do
    if present[c] then
      local one = per_class:filter(per_class.class:eq(c))
      local j = w:select(keys):join(one, keys, {"time"})
      class_time[#class_time + 1] = {c, nsl.coalesce(j.time, 0)}
      present[c] = nil
    end
  end
  return class_time
end

return M
