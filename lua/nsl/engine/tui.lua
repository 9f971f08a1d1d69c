-- nsl.engine.tui -- `nsl tui`: a terminal timeline of a trace (GPU streams, NVTX
-- ranges per thread), the details of an event, the NVTX tree and the
-- findings of diagnose, over ssh and in tmux, with and without colour.
-- The terminal is nsl.curses (src/lua/lcurses.c); what is shown comes from
-- nsl.engine.tui_model (the tables, nsl.lod's per-column summaries, nsl.nvtx's
-- tree, diagnose's findings): this file is the view and the keys only.
-- The first screen comes at once: the trace opens and loads behind it (a
-- loader coroutine over background jobs, resumed between keys), with its
-- progress on the status line; keys work the whole time.
local nsl = require("nsl")
local model = require("nsl.engine.tui_model")
local report = require("nsl.report")
local units = require("nsl.util.units")
local findings_text = require("nsl.findings")

local M = {}

local fmt, floor, max, min = string.format, math.floor, math.max, math.min

M.keys = [[
Timeline                                   Everywhere
  left/right    move the cursor a column     tab        next view: timeline, tree, findings
  a d  h l      pan an eighth of the window  T  F       the tree, the findings
  [ ]           page: a whole window         :          Lua prompt (`trace`, `nsl`, `tui`)
  + = w / - s   zoom in / out at the cursor  ?          these keys
  0  home       the whole trace              i          exact ns: the window, the tree
  up/down j k   select a lane                q  C-c     quit
  pgup/pgdn     lanes a page up / down     Tree
  n / p         next / previous kernel       up/down    move;  right/left  expand/collapse
  enter         select the event at cursor   enter      show the next instance on the timeline
  e             zoom to the selected event   k          the kernels under the range
  g             jump to a time (1.5ms, ns) Findings
  t             relative / absolute time     up/down    move;  enter  go to its place
  /             filter names (regex)
  m             minimum duration (10us)
  N             short / demangled names
  b  '  B       bookmark, next, clear
  { }  z        range start, end, zoom to it
  c             colour on / off
]]

-- Terminal colours (the 8 of every terminal) of each class, and the ink on them.
local class_color = {kernel = 4, nccl = 1, memcpy_htod = 3, memcpy_dtoh = 2, memcpy_other = 7, memset = 5, nvtx = 6}
local dark_ink = {[4] = true, [1] = true, [5] = true}
-- Characters of each class without colour (full column; a partly covered one is '|').
local class_char = {kernel = "#", nccl = "N", memcpy_htod = ">", memcpy_dtoh = "<", memcpy_other = "=",
                    memset = "S", nvtx = "-"}

local App = {}
App.__index = App

-- ---- time ------------------------------------------------------------------------------

-- Compact time for the axis: t ns in the unit of its size (s, ms, µs, ns: 166ms, not 166000µs),
-- with the decimals the tick step needs (60.3075s for a 500 µs step).
local function axis_time(t, step, utf8)
  local mu = utf8 and "µs" or "us"
  local unit, div
  local size = max(math.abs(t), step)
  if size >= 1e9 then unit, div = "s", 1e9
  elseif size >= 1e6 then unit, div = "ms", 1e6
  elseif size >= 1e3 then unit, div = mu, 1e3
  else unit, div = "ns", 1 end
  local dec = 0
  local s = step / div
  while dec < 9 and math.abs(s - floor(s + 0.5)) > 1e-9 * max(1, s) do
    s, dec = s * 10, dec + 1
  end
  return fmt("%." .. dec .. "f%s", t / div, unit)
end

--- The time t as shown: relative to the trace's start (+1.234567 s) or absolute ns.
function App:time_text(t)
  if t == nil then return "" end
  if self.rel then return fmt("+%s", report.duration(t - self.origin)) end
  return fmt("%d ns", t)
end

-- Edge c of the window's ncols columns (exact integers).
local function edge(from, span, ncols, c) return from + (span * c) // ncols end

-- ---- set-up ----------------------------------------------------------------------------

-- A new application over trace (or, when nil, the trace opts.open's job opens): the model (nothing
-- loaded yet), the loader, the view's state, the log file.
local function new_app(trace, opts)
  local self = setmetatable({}, App)
  self.trace, self.opts = trace, opts
  self.m = trace and model.new(trace, {max_depth = opts.max_depth}) or nil
  self.open = not trace and opts.open or nil   -- the job that opens the trace, until it has
  self.steps_total = #model.stage_list + (self.open and 1 or 0)
  self.step, self.step_label = 0, nil
  self.tasks = {}            -- what views asked the loader for besides the lanes: "tree", "findings"
  self.loader = coroutine.create(function() return self:load_all() end)
  self.warnings = {}
  self.curses = nsl.curses
  self.view = "timeline"
  self.rel = true
  self.lane_sel, self.top = 1, 1
  self.bookmarks, self.bm_next = {}, 1
  self.pane = nil            -- lines shown in the bottom pane instead of the details (Lua output)
  self.status = ""
  self.show_info = os.getenv("NSL_TUI_INFO") ~= nil
  self.tree_open, self.tree_sel, self.tree_top = {}, 1, 1
  self.find_sel, self.find_top = 1, 1
  self.instance = {}
  self.t0 = opts.t0
  local log = os.getenv("NSL_TUI_LOG")
  if log and log ~= "" then self.log_file = io.open(log, "a") end
  return self
end

-- Appends a formatted line to NSL_TUI_LOG's file (timings), when set.
function App:log(...)
  if self.log_file then
    self.log_file:write(fmt(...), "\n")
    self.log_file:flush()
  end
end

-- Colour pairs per event class (background for events, foreground for partly covered columns),
-- unless the terminal has fewer than 8 colours, NO_COLOR is set or colour was turned off.
function App:setup_colors()
  local c = self.curses
  self.color = self.info.colors >= 8 and not self.opts.no_color and (os.getenv("NO_COLOR") or "") == ""
  if not self.color then return end
  self.pair_bg, self.pair_fg = {}, {}
  for i, cl in ipairs(model.classes) do
    local col = class_color[cl.name] or 7
    c.pair(i, dark_ink[col] and 7 or 0, col)
    c.pair(10 + i, col, -1)
    self.pair_bg[i - 1], self.pair_fg[i - 1] = i, 10 + i
  end
  c.pair(30, 0, 7)    -- bars
  c.pair(31, 3, -1)   -- marks on the axis
end

-- ---- layout ----------------------------------------------------------------------------

-- Sizes from the terminal: label width, timeline columns, the lanes' rows and the bottom pane.
function App:layout()
  local rows, cols = self.curses.size()
  self.rows, self.cols = rows, cols
  self.lw = max(8, min(30, cols // 4))                   -- lane labels
  self.w = max(1, cols - self.lw - 1)                    -- timeline columns
  self.pane_h = rows >= 20 and max(6, min(10, rows // 4)) or 3
  self.lanes_y0 = 2
  self.lanes_y1 = max(self.lanes_y0, rows - self.pane_h - 3)   -- last lane row
  self.pane_y0 = self.lanes_y1 + 2                       -- below the pane's title row
  self.nvis = self.lanes_y1 - self.lanes_y0 + 1
end

-- Keeps the window at least one ns per column and inside int64.
function App:set_window(from, to)
  local span = max(to - from, self.w)
  self.from, self.to = from, from + span
  if self.cur and (self.cur < self.from or self.cur >= self.to) then
    self.cur = self.from + (self.to - self.from) // 2
  end
end

-- The window on the whole span of the loaded lanes, the cursor in its middle.
function App:whole()
  local lo, hi = self.m:span()
  if not lo then return end
  -- times count from the trace's start: known for a --from/--to window, else found by the last loading
  -- stage (m.origin); until then, the lanes' first event
  self.origin = require("nsl.window").known_origin(self.trace) or self.m.origin or
                (self.origin and min(self.origin, lo) or lo)
  self:set_window(lo, hi + 1)
  self.cur = self.from + (self.to - self.from) // 2
end

-- The column (0-based, clamped to the window) that holds time t.
function App:col_of(t)
  local span = self.to - self.from
  return max(0, min(self.w - 1, ((t - self.from) * self.w) // span))
end

-- ---- drawing ----------------------------------------------------------------------------

-- Text at row y, column x (clipped by nsl.curses at the right edge).
function App:put(y, x, text, pair, attrs)
  self.curses.put(y, x, text, pair or 0, attrs or 0)
end

-- A full-width bar (reverse video, or the bar colour) with text.
function App:bar(y, text)
  local c = self.curses
  local line = text .. string.rep(" ", max(0, self.cols - utf8.len(text) or #text))
  if self.color then self:put(y, 0, line, 30)
  else self:put(y, 0, line, 0, c.REVERSE) end
end

-- The top bar: the window, the time mode, the filter, the range, the view.
function App:header()
  local parts = {"nsl tui"}
  if self.from then
    parts[#parts + 1] = fmt("%s .. %s (%s)", self:time_text(self.from), self:time_text(self.to),
                            report.duration(self.to - self.from))
  end
  parts[#parts + 1] = self.rel and "relative" or "absolute"
  local m = self.m or {}
  if m.filter then parts[#parts + 1] = fmt("filter /%s/", m.filter) end
  if (m.min_dur or 0) > 0 then parts[#parts + 1] = fmt(">= %s", report.duration(m.min_dur)) end
  if m.names == "demangled" then parts[#parts + 1] = "demangled" end
  if self.range_start or self.range_stop then
    parts[#parts + 1] = fmt("range %s..%s%s", self:time_text(self.range_start), self:time_text(self.range_stop),
      (self.range_start and self.range_stop) and fmt(" (%s)", report.duration(self.range_stop - self.range_start))
        or "")
  end
  parts[#parts + 1] = "[" .. self.view .. "]"
  self:bar(0, table.concat(parts, " | "))
end

-- The time axis: ticks at a round step, the cursor, bookmarks and the range.
function App:axis()
  local w, span = self.w, self.to - self.from
  local chars = {}
  for c = 1, w do chars[c] = " " end
  -- a step of 1, 2 or 5 x 10^k with ticks about 14 columns apart
  local want = span * 14 / w
  local step = 1
  while step * 10 <= want do step = step * 10 end
  if step * 5 <= want then step = step * 5 elseif step * 2 <= want then step = step * 2 end
  local base = self.rel and self.origin or 0
  local first = ((self.from - base + step - 1) // step) * step + base
  local t = first
  while t < self.to do
    local c = self:col_of(t) + 1
    local label = {}   -- one cell per character ("µ" is two bytes)
    for _, cp in utf8.codes("|" .. axis_time(t - base, step, self.info.utf8)) do label[#label + 1] = utf8.char(cp) end
    local room = true
    for k = c, min(w, c + #label) do if chars[k] ~= " " then room = false end end
    if room and c + #label - 1 <= w then
      for k = 1, #label do chars[c + k - 1] = label[k] end
    elseif chars[c] == " " then chars[c] = "|" end
    t = t + step
  end
  self:put(1, 0, string.rep(" ", self.lw), 0)
  self:put(1, self.lw + 1, table.concat(chars), 0, self.curses.DIM)
  local function mark(time, ch)
    if time and time >= self.from and time < self.to then
      self:put(1, self.lw + 1 + self:col_of(time), ch, self.color and 31 or 0, self.curses.BOLD)
    end
  end
  for _, b in ipairs(self.bookmarks) do mark(b, "*") end
  mark(self.range_start, "{")
  mark(self.range_stop, "}")
  mark(self.cur, "v")
  self:put(1, 0, self.rel and "time (relative)" or "time (ns)", 0, self.curses.DIM)
end

-- One lane's row: label, then the columns from the level-of-detail summaries,
-- names written on events wide enough, the selection and the cursor marked.
function App:lane_row(y, i)
  local m, c = self.m, self.curses
  local l = m.lanes[i]
  local w = self.w
  local count, busy, row, cls = m:cells(l, self.from, self.to, w)
  local selected = i == self.lane_sel
  local label = l.label
  local n = 0
  for k = 1, w do if count[k] > 0 then n = n + 1 end end
  self:put(y, 0, string.rep(" ", self.lw), 0)
  if (utf8.len(label) or #label) > self.lw then label = label:sub(1, utf8.offset(label, self.lw) - 1) end
  self:put(y, 0, label, 0, selected and c.REVERSE or (l.kind ~= "nvtx" and c.BOLD or 0))
  local span = self.to - self.from
  local sel_row = self.sel and self.sel.lane == l and self.sel.row or nil
  local x0 = self.lw + 1
  -- runs of columns with one look, each drawn with one call
  local k = 1
  local part_char = self.info.utf8 and "▌" or "|"
  while k <= w do
    local cnt, cl, r = count[k], cls[k], row[k]
    if cnt == 0 then
      local j = k
      while j < w and count[j + 1] == 0 do j = j + 1 end
      k = j + 1
    else
      local colw = edge(self.from, span, w, k) - edge(self.from, span, w, k - 1)
      local full = busy[k] * 2 >= colw
      -- a run of columns of one event (row r, covering each): room for its name
      local j = k
      if cnt == 1 and full then
        while j < w and row[j + 1] == r and count[j + 1] == 1 and busy[j + 1] * 2 >= colw do j = j + 1 end
      else
        while j < w and count[j + 1] > 0 and cls[j + 1] == cl and row[j + 1] ~= sel_row and r ~= sel_row and
              ((busy[j + 1] * 2 >= colw) == full) and not (count[j + 1] == 1 and full) do j = j + 1 end
      end
      local len = j - k + 1
      local name = (cnt == 1 and full and len >= 4) and m:name_of(l, r) or nil
      local cname = model.classes[cl + 1] and model.classes[cl + 1].name or "kernel"
      local text
      if name then
        name = name:gsub("[%c]", " ")
        text = name .. string.rep(" ", len)
        text = text:sub(1, len)   -- bytes; put() clips wide text at the screen edge, runs stay short
        if utf8.len(text) == nil then text = string.rep(" ", len) end
      elseif full then
        text = string.rep(self.color and " " or class_char[cname], len)
      else
        text = string.rep(part_char, len)
      end
      local attrs = (r == sel_row) and (c.BOLD | c.UNDERLINE) or 0
      if self.color then
        local pair = (full or name) and self.pair_bg[cl] or self.pair_fg[cl]
        self:put(y, x0 + k - 1, text, pair, attrs | ((r == sel_row) and c.REVERSE or 0))
      else
        self:put(y, x0 + k - 1, text, 0, attrs | ((name or r == sel_row) and c.REVERSE or 0))
      end
      k = j + 1
    end
  end
  if selected and self.cur then   -- the cursor on the selected lane
    local cc = self:col_of(self.cur)
    local ch = count[cc + 1] > 0 and (self.color and " " or "#") or "+"
    self:put(y, x0 + cc, ch, 0, c.REVERSE)
  end
  return n
end

-- The axis and the visible lanes, scrolled so the selected lane shows.
function App:draw_timeline()
  local m = self.m
  if not self.from then
    self:put(3, 2, self.open and fmt("opening %s...", self.opts.what or "the trace") or
                   self.loader and "loading..." or
                   "nothing to draw: this trace has no kernels, memcpy, memset or NVTX ranges", 0)
    return
  end
  self:axis()
  local nl = #m.lanes
  if self.lane_sel > nl then self.lane_sel = max(1, nl) end
  if self.lane_sel < self.top then self.top = self.lane_sel end
  if self.lane_sel >= self.top + self.nvis then self.top = self.lane_sel - self.nvis + 1 end
  for y = self.lanes_y0, self.lanes_y1 do
    local i = self.top + y - self.lanes_y0
    if i <= nl then self:lane_row(y, i) end
  end
  if nl == 0 then self:put(3, 2, "no events", 0) end
end

-- Lines of key=value pairs wrapped to width.
local function wrap_pairs(pairs_list, width)
  local lines, line = {}, ""
  for _, kv in ipairs(pairs_list) do
    local item = kv[1] .. "=" .. tostring(kv[2])
    if line ~= "" and #line + 2 + #item > width then
      lines[#lines + 1] = line
      line = ""
    end
    line = line == "" and item or (line .. "  " .. item)
  end
  if line ~= "" then lines[#lines + 1] = line end
  return lines
end

-- The details of the selected event as key=value lines (exact ns, with human units beside).
function App:detail_lines()
  local sel = self.sel
  if not self.m then return {} end
  if not sel then
    local l = self.m.lanes[self.lane_sel]
    if not l then return {"no lane"} end
    local n = self.from and self.m:count_in(l, self.from, self.to) or 0
    return {fmt("lane %s: %d events in the window (%s in the trace)%s", l.label:gsub("^%s+", ""), n,
                report.int(l.events), l.kind == "gpu" and "; enter selects the event at the cursor, n/p snap" or ""),
            self.m.multi and fmt("report r%d: %s", l.report, self.m.report_names[l.report + 1]) or nil}
  end
  local list = self.m:details(sel.lane, sel.row)
  local shown = {}
  for _, kv in ipairs(list) do
    local k, v = kv[1], kv[2]
    if k == "start" or k == "stop" or k == "api_start" then
      v = self.rel and fmt("%d(%s)", v, self:time_text(v)) or tostring(v)
    elseif k == "dur" or k == "gap_before" or k == "gap_after" or k == "api_dur" then
      v = fmt("%d(%s)", v, report.duration(v))
    end
    shown[#shown + 1] = {k, v}
  end
  -- the name first, then the fields that matter most, the NVTX stack and the demangled name last
  local by = {}
  for _, kv in ipairs(shown) do by[kv[1]] = kv end
  local order = {"dur", "start", "stop", "grid", "block", "device", "stream", "api", "api_tid", "thread",
                 "gap_before", "gap_after", "api_start", "api_dur", "kind", "bytes", "regs", "pid", "tid", "depth",
                 "corr", "report"}
  local first, rest, seen = {}, {}, {name = true, nvtx = true, demangled = true}
  for i, k in ipairs(order) do
    if by[k] then
      local list = i <= 12 and first or rest
      list[#list + 1] = by[k]
      seen[k] = true
    end
  end
  for _, kv in ipairs(shown) do if not seen[kv[1]] then rest[#rest + 1] = kv end end
  local lines = {}
  if by.name then lines[1] = "name=" .. by.name[2] end
  for _, line in ipairs(wrap_pairs(first, self.cols - 1)) do lines[#lines + 1] = line end
  if by.nvtx then lines[#lines + 1] = "nvtx=" .. by.nvtx[2] end
  for _, line in ipairs(wrap_pairs(rest, self.cols - 1)) do lines[#lines + 1] = line end
  if by.demangled and by.demangled[2] ~= (by.name and by.name[2]) then
    lines[#lines + 1] = "demangled=" .. by.demangled[2]
  end
  return lines
end

-- The bottom pane: a title bar and as many lines as fit.
function App:draw_pane(title, lines)
  self:bar(self.pane_y0 - 1, title)
  for i = 1, self.pane_h do
    local line = lines[i]
    if line then self:put(self.pane_y0 + i - 1, 0, line, 0) end
  end
end

-- The status line: the last message, the loading progress while loading (with `i`: the window,
-- cursor and last redraw in ns and ms).
function App:draw_status()
  local y = self.rows - 1
  local text = self.status or ""
  local progress = self:progress_text()
  self.progress_shown = progress
  if progress then text = text ~= "" and (text .. " | " .. progress) or progress end
  if self.show_info and self.from then
    local room = max(0, min(40, self.cols - 66))   -- the window and cursor stay on the line
    if (utf8.len(text) or #text) > room then text = room > 0 and (text:sub(1, utf8.offset(text, room) - 1) .. "~") or "" end
    text = (text ~= "" and (text .. "  ") or "") .. fmt("draws=%d window=%d..%d cursor=%d lane=%d%s%s", self.draws or 0, self.from, self.to, self.cur or 0,
               self.lane_sel, self.sel and fmt(" row=%d", self.sel.row) or "",
               self.last_ms and fmt(" redraw=%.2fms", self.last_ms) or "")
  end
  local right = "? keys  q quit"
  self:put(y, 0, text, 0)
  if #text + #right + 2 < self.cols then self:put(y, self.cols - #right, right, 0, self.curses.DIM) end
end

-- ---- tree and findings views -----------------------------------------------------------------

-- The visible rows of the tree: node ids in depth-first order, children of open nodes only.
function App:tree_rows()
  local T = self.m and self.m.tree
  if not T or T.empty then return {} end
  local out = {}
  local function visit(id)
    out[#out + 1] = id
    if self.tree_open[id] and T.kids[id] then
      -- children in nvtx.tree's order (by GPU time, then CPU time, then name)
      local kids = {}
      for _, k in ipairs(T.kids[id]) do kids[#kids + 1] = k end
      table.sort(kids, function(a, b) return T.index[a] < T.index[b] end)
      for _, k in ipairs(kids) do visit(k) end
    end
  end
  local roots = {}
  for _, r in ipairs(T.roots) do roots[#roots + 1] = r end
  table.sort(roots, function(a, b) return T.index[a] < T.index[b] end)
  for _, r in ipairs(roots) do visit(r) end
  return out
end

-- The NVTX tree view: nvtx.tree's rows (GPU and CPU time, inclusive and self, instances), indented.
function App:draw_tree()
  local T = self.m and self.m.tree
  if not T then   -- the loader computes it
    self:put(3, 2, self:waiting_text("tree"), 0)
    return
  end
  if T.empty then
    self:put(3, 2, "no NVTX ranges in this trace", 0)
    return
  end
  local nodes = T.nodes
  local rows = self:tree_rows()
  self.tree_list = rows
  if self.tree_sel > #rows then self.tree_sel = #rows end
  if self.tree_sel < 1 then self.tree_sel = 1 end
  local nvis = self.nvis
  if self.tree_sel < self.tree_top then self.tree_top = self.tree_sel end
  if self.tree_sel >= self.tree_top + nvis then self.tree_top = self.tree_sel - nvis + 1 end
  -- the columns: exact ns with `i` (NSL_TUI_INFO), else ms with separators; the self times (in the pane
  -- below) only where the names keep room
  local exact = self.show_info
  local cw = exact and 14 or 11
  local cols = {{"GPU Time", "gpu_time"}, {"GPU Self", "gpu_self"}, {"CPU Time", "cpu_time"}, {"CPU Self", "cpu_self"}}
  if not exact and self.cols < 4 * (cw + 1) + 10 + 40 then cols = {cols[1], cols[3]} end
  local unit = exact and " (ns)" or " (ms)"
  local parts = {}
  for j, col in ipairs(cols) do parts[j] = fmt("%" .. cw .. "s", col[1] .. unit) end
  self:put(1, 0, table.concat(parts, " ") .. fmt(" %9s  %s", "Instances", "Range"), 0, self.curses.BOLD)
  local function value(ns) return exact and fmt("%d", ns) or report.float(ns / 1e6, 3) end
  for y = self.lanes_y0, self.lanes_y1 do
    local k = self.tree_top + y - self.lanes_y0
    local id = rows[k]
    if id then
      local i = T.index[id]
      local mark = T.kids[id] and (self.tree_open[id] and "- " or "+ ") or "  "
      for j, col in ipairs(cols) do parts[j] = fmt("%" .. cw .. "s", value(nodes[col[2]][i])) end
      local line = table.concat(parts, " ") .. fmt(" %9s  %s%s%s", exact and fmt("%d", nodes.instances[i]) or
                   report.int(nodes.instances[i]), string.rep("  ", nodes.depth[i]), mark, nodes.name[i])
      self:put(y, 0, line, 0, k == self.tree_sel and self.curses.REVERSE or 0)
    end
  end
end

-- The selected node's numbers and, after `k`, the kernels launched directly inside it.
function App:tree_pane()
  local T = self.m and self.m.tree
  if not T or T.empty or not self.tree_list then return {} end
  local id = self.tree_list[self.tree_sel]
  if not id then return {} end
  local i = T.index[id]
  local n = T.nodes
  local lines = {
    "path=" .. n.path[i],
    fmt("gpu_time=%d(%s)  gpu_self=%d  cpu_time=%d(%s)  cpu_self=%d  instances=%d  ops=%d  ops_self=%d",
        n.gpu_time[i], report.duration(n.gpu_time[i]), n.gpu_self[i], n.cpu_time[i], report.duration(n.cpu_time[i]),
        n.cpu_self[i], n.instances[i], n.ops[i], n.ops_self[i]),
  }
  if self.tree_kernels and self.tree_kernels.id == id then
    local k = self.tree_kernels.t
    if not k then lines[#lines + 1] = "no GPU operations launched directly inside this range"
    else
      for r = 1, min(#k, self.pane_h - 2) do
        lines[#lines + 1] = fmt("  %8s ops %14s  %s", report.int(k.ops[r]), report.duration(k.gpu_time[r]), k.name[r])
      end
    end
  else
    lines[#lines + 1] = "enter: show an instance on the timeline   k: the kernels under it"
  end
  return lines
end

-- The findings view: diagnose's findings, largest cost first.
function App:draw_findings()
  local list = self.m and self.m.findings
  if not list then   -- the loader computes them
    self:put(3, 2, self:waiting_text("findings"), 0)
    return
  end
  self:put(1, 0, fmt("%-8s %12s  %-24s %s", "severity", "cost", "id", "message"), 0, self.curses.BOLD)
  if #list == 0 then
    self:put(3, 2, "diagnose found no problems", 0)
    return
  end
  if self.find_sel > #list then self.find_sel = #list end
  local nvis = self.nvis
  if self.find_sel < self.find_top then self.find_top = self.find_sel end
  if self.find_sel >= self.find_top + nvis then self.find_top = self.find_sel - nvis + 1 end
  for y = self.lanes_y0, self.lanes_y1 do
    local k = self.find_top + y - self.lanes_y0
    local f = list[k]
    if f then
      local line = fmt("%-8s %s  %s %s", f.severity, report.pad(f.cost_ns and report.duration(f.cost_ns) or "", 12, true),
                       report.pad(f.id or "", 24), f.message)
      self:put(y, 0, line, 0, k == self.find_sel and self.curses.REVERSE or 0)
    end
  end
end

-- The selected finding as findings.lines words it (times as the header shows them).
function App:findings_pane()
  if not (self.m and self.m.findings) then return {} end
  local list = self.m.findings
  local f = list[self.find_sel]
  if not f then return self.m.finding_notes or {} end
  local lines = {}
  for _, line in ipairs(findings_text.lines(f, function(ns) return self:time_text(ns) end)) do
    for _, part in ipairs(report.wrap(line, self.cols - 1)) do lines[#lines + 1] = part end
  end
  if f.where and f.where.from then lines[#lines + 1] = "enter: go to its place on the timeline" end
  return lines
end

-- The keys, the legend of event kinds and, for several reports, their r0, r1... names.
function App:draw_help()
  local y = 1
  for line in M.keys:gmatch("[^\n]+") do
    if y < self.rows - 1 then self:put(y, 0, line, 0) end
    y = y + 1
  end
  -- the legend: each kind of event as it is drawn
  if y < self.rows - 1 then
    local x = 2
    self:put(y, 0, "Legend", 0, self.curses.BOLD)
    x = 9
    for i, cl in ipairs(model.classes) do
      local sample = self.color and "  " or string.rep(class_char[cl.name], 2)
      self:put(y, x, sample, self.color and self.pair_bg[i - 1] or 0)
      self:put(y, x + 3, cl.label, 0)
      x = x + 5 + #cl.label
    end
    y = y + 1
  end
  if self.m and self.m.multi and y < self.rows - 1 then
    for r, name in ipairs(self.m.report_names) do
      if y < self.rows - 1 then self:put(y, 0, fmt("  r%d  %s", r - 1, name), 0) end
      y = y + 1
    end
  end
end

-- Draws the whole screen for the current view; returns the time it took in ms.
function App:draw()
  local c = self.curses
  local t0 = c.now()
  self.draws = (self.draws or 0) + 1
  self:layout()
  c.erase()
  self:header()
  local title, lines = "details", nil
  if self.view == "help" then
    self:draw_help()
  elseif self.view == "tree" then
    self:draw_tree()
    title, lines = "NVTX range", self:tree_pane()
  elseif self.view == "findings" then
    self:draw_findings()
    title, lines = "finding", self:findings_pane()
  else
    self:draw_timeline()
    if self.pane then title, lines = "output", self.pane
    else lines = self:detail_lines() end
  end
  if self.view ~= "help" then
    if self.pane and self.view ~= "timeline" then title, lines = "output", self.pane end
    local shown = {}
    local from = max(1, #lines - self.pane_h + 1)
    if title ~= "output" then from = 1 end
    for i = from, #lines do shown[#shown + 1] = lines[i] end
    self:draw_pane(title, shown)
  end
  self:draw_status()
  local t1 = c.now()
  c.refresh()
  local t2 = c.now()
  self.last_ms, self.last_refresh_ms = (t2 - t0) / 1e6, (t2 - t1) / 1e6   -- refresh: the write to the terminal
  return self.last_ms
end

-- ---- input -----------------------------------------------------------------------------

--- A line typed on the status row after prompt; nil when Esc leaves it.
function App:read_line(prompt, initial)
  local c = self.curses
  local buf = initial or ""
  while true do
    local y = self.rows - 1
    self:put(y, 0, string.rep(" ", self.cols), 0)
    local text = prompt .. buf
    local shown = text
    if utf8.len(shown) and utf8.len(shown) >= self.cols then shown = "<" .. text:sub(-(self.cols - 2)) end
    self:put(y, 0, shown, 0)
    c.cursor(true, y, min(self.cols - 1, utf8.len(shown) or #shown))
    c.refresh()
    local key = c.getch(self:key_timeout())
    if not key and self.loader then   -- loading goes on while the line is typed
      self.prompting = true
      local res = self:resume_loader()
      self.prompting = false
      if res == "quit" then
        c.cursor(false)
        return nil, "quit"
      end
    end
    if key == "interrupt" then
      c.cursor(false)
      return nil, "interrupt"
    elseif key == "enter" then
      c.cursor(false)
      return buf
    elseif key == "esc" then
      c.cursor(false)
      return nil
    elseif key == "backspace" then
      local n = utf8.len(buf)
      if n and n > 0 then buf = buf:sub(1, utf8.offset(buf, n) - 1) end
    elseif key == "resize" then
      self:draw()
    elseif key and #key >= 1 and not key:match("^%a%a+") and not key:match("^C%-") and not key:match("^key%d") then
      buf = buf .. key
    elseif key and (key == "up" or key == "down") then
      -- no history in the prompt
    end
  end
end

-- A time typed by the user: a duration with a unit (relative to the trace's start when relative
-- time is shown) or "@N" / a bare integer in absolute mode for trace-clock ns.
function App:parse_time(text)
  local abs = text:match("^@(%-?%d+)$")
  if abs then return math.tointeger(tonumber(abs)) end
  if not self.rel and text:match("^%-?%d+$") then return math.tointeger(tonumber(text)) end
  local ns, err = units.duration(text)
  if not ns then return nil, err end
  return self.origin + ns
end

-- Moves the window so t is inside it (centred when it was outside), keeping the zoom.
function App:show_time(t)
  if t < self.from or t >= self.to then
    local span = self.to - self.from
    self:set_window(t - span // 2, t - span // 2 + span)
  end
  self.cur = t
end

-- Selects the event of the selected lane under the cursor (else the first in the cursor's column).
function App:select_at_cursor()
  local l = self.m.lanes[self.lane_sel]
  if not l then return end
  local c = self:col_of(self.cur)
  local t0 = edge(self.from, self.to - self.from, self.w, c)
  local t1 = edge(self.from, self.to - self.from, self.w, c + 1)
  local r = self.m:at(l, self.cur)
  if not r then
    local _, _, row = self.m:cells(l, t0, max(t1, t0 + 1), 1)
    r = row[1] >= 0 and row[1] or nil
  end
  if r then
    self.sel = {lane = l, row = r}
    self.status = ""
  else
    self.sel = nil
    self.status = "no event at the cursor on this lane"
  end
end

-- Selects the next (dir > 0) or previous kernel of the selected lane (with the filter; on an NVTX lane
-- the next range) and
-- moves the cursor there, the window following when it is outside.
function App:snap(dir)
  local l = self.m.lanes[self.lane_sel]
  if not l then return end
  local from_t = self.cur
  if self.sel and self.sel.lane == l then from_t = (self.m:times(l, self.sel.row)) end
  local r = self.m:snap(l, from_t, dir)
  if not r then
    self.status = dir > 0 and "no later kernel on this lane" or "no earlier kernel on this lane"
    return
  end
  self.sel = {lane = l, row = r}
  self:show_time((self.m:times(l, r)))
  self.status = ""
end

-- Scales the window by num/den around the cursor, which keeps its place on the screen.
function App:zoom(factor_num, factor_den)
  local span = self.to - self.from
  local new = max(self.w, (span * factor_num) // factor_den)
  local cur = self.cur
  local from = cur - ((cur - self.from) * factor_num) // factor_den
  self:set_window(from, from + new)
  self.cur = cur
end

-- Moves the window (and the cursor) by num/den of its span, the same step either way.
function App:pan(num, den)
  local span = self.to - self.from
  local d = (span * math.abs(num)) // den   -- the same step both ways
  if num < 0 then d = -d end
  self:set_window(self.from + d, self.to + d)
  self.cur = min(max(self.cur + d, self.from), self.to - 1)
end

-- Evaluates a line of Lua against trace, as the REPL does: an expression's value, or a statement.
function App:eval(line)
  local out = {}
  local env = setmetatable({trace = self.trace, nsl = nsl, tui = self:api(),
                            print = function(...)
                              local parts = {}
                              for i = 1, select("#", ...) do parts[#parts + 1] = tostring((select(i, ...))) end
                              for s in (table.concat(parts, "\t") .. "\n"):gmatch("(.-)\n") do out[#out + 1] = s end
                            end}, {__index = _G})
  local chunk, err = load("return " .. line, "=tui", "t", env)
  if not chunk then chunk, err = load(line, "=tui", "t", env) end
  if not chunk then
    out[#out + 1] = "error: " .. err
  else
    local res = table.pack(xpcall(chunk, debug.traceback))
    if not res[1] then
      local msg = tostring(nsl.is_error(res[2]) and res[2].message or res[2])
      out[#out + 1] = "error: " .. (msg:match("^[^\n]*") or msg)
    else
      local show = require("nsl.engine.repl").show
      for i = 2, res.n do
        for s in (show(res[i]) .. "\n"):gmatch("(.-)\n") do out[#out + 1] = s end
      end
    end
  end
  local lines = {": " .. line}
  for _, s in ipairs(out) do lines[#lines + 1] = s end
  return lines
end

--- What the `:` prompt sees as `tui`: the window, the cursor, the selection, and ways to move them.
function App:api()
  local app = self
  return {
    window = function() return app.from, app.to end,
    cursor = function() return app.cur end,
    origin = function() return app.origin end,   -- the trace's start: relative times count from it
    go = function(from, to)
      app:set_window(from, to or (from + (app.to - app.from)))
      app.cur = app.from + (app.to - app.from) // 2
    end,
    selected = function()
      if not app.sel then return nil end
      local _, rec = app.m:details(app.sel.lane, app.sel.row)
      return rec
    end,
    lanes = function()
      local list = {}
      for i, l in ipairs(app.m and app.m.lanes or {}) do list[i] = l.label end
      return list
    end,
  }
end

-- Timeline keys.
function App:key_timeline(key)
  local m = self.m
  if not self.from or not m then return end
  local nl = #m.lanes
  local span = self.to - self.from
  if key == "right" or key == "left" then
    local c = self:col_of(self.cur) + (key == "right" and 1 or -1)
    if c >= self.w then self:pan(1, 4) c = self:col_of(self.cur) + 1 end
    if c < 0 then self:pan(-1, 4) c = max(0, self:col_of(self.cur) - 1) end
    self.cur = edge(self.from, self.to - self.from, self.w, c)
  elseif key == "d" or key == "l" or key == "S-right" then self:pan(1, 8)
  elseif key == "a" or key == "h" or key == "S-left" then self:pan(-1, 8)
  elseif key == "]" then self:pan(1, 1)
  elseif key == "[" then self:pan(-1, 1)
  elseif key == "+" or key == "=" or key == "w" then self:zoom(1, 2)
  elseif key == "-" or key == "s" then self:zoom(2, 1)
  elseif key == "0" or key == "home" then self:whole()
  elseif key == "down" or key == "j" then self.lane_sel = min(nl, self.lane_sel + 1)
  elseif key == "up" or key == "k" then self.lane_sel = max(1, self.lane_sel - 1)
  elseif key == "pgdn" then self.lane_sel = min(nl, self.lane_sel + self.nvis)
  elseif key == "pgup" then self.lane_sel = max(1, self.lane_sel - self.nvis)
  elseif key == "n" then self:snap(1)
  elseif key == "p" then self:snap(-1)
  elseif key == "enter" then self:select_at_cursor()
  elseif key == "e" then
    if self.sel then
      local s, e = m:times(self.sel.lane, self.sel.row)
      local pad = max(1, (e - s) // 4)
      self:set_window(s - pad, e + pad)
      self.cur = s
    end
  elseif key == "t" then self.rel = not self.rel
  elseif key == "N" then
    m.names = m.names == "short" and "demangled" or "short"
    if m.filter then m:apply_filter() end
  elseif key == "/" then
    local now = m.filter and m.filter ~= "" and ("; now /" .. m.filter .. "/") or ""
    local text = self:read_line(fmt("filter (regex, empty: none%s): /", now))   -- a new expression, typed afresh
    if text then
      local ok, err = m:set_filter(text, m.min_dur)
      self.status = ok and (text ~= "" and fmt("filter /%s/", text) or "filter cleared") or ("bad expression: " .. err)
    end
  elseif key == "m" then
    local text = self:read_line("minimum duration (e.g. 10us, 0: none): ")
    if text then
      local ns, err = units.duration(text)
      if ns then
        m:set_filter(m.filter, ns)
        self.status = ns > 0 and fmt("events of at least %s", report.duration(ns)) or "no minimum duration"
      else self.status = err end
    end
  elseif key == "g" then
    local text = self:read_line(self.rel and "go to time (from the trace's start, e.g. 1.5ms; @NS absolute): "
                                          or "go to time (ns on the trace's clock): ")
    if text then
      local t, err = self:parse_time(text)
      if t then
        self:show_time(t)
        local r = m.lanes[self.lane_sel] and m:at(m.lanes[self.lane_sel], t)
        if r then self.sel = {lane = m.lanes[self.lane_sel], row = r} end
        self.status = ""
      else self.status = err end
    end
  elseif key == "b" then
    self.bookmarks[#self.bookmarks + 1] = self.cur
    table.sort(self.bookmarks)
    self.status = fmt("bookmark %d at %s", #self.bookmarks, self:time_text(self.cur))
  elseif key == "'" then
    if #self.bookmarks == 0 then self.status = "no bookmarks (b sets one)"
    else
      local t
      for _, b in ipairs(self.bookmarks) do if b > self.cur then t = b break end end
      t = t or self.bookmarks[1]
      self:show_time(t)
      self.status = fmt("bookmark at %s", self:time_text(t))
    end
  elseif key == "B" then
    self.bookmarks = {}
    self.status = "bookmarks cleared"
  elseif key == "{" then
    self.range_start = self.cur
  elseif key == "}" then
    self.range_stop = self.cur
  elseif key == "z" then
    if self.range_start and self.range_stop and self.range_stop > self.range_start then
      self:set_window(self.range_start, self.range_stop)
      self.cur = self.range_start
    else self.status = "set a range first: { at its start, } at its end" end
  elseif key == "esc" then
    self.pane = nil
    self.sel = nil
    self.status = ""
  end
  local _ = span
end

-- Tree view keys: move, expand and collapse, `k` kernels, enter shows the next instance.
function App:key_tree(key)
  local T = self.m and self.m.tree
  if not T or T.empty then return end
  local rows = self.tree_list or self:tree_rows()
  local id = rows[self.tree_sel]
  if key == "down" or key == "j" then self.tree_sel = min(#rows, self.tree_sel + 1)
  elseif key == "up" then self.tree_sel = max(1, self.tree_sel - 1)
  elseif key == "pgdn" then self.tree_sel = min(#rows, self.tree_sel + self.nvis)
  elseif key == "pgup" then self.tree_sel = max(1, self.tree_sel - self.nvis)
  elseif (key == "right" or key == "+" or key == " ") and id then
    if T.kids[id] then self.tree_open[id] = not self.tree_open[id] or key ~= " " end
  elseif (key == "left" or key == "-") and id then
    if self.tree_open[id] then self.tree_open[id] = nil
    else
      local p = T.nodes.parent[T.index[id]]
      for k, other in ipairs(rows) do if other == p then self.tree_sel = k end end
    end
  elseif key == "k" and id then
    self.tree_kernels = {id = id, t = self.m:node_kernels(id)}
  elseif key == "enter" and id then
    local list = self.m:node_rows(id)
    if #list == 0 then return end
    local k = (self.instance[id] or 0) % #list + 1
    self.instance[id] = k
    local r = list[k]
    local nv = self.trace.nvtx
    local s, e = nv.start[r + 1], nv.stop[r + 1]
    if not self.m.nvtx then self.status = "NVTX lanes are still loading" return end
    local pad = max(1, (e - s) // 10)
    self:set_window(s - pad, e + pad)
    self.cur = s
    -- the lane of its thread and depth
    local lane_id = self.m.nvtx.lane[r + 1]
    for i, l in ipairs(self.m.lanes) do
      if l.kind == "nvtx" and l.id == lane_id then
        self.lane_sel = i
        self.sel = {lane = l, row = r}
      end
    end
    self.view = "timeline"
    self.status = fmt("instance %d of %d of %s", k, #list, T.nodes.name[T.index[id]])
  end
end

-- Findings view keys: move; enter goes to the finding's window and lane.
function App:key_findings(key)
  local list = self.m and self.m.findings or {}
  if key == "down" or key == "j" then self.find_sel = min(#list, self.find_sel + 1)
  elseif key == "up" or key == "k" then self.find_sel = max(1, self.find_sel - 1)
  elseif key == "enter" then
    local f = list[self.find_sel]
    if not f then return end
    local w = f.where or {}
    if not w.from or not self.from then
      self.status = "this finding has no time window"
      return
    end
    local to = w.to or w.from + 1
    local pad = max(1, (to - w.from) // 10)
    self:set_window(w.from - pad, to + pad)
    self.cur = w.from
    local i = self.m:lane_of(w)
    if i then self.lane_sel = i end
    self.sel = nil
    self.view = "timeline"
    self.status = fmt("%s: %s", f.id or f.severity, f.message)
  end
end

-- One key; returns "quit" to leave.
function App:on_key(key)
  if key == "q" or key == "interrupt" or key == "C-c" then return "quit" end
  if key == "resize" then return end
  if self.view == "help" then
    self.view = self.prev_view or "timeline"
    return
  end
  -- the `:` output (or a key's error) stays until the next key: then the details come back
  if self.pane and key ~= ":" and key ~= "i" and key ~= "c" then self.pane = nil end
  if key == "?" then
    self.prev_view = self.view
    self.view = "help"
  elseif key == "tab" then
    self.view = ({timeline = "tree", tree = "findings", findings = "timeline"})[self.view] or "timeline"
    self:prepare_view()
  elseif key == "T" then
    self.view = "tree"
    self:prepare_view()
  elseif key == "F" then
    self.view = "findings"
    self:prepare_view()
  elseif key == "i" then
    self.show_info = not self.show_info
  elseif key == "c" then
    if self.info.colors >= 8 then
      self.opts.no_color = not self.opts.no_color
      self:setup_colors()
    end
  elseif key == ":" then
    local line = self:read_line(": ")
    if line and line ~= "" then
      self.pane = self:eval(line)
    end
  elseif self.view == "tree" then self:key_tree(key)
  elseif self.view == "findings" then self:key_findings(key)
  else self:key_timeline(key) end
end

-- ---- loading ---------------------------------------------------------------------------

local POLL_MS = 40   -- how long getch waits while background work runs

-- A count in the units of progress: 3.2 M rows, 12.5 MiB.
local function amount(n, unit)
  if unit == "B" then return report.bytes(n) end
  local text
  if n >= 1e9 then text = fmt("%.1f G", n / 1e9)
  elseif n >= 1e6 then text = fmt("%.1f M", n / 1e6)
  elseif n >= 1e4 then text = fmt("%.1f k", n / 1e3)
  else text = fmt("%d", n) end
  return unit ~= "" and (text .. " " .. unit) or text
end

--- The loading progress as the status line shows it: the work in flight
-- (nsl.progress_status) or the step's own label, and the step:
-- "loading nvtx: 3.2 M of 8.1 M rows, 40%, 1.2 s; step 5 of 7".  nil when
-- nothing loads.
function App:progress_text()
  if not self.loader then return nil end
  local p = nsl.progress_status()
  local text
  if p then
    local unit = p.unit or ""
    if (p.total or 0) > 0 then
      local done = math.min(p.done, p.total)
      text = fmt("%s: %s of %s, %d%%, %.1f s", p.what, amount(done, unit == "B" and unit or ""), amount(p.total, unit),
                 floor(done * 100 / p.total), p.elapsed or 0)
    else
      text = fmt("%s: %s, %.1f s", p.what, amount(p.done or 0, unit), p.elapsed or 0)
    end
  elseif self.task_running then
    return self.task_running == "tree" and "projecting the NVTX ranges onto the GPU..." or
           "running diagnose's checks..."
  else
    text = self.step_label and (self.step_label:find("^opening") and self.step_label or
                                ("loading " .. self.step_label)) or "loading"
  end
  if self.step >= 1 and self.step <= self.steps_total then
    text = fmt("%s; step %d of %d", text, self.step, self.steps_total)
  end
  return text, p
end

--- What a view that needs the loaded trace says until it can be drawn:
-- "waiting for the NVTX ranges (40%)", or the word of the work computing it.
function App:waiting_text(task)
  if self.task_running == task then return (self:progress_text()) end
  local what = task == "tree" and "the NVTX ranges" or "the trace to load"
  local _, p = self:progress_text()
  if p and (p.total or 0) > 0 and (task ~= "tree" or self.step_label == "NVTX ranges") then
    return fmt("waiting for %s (%d%%)", what, floor(math.min(p.done, p.total) * 100 / p.total))
  end
  if self.step >= 1 and self.step <= self.steps_total then
    return fmt("waiting for %s (step %d of %d)", what, self.step, self.steps_total)
  end
  return fmt("waiting for %s", what)
end

-- The loader (a coroutine, resumed between keys by resume_loader): the open when the trace comes
-- from a job, then the model's stages, then what the views asked for.  It yields "wait" while
-- background work runs, "busy" between two pieces of main-thread work and "stage" when something
-- new can be drawn; an open that fails ends it with self.open_error set.
function App:load_all()
  local c = self.curses
  if not self.m then
    self.step, self.step_label = 1, fmt("opening %s", self.opts.what or "the trace")
    local trace, err = model.await(self.open, self)
    self.open = nil
    if trace and self.opts.select then   -- --report, --from, --to, --device: as nsl.open_selected applies them
      trace, err, self.open_code = nsl.select(trace, self.opts.paths, self.opts.select)
    end
    if not trace then
      self.open_error = err or "cannot open the trace"
      return
    end
    self.trace = trace
    self.m = model.new(trace, {max_depth = self.opts.max_depth})
    coroutine.yield("stage")
  end
  local first = self.step
  local stages = self.m:stages()
  for i, stage in ipairs(stages) do
    self.step, self.step_label = first + i, stage.label
    stage.run()
    if not self.from then self:whole() end
    if i < #stages then coroutine.yield("stage") end   -- the last one ends with the loader
  end
  self.step = self.steps_total + 1
  self.origin = require("nsl.window").known_origin(self.trace) or self.m.origin or self.origin
  self:whole_if_untouched()
  local apart = require("nsl.window").disjoint(self.trace)   -- stacked reports far apart: say so
  self.status = fmt("%d lanes; ? for the keys%s%s", #self.m.lanes, apart and (" | " .. apart) or "",
                    self.last_warning and (" | " .. self.last_warning) or "")
  self:log("full_screen ms=%.3f", (c.now() - self.t0) / 1e6)
  self:run_tasks()
end

-- The views' work, in the order asked: the NVTX tree (its columns read in
-- the background, then computed) and diagnose's findings.
function App:run_tasks()
  while #self.tasks > 0 do
    local task = table.remove(self.tasks, 1)
    self.task_running = task
    if task == "tree" then
      self.step_label = "the NVTX tree's columns"
      self.m:load_tree_columns()
      coroutine.yield("stage")
      self.step_label = "the NVTX tree"
      self.m:load_tree()
    else
      self.step_label = "diagnose's findings"
      coroutine.yield("busy")   -- the word on the screen before the work
      self.m:load_findings()
    end
    self.task_running, self.tasks[task] = nil, nil
    if #self.tasks > 0 then coroutine.yield("stage") end
  end
end

-- A view that needs the tree or the findings: asks the loader for them (a new loader when the
-- first one has ended).
function App:prepare_view()
  local task = (self.view == "tree" or self.view == "findings") and self.view or nil
  if not task or (self.m and self.m[task]) or self.tasks[task] then return end
  self.tasks[task] = true
  self.tasks[#self.tasks + 1] = task
  if not self.loader then self.loader = coroutine.create(function() return self:run_tasks() end) end
end

-- After loading: the whole span again, unless the user has moved already.
function App:whole_if_untouched()
  if not self.touched then self:whole() end
end

-- Runs the loader until it yields: a slice of main-thread work, timed (NSL_TUI_LOG gets each
-- stage's time and its worst slice).  A stage that ends redraws the screen; else the status line
-- shows the progress when its text changed (not while a prompt is on it).  Returns "quit" when
-- the TUI must end: the open failed (self.open_error), the loader failed (self.fail, its
-- message), or a Ctrl-C stopped it.
function App:resume_loader()
  local c = self.curses
  local co = self.loader
  local t0 = c.now()
  if not self.stage_t0 then self.stage_t0, self.slices, self.worst = t0, 0, 0 end
  local ok, what = coroutine.resume(co)
  local ms = (c.now() - t0) / 1e6
  self.slices, self.worst = self.slices + 1, max(self.worst, ms)
  if self.log_file then   -- a long slice: where it began (the last one's end) and ended
    local at = "end"
    if ok and coroutine.status(co) ~= "dead" then
      local i = debug.getinfo(co, 2, "Sl")   -- 0: yield, 1: model.await or pause, 2: their caller
      at = i and fmt("%s:%d", i.short_src:match("[^/]*$"), i.currentline) or "?"
    end
    if ms > 20 then
      self:log("slow_slice stage=%q ms=%.3f from=%s to=%s", self.step_label or "", ms, self.slice_at or "start", at)
    end
    self.slice_at = at
  end
  self.busy = ok and what == "busy"
  if not ok then
    self.loader = nil
    if tostring(what):find("interrupted", 1, true) then return "quit" end
    self.fail = nsl.is_error(what) and what.message or debug.traceback(co, tostring(what))
    return "quit"
  end
  local dead = coroutine.status(co) == "dead"
  if what == "stage" or dead then
    self:log("loaded stage=%q ms=%.3f slices=%d worst_slice_ms=%.3f", self.step_label or "",
             (c.now() - self.stage_t0) / 1e6, self.slices, self.worst)
    self.stage_t0 = nil
  end
  if dead then self.loader = nil end
  if self.open_error then return "quit" end
  if what == "stage" or dead then
    self:draw()
  elseif not self.prompting then
    local text = self:progress_text()
    if text ~= self.progress_shown then
      -- a view waiting for the loader says how far it got: the whole screen; else the status line
      if (self.view == "tree" or self.view == "findings") and not (self.m and self.m[self.view]) then self:draw()
      else self:redraw_status() end
    end
  end
end

-- The status line alone, redrawn (the loading progress): the rest of the screen stays.
function App:redraw_status()
  self:layout()
  self:put(self.rows - 1, 0, string.rep(" ", self.cols), 0)
  self:draw_status()
  self.curses.refresh()
end

-- Takes the library's warnings given since the last call (kept off the screen while it runs) onto
-- the status line (unless quiet); they are printed again on leaving.
function App:take_warnings(quiet)
  local list = self.curses.warnings and self.curses.warnings()
  if not list or #list == 0 then return end
  for _, w in ipairs(list) do self.warnings[#self.warnings + 1] = w end
  if quiet then return end
  self.last_warning = "warning: " .. list[#list] .. (#list > 1 and fmt(" (and %d more)", #list - 1) or "")
  self.status = self.last_warning
  self:draw()
end

-- How long the next getch waits: not at all while the loader has main-thread work ready, a short
-- poll while background work runs, else a while (Ctrl-C is checked between).
function App:key_timeout()
  if not self.loader then return 250 end
  return self.busy and 0 or POLL_MS
end

-- The loop: the first screen at once, then keys; the loader runs between them until it ends
-- (and again when a view asks for the tree or the findings).  Returns when the user quits, or
-- when the open failed (self.open_error).
function App:main()
  local c = self.curses
  self:setup_colors()
  self:draw()
  self:log("first_screen ms=%.3f", (c.now() - self.t0) / 1e6)
  local last_resume = c.now()
  while true do
    local key = c.getch(self:key_timeout())
    if key then
      local t0 = c.now()
      local from, to, cur = self.from, self.to, self.cur
      local ok, res = pcall(self.on_key, self, key)
      if not ok then
        if tostring(res):find("interrupted", 1, true) then self.status = "interrupted"
        else self.pane = {"error: " .. tostring(res):match("^[^\n]*")} end
      elseif res == "quit" then
        return
      end
      if self.open_error or self.fail then return end
      if from and (self.from ~= from or self.to ~= to or self.cur ~= cur) then self.touched = true end   -- moved
      local ms = self:draw()
      self:log("redraw key=%s ms=%.3f total_ms=%.3f at=%d loading=%d from=%d to=%d refresh_ms=%.3f", key, ms,
               (c.now() - t0) / 1e6, c.now(), self.loader and 1 or 0, self.from or 0, self.to or 0,
               self.last_refresh_ms or 0)
    elseif not self.loader and c.interrupted() == "idle" then
      return
    end
    self:take_warnings()
    -- the loader: when no key came, or at least every poll while keys keep coming
    if self.loader and (not key or (c.now() - last_resume) >= POLL_MS * 1000000) then
      last_resume = c.now()
      if self:resume_loader() == "quit" then return end
    end
  end
end

--- Runs the TUI until the user quits; the terminal is restored whatever
-- happens.  trace: the trace, or nil to open opts.paths (as nsl.open) on a
-- thread of its own behind the first screen, once the terminal is claimed
-- (opts.what names them: "opening WHAT").  opts: no_color, max_depth, t0
-- (ns when nsl started, for the first-screen timing).  Returns true; or
-- nil, message and "open" when the open failed (message as nsl.open gives
-- it); or nil and a message.  A quit while loading cancels the work in
-- flight (an nsys export is killed).
function M.run(trace, opts)
  opts = opts or {}
  if not nsl.curses then return nil, "this nsl was built without ncurses: nsl tui is not available" end
  opts.t0 = opts.t0 or nsl.curses.now()
  local iok, info = pcall(nsl.curses.init)
  if not iok then
    nsl.curses.done()
    return nil, (tostring(info):gsub("^[^:]*:%d+: ", ""))
  end
  -- the open starts once the terminal is claimed: its warnings come to the status line
  local sok, job = true, nil
  if not trace then sok, job = pcall(nsl.background, "open", opts.paths) end
  local open <close> = sok and job or nil   -- cancelled on leaving, whatever happens
  if not sok then
    nsl.curses.done()
    return nil, nsl.is_error(job) and job.message or tostring(job)
  end
  opts.open = open
  local app = new_app(trace, opts)
  app.info = info
  local ok, err = xpcall(App.main, function(e) return nsl.is_error(e) and e or debug.traceback(e) end, app)
  if not ok and tostring(nsl.is_error(err) and err.message or err):find("interrupted", 1, true) then
    ok = true   -- Ctrl-C during a slice of loading: a quit
  end
  -- the work in flight: the open, a table's load, an index
  if app.open then app.open:cancel() end
  if app.job then app.job:cancel() end
  if app.m and app.m.job then app.m.job:cancel() end
  app:take_warnings(true)
  nsl.curses.done()
  for _, w in ipairs(app.warnings) do io.stderr:write("nsl: warning: ", w, "\n") end
  if app.log_file then app.log_file:close() end
  if app.open_error then return nil, app.open_error, "open", app.open_code end
  if app.fail then return nil, app.fail end
  if not ok then return nil, nsl.is_error(err) and err.message or tostring(err) end
  return true
end

return M
