-- nsl.plot.charts -- the generic charts of nsl.plot, over columns or
-- arrays: histogram, box and violin plots, CDFs, stacked and grouped bars,
-- lines, heatmaps.  Use them through nsl.plot.
local nsl = require("nsl")
local F = require("nsl.plot.figure")

local M = {}

local floor, max, min, log = math.floor, math.max, math.min, math.log
local fmt = string.format
local INK, MUTED, AXIS, BG, log10 = F.INK, F.MUTED, F.AXIS, F.BG, F.log10
local as_column, nonnull, masked, fit_text, make_axis = F.as_column, F.nonnull, F.masked, F.fit_text, F.make_axis
local axis_place, figure = F.axis_place, F.figure

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

return M
