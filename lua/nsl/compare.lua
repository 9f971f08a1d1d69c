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

-- a NULL key (a kernel whose name id a damaged export's strings lack, and so its class) is one group of its
-- own, NULL in the table as summary and classes show it; Lua tables take no nil key, so a stand-in meanwhile
local NULL_KEY = "\0NULL"

--- The statistics M.side_by_side reads of the durations t (columns key:
-- string, run: 0-based, dur), per key and run that has it: the columns of
-- nsl.util.percentiles.table (key, run, Count, d total, d mean, d p50 ..,
-- d max) and mw, the two-sided p of a Mann-Whitney U test of the run's
-- durations of the key against the base run's (NULL for the base run and
-- where either has fewer than 3).  Each key's rows depend on its own
-- durations alone, in any order: the statistics of a share of the keys
-- (a distributed run's, every key's rows in one process) are those rows
-- of the statistics of all keys.  NULL keys are the stand-in NULL_KEY.
function M.key_stats(t, R, base)
  if t.key:isnull():count() > 0 then t = t:with("key", nsl.coalesce(t.key, NULL_KEY)) end
  local p = percentiles.table(t, {"key", "run"}, {{col = "dur", label = "d", unit = "ns", total = true}}, {qs = QS})
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
  local pkey, prun, v = p.key:totable(), p.run:totable(), {}
  for i = 1, #p do
    local test = prun[i] ~= base and mw[prun[i]][pkey[i]]
    if test and test.n1 >= 3 and test.n2 >= 3 then v[i] = test.p end
  end
  return p:with("mw", nullable(v, #p, 0.0))
end

--- Side-by-side statistics of durations from p, the statistics of every
-- key (M.key_stats, of all keys at once or the rows of shares of them
-- concatenated, in any order).  Returns the nsl table described in the
-- header (key column named key_label) and the keys in order.
local function assemble(p, R, base, key_label)
  local pkey, prun, pn = p.key:totable(), p.run:totable(), p.Count:totable()
  local ptotal, pmean, pmax = p["d total (ns)"]:totable(), p["d mean (ns)"]:totable(), p["d max (ns)"]:totable()
  local pmw = p.mw:totable()
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
        c.p[row] = i and pmw[i] or nil
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

--- Side-by-side statistics of durations: t has columns key (string), run
-- (0-based) and dur; or, with stats, the statistics of its keys already
-- made (M.key_stats of every key: a distributed run's, t unread).  Returns
-- the nsl table described in the header (key column named key_label) and
-- the keys in order.
local function side_by_side(t, R, base, key_label, stats_made)
  return assemble(stats_made or M.key_stats(t, R, base), R, base, key_label)
end

--- Per-run sums of a per-device column (devices table d with a run column).
local function per_run_sum(d, col, n)
  local s = {}
  for r = 1, n do s[r] = 0 end
  local run, v = d.run:totable(), d[col]:totable()
  for i = 1, #run do s[run[i] + 1] = s[run[i] + 1] + v[i] end
  return s
end

--- The values of column `value` of an aggregate t (one row per run and
-- key) as a lookup [run][key] (runs 1-based; a NULL value, e.g. the sum of
-- no bytes, is 0).
local function lookup(t, key, value)
  local m = {}
  local run, k, v = t.run:totable(), t[key]:totable(), t[value]:totable()
  for i = 1, #t do
    m[run[i] + 1] = m[run[i] + 1] or {}
    m[run[i] + 1][k[i]] = v[i] or 0
  end
  return m
end

M.side_by_side = side_by_side

--- What M.whole_runs reads, from ops (nsl.gpu_ops.table with names, memop,
-- kind and bytes, a `run` column added, rows of no run left out), the
-- memory copies mc (report, kind, bytes) and the NVTX ranges nv (report,
-- kind, dur, text, domain; nil or empty: none) of some reports of the
-- trace (report numbers the trace's), per device or summed per run and
-- kind, so that those of several shares of the reports (a distributed
-- run's processes) add up to those of all: {dev (nsl.overlap.per_device),
-- span (run, lo, hi), opsum (run, cat, n, dur, bytes: the operations per
-- kind), mcsum (run, kind, bytes: the copies per direction), nvcount (run,
-- n)}, and nvt (run, key: the name less PyTorch's suffixes, dur: the
-- push/pop and start/end ranges with a duration; nil without ranges).
function M.run_parts(ops, mc, nv, R)
  local W = {dev = overlap.per_device(ops)}
  W.span = ops:group_by("run"):agg{"lo=min(start)", "hi=max(stop)"}
  W.opsum = ops:select{"run", "dur", "bytes"}:with("cat", ops.kind):group_by("run", "cat")
    :agg{"n=count", "dur=sum(dur)", "bytes=sum(bytes)"}
  local mcr = runs.column(R, mc.report)
  W.mcsum = nsl.table{{"run", mcr}, {"kind", mc.kind}, {"bytes", mc.bytes}}:filter(mcr:ge(0))
    :group_by("run", "kind"):agg{"bytes=sum(bytes)"}
  if nv and #nv > 0 then
    local nvr = runs.column(R, nv.report)
    local _, label = nvtx.names(nv, {strip = nvtx.pytorch_suffixes})
    W.nvt = nsl.table{{"run", nvr}, {"key", label}, {"dur", nv.dur}}
      :filter(nvr:ge(0) & nv.kind:isin{"push_pop", "start_end"} & ~nv.dur:isnull())
    W.nvcount = W.nvt:group_by("run"):agg{"n=count"}
  else
    W.nvcount = nsl.table{{"run", nsl.rep(0, 0)}, {"n", nsl.rep(0, 0)}}
  end
  return W
end

--- The parts of M.run_parts of several shares of the reports (a list, in
-- report order) as those of all: the devices one after the other, the
-- sums added up.
function M.add_run_parts(list)
  local function cat(name)
    local t = {}
    for i, W in ipairs(list) do t[i] = W[name] end
    return nsl.mpi.concat(t)
  end
  local span, opsum, mcsum, nvc = cat("span"), cat("opsum"), cat("mcsum"), cat("nvcount")
  return {dev = cat("dev"), span = span:group_by("run"):agg{"lo=min(lo)", "hi=max(hi)"},
          opsum = opsum:group_by("run", "cat"):agg{"n=sum(n)", "dur=sum(dur)", "bytes=sum(bytes)"},
          mcsum = mcsum:group_by("run", "kind"):agg{"bytes=sum(bytes)"},
          nvcount = nvc:group_by("run"):agg{"n=sum(n)"}}
end

--- The whole runs of R from W (M.run_parts of the trace, or of a
-- distributed run's shares added up: M.add_run_parts) against run `base`
-- (0-based).  Returns the tables devices, macro, operations and changes
-- (nil for one run), and what the figures and the per-name tables read:
-- {sum (per-run sums of the device sets), kinds (memcpy kinds),
-- kind_bytes(r, kind), memset_bytes (per run)}.
function M.whole_runs(trace, R, base, W)
  local n, labels = R.n, R.labels
  -- ---- macro: per device, then per run ----
  local dev = W.dev
  local drun = runs.column(R, dev.report)
  dev = dev:with("run", drun)
  local rep_names = trace.reports.name
  local devices = nsl.table{{"Run", runs.labels(R, drun)},
    {"Report", rep_names:gather(dev.report:cast("i64"))}, {"Device", dev.device}, {"Span (ns)", dev.span},
    {"Busy (ns)", dev.busy}, {"Idle (ns)", dev.idle}, {"Busy (%)", pct_column(dev.busy, dev.span)},
    {"Compute Only (ns)", dev.compute_only}, {"NCCL Only (ns)", dev.nccl_only}, {"Both (ns)", dev.both},
    {"Memory Only (ns)", dev.memory_only}, {"NCCL Hidden (%)", pct_column(dev.both, dev.nccl)}}

  local span_g = W.span
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
  local cnt, tim, byt = lookup(W.opsum, "cat", "n"), lookup(W.opsum, "cat", "dur"), lookup(W.opsum, "cat", "bytes")
  local kinds = W.mcsum.kind:unique():totable()
  table.sort(kinds)
  local kbytes = lookup(W.mcsum, "kind", "bytes")
  local nvcount = {}
  for i = 1, #W.nvcount do nvcount[W.nvcount.run[i] + 1] = W.nvcount.n[i] end
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
    sum = sum, kinds = kinds, kind_bytes = function(r, k) return get(kbytes, r, k) end, memset_bytes = mset}
end

-- the values of the distributions of single operations
local DIST_VALUES = {{col = "dur", label = "Duration", unit = "ns", total = true},
                     {col = "bytes", label = "Bytes", total = true}}

--- The rows M.distributions groups, from ops (as M.run_parts'): op (the
-- kind: kernels, each memcpy label, the memset), run, dur, bytes.
function M.distribution_rows(ops)
  return ops:select{"run", "dur", "bytes"}:with("op", nsl.where(~ops.memop, "kernels", ops.name))
end

--- The groups' figures M.distributions makes of the rows (M.distribution_rows)
-- of every process of an MPI job (collective; nsl.util.percentiles.reduce:
-- the same bits, percentiles included): for its aggregates on rank 0, nil
-- on every process where they cannot be made (the rows go instead).
function M.reduce_distributions(rows)
  return percentiles.reduce(rows, {"op", "run"}, DIST_VALUES, {qs = QS})
end

--- The distributions of single operations per kind (kernels, each memcpy
-- label, the memset) and run: instances, total, mean, percentiles and max
-- of the duration and of the bytes; of rows (M.distribution_rows), or of
-- the aggregates of a distributed run (M.reduce_distributions; rows unread).
function M.distributions(rows, R, aggregates)
  local d = percentiles.table(rows, {"op", "run"}, DIST_VALUES, {qs = QS, aggregates = aggregates})
  local rank = d.op:map(function(s) return s == "kernels" and "0" or (s == MEMSET and "2" or "1" .. s) end)
  d = d:with("_rank", rank):sort("_rank", "run")
  local dcols = {{"Run", runs.labels(R, d.run)}, {"Operation", d.op}}
  for _, c in ipairs(d:columns()) do
    if c ~= "op" and c ~= "run" and c ~= "_rank" then dcols[#dcols + 1] = {c, d[c]} end
  end
  return nsl.table(dcols)
end

return M
