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
  run = function(trace, args, out)
    local limit = args.limit > 0 and args.limit or nil
    local need_proj = wanted(args.only, "proj_sum") or wanted(args.only, "trace") or wanted(args.only, "tree")
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
    local P, R
    if need_proj then
      P = nvtx.project(trace, {strip = args.normalize and nvtx.pytorch_suffixes or nil, release = true})
      R = P.ranges
    else
      R = trace.nvtx
      R:load{"report", "dur", "kind", "text", "domain"}
      R = R:with("name", nvtx.names(R))
    end
    local want_sum, want_proj = wanted(args.only, "sum"), wanted(args.only, "proj_sum")
    local sum, proj
    if want_sum or want_proj then
      sum, proj = nvtx.summaries(R, {per_report = args.per_report, proj = need_proj and want_proj})
    end
    if want_sum then
      out:table("nvtx_sum", sum, {title = "NVTX Range Summary (nvtx_sum)", limit = limit, nsys_stats = true})
    end
    if not need_proj then return end
    if #P.ops == 0 then
      out:text("No GPU operations (kernels, memcpy, memset): nothing to project.")
      return
    end
    if want_proj then
      out:table("nvtx_gpu_proj_sum", proj, {title = "NVTX GPU Projection Summary (nvtx_gpu_proj_sum)", limit = limit,
        nsys_stats = true, col_decimals = {["Avg GPU Ops"] = 1, ["Avg Range Lvl"] = 1, ["Avg Num Child"] = 1}})
    end
    if wanted(args.only, "trace") then
      out:table("nvtx_gpu_proj_trace", nvtx.projected(R), {title = "NVTX GPU Projection Trace (nvtx_gpu_proj_trace)",
        limit = limit, nsys_stats = true})
    end
    if wanted(args.only, "tree") then
      local T = nvtx.tree(P)
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
        report.int(T.outside.ops), report.int(#P.ops), report.duration(T.outside.gpu_time), report.duration(total)))
    end
  end,
}
