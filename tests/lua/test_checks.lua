-- The checks of diagnose, each a file of lua/nsl/checks/: its contract
-- (id, description, reads, claims, thresholds, run) well-formed and the
-- same as the engine's list and the diagnose analysis's options; then each
-- check alone through the engine (nsl.diagnose.run with that check only) on
-- a real export where it fires, or a copy with its problem planted (SQL
-- through sqlite3 on the copy), its numbers against an oracle outside nsl:
-- SQL of the rule's definition over the same file, or a brute-force sweep in
-- plain Lua over the rows SQL returns.
local T = ...

local L = dofile(T.source_dir .. "/tests/lua/diagnose_testlib.lua")(T)
local tiny = L.tiny
local h100 = L.h100
local ncclf = L.ncclf
local cuda2021 = L.cuda2021
local nvfuser = L.nvfuser
local mpi = L.mpi
local osrt = L.osrt
local PID = L.PID
local TPID = L.TPID
local alone = L.alone
local by_id = L.by_id
local none_of = L.none_of
local diag = L.diag
local has_table = L.has_table
local span = L.span
local string_id = L.string_id
local rename_kernels = L.rename_kernels
local check_calls = L.check_calls
local PAGEABLE = L.PAGEABLE
local SYNC_MEMCPY = L.SYNC_MEMCPY
local SYNC_MEMSET = L.SYNC_MEMSET
local SYNC_API = L.SYNC_API
local union_len = L.union_len
local minus_len = L.minus_len
local sql_ops = L.sql_ops
local group = L.group
local intervals = L.intervals
local extent = L.extent
local finding_for = L.finding_for
local is_p2p = L.is_p2p
local is_nccl = L.is_nccl
local check_devices = L.check_devices
local kernels_of = L.kernels_of

local diagnose = require("nsl.diagnose")
local ledger = require("nsl.ledger")
local units = require("nsl.util.units")

-- The rows of column `col` of evidence table `name` kept by ctx, and their sum.
local function evidence(ctx, name, col)
  for _, e in ipairs(ctx.evidence) do
    if e.name == name then
      local v = e.t[col]:totable()
      local sum = 0
      for _, x in ipairs(v) do sum = sum + x end
      return #v, sum
    end
  end
  return nil
end

return {
  {"contract: every check module declares id, description, reads, claims, thresholds and run, well-formed; " ..
   "its thresholds are the diagnose analysis's options, with their defaults", function()
    local lines = {[ledger.remainder] = true}
    for _, l in ipairs(ledger.lines) do lines[l] = true end
    local args = require("nsl.engine.runner").load_analysis("diagnose").args
    local ids, names = {}, {}
    local trace_tables = {}
    local tr <close> = assert(require("nsl").open(T.data(tiny)))
    for _, t in ipairs(tr:tables()) do trace_tables[t] = true end
    local checks = diagnose.checks()
    T.eq(#checks, #diagnose.order, "one check per module of the order")
    T.ok(#checks >= 16, "the checks")
    for i, c in ipairs(checks) do
      local name = diagnose.order[i]
      T.eq(type(c.id), "string", name .. ": id")
      T.eq((c.id:gsub("%.", "_")), name, name .. ": the file is named after the id")
      T.ok(not ids[c.id], name .. ": one check per id")
      ids[c.id] = true
      T.ok(type(c.description) == "string" and #c.description >= 20, name .. ": description")
      T.ok(type(c.reads) == "table" and #c.reads >= 1, name .. ": reads names what it measures")
      for _, r in ipairs(c.reads) do T.ok(type(r) == "string" and #r > 0, name .. ": reads " .. tostring(r)) end
      T.eq(type(c.tables), "table", name .. ": tables")
      for _, t in ipairs(c.tables) do T.ok(trace_tables[t], name .. ": tables names trace table " .. tostring(t)) end
      T.eq(type(c.claims), "table", name .. ": claims")
      for _, l in ipairs(c.claims) do T.ok(lines[l], name .. ": claims ledger line " .. tostring(l)) end
      if c.capped_by ~= nil then T.ok(lines[c.capped_by], name .. ": capped by ledger line " .. c.capped_by) end
      T.eq(type(c.run), "function", name .. ": run")
      T.eq(type(c.thresholds), "table", name .. ": thresholds")
      for k, th in pairs(c.thresholds) do
        local what = name .. ": threshold " .. k
        T.ok(not names[k], what .. " declared once")
        names[k] = true
        T.ok(th.default ~= nil, what .. ": default")
        T.ok(type(th.help) == "string" and th.help:find(c.id .. ": ", 1, true) == 1, what .. ": help names the check")
        if th.duration then
          T.eq(math.type(units.duration_arg({[k] = th.default}, k)), "integer", what .. ": a duration")
        end
        T.ok(args[k] and args[k].default == th.default and args[k].help == th.help, what .. ": a diagnose option")
      end
    end
  end},

  {"the engine's list of checks is the files of lua/nsl/checks/ (none forgotten, none extra)", function()
    local want = {}
    for _, n in ipairs(diagnose.order) do want[#want + 1] = n end
    table.sort(want)
    local embedded = {}
    for _, p in ipairs(require("nsl").embedded()) do
      local n = p:match("^lua/nsl/checks/(.+)%.lua$")
      if n then embedded[#embedded + 1] = n end
    end
    table.sort(embedded)
    T.eq(table.concat(embedded, " "), table.concat(want, " "), "the checks compiled into nsl")
    local ls = assert(io.popen("ls " .. T.shell_quote(T.source_dir .. "/lua/nsl/checks")))
    local files = {}
    for f in ls:lines() do files[#files + 1] = f:match("^(.+)%.lua$") or f end
    ls:close()
    table.sort(files)
    T.eq(table.concat(files, " "), table.concat(want, " "), "the files of the source tree")
  end},

  {"release: after the last check naming a trace table in `tables` the engine unloads it, and no later check " ..
   "reads it again (it would load again); the findings are those of a run that keeps every table", function()
    local nsl = require("nsl")
    local runner = require("nsl.engine.runner")
    local parsed = assert(runner.parse_args(assert(runner.load_analysis("diagnose")), {}))
    local function go(path, release)
      local trace = assert(nsl.open{T.data(path)})
      local out = require("nsl.engine.output").new{analysis = "diagnose", format = "collect", trace = trace}
      local ctx = diagnose.context(trace, parsed, nil, out)
      ctx:ledger()   -- as the diagnose analysis does, before the checks
      local fs = diagnose.run(ctx, nil, nil, {release = release})
      local lines = {}
      for i, f in ipairs(fs) do
        lines[i] = table.concat({f.id, f.severity, tostring(f.lost_ns), tostring(f.cost_ns), f.message}, " | ")
      end
      return table.concat(lines, "\n"), ctx, trace
    end
    local released = {}
    for _, path in ipairs{ncclf, cuda2021, nvfuser, mpi, "nsys-jax/pax_fsdp4_4proc_proc0.zip"} do
      local kept = go(path, false)
      local got, ctx, trace = go(path, true)
      T.eq(got, kept, path .. ": the same findings")
      for _, name in ipairs(ctx.released) do
        released[name] = true
        local t = trace[name]
        for _, c in ipairs(t:columns()) do
          T.ok(not t:is_loaded(c), path .. ": " .. name .. "." .. c .. " not read again after its release")
        end
      end
      trace:close()
    end
    T.ok(released.nvtx and released.api, "the NVTX ranges and the CUDA calls released on the real exports")
  end},

  {"evidence: the blocking-call checks alone keep every call the rule selects, their time summed as SQL sums " ..
   "it", function()
    for _, case in ipairs{{"memcpy.pageable_async", ncclf, "memcpy_pageable_async", "API time (ns)", PAGEABLE},
                          {"memcpy.sync", cuda2021, "memcpy_sync", "API time (ns)", SYNC_MEMCPY},
                          {"api.sync", tiny, "api_sync", "blocked (ns)", SYNC_API}} do
      local id, path = case[1], T.data(case[2])
      local fs, ctx = alone(path, id)
      T.ok(#fs >= 1, id .. " fires on " .. case[2])
      for _, f in ipairs(fs) do T.eq(f.evidence, case[3], id .. ": the finding names its evidence") end
      local n, sum = evidence(ctx, case[3], case[4])
      local want_n, want_sum = 0, 0
      for _, r in ipairs(T.sql(path, case[5])) do
        want_n, want_sum = want_n + tonumber(r[2]), want_sum + math.tointeger(tonumber(r[3]))
      end
      T.eq(n, want_n, id .. ": calls in the evidence")
      T.eq(sum, want_sum, id .. ": their time")
    end
  end},

  {"evidence: an evidence table of calls lists the longest (nsl.call_tables.EVIDENCE, here 5) and says how many " ..
   "there were; the findings still count every call (SQL)", function()
    local call_tables = require("nsl.call_tables")
    local saved = call_tables.EVIDENCE
    call_tables.EVIDENCE = 5
    local ok, err = pcall(function()
      local path = T.data(ncclf)
      local fs, ctx = alone(path, "api.sync")
      check_calls(path, fs, "api.sync", SYNC_API)   -- (n and blocked time per process: every call)
      local e
      for _, x in ipairs(ctx.evidence) do if x.name == "api_sync" then e = x end end
      local want = T.sql(path, "SELECT r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON " ..
        "s.id = r.nameId WHERE s.value LIKE 'cudaDeviceSynchronize%' OR s.value LIKE 'cudaStreamSynchronize%' " ..
        "ORDER BY r.end - r.start DESC")
      T.ok(#want > 5, "more syncs than the table lists: " .. #want)
      T.eq(#e.t, 5, "the table lists 5 calls")
      for i = 1, 5 do T.eq(e.t["blocked (ns)"][i], math.tointeger(tonumber(want[i][1])), "the longest, call " .. i) end
      T.eq(e.in_all, #want, "in all: SQL's count")
      T.ok(e.title:find(string.format("(the 5 longest of %d)", #want), 1, true) ~= nil, "the title says so: " .. e.title)
    end)
    call_tables.EVIDENCE = saved
    if not ok then error(err, 0) end
  end},

  {"memcpy.pageable_async: real NCCL export, per process, equals SQL (Async call, pageable side)", function()
    local path = T.data(ncclf)
    check_calls(path, alone(path, "memcpy.pageable_async"), "memcpy.pageable_async", PAGEABLE)
  end},

  {"memcpy.pageable_async: planted (a pinned copy made pageable) and negative (the original)", function()
    none_of(alone(T.data(tiny), "memcpy.pageable_async"), "memcpy.pageable_async", "real tiny export")
    local path = T.copy(tiny)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET dstKind = 0;")
    local got = check_calls(path, alone(path, "memcpy.pageable_async"), "memcpy.pageable_async", PAGEABLE)
    T.eq(#got, 1, "planted finding")
    os.remove(path)
  end},

  {"memcpy.sync: real 2021 export equals SQL; planted on a copy; negative on the original", function()
    check_calls(T.data(cuda2021), alone(T.data(cuda2021), "memcpy.sync"), "memcpy.sync", SYNC_MEMCPY)
    none_of(alone(T.data(tiny), "memcpy.sync"), "memcpy.sync", "tiny (only cudaMemcpyAsync)")
    local path = T.copy(tiny)
    local id = string_id(path, "cudaMemcpy_v3020")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = " .. id ..
      " WHERE nameId = (SELECT id FROM StringIds WHERE value = 'cudaMemcpyAsync_v3020');")
    T.eq(#check_calls(path, alone(path, "memcpy.sync"), "memcpy.sync", SYNC_MEMCPY), 1, "planted finding")
    os.remove(path)
  end},

  {"memset.sync: planted (pinned memsets by cudaMemset) equals SQL; negative on the real export", function()
    none_of(alone(T.data(ncclf), "memset.sync"), "memset.sync", "real NCCL export (device memsets)")
    local path = T.copy(ncclf)
    local id = string_id(path, "cudaMemset_v3020")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET memKind = 1 WHERE " .. PID .. " = (SELECT min(" .. PID ..
      ") FROM CUPTI_ACTIVITY_KIND_MEMSET); UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = " .. id ..
      " WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET) AND nameId IN " ..
      "(SELECT id FROM StringIds WHERE value LIKE 'cudaMemset%');")
    T.eq(#check_calls(path, alone(path, "memset.sync"), "memset.sync", SYNC_MEMSET), 1, "one process planted")
    os.remove(path)
  end},

  {"api.sync: real export equals SQL; planted (a longer stream sync); negative", function()
    check_calls(T.data(ncclf), alone(T.data(ncclf), "api.sync"), "api.sync", SYNC_API)
    none_of(alone(T.data(osrt), "api.sync"), "api.sync", "export without syncs")
    local path = T.copy(tiny)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = end + 50000000 WHERE nameId = " ..
      "(SELECT id FROM StringIds WHERE value LIKE 'cudaStreamSynchronize%');")
    local got = check_calls(path, alone(path, "api.sync"), "api.sync", SYNC_API)
    T.eq(got[1].severity, "warning", "50 ms of a 286 ms run blocked (from 5%, under 25%)")
    os.remove(path)
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
      local fs = alone(path, "gpu.gaps")
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
      local fs = alone(path, "gpu.low_utilisation")
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
    -- damaged times (found by fuzzing: an end of 2^62 ns): a span whose chunk bounds overflowed (width * k).
    -- With the last kernel moved to 2^62 ns, every chunk is low, and their idle is the span less its busy time
    path = T.copy(tiny)
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 4611686018427386904, end = 4611686018427387904 " ..
                     "WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);")
    local fs, n = alone(path, "gpu.low_utilisation"), 0
    for key, list in pairs(group(sql_ops(path), function(o) return o.pid .. ":" .. o.device end)) do
      local pid, dev = key:match("^(%d+):(%d+)$")
      local lo, hi = extent(list)
      if hi == 4611686018427387904 then
        n = n + 1
        local f = finding_for(fs, "gpu.low_utilisation", tonumber(dev), tonumber(pid))
        T.ok(f and f.message:find("30 of 30 chunks", 1, true), "every chunk of " .. key .. " is low: " .. tostring(f and f.message))
        T.eq(f and f.total_ns, (hi - lo) - union_len(intervals(list), lo, hi), "idle of " .. key)
      end
    end
    T.eq(n, 1, "one device with the damaged end")
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
    T.eq(#stragglers(alone(clean, "straggler")), 0, "unplanted ranks")
    local D = 2000000
    local planted = files(D)
    local got = stragglers(alone(planted, "straggler"))
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
      none_of(alone(T.data(h100), "host.sync_per_step"), "host.sync_per_step", "real H100 export")
      local path, pid, ranges = plant_steps{30000000, 30000000, 30000000, 30000000, 30000000, 30000000, 30000000, 30000000}
      local fs = alone(path, "host.sync_per_step", {"iteration=train_step", "warmup=0"})
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
    none_of(alone(T.data(h100), "compile.time"), "compile.time", "real H100 export")
    local path = T.copy(h100)
    local id = string_id(path, "cuModuleLoadData")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = " .. id .. " WHERE rowid = (SELECT r.rowid FROM " ..
      "CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaStreamSynchronize%' " ..
      "ORDER BY r.end - r.start DESC LIMIT 1);")
    local got = by_id(alone(path, "compile.time"), "compile.time")
    T.eq(#got, 1, "one process loads code")
    local want = T.sql(path, "SELECT " .. TPID .. ", sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN " ..
      "StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cuModuleLoad%'")[1]
    T.eq(got[1].where.pid, tonumber(want[1]), "process")
    T.eq(got[1].total_ns, math.tointeger(tonumber(want[2])), "loading time")
    T.eq(got[1].cost_ns, got[1].total_ns // 28, "amortised over the 28 detected steps")
    os.remove(path)
  end},

  {"compile.time on an nsys-jax archive equals NVIDIA's nsys-jax (golden: 69,388.4 ms on proc0)", function()
    local got = by_id(alone(T.data("nsys-jax/pax_fsdp4_4proc_proc0.zip"), "compile.time"), "compile.time")
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
    none_of(alone(T.data(nvfuser), "warmup.share"), "warmup.share", "no steps")
    local path = T.plant_steps{30000000, 30000000, 30000000, 30000000, 30000000, 30000000}
    none_of(alone(path, "warmup.share", {"iteration=train_step"}), "warmup.share", "equal steps")
    os.remove(path)
    local durs = {90000000, 45000000, 30000000, 31000000, 29000000, 30000000, 30500000}
    path = T.plant_steps(durs)
    local got = by_id(alone(path, "warmup.share", {"iteration=train_step"}), "warmup.share")
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
    none_of(alone(T.data(mpi), "memory.near_capacity"), "memory.near_capacity", "real MPI export (no memory events)")
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
    none_of(alone(low, "memory.near_capacity"), "memory.near_capacity", "peak at half the memory")
    os.remove(low)
    local path, total = plant(0.95)
    local got = by_id(alone(path, "memory.near_capacity"), "memory.near_capacity")
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
    none_of(alone(T.data(mpi), "mfu"), "mfu", "no --arg flops_per_step")
    local got = by_id(alone(T.data(mpi), "mfu", {"flops_per_step=1e12", "warmup=0"}), "mfu")
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

  {"host.idle: a real H200 profile's GPU idles while its host sleeps in 'data_loader' (SQL bounds the time and " ..
   "names the range and OS call); over the threshold only; gpu.gaps' long gaps and a GPU a straggler finding " ..
   "names are left to those", function()
    local h200 = T.source_dir .. "/tests/data/h200_host_stall_2025.3.sqlite"
    -- SQL: the GPU's idle gaps that hold a data_loader range, the ranges' time, and the OS call the host spent
    -- most of them in
    local r = T.sql(h200, [[
      WITH ops AS (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
                   SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY),
           gaps AS (SELECT max(end) OVER (ORDER BY start ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS gs,
                           start AS ge FROM ops),
           dl AS (SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                  WHERE coalesce(n.text, s.value) = 'data_loader')
      SELECT count(*), sum(dl.end - dl.start), sum(gaps.ge - gaps.gs),
             (SELECT s.value FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId JOIN dl d2
                ON o.start >= d2.start AND o.end <= d2.end GROUP BY s.value ORDER BY sum(o.end - o.start) DESC LIMIT 1)
      FROM dl JOIN gaps ON gaps.gs <= dl.start AND dl.end <= gaps.ge]])[1]
    local n, loader, gaps, call = tonumber(r[1]), math.tointeger(tonumber(r[2])), math.tointeger(tonumber(r[3])), r[4]
    T.eq(n, 11, "SQL: eleven loader ranges in idle gaps")
    local got = by_id(alone(h200, "host.idle"), "host.idle")
    T.eq(#got, 1, "one finding: one GPU")
    local f = got[1]
    T.ok(f.lost_ns >= loader and f.lost_ns <= gaps,
         string.format("lost %d between SQL's loader time %d and its idle gaps %d", f.lost_ns, loader, gaps))
    T.near(f.share, f.lost_ns / span(h200), 1e-9, "share of the run")
    T.ok(f.message:find("NVTX 'data_loader'", 1, true), "names the innermost range: " .. f.message)
    T.ok(f.message:find("OS runtime '" .. call .. "'", 1, true), "names the OS call SQL finds: " .. call)
    T.eq(f.where.device, 0, "its GPU")
    none_of(alone(h200, "host.idle", {"host_idle=0.5"}), "host.idle", "under a 50% threshold")
    -- each nanosecond once: on the 2021 export the host sat in getc through gpu.gaps' two long gaps; those are
    -- gpu.gaps' alone, so the two findings together stay within the GPU's idle time between its operations (SQL)
    local cuda = T.data(cuda2021)
    local fs0 = diag(cuda)
    local hi, gg = by_id(fs0, "host.idle"), by_id(fs0, "gpu.gaps")
    T.ok(#hi == 1 and #gg == 1, "host.idle and gpu.gaps both fire on the 2021 export")
    local list = sql_ops(cuda)
    local ivs = {}
    for i, o in ipairs(list) do ivs[i] = {o.start, o.stop} end
    local lo, hi_end = extent(list)
    local idle = (hi_end - lo) - union_len(ivs, lo, hi_end)
    T.ok(hi[1].lost_ns + gg[1].lost_ns <= idle, string.format("host.idle %d + gpu.gaps %d within SQL's idle %d",
         hi[1].lost_ns, gg[1].lost_ns, idle))
    -- two ranks made from the NCCL export, the second late by 2 ms at every collective: the straggler finding
    -- tells that GPU's idle; host.idle names it nowhere
    local script = T.source_dir .. "/tests/lua/straggler_rank.sh"
    local files = {}
    for k = 1, 2 do
      files[k] = os.tmpname()
      local cmd = string.format("%s %s %s 0 2000000 %s 0", T.shell_quote(script), T.shell_quote(T.data(ncclf)),
        T.shell_quote(files[k]), k == 2 and "slow" or "wait")
      T.ok(os.execute(cmd), cmd)
    end
    local fs = diag(files, {"host_idle=0"})
    local late = files[2]:match("([^/]+)$"):gsub("%.sqlite$", "")
    T.ok(fs[1].id:find("^straggler") and fs[1].message:find(late, 1, true), "the straggler first: " .. fs[1].message)
    for _, h in ipairs(by_id(fs, "host.idle")) do
      T.ok(not h.where.rank:find(late, 1, true), "host.idle leaves the straggler's GPU alone: " .. h.where.rank)
    end
    for _, p in ipairs(files) do os.remove(p) end
  end},
}
