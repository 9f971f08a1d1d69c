-- nsl.checks.gpu_gaps -- diagnose check gpu.gaps (the engine: nsl.diagnose).
local nsl = require("nsl")
local report = require("nsl.report")
local D = require("nsl.diagnose")
local pid_text = D.pid_text

return {
  id = "gpu.gaps",
  description = "Per process and device, GPU idle gaps longer than gap between the first and last GPU " ..
    "operation (kernel, memcpy, memset; nsys analyze gpu_gaps); the job loses the gaps",
  tables = {},
  reads = {"GPU operations (nsl.gpu_ops): report, pid, device, start, stop"},
  claims = {},
  thresholds = {
    gap = {default = "500ms", help = "gpu.gaps: idle gaps longer than this (nsys analyze gpu_gaps: 500 ms)",
      duration = true},
  },
  run = function(ctx)
    local T = ctx:gpu()
    local span = T.pd
    if #span == 0 then return end
    local min = ctx.ns.gap
    local gp = T.gaps   -- (longer than min)
    local d = nsl.table{{"g", gp.g}, {"start", gp.start}, {"stop", gp.stop}, {"dur", gp.stop - gp.start}}
      :sort("-dur", "start")
    if #d == 0 then return end
    local ev = ctx:table("gpu_gaps", nsl.table{
      {"report", span.report:gather(d.g):map(function(r) return ctx:rank(r) end)}, {"pid", span.pid:gather(d.g)},
      {"device", span.device:gather(d.g)}, {"At (ns from start)", ctx:from_start(d.start)}, {"start (ns)", d.start},
      {"gap (ns)", d.dur}},
      string.format("GPU idle gaps longer than %s per process and device", report.duration(min)))
    local a = d:group_by("g"):agg{"n=count", "total=sum(dur)", "first=first(start)", "longest=first(dur)"}:sort("g")
    for i = 1, #a do
      local k = a.g[i] + 1
      local r, dev = span.report[k], span.device[k]
      ctx:add{id = "gpu.gaps", total = a.total[i], window = span.hi[k] - span.lo[k], evidence = ev,
              text = string.format("%s pid %s: %d GPU idle gaps longer than %s (%s in all, longest %s)",
                ctx:rank(r, dev), pid_text(span.pid[k]), a.n[i], report.duration(min), report.duration(a.total[i]),
                report.duration(a.longest[i])),
              where = {rank = ctx:rank(r, dev), report = r, pid = span.pid[k], device = dev, from = a.first[i],
                       to = a.first[i] + a.longest[i]},
              next = string.format("nsl run gaps %s --arg min=%s --arg scope=device", ctx:path(r),
                                   min % 1000000 == 0 and (min // 1000000) .. "ms" or tostring(min))}
    end
  end,
}
