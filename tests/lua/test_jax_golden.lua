-- Every golden file of NVIDIA's nsys-jax (../shared/data/nsys-jax/golden) against
-- nsl, cell by cell: the test walks the golden folders, and every file it finds
-- must have a checker below or an entry in `cannot` (a file or column nsl does not
-- produce, and why); every column of a checked CSV file must be compared or listed.
-- A new golden file or column therefore fails this test until someone compares it.
-- The `cannot` table is printed.
--
-- What nsl gives is read the way a user gets it where an analysis prints it: the
-- JSON of `nsl run jax_summary|jax_communication --format json` (numbers typed as
-- numbers: a string where a number belongs fails), else the library (frames,
-- attribution, heap) the analyses are built on.
--
-- Tolerances: times in ms and ratios within 1e-9 (relative above 1, absolute
-- below); bus bandwidths 1e-6; the clock corrections 0.01 ms (nsl takes the median
-- of the skews in ns, nsys-jax in float ms); "value(error)" cells as printed:
-- nsl's numbers rounded as nsys-jax printed them; folded flame-graph weights 1e-3
-- (written with 3 decimals).
local T = ...
local nsl = require("nsl")
local jax = require("nsl.jax")
local json = require("nsl.util.json")

local D = T.data("nsys-jax")
local GOLD = D .. "/golden/"
local J = dofile(T.source_dir .. "/tests/lua/jax_testlib.lua")(T)
local procs = {}
for p = 0, 3 do procs[p + 1] = D .. "/pax_fsdp4_4proc_proc" .. p .. ".zip" end
local inputs = {combined4 = procs, proc0 = {procs[1]}}

-- ---- what nsl does not produce, and why (printed) ----
local cannot = {
  {"*_frame_all / *_steady_aligned", "LocalDevice, Process, Slice",
   "nsl keys a device by its global Device number and its report; nsys-jax's device-in-process, process and " ..
   "slice indices are not columns of nsl's frames"},
  {"compile_frame_all.csv.gz", "RangeId, ParentId, RangeStack",
   "the row ids of nsys's NVTX push/pop CSV; nsl numbers ranges its own way (the nesting is compared through " ..
   "NumChild, DurChildMs and DurNonChildMs)"},
  {"compile_frame_all.csv.gz", "ProfileName",
   "the name nsys-jax gave each input (its file stem, or p0); rows are matched by thread, start and name"},
  {"notebook_module_table.csv", "LaunchSkewFrac",
   "the notebook's launch-skew fraction is not computed by nsl"},
  {"analysis_summary/summary_stdout.txt", "COMPILATION TIME sections",
   "pandas' truncated text of the compilation-*.json tables, which are compared cell by cell"},
  {"proc0/analysis_communication/communication_stdout.txt", "(all)",
   "nsys-jax failed (aligning 1 device with collectives of 4); nsl's proc0 output is checked to exist"},
  {"proc0/analysis_pgle_costs/pgle_stdout.txt", "(all)",
   "nsys-jax's pgle_costs failed (no scheduling_name in this XLA's metadata); nsl has no pgle_costs analysis"},
  {"nsys-jax-combine_output_listing.tsv", "crc32, compress_type",
   "the listing of the archive nsys-jax-combine wrote; nsl reads the members (their sizes are compared), it " ..
   "computes no CRC"},
  {"nsys-jax-combine_output_listing.tsv", "nsys_display.py, trace.ipynb rows",
   "the two NVIDIA-proprietary helper files removed from the archives upstream (PROVENANCE.md)"},
}
local removed = {["nvtx_gpu_proj_trace/nsys_display.py"] = true, ["nvtx_gpu_proj_trace/trace.ipynb"] = true}

-- ---- reading the goldens ----

-- header and rows (arrays of strings) of a CSV file; fast for the big frames
-- (a line without a quote is split on commas)
local function csv(path)
  local rows = {}
  for line in J.read(path):gmatch("[^\n]+") do
    line = line:gsub("\r$", "")
    if line:find('"', 1, true) then   -- quoted fields ("" inside is a quote): field by field
      local r, i, n = {}, 1, #line
      while i <= n + 1 do
        if line:sub(i, i) == '"' then
          local j, parts = i + 1, {}
          while true do
            local q = assert(line:find('"', j, true), path .. ": unterminated quote")
            parts[#parts + 1] = line:sub(j, q - 1)
            if line:sub(q + 1, q + 1) == '"' then parts[#parts + 1] = '"'; j = q + 2 else i = q + 2; break end
          end
          r[#r + 1] = table.concat(parts)
        else
          local c = line:find(",", i, true) or n + 1
          r[#r + 1] = line:sub(i, c - 1)
          i = c + 1
        end
      end
      rows[#rows + 1] = r
    else
      local r = {}
      for f in (line .. ","):gmatch("([^,]*),") do r[#r + 1] = f end
      rows[#rows + 1] = r
    end
  end
  local head = table.remove(rows, 1)
  return head, rows
end

-- value of a golden cell for comparison with v: booleans, numbers, strings
local function same(v, want, tol, what)
  if want == "True" or want == "False" then T.eq(v, want == "True", what)
  elseif want == "" then T.ok(v == nil or v ~= v, what .. ": empty in the golden")
  elseif tonumber(want) then T.near(v, tonumber(want), tol, what)
  else T.eq(v, want, what) end
end

-- compares frame (an nsl table, or a Lua array of records) with the CSV rows:
-- keys -> columns of the golden; cols: golden column -> nsl column (or function
-- (record) -> value); every column of the header must be a key, compared, or
-- listed in `cannot`.  Returns the cells compared.
local function compare_csv(path, head, rows, keyf, mine, cols, skip, tol)
  local seen = {}
  for _, c in ipairs(head) do
    T.ok(cols[c] or skip[c], path .. ": column '" .. c .. "' is compared or listed as not produced")
    seen[c] = true
  end
  local idx = {}
  for k, c in ipairs(head) do idx[c] = k end
  local n, cells = 0, 0
  for _, r in ipairs(rows) do
    local key = keyf(function(c) return r[idx[c]] end)
    local m = mine[key]
    T.ok(m, path .. ": golden row " .. key .. " is in nsl's")
    for c, get in pairs(cols) do
      if seen[c] then
        local v = type(get) == "function" and get(m) or m[get]
        same(v, r[idx[c]], tol, path .. " " .. key .. " " .. c)
        cells = cells + 1
      end
    end
    n = n + 1
  end
  local nm = 0
  for _ in pairs(mine) do nm = nm + 1 end
  T.eq(nm, n, path .. ": rows")
  return cells
end

-- records of an nsl table keyed by keyf(get)
local function keyed(t, keyf)
  local cols, out = {}, {}
  for _, c in ipairs(t:columns()) do cols[c] = t[c]:totable() end
  for i = 1, #t do
    local rec = {}
    for c, v in pairs(cols) do rec[c] = v[i] end
    out[keyf(function(c) return rec[c] end)] = rec
  end
  return out
end

local FRAME_SKIP = {LocalDevice = true, Process = true, Slice = true}

local function ms(c) return function(m) return m[c] end end

-- ---- nsl's results, per golden folder ----

local cache = {}
local function nsl_json(which, analysis, args)
  local key = which .. analysis
  if not cache[key] then
    local cmd = {T.shell_quote(os.getenv("NSL") or "nsl"), "run", analysis}
    for _, p in ipairs(inputs[which]) do cmd[#cmd + 1] = T.shell_quote(p) end
    for _, a in ipairs(args or {}) do cmd[#cmd + 1] = "--arg " .. a end
    cmd[#cmd + 1] = "--format json 2>/dev/null"
    local p = assert(io.popen(table.concat(cmd, " "), "r"))
    local text = p:read("a")
    p:close()
    cache[key] = assert(json.decode(text), analysis .. " --format json parses")
  end
  return cache[key]
end

local function data(which)
  if not cache[which] then
    local tr = assert(nsl.open(inputs[which]))
    local d = jax.load(tr)
    d.trace = tr
    d.compiled = jax.compiled_programs(d.compile_parts)
    d.has = #d.communication > 0
    d.corr = jax.alignment(d.communication)
    local m = jax.apply_alignment(d.module:filter(~d.module.ProgramId:isin{"unknown"}), d.corr)
    local t = jax.apply_alignment(d.thunk:filter(~d.thunk.ProgramId:isin{"unknown"}), d.corr)
    d.attribution = jax.attribution(d, jax.steady(m, d.compiled, d.has), jax.steady(t, d.compiled, d.has))
    cache[which] = d
  end
  return cache[which]
end

-- a JSON table's rows as records by a key column
local function json_rows(doc, name, keycol)
  local rows = assert(doc.tables[name], "table " .. name)
  local out = {}
  for _, r in ipairs(rows) do out[tostring(r[keycol])] = r end
  return out
end

-- the numbers a "value(error)" cell of nsys-jax stands for ("126.5(7)", "53.4(1.9)",
-- "0.7(1.2)e+03", "1.0(nan)", or a plain "2610"): value, half a unit of its last
-- digit, error (nil for nan) and half a unit of the error's last digit
local function ufloat_cell(s)
  local v, e, ex = s:match("^([-%d.]+)%(([%w.]+)%)e?([-+%d]*)$")
  if not v then
    if not tonumber(s) then return nil end
    v, e, ex = s, nil, ""
  end
  local scale = 10 ^ (tonumber(ex ~= "" and ex or "0"))
  local frac = v:match("%.(%d+)$")
  local unit = 10 ^ -(frac and #frac or 0) * scale
  local err, ehalf
  if e and e ~= "nan" then
    local efrac = e:match("%.(%d+)$")
    if efrac then err, ehalf = tonumber(e) * scale, 0.5 * 10 ^ -#efrac * scale
    else err, ehalf = tonumber(e) * unit, 0.5 * unit end
  end
  return tonumber(v) * scale, 0.5 * unit, err, ehalf
end

local function typed(v, what)   -- numbers in the JSON are numbers (null for NaN)
  T.ok(v == json.null or math.type(v) ~= nil, what .. " is a number in the JSON, not " .. type(v))
  return v ~= json.null and v or 0 / 0
end

-- ---- checkers: relative path (from the golden folder) -> function(which, G, path) -> cells ----

local checks = {}

local function frame_check(kind, steady)
  return function(which, G, path)
    local d = data(which)
    local f = d[kind]
    if steady then   -- nsys-jax's steady frames leave out the autotuner's executions (ProgramId "unknown")
      f = jax.steady(jax.apply_alignment(f:filter(~f.ProgramId:isin{"unknown"}), d.corr), d.compiled, d.has)
    end
    local keys = kind == "module" and {"ProgramId", "ProgramExecution", "Device"}
                 or {"ProgramId", "ProgramExecution", "Name", "ThunkExecution", "Device"}
    local function keyf(get)
      local k = {}
      for i, c in ipairs(keys) do k[i] = tostring(math.tointeger(tonumber(get(c))) or get(c)) end
      return table.concat(k, "|")
    end
    local head, rows = csv(path)
    local cols = {}
    for _, c in ipairs(head) do
      local isk = false
      for _, k in ipairs(keys) do isk = isk or k == c end
      if not isk and not FRAME_SKIP[c] then cols[c] = c end
    end
    local skip = {}
    for _, k in ipairs(keys) do skip[k] = true end
    for k in pairs(FRAME_SKIP) do skip[k] = true end
    return compare_csv(path, head, rows, keyf, keyed(f, keyf), cols, skip,
                       kind == "communication" and 1e-6 or 1e-9) + #rows * #keys
  end
end
checks["module_frame_all.csv.gz"] = frame_check("module", false)
checks["module_frame_steady_aligned.csv.gz"] = frame_check("module", true)
checks["thunk_frame_all.csv.gz"] = frame_check("thunk", false)
checks["communication_frame_all.csv.gz"] = frame_check("communication", false)
checks["communication_frame_steady_aligned.csv.gz"] = frame_check("communication", true)

checks["compile_frame_all.csv.gz"] = function(which, G, path)
  local d = data(which)
  local recs = {}
  local function key(tid, start_ns, name) return string.format("%d|%d|%s", tid, start_ns, name) end
  for _, p in ipairs(d.compile_parts) do
    local c = {}
    for _, n in ipairs{"tid", "start", "stop", "num_child", "dur_child", "dur_nonchild", "ProgramId", "ProgramName",
                       "Name"} do c[n] = p[n]:totable() end
    for i = 1, #p do
      local function msv(v) return v and v * 1e-6 end   -- NULL stays nil
      recs[key(c.tid[i], c.start[i], c.Name[i])] = {
        Name = c.Name[i], TID = c.tid[i], NumChild = c.num_child[i], StartMs = msv(c.start[i]),
        DurMs = c.stop[i] and msv(c.stop[i] - c.start[i]), DurChildMs = msv(c.dur_child[i]),
        DurNonChildMs = msv(c.dur_nonchild[i]), ProgramId = c.ProgramId[i], ProgramName = c.ProgramName[i]}
    end
  end
  local head, rows = csv(path)
  local cols = {Name = "Name", TID = "TID", NumChild = "NumChild", StartMs = "StartMs", DurMs = "DurMs",
                DurChildMs = "DurChildMs", DurNonChildMs = "DurNonChildMs", ProgramId = "ProgramId",
                ProgramName = "ProgramName"}
  local skip = {RangeId = true, ParentId = true, RangeStack = true, ProfileName = true}
  local function keyf(get)
    return key(tonumber(get("TID")), math.floor(tonumber(get("StartMs")) * 1e6 + 0.5), get("Name"))
  end
  return compare_csv(path, head, rows, keyf, recs, cols, skip, 1e-9)
end

checks["compilation_statistics.csv"] = function(which, G, path)
  local st = jax.compile_statistics(data(which).compile_parts)
  local head, rows = csv(path)
  head[1] = "Name"   -- the index column has no name
  return compare_csv(path, head, rows, function(get) return get("Name") end,
                     keyed(st, function(get) return get("Name") end),
                     {DurNonChildMs = "DurNonChildMs", DurChildMs = "DurChildMs"}, {Name = true}, 1e-9) + #rows
end

checks["alignment_device_corrections_ms.csv"] = function(which, G, path)
  local doc = nsl_json(which, "jax_summary", {"top=100000"})
  local mine = json_rows(doc, "clock_corrections", "Device")
  local head, rows = csv(path)
  T.eq(table.concat(head, ","), "Device,0", path .. ": columns")
  for _, r in ipairs(rows) do
    local m = mine[r[1]]
    T.ok(m, "correction of device " .. r[1])
    T.near(typed(m.CorrectionMs, "CorrectionMs"), tonumber(r[2]), 0.01, "correction of device " .. r[1])
  end
  return 2 * #rows
end

checks["notebook_module_table.csv"] = function(which, G, path)
  local d = data(which)
  local module = d.module:filter(~d.module.ProgramId:isin{"unknown"})
  local st = jax.module_stats(jax.steady(module, d.compiled, d.has), jax.steady(d.communication, d.compiled, d.has))
  local head, rows = csv(path)
  local function keyf(get) return get("ProgramId") end
  return compare_csv(path, head, rows, keyf, keyed(st, keyf),
    {Name = "Name", Execs = "Execs", ActiveMs = "DurSumMs", Frac = function(m) return m.DurPercent / 100 end,
     ThunksMean = "NumThunksMean"}, {ProgramId = true, LaunchSkewFrac = true}, 1e-9) + #rows
end

checks["notebook_runtime_totals.json"] = function(which, G, path)
  local d = data(which)
  local a = d.attribution
  local want = assert(json.read_file(path))
  local cells = 0
  for _, k in ipairs(json.keys(want)) do
    local v = want[k]
    if k == "op_runtime_ms" then
      for _, op in ipairs(json.keys(v)) do
        T.near(a.op_runtime[op], v[op], 1e-9, path .. " op_runtime " .. op)
        cells = cells + 1
      end
    else
      local mine = ({all_thunks_active_ms = a.totals.thunks_active, all_modules_active_ms = a.totals.modules_active,
                     all_modules_wall_ms = a.totals.wall})[k]
      T.ok(mine, path .. ": key " .. k .. " is compared")
      T.near(mine, v, 1e-9, path .. " " .. k)
      cells = cells + 1
    end
  end
  return cells
end

local function flame_check(kind)
  return function(which, G, path)
    local d = data(which)
    local a = d.attribution
    local want, nwant = J.folded(J.read(path))
    local got, ngot = J.folded(jax.folded(a[kind], a["order_" .. kind]))
    T.eq(ngot, nwant, path .. ": stacks")
    for k, v in pairs(want) do T.near(got[k], v, 1e-3, path .. " " .. k:sub(1, 80)) end
    return 2 * nwant
  end
end
checks["op_name_flamegraph.folded.xz"] = flame_check("op_name")
checks["source_flamegraph.folded.xz"] = flame_check("source")

checks["heap_peaks.json"] = function(which, G, path)
  local want = assert(json.read_file(path))
  local fps = json.keys(want)
  local heaps = jax.heap(data(which).store, fps)
  local cells = 0
  for _, fp in ipairs(fps) do
    T.eq(#heaps[fp], #want[fp], path .. " traces of " .. fp)
    for k, h in ipairs(want[fp]) do
      for _, c in ipairs(json.keys(h)) do
        T.eq(heaps[fp][k][c], h[c], path .. " " .. fp .. " " .. c)
        cells = cells + 1
      end
    end
  end
  return cells
end

checks["golden_run.log"] = function(which, G, path)
  local d = data(which)
  local log = J.read(path)
  local counts, compile_ms = J.golden_counts(G)
  T.eq(#d.module, counts.module, "log: module rows")
  T.eq(#d.thunk, counts.thunk, "log: thunk rows")
  T.eq(#d.communication, counts.communication, "log: communication rows")
  T.eq(J.compile_rows(d), counts.compile, "log: compile rows")
  T.near(jax.compile_statistics(d.compile_parts).DurNonChildMs:sum(), compile_ms, 1e-9, "log: compile ms")
  local cells = 6
  local size = log:match("collective_size used for alignment: (%d+)")
  if size then
    local _, mine = jax.alignment(d.communication)
    T.eq(mine, tonumber(size), "log: collective size")
    for dev, v in log:match("device corrections %(ms%): (%b{})"):gmatch("(%d+): ([-%d.e]+)") do
      T.near(d.corr[tonumber(dev)], tonumber(v), 0.01, "log: correction of device " .. dev)
      cells = cells + 1
    end
  else
    T.ok(log:find("ALIGNMENT FAILED", 1, true), "log: no alignment, and says so")
  end
  local ops = log:match("op_runtime: (%b{})")
  local a = d.attribution
  for k, v in ops:gmatch("'([^']+)': ([-%d.e]+)") do
    T.near(a.op_runtime[k], tonumber(v), 1e-9, "log: op_runtime " .. k)
    cells = cells + 1
  end
  -- the top modules: the programs with the most steady time, as the summary sorts them
  local doc = nsl_json(which, "jax_summary", {"top=100000"})
  local k = 0
  for id in log:match("top_module_ids: (%b[])"):gmatch("'(%x+)'") do
    k = k + 1
    T.eq(doc.tables.modules[k].ID, id, "log: top module " .. k)
  end
  local heap = log:match("heap: (%b{})")
  local fps = {}
  for fp in heap:gmatch("'(%x+)': %[") do fps[#fps + 1] = fp end
  local heaps = jax.heap(d.store, fps)
  for _, fp in ipairs(fps) do
    local list = heap:match("'" .. fp .. "': (%b[])")
    local j = 0
    for n, peak in list:gmatch("'n_events': (%d+), 'peak_bytes': (%d+)") do
      j = j + 1
      T.eq(heaps[fp][j].n_events, tonumber(n), "log: heap events " .. fp)
      T.eq(heaps[fp][j].peak_bytes, tonumber(peak), "log: heap peak " .. fp)
    end
    T.eq(#heaps[fp], j, "log: heap traces " .. fp)
    cells = cells + 2 * j
  end
  return cells + k
end

-- pandas' "split" JSON of the summary's tables against jax_summary's JSON
local function split_json(path)
  local s = assert(json.read_file(path))
  local cols = {}
  for i, c in ipairs(s.columns) do cols[i] = type(c) == "table" and (c[1] .. " " .. c[2]) or c end
  return s.index, cols, s.data
end

checks["analysis_summary/module-stats.json"] = function(which, G, path)
  local doc = nsl_json(which, "jax_summary", {"top=100000"})
  local mine = json_rows(doc, "modules", "ID")
  local map = {["Name first"] = "Name", ["Name count"] = "#execs", ["NumThunks mean"] = "Thunks",
               ["NumThunks std"] = "Thunks std", ["ProjDurMs mean"] = "Duration [ms]",
               ["ProjDurMs std"] = "Duration std [ms]", ["ProjDurMs percent"] = "Duration [%]",
               ["WaitMs mean"] = "Wait time [ms]", ["WaitMs std"] = "Wait time std [ms]",
               ["WaitMs percent"] = "Wait time [%]"}
  local index, cols, rows = split_json(path)
  local cells = 0
  T.eq(#index, #doc.tables.modules, path .. ": programs")
  for i, id in ipairs(index) do
    local m = mine[id]
    T.ok(m, path .. ": program " .. id)
    for k, c in ipairs(cols) do
      local want = rows[i][k]
      local v
      if c == "ProjDurMs sum" then   -- the summary prints the mean; the sum is mean x executions
        v = typed(m["Duration [ms]"], "Duration [ms]") * m["#execs"]
      else
        T.ok(map[c], path .. ": column '" .. c .. "' is compared")
        v = m[map[c]]
        if c ~= "Name first" then v = typed(v, map[c] .. " of " .. id) end
      end
      if want == json.null then T.ok(v ~= v, path .. " " .. id .. " " .. c .. ": NaN as in the golden")
      elseif type(want) == "number" then T.near(v, want, 1e-9, path .. " " .. id .. " " .. c)
      else T.eq(v, want, path .. " " .. id .. " " .. c) end
      cells = cells + 1
    end
  end
  return cells
end

local function compile_json(tname)
  return function(which, G, path)
    local doc = nsl_json(which, "jax_summary", {"top=100000"})
    local mine = json_rows(doc, tname, "Range")
    local child = keyed(jax.compile_statistics(data(which).compile_parts), function(get) return get("Name") end)
    local index, cols, rows = split_json(path)
    T.eq(#index, #doc.tables[tname], path .. ": rows")
    local cells = 0
    for i, name in ipairs(index) do
      local m = mine[name]
      T.ok(m, path .. ": range " .. name)
      for k, c in ipairs(cols) do
        local v
        if c == "DurChildMs" then v = child[name].DurChildMs   -- jax_summary prints no child time
        else v = typed(m[c], c) end
        T.near(v, rows[i][k], 1e-9, path .. " " .. name .. " " .. c)
        cells = cells + 1
      end
    end
    return cells
  end
end
checks["analysis_summary/compilation-ranges.json"] = compile_json("compile_ranges")
checks["analysis_summary/compilation-high-level.json"] = compile_json("compile_high_level")
checks["analysis_summary/compilation-passes.json"] = compile_json("compile_passes")

checks["analysis_summary/summary_stdout.txt"] = function(which, G, path)
  local doc = nsl_json(which, "jax_summary", {"top=100000"})
  local mine = json_rows(doc, "modules", "ID")
  local text = J.read(path)
  local cells = 0
  local cols = {"ID", "Name", "#execs", "Thunks", "Duration [ms]", "Duration [%]", "Wait time [ms]", "Wait time [%]"}
  local err = {Thunks = "Thunks std", ["Duration [ms]"] = "Duration std [ms]", ["Wait time [ms]"] = "Wait time std [ms]"}
  for line in text:gmatch("[^\n]+") do
    local cells_ = {}
    for c in line:gmatch("|%s*([^|]-)%s*%f[|]") do cells_[#cells_ + 1] = c end
    local m = cells_[1] and mine[cells_[1]]
    if m then
      for k, c in ipairs(cols) do
        local g = cells_[k]
        if c == "ID" or c == "Name" then T.eq(tostring(m[c]), g, path .. " " .. c)
        elseif g == "---" then T.ok(m[c] == json.null, path .. " " .. cells_[1] .. " " .. c .. ": none")
        elseif err[c] then
          local v, half, e, ehalf = ufloat_cell(g)
          T.ok(v and math.abs(typed(m[c], c) - v) <= half * (1 + 1e-9),
               string.format("%s %s %s: %s rounds to %s", path, cells_[1], c, tostring(m[c]), g))
          local sd = typed(m[err[c]], err[c])
          if e then
            T.ok(math.abs(sd - e) <= ehalf * (1 + 1e-9),
                 string.format("%s %s %s error: %s rounds to %s", path, cells_[1], c, tostring(sd), g))
          elseif g:find("(nan)", 1, true) then T.ok(sd ~= sd, path .. " " .. c .. ": no error of one execution")
          else T.ok(sd == 0, path .. " " .. c .. ": a whole number has no spread") end
        else
          local frac = g:match("%.(%d+)$")
          T.near(typed(m[c], c), tonumber(g), 0.5 * 10 ^ -(frac and #frac or 0), path .. " " .. c)
        end
        cells = cells + 1
      end
    end
  end
  T.ok(cells > 0, path .. ": module rows found")
  return cells
end

-- the bandwidth and hidden tables of the communication analysis (CSV and text)
local function comm_check(which, G, path)
  local doc = nsl_json(which, "jax_communication")
  local bw = doc.tables.bandwidth
  local hidden = doc.tables.hidden
  local text = J.read(path)
  local cells = 0
  local head
  local by_size = {}
  for _, r in ipairs(bw) do by_size[tostring(typed(r["Size [B]"], "Size [B]") // 1)] = r end
  local printed = {}
  for line in text:gmatch("[^\r\n]+") do
    local f = {}
    if path:match("%.csv$") then for c in (line .. ","):gmatch("([^,]*),") do f[#f + 1] = c end
    else for c in line:gmatch("([^|]+)") do f[#f + 1] = c:match("^%s*(.-)%s*$") end end
    if f[1] == "Size [B]" then head = f
    elseif head and f[1] and tonumber((f[1]:gsub(",", ""))) and #f == #head then
      local r = by_size[tostring(math.tointeger(tonumber((f[1]:gsub(",", "")))))]
      T.ok(r, path .. ": size " .. f[1])
      for k = 2, #head do
        local c = head[k]
        if f[k]:match("^%-+$") then T.ok(r[c] == json.null, path .. " " .. f[1] .. " " .. c .. ": none")
        else T.eq(jax.ufloat(typed(r[c], c), typed(r[c .. " err"], c .. " err")), f[k], path .. " " .. f[1] .. " " .. c) end
        cells = cells + 1
      end
    elseif #f == 2 and f[1]:match("^%a$") and tonumber(f[2]) then
      printed[#printed + 1] = {f[1], tonumber(f[2])}
    end
  end
  T.ok(head, path .. ": bandwidth table found")
  -- per-collective hidden ratio: labelled by first letter (pandas 1.5), matched by letter and value
  T.eq(#printed, #hidden, path .. ": hidden-ratio rows")
  for _, p in ipairs(printed) do
    local found = false
    for _, h in ipairs(hidden) do
      local v = typed(h.HiddenToTotal, "HiddenToTotal")
      if h.Collective:sub(1, 1) == p[1] and math.abs(v - p[2]) <= 1e-9 * p[2] then found = true end
    end
    T.ok(found, path .. ": hidden ratio " .. p[1] .. " " .. p[2])
    cells = cells + 1
  end
  local overall = text:match("Overall HiddenMs to TotalMs[:,]%s*([%d.e-]+)")
  local ov = typed(doc.values.hidden_to_total, "hidden_to_total")
  local frac = overall:match("%.(%d+)$")
  T.near(ov, tonumber(overall), math.max(0.5 * 10 ^ -#frac, 1e-9), path .. ": overall hidden ratio")
  return cells + 1
end
checks["analysis_communication/communication_summary.csv"] = comm_check
checks["analysis_communication/communication_stdout.txt"] = function(which, G, path)
  if which == "proc0" then   -- nsys-jax failed; nsl works on one process
    T.ok(J.read(path):find("AssertionError", 1, true), path .. ": the failure is recorded")
    local doc = nsl_json(which, "jax_communication")
    T.ok(#doc.tables.bandwidth > 0, "nsl's proc0 bandwidth table")
    return 0
  end
  return comm_check(which, G, path)
end
checks["analysis_pgle_costs/pgle_stdout.txt"] = function(which, G, path)
  T.ok(J.read(path):find("Traceback", 1, true), path .. ": the failure is recorded")
  return 0
end

checks["nsys-jax-combine_output_listing.tsv"] = function(which, G, path)
  local tr = data(which).trace
  local names = tr.reports.name:totable()
  local cells = 0
  local first = true
  for line in J.read(path):gmatch("[^\n]+") do
    local f = {}
    for c in (line .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = c end
    if first then T.eq(table.concat(f, ","), "filename,crc32,file_size,compress_type", path .. ": columns"); first = false
    elseif not removed[f[1]] then
      -- combine's members: <member path>/<input stem> for per-input files, else the shared member itself
      local member, stem = f[1]:match("^(.-)/(pax_fsdp4_4proc_proc%d)$")
      local r = 0
      if member then for i, n in ipairs(names) do if n == stem then r = i - 1 end end else member = f[1] end
      local bytes = tr:member(r, member)
      T.ok(bytes, path .. ": member " .. f[1] .. " read by nsl")
      T.eq(bytes and #bytes, tonumber(f[3]), path .. ": size of " .. f[1])
      cells = cells + 1
    end
  end
  return cells
end

-- the sections of nsl's CSV output ("# title" lines, then a header and rows)
local function csv_sections(text)
  local out, cur = {}, nil
  for line in text:gmatch("[^\n]*") do
    local title = line:match("^# (.*)$")
    if title then cur = {title = title}; out[#out + 1] = cur
    elseif cur and line ~= "" then
      local r = {}
      for f in (line .. ","):gmatch("([^,]*),") do r[#r + 1] = f end
      if not cur.head then cur.head = r else cur[#cur + 1] = r end
    end
  end
  return out
end

return {
  {"CSV and JSON carry numbers: jax_summary's and jax_communication's value and error apart, equal to the JSON; " ..
   "no -0.0", function()
    for _, spec in ipairs{{"jax_summary", "MODULE EXECUTION SUMMARY (steady state)", "modules", "ID",
                           {"#execs", "Thunks", "Thunks std", "Duration [ms]", "Duration std [ms]", "Duration [%]",
                            "Wait time [ms]", "Wait time std [ms]", "Wait time [%]"}},
                          {"jax_communication", "Bus bandwidth [GB/s]", "bandwidth", "Size [B]",
                           {"all-gather", "all-gather err", "all-reduce", "all-reduce err", "reduce-scatter",
                            "reduce-scatter err"}}} do
      local name, title, tname, key, cols = table.unpack(spec)
      local p = assert(io.popen(table.concat({T.shell_quote(os.getenv("NSL") or "nsl"), "run", name,
        T.shell_quote(procs[1]), T.shell_quote(procs[2]), T.shell_quote(procs[3]), T.shell_quote(procs[4]),
        "--format csv 2>/dev/null"}, " "), "r"))
      local text = p:read("a")
      p:close()
      local sec
      for _, s in ipairs(csv_sections(text)) do if s.title == title then sec = s end end
      T.ok(sec and #sec > 0, name .. ": CSV section " .. title)
      local idx = {}
      for k, c in ipairs(sec.head) do idx[c] = k end
      local js = json_rows(nsl_json("combined4", name, name == "jax_summary" and {"top=100000"} or nil), tname, key)
      local n = 0
      for _, r in ipairs(sec) do
        local m = js[r[idx[key]]]
        T.ok(m, name .. ": CSV row " .. r[idx[key]] .. " is in the JSON")
        for _, c in ipairs(cols) do
          T.ok(idx[c], name .. ": CSV column " .. c)
          local cell = r[idx[c]]
          if cell == "" then T.eq(m[c], json.null, name .. " " .. c .. ": empty in CSV, null in JSON")
          else
            T.ok(tonumber(cell), string.format("%s %s: '%s' is a number", name, c, cell))
            T.near(tonumber(cell), typed(m[c], c), 1e-12, name .. " " .. c .. ": CSV = JSON")
          end
          n = n + 1
        end
      end
      T.ok(n > 0, name .. ": cells")
    end
    local report = require("nsl.report")
    T.eq(report.float(-0.0, 1), "0.0", "-0.0 prints as 0.0")
    T.eq(report.float(-0.04, 1), "0.0", "a tiny negative rounds to 0.0")
    T.eq(report.float(-0.05001, 1), "-0.1", "a negative that rounds away from 0 keeps its sign")
  end},

  {"every golden file of nsys-jax is compared cell by cell, or listed with the reason nsl does not produce it",
   function()
    local report = {}
    for _, which in ipairs{"combined4", "proc0"} do
      local G = GOLD .. which .. "/"
      local p = assert(io.popen("cd " .. T.shell_quote(G) .. " && find . -type f | sed 's|^\\./||' | sort", "r"))
      for rel in p:lines() do
        local check = checks[rel] or checks[rel:match("[^/]+/[^/]+$") or ""]
        T.ok(check, which .. "/" .. rel .. ": a golden file no check compares")
        local cells = check(which, G, G .. rel)
        report[#report + 1] = string.format("  %-10s %-52s %7d cells", which, rel, cells)
      end
      p:close()
    end
    print("compared:")
    print(table.concat(report, "\n"))
    print("not produced by nsl:")
    for _, c in ipairs(cannot) do print(string.format("  %-52s %-32s %s", c[1], c[2], c[3])) end
    J.cleanup()
  end},
}
