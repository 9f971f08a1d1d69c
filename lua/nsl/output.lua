-- nsl.output -- the `out` object an analysis writes its results to:
-- tables, free text, findings and files.  Text tables print as soon as they
-- are given; csv/json/md/tex are emitted at the end; --out DIR gets every
-- table as CSV, a results.json, and the files (figures, folded stacks).
local report = require("nsl.report")
local nsl = require("nsl")

local M = {}
local Out = {}
Out.__index = Out

local severities = {info = 1, warning = 2, error = 3}
function M.severity_rank(s) return severities[s] or 0 end

function M.new(o)
  local self = setmetatable({analysis = o.analysis, format = o.format or "text", dir = o.dir, embed = o.embed,
                             trace = o.trace, items = {}, findings = {}, values = {}, files = {},
                             printed = 0}, Out)
  if self.dir then
    local ok, err = nsl.mkdir_p(self.dir)
    if not ok then error(err, 0) end
  end
  return self
end

local function emit(s)
  io.stdout:write(s)
  if s:sub(-1) ~= "\n" then io.stdout:write("\n") end
end

--- out:table(name, t [, opts]) -- a result table; opts.title, opts.decimals,
-- opts.limit (rows printed as text; all rows go to files and other formats).
function Out:table(name, t, opts)
  opts = opts or {}
  assert(type(name) == "string", "out:table: name must be a string")
  assert(nsl.type(t) == "table", "out:table: not an nsl table")
  self.items[#self.items + 1] = {kind = "table", name = name, t = t, opts = opts}
  if self.format == "text" then
    emit((#self.items > 1 and "\n" or "") ..
         report.text(t, {title = opts.title or name, limit = opts.limit or 50, decimals = opts.decimals,
                         col_decimals = opts.col_decimals}))
    self.printed = #self.items
  end
  return t
end

--- out:text(s) -- a paragraph of prose (printed in text and md output).
function Out:text(s)
  self.items[#self.items + 1] = {kind = "text", text = s}
  if self.format == "text" then
    emit((#self.items > 1 and "\n" or "") .. s)
    self.printed = #self.items
  end
end

--- out:value(name, v) -- a named scalar result (kept for JSON output).
function Out:value(name, v) self.values[name] = v end

--- out:finding{severity = "warning", message = "...", ...} -- a check that
-- failed; with --fail-on the worst severity sets the exit code.
function Out:finding(f)
  assert(type(f) == "table" and f.message, "out:finding needs {severity=, message=}")
  f.severity = f.severity or "warning"
  assert(severities[f.severity], "severity must be info, warning or error")
  self.findings[#self.findings + 1] = f
end

function Out:worst_severity()
  local worst = 0
  for _, f in ipairs(self.findings) do worst = math.max(worst, severities[f.severity]) end
  return worst
end

--- out:path(name) -> the path of file `name` under --out DIR, or nil without --out.
function Out:path(name)
  if not self.dir then return nil end
  assert(not name:find("%.%.") and not name:find("^/"), "out:path: name must stay inside the output folder")
  return self.dir .. "/" .. name
end

--- out:file(name, data) -- writes data (string) to --out DIR/name atomically;
-- returns the path, or nil when no --out was given.
function Out:file(name, data)
  local path = self:path(name)
  self.files[#self.files + 1] = {name = name, path = path, data = data}
  if not path then
    -- with --embed the file goes into the bundle; a notebook shows it inline
    if not self.warned_no_dir and not self.embed and self.format ~= "notebook" then
      io.stderr:write(string.format("nsl: %s: use --out DIR to write %s (and other files)\n", self.analysis, name))
      self.warned_no_dir = true
    end
    return nil
  end
  local ok, err = nsl.write_file(path, data)
  if not ok then error(err, 0) end
  return path
end

function Out:flush() io.stdout:flush() end

local function findings_text(findings)
  local lines = {}
  for _, f in ipairs(findings) do
    lines[#lines + 1] = string.format("[%s] %s", f.severity, f.message)
  end
  return table.concat(lines, "\n")
end

--- The whole result as a JSON-able Lua value.
function Out:document()
  local tables, texts = {}, {}
  for _, it in ipairs(self.items) do
    if it.kind == "table" then tables[it.name] = report.records(it.t)
    else texts[#texts + 1] = it.text end
  end
  local files = {}
  for i, f in ipairs(self.files) do files[i] = f.path or f.name end
  return {analysis = self.analysis, tables = setmetatable(tables, report.object_mt), notes = texts,
          findings = self.findings, values = setmetatable(self.values, report.object_mt), files = files}
end

--- Emits what is not printed yet and writes --out files; returns nil or an error message.
function Out:finish()
  local fmt = self.format
  if fmt == "text" then
    if #self.findings > 0 and not self.findings_printed then emit("\n" .. findings_text(self.findings)) end
  elseif fmt == "json" then
    emit(report.json(self:document(), "  "))
  else
    local parts = {}
    for _, it in ipairs(self.items) do
      if it.kind == "table" then
        local title = it.opts.title or it.name
        if fmt == "csv" then parts[#parts + 1] = (#self.items > 1 and ("# " .. title .. "\n") or "") .. report.csv(it.t)
        elseif fmt == "md" then parts[#parts + 1] = report.md(it.t, {title = title, decimals = it.opts.decimals})
        elseif fmt == "tex" then parts[#parts + 1] = report.tex(it.t, {title = title, decimals = it.opts.decimals}) end
      elseif fmt == "md" then parts[#parts + 1] = it.text .. "\n"
      end
    end
    if #self.findings > 0 then
      local ftxt = findings_text(self.findings)
      if fmt == "md" then parts[#parts + 1] = "### Findings\n\n" .. ftxt:gsub("([^\n]+)", "- %1") .. "\n"
      elseif fmt == "csv" then io.stderr:write(ftxt, "\n")
      else parts[#parts + 1] = "% " .. ftxt:gsub("\n", "\n%% ") .. "\n" end
    end
    io.stdout:write(table.concat(parts, "\n"))
  end
  if self.dir then
    for _, it in ipairs(self.items) do
      if it.kind == "table" then
        local ok, err = nsl.write_file(self.dir .. "/" .. it.name .. ".csv", report.csv(it.t))
        if not ok then return err end
      end
    end
    local ok, err = nsl.write_file(self.dir .. "/results.json", report.json(self:document(), "  ") .. "\n")
    if not ok then return err end
  end
  io.stdout:flush()
  return nil
end

return M
