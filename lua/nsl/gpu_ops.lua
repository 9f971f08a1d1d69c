-- nsl.gpu_ops -- the derived table of every GPU operation of a trace:
-- kernels, memcpy and memset as one table, in that order (each in its own
-- table's row order), with one naming of operations: a kernel by its name,
-- a memory operation by nsys's label ("[CUDA memcpy Host-to-Device]",
-- "[CUDA memset]", as `nsys stats` prints them).  Every analysis that needs
-- the GPU work as one table builds it here.
--
-- Terse forms for figures and trace events ("memcpy HtoD", "memset") are
-- presentation, made from the memcpy kind by M.terse_label.
local nsl = require("nsl")

local M = {}

--- The tables that hold GPU operations, in the order of M.table's rows, and
-- the kind of operation of each.
M.tables = {"kernels", "memcpy", "memset"}
M.kinds = {"kernel", "memcpy", "memset"}

--- nsys's labels of memory operations ("[CUDA memcpy Host-to-Device]", ...),
-- by the memcpy kind of the data model.
M.memcpy_labels = {
  HtoD = "[CUDA memcpy Host-to-Device]", DtoH = "[CUDA memcpy Device-to-Host]",
  HtoA = "[CUDA memcpy Host-to-Array]", AtoH = "[CUDA memcpy Array-to-Host]",
  AtoA = "[CUDA memcpy Array-to-Array]", AtoD = "[CUDA memcpy Array-to-Device]",
  DtoA = "[CUDA memcpy Device-to-Array]", DtoD = "[CUDA memcpy Device-to-Device]",
  HtoH = "[CUDA memcpy Host-to-Host]", PtoP = "[CUDA memcpy Peer-to-Peer]",
  UVM_HtoD = "[CUDA memcpy Unified Host-to-Device]", UVM_DtoH = "[CUDA memcpy Unified Device-to-Host]",
  UVM_DtoD = "[CUDA memcpy Unified Device-to-Device]", Unknown = "[CUDA memcpy Unknown]",
}
M.memset_label = "[CUDA memset]"

--- nsys's name of a memcpy of the given kind ("HtoD" -> "[CUDA memcpy Host-to-Device]").
function M.memcpy_label(kind) return M.memcpy_labels[kind] or ("[CUDA memcpy " .. kind .. "]") end

--- true when name is one of nsys's memory-operation names.
function M.is_memop(name) return name:find("^%[CUDA mem") ~= nil end

local kind_of_label = {}
for kind, label in pairs(M.memcpy_labels) do kind_of_label[label] = kind end

--- The memcpy kind a label of M.memcpy_label names ("HtoD"), nil for any
-- other name.
function M.memcpy_kind(label)
  local kind = kind_of_label[label]
  if kind then return kind end
  return label:match("^%[CUDA memcpy (.*)%]$")
end

--- The terse label of a memory operation for figures and trace events:
-- "memcpy HtoD" for a memcpy kind, "memset" without one.
function M.terse_label(memcpy_kind)
  if memcpy_kind == nil then return "memset" end
  return "memcpy " .. memcpy_kind
end

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

--- Every GPU operation of the trace as one table.  Columns, in this order:
--   opts.columns  columns every operation table has (default report, pid,
--                 device, stream, corr, start, stop, dur)
--   name          with opts.names: the kernel name (M.kernel_names(k,
--                 opts.names): "demangled" or "short") or nsys's label
--   memop         with opts.memop: true for memory operations
--   kind          with opts.kind: "kernel", "memcpy" or "memset"
--   bytes         with opts.bytes: bytes moved (NULL for kernels)
--   api           with opts.api: 0-based row of the launching call in
--                 trace.api (joined on report, pid and correlation id;
--                 processes reuse ids), -1 for none
-- Rows: the kernels, the memcpy, the memset, each in its table's order.
function M.table(trace, opts)
  opts = opts or {}
  local cols = opts.columns or default_columns
  local k, mc, ms = trace.kernels, trace.memcpy, trace.memset
  -- dur is stop - start over the concatenation: no dur column is loaded
  -- into the three tables (they keep what they load)
  local load = {}
  for _, c in ipairs(cols) do if c ~= "dur" then load[#load + 1] = c end end
  local function add(list, c)
    for _, x in ipairs(list) do if x == c then return end end
    list[#list + 1] = c
  end
  for _, c in ipairs(cols) do if c == "dur" then add(load, "start"); add(load, "stop") end end
  local kc, mcc, msc = {table.unpack(load)}, {table.unpack(load)}, {table.unpack(load)}
  if opts.names then
    kc[#kc + 1] = "name"
    if opts.names ~= "short" then kc[#kc + 1] = "demangled" end
    mcc[#mcc + 1] = "kind"
  end
  if opts.bytes then
    mcc[#mcc + 1] = "bytes"
    msc[#msc + 1] = "bytes"
  end
  if opts.api then   -- the join keys
    for _, list in ipairs{kc, mcc, msc} do
      for _, c in ipairs{"report", "pid", "corr"} do add(list, c) end
    end
  end
  k:load(kc)
  mc:load(mcc)
  ms:load(msc)
  local t, base = {}, {}
  local function all(c)   -- column c over the three tables, concatenated once
    if not base[c] then
      base[c] = c == "dur" and all("stop") - all("start") or nsl.concat(k[c], mc[c], ms[c])
    end
    return base[c]
  end
  for _, c in ipairs(cols) do t[#t + 1] = {c, all(c)} end
  if opts.names then
    t[#t + 1] = {"name", nsl.concat(M.kernel_names(k, opts.names), mc.kind:map(M.memcpy_label),
                                    nsl.rep(M.memset_label, #ms))}
  end
  if opts.memop then t[#t + 1] = {"memop", nsl.concat(nsl.rep(0, #k), nsl.rep(1, #mc + #ms)):eq(1)} end
  if opts.kind then
    t[#t + 1] = {"kind", nsl.concat(nsl.rep(M.kinds[1], #k), nsl.rep(M.kinds[2], #mc), nsl.rep(M.kinds[3], #ms))}
  end
  if opts.bytes then   -- kernels move no bytes: NULL (a gather at -1)
    t[#t + 1] = {"bytes", nsl.concat(mc.bytes:gather(nsl.rep(-1, #k)), mc.bytes, ms.bytes)}
  end
  if opts.api then
    local api = trace.api
    api:load{"report", "pid", "corr"}
    local keys <close> = nsl.table{{"report", all("report")}, {"pid", all("pid")}, {"corr", all("corr")}}
    local _, idx = keys:join(api, {"report", "pid", "corr"})
    t[#t + 1] = {"api", idx}
  end
  return nsl.table(t)
end

return M
