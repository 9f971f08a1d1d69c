-- nsl.engine.cmd.view -- `nsl view TRACE... -o view.html [--from T|step:N] [--to T|step:N]
-- [--max-events N] [--bins N] [--no-findings]`: writes the interactive timeline viewer
-- (lua/nsl/engine/view.lua) of the traces as one self-contained HTML file.
local nsl = require("nsl")
local view = require("nsl.engine.view")
local window = require("nsl.window")

local M = {}

local most = {max_events = 10000000, bins = 100000}   -- beyond: pages no browser opens

local fail = require("nsl.engine.runner").fail

--- The view options given on the command line (opts from the command
-- table, src/cli/commands.c), or nil and a usage message.
local function view_options(opts)
  local res = {findings = not opts.no_findings}
  for _, k in ipairs({"max_events", "bins"}) do
    local v = opts[k]
    if v then
      local n = math.tointeger(tonumber(v))
      local flag = "--" .. k:gsub("_", "-")
      if not n or n < 1 or n > most[k] then
        return nil, string.format("view: %s wants a whole number from 1 to %d, not '%s'", flag, most[k], v)
      end
      res[k] = n
    end
  end
  return res
end

function M.main(opts)
  local vopts, aerr = view_options(opts)
  if not vopts then return fail(2, aerr) end
  local refused = nsl.input_refused("view", opts.output, opts.traces)
  if refused then return fail(1, refused) end
  local trace, err, code = nsl.open_selected(opts.traces, opts)   -- --from/--to: the window of the data
  if not trace then return fail(code, err) end
  local ok, res = pcall(function()
    -- the detail window opens on the window of --from/--to (clipped to the trace), else at the start
    local from, to = window.span(trace)
    local lo = window.span(trace, {"kernels", "memcpy", "memset", "nvtx", "gpu_ranges"})
    if not lo then window.resolve_span(nil) end   -- no events: its one line
    vopts.from = opts.from and opts.from ~= "" and from or lo
    if opts.to and opts.to ~= "" then vopts.to = to end
    return view.viewer(trace, vopts)
  end)
  if not ok then
    if nsl.is_error(res) then return fail(1, table.concat(opts.traces, ", ") .. ": " .. tostring(res)) end
    error(res, 0)
  end
  local page = res:page()
  local wok, werr = nsl.write_file(opts.output, page)
  if not wok then return fail(1, werr) end
  print(string.format("wrote %s (%s)", opts.output, require("nsl.report").bytes(#page)))   -- as bundle and combine say it
  return 0
end

return M
