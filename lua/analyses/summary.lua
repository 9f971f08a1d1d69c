-- summary -- GPU kernel, memory-operation and CUDA API summaries with the
-- semantics of `nsys stats` reports cuda_gpu_kern_sum, cuda_gpu_mem_time_sum,
-- cuda_gpu_mem_size_sum and cuda_api_sum; over all reports or per report.
local nsl = require("nsl")
local stats = require("nsl.stats")
local gpu_ops = require("nsl.gpu_ops")
local report = require("nsl.report")

--- The memory operations of t (memcpy and memset together) as one table:
-- report, dur, bytes, op (nsys's operation label).
local function memops(trace)
  local mc, ms = trace.memcpy, trace.memset
  mc:load{"start", "stop", "dur", "bytes", "kind", "report"}
  ms:load{"start", "stop", "dur", "bytes", "report"}
  return nsl.table{
    {"report", nsl.concat(mc.report:cast("i64"), ms.report:cast("i64"))},
    {"dur", nsl.concat(mc.dur, ms.dur)},
    {"bytes", nsl.concat(mc.bytes:cast("i64"), ms.bytes:cast("i64"))},
    {"op", nsl.concat(gpu_ops.memcpy_labels(mc.kind), nsl.rep(gpu_ops.label(nil), #ms))},
  }
end

local summary_from_csv

local function wanted(list, part)
  if list == "" or list == "all" then return true end
  for p in list:gmatch("[^,%s]+") do if p == part then return true end end
  return false
end

-- The summaries of `nsys stats` CSV files, as the files give them (sorted
-- by total time); a part whose report is missing says which one to add.
local reports = {
  {part = "kernels", kind = "cuda_gpu_kern_sum", count = "Instances", name = "Name",
   title = "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)"},
  {part = "mem_time", kind = "cuda_gpu_mem_time_sum", count = "Count", name = "Operation",
   title = "CUDA GPU MemOps Summary by Time (cuda_gpu_mem_time_sum)"},
  {part = "api", kind = "cuda_api_sum", count = "Num Calls", name = "Name", title = "CUDA API Summary (cuda_api_sum)"},
}

summary_from_csv = function(trace, args, out)
  local s = trace.sums
  local limit = args.limit > 0 and args.limit or nil
  local prefix = table.concat(trace.reports.name:totable(), ", ")
  for _, r in ipairs(reports) do
    if wanted(args.only, r.part) then
      local t = s:filter(s.kind:eq(r.kind)):sort("-total", "name")
      if #t == 0 then
        out:text(string.format("%s: no %s report among the CSV files; add it: nsys stats -r %s --format csv -o %s REPORT",
                               r.title, r.kind, r.kind, nsl.shell_word(prefix)))
      else
        local cols = {}
        if args.per_report then cols[1] = {"report", t.report:map(function(i) return trace.reports.name[i + 1] end)} end
        for _, c in ipairs{{"Time (%)", t.pct}, {"Total Time (ns)", t.total}, {r.count, t.count}, {"Avg (ns)", t.avg},
                           {"Med (ns)", t.med}, {"Min (ns)", t.min}, {"Max (ns)", t.max}, {"StdDev (ns)", t.std},
                           {r.name, t.name}} do
          cols[#cols + 1] = c
        end
        out:table(r.kind, nsl.table(cols), {title = r.title .. " from the CSV files", limit = limit, nsys_stats = true})
      end
    end
  end
  if wanted(args.only, "mem_size") then
    out:text(string.format("cuda_gpu_mem_size_sum: nsl reads no such CSV report (sizes need the trace: an export or " ..
                           ".nsys-rep of %s)", prefix))
  end
end

--- The kernel name column the summary groups by.
local function key_of(args)
  return args.base and "name" or (args.mangled and "mangled" or "demangled")
end

return {
  name = "summary",
  description = "GPU kernel, memory-operation and CUDA API summaries (nsys stats semantics)",
  args = {
    per_report = {default = false, help = "one summary per report instead of one over all reports"},
    base = {default = false, help = "group kernels by base (short) name, as cuda_gpu_kern_sum:base"},
    mangled = {default = false, help = "group kernels by mangled name, as cuda_gpu_kern_sum:mangled"},
    only = {default = "all", choices = {"all", "kernels", "mem_time", "mem_size", "api"}, list = true, help = "comma list of parts: kernels, mem_time, mem_size, api"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run summary trace.sqlite --arg only=kernels --format csv",
  -- parts: a distributed run's gathered columns (the step below), standing for the trace's tables
  run = function(trace, args, out, parts)
    if #trace.kernels + #trace.memcpy + #trace.memset + #trace.api == 0 and #trace.sums > 0 then
      return summary_from_csv(trace, args, out)
    end
    if #trace.kernels + #trace.memcpy + #trace.memset + #trace.api == 0 and #trace.gpu_ranges > 0 then
      -- an nsys-jax trace: NVTX ranges projected onto the GPU, no CUDA activity tables
      return out:run("jax_summary", trace)
    end
    if #trace.kernels + #trace.memcpy + #trace.memset + #trace.api == 0 then
      local paths = trace.reports.path:totable()
      nsl.fail(string.format("%s: no CUDA activity (no kernels, memory operations or CUDA API calls); " ..
        "was it profiled with -t cuda?", report.files(paths)))
    end
    local key_name = key_of(args)
    local keys = args.per_report and {"report"} or nil
    local limit = args.limit > 0 and args.limit or nil
    local rnames = trace.reports.name
    -- per report, the report column shows the report's name
    local function named(t)
      if not args.per_report then return t end
      return t:with("report", t.report:map(function(r) return rnames[r + 1] end))
    end
    if wanted(args.only, "kernels") then
      local k = parts and parts.kernels or trace.kernels
      out:table("cuda_gpu_kern_sum",
        named(stats.time_summary(k, key_name, {keys = keys, count_label = "Instances", name_label = "Name",
                                               aggregates = parts and parts.kernels_sum})),
        {title = "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)", limit = limit, nsys_stats = true})
    end
    -- the memory operations, read once for both tables (a distributed run's aggregates stand for them)
    local ops
    local function memory_ops()
      ops = ops or (parts and parts.memops) or memops(trace)
      return ops
    end
    if wanted(args.only, "mem_time") then
      local got = parts and parts.memops_time_sum
      out:table("cuda_gpu_mem_time_sum",
        named(stats.time_summary(not got and memory_ops() or nil, "op",
                                 {keys = keys, count_label = "Count", name_label = "Operation", aggregates = got})),
        {title = "CUDA GPU MemOps Summary by Time (cuda_gpu_mem_time_sum)", limit = limit, nsys_stats = true})
    end
    if wanted(args.only, "mem_size") then
      local got = parts and parts.memops_size_sum
      out:table("cuda_gpu_mem_size_sum",
        named(stats.size_summary(not got and memory_ops() or nil, "op", {keys = keys, aggregates = got})),
        {title = "CUDA GPU MemOps Summary by Size (cuda_gpu_mem_size_sum)", limit = limit, decimals = 3, nsys_stats = true})
    end
    if wanted(args.only, "api") then
      local api = parts and (parts.api or parts.api_sum)
      if not api then
        api = trace.api
        api:load{"source", "name", "start", "stop", "dur", "report"}
        api = api:filter(api.source:eq("runtime"))
      end
      out:table("cuda_api_sum",
        named(stats.time_summary(api, "name", {keys = keys, count_label = "Num Calls", name_label = "Name",
                                               aggregates = parts and parts.api_sum})),
        {title = "CUDA API Summary (cuda_api_sum)", limit = limit, nsys_stats = true})
    end
  end,
  -- distributed (nsl.distributed): the kernel, memory-operation and API
  -- summaries are aggregated by all processes together, no row moved
  -- (stats.reduce_aggregates: the same bits, medians included), and rank 0
  -- runs run with them as parts (kernels_sum, memops_time_sum,
  -- memops_size_sum, api_sum); where they cannot be (values too large for
  -- exact deviations) the rows go instead (kernels, memops, api).
  distributed = {
    step = function() return {} end,
    collective = function(trace, args, first)
      local key_name = key_of(args)
      local res = {}
      -- the aggregates of column value of t per key (and report) over every process, or nil (nsl.stats.reduce_aggregates)
      local function reduce(t, key, value)
        -- the groups of every process mean the same: reports by their number in the whole trace
        local g = t:select{"report", key, value}
        if args.per_report then g = g:with("report", g.report + first) end
        return stats.reduce_aggregates(g, args.per_report and {"report", key} or {key}, value)
      end
      -- (rows on rank 0 alone, whose report numbers the gather leaves as they are; where an aggregate cannot
      -- be made, the rows go instead, with the report numbers of this process)
      if wanted(args.only, "kernels") then
        local k = trace.kernels
        k:load{"report", key_name, "dur"}
        res.kernels_sum = reduce(k, key_name, "dur") or nil
        if not res.kernels_sum then res.kernels = k:select{"report", key_name, "dur"} end
      end
      local time, size = wanted(args.only, "mem_time"), wanted(args.only, "mem_size")
      if time or size then
        local m = memops(trace)
        res.memops_time_sum = time and reduce(m, "op", "dur") or nil
        res.memops_size_sum = size and reduce(m, "op", "bytes") or nil
        if (time and not res.memops_time_sum) or (size and not res.memops_size_sum) then
          res.memops, res.memops_time_sum, res.memops_size_sum = m, nil, nil
        end
      end
      if wanted(args.only, "api") then
        local api = trace.api
        api:load{"source", "name", "dur", "report"}
        api = api:filter(api.source:eq("runtime"))
        res.api_sum = reduce(api, "name", "dur") or nil
        if not res.api_sum then res.api = api:select{"report", "name", "dur"} end
      end
      return res
    end,
  },
}
