-- jax_flamegraph -- where steady-state GPU time goes in an nsys-jax trace, as
-- nsys-jax's notebook attributes it: per HLO opcode, and as folded stacks by
-- Python source line (HLO stack frames) and by JAX op name, written to
-- source_flamegraph.folded and op_name_flamegraph.folded (weights in ms, as
-- nsys-jax writes them) and drawn as interactive SVG and PNG flame graphs
-- (weights in ns) under --out.
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
    local plot = require("nsl.plot")
    for _, which in ipairs{"source", "op_name"} do
      out:file(which .. "_flamegraph.folded", jax.folded(a[which], a["order_" .. which]))
      local f = out.dir and jax.attribution_stacks(a, which)
      if f and #f > 0 then
        local title = string.format("GPU time by %s (steady state, ns)", which == "source" and "source line" or "op name")
        out:file(which .. "_flamegraph.svg",
                 plot.flamegraph(f, {title = title, format = "svg", interactive = true, unit = "ns"}):to_string())
        out:file(which .. "_flamegraph.png", plot.flamegraph(f, {title = title, format = "png", unit = "ns"}):to_string())
      end
    end
  end,
}
