-- nsl.runs -- the runs of a trace that several runs were opened into
-- (`nsl run compare a.sqlite b.zip c.sqlite`): which reports belong to which
-- run, and the run's label.
--
-- A trace is a list of reports (one per SQLite export; a bundle or an
-- nsys-jax-combine archive gives one per member).  Runs group them:
--   "file"    (the default of compare) the reports read from one input file
--             form one run: an export is a run, a bundle of 4 ranks is one
--             run of 4 reports;
--   "report"  every report is a run;
--   "1+2,3+4" explicit: runs separated by ",", the reports of a run by "+",
--             each a 1-based report number or a report name; reports not
--             named belong to no run.
-- Runs keep the order of their first report.  Default run names: the
-- file's name without its folder and extension ("file"), the report name
-- ("report"), the report names joined by "+" (explicit); labels
-- ("1 GPU,2 GPU,4 GPU") replace them in order.
local nsl = require("nsl")

local M = {}

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local function split(s, sep)
  local parts = {}
  for p in (s .. sep):gmatch("(.-)" .. sep:gsub("%p", "%%%0")) do parts[#parts + 1] = trim(p) end
  return parts
end
M.split = split

--- The input file a report was read from: its path when that is a file,
-- else the longest prefix before a ":" that is one (bundle members are
-- "<file>:<member>"), else the path itself.
function M.file_of(path)
  if nsl.readable(path) then return path end
  local best
  local i = 0
  while true do
    i = path:find(":", i + 1, true)
    if not i then break end
    local prefix = path:sub(1, i - 1)
    if prefix ~= "" and nsl.readable(prefix) then best = prefix end
  end
  return best or path
end

local function basename(path)
  local b = path:match("([^/]*)$")
  local stem = b:match("^(.+)%.[^.]+$")
  return stem or b
end

-- Makes names unique: a repeated name gets "#2", "#3", ...
local function unique(names)
  local seen = {}
  for i, n in ipairs(names) do
    if seen[n] then
      local k = 2
      while seen[n .. "#" .. k] do k = k + 1 end
      names[i] = n .. "#" .. k
    end
    seen[names[i]] = true
  end
  return names
end

--- runs.resolve(trace, spec [, labels]) -> R, or raises an nsl error.
-- spec: "file", "report" or an explicit list (above); labels: "" or a
-- comma-separated list, one per run.  R.n runs; R.labels[i], R.names[i]
-- (the default name), R.reports[i] (0-based report indices) and
-- R.paths[i] (their files) of run i (1-based); R.of_report[r + 1]: the
-- 0-based run of report r, -1 for none.
function M.resolve(trace, spec, labels)
  spec = trim(spec or "")
  if spec == "" then spec = "file" end
  local reps = trace.reports
  local nrep = #reps
  local rnames, rpaths = reps.name:totable(), reps.path:totable()
  local R = {n = 0, labels = {}, names = {}, reports = {}, paths = {}, of_report = {}}
  for r = 1, nrep do R.of_report[r] = -1 end
  local function add(report, key, name)
    local run = R.index and R.index[key]
    if not run then
      R.n = R.n + 1
      run = R.n
      R.index = R.index or {}
      R.index[key] = run
      R.reports[run], R.paths[run], R.names[run] = {}, {}, name
    end
    if R.of_report[report + 1] >= 0 then
      nsl.fail(string.format("runs: report %d (%s) is named in two runs", report + 1, rnames[report + 1]), "usage")
    end
    R.of_report[report + 1] = run - 1
    table.insert(R.reports[run], report)
    local file = M.file_of(rpaths[report + 1])
    local seen = false
    for _, p in ipairs(R.paths[run]) do seen = seen or p == file end
    if not seen then table.insert(R.paths[run], file) end
  end
  if spec == "file" then
    for r = 0, nrep - 1 do
      local file = M.file_of(rpaths[r + 1])
      add(r, file, basename(file))
    end
  elseif spec == "report" then
    for r = 0, nrep - 1 do add(r, r, rnames[r + 1]) end
  else
    local by_name = {}
    for r = 1, nrep do by_name[rnames[r]] = r - 1 end
    for i, group in ipairs(split(spec, ",")) do
      local members = {}
      for _, tok in ipairs(split(group, "+")) do
        local r = math.tointeger(tonumber(tok))
        if r then
          if r < 1 or r > nrep then
            nsl.fail(string.format("runs: no report %d (the trace has %d)", r, nrep), "usage")
          end
          r = r - 1
        else
          r = by_name[tok]
          if not r then
            nsl.fail(string.format("runs: no report '%s' (reports: %s)", tok, table.concat(rnames, ", ")), "usage")
          end
        end
        members[#members + 1] = r
      end
      local names = {}
      for k, r in ipairs(members) do names[k] = rnames[r + 1] end
      for _, r in ipairs(members) do add(r, i, table.concat(names, "+")) end
    end
  end
  R.index = nil
  unique(R.names)
  labels = trim(labels or "")
  if labels == "" then
    for i = 1, R.n do R.labels[i] = R.names[i] end
  else
    local list = split(labels, ",")
    if #list ~= R.n then
      nsl.fail(string.format("labels: %d label%s for %d run%s (%s)", #list, #list == 1 and "" or "s", R.n,
                             R.n == 1 and "" or "s", table.concat(R.names, ", ")), "usage")
    end
    local seen = {}
    for i, l in ipairs(list) do
      if l == "" then nsl.fail(string.format("labels: label %d is empty", i), "usage") end
      if seen[l] then nsl.fail(string.format("labels: '%s' is given twice", l), "usage") end
      seen[l] = true
      R.labels[i] = l
    end
  end
  return R
end

--- The 0-based run of each row of a report column (i64; -1: no run).
function M.column(R, report)
  return nsl.column(R.of_report):gather(report:cast("i64"))
end

--- The label of each row of a run column (0-based runs, none -1).
function M.labels(R, run)
  return nsl.column(R.labels):gather(run)
end

--- The 0-based run named by spec (a label, a default name, or a 1-based
-- number), or nil and a message.
function M.find(R, spec)
  spec = trim(spec or "")
  local n = math.tointeger(tonumber(spec))
  for i = 1, R.n do
    if R.labels[i] == spec or R.names[i] == spec then return i - 1 end
  end
  if n and n >= 1 and n <= R.n then return n - 1 end
  return nil, string.format("no run '%s' (runs: %s)", spec, table.concat(R.labels, ", "))
end

return M
