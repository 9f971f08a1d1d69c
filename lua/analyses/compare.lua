-- compare -- several runs side by side, labelled:
--   nsl run compare a.sqlite b.sqlite c.sqlite --arg labels="1 GPU,2 GPU,4 GPU"
-- at three levels:
--   macro  the whole run (tables macro, operations, changes, devices):
--          GPU Span   first start to last end of the run's GPU operations
--                     (kernels, memcpy, memset; its reports aligned in time)
--          per device (report, device), summed over the run's devices
--          (lua/nsl/overlap.lua): Device Span (first start to last end on the
--          device), Busy (the union of its operations), Idle = Device Span -
--          Busy, Compute Only, NCCL Only, Both, Memory Only (the overlap
--          analysis's sets); Busy (%) and NCCL Hidden (%) = Both / (Both +
--          NCCL Only) of the sums;
--          counts and summed durations of kernels, memcpy and memset, bytes
--          moved per memcpy kind and by memset, NVTX ranges;
--          `changes`: every count and time in % of the base run's.
--   meso   per kernel name (kernels), kernel class (classes: every GPU
--          operation, lua/nsl/classes.lua) and NVTX range name (nvtx: CPU
--          durations of push/pop and start/end ranges, PyTorch's ", seq = N"
--          and ", op_id = N" dropped from the names): one row per name and
--          run -- Instances, Total, Time (%) of the run's total in the
--          table, Mean, p50, p90, p99 (lua/nsl/util/percentiles.lua: linear
--          interpolation), Max, the change of Total and p50 in % of the
--          base run's, and the two-sided p of a Mann-Whitney U test of the
--          durations against the base run's (lua/nsl/stats.lua; empty below
--          3 instances on either side).  A name absent from a run has a row
--          with 0 instances there.  Names are ordered by their largest total
--          over the runs.
--   micro  the distribution of single operations per kind (kernels, each
--          memcpy kind, memset) and run: instances, total, mean, p50, p90,
--          p99, max of the duration and of the bytes (distributions); the
--          figures show every kernel's duration per run.
--
-- Runs (lua/nsl/runs.lua): by default every input file is a run -- an export,
-- or a bundle with all its ranks; --arg runs=report makes every report one;
-- --arg runs="1+2,3+4" groups reports explicitly.  --arg labels names the
-- runs in order (default: the file names).  The base of the changes is the
-- first run, or --arg base=LABEL|NUMBER.
--
-- Figures, with --out DIR (one file per format of --arg figures), --embed and in
-- notebooks: grouped bars of the macro times, of the transfer volumes, of
-- the top kernels, classes and NVTX ranges; violins, overlaid histograms
-- and CDFs of the kernel durations per run.  The data behind each figure is
-- kept as the value `figures` (results.json).
local nsl = require("nsl")
local jax = require("nsl.jax")
local classes = require("nsl.classes")
local distributed = require("nsl.distributed")
local gpu_ops = require("nsl.gpu_ops")
local nvtx = require("nsl.nvtx")
local overlap = require("nsl.overlap")
local percentiles = require("nsl.util.percentiles")
local runs = require("nsl.runs")
local stats = require("nsl.stats")

local QS = percentiles.default
local MED = 1   -- the index of the median in QS
for j, q in ipairs(QS) do if q == 0.5 then MED = j end end

--- The nsl.gpu_ops columns compare reads, in one run or the distributed step.
local function ops_columns(args)
  return {names = args.names, memop = true, kind = true, bytes = true}
end

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
  cols[#cols + 1] = {key_label, nsl.column(c.key)}
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

--- The formats of --arg figures: a list of "png"/"svg" (empty: none).
local function figure_formats(spec)
  local list = {}
  spec = spec:lower()
  if spec == "both" then return {"png", "svg"} end
  if spec == "none" or spec == "" then return list end
  for _, f in ipairs(runs.split(spec, ",")) do
    if f ~= "png" and f ~= "svg" then
      nsl.fail(string.format("compare: --arg figures=%s: expected png, svg, both or none", spec), "usage")
    end
    list[#list + 1] = f
  end
  return list
end

--- Grouped-bar series of a side-by-side table: the first `top` keys (its
-- rows come key by key, n runs each) as categories, one series per run.
local function top_bars(t, key, n, top)
  local cats, series = {}, {}
  if not t then return cats, series end
  local keys, totals, labels = t[key]:totable(), t["Total (ns)"]:totable(), t.Run:totable()
  for r = 1, n do series[r] = {label = labels[r], values = {}} end
  for i = 1, math.min(#keys, top * n) do
    local c, r = (i - 1) // n + 1, (i - 1) % n + 1
    cats[c] = keys[i]
    series[r].values[c] = totals[i]
  end
  return cats, series
end

--- Draws the figures (see the header) through nsl.plot and gives them to
-- out:figure, files in `formats`; F holds the data.  Returns the data behind
-- each figure, by name.
local function draw_figures(out, formats, F)
  local plot = require("nsl.plot")
  local data = {}
  local function emit(name, draw) data[name] = out:figure(name, draw, {formats = formats}) end
  local n, labels = F.n, F.labels
  local function series_of(values_of)
    local s = {}
    for r = 1, n do s[r] = {label = labels[r], values = values_of(r)} end
    return s
  end
  emit("macro_time", function(f)
    return plot.grouped_bars{format = f, title = "GPU time summed over devices", unit = "ns", ylabel = "time",
      categories = {"Busy", "Idle", "Compute Only", "NCCL Only", "Both", "Memory Only"},
      series = series_of(function(r)
        local m = F.macro
        return {m.busy[r], m.idle[r], m.compute_only[r], m.nccl_only[r], m.both[r], m.memory_only[r]}
      end)}
  end)
  emit("transfers", function(f)
    local cats = {}
    for i, k in ipairs(F.kinds) do cats[i] = k end
    cats[#cats + 1] = "memset"
    return plot.grouped_bars{format = f, title = "Bytes moved by memcpy kind and memset", unit = "bytes",
      ylabel = "bytes", categories = cats, series = series_of(function(r)
        local v = {}
        for i, k in ipairs(F.kinds) do v[i] = F.kind_bytes(r, k) end
        v[#v + 1] = F.memset_bytes[r]
        return v
      end)}
  end)
  for _, b in ipairs{{"kernels_top", F.kernels, "Name", "Kernel time: the top kernel names"},
                     {"classes", F.classes, "Class", "GPU time per kernel class"},
                     {"nvtx_top", F.nvtx, "Range", "NVTX range time (CPU): the top range names"}} do
    if b[2] then
      local cats, series = top_bars(b[2], b[3], n, 10)
      emit(b[1], function(f)
        return plot.grouped_bars{format = f, title = b[4], unit = "ns", ylabel = "total time", categories = cats,
                                 series = series}
      end)
    end
  end
  local groups = {}
  for r = 1, n do groups[r] = {label = labels[r], values = F.kernel_dur[r]} end
  emit("kernel_durations_violin", function(f)
    return plot.violin(groups, {format = f, title = "Kernel durations per run", unit = "ns", log = true,
                                ylabel = "duration"})
  end)
  emit("kernel_durations_cdf", function(f)
    return plot.cdf(groups, {format = f, title = "Kernel durations per run (CDF)", unit = "ns", log = true,
                             xlabel = "duration"})
  end)
  -- overlaid histograms: the runs' counts over shared logarithmic bins, drawn as lines
  local lo, hi
  for r = 1, n do
    local c = F.kernel_dur[r]
    local pos = nsl.table{{"v", c}}:filter(c:gt(0)).v
    if #pos > 0 then
      lo = lo and math.min(lo, pos:min()) or pos:min()
      hi = hi and math.max(hi, pos:max()) or pos:max()
    end
  end
  if lo then
    if hi <= lo then lo, hi = lo / 1.5, hi * 1.5 end
    local nb = 40
    local edges, mid = {}, {}
    for i = 0, nb do edges[i + 1] = 10 ^ (math.log(lo, 10) + (math.log(hi, 10) - math.log(lo, 10)) * i / nb) end
    edges[1], edges[nb + 1] = lo, hi
    for i = 1, nb do mid[i] = math.sqrt(edges[i] * edges[i + 1]) end
    local hist = {edges = edges, series = {}}
    local lines = {}
    for r = 1, n do
      local counts = F.kernel_dur[r]:histogram(edges):totable()
      hist.series[r] = {label = labels[r], counts = counts}
      lines[r] = {label = labels[r], x = mid, y = counts}
    end
    emit("kernel_durations_hist", function(f)
      local cv = plot.lines{format = f, title = "Kernel durations per run (histograms, logarithmic bins)",
                            series = lines, xlog = true, xunit = "ns", xlabel = "duration", ylabel = "kernels"}
      return cv, hist
    end)
  end
  return data
end

return {
  name = "compare",
  description = "Several runs side by side: whole-run GPU time, overlap and transfers; per kernel, class and " ..
                "NVTX range; distributions; with labels, a base run, significance tests and figures",
  args = {
    runs = {default = "file", help = "what a run is: file (every input file), report (every report), or " ..
                                     "reports grouped as \"1+2,3+4\" (numbers or names)"},
    labels = {default = "", help = "comma-separated labels of the runs, in order (default: file or report names)"},
    base = {default = "", help = "the run the others are compared with (label or 1-based number; default: the first)"},
    names = {default = "demangled", choices = {"demangled", "short"}, help = "kernel names: demangled or short"},
    map = {default = "", help = "kernel class map, JSON (vLLM gputrc2graph or GPU Performance Analyzer; " ..
                                "default: the built-in map)"},
    model = {default = "", help = "which map of a map file that holds several"},
    top = {default = 20, help = "names per table printed as text (all go to files); names in the bar figures: up to 10"},
    figures = {default = "png,svg", help = "formats of the figures written under --out: png, svg, both, or none"},
  },
  example = "nsl run compare 1gpu.sqlite 2gpu.zip 4gpu.zip --arg labels=\"1 GPU,2 GPU,4 GPU\" --out cmp",
  -- parts: a distributed run's gathered columns (the step below)
  run = function(trace, args, out, parts)
    local formats = figure_formats(args.figures)   -- a bad value fails before anything is printed
    local R = runs.resolve(trace, args.runs, args.labels)
    local base = 0
    if args.base ~= "" then
      local b, err = runs.find(R, args.base)
      if not b then nsl.fail("compare: base: " .. err, "usage") end
      base = b
    end
    local map = classes.default_map()
    if args.map ~= "" then
      local err
      map, err = classes.load(args.map, args.model)
      if not map then nsl.fail(err) end
    end
    for _, w in ipairs(map.warnings) do out:finding{severity = "warning", message = w} end
    local n = R.n
    local labels = R.labels
    local limit = args.top > 0 and args.top * n or nil
    if jax.is_archive(trace) then   -- nsys-jax archives: no CUDA activity, their XLA programs instead
      out:text("nsys-jax archives keep no CUDA activity to compare; their XLA programs' steady-state times instead.")
      out:table("jax_programs", jax.compare_runs(trace, R.of_report, labels, base),
                {title = "Steady-state time per XLA program and run (ms per execution, mean over devices)", limit = limit})
      return
    end

    local ops = parts and distributed.ops_combine(parts.ops) or gpu_ops.table(trace, ops_columns(args))
    local run = runs.column(R, ops.report)
    ops = ops:with("run", run):filter(run:ge(0))
    local is_kernel = ~ops.memop

    local lines = {}
    for r = 1, n do
      lines[r] = string.format("  %s%s: %s", labels[r], r - 1 == base and " (base)" or "",
                               table.concat(R.paths[r], ", "))
    end
    out:text(string.format("%d run%s:\n%s", n, n == 1 and "" or "s", table.concat(lines, "\n")))

    -- ---- macro: per device, then per run ----
    local dev = overlap.per_device(ops)
    local drun = runs.column(R, dev.report)
    dev = dev:with("run", drun)
    local rep_names = trace.reports.name
    out:table("devices", nsl.table{{"Run", runs.labels(R, drun)},
      {"Report", rep_names:gather(dev.report:cast("i64"))}, {"Device", dev.device}, {"Span (ns)", dev.span},
      {"Busy (ns)", dev.busy}, {"Idle (ns)", dev.idle}, {"Busy (%)", pct_column(dev.busy, dev.span)},
      {"Compute Only (ns)", dev.compute_only}, {"NCCL Only (ns)", dev.nccl_only}, {"Both (ns)", dev.both},
      {"Memory Only (ns)", dev.memory_only}, {"NCCL Hidden (%)", pct_column(dev.both, dev.nccl)}},
      {title = "Per device", limit = args.top > 0 and 4 * args.top or nil})

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
    out:table("macro", nsl.table{{"Run", m.run}, {"Reports", m.reports}, {"Devices", m.devices},
      {"GPU Span (ns)", nullable(m.gspan, n, 0)}, {"Device Span (ns)", sum.span}, {"Busy (ns)", sum.busy},
      {"Idle (ns)", sum.idle}, {"Busy (%)", nullable(m.busy_pct, n, 0.0)}, {"Compute Only (ns)", sum.compute_only},
      {"NCCL Only (ns)", sum.nccl_only}, {"Both (ns)", sum.both}, {"Memory Only (ns)", sum.memory_only},
      {"NCCL Hidden (%)", nullable(m.hidden, n, 0.0)}},
      {title = "Whole runs: GPU time summed over devices"})

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
    out:table("operations", nsl.table(ocols), {title = "Whole runs: operations and transfer volumes"})

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
      out:table("changes", nsl.table(ccols), {title = "Change against the base run (% of its value)"})
    end

    -- ---- meso: per kernel name, class, NVTX range ----
    local kern = ops:filter(is_kernel)
    local kt = side_by_side(nsl.table{{"key", kern.name}, {"run", kern.run}, {"dur", kern.dur}}, R, base, "Name")
    if kt then out:table("kernels", kt, {title = "Per kernel name", limit = limit}) end
    local cls_names = ops.name
    if map.names == "short" and args.names ~= "short" then
      local short = gpu_ops.table(trace, {columns = {}, names = "short"})
      cls_names = short.name:gather(run:ge(0):indices())
    end
    local cls = classes.classify_column(cls_names, map)
    local ct = side_by_side(nsl.table{{"key", cls}, {"run", ops.run}, {"dur", ops.dur}}, R, base, "Class")
    if ct then out:table("classes", ct, {title = "Per kernel class (" .. map.source .. ")", limit = limit}) end
    local nvtt = nvt and #nvt > 0 and side_by_side(nvt, R, base, "Range") or nil
    if nvtt then out:table("nvtx", nvtt, {title = "Per NVTX range name (CPU time)", limit = limit}) end

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
    out:table("distributions", nsl.table(dcols), {title = "Single operations: durations and sizes"})

    -- ---- figures ----
    if #formats > 0 and out:carries_figures() then
      local kdur = {}
      local of_run = kern:slices("run")
      for r = 1, n do kdur[r] = of_run(r - 1).dur end
      local mset = {}
      for r = 1, n do mset[r] = get(byt, r, "memset") end
      out:value("figures", draw_figures(out, formats, {n = n, labels = labels, kinds = kinds,
        kind_bytes = function(r, k) return get(kbytes, r, k) end, memset_bytes = mset,
        macro = sum, kernels = kt, classes = ct, nvtx = nvtt, kernel_dur = kdur}))
    end
  end,
  -- distributed (nsl.distributed): each process makes the GPU operations,
  -- memcpy kinds and NVTX ranges of its reports; rank 0 compares the runs
  distributed = {
    step = function(trace, args)
      local mc, nv = trace.memcpy, trace.nvtx
      mc:load{"report", "kind", "bytes"}
      nv:load{"report", "kind", "dur", "text", "domain"}
      return {ops = distributed.ops_step(trace, ops_columns(args)),
              memcpy = mc:select{"report", "kind", "bytes"},
              nvtx = nv:select{"report", "kind", "dur", "text", "domain"}}
    end,
  },
}
