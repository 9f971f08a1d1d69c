-- iterations -- training/inference steps: per iteration its start, end,
-- duration, GPU busy time, kernel and memory-operation counts, memcpy bytes
-- and GPU time per kernel class; and steady-state step-time statistics.
--
-- Iterations come from --arg range=NAME (an NVTX range name, or a Lua
-- pattern) or are detected: an NVTX range that repeats as a step, else a
-- marker kernel with a regular period.  In a JAX trace (nsys-jax archives,
-- bundles with XLA's ranges) they are the executions of the step program on
-- every device, aligned across devices.  lua/nsl/iterations.lua documents
-- the rules, the attribution of GPU work and the limits.
--
-- Steady state: warm-up iterations are left out -- with --arg warmup=N the
-- first N; by default the first iteration (when there are at least 3) and
-- each following one that is more than 1.2 x slower than the median of the
-- iterations after it (at most half of them).  Statistics are per process
-- (per report for kernel markers), of the iteration durations.
--
-- Figures, of the first process (report): step_timeline, the timeline of
-- the steady iteration of median duration (from the earlier of its start and
-- its first GPU operation to the later of its end and its last GPU
-- operation), and iteration_classes, GPU time per kernel class and iteration
-- (stacked bars, at most 100 iterations).  On a JAX trace: step_time, the
-- duration of every execution of the step program per device (one line per
-- device, log scale so warm-up and steady steps both show; the title names
-- the warm-up iterations).
local nsl = require("nsl")
local tables = require("nsl.util.tables")
local iterations = require("nsl.iterations")
local classes = require("nsl.classes")
local report = require("nsl.report")
local window = require("nsl.window")
local distributed = require("nsl.distributed")

local function col(v, fallback) return #v > 0 and nsl.column(v) or (fallback or nsl.column{}) end

--- The steps of a JAX trace (nsl.iterations.jax_steps): per execution of the
-- step program on each device, per device the steady state (warm-up:
-- --arg warmup=N, else nsys-jax's), and how the devices' steps line up.
local function jax_steps(trace, it, args, out)
  local s = it.steps
  local origin = window.origin(trace) or 0
  local limit = args.limit > 0 and args.limit or nil
  local warm = s.warm
  if args.warmup >= 0 then warm = (s.iter - 1 - args.warmup):lt(0) end
  out:table("iterations", nsl.table{
    {"Report", s.report}, {"Device", s.device}, {"Iter", s.iter}, {"At (ns from start)", s.start - origin},
    {"Start (ns)", s.start}, {"End (ns)", s.stop},
    {"Duration (ns)", s.dur}, {"Thunks", s.thunks}, {"GPU Busy (ns)", s.busy}, {"Busy (%)", s.busy * 100.0 / s.dur},
    {"Exposed Comm (ns)", s.comm}, {"Warm-up", nsl.where(warm, "yes", "")}},
    {title = "Iterations: executions of " .. it.name .. " per device (times projected onto the GPU, clocks aligned)",
     limit = limit})
  local st = {report = {}, device = {}, n = {}, warm = {}, steady = {}, med = {}, mean = {}, std = {}, min = {},
              max = {}, busy = {}}
  local dev, rep, dur, busy, w = s.device:totable(), s.report:totable(), s.dur:totable(), s.busy:totable(),
                                 warm:totable()
  local all = {}
  for i = 1, #s do
    local j = #st.device
    if j == 0 or st.device[j] ~= dev[i] then
      j = j + 1
      st.report[j], st.device[j], st.n[j], st.warm[j] = rep[i], dev[i], 0, 0
      st[j] = {list = {}, pct = {}}
    end
    st.n[j] = st.n[j] + 1
    if w[i] then st.warm[j] = st.warm[j] + 1
    else
      table.insert(st[j].list, dur[i])
      table.insert(st[j].pct, busy[i] * 100.0 / dur[i])
      all[#all + 1] = dur[i]
    end
  end
  for j = 1, #st.device do
    local d, b = iterations.describe(st[j].list), iterations.describe(st[j].pct)
    st.steady[j] = #st[j].list
    st.med[j], st.mean[j], st.std[j] = d and d.median or -1, d and d.mean or -1, d and d.std or -1
    st.min[j], st.max[j], st.busy[j] = d and d.min or -1, d and d.max or -1, b and b.median or -1.0
    if d then out:value(string.format("steady_median_ns_device%d", st.device[j]), d.median) end
  end
  out:table("steady_state", nsl.table{
    {"Report", col(st.report)}, {"Device", col(st.device)}, {"Iterations", col(st.n)}, {"Warm-up", col(st.warm)},
    {"Steady", col(st.steady)}, {"Med (ns)", col(st.med)}, {"Avg (ns)", col(st.mean)}, {"StdDev (ns)", col(st.std)},
    {"Min (ns)", col(st.min)}, {"Max (ns)", col(st.max)}, {"Med Busy (%)", col(st.busy)}},
    {title = "Steady-state step time per device (warm-up left out)"})
  if out:carries_figures() and #st.device > 0 then   -- step time per device and iteration, warm-up named
    local iter, series, slot, warm_at = s.iter:totable(), {}, {}, {}
    for j, dv in ipairs(st.device) do
      slot[dv], series[j] = j, {label = string.format("device %d", dv), x = {}, y = {}}
    end
    for i = 1, #s do   -- s is sorted by device and iteration
      local sr = series[slot[dev[i]]]
      sr.x[#sr.x + 1], sr.y[#sr.y + 1] = iter[i], dur[i]
      if w[i] then warm_at[iter[i]] = true end
    end
    local warmup = tables.sorted_keys(warm_at)
    out:figure("step_time", function(format)
      local cv, data = require("nsl.plot").lines{format = format, series = series, ylog = true, points = true,
        yunit = "ns", xlabel = "iteration", ylabel = "step time",
        title = string.format("Step time of %s per device (warm-up: %s)", it.name,
                              #warmup == 0 and "none" or
                              ((#warmup == 1 and "iteration " or "iterations ") .. table.concat(warmup, ", ")))}
      for j, sr in ipairs(series) do data.series[j].x, data.series[j].y = sr.x, sr.y end   -- the points drawn
      data.warmup = warmup
      return cv, data
    end, {title = "Step time per device and iteration"})
  end
  if #st.device > 1 then   -- how iteration k of every device lines up
    local g = s:group_by("iter"):agg{"devices=count", "first=min(start)", "last=max(start)", "slowest=max(dur)",
                                     "fastest=min(dur)"}
    out:table("alignment", nsl.table{{"Iter", g.iter}, {"Devices", g.devices}, {"Start spread (ns)", g.last - g.first},
      {"Slowest (ns)", g.slowest}, {"Fastest (ns)", g.fastest}}, {title = "Iterations across devices", limit = limit})
  end
  local d = iterations.describe(all)
  if d then
    out:value("steady_mean_ns", d.mean)
    out:text(string.format("Steady state: %d steps over %d device%s, median %s, mean %s, std %s.", d.n, #st.device,
      #st.device == 1 and "" or "s", report.duration(d.median), report.duration(d.mean), report.duration(d.std)))
  end
end

return {
  name = "iterations",
  description = "Training/inference steps: duration, GPU busy time, kernels, memory operations and time per kernel " ..
                "class per iteration, steady-state step time",
  args = {
    range = {default = "", help = "NVTX range that marks an iteration (name, name prefix before ', op_id' or '#N', " ..
                                  "or a Lua pattern); empty: detect"},
    warmup = {default = -1, help = "iterations left out of the steady state (-1: automatic)"},
    map = {default = "", help = "kernel class map (JSON, see the classes analysis); empty: the built-in map"},
    model = {default = "", help = "with a vLLM-style map: the engine/model entry to use"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run iterations trace.sqlite --arg range=ProfilerStep",
  -- parts: a distributed run's tables (nsl.iterations.reduce_iterations), or nil
  run = function(trace, args, out, parts)
    -- a distributed run whose processes measured their iterations: the steps they found, their figures
    local reduced = parts and parts.iter_form and parts.iter_form.mode[1] == 0 and parts or nil
    if reduced then distributed.set_span(trace, reduced.iter_span) end
    -- the one step detection of a trace (diagnose uses it too)
    local steps, err = iterations.steps(trace, {spec = args.range, warmup = args.warmup, parts = reduced})
    if not steps then nsl.fail(string.format("%s: %s", report.files(trace.reports.path:totable()), err)) end
    local it = steps.it
    out:text(it.how)
    if steps.step_ns then out:value("step_ns", steps.step_ns) end
    if it.mode == "jax" then return jax_steps(trace, it, args, out) end
    local map = classes.default_map()
    if args.map ~= "" then
      local m, merr = classes.load(args.map, args.model ~= "" and args.model or nil)
      if not m then nsl.fail(merr) end
      map = m
    end
    local w, per_class
    if reduced then w, per_class = reduced.iter_w, reduced.iter_class
    else w, per_class = iterations.metrics(it, iterations.ops(trace, it, map)) end
    local limit = args.limit > 0 and args.limit or nil
    local keys = iterations.keys(it)
    w = w:sort(table.unpack(keys))

    -- warm-up per process (per report for kernel markers), in iteration order
    local S = iterations.steady_state(w, steps)
    local groups, order, warm, st = S.groups, S.order, S.warm, S.st
    local dur, gs, ge = S.dur, S.gs, S.ge

    local gpu_dur = w.gpu_stop - w.gpu_start
    local busy_pct = w.gpu_busy * 100.0 / gpu_dur
    local cols = {{"Report", w.report}}
    if it.mode == "range" then cols[#cols + 1] = {"PID", w.pid}; cols[#cols + 1] = {"TID", w.tid} end
    for _, c in ipairs{
      {"Iter", w.iter}, {"At (ns from start)", w.start - (window.origin(trace) or 0)}, {"Start (ns)", w.start},
      {"End (ns)", w.stop}, {"Duration (ns)", w.stop - w.start},
      {"GPU Start (ns)", w.gpu_start}, {"GPU Span (ns)", gpu_dur}, {"GPU Busy (ns)", w.gpu_busy},
      {"Busy (%)", busy_pct}, {"Kernels", w.kernels}, {"Memcpy", w.memcpy}, {"Memcpy Bytes", w.memcpy_bytes},
      {"Memset", w.memset}, {"Warm-up", col(warm, nsl.column{})}} do
      cols[#cols + 1] = c
    end
    out:table("iterations", nsl.table(cols), {title = "Iterations", limit = limit})

    -- time per class: one column per class present, in the map's order
    local class_time = iterations.class_time(w, per_class, map, keys)   -- in the map's order, for the figure
    local ccols = {{"Report", w.report}}
    if it.mode == "range" then ccols[#ccols + 1] = {"PID", w.pid} end
    ccols[#ccols + 1] = {"Iter", w.iter}
    for _, ct in ipairs(class_time) do ccols[#ccols + 1] = {ct[1] .. " (ns)", ct[2]} end
    out:table("iteration_classes", nsl.table(ccols), {title = "GPU time per kernel class and iteration (" ..
      map.source .. ")", limit = limit})

    -- figures, of the first process (report for kernel markers): a timeline
    -- of one steady iteration (the one of median duration), and GPU time per
    -- class and iteration as stacked bars
    if out:carries_figures() and #order > 0 then
      local plot = require("nsl.plot")
      local rows = groups[order[1]].rows
      local gr = groups[order[1]]
      local who = trace.reports.name[gr.report + 1] .. (it.mode == "range" and (", pid " .. gr.pid) or "")
      local n = math.min(#rows, 100)
      local iter = w.iter:totable()
      local cats, series = {}, {}
      for k = 1, n do cats[k] = tostring(iter[rows[k]]) end
      for j, ct in ipairs(class_time) do
        local v, vals = ct[2]:totable(), {}
        for k = 1, n do vals[k] = v[rows[k]] end
        series[j] = {label = ct[1], values = vals}
      end
      local steady = {}
      for _, i in ipairs(rows) do if warm[i] ~= "yes" then steady[#steady + 1] = i end end
      if #steady > 0 then
        table.sort(steady, function(a, b) return dur[a] < dur[b] or (dur[a] == dur[b] and a < b) end)
        local i = steady[(#steady + 1) // 2]
        local starts, stops = w.start:totable(), w.stop:totable()
        local from, to = math.min(starts[i], gs[i] or starts[i]), math.max(stops[i], ge[i] or stops[i])
        local origin = window.origin(trace)
        out:figure("step_timeline", function(format)
          return plot.timeline(trace, {from = from, to = to, origin = origin, format = format, width = 1400,
                                       max_depth = 6, tables = {"kernels", "memcpy", "memset", "nvtx"},
                                       title = string.format("Iteration %d (%s), a steady one of median duration: %s",
                                                             iter[i], who, report.duration(to - from)),
                                       xlabel = "time since the start of the trace"})
        end, {title = "a steady iteration"})
      end
      out:figure("iteration_classes", function(format)
        return plot.stacked_bars{format = format, categories = cats, series = series, unit = "ns",
                                 ylabel = "GPU time", xlabel = "iteration",
                                 title = string.format("GPU time per kernel class and iteration (%s%s)", who,
                                                       n < #rows and string.format(", first %d of %d", n, #rows) or "")}
      end, {title = "GPU time per kernel class and iteration"})
    end

    local scols = {{"Report", col(st.report)}}
    if it.mode == "range" then scols[#scols + 1] = {"PID", col(st.pid)} end
    for _, c in ipairs{
      {"Iterations", col(st.n)}, {"Warm-up", col(st.warm)}, {"Steady", col(st.steady)},
      {"Med (ns)", col(st.med)}, {"Avg (ns)", col(st.mean)}, {"StdDev (ns)", col(st.std)},
      {"Min (ns)", col(st.min)}, {"Max (ns)", col(st.max)}, {"Med Busy (%)", col(st.busy)}} do
      scols[#scols + 1] = c
    end
    out:table("steady_state", nsl.table(scols), {title = "Steady-state step time (warm-up left out)"})
    for j = 1, #st.report do
      if st.steady[j] > 0 then
        out:value(string.format("steady_median_ns_report%d%s", st.report[j], it.mode == "range" and ("_pid" .. st.pid[j]) or ""),
          st.med[j])
      end
    end
    if #st.report == 1 and st.steady[1] > 0 then
      out:text(string.format("Steady state: %d of %d iterations, median %s, mean %s, std %s.", st.steady[1], st.n[1],
        report.duration(st.med[1]), report.duration(st.mean[1]), report.duration(st.std[1])))
    end
  end,
  -- distributed (nsl.distributed): the processes find the steps together and measure the iterations of their
  -- own reports (nsl.iterations.reduce_iterations); rank 0 prints them (a figure reads its window of the trace)
  distributed = {step = function() return {} end,
                 collective = function(view, args) return iterations.reduce_iterations(view, args) end},
}
