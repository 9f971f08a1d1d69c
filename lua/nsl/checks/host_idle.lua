-- nsl.checks.host_idle -- diagnose check host.idle (the engine: nsl.diagnose).
--
-- The ledger's idle_host line per GPU: the time the GPU sat idle because the
-- thread that launches its work had not launched the next operation yet (it
-- was in a data loader, in Python, in an OS call), with what that thread was
-- doing: the innermost NVTX range, OS runtime call and CUDA call it spent
-- most of that time in (nsl.ledger.host_activity).  Each nanosecond is told
-- once: the short gaps before short kernels are launch.bound's (the same
-- idle, a finer cause), and a GPU that a straggler finding names is left to
-- that finding, which tells its lateness and cause.
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

-- Whether GPU label ("NAME:gpuN", of report name NAME) is among the named ones.
local function named_gpu(named, label, name)
  return named[label] or named[name] or false
end

-- The text of key (nvtx, osrt, api) that took most of the group's time in a
-- (host_activity rows of one group): text, ns; nil when none.
local function top_text(a, key, norm)
  local col = a:coltype(key .. "_text") and a[key .. "_text"]
  if not col then return nil end
  local has = ~col:isnull()
  if has:count() == 0 then return nil end
  local t = nsl.table{{"text", col}, {"ov", a[key .. "_ov"]}}:filter(has)
  if norm then t = t:with("text", t.text:map(norm)) end
  local g = t:group_by("text"):agg{"ov=sum(ov)"}:sort("-ov", "text")
  return g.text[1], g.ov[1]
end

return {
  id = "host.idle",
  description = "Per GPU, the time it sat idle because the thread that launches its work had not launched the " ..
    "next operation (the ledger's idle_host), with the innermost NVTX range, OS runtime call and CUDA call " ..
    "that thread spent most of it in; the job loses that time, less the gaps launch.bound claims",
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
    -- the gaps launch.bound claims (joined on the device and the start of the operation after the gap)
    if #ctx.trace.kernels > 0 and #D.devices(ctx).ops > 0 then
      local lb = D.launch_bound_gaps(ctx)
      if #lb > 0 then
        local j = nsl.table{{"report", host.report}, {"device", keys.device:gather(host.group)}, {"start", host.start}}
          :join(lb:select{"report", "device", "start"}:with("claimed", nsl.rep(1, #lb)), {"report", "device", "start"},
                {"claimed"})
        host = host:filter(j.claimed:isnull())
        if #host == 0 then return end
      end
    end
    local per = host:group_by("group"):agg{"time=sum(time)"}
    local time_of = {}
    for i = 1, #per do time_of[per.group[i]] = per.time[i] end
    -- the GPUs whose idle for the host passes the threshold, and the host rows of those
    local want, wanted = {}, {}
    for k = 1, #keys do
      local r, dev = keys.report[k], keys.device[k]
      local row = L.run[r .. ":" .. dev]
      local label = ctx:rank(r, dev)
      local t = time_of[k - 1] or 0
      if row and row.wall > 0 and t > 0 and t >= ctx.args.host_idle * row.wall and
         not named_gpu(named, label, ctx:rank(r)) then
        want[k - 1] = {wall = row.wall, time = t}
        wanted[#wanted + 1] = k - 1
      end
    end
    if #wanted == 0 then return end
    local sel = host.group:isin(wanted):indices()
    local a = ledger.host_activity(ctx.trace, host, sel)
    local norm = function(x) return nvtx.normalize(x, nvtx.pytorch_suffixes) end
    for _, gi in ipairs(wanted) do
      local row = want[gi]
      local k = gi + 1
      local r, dev = keys.report[k], keys.device[k]
      local mine = a:filter(a.group:eq(gi))
      local total = row.time
      local parts = {}
      for _, src in ipairs{{"nvtx", "NVTX", norm}, {"osrt", "OS runtime", nil}, {"api", "CUDA", nil}} do
        local text, ov = top_text(mine, src[1], src[3])
        if text and ov > 0 then
          parts[#parts + 1] = string.format("%s '%s' (%.0f%% of it)", src[2], text, 100 * ov / total)
        end
      end
      local tids = mine:group_by("tid"):agg{"t=sum(time)"}:sort("-t")
      local tid = #tids > 0 and tids.tid[1] or nil
      local pids = mine:group_by("pid"):agg{"t=sum(time)"}:sort("-t")
      local pid = #pids > 0 and pids.pid[1] or nil
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
