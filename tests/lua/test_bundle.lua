-- Bundles from Lua: every export bundled and read back equals the export
-- (row counts, per-column sums and every value); the manifest agrees with
-- SQL on the export; trace:members / trace:member; --embed's module; the
-- --condition and -o expansions of nsl profile.
local T = ...
local nsl = require("nsl")
local bundle = require("nsl.bundle")
local profile = require("nsl.engine.cmd.profile")

local tmp = assert(nsl.mkdtemp((os.getenv("TMPDIR") or "/tmp") .. "/nsl-test-bundle-"))

local function write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
end

local function basename(p) return p:match("([^/]+)$") end

-- Per column of every table: row count, non-NULL count, sum (numbers), and
-- every value in order joined into one string (a checksum without collisions).
local function fingerprint(tr)
  local fp = {}
  for _, name in ipairs(tr:tables()) do
    local t = tr[name]
    local cols = {}
    for _, c in ipairs(t:columns()) do
      local ok, col = pcall(function() return t[c] end)
      -- a column that fails to load must fail alike both ways
      if not ok then
        cols[c] = {all = "error: " .. tostring(col)}
        goto next_column
      end
      local vals = col:totable()
      local parts, nonnull = {}, 0
      for i = 1, #t do
        local v = vals[i]
        if v ~= nil then nonnull = nonnull + 1 end
        parts[i] = v == nil and "\0" or (math.type(v) == "float" and string.format("%.17g", v) or tostring(v))
      end
      local ty = t:coltype(c)
      local numeric = ty == "i64" or ty == "i32" or ty == "f64"
      cols[c] = {nonnull = nonnull, sum = numeric and col:sum() or nil, all = table.concat(parts, "\31")}
      ::next_column::
    end
    fp[name] = {rows = #t, cols = cols}
  end
  return fp
end

local function same_fingerprint(a, b, what)
  for name, ta in pairs(a) do
    local tb = b[name]
    T.ok(tb, what .. ": table " .. name)
    T.eq(tb.rows, ta.rows, what .. ": rows of " .. name)
    for c, ca in pairs(ta.cols) do
      -- columns that name where a report came from differ by design
      if not (name == "reports" and (c == "path")) then
        local cb = tb.cols[c]
        T.ok(cb, what .. ": column " .. name .. "." .. c)
        T.eq(cb.nonnull, ca.nonnull, what .. ": non-NULL values of " .. name .. "." .. c)
        T.eq(cb.sum, ca.sum, what .. ": sum of " .. name .. "." .. c)
        T.ok(cb.all == ca.all, what .. ": values of " .. name .. "." .. c)
      end
    end
  end
end

local function sql_count_or_zero(path, tbl)
  if T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" .. tbl .. "'") == 0 then
    return 0
  end
  return T.sql1(path, "SELECT count(*) FROM " .. tbl)
end

return {
  {"every export bundled and read back equals the export, table by table", function()
    for _, path in ipairs(T.exports()) do
      local out = tmp .. "/" .. basename(path) .. ".zip"
      assert(bundle.write{output = out, exports = {path}})
      local direct = assert(nsl.open(path))
      local viab = assert(nsl.open(out))
      T.eq(viab:nreports(), 1, basename(path) .. ": reports")
      -- the oracle for the row counts of the activity tables: SQL on the export
      T.eq(#viab.kernels, sql_count_or_zero(path, "CUPTI_ACTIVITY_KIND_KERNEL"), basename(path) .. ": kernels")
      T.eq(#viab.memcpy, sql_count_or_zero(path, "CUPTI_ACTIVITY_KIND_MEMCPY"), basename(path) .. ": memcpy")
      T.eq(#viab.osrt, sql_count_or_zero(path, "OSRT_API"), basename(path) .. ": osrt")
      same_fingerprint(fingerprint(direct), fingerprint(viab), basename(path))
      T.eq(viab.reports.path[1], out .. ":reports/" .. basename(path), "report path names the member")
      direct:close()
      viab:close()
    end
  end},

  {"the manifest says what the export says (SQL on the export as oracle)", function()
    local path = T.data("nsys/nvfuser_2024.6.sqlite")
    local out = tmp .. "/manifest.zip"
    assert(bundle.write{output = out, exports = {path}, ranks = {3}, note = "a note"})
    local b = assert(nsl.bundle_open(out))
    local m = b:manifest()
    local r = m.reports[1]
    T.eq(r.member, "reports/nvfuser_2024.6.sqlite", "member")
    T.eq(r.rank, 3, "rank")
    T.eq(m.ranks[1], 3, "ranks")
    T.eq(m.note, "a note", "note")
    T.eq(r.nsys_version, T.sql1(path, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'"), "nsys")
    T.eq(r.schema_version, T.sql1(path, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"), "schema")
    T.eq(r.host, T.sql1(path, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'"), "host")
    T.eq(r.session_start_utc_ns, T.sql1(path, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME"), "start")
    local cmd = T.sql(path, [[SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:COMMAND'
      UNION ALL SELECT value FROM (SELECT value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_0:ARGUMENT_%'
      ORDER BY CAST(substr(name, 20) AS INTEGER))]])
    T.eq(#m.command, #cmd, "command words")
    for i, row in ipairs(cmd) do T.eq(m.command[i], row[1], "command word " .. i) end
    T.eq(#m.devices, T.sql1(path, "SELECT count(*) FROM TARGET_INFO_GPU"), "devices")
    T.eq(m.devices[1].name, T.sql1(path, "SELECT name FROM TARGET_INFO_GPU LIMIT 1"), "device name")
    T.eq(m.format_version, 1, "format version")
    b:close()
    -- an export without a recorded command: none in the manifest
    local old = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")
    assert(bundle.write{output = out, exports = {old}})
    b = assert(nsl.bundle_open(out))
    T.eq(b:manifest().command, nil, "no command")
    T.eq(b:manifest().reports[1].rank, 0, "rank from the file name")
    b:close()
  end},

  {"trace:metadata is META_DATA_CAPTURE (sqlite3 as oracle), through a bundle too", function()
    for _, f in ipairs{"nsys/tiny_2026.1.sqlite", "nsys/pytorch_nccl_2gpu_2026.2.sqlite", "nsys/cuda_2021.2.sqlite"} do
      local path = T.data(f)
      local want, n = {}, 0
      if T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE name = 'META_DATA_CAPTURE'") == 1 then
        for _, r in ipairs(T.sql(path, "SELECT name, value FROM META_DATA_CAPTURE WHERE value IS NOT NULL")) do
          if want[r[1]] == nil then n = n + 1 end
          want[r[1]] = r[2]
        end
      end
      local tr = assert(nsl.open(path))
      local got, m = tr:metadata(0), 0
      for k, v in pairs(got) do
        m = m + 1
        T.eq(v, want[k], f .. ": " .. k)
      end
      T.eq(m, n, f .. ": entries")
      T.raises(function() return tr:metadata(1) end, "no such report", "report out of range")
    end
    local out = tmp .. "/metadata.zip"
    assert(bundle.write{output = out, exports = {T.data("nsys/tiny_2026.1.sqlite")}})
    local b = assert(nsl.open(out))
    local e = assert(nsl.open(T.data("nsys/tiny_2026.1.sqlite")))
    local bm, em = b:metadata(0), e:metadata(0)
    for k, v in pairs(em) do T.eq(bm[k], v, "bundle: " .. k) end
    T.ok(next(em) ~= nil, "tiny has capture metadata")
  end},

  {"trace:members and trace:member list and read the bundle's files", function()
    local src = tmp .. "/src"
    assert(nsl.mkdir_p(src .. "/pkg/.git"))
    assert(nsl.mkdir_p(src .. "/pkg/__pycache__"))
    write(src .. "/train.py", "print('train')\n")
    write(src .. "/pkg/model.py", "class Model: pass\n")
    write(src .. "/pkg/.git/HEAD", "ref: main\n")
    write(src .. "/pkg/__pycache__/model.pyc", "\0\1")
    write(tmp .. "/env.txt", "A=1\n")
    local members = {}
    assert(bundle.add_paths(members, "meta", {tmp .. "/env.txt"}, true))
    assert(bundle.add_paths(members, "sources", {src}))
    local out = tmp .. "/meta.zip"
    assert(bundle.write{output = out, exports = {T.data("nsys/tiny_2026.1.sqlite")}, members = members})
    local tr = assert(nsl.open(out))
    local metas = tr:members(0, "meta/")
    T.eq(#metas, 1, "meta files")
    T.eq(metas[1], "meta/env.txt", "meta name")
    T.eq(tr:member(0, "meta/env.txt"), "A=1\n", "meta content")
    local srcs = tr:members(0, "sources/")
    table.sort(srcs)
    T.eq(#srcs, 2, "hidden folders and __pycache__ are skipped")
    local rel = src:gsub("^/", "")
    T.eq(srcs[1], "sources/" .. rel .. "/pkg/model.py", "source name")
    T.eq(srcs[2], "sources/" .. rel .. "/train.py", "source name")
    T.eq(tr:member(0, srcs[2]), "print('train')\n", "source content")
    local none, msg = tr:member(0, "sources/nope.py")
    T.eq(none, nil, "absent member")
    T.ok(msg:find("nope.py", 1, true), "message names the member")
    -- every member but the manifest, as unzip lists them
    local p = assert(io.popen("unzip -Z1 " .. T.shell_quote(out) .. " | grep -v '^manifest.json$' | grep -c .", "r"))
    local want = tonumber(p:read("a"))
    p:close()
    T.eq(#tr:members(0, ""), want, "all members = unzip -Z1 (the manifest left out)")
    -- an export has no archive members
    local plain = assert(nsl.open(T.data("nsys/tiny_2026.1.sqlite")))
    T.eq(#plain:members(0, "meta/"), 0, "export: no meta")
    local nomem, why = plain:member(0, "meta/env.txt")
    T.eq(nomem, nil, "export: no member")
    T.ok(why:find("no archive members", 1, true), "message: " .. tostring(why))
    T.eq(plain:inputs()[1], T.data("nsys/tiny_2026.1.sqlite"), "inputs")
    -- two bundles: each report sees its own bundle's members
    local tr2 = assert(nsl.open{out, out})
    T.eq(#tr2.reports, 2, "two reports")
    T.eq(#tr2:members(0, "sources/"), 2, "first bundle's sources")
    T.eq(#tr2:members(1, "sources/"), 2, "second bundle's sources")
  end},

  {"an nsys-jax archive's sources/ are trace:members (a plain zip: unzip lists them)", function()
    local zip = T.data("nsys-jax/pax_fsdp4_4proc_proc0.zip")
    local p = assert(io.popen("unzip -Z1 " .. T.shell_quote(zip)))
    local want = {}
    for line in p:lines() do
      if line:match("^sources/.+[^/]$") then want[#want + 1] = line end
    end
    p:close()
    table.sort(want)
    local tr = assert(nsl.open(zip))
    local got = tr:members(0, "sources/")
    table.sort(got)
    T.eq(#got, #want, "number of sources")
    for i = 1, #want do T.eq(got[i], want[i], "source " .. i) end
    local q = assert(io.popen("unzip -p " .. T.shell_quote(zip) .. " " .. T.shell_quote(want[1])))
    T.ok(tr:member(0, want[1]) == q:read("a"), "content as unzip gives it")
    q:close()
    T.eq(#tr:members(0, "meta/"), 0, "no meta/ folder")
  end},

  {"relative, absolute and .. paths become member names inside sources/", function()
    T.eq(bundle.member_name("sources", "./a/b.py"), "sources/a/b.py", "./")
    T.eq(bundle.member_name("sources", "/x/y.py"), "sources/x/y.py", "absolute")
    write(tmp .. "/up.py", "x")
    local name = bundle.member_name("sources", tmp .. "/src/../up.py")
    T.eq(name, "sources/" .. nsl.realpath(tmp .. "/up.py"):gsub("^/", ""), "..")
  end},

  {"secrets never reach the environment file", function()
    local text = bundle.environment_text{PATH = "/bin", HF_TOKEN = "t", AWS_SECRET_ACCESS_KEY = "s", DB_PASSWORD = "p",
                                        api_key = "k", MY_PASSWD = "q", GCP_CREDENTIALS = "c", LOCAL_RANK = "0"}
    T.eq(text, "LOCAL_RANK=0\nPATH=/bin\n", "filtered and sorted")
  end},

  {"the environment is recorded by an allow-list, URL credentials removed", function()
    local text = bundle.environment_text{
      CUDA_VISIBLE_DEVICES = "0,1", NCCL_DEBUG = "INFO", SLURM_JOB_ID = "42", HOSTNAME = "node7",
      TORCHINDUCTOR_CACHE_DIR = "/tmp/i", MYSQL_PWD = "m", PGPASS = "p", GITHUB_PAT = "g", AUTH = "a",
      DATABASE_URL = "postgres://bob:pw@db/x", https_proxy = "http://u:p@proxy:3128", HOME = "/home/u",
      NCCL_IB_AUTH_KEY = "k", TORCH_RDZV_ENDPOINT = "etcd://alice:s3@cr@t@rdzv:2379/a?b=c@d http://x@y",
      XLA_FLAGS = "--xla_dump_to=/d"}
    T.eq(text, "CUDA_VISIBLE_DEVICES=0,1\nHOSTNAME=node7\nNCCL_DEBUG=INFO\nSLURM_JOB_ID=42\n" ..
               "TORCHINDUCTOR_CACHE_DIR=/tmp/i\n" ..
               "TORCH_RDZV_ENDPOINT=etcd://<redacted>@rdzv:2379/a?b=c@d http://<redacted>@y\n" ..
               "XLA_FLAGS=--xla_dump_to=/d\n", "allowed, redacted, sorted")
  end},

  {"embed stores an analysis's tables, results and files and replaces an older run", function()
    local out = tmp .. "/embed.zip"
    assert(bundle.write{output = out, exports = {T.data("nsys/tiny_2026.1.sqlite")}})
    local output = require("nsl.engine.output")
    local o = output.new{analysis = "demo", format = "csv", embed = true}
    o:table("counts", nsl.table{{"name", {"a", "b"}}, {"n", {1, 2}}})
    o:file("plot.svg", "<svg/>")
    assert(bundle.embed({out}, "demo", o))
    local b = assert(nsl.bundle_open(out))
    T.eq(b:read("analyses/demo/counts.csv"), "name,n\na,1\nb,2\n", "table as CSV")
    T.eq(b:read("analyses/demo/plot.svg"), "<svg/>", "file")
    T.ok(b:read("analyses/demo/results.json"):find('"analysis": "demo"', 1, true), "results.json")
    T.eq(b:manifest().analyses[1].name, "demo", "manifest lists it")
    b:close()
    local o2 = output.new{analysis = "demo", format = "csv", embed = true}
    o2:table("other", nsl.table{{"x", {1}}})
    assert(bundle.embed({out}, "demo", o2))
    b = assert(nsl.bundle_open(out))
    local names = {}
    for _, m in ipairs(b:members("analyses/")) do names[#names + 1] = m.name end
    T.eq(table.concat(names, " "), "analyses/demo/other.csv analyses/demo/results.json", "older results replaced")
    T.eq(#b:manifest().analyses, 1, "listed once")
    assert(b:verify())
    b:close()
    local ok, msg = bundle.embed({T.data("nsys/tiny_2026.1.sqlite")}, "demo", o2)
    T.eq(ok, nil, "an export cannot take results")
    T.ok(msg:find("bundle"), msg)
  end},

  {"profile: --condition over the environment", function()
    local env = {LOCAL_RANK = "0", OMPI_COMM_WORLD_RANK = "3", NAME = "x"}
    T.eq(profile.condition("LOCAL_RANK==0", env), true, "number")
    T.eq(profile.condition("LOCAL_RANK == 1", env), false, "other number")
    T.eq(profile.condition('env.OMPI_COMM_WORLD_RANK == "0"', env), false, "string")
    T.eq(profile.condition('env.OMPI_COMM_WORLD_RANK == "3"', env), true, "string")
    T.eq(profile.condition("OMPI_COMM_WORLD_RANK != 3", env), false, "!=")
    T.eq(profile.condition("UNSET == 0", env), false, "unset is nil")
    T.eq(profile.condition("rank % 2 == 1", env, 3), true, "rank")
    T.eq(profile.condition("NAME == 'x' and LOCAL_RANK < 1", env), true, "and")
    local v, err = profile.condition("LOCAL_RANK ==", env)
    T.eq(v, nil, "syntax error")
    T.ok(err:find("--condition", 1, true), err)
    v, err = profile.condition("UNSET + 1 > 0", env)
    T.eq(v, nil, "runtime error")
    T.eq(profile.rank({OMPI_COMM_WORLD_RANK = "5"}), 5, "rank from MPI")
    T.eq(profile.rank({SLURM_PROCID = "2", RANK = "1"}), 1, "RANK first")
    T.eq(profile.rank({}, "7"), 7, "--rank")
    T.eq(profile.rank({}), nil, "no rank")
  end},

  {"profile: -o expansion and nsys options", function()
    local env = {JOB = "42"}
    T.eq(profile.expand_output("run-%q{JOB}-%r-%%.zip", env, 3), "run-42-3-%.zip", "expansion")
    T.eq(profile.expand_output("p%p.zip", env), "p" .. nsl.getpid() .. ".zip", "pid")
    T.eq(profile.expand_output("%h.zip", env), nsl.hostname() .. ".zip", "host")
    local bad, err = profile.expand_output("x%z.zip", env)
    T.eq(bad, nil, "unknown")
    T.ok(err:find("%z", 1, true), err)
    local argv = profile.nsys_argv("nsys", {}, "/w/r", {"python", "t.py"})
    T.eq(table.concat(argv, " "), "nsys profile --trace=cuda,nvtx,osrt,cublas,cudnn --cuda-graph-trace=node "
         .. "--output=/w/r --force-overwrite=true python t.py", "defaults")
    argv = profile.nsys_argv("nsys", {"-t", "cuda", "--sample=none"}, "/w/r", {"a"})
    T.eq(table.concat(argv, " "), "nsys profile --cuda-graph-trace=node -t cuda --sample=none --output=/w/r "
         .. "--force-overwrite=true a", "-t replaces --trace")
    argv = profile.nsys_argv("nsys", {"--trace=nvtx", "--cuda-graph-trace=graph"}, "/w/r", {"a"})
    T.eq(table.concat(argv, " "), "nsys profile --trace=nvtx --cuda-graph-trace=graph --output=/w/r "
         .. "--force-overwrite=true a", "both replaced")
  end},

  {"nsl.spawn: exit codes, signals, environment, redirection, no shell", function()
    T.eq(nsl.spawn({"sh", "-c", "exit 7"}), 7, "exit code")
    local code, how, sig = nsl.spawn({"sh", "-c", "kill -TERM $$"})
    T.eq(code, 143, "128 + signal")
    T.eq(how, "signal", "how")
    T.eq(sig, 15, "signal number")
    local out = tmp .. "/spawn.txt"
    T.eq(nsl.spawn({"sh", "-c", "printf %s \"$X\"; exit 0"}, {env = {X = "a b;$(id)"}, stdout = out}), 0, "env")
    T.eq(T.read(out), "a b;$(id)", "value passed as is")
    T.eq(nsl.spawn({"printf", "%s|", "$(id)", "a b"}, {stdout = out}), 0, "argv")
    T.eq(T.read(out), "$(id)|a b|", "arguments are never interpreted")
    local none, msg = nsl.spawn({tmp .. "/no-such-program"})
    T.eq(none, nil, "missing program")
    T.ok(msg:find("no-such-program", 1, true), msg)
    T.raises(function() nsl.spawn({}) end, "argv")
  end},

  {"cleanup", function()
    assert(nsl.rmtree(tmp))
    T.eq(nsl.stat(tmp), nil, "temporary folder removed")
  end},
}
