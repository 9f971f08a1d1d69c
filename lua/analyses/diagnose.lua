-- diagnose -- what holds a run back, answered first: runs the checks of the
-- shipped analyses over one load of the trace (an export, several per-rank
-- exports, a bundle, nsys-jax archives) and ranks their findings by the time
-- each costs per step (per run when the trace has no steps), then shows the
-- evidence tables.  The engine is lua/nsl/diagnose.lua; each check is a
-- file of lua/nsl/checks/ with its contract and definition: the rules of
-- `nsys analyze` (pageable async memcpy, synchronous memcpy and memset,
-- synchronising CUDA calls, GPU gaps, low GPU utilisation), exposed NCCL time, pipeline bubbles, stragglers,
-- launch-bound devices, host synchronisation per step, compile and loading
-- time, warm-up, device memory near capacity, copies serialised with
-- compute, and model FLOPs utilisation (--arg flops_per_step).
-- Every finding carries id, severity, lost_ns (what the whole job would
-- save over the profiled run without that cause, from the ledger of
-- lua/nsl/ledger.lua), lost_per_step_ns, share (of the job's wall time),
-- cost_ns, step_ns, where, evidence and next (`--format json` gives them
-- all; `--fail-on` gates).  Text: the verdict and the top findings, the
-- ledger, the findings in full, the evidence, the verdict again.  A trace
-- with nothing to check (no CUDA activity, CSV summaries) says so and
-- gets an error finding (diagnose.unchecked), so --fail-on fails.
-- Figures (--out DIR): ledger (a stacked bar per GPU), lost (the top ten
-- findings' lost_ns).
local diagnose = require("nsl.diagnose")
local report = require("nsl.report")
local ledger = require("nsl.ledger")
local plot = require("nsl.plot")

-- The whole-run rows of the ledger, the columns a reader compares.
local function ledger_run(t)
  local run = t:filter(t.step:eq(0))
  local cols = {"rank", "wall"}
  for _, l in ipairs(ledger.lines) do cols[#cols + 1] = l end
  cols[#cols + 1] = ledger.remainder
  return run:select(cols)
end

-- args with the checks' thresholds added (nsl.diagnose.thresholds).
local function with_thresholds(args)
  for name, th in pairs(diagnose.thresholds()) do args[name] = th end
  return args
end

return {
  name = "diagnose",
  description = "Ranked findings: what costs the most time per step (nsys analyze rules, NCCL, stragglers, " ..
                "launches, syncs, compile, warm-up, memory, streams, MFU), then the evidence",
  -- the engine's options, and each check's thresholds (declared in its file, lua/nsl/checks/)
  args = with_thresholds{
    iteration = {default = "", help = "NVTX range that marks a step (empty: detect, as the iterations analysis does)"},
    warmup = {default = -1, help = "steps left out as warm-up (-1: automatic, as the iterations analysis does)"},
    warn_share = {default = 0.05, help = "share of the step (or run) from which a finding is a warning"},
    error_share = {default = 0.25, help = "share of the step (or run) from which a finding is an error"},
    limit = {default = 20, help = "rows printed per evidence table in text output (all rows go to files)"},
  },
  example = "nsl run diagnose rank0.sqlite rank1.sqlite --format json --fail-on warning",
  -- parts: a distributed run's gathered columns (diagnose.step)
  run = function(trace, args, out, parts)
    local ctx = diagnose.context(trace, args, parts, out)
    local where = report.files(ctx.paths)
    local L = ctx:ledger()
    if L.res.empty then   -- honest silence: say what could not be checked, and why; --fail-on fails
      local why
      if #trace.sums > 0 then
        why = "nsys stats CSV files hold summaries, not the events the checks measure (give the .nsys-rep or " ..
              "its SQLite export: nsys export --type=sqlite)."
      else
        why = "no CUDA activity (no kernels, memory copies or nsys-jax thunks): was it profiled with -t cuda?"
      end
      local msg = string.format("Nothing checked on %s: %s", where, why)
      out:finding{id = "diagnose.unchecked", severity = "error", message = msg}
      return
    end
    local findings = diagnose.run(ctx, nil, nil, {release = true})   -- nothing below reads the trace tables
    local st = ctx.steps
    local head
    if st then
      head = string.format("steps: %s; median steady step %s", st.how, report.duration(st.step_ns))
    else
      head = "no steps found: costs are over the whole run"
    end
    for _, n in ipairs(ctx.notes) do out:text("note: " .. n) end
    if #findings == 0 then
      out:text(string.format("No problems found: %d checks on %s (%s).", #diagnose.checks(), where, head))
      return
    end
    -- the verdict and the top findings first, then the ledger; the findings in full, the evidence, and the
    -- verdict again as the last line
    local verdict = diagnose.verdict(findings, L.job_wall)
    out:text(verdict)
    out:text(diagnose.top(findings, 5))
    out:table("ledger", ledger_run(L.t), {title = string.format("Where each GPU's time went over the run (ns; the " ..
      "job's wall time %s; the lines of a row sum to its wall)", report.duration(L.job_wall)), limit = args.limit})
    out:flush()
    out:text(string.format("%d finding(s) on %s, largest loss first (%s).", #findings, where, head))
    out.at = function(ns) return ctx:at(ns) end   -- findings' windows, from the trace's start
    for _, f in ipairs(findings) do out:finding(f) end
    if st then out:value("step_ns", st.step_ns) end
    out:value("job_wall_ns", L.job_wall)
    local cited = {}
    for _, f in ipairs(findings) do if f.evidence then cited[f.evidence] = true end end
    for _, e in ipairs(ctx.evidence) do
      if cited[e.name] then
        out:table(e.name, e.t, {title = e.title, limit = args.limit})
        if e.in_all then out:value("evidence_rows." .. e.name, e.in_all) end
      end
    end
    if out:carries_figures() then   -- the ledger per GPU, and what the top findings cost the job
      local run = ledger_run(L.t)
      local series = ledger.figure_series(run)
      out:figure("ledger", function(format)
        return plot.stacked_bars{format = format, categories = run.rank:totable(), series = series, unit = "ns",
                                 title = "Where each GPU's time went (whole run)"}
      end)
      local cats, vals = {}, {}
      for i = 1, math.min(10, #findings) do
        if findings[i].lost_ns then
          cats[#cats + 1] = string.format("%d. %s", i, findings[i].id or "?")
          vals[#vals + 1] = findings[i].lost_ns
        end
      end
      out:figure("lost", function(format)
        return plot.grouped_bars{format = format, categories = cats, series = {{label = "lost", values = vals}},
                                 unit = "ns", title = "What the top findings cost the job (whole run)"}
      end)
    end
    local steps_t = L.t:filter(L.t.step:gt(0))
    if #steps_t > 0 then
      out:table("ledger_steps", steps_t, {title = "The ledger per step (ns)", limit = args.limit})
    end
    out:text(verdict)
  end,
  -- distributed (nsl.distributed): each process makes the GPU operations of
  -- its reports and the straggler analysis's kernel columns, and the
  -- processes detect the steps together; rank 0 runs the checks over them
  -- and reads the rest of the trace from the processes
  distributed = {step = function(trace, args) return diagnose.step(trace, args) end,
                 collective = function(view, args, first) return diagnose.collective(view, args, first) end,
                 uses = diagnose.uses},
}
