-- nsl.checks.memcpy_pageable_async -- diagnose check memcpy.pageable_async (the engine: nsl.diagnose).
local D = require("nsl.diagnose")

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
    D.blocking_calls(ctx, "pageable", "memcpy_pageable_async", {{"kind", "kind"}, {"bytes", "bytes"},
      {"src", "src_kind"}, {"dst", "dst_kind"}}, "Async memcpy with pageable memory (they block like synchronous ones)",
      "asynchronous memcpy calls with pageable host memory, which run synchronously (pin the host buffers)",
      "idle_htod")
  end,
}
