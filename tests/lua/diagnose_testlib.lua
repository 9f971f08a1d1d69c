-- tests/lua/diagnose_testlib.lua -- helpers shared by the tests of diagnose
-- (test_diagnose: the engine; test_checks: each check alone): run diagnose or
-- one check through its engine, read the findings of a check, SQL of the
-- nsys analyze rules, copies with planted problems, and interval sweeps in
-- plain Lua over the rows SQL returns (the oracles).
return function(T)
local L = {}


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

-- Check id alone (its module, lua/nsl/checks/) through diagnose's engine on
-- paths with args: the context, the ledger, the merge and the ranking of
-- nsl.diagnose.run; returns its findings and the context (ctx.evidence).
local function alone(paths, id, args)
  if type(paths) == "string" then paths = {paths} end
  local runner, diagnose = require("nsl.engine.runner"), require("nsl.diagnose")
  local parsed, perr = runner.parse_args(assert(runner.load_analysis("diagnose")), args or {})
  if not parsed then require("nsl").fail(perr) end
  local trace = assert(require("nsl").open(paths))
  local out = require("nsl.engine.output").new{analysis = "diagnose", format = "collect", trace = trace}
  local ctx = diagnose.context(trace, parsed, nil, out)
  return diagnose.run(ctx, nil, {require("nsl.checks." .. id:gsub("%.", "_"))}), ctx
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
  local fs = alone(path, id, args)
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


L.tiny = tiny
L.h100 = h100
L.ncclf = ncclf
L.cuda2021 = cuda2021
L.nvfuser = nvfuser
L.mpi = mpi
L.osrt = osrt
L.PID = PID
L.TPID = TPID
L.diag = diag
L.alone = alone
L.by_id = by_id
L.merged = merged
L.none_of = none_of
L.has_table = has_table
L.span = span
L.string_id = string_id
L.rename_kernels = rename_kernels
L.per_pid = per_pid
L.check_calls = check_calls
L.memop_calls = memop_calls
L.PAGEABLE = PAGEABLE
L.SYNC_MEMCPY = SYNC_MEMCPY
L.SYNC_MEMSET = SYNC_MEMSET
L.SYNC_API = SYNC_API
L.union_len = union_len
L.minus_len = minus_len
L.sql_ops = sql_ops
L.group = group
L.intervals = intervals
L.extent = extent
L.finding_for = finding_for
L.is_p2p = is_p2p
L.is_nccl = is_nccl
L.check_devices = check_devices
L.kernels_of = kernels_of
return L
end
