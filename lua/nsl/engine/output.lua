-- nsl.engine.output -- the `out` object an analysis writes its results to:
-- tables, free text, findings and files.  Findings come first: text output
-- is held until the analysis ends (or fails), then its findings print, in
-- human units (nsl.findings.lines), before the tables and prose, which keep
-- the order they were given in; csv/json/md/tex are emitted at the end;
-- --out DIR gets every table as CSV, a results.json, and the files
-- (figures, folded stacks).
local report = require("nsl.report")
local findings = require("nsl.findings")
local nsl = require("nsl")

local M = {}
local Out = {}
Out.__index = Out

local severity_rank = findings.severity_rank

-- Returns the object, or nil and a message when the --out folder cannot be
-- made (a file of that name, no permission): the user's input, not a bug.
function M.new(o)
  local self = setmetatable({analysis = o.analysis, format = o.format or "text", dir = o.dir, embed = o.embed,
                             trace = o.trace, traces = o.traces, items = {}, findings = {}, values = {}, files = {},
                             printed = 0}, Out)
  if self.dir then
    local ok, err = nsl.mkdir_p(self.dir)
    if not ok then return nil, "--out: " .. tostring(err) end
  end
  return self
end

-- Writes data to path under --out DIR atomically: nil, or a message when it
-- cannot be written or path is one of the inputs (nsl.input_refused).
local function write_out(self, path, data)
  local refused = nsl.input_refused("--out", path, self.traces)
  if refused then return refused end
  local ok, err = nsl.write_file(path, data)
  if not ok then return err end
  return nil
end

-- Text for the terminal: everything printed passes through nsl.printable,
-- so names from a trace never reach it as control sequences.
local function emit(s)
  s = nsl.printable(s, true)
  io.stdout:write(s)
  if s:sub(-1) ~= "\n" then io.stdout:write("\n") end
end

--- out:table(name, t [, opts]) -- a result table; opts.title, opts.decimals,
-- opts.limit (rows printed as text; all rows go to files and other formats),
-- opts.nsys_stats (the table reproduces an `nsys stats` report: printed with
-- its columns exactly as made, see nsl.report), opts.shown (a table people
-- read instead of t -- text, Markdown, LaTeX, notebooks --, e.g. a value and
-- its error in one cell "125(4)"; CSV and JSON, files and bundles keep t's
-- numbers).
function Out:table(name, t, opts)
  opts = opts or {}
  assert(type(name) == "string", "out:table: name must be a string")
  assert(nsl.type(t) == "table", "out:table: not an nsl table")
  self.items[#self.items + 1] = {kind = "table", name = name, t = t, opts = opts}
  return t
end

--- out:text(s) -- a paragraph of prose (printed in text and md output).
function Out:text(s)
  self.items[#self.items + 1] = {kind = "text", text = s}
end

--- out:value(name, v) -- a named scalar result (kept for JSON output).
function Out:value(name, v) self.values[name] = v end

--- out:finding{severity = "warning", message = "...", ...} -- a check that
-- failed; with --fail-on the worst severity sets the exit code.  The
-- optional fields of the shared record (nsl.findings.validate checks them):
-- id, cost_ns, step_ns, share, where, next, evidence.
function Out:finding(f)
  assert(type(f) == "table" and f.message, "out:finding needs {severity=, message=}")
  f.severity = f.severity or "warning"
  assert(severity_rank(f.severity) > 0, "severity must be info, warning or error")
  findings.validate(f)
  if f.where then setmetatable(f.where, report.object_mt) end
  self.findings[#self.findings + 1] = f
end

--- out:run(name, trace [, given [, opts]]) -- the one way an analysis, or
-- the library on its behalf, hands over to another shipped analysis: the
-- run of analysis `name` on trace with its arguments from given (KEY=VALUE
-- strings; the defaults for the rest).  It writes into this out (what it
-- produces is this run's) and returns what its run returns.  With
-- opts.collect it writes into an output of its own, of that format
-- ("collect", "json"), whose items and findings the caller reads, and
-- returns it, or nil and the message of an error of the input (nsl.fail, a
-- source's errors; a bug still raises).  opts.parts: the tables the
-- analysis's distributed step made on every process (nsl.distributed): its
-- combine runs with them, or its run; opts.extra: a last argument for its
-- run (after parts).
function Out:run(name, trace, given, opts)
  opts = opts or {}
  local a = assert(require("nsl.engine.runner").load_analysis(name))
  local args = self:args(name, given)
  if not opts.collect then return a.run(trace, args, self) end
  local sub = M.new{analysis = name, format = opts.collect, trace = trace}
  local run, parts = a.run, opts.parts
  if parts and a.distributed then
    run = function(tr, ar, o, _, extra)
      if a.distributed.combine then return a.distributed.combine(tr, parts, ar, o) end
      return a.run(tr, ar, o, parts, extra)
    end
  end
  local ok, err = xpcall(run, nsl.error_handler, trace, args, sub, nil, opts.extra)
  if not ok then
    if nsl.is_error(err) then return nil, tostring(err) end
    error(err, 0)
  end
  return sub
end

--- out:args(name [, given]) -> the arguments of shipped analysis `name`
-- as its run receives them: its defaults, and given (KEY=VALUE strings).
function Out:args(name, given)
  local runner = require("nsl.engine.runner")
  return assert(runner.parse_args(assert(runner.load_analysis(name)), given or {}))
end

function Out:worst_severity()
  local worst = 0
  for _, f in ipairs(self.findings) do worst = math.max(worst, severity_rank(f.severity)) end
  return worst
end

--- out:path(name) -> the path of file `name` under --out DIR, or nil without --out.
function Out:path(name)
  if not self.dir then return nil end
  assert(not name:find("%.%.") and not name:find("^/"), "out:path: name must stay inside the output folder")
  return self.dir .. "/" .. name
end

--- out:file(name, data) -- writes data to --out DIR/name atomically;
-- returns the path, or nil when no --out was given.  data: a string, or a
-- function(write) that gives the text in pieces, write(piece) after
-- write(piece), so that a text of gigabytes is never held whole (nor run
-- at all without a place for the file; --embed gathers its pieces).
function Out:file(name, data)
  local path = self:path(name)
  if type(data) == "function" and self.embed then   -- the bundle stores whole members
    local pieces = {}
    data(function(piece) pieces[#pieces + 1] = piece end)
    data = table.concat(pieces)
  end
  self.files[#self.files + 1] = {name = name, path = path, data = type(data) == "string" and data or nil}
  if not path then
    -- with --embed the file goes into the bundle; a notebook shows it inline
    if not self.warned_no_dir and not self.embed and self.format ~= "notebook" then
      io.stderr:write(string.format("nsl: %s: use --out DIR to write %s (and other files)\n", self.analysis, name))
      self.warned_no_dir = true
    end
    return nil
  end
  local err = write_out(self, path, data)
  if err then error(err, 0) end
  return path
end

--- out:carries_figures() -> true when some output of this run can hold a
-- figure: files under --out DIR, the bundle with --embed (also `nsl profile
-- --analysis`), or a notebook cell.  Figures cost time: nothing else draws.
function Out:carries_figures()
  return self.dir ~= nil or self.embed == true or self.format == "notebook"
end

local function figure_format(v)
  local s = type(v) == "string" and v or v:to_string()
  return s, s:sub(1, 8) == "\137PNG\r\n\26\n" and "png" or "svg"
end

--- out:figure(name, draw [, opts]) -- a figure, the one way an analysis
-- shows one.  draw is a canvas (or PNG/SVG data) already drawn, or a
-- function draw(format) -> canvas [, data] called for "png" and "svg" only
-- when an output carries figures: --out DIR and --embed get NAME.png and
-- NAME.svg (opts.formats narrows the list; an empty list writes no file), a
-- notebook shows one inline (opts.inline, default the first format; an
-- interactive SVG is best shown as "svg").  opts.title labels it, opts.main
-- marks a figure that is the analysis's point: without --out it says how to
-- get it.  Returns the data of the first draw, or nil when nothing carried it.
function Out:figure(name, draw, opts)
  opts = opts or {}
  assert(type(name) == "string", "out:figure: name must be a string (a file name without extension)")
  if not self:carries_figures() then
    if opts.main and not self.warned_no_dir then
      io.stderr:write(string.format("nsl: %s: use --out DIR to write the figure %s\n", self.analysis, name))
      self.warned_no_dir = true
    end
    return nil
  end
  local formats, drawn, data = opts.formats or {"png", "svg"}, {}, nil
  if type(draw) ~= "function" then   -- drawn already: its own format only
    local s, f = figure_format(draw)
    drawn[f], formats = s, {f}
  end
  local function get(format)
    if not drawn[format] then
      local cv, d = draw(format)
      if data == nil then data = d end
      drawn[format] = (figure_format(cv))
    end
    return drawn[format]
  end
  if self.format == "notebook" then
    local inline = type(draw) == "function" and (opts.inline or formats[1] or "png") or formats[1]
    local s = get(inline)
    self.items[#self.items + 1] = {kind = "figure", name = name, format = inline, data = s, title = opts.title,
                                   values = data}   -- values: what the plot function returned beside the canvas
  end
  if self.dir or self.embed then
    for _, f in ipairs(formats) do self:file(name .. "." .. f, get(f)) end
  end
  return data
end

--- out:stdout(s) -- s is the whole of stdout (export's trace JSON without
-- --out): nothing else is printed there, whatever --format asks, so stdout
-- stays one valid document; findings go to stderr.  s: a string, or a
-- function(write) giving it in pieces (as out:file's).
function Out:stdout(s)
  self.stdout_taken = true
  if type(s) == "function" then s(function(piece) io.stdout:write(piece) end)
  else io.stdout:write(s) end
end

--- Text output: what is not printed yet -- the findings first, then the
-- tables and prose given since the last call.  Also what a failing analysis
-- shows of the results it had.
function Out:flush()
  if self.format == "text" then
    local nf = self.findings_printed or 0
    if #self.findings > nf then
      emit((self.any_printed and "\n" or "") .. findings.text(table.move(self.findings, nf + 1, #self.findings, 1, {}), self.at))
      self.findings_printed = #self.findings
      self.any_printed = true
    end
    local width = nsl.terminal_width()
    for i = self.printed + 1, #self.items do
      local it = self.items[i]
      local sep = self.any_printed and "\n" or ""
      if it.kind == "table" then
        local o = it.opts
        emit(sep .. report.text(o.shown or it.t, {title = o.title or it.name, limit = o.limit or 50,
                                                  decimals = o.decimals, col_decimals = o.col_decimals,
                                                  nsys_stats = o.nsys_stats, width = width,
                                                  same_unit = o.same_unit}))
        self.any_printed = true
      elseif it.kind == "text" then
        emit(sep .. (width and report.wrap(it.text, width) or it.text))
        self.any_printed = true
      end
    end
    self.printed = #self.items
  end
  io.stdout:flush()
end

--- The whole result as a JSON-able Lua value.
function Out:document()
  local tables, columns, texts = {}, {}, {}
  for _, it in ipairs(self.items) do
    if it.kind == "table" then
      tables[it.name] = it.t   -- report.json writes a table's rows in C
      columns[it.name] = it.t:columns()   -- the names also of a table without rows
    elseif it.kind == "text" then texts[#texts + 1] = it.text end
  end
  local files = {}
  for i, f in ipairs(self.files) do files[i] = f.path or f.name end
  return {analysis = self.analysis, tables = setmetatable(tables, report.object_mt),
          columns = setmetatable(columns, report.object_mt), notes = texts,
          findings = self.findings, values = setmetatable(self.values, report.object_mt), files = files}
end

--- Emits what is not printed yet and writes --out files; returns nil or an error message.
function Out:finish()
  local fmt = self.format
  if self.stdout_taken then
    if #self.findings > 0 then io.stderr:write(nsl.printable(findings.text(self.findings, self.at), true), "\n") end
  elseif fmt == "text" then
    self:flush()
  elseif fmt == "json" then
    self.json = self.json or report.json(self:document(), "  ")
    emit(self.json)
  else
    local parts = {}
    for _, it in ipairs(self.items) do
      if it.kind == "table" then
        local title = it.opts.title or it.name
        if fmt == "csv" then parts[#parts + 1] = (#self.items > 1 and ("# " .. title .. "\n") or "") .. report.csv(it.t)
        elseif fmt == "md" then parts[#parts + 1] = report.md(it.opts.shown or it.t, {title = title, decimals = it.opts.decimals,
                                                                             nsys_stats = it.opts.nsys_stats})
        elseif fmt == "tex" then parts[#parts + 1] = report.tex(it.opts.shown or it.t, {title = title, decimals = it.opts.decimals,
                                                                               nsys_stats = it.opts.nsys_stats}) end
      elseif fmt == "md" and it.kind == "text" then parts[#parts + 1] = it.text .. "\n"
      end
    end
    if #self.findings > 0 then
      local ftxt = findings.text(self.findings, self.at)
      if fmt == "md" then
        local items = {}
        for _, f in ipairs(self.findings) do
          local lines = findings.lines(f, self.at)
          for i = 2, #lines do lines[i] = lines[i]:gsub("^%s+", "") end
          items[#items + 1] = "- " .. table.concat(lines, "  \n  ")
        end
        table.insert(parts, 1, "### Findings\n\n" .. table.concat(items, "\n") .. "\n")
      elseif fmt == "csv" then io.stderr:write(nsl.printable(ftxt, true), "\n")
      else table.insert(parts, 1, "% " .. ftxt:gsub("\n", "\n%% ") .. "\n") end
    end
    io.stdout:write(nsl.printable(table.concat(parts, "\n"), true))
  end
  if self.dir then
    for _, it in ipairs(self.items) do
      if it.kind == "table" then
        local err = write_out(self, self.dir .. "/" .. it.name .. ".csv", report.csv(it.t))
        if err then return err end
      end
    end
    self.json = self.json or report.json(self:document(), "  ")
    local err = write_out(self, self.dir .. "/results.json", self.json .. "\n")
    if err then return err end
  end
  io.stdout:flush()
  return nil
end

return M
