-- lua/nsl/engine/tui_model.lua (what nsl tui shows, without a terminal) on real
-- exports, against the GPU operations and NVTX ranges read through the
-- sqlite3 program: the lanes (one per device and stream; NVTX per thread),
-- per character column of random windows the events that overlap it and
-- the time they cover (brute force over the SQL rows), the events of a
-- window, snapping to the next and previous start and kernel, the name filter and the
-- minimum duration, and the details of kernels (their row and launching
-- CUDA call).
local T = ...
local nsl = require("nsl")
local model = require("nsl.engine.tui_model")

local files = {"pytorch_nccl_2gpu_2026.2", "cuda_2021.2", "mpi_cuda_rank0_2022.2"}
local function path(f) return T.data("nsys/" .. f .. ".sqlite") end
local function int(s) return math.tointeger(tonumber(s)) end

local function has(f, t) return T.sql1(path(f), "SELECT count(*) FROM sqlite_master WHERE name = '" .. t .. "'") == 1 end

-- GPU operations per (device, stream) from SQL: {key = {{start, stop, name}...}}, keys in order.
local function sql_ops(f)
  local parts = {}
  for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
    if has(f, t) then
      local name = t:match("KERNEL") and "(SELECT value FROM StringIds WHERE id = shortName)" or "''"
      parts[#parts + 1] = "SELECT deviceId, streamId, start, end, " .. name .. " FROM " .. t
    end
  end
  local by, keys = {}, {}
  for _, r in ipairs(T.sql(path(f), table.concat(parts, " UNION ALL ") .. " ORDER BY 1, 2, 3")) do
    local k = string.format("GPU%s s%s", r[1], r[2])
    if not by[k] then by[k] = {} keys[#keys + 1] = k end
    table.insert(by[k], {int(r[3]), int(r[4]), r[5]})
  end
  return by, keys
end

local function loaded(f)
  local tr = assert(nsl.open({path(f)}))
  local m = model.new(tr)
  for _, s in ipairs(m:stages()) do s.run() end
  return m, tr
end

local function gpu_lane(m, label)
  for _, l in ipairs(m.lanes) do if l.kind == "gpu" and l.label == label then return l end end
end

-- Brute force over rows of a column [t0, t1): events overlapping it (starting in it, or before it and
-- running into it), the covered ns, and whether any two of them overlap each other.
local function brute(rows, t0, t1)
  local n, iv, sum = 0, {}, 0
  for _, r in ipairs(rows) do
    if (r[1] >= t0 and r[1] < t1) or (r[1] < t0 and r[2] > t0) then
      n = n + 1
      iv[#iv + 1] = {r[1], r[2]}
      sum = sum + math.max(0, math.min(r[2], t1) - math.max(r[1], t0))
    end
  end
  local union = T.union_len(iv, t0, t1)
  return n, union, T.union_len(iv) ~= (function() local x = 0 for _, v in ipairs(iv) do x = x + v[2] - v[1] end return x end)()
end

local tests = {}

for _, f in ipairs(files) do
  tests[#tests + 1] = {f .. ": a lane per GPU stream, per column the events and covered time of SQL's rows", function()
    local m = loaded(f)
    local by, keys = sql_ops(f)
    local labels = {}
    for _, l in ipairs(m.lanes) do if l.kind == "gpu" then labels[#labels + 1] = l.label end end
    T.eq(table.concat(labels, ","), table.concat(keys, ","), "GPU lanes in (device, stream) order")
    local lo, hi = m:span()
    local seed = 7
    local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648 return seed % n end
    for _, k in ipairs(keys) do
      local l = gpu_lane(m, k)
      local rows = by[k]
      T.eq(l.events, #rows, k .. ": events")
      for trial = 1, 6 do
        -- windows from the whole trace down to a few µs around an event
        local span = trial == 1 and (hi - lo) or math.max(1000, (hi - lo) >> (trial * 3))
        local at = rows[rnd(#rows) + 1][1]
        local from = trial == 1 and lo or at - span // 3
        local to, ncols = from + span, 40 + rnd(80)
        local count, busy = m:cells(l, from, to, ncols)
        for c = 1, ncols do
          local t0, t1 = from + (span * (c - 1)) // ncols, from + (span * c) // ncols
          local n, b, overlapping = brute(rows, t0, t1)
          -- covered time: exact for serial events (a stream's, mostly); where events of the stream overlap,
          -- at least their union and at most the column
          local b_ok = busy[c] == b or (overlapping and busy[c] >= b and busy[c] <= t1 - t0)
          if count[c] ~= n or not b_ok then
            T.eq(count[c] .. "/" .. busy[c], n .. "/" .. b, string.format("%s column %d [%d, %d)", k, c, t0, t1))
          end
        end
        local n = 0
        for _, r in ipairs(rows) do if r[1] < to and r[2] > from then n = n + 1 end end
        T.eq(m:count_in(l, from, to), n, k .. ": events in the window")
        -- snapping from a time: the next start after it, the last before it
        local t = from + span // 2
        local nxt, prv
        for _, r in ipairs(rows) do
          if r[1] > t and not nxt then nxt = r[1] end
          if r[1] < t then prv = r[1] end
        end
        local rn, rp = m:step(l, t, 1), m:step(l, t, -1)
        T.eq(rn and (m:times(l, rn)), nxt, k .. ": next start")
        T.eq(rp and (m:times(l, rp)), prv, k .. ": previous start")
        -- snapping to kernels: memcpy and memset (no name in SQL's rows) passed over
        local knext, kprev
        for _, r in ipairs(rows) do
          if r[3] ~= "" and r[1] > t and not knext then knext = r[1] end
          if r[3] ~= "" and r[1] < t then kprev = r[1] end
        end
        local sn, sp = m:snap(l, t, 1), m:snap(l, t, -1)
        T.eq(sn and (m:times(l, sn)), knext, k .. ": next kernel")
        T.eq(sp and (m:times(l, sp)), kprev, k .. ": previous kernel")
      end
    end
  end}
end

tests[#tests + 1] = {"the name filter and the minimum duration keep SQL's events", function()
  local f = "pytorch_nccl_2gpu_2026.2"
  local m = loaded(f)
  local by = sql_ops(f)
  local lo, hi = m:span()
  for _, case in ipairs{{"SendRecv", 0}, {"^nvjet", 0}, {"", 100000}, {"elementwise", 20000}} do
    assert(m:set_filter(case[1], case[2]))
    for k, rows in pairs(by) do
      local n = 0
      for _, r in ipairs(rows) do
        local name_ok = case[1] == "" or (r[3] ~= "" and nsl.regex(case[1]):search(r[3]))
        if name_ok and r[2] - r[1] >= case[2] then n = n + 1 end
      end
      T.eq(m:count_in(gpu_lane(m, k), lo, hi + 1), n, string.format("%s /%s/ >= %d", k, case[1], case[2]))
    end
  end
  T.ok(not m:set_filter("(", 0), "a bad expression is refused")
  assert(m:set_filter("", 0))
  T.eq(m:count_in(gpu_lane(m, "GPU0 s7"), lo, hi + 1), #by["GPU0 s7"], "no filter: every event")
end}

tests[#tests + 1] = {"the details of kernels are their SQL rows and launching calls", function()
  local f = "pytorch_nccl_2gpu_2026.2"
  local m = loaded(f)
  local rows = T.sql(path(f), [[
    SELECT k.start, k.end, s.value, gridX || ',' || gridY || ',' || gridZ, blockX || ',' || blockY || ',' || blockZ,
           deviceId, streamId, (SELECT value FROM StringIds WHERE id = r.nameId), r.globalTid % 16777216
    FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
    LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId AND r.globalTid >> 24 = k.globalPid >> 24
    WHERE k.rowid % 97 = 0 ORDER BY k.start]])
  T.ok(#rows > 10, "kernels sampled")
  for _, r in ipairs(rows) do
    local l = gpu_lane(m, string.format("GPU%s s%s", r[6], r[7]))
    local row = m:at(l, int(r[1]))
    local _, d = m:details(l, row)
    T.eq(d.start, int(r[1]), "start")
    T.eq(d.dur, int(r[2]) - int(r[1]), "dur")
    T.eq(d.name, r[3], "name")
    T.eq(d.grid, r[4], "grid")
    T.eq(d.block, r[5], "block")
    T.eq(d.device, int(r[6]), "device")
    T.eq(d.stream, int(r[7]), "stream")
    T.eq(d.api, (r[8]:gsub("_v%d+$", "")), "launching call")   -- nsys stats drops the version suffix, as nsl
    T.eq(d.api_tid, int(r[9]), "launching thread")
  end
end}

tests[#tests + 1] = {"NVTX lanes: a thread's ranges on a lane per nesting depth, all of SQL's ranges", function()
  local f = "pytorch_nccl_2gpu_2026.2"
  local m = loaded(f)
  local total, threads = 0, {}
  for _, l in ipairs(m.lanes) do
    if l.kind == "nvtx" then
      total = total + l.events
      threads[l.tid] = true
      local count = m:cells(l, m:span(), select(2, m:span()) + 1, 200)
      for c = 1, 200 do T.ok(count[c] >= 0, "count") end
    end
  end
  T.eq(total, T.sql1(path(f), "SELECT count(*) FROM NVTX_EVENTS WHERE end IS NOT NULL AND end >= start"), "ranges")
  local n = 0
  for _ in pairs(threads) do n = n + 1 end
  T.eq(n, T.sql1(path(f), "SELECT count(DISTINCT globalTid) FROM NVTX_EVENTS WHERE end IS NOT NULL"), "threads")
end}

tests[#tests + 1] = {"the stages run in a coroutine (as the TUI loads) give SQL's lanes and the cells of a synchronous load", function()
  for _, f in ipairs(files) do
    local sync = loaded(f)
    local m = model.new(assert(nsl.open({path(f)})))
    local yields, kinds = 0, {}
    for _, stage in ipairs(m:stages()) do
      local co = coroutine.create(stage.run)
      while true do
        local ok, what = coroutine.resume(co)
        assert(ok, what)
        if coroutine.status(co) == "dead" then break end
        yields, kinds[what] = yields + 1, true
        T.ok(what == "wait" or what == "busy", "yields wait or busy, not " .. tostring(what))
      end
      T.eq(m.job, nil, f .. ": no job in flight after " .. stage.label)
    end
    T.ok(kinds.busy, f .. ": the main-thread work is cut into slices")
    -- the GPU lanes and their events against SQL
    local by, keys = sql_ops(f)
    local labels = {}
    for _, l in ipairs(m.lanes) do
      if l.kind == "gpu" then
        labels[#labels + 1] = l.label
        T.eq(l.events, #by[l.label], f .. " " .. l.label .. ": events")
      end
    end
    T.eq(table.concat(labels, ","), table.concat(keys, ","), f .. ": GPU lanes")
    if has(f, "NVTX_EVENTS") then
      local total = 0
      for _, l in ipairs(m.lanes) do if l.kind == "nvtx" then total = total + l.events end end
      T.eq(total, T.sql1(path(f), "SELECT count(*) FROM NVTX_EVENTS WHERE end IS NOT NULL AND end >= start"),
           f .. ": NVTX ranges")
    end
    -- every lane, cell by cell, as loaded synchronously
    T.eq(#m.lanes, #sync.lanes, f .. ": lanes")
    local lo, hi = sync:span()
    T.eq(select(1, m:span()), lo, f .. ": span start")
    T.eq(select(2, m:span()), hi, f .. ": span end")
    for i, l in ipairs(m.lanes) do
      local s = sync.lanes[i]
      T.eq(l.label, s.label, f .. ": lane " .. i)
      for _, w in ipairs{{lo, hi + 1}, {lo + (hi - lo) // 3, lo + (hi - lo) // 3 + (hi - lo) // 50 + 1}} do
        local c1, b1, r1, k1 = m:cells(l, w[1], w[2], 97)
        local c2, b2, r2, k2 = sync:cells(s, w[1], w[2], 97)
        for c = 1, 97 do
          if c1[c] ~= c2[c] or b1[c] ~= b2[c] or r1[c] ~= r2[c] or k1[c] ~= k2[c] then
            T.eq(table.concat({c1[c], b1[c], r1[c], k1[c]}, "/"), table.concat({c2[c], b2[c], r2[c], k2[c]}, "/"),
                 string.format("%s %s column %d", f, l.label, c))
          end
        end
      end
    end
  end
end}

tests[#tests + 1] = {"the NVTX tree's columns read in a coroutine, then the tree: the nvtx analysis's", function()
  local f = "pytorch_nccl_2gpu_2026.2"
  local m = loaded(f)
  local co = coroutine.create(function() m:load_tree_columns() end)
  repeat assert(coroutine.resume(co)) until coroutine.status(co) == "dead"
  local tree = m:load_tree()
  -- top-level FlashAttnFunc: its instances and CPU time from SQL (PyTorch's ", seq = N" suffixes merged)
  local i
  for k = 1, #tree.nodes do
    if tree.nodes.name[k] == "FlashAttnFunc" and tree.nodes.depth[k] == 0 then i = k end
  end
  T.ok(i, "a FlashAttnFunc node")
  local where = "(text = 'FlashAttnFunc' OR text GLOB 'FlashAttnFunc, seq = *')"
  T.eq(tree.nodes.instances[i], T.sql1(path(f), "SELECT count(*) FROM NVTX_EVENTS WHERE " .. where), "instances")
  T.eq(tree.nodes.cpu_time[i], T.sql1(path(f), "SELECT sum(end - start) FROM NVTX_EVENTS WHERE " .. where), "CPU time")
end}

tests[#tests + 1] = {"k on every tree node: its GPU operations by name, every operation once (SQL count)", function()
  local f = "pytorch_nccl_2gpu_2026.2"
  local m = loaded(f)
  local tree = m:load_tree()
  local nodes, total, gpu = tree.nodes, 0, 0
  for i = 1, #nodes do
    local t = m:node_kernels(nodes.node[i])
    if nodes.ops_self[i] == 0 then
      T.eq(t, nil, nodes.name[i] .. ": no GPU work, no table")
    else
      T.eq(t.ops:sum(), nodes.ops_self[i], nodes.name[i] .. ": its own operations")
      total, gpu = total + t.ops:sum(), gpu + t.gpu_time:sum()
    end
  end
  local q = "SELECT count(*), sum(end - start) FROM (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL " ..
            "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET)"
  local all = T.sql(path(f), q)[1]
  T.eq(total + tree.outside.ops, math.tointeger(tonumber(all[1])), "every GPU operation in one node or outside (SQL)")
  T.eq(gpu + tree.outside.gpu_time, math.tointeger(tonumber(all[2])), "and its time (SQL)")
end}

tests[#tests + 1] = {"nsys-jax archives: XLA lanes per device hold every range the archive projected (its CSV copy)", function()
  local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
  for p = 0, 1 do
    local tr = assert(nsl.open({T.data(string.format("nsys-jax/pax_fsdp4_4proc_proc%d.zip", p))}))
    local m = model.new(tr)
    for _, s in ipairs(m:stages()) do s.run() end
    local events, first = 0, nil
    for _, l in ipairs(m.lanes) do
      if l.kind == "xla" then
        events = events + l.events
        first = first or l
      end
    end
    -- oracle: the archive's trace.parquet as its CSV copy, named rows; nsys-jax's device of process p
    local rows = 0
    for _, r in ipairs(J.csv_records(T.data(string.format("nsys-jax/mini/proc%d/nvtx_gpu_proj_trace.trace.csv.gz", p)))) do
      if r.Name ~= "" then rows = rows + 1 end
    end
    T.eq(events, rows, "proc" .. p .. ": every projected range on an XLA lane")
    T.eq(first and first.label, string.format("GPU%d XLA", p), "proc" .. p .. ": the lane of its device")
    T.ok(m.lanes[1].kind == "xla", "proc" .. p .. ": the GPU lanes first")
    local r = m:step(first, select(1, m:span()) - 1, 1)
    local d = select(2, m:details(first, r))
    T.eq(d.device, p, "proc" .. p .. ": details name the device")
  end
end}

return tests
