-- nsl.gpu_tables -- the per-GPU tables diagnose's checks read of the GPU
-- operations, made where the operations are: over the whole trace in one
-- process, over each process's own reports in a distributed run (whose
-- processes send these tables, one row per GPU, long gap or low chunk,
-- instead of one row per operation).
--
-- Two groupings of the operations that ran on a device (a device not NULL):
-- per process and device (`pd`: report, pid, device) and per device (`dv`:
-- report, device).  One process numbers the groups in order of first
-- appearance over the operations -- the kernels of every report, then the
-- copies, then the memsets -- which a concatenation of the processes' groups
-- in report order does not give.  So every group carries where it first
-- appears (fpart: 0 kernels, 1 memcpy, 2 memset; frow: its row among the
-- operations its process read, which orders the rows of one report of one
-- part), and M.merge sorts the groups by (fpart, report, frow): the order of
-- one process.  The tables that refer to a group carry (report, lg: the
-- group's number where it was made), which M.merge turns into g, the group's
-- row in the merged order.
--
-- M.make(ops, part, ns, args, kernels) -> the tables of one set of
-- operations, each part made when first read (M.own gives them to the
-- checks of one process so; M.wire makes them all for the wire):
--   pd      report, pid, device, lo, hi (first start, last stop), lg, fpart, frow
--   gaps    report, lg, start, stop: gpu.gaps' idle gaps longer than ns.gap
--           per pd group (nsys analyze gpu_gaps), in group then time order
--   low     report, lg, chunk, start, stop, busy, idle, util, rest:
--           gpu.low_utilisation's chunks (args.chunks per pd span) under
--           args.util % busy, rest their idle outside the long gaps
--   dv      report, device, lo, hi, n (operations), lg, fpart, frow,
--           nccl_only, nccl (the NCCL collectives' time with no other
--           kernel, and all of it: nccl.exposed), p2p_only, p2p (Send/Recv:
--           pipeline.bubbles); lb_n, lb_total, lb_first, lb_last (launch.bound's
--           gaps before short kernels: count, sum, first and last end)
--   ser     report, device, span, copy_exposed, n, t, top, fk, lo, hi:
--           streams.serialised's per device (fk: the row of its first kernel)
--   counts  placed (operations on a device), nccl_mask, p2p_mask
--           (operations of each mask), copies, kernel_streams, serial (the
--           streams.serialised tests), kernels (the trace's kernel rows)
--   lb_rows report, device, g, start, gap: launch.bound's gaps, and
--   gap_rows report, pid, device, stop: gpu.gaps' (both kept where they are
--           made: host.idle reads them there)
local nsl = require("nsl")
local kept = require("nsl.kept")
local overlap = require("nsl.overlap")
local lanes = require("nsl.lanes")
local nccl = require("nsl.nccl")

local M = {}

local function none(n) return nsl.rep(0, n):eq(1) end

--- true for the names of NCCL point-to-point kernels of one direction (Send,
-- Recv): a pipeline stage's hand-over.  SendRecv -- both directions at once,
-- as all-to-all and grouped exchanges run -- is a collective (nccl.exposed).
function M.is_p2p(name)
  local p = nccl.parse(name)
  local c = p and p.collective
  return c == "Send" or c == "Recv"
end

-- The groups of t by keys with where each first appears: keys, the
-- aggregates aggs, lg, fpart, frow; and g (the grouping).
local function groups(t, part, keys, aggs)
  local g = t:group_by(table.unpack(keys))
  local first = nsl.cumcount(g:ids()):eq(0):indices()   -- each group's first row, in group order
  local a = g:agg(aggs)
  local k = g:keys()
  local cols = {}
  for _, c in ipairs(keys) do cols[#cols + 1] = {c, k[c]} end
  for _, c in ipairs(a:columns()) do cols[#cols + 1] = {c, a[c]} end
  cols[#cols + 1] = {"lg", nsl.range(#k)}
  cols[#cols + 1] = {"fpart", part:gather(first)}
  cols[#cols + 1] = {"frow", first}
  return nsl.table(cols), g
end

-- The time the kernels of mask run with no other kernel on each device of
-- dv (grouping g of ops), and all of it: nccl_only, nccl columns.
local function exposed(ops, mask, g, n, dv)
  local m = overlap.measure(ops, mask, g:ids(), n, {{gid = nsl.range(n), lo = dv.lo, hi = dv.hi}},
                            {"nccl_only", "nccl"})[1]
  return m.nccl_only, m.nccl
end

-- Each part of the tables, made when first read (one process makes them as its checks read them: each
-- part's temporaries are then freed before the next part's are made, and diagnose's peak stays lower)
local part_of = {pd = "process", gaps = "process", low = "process", gap_rows = "process", dv = "device",
                 lb_rows = "device", ser = "copies"}
local count_part = {nccl_mask = "device", p2p_mask = "device", copies = "copies", kernel_streams = "copies",
                    serial = "copies"}
local make_part = {}

--- The tables (see the header) of the GPU operations ops (nsl.gpu_ops with
-- short names and memop: report, pid, device, stream, start, stop, name,
-- memop), part (0/1/2 per row: kernel, memcpy, memset), ns (the checks'
-- thresholds in ns: gap, short, launch_gap), args (chunks, util), kernels
-- (the number of kernel rows of the trace the operations are of).
function M.make(ops, part, ns, args, kernels)
  local nodev = ops.device:isnull()
  if nodev:count() > 0 then
    local rows = (~nodev):indices()
    ops, part = ops:take(rows), part:gather(rows)
  end
  local made, counts = {}, {placed = #ops, kernels = kernels}
  local T = {}
  local function ensure(which)
    if made[which] then return end
    made[which] = true
    make_part[which](T, counts, ops, part, ns, args, kernels)
  end
  T.counts = setmetatable({}, {__index = function(_, k)
    if count_part[k] then ensure(count_part[k]) end
    return counts[k]
  end})
  return setmetatable(T, {__index = function(_, k)
    if part_of[k] then ensure(part_of[k]) end
    return rawget(T, k)
  end})
end

-- The counts of M.make, in the order they travel
local COUNTS = {"placed", "nccl_mask", "p2p_mask", "copies", "kernel_streams", "serial", "kernels"}

-- per process and device: spans, long gaps, low chunks
make_part.process = function(T, _, ops, part, ns, args)
  local pd, pg = groups(ops, part, {"report", "pid", "device"}, {"lo=min(start)", "hi=max(stop)"})
  T.pd = pd
  local ids = pg:ids()
  local gid, gs, ge = nsl.gaps_grouped(ops.start, ops.stop, ids, #pd, ns.gap)
  T.gaps = nsl.table{{"report", pd.report:gather(gid)}, {"lg", gid}, {"start", gs}, {"stop", ge}}
  T.gap_rows = nsl.table{{"report", pd.report:gather(gid)}, {"pid", pd.pid:gather(gid)},
                         {"device", pd.device:gather(gid)}, {"stop", ge}}
  local n, util = args.chunks, args.util
  local wg, wlo, whi, wk = {}, {}, {}, {}
  for i = 1, #pd do
    local lo, hi = pd.lo[i], pd.hi[i]
    if hi - lo >= n then   -- (a span past 2^63, of damaged times, wraps below 0: no chunks)
      local e = nsl.bin_edges(lo, hi, n)
      for k = 0, n - 1 do
        wg[#wg + 1], wk[#wk + 1] = i - 1, k
        wlo[#wlo + 1], whi[#whi + 1] = e[k + 1], e[k + 2]
      end
    end
  end
  local low
  if #wg > 0 then
    local lo, hi = nsl.column(wlo), nsl.column(whi)
    local busy = overlap.measure(ops, none(#ops), ids, #pd, {{gid = nsl.column(wg), lo = lo, hi = hi}}, {"all"})[1].all
    local len = hi - lo
    local w = nsl.table{{"g", nsl.column(wg)}, {"chunk", nsl.column(wk)}, {"start", lo}, {"stop", hi},
                        {"busy", busy}, {"idle", len - busy}, {"util", busy * 100.0 / len}}
    low = w:filter(w.util:lt(util))
    if #low > 0 then
      -- the low chunks' idle outside the long gaps (gpu.gaps claims those)
      local tot = nsl.ledger_sweep(nsl.concat(ops.start, gs), nsl.concat(ops.stop, ge), nsl.concat(ids, gid),
                                   nsl.concat(nsl.rep(0, #ops), nsl.rep(1, #gs)), 2, low.g, low.start, low.stop)
      low = low:with("rest", tot:gather(nsl.range(#low) * 3 + 2))
    end
  end
  if not low or #low == 0 then
    local z = nsl.rep(0, 0)
    low = nsl.table{{"g", z}, {"chunk", z}, {"start", z}, {"stop", z}, {"busy", z}, {"idle", z},
                    {"util", nsl.rep(0.0, 0)}, {"rest", z}}
  end
  T.low = nsl.table{{"report", pd.report:gather(low.g)}, {"lg", low.g}, {"chunk", low.chunk}, {"start", low.start},
                    {"stop", low.stop}, {"busy", low.busy}, {"idle", low.idle}, {"util", low.util}, {"rest", low.rest}}
end

-- per device: spans, exposed NCCL and send/receive time, launch-bound gaps
make_part.device = function(T, counts, ops, part, ns, _, kernels)
  local dv, dg = groups(ops, part, {"report", "device"}, {"lo=min(start)", "hi=max(stop)", "n=count"})
  local nd = #dv
  local zero = nsl.rep(0, nd)
  local is_p2p = ops.name:where(M.is_p2p)
  local nmask = overlap.nccl_mask(ops) & ~is_p2p
  local pmask = is_p2p & ~ops.memop
  counts.nccl_mask, counts.p2p_mask = nmask:count(), pmask:count()
  local n_only, n_all, p_only, p_all = zero, zero, zero, zero
  if nd > 0 and counts.nccl_mask > 0 then n_only, n_all = exposed(ops, nmask, dg, nd, dv) end
  if nd > 0 and counts.p2p_mask > 0 then p_only, p_all = exposed(ops, pmask, dg, nd, dv) end
  -- gaps of at most ns.launch_gap before a kernel shorter than ns.short (the GPU is idle when nothing runs on
  -- it: copies count as busy); a gap is kept when a short kernel starts on its device where it ends
  local lb_rows
  local dids = dg:ids()
  if kernels > 0 and #ops > 0 then
    local lgid, lgs, lge = nsl.gaps_grouped(ops.start, ops.stop, dids, nd, 0)
    local d = nsl.table{{"g", lgid}, {"start", lge}, {"gap", lge - lgs}}
    d = d:filter(d.gap:gt(0) & d.gap:le(ns.launch_gap))
    local short_k = ops:select{"start"}:with("g", dids):filter(~ops.memop & (ops.stop - ops.start):lt(ns.short))
    d = d:filter(lanes.pairs_in(d.g, d.start, short_k.g, short_k.start))
    lb_rows = nsl.table{{"report", dv.report:gather(d.g)}, {"device", dv.device:gather(d.g)}, {"g", d.g},
                        {"start", d.start}, {"gap", d.gap}}
  end
  T.lb_rows = lb_rows
  local lb_n, lb_total, lb_first, lb_last = zero, zero, zero, zero
  if lb_rows and #lb_rows > 0 then
    local a = lb_rows:group_by("g"):agg{"n=count", "total=sum(gap)", "first=min(start)", "last=max(start)"}
    local function per_device(c) return nsl.coalesce(nsl.table{{"g", nsl.range(nd)}}:join(a, {"g"}, {c})[c], 0) end
    lb_n, lb_total, lb_first, lb_last = per_device("n"), per_device("total"), per_device("first"), per_device("last")
  end
  T.dv = dv:with("nccl_only", n_only, "nccl", n_all, "p2p_only", p_only, "p2p", p_all, "lb_n", lb_n,
                 "lb_total", lb_total, "lb_first", lb_first, "lb_last", lb_last)
end

-- copies issued on streams that also run kernels, and their time with no kernel running on the device
make_part.copies = function(T, counts, ops)
  local dv = T.dv
  local kern = ops:select{"report", "device", "stream", "start", "stop", "memop"}:with("row", nsl.range(#ops))
  kern = kern:filter(~ops.memop)
  local ks = kern:group_by("report", "device", "stream"):agg{"kernels=count"}
  local copies = ops:filter(ops.memop & ops.name:where(function(s) return s:find("^%[CUDA memcpy") ~= nil end))
  counts.copies, counts.kernel_streams = #copies, #ks
  local on_k = copies:join(ks, {"report", "device", "stream"}, {"kernels"})
  local serial = ~on_k.kernels:isnull()
  counts.serial = serial:count()
  local sub = nsl.table{{"report", nsl.concat(kern.report, copies.report)},
    {"device", nsl.concat(kern.device, copies.device)}, {"stream", nsl.concat(kern.stream, copies.stream)},
    {"start", nsl.concat(kern.start, copies.start)}, {"stop", nsl.concat(kern.stop, copies.stop)},
    {"memop", nsl.concat(kern.memop, copies.memop)},
    {"keep", nsl.concat(nsl.rep(1, #kern), serial:cast("i64"))},
    {"row", nsl.concat(kern.row, nsl.rep(-1, #copies))}}
  sub = sub:filter(sub.keep:eq(1))
  local sg = sub:group_by("report", "device")
  local skeys = sg:keys()
  local sp = skeys:join(dv, {"report", "device"}, {"lo", "hi"})
  local exposed_copies = #sg > 0 and overlap.measure(sub, none(#sub), sg:ids(), #sg,
    {{gid = nsl.range(#sg), lo = sp.lo, hi = sp.hi}}, {"memory_only"})[1].memory_only or nsl.rep(0, 0)
  local ser = on_k:filter(serial)
  ser = ser:with("dur", ser.stop - ser.start)
  local cs = ser:group_by("report", "device"):agg{"n=count", "t=sum(dur)"}
  local per_stream = ser:group_by("report", "device", "stream"):agg{"t=sum(dur)"}:sort("-t", "stream")
  local top = {}
  for i = 1, #per_stream do
    local k = per_stream.report[i] .. ":" .. per_stream.device[i]
    if not top[k] then top[k] = per_stream.stream[i] end
  end
  local tops, code = {}, {}   -- (NULL: a device without copies on its kernel streams)
  for i = 1, #skeys do
    local x = top[skeys.report[i] .. ":" .. skeys.device[i]]
    if x == nil then code[i] = -1 else tops[#tops + 1] = x; code[i] = #tops - 1 end
  end
  local topcol = (#tops > 0 and nsl.column(tops) or nsl.column{0}):gather(#code > 0 and nsl.column(code)
                                                                           or nsl.column{}:cast("i64"))
  local first = sub.row:gather(nsl.cumcount(sg:ids()):eq(0):indices())   -- (a kernel's: a device's first row is)
  local t = skeys:with("span", sp.hi - sp.lo, "copy_exposed", exposed_copies):join(cs, {"report", "device"}, {"n", "t"})
  T.ser = t:with("top", topcol, "fk", first, "lo", sp.lo, "hi", sp.hi)
end

--- The tables of M.make that a distributed run's processes send (names
-- gt_*), counts as a table of one row.
function M.wire(T)
  local s = M.local_set(T)
  return {gt_pd = s.pd, gt_gaps = s.gaps, gt_low = s.low, gt_dv = s.dv, gt_ser = s.ser, gt_counts = s.counts}
end

-- The groups of t (fpart, report, frow; lg) in the order of one process, and
-- each table of rows (report, lg) with g, the group's row in that order.
local function order(t)
  local o = t:order("fpart", "report", "frow")
  t = t:take(o)
  local key = nsl.table{{"report", t.report:cast("i64")}, {"lg", t.lg:cast("i64")}, {"g", nsl.range(#t)}}
  local function g_of(rows)
    return rows:select{"report", "lg"}:with("report", rows.report:cast("i64"), "lg", rows.lg:cast("i64"))
      :join(key, {"report", "lg"}, {"g"}).g
  end
  return t, g_of
end

--- The tables as the checks read them (M.make's of the whole trace, or the
-- processes' gathered: w = {pd, gaps, low, dv, ser, counts (one row per
-- process)}): pd, dv in one process's group order; gaps (g, start, stop),
-- low (g, chunk, ...), ser in one process's order; counts summed.
function M.merge(w)
  local T = {}
  local pd, pg = order(w.pd)
  T.pd = pd
  local gaps = w.gaps:with("g", pg(w.gaps))
  T.gaps = gaps:sort("g", "start"):select{"g", "start", "stop"}
  local low = w.low:with("g", pg(w.low))
  T.low = low:sort("g", "chunk"):select{"g", "chunk", "start", "stop", "busy", "idle", "util", "rest"}
  T.dv = order(w.dv)
  T.ser = w.ser:sort("report", "fk")
  local c = {}
  for _, k in ipairs(w.counts:columns()) do c[k] = w.counts[k]:sum() or 0 end
  T.counts = c
  return T
end

--- M.make's tables as M.merge takes them, every one made (counts: a table of one row).
function M.local_set(T)
  local row = {}
  for _, k in ipairs(COUNTS) do row[#row + 1] = {k, nsl.rep(T.counts[k], 1)} end
  return {pd = T.pd, gaps = T.gaps, low = T.low, dv = T.dv, ser = T.ser, counts = nsl.table(row)}
end

-- M.make's tables as the column cache keeps them (M.kept, M.keep), with their columns in order
local KEPT_COLS = {
  pd = {"report", "pid", "device", "lo", "hi", "lg", "fpart", "frow"},
  gaps = {"report", "lg", "start", "stop"},
  low = {"report", "lg", "chunk", "start", "stop", "busy", "idle", "util", "rest"},
  dv = {"report", "device", "lo", "hi", "n", "lg", "fpart", "frow", "nccl_only", "nccl", "p2p_only", "p2p", "lb_n",
        "lb_total", "lb_first", "lb_last"},
  ser = {"report", "device", "span", "copy_exposed", "n", "t", "top", "fk", "lo", "hi"},
  lb_rows = {"report", "device", "g", "start", "gap"},
  gap_rows = {"report", "pid", "device", "stop"},
}
local KEPT_ORDER = {"pd", "gaps", "low", "dv", "ser", "lb_rows", "gap_rows"}

-- The name the tables are kept under: the thresholds they were made with are part of it.
local function kept_name(ns, args)
  local names = {}
  for k in pairs(ns) do names[#names + 1] = k end
  table.sort(names)
  local list = {}
  for _, k in ipairs(names) do list[#list + 1] = k .. "=" .. tostring(ns[k]) end
  return kept.name("gpu_tables.1", list, args.chunks, args.util)
end

--- M.make's tables of a trace of one report (and its counts) as it kept
-- them in the column cache (M.keep) with the same thresholds, every part
-- made; nil where it kept none (or a table's columns are not the ones this
-- code makes).  What the tables hold are sums and times of the report's
-- operations; rows of other tables (fk, frow, lg, g) are checked against
-- the report's rows before they are trusted.
function M.kept(trace, ns, args)
  if trace:nreports() ~= 1 or not trace:keeps_derived(0) then return nil end
  local name = kept_name(ns, args)
  local counts = trace:derived(0, "kernels", name .. ".counts", "i64", #COUNTS)
  if not counts then return nil end
  local T = {counts = {}}
  for i, k in ipairs(COUNTS) do T.counts[k] = counts[i] end
  if T.counts.kernels ~= #trace.kernels or T.counts.placed < 0 then return nil end
  local nops = #trace.kernels + #trace.memcpy + #trace.memset
  for _, tname in ipairs(KEPT_ORDER) do
    local t = kept.table(trace, "kernels", name .. "." .. tname, KEPT_COLS[tname])
    if t == nil then return nil end
    T[tname] = t or nil   -- (false: the table was not made)
  end
  -- rows of the operations and group numbers: within what the report has
  local function within(c, n) local lo, hi = nsl.extent(c); return not lo or (lo >= -1 and hi < n) end
  if not (T.pd and T.dv and T.gaps and T.low and T.ser and within(T.dv.frow, nops) and within(T.pd.frow, nops)
          and within(T.ser.fk, nops) and within(T.gaps.lg, #T.pd) and within(T.low.lg, #T.pd)
          and (not T.lb_rows or within(T.lb_rows.g, #T.dv))) then
    return nil
  end
  return T
end

--- Keeps T (M.make's of a trace of one report, made with thresholds ns
-- and args) for M.kept: every part made now.
function M.keep(trace, T, ns, args)
  if trace:nreports() ~= 1 or not trace:keeps_derived(0) then return end
  local name = kept_name(ns, args)
  for _, tname in ipairs(KEPT_ORDER) do
    if not kept.keepable(T[tname], KEPT_COLS[tname]) then return end
  end
  for _, tname in ipairs(KEPT_ORDER) do
    kept.keep_table(trace, "kernels", name .. "." .. tname, T[tname] or false, KEPT_COLS[tname])
  end
  local counts = {}
  for i, k in ipairs(COUNTS) do counts[i] = T.counts[k] end
  trace:keep_derived(0, "kernels", name .. ".counts", nsl.column(counts))
end

--- M.make's tables of the whole trace's operations as the checks read them
-- (M.merge's), each made when first read: they are in one process's order
-- already, a group's g its lg.
function M.own(T)
  return setmetatable({}, {__index = function(t, k)
    local v
    if k == "gaps" then v = T.gaps:with("g", T.gaps.lg):select{"g", "start", "stop"}
    elseif k == "low" then
      v = T.low:with("g", T.low.lg):select{"g", "chunk", "start", "stop", "busy", "idle", "util", "rest"}
    else v = T[k] end
    rawset(t, k, v)
    return v
  end})
end

return M
