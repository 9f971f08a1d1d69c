-- nsl.distributed -- an analysis run by the processes of an MPI job
-- (`mpirun -np P nsl run NAME TRACE...`, `srun nsl run ...`).
--
-- The reports of the trace are split among the processes, each reading
-- only its share (src/mpi/dist.c).  MPI rank 0 prints and writes exactly
-- what a one-process run prints and writes:
--
--  * an analysis with a distributed form,
--      distributed = {
--        step = function(view, args) return {name = table, ...} end,
--        collective = function(view, args, first) return {name = table, ...} end,   -- optional
--        combine = function(trace, parts, args, out) ... end,   -- optional
--        uses = {"straggler", ...},   -- optional: analyses it runs (out:run)
--      }
--    runs step on every process over a trace of its own reports (times on
--    the whole trace's clock; an integer `report` column numbers reports as
--    the whole trace does once it arrives on rank 0); the tables (native
--    column buffers) are gathered on rank 0 and concatenated in report order
--    into parts[name], and combine produces the output there -- without a
--    combine, run(trace, args, out, parts).  The steps of the analyses it
--    uses run beside its own (with their default arguments), their tables
--    under "ANALYSIS.NAME": out:run(ANALYSIS, ..., {parts = ...}) hands
--    them over.  Every process returns the same
--    names.  combine may still read the whole trace: what it reads of other
--    processes' reports is asked of them then.  collective runs on every
--    process once every step has succeeded (first: the whole trace's number
--    of the view's report 0, for report numbers that mean the same on every
--    process: `report` + first), and may exchange with the
--    others through nsl.mpi (gather, bcast_table, agree): every process
--    makes the same calls in the same order, a failure agreed on first (a
--    process that raises before a call the others make would leave them
--    waiting); its tables are gathered with the step's.  The analyses an
--    analysis uses run their steps only, not their collective parts (it
--    hands them what those would find: diagnose its steps);
--  * any other analysis runs on rank 0 over the whole trace, whose tables
--    are read by every process for its share and gathered when first used.
--    An analysis may declare row filters that drop, where the rows are
--    read, rows it would drop itself (so rank 0 receives only the rows it
--    uses; with a distributed form, they hold for what rank 0 reads of the
--    whole trace when the form does not apply):
--      gather = {
--        span = true,   -- where gets the trace's span (window.span), else nil
--                       -- (or function(args) -> whether it needs it)
--        where = function(args, lo, hi)
--          return {kernels = {{"start", "<", to}, {"name", "imatch", "nccl"},
--                             {"device", "in", {0, 1}}}, ...}
--        end,
--      }
--    conditions {column, op, value}, all to hold: op "match" (a regex on
--    a string column; "imatch" ignoring case), "in" (a list of integers),
--    == ~= < <= > >= (an integer); NULLs never pass; a condition on a
--    column a report lacks, or on `report` or `dur` (derived), filters
--    none of its rows.  The span is measured over all rows, and
--    window.span of the filtered trace still gives it.  where returning
--    nil filters nothing; where raising fails the run as run raising would
--    (a bad --arg: the same message).  NSL_MPI_FILTERS=0 turns filters off
--    (tests, benchmarks).
--
-- No process waits for one that failed: the processes agree on success
-- (an all-reduce) after opening their shares and after the steps, before
-- any data moves; the failing process's message names its MPI rank.
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local tables = require("nsl.util.tables")
local window = require("nsl.window")

local M = {}

local mpi = nsl.mpi
local split_of = setmetatable({}, {__mode = "k"})   -- whole trace (rank 0) -> its split (dist)
local weighed = {}   -- {table name, bytes rank 0 moved to gather it} of the steps' tables, for NSL_MPI_STATS

--- A trace of some reports (0-based indices into trace's reports, report
-- numbers 0.. in that order) when trace is a distributed run's whole trace
-- on rank 0: what is read of it comes from those reports' processes alone.
-- nil for any other trace (where the caller reads the trace itself).
function M.report_trace(trace, reports)
  local dist = split_of[trace]
  return dist and dist:subtrace(reports) or nil
end

--- Computations on one report that rank 0 may ask of the process holding
-- it (M.call), by name: function(trace, t) -> a table, trace that report
-- alone (a trace of one report, as M.report_trace gives it), t what rank 0
-- sent.  A module registers its own (M.remote["nsl.MODULE.NAME"] = fn)
-- when it loads; a process asked for one loads the module the name names.
M.remote = {}

--- The tables computation name makes of tables[i] on reports[i] (0-based)
-- of trace, each made by the process that holds the report when trace is a
-- distributed run's whole trace on rank 0 (the answers move, not the
-- reports' rows; the processes work at once, rank 0 on its own reports
-- after): a list in the order given; nil for any other trace (where the
-- caller computes them itself).  Raises the first failure.
function M.call(trace, reports, name, tables)
  local dist = split_of[trace]
  if not dist then return nil end
  local res, far, far_t, at = {}, {}, {}, {}
  for i, r in ipairs(reports) do
    if dist:owner(r) ~= 0 then far[#far + 1], far_t[#far_t + 1], at[#at + 1] = r, tables[i], i end
  end
  if #far > 0 then
    for k, t in ipairs(dist:call(far, name, far_t)) do res[at[k]] = t end
  end
  for i, r in ipairs(reports) do
    if not res[i] then res[i] = assert(M.remote[name], name)(dist:subtrace({r}), tables[i]) end
  end
  return res
end

--- Serves rank 0's M.call of computation name on report (0-based) of this
-- process's share (dist:serve calls it): the table, or nil and a message.
function M.serve_call(dist, report, name, t)
  local ok, res = xpcall(function()
    local fn = M.remote[name]
    if not fn then
      local mod = name:match("^(.*)%.[^.]+$")
      if mod then pcall(require, mod) end
      fn = M.remote[name]
    end
    if not fn then error("no computation " .. name, 0) end
    return fn(dist:subtrace({report}), t)
  end, nsl.error_handler)
  if ok then return res end
  if nsl.is_error(res) then return nil, res.message end
  return nil, tostring(type(res) == "table" and res.bug or res)
end

--- A step's table of the span of its view's events (window.span: one row,
-- lo and hi; none without events), which M.set_span makes the whole trace's
-- span on rank 0: its origin (every printed "from start" time) is then
-- known without reading every report's events.
function M.span_table(view)
  local lo, hi = window.span(view)
  local n = lo and 1 or 0
  return nsl.table{{"lo", nsl.rep(lo or 0, n)}, {"hi", nsl.rep(hi or 0, n)}}
end

--- On rank 0: the whole trace's span from the processes' M.span_table
-- gathered (t; nil or no row: nothing), unless it is known already.
function M.set_span(trace, t)
  if t and #t > 0 and not window.known_origin(trace) then window.set_span(trace, t.lo:min(), t.hi:max()) end
end

--- The per-report steps of analysis a: every process runs step over its
-- view; rank 0 gets parts (name -> table).  Returns true, parts (nil
-- elsewhere), or false and the first failure's message (on rank 0).
local function steps(runner, a, args, dist, opts)
  local first = dist:share()
  local view
  -- its form and those of the analyses it runs (their default arguments)
  local forms = {{a.distributed, "", args, own = true}}
  local ok, res = xpcall(function()
    view = dist:view()
    for _, name in ipairs(a.distributed.uses or {}) do
      local u = assert(runner.load_analysis(name))
      forms[#forms + 1] = {u.distributed, name .. ".", assert(runner.parse_args(u, {}))}
    end
    local res = {}
    for _, f in ipairs(forms) do
      local got = f[1].step(view, f[3])
      if type(got) ~= "table" then return got end
      for tname, t in pairs(got) do res[f[2] .. tname] = t end
    end
    return res
  end, nsl.error_handler)
  if ok and type(res) ~= "table" then
    ok, res = false, {bug = "distributed.step must return a table of tables", traceback = ""}
  end
  local agreed, why = mpi.agree(ok, not ok and runner.failure(a, res, opts.traces) or nil)
  if not agreed then return false, why end
  -- the collective parts, now that every process has made its steps and reaches them
  local cerr
  ok, cerr = xpcall(function()
    for _, f in ipairs(forms) do
      if f.own and f[1].collective then
        for tname, t in pairs(f[1].collective(view, f[3], first)) do res[f[2] .. tname] = t end
      end
    end
  end, nsl.error_handler)
  agreed, why = mpi.agree(ok, not ok and runner.failure(a, cerr, opts.traces) or nil)
  if not agreed then return false, why end
  -- every process sends the same names (the step's contract); a failure to
  -- send or read one is agreed on before anyone goes on
  local parts, gerr = {}, nil
  for _, name in ipairs(tables.sorted_keys(res)) do
    local _, before = mpi.seconds()
    local got, err = mpi.gather(res[name], first)
    local _, after = mpi.seconds()
    weighed[#weighed + 1] = {name, after - before}
    if not got then gerr = gerr or err
    elseif type(got) == "table" then
      local cok, t = pcall(mpi.concat, got)
      if cok then parts[name] = t else gerr = gerr or tostring(t) end
    end
  end
  agreed, why = mpi.agree(gerr == nil, gerr and string.format("analysis '%s': %s", a.name, gerr))
  if not agreed then return false, why end
  return true, parts
end

-- Where `dur` is among the columns nsl.gpu_ops.table gives first with opts (nil: not).
local function dur_at(opts)
  for i, c in ipairs(opts.columns or gpu_ops.default_columns) do if c == "dur" then return i end end
  return nil
end

--- Table t without its `dur` column, which is stop - start (as a load
-- derives it: NULL where either is) and M.with_dur makes again where the
-- table arrives: a step sends fewer bytes (a ninth of the GPU operations'
-- default columns, a fifth of the CUDA calls').  t itself when it has none.
function M.without_dur(t)
  local cols = {}
  for _, c in ipairs(t:columns()) do if c ~= "dur" then cols[#cols + 1] = c end end
  return #cols < #t:columns() and t:select(cols) or t
end

--- Table t of M.without_dur with `dur` made again, its columns in the
-- order cols (a list of its names and "dur").
function M.with_dur(t, cols)
  return t:with("dur", t.stop - t.start):select(cols)
end

--- The GPU operations of trace (nsl.gpu_ops.table(trace, opts)) for a
-- distributed step, with `part` 0/1/2 for kernels, memcpy, memset rows;
-- without `dur` (M.without_dur), which M.ops_combine makes again.
function M.ops_step(trace, opts)
  local ops = gpu_ops.table(trace, opts)
  return M.without_dur(ops:with("part", gpu_ops.row_parts(trace, #ops)))
end

--- The gathered tables of M.ops_step (made with the same opts) as
-- nsl.gpu_ops.table gives them for the whole trace: the kernels, the memcpy,
-- the memset, each in report order; columns in its order, `dur` made again
-- as a load makes it.
function M.ops_combine(ops, opts)
  local cols = {}
  for _, c in ipairs(ops:columns()) do if c ~= "part" then cols[#cols + 1] = c end end
  ops = ops:take(ops.part:argsort())
  local at = dur_at(opts)
  if not at then return ops:select(cols) end
  table.insert(cols, at, "dur")
  return M.with_dur(ops, cols)
end

--- The span (window.span) of the whole trace, measured by every process
-- over its own reports (collective); lo, hi on rank 0 (nil: no events).
local function whole_span(dist)
  local ok, t = pcall(function() return M.span_table(dist:view()) end)
  local got = mpi.gather(ok and t or nil, 0)
  if type(got) ~= "table" then return nil end
  local glo, ghi
  for _, g in ipairs(got) do
    if g and #g > 0 then
      local a, b = g.lo[1], g.hi[1]
      if not glo or a < glo then glo = a end
      if not ghi or b > ghi then ghi = b end
    end
  end
  return glo, ghi
end

--- Whether analysis a's row filters (a.gather) apply, and the whole
-- trace's span when they ask for it (collective: every process calls it;
-- the span on rank 0 only).
local function filter_plan(a, args, dist)
  local g = a.gather
  if type(g) ~= "table" then return false end
  -- rank 0 decides for all (0 off, 1 on, 2 on with the span): an
  -- environment that differs between nodes never splits the collectives
  local span = g.span
  if type(span) == "function" then
    local ok, want = pcall(span, args)
    span = ok and want
  end
  local plan = mpi.bcast(os.getenv("NSL_MPI_FILTERS") == "0" and 0 or span and 2 or 1)
  if plan == 0 then return false end
  if plan == 1 then return true, nil end
  local lo, hi = whole_span(dist)
  return true, {lo, hi}
end

--- Declares analysis a's row filters on dist (rank 0, before the analysis
-- reads a table).  Raises what where raises (a bad window argument fails
-- as the analysis itself would, a bad declaration as a bug in it).
local function declare_filters(a, args, dist, span)
  local where = a.gather.where(args, span and span[1], span and span[2])
  if type(where) ~= "table" then return end
  for name, conds in pairs(where) do dist:filter(name, conds) end   -- each table's filter stands alone
end

--- Runs analysis a (its args checked) on opts.traces as one process of
-- the job; returns the exit code, the same on every process.
function M.run(runner, a, args, opts)
  local clock0 = mpi.wtime()
  local _, rank = mpi.start()
  local root = rank == 0
  local dist, err = mpi.open(opts.traces)
  if not dist then return runner.fail(1, err or "another MPI rank could not read its share") end
  local parts
  local t_open, t_steps = mpi.wtime(), nil
  if a.distributed then
    local ok, p = steps(runner, a, args, dist, opts)
    if not ok then return runner.fail(1, p or "another MPI rank failed") end
    parts = p
  end
  local filtered, span = filter_plan(a, args, dist)
  t_steps = mpi.wtime()
  if not root then
    dist:serve()
    return mpi.bcast(0)
  end
  local okt, code = pcall(function()
    local trace = dist:trace()
    split_of[trace] = dist
    if span and span[1] then window.set_span(trace, span[1], span[2]) end
    return runner.emit(a, trace, opts, function(out)
      if filtered then declare_filters(a, args, dist, span) end
      if not parts then return a.run(trace, args, out) end
      if a.distributed.combine then return a.distributed.combine(trace, parts, args, out) end
      return a.run(trace, args, out, parts)
    end)
  end)
  dist:quit()
  if not okt then code = runner.fail(runner.exit_code(code), tostring(nsl.is_error(code) and code.message or code)) end
  local stats = os.getenv("NSL_MPI_STATS")
  if stats and stats ~= "" and stats ~= "0" then   -- for benchmarks and tests: how the run went
    local secs, bytes = mpi.seconds()
    local t = mpi.wtime()
    io.stderr:write(string.format("nsl: mpi: %d processes, %d reports, %s form, rank 0: %.3f s in communication, " ..
                                  "%.0f bytes moved, %.3f s in all (open %.3f, steps and gather %.3f, rank 0 alone " ..
                                  "%.3f)\n", (mpi.start()), select(3, dist:share()),
                                  a.distributed and "distributed" or "gathered", secs, bytes, t - clock0,
                                  t_open - clock0, t_steps - t_open, t - t_steps))
    local loads, calls = dist:stats()
    io.stderr:write(string.format("nsl: mpi: rank 0 read %d tables of other processes' reports and asked %d " ..
                                  "computations of them\n", loads, calls))
    if #weighed > 0 then   -- what each table of the steps weighed on the wire, heaviest first
      table.sort(weighed, function(x, y) if x[2] ~= y[2] then return x[2] > y[2] end return x[1] < y[1] end)
      local w = {}
      for _, x in ipairs(weighed) do w[#w + 1] = string.format("%s %.0f", x[1], x[2]) end
      io.stderr:write("nsl: mpi: gathered (bytes): " .. table.concat(w, ", ") .. "\n")
    end
  end
  return mpi.bcast(code)
end

return M
