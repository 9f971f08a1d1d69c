-- The nvtx analysis and lua/nsl/nvtx.lua on real exports, against oracles
-- that are not nsl: SQL GROUP BY through the sqlite3 program (nvtx_sum), and
-- a brute-force projection computed here from SQL rows: every GPU op's
-- launching call checked against every range of its thread (nsys's
-- nvtx_gpu_proj_trace definition), every range against every range for
-- the hierarchy.
local T = ...
local nsl = require("nsl")
local nvtx = require("nsl.nvtx")

local files = {"nvfuser_2024.6", "pytorch_h100_2gpu_2026.2", "pytorch_nccl_2gpu_2026.2", "mpi_cuda_rank0_2022.2"}
local function path(f) return T.data("nsys/" .. f .. ".sqlite") end

local function int(s) return math.tointeger(tonumber(s)) end

-- The display name of a range in SQL: "domain:text" in a named domain, else the text.
local NAME_SQL = [[
  CASE WHEN d.name IS NULL THEN coalesce(n.text, s.value, '') ELSE d.name || ':' || coalesce(n.text, s.value, '') END]]
local FROM_SQL = [[
  FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS s ON s.id = n.textId
  LEFT JOIN (SELECT domainId AS id, globalTid >> 24 AS p, min(coalesce(text, (SELECT value FROM StringIds WHERE id = textId))) AS name
             FROM NVTX_EVENTS WHERE eventType = 75 GROUP BY 1, 2) AS d ON d.id = n.domainId AND d.p = n.globalTid >> 24]]

------------------------------------------------------------------------------
-- The brute-force projection from SQL rows.

-- Ranges that take part: push/pop and start/end ranges ending on their own thread.
local function sql_ranges(f)
  local list = {}
  for _, r in ipairs(T.sql(path(f), "SELECT n.globalTid, n.start, n.end, " .. NAME_SQL .. ", n.eventType " .. FROM_SQL ..
      " WHERE n.eventType IN (59, 60) AND n.endGlobalTid IS NULL")) do
    local gt = int(r[1])
    list[#list + 1] = {gt = gt, pid = (gt >> 24) & 0xFFFFFF, tid = gt & 0xFFFFFF, start = int(r[2]),
                       stop = int(r[3]), name = r[4]}
  end
  return list
end

-- GPU ops with their launching runtime calls (same process, same correlation
-- id): one entry per (op, call) pair; `op` names the op.  (2022 exports
-- record some calls twice, e.g. cudaLaunchKernel and cudaLaunchKernel_v7000
-- with one correlation id: an op then has two calls.)
local function sql_ops(f)
  local parts = {}
  for k, t in ipairs{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
    if T.sql1(path(f), "SELECT count(*) FROM sqlite_master WHERE name = '" .. t .. "'") == 1 then
      parts[#parts + 1] = "SELECT '" .. k .. ":' || rowid AS op, start, end, correlationId, globalPid FROM " .. t
    end
  end
  local list = {}
  for _, r in ipairs(T.sql(path(f), "SELECT o.op, o.start, o.end, c.globalTid, c.start, c.end, c.correlationId FROM (" ..
      table.concat(parts, " UNION ALL ") .. [[) AS o JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS c
      ON c.correlationId = o.correlationId AND (c.globalTid >> 24) = (o.globalPid >> 24)]])) do
    list[#list + 1] = {op = r[1], start = int(r[2]), stop = int(r[3]), gt = int(r[4]), cstart = int(r[5]),
                       cstop = int(r[6]), corr = int(r[7])}
  end
  return list
end

local function key_of(r) return string.format("%d|%d|%d|%d|%s", r.pid, r.tid, r.start, r.stop or -1, r.name) end

-- For every range: the ops whose call it encloses; for every op: the
-- shortest enclosing range.  Ops are indexed by thread and call start, and
-- every range scans the ops of its thread that start inside it.
local function brute_project(ranges, ops)
  local by_thread = {}
  for _, o in ipairs(ops) do
    by_thread[o.gt] = by_thread[o.gt] or {}
    table.insert(by_thread[o.gt], o)
  end
  for _, list in pairs(by_thread) do table.sort(list, function(a, b) return a.cstart < b.cstart end) end
  local function first_at(list, t)   -- first op with call start >= t
    local lo, hi = 1, #list + 1
    while lo < hi do
      local mid = (lo + hi) // 2
      if list[mid].cstart < t then lo = mid + 1 else hi = mid end
    end
    return lo
  end
  for _, r in ipairs(ranges) do
    local list = by_thread[r.gt] or {}
    local n, first, last, busy, calls, ncalls, seen = 0, nil, nil, 0, {}, 0, {}
    for i = first_at(list, r.start), #list do
      local o = list[i]
      if o.cstart > r.stop then break end
      if o.cstop <= r.stop and not seen[o.op] then
        seen[o.op] = true
        n = n + 1
        busy = busy + (o.stop - o.start)
        first = first and math.min(first, o.start) or o.start
        last = last and math.max(last, o.stop) or o.stop
        if not calls[o.corr] then calls[o.corr], ncalls = true, ncalls + 1 end
      end
      if o.cstop <= r.stop then   -- the op's innermost range over all its calls
        local len = r.stop - r.start
        if not o.inner or len < o.inner_len then o.inner, o.inner_len = r, len end
      end
    end
    r.ops, r.launches, r.gpu_time = n, ncalls, busy
    r.proj_start, r.proj_dur = first, first and (last - first) or nil
  end
end

-- The shortest range of r's thread enclosing r (other than r), and the
-- number of ranges enclosing it (its depth); candidates: the list of its thread.
local function brute_parent(r, list)
  local best, depth = nil, 0
  for _, q in ipairs(list) do
    if q ~= r and q.start <= r.start and r.stop <= q.stop then
      depth = depth + 1
      if not best or q.stop - q.start < best.stop - best.start then best = q end
    end
  end
  return best, depth
end

local function nsl_ranges(P)
  local R = P.ranges
  local t = R:filter(P.mask):with("row", nsl.range(#R):gather(P.mask:indices()))
  local list, byrow = {}, {}
  for _, v in ipairs(T.rows(t, {"pid", "tid", "start", "stop", "name", "proj_start", "proj_dur", "ops", "launches",
                             "gpu_time", "parent", "depth", "row", "children"})) do
    local r = {pid = v[1], tid = v[2], start = v[3], stop = v[4], name = v[5], proj_start = v[6], proj_dur = v[7],
               ops = v[8], launches = v[9], gpu_time = v[10], parent = v[11], depth = v[12], row = v[13],
               children = v[14]}
    list[#list + 1] = r
    byrow[r.row] = r
  end
  return list, byrow
end

local cache = {}
local function projected(f)
  if cache[f] then return table.unpack(cache[f]) end
  local tr = assert(nsl.open(path(f)))
  local P = nvtx.project(tr)
  local ranges, ops = sql_ranges(f), sql_ops(f)
  brute_project(ranges, ops)
  cache[f] = {tr, P, ranges, ops}
  return tr, P, ranges, ops
end

local tests = {}
local function test(name, fn) tests[#tests + 1] = {name, fn} end

------------------------------------------------------------------------------

for _, f in ipairs(files) do
  test(f .. ": nvtx_sum equals SQL GROUP BY (name, style)", function()
    local tr = assert(nsl.open(path(f)))
    local nv = tr.nvtx
    nv:load{"report", "dur", "kind", "text", "domain"}
    local s = nvtx.summaries(nv:with("name", nvtx.names(nv)), {proj = false})
    local q = T.sql(path(f), "SELECT " .. NAME_SQL .. ", CASE n.eventType WHEN 59 THEN 'PushPop' ELSE 'StartEnd' END, " ..
      "n.end - n.start " .. FROM_SQL .. " WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL")
    local groups, grand = {}, 0
    for _, r in ipairs(q) do
      local k = r[1] .. "\0" .. r[2]
      groups[k] = groups[k] or {}
      table.insert(groups[k], int(r[3]))
      grand = grand + int(r[3])
    end
    local seen = 0
    for _, v in ipairs(T.rows(s, {"Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
                               "Max (ns)", "StdDev (ns)", "Style", "Range"})) do
      local d = assert(groups[v[10] .. "\0" .. v[9]], "no SQL group for " .. v[10])
      seen = seen + 1
      local total, lo, hi = 0, math.huge, -math.huge
      for _, x in ipairs(d) do total, lo, hi = total + x, math.min(lo, x), math.max(hi, x) end
      T.eq(v[2], total, "total " .. v[10])
      T.eq(v[3], #d, "instances " .. v[10])
      T.near(v[4], total / #d, 1e-12, "avg " .. v[10])
      T.near(v[5], T.median(d), 1e-12, "median " .. v[10])
      T.eq(v[6], lo, "min " .. v[10])
      T.eq(v[7], hi, "max " .. v[10])
      T.near(v[8], T.stdev(d), 1e-9, "stddev " .. v[10])
      T.near(v[1], total * 100 / grand, 1e-9, "time % " .. v[10])
    end
    local ngroups = 0
    for _ in pairs(groups) do ngroups = ngroups + 1 end
    T.eq(seen, ngroups, "number of (name, style) groups")
    -- sorted by total time, descending
    local totals = s["Total Time (ns)"]:totable()
    for i = 2, #totals do T.ok(totals[i - 1] >= totals[i], "sorted by total at row " .. i) end
  end)
end

for _, f in ipairs(files) do
  test(f .. ": projection equals the brute force (every op against every range)", function()
    local _, P, ranges = projected(f)
    local got = {}
    local mine = nsl_ranges(P)
    T.eq(#mine, #ranges, "ranges taking part")
    for _, r in ipairs(mine) do got[key_of(r)] = r end
    for _, r in ipairs(ranges) do
      local k = key_of(r)
      local g = assert(got[k], "nsl lacks range " .. k)
      T.eq(g.ops, r.ops, "ops of " .. k)
      T.eq(g.launches, r.launches, "launches (NumGPUOps) of " .. k)
      T.eq(g.gpu_time, r.gpu_time, "GPU time of " .. k)
      T.eq(g.proj_start, r.proj_start, "projected start of " .. k)
      T.eq(g.proj_dur, r.proj_dur, "projected duration of " .. k)
    end
  end)

  test(f .. ": innermost range of every op equals the brute force", function()
    local _, P, ranges, ops = projected(f)
    local _, byrow = nsl_ranges(P)
    local want, got, inner, nops = {}, {}, {}, 0
    for _, o in ipairs(ops) do
      local cur = inner[o.op]
      if cur == nil then nops = nops + 1 end
      if o.inner and (not cur or o.inner_len < cur.inner_len) then inner[o.op] = o
      elseif cur == nil then inner[o.op] = false end
    end
    local outside = 0
    for _, o in pairs(inner) do
      if o then want[key_of(o.inner)] = (want[key_of(o.inner)] or 0) + 1 else outside = outside + 1 end
    end
    local inside = 0
    for _, r in ipairs(P.ops.range:totable()) do
      if r >= 0 then
        local k = key_of(byrow[r])
        got[k] = (got[k] or 0) + 1
        inside = inside + 1
      end
    end
    for k, n in pairs(want) do T.eq(got[k], n, "ops whose innermost range is " .. k) end
    for k, n in pairs(got) do T.eq(want[k], n, "ops whose innermost range is " .. k) end
    T.eq(#P.ops, T.sql1(path(f), "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) + " ..
      "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY) + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET)"), "GPU ops")
    T.eq(inside + outside + (#P.ops - nops), #P.ops, "ops in and outside ranges")
  end)

  test(f .. ": parents and depths equal the brute force (tightest enclosing range)", function()
    local _, P, ranges = projected(f)
    local mine, byrow = nsl_ranges(P)
    local got = {}
    for _, r in ipairs(mine) do got[key_of(r)] = r end
    local thread = {}
    for _, r in ipairs(ranges) do
      thread[r.gt] = thread[r.gt] or {}
      table.insert(thread[r.gt], r)
    end
    local step = #ranges > 2000 and #ranges // 400 or 1   -- every range of small files, a sample of large ones
    local checked = 0
    for i = 1, #ranges, step do
      local r = ranges[i]
      local parent, depth = brute_parent(r, thread[r.gt])
      local g = got[key_of(r)]
      T.eq(g.depth, depth, "depth of " .. key_of(r))
      if parent then T.eq(key_of(byrow[g.parent]), key_of(parent), "parent of " .. key_of(r))
      else T.eq(g.parent, -1, "no parent for " .. key_of(r)) end
      checked = checked + 1
    end
    T.ok(checked > 0, "some ranges checked")
    -- children: ranges with GPU ops whose parent is this one
    local kids = {}
    for _, r in ipairs(mine) do
      if r.ops > 0 and r.parent >= 0 then kids[r.parent] = (kids[r.parent] or 0) + 1 end
    end
    for _, r in ipairs(mine) do T.eq(r.children, kids[r.row] or 0, "children of " .. key_of(r)) end
  end)

  test(f .. ": top-level ranges (nvtx.tops) equal the brute force, in row order and shuffled", function()
    local tr, _, ranges = projected(f)
    local nv = tr.nvtx
    nv:load{"report", "pid", "tid", "start", "stop", "kind", "end_tid", "text", "domain"}
    local mask = nvtx.range_mask(nv)
    local top = nvtx.tops(nv, mask)
    T.eq(#top, #nv, "one value per range")
    T.eq((top & ~mask):count(), 0, "only ranges in the mask are top-level")
    local name = nvtx.names(nv)
    local got = {}
    for _, v in ipairs(T.rows(nsl.table{{"pid", nv.pid}, {"tid", nv.tid}, {"start", nv.start}, {"stop", nv.stop},
                                       {"name", name}, {"top", top}}:filter(mask), {"pid", "tid", "start", "stop",
                                                                                   "name", "top"})) do
      local k = key_of{pid = v[1], tid = v[2], start = v[3], stop = v[4], name = v[5]}
      got[k] = got[k] or {}
      table.insert(got[k], v[6])
    end
    local thread = {}
    for _, r in ipairs(ranges) do
      thread[r.gt] = thread[r.gt] or {}
      table.insert(thread[r.gt], r)
    end
    -- top-level: no other range of the thread encloses it (of equal intervals, one is)
    local step = #ranges > 2000 and #ranges // 400 or 1
    local checked, tops = 0, 0
    for i = 1, #ranges, step do
      local r = ranges[i]
      local enclosed, twins = false, 0
      for _, q in ipairs(thread[r.gt]) do
        if q ~= r and q.start <= r.start and r.stop <= q.stop then
          if q.start == r.start and q.stop == r.stop then twins = twins + 1 else enclosed = true end
        end
      end
      local g = assert(got[key_of(r)], "nsl lacks range " .. key_of(r))
      local ntop = 0
      for _, x in ipairs(g) do if x then ntop = ntop + 1 end end
      T.eq(ntop, (enclosed or #g == 0) and 0 or 1, "top-level instances of " .. key_of(r))
      checked, tops = checked + 1, tops + ntop
    end
    T.ok(checked > 0 and tops > 0, "some ranges checked, some top-level")
    if step == 1 then
      local n = 0
      for _, g in pairs(got) do for _, x in ipairs(g) do if x then n = n + 1 end end end
      T.eq(n, tops, "top-level ranges")
    end
    -- rows out of their threads' order (reversed, rotated): the sort per thread gives the same ranges,
    -- and the ranges the projection puts at depth 0
    for _, how in ipairs{"reversed", "rotated"} do
      local n = #nv
      local p = nsl.range(n) * -1 + (n - 1)
      if how == "rotated" then
        local x = nsl.range(n) + n // 3
        p = nsl.where(x:ge(n), x - n, x)
      end
      local sh = nsl.table{{"report", nv.report:gather(p)}, {"pid", nv.pid:gather(p)}, {"tid", nv.tid:gather(p)},
                           {"start", nv.start:gather(p)}, {"stop", nv.stop:gather(p)}}
      local m = mask:gather(p)
      local st = nvtx.tops(sh, m)
      local _, depth = nvtx.parents(sh, m)
      T.eq(st:ne(m & nsl.coalesce(depth, -1):eq(0)):count(), 0, how .. ": top-level = depth 0 of the projection")
      T.eq(st:count(), top:count(), how .. ": as many top-level ranges as in row order")
    end
  end)

  test(f .. ": nvtx_gpu_proj_sum equals the brute force per name", function()
    local _, P, ranges = projected(f)
    local _, q = nvtx.summaries(P.ranges)
    local want = {}
    for _, r in ipairs(ranges) do
      if r.ops > 0 then
        local w = want[r.name] or {n = 0, total = 0, cpu = 0, launches = 0, gpu = 0, durs = {}}
        want[r.name] = w
        w.n, w.total, w.cpu = w.n + 1, w.total + r.proj_dur, w.cpu + (r.stop - r.start)
        w.launches, w.gpu = w.launches + r.launches, w.gpu + r.gpu_time
        table.insert(w.durs, r.proj_dur)
      end
    end
    local n = 0
    for _, v in ipairs(T.rows(q, {"Range", "Range Instances", "Total Proj Time (ns)", "Total Range Time (ns)",
                               "Total GPU Ops", "Total GPU Time (ns)", "Proj Med (ns)", "Style"})) do
      local w = assert(want[v[1]], "unexpected projected range " .. v[1])
      n = n + 1
      T.eq(v[2], w.n, "instances of " .. v[1])
      T.eq(v[3], w.total, "projected time of " .. v[1])
      T.eq(v[4], w.cpu, "range time of " .. v[1])
      T.eq(v[5], w.launches, "GPU ops of " .. v[1])
      T.eq(v[6], w.gpu, "GPU time of " .. v[1])
      T.near(v[7], T.median(w.durs), 1e-12, "median projected time of " .. v[1])
      T.eq(v[8], "PushPop", "style of " .. v[1])
    end
    local m = 0
    for _ in pairs(want) do m = m + 1 end
    T.eq(n, m, "projected names")
  end)
end

test("tree: paths, instances, CPU and GPU times equal the brute-force paths", function()
  for _, f in ipairs{"nvfuser_2024.6", "mpi_cuda_rank0_2022.2", "pytorch_h100_2gpu_2026.2"} do
    local _, P, ranges, ops = projected(f)
    local thread = {}
    for _, r in ipairs(ranges) do
      thread[r.gt] = thread[r.gt] or {}
      table.insert(thread[r.gt], r)
    end
    -- parents by brute force: for large files, the nested push/pop ranges of a thread
    -- sorted by (start, -stop) have as parent the nearest earlier range that encloses them
    local function path_of(r)
      if r.path then return r.path end
      local list = thread[r.gt]
      local best
      if #list <= 2000 then best = brute_parent(r, list)
      else
        for i = r.index - 1, 1, -1 do
          local q = list[i]
          if q.start <= r.start and r.stop <= q.stop then best = q break end
        end
      end
      r.path = best and (path_of(best) .. "/" .. r.name) or r.name
      return r.path
    end
    for _, list in pairs(thread) do
      table.sort(list, function(a, b) if a.start ~= b.start then return a.start < b.start end return a.stop > b.stop end)
      for i, r in ipairs(list) do r.index = i end
    end
    local want = {}
    for _, r in ipairs(ranges) do
      local p = path_of(r)
      local w = want[p] or {n = 0, cpu = 0, gpu = 0}
      want[p] = w
      w.n, w.cpu, w.gpu = w.n + 1, w.cpu + (r.stop - r.start), w.gpu + r.gpu_time
    end
    local inner = {}
    for _, o in ipairs(ops) do
      if o.inner and (not inner[o.op] or o.inner_len < inner[o.op].inner_len) then inner[o.op] = o end
    end
    for _, o in pairs(inner) do
      local w = want[o.inner.path]
      w.self = (w.self or 0) + (o.stop - o.start)
    end
    local T2 = nvtx.tree(P)
    local nodes = T2.nodes
    local m = 0
    for _, v in ipairs(T.rows(nodes, {"path", "instances", "cpu_time", "gpu_time", "gpu_self", "depth", "name"})) do
      local w = assert(want[v[1]], f .. ": unexpected tree path " .. v[1])
      m = m + 1
      T.eq(v[2], w.n, f .. ": instances of " .. v[1])
      T.eq(v[3], w.cpu, f .. ": CPU time of " .. v[1])
      T.eq(v[4], w.gpu, f .. ": GPU time of " .. v[1])
      T.eq(v[5], w.self or 0, f .. ": GPU self time of " .. v[1])
      local _, slashes = v[1]:gsub("/", "")
      if not v[7]:find("/", 1, true) then T.eq(v[6], slashes, f .. ": depth of " .. v[1]) end
    end
    local n = 0
    for _ in pairs(want) do n = n + 1 end
    T.eq(m, n, f .. ": tree nodes")
    -- every GPU op time is in exactly one node's self time or outside
    local self, total = 0, 0
    for _, g in ipairs(nodes.gpu_self:totable()) do self = self + g end
    for _, d in ipairs((P.ops.stop - P.ops.start):totable()) do total = total + d end
    T.eq(self + T2.outside.gpu_time, total, f .. ": GPU time in nodes plus outside")
    T.eq(T2.gpu_time, total, f .. ": the tree's GPU time of every op")
  end
end)

test("tree: normalized labels merge PyTorch's per-call suffixes", function()
  local tr = assert(nsl.open(path("pytorch_nccl_2gpu_2026.2")))
  local P = nvtx.project(tr, {strip = nvtx.pytorch_suffixes})
  local nodes = nvtx.tree(P).nodes
  local names = {}
  for _, n in ipairs(nodes.name:totable()) do
    T.ok(not n:find(", op_id = ", 1, true) and not n:find(", seq = ", 1, true), "suffix left in " .. n)
    names[n] = true
  end
  T.ok(names["aten::mm"] or names["aten::addmm"], "an operator node")
  -- instances over all nodes: every range that takes part
  T.eq(nodes.instances:sum(), P.mask:count(), "instances")
  local want = T.sql1(path("pytorch_nccl_2gpu_2026.2"), "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) " ..
    "AND endGlobalTid IS NULL AND coalesce(text, (SELECT value FROM StringIds WHERE id = textId)) LIKE 'aten::add,%'")
  local got = 0
  for _, v in ipairs(T.rows(nodes, {"name", "instances"})) do if v[1] == "aten::add" then got = got + v[2] end end
  T.eq(got, want, "instances of aten::add over all paths")
end)

test("project with release: the same ranges and ops; the calls and the ranges' text, domain and end thread " ..
     "unloaded, and nothing the analysis reads afterwards loads them again", function()
  local f = "pytorch_nccl_2gpu_2026.2"
  local a = assert(nsl.open(path(f)))
  local b = assert(nsl.open(path(f)))
  local strip = nvtx.pytorch_suffixes
  local P, Q = nvtx.project(a, {strip = strip}), nvtx.project(b, {strip = strip, release = true})
  local function same(x, y, what)
    T.eq(#x, #y, what .. " rows")
    local bad = 0
    for i = 1, #y do if x[i] ~= y[i] then bad = bad + 1 end end
    T.eq(bad, 0, what .. ": rows that differ")
  end
  T.eq(table.concat(Q.ranges:columns(), ","), table.concat(P.ranges:columns(), ","), "columns")
  for _, c in ipairs(P.ranges:columns()) do same(Q.ranges:col(c), P.ranges:col(c), "ranges." .. c) end
  same(Q.ops.range, P.ops.range, "ops.range")
  T.eq(Q.mask:count(), P.mask:count(), "mask")
  nvtx.summaries(Q.ranges, {})
  nvtx.tree(Q)
  for _, c in ipairs(b.api:columns()) do T.ok(not b.api:is_loaded(c), "api." .. c .. " unloaded") end
  for _, c in ipairs{"text", "domain", "end_tid"} do T.ok(not b.nvtx:is_loaded(c), "nvtx." .. c .. " unloaded") end
  -- (the calls are read only where the projection is made, not where the column cache kept it)
  T.ok(a.nvtx:is_loaded("text") and a.nvtx:is_loaded("end_tid"), "kept without release")
end)

test("projected trace: rows, order and columns", function()
  local _, P, ranges = projected("pytorch_h100_2gpu_2026.2")
  local t = nvtx.projected(P.ranges)
  local n = 0
  for _, r in ipairs(ranges) do if r.ops > 0 then n = n + 1 end end
  T.eq(#t, n, "projected ranges")
  local s, d = t.proj_start:totable(), t.proj_dur:totable()
  for i = 2, #t do
    T.ok(s[i - 1] < s[i] or (s[i - 1] == s[i] and d[i - 1] >= d[i]), "order at row " .. i)
  end
  T.eq(t.style[1], "PushPop", "style")
end)

test("no NVTX, no GPU ops, no API calls: empty results, no errors", function()
  local tr = assert(nsl.open(T.data("nsys/cuda_2021.2.sqlite")))   -- no NVTX_EVENTS table
  local P = nvtx.project(tr)
  T.eq(#P.ranges, 0, "ranges")
  T.eq(#P.ops, T.sql1(T.data("nsys/cuda_2021.2.sqlite"), "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) + " ..
    "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY) + (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET)"), "ops")
  T.eq(P.ops.range:ge(0):count(), 0, "no op in a range")
  local s, q = nvtx.summaries(P.ranges)
  T.eq(#s, 0, "empty nvtx_sum")
  T.eq(#q, 0, "empty proj_sum")
  T.eq(#nvtx.tree(P).nodes, 0, "empty tree")
end)

test("two reports: every report projected on its own threads", function()
  local a, b = path("pytorch_h100_2gpu_2026.2"), path("nvfuser_2024.6")
  local tr = assert(nsl.open{a, b})
  local P = nvtx.project(tr)
  local _, Pa = projected("pytorch_h100_2gpu_2026.2")
  local _, Pb = projected("nvfuser_2024.6")
  local R = P.ranges
  T.eq(#R, #Pa.ranges + #Pb.ranges, "ranges")
  local g = nsl.table{{"report", R.report}, {"ops", R.ops}, {"gpu", R.gpu_time}}:group_by("report")
    :agg{"ops=sum(ops)", "gpu=sum(gpu)"}:sort("report")
  T.eq(g.ops[1], Pa.ranges.ops:sum(), "ops of report 0")
  T.eq(g.ops[2], Pb.ranges.ops:sum(), "ops of report 1")
  T.eq(g.gpu[2], Pb.ranges.gpu_time:sum(), "GPU time of report 1")
  -- per report: rows grouped by report, Time (%) within each report, totals as each report alone
  local s, q = nvtx.summaries(R, {per_report = true})
  local sa = nvtx.summaries(Pa.ranges)
  for _, t in ipairs{s, q} do
    local pct = {}
    for i, r in ipairs(t.report:totable()) do pct[r] = (pct[r] or 0) + t["Time (%)"][i] end
    T.near(pct[0], 100, 1e-9, "Time (%) of report 0")
    T.near(pct[1], 100, 1e-9, "Time (%) of report 1")
  end
  local rows0 = s:filter(s.report:eq(0))
  T.eq(#rows0, #sa, "report 0 rows = report 0 alone")
  T.eq(rows0["Total Time (ns)"]:sum(), sa["Total Time (ns)"]:sum(), "report 0 total = report 0 alone")
end)

test("nvtx.tops on edge cases: shared ends, equal intervals, instants, open and broken ranges", function()
  -- thread 1: A [0,100]; D [0,100] equals A (after it: a child); B [10,100] ends with A; C [100,100] at A's end;
  -- E [200,300] top; F [250,240] stops before it starts (no part); G [400, open] top; H [500,600] inside G;
  -- thread 2 (tid NULL on row J: no thread): I [50,60] top; J; K [55,58] masked out; L [150,160] top;
  -- M [700,710] inside N [700,750], the row after it (the sweep takes the longer first: in row order, that
  -- thread is out of the sweep's order, and every thread is sorted)
  local nan = nil
  local tid =   {1,   1,   1,   1,   1,   1,   1,   1,   2,   nan, 2,   2,   2,   2}
  local start = {0,   0,   10,  100, 200, 250, 400, 500, 50,  0,   55,  150, 700, 700}
  local stop =  {100, 100, 100, 100, 300, 240, nan, 600, 60,  10,  58,  160, 710, 750}
  local want =  {true, false, false, false, true, false, true, false, true, false, false, true, false, true}
  local n = #start
  local function col(t, ty)   -- nil entries NULL (gathered from row -1)
    local c, at = {}, {}
    for i = 1, n do c[i], at[i] = t[i] or 0, t[i] and i - 1 or -1 end
    return nsl.column(c, ty):gather(nsl.column(at, "i64"))
  end
  local keep = {}
  for i = 1, n do keep[i] = i ~= 11 end
  local t = nsl.table{{"report", nsl.rep(0, n)}, {"pid", nsl.rep(7, n)}, {"tid", col(tid, "i64")},
                      {"start", col(start, "i64")}, {"stop", col(stop, "i64")}}
  local mask = nsl.column(keep)
  -- rows 1-12 alone are in each thread's sweep order (one pass); all 14, or reversed, are sorted per thread
  for _, how in ipairs{"rows 1-12", "row order", "reversed"} do
    local p = how == "rows 1-12" and nsl.range(12) or how == "row order" and nsl.range(n) or
              (nsl.range(n) * -1 + (n - 1))
    local sh = nsl.table{{"report", t.report:gather(p)}, {"pid", t.pid:gather(p)}, {"tid", t.tid:gather(p)},
                         {"start", t.start:gather(p)}, {"stop", t.stop:gather(p)}}
    local top, in_order = nvtx.tops(sh, mask:gather(p))
    T.eq(in_order, how == "rows 1-12", how .. ": every thread in the sweep's order")
    local got = top:totable()
    local _, depth = nvtx.parents(sh, mask:gather(p))
    local d = depth:totable()
    local rows = p:totable()
    for i = 1, #rows do
      local r = rows[i] + 1
      local w = want[r]
      if how == "reversed" and r <= 2 then w = r == 2 end   -- of equal intervals the first row is the parent
      T.eq(got[i], w, how .. ": range " .. r)
      T.eq(got[i], d[i] == 0, how .. ": range " .. r .. " as the projection's depth 0")
    end
  end
end)

test("nsl.nvtx_project, nsl.nvtx_top and nsl.tree_paths refuse bad input", function()
  local c = nsl.column{1, 2}
  T.raises(function() nsl.nvtx_top{} end, "range_keys")
  T.raises(function() nsl.nvtx_top{range_keys = {c}, range_start = c, range_stop = nsl.column{1}} end, "stops")
  T.raises(function() nsl.nvtx_top{range_keys = {c}, range_start = c, range_stop = c, range_mask = c} end, "mask")
  T.raises(function() nsl.nvtx_project{} end, "range_keys")
  T.raises(function()
    nsl.nvtx_project{range_keys = {c}, range_start = c, range_stop = c, api_keys = {c, c}, api_start = c,
                     api_stop = c, op_api = c, op_start = c, op_stop = c}
  end, "1 range keys but 2")
  T.raises(function()
    nsl.nvtx_project{range_keys = {c}, range_start = c, range_stop = nsl.column{1}, api_keys = {c}, api_start = c,
                     api_stop = c, op_api = c, op_start = c, op_stop = c}
  end, "stops")
  T.raises(function() nsl.tree_paths(nsl.column{5, -1}, nsl.column{1, 1}) end, "parent 5")
  local r = nsl.nvtx_project{range_keys = {c}, range_start = c, range_stop = c, api_keys = {c}, api_start = c,
                             api_stop = c, op_api = nsl.column{0, 1}, op_start = c, op_stop = c}
  T.eq(r.api_range[1], 0, "call 1 in range 1")
  T.eq(r.ops[2], 1, "op of call 2 in range 2")
end)

return tests
