-- The shared helpers of the analyses: nsl.util.units (durations), nsl.findings
-- (graded checks) and nsl.util.percentiles (distribution tables, against
-- percentiles computed by sorting SQL rows in plain Lua).
local T = ...
local nsl = require("nsl")
local units = require("nsl.util.units")
local findings = require("nsl.findings")
local percentiles = require("nsl.util.percentiles")

local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")

-- A stand-in for the `out` object that records findings.
local function recorder()
  local out = {findings = {}}
  function out.finding(self, f) self.findings[#self.findings + 1] = f end
  return out
end

local function pct(sorted, q)
  local pos = q * (#sorted - 1)
  local k = math.floor(pos)
  if k >= #sorted - 1 then return sorted[#sorted] end
  return sorted[k + 1] + (sorted[k + 2] - sorted[k + 1]) * (pos - k)
end

return {
  {"durations: plain ns and every unit", function()
    local cases = {
      {"250", 250}, {250, 250}, {"0", 0}, {"10us", 10000}, {"10 us", 10000}, {"10µs", 10000}, {"10μs", 10000},
      {"1.5ms", 1500000}, {"1.5MS", 1500000}, {"2s", 2000000000}, {"2 sec", 2000000000}, {"1min", 60000000000},
      {"1h", 3600000000000}, {"1e3", 1000}, {"1e3ns", 1000}, {"2.5e-3s", 2500000}, {" 7ns ", 7}, {"0.4", 0},
      {"0.6", 1}, {".5us", 500},
    }
    for _, c in ipairs(cases) do
      local v = units.duration(c[1])
      T.eq(v, c[2], "duration " .. tostring(c[1]))
      T.eq(math.type(v), "integer", "integer ns for " .. tostring(c[1]))
    end
  end},

  {"durations: what is not one is refused with a message", function()
    for _, bad in ipairs{"", "fast", "-5us", "10 parsecs", "1e", "1.2.3ms", "us", "nan", "inf", "1e400", -1, {}, true} do
      local v, err = units.duration(bad)
      T.eq(v, nil, "duration " .. tostring(bad))
      T.ok(type(err) == "string" and #err > 0, "message for " .. tostring(bad))
    end
    T.eq(units.duration_arg({min = "3ms"}, "min"), 3000000, "duration_arg")
    local ok, e = pcall(units.duration_arg, {min = "soon"}, "min")
    T.ok(not ok and nsl.is_error(e), "an nsl error (one line, no traceback)")
    T.ok(tostring(e):find("--arg min: 'soon' is not a duration", 1, true), "message: " .. tostring(e))
  end},

  {"findings are graded by the most severe limit passed", function()
    local out = recorder()
    T.eq(findings.above(out, 30, {warning = 50, error = 90}, "x", "v=%d", 30), nil, "under every limit")
    T.eq(findings.above(out, 60, {warning = 50, error = 90}, "x", "v=%d", 60), "warning", "warning")
    T.eq(findings.above(out, 95, {warning = 50, error = 90}, "x", "v=%d", 95), "error", "error")
    T.eq(findings.above(out, 50, {warning = 50}, "x", "v=%d", 50), nil, "at the limit is not above it")
    T.eq(findings.above(out, 99, {warning = 0}, "x", "off"), nil, "a limit of 0 is off")
    T.eq(findings.above(out, nil, {warning = 1}, "x", "nil"), nil, "no value, no finding")
    T.eq(findings.below(out, 2, {info = 10, warning = 5}, "y", "low %d", 2), "warning", "below")
    T.eq(#out.findings, 3, "three findings")
    T.eq(out.findings[1].message, "v=60", "message")
    T.eq(out.findings[2].severity, "error", "severity")
    T.eq(out.findings[2].limit, 90, "limit recorded")
    T.eq(out.findings[3].check, "y", "check recorded")
    T.eq(out.findings[3].value, 2, "value recorded")
    findings.add(out, "info", "%s and %d", "a", 1)
    T.eq(out.findings[4].message, "a and 1", "add")
    T.eq(out.findings[4].severity, "info", "add severity")
  end},

  {"the finding record: validated, a few lines in ms/µs with the share of the step, printed first", function()
    local output = require("nsl.engine.output")
    local f = {severity = "warning", id = "straggler.host_idle", message = "r5 is late", cost_ns = 498000,
               step_ns = 9600000, share = 498000 / 9600000, where = {rank = "r5", device = 0, tid = 12},
               next = "nsl run timeline r5.sqlite --arg from=1.2s --arg to=1.25s", evidence = "causes"}
    local lines = findings.lines(f)
    T.eq(#lines, 3, "three lines")
    T.eq(lines[1], "[warning straggler.host_idle] r5 is late", "severity, id, message")
    T.eq(lines[2], "  costs 498.000 µs per step (5.2% of the 9.600 ms step); at rank r5, device 0, tid 12; " ..
         "evidence: table causes", "cost, share of the step, where")
    T.eq(lines[3], "  next: nsl run timeline r5.sqlite --arg from=1.2s --arg to=1.25s", "next command")
    T.eq(findings.lines{severity = "info", message = "m", cost_ns = 2000000, share = 0.25}[2],
         "  costs 2.000 ms (25.0% of the run)", "no step: over the run")
    T.eq(#findings.lines{severity = "error", message = "m"}, 1, "message only: one line")
    local out = output.new{analysis = "t", format = "json-silent"}
    T.raises(function() out:finding{message = "m", cost_ns = 1.5} end, "cost_ns must be an integer")
    T.raises(function() out:finding{message = "m", where = {rank = 3}} end, "where.rank must be a string")
    T.raises(function() out:finding{message = "m", where = {node = "x"}} end, "where.node is not one of")
    -- text output: the findings print before the tables and prose given earlier
    local written = {}
    local real = io.stdout
    io.stdout = {write = function(_, ...) for _, s in ipairs{...} do written[#written + 1] = s end end,
                 flush = function() end}
    local ok, err = pcall(function()
      local o = output.new{analysis = "t", format = "text"}
      o:text("first the prose")
      o:table("t", require("nsl").table{{"a", {1, 2}}})
      o:finding(f)
      o:finish()
    end)
    io.stdout = real
    assert(ok, err)
    local text = table.concat(written)
    T.ok(text:find("^%[warning straggler.host_idle%] r5 is late\n  costs"), "the finding first: " .. text)
    T.ok(text:find("first the prose", 1, true) > text:find("next:", 1, true), "then the prose")
    T.ok(text:find("first the prose", 1, true) < text:find(" a\n", 1, true), "then the table, in order")
  end},

  {"percentile labels", function()
    T.eq(percentiles.label(0.5), "p50", "p50")
    T.eq(percentiles.label(0.99), "p99", "p99")
    T.eq(percentiles.label(0.999), "p99.9", "p99.9")
    T.eq(percentiles.label(1), "p100", "p100")
  end},

  {"percentile tables equal plain Lua percentiles of the SQL rows", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    local t = percentiles.table(k, {"device"}, {{col = "dur", label = "Dur", unit = "ns", total = true}},
                                {qs = {0.25, 0.5, 0.9, 0.99}, sort = 1})
    local by = {}
    for _, r in ipairs(T.sql(nccl, "SELECT deviceId, end - start FROM CUPTI_ACTIVITY_KIND_KERNEL")) do
      local d = tonumber(r[1])
      by[d] = by[d] or {}
      table.insert(by[d], math.tointeger(r[2]))
    end
    local n = 0
    for _ in pairs(by) do n = n + 1 end
    T.eq(#t, n, "one row per device")
    local prev = math.huge
    for i = 1, #t do
      local list = by[t.device[i]]
      table.sort(list)
      local sum = 0
      for _, v in ipairs(list) do sum = sum + v end
      T.eq(t.Count[i], #list, "count")
      T.eq(t["Dur total (ns)"][i], sum, "total")
      T.ok(sum <= prev, "sorted by total")
      prev = sum
      T.near(t["Dur mean (ns)"][i], sum / #list, 1e-12, "mean")
      for _, q in ipairs{0.25, 0.5, 0.9, 0.99} do
        T.near(t["Dur " .. percentiles.label(q) .. " (ns)"][i], pct(list, q), 1e-12, "percentile " .. q)
      end
      T.eq(t["Dur max (ns)"][i], list[#list], "max")
    end
    -- no keys: one row over everything; count order by default
    local all = percentiles.table(k, {}, {{col = "dur", label = "Dur"}}, {mean = false})
    T.eq(#all, 1, "one row")
    T.eq(all.Count[1], #k, "count of all")
    T.eq(all:coltype("Dur mean"), nil, "mean left out")
    T.ok(all["Dur p50"][1] ~= nil, "p50 without a unit in the name")
  end},
}
