-- nsl.nccl -- NCCL kernels: which kernels are NCCL's, and what their names
-- say about the collective.  NCCL names its kernels after what they were
-- specialised for; the forms by release:
--   2.19 and later   ncclDevKernel_<Coll>[_<Op>_<type>][_<ALGO>_<PROTO>]   ncclDevKernel_AllReduce_Sum_f32_RING_LL,
--                    ncclDevKernel_AllGather_RING_LL, ncclDevKernel_SendRecv, ncclDevKernel_Generic
--   2.27 symmetric   ncclSymkDevKernel_<Coll>_<algo>[_<op>_<type>]       ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32
--   2.8 to 2.18      ncclKernel_<Coll>_<ALGO>_<PROTO>_<Op>_<ctype>      ncclKernel_AllReduce_RING_LL_Sum_float
--   2.4 to 2.7       nccl<Coll><Algo><Proto>Kernel_<op>_<type>          ncclAllReduceRingLLKernel_sum_f32
-- with the arguments, "(ncclWorkElem)", "(ncclDevKernelArgsStorage<4096>)", after the name when demangled.
-- Kernels of non-reducing collectives (AllGather, Broadcast, SendRecv, ...)
-- carry placeholder operations and types in the older forms (Sum, int8_t: the
-- bytes are copied); those are dropped.  The algorithm and protocol are
-- those the kernel was built for: NCCL runs some combinations in a more
-- general kernel (2.19+ runs every AllGather protocol in the _RING_LL kernel).
local nsl = require("nsl")

local M = {}

local lower, find, match, gsub = string.lower, string.find, string.match, string.gsub

--- true when name is an NCCL kernel's: it contains "nccl" in any case (the
-- rule of NVIDIA's GPU Performance Analyzer).
function M.is_nccl(name)
  return type(name) == "string" and find(lower(name), "nccl", 1, true) ~= nil
end

-- Canonical spellings of collectives, operations, types, algorithms, protocols.
local collectives = {}
for _, c in ipairs{"AllReduce", "AllGather", "AllGatherV", "ReduceScatter", "Broadcast", "Reduce", "SendRecv",
                   "Send", "Recv", "AllToAll", "AllToAllv", "Gather", "Scatter", "Generic", "Nop"} do
  collectives[lower(c)] = c
end
M.reducing = {AllReduce = true, Reduce = true, ReduceScatter = true}

local ops = {sum = "Sum", prod = "Prod", minmax = "MinMax", min = "Min", max = "Max", premulsum = "PreMulSum",
             sumpostdiv = "SumPostDiv", avg = "Avg"}
local types = {
  i8 = "i8", u8 = "u8", i32 = "i32", u32 = "u32", i64 = "i64", u64 = "u64", f16 = "f16", f32 = "f32", f64 = "f64",
  bf16 = "bf16", f8e4m3 = "f8e4m3", f8e5m2 = "f8e5m2",
  int8_t = "i8", uint8_t = "u8", int32_t = "i32", uint32_t = "u32", int64_t = "i64", uint64_t = "u64",
  half = "f16", float = "f32", double = "f64", __nv_bfloat16 = "bf16", __nv_fp8_e4m3 = "f8e4m3",
  __nv_fp8_e5m2 = "f8e5m2", nv_bfloat16 = "bf16", nv_fp8_e4m3 = "f8e4m3", nv_fp8_e5m2 = "f8e5m2", int8 = "i8", uint8 = "u8", int32 = "i32", uint32 = "u32", int64 = "i64",
  uint64 = "u64", bfloat16 = "bf16",
}
local protocols = {LL = "LL", LL128 = "LL128", SIMPLE = "SIMPLE"}
local algorithms = {RING = "RING", TREE = "TREE", NVLS = "NVLS", NVLS_TREE = "NVLS_TREE", PAT = "PAT",
                    COLLNET = "COLLNET", COLLNET_DIRECT = "COLLNET_DIRECT", COLLNET_CHAIN = "COLLNET_CHAIN",
                    Ring = "RING", Tree = "TREE", CollNet = "COLLNET", CollNetDirect = "COLLNET_DIRECT",
                    CollNetChain = "COLLNET_CHAIN"}

local function canonical_collective(token)
  return collectives[lower(token or "")] or token
end

-- The kernel's own name: without "void ", a namespace, template arguments
-- and the parameter list.
local function base_name(name)
  local s = gsub(name, "^%s*void%s+", "")
  s = match(s, "^[^(<]*") or s
  s = match(s, "([%w_]+)%s*$") or s
  return s
end

local function split(s)
  local t = {}
  for tok in string.gmatch(s, "[^_]+") do t[#t + 1] = tok end
  return t
end

-- ncclDevKernel_AllReduce_Sum_f32_RING_LL / ncclDevKernel_AllGather_RING_LL / ncclDevKernel_SendRecv
local function parse_dev(rest, r)
  local t = split(rest)
  r.collective = canonical_collective(t[1])
  local i = 2
  if t[i] and ops[lower(t[i])] and t[i + 1] and types[t[i + 1]] then
    r.op, r.dtype = ops[lower(t[i])], types[t[i + 1]]
    i = i + 2
  end
  local n = #t
  if n >= i and protocols[t[n]] then
    r.protocol = t[n]
    r.algorithm = algorithms[table.concat(t, "_", i, n - 1)] or (n > i and table.concat(t, "_", i, n - 1)) or nil
  elseif n >= i and r.collective ~= "Generic" then
    r.algorithm = table.concat(t, "_", i, n)
  end
end

-- ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32[_profile]
local function parse_symk(rest, r)
  rest = gsub(rest, "_profile$", "")
  local t = split(rest)
  r.collective = canonical_collective(t[1])
  local n = #t
  if n >= 4 and types[t[n]] and ops[lower(t[n - 1])] then
    r.op, r.dtype = ops[lower(t[n - 1])], types[t[n]]
    n = n - 2
  end
  if n >= 2 then r.algorithm = table.concat(t, "_", 2, n) end
end

-- ncclKernel_AllReduce_RING_LL_Sum_float: collective, algorithm up to the
-- protocol token, then operation and C type (which may hold underscores).
local function parse_kernel(rest, r)
  local t = split(rest)
  r.collective = canonical_collective(t[1])
  local p
  for i = 2, #t do
    if protocols[t[i]] then p = i break end
  end
  if not p then
    if #t >= 2 then r.algorithm = algorithms[table.concat(t, "_", 2)] or table.concat(t, "_", 2) end
    return
  end
  r.protocol = t[p]
  if p > 2 then r.algorithm = algorithms[table.concat(t, "_", 2, p - 1)] or table.concat(t, "_", 2, p - 1) end
  if t[p + 1] then r.op = ops[lower(t[p + 1])] or t[p + 1] end
  if t[p + 2] then
    local ty = table.concat(t, "_", p + 2)   -- the C type ("__nv_bfloat16" splits to "nv_bfloat16")
    r.dtype = types[ty] or ty
  end
end

-- ncclAllReduceRingLLKernel_sum_f32 / ncclSendRecvKernel_copy_i8
local function parse_legacy(head, op, ty, r)
  local proto = "SIMPLE"
  if find(head, "LL128$") then proto, head = "LL128", head:sub(1, -6)
  elseif find(head, "LL$") then proto, head = "LL", head:sub(1, -3) end
  local algo
  for _, a in ipairs{"CollNetDirect", "CollNetChain", "CollNet", "Ring", "Tree"} do
    if #head > #a and head:sub(-#a) == a then algo, head = algorithms[a], head:sub(1, -#a - 1) break end
  end
  r.collective = canonical_collective(head)
  r.algorithm, r.protocol = algo, algo and proto or nil
  if op and op ~= "copy" then r.op = ops[lower(op)] or op end
  if ty then r.dtype = types[ty] or ty end
end

--- Parses an NCCL kernel name (short or demangled).  Returns nil for a
-- kernel that is not NCCL's, else a table {collective=, algorithm=,
-- protocol=, op=, dtype=, form=}: collective always ("Other" when the name
-- says nothing more), form one of "dev", "symmetric", "kernel", "legacy",
-- "other"; the rest where the name has them.
function M.parse(name)
  if not M.is_nccl(name) then return nil end
  local b = base_name(name)
  local r = {}
  local rest = match(b, "^ncclDevKernel_(.+)$")
  if rest then r.form = "dev"; parse_dev(rest, r)
  else
    rest = match(b, "^ncclSymkDevKernel_(.+)$")
    if rest then r.form = "symmetric"; parse_symk(rest, r)
    else
      rest = match(b, "^ncclKernel_(.+)$")
      if rest then r.form = "kernel"; parse_kernel(rest, r)
      else
        local head, op, ty = match(b, "^nccl(%u%w-)Kernel_(%a+)_(%w+)$")
        if not head then head = match(b, "^nccl(%u%w-)Kernel$") end
        if head then r.form = "legacy"; parse_legacy(head, op, ty, r)
        else r.form = "other" end
      end
    end
  end
  if not r.collective or r.collective == "" then r.collective = "Other" end
  if not M.reducing[r.collective] then r.op, r.dtype = nil, nil end
  return r
end

--- The fields of the parse of every row of a string column of kernel names,
-- as string columns (NULL where absent or not NCCL): {collective=,
-- algorithm=, protocol=, op=, dtype=}.  Each distinct name is parsed once.
function M.annotate(names)
  local cache = {}
  local function parsed(name)
    local r = cache[name]
    if r == nil then
      r = M.parse(name) or false
      cache[name] = r
    end
    return r or nil
  end
  local out = {}
  for _, field in ipairs{"collective", "algorithm", "protocol", "op", "dtype"} do
    out[field] = names:map(function(n)
      local r = parsed(n)
      return r and r[field] or nil
    end)
  end
  return out
end

--- Mask of the rows of a string column of kernel names that are NCCL's.
function M.mask(names) return names:regex("nccl", "i") end

--- Matches the NCCL kernels of several ranks into collective instances.  t
-- has rank, stream, start and type (the collective, e.g. from M.annotate).
-- A rank's streams that run NCCL are numbered by their first kernel; the k-th
-- kernel of a type on a rank's i-th NCCL stream is instance (i, type, k) on
-- every rank (NCCL runs a communicator's collectives in the same order on
-- every rank).  Returns t sorted by (rank, stream number, type, start) with
-- `instance`, the 0-based id of (stream number, type, k).
function M.instances(t)
  local streams = t:group_by("rank", "stream"):agg{"first=min(start)"}:sort("rank", "first")
  streams = streams:with("sidx", nsl.cumcount(streams:group_by("rank"):ids()))
  t = t:join(streams, {"rank", "stream"}, {"sidx"})
  t = t:sort("rank", "sidx", "type", "start")
  t = t:with("seq", nsl.cumcount(t:group_by("rank", "sidx", "type"):ids()))
  return t:with("instance", t:group_by("sidx", "type", "seq"):ids())
end

return M
