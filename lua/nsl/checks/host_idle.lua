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
  run = function(ctx)
    local L = ctx:ledger()
    local host = L.res.host
    if not host or #host == 0 then return end
    local named = straggler_ranks(ctx)
    local keys = L.res.groups
    -- the gaps launch.bound and gpu.gaps claim, each joined on the operation after the gap: (report, device,
    -- its start) -- and the process, for gpu.gaps' gaps of a process on a device
    local hk = nsl.table{{"report", host.report}, {"pid", host.pid}, {"device", keys.device:gather(host.group)},
                         {"start", host.start}}
    local claimed = {}
    local lb = D.launch_bound_gaps(ctx)
    if lb and #lb > 0 then claimed[#claimed + 1] = {lb, {"report", "device", "start"}} end
    local pd = D.process_devices(ctx)
    if #pd.ops > 0 then
      local gid, _, ge = D.long_gaps(ctx)
      if #gid > 0 then
        local sp = pd.span
        claimed[#claimed + 1] = {nsl.table{{"report", sp.report:gather(gid)}, {"pid", sp.pid:gather(gid)},
                                           {"device", sp.device:gather(gid)}, {"start", ge}},
                                 {"report", "pid", "device", "start"}}
      end
    end
    for _, c in ipairs(claimed) do
      local t, on = c[1], c[2]
      local j = hk:join(t:select(on):with("claimed", nsl.rep(1, #t)), on, {"claimed"})
      local keep = j.claimed:isnull()
      host, hk = host:filter(keep), hk:filter(keep)
    end
    if #host == 0 then return end
    local per = host:group_by("group"):agg{"time=sum(time)"}
    local time_of = {}
    for i = 1, #per do time_of[per.group[i]] = per.time[i] end
    -- the GPUs whose idle for the host passes the threshold, and the host rows of those
    local want, wanted = {}, {}
    for k = 1, #keys do
      local r, dev = keys.report[k], keys.device[k]
      local row = L.run[r .. ":" .. dev]
      local t = time_of[k - 1] or 0
      -- (a straggler finding names a GPU, "NAME:gpuN", or a whole report, "NAME")
      if row and row.wall > 0 and t > 0 and t >= ctx.args.host_idle * row.wall and
         not (named[ctx:rank(r, dev)] or named[ctx:rank(r)]) then
        want[k - 1] = {wall = row.wall, time = t}
        wanted[#wanted + 1] = k - 1
      end
    end
    if #wanted == 0 then return end
    local sel = host.group:isin(wanted):indices()
    local a = ledger.host_activity(ctx.trace, host, sel)
    local norm = function(x) return nvtx.normalize(x, nvtx.pytorch_suffixes) end
    local sources = {{"nvtx", "NVTX", norm}, {"osrt", "OS runtime"}, {"api", "CUDA"}}
    for _, src in ipairs(sources) do src.top = top_per_group(a, src[1] .. "_text", src[1] .. "_ov", src[3]) end
    local tids, pids = top_per_group(a, "tid", "time"), top_per_group(a, "pid", "time")
    for _, gi in ipairs(wanted) do
      local row = want[gi]
      local k = gi + 1
      local r, dev = keys.report[k], keys.device[k]
      local total = row.time
      local parts = {}
      for _, src in ipairs(sources) do
        local top = src.top[gi]
        if top and top[2] > 0 then
          parts[#parts + 1] = string.format("%s '%s' (%.0f%% of it)", src[2], top[1], 100 * top[2] / total)
        end
      end
      local tid = tids[gi] and tids[gi][1] or nil
      local pid = pids[gi] and pids[gi][1] or nil
      ctx:add{id = "host.idle", total = total, window = row.wall, lost = total,
              text = #parts > 0 and
                string.format("%s: GPU idle %s while its launching thread was in %s, not launching the next " ..
                  "operation (tid %s)", ctx:rank(r, dev), report.duration(total), table.concat(parts, ", "), tid or "?")
                or string.format("%s: GPU idle %s while its launching thread had not launched the next operation " ..
                  "(tid %s)", ctx:rank(r, dev), report.duration(total), tid or "?"),
              where = {rank = ctx:rank(r, dev), report = r, device = dev, pid = pid, tid = tid},
              next = "nsl run ledger " .. ctx:path(r)}
    end
  end,
}
