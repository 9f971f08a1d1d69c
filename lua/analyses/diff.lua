-- diff -- what changed between two runs (before/after), verdict first.
--
-- The verdict (first line, the `verdict` table, a finding): the runs are
-- "slower", "faster" or "same", judged
--  * per step when both runs have steps (found as the `iterations` analysis
--    finds them: nsl.iterations.find; --arg iteration=NAME names the step
--    range or XLA program): the median steady step time (warm-up steps left
--    out as nsl.iterations.warmup finds them, per process or device) before
--    and after, with a Mann-Whitney U test over the step times;
--  * else per instance of the kernels that changed: each kernel name present
--    in both runs whose instances' durations differ significantly adds
--    (median after - median before) x its count before; the sum over the
--    before run's GPU time is the change.  Never a total over the window:
--    fewer instances of a kernel in a shorter capture is no speed-up.
-- A change is "same" unless it is significant (p < --arg alpha) and beyond
-- --arg threshold (%).  "slower" is a warning finding (diff.regression), so
-- `--fail-on warning` exits 3 on a regression and 0 on no change.
--
-- Then the top changes per kernel name, kernel class and NVTX range name,
-- each ranked by its impact: per step (the operations inside the steady
-- steps, per step) or per instance (as above, per kernel name; a name new in
-- one run counts its total).  `--arg fail_above=PCT` adds a warning per
-- kernel whose significant slowdown exceeds that share of the step (or run).
-- Figures (--out): diff_steps (each step's time before and after) and
-- diff_top (the top changes, before and after).
--
-- The runs are the trace's reports: the first is "before", the last "after"
-- (`nsl run diff before.sqlite after.sqlite`), or those named by --arg
-- before=/after= (report names or 1-based numbers).
local nsl = require("nsl")
local jax = require("nsl.jax")
local report = require("nsl.report")
local findings = require("nsl.findings")
local diff = require("nsl.diff")

return {
  name = "diff",
  description = "Before/after: a verdict per step (or per kernel instance), then the change per kernel, class and " ..
                "NVTX range, with significance",
  args = {
    before = {default = "", help = "the report taken as before (name or 1-based number; default: the first)"},
    after = {default = "", help = "the report taken as after (default: the last)"},
    iteration = {default = "", help = "the step: NVTX range name (or XLA program); default: detected as `iterations` does"},
    by = {default = "auto", choices = {"auto", "step", "instance"},
          help = "judge per step, per kernel instance, or auto (per step when both runs have 3 steady steps)"},
    threshold = {default = 2.0, percent = true,
                 help = "a significant change beyond this many % is slower/faster, else same (5 or 5%)"},
    alpha = {default = 0.01, help = "significance level of the Mann-Whitney test"},
    fail_above = {default = 0.0, help = "a significant slowdown of a kernel above this many % of the step time is a finding (0: off)"},
    top = {default = 20, help = "rows printed per table"},
  },
  example = "nsl run diff before.sqlite after.sqlite --arg threshold=5% --fail-on warning",
  run = function(trace, args, out)
    local nrep = #trace.reports
    if nrep < 2 then nsl.fail("diff: needs two runs: nsl run diff BEFORE AFTER (each an export or a bundle)", "usage") end
    local a = diff.pick_report(trace, args.before, 0)
    local b = diff.pick_report(trace, args.after, nrep - 1)
    if a == b then nsl.fail("diff: before and after are the same report", "usage") end
    local names = trace.reports.name
    local archive = jax.is_archive(trace)
    -- steps, unless judged per instance
    local st, why
    if args.by ~= "instance" then
      st, why = diff.steady_steps(trace, args.iteration, a, b)
      if not st and (args.by == "step" or args.iteration ~= "") then nsl.fail("diff: no steps to compare: " .. why) end
    else
      why = "--arg by=instance"
    end
    if archive and not st then
      nsl.fail("diff: nsys-jax archives are compared per step, and " .. why)
    end
    local per_step = st and st.kept and st.per or nil   -- impact per step of the tables below
    local sel, side, kt
    if not archive then
      sel, side = diff.operations(trace, st, a, b)
      kt = diff.changes(nsl.table{{"key", sel.name}, {"dur", sel.dur}, {"side", side}}, per_step, args.alpha)
    end
    -- the verdict
    local threshold = args.threshold
    local v = diff.verdict(st, kt, per_step, why, args.alpha, threshold)
    local DECIMALS, SAME_UNIT = diff.DECIMALS, diff.SAME_UNIT
    out:text(string.format("Verdict: %s", v.text))
    out:text(string.format("before: %s, after: %s; a change is slower/faster when significant (p < %g) and beyond %g %%",
      names[a + 1], names[b + 1], args.alpha, threshold))
    out:table("verdict", diff.verdict_table(v, threshold, args.alpha),
      {title = v.basis == "step" and "Verdict: median steady step time" or
        "Verdict: GPU time of the before run at the after run's speed per kernel instance",
       col_decimals = DECIMALS, same_unit = SAME_UNIT})
    if v.verdict == "slower" then
      findings.add(out, {severity = "warning", id = "diff.regression", check = "regression",
        cost_ns = math.floor((v.after - v.before) + 0.5), step_ns = v.basis == "step" and math.floor(v.before + 0.5) or nil,
        share = v.rel, evidence = "verdict"}, "slower per %s: %s (%s -> %s), Mann-Whitney p = %.2g%s", v.basis,
        diff.pct(v.rel), report.duration(v.before), report.duration(v.after), v.p, v.note or "")
    end

    if st then   -- the steps, for the figure and the record
      out:table("steps", diff.steps_table(st), {title = "Steady steps"})
      out:figure("diff_steps", function(format) return diff.draw_steps(st, v, format) end,
                 {title = "Step time before and after"})
    end

    if archive then   -- nsys-jax archives: no CUDA activity, their XLA programs instead
      local of = {}
      for r = 0, nrep - 1 do of[r + 1] = r == a and 0 or (r == b and 1 or -1) end
      out:table("jax_programs", jax.compare_runs(trace, of, {"before", "after"}, 0),
                {title = "Steady-state time per XLA program (ms per execution, mean over devices)"})
      return
    end

    local how = per_step and "per step" or "per instance"
    out:table("kernels", diff.printed(kt), {title = "Per kernel name, by impact " .. how, limit = args.top,
      col_decimals = DECIMALS, same_unit = SAME_UNIT})
    local top = math.min(#kt, 10)
    if top > 0 then
      out:figure("diff_top", function(format) return diff.draw_top(kt, top, per_step, how, format) end,
                 {title = "Top changes " .. how})
    end
    out:table("classes", diff.printed(diff.class_changes(sel, side, per_step, args.alpha)),
      {title = "Per kernel class, by impact " .. how, limit = args.top, col_decimals = DECIMALS, same_unit = SAME_UNIT})
    -- NVTX ranges (CPU time of the ranges, by name), per instance
    local rt = diff.nvtx_changes(trace, a, b, args.alpha)
    if rt then
      out:table("nvtx", diff.printed(rt), {title = "Per NVTX range name (range time), by impact per instance",
        limit = args.top, col_decimals = DECIMALS, same_unit = SAME_UNIT})
    end
    -- the per-kernel gate
    for _, k in ipairs(diff.regressions(kt, v.before, args.fail_above)) do
      findings.add(out, {severity = "warning", check = "regression", kernel = k.name, impact_ns = k.impact},
        "%s got slower by %s %s (%.1f%% of the %s; p = %.2g)", k.name, report.duration(k.impact),
        how, k.share, v.basis == "step" and "step time" or "before run's GPU time", k.p)
    end
  end,
}
