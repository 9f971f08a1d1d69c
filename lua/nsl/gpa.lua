-- nsl.gpa -- NVIDIA's GPU Performance Analyzer (GPA) over any trace: its
-- JSON configs run unchanged, its numbers follow its definitions.
--
-- GPA reads three `nsys stats` reports per input -- cuda_gpu_kern_sum (Name,
-- Total Time, Instances), cuda_gpu_mem_time_sum (Operation, Total Time,
-- Count), nvtx_gpu_proj_trace (Name, Projected Duration) -- and, with
-- analysis_args num_of_iters (I), num_of_gpus (G) and nvtx_tag_of_iter:
--   class of a kernel   "nccl" when its lower-cased name contains "nccl", else
--                       the class of the first key of kernel_to_class_map (lower
--                       case) it contains, else "others"
--   per class           TimePerIter = sum(total / (I*G)), InstancePerIter =
--                       sum(floor(instances / (I*G))) (floored per kernel name),
--                       TotalTime = sum(total), TotalInstance = sum(instances);
--                       the kernel totals are over the classes other than nccl
--   NCCL                the same per collective, named by the second "_"-part of
--                       the kernel name (ncclKernel_AllGather_... -> AllGather)
--   memory operations   the same per operation
--   NVTX                the rows whose Name is the tag: count, total and average
--                       projected duration; estimated non-hidden NCCL, memory and
--                       bubble time per range = average - kernel time per
--                       iteration (and in % of the average); in total = total -
--                       kernel total time (and in % of the total)
-- Times here are ns (GPA prints ms).  Rows come from the trace's own
-- kernels / memcpy / memset / NVTX projection when it has them (an export, a
-- .nsys-rep), else from the `sums` and `gpu_ranges` of nsys stats CSV files.
local nsl = require("nsl")
local json = require("nsl.util.json")
local classes = require("nsl.classes")
local gpu_ops = require("nsl.gpu_ops")

local M = {}

local lower, find, floor = string.lower, string.find, math.floor

--- The kernel rows {name, total, count} of a trace, as cuda_gpu_kern_sum
-- (demangled names), or nil when it has neither kernels nor that report.
function M.kernel_rows(trace)
  local k = trace.kernels
  if #k > 0 then
    k:load{"demangled", "dur"}
    local s = k:group_by("demangled"):agg{"total=sum(dur)", "n=count"}:sort("-total", "demangled")
    return {name = s.demangled:totable(), total = s.total:totable(), count = s.n:totable()}
  end
  return M.sum_rows(trace, "cuda_gpu_kern_sum")
end

--- The rows of summary report kind from the trace's CSV files, or nil.
function M.sum_rows(trace, kind)
  local s = trace.sums
  if #s == 0 then return nil end
  s = s:filter(s.kind:eq(kind))
  if #s == 0 then return nil end
  return {name = s.name:totable(), total = s.total:totable(), count = s.count:totable()}
end

--- The memory-operation rows {name, total, count} (cuda_gpu_mem_time_sum), or nil.
function M.mem_rows(trace)
  if #trace.memcpy + #trace.memset > 0 then
    local ops = gpu_ops.table(trace, {columns = {"dur"}, names = "short", memop = true})
    ops = ops:filter(ops.memop)
    local s = ops:group_by("name"):agg{"total=sum(dur)", "n=count"}:sort("-total", "name")
    return {name = s.name:totable(), total = s.total:totable(), count = s.n:totable()}
  end
  if #trace.kernels > 0 then return {name = {}, total = {}, count = {}} end
  return M.sum_rows(trace, "cuda_gpu_mem_time_sum")
end

--- The NVTX rows {name, dur} projected onto the GPU (nvtx_gpu_proj_trace), or nil.
function M.nvtx_rows(trace)
  local g = require("nsl.jax").gpu_ranges(trace)
  if #g == 0 then return nil end
  return {name = g.text:totable(), dur = (g.stop - g.start):totable()}
end

-- GPA's NCCL collective name: the second "_"-separated part of the name.
local function nccl_name(name)
  local second = name:match("^[^_]*_([^_]*)")
  return second or name
end

--- GPA's statistics of one input.  rows: {kernels =, mems =, nvtx =} (as
-- above; mems and nvtx may be nil); map: a "substring" map of nsl.classes
-- (from the config's kernel_to_class_map); args: {num_of_iters,
-- num_of_gpus, nvtx_tag_of_iter}.  Returns the report: classes (ordered
-- list of {class, time_per_iter, inst_per_iter, total, instances}), nccl
-- and mem (the same per collective / operation), and the totals.
function M.analyze(rows, map, args)
  local iters, gpus = tonumber(args.num_of_iters) or 1, tonumber(args.num_of_gpus) or 1
  local div = iters * gpus
  local r = {classes = {}, nccl = {}, mem = {}}
  local by = {}
  local function slot(list, index, key)
    if not index[key] then
      index[key] = {name = key, time_per_iter = 0.0, inst_per_iter = 0, total = 0, instances = 0}
      list[#list + 1] = index[key]
    end
    return index[key]
  end
  local function add(e, total, count)
    e.time_per_iter = e.time_per_iter + total / div
    e.inst_per_iter = e.inst_per_iter + floor(count / div)
    e.total = e.total + total
    e.instances = e.instances + count
  end
  -- classes in GPA's order: others, nccl, then the map's classes as they first appear
  slot(r.classes, by, "others")
  local nccl_total = slot({}, by, "nccl")
  for _, c in ipairs(map:classes()) do
    if c ~= "nccl" and c ~= classes.MEMORY and c ~= "others" then slot(r.classes, by, c) end
  end
  local nccl_index = {}
  local k = rows.kernels
  for i, name in ipairs(k.name) do
    local low = lower(name)
    local class = "others"
    if find(low, "nccl", 1, true) then class = "nccl"
    else
      for _, rule in ipairs(map.rules) do
        if find(low, lower(rule.pattern), 1, true) then class = rule.class break end
      end
    end
    add(slot(r.classes, by, class), k.total[i], k.count[i])
    if class == "nccl" then add(slot(r.nccl, nccl_index, nccl_name(name)), k.total[i], k.count[i]) end
  end
  r.nccl_time_per_iter, r.nccl_inst_per_iter = nccl_total.time_per_iter, nccl_total.inst_per_iter
  r.nccl_total, r.nccl_instances = nccl_total.total, nccl_total.instances
  r.time_per_iter, r.inst_per_iter, r.total, r.instances = 0.0, 0, 0, 0
  for _, e in ipairs(r.classes) do
    r.time_per_iter = r.time_per_iter + e.time_per_iter
    r.inst_per_iter = r.inst_per_iter + e.inst_per_iter
    r.total = r.total + e.total
    r.instances = r.instances + e.instances
  end
  if rows.mems then
    local index = {}
    for i, name in ipairs(rows.mems.name) do add(slot(r.mem, index, name), rows.mems.total[i], rows.mems.count[i]) end
  else
    r.mem = nil
  end
  local tag = args.nvtx_tag_of_iter
  if rows.nvtx and tag then
    local total, n = 0, 0
    for i, name in ipairs(rows.nvtx.name) do
      if name == tag and rows.nvtx.dur[i] then
        total = total + rows.nvtx.dur[i]
        n = n + 1
      end
    end
    r.nvtx_count, r.nvtx_total = n, total
    if n > 0 then
      r.nvtx_avg = total / n
      r.estimate_per_range = r.nvtx_avg - r.time_per_iter
      r.estimate_per_range_pct = r.estimate_per_range / r.nvtx_avg * 100
      r.estimate_total = total - r.total
      r.estimate_total_pct = total > 0 and r.estimate_total / total * 100 or 0.0
    end
    if n ~= iters then
      r.warning = string.format("%d NVTX ranges '%s', but num_of_iters is %d (GPA warns: the statistics may be off)",
                                n, tag, iters)
    end
  end
  return r
end

--- Reads a GPA config: {inputs = {{format, title, paths (files to open),
-- analysis_args, with_nvtx, with_mem, missing_nvtx (the path of a named NVTX
-- projection CSV that does not exist: left out, as GPA does)}}, map}.  Relative paths are taken
-- as given, else from the config's folder.  Returns it, or nil and a message.
function M.load_config(path)
  local doc, err = json.read_file(path)
  if doc == nil then return nil, err end
  if not json.is_object(doc) or type(doc.inputs) ~= "table" then
    return nil, string.format("%s: not a GPU Performance Analyzer config (no \"inputs\" list)", path)
  end
  local map, merr = classes.load(path)
  if not map then return nil, merr end
  local dir = path:match("^(.*)/[^/]*$") or "."
  local function resolve(p)
    if type(p) ~= "string" or p == "" then return nil end
    if p:sub(1, 1) == "/" or nsl.stat(p) then return p end
    return dir .. "/" .. p
  end
  local inputs = {}
  for i, inp in ipairs(doc.inputs) do
    local fmt = lower(tostring(inp.format or ""))
    local it = {title = inp.title or string.format("input %d", i), args = inp.analysis_args or {}, paths = {}}
    if fmt == "csv" then
      local files = inp.nsys_csv_file_path or {}
      if not resolve(files.kernel_sum) then
        return nil, string.format("%s: input %d: nsys_csv_file_path.kernel_sum is required", path, i)
      end
      -- an NVTX projection that is named but absent: GPA skips the NVTX estimate and goes on
      local nvtx = resolve(files.nvtx_proj_trace)
      if nvtx and not nsl.stat(nvtx) then it.missing_nvtx, files.nvtx_proj_trace = nvtx, nil end
      for _, key in ipairs{"kernel_sum", "nvtx_proj_trace", "mem_time_sum"} do
        local p = resolve(files[key])
        if p then it.paths[#it.paths + 1] = p end
      end
      it.with_nvtx, it.with_mem = resolve(files.nvtx_proj_trace) ~= nil, resolve(files.mem_time_sum) ~= nil
    elseif fmt == "nsys-rep" then
      local rep = inp.nsys_report or {}
      if not resolve(rep.path) then return nil, string.format("%s: input %d: nsys_report.path is required", path, i) end
      it.paths[1] = resolve(rep.path)
      it.with_nvtx, it.with_mem = rep.with_nvtx == true, rep.with_mem == true
    else
      return nil, string.format("%s: input %d: format '%s' is not csv or nsys-rep", path, i, tostring(inp.format))
    end
    inputs[#inputs + 1] = it
  end
  return {inputs = inputs, map = map}
end

--- GPA on one opened trace for config input it: the report (M.analyze).
function M.run_input(trace, it, map)
  local kernels = M.kernel_rows(trace)
  if not kernels then
    nsl.fail(string.format("%s: no kernels and no cuda_gpu_kern_sum report; add it: nsys stats -r cuda_gpu_kern_sum " ..
                           "--format csv -o PREFIX REPORT", it.title))
  end
  local rows = {kernels = kernels}
  if it.with_mem then rows.mems = M.mem_rows(trace) or {name = {}, total = {}, count = {}} end
  if it.with_nvtx then
    rows.nvtx = M.nvtx_rows(trace)
    if not rows.nvtx then
      nsl.fail(string.format("%s: no NVTX ranges projected onto the GPU; add the nvtx_gpu_proj_trace report", it.title))
    end
  end
  return M.analyze(rows, map, it.args)
end

return M
