-- nsl.util.markdown -- the Markdown that notebooks are written in, to HTML:
-- headings, paragraphs, fenced code, lists, block quotes, pipe tables,
-- inline code, emphasis and links.  Enough for prose around analyses.
local M = {}

local escapes = {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;"}
--- Escapes text for HTML.
function M.escape(s) return (s:gsub("[&<>\"']", escapes)) end

--- A heading's anchor id: lower-case words joined by '-'.
function M.slug(s)
  local id = s:lower():gsub("<[^>]*>", ""):gsub("[^%w%s%-]", ""):gsub("%s+", "-")
  return id ~= "" and id or "section"
end

--- Inline markup of one line of text (already split into blocks).
function M.inline(s)
  local codes = {}
  s = s:gsub("`([^`]+)`", function(c)
    codes[#codes + 1] = "<code>" .. M.escape(c) .. "</code>"
    return "\1" .. #codes .. "\2"
  end)
  s = M.escape(s)
  s = s:gsub("!%[([^%]]*)%]%(([^%)%s]+)%)", '<img alt="%1" src="%2">')
  s = s:gsub("%[([^%]]+)%]%(([^%)%s]+)%)", function(text, url)
    if url:match("^%s*javascript:") then url = "#" end
    return '<a href="' .. url .. '">' .. text .. "</a>"
  end)
  s = s:gsub("%*%*(.-)%*%*", "<strong>%1</strong>")
  s = s:gsub("%f[%w%*]%*([^%*\n]+)%*", "<em>%1</em>")
  s = s:gsub("\1(%d+)\2", function(i) return codes[tonumber(i)] end)
  return s
end

local function split_row(line)
  line = line:gsub("^%s*|", ""):gsub("|%s*$", "")
  local cells = {}
  for cell in (line .. "|"):gmatch("(.-)|") do cells[#cells + 1] = cell:match("^%s*(.-)%s*$") end
  return cells
end

--- Splits a notebook into blocks: {kind = "md", text = ...} and
-- {kind = "code", lang = "lua", code = ..., line = first line number}.
function M.split(text)
  local blocks, md, i = {}, {}, 0
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do lines[#lines + 1] = line end
  local function flush()
    if #md > 0 then blocks[#blocks + 1] = {kind = "md", text = table.concat(md, "\n")} end
    md = {}
  end
  while i < #lines do
    i = i + 1
    local line = lines[i]
    local fence, lang = line:match("^(```+)%s*([%w_%-]*)")
    if fence then
      flush()
      local code, first = {}, i + 1
      i = i + 1
      while i <= #lines and not lines[i]:match("^" .. fence .. "%s*$") do
        code[#code + 1] = lines[i]
        i = i + 1
      end
      blocks[#blocks + 1] = {kind = "code", lang = lang, code = table.concat(code, "\n"), line = first}
    else
      md[#md + 1] = line
    end
  end
  flush()
  return blocks
end

--- Markdown text (no fenced code inside) to HTML; headings are collected in
-- toc as {level, text, id}.
function M.to_html(text, toc)
  local out, para, list = {}, {}, nil
  local function close_para()
    if #para > 0 then out[#out + 1] = "<p>" .. M.inline(table.concat(para, " ")) .. "</p>" end
    para = {}
  end
  local function close_list()
    if list then out[#out + 1] = "</" .. list .. ">" end
    list = nil
  end
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  local i = 0
  while i < #lines do
    i = i + 1
    local line = lines[i]
    local hashes, title = line:match("^(#+)%s+(.-)%s*#*%s*$")
    local bullet = line:match("^%s*[-*+]%s+(.*)$")
    local number = line:match("^%s*%d+[.)]%s+(.*)$")
    if line:match("^%s*$") then
      close_para(); close_list()
    elseif hashes and #hashes <= 6 then
      close_para(); close_list()
      local id = M.slug(title)
      if toc then
        local n, base = 1, id
        for _, h in ipairs(toc) do if h.id == id then n = n + 1; id = base .. "-" .. n end end
        toc[#toc + 1] = {level = #hashes, text = title, id = id}
      end
      out[#out + 1] = string.format('<h%d id="%s">%s</h%d>', #hashes, id, M.inline(title), #hashes)
    elseif line:match("^%s*|.*|%s*$") and lines[i + 1] and lines[i + 1]:match("^%s*|[%s:|%-]+|%s*$") then
      close_para(); close_list()
      local head = split_row(line)
      local rows = {"<table>", "<thead><tr>"}
      for _, c in ipairs(head) do rows[#rows + 1] = "<th>" .. M.inline(c) .. "</th>" end
      rows[#rows + 1] = "</tr></thead><tbody>"
      i = i + 1
      while lines[i + 1] and lines[i + 1]:match("^%s*|.*|%s*$") do
        i = i + 1
        rows[#rows + 1] = "<tr>"
        for _, c in ipairs(split_row(lines[i])) do rows[#rows + 1] = "<td>" .. M.inline(c) .. "</td>" end
        rows[#rows + 1] = "</tr>"
      end
      rows[#rows + 1] = "</tbody></table>"
      out[#out + 1] = table.concat(rows)
    elseif bullet or number then
      close_para()
      local kind = bullet and "ul" or "ol"
      if list ~= kind then close_list(); out[#out + 1] = "<" .. kind .. ">"; list = kind end
      out[#out + 1] = "<li>" .. M.inline(bullet or number) .. "</li>"
    elseif line:match("^>%s?") then
      close_para(); close_list()
      out[#out + 1] = "<blockquote>" .. M.inline(line:gsub("^>%s?", "")) .. "</blockquote>"
    elseif line:match("^    %S") and #para == 0 and not list then   -- an indented code block
      local code = {}
      while lines[i] and (lines[i]:match("^    ") or (lines[i]:match("^%s*$") and lines[i + 1] and lines[i + 1]:match("^    %S"))) do
        code[#code + 1] = lines[i]:sub(5)
        i = i + 1
      end
      i = i - 1
      out[#out + 1] = "<pre><code>" .. M.escape(table.concat(code, "\n")) .. "</code></pre>"
    elseif line:match("^%-%-%-+%s*$") then
      close_para(); close_list()
      out[#out + 1] = "<hr>"
    else
      if list and line:match("^%s+%S") then out[#out] = out[#out]:gsub("</li>$", " " .. M.inline(line) .. "</li>")
      else close_list(); para[#para + 1] = line end
    end
  end
  close_para(); close_list()
  return table.concat(out, "\n")
end

return M
