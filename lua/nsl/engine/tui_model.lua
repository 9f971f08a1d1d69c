-- nsl.engine.tui_model -- what `nsl tui` shows, without the terminal: the lanes
-- of a timeline (one per GPU stream with kernels, NCCL kernels, memcpy by
-- direction and memset; on nsys-jax archives, which keep no CUDA activity,
-- the XLA modules and their thunks projected onto each GPU (the archive's
-- nvtx_gpu_proj_trace: a lane per device and nesting depth); NVTX ranges
-- per thread on a lane per nesting depth;
-- reports one after the other on the trace's aligned clock), indexed in C
-- for level-of-detail summaries per character column (nsl.lod), the name
-- filter, the details of one event, the NVTX tree (nsl.nvtx's projection
-- and tree, as the nvtx analysis prints it) and the findings of diagnose.
-- It holds no analysis of its own: every number comes from the tables and
-- from the library's analyses.
-- The long work (reading columns, nesting the NVTX ranges, indexing) runs on
-- threads of its own (nsl.background); run inside a coroutine, each stage yields
-- while it waits, so the TUI reads keys and redraws meanwhile.
--   local m = model.new(trace)
--   for _, stage in ipairs(m:stages()) do stage.run() end   -- loads, in steps
--   local count, busy, row, class = m:cells(lane, from, to, ncols)
local nsl = require("nsl")
local plot = require("nsl.plot")
local nvtx = require("nsl.nvtx")
local report = require("nsl.report")
local gpu_ops = require("nsl.gpu_ops")

local M = {}

local fmt = string.format

--- The kinds of events and their class ids (plot.timeline_classes: nsl.gpu_ops.classes, then NVTX ranges).
M.classes = plot.timeline_classes
local CLASS = {}
for i, c in ipairs(M.classes) do CLASS[c.name] = i - 1 end
M.CLASS = CLASS

local gpu_tables = gpu_ops.tables

local Model = {}
Model.__index = Model

--- model.await(job [, owner]) -> the results of job (from nsl.background).  Inside
-- a coroutine it yields "wait" until the job is done, owner.job naming the
-- job meanwhile (so that a quit can cancel it); elsewhere it simply waits.
function M.await(job, owner)
  if coroutine.isyieldable() then
    if owner then owner.job = job end
    while not job:done() do coroutine.yield("wait") end
    if owner then owner.job = nil end
  end
  return job:wait()
end

-- Inside a coroutine: yields "busy" between two pieces of work on the main
-- thread, so that keys are read between them; elsewhere nothing.
local function pause()
  if coroutine.isyieldable() then coroutine.yield("busy") end
end

--- model.new(trace, opts) -> a model with nothing loaded yet.  opts.max_depth:
-- NVTX nesting levels shown per thread (8).
function M.new(trace, opts)
  opts = opts or {}
  local m = setmetatable({trace = trace, lanes = {}, max_depth = opts.max_depth or 8, names = "short",
                          min_dur = 0, filter = nil, loaded = {}}, Model)
  m.report_names = trace.reports.name:totable()
  m.multi = trace:nreports() > 1
  return m
end

--- The loading steps, in order: {label, run()}: each table in one scan,
-- then its lanes; the GPU first.  (No row counts beforehand: counting a
-- table is a scan of its own.)  Run in a coroutine, each step yields while
-- its background work runs and between its pieces of main-thread work.
function Model:stages()
  local list = {}
  for i, s in ipairs(M.stage_list) do
    list[i] = {label = s[1], run = function() self[s[2]](self, s[3]) end}
  end
  return list
end

--- The stages: label, the method that runs it, its argument.
M.stage_list = {{"kernels", "load_gpu_table", "kernels"}, {"memcpy", "load_gpu_table", "memcpy"},
                {"memset", "load_gpu_table", "memset"}, {"the GPU lanes", "load_gpu"},
                {"NVTX ranges", "load_nvtx_table"}, {"the NVTX lanes", "load_nvtx"},
                {"the trace's start", "load_origin"}}

--- The trace's start, the origin every printed time counts from (as
-- diagnose, gaps and the other analyses count): the earliest event of the
-- event tables (window.span), whose start and stop columns are read in the
-- background (the CUDA API table is not one of the lanes).  Sets m.origin.
function Model:load_origin()
  local window = require("nsl.window")
  for _, name in ipairs(window.event_tables) do
    M.await(nsl.background("load", self.trace[name], {"start", "stop"}), self)
  end
  self.origin = (window.span(self.trace))
end

--- The trace's span over the loaded lanes: lo, hi (nil before any).
function Model:span()
  local lo, hi
  for _, key in ipairs{"gpu", "xla", "nvtx"} do
    local l = self[key]
    if l then
      local a, b = l.lod:extent()
      if a and (not lo or a < lo) then lo = a end
      if b and (not hi or b > hi) then hi = b end
    end
  end
  return lo, hi
end

-- Sorts the lanes: by report, GPU lanes (CUDA streams, then XLA ranges) before NVTX lanes, each kind
-- in its own order.
local kind_order = {gpu = 1, xla = 2, nvtx = 3}
local function order_lanes(lanes)
  for i, l in ipairs(lanes) do l.pos = i end
  table.sort(lanes, function(a, b)
    if a.report ~= b.report then return (a.report or -1) < (b.report or -1) end
    if a.kind ~= b.kind then return kind_order[a.kind] < kind_order[b.kind] end
    return a.pos < b.pos
  end)
end

-- The columns of GPU table name the lanes read.
local function gpu_columns(name)
  local want = {"report", "pid", "device", "stream", "start", "stop", "corr"}
  if name == "kernels" then want[#want + 1] = "name" elseif name == "memcpy" then want[#want + 1] = "kind" end
  return want
end

--- Loads the columns of GPU table name (kernels, memcpy, memset) the lanes
-- need, in one scan on a thread of its own (nothing to read when loaded).
function Model:load_gpu_table(name)
  M.await(nsl.background("load", self.trace[name], gpu_columns(name)), self)
end

--- Puts kernels, memcpy and memset one after the other in one table G
-- (nsl.gpu_ops.table: report, device, stream, start, stop, class; row r of G
-- is row r - first[src] of gpu_tables[src]: see gpu_source) and indexes it
-- by lane (report, device, stream) with nsl.lod.
function Model:load_gpu()
  local trace = self.trace
  local first, total = {}, 0
  for _, name in ipairs(gpu_tables) do
    self:load_gpu_table(name)   -- loaded already when run in stages
    first[#first + 1] = total
    total = total + #trace[name]
  end
  pause()
  local G = gpu_ops.table(trace, {columns = {"report", "device", "stream", "start", "stop"}, class = true})
  pause()
  if #G == 0 then   -- no CUDA activity: an nsys-jax archive's XLA ranges, if any
    self.loaded.gpu = true
    self:load_xla()
    return
  end
  local lane, groups = M.await(nsl.background("nest_lanes", nil, nil, {G.report, G.device, G.stream}, 0, 1), self)
  local lod = M.await(nsl.background("lod", G.start, G.stop, lane, G.class, #groups), self)
  self.gpu = {G = G, first = first, lane = lane, lod = lod, full = lod}
  for j = 1, #groups do
    local r = groups.row[j] + 1
    local rep, device, stream = G.report[r], G.device[r], G.stream[r]
    self.lanes[#self.lanes + 1] = {
      kind = "gpu", lod_key = "gpu", id = j - 1, report = rep, device = device, stream = stream,
      events = groups.count[j],
      label = fmt("%sGPU%s s%s", self.multi and fmt("r%d ", rep) or "",
                  tostring(device), tostring(stream))}
  end
  order_lanes(self.lanes)
  self.loaded.gpu = true
  self:apply_filter()
end

--- nsys-jax archives: the NVTX ranges projected onto the GPU (XLA modules
-- and their thunks; trace.gpu_ranges), a lane per (report, device) and
-- nesting depth, named by the module or the HLO operation.  Nothing for
-- other traces.  Part of the GPU lanes' stage.
function Model:load_xla()
  local g = self.trace.gpu_ranges
  if #g == 0 then
    self.loaded.xla = true
    return
  end
  M.await(nsl.background("load", g, {"report", "start", "stop", "text", "pid", "tid"}), self)
  pause()
  -- the device of each launching thread, as nsys-jax finds it; -1 unknown
  local frames = require("nsl.jax.frames")
  local device = frames.range_devices(self.trace, g)
  local lane, groups = M.await(nsl.background("nest_lanes", g.start, g.stop, {g.report, device}, 0, self.max_depth),
                               self)
  local nlanes = 0
  for j = 1, #groups do nlanes = math.max(nlanes, groups.first_lane[j] + groups.lanes[j]) end
  local lod = M.await(nsl.background("lod", g.start, g.stop, lane, nsl.rep(CLASS.kernel, #g), nlanes), self)
  pause()
  local name = frames.range_names(g.text)
  self.xla = {g = g, device = device, lane = lane, lod = lod, full = lod, name = name}
  for j = 1, #groups do
    local r = groups.row[j] + 1
    local rep, dev = g.report[r], device[r]
    for d = 0, groups.lanes[j] - 1 do
      self.lanes[#self.lanes + 1] = {
        kind = "xla", lod_key = "xla", id = groups.first_lane[j] + d, report = rep, device = dev, depth = d,
        events = lod:count(groups.first_lane[j] + d),
        label = d > 0 and fmt("  depth %d", d) or
                fmt("%sGPU%s XLA", self.multi and fmt("r%d ", rep) or "", dev >= 0 and tostring(dev) or "?")}
    end
  end
  order_lanes(self.lanes)
  self.loaded.xla = true
  self:apply_filter()
end

local nvtx_columns = {"report", "pid", "tid", "start", "stop", "text", "domain"}

--- Loads the NVTX columns the lanes need, in one scan on a thread of its own.
function Model:load_nvtx_table()
  M.await(nsl.background("load", self.trace.nvtx, nvtx_columns), self)
end

--- Indexes the NVTX ranges with nsl.lod: a lane per (report, pid, tid) and
-- nesting depth (at most max_depth; nsl.nest_lanes); marks and ranges that
-- never ended take no part.
function Model:load_nvtx()
  local trace = self.trace
  local nv = trace.nvtx
  self:load_nvtx_table()   -- one scan (none when it ran as a stage); the row count comes with it
  if #nv == 0 then
    self.loaded.nvtx = true
    return
  end
  local keys = {nv.report, nv.pid, nv.tid}
  local lane, groups = M.await(nsl.background("nest_lanes", nv.start, nv.stop, keys, 0, self.max_depth), self)
  local nlanes = 0
  for j = 1, #groups do nlanes = math.max(nlanes, groups.first_lane[j] + groups.lanes[j]) end
  local lod = M.await(nsl.background("lod", nv.start, nv.stop, lane, nil, nlanes), self)
  local names = nvtx.names(nv)
  pause()
  local tnames = nsl.thread_names(trace)
  self.nvtx = {nv = nv, lane = lane, lod = lod, full = lod, threads = {}, name = names}
  for j = 1, #groups do
    local r = groups.row[j] + 1
    local rep, pid, tid = nv.report[r], nv.pid[r], nv.tid[r]
    local tname = tnames[fmt("%s/%s/%s", rep, pid, tid)]
    local first, count = groups.first_lane[j], groups.lanes[j]
    self.nvtx.threads[fmt("%s/%s/%s", rep, pid, tid)] = {first = first, lanes = count}
    for d = 0, count - 1 do
      self.lanes[#self.lanes + 1] = {
        kind = "nvtx", lod_key = "nvtx", id = first + d, report = rep, pid = pid, tid = tid, depth = d,
        events = lod:count(first + d),
        label = d > 0 and fmt("  depth %d", d) or   -- the thread's nesting levels under its first lane
                fmt("%s%s", self.multi and fmt("r%d ", rep) or "",
                    tname and fmt("%s %s", tname, tostring(tid)) or fmt("tid %s", tostring(tid)))}
    end
  end
  order_lanes(self.lanes)
  self.loaded.nvtx = true
  self:apply_filter()
end

--- The index of lane l (the filtered one when a filter is set).
function Model:lod(l) return self[l.lod_key].lod end

--- Summaries of ncols columns of [from, to) on lane l: arrays count, busy
-- (ns), row (0-based in the lane's table, -1 none), class (-1 none).
function Model:cells(l, from, to, ncols) return self:lod(l):query(l.id, from, to, ncols) end

--- Events of lane l that overlap [from, to) (with the filter), exactly.
function Model:count_in(l, from, to)
  local lod = self:lod(l)
  local count = lod:query(l.id, from, to, 1)
  return count[1]
end

-- Row r (0-based) of G as the table it comes from: src (1 kernels, 2 memcpy, 3 memset, the index in
-- gpu_tables) and the row there (1-based).
local function gpu_source(self, r)
  local first = self.gpu.first
  local src = r >= first[3] and 3 or r >= first[2] and 2 or 1
  return src, r - first[src] + 1
end

--- The name of row r (0-based) of lane l's table: the kernel's short or
-- demangled name (self.names), the terse label of a memory operation
-- (nsl.gpu_ops.label: "memcpy HtoD", "memset"), or the NVTX range's
-- "domain:text".
function Model:name_of(l, r)
  if r == nil or r < 0 then return nil end
  if l.kind == "nvtx" then return self.nvtx.name[r + 1] end
  if l.kind == "xla" then return self.xla.name[r + 1] end
  local src, row = gpu_source(self, r)
  if src == 1 then
    local k = self.trace.kernels
    if self.names == "demangled" then
      k:load{"demangled"}
      return k.demangled[row] or k.name[row]
    end
    return k.name[row]
  elseif src == 2 then
    return gpu_ops.label(self.trace.memcpy.kind[row], "terse")
  end
  return gpu_ops.label(nil, "terse")
end

--- The row's start and stop (ns).
function Model:times(l, r)
  if l.kind == "nvtx" then
    local nv = self.nvtx.nv
    return nv.start[r + 1], nv.stop[r + 1]
  end
  if l.kind == "xla" then return self.xla.g.start[r + 1], self.xla.g.stop[r + 1] end
  local G = self.gpu.G
  return G.start[r + 1], G.stop[r + 1]
end

-- Whether the name of each row of G (the filter's subject: kernels by
-- their short or demangled name, memory operations by their terse label,
-- nsl.gpu_ops.table's names) matches re: a bool column.  The names are made
-- once per naming.
local function gpu_match(self, re)
  local g = self.gpu
  if g.names_of ~= self.names then
    g.names = gpu_ops.table(self.trace, {columns = {}, names = self.names, labels = "terse"}).name
    g.names_of = self.names
  end
  assert(#g.names == #g.G)
  return g.names:regex(re)
end

--- Sets the name filter (a regular expression, nil or "" for none) and
-- the minimum duration (ns); returns nil, message for a bad expression.
function Model:set_filter(pattern, min_dur)
  if pattern == "" then pattern = nil end
  local re
  if pattern then
    local ok, r = pcall(nsl.regex, pattern)
    if not ok then return nil, tostring(nsl.is_error(r) and r.message or r) end
    re = r
  end
  self.filter, self.filter_re, self.min_dur = pattern, re, min_dur or self.min_dur
  self:apply_filter()
  return true
end

--- Rebuilds the filtered indexes from the full ones (no sort: nsl.lod's filter).
function Model:apply_filter()
  local re, min = self.filter_re, self.min_dur or 0
  -- each set of lanes: its events (start, stop columns) and the mask of the names the pattern matches
  local sets = {
    {self.gpu, "G", function() return gpu_match(self, re) end},
    {self.xla, "g", function() return self.xla.name:regex(re) end},
    {self.nvtx, "nv", function() return self.nvtx.name:regex(re) end},
  }
  for _, s in ipairs(sets) do
    local set, events, names = s[1], s[2], s[3]
    if set then
      if not re and min <= 0 then set.lod = set.full
      else
        local ev = set[events]
        local mask = (ev.stop - ev.start):ge(min)
        if re then mask = mask & names() end
        set.lod = set.full:filter(mask)
      end
    end
  end
end

--- The row of the event of lane l under time t (with the filter), or nil.
function Model:at(l, t) return self:lod(l):at(l.id, t) end

--- The row of the next (dir > 0) or previous event start of lane l from t (with the filter), or nil.
function Model:step(l, t, dir) return self:lod(l):step(l.id, t, dir) end

--- The row of the next (dir > 0) or previous kernel (NCCL kernels too) of
-- GPU lane l from t, memcpy and memset passed over; on an NVTX lane the
-- next or previous range.  With the filter.  nil when there is none.
function Model:snap(l, t, dir)
  local lod = self:lod(l)
  local r = lod:step(l.id, t, dir)
  if l.kind ~= "gpu" then return r end
  local G = self.gpu.G
  while r and gpu_source(self, r) ~= 1 do
    r = lod:step(l.id, G.start[r + 1], dir)
  end
  return r
end

-- The launching API call of every row of G (0-based rows of trace.api, -1 none): nsl.gpu_ops's
-- join on (report, pid, correlation id), once.
local api_columns = {"report", "pid", "tid", "corr", "start", "stop", "name"}

local function launch_index(self)
  if not self.gpu.api then
    local api = self.trace.api
    api:load(api_columns)   -- one scan (none after load_tree_columns), the count with it
    if #api == 0 then
      self.gpu.api = false
    else
      self.gpu.api = gpu_ops.table(self.trace, {columns = {}, api = true}).api   -- G's rows
    end
  end
  return self.gpu.api or nil
end

-- The NVTX ranges of thread (report, pid, tid) that enclose [start, stop), outermost first.
local function nvtx_stack(self, rep, pid, tid, start, stop)
  if not self.nvtx then return nil end
  local th = self.nvtx.threads[fmt("%s/%s/%s", rep, pid, tid)]
  local list = {}
  if not th then return list end
  local nv, lod = self.nvtx.nv, self.nvtx.full
  for d = 0, th.lanes - 1 do
    local r = lod:at(th.first + d, start)
    if not r then break end
    local s, e = nv.start[r + 1], nv.stop[r + 1]
    if s <= start and e >= stop then list[#list + 1] = self.nvtx.name[r + 1] end
  end
  return list
end

-- The name of thread (report, pid, tid) from trace.threads, or nil.
local function thread_name(self, rep, pid, tid)
  if not self.thread_names then self.thread_names = nsl.thread_names(self.trace) end
  return self.thread_names[fmt("%s/%s/%s", rep, pid, tid)]
end

--- The details of row r of lane l: a list of {key, value} pairs (values
-- are integers ns where they are times) in display order, and a record
-- with the same fields by key.
function Model:details(l, r)
  local out, rec = {}, {}
  local function add(k, v)
    if v == nil then return end
    out[#out + 1] = {k, v}
    rec[k] = v
  end
  local lod = self[l.lod_key].full
  local start, stop = self:times(l, r)
  -- the gaps to the lane's neighbours (every event, the filter aside)
  local prev, nxt = lod:step(l.id, start, -1), lod:step(l.id, start, 1)
  local gap_before, gap_after
  if prev then
    local _, pstop = self:times(l, prev)
    gap_before = start - pstop
  end
  if nxt then
    local nstart = self:times(l, nxt)
    gap_after = nstart - stop
  end
  if l.kind == "nvtx" then
    local nv = self.nvtx.nv
    add("name", self.nvtx.name[r + 1])
    nv:load{"kind"}
    add("kind", nv.kind[r + 1])
    add("start", start)
    add("stop", stop)
    add("dur", stop - start)
    add("report", self.report_names[nv.report[r + 1] + 1])
    add("pid", nv.pid[r + 1])
    add("tid", nv.tid[r + 1])
    add("thread", thread_name(self, nv.report[r + 1], nv.pid[r + 1], nv.tid[r + 1]))
    add("depth", l.depth)
  elseif l.kind == "xla" then
    local g = self.xla.g
    add("name", self.xla.name[r + 1])
    add("range", g.text[r + 1])
    add("kind", l.depth == 0 and "XLA module (projected onto the GPU)" or "XLA thunk (projected onto the GPU)")
    add("start", start)
    add("stop", stop)
    add("dur", stop - start)
    add("report", self.report_names[g.report[r + 1] + 1])
    add("device", self.xla.device[r + 1] >= 0 and self.xla.device[r + 1] or nil)
    add("pid", g.pid[r + 1])
    add("tid", g.tid[r + 1])
    add("depth", l.depth)
  else
    local G = self.gpu.G
    local src, row = gpu_source(self, r)
    local t = self.trace[gpu_tables[src]]
    if src == 1 then
      t:load{"name", "demangled", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "regs",
             "smem_static", "smem_dynamic", "context"}
      add("name", t.name[row])
      add("demangled", t.demangled[row])
      add("kind", "kernel")
    elseif src == 2 then
      t:load{"kind", "bytes"}
      add("name", gpu_ops.label(t.kind[row], "terse"))
      add("kind", "memcpy")
      add("bytes", t.bytes[row])
    else
      t:load{"bytes"}
      add("name", gpu_ops.label(nil, "terse"))
      add("kind", "memset")
      add("bytes", t.bytes[row])
    end
    add("start", start)
    add("stop", stop)
    add("dur", stop - start)
    if src == 1 then
      add("grid", fmt("%s,%s,%s", t.grid_x[row], t.grid_y[row], t.grid_z[row]))
      add("block", fmt("%s,%s,%s", t.block_x[row], t.block_y[row], t.block_z[row]))
      add("regs", t.regs[row])
    end
    add("report", self.report_names[G.report[r + 1] + 1])
    add("device", G.device[r + 1])
    add("stream", G.stream[r + 1])
    add("pid", t.pid[row])
    add("corr", t.corr[row])
    local idx = launch_index(self)
    local a = idx and idx[r + 1]
    if a and a >= 0 then
      local api = self.trace.api
      local ai = a + 1
      add("api", api.name[ai])
      add("api_start", api.start[ai])
      add("api_dur", api.stop[ai] - api.start[ai])
      add("api_tid", api.tid[ai])
      add("thread", thread_name(self, api.report[ai], api.pid[ai], api.tid[ai]))
      local stack = nvtx_stack(self, api.report[ai], api.pid[ai], api.tid[ai], api.start[ai], api.stop[ai])
      if stack and #stack > 0 then add("nvtx", table.concat(stack, " > ")) end
    end
  end
  add("gap_before", gap_before)
  add("gap_after", gap_after)
  return out, rec
end

-- ---- the NVTX tree (nsl.nvtx's projection and tree: the nvtx analysis's numbers) ----

--- Reads what the NVTX tree (nsl.nvtx.project) and the launching calls of
-- the details read besides the lanes: the NVTX ranges' columns and the CUDA
-- API calls, each table in one scan on a thread of its own.
function Model:load_tree_columns()
  M.await(nsl.background("load", self.trace.nvtx, nvtx.range_columns), self)
  M.await(nsl.background("load", self.trace.api, api_columns), self)
end

--- Builds the tree once: self.tree = {nodes (nvtx.tree's table), kids =
-- {node -> child node ids}, roots, node_rows = {node -> 0-based row of
-- trace.nvtx, in start order}, op_node, ops}.
function Model:load_tree()
  if self.tree then return self.tree end
  local trace = self.trace
  if #trace.nvtx == 0 then
    self.tree = {empty = true}
    return self.tree
  end
  local P = nvtx.project(trace, {strip = nvtx.pytorch_suffixes, between = pause,
                                 sweep = function(a) return M.await(nsl.background("nvtx_project", a), self) end})
  pause()
  local T = nvtx.tree(P)
  local nodes = T.nodes
  local n = #nodes
  local kids, roots, index = {}, {}, {}
  for i = 1, n do
    local id, parent = nodes.node[i], nodes.parent[i]
    index[id] = i
    if parent < 0 then roots[#roots + 1] = id
    else
      kids[parent] = kids[parent] or {}
      table.insert(kids[parent], id)
    end
  end
  self.tree = {nodes = nodes, kids = kids, roots = roots, index = index, node_of = T.node_of, P = P,
               op_node = T.op_node, outside = T.outside}
  return self.tree
end

--- The instances of tree node id: 0-based rows of trace.nvtx, by start.
function Model:node_rows(id)
  local T = self:load_tree()
  T.rows = T.rows or {}
  if not T.rows[id] then
    local rows = T.node_of:eq(id):indices()
    local starts = self.trace.nvtx.start:gather(rows)
    T.rows[id] = rows:gather(starts:argsort()):totable()
  end
  return T.rows[id]
end

--- The GPU operations whose innermost range is in node id, grouped by
-- name (kernels by short name, memory operations by nsys's label): a table
-- name, ops, gpu_time (ns), sorted by time; nil when the node launched none.
function Model:node_kernels(id)
  local T = self:load_tree()
  local rows = T.op_node:eq(id):indices()
  if #rows == 0 then return nil end
  -- the names of T.P.ops's rows (nsl.gpu_ops's row order), made once
  T.op_names = T.op_names or gpu_ops.table(self.trace, {columns = {}, names = "short"}).name
  local t = nsl.table{{"name", T.op_names:gather(rows)}, {"dur", T.P.ops.stop:gather(rows) - T.P.ops.start:gather(rows)}}
  return t:group_by("name"):agg{"ops=count", "gpu_time=sum(dur)"}:sort("-gpu_time", "name")
end

-- ---- findings (diagnose) ----

--- The findings of diagnose over the trace, largest cost first (computed once).
function Model:load_findings()
  if self.findings then return self.findings end
  local runner = require("nsl.engine.runner")
  local diagnose = require("nsl.diagnose")
  local a = assert(runner.load_analysis("diagnose"))
  local args = assert(runner.parse_args(a, {}))
  local out = require("nsl.engine.output").new{analysis = "diagnose", format = "collect", trace = self.trace}
  local ctx = diagnose.context(self.trace, args, nil, out)
  pause()
  self.findings = diagnose.run(ctx, pause)   -- in a coroutine, keys are read between the checks
  self.finding_notes = ctx.notes
  return self.findings
end

--- The lane index (in self.lanes) that best matches a finding's where:
-- its report, device and stream, or its report, pid and tid; nil for none.
function Model:lane_of(where)
  if not where then return nil end
  local best, score = nil, 0
  for i, l in ipairs(self.lanes) do
    local s = 0
    if where.report == nil or where.report == l.report then s = s + 1 else s = -10 end
    if l.kind == "gpu" or l.kind == "xla" then
      if where.device ~= nil and where.device == l.device and (l.depth or 0) == 0 then s = s + 2 end
      if where.stream ~= nil and where.stream == l.stream then s = s + 2 end
    else
      if where.tid ~= nil and where.tid == l.tid and (l.depth or 0) == 0 then s = s + 3 end
    end
    if s > score then best, score = i, s end
  end
  return best
end

--- A duration as text (report.duration).
M.duration = report.duration

return M
