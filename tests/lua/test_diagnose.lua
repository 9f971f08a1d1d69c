-- diagnose: every check on real exports and on copies with a planted
-- problem (SQL through sqlite3 on the copy, the real schema kept), its
-- numbers against an oracle outside nsl: SQL of the rule's definition over
-- the same file, or a brute-force sweep in plain Lua over the rows SQL
-- returns.
local T = ...

local tiny = "nsys/tiny_2026.1.sqlite"
local h100 = "nsys/pytorch_h100_2gpu_2026.2.sqlite"
local ncclf = "nsys/pytorch_nccl_2gpu_2026.2.sqlite"
local cuda2021 = "nsys/cuda_2021.2.sqlite"
local nvfuser = "nsys/nvfuser_2024.6.sqlite"
local mpi = "nsys/mpi_cuda_rank0_2022.2.sqlite"
local osrt = "nsys/osrt_sampling_2025.5.sqlite"

local PID = "((globalPid >> 24) & 16777215)"
local TPID = "((globalTid >> 24) & 16777215)"

-- diagnose on paths (one path or a list) with args; returns its findings.
local function diag(paths, args)
  if type(paths) == "string" then paths = {paths} end
  local _, out = T.run_analysis("diagnose", paths, args)
  return out.findings, out
end

-- The findings of check id, per rank: a cause found on several ranks is one
-- finding whose parts are the per-rank ones.
local function by_id(fs, id)
  local list = {}
  for _, f in ipairs(fs) do
    if f.id == id then
      if f.parts then for _, p in ipairs(f.parts) do list[#list + 1] = p end else list[#list + 1] = f end
    end
  end
  return list
end

local function merged(fs, id)
  local n = 0
  for _, f in ipairs(fs) do if f.id == id then n = n + 1 end end
  return n
end

local function none_of(fs, id, what)
  T.eq(#by_id(fs, id), 0, (what or "") .. ": findings " .. id)
end

local function has_table(path, name)
  return T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" .. name .. "'") == 1
end

-- The active span of a single-report export: first start to last end of its
-- kernels, memcpy, memset and CUDA runtime calls.
local function span(path)
  local parts = {}
  for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                     "CUPTI_ACTIVITY_KIND_RUNTIME"} do
    if has_table(path, t) then parts[#parts + 1] = "SELECT start, end FROM " .. t end
  end
  local r = T.sql(path, "SELECT min(start), max(end) FROM (" .. table.concat(parts, " UNION ALL ") .. ")")[1]
  return math.tointeger(r[2]) - math.tointeger(r[1])
end

-- A string id for value in a copy (added when missing).
local function string_id(path, value)
  T.sql_exec(path, string.format("INSERT INTO StringIds (id, value) SELECT (SELECT max(id) + 1 FROM StringIds), " ..
    "'%s' WHERE NOT EXISTS (SELECT 1 FROM StringIds WHERE value = '%s');", value, value))
  return T.sql1(path, "SELECT id FROM StringIds WHERE value = '" .. value .. "'")
end

-- Renames the kernels of one device whose short name matches `like` (an SQL
-- LIKE pattern) to `name` (short and demangled), in the copy at path.
local function rename_kernels(path, device, like, name)
  local id = string_id(path, name)
  T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = " .. id .. ", demangledName = " .. id ..
    " WHERE deviceId = " .. device .. " AND shortName IN (SELECT id FROM StringIds WHERE value LIKE '" .. like .. "');")
end

-- {pid -> {n, total}} from SQL rows (pid, n, total).
local function per_pid(rows)
  local m = {}
  for _, r in ipairs(rows) do m[tonumber(r[1])] = {n = tonumber(r[2]), total = math.tointeger(tonumber(r[3]))} end
  return m
end

-- Checks per-process findings of a blocking-call rule against SQL.
local function check_calls(path, fs, id, sql)
  local want = per_pid(T.sql(path, sql))
  local got = by_id(fs, id)
  local n = 0
  for _ in pairs(want) do n = n + 1 end
  T.eq(#got, n, id .. ": one finding per process")
  local window = span(path)
  for _, f in ipairs(got) do
    local w = want[f.where.pid]
    T.ok(w, id .. ": pid " .. tostring(f.where.pid) .. " expected")
    T.eq(f.total_ns, w.total, id .. ": blocked time of pid " .. f.where.pid)
    -- what the job loses is the GPU idle the calls claim in the ledger, on the job's one base (the run)
    T.eq(math.type(f.lost_ns), "integer", id .. ": lost_ns")
    T.ok(f.lost_ns >= 0 and f.lost_ns <= window, id .. ": lost within the run")
    T.near(f.share, f.lost_ns / window, 1e-9, id .. ": share of the job's wall time")
    if f.step_ns then T.eq(f.cost_ns, math.floor(w.total / window * f.step_ns + 0.5), id .. ": cost per step")
    else T.eq(f.cost_ns, w.total, id .. ": cost over the run") end
  end
  return got
end

-- The runtime calls of memory operations of table `tab` whose name is LIKE `like`.
local function memop_calls(tab, where)
  return string.format("SELECT %s AS p, count(*), sum(r.end - r.start) FROM %s m " ..
    "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = m.correlationId AND ((r.globalTid >> 24) & 16777215) = " ..
    "((m.globalPid >> 24) & 16777215) JOIN StringIds s ON s.id = r.nameId WHERE %s GROUP BY p", "((m.globalPid >> 24) & 16777215)",
    tab, where)
end

local PAGEABLE = memop_calls("CUPTI_ACTIVITY_KIND_MEMCPY", "(m.srcKind = 0 OR m.dstKind = 0) AND s.value LIKE 'cudaMemcpy%Async%'")
local SYNC_MEMCPY = memop_calls("CUPTI_ACTIVITY_KIND_MEMCPY", "s.value LIKE 'cudaMemcpy%' AND s.value NOT LIKE '%async%'")
local SYNC_MEMSET = memop_calls("CUPTI_ACTIVITY_KIND_MEMSET", "m.memKind IN (1, 4) AND s.value LIKE 'cudaMemset%' " ..
  "AND s.value NOT LIKE '%async%'")
local SYNC_API = "SELECT " .. TPID .. " AS p, count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r " ..
  "JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cudaStreamSynchronize%' GROUP BY p"

-- ---------------------------------------------------------------- interval oracles (plain Lua)

local union_len = T.union_len

-- |A - B|
local function minus_len(a, b)
  local ab = {}
  for _, x in ipairs(a) do ab[#ab + 1] = x end
  for _, x in ipairs(b) do ab[#ab + 1] = x end
  return union_len(ab) - union_len(b)
end

-- GPU operations of an export from SQL: {pid, device, stream, start, stop, name, what}.
local function sql_ops(path)
  local parts = {}
  if has_table(path, "CUPTI_ACTIVITY_KIND_KERNEL") then
    parts[#parts + 1] = "SELECT " .. PID .. ", deviceId, streamId, start, end, (SELECT value FROM StringIds " ..
      "WHERE id = shortName), 'kernel' FROM CUPTI_ACTIVITY_KIND_KERNEL"
  end
  for _, t in ipairs{"MEMCPY", "MEMSET"} do
    if has_table(path, "CUPTI_ACTIVITY_KIND_" .. t) then
      parts[#parts + 1] = "SELECT " .. PID .. ", deviceId, streamId, start, end, '', '" .. t:lower() ..
        "' FROM CUPTI_ACTIVITY_KIND_" .. t
    end
  end
  local ops = {}
  for _, r in ipairs(T.sql(path, table.concat(parts, " UNION ALL "))) do
    ops[#ops + 1] = {pid = tonumber(r[1]), device = tonumber(r[2]), stream = tonumber(r[3]),
                     start = math.tointeger(tonumber(r[4])), stop = math.tointeger(tonumber(r[5])), name = r[6], what = r[7]}
  end
  return ops
end

local function group(ops, keyf)
  local g = {}
  for _, o in ipairs(ops) do
    local k = keyf(o)
    if k then g[k] = g[k] or {}; table.insert(g[k], o) end
  end
  return g
end

local function intervals(list, pred)
  local iv = {}
  for _, o in ipairs(list) do if not pred or pred(o) then iv[#iv + 1] = {o.start, o.stop} end end
  return iv
end

local function extent(list)
  local lo, hi
  for _, o in ipairs(list) do
    if not lo or o.start < lo then lo = o.start end
    if not hi or o.stop > hi then hi = o.stop end
  end
  return lo, hi
end

local function finding_for(fs, id, device, pid)
  for _, f in ipairs(by_id(fs, id)) do
    if f.where.device == device and (pid == nil or f.where.pid == pid) then return f end
  end
  return nil
end

-- one-direction point-to-point kernels (pipeline stages); SendRecv is all-to-all's, a collective
local function is_p2p(name) return name:find("SendRecv") == nil and (name:find("ncclDevKernel_Send") ~= nil
  or name:find("ncclDevKernel_Recv") ~= nil) end
local function is_nccl(name) return name:lower():find("nccl") ~= nil end

-- Checks the findings `id` of diagnose on path, one per device: want(ops of
-- the device) returns the ns the check loses there (0: no finding) and,
-- optionally, the operations whose extent is the window.  Returns the count.
local function check_devices(path, id, want, args)
  local fs = diag(path, args)
  local count = 0
  for dev, list in pairs(group(sql_ops(path), function(o) return o.device end)) do
    local w, win = want(list)
    local f = finding_for(fs, id, dev)
    if w == 0 then T.ok(not f, id .. ": no finding on device " .. dev)
    else
      count = count + 1
      T.ok(f, id .. ": finding on device " .. dev)
      local lo, hi = extent(win or list)
      T.eq(f.total_ns, w, id .. ": time on device " .. dev)
      T.ok(f.lost_ns <= w and f.lost_ns >= 0, id .. ": the job loses at most it")
      T.near(f.share, f.lost_ns / span(path), 1e-9, id .. ": share of the job's wall time")
    end
  end
  T.eq(#by_id(fs, id), count, id .. ": findings")
  return count
end

local function kernels_of(list)
  local k = {}
  for _, o in ipairs(list) do if o.what == "kernel" then k[#k + 1] = o end end
  return k
end

-- ---------------------------------------------------------------- tests

return {
  {"memcpy.pageable_async: real NCCL export, per process, equals SQL (Async call, pageable side)", function()
    local path = T.data(ncclf)
    check_calls(path, diag(path), "memcpy.pageable_async", PAGEABLE)
  end},

  {"memcpy.pageable_async: planted (a pinned copy made pageable) and negative (the original)", function()
    none_of(diag(T.data(tiny)), "memcpy.pageable_async", "real tiny export")
    local path = T.copy(tiny)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET dstKind = 0;")
    local got = check_calls(path, diag(path), "memcpy.pageable_async", PAGEABLE)
    T.eq(#got, 1, "planted finding")
    os.remove(path)
  end},

  {"memcpy.sync: real 2021 export equals SQL; planted on a copy; negative on the original", function()
    check_calls(T.data(cuda2021), diag(T.data(cuda2021)), "memcpy.sync", SYNC_MEMCPY)
    none_of(diag(T.data(tiny)), "memcpy.sync", "tiny (only cudaMemcpyAsync)")
    local path = T.copy(tiny)
    local id = string_id(path, "cudaMemcpy_v3020")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = " .. id ..
      " WHERE nameId = (SELECT id FROM StringIds WHERE value = 'cudaMemcpyAsync_v3020');")
    T.eq(#check_calls(path, diag(path), "memcpy.sync", SYNC_MEMCPY), 1, "planted finding")
    os.remove(path)
  end},

  {"memset.sync: planted (pinned memsets by cudaMemset) equals SQL; negative on the real export", function()
    none_of(diag(T.data(ncclf)), "memset.sync", "real NCCL export (device memsets)")
    local path = T.copy(ncclf)
    local id = string_id(path, "cudaMemset_v3020")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET memKind = 1 WHERE " .. PID .. " = (SELECT min(" .. PID ..
      ") FROM CUPTI_ACTIVITY_KIND_MEMSET); UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = " .. id ..
      " WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET) AND nameId IN " ..
      "(SELECT id FROM StringIds WHERE value LIKE 'cudaMemset%');")
    T.eq(#check_calls(path, diag(path), "memset.sync", SYNC_MEMSET), 1, "one process planted")
    os.remove(path)
  end},

  {"api.sync: real export equals SQL; planted (a longer stream sync); negative", function()
    check_calls(T.data(ncclf), diag(T.data(ncclf)), "api.sync", SYNC_API)
    none_of(diag(T.data(osrt)), "api.sync", "export without syncs")
    local path = T.copy(tiny)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = end + 50000000 WHERE nameId = " ..
      "(SELECT id FROM StringIds WHERE value LIKE 'cudaStreamSynchronize%');")
    local got = check_calls(path, diag(path), "api.sync", SYNC_API)
    T.eq(got[1].severity, "warning", "50 ms of a 286 ms run blocked (from 5%, under 25%)")
    os.remove(path)
  end},

  {"no sync false alarms: a host blocked while its GPU is busy loses nothing (busy time during the calls by " ..
   "SQL); a sync finding at warning or above has its GPU idle for much of the calls", function()
    local SYNC = "SELECT r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId " ..
      "WHERE " .. TPID:gsub("globalTid", "r.globalTid") .. " = %d AND (s.value LIKE 'cudaDeviceSynchronize%%' " ..
      "OR s.value LIKE 'cudaStreamSynchronize%%')"
    local checked_busy = 0
    for _, path in ipairs(T.exports()) do
      local fs = diag(path)
      for _, f in ipairs(by_id(fs, "api.sync")) do
        local pid = f.where.pid
        local calls = T.sql(path, string.format(SYNC, pid))
        local ops = {}
        for _, o in ipairs(sql_ops(path)) do if o.pid == pid then ops[#ops + 1] = {o.start, o.stop} end end
        local blocked, busy = 0, 0
        for _, c in ipairs(calls) do
          local a, b = math.tointeger(tonumber(c[1])), math.tointeger(tonumber(c[2]))
          blocked, busy = blocked + (b - a), busy + union_len(ops, a, b)
        end
        local frac = blocked > 0 and busy / blocked or 0
        if frac >= 0.95 then
          checked_busy = checked_busy + 1
          T.eq(f.severity, "info", string.format("%s pid %d: GPU busy %.1f%% of the blocked time: no alarm", path,
               pid, 100 * frac))
        end
        if f.severity ~= "info" then
          T.ok(frac < 0.9, string.format("%s pid %d: a sync alarm with the GPU busy %.1f%% of the time", path, pid,
               100 * frac))
        end
      end
    end
    T.ok(checked_busy >= 1, "an export whose host syncs while its GPU is busy (the NCCL export)")
  end},

  {"gpu.gaps: gaps over 500 ms per process and device equal SQL (window function); planted; negative", function()
    local function sql_gaps(path, min)
      local parts = {}
      for _, t in ipairs{"KERNEL", "MEMCPY", "MEMSET"} do
        if has_table(path, "CUPTI_ACTIVITY_KIND_" .. t) then
          parts[#parts + 1] = "SELECT " .. PID .. " AS p, deviceId AS d, start AS s, end AS e FROM CUPTI_ACTIVITY_KIND_" .. t
        end
      end
      return T.sql(path, "WITH o AS (" .. table.concat(parts, " UNION ALL ") .. "), m AS (SELECT p, d, s, max(e) OVER " ..
        "(PARTITION BY p, d ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pe FROM o) " ..
        "SELECT p, d, count(*), sum(s - pe), max(s - pe) FROM m WHERE s - pe > " .. min .. " GROUP BY p, d")
    end
    local function check(path)
      local fs = diag(path)
      local want = sql_gaps(path, 500000000)
      T.eq(#by_id(fs, "gpu.gaps"), #want, "gap findings")
      for _, r in ipairs(want) do
        local f = finding_for(fs, "gpu.gaps", tonumber(r[2]), tonumber(r[1]))
        T.ok(f, "finding for pid " .. r[1])
        T.eq(f.total_ns, math.tointeger(tonumber(r[4])), "gap time")
        T.eq(f.where.to - f.where.from, math.tointeger(tonumber(r[5])), "longest gap")
      end
      return #want
    end
    T.eq(check(T.data(cuda2021)), 1, "real 2021 export has long gaps")
    T.eq(check(T.data(ncclf)), 0, "real NCCL export has none")
    local path = T.copy(tiny)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + 700000000, end = end + 700000000 " ..
      "WHERE start = (SELECT max(start) FROM CUPTI_ACTIVITY_KIND_KERNEL);")
    T.eq(check(path), 1, "planted 700 ms gap")
    os.remove(path)
  end},

  {"gpu.low_utilisation: chunks under 50% per process and device equal a Lua sweep; planted; negative", function()
    local function check(path)
      local fs = diag(path)
      local n, found = 30, 0
      for key, list in pairs(group(sql_ops(path), function(o) return o.pid .. ":" .. o.device end)) do
        local pid, dev = key:match("^(%d+):(%d+)$")
        local lo, hi = extent(list)
        local iv, low, idle = intervals(list), 0, 0
        for k = 0, n - 1 do
          local a, b = lo + (hi - lo) * k // n, lo + (hi - lo) * (k + 1) // n
          local busy = union_len(iv, a, b)
          if busy * 100.0 / (b - a) < 50 then low, idle = low + 1, idle + (b - a - busy) end
        end
        local f = finding_for(fs, "gpu.low_utilisation", tonumber(dev), tonumber(pid))
        if low == 0 then T.ok(not f, "no finding for " .. key)
        else
          found = found + 1
          T.ok(f, "finding for " .. key)
          T.eq(f.total_ns, idle, "idle time of the low chunks of " .. key)
          T.near(f.share, f.lost_ns / span(path), 1e-9, "share of the job's wall time")
        end
      end
      T.eq(#by_id(fs, "gpu.low_utilisation"), found, "findings")
      return found
    end
    T.eq(check(T.data(h100)), 0, "real H100 export: busy throughout")
    T.eq(check(T.data(ncclf)), 2, "real NCCL export: one low chunk per device")
    local path = T.copy(h100)
    for _, t in ipairs{"KERNEL", "MEMCPY", "MEMSET"} do   -- device 0 idle in the middle tenth of its span
      T.sql_exec(path, string.format("DELETE FROM CUPTI_ACTIVITY_KIND_%s WHERE deviceId = 0 AND start BETWEEN " ..
        "(SELECT min(start) + (max(end) - min(start)) * 45 / 100 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0) AND " ..
        "(SELECT min(start) + (max(end) - min(start)) * 55 / 100 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0);", t))
    end
    T.eq(check(path), 1, "planted idle tenth")
    os.remove(path)
  end},

  {"nccl.exposed: planted AllReduce kernels, |N - C| per device equals a Lua sweep; negatives", function()
    local function exposed(list)
      local k = kernels_of(list)
      return minus_len(intervals(k, function(o) return is_nccl(o.name) and not is_p2p(o.name) end),
                       intervals(k, function(o) return not is_nccl(o.name) end))
    end
    T.eq(check_devices(T.data(ncclf), "nccl.exposed", exposed), 2, "SendRecv (all-to-all's) on both GPUs")
    T.eq(check_devices(T.data(h100), "nccl.exposed", exposed), 0, "no NCCL")
    local path = T.copy(ncclf)
    rename_kernels(path, 0, "ncclDevKernel_SendRecv%", "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    T.eq(check_devices(path, "nccl.exposed", exposed), 2, "planted AllReduce on device 0, SendRecv on device 1")
    os.remove(path)
  end},

  {"pipeline.bubbles: send/receive time with no other kernel equals a Lua sweep; planted; negative", function()
    local function waiting(list)
      local k = kernels_of(list)
      return minus_len(intervals(k, function(o) return is_p2p(o.name) end),
                       intervals(k, function(o) return not is_p2p(o.name) end))
    end
    T.eq(check_devices(T.data(ncclf), "pipeline.bubbles", waiting), 0, "real NCCL export: SendRecv is no pipeline")
    T.eq(check_devices(T.data(h100), "pipeline.bubbles", waiting), 0, "real H100 export: no send/receive")
    local path = T.copy(h100)
    rename_kernels(path, 1, "reduce_kernel", "ncclDevKernel_Send")
    T.eq(check_devices(path, "pipeline.bubbles", waiting), 1, "planted send/receive on device 1")
    os.remove(path)
  end},

  {"straggler: the straggler analysis's finding (planted rank), none without the plant", function()
    local script = T.source_dir .. "/tests/lua/straggler_rank.sh"
    local function files(delay)
      local list = {}
      -- two copies of GPU 0 (the real export's GPU 1 is a mild straggler of its own)
      for r = 1, 2 do
        local path = os.tmpname()
        local role = delay > 0 and (r == 2 and "slow" or "wait") or "''"
        local cmd = string.format("%s %s %s 0 %d %s 0", T.shell_quote(script), T.shell_quote(T.data(ncclf)),
          T.shell_quote(path), delay, role)
        T.ok(os.execute(cmd), cmd)
        list[#list + 1] = path
      end
      return list
    end
    local function stragglers(fs)
      local list = {}
      for _, f in ipairs(fs) do if f.id:find("^straggler") then list[#list + 1] = f end end
      return list
    end
    local clean = files(0)
    T.eq(#stragglers(diag(clean)), 0, "unplanted ranks")
    local D = 2000000
    local planted = files(D)
    local got = stragglers(diag(planted))
    -- diagnose passes the straggler analysis's own findings on (test_straggler checks those against the plant)
    local _, own = T.run_analysis("straggler", planted)
    T.ok(#got >= 1 and #got == #own.findings, "the straggler analysis's findings")
    local mine = {}
    for _, f in ipairs(got) do mine[f.message] = f end
    for _, f in ipairs(own.findings) do
      local g = mine[f.message]
      T.ok(g, "passed on: " .. f.message)
      if f.cost_ns then T.eq(g.cost_ns, f.cost_ns, "its cost") end
    end
    local planted_name = planted[2]:match("([^/]+)$"):gsub("%.sqlite$", "")
    T.ok(got[1].message:find(planted_name, 1, true) ~= nil, "the planted rank is named: " .. got[1].message)
    if not own.findings[1].cost_ns then
      T.ok(math.abs(got[1].cost_ns - D) <= 0.05 * D, "cost = the planted delay within 5%: " .. got[1].cost_ns)
    end
    for _, p in ipairs(clean) do os.remove(p) end
    for _, p in ipairs(planted) do os.remove(p) end
  end},

  {"launch.bound: idle gaps before short kernels equal a Lua sweep; planted (shrunk kernels); negative", function()
    local function bound(short, maxgap)
      return function(list)
        local k = kernels_of(list)
        local first_at = {}   -- the shortest kernel starting at each time
        for _, o in ipairs(k) do
          local d = o.stop - o.start
          if not first_at[o.start] or d < first_at[o.start] then first_at[o.start] = d end
        end
        -- idle: nothing runs, copies included (a copy is not idle time)
        local all = {}
        for i, o in ipairs(list) do all[i] = o end
        table.sort(all, function(a, b) return a.start < b.start end)
        local ce, total = nil, 0
        for _, o in ipairs(all) do
          if ce and o.start > ce and o.start - ce <= maxgap and first_at[o.start] and first_at[o.start] < short then
            total = total + o.start - ce
          end
          if not ce or o.stop > ce then ce = o.stop end
        end
        return total, k
      end
    end
    T.eq(check_devices(T.data(ncclf), "launch.bound", bound(10000, 1000000)), 2, "real NCCL export")
    T.eq(check_devices(T.data(mpi), "launch.bound", bound(10000, 1000000)), 0, "real MPI export: long saxpy kernels")
    local path = T.copy(mpi)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + 2000;")
    T.eq(check_devices(path, "launch.bound", bound(10000, 10000000000), {"launch_gap=10s"}), 1, "planted: 2 us kernels")
    os.remove(path)
  end},

  -- A copy of the NCCL export with NVTX step ranges "train_step" planted on
  -- the main thread of its first process: `durs` (ns) laid end to end from
  -- the start of that process's CUDA calls.  Returns path, pid, ranges.
  (function()
    local function plant_steps(durs)
      local path = T.copy(ncclf)
      local r = T.sql(path, "SELECT globalTid, " .. TPID .. ", min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE " ..
        TPID .. " = (SELECT min(" .. TPID .. ") FROM CUPTI_ACTIVITY_KIND_RUNTIME) GROUP BY globalTid ORDER BY count(*) DESC LIMIT 1")[1]
      local gtid, pid, t = r[1], tonumber(r[2]), math.tointeger(tonumber(r[3]))
      local sql, ranges = {"BEGIN;"}, {}
      for _, d in ipairs(durs) do
        sql[#sql + 1] = string.format("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid) " ..
          "VALUES (%d, %d, 59, 'train_step', %s, %s);", t, t + d, gtid, gtid)
        ranges[#ranges + 1] = {t, t + d}
        t = t + d
      end
      sql[#sql + 1] = "COMMIT;"
      T.sql_exec(path, table.concat(sql, "\n"))
      return path, pid, ranges
    end
    T.plant_steps = plant_steps
    return {"host.sync_per_step: median blocked time per planted NVTX step equals SQL; negative", function()
      none_of(diag(T.data(h100)), "host.sync_per_step", "real H100 export")
      local path, pid, ranges = plant_steps{30000000, 30000000, 30000000, 30000000, 30000000, 30000000, 30000000, 30000000}
      local fs = diag(path, {"iteration=train_step", "warmup=0"})
      local got = by_id(fs, "host.sync_per_step")
      T.eq(#got, 1, "one finding")
      -- the oracle: blocking calls of the process (explicit syncs, non-Async copies, Async copies of pageable memory)
      local rows = T.sql(path, "SELECT r.start, r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s " ..
        "ON s.id = r.nameId WHERE " .. "((r.globalTid >> 24) & 16777215) = " .. pid .. " AND (s.value LIKE 'cudaDeviceSynchronize%' " ..
        "OR s.value LIKE 'cudaStreamSynchronize%' OR s.value LIKE 'cudaEventSynchronize%' OR s.value LIKE " ..
        "'cudaStreamWaitEvent%' OR s.value LIKE 'cuCtxSynchronize%' OR s.value LIKE 'cuStreamSynchronize%' OR s.value " ..
        "LIKE 'cuEventSynchronize%' OR s.value LIKE 'cuStreamWaitEvent%' OR ((s.value LIKE 'cudaMemcpy%' OR s.value LIKE " ..
        "'cuMemcpy%') AND s.value NOT LIKE '%Async%') OR (s.value LIKE '%Async%' AND EXISTS (SELECT 1 FROM " ..
        "CUPTI_ACTIVITY_KIND_MEMCPY m WHERE m.correlationId = r.correlationId AND " .. PID:gsub("globalPid", "m.globalPid") ..
        " = " .. pid .. " AND (m.srcKind = 0 OR m.dstKind = 0))))")
      local per = {}
      for k, rg in ipairs(ranges) do
        per[k] = 0
        for _, x in ipairs(rows) do
          local s = math.tointeger(tonumber(x[1]))
          if s >= rg[1] and s < rg[2] then per[k] = per[k] + math.tointeger(tonumber(x[2])) end
        end
      end
      T.eq(got[1].cost_ns, math.floor(T.median(per) + 0.5), "median blocked time per step")
      T.eq(got[1].step_ns, 30000000, "step")
      T.near(got[1].share, got[1].lost_ns / span(path), 1e-12, "share of the job's wall time")
      T.eq(got[1].where.pid, pid, "the planted process")
      T.eq(got[1].where.nvtx, "train_step", "the step range")
      os.remove(path)
    end}
  end)(),

  {"compile.time: planted module loading equals SQL; negative on the real export", function()
    none_of(diag(T.data(h100)), "compile.time", "real H100 export")
    local path = T.copy(h100)
    local id = string_id(path, "cuModuleLoadData")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = " .. id .. " WHERE rowid = (SELECT r.rowid FROM " ..
      "CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaStreamSynchronize%' " ..
      "ORDER BY r.end - r.start DESC LIMIT 1);")
    local got = by_id(diag(path), "compile.time")
    T.eq(#got, 1, "one process loads code")
    local want = T.sql(path, "SELECT " .. TPID .. ", sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN " ..
      "StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cuModuleLoad%'")[1]
    T.eq(got[1].where.pid, tonumber(want[1]), "process")
    T.eq(got[1].total_ns, math.tointeger(tonumber(want[2])), "loading time")
    T.eq(got[1].cost_ns, got[1].total_ns // 28, "amortised over the 28 detected steps")
    os.remove(path)
  end},

  {"compile.time on an nsys-jax archive equals NVIDIA's nsys-jax (golden: 69,388.4 ms on proc0)", function()
    local got = by_id(diag(T.data("nsys-jax/pax_fsdp4_4proc_proc0.zip")), "compile.time")
    T.eq(#got, 1, "one process")
    -- golden/proc0/compilation_statistics.csv (name, DurNonChildMs, DurChildMs; names are quoted and hold
    -- commas): the parallel-aware total is the sum of DurNonChildMs
    local total, first = 0, true
    for line in io.lines(T.data("nsys-jax/golden/proc0/compilation_statistics.csv")) do
      if first then T.eq(line, ",DurNonChildMs,DurChildMs", "header"); first = false
      else total = total + tonumber(line:match(",([^,]*),[^,]*$")) end
    end
    T.near(got[1].total_ns / 1e6, total, 1e-6, "compile time (ms)")
  end},

  {"warmup.share: planted slow first step, excess over the steady median equals the rule on SQL; negatives", function()
    none_of(diag(T.data(nvfuser)), "warmup.share", "no steps")
    local path = T.plant_steps{30000000, 30000000, 30000000, 30000000, 30000000, 30000000}
    none_of(diag(path, {"iteration=train_step"}), "warmup.share", "equal steps")
    os.remove(path)
    local durs = {90000000, 45000000, 30000000, 31000000, 29000000, 30000000, 30500000}
    path = T.plant_steps(durs)
    local got = by_id(diag(path, {"iteration=train_step"}), "warmup.share")
    T.eq(#got, 1, "one finding")
    -- the rule (lua/nsl/iterations.lua): the first step, then each next one over 1.2 x the median of those after it
    local sql = T.sql(path, "SELECT end - start FROM NVTX_EVENTS WHERE text = 'train_step' ORDER BY start")
    local d = {}
    for i, r in ipairs(sql) do d[i] = tonumber(r[1]) end
    local k = 1
    while k < #d // 2 do
      local rest = {}
      for i = k + 2, #d do rest[#rest + 1] = d[i] end
      if d[k + 1] > 1.2 * T.median(rest) then k = k + 1 else break end
    end
    T.eq(k, 2, "two warm-up steps")
    local steady = {}
    for i = k + 1, #d do steady[#steady + 1] = d[i] end
    local excess = d[1] + d[2] - k * T.median(steady)
    T.eq(got[1].total_ns, math.floor(excess + 0.5), "excess over the steady median")
    T.eq(got[1].cost_ns, got[1].total_ns // #d, "amortised over the steps")
    os.remove(path)
  end},

  {"memory.near_capacity: planted allocation near the device's memory (SQL); negative below", function()
    none_of(diag(T.data(mpi)), "memory.near_capacity", "real MPI export (no memory events)")
    local function plant(share)
      local path = T.copy(mpi)
      local total = T.sql1(path, "SELECT totalMemory FROM TARGET_INFO_GPU LIMIT 1")
      local gpid = T.sql1(path, "SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")
      local ctx = T.sql1(path, "SELECT contextId FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")
      local t0 = T.sql1(path, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
      local b1, b2 = math.floor(total * share * 0.6), math.floor(total * share * 0.4)
      local rows = {}
      for i, ev in ipairs{{0, 1, b1, 0}, {1000, 2, b2, 0}, {2000, 1, b1, 1}} do
        rows[i] = string.format("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, " ..
          "address, pc, bytes, memKind, memoryOperationType, name, correlationId) VALUES (%d, %d, 0, %d, %d, 0, %d, 2, %d, " ..
          "NULL, %d);", t0 + ev[1], gpid, ctx, 0x7f0000000000 + ev[2], ev[3], ev[4], 900000 + i)
      end
      T.sql_exec(path, table.concat(rows, "\n"))
      return path, total
    end
    local low = plant(0.5)
    none_of(diag(low), "memory.near_capacity", "peak at half the memory")
    os.remove(low)
    local path, total = plant(0.95)
    local got = by_id(diag(path), "memory.near_capacity")
    T.eq(#got, 1, "one finding")
    local peak = T.sql1(path, "SELECT max(live) FROM (SELECT sum(CASE memoryOperationType WHEN 0 THEN bytes ELSE -bytes END) " ..
      "OVER (ORDER BY start ROWS UNBOUNDED PRECEDING) AS live FROM CUDA_GPU_MEMORY_USAGE_EVENTS)")
    T.near(got[1].value, peak / total, 1e-12, "peak / device memory")
    T.eq(got[1].severity, "warning", "95% of the memory")
    os.remove(path)
  end},

  {"streams.serialised: copies on kernel streams with no kernel running equal a Lua sweep; planted negative", function()
    local function serialised(list)
      local kstreams = {}
      for _, o in ipairs(list) do if o.what == "kernel" then kstreams[o.stream] = true end end
      return minus_len(intervals(list, function(o) return o.what == "memcpy" and kstreams[o.stream] end),
                       intervals(list, function(o) return o.what == "kernel" end))
    end
    T.eq(check_devices(T.data(cuda2021), "streams.serialised", serialised), 1, "real 2021 export: one stream")
    T.eq(check_devices(T.data(h100), "streams.serialised", serialised), 2, "real H100 export")
    local path = T.copy(cuda2021)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET streamId = 9999;")
    T.eq(check_devices(path, "streams.serialised", serialised), 0, "planted: copies on a stream of their own")
    os.remove(path)
  end},

  {"mfu: flops per step over the marker step against SM count x clock x 2048 (A100, SQL); off without flops", function()
    none_of(diag(T.data(mpi)), "mfu", "no --arg flops_per_step")
    local got = by_id(diag(T.data(mpi), {"flops_per_step=1e12", "warmup=0"}), "mfu")
    T.eq(#got, 1, "one finding")
    local g = T.sql(T.data(mpi), "SELECT smCount, clockRate FROM TARGET_INFO_GPU")[1]
    local peak = tonumber(g[1]) * tonumber(g[2]) * 2048
    local starts = {}
    for i, r in ipairs(T.sql(T.data(mpi), "SELECT k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON " ..
      "s.id = k.shortName WHERE s.value = 'saxpy' ORDER BY k.start")) do starts[i] = tonumber(r[1]) end
    local d = {}
    for i = 2, #starts do d[#d + 1] = starts[i] - starts[i - 1] end
    local step = math.floor(T.median(d) + 0.5)
    T.eq(got[1].step_ns, step, "median step between saxpy kernels")
    T.near(got[1].value, 1e12 / (step / 1e9) / peak, 1e-12, "MFU")
    T.eq(got[1].severity, "warning", "1% MFU")
  end},

  {"ranking: recurring costs by lost_ns, then one-time costs, then the rest; shares on one base; a clean " ..
   "export has no findings", function()
    for _, p in ipairs{cuda2021, ncclf, nvfuser} do
      local fs = diag(T.data(p))
      local function group(f) return f.lost_ns and (f.once and 1 or 0) or 2 end
      for i = 2, #fs do
        local a, b = fs[i - 1], fs[i]
        T.ok(group(a) < group(b) or (group(a) == group(b) and (a.lost_ns or -1) >= (b.lost_ns or -1)),
             p .. ": ranked by lost_ns, one-time costs apart: " .. a.id .. " before " .. b.id)
      end
      local seen = {}
      for _, f in ipairs(fs) do
        if f.share then T.ok(f.share >= 0 and f.share <= 1, p .. ": share within [0, 1]: " .. f.id) end
        if f.lost_ns then T.near(f.share, f.lost_ns / span(T.data(p)), 1e-9, p .. ": " .. f.id .. " share of the run") end
        if not f.id:find("^straggler") then
          T.ok(not seen[f.id], p .. ": one finding per cause: " .. f.id)
          seen[f.id] = true
        end
        if f.once then T.eq(f.lost_per_step_ns, nil, p .. ": a one-time cost is not per step: " .. f.id) end
      end
    end
    T.eq(#diag(T.data(osrt)), 0, "no findings on the OS-runtime export")
  end},
  {"reports captured years apart: times past 2^53 ns stay exact integers in every finding", function()
    -- aligned on their session starts, the 2022 export's events lie ~1.3e17 ns before the 2026 one's
    local p1, p2 = T.data(ncclf), T.data(mpi)
    local fs = diag({p1, p2})
    T.ok(#fs > 0, "findings")
    for _, f in ipairs(fs) do
      for k, v in pairs(f.where or {}) do
        if type(v) == "number" then T.eq(math.type(v), "integer", f.id .. ": where." .. k) end
      end
      if f.cost_ns then T.eq(math.type(f.cost_ns), "integer", f.id .. ": cost_ns") end
    end
    local tr = require("nsl").open(p1, p2)
    local want = T.sql1(p1, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL") + tr.reports.time_offset[1]
    local got = tr.kernels.stop:max()
    T.eq(math.type(got), "integer", "max of an i64 column")
    T.eq(got, want, "max of the aligned kernel ends: SQL's max plus the report's offset")
    T.ok(got > 2 ^ 53, "past 2^53")
  end},
}
