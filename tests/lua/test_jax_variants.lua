-- nsys-jax archives of other shapes than the four golden ones, derived from
-- them: without the metadata Parquet files (each alone and all together, as
-- nsys-jax releases of mid-2024 wrote them), members in another order, the
-- nsys-jax-combine layout of such archives, and one process's archive alone.
-- Every number is checked against the golden results of NVIDIA's own nsys-jax
-- code on the original archives (../shared/data/nsys-jax/golden): the
-- metadata files carry no number the frames need, so the goldens must hold
-- on every variant.
local T = ...
local nsl = require("nsl")
local jax = require("nsl.jax")
local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)

local D = T.data("nsys-jax")
local G4, G0 = D .. "/golden/combined4/", D .. "/golden/proc0/"
local function proc(p) return D .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end

local METADATA = {"thread-metadata.parquet", "device-metadata.parquet", "system-metadata.parquet"}
-- what a mid-2024 nsys-jax archive lacks: the three metadata files and the
-- recipe's files.parquet and .nsys-analysis beside the projection
local NO_METADATA = "rm -f thread-metadata.parquet device-metadata.parquet system-metadata.parquet " ..
                    "nvtx_gpu_proj_trace/files.parquet nvtx_gpu_proj_trace/*.nsys-analysis"

local dir
local function tmp()
  dir = dir or J.tmpdir()
  return dir
end

--- The four archives edited by `edit` (shell commands), made once per name.
local made = {}
local function variant(name, edit, reverse)
  if not made[name] then
    local list = {}
    for p = 0, 3 do
      list[p + 1] = J.variant(proc(p), string.format("%s/%s_proc%d.zip", tmp(), name, p), edit, reverse)
    end
    made[name] = list
  end
  return made[name]
end

local function load(paths, opts)
  local tr = assert(nsl.open(paths))
  local d = jax.load(tr, opts)
  d.trace = tr
  d.compiled = jax.compiled_programs(d.compile_parts or jax.compile_frame(tr, d.store))
  return d
end

return {
  {"without any metadata file (mid-2024 nsys-jax): frames, step time, corrections, compile, heap equal the goldens",
   function()
    local v = variant("nometa", NO_METADATA)
    local tr = assert(nsl.open(v[1]))
    T.eq(#tr.threads, 0, "no thread metadata")
    T.eq(#tr.devices, 0, "no device metadata")
    T.eq(tr.reports.name[1], "nometa_proc0", "report named after the file")
    local d = load(v)
    J.check_goldens(jax, d, G4, "combined", {compile = true, corrections = true})
    -- the devices are the processes, in input order, as nsys-jax numbered them
    local devs = d.module:group_by("report", "Device"):keys()
    for i = 1, #devs do T.eq(devs.Device[i], devs.report[i], "device of report " .. devs.report[i]) end
    J.check_goldens(jax, load{v[1]}, G0, "proc0", {compile = true})
  end},

  {"each metadata file missing alone: the goldens hold", function()
    for _, member in ipairs(METADATA) do
      local v = variant("no-" .. member:match("^(%w+)"), "rm -f " .. member)
      J.check_goldens(jax, load(v, {compile = false}), G4, "without " .. member, {corrections = true})
    end
  end},

  {"members stored in another order: the goldens hold", function()
    local v = variant("reversed", NO_METADATA, true)
    J.check_goldens(jax, load(v, {compile = false}), G4, "reversed members", {corrections = true})
  end},

  {"an nsys-jax-combine archive of archives without metadata: one device per input, the goldens hold", function()
    local v = variant("nometa", NO_METADATA)
    local combined = tmp() .. "/combined.zip"
    local script = [[
      set -e
      cd "$1" && mkdir -p x && cd x
      for p in 0 1 2 3; do
        mkdir -p ../in$p && (cd ../in$p && unzip -q "$1/nometa_proc$p.zip")
        (cd ../in$p && find . -type f | sed 's|^\./||') | while read -r m; do
          mkdir -p "$m" && cp "../in$p/$m" "$m/nometa_proc$p"
        done
      done
      zip -q -r ../combined.zip .
    ]]
    assert(os.execute(string.format("sh -c %s sh %s", T.shell_quote(script), T.shell_quote(tmp()))))
    T.ok(v[4], "inputs made")
    local d = load(combined)
    T.eq(#d.trace.reports, 4, "one report per input")
    J.check_goldens(jax, d, G4, "combined archive", {compile = true, corrections = true})
  end},

  {"analyses of CUDA activity recognise an archive: its JAX counterpart runs, no advice to profile with -t cuda",
   function()
    local counterpart = {classes = "op_runtime", gaps = "op_runtime", overlap = "bandwidth", nccl = "bandwidth",
                         heap = "heap", launch = false, iterations = "steady_state"}
    for name, tbl in pairs(counterpart) do
      local tables, out = T.run_analysis(name, {proc(0)})
      local text = {}
      for _, it in ipairs(out.items) do if it.kind == "text" then text[#text + 1] = tostring(it.text) end end
      text = table.concat(text, "\n")
      T.ok(not text:find("-t cuda", 1, true) and not text:find("cuda-memory-usage", 1, true), name .. ": no CUDA advice")
      if tbl then T.ok(tables[tbl], name .. " runs its JAX counterpart (table " .. tbl .. ")")
      else T.ok(text:find("jax_summary", 1, true), name .. " points at jax_summary") end
    end
    -- the counterparts' numbers are nsys-jax's: heap peak, op runtime
    T.eq(T.run_analysis("heap", {proc(0)}).heap.PeakBytes[1], 16384076800, "heap: jax_heap's golden peak")
    local op = T.run_analysis("classes", {proc(0)}).op_runtime
    local want = J.read(G0 .. "notebook_runtime_totals.json"):match('"fusion": ([%d.e-]+)')
    T.near(op.Ms[op.Operation:eq("fusion"):indices()[1] + 1], tonumber(want), 1e-9, "classes: fusion ms (golden)")
  end},

  {"the analyses run on an archive without metadata", function()
    local v = variant("nometa", NO_METADATA)
    for _, name in ipairs{"jax_summary", "jax_communication", "jax_heap", "summary", "straggler"} do
      local tables = T.run_analysis(name, v)
      T.ok(next(tables), name .. " made tables")
    end
    local tables = T.run_analysis("jax_heap", {v[1]})
    T.eq(tables.heap.PeakBytes[1], 16384076800, "jax_heap peak of the step function")
    J.cleanup()
  end},
}
