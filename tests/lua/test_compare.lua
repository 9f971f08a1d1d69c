-- compare: every number against SQL run by the sqlite3 program on each run's
-- own file -- counts, totals, means and percentiles computed here in plain
-- Lua from the SQL rows, busy time and overlap by a brute-force sweep over
-- them -- on two real exports and a copy of one in which SQL slows one
-- kernel name; labels map to runs in order; identical runs compare equal;
-- runs group the reports of a bundle; the figures' data equals SQL; the
-- compare notebook renders.
local T = ...
local nsl = require("nsl")
local classes = require("nsl.classes")
local L = dofile(T.source_dir .. "/tests/lua/comm_testlib.lua")(T)

local A = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local B = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
local FACTOR = 2
local QS = {0.5, 0.9, 0.99}
local memcpy_short = {["Host-to-Device"] = "HtoD", ["Device-to-Host"] = "DtoH", ["Device-to-Device"] = "DtoD",
                      ["Peer-to-Peer"] = "PtoP"}

-- ---- oracles ------------------------------------------------------------------

--- count, total, mean, max and percentiles (linear interpolation between
-- order statistics) of an array of numbers.
local function dist(values)
  local v = {}
  for i, x in ipairs(values) do v[i] = x end
  table.sort(v)
  local n, total = #v, 0
  for _, x in ipairs(v) do total = total + x end
  local d = {n = n, total = total, mean = n > 0 and total / n or nil, max = v[n], q = {}}
  for j, q in ipairs(QS) do
    if n > 0 then
      local h = (n - 1) * q
      local lo = math.floor(h)
      d.q[j] = v[lo + 1] + (h - lo) * ((v[lo + 2] or v[lo + 1]) - v[lo + 1])
    end
  end
  return d
end

--- Groups SQL rows by key(row) into arrays of value(row).
local function group(rows, key, value)
  local g = {}
  for _, r in ipairs(rows) do
    local k = key(r)
    g[k] = g[k] or {}
    table.insert(g[k], value(r))
  end
  return g
end

local function strip(s) return (s:gsub(", seq = %d+", ""):gsub(", op_id = %d+", "")) end

-- Everything compare reports about one export, from SQL and brute force.
local cache = {}
local function oracle(path)
  if cache[path] then return cache[path] end
  local o = {}
  o.kernels = T.sql(path, [[SELECT coalesce(d.value, s.value), k.end - k.start, s.value, k.deviceId
    FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
    LEFT JOIN StringIds d ON d.id = k.demangledName]])
  o.memcpy = T.sql(path, [[SELECT e.label, m.end - m.start, m.bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY m
    JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind]])
  o.memset = T.sql(path, "SELECT end - start, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET")
  T.eq(T.sql1(path, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 75"), 0, "no named NVTX domains")
  o.nvtx = T.sql(path, [[SELECT coalesce(e.text, s.value), e.end - e.start FROM NVTX_EVENTS e
    LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType IN (59, 60) AND e.end IS NOT NULL]])
  o.span = T.sql1(path, "SELECT max(e) - min(s) FROM (" ..
    "SELECT start AS s, end AS e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL " ..
    "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET)")
  local num = function(r, i) return math.tointeger(tonumber(r[i])) end
  -- meso: per kernel name, class, NVTX range
  o.by_name = group(o.kernels, function(r) return r[1] end, function(r) return num(r, 2) end)
  local map = classes.default_map()
  local cls = {}
  for _, r in ipairs(o.kernels) do cls[#cls + 1] = {map:classify(r[3]), num(r, 2)} end
  for _, r in ipairs(o.memcpy) do cls[#cls + 1] = {map:classify("[CUDA memcpy " .. r[1] .. "]"), num(r, 2)} end
  for _, r in ipairs(o.memset) do cls[#cls + 1] = {map:classify("[CUDA memset]"), num(r, 1)} end
  o.by_class = group(cls, function(r) return r[1] end, function(r) return r[2] end)
  o.by_range = group(o.nvtx, function(r) return strip(r[1]) end, function(r) return num(r, 2) end)
  -- micro: per kind of operation
  o.ops = group(o.kernels, function() return "kernels" end, function(r) return num(r, 2) end)
  o.bytes = {}
  for _, r in ipairs(o.memcpy) do
    local k = "[CUDA memcpy " .. r[1] .. "]"
    o.ops[k] = o.ops[k] or {}
    table.insert(o.ops[k], num(r, 2))
    o.bytes[k] = o.bytes[k] or {}
    table.insert(o.bytes[k], num(r, 3))
  end
  for _, r in ipairs(o.memset) do
    o.ops["[CUDA memset]"] = o.ops["[CUDA memset]"] or {}
    table.insert(o.ops["[CUDA memset]"], num(r, 1))
    o.bytes["[CUDA memset]"] = o.bytes["[CUDA memset]"] or {}
    table.insert(o.bytes["[CUDA memset]"], num(r, 2))
  end
  -- macro: per device by the brute-force sweep
  o.devices = {}
  for _, op in ipairs(L.sql_ops(path)) do
    local d = o.devices[op.device] or {list = {}, lo = math.huge, hi = -math.huge}
    o.devices[op.device] = d
    d.list[#d.list + 1] = op
    d.lo, d.hi = math.min(d.lo, op.start), math.max(d.hi, op.stop)
  end
  o.macro = {devices = 0, span = 0, busy = 0, idle = 0, compute_only = 0, nccl_only = 0, both = 0, memory_only = 0}
  for _, d in pairs(o.devices) do
    d.sweep = L.sweep(d.list, d.lo, d.hi)
    local m = o.macro
    m.devices, m.span = m.devices + 1, m.span + (d.hi - d.lo)
    m.busy, m.idle = m.busy + (d.hi - d.lo) - d.sweep.idle, m.idle + d.sweep.idle
    for _, k in ipairs{"compute_only", "nccl_only", "both", "memory_only"} do m[k] = m[k] + d.sweep[k] end
  end
  -- operations
  local sum = function(rows, i)
    local s = 0
    for _, r in ipairs(rows) do s = s + num(r, i) end
    return s
  end
  o.counts = {Kernels = #o.kernels, ["Kernel Time (ns)"] = sum(o.kernels, 2), Memcpy = #o.memcpy,
              ["Memcpy Time (ns)"] = sum(o.memcpy, 2), ["Memcpy Bytes"] = sum(o.memcpy, 3), Memset = #o.memset,
              ["Memset Time (ns)"] = sum(o.memset, 1), ["Memset Bytes"] = sum(o.memset, 2), ["NVTX Ranges"] = #o.nvtx}
  for _, r in ipairs(o.memcpy) do
    local k = assert(memcpy_short[r[1]], r[1]) .. " Bytes"
    o.counts[k] = (o.counts[k] or 0) + num(r, 3)
  end
  cache[path] = o
  return o
end

-- ---- helpers --------------------------------------------------------------------

--- A copy of A with the 2nd kernel name by total time slowed FACTOR times;
-- returns the path and the name (demangled).
local function slowed()
  local r = T.sql(A, [[SELECT k.demangledName, s.value, sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
    JOIN StringIds s ON s.id = k.demangledName GROUP BY 1 ORDER BY 3 DESC LIMIT 2]])[2]
  local dst = L.tmpdir() .. "/slowed.sqlite"
  assert(os.execute("cp " .. T.shell_quote(A) .. " " .. T.shell_quote(dst)))
  T.sql_exec(dst, string.format("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + (end - start) * %d " ..
                                "WHERE demangledName = %s;", FACTOR, r[1]))
  return dst, r[2]
end

local function copy_of(path, name)
  local dst = L.tmpdir() .. "/" .. name
  assert(os.execute("cp " .. T.shell_quote(path) .. " " .. T.shell_quote(dst)))
  return dst
end

--- Rows of records r whose Run is label, keyed by column key.
local function rows_of(records, label, key)
  local m = {}
  for _, r in ipairs(records) do
    if r.Run == label then
      T.eq(m[r[key]], nil, "one row per " .. key .. " and run: " .. tostring(r[key]))
      m[r[key]] = r
    end
  end
  return m
end

local function near(a, b, what) T.near(a, b, 1e-9, what) end

--- A meso table's rows of one run against the oracle's groups.
local function check_meso(records, label, key, groups, what)
  local rows = rows_of(records, label, key)
  local total = 0
  for _, vals in pairs(groups) do for _, v in ipairs(vals) do total = total + v end end
  for k, vals in pairs(groups) do
    local r = rows[k]
    T.ok(r, what .. ": a row for " .. k)
    local d = dist(vals)
    local w = string.format("%s %s '%s'", what, label, k)
    T.eq(r.Instances, d.n, w .. " instances")
    T.eq(r["Total (ns)"], d.total, w .. " total")
    near(r["Mean (ns)"], d.mean, w .. " mean")
    near(r["p50 (ns)"], d.q[1], w .. " p50")
    near(r["p90 (ns)"], d.q[2], w .. " p90")
    near(r["p99 (ns)"], d.q[3], w .. " p99")
    T.eq(r["Max (ns)"], d.max, w .. " max")
    near(r["Time (%)"], d.total * 100 / total, w .. " time %")
  end
  for k, r in pairs(rows) do
    if not groups[k] then
      T.eq(r.Instances, 0, what .. ": absent " .. k .. " has no instances")
      T.eq(r["Mean (ns)"], nil, what .. ": absent " .. k .. " has no mean")
    end
  end
end

local function run_compare(paths, args)
  return L.run("compare", paths, args)
end

--- The Mann-Whitney U test by brute force: average ranks over the pooled
-- sample, U of the second, normal approximation with the tie correction.
local function mann_whitney(x, y)
  local all = {}
  for _, v in ipairs(x) do all[#all + 1] = {v, 0} end
  for _, v in ipairs(y) do all[#all + 1] = {v, 1} end
  table.sort(all, function(a, b) return a[1] < b[1] end)
  local n, i, r2, ties = #all, 1, 0, 0
  while i <= n do
    local j = i
    while j < n and all[j + 1][1] == all[i][1] do j = j + 1 end
    local rank, t = (i + j) / 2, j - i + 1
    for k = i, j do if all[k][2] == 1 then r2 = r2 + rank end end
    ties = ties + t * t * t - t
    i = j + 1
  end
  local n1, n2 = #x, #y
  local u = r2 - n2 * (n2 + 1) / 2
  local var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
  local z = (u - n1 * n2 / 2) / math.sqrt(var)
  return require("nsl.stats").erfc(math.abs(z) / math.sqrt(2))
end

-- ---- tests --------------------------------------------------------------------------

return {
  {"labels map to runs in order; whole runs and devices against SQL and a brute-force sweep", function()
    local C = slowed()
    local t = run_compare({A, B, C}, {"labels=nccl, h100 ,slow"})
    local files = {A, B, C}
    local labels = {"nccl", "h100", "slow"}
    T.eq(#t.macro, 3, "one macro row per run")
    for i, label in ipairs(labels) do
      local o = oracle(files[i])
      local m = t.macro[i]
      T.eq(m.Run, label, "run " .. i .. " label")
      T.eq(m.Reports, 1, label .. " reports")
      T.eq(m.Devices, o.macro.devices, label .. " devices")
      T.eq(m["GPU Span (ns)"], o.span, label .. " GPU span")
      T.eq(m["Device Span (ns)"], o.macro.span, label .. " device span")
      T.eq(m["Busy (ns)"], o.macro.busy, label .. " busy")
      T.eq(m["Idle (ns)"], o.macro.idle, label .. " idle")
      near(m["Busy (%)"], o.macro.busy * 100 / o.macro.span, label .. " busy %")
      for _, k in ipairs{"compute_only", "nccl_only", "both", "memory_only"} do
        local col = ({compute_only = "Compute Only (ns)", nccl_only = "NCCL Only (ns)", both = "Both (ns)",
                      memory_only = "Memory Only (ns)"})[k]
        T.eq(m[col], o.macro[k], label .. " " .. col)
      end
      local nccl = o.macro.both + o.macro.nccl_only
      if nccl > 0 then near(m["NCCL Hidden (%)"], o.macro.both * 100 / nccl, label .. " hidden %")
      else T.eq(m["NCCL Hidden (%)"], nil, label .. " no NCCL, no hidden share") end
      local op = t.operations[i]
      T.eq(op.Run, label, "operations row " .. i)
      for k, v in pairs(o.counts) do T.eq(op[k], v, label .. " " .. k) end
      for k, v in pairs(op) do
        if k:match(" Bytes$") and not o.counts[k] then T.eq(v, 0, label .. " " .. k .. " (none in this run)") end
      end
      -- per device
      local seen = 0
      for _, d in ipairs(t.devices) do
        if d.Run == label then
          local want = assert(o.devices[d.Device], "device " .. d.Device)
          local w = label .. " device " .. d.Device
          T.eq(d["Span (ns)"], want.hi - want.lo, w .. " span")
          T.eq(d["Idle (ns)"], want.sweep.idle, w .. " idle")
          T.eq(d["Busy (ns)"], want.hi - want.lo - want.sweep.idle, w .. " busy")
          T.eq(d["Compute Only (ns)"], want.sweep.compute_only, w .. " compute only")
          T.eq(d["NCCL Only (ns)"], want.sweep.nccl_only, w .. " NCCL only")
          T.eq(d["Both (ns)"], want.sweep.both, w .. " both")
          T.eq(d["Memory Only (ns)"], want.sweep.memory_only, w .. " memory only")
          seen = seen + 1
        end
      end
      T.eq(seen, o.macro.devices, label .. ": one row per device")
    end
    -- changes against the base (the first run)
    local ch = {}
    for _, r in ipairs(t.changes) do ch[r.Metric] = r end
    for i = 2, 3 do
      local col = labels[i] .. " vs nccl (%)"
      local oa, ob = oracle(A), oracle(files[i])
      near(ch["Busy (ns)"][col], (ob.macro.busy - oa.macro.busy) * 100 / oa.macro.busy, col .. " busy")
      near(ch["Kernel Time (ns)"][col], (ob.counts["Kernel Time (ns)"] - oa.counts["Kernel Time (ns)"]) * 100 /
        oa.counts["Kernel Time (ns)"], col .. " kernel time")
      near(ch["GPU Span (ns)"][col], (ob.span - oa.span) * 100 / oa.span, col .. " GPU span")
    end
    T.eq(ch["DtoH Bytes"]["h100 vs nccl (%)"], nil, "no change against a base of 0")
    T.eq(ch["Kernels"]["slow vs nccl (%)"], 0.0, "slowing changes no count")
    L.cleanup()
  end},

  {"per kernel name, class and NVTX range: every run against its own SQL rows", function()
    local C, victim = slowed()
    local t = run_compare({A, B, C}, {"labels=nccl,h100,slow"})
    for i, path in ipairs{A, B, C} do
      local label = ({"nccl", "h100", "slow"})[i]
      local o = oracle(path)
      check_meso(t.kernels, label, "Name", o.by_name, "kernels")
      check_meso(t.classes, label, "Class", o.by_class, "classes")
      check_meso(t.nvtx, label, "Range", o.by_range, "nvtx")
    end
    -- names ordered by their largest total over the runs; every name has a row in every run
    local best, order = {}, {}
    for _, r in ipairs(t.kernels) do
      if not best[r.Name] then order[#order + 1] = r.Name end
      best[r.Name] = math.max(best[r.Name] or 0, r["Total (ns)"])
    end
    T.eq(#t.kernels, 3 * #order, "every kernel name has a row per run")
    for i = 2, #order do
      T.ok(best[order[i - 1]] > best[order[i]] or (best[order[i - 1]] == best[order[i]] and order[i - 1] < order[i]),
           "kernels ordered by largest total")
    end
    -- the planted slowdown against the base: +100% for the slowed name, 0 for all others
    local slow = rows_of(t.kernels, "slow", "Name")
    for name, r in pairs(slow) do
      if name == victim then
        near(r["Total vs Base (%)"], (FACTOR - 1) * 100, "slowed total")
        near(r["p50 vs Base (%)"], (FACTOR - 1) * 100, "slowed median")
        T.ok(r["p (Mann-Whitney)"] < 1e-6, "slowed: significant")
        near(r["p (Mann-Whitney)"], mann_whitney(oracle(A).by_name[name], oracle(C).by_name[name]), "slowed: p")
      elseif r.Instances > 0 then
        T.eq(r["Total vs Base (%)"], 0.0, "unchanged total: " .. name)
        if r.Instances >= 3 then T.near(r["p (Mann-Whitney)"], 1.0, 1e-6, "unchanged: p = 1: " .. name) end
      end
    end
    T.eq(rows_of(t.kernels, "nccl", "Name")[victim]["Total vs Base (%)"], nil, "the base has no change")
    -- h100 against nccl: the p of a name present in both, by brute force
    local h = rows_of(t.classes, "h100", "Class")
    for cls, r in pairs(h) do
      local x, y = oracle(A).by_class[cls], oracle(B).by_class[cls]
      if x and y and #x >= 3 and #y >= 3 then
        near(r["p (Mann-Whitney)"], mann_whitney(x, y), "class " .. cls .. " p")
      else
        T.eq(r["p (Mann-Whitney)"], nil, "class " .. cls .. ": too few instances for a test")
      end
    end
    L.cleanup()
  end},

  {"single operations: distributions of durations and sizes per kind and run", function()
    local t = run_compare({A, B}, {})
    for i, path in ipairs{A, B} do
      local o = oracle(path)
      local label = path:match("([^/]+)%.sqlite$")
      local rows = rows_of(t.distributions, label, "Operation")
      local n = 0
      for op, vals in pairs(o.ops) do
        local r = assert(rows[op], label .. " " .. op)
        local d = dist(vals)
        local w = label .. " " .. op
        T.eq(r.Count, d.n, w .. " count")
        T.eq(r["Duration total (ns)"], d.total, w .. " total")
        near(r["Duration mean (ns)"], d.mean, w .. " mean")
        near(r["Duration p50 (ns)"], d.q[1], w .. " p50")
        near(r["Duration p90 (ns)"], d.q[2], w .. " p90")
        near(r["Duration p99 (ns)"], d.q[3], w .. " p99")
        T.eq(r["Duration max (ns)"], d.max, w .. " max")
        if o.bytes[op] then
          local b = dist(o.bytes[op])
          T.eq(r["Bytes total"], b.total, w .. " bytes")
          near(r["Bytes p50"], b.q[1], w .. " bytes p50")
          T.eq(r["Bytes max"], b.max, w .. " bytes max")
        else
          T.eq(r["Bytes total"], nil, w .. ": kernels move no bytes")
        end
        n = n + 1
      end
      local m = 0
      for _ in pairs(rows) do m = m + 1 end
      T.eq(m, n, label .. ": one row per kind of operation")
      T.eq(t.macro[i].Run, label, "default labels: the file names, in order")
    end
  end},

  {"identical runs compare equal", function()
    local copy = copy_of(A, "again.sqlite")
    local t = run_compare({A, copy}, {})
    local a, b = t.macro[1], t.macro[2]
    for k, v in pairs(a) do if k ~= "Run" then T.eq(b[k], v, "macro " .. k) end end
    for k, v in pairs(t.operations[1]) do if k ~= "Run" then T.eq(t.operations[2][k], v, "operations " .. k) end end
    for _, r in ipairs(t.changes) do T.eq(r["again vs pytorch_nccl_2gpu_2026.2 (%)"] or 0.0, 0.0, "no change: " .. r.Metric) end
    for _, name in ipairs{"kernels", "classes", "nvtx"} do
      local key = ({kernels = "Name", classes = "Class", nvtx = "Range"})[name]
      local x, y = rows_of(t[name], "pytorch_nccl_2gpu_2026.2", key), rows_of(t[name], "again", key)
      for k, r in pairs(x) do
        local s = assert(y[k], name .. " " .. k)
        for _, c in ipairs{"Instances", "Total (ns)", "Time (%)", "Mean (ns)", "p50 (ns)", "p90 (ns)", "p99 (ns)",
                           "Max (ns)"} do
          T.eq(s[c], r[c], name .. " " .. k .. " " .. c)
        end
        T.eq(s["Total vs Base (%)"], 0.0, name .. " " .. k .. " no change")
        if r.Instances >= 3 then T.near(s["p (Mann-Whitney)"], 1.0, 1e-6, name .. " " .. k .. " p = 1") end
      end
    end
    L.cleanup()
  end},

  {"a kernel without a name (its id missing from a damaged export's strings) is a NULL class of its own", function()
    -- found by sweeping damaged values through every analysis: compare keyed its tables by the class, and a NULL
    -- one was an internal error.  Now a row with a NULL class, as the classes analysis shows it, equal to SQL
    local copy = copy_of(A, "noname.sqlite")
    assert(os.execute("chmod u+w " .. T.shell_quote(copy)))   -- the shared data is read-only
    T.sql_exec(copy, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = -1 WHERE rowid IN " ..
                     "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid LIMIT 3 OFFSET 1);")
    local n = T.sql1(copy, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName NOT IN (SELECT id FROM StringIds)")
    local total = T.sql1(copy, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName NOT IN " ..
                               "(SELECT id FROM StringIds)")
    T.eq(n, 3, "three kernels without a name")
    local t = run_compare({copy, A}, {})
    local got = {}
    for _, r in ipairs(t.classes) do if r.Class == nil then got[r.Run] = r end end
    T.eq(got.noname and got.noname.Instances, n, "the NULL class's instances")
    T.eq(got.noname and got.noname["Total (ns)"], total, "the NULL class's time")
    T.eq(got["pytorch_nccl_2gpu_2026.2"] and got["pytorch_nccl_2gpu_2026.2"].Instances, 0, "none in the sound export")
    L.cleanup()
  end},

  {"runs: a bundle's reports are one run; runs=report and explicit groups", function()
    local dir = L.tmpdir()
    assert(os.execute(string.format("mkdir -p %s/b/reports && cp %s %s/b/reports/rank0.sqlite && cp %s %s/b/reports/rank1.sqlite",
      T.shell_quote(dir), T.shell_quote(A), T.shell_quote(dir), T.shell_quote(B), T.shell_quote(dir))))
    local members = {}
    for _, m in ipairs{"reports/rank0.sqlite", "reports/rank1.sqlite"} do
      local p = assert(io.popen("cd " .. T.shell_quote(dir .. "/b") .. " && sha256sum " .. m .. " && wc -c < " .. m))
      local sha, size = p:read("l"):match("^(%x+)"), p:read("n")
      p:close()
      members[#members + 1] = string.format('{"path": "%s", "size": %d, "sha256": "%s"}', m, size, sha)
    end
    L.write(dir .. "/b/manifest.json", '{"format": "nsl-bundle", "format_version": 1, "members": [' ..
      table.concat(members, ", ") .. "]}")
    assert(os.execute("cd " .. T.shell_quote(dir .. "/b") .. " && zip -q -0 ../twoGPU.zip manifest.json reports/*"))
    local C = copy_of(A, "single.sqlite")
    local bundle = dir .. "/twoGPU.zip"
    local oa, ob = oracle(A), oracle(B)
    local t = run_compare({bundle, C}, {})
    T.eq(#t.macro, 2, "two runs: the bundle and the export")
    T.eq(t.macro[1].Run, "twoGPU", "the bundle's name")
    T.eq(t.macro[1].Reports, 2, "the bundle's two reports")
    T.eq(t.macro[1].Devices, oa.macro.devices + ob.macro.devices, "devices of both reports")
    T.eq(t.macro[1]["Busy (ns)"], oa.macro.busy + ob.macro.busy, "busy summed over the bundle's devices")
    T.eq(t.operations[1].Kernels, oa.counts.Kernels + ob.counts.Kernels, "kernels of both reports")
    T.eq(t.macro[2].Run, "single", "the export's name")
    T.eq(t.macro[2]["Busy (ns)"], oa.macro.busy, "the export alone")
    local k = rows_of(t.kernels, "twoGPU", "Name")
    for name, vals in pairs(ob.by_name) do
      local n = #vals + (oa.by_name[name] and #oa.by_name[name] or 0)
      T.eq(k[name].Instances, n, "a run's instances are its reports' together: " .. name)
    end
    local r = run_compare({bundle, C}, {"runs=report", "labels=x,y,z"})
    T.eq(#r.macro, 3, "runs=report: one run per report")
    T.eq(r.macro[2]["Busy (ns)"], ob.macro.busy, "report 2 alone")
    local e = run_compare({bundle, C}, {"runs=3+2, 1", "labels=late,early", "base=early"})
    T.eq(#e.macro, 2, "explicit runs")
    T.eq(e.macro[1].Run, "late", "runs keep the given order")
    T.eq(e.macro[1]["Busy (ns)"], oa.macro.busy + ob.macro.busy, "reports 3 and 2")
    T.eq(e.macro[2]["Busy (ns)"], oa.macro.busy, "report 1")
    T.eq(e.changes[1]["late vs early (%)"] ~= nil, true, "the base is named by its label")
    L.cleanup()
  end},

  {"bad input: labels, base, runs, names", function()
    local copy = copy_of(A, "again.sqlite")
    local function fails(args, pattern)
      local msg = L.run_fails("compare", {A, copy}, args)
      T.ok(msg:find(pattern, 1, true), string.format("'%s' names the problem (%s)", msg, pattern))
    end
    fails({"labels=one"}, "1 label for 2 runs")
    fails({"labels=a,b,c"}, "3 labels for 2 runs")
    fails({"labels=a,a"}, "'a' is given twice")
    fails({"labels=a,"}, "label 2 is empty")
    fails({"base=nope"}, "no run 'nope'")
    fails({"base=3"}, "no run '3'")
    fails({"runs=1,4"}, "no report 4")
    fails({"runs=1+2,2"}, "named in two runs")
    fails({"runs=1,zzz"}, "no report 'zzz'")
    fails({"names=mangled"}, "is not one of demangled, short")
    L.cleanup()
  end},

  {"figures: the data behind them equals SQL", function()
    local runner = require("nsl.engine.runner")
    local a = assert(runner.load_analysis("compare"))
    local args = assert(runner.parse_args(a, {"labels=nccl,h100"}))
    local trace = assert(nsl.open{A, B})
    local out = require("nsl.engine.output").new{analysis = "compare", format = "notebook", trace = trace}
    a.run(trace, args, out)
    local figs = {}
    for _, it in ipairs(out.items) do if it.kind == "figure" then figs[it.name] = it end end
    for _, name in ipairs{"macro_time", "transfers", "kernels_top", "classes", "nvtx_top", "kernel_durations_violin",
                          "kernel_durations_cdf", "kernel_durations_hist"} do
      T.eq(figs[name] and figs[name].format, "png", name .. ": one format in a notebook, PNG")
      T.eq(figs[name] and figs[name].data:sub(1, 8), "\137PNG\r\n\26\n", name .. ": PNG data inline")
    end
    T.eq(#out.files, 0, "a notebook writes no files")
    local F = out.values.figures
    local o = {oracle(A), oracle(B)}
    local labels = {"nccl", "h100"}
    -- grouped bars
    local mt = F.macro_time
    T.eq(table.concat(mt.categories, ","), "Busy,Idle,Compute Only,NCCL Only,Both,Memory Only", "macro categories")
    for r = 1, 2 do
      T.eq(mt.series[r].label, labels[r], "macro series " .. r)
      local m = o[r].macro
      local want = {m.busy, m.idle, m.compute_only, m.nccl_only, m.both, m.memory_only}
      for i, v in ipairs(want) do T.eq(mt.series[r].values[i], v, labels[r] .. " " .. mt.categories[i]) end
    end
    local tr = F.transfers
    for i, cat in ipairs(tr.categories) do
      for r = 1, 2 do
        local want = cat == "memset" and o[r].counts["Memset Bytes"] or (o[r].counts[cat .. " Bytes"] or 0)
        T.eq(tr.series[r].values[i], want, labels[r] .. " bytes " .. cat)
      end
    end
    -- the top kernels: the 10 names with the largest total in any run, and their totals
    local best = {}
    for r = 1, 2 do
      for name, vals in pairs(o[r].by_name) do best[name] = math.max(best[name] or 0, dist(vals).total) end
    end
    local names = {}
    for name in pairs(best) do names[#names + 1] = name end
    table.sort(names, function(x, y) if best[x] ~= best[y] then return best[x] > best[y] end return x < y end)
    local kt = F.kernels_top
    T.eq(#kt.categories, 10, "ten kernel names")
    for i, name in ipairs(kt.categories) do
      T.eq(name, names[i], "kernel " .. i)
      for r = 1, 2 do
        local vals = o[r].by_name[name]
        T.eq(kt.series[r].values[i], vals and dist(vals).total or 0, labels[r] .. " total of " .. name)
      end
    end
    -- distributions: violins, CDFs, overlaid histograms
    for r = 1, 2 do
      local all = {}
      for _, row in ipairs(o[r].kernels) do all[#all + 1] = math.tointeger(tonumber(row[2])) end
      local d = dist(all)
      local v = F.kernel_durations_violin.groups[r]
      T.eq(v.label, labels[r], "violin " .. r)
      T.eq(v.n, d.n, labels[r] .. " violin n")
      near(v.median, d.q[1], labels[r] .. " violin median")
      local c = F.kernel_durations_cdf.series[r]
      T.eq(c.n, d.n, labels[r] .. " CDF n")
      near(c.p50, d.q[1], labels[r] .. " CDF p50")
      near(c.p90, d.q[2], labels[r] .. " CDF p90")
      near(c.p99, d.q[3], labels[r] .. " CDF p99")
      local h = F.kernel_durations_hist
      local edges, counts = h.edges, h.series[r].counts
      local want, nb = {}, #edges - 1
      for b = 1, nb do want[b] = 0 end
      for _, row in ipairs(o[r].kernels) do
        local x = tonumber(row[2])
        for b = 1, nb do
          if x >= edges[b] and (x < edges[b + 1] or (b == nb and x == edges[b + 1])) then
            want[b] = want[b] + 1
            break
          end
        end
      end
      local total = 0
      for b = 1, nb do
        T.eq(counts[b], want[b], labels[r] .. " histogram bin " .. b)
        total = total + counts[b]
      end
      T.eq(total, d.n, labels[r] .. ": every kernel in a bin (shared bins span all runs)")
    end
  end},

  {"the command line: --label, --out writes the tables, the figures in both formats and results.json", function()
    local dir = L.tmpdir()
    local nslbin = assert(os.getenv("NSL"))
    local ok = os.execute(string.format("%s run compare %s %s --label 'one,two' --out %s > %s/stdout 2>&1",
      T.shell_quote(nslbin), T.shell_quote(A), T.shell_quote(B), T.shell_quote(dir .. "/out"), T.shell_quote(dir)))
    T.ok(ok, "nsl run compare exits 0")
    local function read(name)
      local f = io.open(dir .. "/out/" .. name, "rb")
      if not f then return nil end
      local s = f:read("a")
      f:close()
      return s
    end
    for _, t in ipairs{"macro", "operations", "changes", "devices", "kernels", "classes", "nvtx", "distributions"} do
      T.ok(read(t .. ".csv"), t .. ".csv written")
    end
    T.ok(read("macro.csv"):find("\none,", 1, true), "labels in the CSV")
    for _, name in ipairs{"macro_time", "kernels_top", "kernel_durations_violin", "kernel_durations_hist"} do
      T.eq((read(name .. ".png") or ""):sub(1, 8), "\137PNG\r\n\26\n", name .. ".png")
      T.ok((read(name .. ".svg") or ""):find("<svg", 1, true), name .. ".svg")
    end
    local doc = assert(require("nsl.util.json").decode(read("results.json")))
    T.eq(doc.values.figures.macro_time.series[2].label, "two", "the figures' data in results.json")
    local function code(cmd)
      local _, _, c = os.execute(string.format("%s %s > /dev/null 2>&1", T.shell_quote(nslbin), cmd))
      return c
    end
    T.eq(code("run summary " .. T.shell_quote(A) .. " --label x"), 2, "--label: a usage error where no labels are taken")
    T.eq(code("run compare " .. T.shell_quote(A) .. " --label"), 2, "--label needs a value")
    T.eq(code("run compare " .. T.shell_quote(A) .. " --label a,b"), 2, "--label: two labels for one run (a usage error)")
    L.cleanup()
  end},

  {"the compare notebook renders with every cell working", function()
    local dir = L.tmpdir()
    local nslbin = assert(os.getenv("NSL"))
    local ok = os.execute(string.format("%s notebook compare %s %s -o %s --stop-on-error > %s/log 2>&1",
      T.shell_quote(nslbin), T.shell_quote(A), T.shell_quote(B), T.shell_quote(dir .. "/c.html"), T.shell_quote(dir)))
    T.ok(ok, "nsl notebook compare exits 0")
    local f = assert(io.open(dir .. "/c.html", "rb"))
    local html = f:read("a")
    f:close()
    T.ok(not html:find('class="error"', 1, true), "no cell failed")
    for _, s in ipairs{"Per kernel name", "Whole runs: GPU time summed over devices", "Per kernel class",
                       "data:image/png;base64,"} do
      T.ok(html:find(s, 1, true), "the notebook shows " .. s)
    end
    L.cleanup()
  end},
}
