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
local gpu_ops = require("nsl.gpu_ops")
local runs = require("nsl.runs")
local compare = require("nsl.compare")

--- The nsl.gpu_ops columns compare reads, in one run or the distributed step.
local function ops_columns(args)
  return {columns = {"report", "device", "start", "stop", "dur"}, names = args.names, memop = true, kind = true,
          bytes = true}
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

--- The 0-based base run of R (--arg base; default the first); a usage error when it names none.
local function base_of(R, args)
  if args.base == "" then return 0 end
  local b, err = runs.find(R, args.base)
  if not b then nsl.fail("compare: base: " .. err, "usage") end
  return b
end

--- The GPU operations of trace (ops_columns) with their run (R), rows of no
-- run left out, and the rows kept (0-based rows of every operation);
-- first: the whole trace's number of the trace's report 0 (a distributed
-- run's view; the report column stays the view's own).
local function run_ops(trace, args, R, first)
  local ops = gpu_ops.table(trace, ops_columns(args))
  local run = runs.column(R, ops.report:cast("i64") + first)
  local keep = run:ge(0)
  return ops:with("run", run):filter(keep), keep:indices()
end

--- The memory copies compare reads (report, kind, bytes), report numbers
-- the whole trace's (first: as run_ops's).
local function memcpy_of(trace, first)
  local mc = trace.memcpy
  mc:load{"report", "kind", "bytes"}
  return mc:select{"report", "kind", "bytes"}:with("report", mc.report:cast("i64") + (first or 0))
end

--- The NVTX ranges compare reads (report, kind, dur, text, domain), as memcpy_of's; nil without.
local function nvtx_of(trace, first)
  local nv = trace.nvtx
  if #nv == 0 then return nil end
  nv:load{"report", "kind", "dur", "text", "domain"}
  return nv:select{"report", "kind", "dur", "text", "domain"}:with("report", nv.report:cast("i64") + (first or 0))
end

--- The durations of the per-name tables (key, run, dur): kernels per kernel
-- name, classes per class of every GPU operation (map; kept: run_ops's
-- rows), nvtx per NVTX name (nvt of nsl.compare.run_parts, nil without).
local function key_rows(trace, args, ops, kept, map, nvt)
  local kern = ops:filter(~ops.memop)
  local cls_names = ops.name
  if map.names == "short" and args.names ~= "short" then   -- the map names kernels by their short names
    cls_names = gpu_ops.table(trace, {columns = {}, names = "short"}).name:gather(kept)
  end
  return {kernels = nsl.table{{"key", kern.name}, {"run", kern.run}, {"dur", kern.dur}},
          classes = nsl.table{{"key", classes.classify_column(cls_names, map)}, {"run", ops.run}, {"dur", ops.dur}},
          nvtx = nvt}
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
  -- parts: a distributed run's sums, per-name statistics and distributions (the collective part below)
  run = function(trace, args, out, parts)
    local formats = figure_formats(args.figures)   -- a bad value fails before anything is printed
    local R = runs.resolve(trace, args.runs, args.labels)
    local base = base_of(R, args)
    local map = classes.of_args(args)
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
    -- the figures draw every kernel's duration: with them, rank 0 reads the trace as one process does
    local drawn = #formats > 0 and out:carries_figures()
    local got = parts and parts.cmp_dev and not drawn and parts
    local W, ops, kept, st   -- (st: the per-name statistics a distributed run made; else from the rows here)
    if got then
      W = compare.add_run_parts{{dev = got.cmp_dev, span = got.cmp_span, opsum = got.cmp_opsum,
                                 mcsum = got.cmp_mcsum, nvcount = got.cmp_nvcount}}
      st = {kernels = got.cmp_kernels, classes = got.cmp_classes, nvtx = got.cmp_nvtx}
    else
      ops, kept = run_ops(trace, args, R, 0)
      local P = compare.run_parts(ops, memcpy_of(trace), nvtx_of(trace), R)
      W = compare.add_run_parts{P}
      W.nvt = P.nvt
    end

    local lines = {}
    for r = 1, n do
      lines[r] = string.format("  %s%s: %s", labels[r], r - 1 == base and " (base)" or "",
                               table.concat(R.paths[r], ", "))
    end
    out:text(string.format("%d run%s:\n%s", n, n == 1 and "" or "s", table.concat(lines, "\n")))

    -- ---- macro: per device, then per run ----
    local T, X = compare.whole_runs(trace, R, base, W)
    out:table("devices", T.devices, {title = "Per device", limit = args.top > 0 and 4 * args.top or nil})
    out:table("macro", T.macro, {title = "Whole runs: GPU time summed over devices"})
    out:table("operations", T.operations, {title = "Whole runs: operations and transfer volumes"})
    if T.changes then out:table("changes", T.changes, {title = "Change against the base run (% of its value)"}) end

    -- ---- meso: per kernel name, class, NVTX range ----
    local K = not got and key_rows(trace, args, ops, kept, map, W.nvt) or {}
    local kt = compare.side_by_side(K.kernels, R, base, "Name", st and st.kernels)
    if kt then out:table("kernels", kt, {title = "Per kernel name", limit = limit}) end
    local ct = compare.side_by_side(K.classes, R, base, "Class", st and st.classes)
    if ct then out:table("classes", ct, {title = "Per kernel class (" .. map.source .. ")", limit = limit}) end
    local nvtt
    if st or (W.nvt and #W.nvt > 0) then
      nvtt = compare.side_by_side(W.nvt, R, base, "Range", st and st.nvtx)
    end
    if nvtt then out:table("nvtx", nvtt, {title = "Per NVTX range name (CPU time)", limit = limit}) end

    -- ---- micro: distributions of single operations ----
    local drows = got and got.cmp_dist_rows or (not got and compare.distribution_rows(ops))
    out:table("distributions", compare.distributions(drows or nil, R, got and got.cmp_dist),
              {title = "Single operations: durations and sizes"})

    -- ---- figures ----
    if drawn then
      local kdur = {}
      local of_run = K.kernels:slices("run")
      for r = 1, n do kdur[r] = of_run(r - 1).dur end
      out:value("figures", draw_figures(out, formats, {n = n, labels = labels, kinds = X.kinds,
        kind_bytes = X.kind_bytes, memset_bytes = X.memset_bytes, macro = X.sum, kernels = kt, classes = ct,
        nvtx = nvtt, kernel_dur = kdur}))
    end
  end,
  -- distributed (nsl.distributed): the runs are resolved on every process
  -- (every report's name and path gathered and sent to all); each process
  -- measures its own devices and sums its operations, copies and NVTX
  -- ranges per run and kind; the durations per kernel name, class and NVTX
  -- name go to the process that owns each name (nsl.mpi.exchange_rows: a
  -- hash of the name), which makes the name's statistics and Mann-Whitney
  -- tests as one process would (they depend on the name's durations alone),
  -- and the distributions per operation kind are aggregated together
  -- (nsl.util.percentiles.reduce; their rows go to rank 0 where it cannot).
  -- Rank 0 receives sums, one row per device and the names' statistics,
  -- never an operation.  A run that draws the figures (every kernel's
  -- duration), an nsys-jax archive or arguments rank 0 will refuse leave
  -- the trace to rank 0, which reads it as one process does.
  distributed = {
    step = function() return {} end,
    collective = function(view, args, first)
      local mpi = nsl.mpi
      -- the runs, as rank 0 resolves them over the whole trace
      local reps = view.reports
      local got, err = mpi.gather(nsl.table{{"name", reps.name}, {"path", reps.path}})
      if not mpi.all_ok(got ~= nil, err) then return {} end
      local all
      all, err = mpi.bcast_table(type(got) == "table" and mpi.concat(got) or nil)
      if not mpi.all_ok(all ~= nil, err) then return {} end
      local ok, R, base, map = pcall(function()
        local R = runs.resolve({reports = all}, args.runs, args.labels)
        figure_formats(args.figures)
        return R, base_of(R, args), classes.of_args(args)
      end)
      if not mpi.agree(ok and not jax.is_archive(view)) then return {} end   -- rank 0's run says why
      local ops, kept = run_ops(view, args, R, first)
      local W = compare.run_parts(ops, memcpy_of(view, first), nvtx_of(view, first), R)
      local res = {cmp_dev = W.dev, cmp_span = W.span, cmp_opsum = W.opsum, cmp_mcsum = W.mcsum,
                   cmp_nvcount = W.nvcount}
      -- each name's durations to the process that owns it, its statistics from there
      local K = key_rows(view, args, ops, kept, map, W.nvt)
      for _, k in ipairs{"kernels", "classes", "nvtx"} do
        local t = K[k] or nsl.table{{"key", nsl.column{""}}, {"run", nsl.rep(0, 1)}, {"dur", nsl.rep(0, 1)}}:head(0)
        local mine, xerr = mpi.exchange_rows(t, mpi.owners(t.key))
        if not mpi.all_ok(mine ~= nil, xerr) then return {} end
        res["cmp_" .. k] = compare.key_stats(mine, R, base)
      end
      local rows = compare.distribution_rows(ops)
      res.cmp_dist = compare.reduce_distributions(rows)
      if not res.cmp_dist then res.cmp_dist_rows = rows end
      return res
    end,
  },
}
