-- nsl.classes -- kernel classification: an ordered map from name patterns to
-- classes (GEMM, attention, NCCL, ...), applied once per distinct name.
--
-- Maps (classes.load):
--   * vLLM's gputrc2graph JSON files (vllm_engine_model.json and the like):
--     {engine: {model: {regex: class, ...}}} -- Python regular expressions
--     tried in order with re.search on the demangled name, memory operations
--     included under their nsys names ("[CUDA memcpy Host-to-Device]", ...);
--     choose the map with model = "engine/model" (or "model" when unique).
--     One level less ({model: {...}}) or a bare {regex: class} object, and
--     the older {"layer_anno": {"Substage": {...}}} nesting, load too.
--   * NVIDIA GPU Performance Analyzer configs: {"kernel_to_class_map":
--     {substring: class}, ...}: lower-cased substrings of the lower-cased
--     demangled kernel name, first listed key wins, kernels without a match
--     go to "others", class names lower-cased; memory operations are not
--     classified by the map (they are "memory").
--   * the built-in default (classes.default_map): case-insensitive patterns
--     over the kernel's own (short) name for gemm, attention, convolution,
--     normalization, softmax, reduction, elementwise, memory, else "other".
-- In every map NCCL kernels (names containing "nccl") are the class "nccl",
-- and memory operations the class "memory", unless a rule of a vLLM-style map
-- names them itself (a rule that does not also match the empty string: a
-- catch-all ".*" does not count).
local nsl = require("nsl")
local json = require("nsl.util.json")
local nccl = require("nsl.nccl")
local gpu_ops = require("nsl.gpu_ops")

local M = {}

local lower, find = string.lower, string.find

M.NCCL, M.MEMORY = "nccl", "memory"

-- The built-in map: tried in order, case-insensitive, on short names.
local default_rules = {
  {"flash|fmha|attention|attn|sdpa|mha_|xformers|paged_?kv|mla_", "attention"},
  {"conv|fprop|dgrad|wgrad|winograd|implicit_?gemm", "convolution"},
  {"gemm|gemv|nvjet|matmul|cublas|cutlass|xmma|hmma|imma|bmm|splitkreduce|triton_tem", "gemm"},
  {"softmax", "softmax"},
  {"layer_?norm|rms_?norm|batch_?norm|group_?norm|instance_?norm|_norm_|norm_kernel|normaliz|welford", "normalization"},
  {"reduce|reduction|argmax|argmin|cumsum|scan|topk|triton_red|triton_per", "reduction"},
  {"elementwise|pointwise|triton_poi|foreach|act_and_mul|gelu|silu|relu|dropout|rotary|rope", "elementwise"},
  {"copy|memcpy|memset|concat|catarray|transpose|gather|scatter|index|fill|pad|permute", "memory"},
}

local Map = {}
Map.__index = Map

-- Compiles rules {{pattern, class}, ...} into a map object.
local function new_map(spec)
  local self = setmetatable({kind = spec.kind, source = spec.source, names = spec.names, rules = {},
                             fallback = spec.fallback, nccl_first = spec.nccl_first,
                             memops_by_rules = spec.memops_by_rules, warnings = spec.warnings or {}}, Map)
  for i, r in ipairs(spec.rules) do
    local pattern, class = r[1], r[2]
    if type(pattern) ~= "string" or type(class) ~= "string" then
      error(string.format("%s: rule %d: pattern and class must be strings", spec.source, i), 0)
    end
    local rule = {pattern = pattern, class = class}
    if spec.kind == "substring" then
      local key = lower(pattern)
      rule.test = function(name) return find(lower(name), key, 1, true) ~= nil end
      rule.catch_all = key == ""
    else
      local ok, re = pcall(nsl.regex, pattern, spec.icase and "i" or nil)
      if not ok then error(string.format("%s: %s", spec.source, tostring(re)), 0) end
      rule.test = function(name) return re:search(name) end
      rule.catch_all = re:search("")
    end
    self.rules[i] = rule
  end
  return self
end

--- map:classify(name) -> the class of a kernel or memory operation name.
function Map:classify(name)
  local memop = gpu_ops.is_memop(name)
  local is_nccl = not memop and nccl.is_nccl(name)
  if memop and not self.memops_by_rules then return M.MEMORY end
  if is_nccl and self.nccl_first then return M.NCCL end
  for _, r in ipairs(self.rules) do
    if r.test(name) then
      if r.catch_all and (memop or is_nccl) then break end
      return r.class
    end
  end
  if memop then return M.MEMORY end
  if is_nccl then return M.NCCL end
  return self.fallback
end

--- The classes a map can give, in rule order, then the automatic ones.
function Map:classes()
  local list, seen = {}, {}
  local function add(c) if not seen[c] then seen[c] = true; list[#list + 1] = c end end
  for _, r in ipairs(self.rules) do add(r.class) end
  add(M.NCCL); add(M.MEMORY); add(self.fallback)
  return list
end

--- The built-in map.
function M.default_map()
  return new_map{kind = "regex", source = "built-in map", names = "short", rules = default_rules, icase = true,
                 fallback = "other", nccl_first = true, memops_by_rules = false}
end

--- A map from an ordered list of {pattern, class} rules: kind "regex"
-- (Python syntax, case-sensitive unless icase) or "substring" (GPA rules).
function M.from_rules(rules, opts)
  opts = opts or {}
  local kind = opts.kind or "regex"
  return new_map{kind = kind, source = opts.source or "rules", names = opts.names or "demangled", rules = rules,
                 icase = opts.icase, fallback = opts.fallback or (kind == "substring" and "others" or "other"),
                 nccl_first = kind == "substring" or opts.nccl_first, memops_by_rules = kind ~= "substring"}
end

-- true when every value of a decoded object is a string (a rule map).
local function is_rule_map(v)
  if not json.is_object(v) then return false end
  for _, k in ipairs(json.keys(v)) do
    if type(v[k]) ~= "string" then return false end
  end
  return true
end

local function ordered_rules(obj)
  local rules = {}
  for i, k in ipairs(json.keys(obj)) do rules[i] = {k, obj[k]} end
  return rules
end

-- The rule maps of a vLLM-style file as {name, object} pairs in file order:
-- "engine/model" names for two levels, "model" for one, "" for a bare map.
local function vllm_maps(doc)
  local function leaf(v)
    if json.is_object(v) and json.is_object(v.layer_anno) and is_rule_map(v.layer_anno.Substage) then
      return v.layer_anno.Substage   -- gputrc2graph's older Stage/Substage nesting
    end
    return is_rule_map(v) and v or nil
  end
  if leaf(doc) then return {{"", leaf(doc)}} end
  local maps = {}
  for _, k1 in ipairs(json.keys(doc)) do
    local v1 = doc[k1]
    if leaf(v1) then maps[#maps + 1] = {k1, leaf(v1)}
    elseif json.is_object(v1) then
      for _, k2 in ipairs(json.keys(v1)) do
        if leaf(v1[k2]) then maps[#maps + 1] = {k1 .. "/" .. k2, leaf(v1[k2])} end
      end
    end
  end
  return maps
end

--- Loads a kernel map from a JSON file (formats above); key picks one map
-- of a file that holds several ("engine/model", or "model" when unique).
-- Returns the map, or nil and a message that names the file.
function M.load(path, key)
  local doc, err = json.read_file(path)
  if doc == nil then return nil, err end
  if not json.is_object(doc) then return nil, string.format("%s: a kernel map must be a JSON object", path) end
  if doc.kernel_to_class_map ~= nil then   -- GPU Performance Analyzer
    local m = doc.kernel_to_class_map
    if not is_rule_map(m) then
      return nil, string.format("%s: kernel_to_class_map must map name parts to class names (strings)", path)
    end
    local rules, warnings, keys = {}, {}, json.keys(m)
    for i, k in ipairs(keys) do
      local class = lower(m[k])
      if class == "other" then
        return nil, string.format("%s: class name 'other' is reserved (kernels without a match go to 'others')", path)
      end
      rules[i] = {lower(k), class}
      for j = 1, i - 1 do
        local a, b = lower(keys[j]), lower(k)
        if find(a, b, 1, true) or find(b, a, 1, true) then
          warnings[#warnings + 1] = string.format("%s: keys '%s' and '%s' contain one another; '%s' is tried first " ..
            "(GPU Performance Analyzer refuses such maps)", path, keys[j], k, keys[j])
        end
      end
    end
    local ok, map = pcall(new_map, {kind = "substring", source = path, names = "demangled", rules = rules,
                                    fallback = "others", nccl_first = true, memops_by_rules = false,
                                    warnings = warnings})
    if not ok then return nil, map end
    map.format = "gpa"
    return map
  end
  local maps = vllm_maps(doc)
  if #maps == 0 then
    return nil, string.format("%s: no kernel map found: expected {regex: class}, {model: {regex: class}}, " ..
      "{engine: {model: {regex: class}}} or {\"kernel_to_class_map\": {...}}", path)
  end
  local chosen
  if key == nil or key == "" then
    if #maps > 1 then
      local names = {}
      for i, m in ipairs(maps) do names[i] = m[1] end
      return nil, string.format("%s holds %d maps (%s): choose one with --arg model=NAME", path, #maps,
                                table.concat(names, ", "))
    end
    chosen = maps[1]
  else
    local hits = {}
    for _, m in ipairs(maps) do
      if m[1] == key or m[1]:match("[^/]+$") == key then hits[#hits + 1] = m end
    end
    if #hits ~= 1 then
      local names = {}
      for i, m in ipairs(maps) do names[i] = m[1] end
      return nil, string.format("%s: %s map '%s' (maps: %s)", path, #hits == 0 and "no" or "more than one", key,
                                table.concat(names, ", "))
    end
    chosen = hits[1]
  end
  local ok, map = pcall(new_map, {kind = "regex", source = path .. (chosen[1] ~= "" and (" [" .. chosen[1] .. "]") or ""),
                                  names = "demangled", rules = ordered_rules(chosen[2]), fallback = "other",
                                  nccl_first = false, memops_by_rules = true})
  if not ok then return nil, map end
  map.format, map.key = "vllm", chosen[1]
  return map
end

--- The map an analysis's arguments name: --arg map (a JSON file, M.load;
-- --arg model picks one of several), else the built-in one (M.default_map).
-- Fails with M.load's message.
function M.of_args(args)
  if args.map == "" then return M.default_map() end
  local map, err = M.load(args.map, args.model)
  if not map then nsl.fail(err) end
  return map
end

--- The class of every row of a string column of names under map (each
-- distinct name classified once; rows mapped in C).
function M.classify_column(names, map)
  return names:map(function(n) return map:classify(n) end)
end

return M
