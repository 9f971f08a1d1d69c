-- nsl.overlap -- how compute, NCCL communication and memory transfers
-- overlap on each GPU: the interval sets of the overlap analysis, measured
-- over windows of every device at once (lanes batching, whole columns).
--
-- Per group of operations (a device: report, device), from the union of
-- the operations' intervals:
--   C  compute: kernels that are not NCCL's   N  NCCL kernels   M  memcpy and memset
--   compute_only = |C - N|   nccl_only = |N - C|   both = |C n N|   kernels = |C u N|
--   memory_only = |M - (C u N)|   all = |C u N u M| (busy)   nccl = |N|
-- each measured within a window [lo, hi) of the group (its span, an
-- iteration's projected range, ...).
local nsl = require("nsl")
local lanes = require("nsl.lanes")
local nccl = require("nsl.nccl")
local steps = require("nsl.steps")
local gpu_ops = require("nsl.gpu_ops")

local M = {}

--- The sets above, names in M.keys order.
M.keys = {"compute_only", "nccl_only", "both", "kernels", "memory_only", "all", "nccl"}

--- The NCCL kernels among GPU operations ops (nsl.gpu_ops): a mask.
function M.nccl_mask(ops) return nccl.mask(ops.name) & ~ops.memop end

-- The sets of M.keys from the unions they are made of: C, N, K (C u N), Mem, A (all).
local made_of = {
  compute_only = function(u) return u.C:subtract(u.N) end, nccl_only = function(u) return u.N:subtract(u.C) end,
  both = function(u) return u.C:intersect(u.N) end, kernels = function(u) return u.K end,
  memory_only = function(u) return u.Mem:subtract(u.K) end, all = function(u) return u.A end,
  nccl = function(u) return u.N end,
}

-- Interval sets `keys` (M.keys by default) of every group of a batch at once, on the lanes axis: s, e the
-- shifted times, sel the rows of the batch, order() the rows by group and start (the order of s within a
-- batch: its groups' lanes follow each other), which every union shares instead of sorting its rows.  Each
-- union is built when a set first needs it.
local function sets_of(ops, s, e, sel, is_nccl, keys, order)
  local kern
  local function kernels() kern = kern or (sel & ~ops.memop); return kern end
  local masks = {C = function() return kernels() & ~is_nccl end, N = function() return kernels() & is_nccl end,
                 K = kernels, Mem = function() return sel & ops.memop end, A = function() return sel end}
  local u = setmetatable({}, {__index = function(t, name)
    local set = nsl.intervals(s, e, masks[name](), order())
    rawset(t, name, set)
    return set
  end})
  local sets = {}
  for _, k in ipairs(keys or M.keys) do sets[k] = made_of[k](u) end
  return sets
end

--- overlap.measure(ops, is_nccl, gid, ngroups, windows [, keys]) -> results.
-- ops: GPU operations (start, stop, memop, as nsl.gpu_ops); is_nccl: a
-- mask of its NCCL kernels; gid: the group of each operation (i64, 0-based,
-- < ngroups); windows: an array of window sets, each {gid =, lo =, hi =}
-- (columns: the group of each window and its bounds).  Returns one result
-- per window set: {key = i64 column} for every key of M.keys, one value per
-- window in the set's row order; keys (a list of M.keys): those alone, and
-- only the unions they are made of are built.  The sets are built once per
-- batch of groups and measured over every window set.
function M.measure(ops, is_nccl, gid, ngroups, windows, keys)
  keys = keys or M.keys
  -- the axis spans the windows too: a window reaching before the first operation would shift into the lane of
  -- the group before its own (and one of damaged times, past either end, would wrap around)
  local pairs_ = {ops.start, ops.stop}
  for _, win in ipairs(windows) do pairs_[#pairs_ + 1], pairs_[#pairs_ + 2] = win.lo, win.hi end
  local plan = lanes.plan(ngroups, lanes.bounds(table.unpack(pairs_)))
  local ord
  local function order()   -- (made once, for the first union)
    ord = ord or nsl.table{{"g", gid}, {"s", ops.start}}:order("g", "s")
    return ord
  end
  local parts = {}
  for w = 1, #windows do parts[w] = {} end
  for _, b in ipairs(plan.batches) do
    local sel = lanes.rows(b, gid)
    local s, e = lanes.shift(plan, b, ops.start, gid), lanes.shift(plan, b, ops.stop, gid)
    local sets = sets_of(ops, s, e, sel, is_nccl, keys, order)
    for w, win in ipairs(windows) do
      local rows = lanes.rows(b, win.gid):indices()
      local wg = win.gid:gather(rows)
      local lo, hi = lanes.shift(plan, b, win.lo:gather(rows), wg), lanes.shift(plan, b, win.hi:gather(rows), wg)
      local m = {}
      for _, k in ipairs(keys) do m[k] = sets[k]:coverage(lo, hi) end
      parts[w][#parts[w] + 1] = {rows = rows, m = m}
    end
  end
  local results = {}
  for w = 1, #windows do
    local r = {}
    for _, k in ipairs(keys) do
      local p = {}
      for i, part in ipairs(parts[w]) do p[i] = {rows = part.rows, values = part.m[k]} end
      r[k] = #p > 0 and lanes.assemble(p) or nsl.column{}
    end
    results[w] = r
  end
  return results
end

--- overlap.per_device(ops [, is_nccl]) -> nsl table, one row per device
-- (report, device) with GPU operations, in report and device order;
-- operations without a device id are left out.  Columns: report, device,
-- start, stop (first start, last end), span, busy (|C u N u M|), idle
-- (span - busy), compute_only, nccl_only, both, neither (span - |C u N|),
-- memory_only, nccl (|N|).  is_nccl defaults to M.nccl_mask(ops).
function M.per_device(ops, is_nccl)
  is_nccl = is_nccl or M.nccl_mask(ops)
  local g = ops:group_by("report", "device")
  local dev = g:agg{"lo=min(start)", "hi=max(stop)"}
  local m = #dev > 0 and M.measure(ops, is_nccl, g:ids(), #dev, {{gid = nsl.range(#dev), lo = dev.lo, hi = dev.hi}})[1]
  if not m then
    m = {}
    for _, k in ipairs(M.keys) do m[k] = nsl.column{} end
  end
  local span = dev.hi - dev.lo
  local t = nsl.table{{"report", dev.report}, {"device", dev.device}, {"start", dev.lo}, {"stop", dev.hi},
    {"span", span}, {"busy", m.all}, {"idle", span - m.all}, {"compute_only", m.compute_only},
    {"nccl_only", m.nccl_only}, {"both", m.both}, {"neither", span - m.kernels}, {"memory_only", m.memory_only},
    {"nccl", m.nccl}}
  return t:filter(~t.device:isnull()):sort("report", "device")
end


-- ---- the overlap analysis's tables ---------------------------------------------------

local function pct_column(part, whole)
  local w = whole:cast("f64")
  local nz = whole:gt(0)
  return (part * 100.0) / (w + (~nz):cast("f64")) * nz:cast("f64")
end

local function pct1(part, whole) return whole > 0 and part * 100.0 / whole or 0.0 end

--- overlap.devices(trace, ops, iteration) -> the sets of each device
-- (report, device) of ops (nsl.gpu_ops.table with names and memop), over
-- its span and, with iteration (an NVTX range's name; "" none), over each
-- iteration's window: {dev (per device group: report, device, lo, hi),
-- order, gid, ng, win (per device and iteration: gid, iter, lo, hi, ksum:
-- compute kernel time), measured (M.measure of the spans, then of the
-- windows), report_names}.
function M.devices(trace, ops, iteration)
  local is_nccl = M.nccl_mask(ops)
  local report_names = trace.reports.name:totable()

  -- devices: groups of (report, device), in report and device order
  local g = ops:group_by("report", "device")
  local dev = g:agg{"lo=min(start)", "hi=max(stop)"}
  local order = dev:with("gid", nsl.range(#dev)):sort("report", "device")
  local gid = g:ids()
  local ng = #dev

  -- iteration windows per (device, iteration): first start, last end, compute kernel time
  local win
  if iteration ~= "" then
    local iter = steps.attribute(trace, ops, iteration)
    local compute_dur = ops.dur * (~ops.memop & ~is_nccl):cast("i64")
    local t = nsl.table{{"gid", gid}, {"iter", iter}, {"start", ops.start}, {"stop", ops.stop}, {"cdur", compute_dur}}
    win = t:filter(~iter:isnull()):group_by("gid", "iter")
           :agg{"lo=min(start)", "hi=max(stop)", "ksum=sum(cdur)"}:sort("gid", "iter")
  end

  -- every set measured over each device's span and each window
  local windows = {{gid = nsl.range(ng), lo = dev.lo, hi = dev.hi}}
  if win then windows[2] = {gid = win.gid, lo = win.lo, hi = win.hi} end
  local measured = M.measure(ops, is_nccl, gid, ng, windows)

  return {dev = dev, order = order, gid = gid, ng = ng, win = win, measured = measured, report_names = report_names}
end

--- The overlap analysis's measures of trace's devices (M.devices) for a
-- distributed run (nsl.distributed): each process measures its own devices
-- and windows, rank 0 puts them together (M.merged).  ov_dev: per device
-- (report, device, lo, hi, lgid: its group here, and M.keys over its
-- span); ov_win: per device and iteration (report and lgid of its device,
-- iter, lo, hi, ksum, and M.keys over the window); ov_found: whether this
-- process's reports have a range named iteration (a process without one
-- measures no window; where none has, rank 0 fails as one process does).
function M.reduce(trace, iteration)
  local cols = iteration == "" and {"report", "device", "start", "stop"}
               or {"report", "pid", "device", "corr", "start", "stop", "dur"}
  local ops = gpu_ops.table(trace, {columns = cols, names = "short", memop = true})
  -- (whether the range is here, operations or not: where one process has it, the whole trace has it)
  local found = iteration ~= "" and steps.has_range(trace, iteration)
  local S = M.devices(trace, ops, found and #ops > 0 and iteration or "")
  local dev = S.dev:select{"report", "device", "lo", "hi"}:with("report", S.dev.report:cast("i64"),
                                                                "lgid", nsl.range(S.ng))
  for _, k in ipairs(M.keys) do dev = dev:with("m_" .. k, S.measured[1][k]) end
  local win = S.win
  if win then
    win = nsl.table{{"report", dev.report:gather(win.gid)}, {"lgid", win.gid:cast("i64")}, {"iter", win.iter:cast("i64")},
                    {"lo", win.lo}, {"hi", win.hi}, {"ksum", win.ksum}}
    for _, k in ipairs(M.keys) do win = win:with("m_" .. k, S.measured[2][k]) end
  else
    local z = nsl.rep(0, 0)
    win = nsl.table{{"report", z}, {"lgid", z}, {"iter", z}, {"lo", z}, {"hi", z}, {"ksum", z}}
    for _, k in ipairs(M.keys) do win = win:with("m_" .. k, z) end
  end
  return {ov_dev = dev, ov_win = win, ov_found = nsl.table{{"found", nsl.rep(found and 1 or 0, 1)}}}
end

--- M.devices' result from the processes' M.reduce tables gathered (parts):
-- their devices and windows numbered again in order, as M.device_table and
-- M.iteration_tables read them (both order by report and device).  Fails
-- as one process does when iteration names a range no report has.
function M.merged(trace, parts, iteration)
  if iteration ~= "" and (parts.ov_found.found:sum() or 0) == 0 then steps.no_range(trace, iteration) end
  local dev = parts.ov_dev
  local ng = #dev
  local m1 = {}
  for _, k in ipairs(M.keys) do m1[k] = dev["m_" .. k] end
  local S = {dev = dev, ng = ng, order = dev:with("gid", nsl.range(ng)):sort("report", "device"),
             report_names = trace.reports.name:totable(), measured = {m1}}
  if iteration ~= "" then
    local w = parts.ov_win
    w = w:with("gid", w:join(dev:select{"report", "lgid"}:with("gid", nsl.range(ng)), {"report", "lgid"}, {"gid"}).gid)
    w = w:sort("gid", "iter")
    S.win = w
    local m2 = {}
    for _, k in ipairs(M.keys) do m2[k] = w["m_" .. k] end
    S.measured[2] = m2
  end
  return S
end

--- overlap.device_table(S) -> the overlap analysis's table per device of
-- S (M.devices; a row "all" of sums when there are several), and each
-- device's span split into the sets (report, device, compute, nccl, both,
-- memory, idle), for the figure.  Fails when no operation has a device.
function M.device_table(S)
  local dev, order, ng, measured, report_names = S.dev, S.order, S.ng, S.measured, S.report_names
  -- per device
  local span = dev.hi - dev.lo
  local m = measured[1]
  local neither, idle = span - m.kernels, span - m.all
  local names = dev.report:map(function(r) return report_names[r + 1] end)
  local t = nsl.table{{"Report", names}, {"Device", dev.device}, {"Span (ns)", span},
    {"Compute Only (ns)", m.compute_only}, {"NCCL Only (ns)", m.nccl_only}, {"Both (ns)", m.both},
    {"Neither (ns)", neither}, {"Memory Only (ns)", m.memory_only}, {"Idle (ns)", idle},
    {"Compute Only (%)", pct_column(m.compute_only, span)}, {"NCCL Only (%)", pct_column(m.nccl_only, span)},
    {"Both (%)", pct_column(m.both, span)}, {"Neither (%)", pct_column(neither, span)}, {"NCCL Hidden (%)", pct_column(m.both, m.nccl)},
    {"gid", nsl.range(ng)}}
  t = t:take(order.gid):filter(~order.device:isnull())
  if #t == 0 then nsl.fail("no GPU operation has a device id") end
  local sets = nsl.table{{"report", dev.report}, {"device", dev.device}, {"compute", m.compute_only},
    {"nccl", m.nccl_only}, {"both", m.both}, {"memory", m.memory_only}, {"idle", idle}}
  sets = sets:take(order.gid):filter(~order.device:isnull())
  if #t > 1 then   -- the whole trace: sums over devices
    local sum = {}
    for _, c in ipairs{"Span (ns)", "Compute Only (ns)", "NCCL Only (ns)", "Both (ns)", "Neither (ns)",
                       "Memory Only (ns)", "Idle (ns)"} do
      sum[c] = t[c]:sum()
    end
    local both, nccl_all = sum["Both (ns)"], sum["Both (ns)"] + sum["NCCL Only (ns)"]
    local row = {["Report"] = nsl.column{"all"}, ["Device"] = t.Device:gather(nsl.column{-1}),
                 ["NCCL Hidden (%)"] = nsl.column{pct1(both, nccl_all)}, ["gid"] = nsl.column{-1}}
    for c, v in pairs(sum) do row[c] = nsl.column{v} end
    for _, c in ipairs{"Compute Only", "NCCL Only", "Both", "Neither"} do
      row[c .. " (%)"] = nsl.column{pct1(sum[c .. " (ns)"], sum["Span (ns)"])}
    end
    local cols = {}
    for _, c in ipairs(t:columns()) do cols[#cols + 1] = {c, nsl.concat(t[c], row[c])} end
    t = nsl.table(cols)
  end
  local shown = {}
  for _, c in ipairs(t:columns()) do if c ~= "gid" then shown[#shown + 1] = c end end
  return t:select(shown), sets
end

--- overlap.iteration_tables(S) -> the GPU Performance Analyzer's summary of
-- the iterations of S (M.devices with an iteration; its windows not empty),
-- per device and over all, and the overlap per iteration and device.
function M.iteration_tables(S)
  local dev, win, measured, report_names = S.dev, S.win, S.measured, S.report_names
  local w = measured[2]
  local len = win.hi - win.lo
  local wdev = win.gid   -- rows of dev by group id
  local it = nsl.table{{"iter", win.iter}, {"report", dev.report:gather(wdev)}, {"device", dev.device:gather(wdev)},
    {"window", len}, {"co", w.compute_only}, {"no", w.nccl_only}, {"both", w.both}, {"neither", len - w.kernels},
    {"mo", w.memory_only}, {"bubble", len - w.all}, {"ksum", win.ksum}, {"est", len - win.ksum}}
  it = it:filter(~it.device:isnull())

  -- the GPU Performance Analyzer's summary, per device and over all
  local s = it:group_by("report", "device"):agg{"n=count", "w=sum(window)", "k=sum(ksum)", "no=sum(no)",
                                                "mo=sum(mo)", "idle=sum(bubble)"}:sort("report", "device")
  local function summary(rep, device, n, wsum, ksum, no, mo, idle)
    return {rep, device, n, wsum / n, ksum / n, (wsum - ksum) / n, (wsum - ksum) * 100.0 / wsum, no / n, mo / n,
            idle / n}
  end
  local srows = {}
  local sn, sw, sk, sno, smo, sidle = s.n:totable(), s.w:totable(), s.k:totable(), s.no:totable(), s.mo:totable(),
                                      s.idle:totable()
  local srep, sdev = s.report:totable(), s.device:totable()
  local tot = {0, 0, 0, 0, 0, 0}
  for i = 1, #s do
    srows[i] = summary(report_names[srep[i] + 1], sdev[i], sn[i], sw[i], sk[i], sno[i], smo[i], sidle[i])
    for j, v in ipairs{sn[i], sw[i], sk[i], sno[i], smo[i], sidle[i]} do tot[j] = tot[j] + v end
  end
  if #s > 1 then srows[#srows + 1] = summary("all", false, table.unpack(tot)) end
  local heads = {"Report", "Device", "Iterations", "Avg Window (ns)", "Compute Kernel Time per Iteration (ns)",
                 "GPA Estimate per Iteration (ns)", "GPA Estimate (%)", "Non-hidden NCCL per Iteration (ns)",
                 "Non-hidden Memory per Iteration (ns)", "Bubble per Iteration (ns)"}
  local scols = {}
  for j, h in ipairs(heads) do
    local v = {}
    for i, r in ipairs(srows) do v[i] = r[j] end
    scols[j] = {h, v}
  end
  -- the "all" row has no device: NULL through a gather with -1
  local devs = scols[2][2]
  local didx = {}
  for i, d in ipairs(devs) do
    didx[i] = d == false and -1 or i - 1
    if d == false then devs[i] = 0 end
  end
  scols[2][2] = nsl.column(devs):gather(nsl.column(didx))
  local summary_t = nsl.table(scols)
  it = it:sort("iter", "report", "device")
  local by_iter = nsl.table{{"Iteration", it.iter},
    {"Report", it.report:map(function(r) return report_names[r + 1] end)}, {"Device", it.device},
    {"Window (ns)", it.window}, {"Compute Only (ns)", it.co}, {"NCCL Only (ns)", it.no}, {"Both (ns)", it.both},
    {"Neither (ns)", it.neither}, {"Non-hidden Memory (ns)", it.mo}, {"Bubble (ns)", it.bubble},
    {"Compute Kernel Time (ns)", it.ksum}, {"GPA Estimate (ns)", it.est}}
  return summary_t, by_iter
end

return M
