-- nsl -- the Lua face of nsl: the C core (traces, tables, columns, kernels)
-- plus the helpers written in Lua.  `local nsl = require("nsl")`.
local core = require("nsl.core")

local M = {}
for k, v in pairs(core) do M[k] = v end

M.version = core.version()

-- Methods written in Lua, added to the userdata types.
local methods = core.methods()

--- t:rows([first, last]) -> iterator over rows as Lua tables {col = value}.
-- For printing and small results; analyses use whole-column operations.
function methods.table.rows(t, first, last)
  local names = t:columns()
  local n = #t
  first, last = first or 1, math.min(last or n, n)
  local cols = {}
  for k, name in ipairs(names) do cols[k] = t:col(name) end
  local i = first - 1
  return function()
    i = i + 1
    if i > last then return nil end
    local row = {}
    for k, name in ipairs(names) do row[name] = cols[k][i] end
    return row
  end
end

--- t:print([n]) -- prints the first n rows (20 by default) as aligned text.
function methods.table.print(t, n)
  print(require("nsl.report").text(t, {limit = n or 20}))
end

--- t:slices(col) -> slice: slice(v) is the table of the rows of t whose
-- column col equals v, in their order (no rows when none has v).  One
-- grouping and one stable sort serve every slice, so taking the slices of
-- all values costs O(rows) in all -- where a filter per value would cost
-- O(values x rows) (per rank, per report over thousands of them).
function methods.table.slices(t, col)
  local g = t:group_by(col)
  local order = g:ids():argsort()          -- the rows, group by group, each group in row order
  local keys, n = g:keys()[col], g:agg{"n=count"}.n
  local at, first = {}, 0
  for i = 1, #n do
    local v = keys[i]
    if v ~= nil then at[v] = {first, n[i]} end
    first = first + n[i]
  end
  return function(v)
    local a = at[v]
    if not a then return t:head(0) end
    return t:take(order:gather(M.range(a[2]) + a[1]))
  end
end

core.metatable("table").__tostring = function(t)
  return require("nsl.report").text(t, {limit = 20})
end

--- nsl.mpi.concat(got) -> the tables of a gather's answer on rank 0 (got:
-- one per process, false where a process sent none) as one table, rows in
-- process order; a table without rows is left out (a process with nothing
-- of a kind may not know its columns' types): all empty, the first.
function M.mpi.concat(got)
  local tabs, first = {}, nil
  for _, t in ipairs(got) do
    first = first or t or nil
    if t and #t > 0 then tabs[#tabs + 1] = t end
  end
  if #tabs == 0 then return first end
  return #tabs == 1 and tabs[1] or M.concat_tables(tabs)
end

--- nsl.mpi.exchange_rows(t, dest) (collective) -> the rows every process
-- sent this one, as one table (the senders in rank order, each one's rows
-- in its order; no rows: t's columns), from t's rows sent to the processes
-- dest names (an i64 column, one 0-based MPI rank per row); nil and a
-- message as nsl.mpi.gather's.  One grouping of t by destination
-- (t:slices), then one exchange (nsl.mpi.exchange): what a process sends
-- and receives grows with its rows, not with the processes times the rows.
function M.mpi.exchange_rows(t, dest)
  local P = M.mpi.start()
  local list = {}
  if #t > 0 then
    local cols = t:columns()
    local slice = t:with("_to", dest):slices("_to")
    for d = 0, P - 1 do
      local s = slice(d)
      if #s > 0 then list[d + 1] = s:select(cols) end
    end
  end
  local got, err = M.mpi.exchange(list)
  if not got then return nil, err end
  local all = M.mpi.concat(got)
  return all and #all > 0 and all or t:head(0)
end

--- nsl.mpi.owners(keys) -> an i64 column: the MPI rank that owns each
-- row's string of column keys (a hash of its bytes, FNV-1a, modulo the
-- processes), the same on every process whatever its dictionary; NULL:
-- rank 0.  Each distinct string is hashed once.
function M.mpi.owners(keys)
  local P = M.mpi.start()
  if P == 1 or #keys == 0 then return M.rep(0, #keys) end
  local u = keys:unique()
  local own = {}
  for i = 1, #u do
    local s, h = u[i], 2166136261
    if s ~= nil then
      for k = 1, #s do h = ((h ~ s:byte(k)) * 16777619) & 0xffffffff end
    end
    own[i] = s ~= nil and h % P or 0
  end
  local j = M.table{{"k", keys}}:join(M.table{{"k", u}, {"o", M.column(own)}}, {"k"}, {"o"})
  return M.coalesce(j.o, 0)
end

--- nsl.mpi.all_ok(ok, err) (collective) -> true when every process passed
-- a true ok, else false; where ok is false it raises err instead, so that
-- the run fails with that process's message while the others, told by the
-- same agreement, stop what they were doing together.
function M.mpi.all_ok(ok, err)
  if M.mpi.agree(ok) then return true end
  if not ok then error(err, 0) end
  return false
end

--- nsl.error_handler(e) -- the message handler of every protected run of
-- an analysis or a piece of one (xpcall): nsl errors of the input or the
-- environment (nsl.fail, a source's errors) stay as they are, one line for
-- the user.  Anything else is a bug in the script -- a Lua error, or a
-- kernel's refusal of its arguments (an nsl error marked internal) -- and
-- becomes {bug = message, traceback = ...} (the engine reports it).
function M.error_handler(e)
  if M.is_error(e) and not e.internal then return e end
  if type(e) == "table" and e.bug then return e end   -- handled by an inner run (diagnose's checks): its traceback
  return {bug = M.is_error(e) and e.message or tostring(e), traceback = debug.traceback("", 2)}
end

--- nsl.coalesce(a, b) -> a where it is not NULL, else b (a column of a's
-- type and length, or a single value); a itself when it has no NULL.
function M.coalesce(a, b)
  local missing = a:isnull()
  if missing:count() == 0 then return a end
  return M.where(missing, b, a)
end

--- nsl.concat_tables(list [, names]) -> one table of the columns `names`
-- (default: the first table's columns) of the tables in list, their rows
-- one table after the other; nil for an empty list.  A column of a single
-- table is taken as it is (no copy).
function M.concat_tables(list, names)
  if #list == 0 then return nil end
  names = names or list[1]:columns()
  local cols = {}
  for i, name in ipairs(names) do
    local parts = {}
    for j, t in ipairs(list) do parts[j] = t:col(name) end
    cols[i] = {name, #parts == 1 and parts[1] or M.concat(table.unpack(parts))}
  end
  return M.table(cols)
end

--- The names of the trace's threads (trace.threads): a map from
-- "report/pid/tid" to the thread's name; empty without the table.
function M.thread_names(trace)
  local th, map = trace.threads, {}
  if #th > 0 then
    th:load{"report", "pid", "tid", "name"}
    for i = 1, #th do map[string.format("%s/%s/%s", th.report[i], th.pid[i], th.tid[i])] = th.name[i] end
  end
  return map
end

--- nsl.is(v, kind) -> true when v is a column/table/trace/groups/intervals.
function M.is(v, kind) return core.type(v) == kind end

--- nsl.readable(path) -> true when path opens for reading, else false and
-- a message (nsl.stat says what it is; this says whether it can be read).
-- In C (lio.c): opened without blocking, a FIFO or a device is not readable.

--- nsl.input_refused(what, target, inputs) -> nil when target may be
-- written, else the one line that refuses it: target is the same file
-- (device and inode, whatever the path says) as one of inputs (paths).
-- Every command that writes asks it before writing, so no output ever
-- replaces an input.  what names the writer ("bundle", "--out").
function M.input_refused(what, target, inputs)
  for _, p in ipairs(inputs or {}) do
    if p and core.same_file(target, p) then
      return string.format("%s: '%s' is an input; inputs are never overwritten", what, target)
    end
  end
  return nil
end

--- nsl.selectors(list) -> the report selectors of --report values (each a
-- name or a 0-based index, several in one value separated by commas), or
-- nil when none was given.
function M.selectors(list)
  local out = {}
  for _, v in ipairs(list or {}) do
    for part in tostring(v):gmatch("[^,]+") do
      local s = part:match("^%s*(.-)%s*$")
      if s ~= "" then out[#out + 1] = s end
    end
  end
  return #out > 0 and out or nil
end

--- nsl.select(trace, paths, sel) -> trace, or nil, message, exit code: the
-- selection of the command line applied to trace (just opened from paths,
-- no table read yet): only the reports that sel.report (--report values)
-- names (nsl.selectors; none: every report), renumbered 0.. in trace order
-- (trace:keep_reports); only the rows of the window sel.from..sel.to and of
-- device sel.device (nsl.window.select: a second open of paths finds the
-- trace's start, steps and devices).  An unknown report, a bad or empty
-- window, or an unknown device is a usage error (code 2), naming the
-- inputs; trace is closed then.
local selected = setmetatable({}, {__mode = "k"})   -- trace -> the selection's options, as shell words
local selected_alone = setmetatable({}, {__mode = "k"})   -- trace -> report -> its window and device alone

function M.select(trace, paths, sel)
  sel = sel or {}
  local function refuse(msg)
    trace:close()
    return nil, string.format("%s: %s", require("nsl.report").files(paths), msg), 2
  end
  local reports = M.selectors(sel.report)
  local words = {}
  if reports then
    local ok, kerr = trace:keep_reports(reports)
    if not ok then return refuse("--report: " .. kerr) end
    words[1] = "--report " .. M.shell_word(table.concat(reports, ","))
  end
  local function given(v) return v ~= nil and v ~= "" end
  if given(sel.from) or given(sel.to) or given(sel.device) then
    local probe, perr = M.open(paths)
    if not probe then
      trace:close()
      return nil, perr, 1
    end
    if reports then probe:keep_reports(reports) end
    local ok, w, alone = pcall(require("nsl.window").select, trace, probe, sel)
    probe:close()
    if not ok then return refuse(M.is_error(w) and w.message or tostring(w)) end
    if not w then return refuse(alone) end
    table.move(w, 1, #w, #words + 1, words)
    selected_alone[trace] = alone
  end
  if #words > 0 then selected[trace] = words end
  return trace
end

--- nsl.open_selected(paths, sel) -> trace, or nil, message, exit code: the
-- trace of paths (nsl.open) with the selection sel (the command's options:
-- report, from, to, device; nsl.select).  Every command that opens the
-- user's traces opens them so; a failed open is code 1.
function M.open_selected(paths, sel)
  local trace, err = M.open(paths)
  if not trace then return nil, err, 1 end
  return M.select(trace, paths, sel)
end

--- nsl.trace_args(trace) -> the inputs of trace as shell words, with the
-- --report, --from, --to and --device it was opened with: a printed
-- command that runs on the same trace the user analysed.
function M.trace_args(trace)
  local words = {}
  for i, p in ipairs(trace:inputs()) do words[i] = M.shell_word(p) end
  for _, w in ipairs(selected[trace] or {}) do words[#words + 1] = w end
  return table.concat(words, " ")
end

--- nsl.report_input(trace, r) -> {file, name}: the input that holds report r
-- (0-based) and, for a report inside an archive (bundle.zip:member), the
-- name that --report selects it by (its 0-based index among the archive's
-- reports when its name was made unique in this trace); name is nil for
-- an export on its own.
function M.report_input(trace, r)
  local path = trace.reports.path[r + 1] or "TRACE"
  local file = path:match("^(.-%.zip):")
  if not file then return {file = path} end
  local name = trace.reports.name[r + 1]
  if name:find("#", 1, true) then
    local k = 0
    for i = 1, r do if (trace.reports.path[i] or ""):sub(1, #file + 1) == file .. ":" then k = k + 1 end end
    name = tostring(k)
  end
  return {file = file, name = name}
end

--- nsl.report_args(trace, r) -> shell words that open report r (0-based)
-- alone: its export, or its archive with --report NAME, and the window and
-- device the trace was opened with (nsl.select), counted from that report's
-- first event.  Every command an analysis prints for one rank names it so.
function M.report_args(trace, r)
  local at = M.report_input(trace, r)
  local words = {M.shell_word(at.file)}
  if at.name then words[2] = "--report " .. M.shell_word(at.name) end
  local alone = selected_alone[trace] and selected_alone[trace][r]
  for _, w in ipairs(alone or {}) do words[#words + 1] = w end
  return table.concat(words, " ")
end

return M
