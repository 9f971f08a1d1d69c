-- nsl.diff -- the library of the diff analysis (lua/analyses/diff.lua says
-- what it judges and prints): the two runs (reports) of a trace, their
-- steady steps (nsl.iterations), the change of durations per key between
-- them with a Mann-Whitney test per key (M.changes: per kernel name, kernel
-- class, NVTX range name), the verdict (per step or per kernel instance),
-- the per-kernel gate and the figures.  The analysis reads the arguments and
-- hands what these return to its output.
local nsl = require("nsl")
local report = require("nsl.report")
local classes = require("nsl.classes")
local gpu_ops = require("nsl.gpu_ops")
local nvtx = require("nsl.nvtx")
local stats = require("nsl.stats")
local iterations = require("nsl.iterations")

local M = {}

--- The 0-based report that spec names (a report name or a 1-based number),
-- default when spec is empty; a usage error when none is.
function M.pick_report(trace, spec, default)
  if spec == "" then return default end
  local names = trace.reports.name
  local n = math.tointeger(tonumber(spec))
  if n and n >= 1 and n <= #names then return n - 1 end
  for i = 1, #names do if names[i] == spec then return i - 1 end end
  nsl.fail(string.format("diff: no report '%s' (reports: %s)", spec, table.concat(names:totable(), ", ")), "usage")
end

--- Compares durations grouped by a key between the two runs: an nsl table
-- sorted by |impact|.  t has columns key, dur, side (0 before, 1 after).
-- steps = {before, after}: impact per step (totals over steps), or nil:
-- impact per instance ((median after - median before) x count before; a
-- name in one run only: its total, signed).
function M.changes(t, steps, alpha)
  local g = t:group_by("key", "side"):agg{"n=count", "total=sum(dur)", "med=median(dur)"}
  local per = {}
  for i = 1, #g do
    local key = g.key[i]
    per[key] = per[key] or {n = {0, 0}, total = {0, 0}, med = {}}
    local side = g.side[i] + 1
    per[key].n[side], per[key].total[side], per[key].med[side] = g.n[i], g.total[i], g.med[i]
  end
  local mw = stats.mann_whitney(t)
  local rows = {key = {}, n1 = {}, n2 = {}, t1 = {}, t2 = {}, d = {}, dp = {}, m1 = {}, m2 = {}, mp = {}, impact = {},
                p = {}, sig = {}, status = {}}
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
    rows.mp[i] = (v.med[1] and v.med[2] and v.med[1] > 0) and 100.0 * (v.med[2] - v.med[1]) / v.med[1] or 0 / 0
    if steps then
      rows.impact[i] = v.total[2] / steps[2] - v.total[1] / steps[1]
    elseif rows.status[i] == "" then
      rows.impact[i] = (rows.m2[i] - rows.m1[i]) * v.n[1]
    else
      rows.impact[i] = (v.total[2] - v.total[1]) * 1.0
    end
    local test = mw[key]
    local p = (test and test.n1 >= 3 and test.n2 >= 3) and test.p or nil
    rows.p[i] = p or 1.0
    rows.sig[i] = p and p < alpha and "yes" or ""
  end
  local abs = {}
  for i, v in ipairs(rows.impact) do abs[i] = math.abs(v) end
  return nsl.table{{"name", rows.key}, {"count before", rows.n1}, {"count after", rows.n2},
    {"total before (ns)", rows.t1}, {"total after (ns)", rows.t2}, {"change (ns)", rows.d}, {"change (%)", rows.dp},
    {"median before (ns)", rows.m1}, {"median after (ns)", rows.m2}, {"median change (%)", rows.mp},
    {"impact (ns)", rows.impact}, {"p (Mann-Whitney)", rows.p}, {"significant", rows.sig}, {"status", rows.status},
    {"_abs", abs}}:sort("-_abs", "name")
end

--- The printed columns of a table of M.changes (without its sort key).
function M.printed(t) return t:select{"name", "count before", "count after", "total before (ns)", "total after (ns)",
  "change (ns)", "change (%)", "median before (ns)", "median after (ns)", "median change (%)", "impact (ns)",
  "p (Mann-Whitney)", "significant", "status"} end

--- Print options of the tables of M.changes and of the verdict.
M.DECIMALS = {["p (Mann-Whitney)"] = 4, alpha = 3}
-- before and after in one unit each
M.SAME_UNIT = {{"total before (ns)", "total after (ns)", "change (ns)"}, {"median before (ns)", "median after (ns)"},
               {"before (ns)", "after (ns)"}}

--- The steady steps of the runs a and b: {mode, how, durs = {before array,
-- after array} (in order), per = {steps per process or device, before,
-- after}, kept = table of the iteration keys (nsl.iterations.keys) of the
-- steady steps (range and kernel modes)}, or nil and why not.
function M.steady_steps(trace, spec, a, b)
  local it, err = iterations.find(trace, spec)
  if not it then return nil, err end
  local W
  if it.mode == "jax" then
    local s = it.steps
    W = nsl.table{{"report", s.report}, {"grp", s.device}, {"iter", s.iter}, {"dur", s.dur},
                  {"warm", s.warm:cast("i64")}}
  else
    local w = iterations.windows(it)
    W = nsl.table{{"report", w.report}, {"grp", nsl.coalesce(w.pid, 0)}, {"iter", w.iter}, {"dur", w.stop - w.start}}
  end
  W = W:filter(W.report:eq(a) | W.report:eq(b)):sort("report", "grp", "iter")
  local rep, grp, iter, dur = W.report:totable(), W.grp:totable(), W.iter:totable(), W.dur:totable()
  local warm = W.warm and W.warm:totable()
  local durs, per, keep = {{}, {}}, {{}, {}}, {}
  local i = 1
  while i <= #W do   -- one group (report, process or device) at a time: a few steps each
    local j = i
    while j + 1 <= #W and rep[j + 1] == rep[i] and grp[j + 1] == grp[i] do j = j + 1 end
    local nwarm = 0
    if not warm then
      local d = {}
      for k = i, j do d[#d + 1] = dur[k] end
      nwarm = iterations.warmup(d, -1)
    end
    local side = rep[i] == b and 2 or 1
    local n = 0
    for k = i, j do
      local steady = warm and warm[k] == 0 or (not warm and k - i >= nwarm)
      keep[k] = steady and 1 or 0
      if steady then durs[side][#durs[side] + 1] = dur[k]; n = n + 1 end
    end
    per[side][#per[side] + 1] = n
    i = j + 1
  end
  for side = 1, 2 do
    if #durs[side] < 3 then
      return nil, string.format("the %s run has %d steady step%s (%s), 3 are needed", side == 1 and "before" or "after",
        #durs[side], #durs[side] == 1 and "" or "s", it.how)
    end
  end
  local kept
  if it.mode ~= "jax" then
    local k = W:with("keep", nsl.column(#keep > 0 and keep or {0}):gather(nsl.range(#W)))
    k = k:filter(k.keep:eq(1))
    kept = it.mode == "range" and nsl.table{{"report", k.report}, {"pid", k.grp}, {"iter", k.iter}, {"keep", k.keep}}
      or nsl.table{{"report", k.report}, {"iter", k.iter}, {"keep", k.keep}}
  end
  local function most(v) local m = 0 for _, x in ipairs(v) do m = math.max(m, x) end return m end
  return {it = it, how = it.how, durs = durs, per = {most(per[1]), most(per[2])}, kept = kept}
end

--- The median of a run's steady step times (M.steady_steps keeps 3 at least).
local function median(v) return iterations.describe(v).median end

--- "slower" | "faster" | "same" for a relative change rel (fraction), when
-- significant, against threshold (%).
local function word(rel, significant, threshold)
  if significant and rel > threshold / 100 then return "slower" end
  if significant and rel < -threshold / 100 then return "faster" end
  return "same"
end

--- A relative change (fraction) as a signed percentage.
local function pct(rel) return string.format("%+.1f %%", 100 * rel) end
M.pct = pct


--- The GPU operations the runs are compared on: sel (name, dur, report, ...)
-- and side (0 before, 1 after per row of sel).  With steady steps that
-- keep their iteration keys (st.kept: range and kernel modes), the
-- operations inside the steady steps of reports a and b; else all the GPU
-- operations of a and b (names demangled).
function M.operations(trace, st, a, b)
  local ops, sel
  if st and st.kept then   -- the operations inside the steady steps
    ops = iterations.ops(trace, st.it)
    ops = ops:filter(~ops.iter:isnull() & (ops.report:eq(a) | ops.report:eq(b)))
    ops = ops:join(st.kept, iterations.keys(st.it), {"keep"})
    sel = ops:filter(~ops.keep:isnull())
  else
    ops = gpu_ops.table(trace, {names = "demangled", memop = true})
    sel = ops:filter(ops.report:eq(a) | ops.report:eq(b))
  end
  return sel, sel.report:eq(b):cast("i64")
end

--- The verdict (see the analysis's header) from the steady steps st (nil:
-- judged per kernel instance; why says why there are no steps) and the
-- per kernel name changes kt (M.changes; nil on nsys-jax archives); per_step
-- as M.changes had it.  Returns {verdict ("slower" | "faster" | "same"),
-- basis ("step" | "instance"), before, after (ns), rel, p, n1, n2 (steps,
-- or the kernel names that changed, twice), note, text (the sentence)}.
function M.verdict(st, kt, per_step, why, alpha, threshold)
  local v
  if st then
    local m1, m2 = median(st.durs[1]), median(st.durs[2])
    local sv, sk, ss = {}, {}, {}
    for s = 1, 2 do for _, d in ipairs(st.durs[s]) do sv[#sv + 1], sk[#sk + 1], ss[#ss + 1] = d, "step", s - 1 end end
    local p = stats.mann_whitney(nsl.table{{"key", sk}, {"dur", sv}, {"side", ss}}).step.p
    local rel = m1 > 0 and (m2 - m1) / m1 or 0.0
    -- a few noisy steps: the kernels whose instances changed significantly back the change
    local backed, kernel_note = 0.0, ""
    if kt and per_step then
      local sum = 0.0
      for i = 1, #kt do   -- one Lua step per kernel name
        if kt.significant[i] == "yes" and kt.status[i] == "" then sum = sum + kt["impact (ns)"][i] end
      end
      backed = m1 > 0 and sum / m1 or 0.0
      kernel_note = string.format("; kernels that changed significantly per instance: %s GPU time per step (%s)",
        (sum >= 0 and "+" or "-") .. report.duration(math.abs(sum)), pct(backed))
    end
    local significant = p < alpha or (rel * backed > 0 and math.abs(backed) > threshold / 100)
    v = {basis = "step", before = m1, after = m2, rel = rel, p = p, n1 = #st.durs[1], n2 = #st.durs[2],
         verdict = word(rel, significant, threshold), note = kernel_note}
    v.text = string.format("%s per step: median step %s before, %s after (%s, %d and %d steady steps, " ..
      "Mann-Whitney p = %.2g%s); steps: %s", v.verdict:upper(), report.duration(m1), report.duration(m2), pct(rel),
      v.n1, v.n2, p, kernel_note, st.how)
    return v
  end
  -- per instance of the kernels that changed
  local base, change, nsig, minp = 0.0, 0.0, 0, 1.0
  local t1, sig, status, m1, m2, n1 = kt["total before (ns)"], kt.significant, kt.status, kt["median before (ns)"],
    kt["median after (ns)"], kt["count before"]
  local p = kt["p (Mann-Whitney)"]
  for i = 1, #kt do   -- one Lua step per kernel name
    base = base + t1[i]
    if sig[i] == "yes" and status[i] == "" then
      change, nsig, minp = change + (m2[i] - m1[i]) * n1[i], nsig + 1, math.min(minp, p[i])
    end
  end
  local rel = base > 0 and change / base or 0.0
  v = {basis = "instance", before = base, after = base + change, rel = rel, p = minp, n1 = nsig, n2 = nsig,
       verdict = word(rel, nsig > 0, threshold)}
  v.text = string.format("%s per kernel instance: the %d kernel name%s whose instances changed significantly " ..
    "take %s %s at the before run's counts (%s of its GPU time %s); no steps compared: %s", v.verdict:upper(),
    nsig, nsig == 1 and "" or "s", report.duration(math.abs(change)), change >= 0 and "more" or "less", pct(rel),
    report.duration(base), why)
  return v
end

--- The verdict v (M.verdict) as a one-row table with its threshold (%)
-- and alpha.
function M.verdict_table(v, threshold, alpha)
  return nsl.table{{"verdict", {v.verdict}}, {"basis", {v.basis}},
    {"before (ns)", {v.before * 1.0}}, {"after (ns)", {v.after * 1.0}}, {"change (%)", {100 * v.rel}},
    {"p (Mann-Whitney)", {v.p}}, {"threshold (%)", {threshold * 1.0}}, {"alpha", {alpha * 1.0}},
    {v.basis == "step" and "steps before" or "kernels changed", {v.n1}},
    {v.basis == "step" and "steps after" or "kernels changed ", {v.n2}}}:select(
      v.basis == "step" and {"verdict", "basis", "before (ns)", "after (ns)", "change (%)", "p (Mann-Whitney)",
        "threshold (%)", "alpha", "steps before", "steps after"} or {"verdict", "basis", "before (ns)", "after (ns)",
        "change (%)", "p (Mann-Whitney)", "threshold (%)", "alpha", "kernels changed"})
end

--- The steady steps st (M.steady_steps) of each run: count and median.
function M.steps_table(st)
  return nsl.table{{"run", {"before", "after"}}, {"steps", {#st.durs[1], #st.durs[2]}},
    {"median (ns)", {median(st.durs[1]) * 1.0, median(st.durs[2]) * 1.0}}}
end

--- The changes per kernel class (the default classes) of the operations
-- sel with side (M.operations), as M.changes.
function M.class_changes(sel, side, per_step, alpha)
  local cls = classes.classify_column(sel.name, classes.default_map())
  return M.changes(nsl.table{{"key", cls}, {"dur", sel.dur}, {"side", side}}, per_step, alpha)
end

--- The changes per NVTX range name (range time, PyTorch's per-call
-- suffixes dropped) between reports a and b, per instance, as M.changes;
-- nil when neither has a range.
function M.nvtx_changes(trace, a, b, alpha)
  local nv = trace.nvtx
  if #nv == 0 then return nil end
  nv:load{"report", "text", "dur", "kind"}
  local r = nv:filter((nv.report:eq(a) | nv.report:eq(b)) & nv.kind:ne("mark") & ~nv.dur:isnull())
  if #r == 0 then return nil end
  local label = r.text:map(function(s) return nvtx.normalize(s, nvtx.pytorch_suffixes) end)
  return M.changes(nsl.table{{"key", label}, {"dur", r.dur}, {"side", r.report:eq(b):cast("i64")}}, nil, alpha)
end

--- The per-kernel gate: the kernels of kt (M.changes) whose significant
-- slowdown exceeds fail_above % of base (the verdict's before: the step
-- time or the before run's GPU time), in kt's order: a list of {name,
-- impact (ns), share (% of base), p}; empty when the gate is off.
function M.regressions(kt, base, fail_above)
  local list = {}
  if not (fail_above > 0 and base > 0) then return list end
  for i = 1, #kt do
    local impact = kt["impact (ns)"][i]
    if kt.significant[i] == "yes" and impact > 0 and 100 * impact / base > fail_above then
      list[#list + 1] = {name = kt.name[i], impact = impact, share = 100 * impact / base, p = kt["p (Mann-Whitney)"][i]}
    end
  end
  return list
end

-- ---- figures --------------------------------------------------------------

--- Draws diff_steps as "png" or "svg": each steady step's time before and
-- after (st: M.steady_steps, v: M.verdict).
function M.draw_steps(st, v, format)
  local series = {}
  for s = 1, 2 do
    local x = {}
    for k = 1, #st.durs[s] do x[k] = k end
    series[s] = {label = s == 1 and "before" or "after", x = x, y = st.durs[s]}
  end
  return require("nsl.plot").lines{format = format, series = series, points = true, yunit = "ns",
    xlabel = "steady step", ylabel = "step time",
    title = string.format("Step time before and after: %s (%s)", v.verdict, pct(v.rel))}
end

--- Draws diff_top as "png" or "svg": the first top rows of kt (M.changes),
-- before and after, per step (per_step) or as the median instance; how
-- says which in the title.
function M.draw_top(kt, top, per_step, how, format)
  local cats, bv, av = {}, {}, {}
  local col1 = per_step and kt["total before (ns)"] or kt["median before (ns)"]
  local col2 = per_step and kt["total after (ns)"] or kt["median after (ns)"]
  for i = 1, top do
    cats[i] = report.short_name(kt.name[i])
    bv[i] = per_step and col1[i] / per_step[1] or col1[i]
    av[i] = per_step and col2[i] / per_step[2] or col2[i]
  end
  return require("nsl.plot").grouped_bars{format = format, categories = cats, unit = "ns",
    series = {{label = "before", values = bv}, {label = "after", values = av}},
    ylabel = per_step and "time per step" or "median time per instance",
    title = "Top changes " .. how}
end

return M
