-- One name per memory operation (nsl.gpu_ops' label table) in every place
-- that shows it: the memcpy kinds and the memsets SQL finds in an export
-- (CUPTI_ACTIVITY_KIND_MEMCPY's copyKind through ENUM_CUDA_MEMCPY_OPER, the
-- rows of CUPTI_ACTIVITY_KIND_MEMSET, read with the sqlite3 program) are
-- named as nsys does in the tables ("[CUDA memcpy Host-to-Device]"), and by
-- one terse label each ("memcpy HtoD", "memset") in the figure's parts, the
-- viewer's data, the TUI model (names, details, the name filter) and gaps
-- ("[memcpy HtoD]"), with SQL's count of operations of each.
local T = ...
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")

local h100 = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")

-- SQL's memory operations: {nsys label -> count}, nsys's words for each kind from the export's own enum.
local function sql_memops(path)
  local by = {}
  for _, r in ipairs(T.sql(path, "SELECT '[CUDA memcpy ' || e.label || ']', count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m " ..
                                 "JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind GROUP BY 1")) do
    by[r[1]] = math.tointeger(tonumber(r[2]))
  end
  by["[CUDA memset]"] = T.sql1(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET")
  return by
end

-- {terse label -> nsys label} over the trace's memory operations (row by row in the two styles), checking
-- that each terse label stands for one nsys label only.
local function terse_of(trace)
  local nsys = gpu_ops.table(trace, {columns = {}, names = "short", memop = true})
  local terse = gpu_ops.table(trace, {columns = {}, names = "short", labels = "terse"})
  local map = {}
  for i = 1, #nsys do
    if nsys.memop[i] then
      local t, n = terse.name[i], nsys.name[i]
      if map[t] and map[t] ~= n then error(string.format("'%s' names both %s and %s", t, map[t], n)) end
      map[t] = n
    end
  end
  return map
end

-- Counts of the values of a string column that are keys of `known`.
local function count_known(col, known)
  local g = nsl.table{{"v", col}}:group_by("v"):agg{"n=count"}
  local res = {}
  for i = 1, #g do
    if known[g.v[i]] then res[g.v[i]] = g.n[i] end
  end
  return res
end

return {
  {"tables name memory operations as nsys does: SQL's kinds and counts", function()
    local trace = assert(nsl.open(h100))
    local want = sql_memops(h100)
    local n = 0
    for _ in pairs(want) do n = n + 1 end
    T.ok(n >= 4, "HtoD, DtoH, DtoD and memset in the export")
    local ops = gpu_ops.table(trace, {columns = {}, names = "short", memop = true})
    local memops = ops:filter(ops.memop)
    local got = count_known(memops.name, want)
    for label, count in pairs(want) do T.eq(got[label], count, label) end
    T.eq(#memops, #trace.memcpy + #trace.memset, "every memory operation named")
    -- summary's table, by nsys's label
    local tables = T.run_analysis("summary", {h100}, {})
    local mem = tables.cuda_gpu_mem_time_sum
    T.ok(mem ~= nil, "summary has nsys's table of memory operations")
    local text = require("nsl.report").text(mem)
    for label in pairs(want) do T.ok(text:find(label, 1, true), "summary names " .. label) end
  end},

  {"the figure, the viewer, the TUI and gaps give each memory operation the same terse label", function()
    local trace = assert(nsl.open(h100))
    local want = sql_memops(h100)
    local terse = terse_of(trace)
    local labels = {}
    for t, n in pairs(terse) do labels[t] = want[n] end
    for n, count in pairs(want) do
      local found = false
      for t, m in pairs(terse) do found = found or (m == n and labels[t] == count) end
      T.ok(found, "one terse label for " .. n)
    end
    T.eq(terse["memset"], "[CUDA memset]", "memset")
    T.eq(terse["memcpy HtoD"], "[CUDA memcpy Host-to-Device]", "memcpy HtoD")
    -- the figure's parts: the name written on events, over the whole trace
    local lo, hi = require("nsl.window").span(trace)
    local counts = {kernel = 0, nccl = 0, memcpy_htod = 0, memcpy_dtoh = 0, memcpy_other = 0, memset = 0}
    local parts = require("nsl.plot").gpu_parts(trace, lo, hi + 1, gpu_ops.tables, counts)
    local fig = {}
    for _, p in ipairs(parts) do
      for l, c in pairs(count_known(p.label, labels)) do fig[l] = (fig[l] or 0) + c end
    end
    -- the viewer's data: every event in the detail window, names through the string table
    local v = require("nsl.engine.view").viewer(trace, {findings = false, max_events = 1000000})
    local strings = {}
    for _, s in ipairs(v.data.strings) do strings[s] = true end
    -- the TUI model: each row's name and details; the filter on each label keeps SQL's count
    local model = require("nsl.engine.tui_model")
    local m = model.new(trace)
    for _, s in ipairs(m:stages()) do s.run() end
    local tui, details = {}, {}
    local nk = #trace.kernels
    for r = nk, nk + #trace.memcpy + #trace.memset - 1 do
      local name = m:name_of({kind = "gpu"}, r)
      tui[name] = (tui[name] or 0) + 1
      if not details[name] then details[name] = select(2, m:details({kind = "gpu", lod_key = "gpu", id = 0}, r)).name end
    end
    local tlo, thi = m:span()
    -- gaps: the operations on either side of every gap
    local gaps = T.run_analysis("gaps", {h100}, {"min=0", "n=0", "scope=stream"}).gaps_stream
    local around = {}
    for _, col in ipairs{"Before", "After"} do
      for i = 1, #gaps do around[gaps[col][i]] = true end
    end
    local seen_in_gaps = 0
    for label, count in pairs(labels) do
      T.eq(fig[label], count, "figure: " .. label)
      T.ok(strings[label], "viewer: " .. label)
      T.eq(tui[label], count, "TUI name: " .. label)
      T.eq(details[label], label, "TUI details: " .. label)
      assert(m:set_filter("^" .. label .. "$", 0))
      local n = 0
      for _, l in ipairs(m.lanes) do if l.kind == "gpu" then n = n + m:count_in(l, tlo, thi + 1) end end
      T.eq(n, count, "TUI filter: " .. label)
      if around["[" .. label .. "]"] then seen_in_gaps = seen_in_gaps + 1 end
    end
    T.ok(seen_in_gaps >= 2, "gaps names memory operations by their terse label")
    -- and by no other: every bracketed name in gaps is a terse label of the export
    for name in pairs(around) do
      local inner = name:match("^%[(.*)%]$")
      if inner then T.ok(labels[inner], "gaps: " .. name) end
    end
    -- no other spelling of a memory operation anywhere (the viewer once wrote the bare kind "HtoD")
    for _, bare in ipairs{"HtoD", "DtoH", "DtoD"} do
      T.ok(not strings[bare] and not tui[bare], "no bare " .. bare)
    end
  end},
}
