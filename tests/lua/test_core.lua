-- Lua API of nsl on the real exports, against SQL through the sqlite3 program.
local T = ...
local nsl = require("nsl")

local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local h100 = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")

-- Median as SQL users compute it: the middle value, or the mean of the two middle ones.
return {
  {"devices of an export without device tables: one row per device of the activity, whichever columns load", function()
    -- the devices seen in the activity tables (SQL's distinct deviceId) give
    -- every column one row each, asked for alone or together (a column asked
    -- for alone once came back with one row, the table with two)
    local want = T.sql1(nccl, "SELECT count(*) FROM (SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION " ..
                              "SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION " ..
                              "SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMSET)")
    for _, c in ipairs{"name", "device", "sm_count", "compute_capability"} do
      local tr = nsl.open{nccl}
      local t = tr.devices
      T.eq(#t, want, "devices rows")
      T.eq(#t[c], want, "rows of devices." .. c .. " loaded alone")
      tr:close()
    end
  end},
  {"dropped columns are freed without collectgarbage(): the collector counts their C memory", function()
    -- 100 columns of 16 MiB, each garbage at once: 1.6 GB if the collector
    -- saw only the boxes (a few bytes each), a few dozen MiB when it counts
    -- the C bytes.  VmRSS from the kernel is the oracle.
    local function rss_mib()
      local f = assert(io.open("/proc/self/status"))
      local s = f:read("a")
      f:close()
      return tonumber(s:match("VmRSS:%s*(%d+)")) // 1024
    end
    local before = rss_mib()
    local n = 2 * 1024 * 1024
    local sum = 0
    for i = 1, 100 do
      local c = nsl.range(n) + i
      sum = sum + c[n]
    end
    T.eq(sum, 100 * (n - 1) + 5050, "every column made (range counts from 0)")
    local grown = rss_mib() - before
    T.ok(grown < 600, string.format("resident memory grew by %d MiB", grown))
  end},

  {"nsl.concat: the rows of every column in order, and one column itself (no copy)", function()
    local a, b = nsl.column{1, 2, 3}, nsl.column{4, 5}
    T.eq(table.concat(nsl.concat(a, b, a):totable(), ","), "1,2,3,4,5,1,2,3", "three columns")
    T.ok(rawequal(nsl.concat(a), a), "one column is itself")
    T.eq(table.concat(nsl.concat(a):totable(), ","), "1,2,3", "its rows")
    local none = a:gather(nsl.range(0))
    T.ok(rawequal(nsl.concat(none, a, none), a), "one column with rows among empty ones is itself")
    T.ok(rawequal(nsl.concat(a, none), a), "likewise last")
    T.eq(#nsl.concat(none, none), 0, "empty ones: empty")
    T.ok(rawequal(nsl.concat(none, a:gather(nsl.range(0))), none), "empty ones: the first itself")
    local s = nsl.column{"x", "y"}
    T.eq(table.concat(nsl.concat(s:gather(nsl.range(0)), s):totable(), ","), "x,y", "strings")
    T.ok(not pcall(nsl.concat, none, nsl.column{1.5}), "an empty column of another type is still refused")
    -- over a million rows the copy runs on the threads, each part taking the pieces of the columns that fall
    -- in it: every row where it belongs, across the columns' edges (i64, i32, f64, strings, bools)
    local n1, n2, n3 = 700001, 3, 650000
    local x, y, z = nsl.range(n1) * 2, nsl.range(n2) - 9, nsl.range(n3) * 3 + 1
    local c = nsl.concat(x, none, y, z)
    T.eq(#c, n1 + n2 + n3, "rows")
    local ok = true
    for _, i in ipairs{1, 2, n1, n1 + 1, n1 + n2, n1 + n2 + 1, n1 + n2 + 2, 700000, 1048576, n1 + n2 + n3} do
      local w = i <= n1 and (i - 1) * 2 or i <= n1 + n2 and (i - n1 - 1) - 9 or (i - n1 - n2 - 1) * 3 + 1
      ok = ok and c[i] == w
    end
    T.ok(ok, "rows at the edges and past a thread's part")
    T.eq(c:sum(), x:sum() + y:sum() + z:sum(), "the sum of every row")
    local f = nsl.concat((x + 0.5):cast("f64"), (z + 0.25):cast("f64"))
    T.eq(f[n1 + 1], 1.25, "f64 across the edge")
    T.eq(f:sum(), (x + 0.5):cast("f64"):sum() + (z + 0.25):cast("f64"):sum(), "f64 sum")
    local i32 = nsl.concat(x:cast("i32"), z:cast("i32"))
    T.eq(i32:type(), "i32", "i32 stays i32")
    T.eq(i32[n1], (n1 - 1) * 2, "i32 before the edge")
    T.eq(i32[n1 + 1], 1, "i32 after it")
    local bs = nsl.concat(x:gt(5), z:gt(5))
    T.eq(bs:count(), x:gt(5):count() + z:gt(5):count(), "bools")
    local names = nsl.column{"a", "b", "c"}
    local r1, r3 = nsl.range(n1), nsl.range(n3)
    local sc = nsl.concat(names:gather(r1 - r1 // 3 * 3), names:gather(r3 - r3 // 2 * 2))
    T.eq(sc[n1] .. sc[n1 + 1] .. sc[n1 + 2] .. sc[#sc], "babb", "strings across the edge")
  end},

  {"columns index from 1 and give nil past the end", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    T.eq(#k, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "#kernels")
    local first = T.sql(nccl, "SELECT start, end - start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid LIMIT 1")[1]
    T.eq(k.start[1], math.tointeger(first[1]), "first start")
    T.eq(k.dur[1], math.tointeger(first[2]), "first dur")
    T.eq(k.start[#k + 1], nil, "past the end")
    T.eq(k.start[0], nil, "index 0")
    local n = 0
    for _ in ipairs(k.start) do n = n + 1 end
    T.eq(n, #k, "ipairs covers every row")
  end},

  {"kernel names resolve through StringIds", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local rows = T.sql(nccl, [[SELECT s.value, d.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds s ON s.id = k.shortName JOIN StringIds d ON d.id = k.demangledName ORDER BY k.rowid LIMIT 5]])
    for i, r in ipairs(rows) do
      T.eq(k.name[i], r[1], "short name " .. i)
      T.eq(k.demangled[i], r[2], "demangled name " .. i)
    end
  end},

  {"group_by/agg equals SQL GROUP BY (count, sum, min, max, mean, median)", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local g = k:group_by("demangled"):agg{"n=count", "total=sum(dur)", "lo=min(dur)", "hi=max(dur)",
                                          "avg=mean(dur)", "med=median(dur)", "sd=std(dur)"}
    local byname = {}
    for i = 1, #g do byname[g.demangled[i]] = i end
    local rows = T.sql(nccl, [[SELECT s.value, count(*), sum(end - start), min(end - start), max(end - start),
      avg(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName GROUP BY 1]])
    T.eq(#g, #rows, "number of groups")
    for _, r in ipairs(rows) do
      local i = assert(byname[r[1]], "group " .. r[1])
      T.eq(g.n[i], math.tointeger(r[2]), "count " .. r[1])
      T.eq(g.total[i], math.tointeger(r[3]), "sum " .. r[1])
      T.eq(g.lo[i], math.tointeger(r[4]), "min " .. r[1])
      T.eq(g.hi[i], math.tointeger(r[5]), "max " .. r[1])
      T.near(g.avg[i], tonumber(r[6]), 1e-9, "mean " .. r[1])
    end
    -- medians and sample standard deviations from the raw durations SQL returns
    local durs = {}
    for _, r in ipairs(T.sql(nccl, [[SELECT s.value, end - start FROM CUPTI_ACTIVITY_KIND_KERNEL k
                                     JOIN StringIds s ON s.id = k.demangledName]])) do
      durs[r[1]] = durs[r[1]] or {}
      table.insert(durs[r[1]], tonumber(r[2]))
    end
    for name, list in pairs(durs) do
      local i = byname[name]
      local n, mean = #list, 0
      for _, v in ipairs(list) do mean = mean + v end
      mean = mean / n
      local ss = 0
      for _, v in ipairs(list) do ss = ss + (v - mean) ^ 2 end
      T.near(g.sd[i], n > 1 and math.sqrt(ss / (n - 1)) or 0, 1e-9, "std " .. name)
      T.near(g.med[i], T.median(list), 1e-12, "median " .. name)
    end
  end},

  {"filter, sort and head agree with SQL", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local long = k:filter(k.dur:gt(100000))
    T.eq(#long, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end - start > 100000"), "filter count")
    local top = k:sort("-dur", "start"):head(5)
    local rows = T.sql(nccl, "SELECT end - start, start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1 DESC, 2 LIMIT 5")
    for i, r in ipairs(rows) do
      T.eq(top.dur[i], math.tointeger(r[1]), "sorted dur " .. i)
      T.eq(top.start[i], math.tointeger(r[2]), "sorted start " .. i)
    end
    -- t:order gives the rows t:sort takes: the same five first, and every row once
    local ord = k:order("-dur", "start")
    T.eq(#ord, #k, "one position per row")
    for i, r in ipairs(rows) do
      T.eq(k.dur[ord[i] + 1], math.tointeger(r[1]), "ordered dur " .. i)
      T.eq(k.start[ord[i] + 1], math.tointeger(r[2]), "ordered start " .. i)
    end
    T.eq(#ord:unique(), #k, "a permutation")
    local both = k.dur:gt(100000) & k.device:eq(0)
    T.eq(both:count(), T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end - start > 100000 AND deviceId = 0"), "mask and")
    local either = k.dur:gt(100000) | k.device:eq(0)
    T.eq(either:count(), T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end - start > 100000 OR deviceId = 0"), "mask or")
    T.eq((~k.device:eq(0)):count(), T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId <> 0"), "mask not")
  end},

  {"t:unload forgets a trace table's columns; they load again, and holders keep theirs", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    k:load{"start", "dur", "device"}
    local held = k.start          -- a column taken before the unload stays whole
    local sel = k:select{"dur"}   -- and so do the tables made from it
    T.eq(k:unload{"start", "dur"}, k, "returns the table")
    T.eq(k:is_loaded("start"), false, "start unloaded")
    T.eq(k:is_loaded("dur"), false, "dur unloaded")
    T.eq(k:is_loaded("device"), true, "device still loaded")
    local rows = T.sql(nccl, "SELECT start, end - start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid")
    T.eq(#held, #rows, "held rows")
    for i = 1, #rows, 97 do
      T.eq(held[i], math.tointeger(rows[i][1]), "held start " .. i)
      T.eq(sel.dur[i], math.tointeger(rows[i][2]), "selected dur " .. i)
      T.eq(k.start[i], math.tointeger(rows[i][1]), "reloaded start " .. i)   -- read again: loads again
      T.eq(k.dur[i], math.tointeger(rows[i][2]), "reloaded dur " .. i)
    end
    k:unload()
    for _, c in ipairs(k:columns()) do T.eq(k:is_loaded(c), false, c .. " unloaded by unload()") end
    T.eq(#k, #rows, "rows known after unloading all")
    T.eq(k.dur:sum(), T.sql1(nccl, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "dur again")
    -- a table that holds its columns cannot give them back: refused, data kept
    local t = nsl.table{{"x", nsl.column{1, 2, 3}}}
    T.raises(function() t:unload{"x"} end, "nothing would load it again", "plain table")
    T.eq(t.x[3], 3, "plain table kept")
    T.raises(function() k:unload{"nonesuch"} end, "no column", "unknown column")
    -- rows taken from a trace table load from it: they may unload too
    local f = k:filter(k.dur:gt(100000))
    local n = f.dur:sum()
    f:unload{"dur"}
    T.eq(f.dur:sum(), n, "filtered rows reload")
    tr:close()
  end},

  {"string predicates: eq, match, contains", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    T.eq(k.name:contains("nccl"):count(), T.sql1(nccl, [[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds s ON s.id = k.shortName WHERE instr(s.value, 'nccl') > 0]]), "contains")
    T.eq(k.name:match("^nccl"):count(), T.sql1(nccl, [[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%']]), "match")
    T.eq(k.name:eq("no such kernel"):count(), 0, "eq of an unknown string")
  end},

  {"map of a string column: one call per distinct name, every row mapped, NULL stays NULL", function()
    -- the rows are mapped in C through the names' dictionary ids; the oracle
    -- is SQL's grouping of the same kernels by the first four letters
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local calls, seen = 0, {}
    local m = k.name:map(function(s)
      calls = calls + 1
      T.ok(not seen[s], "each name is mapped once: " .. s)
      seen[s] = true
      return s:sub(1, 4)
    end)
    T.eq(calls, T.sql1(nccl, "SELECT count(DISTINCT shortName) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "one call per name")
    local want = {}
    for _, r in ipairs(T.sql(nccl, [[SELECT substr(s.value, 1, 4), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds s ON s.id = k.shortName GROUP BY 1]])) do want[r[1]] = tonumber(r[2]) end
    local g = nsl.table{{"p", m}}:group_by("p"):agg{"n=count"}
    T.eq(#g, (function() local n = 0 for _ in pairs(want) do n = n + 1 end return n end)(), "prefixes")
    for i = 1, #g do T.eq(g.n[i], want[g.p[i]], "kernels with prefix " .. g.p[i]) end
    -- a table map: names it lacks, and NULL names, map to NULL
    local only = k.name:map{[k.name[1]] = "first"}
    T.eq(only:eq("first"):count(), k.name:eq(k.name[1]):count(), "table map")
    T.eq(only:isnull():count(), #k - k.name:eq(k.name[1]):count(), "unmapped rows are NULL")
    local again = only:map(function(s) return s .. "!" end)
    T.eq(again:eq("first!"):count(), only:eq("first"):count(), "mapped twice")
    T.eq(again:isnull():count(), only:isnull():count(), "NULL stays NULL")
  end},

  {"group_by_id: groups given by number equal SQL's GROUP BY of the same numbers, empty groups kept", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    -- each kernel's device as a number; rows of stream 7 in no group (-1), one more group than ids named
    k:load{"device", "stream", "dur"}
    local ids = nsl.where(k.stream:eq(7), -1, k.device:cast("i64"))
    local ng = (k.device:max() or 0) + 2
    local g = nsl.table{{"g", ids}, {"dur", k.dur}}:group_by_id("g", ng)
    T.eq(#g, ng, "one group per number")
    local a = g:agg{"n=count", "total=sum(dur)", "med=median(dur)"}
    local want = {}
    for _, r in ipairs(T.sql(nccl, [[SELECT deviceId, count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL
                                     WHERE streamId != 7 GROUP BY 1]])) do
      want[math.tointeger(r[1])] = {math.tointeger(r[2]), math.tointeger(r[3])}
    end
    for i = 1, #a do
      T.eq(a.g[i], i - 1, "groups in their numbers' order")
      local w = want[i - 1]
      T.eq(a.n[i], w and w[1] or 0, "kernels of device " .. (i - 1))
      T.eq(a.total[i], w and w[2] or nil, "time of device " .. (i - 1))
    end
    T.eq(a.med[ng], nil, "an empty group has no median")
    T.eq(g:ids():eq(-1):count(), T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE streamId = 7"),
         "rows in no group")
    local ok, err = pcall(function() return nsl.table{{"g", ids}}:group_by_id("g", ng - 2) end)
    T.ok(not ok and tostring(err):find("not below", 1, true), "an id past the groups fails: " .. tostring(err))
  end},

  {"a filter that keeps every row: the same rows, and columns not yet loaded still load", function()
    -- such a filter shares the columns instead of copying them; SQL is the oracle for both kinds of column
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    k:load{"start", "stop"}
    local all = k:filter(k.stop:ge(k.start))
    T.eq(#all, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE end >= start"), "rows kept")
    T.eq(#all, #k, "every kernel ends after it starts")
    T.eq((all.stop - all.start):sum(), T.sql1(nccl, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "loaded")
    T.eq(all.name:match("^nccl"):count(), T.sql1(nccl, [[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%']]), "a column loaded after the filter")
    local some = all:filter(all.device:eq(0))
    T.eq(#some, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0"), "then a real filter")
    T.eq(#all:filter(all.device:lt(0)), 0, "and one that keeps none")
  end},

  {"join kernels to their launching API call on (report, pid, corr)", function()
    -- correlation ids are numbered per process: the join keys on the process too
    local tr = assert(nsl.open(nccl))
    local k, api = tr.kernels, tr.api
    local j = k:join(api, {"report", "pid", "corr"}, {"name", "tid"}, "api_")
    local matched = (~j.api_name:isnull()):count()
    T.eq(matched, T.sql1(nccl, [[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS
      (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId
       AND (r.globalTid >> 24) = (k.globalPid >> 24))]]), "matched kernels")
    -- the matched call is the one SQL finds (first by rowid) for the first rows
    local rows = T.sql(nccl, [[SELECT (SELECT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
      WHERE r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) ORDER BY r.rowid LIMIT 1)
      FROM CUPTI_ACTIVITY_KIND_KERNEL k ORDER BY k.rowid LIMIT 50]])
    for i, r in ipairs(rows) do
      T.eq(j.api_name[i], r[1] ~= "" and r[1]:gsub("_v%d+$", "") or nil, "launching call of kernel " .. i)
    end
  end},

  {"busy time: interval union equals SQL over a sweep", function()
    local tr = assert(nsl.open(T.data("nsys/cuda_2021.2.sqlite")))
    local k = tr.kernels
    local busy = nsl.intervals(k.start, k.stop)
    -- The oracle: kernels here do not overlap per SQL (checked), so union = sum.
    local overlaps = T.sql1(T.data("nsys/cuda_2021.2.sqlite"), [[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL a
      JOIN CUPTI_ACTIVITY_KIND_KERNEL b ON a.rowid < b.rowid AND a.start < b.end AND b.start < a.end]])
    if overlaps == 0 then
      T.eq(busy:total(), T.sql1(T.data("nsys/cuda_2021.2.sqlite"), "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "busy")
    end
    T.ok(busy:total() <= k.dur:sum(), "union no larger than the sum")
    local gaps = busy:gaps()
    T.eq(busy:total() + gaps:total(), k.stop:max() - k.start:min(), "busy + idle = span")
  end},

  {"two reports: summed rows, report column, aligned times", function()
    local tr = assert(nsl.open(nccl, h100))
    local k = tr.kernels
    local n1 = T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    local n2 = T.sql1(h100, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    T.eq(#k, n1 + n2, "rows")
    T.eq(k.report:eq(0):count(), n1, "report 0 rows")
    T.eq(k.report:eq(1):count(), n2, "report 1 rows")
    local s1 = T.sql1(nccl, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
    local s2 = T.sql1(h100, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
    local first = math.min(s1, s2)
    local min2 = T.sql1(h100, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    T.eq(k:filter(k.report:eq(1)).start:min(), min2 + (s2 - first), "report 1 shifted by its session start")
    T.eq(#tr.reports, 2, "reports table")
  end},

  {"nsl.table, with, select, sql escape hatch", function()
    local t = nsl.table{{"a", {3, 1, 2}}, {"b", {"x", "y", "z"}}}
    T.eq(#t, 3, "rows")
    local s = t:sort("a")
    T.eq(s.b[1], "y", "sorted")
    local w = t:with("c", t.a * 2)
    T.eq(w.c[3], 4, "derived column")
    T.eq(#w:select{"b"}:columns(), 1, "select")
    local tr = assert(nsl.open(nccl))
    local rows = tr:sql(0, "SELECT count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL")
    T.eq(rows[1].n, #tr.kernels, "sql")
    T.raises(function() tr:sql(0, "DELETE FROM StringIds") end, "read%-only", "write refused")
  end},

  {"missing tables are empty, unknown columns are errors of the script", function()
    local tr = assert(nsl.open(T.data("nsys/osrt_sampling_2025.5.sqlite")))
    T.eq(#tr.kernels, 0, "no kernels")
    T.eq(tr.kernels.start:sum(), 0, "sum of nothing")
    T.raises(function() return tr.kernels:sort("nonesuch") end, "no column", "unknown column")
    local bad, msg = nsl.open(T.data("nsys/none.sqlite"))
    T.eq(bad, nil, "missing file")
    T.ok(msg:find("none.sqlite", 1, true), "message names the file")
  end},

  {"unique, cumsum, diff, searchsorted against SQL", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local devs = k.device:unique()
    local want = T.sql(nccl, "SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")
    T.eq(#devs, #want, "distinct devices")
    for i, r in ipairs(want) do T.eq(devs[i], math.tointeger(r[1]), "device " .. i) end
    local s = k:sort("start")
    local cs = s.dur:cumsum()
    T.eq(cs[#cs], T.sql1(nccl, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "cumsum total")
    local d = s.start:diff()
    local rows = T.sql(nccl, "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 3")
    T.eq(d[1], nil, "first diff is NULL")
    T.eq(d[2], math.tointeger(rows[2][1]) - math.tointeger(rows[1][1]), "diff")
    local at = s.start:searchsorted(nsl.column{math.tointeger(rows[3][1])})
    T.eq(at[1], T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < " .. rows[3][1]), "searchsorted")
  end},

  {"busy time per device and coverage against a brute-force sweep over SQL rows", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local g = k:group_by("device")
    local busy = nsl.busy_by_group(k.start, k.stop, g:ids(), #g)
    local keys = g:keys()
    for i = 1, #keys do
      local dev = keys.device[i]
      local rows = T.sql(nccl, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = " .. dev .. " ORDER BY start")
      local total, cur_s, cur_e = 0, nil, nil
      for _, r in ipairs(rows) do
        local s0, e0 = math.tointeger(r[1]), math.tointeger(r[2])
        if cur_e and s0 <= cur_e then cur_e = math.max(cur_e, e0)
        else
          if cur_e then total = total + (cur_e - cur_s) end
          cur_s, cur_e = s0, e0
        end
      end
      if cur_e then total = total + (cur_e - cur_s) end
      T.eq(busy[i], total, "busy time of device " .. dev)
    end
    local nccl_k = k:filter(k.name:match("^nccl"))
    local comm = nsl.intervals(nccl_k.start, nccl_k.stop)
    local hidden = comm:coverage(k.start, k.stop)
    T.eq(#hidden, #k, "one value per kernel")
    -- every NCCL kernel is fully covered by the NCCL busy set
    local nc = hidden:gather((k.name:match("^nccl")):indices())
    T.eq((nc - nccl_k.dur):count(), #nccl_k, "rows")
    T.eq((nc - nccl_k.dur):sum(), 0, "NCCL kernels covered by themselves")
  end},
  {"nsl.gaps_grouped: with rows, the row after each gap is the one a join on (group, start) finds", function()
    -- group 0: [0,5) then three rows at 9 (an empty one first); group 1 starts at 9 too
    local s, e, g = nsl.column{9, 0, 9, 9, 9}, nsl.column{12, 5, 9, 15, 10}, nsl.column{1, 0, 0, 0, 0}
    local three = table.pack(nsl.gaps_grouped(s, e, g, 2))
    T.eq(three.n, 3, "no rows unless asked")
    local gid, gs, ge, row = nsl.gaps_grouped(s, e, g, 2, 0, nil, true)
    T.eq(#gid, 1, "one gap")
    T.eq(gid[1], 0, "in group 0")
    T.eq(gs[1], 5, "from 5")
    T.eq(ge[1], 9, "to 9")
    local t = nsl.table{{"g", g}, {"start", s}}
    local _, want = nsl.table{{"g", gid}, {"start", ge}}:join(t, {"g", "start"})
    T.eq(#row, 1, "a row per gap")
    T.eq(row[1], want[1], "the join's row")
    T.eq(row[1], 2, "the lowest row of group 0 starting at 9, the empty one")
  end},
  {"nsl.where: a's row where the mask is set, else b's, columns or single values (= SQL's CASE)", function()
    local tr = nsl.open{nccl}
    local k = tr.kernels
    k:load{"start", "stop", "name", "grid_x"}
    local long = (k.stop - k.start):gt(10000)
    T.eq(nsl.where(long, k.stop - k.start, 7):sum(), T.sql1(nccl, "SELECT sum(CASE WHEN end - start > 10000 " ..
      "THEN end - start ELSE 7 END) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "column, else a single value")
    T.eq(nsl.where(long, 0, k.grid_x:cast("i64")):sum(), T.sql1(nccl, "SELECT sum(CASE WHEN end - start > 10000 THEN 0 " ..
      "ELSE gridX END) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "a single value, else a column")
    local other = nsl.where(long, k.name, "other")
    T.eq(other:eq("other"):count(), T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL " ..
      "WHERE end - start <= 10000"), "strings: the trace's and a new one")
    T.eq(other:ne("other"):count(), long:count(), "the names kept")
    local m = nsl.column{true, false, true, false}
    local a, b = nsl.column{1.5, 2.5, 0 / 0, 4.5}, nsl.column{9.0, 0 / 0, 7.0, 6.0}
    local w = nsl.where(m, a, b)
    T.eq(w:isnull():count(), 2, "NULLs taken as they are")
    T.eq(w[1] + w[4], 7.5, "rows 1 and 4")
    T.eq(nsl.where(m, "x", "y"):eq("x"):count(), 2, "two single values")
    T.raises(function() return nsl.where(m, 1.5, nsl.column{1, 2, 3, 4}) end, "f64", "values of two types")
    T.raises(function() return nsl.where(m, nsl.column{1, 2}, 0) end, "4 rows", "values of another length")
    T.raises(function() return nsl.where(m, true, 0) end, "column, number or string", "a boolean")
    T.raises(function() return nsl.where(nsl.column{1, 0}, 1, 0) end, "bool mask", "a mask that is not bool")
    tr:close()
  end},
  {"nsl.readable: a file that opens, not one that is missing; runs.file_of finds a bundle member's file", function()
    T.eq(nsl.readable(nccl), true, "an export")
    T.eq(nsl.readable(nccl .. ".missing"), false, "a missing file")
    local runs = require("nsl.runs")
    T.eq(runs.file_of(nccl .. ":reports/r0.sqlite"), nccl, "the file before the member name")
    T.eq(runs.file_of(nccl), nccl, "a file is its own")
  end},
}
