-- nsl.engine.notebook -- literate analyses: Markdown files with ```lua cells, run in
-- order in one Lua state, rendered to one self-contained HTML file (prose,
-- code, printed output, tables, figures, table of contents) or to a Jupyter
-- notebook (.ipynb, nbformat 4) with the outputs filled in.
--
-- In a cell: `trace` is the loaded trace, `nsl` the library, print() goes to
-- the cell's output, show(x) displays a table, a figure (canvas), SVG text,
-- an interactive timeline (require("nsl.engine.view").viewer(trace, {from =, to =}))
-- or any value, run(name, {KEY = value}) runs a shipped analysis and displays
-- its findings, figures, then text and tables (an analysis that stops
-- because the trace lacks its data shows its message as a note).
-- A cell whose last line is an expression displays its value (a figure
-- without the data a plot function returns beside it).
local nsl = require("nsl")
local md = require("nsl.util.markdown")
local report = require("nsl.report")
local findings = require("nsl.findings")

local M = {}

local function is_canvas(v) return nsl.type(v) == "canvas" end

--- An output item for a value: {kind = "table"|"png"|"svg"|"text"|"html", ...}.
-- topts: an analysis's out:table options (nsys_stats: columns exactly as made).
local function display(v, title, topts)
  local kind = nsl.type(v)
  if kind == "table" then
    local nsys_stats = topts and topts.nsys_stats
    return {kind = "table", title = title, html = report.html(v, {limit = 50, title = title, nsys_stats = nsys_stats}),
            text = report.text(v, {limit = 50, title = title, nsys_stats = nsys_stats})}
  elseif type(v) == "string" and v:match("^%s*<svg") then
    return {kind = "svg", data = v, title = title}
  elseif type(v) == "string" and v:sub(1, 8) == "\137PNG\r\n\26\n" then
    return {kind = "png", data = v, title = title}
  elseif require("nsl.engine.view").is_viewer(v) then   -- the interactive timeline (nsl.engine.view), embedded whole
    return {kind = "html", html = v:fragment(), title = title or "timeline"}
  elseif is_canvas(v) then
    local data = v:to_string()
    return {kind = data:sub(1, 4) == "\137PNG" and "png" or "svg", data = data, title = title}
  end
  return {kind = "text", text = kind and tostring(v) or require("nsl.engine.repl").show(v)}
end

--- The outputs of an analysis's out object: its findings first (the
-- answer), then its figures, then its text and tables in the order it gave them.
local function analysis_outputs(out, outputs)
  for _, f in ipairs(out.findings) do
    outputs[#outputs + 1] = {kind = "finding", severity = f.severity, text = table.concat(findings.lines(f, out.at), "\n")}
  end
  for _, it in ipairs(out.items) do
    if it.kind == "figure" then outputs[#outputs + 1] = {kind = it.format, data = it.data, title = it.title or it.name} end
  end
  for _, it in ipairs(out.items) do
    if it.kind == "table" then outputs[#outputs + 1] = display(it.opts.shown or it.t, it.opts.title or it.name, it.opts)
    elseif it.kind == "text" then outputs[#outputs + 1] = {kind = "stream", text = it.text .. "\n"} end
  end
end

--- Runs the notebook text against trace (may be nil); returns the list of
-- blocks, code blocks carrying .outputs and .error.  opts.stop_on_error,
-- opts.path (for error positions), opts.trace_paths.
function M.run(text, trace, opts)
  opts = opts or {}
  local blocks = md.split(text)
  local env = setmetatable({}, {__index = _G})
  env.nsl, env.trace = nsl, trace
  local current
  env.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    current.outputs[#current.outputs + 1] = {kind = "stream", text = table.concat(parts, "\t") .. "\n"}
  end
  -- show(x [, title]): a title that is not a string (the data a plot
  -- function returns beside its canvas) is left out
  env.show = function(v, title)
    current.outputs[#current.outputs + 1] = display(v, type(title) == "string" and title or nil)
  end
  -- run(name, {KEY = value}): an analysis whose data the trace lacks stops
  -- with an nsl error; that shows as a one-line note and the notebook goes on
  env.run = function(name, args)
    local runner = require("nsl.engine.runner")
    local a = assert(runner.load_analysis(name))
    local given = {}
    for k, v in pairs(args or {}) do given[#given + 1] = k .. "=" .. tostring(v) end
    table.sort(given)
    local parsed = assert(runner.parse_args(a, given))
    local out = require("nsl.engine.output").new{analysis = a.name, format = "notebook", trace = trace}
    local ok, err = xpcall(a.run, nsl.error_handler, trace, parsed, out)
    analysis_outputs(out, current.outputs)
    if not ok then
      -- a bug (nsl.error_handler's record) fails the cell, naming the analysis and the inputs
      if not nsl.is_error(err) then error(runner.failure(a, err, trace and trace.reports.path:totable()), 0) end
      current.outputs[#current.outputs + 1] = {kind = "note", text = a.name .. ": " .. tostring(err)}
    end
  end
  local failed = false
  local ncells, cell = 0, 0
  for _, b in ipairs(blocks) do if b.kind == "code" and (b.lang == "lua" or b.lang == "") then ncells = ncells + 1 end end
  for _, b in ipairs(blocks) do
    if b.kind == "code" and (b.lang == "lua" or b.lang == "") and not (failed and opts.stop_on_error) then
      cell = cell + 1
      -- the progress line (on a terminal, for work over a second) names the cell; the loads inside count in it
      local progress <close> = nsl.progress(string.format("%s: cell %d of %d", (opts.path or "notebook"):match("[^/]*$"),
                                                          cell, ncells))
      current = b
      b.outputs = {}
      local pad = string.rep("\n", (b.line or 1) - 1)   -- error positions are notebook lines
      local name = "@" .. (opts.path or "notebook")
      local chunk, err
      -- A last line that is an expression displays its value.
      local head, last = b.code:match("^(.-)([^\n]*)%s*$")
      if last and last:match("%S") and not last:match("^%s*%-%-") then
        chunk = load(pad .. head .. "return " .. last, name, "t", env)
      end
      if not chunk then chunk, err = load(pad .. b.code, name, "t", env) end
      if not chunk then
        b.error = err
      else
        local res = table.pack(xpcall(chunk, function(e)
          if nsl.is_error(e) then return tostring(e) end
          return debug.traceback(tostring(e), 2)
        end))
        if not res[1] then b.error = res[2]
        else
          local last = is_canvas(res[2]) and 2 or res.n   -- a figure, not the data drawn beside it
          for i = 2, last do if res[i] ~= nil then b.outputs[#b.outputs + 1] = display(res[i]) end end
        end
      end
      if b.error then failed = true end
    elseif b.kind == "code" and b.lang == "lua" then
      b.skipped = true
    end
  end
  return blocks, failed
end

local css = [[
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
nav.toc{background:#f6f8fa;border:1px solid #ddd;padding:.5em 1.5em;margin-bottom:2em}nav.toc ul{margin:.2em 0;padding-left:1.2em}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:.7em;overflow-x:auto;font-size:13px}
pre.output{background:#fff;border-left:3px solid #0072B2}pre.error{background:#fff5f5;border-left:3px solid #D55E00;color:#900}
code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace}
table.nsl{border-collapse:collapse;font-size:13px;margin:.5em 0}table.nsl td,table.nsl th{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left;white-space:nowrap}
table.nsl .num{text-align:right;font-variant-numeric:tabular-nums}table.nsl caption{text-align:left;font-weight:bold;padding:.3em 0}
.finding{white-space:pre-wrap;padding:.4em .8em;margin:.3em 0;border-left:4px solid #E69F00;background:#fffaf0}.finding.error{border-color:#D55E00}
.note{padding:.3em .8em;margin:.3em 0;border-left:4px solid #999;background:#f6f6f6;color:#444}
.figure img,.figure svg{max-width:100%;height:auto}.more{color:#666;font-size:12px}.cell{margin:1em 0}
]]

local function output_html(o)
  if o.kind == "stream" then return '<pre class="output">' .. md.escape(o.text) .. "</pre>"
  elseif o.kind == "table" then return '<div class="table">' .. o.html .. "</div>"
  elseif o.kind == "png" then
    return '<div class="figure"><img alt="' .. md.escape(o.title or "figure") .. '" src="data:image/png;base64,' ..
           nsl.base64(o.data) .. '"></div>'
  elseif o.kind == "svg" then return '<div class="figure">' .. o.data:gsub("^%s*<%?xml[^>]*>%s*", "") .. "</div>"
  elseif o.kind == "html" then return o.html
  elseif o.kind == "note" then return '<p class="note">' .. md.escape(o.text) .. "</p>"
  elseif o.kind == "finding" then
    return '<div class="finding ' .. md.escape(o.severity) .. '"><b>' .. md.escape(o.severity) .. ":</b> " ..
           md.escape(o.text) .. "</div>"
  end
  return '<pre class="output">' .. md.escape(o.text or "") .. "</pre>"
end

--- The blocks (after M.run) as one self-contained HTML page.
function M.html(blocks, title)
  local toc, body = {}, {}
  for _, b in ipairs(blocks) do
    if b.kind == "md" then body[#body + 1] = md.to_html(b.text, toc)
    else
      local parts = {'<div class="cell"><pre class="code"><code>' .. md.escape(b.code) .. "</code></pre>"}
      for _, o in ipairs(b.outputs or {}) do parts[#parts + 1] = output_html(o) end
      if b.error then parts[#parts + 1] = '<pre class="error">' .. md.escape(b.error) .. "</pre>" end
      if b.skipped then parts[#parts + 1] = '<p class="more">(not run: an earlier cell failed)</p>' end
      parts[#parts + 1] = "</div>"
      body[#body + 1] = table.concat(parts, "\n")
    end
  end
  local nav = {'<nav class="toc"><b>Contents</b><ul>'}
  for _, h in ipairs(toc) do
    if h.level <= 3 then
      nav[#nav + 1] = string.format('<li style="margin-left:%dem"><a href="#%s">%s</a></li>', (h.level - 1),
                                    h.id, md.inline(h.text))
    end
  end
  nav[#nav + 1] = "</ul></nav>"
  title = title or (toc[1] and toc[1].text) or "nsl notebook"
  return table.concat({"<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>" .. md.escape(title) .. "</title>", "<style>" .. css .. "</style></head><body>",
    table.concat(nav), table.concat(body, "\n"),
    '<p class="more">Rendered by nsl ' .. md.escape(nsl.version) .. ".</p>", "</body></html>"}, "\n")
end

local function lines_of(s)
  local list = {}
  for line in (s .. "\n"):gmatch("(.-\n)") do list[#list + 1] = line end
  if #list > 0 then list[#list] = list[#list]:gsub("\n$", "") end
  return list
end

--- The blocks as a Jupyter notebook (nbformat 4.5 JSON) with outputs.
function M.ipynb(blocks)
  local cells = {}
  local count = 0
  for i, b in ipairs(blocks) do
    local id = string.format("cell-%d", i)
    if b.kind == "md" then
      cells[#cells + 1] = {cell_type = "markdown", id = id, metadata = setmetatable({}, report.object_mt),
                           source = lines_of(b.text)}
    else
      count = count + 1
      local outputs = {}
      for _, o in ipairs(b.outputs or {}) do
        if o.kind == "stream" then
          outputs[#outputs + 1] = {output_type = "stream", name = "stdout", text = lines_of(o.text)}
        elseif o.kind == "table" then
          outputs[#outputs + 1] = {output_type = "display_data", metadata = setmetatable({}, report.object_mt),
                                   data = {["text/html"] = lines_of(o.html), ["text/plain"] = lines_of(o.text)}}
        elseif o.kind == "png" then
          outputs[#outputs + 1] = {output_type = "display_data", metadata = setmetatable({}, report.object_mt),
                                   data = {["image/png"] = nsl.base64(o.data), ["text/plain"] = {o.title or "figure"}}}
        elseif o.kind == "html" then
          outputs[#outputs + 1] = {output_type = "display_data", metadata = setmetatable({}, report.object_mt),
                                   data = {["text/html"] = lines_of(o.html), ["text/plain"] = {o.title}}}
        elseif o.kind == "svg" then
          outputs[#outputs + 1] = {output_type = "display_data", metadata = setmetatable({}, report.object_mt),
                                   data = {["image/svg+xml"] = lines_of(o.data), ["text/plain"] = {o.title or "figure"}}}
        else
          outputs[#outputs + 1] = {output_type = "stream", name = "stdout",
                                   text = lines_of((o.severity and (o.severity .. ": ") or "") .. (o.text or "") .. "\n")}
        end
      end
      if b.error then
        outputs[#outputs + 1] = {output_type = "error", ename = "LuaError", evalue = (b.error:match("^[^\n]*")),
                                 traceback = lines_of(b.error)}
      end
      cells[#cells + 1] = {cell_type = "code", id = id, execution_count = count,
                           metadata = setmetatable({}, report.object_mt), source = lines_of(b.code), outputs = outputs}
    end
  end
  return report.json({nbformat = 4, nbformat_minor = 5, cells = cells, metadata = {
    kernelspec = {name = "nsl", display_name = "nsl (Lua 5.4)", language = "lua"},
    language_info = {name = "lua", version = "5.4", file_extension = ".lua"}}}, " ") .. "\n"
end

return M
