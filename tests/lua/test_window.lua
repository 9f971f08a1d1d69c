-- nsl.window: the span of a trace, the window of --arg from/to, and the row
-- filters a windowed analysis declares for distributed runs (window.gather),
-- against SQL through the sqlite3 program on the same export.
local T = ...
local nsl = require("nsl")
local window = require("nsl.window")

local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")

-- The rows of t passing every {column, op, value} of a gather declaration,
-- evaluated with the column operations an analysis would use.
local function passing(t, conds)
  local mask
  for _, c in ipairs(conds) do
    local col, m = t[c[1]], nil
    if c[2] == "<" then m = col:lt(c[3])
    elseif c[2] == ">" then m = col:gt(c[3])
    else error("unexpected op " .. tostring(c[2])) end
    mask = mask and (mask & m) or m
  end
  return t:filter(mask)
end

return {
  {"span of the kernels = SQL first start, last end", function()
    local tr = assert(nsl.open(nccl))
    local lo, hi = window.span(tr, {"kernels"})
    local r = T.sql(nccl, "SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL")[1]
    T.eq(lo, math.tointeger(r[1]), "first start")
    T.eq(hi, math.tointeger(r[2]), "last end")
  end},

  {"resolve_span is resolve over a given span; set_span replaces the measured one", function()
    local tr = assert(nsl.open(nccl))
    local lo, hi = window.span(tr)
    local args = {from = "10ms", to = "20ms"}
    local f1, t1 = window.resolve(tr, args)
    local f2, t2 = window.resolve_span(lo, hi, args)
    T.eq(f1, lo + 10000000, "from counted from the first event")
    T.eq(t1, lo + 20000000, "to counted from the first event")
    T.eq(f2, f1, "same from")
    T.eq(t2, t1, "same to")
    local other = assert(nsl.open(nccl))
    window.set_span(other, lo - 5000000, hi)
    T.eq(select(1, window.span(other)), lo - 5000000, "the span set is the default span")
    T.eq(select(1, window.span(other, {"kernels"})), select(1, window.span(tr, {"kernels"})),
         "named tables are still measured")
    T.eq(select(1, window.resolve(other, args)), lo + 5000000, "resolve counts from the span set")
    T.raises(function() window.resolve_span(nil, nil, args) end, "no events", "a span without events fails")
  end},

  {"window.gather keeps the rows overlapping the window (= SQL), nothing for the whole trace", function()
    local tr = assert(nsl.open(nccl))
    local lo, hi = window.span(tr)
    local g = window.gather(function() return {kernels = "overlap", nvtx = "before"} end)
    T.eq(g.span({}), false, "no window: no span asked")
    T.eq(g.where({from = "", to = ""}, lo, hi), nil, "no window: no filter")
    T.eq(g.span({from = "50ms"}), true, "a window: the span is asked")
    local where = g.where({from = "50ms", to = "80ms"}, lo, hi)
    local from, to = lo + 50000000, lo + 80000000
    local k = passing(tr.kernels, where.kernels)
    local want = T.sql1(nccl, string.format(
      "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < %d AND end > %d", to, from))
    T.eq(#k, math.tointeger(want), "kernels overlapping the window")
    T.ok(#k > 0 and #k < #tr.kernels, "the window keeps some kernels, not all")
    local nv = passing(tr.nvtx, where.nvtx)
    want = T.sql1(nccl, string.format("SELECT count(*) FROM NVTX_EVENTS WHERE start < %d", to))
    T.eq(#nv, math.tointeger(want), "NVTX ranges and marks starting before the window ends")
  end},

  {"report_extents: each report's least start, greatest start and greatest stop (= SQL), measured, kept, read back", function()
    local kept = require("nsl.kept")
    local a, b = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite"), T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
    -- per export, on its own clock (the trace moves each report's times by its offset)
    local function want(path, tab)
      local r = T.sql(path, string.format("SELECT min(start), max(start), max(end) FROM %s", tab))[1]
      local x = {}
      for k = 1, 3 do x[k] = math.tointeger(tonumber(r[k])) end
      return x
    end
    local expect = {[0] = {kernels = want(a, "CUPTI_ACTIVITY_KIND_KERNEL"), api = want(a, "CUPTI_ACTIVITY_KIND_RUNTIME")},
                    [1] = {kernels = want(b, "CUPTI_ACTIVITY_KIND_KERNEL"), api = want(b, "CUPTI_ACTIVITY_KIND_RUNTIME")}}
    local function check(tr, how)
      local offset = tr.reports.time_offset:totable()
      T.ok(offset[1] ~= offset[2], "the two reports have their own clocks")
      for _, tab in ipairs{"kernels", "api"} do
        local per = window.report_extents(tr, tab)
        for r = 0, 1 do
          for k = 1, 3 do
            T.eq(per[r] and per[r][k], expect[r][tab][k] + offset[r + 1],
                 string.format("%s: report %d %s, value %d", how, r, tab, k))
          end
        end
        T.eq(window.report_extents(tr, tab), per, how .. ": measured once per trace")
      end
      T.eq(window.report_extents(tr, "memset")[2], nil, how .. ": no third report")
    end
    -- measured: a filtered trace reads nothing kept (its rows are not the reports' own)
    local filtered = assert(nsl.open({a, b}))
    filtered:filter("memset", {{"start", "<", 0}})
    T.eq(kept.keeps(filtered), false, "a filtered trace keeps nothing")
    check(filtered, "measured")
    local first = assert(nsl.open({a, b}))
    check(first, "cold or warm")
    first = nil
    collectgarbage()
    local again = assert(nsl.open({a, b}))
    T.ok(kept.keeps(again), "the column cache keeps each report's extents")
    T.ok(kept.per_report(again, "api", "extent.1", "i64", 3) ~= nil, "kept after the first trace's measure")
    check(again, "read back")
    -- the trace's span is every report's extents combined
    local off = again.reports.time_offset:totable()
    local lo, hi = window.span(again, {"kernels"})
    T.eq(lo, math.min(expect[0].kernels[1] + off[1], expect[1].kernels[1] + off[2]), "span: first start")
    T.eq(hi, math.max(expect[0].kernels[3] + off[1], expect[1].kernels[3] + off[2]), "span: last stop")
  end},

  {"reports that do not overlap in time are named, with the gap between them (SQL); overlapping ones are not", function()
    local window = require("nsl.window")
    local a, b = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite"), T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
    T.eq(window.disjoint(assert(nsl.open({a}))), nil, "one report")
    T.eq(window.disjoint(assert(nsl.open({a, a}))), nil, "the same report twice overlaps itself")
    local text = window.disjoint(assert(nsl.open({a, b})))
    T.ok(text and text:find("pytorch_nccl_2gpu_2026.2", 1, true) and text:find("pytorch_h100_2gpu_2026.2", 1, true),
         "both named: " .. tostring(text))
    -- the gap on the aligned clock: session start + event time, the later report's first start minus the
    -- earlier one's last stop (SQL over the GPU operations and NVTX ranges of each)
    local function ends(path)
      local q = [[SELECT (SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME) + min(s),
                         (SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME) + max(e) FROM (
        SELECT start s, end e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY
        UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET UNION ALL SELECT start, coalesce(end, start) FROM NVTX_EVENTS)]]
      local r = T.sql(path, q)[1]
      return math.tointeger(tonumber(r[1])), math.tointeger(tonumber(r[2]))
    end
    local a0, a1 = ends(a)
    local b0, b1 = ends(b)
    local gap = a0 > b1 and a0 - b1 or b0 - a1
    T.ok(text:find(require("nsl.report").duration(gap), 1, true), "the gap " .. require("nsl.report").duration(gap) ..
         " in: " .. text)
  end},
}
