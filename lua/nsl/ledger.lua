-- nsl.ledger -- one ledger of a trace's time: for every GPU of every rank
-- (a report's device), over the profiled run and over each step, wall time
-- split into parts that sum to it, each nanosecond counted once:
--
--   compute       kernels that are not collectives (nsys-jax: thunks that
--                 are not communication)
--   comm_wait     inside a collective, waiting for the last rank to arrive
--                 (nsl.straggler's matched steady collectives: the first
--                 `wait` ns of each; warm-up instances stay in comm)
--   comm          the rest of the collectives: the transfer
--   copy          memcpy and memset
--   idle          the rest, split into one cause each, the first that holds:
--     idle_onetime  the process was loading or compiling code (CUDA module
--                   loading and JIT calls, CUPTI's loading overhead records,
--                   XLA's and other frameworks' compile ranges: nsl.compile;
--                   on nsys-jax archives, whose thunks keep no process, the
--                   report's compile ranges)
--     idle_htod     the process was in a CUDA call that copies host to device
--                   (the data the GPU waits for)
--     idle_sync     the process was in a CUDA call that blocks the host
--                   (nsl.host_sync), or had not yet finished the thread's
--                   next CUDA call when that one started at most
--                   M.sync_follow_ns after: the gap a synchronisation leaves
--     idle_host     the call that launched the next GPU operation had not
--                   ended yet: the host was not launching (each such gap
--                   keeps the launching thread, for its NVTX range)
--     idle_unknown  none of these (work launched but not started: waiting
--                   on another stream or event; or no CUDA API trace)
--
-- Windows.  The whole run of a GPU is its report's active span (first
-- start to last stop of its GPU operations and CUDA calls); steps are those
-- of nsl.iterations (the process's step ranges for the process that
-- launched most of the device's work, or per device the XLA step program),
-- each clipped to start where the previous one ended.  The sweep is C
-- (nsl.ledger_sweep): a lower line in the list above wins where several
-- are open, so parts never overlap and sum to the window exactly.
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local nccl = require("nsl.nccl")
local host_sync = require("nsl.host_sync")
local compile = require("nsl.compile")
local hostmod = require("nsl.host")
local window = require("nsl.window")
local kept = require("nsl.kept")

local M = {}

--- A sync's gap: when the thread's next CUDA call starts within this long of
-- the sync's return, the GPU idle until that call ends is the sync's (it
-- drained the GPU, which waits for the relaunch); a later call means the
-- host went off to other work (idle_host).
M.sync_follow_ns = 100000

--- The ledger's lines in priority order (the class numbers of the sweep,
-- 0-based), then idle_unknown, the remainder.
M.lines = {"compute", "comm_wait", "comm", "copy", "idle_onetime", "idle_htod", "idle_sync", "idle_host"}
M.remainder = "idle_unknown"
M.idle = {"idle_onetime", "idle_htod", "idle_sync", "idle_host", "idle_unknown"}
local CLASS = {}
for i, l in ipairs(M.lines) do CLASS[l] = i - 1 end
M.class = CLASS

local function i64(n, v) return nsl.rep(v or 0, n) end

-- The GPU operations the ledger reads (nsl.gpu_ops.table's options), unless its caller gives them
local OPS = {names = "short", memop = true, api = true, columns = {"report", "pid", "device", "start", "stop"}}

--- The matching of the collectives the ledger reads, unless its caller gives it (nsl.straggler.match's
-- arguments: the straggler analysis's defaults, on NCCL kernels)
M.MATCH = {rank_by = "device", source = "nccl", programs = "structure", warmup = -1}
local MATCH = M.MATCH

-- The options of M.build that carry a distributed run's rows (a ledger made with them is not kept)
local DISTRIBUTED = {"waits", "launch_waits", "raw_api", "api_spans", "memcpy"}

--- The rows of t that can be placed on a GPU's timeline: a device, a start and a stop (a damaged export can
-- leave any of them NULL; such work belongs to no ledger row).
local function on_gpu(t) return ~t.device:isnull() & ~t.start:isnull() & ~t.stop:isnull() end
local function placed(t) return t:filter(on_gpu(t)) end

--- The GPU work of a trace as rows start, stop, report, device, class, pid,
-- and where ops has the launching calls' rows (api), for operations
-- launched by a recorded CUDA call: tid, launch_stop of that call (NULL
-- otherwise).  Also returns the source: "kernels" or "jax" (an nsys-jax
-- archive's thunks), and for jax the collectives: report, device, instance,
-- type, start, stop.  ops: the operations as nsl.gpu_ops.table gives them
-- with short names, memop and api, when the caller has them (nil: made
-- here).
local function gpu_work(trace, ops)
  if #trace.kernels == 0 and #trace.gpu_ranges > 0 then
    local jax = require("nsl.jax")
    local g = jax.gpu_ranges(trace)
    if #g > 0 and g.text:match("XlaModule:#"):count() > 0 then
      local d = jax.load(trace, {programs = "structure", gpu_ranges = g})
      local th = d.thunk
      local cls = nsl.where(th.Communication, CLASS.comm, CLASS.compute)
      local work = nsl.table{{"start", th.start}, {"stop", th.stop}, {"report", th.report}, {"device", th.Device},
                             {"class", cls}}
      local comm = d.communication
      local coll = nsl.table{{"report", comm.report}, {"device", comm.Device},
                             {"instance", (jax.collective_instances(comm))}, {"type", comm.Collective},
                             {"start", comm.start}, {"stop", comm.stop}}
      return placed(work), "jax", placed(coll)
    end
  end
  return M.ops_work(trace, ops or gpu_ops.table(trace, OPS)), "kernels"
end

--- gpu_work's rows of GPU operations ops (nsl.gpu_ops.table with names =
-- "short" and memop; api for the launch columns).
function M.ops_work(trace, ops)
  local is_coll = nccl.mask(ops.name) & ~ops.memop
  local cls = nsl.where(ops.memop, CLASS.copy, nsl.where(is_coll, CLASS.comm, CLASS.compute))
  local cols = {{"start", ops.start}, {"stop", ops.stop}, {"report", ops.report}, {"device", ops.device},
                {"class", cls}, {"pid", ops.pid}}
  if ops:coltype("api") then
    local api = trace.api
    api:load{"tid", "stop"}
    cols[#cols + 1] = {"tid", api.tid:gather(ops.api)}
    cols[#cols + 1] = {"launch_stop", api.stop:gather(ops.api)}
  end
  return placed(nsl.table(cols))
end

--- Where each GPU waited for the host to launch (the ledger's idle_host):
-- before each operation of work (gpu_work's rows, with a group column
-- numbering the GPUs in (report, device) order), from the previous
-- operation's start on its GPU to the end of its launch call (at most its
-- own start), where that is later.  Rows in (group, start) order: group,
-- start, launch_stop, report, device, pid, tid, hs, he (the wait).
function M.launch_waits(work)
  local rows, hs, he = nsl.launch_waits(work.group, work.start, work.launch_stop)   -- (one C pass after the sort)
  return work:select{"group", "start", "launch_stop", "report", "device", "pid", "tid"}:take(rows)
    :with("hs", hs, "he", he)
end

--- The GPUs of work (gpu_work's rows): keys, a table report, device, gid
-- in (report, device) order, and each row's group (its row of keys).
function M.gpus(work)
  local gk = work:group_by("report", "device")
  local keys = gk:keys():with("gid", nsl.range(#gk)):sort("report", "device")
  local group_of_gid = nsl.range(#keys):gather(keys.gid:argsort())
  return keys, group_of_gid:gather(gk:ids())
end

--- The active span of every report: {report -> {lo, hi}} over GPU work
-- and CUDA calls.
local function report_spans(trace, work, api_spans)
  local spans = {}
  local function add(t)
    if #t == 0 then return end
    local a = t:group_by("report"):agg{"lo=min(start)", "hi=max(stop)"}
    for i = 1, #a do
      local r = a.report[i]
      local sp = spans[r] or {a.lo[i], a.hi[i]}
      spans[r] = {math.min(sp[1], a.lo[i]), math.max(sp[2], a.hi[i])}
    end
  end
  add(work:select{"report", "start", "stop"})
  if api_spans then
    add(api_spans)
  else   -- (the calls' extents, measured once per trace: nsl.window.report_extents)
    for r, x in pairs(window.report_extents(trace, "api")) do
      if x[1] and x[3] then
        local sp = spans[r] or {x[1], x[3]}
        spans[r] = {math.min(sp[1], x[1]), math.max(sp[2], x[3])}
      end
    end
  end
  return spans
end

--- Host intervals (report, pid, start, stop) repeated on every group of
-- their process: returns start, stop, group columns.  pd: the (report,
-- pid, group) rows of the trace's GPU work.
local function on_groups(h, pd, keys)
  keys = keys or {"report", "pid"}
  local s, e, g = {}, {}, {}
  if #h == 0 or #pd == 0 then return nil end
  local pos = nsl.cumcount(pd:group_by(table.unpack(keys)):ids())
  for k = 0, pos:max() do   -- the k-th device of each process
    local m = pd:filter(pos:eq(k))
    local j = h:join(m, keys, {"group"}, "m_")
    local rows = (~j.m_group:isnull()):indices()
    s[#s + 1] = h.start:gather(rows)
    e[#e + 1] = h.stop:gather(rows)
    g[#g + 1] = j.m_group:gather(rows)
  end
  return nsl.concat(table.unpack(s)), nsl.concat(table.unpack(e)), nsl.concat(table.unpack(g))
end

--- The host-side intervals of the idle causes: a list of {start, stop,
-- group, class} column sets.  calls: host_sync.api_calls(trace) when the
-- caller has it already (nil: made here); raw: the trace's API calls as
-- recorded, or some of them holding every one that launched a memory copy
-- (nil: trace.api); mc: the memcpy rows, at least the host-to-device ones
-- (report, pid, corr, kind; nil: trace.memcpy).
local function host_causes(trace, pd, source, calls, raw, mc)
  local parts = {}
  local keys = source == "jax" and {"report"} or {"report", "pid"}   -- nsys-jax thunks keep no process
  local function add(h, class)
    if not h or #h == 0 then return end
    local cols = {table.unpack(keys)}
    cols[#cols + 1], cols[#cols + 2] = "start", "stop"
    local s, e, g = on_groups(h:select(cols), pd, keys)
    if s and #s > 0 then parts[#parts + 1] = {s, e, g, i64(#s, class)} end
  end
  -- one-time work: compiling (XLA's compile ranges, other frameworks' compile ranges)
  if #trace.nvtx > 0 then
    for _, part in ipairs(compile.xla_ranges(trace)) do
      add(part:filter(part.text:match(compile.XLA_COMPILE) & ~part.stop:isnull()), CLASS.idle_onetime)
    end
    local members = compile.framework_ranges(trace)
    if members then add(members:filter(members.root), CLASS.idle_onetime) end
  end
  local api = trace.api
  if #api == 0 or source == "jax" then return parts end
  -- code loading and compiling calls, CUPTI's loading overhead
  local lc = compile.loading_calls(trace)
  add(lc, CLASS.idle_onetime)
  if #trace.overhead > 0 then add(compile.loading_overhead(trace), CLASS.idle_onetime) end
  -- host-to-device copies: the calls that launched HtoD memcpy
  if not mc then
    mc = trace.memcpy
    if #mc > 0 then mc:load{"report", "pid", "corr", "kind"} end
  end
  if #mc > 0 then
    local h = mc:filter(mc.kind:eq("HtoD")):select{"report", "pid", "corr"}
    if raw then api = raw else api:load{"report", "pid", "corr", "start", "stop"} end
    local cand = api
    if #h * 8 <= #api then   -- a few copies: the calls with their ids first, so the join indexes those alone
      cand = api:take(api.corr:isin(h.corr:unique():totable()):indices())
    end
    local _, idx = h:join(cand, {"report", "pid", "corr"})
    idx = idx:gather(idx:ge(0):indices())
    add(cand:take(idx), CLASS.idle_htod)
  end
  -- synchronisation: the blocking calls, up to the end of the thread's next CUDA call
  calls = calls or host_sync.api_calls(trace)
  local cat = calls.name:map(host_sync.category)
  -- the blocking calls and the call after each on its thread (NULL past the last): in the calls' order by
  -- thread and start, their rows alone are read (most calls being launches, the order is not applied to all)
  local ord = host_sync.by_thread(trace, calls)
  local pos = (~cat:isnull()):gather(ord):indices()   -- positions of the blocking calls in that order
  local at = ord:gather(pos)
  local after = pos + 1
  local more = after:lt(#ord)   -- not past the last call
  after = nsl.where(more, ord:gather(nsl.where(more, after, 0)), -1)
  local function this(c) return calls[c]:gather(at) end
  local function next_(c) return calls[c]:gather(after) end
  local stop0 = this("stop")
  local same = this("report"):eq(next_("report")) & this("pid"):eq(next_("pid")) & this("tid"):eq(next_("tid"))
    & (next_("start") - stop0):le(M.sync_follow_ns)
  local nxt = nsl.where(same, next_("stop"), stop0)
  local stop = nsl.where(nxt:gt(stop0), nxt, stop0)
  local sy = calls:select{"report", "pid", "tid", "start"}:take(at):with("stop", stop)
  add(sy, CLASS.idle_sync)
  return parts
end

--- The matched steady collectives of matched ({src, res} of
-- nsl.straggler.match; false: none) on the GPUs keys (report, device: the
-- ledger's, in group order): {coll (res.coll with rank = the GPU's row of
-- keys; a rank on none is left out), ninst}, or nil without any or with
-- fewer than two GPUs.
function M.on_gpus(matched, keys)
  local src, res = table.unpack(matched or {})
  if not (res and res.coll and #res.coll > 0 and #keys >= 2) then return nil end
  local rk = {report = {}, device = {}}   -- (a rank without a device is on no GPU of the ledger: -1)
  for r, w in ipairs(src.where) do rk.report[r], rk.device[r] = w.report, w.device or -1 end
  local rg = nsl.table{{"report", nsl.column(rk.report)}, {"device", nsl.column(rk.device)}}
    :join(keys:select{"report", "device"}:with("report", keys.report:cast("i64"), "device",
                                               keys.device:cast("i64"), "group", nsl.range(#keys)),
          {"report", "device"}, {"group"})
  local c = res.coll
  c = c:with("rank", rg.group:gather(c.rank))
  return {coll = c:filter(~c.rank:isnull()), ninst = res.ninst}
end

--- The ledger of trace.  opts.steps: nsl.iterations.steps(...).it (or nil:
-- the whole run only); opts.matched: {src, res} of nsl.straggler.match on
-- the trace with the straggler analysis's defaults, for NCCL kernels
-- (false: none; nil: made here); opts.api: host_sync.api_calls(trace),
-- when the caller keeps it (diagnose shares it with its checks); opts.ops:
-- the GPU operations (nsl.gpu_ops.table with names = "short", memop and
-- api), when the caller has them.  What a distributed run's processes
-- found of their reports, where rank 0 would read every report's CUDA
-- calls for it: opts.launch_waits (M.launch_waits' rows, with the ops
-- then needing no api), opts.raw_api (some API calls as recorded, holding
-- every one that launched a memory copy), opts.memcpy (some memcpy rows,
-- holding every host-to-device one) and opts.api_spans (per report, the
-- first start and last stop of its API calls: report, start, stop).  A
-- process of the ledger analysis's distributed form builds the ledger of
-- its own reports with opts.waits instead of opts.matched: the waits of its
-- collectives (nsl.straggler.place_waits' report, device, start, stop,
-- wait), from the matching rank 0 made over every report (then no
-- `straggler` result is returned).  opts.keep: the settings the steps and
-- the matching were made with (a list), under which the result is kept in
-- the column cache for M.kept (a trace of one report; not with a
-- distributed run's rows).
-- Returns a table with one row per GPU and window:
-- report, device, rank (label), step (0: the whole run; 1.. the steps),
-- start, stop, wall, then M.lines and idle_unknown (ns, summing to wall),
-- idle (their idle parts summed); and a second table, host: the idle_host
-- gaps over the run, one per GPU operation that waited for its launch
-- (report, pid, tid of the launching thread, group: the GPU's row of
-- groups, start: the operation's, hs, he: the gap's span, time: its
-- idle_host ns).
function M.build(trace, opts)
  opts = opts or {}
  local work, source, jcoll = gpu_work(trace, opts.ops)
  local empty = #work == 0
  local keys, group = M.gpus(work)
  work = work:with("group", group)
  local ngroups = #keys
  local names = trace.reports.name:totable()
  -- intervals: the GPU work, the collectives' waits, the host causes
  local S, E, G, C = {work.start}, {work.stop}, {group}, {work.class}
  -- the waits inside collectives: NCCL kernels as the straggler analysis matched them (nsl.straggler.match,
  -- given by diagnose, which makes it once for both), its ranks put on the ledger's groups by report and
  -- device.  nsys-jax thunks are matched here: the ledger reads their warm-up from the intervals between
  -- collectives, where the straggler analysis leaves out nsys-jax's own warm-up executions (on the shared
  -- archives the two differ by seconds of waiting, so they are not one matching yet).
  local res_strag, c
  if source == "jax" then
    if #jcoll > 0 and ngroups >= 2 then
      local kj = jcoll:join(keys:with("group", nsl.range(#keys)), {"report", "device"}, {"group"}, "k_")
      local cr = jcoll:with("rank", kj.k_group):select{"rank", "instance", "type", "start", "stop"}
      local ok, res = pcall(require("nsl.straggler").analyse, cr,
                            nsl.table{{"rank", group}, {"start", work.start}, {"stop", work.stop}}, ngroups,
                            work.class:eq(CLASS.compute), {clock = keys.report:totable()})
      if ok and res.coll and #res.coll > 0 then res_strag, c = res, res.coll end
    end
  elseif opts.waits then   -- a distributed run's: placed by each process on its collectives (nsl.straggler.place_waits)
    local w = opts.waits
    if #w > 0 then
      local kg = w:select{"report", "device"}:join(keys:select{"report", "device"}:with("report",
        keys.report:cast("i64"), "device", keys.device:cast("i64"), "group", nsl.range(#keys)), {"report", "device"},
        {"group"})
      c = w:with("rank", kg.group)
      c = c:filter(~c.rank:isnull())
    end
  else
    local matched = opts.matched
    if matched == nil then
      local ok, src, res = pcall(require("nsl.straggler").match, trace, MATCH)
      matched = ok and {src, res} or false
    end
    res_strag = M.on_gpus(matched, keys)
    c = res_strag and res_strag.coll
  end
  if c then
    local w = nsl.where(c.wait:lt(c.stop - c.start), c.wait, c.stop - c.start)
    local pos = w:gt(0):indices()
    S[#S + 1] = c.start:gather(pos)
    E[#E + 1] = (c.start + w):gather(pos)
    G[#G + 1] = c.rank:gather(pos)
    C[#C + 1] = i64(#pos, CLASS.comm_wait)
  end
  local hostrows
  if not empty then
    local pd = source == "jax" and work:group_by("report", "group"):keys():sort("report", "group")
               or work:group_by("report", "pid", "group"):keys():sort("report", "pid", "group")
    for _, p in ipairs(host_causes(trace, pd, source, opts.api, opts.raw_api, opts.memcpy)) do
      S[#S + 1], E[#E + 1], G[#G + 1], C[#C + 1] = p[1], p[2], p[3], p[4]
    end
  end
  if source == "kernels" and not empty then
    -- host not launching: before each operation, from the previous operation's start on its GPU to the end of
    -- its launch call (at most its own start); a distributed run's processes find them on their GPUs, whose
    -- rows here are found by report and device
    hostrows = opts.launch_waits
    if hostrows then
      local q = nsl.table{{"report", hostrows.report:cast("i64")}, {"device", hostrows.device:cast("i64")}}
      local kg = q:join(nsl.table{{"report", keys.report:cast("i64")}, {"device", keys.device:cast("i64")},
                                  {"g", nsl.range(#keys)}}, {"report", "device"}, {"g"}, "k_")
      hostrows = hostrows:with("group", kg.k_g)
    else
      hostrows = M.launch_waits(work)
    end
    S[#S + 1], E[#E + 1], G[#G + 1] = hostrows.hs, hostrows.he, hostrows.group
    C[#C + 1] = i64(#hostrows, CLASS.idle_host)
  end
  local s, e, g, c = nsl.concat(table.unpack(S)), nsl.concat(table.unpack(E)), nsl.concat(table.unpack(G)),
                     nsl.concat(table.unpack(C))
  -- the windows: the run, then the steps
  local spans = report_spans(trace, work, opts.api_spans)
  local wg, wlo, whi, wstep = {}, {}, {}, {}
  for k = 1, ngroups do
    local sp = spans[keys.report[k]]
    wg[k], wlo[k], whi[k], wstep[k] = k - 1, sp[1], sp[2], 0
  end
  -- the run's windows and the steps' in one sweep (the rows sorted once); charged: of the run's.  Step
  -- windows are per group too: none without a group
  local sw = opts.steps and M.step_windows(opts.steps, work, keys) or nil
  local run_totals, charged, step_totals
  if #wg > 0 then
    local sets = {nsl.column(wg), nsl.column(wlo), nsl.column(whi)}
    if sw and #sw.group > 0 then
      for _, x in ipairs{sw.group, sw.lo, sw.hi} do sets[#sets + 1] = nsl.column(x) end
    end
    run_totals, charged, step_totals = nsl.ledger_sweep(s, e, g, c, #M.lines, table.unpack(sets))
    run_totals, step_totals = run_totals:totable(), step_totals and step_totals:totable()
  end
  local rows = {}
  local function add_rows(totals, gl, lo, hi, st)
    local nc = #M.lines + 1
    for w = 1, #gl do
      local k = gl[w] + 1
      local r = {report = keys.report[k], device = keys.device[k], step = st[w], start = lo[w], stop = hi[w],
                 wall = hi[w] - lo[w]}
      r.rank = (names[r.report + 1] or tostring(r.report)) .. ":gpu" .. tostring(r.device)
      local idle = 0
      for ci = 1, nc do
        local line = M.lines[ci] or M.remainder
        r[line] = totals[(w - 1) * nc + ci]
        if ci > CLASS.copy + 1 then idle = idle + r[line] end
      end
      r.idle = idle
      rows[#rows + 1] = r
    end
  end
  if run_totals then add_rows(run_totals, wg, wlo, whi, wstep) end
  if step_totals then add_rows(step_totals, sw.group, sw.lo, sw.hi, sw.step) end
  local cols = {"report", "rank", "device", "step", "start", "stop", "wall"}
  for _, l in ipairs(M.lines) do cols[#cols + 1] = l end
  cols[#cols + 1] = M.remainder
  cols[#cols + 1] = "idle"
  local t = {}
  for _, name in ipairs(cols) do
    local v = {}
    for i, r in ipairs(rows) do v[i] = r[name] end
    local empty = (name == "rank" and nsl.column{""} or nsl.column{0}):gather(nsl.column{}:cast("i64"))
    t[#t + 1] = {name, #v > 0 and nsl.column(v) or empty}
  end
  local ledger = nsl.table(t)
  -- idle_host by launching thread over the run (the rows' charged time)
  local host
  if hostrows and charged and #hostrows > 0 then
    local base = #s - #hostrows
    local ch = charged:gather(nsl.range(#hostrows) + base)
    host = hostrows:select{"report", "pid", "tid", "group", "start", "hs", "he"}:with("time", ch)
    host = host:filter(ch:gt(0))
  end
  local l = {ledger = ledger, host = host, groups = keys, source = source, straggler = res_strag, empty = empty}
  if opts.keep then
    local given = false   -- (a distributed run's rows: not the report's alone)
    for _, k in ipairs(DISTRIBUTED) do given = given or opts[k] ~= nil end
    if not given then M.keep(trace, opts.keep, l) end
  end
  return l
end

-- ---- the ledger kept in the column cache (a trace of one report) ----
--
-- M.build's ledger, host rows and GPUs depend on the report's rows and on
-- the settings its steps and its matching of the collectives were made
-- with: a caller that builds it again and again over one export (diagnose,
-- the ledger analysis) names those settings (opts.keep, a list of strings
-- and numbers) and M.build keeps what it made under them; M.kept reads it
-- back.  Kept: the ledger of GPU operations (source "kernels") that were
-- found (not empty), made without a distributed run's rows.  The rank
-- labels are made again from the reports' names.

-- The kept tables' columns, in order (the ledger's less rank, a text)
local KEPT_COLS = {
  groups = {"report", "device", "gid"},
  host = {"report", "pid", "tid", "group", "start", "hs", "he", "time"},
}
do
  local c = {"report", "device", "step", "start", "stop", "wall"}
  for _, l in ipairs(M.lines) do c[#c + 1] = l end
  c[#c + 1] = M.remainder
  c[#c + 1] = "idle"
  KEPT_COLS.ledger = c
end
local KEPT_ORDER = {"groups", "ledger", "host"}

-- The name the ledger of trace is kept under for settings keep (nil: it is not kept: another trace than one of
-- one report, no cache folder)
local function kept_name(trace, keep)
  if not keep or trace:nreports() ~= 1 or not trace:keeps_derived(0) then return nil end
  local list = {}
  for i, v in ipairs(keep) do list[i] = tostring(v) end
  return kept.name("ledger.1", list)
end

--- Keeps l (M.build's of trace, with opts.keep = keep) for M.kept.
function M.keep(trace, keep, l)
  local name = kept_name(trace, keep)
  if not name or l.empty or l.source ~= "kernels" then return end
  for _, tname in ipairs(KEPT_ORDER) do
    local t = tname == "ledger" and l.ledger:select(KEPT_COLS.ledger) or l[tname]
    if not kept.keepable(t, KEPT_COLS[tname]) then return end
  end
  for _, tname in ipairs(KEPT_ORDER) do
    local t = tname == "ledger" and l.ledger:select(KEPT_COLS.ledger) or l[tname]
    kept.keep_table(trace, "kernels", name .. "." .. tname, t or false, KEPT_COLS[tname])
  end
  trace:keep_derived(0, "kernels", name .. ".counts", nsl.column{#trace.kernels, #trace.memcpy, #trace.memset})
end

--- M.build's result for trace as M.keep kept it under the same settings
-- (keep), or nil where none is kept or what is kept does not hold together
-- (a kept file is not to be trusted: every row's GPU must be one of the
-- kept GPUs, each ledger row's parts must sum to its wall time).  matched:
-- as M.build's opts.matched, for the `straggler` field (nil: none made).
function M.kept(trace, keep, matched)
  local name = kept_name(trace, keep)
  if not name then return nil end
  local counts = trace:derived(0, "kernels", name .. ".counts", "i64", 3)
  if not counts or counts[1] ~= #trace.kernels or counts[2] ~= #trace.memcpy or counts[3] ~= #trace.memset then
    return nil
  end
  local T = {}
  for _, tname in ipairs(KEPT_ORDER) do
    local t = kept.table(trace, "kernels", name .. "." .. tname, KEPT_COLS[tname])
    if t == nil or (t == false and tname ~= "host") then return nil end
    T[tname] = t or nil
  end
  local keys, t, host = T.groups, T.ledger, T.host
  local n = #keys
  -- one report (0); the GPUs numbered 0 .. n-1 in (report, device) order, each once
  local function only0(c) local lo, hi = nsl.extent(c); return not lo or (lo == 0 and hi == 0) end
  if n == 0 or not only0(keys.report) or keys.device:isnull():count() > 0 then return nil end
  local d = keys.device:totable()
  for k = 2, n do if d[k] <= d[k - 1] then return nil end end
  local lo, hi = nsl.extent(keys.gid)
  if lo < 0 or hi >= n or #keys:group_by("gid") ~= n then return nil end
  -- the ledger's rows: on a kept GPU, the parts summing to the wall time and the idle ones to idle
  if #t == 0 or not only0(t.report) or not only0(t.step:lt(0):cast("i64")) then return nil end
  local on = t:select{"device"}:join(keys:select{"device"}:with("k", nsl.rep(1, n)), {"device"}, {"k"})
  if on.k:isnull():count() > 0 then return nil end
  local sum, idle = t[M.remainder], t[M.remainder]
  for i, l in ipairs(M.lines) do
    sum = sum + t[l]
    if i > CLASS.copy + 1 then idle = idle + t[l] end
  end
  if not (only0((sum - t.wall):ne(0):cast("i64")) and only0((t.stop - t.start - t.wall):ne(0):cast("i64"))
          and only0((idle - t.idle):ne(0):cast("i64"))) then
    return nil
  end
  if host then
    local glo, ghi = nsl.extent(host.group)
    if not only0(host.report) or (glo and (glo < 0 or ghi >= n)) then return nil end
  end
  local names = trace.reports.name:totable()
  local rank = {}
  for i, dv in ipairs(t.device:totable()) do rank[i] = (names[1] or "0") .. ":gpu" .. tostring(dv) end
  local cols = {}
  for _, c in ipairs(t:columns()) do
    cols[#cols + 1] = {c, t[c]}
    if c == "report" then cols[#cols + 1] = {"rank", nsl.column(rank)} end
  end
  local res_strag = matched ~= nil and M.on_gpus(matched, keys) or nil
  return {ledger = nsl.table(cols), host = host, groups = keys, source = "kernels", straggler = res_strag,
          empty = false}
end

--- The idle_host time of M.build's host rows by the innermost NVTX range
-- the launching thread was in for most of each gap (M.host_activity), as
-- the ledger analysis prints it: range text (PyTorch's op suffixes dropped;
-- "(no NVTX range)" for none), time, gaps, largest first; nil without host
-- rows or without NVTX (nvtx_present: whether the trace has ranges; in a
-- distributed run, whether any report has).  sums: the rows as sums per
-- range in first-seen order, not sorted -- a distributed run's processes
-- send these, and rank 0 sums them again (M.host_by_range_of).
function M.host_by_range(trace, host, nvtx_present, sums)
  if not host or #host == 0 or not nvtx_present then return nil end
  local text
  if #trace.nvtx > 0 then
    local a = M.host_activity(trace, host, nil, "ledger.host_by_range")
    local nvtx = require("nsl.nvtx")
    text = a.nvtx_text:map(function(x) return nvtx.normalize(x, nvtx.pytorch_suffixes) end)   -- "aten::add"
  else   -- (a process whose reports have no ranges, where others' have)
    text = nsl.column{""}:gather(nsl.rep(-1, #host))
  end
  local t = nsl.table{{"range", nsl.coalesce(text, "(no NVTX range)")}, {"time", host.time}}
  local g = t:group_by("range"):agg{"time=sum(time)", "gaps=count"}
  return sums and g or g:sort("-time")
end

--- The processes' sums of M.host_by_range (gathered in report order) as
-- M.host_by_range gives them over the whole trace; nil without rows.
function M.host_by_range_of(sums)
  if not sums or #sums == 0 then return nil end
  return sums:group_by("range"):agg{"time=sum(time)", "gaps=sum(gaps)"}:sort("-time")
end

-- ---- a distributed run: each process builds its GPUs' ledger ----
--
-- The ledger analysis's distributed form (nsl.distributed) moves ledger
-- rows, not events: every process detects the steps with the others
-- (nsl.iterations.reduce_steps), sends its NCCL collectives (one row each:
-- nsl.straggler.collectives) to rank 0, which matches them as one process
-- does and sends back each rank's clock offset and each steady instance's
-- last arrival (nsl.straggler.reduced_waits); each process then builds the
-- ledger of its own GPUs (M.build with those waits) and sends its rows and
-- its idle_host sums per NVTX range.  Rank 0 adds the rank labels and sums
-- the ranges again: the tables one process makes.  Named steps (--arg
-- iteration) and nsys-jax thunks (whose steps and collectives align
-- devices) are built on rank 0 over the whole trace, as without a form.


--- Whether the processes of a distributed run build the ledger of their own
-- reports (collective: every process calls it): not on nsys-jax thunks
-- (whose steps and collectives align devices), nor when the step range
-- args.iteration names is in no report.  st: the process's tables of
-- nsl.iterations.reduce_steps(view, {windows = true, spec =
-- args.iteration}) when the caller made
-- them (nil: made here).  Returns the process's steps (nsl.iterations.
-- reduced_find's it, or nil without), or false: rank 0 builds the ledger
-- over the whole trace.
function M.reduced_steps(view, args, st)
  local mpi = nsl.mpi
  local iterations = require("nsl.iterations")
  local ok, jaxlike = pcall(function() return #view.kernels == 0 and #view.gpu_ranges > 0 end)
  if not mpi.all_ok(ok, jaxlike) then return false end
  if not mpi.agree(not jaxlike) then return false end
  st = st or iterations.reduce_steps(view, {windows = true, spec = args.iteration})
  local it
  ok, it = pcall(iterations.reduced_find, view, st, args.iteration)
  if not mpi.all_ok(ok, it) then return false end
  -- (mode whole, or a step range named that no report has: every process has it so, and rank 0 then fails as
  -- one process does)
  if not mpi.agree(it ~= false and (it ~= nil or args.iteration == "")) then return false end
  return it or nil
end

--- The waits inside the collectives of view's GPUs (collective): every
-- process sends its collectives to rank 0, which matches them as
-- nsl.straggler.match does with args (rank_by device) and sends back the
-- clock offsets and the steady instances' last arrivals; each places them
-- on its own (first: the whole trace's number of view's report 0).  A
-- failure to make or read them leaves the ledger without waits, as one
-- process's failing match does.  ops: view's GPU operations when the caller
-- has them (M.build's opts.ops; nil: made here).  Returns waits
-- (nsl.straggler.place_waits', view's report numbers; an empty table when
-- none, or when the whole trace has fewer than two GPUs: M.on_gpus' rule),
-- ops, whether any report has NVTX ranges; nil where another process failed
-- (the failing one raises: all stop together).
function M.reduce_waits(view, first, args, ops)
  local mpi = nsl.mpi
  local straggler = require("nsl.straggler")
  local coll
  local cok = pcall(function() coll = straggler.collectives(view, args) end)
  cok = mpi.agree(cok)
  local got, err = mpi.gather(cok and coll or nil, first)
  if not mpi.all_ok(got ~= nil, err) then return nil end
  local offsets, instances
  if type(got) == "table" and cok then
    local tabs = {}
    for _, t in ipairs(got) do if t and #t > 0 then tabs[#tabs + 1] = t end end
    if #tabs > 0 then
      local mok, o, i = pcall(straggler.reduced_waits, #tabs == 1 and tabs[1] or nsl.concat_tables(tabs), args)
      if mok and o then offsets, instances = o, i end
    end
  end
  -- whether rank 0 matched any instance (its flag is the one sent), then what it matched
  local flag = nsl.table{{"matched", nsl.rep(offsets and 1 or 0, 1)}}
  flag, err = mpi.bcast_table(flag)
  if not mpi.all_ok(flag ~= nil, err) then return nil end
  if flag.matched[1] == 1 then
    offsets, err = mpi.bcast_table(offsets)
    if not mpi.all_ok(offsets ~= nil, err) then return nil end
    instances, err = mpi.bcast_table(instances)
    if not mpi.all_ok(instances ~= nil, err) then return nil end
  end
  local n_gpus, waits
  local ok
  ok, err = pcall(function()
    ops = ops or gpu_ops.table(view, OPS)
    -- (M.gpus' GPUs: the operations' (report, device) that can be placed)
    n_gpus = #ops:select{"report", "device"}:filter(on_gpu(ops)):group_by("report", "device"):keys()
    if flag.matched[1] == 1 and coll then
      waits = straggler.place_waits(coll:with("report", coll.report + first), offsets, instances)
      waits = waits:with("report", waits.report - first)
    end
  end)
  if not mpi.all_ok(ok, err) then return nil end
  local totals = mpi.allreduce(nsl.column{n_gpus, #view.nvtx > 0 and 1 or 0}, "sum")
  if totals[1] < 2 then waits = nil end
  return {waits = waits or nsl.table{{"report", nsl.rep(0, 0)}}, ops = ops, nvtx = totals[2] > 0}
end

--- The collective part of the distributed form, on every process over view
-- (its reports; first: the whole trace's number of its report 0).  Returns
-- the tables rank 0 reads (M.reduced): ledger_form (mode 0: the processes
-- built the ledger; 1: rank 0 builds it over the whole trace), and with
-- mode 0 ledger (M.build's rows of the process's GPUs, without the rank
-- label) and ledger_host (M.host_by_range's sums).
function M.reduce(view, args, first)
  local mpi = nsl.mpi
  local whole = {ledger_form = nsl.table{{"mode", nsl.rep(1, 1)}}}
  local it = M.reduced_steps(view, args)
  if it == false then return whole end
  local r = M.reduce_waits(view, first, MATCH)
  if not r then return whole end
  local l
  local ok, err = pcall(function() l = M.build(view, {steps = it, waits = r.waits, ops = r.ops}) end)
  if not mpi.all_ok(ok, err) then return whole end
  local sums = M.host_by_range(view, l.host, r.nvtx, true)
  return {ledger_form = nsl.table{{"mode", nsl.rep(0, 1)}}, ledger = M.unlabelled(l.ledger),
          ledger_host = sums or nsl.table{{"range", nsl.column{""}:gather(nsl.rep(0, 0))}, {"time", nsl.rep(0, 0)},
                                          {"gaps", nsl.rep(0, 0)}}}
end

--- The rows of M.build's ledger t as a process sends them: without the rank
-- label, which rank 0 makes again from the whole trace's report names
-- (M.reduced).
function M.unlabelled(t)
  local cols = {}
  for _, c in ipairs(t:columns()) do if c ~= "rank" then cols[#cols + 1] = c end end
  return t:select(cols)
end

--- On rank 0: the ledger and its host table from the tables of M.reduce
-- gathered from every process (parts) -- t (with rank labels from trace's
-- report names, as M.build makes them), host (M.host_by_range's); false
-- when the processes left the ledger to rank 0 (ledger_form's mode 1).
function M.reduced(trace, parts)
  local f = parts.ledger_form
  if not f or #f == 0 or f.mode[1] ~= 0 then return false end
  local t = parts.ledger
  -- M.build's order: every GPU's run (step 0), then every GPU's steps; each process sent its GPUs' in that order
  local run = t.step:eq(0)
  t = t:take(nsl.concat(run:indices(), (~run):indices()))
  local names = trace.reports.name:totable()
  local rep, dev = t.report:totable(), t.device:totable()
  local rank = {}
  for i = 1, #t do rank[i] = (names[rep[i] + 1] or tostring(rep[i])) .. ":gpu" .. tostring(dev[i]) end
  local cols = {"report", "rank"}
  for _, c in ipairs(t:columns()) do if c ~= "report" then cols[#cols + 1] = c end end
  t = t:with("rank", #rank > 0 and nsl.column(rank) or nsl.column{""}:gather(nsl.rep(0, 0))):select(cols)
  return t, M.host_by_range_of(parts.ledger_host)
end

--- What the launching threads did while their GPU sat idle for a launch:
-- for every row of host (M.build's idle_host rows; rows, when given, the
-- 0-based rows to take), the innermost NVTX range, OS runtime call and CUDA
-- call of the launching thread that overlap most the last `time` ns before
-- the launch call ended (the idle part of the row: the GPU was busy before
-- it) -- nsl.host.attribute by launcher.  Returns a table report, pid, tid,
-- group, time, and <source>_text, <source>_ov for each source the trace has
-- (nvtx, osrt, api; NULL text: none).  name: the caller's, under which
-- the rows found are kept in the column cache of a trace of one report
-- (nsl.host.attribute's keep).
function M.host_activity(trace, host, rows, name)
  if rows then host = host:take(rows) end
  local d = M.host_intervals(host)
  -- (a distributed run reads the host tables of these rows' reports alone)
  local a = hostmod.attribute(d, hostmod.sources_of(trace, #d > 0 and d.report:unique():totable() or {}), true,
                              name and {trace = trace, name = name})
  return M.host_activity_of(host, a)
end

--- The intervals M.host_activity attributes, one per row of host (M.build's
-- idle_host rows), for nsl.host.attribute by launcher: report, pid,
-- launch_tid, start, stop, dur.
function M.host_intervals(host)
  return nsl.table{{"report", host.report}, {"pid", host.pid}, {"launch_tid", host.tid},
                   {"start", host.he - host.time}, {"stop", host.he}, {"dur", host.time}}
end

--- M.host_activity's table of host's rows and a, the attribution of
-- M.host_intervals(host) (the same rows; made elsewhere along with other
-- intervals, nsl.host.attribute giving each interval's attribution alone).
function M.host_activity_of(host, a)
  local cols = {{"report", host.report}, {"pid", host.pid}, {"tid", host.tid}, {"group", host.group},
                {"time", host.time}}
  for _, key in ipairs{"nvtx", "osrt", "api"} do
    if a:coltype(key .. "_text") then
      cols[#cols + 1] = {key .. "_text", a[key .. "_text"]}
      cols[#cols + 1] = {key .. "_ov", a[key .. "_ov"]}
    end
  end
  return nsl.table(cols)
end

--- The series of a stacked-bar figure of ledger rows t (one bar a row): the
-- lines in order, idle_htod drawn with idle_sync (the palette has eight
-- colours).
function M.figure_series(t)
  local series = {}
  for _, line in ipairs(M.lines) do
    if line == "idle_sync" then
      series[#series + 1] = {label = "idle_sync + idle_htod", values = (t.idle_sync + t.idle_htod):totable()}
    elseif line ~= "idle_htod" then
      series[#series + 1] = {label = line, values = t[line]:totable()}
    end
  end
  series[#series + 1] = {label = M.remainder, values = t[M.remainder]:totable()}
  return series
end

--- The step windows of every group: arrays group, lo, hi, step (1-based),
-- from it (nsl.iterations.find): the step program's executions per device
-- (JAX), the marker windows of the report, or the step ranges of the process
-- that launched most of the device's work; each window clipped to start
-- where the group's previous one ended.
function M.step_windows(it, work, keys)
  local iterations = require("nsl.iterations")
  local W, by
  if it.mode == "jax" then
    local st = it.steps:sort("report", "device", "iter")
    W = {report = st.report:totable(), device = st.device:totable(), start = st.start:totable(),
         stop = st.stop:totable()}
    by = "device"
  else
    local t = iterations.windows(it):sort("report", "pid", "iter", "start")
    W = {report = t.report:totable(), pid = t.pid:totable(), start = t.start:totable(), stop = t.stop:totable()}
    by = it.mode == "range" and "pid" or "report"
  end
  -- the process that launched most of each group's work
  local main_pid = {}
  if by == "pid" and work.pid then
    local a = work:filter(~work.pid:isnull()):group_by("group", "pid"):agg{"n=count"}:sort("group", "-n")
    for i = 1, #a do
      if main_pid[a.group[i]] == nil then main_pid[a.group[i]] = a.pid[i] end
    end
  end
  -- each report's step windows, in their order: a group reads its report's alone (O(windows + groups), not
  -- their product: a job of 1,024 ranks has 1,024 groups and 1,024 times the steps)
  local of_report = {}
  for i = 1, #W.start do
    local list = of_report[W.report[i]]
    if not list then list = {}; of_report[W.report[i]] = list end
    list[#list + 1] = i
  end
  local out = {group = {}, lo = {}, hi = {}, step = {}}
  for k = 1, #keys do
    local gi = k - 1
    local rep, dev = keys.report[k], keys.device[k]
    local prev, n = nil, 0
    for _, i in ipairs(of_report[rep] or {}) do   -- one Lua step per step window (steps, not events)
      local mine = (by == "device" and W.device[i] == dev) or (by == "pid" and W.pid[i] == main_pid[gi]) or
                   by == "report"
      if mine then
        local lo, hi = W.start[i], W.stop[i]
        if prev and lo < prev then lo = prev end
        if hi > lo then
          n = n + 1
          out.group[#out.group + 1], out.lo[#out.lo + 1], out.hi[#out.hi + 1], out.step[#out.step + 1] = gi, lo, hi, n
          prev = hi
        end
      end
    end
  end
  return out
end

return M
