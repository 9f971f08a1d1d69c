-- nsl.util.json -- the one JSON reader of nsl (RFC 8259).  Objects keep the order
-- of their keys (kernel maps are ordered: the first matching rule wins), so
-- json.keys(obj) lists them as written.  Encoding stays with nsl.report.json.
--   local v, err = json.decode(text)        -- nil, "line 3, column 7: ..." on bad input
--   local v, err = json.read_file(path)
--   for _, k in ipairs(json.keys(obj)) do ... obj[k] ... end
local report = require("nsl.report")
local read_regular = require("nsl.core").read_file

local M = {}

local byte, sub, find, char = string.byte, string.sub, string.find, string.char
local tonumber, utf8char = tonumber, utf8.char

--- The value JSON null decodes to (nil cannot be stored in a Lua table).
M.null = setmetatable({}, {__tostring = function() return "null" end, __name = "json.null"})

-- Objects carry report.object_mt, so report.json writes them back as objects
-- (also when empty); their key order lives in a weak table beside them.
local object_mt = report.object_mt
local order = setmetatable({}, {__mode = "k"})

local MAX_DEPTH = 500

--- true when v is a decoded JSON object (a Lua table of its members).
function M.is_object(v) return type(v) == "table" and getmetatable(v) == object_mt end

--- true when v is a decoded JSON array.
function M.is_array(v) return type(v) == "table" and v ~= M.null and getmetatable(v) == nil end

--- The keys of a decoded object in document order (a duplicated key keeps
-- its first position and its last value, as Python's json module does).
-- For other tables: their string keys, sorted.
function M.keys(obj)
  local ks = order[obj]
  if ks then return ks end
  local list = {}
  for k in pairs(obj) do if type(k) == "string" then list[#list + 1] = k end end
  table.sort(list)
  return list
end

-- ---- the parser ----

local function where(s, pos)
  local line, col = 1, 1
  local i = 1
  while true do
    local nl = find(s, "\n", i, true)
    if not nl or nl >= pos then break end
    line, i = line + 1, nl + 1
  end
  col = pos - i + 1
  return string.format("line %d, column %d", line, col)
end

local function fail(s, pos, msg) error({json_error = where(s, pos) .. ": " .. msg}, 0) end

local function skip(s, i)
  return (find(s, "[^ \t\r\n]", i)) or #s + 1
end

local escapes = {[34] = '"', [92] = "\\", [47] = "/", [98] = "\b", [102] = "\f", [110] = "\n", [114] = "\r",
                 [116] = "\t"}

local function parse_string(s, i)   -- s[i] is the opening quote
  local parts, n = {}, 0
  local j = i + 1
  while true do
    local k = find(s, '[%z\1-\31"\\]', j)
    if not k then fail(s, i, "unterminated string") end
    if k > j then n = n + 1; parts[n] = sub(s, j, k - 1) end
    local c = byte(s, k)
    if c == 34 then return table.concat(parts), k + 1 end
    if c ~= 92 then fail(s, k, "control character in a string (escape it as \\u00XX)") end
    local e = byte(s, k + 1)
    if e == 117 then   -- \uXXXX, with surrogate pairs
      local hex = sub(s, k + 2, k + 5)
      if not find(hex, "^%x%x%x%x$") then fail(s, k, "bad \\u escape") end
      local cp = tonumber(hex, 16)
      local used = 6
      if cp >= 0xD800 and cp <= 0xDBFF then
        local lo = find(s, "^\\u[dD][c-fC-F]%x%x", k + 6) and tonumber(sub(s, k + 8, k + 11), 16)
        if lo then cp, used = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00), 12
        else cp = 0xFFFD end   -- lone high surrogate
      elseif cp >= 0xDC00 and cp <= 0xDFFF then cp = 0xFFFD end
      n = n + 1; parts[n] = utf8char(cp)
      j = k + used
    else
      local r = escapes[e]
      if not r then fail(s, k, "bad escape \\" .. (e and char(e) or "")) end
      n = n + 1; parts[n] = r
      j = k + 2
    end
  end
end

local function parse_number(s, i)
  local _, e = find(s, "^-?%d+", i)
  if not e then fail(s, i, "unexpected character '" .. sub(s, i, i) .. "'") end
  local int_part = sub(s, i, e)
  if find(int_part, "^-?0%d") then fail(s, i, "leading zero in a number") end
  local is_float = false
  local _, fe = find(s, "^%.%d+", e + 1)
  if fe then e, is_float = fe, true
  elseif sub(s, e + 1, e + 1) == "." then fail(s, e + 1, "digits expected after '.'") end
  local _, xe = find(s, "^[eE][-+]?%d+", e + 1)
  if xe then e, is_float = xe, true
  elseif find(s, "^[eE]", e + 1) then fail(s, e + 1, "digits expected in the exponent") end
  local text = sub(s, i, e)
  local v = tonumber(text)
  if not is_float then v = math.tointeger(v) or v end   -- beyond int64: a float, as Lua reads it
  return v, e + 1
end

local parse_value

local function parse_array(s, i, depth)
  local arr, n = {}, 0
  i = skip(s, i + 1)
  if byte(s, i) == 93 then return arr, i + 1 end
  while true do
    local v
    v, i = parse_value(s, i, depth + 1)
    n = n + 1
    arr[n] = v
    i = skip(s, i)
    local c = byte(s, i)
    if c == 93 then return arr, i + 1 end
    if c ~= 44 then fail(s, i, "',' or ']' expected in an array") end
    i = skip(s, i + 1)
  end
end

local function parse_object(s, i, depth)
  local obj, keys = setmetatable({}, object_mt), {}
  i = skip(s, i + 1)
  if byte(s, i) == 125 then order[obj] = keys; return obj, i + 1 end
  while true do
    if byte(s, i) ~= 34 then fail(s, i, "a string key expected in an object") end
    local k
    k, i = parse_string(s, i)
    i = skip(s, i)
    if byte(s, i) ~= 58 then fail(s, i, "':' expected after an object key") end
    local v
    v, i = parse_value(s, skip(s, i + 1), depth + 1)
    if obj[k] == nil then keys[#keys + 1] = k end
    obj[k] = v
    i = skip(s, i)
    local c = byte(s, i)
    if c == 125 then order[obj] = keys; return obj, i + 1 end
    if c ~= 44 then fail(s, i, "',' or '}' expected in an object") end
    i = skip(s, i + 1)
  end
end

function parse_value(s, i, depth)
  if depth > MAX_DEPTH then fail(s, i, "nested deeper than " .. MAX_DEPTH .. " levels") end
  local c = byte(s, i)
  if c == 123 then return parse_object(s, i, depth)
  elseif c == 91 then return parse_array(s, i, depth)
  elseif c == 34 then return parse_string(s, i)
  elseif c == 116 and sub(s, i, i + 3) == "true" then return true, i + 4
  elseif c == 102 and sub(s, i, i + 4) == "false" then return false, i + 5
  elseif c == 110 and sub(s, i, i + 3) == "null" then return M.null, i + 4
  elseif c == nil then fail(s, i, "unexpected end of input")
  end
  return parse_number(s, i)
end

--- Decodes JSON text; returns the value, or nil and "line L, column C: what".
-- Objects are tables whose key order json.keys gives; null is json.null.
function M.decode(text)
  if type(text) ~= "string" then return nil, "JSON text must be a string" end
  local i = 1
  if sub(text, 1, 3) == "\239\187\191" then i = 4 end   -- a UTF-8 byte-order mark
  local ok, v = pcall(function()
    local v, j = parse_value(text, skip(text, i), 1)
    j = skip(text, j)
    if j <= #text then fail(text, j, "text after the JSON value") end
    return v, j
  end)
  if ok then return v end
  if type(v) == "table" and v.json_error then return nil, v.json_error end
  error(v, 0)
end

--- Reads and decodes a JSON file; returns the value, or nil and a message
-- naming the file.
function M.read_file(path)
  local text, err = read_regular(path)   -- regular files only: a FIFO or /dev/zero is refused at once
  if not text then return nil, err end
  local v, derr = M.decode(text)
  if v == nil then return nil, string.format("%s: not valid JSON: %s", path, derr) end
  return v
end

return M
