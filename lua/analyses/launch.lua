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

-- The slowest n launches of launched, slowest first.
local function slowest(launched, n)
  return launched:sort("-latency", "report", "start"):head(math.max(n, 0))
end

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

local values = {{col = "latency", label = "Latency", unit = "ns", total = true}, {col = "depth", label = "Queue"}}

-- The kernels' name column and the queue's keys that args ask for.
local function settings(args)
  return args.base and "name" or "demangled", args.queue == "device" and {"report", "device"} or {"report", "device", "stream"}
end

-- The groupings of the distribution tables: the summary, per kernel, per stream.
local function groupings(args, name_key)
  local keys = args.per_report and {"report"} or {}
  local by_name = {}
  for _, k in ipairs(keys) do by_name[#by_name + 1] = k end
  by_name[#by_name + 1] = name_key
  return {summary = keys, kernel = by_name, stream = {"report", "device", "stream"}}
end

-- The keys of the blocking calls' summary (before the call name).
local function sync_keys(args) return args.per_report and {"report", "category"} or {"category"} end

-- The columns of the slowest launches' table.
local function slow_columns(name_key)
  return {"report", "pid", "api_tid", "device", "stream", "api_name", "api_start", "start", "latency", "depth", name_key}
end

-- ---- a distributed run (nsl.distributed) ----
-- Each process finds its own reports' launches (a kernel and its call are
-- in one report; the queue depth counts one device's or stream's kernels)
-- and blocking calls; the distributions per group are aggregated by every
-- process together (nsl.util.percentiles.reduce: the same bits,
-- percentiles included), the blocking calls' summary as `summary`'s is,
-- and each process sends its --arg n slowest launches.  A run with figures
-- (the latency CDF draws every launch) and a trace without kernels and CUDA
-- calls are left to rank 0, which reads the trace as one process does.

local mine_of = setmetatable({}, {__mode = "k"})   -- a process's view -> {n =, L =, launched =, syncs =}

local function step(trace, args)
  local name_key, queue_keys = settings(args)
  local api = host_sync.api_calls(trace)
  local L = launches(trace, api, name_key, queue_keys)
  mine_of[trace] = {n = #trace.kernels + #trace.api, L = L, launched = L:filter(~L.latency:isnull()),
                    syncs = host_sync.calls(trace, api)}
  return {ln_span = require("nsl.distributed").span_table(trace)}
end

local function collective(trace, args, first)
  local mpi = nsl.mpi
  local mine = mine_of[trace]
  if mpi.allreduce(nsl.column{mine.n}:cast("i64"), "sum"):totable()[1] == 0 then return {} end
  local name_key = settings(args)
  local G = groupings(args, name_key)
  local function global(t) return t:with("report", t.report:cast("i64") + first) end
  local launched = global(mine.launched:select{"report", "device", "stream", name_key, "latency", "depth"})
  local parts = {}
  for _, g in ipairs{"summary", "kernel", "stream"} do   -- (rank 0's rows alone: the others' have none)
    parts["ln_" .. g] = percentiles.reduce(launched, G[g], values)
    if not parts["ln_" .. g] then return {} end
  end
  local sk = sync_keys(args)
  sk[#sk + 1] = "name"
  parts.ln_sync = stats.reduce_aggregates(global(mine.syncs), sk, "dur")
  if not parts.ln_sync then return {} end
  -- (the report numbers of these rows are this process's: they become the trace's where they arrive)
  parts.ln_slowest = slowest(mine.launched, args.n):select(slow_columns(name_key))
  parts.ln_counts = nsl.table{{"kernels", nsl.rep(#mine.L, 1)}, {"launched", nsl.rep(#mine.launched, 1)}}
  return parts
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
  -- parts: a distributed run's aggregates and slowest launches (the collective part above)
  run = function(trace, args, out, parts)
    local got = parts and parts.ln_counts and #parts.ln_counts > 0 and not out:carries_figures() and parts
    if not got and #trace.kernels == 0 and #trace.api == 0 then
      return jax.no_cuda_activity(trace, out, "no kernels and no CUDA API calls to time launches from")
    end
    local name_key, queue_keys = settings(args)
    local G = groupings(args, name_key)
    local limit = args.limit > 0 and args.limit or nil
    local names = trace.reports.name
    local function named(t)   -- report index -> report name, for printing
      if t:coltype("report") then return t:with("report", names:gather(t.report)) end
      return t
    end
    local L, launched, syncs, api
    local nk, nl
    if got then
      nk, nl = got.ln_counts.kernels:sum(), got.ln_counts.launched:sum()
      require("nsl.distributed").set_span(trace, got.ln_span)
    else
      api = host_sync.api_calls(trace)
      L = launches(trace, api, name_key, queue_keys)
      launched = L:filter(~L.latency:isnull())
      nk, nl = #L, #launched
    end
    local function dist(g, opts)   -- a distribution table: from the rows, or the processes' aggregates
      opts.aggregates = got and got["ln_" .. g]
      return named(percentiles.table(launched, G[g], values, opts))
    end
    out:table("launch_summary", dist("summary", {count_label = "Launches"}),
              {title = string.format("Kernel launch latency (API call start -> kernel start) and queue depth " ..
                                     "(kernels of the same %s launched, not yet started); %d kernels without a " ..
                                     "launch call left out", args.queue, nk - nl)})
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
    out:table("launch_by_kernel", dist("kernel", {count_label = "Launches", sort = 1}),
              {title = "Launch latency and queue depth per kernel, by total latency", limit = limit})
    out:table("launch_by_stream", dist("stream", {count_label = "Launches", sort = 1}),
              {title = "Launch latency and queue depth per stream, by total latency", limit = limit})
    if args.n > 0 then
      local slow = slowest(got and got.ln_slowest or launched, args.n)
      local origin = require("nsl.window").origin(trace) or 0   -- At: from the trace's start, as diagnose counts
      out:table("slowest_launches", named(nsl.table{
        {"report", slow.report}, {"pid", slow.pid}, {"tid", slow.api_tid}, {"device", slow.device},
        {"stream", slow.stream}, {"API call", slow.api_name}, {"At (ns from start)", slow.api_start - origin},
        {"API start (ns)", slow.api_start},
        {"Kernel start (ns)", slow.start}, {"Latency (ns)", slow.latency}, {"Queue", slow.depth},
        {"Kernel", slow[name_key]}}), {title = "Slowest launches (At: the API call, from the trace's start; starts: session time)"})
    end
    if not got then syncs = host_sync.calls(trace, api) end
    out:table("host_sync", named(stats.time_summary(syncs, "name", {keys = sync_keys(args), count_label = "Calls",
                                                                    aggregates = got and got.ln_sync})),
              {title = "Host synchronisation: time the calling thread was blocked, per call", limit = limit})
  end,
  distributed = {step = step, collective = collective},
}
