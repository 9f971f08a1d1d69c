-- nsl.engine.view -- the interactive timeline viewer: one self-contained HTML file
-- (no network) with a canvas timeline of the trace (one row per GPU stream:
-- kernels, NCCL kernels, memcpy by direction, memset; on nsys-jax archives
-- one per device: the XLA modules and thunks projected onto it; NVTX ranges per
-- thread in nesting sub-rows), zoom, pan, hover details, search by name,
-- the NVTX stack at a point or over a selection, and the findings of
-- `diagnose`.  The page's script and style are lua/nsl/engine/view/viewer.js and
-- viewer.css; this module only gathers the data, from the same tables and
-- findings `nsl run` uses, and embeds it compactly:
--   * levels of detail over the whole trace: per row and time bin, the busy
--     time (union of the row's events) and the number of events starting in
--     the bin, a pyramid of bins 4 times finer per level, computed by the
--     timeline's C index (nsl.lod, the one `nsl tui` draws from);
--   * every event of a detail window [from, to), as columns of
--     little-endian typed arrays (nsl.pack) in base64, names through one
--     string table.
--   local v = require("nsl.engine.view").viewer(trace, {from = t0, to = t1})
--   nsl.write_file("view.html", v:page())      -- `nsl view`; out:file(name, v:page()) in an analysis
--   show(v)                                     -- a notebook cell embeds it (v:fragment())
local nsl = require("nsl")
local plot = require("nsl.plot")
local gpu_ops = require("nsl.gpu_ops")
local window = require("nsl.window")
local report = require("nsl.report")
local kept = require("nsl.kept")

local M = {}

--- At most this many events get full detail by default (the detail
-- window ends where that many events have started).
M.max_events = 100000
--- Time bins of the coarsest level of detail over the whole trace.
M.bins = 2000
--- Levels of detail at most, each with 4 times the bins of the one before.
M.levels = 6
--- Cells stored at most over the levels past the first (a few bytes each in the page).
M.lod_cells = 1000000
--- Format version of the embedded data (viewer.js checks it).
M.format = 2

local fmt = string.format

local Viewer = {}
Viewer.__index = Viewer
M.Viewer = Viewer

-- ---- gathering -----------------------------------------------------------------------

local CLASS = {}
for i, c in ipairs(plot.timeline_classes) do CLASS[c.name] = i - 1 end

--- The GPU operations of the trace as columns report, device, stream,
-- start, stop, name, cls (a Lua table of them) and their number n over the
-- whole trace, or nil when there are none.  cls is the timeline class
-- (plot.timeline_classes, 0-based); name the kernel's short name or the
-- terse label of a memory operation (nsl.gpu_ops.table).  from, to: only
-- the CUDA operations overlapping [from, to) (nsys-jax archives: all).
local function gpu_rows(trace, from, to)
  local n = #trace.kernels + #trace.memcpy + #trace.memset
  if n == 0 then   -- no CUDA activity: an nsys-jax archive's XLA modules and thunks on each device
    local r = trace.gpu_ranges
    if #r == 0 then return nil end
    r:load{"report", "pid", "tid", "start", "stop", "text"}
    local frames = require("nsl.jax.frames")
    local dev = frames.range_devices(trace, r)
    return {report = r.report, device = dev, stream = nsl.rep(0, #r), start = r.start, stop = r.stop,
            name = frames.range_names(r.text), cls = nsl.rep(CLASS.kernel, #r), n = #r}
  end
  local t = gpu_ops.table(trace, {columns = {"report", "device", "stream", "start", "stop"}, names = "short",
                                  labels = "terse", class = true, from = from, to = to})
  return {report = t.report, device = t.device, stream = t.stream, start = t.start, stop = t.stop, name = t.name,
          cls = t.class, n = n}
end

--- The NVTX ranges of the trace as columns report, pid, tid, start, stop,
-- text (a Lua table of them) and their number n, marks and unfinished
-- ranges left out, or nil.  marks: leave the marks in (the detail window's
-- rows leave them out: they overlap nothing).
local function nvtx_ranges(trace, marks)
  local nv = trace.nvtx
  if #nv == 0 then return nil end
  nv = nv:select{"report", "pid", "tid", "start", "stop", "text"}
  local ranges = ~nv.stop:isnull()
  local n = ranges:count()
  if n == 0 then return nil end
  if n < #nv and not marks then nv = nv:filter(ranges) end
  return {report = nv.report, pid = nv.pid, tid = nv.tid, start = nv.start, stop = nv.stop, text = nv.text, n = n}
end

--- Names of the reports (0-based index -> name) and of the threads ("report/pid/tid" -> name).
local function names_of(trace)
  local r, reports = trace.reports, {}
  for i = 1, #r do reports[r.report[i]] = r.name[i] end
  return reports, nsl.thread_names(trace)
end

-- The two kinds of rows, and the key columns of each (a row per key tuple).
local KINDS = {{kind = "gpu", keys = {"report", "device", "stream"}}, {kind = "nvtx", keys = {"report", "pid", "tid"}}}

--- Rows of the timeline: one per (report, device, stream) of the GPU
-- operations g, then one per (report, pid, tid) of the NVTX ranges nv, in
-- key order, as records {kind, the keys, events} (labels aside:
-- label_rows), and per kind (1-based in KINDS) the row of its part where
-- each of its rows first appears.  Sets g.row / nv.row (i32 column: each
-- event's row, 0-based).
local function layout_rows(g, nv)
  local rows, firsts = {}, {}
  for k, part in ipairs{g or false, nv or false} do
    if part then
      local keys = KINDS[k].keys
      local cols = {part[keys[1]], part[keys[2]], part[keys[3]]}
      local lane, groups = nsl.nest_lanes(nil, nil, cols, #rows, 1)
      part.row, firsts[k] = lane, groups.row
      for i = 1, #groups do
        local r = groups.row[i] + 1
        rows[#rows + 1] = {kind = KINDS[k].kind, [keys[1]] = cols[1][r], [keys[2]] = cols[2][r],
                           [keys[3]] = cols[3][r], events = groups.count[i]}
      end
    end
  end
  return rows, firsts
end

--- Labels the rows (layout_rows'): xla, the GPU rows are an nsys-jax
-- archive's devices.
local function label_rows(trace, rows, xla)
  local multi = trace:nreports() > 1
  local reports, threads = names_of(trace)
  local function prefix(r) return multi and ((reports[r] or tostring(r)) .. " ") or "" end
  for _, row in ipairs(rows) do
    local rep = row.report
    if row.kind == "gpu" then
      local dev = row.device
      row.label = xla and fmt("%sGPU %s XLA", prefix(rep), dev >= 0 and tostring(dev) or "?") or
                  fmt("%sGPU %s stream %s", prefix(rep), tostring(dev), tostring(row.stream))
    else
      local pid, tid = row.pid, row.tid
      local tname = threads[fmt("%s/%s/%s", rep, pid, tid)]
      row.label = prefix(rep) .. (tname and fmt("%s (%s)", tname, tostring(tid))
                                  or fmt("pid %s tid %s", tostring(pid), tostring(tid)))
    end
  end
end

local function row_key(a, b, c) return fmt("%s/%s/%s", tostring(a), tostring(b), tostring(c)) end

--- The row (0-based, i32 column) of each of idx's events of part (of kind
-- k, 1-based in KINDS) among rows, or nil where the key of one is no row's.
local function rows_of(rows, k, part, idx)
  local keys, at = KINDS[k].keys, {}
  for r, row in ipairs(rows) do
    if row.kind == KINDS[k].kind then at[row_key(row[keys[1]], row[keys[2]], row[keys[3]])] = r - 1 end
  end
  local cols = {part[keys[1]]:gather(idx), part[keys[2]]:gather(idx), part[keys[3]]:gather(idx)}
  local lane, groups = nsl.nest_lanes(nil, nil, cols, 0, 1)
  local map = {}
  for i = 1, #groups do
    local x = groups.row[i] + 1
    map[i] = at[row_key(cols[1][x], cols[2][x], cols[3][x])]
    if not map[i] then return nil end
  end
  return nsl.column(map):gather(lane):cast("i32")
end

--- The widths of nbins equal bins over [lo, hi) (nsl.bin_edges), as a
-- column, and whether each lies wholly inside [from, to) (bool column).
local function bin_widths(lo, hi, nbins, from, to)
  local edges, i = nsl.bin_edges(lo, hi, nbins), nsl.range(nbins)
  local a, b = edges:gather(i), edges:gather(i + 1)
  return b - a, a:ge(from) & b:le(to)
end

--- The levels of detail over [lo, hi): a pyramid of bins per row, level k
-- with bins * 4^k equal bins (nsl.bin_edges; bin b of level k is bins
-- 4b..4b+3 of level k+1), each bin's busy ns (the union of the row's
-- events in it) and events starting in it computed by the C index of the
-- timeline (nsl.lod, as `nsl tui` draws).  Stored sparse: a cell (row *
-- nbins + bin) only where the row has something, and, past level 0, only
-- where its parent bin is not full (wholly busy, no event starting: then
-- every bin under it is too, and the page infers them) and not wholly
-- inside the detail window [from, to) (whose events the page draws
-- instead; level 0 is whole, the trace's summary).  Levels are added
-- while the bins are at least 1 ns, at most 2^20 and the cells stored past
-- level 0 stay within max_cells.  index: the events' nsl.lod.  Returns the
-- list of levels {bins, cell, busy, starts, width} (columns; width: the
-- cell's bin's), level 0 first.
local function levels_of_detail(index, nrows, lo, hi, from, to, bins, nlevels, max_cells)
  local levels, stored, full_above = {}, 0, nil
  local nb = bins
  for k = 0, nlevels - 1 do
    if k > 0 and (nb > hi - lo or nb > (1 << 20)) then break end
    local width, inside = bin_widths(lo, hi, nb, from, to)
    local parent = k > 0 and nsl.range(nb) // 4 or nil
    local cells, busy, starts, widths, full = {}, {}, {}, {}, {}
    local over = false   -- past level 0, the cells so far no longer fit: the level is left out, its other rows unread
    for r = 0, nrows - 1 do
      local b, n = index:bins(r, lo, hi, nb)
      local keep = b:gt(0) | n:gt(0)
      if full_above then keep = keep & ~full_above[r + 1]:gather(parent) & ~inside end
      local idx = keep:indices()
      if k > 0 then
        stored = stored + #idx
        if stored > max_cells then
          over = true
          break
        end
      end
      cells[#cells + 1], busy[#busy + 1], starts[#starts + 1] = idx + r * nb, b:gather(idx), n:gather(idx)
      widths[#widths + 1] = width:gather(idx)
      full[r + 1] = b:eq(width) & b:gt(0) & n:eq(0)   -- as the page infers: a bin of 0 ns is never full
    end
    if over then break end
    local level = {bins = nb, cell = nsl.concat(table.unpack(cells)), busy = nsl.concat(table.unpack(busy)),
                   starts = nsl.concat(table.unpack(starts)), width = nsl.concat(table.unpack(widths))}
    levels[#levels + 1] = level
    full_above = full
    nb = nb * 4
  end
  return levels
end

--- The end of the default detail window from `from`: where max_events
-- events have started (all of them: hi); starts: a list of columns (the
-- parts' events).  Exact: bins narrow it down (nsl.bin_counts over
-- [from, hi], one pass over each part's starts), then the starts of the
-- one bin that holds the limit are sorted.
local function default_to(starts, from, hi, max_events)
  local nb = 1024
  local per = {}
  for bin = 1, nb do per[bin] = 0 end
  for _, s in ipairs(starts) do
    local part = nsl.bin_counts(s, from, hi + 1, nb):totable()
    for bin = 1, nb do per[bin] = per[bin] + part[bin] end
  end
  local seen = 0
  for bin = 0, nb - 1 do
    local c = per[bin + 1]
    if seen + c > max_events then
      local edges = nsl.bin_edges(from, hi + 1, nb)
      local inside = {}
      for i, s in ipairs(starts) do inside[i] = s:gather((s:ge(edges[bin + 1]) & s:lt(edges[bin + 2])):indices()) end
      local inbin = nsl.concat(table.unpack(inside))
      local sorted = inbin:gather(inbin:argsort())
      return sorted[max_events - seen + 1]   -- the first start left out
    end
    seen = seen + c
  end
  return hi
end

--- Rows of t (part k of KINDS) overlapping [from, to) with the columns the
-- page needs (row: theirs among rows), nil where none does, false where
-- one's key is no row's.
local function window_part(t, k, rows, from, to)
  local idx = nsl.overlapping_rows(t.start, t.stop, from, to)
  if #idx == 0 then return nil end
  local nvtx = k == 2
  local row = rows_of(rows, k, t, idx)
  if not row then return false end
  local w = {start = t.start:gather(idx), stop = t.stop:gather(idx), row = row,
             name = (nvtx and t.text or t.name):gather(idx)}
  w.cls = nvtx and nsl.rep(CLASS.nvtx, #idx) or t.cls:gather(idx)
  return w
end

--- The findings of `diagnose` on the trace as records for the page, and
-- notes (a check that could not run, or diagnose itself).
local function diagnose_findings(trace)
  local runner = require("nsl.engine.runner")
  local findings = require("nsl.findings")
  local a = assert(runner.load_analysis("diagnose"))
  local parsed = assert(runner.parse_args(a, {}))
  local out = require("nsl.engine.output").new{analysis = a.name, format = "notebook", trace = trace}
  local ok, err = xpcall(a.run, nsl.error_handler, trace, parsed, out)
  if not ok then
    if not nsl.is_error(err) then error(runner.failure(a, err, trace.reports.path:totable()), 0) end
    return {}, {"diagnose: " .. tostring(err)}
  end
  local list = {}
  for _, f in ipairs(out.findings) do
    list[#list + 1] = {severity = f.severity, id = f.id, message = f.message,
                       text = table.concat(findings.lines(f, out.at), "\n"), where = f.where, cost_ns = f.cost_ns}
  end
  return list
end

--- Findings as the page reads them: times relative to lo.
local function page_findings(list, lo)
  local res = {}
  for _, f in ipairs(list) do
    local w = f.where or {}
    res[#res + 1] = {severity = f.severity, id = f.id, text = f.text or f.message, cost_ns = f.cost_ns,
                     from = w.from and w.from - lo, to = w.to and w.to - lo, report = w.report,
                     device = w.device, stream = w.stream, pid = w.pid, tid = w.tid, nvtx = w.nvtx}
  end
  return res
end

local function b64(col, ty, offset) return nsl.base64(nsl.pack(col, ty, offset)) end

--- The levels of detail as the page reads them: per level its bins, the
-- number n of cells stored and base64 columns of unsigned varints (nsl.pack
-- "uv": most take a byte or two): cell as the gap from the cell before
-- (the first: itself), starts, and busy folded so that nearly full bins
-- take as few bytes as nearly empty ones: 2 * busy when at most half the
-- bin, else 2 * (width - busy) + 1.
local function page_levels(levels)
  local res = {}
  for i, lv in ipairs(levels) do
    local gap = lv.cell:diff()
    gap = nsl.where(gap:isnull(), lv.cell, gap)
    local idle = lv.width - lv.busy
    local folded = nsl.where((lv.busy * 2):gt(lv.width), idle * 2 + 1, lv.busy * 2)
    res[i] = {bins = lv.bins, n = #lv.cell, cell = b64(gap, "uv"), busy = b64(folded, "uv"),
              starts = b64(lv.starts, "uv")}
  end
  return res
end

--- The layout of the page over the whole trace [lo, hi) with the detail
-- window from `from`: {rows (layout_rows', unlabelled), to (the detail
-- window's end), lod (levels_of_detail's)}.  g, nv: the GPU operations and
-- the NVTX ranges (gpu_rows, nvtx_ranges; marks left out here); set: the
-- settings (to, max_events, bins, levels, lod_cells).
local function layout(g, nv, lo, hi, from, set)
  local ranges = nv
  if nv and nv.n < #nv.start then
    local t = nsl.table{{"report", nv.report}, {"pid", nv.pid}, {"tid", nv.tid}, {"start", nv.start},
                        {"stop", nv.stop}}
    t = t:filter(~nv.stop:isnull())
    ranges = {report = t.report, pid = t.pid, tid = t.tid, start = t.start, stop = t.stop, n = #t}
  end
  local rows, firsts = layout_rows(g, ranges)
  -- the events of every part, read where they are (no column of all of them is made)
  local s, e, l = {}, {}, {}
  for _, p in ipairs{g or false, ranges or false} do
    if p then s[#s + 1], e[#e + 1], l[#l + 1] = p.start, p.stop, p.row end
  end
  local to = set.to or default_to(s, from, hi, set.max_events)
  local index = nsl.lod(s, e, l, nil, #rows)
  s, e, l = nil, nil, nil
  if g then g.row = nil end
  to = math.min(to, hi)
  if to <= from then to = from + 1 end
  local lod = levels_of_detail(index, #rows, lo, hi, from, to, set.bins, set.levels, set.lod_cells)
  return {rows = rows, to = to, lod = lod, firsts = firsts}
end

-- ---- the layout kept in the column cache ----------------------------------------------
-- For a trace of one report (nsl.kept), under the settings it was made with:
-- .rows (a row each: kind 0 GPU / 1 NVTX, report, a and b its other keys,
-- events), .lv (the levels' cells, level by level), .at (to, the levels).

local ROW_COLS = {"kind", "report", "a", "b", "events"}
local LEVEL_COLS = {"level", "cell", "busy", "starts", "width"}

--- Keeps lay (layout's) under name; g, nv: the parts it was made from.
local function keep_layout(trace, name, lay, g, nv)
  local cols = {kind = {}, report = {}, a = {}, b = {}}
  for k, part in ipairs{g or false, nv or false} do
    local first = lay.firsts[k]
    if part and first then
      local keys = KINDS[k].keys
      cols.kind[#cols.kind + 1] = nsl.rep(k - 1, #first)
      cols.report[#cols.report + 1] = part[keys[1]]:gather(first):cast("i64")
      cols.a[#cols.a + 1] = part[keys[2]]:gather(first):cast("i64")
      cols.b[#cols.b + 1] = part[keys[3]]:gather(first):cast("i64")
    end
  end
  local events = {}
  for i, row in ipairs(lay.rows) do events[i] = row.events end
  local list = {}
  for _, c in ipairs{"kind", "report", "a", "b"} do list[#list + 1] = {c, nsl.concat(table.unpack(cols[c]))} end
  list[#list + 1] = {"events", nsl.column(events):cast("i64")}
  local rt = nsl.table(list)
  local lv = {level = {}, cell = {}, busy = {}, starts = {}, width = {}}
  for k, level in ipairs(lay.lod) do
    lv.level[k] = nsl.rep(k - 1, #level.cell)
    for _, c in ipairs{"cell", "busy", "starts", "width"} do lv[c][k] = level[c]:cast("i64") end
  end
  list = {}
  for _, c in ipairs(LEVEL_COLS) do list[#list + 1] = {c, nsl.concat(table.unpack(lv[c]))} end
  local lt = nsl.table(list)
  local at = nsl.table{{"to", nsl.column{lay.to}}, {"levels", nsl.column{#lay.lod}}}
  if not (kept.keepable(rt, ROW_COLS) and kept.keepable(lt, LEVEL_COLS) and kept.keepable(at, {"to", "levels"})) then
    return
  end
  kept.keep_table(trace, "kernels", name .. ".rows", rt, ROW_COLS)
  kept.keep_table(trace, "kernels", name .. ".lv", lt, LEVEL_COLS)
  kept.keep_table(trace, "kernels", name .. ".at", at, {"to", "levels"})
end

--- Whether column c has no NULL and its values lie in [lo, hi].
local function within(c, lo, hi)
  if c:isnull():count() > 0 then return false end
  local a, b = nsl.extent(c)
  return not a or (a >= lo and b <= hi)
end

--- The layout kept under name, or nil: none, or one that does not hold
-- together (a kept file is not to be trusted: the rows' events must be the
-- GPU operations' and the ranges' ng and nr, the GPU rows first; every
-- cell a row's bin of its level, its busy time within its bin, the end of
-- the detail window within (from, hi]).
local function read_layout(trace, name, ng, nr, from, hi, set)
  local at = kept.table(trace, "kernels", name .. ".at", {"to", "levels"})
  local rt = at and #at == 1 and kept.table(trace, "kernels", name .. ".rows", ROW_COLS)
  local lt = rt and kept.table(trace, "kernels", name .. ".lv", LEVEL_COLS)
  if not lt then return nil end
  local to, nl = at.to[1], at.levels[1]
  if not to or to <= from or to > math.max(hi, from + 1) or not nl or nl < 1 or nl > set.levels then return nil end
  local n = #rt
  if n == 0 or n > ng + nr or not within(rt.kind, 0, 1) or not within(rt.report, 0, math.maxinteger) or
     not within(rt.events, 1, ng + nr) then
    return nil
  end
  local ngpu = rt.kind:eq(0):count()
  local gpu, rest = nsl.range(ngpu), nsl.range(n - ngpu) + ngpu
  local function total(c) return #c == 0 and 0 or c:sum() end
  if not within(rt.kind:gather(gpu), 0, 0) or total(rt.events:gather(gpu)) ~= ng or
     total(rt.events:gather(rest)) ~= nr then
    return nil
  end
  local rows = {}
  for i = 1, n do
    local k = rt.kind[i] + 1
    local keys = KINDS[k].keys
    rows[i] = {kind = KINDS[k].kind, [keys[1]] = rt.report[i], [keys[2]] = rt.a[i], [keys[3]] = rt.b[i],
               events = rt.events[i]}
  end
  if not within(lt.level, 0, nl - 1) then return nil end
  local lod, nb = {}, set.bins
  for k = 0, nl - 1 do
    local idx = lt.level:eq(k):indices()
    local lv = {bins = nb}
    for _, c in ipairs{"cell", "busy", "starts", "width"} do lv[c] = lt[c]:gather(idx) end
    if not within(lv.cell, 0, n * nb - 1) or not within(lv.width, 0, hi) or not within(lv.starts, 0, ng + nr) or
       not within(lv.busy, 0, hi) or (lv.busy - lv.width):gt(0):count() > 0 then
      return nil
    end
    lod[k + 1] = lv
    nb = nb * 4
  end
  return {rows = rows, to = to, lod = lod}
end

--- The events of the detail window [from, to) of the GPU operations g and
-- the NVTX ranges nv as lists of the parts' columns (window_part's), or
-- nil where one's key is no row's.
local function windows(g, nv, rows, from, to)
  local w = {}
  for k, part in ipairs{g or false, nv or false} do
    if part then
      local p = window_part(part, k, rows, from, to)
      if p == false then return nil end
      w[#w + 1] = p
    end
  end
  return w
end

--- The name layout_kept keeps a layout under: its settings.
local function layout_name(lo, hi, from, set, ng, nr)
  return kept.name("view_layout.1", {tostring(lo), tostring(hi), tostring(from), tostring(set.to or "none"),
                   tostring(set.max_events), tostring(set.bins), tostring(set.levels), tostring(set.lod_cells),
                   tostring(ng), tostring(nr)})
end

--- The layout of the page (layout's) and the GPU operations g and NVTX
-- ranges nv (nvtx_ranges', marks left in) of its detail window, as lists
-- of columns (windows').  For a trace of one report the layout is kept in
-- the column cache and read back where it was made under the same settings
-- and holds together: then only the GPU operations of the detail window
-- are read.
local function layout_kept(trace, nv, lo, hi, from, set)
  local keeps = trace:nreports() == 1 and trace:keeps_derived(0)
  local ng, nr = #trace.kernels + #trace.memcpy + #trace.memset, nv and nv.n or 0
  if ng == 0 then ng = #trace.gpu_ranges end
  local name = keeps and layout_name(lo, hi, from, set, ng, nr)
  local lay = keeps and read_layout(trace, name, ng, nr, from, hi, set)
  if lay then
    local w = windows(gpu_rows(trace, from, lay.to), nv, lay.rows, from, lay.to)
    if w then return lay, w end
  end   -- (a kept layout without a row for one of the window's events: made and kept again)
  local g = gpu_rows(trace)
  lay = layout(g, nv, lo, hi, from, set)
  if keeps then keep_layout(trace, name, lay, g, nv) end
  return lay, assert(windows(g, nv, lay.rows, from, lay.to))
end

--- view.viewer(trace, opts) -> a viewer: the data of the page for the
-- trace (v.data), with the detail window (v.from, v.to, absolute ns), the
-- trace's span (v.lo, v.hi), the rows and the levels of detail as columns
-- (v.lod: a list of {bins, cell, busy, starts}, coarsest first).  opts.from / opts.to:
-- the detail window (absolute ns; default from the first event to where
-- opts.max_events (M.max_events) events have started); opts.bins (M.bins)
-- bins of the coarsest level of detail; opts.levels (M.levels) and
-- opts.lod_cells (M.lod_cells) bound the finer ones;
-- opts.findings: false (none), a list of finding records, or true/nil (run
-- diagnose); opts.title.  Fails (nsl.fail) on a trace without GPU
-- operations or NVTX ranges.
function M.viewer(trace, opts)
  opts = opts or {}
  local function nothing() nsl.fail("the trace has no GPU operations or NVTX ranges to show") end
  local any = false
  for _, name in ipairs{"kernels", "memcpy", "memset", "gpu_ranges", "nvtx"} do any = any or #trace[name] > 0 end
  if not any then nothing() end
  -- the findings first: diagnose's memory is freed (its trace tables unloaded, its garbage collected) before the
  -- page's columns are made, so the two peaks do not add up
  local flist, notes = {}, {}
  if type(opts.findings) == "table" then flist = opts.findings
  elseif opts.findings ~= false then
    flist, notes = diagnose_findings(trace)
    collectgarbage()
    nsl.trim_memory()   -- diagnose's freed blocks fit none of the page's columns: held, they would add to its peak
  else notes = {"Findings left out (nsl view --no-findings)."} end
  local nv = nvtx_ranges(trace, true)   -- (marks left in: the layout leaves them out where made)
  if #trace.kernels + #trace.memcpy + #trace.memset + #trace.gpu_ranges == 0 and not nv then nothing() end
  local lo, hi = window.span(trace, {"kernels", "memcpy", "memset", "nvtx", "gpu_ranges"})
  if hi <= lo then hi = lo + 1 end
  -- the detail window
  local from = math.max(lo, opts.from or lo)
  local set = {to = opts.to, max_events = opts.max_events or M.max_events,
               bins = math.max(1, math.floor(opts.bins or M.bins)), levels = opts.levels or M.levels,
               lod_cells = opts.lod_cells or M.lod_cells}
  local lay, w = layout_kept(trace, nv, lo, hi, from, set)
  local rows, to, lod = lay.rows, lay.to, lay.lod
  label_rows(trace, rows, #trace.kernels + #trace.memcpy + #trace.memset == 0)
  local ev = {}
  for _, name in ipairs{"start", "stop", "row", "name", "cls"} do
    local list = {}
    for _, p in ipairs(w) do list[#list + 1] = p[name] end
    if #list > 0 then ev[name] = nsl.concat(table.unpack(list)) end
  end
  local n = ev.start and #ev.start or 0
  local strings, data_ev = {}, {n = n}
  if n > 0 then
    -- NVTX sub-rows: the nesting depth of each range among its thread's ranges in the window
    local depth, deepest = nsl.nest_depth(ev.start, ev.stop, ev.row)
    local bad = depth:isnull()   -- a range that stops before it starts: the top sub-row
    if bad:count() > 0 then depth = nsl.where(bad, 0, depth) end
    for r = 1, #rows do rows[r].sub = math.max(1, (deepest[r] or -1) + 1) end
    local names = nsl.table{{"name", ev.name}}:group_by("name")
    local keys = names:keys().name
    for i = 1, #keys do strings[i] = keys[i] or "" end
    data_ev.row = b64(ev.row, "u32")
    data_ev.sub = b64(depth, "u16")
    data_ev.start = b64(ev.start, "f64", lo)
    data_ev.dur = b64(ev.stop - ev.start, "f64")
    data_ev.cls = b64(ev.cls, "u8")
    data_ev.name = b64(names:ids(), "u32")
  end
  for _, r in ipairs(rows) do r.sub = r.sub or 1 end
  local apart = window.disjoint(trace)   -- stacked reports far apart: slivers on a long axis, said in words
  if apart then notes[#notes + 1] = apart end
  local data = {
    format = M.format, title = opts.title or table.concat(trace.reports.name:totable(), ", "),
    nsl = nsl.version, base = tostring(lo), span = hi - lo, from = from - lo, to = to - lo,
    -- the page's first event from the trace's start (a --from/--to window keeps events that began before it):
    -- the hint's --from/--to count from the trace's start
    shift = lo - (window.origin(trace) or lo),
    classes = plot.timeline_classes, rows = rows, strings = strings, events = data_ev,
    lod = page_levels(lod),
    findings = page_findings(flist, lo), notes = notes,
  }
  return setmetatable({data = data, from = from, to = to, lo = lo, hi = hi, events = n, rows = rows, lod = lod},
                      Viewer)
end

-- ---- the page ------------------------------------------------------------------------

--- The viewer's script and style, as shipped in the binary.
local function asset(name)
  local text = nsl.embedded_file("lua/nsl/engine/view/" .. name)
  if not text then error("the viewer's " .. name .. " is not in this build", 2) end
  return text
end

--- JSON safe inside a <script> element.
local function script_json(v)
  local j = report.json(v)
  if not j:find("</", 1, true) then return j end   -- (a plain search: the page's megabytes of base64 hold none)
  return (j:gsub("</", "<\\/"))
end

local function escape(s)
  return (tostring(s):gsub("[&<>\"]", {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}))
end

--- The viewer as an HTML fragment (a div with its data, style and script),
-- for a notebook report or any page.
function Viewer:fragment()
  return table.concat({
    '<div class="nsl-view">',
    '<script type="application/json" class="nsl-view-data">' .. script_json(self.data) .. "</script>",
    "</div>",
    "<style>" .. asset("viewer.css") .. "</style>",
    "<script>" .. asset("viewer.js") .. "</script>"}, "\n")
end

--- The viewer as a whole page: one self-contained HTML file that fetches
-- nothing (its Content-Security-Policy forbids it).
function Viewer:page()
  return table.concat({"<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; " ..
    "script-src 'unsafe-inline'; img-src data:\">",
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>" .. escape(self.data.title) .. " - nsl view</title></head>",
    '<body class="nsl-view-page">', self:fragment(), "</body></html>"}, "\n")
end

--- true when v is a viewer (for notebook display).
function M.is_viewer(v) return getmetatable(v) == Viewer end

return M
