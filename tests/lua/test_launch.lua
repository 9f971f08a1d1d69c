-- The launch analysis against oracles outside nsl: kernels joined to their
-- CUDA API calls on the correlation id in SQL (sqlite3 program), latency
-- percentiles by plain Lua sorting, queue depths by brute force over those
-- rows, and host synchronisation totals by SQL aggregates.
local T = ...
local nsl = require("nsl")

local tiny = T.data("nsys/tiny_2026.1.sqlite")
local h100 = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local cuda2021 = T.data("nsys/cuda_2021.2.sqlite")
local nvfuser = T.data("nsys/nvfuser_2024.6.sqlite")
local mpi = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")


-- The CUDA API calls of an export in SQL, one per correlation id of a
-- process: the earliest-starting record (some exports hold a nested second
-- record of a call under the same id).
local CALLS = [[(SELECT * FROM (SELECT *, ((globalTid >> 24) & 16777215) AS pid, row_number() OVER
  (PARTITION BY ((globalTid >> 24) & 16777215), correlationId ORDER BY start, rowid) AS rn
  FROM CUPTI_ACTIVITY_KIND_RUNTIME) WHERE rn = 1 OR correlationId IS NULL)]]

-- Kernels with their launch call, joined in SQL on the correlation id
-- within the process: {name, device, stream, pid, api, start, latency}.
local function sql_launches(path)
  local rows = T.sql(path, [[
    SELECT (SELECT value FROM StringIds WHERE id = k.shortName), k.deviceId, k.streamId,
           (k.globalPid >> 24) & 16777215, r.start, k.start, k.start - r.start
    FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN ]] .. CALLS .. [[ r
      ON r.correlationId = k.correlationId AND r.pid = ((k.globalPid >> 24) & 16777215)]])
  local list = {}
  for i, r in ipairs(rows) do
    list[i] = {name = r[1], device = tonumber(r[2]), stream = tonumber(r[3]), pid = tonumber(r[4]),
               api = math.tointeger(r[5]), start = math.tointeger(r[6]), latency = math.tointeger(r[7])}
  end
  return list
end

-- Queue depth by brute force: kernels of the same device (or stream)
-- launched before the launch and starting after it.
local function brute_depth(list, by_stream)
  local groups = {}
  for _, l in ipairs(list) do
    local key = by_stream and (l.device .. "/" .. l.stream) or l.device
    groups[key] = groups[key] or {}
    table.insert(groups[key], l)
  end
  for _, g in pairs(groups) do
    for _, a in ipairs(g) do
      local n, t = 0, a.api
      for _, b in ipairs(g) do
        if b.api < t and b.start > t then n = n + 1 end
      end
      a.depth = n
    end
  end
end

-- Linear-interpolation percentile of a sorted array (NumPy's default).
local function pct(sorted, q)
  local pos = q * (#sorted - 1)
  local k = math.floor(pos)
  if k >= #sorted - 1 then return sorted[#sorted] end
  return sorted[k + 1] + (sorted[k + 2] - sorted[k + 1]) * (pos - k)
end

local function dist(values)
  table.sort(values)
  local sum = 0
  for _, v in ipairs(values) do sum = sum + v end
  return {n = #values, sum = sum, mean = sum / #values, p50 = pct(values, 0.5), p90 = pct(values, 0.9),
          p99 = pct(values, 0.99), max = values[#values]}
end

-- Checks row i of a percentiles table against the reference distributions.
local function check_row(t, i, lat, depth, what)
  T.eq(t.Launches[i], lat.n, what .. ": launches")
  if t["Latency total (ns)"] then T.eq(t["Latency total (ns)"][i], lat.sum, what .. ": total latency") end
  T.near(t["Latency mean (ns)"][i], lat.mean, 1e-12, what .. ": mean latency")
  for _, p in ipairs{"p50", "p90", "p99"} do
    T.near(t["Latency " .. p .. " (ns)"][i], lat[p], 1e-12, what .. ": latency " .. p)
    T.near(t["Queue " .. p][i], depth[p], 1e-12, what .. ": queue " .. p)
  end
  T.eq(t["Latency max (ns)"][i], lat.max, what .. ": max latency")
  T.eq(t["Queue max"][i], depth.max, what .. ": max queue")
  T.near(t["Queue mean"][i], depth.mean, 1e-12, what .. ": mean queue")
end

-- Groups launches by keyfn and checks every row of table t (key from rowkey).
local function check_groups(t, list, keyfn, rowkey, what)
  local groups = {}
  for _, l in ipairs(list) do
    local k = keyfn(l)
    groups[k] = groups[k] or {lat = {}, depth = {}}
    table.insert(groups[k].lat, l.latency)
    table.insert(groups[k].depth, l.depth)
  end
  local n = 0
  for _ in pairs(groups) do n = n + 1 end
  T.eq(#t, n, what .. ": rows")
  local prev = math.huge
  for i = 1, #t do
    local g = assert(groups[rowkey(t, i)], what .. ": unexpected row " .. tostring(rowkey(t, i)))
    local lat = dist(g.lat)
    check_row(t, i, lat, dist(g.depth), what .. " " .. rowkey(t, i))
    T.ok(lat.sum <= prev, what .. ": sorted by total latency")
    prev = lat.sum
  end
end

return {
  {"latency and queue depth per kernel, per stream and overall equal SQL joins with Lua percentiles", function()
    for _, path in ipairs{tiny, h100, nccl, cuda2021, nvfuser, mpi} do
      for _, queue in ipairs{"device", "stream"} do
        local list = sql_launches(path)
        brute_depth(list, queue == "stream")
        local _, out = T.run_analysis("launch", {path}, {"base=true", "queue=" .. queue})
        local lat, depth = {}, {}
        for i, l in ipairs(list) do lat[i], depth[i] = l.latency, l.depth end
        local s = out.tables.launch_summary
        T.eq(#s, 1, path .. ": one summary row")
        check_row(s, 1, dist(lat), dist(depth), path .. " " .. queue .. " summary")
        check_groups(out.tables.launch_by_kernel, list, function(l) return l.name end,
                     function(t, i) return t.name[i] end, path .. " " .. queue .. " per kernel")
        check_groups(out.tables.launch_by_stream, list, function(l) return l.device .. "/" .. l.stream end,
                     function(t, i) return t.device[i] .. "/" .. t.stream[i] end, path .. " " .. queue .. " per stream")
      end
    end
  end},

  {"figure: the latency CDF of each GPU has SQL's launches, order statistics and percentiles", function()
    for _, path in ipairs{h100, nccl, mpi} do
      local by_dev = {}
      for _, l in ipairs(sql_launches(path)) do
        by_dev[l.device] = by_dev[l.device] or {}
        table.insert(by_dev[l.device], l.latency)
      end
      local figs = T.figures("launch", {path})
      local d = assert(figs.launch_latency_cdf, "launch_latency_cdf figure").values
      local seen = 0
      for _, s in ipairs(d.series) do
        local dev = tonumber(s.label:match("GPU (%d+)$"))
        local v = assert(by_dev[dev], path .. ": a series for device " .. tostring(dev))
        table.sort(v)
        local pos = {}   -- the CDF is drawn on a logarithmic axis: latencies > 0
        for _, x in ipairs(v) do if x > 0 then pos[#pos + 1] = x end end
        local what = path .. " " .. s.label
        T.eq(s.n, #pos, what .. ": launches")
        local k = math.min(#pos, 512)
        for j = 1, k do
          local r = k == 1 and #pos - 1 or math.floor((j - 1) * (#pos - 1) / (k - 1) + 0.5)
          T.eq(s.x[j], pos[r + 1], what .. ": point " .. j)
          T.near(s.p[j], (r + 1) / #pos, 1e-12, what .. ": fraction at point " .. j)
        end
        T.near(s.p50, pct(pos, 0.5), 1e-9, what .. ": p50")
        T.near(s.p99, pct(pos, 0.99), 1e-9, what .. ": p99")
        seen = seen + 1
      end
      local ndev = 0
      for _ in pairs(by_dev) do ndev = ndev + 1 end
      T.eq(seen, ndev, path .. ": one series per device")
    end
  end},

  {"kernels without a launch call are counted, not measured", function()
    local _, out = T.run_analysis("launch", {h100}, {})
    local unmatched = T.sql1(h100, [[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS
      (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId
       AND ((r.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215))]])
    T.ok(unmatched > 0, "the h100 export has kernels whose launch was not recorded")
    T.eq(out.tables.launch_summary.Launches[1] + unmatched, T.sql1(h100, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
         "launches + unmatched = kernels")
  end},

  {"the slowest launches are SQL's largest latencies, in order", function()
    local _, out = T.run_analysis("launch", {nccl}, {"n=15", "base=true"})
    local slow = out.tables.slowest_launches
    local rows = T.sql(nccl, [[
      SELECT k.start - r.start, r.start, k.start, (SELECT value FROM StringIds WHERE id = r.nameId),
             (r.globalTid & 16777215), k.streamId
      FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN ]] .. CALLS .. [[ r
        ON r.correlationId = k.correlationId AND r.pid = ((k.globalPid >> 24) & 16777215)
      ORDER BY 1 DESC, k.start ASC LIMIT 15]])
    T.eq(#slow, 15, "rows")
    for i, r in ipairs(rows) do
      T.eq(slow["Latency (ns)"][i], math.tointeger(r[1]), "latency " .. i)
      T.eq(slow["API start (ns)"][i], math.tointeger(r[2]), "API start " .. i)
      T.eq(slow["Kernel start (ns)"][i], math.tointeger(r[3]), "kernel start " .. i)
      T.eq(slow["API call"][i], r[4]:match("^(.*)_v....$") or r[4], "API call " .. i)
      T.eq(slow.tid[i], tonumber(r[5]), "tid " .. i)
      T.eq(slow.stream[i], tonumber(r[6]), "stream " .. i)
    end
  end},

  {"host synchronisation totals equal SQL sums per call", function()
    for _, path in ipairs{h100, nccl, cuda2021, nvfuser, tiny, mpi} do
      local _, out = T.run_analysis("launch", {path}, {})
      local t = out.tables.host_sync
      local got = {}
      for i = 1, #t do got[t.category[i] .. "|" .. t.Name[i]] = {n = t.Calls[i], total = t["Total Time (ns)"][i]} end
      local want = {}
      local function add(cat, where)
        for _, r in ipairs(T.sql(path, [[SELECT s.value, count(*), sum(r.end - r.start)
            FROM ]] .. CALLS .. [[ r JOIN StringIds s ON s.id = r.nameId WHERE ]] .. where .. " GROUP BY 1")) do
          local name = r[1]:match("^(.*)_v....$") or r[1]
          want[cat .. "|" .. name] = {n = math.tointeger(r[2]), total = math.tointeger(r[3])}
        end
      end
      add("device sync", "s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cuCtxSynchronize%'")
      add("stream sync", "s.value LIKE 'cudaStreamSynchronize%' OR s.value LIKE 'cuStreamSynchronize%'")
      add("event sync", "s.value LIKE 'cudaEventSynchronize%' OR s.value LIKE 'cuEventSynchronize%'")
      add("stream wait event", "s.value LIKE 'cudaStreamWaitEvent%' OR s.value LIKE 'cuStreamWaitEvent%'")
      add("synchronous memcpy", "(s.value LIKE 'cudaMemcpy%' OR s.value LIKE 'cuMemcpy%') AND s.value NOT LIKE '%Async%'")
      -- srcKind/dstKind 0: CUDA_MEMOPR_MEMORY_KIND_PAGEABLE
      add("pageable memcpy (Async call)", [[s.value LIKE '%Async%' AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_MEMCPY m
        WHERE m.correlationId = r.correlationId AND ((m.globalPid >> 24) & 16777215) = r.pid
        AND (m.srcKind = 0 OR m.dstKind = 0))]])
      local n = 0
      for key, w in pairs(want) do
        n = n + 1
        local g = got[key]
        T.ok(g, path .. ": a row for " .. key)
        T.eq(g.n, w.n, path .. " " .. key .. ": calls")
        T.eq(g.total, w.total, path .. " " .. key .. ": blocked time")
      end
      T.eq(#t, n, path .. ": rows of host_sync")
    end
  end},

  {"the calls one per id: the trace's own table exactly when SQL finds no id twice in a process, else SQL's " ..
   "first records", function()
    local host_sync = require("nsl.host_sync")
    local repeated = {}
    for _, path in ipairs{h100, nccl, cuda2021, nvfuser, tiny, mpi} do
      local tr = assert(nsl.open(path))
      local calls = host_sync.api_calls(tr)
      repeated[path] = T.sql1(path, [[SELECT count(*) FROM (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME
        WHERE correlationId IS NOT NULL GROUP BY ((globalTid >> 24) & 16777215), correlationId HAVING count(*) > 1)]])
      T.eq(rawequal(calls, tr.api), repeated[path] == 0, path .. ": its own table when no id repeats")
      T.eq(#calls, T.sql1(path, "SELECT count(*) FROM " .. CALLS), path .. ": one call per id")
      tr:close()
    end
    -- the case that takes the other path: a repeated id (the 2022 export has some)
    T.ok(repeated[mpi] > 0, "a repeated id in the 2022 export")
  end},

  {"several exports, per report: each report's rows equal its own SQL", function()
    local paths = {h100, nccl, cuda2021}
    local _, out, tr = T.run_analysis("launch", paths, {"per_report=true", "base=true"})
    local s, bk = out.tables.launch_summary, out.tables.launch_by_kernel
    T.eq(#s, 3, "one summary row per report")
    for r, path in ipairs(paths) do
      local name = tr.reports.name[r]
      local list = sql_launches(path)
      brute_depth(list, false)
      local lat, depth = {}, {}
      for i, l in ipairs(list) do lat[i], depth[i] = l.latency, l.depth end
      local found = false
      for i = 1, #s do
        if s.report[i] == name then
          found = true
          check_row(s, i, dist(lat), dist(depth), name .. " summary")
        end
      end
      T.ok(found, name .. ": summary row")
      local rows = {}
      for i = 1, #bk do if bk.report[i] == name then rows[#rows + 1] = i end end
      local sub = bk:take(nsl.column(rows) - 1)
      check_groups(sub, list, function(l) return l.name end, function(t, i) return t.name[i] end, name .. " per kernel")
    end
    -- over all reports: the union of the launches
    _, out = T.run_analysis("launch", paths, {})
    local all = 0
    for _, path in ipairs(paths) do all = all + #sql_launches(path) end
    T.eq(out.tables.launch_summary.Launches[1], all, "launches over all reports")
  end},

  {"bad arguments fail with one line", function()
    local ok, e = pcall(T.run_analysis, "launch", {tiny}, {"queue=context"})
    T.ok(not ok and nsl.is_error(e) and tostring(e):find("--arg queue", 1, true), "bad queue: " .. tostring(e))
  end},
}
