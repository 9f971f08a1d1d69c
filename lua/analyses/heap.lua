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

return {
  name = "heap",
  description = "Device memory over time: live bytes, peak, allocations live at the peak, never freed",
  args = {
    top = {default = 20, help = "allocations listed per device (largest first)"},
  },
  example = "nsl run heap trace.sqlite --out heap/",
  -- a distributed run moves only the allocation calls of the CUDA API table (and every memory event)
  gather = {where = function() return {api = {{"name", "match", alloc_regex}}} end},
  run = function(trace, args, out)
    local m = trace.memory
    m:load{"report", "device", "start", "address", "bytes", "op", "kind"}
    local rnames = trace.reports.name
    local per_device = {report = {}, device = {}, events = {}, allocs = {}, frees = {}, peak = {}, peak_at = {},
                        live_at_peak = {}, never_freed = {}, never_freed_bytes = {}, final = {}}
    local live_rows, never_rows, series = {}, {}, {}
    if #m == 0 and require("nsl.jax").is_jax(trace) then
      -- XLA plans a JAX program's device memory ahead of time: its heap simulation is what there is
      out:text("No device-memory events in this JAX trace; the device memory XLA planned per program " ..
               "(heap-simulator peaks, nsl run jax_heap):")
      return out:run("jax_heap", trace)
    elseif #m == 0 then
      out:text("No device-memory events: the export has no CUDA_GPU_MEMORY_USAGE_EVENTS rows " ..
               "(profile with `nsys profile --cuda-memory-usage=true`).")
    else
      local groups = m:group_by("report", "device")
      local keys = groups:keys()
      -- each device's events by one grouping (t:slices), not a filter of every event per device
      local of_group = nsl.table{{"row", nsl.range(#m)}, {"g", groups:ids()}}:slices("g")
      for gi = 1, #keys do
        local e = m:take(of_group(gi - 1).row):sort("start")   -- stable: ties keep the export's order
        local live, peak, peak_pos, free_pos, freed, is_alloc = replay(e)
        local pos = nsl.range(#e)
        local alloc_before = is_alloc & pos:le(peak_pos)
        local live_mask = alloc_before & (~freed | free_pos:gt(peak_pos))
        local never = is_alloc & ~freed
        local rep, dev = keys.report[gi], keys.device[gi]
        local i = #per_device.report + 1
        per_device.report[i] = rnames[rep + 1]
        per_device.device[i] = dev
        per_device.events[i] = #e
        per_device.allocs[i] = is_alloc:count()
        per_device.frees[i] = #e - is_alloc:count()
        per_device.peak[i] = peak
        per_device.peak_at[i] = e.start[peak_pos + 1]
        per_device.live_at_peak[i] = live_mask:count()
        per_device.never_freed[i] = never:count()
        per_device.never_freed_bytes[i] = e.bytes:gather(never:indices()):sum()
        per_device.final[i] = live[#live]
        live_rows[#live_rows + 1] = e:filter(live_mask):with("report_name", nsl.rep(rnames[rep + 1], live_mask:count()))
        never_rows[#never_rows + 1] = e:filter(never):with("report_name", nsl.rep(rnames[rep + 1], never:count()))
        out:value(string.format("peak_bytes.%s.%d", rnames[rep + 1], dev), peak)
        series[#series + 1] = {label = string.format("%s gpu%d", rnames[rep + 1], dev), x = e.start, y = live}
      end
      out:table("devices", nsl.table{
        {"report", per_device.report}, {"device", per_device.device}, {"events", per_device.events},
        {"allocs", per_device.allocs}, {"frees", per_device.frees}, {"peak (B)", per_device.peak},
        {"peak at (ns)", per_device.peak_at}, {"live at peak", per_device.live_at_peak},
        {"never freed", per_device.never_freed}, {"never freed (B)", per_device.never_freed_bytes},
        {"live at end (B)", per_device.final}}, {title = "Device memory: peak and leaks per device"})
      local function listing(name, title, parts)
        local cols = {}
        for _, c in ipairs{"report_name", "device", "start", "address", "bytes", "kind"} do
          local pieces = {}
          for k, t in ipairs(parts) do pieces[k] = t:col(c) end
          cols[#cols + 1] = {c == "report_name" and "report" or c, nsl.concat(table.unpack(pieces))}
        end
        local t = nsl.table(cols):sort("-bytes", "start")
        out:table(name, t, {title = title, limit = args.top})
      end
      if #series > 0 then   -- the live-bytes chart
        out:figure("heap_live", function(format)
          return require("nsl.plot").lines{series = series, format = format, title = "Live device memory",
                                           xlabel = "time", ylabel = "live bytes", xunit = "ns", yunit = "bytes"}
        end)
      end
      listing("live_at_peak", "Allocations live at the peak (largest first)", live_rows)
      listing("never_freed", "Allocations never freed (largest first)", never_rows)
      for i = 1, #per_device.report do
        out:text(string.format("%s device %d: peak %s (%s B) at %s", per_device.report[i], per_device.device[i],
          report.bytes(per_device.peak[i]), report.int(per_device.peak[i]), report.duration(per_device.peak_at[i])))
      end
    end
    -- The allocation API calls, summarised as cuda_api_sum does.
    local api = trace.api
    api:load{"name", "start", "stop", "dur", "report"}
    local calls = api:filter(api.name:where(is_alloc_call))
    if #calls > 0 then
      out:table("alloc_api", stats.time_summary(calls, "name", {count_label = "Num Calls", name_label = "Name"}),
        {title = "Memory allocation API calls"})
    end
  end,
}
