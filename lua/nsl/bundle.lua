-- nsl.bundle -- making bundles from exports (nsl bundle, nsl profile) and
-- storing analysis results in them (nsl run --embed).  The archive work
-- (names, hashes, limits, atomic writes) is done in C (src/source/bundle*.c,
-- bound in src/lua/lbundle.c); this module decides what goes in.
local nsl = require("nsl")
local report = require("nsl.report")

local M = {}

local fmt = string.format

--- The environment variables `nsl profile` records (meta/environment.txt):
-- an allow-list, since a deny-list cannot know every name a secret hides
-- under (MYSQL_PWD, PGPASS, GITHUB_PAT, AUTH, DATABASE_URL, proxies...).
-- A variable is recorded when its name starts with one of the prefixes or
-- is one of the names, and holds none of the secret words; credentials
-- inside URLs in its value are replaced (M.redact_urls).  README.md lists them.
M.environment_prefixes = {"CUDA_", "CUBLAS", "CUDNN_", "NCCL_", "NVSHMEM_", "NVIDIA_", "NVTE_", "NSYS_", "NSIGHT_",
                          "XLA_", "JAX_", "TF_", "TORCH", "PYTORCH_", "OMP_", "MKL_", "KMP_", "SLURM_", "OMPI_",
                          "PMI_", "PMIX_", "UCX_", "HOROVOD_", "LOCAL_"}
M.environment_names = {"HOSTNAME", "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "VIRTUAL_ENV",
                       "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "RANK", "WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
                       "MASTER_ADDR", "MASTER_PORT", "LANG", "LC_ALL", "TZ"}

--- Words that mark an environment variable as a secret (matched in the
-- upper-cased name): such variables never reach a bundle, even when allowed.
M.secret_words = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "PASS", "KEY", "CREDENTIAL", "AUTH", "_PAT",
                  "COOKIE", "SESSION", "SIGNATURE", "PRIVATE"}

--- true when the variable name may hold a secret.
function M.is_secret(name)
  local up = name:upper()
  for _, w in ipairs(M.secret_words) do
    if up:find(w, 1, true) then return true end
  end
  return false
end

--- true when `nsl profile` records the variable (the allow-list above).
function M.is_recorded(name)
  if M.is_secret(name) then return false end
  for _, n in ipairs(M.environment_names) do
    if name == n then return true end
  end
  for _, p in ipairs(M.environment_prefixes) do
    if name:sub(1, #p) == p then return true end
  end
  return false
end

--- value with the credentials of every URL in it removed:
-- "https://alice:s3cret@proxy:3128" -> "https://<redacted>@proxy:3128".
function M.redact_urls(value)
  return (value:gsub("(%a[%w+.-]*://)[^/?#%s]*@", "%1<redacted>@"))
end

--- The environment as "NAME=VALUE" lines, sorted: the recorded variables
-- only (M.is_recorded), URL credentials removed.
function M.environment_text(env)
  local names = {}
  for k in pairs(env) do
    if M.is_recorded(k) then names[#names + 1] = k end
  end
  table.sort(names)
  local lines = {}
  for i, k in ipairs(names) do lines[i] = k .. "=" .. M.redact_urls(env[k]) end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

local function basename(path) return path:match("([^/]+)/*$") or path end

--- RFC 3339 UTC text of a time in ns since the epoch.
function M.rfc3339_ns(ns)
  return os.date("!%Y-%m-%dT%H:%M:%S", ns // 1000000000) .. fmt(".%09dZ", ns % 1000000000)
end

--- The member name under folder ("sources", "meta") for a local path: the
-- path as given (an absolute one under the working folder: relative to
-- it), without "./" and leading "/"; a path with ".." (or one
-- that is not a valid member name that way) is resolved to its real path
-- first.  Returns the name, or nil and a message.
function M.member_name(folder, path)
  if path:sub(1, 1) == "/" then   -- an absolute path under the working folder: stored relative to it
    local cwd = nsl.realpath(".")
    if cwd and cwd ~= "/" and path:sub(1, #cwd + 1) == cwd .. "/" then path = path:sub(#cwd + 2) end
  end
  local rel = path:gsub("^%./+", ""):gsub("/%./", "/"):gsub("^/+", ""):gsub("/+$", "")
  local name = folder .. "/" .. rel
  if rel == "" or rel:find("%.%.") or not nsl.bundle_check_name(name) then
    local real, err = nsl.realpath(path)
    if not real then return nil, err end
    name = folder .. "/" .. real:gsub("^/+", "")
  end
  local ok, err = nsl.bundle_check_name(name)
  if not ok then return nil, fmt("cannot store '%s': %s", path, err) end
  return name
end

--- The regular files under dir, as paths relative to it, sorted; hidden
-- entries (".git", ".venv", ...) and __pycache__ are left out and links to
-- folders are not followed.  Returns the list, or nil and a message.
function M.walk(dir)
  local out = {}
  local function visit(rel)
    local full = rel == "" and dir or dir .. "/" .. rel
    local names, err = nsl.listdir(full)
    if not names then return nil, err end
    for _, name in ipairs(names) do
      if name:sub(1, 1) ~= "." and name ~= "__pycache__" then
        local sub = rel == "" and name or rel .. "/" .. name
        local st = nsl.stat(dir .. "/" .. sub, false)
        if st and st.type == "dir" then
          local ok, verr = visit(sub)
          if not ok then return nil, verr end
        elseif st and (st.type == "file" or (st.type == "link" and (nsl.stat(dir .. "/" .. sub) or {}).type == "file")) then
          out[#out + 1] = sub
        end
      end
    end
    return true
  end
  local ok, err = visit("")
  if not ok then return nil, err end
  return out
end

--- Files for the bundle from the paths given to --source or --meta: a file
-- becomes one member, a folder one member per file in it (M.walk).
-- Appends {name=, path=} entries to list; returns true, or nil and a message.
function M.add_paths(list, folder, paths, flat)
  for _, p in ipairs(paths or {}) do
    local st, err = nsl.stat(p)
    if not st then return nil, err end
    local base
    if flat then base = folder .. "/" .. basename(p)
    else
      base, err = M.member_name(folder, p)
      if not base then return nil, err end
    end
    if st.type == "dir" then
      local files, werr = M.walk(p)
      if not files then return nil, werr end
      for _, f in ipairs(files) do list[#list + 1] = {name = base .. "/" .. f, path = p .. "/" .. f} end
    elseif st.type == "file" then
      list[#list + 1] = {name = base, path = p}
    else
      return nil, fmt("cannot store '%s': not a regular file or a folder", p)
    end
  end
  return true
end

-- The profiled command line recorded in an export (nsys 2023.3 and later:
-- capture metadata PROCESS_<n>:COMMAND and :ARGUMENT_<k>), or nil.
local function export_command(tr)
  local procs = {}
  for name, value in pairs(tr:metadata(0)) do
    local p, what = name:match("^PROCESS_(%d+):(.*)$")
    local arg = what and what:match("^ARGUMENT_(%d+)$")
    if what == "COMMAND" or arg then
      p = tonumber(p)
      procs[p] = procs[p] or {args = {}}
      if arg then procs[p].args[tonumber(arg)] = value else procs[p].command = value end
    end
  end
  local first
  for p, v in pairs(procs) do
    if v.command and (not first or p < first) then first = p end
  end
  if not first then return nil end
  local argv, args = {procs[first].command}, procs[first].args
  local k = 0
  while args[k] ~= nil do
    argv[#argv + 1] = args[k]
    k = k + 1
  end
  return argv
end

--- What an export says about itself: {host, nsys_version, schema_version,
-- start_utc, rank (from its name), command (argv or nil), devices}.
-- Returns the table, or nil and a message.
function M.describe_export(path)
  local tr, err = nsl.open(path)
  if not tr then return nil, err end
  local r = tr.reports
  local d = {host = r.host[1], nsys_version = r.nsys_version[1], schema_version = r.schema_version[1],
             start_utc = r.start_utc[1], rank = r.rank[1], name = r.name[1], devices = {}}
  local ok, cmd = pcall(export_command, tr)
  if ok then d.command = cmd end
  -- GPUs: what the devices table knows (a device list that does not load
  -- is left out rather than failing the bundle)
  pcall(function()
    local dev = tr.devices
    local cols = {}
    for _, c in ipairs({"device", "name", "uuid", "memory", "sm_count", "compute_capability"}) do
      local ok, col = pcall(function() return dev[c] end)
      cols[c] = ok and col or {}
    end
    for i = 1, #dev do
      d.devices[i] = {host = d.host, id = cols.device[i], name = cols.name[i], uuid = cols.uuid[i],
                      memory = cols.memory[i], sm_count = cols.sm_count[i],
                      compute_capability = cols.compute_capability[i]}
    end
  end)
  tr:close()
  return d
end

local function add_unique(list, seen, v)
  if v ~= nil and v ~= "" and not seen[v] then
    seen[v] = true
    list[#list + 1] = v
  end
end

local function same_argv(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

--- Writes a bundle.  spec: output (path), exports (paths), ranks (one per
-- export, or nil: the rank an export's name gives), members ({name=, path=
-- | data=, compress=} added as they are: meta/, sources/, ...), command
-- (argv; else the command the exports record, when they agree), note,
-- keep_rep (an export given as its .nsys-rep report also stores the report),
-- allow_mixed_nsys (exports of different nsys releases; else refused),
-- fields (more manifest fields), writer (an nsl.bundle_writer already open
-- on output, else one is opened; it is finished or aborted either way).
-- Returns a summary {reports=, members=, bytes=}, or nil and a message;
-- nothing is left at output on failure.
function M.write(spec)
  local ok, summary, err = pcall(M.write_unprotected, spec)
  if spec.writer and (not ok or not summary) then spec.writer:abort() end
  if not ok then error(summary, 0) end
  return summary, err
end

function M.write_unprotected(spec)
  local reports, hosts, ranks, devices, nsys, schema = {}, {}, {}, {}, {}, {}
  local seen_h, seen_n, seen_s, seen_r, used = {}, {}, {}, {}, {}
  local commands = {}
  local plan = {}
  for i, path in ipairs(spec.exports or {}) do
    if nsl.is_zip(path) then
      return nil, fmt("'%s' is a zip, not an nsys SQLite export (nsl combine merges bundles)", path)
    end
    local d, err = M.describe_export(path)
    if not d then return nil, err end
    local stem = basename(path):gsub("%.sqlite$", ""):gsub("%.nsys%-rep$", ""):gsub("%.qdrep$", "")
    local rep, export = nil, path
    if nsl.is_nsys_rep(path) then   -- a report: its export (made or reused by nsl.open above) goes in
      rep, export = path, nsl.nsys_export(path)
      if not export then return nil, select(2, nsl.nsys_export(path)) end
    end
    local member = "reports/" .. stem .. ".sqlite"
    for k = 2, math.huge do
      if not used[member] then break end
      member = fmt("reports/%s-%d.sqlite", stem, k)
    end
    used[member] = true
    if not nsl.bundle_check_name(member) then member = fmt("reports/report%d.sqlite", i) end
    local rank = spec.ranks and spec.ranks[i]
    if rank == nil then rank = d.rank end
    if rank ~= nil then
      if seen_r[rank] then return nil, fmt("rank %d is given to two exports", rank) end
      seen_r[rank] = true
      ranks[#ranks + 1] = rank
    end
    local entry = {member = member, rank = rank, host = d.host, nsys_version = d.nsys_version,
                   schema_version = d.schema_version, session_start_utc_ns = d.start_utc,
                   session_start = d.start_utc and M.rfc3339_ns(d.start_utc) or nil, export = basename(path),
                   command = d.command}
    reports[#reports + 1] = entry
    add_unique(hosts, seen_h, d.host)
    add_unique(nsys, seen_n, d.nsys_version)
    add_unique(schema, seen_s, d.schema_version)
    for _, dev in ipairs(d.devices) do devices[#devices + 1] = dev end
    if d.command then commands[#commands + 1] = d.command end
    plan[#plan + 1] = {name = member, path = export, columns = spec.columns}
    if rep and spec.keep_rep then
      entry.nsys_rep = member:gsub("%.sqlite$", "") .. (path:match("%.qdrep$") and ".qdrep" or ".nsys-rep")
      plan[#plan + 1] = {name = entry.nsys_rep, path = rep, compress = "store"}
    end
  end
  -- one nsys release, as `nsl combine` wants it (spec.allow_mixed_nsys: any)
  local release = {}
  for _, e in ipairs(reports) do
    local r = e.nsys_version and e.nsys_version:match("^(%d+%.%d+)")
    if r and not spec.allow_mixed_nsys then
      if release.r and release.r ~= r then
        return nil, fmt("cannot bundle '%s' (nsys %s) and '%s' (nsys %s): different nsys releases (%s vs %s); " ..
                        "--allow-mixed-nsys bundles them anyway", release.export, release.version, e.export,
                        e.nsys_version, release.r, r)
      end
      release = release.r and release or {r = r, export = e.export, version = e.nsys_version}
    end
  end
  table.sort(ranks)
  local command = spec.command
  if not command and #commands > 0 and #commands == #reports then
    command = commands[1]
    for _, c in ipairs(commands) do
      if not same_argv(c, command) then command = nil break end
    end
  end
  local manifest = {hosts = hosts, ranks = ranks, devices = devices, nsys_versions = nsys,
                    schema_versions = schema, reports = reports, command = command, note = spec.note}
  for k, v in pairs(spec.fields or {}) do manifest[k] = v end
  for _, m in ipairs(spec.members or {}) do plan[#plan + 1] = m end

  local w, err = spec.writer, nil
  if not w then
    w, err = nsl.bundle_writer(spec.output)
    if not w then return nil, err end
  end
  local bytes = 0
  for _, m in ipairs(plan) do
    local ok, aerr
    if m.data then
      ok, aerr = w:add(m.name, m.data, m.compress)
      bytes = bytes + #m.data
    else
      ok, aerr = w:add_file(m.name, m.path, m.compress)
      if ok and m.columns then ok, aerr = w:add_columns(m.name, m.path) end   -- nsl bundle --columns
      local st = nsl.stat(m.path)
      bytes = bytes + (st and st.size or 0)
    end
    if not ok then
      w:abort()
      return nil, aerr
    end
  end
  local ok, ferr = w:finish(report.json(manifest))
  if not ok then return nil, ferr end
  return {reports = #reports, members = #plan + 1, bytes = bytes}
end

-- What results are computed on: every member but analyses/ and the
-- manifest, by name, size and sha256 (from the manifest), as one string.
local function signature_of(b)
  local t = {}
  for _, m in ipairs(b:members()) do
    if not m.name:find("^analyses/") and m.name ~= "manifest.json" then
      t[#t + 1] = fmt("%s %s %s", m.name, tostring(m.size), tostring(m.sha256))
    end
  end
  table.sort(t)
  return table.concat(t, "\n")
end

--- M.signature(path) -> the signature of the bundle at path (its members
-- but analyses/), or nil and a message: equal signatures, the same reports.
function M.signature(path)
  local b, err = nsl.bundle_open(path)
  if not b then return nil, err end
  local s = signature_of(b)
  b:close()
  return s
end

--- Stores files ({name=, data=} each, names relative to the folder) in
-- the bundle at path under analyses/<name>/, replacing what was there, and
-- lists them in the manifest's "analyses".  The bundle is rewritten beside
-- itself and renamed over: it is never half-written, and on any failure it
-- is left as it was.  A link is followed: the file it names is updated,
-- the link stays.  With expect (M.signature of the bundle the analysis
-- read), the bundle the writer holds must carry the same reports: results
-- computed on reports another writer has replaced since are not grafted
-- onto the new ones (results other writers added do not matter).  Returns
-- true, or nil and a message.
function M.store(path, name, files, expect)
  local shown = path
  path = nsl.realpath(path) or path   -- through a link: the bundle it names gets the results
  local safe = tostring(name):gsub("%.lua$", ""):gsub("[^%w_%-%.]", "_")
  local prefix = "analyses/" .. safe .. "/"
  -- the writer first: it waits for any other writer of this bundle, so
  -- the bundle read next already holds that writer's results
  local w, err = nsl.bundle_writer(path)
  if not w then return nil, err end
  local b
  b, err = nsl.bundle_open(path)
  if not b then
    w:abort()
    return nil, err
  end
  local function fail(msg)
    w:abort()
    b:close()
    return nil, msg
  end
  if expect and signature_of(b) ~= expect then
    return fail(string.format("'%s' changed while the analysis ran (another writer replaced its reports); the "
                              .. "results, computed on the old ones, were not stored: run again", shown))
  end
  local ok, aerr = w:replaces(b)
  if not ok then return fail(aerr) end
  ok, aerr = w:copy(b, prefix)
  if not ok then return fail(aerr) end
  local names = {}
  for _, f in ipairs(files) do
    names[#names + 1] = prefix .. f.name
    ok, aerr = w:add(prefix .. f.name, f.data)
    if not ok then return fail(aerr) end
  end
  -- the manifest keeps everything and lists the analyses stored
  local m = b:manifest() or {}
  local list = {}
  for _, a in ipairs(m.analyses or {}) do
    if a.name ~= safe then list[#list + 1] = a end
  end
  list[#list + 1] = {name = safe, created = os.date("!%Y-%m-%dT%H:%M:%SZ"), nsl_version = nsl.version,
                     members = names}
  ok, aerr = w:finish(b, report.json({analyses = list}))
  b:close()
  if not ok then return nil, aerr end
  return true
end

--- Stores the results of analysis `name` (the `out` object of nsl.engine.output)
-- in the one bundle among traces (M.store): every table as CSV,
-- results.json, and the files the analysis wrote.  Returns true, or nil and
-- a message.
function M.embed(traces, name, out, expect)
  if #traces ~= 1 or not nsl.is_zip(traces[1]) then
    return nil, "--embed stores results in a bundle: give exactly one bundle (.zip)"
  end
  local files = {}
  for _, it in ipairs(out.items) do
    if it.kind == "table" then files[#files + 1] = {name = it.name .. ".csv", data = report.csv(it.t)} end
  end
  files[#files + 1] = {name = "results.json", data = report.json(out:document(), "  ") .. "\n"}
  for _, f in ipairs(out.files) do
    if f.data then files[#files + 1] = {name = f.name, data = f.data} end
  end
  local ok, err = M.store(traces[1], name, files, expect)
  if not ok then return nil, "--embed: " .. err end
  return true
end

return M
