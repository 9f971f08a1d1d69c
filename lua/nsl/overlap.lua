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

local M = {}

--- The sets above, names in M.keys order.
M.keys = {"compute_only", "nccl_only", "both", "kernels", "memory_only", "all", "nccl"}

--- The NCCL kernels among GPU operations ops (nsl.gpu_ops): a mask.
function M.nccl_mask(ops) return nccl.mask(ops.name) & ~ops.memop end

-- Interval sets of every group of a batch at once, on the lanes axis:
-- s, e the shifted times, sel the rows of the batch.
local function sets_of(ops, s, e, sel, is_nccl)
  local kern = sel & ~ops.memop
  local C = nsl.intervals(s, e, kern & ~is_nccl)
  local N = nsl.intervals(s, e, kern & is_nccl)
  local K = nsl.intervals(s, e, kern)
  local Mem = nsl.intervals(s, e, sel & ops.memop)
  local A = nsl.intervals(s, e, sel)
  return {compute_only = C:subtract(N), nccl_only = N:subtract(C), both = C:intersect(N), kernels = K,
          memory_only = Mem:subtract(K), all = A, nccl = N}
end

--- overlap.measure(ops, is_nccl, gid, ngroups, windows) -> results.
-- ops: GPU operations (start, stop, memop, as nsl.gpu_ops); is_nccl: a
-- mask of its NCCL kernels; gid: the group of each operation (i64, 0-based,
-- < ngroups); windows: an array of window sets, each {gid =, lo =, hi =}
-- (columns: the group of each window and its bounds).  Returns one result
-- per window set: {key = i64 column} for every key of M.keys, one value per
-- window in the set's row order.  The sets are built once per batch of
-- groups and measured over every window set.
function M.measure(ops, is_nccl, gid, ngroups, windows)
  local plan = lanes.plan(ngroups, lanes.bounds(ops.start, ops.stop))
  local parts = {}
  for w = 1, #windows do parts[w] = {} end
  for _, b in ipairs(plan.batches) do
    local sel = lanes.rows(b, gid)
    local s, e = lanes.shift(plan, b, ops.start, gid), lanes.shift(plan, b, ops.stop, gid)
    local sets = sets_of(ops, s, e, sel, is_nccl)
    for w, win in ipairs(windows) do
      local rows = lanes.rows(b, win.gid):indices()
      local wg = win.gid:gather(rows)
      local lo, hi = lanes.shift(plan, b, win.lo:gather(rows), wg), lanes.shift(plan, b, win.hi:gather(rows), wg)
      local m = {}
      for _, k in ipairs(M.keys) do m[k] = sets[k]:coverage(lo, hi) end
      parts[w][#parts[w] + 1] = {rows = rows, m = m}
    end
  end
  local results = {}
  for w = 1, #windows do
    local r = {}
    for _, k in ipairs(M.keys) do
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

return M
