-- nccl -- NCCL collectives by type (AllReduce, AllGather, ReduceScatter,
-- SendRecv, Broadcast, ...) as their kernels name them, with algorithm,
-- protocol, reduction operation and data type where the name has them
-- (lua/nsl/nccl.lua reads every NCCL naming scheme since 2.4).
--
-- Tables (times are sums of kernel durations in ns):
--   nccl_collectives  per collective: NCCL Time (%) of all NCCL kernel time,
--                     GPU Time (%) of all kernel time (NCCL and not), Total,
--                     Instances, Avg, Med, Min, Max, StdDev; per report with
--                     --arg per_report=true (percentages within the report)
--   nccl_devices      per report and device: kernels, NCCL kernels, their
--                     time, GPU Time (%), and the NCCL busy time (union of the
--                     NCCL kernels' intervals: concurrent NCCL kernels count once)
--   nccl_streams      per report, device, stream and collective: Instances,
--                     Total, Avg, GPU Time (%) of the device's kernel time
--   nccl_kernels      per distinct NCCL kernel: collective, algorithm,
--                     protocol, operation, data type, Instances, Total, Name
local nsl = require("nsl")
local jax = require("nsl.jax")
local nccl = require("nsl.nccl")

local function pct_of(values, totals)
  local p = {}
  for i, v in ipairs(values) do p[i] = totals[i] and totals[i] > 0 and v * 100.0 / totals[i] or 0.0 end
  return p
end

--- What the tables need of trace's kernels: the NCCL kernels (nk) and
-- per report and device the count and time of all kernels (kd).  Computed
-- per report, so a distributed run does it on each process's share.
local function extract(trace)
  local k = trace.kernels
  k:load{"report", "device", "stream", "start", "stop", "dur", "name"}
  return {nk = k:filter(nccl.mask(k.name)):select{"report", "device", "stream", "start", "stop", "dur", "name"},
          kd = k:group_by("report", "device"):agg{"kn=count", "kt=sum(dur)"}}
end

return {
  name = "nccl",
  description = "NCCL collectives by type, algorithm and protocol: counts, time, share of GPU time",
  args = {
    per_report = {default = false, help = "one collective summary per report"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run nccl rank0.sqlite rank1.sqlite --arg per_report=true",
  -- parts: a distributed run's gathered extract (the step below)
  run = function(trace, args, out, parts)
    local p = parts or extract(trace)
    local nk, kd = p.nk, p.kd
    local nkernels = #kd > 0 and kd.kn:sum() or 0
    if nkernels == 0 then
      return jax.no_cuda_activity(trace, out, "no GPU kernels (NCCL collectives)", "jax_communication")
    end
    local limit = args.limit > 0 and args.limit or nil
    if #nk == 0 then
      out:text(string.format("No NCCL kernels in %s (%d kernels).", table.concat(trace.reports.name:totable(), ", "),
                             nkernels))
      out:finding{severity = "info", message = "no NCCL kernels"}
      return
    end
    local f = nccl.annotate(nk.name)
    nk = nk:with("collective", f.collective, "algorithm", f.algorithm, "protocol", f.protocol, "op", f.op,
                 "dtype", f.dtype)
    local report_names = trace.reports.name:totable()

    -- all kernel time, per report and over all (for GPU Time (%))
    local ktime = {}
    local kr = kd:group_by("report"):agg{"t=sum(kt)"}
    for i, r in ipairs(kr.report:totable()) do ktime[r] = kr.t[i] end
    local kall = kd.kt:sum()

    -- per collective
    local keys = args.per_report and {"report", "collective"} or {"collective"}
    local s = nk:group_by(table.unpack(keys)):agg{"total=sum(dur)", "n=count", "avg=mean(dur)", "med=median(dur)",
                                                   "min=min(dur)", "max=max(dur)", "std=std(dur)"}
    s = args.per_report and s:sort("report", "-total", "collective") or s:sort("-total", "collective")
    local totals = s.total:totable()
    local nccl_scope, gpu_scope = {}, {}
    if args.per_report then
      local nr = {}
      local reps = s.report:totable()
      for i, r in ipairs(reps) do nr[r] = (nr[r] or 0) + totals[i] end
      for i, r in ipairs(reps) do nccl_scope[i], gpu_scope[i] = nr[r], ktime[r] end
    else
      local all = nk.dur:sum()
      for i = 1, #s do nccl_scope[i], gpu_scope[i] = all, kall end
    end
    local cols = {}
    if args.per_report then
      cols[1] = {"Report", s.report:map(function(r) return report_names[r + 1] end)}   -- names, not indices
    end
    for _, c in ipairs{{"Collective", s.collective}, {"NCCL Time (%)", nsl.column(pct_of(totals, nccl_scope))},
                       {"GPU Time (%)", nsl.column(pct_of(totals, gpu_scope))}, {"Total Time (ns)", s.total},
                       {"Instances", s.n}, {"Avg (ns)", s.avg}, {"Med (ns)", s.med}, {"Min (ns)", s.min},
                       {"Max (ns)", s.max}, {"StdDev (ns)", s.std}} do
      cols[#cols + 1] = c
    end
    out:table("nccl_collectives", nsl.table(cols), {title = "NCCL collectives", limit = limit})

    -- per device: NCCL kernels beside all kernels of the device
    local report_name = function(r) return report_names[r + 1] end
    local gd = nk:group_by("report", "device")
    local nd = gd:agg{"n=count", "t=sum(dur)"}:with("busy", nsl.busy_by_group(nk.start, nk.stop, gd:ids(), #gd))
    nd = nd:join(kd, {"report", "device"}, {"kn", "kt"}):sort("report", "device")
    out:table("nccl_devices", nsl.table{{"Report", nd.report:map(report_name)}, {"Device", nd.device},
      {"Kernels", nd.kn}, {"Kernel Time (ns)", nd.kt}, {"NCCL Kernels", nd.n}, {"NCCL Time (ns)", nd.t},
      {"GPU Time (%)", nd.t * 100.0 / nd.kt}, {"NCCL Busy (ns)", nd.busy}},
      {title = "NCCL per device", limit = limit})

    -- per stream and collective, with the share of the device's kernel time
    local ss = nk:group_by("report", "device", "stream", "collective"):agg{"n=count", "total=sum(dur)", "avg=mean(dur)"}
    ss = ss:join(kd, {"report", "device"}, {"kt"}):sort("report", "device", "stream", "-total", "collective")
    out:table("nccl_streams", nsl.table{{"Report", ss.report:map(report_name)}, {"Device", ss.device},
      {"Stream", ss.stream}, {"Collective", ss.collective}, {"Instances", ss.n}, {"Total Time (ns)", ss.total},
      {"Avg (ns)", ss.avg}, {"GPU Time (%)", ss.total * 100.0 / ss.kt}},
      {title = "NCCL per stream", limit = limit})

    -- per kernel name
    local kk = nk:group_by("name"):agg{"collective=first(collective)", "algorithm=first(algorithm)",
                                       "protocol=first(protocol)", "op=first(op)", "dtype=first(dtype)", "n=count",
                                       "total=sum(dur)"}:sort("-total", "name")
    out:table("nccl_kernels", nsl.table{{"Collective", kk.collective}, {"Algorithm", kk.algorithm},
      {"Protocol", kk.protocol}, {"Op", kk.op}, {"Type", kk.dtype}, {"Instances", kk.n}, {"Total Time (ns)", kk.total},
      {"Name", kk.name}}, {title = "NCCL kernels", limit = limit})
  end,
  -- distributed (nsl.distributed): the NCCL kernels and per-device kernel
  -- totals of each process's reports, tabulated on rank 0
  distributed = {step = function(trace) return extract(trace) end},
}
