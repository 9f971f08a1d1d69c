-- nsl.checks.launch_bound -- diagnose check launch.bound (the engine: nsl.diagnose).
local nsl = require("nsl")
local report = require("nsl.report")
local D = require("nsl.diagnose")
local table_of = D.table_of

return {
  id = "launch.bound",
  description = "Per device, idle gaps (no kernel, memcpy or memset running) of at most launch_gap before a " ..
    "kernel shorter than short; the job loses the gaps",
  tables = {},
  reads = {"GPU operations (nsl.gpu_ops): report, device, start, stop, memop"},
  claims = {},
  thresholds = {
    short = {default = "10us", help = "launch.bound: kernels shorter than this are short", duration = true},
    launch_gap = {default = "1ms", help = "launch.bound: idle gaps up to this before a short kernel count",
      duration = true},
  },
  run = function(ctx)
    local short, maxgap = ctx.ns.short, ctx.ns.launch_gap
    -- (per device of Ctx:gpu().dv, the gaps before short kernels: count, idle, the first and last end)
    local span = ctx:gpu().dv
    local has = span.lb_n:gt(0)
    if has:count() == 0 then return end
    local g = has:indices()
    local a = nsl.table{{"g", g}, {"n", span.lb_n:gather(g)}, {"total", span.lb_total:gather(g)},
                        {"first", span.lb_first:gather(g)}, {"last", span.lb_last:gather(g)}}
    local rows = {}
    for i = 1, #a do
      local j = a.g[i] + 1
      local width = span.hi[j] - span.lo[j]
      rows[i] = {report = ctx:rank(span.report[j], span.device[j]), device = span.device[j], kernels = span.n[j],
                 n = a.n[i], total = a.total[i], span = width, share = a.total[i] * 100.0 / width}
    end
    local ev = ctx:table("launch_bound", table_of(rows, {{"rank", "report"}, {"device", "device"}, {"GPU operations", "kernels"},
      {"gaps before short kernels", "n"}, {"idle (ns)", "total"}, {"span (ns)", "span"}, {"idle (% of span)", "share"}}),
      string.format("GPU idle gaps of at most %s before kernels shorter than %s, per device",
                    report.duration(maxgap), report.duration(short)))
    for i = 1, #a do
      local j = a.g[i] + 1
      local r, dev = span.report[j], span.device[j]
      ctx:add{id = "launch.bound", total = a.total[i], window = span.hi[j] - span.lo[j], evidence = ev,
              text = string.format("%s: launch-bound -- the GPU idles %d times (%s) before kernels shorter than %s " ..
                "(fuse kernels or capture them in a CUDA graph)", ctx:rank(r, dev), a.n[i],
                report.duration(a.total[i]), report.duration(short)),
              where = {rank = ctx:rank(r, dev), report = r, device = dev, from = a.first[i], to = a.last[i]},
              next = "nsl run launch " .. ctx:path(r)}
    end
  end,
}
