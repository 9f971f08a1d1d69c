-- nsl.checks.memset_sync -- diagnose check memset.sync (the engine: nsl.diagnose).
local D = require("nsl.diagnose")
local launched_by = D.launched_by
local per_process_calls = D.per_process_calls
local calls_table = D.calls_table

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
    local ms = ctx:memory("memset")
    if #ms == 0 then return end
    local mk = ms:filter(ms.kind:isin{"pinned", "managed"})
    local rows = launched_by(ctx, mk, D.sync_memset_name)
    if #rows == 0 then return end
    local ev = ctx:table("memset_sync", calls_table(ctx, rows, {{"memory", "kind"}, {"bytes", "bytes"}}),
      "Synchronous memset of pinned or managed memory")
    per_process_calls(ctx, "memset.sync", rows, "synchronous memset calls on pinned or managed memory " ..
      "(use cudaMemsetAsync)", ev, function(r) return "nsl run launch " .. ctx:path(r) end, "idle_sync")
  end,
}
