-- nsl.checks.memcpy_pageable_async -- diagnose check memcpy.pageable_async (the engine: nsl.diagnose).
local D = require("nsl.diagnose")
local launched_by = D.launched_by
local per_process_calls = D.per_process_calls
local calls_table = D.calls_table

return {
  id = "memcpy.pageable_async",
  description = "Asynchronous memcpy calls (cudaMemcpy*Async*) from or to pageable host memory: they block " ..
    "the host like synchronous ones (nsys analyze cuda_memcpy_async); per process, the calls' " ..
    "blocked time",
  tables = {"kernels", "memcpy", "memset", "api", "nvtx"},
  reads = {"memcpy: report, pid, device, stream, corr, start, stop, bytes, kind, src_kind, dst_kind",
           "CUDA API calls: report, pid, corr, tid, start, dur, name"},
  claims = {"idle_htod"},
  thresholds = {},
  run = function(ctx)
    local mc = ctx:memory("memcpy")
    if #mc == 0 then return end
    local pg = mc:filter(mc.src_kind:eq("pageable") | mc.dst_kind:eq("pageable"))
    local rows = launched_by(ctx, pg, function(s) return s:find("^cudamemcpy.*async") ~= nil end)
    if #rows == 0 then return end
    local ev = ctx:table("memcpy_pageable_async", calls_table(ctx, rows, {{"kind", "kind"}, {"bytes", "bytes"},
      {"src", "src_kind"}, {"dst", "dst_kind"}}), "Async memcpy with pageable memory (they block like synchronous ones)")
    per_process_calls(ctx, "memcpy.pageable_async", rows, "asynchronous memcpy calls with pageable host memory, " ..
      "which run synchronously (pin the host buffers)", ev,
      function(r) return "nsl run launch " .. ctx:path(r) end, "idle_htod")
  end,
}
