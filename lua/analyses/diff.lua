-- diff -- what changed between two runs (before/after): per kernel name,
-- kernel class, NVTX range and iteration, the change in time and count, with
-- a Mann-Whitney U test over the instances' durations, ranked by the impact
-- on the step time; `--arg fail_above=PCT --fail-on warning` makes it a CI
-- regression gate.
--
-- The runs are the trace's reports: the first is "before", the last "after"
-- (`nsl run diff before.sqlite after.sqlite`), or those named by --arg
-- before=/after= (report names or 1-based numbers).  With --arg
-- iteration=NAME the impact is per iteration (each run's totals divided by
-- its number of NAME ranges), else per run.
--
-- The Mann-Whitney U test is nsl.stats.mann_whitney.  A change is
-- significant when p < --arg alpha and both samples have at least 3
-- instances.
local nsl = require("nsl")
local jax = require("nsl.jax")
local report = require("nsl.report")
local classes = require("nsl.classes")
local gpu_ops = require("nsl.gpu_ops")
local findings = require("nsl.findings")
local stats = require("nsl.stats")

local function pick_report(trace, spec, default)
  if spec == "" then return default end
  local names = trace.reports.name
  local n = math.tointeger(tonumber(spec))
  if n and n >= 1 and n <= #names then return n - 1 end
  for i = 1, #names do if names[i] == spec then return i - 1 end end
  nsl.fail(string.format("diff: no report '%s' (reports: %s)", spec, table.concat(names:totable(), ", ")))
end

--- Compares durations grouped by a key between the two runs: an nsl table
-- sorted by |impact|.  t has columns key, dur, side (0 before, 1 after).
local function compare(t, steps, alpha, with_test)
  local g = t:group_by("key", "side"):agg{"n=count", "total=sum(dur)", "med=median(dur)"}
  local per = {}
  for i = 1, #g do
    local key = g.key[i]
    per[key] = per[key] or {n = {0, 0}, total = {0, 0}, med = {}}
    local side = g.side[i] + 1
    per[key].n[side], per[key].total[side], per[key].med[side] = g.n[i], g.total[i], g.med[i]
  end
  local mw = with_test and stats.mann_whitney(t) or {}
  local rows = {key = {}, n1 = {}, n2 = {}, t1 = {}, t2 = {}, d = {}, dp = {}, m1 = {}, m2 = {}, impact = {}, p = {}, sig = {}, status = {}}
  for key, v in pairs(per) do
    local i = #rows.key + 1
    rows.key[i] = key
    rows.n1[i], rows.n2[i] = v.n[1], v.n[2]
    rows.t1[i], rows.t2[i] = v.total[1], v.total[2]
    rows.d[i] = v.total[2] - v.total[1]
    -- a name new in the after run has no relative change: NULL (NaN), and status "new"
    rows.dp[i] = v.total[1] > 0 and 100.0 * rows.d[i] / v.total[1] or (v.total[2] > 0 and 0 / 0 or 0.0)
    rows.status[i] = v.n[1] == 0 and "new" or v.n[2] == 0 and "gone" or ""
    rows.m1[i], rows.m2[i] = v.med[1] or 0.0, v.med[2] or 0.0
    rows.impact[i] = v.total[2] / steps[2] - v.total[1] / steps[1]
    local test = mw[key]
    local p = (test and test.n1 >= 3 and test.n2 >= 3) and test.p or nil
    rows.p[i] = p or 1.0
    rows.sig[i] = p and p < alpha and "yes" or ""
  end
  local abs = {}
  for i, v in ipairs(rows.impact) do abs[i] = math.abs(v) end
  return nsl.table{{"name", rows.key}, {"count before", rows.n1}, {"count after", rows.n2},
    {"total before (ns)", rows.t1}, {"total after (ns)", rows.t2}, {"change (ns)", rows.d}, {"change (%)", rows.dp},
    {"median before (ns)", rows.m1}, {"median after (ns)", rows.m2}, {"impact per step (ns)", rows.impact},
    {"p (Mann-Whitney)", rows.p}, {"significant", rows.sig}, {"status", rows.status}, {"_abs", abs}}:sort("-_abs", "name")
end

local function strip(t) return t:select{"name", "count before", "count after", "total before (ns)", "total after (ns)",
  "change (ns)", "change (%)", "median before (ns)", "median after (ns)", "impact per step (ns)", "p (Mann-Whitney)",
  "significant", "status"} end

return {
  name = "diff",
  description = "Before/after: change per kernel, class, NVTX range and iteration, significance, impact on the step time",
  args = {
    before = {default = "", help = "the report taken as before (name or 1-based number; default: the first)"},
    after = {default = "", help = "the report taken as after (default: the last)"},
    iteration = {default = "", help = "NVTX range name of one iteration: impact per iteration instead of per run"},
    alpha = {default = 0.01, help = "significance level of the Mann-Whitney test"},
    fail_above = {default = 0.0, help = "a significant slowdown of a kernel above this many % of the step time is a finding (0: off)"},
    top = {default = 20, help = "rows printed per table"},
  },
  example = "nsl run diff before.sqlite after.sqlite --arg fail_above=2 --fail-on warning",
  run = function(trace, args, out)
    local nrep = #trace.reports
    if nrep < 2 then nsl.fail("diff: needs two runs: nsl run diff BEFORE AFTER (each an export or a bundle)") end
    local a = pick_report(trace, args.before, 0)
    local b = pick_report(trace, args.after, nrep - 1)
    if a == b then nsl.fail("diff: before and after are the same report") end
    local names = trace.reports.name
    if jax.is_archive(trace) then   -- nsys-jax archives: no CUDA activity, their XLA programs instead
      local of = {}
      for r = 0, nrep - 1 do of[r + 1] = r == a and 0 or (r == b and 1 or -1) end
      out:text(string.format("before: %s, after: %s; nsys-jax archives keep no CUDA activity to compare, their " ..
                             "XLA programs' steady-state times instead.", names[a + 1], names[b + 1]))
      out:table("jax_programs", jax.compare_runs(trace, of, {"before", "after"}, 0),
                {title = "Steady-state time per XLA program (ms per execution, mean over devices)"})
      return
    end
    local ops = gpu_ops.table(trace, {names = "demangled", memop = true})
    local sel = ops:filter(ops.report:eq(a) | ops.report:eq(b))
    local side = sel.report:eq(b):cast("i64")
    -- steps of each run
    local steps = {1, 1}
    if args.iteration ~= "" then
      local r = require("nsl.steps").ranges(trace, args.iteration)
      local na, nb = r.report:eq(a):count(), r.report:eq(b):count()
      if na == 0 or nb == 0 then nsl.fail("diff: no '" .. args.iteration .. "' range in one of the runs") end
      -- ranges per process: an iteration spans all ranks, count those of one process
      local pa = r:filter(r.report:eq(a)):group_by("pid"):agg{"n=count"}.n:max()
      local pb = r:filter(r.report:eq(b)):group_by("pid"):agg{"n=count"}.n:max()
      steps = {pa, pb}
    end
    local span = {}
    for i, rep in ipairs{a, b} do
      local o = sel:filter(sel.report:eq(rep))
      span[i] = #o > 0 and (o.stop:max() - o.start:min()) / steps[i] or 0
    end
    out:text(string.format("before: %s, after: %s; %s: %s before, %s after (GPU span per %s)",
      names[a + 1], names[b + 1], args.iteration ~= "" and "per iteration" or "per run",
      report.duration(span[1]), report.duration(span[2]), args.iteration ~= "" and "iteration" or "run"))
    -- kernels (and memory operations) by name
    local kt = compare(nsl.table{{"key", sel.name}, {"dur", sel.dur}, {"side", side}}, steps, args.alpha, true)
    out:table("kernels", strip(kt), {title = "Per kernel name, by impact on the step time", limit = args.top,
      col_decimals = {["p (Mann-Whitney)"] = 4}})
    -- classes
    local cls = classes.classify_column(sel.name, classes.default_map())
    local ct = compare(nsl.table{{"key", cls}, {"dur", sel.dur}, {"side", side}}, steps, args.alpha, true)
    out:table("classes", strip(ct), {title = "Per kernel class", limit = args.top, col_decimals = {["p (Mann-Whitney)"] = 4}})
    -- NVTX ranges (CPU time of the ranges, by name)
    local nv = trace.nvtx
    if #nv > 0 then
      nv:load{"report", "text", "dur", "kind"}
      local r = nv:filter((nv.report:eq(a) | nv.report:eq(b)) & nv.kind:ne("mark") & ~nv.dur:isnull())
      if #r > 0 then
        local label = r.text:map(function(s) return (s:gsub(", seq = %d+", ""):gsub(", op_id = %d+", "")) end)
        local rt = compare(nsl.table{{"key", label}, {"dur", r.dur}, {"side", r.report:eq(b):cast("i64")}}, steps,
          args.alpha, true)
        out:table("nvtx", strip(rt), {title = "Per NVTX range name (range time)", limit = args.top,
          col_decimals = {["p (Mann-Whitney)"] = 4}})
      end
    end
    -- iterations
    if args.iteration ~= "" then
      local r = require("nsl.steps").ranges(trace, args.iteration)
      local it = nsl.table{{"key", nsl.rep("iteration", #r)}, {"dur", r.stop - r.start},
        {"side", r.report:eq(b):cast("i64")}}:filter(r.report:eq(a) | r.report:eq(b))
      out:table("iterations", strip(compare(it, {1, 1}, args.alpha, true)), {title = "Iteration time",
        col_decimals = {["p (Mann-Whitney)"] = 4}})
    end
    -- the regression gate
    local step_time = span[1]
    if args.fail_above > 0 and step_time > 0 then
      for i = 1, #kt do
        local impact = kt["impact per step (ns)"][i]
        if kt.significant[i] == "yes" and impact > 0 and 100 * impact / step_time > args.fail_above then
          findings.add(out, {severity = "warning", check = "regression", kernel = kt.name[i], impact_ns = impact},
            "%s got slower by %s per %s (%.1f%% of the step time; p = %.2g)", kt.name[i], report.duration(impact),
            args.iteration ~= "" and "iteration" or "run", 100 * impact / step_time, kt["p (Mann-Whitney)"][i])
        end
      end
    end
  end,
}
