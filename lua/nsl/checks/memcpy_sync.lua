-- nsl.checks.memcpy_sync -- diagnose check memcpy.sync (the engine: nsl.diagnose).
local D = require("nsl.diagnose")

return {
  id = "memcpy.sync",
  description = "Synchronous memcpy calls (cudaMemcpy* not Async; nsys analyze cuda_memcpy_sync); per " ..
    "process, the calls' blocked time",
  tables = {"kernels", "memcpy", "memset", "api", "nvtx"},
  reads = {"memcpy: report, pid, device, stream, corr, start, stop, bytes, kind",
           "CUDA API calls: report, pid, corr, tid, start, dur, name"},
  claims = {"idle_htod"},
  thresholds = {},
  run = function(ctx)
    D.blocking_calls(ctx, "memcpy_sync", "memcpy_sync", {{"kind", "kind"}, {"bytes", "bytes"}},
      "Synchronous memcpy calls (the host waits for the copy)",
      "synchronous memcpy calls (use cudaMemcpyAsync on a stream)", "idle_htod")
  end,
}
