-- diagnose's engine over all its checks on real exports: no sync false
-- alarm where SQL shows the GPU busy, the ranking and its one base, exact
-- times across reports years apart (each check alone: test_checks.lua).
local T = ...

local L = dofile(T.source_dir .. "/tests/lua/diagnose_testlib.lua")(T)
local ncclf = L.ncclf
local cuda2021 = L.cuda2021
local nvfuser = L.nvfuser
local mpi = L.mpi
local osrt = L.osrt
local TPID = L.TPID
local diag = L.diag
local by_id = L.by_id
local span = L.span
local union_len = L.union_len
local sql_ops = L.sql_ops

-- ---------------------------------------------------------------- tests

return {
  {"no sync false alarms: a host blocked while its GPU is busy loses nothing (busy time during the calls by " ..
   "SQL); a sync finding at warning or above has its GPU idle for much of the calls", function()
    local SYNC = "SELECT r.start, r.end FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId " ..
      "WHERE " .. TPID:gsub("globalTid", "r.globalTid") .. " = %d AND (s.value LIKE 'cudaDeviceSynchronize%%' " ..
      "OR s.value LIKE 'cudaStreamSynchronize%%')"
    local checked_busy = 0
    for _, path in ipairs(T.exports()) do
      local fs = diag(path)
      for _, f in ipairs(by_id(fs, "api.sync")) do
        local pid = f.where.pid
        local calls = T.sql(path, string.format(SYNC, pid))
        local ops = {}
        for _, o in ipairs(sql_ops(path)) do if o.pid == pid then ops[#ops + 1] = {o.start, o.stop} end end
        local blocked, busy = 0, 0
        for _, c in ipairs(calls) do
          local a, b = math.tointeger(tonumber(c[1])), math.tointeger(tonumber(c[2]))
          blocked, busy = blocked + (b - a), busy + union_len(ops, a, b)
        end
        local frac = blocked > 0 and busy / blocked or 0
        if frac >= 0.95 then
          checked_busy = checked_busy + 1
          T.eq(f.severity, "info", string.format("%s pid %d: GPU busy %.1f%% of the blocked time: no alarm", path,
               pid, 100 * frac))
        end
        if f.severity ~= "info" then
          T.ok(frac < 0.9, string.format("%s pid %d: a sync alarm with the GPU busy %.1f%% of the time", path, pid,
               100 * frac))
        end
      end
    end
    T.ok(checked_busy >= 1, "an export whose host syncs while its GPU is busy (the NCCL export)")
  end},

  {"ranking: recurring costs by lost_ns, then one-time costs, then the rest; shares on one base; a clean " ..
   "export has no findings", function()
    for _, p in ipairs{cuda2021, ncclf, nvfuser} do
      local fs = diag(T.data(p))
      local function group(f) return f.lost_ns and (f.once and 1 or 0) or 2 end
      for i = 2, #fs do
        local a, b = fs[i - 1], fs[i]
        T.ok(group(a) < group(b) or (group(a) == group(b) and (a.lost_ns or -1) >= (b.lost_ns or -1)),
             p .. ": ranked by lost_ns, one-time costs apart: " .. a.id .. " before " .. b.id)
      end
      local seen = {}
      for _, f in ipairs(fs) do
        if f.share then T.ok(f.share >= 0 and f.share <= 1, p .. ": share within [0, 1]: " .. f.id) end
        if f.lost_ns then T.near(f.share, f.lost_ns / span(T.data(p)), 1e-9, p .. ": " .. f.id .. " share of the run") end
        if not f.id:find("^straggler") then
          T.ok(not seen[f.id], p .. ": one finding per cause: " .. f.id)
          seen[f.id] = true
        end
        if f.once then T.eq(f.lost_per_step_ns, nil, p .. ": a one-time cost is not per step: " .. f.id) end
      end
    end
    T.eq(#diag(T.data(osrt)), 0, "no findings on the OS-runtime export")
  end},
  {"reports captured years apart: times past 2^53 ns stay exact integers in every finding", function()
    -- aligned on their session starts, the 2022 export's events lie ~1.3e17 ns before the 2026 one's
    local p1, p2 = T.data(ncclf), T.data(mpi)
    local fs = diag({p1, p2})
    T.ok(#fs > 0, "findings")
    for _, f in ipairs(fs) do
      for k, v in pairs(f.where or {}) do
        if type(v) == "number" then T.eq(math.type(v), "integer", f.id .. ": where." .. k) end
      end
      if f.cost_ns then T.eq(math.type(f.cost_ns), "integer", f.id .. ": cost_ns") end
    end
    local tr = require("nsl").open(p1, p2)
    local want = T.sql1(p1, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL") + tr.reports.time_offset[1]
    local got = tr.kernels.stop:max()
    T.eq(math.type(got), "integer", "max of an i64 column")
    T.eq(got, want, "max of the aligned kernel ends: SQL's max plus the report's offset")
    T.ok(got > 2 ^ 53, "past 2^53")
  end},
  {"the collectives are matched once per diagnose run (the ledger's waits and the straggler check share it); " ..
   "the ledger alone matches them once too", function()
    local straggler = require("nsl.straggler")
    local match, analyse = straggler.match, straggler.analyse
    local n = {match = 0, analyse = 0}
    straggler.match = function(...) n.match = n.match + 1 return match(...) end
    straggler.analyse = function(...) n.analyse = n.analyse + 1 return analyse(...) end
    local ok, err = pcall(function()
      local fs = diag(T.source_dir .. "/samples/nccl_4rank_straggler.zip")
      T.eq(#by_id(fs, "straggler.host_idle"), 1, "the sample's straggler")
      T.eq(n.match, 1, "diagnose: one matching")
      T.eq(n.analyse, 1, "diagnose: one analysis of the matched collectives")
      n.match, n.analyse = 0, 0
      T.run_analysis("ledger", {T.source_dir .. "/samples/nccl_4rank_straggler.zip"})
      T.eq(n.match, 1, "ledger: one matching")
    end)
    straggler.match, straggler.analyse = match, analyse
    if not ok then error(err, 0) end
  end},
  {"the straggler's late windows and host.idle's host rows are attributed in one sweep (Ctx:attribute_along), " ..
   "with the findings each attribution alone gives", function()
    -- the 2-GPU export: a straggler late for its host (one GPU named) and host.idle on the other GPU
    local host, D = require("nsl.host"), require("nsl.diagnose")
    local attribute, along = host.attribute, D.Ctx.attribute_along
    local calls = {}
    host.attribute = function(d, ...) calls[#calls + 1] = #d return attribute(d, ...) end
    -- diagnose's engine over every check: the findings and host.idle's candidates (per GPU, what its
    -- launching thread was in and for how long)
    local function run()
      local runner = require("nsl.engine.runner")
      local parsed = assert(runner.parse_args(assert(runner.load_analysis("diagnose")), {}))
      local trace = assert(require("nsl").open(T.data(ncclf)))
      local out = require("nsl.engine.output").new{analysis = "diagnose", format = "collect", trace = trace}
      local ctx = D.context(trace, parsed, nil, out)
      return D.run(ctx), ctx.cache.host_idle
    end
    local ok, err = pcall(function()
      local shared, c1 = run()
      local n_shared, sizes = #calls, table.concat(calls, "+")
      calls = {}
      D.Ctx.attribute_along = function() return nil end
      local apart, c2 = run()
      D.Ctx.attribute_along = along
      T.ok(c1 and #c1 >= 1, "host.idle's candidates")
      T.eq(#c1, #c2, "as many candidates")
      for _, col in ipairs(c2:columns()) do
        T.eq(table.concat(c1[col]:map(tostring):totable(), ","), table.concat(c2[col]:map(tostring):totable(), ","),
             "candidates' " .. col)
      end
      T.eq(#by_id(shared, "straggler.host_idle") + #by_id(shared, "straggler.launch"), 1, "a host-side straggler")
      T.ok(#by_id(shared, "host.idle") >= 1, "host.idle on the other GPU")
      T.eq(n_shared, 1, "one attribution with the sharing (" .. sizes .. " intervals)")
      T.eq(#calls, 2, "two without it")
      T.eq(n_shared == 1 and calls[1] + calls[2] or -1, tonumber(sizes), "the same intervals: " .. sizes .. " = " ..
           table.concat(calls, " + "))
      T.eq(#shared, #apart, "as many findings")
      for i = 1, math.min(#shared, #apart) do
        local a, b = shared[i], apart[i]
        T.eq(a.id, b.id, "finding " .. i)
        T.eq(a.text, b.text, "finding " .. i .. " (" .. a.id .. ")")
        T.eq(a.lost_ns, b.lost_ns, "lost_ns of " .. a.id)
        T.eq(require("nsl.report").json(a.where or {}), require("nsl.report").json(b.where or {}), "where of " .. a.id)
      end
    end)
    host.attribute, D.Ctx.attribute_along = attribute, along
    if not ok then error(err, 0) end
  end},
}
