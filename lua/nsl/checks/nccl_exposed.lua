-- nsl.checks.nccl_exposed -- diagnose check nccl.exposed (the engine: nsl.diagnose).
local report = require("nsl.report")
local D = require("nsl.diagnose")
local exposed_findings = D.exposed_findings

return {
  id = "nccl.exposed",
  description = "Per device, the time of NCCL collectives (send/receive apart) that no compute kernel " ..
    "overlaps; the job loses at most the device's comm line (waiting for a later rank is the " ..
    "straggler's)",
  tables = {"api", "nvtx"},
  reads = {"GPU operations (nsl.gpu_ops): report, device, start, stop, name, memop"},
  claims = {"comm"},
  thresholds = {},
  run = function(ctx)
    local T = ctx:gpu()
    exposed_findings(ctx, T.counts.nccl_mask, T.dv.nccl_only, T.dv.nccl, {id = "nccl.exposed",
      table = "nccl_exposed", title = "NCCL collective kernel time per device (send/receive apart), and the part " ..
      "no compute kernel overlaps", head = "report", what = "NCCL", next = "overlap",
      text = function(label, o, all)
        return string.format("%s: %s of %s NCCL collective time is not hidden under compute (%.1f%% hidden)", label,
          report.duration(o), report.duration(all), (all - o) * 100.0 / all)
      end})
  end,
}
