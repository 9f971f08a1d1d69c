-- Figures and the Perfetto export on the real exports, against oracles that
-- are not nsl: SQL through the sqlite3 program, brute force in plain Lua
-- over the rows SQL returns, the PNG specification (signature, IHDR, chunk
-- CRCs) checked here and stb_image's decoder (nsl.png_probe), an XML
-- well-formedness checker written in this file, and nsl.util.json's parser.
local T = ...
local nsl = require("nsl")
local plot = require("nsl.plot")
local window = require("nsl.window")

local fmt = string.format
local nccl = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite")
local h100 = T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
local sampling = T.data("nsys/cuda_sampling_2021.sqlite")
local mpi = T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")

local function num(s) return math.tointeger(tonumber(s)) or tonumber(s) end

-- ---- independent checkers -------------------------------------------------------------

-- CRC-32 of the PNG specification (ISO 3309, reflected 0xEDB88320).
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do c = (c & 1) ~= 0 and (0xEDB88320 ~ (c >> 1)) or (c >> 1) end
  crc_table[i] = c
end
local function crc32(s, i, j)
  local c = 0xFFFFFFFF
  for k = i, j do c = crc_table[(c ~ s:byte(k)) & 0xFF] ~ (c >> 8) end
  return c ~ 0xFFFFFFFF
end

--- Checks PNG bytes against the specification's structure: signature, IHDR
-- first (13 bytes, 8-bit RGBA), chunks with right CRCs, IDAT, IEND last.
-- Returns width, height.
local function check_png(png)
  T.eq(png:sub(1, 8), "\137PNG\r\n\26\n", "PNG signature")
  local pos, first, w, h, idat, iend = 9, true, nil, nil, 0, false
  while pos <= #png do
    T.ok(pos + 11 <= #png, "chunk header inside the file")
    local len, typ = string.unpack(">I4c4", png, pos)
    T.ok(pos + 11 + len <= #png, "chunk inside the file")
    local crc = string.unpack(">I4", png, pos + 8 + len)
    T.eq(crc, crc32(png, pos + 4, pos + 7 + len), "CRC of chunk " .. typ)
    if first then
      T.eq(typ, "IHDR", "first chunk")
      T.eq(len, 13, "IHDR length")
      local depth, ctype
      w, h, depth, ctype = string.unpack(">I4I4BB", png, pos + 8)
      T.eq(depth, 8, "bit depth")
      T.eq(ctype, 6, "colour type RGBA")
      first = false
    elseif typ == "IDAT" then idat = idat + 1
    elseif typ == "IEND" then
      iend = true
      T.eq(pos + 12 + len, #png + 1, "IEND is last")
    end
    pos = pos + 12 + len
  end
  T.ok(idat > 0 and iend, "IDAT and IEND present")
  return w, h
end

--- A PNG figure: well-formed, decodes (stb_image), w x h, not blank.
local function check_figure_png(cv, w, h, what)
  local png = cv:to_string()
  local pw, ph = check_png(png)
  local probe = assert(nsl.png_probe(png))
  T.eq(probe.width, pw, what .. ": decoded width")
  T.eq(probe.height, ph, what .. ": decoded height")
  if w then T.eq(pw, w, what .. ": width") end
  if h then T.eq(ph, h, what .. ": height") end
  T.ok(probe.differing > pw * ph / 200, what .. ": not blank (" .. probe.differing .. " ink pixels)")
  T.eq(cv:count_pixels(), probe.differing, what .. ": canvas and decoded image agree")
  return probe
end

--- XML well-formedness: one root element, tags nested and closed,
-- attributes quoted and unique, entities known, no stray '<' or '&'.
local function check_xml(s)
  local pos, stack, roots = 1, {}, 0
  local function check_text(text, where)
    T.ok(not text:find("<", 1, true), "no '<' in " .. where)
    for ent in text:gmatch("&([^;]*);?") do
      T.ok(ent == "lt" or ent == "gt" or ent == "amp" or ent == "quot" or ent == "apos" or ent:match("^#%d+$")
           or ent:match("^#x%x+$"), "entity &" .. ent .. "; in " .. where)
    end
    local amp = 0
    for _ in text:gmatch("&") do amp = amp + 1 end
    local ok_amp = 0
    for _ in text:gmatch("&[#%w]+;") do ok_amp = ok_amp + 1 end
    T.eq(amp, ok_amp, "every & starts an entity in " .. where)
  end
  if s:sub(1, 5) == "<?xml" then pos = assert(s:find("?>", 1, true), "XML declaration ends") + 2 end
  while true do
    local lt = s:find("<", pos, true)
    local text = s:sub(pos, (lt or #s + 1) - 1)
    if #stack == 0 then T.ok(not text:find("%S"), "no text outside the root element") else check_text(text, "text") end
    if not lt then break end
    if s:sub(lt, lt + 3) == "<!--" then
      pos = assert(s:find("-->", lt + 4, true), "comment ends") + 3
    elseif s:sub(lt, lt + 8) == "<![CDATA[" then
      T.ok(#stack > 0, "CDATA inside an element")
      pos = assert(s:find("]]>", lt + 9, true), "CDATA ends") + 3
    elseif s:sub(lt, lt + 1) == "</" then
      local name, e = s:match("^</([%w:_%-%.]+)%s*>()", lt)
      T.ok(name, "end tag syntax at " .. lt)
      T.eq(name, table.remove(stack), "end tag matches")
      pos = e
    else
      local name, rest = s:match("^<([%a_][%w:_%-%.]*)()", lt)
      T.ok(name, "start tag syntax at " .. lt)
      local p, seen = rest, {}
      while true do
        local ws, attr, q, e = s:match("^(%s*)([%a_][%w:_%-%.]*)=([\"'])()", p)
        if not attr then break end
        T.ok(#ws > 0, "space before attribute " .. attr)
        T.ok(not seen[attr], "attribute " .. attr .. " once")
        seen[attr] = true
        local close = assert(s:find(q, e, true), "attribute value ends")
        check_text(s:sub(e, close - 1), "attribute " .. attr)
        p = close + 1
      end
      local selfclose, e = s:match("^%s*(/?)>()", p)
      T.ok(e, "tag " .. name .. " ends properly at " .. p)
      if #stack == 0 then roots = roots + 1 end
      if selfclose == "" then stack[#stack + 1] = name end
      pos = e
    end
  end
  T.eq(#stack, 0, "every element closed")
  T.eq(roots, 1, "one root element")
end

--- JSON through nsl's one JSON reader (RFC 8259), raising on bad input.
local function json_decode(text)
  local v, err = require("nsl.util.json").decode(text)
  if v == nil then error("JSON: " .. tostring(err), 2) end
  return v
end

-- Temporary folder for files the tests write.
local function tmpdir()
  local base = os.tmpname()
  os.remove(base)
  assert(nsl.mkdir_p(base))
  return base
end

local function rmtree(dir) os.execute("rm -rf " .. T.shell_quote(dir)) end

-- Linear-interpolated quantile of sorted values (SQL / NumPy definition).
local function quantile(sorted, q)
  local n = #sorted
  local h = (n - 1) * q
  local lo = math.floor(h)
  local hi = math.min(lo + 1, n - 1)
  return sorted[lo + 1] + (h - lo) * (sorted[hi + 1] - sorted[lo + 1])
end

local function sql_values(path, query)
  local v = {}
  for i, r in ipairs(T.sql(path, query)) do v[i] = num(r[1]) end
  return v
end

return {
  {"the binding: canvas methods, styles, colours, errors", function()
    local cv = nsl.canvas("png", 40, 30)
    T.eq(nsl.type(cv), "canvas", "type")
    T.eq(cv:kind(), "png", "kind")
    local w, h = cv:size()
    T.eq(w, 40, "width")
    T.eq(h, 30, "height")
    cv:clear("#ffffff")
    T.eq(cv:count_pixels(), 0, "blank after clear")
    -- integer-aligned rectangles from columns, colours by index and from a list
    local n = cv:rects(nsl.column{0, 10, 20}, nsl.column{5, 15, 30}, 0, nsl.column{10, 20, 30}, nsl.column{0, 1, 7})
    T.eq(n, 3, "rects drawn")
    T.eq(cv:count_pixels(), 5 * 10 + 5 * 20 + 10 * 30, "ink = the rectangles' areas")
    local r, g, b, a = cv:pixel(2, 2)
    T.eq(fmt("#%02x%02x%02x%02x", r, g, b, a), nsl.palette(0) .. "ff", "colour 0 of the palette")
    r, g, b = cv:pixel(25, 25)
    T.eq(fmt("#%02x%02x%02x", r, g, b), "#000000", "colour 7 (black)")
    cv:rects({0}, {1}, {29}, {30}, {1}, {colors = {"#ff0000", "#00ff00"}})
    r, g, b = cv:pixel(0, 29)
    T.eq(fmt("#%02x%02x%02x", r, g, b), "#00ff00", "colour from opts.colors, 0-based")
    T.eq(cv:pixel(40, 0), nil, "outside")
    -- Okabe & Ito (2008), the published hex values
    local oi = {"#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7", "#000000"}
    for i, c in ipairs(oi) do T.eq(nsl.palette(i - 1), c, "Okabe-Ito " .. i) end
    T.eq(#nsl.palette(), 8, "base palette")
    T.eq(nsl.colormap(0), "#440154", "viridis start")
    T.eq(nsl.colormap(1), "#fde725", "viridis end")
    -- ticks and value formats
    local t = nsl.ticks(0, 1e6, {unit = "ns", target = 5})
    T.eq(t.labels[1], "0", "first tick")
    T.eq(t.labels[#t.labels], "1 ms", "last tick")
    local lt = nsl.ticks(1e3, 1e6, {unit = "ns", log = true})
    T.eq(table.concat(lt.labels, ","), "1 µs,10 µs,100 µs,1 ms", "log ticks")
    T.eq(nsl.format_value(1536, "bytes"), "1.5 KiB", "bytes")
    T.ok(nsl.text_width("abc", 12) > 10, "text width")
    local asc, desc = nsl.text_metrics(12)
    T.ok(asc > 8 and desc > 1, "metrics")
    -- misuse raises with a message naming it
    T.raises(function() nsl.canvas("gif", 10, 10) end, "invalid option", "bad kind")
    T.raises(function() nsl.canvas("png", 0, 10) end, "width", "bad width")
    T.raises(function() nsl.canvas("png", 10, 20000) end, "height", "bad height")
    T.raises(function() cv:rect(0, 0, 1, 1, {fil = "#000"}) end, "unknown key 'fil'", "misspelt style key")
    T.raises(function() cv:rect(0, 0, 1, 1, {fill = "blue"}) end, "not a colour", "bad colour")
    T.raises(function() cv:text(0, 0, "x", {anchor = "left"}) end, "anchor", "bad anchor")
    T.raises(function() cv:rects(nsl.column{1, 2}, nsl.column{1}, 0, 1) end, "rows", "length mismatch")
    T.raises(function() nsl.canvas("svg", 10, 10):count_pixels() end, "SVG", "SVG has no pixels")
    T.raises(function() nsl.ticks(0 / 0, 1) end, "ticks", "NaN range")
    local bad = nsl.png_probe("not a png")
    T.eq(bad, nil, "png_probe rejects text")
    T.eq(select(2, nsl.png_probe("\137PNG\r\n\26\nxxxx")) ~= nil, true, "png_probe rejects a truncated PNG")
    -- write: atomic, same bytes as to_string; an unwritable path is an error value
    local dir = tmpdir()
    T.ok(cv:write(dir .. "/a.png"), "write")
    local f = assert(io.open(dir .. "/a.png", "rb"))
    T.eq(f:read("a"), cv:to_string(), "file = to_string")
    f:close()
    local ok, err = cv:write(dir .. "/missing/dir/a.png")
    T.eq(ok, nil, "write to a missing folder")
    T.ok(type(err) == "string" and #err > 0, "with a message")
    rmtree(dir)
    -- SVG: lines default to a black stroke, text uses fill, groups carry titles
    local s = nsl.canvas("svg", 100, 50)
    s:clear()
    s:line(0, 0, 10, 10)
    s:group_begin({id = "g1", class = "frame", title = "a <b> & c"})
    s:rect(1, 2, 3, 4, {fill = "#0072b2"})
    s:text(5, 5, "x & y < z", {fill = "#d55e00"})
    s:group_end()
    s:polyline({0, 1, 2}, {0, 1, 0}, {stroke = "#009e73", dash = 2})
    s:polygon(nsl.column{0.0, 5.0, 5.0}, nsl.column{0.0, 0.0, 5.0}, {fill = "#cc79a7", opacity = 0.5})
    s:circle(20, 20, 5, {fill = "none", stroke = "#000"})
    local svg = s:to_string()
    check_xml(svg)
    T.ok(svg:find('stroke="#000000"', 1, true), "line stroke defaults to black")
    T.ok(svg:find("<title>a &lt;b&gt; &amp; c</title>", 1, true), "escaped title")
  end},

  {"histogram of kernel durations: bin counts equal SQL (linear and log bins)", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    for _, log in ipairs({false, true}) do
      local cv, d = plot.histogram(k.dur, {bins = 25, log = log, unit = "ns", title = "Kernel durations",
                                           xlabel = "duration", width = 640, height = 400})
      check_figure_png(cv, 640, 400, "histogram")
      T.eq(#d.counts, 25, "bins")
      T.eq(#d.edges, 26, "edges")
      T.eq(d.edges[1], T.sql1(nccl, "SELECT min(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL" ..
                                    (log and " WHERE end > start" or "")), "first edge is the minimum")
      T.eq(d.edges[26], T.sql1(nccl, "SELECT max(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "last edge")
      local terms = {}
      for i = 1, 25 do
        terms[i] = fmt("sum(d >= %.17g AND d %s %.17g)", d.edges[i], i == 25 and "<=" or "<", d.edges[i + 1])
      end
      local row = T.sql(nccl, "SELECT " .. table.concat(terms, ", ") ..
                              " FROM (SELECT end - start AS d FROM CUPTI_ACTIVITY_KIND_KERNEL)")[1]
      local total = 0
      for i = 1, 25 do
        T.eq(d.counts[i], num(row[i]), fmt("bin %d (%s)", i, log and "log" or "linear"))
        total = total + d.counts[i]
      end
      T.eq(d.total, total, "total")
      T.eq(d.total + d.outside, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "every kernel")
      if log then
        T.ok(d.edges[2] / d.edges[1] - d.edges[26] / d.edges[25] < 1e-9, "equal ratios")
      end
    end
    -- SVG of the same, well-formed; empty data gives an empty chart, not an error
    check_xml((plot.histogram(k.dur, {format = "svg", log = true})):to_string())
    local cv, d = plot.histogram({}, {title = "nothing"})
    T.eq(d.total, 0, "no data")
    T.eq(cv:kind(), "png", "still a figure")
    T.raises(function() plot.histogram(k.dur, {bins = 0}) end, "bins", "bad bin count")
    T.raises(function() plot.histogram(k.dur, {format = "gif"}) end, "format", "bad format")
  end},

  {"category labels: a long C++ name loses template arguments and parameters, never its end; the figure grows", function()
    local long = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::CUDAFunctor_add<float>, " ..
                 "std::array<char *, (unsigned long)3>>(int, T2, T3)"
    T.eq(plot.category_label(long, 12), "at::native::vectorized_elementwise_kernel<…>", "shortened")
    T.eq(plot.category_label("GPU 0", 12), "GPU 0", "a short label stays")
    local short = plot.category_label(long, 12)
    local probe = check_figure_png((plot.grouped_bars{categories = {long, "b"}, series = {{label = "a", values = {1, 2}}}}),
                                   nil, nil, "bars with a long label")
    T.ok(probe.height >= 480 + nsl.text_width(short, 12) - 12, "the figure is tall enough for the rotated label " ..
         "(" .. probe.height .. " px)")
  end},

  {"box, violin and CDF of durations per kernel name: quartiles, whiskers, density, CDF points equal SQL", function()
    local tr = assert(nsl.open(h100))
    local k = tr.kernels
    local groups = plot.groups(k, "name", "dur", 4)
    T.eq(#groups, 4, "four largest groups")
    local top = T.sql(h100, [[SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN StringIds s ON s.id = k.shortName GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 4]])
    local bycount = {}
    for _, r in ipairs(top) do bycount[r[1]] = num(r[2]) end
    local cv, d = plot.box(groups, {log = true, unit = "ns", title = "Durations per kernel"})
    check_figure_png(cv, nil, nil, "box")
    for _, g in ipairs(d.groups) do
      T.eq(g.n, bycount[g.label], "group size of " .. g.label)
      local v = sql_values(h100, fmt([[SELECT k.end - k.start AS d FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE s.value = '%s' AND k.end > k.start ORDER BY d]], g.label))
      T.near(g.q1, quantile(v, 0.25), 1e-12, "q1 " .. g.label)
      T.near(g.median, quantile(v, 0.5), 1e-12, "median " .. g.label)
      T.near(g.q3, quantile(v, 0.75), 1e-12, "q3 " .. g.label)
      local iqr = g.q3 - g.q1
      local wlo, whi, outl = nil, nil, 0
      for _, x in ipairs(v) do
        if x >= g.q1 - 1.5 * iqr and (not wlo or x < wlo) then wlo = x end
        if x <= g.q3 + 1.5 * iqr and (not whi or x > whi) then whi = x end
      end
      for _, x in ipairs(v) do if x < wlo or x > whi then outl = outl + 1 end end
      T.eq(g.whisker_lo, wlo, "lower whisker " .. g.label)
      T.eq(g.whisker_hi, whi, "upper whisker " .. g.label)
      T.eq(g.outliers, outl, "outliers " .. g.label)
    end
    local vcv, vd = plot.violin(groups, {log = true, unit = "ns", format = "svg"})
    check_xml(vcv:to_string())
    check_figure_png((plot.violin(groups, {log = true, unit = "ns"})), nil, nil, "violin")
    for _, g in ipairs(vd.groups) do   -- the density's counts: a brute-force histogram of the SQL values
      local v = sql_values(h100, fmt([[SELECT k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE s.value = '%s']], g.label))
      local nb = #vd.edges - 1
      for b = 1, nb do
        local want = 0
        for _, x in ipairs(v) do
          if x >= vd.edges[b] and (x < vd.edges[b + 1] or (b == nb and x <= vd.edges[b + 1])) then want = want + 1 end
        end
        T.eq(g.counts[b], want, fmt("violin bin %d of %s", b, g.label))
      end
    end
    local ccv, cd = plot.cdf(groups, {log = true, unit = "ns", points = 64})
    check_figure_png(ccv, 800, 480, "cdf")
    for _, s in ipairs(cd.series) do
      local v = sql_values(h100, fmt([[SELECT k.end - k.start AS d FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE s.value = '%s' AND k.end > k.start ORDER BY d]], s.label))
      T.eq(s.n, #v, "cdf n " .. s.label)
      T.near(s.p50, quantile(v, 0.5), 1e-12, "p50 " .. s.label)
      T.near(s.p99, quantile(v, 0.99), 1e-12, "p99 " .. s.label)
      for j = 1, #s.x do   -- p is the fraction of values <= x, at least at that order statistic
        local le = 0
        for _, x in ipairs(v) do if x <= s.x[j] then le = le + 1 end end
        T.ok(s.p[j] <= le / #v + 1e-12, "cdf point below the empirical CDF")
        T.ok(s.p[j] > 0 and s.p[j] <= 1, "cdf point in (0, 1]")
      end
      T.eq(s.p[#s.p], 1, "last point")
      T.eq(s.x[#s.x], v[#v], "last x is the maximum")
    end
  end},

  {"stacked and grouped bars of kernel time per device and kind: heights equal SQL", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels
    k:load{"device", "name", "dur"}
    local kind = k.name:match("^nccl"):cast("i64")
    local g = k:with("nccl", kind):group_by("device", "nccl"):agg{"total=sum(dur)"}
    local cats, series = {}, {{label = "compute", values = {}}, {label = "NCCL", values = {}}}
    local devs = {}
    for i = 1, #g do devs[g.device[i]] = true end
    for dev in pairs(devs) do cats[#cats + 1] = dev end
    table.sort(cats)
    for i = 1, #g do
      local ci
      for c, dev in ipairs(cats) do if dev == g.device[i] then ci = c end end
      series[g.nccl[i] + 1].values[ci] = g.total[i]
    end
    local labels = {}
    for i, dev in ipairs(cats) do labels[i] = "GPU " .. dev end
    local cv, d = plot.stacked_bars{categories = labels, series = series, unit = "ns", title = "Kernel time per GPU"}
    check_figure_png(cv, nil, 480, "stacked bars")
    local rows = T.sql(nccl, [[SELECT k.deviceId, sum(CASE WHEN s.value LIKE 'nccl%' THEN 0 ELSE k.end - k.start END),
      sum(CASE WHEN s.value LIKE 'nccl%' THEN k.end - k.start ELSE 0 END), sum(k.end - k.start)
      FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName GROUP BY 1 ORDER BY 1]])
    T.eq(#d.categories, #rows, "one bar per device")
    for i, r in ipairs(rows) do
      T.eq(d.series[1].values[i], num(r[2]), "compute time GPU " .. r[1])
      T.eq(d.series[2].values[i], num(r[3]), "NCCL time GPU " .. r[1])
      T.eq(d.totals[i], num(r[4]), "bar height GPU " .. r[1])
    end
    local gcv, gd = plot.grouped_bars{categories = labels, series = series, unit = "ns", format = "svg"}
    check_xml(gcv:to_string())
    T.eq(gd.series[2].values[1], num(rows[1][3]), "grouped bar height")
    check_figure_png((plot.grouped_bars{categories = labels, series = series}), nil, 480, "grouped bars")
  end},

  {"line chart of kernel durations over time: ranges equal SQL", function()
    local tr = assert(nsl.open(nccl))
    local k = tr.kernels:select{"start", "dur"}:sort("start")
    local t0 = k.start[1]
    local cv, d = plot.lines{series = {{label = "kernel duration", x = k.start - t0, y = k.dur}},
                             xunit = "ns", yunit = "ns", title = "Kernel durations over time", xlabel = "time"}
    check_figure_png(cv, 800, 480, "lines")
    T.eq(d.series[1].n, T.sql1(nccl, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "points")
    T.eq(d.series[1].xmax, T.sql1(nccl, "SELECT max(start) - min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "x range")
    T.eq(d.series[1].ymax, T.sql1(nccl, "SELECT max(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "y range")
    T.eq(d.series[1].ymin, T.sql1(nccl, "SELECT min(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "y minimum")
    local lcv = plot.lines{series = {{label = "a", x = {1, 10, 100}, y = {1, 2, 3}}}, xlog = true, points = true,
                           format = "svg"}
    check_xml(lcv:to_string())
  end},

  {"timeline: lanes and events per class equal SQL, for the whole trace and a window", function()
    local tr = assert(nsl.open(nccl))
    local lo = T.sql1(nccl, [[SELECT min(s) FROM (SELECT min(start) s FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
      SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMSET
      UNION ALL SELECT min(start) FROM NVTX_EVENTS UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME)]])
    local wlo, whi = window.span(tr)
    T.eq(wlo, lo, "trace start")
    for _, w in ipairs({{lo, whi + 1}, {lo + 100000000, lo + 112000000}}) do
      local from, to = w[1], w[2]
      local cv, d = plot.timeline(tr, {from = from, to = to, origin = lo, title = "Timeline"})
      local ov = fmt("start < %d AND end > %d", to, from)
      local function q(sql) return T.sql1(nccl, sql) end
      T.eq(d.counts.kernel, q([[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
        WHERE s.value NOT LIKE 'nccl%' AND ]] .. ov), "kernels")
      T.eq(d.counts.nccl, q([[SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
        WHERE s.value LIKE 'nccl%' AND ]] .. ov), "NCCL kernels")
      local mc = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE "
      T.eq(d.counts.memcpy_htod, q(mc .. "copyKind = 1 AND " .. ov), "HtoD")
      T.eq(d.counts.memcpy_dtoh, q(mc .. "copyKind = 2 AND " .. ov), "DtoH")
      T.eq(d.counts.memcpy_other, q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind NOT IN (1, 2) AND "
                                    .. ov), "other memcpy")
      T.eq(d.counts.memset, q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE " .. ov), "memset")
      T.eq(d.counts.nvtx, q("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND " .. ov), "NVTX")
      -- lanes: distinct (device, stream) of GPU work, then distinct threads of NVTX, in order
      local gpu = T.sql(nccl, [[SELECT deviceId, streamId, count(*) FROM (
        SELECT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE ]] .. ov .. [[ UNION ALL
        SELECT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE ]] .. ov .. [[ UNION ALL
        SELECT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE ]] .. ov .. ") GROUP BY 1, 2 ORDER BY 1, 2")
      local thr = T.sql(nccl, [[SELECT (globalTid >> 24) & 16777215, globalTid & 16777215, count(*) FROM NVTX_EVENTS
        WHERE eventType IN (59, 60) AND ]] .. ov .. " GROUP BY 1, 2 ORDER BY 1, 2")
      T.eq(#d.lanes, #gpu + #thr, "lanes")
      for i, r in ipairs(gpu) do
        local l = d.lanes[i]
        T.eq(l.kind, "gpu", "gpu lane " .. i)
        T.eq(l.device, num(r[1]), "device of lane " .. i)
        T.eq(l.stream, num(r[2]), "stream of lane " .. i)
        T.eq(l.events, num(r[3]), "events of lane " .. i)
      end
      for i, r in ipairs(thr) do
        local l = d.lanes[#gpu + i]
        T.eq(l.kind, "nvtx", "nvtx lane")
        T.eq(l.pid, num(r[1]), "pid")
        T.eq(l.tid, num(r[2]), "tid")
        T.eq(l.events, num(r[3]), "ranges of the thread")
        -- sub-rows: the deepest nesting (brute force: ranges of the thread enclosing each one)
        local rr = T.sql(nccl, fmt([[SELECT start, end FROM NVTX_EVENTS WHERE eventType = 59 AND %s
          AND globalTid & 16777215 = %s ORDER BY start, end DESC]], ov, r[2]))
        local deepest, stack = 0, {}
        for _, x in ipairs(rr) do
          local s, e = num(x[1]), num(x[2])
          while #stack > 0 and stack[#stack] <= s do stack[#stack] = nil end
          deepest = math.max(deepest, #stack)
          stack[#stack + 1] = e
        end
        T.eq(l.rows, math.min(8, deepest + 1), "sub-rows of thread " .. r[2])
      end
      check_figure_png(cv, 1400, nil, "timeline")
      T.ok(d.spans > 0 and d.spans <= d.counts.kernel + d.counts.nccl + d.counts.memcpy_htod + d.counts.memcpy_dtoh +
           d.counts.memcpy_other + d.counts.memset + d.counts.nvtx, "merged spans")
    end
    check_xml((plot.timeline(tr, {format = "svg", from = lo, to = lo + 5000000})):to_string())
    local _, empty = plot.timeline(tr, {from = 1, to = 2})
    T.eq(#empty.lanes, 0, "a window without events")
  end},

  {"utilisation heatmap: busy fraction per device and bin equals brute force over SQL intervals", function()
    local tr = assert(nsl.open(nccl))
    local nb = 50
    local cv, d = plot.utilization(tr, {bins = nb, title = "GPU busy"})
    check_figure_png(cv, 900, nil, "utilisation")
    local devs = T.sql(nccl, "SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")
    T.eq(#d.rows, #devs, "one row per device")
    for r, dev in ipairs(devs) do
      T.eq(d.keys[r].device, num(dev[1]), "device order")
      -- union of the device's kernels, then the overlap with each bin
      local iv = T.sql(nccl, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = " .. dev[1] ..
                             " ORDER BY start")
      local merged = {}
      for _, x in ipairs(iv) do
        local s, e = num(x[1]), num(x[2])
        local last = merged[#merged]
        if last and s <= last[2] then last[2] = math.max(last[2], e) else merged[#merged + 1] = {s, e} end
      end
      for b = 1, nb do
        local a, z = d.edges[b], d.edges[b + 1]
        local busy = 0
        for _, m in ipairs(merged) do busy = busy + math.max(0, math.min(z, m[2]) - math.max(a, m[1])) end
        T.near(d.fraction[r][b], busy / (z - a), 1e-12, fmt("GPU %s bin %d", dev[1], b))
      end
    end
    local lo = T.sql1(nccl, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    local hi = T.sql1(nccl, "SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    T.eq(d.edges[1], lo, "first edge")
    T.eq(d.edges[nb + 1], hi, "last edge")
    check_xml((plot.utilization(tr, {bins = 10, format = "svg"})):to_string())
  end},

  {"flame graphs of CPU samples: folded stacks from SQL, frames, PNG, interactive SVG", function()
    -- folded stacks built here from SQL rows (root first), the input other helpers produce
    local rows = T.sql(sampling, [[SELECT c.id, c.stackDepth, s.value FROM SAMPLING_CALLCHAINS c
      JOIN StringIds s ON s.id = c.symbol ORDER BY c.id, c.stackDepth DESC]])
    local stacks, order = {}, {}
    for _, r in ipairs(rows) do
      if not stacks[r[1]] then stacks[r[1]] = {}; order[#order + 1] = r[1] end
      local st = stacks[r[1]]
      st[#st + 1] = r[3]:gsub(";", ":")
    end
    local counts = {}
    for _, id in ipairs(order) do
      local key = table.concat(stacks[id], ";")
      counts[key] = (counts[key] or 0) + 1
    end
    local lines = {}
    for key, n in pairs(counts) do lines[#lines + 1] = key .. " " .. n end
    table.sort(lines)
    local fr = plot.folded_frames(table.concat(lines, "\n") .. "\nnot a folded line\n")
    T.eq(fr.total, T.sql1(sampling, "SELECT count(DISTINCT id) FROM SAMPLING_CALLCHAINS"), "samples")
    T.eq(fr.skipped, 1, "bad line skipped")
    T.eq(fr.name[1], "all", "root")
    T.eq(fr.width[1], fr.total, "root spans all")
    -- every frame: its children fit inside it and their widths add up to at most its own
    local children = {}
    for i = 2, #fr.name do
      for j = i - 1, 1, -1 do
        if fr.depth[j] == fr.depth[i] - 1 and fr.x[j] <= fr.x[i] and fr.x[i] + fr.width[i] <= fr.x[j] + fr.width[j] then
          children[j] = (children[j] or 0) + fr.width[i]
          break
        end
      end
    end
    for j, w in pairs(children) do T.ok(w <= fr.width[j], "children inside frame " .. fr.name[j]) end
    -- leaf frames' widths add up to the samples (stacks of distinct paths)
    local maxd = 0
    for i = 1, #fr.name do maxd = math.max(maxd, fr.depth[i]) end
    local deepest = 0
    for _, id in ipairs(order) do deepest = math.max(deepest, #stacks[id]) end
    T.eq(maxd, deepest, "depth of the deepest stack (root at 0)")
    local cv, d = plot.flamegraph(fr, {title = "CPU samples"})
    check_figure_png(cv, 1200, nil, "flame graph")
    T.eq(d.frames, #fr.name, "frames")
    T.ok(d.drawn > 0 and d.labelled > 0, "drawn and labelled")
    check_xml((plot.flamegraph(fr, {format = "svg", icicle = true})):to_string())
    local icv, idata = plot.flamegraph_svg(fr, {title = "CPU samples (interactive)"})
    local svg = icv:to_string()
    check_xml(svg)
    T.eq(idata.drawn, d.drawn, "same frames drawn")
    T.ok(svg:find("<script", 1, true) and svg:find("addEventListener('click'", 1, true), "inline script with zoom")
    T.ok(not svg:find("https?://[^\"]*%.js") and not svg:find("<script[^>]*src="), "no network")
    local gs = 0
    for _ in svg:gmatch('<g class="nslfg%-f">') do gs = gs + 1 end
    T.eq(gs, idata.drawn, "one group per frame")
    -- frames from an nsl table, as the flame graph analysis may give them
    local t = nsl.table{{"name", fr.name}, {"depth", fr.depth}, {"x", fr.x}, {"width", fr.width}}
    local _, td = plot.flamegraph(t)
    T.eq(td.total, fr.total, "total from the table")
    T.raises(function() plot.flamegraph{name = {"a"}, depth = {0}, x = {0}, width = {}} end, "one length", "bad frames")
    -- folded stacks as the flamegraph analysis gives them: an nsl table {stack, weight}; interactive SVG on request
    local st, wt = {}, {}
    for key, n in pairs(counts) do st[#st + 1], wt[#wt + 1] = key, n end
    local ft = nsl.table{{"stack", st}, {"weight", wt}}
    local scv, sd = plot.flamegraph(ft, {format = "svg", interactive = true})
    T.eq(sd.total, fr.total, "total from {stack, weight}")
    T.eq(sd.frames, #fr.name, "same frames as from the folded text")
    T.ok(scv:to_string():find("<script", 1, true), "interactive on request")
    local bad = plot.stack_frames({"a;b", "a", "c"}, {3, -1, "x"})
    T.eq(bad.skipped, 2, "negative and non-number weights skipped")
    T.eq(bad.total, 3, "total of the good stacks")
    T.eq(table.concat(bad.name, ","), "all,a,b", "frames of a;b under the root")
  end},

  {"export: valid Chrome/Perfetto JSON; events and durations per category equal SQL", function()
    local runner = require("nsl.engine.runner")
    local output = require("nsl.engine.output")
    local a = assert(runner.load_analysis("export"))
    for _, case in ipairs({{path = nccl, args = {}}, {path = nccl, args = {from = "100ms", to = "120ms"}},
                           {path = mpi, args = {}}}) do
      local dir = tmpdir()
      local tr = assert(nsl.open(case.path))
      local args = assert(runner.parse_args(a, (function()
        local l = {}
        for k, v in pairs(case.args) do l[#l + 1] = k .. "=" .. v end
        return l
      end)()))
      local out = output.new{analysis = "export", format = "csv", dir = dir, trace = tr}
      a.run(tr, args, out)
      local f = assert(io.open(dir .. "/trace.json", "rb"))
      local text = f:read("a")
      f:close()
      local doc = json_decode(text)
      T.eq(doc.displayTimeUnit, "ns", "display unit")
      local p = case.path
      local lo = window.span(tr)
      local units = require("nsl.util.units")
      local from = case.args.from and lo + units.duration(case.args.from) or nil
      local to = case.args.to and lo + units.duration(case.args.to) or nil
      local ov = from and fmt(" AND start < %d AND end > %d", to, from) or ""
      local n, dur, names, threads, procs = {}, {}, {}, {}, {}
      local flows = {s = 0, f = 0}
      for _, e in ipairs(doc.traceEvents) do
        T.ok(type(e.pid) == "number" and e.pid > 0 and e.pid < 2 ^ 31, "pid in range")
        if e.ph == "X" then
          n[e.cat] = (n[e.cat] or 0) + 1
          dur[e.cat] = (dur[e.cat] or 0) + math.floor(e.dur * 1000 + 0.5)
          T.ok(type(e.name) == "string", "name is a string")
          T.ok(e.tid > 0 and e.tid < 2 ^ 31, "tid in range")
          threads[e.pid .. "/" .. e.tid] = threads[e.pid .. "/" .. e.tid] or {}
          if e.cat == "kernel" then threads[e.pid .. "/" .. e.tid].stream = e.args.stream end
        elseif e.ph == "M" then
          if e.name == "thread_name" then names[e.pid .. "/" .. e.tid] = e.args.name end
          if e.name == "process_name" then procs[e.pid] = e.args.name end
        elseif e.ph == "s" or e.ph == "f" then
          flows[e.ph] = flows[e.ph] + 1
        end
      end
      -- every track is named; a GPU stream's thread is named after its stream
      for key, info in pairs(threads) do
        T.ok(names[key], "thread " .. key .. " has a name")
        T.ok(procs[tonumber(key:match("^(%d+)"))], "process of " .. key .. " has a name")
        if info.stream then T.eq(names[key], "stream " .. info.stream, "stream track name") end
      end
      local function cnt(sql) return T.sql1(p, sql) end
      local function exists(tbl) return cnt(fmt("SELECT count(*) FROM sqlite_master WHERE name = '%s'", tbl)) == 1 end
      local tables = {kernel = {"CUPTI_ACTIVITY_KIND_KERNEL"}, memcpy = {"CUPTI_ACTIVITY_KIND_MEMCPY"},
                      memset = {"CUPTI_ACTIVITY_KIND_MEMSET"},
                      cuda_api = {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}}
      for cat, list in pairs(tables) do
        local want_n, want_d = 0, 0
        for _, tbl in ipairs(list) do
          if exists(tbl) then
            want_n = want_n + cnt(fmt("SELECT count(*) FROM %s WHERE 1%s", tbl, ov))
            want_d = want_d + cnt(fmt("SELECT coalesce(sum(end - start), 0) FROM %s WHERE 1%s", tbl, ov))
          end
        end
        T.eq(n[cat] or 0, want_n, cat .. " events in " .. p)
        T.eq(dur[cat] or 0, want_d, cat .. " total duration (ns, from the µs text)")
      end
      T.eq(n.nvtx or 0, cnt("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59" .. ov), "NVTX ranges")
      T.eq(dur.nvtx or 0, cnt("SELECT coalesce(sum(end - start), 0) FROM NVTX_EVENTS WHERE eventType = 59" .. ov),
           "NVTX total duration")
      -- a flow per GPU operation whose launch (same correlation id) is exported too
      local gpu_ops = {}
      for _, tbl in ipairs({"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                            "CUPTI_ACTIVITY_KIND_MEMSET"}) do
        if exists(tbl) then
          local launches = {}
          for _, api in ipairs({"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}) do
            if exists(api) then launches[#launches + 1] = fmt("SELECT correlationId FROM %s WHERE 1%s", api, ov) end
          end
          if #launches > 0 then
            gpu_ops[#gpu_ops + 1] = fmt("SELECT count(*) FROM %s WHERE 1%s AND correlationId IN (%s)", tbl, ov,
                                        table.concat(launches, " UNION "))
          end
        end
      end
      local want_flows = 0
      for _, q in ipairs(gpu_ops) do want_flows = want_flows + cnt(q) end
      T.eq(flows.s, want_flows, "flow starts")
      T.eq(flows.f, want_flows, "flow ends")
      if not from then   -- timestamps: µs with ns precision, exactly the SQL start of the first kernel
        local first = T.sql(p, "SELECT start, end - start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1")[1]
        if first then
          local found = false
          for _, e in ipairs(doc.traceEvents) do
            if e.cat == "kernel" and math.floor(e.ts * 1000 + 0.5) == num(first[1]) then
              found = true
              T.eq(math.floor(e.dur * 1000 + 0.5), num(first[2]), "its duration")
            end
          end
          T.ok(found, "the first kernel at its exact ns time")
        end
      end
      -- pids of CPU events are the OS pids of the export
      if p == nccl and not from then
        local pids = T.sql(p, [[SELECT DISTINCT (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME
          ORDER BY 1]])
        for _, r in ipairs(pids) do T.ok(procs[num(r[1])], "process " .. r[1] .. " named") end
      end
      -- made in pieces of a few rows (PIECE_ROWS: one part of many pieces, masked rows across their edges):
      -- the same bytes
      local te = require("nsl.trace_events")
      local rows0, dir2 = te.PIECE_ROWS, tmpdir()
      te.PIECE_ROWS = 97
      local ok, err = pcall(a.run, tr, args, output.new{analysis = "export", format = "csv", dir = dir2, trace = tr})
      te.PIECE_ROWS = rows0
      assert(ok, err)
      local g = assert(io.open(dir2 .. "/trace.json", "rb"))
      T.ok(g:read("a") == text, "the JSON written in pieces of 97 rows is the same text (" .. p .. ")")
      g:close()
      rmtree(dir2)
      rmtree(dir)
    end
  end},

  {"nsl.write_file with a function: the pieces in order, and no file (nor a temporary one) when it raises", function()
    local dir = tmpdir()
    local path = dir .. "/out.json"
    assert(nsl.write_file(path, function(write) for i = 1, 1000 do write(tostring(i) .. ",") end end))
    local want = {}
    for i = 1, 1000 do want[i] = tostring(i) .. "," end
    local f = assert(io.open(path, "rb"))
    T.eq(f:read("a"), table.concat(want), "the file holds every piece in order")
    f:close()
    os.remove(path)
    local ok, err = pcall(nsl.write_file, path, function(write) write("half"); error("made up failure") end)
    T.ok(not ok and tostring(err):find("made up failure"), "the producer's error comes through: " .. tostring(err))
    local p = io.popen("ls -A " .. T.shell_quote(dir))
    T.eq(p:read("a"), "", "no file and no temporary file left")
    p:close()
    -- an export refused before its first byte (max_events) leaves no file
    local runner = require("nsl.engine.runner")
    local output = require("nsl.engine.output")
    local a = assert(runner.load_analysis("export"))
    local tr = assert(nsl.open(nccl))
    local args = assert(runner.parse_args(a, {"max_events=10"}))
    ok, err = pcall(a.run, tr, args, output.new{analysis = "export", format = "csv", dir = dir, trace = tr})
    T.ok(not ok and tostring(type(err) == "table" and err.msg or err):find("max_events"), "refused: " ..
         tostring(type(err) == "table" and err.msg or err))
    p = io.popen("ls -A " .. T.shell_quote(dir))
    T.eq(p:read("a"), "", "no trace.json and no temporary file left")
    p:close()
    rmtree(dir)
  end},

  {"export: start/end NVTX ranges as async pairs, marks as instants (derived fixture made with SQL)", function()
    local dir = tmpdir()
    local copy = dir .. "/planted.sqlite"
    assert(os.execute(fmt("cp %s %s && chmod u+w %s", T.shell_quote(nccl), T.shell_quote(copy), T.shell_quote(copy))))
    -- 40 ranges become start/end ranges; 5 marks (no end) are added
    local sql = [[UPDATE NVTX_EVENTS SET eventType = 60 WHERE rowid IN (SELECT rowid FROM NVTX_EVENTS ORDER BY rowid
      LIMIT 40); INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text)
      SELECT start, NULL, 34, globalTid, 'mark ' || rowid FROM NVTX_EVENTS ORDER BY rowid LIMIT 5 OFFSET 100;]]
    assert(os.execute(fmt("sqlite3 %s %s", T.shell_quote(copy), T.shell_quote(sql))))
    local runner = require("nsl.engine.runner")
    local output = require("nsl.engine.output")
    local a = assert(runner.load_analysis("export"))
    local tr = assert(nsl.open(copy))
    local out = output.new{analysis = "export", format = "csv", dir = dir, trace = tr}
    a.run(tr, assert(runner.parse_args(a, {"flows=false", "api=false"})), out)
    local f = assert(io.open(dir .. "/trace.json", "rb"))
    local doc = json_decode(f:read("a"))
    f:close()
    local b, e, i, x, open = 0, 0, 0, 0, {}
    local async_dur = 0
    for _, ev in ipairs(doc.traceEvents) do
      if ev.ph == "b" then b = b + 1; open[ev.id] = ev.ts
      elseif ev.ph == "e" then
        e = e + 1
        T.ok(open[ev.id], "end after begin")
        async_dur = async_dur + math.floor((ev.ts - open[ev.id]) * 1000 + 0.5)
      elseif ev.ph == "i" then i = i + 1
      elseif ev.ph == "X" and ev.cat == "nvtx" then x = x + 1 end
      T.ok(ev.ph ~= "s" and ev.cat ~= "cuda_api", "flows and API calls left out")
    end
    T.eq(b, 40, "async begins")
    T.eq(e, 40, "async ends")
    T.eq(async_dur, T.sql1(copy, "SELECT sum(end - start) FROM NVTX_EVENTS WHERE eventType = 60"), "async durations")
    T.eq(i, 5, "marks")
    T.eq(x, T.sql1(copy, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59"), "push/pop ranges")
    rmtree(dir)
  end},

  {"time windows: from/to counted from the trace start, errors, spans", function()
    local tr = assert(nsl.open(nccl))
    local from, to, lo, hi = window.resolve(tr, {from = "10ms", to = "20ms"})
    T.eq(to - from, 10000000, "window length")
    T.eq(from - lo, 10000000, "from the trace start")
    T.eq(hi, T.sql1(nccl, [[SELECT max(e) FROM (SELECT max(end) e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
      SELECT max(end) FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT max(end) FROM CUPTI_ACTIVITY_KIND_MEMSET
      UNION ALL SELECT max(end) FROM NVTX_EVENTS UNION ALL SELECT max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME)]]), "end")
    T.raises(function() window.resolve(tr, {from = "20ms", to = "10ms"}) end, "empty", "reversed window")
    T.raises(function() window.resolve(tr, {from = "soon"}) end, "--arg from", "bad time")
  end},

  {"figure kernels: bin edges, busy per bin, nesting depth, span merging, format_rows from Lua", function()
    local e = nsl.bin_edges(0, 10, 4)
    T.eq(table.concat(e:totable(), ","), "0,2,5,7,10", "edges")
    local b = nsl.busy_per_bin(nsl.column{0, 5, 20}, nsl.column{10, 15, 30}, nsl.column{0, 0, 1}, 2, 0, 40, 4)
    T.eq(table.concat(b:totable(), ","), "10,5,0,0,0,0,10,0", "busy per bin")
    local d, deepest = nsl.nest_depth(nsl.column{0, 10, 20}, nsl.column{100, 50, 30}, nsl.column{0, 0, 0})
    T.eq(table.concat(d:totable(), ","), "0,1,2", "depths")
    T.eq(deepest[1], 2, "deepest")
    local m = nsl.spans_merge(nsl.column{0.0, 1.0, 5.0}, nsl.column{1.0, 2.0, 6.0}, nsl.column{0, 0, 0}, nil, {tol = 0})
    T.eq(#m, 2, "merged spans")
    T.eq(m.count[1] + m.count[2], 3, "counts")
    T.eq(nsl.format_rows('{"a":%d,"t":%t,"s":%S}',
                         {nsl.column{1, 2}, nsl.column{1500, 2000}, nsl.column{"x", "y\""}}, ","),
         '{"a":1,"t":1.5,"s":"x"},{"a":2,"t":2,"s":"y\\""}', "format_rows")
    T.raises(function() nsl.format_rows("%d", {}) end, "conversions", "too few columns")
    T.raises(function() nsl.busy_per_bin(nsl.column{0}, nsl.column{1}, nil, 1, 5, 5, 1) end, "empty", "bad range")
    -- thread 1: [0,100) > [10,50) > [20,30); thread 0: [5,8); lanes from 10, at most 2 sub-rows per thread
    local lanes, groups = nsl.nest_lanes(nsl.column{0, 10, 20, 5}, nsl.column{100, 50, 30, 8},
                                         {nsl.column{1, 1, 1, 0}}, 10, 2)
    T.eq(lanes[4], 10, "thread 0 first (key order)")
    T.eq(lanes[1], 11, "thread 1 next")
    T.eq(lanes[2], 12, "second sub-row of thread 1")
    T.eq(lanes[3], nil, "past max_sub")
    T.eq(table.concat(groups.row:totable(), ","), "3,0", "first row of each thread")
    T.eq(table.concat(groups.first_lane:totable(), ","), "10,11", "first lanes")
    T.eq(table.concat(groups.lanes:totable(), ","), "1,2", "lanes per thread")
    T.eq(table.concat(groups.count:totable(), ","), "1,3", "rows per thread")
    T.raises(function() nsl.nest_lanes(nsl.column{0}, nsl.column{1}, {1}, 0, 8) end, "not a column", "bad key")
    local one, g1 = nsl.nest_lanes(nil, nil, {nsl.column{3, 1, 3, 2}}, 5, 1)   -- not ranges: a lane per key
    T.eq(table.concat(one:totable(), ","), "7,5,7,6", "a lane per key, in key order")
    T.eq(table.concat(g1.count:totable(), ","), "1,1,2", "rows per key")
    T.eq(table.concat(nsl.overlapping_rows(nsl.column{0, 10, 20}, nsl.column{5, 15, 25}, 12, 21):totable(), ","),
         "1,2", "rows overlapping a window")
    T.eq(nsl.count_overlapping(nsl.column{0, 10, 20}, nsl.column{5, 15, 25}, 12, 21), 2, "their count")
    local tr = assert(nsl.open(nccl))
    local a, b = nsl.extent(tr.kernels.dur)
    T.eq(a, T.sql1(nccl, "SELECT min(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "extent min")
    T.eq(b, T.sql1(nccl, "SELECT max(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "extent max")
    T.eq(nsl.extent(nsl.column{1.5, 0 / 0, -2.5}), -2.5, "extent of floats skips NaN")
    T.eq(nsl.extent(nsl.column{}), nil, "extent of nothing")
  end},

  {"nesting depth of real NVTX ranges, per row, equals the ranges of the thread enclosing each one (SQL rows)",
   function()
    -- the earliest push/pop ranges (every range that encloses one of them starts earlier, so is among them)
    local rows = T.sql(nccl, [[SELECT start, end, globalTid FROM NVTX_EVENTS WHERE eventType = 59
      ORDER BY start, end DESC LIMIT 1200]])
    local n = #rows
    T.ok(n > 100, "enough ranges")
    local ss, ee, tid = {}, {}, {}
    for i, r in ipairs(rows) do ss[i], ee[i], tid[i] = num(r[1]), num(r[2]), num(r[3]) end
    local want, per = {}, {}   -- brute force, O(n^2): enclosing ranges of the same thread
    for i = 1, n do
      local d = 0
      for j = 1, n do
        if j ~= i and tid[j] == tid[i] and ss[j] <= ss[i] and ee[i] <= ee[j] and
           (ss[j] ~= ss[i] or ee[j] ~= ee[i] or j < i) then d = d + 1 end
      end
      want[i] = d
      per[tid[i]] = (per[tid[i]] or 0) + 1
    end
    -- three orders: by start (one walk), shuffled (sorted first), by stop (the mirror walk)
    local order_start, order_shuffled, order_stop = {}, {}, {}
    for i = 1, n do order_start[i], order_shuffled[i], order_stop[i] = i, i, i end
    local seed = 12345
    for i = n, 2, -1 do
      seed = (seed * 1103515245 + 12345) % 2147483648
      local j = seed % i + 1
      order_shuffled[i], order_shuffled[j] = order_shuffled[j], order_shuffled[i]
    end
    table.sort(order_stop, function(a, b) if ee[a] ~= ee[b] then return ee[a] < ee[b] end return ss[a] > ss[b] end)
    for name, ord in pairs({start = order_start, shuffled = order_shuffled, stop = order_stop}) do
      local s, e, t = {}, {}, {}
      for k, i in ipairs(ord) do s[k], e[k], t[k] = ss[i], ee[i], tid[i] end
      local tab = nsl.table{{"start", nsl.column(s)}, {"stop", nsl.column(e)}, {"tid", nsl.column(t)}}
      local g = tab:group_by("tid")
      local depth, deepest, count = nsl.nest_depth(tab.start, tab.stop, g:ids())
      local keys, twins = g:keys(), {}
      for k, i in ipairs(ord) do
        local key = fmt("%d/%d/%d", tid[i], ss[i], ee[i])
        twins[key] = (twins[key] or 0) + 1
      end
      local bad = 0
      for k, i in ipairs(ord) do
        local twin = twins[fmt("%d/%d/%d", tid[i], ss[i], ee[i])] > 1   -- identical ranges may swap depths
        if not twin and depth[k] ~= want[i] then bad = bad + 1 end
      end
      T.eq(bad, 0, "depths in " .. name .. " order")
      for gi = 1, #keys do
        local deep = -1
        for k, i in ipairs(ord) do if t[k] == keys.tid[gi] then deep = math.max(deep, want[i]) end end
        T.eq(deepest[gi], deep, "deepest of thread " .. keys.tid[gi] .. " in " .. name .. " order")
        T.eq(count[gi], per[keys.tid[gi]], "ranges of thread " .. keys.tid[gi])
      end
      -- lanes: threads in tid order from lane 3, each min(4, deepest + 1) sub-rows
      local lane, groups = nsl.nest_lanes(tab.start, tab.stop, {tab.tid}, 3, 4)
      local tids, deep_of = {}, {}
      for k, i in ipairs(ord) do
        if not deep_of[tid[i]] then tids[#tids + 1] = tid[i] end
        deep_of[tid[i]] = math.max(deep_of[tid[i]] or -1, want[i])
      end
      table.sort(tids)
      local base, next_lane = {}, 3
      for j, th in ipairs(tids) do
        base[th] = next_lane
        T.eq(groups.first_lane[j], next_lane, "first lane of thread " .. th .. " in " .. name .. " order")
        T.eq(groups.count[j], per[th], "rows of thread " .. th)
        T.eq(t[groups.row[j] + 1], th, "a row of thread " .. th)
        next_lane = next_lane + math.min(4, deep_of[th] + 1)
      end
      bad = 0
      for k, i in ipairs(ord) do
        local twin = twins[fmt("%d/%d/%d", tid[i], ss[i], ee[i])] > 1
        local w = want[i] < 4 and base[tid[i]] + want[i] or nil
        if not twin and lane[k] ~= w then bad = bad + 1 end
      end
      T.eq(bad, 0, "lanes in " .. name .. " order")
    end
  end},
}
