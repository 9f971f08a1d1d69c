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
local SMALL = os.getenv("NSL_TEST_SMALL") ~= nil
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

  -- In the ASan build (NSL_TEST_SMALL) the next two cases check the variants of proc0 alone against
  -- proc0's goldens: the same frames, one archive instead of four (the clock corrections across
  -- processes stay checked by the case above and the combined archive below).
  {"each metadata file missing alone: the goldens hold", function()
    for _, member in ipairs(METADATA) do
      local name = "no-" .. member:match("^(%w+)")
      if SMALL then
        local f = J.variant(proc(0), string.format("%s/%s_proc0.zip", tmp(), name), "rm -f " .. member)
        J.check_goldens(jax, load({f}, {compile = false}), G0, "proc0 without " .. member, {})
      else
        J.check_goldens(jax, load(variant(name, "rm -f " .. member), {compile = false}), G4, "without " .. member,
                        {corrections = true})
      end
    end
  end},

  {"members stored in another order, or under one top-level folder: the goldens hold", function()
    if SMALL then
      local f = J.variant(proc(0), tmp() .. "/reversed_proc0.zip", NO_METADATA, true)
      J.check_goldens(jax, load({f}, {compile = false}), G0, "proc0, reversed members", {})
    else
      local v = variant("reversed", NO_METADATA, true)
      J.check_goldens(jax, load(v, {compile = false}), G4, "reversed members", {corrections = true})
    end
    -- an archive extracted and zipped again as a folder
    local f = J.variant(proc(0), tmp() .. "/folder.zip", 'mkdir "$1.sub" && mv ./* "$1.sub"/ && mv "$1.sub" ./pax_run')
    local tr = assert(nsl.open(f))
    T.eq(#tr.reports, 1, "one report")
    T.ok(tr:member(0, "sources/opt/paxml/paxml/main.py"), "members read relative to the folder")
    J.check_goldens(jax, load{f}, G0, "under a folder", {compile = true})
  end},

  {"an nsys-jax-combine archive of archives without metadata: one device per input, the goldens hold", function()
    -- nsys-jax-combine's rule: a member equal in every input is stored once
    -- under its own name, any other as <member>/<input stem>
    local v = variant("nometa", NO_METADATA)
    local combined = tmp() .. "/combined.zip"
    local script = [[
      set -e
      cd "$1" && rm -rf x && mkdir -p x
      for p in 0 1 2 3; do mkdir -p in$p && (cd in$p && unzip -q -o "$1/nometa_proc$p.zip"); done
      (for p in 0 1 2 3; do (cd in$p && find . -type f | sed 's|^\./||'); done) | sort -u > members
      once=0; apart=0
      while read -r m; do
        same=1
        for p in 1 2 3; do cmp -s "in0/$m" "in$p/$m" || same=0; done
        if [ $same = 1 ]; then
          mkdir -p "x/$(dirname "$m")" && cp "in0/$m" "x/$m"; once=$((once + 1))
        else
          for p in 0 1 2 3; do
            if [ -f "in$p/$m" ]; then mkdir -p "x/$m" && cp "in$p/$m" "x/$m/nometa_proc$p"; fi
          done
          apart=$((apart + 1))
        fi
      done < members
      echo "$once $apart" > counts
      cd x && zip -q -r ../combined.zip .
    ]]
    assert(os.execute(string.format("sh -c %s sh %s", T.shell_quote(script), T.shell_quote(tmp()))))
    T.ok(v[4], "inputs made")
    local once, apart = J.read(tmp() .. "/counts"):match("(%d+) (%d+)")
    T.ok(tonumber(once) > 0 and tonumber(apart) > 0, "members stored once (" .. once .. ") and per input (" .. apart .. ")")
    local d = load(combined)
    T.eq(#d.trace.reports, 4, "one report per input")
    J.check_goldens(jax, d, G4, "combined archive", {compile = true, corrections = true})
  end},

  {"without thread metadata, one process driving four GPUs: launcher threads are local devices in thread-id order",
   function()
    -- the rule of nsys-jax's mid-2024 loader, over two real metadata-less
    -- reports and the threads of a one-process, four-GPU run: the step
    -- program launched from four worker threads, small programs from the main
    -- thread; the second process's devices follow the first's
    local v = variant("nometa", NO_METADATA)
    local tr = assert(nsl.open{v[1], v[2]})
    local rep, prog, pid, tid = {}, {}, {}, {}
    local function add(r, p, pd, t) rep[#rep + 1], prog[#prog + 1], pid[#pid + 1], tid[#tid + 1] = r, p, pd, t end
    for _, t in ipairs{2003, 2001, 2004, 2002} do add(0, "step", 1000, t) end
    add(0, "psum", 1000, 1000)
    add(0, "seed", 1000, 1000)
    for _, t in ipairs{3012, 3011, 3013, 3014} do add(1, "step", 3000, t) end
    add(1, "psum", 3000, 3000)
    local launch = nsl.table{{"report", rep}, {"m_ProgramId", prog}, {"pid", pid}, {"tid", tid}}
    local none = nsl.table{{"report", nsl.column{0}}, {"pid", nsl.column{0}}, {"tid", nsl.column{0}}}:head(0)
    local map = jax.thread_device_map(tr, launch, none)
    local want = {["0\0" .. "1000:2001"] = 0, ["0\0" .. "1000:2002"] = 1, ["0\0" .. "1000:2003"] = 2,
                  ["0\0" .. "1000:2004"] = 3, ["0\0" .. "1000:1000"] = 0, ["1\0" .. "3000:3011"] = 4,
                  ["1\0" .. "3000:3012"] = 5, ["1\0" .. "3000:3013"] = 6, ["1\0" .. "3000:3014"] = 7,
                  ["1\0" .. "3000:3000"] = 4}
    local n = 0
    for k, d in pairs(map) do
      T.eq(d, want[k], "device of " .. k:gsub("%z", " "))
      n = n + 1
    end
    T.eq(n, 10, "threads")
  end},

  {"no device for any module: one clear line, not an internal length check", function()
    local v = variant("nometa", NO_METADATA)
    local tr = assert(nsl.open(v[1]))
    local frames = require("nsl.jax.frames")   -- where jax.load's frames find the devices
    local saved = frames.thread_device_map
    frames.thread_device_map = function() return {} end   -- as if no launching thread were known
    local ok, e = pcall(jax.load, tr, {compile = false})
    frames.thread_device_map = saved
    T.ok(not ok and nsl.is_error(e) and not e.internal, "an error about the input")
    T.ok(tostring(e):find("no GPU found for any XLA module execution", 1, true), "says what is missing")
    -- and frames derived over no rows keep their types (the length check fired on a mistyped empty mask)
    local empty = nsl.table{{"k", nsl.column{"a"}}}:head(0)
    T.eq(jax.per_group(empty, {"k"}, function() return true end, "bool"):type(), "bool", "empty bool column")
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

  {"compare and diff of archives: steady time per XLA program and run = nsys-jax's steady frame (golden)", function()
    local procs = {proc(0), proc(1), proc(2), proc(3)}
    local t = T.run_analysis("compare", procs).jax_programs
    -- oracle: the golden steady module frame of the four archives, mean per (device, program name)
    local sum, cnt = {}, {}
    for _, g in ipairs(J.csv_records(G4 .. "module_frame_steady_aligned.csv.gz")) do
      local k = g.Device .. "|" .. g.Name
      sum[k], cnt[k] = (sum[k] or 0) + tonumber(g.ProjDurMs), (cnt[k] or 0) + 1
    end
    local n = 0
    for i = 1, #t do
      for p = 0, 3 do
        local k = p .. "|" .. t.Name[i]
        local label = "pax_fsdp4_4proc_proc" .. p
        if cnt[k] then
          T.eq(t[label .. " execs"][i], cnt[k], k .. " steady executions")
          T.near(t[label .. " ms"][i], sum[k] / cnt[k], 1e-9, k .. " ms")
          n = n + 1
        else
          T.eq(t[label .. " execs"][i], 0, k .. " not steady in nsys-jax")
        end
      end
    end
    local golden = 0
    for _ in pairs(cnt) do golden = golden + 1 end
    T.eq(n, golden, "every golden (device, program)")
    local d = T.run_analysis("diff", {proc(0), proc(3)}).jax_programs
    local row = d.Name:eq("pjit__wrapped_step_fn"):indices()[1] + 1
    local a, b = sum["0|pjit__wrapped_step_fn"] / 3, sum["3|pjit__wrapped_step_fn"] / 3
    T.near(d["after vs before (%)"][row], (b - a) * 100 / a, 1e-9, "diff: step time change")
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
