-- The nsys-jax analyses on an nsl bundle: an nsys SQLite export with XLA's
-- NVTX ranges and the XLA dumps under meta/xla_dump/.
--
-- No real JAX export exists in the shared data, so the fixture is derived
-- from a real one: the two-process NCCL export gets, in its own
-- NVTX_EVENTS table (its schema, a domain registered by a type-75 row as
-- nsys writes it, module texts as registered strings), XLA's push/pop
-- ranges of domain TSL around real kernel launches of each process's
-- launching thread: for every NCCL launch n, an
-- "XlaModule:#hlo_module=jit__psum,program_id=1#" range holding the thunks
-- "wrapped_copy" (launch n-1) and "all-reduce-start" (launch n), and an
-- "XlaModule:#hlo_module=jit__threefry_seed,program_id=5#" range holding the
-- thunk "input_concatenate_fusion" (launches n+1 and n+2); before the first
-- launch an XlaCompile range of jit__psum with its XlaCompileBackend child.
-- PyTorch's own ranges that would cross the planted ones are dropped.  The
-- dumps are real: module_0001.jit__psum from the shared mini set (stored raw,
-- .hlo.pb) and module_0005.jit__threefry_seed from the pax archive (.pb.xz),
-- beside files the analyses must ignore.
--
-- Oracles: SQL (sqlite3) over the planted rows and the GPU operations whose
-- launching call they enclose (nsys's nvtx_gpu_proj_trace rule), brute-force
-- overlap and bandwidth arithmetic in plain Lua over those rows; the
-- fingerprints and communication sizes from NVIDIA's own decodes (the mini
-- set's expected.txt, nsys-jax's golden module table).
local T = ...
local nsl = require("nsl")
local jax = require("nsl.jax")

local D = T.data("nsys-jax")
local MINI = D .. "/mini/"
local PAX0 = D .. "/pax_fsdp4_4proc_proc0.zip"
local PSUM_DUMP = "module_0001.jit__psum.sm_8.0_gpu_after_optimizations.hlo.pb"
local SEED_DUMP = "module_0005.jit__threefry_seed.sm_8.0_gpu_after_optimizations.hlo.pb.xz"

local PLANT = [[
CREATE TEMP TABLE ops AS
  SELECT globalPid AS gpid, correlationId AS corr, shortName AS nm FROM CUPTI_ACTIVITY_KIND_KERNEL
  UNION ALL SELECT globalPid, correlationId, NULL FROM CUPTI_ACTIVITY_KIND_MEMCPY
  UNION ALL SELECT globalPid, correlationId, NULL FROM CUPTI_ACTIVITY_KIND_MEMSET;
CREATE TEMP TABLE launches AS
  SELECT r.globalTid AS tid, r.start AS a0, r.end AS a1,
         max(coalesce((SELECT value FROM StringIds WHERE id = o.nm), '')) AS kname,
         row_number() OVER (PARTITION BY r.globalTid ORDER BY r.start) AS n
  FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN ops o ON o.corr = r.correlationId AND (o.gpid >> 24) = (r.globalTid >> 24)
  GROUP BY r.rowid;
CREATE TEMP TABLE steps AS
  SELECT c.tid AS tid, p.a0 AS copy_a0, p.a1 AS copy_a1, c.a0 AS ar_a0, c.a1 AS ar_a1, f1.a0 AS f_a0, f2.a1 AS f_a1
  FROM launches c JOIN launches p ON p.tid = c.tid AND p.n = c.n - 1
  JOIN launches f1 ON f1.tid = c.tid AND f1.n = c.n + 1 JOIN launches f2 ON f2.tid = c.tid AND f2.n = c.n + 2
  WHERE c.kname LIKE 'nccl%' AND p.kname NOT LIKE 'nccl%' AND f1.kname NOT LIKE 'nccl%' AND f2.kname NOT LIKE 'nccl%';
CREATE TEMP TABLE planted(tid INTEGER, s INTEGER, e INTEGER, txt TEXT, registered INTEGER);
INSERT INTO planted SELECT tid, copy_a0 - 1, ar_a1 + 1, 'XlaModule:#hlo_module=jit__psum,program_id=1#', 1 FROM steps;
INSERT INTO planted SELECT tid, copy_a0, copy_a1, 'Thunk:#hlo_op=wrapped_copy#', 0 FROM steps;
INSERT INTO planted SELECT tid, ar_a0, ar_a1,
  'Thunk:#name=jit(_psum)/jit(main)/reduce_sum[axes=(0,)],hlo_op=all-reduce-start#', 0 FROM steps;
INSERT INTO planted SELECT tid, f_a0 - 1, f_a1 + 1, 'XlaModule:#hlo_module=jit__threefry_seed,program_id=5#', 1 FROM steps;
INSERT INTO planted SELECT tid, f_a0, f_a1, 'Thunk:#hlo_op=input_concatenate_fusion#', 0 FROM steps;
INSERT INTO planted SELECT tid, min(a0) - 3000000, min(a0) - 1000000, 'XlaCompile:#module=jit__psum,program_id=1#', 0
  FROM launches GROUP BY tid;
INSERT INTO planted SELECT tid, min(a0) - 2500000, min(a0) - 1500000,
  'XlaCompileBackend:#module=jit__psum,program_id=1#', 0 FROM launches GROUP BY tid;
DELETE FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND EXISTS (SELECT 1 FROM planted p
  WHERE p.tid = NVTX_EVENTS.globalTid AND NVTX_EVENTS.start <= p.e AND NVTX_EVENTS."end" >= p.s);
INSERT INTO StringIds(id, value) SELECT (SELECT max(id) FROM StringIds) + row_number() OVER (ORDER BY txt), txt
  FROM (SELECT DISTINCT txt FROM planted WHERE registered = 1);
INSERT INTO NVTX_EVENTS(start, eventType, text, globalTid, domainId)
  SELECT min(s) - 1, 75, 'TSL', tid, 9 FROM planted GROUP BY tid;
INSERT INTO NVTX_EVENTS(start, "end", eventType, text, textId, globalTid, domainId)
  SELECT p.s, p.e, 59, CASE WHEN p.registered = 1 THEN NULL ELSE p.txt END,
         CASE WHEN p.registered = 1 THEN (SELECT id FROM StringIds WHERE value = p.txt) END, p.tid, 9
  FROM planted p ORDER BY p.tid, p.s, p.e DESC;
]]

-- Every planted range with a GPU op: the ops whose launching call (same
-- thread) lies inside it; projected span, launching calls, device.
local ORACLE = [[
WITH ops AS (
  SELECT globalPid AS gpid, correlationId AS corr, start AS s, end AS e, deviceId AS dev FROM CUPTI_ACTIVITY_KIND_KERNEL
  UNION ALL SELECT globalPid, correlationId, start, end, deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY
  UNION ALL SELECT globalPid, correlationId, start, end, deviceId FROM CUPTI_ACTIVITY_KIND_MEMSET)
SELECT n.globalTid, coalesce(n.text, s.value), n.start, n."end", min(o.s), max(o.e), count(DISTINCT r.rowid),
       min(o.dev)
FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = n.globalTid AND r.start >= n.start AND r."end" <= n."end"
JOIN ops o ON o.corr = r.correlationId AND (o.gpid >> 24) = (r.globalTid >> 24)
WHERE n.domainId = 9 AND n.eventType = 59
GROUP BY n.rowid ORDER BY n.globalTid, n.start, n."end" DESC]]

local function sh(cmd) assert(os.execute(cmd), cmd) end
local q = T.shell_quote

-- NVIDIA's decodes: the psum dump's fingerprint and communication, the
-- threefry program's fingerprint from nsys-jax's golden module table.
local function reference()
  local exp = T.read(MINI .. "module_0001.jit__psum.expected.txt")
  local ref = {psum_fp = exp:match("fingerprint_before_lhs = (%x+)")}
  local size, coll, csize, bwc, busc =
    exp:match("= %((%d+), '([%w-]+)', (%d+), ([%d.]+), ([%d.]+)%)")
  ref.bytes, ref.collective, ref.size = tonumber(size), coll, tonumber(csize)
  ref.bwc, ref.busc = tonumber(bwc), tonumber(busc)
  for line in T.read(D .. "/golden/proc0/notebook_module_table.csv"):gmatch("[^\n]+") do
    local fp, name = line:match("^(%x+),([%w_]+),")
    if name == "jit__threefry_seed" then ref.seed_fp = fp end
  end
  assert(ref.psum_fp and ref.seed_fp and ref.bytes, "reference decodes")
  return ref
end

local F   -- the fixture, made once
local function fixture()
  if F then return F end
  local nslbin = assert(os.getenv("NSL"), "NSL (the nsl program) is set by ctest")
  local dir = assert(nsl.mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/nsl-test-jaxb-"))
  local db = dir .. "/fx.sqlite"
  sh("cp " .. q(T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")) .. " " .. q(db) .. " && chmod u+w " .. q(db))
  T.sql_exec(db, PLANT)
  local dump = dir .. "/xla_dump"
  assert(nsl.mkdir_p(dump))
  sh("xz -dc " .. q(MINI .. PSUM_DUMP .. ".xz") .. " > " .. q(dump .. "/" .. PSUM_DUMP))
  sh("unzip -p " .. q(PAX0) .. " dump/" .. SEED_DUMP .. " > " .. q(dump .. "/" .. SEED_DUMP))
  -- files the analyses must pass over: a text file, a before-optimizations dump
  sh("cp " .. q(MINI .. "module_0001.jit__psum.expected.txt") .. " " ..
     q(MINI .. "module_0001.jit__psum.before_optimizations.hlo.pb.xz") .. " " .. q(dump))
  local zip = dir .. "/jax.zip"
  sh(string.format("%s bundle %s --meta %s -o %s > /dev/null", q(nslbin), q(db), q(dump), q(zip)))
  F = {dir = dir, db = db, dump = dump, zip = zip, nsl = nslbin, ref = reference()}
  -- the oracle rows
  F.ranges = {}
  for _, r in ipairs(T.sql(db, ORACLE)) do
    F.ranges[#F.ranges + 1] = {tid = tonumber(r[1]), text = r[2], start = tonumber(r[3]), stop = tonumber(r[4]),
                               pstart = tonumber(r[5]), pstop = tonumber(r[6]), launches = tonumber(r[7]),
                               device = tonumber(r[8])}
  end
  return F
end

local function kind_of(text)
  if text:find("^XlaModule:") then return "module" end
  if text:find("^Thunk:") then return "thunk" end
  return "other"
end

-- Oracle module executions per device and program name, in time order:
-- {device = {name = {{pstart, pstop, thunks = {...}}, ...}}}.
local function oracle_modules(ranges)
  local by, cur = {}, nil
  for _, r in ipairs(ranges) do   -- ordered by thread, start, longest first: a module precedes its thunks
    local k = kind_of(r.text)
    if k == "module" then
      local name = r.text:match("hlo_module=([%w_]+)")
      by[r.device] = by[r.device] or {}
      by[r.device][name] = by[r.device][name] or {}
      cur = {pstart = r.pstart, pstop = r.pstop, launches = r.launches, thunks = {}, name = name}
      table.insert(by[r.device][name], cur)
    elseif k == "thunk" then
      assert(cur and r.start >= cur.pstart - 1e12, "a thunk inside a module")
      table.insert(cur.thunks, {name = r.text:match("hlo_op=([%w._-]+)#$"), pstart = r.pstart, pstop = r.pstop})
    end
  end
  return by
end

-- Time of [s, e] covered by the union of intervals (brute force).
local function covered(s, e, intervals)
  local cuts = {}
  for _, iv in ipairs(intervals) do
    local a, b = math.max(s, iv[1]), math.min(e, iv[2])
    if a < b then cuts[#cuts + 1] = {a, b} end
  end
  table.sort(cuts, function(x, y) return x[1] < y[1] end)
  local total, hi = 0, s
  for _, c in ipairs(cuts) do
    local a = math.max(c[1], hi)
    if c[2] > a then total = total + c[2] - a; hi = c[2] end
  end
  return total
end

-- Per device: the communication thunks of psum with their full span and
-- their time hidden under the program's compute thunks on that device.
local function oracle_comm(mods)
  local out = {}
  for dev, progs in pairs(mods) do
    local compute, comm = {}, {}
    for _, m in ipairs(progs.jit__psum) do
      for _, th in ipairs(m.thunks) do
        if th.name == "all-reduce-start" then comm[#comm + 1] = th
        else compute[#compute + 1] = {th.pstart, th.pstop} end
      end
    end
    out[dev] = {}
    for k, th in ipairs(comm) do
      out[dev][k] = {full = th.pstop - th.pstart, hidden = covered(th.pstart, th.pstop, compute)}
    end
  end
  return out
end

local function mean_std(list)
  local s, n = 0, #list
  for _, v in ipairs(list) do s = s + v end
  local m, ss = s / n, 0
  for _, v in ipairs(list) do ss = ss + (v - m) ^ 2 end
  return m, n > 1 and math.sqrt(ss / (n - 1)) or 0 / 0
end

return {
  {"dump names: raw, xz, combine's rank tags; others are not dumps", function()
    local id, rest, xz, rank = jax.parse_dump_name("module_0038.jit__psum.sm_8.0_gpu_after_optimizations.hlo.pb")
    T.eq(id, 38, "id")
    T.eq(rest, "jit__psum.sm_8.0_gpu_after_optimizations", "rest")
    T.eq(xz, false, "raw")
    T.eq(rank, nil, "no tag")
    id, rest, xz = jax.parse_dump_name("module_0001.jit__psum.sm_8.0_gpu_after_optimizations.hlo.pb.xz")
    T.eq(id, 1, "id (xz)")
    T.eq(xz, true, "xz")
    T.eq(select(4, jax.parse_dump_name("module_0001.x_after_optimizations.hlo.rank3.pb")), 3, "rank tag (raw)")
    T.eq(select(4, jax.parse_dump_name("module_0001.x_after_optimizations.hlo.pb.rank12-2.xz")), 12, "rank tag (xz)")
    T.eq(select(4, jax.parse_dump_name("module_0001.x_after_optimizations.hlo~2.pb")), false, "input tag")
    for _, bad in ipairs{"module_0001.jit__psum.expected.txt", "module_0001.x.autotune_results.pbtxt.xz",
                         "module_x.y.hlo.pb", "module_0001.y.hlo.pbtxt", "notes.hlo.pb", ""} do
      T.eq(jax.parse_dump_name(bad), nil, bad)
    end
  end},

  {"the bundle's dumps: after-optimizations ones only, raw and xz both decode", function()
    local f = fixture()
    local tr = assert(nsl.open{f.zip})
    local store = jax.hlo_store(tr)
    T.eq(#store.files[0], 2, "two after-optimizations dumps")
    local m1 = store.member(0, 1, "jit__psum")
    T.eq(m1, "meta/xla_dump/" .. PSUM_DUMP, "psum member")
    T.eq(store.module(0, m1):info().fingerprint, f.ref.psum_fp, "raw .hlo.pb decoded")
    T.eq(store.fingerprint(0, 5, "jit__threefry_seed"), f.ref.seed_fp, ".hlo.pb.xz decoded")
    T.eq(store.fingerprint(0, 7, "jit_concatenate"), "unknown", "no dump")
    T.eq(store.fingerprint(0, nil, "x"), "unknown", "no program id")
    -- the bundle's members, as the report sees them
    T.eq(#tr:members(0, "meta/"), 4, "meta members of the bundle (the four dump files)")
    T.ok(tr:member(0, "meta/xla_dump/" .. PSUM_DUMP), "read through the report")
    T.eq(tr:hlo(0, m1):info().fingerprint, f.ref.psum_fp, "trace:hlo decodes a bundle's dump")
    local h, msg = nsl.hlo_decode("not a protobuf", "x")
    T.eq(h, nil, "garbage does not decode")
    T.ok(type(msg) == "string", "with a message")
  end},

  {"gpu_ranges of the export: nsys's nvtx_gpu_proj_trace of the planted ranges", function()
    local f = fixture()
    local tr = assert(nsl.open{f.zip})
    T.eq(#tr.gpu_ranges, 0, "no nsys-jax table")
    local g = jax.gpu_ranges(tr)
    local tsl = g:filter(g.text:match("^TSL:"))
    T.eq(#tsl, #f.ranges, "projected TSL ranges (compile ranges launch nothing)")
    local got = {}
    for i = 1, #tsl do got[tsl.device[i] .. "|" .. tsl.orig_start[i] .. "|" .. tsl.text[i]] = i end
    local module_id
    for _, r in ipairs(f.ranges) do
      local i = got[r.device .. "|" .. r.start .. "|TSL:" .. r.text]
      T.ok(i, "range " .. r.text .. " at " .. r.start)
      T.eq(tsl.start[i], r.pstart, "projected start")
      T.eq(tsl.stop[i], r.pstop, "projected stop")
      T.eq(tsl.dur[i], r.pstop - r.pstart, "projected dur")
      T.eq(tsl.orig_stop[i], r.stop, "orig stop")
      T.eq(tsl.orig_dur[i], r.stop - r.start, "orig dur")
      T.eq(tsl.num_gpu_ops[i], r.launches, "NumGPUOps")
      local k = kind_of(r.text)
      T.eq(tsl.level[i], k == "module" and 0 or 1, "level")
      T.eq(tsl.num_child[i], k == "module" and (r.text:find("psum") and 2 or 1) or 0, "children")
      if k == "module" then
        module_id = tsl.range_id[i]
        T.eq(tsl.parent_id[i], nil, "a module is at the top")
      else
        T.eq(tsl.parent_id[i], module_id, "a thunk's parent is its module")
        T.ok(tsl.range_id[i] > module_id, "ids run in host order")
      end
    end
    -- rows in projected order
    local prev = -math.huge
    for i = 1, #g do T.ok(g.start[i] >= prev, "sorted by projected start"); prev = g.start[i] end
  end},

  {"frames: modules, thunks and communication against SQL", function()
    local f = fixture()
    local tr = assert(nsl.open{f.zip})
    local d = jax.load(tr)
    local mods = oracle_modules(f.ranges)
    local fp = {jit__psum = f.ref.psum_fp, jit__threefry_seed = f.ref.seed_fp}
    local nmod, nthunk = 0, 0
    local mt = d.module
    for dev, progs in pairs(mods) do
      for name, list in pairs(progs) do
        local sel = mt:filter(mt.Device:eq(dev) & mt.Name:eq(name)):sort("ProgramExecution")
        T.eq(#sel, #list, name .. " executions on device " .. dev)
        T.eq(#list, 32, "32 steps")
        for k, m in ipairs(list) do
          T.eq(sel.ProgramId[k], fp[name], "ProgramId")
          T.eq(sel.ProgramExecution[k], k - 1, "ProgramExecution")
          T.near(sel.ProjStartMs[k], m.pstart * 1e-6, 1e-15, "ProjStartMs")
          T.near(sel.ProjDurMs[k], (m.pstop - m.pstart) * 1e-6, 1e-12, "ProjDurMs")
          T.eq(sel.NumThunks[k], #m.thunks, "NumThunks")
          nthunk = nthunk + #m.thunks
        end
        nmod = nmod + #list
      end
    end
    T.eq(#mt, nmod, "module rows")
    T.eq(#d.thunk, nthunk, "thunk rows")
    local th = d.thunk
    local names = th:group_by("Name"):agg{"n=count", "c=sum(Communication)"}
    local want = {["wrapped_copy"] = {64, 0}, ["all-reduce-start"] = {64, 64}, ["input_concatenate_fusion"] = {64, 0}}
    for i = 1, #names do
      T.eq(names.n[i], want[names.Name[i]][1], names.Name[i] .. " thunks")
      T.eq(names.c[i], want[names.Name[i]][2], names.Name[i] .. " communication")
    end
    -- communication: sizes from the dump, exposed and hidden time against the brute force
    local oc = oracle_comm(mods)
    local comm = d.communication
    T.eq(#comm, 64, "communication rows")
    for dev, list in pairs(oc) do
      local c = comm:filter(comm.Device:eq(dev)):sort("ProgramExecution")
      T.eq(#c, #list, "communication thunks of device " .. dev)
      for k, o in ipairs(list) do
        T.eq(c.Collective[k], f.ref.collective, "Collective")
        T.eq(c.MessageSize[k], f.ref.bytes, "MessageSize")
        T.eq(c.CollectiveSize[k], f.ref.size, "CollectiveSize")
        T.near(c.ProjDurHiddenMs[k], o.hidden * 1e-6, 1e-12, "hidden")
        T.near(c.ProjDurMs[k] + c.ProjDurHiddenMs[k], o.full * 1e-6, 1e-12, "full duration")
        local alg = f.ref.bytes * f.ref.bwc * 1e-6 / (o.full * 1e-6)
        T.near(c.AlgorithmBandwidthGBPerSec[k], alg, 1e-9, "algorithm bandwidth")
        T.near(c.BusBandwidthGBPerSec[k], alg * f.ref.busc, 1e-9, "bus bandwidth")
      end
    end
    -- the compile frame from the export's NVTX ranges: psum was compiled in both processes
    local compiled = jax.compiled_programs(d.compile_parts)
    T.eq(#d.compile_parts, 2, "a compile frame per process")
    for _, p in ipairs(compiled) do T.eq(p, f.ref.psum_fp, "compiled program") end
    local st = jax.compile_statistics(d.compile_parts)
    local comp = T.sql(f.db, [[SELECT sum(CASE WHEN text LIKE 'XlaCompile:%' THEN "end" - start ELSE start - "end" END),
      sum(CASE WHEN text LIKE 'XlaCompileBackend:%' THEN "end" - start END)
      FROM NVTX_EVENTS WHERE domainId = 9 AND text LIKE 'XlaCompile%']])[1]
    for i = 1, #st do
      if st.Name[i]:find("^XlaCompileBackend") then T.near(st.DurNonChildMs[i], tonumber(comp[2]) * 1e-6, 1e-12, "backend")
      else T.near(st.DurNonChildMs[i], tonumber(comp[1]) * 1e-6, 1e-12, "compile less its backend") end
    end
  end},

  {"jax_summary and jax_communication on the bundle", function()
    local f = fixture()
    local mods = oracle_modules(f.ranges)
    local tables, out = T.run_analysis("jax_summary", {f.zip})
    local m = tables.modules
    T.eq(#m, 2, "two programs")
    local fp = {jit__psum = f.ref.psum_fp, jit__threefry_seed = f.ref.seed_fp}
    -- steady state: psum was compiled and the profile communicates: its first two executions are warm-up,
    -- threefry's first one
    local skip = {jit__psum = 2, jit__threefry_seed = 1}
    for i = 1, #m do
      local name = m.Name[i]
      T.eq(m.ID[i], fp[name], "ID of " .. name)
      local durs = {}
      for _, progs in pairs(mods) do
        for k, e in ipairs(progs[name]) do if k > skip[name] then durs[#durs + 1] = (e.pstop - e.pstart) * 1e-6 end end
      end
      T.eq(m["#execs"][i], #durs, "#execs of " .. name)
      T.eq(m.Thunks[i], name == "jit__psum" and 2.0 or 1.0, "thunks of " .. name)
      local mean, std = mean_std(durs)
      T.near(out.values.steady_step_ms[fp[name]], mean, 1e-12, "mean duration of " .. name)
      -- machine outputs carry numbers: the mean and the standard deviation apart
      T.near(m["Duration [ms]"][i], mean, 1e-12, "duration column of " .. name)
      if #durs > 1 then T.near(m["Duration std [ms]"][i], std, 1e-9, "duration std column of " .. name) end
    end
    -- wait time of psum: per steady execution, the spread of the devices' exposed all-reduce time
    local oc = oracle_comm(mods)
    local waits = {}
    for k = skip.jit__psum + 1, 32 do
      local hi, lo = -math.huge, math.huge
      for _, list in pairs(oc) do
        local exposed = (list[k].full - list[k].hidden) * 1e-6
        hi, lo = math.max(hi, exposed), math.min(lo, exposed)
      end
      waits[#waits + 1] = hi - lo
    end
    local wmean, wstd = mean_std(waits)
    local d = jax.load(assert(nsl.open{f.zip}))
    local compiled = jax.compiled_programs(d.compile_parts)
    local st = jax.module_stats(jax.steady(d.module, compiled, true), jax.steady(d.communication, compiled, true))
    local row = st:filter(st.Name:eq("jit__psum"))
    T.near(row.WaitMeanMs[1], wmean, 1e-9, "wait mean")
    T.near(row.WaitStdMs[1], wstd, 1e-9, "wait std")
    T.ok(tables.compile_ranges and #tables.compile_ranges == 2, "compile ranges from the export")

    -- communication: bus bandwidth per instance is the fastest device's
    local ct = T.run_analysis("jax_communication", {f.zip})
    local bw = ct.bandwidth_long
    T.eq(#bw, 1, "one collective and size")
    T.eq(bw.Collective[1], f.ref.collective, "collective")
    T.eq(bw.MessageSize[1], f.ref.bytes, "size")
    local best = {}
    for k = skip.jit__psum + 1, 32 do
      local b = -math.huge
      for _, list in pairs(oc) do
        b = math.max(b, f.ref.bytes * f.ref.bwc * 1e-6 / (list[k].full * 1e-6) * f.ref.busc)
      end
      best[#best + 1] = b
    end
    local bmean, bstd = mean_std(best)
    T.eq(bw.Instances[1], #best, "instances")
    T.near(bw.BusBwMean[1], bmean, 1e-9, "bus bandwidth mean")
    T.near(bw.BusBwErr[1], bstd / math.sqrt(#best), 1e-9, "bus bandwidth error")
    local hidden, total = 0, 0
    for k = skip.jit__psum + 1, 32 do
      for _, list in pairs(oc) do hidden = hidden + list[k].hidden; total = total + list[k].full end
    end
    T.near(ct.hidden.HiddenMs[1], hidden * 1e-6, 1e-9, "hidden ms")
    T.near(ct.hidden.ExposedMs[1], (total - hidden) * 1e-6, 1e-9, "exposed ms")
  end},

  {"other jax analyses and straggler run on the bundle", function()
    local f = fixture()
    local ft = T.run_analysis("jax_flamegraph", {f.zip})
    T.ok(next(ft) ~= nil, "flame graph tables")
    local ct = T.run_analysis("jax_compile", {f.zip})
    T.ok(next(ct) ~= nil, "compile tables")
    local _, hout = T.run_analysis("jax_heap", {f.zip})
    T.ok(#hout.items > 0, "heap output")
    local s = T.run_analysis("straggler", {f.zip}, {"source=jax"})
    T.ok(next(s) ~= nil, "straggler tables")
  end},

  {"two reports in one bundle: dumps by rank folder, devices numbered per report", function()
    local f = fixture()
    local dir = f.dir .. "/two"
    assert(nsl.mkdir_p(dir .. "/xla_dump/rank1"))
    sh("cp " .. q(f.db) .. " " .. q(dir .. "/run_rank0.sqlite") .. " && cp " .. q(f.db) .. " " .. q(dir .. "/run_rank1.sqlite"))
    -- rank 1's own dumps in its folder; a garbage psum dump shared by both reports
    sh("cp " .. q(f.dump .. "/" .. PSUM_DUMP) .. " " .. q(f.dump .. "/" .. SEED_DUMP) .. " " .. q(dir .. "/xla_dump/rank1"))
    local g = assert(io.open(dir .. "/xla_dump/" .. PSUM_DUMP, "wb"))
    g:write("\8\1garbage")
    g:close()
    local zip = dir .. "/two.zip"
    sh(string.format("%s bundle %s %s --meta %s -o %s > /dev/null", q(f.nsl), q(dir .. "/run_rank0.sqlite"),
                     q(dir .. "/run_rank1.sqlite"), q(dir .. "/xla_dump"), q(zip)))
    local tr = assert(nsl.open{zip})
    T.eq(#tr.reports, 2, "two reports")
    local store = jax.hlo_store(tr)
    T.eq(#store.files[0], 1, "rank 0: the shared dump only")
    T.eq(#store.files[1], 3, "rank 1: its own two and the shared one")
    T.eq(store.fingerprint(1, 1, "jit__psum"), f.ref.psum_fp, "rank 1 prefers its own dump")
    T.eq(store.fingerprint(0, 1, "jit__psum"), "unknown", "a dump that does not decode gives no fingerprint")
    T.eq(store.fingerprint(0, 5, "jit__threefry_seed"), "unknown", "rank 1's dump is not rank 0's")
    local d = jax.load(tr, {compile = false})
    local devs = d.module:group_by("report", "Device"):keys()
    T.eq(#devs, 4, "four devices")
    local pairs_seen = {}
    for i = 1, #devs do pairs_seen[devs.report[i] .. ":" .. devs.Device[i]] = true end
    for _, want in ipairs{"0:0", "0:1", "1:2", "1:3"} do T.ok(pairs_seen[want], "report:device " .. want) end
    local m1 = d.module:filter(d.module.report:eq(1))
    T.eq(#m1:filter(m1.ProgramId:eq("unknown")), 0, "rank 1's modules all known")
    local m0 = d.module:filter(d.module.report:eq(0))
    T.eq(#m0:filter(m0.ProgramId:eq("unknown")), #m0, "rank 0's modules unknown")
    -- iterations on this multi-rank bundle: the executions of the step program on each of the four devices,
    -- against the oracle modules (SQL): the program with the most GPU time among those run 3+ times
    local mods = oracle_modules(f.ranges)
    local best, best_t = nil, -1
    for _, progs in pairs(mods) do
      for name, list in pairs(progs) do
        local t = 0
        for _, m in ipairs(list) do t = t + m.pstop - m.pstart end
        if #list >= 3 and t > best_t then best, best_t = name, t end
      end
    end
    local it = T.run_analysis("iterations", {zip}).iterations
    local n = 0
    for dev, progs in pairs(mods) do
      for rank = 0, 1 do
        local mine = it:filter(it.Device:eq(dev + 2 * rank))
        T.eq(#mine, #progs[best], "executions of " .. best .. " on device " .. dev + 2 * rank)
        for k, m in ipairs(progs[best]) do
          T.eq(mine.Iter[k], k, "iteration number")
          T.eq(mine["Duration (ns)"][k], m.pstop - m.pstart, "duration of execution " .. k)
        end
        n = n + #mine
      end
    end
    T.eq(#it, n, "iterations over the four devices")
  end},

  {"the export alone (no dumps): the same modules, every program unknown", function()
    local f = fixture()
    local d = jax.load(assert(nsl.open{f.db}))
    T.eq(#d.module, 128, "modules")
    T.eq(#d.module:filter(d.module.ProgramId:eq("unknown")), 128, "no fingerprints")
    T.eq(#d.communication, 0, "no communication without the dumps")
    local tables, out = T.run_analysis("jax_summary", {f.db})
    T.eq(tables.modules, nil, "no module table")
    T.ok(out.items[1].kind == "text", "a note instead")
  end},

  {"an export without XLA ranges, and one without NVTX", function()
    local tr = assert(nsl.open{T.data("nsys/tiny_2026.1.sqlite")})
    T.eq(#jax.gpu_ranges(tr), 0, "nothing projected")
    T.raises(function() jax.load(tr) end, "no NVTX ranges projected", "jax.load fails cleanly")
    local pt = assert(nsl.open{T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")})
    local g = jax.gpu_ranges(pt)
    T.ok(#g > 0, "PyTorch's ranges are projected")
    T.eq(#g:filter(g.text:match("^TSL:")), 0, "no XLA ranges")
    T.raises(function() jax.load(pt) end, "no XLA module ranges", "not a JAX trace")
    T.raises(function() T.run_analysis("jax_summary", {T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")}) end,
             "not a JAX trace", "jax_summary fails in one line")
  end},

  {"cleanup", function()
    if F then os.execute("rm -rf " .. q(F.dir)) end
  end},
}
