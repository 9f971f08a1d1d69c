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
-- Figure overlap: each GPU's span split into compute only, NCCL only, both,
-- memory only and idle (stacked bars).
local nsl = require("nsl")
local jax = require("nsl.jax")
local plot = require("nsl.plot")
local gpu_ops = require("nsl.gpu_ops")
local steps = require("nsl.steps")
local overlap = require("nsl.overlap")

-- part * 100 / whole per row (0 where whole is 0), as an f64 column.
local function pct(part, whole)
  local w = whole:cast("f64")
  local nz = whole:gt(0)
  return (part * 100.0) / (w + (~nz):cast("f64")) * nz:cast("f64")
end

local function pct1(part, whole) return whole > 0 and part * 100.0 / whole or 0.0 end

return {
  name = "overlap",
  description = "Compute / NCCL / memory-transfer overlap per GPU, and non-hidden communication per iteration",
  args = {
    iteration = {default = "", help = "NVTX range that marks one iteration (its text, or the text before ', op_id')"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run overlap rank0.sqlite rank1.sqlite --arg iteration=train_step",
  run = function(trace, args, out)
    local ops = gpu_ops.table(trace, {names = "short", memop = true})
    if #ops == 0 then
      return jax.no_cuda_activity(trace, out, "no GPU kernels or memory operations", "jax_communication")
    end
    local limit = args.limit > 0 and args.limit or nil
    local is_nccl = overlap.nccl_mask(ops)
    local report_names = trace.reports.name:totable()

    -- devices: groups of (report, device), in report and device order
    local g = ops:group_by("report", "device")
    local dev = g:agg{"lo=min(start)", "hi=max(stop)"}
    local order = dev:with("gid", nsl.range(#dev)):sort("report", "device")
    local gid = g:ids()
    local ng = #dev

    -- iteration windows per (device, iteration): first start, last end, compute kernel time
    local win
    if args.iteration ~= "" then
      local iter = steps.attribute(trace, ops, args.iteration)
      local compute_dur = ops.dur * (~ops.memop & ~is_nccl):cast("i64")
      local t = nsl.table{{"gid", gid}, {"iter", iter}, {"start", ops.start}, {"stop", ops.stop}, {"cdur", compute_dur}}
      win = t:filter(~iter:isnull()):group_by("gid", "iter")
             :agg{"lo=min(start)", "hi=max(stop)", "ksum=sum(cdur)"}:sort("gid", "iter")
    end

    -- every set measured over each device's span and each window
    local windows = {{gid = nsl.range(ng), lo = dev.lo, hi = dev.hi}}
    if win then windows[2] = {gid = win.gid, lo = win.lo, hi = win.hi} end
    local measured = overlap.measure(ops, is_nccl, gid, ng, windows)

    -- per device
    local span = dev.hi - dev.lo
    local m = measured[1]
    local neither, idle = span - m.kernels, span - m.all
    local names = dev.report:map(function(r) return report_names[r + 1] end)
    local t = nsl.table{{"Report", names}, {"Device", dev.device}, {"Span (ns)", span},
      {"Compute Only (ns)", m.compute_only}, {"NCCL Only (ns)", m.nccl_only}, {"Both (ns)", m.both},
      {"Neither (ns)", neither}, {"Memory Only (ns)", m.memory_only}, {"Idle (ns)", idle},
      {"Compute Only (%)", pct(m.compute_only, span)}, {"NCCL Only (%)", pct(m.nccl_only, span)},
      {"Both (%)", pct(m.both, span)}, {"Neither (%)", pct(neither, span)}, {"NCCL Hidden (%)", pct(m.both, m.nccl)},
      {"gid", nsl.range(ng)}}
    t = t:take(order.gid):filter(~order.device:isnull())
    if #t == 0 then nsl.fail("no GPU operation has a device id") end
    if out:carries_figures() then   -- each device's span split into the sets, stacked
      local sets = nsl.table{{"report", dev.report}, {"device", dev.device}, {"compute", m.compute_only},
        {"nccl", m.nccl_only}, {"both", m.both}, {"memory", m.memory_only}, {"idle", idle}}
      sets = sets:take(order.gid):filter(~order.device:isnull())
      local rep, devs, cats = sets.report:totable(), sets.device:totable(), {}
      for i = 1, #sets do
        cats[i] = (#report_names > 1 and report_names[rep[i] + 1] .. " " or "") .. "GPU " .. devs[i]
      end
      local series = {}
      for _, s in ipairs{{"compute", "compute only"}, {"nccl", "NCCL only"}, {"both", "compute and NCCL"},
                         {"memory", "memory only"}, {"idle", "idle"}} do
        series[#series + 1] = {label = s[2], values = sets[s[1]]:totable()}
      end
      out:figure("overlap", function(format)
        return plot.stacked_bars{format = format, categories = cats, series = series, unit = "ns",
                                 ylabel = "time", title = "Each GPU's span: compute, NCCL, memory, idle"}
      end, {title = "compute / NCCL / memory overlap per GPU"})
    end
    if #t > 1 then   -- the whole trace: sums over devices
      local sum = {}
      for _, c in ipairs{"Span (ns)", "Compute Only (ns)", "NCCL Only (ns)", "Both (ns)", "Neither (ns)",
                         "Memory Only (ns)", "Idle (ns)"} do
        sum[c] = t[c]:sum()
      end
      local both, nccl_all = sum["Both (ns)"], sum["Both (ns)"] + sum["NCCL Only (ns)"]
      local row = {["Report"] = nsl.column{"all"}, ["Device"] = t.Device:gather(nsl.column{-1}),
                   ["NCCL Hidden (%)"] = nsl.column{pct1(both, nccl_all)}, ["gid"] = nsl.column{-1}}
      for c, v in pairs(sum) do row[c] = nsl.column{v} end
      for _, c in ipairs{"Compute Only", "NCCL Only", "Both", "Neither"} do
        row[c .. " (%)"] = nsl.column{pct1(sum[c .. " (ns)"], sum["Span (ns)"])}
      end
      local cols = {}
      for _, c in ipairs(t:columns()) do cols[#cols + 1] = {c, nsl.concat(t[c], row[c])} end
      t = nsl.table(cols)
    end
    local shown = {}
    for _, c in ipairs(t:columns()) do if c ~= "gid" then shown[#shown + 1] = c end end
    out:table("overlap", t:select(shown), {title = "Compute / NCCL / memory overlap per device", limit = limit})

    if not win then return end
    if #win == 0 then
      out:finding{severity = "warning",
                  message = string.format("no GPU work was launched inside the '%s' ranges", args.iteration)}
      return
    end
    local w = measured[2]
    local len = win.hi - win.lo
    local wdev = win.gid   -- rows of dev by group id
    local it = nsl.table{{"iter", win.iter}, {"report", dev.report:gather(wdev)}, {"device", dev.device:gather(wdev)},
      {"window", len}, {"co", w.compute_only}, {"no", w.nccl_only}, {"both", w.both}, {"neither", len - w.kernels},
      {"mo", w.memory_only}, {"bubble", len - w.all}, {"ksum", win.ksum}, {"est", len - win.ksum}}
    it = it:filter(~it.device:isnull())

    -- the GPU Performance Analyzer's summary, per device and over all
    local s = it:group_by("report", "device"):agg{"n=count", "w=sum(window)", "k=sum(ksum)", "no=sum(no)",
                                                  "mo=sum(mo)", "idle=sum(bubble)"}:sort("report", "device")
    local function summary(rep, device, n, wsum, ksum, no, mo, idle)
      return {rep, device, n, wsum / n, ksum / n, (wsum - ksum) / n, (wsum - ksum) * 100.0 / wsum, no / n, mo / n,
              idle / n}
    end
    local srows = {}
    local sn, sw, sk, sno, smo, sidle = s.n:totable(), s.w:totable(), s.k:totable(), s.no:totable(), s.mo:totable(),
                                        s.idle:totable()
    local srep, sdev = s.report:totable(), s.device:totable()
    local tot = {0, 0, 0, 0, 0, 0}
    for i = 1, #s do
      srows[i] = summary(report_names[srep[i] + 1], sdev[i], sn[i], sw[i], sk[i], sno[i], smo[i], sidle[i])
      for j, v in ipairs{sn[i], sw[i], sk[i], sno[i], smo[i], sidle[i]} do tot[j] = tot[j] + v end
    end
    if #s > 1 then srows[#srows + 1] = summary("all", false, table.unpack(tot)) end
    local heads = {"Report", "Device", "Iterations", "Avg Window (ns)", "Compute Kernel Time per Iteration (ns)",
                   "GPA Estimate per Iteration (ns)", "GPA Estimate (%)", "Non-hidden NCCL per Iteration (ns)",
                   "Non-hidden Memory per Iteration (ns)", "Bubble per Iteration (ns)"}
    local scols = {}
    for j, h in ipairs(heads) do
      local v = {}
      for i, r in ipairs(srows) do v[i] = r[j] end
      scols[j] = {h, v}
    end
    -- the "all" row has no device: NULL through a gather with -1
    local devs = scols[2][2]
    local didx = {}
    for i, d in ipairs(devs) do
      didx[i] = d == false and -1 or i - 1
      if d == false then devs[i] = 0 end
    end
    scols[2][2] = nsl.column(devs):gather(nsl.column(didx))
    out:table("iteration_summary", nsl.table(scols),
      {title = "Estimated non-hidden NCCL, memory and bubble time per iteration (GPU Performance Analyzer) " ..
               "and its exact split", limit = limit})
    it = it:sort("iter", "report", "device")
    out:table("overlap_by_iteration", nsl.table{{"Iteration", it.iter},
      {"Report", it.report:map(function(r) return report_names[r + 1] end)}, {"Device", it.device},
      {"Window (ns)", it.window}, {"Compute Only (ns)", it.co}, {"NCCL Only (ns)", it.no}, {"Both (ns)", it.both},
      {"Neither (ns)", it.neither}, {"Non-hidden Memory (ns)", it.mo}, {"Bubble (ns)", it.bubble},
      {"Compute Kernel Time (ns)", it.ksum}, {"GPA Estimate (ns)", it.est}},
      {title = "Overlap per iteration and device", limit = limit})
  end,
}
