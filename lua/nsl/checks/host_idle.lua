-- nsl.checks.host_idle -- diagnose check host.idle (the engine: nsl.diagnose).
--
-- The ledger's idle_host line per GPU: the time the GPU sat idle because the
-- thread that launches its work had not launched the next operation yet (it
-- was in a data loader, in Python, in an OS call), with what that thread was
-- doing: the innermost NVTX range, OS runtime call and CUDA call it spent
-- most of that time in (nsl.ledger.host_activity).  Each nanosecond is told
-- once: the short gaps before short kernels are launch.bound's and the gaps
-- longer than --arg gap gpu.gaps' (the same idle, told first), and a GPU
-- that a straggler finding names is left to that finding, which tells its
-- lateness and cause.
local nsl = require("nsl")
local report = require("nsl.report")
local ledger = require("nsl.ledger")
local nvtx = require("nsl.nvtx")
local D = require("nsl.diagnose")

-- The rank labels named by the straggler findings so far ("NAME:gpuN" or "NAME").
local function straggler_ranks(ctx)
  local named = {}
  for _, f in ipairs(ctx.findings) do
    if f.id and f.id:find("^straggler") then
      if f.where and f.where.rank then named[f.where.rank] = true end
      for _, r in ipairs(f.ranks or {}) do named[r] = true end
    end
  end
  return named
end

-- Per group (GPU) of the host_activity rows a, the value of column col that
-- weighs most (the sum of column w over its rows; ties: the lower value),
-- NULL values left out, norm (optional) applied first: {group -> {value,
-- weight}}.  One group-by over every GPU's rows.
local function top_per_group(a, col, w, norm)
  local top = {}
  local v = a:coltype(col) and a[col]
  if not v then return top end
  local has = ~v:isnull()
  if has:count() == 0 then return top end
  local t = nsl.table{{"group", a.group}, {"v", v}, {"w", a[w]}}:filter(has)
  if norm then t = t:with("v", t.v:map(norm)) end
  local g = t:group_by("group", "v"):agg{"w=sum(w)"}:sort("group", "-w", "v")
  local first = g:group_by("group"):agg{"v=first(v)", "w=first(w)"}
  for i = 1, #first do top[first.group[i]] = {first.v[i], first.w[i]} end
  return top
end

-- The sources of what the launching thread was in: column prefix, label, and how a value is compared
local SOURCES = {{"nvtx", "NVTX", function(x) return nvtx.normalize(x, nvtx.pytorch_suffixes) end},
                 {"osrt", "OS runtime"}, {"api", "CUDA"}}

-- The GPUs over share before any is skipped, and their host rows: host (l.host less the claimed gaps' rows)
-- and the list of {g, report, device, time, wall}, in the ledger's order.
local function over_share(l, G, share)
  local rows = {}
  local host = l.host
  local keys = l.groups
  if host and #host > 0 then
    local hk = nsl.table{{"report", host.report}, {"pid", host.pid}, {"device", keys.device:gather(host.group)},
                         {"start", host.start}}
    local claimed = {}
    local lb = G.lb_rows
    if lb and #lb > 0 then claimed[#claimed + 1] = {lb, {"report", "device", "start"}} end
    local gr = G.gap_rows
    if #gr > 0 then
      claimed[#claimed + 1] = {gr:select{"report", "pid", "device"}:with("start", gr.stop),
                               {"report", "pid", "device", "start"}}
    end
    for _, c in ipairs(claimed) do
      local t, on = c[1], c[2]
      local j = hk:join(t:select(on):with("claimed", nsl.rep(1, #t)), on, {"claimed"})
      local keep = j.claimed:isnull()
      host, hk = host:filter(keep), hk:filter(keep)
    end
  end
  if host and #host > 0 then
    local per = host:group_by("group"):agg{"time=sum(time)"}
    local time_of = {}
    for i = 1, #per do time_of[per.group[i]] = per.time[i] end
    local lt = l.ledger
    local run = lt:filter(lt.step:eq(0))   -- (one row per GPU, in the order of groups)
    for k = 1, #keys do
      local wall, t = run.wall[k], time_of[k - 1] or 0
      if wall > 0 and t > 0 and t >= share * wall then
        rows[#rows + 1] = {g = k - 1, report = keys.report[k], device = keys.device[k], time = t, wall = wall}
      end
    end
  end
  return host, rows
end

-- The host rows host.idle attributes (the rows of l.host of the GPUs over share, less the claimed gaps') of the
-- GPUs for which skip(report, device) is not true, for a caller that attributes them along with other
-- intervals (nsl.diagnose, with the straggler's late windows); nil when none.  Then also a table for
-- candidates' pre: groups (the set of those GPUs), host and all (over_share's).
local function pending(l, G, share, skip)
  local host, all = over_share(l, G, share)
  local gs, set = {}, {}
  for _, r in ipairs(all) do
    if not skip(r.report, r.device) then gs[#gs + 1], set[r.g] = r.g, true end
  end
  if #gs == 0 then return nil end
  return host:take(host.group:isin(gs):indices()), {groups = set, host = host, all = all}
end

--- The GPUs host.idle would name among those of l (nsl.ledger.build's
-- result over trace: its ledger, groups and host rows), before the ones a
-- straggler finding names are left out: per GPU (in the ledger's order)
-- whose idle_host time -- less the gaps launch.bound and gpu.gaps claim
-- (G: nsl.gpu_tables.make's lb_rows and gap_rows of the same operations) --
-- is at least share of its run: report, device, time, wall, tid, pid (the
-- launching thread and process most of it was in), and per source of
-- SOURCES the value (text) and the time (ns) of the one it was in most
-- (NULL: none).  A distributed run's processes make it of their own reports;
-- one process leaves out the GPUs for which skip(report, device) is true
-- (those the straggler findings name) before reading their threads' host
-- activity.  pre (optional): pending's second result of the same l, G and
-- share, with a = the activity of its rows (nsl.ledger.host_activity_of),
-- attributed along with other intervals: read instead of attributing the
-- rows here when it holds every GPU named.
local function candidates(trace, l, G, share, skip, pre)
  local host, all
  if pre then host, all = pre.host, pre.all else host, all = over_share(l, G, share) end
  local rows, wanted = {}, {}
  for _, r in ipairs(all) do
    if not (skip and skip(r.report, r.device)) then
      rows[#rows + 1] = r
      wanted[#wanted + 1] = r.g
    end
  end
  if #wanted > 0 then
    -- what the launching threads did: attributed here, or along with other intervals (pre: pending's rows'
    -- activity, each row's attribution its own)
    for _, g in ipairs(wanted) do if pre and not pre.groups[g] then pre = nil end end
    local a = pre and pre.a:take(pre.a.group:isin(wanted):indices()) or
              ledger.host_activity(trace, host, host.group:isin(wanted):indices(), "host.idle")
    local tops = {}
    for _, src in ipairs(SOURCES) do tops[src[1]] = top_per_group(a, src[1] .. "_text", src[1] .. "_ov", src[3]) end
    local tids, pids = top_per_group(a, "tid", "time"), top_per_group(a, "pid", "time")
    for _, r in ipairs(rows) do
      for _, src in ipairs(SOURCES) do
        local top = tops[src[1]][r.g]
        if top then r[src[1]], r[src[1] .. "_w"] = top[1], top[2] end
      end
      r.tid = tids[r.g] and tids[r.g][1] or nil
      r.pid = pids[r.g] and pids[r.g][1] or nil
    end
  end
  local cols = {{"report", "report"}, {"device", "device"}, {"time", "time"}, {"wall", "wall"}, {"tid", "tid"},
                {"pid", "pid"}}
  for _, src in ipairs(SOURCES) do
    cols[#cols + 1] = {src[1], src[1]}
    cols[#cols + 1] = {src[1] .. "_w", src[1] .. "_w"}
  end
  local t = D.table_of(rows, cols)
  -- (columns without any value: of their types, for the wire and for the concatenation of the processes')
  local function typed(name, like)
    if #rows == 0 or t[name]:isnull():count() == #t then
      t = t:with(name, like:gather(nsl.rep(-1, #t)))
    end
  end
  for _, c in ipairs{"report", "device", "time", "wall", "tid", "pid"} do typed(c, nsl.column{0}) end
  for _, src in ipairs(SOURCES) do typed(src[1], nsl.column{""}); typed(src[1] .. "_w", nsl.column{0}) end
  return t
end

return {
  id = "host.idle",
  description = "Per GPU, the time it sat idle because the thread that launches its work had not launched the " ..
    "next operation (the ledger's idle_host), with the innermost NVTX range, OS runtime call and CUDA call " ..
    "that thread spent most of it in; the job loses that time, less the gaps launch.bound and gpu.gaps " ..
    "claim",
  tables = {"api", "nvtx", "osrt"},
  reads = {"the ledger (nsl.ledger): idle_host per GPU and its gaps", "NVTX ranges, OS runtime and CUDA API " ..
           "calls of the launching threads: report, pid, tid, start, stop, text or name"},
  claims = {"idle_host"},
  thresholds = {
    host_idle = {default = 0.01, help = "host.idle: share of a GPU's run idle for the host from which it is " ..
      "a finding"},
  },
  candidates = candidates,
  pending = pending,
  run = function(ctx)
    local named = straggler_ranks(ctx)
    local function is_named(r, dev) return named[ctx:rank(r, dev)] or named[ctx:rank(r)] end
    local c = ctx:host_idle(is_named)   -- (candidates': of the whole trace, or from a distributed run's processes)
    if #c == 0 then return end
    for i = 1, #c do
      local r, dev = c.report[i], c.device[i]
      if not is_named(r, dev) then
        local total = c.time[i]
        local parts = {}
        for _, src in ipairs(SOURCES) do
          local v, w = c[src[1]][i], c[src[1] .. "_w"][i]
          if v ~= nil and w and w > 0 then
            parts[#parts + 1] = string.format("%s '%s' (%.0f%% of it)", src[2], v, 100 * w / total)
          end
        end
        local tid, pid = c.tid[i], c.pid[i]
        ctx:add{id = "host.idle", total = total, window = c.wall[i], lost = total,
                text = #parts > 0 and
                  string.format("%s: GPU idle %s while its launching thread was in %s, not launching the next " ..
                    "operation (tid %s)", ctx:rank(r, dev), report.duration(total), table.concat(parts, ", "),
                    tid or "?")
                  or string.format("%s: GPU idle %s while its launching thread had not launched the next operation " ..
                    "(tid %s)", ctx:rank(r, dev), report.duration(total), tid or "?"),
                where = {rank = ctx:rank(r, dev), report = r, device = dev, pid = pid, tid = tid},
                next = "nsl run ledger " .. ctx:path(r)}
      end
    end
  end,
}
