-- The iterations analysis on real exports and on fixtures derived from them
-- with SQL (tiled copies, planted step ranges), against oracles that are not
-- nsl: SQL over the same files (range starts and ends, per-iteration counts
-- by range joins on the launching call), Lua sums and unions over SQL rows.
local T = ...
local nsl = require("nsl")
local iterations = require("nsl.iterations")

local function int(s) return math.tointeger(tonumber(s)) end
local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local h100 = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
local mpi = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")

local function shell(cmd)
  local ok = os.execute(cmd)
  assert(ok, "command failed: " .. cmd)
end

local function tempdir()
  local p = assert(io.popen("mktemp -d"))
  local d = p:read("l")
  p:close()
  return d
end

-- The time span make_tiled.sh tiles by (its own SQL): last end - first
-- start over the activity tables with start/end, plus 1 ms.
local function tile_span(path)
  local lo, hi
  for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER",
                     "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                     "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "OSRT_API"} do
    if T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE name = '" .. t .. "'") == 1 then
      local r = T.sql(path, "SELECT min(start), max(coalesce(end, start)) FROM " .. t)[1]
      if r[1] ~= "" then
        lo = math.min(lo or math.maxinteger, int(r[1]))
        hi = math.max(hi or math.mininteger, int(r[2]))
      end
    end
  end
  return hi - lo + 1000000, lo, hi
end

-- Per-range oracle: the GPU ops of the process whose launching runtime call
-- (or, without one, the op itself) starts in [start, end) of each range
-- named `name`; returns rows {pid, start, end, kernels, memcpy, bytes,
-- memset, busy, total}.
local function sql_iterations(path, where)
  local ranges = T.sql(path, [[SELECT (globalTid >> 24) & 16777215, start, end FROM NVTX_EVENTS AS n
    WHERE eventType IN (59, 60) AND end IS NOT NULL AND ]] .. where .. " ORDER BY 1, 2")
  local ops = T.sql(path, [[
    WITH o AS (SELECT 'k' AS kind, start, end, correlationId, globalPid, 0 AS bytes FROM CUPTI_ACTIVITY_KIND_KERNEL
               UNION ALL SELECT 'c', start, end, correlationId, globalPid, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY
               UNION ALL SELECT 's', start, end, correlationId, globalPid, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET),
         c AS (SELECT correlationId, globalTid >> 24 AS p, min(start) AS s FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1, 2)
    SELECT o.kind, o.start, o.end, o.bytes, (o.globalPid >> 24) & 16777215, coalesce(c.s, o.start)
    FROM o LEFT JOIN c ON c.correlationId = o.correlationId AND c.p = (o.globalPid >> 24)]])
  local out = {}
  for _, r in ipairs(ranges) do
    local it = {pid = int(r[1]), start = int(r[2]), stop = int(r[3]), kernels = 0, memcpy = 0, bytes = 0, memset = 0,
                total = 0, spans = {}}
    for _, o in ipairs(ops) do
      local t = int(o[6])
      if int(o[5]) == it.pid and t >= it.start and t < it.stop then
        if o[1] == "k" then it.kernels = it.kernels + 1
        elseif o[1] == "c" then it.memcpy, it.bytes = it.memcpy + 1, it.bytes + int(o[4])
        else it.memset = it.memset + 1 end
        it.total = it.total + (int(o[3]) - int(o[2]))
        it.spans[#it.spans + 1] = {int(o[2]), int(o[3])}
      end
    end
    table.sort(it.spans, function(a, b) return a[1] < b[1] end)   -- union length by a plain sweep
    local busy, cs, ce = 0, nil, nil
    for _, s in ipairs(it.spans) do
      if ce and s[1] <= ce then ce = math.max(ce, s[2])
      else
        if ce then busy = busy + (ce - cs) end
        cs, ce = s[1], s[2]
      end
    end
    if ce then busy = busy + (ce - cs) end
    it.busy = busy
    out[#out + 1] = it
  end
  return out
end

-- Compares the analysis's tables with the oracle rows.
local function check_against(tables, want, what)
  local t = tables.iterations
  T.eq(#t, #want, what .. ": iterations")
  local got = T.rows(t, {"PID", "Start (ns)", "End (ns)", "Kernels", "Memcpy", "Memcpy Bytes", "Memset", "GPU Busy (ns)",
                       "Iter"})
  local k = {}
  for i, w in ipairs(want) do
    local g = got[i]
    k[w.pid] = (k[w.pid] or 0) + 1
    local where = string.format("%s iteration %d of pid %d", what, k[w.pid], w.pid)
    T.eq(g[1], w.pid, where .. ": pid")
    T.eq(g[9], k[w.pid], where .. ": number")
    T.eq(g[2], w.start, where .. ": start")
    T.eq(g[3], w.stop, where .. ": end")
    T.eq(g[4], w.kernels, where .. ": kernels")
    T.eq(g[5], w.memcpy, where .. ": memcpy")
    T.eq(g[6], w.bytes, where .. ": memcpy bytes")
    T.eq(g[7], w.memset, where .. ": memset")
    T.eq(g[8], w.busy, where .. ": GPU busy")
  end
  -- the class columns add up to all the GPU time of the iteration
  local c = tables.iteration_classes
  local sums = {}
  for _, name in ipairs(c:columns()) do
    if name:find("%(ns%)$") then
      for i, v in ipairs(c[name]:totable()) do sums[i] = (sums[i] or 0) + v end
    end
  end
  for i, w in ipairs(want) do T.eq(sums[i] or 0, w.total, what .. ": class times of iteration " .. i) end
end

local NAME = "coalesce(n.text, (SELECT value FROM StringIds WHERE id = n.textId))"

return {
  {"nsl.lag_periods: per kernel and lag, the count, median and quartiles of the gaps by their definition", function()
    -- the NCCL export's kernels from SQL, by device, name and start: one group per (device, name)
    local rows = T.sql(nccl, "SELECT deviceId, shortName, start FROM CUPTI_ACTIVITY_KIND_KERNEL " ..
                             "ORDER BY deviceId, shortName, start")
    local gid, start, groups = {}, {}, {}
    for i, r in ipairs(rows) do
      local key = r[1] .. "|" .. r[2]
      if i == 1 or key ~= rows[i - 1][1] .. "|" .. rows[i - 1][2] then groups[#groups + 1] = {} end
      gid[i], start[i] = #groups - 1, int(r[3])
      table.insert(groups[#groups], start[i])
    end
    local L = 8
    local m, med, q1, q3 = nsl.lag_periods(nsl.column(gid, "i64"), nsl.column(start, "i64"), #groups, L)
    T.eq(#m, #groups * L, "one row per group and lag")
    local function quantile(a, q)   -- sorted a: linear between the two neighbours of q * (n - 1)
      local pos = q * (#a - 1)
      local k = math.floor(pos)
      if k >= #a - 1 then return a[#a] * 1.0 end
      return a[k + 1] + (pos - k) * (a[k + 2] - a[k + 1])
    end
    local checked = 0
    for g, list in ipairs(groups) do
      for lag = 1, L do
        local d = {}
        for i = 1, #list - lag do d[#d + 1] = list[i + lag] - list[i] end
        table.sort(d)
        local at = (g - 1) * L + lag
        T.eq(m[at], #d, "count, group " .. g .. " lag " .. lag)
        if #d > 0 then
          T.near(med[at], quantile(d, 0.5), 1e-12, "median, group " .. g .. " lag " .. lag)
          T.near(q1[at], quantile(d, 0.25), 1e-12, "q1, group " .. g .. " lag " .. lag)
          T.near(q3[at], quantile(d, 0.75), 1e-12, "q3, group " .. g .. " lag " .. lag)
          checked = checked + 1
        else
          T.ok(med[at] ~= med[at] or med[at] == nil, "no median without gaps")
        end
      end
    end
    T.ok(checked > #groups, "groups and lags checked")
    -- with a spread, each group's lags stop at its first regular one: the same numbers up to it, none after
    for _, spread in ipairs{0.05, 0.5} do
      local sm, smed, sq1, sq3 = nsl.lag_periods(nsl.column(gid, "i64"), nsl.column(start, "i64"), #groups, L, spread)
      local stopped = 0
      for g = 1, #groups do
        local done = false
        for lag = 1, L do
          local at = (g - 1) * L + lag
          if done then
            T.eq(sm[at], 0, "no differences after the first regular lag, group " .. g .. " lag " .. lag)
          else
            T.eq(sm[at], m[at], "count up to the first regular lag")
            if m[at] > 0 then
              T.eq(smed[at], med[at], "median up to the first regular lag")
              T.eq(sq1[at], q1[at], "q1 up to the first regular lag")
              T.eq(sq3[at], q3[at], "q3 up to the first regular lag")
            end
            done = m[at] >= 2 and med[at] > 0 and q3[at] - q1[at] <= spread * med[at]
            if done and lag < L then stopped = stopped + 1 end
          end
        end
      end
      T.ok(stopped > 0, "some group stops early at spread " .. spread)
    end
    -- a NULL leaves out the gaps it takes part in; ids must come in runs, within range
    local v = nsl.column{10, 20, 0, 40, 55, 5, 9}:gather(nsl.column({0, 1, -1, 3, 4, 5, 6}, "i64"))
    local c, md = nsl.lag_periods(nsl.column({0, 0, 0, 0, 0, 1, 1}, "i64"), v, 2, 2)
    T.eq(table.concat(c:totable(), ","), "2,1,1,0", "gaps at lags 1 and 2 of each group")
    T.eq(md[1], 12.5, "median of 10 and 15")
    T.eq(md[2], 20.0, "the one gap at lag 2 not across the NULL: 40 - 20")
    T.eq(md[3], 4.0, "group 1, lag 1")
    -- every small count of differences (4, 3, 2, 1 at lags 1 to 4), where the quartiles' windows meet the median
    local cnt, mdn, lo, hi = nsl.lag_periods(nsl.column({0, 0, 0, 0, 0}, "i64"), nsl.column({0, 10, 11, 30, 100}, "i64"),
                                             1, 4)
    T.eq(table.concat(cnt:totable(), ","), "4,3,2,1", "differences at lags 1 to 4")
    -- lag 1: 1 10 19 70; lag 2: 11 20 89; lag 3: 30 90; lag 4: 100 (sorted)
    local want = {{14.5, 7.75, 31.75}, {20.0, 15.5, 54.5}, {60.0, 45.0, 75.0}, {100.0, 100.0, 100.0}}
    for lag, w in ipairs(want) do
      T.eq(mdn[lag], w[1], "median at lag " .. lag)
      T.eq(lo[lag], w[2], "q1 at lag " .. lag)
      T.eq(hi[lag], w[3], "q3 at lag " .. lag)
    end
    T.raises(function() nsl.lag_periods(nsl.column({0, 1, 0}, "i64"), nsl.column({1, 2, 3}, "i64"), 2, 1) end,
             "two runs")
    T.raises(function() nsl.lag_periods(nsl.column({0, 2}, "i64"), nsl.column({1, 2}, "i64"), 2, 1) end,
             "out of range")
  end},

  {"range by name: starts, ends and per-iteration work equal SQL range joins", function()
    local tables = T.run_analysis("iterations", {nccl}, {"range=FlashAttnFunc"})
    -- PyTorch names it "FlashAttnFunc, seq = N, op_id = M": the name matches up to ", "
    check_against(tables, sql_iterations(nccl, NAME .. " LIKE 'FlashAttnFunc,%'"), "FlashAttnFunc")
  end},

  {"figures: class bars add up to SQL's GPU time per iteration; the steady-step timeline shows SQL's events", function()
    local want = sql_iterations(nccl, NAME .. " LIKE 'FlashAttnFunc,%'")
    local first = {}   -- the iterations of the first process (the figures draw it)
    for _, w in ipairs(want) do if w.pid == want[1].pid then first[#first + 1] = w end end
    local figs = T.figures("iterations", {nccl}, {"range=FlashAttnFunc", "warmup=1"})
    local bars = assert(figs.iteration_classes, "iteration_classes figure").values
    T.eq(#bars.categories, math.min(#first, 100), "one bar per iteration of the first process")
    for k = 1, #bars.categories do
      T.eq(bars.categories[k], tostring(k), "bar " .. k .. ": iteration number")
      T.eq(bars.totals[k], first[k].total, "bar " .. k .. ": GPU time of the iteration's operations")
    end
    -- the steady iteration of median duration (warm-up: the first), ties by order
    local steady = {}
    for k = 2, #first do steady[#steady + 1] = k end
    table.sort(steady, function(a, b)
      local da, db = first[a].stop - first[a].start, first[b].stop - first[b].start
      return da < db or (da == db and a < b)
    end)
    local it = first[steady[(#steady + 1) // 2]]
    local from, to = it.start, it.stop
    for _, s in ipairs(it.spans) do from, to = math.min(from, s[1]), math.max(to, s[2]) end
    local tl = assert(figs.step_timeline, "step_timeline figure").values
    T.eq(tl.from, from, "window start: the iteration's range or its first GPU operation")
    T.eq(tl.to, to, "window end: the iteration's range or its last GPU operation")
    local ov = string.format("start < %d AND end > %d", to, from)
    T.eq(tl.counts.kernel + tl.counts.nccl,
         T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE " .. ov), "kernels in the window")
    T.eq(tl.counts.nccl, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s " ..
         "ON s.id = k.shortName WHERE s.value LIKE 'nccl%' AND " .. ov), "NCCL kernels in the window")
    T.eq(tl.counts.memset, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE " .. ov),
         "memsets in the window")
    T.eq(tl.counts.nvtx, T.sql1(nccl, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND " .. ov),
         "NVTX ranges in the window")
  end},

  {"range by Lua pattern gives the same iterations", function()
    local a = T.run_analysis("iterations", {nccl}, {"range=FlashAttnFunc"})
    local b = T.run_analysis("iterations", {nccl}, {"range=^Flash%a+Func, seq"})
    T.eq(#b.iterations, #a.iterations, "iterations")
    for _, c in ipairs{"Start (ns)", "End (ns)", "Kernels", "GPU Busy (ns)"} do
      T.eq(b.iterations[c]:sum(), a.iterations[c]:sum(), c)
    end
  end},

  {"range with a domain, memcpy counts and bytes (MPI export)", function()
    local tables = T.run_analysis("iterations", {mpi}, {"range=saxpy"})
    check_against(tables, sql_iterations(mpi, NAME .. " = 'saxpy'"), "saxpy")
    local send = T.run_analysis("iterations", {mpi}, {"range=MPI:MPI_Send"})
    T.eq(#send.iterations, T.sql1(mpi, "SELECT count(*) FROM NVTX_EVENTS AS n WHERE eventType = 59 AND " .. NAME ..
      " = 'MPI_Send'"), "MPI:MPI_Send ranges (domain MPI)")
  end},

  {"prefix names: PyTorch's ', op_id = N' suffixes; only the outermost of nested matches", function()
    -- matching ranges not inside another matching range of their thread (the matches are put in an
    -- indexed temporary table first: the self-join over all of NVTX_EVENTS took seconds)
    local function count(cond)
      return T.sql1(nccl, "CREATE TEMP TABLE m AS SELECT n.rowid AS id, n.globalTid AS tid, n.start, n.end " ..
        "FROM NVTX_EVENTS AS n WHERE eventType IN (59, 60) AND " .. cond(NAME) .. "; " ..
        "CREATE INDEX temp.m_ts ON m(tid, start); " ..
        "SELECT count(*) FROM m AS n WHERE NOT EXISTS (SELECT 1 FROM m AS p WHERE p.tid = n.tid " ..
        "AND p.id <> n.id AND p.start <= n.start AND n.end <= p.end)")
    end
    local tables = T.run_analysis("iterations", {nccl}, {"range=aten::addmm"})
    T.eq(#tables.iterations, count(function(x) return "(" .. x .. " = 'aten::addmm' OR " .. x .. " GLOB 'aten::addmm,*')" end),
      "aten::addmm ranges")
    -- a pattern matching aten::to and aten::_to_copy, which runs inside aten::to
    tables = T.run_analysis("iterations", {nccl}, {"range=^aten::_?to[,_]"})
    local want = count(function(x)
      return "(" .. x .. " GLOB 'aten::to,*' OR " .. x .. " GLOB 'aten::to_*' OR " .. x .. " GLOB 'aten::_to,*' OR " ..
        x .. " GLOB 'aten::_to_*')"
    end)
    T.eq(#tables.iterations, want, "outermost of aten::to / aten::_to_copy")
    T.ok(want < T.sql1(nccl, "SELECT count(*) FROM NVTX_EVENTS WHERE text GLOB 'aten::_to_copy,*' OR text GLOB 'aten::to,*'"),
      "some matches are nested")
  end},

  {"no such range, nothing periodic: one-line failures", function()
    local ok, err = pcall(T.run_analysis, "iterations", {nccl}, {"range=no_such_range_anywhere"})
    T.ok(not ok and nsl.is_error(err) and tostring(err):find("no NVTX range named"), "missing range: " .. tostring(err))
    for _, f in ipairs{"cuda_2021.2", "nvfuser_2024.6"} do
      ok, err = pcall(T.run_analysis, "iterations", {T.data("nsys/" .. f .. ".sqlite")}, {})
      T.ok(not ok and nsl.is_error(err) and tostring(err):find("no iterations found"), f .. ": " .. tostring(err))
    end
    ok, err = pcall(T.run_analysis, "iterations", {T.data("nsys/tiny_2026.1.sqlite")}, {})
    T.ok(not ok and nsl.is_error(err), "tiny export: " .. tostring(err))
  end},

  {"detection: a tiled copy of a real export has the tile period", function()
    local dir = tempdir()
    local path = dir .. "/tiled.sqlite"
    shell(T.shell_quote(T.source_dir .. "/tests/bench/make_tiled.sh") .. " " .. T.shell_quote(h100) .. " 5 " ..
          T.shell_quote(path) .. " > /dev/null")
    local span = tile_span(h100)
    local tables, out = T.run_analysis("iterations", {path}, {})
    local t = tables.iterations
    T.eq(#t, 4, "5 tiles: 4 periods between the first marker of each tile")
    local kernels = T.sql1(h100, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    for i, v in ipairs(T.rows(t, {"Duration (ns)", "Kernels", "Memcpy"})) do
      T.eq(v[1], span, "iteration " .. i .. " lasts one tile")
      T.eq(v[2], kernels, "iteration " .. i .. " has every kernel of one tile")
      T.eq(v[3], T.sql1(h100, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"), "memcpy of iteration " .. i)
    end
    T.ok(out.items[1].text:find("marker kernel"), "detected by a marker kernel")
    local s = tables.steady_state
    T.eq(s["Warm-up"][1], 1, "warm-up")
    T.eq(s["Med (ns)"][1], span, "steady median")
    T.eq(s["StdDev (ns)"][1], 0.0, "steady std")
    shell("rm -rf " .. T.shell_quote(dir))
  end},

  {"detection: planted NVTX step ranges, warm-up left out of the steady state", function()
    local dir = tempdir()
    local path = dir .. "/steps.sqlite"
    shell(T.shell_quote(T.source_dir .. "/tests/bench/make_tiled.sh") .. " " .. T.shell_quote(h100) .. " 6 " ..
          T.shell_quote(path) .. " > /dev/null")
    local span, lo = tile_span(h100)
    -- one 'train_step' range per tile on the thread with the most NVTX ranges,
    -- lasting 0.99, 0.8, then 0.5 of a tile (the first two slow: warm-up)
    local gt = T.sql1(h100, "SELECT globalTid FROM NVTX_EVENTS GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")
    local frac = {0.99, 0.8, 0.5, 0.5, 0.5, 0.5}
    local sql = {"BEGIN;"}
    for k = 0, 5 do
      local s = lo - 1000 + k * span
      sql[#sql + 1] = string.format("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) " ..
        "VALUES (%d, %d, 59, 'train_step', %d);", s, s + math.floor(frac[k + 1] * span), gt)
    end
    sql[#sql + 1] = "COMMIT;"
    T.sql_exec(path, table.concat(sql, "\n"))
    local tables, out = T.run_analysis("iterations", {path}, {})
    T.ok(out.items[1].text:find("train_step"), "detected the planted range: " .. out.items[1].text)
    local byname = T.run_analysis("iterations", {path}, {"range=train_step"})
    check_against(tables, sql_iterations(path, NAME .. " = 'train_step'"), "train_step")
    T.eq(tables.iterations["Kernels"]:sum(), byname.iterations["Kernels"]:sum(), "same as by name")
    local s = tables.steady_state
    T.eq(s["Warm-up"][1], 2, "warm-up: the first and the slow second step")
    T.eq(s["Steady"][1], 4, "steady iterations")
    T.eq(s["Med (ns)"][1], math.floor(0.5 * span), "steady median")
    local w = T.run_analysis("iterations", {path}, {"range=train_step", "warmup=0"})
    T.eq(w.steady_state["Steady"][1], 6, "--arg warmup=0 keeps all")
    shell("rm -rf " .. T.shell_quote(dir))
  end},

  {"detection: steps hold GPU work (SQL) and have even periods; irregular empty ranges are no steps", function()
    local dir = tempdir()
    local path = dir .. "/steps.sqlite"
    shell(T.shell_quote(T.source_dir .. "/tests/bench/make_tiled.sh") .. " " .. T.shell_quote(h100) .. " 6 " ..
          T.shell_quote(path) .. " > /dev/null")
    local span, lo = tile_span(h100)
    local gt = T.sql1(h100, "SELECT globalTid FROM NVTX_EVENTS GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")
    local function plant(db, name, starts, stops, tid)
      local sql = {"BEGIN;"}
      for k = 1, #starts do
        sql[#sql + 1] = string.format("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) " ..
          "VALUES (%d, %d, 59, '%s', %d);", starts[k], stops[k], name, tid)
      end
      sql[#sql + 1] = "COMMIT;"
      T.sql_exec(db, table.concat(sql, "\n"))
    end
    -- a cuDF-like range of another process (nothing launched there) on a copy of the
    -- export: starts at 1.150, 3.188, 3.189, 3.197, 3.207 and 3.218 s, each lasting to
    -- just before the next (periods 2,038, 0.55, 8.5, 10.2 and 10.8 ms)
    local other = ((T.sql1(h100, "SELECT max((globalTid >> 24) & 16777215) FROM NVTX_EVENTS") + 1) << 24) + 1
    local cudf = T.copy("nsys/pytorch_h100_2gpu_2026.2.sqlite")
    local first = T.sql1(cudf, "SELECT min(start) FROM NVTX_EVENTS")
    local at = {1150000000, 3188000000, 3188550000, 3197050000, 3207250000, 3218050000}
    local starts, stops = {}, {}
    for k, t in ipairs(at) do starts[k] = first + t; stops[k] = first + (at[k + 1] or t + 10000000) - 1000 end
    plant(cudf, "cudf_read", starts, stops, other)
    -- SQL: none of them holds GPU work: no kernel of that process at all
    T.eq(T.sql1(cudf, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE (globalPid >> 24) & 16777215 = " ..
                      (other >> 24)), 0, "no kernel in the cuDF-like process")
    local st, err = iterations.steps(assert(nsl.open{cudf}), {})
    T.ok(st and st.it.mode == "kernel", "the irregular empty ranges are no steps: " .. tostring(st and st.how or err))
    os.remove(cudf)
    -- an even train_step range, one per tile, on the busiest thread: each holds kernels
    local ts, te = {}, {}
    for k = 0, 5 do ts[k + 1] = lo - 1000 + k * span; te[k + 1] = ts[k + 1] + math.floor(0.9 * span) end
    plant(path, "train_step", ts, te, gt)
    st = assert(iterations.steps(assert(nsl.open{path}), {}))
    T.eq(st.it.mode, "range", "the even range is found: " .. st.how)
    T.eq(st.it.name, "train_step", "the even range")
    for _, w in ipairs(sql_iterations(path, NAME .. " = 'train_step'")) do
      T.ok(w.kernels > 0, string.format("SQL: the step from %d holds kernels (%d)", w.start, w.kernels))
    end
    T.eq(#st.windows, 6, "six steps")
    T.eq(st.windows.device[1], nil, "range steps are per process, not per device")
    T.eq(st.windows.pid[1], (gt >> 24) & 16777215, "the range's process")
    T.eq(st.windows.dur:sum(), (st.windows.stop - st.windows.start):sum(), "dur = stop - start")
    -- an even range of the other process, more instances than train_step, over the
    -- whole run: regular, but none holds GPU work, so it is no step
    local es, ee = {}, {}
    for k = 0, 7 do es[k + 1] = lo + k * (6 * span // 8); ee[k + 1] = es[k + 1] + (6 * span // 8) - 1000 end
    plant(path, "idle_poll", es, ee, other)
    st = assert(iterations.steps(assert(nsl.open{path}), {}))
    T.eq(st.it.name, "train_step", "the even range without GPU work is passed over: " .. st.how)
    shell("rm -rf " .. T.shell_quote(dir))
  end},

  {"warm-up rule and statistics", function()
    T.eq(iterations.warmup({10, 10, 10}), 1, "first always")
    T.eq(iterations.warmup({10, 10}), 0, "fewer than 3: none")
    T.eq(iterations.warmup({50, 30, 20, 10, 10, 10, 10, 10}), 3, "slow leading ones")
    T.eq(iterations.warmup({50, 30, 30, 30, 30, 30}, -1), 1, "second not slower")
    T.eq(iterations.warmup({9, 9, 9, 9, 9, 9, 9, 9}, 3), 3, "fixed")
    T.eq(iterations.warmup({9, 9}, 5), 2, "fixed, capped")
    T.eq(iterations.warmup({90, 80, 70, 60, 10, 10}), 3, "at most half")
    local d = iterations.describe({4, 1, 3, 2})
    T.eq(d.median, 2.5, "median")
    T.eq(d.mean, 2.5, "mean")
    T.near(d.std, math.sqrt(5 / 3), 1e-12, "sample std")
    T.eq(d.min, 1, "min")
    T.eq(d.max, 4, "max")
  end},
  {"JAX: the step program's executions per device, equal to nsys-jax's steady module frame (golden)", function()
    local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
    local D = T.data("nsys-jax")
    local procs = {}
    for p = 0, 3 do procs[p + 1] = D .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end
    local tables, out = T.run_analysis("iterations", procs)
    local it = tables.iterations
    T.eq(#it, 20, "5 executions of pjit__wrapped_step_fn on each of 4 devices")
    local mine = {}
    for i = 1, #it do mine[it.Device[i] .. "|" .. (it.Iter[i] - 1)] = i end
    -- nsys-jax's steady rows: the same durations, and they are the executions not marked warm-up
    local n, sum, cnt = 0, 0, 0
    for _, g in ipairs(J.csv_records(D .. "/golden/combined4/module_frame_steady_aligned.csv.gz")) do
      if g.Name == "pjit__wrapped_step_fn" then
        local i = mine[g.Device .. "|" .. g.ProgramExecution]
        T.ok(i, "golden execution " .. g.Device .. "/" .. g.ProgramExecution)
        T.near(it["Duration (ns)"][i] * 1e-6, tonumber(g.ProjDurMs), 1e-9, "duration")
        T.eq(it["Warm-up"][i], "", "steady in nsys-jax, steady here")
        n = n + 1
        if g.ProgramId == "25fa0b3e673a92036f22550cd7bcb068" then
          sum, cnt = sum + tonumber(g.ProjDurMs), cnt + 1
        end
      end
    end
    T.eq(n, 12, "golden steady executions")
    T.eq(it["Warm-up"]:eq("yes"):count(), 8, "the others are warm-up")
    T.near(sum / cnt, 126.5079655556, 1e-9, "golden steady ms/step of the devices of one fingerprint")
    -- aligned: iteration k starts on every device within a few ms once warm
    local al = tables.alignment
    for i = 1, #al do
      if al.Iter[i] >= 3 then T.ok(al["Start spread (ns)"][i] < 5e6, "iteration " .. al.Iter[i] .. " lines up") end
    end
    T.eq(#tables.steady_state, 4, "steady state per device")
    T.ok(out, "ran")
    -- one process alone (and without its metadata files): nsys-jax's summary of proc0, 127.21(31) ms
    local dir = J.tmpdir()
    local bare = J.variant(procs[1], dir .. "/bare.zip", "rm -f *-metadata.parquet")
    for _, path in ipairs{procs[1], bare} do
      local t = T.run_analysis("iterations", {path})
      local st = t.steady_state
      T.eq(st.Steady[1], 3, "steady executions")
      T.near(st["Avg (ns)"][1] * 1e-6, 127.21, 0.005 / 127.21, "proc0 steady mean (golden 127.21(31) ms)")
      T.near(st["StdDev (ns)"][1] * 1e-6, 0.31, 0.005, "proc0 steady std (golden 0.31 ms)")
    end
    J.cleanup()
  end},

  {"JAX: one step time for iterations, diagnose, straggler and jax_summary, nsys-jax's steady executions (golden)", function()
    local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
    local D = T.data("nsys-jax")
    local procs = {}
    for p = 0, 3 do procs[p + 1] = D .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end
    -- the oracle: nsys-jax's steady, aligned module frame (its warm-up rule), the step program's rows
    local durs = {}
    for _, g in ipairs(J.csv_records(D .. "/golden/combined4/module_frame_steady_aligned.csv.gz")) do
      if g.Name == "pjit__wrapped_step_fn" then durs[#durs + 1] = tonumber(g.ProjDurMs) * 1e6 end
    end
    T.eq(#durs, 12, "golden steady executions")
    local med, sum = T.median(durs), 0
    for _, v in ipairs(durs) do sum = sum + v end
    local _, it = T.run_analysis("iterations", procs)
    local _, dg = T.run_analysis("diagnose", procs)
    local _, js = T.run_analysis("jax_summary", procs, {"programs=structure"})
    T.ok(math.abs(it.values.step_ns - med) <= 1, "iterations: median steady step " .. it.values.step_ns .. " vs " .. med)
    T.eq(dg.values.step_ns, it.values.step_ns, "diagnose works with the same step")
    local _, sg = T.run_analysis("straggler", procs)
    T.eq(sg.values.step_source, "iterations", "straggler: the training step, not the interval between collectives")
    T.eq(sg.values.step_ns, it.values.step_ns, "straggler works with the same step")
    T.ok(sg.values.collective_interval_ns < sg.values.step_ns / 10, "collectives come many times a step")
    T.near(it.values.steady_mean_ns, sum / #durs, 1e-9, "iterations: mean steady step")
    local ms = js.values.steady_step_ms
    local n = 0
    for _, v in pairs(ms) do if math.abs(v - sum / #durs * 1e-6) <= 1e-9 * v then n = n + 1 end end
    T.eq(n, 1, "jax_summary: the step program's mean over the same steady executions")
    local st = assert(iterations.steps(assert(nsl.open(procs)), {}))
    local warm = 0
    for _, c in pairs(st.warm) do warm = warm + c end
    T.eq(warm, 8, "two warm-up executions per device (nsys-jax's rule)")
    J.cleanup()
  end},

  {"JAX figure: the step-time lines equal nsys-jax's module frame, warm-up as it leaves it out", function()
    local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
    local D = T.data("nsys-jax")
    local procs = {}
    for p = 0, 3 do procs[p + 1] = D .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end
    local figs = T.figures("iterations", procs)
    local v = assert(figs.step_time, "step_time figure").values
    local want, steady, iters, devices = {}, {}, 0, {}
    for _, g in ipairs(J.csv_records(D .. "/golden/combined4/module_frame_all.csv.gz")) do
      if g.Name == "pjit__wrapped_step_fn" then
        local k = tonumber(g.ProgramExecution) + 1
        want[g.Device .. "|" .. k] = tonumber(g.ProjDurMs)
        iters, devices[g.Device] = math.max(iters, k), true
      end
    end
    for _, g in ipairs(J.csv_records(D .. "/golden/combined4/module_frame_steady_aligned.csv.gz")) do
      if g.Name == "pjit__wrapped_step_fn" then steady[g.Device .. "|" .. (tonumber(g.ProgramExecution) + 1)] = true end
    end
    local ndev = 0
    for _ in pairs(devices) do ndev = ndev + 1 end
    T.eq(#v.series, ndev, "one line per device")
    for _, s in ipairs(v.series) do
      local dv = assert(s.label:match("^device (%d+)$"), "series label " .. s.label)
      T.eq(#s.x, iters, s.label .. ": one point per iteration")
      for k = 1, #s.x do
        T.eq(s.x[k], k, s.label .. ": iterations in order")
        T.near(s.y[k] * 1e-6, want[dv .. "|" .. k], 1e-9, s.label .. " iteration " .. k)
      end
    end
    -- warm-up: the iterations some device leaves out of nsys-jax's steady frame
    local warm = {}
    for k = 1, iters do
      local w = false
      for dv in pairs(devices) do w = w or not steady[dv .. "|" .. k] end
      if w then warm[#warm + 1] = k end
    end
    T.eq(table.concat(v.warmup, ","), table.concat(warm, ","), "warm-up iterations")
    T.eq(#warm, 2, "nsys-jax's rule: the compiled execution and one more with communication")
  end},
}
