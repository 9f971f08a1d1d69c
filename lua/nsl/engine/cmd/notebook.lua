-- nsl.engine.cmd.notebook -- `nsl notebook NOTEBOOK.md [TRACE...] -o report.html|report.ipynb
-- [--stop-on-error]`: runs the notebook's cells and writes the rendered file.
local nsl = require("nsl")
local notebook = require("nsl.engine.notebook")

local M = {}

local fail = require("nsl.engine.runner").fail

--- Renders notebook `path` on the traces to `output` (.html or .ipynb).
-- Returns the exit code: 0 when written (failing cells are shown in it),
-- 1 when it cannot be written or, with stop_on_error, a cell failed.
function M.render(path, traces, output, stop_on_error, sel)
  local refused = nsl.input_refused("notebook", output, {path, table.unpack(traces or {})})
  if refused then return fail(1, refused) end
  local text, err = nsl.read_file(path)   -- a regular file: a FIFO or a device is refused at once
  if not text then   -- a shipped notebook by name: `nsl notebook analysis ...`
    err = err:gsub("^cannot open '.-': ", "")
    text = path:match("^[%w_%-]+$") and nsl.embedded_file("notebooks/" .. path .. ".md")
    if not text then
      local names = M.shipped()
      local near = path:match("^[%w_%-]+$") and nsl.closest(path, names)
      if path:match("^[%w_%-]+$") then   -- a name, not a file: a usage error, with the shipped names
        return fail(2, string.format("no notebook '%s' (no such file, nor a shipped notebook: %s)%s", path,
          table.concat(names, ", "), near and string.format("; did you mean '%s'?", near) or ""))
      end
      return fail(1, string.format("cannot open notebook '%s': %s", path, err))
    end
  end
  local trace
  if traces and #traces > 0 then
    local code
    trace, err, code = nsl.open_selected(traces, sel)
    if not trace then return fail(code, err) end
  end
  local blocks, failed = notebook.run(text, trace, {path = path, stop_on_error = stop_on_error})
  local data
  if output:lower():match("%.ipynb$") then data = notebook.ipynb(blocks)
  else data = notebook.html(blocks) end
  local ok, werr = nsl.write_file(output, data)
  if not ok then return fail(1, werr) end
  print(string.format("wrote %s (%s)", output, require("nsl.report").bytes(#data)))   -- as bundle and combine say it
  local nfail = 0
  for _, b in ipairs(blocks) do if b.error then nfail = nfail + 1 end end
  if nfail > 0 then
    io.stderr:write(string.format("nsl: %s: %d cell(s) failed; their errors are shown in %s\n", path, nfail, output))
  end
  if failed and stop_on_error then return 1 end
  return 0
end

--- The names of the shipped notebooks (`nsl notebook NAME`), sorted.
function M.shipped()
  local names = {}
  for _, p in ipairs(nsl.embedded()) do
    local name = p:match("^notebooks/([%w_%-]+)%.md$")
    if name then names[#names + 1] = name end
  end
  table.sort(names)
  return names
end

--- Entry point (src/cli/commands.c declares the command and its options):
-- opts.traces[1] is the notebook, the others the traces; opts.output the file
-- (.html or .ipynb, anything else is refused before any work).
function M.main(opts)
  if not (opts.output:lower():match("%.html?$") or opts.output:lower():match("%.ipynb$")) then
    return fail(2, string.format("notebook: -o %s: the report is written as HTML (.html) or a Jupyter notebook " ..
                                 "(.ipynb); name it so", opts.output))
  end
  local traces = {}
  for i = 2, #opts.traces do traces[#traces + 1] = opts.traces[i] end
  return M.render(opts.traces[1], traces, opts.output, opts.stop_on_error, opts)
end

return M
