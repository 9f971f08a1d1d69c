-- nsl.engine.runner -- runs analyses: finds the script, checks its arguments,
-- opens the trace, calls run(trace, args, out) and emits what it produced.
-- The C side (src/cli) parses the command line and calls M.main(opts).
local nsl = require("nsl")
local tables = require("nsl.util.tables")
local report = require("nsl.report")
local output = require("nsl.engine.output")

local M = {}

local stderr = io.stderr
local quiet = false   -- a distributed run's processes other than MPI rank 0 print nothing

--- runner.fail(code, msg) -> code, after msg on stderr as "nsl: msg": the one
-- way `nsl run` and the commands (nsl.engine.cmd.*) fail.  msg may quote names
-- from a trace: printable only.
local function fail(code, msg)
  if not quiet then stderr:write("nsl: ", nsl.printable(tostring(msg), true), "\n") end
  return code
end
M.fail = fail

--- The exit code of a run that failed with e (from nsl.error_handler): 2 for a
-- value the analysis rejected (nsl.fail(msg, "usage"): out of range, bad
-- format, not one of its choices), as for any usage error; else 1.
function M.exit_code(e)
  return type(e) == "table" and e.usage and 2 or 1
end

--- The message for a run of analysis a on inputs (array of paths) that
-- failed with e (from nsl.error_handler): the user's error as it is, led by
-- the inputs where it names none of them (usage errors as they are); a bug names
-- the analysis and the inputs, says whose bug it is (nsl's for a shipped
-- analysis, else the script's) and carries the traceback.
function M.failure(a, e, inputs)
  if type(e) ~= "table" or not e.bug then
    local msg = tostring(e)
    -- an input's error names the input: one the analysis raised without it (damaged times found deep in a
    -- sweep, which knows no paths) gets the inputs in front
    if type(e) == "table" and not e.usage and inputs and #inputs > 0 then
      for _, p in ipairs(inputs) do
        if msg:find(p, 1, true) or msg:find(p:match("[^/]*$"), 1, true) then return msg end
      end
      return require("nsl.report").files(inputs) .. ": " .. msg
    end
    return msg
  end
  local on = inputs and #inputs > 0 and (" on " .. require("nsl.report").files(inputs)) or ""
  if a.shipped then
    return string.format("internal error in analysis '%s'%s: %s\nThis is a bug in nsl, not a problem of the input; " ..
                         "please report it with this message.%s", a.name, on, e.bug, e.traceback)
  end
  return string.format("error in script '%s'%s: %s%s", a.name, on, e.bug, e.traceback)
end

--- Loads an analysis by name ("summary"), shipped path ("analyses/summary.lua")
-- or own path; returns the analysis table, or nil and a message.
function M.load_analysis(spec)
  local chunk, err, shipped
  local name = spec:match("^analyses/([%w_%-]+)%.lua$") or spec:match("^([%w_%-]+)$")
  if nsl.readable(spec) and not spec:match("^[%w_%-]+$") then
    chunk, err = loadfile(spec, "t")
    if not chunk then return nil, err end
  elseif name then
    chunk = nsl.load_embedded("analyses/" .. name .. ".lua")
    shipped = chunk ~= nil
    if not chunk then
      if nsl.readable(spec) then
        chunk, err = loadfile(spec, "t")
        if not chunk then return nil, err end
      else
        local names = {}
        for _, path in ipairs(nsl.embedded()) do names[#names + 1] = path:match("^lua/analyses/([%w_%-]+)%.lua$") end
        local near = nsl.closest(spec, names)
        return nil, string.format("no analysis '%s'%s (nsl list shows the shipped ones; a script is run by its path)",
                                  spec, near and string.format(" (did you mean '%s'?)", near) or "")
      end
    end
  else
    return nil, string.format("cannot open script '%s': no such file", spec)
  end
  local ok, a = xpcall(chunk, debug.traceback)
  if not ok then return nil, a end
  if type(a) ~= "table" or type(a.run) ~= "function" then
    return nil, string.format("%s: an analysis must return a table with a run(trace, args, out) function", spec)
  end
  a.shipped = shipped
  a.name = a.name or name or spec
  a.args = a.args or {}
  return a
end

--- The shipped analyses: array of {name, description}, sorted by name.
function M.shipped()
  local list = {}
  for _, path in ipairs(nsl.embedded()) do
    local name = path:match("^lua/analyses/([%w_%-]+)%.lua$")
    if name then
      local a = M.load_analysis(name)
      list[#list + 1] = {name = name, description = a and a.description or "(does not load)"}
    end
  end
  table.sort(list, function(x, y) return x.name < y.name end)
  return list
end

--- The help text of an analysis: description and arguments with defaults.
function M.help(a)
  local lines = {string.format("%s -- %s", a.name, a.description or ""), ""}
  if next(a.args) then
    lines[#lines + 1] = "arguments (--arg KEY=VALUE):"
    for _, k in ipairs(tables.sorted_keys(a.args)) do
      local spec = a.args[k]
      local default = spec.default
      local help = spec.help or ""
      local says_default = help:find("default", 1, true)   -- a help that names its default keeps its own words
      if spec.choices then help = help .. " [" .. table.concat(spec.choices, "|") .. "]" end
      lines[#lines + 1] = string.format("  %-16s %s%s", k, help,
        default ~= nil and not says_default and string.format(" (default: %s)", tostring(default)) or "")
    end
  else
    lines[#lines + 1] = "no arguments"
  end
  if a.example then
    lines[#lines + 1] = ""
    lines[#lines + 1] = "example: " .. a.example
  end
  return table.concat(lines, "\n")
end

local truthy = {["true"] = true, ["1"] = true, yes = true, on = true}
local falsy = {["false"] = true, ["0"] = true, no = true, off = true}

--- Checks KEY=VALUE strings against the declared args; returns the args
-- table (defaults filled, values converted to the default's type) or nil, msg.
-- An argument given twice is refused; spec.choices (a list of strings) lists
-- the only values an argument takes (spec.list: a comma list of them; a
-- value outside is refused with the closest choice); spec.percent lets a
-- number end in "%".
function M.parse_args(a, given)
  local args, seen = {}, {}
  for k, spec in pairs(a.args) do args[k] = spec.default end
  for _, kv in ipairs(given or {}) do
    local k, v = kv:match("^([^=]+)=(.*)$")
    local spec = a.args[k]
    if not spec then
      local near = k and nsl.closest(k, tables.sorted_keys(a.args))
      return nil, string.format("analysis '%s' has no argument '%s'%s (nsl run %s --help)", a.name, tostring(k),
                                near and string.format(" (did you mean '%s'?)", near) or "", a.name)
    end
    if seen[k] then
      return nil, string.format("--arg %s given twice ('%s' and '%s'): give it once", k, seen[k], v)
    end
    seen[k] = v
    if spec.choices then   -- spec.list: a comma list of them
      for item in (spec.list and v:gmatch("[^,]+") or v:gmatch(".+")) do
        local found = false
        for _, c in ipairs(spec.choices) do found = found or c == item end
        if not found then
          local near = nsl.closest(item, spec.choices)
          if not near then   -- too far for a typo: the choice that shares the longest start
            local best = 0
            for _, c in ipairs(spec.choices) do
              local n = 0
              while n < #c and c:sub(n + 1, n + 1) == item:sub(n + 1, n + 1) do n = n + 1 end
              if n > best then near, best = c, n end
            end
          end
          return nil, string.format("--arg %s: '%s' is not one of %s%s", k, item, table.concat(spec.choices, ", "),
                                    near and string.format(" (did you mean '%s'?)", near) or "")
        end
      end
      if v == "" then return nil, string.format("--arg %s: empty (one of %s)", k, table.concat(spec.choices, ", ")) end
    end
    local kind = spec.type or type(spec.default)
    if kind == "number" then
      if spec.percent then v = v:gsub("%%$", "") end
      local n = math.tointeger(tonumber(v)) or tonumber(v)
      if not n then return nil, string.format("--arg %s: '%s' is not a number", k, v) end
      args[k] = n
    elseif kind == "boolean" then
      if truthy[v] then args[k] = true
      elseif falsy[v] then args[k] = false
      else return nil, string.format("--arg %s: '%s' is not true or false", k, v) end
    else
      args[k] = v
    end
  end
  for k, spec in pairs(a.args) do
    if spec.required and args[k] == nil then
      return nil, string.format("analysis '%s' needs --arg %s=...", a.name, k)
    end
  end
  return args
end

--- Runs analysis a on the given trace paths with opts (format, out, fail_on;
-- distribute: split the trace among the processes of an MPI job when
-- started by a launcher).  Returns the exit code.
function M.run(a, opts)
  local nproc, myrank = 1, 0   -- `nsl run` and `nsl info` under an MPI launcher split the trace (nsl.distributed)
  if opts.distribute and opts.traces and #opts.traces > 0 then nproc, myrank = nsl.mpi.start() end
  quiet = myrank ~= 0
  local given = opts.args or {}
  if opts.label then   -- --label L: the analysis's labels argument (an explicit --arg labels= wins)
    if not a.args.labels then
      return fail(2, string.format("analysis '%s' takes no --label (it has no labels argument)", a.name))
    end
    given = {"labels=" .. opts.label, table.unpack(given)}
  end
  local args, err = M.parse_args(a, given)
  if not args then return fail(2, err) end
  -- the selection (nsl.select) that a run keeps, by its option's name
  local picked = opts.report and "--report" or opts.from and "--from" or opts.to and "--to" or opts.device and "--device"
  if picked and opts.embed then
    return fail(2, string.format("--embed stores results for the whole bundle: leave out %s", picked))
  end
  if nproc > 1 then
    if picked then return fail(2, picked .. " is not taken under an MPI launcher: run without it, or alone") end
    return require("nsl.distributed").run(M, a, args, opts)
  end
  local trace
  if opts.traces and #opts.traces > 0 then
    -- --embed: the results go into the bundle whose reports were read, checked from here to the rename
    -- (bundle.store): the same reports before and after the trace read them
    local bundle = opts.embed and #opts.traces == 1 and nsl.is_zip(opts.traces[1]) and require("nsl.bundle")
    local sig0 = bundle and bundle.signature(opts.traces[1])
    local code
    trace, err, code = nsl.open_selected(opts.traces, opts)
    if not trace then return fail(code, err) end
    if bundle then
      if not sig0 or bundle.signature(opts.traces[1]) ~= sig0 then
        return fail(1, string.format("--embed: '%s' changed while it was read; run again", opts.traces[1]))
      end
      opts.embed_sig = sig0
    end
  elseif a.needs_trace ~= false then
    return fail(2, string.format("analysis '%s' needs a trace: nsl run %s TRACE...", a.name, a.name))
  end
  return M.emit(a, trace, opts, function(out) return a.run(trace, args, out) end)
end

--- Runs body(out) for analysis a on trace (opened from opts.traces) and
-- emits what it produced as opts asks (format, --out, --embed, --fail-on).
-- Returns the exit code.
function M.emit(a, trace, opts, body)
  local out, oerr = output.new{analysis = a.name, format = opts.format or "text", dir = opts.out,
                               trace = trace, traces = opts.traces, embed = opts.embed}
  if not out then return fail(1, oerr) end
  local ok, msg = xpcall(body, nsl.error_handler, out)
  if not ok then
    out:flush()
    return fail(M.exit_code(msg), M.failure(a, msg, opts.traces))
  end
  local werr = out:finish()
  if werr then return fail(1, werr) end
  if opts.embed then
    local bundle = package.loaded["nsl.bundle"] or select(2, pcall(require, "nsl.bundle"))
    if type(bundle) ~= "table" or not bundle.embed then
      return fail(1, "--embed: bundles are not supported by this build")
    end
    local eok, eerr = bundle.embed(opts.traces, a.name, out, opts.embed_sig)
    if not eok then return fail(1, eerr) end
  end
  if opts.fail_on and out:worst_severity() >= require("nsl.findings").severity_rank(opts.fail_on) then return 3 end
  return 0
end

--- Entry point of run, list and info (src/cli/commands.c declares them and
-- their options): opts = {command, script, traces, args, out, format,
-- fail_on, embed, help, label}.
function M.main(opts)
  local cmd = opts.command
  if cmd == "list" then
    local names, descs = {}, {}
    for i, a in ipairs(M.shipped()) do names[i], descs[i] = a.name, a.description end
    print(report.text(nsl.table{{"analysis", names}, {"description", descs}}))
    return 0
  elseif cmd == "info" then
    local a = assert(M.load_analysis("info"))
    opts.distribute = true
    return M.run(a, opts)
  else
    assert(cmd == "run", "nsl.engine.runner runs run, list and info")
    local a, err = M.load_analysis(opts.script)
    if not a then return fail(opts.script:match("^[%w_%-]+$") and 2 or 1, err) end
    if opts.help then
      print(M.help(a))
      return 0
    end
    opts.distribute = true
    return M.run(a, opts)
  end
end

return M
