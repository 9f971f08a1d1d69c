-- nsl.background: work on a thread of its own (what nsl tui loads with)
-- gives what the synchronous functions give, checked against SQL run by the
-- sqlite3 program: an open, a load of kernel columns while the caller loads
-- another table and runs SQL on the same trace, lanes and level-of-detail
-- cells; cancelling, waiting twice, unknown kinds, a failing open.
local T = ...
local nsl = require("nsl")

local F = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")

-- Waits for job like a front end does: polling done, doing other work between polls.
local function poll(job, between)
  local polls = 0
  while not job:done() do
    polls = polls + 1
    if between then between() end
  end
  return job:wait()
end

local tests = {}

tests[#tests + 1] = {"open: the trace, or nsl.open's message", function()
  local tr = poll(nsl.background("open", F))
  T.eq(tr:nreports(), 1, "reports")
  T.eq(#tr.kernels, T.sql1(F, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "kernels")
  local two = poll(nsl.background("open", {F, F}))
  T.eq(two:nreports(), 2, "a list of paths")
  local bad, msg = nsl.background("open", "/nonexistent/x.sqlite"):wait()
  local bad2, msg2 = nsl.open("/nonexistent/x.sqlite")
  T.eq(bad, nil, "no trace")
  T.eq(msg, msg2, "the message of nsl.open")
  T.raises(function() nsl.background("open") end, "no file given", "no path")
end}

tests[#tests + 1] = {"load: columns equal SQL while the caller loads and queries the same trace", function()
  local tr = nsl.open(F, F)
  local k = tr.kernels
  local job = nsl.background("load", k, {"report", "start", "stop", "dur", "name"})
  -- meanwhile: another table of the same trace, SQL on it, new strings
  local mem = tr.memcpy:load{"bytes", "start"}
  local rows = tr:sql(0, "SELECT count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL")
  local strs = {}
  for i = 1, 2000 do strs[i] = "caller " .. i end
  local col = nsl.column(strs)
  local t = poll(job, function() local _ = #col end)
  T.eq(t, k, "wait returns the table")
  local n = T.sql1(F, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
  T.eq(#k, 2 * n, "rows of both reports")
  T.eq(rows[1].n, n, "SQL ran meanwhile")
  T.eq(#mem, 2 * T.sql1(F, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"), "memcpy loaded meanwhile")
  T.eq(k.dur:sum(), 2 * T.sql1(F, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "dur")
  T.eq(k.start:sum(), 2 * T.sql1(F, "SELECT sum(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "start")
  T.eq(k.report:eq(1):sum(), n, "report column")
  local want = {}
  for _, r in ipairs(T.sql(F, "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s " ..
                              "ON s.id = k.shortName GROUP BY 1")) do
    want[r[1]] = 2 * tonumber(r[2])
  end
  local got = {}
  for _, name in ipairs(k.name:totable()) do got[name] = (got[name] or 0) + 1 end
  for name, c in pairs(want) do T.eq(got[name], c, "kernels named " .. name) end
  for name in pairs(got) do T.ok(want[name], "no name SQL lacks: " .. name) end
  T.eq(col[2000], "caller 2000", "the caller's strings")
  T.raises(function() nsl.background("load", tr.nvtx, {"nope"}) end, "no column 'nope'", "unknown column")
end}

tests[#tests + 1] = {"lanes and levels of detail equal the synchronous ones", function()
  local tr = nsl.open(F)
  local nv = tr.nvtx:load{"report", "pid", "tid", "start", "stop"}
  local keys = {nv.report, nv.pid, nv.tid}
  local lane, groups = nsl.nest_lanes(nv.start, nv.stop, keys, 0, 8)
  local blane, bgroups = poll(nsl.background("nest_lanes", nv.start, nv.stop, keys, 0, 8))
  T.eq(#blane, #lane, "lane rows")
  local same = 0
  for i = 1, #lane do same = same + ((blane[i] == lane[i]) and 1 or 0) end
  T.eq(same, #lane, "the same lane per row")
  T.eq(#bgroups, #groups, "groups")
  local nlanes = 0
  for j = 1, #groups do nlanes = math.max(nlanes, groups.first_lane[j] + groups.lanes[j]) end
  local lod = nsl.lod(nv.start, nv.stop, lane, nil, nlanes)
  local blod = poll(nsl.background("lod", nv.start, nv.stop, blane, nil, nlanes))
  local lo, hi = lod:extent()
  T.eq(select(1, blod:extent()), lo, "extent")
  for l = 0, nlanes - 1 do
    local c1, b1 = lod:query(l, lo, hi + 1, 97)
    local c2, b2 = blod:query(l, lo, hi + 1, 97)
    T.eq(table.concat(c2, ","), table.concat(c1, ","), "counts of lane " .. l)
    T.eq(table.concat(b2, ","), table.concat(b1, ","), "busy time of lane " .. l)
  end
  local ranges = 0
  for l = 0, nlanes - 1 do ranges = ranges + blod:count(l) end
  T.eq(ranges, T.sql1(F, "SELECT count(*) FROM NVTX_EVENTS WHERE end IS NOT NULL AND end >= start"),
       "every range on a lane, as SQL counts them")
  -- the same rows as three parts (lists of columns, one empty), in the background too: the same index, the
  -- rows numbered on across the parts
  local n = #nv
  local cut = {0, n // 3, n // 3, n}
  local ps, pe, pl = {}, {}, {}
  for k = 1, 3 do
    local rows = nsl.range(cut[k + 1] - cut[k]) + cut[k]
    ps[k], pe[k], pl[k] = nv.start:gather(rows), nv.stop:gather(rows), lane:gather(rows)
  end
  local plod = poll(nsl.background("lod", ps, pe, pl, nil, nlanes))
  for l = 0, nlanes - 1 do
    local c1, b1, r1 = lod:query(l, lo, hi + 1, 97)
    local c2, b2, r2 = plod:query(l, lo, hi + 1, 97)
    T.eq(table.concat(c2, ","), table.concat(c1, ","), "parts: counts of lane " .. l)
    T.eq(table.concat(b2, ","), table.concat(b1, ","), "parts: busy time of lane " .. l)
    T.eq(table.concat(r2, ","), table.concat(r1, ","), "parts: rows of lane " .. l)
    local busy1, starts1 = lod:bins(l, lo, hi + 1, 301)
    local busy2, starts2 = plod:bins(l, lo, hi + 1, 301)
    T.eq(table.concat(busy2:totable(), ","), table.concat(busy1:totable(), ","), "parts: bins of lane " .. l)
    T.eq(table.concat(starts2:totable(), ","), table.concat(starts1:totable(), ","), "parts: starts of lane " .. l)
    local _, qbusy = lod:query(l, lo, hi + 1, 301)
    T.eq(table.concat(busy1:totable(), ","), table.concat(qbusy, ","), "bins: the cells' busy time, lane " .. l)
  end
  T.raises(function() nsl.lod(ps, {pe[1]}, pl, nil, nlanes) end, "same number of parts", "parts of unequal number")
  T.raises(function() nsl.lod({ps[1], "x"}, pe, pl, nil, nlanes) end, "part 2 is not a column", "a part not a column")
end}

tests[#tests + 1] = {"the NVTX projection in the background equals the synchronous sweep (test_nvtx checks that one against SQL)", function()
  local nvtx = require("nsl.nvtx")
  local tr = nsl.open(F)
  local sync = nvtx.project(tr)
  local bg = nvtx.project(tr, {sweep = function(a) return poll(nsl.background("nvtx_project", a)) end})
  for _, c in ipairs{"parent", "depth", "proj_start", "proj_dur", "ops", "launches", "gpu_time", "children"} do
    local a, b = sync.ranges[c]:totable(), bg.ranges[c]:totable()
    local same = #a == #b
    for i = 1, #sync.ranges do same = same and a[i] == b[i] end
    T.ok(same, "column " .. c)
  end
  T.eq(bg.ops.range:eq(-1):sum() + bg.ops.range:ge(0):sum(), #bg.ops, "a range (or none) per op")
  -- each GPU op is counted once, in the top-level range that encloses its launching call
  local top = bg.ranges:filter(bg.ranges.depth:eq(0))
  T.eq(top.ops:sum(), bg.ops.range:ge(0):sum(), "ops under top-level ranges")
end}

tests[#tests + 1] = {"the tree's paths in the background equal the synchronous sweep, and the nvtx tree made with them", function()
  local nvtx = require("nsl.nvtx")
  local tr = nsl.open(F)
  local P = nvtx.project(tr, {strip = nvtx.pytorch_suffixes})
  local sync = nsl.tree_paths(P.ranges.parent, P.ranges.label, P.mask)
  local bg = poll(nvtx.tree_paths_job(P))
  T.ok(sync.n > 1, "a tree of several nodes: " .. sync.n)
  T.eq(bg.n, sync.n, "nodes")
  for _, c in ipairs{"node", "node_parent", "node_depth", "node_row"} do
    local a, b = sync[c]:totable(), bg[c]:totable()
    local same = #a == #b
    for i = 1, #a do same = same and a[i] == b[i] end
    T.ok(same, "column " .. c)
  end
  -- the tree of the analysis from a job equals the one whose paths are made where they are needed
  local t1, t2 = nvtx.tree(P).nodes, nvtx.tree(P, {paths = nvtx.tree_paths_job(P)}).nodes
  T.eq(#t2, #t1, "tree rows")
  for _, c in ipairs{"path", "instances", "cpu_time", "gpu_time", "gpu_self", "ops", "ops_self"} do
    T.eq(table.concat(t2[c]:totable(), "\n"), table.concat(t1[c]:totable(), "\n"), "tree column " .. c)
  end
  local job <close> = nvtx.tree_paths_job(P)   -- closed unwaited: cancelled, nothing leaks (ASan)
end}

tests[#tests + 1] = {"cancel, wait twice, unknown kinds, collected jobs", function()
  local tr = nsl.open(F)
  local job = nsl.background("load", tr.nvtx, {"start", "text"})
  job:cancel()
  T.raises(function() job:wait() end, "cancelled already", "wait after cancel")
  job:cancel()   -- twice: nothing
  T.eq(#tr.nvtx.text, T.sql1(F, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)"),
       "the table loads afterwards")
  local j2 = nsl.background("lod", tr.nvtx.start, tr.nvtx.stop, nsl.rep(0, #tr.nvtx), nil, 1)
  j2:wait()
  T.raises(function() j2:wait() end, "waited for", "wait twice")
  T.raises(function() nsl.background("sleep") end, "unknown kind 'sleep'", "unknown kind")
  T.raises(function() nsl.background("lod", 1, 2) end, "column", "bad arguments raise at once")
  for _ = 1, 20 do nsl.background("load", nsl.open(F).kernels, {"start", "name"}) end   -- left to the collector
  collectgarbage()
  do
    local j3 <close> = nsl.background("open", F)
  end
  T.ok(tostring(job):find("nsl.job(load, finished)", 1, true), "tostring")
end}

return tests
