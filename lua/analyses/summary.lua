-- summary -- GPU kernel, memory-operation and CUDA API summaries with the
-- semantics of `nsys stats` reports cuda_gpu_kern_sum, cuda_gpu_mem_time_sum,
-- cuda_gpu_mem_size_sum and cuda_api_sum; over all reports or per report.
local nsl = require("nsl")
local stats = require("nsl.stats")
local gpu_ops = require("nsl.gpu_ops")

--- The memory operations of t (memcpy and memset together) as one table:
-- dur, mb (bytes / 10^6), op (nsys's operation label), report.
local function memops(trace)
  local mc, ms = trace.memcpy, trace.memset
  mc:load{"start", "stop", "dur", "bytes", "kind", "report"}
  ms:load{"start", "stop", "dur", "bytes", "report"}
  return nsl.table{
    {"report", nsl.concat(mc.report:cast("i64"), ms.report:cast("i64"))},
    {"dur", nsl.concat(mc.dur, ms.dur)},
    {"mb", nsl.concat(mc.bytes / 1e6, ms.bytes / 1e6)},
    {"op", nsl.concat(mc.kind:map(gpu_ops.memcpy_label), nsl.rep(gpu_ops.memset_label, #ms))},
  }
end

local function wanted(list, part)
  if list == "" or list == "all" then return true end
  for p in list:gmatch("[^,%s]+") do if p == part then return true end end
  return false
end

return {
  name = "summary",
  description = "GPU kernel, memory-operation and CUDA API summaries (nsys stats semantics)",
  args = {
    per_report = {default = false, help = "one summary per report instead of one over all reports"},
    base = {default = false, help = "group kernels by base (short) name, as cuda_gpu_kern_sum:base"},
    mangled = {default = false, help = "group kernels by mangled name, as cuda_gpu_kern_sum:mangled"},
    only = {default = "all", help = "comma list of parts: kernels, mem_time, mem_size, api"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run summary trace.sqlite --arg only=kernels --format csv",
  run = function(trace, args, out)
    if #trace.kernels + #trace.memcpy + #trace.memset + #trace.api == 0 and #trace.gpu_ranges > 0 then
      -- an nsys-jax trace: NVTX ranges projected onto the GPU, no CUDA activity tables
      return require("analyses.jax_summary").run(trace, {programs = "fingerprint", top = 10}, out)
    end
    if #trace.kernels + #trace.memcpy + #trace.memset + #trace.api == 0 then
      local paths = trace.reports.path:totable()
      nsl.fail(string.format("%s: no CUDA activity (no kernels, memory operations or CUDA API calls); " ..
        "was it profiled with -t cuda?", table.concat(paths, ", ")))
    end
    local key_name = args.base and "name" or (args.mangled and "mangled" or "demangled")
    local keys = args.per_report and {"report"} or nil
    local limit = args.limit > 0 and args.limit or nil
    local rnames = trace.reports.name
    -- per report, the report column shows the report's name
    local function named(t)
      if not args.per_report then return t end
      return t:with("report", t.report:map(function(r) return rnames[r + 1] end))
    end
    if wanted(args.only, "kernels") then
      local k = trace.kernels
      out:table("cuda_gpu_kern_sum",
        named(stats.time_summary(k, key_name, {keys = keys, count_label = "Instances", name_label = "Name"})),
        {title = "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)", limit = limit, nsys_stats = true})
    end
    local ops
    if wanted(args.only, "mem_time") then
      ops = ops or memops(trace)
      out:table("cuda_gpu_mem_time_sum",
        named(stats.time_summary(ops, "op", {keys = keys, count_label = "Count", name_label = "Operation"})),
        {title = "CUDA GPU MemOps Summary by Time (cuda_gpu_mem_time_sum)", limit = limit, nsys_stats = true})
    end
    if wanted(args.only, "mem_size") then
      ops = ops or memops(trace)
      out:table("cuda_gpu_mem_size_sum", named(stats.size_summary(ops, "op", {keys = keys})),
        {title = "CUDA GPU MemOps Summary by Size (cuda_gpu_mem_size_sum)", limit = limit, decimals = 3, nsys_stats = true})
    end
    if wanted(args.only, "api") then
      local api = trace.api
      api:load{"source", "name", "start", "stop", "dur", "report"}
      api = api:filter(api.source:eq("runtime"))
      out:table("cuda_api_sum",
        named(stats.time_summary(api, "name", {keys = keys, count_label = "Num Calls", name_label = "Name"})),
        {title = "CUDA API Summary (cuda_api_sum)", limit = limit, nsys_stats = true})
    end
  end,
}
