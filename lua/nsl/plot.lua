-- nsl.plot -- charts drawn with the render binding (nsl.canvas).  Every
-- chart returns the canvas (cv:to_string() gives PNG bytes or SVG text,
-- cv:write(path) writes the file) and the data behind it (bin counts, bar
-- heights, lanes), so callers can print or test it.  Heavy work stays in C:
-- histograms, quantiles, busy time per bin, nesting depths and the merging
-- of tiny spans run over whole columns; Lua loops only over bins, bars,
-- lanes and labels.
--
--   local plot = require("nsl.plot")
--   local cv, d = plot.histogram(k.dur, {bins = 50, log = true, unit = "ns", title = "Kernel durations"})
--   out:file("durations.png", cv:to_string())
--
-- Charts: histogram, box, violin, cdf, stacked_bars, grouped_bars, lines,
-- heatmap, timeline (per-stream Gantt of a trace), utilization (busy
-- fraction per device and time bin), flamegraph (PNG or SVG) and
-- flamegraph_svg (interactive: click to zoom, search, hover details).
-- Common options: width, height, format ("png" | "svg"), title, xlabel,
-- ylabel, font_size.  Units ("number", "ns", "bytes", "percent") label the
-- axes.  Colours come from the Okabe-Ito palette, readable by colour-blind
-- readers; heatmaps use a viridis-like map that survives grey-scale.
local nsl = require("nsl")

local M = {}

local floor, ceil, max, min, log = math.floor, math.ceil, math.max, math.min, math.log
local fmt, concat = string.format, table.concat

local INK, MUTED, GRID, AXIS, BG = "#1a1a1a", "#555555", "#e6e6e6", "#333333", "#ffffff"

local function log10(x) return log(x, 10) end

--- The values as a column: a column stays as it is, an array becomes one.
local function as_column(v, what)
  if nsl.type(v) == "column" then return v end
  if type(v) ~= "table" then error(fmt("plot: %s must be a column or an array of numbers", what or "values"), 3) end
  return nsl.column(v)
end

--- Number of non-NULL values (c:count() would also find the median).
local function nonnull(c) return #c - c:isnull():count() end

--- Rows of c where mask is true (through a one-column table).
local function masked(c, mask)
  return nsl.table{{"v", c}}:filter(mask).v
end

--- Text that fits in width px at size: the whole text, or its start with
-- "…", or nil when not even two characters fit.
local function fit_text(s, width, size)
  if nsl.text_width(s, size) <= width then return s end
  local n = utf8.len(s) or #s
  local lo, hi = 0, n   -- binary search on the number of characters kept
  while lo < hi do
    local mid = (lo + hi + 1) // 2
    local cut = s:sub(1, (utf8.offset(s, mid + 1) or #s + 1) - 1) .. "…"
    if nsl.text_width(cut, size) <= width then lo = mid else hi = mid - 1 end
  end
  if lo < 2 then return nil end
  return s:sub(1, (utf8.offset(s, lo + 1) or #s + 1) - 1) .. "…"
end
M.fit_text = fit_text

-- ---- axes ----------------------------------------------------------------------

--- An axis over [lo, hi]: o.log, o.unit, o.target (ticks), o.nice (widen
-- to whole ticks; default true).  Pixels are attached by axis_place.
local function make_axis(lo, hi, o)
  o = o or {}
  local a = {log = o.log and true or false, unit = o.unit or "number"}
  if a.log then
    if not (hi and hi > 0) then hi = 1 end
    if not (lo and lo > 0) or lo > hi then lo = hi / 10 end
    if lo == hi then lo, hi = lo / 2, hi * 2 end
  else
    lo, hi = lo or 0, hi or 1
    if lo > hi then lo, hi = hi, lo end
  end
  local topts = {target = o.target or 6, unit = a.unit, log = a.log}
  local t = nsl.ticks(lo, hi, topts)
  if o.nice ~= false or lo == hi then
    lo, hi = t.lo, t.hi
    t = nsl.ticks(lo, hi, topts)
  end
  a.lo, a.hi, a.ticks = lo, hi, t
  return a
end

--- Attaches pixels: data lo maps to p0, hi to p1; a.map(v) -> px (nil for
-- v <= 0 on a log axis).
local function axis_place(a, p0, p1)
  a.p0, a.p1 = p0, p1
  if a.log then
    local l0, l1 = log10(a.lo), log10(a.hi)
    a.map = function(v)
      if not (v and v > 0) then return nil end
      return p0 + (log10(v) - l0) / (l1 - l0) * (p1 - p0)
    end
  else
    local k = (p1 - p0) / (a.hi - a.lo)
    a.k = k
    a.map = function(v) return p0 + (v - a.lo) * k end
  end
end

-- ---- figures ------------------------------------------------------------------------

local Fig = {}
Fig.__index = Fig

--- A figure: a canvas of opts.width x opts.height (defaults w, h) cleared
-- white, with the title and axis labels of opts.
local function figure(opts, w, h)
  opts = opts or {}
  local format = opts.format or "png"
  if format ~= "png" and format ~= "svg" then error("plot: format must be \"png\" or \"svg\"", 3) end
  local f = setmetatable({opts = opts, w = floor(opts.width or w or 800), h = floor(opts.height or h or 480),
                          fs = opts.font_size or 12, format = format, legend = {}}, Fig)
  f.w, f.h = max(64, min(f.w, 16384)), max(48, min(f.h, 16384))
  f.cv = nsl.canvas(format, f.w, f.h)
  f.cv:clear(BG)
  return f
end

--- Adds a legend entry (kind "box" or "line").
function Fig:add_legend(label, color, kind)
  self.legend[#self.legend + 1] = {label = label, color = color, kind = kind or "box"}
end

function Fig:legend_width()
  if #self.legend == 0 then return 0 end
  local wmax = 0
  for _, e in ipairs(self.legend) do wmax = max(wmax, nsl.text_width(e.label, self.fs)) end
  return min(wmax, 220) + 34
end

--- Lays the plot area out from the y tick labels (ylabels: their texts),
-- the title, the axis labels and the legend; o.bottom / o.left / o.top
-- add room.  Sets px0, px1 (left, right) and py0, py1 (top, bottom).
function Fig:layout(ylabels, o)
  o = o or {}
  local fs, opts = self.fs, self.opts
  local top = 12 + (opts.title and fs + 14 or 0) + (o.top or 0)
  local yw = 0
  for _, s in ipairs(ylabels or {}) do yw = max(yw, nsl.text_width(s, fs)) end
  local left = 10 + (opts.ylabel and fs + 10 or 0) + yw + 8 + (o.left or 0)
  local bottom = 10 + (o.no_xticks and 0 or fs + 8) + (opts.xlabel and fs + 8 or 0) + (o.bottom or 0)
  local right = 16 + self:legend_width()
  self.px0, self.px1 = floor(left), floor(self.w - right)
  self.py0, self.py1 = floor(top), floor(self.h - bottom)
  if self.px1 - self.px0 < 20 then self.px1 = self.px0 + 20 end
  if self.py1 - self.py0 < 20 then self.py1 = self.py0 + 20 end
end

--- The title, axis titles and legend.
function Fig:decorate()
  local cv, fs, opts = self.cv, self.fs, self.opts
  if opts.title then
    cv:text(self.w / 2, 10, fit_text(opts.title, self.w - 20, fs + 3) or "",
      {fill = INK, font_size = fs + 3, bold = true, anchor = "middle", baseline = "top"})
  end
  if opts.xlabel then
    cv:text((self.px0 + self.px1) / 2, self.h - 8, opts.xlabel,
      {fill = INK, font_size = fs, anchor = "middle", baseline = "bottom"})
  end
  if opts.ylabel then
    cv:text(10, (self.py0 + self.py1) / 2, opts.ylabel,
      {fill = INK, font_size = fs, anchor = "middle", baseline = "top", rotation = 90})
  end
  if #self.legend > 0 then
    local x, y = self.px1 + 16, self.py0 + 2
    for _, e in ipairs(self.legend) do
      if e.kind == "line" then
        cv:line(x, y + fs / 2, x + 14, y + fs / 2, {stroke = e.color, line_width = 2.5})
      else
        cv:rect(x + 1, y + 1, fs - 2, fs - 2, {fill = e.color})
      end
      cv:text(x + 20, y + fs / 2, fit_text(e.label, 220, fs) or "", {fill = INK, font_size = fs, baseline = "middle"})
      y = y + fs + 6
    end
  end
end

--- Grid lines and tick labels of a numeric y axis.
function Fig:yaxis(a)
  local cv, fs = self.cv, self.fs
  for i, v in ipairs(a.ticks.values) do
    local y = a.map(v)
    if y then
      local yc = floor(y) + 0.5
      cv:line(self.px0, yc, self.px1, yc, {stroke = GRID})
      cv:text(self.px0 - 6, y, a.ticks.labels[i], {fill = MUTED, font_size = fs, anchor = "end", baseline = "middle"})
    end
  end
end

--- Tick marks and labels of a numeric x axis (grid lines when grid; only
-- the grid lines when grid == "only", so events can be drawn over them
-- before the labels).
function Fig:xaxis(a, grid)
  local cv, fs = self.cv, self.fs
  for i, v in ipairs(a.ticks.values) do
    local x = a.map(v)
    if x then
      local xc = floor(x) + 0.5
      if grid then cv:line(xc, self.py0, xc, self.py1, {stroke = GRID}) end
      if grid ~= "only" then
        local half = nsl.text_width(a.ticks.labels[i], fs) / 2
        local lx = min(max(x, half + 2), self.w - half - 2)   -- labels stay inside the canvas
        cv:line(xc, self.py1, xc, self.py1 + 4, {stroke = AXIS})
        cv:text(lx, self.py1 + 6, a.ticks.labels[i], {fill = MUTED, font_size = fs, anchor = "middle",
                                                        baseline = "top"})
      end
    end
  end
end

--- The left and bottom axis lines.
function Fig:frame()
  local cv = self.cv
  cv:line(self.px0 + 0.5, self.py0, self.px0 + 0.5, self.py1 + 0.5, {stroke = AXIS})
  cv:line(self.px0, self.py1 + 0.5, self.px1, self.py1 + 0.5, {stroke = AXIS})
end

--- A note in the middle of the plot area ("no data").
function Fig:note(text)
  self.cv:text((self.px0 + self.px1) / 2, (self.py0 + self.py1) / 2, text,
    {fill = MUTED, font_size = self.fs + 2, anchor = "middle", baseline = "middle"})
end

-- ---- histogram ---------------------------------------------------------------------

--- Edges of nb bins over [lo, hi]: equal widths, or equal ratios (log).
local function bin_edges(lo, hi, nb, logbins)
  local e = {}
  if logbins then
    local l0, l1 = log10(lo), log10(hi)
    for i = 0, nb do e[i + 1] = 10 ^ (l0 + (l1 - l0) * i / nb) end
  else
    for i = 0, nb do e[i + 1] = lo + (hi - lo) * i / nb end
  end
  e[1], e[nb + 1] = lo, hi
  return e
end

--- plot.histogram(values, opts) -> canvas, data.  values: a column or an
-- array.  opts.bins (40), opts.log (logarithmic bins and x axis; values <=
-- 0 left out), opts.range = {lo, hi} (default: the values' min and max),
-- opts.unit (of the values), opts.color, opts.ylog.  data: {edges, counts
-- (per bin [edges[i], edges[i+1]), the last bin closed), total (counted),
-- outside (values not in any bin, NULLs not counted), min, max}.
function M.histogram(values, opts)
  opts = opts or {}
  local c = as_column(values)
  local nb = floor(opts.bins or 40)
  if nb < 1 or nb > 100000 then error("plot.histogram: bins must be 1..100000", 2) end
  local f = figure(opts, 800, 480)
  f.opts.ylabel = f.opts.ylabel or "count"
  local pos = opts.log and masked(c, c:gt(0)) or c
  local vmin, vmax = nsl.extent(pos)
  local lo = opts.range and opts.range[1] or vmin
  local hi = opts.range and opts.range[2] or vmax
  local data = {edges = {}, counts = {}, total = 0, outside = nonnull(c), min = vmin, max = vmax}
  if not lo or not hi or (opts.log and (lo <= 0 or hi <= 0)) then
    f:layout({"0"})
    f:frame()
    f:note("no data")
    f:decorate()
    return f.cv, data
  end
  if hi <= lo then   -- one value: a bin around it
    if opts.log then lo, hi = lo / 1.5, hi * 1.5 else lo, hi = lo - 0.5, hi + 0.5 end
  end
  local edges = bin_edges(lo, hi, nb, opts.log)
  local counts = c:histogram(edges):totable()
  local total, cmax = 0, 0
  for _, n in ipairs(counts) do total, cmax = total + n, max(cmax, n) end
  data.edges, data.counts, data.total, data.outside = edges, counts, total, nonnull(c) - total
  local xa = make_axis(lo, hi, {log = opts.log, unit = opts.unit, nice = false, target = 7})
  local ya = make_axis(opts.ylog and 0.8 or 0, max(cmax, 1), {log = opts.ylog, target = 6})
  local ylabels = ya.ticks.labels
  f:layout(ylabels)
  axis_place(xa, f.px0, f.px1)
  axis_place(ya, f.py1, f.py0)
  f:yaxis(ya)
  local x0, x1, y0, y1 = {}, {}, {}, {}
  for i = 1, nb do
    x0[i], x1[i] = xa.map(edges[i]), xa.map(edges[i + 1])
    y0[i], y1[i] = ya.map(counts[i]) or f.py1, f.py1
  end
  f.cv:rects(x0, x1, y0, y1, nil, {fill = opts.color or nsl.palette(4), stroke = BG,
                                    line_width = nb <= (f.px1 - f.px0) / 4 and 0.5 or 0})
  f:xaxis(xa)
  f:frame()
  f:decorate()
  return f.cv, data
end

-- ---- box and violin plots --------------------------------------------------------------

--- Groups as a list of {label =, values = column}: from an array of
-- {label, values} pairs or {label = , values = } tables.
local function group_list(groups)
  local list = {}
  for i, g in ipairs(groups or {}) do
    local label = g.label or g[1] or tostring(i)
    list[i] = {label = tostring(label), values = as_column(g.values or g[2], "group values")}
  end
  return list
end

--- plot.groups(t, key, value [, limit]) -> groups for box/violin: the
-- values of column `value` of table t for each distinct `key` (the limit
-- largest groups by row count, 12 by default), largest first.
function M.groups(t, key, value, limit)
  local g = t:group_by(key):agg{"n=count"}:sort("-n"):head(limit or 12)
  local list = {}
  for i = 1, #g do
    local k = g[key][i]
    list[i] = {label = tostring(k), values = t:select{key, value}:filter(t[key]:eq(k))[value]}
  end
  return list
end

--- Five-number summary with Tukey whiskers (furthest values within 1.5
-- IQR of the quartiles) and the outliers beyond them.
local function box_stats(c, logscale)
  if logscale then c = masked(c, c:gt(0)) end
  local st = c:stats()
  local s = {n = st.count, min = st.min, max = st.max, mean = st.mean}
  if st.count == 0 then return s end
  s.q1, s.median, s.q3 = c:quantile(0.25), c:quantile(0.5), c:quantile(0.75)
  local iqr = s.q3 - s.q1
  s.whisker_lo = nsl.extent(masked(c, c:ge(s.q1 - 1.5 * iqr)))
  s.whisker_hi = select(2, nsl.extent(masked(c, c:le(s.q3 + 1.5 * iqr))))
  local out = c:lt(s.whisker_lo) | c:gt(s.whisker_hi)
  s.outliers = out:count()
  s.outlier_values = masked(c, out)
  return s
end

--- Category slots along x: centre of slot i and its width.
local function slots(f, n)
  local w = (f.px1 - f.px0) / max(n, 1)
  return function(i) return f.px0 + (i - 0.5) * w end, w
end

local LABEL_MAX = 320   -- px of a rotated category label; longer ones are shortened

--- A category label that fits in LABEL_MAX px: a long C++ name loses its
-- return type, template arguments (kept as "<…>") and parameter list first,
-- so what tells kernels apart stays readable; then its end is cut ("…").
local function category_label(s, fs)
  if nsl.text_width(s, fs) <= LABEL_MAX then return s end
  -- template arguments elided as in text tables (nsl.report.short_name), the parameter list dropped
  local t = require("nsl.report").short_name((s:gsub("^void ", ""))):gsub("%b()$", "")
  return fit_text(t, LABEL_MAX, fs) or t
end
M.category_label = category_label

--- Room below the axis for category labels in a figure w px wide: 0 when
-- they fit side by side, else the height of the labels rotated (the figure
-- grows by it, so nothing is cut).  Returns room, rotated.
local function category_room(fs, w, labels, n)
  local wmax = 0
  for _, s in ipairs(labels) do wmax = max(wmax, nsl.text_width(category_label(s, fs), fs)) end
  local slot = (w - 120) / max(n, 1)
  if wmax <= slot - 4 then return 0, false end
  return floor(min(wmax, LABEL_MAX) - fs + 8), true
end

local function category_labels(f, labels, rotated, slotw)
  local cx = slots(f, #labels)
  for i, s in ipairs(labels) do
    if rotated then
      f.cv:text(cx(i), f.py1 + 6, category_label(s, f.fs), {fill = MUTED, font_size = f.fs, anchor = "end",
                                                             baseline = "middle", rotation = 90})
    else
      f.cv:text(cx(i), f.py1 + 6, fit_text(category_label(s, f.fs), slotw - 4, f.fs) or "",
                {fill = MUTED, font_size = f.fs, anchor = "middle", baseline = "top"})
    end
  end
end

--- Shared frame of box and violin plots: y axis over every group's values.
local function group_figure(kind, groups, opts)
  local list = group_list(groups)
  local labels = {}
  for i, g in ipairs(list) do labels[i] = g.label end
  local w = floor(opts.width or max(480, 120 + 90 * #list))
  local room, rotated = category_room(opts.font_size or 12, w, labels, #list)
  local f = figure(opts, w, 480 + room)
  local stats, lo, hi = {}, nil, nil
  for i, g in ipairs(list) do
    stats[i] = box_stats(g.values, opts.log)
    stats[i].label = g.label
    if stats[i].n > 0 then
      lo = lo and min(lo, stats[i].min) or stats[i].min
      hi = hi and max(hi, stats[i].max) or stats[i].max
    end
  end
  local ya = make_axis(lo or (opts.log and 1 or 0), hi or 1, {log = opts.log, unit = opts.unit})
  f:layout(ya.ticks.labels, {bottom = room})
  axis_place(ya, f.py1, f.py0)
  f:yaxis(ya)
  local cx, slotw = slots(f, #list)
  return f, list, stats, ya, cx, slotw, function()
    category_labels(f, labels, rotated, slotw)
    f:frame()
    if #list == 0 then f:note("no data") end
    f:decorate()
  end, kind
end

--- Draws outliers as small circles (at most 400 per group, evenly
-- chosen in value order, so a million outliers stay cheap).
local function draw_outliers(f, s, ya, x)
  local c = s.outlier_values
  if not c or #c == 0 then return end
  local sorted = c:gather(c:argsort())
  local n, k = #sorted, min(#sorted, 400)
  for j = 0, k - 1 do
    local i = k == 1 and 1 or 1 + floor(j * (n - 1) / (k - 1) + 0.5)
    local y = ya.map(sorted[i])
    if y then f.cv:circle(x, y, 2.2, {fill = "none", stroke = MUTED, line_width = 1}) end
  end
end

--- plot.box(groups, opts) -> canvas, data.  groups: an array of {label,
-- column_or_array} (or {label =, values =}); plot.groups builds one from
-- a table.  opts.log (log y axis; values <= 0 left out), opts.unit.
-- data: {groups = {{label, n, min, q1, median, q3, max, whisker_lo,
-- whisker_hi, outliers, mean}}}.
function M.box(groups, opts)
  opts = opts or {}
  local f, list, stats, ya, cx, slotw, finish = group_figure("box", groups, opts)
  local data = {groups = {}}
  for i, s in ipairs(stats) do
    local color = nsl.palette((i - 1) % 7)
    if s.n > 0 then
      local x, bw = cx(i), min(slotw * 0.5, 60)
      local yq1, yq3, ymed = ya.map(s.q1), ya.map(s.q3), ya.map(s.median)
      local ylo, yhi = ya.map(s.whisker_lo), ya.map(s.whisker_hi)
      f.cv:line(x, ylo, x, yq1, {stroke = AXIS})
      f.cv:line(x, yq3, x, yhi, {stroke = AXIS})
      f.cv:line(x - bw / 4, ylo, x + bw / 4, ylo, {stroke = AXIS})
      f.cv:line(x - bw / 4, yhi, x + bw / 4, yhi, {stroke = AXIS})
      f.cv:rect(x - bw / 2, yq3, bw, yq1 - yq3, {fill = color, stroke = AXIS, opacity = 1})
      f.cv:line(x - bw / 2, ymed, x + bw / 2, ymed, {stroke = INK, line_width = 2})
      draw_outliers(f, s, ya, x)
    end
    data.groups[i] = {label = s.label, n = s.n, min = s.min, q1 = s.q1, median = s.median, q3 = s.q3, max = s.max,
                      whisker_lo = s.whisker_lo, whisker_hi = s.whisker_hi, outliers = s.outliers, mean = s.mean}
  end
  finish()
  return f.cv, data
end

--- plot.violin(groups, opts) -> canvas, data: the distribution of each
-- group as a mirrored density (a histogram over opts.bins (60) bins of the
-- shared y range, smoothed with a 1-4-6-4-1 kernel), with the quartile box
-- and the median inside.  Options as plot.box.  data: {edges, groups =
-- {{label, n, counts, density, q1, median, q3}}}.
function M.violin(groups, opts)
  opts = opts or {}
  local f, list, stats, ya, cx, slotw, finish = group_figure("violin", groups, opts)
  local nb = floor(opts.bins or 60)
  local edges = bin_edges(ya.lo, ya.hi, nb, ya.log)
  local data = {edges = edges, groups = {}}
  local dens, dmax = {}, 0
  local kernel = {1 / 16, 4 / 16, 6 / 16, 4 / 16, 1 / 16}
  for i, g in ipairs(list) do
    local counts = stats[i].n > 0 and g.values:histogram(edges):totable() or {}
    local d = {}
    for b = 1, nb do
      local s = 0
      for k = -2, 2 do s = s + (counts[b + k] or 0) * kernel[k + 3] end
      d[b] = stats[i].n > 0 and s / stats[i].n or 0
      dmax = max(dmax, d[b])
    end
    dens[i] = d
    data.groups[i] = {label = g.label, n = stats[i].n, counts = counts, density = d, q1 = stats[i].q1,
                      median = stats[i].median, q3 = stats[i].q3}
  end
  for i, s in ipairs(stats) do
    if s.n > 0 then
      local x, half = cx(i), min(slotw * 0.45, 80)
      local xs, ys = {}, {}
      local b0, b1 = 1, nb   -- the bins with density, so no line runs along empty tails
      while b0 < nb and dens[i][b0] <= 0 do b0 = b0 + 1 end
      while b1 > b0 and dens[i][b1] <= 0 do b1 = b1 - 1 end
      for b = b0, b1 do   -- right side, bottom to top
        xs[#xs + 1] = x + dens[i][b] / max(dmax, 1e-300) * half
        ys[#ys + 1] = ya.map(ya.log and math.sqrt(edges[b] * edges[b + 1]) or (edges[b] + edges[b + 1]) / 2)
      end
      for b = b1, b0, -1 do   -- left side, top to bottom
        xs[#xs + 1] = x - dens[i][b] / max(dmax, 1e-300) * half
        ys[#ys + 1] = ya.map(ya.log and math.sqrt(edges[b] * edges[b + 1]) or (edges[b] + edges[b + 1]) / 2)
      end
      f.cv:polygon(xs, ys, {fill = nsl.palette(8 + (i - 1) % 7), stroke = nsl.palette((i - 1) % 7), line_width = 1})
      local yq1, yq3, ymed = ya.map(s.q1), ya.map(s.q3), ya.map(s.median)
      f.cv:rect(x - 3, yq3, 6, yq1 - yq3, {fill = INK})
      f.cv:circle(x, ymed, 3, {fill = BG, stroke = INK})
    end
  end
  finish()
  return f.cv, data
end

-- ---- CDF -----------------------------------------------------------------------------

--- plot.cdf(series, opts) -> canvas, data: the empirical cumulative
-- distribution of each series (array of {label, values}), drawn through
-- opts.points (512) evenly spaced order statistics.  opts.log (log x),
-- opts.unit.  data: {series = {{label, n, x = {...}, p = {...}, p50, p90,
-- p99}}} with p[k] the fraction of values <= x[k].
function M.cdf(series, opts)
  opts = opts or {}
  local list = group_list(series)
  local f = figure(opts, 800, 480)
  f.opts.ylabel = f.opts.ylabel or "fraction ≤ x"
  local data, lo, hi = {series = {}}, nil, nil
  local npts = floor(opts.points or 512)
  for i, g in ipairs(list) do
    local c = opts.log and masked(g.values, g.values:gt(0)) or g.values
    local n = c:count()
    local d = {label = g.label, n = n, x = {}, p = {}}
    if n > 0 then
      local sorted = c:gather(c:argsort())
      local nulls = #sorted - n
      local k = min(n, max(npts, 2))
      for j = 0, k - 1 do
        local r = k == 1 and n - 1 or floor(j * (n - 1) / (k - 1) + 0.5)   -- 0-based rank among values
        d.x[j + 1], d.p[j + 1] = sorted[nulls + r + 1], (r + 1) / n
      end
      d.p50, d.p90, d.p99 = c:quantile(0.5), c:quantile(0.9), c:quantile(0.99)
      lo = lo and min(lo, d.x[1]) or d.x[1]
      hi = hi and max(hi, d.x[#d.x]) or d.x[#d.x]
      f:add_legend(fmt("%s (n=%d)", g.label, n), nsl.palette((i - 1) % 8), "line")
    end
    data.series[i] = d
  end
  local xa = make_axis(lo or (opts.log and 1 or 0), hi or 1, {log = opts.log, unit = opts.unit, target = 7})
  local ya = make_axis(0, 1, {unit = "percent", nice = false, target = 5})
  f:layout(ya.ticks.labels)
  axis_place(xa, f.px0, f.px1)
  axis_place(ya, f.py1, f.py0)
  f:yaxis(ya)
  f:xaxis(xa, true)
  for i, d in ipairs(data.series) do
    if d.n > 0 then
      local xs, ys = {xa.map(d.x[1])}, {f.py1}
      for j = 1, #d.x do
        xs[#xs + 1], ys[#ys + 1] = xa.map(d.x[j]), ya.map(d.p[j])
      end
      f.cv:polyline(xs, ys, {stroke = nsl.palette((i - 1) % 8), line_width = 2})
    end
  end
  f:frame()
  if #list == 0 or not lo then f:note("no data") end
  f:decorate()
  return f.cv, data
end

-- ---- bars ----------------------------------------------------------------------------

local function bars(opts, stacked)
  local cats = opts.categories or {}
  local series = opts.series or {}
  local ncat, nser = #cats, #series
  local labels, totals, vmax = {}, {}, 0
  for i = 1, ncat do labels[i] = tostring(cats[i]) end
  local fs = opts.font_size or 12
  local legend = 0   -- the legend's width (as Fig:legend_width), added to the plot's
  for j, s in ipairs(series) do
    legend = max(legend, min(nsl.text_width(tostring(s.label or s[1] or j), fs), 220) + 34)
  end
  local w = floor(opts.width or max(480, 140 + ncat * (stacked and 40 or 18 * max(nser, 1) + 16)) + legend)
  local room, rotated = category_room(fs, w - legend, labels, ncat)
  local f = figure(opts, w, 480 + room)
  for i = 1, ncat do
    local sum = 0
    for _, s in ipairs(series) do
      local v = s.values[i] or 0
      if stacked then sum = sum + v else vmax = max(vmax, v) end
    end
    totals[i] = sum
    if stacked then vmax = max(vmax, sum) end
  end
  for j, s in ipairs(series) do f:add_legend(tostring(s.label or s[1] or j), nsl.palette((j - 1) % 8)) end
  vmax = max(vmax, opts.ymax or 0)
  local ya = make_axis(0, vmax > 0 and vmax or 1, {unit = opts.unit, target = 6})
  f:layout(ya.ticks.labels, {bottom = room})
  axis_place(ya, f.py1, f.py0)
  f:yaxis(ya)
  local cx, slotw = slots(f, ncat)
  local x0, x1, y0, y1, col = {}, {}, {}, {}, {}
  for i = 1, ncat do
    local base = 0
    local gw = slotw * 0.8
    for j, s in ipairs(series) do
      local v = s.values[i] or 0
      local k = #x0 + 1
      if stacked then
        x0[k], x1[k] = cx(i) - min(gw, 50) / 2, cx(i) + min(gw, 50) / 2
        y0[k], y1[k] = ya.map(base + v), ya.map(base)
        base = base + v
      else
        local bw = gw / max(nser, 1)
        x0[k] = cx(i) - gw / 2 + (j - 1) * bw
        x1[k] = x0[k] + bw
        y0[k], y1[k] = ya.map(v), ya.map(0)
      end
      col[k] = (j - 1) % 8
    end
  end
  f.cv:rects(x0, x1, y0, y1, col, {stroke = BG, line_width = 0.5})
  category_labels(f, labels, rotated, slotw)
  f:frame()
  if ncat == 0 then f:note("no data") end
  f:decorate()
  local data = {categories = labels, series = {}, totals = stacked and totals or nil}
  for j, s in ipairs(series) do
    local v = {}
    for i = 1, ncat do v[i] = s.values[i] or 0 end
    data.series[j] = {label = tostring(s.label or s[1] or j), values = v}
  end
  return f.cv, data
end

--- plot.stacked_bars{categories = {...}, series = {{label =, values = {...}}, ...}, ...}
-- -> canvas, data {categories, series, totals}: one bar per category, the
-- series stacked in order.  opts.unit labels the values.
function M.stacked_bars(opts) return bars(opts or {}, true) end

--- plot.grouped_bars{categories =, series =, ...} -> canvas, data: the
-- series side by side within each category.
function M.grouped_bars(opts) return bars(opts or {}, false) end

-- ---- lines ---------------------------------------------------------------------------

--- plot.lines{series = {{label =, x = col_or_array, y = col_or_array}, ...},
-- xunit, yunit, xlog, ylog, points (draw markers)} -> canvas, data
-- {series = {{label, n, xmin, xmax, ymin, ymax}}}.  Linear axes map whole
-- columns in C; log axes convert through Lua arrays.
function M.lines(opts)
  opts = opts or {}
  local f = figure(opts, 800, 480)
  local list, xlo, xhi, ylo, yhi = {}, nil, nil, nil, nil
  for i, s in ipairs(opts.series or {}) do
    local x, y = as_column(s.x, "x"), as_column(s.y, "y")
    if #x ~= #y then error(fmt("plot.lines: series %d has %d x and %d y values", i, #x, #y), 2) end
    local x0, x1 = nsl.extent(x)
    local y0, y1 = nsl.extent(y)
    list[i] = {label = tostring(s.label or i), x = x, y = y, n = #x, xmin = x0, xmax = x1, ymin = y0, ymax = y1}
    if x0 and y0 then
      xlo, xhi = xlo and min(xlo, x0) or x0, xhi and max(xhi, x1) or x1
      ylo, yhi = ylo and min(ylo, y0) or y0, yhi and max(yhi, y1) or y1
    end
    f:add_legend(list[i].label, nsl.palette((i - 1) % 8), "line")
  end
  local xa = make_axis(xlo or 0, xhi or 1, {log = opts.xlog, unit = opts.xunit, target = 7})
  local ya = make_axis(opts.ylog and ylo or min(ylo or 0, 0), yhi or 1, {log = opts.ylog, unit = opts.yunit})
  f:layout(ya.ticks.labels)
  axis_place(xa, f.px0, f.px1)
  axis_place(ya, f.py1, f.py0)
  f:yaxis(ya)
  f:xaxis(xa, true)
  f.cv:clip(f.px0, f.py0 - 2, f.px1 - f.px0, f.py1 - f.py0 + 4)
  local data = {series = {}}
  for i, s in ipairs(list) do
    local color = nsl.palette((i - 1) % 8)
    local xs, ys
    if not xa.log and not ya.log then
      xs, ys = (s.x - xa.lo) * xa.k + xa.p0, (s.y - ya.lo) * ya.k + ya.p0
    else
      xs, ys = {}, {}
      local xt, yt = s.x:totable(), s.y:totable()
      for k = 1, s.n do xs[k], ys[k] = xa.map(xt[k]) or 0 / 0, ya.map(yt[k]) or 0 / 0 end
    end
    f.cv:polyline(xs, ys, {stroke = color, line_width = 2})
    if opts.points then
      for k = 1, min(s.n, 2000) do
        local px, py = xs[k], ys[k]
        if px == px and py == py then f.cv:circle(px, py, 2.5, {fill = color}) end
      end
    end
    data.series[i] = {label = s.label, n = s.n, xmin = s.xmin, xmax = s.xmax, ymin = s.ymin, ymax = s.ymax}
  end
  f.cv:unclip()
  f:frame()
  if #list == 0 then f:note("no data") end
  f:decorate()
  return f.cv, data
end

-- ---- heatmap -------------------------------------------------------------------------

--- plot.heatmap{rows = {labels}, edges = {x0, ..., xn} (array or column),
-- values = flat row-major array or column (rows x (#edges - 1)), vmin, vmax
-- (default 0 and 1), xunit, vunit (the colour bar's unit, "percent" by
-- default), origin (subtracted from the edges for the x labels)} ->
-- canvas, data {rows, edges, values}.  NaN cells are light grey.
function M.heatmap(opts)
  opts = opts or {}
  local rows = opts.rows or {}
  local edges = nsl.type(opts.edges) == "column" and opts.edges:totable() or opts.edges or {0, 1}
  local values = nsl.type(opts.values) == "column" and opts.values:totable() or opts.values or {}
  local nr, nb = #rows, #edges - 1
  local rowh = opts.row_height or 22
  local f = figure(opts, 900, 60 + (opts.title and 28 or 0) + (opts.xlabel and 20 or 0) + max(nr, 1) * rowh + 40)
  local vmin, vmax = opts.vmin or 0, opts.vmax or 1
  local origin = opts.origin or 0
  local xa = make_axis(edges[1] - origin, edges[nb + 1] - origin, {unit = opts.xunit, nice = false, target = 8})
  f.legend = {}
  f:layout(rows, {})
  f.px1 = f.px1 - 70   -- room for the colour bar
  axis_place(xa, f.px0, f.px1)
  local rh = (f.py1 - f.py0) / max(nr, 1)
  local x0, x1, y0, y1, t = {}, {}, {}, {}, {}
  for r = 1, nr do
    for b = 1, nb do
      local k = (r - 1) * nb + b
      x0[k], x1[k] = xa.map(edges[b] - origin), xa.map(edges[b + 1] - origin)
      y0[k], y1[k] = f.py0 + (r - 1) * rh, f.py0 + r * rh - 1
      local v = values[k]
      t[k] = v and (v - vmin) / (vmax - vmin) or 0 / 0
    end
    f.cv:text(f.px0 - 6, f.py0 + (r - 0.5) * rh, rows[r], {fill = INK, font_size = f.fs, anchor = "end",
                                                           baseline = "middle"})
  end
  if nr > 0 and nb > 0 then f.cv:rects(x0, x1, y0, y1, t, {colormap = true}) end
  f:xaxis(xa)
  -- colour bar
  local bx, by0, by1 = f.px1 + 18, f.py0, f.py1
  local n = 64
  local cb0, cb1, cy0, cy1, ct = {}, {}, {}, {}, {}
  for i = 1, n do
    cb0[i], cb1[i] = bx, bx + 12
    cy0[i], cy1[i] = by1 - (by1 - by0) * i / n, by1 - (by1 - by0) * (i - 1) / n
    ct[i] = (i - 0.5) / n
  end
  f.cv:rects(cb0, cb1, cy0, cy1, ct, {colormap = true})
  local vunit = opts.vunit or "percent"
  for _, v in ipairs({vmin, (vmin + vmax) / 2, vmax}) do
    local y = by1 - (by1 - by0) * (v - vmin) / (vmax - vmin)
    f.cv:text(bx + 16, y, nsl.format_value(v, vunit, 3), {fill = MUTED, font_size = f.fs - 1, baseline = "middle"})
  end
  if nr == 0 then f:note("no data") end
  f:decorate()
  return f.cv, {rows = rows, edges = edges, values = values}
end

-- ---- trace helpers ----------------------------------------------------------------------

--- The window [from, to) of a figure: opts.from and opts.to, each missing
-- end from the span of the trace's tables (nsl.window.span; all of them
-- when tables is nil); never empty.
local function window_of(trace, opts, tables)
  local from, to = opts.from, opts.to
  if not from or not to then
    local lo, hi = require("nsl.window").span(trace, tables)
    from, to = from or lo or 0, to or hi or 1
  end
  if to <= from then to = from + 1 end
  return from, to
end

--- Rows of table t (columns cols) overlapping [from, to): start < to and
-- stop > from; nil when t is empty.  Only the named columns are loaded.
local function window_rows(t, cols, from, to)
  if #t == 0 then return nil end
  local s = t:select(cols)
  local n = nsl.count_overlapping(s.start, s.stop, from, to)
  if n == #s then return s end   -- every row: no copy
  if n == 0 then return nil end
  return s:take(nsl.overlapping_rows(s.start, s.stop, from, to))   -- the rows inside, no masks
end
M.window_rows = window_rows

--- The keys of groups g as a list of row tables, with `id` (0-based group id).
local function group_keys(g, names)
  local keys, list = g:keys(), {}
  for i = 1, #keys do
    local row = {id = i - 1}
    for _, n in ipairs(names) do row[n] = keys[n][i] end
    list[i] = row
  end
  return list
end

--- Names of the reports of a trace (index 0-based -> name).
local function report_names(trace)
  local r, names = trace.reports, {}
  for i = 1, #r do names[r.report[i]] = r.name[i] end
  return names
end

-- ---- timeline ------------------------------------------------------------------------

--- Timeline classes: the colour of each kind of event.
M.timeline_classes = {
  {name = "kernel", label = "kernel", color = "#0072b2"},
  {name = "nccl", label = "NCCL kernel", color = "#d55e00"},
  {name = "memcpy_htod", label = "memcpy HtoD", color = "#e69f00"},
  {name = "memcpy_dtoh", label = "memcpy DtoH", color = "#009e73"},
  {name = "memcpy_other", label = "memcpy other", color = "#f0e442"},
  {name = "memset", label = "memset", color = "#cc79a7"},
  {name = "nvtx", label = "NVTX range", color = "#56b4e9"},
}
local CLASS = {}
for i, c in ipairs(M.timeline_classes) do CLASS[c.name] = i - 1 end

--- GPU rows of the window, one part per table (kernels, memcpy, memset):
-- {t = rows (report, device, stream, start, stop), class = column, and the
-- name written on wide events: label = column (kernel name; memcpy kind
-- after prefix "memcpy ") or text ("memset")}, looked up only for the few
-- events drawn wide enough; counts filled per class.
local function gpu_parts(trace, from, to, tables, counts)
  local parts, want = {}, {}
  for _, n in ipairs(tables) do want[n] = true end
  local cols = {"report", "device", "stream", "start", "stop"}
  if want.kernels then
    local k = window_rows(trace.kernels, {"report", "device", "stream", "start", "stop", "name"}, from, to)
    if k then
      local nccl = k.name:match("^nccl")
      counts.nccl = nccl:count()
      counts.kernel = #k - counts.nccl
      local class = nccl   -- the mask is the class (kernel 0, NCCL 1): no column of class ids
      if CLASS.kernel ~= 0 or CLASS.nccl ~= 1 then class = nccl * (CLASS.nccl - CLASS.kernel) + CLASS.kernel end
      parts[#parts + 1] = {t = k, class = class, label = k.name}
    end
  end
  if want.memcpy then
    local m = window_rows(trace.memcpy, {"report", "device", "stream", "start", "stop", "kind"}, from, to)
    if m then
      local h2d, d2h = m.kind:eq("HtoD"), m.kind:eq("DtoH")
      counts.memcpy_htod, counts.memcpy_dtoh = h2d:count(), d2h:count()
      counts.memcpy_other = #m - counts.memcpy_htod - counts.memcpy_dtoh
      parts[#parts + 1] = {t = m, class = h2d * (CLASS.memcpy_htod - CLASS.memcpy_other) +
                                          d2h * (CLASS.memcpy_dtoh - CLASS.memcpy_other) + CLASS.memcpy_other,
                           label = m.kind, prefix = "memcpy "}
    end
  end
  if want.memset then
    local s = window_rows(trace.memset, cols, from, to)
    if s then
      counts.memset = #s
      parts[#parts + 1] = {t = s, class = nsl.rep(CLASS.memset, #s), text = "memset"}
    end
  end
  return parts
end

--- Sort order of lane keys: by each name in turn, NULLs (nil) first.
local function key_order(names)
  return function(a, b)
    for _, n in ipairs(names) do
      local x, y = a[n] or -math.huge, b[n] or -math.huge
      if x ~= y then return x < y end
    end
    return false
  end
end

--- plot.timeline(trace, opts) -> canvas, data: a per-stream Gantt chart of
-- the window [opts.from, opts.to) (absolute ns; default the whole trace):
-- one lane per (report, device, stream) with kernels (NCCL kernels apart),
-- memcpy (by direction) and memset, then NVTX ranges per (report, pid,
-- tid), nested ranges in sub-rows (at most opts.max_depth, 8).  Events
-- too small to see are merged per lane into spans whose opacity is their
-- covered fraction (at least 20%, drawn at least 1 px wide); all of it
-- runs in C over whole columns.  opts.tables (default {"kernels", "memcpy", "memset",
-- "nvtx"}), opts.origin (ns subtracted for the time axis; default from),
-- row_height (14), width (1400).  data: {from, to, lanes = {{label, kind =
-- "gpu" | "nvtx", report, device, stream | pid, tid, rows, events}}, counts
-- = {kernel, nccl, memcpy_htod, memcpy_dtoh, memcpy_other, memset, nvtx},
-- spans (rectangles drawn), labels (names written on events at least
-- opts.label_min (36) px wide)}.
function M.timeline(trace, opts)
  opts = opts or {}
  local from, to = window_of(trace, opts)
  local tables = opts.tables or {"kernels", "memcpy", "memset", "nvtx"}
  local want_nvtx = false
  for _, n in ipairs(tables) do want_nvtx = want_nvtx or n == "nvtx" end
  local maxd = max(0, floor(opts.max_depth or 8))
  local counts = {kernel = 0, nccl = 0, memcpy_htod = 0, memcpy_dtoh = 0, memcpy_other = 0, memset = 0, nvtx = 0}
  local rnames = report_names(trace)
  local multi = trace:nreports() > 1
  local lanes = {}
  -- GPU lanes: (report, device, stream) over every table, sorted; each part's tuples and the rank of each row's
  -- tuple among them from C (no column of group ids)
  local parts = gpu_parts(trace, from, to, tables, counts)
  local gpu_keys, seen = {}, {}
  for _, p in ipairs(parts) do
    local t = p.t
    local lane, groups = nsl.nest_lanes(nil, nil, {t.report, t.device, t.stream}, 0, 1)
    p.lane, p.names = lane, {}
    for j = 1, #groups do
      local r = groups.row[j] + 1
      local report, device, stream = t.report[r], t.device[r], t.stream[r]
      local name = fmt("%s/%s/%s", report, device, stream)
      if not seen[name] then
        seen[name] = {report = report, device = device, stream = stream, events = 0}
        gpu_keys[#gpu_keys + 1] = seen[name]
      end
      seen[name].events = seen[name].events + groups.count[j]
      p.names[j] = name
    end
  end
  table.sort(gpu_keys, key_order({"report", "device", "stream"}))
  for i, key in ipairs(gpu_keys) do
    key.lane = i - 1
    lanes[i] = {kind = "gpu", report = key.report, device = key.device, stream = key.stream, rows = 1,
                events = key.events,
                label = fmt("%sGPU %s stream %s", multi and (rnames[key.report] or key.report) .. " " or "",
                            tostring(key.device), tostring(key.stream))}
  end
  for _, p in ipairs(parts) do   -- each row's lane: its rank, unless the part lacks some lanes
    local remap, same = {}, true
    for j, name in ipairs(p.names) do
      remap[j] = seen[name].lane
      same = same and remap[j] == j - 1
    end
    if not same then p.lane = nsl.column(remap):cast("i32"):gather(p.lane) end
  end
  -- NVTX lanes: (report, pid, tid), sub-rows by nesting depth
  local nv
  if want_nvtx then nv = window_rows(trace.nvtx, {"report", "pid", "tid", "start", "stop", "text"}, from, to) end
  if nv then
    counts.nvtx = #nv
    -- rows by thread (key order), each on the sub-row of its nesting depth: lanes from C, no group ids
    local keys = multi and {nv.report, nv.pid, nv.tid} or {nv.pid, nv.tid}   -- one report: one value
    local lane, groups = nsl.nest_lanes(nv.start, nv.stop, keys, #lanes, maxd)
    local tnames = {}
    local th = trace.threads
    if #th > 0 then
      th:load{"report", "pid", "tid", "name"}
      for i = 1, #th do tnames[fmt("%s/%s/%s", th.report[i], th.pid[i], th.tid[i])] = th.name[i] end
    end
    local first_row, nrows, n_of = groups.row, groups.lanes, groups.count
    for i = 1, #groups do
      local r = first_row[i] + 1
      local report, pid, tid = nv.report[r], nv.pid[r], nv.tid[r]
      local tname = tnames[fmt("%s/%s/%s", report, pid, tid)]
      lanes[#lanes + 1] = {kind = "nvtx", report = report, pid = pid, tid = tid, rows = nrows[i], events = n_of[i],
                           label = fmt("%s%s", multi and (rnames[report] or report) .. " " or "",
                                       tname and fmt("%s (%s)", tname, tostring(tid))
                                             or fmt("pid %s tid %s", tostring(pid), tostring(tid)))}
    end
    parts[#parts + 1] = {t = nv, lane = lane, label = nv.text, nvtx = true}
  end
  -- layout: lane rows from the top
  local fs = opts.font_size or 11
  local rowh = opts.row_height or 14
  local lanes_h = 4
  for i, l in ipairs(lanes) do
    lanes_h = lanes_h + l.rows * rowh + 3
    if i < #lanes and l.kind ~= lanes[i + 1].kind then lanes_h = lanes_h + 4 end
  end
  local top = 12 + (opts.title and fs + 14 or 0) + 18
  local height = top + max(lanes_h, 3 * rowh) + 10 + fs + 8 + (opts.xlabel and fs + 8 or 0)
  local f = figure({width = opts.width or 1400, height = opts.height or height, format = opts.format,
                    title = opts.title, xlabel = opts.xlabel, font_size = fs}, 1400, height)
  local labels = {}
  for i, l in ipairs(lanes) do labels[i] = fit_text(l.label, 260, fs) or "" end
  local origin = opts.origin or from
  f:layout(labels, {top = 18})
  local xa = make_axis(from - origin, to - origin, {unit = "ns", nice = false, target = 10})
  axis_place(xa, f.px0, f.px1)
  -- y of every lane row
  local row_y = {}
  local y = f.py0 + 2
  for i, l in ipairs(lanes) do
    l.y = y
    for r = 0, l.rows - 1 do row_y[#row_y + 1] = y + r * rowh end
    y = y + l.rows * rowh + 3
    if i < #lanes and l.kind ~= lanes[i + 1].kind then y = y + 4 end
  end
  -- lane backgrounds, labels
  for i, l in ipairs(lanes) do
    if i % 2 == 0 then
      f.cv:rect(f.px0, l.y - 1, f.px1 - f.px0, l.rows * rowh + 2, {fill = "#f4f4f4"})
    end
    f.cv:text(f.px0 - 6, l.y + rowh / 2, labels[i], {fill = l.kind == "gpu" and INK or MUTED, font_size = fs,
                                                     anchor = "end", baseline = "middle"})
  end
  f:xaxis(xa, "only")
  -- the events: per table, mapped to pixels and merged per lane in C, then drawn in one call
  local spans, nlabels = 0, 0
  local colors = {}
  for i, c in ipairs(M.timeline_classes) do colors[i] = c.color end
  local ry = nsl.column(row_y)
  local k = xa.k
  local dark = {[CLASS.kernel] = true, [CLASS.nccl] = true, [CLASS.memcpy_dtoh] = true}
  f.cv:clip(f.px0, f.py0, f.px1 - f.px0, f.py1 - f.py0)
  -- GPU lanes: memset, then memcpy, then kernels on top (where they share a pixel, the kernels show)
  local order = {}
  for i = #parts, 1, -1 do if not parts[i].nvtx then order[#order + 1] = parts[i] end end
  for _, p in ipairs(parts) do if p.nvtx then order[#order + 1] = p end end
  for _, p in ipairs(order) do
    local t = p.t
    local m = nsl.spans_merge(t.start, t.stop, p.lane, p.class, {tol = opts.merge_tol or 0.35, max_len = 1.5,
                                                                 origin = from, scale = k, offset = f.px0})
    spans = spans + #m
    local y0 = ry:gather(m.lane) + 1
    f.cv:rects(m.x0, m.x1, y0, y0 + (rowh - 2), p.nvtx and CLASS.nvtx or m.class,
      {colors = colors, alpha = m.busy / (m.x1 - m.x0), alpha_min = 0.2, min_width = 1})
    -- names on the events wide enough to hold some text: merged spans of one event (few by construction)
    local wide = m.count:eq(1) & (m.x1 - m.x0):ge(opts.label_min or 36)
    if wide:count() > 0 then
      local w = m:filter(wide)
      for i = 1, min(#w, 20000) do
        local a, b = max(w.x0[i], f.px0), min(w.x1[i], f.px1)
        local name = p.text or p.label[w.row[i] + 1]
        if name and p.prefix then name = p.prefix .. name end
        local text = name and b - a > 12 and fit_text(name, b - a - 4, fs - 2)
        if text then
          local cls = p.nvtx and CLASS.nvtx or w.class[i]
          f.cv:text(a + 2, row_y[w.lane[i] + 1] + rowh / 2, text,
            {fill = dark[cls] and BG or INK, font_size = fs - 2, baseline = "middle"})
          nlabels = nlabels + 1
        end
      end
    end
  end
  f.cv:unclip()
  -- legend on one line under the title
  local lx = f.px0
  for _, c in ipairs(M.timeline_classes) do
    if (counts[c.name] or 0) > 0 then
      f.cv:rect(lx, f.py0 - 16, 10, 10, {fill = c.color})
      f.cv:text(lx + 14, f.py0 - 11, c.label, {fill = INK, font_size = fs, baseline = "middle"})
      lx = lx + 14 + nsl.text_width(c.label, fs) + 16
    end
  end
  f:xaxis(xa)
  f:frame()
  if #lanes == 0 then f:note("no events in this window") end
  f:decorate()
  return f.cv, {from = from, to = to, lanes = lanes, counts = counts, spans = spans, labels = nlabels}
end

-- ---- utilisation heatmap ------------------------------------------------------------------

--- plot.utilization(trace, opts) -> canvas, data: the busy fraction of
-- every device in each of opts.bins (200) equal time bins of [opts.from,
-- opts.to) (default the whole trace), from the union of its kernels (and
-- of the tables in opts.tables, default {"kernels"}) computed in C.
-- opts.origin (ns subtracted for the time axis; default from).  data:
-- {rows = {labels}, keys = {{report, device}}, edges (ns), busy (ns per
-- cell, row-major), fraction = {{per bin}, ...}}.
function M.utilization(trace, opts)
  opts = opts or {}
  local from, to = window_of(trace, opts, {"kernels", "memcpy", "memset"})
  local nb = floor(opts.bins or 200)
  local parts = {}
  for _, name in ipairs(opts.tables or {"kernels"}) do
    local t = window_rows(trace[name], {"report", "device", "start", "stop"}, from, to)
    if t then parts[#parts + 1] = t end
  end
  local rows, keys, fraction, busy = {}, {}, {}, nil
  local edges = nsl.bin_edges(from, to, nb):totable()
  if #parts > 0 then
    local spec = {}
    for _, name in ipairs({"report", "device", "start", "stop"}) do
      local list = {}
      for i, p in ipairs(parts) do list[i] = p[name] end
      spec[#spec + 1] = {name, #list == 1 and list[1] or nsl.concat(table.unpack(list))}
    end
    local t = nsl.table(spec)
    local g = t:group_by("report", "device")
    local gk = group_keys(g, {"report", "device"})
    local multi = trace:nreports() > 1
    local rnames = report_names(trace)
    table.sort(gk, function(a, b)
      if a.report ~= b.report then return a.report < b.report end
      return (a.device or -1) < (b.device or -1)
    end)
    busy = nsl.busy_per_bin(t.start, t.stop, g:ids(), #gk, from, to, nb)
    local bt = busy:totable()
    for r, key in ipairs(gk) do
      rows[r] = fmt("%sGPU %s", multi and (rnames[key.report] or key.report) .. " " or "", tostring(key.device))
      keys[r] = {report = key.report, device = key.device}
      local fr = {}
      for b = 1, nb do fr[b] = bt[key.id * nb + b] / (edges[b + 1] - edges[b]) end
      fraction[r] = fr
    end
  end
  local flat = {}
  for r = 1, #fraction do
    for b = 1, nb do flat[(r - 1) * nb + b] = fraction[r][b] end
  end
  local cv = M.heatmap{rows = rows, edges = edges, values = flat, vmin = 0, vmax = 1, xunit = "ns",
                       origin = opts.origin or from, width = opts.width, height = opts.height, format = opts.format,
                       title = opts.title, xlabel = opts.xlabel or "time", font_size = opts.font_size}
  return cv, {rows = rows, keys = keys, edges = edges, busy = busy, fraction = fraction}
end

-- ---- flame graphs -------------------------------------------------------------------------

--- plot.stack_frames(stacks, weights [, root]) -> frames for plot.flamegraph
-- from root-first stacks ("a;b;c", an array or string column) and their
-- weights (samples, ns; array or column): {name = {...}, depth = {...}, x =
-- {...}, width = {...}, total = N}, one frame per distinct stack prefix,
-- children in name order (as flamegraph.pl draws them).  root (default
-- "all"; false: none) is a frame at depth 0 spanning everything.  Stacks
-- with a NULL, negative or non-number weight are counted in skipped.
function M.stack_frames(stacks, weights, root)
  if root == nil then root = "all" end
  local st = nsl.type(stacks) == "column" and stacks:totable() or stacks or {}
  local wt = nsl.type(weights) == "column" and weights:totable() or weights or {}
  local top = {children = {}, value = 0}
  local skipped = 0
  for i = 1, #st do
    local stack, n = st[i], tonumber(wt[i])
    if type(stack) ~= "string" or not n or n < 0 then
      skipped = skipped + 1
    else
      top.value = top.value + n
      local node = top
      for name in (stack .. ";"):gmatch("([^;]*);") do
        local child = node.children[name]
        if not child then
          child = {name = name, children = {}, value = 0}
          node.children[name] = child
        end
        child.value = child.value + n
        node = child
      end
    end
  end
  local fr = {name = {}, depth = {}, x = {}, width = {}, total = top.value, skipped = skipped}
  local function emit(node, depth, x)
    local k = #fr.name + 1
    fr.name[k], fr.depth[k], fr.x[k], fr.width[k] = node.name, depth, x, node.value
  end
  local function walk(node, depth, x)
    local names = {}
    for name in pairs(node.children) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      local child = node.children[name]
      emit(child, depth, x)
      walk(child, depth + 1, x)
      x = x + child.value
    end
  end
  if root then
    top.name = root
    emit(top, 0, 0)
    walk(top, 1, 0)
  else
    walk(top, 0, 0)
  end
  return fr
end

--- plot.folded_frames(text [, root]) -> frames from folded stacks ("a;b;c
-- 12" per line, the format of flamegraph.pl and nsys-jax), as
-- plot.stack_frames; lines that do not parse are counted in skipped.
function M.folded_frames(text, root)
  local stacks, weights, bad = {}, {}, 0
  for line in text:gmatch("[^\r\n]+") do
    local stack, n = line:match("^(.-)%s+(%d+%.?%d*)%s*$")
    if stack and tonumber(n) then
      stacks[#stacks + 1], weights[#weights + 1] = stack, tonumber(n)
    elseif line:match("%S") then
      bad = bad + 1
    end
  end
  local fr = M.stack_frames(stacks, weights, root)
  fr.skipped = fr.skipped + bad
  return fr
end

--- Frames as arrays from any input plot.flamegraph takes: folded text; a
-- table with stack and weight (an nsl table or arrays: the folded stacks
-- the flamegraph analysis makes); or frames {name, depth, x, width [,
-- total]} (arrays, columns or an nsl table).
local function frame_arrays(frames)
  if type(frames) == "string" then frames = M.folded_frames(frames) end
  local is_table = nsl.type(frames) == "table"
  if (is_table and frames:coltype("stack")) or (not is_table and frames.stack) then
    frames = M.stack_frames(frames.stack, frames.weight or frames.count)
  end
  local function arr(v) return nsl.type(v) == "column" and v:totable() or v or {} end
  local fr = {name = arr(frames.name), depth = arr(frames.depth), x = arr(frames.x), width = arr(frames.width)}
  local n = #fr.name
  if #fr.depth ~= n or #fr.x ~= n or #fr.width ~= n then
    error(fmt("plot.flamegraph: frames need name, depth, x and width of one length (%d, %d, %d, %d)", n, #fr.depth,
              #fr.x, #fr.width), 3)
  end
  local total, maxd = 0, 0
  for i = 1, n do
    total = max(total, fr.x[i] + fr.width[i])
    maxd = max(maxd, fr.depth[i])
  end
  fr.total = not nsl.type(frames) and frames.total or total
  if not fr.total or fr.total <= 0 then fr.total = total end
  fr.n, fr.max_depth = n, maxd
  return fr
end

-- FNV-1a hash of a name, for a stable colour.
local function name_hash(s)
  local h = 2166136261
  for i = 1, #s do h = ((h ~ s:byte(i)) * 16777619) & 0xffffffff end
  return h
end

--- Light colour-blind-safe hues (black text stays readable on them).
local FLAME_COLORS = {}
for i = 8, 14 do FLAME_COLORS[#FLAME_COLORS + 1] = nsl.palette(i) end
local function frame_color(name)
  return name_hash(name:match("^[^`!:%(]*") or name) % #FLAME_COLORS
end

--- Geometry shared by both flame graph renderers.
local function flame_layout(fr, opts, interactive)
  local fs = opts.font_size or 12
  local rowh = opts.row_height or fs + 5
  local header = (opts.title ~= false and fs + 22 or 8) + (interactive and fs + 6 or 0)
  local height = opts.height or header + (fr.max_depth + 1) * rowh + fs + 20
  local width = opts.width or 1200
  return fs, rowh, header, height, width
end

local function flame_title(fr, opts)
  if opts.title == false then return nil end
  return opts.title or "Flame graph"
end

--- plot.flamegraph(frames, opts) -> canvas, data: a flame graph (PNG or
-- SVG) of frames {name, depth, x, width [, total]} (arrays, columns or an
-- nsl table; x and width in samples or ns, depth 0 at the bottom), of
-- folded stacks (an nsl table or arrays {stack, weight}, or the folded
-- text; see plot.stack_frames).  opts.icicle draws depth 0 at the top;
-- opts.unit ("number", "ns", "bytes") formats values in tooltips; frames
-- narrower than opts.min_width px (0.1) are left out; opts.interactive
-- with format "svg" gives plot.flamegraph_svg.  data: {frames, drawn,
-- labelled, total, max_depth}.
function M.flamegraph(frames, opts)
  opts = opts or {}
  if opts.interactive and opts.format == "svg" then return M.flamegraph_svg(frames, opts) end
  local fr = frame_arrays(frames)
  local fs, rowh, header, height, width = flame_layout(fr, opts, false)
  local f = figure({width = width, height = height, format = opts.format, title = flame_title(fr, opts),
                    font_size = fs}, width, height)
  local left, right = 10, width - 10
  local scale = (right - left) / max(fr.total, 1e-300)
  local minw = opts.min_width or 0.1
  local bottom = height - fs - 14
  local function row_top(d)
    if opts.icicle then return header + d * rowh end
    return bottom - (d + 1) * rowh
  end
  local x0, x1, y0, y1, col = {}, {}, {}, {}, {}
  local keep = {}
  for i = 1, fr.n do
    local w = fr.width[i] * scale
    if w >= minw then
      local k = #x0 + 1
      x0[k] = left + fr.x[i] * scale
      x1[k] = x0[k] + w
      y0[k] = row_top(fr.depth[i])
      y1[k] = y0[k] + rowh - 1
      col[k] = frame_color(fr.name[i])
      keep[k] = i
    end
  end
  f.cv:rects(x0, x1, y0, y1, col, {colors = FLAME_COLORS, stroke = BG, line_width = 0.5})
  local labelled = 0
  for k, i in ipairs(keep) do
    local w = x1[k] - x0[k]
    if w > 3 * fs * 0.6 then
      local s = fit_text(fr.name[i], w - 6, fs - 1)
      if s then
        f.cv:text(x0[k] + 3, y0[k] + (rowh - 1) / 2, s, {fill = INK, font_size = fs - 1, baseline = "middle"})
        labelled = labelled + 1
      end
    end
  end
  f:decorate()
  return f.cv, {frames = fr.n, drawn = #x0, labelled = labelled, total = fr.total, max_depth = fr.max_depth}
end

-- The script of the interactive flame graph: zoom on click, search by
-- regular expression (Ctrl-F or the Search button), hover details.  It
-- reads the layout back from the SVG itself (rect positions, <title>s),
-- so nothing else is embedded; no network access.
local FLAME_JS = [[
(function () {
  var me = document.currentScript;
  var root = (me && me.ownerSVGElement) || document.documentElement;
  var C = __CONFIG__;
  function $(id) { return root.querySelector('#' + C.prefix + id); }
  var details = $('details'), unzoomBtn = $('unzoom'), searchBtn = $('search'), matchedTxt = $('matched');
  var frames = [], zoomed = null, term = null;
  var gs = root.querySelectorAll('g.' + C.prefix + 'f');
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.querySelector('rect'), t = g.querySelector('text'), ti = g.querySelector('title');
    if (!t) {
      t = document.createElementNS('http://www.w3.org/2000/svg', 'text');
      t.setAttribute('font-size', C.fs);
      t.setAttribute('fill', '#1a1a1a');
      t.setAttribute('y', +r.getAttribute('y') + C.rowh / 2 + C.fs * 0.35);
      g.appendChild(t);
    }
    var x = +r.getAttribute('x'), w = +r.getAttribute('width'), y = +r.getAttribute('y');
    var f = { g: g, r: r, t: t, x: x, w: w, info: ti ? ti.textContent : '',
              depth: Math.round(C.icicle ? (y - C.top) / C.rowh : (C.bottom - y) / C.rowh - 1) };
    var cut = f.info.lastIndexOf(' \u2014 ');   // "name — value (share)"
    f.name = cut >= 0 ? f.info.slice(0, cut) : f.info;
    frames.push(f);
    (function (f) {
      g.addEventListener('click', function () { zoom(f); });
      g.addEventListener('mouseover', function () { details.textContent = f.info; });
      g.addEventListener('mouseout', function () { details.textContent = ' '; });
    })(f);
  }
  function label(f, x, w) {
    var n = Math.floor((w - 6) / (C.fs * 0.6));
    var s = '';
    if (n >= 3) s = f.name.length <= n ? f.name : f.name.slice(0, n - 1) + '\u2026';
    f.t.textContent = s;
    f.t.setAttribute('x', x + 3);
  }
  function place(f, x, w, show, dim) {
    f.g.style.display = show ? '' : 'none';
    if (!show) return;
    f.r.setAttribute('x', x);
    f.r.setAttribute('width', Math.max(w, 0));
    f.g.style.opacity = dim ? 0.6 : '';
    label(f, x, w);
  }
  function zoom(z) {
    zoomed = z;
    var k = C.width / z.w, eps = 1e-6;
    frames.forEach(function (f) {
      var a = f.x, b = f.x + f.w;
      if (f.depth < z.depth) place(f, C.left, C.width, a <= z.x + eps && b >= z.x + z.w - eps, true);
      else if (b <= z.x + eps || a >= z.x + z.w - eps) place(f, 0, 0, false, false);
      else place(f, C.left + (a - z.x) * k, f.w * k, true, false);
    });
    unzoomBtn.style.display = '';
  }
  function unzoom() {
    zoomed = null;
    frames.forEach(function (f) { place(f, f.x, f.w, true, false); });
    unzoomBtn.style.display = 'none';
  }
  function search(t) {
    term = t;
    var re = null;
    if (t) { try { re = new RegExp(t); } catch (e) { alert('not a regular expression: ' + t); return; } }
    var spans = [];
    frames.forEach(function (f) {
      var m = re !== null && re.test(f.name);
      f.g.classList.toggle(C.prefix + 'hit', m);
      f.g.classList.toggle(C.prefix + 'miss', re !== null && !m);
      if (m) spans.push([f.x, f.x + f.w]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -Infinity;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    matchedTxt.textContent = re ? 'Matched: ' + (100 * covered / C.width).toFixed(1) + '%' : ' ';
    searchBtn.textContent = re ? 'Clear search' : 'Search';
  }
  function ask() {
    if (term) { search(null); return; }
    var t = prompt('Search frames (regular expression)', '');
    if (t) search(t);
  }
  unzoomBtn.addEventListener('click', unzoom);
  searchBtn.addEventListener('click', ask);
  document.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) { e.preventDefault(); term = null; ask(); }
    else if (e.key === 'Escape') { if (zoomed) unzoom(); else if (term) search(null); }
  });
  unzoomBtn.style.display = 'none';
})();
]]

--- plot.flamegraph_svg(frames, opts) -> canvas, data: the interactive SVG
-- flame graph, self-contained (inline CSS and JavaScript, no network):
-- click a frame to zoom to it (its ancestors stay, dimmed), "Reset zoom"
-- or Escape to go back; "Search" or Ctrl-F highlights frames whose name
-- matches a regular expression and shows the fraction of the total they
-- cover; hovering shows the frame's name, value and share at the bottom
-- (and a tooltip).  opts as plot.flamegraph, plus opts.id_prefix (default
-- "nslfg-") so several graphs can live in one HTML page.  data as
-- plot.flamegraph.
function M.flamegraph_svg(frames, opts)
  opts = opts or {}
  local fr = frame_arrays(frames)
  local fs, rowh, header, height, width = flame_layout(fr, opts, true)
  local prefix = opts.id_prefix or "nslfg-"
  if not prefix:match("^[%a_][%w_%-]*$") then error("plot.flamegraph_svg: id_prefix must be a CSS identifier", 2) end
  local cv = nsl.canvas("svg", width, height)
  cv:clear(BG)
  local left, right = 10, width - 10
  local scale = (right - left) / max(fr.total, 1e-300)
  local minw = opts.min_width or 0.1
  local bottom = height - fs - 14
  local top = header
  cv:svg_raw(fmt("<style>.%sf{cursor:pointer}.%sf:hover rect{stroke:#000000;stroke-width:1}" ..
                 ".%smiss{opacity:0.35}.%shit rect{stroke:#000000;stroke-width:2}" ..
                 ".%sbtn{cursor:pointer}.%sbtn:hover{text-decoration:underline}</style>",
                 prefix, prefix, prefix, prefix, prefix, prefix))
  local title = flame_title(fr, opts)
  if title then
    cv:text(width / 2, 8, fit_text(title, width - 20, fs + 3) or "", {fill = INK, font_size = fs + 3, bold = true,
                                                                       anchor = "middle", baseline = "top"})
  end
  local by = (title and fs + 16 or 6)
  cv:text(left, by, "Reset zoom", {fill = "#0072b2", font_size = fs, baseline = "top", id = prefix .. "unzoom",
                                   class = prefix .. "btn"})
  cv:text(right, by, "Search", {fill = "#0072b2", font_size = fs, baseline = "top", anchor = "end",
                                id = prefix .. "search", class = prefix .. "btn"})
  cv:text(right - 90, by, " ", {fill = MUTED, font_size = fs, baseline = "top", anchor = "end",
                                id = prefix .. "matched"})
  cv:text(left, height - 8, " ", {fill = INK, font_size = fs, baseline = "bottom", id = prefix .. "details"})
  local unit = opts.unit or "number"
  local drawn, labelled = 0, 0
  local cls = prefix .. "f"
  for i = 1, fr.n do
    local w = fr.width[i] * scale
    if w >= minw then
      local x = left + fr.x[i] * scale
      local y = opts.icicle and top + fr.depth[i] * rowh or bottom - (fr.depth[i] + 1) * rowh
      local share = 100 * fr.width[i] / max(fr.total, 1e-300)
      local wi = math.tointeger(fr.width[i])
      local value = unit ~= "number" and nsl.format_value(fr.width[i], unit, 4)
                    or (wi and require("nsl.report").int(wi) or fmt("%.4g", fr.width[i]))
      cv:group_begin({class = cls, title = fmt("%s \u{2014} %s (%.2f%%)", fr.name[i], value, share)})
      cv:rect(x, y, w, rowh - 1, {fill = FLAME_COLORS[frame_color(fr.name[i]) + 1], stroke = BG, line_width = 0.5})
      if w > 3 * fs * 0.6 then
        local s = fit_text(fr.name[i], w - 6, fs - 1)
        if s then
          cv:text(x + 3, y + (rowh - 1) / 2, s, {fill = INK, font_size = fs - 1, baseline = "middle"})
          labelled = labelled + 1
        end
      end
      cv:group_end()
      drawn = drawn + 1
    end
  end
  local config = fmt("{prefix:'%s',fs:%d,rowh:%d,left:%g,width:%g,top:%g,bottom:%g,icicle:%s}", prefix, fs - 1,
                     rowh, left, right - left, top, bottom, opts.icicle and "true" or "false")
  cv:svg_raw("<script type=\"text/ecmascript\"><![CDATA[" .. FLAME_JS:gsub("__CONFIG__", config) .. "]]></script>")
  return cv, {frames = fr.n, drawn = drawn, labelled = labelled, total = fr.total, max_depth = fr.max_depth}
end

return M
