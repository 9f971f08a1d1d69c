-- ledger: on every shared export and nsys-jax archive each row's parts sum
-- to its wall time and none is negative; on the exports the class totals
-- of the whole run are checked against SQL run by sqlite3 over the same
-- file: the union of the non-NCCL kernels (compute), of all kernels
-- (compute + collective wait + transfer), of every GPU operation (+ copies),
-- and the report's span from the first start to the last end of its GPU
-- operations and CUDA runtime calls (wall).
local T = ...

local LINES = {"compute", "comm_wait", "comm", "copy", "idle_onetime", "idle_htod", "idle_sync", "idle_host",
               "idle_unknown"}
local IDLE = {"idle_onetime", "idle_htod", "idle_sync", "idle_host", "idle_unknown"}

local function has_table(path, name)
  return T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" .. name .. "'") == 1
end

-- The GPU operations of device dev as SQL rows (start, end, cls): 0 compute kernels, 1 NCCL kernels, 2 copies.
local function ops_sql(path, dev)
  local parts = {}
  if has_table(path, "CUPTI_ACTIVITY_KIND_KERNEL") then
    parts[1] = string.format("SELECT k.start, k.end, CASE WHEN s.value LIKE '%%nccl%%' THEN 1 ELSE 0 END AS cls " ..
                             "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName " ..
                             "WHERE k.deviceId = %d", dev)
  end
  for _, t in ipairs{"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
    if has_table(path, t) then
      parts[#parts + 1] = string.format("SELECT start, end, 2 AS cls FROM %s WHERE deviceId = %d", t, dev)
    end
  end
  return table.concat(parts, " UNION ALL ")
end

-- The length of the union of the rows of class <= cls on device dev, by SQL: each interval adds what lies
-- past the latest end of those before it.
local function union_sql(path, dev, cls)
  return T.sql1(path, string.format(
    "SELECT coalesce(sum(max(0, e - max(s, coalesce(pe, s)))), 0) FROM (SELECT start AS s, end AS e, " ..
    "max(end) OVER (ORDER BY start, end ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe " ..
    "FROM (%s) WHERE cls <= %d)", ops_sql(path, dev), cls))
end

local function span_sql(path)
  local parts = {}
  for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                     "CUPTI_ACTIVITY_KIND_RUNTIME"} do
    if has_table(path, t) then parts[#parts + 1] = "SELECT start, end FROM " .. t end
  end
  local r = T.sql(path, "SELECT min(start), max(end) FROM (" .. table.concat(parts, " UNION ALL ") .. ")")[1]
  return math.tointeger(r[1]), math.tointeger(r[2])
end

-- Every row of ledger table t sums to its wall, with no negative part; the steps of a GPU do not overlap
-- and lie inside nothing but its own time.
local function check_sums(t, what)
  local rows = T.rows(t, {"rank", "step", "start", "stop", "wall", table.unpack(LINES)})
  T.ok(#rows > 0, what .. ": ledger rows")
  local last = {}
  for _, r in ipairs(rows) do
    local sum, idle = 0, 0
    for k = 6, #r do
      T.ok(r[k] >= 0, string.format("%s %s step %d: %s >= 0", what, r[1], r[2], LINES[k - 5]))
      sum = sum + r[k]
    end
    T.eq(r[5], r[4] - r[3], what .. ": wall is stop - start")
    T.eq(sum, r[5], string.format("%s %s step %d: the lines sum to wall", what, r[1], r[2]))
    if r[2] > 0 then
      T.ok(not last[r[1]] or r[3] >= last[r[1]], what .. ": steps do not overlap")
      last[r[1]] = r[4]
    end
  end
  local i = T.rows(t, {"idle", table.unpack(IDLE)})
  for _, r in ipairs(i) do T.eq(r[1], r[2] + r[3] + r[4] + r[5] + r[6], what .. ": idle is its causes") end
end

local tests = {}

tests[#tests + 1] = {"every export: the lines sum to wall; class totals equal SQL's unions", function()
  for _, path in ipairs(T.exports()) do
    local t = T.run_analysis("ledger", {path}).ledger
    check_sums(t, path)
    local lo, hi = span_sql(path)
    local run = t:filter(t.step:eq(0))
    local rows = T.rows(run, {"device", "start", "stop", "compute", "comm_wait", "comm", "copy", "idle"})
    T.ok(#rows >= 1, path .. ": a run row")
    for _, r in ipairs(rows) do
      local dev = r[1]
      T.eq(r[2], lo, path .. ": the run starts at the first GPU operation or CUDA call")
      T.eq(r[3], hi, path .. ": the run ends at the last")
      local u0, u1, u2 = union_sql(path, dev, 0), union_sql(path, dev, 1), union_sql(path, dev, 2)
      T.eq(r[4], u0, path .. " gpu" .. dev .. ": compute = union of the non-NCCL kernels")
      T.eq(r[4] + r[5] + r[6], u1, path .. " gpu" .. dev .. ": compute + collectives = union of the kernels")
      T.eq(r[4] + r[5] + r[6] + r[7], u2, path .. " gpu" .. dev .. ": + copies = union of the GPU operations")
      T.eq(r[8], (hi - lo) - u2, path .. " gpu" .. dev .. ": idle = wall - busy")
    end
  end
end}

tests[#tests + 1] = {"two GPUs of one export: the wait inside a collective is the time until the last GPU " ..
                     "arrived, by SQL over the matched NCCL kernels", function()
  local path = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
  local t = T.run_analysis("ledger", {path}).ledger
  local run = t:filter(t.step:eq(0))
  local rows = T.rows(run, {"device", "comm_wait"})
  T.eq(#rows, 2, "two GPUs")
  -- the k-th NCCL kernel of a name on each device is one instance (one stream per device runs NCCL here);
  -- each waits for the later start, at most its own length; nsl leaves out the warm-up instances, so
  -- SQL's total over every instance bounds it above, and the steady ones (all but the first few) below
  local waits = T.sql(path, [[
    WITH n AS (SELECT k.deviceId AS dev, k.start AS s, k.end AS e, s.value AS name,
                      row_number() OVER (PARTITION BY k.deviceId, s.value ORDER BY k.start) AS seq
               FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
               WHERE s.value LIKE '%nccl%'),
         last AS (SELECT name, seq, max(s) AS ls, count(*) AS nr FROM n GROUP BY name, seq)
    SELECT n.dev, sum(min(n.e - n.s, last.ls - n.s)) FROM n JOIN last USING (name, seq)
    WHERE last.nr = 2 GROUP BY n.dev ORDER BY n.dev]])
  for i, r in ipairs(rows) do
    local all = math.tointeger(tonumber(waits[i][2]))
    T.ok(r[2] > 0, "gpu" .. r[1] .. " waited")
    T.ok(r[2] <= all, string.format("gpu%d: wait %d within SQL's total over every instance %d", r[1], r[2], all))
    T.ok(r[2] >= all * 0.5, string.format("gpu%d: wait %d most of SQL's %d (warm-up left out)", r[1], r[2], all))
  end
end}

tests[#tests + 1] = {"nsys-jax archives, alone and together: the lines sum to wall", function()
  local zips = {}
  for k = 0, 3 do zips[#zips + 1] = T.data(string.format("nsys-jax/pax_fsdp4_4proc_proc%d.zip", k)) end
  check_sums(T.run_analysis("ledger", {zips[1]}).ledger, zips[1])
  local t = T.run_analysis("ledger", zips).ledger
  check_sums(t, "four archives")
  T.eq(#t:filter(t.step:eq(0)), 4, "one run row per device")
  T.ok(t.comm_wait:sum() > 0, "four devices wait for each other inside collectives")
end}

tests[#tests + 1] = {"figure ledger: one stacked bar per GPU whose parts sum to its wall time (SQL's span)", function()
  local path = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
  local figs = T.figures("ledger", {path})
  local f = figs.ledger
  T.ok(f and f.data and #f.data > 0, "the figure is drawn")
  local v = f.values
  T.eq(#v.categories, 2, "one bar per GPU")
  local lo, hi = span_sql(path)
  for i = 1, #v.categories do
    local sum = 0
    for _, s in ipairs(v.series) do sum = sum + s.values[i] end
    T.eq(sum, hi - lo, v.categories[i] .. ": the bar is the run's wall time")
  end
end}

-- A real profile of a GPU training loop (H200, nsys 2025.3; tests/data/README.md): each step its host
-- sleeps in NVTX 'data_loader' inside 'train_step' (about 3 ms; 20 ms in one step) before copying its input
-- and launching three kernels, then waits on the stream.  The GPU sits idle for the host from the end of the
-- previous step's last copy to the next copy.
local h200 = T.source_dir .. "/tests/data/h200_host_stall_2025.3.sqlite"

-- The data_loader ranges that start after the first GPU operation ended (the GPU idles through them) and the
-- GPU's idle gaps around them, by SQL: {n, loader = their time, gaps = the gaps that hold one}.
local function h200_stalls()
  local r = T.sql(h200, [[
    WITH ops AS (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
                 SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY),
         gaps AS (SELECT max(end) OVER (ORDER BY start ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS gs,
                         start AS ge FROM ops),
         dl AS (SELECT n.start, n.end FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
                WHERE coalesce(n.text, s.value) = 'data_loader' UNION ALL
                SELECT start, end FROM NVTX_EVENTS WHERE text = 'data_loader')
    SELECT count(*), sum(dl.end - dl.start), sum(gaps.ge - gaps.gs)
    FROM dl JOIN gaps ON gaps.gs <= dl.start AND dl.end <= gaps.ge]])[1]
  return {n = math.tointeger(tonumber(r[1])), loader = math.tointeger(tonumber(r[2])),
          gaps = math.tointeger(tonumber(r[3]))}
end

tests[#tests + 1] = {"a real H200 profile: the host's idle time is charged to the innermost NVTX range, "
                     .. "'data_loader', not the enclosing step (SQL)", function()
  local want = h200_stalls()
  T.eq(want.n, 11, "SQL: 11 loader ranges lie in GPU idle gaps (the first step's comes before any GPU work)")
  local tables = T.run_analysis("ledger", {h200})
  local t = tables.ledger
  check_sums(t, "h200")
  local run = t:filter(t.step:eq(0))
  local idle_host = run.idle_host[1]
  -- the GPU idles through every loader range, and idle_host is that gap time less the copy call and the sync
  T.ok(idle_host >= want.loader and idle_host <= want.gaps,
       string.format("idle_host %d between SQL's loader time %d and its gaps %d", idle_host, want.loader, want.gaps))
  local h = tables.ledger_host
  T.eq(h.range[1], "data_loader", "most of it while the host was in data_loader")
  T.eq(h.gaps[1], want.n, "one gap per loader range in an idle gap")
  T.ok(h.time[1] >= want.loader and h.time[1] <= want.gaps, "data_loader's share between SQL's bounds")
  T.eq(h.time:sum(), idle_host, "the table splits idle_host, each ns once")
  T.eq(h.range:eq("train_step"):count(), 0, "the enclosing step range takes none of it")
end}

return tests
