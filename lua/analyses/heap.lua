-- heap -- device memory over time: the replay of the allocation and free
-- events of CUDA_GPU_MEMORY_USAGE_EVENTS (the `memory` table), live bytes per
-- device, the peak and when it happens, the allocations live at the peak,
-- what is never freed; and the allocation API calls (counts and time).
-- Figure heap_live: live bytes per device over time.
--
-- Definitions.  Events of one (report, device) are replayed in time order
-- (ties keep the export's order); an alloc adds its bytes, a free subtracts
-- the bytes it states.  The peak is the first event after which live bytes
-- are highest.  A free belongs to the latest earlier alloc of the same
-- address; an allocation is live at the peak when it happened at or before
-- the peak event and its free (if any) after it.  Never freed: allocations
-- without a later free of their address.
--
-- A JAX trace without memory events (nsys-jax archives never have them) gets
-- jax_heap instead: the heap XLA simulated for each program.
local nsl = require("nsl")
local report = require("nsl.report")
local stats = require("nsl.stats")

-- The allocation-related CUDA API calls (runtime and driver).
local alloc_api = {"^cudaMalloc", "^cudaFree", "^cuMemAlloc", "^cuMemFree", "^cudaMemPool", "^cuMemPool",
                   "^cudaHostAlloc", "^cuMemHostAlloc", "^cuMemCreate", "^cuMemRelease", "^cuMemMap",
                   "^cuMemUnmap", "^cudaMallocAsync", "^cudaFreeAsync"}

local function is_alloc_call(name)
  for _, p in ipairs(alloc_api) do if name:find(p) then return true end end
  return false
end

-- The same names as a regular expression (each pattern a name's start), for
-- the rows a distributed run's processes keep of the CUDA calls.
local alloc_regex
do
  local alts = {}
  for i, p in ipairs(alloc_api) do alts[i] = p:sub(2) end
  alloc_regex = "^(" .. table.concat(alts, "|") .. ")"
end

--- Replays one (report, device) group's events (table e: start, address,
-- bytes, op, row in time order).  Returns the per-event live bytes column,
-- the peak's position and the per-alloc free position.
local function replay(e)
  local n = #e
  local is_alloc = e.op:eq("alloc")
  local sign = nsl.where(is_alloc, 1, -1)                 -- +1 alloc, -1 free
  local live = (e.bytes * sign):cumsum()
  local peak = live:max()
  local peak_pos = live:eq(peak):indices()[1]            -- first position of the peak (0-based)
  -- Pair frees with allocs: order by (address, position); the row after an
  -- alloc frees it when it is a free of the same address.
  local pos = nsl.range(n)
  local by_addr = nsl.table{{"address", e.address}, {"pos", pos}, {"alloc", is_alloc:cast("i64")}}:sort("address", "pos")
  local next_addr = by_addr.address:shift(1)              -- the next row in address order
  local next_alloc = by_addr.alloc:shift(1)
  local next_pos = by_addr.pos:shift(1)
  local freed = by_addr.alloc:eq(1) & next_addr:eq(by_addr.address) & next_alloc:eq(0)
  -- free position per event (by its own position), NULL when never freed or a free
  local free_pos = nsl.table{{"pos", by_addr.pos}, {"free_pos", next_pos}, {"freed", freed:cast("i64")}}
  free_pos = free_pos:sort("pos")
  return live, peak, peak_pos, free_pos.free_pos, free_pos.freed:eq(1), is_alloc
end

-- The replay of every (report, device) of memory table m (trace.memory with
-- report, device, start, address, bytes, op and kind loaded): a table per
-- device (report as m numbers it, device, events, allocs, frees, peak,
-- peak_at, live_at_peak, never_freed, never_freed_bytes, final), the
-- allocations live at the peak and those never freed (report, device,
-- start, address, bytes, kind), and with want_series each device's live
-- bytes per event ({report =, device =, x =, y =}).
local function replay_devices(m, want_series)
  local groups = m:group_by("report", "device")
  local keys = groups:keys()
  -- each device's events by one grouping (t:slices), not a filter of every event per device
  local of_group = nsl.table{{"row", nsl.range(#m)}, {"g", groups:ids()}}:slices("g")
  local d = {report = {}, device = {}, events = {}, allocs = {}, frees = {}, peak = {}, peak_at = {},
             live_at_peak = {}, never_freed = {}, never_freed_bytes = {}, final = {}}
  local live_rows, never_rows, series = {}, {}, {}
  local cols = {"report", "device", "start", "address", "bytes", "kind"}
  for gi = 1, #keys do
    local e = m:take(of_group(gi - 1).row):sort("start")   -- stable: ties keep the export's order
    local live, peak, peak_pos, free_pos, freed, is_alloc = replay(e)
    local pos = nsl.range(#e)
    local alloc_before = is_alloc & pos:le(peak_pos)
    local live_mask = alloc_before & (~freed | free_pos:gt(peak_pos))
    local never = is_alloc & ~freed
    local rep, dev = keys.report[gi], keys.device[gi]
    d.report[gi], d.device[gi], d.events[gi] = rep, dev, #e
    d.allocs[gi], d.frees[gi] = is_alloc:count(), #e - is_alloc:count()
    d.peak[gi], d.peak_at[gi] = peak, e.start[peak_pos + 1]
    d.live_at_peak[gi], d.never_freed[gi] = live_mask:count(), never:count()
    d.never_freed_bytes[gi] = e.bytes:gather(never:indices()):sum()
    d.final[gi] = live[#live]
    live_rows[gi] = e:filter(live_mask):select(cols)
    never_rows[gi] = e:filter(never):select(cols)
    if want_series then series[gi] = {report = rep, device = dev, x = e.start, y = live} end
  end
  local dcols = {}
  for _, c in ipairs{"report", "device", "events", "allocs", "frees", "peak", "peak_at", "live_at_peak", "never_freed",
                     "never_freed_bytes", "final"} do
    dcols[#dcols + 1] = {c, #d[c] > 0 and nsl.column(d[c]) or nsl.rep(0, 0)}
  end
  local function rows(parts) return #parts > 0 and nsl.concat_tables(parts) or m:select(cols):head(0) end
  return nsl.table(dcols), rows(live_rows), rows(never_rows), series
end

-- The allocation API calls of trace (name, dur).
local function alloc_calls(trace)
  local api = trace.api
  api:load{"name", "start", "stop", "dur", "report"}
  return api:filter(api.name:where(is_alloc_call))
end

-- ---- a distributed run (nsl.distributed) ----
-- Each process replays its own devices' memory events (a device's events
-- are in one report) and sends a row per device and the allocations live at
-- the peak and never freed (rows of the output); the allocation calls'
-- summary is aggregated together as `summary`'s is.  A run with figures
-- (every event's live bytes) and a JAX trace without memory events (the
-- JAX heap) are left to rank 0, which reads the trace as one process does
-- (of the CUDA calls, the allocation calls alone: the row filter below).

local mine_of = setmetatable({}, {__mode = "k"})   -- a process's view -> its replay

local function step(trace)
  local m = trace.memory
  m:load{"report", "device", "start", "address", "bytes", "op", "kind"}
  local dev, live, never = replay_devices(m, false)
  -- (a JAX trace without memory events gets jax_heap: whether the whole trace is one, rank 0 finds out)
  mine_of[trace] = {events = #m, jax = #m == 0 and require("nsl.jax").is_jax(trace), calls = alloc_calls(trace)}
  return {hp_devices = dev, hp_live = live, hp_never = never}
end

local function collective(trace)
  local mpi = nsl.mpi
  local mine = mine_of[trace]
  local events = mpi.allreduce(nsl.column{mine.events}:cast("i64"), "sum"):totable()[1]
  if not mpi.agree(events > 0 or not mine.jax) then return {} end
  local s = stats.reduce_aggregates(mine.calls, {"name"}, "dur")
  if not s then return {} end
  return {hp_alloc = s, hp_events = nsl.table{{"n", nsl.rep(events, 1)}}}
end

return {
  name = "heap",
  description = "Device memory over time: live bytes, peak, allocations live at the peak, never freed",
  args = {
    top = {default = 20, help = "allocations listed per device (largest first)"},
  },
  example = "nsl run heap trace.sqlite --out heap/",
  -- a distributed run moves only the allocation calls of the CUDA API table (and every memory event)
  gather = {where = function() return {api = {{"name", "match", alloc_regex}}} end},
  -- parts: a distributed run's devices, allocations and calls' summary (the step and collective above)
  run = function(trace, args, out, parts)
    local got = parts and parts.hp_alloc and not out:carries_figures() and parts
    local rnames = trace.reports.name
    local m, events
    if got then events = got.hp_events.n:max()
    else
      m = trace.memory
      m:load{"report", "device", "start", "address", "bytes", "op", "kind"}
      events = #m
    end
    -- (a distributed run's processes said whether theirs is a JAX trace: with one, the form did not apply)
    if events == 0 and not got and require("nsl.jax").is_jax(trace) then
      -- XLA plans a JAX program's device memory ahead of time: its heap simulation is what there is
      out:text("No device-memory events in this JAX trace; the device memory XLA planned per program " ..
               "(heap-simulator peaks, nsl run jax_heap):")
      return out:run("jax_heap", trace)
    end
    local dev, live, never, series
    if events == 0 then
      out:text("No device-memory events: the export has no CUDA_GPU_MEMORY_USAGE_EVENTS rows " ..
               "(profile with `nsys profile --cuda-memory-usage=true`).")
    elseif got then
      dev, live, never = got.hp_devices, got.hp_live, got.hp_never
    else
      dev, live, never, series = replay_devices(m, true)
    end
    if dev then
      local rn = rnames:gather(dev.report):totable()
      local dv, pk, pa = dev.device:totable(), dev.peak:totable(), dev.peak_at:totable()
      for i = 1, #dev do out:value(string.format("peak_bytes.%s.%d", rn[i], dv[i]), pk[i]) end
      out:table("devices", nsl.table{
        {"report", rnames:gather(dev.report)}, {"device", dev.device}, {"events", dev.events},
        {"allocs", dev.allocs}, {"frees", dev.frees}, {"peak (B)", dev.peak},
        {"peak at (ns)", dev.peak_at}, {"live at peak", dev.live_at_peak},
        {"never freed", dev.never_freed}, {"never freed (B)", dev.never_freed_bytes},
        {"live at end (B)", dev.final}}, {title = "Device memory: peak and leaks per device"})
      local function listing(name, title, t)
        t = t:with("report", rnames:gather(t.report)):sort("-bytes", "start")
        out:table(name, t, {title = title, limit = args.top})
      end
      if series and #series > 0 then   -- the live-bytes chart
        local lines = {}
        for i, sr in ipairs(series) do
          lines[i] = {label = string.format("%s gpu%d", rnames[sr.report + 1], sr.device), x = sr.x, y = sr.y}
        end
        out:figure("heap_live", function(format)
          return require("nsl.plot").lines{series = lines, format = format, title = "Live device memory",
                                           xlabel = "time", ylabel = "live bytes", xunit = "ns", yunit = "bytes"}
        end)
      end
      listing("live_at_peak", "Allocations live at the peak (largest first)", live)
      listing("never_freed", "Allocations never freed (largest first)", never)
      for i = 1, #dev do
        out:text(string.format("%s device %d: peak %s (%s B) at %s", rn[i], dv[i],
          report.bytes(pk[i]), report.int(pk[i]), report.duration(pa[i])))
      end
    end
    -- The allocation API calls, summarised as cuda_api_sum does (a distributed run: by the processes together).
    local calls = not got and alloc_calls(trace) or nil
    if #(got and got.hp_alloc or calls) > 0 then
      out:table("alloc_api", stats.time_summary(calls, "name", {count_label = "Num Calls", name_label = "Name",
                                                                aggregates = got and got.hp_alloc}),
        {title = "Memory allocation API calls"})
    end
  end,
  distributed = {step = step, collective = collective},
}
