-- jax_communication -- nsys-jax's `communication` on nsys-jax archives: bus
-- bandwidth per collective and message size (the fastest device of every
-- collective instance, mean and standard error over instances), and the part
-- of communication time hidden under computation.  Unlike nsys-jax it also
-- runs on one process's archive of a multi-process run (the clock alignment
-- uses the devices present), and `--arg programs=structure` joins programs
-- whose fingerprints differ between processes.
local nsl = require("nsl")
local jax = require("nsl.jax")

return {
  name = "jax_communication",
  description = "nsys-jax communication: bus bandwidth per collective and size, hidden communication time",
  args = {
    programs = {default = "fingerprint",
                help = "group module executions by 'fingerprint' (nsys-jax) or 'structure' (same name and HLO)"},
  },
  example = "nsl run jax_communication proc0.zip proc1.zip proc2.zip proc3.zip --out comm/",
  run = function(trace, args, out)
    local d = jax.load(trace, {programs = args.programs})
    local comm = d.communication
    if #comm == 0 then nsl.fail("no communication thunks in this trace") end
    local corr = jax.alignment(comm)
    comm = jax.apply_alignment(comm, corr)
    local steady = jax.steady(comm, jax.compiled_programs(d.compile_parts), true)
    if #steady == 0 then nsl.fail("no steady-state communication was identified") end
    local bw = jax.bandwidth(steady)
    -- wide table: one row per message size, one column per collective
    local colls, sizes, cell = {}, {}, {}
    for i = 1, #bw do
      local c, s = bw.Collective[i], bw.MessageSize[i]
      if not cell[c] then cell[c] = {}; colls[#colls + 1] = c end
      if not cell[s] then cell[s] = true; sizes[#sizes + 1] = s end
      cell[c][s] = jax.ufloat(bw.BusBwMean[i], bw.BusBwErr[i])
    end
    table.sort(colls)
    table.sort(sizes)
    local spec = {{"Size [B]", sizes}}
    for _, c in ipairs(colls) do
      local v = {}
      for k, s in ipairs(sizes) do v[k] = cell[c][s] or "-" end
      spec[#spec + 1] = {c, v}
    end
    out:table("bandwidth", nsl.table(spec), {title = "Bus bandwidth [GB/s]"})
    out:table("bandwidth_long", bw, {title = "Bus bandwidth per collective and message size"})
    local hr, overall = jax.hidden_ratio(steady)
    out:table("hidden", hr, {title = "Communication hidden under computation (steady state)"})
    out:text(string.format("Overall HiddenMs to TotalMs: %.4f", overall))
    out:value("hidden_to_total", overall)
  end,
}
