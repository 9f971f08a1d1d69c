-- nsl.diagnose -- the engine of `nsl run diagnose`: builds the ledger of the
-- trace once (nsl.ledger: each GPU's wall time split into compute,
-- collective wait and transfer, copies and idle causes), runs the checks,
-- each turning one kind of lost time into findings in the shared record
-- (lua/nsl/findings.lua: id, severity, message, lost_ns, lost_per_step_ns,
-- share, cost_ns, step_ns, where, next, evidence), merges one cause found on
-- several ranks into one finding, and ranks them; over one trace object, so
-- the tables a check loads stay loaded for the next.
--
-- Cost.  A check measures `total` ns over a `window` (a device's or a
-- report's active span); what the job loses is `lost` (the ledger line the
-- check claims, e.g. idle_sync for blocking calls, or its total when it
-- claims none) over the profiled run: lost_ns; lost_per_step_ns = lost_ns /
-- steps where steps are known (nsl.iterations; never for one-time costs:
-- compiling, loading, warm-up, ranked apart); share = lost_ns / the job's
-- wall time (the longest GPU's run), at most 1.  A cause on a rank the
-- others do not wait for is hidden (lost 0; M.merge).  cost_ns and step_ns
-- keep the per-step rate of earlier releases: with steps, cost_ns = total /
-- window x step_ns (one-time: total / steps), else total.  Severity: error
-- from args.error_share, warning from args.warn_share of the share, else
-- info (a check that found nothing adds no finding).
--
-- The rules of `nsys analyze` (NVIDIA's expert-system rules), with their
-- documented semantics:
--  memcpy.pageable_async  cuda_memcpy_async: memcpy from or to pageable memory
--                         launched by a cudaMemcpy*Async* call (it blocks);
--  memcpy.sync            cuda_memcpy_sync: memcpy launched by a cudaMemcpy*
--                         call that is not Async;
--  memset.sync            cuda_memset_sync: memset of pinned or managed
--                         memory launched by a cudaMemset* call not Async;
--  api.sync               cuda_api_sync: cudaDeviceSynchronize* and
--                         cudaStreamSynchronize* calls;
--  gpu.gaps               gpu_gaps: per process and device, the idle gaps
--                         longer than args.gap (500 ms) between the first
--                         and last GPU operation (kernel, memcpy, memset);
--  gpu.low_utilisation    gpu_time_util: per process and device, the span
--                         split into args.chunks (30) equal chunks; a chunk
--                         whose busy time (union of GPU operations) is under
--                         args.util (50 %) of its length is low; the job
--                         loses the low chunks' idle outside gpu.gaps'
--                         gaps (never counted twice).
-- NVIDIA's rules count their profiling overhead as GPU work (nsl cannot:
-- exports do not say which overhead is GPU time) and match CUDA calls by
-- name with SQL LIKE, case-insensitive, as here.  The four call rules find
-- per process the time its threads were blocked (the calls' durations); the
-- two GPU rules the idle time (of the gaps, and of the low chunks).
-- The other checks:
--  nccl.exposed         per device, the time of NCCL collectives other than
--                       send/receive that no compute kernel overlaps
--                       (nsl.overlap's NCCL-only set); the job loses at
--                       most the ledger's comm line of the device (waiting
--                       for a later rank is the straggler's);
--  pipeline.bubbles     per device (a pipeline stage), Send or Recv kernel
--                       time (one direction: SendRecv is all-to-all's, a
--                       collective) with no other kernel running: waiting
--                       on the neighbouring stage;
--  straggler.*          the straggler analysis's own findings, passed on;
--  launch.bound         per device, idle gaps (no kernel, memcpy or memset
--                       running: copies are not idle) of at most args.launch_gap
--                       before a kernel shorter than args.short (the
--                       shortest of those starting at the gap's end);
--  host.sync_per_step   per process, the median over steady steps of the
--                       time in CUDA calls that block the host
--                       (nsl.host_sync, by the call's start); the worst
--                       process;
--  compile.time         per process, the compile analysis's union of
--                       compiling and loading (one-time);
--  warmup.share         per process, the warm-up steps' time above the
--                       steady median (one-time);
--  memory.near_capacity per device, the heap analysis's peak over the
--                       device's memory (no cost: a risk, graded by
--                       args.memory_warn / memory_error);
--  streams.serialised   per device, memcpy on streams that also run kernels
--                       while no kernel runs on the device: copies a stream
--                       of their own would overlap with compute (the job
--                       loses at most the device's compute time: a copy
--                       hides only under compute that exists);
--  mfu                  nsys-ai's model FLOPs utilisation, flops_per_step /
--                       step / peak, against the dense FP16/BF16 tensor
--                       peak from the device's SM count, clock and compute
--                       capability (M.flops_per_sm_clock) or
--                       args.peak_tflops (no cost; a warning below
--                       args.mfu_warn).
-- Besides the shared fields a finding keeps total_ns: the time lost over
-- its window, from which cost_ns and share derive.
local nsl = require("nsl")
local report = require("nsl.report")
local units = require("nsl.util.units")
local gpu_ops = require("nsl.gpu_ops")
local distributed = require("nsl.distributed")
local overlap = require("nsl.overlap")
local nccl = require("nsl.nccl")
local steps = require("nsl.steps")
local iterations = require("nsl.iterations")
local host_sync = require("nsl.host_sync")
local output = require("nsl.output")
local ledger = require("nsl.ledger")

local M = {}

local floor = math.floor
local function round(x) return floor(x + 0.5) end

-- ---------------------------------------------------------------- context

local Ctx = {}
Ctx.__index = Ctx

--- The steps of a trace for diagnose: nil (no steps), or {step_ns (median
-- steady step, integer ns), n (most iterations of one process), how,
-- it (iterations.find), windows (iterations.windows sorted by report, pid,
-- iter), warm_flag (1 for a warm-up window, by row of windows), warm =
-- {group key -> warm-up count}, nvtx (the step range's name, or nil)}.  spec "" detects; a named range
-- that is missing fails.
local function find_steps(trace, spec, warmup)
  -- the one step detection of the trace (nsl.iterations.steps: on JAX nsys-jax's warm-up rule)
  local st, err = iterations.steps(trace, {spec = spec, warmup = warmup})
  if not st then
    if spec ~= "" then nsl.fail(string.format("%s: %s", table.concat(trace.reports.path:totable(), ", "), err)) end
    return nil
  end
  if not st.step_ns or st.step_ns <= 0 then return nil end
  local warm_flag = {}
  for i, w in ipairs(st.windows.warm:totable()) do warm_flag[i] = w and 1 or 0 end
  local it = st.it
  return {step_ns = st.step_ns, n = st.n, how = it.how, it = it, windows = st.windows, warm = st.warm,
          warm_flag = warm_flag, groups = st.groups, order = st.order,
          nvtx = it.mode == "range" and (spec ~= "" and spec or it.name) or nil}
end

-- The columns of nsl.gpu_ops the checks read (Ctx:ops and the distributed step).
local OPS = {names = "short", memop = true}

--- The distributed step (nsl.distributed) of diagnose over a process's
-- reports: the GPU operations (Ctx:ops, with `part` 0/1/2 for kernels,
-- memcpy, memset, so rank 0 can restore the one-process row order) and the
-- steps of the analyses diagnose runs that have a distributed form, under
-- "NAME.TABLE".
function M.step(trace)
  local parts = {ops = distributed.ops_step(trace, OPS)}
  local runner = require("nsl.runner")
  for _, name in ipairs{"straggler"} do
    local a = assert(runner.load_analysis(name))
    for tname, t in pairs(a.distributed.step(trace, assert(runner.parse_args(a, {})))) do
      parts[name .. "." .. tname] = t
    end
  end
  return parts
end

--- A context for the checks: the trace, its arguments, its steps; parts:
-- a distributed run's gathered columns (M.step), or nil.
function M.context(trace, args, parts)
  -- arguments first: a bad one fails the run, not just its check
  local ns = {gap = units.duration_arg(args, "gap"), short = units.duration_arg(args, "short"),
              launch_gap = units.duration_arg(args, "launch_gap")}
  if args.chunks < 1 or math.type(args.chunks) ~= "integer" then
    nsl.fail("--arg chunks must be a whole number, 1 or more")
  end
  local ctx = setmetatable({trace = trace, args = args, ns = ns, findings = {}, evidence = {}, notes = {}, cache = {}},
                           Ctx)
  if parts then   -- a distributed run: what the processes computed of their reports
    ctx.parts = parts
    ctx.cache.ops = distributed.ops_combine(parts.ops)
  end
  ctx.names = trace.reports.name:totable()
  ctx.paths = trace.reports.path:totable()
  ctx.steps = find_steps(trace, args.iteration, args.warmup)
  return ctx
end

--- The GPU operations of the trace (nsl.gpu_ops, short names), loaded once.
function Ctx:ops()
  if not self.cache.ops then self.cache.ops = gpu_ops.table(self.trace, OPS) end
  return self.cache.ops
end

--- The CUDA API calls, one per correlation id of a process (host_sync.api_calls).
function Ctx:api()
  if not self.cache.api then self.cache.api = host_sync.api_calls(self.trace) end
  return self.cache.api
end

--- The ledger of the trace (nsl.ledger.build over the whole run, with the
-- steps when there are some), built once: {t = the ledger table, run =
-- {"report:device" -> run row as a Lua table}, job_wall = the longest
-- GPU's run (the job's wall time: ranks wait for each other), devices =
-- {"report:pid" -> list of devices it ran work on}, lost = {rank label ->
-- ns the job would save without that rank's lateness}, res = the ledger's
-- result}.
function Ctx:ledger()
  if self.cache.ledger then return self.cache.ledger end
  local l = ledger.build(self.trace, {steps = self.steps and self.steps.it})
  local t = l.ledger
  local L = {t = t, run = {}, job_wall = 0, devices = {}, lost = {}, res = l}
  local cols = {"report", "device", "rank", "wall"}
  for _, c in ipairs(ledger.lines) do cols[#cols + 1] = c end
  cols[#cols + 1] = ledger.remainder
  local run = t:filter(t.step:eq(0))
  local v = {}
  for _, c in ipairs(cols) do v[c] = run[c]:totable() end
  for i = 1, #run do
    local row = {}
    for _, c in ipairs(cols) do row[c] = v[c][i] end
    L.run[row.report .. ":" .. row.device] = row
    if row.wall > L.job_wall then L.job_wall = row.wall end
  end
  if not l.empty then
    local ops = self:ops()
    local pd = ops:filter(~ops.device:isnull() & ~ops.pid:isnull()):group_by("report", "pid", "device"):keys()
    for i = 1, #pd do
      local key = pd.report[i] .. ":" .. pd.pid[i]
      L.devices[key] = L.devices[key] or {}
      table.insert(L.devices[key], pd.device[i])
    end
  end
  -- a straggler's cost to the job: at each collective it arrived last at, the others could have gone on at
  -- the second-last arrival (at most the shortest of their collectives later)
  local res = l.straggler
  if res and res.coll and #res.coll > 0 then
    local c = res.coll
    c = c:with("dur", c.stop - c.start)
    -- the others wait inside their collective: what they waited beyond its length is not this rank's (the
    -- gain at an instance is at most the shortest of their collectives)
    local others = c:filter(c.last:eq(0)):group_by("instance"):agg{"second=max(arrive)", "shortest=min(dur)"}
    local lastrows = c:filter(c.last:eq(1)):join(others, {"instance"}, {"second", "shortest"})
    local gain = lastrows.arrive - lastrows.second
    gain = nsl.where(gain:lt(lastrows.shortest), gain, lastrows.shortest)
    local per = lastrows:with("gain", nsl.where(gain:gt(0), gain, nsl.rep(0, #gain))):filter(~gain:isnull())
      :group_by("rank"):agg{"lost=sum(gain)", "n=count"}
    local keys = l.groups
    for i = 1, #per do
      local k = per.rank[i] + 1
      local label = (self.names[keys.report[k] + 1] or tostring(keys.report[k])) .. ":gpu" .. keys.device[k]
      L.lost[label] = {lost = per.lost[i], n = per.n[i]}
    end
  end
  -- the ranks the others wait for: last to arrive at a tenth or more of the steady collectives (nil when
  -- nothing is known: one rank, or no matched collectives -- then every rank counts)
  if res and res.coll and #res.coll > 0 and res.ninst and res.ninst > 0 then
    local c = res.coll
    local lasts = c:filter(c.last:eq(1)):group_by("rank"):agg{"n=count"}
    local keys = l.groups
    L.critical = {}
    for i = 1, #lasts do
      if lasts.n[i] >= 0.1 * res.ninst then
        local k = lasts.rank[i] + 1
        L.critical[(self.names[keys.report[k] + 1] or tostring(keys.report[k])) .. ":gpu" .. keys.device[k]] = true
      end
    end
  end
  self.cache.ledger = L
  return L
end

--- Whether the rank of finding f is one the job waits for (always, when
-- nothing says otherwise): a rank label with ":gpuN" names a GPU, a report's
-- name any of its GPUs.
function Ctx:critical(f)
  local crit = self:ledger().critical
  local w = f.where
  if not crit or not w or not w.rank then return true end
  if crit[w.rank] then return true end
  for label in pairs(crit) do
    if label:sub(1, #w.rank + 4) == w.rank .. ":gpu" then return true end
  end
  return false
end

--- The most of ledger line `line` (or a list of lines, summed) over the
-- GPUs of process (report r, pid) -- of report r's GPUs when pid is nil:
-- what the job loses to a cause of that process on its worst GPU.
function Ctx:ledger_lost(r, pid, line)
  local L = self:ledger()
  local lines = type(line) == "table" and line or {line}
  local devs = pid and L.devices[r .. ":" .. pid] or nil
  local best = 0
  for key, row in pairs(L.run) do
    local rep, dev = key:match("^(%-?%d+):(%-?%d+)$")
    local mine = tonumber(rep) == r
    if mine and devs then
      mine = false
      for _, d in ipairs(devs) do if d == tonumber(dev) then mine = true end end
    end
    if mine then
      local v = 0
      for _, x in ipairs(lines) do v = v + (row[x] or 0) end
      if v > best then best = v end
    end
  end
  return best
end

--- The active span of report r (0-based): first start to last stop of its
-- kernels, memcpy, memset and CUDA API calls (and, for nsys-jax archives,
-- of the NVTX ranges projected onto the GPU).  Returns lo, hi.
function Ctx:report_span(r)
  if not self.cache.spans then
    local spans = {}
    for _, name in ipairs{"kernels", "memcpy", "memset", "api", "gpu_ranges"} do
      local t = self.trace[name]
      if #t > 0 then
        t:load{"report", "start", "stop"}
        local a = t:group_by("report"):agg{"lo=min(start)", "hi=max(stop)"}
        for i = 1, #a do
          local k = a.report[i]
          local sp = spans[k] or {a.lo[i], a.hi[i]}
          sp[1], sp[2] = math.min(sp[1], a.lo[i]), math.max(sp[2], a.hi[i])
          spans[k] = sp
        end
      end
    end
    self.cache.spans = spans
  end
  local sp = self.cache.spans[r]
  if not sp then return nil end
  return sp[1], sp[2]
end

--- Label of a rank: the report's name, with ":gpuN" for a device.
function Ctx:rank(r, device)
  local name = self.names[r + 1] or tostring(r)
  if device then name = name .. ":gpu" .. device end
  return name
end

-- A path as one shell word.
local function shell_word(p)
  if not p:find("[^%w%._/%-+:,=@]") then return p end
  return "'" .. p:gsub("'", "'\\''") .. "'"
end

--- The input that holds report r as a shell word, for the next command: a
-- bundle's report (bundle.zip:reports/x.sqlite) is named by its bundle,
-- which every command opens.
function Ctx:path(r)
  local p = self.paths[r + 1] or "TRACE"
  return shell_word(p:match("^(.-%.zip):") or p)
end

--- Every input path as shell words, for a next command over the whole trace.
function Ctx:all_paths()
  local list = {}
  for i, p in ipairs(self.paths) do list[i] = shell_word(p) end
  return table.concat(list, " ")
end

--- A time on the trace's clock as an --arg from/to value (from the trace's first event).
function Ctx:at(t)
  if not self.cache.lo then self.cache.lo = require("nsl.window").span(self.trace) or 0 end
  return string.format("%.6fs", (t - self.cache.lo) / 1e9)
end

--- Keeps an evidence table (printed after the findings); returns its name.
function Ctx:table(name, t, title)
  for _, e in ipairs(self.evidence) do if e.name == name then return name end end
  self.evidence[#self.evidence + 1] = {name = name, t = t, title = title}
  return name
end

--- A finding from a check: f has id, text (what was found), total (ns lost
-- over window), window (ns), once (a one-time cost), where, next, evidence,
-- and optionally severity; the cost fields and the message are filled in.
function Ctx:add(f)
  local st, args = self.steps, self.args
  local total, window = f.total, f.window
  local rec = {id = f.id, where = f.where, next = f.next, evidence = f.evidence, total_ns = total}
  if total then
    if st and f.once then
      rec.step_ns, rec.cost_ns = st.step_ns, total // st.n
      rec.share = rec.cost_ns / st.step_ns
    elseif not (window and window > 0) then   -- an instant: no rate to take
      rec.cost_ns, rec.share = total, 0.0
    elseif st then
      rec.step_ns, rec.share = st.step_ns, total / window
      rec.cost_ns = round(rec.share * st.step_ns)
    else
      rec.cost_ns, rec.share = total, total / window
    end
  end
  -- the job's cost: lost_ns over the profiled run (f.lost when the check
  -- claims a ledger line, else its total over the run), per step, and the
  -- share of the job's wall time, never above 1
  local lost = f.lost
  if lost == nil and total and not (f.per_step) then lost = total end
  if lost then
    local jw = self:ledger().job_wall
    rec.lost_ns = lost
    rec.share = jw > 0 and math.min(1.0, lost / jw) or 0.0
    if f.once then rec.once = true
    elseif st and st.n > 0 then rec.lost_per_step_ns = lost // st.n end
  end
  local sev = f.severity
  if not sev then
    local sh = rec.share or 0
    sev = (args.error_share > 0 and sh >= args.error_share) and "error"
          or (args.warn_share > 0 and sh >= args.warn_share) and "warning" or "info"
  end
  rec.severity = sev
  -- the cost itself is printed by nsl.findings.lines from cost_ns and step_ns
  local cost = ""
  if rec.cost_ns and f.once then cost = " (a one-time cost)" end
  rec.message = f.text .. cost
  self.findings[#self.findings + 1] = rec
  return rec
end

-- ---------------------------------------------------------------- helpers

-- Columns from an array of row tables: cols = {{name, key}, ...}.
local function table_of(rows, cols)
  local t = {}
  for _, c in ipairs(cols) do
    local v, code = {}, {}
    for i, r in ipairs(rows) do
      local x = r[c[2]]
      if x == nil then code[i] = -1 else v[#v + 1] = x; code[i] = #v - 1 end
    end
    if #v == 0 then v[1] = 0 end
    t[#t + 1] = {c[1], nsl.column(v):gather(#code > 0 and nsl.column(code) or nsl.column{})}
  end
  return nsl.table(t)
end

-- A mask of n false values.
local function none(n) return nsl.rep(0, n):eq(1) end

-- Memory operations of table t (memcpy or memset: report, pid, corr, ...)
-- launched by a CUDA API call whose name passes fn: the rows of t with
-- api_tid, api_start, api_dur, api_name.
local function launched_by(ctx, t, fn)
  local j = t:join(ctx:api(), {"report", "pid", "corr"}, {"tid", "start", "dur", "name"}, "api_")
  return j:filter(j.api_name:where(function(s) return fn(s:lower()) end))
end

-- Findings per process for CUDA calls that block: rows (report, pid,
-- api_tid, api_start, api_dur, api_name, and device, stream for memory
-- operations) -> one finding per (report, pid), where = its longest call.
-- The blocked time is the rule's measure (total_ns); what the job loses is
-- the ledger line the calls claim (line: idle_sync, idle_htod) on the
-- process's worst GPU: a host that waits while its GPU is busy loses nothing.
local function per_process_calls(ctx, id, rows, what, evidence, next_cmd, line)
  if #rows == 0 then return end
  local a = rows:group_by("report", "pid"):agg{"n=count", "total=sum(api_dur)", "longest=max(api_dur)"}
  a = a:sort("report", "pid")
  for i = 1, #a do
    local r, pid = a.report[i], a.pid[i]
    local lo, hi = ctx:report_span(r)
    local one = rows:filter(rows.report:eq(r) & rows.pid:eq(pid)):sort("-api_dur", "api_start")
    local lost = ctx:ledger_lost(r, pid, line)
    ctx:add{id = id, total = a.total[i], window = hi - lo, evidence = evidence, lost = lost,
            text = string.format("%s pid %d: %s %s (%s blocked the calling threads, longest %s; its GPU sat idle " ..
              "%s for them)", ctx:rank(r), pid, report.int(a.n[i]), what, report.duration(a.total[i]),
              report.duration(a.longest[i]), report.duration(lost)),
            where = {rank = ctx:rank(r), report = r, pid = pid, tid = one.api_tid[1],
                     device = one:coltype("device") and one.device[1] or nil,
                     stream = one:coltype("stream") and one.stream[1] or nil,
                     from = one.api_start[1], to = one.api_start[1] + one.api_dur[1]},
            next = next_cmd(r)}
  end
end

-- The evidence table of blocking calls with their GPU operation.
local function calls_table(ctx, rows, extra)
  local s = rows:sort("-api_dur", "report", "api_start")
  local cols = {{"report", s.report:map(function(r) return ctx:rank(r) end)}, {"pid", s.pid}, {"tid", s.api_tid},
                {"device", s.device}, {"stream", s.stream}, {"API call", s.api_name}, {"API start (ns)", s.api_start},
                {"API time (ns)", s.api_dur}, {"GPU time (ns)", s.stop - s.start}}
  for _, c in ipairs(extra or {}) do cols[#cols + 1] = {c[1], s[c[2]]} end
  return nsl.table(cols)
end

-- ---------------------------------------------------------------- nsys analyze rules

local checks = {}

checks[#checks + 1] = {id = "memcpy.pageable_async", run = function(ctx)
  local mc = ctx.trace.memcpy
  if #mc == 0 then return end
  mc:load{"report", "pid", "device", "stream", "corr", "start", "stop", "bytes", "kind", "src_kind", "dst_kind"}
  local pg = mc:filter(mc.src_kind:eq("pageable") | mc.dst_kind:eq("pageable"))
  local rows = launched_by(ctx, pg, function(s) return s:find("^cudamemcpy.*async") ~= nil end)
  if #rows == 0 then return end
  local ev = ctx:table("memcpy_pageable_async", calls_table(ctx, rows, {{"kind", "kind"}, {"bytes", "bytes"},
    {"src", "src_kind"}, {"dst", "dst_kind"}}), "Async memcpy with pageable memory (they block like synchronous ones)")
  per_process_calls(ctx, "memcpy.pageable_async", rows, "asynchronous memcpy calls with pageable host memory, " ..
    "which run synchronously (pin the host buffers)", ev,
    function(r) return "nsl run launch " .. ctx:path(r) end, "idle_htod")
end}

checks[#checks + 1] = {id = "memcpy.sync", run = function(ctx)
  local mc = ctx.trace.memcpy
  if #mc == 0 then return end
  mc:load{"report", "pid", "device", "stream", "corr", "start", "stop", "bytes", "kind"}
  local rows = launched_by(ctx, mc, function(s) return s:find("^cudamemcpy") ~= nil and not s:find("async") end)
  if #rows == 0 then return end
  local ev = ctx:table("memcpy_sync", calls_table(ctx, rows, {{"kind", "kind"}, {"bytes", "bytes"}}),
    "Synchronous memcpy calls (the host waits for the copy)")
  per_process_calls(ctx, "memcpy.sync", rows, "synchronous memcpy calls (use cudaMemcpyAsync on a stream)", ev,
    function(r) return "nsl run launch " .. ctx:path(r) end, "idle_htod")
end}

checks[#checks + 1] = {id = "memset.sync", run = function(ctx)
  local ms = ctx.trace.memset
  if #ms == 0 then return end
  ms:load{"report", "pid", "device", "stream", "corr", "start", "stop", "bytes", "kind"}
  local mk = ms:filter(ms.kind:isin{"pinned", "managed"})
  local rows = launched_by(ctx, mk, function(s) return s:find("^cudamemset") ~= nil and not s:find("async") end)
  if #rows == 0 then return end
  local ev = ctx:table("memset_sync", calls_table(ctx, rows, {{"memory", "kind"}, {"bytes", "bytes"}}),
    "Synchronous memset of pinned or managed memory")
  per_process_calls(ctx, "memset.sync", rows, "synchronous memset calls on pinned or managed memory " ..
    "(use cudaMemsetAsync)", ev, function(r) return "nsl run launch " .. ctx:path(r) end, "idle_sync")
end}

checks[#checks + 1] = {id = "api.sync", run = function(ctx)
  local api = ctx:api()
  if #api == 0 then return end
  local m = api.name:where(function(s)
    s = s:lower()
    return s:find("^cudadevicesynchronize") ~= nil or s:find("^cudastreamsynchronize") ~= nil
  end)
  local c = api:filter(m)
  if #c == 0 then return end
  local rows = nsl.table{{"report", c.report}, {"pid", c.pid}, {"api_tid", c.tid}, {"api_start", c.start},
                         {"api_dur", c.dur}, {"api_name", c.name}}
  local s = rows:sort("-api_dur", "report", "api_start")
  local ev = ctx:table("api_sync", nsl.table{{"report", s.report:map(function(r) return ctx:rank(r) end)},
    {"pid", s.pid}, {"tid", s.api_tid}, {"API call", s.api_name}, {"start (ns)", s.api_start},
    {"blocked (ns)", s.api_dur}}, "cudaDeviceSynchronize / cudaStreamSynchronize calls, longest first")
  per_process_calls(ctx, "api.sync", rows, "cudaDeviceSynchronize/cudaStreamSynchronize calls (wait on events " ..
    "instead of blocking the host)", ev, function(r) return "nsl run launch " .. ctx:path(r) end, "idle_sync")
end}

-- Groups of the GPU operations by (report, pid, device), with their spans:
-- ops (with device), g (group_by), span (report, pid, device, lo, hi).
local function process_devices(ctx)
  if not ctx.cache.pd then
    local ops = ctx:ops()
    ops = ops:filter(~ops.device:isnull())
    local g = ops:group_by("report", "pid", "device")
    local span = g:agg{"lo=min(start)", "hi=max(stop)"}
    ctx.cache.pd = {ops = ops, g = g, span = span}
  end
  return ctx.cache.pd
end

checks[#checks + 1] = {id = "gpu.gaps", run = function(ctx)
  local pd = process_devices(ctx)
  if #pd.ops == 0 then return end
  local min = ctx.ns.gap
  local span = pd.span
  local gid, gs, ge = nsl.gaps_grouped(pd.ops.start, pd.ops.stop, pd.g:ids(), #span, 0)
  local d = nsl.table{{"g", gid}, {"start", gs}, {"stop", ge}, {"dur", ge - gs}}
  d = d:filter(d.dur:gt(min)):sort("-dur", "start")
  if #d == 0 then return end
  local ev = ctx:table("gpu_gaps", nsl.table{
    {"report", span.report:gather(d.g):map(function(r) return ctx:rank(r) end)}, {"pid", span.pid:gather(d.g)},
    {"device", span.device:gather(d.g)}, {"start (ns)", d.start}, {"gap (ns)", d.dur}},
    string.format("GPU idle gaps longer than %s per process and device", report.duration(min)))
  local a = d:group_by("g"):agg{"n=count", "total=sum(dur)", "first=first(start)", "longest=first(dur)"}:sort("g")
  for i = 1, #a do
    local k = a.g[i] + 1
    local r, dev = span.report[k], span.device[k]
    ctx:add{id = "gpu.gaps", total = a.total[i], window = span.hi[k] - span.lo[k], evidence = ev,
            text = string.format("%s pid %d: %d GPU idle gaps longer than %s (%s in all, longest %s)",
              ctx:rank(r, dev), span.pid[k], a.n[i], report.duration(min), report.duration(a.total[i]),
              report.duration(a.longest[i])),
            where = {rank = ctx:rank(r, dev), report = r, pid = span.pid[k], device = dev, from = a.first[i],
                     to = a.first[i] + a.longest[i]},
            next = string.format("nsl run gaps %s --arg min=%s --arg scope=device", ctx:path(r),
                                 min % 1000000 == 0 and (min // 1000000) .. "ms" or tostring(min))}
  end
end}

checks[#checks + 1] = {id = "gpu.low_utilisation", run = function(ctx)
  local pd = process_devices(ctx)
  if #pd.ops == 0 then return end
  local n, util = ctx.args.chunks, ctx.args.util
  local span = pd.span
  local wg, wlo, whi, wk = {}, {}, {}, {}
  for i = 1, #span do
    local lo, width = span.lo[i], span.hi[i] - span.lo[i]
    if width >= n then
      for k = 0, n - 1 do
        wg[#wg + 1], wk[#wk + 1] = i - 1, k
        wlo[#wlo + 1], whi[#whi + 1] = lo + width * k // n, lo + width * (k + 1) // n
      end
    end
  end
  if #wg == 0 then return end
  local lo, hi = nsl.column(wlo), nsl.column(whi)
  local busy = overlap.measure(pd.ops, none(#pd.ops), pd.g:ids(), #span,
                               {{gid = nsl.column(wg), lo = lo, hi = hi}})[1].all
  local len = hi - lo
  local w = nsl.table{{"g", nsl.column(wg)}, {"chunk", nsl.column(wk)}, {"start", lo}, {"stop", hi}, {"busy", busy},
                      {"idle", len - busy}, {"util", busy * 100.0 / len}}
  local low = w:filter(w.util:lt(util))
  if #low == 0 then return end
  local ev = ctx:table("gpu_low_utilisation", nsl.table{
    {"report", span.report:gather(low.g):map(function(r) return ctx:rank(r) end)}, {"pid", span.pid:gather(low.g)},
    {"device", span.device:gather(low.g)}, {"chunk", low.chunk}, {"start (ns)", low.start},
    {"length (ns)", low.stop - low.start}, {"busy (ns)", low.busy}, {"utilisation (%)", low.util}},
    string.format("Chunks (1/%d of each process's device span) with GPU utilisation under %g%%", n, util))
  -- the idle of the low chunks that gpu.gaps does not claim already (its gaps longer than args.gap): one
  -- ledger sweep over the chunks, the GPU work before the long gaps before the rest
  local ids = pd.g:ids()
  local gg, gs, ge = nsl.gaps_grouped(pd.ops.start, pd.ops.stop, ids, #span, ctx.ns.gap)
  local tot = nsl.ledger_sweep(nsl.concat(pd.ops.start, gs), nsl.concat(pd.ops.stop, ge), nsl.concat(ids, gg),
                               nsl.concat(nsl.rep(0, #pd.ops), nsl.rep(1, #gs)), 2, low.g, low.start, low.stop)
  low = low:with("rest", tot:gather(nsl.range(#low) * 3 + 2))
  local a = low:group_by("g"):agg{"n=count", "total=sum(idle)", "worst=min(util)", "rest=sum(rest)"}:sort("g")
  for i = 1, #a do
    local k = a.g[i] + 1
    local r, dev = span.report[k], span.device[k]
    local mine = low:filter(low.g:eq(a.g[i])):sort("util", "start")
    ctx:add{id = "gpu.low_utilisation", total = a.total[i], window = span.hi[k] - span.lo[k], evidence = ev,
            lost = a.rest[i],
            text = string.format("%s pid %d: %d of %d chunks under %g%% GPU utilisation (lowest %.1f%%)",
              ctx:rank(r, dev), span.pid[k], a.n[i], n, util, a.worst[i]),
            where = {rank = ctx:rank(r, dev), report = r, pid = span.pid[k], device = dev, from = mine.start[1],
                     to = mine.stop[1]},
            next = string.format("nsl run timeline %s --arg from=%s --arg to=%s", ctx:path(r), ctx:at(mine.start[1]),
                                 ctx:at(mine.stop[1]))}
  end
end}

-- ---------------------------------------------------------------- communication

-- Devices (report, device) of the GPU operations: ops with a device, the
-- group ids, and each device's span.
local function devices(ctx)
  if not ctx.cache.dev then
    local ops = ctx:ops()
    ops = ops:filter(~ops.device:isnull())
    local g = ops:group_by("report", "device")
    ctx.cache.dev = {ops = ops, g = g, span = g:agg{"lo=min(start)", "hi=max(stop)"}}
  end
  return ctx.cache.dev
end

-- The time kernels of mask spent on each device with no other kernel
-- running: |P - C| per device (nsl.overlap's nccl_only with P as its N).
local function exposed(ctx, mask)
  local dv = devices(ctx)
  local m = overlap.measure(dv.ops, mask, dv.g:ids(), #dv.span,
                            {{gid = nsl.range(#dv.span), lo = dv.span.lo, hi = dv.span.hi}})[1]
  return m.nccl_only, m.nccl
end

-- Findings of the kernels of mask that run with no other kernel on their
-- device (exposed): spec = {id, table = evidence name, title, head = label
-- of the rank column, what = label of the kernels' column, text =
-- function(label, exposed, all) -> string, next = analysis to run next}.
local function exposed_findings(ctx, mask, spec)
  if mask:count() == 0 then return end
  local only, all = exposed(ctx, mask)
  local s = devices(ctx).span
  local t = nsl.table{{spec.head, s.report:map(function(r) return ctx:rank(r) end)}, {"device", s.device},
    {"span (ns)", s.hi - s.lo}, {spec.what .. " (ns)", all}, {"with no other kernel (ns)", only},
    {"hidden (%)", (all - only) * 100.0 / all}}
  local ev = ctx:table(spec.table, t:filter(all:gt(0)), spec.title)
  for i = 1, #s do
    local o = only[i]
    if o > 0 then
      local r, dev = s.report[i], s.device[i]
      -- the job loses the transfer only: waiting inside a collective for a later rank is the straggler's
      -- (the ledger's comm_wait), so the claim is at most the device's comm line
      local row = ctx:ledger().run[r .. ":" .. dev]
      local lost = row and math.min(o, row.comm) or o
      ctx:add{id = spec.id, total = o, window = s.hi[i] - s.lo[i], evidence = ev, lost = lost,
              text = spec.text(ctx:rank(r, dev), o, all[i]),
              where = {rank = ctx:rank(r, dev), report = r, device = dev, from = s.lo[i], to = s.hi[i]},
              next = string.format("nsl run %s %s", spec.next, ctx:path(r))}
    end
  end
end

--- true for the names of NCCL point-to-point kernels of one direction (Send,
-- Recv): a pipeline stage's hand-over.  SendRecv -- both directions at once,
-- as all-to-all and grouped exchanges run -- is a collective (nccl.exposed).
function M.is_p2p(name)
  local p = nccl.parse(name)
  local c = p and p.collective
  return c == "Send" or c == "Recv"
end

checks[#checks + 1] = {id = "nccl.exposed", run = function(ctx)
  local ops = devices(ctx).ops
  if #ops == 0 then return end
  exposed_findings(ctx, overlap.nccl_mask(ops) & ~ops.name:where(M.is_p2p), {id = "nccl.exposed",
    table = "nccl_exposed", title = "NCCL collective kernel time per device (send/receive apart), and the part " ..
    "no compute kernel overlaps", head = "report", what = "NCCL", next = "overlap",
    text = function(label, o, all)
      return string.format("%s: %s of %s NCCL collective time is not hidden under compute (%.1f%% hidden)", label,
        report.duration(o), report.duration(all), (all - o) * 100.0 / all)
    end})
end}

checks[#checks + 1] = {id = "pipeline.bubbles", run = function(ctx)
  local ops = devices(ctx).ops
  if #ops == 0 then return end
  exposed_findings(ctx, ops.name:where(M.is_p2p) & ~ops.memop, {id = "pipeline.bubbles",
    table = "pipeline_bubbles", title = "Send/receive kernel time per device (pipeline stage), and the part with " ..
    "no other kernel running: the stage waits on its neighbour", head = "stage", what = "send/recv", next = "nccl",
    text = function(label, o)
      return string.format("%s: %s waiting in pipeline send/receive with no compute running", label, report.duration(o))
    end})
end}

-- Runs a shipped analysis on the trace with a collecting out; returns the
-- out (its findings and items), or nil and the error of bad input.
local function run_analysis(ctx, name, given)
  local runner = require("nsl.runner")
  local a = assert(runner.load_analysis(name))
  local args = assert(runner.parse_args(a, given or {}))
  local sub = output.new{analysis = name, format = "collect", trace = ctx.trace}
  local run, sp = a.run, nil
  if ctx.parts and a.distributed then   -- its step ran on every process (M.step)
    for k, t in pairs(ctx.parts) do
      local tname = k:match("^" .. name .. "%.(.+)$")
      if tname then sp = sp or {}; sp[tname] = t end
    end
    if sp then
      run = function(tr, ar, o)
        if a.distributed.combine then return a.distributed.combine(tr, sp, ar, o) end
        return a.run(tr, ar, o, sp)
      end
    end
  end
  local ok, err = xpcall(run, runner.handler, ctx.trace, args, sub)
  if not ok then
    if nsl.is_error(err) then return nil, tostring(err) end
    error(err, 0)
  end
  return sub
end

local function item(sub, name)
  for _, it in ipairs(sub.items) do if it.kind == "table" and it.name == name then return it.t end end
  return nil
end

local function item_title(sub, name)
  for _, it in ipairs(sub.items) do if it.kind == "table" and it.name == name then return it.opts.title end end
  return nil
end

checks[#checks + 1] = {id = "straggler", run = function(ctx)
  local trace = ctx.trace
  if #trace.kernels == 0 and #trace.gpu_ranges == 0 then return end
  local sub, err = run_analysis(ctx, "straggler")
  if not sub then ctx.notes[#ctx.notes + 1] = "straggler: " .. err return end
  if #sub.findings == 0 then return end
  local ev = item(sub, "ranks") and ctx:table("straggler_ranks", item(sub, "ranks"),
    "Per rank: clock offset, arrival order, waits, compute per step (straggler analysis)")
  local st = ctx.steps
  for _, f in ipairs(sub.findings) do
    local rec = {}
    for k, v in pairs(f) do rec[k] = v end
    rec.id = rec.id or "straggler.compute"   -- today's verdict: compute per step above the median rank's
    if rec.evidence and item(sub, rec.evidence) then   -- the straggler analysis's own table, kept under diagnose's name
      rec.evidence = ctx:table("straggler_" .. rec.evidence, item(sub, rec.evidence),
                               "straggler analysis: " .. ((item_title(sub, rec.evidence)) or rec.evidence))
    end
    rec.evidence = rec.evidence or ev
    rec.where = rec.where or {rank = f.rank}
    if not rec.cost_ns and f.delay_ns then
      rec.cost_ns = f.delay_ns
      if st then rec.step_ns, rec.share = st.step_ns, f.delay_ns / st.step_ns end
    end
    rec.next = rec.next or ("nsl run straggler " .. ctx:all_paths())
    -- the job's cost: what the others would not have waited for it (nsl.ledger's collectives)
    local L = ctx:ledger()
    local mine = rec.where and rec.where.rank and L.lost[rec.where.rank]
    if mine then
      rec.lost_ns = mine.lost
      rec.share = L.job_wall > 0 and math.min(1.0, mine.lost / L.job_wall) or 0.0
      if st and st.n > 0 then rec.lost_per_step_ns = mine.lost // st.n end
    end
    ctx.findings[#ctx.findings + 1] = rec
  end
end}

-- ---------------------------------------------------------------- launches and host

checks[#checks + 1] = {id = "launch.bound", run = function(ctx)
  if #ctx.trace.kernels == 0 then return end
  -- the GPU is idle when nothing runs on it: copies count as busy (gaps of every GPU operation)
  local ops = ctx:ops()
  local kt = ops:filter(~ops.device:isnull())
  if #kt == 0 then return end
  local short, maxgap = ctx.ns.short, ctx.ns.launch_gap
  local g = kt:group_by("report", "device")
  local keys = g:keys()
  local span = g:agg{"lo=min(start)", "hi=max(stop)", "n=count"}
  local gid, gs, ge = nsl.gaps_grouped(kt.start, kt.stop, g:ids(), #span, 0)
  local d = nsl.table{{"report", keys.report:gather(gid)}, {"device", keys.device:gather(gid)}, {"g", gid},
                      {"start", ge}, {"gap", ge - gs}}
  -- the kernel after each gap: the shortest of those starting where it ends
  local kk = kt:filter(~kt.memop)
  local next_k = kk:group_by("report", "device", "start"):agg{"next_dur=min(dur)"}
  d = d:join(next_k, {"report", "device", "start"}, {"next_dur"})
  local lb = d:filter(d.gap:gt(0) & d.gap:le(maxgap) & d.next_dur:lt(short))
  if #lb == 0 then return end
  local a = lb:group_by("g"):agg{"n=count", "total=sum(gap)", "first=min(start)", "last=max(start)"}:sort("g")
  local rows = {}
  for i = 1, #a do
    local j = a.g[i] + 1
    local width = span.hi[j] - span.lo[j]
    rows[i] = {report = ctx:rank(span.report[j], span.device[j]), device = span.device[j], kernels = span.n[j],
               n = a.n[i], total = a.total[i], span = width, share = a.total[i] * 100.0 / width}
  end
  local ev = ctx:table("launch_bound", table_of(rows, {{"rank", "report"}, {"device", "device"}, {"GPU operations", "kernels"},
    {"gaps before short kernels", "n"}, {"idle (ns)", "total"}, {"span (ns)", "span"}, {"idle (% of span)", "share"}}),
    string.format("GPU idle gaps of at most %s before kernels shorter than %s, per device",
                  report.duration(maxgap), report.duration(short)))
  for i = 1, #a do
    local j = a.g[i] + 1
    local r, dev = span.report[j], span.device[j]
    ctx:add{id = "launch.bound", total = a.total[i], window = span.hi[j] - span.lo[j], evidence = ev,
            text = string.format("%s: launch-bound -- the GPU idles %d times (%s) before kernels shorter than %s " ..
              "(fuse kernels or capture them in a CUDA graph)", ctx:rank(r, dev), a.n[i],
              report.duration(a.total[i]), report.duration(short)),
            where = {rank = ctx:rank(r, dev), report = r, device = dev, from = a.first[i], to = a.last[i]},
            next = "nsl run launch " .. ctx:path(r)}
  end
end}

-- The steps of ctx as ranges for nsl.steps.assign: report, pid, start,
-- stop, iter (pid 0 for marker-kernel steps, which are per report).
local function step_ranges(ctx)
  local W = ctx.steps.windows
  W = W:with("report", W.report:cast("i64"))
  if ctx.steps.it.mode == "range" then return W:with("pid", W.pid:cast("i64")), false end
  return W:with("pid", nsl.rep(0, #W)), true
end

checks[#checks + 1] = {id = "host.sync_per_step", run = function(ctx)
  local st = ctx.steps
  if not st or #ctx.trace.api == 0 then return end
  local syncs = host_sync.calls(ctx.trace, ctx:api())
  if #syncs == 0 then return end
  local ranges, per_report = step_ranges(ctx)
  local pid = syncs.pid:cast("i64")
  local rep = syncs.report:cast("i64")
  local iter = steps.assign(nsl.table{{"report", rep}, {"pid", per_report and nsl.rep(0, #syncs) or pid},
                                      {"launch", syncs.start}}, ranges)
  local inside = syncs:with("report", rep, "pid", pid, "iter", iter)
  inside = inside:filter(~iter:isnull())
  if #inside == 0 then return end
  -- per process: blocked time and calls in each steady step (0 in a step without any)
  local per = inside:group_by("report", "pid", "iter"):agg{"n=count", "t=sum(dur)"}
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
  local top = inside:filter(inside.report:eq(worst.r) & inside.pid:eq(worst.pid))
                    :group_by("name"):agg{"t=sum(dur)"}:sort("-t")
  local ev = ctx:table("host_sync_per_step", table_of(rows, {{"report", "report"}, {"pid", "pid"}, {"step", "step"},
    {"step (ns)", "len"}, {"blocking calls", "n"}, {"blocked (ns)", "t"}}),
    "CUDA calls that block the host (explicit syncs, synchronous and pageable copies) per steady step and process")
  local cost = round(worst.t)   -- already per step: over a window of one step
  ctx:add{id = "host.sync_per_step", total = cost, window = st.step_ns, evidence = ev, per_step = true,
    lost = ctx:ledger_lost(worst.r, worst.pid, "idle_sync"),
    text = string.format("%s pid %d: the host blocks in %g CUDA calls per step (median; most time in %s): it " ..
      "cannot queue work ahead of the GPU", ctx:rank(worst.r), worst.pid, worst.n, top.name[1] or "?"),
    where = {rank = ctx:rank(worst.r), report = worst.r, pid = worst.pid, nvtx = st.nvtx},
    next = "nsl run launch " .. ctx:path(worst.r)}
end}

-- ---------------------------------------------------------------- one-time costs

checks[#checks + 1] = {id = "compile.time", run = function(ctx)
  local sub, err = run_analysis(ctx, "compile")
  if not sub then ctx.notes[#ctx.notes + 1] = "compile: " .. err return end
  local s = item(sub, "summary")
  if not s then return end
  local byname = {}
  for i, n in ipairs(ctx.names) do byname[n] = i - 1 end
  local rows = s:filter(s.What:eq("all compiling and loading") & ~s.pid:isnull())
  if #rows == 0 then return end
  local ev = ctx:table("compile_time", s, "Time spent compiling and loading code (compile analysis)")
  for i = 1, #rows do
    local r = byname[rows.report[i]]
    if r then
      local total = round(rows["Wall (ms)"][i] * 1e6)
      local lo, hi = ctx:report_span(r)
      if total > 0 and lo then
        ctx:add{id = "compile.time", total = total, window = hi - lo, once = true, evidence = ev,
                text = string.format("%s pid %d: %s compiling and loading code (JIT, module loading, graph " ..
                  "capture, framework compilers)", ctx:rank(r), rows.pid[i], report.duration(total)),
                where = {rank = ctx:rank(r), report = r, pid = rows.pid[i]},
                next = "nsl run compile " .. ctx:path(r) .. " --arg per_process=true"}
      end
    end
  end
end}

checks[#checks + 1] = {id = "warmup.share", run = function(ctx)
  local st = ctx.steps
  if not st then return end
  local W = st.windows
  local s, e = W.start:totable(), W.stop:totable()
  local rows = {}
  for _, key in ipairs(st.order) do
    local list, nw = st.groups[key], st.warm[key]
    if nw > 0 and #list > nw then
      local steady, warm = {}, 0
      for k, i in ipairs(list) do
        if k <= nw then warm = warm + (e[i] - s[i]) else steady[#steady + 1] = e[i] - s[i] end
      end
      local med = iterations.describe(steady).median
      local excess = round(warm - nw * med)
      local first = list[1]
      if excess > 0 then
        rows[#rows + 1] = {report = W.report[first], pid = W.pid[first], warm = nw, steps = #list, time = warm,
                           median = med, excess = excess, from = s[first], to = e[list[nw]]}
      end
    end
  end
  if #rows == 0 then return end
  local ev = ctx:table("warmup", table_of(rows, {{"report", "report"}, {"pid", "pid"}, {"warm-up steps", "warm"},
    {"steps", "steps"}, {"warm-up time (ns)", "time"}, {"steady median (ns)", "median"},
    {"excess (ns)", "excess"}}), "Warm-up iterations: their time above the steady median")
  for _, r in ipairs(rows) do
    local lo, hi = ctx:report_span(r.report)
    ctx:add{id = "warmup.share", total = r.excess, window = hi - lo, once = true, evidence = ev,
            text = string.format("%s%s: %d warm-up step(s) take %s longer than steady ones (steady median %s)",
              ctx:rank(r.report), r.pid and (" pid " .. r.pid) or "", r.warm, report.duration(r.excess),
              report.duration(r.median)),
            where = {rank = ctx:rank(r.report), report = r.report, pid = r.pid, from = r.from, to = r.to,
                     nvtx = st.nvtx},
            next = "nsl run iterations " .. ctx:path(r.report)}
  end
end}

checks[#checks + 1] = {id = "memory.near_capacity", run = function(ctx)
  local trace = ctx.trace
  if #trace.memory == 0 or #trace.devices == 0 then return end
  local sub, err = run_analysis(ctx, "heap")
  if not sub then ctx.notes[#ctx.notes + 1] = "heap: " .. err return end
  local h = item(sub, "devices")
  if not h then return end
  local dv = trace.devices
  dv:load{"report", "device", "memory"}
  local cap = {}
  for i = 1, #dv do
    if dv.memory[i] and dv.device[i] then cap[dv.report[i] .. ":" .. dv.device[i]] = dv.memory[i] end
  end
  local byname = {}
  for i, n in ipairs(ctx.names) do byname[n] = i - 1 end
  local ev
  for i = 1, #h do
    local r = byname[h.report[i]]
    local c = r and cap[r .. ":" .. h.device[i]]
    local peak = h["peak (B)"][i]
    if c and c > 0 then
      local ratio = peak / c
      local sev = ratio >= ctx.args.memory_error and "error" or ratio >= ctx.args.memory_warn and "warning" or nil
      if sev then
        ev = ev or ctx:table("memory_peak", h, "Device memory: peak and leaks per device (heap analysis)")
        local f = ctx:add{id = "memory.near_capacity", severity = sev, evidence = ev,
          text = string.format("%s: device memory peaks at %s, %.1f%% of the device's %s (fragmentation or a " ..
            "larger batch will run out of memory)", ctx:rank(r, h.device[i]), report.bytes(peak), 100 * ratio,
            report.bytes(c)),
          where = {rank = ctx:rank(r, h.device[i]), report = r, device = h.device[i], from = h["peak at (ns)"][i],
                   to = h["peak at (ns)"][i]},
          next = "nsl run heap " .. ctx:path(r) .. " --out heap/"}
        f.value = ratio
      end
    end
  end
end}

checks[#checks + 1] = {id = "streams.serialised", run = function(ctx)
  local dv = devices(ctx)
  local ops = dv.ops
  if #ops == 0 then return end
  local kern = ops:filter(~ops.memop)
  local ks = kern:group_by("report", "device", "stream"):agg{"kernels=count"}
  local copies = ops:filter(ops.memop & ops.name:where(function(s) return s:find("^%[CUDA memcpy") ~= nil end))
  if #copies == 0 or #ks == 0 then return end
  local on_k = copies:join(ks, {"report", "device", "stream"}, {"kernels"})
  local serial = ~on_k.kernels:isnull()
  if serial:count() == 0 then return end
  -- kernels and the copies on kernel streams, grouped by device as in devices()
  local sub = nsl.table{{"report", nsl.concat(kern.report, copies.report)},
    {"device", nsl.concat(kern.device, copies.device)}, {"stream", nsl.concat(kern.stream, copies.stream)},
    {"start", nsl.concat(kern.start, copies.start)}, {"stop", nsl.concat(kern.stop, copies.stop)},
    {"memop", nsl.concat(kern.memop, copies.memop)},
    {"keep", nsl.concat(nsl.rep(1, #kern), serial:cast("i64"))}}
  sub = sub:filter(sub.keep:eq(1))
  local g = sub:group_by("report", "device")
  local keys = g:keys()
  local sp = keys:join(dv.span, {"report", "device"}, {"lo", "hi"})
  local m = overlap.measure(sub, none(#sub), g:ids(), #g, {{gid = nsl.range(#g), lo = sp.lo, hi = sp.hi}})[1]
  local exposed_copies = m.memory_only
  local cs = on_k:filter(serial):group_by("report", "device"):agg{"n=count", "t=sum(dur)"}
  -- the stream with the most copy time on each device
  local per_stream = on_k:filter(serial):group_by("report", "device", "stream"):agg{"t=sum(dur)"}:sort("-t", "stream")
  local top = {}
  for i = 1, #per_stream do
    local k = per_stream.report[i] .. ":" .. per_stream.device[i]
    if not top[k] then top[k] = per_stream.stream[i] end
  end
  local t = keys:with("span", sp.hi - sp.lo, "copy_exposed", exposed_copies):join(cs, {"report", "device"}, {"n", "t"})
  local ev = ctx:table("streams_serialised", nsl.table{
    {"report", t.report:map(function(r) return ctx:rank(r) end)}, {"device", t.device},
    {"copies on kernel streams", nsl.coalesce(t.n, 0)}, {"copy time (ns)", nsl.coalesce(t.t, 0)},
    {"with no kernel running (ns)", t.copy_exposed}, {"span (ns)", t.span}},
    "Memory copies issued on streams that also run kernels, and their time with no kernel running on the device")
  for i = 1, #t do
    local o = t.copy_exposed[i]
    if o > 0 then
      local r, dev = t.report[i], t.device[i]
      -- a copy can hide only under compute that exists: the job loses at most the device's compute time
      local row = ctx:ledger().run[r .. ":" .. dev]
      ctx:add{id = "streams.serialised", total = o, window = t.span[i], evidence = ev,
              lost = row and math.min(o, row.compute) or o,
              text = string.format("%s: %s of memory copies on compute streams run with no kernel beside them " ..
                "(issue copies on their own stream to overlap them with compute)", ctx:rank(r, dev),
                report.duration(o)),
              where = {rank = ctx:rank(r, dev), report = r, device = dev, stream = top[r .. ":" .. dev],
                       from = sp.lo[i], to = sp.hi[i]},
              next = "nsl run overlap " .. ctx:path(r)}
    end
  end
end}

--- Dense FP16/BF16 tensor-core FLOPs per SM per clock by compute capability
-- (datasheet peak / (SMs x boost clock): V100 125 TF, A100 312 TF, H100 SXM
-- 989 TF, B200 2.25 PF; GA10x/AD10x with FP16 accumulation).
M.flops_per_sm_clock = {["7.0"] = 1024, ["7.2"] = 1024, ["7.5"] = 1024, ["8.0"] = 2048, ["8.6"] = 1024,
                        ["8.7"] = 1024, ["8.9"] = 1024, ["9.0"] = 4096, ["10.0"] = 8192}

--- Peak FLOP/s of a device from its properties, or nil.
function M.peak_flops(sm_count, clock_hz, cc)
  local per = cc and M.flops_per_sm_clock[cc]
  if not (per and sm_count and clock_hz and sm_count > 0 and clock_hz > 0) then return nil end
  return sm_count * clock_hz * per
end

checks[#checks + 1] = {id = "mfu", run = function(ctx)
  local flops = ctx.args.flops_per_step
  if not flops or flops <= 0 then return end
  local st = ctx.steps
  if not st then
    ctx.notes[#ctx.notes + 1] = "mfu: --arg flops_per_step needs steps (none found; name them with " ..
      "--arg iteration=NAME)"
    return
  end
  local dv = ctx.trace.devices
  local peak, what
  if ctx.args.peak_tflops > 0 then
    peak, what = ctx.args.peak_tflops * 1e12, string.format("--arg peak_tflops=%g", ctx.args.peak_tflops)
  elseif #dv > 0 then
    dv:load{"report", "device", "name", "sm_count", "clock", "compute_capability"}
    for i = 1, #dv do
      local p = M.peak_flops(dv.sm_count[i], dv.clock[i], dv.compute_capability[i])
      if p then
        peak = p
        what = string.format("%s: %d SMs x %.2f GHz x %d FLOP/clock (compute capability %s)", dv.name[i] or "GPU",
          dv.sm_count[i], dv.clock[i] / 1e9, M.flops_per_sm_clock[dv.compute_capability[i]], dv.compute_capability[i])
        break
      end
    end
  end
  if not peak then
    ctx.notes[#ctx.notes + 1] = "mfu: the trace records no device properties (SM count, clock, compute capability) " ..
      "nsl knows a peak for; give --arg peak_tflops=N"
    return
  end
  local achieved = flops / (st.step_ns / 1e9)
  local mfu = achieved / peak
  local ideal = round(flops / peak * 1e9)
  local sev = mfu < ctx.args.mfu_warn and "warning" or "info"
  local f = ctx:add{id = "mfu", severity = sev,
    text = string.format("model FLOPs utilisation %.1f%%: %.1f TFLOP/s achieved per GPU (%.4g FLOPs per %s step) " ..
      "against a peak of %.1f TFLOP/s (%s); at peak the step would take %s", 100 * mfu, achieved / 1e12, flops,
      report.duration(st.step_ns), peak / 1e12, what, report.duration(ideal)),
    next = "nsl run iterations " .. ctx:all_paths()}
  f.value, f.step_ns = mfu, st.step_ns
end}

M.checks = checks

--- One finding per cause: the findings of one check (id) on several ranks
-- or devices become one, whose where is the worst one's, with ranks (their
-- labels, worst first), parts (their findings) and least_ns, median_ns,
-- most_ns of their lost_ns.
-- What the job loses: on every GPU (or every process, for a per-process
-- check) the least of them -- each rank must shed it before the job's step
-- shrinks; on some only, the most (the affected ranks hold the others back
-- by at most that).  On a rank the others do not wait for (Ctx:critical:
-- with matched collectives, not last at a tenth of them) a cause is hidden:
-- it loses 0 (hidden_ns keeps its own measure), said in its message.  The
-- straggler's findings are already the job's.
function M.merge(ctx, list)
  local by, order = {}, {}
  for _, f in ipairs(list) do
    local key = (f.lost_ns and f.where and f.where.rank and not f.id:find("^straggler")) and f.id or nil
    if key then
      if not by[key] then by[key] = {}; order[#order + 1] = key end
      table.insert(by[key], f)
    end
  end
  local merged = {}
  local L = ctx:ledger()
  local function job_share(lost) return L.job_wall > 0 and math.min(1.0, lost / L.job_wall) or 0.0 end
  for _, key in ipairs(order) do
    local fs = by[key]
    -- a rank the others do not wait for hides its cause: the job gains nothing from removing it there
    for _, f in ipairs(fs) do
      if not ctx:critical(f) and f.lost_ns > 0 then
        f.hidden_ns, f.lost_ns, f.share = f.lost_ns, 0, 0.0
        if f.lost_per_step_ns then f.lost_per_step_ns = 0 end
        f.severity = "info"
        f.message = f.message .. " [hidden: the other ranks are slower; the job gains nothing here]"
      end
    end
    if #fs > 1 then
      table.sort(fs, function(a, b) return a.lost_ns > b.lost_ns end)
      local ngpu, nproc = 0, 0
      for _ in pairs(L.run) do ngpu = ngpu + 1 end
      for _ in pairs(L.devices) do nproc = nproc + 1 end
      local per_device = fs[1].where.device ~= nil
      local v, ranks, sev = {}, {}, "info"
      for i, f in ipairs(fs) do
        v[i] = f.lost_ns
        ranks[i] = f.where.rank .. (f.where.pid and not f.where.rank:find(":gpu") and (":pid" .. f.where.pid) or "")
        if output.severity_rank(f.severity) > output.severity_rank(sev) then sev = f.severity end
      end
      local most, least = v[1], v[#v]
      local median = iterations.describe(v).median
      local crit = {}   -- the parts on ranks the job waits for
      for _, f in ipairs(fs) do if not f.hidden_ns then crit[#crit + 1] = f.lost_ns end end
      local everywhere = #fs >= (per_device and ngpu or nproc)
      local rec = {}
      for k, x in pairs(fs[1]) do rec[k] = x end
      rec.hidden_ns = nil
      rec.lost_ns = #crit == 0 and 0 or everywhere and crit[#crit] or crit[1]   -- over the critical parts
      rec.least_ns, rec.median_ns, rec.most_ns = least, round(median), most
      rec.ranks = ranks
      rec.parts = fs   -- the per-rank findings, each with its own lost_ns (JSON keeps them)
      rec.share = job_share(rec.lost_ns)
      local st = ctx.steps
      if st and st.n > 0 and not rec.once then rec.lost_per_step_ns = rec.lost_ns // st.n end
      local args = ctx.args
      rec.severity = (args.error_share > 0 and rec.share >= args.error_share) and "error"
                     or (args.warn_share > 0 and rec.share >= args.warn_share) and "warning" or "info"
      if fs[1].severity ~= "info" and fs[1].severity ~= "warning" and fs[1].severity ~= "error" then rec.severity = sev end
      rec.message = string.format("%s [on %d %s: least %s, median %s, most %s; %s]", fs[1].message, #fs,
        per_device and "GPUs" or "processes", report.duration(least), report.duration(round(median)),
        report.duration(most), everywhere and "on every one, so the job gains the least" or
        "not on every one: the job gains at most the most")
      by[key] = rec
    else
      by[key] = fs[1]
    end
  end
  for _, f in ipairs(list) do
    local key = (f.lost_ns and f.where and f.where.rank and not f.id:find("^straggler")) and f.id or nil
    if not key then merged[#merged + 1] = f
    elseif by[key] then merged[#merged + 1] = by[key]; by[key] = nil end
  end
  return merged
end

-- The first clause of a finding's message (up to its first ';' or '('), at most n characters.
local function gist(msg, n)
  local s = msg:match("^([^;(]+)") or msg
  s = s:gsub("%s+$", "")
  if #s > n then s = s:sub(1, n - 3) .. "..." end
  return s
end

--- The one-line verdict over ranked findings: the top cause and what the
-- job loses to it.
function M.verdict(findings, job_wall)
  local f = findings[1]
  if not f then return "Verdict: no problems found." end
  local cost = ""
  if f.lost_ns then
    cost = string.format(": the job loses %s%s (%.1f%% of its %s wall time)", report.duration(f.lost_ns),
      f.once and " once" or "", 100 * (f.share or 0), report.duration(job_wall))
  end
  return string.format("Verdict: [%s %s] %s%s.", f.severity, f.id or "?", gist(f.message, 120), cost)
end

--- The top n findings, one line each (rank, severity, id, gist, loss).
function M.top(findings, n)
  local lines = {string.format("Top %d of %d finding(s), by what the job loses:", math.min(n, #findings), #findings)}
  for i = 1, math.min(n, #findings) do
    local f = findings[i]
    lines[#lines + 1] = string.format("  %d. %s %s: %s%s", i, f.severity, f.id or "?", gist(f.message, 90),
      f.lost_ns and string.format(" -- %s%s (%.1f%%)", report.duration(f.lost_ns), f.once and " once" or "",
                                  100 * (f.share or 0)) or "")
  end
  return table.concat(lines, "\n")
end

--- Runs every check on ctx; a check whose input is unusable (an nsl error)
-- is skipped with a note.  Returns ctx.findings ranked: recurring costs by
-- lost_ns (largest first), then one-time costs by lost_ns, then findings
-- without a cost; ties by cost_ns, severity, id.  between,
-- when given, is called after each check (nsl tui yields there to read keys).
function M.run(ctx, between)
  for i, c in ipairs(checks) do
    -- the progress line (on a terminal, for work over a second) names the check
    local progress <close> = nsl.progress(string.format("diagnose: check %d of %d (%s)", i, #checks, c.id))
    local ok, err = xpcall(c.run, require("nsl.runner").handler, ctx)
    if not ok then
      if nsl.is_error(err) then ctx.notes[#ctx.notes + 1] = c.id .. ": " .. tostring(err)
      else error(err, 0) end
    end
    if between then between(c.id) end
  end
  ctx.findings = M.merge(ctx, ctx.findings)
  local f = ctx.findings
  for i, x in ipairs(f) do x._pos = i end
  table.sort(f, function(a, b)
    -- recurring costs first, then one-time costs (ranked apart), then findings without a cost
    local ga = a.lost_ns and (a.once and 1 or 0) or 2
    local gb = b.lost_ns and (b.once and 1 or 0) or 2
    if ga ~= gb then return ga < gb end
    local la, lb = a.lost_ns or -1, b.lost_ns or -1
    if la ~= lb then return la > lb end
    local ca, cb = a.cost_ns or -1, b.cost_ns or -1
    if ca ~= cb then return ca > cb end
    local sa, sb = output.severity_rank(a.severity), output.severity_rank(b.severity)
    if sa ~= sb then return sa > sb end
    if a.id ~= b.id then return a.id < b.id end
    return a._pos < b._pos
  end)
  for _, x in ipairs(f) do x._pos = nil end
  return f
end

return M
