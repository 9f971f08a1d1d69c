-- tests/lua/comm_testlib.lua -- helpers shared by the tests of the classes,
-- nccl and overlap analyses: run an analysis in-process and read its tables
-- as records, make derived fixtures (copies with planted NVTX iterations) with the
-- sqlite3 program, and a brute-force interval sweep in plain Lua.
local report = require("nsl.report")

return function(T)
  local L = {}

  --- Runs analysis `name` on paths with args {"k=v", ...} (T.run_analysis);
  -- returns a map table name -> array of records, and the out object.
  function L.run(name, paths, args)
    local tables, out = T.run_analysis(name, paths, args)
    local records = {}
    for k, t in pairs(tables) do records[k] = report.records(t) end
    return records, out
  end

  --- Like L.run, but expects an error; returns its message.
  function L.run_fails(name, paths, args)
    local ok, err = pcall(L.run, name, paths, args)
    if ok then error("analysis " .. name .. " did not fail", 2) end
    return tostring(err)
  end

  --- A fresh temporary folder (removed by L.cleanup).
  function L.tmpdir()
    local p = assert(io.popen("mktemp -d"))
    local d = p:read("l")
    p:close()
    L.dirs = L.dirs or {}
    L.dirs[#L.dirs + 1] = d
    return d
  end

  function L.cleanup()
    for _, d in ipairs(L.dirs or {}) do os.execute("rm -rf " .. T.shell_quote(d)) end
    L.dirs = {}
  end

  function L.write(path, text)
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
  end

  --- A copy of src in a temp folder with `n` push/pop ranges named `name`
  -- planted on the busiest CUDA-API thread of every process: the process's
  -- API time span cut into n slices, each range covering the middle 80% of
  -- its slice.  Decoys that must not count: a mark and a range with the
  -- name as a word prefix ("<name>er").
  function L.plant_steps(src, name, n)
    local d = L.tmpdir()
    local dst = d .. "/planted.sqlite"
    assert(os.execute("cp " .. T.shell_quote(src) .. " " .. T.shell_quote(dst)))
    local slices = {}
    for i = 0, n - 1 do slices[#slices + 1] = "SELECT " .. i .. " AS i" end
    T.sql_exec(dst, string.format([[
      CREATE TEMP TABLE span AS
        SELECT pid, min(s) AS t0, max(e) AS t1, (SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME r2
               WHERE ((r2.globalTid >> 24) & 16777215) = pid GROUP BY globalTid ORDER BY count(*) DESC LIMIT 1) AS tid
        FROM (SELECT ((globalTid >> 24) & 16777215) AS pid, start AS s, end AS e FROM CUPTI_ACTIVITY_KIND_RUNTIME)
        GROUP BY pid;
      INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid)
        SELECT t0 + i * ((t1 - t0) / %d) + (t1 - t0) / %d / 10, t0 + (i + 1) * ((t1 - t0) / %d) - (t1 - t0) / %d / 10,
               59, '%s', tid
        FROM span CROSS JOIN (%s);
      INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid)
        SELECT t0, NULL, 34, '%s', tid FROM span;
      INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid)
        SELECT t0, t1, 59, '%ser', tid FROM span;]], n, n, n, n, name, table.concat(slices, " UNION ALL "), name, name))
    return dst
  end

  --- The GPU operations of an export by SQL: kernels, memcpy, memset with
  -- pid, device, start, stop, kind ("kernel"/"memory"), name (short name;
  -- nsys's label for memory operations), demangled, nccl (name contains
  -- "nccl"), and launch: the start of the first CUDA API call of the same
  -- process and correlation id, or nil.
  function L.sql_ops(path)
    local ops = {}
    local launch = {}   -- first API call (table order) per (pid, correlation id)
    if L.has_table(path, "CUPTI_ACTIVITY_KIND_RUNTIME") then
      for _, r in ipairs(T.sql(path, "SELECT (globalTid >> 24) & 16777215, correlationId, start " ..
                                     "FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY rowid")) do
        local key = r[1] .. ":" .. r[2]
        if launch[key] == nil then launch[key] = tonumber(r[3]) end
      end
    end
    local q = "SELECT o.kind, (o.globalPid >> 24) & 16777215, o.deviceId, o.start, o.end, o.name, o.correlationId, " ..
      "o.demangled FROM (" .. L.ops_sql(path) .. ") o"
    for _, r in ipairs(T.sql(path, q)) do
      ops[#ops + 1] = {kind = r[1], pid = tonumber(r[2]), device = tonumber(r[3]), start = tonumber(r[4]),
                       stop = tonumber(r[5]), name = r[6], launch = launch[r[2] .. ":" .. r[7]],
                       demangled = r[8]}
      local o = ops[#ops]
      o.nccl = o.kind == "kernel" and o.name:lower():find("nccl", 1, true) ~= nil
    end
    return ops
  end

  function L.has_table(path, t)
    return T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE name = '" .. t .. "'") == 1
  end

  --- SQL for the GPU operations of an export as rows (kind, globalPid,
  -- deviceId, start, end, name, correlationId, demangled).
  function L.ops_sql(path)
    local has = function(t) return L.has_table(path, t) end
    local parts = {[[SELECT 'kernel' AS kind, k.globalPid, k.deviceId, k.start, k.end, s.value AS name, k.correlationId,
                            coalesce(d.value, s.value) AS demangled
                     FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                     LEFT JOIN StringIds d ON d.id = k.demangledName]]}
    if has("CUPTI_ACTIVITY_KIND_MEMCPY") then
      parts[#parts + 1] = [[SELECT 'memory', m.globalPid, m.deviceId, m.start, m.end, '[CUDA memcpy ' || e.label || ']',
                                   m.correlationId, '[CUDA memcpy ' || e.label || ']'
                            FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind]]
    end
    if has("CUPTI_ACTIVITY_KIND_MEMSET") then
      parts[#parts + 1] = [[SELECT 'memory', globalPid, deviceId, start, end, '[CUDA memset]', correlationId,
                                   '[CUDA memset]' FROM CUPTI_ACTIVITY_KIND_MEMSET]]
    end
    return table.concat(parts, " UNION ALL ")
  end

  --- Brute-force overlap of a list of ops within [lo, hi): a sweep over
  -- every start and end, counting running compute, NCCL and memory ops.
  -- Returns the lengths {compute_only, nccl_only, both, neither, memory_only, idle}.
  function L.sweep(ops, lo, hi)
    local ev = {}
    for _, o in ipairs(ops) do
      local s, e = math.max(o.start, lo), math.min(o.stop, hi)
      if s < e then
        local what = o.kind == "memory" and "m" or (o.nccl and "n" or "c")
        ev[#ev + 1] = {s, 1, what}
        ev[#ev + 1] = {e, -1, what}
      end
    end
    table.sort(ev, function(a, b) return a[1] < b[1] end)
    local r = {compute_only = 0, nccl_only = 0, both = 0, neither = 0, memory_only = 0, idle = 0}
    local cnt = {c = 0, n = 0, m = 0}
    local t = lo
    local i = 1
    while true do
      local nextt = ev[i] and ev[i][1] or hi
      local len = nextt - t
      if len > 0 then
        local c, n, m = cnt.c > 0, cnt.n > 0, cnt.m > 0
        if c and n then r.both = r.both + len
        elseif c then r.compute_only = r.compute_only + len
        elseif n then r.nccl_only = r.nccl_only + len
        else
          r.neither = r.neither + len
          if m then r.memory_only = r.memory_only + len else r.idle = r.idle + len end
        end
      end
      t = nextt
      if not ev[i] then break end
      cnt[ev[i][3]] = cnt[ev[i][3]] + ev[i][2]
      i = i + 1
    end
    return r
  end

  --- Sets o.iter on every op by brute force: the k-th range (by start) of
  -- its process named `name` that contains its launch (or its start when it
  -- has no API call).  Returns the ranges per pid.
  function L.attribute(path, ops, name)
    local ranges = {}
    for _, r in ipairs(T.sql(path, "SELECT (globalTid >> 24) & 16777215, start, end FROM NVTX_EVENTS " ..
                                   "WHERE eventType IN (59, 60) AND text = '" .. name .. "' ORDER BY 1, 2")) do
      local pid = tonumber(r[1])
      ranges[pid] = ranges[pid] or {}
      table.insert(ranges[pid], {tonumber(r[2]), tonumber(r[3])})
    end
    for _, o in ipairs(ops) do
      local t = o.launch or o.start
      for k, rg in ipairs(ranges[o.pid] or {}) do
        if rg[1] <= t and t < rg[2] then o.iter = k end
      end
    end
    return ranges
  end

  return L
end
