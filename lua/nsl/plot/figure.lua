-- nsl.plot.figure -- what every chart of nsl.plot is drawn on: the figure
-- (a canvas with title, axis labels, legend and frame), axes with ticks, the
-- colours, and small helpers over columns.  Shared by nsl.plot's parts
-- (charts, trace figures, flame graphs); analyses use nsl.plot.
local nsl = require("nsl")

local M = {}

local floor, max, min, log = math.floor, math.max, math.min, math.log
local fmt = string.format

local INK, MUTED, GRID, AXIS, BG = "#1a1a1a", "#555555", "#e6e6e6", "#333333", "#ffffff"
M.INK, M.MUTED, M.GRID, M.AXIS, M.BG = INK, MUTED, GRID, AXIS, BG

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

M.log10, M.as_column, M.nonnull, M.masked, M.fit_text = log10, as_column, nonnull, masked, fit_text
M.make_axis, M.axis_place, M.figure = make_axis, axis_place, figure

return M
