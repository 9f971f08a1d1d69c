-- nsys-jax archives: the source, the frames and the analyses of lua/nsl/jax.lua
-- against the reference results of NVIDIA's own nsys-jax code on the same
-- archives (../shared/data/nsys-jax/golden, read here through zcat/xzcat).
local T = ...
local nsl = require("nsl")
local jax = require("nsl.jax")

local D = T.data("nsys-jax")
local procs = {}
for p = 0, 3 do procs[p + 1] = D .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end
local G4, G0 = D .. "/golden/combined4/", D .. "/golden/proc0/"

local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
local read, parse_csv, csv_records, folded = J.read, J.parse_csv, J.csv_records, J.folded

-- ---- the traces, loaded once ----

local cache = {}
local function data(which)
  if not cache[which] then
    local tr = assert(nsl.open(which == "combined" and procs or {procs[1]}))
    local d = jax.load(tr)
    d.trace = tr
    d.compiled = jax.compiled_programs(d.compile_parts)
    cache[which] = d
  end
  return cache[which]
end

local compile_rows, index, compare_frame = J.compile_rows, J.index, J.compare_frame

-- Protobuf encoding by hand (no nsl encoder), for HloProtos built here from
-- hlo.proto's field numbers: a varint, an integer field, a length-delimited
-- field (message, string or bytes).
local function varint(n)
  local out = {}
  repeat
    local b = n & 0x7f
    n = n >> 7
    out[#out + 1] = string.char(n ~= 0 and (b | 0x80) or b)
  until n == 0
  return table.concat(out)
end
local function int(num, v) return varint(num << 3) .. varint(v) end
local function msg(num, body) return varint(num << 3 | 2) .. varint(#body) .. body end

return {
  {"the archive opens as one report per process with its tables", function()
    local tr = assert(nsl.open(procs[1]))
    T.eq(#tr.reports, 1, "reports")
    T.eq(tr.reports.name[1], "pax_fsdp4_4proc_proc0", "report name")
    T.eq(tr.reports.nsys_version[1], "2024.4.1", "nsys version from system-metadata")
    T.eq(tr.reports.host[1], "nvdl-a112-luna04", "host")
    -- trace.parquet has one extra root row without a RangeId (the mini CSV copy counts it)
    local lines = #parse_csv(read(D .. "/mini/proc0/nvtx_gpu_proj_trace.trace.csv.gz")) - 1
    T.eq(#tr.gpu_ranges, lines - 1, "gpu_ranges rows")
    T.eq(#tr.nvtx, 27891, "push/pop ranges (xz CSV)")
    T.eq(tr.devices.name[1], "NVIDIA A100-SXM4-40GB", "device")
    T.eq(tr.devices.compute_capability[1], "8.0", "compute capability")
    local g = tr.gpu_ranges
    T.eq(g.text[1], "TSL:XlaCompile:#module=jit__psum,program_id=1#", "first text")
    T.eq(g.dur[1], 3168, "projected duration")
    T.eq(g.orig_dur[1], 83320285, "orig duration (a pandas nullable integer stored as double)")
    local dumps = tr:members(0, "dump/")
    T.ok(#dumps > 60, "dump members listed")
    T.ok(tr:member(0, "sources/opt/paxml/paxml/main.py"):find("def main", 1, true), "source file readable")
  end},

  {"archive members and raw SQL go through the source interface: unzip is the oracle", function()
    local tr = assert(nsl.open(procs[1]))
    local q = T.shell_quote(procs[1])
    local p = assert(io.popen("unzip -Z1 " .. q .. " | grep -c '^dump/.*[^/]$'", "r"))
    local want = tonumber(p:read("a"))
    p:close()
    T.eq(#tr:members(0, "dump/"), want, "dump/ members = unzip -Z1")
    local name = "sources/opt/paxml/paxml/main.py"
    p = assert(io.popen("unzip -p " .. q .. " " .. T.shell_quote(name), "r"))
    local bytes = p:read("a")
    p:close()
    T.eq(tr:member(0, name), bytes, "member bytes = unzip -p")
    local none, msg = tr:member(0, "sources/nonesuch.py")
    T.eq(none, nil, "missing member")
    T.ok(msg:find("nonesuch", 1, true), "message names the member")
    T.raises(function() tr:sql(0, "SELECT 1") end, "not an SQLite export", "no SQL on an nsys-jax report")
    local ex = assert(nsl.open(T.data("nsys/tiny_2026.1.sqlite")))
    T.eq(#ex:members(0, ""), 0, "an export has no archive members")
    local nomem, why = ex:member(0, "x")
    T.eq(nomem, nil, "no member of an export")
    T.ok(why:find("has no archive members", 1, true), "message: " .. tostring(why))
    T.eq(ex:sql(0, "SELECT 7 AS n")[1].n, 7, "SQL on an export")
  end},

  {"frame row counts equal nsys-jax's (combined and proc0)", function()
    local c = data("combined")
    T.eq(#c.module, 1283, "module")
    T.eq(#c.thunk, 55299, "thunk")
    T.eq(#c.communication, 480, "communication")
    T.eq(compile_rows(c), 48100, "compile")
    local p = data("proc0")
    T.eq(#p.module, 323, "module proc0")
    T.eq(#p.thunk, 13827, "thunk proc0")
    T.eq(#p.communication, 120, "communication proc0")
    T.eq(compile_rows(p), 12025, "compile proc0")
  end},

  {"module and communication frames equal the golden ones row by row", function()
    local c = data("combined")
    compare_frame(c.module, G4 .. "module_frame_all.csv.gz", {"ProgramId", "ProgramExecution", "Device"},
                  {"Name", "OrigDurMs", "OrigStartMs", "ProjDurMs", "ProjStartMs", "NumThunks"}, 1e-9)
    compare_frame(c.communication, G4 .. "communication_frame_all.csv.gz",
                  {"ProgramId", "ProgramExecution", "Name", "ThunkExecution", "Device"},
                  {"ProjDurMs", "ProjStartMs", "ProjDurHiddenMs", "MessageSize", "Collective", "CollectiveSize",
                   "AlgorithmBandwidthGBPerSec", "BusBandwidthGBPerSec"}, 1e-6)
    compare_frame(data("proc0").module, G0 .. "module_frame_all.csv.gz", {"ProgramId", "ProgramExecution", "Device"},
                  {"Name", "ProjDurMs", "ProjStartMs", "NumThunks"}, 1e-9)
  end},

  {"thunk frame equals the golden one row by row", function()
    compare_frame(data("combined").thunk, G4 .. "thunk_frame_all.csv.gz",
                  {"ProgramId", "ProgramExecution", "Name", "ThunkExecution", "Device"},
                  {"ProjDurMs", "ProjStartMs", "Communication", "ProjDurHiddenMs", "OrigDurMs"}, 1e-6)
  end},

  {"clock corrections equal nsys-jax's within 0.01 ms; proc0 alone aligns too", function()
    local corr, size = jax.alignment(data("combined").communication)
    T.eq(size, 4, "collective size used")
    for _, g in ipairs(csv_records(G4 .. "alignment_device_corrections_ms.csv")) do
      T.near(corr[tonumber(g.Device)], tonumber(g["0"]), 0.01, "device " .. g.Device)
    end
    -- nsys-jax failed here ("Aligning 1 using collectives of size 4 is not implemented")
    T.ok(read(G0 .. "golden_run.log"):find("ALIGNMENT FAILED", 1, true), "golden records the failure")
    local c0 = jax.alignment(data("proc0").communication)
    T.eq(c0[0], 0.0, "a lone device needs no correction")
  end},

  {"steady step time and module table equal nsys-jax's summary", function()
    for which, g in pairs{combined = G4, proc0 = G0} do
      local d = data(which)
      J.check_module_table(jax, d, g, which)
    end
    local d = data("combined")
    local module = d.module:filter(~d.module.ProgramId:isin{"unknown"})
    local st = jax.module_stats(jax.steady(module, d.compiled, true), jax.steady(d.communication, d.compiled, true))
    local m = index(st, {"ProgramId"}, {"DurMeanMs", "WaitMeanMs", "WaitPercent"})["25fa0b3e673a92036f22550cd7bcb068"]
    T.near(m.DurMeanMs, 126.5079655556, 1e-9, "steady pjit__wrapped_step_fn ms/step")
    T.near(m.WaitMeanMs, 1.7491196666, 1e-8, "wait time")
    T.near(m.WaitPercent, 1.382616232, 1e-8, "wait percent")
  end},

  {"parallel-aware compile time equals nsys-jax's per range and in total", function()
    for which, want in pairs{combined = 263525.568938, proc0 = 69388.40487999999} do
      local st = jax.compile_statistics(data(which).compile_parts)
      T.near(st.DurNonChildMs:sum(), want, 1e-9, which .. " total compile ms")
      local mine = index(st, {"Name"}, {"DurNonChildMs"})
      local g = parse_csv(read((which == "combined" and G4 or G0) .. "compilation_statistics.csv"))
      for r = 2, #g do
        local name = g[r][1]
        T.ok(mine[name], which .. " range " .. name)
        T.near(mine[name].DurNonChildMs, tonumber(g[r][2]), 1e-7, which .. " " .. name)
      end
      T.eq(#g - 1, #st, which .. " ranges")
    end
  end},

  {"heap-simulator peaks equal nsys-jax's", function()
    local d = data("combined")
    local heaps = jax.heap(d.store, {"6f8097e242d8bf3b64f63c04c3f09c47", "25fa0b3e673a92036f22550cd7bcb068",
                                     "04555b1419fd4e5b8933dc47fbf80dbb"})
    T.eq(#heaps["6f8097e242d8bf3b64f63c04c3f09c47"], 0, "psum has no heap trace")
    for _, fp in ipairs{"25fa0b3e673a92036f22550cd7bcb068", "04555b1419fd4e5b8933dc47fbf80dbb"} do
      T.eq(#heaps[fp], 1, fp .. " traces")
      T.eq(heaps[fp][1].peak_bytes, 16384076800, fp .. " peak")
      T.eq(heaps[fp][1].n_events, 4278, fp .. " events")
    end
  end},

  {"heap peak of a hand-built trace with buffer sharing: XLA's heap-simulator semantics", function()
    -- An xla.HloProto encoded here from hlo.proto's field numbers (no nsl
    -- encoder): HloProto.buffer_assignment = 3; BufferAssignmentProto:
    -- logical_buffers = 1, heap_simulator_traces = 4; LogicalBufferProto:
    -- id = 1, size = 2; HeapSimulatorTrace: events = 1; Event: kind = 1
    -- (ALLOC 0, FREE 1, SHARE_WITH 2), buffer_id = 2, share_with_canonical_id = 5.
    local ALLOC, FREE, SHARE = 0, 1, 2
    local function ev(kind, id, canonical)
      return msg(1, (kind ~= ALLOC and int(1, kind) or "") .. int(2, id) .. (canonical and int(5, canonical) or ""))
    end
    -- buffers: A (id 1) 100 bytes, B (2) 60, C (3) 40, D (4) 30, E (5) 100
    local ba = msg(1, int(1, 1) .. int(2, 100)) .. msg(1, int(1, 2) .. int(2, 60)) ..
               msg(1, int(1, 3) .. int(2, 40)) .. msg(1, int(1, 4) .. int(2, 30)) .. msg(1, int(1, 5) .. int(2, 100))
    -- trace 1, the live bytes after each event worked out by hand:
    --   ALLOC A 100; B SHARE_WITH A 100 (A's region, no new memory); ALLOC C 140;
    --   FREE A 140 (B still holds the region); ALLOC D 170; FREE B 70 (the
    --   region's last user); E SHARE_WITH B 170 (the chain's root A, whose
    --   region is taken again); FREE C 130; FREE D 100; FREE E 0.  Peak 170.
    --   (Counting shares as allocations of their own size gives 240.)
    ba = ba .. msg(4, ev(ALLOC, 1) .. ev(SHARE, 2, 1) .. ev(ALLOC, 3) .. ev(FREE, 1) .. ev(ALLOC, 4) ..
                      ev(FREE, 2) .. ev(SHARE, 5, 2) .. ev(FREE, 3) .. ev(FREE, 4) .. ev(FREE, 5))
    -- trace 2, no sharing: ALLOC C 40, ALLOC D 70, FREE C 30, FREE D 0.  Peak 70.
    ba = ba .. msg(4, ev(ALLOC, 3) .. ev(ALLOC, 4) .. ev(FREE, 3) .. ev(FREE, 4))
    local h = assert(nsl.hlo_decode(msg(3, ba), "hand-built"))
    local heap = h:heap()
    T.eq(#heap, 2, "traces")
    T.eq(heap[1].peak_bytes, 170, "peak with sharing")
    T.eq(heap[1].n_events, 10, "events")
    T.eq(heap[1].n_share, 2, "share events")
    T.eq(heap[1].n_alloc, 3, "alloc events")
    T.eq(heap[2].peak_bytes, 70, "peak without sharing")
  end},

  {"h:instructions(): every instruction of every computation, in order, with its metadata", function()
    -- HloProto.hlo_module = 1; HloModuleProto.computations = 3;
    -- HloComputationProto: name = 1, instructions = 2; HloInstructionProto:
    -- name = 1, opcode = 2, metadata = 7; OpMetadata: op_name = 2,
    -- source_file = 3, source_line = 4.  Empty strings read as NULL.
    local function inst(name, opcode, op_name, file, line)
      local md = op_name and msg(7, msg(2, op_name) .. msg(3, file) .. int(4, line)) or ""
      return msg(2, msg(1, name) .. msg(2, opcode) .. md)
    end
    local want = {
      {"main", "p0", "parameter"},
      {"main", "dot.1", "dot", "jit(f)/dot_general", "model.py", 12},
      {"fused", "add.2", "add", "jit(f)/add", "layers/mlp.py", 140},
    }
    local comps = {main = {}, fused = {}}
    for _, w in ipairs(want) do table.insert(comps[w[1]], inst(table.unpack(w, 2))) end
    local body = msg(3, msg(1, "main") .. table.concat(comps.main)) .. msg(3, msg(1, "fused") .. table.concat(comps.fused))
    local h = assert(nsl.hlo_decode(msg(1, body), "hand-built"))
    local t = h:instructions()
    T.eq(#t, #want, "rows")
    local cols = {"computation", "name", "opcode", "op_name", "source_file", "source_line"}
    for i, w in ipairs(want) do
      for k, c in ipairs(cols) do
        T.eq(t[c][i], w[k] or (c == "source_line" and 0 or nil), "row " .. i .. " " .. c)
      end
    end
  end},

  {"op runtime totals and folded flame graphs equal the notebook's", function()
    for which, g in pairs{combined = G4, proc0 = G0} do
      local d = data(which)
      local has = #d.communication > 0
      local corr = jax.alignment(d.communication)
      local m = jax.apply_alignment(d.module:filter(~d.module.ProgramId:isin{"unknown"}), corr)
      local t = jax.apply_alignment(d.thunk:filter(~d.thunk.ProgramId:isin{"unknown"}), corr)
      local a = jax.attribution(d, jax.steady(m, d.compiled, has), jax.steady(t, d.compiled, has))
      local totals = read(g .. "notebook_runtime_totals.json")
      for k, v in totals:match('"op_runtime_ms": (%b{})'):gmatch('"([^"]+)": ([-%d.e]+)') do
        T.near(a.op_runtime[k], tonumber(v), 1e-9, which .. " op_runtime " .. k)
      end
      T.near(a.totals.wall, tonumber(totals:match('"all_modules_wall_ms": ([%d.e]+)')), 1e-9, which .. " wall")
      for _, kind in ipairs{"source", "op_name"} do
        local want, nwant = folded(read(g .. kind .. "_flamegraph.folded.xz"))
        local got, ngot = folded(jax.folded(a[kind], a["order_" .. kind]))
        T.eq(ngot, nwant, which .. " " .. kind .. " stacks")
        for k, v in pairs(want) do
          T.ok(got[k], which .. " " .. kind .. " stack " .. k:sub(1, 120))
          T.near(got[k], v, 1e-3, which .. " " .. kind .. " weight")
        end
      end
    end
  end},

  {"communication bandwidth and hidden time equal nsys-jax's; proc0 alone works", function()
    local d = data("combined")
    local comm = jax.apply_alignment(d.communication, jax.alignment(d.communication))
    local steady = jax.steady(comm, d.compiled, true)
    local bw = jax.bandwidth(steady)
    local mine = {}
    for i = 1, #bw do mine[bw.MessageSize[i] .. "|" .. bw.Collective[i]] = jax.ufloat(bw.BusBwMean[i], bw.BusBwErr[i]) end
    local rows = parse_csv(read(G4 .. "analysis_communication/communication_summary.csv"))
    local head, n = rows[2], 0
    for r = 3, #rows do
      if #rows[r] < 2 or rows[r][1] == "" then break end
      for k = 2, #head do
        if rows[r][k] ~= "-" then
          T.eq(mine[rows[r][1] .. "|" .. head[k]], rows[r][k], "bandwidth " .. rows[r][1] .. " " .. head[k])
          n = n + 1
        end
      end
    end
    T.eq(n, #bw, "bandwidth cells")
    local hr, overall = jax.hidden_ratio(steady)
    T.near(overall, 0.006498033414832545, 1e-9, "overall hidden/total")
    T.eq(#steady, 288, "steady communication rows")
    -- per collective: nsys-jax's printed table (summed hidden / summed total); the
    -- golden run's pandas labels each collective by its first letter, so the
    -- table's rows are matched by first letter and value
    local printed = {}
    local text = read(G4 .. "analysis_communication/communication_stdout.txt")
    for letter, v in text:gmatch("|%s+(%a)%s+|%s+([%d.e-]+)%s+|") do printed[#printed + 1] = {letter, tonumber(v)} end
    T.eq(#printed, #hr, "collectives in nsys-jax's hidden table")
    for i = 1, #hr do
      local c, found = hr.Collective[i], false
      for _, p in ipairs(printed) do
        if p[1] == c:sub(1, 1) and math.abs(p[2] - hr.HiddenToTotal[i]) <= 1e-9 * p[2] then found = true end
      end
      T.ok(found, c .. ": HiddenToTotal " .. hr.HiddenToTotal[i] .. " is in nsys-jax's table")
    end
    -- the older definition, mean of the rows' ratios, over nsys-jax's own steady,
    -- aligned communication frame
    local sum, cnt = {}, {}
    for _, g in ipairs(csv_records(G4 .. "communication_frame_steady_aligned.csv.gz")) do
      local h, e = tonumber(g.ProjDurHiddenMs), tonumber(g.ProjDurMs)
      if h + e > 0 then
        sum[g.Collective] = (sum[g.Collective] or 0) + h / (h + e)
        cnt[g.Collective] = (cnt[g.Collective] or 0) + 1
      end
    end
    local hm = jax.hidden_ratio(steady, "mean")
    for i = 1, #hm do
      local c = hm.Collective[i]
      T.near(hm.MeanHiddenToTotal[i], sum[c] / cnt[c], 1e-9, "mean of ratios " .. c)
    end
    -- nsys-jax's communication analysis failed on proc0 alone
    T.ok(read(G0 .. "analysis_communication/communication_stdout.txt"):find("AssertionError", 1, true), "golden failure")
    local p = data("proc0")
    local c0 = jax.apply_alignment(p.communication, jax.alignment(p.communication))
    T.ok(#jax.bandwidth(jax.steady(c0, p.compiled, true)) > 0, "proc0 bandwidth table")
  end},

  {"figures: the bandwidth points and the hidden/exposed bars equal nsys-jax's tables and frame", function()
    local figs = T.figures("jax_communication", procs)
    -- every point drawn is a cell of nsys-jax's bandwidth table: same collective and
    -- size, the mean within half a unit of the last digit it printed
    local rows = parse_csv(read(G4 .. "analysis_communication/communication_summary.csv"))
    local head, want, nwant = rows[2], {}, 0
    for r = 3, #rows do
      if #rows[r] < 2 or rows[r][1] == "" then break end
      for k = 2, #head do
        if rows[r][k] ~= "-" then want[head[k] .. "|" .. rows[r][1]] = rows[r][k]; nwant = nwant + 1 end
      end
    end
    local bw = assert(figs.bandwidth, "bandwidth figure").values
    local n = 0
    for _, s in ipairs(bw.series) do
      T.eq(#s.x, #s.y, s.label .. ": x and y")
      for i = 1, #s.x do
        local cell = want[s.label .. "|" .. s.x[i]]
        T.ok(cell, "point " .. s.label .. " " .. s.x[i] .. " is in nsys-jax's table")
        if cell then
          local mean = cell:match("^([%d.]+)%(")
          local frac = mean:match("%.(%d+)$")
          local half = 0.5 * 10 ^ -(frac and #frac or 0)   -- T.near's tolerance is relative above 1
          T.near(s.y[i], tonumber(mean), half / math.max(1, tonumber(mean)), s.label .. " " .. s.x[i] .. ": " .. cell)
        end
        n = n + 1
      end
    end
    T.eq(n, nwant, "one point per cell of nsys-jax's table")
    -- the bars: per collective the shares of its time hidden and exposed, from the
    -- sums of nsys-jax's steady, aligned communication frame
    local hidden, exposed = {}, {}
    for _, g in ipairs(csv_records(G4 .. "communication_frame_steady_aligned.csv.gz")) do
      hidden[g.Collective] = (hidden[g.Collective] or 0) + tonumber(g.ProjDurHiddenMs)
      exposed[g.Collective] = (exposed[g.Collective] or 0) + tonumber(g.ProjDurMs)
    end
    local bars = assert(figs.hidden, "hidden figure").values
    local ncoll = 0
    for _ in pairs(hidden) do ncoll = ncoll + 1 end
    T.eq(#bars.categories, ncoll, "one bar per collective")
    T.eq(bars.series[1].label, "hidden under computation", "first series")
    for i, label in ipairs(bars.categories) do
      local c = label:match("^(%S+) %(")
      T.ok(hidden[c], "bar " .. label .. " is a collective of nsys-jax's frame")
      local total = hidden[c] + exposed[c]
      T.near(bars.series[1].values[i], hidden[c] / total, 1e-9, c .. ": hidden share")
      T.near(bars.series[2].values[i], exposed[c] / total, 1e-9, c .. ": exposed share")
      T.near(bars.totals[i], 1, 1e-12, c .. ": the shares add up")
      T.near(bars.hidden_ms[i], hidden[c], 1e-9, c .. ": hidden ms")
      T.near(bars.exposed_ms[i], exposed[c], 1e-9, c .. ": exposed ms")
    end
  end},

  {"figure: the heap-simulator peak bars equal nsys-jax's heap_peaks.json", function()
    local figs = T.figures("jax_heap", procs)
    local want = require("nsl.util.json").decode(read(G4 .. "heap_peaks.json"))
    local v = assert(figs.heap_peaks, "heap_peaks figure").values
    local nwant = 0
    for _, list in pairs(want) do nwant = nwant + #list end
    T.eq(#v.categories, nwant, "one bar per heap-simulator trace of nsys-jax's")
    for i, fp in ipairs(v.programs) do
      T.ok(want[fp] and #want[fp] == 1, fp .. ": one trace in nsys-jax's")
      T.eq(v.series[1].values[i], want[fp][1].peak_bytes, fp .. ": peak bytes")
      T.ok(v.categories[i]:find(fp:sub(1, 8), 1, true), "bar " .. i .. " names its fingerprint: " .. v.categories[i])
    end
  end},

  {"programs=structure joins the step function split by autotuning", function()
    local tr = assert(nsl.open(procs))
    local d = jax.load(tr, {programs = "structure", compile = false})
    local steps = d.module:filter(d.module.Name:eq("pjit__wrapped_step_fn"))
    T.eq(#steps:group_by("ProgramId"):keys(), 1, "one program")
    T.eq(#steps, 20, "executions on all four devices")
    local corr = jax.alignment(d.communication)
    T.ok(math.abs(corr[3]) > 1, "device 3 now gets a real correction")
    -- the corrections still centre the devices: their mean skew is small against the spread
    local jit_reshape = d.module:filter(d.module.Name:eq("jit_reshape"))
    T.eq(#jit_reshape:group_by("ProgramId"):keys(), 3, "different shapes stay different programs")
  end},

  {"summary delegates to jax_summary on an nsys-jax trace", function()
    local tables = T.run_analysis("summary", {procs[1]}, {"limit=50"})   -- hands over through out:run
    T.ok(tables.modules, "module table")
    T.eq(tables.modules.Name[1], "pjit__wrapped_step_fn", "top module of proc0")
    T.ok(tables.compile_ranges, "compile table")
  end},

  {"an nsys-jax-combine archive (<path>/<input stem> members) holds one report per input", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. T.shell_quote(dir .. "/x")))
    -- every member differs between the inputs: all of them become <path>/<stem>
    local script = [[
      set -e
      cd "$1"
      for p in 0 1; do
        mkdir -p in$p && (cd in$p && unzip -q "$2/pax_fsdp4_4proc_proc$p.zip")
        (cd in$p && find . -type f | sed 's|^\./||') | while read -r m; do
          mkdir -p "x/$m" && cp "in$p/$m" "x/$m/pax_fsdp4_4proc_proc$p"
        done
      done
      cd x && zip -q -r ../combined.zip .
    ]]
    assert(os.execute(string.format("sh -c %s sh %s %s", T.shell_quote(script), T.shell_quote(dir), T.shell_quote(D))))
    local tr = assert(nsl.open(dir .. "/combined.zip"))
    T.eq(#tr.reports, 2, "reports")
    T.eq(tr.reports.name[1], "pax_fsdp4_4proc_proc0", "first stem")
    local ref = assert(nsl.open{procs[1], procs[2]})
    T.eq(#tr.gpu_ranges, #ref.gpu_ranges, "gpu_ranges rows")
    T.eq(#tr.nvtx, #ref.nvtx, "nvtx rows")
    local m = jax.gpu_frames(tr, jax.hlo_store(tr), {})
    local mr = jax.gpu_frames(ref, jax.hlo_store(ref), {})
    T.eq(#m, #mr, "module rows")
    T.eq(m.ProgramId:isin{"25fa0b3e673a92036f22550cd7bcb068"}:count(), 10, "step executions on two devices")
    os.execute("rm -rf " .. T.shell_quote(dir))
  end},

  {"bad inputs fail with a message, never a crash", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. T.shell_quote(dir)))
    -- an nsys-jax-like zip whose trace.parquet is garbage
    local z = dir .. "/bad.zip"
    assert(os.execute(string.format("cd %s && mkdir -p nvtx_gpu_proj_trace && printf 'PAR1junk' > " ..
      "nvtx_gpu_proj_trace/trace.parquet && zip -q -r bad.zip nvtx_gpu_proj_trace", T.shell_quote(dir))))
    local tr = assert(nsl.open(z))
    T.raises(function() return #tr.gpu_ranges end, "trace.parquet", "garbage parquet")
    T.eq(#tr.threads, 0, "missing thread metadata: empty table")
    T.raises(function() jax.load(tr) end, nil, "frames of a broken archive")
    os.execute("rm -rf " .. T.shell_quote(dir))
  end},
}
