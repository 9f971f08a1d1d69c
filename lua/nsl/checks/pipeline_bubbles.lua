-- nsl.checks.pipeline_bubbles -- diagnose check pipeline.bubbles (the engine: nsl.diagnose).
local report = require("nsl.report")
local D = require("nsl.diagnose")
local exposed_findings = D.exposed_findings

return {
  id = "pipeline.bubbles",
  description = "Per device (a pipeline stage), Send or Recv kernel time (one direction; SendRecv is a " ..
    "collective) with no other kernel running: the stage waits on its neighbour; at most the " ..
    "device's comm line",
  tables = {},
  reads = {"GPU operations (nsl.gpu_ops): report, device, start, stop, name, memop"},
  claims = {"comm"},
  thresholds = {},
  run = function(ctx)
    local T = ctx:gpu()
    exposed_findings(ctx, T.counts.p2p_mask, T.dv.p2p_only, T.dv.p2p, {id = "pipeline.bubbles",
      table = "pipeline_bubbles", title = "Send/receive kernel time per device (pipeline stage), and the part with " ..
      "no other kernel running: the stage waits on its neighbour", head = "stage", what = "send/recv", next = "nccl",
      text = function(label, o)
        return string.format("%s: %s waiting in pipeline send/receive with no compute running", label, report.duration(o))
      end})
  end,
}
