-- nsl.checks.memset_sync -- diagnose check memset.sync (the engine: nsl.diagnose).
local D = require("nsl.diagnose")

return {
  id = "memset.sync",
  description = "Synchronous memset of pinned or managed memory (cudaMemset* not Async; nsys analyze " ..
    "cuda_memset_sync); per process, the calls' blocked time",
  tables = {"kernels", "memcpy", "memset", "api", "nvtx"},
  reads = {"memset: report, pid, device, stream, corr, start, stop, bytes, kind",
           "CUDA API calls: report, pid, corr, tid, start, dur, name"},
  claims = {"idle_sync"},
  thresholds = {},
  run = function(ctx)
    D.blocking_calls(ctx, "memset_sync", "memset_sync", {{"memory", "kind"}, {"bytes", "bytes"}},
      "Synchronous memset of pinned or managed memory",
      "synchronous memset calls on pinned or managed memory (use cudaMemsetAsync)", "idle_sync")
  end,
}
