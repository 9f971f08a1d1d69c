-- The gaps analysis against oracles outside nsl: gaps from a brute-force
-- sweep in plain Lua over the GPU operations SQL returns (sqlite3 program),
-- totals from SQL, and the CUDA API call / OS call / NVTX range of each gap
-- from an SQL query over the overlapping rows.
local T = ...
local nsl = require("nsl")

local tiny = T.data("nsys/tiny_2026.1.sqlite")
local h100 = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local cuda2021 = T.data("nsys/cuda_2021.2.sqlite")
local nvfuser = T.data("nsys/nvfuser_2024.6.sqlite")
local mpi = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")


local function has_table(path, name)
  return T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" .. name .. "'") == 1
end

local PID = "((globalPid >> 24) & 16777215)"

-- The GPU operations of an export as SQL returns them: {device, stream, pid, start, stop}.
local function sql_ops(path)
  local parts = {}
  for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
    if has_table(path, t) then
      parts[#parts + 1] = string.format("SELECT deviceId, streamId, %s, start, end FROM %s WHERE end > start", PID, t)
    end
  end
  local ops = {}
  for _, r in ipairs(T.sql(path, table.concat(parts, " UNION ALL "))) do
    ops[#ops + 1] = {device = tonumber(r[1]), stream = tonumber(r[2]), pid = tonumber(r[3]),
                     start = math.tointeger(r[4]), stop = math.tointeger(r[5])}
  end
  return ops
end

-- Brute force: per key (device, or device/stream), sort by start, sweep.
-- Returns map key -> {ops, span, busy, idle, gaps = {{start, stop}}}.
local function brute(ops, by_stream)
  local groups = {}
  for _, o in ipairs(ops) do
    local key = by_stream and (o.device .. "/" .. o.stream) or tostring(o.device)
    groups[key] = groups[key] or {}
    table.insert(groups[key], o)
  end
  local res = {}
  for key, list in pairs(groups) do
    table.sort(list, function(a, b) return a.start < b.start end)
    local r = {ops = #list, busy = 0, gaps = {}}
    local cs, ce = list[1].start, list[1].stop
    local first, last = cs, ce
    for i = 2, #list do
      local o = list[i]
      if o.start > ce then
        r.busy = r.busy + (ce - cs)
        r.gaps[#r.gaps + 1] = {start = ce, stop = o.start}
        cs, ce = o.start, o.stop
      elseif o.stop > ce then ce = o.stop end
      if o.stop > last then last = o.stop end
    end
    r.busy = r.busy + (ce - cs)
    r.span = last - first
    r.idle = r.span - r.busy
    res[key] = r
  end
  return res
end

local function key_of(t, i, by_stream)
  return by_stream and (t.device[i] .. "/" .. t.stream[i]) or tostring(t.device[i])
end

-- Checks the summary and gap list of one scope against the brute force.
local function check_scope(out, ops, scope, min, what)
  local by_stream = scope == "stream"
  local ref = brute(ops, by_stream)
  local s = assert(out.tables["gaps_" .. scope .. "_summary"], "summary table")
  local nkeys = 0
  for _ in pairs(ref) do nkeys = nkeys + 1 end
  T.eq(#s, nkeys, what .. ": rows of the summary")
  for i = 1, #s do
    local key = key_of(s, i, by_stream)
    local r = assert(ref[key], what .. ": unexpected " .. scope .. " " .. key)
    local n, bigtime, largest = 0, 0, 0
    for _, g in ipairs(r.gaps) do
      local len = g.stop - g.start
      if len > min then n, bigtime = n + 1, bigtime + len end
      if len > largest then largest = len end
    end
    local w = what .. " " .. scope .. " " .. key
    T.eq(s.Ops[i], r.ops, w .. ": ops")
    T.eq(s["Span (ns)"][i], r.span, w .. ": span")
    T.eq(s["Busy (ns)"][i], r.busy, w .. ": busy")
    T.eq(s["Idle (ns)"][i], r.idle, w .. ": idle")
    if r.span > 0 then T.near(s["Idle (%)"][i], r.idle * 100 / r.span, 1e-12, w .. ": idle %") end
    T.eq(s.Gaps[i], n, w .. ": gaps above min")
    T.eq(s["Gap time (ns)"][i], bigtime, w .. ": gap time above min")
    T.eq(s["Largest gap (ns)"][i], largest, w .. ": largest gap")
  end
  -- every gap longer than min, largest first
  local want = {}
  for key, r in pairs(ref) do
    for _, g in ipairs(r.gaps) do
      if g.stop - g.start > min then want[#want + 1] = {key = key, start = g.start, dur = g.stop - g.start} end
    end
  end
  table.sort(want, function(a, b)
    if a.dur ~= b.dur then return a.dur > b.dur end
    if a.start ~= b.start then return a.start < b.start end
    return a.key < b.key
  end)
  local d = assert(out.tables["gaps_" .. scope], "gap table")
  T.eq(#d, #want, what .. ": number of " .. scope .. " gaps longer than " .. min)
  local got = {}
  for i = 1, #d do got[i] = {key = key_of(d, i, by_stream), start = d["Start (ns)"][i], dur = d["Gap (ns)"][i]} end
  for i = 2, #got do T.ok(got[i].dur <= got[i - 1].dur, what .. ": gaps sorted largest first") end
  table.sort(got, function(a, b)
    if a.dur ~= b.dur then return a.dur > b.dur end
    if a.start ~= b.start then return a.start < b.start end
    return a.key < b.key
  end)
  for i, w in ipairs(want) do
    T.eq(got[i].key, w.key, what .. ": gap " .. i .. " " .. scope)
    T.eq(got[i].start, w.start, what .. ": gap " .. i .. " start")
    T.eq(got[i].dur, w.dur, what .. ": gap " .. i .. " length")
  end
  return d
end

-- One SQL query: for every gap i (pid, start, stop), the row of `source`
-- overlapping it most (ties: later start, then earlier end, then rowid), as
-- {name, overlap}.  source: "api", "osrt" or "nvtx".  NVTX ranges nest: a
-- range's pieces are its time outside its children's (a child: a range on
-- the same thread inside it, the shortest such parent), and the piece
-- overlapping the gap most wins -- the innermost range the thread was in.
-- Only ranges that overlap a gap take part (their parents overlap it too).
local function sql_best_overlap(path, gaps, source)
  local values = {}
  for i, g in ipairs(gaps) do values[i] = string.format("(%d, %d, %d, %d)", i, g.pid, g.start, g.stop) end
  local from = ({
    api = [[SELECT rowid AS rid, ((globalTid >> 24) & 16777215) AS pid, start, end,
              (SELECT value FROM StringIds WHERE id = nameId) AS label FROM CUPTI_ACTIVITY_KIND_RUNTIME]],
    osrt = [[SELECT rowid AS rid, ((globalTid >> 24) & 16777215) AS pid, start, end,
               (SELECT value FROM StringIds WHERE id = nameId) AS label FROM OSRT_API]],
    nvtx = [[
      WITH r AS (SELECT rowid AS rid, globalTid AS gt, ((globalTid >> 24) & 16777215) AS pid, start AS s, end AS e,
                        coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) AS label,
                        (endGlobalTid IS NULL OR endGlobalTid = globalTid) AS nests
                 FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL),
      c AS (SELECT DISTINCT r.* FROM r JOIN gaps ON r.pid = gaps.pid AND r.s < gaps.e AND r.e > gaps.s),
      p AS (SELECT y.*, (SELECT z.rid FROM c z WHERE z.nests AND z.gt = y.gt AND z.rid <> y.rid AND z.s <= y.s
                         AND y.e <= z.e AND (z.s < y.s OR z.e > y.e OR z.rid < y.rid)
                         ORDER BY z.e - z.s, z.s DESC, z.rid DESC LIMIT 1) AS parent
            FROM c y WHERE y.nests),
      k AS (SELECT p.*, lag(p.e) OVER (PARTITION BY p.parent ORDER BY p.s) AS prev_e FROM p WHERE parent IS NOT NULL),
      pieces AS (
        SELECT par.rid, par.pid, coalesce(k.prev_e, par.s) AS start, k.s AS end, par.label
          FROM k JOIN c par ON par.rid = k.parent
        UNION ALL
        SELECT par.rid, par.pid, max(k.e), par.e, par.label FROM k JOIN c par ON par.rid = k.parent GROUP BY par.rid
        UNION ALL
        SELECT rid, pid, s, e, label FROM c WHERE NOT nests OR rid NOT IN (SELECT parent FROM k))
      SELECT * FROM pieces WHERE end > start]],
  })[source]
  local q = string.format([[
    WITH gaps(i, pid, s, e) AS (VALUES %s),
    x AS (%s),
    c AS (SELECT gaps.i, x.label, min(x.end, gaps.e) - max(x.start, gaps.s) AS ov, x.start AS xs, x.end AS xe, x.rid
          FROM gaps JOIN x ON x.pid = gaps.pid AND x.start < gaps.e AND x.end > gaps.s AND x.end > x.start),
    b AS (SELECT *, row_number() OVER (PARTITION BY i ORDER BY ov DESC, xs DESC, xe ASC, rid ASC) AS rn FROM c)
    SELECT i, label, ov FROM b WHERE rn = 1]], table.concat(values, ","), from)
  local best = {}
  for _, r in ipairs(T.sql(path, q)) do best[tonumber(r[1])] = {name = r[2], ov = math.tointeger(r[3])} end
  return best
end

-- nsys's reports (and nsl's api table) name CUDA calls without "_vNNNN".
local function api_name(s) return s and (s:match("^(.*)_v....$") or s) end

-- Checks the attributed calls of the gaps in table d (one export, offset 0).
local function check_attribution(path, d, sources, what)
  local gaps = {}
  for i = 1, #d do gaps[i] = {pid = d.PID[i], start = d["Start (ns)"][i], stop = d["Start (ns)"][i] + d["Gap (ns)"][i]} end
  for _, src in ipairs(sources) do
    local key, label = src[1], src[2]
    local best = sql_best_overlap(path, gaps, key)
    local matched = 0
    for i = 1, #d do
      local b = best[i]
      local want_name = b and (key == "api" and api_name(b.name) or b.name)
      T.eq(d[label][i], want_name, string.format("%s gap %d: %s", what, i, label))
      local pct = d[label .. " (% of gap)"][i]
      T.near(pct, b and b.ov * 100.0 / d["Gap (ns)"][i] or 0, 1e-12, string.format("%s gap %d: %s overlap", what, i, label))
      if b then matched = matched + 1 end
    end
    T.ok(#d == 0 or matched > 0, what .. ": some gaps overlap a " .. label)
  end
end

return {
  {"tiny export: both gaps, their neighbours and API calls, worked out by hand from its rows", function()
    local _, out = T.run_analysis("gaps", {tiny}, {"min=0", "n=0"})
    local s = out.tables.gaps_device_summary
    T.eq(#s, 1, "one device")
    -- kernels [1517727052, 1517728492) [1535979030, 1535981719), memcpy [1540178479, 1540180111)
    T.eq(s["Span (ns)"][1], 1540180111 - 1517727052, "span")
    T.eq(s["Busy (ns)"][1], 1440 + 2689 + 1632, "busy")
    T.eq(s.Gaps[1], 2, "gaps")
    local d = out.tables.gaps_device
    T.eq(#d, 2, "listed gaps")
    T.eq(d["Gap (ns)"][1], 1535979030 - 1517728492, "gap 1")
    T.eq(d["Gap (ns)"][2], 1540178479 - 1535981719, "gap 2")
    T.eq(d.After[2], "[memcpy DtoH]", "after gap 2")
    T.eq(d.Before[2], d.After[1], "the kernel between the gaps")
    -- gap 1 lies mostly in the second cudaLaunchKernel [1518030155, 1535794161);
    -- gap 2 in cudaHostAlloc [1535956590, 1539525531) more than in cudaMemcpyAsync
    T.eq(d["CUDA API"][1], "cudaLaunchKernel", "call of gap 1")
    T.near(d["CUDA API (% of gap)"][1], (1535794161 - 1518030155) * 100.0 / (1535979030 - 1517728492), 1e-12, "cover 1")
    T.eq(d["CUDA API"][2], "cudaHostAlloc", "call of gap 2")
    T.near(d["CUDA API (% of gap)"][2], (1539525531 - 1535981719) * 100.0 / (1540178479 - 1535981719), 1e-12, "cover 2")
    T.eq(d["Launch TID"][1], 283004824020018 & 16777215, "launching thread")
    local c = out.tables.gap_causes
    T.eq(#c, 2, "two causes")
    T.eq(c["CUDA API call"][1], "cudaLaunchKernel", "largest cause first")
  end},

  {"device and stream gaps equal a brute-force sweep of the SQL rows, on every export", function()
    for _, path in ipairs{tiny, h100, nccl, cuda2021, nvfuser, mpi} do
      local ops = sql_ops(path)
      for _, min in ipairs{0, 100000} do
        local _, out = T.run_analysis("gaps", {path}, {"min=" .. min, "n=0"})
        check_scope(out, ops, "device", min, path .. " min " .. min)
        check_scope(out, ops, "stream", min, path .. " min " .. min)
      end
    end
  end},

  {"a stream with one operation (no gap in it) reads 0 idle, 0 gaps, largest 0, as the brute force has it", function()
    -- a copy of the 2021 export with its first kernel moved to a stream no other operation uses
    local path = T.copy("nsys/cuda_2021.2.sqlite")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 999 WHERE rowid = " ..
                     "(SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end > start);")
    local ops = sql_ops(path)
    local _, out = T.run_analysis("gaps", {path}, {"min=0", "n=0", "scope=stream"})
    check_scope(out, ops, "stream", 0, "one kernel on stream 999")
    local s = out.tables.gaps_stream_summary
    local lone = 0
    for i = 1, #s do
      if s.stream[i] == 999 then
        lone = lone + 1
        T.eq(s.Ops[i], 1, "stream 999: one operation")
        for _, c in ipairs{"Idle (ns)", "Gaps", "Gap time (ns)", "Largest gap (ns)"} do
          T.eq(s[c][i], 0, "stream 999: " .. c)
        end
      end
    end
    T.eq(lone, 1, "stream 999 has its row")
    os.remove(path)
  end},

  {"a device of two streams: each stream's gaps are its own (the device's sweep stands for its streams only where " ..
   "they are the same rows)", function()
    -- a copy of the 2021 export with every other kernel on a second stream
    local path = T.copy("nsys/cuda_2021.2.sqlite")
    T.sql_exec(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 999 WHERE rowid % 2 = 0;")
    local ops = sql_ops(path)
    for _, min in ipairs{0, 100000} do
      local _, out = T.run_analysis("gaps", {path}, {"min=" .. min, "n=0"})
      check_scope(out, ops, "device", min, "two streams, min " .. min)
      check_scope(out, ops, "stream", min, "two streams, min " .. min)
    end
    os.remove(path)
  end},

  {"figure: the idle-gap histogram counts the brute-force gaps of the SQL rows, bin by bin", function()
    for _, path in ipairs{nccl, h100, mpi} do
      local gaps = {}
      for _, r in pairs(brute(sql_ops(path), false)) do
        for _, g in ipairs(r.gaps) do gaps[#gaps + 1] = g.stop - g.start end
      end
      local figs = T.figures("gaps", {path}, {"scope=device"})
      local f = assert(figs.gap_durations, "gap_durations figure")
      T.eq(f.data:sub(1, 8), "\137PNG\r\n\26\n", "PNG inline")
      local d = f.values
      T.eq(d.total, #gaps, path .. ": every gap in a bin")
      local e = d.edges
      for i = 1, #e - 1 do
        local n = 0
        for _, g in ipairs(gaps) do
          if g >= e[i] and (g < e[i + 1] or (i == #e - 1 and g <= e[i + 1])) then n = n + 1 end
        end
        T.eq(d.counts[i], n, string.format("%s: gaps in bin %d [%g, %g)", path, i, e[i], e[i + 1]))
      end
    end
  end},

  {"summary totals agree with SQL aggregates", function()
    local _, out = T.run_analysis("gaps", {nccl}, {"scope=device"})
    local s = out.tables.gaps_device_summary
    local parts = {}
    for _, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
      parts[#parts + 1] = "SELECT deviceId AS d, start AS s, end AS e FROM " .. t .. " WHERE end > start"
    end
    local rows = T.sql(nccl, "SELECT d, count(*), max(e) - min(s) FROM (" .. table.concat(parts, " UNION ALL ") ..
                             ") GROUP BY d ORDER BY d")
    T.eq(#s, #rows, "devices")
    for i, r in ipairs(rows) do
      T.eq(s.device[i], tonumber(r[1]), "device order")
      T.eq(s.Ops[i], tonumber(r[2]), "ops of device " .. r[1])
      T.eq(s["Span (ns)"][i], math.tointeger(r[3]), "span of device " .. r[1])
    end
  end},

  {"the CUDA API call, OS call and innermost NVTX range of each gap are those SQL finds overlapping most", function()
    local _, out = T.run_analysis("gaps", {h100}, {"min=10us", "n=0", "scope=device"})
    check_attribution(h100, out.tables.gaps_device, {{"api", "CUDA API"}, {"nvtx", "NVTX range"}}, "h100")
    _, out = T.run_analysis("gaps", {cuda2021}, {"min=1ms", "n=0", "scope=stream"})
    check_attribution(cuda2021, out.tables.gaps_stream, {{"api", "CUDA API"}, {"osrt", "OS runtime"}}, "cuda 2021")
    _, out = T.run_analysis("gaps", {nccl}, {"min=100us", "n=0", "scope=device"})
    check_attribution(nccl, out.tables.gaps_device, {{"api", "CUDA API"}, {"nvtx", "NVTX range"}}, "nccl")
  end},

  {"Launch TID: the thread of the CUDA call with the correlation id and process of the operation after the gap (SQL), " ..
   "on every export", function()
    for _, path in ipairs{tiny, h100, nccl, cuda2021, nvfuser, mpi} do
      local _, out = T.run_analysis("gaps", {path}, {"min=0", "n=300", "scope=device"})
      local d = out.tables.gaps_device
      local values = {}
      for i = 1, #d do values[i] = string.format("(%d, %d, %d)", i, d.device[i], d["Start (ns)"][i] + d["Gap (ns)"][i]) end
      local parts = {}
      for k, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
        if has_table(path, t) then
          parts[#parts + 1] = string.format("SELECT %d AS k, rowid AS rid, deviceId AS dev, start, end, " ..
                                            "correlationId AS corr, %s AS pid FROM %s WHERE end > start", k, PID, t)
        end
      end
      -- the operation after a gap: the first (kernels, copies, memsets; then by row) of the device's starting at
      -- its end; its call: the first in row order with its correlation id and process
      local q = string.format([[
        WITH gaps(i, dev, t) AS (VALUES %s), ops AS (%s),
        after AS (SELECT gaps.i, ops.corr, ops.pid,
                         row_number() OVER (PARTITION BY gaps.i ORDER BY ops.k, ops.rid) AS rn
                  FROM gaps JOIN ops ON ops.dev = gaps.dev AND ops.start = gaps.t),
        rt AS (SELECT correlationId AS corr, ((globalTid >> 24) & 16777215) AS pid, globalTid & 16777215 AS tid,
                      row_number() OVER (PARTITION BY correlationId, (globalTid >> 24) & 16777215 ORDER BY rowid) AS rn
               FROM CUPTI_ACTIVITY_KIND_RUNTIME)
        SELECT after.i, rt.tid FROM after LEFT JOIN rt ON rt.corr = after.corr AND rt.pid = after.pid AND rt.rn = 1
        WHERE after.rn = 1]], table.concat(values, ","), table.concat(parts, " UNION ALL "))
      local want, found = {}, 0
      for _, r in ipairs(T.sql(path, q)) do want[tonumber(r[1])] = math.tointeger(r[2]) end
      for i = 1, #d do
        T.eq(d["Launch TID"][i], want[i], string.format("%s gap %d: launching thread", path, i))
        if want[i] then found = found + 1 end
      end
      T.ok(#d == 0 or found > 0, path .. ": some gaps have a launching thread")
    end
  end},

  {"threads=launcher attributes only calls of the thread that launched the next operation", function()
    local _, out = T.run_analysis("gaps", {cuda2021}, {"min=1ms", "n=0", "scope=device", "threads=launcher"})
    local d = out.tables.gaps_device
    T.ok(#d > 0, "gaps")
    local tids = {}
    for i = 1, #d do
      if d["OS runtime"][i] then
        T.eq(d["OS runtime TID"][i], d["Launch TID"][i], "OS call on the launching thread, gap " .. i)
        tids[#tids + 1] = d["Launch TID"][i]
      end
    end
    T.ok(#tids > 0, "some gaps overlap an OS call of the launching thread")
  end},

  {"gaps exactly as long as min are not listed; one ns shorter min lists them", function()
    local ref = brute(sql_ops(tiny), false)["0"]
    local len = ref.gaps[2].stop - ref.gaps[2].start
    local _, out = T.run_analysis("gaps", {tiny}, {"min=" .. len, "scope=device"})
    T.eq(out.tables.gaps_device_summary.Gaps[1], 1, "only the longer gap")
    T.eq(#out.tables.gaps_device, 1, "only the longer gap listed")
    _, out = T.run_analysis("gaps", {tiny}, {"min=" .. (len - 1) .. "ns", "scope=device"})
    T.eq(out.tables.gaps_device_summary.Gaps[1], 2, "both gaps")
    T.eq(#out.tables.gaps_device, 2, "both gaps listed")
  end},

  {"several exports: each report's rows equal its own brute force, times aligned", function()
    local paths = {h100, nccl, cuda2021}
    local _, out, tr = T.run_analysis("gaps", paths, {"min=100us", "n=0", "scope=device", "per_report=true"})
    local s, d = out.tables.gaps_device_summary, out.tables.gaps_device
    local reports = tr.reports
    for r, path in ipairs(paths) do
      local name, offset = reports.name[r], reports.time_offset[r]
      local ref = brute(sql_ops(path), false)
      local rows = 0
      for i = 1, #s do
        if s.report[i] == name then
          rows = rows + 1
          local b = assert(ref[tostring(s.device[i])], "device of " .. name)
          T.eq(s["Busy (ns)"][i], b.busy, name .. ": busy")
          T.eq(s["Idle (ns)"][i], b.idle, name .. ": idle")
        end
      end
      local nref = 0
      for _ in pairs(ref) do nref = nref + 1 end
      T.eq(rows, nref, name .. ": devices")
      local starts = {}
      for _, b in pairs(ref) do
        for _, g in ipairs(b.gaps) do if g.stop - g.start > 100000 then starts[g.start + offset] = g.stop - g.start end end
      end
      for i = 1, #d do
        if d.report[i] == name then
          T.eq(starts[d["Start (ns)"][i]], d["Gap (ns)"][i], name .. ": aligned gap at " .. d["Start (ns)"][i])
        end
      end
    end
    local c = out.tables.gap_causes
    T.ok(c.report ~= nil, "per_report adds the report to the cause table")
  end},

  {"idle share above warn_idle is a warning finding", function()
    local _, out = T.run_analysis("gaps", {cuda2021}, {"scope=device"})
    T.eq(#out.findings, 1, "one finding")
    T.eq(out.findings[1].severity, "warning", "severity")
    T.eq(out.findings[1].check, "gpu_idle", "check")
    T.ok(out.findings[1].message:find("idle 94%.0%%"), "message: " .. out.findings[1].message)
    _, out = T.run_analysis("gaps", {cuda2021}, {"scope=device", "warn_idle=0"})
    T.eq(#out.findings, 0, "warn_idle=0 disables it")
    _, out = T.run_analysis("gaps", {h100}, {"scope=device"})
    T.eq(#out.findings, 0, "busy devices raise nothing")
  end},

  {"bad arguments and an export without GPU work fail with one line", function()
    local ok, e = pcall(T.run_analysis, "gaps", {tiny}, {"min=fast"})
    T.ok(not ok and nsl.is_error(e) and tostring(e):find("--arg min", 1, true), "bad min: " .. tostring(e))
    ok, e = pcall(T.run_analysis, "gaps", {tiny}, {"threads=all"})
    T.ok(not ok and nsl.is_error(e) and tostring(e):find("threads", 1, true), "bad threads: " .. tostring(e))
    ok, e = pcall(T.run_analysis, "gaps", {tiny}, {"scope=context"})
    T.ok(not ok and nsl.is_error(e) and tostring(e):find("--arg scope", 1, true), "bad scope: " .. tostring(e))
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. T.shell_quote(dir)))
    local copy = dir .. "/nogpu.sqlite"
    assert(os.execute(string.format("cp %s %s && sqlite3 %s 'DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY;'",
      T.shell_quote(tiny), T.shell_quote(copy), T.shell_quote(copy))))
    ok, e = pcall(T.run_analysis, "gaps", {copy}, {})
    os.execute("rm -rf " .. T.shell_quote(dir))
    T.ok(not ok and nsl.is_error(e) and tostring(e):find("no GPU activity", 1, true), "no GPU work: " .. tostring(e))
  end},

  {"host.prefetch: the host's columns loaded on a thread of their own equal those loaded at once (SQL counts)", function()
    local host = require("nsl.host")
    local a, b = nsl.open{nccl}, nsl.open{nccl}
    host.prefetch(a)
    host.prefetch(a)   -- (started once: a second call adds nothing)
    local sa, sb = host.sources(a), host.sources(b)
    T.eq(#sa, #sb, "the same sources")
    T.eq(#sa, has_table(nccl, "OSRT_API") and 3 or 2, "CUDA API, NVTX, and OS runtime where the export has it")
    for i, src in ipairs(sa) do
      local t, u = src.t, sb[i].t
      T.eq(#t, #u, src.key .. ": rows")
      for _, c in ipairs{"start", "stop", "tid", src.text} do
        local x, y, same = t[c]:totable(), u[c]:totable(), true
        for r = 1, #t do same = same and x[r] == y[r] end
        T.ok(same, src.key .. "." .. c .. ": the same values")
      end
    end
    T.eq(#sa[1].t, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"), "calls: SQL's count")
    -- a trace closed with its loads still running: they are stopped, nothing is left behind
    local c = nsl.open{nccl}
    host.prefetch(c)
    c:close()
    a:close()
    b:close()
  end},

  {"one time base: At is the gap's start from the trace's first event (SQL), Start stays session time", function()
    local _, out = T.run_analysis("gaps", {nccl}, {"scope=device"})
    local g = out.tables.gaps_device
    -- the trace's first event: the earliest start over GPU operations, NVTX ranges and CUDA API calls
    local first = T.sql1(nccl, [[SELECT min(s) FROM (SELECT min(start) s FROM CUPTI_ACTIVITY_KIND_KERNEL
      UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMSET
      UNION ALL SELECT min(start) FROM NVTX_EVENTS UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME)]])
    T.ok(#g > 0, "gaps listed")
    for i = 1, #g do
      T.eq(g["At (ns from start)"][i], g["Start (ns)"][i] - first, "gap " .. i .. ": At = Start - the first event")
    end
  end},
}
