-- nsl.checks.api_sync -- diagnose check api.sync (the engine: nsl.diagnose).
local nsl = require("nsl")
local D = require("nsl.diagnose")

return {
  id = "api.sync",
  description = "cudaDeviceSynchronize* and cudaStreamSynchronize* calls (nsys analyze cuda_api_sync); per " ..
    "process, the calls' blocked time",
  tables = {"kernels", "memcpy", "memset", "api", "nvtx"},
  reads = {"CUDA API calls: report, pid, corr, tid, start, dur, name"},
  claims = {"idle_sync"},
  thresholds = {},
  run = function(ctx)
    local c = ctx:calls().api_sync
    if #c.agg == 0 then return end
    local s = c.top
    local ev = ctx:table("api_sync", nsl.table{{"report", s.report:map(function(r) return ctx:rank(r) end)},
      {"pid", s.pid}, {"tid", s.api_tid}, {"API call", s.api_name},
      {"At (ns from start)", ctx:from_start(s.api_start)}, {"start (ns)", s.api_start},
      {"blocked (ns)", s.api_dur}}, D.calls_title(c, "cudaDeviceSynchronize / cudaStreamSynchronize calls, longest first"))
    D.per_process_calls(ctx, "api.sync", c, "cudaDeviceSynchronize/cudaStreamSynchronize calls (wait on events " ..
      "instead of blocking the host)", ev, function(r) return "nsl run launch " .. ctx:path(r) end, "idle_sync")
  end,
}
