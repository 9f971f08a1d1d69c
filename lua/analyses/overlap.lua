-- overlap -- how compute, NCCL communication and memory transfers overlap on
-- each GPU, in total and per iteration.
--
-- Per device (report, device), from the union of the operations' intervals:
--   C  compute:   kernels that are not NCCL's      N  NCCL kernels (name contains "nccl")
--   M  memory:    memcpy and memset                span: first start to last end of any of them
--   Compute Only = |C - N|   NCCL Only = |N - C|   Both = |C n N|   Neither = span - |C u N|
--   Memory Only  = |M - (C u N)|   Idle = span - |C u N u M|        (Neither = Memory Only + Idle)
--   NCCL Hidden (%) = Both / |N|: the share of NCCL time that compute hides.
-- The four categories add up to the span.
--
-- Per iteration (--arg iteration=NAME; lua/nsl/steps.lua says which GPU work
-- belongs to which iteration): the iteration's window on a device is its
-- projected NVTX range there (first start to last end of its operations),
-- and the sets above are measured within the window.  NVIDIA's GPU
-- Performance Analyzer estimates per iteration the
--   non-hidden NCCL, mem ops and bubble time = NVTX range time (projected) - compute kernel time
-- where compute kernel time is the sum of the durations of the non-NCCL
-- kernels (cuda_gpu_kern_sum without NCCL) per iteration and GPU; shown as
-- "GPA Estimate".  Measured exactly, the same time splits into
--   Non-hidden NCCL  = |N - C| in the window   (NCCL Only)
--   Non-hidden Memory = |M - (C u N)|          (Memory Only)
--   Bubble           = window - |C u N u M|    (Idle)
-- whose sum, window - |C|, equals the estimate when no two compute kernels
-- overlap (concurrent streams make the estimate smaller).
-- Figure overlap: each GPU's span split into compute only, NCCL only, both,
-- memory only and idle (stacked bars).
local jax = require("nsl.jax")
local plot = require("nsl.plot")
local gpu_ops = require("nsl.gpu_ops")
local overlap = require("nsl.overlap")

-- part * 100 / whole per row (0 where whole is 0), as an f64 column.
return {
  name = "overlap",
  description = "Compute / NCCL / memory-transfer overlap per GPU, and non-hidden communication per iteration",
  args = {
    iteration = {default = "", help = "NVTX range that marks one iteration (its text, or the text before ', op_id')"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run overlap rank0.sqlite rank1.sqlite --arg iteration=train_step",
  -- parts: a distributed run's measures of each process's devices (overlap.reduce)
  run = function(trace, args, out, parts)
    local S
    if parts and #parts.ov_dev > 0 then
      S = overlap.merged(trace, parts, args.iteration)
    else
      -- (the columns read: an iteration's operations are placed by their launches, nsl.steps.attribute)
      local cols = args.iteration == "" and {"report", "device", "start", "stop"}
                   or {"report", "pid", "device", "corr", "start", "stop", "dur"}
      local ops = gpu_ops.table(trace, {columns = cols, names = "short", memop = true})
      if #ops == 0 then
        return jax.no_cuda_activity(trace, out, "no GPU kernels or memory operations", "jax_communication")
      end
      S = overlap.devices(trace, ops, args.iteration)
    end
    local limit = args.limit > 0 and args.limit or nil
    local t, sets = overlap.device_table(S)
    local report_names = S.report_names
    if out:carries_figures() then   -- each device's span split into the sets, stacked
      local rep, devs, cats = sets.report:totable(), sets.device:totable(), {}
      for i = 1, #sets do
        cats[i] = (#report_names > 1 and report_names[rep[i] + 1] .. " " or "") .. "GPU " .. devs[i]
      end
      local series = {}
      for _, s in ipairs{{"compute", "compute only"}, {"nccl", "NCCL only"}, {"both", "compute and NCCL"},
                         {"memory", "memory only"}, {"idle", "idle"}} do
        series[#series + 1] = {label = s[2], values = sets[s[1]]:totable()}
      end
      out:figure("overlap", function(format)
        return plot.stacked_bars{format = format, categories = cats, series = series, unit = "ns",
                                 ylabel = "time", title = "Each GPU's span: compute, NCCL, memory, idle"}
      end, {title = "compute / NCCL / memory overlap per GPU"})
    end
    out:table("overlap", t, {title = "Compute / NCCL / memory overlap per device", limit = limit})

    local win = S.win
    if not win then return end
    if #win == 0 then
      out:finding{severity = "warning",
                  message = string.format("no GPU work was launched inside the '%s' ranges", args.iteration)}
      return
    end
    local summary, by_iter = overlap.iteration_tables(S)
    out:table("iteration_summary", summary,
      {title = "Estimated non-hidden NCCL, memory and bubble time per iteration (GPU Performance Analyzer) " ..
               "and its exact split", limit = limit})
    out:table("overlap_by_iteration", by_iter, {title = "Overlap per iteration and device", limit = limit})
  end,
  -- distributed (nsl.distributed): each process measures its own devices (and their iterations' windows), and
  -- sends a row per device and per device and iteration instead of its GPU operations
  distributed = {step = function(trace, args) return overlap.reduce(trace, args.iteration) end},
}
