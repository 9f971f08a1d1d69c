-- nsl.report -- the one table printer: aligned text, CSV, JSON, Markdown and
-- LaTeX (booktabs) renderings of nsl tables, and the number formats they use.
local M = {}

local floor, fmt, concat = math.floor, string.format, table.concat
local math_type = math.type

--- Thousands separators for an integer: 1234567 -> "1,234,567".
function M.int(n)
  local s = fmt("%d", n)
  local sign, digits = s:match("^(-?)(%d+)$")
  digits = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  if digits:sub(1, 1) == "," then digits = digits:sub(2) end
  return sign .. digits
end

--- A float with `decimals` places and thousands separators: 1234.56 -> "1,234.6".
function M.float(x, decimals)
  decimals = decimals or 1
  if x ~= x then return "NaN" end
  if x == math.huge or x == -math.huge then return tostring(x) end
  local s = fmt("%." .. decimals .. "f", x)
  local sign, whole, frac = s:match("^(-?)(%d+)(.*)$")
  if not whole then return s end
  return sign .. M.int(tonumber(whole)) .. frac
end

--- Human duration from ns: 1500 -> "1.500 µs".
function M.duration(ns)
  if ns == nil then return "" end
  local a = math.abs(ns)
  if a >= 1e9 then return fmt("%.3f s", ns / 1e9)
  elseif a >= 1e6 then return fmt("%.3f ms", ns / 1e6)
  elseif a >= 1e3 then return fmt("%.3f µs", ns / 1e3)
  else return fmt("%d ns", floor(ns)) end
end

--- Human size from bytes: 1536 -> "1.50 KiB".
function M.bytes(b)
  if b == nil then return "" end
  local units = {"B", "KiB", "MiB", "GiB", "TiB"}
  local i, v = 1, b
  while math.abs(v) >= 1024 and i < #units do v, i = v / 1024, i + 1 end
  return i == 1 and fmt("%d B", b) or fmt("%.2f %s", v, units[i])
end

--- The cells of a table as strings, plus which columns are numeric.
-- opts.limit: rows shown; opts.decimals: places for floats (default 1);
-- opts.raw: no thousands separators (CSV/JSON/TeX data).
local function cells(t, opts)
  local names = t:columns()
  local n = #t
  local limit = opts.limit and math.min(opts.limit, n) or n
  local cols, numeric, rows = {}, {}, {}
  for k, name in ipairs(names) do
    cols[k] = t[name]
    local ty = t:coltype(name)
    numeric[k] = ty == "i64" or ty == "i32" or ty == "f64"
  end
  local decimals = opts.decimals or 1
  for i = 1, limit do
    local row = {}
    for k = 1, #names do
      local v = cols[k][i]
      if v == nil then row[k] = ""
      elseif math_type(v) == "integer" then row[k] = opts.raw and fmt("%d", v) or M.int(v)
      elseif math_type(v) == "float" then
        if opts.raw then row[k] = fmt("%.17g", v)
        else row[k] = M.float(v, (opts.col_decimals and opts.col_decimals[names[k]]) or decimals) end
      else row[k] = tostring(v) end
    end
    rows[i] = row
  end
  return names, rows, numeric, n
end

--- Aligned text, as `nsys stats` prints: header, dashes, rows; numbers right-aligned.
function M.text(t, opts)
  opts = opts or {}
  local names, rows, numeric, n = cells(t, opts)
  local width = {}
  for k, name in ipairs(names) do width[k] = #name end
  local function w(s) return utf8.len(s) or #s end
  for _, row in ipairs(rows) do
    for k, s in ipairs(row) do width[k] = math.max(width[k], w(s)) end
  end
  local function line(values, is_header)
    local out = {}
    for k, s in ipairs(values) do
      local pad = string.rep(" ", width[k] - w(s))
      local last = k == #values
      if numeric[k] and not is_header then out[k] = pad .. s
      elseif numeric[k] and is_header then out[k] = pad .. s
      else out[k] = last and s or s .. pad end
    end
    return " " .. concat(out, "  ")
  end
  local lines = {}
  if opts.title then lines[#lines + 1] = opts.title; lines[#lines + 1] = "" end
  lines[#lines + 1] = line(names, true)
  local dashes = {}
  for k = 1, #names do dashes[k] = string.rep("-", width[k]) end
  lines[#lines + 1] = " " .. concat(dashes, "  ")
  for _, row in ipairs(rows) do lines[#lines + 1] = line(row) end
  if #rows < n then lines[#lines + 1] = fmt(" ... %s more rows (%s in all)", M.int(n - #rows), M.int(n)) end
  return concat(lines, "\n")
end

local function csv_cell(s)
  if s:find('[,"\r\n]') then return '"' .. s:gsub('"', '""') .. '"' end
  return s
end

--- RFC 4180 CSV with a header row.
function M.csv(t, opts)
  opts = opts or {}
  local names, rows = cells(t, {raw = true, limit = opts.limit})
  local lines = {}
  local h = {}
  for k, name in ipairs(names) do h[k] = csv_cell(name) end
  lines[1] = concat(h, ",")
  for _, row in ipairs(rows) do
    local r = {}
    for k, s in ipairs(row) do r[k] = csv_cell(s) end
    lines[#lines + 1] = concat(r, ",")
  end
  return concat(lines, "\n") .. "\n"
end

--- GitHub-flavoured Markdown pipe table.
function M.md(t, opts)
  opts = opts or {}
  local names, rows, numeric = cells(t, opts)
  local function esc(s) return (s:gsub("|", "\\|")) end
  local lines = {}
  local h, a = {}, {}
  for k, name in ipairs(names) do
    h[k] = esc(name)
    a[k] = numeric[k] and "---:" or ":---"
  end
  lines[1] = "| " .. concat(h, " | ") .. " |"
  lines[2] = "| " .. concat(a, " | ") .. " |"
  for _, row in ipairs(rows) do
    local r = {}
    for k, s in ipairs(row) do r[k] = esc(s) end
    lines[#lines + 1] = "| " .. concat(r, " | ") .. " |"
  end
  if opts.title then table.insert(lines, 1, "### " .. opts.title .. "\n") end
  return concat(lines, "\n") .. "\n"
end

local tex_escapes = {["\\"] = "\\textbackslash{}", ["&"] = "\\&", ["%"] = "\\%", ["$"] = "\\$", ["#"] = "\\#",
                     ["_"] = "\\_", ["{"] = "\\{", ["}"] = "\\}", ["~"] = "\\textasciitilde{}",
                     ["^"] = "\\textasciicircum{}"}
local function tex(s) return (s:gsub("[\\&%%$#_{}~^]", tex_escapes)) end

--- LaTeX tabular with booktabs rules (\toprule, \midrule, \bottomrule).
function M.tex(t, opts)
  opts = opts or {}
  local names, rows, numeric = cells(t, opts)
  local spec, h = {}, {}
  for k, name in ipairs(names) do
    spec[k] = numeric[k] and "r" or "l"
    h[k] = tex(name)
  end
  local lines = {}
  if opts.title then lines[#lines + 1] = "% " .. opts.title end
  lines[#lines + 1] = "\\begin{tabular}{" .. concat(spec) .. "}"
  lines[#lines + 1] = "\\toprule"
  lines[#lines + 1] = concat(h, " & ") .. " \\\\"
  lines[#lines + 1] = "\\midrule"
  for _, row in ipairs(rows) do
    local r = {}
    for k, s in ipairs(row) do r[k] = tex(s) end
    lines[#lines + 1] = concat(r, " & ") .. " \\\\"
  end
  lines[#lines + 1] = "\\bottomrule"
  lines[#lines + 1] = "\\end{tabular}"
  return concat(lines, "\n") .. "\n"
end

local html_escapes = {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;"}
local function html(s) return (s:gsub('[&<>"]', html_escapes)) end

--- An HTML <table> (numbers right-aligned, at most opts.limit rows).
function M.html(t, opts)
  opts = opts or {}
  local names, rows, numeric, n = cells(t, opts)
  local out = {'<table class="nsl">'}
  if opts.title then out[#out + 1] = "<caption>" .. html(opts.title) .. "</caption>" end
  out[#out + 1] = "<thead><tr>"
  for k, name in ipairs(names) do
    out[#out + 1] = (numeric[k] and '<th class="num">' or "<th>") .. html(name) .. "</th>"
  end
  out[#out + 1] = "</tr></thead><tbody>"
  for _, row in ipairs(rows) do
    out[#out + 1] = "<tr>"
    for k, v in ipairs(row) do out[#out + 1] = (numeric[k] and '<td class="num">' or "<td>") .. html(v) .. "</td>" end
    out[#out + 1] = "</tr>"
  end
  out[#out + 1] = "</tbody></table>"
  if #rows < n then out[#out + 1] = string.format('<p class="more">%s more rows (%s in all)</p>', M.int(n - #rows), M.int(n)) end
  return table.concat(out)
end

-- ---- JSON ----

local json_escapes = {['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
                      ["\r"] = "\\r", ["\t"] = "\\t"}
local function json_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return json_escapes[c] or fmt("\\u%04x", c:byte())
  end) .. '"'
end

local function is_array(v)
  local n = #v
  for k in pairs(v) do
    if math_type(k) ~= "integer" or k < 1 or k > n then return false end
  end
  return true
end

--- Encodes a Lua value (nil, boolean, number, string, array, map, nsl
-- table) as JSON.  Map keys are sorted, so output is stable.
function M.json(v, indent, level)
  level = level or 0
  local ty = type(v)
  if v == nil then return "null"
  elseif ty == "boolean" then return tostring(v)
  elseif ty == "number" then
    if math_type(v) == "integer" then return fmt("%d", v) end
    if v ~= v or v == math.huge or v == -math.huge then return "null" end
    return fmt("%.17g", v)
  elseif ty == "string" then return json_string(v)
  elseif ty == "userdata" and require("nsl.core").type(v) == "table" then
    return M.json(M.records(v), indent, level)
  elseif ty == "table" then
    local nl = indent and "\n" .. string.rep(indent, level + 1) or ""
    local close = indent and "\n" .. string.rep(indent, level) or ""
    local sep = indent and ": " or ":"
    local parts = {}
    if next(v) == nil then return is_array(v) and (getmetatable(v) == M.object_mt and "{}" or "[]") or "{}" end
    if is_array(v) then
      for i = 1, #v do parts[i] = M.json(v[i], indent, level + 1) end
      return "[" .. nl .. concat(parts, "," .. nl) .. close .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    for i, k in ipairs(keys) do
      local val = v[k]
      if val == nil then val = v[tonumber(k)] end
      parts[i] = json_string(k) .. sep .. M.json(val, indent, level + 1)
    end
    return "{" .. nl .. concat(parts, "," .. nl) .. close .. "}"
  end
  error("cannot encode a " .. ty .. " as JSON")
end
M.object_mt = {}

--- An nsl table as an array of records {column = value} (NULL -> absent).
function M.records(t, limit)
  local out = {}
  local i = 0
  for row in t:rows(1, limit) do
    i = i + 1
    out[i] = row
  end
  return out
end

return M
