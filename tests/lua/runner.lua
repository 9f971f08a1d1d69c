-- tests/lua/runner.lua -- runs one Lua test file inside nsl and prints
-- "N passed, N failed".  A test file returns a list of {name, function}
-- pairs (or a map name -> function); helpers are passed as the argument T.
--   nsl run tests/lua/runner.lua --arg file=tests/lua/test_core.lua
local T = {}

T.data_dir = os.getenv("NSL_DATA_DIR") or "../shared/data"
T.source_dir = os.getenv("NSL_SOURCE_DIR") or "."

function T.data(rel) return T.data_dir .. "/" .. rel end

local function fail(msg, level) error(msg, (level or 1) + 2) end

function T.eq(a, b, what)
  if a ~= b then fail(string.format("%s: expected %s, got %s", what or "value", tostring(b), tostring(a))) end
end

function T.near(a, b, tol, what)
  tol = tol or 1e-9
  if a == nil or b == nil or math.abs(a - b) > tol * math.max(1, math.abs(b)) then
    fail(string.format("%s: expected %s, got %s (tolerance %g)", what or "value", tostring(b), tostring(a), tol))
  end
end

function T.ok(v, what)
  if not v then fail((what or "condition") .. " is false") end
end

function T.raises(fn, pattern, what)
  local ok, err = pcall(fn)
  if ok then fail((what or "call") .. " did not raise") end
  if pattern and not tostring(err):find(pattern) then
    fail(string.format("%s raised '%s', not matching '%s'", what or "call", tostring(err), pattern))
  end
end

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
T.shell_quote = shell_quote

--- The oracle: runs SQL through the sqlite3 command-line program (not nsl)
-- on a read-only, immutable open of path; returns rows as arrays of strings.
function T.sql(path, query)
  local cmd = string.format("sqlite3 -readonly -separator '\31' -newline '\30' %s %s",
    shell_quote("file:" .. path .. "?immutable=1"), shell_quote(query))
  local p = assert(io.popen(cmd, "r"))
  local text = p:read("a")
  local ok = p:close()
  if not ok then error("sqlite3 failed on " .. path .. ": " .. query, 2) end
  local rows = {}
  for line in text:gmatch("([^\30]*)\30") do
    local row = {}
    for field in (line .. "\31"):gmatch("([^\31]*)\31") do row[#row + 1] = field end
    rows[#rows + 1] = row
  end
  return rows
end

--- The single value of a one-row, one-column query, as a number when it is one.
function T.sql1(path, query)
  local v = T.sql(path, query)[1][1]
  return math.tointeger(tonumber(v)) or tonumber(v) or v
end

--- Runs a shipped analysis in this process on the given paths with args
-- (KEY=VALUE strings); returns {table name -> nsl table} (also out.tables),
-- the out object (its findings in out.findings) and the trace.
function T.run_analysis(name, paths, args)
  local runner = require("nsl.engine.runner")
  local a = assert(runner.load_analysis(name))
  local parsed, perr = runner.parse_args(a, args or {})
  if not parsed then require("nsl").fail(perr) end   -- refused as the CLI refuses it: the user's error
  local trace = assert(require("nsl").open(paths))
  local out = require("nsl.engine.output").new{analysis = name, format = "json-silent", trace = trace}
  a.run(trace, parsed, out)
  local tables = {}
  for _, it in ipairs(out.items) do if it.kind == "table" then tables[it.name] = it.t end end
  out.tables = tables
  return tables, out, trace
end

--- Runs analysis `name` as a notebook cell does (the output that carries
-- figures without writing files); returns its figures by name ({format,
-- data = PNG/SVG bytes, values = what the plot function returned beside
-- the canvas}), the tables by name and the out object.
function T.figures(name, paths, args)
  local runner = require("nsl.engine.runner")
  local a = assert(runner.load_analysis(name))
  local parsed, perr = runner.parse_args(a, args or {})
  if not parsed then require("nsl").fail(perr) end   -- refused as the CLI refuses it: the user's error
  local trace = assert(require("nsl").open(paths))
  local out = require("nsl.engine.output").new{analysis = name, format = "notebook", trace = trace}
  a.run(trace, parsed, out)
  local figs, tables = {}, {}
  for _, it in ipairs(out.items) do
    if it.kind == "figure" then figs[it.name] = it elseif it.kind == "table" then tables[it.name] = it.t end
  end
  return figs, tables, out
end

--- A temporary copy of a shared-data file (tests never write near the originals).
function T.copy(rel)
  local path = os.tmpname()
  local src = assert(io.open(T.data(rel), "rb"))
  local dst = assert(io.open(path, "wb"))
  dst:write(src:read("a"))
  src:close()
  dst:close()
  return path
end

--- Reference statistics in plain Lua, for checking nsl's: the median of a
-- list of numbers (nil when empty; the list is left as it is) and the sample
-- standard deviation (0 below two values).
function T.median(list)
  local v = {}
  for i, x in ipairs(list) do v[i] = x end
  table.sort(v)
  local n = #v
  if n == 0 then return nil end
  if n % 2 == 1 then return v[(n + 1) // 2] end
  return (v[n // 2] + v[n // 2 + 1]) / 2
end

function T.stdev(list)
  local n, m = #list, 0
  if n < 2 then return 0 end
  for _, x in ipairs(list) do m = m + x end
  m = m / n
  local ss = 0
  for _, x in ipairs(list) do ss = ss + (x - m) ^ 2 end
  return math.sqrt(ss / (n - 1))
end

--- Reference interval algebra in plain Lua: the length of the union of
-- intervals {{start, stop}, ...}, each clipped to [lo, hi) when given (the
-- list is left as it is).
function T.union_len(iv, lo, hi)
  local list = {}
  for _, x in ipairs(iv) do
    local s, e = x[1], x[2]
    if lo then s, e = math.max(s, lo), math.min(e, hi) end
    if e > s then list[#list + 1] = {s, e} end
  end
  table.sort(list, function(a, b) return a[1] < b[1] end)
  local total, cs, ce = 0, nil, nil
  for _, x in ipairs(list) do
    if not ce or x[1] > ce then
      if ce then total = total + ce - cs end
      cs, ce = x[1], x[2]
    elseif x[2] > ce then ce = x[2] end
  end
  if ce then total = total + ce - cs end
  return total
end

--- Rows of nsl table t as arrays of Lua values, for the columns named.
function T.rows(t, cols)
  local c, out = {}, {}
  for k, name in ipairs(cols) do c[k] = t:col(name):totable() end
  for i = 1, #t do
    local r = {}
    for k = 1, #cols do r[k] = c[k][i] end
    out[i] = r
  end
  return out
end

--- The whole content of a file (raises when it cannot be read).
function T.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

--- Runs SQL that writes, on a test's own copy (sqlite3 program).
function T.sql_exec(path, sql)
  local p = assert(io.popen("sqlite3 " .. shell_quote(path), "w"))
  p:write(sql)
  assert(p:close(), "sqlite3 failed on " .. path)
end

--- Every export in the shared data.
function T.exports()
  local p = assert(io.popen("ls " .. shell_quote(T.data("nsys")) .. "/*.sqlite"))
  local list = {}
  for line in p:lines() do list[#list + 1] = line end
  p:close()
  return list
end

return {
  name = "lua-tests",
  description = "Runs a Lua test file inside nsl",
  needs_trace = false,
  args = {file = {default = "", help = "the test file", required = true}},
  run = function(_, args)
    local chunk = assert(loadfile(args.file, "t"))
    local tests = chunk(T)
    local list = {}
    if tests[1] then list = tests
    else
      for name, fn in pairs(tests) do list[#list + 1] = {name, fn} end
      table.sort(list, function(a, b) return a[1] < b[1] end)
    end
    local passed, failed = 0, 0
    local curses = require("nsl").curses   -- its monotonic clock: each case's wall time, to find the slow ones
    local now = curses and curses.now or function() return os.clock() * 1e9 end
    for _, t in ipairs(list) do
      local t0 = now()
      local ok, err = xpcall(t[2], debug.traceback)
      if ok then
        passed = passed + 1
        print(string.format("ok     %s (%.2f s)", t[1], (now() - t0) / 1e9))
      else
        failed = failed + 1
        print("FAIL   " .. t[1] .. "\n       " .. tostring(err):gsub("\n", "\n       "))
      end
    end
    print(string.format("%d passed, %d failed", passed, failed))
    if failed > 0 then error(string.format("%d test(s) failed in %s", failed, args.file), 0) end
  end,
}
