-- heap: replay of allocation/free events against SQL window functions on a
-- copy of a real export whose (empty, real-schema) CUDA_GPU_MEMORY_USAGE_EVENTS
-- table the test fills.
local T = ...
local nsl = require("nsl")

-- A copy of the 2022.2 export (which defines the table, empty) with events.
local function fixture()
  local path = T.copy("nsys/mpi_cuda_rank0_2022.2.sqlite")
  local gpid = T.sql1(path, "SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")
  local ctx = T.sql1(path, "SELECT contextId FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")
  local t0 = T.sql1(path, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
  local seed = 12345
  local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n end
  local live = {}           -- generation state only (the oracle is SQL below)
  local rows = {"BEGIN;"}
  local t = t0
  for i = 1, 400 do
    local dev = rnd(2)
    t = t + (rnd(4) == 0 and 0 or rnd(5000))       -- some ties
    live[dev] = live[dev] or {}
    local free = #live[dev] > 0 and rnd(3) == 0
    local addr, bytes, op
    if free then
      local k = rnd(#live[dev]) + 1
      addr, bytes = live[dev][k][1], live[dev][k][2]
      table.remove(live[dev], k)
      op = 1
    else
      addr = 0x7f0000000000 + i * 0x100000 + dev
      bytes = (rnd(64) + 1) * 4096
      live[dev][#live[dev] + 1] = {addr, bytes}
      op = 0
    end
    rows[#rows + 1] = string.format("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, " ..
      "address, pc, bytes, memKind, memoryOperationType, name, correlationId) VALUES (%d, %d, %d, %d, %d, 0, %d, 2, %d, NULL, %d);",
      t, gpid, dev, ctx, addr, bytes, op, 100000 + i)
  end
  rows[#rows + 1] = "COMMIT;"
  T.sql_exec(path, table.concat(rows, "\n"))
  return path
end

local replay = [[
  WITH ev AS (SELECT rowid AS r, deviceId AS d, start, address, bytes, memoryOperationType AS op,
                     CASE memoryOperationType WHEN 0 THEN bytes ELSE -bytes END AS delta
              FROM CUDA_GPU_MEMORY_USAGE_EVENTS),
       live AS (SELECT *, sum(delta) OVER (PARTITION BY d ORDER BY start, r ROWS UNBOUNDED PRECEDING) AS live FROM ev),
       peak AS (SELECT d, max(live) AS peak FROM live GROUP BY d),
       at AS (SELECT l.d, l.start, l.r, l.live FROM live l JOIN peak p ON p.d = l.d AND p.peak = l.live
              WHERE NOT EXISTS (SELECT 1 FROM live l2 WHERE l2.d = l.d AND l2.live = l.live AND (l2.start, l2.r) < (l.start, l.r)))
]]

return {
  {"peak and its time per device equal the SQL window-function replay", function()
    local path = fixture()
    local tables = T.run_analysis("heap", {path})
    local dev = tables.devices
    local want = T.sql(path, replay .. "SELECT d, live, start FROM at ORDER BY d")
    T.eq(#dev, #want, "devices")
    for i, r in ipairs(want) do
      T.eq(dev.device[i], math.tointeger(r[1]), "device")
      T.eq(dev["peak (B)"][i], math.tointeger(r[2]), "peak of device " .. r[1])
      T.eq(dev["peak at (ns)"][i], math.tointeger(r[3]), "peak time of device " .. r[1])
    end
    os.remove(path)
  end},

  {"allocations live at the peak and never freed equal SQL", function()
    local path = fixture()
    local tables = T.run_analysis("heap", {path})
    local live = tables.live_at_peak
    local want = T.sql(path, replay .. [[
      SELECT a.d, a.address, a.bytes FROM ev a JOIN at ON at.d = a.d
      WHERE a.op = 0 AND (a.start, a.r) <= (at.start, at.r)
        AND NOT EXISTS (SELECT 1 FROM ev f WHERE f.op = 1 AND f.d = a.d AND f.address = a.address
                        AND (f.start, f.r) > (a.start, a.r) AND (f.start, f.r) <= (at.start, at.r))
      ORDER BY a.d, a.address]])
    T.eq(#live, #want, "live allocations at the peak")
    local got = {}
    for i = 1, #live do got[#got + 1] = string.format("%d %d %d", live.device[i], live.address[i], live.bytes[i]) end
    table.sort(got)
    local exp = {}
    for _, r in ipairs(want) do exp[#exp + 1] = string.format("%d %d %d", r[1], r[2], r[3]) end
    table.sort(exp)
    for i = 1, #exp do T.eq(got[i], exp[i], "live allocation " .. i) end
    local never = tables.never_freed
    local nf = T.sql1(path, [[SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS a WHERE memoryOperationType = 0 AND NOT EXISTS
      (SELECT 1 FROM CUDA_GPU_MEMORY_USAGE_EVENTS f WHERE f.memoryOperationType = 1 AND f.deviceId = a.deviceId
       AND f.address = a.address AND (f.start, f.rowid) > (a.start, a.rowid))]])
    T.eq(#never, nf, "never freed")
    local total = T.sql1(path, [[SELECT sum(CASE memoryOperationType WHEN 0 THEN bytes ELSE -bytes END)
      FROM CUDA_GPU_MEMORY_USAGE_EVENTS]])
    T.eq(tables.devices["live at end (B)"]:sum(), total, "live bytes at the end")
    T.eq(never.bytes:sum(), total, "never freed bytes = live at the end")
    os.remove(path)
  end},

  {"an export without memory events says so", function()
    local _, out = T.run_analysis("heap", {T.data("nsys/tiny_2026.1.sqlite")})
    local saw = false
    for _, it in ipairs(out.items) do if it.kind == "text" and it.text:find("No device%-memory events") then saw = true end end
    T.ok(saw, "explanatory text")
  end},

  {"allocation API calls: counts and total time equal SQL", function()
    local f = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")
    local tables = T.run_analysis("heap", {f})
    local t = tables.alloc_api
    local want = T.sql(f, [[SELECT s.value, count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
      JOIN StringIds s ON s.id = r.nameId WHERE s.value GLOB 'cudaMalloc*' OR s.value GLOB 'cudaFree*'
      OR s.value GLOB 'cuMemAlloc*' OR s.value GLOB 'cuMemFree*' OR s.value GLOB 'cudaHostAlloc*'
      OR s.value GLOB 'cudaMemPool*' OR s.value GLOB 'cuMemPool*' OR s.value GLOB 'cuMemHostAlloc*'
      OR s.value GLOB 'cuMemCreate*' OR s.value GLOB 'cuMemRelease*' OR s.value GLOB 'cuMemMap*'
      OR s.value GLOB 'cuMemUnmap*' GROUP BY 1]])
    -- nsys names API calls without their _vNNNN suffix: cudaMalloc_v3020 counts as cudaMalloc
    local agg, names = {}, {}
    for _, r in ipairs(want) do
      local name = r[1]:gsub("_v%d+$", "")
      if not agg[name] then agg[name] = {0, 0}; names[#names + 1] = name end
      agg[name][1] = agg[name][1] + math.tointeger(r[2])
      agg[name][2] = agg[name][2] + math.tointeger(r[3])
    end
    local byname = {}
    for i = 1, #t do byname[t.Name[i]] = i end
    T.eq(#t, #names, "API names")
    for _, name in ipairs(names) do
      local i = assert(byname[name], name)
      T.eq(t["Num Calls"][i], agg[name][1], "calls of " .. name)
      T.eq(t["Total Time (ns)"][i], agg[name][2], "time of " .. name)
    end
  end},

  {"figure: the live-bytes lines have SQL's events, span and peak per device", function()
    local path = fixture()
    local d = assert(T.figures("heap", {path}).heap_live, "heap_live figure").values
    local want = T.sql(path, replay .. [[SELECT l.d, count(*), min(l.start), max(l.start), max(l.live), min(l.live)
      FROM live l GROUP BY l.d ORDER BY l.d]])
    T.eq(#d.series, #want, "one line per device")
    for i, r in ipairs(want) do
      local s = d.series[i]
      T.ok(s.label:find("gpu" .. r[1] .. "$"), "line " .. i .. " is device " .. r[1] .. ": " .. s.label)
      T.eq(s.n, math.tointeger(r[2]), "events of device " .. r[1])
      T.eq(s.xmin, math.tointeger(r[3]), "first event of device " .. r[1])
      T.eq(s.xmax, math.tointeger(r[4]), "last event of device " .. r[1])
      T.eq(s.ymax, math.tointeger(r[5]), "peak of device " .. r[1])
      T.eq(s.ymin, math.tointeger(r[6]), "lowest live bytes of device " .. r[1])
    end
    os.remove(path)
  end},

  {"--out draws the live-bytes chart (a PNG that decodes to the chart's size, an SVG)", function()
    local path = fixture()
    local dir = os.tmpname()
    os.remove(dir)
    local ok = os.execute(string.format("%s run heap %s --out %s > /dev/null 2>&1", T.shell_quote(assert(os.getenv("NSL"))),
      T.shell_quote(path), T.shell_quote(dir)))
    T.ok(ok, "nsl run heap --out")
    local f = assert(io.open(dir .. "/heap_live.png", "rb"))
    local png = f:read("a")
    f:close()
    T.eq(png:sub(1, 8), "\137PNG\r\n\26\n", "PNG signature")
    local w = string.unpack(">I4", png, 17)
    T.ok(w >= 400, "PNG width " .. w)
    local svg = assert(io.open(dir .. "/heap_live.svg")):read("a")
    T.ok(svg:find("<svg", 1, true) and svg:find("</svg>", 1, true), "SVG")
    os.execute("rm -rf " .. T.shell_quote(dir))
    os.remove(path)
  end},
}
