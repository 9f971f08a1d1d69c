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
--
-- On `nsys stats` CSV files (cuda_gpu_kern_sum, cuda_gpu_mem_time_sum) the
-- classes are summed from the reports' rows (no median, no iterations).
--
-- --arg config=gpa.json runs a GPU Performance Analyzer config unchanged
-- (lua/nsl/gpa.lua has its definitions): every input (csv files or an
-- nsys-rep) side by side, tables gpa_classes, gpa_nccl, gpa_mem, gpa_nvtx
-- (ns; GPA prints ms), and with nvtx_tag_of_iter on an input with CUDA
-- activity the exact split of the same estimate (the overlap analysis's
-- iteration_summary) as gpa_exact.
--
-- --arg in_file="FILE,ENGINE,MODEL,SEC ..." does what vLLM's gputrc2graph
-- does (lua/nsl/gputrc2graph.lua): with the engine/model maps of --arg
-- map=FILE.json, per input the non-overlapped GPU seconds per kernel name and
-- category, the non-GPU seconds against the unprofiled wall time: tables
-- gputrc2graph (its result.csv) and gputrc2graph_totals (its HTML table),
-- the figure gputrc2graph (stacked bars per input, PNG and SVG) and, under
-- --out, result.html (the chart and the table).
local nsl = require("nsl")
local tables = require("nsl.util.tables")
local jax = require("nsl.jax")
local classes = require("nsl.classes")
local gpu_ops = require("nsl.gpu_ops")
local steps = require("nsl.steps")

local report = require("nsl.report")

local function html_escape(s) return (s:gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"})) end

-- One column per field of a list of records.
local function records_table(heads, rows)
  local cols = {}
  for j, h in ipairs(heads) do
    local v = {}
    for i, r in ipairs(rows) do v[i] = r[j] end
    cols[j] = {h, #v > 0 and nsl.column(v) or nsl.column{}}
  end
  return nsl.table(cols)
end

local function pct(part, whole) return whole ~= 0 and part / whole * 100 or 0.0 end

-- GPU Performance Analyzer configs (--arg config=).
local function run_gpa(args, out)
  local gpa = require("nsl.gpa")
  local cfg, err = gpa.load_config(args.config)
  if not cfg then nsl.fail(err) end
  for _, w in ipairs(cfg.map.warnings) do out:finding{severity = "warning", message = w} end
  local crow, nrow, mrow, vrow, exact = {}, {}, {}, {}, {}
  local any_nvtx = false
  for _, it in ipairs(cfg.inputs) do
    if it.missing_nvtx then
      out:finding{severity = "warning", message = string.format("%s: no NVTX projection '%s': the NVTX estimate is " ..
        "left out (as GPU Performance Analyzer does)", it.title, it.missing_nvtx)}
    end
    local trace, oerr = nsl.open(it.paths)
    if not trace then nsl.fail(oerr) end
    local r = gpa.run_input(trace, it, cfg.map)
    if r.warning then out:finding{severity = "warning", message = it.title .. ": " .. r.warning} end
    for _, e in ipairs(r.classes) do
      crow[#crow + 1] = {it.title, e.name, e.time_per_iter, e.inst_per_iter, pct(e.time_per_iter, r.time_per_iter),
                         e.total, e.instances, pct(e.total, r.total)}
    end
    for _, e in ipairs(r.nccl) do nrow[#nrow + 1] = {it.title, e.name, e.time_per_iter, e.inst_per_iter, e.total, e.instances} end
    for _, e in ipairs(r.mem or {}) do
      mrow[#mrow + 1] = {it.title, e.name, e.time_per_iter, e.inst_per_iter, e.total, e.instances}
    end
    -- without NVTX input the NVTX and estimate cells are NaN (JSON null, empty in CSV), and
    -- the columns are left out when no input has one
    local nan = 0 / 0
    any_nvtx = any_nvtx or r.nvtx_count ~= nil
    vrow[#vrow + 1] = {it.title, r.time_per_iter, r.inst_per_iter, r.total, r.instances, r.nccl_time_per_iter,
                       r.nccl_inst_per_iter, r.nccl_total, r.nccl_instances, r.nvtx_count or nan, r.nvtx_avg or nan,
                       r.nvtx_total or nan, r.estimate_per_range or nan, r.estimate_per_range_pct or nan,
                       r.estimate_total or nan, r.estimate_total_pct or nan}
    local tag = it.args.nvtx_tag_of_iter
    if tag and #trace.kernels > 0 then   -- nsl's exact split of the same time, per iteration and GPU
      local sub, err = out:run("overlap", trace, {"iteration=" .. tag}, {collect = "json"})
      if not sub then nsl.fail(err) end
      for _, item in ipairs(sub.items) do
        if item.kind == "table" and item.name == "iteration_summary" then exact[#exact + 1] = {title = it.title, t = item.t} end
      end
    end
    trace:close()
  end
  out:table("gpa_classes", records_table({"Input", "Class", "Time per Iteration (ns)", "Instances per Iteration",
    "Time per Iteration (%)", "Total Time (ns)", "Total Instances", "Total Time (%)"}, crow),
    {title = "Kernel time by class (GPU Performance Analyzer: NCCL apart, per iteration = total / (iterations x GPUs))"})
  out:table("gpa_nccl", records_table({"Input", "Collective", "Time per Iteration (ns)", "Instances per Iteration",
    "Total Time (ns)", "Total Instances"}, nrow), {title = "NCCL kernels by collective (GPU Performance Analyzer)"})
  if #mrow > 0 then
    out:table("gpa_mem", records_table({"Input", "Operation", "Time per Iteration (ns)", "Instances per Iteration",
      "Total Time (ns)", "Total Instances"}, mrow), {title = "Memory operations (GPU Performance Analyzer)"})
  end
  local heads = {"Input", "Kernel Time per Iteration (ns)", "Kernel Instances per Iteration",
    "Kernel Total Time (ns)", "Kernel Total Instances", "NCCL Time per Iteration (ns)", "NCCL Instances per Iteration",
    "NCCL Total Time (ns)", "NCCL Total Instances", "NVTX Ranges", "NVTX Average Range Time (ns)",
    "NVTX Total Range Time (ns)", "Estimate per Range (ns)", "Estimate per Range (%)", "Estimate Total (ns)",
    "Estimate Total (%)"}
  if not any_nvtx then   -- the first 9 columns: no NVTX input at all
    heads = table.move(heads, 1, 9, 1, {})
    for _, row in ipairs(vrow) do for j = #row, 10, -1 do row[j] = nil end end
  end
  out:table("gpa_summary", records_table(heads, vrow),
    {title = "Totals and estimated non-hidden NCCL, memory and bubble time (GPU Performance Analyzer)"})
  for i, e in ipairs(exact) do
    local cols = {{"Input", nsl.rep(e.title, #e.t)}}
    for _, c in ipairs(e.t:columns()) do cols[#cols + 1] = {c, e.t[c]} end
    out:table("gpa_exact" .. (#exact > 1 and ("_" .. i) or ""), nsl.table(cols),
      {title = "The estimate's exact split per iteration (nsl: non-hidden NCCL, memory and bubble measured)"})
  end
end

-- vLLM gputrc2graph (--arg in_file=).
local function run_gputrc2graph(args, out)
  local g2g = require("nsl.gputrc2graph")
  local plot = require("nsl.plot")
  local inputs, err = g2g.parse_inputs(args.in_file)
  if not inputs then nsl.fail(err) end
  if args.map == "" then nsl.fail("in_file: give the engine/model kernel maps with --arg map=FILE.json (gputrc2graph's JSON)", "usage") end
  local results = {}
  for i, inp in ipairs(inputs) do
    local map, merr = classes.load(args.map, inp.engine .. "/" .. inp.model)
    if not map then nsl.fail(merr) end
    local trace, oerr = nsl.open(inp.path)
    if not trace then nsl.fail(oerr) end
    if #trace.kernels + #trace.memcpy + #trace.memset == 0 then
      nsl.fail(string.format("%s: no GPU operations (kernels, memcpy, memset); was it profiled with -t cuda?", inp.path))
    end
    local r = g2g.input(trace, inp, map, i - 1)
    trace:close()
    if r.warning then out:finding{severity = "warning", message = r.warning} end
    results[i] = r
  end
  local cols = {}
  for _, c in ipairs(results[1].rows:columns()) do
    local parts = {}
    for i, r in ipairs(results) do parts[i] = r.rows[c] end
    cols[#cols + 1] = {c, nsl.concat(table.unpack(parts))}
  end
  local rows = nsl.table(cols)
  rows = rows:sort("Category", "Model_Engine", "-Elapsed Time (sec)", "Name")
  out:table("gputrc2graph", rows, {title = "Elapsed (non-overlapped) GPU seconds per kernel and category " ..
                                           "(gputrc2graph's result.csv)", col_decimals = {["Elapsed Time (sec)"] = 6}})
  local pv = g2g.pivot(results)
  local cols = {{"Category", nsl.column(pv.categories)}}
  local totals = {}
  for li, l in ipairs(pv.labels) do
    local v = {}
    for ci, c in ipairs(pv.categories) do
      v[ci] = math.floor(((pv.cells[c] or {})[li] or 0) * 100 + 0.5) / 100
      totals[li] = (totals[li] or 0) + ((pv.cells[c] or {})[li] or 0)
    end
    v[#v + 1] = math.floor(totals[li] * 100 + 0.5) / 100
    cols[#cols + 1] = {l, nsl.column(v)}
  end
  cols[1][2] = nsl.concat(cols[1][2], nsl.column{"total_elapsed_sec"})
  local pivot = nsl.table(cols)
  out:table("gputrc2graph_totals", pivot, {title = "Elapsed seconds per category and input (gputrc2graph's table)",
                                           col_decimals = {}})
  local series = {}
  for ci, c in ipairs(pv.categories) do
    local v = {}
    for li = 1, #pv.labels do v[li] = (pv.cells[c] or {})[li] or 0 end
    series[ci] = {label = c, values = v}
  end
  local title = args.title ~= "" and args.title or "Model_Engine"
  local function chart(format)
    return plot.stacked_bars{categories = pv.labels, series = series, unit = "number", format = format,
                             title = "Elapsed Time (sec) for " .. title, ylabel = "Elapsed Time (sec)"}
  end
  out:figure("gputrc2graph", chart)
  if out:carries_figures() then
    local svg = chart("svg"):to_string()
    local html = {"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>", html_escape(title),
                  "</title></head><body>\n<h1>Elapsed Time (sec) for ", html_escape(title), "</h1>\n", svg,
                  "\n", report.html(pivot), "\n</body></html>\n"}
    out:file("result.html", table.concat(html))
  end
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


-- classes on `nsys stats` CSV files: the rows of cuda_gpu_kern_sum and
-- cuda_gpu_mem_time_sum, each classified by its name.
local function classes_from_sums(trace, args, out)
  local map = classes.of_args(args)
  local s = trace.sums
  s = s:filter(s.kind:isin{"cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum"})
  if #s == 0 then
    nsl.fail(string.format("%s: the CSV files hold no cuda_gpu_kern_sum report; add it: nsys stats -r " ..
      "cuda_gpu_kern_sum,cuda_gpu_mem_time_sum --format csv -o PREFIX REPORT", report.files(trace.reports.path:totable())))
  end
  if args.iteration ~= "" then
    nsl.fail("--arg iteration needs the kernels themselves (an export or .nsys-rep): summary CSV files have no times", "usage")
  end
  local memop = s.kind:eq("cuda_gpu_mem_time_sum")
  local t = nsl.table{{"class", classes.classify_column(s.name, map)}, {"total", s.total}, {"n", s.count},
                      {"name", s.name}}
  local g = t:group_by("class"):agg{"total=sum(total)", "n=sum(n)"}:sort("-total", "class")
  out:text(string.format("Kernel classes from %s over the nsys stats summaries (%d kernel names, %d memory operations)",
                         map.source, (~memop):count(), memop:count()))
  out:table("classes", nsl.table{{"Class", g.class}, {"Time (%)", nsl.column(percent(g.total:totable()))},
    {"Total Time (ns)", g.total}, {"Instances", g.n}, {"Avg (ns)", g.total:cast("f64") / g.n:cast("f64")}},
    {title = "GPU time by class"})
  local kn = t:sort("class", "-total", "name")
  out:table("class_kernels", nsl.table{{"Class", kn.class}, {"Instances", kn.n}, {"Total Time (ns)", kn.total},
                                       {"Name", kn.name}}, {title = "Names by class"})
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

-- ---- a distributed run (nsl.distributed) ----
-- Without an iteration, a config or gputrc2graph inputs, each process
-- classifies its own operations; the class summary is aggregated by every
-- process together (nsl.stats.reduce_aggregates: the same bits, medians
-- included) and the names by class are summed, so no operation moves.
-- Anything else (or an operation without a duration, whose count would
-- differ) is left to rank 0, which reads the trace as one process does.

local classified = setmetatable({}, {__mode = "k"})   -- a process's view -> its operations classified, or false

-- The operations of trace classified as args asks (columns report, dur,
-- name, memop, class), or false where the distributed form does not apply
-- (a bad argument or map: rank 0 then fails with it as one process does).
local function classified_ops(trace, args)
  if args.config ~= "" or args.in_file ~= "" or args.iteration ~= "" then return false end
  local ok, map = pcall(classes.of_args, args)
  if not ok then return false end
  local which = args.names == "auto" and map.names or args.names
  if which ~= "short" and which ~= "demangled" then return false end
  local ops = gpu_ops.table(trace, {columns = {"report", "dur"}, names = which, memop = true})
  return ops:with("class", classes.classify_column(ops.name, map))
end

-- The collective part: the class summary (cl_sum, rank 0's), the names by
-- class (cl_kernels: class, name, n, total) and the counts (cl_counts) of
-- every process, or none where the form does not apply.
local function collective(trace, args, first)
  local mpi = nsl.mpi
  local ops = classified[trace]
  if not mpi.agree(ops and ops.dur:isnull():count() == 0) then return {} end
  local keys = args.per_report and {"report", "class"} or {"class"}
  local g = ops:select{"report", "class", "dur"}
  if args.per_report then g = g:with("report", g.report:cast("i64") + first) end
  local sum = require("nsl.stats").reduce_aggregates(g, keys, "dur")   -- (rows on rank 0 alone)
  if not sum then return {} end
  return {cl_sum = sum,   -- (rank 0's report numbers are the trace's: the gather adds nothing to them)
          cl_kernels = ops:group_by("class", "name"):agg{"n=count", "total=sum(dur)"},
          cl_counts = nsl.table{{"kernels", nsl.rep((~ops.memop):count(), 1)}, {"memops", nsl.rep(ops.memop:count(), 1)}}}
end

return {
  name = "classes",
  description = "GPU time by kernel class (GEMM, attention, NCCL, memory, ...), in total and per iteration",
  args = {
    map = {default = "", help = "kernel map, JSON: vLLM gputrc2graph or GPU Performance Analyzer format " ..
                                "(default: the built-in map)"},
    model = {default = "", help = "which map of a file that holds several: ENGINE/MODEL or MODEL"},
    iteration = {default = "", help = "NVTX range that marks one iteration (its text, or the text before ', op_id')"},
    names = {default = "auto", choices = {"auto", "demangled", "short"}, help = "names to classify: demangled, short, or auto (short for the built-in map, " ..
                                      "demangled for a JSON map, as the tools they come from)"},
    per_report = {default = false, help = "one class summary per report"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
    config = {default = "", help = "a GPU Performance Analyzer config (JSON): run it, its inputs side by side"},
    in_file = {default = "", help = "gputrc2graph inputs: \"FILE,ENGINE,MODEL,ELAPSED_NONPROFILED_SEC ...\" " ..
                                    "(SEC 0: the report's duration); the maps come from --arg map="},
    title = {default = "", help = "the title of the gputrc2graph chart"},
  },
  needs_trace = false,
  example = "nsl run classes trace.sqlite --arg map=vllm_engine_model.json --arg model=vllm/llama --arg iteration=train_step",
  -- parts: a distributed run's class summary and names by class (the collective part above)
  run = function(trace, args, out, parts)
    if args.config ~= "" then return run_gpa(args, out) end
    if args.in_file ~= "" then return run_gputrc2graph(args, out) end
    if not trace then nsl.fail("classes needs a trace (nsl run classes TRACE...), --arg config=GPA.json or --arg in_file=...", "usage") end
    if #trace.kernels + #trace.memcpy + #trace.memset == 0 and #trace.sums > 0 then return classes_from_sums(trace, args, out) end
    local map = classes.of_args(args)
    for _, w in ipairs(map.warnings) do out:finding{severity = "warning", message = w} end
    local which = args.names == "auto" and map.names or args.names
    if which ~= "short" and which ~= "demangled" then
      nsl.fail(string.format("--arg names=%s: expected demangled, short or auto", args.names), "usage")
    end
    local limit = args.limit > 0 and args.limit or nil
    local got = parts and parts.cl_counts and #parts.cl_counts > 0 and parts
    local nk, nm = 0, 0
    if got then nk, nm = got.cl_counts.kernels:sum(), got.cl_counts.memops:sum() end
    local ops, inside, ranges, s
    if got and nk + nm > 0 then
      s = got.cl_sum
    else
      -- (the columns read: an iteration's operations are placed by their launches, nsl.steps.attribute)
      local cols = args.iteration == "" and {"report", "dur"} or {"report", "pid", "device", "corr", "start", "stop", "dur"}
      ops = gpu_ops.table(trace, {columns = cols, names = which, memop = true})
      if #ops == 0 then
        return jax.no_cuda_activity(trace, out, "no GPU kernels or memory operations to classify", "jax_flamegraph")
      end
      ops = ops:with("class", classes.classify_column(ops.name, map))
      if args.iteration ~= "" then
        local iter
        iter, ranges = steps.attribute(trace, ops, args.iteration)
        ops = ops:with("iter", iter)
        inside = ops:filter(~iter:isnull())
      end
      nk, nm = (~ops.memop):count(), ops.memop:count()
      -- per class (and report)
      local g = args.per_report and ops:group_by("report", "class") or ops:group_by("class")
      s = g:agg{"total=sum(dur)", "n=count", "avg=mean(dur)", "med=median(dur)"}
    end
    out:text(string.format("Kernel classes from %s (names: %s); %d kernels, %d memory operations%s",
      map.source, which, nk, nm,
      ranges and string.format("; %d ranges '%s', %d iterations, %d operations inside them", #ranges,
                               args.iteration, ranges.iter:max(), #inside) or ""))
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

    local kn = ops and ops:group_by("class", "name"):agg{"n=count", "total=sum(dur)"}
               or got.cl_kernels:group_by("class", "name"):agg{"n=sum(n)", "total=sum(total)"}
    kn = kn:sort("class", "-total", "name")
    out:table("class_kernels", nsl.table{{"Class", kn.class}, {"Instances", kn.n}, {"Total Time (ns)", kn.total},
                                         {"Name", kn.name}},
      {title = "Names by class", limit = limit})
  end,
  distributed = {
    step = function(trace, args)
      classified[trace] = classified_ops(trace, args)
      return {}
    end,
    collective = collective,
  },
}
