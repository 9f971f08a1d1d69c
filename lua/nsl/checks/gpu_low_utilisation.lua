-- nsl.checks.gpu_low_utilisation -- diagnose check gpu.low_utilisation (the engine: nsl.diagnose).
local nsl = require("nsl")
local D = require("nsl.diagnose")
local pid_text = D.pid_text

return {
  id = "gpu.low_utilisation",
  description = "Per process and device, the span cut into chunks equal chunks; a chunk busy under util % of " ..
    "its length is low (nsys analyze gpu_time_util); the job loses the low chunks' idle outside " ..
    "gpu.gaps' gaps",
  tables = {"kernels", "memcpy", "memset", "api", "nvtx"},
  reads = {"GPU operations (nsl.gpu_ops): report, pid, device, start, stop"},
  claims = {},
  thresholds = {
    chunks = {default = 30, help = "gpu.low_utilisation: chunks each device span is cut into (nsys: 30)"},
    util = {default = 50, help = "gpu.low_utilisation: utilisation (%) under which a chunk is low (nsys: 50)"},
  },
  run = function(ctx)
    local T = ctx:gpu()
    local span, low = T.pd, T.low   -- (the chunks under util % busy, with their idle outside gpu.gaps' gaps)
    if #span == 0 or #low == 0 then return end
    local n, util = ctx.args.chunks, ctx.args.util
    local ev = ctx:table("gpu_low_utilisation", nsl.table{
      {"report", span.report:gather(low.g):map(function(r) return ctx:rank(r) end)}, {"pid", span.pid:gather(low.g)},
      {"device", span.device:gather(low.g)}, {"chunk", low.chunk},
      {"At (ns from start)", ctx:from_start(low.start)}, {"start (ns)", low.start},
      {"length (ns)", low.stop - low.start}, {"busy (ns)", low.busy}, {"utilisation (%)", low.util}},
      string.format("Chunks (1/%d of each process's device span) with GPU utilisation under %g%%", n, util))
    -- rest: the idle of the low chunks that gpu.gaps does not claim already (its gaps longer than args.gap)
    local a = low:group_by("g"):agg{"n=count", "total=sum(idle)", "worst=min(util)", "rest=sum(rest)"}:sort("g")
    local of_g = low:slices("g")   -- each device's chunks by one grouping, not a filter per device
    for i = 1, #a do
      local k = a.g[i] + 1
      local r, dev = span.report[k], span.device[k]
      local mine = of_g(a.g[i]):sort("util", "start")
      ctx:add{id = "gpu.low_utilisation", total = a.total[i], window = span.hi[k] - span.lo[k], evidence = ev,
              lost = a.rest[i],
              text = string.format("%s pid %s: %d of %d chunks under %g%% GPU utilisation (lowest %.1f%%)",
                ctx:rank(r, dev), pid_text(span.pid[k]), a.n[i], n, util, a.worst[i]),
              where = {rank = ctx:rank(r, dev), report = r, pid = span.pid[k], device = dev, from = mine.start[1],
                       to = mine.stop[1]},
              next = string.format("nsl run timeline %s --arg from=%s --arg to=%s", ctx:path(r), ctx:at(mine.start[1], r),
                                   ctx:at(mine.stop[1], r))}
    end
  end,
}
