-- classes -- GPU time by kernel class (GEMM, attention, NCCL, memory, ...),
-- in total and per iteration, with the list of which kernel went where.
--
-- Classification (lua/nsl/classes.lua): an ordered map from name patterns to
-- classes, tried once per distinct name: the built-in map, a vLLM
-- gputrc2graph JSON map (Python regexes on demangled names, memory operations
-- included), or a GPU Performance Analyzer config (kernel_to_class_map:
-- lower-cased substrings).  NCCL kernels are the class "nccl" and memory
-- operations "memory" unless the map names them itself.
--
-- Tables:
--   classes            per class: Time (%) of all GPU operation time, Total,
--                      Instances, Avg, Med; with --arg iteration=NAME also the
--                      time and instances per iteration per device (the total
--                      within iterations / (iterations x devices), as the GPU
--                      Performance Analyzer's TimePerIter / InstancePerIter).
--   classes_by_iteration  (with iteration) the stacked-bar data: one row per
--                      iteration, one column per class, each the class's time in
--                      that iteration averaged over the devices that ran it, and
--                      the iteration's GPU window (first start to last end,
--                      averaged over devices).
--   class_kernels      which name went to which class: Class, Instances, Total,
--                      Name.
-- Times are sums of operation durations in ns (overlapping operations each
-- count), as nsys stats and both map tools count them.
local nsl = require("nsl")
local tables = require("nsl.util.tables")
local jax = require("nsl.jax")
local classes = require("nsl.classes")
local gpu_ops = require("nsl.gpu_ops")
local steps = require("nsl.steps")

local function load_map(args)
  if args.map == "" then return classes.default_map() end
  local map, err = classes.load(args.map, args.model)
  if not map then nsl.fail(err) end
  return map
end

-- Percentages of total within groups given by key values (or all rows).
local function percent(totals, keys)
  local sum = {}
  for i, v in ipairs(totals) do
    local g = keys and keys[i] or 1
    sum[g] = (sum[g] or 0) + v
  end
  local pct = {}
  for i, v in ipairs(totals) do
    local s = sum[keys and keys[i] or 1]
    pct[i] = s > 0 and v * 100.0 / s or 0.0
  end
  return pct
end

-- Per-iteration figures of the ops inside iterations: time and instances of
-- each class per (iteration x device), keyed by class (and report).
local function per_iteration(inside, per_report)
  local key = per_report and function(r, c) return r .. "\0" .. c end or function(_, c) return c end
  local cells = inside:group_by("report", "device", "iter"):agg{"n=count"}
  local slots = {}   -- number of (iteration, device) pairs, per report or over all
  for _, r in ipairs(cells.report:totable()) do
    local g = per_report and r or 1
    slots[g] = (slots[g] or 0) + 1
  end
  local g = per_report and inside:group_by("report", "class") or inside:group_by("class")
  local a = g:agg{"t=sum(dur)", "n=count"}
  local res = {}
  local reps = per_report and a.report:totable() or nil
  local cls, t, n = a.class:totable(), a.t:totable(), a.n:totable()
  for i = 1, #a do
    local s = slots[per_report and reps[i] or 1] or 1
    res[key(reps and reps[i] or 0, cls[i])] = {time = t[i] / s, n = n[i] / s}
  end
  return res, key
end

-- The stacked-bar table: iteration x class, mean per device.
local function by_iteration(inside, order)
  local dev = inside:group_by("iter", "report", "device"):agg{"lo=min(start)", "hi=max(stop)"}
  local ndev, window = {}, {}
  local it, lo, hi = dev.iter:totable(), dev.lo:totable(), dev.hi:totable()
  for i = 1, #dev do
    ndev[it[i]] = (ndev[it[i]] or 0) + 1
    window[it[i]] = (window[it[i]] or 0) + (hi[i] - lo[i])
  end
  local cell = inside:group_by("iter", "class"):agg{"t=sum(dur)"}
  local m = {}
  local ci, cc, ct = cell.iter:totable(), cell.class:totable(), cell.t:totable()
  for i = 1, #cell do
    m[ci[i]] = m[ci[i]] or {}
    m[ci[i]][cc[i]] = ct[i]
  end
  local iters = tables.sorted_keys(ndev)
  local cols = {{"Iteration", iters}, {"Devices", {}}, {"GPU Window (ns)", {}}}
  for i, k in ipairs(iters) do
    cols[2][2][i] = ndev[k]
    cols[3][2][i] = window[k] / ndev[k]
  end
  local total = {}
  for _, c in ipairs(order) do
    local v = {}
    for i, k in ipairs(iters) do
      v[i] = ((m[k] or {})[c] or 0) / ndev[k]
      total[i] = (total[i] or 0) + v[i]
    end
    cols[#cols + 1] = {c .. " (ns)", v}
  end
  for i = 1, #iters do total[i] = total[i] or 0.0 end
  cols[#cols + 1] = {"Total (ns)", total}
  return nsl.table(cols)
end

return {
  name = "classes",
  description = "GPU time by kernel class (GEMM, attention, NCCL, memory, ...), in total and per iteration",
  args = {
    map = {default = "", help = "kernel map, JSON: vLLM gputrc2graph or GPU Performance Analyzer format " ..
                                "(default: the built-in map)"},
    model = {default = "", help = "which map of a file that holds several: ENGINE/MODEL or MODEL"},
    iteration = {default = "", help = "NVTX range that marks one iteration (its text, or the text before ', op_id')"},
    names = {default = "auto", help = "names to classify: demangled, short, or auto (short for the built-in map, " ..
                                      "demangled for a JSON map, as the tools they come from)"},
    per_report = {default = false, help = "one class summary per report"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run classes trace.sqlite --arg map=vllm_engine_model.json --arg model=vllm/llama --arg iteration=train_step",
  run = function(trace, args, out)
    local map = load_map(args)
    for _, w in ipairs(map.warnings) do out:finding{severity = "warning", message = w} end
    local which = args.names == "auto" and map.names or args.names
    if which ~= "short" and which ~= "demangled" then
      nsl.fail(string.format("--arg names=%s: expected demangled, short or auto", args.names))
    end
    local ops = gpu_ops.table(trace, {names = which, memop = true})
    if #ops == 0 then
      return jax.no_cuda_activity(trace, out, "no GPU kernels or memory operations to classify", "jax_flamegraph")
    end
    ops = ops:with("class", classes.classify_column(ops.name, map))
    local limit = args.limit > 0 and args.limit or nil
    local inside, ranges
    if args.iteration ~= "" then
      local iter
      iter, ranges = steps.attribute(trace, ops, args.iteration)
      ops = ops:with("iter", iter)
      inside = ops:filter(~iter:isnull())
    end
    out:text(string.format("Kernel classes from %s (names: %s); %d kernels, %d memory operations%s",
      map.source, which, (~ops.memop):count(), ops.memop:count(),
      ranges and string.format("; %d ranges '%s', %d iterations, %d operations inside them", #ranges,
                               args.iteration, ranges.iter:max(), #inside) or ""))

    -- per class (and report)
    local g = args.per_report and ops:group_by("report", "class") or ops:group_by("class")
    local s = g:agg{"total=sum(dur)", "n=count", "avg=mean(dur)", "med=median(dur)"}
    s = args.per_report and s:sort("report", "-total", "class") or s:sort("-total", "class")
    local reps = args.per_report and s.report:totable() or nil
    local cols = {}
    if reps then cols[1] = {"report", s.report} end
    cols[#cols + 1] = {"Class", s.class}
    cols[#cols + 1] = {"Time (%)", nsl.column(percent(s.total:totable(), reps))}
    cols[#cols + 1] = {"Total Time (ns)", s.total}
    cols[#cols + 1] = {"Instances", s.n}
    cols[#cols + 1] = {"Avg (ns)", s.avg}
    cols[#cols + 1] = {"Med (ns)", s.med}
    if inside then
      local pi, key = per_iteration(inside, args.per_report)
      local t, n = {}, {}
      for i, c in ipairs(s.class:totable()) do
        local v = pi[key(reps and reps[i] or 0, c)]
        t[i], n[i] = v and v.time or 0.0, v and v.n or 0.0
      end
      cols[#cols + 1] = {"Per Iteration (ns)", nsl.column(t)}
      cols[#cols + 1] = {"Instances per Iteration", nsl.column(n)}
    end
    out:table("classes", nsl.table(cols), {title = "GPU time by class", limit = limit,
                                          col_decimals = {["Instances per Iteration"] = 2}})

    if inside and #inside > 0 then
      local order = {}
      local seen = {}
      for _, c in ipairs(inside:group_by("class"):agg{"t=sum(dur)"}:sort("-t", "class").class:totable()) do
        if not seen[c] then seen[c] = true; order[#order + 1] = c end
      end
      out:table("classes_by_iteration", by_iteration(inside, order),
        {title = "Class time per iteration, mean per device (stacked-bar data)", limit = limit})
    end

    local kn = ops:group_by("class", "name"):agg{"n=count", "total=sum(dur)"}:sort("class", "-total", "name")
    out:table("class_kernels", nsl.table{{"Class", kn.class}, {"Instances", kn.n}, {"Total Time (ns)", kn.total},
                                         {"Name", kn.name}},
      {title = "Names by class", limit = limit})
  end,
}
