-- nsl.engine.cmd.profile -- `nsl profile [options] -- COMMAND...`: runs the command
-- under `nsys profile`, exports the report to SQLite, writes a bundle with
-- the run's metadata and sources, and runs the requested analyses on it,
-- storing their results in the bundle.  Processes are started by nsl.spawn
-- (src/lua/lsys.c): argv lists, never shell strings.
local nsl = require("nsl")
local bundle = require("nsl.bundle")
local report = require("nsl.report")

local M = {}

local fmt = string.format

M.default_options = {
  {names = {"-t", "--trace"}, value = "--trace=cuda,nvtx,osrt,cublas,cudnn"},
  {names = {"--cuda-graph-trace"}, value = "--cuda-graph-trace=node"},
}

M.rank_variables = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}

local function say(msg) io.stderr:write("nsl: ", msg, "\n") end

local fail = require("nsl.engine.runner").fail

--- The rank of this process: the --rank option, else the first rank
-- variable of the environment that holds an integer; nil when none.
function M.rank(env, given)
  if given then return math.tointeger(tonumber(given)) end
  for _, v in ipairs(M.rank_variables) do
    local r = math.tointeger(tonumber(env[v] or ""))
    if r and r >= 0 then return r end
  end
  return nil
end

--- Evaluates a --condition expression over env; returns true/false, or
-- nil and a message.
function M.condition(expr, env, rank)
  local scope = setmetatable({env = env, rank = rank, tonumber = tonumber, tostring = tostring, math = math,
                              string = string}, {
    __index = function(_, name)
      local v = env[name]
      if v == nil then return nil end
      return math.tointeger(tonumber(v)) or tonumber(v) or v
    end,
    __newindex = function() error("the condition cannot set variables", 2) end,
  })
  local f, err = load("return (" .. expr:gsub("!=", "~=") .. ")", "=--condition", "t", scope)
  if not f then return nil, "--condition: " .. err end
  local ok, v = pcall(f)
  if not ok then return nil, "--condition: " .. tostring(v) end
  return v ~= nil and v ~= false
end

--- OUT with %h, %p, %r, %q{VAR} and %% replaced; nil and a message for
-- another % sequence.
function M.expand_output(template, env, rank)
  local parts, i = {}, 1
  while i <= #template do
    local c = template:sub(i, i)
    if c ~= "%" then
      parts[#parts + 1] = c
      i = i + 1
    else
      local k = template:sub(i + 1, i + 1)
      local var = k == "q" and template:match("^{([^}]*)}", i + 2)
      if k == "h" then parts[#parts + 1] = nsl.hostname() or "host"
      elseif k == "p" then parts[#parts + 1] = tostring(nsl.getpid())
      elseif k == "r" then parts[#parts + 1] = rank and tostring(rank) or "norank"
      elseif k == "%" then parts[#parts + 1] = "%"
      elseif var then
        parts[#parts + 1] = env[var] or ""
        i = i + #var + 2
      else
        return nil, fmt("-o %s: unknown '%%%s' (%%h host, %%p pid, %%r rank, %%q{VAR}, %%%%)", template, k)
      end
      i = i + 2
    end
  end
  return table.concat(parts)
end

--- The nsys profile argv: the defaults the user did not override, the
-- user's options (rest), the output, the command.
function M.nsys_argv(nsys, rest, output, program)
  local given = {}
  for _, w in ipairs(rest) do
    local name = w:match("^(%-%-?[%w%-]+)")
    if name then given[name] = true end
  end
  local argv = {nsys, "profile"}
  for _, d in ipairs(M.default_options) do
    local overridden = false
    for _, n in ipairs(d.names) do overridden = overridden or given[n] end
    if not overridden then argv[#argv + 1] = d.value end
  end
  for _, w in ipairs(rest) do argv[#argv + 1] = w end
  argv[#argv + 1] = "--output=" .. output
  argv[#argv + 1] = "--force-overwrite=true"
  for _, w in ipairs(program) do argv[#argv + 1] = w end
  return argv
end

local function exists(path) return nsl.stat(path) ~= nil end

local function read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- The last line of the log at path ("" when none).
local function last_line(path)
  return (read_file(path) or ""):gsub("%s+$", ""):match("([^\n]*)$") or ""
end

-- nsys that cannot find its importer (Debian's 2022.4) leaves BASE.qdstrm
-- and no report: the importer beside it makes BASE.nsys-rep.  Returns the
-- report, or nil and a message; nothing when there is no .qdstrm.
local function import_qdstrm(nsys, base, work)
  local qdstrm = base .. ".qdstrm"
  if not exists(qdstrm) then return nil end
  local importer = nsl.qdstrm_importer(nsys)
  if not importer then
    return nil, fmt("nsys left %s and no report, and no QdstrmImporter lies beside %s to import it", qdstrm, nsys)
  end
  say(fmt("nsys left a .qdstrm (it did not find its importer): importing it with %s", importer))
  local log = work .. "/qdstrm-import.log"
  local code, how = nsl.spawn({importer, "-i", qdstrm}, {stdout = log, stderr = log})
  local rep = base .. ".nsys-rep"
  if code ~= 0 or not exists(rep) then
    local tail = last_line(log)
    return nil, fmt("%s -i %s failed (%s)%s", importer, qdstrm, code and fmt("exit code %d", code) or how,
                    tail ~= "" and ": " .. tail or "")
  end
  return rep
end

-- The analyses asked for, loaded, with the --arg values each declares.
-- Returns a list of {a=, args=}, or nil and a message (a usage error).
local function load_analyses(names, given)
  local runner = require("nsl.engine.runner")
  local list, used = {}, {}
  for _, name in ipairs(names or {}) do
    local a, err = runner.load_analysis(name)
    if not a then return nil, err end
    local args = {}
    for _, kv in ipairs(given or {}) do
      local k = kv:match("^([^=]+)=")
      if a.args[k] then
        args[#args + 1] = kv
        used[k] = true
      end
    end
    local ok, perr = runner.parse_args(a, args)
    if not ok then return nil, perr end
    list[#list + 1] = {a = a, args = args}
  end
  for _, kv in ipairs(given or {}) do
    local k = kv:match("^([^=]+)=")
    if not used[k] then return nil, fmt("--arg %s: no --analysis takes it", tostring(k)) end
  end
  return list
end

-- Profiles, exports and bundles inside the work folder; returns the exit
-- code of the application (or nil when nothing was bundled) and a message.
local function profile_and_bundle(opts, env, rank, output, writer, work)
  local nsys, nerr = nsl.find_nsys(opts.nsys)
  if not nsys then return nil, nerr end
  local child_env = {}
  for k, v in pairs(env) do child_env[k] = v end
  local dumps = opts.xla_dump or {}
  if dumps[1] and not (child_env.XLA_FLAGS or ""):find("%-%-xla_dump_to") then
    child_env.XLA_FLAGS = ((child_env.XLA_FLAGS or "") .. " --xla_dump_to=" .. dumps[1] ..
                           " --xla_dump_hlo_as_proto"):gsub("^ ", "")
  end
  local stem = rank and ("rank" .. rank) or "profile"
  local base = work .. "/" .. stem
  local argv = M.nsys_argv(nsys, opts.rest or {}, base, opts.program)
  local started = os.time()
  local code, how, num = nsl.spawn(argv, {env = child_env})
  if not code then return nil, how .. " (give the nsys program with --nsys PATH)" end
  local finished = os.time()
  if how == "signal" then say(fmt("the profiled command ended with signal %d", num))
  elseif code ~= 0 then say(fmt("the profiled command exited with code %d; bundling what was recorded", code)) end

  local rep = base .. ".nsys-rep"
  if not exists(rep) and exists(base .. ".qdrep") then rep = base .. ".qdrep" end
  if not exists(rep) then
    local imported, ierr = import_qdstrm(nsys, base, work)
    if ierr then return nil, ierr, code end
    rep = imported or rep
  end
  if not exists(rep) then
    return nil, fmt("nsys wrote no report (%s exited with code %d): nothing to bundle", nsys, code), code
  end
  local sqlite = base .. ".sqlite"
  local log = work .. "/nsys-export.log"
  local ecode, ehow = nsl.spawn({nsys, "export", "--type=sqlite", "--output=" .. sqlite, "--force-overwrite=true", rep},
                                {stdout = log, stderr = log})
  if not ecode or ecode ~= 0 or not exists(sqlite) then
    local tail = last_line(log)
    return nil, fmt("nsys export to SQLite failed (%s)%s", ecode and fmt("exit code %d", ecode) or ehow,
                    tail ~= "" and ": " .. tail or ""), code
  end

  local members = {{name = "meta/environment.txt", data = bundle.environment_text(child_env)}}
  local smi = work .. "/nvidia-smi.txt"
  local scode = nsl.spawn({"nvidia-smi", "-q"}, {stdout = smi, stderr = "/dev/null"})
  if scode == 0 and exists(smi) then members[#members + 1] = {name = "meta/nvidia-smi.txt", path = smi} end
  members[#members + 1] = {name = "meta/nsys-export.log", path = log}
  for _, dir in ipairs(dumps) do
    if nsl.stat(dir) then
      local ok, err = bundle.add_paths(members, "meta", {dir}, true)
      if not ok then return nil, err, code end
      for i = #members, 1, -1 do   -- meta/<dir name>/... -> meta/xla_dump/...
        local m = members[i]
        if m.path and m.path:sub(1, #dir + 1) == dir .. "/" then
          m.name = "meta/xla_dump/" .. (#dumps > 1 and (dir:match("([^/]+)/*$") .. "/") or "") .. m.path:sub(#dir + 2)
        end
      end
    else
      say(fmt("--xla-dump: '%s' does not exist (no XLA dump was written)", dir))
    end
  end
  for _, m in ipairs(opts.user_members) do members[#members + 1] = m end
  if not opts.no_rep then
    members[#members + 1] = {name = "reports/" .. stem .. rep:match("%.[%w%-]+$"), path = rep, compress = "store"}
  end
  local summary
  summary, err = bundle.write{
    output = output, writer = writer, exports = {sqlite}, ranks = rank and {rank} or nil, members = members,
    command = opts.program, note = opts.note,
    fields = {profile = {nsys_command = argv, exit_code = code, signal = how == "signal" and num or nil,
                         started = os.date("!%Y-%m-%dT%H:%M:%SZ", started), seconds = finished - started,
                         condition = opts.condition, nsl_version = nsl.version}},
  }
  if not summary then return nil, err, code end
  say(fmt("wrote %s: %d members, %s before compression", output, summary.members, report.bytes(summary.bytes)))
  return code
end

-- Runs every analysis on the bundle and stores its results in it; returns
-- the worst outcome: 0, 3 (a finding at --fail-on) or 1 (a failure).
local function run_analyses(list, output, opts)
  local runner = require("nsl.engine.runner")
  local worst = 0
  for _, it in ipairs(list) do
    local out_dir = opts.out and (#list > 1 and opts.out .. "/" .. it.a.name or opts.out) or nil
    local code = runner.run(it.a, {traces = {output}, args = it.args, embed = true, format = opts.format,
                                   out = out_dir, fail_on = opts.fail_on})
    if code == 3 and worst == 0 then worst = 3
    elseif code ~= 0 and code ~= 3 then worst = 1 end
  end
  return worst
end

--- Notebooks (--notebook): each is run on the bundle (`trace` is the
-- bundle's trace) and rendered to HTML, stored in the bundle as
-- analyses/notebook-<stem>/<stem>.html.  A notebook is a file or a shipped
-- one by name (`--notebook analysis`).  Cells that fail are shown in the
-- page and reported here; a notebook that cannot be read or stored counts
-- as a failure.  Returns 0, or 1 when one failed.
function M.run_notebooks(notebooks, output)
  local failed = 0
  for _, nb in ipairs(notebooks or {}) do
    local text, err = nsl.read_file(nb)   -- a regular file: a FIFO or a device is refused at once
    if not text then
      err = err:gsub("^cannot open '.-': ", "")
      text = nb:match("^[%w_%-]+$") and nsl.embedded_file("notebooks/" .. nb .. ".md")
    end
    if not text then
      say(fmt("--notebook: cannot open notebook '%s': %s", nb, err))
      failed = 1
    else
      local notebook = require("nsl.engine.notebook")
      local stem = nb:match("([^/]+)$"):gsub("%.md$", "")
      local trace, oerr = nsl.open{output}
      if not trace then
        say("--notebook: " .. oerr)
        failed = 1
      else
        local blocks = notebook.run(text, trace, {path = nb})
        trace:close()
        local nfail = 0
        for _, b in ipairs(blocks) do if b.error then nfail = nfail + 1 end end
        if nfail > 0 then say(fmt("--notebook %s: %d cell(s) failed; their errors are shown in the page", nb, nfail)) end
        local ok, serr = bundle.store(output, "notebook-" .. stem, {{name = stem .. ".html", data = notebook.html(blocks, stem)}})
        if not ok then
          say("--notebook: " .. serr)
          failed = 1
        end
      end
    end
  end
  return failed
end

--- Entry point (src/cli/commands.c declares the command and its options):
-- opts.program is the command (not empty), opts.rest the nsys options.
function M.main(opts)
  local env = nsl.environ()
  if opts.rank and not math.tointeger(tonumber(opts.rank)) then
    return fail(2, fmt("profile: --rank '%s' is not an integer", opts.rank))
  end
  local rank = M.rank(env, opts.rank)
  if opts.condition then
    local on, err = M.condition(opts.condition, env, rank)
    if on == nil then return fail(2, "profile: " .. err) end
    if not on then
      local code, how = nsl.spawn(opts.program)
      if not code then return fail(127, how) end
      return code
    end
  end
  local analyses, aerr = load_analyses(opts.analysis, opts.args)
  if not analyses then return fail(2, "profile: " .. aerr) end
  -- the --meta and --source files are checked before the run, not after it
  local user, taken = {}, {["meta/environment.txt"] = true, ["meta/nvidia-smi.txt"] = true,
                           ["meta/nsys-export.log"] = true}
  local uok, uerr = bundle.add_paths(user, "meta", opts.meta, true)
  if uok then uok, uerr = bundle.add_paths(user, "sources", opts.source) end
  if not uok then return fail(1, "profile: " .. uerr) end
  for _, m in ipairs(user) do
    if taken[m.name] or m.name:find("^meta/xla_dump/") then
      return fail(2, fmt("profile: two files would be stored as '%s' (rename the --meta file)", m.name))
    end
    taken[m.name] = true
  end
  opts.user_members = user

  local output, oerr = M.expand_output(opts.output or "nsl-profile-%h-%p.zip", env, rank)
  if not output then return fail(2, "profile: " .. oerr) end
  local inputs = {table.unpack(opts.notebook or {})}
  for _, m in ipairs(user) do inputs[#inputs + 1] = m.path end
  local refused = nsl.input_refused("profile", output, inputs)
  if refused then return fail(1, refused) end
  local st = nsl.stat(output)
  if st and st.type ~= "file" then return fail(1, fmt("profile: '%s' is not a file", output)) end
  -- the writer's temporary file beside OUT checks now, not after the run, that OUT can be written
  local writer, werr = nsl.bundle_writer(output)
  if not writer then return fail(1, "profile: " .. werr) end
  local folder = output:match("^(.*)/[^/]*$") or "."
  local work, err = nsl.mkdtemp(folder .. "/.nsl-profile-")
  if not work and env.TMPDIR then work, err = nsl.mkdtemp(env.TMPDIR .. "/nsl-profile-") end
  if not work then
    writer:abort()
    return fail(1, "profile: " .. err)
  end

  local ok, code, msg, app_code = pcall(profile_and_bundle, opts, env, rank, output, writer, work)
  writer:abort()   -- no-op once finished
  nsl.rmtree(work)
  if not ok then error(code, 0) end
  if not code then
    say(msg)
    return (app_code and app_code ~= 0) and app_code or 1
  end
  local worst = run_analyses(analyses, output, opts)
  if M.run_notebooks(opts.notebook, output) ~= 0 then worst = 1 end
  if code ~= 0 then return code end
  return worst
end

return M
