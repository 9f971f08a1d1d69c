-- overlap -- how compute, NCCL communication and memory transfers overlap on
-- each GPU, in total and per iteration.
--
-- Per device (report, device), from the union of the operations' intervals:
--   C  compute:   kernels that are not NCCL's      N  NCCL kernels (name contains "nccl")
--   M  memory:    memcpy and memset                span: first start to last end of any of them
--   Compute Only = |C - N|   NCCL Only = |N - C|   Both = |C n N|   Neither = span - |C u N|
--   Memory Only  = |M - (C u N)|   Idle = span - |C u N u M|        (Neither = Memory Only + Idle)
--   NCCL Hidden (%) = Both / |N|: the share of NCCL time that compute hides.
-- The four categories add up to the span.
--
-- Per iteration (--arg iteration=NAME; lua/nsl/steps.lua says which GPU work
-- belongs to which iteration): the iteration's window on a device is its
-- projected NVTX range there (first start to last end of its operations),
-- and the sets above are measured within the window.  NVIDIA's GPU
-- Performance Analyzer estimates per iteration the
--   non-hidden NCCL, mem ops and bubble time = NVTX range time (projected) - compute kernel time
-- where compute kernel time is the sum of the durations of the non-NCCL
-- kernels (cuda_gpu_kern_sum without NCCL) per iteration and GPU; shown as
-- "GPA Estimate".  Measured exactly, the same time splits into
--   Non-hidden NCCL  = |N - C| in the window   (NCCL Only)
--   Non-hidden Memory = |M - (C u N)|          (Memory Only)
--   Bubble           = window - |C u N u M|    (Idle)
-- whose sum, window - |C|, equals the estimate when no two compute kernels
-- overlap (concurrent streams make the estimate smaller).
local nsl = require("nsl")
local classes = require("nsl.classes")
local nccl = require("nsl.nccl")
local steps = require("nsl.steps")

-- The interval sets of one device: rows selected by sel (a mask over ops).
local function device_sets(ops, sel, is_nccl)
  local kern = sel & ~ops.memop
  local s, e = ops.start, ops.stop
  local C = nsl.intervals(s, e, kern & ~is_nccl)
  local N = nsl.intervals(s, e, kern & is_nccl)
  local K = nsl.intervals(s, e, kern)
  local M = nsl.intervals(s, e, sel & ops.memop)
  local A = nsl.intervals(s, e, sel)
  return {compute_only = C:subtract(N), nccl_only = N:subtract(C), both = C:intersect(N), kernels = K,
          memory_only = M:subtract(K), all = A, nccl = N}
end

local function pct(part, whole) return whole > 0 and part * 100.0 / whole or 0.0 end

-- Row-wise collection of result columns: rows:add{name = value, ...};
-- rows:table(order) builds the nsl table, absent values as NULL.
local Rows = {}
Rows.__index = Rows
local function rows() return setmetatable({n = 0, cols = {}}, Rows) end
function Rows:add(values)
  self.n = self.n + 1
  for k, v in pairs(values) do
    self.cols[k] = self.cols[k] or {}
    self.cols[k][self.n] = v
  end
end
function Rows:table(order)
  local cols = {}
  for _, name in ipairs(order) do
    local list, dense, idx, filler = self.cols[name] or {}, {}, {}, nil
    for i = 1, self.n do
      if list[i] ~= nil then filler = list[i] break end
    end
    filler = type(filler) == "string" and "" or 0
    for i = 1, self.n do
      dense[i] = list[i] == nil and filler or list[i]
      idx[i] = list[i] == nil and -1 or i - 1
    end
    cols[#cols + 1] = {name, nsl.column(dense):gather(nsl.column(idx))}
  end
  return nsl.table(cols)
end

return {
  name = "overlap",
  description = "Compute / NCCL / memory-transfer overlap per GPU, and non-hidden communication per iteration",
  args = {
    iteration = {default = "", help = "NVTX range that marks one iteration (its text, or the text before ', op_id')"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run overlap rank0.sqlite rank1.sqlite --arg iteration=train_step",
  run = function(trace, args, out)
    local ops = classes.gpu_ops(trace, "short")
    if #ops == 0 then
      nsl.fail(string.format("%s: no GPU kernels or memory operations; was it profiled with -t cuda?",
                             table.concat(trace.reports.path:totable(), ", ")))
    end
    local limit = args.limit > 0 and args.limit or nil
    local is_nccl = nccl.mask(ops.name) & ~ops.memop
    local report_names = trace.reports.name:totable()

    local windows   -- per (iter, report, device): lo, hi, compute kernel time
    if args.iteration ~= "" then
      local iter = steps.attribute(trace, ops, args.iteration)
      local compute_dur = ops.dur * (~ops.memop & ~is_nccl):cast("i64")
      local t = nsl.table{{"iter", iter}, {"report", ops.report}, {"device", ops.device}, {"start", ops.start},
                          {"stop", ops.stop}, {"cdur", compute_dur}}
      windows = t:filter(~iter:isnull()):group_by("report", "device", "iter")
                 :agg{"lo=min(start)", "hi=max(stop)", "ksum=sum(cdur)"}:sort("report", "device", "iter")
    end

    local devs = ops:group_by("report", "device"):agg{"lo=min(start)", "hi=max(stop)"}:sort("report", "device")
    local per_dev, per_iter, summary = rows(), rows(), rows()
    local tot = {span = 0, co = 0, no = 0, both = 0, neither = 0, mo = 0, idle = 0, nccl = 0}
    local all = {n = 0, window = 0, ksum = 0, no = 0, mo = 0, idle = 0}
    local function summarize(rep, dev, n, window, ksum, no, mo, idle)
      summary:add{["Report"] = rep, ["Device"] = dev, ["Iterations"] = n, ["Avg Window (ns)"] = window / n,
        ["Compute Kernel Time per Iteration (ns)"] = ksum / n, ["GPA Estimate per Iteration (ns)"] = (window - ksum) / n,
        ["GPA Estimate (%)"] = pct(window - ksum, window), ["Non-hidden NCCL per Iteration (ns)"] = no / n,
        ["Non-hidden Memory per Iteration (ns)"] = mo / n, ["Bubble per Iteration (ns)"] = idle / n}
    end
    local drep, ddev, dlo, dhi = devs.report:totable(), devs.device:totable(), devs.lo:totable(), devs.hi:totable()
    for g = 1, #devs do
      if ddev[g] ~= nil and dlo[g] ~= nil and dhi[g] ~= nil then
        local rep = report_names[drep[g] + 1]
        local sel = ops.report:eq(drep[g]) & ops.device:eq(ddev[g])
        local sets = device_sets(ops, sel, is_nccl)
        local d = {span = dhi[g] - dlo[g], co = sets.compute_only:total(), no = sets.nccl_only:total(),
                   both = sets.both:total(), mo = sets.memory_only:total(), nccl = sets.nccl:total()}
        d.neither = d.span - sets.kernels:total()
        d.idle = d.span - sets.all:total()
        for k, v in pairs(d) do tot[k] = tot[k] + v end
        per_dev:add{["Report"] = rep, ["Device"] = ddev[g], ["Span (ns)"] = d.span, ["Compute Only (ns)"] = d.co,
          ["NCCL Only (ns)"] = d.no, ["Both (ns)"] = d.both, ["Neither (ns)"] = d.neither,
          ["Memory Only (ns)"] = d.mo, ["Idle (ns)"] = d.idle, ["NCCL Hidden (%)"] = pct(d.both, d.nccl)}

        local w = windows and windows:filter(windows.report:eq(drep[g]) & windows.device:eq(ddev[g]))
        if w and #w > 0 then
          local len = (w.hi - w.lo):totable()
          local function cov(set) return set:coverage(w.lo, w.hi):totable() end
          local c_co, c_no, c_both = cov(sets.compute_only), cov(sets.nccl_only), cov(sets.both)
          local c_k, c_mo, c_all = cov(sets.kernels), cov(sets.memory_only), cov(sets.all)
          local it, ks = w.iter:totable(), w.ksum:totable()
          local sum = {window = 0, ksum = 0, no = 0, mo = 0, idle = 0}
          for i = 1, #w do
            local bubble = len[i] - c_all[i]
            per_iter:add{["Iteration"] = it[i], ["Report"] = rep, ["Device"] = ddev[g], ["Window (ns)"] = len[i],
              ["Compute Only (ns)"] = c_co[i], ["NCCL Only (ns)"] = c_no[i], ["Both (ns)"] = c_both[i],
              ["Neither (ns)"] = len[i] - c_k[i], ["Non-hidden Memory (ns)"] = c_mo[i], ["Bubble (ns)"] = bubble,
              ["Compute Kernel Time (ns)"] = ks[i], ["GPA Estimate (ns)"] = len[i] - ks[i]}
            sum.window, sum.ksum = sum.window + len[i], sum.ksum + ks[i]
            sum.no, sum.mo, sum.idle = sum.no + c_no[i], sum.mo + c_mo[i], sum.idle + bubble
          end
          summarize(rep, ddev[g], #w, sum.window, sum.ksum, sum.no, sum.mo, sum.idle)
          all.n = all.n + #w
          for k, v in pairs(sum) do all[k] = all[k] + v end
        end
      end
    end
    if per_dev.n == 0 then nsl.fail("no GPU operation has a device id") end

    if per_dev.n > 1 then   -- the whole trace: sums over devices
      per_dev:add{["Report"] = "all", ["Span (ns)"] = tot.span, ["Compute Only (ns)"] = tot.co,
        ["NCCL Only (ns)"] = tot.no, ["Both (ns)"] = tot.both, ["Neither (ns)"] = tot.neither,
        ["Memory Only (ns)"] = tot.mo, ["Idle (ns)"] = tot.idle, ["NCCL Hidden (%)"] = pct(tot.both, tot.nccl)}
    end
    for _, name in ipairs{"Compute Only", "NCCL Only", "Both", "Neither"} do
      local v, span, p = per_dev.cols[name .. " (ns)"], per_dev.cols["Span (ns)"], {}
      for i = 1, per_dev.n do p[i] = pct(v[i], span[i]) end
      per_dev.cols[name .. " (%)"] = p
    end
    out:table("overlap", per_dev:table{"Report", "Device", "Span (ns)", "Compute Only (ns)", "NCCL Only (ns)",
      "Both (ns)", "Neither (ns)", "Memory Only (ns)", "Idle (ns)", "Compute Only (%)", "NCCL Only (%)", "Both (%)",
      "Neither (%)", "NCCL Hidden (%)"}, {title = "Compute / NCCL / memory overlap per device", limit = limit})

    if windows then
      if per_iter.n == 0 then
        out:finding{severity = "warning",
                    message = string.format("no GPU work was launched inside the '%s' ranges", args.iteration)}
        return
      end
      if summary.n > 1 then summarize("all", nil, all.n, all.window, all.ksum, all.no, all.mo, all.idle) end
      out:table("iteration_summary", summary:table{"Report", "Device", "Iterations", "Avg Window (ns)",
        "Compute Kernel Time per Iteration (ns)", "GPA Estimate per Iteration (ns)", "GPA Estimate (%)",
        "Non-hidden NCCL per Iteration (ns)", "Non-hidden Memory per Iteration (ns)", "Bubble per Iteration (ns)"},
        {title = "Estimated non-hidden NCCL, memory and bubble time per iteration (GPU Performance Analyzer) " ..
                 "and its exact split", limit = limit})
      local t = per_iter:table{"Iteration", "Report", "Device", "Window (ns)", "Compute Only (ns)", "NCCL Only (ns)",
        "Both (ns)", "Neither (ns)", "Non-hidden Memory (ns)", "Bubble (ns)", "Compute Kernel Time (ns)",
        "GPA Estimate (ns)"}
      out:table("overlap_by_iteration", t:sort("Iteration", "Report", "Device"),
        {title = "Overlap per iteration and device", limit = limit})
    end
  end,
}
