-- nsl.checks.host_sync_per_step -- diagnose check host.sync_per_step (the engine: nsl.diagnose).
local nsl = require("nsl")
local iterations = require("nsl.iterations")
local D = require("nsl.diagnose")
local table_of = D.table_of
local pid_text = D.pid_text
local step_ranges = D.step_ranges
local round = D.round

return {
  id = "host.sync_per_step",
  description = "Per process, the median over steady steps of the time in CUDA calls that block the host " ..
    "(nsl.host_sync, by the call's start); the worst process",
  tables = {"api", "memcpy"},
  reads = {"CUDA API calls: report, pid, start, dur, name", "memcpy: report, pid, corr, src_kind, dst_kind",
           "steps (nsl.iterations)"},
  claims = {"idle_sync"},
  thresholds = {},
  run = function(ctx)
    local st = ctx.steps
    if not st or #ctx.trace.api == 0 then return end
    -- per process: blocked time and calls in each steady step (0 in a step without any), processes in
    -- (report, pid) order
    local S = ctx:call_steps()
    local per = S.per:sort("report", "pid", "iter")
    if #per == 0 then return end
    local ranges, per_report = step_ranges(ctx)
    local steady = {}   -- report -> {pid (or 0) -> list of steady iters}
    local W = ranges:with("warm", nsl.column(st.warm_flag))
    for i = 1, #W do
      if W.warm[i] == 0 then
        local r, p = W.report[i], W.pid[i]
        steady[r] = steady[r] or {}
        steady[r][p] = steady[r][p] or {}
        table.insert(steady[r][p], {iter = W.iter[i], start = W.start[i], stop = W.stop[i]})
      end
    end
    local seen, got = {}, {}
    for i = 1, #per do got[per.report[i] .. ":" .. per.pid[i] .. ":" .. per.iter[i]] = {per.n[i], per.t[i]} end
    local rows, worst = {}, nil
    for i = 1, #per do
      local r, p = per.report[i], per.pid[i]
      local key = r .. ":" .. p
      local list = steady[r] and steady[r][per_report and 0 or p]
      if not seen[key] and list then
        seen[key] = true
        local ts, ns = {}, {}
        for k, w in ipairs(list) do
          local v = got[key .. ":" .. w.iter] or {0, 0}
          ns[k], ts[k] = v[1], v[2]
          rows[#rows + 1] = {report = ctx:rank(r), pid = p, step = w.iter, len = w.stop - w.start, n = v[1], t = v[2]}
        end
        local mt, mn = iterations.describe(ts).median, iterations.describe(ns).median
        if mn >= 1 and mt > 0 and (not worst or mt > worst.t) then worst = {r = r, pid = p, t = mt, n = mn} end
      end
    end
    if not worst then return end
    local top = S.names:filter(S.names.report:eq(worst.r) & S.names.pid:eq(worst.pid)):sort("-t")
    local ev = ctx:table("host_sync_per_step", table_of(rows, {{"report", "report"}, {"pid", "pid"}, {"step", "step"},
      {"step (ns)", "len"}, {"blocking calls", "n"}, {"blocked (ns)", "t"}}),
      "CUDA calls that block the host (explicit syncs, synchronous and pageable copies) per steady step and process")
    local cost = round(worst.t)   -- already per step: over a window of one step
    ctx:add{id = "host.sync_per_step", total = cost, window = st.step_ns, evidence = ev, per_step = true,
      lost = ctx:ledger_lost(worst.r, worst.pid, "idle_sync"),
      text = string.format("%s pid %s: the host blocks in %g CUDA calls per step (median; most time in %s): it " ..
        "cannot queue work ahead of the GPU", ctx:rank(worst.r), pid_text(worst.pid), worst.n, top.name[1] or "?"),
      where = {rank = ctx:rank(worst.r), report = worst.r, pid = worst.pid, nvtx = st.nvtx},
      next = "nsl run launch " .. ctx:path(worst.r)}
  end,
}
