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
-- The checks.  Each is a file of lua/nsl/checks/ (module nsl.checks.NAME,
-- the id with '_' for '.'), returning its contract: id, description, reads
-- (the trace tables and columns it measures), tables (the names of the
-- trace tables it reads, itself or through the analyses and helpers it
-- calls: after the last check that names one, M.run may unload it), claims
-- (the ledger lines,
-- nsl.ledger.lines, its lost_ns is charged to: at most their time on the
-- GPU; none: its own measure), capped_by (optional: a line that only
-- bounds it, as compute bounds the copies it could hide), thresholds (name -> {default, help, duration =
-- true for a time given as text}: the --arg options of the diagnose
-- analysis, checked and converted once here) and run(ctx), which adds
-- findings through ctx:add.  M.order lists them in the order they run: a
-- new check is a new file and one name added there.  The helpers checks
-- share (blocking calls per process, GPU operations per device, exposed
-- kernel time, running an analysis) are the M.* functions below.  A check
-- reads the GPU operations through ctx:gpu() (their per-GPU tables,
-- nsl.gpu_tables) and the CUDA calls that block through ctx:calls() and
-- ctx:call_steps() (nsl.call_tables), which in a distributed run hold what
-- the processes made of their reports (M.step, M.collective), not the
-- trace's tables.
--
-- Besides the shared fields a finding keeps total_ns: the time lost over
-- its window, from which cost_ns and share derive.
local nsl = require("nsl")
local report = require("nsl.report")
local units = require("nsl.util.units")
local gpu_ops = require("nsl.gpu_ops")
local distributed = require("nsl.distributed")
local iterations = require("nsl.iterations")
local host_sync = require("nsl.host_sync")
local findings = require("nsl.findings")
local ledger = require("nsl.ledger")
local hostmod = require("nsl.host")
local straggler = require("nsl.straggler")
local window_mod = require("nsl.window")
local compile = require("nsl.compile")
local gpu_tables = require("nsl.gpu_tables")
local call_tables = require("nsl.call_tables")

local M = {}

-- What M.step made of a process's view, for M.collective (the same view, later): its GPU operations and
-- their per-GPU tables
local stepped = setmetatable({}, {__mode = "k"})

local floor = math.floor
local function round(x) return floor(x + 0.5) end
M.round = round

-- ---------------------------------------------------------------- context

local Ctx = {}
Ctx.__index = Ctx
M.Ctx = Ctx   -- (the context's methods: a test replaces one to run the checks without it)

--- The steps of a trace for diagnose: nil (no steps), or {step_ns (median
-- steady step, integer ns), n (most iterations of one process), how,
-- it (iterations.find), windows (iterations.windows sorted by report, pid,
-- iter), warm_flag (1 for a warm-up window, by row of windows), warm =
-- {group key -> warm-up count}, nvtx (the step range's name, or nil)}.  spec "" detects; a named range
-- that is missing fails.  Second result: nsl.iterations.steps's own result
-- (false when it found none).  parts: a distributed run's gathered tables
-- (M.collective's detection by the processes), or nil.
local function find_steps(trace, spec, warmup, parts)
  -- the one step detection of the trace (nsl.iterations.steps: on JAX nsys-jax's warm-up rule)
  local st, err = iterations.steps(trace, {spec = spec, warmup = warmup, parts = parts})
  local raw = st or false
  if not st then
    if spec ~= "" then nsl.fail(string.format("%s: %s", report.files(trace.reports.path:totable()), err)) end
    return nil, raw
  end
  if not st.step_ns or st.step_ns <= 0 then return nil, raw end
  local warm_flag = {}
  for i, w in ipairs(st.windows.warm:totable()) do warm_flag[i] = w and 1 or 0 end
  local it = st.it
  return {step_ns = st.step_ns, n = st.n, how = it.how, it = it, windows = st.windows, warm = st.warm,
          warm_flag = warm_flag, groups = st.groups, order = st.order,
          nvtx = it.mode == "range" and (spec ~= "" and spec or it.name) or nil}, raw
end

-- The columns of nsl.gpu_ops the checks read (Ctx:ops and the distributed step): not the correlation id,
-- which the launching calls are found by apart (nsl.gpu_ops.api_rows; in a distributed run, where the GPUs
-- waited for launches is found by the processes, M.step), nor the duration, which the few rows that need it
-- take from start and stop (at 1 GB each column of the 2.25 M operations is three loads and a concatenation)
local OPS = {names = "short", memop = true, columns = {"report", "pid", "device", "stream", "start", "stop"}}

--- The CUDA calls of trace that rank 0 reads where it builds the ledger of a
-- distributed run (M.collective's mode 1), so that a process sends these,
-- not all (in most traces most calls launch kernels):
-- as recorded (host_sync.columns, in the table's order), every call of a
-- correlation id (report, pid, corr) one of whose records launched a memory
-- copy or memset, blocks (host_sync.category), names a synchronisation
-- (api.sync's test), loads or compiles code (compile.api_class), or comes
-- after a blocking call on its thread (the ledger's idle_sync).  Also
-- returns each report's first start and last stop of its calls (report,
-- start, stop), and every call one per correlation id
-- (host_sync.unique_calls, with `row` in the calls as recorded).
function M.step_calls(trace)
  local api = trace.api
  api:load(host_sync.columns)
  local raw = api:select(host_sync.columns)
  local keys = {"report", "pid", "corr"}
  local want = raw.name:where(function(s)
    return host_sync.category(s) ~= nil or s:lower():find("synchronize", 1, true) ~= nil or
           compile.api_class(s) ~= nil
  end)
  for _, name in ipairs{"memcpy", "memset"} do
    local t = trace[name]
    if #t > 0 then
      t:load(keys)
      want = want | select(2, raw:join(t:select(keys), keys, {})):ge(0)
    end
  end
  -- the call after each blocking call on its thread, in the order the ledger reads the calls in
  local calls = host_sync.unique_calls(raw:with("row", nsl.range(#raw)))
  local ord = calls:order("report", "pid", "tid", "start")
  local after = (~calls.name:map(host_sync.category):isnull()):gather(ord):indices() + 1
  after = after:gather(after:lt(#ord):indices())
  local rows = nsl.table{{"row", nsl.range(#raw)}}
  want = want | select(2, rows:join(nsl.table{{"row", calls.row:gather(ord:gather(after))}}, {"row"}, {})):ge(0)
  -- with the other records of their ids (host_sync.unique_calls keeps one of each id)
  want = want | select(2, raw:join(raw:filter(want):select(keys), keys, {})):ge(0)
  local spans = window_mod.report_extent_table(trace, "api")   -- (measured once per trace, and kept)
  return raw:filter(want), nsl.table{{"report", spans.report}, {"start", spans.lo}, {"stop", spans.hi}}, calls
end

-- The columns of the memory operations diagnose's checks read (Ctx:memory).
local MEMORY = {memcpy = {"report", "pid", "device", "stream", "corr", "start", "stop", "bytes", "kind", "src_kind",
                          "dst_kind"},
                memset = {"report", "pid", "device", "stream", "corr", "start", "stop", "bytes", "kind"}}

-- The memcpy or memset table (name) of trace with the columns the checks read.
local function memory_of(trace, name)
  local t = trace[name]
  t:load(MEMORY[name])
  return t:select(MEMORY[name])
end

-- Step windows W (nsl.iterations.windows' columns, sorted by report, pid,
-- iter) of steps found in mode (nsl.iterations.find's) as ranges for
-- nsl.steps.assign: report, pid, start, stop, iter (pid 0 for marker-kernel
-- steps, which are per report).  Second result: whether they are per report.
local function ranges_of(W, mode)
  W = W:with("report", W.report:cast("i64"))
  if mode == "range" then return W:with("pid", W.pid:cast("i64")), false end
  return W:with("pid", nsl.rep(0, #W)), true
end

-- The columns of the code-loading calls a distributed run's processes send
-- (nsl.compile.loading_calls_from takes them with `dur` made again).
local LOADING = {"report", "pid", "tid", "start", "stop", "name"}

--- The memcpy rows of trace that rank 0 reads where it builds the ledger
-- of a distributed run (M.collective's mode 1), with the columns of
-- Ctx:memory: from or to pageable memory (host.sync_per_step's blocking
-- calls) or host to device (the ledger's idle_htod).
function M.step_memcpy(trace)
  local t = memory_of(trace, "memcpy")
  return t:filter(t.src_kind:eq("pageable") | t.dst_kind:eq("pageable") | t.kind:eq("HtoD"))
end

--- The checks' duration thresholds in ns, by name, from args (a bad one,
-- or a bad --arg chunks, fails the run: a usage error).
local function thresholds_ns(args)
  local ns = {}
  for _, c in ipairs(M.checks()) do
    local names = {}
    for name, th in pairs(c.thresholds) do if th.duration then names[#names + 1] = name end end
    table.sort(names)
    for _, name in ipairs(names) do ns[name] = units.duration_arg(args, name) end
  end
  if args.chunks < 1 or math.type(args.chunks) ~= "integer" then
    nsl.fail("--arg chunks must be a whole number, 1 or more", "usage")
  end
  return ns
end

--- The distributed step (nsl.distributed) of diagnose over a process's
-- reports: the per-GPU tables its checks read of the GPU operations
-- (nsl.gpu_tables: gt_*, one row per GPU, long gap or low chunk), the
-- tables its checks of blocking calls read (nsl.call_tables: ct_*, one row
-- per process and the longest calls of each check) and the calls that load
-- or compile code (ct_loading: as recorded, without `dur`).  The GPU
-- operations, the CUDA calls and the memory operations the checks read stay
-- here for M.collective (the ledger of the process's GPUs, the blocking
-- calls per step).  The steps of the analyses diagnose runs that have a
-- distributed form (M.uses) run beside it, their tables under "NAME.TABLE".
function M.step(trace, args)
  local okns, ns = pcall(thresholds_ns, args)
  if not okns then   -- a bad argument (the same on every process): rank 0 fails with it as one process does
    stepped[trace] = false
    return {}
  end
  local ops = distributed.ops_step(trace, {names = OPS.names, memop = OPS.memop, columns = OPS.columns, api = true})
  local G = gpu_tables.make(ops, ops.part, ns, args, #trace.kernels)
  local api = host_sync.api_calls(trace)
  local mem = {memcpy = memory_of(trace, "memcpy"), memset = memory_of(trace, "memset")}
  stepped[trace] = {ops = ops, G = G, api = api, memcpy = mem.memcpy}
  local t = call_tables.wire(call_tables.make(api, mem))
  local raw = trace.api
  raw:load(LOADING)
  raw = raw:select(LOADING)
  t.ct_loading = raw:filter(raw.name:where(function(s) return compile.api_class(s) ~= nil end))
  for k, v in pairs(gpu_tables.wire(G)) do t[k] = v end
  return t
end
M.uses = {"straggler"}

--- The ledger part of M.collective on a process (its reports: view, first
-- the whole trace's number of its report 0): with the steps its processes
-- detected together (st: nsl.iterations.reduce_steps' tables, or nil),
-- each process builds the ledger of its own GPUs, the waits inside
-- collectives from rank 0's matching (nsl.ledger.reduce_waits, with the
-- straggler analysis's default arguments, as Ctx:straggler_match), and finds what
-- host.idle would name there (its candidates): tables diag_form (mode 0),
-- diag_ledger (the ledger's rows without the rank label), host_idle.  Where
-- rank 0 builds the ledger over the whole trace instead (nsys-jax thunks, a
-- step range named in no report: nsl.ledger.reduced_steps), diag_form's mode 1 and
-- what that ledger reads of the process's reports: its GPU operations (ops,
-- with `part` 0/1/2 for kernels, memcpy, memset, so rank 0 can restore the
-- one-process row order; without the launching calls' rows), where its
-- GPUs waited for the host to launch them (launch_waits, found here from
-- the launching calls), the CUDA calls it reads (M.step_calls: api,
-- api_spans) and its memcpy (M.step_memcpy); rank 0 then finds
-- host.sync_per_step's sums from those, and in mode 0 the processes send
-- theirs (nsl.call_tables.step_sums: ct_steps, ct_step_names).
local function ledger_part(view, args, first, st)
  local own = stepped[view]
  if not own then return {} end   -- (a bad argument: M.context fails with it)
  local it = ledger.reduced_steps(view, args, st)
  if it == false then
    local ops = own.ops
    local work = ledger.ops_work(view, ops)
    local waits = ledger.launch_waits(work:with("group", select(2, ledger.gpus(work))))
    local cols = {}
    for _, c in ipairs(ops:columns()) do if c ~= "api" then cols[#cols + 1] = c end end
    local api, api_spans, calls = M.step_calls(view)
    return {diag_form = nsl.table{{"mode", nsl.rep(1, 1)}}, ops = ops:select(cols),
            launch_waits = waits:select{"report", "device", "pid", "tid", "start", "launch_stop", "hs", "he"},
            api = distributed.without_dur(api), api_spans = api_spans, memcpy = M.step_memcpy(view)}
  end
  local r = ledger.reduce_waits(view, first, ledger.MATCH, own.ops)   -- (the step's operations serve the ledger)
  if not r then return {} end   -- (a process failed: the run fails with its message)
  local l = ledger.build(view, {steps = it, waits = r.waits, ops = r.ops})
  -- host.sync_per_step's sums per step, over the steps rank 0 finds too (its windows, as find_steps sorts them)
  local S
  if it then
    S = call_tables.step_sums(view, own.api, own.memcpy, ranges_of(iterations.windows(it):sort("report", "pid", "iter"),
                                                                   it.mode))
  else
    S = call_tables.step_sums(view, own.api, own.memcpy)
  end
  return {diag_form = nsl.table{{"mode", nsl.rep(0, 1)}}, diag_ledger = ledger.unlabelled(l.ledger),
          host_idle = require("nsl.checks.host_idle").candidates(view, l, own.G, args.host_idle),
          ct_steps = S.per, ct_step_names = S.names}
end

--- What rank 0 reads of the tables the processes made, gathered into
-- parts, where it builds the ledger (M.collective's mode 1): the CUDA calls
-- with `dur` made again (host_sync.columns), and the GPU operations as
-- Ctx:ops gives them.  Returns api, ops (nil, nil in mode 0).
function M.received(parts)
  return parts.api and distributed.with_dur(parts.api, host_sync.columns),
         parts.ops and distributed.ops_combine(parts.ops, OPS)
end

--- The active span of every report of trace: {report (0-based) -> {lo,
-- hi}}, first start to last stop of its kernels, memcpy, memset and CUDA
-- API calls (and, for nsys-jax archives, of the NVTX ranges projected onto
-- the GPU).
local function report_spans(trace)
  local spans = {}
  for _, name in ipairs{"kernels", "memcpy", "memset", "api", "gpu_ranges"} do
    for k, x in pairs(window_mod.report_extents(trace, name)) do
      local lo, hi = x[1], x[3]
      if lo and hi then   -- (a damaged export's rows without times have no span)
        local sp = spans[k] or {lo, hi}
        sp[1], sp[2] = math.min(sp[1], lo), math.max(sp[2], hi)
        spans[k] = sp
      end
    end
  end
  return spans
end

--- The collective part of the distributed form: the processes detect the
-- steps of their reports together, or find the step range --arg iteration
-- names (nsl.iterations.reduce_steps, with the windows the ledger splits);
-- each builds the ledger of its GPUs (ledger_part), says whether its
-- reports' NVTX ranges may hold compile ranges (nsl.compile.names_present;
-- table compile_names) and measures their span
-- (nsl.window.span; table span, no row without events), each report's
-- first start (nsl.window.report_starts; table report_starts) and active
-- span (Ctx:report_span's; table report_spans), so that rank 0 reads the
-- NVTX ranges and kernels of every report for none of these.
function M.collective(view, args, first)
  local t = iterations.reduce_steps(view, {windows = true, spec = args.iteration})
  if args.iteration ~= "" then
    -- the straggler analysis measures its costs against the default detection's steps (its own collective
    -- part, which it does not run under diagnose): the processes find those too, under its name
    for k, v in pairs(iterations.reduce_steps(view)) do t["straggler." .. k] = v end
  end
  for k, v in pairs(ledger_part(view, args, first, t)) do t[k] = v end
  local xla, framework = compile.names_present(view)
  t.compile_names = nsl.table{{"xla", nsl.rep(xla and 1 or 0, 1)}, {"framework", nsl.rep(framework and 1 or 0, 1)}}
  t.span = distributed.span_table(view)
  local function col(v) return #v > 0 and nsl.column(v) or nsl.rep(0, 0) end
  local rr, rs = {}, {}
  for r, a in pairs(window_mod.report_starts(view)) do rr[#rr + 1], rs[#rs + 1] = r, a end
  t.report_starts = nsl.table{{"report", col(rr)}, {"start", col(rs)}}
  local sr, slo, shi = {}, {}, {}
  for r, sp in pairs(report_spans(view)) do sr[#sr + 1], slo[#slo + 1], shi[#shi + 1] = r, sp[1], sp[2] end
  t.report_spans = nsl.table{{"report", col(sr)}, {"lo", col(slo)}, {"hi", col(shi)}}
  return t
end

--- A context for the checks: the trace, its arguments, its steps; parts:
-- a distributed run's gathered columns (M.step), or nil; out: the run's
-- output, through which checks run other analyses (out:run).
function M.context(trace, args, parts, out)
  local ns = thresholds_ns(args)   -- (arguments first: a bad one fails the run, not just its check)
  local ctx = setmetatable({trace = trace, args = args, ns = ns, findings = {}, evidence = {}, notes = {}, cache = {},
                            out = out}, Ctx)
  if parts then   -- a distributed run: what the processes computed of their reports
    parts.api, ctx.cache.ops = M.received(parts)
    ctx.parts = parts
    local lc = parts.ct_loading
    if lc then compile.loading_calls_from(trace, lc:with("dur", lc.stop - lc.start)) end
    local cn = parts.compile_names
    if cn and #cn > 0 then compile.names_absent(trace, cn.xla:max() > 0, cn.framework:max() > 0) end
    -- the whole trace's span: the least and greatest of the processes' (window.span over the union)
    distributed.set_span(trace, parts.span)
    local rs = parts.report_starts   -- (Ctx:at's window.report_starts, from each report's process)
    if rs then
      ctx.cache.report_lo = {}
      for i = 1, #rs do ctx.cache.report_lo[rs.report[i]] = rs.start[i] end
    end
    local rsp = parts.report_spans   -- (Ctx:report_span's, likewise)
    if rsp then
      ctx.cache.spans = {}
      for i = 1, #rsp do ctx.cache.spans[rsp.report[i]] = {rsp.lo[i], rsp.hi[i]} end
    end
  end
  ctx.names = trace.reports.name:totable()
  ctx.paths = trace.reports.path:totable()
  -- the CPU-side columns the ledger, the straggler analysis and host.idle attribute idle time with, first
  if not parts then hostmod.preload(trace) end
  local raw
  ctx.steps, raw = find_steps(trace, args.iteration, args.warmup, parts)
  -- with the default detection these are the steps every analysis finds (the straggler analysis's too)
  if args.iteration == "" and type(args.warmup) == "number" and args.warmup < 0 then ctx.default_steps = raw end
  return ctx
end

--- The GPU operations of the trace (nsl.gpu_ops, short names), loaded once.
function Ctx:ops()
  if not self.cache.ops then self.cache.ops = gpu_ops.table(self.trace, OPS) end
  return self.cache.ops
end

--- Ctx:ops with `api`, the row in trace.api of each operation's launching
-- call (-1: none), as nsl.gpu_ops.table(..., {api = true}) gives it: from
-- the rows gpu_ops.api_rows found once per trace.  In a distributed run,
-- Ctx:ops alone: its processes found where the GPUs waited for launches
-- (M.step), and the ledger reads no launching call.  Not kept: the ledger
-- alone reads it, once.
function Ctx:launched_ops()
  local ops, trace = self:ops(), self.trace
  if self.parts then return ops end
  return ops:with("api", nsl.concat(gpu_ops.api_rows(trace, "kernels"), gpu_ops.api_rows(trace, "memcpy"),
                                    (gpu_ops.api_rows(trace, "memset"))))
end

--- The memcpy or memset rows (name) the checks read, with the columns they
-- read: the trace's table, or in a distributed run where rank 0 builds the
-- ledger the memcpy its processes sent (M.step_memcpy).
function Ctx:memory(name)
  if self.parts then return self.parts[name] end
  local t = self.trace[name]
  t:load(MEMORY[name])
  return t
end

--- The CUDA API calls, one per correlation id of a process (host_sync.api_calls;
-- in a distributed run, of the calls its processes sent where rank 0 builds the ledger).
function Ctx:api()
  if not self.cache.api then
    if self.parts then
      self.cache.api = host_sync.unique_calls(assert(self.parts.api, "the processes sent no CUDA calls"))
    else
      self.cache.api = host_sync.api_calls(self.trace)
    end
  end
  return self.cache.api
end

--- The tables the checks of blocking calls read (nsl.call_tables: by
-- check key, {agg, top}), made once: in a distributed run from its
-- processes' (ct_*), else from Ctx:api and Ctx:memory.
function Ctx:calls()
  if not self.cache.calls then
    self.cache.calls = self.parts and call_tables.merge(self.parts) or
                       call_tables.make(self:api(), {memcpy = self:memory("memcpy"), memset = self:memory("memset")})
  end
  return self.cache.calls
end

--- host.sync_per_step's sums per step and process (nsl.call_tables.step_sums:
-- {per, names}), made once: in a distributed run whose processes built the
-- ledger, theirs (ct_steps, ct_step_names); else from Ctx:api and the steps.
function Ctx:call_steps()
  if not self.cache.call_steps then
    local p = self.parts
    if p and p.ct_steps then
      self.cache.call_steps = {per = p.ct_steps, names = p.ct_step_names}
    else
      local st = self.steps
      self.cache.call_steps = call_tables.step_sums(self.trace, self:api(), self:memory("memcpy"),
                                                    ranges_of(st.windows, st.it.mode))
    end
  end
  return self.cache.call_steps
end

--- The ledger of the trace (nsl.ledger.build over the whole run, with the
-- steps when there are some), built once: {t = the ledger table, run =
-- {"report:device" -> run row as a Lua table}, by_report = {report -> its
-- run rows}, job_wall = the longest
-- GPU's run (the job's wall time: ranks wait for each other), devices =
-- {"report:pid" -> list of devices it ran work on}, critical (Ctx:critical),
-- res = the ledger's result}.
function Ctx:ledger()
  if self.cache.ledger then return self.cache.ledger end
  -- (the CUDA calls the checks read are the ledger's blocking calls too: made once, Ctx:api)
  local p = self.parts or {}
  local l
  local t = p.diag_form and ledger.reduced(self.trace, {ledger_form = p.diag_form, ledger = p.diag_ledger})
  if t then
    -- a distributed run's processes built their GPUs' rows (M.collective); the matching here is the one the
    -- checks read, the waits it gives on the ledger's GPUs (nsl.ledger.on_gpus, as nsl.ledger.build puts them)
    local run = t:filter(t.step:eq(0))
    local keys = run:select{"report", "device"}
    l = {ledger = t, groups = keys, empty = #t == 0, straggler = ledger.on_gpus(self:straggler_match() or false, keys)}
  else
    -- kept in the column cache for a trace of one report, under the settings of its steps and its matching
    -- (nsl.ledger.kept): read back without the launching calls, the blocking calls or a sweep
    local keep
    if not self.parts then
      local a, sa = self.args, self.out:args("straggler")
      keep = {"diagnose", a.iteration, a.warmup, sa.warmup, sa.rank_by, sa.source, sa.programs}
    end
    local matched = self:straggler_match() or false
    l = keep and ledger.kept(self.trace, keep, matched) or
        ledger.build(self.trace, {steps = self.steps and self.steps.it, matched = matched,
                                  api = #self.trace.api > 0 and self:api() or nil, ops = self:launched_ops(),
                                  launch_waits = p.launch_waits, raw_api = p.api, api_spans = p.api_spans,
                                  memcpy = p.memcpy, keep = keep})
    t = l.ledger
  end
  local L = {t = t, run = {}, by_report = {}, job_wall = 0, devices = {}, res = l}
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
    local mine = L.by_report[row.report] or {}
    L.by_report[row.report] = mine
    mine[#mine + 1] = row
    if row.wall > L.job_wall then L.job_wall = row.wall end
  end
  if not l.empty then
    local pd = self:gpu().pd   -- (report, pid, device) of the operations with a device
    for i = 1, #pd do
      local pid = pd.pid[i]
      if pid then
        local key = pd.report[i] .. ":" .. pid
        L.devices[key] = L.devices[key] or {}
        table.insert(L.devices[key], pd.device[i])
      end
    end
  end
  -- the ranks the others wait for: last to arrive at a tenth or more of the steady collectives (nil when
  -- nothing is known: one rank, or no matched collectives -- then every rank counts)
  local res = l.straggler
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

--- What the job would save over the run if the ranks `labels` (a list of
-- rank labels, "NAME:gpuN") were never late, from the ledger's matched
-- steady collectives: at each collective the last of them reached after
-- every other rank, the others could have gone on at the last of the
-- others' arrivals -- at most the shortest of the others' collectives later
-- (what they waited beyond its length is not these ranks').  Returns ns
-- and the collectives one of them arrived last at; nil when the ledger
-- matched none of theirs.  One rank: its lateness past the second-last
-- arrival; several late together (two stragglers, the ranks of a slow host):
-- the job gains only when all of them are on time.
function Ctx:gain(labels)
  local L = self:ledger()
  local res = L.res.straggler
  if not (res and res.coll and #res.coll > 0) then return nil end
  -- the ledger's GPUs by label, made once (a call per straggler would otherwise read every GPU's)
  local of = self.cache.gpu_of_label
  if not of then
    of = {}
    local keys = L.res.groups
    for k = 1, #keys do
      local label = (self.names[keys.report[k] + 1] or tostring(keys.report[k])) .. ":gpu" .. keys.device[k]
      local list = of[label] or {}
      list[#list + 1], of[label] = k - 1, list
    end
    self.cache.gpu_of_label = of
  end
  local mine, seen = {}, {}
  for _, label in ipairs(labels) do
    if not seen[label] then
      seen[label] = true
      for _, k in ipairs(of[label] or {}) do mine[#mine + 1] = k end
    end
  end
  table.sort(mine)
  if #mine == 0 then return nil end
  if #mine == 1 then
    local one = self:gains()[mine[1]]
    if one then return one[1], one[2] end
    return 0, 0
  end
  local c = res.coll:select{"instance", "rank", "arrive", "start", "stop"}
  c = c:join(nsl.table{{"rank", nsl.column(mine)}, {"mine", nsl.rep(1, #mine)}}, {"rank"}, {"mine"})
  local is_mine = ~c.mine:isnull()
  c = c:with("dur", c.stop - c.start)
  local others = c:filter(~is_mine):group_by("instance"):agg{"second=max(arrive)", "shortest=min(dur)"}
  local last = c:filter(is_mine):group_by("instance"):agg{"last=max(arrive)"}
    :join(others, {"instance"}, {"second", "shortest"})
  last = last:filter(~last.second:isnull())
  last = last:filter(last.last:ge(last.second))
  if #last == 0 then return 0, 0 end
  local gain = last.last - last.second
  gain = nsl.where(gain:lt(last.shortest), gain, last.shortest)
  return gain:sum(), #last
end

--- Ctx:gain of every rank alone, in one pass over the matched collectives
-- (a pass per straggler would read every rank's collectives once per
-- straggler): {[rank] = {ns, collectives}} for the ranks last at some
-- collective.  At each instance the others' latest arrival is the latest
-- one's when it is not the rank's own, else the second latest; the others'
-- shortest collective likewise (ties count as the others').
function Ctx:gains()
  if self.cache.gains then return self.cache.gains end
  local res = self:ledger().res.straggler
  local c = res.coll:select{"instance", "rank", "arrive", "start", "stop"}
  c = c:with("dur", c.stop - c.start)
  -- the two latest arrivals and the two shortest collectives of each instance, with the rank of the first
  local function top2(col, desc)
    local s = c:select{"instance", "rank", col}
    s = s:filter(~s[col]:isnull()):sort("instance", (desc and "-" or "") .. col, "rank")   -- (as max and min skip NULLs)
    local pos = nsl.cumcount(s:group_by("instance"):ids())
    local one = s:filter(pos:eq(0))
    local two = s:filter(pos:eq(1))
    return one:select{"instance"}:with(col .. "1", one[col], col .. "_rank", one.rank)
      :join(two:select{"instance"}:with(col .. "2", two[col]), {"instance"}, {col .. "2"})
  end
  local a = top2("arrive", true)
  local d = top2("dur", false)
  local j = c:join(a, {"instance"}, {"arrive1", "arrive_rank", "arrive2"})
  j = j:join(d, {"instance"}, {"dur1", "dur_rank", "dur2"})
  local own_a, own_d = j.arrive_rank:eq(j.rank), j.dur_rank:eq(j.rank)
  local second = nsl.where(own_a, j.arrive2, j.arrive1)     -- NULL: no other rank at the instance
  local shortest = nsl.where(own_d, j.dur2, j.dur1)
  local last = ~second:isnull() & j.arrive:ge(second)
  local gain = j.arrive - second
  gain = nsl.where(gain:lt(shortest), gain, shortest)
  local t = nsl.table{{"rank", j.rank}, {"gain", gain}}:filter(last)
  local g = t:group_by("rank"):agg{"ns=sum(gain)", "n=count"}
  local out = {}
  for i = 1, #g do out[g.rank[i]] = {g.ns[i], g.n[i]} end
  self.cache.gains = out
  return out
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
  for _, row in ipairs(L.by_report[r] or {}) do   -- report r's GPUs alone: a lookup per finding stays O(its GPUs)
    local mine = true
    if devs then
      mine = false
      for _, d in ipairs(devs) do if d == row.device then mine = true end end
    end
    if mine then
      local v = 0
      for _, x in ipairs(lines) do v = v + (row[x] or 0) end
      if v > best then best = v end
    end
  end
  return best
end

--- The active span of report r (0-based): report_spans'.  Returns lo, hi.
function Ctx:report_span(r)
  if not self.cache.spans then self.cache.spans = report_spans(self.trace) end
  local sp = self.cache.spans[r]
  if not sp then return nil end
  return sp[1], sp[2]
end

--- Label of a rank: the report's name, with ":gpuN" for a device.
function Ctx:rank(r, device)
  local name = self.names[r + 1] or tostring(r)
  if device then name = name .. ":gpu" .. device end   -- (a NULL device is nil: no suffix)
  return name
end

-- A process id for a finding's text: "?" where the trace does not say (a
-- NULL pid: a CSV file without one, an export with the column missing).
local function pid_text(pid) return pid and string.format("%d", pid) or "?" end
M.pid_text = pid_text

--- Report r alone as shell words, for the next command: its export, or
-- its bundle with --report NAME (nsl.report_args).
function Ctx:path(r)
  return nsl.report_args(self.trace, r)
end

--- The trace's inputs (and --report) as shell words, for a next command
-- over the whole trace (nsl.trace_args).
function Ctx:all_paths()
  self.cache.all_paths = self.cache.all_paths or nsl.trace_args(self.trace)   -- (one per finding would be
  return self.cache.all_paths                                                  -- O(findings x reports))
end

--- The trace's first event (nsl.window.origin; 0 when none), made once.
function Ctx:origin()
  self.cache.lo = self.cache.lo or window_mod.origin(self.trace) or 0
  return self.cache.lo
end

--- A time on the trace's clock as an --arg from/to value (from the trace's
-- first event; with r, from report r's, as a command on Ctx:path(r) counts).
function Ctx:at(t, r)
  local lo
  if r then
    self.cache.report_lo = self.cache.report_lo or window_mod.report_starts(self.trace)   -- every report's, at once
    lo = self.cache.report_lo[r] or 0
  else
    lo = self:origin()
  end
  return string.format("%.6fs", (t - lo) / 1e9)
end

--- Times on the trace's clock (a column) counted from the trace's start
-- (Ctx:origin), for an evidence column "... (ns from start)": the time
-- every output prints for the same event.
function Ctx:from_start(col)
  return col - self:origin()
end

--- Keeps an evidence table (printed after the findings); returns its name.
-- in_all: the rows there were when t lists only some (the longest calls:
-- the value evidence_rows.NAME says so in every format).
function Ctx:table(name, t, title, in_all)
  for _, e in ipairs(self.evidence) do if e.name == name then return name end end
  self.evidence[#self.evidence + 1] = {name = name, t = t, title = title, in_all = in_all}
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
M.table_of = table_of

-- Findings per process for CUDA calls that block: c the check's tables
-- (nsl.call_tables: agg, one row per (report, pid) with its longest call)
-- -> one finding per (report, pid), where = its longest call.  The blocked
-- time is the rule's measure (total_ns); what the job loses is the ledger
-- line the calls claim (line: idle_sync, idle_htod) on the process's worst
-- GPU: a host that waits while its GPU is busy loses nothing.
local function per_process_calls(ctx, id, c, what, evidence, next_cmd, line)
  local a = c.agg
  for i = 1, #a do
    local r, pid = a.report[i], a.pid[i]
    local lo, hi = ctx:report_span(r)
    local lost = ctx:ledger_lost(r, pid, line)
    ctx:add{id = id, total = a.total[i], window = hi - lo, evidence = evidence, lost = lost,
            text = string.format("%s pid %s: %s %s (%s blocked the calling threads, longest %s; its GPU sat idle " ..
              "%s for them)", ctx:rank(r), pid_text(pid), report.int(a.n[i]), what, report.duration(a.total[i]),
              report.duration(a.longest[i]), report.duration(lost)),
            where = {rank = ctx:rank(r), report = r, pid = pid, tid = a.api_tid[i],
                     device = a:coltype("device") and a.device[i] or nil,
                     stream = a:coltype("stream") and a.stream[i] or nil,
                     from = a.api_start[i], to = a.api_start[i] + a.longest[i]},
            next = next_cmd(r)}
  end
end
M.per_process_calls = per_process_calls

--- The title of a check's evidence table of calls (c: its nsl.call_tables
-- tables): what, and when the table lists only the longest, of how many;
-- second result, the calls in all then (Ctx:table's in_all).
local function calls_title(c, what)
  local n = c.agg.n:sum() or 0
  if n <= #c.top then return what end
  return string.format("%s (the %s longest of %s)", what, report.int(#c.top), report.int(n)), n
end
M.calls_title = calls_title

-- The evidence table of blocking calls with their GPU operation (c.top:
-- the longest, longest first).
local function calls_table(ctx, c, extra)
  local s = c.top
  local cols = {{"report", s.report:map(function(r) return ctx:rank(r) end)}, {"pid", s.pid}, {"tid", s.api_tid},
                {"device", s.device}, {"stream", s.stream}, {"API call", s.api_name},
                {"API at (ns from start)", ctx:from_start(s.api_start)}, {"API start (ns)", s.api_start},
                {"API time (ns)", s.api_dur}, {"GPU time (ns)", s.stop - s.start}}
  for _, x in ipairs(extra or {}) do cols[#cols + 1] = {x[1], s[x[2]]} end
  return nsl.table(cols)
end
M.calls_table = calls_table

--- The check of blocking calls key (nsl.call_tables.checks): its evidence
-- table (name, extra columns of its operations, title) and one finding per
-- process (what, the ledger line; the next command runs `launch` on the
-- process's report).
function M.blocking_calls(ctx, key, name, extra, title, what, line)
  local c = ctx:calls()[key]
  if #c.agg == 0 then return end
  local id
  for _, x in ipairs(call_tables.checks) do if x.key == key then id = x.id end end
  local ev = ctx:table(name, calls_table(ctx, c, extra), calls_title(c, title))   -- (its title, and in_all)
  per_process_calls(ctx, id, c, what, ev, function(r) return "nsl run launch " .. ctx:path(r) end, line)
end

-- ---------------------------------------------------------------- GPU operations by process and device

--- The per-GPU tables of the GPU operations the checks read (nsl.gpu_tables
-- merged: pd, gaps, low, dv, ser, counts), made once: in a distributed run
-- from the tables its processes made of their reports (gt_*), else from
-- Ctx:ops.
function Ctx:gpu()
  if not self.cache.gpu then
    local p = self.parts
    if p and p.gt_pd then
      self.cache.gpu = gpu_tables.merge{pd = p.gt_pd, gaps = p.gt_gaps, low = p.gt_low, dv = p.gt_dv,
                                        ser = p.gt_ser, counts = p.gt_counts}
    else
      self.cache.gpu = gpu_tables.own(self:gpu_local())
    end
  end
  return self.cache.gpu
end

--- What host.idle would name (its candidates: nsl.checks.host_idle), made
-- once: in a distributed run whose processes built the ledger, theirs; else
-- without the GPUs for which skip(report, device) is true.
function Ctx:host_idle(skip)
  if not self.cache.host_idle then
    local p = self.parts
    if p and p.host_idle and p.diag_form and p.diag_form.mode[1] == 0 then
      self.cache.host_idle = p.host_idle
    else
      self.cache.host_idle = require("nsl.checks.host_idle").candidates(self.trace, self:ledger().res,
                                                                         self:gpu_local(), self.args.host_idle, skip,
                                                                         self.cache.host_pre)
    end
  end
  return self.cache.host_idle
end

--- nsl.gpu_tables.make over Ctx:ops (the whole trace's operations), made
-- once: with the rows host.idle reads of them (lb_rows, gap_rows).
function Ctx:gpu_local()
  if not self.cache.gpu_local then
    local trace = self.trace
    local T = gpu_tables.kept(trace, self.ns, self.args)   -- (a trace of one report keeps them in the column cache)
    if not T then
      local ops = self:ops()
      T = gpu_tables.make(ops, gpu_ops.row_parts(trace, #ops), self.ns, self.args, #trace.kernels)
      gpu_tables.keep(trace, T, self.ns, self.args)
    end
    self.cache.gpu_local = T
  end
  return self.cache.gpu_local
end

-- ---------------------------------------------------------------- communication

-- Findings of kernels that run with no other kernel on their device
-- (exposed): count (the kernels of the mask), only and all (per device of
-- Ctx:gpu().dv: their time with no other kernel running, and all of it);
-- spec = {id, table = evidence name, title, head = label of the rank
-- column, what = label of the kernels' column, text = function(label,
-- exposed, all) -> string, next = analysis to run next}.
local function exposed_findings(ctx, count, only, all, spec)
  if count == 0 then return end
  local s = ctx:gpu().dv
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
      -- (less what a slow link or node finding claims of the rank's transfer)
      local row = ctx:ledger().run[r .. ":" .. dev]
      local lost = row and math.min(o, row.comm - ctx:slow_transfer(ctx:rank(r, dev))) or o
      if lost < 0 then lost = 0 end
      ctx:add{id = spec.id, total = o, window = s.hi[i] - s.lo[i], evidence = ev, lost = lost,
              text = spec.text(ctx:rank(r, dev), o, all[i]),
              where = {rank = ctx:rank(r, dev), report = r, device = dev, from = s.lo[i], to = s.hi[i]},
              next = string.format("nsl run %s %s", spec.next, ctx:path(r))}
    end
  end
end
M.exposed_findings = exposed_findings

-- Runs a shipped analysis on the trace with a collecting out (ctx.out:run);
-- returns the out (its findings and items), or nil and the error of bad input.
-- extra: a last argument for its run (the straggler analysis: the matching
-- diagnose made, Ctx:straggler_match).
-- The tables that analysis name's distributed step made on every process
-- (M.uses), by their names there; nil outside a distributed run.
local function parts_of(ctx, name)
  local sp
  for k, t in pairs(ctx.parts or {}) do
    local tname = k:match("^" .. name .. "%.(.+)$")
    if tname then sp = sp or {}; sp[tname] = t end
  end
  return sp
end

local function run_analysis(ctx, name, given, extra)
  return ctx.out:run(name, ctx.trace, given, {collect = "collect", parts = parts_of(ctx, name), extra = extra})
end
M.run_analysis = run_analysis

--- The matching of the trace's collectives (nsl.straggler.match with the
-- straggler analysis's default arguments), made once for the ledger's
-- waits and the straggler analysis: {src, res}, or nil and why (no GPU
-- work; input the matching refuses).
function Ctx:straggler_match()
  if self.cache.matched == nil then
    local trace = self.trace
    self.cache.matched = false
    if #trace.kernels > 0 or #trace.gpu_ranges > 0 then
      local args = self.out:args("straggler")
      -- (a distributed run: with the collectives its processes reduced, nsl.straggler.reduce)
      local ok, src, res = xpcall(straggler.match, nsl.error_handler, trace, args, parts_of(self, "straggler"))
      if ok then self.cache.matched = {src, res}
      elseif nsl.is_error(src) then self.cache.matched_err = tostring(src)
      else error(src, 0) end
    end
  end
  return self.cache.matched or nil, self.cache.matched_err
end

--- The straggler analysis on the trace, run once for every check that
-- reads it, over Ctx:straggler_match: its collecting out, or nil and why
-- (no GPU work, bad input).
function Ctx:straggler()
  if self.cache.straggler == nil then
    local matched, err = self:straggler_match()
    self.cache.straggler, self.cache.straggler_err = false, err
    if matched then
      local sub
      -- (with the steps diagnose found, when they are the analysis's own: the detection runs once)
      sub, err = run_analysis(self, "straggler", nil, {matched[1], matched[2], steps = self.default_steps,
                                                        attribute = self:attribute_along()})
      self.cache.straggler, self.cache.straggler_err = sub or false, err
    end
  end
  return self.cache.straggler or nil, self.cache.straggler_err
end

--- What attributes the straggler analysis's late windows' gaps
-- (nsl.straggler.named's attribute) when host.idle runs after it in one
-- process: the gaps and the host rows host.idle will attribute -- of the
-- GPUs the straggler findings do not name (nsl.checks.host_idle's pending)
-- -- in one nsl.host.attribute, its sweeps over the host tables (3.2 M
-- calls and 8.1 M ranges at 1 GB) made once for both, each interval's
-- attribution its own.  The host rows' activity waits in the cache for
-- Ctx:host_idle (which attributes its rows itself where it names a GPU
-- these lack).  nil otherwise.
function Ctx:attribute_along()
  if self.parts or not (self.running and self.running["host.idle"]) then return nil end
  return function(dd, sources, named)
    local function skip(r, dev)
      for _, w in ipairs(named or {}) do
        if w.report == r and (w.device == nil or w.device == dev) then return true end
      end
      return false
    end
    local host, pre = require("nsl.checks.host_idle").pending(self:ledger().res, self:gpu_local(),
                                                               self.args.host_idle, skip)
    -- (in a trace of one report the rows found are kept in the column cache for the next run: nsl.host.attribute)
    if not host then return hostmod.attribute(dd, sources, true, {trace = self.trace, name = "diagnose.late"}) end
    local both = hostmod.attribute_together({dd, ledger.host_intervals(host)}, sources, true,
                                            {trace = self.trace, name = "diagnose.late_and_idle"})
    pre.a = ledger.host_activity_of(host, both[2])
    self.cache.host_pre = pre
    return both[1]
  end
end

--- The straggler analysis's findings as the job's causes: a list of
-- {id, host, findings (the analysis's, most costly first), ranks (their
-- labels), lost (Ctx:gain of those ranks), n}.  The stragglers named with
-- one cause are one group -- late together, the job gains only when all
-- of them are on time -- and those late because their collectives ran
-- longer (straggler.collective: a slow link or node) one group per host
-- (the report's host as the export or bundle records it); every other
-- finding (late every time below the threshold, a rotating straggler) is a
-- group of its own.  Built once.
function Ctx:straggler_groups()
  if self.cache.sgroups then return self.cache.sgroups end
  local groups, by = {}, {}
  local sub = self:straggler()
  local hosts = self.trace.reports.host:totable()
  for _, f in ipairs(sub and sub.findings or {}) do
    local id, w = f.id or "straggler.compute", f.where
    local key, host
    if f.severity == "warning" and w and w.rank then
      if id == "straggler.collective" and w.report and (hosts[w.report + 1] or "") ~= "" then
        host = hosts[w.report + 1]
      end
      key = id .. "\0" .. (host or "")
    end
    local g = key and by[key]
    if not g then
      g = {id = id, host = host, findings = {}, ranks = {}}
      groups[#groups + 1] = g
      if key then by[key] = g end
    end
    g.findings[#g.findings + 1] = f
    if w and w.rank then g.ranks[#g.ranks + 1] = w.rank end
  end
  for _, g in ipairs(groups) do
    table.sort(g.findings, function(a, b) return (a.share or 0) > (b.share or 0) end)
    if #g.ranks > 0 then g.lost, g.n = self:gain(g.ranks) end
  end
  self.cache.sgroups = groups
  return groups
end

--- The time of rank `label`'s collective transfer (the ledger's comm line)
-- that a slow link or node finding claims (straggler.collective: the job's
-- gain from it, each of its ranks' transfer being that much longer), so no
-- other finding counts it again; 0 when none does.
function Ctx:slow_transfer(label)
  local t = 0
  for _, g in ipairs(self:straggler_groups()) do
    if g.id == "straggler.collective" and g.lost then
      for _, r in ipairs(g.ranks) do if r == label then t = t + g.lost end end
    end
  end
  return t
end

local function item(sub, name)
  for _, it in ipairs(sub.items) do if it.kind == "table" and it.name == name then return it.t end end
  return nil
end
M.item = item

local function item_title(sub, name)
  for _, it in ipairs(sub.items) do if it.kind == "table" and it.name == name then return it.opts.title end end
  return nil
end
M.item_title = item_title

-- ---------------------------------------------------------------- steps as ranges

-- The steps of ctx as ranges for nsl.steps.assign: report, pid, start,
-- stop, iter (pid 0 for marker-kernel steps, which are per report).
local function step_ranges(ctx) return ranges_of(ctx.steps.windows, ctx.steps.it.mode) end
M.step_ranges = step_ranges

-- ---------------------------------------------------------------- peak FLOPs (mfu)

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

--- The checks' modules (lua/nsl/checks/NAME.lua), in the order they run.
M.order = {"memcpy_pageable_async", "memcpy_sync", "memset_sync", "api_sync", "gpu_gaps", "gpu_low_utilisation",
           "nccl_exposed", "pipeline_bubbles", "straggler", "host_idle", "launch_bound", "host_sync_per_step",
           "compile_time", "warmup_share", "memory_near_capacity", "streams_serialised", "mfu"}

local loaded
--- The checks (their contracts, in M.order), loaded on first use: a check
-- requires this module for its helpers, so not while it loads.
function M.checks()
  if not loaded then
    loaded = {}
    for i, name in ipairs(M.order) do loaded[i] = require("nsl.checks." .. name) end
  end
  return loaded
end

--- The --arg options of the checks' thresholds (name -> {default, help}),
-- for the diagnose analysis.
function M.thresholds()
  local t = {}
  for _, c in ipairs(M.checks()) do
    for name, th in pairs(c.thresholds) do t[name] = {default = th.default, help = th.help} end
  end
  return t
end

-- What a merged finding's message says the job gains (M.merge): the least of the parts when the cause is
-- on every GPU or process, at most the most when not -- taken over the parts on ranks the job waits for
-- (crit: their labels, of n parts), which the words name when the others are hidden, with the amount
-- (lost, ns): the least or most of all the parts can be a hidden rank's 0.
local function gains(everywhere, crit, n, lost)
  if #crit == n then
    return everywhere and "on every one, so the job gains the least" or "not on every one: the job gains at most the most"
  end
  local where = everywhere and "on every one" or "not on every one"
  if #crit == 0 then return where .. "; every one is hidden by slower ranks, so the job gains nothing" end
  local names = #crit <= 4 and table.concat(crit, ", ")
                or string.format("%s and %d more", table.concat(crit, ", ", 1, 3), #crit - 3)
  if #crit == 1 then
    return string.format("%s; the job gains %s, what it costs the one rank the others wait for (%s)", where,
      report.duration(lost), names)
  end
  return string.format("%s; the job gains %s, the %s over the %d ranks the others wait for (%s)", where,
    report.duration(lost), everywhere and "least" or "most", #crit, names)
end

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
        if findings.severity_rank(f.severity) > findings.severity_rank(sev) then sev = f.severity end
      end
      local most, least = v[1], v[#v]
      local median = iterations.describe(v).median
      local crit, crit_ranks = {}, {}   -- the parts on ranks the job waits for, and their labels
      for i, f in ipairs(fs) do
        if not f.hidden_ns then crit[#crit + 1], crit_ranks[#crit_ranks + 1] = f.lost_ns, ranks[i] end
      end
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
        report.duration(most), gains(everywhere, crit_ranks, #fs, rec.lost_ns))
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

--- Unloads trace table `name` (t:unload: it would load again if read) and
-- forgets the context's caches that are that table itself.
local function release(ctx, name)
  local t = ctx.trace[name]
  if not t then return end
  for k, v in pairs(ctx.cache) do if rawequal(v, t) then ctx.cache[k] = nil end end
  t:unload()
  ctx.released[#ctx.released + 1] = name
end

--- Runs every check on ctx; a check whose input is unusable (an nsl error)
-- is skipped with a note.  Returns ctx.findings ranked: recurring costs by
-- lost_ns (largest first), then one-time costs by lost_ns, then findings
-- without a cost; ties by cost_ns, severity, id.  between,
-- when given, is called after each check (nsl tui yields there to read keys);
-- checks, when given, are the ones to run (default: M.checks()).  With
-- opts.release (a run that reads the trace no more after the checks: the
-- diagnose analysis), each trace table a check names in `tables` is
-- unloaded after the last check that names it, so that the later checks
-- run with less memory held (ctx.released lists them).
function M.run(ctx, between, checks, opts)
  checks = checks or M.checks()
  local last = {}   -- table name -> the last check that reads it
  if opts and opts.release then
    for i, c in ipairs(checks) do for _, name in ipairs(c.tables) do last[name] = i end end
  end
  ctx.released = {}
  ctx.running = {}   -- the ids of the checks this run runs (Ctx:attribute_along)
  for _, c in ipairs(checks) do ctx.running[c.id] = true end
  for i, c in ipairs(checks) do
    -- the progress line (on a terminal, for work over a second) names the check
    local progress <close> = nsl.progress(string.format("diagnose: check %d of %d (%s)", i, #checks, c.id))
    local ok, err = xpcall(c.run, nsl.error_handler, ctx)
    if not ok then
      if nsl.is_error(err) then ctx.notes[#ctx.notes + 1] = c.id .. ": " .. tostring(err)
      else error(err, 0) end
    end
    for _, name in ipairs(c.tables) do if last[name] == i then release(ctx, name) end end
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
    local sa, sb = findings.severity_rank(a.severity), findings.severity_rank(b.severity)
    if sa ~= sb then return sa > sb end
    if a.id ~= b.id then return a.id < b.id end
    return a._pos < b._pos
  end)
  for _, x in ipairs(f) do x._pos = nil end
  return f
end

return M
