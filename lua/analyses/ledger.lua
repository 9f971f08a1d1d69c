-- ledger -- where each GPU's wall time went, every nanosecond once: per GPU
-- of every rank, over the profiled run and over each step, the time split
-- into compute, waiting inside a collective for a later rank, communication
-- transfer, copies and idle, and idle into one cause each (one-time loading
-- and compiling, host-to-device copy calls, synchronisation, the host not
-- launching, unknown).  The parts of every row sum to its wall time.  How
-- each line is measured: lua/nsl/ledger.lua.
--
-- Tables: ledger (one row per GPU and window: step 0 is the whole run, 1..
-- the steps of nsl.iterations), ledger_host (idle_host time over the run by
-- the launching thread's innermost NVTX range, when the trace has NVTX).
-- Figure ledger: each GPU's run as a stacked bar of the lines.
local nsl = require("nsl")
local ledger = require("nsl.ledger")
local iterations = require("nsl.iterations")
local plot = require("nsl.plot")
local jax = require("nsl.jax")
local report = require("nsl.report")

--- The ledger's tables and figure: t (M.build's ledger), hr (its
-- host table by NVTX range, or nil).
local function emit(t, hr, args, out)
  local limit = args.limit > 0 and args.limit or nil
  out:table("ledger", t, {title = "Where each GPU's time went (ns; step 0: the whole run; lines sum to wall)",
                          limit = limit})
  if hr then
    out:table("ledger_host", hr, {title = "Idle while the host was not launching, by the launching thread's NVTX " ..
                                          "range (whole run)", limit = limit})
  end
  if out:carries_figures() then
    local run = t:filter(t.step:eq(0))
    local cats = run.rank:totable()
    local series = ledger.figure_series(run)
    out:figure("ledger", function(format)
      return plot.stacked_bars{format = format, categories = cats, series = series, unit = "ns",
                               title = "Where each GPU's time went (whole run)"}
    end)
  end
end

local function run(trace, args, out)
  -- the one step detection of a trace (nsl.iterations.steps), as iterations, diagnose and straggler use
  local st, err = iterations.steps(trace, {spec = args.iteration})
  if not st and args.iteration ~= "" then
    nsl.fail(string.format("%s: %s", report.files(trace.reports.path:totable()), err))
  end
  -- (kept in the column cache for a trace of one report, under the settings of its steps and its matching)
  local keep = {"ledger", args.iteration, ledger.MATCH.warmup, ledger.MATCH.rank_by, ledger.MATCH.source,
                ledger.MATCH.programs}
  local l = ledger.kept(trace, keep) or ledger.build(trace, {steps = st and st.it, keep = keep})
  if l.empty then
    return jax.no_cuda_activity(trace, out, "no GPU kernels or memory operations")
  end
  emit(l.ledger, ledger.host_by_range(trace, l.host, #trace.nvtx > 0), args, out)
end

return {
  name = "ledger",
  description = "Each GPU's wall time split once into compute, collective wait and transfer, copies and idle causes",
  args = {
    iteration = {default = "", help = "NVTX range (or XLA program) that marks one step; empty: detected"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run ledger rank0.sqlite rank1.sqlite",
  run = run,
  -- distributed (nsl.distributed): each process builds the ledger of its own GPUs, the waits inside
  -- collectives matched on rank 0 from one row per collective (nsl.ledger.reduce); rank 0 prints the rows
  distributed = {
    step = function() return {} end,
    collective = function(view, args, first) return ledger.reduce(view, args, first) end,
    combine = function(trace, parts, args, out)
      local t, hr = ledger.reduced(trace, parts)
      if t == false then return run(trace, args, out) end
      if #t == 0 then return jax.no_cuda_activity(trace, out, "no GPU kernels or memory operations") end
      emit(t, hr, args, out)
    end,
  },
}
