-- nsl.checks.memcpy_sync -- diagnose check memcpy.sync (the engine: nsl.diagnose).
local D = require("nsl.diagnose")
local launched_by = D.launched_by
local per_process_calls = D.per_process_calls
local calls_table = D.calls_table

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
    local mc = ctx:memory("memcpy")
    if #mc == 0 then return end
    local rows = launched_by(ctx, mc, D.sync_memcpy_name)
    if #rows == 0 then return end
    local ev = ctx:table("memcpy_sync", calls_table(ctx, rows, {{"kind", "kind"}, {"bytes", "bytes"}}),
      "Synchronous memcpy calls (the host waits for the copy)")
    per_process_calls(ctx, "memcpy.sync", rows, "synchronous memcpy calls (use cudaMemcpyAsync on a stream)", ev,
      function(r) return "nsl run launch " .. ctx:path(r) end, "idle_htod")
  end,
}
