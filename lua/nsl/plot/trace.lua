-- nsl.plot.trace -- the figures of a trace's time line: the per-stream
-- Gantt chart (timeline) and the busy fraction per device and time bin
-- (utilization), with the window helpers they share.  Use them through
-- nsl.plot.
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local window = require("nsl.window")
local F = require("nsl.plot.figure")
local charts = require("nsl.plot.charts")

local M = {}

local floor, max, min = math.floor, math.max, math.min
local fmt = string.format
local INK, MUTED, BG, fit_text, make_axis = F.INK, F.MUTED, F.BG, F.fit_text, F.make_axis
local axis_place, figure = F.axis_place, F.figure

-- ---- trace helpers ----------------------------------------------------------------------

--- The window [from, to) of a figure: opts.from and opts.to, each missing
-- end from the span of the trace's tables (nsl.window.span; all of them
-- when tables is nil); never empty.
local function window_of(trace, opts, tables)
  local from, to = opts.from, opts.to
  if not from or not to then
    local lo, hi = window.span(trace, tables)
    from, to = from or lo or 0, to or hi or 1
  end
  if to <= from then to = from + 1 end
  return from, to
end

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

--- Timeline classes: the colour of each kind of event: the classes of GPU
-- operations (nsl.gpu_ops.classes, same ids), then NVTX ranges.
local colors = {kernel = "#0072b2", nccl = "#d55e00", memcpy_htod = "#e69f00", memcpy_dtoh = "#009e73",
                memcpy_other = "#f0e442", memset = "#cc79a7"}
M.timeline_classes = {}
for i, c in ipairs(gpu_ops.classes) do
  M.timeline_classes[i] = {name = c.name, label = c.label, color = colors[c.name]}
end
M.timeline_classes[#M.timeline_classes + 1] = {name = "nvtx", label = "NVTX range", color = "#56b4e9"}
local CLASS = {}
for i, c in ipairs(M.timeline_classes) do CLASS[c.name] = i - 1 end

--- GPU rows of the window, one part per table with rows (kernels, memcpy,
-- memset: nsl.gpu_ops.parts): {t = rows (report, device, stream, start,
-- stop), class = column, label = column (the name written on wide events:
-- kernel name, or the terse label of nsl.gpu_ops)}; counts filled per class.
local function gpu_parts(trace, from, to, tables, counts)
  local parts = {}
  for _, p in ipairs(gpu_ops.parts(trace, {columns = {"report", "device", "stream", "start", "stop"}, tables = tables,
                                           names = "short", labels = "terse", class = true, from = from, to = to})) do
    if p.n > 0 then
      local c = p.col
      for id, cl in ipairs(gpu_ops.classes) do
        local n = c.class:eq(id - 1):count()
        if n > 0 then counts[cl.name] = counts[cl.name] + n end
      end
      parts[#parts + 1] = {t = c, class = c.class, label = c.name}
    end
  end
  return parts
end
M.gpu_parts = gpu_parts

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
  if want_nvtx then nv = window.rows(trace.nvtx, {"report", "pid", "tid", "start", "stop", "text"}, from, to) end
  if nv then
    counts.nvtx = #nv
    -- rows by thread (key order), each on the sub-row of its nesting depth: lanes from C, no group ids
    local keys = multi and {nv.report, nv.pid, nv.tid} or {nv.pid, nv.tid}   -- one report: one value
    local lane, groups = nsl.nest_lanes(nv.start, nv.stop, keys, #lanes, maxd)
    local tnames = nsl.thread_names(trace)
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
        local name = p.label[w.row[i] + 1]
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
    local t = window.rows(trace[name], {"report", "device", "start", "stop"}, from, to)
    if t then parts[#parts + 1] = t end
  end
  local rows, keys, fraction, busy = {}, {}, {}, nil
  local edges = nsl.bin_edges(from, to, nb):totable()
  if #parts > 0 then
    local spec = {}
    for _, name in ipairs({"report", "device", "start", "stop"}) do
      local list = {}
      for i, p in ipairs(parts) do list[i] = p[name] end
      spec[#spec + 1] = {name, nsl.concat(table.unpack(list))}
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
  local cv = charts.heatmap{rows = rows, edges = edges, values = flat, vmin = 0, vmax = 1, xunit = "ns",
                       origin = opts.origin or from, width = opts.width, height = opts.height, format = opts.format,
                       title = opts.title, xlabel = opts.xlabel or "time", font_size = opts.font_size}
  return cv, {rows = rows, keys = keys, edges = edges, busy = busy, fraction = fraction}
end

return M
