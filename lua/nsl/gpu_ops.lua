-- nsl.gpu_ops -- the GPU operations of a trace: kernels, memcpy and memset
-- as one table (M.table) or one part per table (M.parts), in that order
-- (each in its own table's row order), with one naming of memory operations
-- (M.label, one table of labels in two styles: nsys's "[CUDA memcpy
-- Host-to-Device]" and "[CUDA memset]", as `nsys stats` prints them, for the
-- tables of analyses; the terse "memcpy HtoD" and "memset" for figures, the
-- viewer, the TUI and trace events) and one classing for the front ends
-- (M.classes: kernel, NCCL kernel, memcpy by direction, memset).  Every
-- analysis and front end that needs the GPU work as one table builds it
-- here.
local nsl = require("nsl")
local kept = require("nsl.kept")
local window = require("nsl.window")

local M = {}

--- The tables that hold GPU operations, in the order of M.table's rows, and
-- the kind of operation of each.
M.tables = {"kernels", "memcpy", "memset"}
M.kinds = {"kernel", "memcpy", "memset"}

-- nsys's words for each memcpy kind of the data model.
local directions = {
  HtoD = "Host-to-Device", DtoH = "Device-to-Host", HtoA = "Host-to-Array", AtoH = "Array-to-Host",
  AtoA = "Array-to-Array", AtoD = "Array-to-Device", DtoA = "Device-to-Array", DtoD = "Device-to-Device",
  HtoH = "Host-to-Host", PtoP = "Peer-to-Peer", UVM_HtoD = "Unified Host-to-Device",
  UVM_DtoH = "Unified Device-to-Host", UVM_DtoD = "Unified Device-to-Device", Unknown = "Unknown",
}

-- The label table: per style, the label of a memcpy of a kind and of a memset.
local styles = {
  nsys = {memcpy = function(kind) return "[CUDA memcpy " .. (directions[kind] or kind) .. "]" end,
          memset = "[CUDA memset]"},
  terse = {memcpy = function(kind) return "memcpy " .. kind end, memset = "memset"},
}

local function style_of(style)
  local s = styles[style or "nsys"]
  if not s then error(string.format("label style '%s': nsys or terse", tostring(style)), 3) end
  return s
end

--- The label of a memory operation in style "nsys" (the default) or
-- "terse": of a memcpy of the given kind ("HtoD": "[CUDA memcpy
-- Host-to-Device]", "memcpy HtoD"), of a memset when kind is nil.
function M.label(kind, style)
  local s = style_of(style)
  if kind == nil then return s.memset end
  return s.memcpy(kind)
end

--- The labels (M.label) of a string column of memcpy kinds (NULL stays NULL).
function M.memcpy_labels(kinds, style)
  local s = style_of(style)
  return kinds:map(s.memcpy)
end

--- true when name is one of nsys's memory-operation names.
function M.is_memop(name) return name:find("^%[CUDA mem") ~= nil end

--- The classes of GPU operations the front ends draw (figures, the viewer,
-- the TUI), in the order of their 0-based ids (M.CLASS[name]): kernels,
-- NCCL kernels (short name starting with "nccl"), memcpy host to device,
-- device to host, of any other kind, and memset; label: the legend's.
M.classes = {
  {name = "kernel", label = "kernel"},
  {name = "nccl", label = "NCCL kernel"},
  {name = "memcpy_htod", label = M.label("HtoD", "terse")},
  {name = "memcpy_dtoh", label = M.label("DtoH", "terse")},
  {name = "memcpy_other", label = M.label("other", "terse")},
  {name = "memset", label = M.label(nil, "terse")},
}
local CLASS = {}
for i, c in ipairs(M.classes) do CLASS[c.name] = i - 1 end
M.CLASS = CLASS

--- The names a map classifies for the kernels of table k: the demangled
-- names (the short name where a demangled one is missing), or the short
-- names for which = "short".  A string column.
function M.kernel_names(k, which)
  if which == "short" then return k.name end
  return nsl.coalesce(k.demangled, k.name)
end

--- One column of the GPU operations (M.table's row order): column `name` of
-- kernels, memcpy and memset concatenated (all three must have it).
function M.column(trace, name)
  local parts = {}
  for i, tname in ipairs(M.tables) do
    local t = trace[tname]
    t:load{name}
    parts[i] = t[name]
  end
  return nsl.concat(table.unpack(parts))
end

local default_columns = {"report", "pid", "device", "stream", "corr", "start", "stop", "dur"}
--- The columns M.table and M.parts give first when opts.columns is nil.
M.default_columns = default_columns

local function add_once(list, c)
  for _, x in ipairs(list) do if x == c then return end end
  list[#list + 1] = c
end

-- The class (M.CLASS) of every row of part i (1 kernels, 2 memcpy, 3
-- memset) of n rows t: an i64 column.
local function class_of(i, t, n)
  if i == 1 then
    return nsl.where(t.name:match("^nccl"), CLASS.nccl, CLASS.kernel)
  elseif i == 2 then
    return nsl.where(t.kind:eq("HtoD"), CLASS.memcpy_htod,
                     nsl.where(t.kind:eq("DtoH"), CLASS.memcpy_dtoh, CLASS.memcpy_other))
  end
  return nsl.rep(CLASS.memset, n)
end

--- The GPU operations of the trace, one part per table: a list of three
-- {table = "kernels" | "memcpy" | "memset", op = M.kinds[i], n = rows,
-- col = {the columns below by name}} (kernels, memcpy, memset; each in its
-- table's row order).  Options (the columns each part has):
--   opts.columns  columns every operation table has (default report, pid,
--                 device, stream, corr, start, stop, dur: stop - start)
--   name          with opts.names: the kernel name (M.kernel_names(k,
--                 opts.names): "demangled" or "short") or the label of
--                 the memory operation (M.label) in style opts.labels
--                 ("nsys", the default, or "terse")
--   memop         with opts.memop: true for memory operations
--   kind          with opts.kind: "kernel", "memcpy" or "memset"
--   bytes         with opts.bytes: bytes moved (NULL for kernels)
--   class         with opts.class: the class id (M.classes, 0-based, i64)
-- opts.from and opts.to: only the operations overlapping [from, to)
-- (start < to and stop > from; nsl.window.rows).  opts.keys: columns to
-- read besides (join keys).  opts.tables: only the parts of the tables it
-- names (default all three).
function M.parts(trace, opts)
  opts = opts or {}
  local cols = opts.columns or default_columns
  local windowed = opts.from ~= nil or opts.to ~= nil
  -- dur is stop - start: no dur column is loaded into the three tables (they keep what they load)
  local read = {}
  for _, c in ipairs(cols) do
    if c == "dur" then add_once(read, "start"); add_once(read, "stop") else add_once(read, c) end
  end
  if windowed then add_once(read, "start"); add_once(read, "stop") end
  for _, c in ipairs(opts.keys or {}) do add_once(read, c) end
  local style = opts.names and style_of(opts.labels)
  local only
  if opts.tables then
    only = {}
    for _, name in ipairs(opts.tables) do only[name] = true end
  end
  local parts = {}
  for i, tname in ipairs(M.tables) do
    if not only or only[tname] then
      local want = {table.unpack(read)}
      if i == 1 and (opts.names or opts.class) then
        add_once(want, "name")
        if opts.names and opts.names ~= "short" then add_once(want, "demangled") end
      elseif i == 2 and (opts.names or opts.class) then add_once(want, "kind")
      end
      if i > 1 and opts.bytes then add_once(want, "bytes") end
      local t = trace[tname]
      t:load(want)
      local rows = t:select(want)
      if windowed then
        rows = window.rows(t, want, opts.from or math.mininteger, opts.to or math.maxinteger) or rows:head(0)
      end
      local n = windowed and #rows or #t   -- (a selection of no columns has no rows)
      local col = {}
      for _, c in ipairs(read) do col[c] = rows[c] end
      for _, c in ipairs(cols) do if c == "dur" then col.dur = rows.stop - rows.start end end
      if opts.names then
        col.name = i == 1 and M.kernel_names(rows, opts.names) or i == 2 and rows.kind:map(style.memcpy) or
                   nsl.rep(style.memset, n)
      end
      if opts.memop then col.memop = nsl.rep(i == 1 and 0 or 1, n):eq(1) end
      if opts.kind then col.kind = nsl.rep(M.kinds[i], n) end
      if opts.bytes and i > 1 then col.bytes = rows.bytes end
      if opts.class then col.class = class_of(i, rows, n) end
      parts[#parts + 1] = {table = tname, op = M.kinds[i], n = n, col = col}
    end
  end
  if opts.bytes and parts[1] and parts[1].op == "kernel" then   -- kernels move no bytes: NULL (a gather at -1)
    local mc = trace.memcpy
    mc:load{"bytes"}
    parts[1].col.bytes = mc.bytes:gather(nsl.rep(-1, parts[1].n))
  end
  return parts
end

-- Per trace (weak keys), what M.api_rows found for each operation table.
local api_rows_of = setmetatable({}, {__mode = "k"})

--- The 0-based row in trace.api of the CUDA call that launched each row of
-- trace[tname] ("kernels", "memcpy" or "memset"), joined on report, pid and
-- correlation id (processes reuse ids), -1 for none: an i64 column in the
-- table's row order.  Made once per trace (weak keys), for the three tables
-- at once: one join, which indexes the calls once, not once per table (the
-- ledger, the straggler matching and step detection of one diagnose run,
-- and the NVTX projection, read them); kept in the column cache, so that a
-- later run on the same input reads them instead of joining again.
local LAUNCHED = {"kernels", "memcpy", "memset"}

-- The name the column cache keeps each report's M.api_rows under (trace:derived): the launching call's row
-- within the report's own calls.  Another way of finding the calls is another name.
local KEPT = "api_row.1"

-- M.api_rows' columns read back from the column cache (nsl.kept), when every report kept them (nil otherwise):
-- each report's rows, checked (-1 or one of its own calls), moved to the trace's rows of trace.api.
local function kept_api_rows(trace)
  local memo, first, calls = {}, nil, nil
  for _, name in ipairs(LAUNCHED) do
    local parts = kept.parts(trace, name, KEPT, "i64")
    if not parts then return nil end
    if not first then first, calls = kept.first_rows(trace, "api") end
    for r, c in ipairs(parts) do
      parts[r] = kept.trace_rows(c, calls[r], first[r])
      if not parts[r] then return nil end
    end
    memo[name] = nsl.concat(table.unpack(parts))
  end
  return memo
end

-- Keeps memo (M.api_rows' columns for the whole trace) in the column cache, each report's part as its rows
-- of its own calls.
local function keep_api_rows(trace, memo)
  local first = kept.first_rows(trace, "api")
  for _, name in ipairs(LAUNCHED) do
    kept.keep(trace, name, KEPT, memo[name], function(c, r) return kept.own_rows(c, first[r]) end)
  end
end

function M.api_rows(trace, tname)
  local memo = api_rows_of[trace]
  if not memo then
    memo = kept_api_rows(trace)
  end
  if not memo then
    memo = {}
    local keys, api = {"report", "pid", "corr"}, trace.api
    api:load(keys)
    local cols, lens = {{}, {}, {}}, {}
    for i, name in ipairs(LAUNCHED) do
      local t = trace[name]
      t:load(keys)
      for k, key in ipairs(keys) do cols[k][i] = t[key] end
      lens[i] = #t
    end
    local all <close> = nsl.table{{"report", nsl.concat(table.unpack(cols[1]))},
                                  {"pid", nsl.concat(table.unpack(cols[2]))}, {"corr", nsl.concat(table.unpack(cols[3]))}}
    local idx <close> = select(2, all:join(api:select(keys), keys))
    local off = 0
    for i, name in ipairs(LAUNCHED) do
      memo[name] = idx:gather(nsl.range(lens[i]) + off)
      off = off + lens[i]
    end
    keep_api_rows(trace, memo)
  end
  api_rows_of[trace] = memo
  return assert(memo[tname], "api_rows: no table " .. tostring(tname))
end

--- The table each of the n rows of M.table(trace, ...) comes from, as an
-- i64 column: 0 kernels, 1 memcpy, 2 memset (its rows are the kernels, the
-- memcpy, then the memset).
function M.row_parts(trace, n)
  local nk, nmc = #trace.kernels, #trace.memcpy
  return nsl.concat(nsl.rep(0, nk), nsl.rep(1, nmc), nsl.rep(2, n - nk - nmc))
end

--- Every GPU operation of the trace as one table: the parts of M.parts
-- (same options; opts.tables left out) one after the other.  Columns, in this order: opts.columns,
-- then name, memop, kind, bytes (each with its option), api with opts.api
-- (0-based row of the launching call in trace.api, joined on report, pid
-- and correlation id: processes reuse ids; -1 for none), class with
-- opts.class.  Rows: the kernels, the memcpy, the memset, each in its
-- table's order.
function M.table(trace, opts)
  opts = opts or {}
  -- (the join keys read only for a window's rows: whole tables take their launching calls from M.api_rows, which
  -- reads the keys itself when the column cache does not keep its rows)
  local windowed = opts.from ~= nil or opts.to ~= nil
  local popts = setmetatable({tables = false, keys = opts.api and windowed and {"report", "pid", "corr"}},
                             {__index = opts})
  local parts = M.parts(trace, popts)
  local function all(c)
    local list = {}
    for i, p in ipairs(parts) do list[i] = p.col[c] end
    return nsl.concat(table.unpack(list))
  end
  local t = {}
  for _, c in ipairs(opts.columns or default_columns) do t[#t + 1] = {c, all(c)} end
  if opts.names then t[#t + 1] = {"name", all("name")} end
  if opts.memop then t[#t + 1] = {"memop", all("memop")} end
  if opts.kind then t[#t + 1] = {"kind", all("kind")} end
  if opts.bytes then t[#t + 1] = {"bytes", all("bytes")} end
  if opts.api and #parts > 0 and not windowed then   -- whole tables: their rows made once
    local list = {}
    for i, p in ipairs(parts) do list[i] = M.api_rows(trace, p.table) end
    t[#t + 1] = {"api", nsl.concat(table.unpack(list))}
  elseif opts.api then
    local api = trace.api
    api:load{"report", "pid", "corr"}
    local keys <close> = nsl.table{{"report", all("report")}, {"pid", all("pid")}, {"corr", all("corr")}}
    local _, idx = keys:join(api, {"report", "pid", "corr"})
    t[#t + 1] = {"api", idx}
  end
  if opts.class then t[#t + 1] = {"class", all("class")} end
  return nsl.table(t)
end

return M
