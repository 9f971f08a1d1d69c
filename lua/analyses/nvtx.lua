-- nvtx -- NVTX range summaries with the semantics of `nsys stats` reports
-- nvtx_sum (CPU durations), nvtx_gpu_proj_sum and nvtx_gpu_proj_trace (the
-- ranges projected onto the GPU through the API calls they enclose), and
-- the tree of range names with inclusive and exclusive CPU and GPU times.
-- Definitions: lua/nsl/nvtx.lua.
local nsl = require("nsl")
local nvtx = require("nsl.nvtx")
local report = require("nsl.report")

local function wanted(list, part)
  if list == "all" then return true end
  for p in list:gmatch("[^,%s]+") do if p == part then return true end end
  return false
end

local function needs_projection(args)
  return wanted(args.only, "proj_sum") or wanted(args.only, "trace") or wanted(args.only, "tree")
end

-- The patterns the tree's labels drop (nsl.nvtx.project's opts.strip).
local function strip_of(args) return args.normalize and nvtx.pytorch_suffixes or nil end

-- The ranges of trace, projected onto the GPU where the parts asked need it:
-- P (nsl.nvtx.project's, or nil) and its ranges R (trace.nvtx with names).
local function ranges(trace, args, need_proj)
  if need_proj then
    local P = nvtx.project(trace, {strip = strip_of(args), release = true})
    return P, P.ranges
  end
  local R = trace.nvtx
  R:load{"report", "dur", "kind", "text", "domain"}
  return nil, R:with("name", nvtx.names(R))
end

-- The tables of the parts asked: from the ranges (P, R) of trace in one process (the summaries' aggregates
-- kept in its column cache, nsl.nvtx.summaries), or from a distributed run's parts (got: sum, proj, tree
-- figures, projected ranges, ops).
local function print_parts(trace, args, out, P, R, got)
  local limit = args.limit > 0 and args.limit or nil
  local need_proj = needs_projection(args)
  local want_sum, want_proj = wanted(args.only, "sum"), wanted(args.only, "proj_sum")
  -- the tree's figures as the column cache kept them, else its paths made on a thread of their own while the
  -- summaries are
  local want_tree = P and #P.ops > 0 and wanted(args.only, "tree")
  local kept_tree = want_tree and nvtx.kept_tree_figures(trace, P, strip_of(args)) or nil
  local paths <close> = want_tree and not kept_tree and nvtx.tree_paths_job(P) or nil
  local sum, proj
  if want_sum or want_proj then
    sum, proj = nvtx.summaries(R, {per_report = args.per_report, proj = need_proj and want_proj,
                                   aggregates = got and {sum = got.sum, proj = got.proj}, trace = trace})
  end
  if want_sum then
    out:table("nvtx_sum", sum, {title = "NVTX Range Summary (nvtx_sum)", limit = limit, nsys_stats = true})
  end
  if not need_proj then return end
  local nops = got and got.ops or #P.ops
  if nops == 0 then
    out:text("No GPU operations (kernels, memcpy, memset): nothing to project.")
    return
  end
  if want_proj then
    out:table("nvtx_gpu_proj_sum", proj, {title = "NVTX GPU Projection Summary (nvtx_gpu_proj_sum)", limit = limit,
      nsys_stats = true, col_decimals = {["Avg GPU Ops"] = 1, ["Avg Range Lvl"] = 1, ["Avg Num Child"] = 1}})
  end
  if wanted(args.only, "trace") then
    out:table("nvtx_gpu_proj_trace", got and nvtx.sort_projected(got.trace) or nvtx.projected(R),
      {title = "NVTX GPU Projection Trace (nvtx_gpu_proj_trace)", limit = limit, nsys_stats = true})
  end
  if wanted(args.only, "tree") then
    local F = got and got.tree or kept_tree
    if not F then
      F = nvtx.tree_figures(P, paths)
      nvtx.keep_tree_figures(trace, F, strip_of(args))
    end
    local T = nvtx.tree(P, {figures = F})
    local nodes = T.nodes
    if args.max_depth >= 0 then nodes = nodes:filter(nodes.depth:le(args.max_depth)) end
    local indent = {}
    for i = 1, #nodes do indent[i] = string.rep("  ", nodes.depth[i]) .. nodes.name[i] end
    local shown = nsl.table{
      {"GPU Time (ns)", nodes.gpu_time}, {"GPU Self (ns)", nodes.gpu_self}, {"CPU Time (ns)", nodes.cpu_time},
      {"CPU Self (ns)", nodes.cpu_self}, {"Instances", nodes.instances}, {"Ops", nodes.ops},
      {"Depth", nodes.depth}, {"Range", #indent > 0 and nsl.column(indent) or nodes.name}, {"Path", nodes.path}}
    out:table("nvtx_tree", shown, {title = "NVTX Range Tree (GPU time of the ops launched inside each range)",
      limit = limit})
    local total = T.gpu_time
    out:text(string.format("GPU ops launched outside every NVTX range: %s of %s ops, %s of %s GPU time.",
      report.int(T.outside.ops), report.int(nops), report.duration(T.outside.gpu_time), report.duration(total)))
  end
end

-- ---- a distributed run (nsl.distributed) ----
-- Each process projects its own reports' ranges onto their GPU operations
-- (a range and the calls it encloses are on one thread of one report); the
-- two summaries are aggregated by every process together
-- (nsl.nvtx.reduce_summaries: the same bits, medians included) and the
-- tree's figures per node are added up on rank 0 (nsl.nvtx.merge_tree_figures:
-- nodes are paths of names), so no range or operation moves; the
-- projection trace (--arg only=trace) is the processes' projected ranges,
-- a row each (the rows of the output).  No range in any report (CSV
-- summaries, or the one-process error) and durations too large for exact
-- deviations are left to rank 0, which reads the trace as one process
-- does.

local projected = setmetatable({}, {__mode = "k"})   -- a process's view -> {P =, R =}

local function collective(trace, args, first)
  local mpi = nsl.mpi
  local mine = projected[trace]
  local P, R = mine.P, mine.R
  local total = mpi.allreduce(nsl.column{#R, P and #P.ops or 0}:cast("i64"), "sum"):totable()
  if total[1] == 0 then return {} end
  local _, rank = mpi.start()
  local function me_only(t) return rank == 0 and t or t:head(0) end   -- (what rank 0 alone holds)
  local need_proj = needs_projection(args)
  local parts = {nv_counts = me_only(nsl.table{{"ops", nsl.rep(total[2], 1)}})}
  if wanted(args.only, "sum") or wanted(args.only, "proj_sum") then
    local got = nvtx.reduce_summaries(R, {per_report = args.per_report,
                                          proj = need_proj and wanted(args.only, "proj_sum")}, first)
    if not got then return {} end
    parts.nv_sum = got.sum
    if got.proj then parts.nv_proj = got.proj end
  end
  if need_proj and wanted(args.only, "tree") then parts.nv_tree = nvtx.tree_figures_table(nvtx.tree_figures(P)) end
  if wanted(args.only, "trace") then
    -- the number of this process's first range in the whole trace (the rows' range and parent count from it)
    local nproc, me = mpi.start()
    local counts = {}
    for p = 1, nproc do counts[p] = p == me + 1 and #R or 0 end
    counts = mpi.allreduce(nsl.column(counts):cast("i64"), "sum"):totable()
    local first_row = 0
    for p = 1, me do first_row = first_row + counts[p] end
    parts.nv_trace = nvtx.projected(R, {unsorted = true, first_row = first_row})
  end
  return parts
end

return {
  name = "nvtx",
  description = "NVTX range summary, GPU projection of the ranges and the tree of range names (nsys nvtx_sum, nvtx_gpu_proj_sum)",
  args = {
    only = {default = "sum,proj_sum,tree", choices = {"all", "sum", "proj_sum", "trace", "tree"}, list = true,
            help = "comma list of parts: sum (nvtx_sum), proj_sum (nvtx_gpu_proj_sum), trace (nvtx_gpu_proj_trace, " ..
                   "one row per projected range), tree; or all"},
    per_report = {default = false, help = "summaries per report instead of over all reports"},
    normalize = {default = true, help = "tree: drop PyTorch's ', seq = N' and ', op_id = N' so each operator is one node"},
    max_depth = {default = -1, help = "tree: deepest level printed (0: top-level ranges only; -1: all)"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run nvtx trace.sqlite --arg only=proj_sum,tree --format csv",
  -- parts: a distributed run's aggregates (the collective part above)
  run = function(trace, args, out, parts)
    local limit = args.limit > 0 and args.limit or nil
    local need_proj = needs_projection(args)
    if parts and parts.nv_counts and #parts.nv_counts > 0 then
      return print_parts(trace, args, out, nil, nil, {sum = parts.nv_sum, proj = parts.nv_proj,
        ops = parts.nv_counts.ops[1], tree = parts.nv_tree and nvtx.merge_tree_figures(parts.nv_tree),
        trace = parts.nv_trace})
    end
    -- a trace of one report whose column cache keeps every part asked: read, nothing projected
    local want_sum, want_proj = wanted(args.only, "sum"), wanted(args.only, "proj_sum")
    local got = wanted(args.only, "tree") and not wanted(args.only, "trace") and not args.per_report and
                nvtx.kept_parts(trace, {strip = strip_of(args), sums = want_sum or want_proj, proj = want_proj})
    if got then return print_parts(trace, args, out, nil, nil, got) end
    -- load first: the row count then comes with the columns, not from a scan of its own
    trace.nvtx:load(need_proj and nvtx.range_columns or {"report", "dur", "kind", "text", "domain"})
    if #trace.nvtx == 0 and #trace.sums > 0 then   -- nsys stats CSV files: nvtx_sum as they give it
      local s = trace.sums
      s = s:filter(s.kind:eq("nvtx_sum")):sort("-total", "name")
      local paths = report.files(trace.reports.path:totable())
      if #s == 0 then
        nsl.fail(string.format("%s: the CSV files hold no nvtx_sum report; add it: nsys stats -r nvtx_sum --format csv " ..
                               "-o PREFIX REPORT (the projection and tree need the report itself)", paths))
      end
      out:table("nvtx_sum", nsl.table{{"Time (%)", s.pct}, {"Total Time (ns)", s.total}, {"Instances", s.count},
        {"Avg (ns)", s.avg}, {"Med (ns)", s.med}, {"Min (ns)", s.min}, {"Max (ns)", s.max}, {"StdDev (ns)", s.std},
        {"Style", s.style}, {"Range", s.name}}, {title = "NVTX Range Summary (nvtx_sum) from the CSV files", limit = limit,
                                                nsys_stats = true})
      out:text("The GPU projection and the range tree need the ranges themselves: give the .nsys-rep or its export.")
      return
    end
    if #trace.nvtx == 0 then
      local paths = trace.reports.path:totable()
      nsl.fail(string.format("%s: no NVTX ranges; was it profiled with -t nvtx?", report.files(paths)))
    end
    local P, R = ranges(trace, args, need_proj)
    print_parts(trace, args, out, P, R)
  end,
  distributed = {
    step = function(trace, args)
      local need_proj = needs_projection(args)
      trace.nvtx:load(need_proj and nvtx.range_columns or {"report", "dur", "kind", "text", "domain"})
      local P, R = ranges(trace, args, need_proj)
      projected[trace] = {P = P, R = R}
      return {}
    end,
    collective = collective,
  },
}
