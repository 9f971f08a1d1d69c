-- jax_flamegraph -- where steady-state GPU time goes in an nsys-jax trace, as
-- nsys-jax's notebook attributes it: per HLO opcode, and as folded stacks by
-- Python source line (HLO stack frames) and by JAX op name, written to
-- source_flamegraph.folded and op_name_flamegraph.folded (weights in ms, as
-- nsys-jax writes them) under --out, and drawn as flame graphs (weights in
-- ns; SVG, interactive; PNG) wherever figures go.
local nsl = require("nsl")
local jax = require("nsl.jax")

return {
  name = "jax_flamegraph",
  description = "GPU time by HLO opcode, source line and op name (folded stacks; nsys-jax archives, bundles with XLA dumps)",
  args = {
    programs = jax.programs_arg(),
  },
  example = "nsl run jax_flamegraph proc0.zip --out fg/",
  run = function(trace, args, out)
    local a = jax.steady_attribution(trace, {programs = args.programs})
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
    for _, which in ipairs{"source", "op_name"} do
      out:file(which .. "_flamegraph.folded", jax.folded(a[which], a["order_" .. which]))
      local f = out:carries_figures() and jax.attribution_stacks(a, which)
      if f and #f > 0 then
        out:figure(which .. "_flamegraph", function(format)   -- interactive SVG, PNG
          return require("nsl.plot").flamegraph(f, {format = format, interactive = format == "svg", unit = "ns",
            id_prefix = "nslfg-" .. which:gsub("_", "-") .. "-",
            title = "Steady-state GPU time by " .. (which == "source" and "Python source line" or "JAX op name") .. " (ns)"})
        end, {formats = {"svg", "png"}})
      end
    end
  end,
}
