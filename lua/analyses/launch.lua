-- launch -- kernel launch latency (start of the CUDA API call that launched
-- a kernel -> start of the kernel, joined on the correlation id) and launch
-- queue depth (kernels launched but not yet started when a launch is made),
-- as distributions per kernel name and per stream; host synchronisation
-- costs (explicit syncs, synchronous and pageable memory copies); and the
-- slowest launches.  Figure launch_latency_cdf: the latency distribution of
-- each GPU (CDF, logarithmic axis).
local nsl = require("nsl")
local jax = require("nsl.jax")
local percentiles = require("nsl.util.percentiles")
local stats = require("nsl.stats")
local host_sync = require("nsl.host_sync")

-- Kernels with their launch: api_start, api_name, api_tid (NULL when no
-- API call of the process has the kernel's correlation id), latency and
-- queue depth.
local function launches(trace, api, name_key, queue_keys)
  local k = trace.kernels
  k:load{"report", "pid", "device", "stream", "corr", "start", name_key}
  local kj = k:join(api, {"report", "pid", "corr"}, {"start", "name", "tid"}, "api_")
  local qk = {}
  for i, c in ipairs(queue_keys) do qk[i] = kj[c] end
  local depth = nsl.count_open(kj.api_start, kj.api_start, kj.start, qk, qk)
  return kj:with("latency", kj.start - kj.api_start, "depth", depth)
end

return {
  name = "launch",
  description = "Kernel launch latency and queue depth percentiles, host synchronisation costs, slowest launches",
  args = {
    per_report = {default = false, help = "distributions per report instead of over all reports"},
    base = {default = false, help = "name kernels by their short name instead of the demangled one"},
    queue = {default = "device", choices = {"device", "stream"}, help = "queue depth counts pending kernels of the same device or stream"},
    n = {default = 20, help = "slowest launches listed"},
    limit = {default = 50, help = "rows printed per table in text output (all rows go to files)"},
  },
  example = "nsl run launch trace.sqlite --arg queue=stream --arg n=50",
  run = function(trace, args, out)
    if #trace.kernels == 0 and #trace.api == 0 then
      return jax.no_cuda_activity(trace, out, "no kernels and no CUDA API calls to time launches from")
    end
    local name_key = args.base and "name" or "demangled"
    local queue_keys = args.queue == "device" and {"report", "device"} or {"report", "device", "stream"}
    local limit = args.limit > 0 and args.limit or nil
    local names = trace.reports.name
    local function named(t)   -- report index -> report name, for printing
      if t:coltype("report") then return t:with("report", names:gather(t.report)) end
      return t
    end
    local api = host_sync.api_calls(trace)
    local L = launches(trace, api, name_key, queue_keys)
    local values = {{col = "latency", label = "Latency", unit = "ns", total = true}, {col = "depth", label = "Queue"}}
    local keys = args.per_report and {"report"} or {}
    local launched = L:filter(~L.latency:isnull())
    out:table("launch_summary", named(percentiles.table(launched, keys, values, {count_label = "Launches"})),
              {title = string.format("Kernel launch latency (API call start -> kernel start) and queue depth " ..
                                     "(kernels of the same %s launched, not yet started); %d kernels without a " ..
                                     "launch call left out", args.queue, #L - #launched)})
    if out:carries_figures() then   -- the latency distribution of each device
      local g = launched:group_by("report", "device")
      local kt, series = g:keys(), {}
      local of_device = nsl.table{{"latency", launched.latency}, {"g", g:ids()}}:slices("g")   -- one grouping
      local rn = names:totable()
      for i = 1, #kt do
        local r, d = kt.report[i], kt.device[i]
        series[i] = {label = (#rn > 1 and rn[r + 1] .. " " or "") .. "GPU " .. tostring(d),
                     values = of_device(i - 1).latency}
      end
      table.sort(series, function(a, b) return a.label < b.label end)
      out:figure("launch_latency_cdf", function(format)
        return require("nsl.plot").cdf(series, {format = format, log = true, unit = "ns",
          xlabel = "launch latency (API call start -> kernel start)",
          title = string.format("Kernel launch latency per GPU (%d launches)", #launched)})
      end, {title = "kernel launch latency CDF"})
    end
    local by_name = {}
    for _, k in ipairs(keys) do by_name[#by_name + 1] = k end
    by_name[#by_name + 1] = name_key
    out:table("launch_by_kernel",
              named(percentiles.table(launched, by_name, values, {count_label = "Launches", sort = 1})),
              {title = "Launch latency and queue depth per kernel, by total latency", limit = limit})
    out:table("launch_by_stream",
              named(percentiles.table(launched, {"report", "device", "stream"}, values,
                                      {count_label = "Launches", sort = 1})),
              {title = "Launch latency and queue depth per stream, by total latency", limit = limit})
    if args.n > 0 then
      local slow = launched:sort("-latency", "report", "start"):head(args.n)
      local origin = require("nsl.window").origin(trace) or 0   -- At: from the trace's start, as diagnose counts
      out:table("slowest_launches", named(nsl.table{
        {"report", slow.report}, {"pid", slow.pid}, {"tid", slow.api_tid}, {"device", slow.device},
        {"stream", slow.stream}, {"API call", slow.api_name}, {"At (ns from start)", slow.api_start - origin},
        {"API start (ns)", slow.api_start},
        {"Kernel start (ns)", slow.start}, {"Latency (ns)", slow.latency}, {"Queue", slow.depth},
        {"Kernel", slow[name_key]}}), {title = "Slowest launches (At: the API call, from the trace's start; starts: session time)"})
    end
    local syncs = host_sync.calls(trace, api)
    local sk = args.per_report and {"report", "category"} or {"category"}
    out:table("host_sync", named(stats.time_summary(syncs, "name", {keys = sk, count_label = "Calls"})),
              {title = "Host synchronisation: time the calling thread was blocked, per call", limit = limit})
  end,
}
