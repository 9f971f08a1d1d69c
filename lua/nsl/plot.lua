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
--
-- The parts: nsl.plot.figure (figure, axes, colours), nsl.plot.charts
-- (generic charts), nsl.plot.trace (timeline, utilization), nsl.plot.flame
-- (flame graphs).
local M = {}

for _, part in ipairs{"nsl.plot.charts", "nsl.plot.trace", "nsl.plot.flame"} do
  for name, v in pairs(require(part)) do M[name] = v end
end
M.fit_text = require("nsl.plot.figure").fit_text

return M
