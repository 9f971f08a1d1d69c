-- nsl.jax.flame -- nsys-jax's flame graphs: GPU time attributed to HLO
-- opcodes, Python source lines and JAX op names over the steady-state
-- executions (nsl.jax.stats), as folded stacks.
local nsl = require("nsl")
local stats = require("nsl.jax.stats")

local M = {}

-- ---------------------------------------------------------------- flame graphs

local GPU_ACTIVE, UNKNOWN = "[GPU active]", "[Unknown]"
local IDLE_IN, IDLE_BETWEEN = "[GPU idle during module execution]", "[GPU idle between module executions]"
local INCONSISTENT = "[inconsistent metadata]"

--- The frames of a, b merged: their common start, a marker, their common end.
local function merge_frames(a, b)
  local same = #a == #b
  for i = 1, #a do same = same and a[i] == b[i] end
  if same then return a end
  local out, p = {}, 0
  while p < #a and p < #b and a[p + 1] == b[p + 1] do p = p + 1; out[p] = a[p] end
  local q = 0
  while q < #a - p and q < #b - p and a[#a - q] == b[#b - q] do q = q + 1 end
  out[#out + 1] = INCONSISTENT
  for i = #a - q + 1, #a do out[#out + 1] = a[i] end
  return out
end

--- opcode and the metadata entries {op_name, frames} of a thunk's instruction
-- and of the instructions of the computations it calls (nsys-jax's notebook:
-- instructions_and_frames); several dumps of one program are merged.
local function thunk_metadata(store, fp, name, cache)
  local key = fp .. "\0" .. name
  if cache[key] then return table.unpack(cache[key]) end
  local opcode, metas
  for _, h in ipairs(store.modules(fp)) do
    local inst = h:instruction(name)
    if inst then
      local list = {{op_name = inst.op_name, frame = inst.frame}}
      for _, c in ipairs(h:called(name)) do list[#list + 1] = c end
      local m = {}
      for i, e in ipairs(list) do
        local fk = h
        cache.frames = cache.frames or setmetatable({}, {__mode = "k"})
        cache.frames[fk] = cache.frames[fk] or {}
        local fr = cache.frames[fk][e.frame]
        if not fr then
          fr = e.frame > 0 and h:stack(e.frame) or {}
          cache.frames[fk][e.frame] = fr
        end
        m[i] = {op_name = e.op_name, frames = fr}
      end
      if not metas then opcode, metas = inst.opcode, m
      elseif #m == #metas then
        for i = 1, #m do
          if m[i].op_name == metas[i].op_name then metas[i] = {op_name = metas[i].op_name,
                                                                  frames = merge_frames(metas[i].frames, m[i].frames)} end
        end
      end
    end
  end
  cache[key] = {opcode, metas or {}}
  return opcode, metas or {}
end

local function split(s, sep)
  local out = {}
  for part in (s .. sep):gmatch("(.-)" .. sep:gsub("%p", "%%%0")) do out[#out + 1] = part end
  return out
end

--- nsys-jax notebook's GPU time attribution over the programs that make up 99%
-- of steady-state module time: op runtime per opcode, and the source-line and
-- op-name stacks (weights in ms).  Returns {op_runtime = {[opcode] = ms, _total,
-- ["GPU idle during modules"]}, source = {stack -> ms}, op_name = {...},
-- order_source, order_op_name (insertion order), totals}.
function M.attribution(d, steady_module, steady_thunk)
  local st = steady_module:group_by("ProgramId"):agg{"sum=sum(ProjDurMs)"}:sort("-sum")
  local total, seen, top = st.sum:sum(), 0, {}
  for i = 1, #st do
    if seen < 0.99 then top[#top + 1] = st.ProgramId[i] end
    seen = seen + st.sum[i] / total
  end
  local tm = steady_module:filter(steady_module.ProgramId:isin(top))
  local tt = steady_thunk:filter(steady_thunk.ProgramId:isin(top))
  local ts = tt:group_by("ProgramId", "Name"):agg{"ms=sum(ProjDurMs)"}:sort("-ms")
  local thunks_active = ts.ms:sum()
  local modules_active = tm.ProjDurMs:sum()
  local span = tm:with("end", tm.ProjStartMs + tm.ProjDurMs):group_by("Device")
    :agg{"s=min(ProjStartMs)", "e=max(end)"}
  local wall = (span.e - span.s):sum()
  local res = {op_runtime = {}, source = {}, op_name = {}, order_source = {}, order_op_name = {}, top = top,
               totals = {thunks_active = thunks_active, modules_active = modules_active, wall = wall}}
  local function add(map, order, key, w)
    if map[key] == nil then order[#order + 1] = key; map[key] = 0 end
    map[key] = map[key] + w
  end
  local cache = {}
  for i = 1, #ts do
    local fp, name, ms = ts.ProgramId[i], ts.Name[i], ts.ms[i]
    local opcode, metas = thunk_metadata(d.store, fp, name, cache)
    if opcode then res.op_runtime[opcode] = (res.op_runtime[opcode] or 0) + ms end
    local src1, src2, on1 = {}, {}, {}
    local s1, s2, o1 = {}, {}, {}
    for _, m in ipairs(metas) do
      if #m.frames > 0 then
        local k = GPU_ACTIVE .. ";" .. table.concat(m.frames, ";") .. (m.op_name ~= "" and ";" .. m.op_name or "")
        if not s1[k] then s1[k] = true; src1[#src1 + 1] = k end
      end
      if m.op_name ~= "" then
        local k2 = GPU_ACTIVE .. ";" .. UNKNOWN .. ";" .. m.op_name
        if not s2[k2] then s2[k2] = true; src2[#src2 + 1] = k2 end
        local k3 = GPU_ACTIVE .. ";" .. table.concat(split(m.op_name, "/"), ";")
        if not o1[k3] then o1[k3] = true; on1[#on1 + 1] = k3 end
      end
    end
    local unknown = {GPU_ACTIVE .. ";" .. UNKNOWN}
    for _, set in ipairs{src1, src2, unknown} do
      if #set > 0 then
        for _, k in ipairs(set) do add(res.source, res.order_source, k, ms / #set) end
        break
      end
    end
    for _, set in ipairs{on1, unknown} do
      if #set > 0 then
        for _, k in ipairs(set) do add(res.op_name, res.order_op_name, k, ms / #set) end
        break
      end
    end
  end
  res.op_runtime._total = modules_active
  res.op_runtime["GPU idle during modules"] = modules_active - thunks_active
  local idle_in = math.max(0, modules_active - thunks_active)
  local idle_between = math.max(0, wall - modules_active)
  for _, which in ipairs{"source", "op_name"} do
    add(res[which], res["order_" .. which], IDLE_IN, idle_in)
    add(res[which], res["order_" .. which], IDLE_BETWEEN, idle_between)
  end
  return res
end

--- The attribution (M.attribution) of a trace's steady state, as nsys-jax's
-- notebook makes it: frames loaded (opts as stats.load), programs without a dump
-- left out, clocks aligned across devices, warm-up executions dropped.
-- Returns the attribution and the loaded frames.
function M.steady_attribution(trace, opts)
  local d = stats.load(trace, opts)
  local compiled = stats.compiled_programs(d.compile_parts)
  local has_comm = #d.communication > 0
  local module = d.module:filter(~d.module.ProgramId:isin{"unknown"})
  local thunk = d.thunk:filter(~d.thunk.ProgramId:isin{"unknown"})
  local corr = stats.alignment(d.communication)
  module, thunk = stats.apply_alignment(module, corr), stats.apply_alignment(thunk, corr)
  return M.attribution(d, stats.steady(module, compiled, has_comm), stats.steady(thunk, compiled, has_comm)), d
end

--- The stacks of one of an attribution's flame graphs ("source" or
-- "op_name") as an nsl table {stack, weight} in integer ns, heaviest first
-- (the input of nsl.plot.flamegraph and of the flamegraph analysis).
function M.attribution_stacks(a, which)
  local stacks, weights = {}, {}
  for i, k in ipairs(a["order_" .. which]) do
    stacks[i] = k
    weights[i] = math.floor(a[which][k] * 1e6 + 0.5)
  end
  if #stacks == 0 then return nil end
  local t = nsl.table{{"stack", stacks}, {"weight", weights}}
  t = t:filter(t.weight:gt(0))
  return t:sort("-weight", "stack")
end

--- Folded-stack text ("a;b;c weight" lines, flamegraph.pl's input) of a map
-- in the given key order.
function M.folded(map, order)
  local lines = {}
  for i, k in ipairs(order) do lines[i] = k .. " " .. string.format("%.17g", map[k]) end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

return M
