-- The compile analysis against oracles outside nsl: SQL through the sqlite3
-- program over the same ranges and calls, a brute-force nsys-jax compile
-- attribution written here in plain Lua over SQL rows, and nsys-jax's own
-- golden totals on its archives.
--
-- No export in the shared data holds XLA or torch.compile ranges, so a
-- fixture is derived from a copy of the real nvFuser export (real NVTX_EVENTS
-- schema): a TSL domain and XLA ranges of two processes -- nested
-- XlaCompile / XlaCompileBackend / XlaPass ranges on a compiling thread, a
-- parallel region on two worker threads, a folded cuBLAS range, an autotuner
-- measurement with detail, a second compiling thread, ranges that must take
-- no part -- and a process with torch.compile's record_function ranges.
local T = ...
local nsl = require("nsl")

local NVFUSER = T.data("nsys/nvfuser_2024.6.sqlite")
local TINY = T.data("nsys/tiny_2026.1.sqlite")
local NCCL = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local CUDA2021 = T.data("nsys/cuda_2021.2.sqlite")
local JAX = T.data("nsys-jax")

local function num(s) return math.tointeger(tonumber(s)) or tonumber(s) end

-- Length of the union of intervals {{start, stop}, ...}.
local union = T.union_len

-- Rows of table t as Lua records, keyed by the given columns joined with "|".
local function by_key(t, keys)
  local out = {}
  for row in t:rows() do
    local k = {}
    for i, c in ipairs(keys) do k[i] = tostring(row[c]) end
    out[table.concat(k, "|")] = row
  end
  return out
end

-- ---- the fixture ----

local B = 1300000000   -- inside the nvFuser export's session
local TSL_DOMAIN = 77
-- pid, tid, start, stop (false: never ended), event type, TSL domain?, text
local FIXTURE = {
  -- process 4242: compiling thread 4242, workers 4243 and 4244, a second compiling thread 4245
  {4242, 4242, 0, 100000, 59, true, "XlaCompile:#module=jit_f,program_id=1#"},
  {4242, 4242, 1000, 95000, 59, true, "XlaCompileBackend:#module=jit_f,program_id=1#"},
  {4242, 4242, 2000, 30000, 59, true, "XlaPassPipeline:#name=opt,module=jit_f,program_id=1#"},
  {4242, 4242, 3000, 10000, 59, true, "XlaPass:#name=algsimp,module=jit_f,program_id=1#"},
  {4242, 4242, 11000, 29000, 59, true, "XlaPass:#name=fusion,module=jit_f,program_id=1#"},
  {4242, 4242, 12000, 13000, 59, false, "cublasLtMatmul"},                    -- folded into its parent
  {4242, 4242, 31000, 60000, 59, true, "XlaEmitLlvmIr:#module=jit_f,program_id=1#"},   -- launches workers
  {4242, 4243, 35000, 50000, 59, true, "XlaCompileGpuAsm"},
  {4242, 4243, 36000, 40000, 59, true, "XlaOptimizeLlvmIr"},
  {4242, 4244, 40000, 55000, 59, true, "XlaEmitGpuAsm"},
  {4242, 4242, 61000, 70000, 59, true, "XlaAutotunerMeasurement:#op=fusion.1#"},   -- its detail goes
  {4242, 4242, 62000, 65000, 59, true, "XlaCompileGpuAsm"},
  {4242, 4242, 71000, false, 59, true, "XlaPass:#name=unended,module=jit_f,program_id=1#"},
  {4242, 4244, 90000, 130000, 59, false, "ThreadPoolTask"},                   -- straddles the window
  {4242, 4244, 92000, 94000, 59, true, "XlaCompileGpuAsm"},                   -- not top-level: no graft
  {4242, 4245, 20000, 30000, 59, true, "XlaCompile:#module=jit_g,program_id=2#"},   -- another compilation
  {4242, 4245, 20500, 29500, 59, true, "XlaCompileBackend:#module=jit_g,program_id=2#"},
  {4242, 4245, 21000, 29000, 59, true, "XlaPass:#name=algsimp,module=jit_g,program_id=2#"},
  {4242, 4243, 200000, 210000, 59, true, "XlaCompileGpuAsm"},                 -- outside every window
  {4242, 4242, 150000, 160000, 60, true, "XlaCompile:#module=jit_h,program_id=3#"},   -- start/end: no part
  {4242, 4243, 310000, 320000, 59, true, "XlaCompileGpuAsm"},                 -- in 4343's window only
  -- process 4343
  {4343, 4343, 300000, 400000, 59, true, "XlaCompile:#module=jit_k,program_id=7#"},
  {4343, 4343, 301000, 399000, 59, true, "XlaCompileBackend:#module=jit_k,program_id=7#"},
  {4343, 4343, 302000, 350000, 59, true, "XlaPass:#name=algsimp,module=jit_k,program_id=7#"},
  -- process 4444: torch.compile (default domain, as autograd.profiler.emit_nvtx names them)
  {4444, 4444, 0, 50000, 59, false, "_compile.compile_inner (dynamo_timed), op_id = 17"},
  {4444, 4444, 1000, 40000, 59, false, "OutputGraph.call_user_compiler (dynamo_timed)"},
  {4444, 4444, 2000, 3000, 59, false, "aten::mul, op_id = 18"},
  {4444, 4444, 5000, 38000, 59, false, "compile_fx_inner (dynamo_timed)"},
  {4444, 4444, 10000, 20000, 59, false, "CachingAutotuner.benchmark_all_configs (dynamo_timed)"},
  {4444, 4444, 59000, 59500, 59, false, "TorchDynamo Cache Lookup"},
  {4444, 4444, 60000, 70000, 59, false, "Torch-Compiled Region: 0/0"},
  {4444, 4444, 61000, 69000, 59, false, "CompiledFunction"},
  {4444, 4444, 100000, 120000, 59, false, "_compile.compile_inner (dynamo_timed)"},
}

local fixture_path
local function fixture()
  if fixture_path then return fixture_path end
  local path = T.copy("nsys/nvfuser_2024.6.sqlite")
  local gpid = num(T.sql(path, "SELECT globalPid FROM PROCESSES WHERE pid = 30156")[1][1])
  local hi = gpid - (30156 << 24)
  local function gtid(pid, tid) return hi | (pid << 24) | tid end
  local sql = {"BEGIN;"}
  sql[#sql + 1] = string.format("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) " ..
    "VALUES (%d, NULL, 75, 'TSL', %d, %d);", B - 5000, gtid(4242, 4242), TSL_DOMAIN)
  for _, r in ipairs(FIXTURE) do
    sql[#sql + 1] = string.format("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, " ..
      "domainId) VALUES (%d, %s, %d, '%s', %d, %s, %d);", B + r[3], r[4] and tostring(B + r[4]) or "NULL", r[5],
      r[7], gtid(r[1], r[2]), r[4] and tostring(gtid(r[1], r[2])) or "NULL", r[6] and TSL_DOMAIN or 0)
  end
  for _, p in ipairs{{4242, "python3 xla_f.py"}, {4343, "python3 xla_k.py"}, {4444, "python3 torch_c.py"}} do
    sql[#sql + 1] = string.format("INSERT INTO PROCESSES (globalPid, pid, name) VALUES (%d, %d, '%s');",
                                  gtid(p[1], 0), p[1], p[2])
  end
  sql[#sql + 1] = "COMMIT;"
  T.sql_exec(path, table.concat(sql, "\n"))
  fixture_path = path
  return path
end

-- The push/pop ranges of an export in SQL, named as nvtx_sum names them
-- ("domain:text" in a named domain): {pid, tid, start, stop, name}, in row order.
local function sql_ranges(path, where)
  local rows = T.sql(path, [[
    SELECT (n.globalTid >> 24) & 16777215, n.globalTid & 16777215, n.start, n.end,
           CASE WHEN d.text IS NOT NULL THEN d.text || ':' ELSE '' END || coalesce(n.text, s.value)
    FROM NVTX_EVENTS n
    LEFT JOIN (SELECT domainId, text FROM NVTX_EVENTS WHERE eventType = 75) d
           ON d.domainId = n.domainId AND n.domainId != 0
    LEFT JOIN StringIds s ON s.id = n.textId
    WHERE n.eventType = 59 AND n.end IS NOT NULL ]] .. (where or "") .. " ORDER BY n.rowid")
  local out = {}
  for i, r in ipairs(rows) do
    out[i] = {pid = num(r[1]), tid = num(r[2]), start = num(r[3]), stop = num(r[4]), name = r[5], i = i}
  end
  return out
end

-- ---- nsys-jax's compile attribution, brute force ----

local function starts(s, p) return s:sub(1, #p) == p end

-- The parent of every range: the shortest enclosing range on its thread.
local function tree(rows)
  for _, r in ipairs(rows) do
    r.kids = {}
    local best
    for _, q in ipairs(rows) do
      if q ~= r and q.pid == r.pid and q.tid == r.tid and q.start <= r.start and q.stop >= r.stop
        and (not best or q.stop - q.start < best.stop - best.start) then best = q end
    end
    r.parent = best
  end
  for _, r in ipairs(rows) do
    if r.parent then table.insert(r.parent.kids, r) end
  end
  for _, r in ipairs(rows) do r.dur = r.stop - r.start end
  for _, r in ipairs(rows) do
    r.dur_child = 0
    for _, k in ipairs(r.kids) do r.dur_child = r.dur_child + k.dur end
    r.dur_nonchild = r.dur - r.dur_child
  end
end

local function below(r, a)
  local p = r.parent
  while p do
    if p == a then return true end
    p = p.parent
  end
  return false
end

local function root_of(r)
  while r.parent do r = r.parent end
  return r
end

-- The parallel-aware time per (pid, Name) of one process's ranges (nsys-jax:
-- _splice_parallel_ranges, _add_program_id_and_name, _drop_non_tsl,
-- remove_autotuning_detail, generate_compilation_statistics per compiling
-- thread; a top-level range that holds an XlaCompile is never a worker).
local function brute_xla(rows)
  tree(rows)
  local is_compile = function(r) return starts(r.name, "TSL:XlaCompile:#module=") end
  local holds = {}
  for _, r in ipairs(rows) do if is_compile(r) then holds[root_of(r)] = true end end
  local retain = {}
  for _, c in ipairs(rows) do
    if is_compile(c) then
      retain[c] = true
      local main = {}
      for _, r in ipairs(rows) do
        if r.start >= c.start and r.stop <= c.stop and below(r, c) then main[#main + 1] = r; retain[r] = true end
      end
      for _, w in ipairs(rows) do
        if w.start >= c.start and w.stop <= c.stop and not w.parent and w.tid ~= c.tid and not holds[w] then
          local newp
          for _, r in ipairs(main) do
            if r.start < w.start and r.stop > w.stop and (not newp or r.i > newp.i) then newp = r end
          end
          if newp then
            w.parent = newp
            w.grafted = true
            newp.dur_child, newp.dur_nonchild = nil, nil
            retain[w] = true
            for _, r in ipairs(rows) do
              if r ~= w and r.start >= c.start and r.stop <= c.stop and below(r, w) then retain[r] = true end
            end
          end
        end
      end
    end
  end
  -- program names: a backend names its own and its parent's; others inherit
  local pname = {}
  for _, r in ipairs(rows) do
    local m = retain[r] and r.name:match("^TSL:XlaCompileBackend:#module=(.-),program_id=%d+#$")
    if m then
      pname[r] = m
      if r.parent then pname[r.parent] = m end
    end
  end
  local function program(r)
    while r do
      if pname[r] then return pname[r] end
      r = r.parent
    end
  end
  -- fold non-TSL ranges
  local frame = {}
  for _, r in ipairs(rows) do
    if retain[r] then
      if starts(r.name, "TSL:") then frame[#frame + 1] = r
      elseif r.parent then
        if r.parent.dur_child then
          r.parent.dur_child = r.parent.dur_child - r.dur
          r.parent.dur_nonchild = r.parent.dur_nonchild + r.dur
        end
      end
    end
  end
  for _, r in ipairs(frame) do
    local p = program(r) or ""
    local s = r.name:sub(5)
    s = s:gsub(",module=" .. p:gsub("%p", "%%%0"), ""):gsub(":#module=" .. p:gsub("%p", "%%%0") .. "#", "")
    if starts(s, "XlaAutotunerMeasurement") then s = "XlaAutotunerMeasurement" end
    r.Name = s
  end
  -- autotuner detail: its children go, it keeps all its time
  local in_frame = {}
  for _, r in ipairs(frame) do in_frame[r] = true end
  local kept = {}
  for _, r in ipairs(frame) do
    local drop = false
    for _, a in ipairs(frame) do
      local autotuner = a.Name == "XlaAutotunerMeasurement" or a.Name == "XlaAutotunerCompilation"
      if autotuner and below(r, a) then drop = true end
    end
    if not drop then kept[#kept + 1] = r end
  end
  for _, r in ipairs(kept) do
    local has_kids = false
    for _, q in ipairs(frame) do if q.parent == r then has_kids = true end end
    if (r.Name == "XlaAutotunerMeasurement" or r.Name == "XlaAutotunerCompilation") and has_kids then
      r.dur_child, r.dur_nonchild = 0, r.dur
    end
  end
  -- attribution per compiling thread (the thread of the frame's roots)
  local out = {}
  local function add(r, v) out[r.Name] = (out[r.Name] or 0) + v end
  local function frame_root(r)
    while r.parent and in_frame[r.parent] do r = r.parent end
    return r
  end
  local dnon, dch = {}, {}
  for _, r in ipairs(kept) do dnon[r], dch[r] = r.dur_nonchild, r.dur_child end
  for _, l in ipairs(kept) do
    local main = frame_root(l).tid
    local launches = false
    for _, r in ipairs(kept) do
      if r.parent == l and r.tid ~= main and l.tid == main then launches = true end
    end
    if launches then
      local ps, pe, main_dur, total = math.huge, -math.huge, 0, 0
      local workers = {}
      for _, r in ipairs(kept) do
        if below(r, l) then
          if r.tid == l.tid then main_dur = main_dur + r.dur
          else
            workers[#workers + 1] = r
            ps, pe = math.min(ps, r.start), math.max(pe, r.stop)
            total = total + dnon[r]
          end
        end
      end
      for _, r in ipairs(workers) do add(r, (pe - ps) * dnon[r] / total) end
      dch[l] = main_dur + (pe - ps)
      dnon[l] = l.dur - dch[l]
    end
  end
  for _, r in ipairs(kept) do
    if r.tid == frame_root(r).tid then add(r, dnon[r]) end
  end
  return out
end

-- ---- tests ----

return {
  {"XLA in an export: parallel-aware time per range equals a brute-force nsys-jax attribution", function()
    local path = fixture()
    local tables = T.run_analysis("compile", {path}, {"per_process=true", "limit=0"})
    local mine = by_key(tables.xla_ranges, {"pid", "Range"})
    local n = 0
    for _, pid in ipairs{4242, 4343} do
      local want = brute_xla(sql_ranges(path, "AND (n.globalTid >> 24) & 16777215 = " .. pid))
      local total = 0
      for name, ns in pairs(want) do
        local got = mine[pid .. "|" .. name]
        T.ok(got, "range " .. name .. " of pid " .. pid)
        T.near(got["Time (ms)"] * 1e6, ns, 1e-9, pid .. " " .. name)
        total, n = total + ns, n + 1
      end
      -- the parts add up to the compilations' wall time: the XlaCompile ranges' summed durations
      local sum = num(T.sql(path, [[SELECT sum(end - start) FROM NVTX_EVENTS WHERE eventType = 59
        AND text LIKE 'XlaCompile:#module=%' AND domainId = 77 AND (globalTid >> 24) & 16777215 = ]] .. pid)[1][1])
      T.near(total, sum, 1e-12, "pid " .. pid .. " parts add up")
    end
    T.eq(#tables.xla_ranges, n, "no other ranges")
    local pct = {}
    for row in tables.xla_ranges:rows() do pct[row.pid] = (pct[row.pid] or 0) + row["Compile (%)"] end
    T.near(pct[4242], 100, 1e-9, "shares of pid 4242")
    T.near(pct[4343], 100, 1e-9, "shares of pid 4343")
    -- the parallel region of XlaEmitLlvmIr (20 us) shared 11 : 4 : 15 by the workers' own times
    T.near(mine["4242|XlaCompileGpuAsm"]["Time (ms)"] * 1e6, 20000 * 11 / 30, 1e-9, "worker share")
    T.near(mine["4242|XlaEmitLlvmIr:#module=jit_f,program_id=1#"]["Time (ms)"] * 1e6, 29000 - 20000, 1e-9,
           "launcher keeps its own time")
    T.near(mine["4242|XlaAutotunerMeasurement"]["Time (ms)"] * 1e6, 9000, 1e-9, "measurement keeps its detail")
  end},

  {"XLA summary and programs: sums equal SQL over the XlaCompile ranges, per process and over all", function()
    local path = fixture()
    local tables, out = T.run_analysis("compile", {path}, {})
    local s = tables.summary
    local rows = {}
    for row in s:rows() do rows[(row.pid or "all") .. "|" .. row.What] = row end
    local all_time, all_wall = 0, 0
    for _, pid in ipairs{4242, 4343} do
      local iv, sum, n = {}, 0, 0
      for _, r in ipairs(T.sql(path, [[SELECT start, end FROM NVTX_EVENTS WHERE eventType = 59 AND domainId = 77
          AND text LIKE 'XlaCompile:#module=%' AND end IS NOT NULL AND (globalTid >> 24) & 16777215 = ]] .. pid)) do
        iv[#iv + 1] = {num(r[1]), num(r[2])}
        sum, n = sum + num(r[2]) - num(r[1]), n + 1
      end
      local row = rows[pid .. "|XLA compilation"]
      T.eq(row.Instances, n, pid .. " compilations")
      T.near(row["Time (ms)"] * 1e6, sum, 1e-12, pid .. " XLA time")
      T.near(row["Wall (ms)"] * 1e6, union(iv), 1e-12, pid .. " XLA wall")
      local dur = num(T.sql(path, "SELECT duration FROM ANALYSIS_DETAILS")[1][1])
      T.near(row["Run (%)"], union(iv) * 100 / dur, 1e-9, pid .. " share of the run")
      T.eq(row.process, pid == 4242 and "python3 xla_f.py" or "python3 xla_k.py", "process name")
      all_time, all_wall = all_time + sum, all_wall + union(iv)
    end
    T.near(rows["all|XLA compilation"]["Time (ms)"] * 1e6, all_time, 1e-12, "XLA time over all")
    T.near(rows["all|XLA compilation"]["Wall (ms)"] * 1e6, all_wall, 1e-12, "XLA wall over all")
    -- per program: the XlaCompile ranges' durations
    local p = by_key(tables.xla_programs, {"Program"})
    T.near(p.jit_f["Time (ms)"] * 1e6, 100000, 1e-12, "jit_f")
    T.near(p.jit_g["Time (ms)"] * 1e6, 10000, 1e-12, "jit_g (a second compiling thread)")
    T.near(p.jit_k["Time (ms)"] * 1e6, 100000, 1e-12, "jit_k")
    T.eq(p.jit_f.ProgramId, "1", "program id without a dump")
    T.eq(p.jit_h, nil, "a start/end range is no compilation")
    T.ok(out.values.total_ms > 0, "total_ms")
  end},

  {"XLA passes: time per pass is the brute-force attribution of its XlaPass ranges", function()
    local path = fixture()
    local tables = T.run_analysis("compile", {path}, {"limit=0"})
    local want = {}
    for _, pid in ipairs{4242, 4343} do
      for name, ns in pairs(brute_xla(sql_ranges(path, "AND (n.globalTid >> 24) & 16777215 = " .. pid))) do
        local pass = name:match("^XlaPass:#name=([^,#]*)")
        if pass then want[pass] = (want[pass] or 0) + ns end
      end
    end
    local got = by_key(tables.xla_passes, {"Pass"})
    local n = 0
    for pass, ns in pairs(want) do
      T.near(got[pass]["Time (ms)"] * 1e6, ns, 1e-9, "pass " .. pass)
      n = n + 1
    end
    T.eq(#tables.xla_passes, n, "passes")
    T.eq(got.algsimp.Instances, 3, "algsimp ranges")
    T.near(tables.xla_passes["Passes (%)"]:sum(), 100, 1e-9, "pass shares")
    local xla = 0
    for _, pid in ipairs{4242, 4343} do
      local ranges = sql_ranges(path, "AND (n.globalTid >> 24) & 16777215 = " .. pid)
      for _, ns in pairs(brute_xla(ranges)) do xla = xla + ns end
    end
    T.near(got.algsimp["Compile (%)"], want.algsimp * 100 / xla, 1e-9, "algsimp share of XLA compile time")
    T.eq(got.unended, nil, "a range that never ended takes no part")
  end},

  {"torch.compile ranges: compilations, self times and compiled-code ranges equal SQL", function()
    local path = fixture()
    local tables = T.run_analysis("compile", {path}, {"limit=0"})
    local rows = sql_ranges(path, "AND (n.globalTid >> 24) & 16777215 = 4444")
    tree(rows)
    local compile = require("nsl.compile")
    local self, count, roots, root_iv = {}, {}, 0, {}
    local function name_of(r) return (r.name:gsub(", op_id = %d+", "")) end
    local function is_compile(r) local _, ph = compile.classify_range(name_of(r)) return ph == "compile" end
    for _, r in ipairs(rows) do
      local a, under = r, false
      while a do
        if is_compile(a) then under = true end
        a = a.parent
      end
      if under then
        local n = name_of(r)
        self[n] = (self[n] or 0) + r.dur_nonchild
        count[n] = (count[n] or 0) + 1
        local p, top = r.parent, true
        while p do if is_compile(p) then top = false end p = p.parent end
        if top and is_compile(r) then roots = roots + 1; root_iv[#root_iv + 1] = {r.start, r.stop} end
      end
    end
    local got = by_key(tables.compiler_ranges, {"Range"})
    local n = 0
    for name, ns in pairs(self) do
      T.near(got[name]["Self (ms)"] * 1e6, ns, 1e-12, "self of " .. name)
      T.eq(got[name].Instances, count[name], "instances of " .. name)
      T.eq(got[name].Compiler, "torch.compile", name)
      n = n + 1
    end
    local nv = 0
    for row in tables.compiler_ranges:rows() do if row.Compiler == "torch.compile" then nv = nv + 1 end end
    T.eq(nv, n, "torch ranges")
    T.eq(got["aten::mul"].Instances, 1, "an op traced during compilation counts, its op_id removed")
    local s = by_key(tables.summary, {"pid", "What"})["4444|torch.compile"]
    T.eq(s.Instances, roots, "compilations")
    T.near(s["Time (ms)"] * 1e6, 70000, 1e-12, "compile time")
    T.near(s["Wall (ms)"] * 1e6, union(root_iv), 1e-12, "compile wall")
    local run = by_key(tables.compiled_code, {"Range"})
    T.eq(run["Torch-Compiled Region: 0/0"].Instances, 1, "compiled region")
    T.eq(run.CompiledFunction.Instances, 1, "compiled function")
    T.near(run["TorchDynamo Cache Lookup"]["Time (ms)"] * 1e6, 500, 1e-12, "guard time")
  end},

  {"nvFuser compilation on a real export: ranges and self times equal SQL", function()
    local tables = T.run_analysis("compile", {NVFUSER}, {"limit=0"})
    local root = T.sql(NVFUSER, [[SELECT count(*), sum(end - start) FROM NVTX_EVENTS
      WHERE eventType = 59 AND text = 'KernelExecutor::compileFusion']])[1]
    local s = by_key(tables.summary, {"pid", "What"})["30156|nvFuser"]
    T.eq(s.Instances, num(root[1]), "compilations")
    T.near(s["Time (ms)"] * 1e6, num(root[2]), 1e-12, "compile time")
    -- everything inside compileFusion on its thread; self times add up to it
    local inside = T.sql(NVFUSER, [[SELECT n.text, count(*), sum(n.end - n.start) FROM NVTX_EVENTS n,
        (SELECT start, end, globalTid FROM NVTX_EVENTS WHERE text = 'KernelExecutor::compileFusion') c
      WHERE n.eventType = 59 AND n.globalTid = c.globalTid AND n.start >= c.start AND n.end <= c.end
      GROUP BY n.text]])
    local got = by_key(tables.compiler_ranges, {"Range"})
    local self_sum = 0
    for _, r in ipairs(inside) do
      T.eq(got[r[1]].Instances, num(r[2]), "instances of " .. r[1])
      T.near(got[r[1]]["Time (ms)"] * 1e6, num(r[3]), 1e-12, "time of " .. r[1])
    end
    T.eq(#tables.compiler_ranges, #inside, "ranges")
    for row in tables.compiler_ranges:rows() do self_sum = self_sum + row["Self (ms)"] end
    T.near(self_sum * 1e6, num(root[2]), 1e-9, "self times add up to the compilation")
  end},

  {"CUDA loading and JIT calls: per name and per process equal SQL; the process union by brute force", function()
    for _, path in ipairs{NVFUSER, NCCL} do
      local tables = T.run_analysis("compile", {path}, {"limit=0", "per_process=true"})
      local want = T.sql(path, [[SELECT (r.globalTid >> 24) & 16777215, s.value, count(*), sum(r.end - r.start)
        FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
        WHERE s.value GLOB 'cuModuleLoad*' OR s.value GLOB 'cuLibraryLoad*' OR s.value GLOB 'cudaLibraryLoad*'
           OR s.value GLOB 'cuLibraryGetKernel*' OR s.value GLOB 'cuModuleGetFunction*'
           OR s.value GLOB 'cudaGetFuncBySymbol*' OR s.value GLOB 'cuLink*' OR s.value GLOB 'nvrtc*'
           OR s.value GLOB 'cudaGraphInstantiate*' OR s.value GLOB 'cudaStreamBeginCapture*'
        GROUP BY 1, 2]])
      T.ok(#want > 0, path .. " has loading calls")
      local got = by_key(tables.cuda_loading, {"pid", "Name"})
      local per_pid = {}
      for _, r in ipairs(want) do
        local name = r[2]:gsub("_v%d%d%d%d$", "")   -- nsys's rule: a _vNNNN suffix goes
        local g = got[r[1] .. "|" .. name]
        T.ok(g, path .. " " .. name)
        T.eq(g.Instances, num(r[3]), name .. " calls")
        T.near(g["Time (ms)"] * 1e6, num(r[4]), 1e-12, name .. " time")
        per_pid[r[1]] = (per_pid[r[1]] or 0) + num(r[3])
      end
      T.eq(#tables.cuda_loading, #want, path .. " names")
      local s = by_key(tables.summary, {"pid", "What"})
      for pid, n in pairs(per_pid) do
        T.eq(s[pid .. "|CUDA module/library loading (API)"].Instances, n, pid .. " calls")
      end
    end
    -- nvFuser: everything in one process, loading calls partly inside the compilation
    local iv = {}
    for _, r in ipairs(T.sql(NVFUSER, [[SELECT r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN StringIds s ON s.id = r.nameId WHERE s.value GLOB 'cuModuleLoad*' OR s.value GLOB 'cuLibraryLoad*'
        OR s.value GLOB 'cuLibraryGetKernel*'
        UNION ALL SELECT start, end FROM NVTX_EVENTS WHERE text = 'KernelExecutor::compileFusion']])) do
      iv[#iv + 1] = {num(r[1]), num(r[2])}
    end
    local tables, out = T.run_analysis("compile", {NVFUSER}, {})
    local all = by_key(tables.summary, {"pid", "What"})["30156|all compiling and loading"]
    T.near(all["Wall (ms)"] * 1e6, union(iv), 1e-12, "union of compilation and loading")
    T.near(out.values.total_ms * 1e6, union(iv), 1e-12, "total_ms")
  end},

  {"CUPTI loading overhead (module loading, lazy loading, driver JIT) equals SQL", function()
    local tables = T.run_analysis("compile", {TINY}, {"limit=0"})
    local want = T.sql(TINY, [[SELECT overheadType, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_OVERHEAD
      WHERE overheadType IN (2, 6, 7) GROUP BY 1]])
    local kinds = {["2"] = "driver_jit", ["6"] = "module_loading", ["7"] = "lazy_loading"}
    local got = by_key(tables.cupti_loading, {"Class"})
    local n, total = 0, 0
    for _, r in ipairs(want) do
      local g = got[kinds[r[1]]]
      T.eq(g.Instances, num(r[2]), kinds[r[1]] .. " records")
      T.near(g["Time (ms)"] * 1e6, num(r[3]), 1e-12, kinds[r[1]] .. " time")
      n, total = n + 1, total + num(r[3])
    end
    T.eq(#tables.cupti_loading, n, "kinds")
    local s = tables.summary
    T.near(s:filter(s.What:eq("CUDA loading by the driver (CUPTI)"))["Time (ms)"][1] * 1e6, total, 1e-12, "summary")
    -- the profiler's own overhead is not code loading
    local h100 = T.run_analysis("compile", {T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")}, {})
    T.eq(h100.cupti_loading, nil, "command buffer full is no loading")
  end},

  {"nsys-jax archives: the XLA total equals nsys-jax's golden parallel-aware compile time", function()
    local procs = {}
    for p = 0, 3 do procs[p + 1] = JAX .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end
    for which, want in pairs{proc0 = 69388.40487999999, combined = 263525.568938} do
      local tables, out = T.run_analysis("compile", which == "proc0" and {procs[1]} or procs, {})
      local s = tables.summary
      local xla = s:filter(s.What:eq("XLA compilation"))
      local total = which == "proc0" and xla["Time (ms)"][1] or xla:filter(xla.report:eq("all"))["Time (ms)"][1]
      T.near(total, want, 1e-9, which .. " XLA compile ms")
      T.near(tables.xla_ranges["Time (ms)"]:sum(), want, 1e-9, which .. " ranges add up")
      T.near(out.values.total_ms, want, 1e-9, which .. " total_ms")
    end
  end},

  {"bad ranges (ending before they start, never ending) take no part", function()
    local path = T.copy("nsys/nvfuser_2024.6.sqlite")
    T.sql_exec(path, "ATTACH '" .. fixture() .. "' AS f; DELETE FROM NVTX_EVENTS; " ..
                     "INSERT INTO NVTX_EVENTS SELECT * FROM f.NVTX_EVENTS; DETACH f;")
    local good = T.run_analysis("compile", {path}, {"per_process=true"})
    local gpid = num(T.sql(path, "SELECT globalPid FROM PROCESSES WHERE pid = 30156")[1][1])
    local g = gpid - (30156 << 24) | (4343 << 24) | 4343
    T.sql_exec(path, string.format([[INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId)
      VALUES (%d, %d, 59, 'XlaCompile:#module=jit_bad,program_id=9#', %d, 77),
             (%d, NULL, 59, 'XlaCompile:#module=jit_open,program_id=10#', %d, 77),
             (%d, %d, 59, '_compile.compile_inner (dynamo_timed)', %d, 0);]],
      B + 500000, B + 450000, g, B + 600000, g, B + 700000, B + 650000, g))
    local bad = T.run_analysis("compile", {path}, {"per_process=true"})
    for _, name in ipairs{"summary", "xla_ranges", "xla_programs", "compiler_ranges"} do
      T.eq(#bad[name], #good[name], name .. " rows")
      local col = name == "summary" and "Wall (ms)" or "Time (ms)"
      T.near(bad[name][col]:sum(), good[name][col]:sum(), 1e-12, name .. " time")
    end
    os.remove(path)
  end},

  {"a trace without compilation or loading: a note, no failure", function()
    local tables, out = T.run_analysis("compile", {CUDA2021}, {})
    T.eq(tables.summary, nil, "no summary")
    T.eq(out.values.total_ms, 0, "total_ms")
    T.ok(#out.items == 1 and out.items[1].kind == "text", "a note")
  end},

  {"warn: a process above the share gets a warning finding", function()
    local _, out = T.run_analysis("compile", {NVFUSER}, {"warn=10"})
    T.eq(#out.findings, 1, "one finding")
    T.eq(out.findings[1].severity, "warning", "severity")
    T.ok(out.findings[1].message:find("30156"), "names the process")
    local _, quiet = T.run_analysis("compile", {NVFUSER}, {"warn=50"})
    T.eq(#quiet.findings, 0, "below the limit")
  end},
}
