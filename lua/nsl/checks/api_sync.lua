-- nsl.checks.api_sync -- diagnose check api.sync (the engine: nsl.diagnose).
local nsl = require("nsl")
local D = require("nsl.diagnose")
local per_process_calls = D.per_process_calls

return {
  id = "api.sync",
  description = "cudaDeviceSynchronize* and cudaStreamSynchronize* calls (nsys analyze cuda_api_sync); per " ..
    "process, the calls' blocked time",
  tables = {"kernels", "memcpy", "memset", "api", "nvtx"},
  reads = {"CUDA API calls: report, pid, corr, tid, start, dur, name"},
  claims = {"idle_sync"},
  thresholds = {},
  run = function(ctx)
    local api = ctx:api()
    if #api == 0 then return end
    local m = api.name:where(function(s)
      s = s:lower()
      return s:find("^cudadevicesynchronize") ~= nil or s:find("^cudastreamsynchronize") ~= nil
    end)
    local c = api:filter(m)
    if #c == 0 then return end
    local rows = nsl.table{{"report", c.report}, {"pid", c.pid}, {"api_tid", c.tid}, {"api_start", c.start},
                           {"api_dur", c.dur}, {"api_name", c.name}}
    local s = rows:sort("-api_dur", "report", "api_start")
    local ev = ctx:table("api_sync", nsl.table{{"report", s.report:map(function(r) return ctx:rank(r) end)},
      {"pid", s.pid}, {"tid", s.api_tid}, {"API call", s.api_name},
      {"At (ns from start)", ctx:from_start(s.api_start)}, {"start (ns)", s.api_start},
      {"blocked (ns)", s.api_dur}}, "cudaDeviceSynchronize / cudaStreamSynchronize calls, longest first")
    per_process_calls(ctx, "api.sync", rows, "cudaDeviceSynchronize/cudaStreamSynchronize calls (wait on events " ..
      "instead of blocking the host)", ev, function(r) return "nsl run launch " .. ctx:path(r) end, "idle_sync")
  end,
}
