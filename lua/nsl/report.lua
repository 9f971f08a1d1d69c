-- nsl.report -- the one table printer: aligned text, CSV, JSON, Markdown and
-- LaTeX (booktabs) renderings of nsl tables, and the number formats they use.
local M = {}

local floor, fmt, concat = math.floor, string.format, table.concat
local math_type = math.type
-- Names from a trace reach the terminal only as printable text: every cell,
-- header and title passes through it (control characters as \xNN).
local printable = require("nsl.core").printable
local json_plain = require("nsl.core").json_plain

-- Thousands separators in a string of digits: "1234567" -> "1,234,567".
local function grouped(digits)
  digits = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  if digits:sub(1, 1) == "," then digits = digits:sub(2) end
  return digits
end

--- Thousands separators for an integer: 1234567 -> "1,234,567".
function M.int(n)
  local sign, digits = fmt("%d", n):match("^(-?)(%d+)$")
  return sign .. grouped(digits)
end

--- A float with `decimals` places and thousands separators: 1234.56 -> "1,234.6".
function M.float(x, decimals)
  decimals = decimals or 1
  if x ~= x then return "NaN" end
  if x == math.huge or x == -math.huge then return tostring(x) end
  local s = fmt("%." .. decimals .. "f", x)
  local sign, whole, frac = s:match("^(-?)(%d+)(.*)$")
  if not whole then return s end
  if sign == "-" and not (whole .. frac):find("[1-9]") then sign = "" end   -- -0.0 (or -0.04 rounded) is 0.0
  return sign .. grouped(whole) .. frac   -- the digits as printed: 1e308 has no integer of its own
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

--- The input files of a run as one line says them: all of them up to
-- M.files_named, else the first two, the last and how many
-- ("r0.sqlite, r1.sqlite, …, r1023.sqlite (1,024 files)"), so that a
-- message or heading about a job of a thousand ranks stays a line.
M.files_named = 4
function M.files(paths)
  local n = #paths
  if n <= M.files_named then return concat(paths, ", ") end
  return fmt("%s, %s, …, %s (%s files)", paths[1], paths[2], paths[n], M.int(n))
end

--- Human size from bytes: 1536 -> "1.50 KiB".
function M.bytes(b)
  if b == nil then return "" end
  local units = {"B", "KiB", "MiB", "GiB", "TiB"}
  local i, v = 1, b
  while math.abs(v) >= 1024 and i < #units do v, i = v / 1024, i + 1 end
  return i == 1 and fmt("%d B", b) or fmt("%.2f %s", v, units[i])
end

-- ---- how a column reads ----
-- A column's unit is declared by its name where the column is made:
--   "x (ns)" or "x_ns"    integer (or float) nanoseconds: the human formats
--                          (text, md, tex, html) show them in the unit that
--                          suits the column, named in the header ("x (ms)");
--   "x (ns from start)"   integer ns counted from the trace's start (its first
--                          event, nsl.window.origin): the human formats show
--                          seconds with 6 decimals, header "x (s from start)",
--                          so one event reads the same in every output;
--   "address" or "x_addr" an address: hex in the human formats;
--   "name", "kernel", "demangled" (string)  a kernel or range name: template
--                          arguments elided in the human formats, and the
--                          column placed last.
-- CSV and JSON keep every column as it is: full names, raw integers, under
-- the name (with its unit) the analysis gave.  opts.nsys_stats marks a table
-- that reproduces an `nsys stats` report: its columns stay exactly as made.

local name_columns = {name = true, kernel = true, demangled = true}

--- The duration-column base name of `name` ("Total (ns)" -> "Total",
-- "gap_ns" -> "gap"), or nil when the name declares no ns unit.
function M.ns_base(name)
  return name:match("^(.-)%s*%(ns%)$") or name:match("^(.+)_ns$")
end

local function is_address(name) return name == "address" or name:match("_addr$") ~= nil end

--- A kernel name with its template arguments elided: "f<int, 4>(T1)" ->
-- "f<…>(T1)".  Names whose angle brackets do not balance (operator<) stay.
function M.short_name(s)
  if not s:find("<", 1, true) then return s end
  local out, depth, last = {}, 0, 1
  for i = 1, #s do
    local c = s:byte(i)
    if c == 60 then          -- <
      if depth == 0 then out[#out + 1] = s:sub(last, i) .. "…" end
      depth = depth + 1
    elseif c == 62 and depth > 0 then   -- >
      depth = depth - 1
      if depth == 0 then last = i end
    elseif c == 62 then return s end
  end
  if depth ~= 0 then return s end
  out[#out + 1] = s:sub(last)
  return concat(out)
end

-- The unit that suits a duration column: that of its median magnitude.
local units = {{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}}
local function duration_unit(col, limit, more)
  local mags = {}
  for _, c in ipairs(more and {col, table.unpack(more)} or {col}) do
    for i = 1, limit do
      local v = c[i]
      if v and v ~= 0 and v == v then mags[#mags + 1] = math.abs(v) end
    end
  end
  if #mags == 0 then return 1, "ns" end
  table.sort(mags)
  local med = mags[(#mags + 1) // 2]
  for _, u in ipairs(units) do if med >= u[1] then return u[1], u[2] end end
  return 1, "ns"
end

--- The cells of a table as strings, plus which columns are numeric.
-- opts.limit: rows shown; opts.decimals: places for floats (default 1);
-- opts.nsys_stats: columns exactly as made (no units, no reordering);
-- opts.same_unit: lists of ns columns that show one quantity and share one
-- unit ({{"wait caused (ns)", "wait suffered (ns)"}}).
-- Returns the headers, rows, numeric, n (all rows), and the index of the
-- last column when it is text (the one a narrow terminal cuts).
local function cells(t, opts)
  local names = t:columns()
  local n = #t
  local limit = opts.limit and math.min(opts.limit, n) or n
  local human = not opts.nsys_stats
  local cols, numeric, rows, headers, kinds, scale = {}, {}, {}, {}, {}, {}
  for k, name in ipairs(names) do
    cols[k] = t:col(name)
    local ty = t:coltype(name)
    numeric[k] = ty == "i64" or ty == "i32" or ty == "f64"
    headers[k] = printable(name)
    if human and numeric[k] and M.ns_base(name) then
      local unit, more
      for _, group in ipairs(opts.same_unit or {}) do
        for _, g in ipairs(group) do
          if g == name then
            more = {}
            for _, other in ipairs(group) do
              for _, present in ipairs(names) do
                if present == other and other ~= name then more[#more + 1] = t:col(other) end
              end
            end
          end
        end
      end
      scale[k], unit = duration_unit(cols[k], limit, more)
      kinds[k] = "ns"
      headers[k] = M.ns_base(name) .. " (" .. unit .. ")"
    elseif human and numeric[k] and name:match("%(ns from start%)$") then
      kinds[k] = "at"
      headers[k] = printable((name:gsub("%(ns from start%)$", "(s from start)")))
    elseif human and (ty == "i64" or ty == "i32") and is_address(name) then kinds[k] = "addr"
    elseif human and ty == "str" and name_columns[name] then kinds[k] = "name" end
  end
  local decimals = opts.decimals or 1
  for i = 1, limit do
    local row = {}
    for k = 1, #names do
      local v = cols[k][i]
      local kind = kinds[k]
      if v == nil then row[k] = ""
      elseif kind == "ns" then
        if scale[k] == 1 then row[k] = math_type(v) == "integer" and M.int(v) or M.float(v, decimals)
        else row[k] = M.float(v / scale[k], 3) end
      elseif kind == "at" then row[k] = fmt("%.6f", v / 1e9)
      elseif kind == "addr" then row[k] = fmt("0x%x", v)
      elseif kind == "name" then row[k] = printable(M.short_name(v))
      elseif math_type(v) == "integer" then row[k] = M.int(v)
      elseif math_type(v) == "float" then
        row[k] = M.float(v, (opts.col_decimals and opts.col_decimals[names[k]]) or decimals)
      else row[k] = printable(tostring(v)) end
    end
    rows[i] = row
  end
  -- names go last, so the numbers stay in view however long the names are
  local order, tail = {}, {}
  for k = 1, #names do
    if kinds[k] == "name" then tail[#tail + 1] = k else order[#order + 1] = k end
  end
  for _, k in ipairs(tail) do order[#order + 1] = k end
  -- the last column, when it is text, is the one a narrow terminal cuts
  local cut = #order > 0 and not numeric[order[#order]] and not opts.nsys_stats and #order or nil
  local function permute(list)
    local r = {}
    for j, k in ipairs(order) do r[j] = list[k] end
    return r
  end
  for i, row in ipairs(rows) do rows[i] = permute(row) end
  return permute(headers), rows, permute(numeric), n, cut
end

local function display_width(s) return utf8.len(s) or #s end

--- s padded with spaces to w characters on the screen (not bytes: "µs" is
-- two): on the left (right-aligned) when right is true.
function M.pad(s, w, right)
  local fill = string.rep(" ", math.max(0, w - display_width(s)))
  return right and fill .. s or s .. fill
end

-- s cut to w display characters, ending in "…" when cut.
local function cut_to(s, w)
  if display_width(s) <= w then return s end
  if w < 1 then return "" end
  local stop = utf8.offset(s, w) or (w + 1)
  return s:sub(1, stop - 1) .. "…"
end

-- The columns of each block of a table printed `width` wide: the leading
-- text columns (keys) start every block and the last text column (cut, the
-- names) ends every block, so each block says which row is which; the
-- other columns fill the blocks in order while they fit, leaving the names
-- at least 24 characters.  Returns the blocks and the room of the names.
local function blocks_for(widths, numeric, cut, width)
  local keys, k = {}, 1
  local key_w = 1
  while k <= #widths and not numeric[k] and k ~= cut and key_w + widths[k] + 2 <= width // 2 do
    keys[#keys + 1], key_w, k = k, key_w + widths[k] + 2, k + 1
  end
  local reserve = cut and math.min(24, widths[cut]) or 0
  local blocks, cur, used, widest = {}, {table.unpack(keys)}, key_w, key_w
  local function flush()
    if cut then cur[#cur + 1] = cut end
    blocks[#blocks + 1], cur, used = cur, {table.unpack(keys)}, key_w
  end
  for j = k, #widths do
    if j ~= cut then
      local need = widths[j] + 2
      if used + need + reserve > width and #cur > #keys then flush() end
      cur[#cur + 1], used = j, used + need
      widest = math.max(widest, used)
    end
  end
  if #cur > #keys or #blocks == 0 then flush() end
  return blocks, cut and math.max(width - widest, math.min(12, widths[cut])) or nil
end

--- Text wrapped at spaces to lines of at most `width` characters (a word
-- longer than that stays whole on its own line); line breaks are kept.
function M.wrap(text, width)
  local out = {}
  for para in (text .. "\n"):gmatch("(.-)\n") do
    local line = ""
    for word in para:gmatch("%S+") do
      if line ~= "" and display_width(line) + 1 + display_width(word) > width then
        out[#out + 1] = line
        line = word
      else line = line == "" and word or line .. " " .. word end
    end
    out[#out + 1] = line
  end
  return concat(out, "\n")
end

--- Aligned text, as `nsys stats` prints: header, dashes, rows; numbers
-- right-aligned.  opts.width: the terminal's width (nsl.engine.output passes it
-- when stdout is a terminal): the last text column is cut to fit, and a
-- table still wider is printed in blocks of columns that fit, each starting
-- with the leading text columns and ending with the names.
function M.text(t, opts)
  opts = opts or {}
  local names, rows, numeric, n, cut = cells(t, opts)
  local width = {}
  for k, name in ipairs(names) do width[k] = display_width(name) end
  local w = display_width
  for _, row in ipairs(rows) do
    for k, s in ipairs(row) do width[k] = math.max(width[k], w(s)) end
  end
  local every = {}
  for k = 1, #names do every[k] = k end
  local blocks = {every}
  if opts.width and not opts.nsys_stats then
    local room
    blocks, room = blocks_for(width, numeric, cut, opts.width)
    if cut and room and width[cut] > room then
      width[cut] = room
      names[cut] = cut_to(names[cut], room)
      for _, row in ipairs(rows) do row[cut] = cut_to(row[cut], room) end
    end
  end
  local function line(values, cols)
    local out = {}
    for i, k in ipairs(cols) do
      local s = values[k]
      local pad = string.rep(" ", width[k] - w(s))
      if numeric[k] then out[i] = pad .. s
      else out[i] = i == #cols and s or s .. pad end
    end
    return " " .. concat(out, "  ")
  end
  local lines = {}
  if opts.title then
    local title = printable(opts.title)
    lines[#lines + 1] = opts.width and M.wrap(title, opts.width) or title
    lines[#lines + 1] = ""
  end
  for b, cols in ipairs(blocks) do
    if b > 1 then lines[#lines + 1] = "" end
    lines[#lines + 1] = line(names, cols)
    local dashes = {}
    for i, k in ipairs(cols) do dashes[i] = string.rep("-", width[k]) end
    lines[#lines + 1] = " " .. concat(dashes, "  ")
    for _, row in ipairs(rows) do lines[#lines + 1] = line(row, cols) end
  end
  if #rows < n then lines[#lines + 1] = fmt(" ... %s more rows (%s in all)", M.int(n - #rows), M.int(n)) end
  return concat(lines, "\n")
end

--- RFC 4180 CSV with a header row: every column under its own name, values
-- whole (raw integers, full names; NULL empty), written in C.
-- opts.limit: the first rows only.
function M.csv(t, opts)
  if opts and opts.limit and opts.limit < #t then t = t:head(opts.limit) end
  return require("nsl.core").format_table(t, "csv")
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
  if opts.title then table.insert(lines, 1, "### " .. printable(opts.title) .. "\n") end
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
  if opts.title then lines[#lines + 1] = "% " .. printable(opts.title) end
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

local function html_table(t, opts)
  local names, rows, numeric = cells(t, opts)
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
  return concat(out)
end

--- An HTML <table> of the first opts.limit rows (numbers right-aligned);
-- when there are more, the whole table (up to opts.full_limit rows, 1,000
-- by default) follows in a <details> element, a click away, no script.
function M.html(t, opts)
  opts = opts or {}
  local n = #t
  local shown = opts.limit or n
  local first = html_table(t, {limit = shown, title = opts.title, decimals = opts.decimals,
                               col_decimals = opts.col_decimals, nsys_stats = opts.nsys_stats})
  if n <= shown then return first end
  local all = math.min(n, opts.full_limit or 1000)
  local label = all == n and fmt("all %s rows", M.int(n)) or fmt("the first %s of %s rows (--out DIR writes them all as CSV)",
                                                                  M.int(all), M.int(n))
  return first .. fmt('<details class="more"><summary>%s</summary>', html(label)) ..
         html_table(t, {limit = all, decimals = opts.decimals, col_decimals = opts.col_decimals,
                        nsys_stats = opts.nsys_stats}) .. "</details>"
end

-- ---- JSON ----

local json_escapes = {['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
                      ["\r"] = "\\r", ["\t"] = "\\t"}
-- JSON string of s: C0, DEL and C1 controls escaped as \u00XX (JSON
-- allows DEL and C1 raw, a terminal would obey them), bytes that are not
-- UTF-8 as U+FFFD, as the C writer (format_table) does.
local function json_string(s)
  if json_plain(s) then return '"' .. s .. '"' end   -- (most strings: one pass in C, no Lua pattern over each byte)
  s = s:gsub('[%c"\\]', function(c) return json_escapes[c] or fmt("\\u%04x", c:byte()) end)
       :gsub("\194([\128-\159])", function(c) return fmt("\\u%04x", c:byte()) end)
  local ok, bad = utf8.len(s)
  while not ok do
    s = s:sub(1, bad - 1) .. "\u{FFFD}" .. s:sub(bad + 1)
    ok, bad = utf8.len(s, bad + 3)
  end
  return '"' .. s .. '"'
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
    return require("nsl.core").format_table(v, "json")   -- an array of row objects, NULL as null
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

--- An nsl table as an array of Lua records {column = value} (NULL -> absent);
-- JSON text of a table is M.json(t), written in C.
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
