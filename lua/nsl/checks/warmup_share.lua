-- nsl.checks.warmup_share -- diagnose check warmup.share (the engine: nsl.diagnose).
local report = require("nsl.report")
local iterations = require("nsl.iterations")
local D = require("nsl.diagnose")
local table_of = D.table_of
local round = D.round

return {
  id = "warmup.share",
  description = "Per process, the warm-up steps' time above the steady median (a one-time cost)",
  tables = {},
  reads = {"steps (nsl.iterations)"},
  claims = {},
  thresholds = {},
  run = function(ctx)
    local st = ctx.steps
    if not st then return end
    local W = st.windows
    local s, e = W.start:totable(), W.stop:totable()
    local rows = {}
    for _, key in ipairs(st.order) do
      local list, nw = st.groups[key], st.warm[key]
      if nw > 0 and #list > nw then
        local steady, warm = {}, 0
        for k, i in ipairs(list) do
          if k <= nw then warm = warm + (e[i] - s[i]) else steady[#steady + 1] = e[i] - s[i] end
        end
        local med = iterations.describe(steady).median
        local excess = round(warm - nw * med)
        local first = list[1]
        if excess > 0 then
          rows[#rows + 1] = {report = W.report[first], pid = W.pid[first], warm = nw, steps = #list, time = warm,
                             median = med, excess = excess, from = s[first], to = e[list[nw]]}
        end
      end
    end
    if #rows == 0 then return end
    local ev = ctx:table("warmup", table_of(rows, {{"report", "report"}, {"pid", "pid"}, {"warm-up steps", "warm"},
      {"steps", "steps"}, {"warm-up time (ns)", "time"}, {"steady median (ns)", "median"},
      {"excess (ns)", "excess"}}), "Warm-up iterations: their time above the steady median")
    for _, r in ipairs(rows) do
      local lo, hi = ctx:report_span(r.report)
      ctx:add{id = "warmup.share", total = r.excess, window = hi - lo, once = true, evidence = ev,
              text = string.format("%s%s: %d warm-up step(s) take %s longer than steady ones (steady median %s)",
                ctx:rank(r.report), r.pid and (" pid " .. r.pid) or "", r.warm, report.duration(r.excess),
                report.duration(r.median)),
              where = {rank = ctx:rank(r.report), report = r.report, pid = r.pid, from = r.from, to = r.to,
                       nvtx = st.nvtx},
              next = "nsl run iterations " .. ctx:path(r.report)}
    end
  end,
}
