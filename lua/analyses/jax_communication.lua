-- jax_communication -- nsys-jax's `communication` on nsys-jax archives: bus
-- bandwidth per collective and message size (the fastest device of every
-- collective instance, mean and standard error over instances), and the part
-- of communication time hidden under computation.  Unlike nsys-jax it also
-- runs on one process's archive of a multi-process run (the clock alignment
-- uses the devices present), and `--arg programs=structure` joins programs
-- whose fingerprints differ between processes.
--
-- The hidden table's HiddenToTotal is nsys-jax's current per-collective
-- ratio: summed hidden time over summed total time of the collective's steady
-- rows; `--arg hidden=mean` gives its older one (until early 2025),
-- MeanHiddenToTotal, the mean of the rows' ratios.
--
-- Figures: bandwidth, the mean bus bandwidth against message size (log-log,
-- one line per collective), and hidden, per collective the share of its
-- steady-state time hidden under computation and exposed (stacked bars).
local nsl = require("nsl")
local jax = require("nsl.jax")
local report = require("nsl.report")

return {
  name = "jax_communication",
  description = "nsys-jax communication: bus bandwidth per collective and size, hidden communication time",
  args = {
    programs = jax.programs_arg(),
    hidden = {default = "sum", help = "per-collective hidden ratio: sum (nsys-jax's current: summed hidden / " ..
                                      "summed total time) or mean (its older mean of per-row ratios)"},
  },
  example = "nsl run jax_communication proc0.zip proc1.zip proc2.zip proc3.zip --out comm/",
  run = function(trace, args, out)
    if args.hidden ~= "sum" and args.hidden ~= "mean" then
      nsl.fail(string.format("--arg hidden=%s: expected sum or mean", tostring(args.hidden)), "usage")
    end
    local d = jax.load(trace, {programs = args.programs})
    local comm = d.communication
    if #comm == 0 then nsl.fail("no communication thunks in this trace") end
    local corr = jax.alignment(comm)
    comm = jax.apply_alignment(comm, corr)
    local steady = jax.steady(comm, jax.compiled_programs(d.compile_parts), true)
    if #steady == 0 then nsl.fail("no steady-state communication was identified") end
    local bw = jax.bandwidth(steady)
    -- wide table: one row per message size, one column per collective; people
    -- read nsys-jax's "mean(error)" cells, CSV and JSON get the mean and the
    -- standard error as numbers (NaN, JSON null, where a collective has no such size)
    local colls, sizes, cell = {}, {}, {}
    for i = 1, #bw do
      local c, s = bw.Collective[i], bw.MessageSize[i]
      if not cell[c] then cell[c] = {}; colls[#colls + 1] = c end
      if not cell[s] then cell[s] = true; sizes[#sizes + 1] = s end
      cell[c][s] = {bw.BusBwMean[i], bw.BusBwErr[i]}
    end
    table.sort(colls)
    table.sort(sizes)
    local shown, numbers = {{"Size [B]", sizes}}, {{"Size [B]", sizes}}
    for _, c in ipairs(colls) do
      local v, mean, err = {}, {}, {}
      for k, s in ipairs(sizes) do
        local e = cell[c][s]
        v[k] = e and jax.ufloat(e[1], e[2]) or "-"
        mean[k], err[k] = e and e[1] or 0 / 0, e and e[2] or 0 / 0
      end
      shown[#shown + 1] = {c, v}
      numbers[#numbers + 1] = {c, mean}
      numbers[#numbers + 1] = {c .. " err", err}
    end
    out:table("bandwidth", nsl.table(numbers), {title = "Bus bandwidth [GB/s]", shown = nsl.table(shown)})
    out:table("bandwidth_long", bw, {title = "Bus bandwidth per collective and message size"})
    local hr, overall = jax.hidden_ratio(steady, args.hidden)
    if out:carries_figures() then
      local plot = require("nsl.plot")
      -- one series per collective: its sizes and mean bandwidths (bw is sorted by
      -- size); a bandwidth a log axis cannot show (0, or infinite from a
      -- zero-length thunk) would blank its whole line: left out
      local series = {}
      for _, c in ipairs(colls) do
        local one = bw:filter(bw.Collective:eq(c) & bw.BusBwMean:gt(0) & bw.BusBwMean:lt(math.huge))
        if #one > 0 then
          series[#series + 1] = {label = c, x = one.MessageSize:totable(), y = one.BusBwMean:totable()}
        end
      end
      out:figure("bandwidth", function(format)
        local cv, data = plot.lines{format = format, series = series, xlog = true, ylog = true, points = true,
                                    xunit = "bytes", xlabel = "message size", ylabel = "bus bandwidth [GB/s]",
                                    title = "Bus bandwidth per collective (steady state, fastest device per instance)"}
        for i, s in ipairs(series) do data.series[i].x, data.series[i].y = s.x, s.y end   -- the points drawn
        return cv, data
      end, {title = "Bus bandwidth against message size"})
      -- per collective the share of its time hidden and exposed, its total in the label
      local cats, hid, exp = {}, {}, {}
      for i = 1, #hr do
        local total = hr.HiddenMs[i] + hr.ExposedMs[i]
        cats[i] = string.format("%s (%s)", hr.Collective[i], report.duration(math.floor(total * 1e6 + 0.5)))
        hid[i], exp[i] = total > 0 and hr.HiddenMs[i] / total or 0, total > 0 and hr.ExposedMs[i] / total or 0
      end
      out:figure("hidden", function(format)
        local cv, data = plot.stacked_bars{format = format, categories = cats, unit = "percent", ymax = 1,
                                 series = {{label = "hidden under computation", values = hid},
                                           {label = "exposed", values = exp}},
                                 ylabel = "share of communication time", xlabel = "collective (total time)",
                                 title = string.format("Steady-state communication time hidden under computation " ..
                                                       "(%.2f%% overall)", 100 * overall)}
        data.hidden_ms, data.exposed_ms = hr.HiddenMs:totable(), hr.ExposedMs:totable()
        return cv, data
      end, {title = "Communication hidden under computation"})
    end
    out:table("hidden", hr, {title = "Communication hidden under computation (steady state)",
                             col_decimals = {HiddenToTotal = 4, MeanHiddenToTotal = 4}})
    out:text(string.format("Overall HiddenMs to TotalMs: %.4f", overall))
    out:value("hidden_to_total", overall)
  end,
}
