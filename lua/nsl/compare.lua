-- nsl.compare -- several runs of a trace side by side, the library of the
-- compare analysis (lua/analyses/compare.lua says what each table holds):
-- the whole runs (per device and summed per run, operations and transfer
-- volumes, changes against a base run), statistics of durations per name
-- and run with Mann-Whitney tests (M.side_by_side), and the distributions
-- of single operations.  Runs are nsl.runs' (R).
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local nvtx = require("nsl.nvtx")
local overlap = require("nsl.overlap")
local percentiles = require("nsl.util.percentiles")
local runs = require("nsl.runs")
local stats = require("nsl.stats")

local M = {}

local QS = percentiles.default
local MED = 1   -- the index of the median in QS
local MEMSET = gpu_ops.label(nil)
for j, q in ipairs(QS) do if q == 0.5 then MED = j end end

--- A column from a Lua array with holes (nil -> NULL) of n values; zero is
-- the placeholder giving the type (0 for i64, 0.0 for f64, "" for strings).
local function nullable(values, n, zero)
  local fill, idx = {}, {}
  for i = 1, n do
    local v = values[i]
    fill[i] = v == nil and zero or v
    idx[i] = v == nil and -1 or i - 1
  end
  if n == 0 then return nsl.column{zero}:gather(nsl.column{}) end
  return nsl.column(fill):gather(nsl.column(idx))
end

--- Change of x against b in % of b; nil when either is missing or b is 0.
local function change(x, b)
  if x == nil or b == nil or b == 0 then return nil end
  return (x - b) * 100.0 / b
end

local function pct(part, whole)
  if part == nil or whole == nil or whole == 0 then return nil end
  return part * 100.0 / whole
end

--- part * 100 / whole per row of two columns, NULL where whole is 0.
local function pct_column(part, whole)
  local p, w = part:totable(), whole:totable()
  local v = {}
  for i = 1, #p do v[i] = pct(p[i], w[i]) end
  return nullable(v, #p, 0.0)
end

--- Side-by-side statistics of durations: t has columns key (string), run
-- (0-based) and dur.  Returns the nsl table described in the header (key
-- column named key_label) and the keys in order.
local function side_by_side(t, R, base, key_label)
  -- a NULL key (a kernel whose name id a damaged export's strings lack, and so its class) is one group of its
  -- own, NULL in the table as summary and classes show it; Lua tables take no nil key, so a stand-in meanwhile
  local NULL_KEY = "\0NULL"
  if t.key:isnull():count() > 0 then t = t:with("key", nsl.coalesce(t.key, NULL_KEY)) end
  local p = percentiles.table(t, {"key", "run"}, {{col = "dur", label = "d", unit = "ns", total = true}}, {qs = QS})
  local pkey, prun, pn = p.key:totable(), p.run:totable(), p.Count:totable()
  local ptotal, pmean, pmax = p["d total (ns)"]:totable(), p["d mean (ns)"]:totable(), p["d max (ns)"]:totable()
  local pq = {}
  for j, q in ipairs(QS) do pq[j] = p["d " .. percentiles.label(q) .. " (ns)"]:totable() end
  local cell, best, run_total = {}, {}, {}
  for i = 1, #p do
    local k = pkey[i]
    cell[k] = cell[k] or {}
    cell[k][prun[i]] = i
    best[k] = math.max(best[k] or 0, ptotal[i])
    run_total[prun[i]] = (run_total[prun[i]] or 0) + ptotal[i]
  end
  local keys = {}
  for k in pairs(cell) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if best[a] ~= best[b] then return best[a] > best[b] end
    return a < b
  end)
  -- Mann-Whitney U tests of every other run against the base
  local mw = {}
  local of_run = t:with("_row", nsl.range(#t)):slices("run")   -- the rows of each run once, not a filter per run
  local base_rows = of_run(base)
  for r = 0, R.n - 1 do
    if r ~= base then
      local sel = nsl.concat_tables({base_rows, of_run(r)}):sort("_row")   -- both runs' rows in t's order
      mw[r] = stats.mann_whitney(nsl.table{{"key", sel.key}, {"dur", sel.dur}, {"side", sel.run:eq(r):cast("i64")}})
    end
  end
  local c = {run = {}, key = {}, n = {}, total = {}, share = {}, mean = {}, max = {}, dtotal = {}, dmed = {}, p = {}}
  for j = 1, #QS do c["q" .. j] = {} end
  if #keys == 0 then return nil, keys end
  local row = 0
  for _, k in ipairs(keys) do
    local bi = cell[k][base]
    for r = 0, R.n - 1 do
      row = row + 1
      local i = cell[k][r]
      c.run[row], c.key[row] = R.labels[r + 1], k
      c.n[row], c.total[row] = i and pn[i] or 0, i and ptotal[i] or 0
      c.share[row] = pct(c.total[row], run_total[r]) or (run_total[r] and 0.0)
      if i then
        c.mean[row], c.max[row] = pmean[i], pmax[i]
        for j = 1, #QS do c["q" .. j][row] = pq[j][i] end
      end
      if r ~= base then
        c.dtotal[row] = change(c.total[row], bi and ptotal[bi] or 0)
        c.dmed[row] = change(i and pq[MED][i], bi and pq[MED][bi])
        local test = mw[r][k]
        if test and test.n1 >= 3 and test.n2 >= 3 then c.p[row] = test.p end
      end
    end
  end
  local cols = {{"Run", nsl.column(c.run)}, {"Instances", nsl.column(c.n)}, {"Total (ns)", nsl.column(c.total)},
    {"Time (%)", nullable(c.share, row, 0.0)}, {"Mean (ns)", nullable(c.mean, row, 0.0)}}
  for j, q in ipairs(QS) do cols[#cols + 1] = {percentiles.label(q) .. " (ns)", nullable(c["q" .. j], row, 0.0)} end
  cols[#cols + 1] = {"Max (ns)", nullable(c.max, row, 0)}
  cols[#cols + 1] = {"Total vs Base (%)", nullable(c.dtotal, row, 0.0)}
  cols[#cols + 1] = {percentiles.label(QS[MED]) .. " vs Base (%)", nullable(c.dmed, row, 0.0)}
  cols[#cols + 1] = {"p (Mann-Whitney)", nullable(c.p, row, 0.0)}
  for i = 1, row do if c.key[i] == NULL_KEY then c.key[i] = nil end end
  cols[#cols + 1] = {key_label, nullable(c.key, row, "")}
  return nsl.table(cols), keys
end

--- Per-run sums of a per-device column (devices table d with a run column).
local function per_run_sum(d, col, n)
  local s = {}
  for r = 1, n do s[r] = 0 end
  local run, v = d.run:totable(), d[col]:totable()
  for i = 1, #run do s[run[i] + 1] = s[run[i] + 1] + v[i] end
  return s
end

--- Group sums of `value` per (run, key) as a lookup [run][key] (runs 1-based).
local function sums_by(t, key, value, what)
  local a = t:group_by("run", key):agg{"n=count", "s=sum(" .. value .. ")"}
  local m = {}
  local run, k, n, s = a.run:totable(), a[key]:totable(), a.n:totable(), a.s:totable()
  for i = 1, #a do
    m[run[i] + 1] = m[run[i] + 1] or {}
    m[run[i] + 1][k[i]] = what == "n" and n[i] or (s[i] or 0)
  end
  return m
end

M.side_by_side = side_by_side

--- The whole runs of R over ops (nsl.gpu_ops.table with names, memop,
-- kind and bytes, a `run` column added, rows of no run left out), against
-- run `base` (0-based); parts: a distributed run's memcpy and nvtx tables
-- (else the trace's).  Returns the tables devices, macro, operations and
-- changes (nil for one run), and what the figures and the per-name tables
-- read: {sum (per-run sums of the device sets), kinds (memcpy kinds),
-- kind_bytes(r, kind), memset_bytes (per run), nvt (NVTX ranges: run, key,
-- dur; nil without)}.
function M.whole_runs(trace, ops, R, base, parts)
  local n, labels = R.n, R.labels
  -- ---- macro: per device, then per run ----
  local dev = overlap.per_device(ops)
  local drun = runs.column(R, dev.report)
  dev = dev:with("run", drun)
  local rep_names = trace.reports.name
  local devices = nsl.table{{"Run", runs.labels(R, drun)},
    {"Report", rep_names:gather(dev.report:cast("i64"))}, {"Device", dev.device}, {"Span (ns)", dev.span},
    {"Busy (ns)", dev.busy}, {"Idle (ns)", dev.idle}, {"Busy (%)", pct_column(dev.busy, dev.span)},
    {"Compute Only (ns)", dev.compute_only}, {"NCCL Only (ns)", dev.nccl_only}, {"Both (ns)", dev.both},
    {"Memory Only (ns)", dev.memory_only}, {"NCCL Hidden (%)", pct_column(dev.both, dev.nccl)}}

  local span_g = ops:group_by("run"):agg{"lo=min(start)", "hi=max(stop)"}
  local gspan = {}
  for i = 1, #span_g do gspan[span_g.run[i] + 1] = span_g.hi[i] - span_g.lo[i] end
  local ndev = {}
  for r = 1, n do ndev[r] = 0 end
  for _, r in ipairs(drun:totable()) do ndev[r + 1] = ndev[r + 1] + 1 end
  local sum = {}
  for _, k in ipairs{"span", "busy", "idle", "compute_only", "nccl_only", "both", "memory_only"} do
    sum[k] = per_run_sum(dev, k, n)
  end
  local m = {run = {}, reports = {}, devices = {}, gspan = {}, busy_pct = {}, hidden = {}}
  for r = 1, n do
    m.run[r], m.reports[r], m.devices[r] = labels[r], #R.reports[r], ndev[r]
    m.gspan[r] = gspan[r]
    m.busy_pct[r] = pct(sum.busy[r], sum.span[r])
    m.hidden[r] = pct(sum.both[r], sum.both[r] + sum.nccl_only[r])
  end
  local macro = nsl.table{{"Run", m.run}, {"Reports", m.reports}, {"Devices", m.devices},
    {"GPU Span (ns)", nullable(m.gspan, n, 0)}, {"Device Span (ns)", sum.span}, {"Busy (ns)", sum.busy},
    {"Idle (ns)", sum.idle}, {"Busy (%)", nullable(m.busy_pct, n, 0.0)}, {"Compute Only (ns)", sum.compute_only},
    {"NCCL Only (ns)", sum.nccl_only}, {"Both (ns)", sum.both}, {"Memory Only (ns)", sum.memory_only},
    {"NCCL Hidden (%)", nullable(m.hidden, n, 0.0)}}

  -- operations and transfer volumes
  local opc = ops:select{"run", "dur", "bytes"}:with("cat", ops.kind)
  local cnt, tim, byt = sums_by(opc, "cat", "dur", "n"), sums_by(opc, "cat", "dur"), sums_by(opc, "cat", "bytes")
  local mc = parts and parts.memcpy or trace.memcpy
  if not parts then mc:load{"report", "kind", "bytes"} end
  local mcr = runs.column(R, mc.report)
  local mct = nsl.table{{"run", mcr}, {"kind", mc.kind}, {"bytes", mc.bytes}}:filter(mcr:ge(0))
  local kinds = mct.kind:unique():totable()
  table.sort(kinds)
  local kbytes = sums_by(mct, "kind", "bytes")
  local nv = parts and parts.nvtx or trace.nvtx
  local nvt
  if #nv > 0 then
    if not parts then nv:load{"report", "kind", "dur", "text", "domain"} end
    local nvr = runs.column(R, nv.report)
    local _, label = nvtx.names(nv, {strip = nvtx.pytorch_suffixes})
    nvt = nsl.table{{"run", nvr}, {"key", label}, {"dur", nv.dur}}
      :filter(nvr:ge(0) & nv.kind:isin{"push_pop", "start_end"} & ~nv.dur:isnull())
  end
  local nvcount = {}
  if nvt then
    local a = nvt:group_by("run"):agg{"n=count"}
    for i = 1, #a do nvcount[a.run[i] + 1] = a.n[i] end
  end
  local metrics = {}   -- {name, values[1..n]} for the operations and changes tables
  local function metric(name, f)
    local v = {}
    for r = 1, n do v[r] = f(r) end
    metrics[#metrics + 1] = {name, v}
    return v
  end
  local function get(tab, r, k) return tab[r] and tab[r][k] or 0 end
  metric("Kernels", function(r) return get(cnt, r, "kernel") end)
  metric("Kernel Time (ns)", function(r) return get(tim, r, "kernel") end)
  metric("Memcpy", function(r) return get(cnt, r, "memcpy") end)
  metric("Memcpy Time (ns)", function(r) return get(tim, r, "memcpy") end)
  metric("Memcpy Bytes", function(r) return get(byt, r, "memcpy") end)
  for _, k in ipairs(kinds) do metric(k .. " Bytes", function(r) return get(kbytes, r, k) end) end
  metric("Memset", function(r) return get(cnt, r, "memset") end)
  metric("Memset Time (ns)", function(r) return get(tim, r, "memset") end)
  metric("Memset Bytes", function(r) return get(byt, r, "memset") end)
  metric("NVTX Ranges", function(r) return nvcount[r] or 0 end)
  local ocols = {{"Run", labels}}
  for _, mt in ipairs(metrics) do ocols[#ocols + 1] = mt end
  local operations = nsl.table(ocols)

  local changes
  if n > 1 then
    local rows = {{"GPU Span (ns)", m.gspan}, {"Device Span (ns)", sum.span}, {"Busy (ns)", sum.busy},
                  {"Idle (ns)", sum.idle}, {"Compute Only (ns)", sum.compute_only}, {"NCCL Only (ns)", sum.nccl_only},
                  {"Both (ns)", sum.both}, {"Memory Only (ns)", sum.memory_only}}
    for _, mt in ipairs(metrics) do rows[#rows + 1] = mt end
    local names = {}
    for i, rw in ipairs(rows) do names[i] = rw[1] end
    local ccols = {{"Metric", names}}
    for r = 1, n do
      if r - 1 ~= base then
        local v = {}
        for i, rw in ipairs(rows) do v[i] = change(rw[2][r], rw[2][base + 1]) end
        ccols[#ccols + 1] = {string.format("%s vs %s (%%)", labels[r], labels[base + 1]), nullable(v, #rows, 0.0)}
      end
    end
    changes = nsl.table(ccols)
  end
  local mset = {}
  for r = 1, n do mset[r] = get(byt, r, "memset") end
  return {devices = devices, macro = macro, operations = operations, changes = changes}, {
    sum = sum, kinds = kinds, kind_bytes = function(r, k) return get(kbytes, r, k) end, memset_bytes = mset, nvt = nvt}
end

--- The distributions of single operations of ops (as M.whole_runs) per
-- kind (kernels, each memcpy label, the memset) and run: instances, total,
-- mean, percentiles and max of the duration and of the bytes.
function M.distributions(ops, is_kernel, R)
  -- ---- micro: distributions of single operations ----
  local opname = nsl.where(is_kernel, "kernels", ops.name)
  local d = percentiles.table(ops:select{"run", "dur", "bytes"}:with("op", opname), {"op", "run"},
    {{col = "dur", label = "Duration", unit = "ns", total = true}, {col = "bytes", label = "Bytes", total = true}},
    {qs = QS})
  local rank = d.op:map(function(s) return s == "kernels" and "0" or (s == MEMSET and "2" or "1" .. s) end)
  d = d:with("_rank", rank):sort("_rank", "run")
  local dcols = {{"Run", runs.labels(R, d.run)}, {"Operation", d.op}}
  for _, c in ipairs(d:columns()) do
    if c ~= "op" and c ~= "run" and c ~= "_rank" then dcols[#dcols + 1] = {c, d[c]} end
  end
  return nsl.table(dcols)
end

return M
