-- nsl.jax.stats -- nsys-jax's analyses over the frames of nsl.jax.frames:
-- loading everything an analysis needs, steady state and warm-up, clock
-- alignment through collectives, module statistics, bus bandwidth, hidden
-- communication, the heap simulator, and comparisons of runs.
local nsl = require("nsl")
local frames = require("nsl.jax.frames")

local M = {}

local per_group = frames.per_group

-- ---------------------------------------------------------------- analyses

--- Everything an nsys-jax analysis needs: {module, thunk, communication,
-- compile_parts, store}, from an nsys-jax archive or from exports (bundles
-- with meta/xla_dump/).  opts.programs as for frames.gpu_frames; opts.compile =
-- false skips the compile frame; opts.gpu_ranges: frames.gpu_ranges(trace) when
-- the caller has it already.
function M.load(trace, opts)
  opts = opts or {}
  local g = opts.gpu_ranges or frames.gpu_ranges(trace)
  if #g == 0 then
    nsl.fail("no NVTX ranges projected onto the GPU: neither an nsys-jax archive nor an export with NVTX ranges " ..
             "around kernel launches")
  end
  if g.text:match("XlaModule:#"):count() == 0 then
    nsl.fail("no XLA module ranges (XlaModule:#...#) among the NVTX ranges projected onto the GPU: not a JAX trace")
  end
  local store = frames.hlo_store(trace)
  local d = {store = store}
  local o = {gpu_ranges = g}
  for k, v in pairs(opts) do o[k] = v end
  d.module, d.thunk, d.communication = frames.gpu_frames(trace, store, o)
  if opts.compile ~= false then d.compile_parts = frames.compile_frame(trace, store) end
  return d
end

--- Steady-state time per XLA program and run, to compare JAX runs: of_report
-- (array: of_report[r + 1] = the 0-based run of report r, -1 for none),
-- labels (one per run), base (0-based run the others are measured against).
-- Programs are matched across runs by name (their fingerprints may differ);
-- steady as nsys-jax (M.steady).  Returns a table Name, then per run
-- "<label> execs" and "<label> ms" (mean steady execution over the run's
-- devices), and "<label> vs <base label> (%)" for the other runs; sorted by
-- the base run's time, longest first.
function M.compare_runs(trace, of_report, labels, base)
  local d = M.load(trace)
  local m = d.module:filter(~d.module.ProgramId:isin{"unknown"})
  local st = M.steady(m, M.compiled_programs(d.compile_parts), #d.communication > 0)
  local run = nsl.column(of_report):gather(st.report:cast("i64"))
  st = st:with("run", run):filter(run:ge(0))
  local g = st:group_by("Name", "run"):agg{"n=count", "ms=mean(ProjDurMs)"}
  local per, names, total = {}, {}, {}
  for i = 1, #g do
    local name, r = g.Name[i], g.run[i]
    if not per[name] then per[name] = {}; names[#names + 1] = name end
    per[name][r] = {n = g.n[i], ms = g.ms[i]}
  end
  local function key(name) local e = per[name][base] return e and e.ms * e.n or -1 end
  for _, name in ipairs(names) do total[name] = key(name) end
  table.sort(names, function(a, b) if total[a] ~= total[b] then return total[a] > total[b] end return a < b end)
  local cols = {{"Name", names}}
  for r = 0, #labels - 1 do
    local execs, ms = {}, {}
    for i, name in ipairs(names) do
      local e = per[name][r]
      execs[i], ms[i] = e and e.n or 0, e and e.ms or 0 / 0
    end
    cols[#cols + 1] = {labels[r + 1] .. " execs", execs}
    cols[#cols + 1] = {labels[r + 1] .. " ms", ms}
  end
  for r = 0, #labels - 1 do
    if r ~= base then
      local pct = {}
      for i, name in ipairs(names) do
        local a, b = per[name][base], per[name][r]
        pct[i] = (a and b) and (b.ms - a.ms) * 100 / a.ms or 0 / 0
      end
      cols[#cols + 1] = {string.format("%s vs %s (%%)", labels[r + 1], labels[base + 1]), pct}
    end
  end
  return nsl.table(cols)
end

--- The collective instance of every row of a communication frame: the rows
-- of one program execution with the same thunk name and thunk execution are
-- one collective on every device that ran it (nsys-jax's matching for the
-- clock alignment).  Returns the 0-based instance ids and the group_by.
function M.collective_instances(comm)
  local g = comm:group_by("ProgramId", "ProgramExecution", "Name", "ThunkExecution")
  return g:ids(), g
end

--- Cross-device clock alignment (nsys-jax's align_profiler_data_timestamps):
-- the end of every collective of the largest size, compared with the mean end
-- over the devices that ran it; each device's correction is the median of its
-- skews (ms).  Unlike nsys-jax it also works when fewer devices were profiled
-- than take part in the collectives (one process's archive of a multi-process
-- run): the mean is over the devices present, so a lone device gets 0.
-- Returns corrections {[device] = ms} (nil when there is nothing to align) and
-- the collective size used.
function M.alignment(comm)
  if #comm == 0 then return nil end
  local size = comm.CollectiveSize:max()
  if not size or size <= 1 then return nil end
  local c = comm:filter(comm.CollectiveSize:eq(size))
  local stop = c.ProjStartMs + c.ProjDurMs + c.ProjDurHiddenMs
  c = c:with("end", stop)
  local ids, g = M.collective_instances(c)
  local mean = g:agg{"m=mean(end)"}.m:gather(ids)
  c = c:with("skew", stop - mean)
  local med = c:group_by("Device"):agg{"corr=median(skew)"}
  local out = {}
  for i = 1, #med do out[med.Device[i]] = med.corr[i] end
  return out, size
end

--- Frames with ProjStartMs corrected by the alignment.
function M.apply_alignment(frame, corr)
  if not corr or #frame == 0 then return frame end
  local k = per_group(frame, {"Device"}, function(keys, i) return corr[keys.Device[i]] or 0.0 end, "num")
  return frame:with("ProjStartMs", frame.ProjStartMs - k)
end

--- The ProgramIds whose compilation was profiled.
function M.compiled_programs(parts)
  local out = {}
  for _, p in ipairs(parts or {}) do
    local k = p:group_by("ProgramId"):keys()
    for i = 1, #k do if k.ProgramId[i] then out[#out + 1] = k.ProgramId[i] end end
  end
  return out
end

--- nsys-jax's apply_warmup_heuristics: the first execution of a program whose
-- compilation was profiled is initialisation, and one more when the profile has
-- communication.  Returns steady, init (and a warning when nothing is steady:
-- then everything counts as steady).
function M.steady(frame, compiled, has_comm)
  if #frame == 0 then return frame, frame end
  local threshold = frame.ProgramId:isin(compiled):cast("i64") + (has_comm and 1 or 0)
  local init = (frame.ProgramExecution - threshold):lt(0)
  if (~init):count() == 0 then return frame, frame:filter(init & ~init), true end
  return frame:filter(~init), frame:filter(init)
end

local function sample_std(values)
  local n = #values
  if n < 2 then return 0 / 0 end
  local s = 0
  for _, v in ipairs(values) do s = s + v end
  local m, ss = s / n, 0
  for _, v in ipairs(values) do ss = ss + (v - m) ^ 2 end
  return math.sqrt(ss / (n - 1))
end
M.sample_std = sample_std

--- The `summary` module table: per ProgramId over steady executions.
-- Columns: ProgramId, Name, Execs, NumThunksMean, NumThunksStd, DurSumMs,
-- DurMeanMs, DurStdMs, DurPercent, WaitMeanMs, WaitStdMs, WaitPercent.
function M.module_stats(steady_module, steady_comm)
  local g = steady_module:group_by("ProgramId")
  local a = g:agg{"Name=first(Name)", "Execs=count", "NumThunksMean=mean(NumThunks)", "NumThunksStd=std(NumThunks)",
                  "DurSumMs=sum(ProjDurMs)", "DurMeanMs=mean(ProjDurMs)", "DurStdMs=std(ProjDurMs)"}
  -- pandas' std of one value is NaN, nsl's 0
  a = a:with("NumThunksStd", per_group(a, {"ProgramId"}, function(k, i)
    return a.Execs[i] > 1 and a.NumThunksStd[i] or 0 / 0 end, "num"),
    "DurStdMs", per_group(a, {"ProgramId"}, function(k, i) return a.Execs[i] > 1 and a.DurStdMs[i] or 0 / 0 end, "num"))
  local total = a.DurSumMs:sum()
  a = a:with("DurPercent", a.DurSumMs * (100 / total))
  local wait_mean, wait_std = {}, {}
  if steady_comm and #steady_comm > 0 then
    local tg = steady_comm:group_by("ProgramId", "ProgramExecution", "Name", "ThunkExecution")
    local mm = tg:agg{"mx=max(ProjDurMs)", "mn=min(ProjDurMs)"}
    -- the agg table has the group keys first
    local w = nsl.table{{"ProgramId", mm.ProgramId}, {"ProgramExecution", mm.ProgramExecution},
                        {"wait", mm.mx - mm.mn}}
    local per_exec = w:group_by("ProgramId", "ProgramExecution"):agg{"wait=sum(wait)"}
    local lists = {}
    for i = 1, #per_exec do
      local id = per_exec.ProgramId[i]
      lists[id] = lists[id] or {}
      table.insert(lists[id], per_exec.wait[i])
    end
    for id, l in pairs(lists) do
      local s = 0
      for _, v in ipairs(l) do s = s + v end
      wait_mean[id], wait_std[id] = s / #l, sample_std(l)
    end
  end
  local wm = per_group(a, {"ProgramId"}, function(k, i) return wait_mean[k.ProgramId[i]] end, "num")
  local ws = per_group(a, {"ProgramId"}, function(k, i) return wait_std[k.ProgramId[i]] end, "num")
  a = a:with("WaitMeanMs", wm, "WaitStdMs", ws, "WaitPercent", wm * 100 / a.DurMeanMs)
  return a:sort("-DurSumMs")
end

--- Bus bandwidth per (collective, message size): per collective instance the
-- fastest device's bus bandwidth, then mean and standard error over instances.
-- Columns: Collective, MessageSize, BusBwMean, BusBwErr, Instances.
function M.bandwidth(steady_comm)
  local inst = steady_comm:group_by("Collective", "MessageSize", "ProgramId", "ProgramExecution", "ThunkIndex")
    :agg{"bw=max(BusBandwidthGBPerSec)"}
  local s = inst:group_by("Collective", "MessageSize"):agg{"BusBwMean=mean(bw)", "sd=std(bw)", "Instances=count"}
  local err = per_group(s, {"Collective", "MessageSize"}, function(k, i)
    return s.Instances[i] > 1 and s.sd[i] / math.sqrt(s.Instances[i]) or 0 / 0 end, "num")
  return nsl.table{{"Collective", s.Collective}, {"MessageSize", s.MessageSize}, {"BusBwMean", s.BusBwMean},
                   {"BusBwErr", err}, {"Instances", s.Instances}}:sort("MessageSize", "Collective")
end

--- Communication time hidden under computation, per collective and overall.
-- Per collective HiddenToTotal is nsys-jax's current definition (JAX-Toolbox
-- since 2025): the summed hidden time over the summed total (hidden +
-- exposed) time of its steady rows.  With how = "mean" it is the older one
-- instead, MeanHiddenToTotal: the mean over rows of each row's ratio (a row
-- of zero length counts as NaN, as in pandas, and is skipped).  Columns:
-- Collective, HiddenToTotal (or MeanHiddenToTotal), HiddenMs, ExposedMs;
-- sorted by collective.  Second result: the overall summed ratio.
function M.hidden_ratio(steady_comm, how)
  local full = steady_comm.ProjDurMs + steady_comm.ProjDurHiddenMs
  local overall = steady_comm.ProjDurHiddenMs:sum() / full:sum()
  if how == "mean" then
    local t = steady_comm:with("ratio", steady_comm.ProjDurHiddenMs / full)
    t = t:filter(t.ratio:eq(t.ratio))   -- 0/0 is NaN: pandas' mean skips it
    local s = t:group_by("Collective"):agg{"MeanHiddenToTotal=mean(ratio)", "HiddenMs=sum(ProjDurHiddenMs)",
                                            "ExposedMs=sum(ProjDurMs)"}
    return s:sort("Collective"), overall
  end
  local s = steady_comm:group_by("Collective"):agg{"HiddenMs=sum(ProjDurHiddenMs)", "ExposedMs=sum(ProjDurMs)"}
  local ratio = s.HiddenMs / (s.HiddenMs + s.ExposedMs)
  s = nsl.table{{"Collective", s.Collective}, {"HiddenToTotal", ratio}, {"HiddenMs", s.HiddenMs},
                {"ExposedMs", s.ExposedMs}}
  return s:sort("Collective"), overall
end

--- "value(uncertainty)" in the short notation of the Python uncertainties
-- package: the uncertainty keeps 2 significant digits when its leading digits
-- are 10-35, else 1; the value is rounded to the same decimal place.
function M.ufloat(v, u)
  if v == nil or v ~= v then return "nan" end
  if u == nil or u ~= u then
    return string.format("%s(nan)", (string.format("%.15g", v)))
  end
  if u == 0 then return string.format("%s(0)", (string.format("%.15g", v))) end
  local e = math.floor(math.log(u, 10))
  local lead = u / 10 ^ (e - 1)   -- two leading digits, 10 <= lead < 100
  local digits = lead < 35.5 and 2 or 1
  local place = e - digits + 1      -- decimal exponent of the last kept digit
  local ur = math.floor(u / 10 ^ place + 0.5)
  if ur >= 10 ^ digits then ur = ur // 10; place = place + 1 end
  if place >= 0 then
    local vr = math.floor(v / 10 ^ place + 0.5) * 10 ^ place
    return string.format("%d(%d)", math.floor(vr + 0.5), math.floor(ur * 10 ^ place + 0.5))
  end
  local dec = -place
  local us = ur
  if ur * 10 ^ place >= 1 then us = string.format("%." .. dec .. "f", ur * 10 ^ place) end
  return string.format("%." .. dec .. "f(%s)", v, us)
end

--- Heap-simulator peaks per fingerprint: {[fp] = {{n_events=, peak_bytes=}, ...}}
-- over the after-optimizations dumps of the given fingerprints.
function M.heap(store, fingerprints)
  local out = {}
  for _, fp in ipairs(fingerprints) do
    local mods = store.modules(fp)
    out[fp] = mods[1] and mods[1]:heap() or {}
  end
  return out
end

return M
