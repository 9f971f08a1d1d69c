-- jax_flamegraph -- where steady-state GPU time goes in an nsys-jax trace, as
-- nsys-jax's notebook attributes it: per HLO opcode, and as folded stacks by
-- Python source line (HLO stack frames) and by JAX op name, written to
-- source_flamegraph.folded and op_name_flamegraph.folded under --out, and
-- drawn as flame graphs (SVG, interactive; PNG) wherever figures go.
local nsl = require("nsl")
local jax = require("nsl.jax")

return {
  name = "jax_flamegraph",
  description = "GPU time by HLO opcode, source line and op name (folded stacks; nsys-jax archives, bundles with XLA dumps)",
  args = {
    programs = {default = "fingerprint",
                help = "group module executions by 'fingerprint' (nsys-jax) or 'structure' (same name and HLO)"},
  },
  example = "nsl run jax_flamegraph proc0.zip --out fg/",
  run = function(trace, args, out)
    local d = jax.load(trace, {programs = args.programs})
    local compiled = jax.compiled_programs(d.compile_parts)
    local has_comm = #d.communication > 0
    local module = d.module:filter(~d.module.ProgramId:isin{"unknown"})
    local thunk = d.thunk:filter(~d.thunk.ProgramId:isin{"unknown"})
    local corr = jax.alignment(d.communication)
    module, thunk = jax.apply_alignment(module, corr), jax.apply_alignment(thunk, corr)
    local sm = jax.steady(module, compiled, has_comm)
    local stt = jax.steady(thunk, compiled, has_comm)
    local a = jax.attribution(d, sm, stt)
    local ops, ms = {}, {}
    for k, v in pairs(a.op_runtime) do
      if k:sub(1, 1) ~= "_" then ops[#ops + 1] = k end
    end
    table.sort(ops, function(x, y) return a.op_runtime[x] > a.op_runtime[y] end)
    local pct = {}
    for i, k in ipairs(ops) do ms[i] = a.op_runtime[k]; pct[i] = 100 * ms[i] / a.op_runtime._total end
    out:table("op_runtime", nsl.table{{"Operation", ops}, {"Ms", ms}, {"Percent", pct}},
              {title = string.format("GPU runtime by operation type (%.2f ms in modules %s)", a.op_runtime._total,
                                     table.concat(a.top, " "))})
    out:value("op_runtime", a.op_runtime)
    out:value("totals", a.totals)
    local folded = {source = jax.folded(a.source, a.order_source), op_name = jax.folded(a.op_name, a.order_op_name)}
    for _, name in ipairs{"source", "op_name"} do
      out:file(name .. "_flamegraph.folded", folded[name])
      out:figure(name .. "_flamegraph", function(format)   -- interactive SVG, PNG
        local plot = require("nsl.plot")
        return plot.flamegraph(plot.folded_frames(folded[name]), {format = format, interactive = format == "svg",
          id_prefix = "nslfg-" .. name:gsub("_", "-") .. "-",
          title = "Steady-state GPU time by " .. (name == "source" and "Python source line" or "JAX op name")})
      end, {formats = {"svg", "png"}})
    end
  end,
}
