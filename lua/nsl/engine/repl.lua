-- nsl.engine.repl -- the policy of the interactive REPL (src/cli/repl.c is the
-- loop and line editing): help, value printing, commands, completion.
local nsl = require("nsl")
local tables = require("nsl.util.tables")
local report = require("nsl.report")

local M = {}

M.help = [[
nsl REPL -- Lua 5.4 with the nsl library; `trace` is the loaded trace.

  trace.kernels               a table (also memcpy memset api nvtx sync osrt memory samples frames
                              callchains devices processes threads reports); #t rows; t.col a column
  k = trace.kernels
  k:filter(k.dur:gt(1e6))     masks: eq ne lt le gt ge isin match contains isnull; combine with & | ~
  k:sort("-dur"):head(10)     sorting ("-" for descending), first rows
  k:group_by("demangled"):agg{"n=count", "total=sum(dur)", "med=median(dur)", "p99=quantile(dur, 0.99)"}
  k.dur:stats()  k.dur:quantile(0.9)  k.dur:histogram{0, 1e3, 1e4, 1e5}
  nsl.intervals(k.start, k.stop):total()      busy time (union); :gaps() :intersect(b) :subtract(b)
  k:join(trace.api, {"report", "corr"}, {"name"}, "api_")
  trace:sql(0, "SELECT count(*) AS n FROM StringIds")

  =expr or a bare expression prints its value; statements run as in `lua`.
  :tables            row counts of every table
  :open PATH...      open another trace as `trace`
  :run NAME [K=V...] run a shipped analysis (or a script path) on `trace`
  :help              this text
  :quit              leave (also Ctrl-D); Ctrl-C interrupts a running computation
]]

--- A printable rendering of any value: nsl tables as aligned heads with
-- their row count, columns with their type and length, Lua tables briefly.
function M.show(v)
  local kind = nsl.type(v)
  if kind == "table" then
    return report.text(v, {limit = 10, width = nsl.terminal_width()}) .. string.format("\n(%s rows)", report.int(#v))
  elseif kind then
    return tostring(v)
  elseif type(v) == "table" then
    local parts, n = {}, 0
    for k, x in pairs(v) do
      n = n + 1
      if n > 20 then parts[#parts + 1] = "..." break end
      local ks = math.type(k) == "integer" and "" or (tostring(k) .. " = ")
      parts[#parts + 1] = ks .. (type(x) == "string" and string.format("%q", x) or tostring(x))
    end
    return "{" .. table.concat(parts, ", ") .. "}"
  elseif type(v) == "string" then
    return v
  end
  return tostring(v)
end

--- Row counts of every table of the trace.
function M.tables(trace)
  if not trace then return "no trace loaded (:open PATH)" end
  local names, counts = {}, {}
  for _, name in ipairs(trace:tables()) do
    names[#names + 1] = name
    counts[#counts + 1] = #trace[name]
  end
  return report.text(nsl.table{{"table", names}, {"rows", counts}})
end

local function words(s)
  local list = {}
  for w in s:gmatch("%S+") do list[#list + 1] = w end
  return list
end

--- Runs a ":command" line; env is the REPL's global table.  Returns text to print.
function M.command(line, env)
  local cmd, rest = line:match("^:(%S+)%s*(.*)$")
  if cmd == "help" or cmd == "h" then return M.help
  elseif cmd == "tables" then return M.tables(env.trace)
  elseif cmd == "open" then
    local paths = words(rest)
    if #paths == 0 then return "usage: :open PATH..." end
    local tr, err = nsl.open(paths)
    if not tr then return "error: " .. err end
    env.trace = tr
    env.trace_paths = paths
    return string.format("trace: %d report(s)", #tr.reports)
  elseif cmd == "run" then
    local w = words(rest)
    if #w == 0 then return "usage: :run ANALYSIS [KEY=VALUE...]" end
    local runner = require("nsl.engine.runner")
    local a, err = runner.load_analysis(w[1])
    if not a then
      if err:find("did you mean", 1, true) or not w[1]:match("^[%w_]+$") then return "error: " .. err end
      local names = {}   -- nothing close: the names to choose from
      for _, e in ipairs(runner.shipped()) do names[#names + 1] = e.name end
      return string.format("error: no analysis '%s'; the shipped ones: %s", w[1], table.concat(names, " "))
    end
    local args = {}
    for i = 2, #w do args[#args + 1] = w[i] end
    local code = runner.run(a, {args = args, traces = env.trace_paths or {}, format = "text"})
    return code == 0 and "" or string.format("(exit code %d)", code)
  elseif cmd == "quit" or cmd == "q" then return nil, "quit"
  end
  local near = cmd and nsl.closest(cmd, {"help", "tables", "open", "run", "quit"})
  return "unknown command :" .. tostring(cmd) .. (near and (" (did you mean :" .. near .. "?)") or "") .. " (:help)"
end

-- What a method call returns, by the kind of its receiver: completion after
-- `k:group_by("device"):` knows the groups' methods without running the
-- call (which may be slow or change something).
local column_scalars = {type = true, stats = true, sum = true, count = true, min = true, max = true, mean = true,
                        std = true, median = true, quantile = true, histogram = true, totable = true, raw = true,
                        nbytes = true, searchsorted = true}
local returns = {
  table = {filter = "table", take = "table", head = "table", sort = "table", select = "table", with = "table",
           load = "table", join = "table", group_by = "groups", col = "column"},
  groups = {agg = "table", keys = "table", ids = "column"},
  trace = {sql = "table"},
}

-- The expression that ends s: names joined by "." and ":", with balanced
-- (...), {...} and [...] (calls, indexing) between them.
local function trailing_expression(s)
  local i = #s
  while i >= 1 do
    local c = s:sub(i, i)
    if c == ")" or c == "]" or c == "}" then
      local open, depth = c == ")" and "(" or c == "]" and "[" or "{", 0
      while i >= 1 do
        local d = s:sub(i, i)
        if d == c then depth = depth + 1
        elseif d == open then
          depth = depth - 1
          if depth == 0 then break end
        end
        i = i - 1
      end
      if i < 1 then return nil end
      i = i - 1
    elseif c:match("[%w_%.:]") then i = i - 1
    else break end
  end
  local e = s:sub(i + 1)
  return e:match("^[%a_]") and e or nil
end

-- The value of expression e in env, or (after a method call, which is not
-- run) the kind of what it returns: value, kind.
local function resolve(e, env)
  local base, sep, method = e:match("^(.-)([%.:])([%a_][%w_]*)%b()$")
  if not base then base, sep, method = e:match("^(.-)([%.:])([%a_][%w_]*)%b{}$") end   -- g:agg{...}
  if base then
    if sep ~= ":" then return nil end
    local v, kind = resolve(base, env)
    kind = kind or nsl.type(v)
    if kind == "column" then return nil, not column_scalars[method] and "column" or nil end
    return nil, returns[kind] and returns[kind][method]
  end
  if e:find("[%(%[]") then return nil end   -- only plain names are evaluated
  local chunk = load("return " .. e:gsub(":", "."), "=complete", "t", env)
  local ok, v = false, nil
  if chunk then ok, v = pcall(chunk) end
  if ok then return v, nsl.type(v) end
  return nil
end

--- Completion candidates for the word being typed at the end of `text`:
-- globals, then after "x." or "x:" the fields of x -- table names of a
-- trace, column names and methods of a table, methods of a column -- also
-- when x ends in a method call (k:group_by("device"):agg ...).
function M.complete(text, env)
  local before, sep, partial = text:match("^(.-)([%.:])([%w_]*)$")
  local prefix = before and trailing_expression(before)
  local set = {}
  if not prefix then
    partial = text:match("([%a_][%w_]*)$") or ""
    for k in pairs(env) do if type(k) == "string" then set[k] = true end end
    for k in pairs(_G) do if type(k) == "string" then set[k] = true end end
  else
    local v, kind = resolve(prefix, env)
    if v == nil and not kind then return {} end
    local methods = nsl.methods()
    if kind == "trace" then
      if sep == "." and v then for _, n in ipairs(v:tables()) do set[n] = true end end
      for k in pairs(methods.trace) do set[k] = true end
    elseif kind == "table" then
      if sep == "." and v then for _, n in ipairs(v:columns()) do set[n] = true end end
      for k in pairs(methods.table) do set[k] = true end
    elseif kind then
      for k in pairs(methods[kind] or {}) do set[k] = true end
    elseif type(v) == "table" then
      for k in pairs(v) do if type(k) == "string" then set[k] = true end end
    elseif type(v) == "string" then
      for k in pairs(string) do set[k] = true end
    end
  end
  local out = {}
  for _, k in ipairs(tables.sorted_keys(set)) do
    if k:sub(1, #partial) == partial and k:match("^[%a_][%w_]*$") then out[#out + 1] = k end
  end
  return out, #text - #partial   -- the partial word starts at this offset (0-based)
end

return M
