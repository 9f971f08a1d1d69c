-- jax_summary -- nsys-jax's `summary` on nsys-jax archives: the module
-- execution table of the steady state (executions, thunks, duration, the time
-- devices wait for each other in collectives) and the parallel-aware
-- compilation time (top ranges, without pass detail, top XLA passes), plus the
-- cross-device clock corrections.  `nsl run summary` delegates here for a trace
-- of NVTX ranges projected onto the GPU without kernels.
local nsl = require("nsl")
local tables = require("nsl.util.tables")
local jax = require("nsl.jax")

local function ms(v) return v == nil and "---" or string.format("%.3f", v) end

return {
  name = "jax_summary",
  description = "nsys-jax summary: XLA module executions, wait times, compile time (nsys-jax archives, bundles with XLA dumps)",
  args = {
    programs = jax.programs_arg(),
    top = {default = 10, help = "rows of the compile-time tables"},
  },
  example = "nsl run jax_summary proc0.zip proc1.zip proc2.zip proc3.zip",
  run = function(trace, args, out)
    local d = jax.load(trace, {programs = args.programs})
    local compiled = jax.compiled_programs(d.compile_parts)
    -- nsys-jax's summary drops the autotuner's own executions (ProgramId "unknown")
    local module = d.module:filter(~d.module.ProgramId:isin{"unknown"})
    local comm = d.communication
    local steady_module = jax.steady(module, compiled, #comm > 0)
    local steady_comm = jax.steady(comm, compiled, #comm > 0)
    local st = jax.module_stats(steady_module, steady_comm)
    local has_wait = #steady_comm > 0
    -- people read nsys-jax's "value(error)" cells; CSV and JSON get the mean and
    -- the standard deviation as numbers of their own (NaN, JSON null, for one execution)
    local shown = {ID = {}, Name = {}, ["#execs"] = {}, Thunks = {}, ["Duration [ms]"] = {}, ["Duration [%]"] = {},
                   ["Wait time [ms]"] = {}, ["Wait time [%]"] = {}}
    for i = 1, #st do
      shown.ID[i] = st.ProgramId[i]
      shown.Name[i] = st.Name[i]
      shown["#execs"][i] = st.Execs[i]
      local tsd = st.NumThunksStd[i]
      shown.Thunks[i] = (tsd == nil or tsd ~= tsd) and jax.ufloat(st.NumThunksMean[i], tsd)
                        or (tsd == 0 and string.format("%.0f", st.NumThunksMean[i]))
                        or jax.ufloat(st.NumThunksMean[i], tsd)
      shown["Duration [ms]"][i] = jax.ufloat(st.DurMeanMs[i], st.DurStdMs[i])
      shown["Duration [%]"][i] = string.format("%.3f", st.DurPercent[i])
      local wm = st.WaitMeanMs[i]
      shown["Wait time [ms]"][i] = (wm == nil or wm ~= wm) and "---" or jax.ufloat(wm, st.WaitStdMs[i])
      local wp = st.WaitPercent[i]
      shown["Wait time [%]"][i] = (wp == nil or wp ~= wp) and "---" or ms(wp)
    end
    local numbers = {ID = st.ProgramId, Name = st.Name, ["#execs"] = st.Execs, Thunks = st.NumThunksMean,
                     ["Thunks std"] = st.NumThunksStd, ["Duration [ms]"] = st.DurMeanMs,
                     ["Duration std [ms]"] = st.DurStdMs, ["Duration [%]"] = st.DurPercent,
                     ["Wait time [ms]"] = st.WaitMeanMs, ["Wait time std [ms]"] = st.WaitStdMs,
                     ["Wait time [%]"] = st.WaitPercent}
    local order = {"ID", "Name", "#execs", "Thunks", "Duration [ms]", "Duration [%]"}
    local norder = {"ID", "Name", "#execs", "Thunks", "Thunks std", "Duration [ms]", "Duration std [ms]", "Duration [%]"}
    if has_wait then
      order[#order + 1] = "Wait time [ms]"; order[#order + 1] = "Wait time [%]"
      for _, c in ipairs{"Wait time [ms]", "Wait time std [ms]", "Wait time [%]"} do norder[#norder + 1] = c end
    end
    local spec, nspec = {}, {}
    for k, name in ipairs(order) do spec[k] = {name, shown[name]} end
    for k, name in ipairs(norder) do nspec[k] = {name, numbers[name]} end
    if #st > 0 then
      out:table("modules", nsl.table(nspec), {title = "MODULE EXECUTION SUMMARY (steady state)", shown = nsl.table(spec)})
    else
      out:text("No steady-state module executions.")
    end
    out:value("steady_step_ms", (function()
      local r = {}
      for i = 1, #st do r[st.ProgramId[i]] = st.DurMeanMs[i] end
      return r
    end)())
    -- programs split by fingerprint (e.g. one process's autotuning changed its HLO)
    if args.programs == "fingerprint" then
      local names = {}
      for i = 1, #st do names[st.Name[i]] = (names[st.Name[i]] or 0) + 1 end
      for name, n in pairs(names) do
        if n > 1 and name:match("step") then
          out:finding{severity = "info", message = string.format(
            "%s ran as %d programs (fingerprints differ between processes); " ..
            "--arg programs=structure counts them as one", name, n)}
        end
      end
    end

    -- clock alignment
    local corr, size = jax.alignment(comm)
    if corr then
      local dev, val = tables.sorted_keys(corr), {}
      for i, k in ipairs(dev) do val[i] = corr[k] end
      out:table("clock_corrections", nsl.table{{"Device", dev}, {"CorrectionMs", val}},
                {title = string.format("DEVICE CLOCK CORRECTIONS (from collectives of %d devices)", size),
                 col_decimals = {CorrectionMs = 3}})
    end

    -- compilation
    local cs = d.compile_parts and #d.compile_parts > 0 and jax.compile_statistics(d.compile_parts)
    if cs and #cs > 0 then
      local total = cs.DurNonChildMs:sum()
      out:value("compile_total_ms", total)
      local pct = cs.DurNonChildMs * (100 / total)
      local ranges = nsl.table{{"Range", cs.Name}, {"DurNonChildMs", cs.DurNonChildMs}, {"DurNonChildPercent", pct}}
      out:table("compile_ranges", ranges:head(args.top),
                {title = string.format("COMPILATION TIME -- TOP %d RANGES (total %.1f ms)", args.top, total)})
      local hl = jax.per_group(ranges, {"Range"}, function(k, i)
        local n = k.Range[i]
        if n:sub(1, 9) == "XlaPass:#" then return "XlaPasses" end
        if n:sub(1, 17) == "XlaPassPipeline:#" then return "XlaPassPipelines" end
        return n
      end, "str")
      local high = ranges:with("Range", hl):group_by("Range")
        :agg{"DurNonChildMs=sum(DurNonChildMs)", "DurNonChildPercent=sum(DurNonChildPercent)"}:sort("-DurNonChildMs")
      out:table("compile_high_level", high:head(args.top), {title = "COMPILATION TIME -- NO PASS DETAIL"})
      local passes = ranges:filter(ranges.Range:match("^XlaPass:#"))
      if #passes > 0 then
        local ptotal = passes.DurNonChildMs:sum()
        passes = passes:with("DurNonChildPercent", passes.DurNonChildMs * (100 / ptotal))
        out:table("compile_passes", passes:head(args.top),
                  {title = string.format("COMPILATION TIME -- TOP %d XLA PASSES", args.top)})
      end
    end
  end,
}
