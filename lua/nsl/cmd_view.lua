-- nsl.cmd_view -- `nsl view TRACE... -o view.html [--from T] [--to T]
-- [--arg KEY=VALUE]...`: writes the interactive timeline viewer
-- (lua/nsl/view.lua) of the traces as one self-contained HTML file.
local nsl = require("nsl")
local view = require("nsl.view")
local window = require("nsl.window")

local M = {}

M.usage = string.format([[
usage: nsl view TRACE... -o OUT.html [--from T] [--to T] [--arg KEY=VALUE]...

Writes an interactive timeline of the traces as one self-contained HTML file
(no network access): a row per GPU stream (kernels, NCCL kernels, memcpy by
direction, memset) and per thread's NVTX ranges (nested ranges in sub-rows);
zoom (wheel, + and -), pan (drag, arrow keys), details on hover, search by
name, the NVTX ranges enclosing a point (click) or a selection (shift-drag),
and the findings of diagnose (click one to go to its place).
The whole trace is summarised per time bin and row (busy time and events);
the events of a detail window are embedded one by one.
  -o FILE          where to write the page
  --from T         the detail window's start, from the trace's first event
                   (250us, 1.5ms, 2s; default 0)
  --to T           its end (default: where %d events have started, or the end)
  --arg max_events=N   events in the default detail window (%d)
  --arg bins=N         level-of-detail bins over the whole trace (%d)
  --arg findings=false leave out the findings of diagnose (they cost a run of it)]],
  view.max_events, view.max_events, view.bins)

local function fail(code, msg)
  io.stderr:write("nsl: ", msg, "\n")
  return code
end

local known = {max_events = "integer", bins = "integer", findings = "boolean"}
local most = {max_events = 10000000, bins = 100000}   -- beyond: pages no browser opens

--- The --arg values as view options, or nil and a usage message.
local function parse_args(list)
  local res = {}
  for _, kv in ipairs(list or {}) do
    local k, v = kv:match("^([^=]*)=(.*)$")
    local ty = known[k]
    if not ty then
      local keys = {}
      for name in pairs(known) do keys[#keys + 1] = name end
      table.sort(keys)
      local near = nsl.closest(k, keys)
      return nil, string.format("view: unknown --arg '%s'%s", k, near and (" (did you mean '" .. near .. "'?)") or "")
    end
    if ty == "integer" then
      local n = math.tointeger(tonumber(v))
      if not n or n < 1 or n > most[k] then
        return nil, string.format("view: --arg %s wants a whole number from 1 to %d, not '%s'", k, most[k], v)
      end
      res[k] = n
    else
      if v ~= "true" and v ~= "false" then
        return nil, string.format("view: --arg %s wants true or false, not '%s'", k, v)
      end
      res[k] = v == "true"
    end
  end
  return res
end

function M.main(opts)
  if opts.help then
    print(M.usage)
    return 0
  end
  if #opts.traces == 0 then return fail(2, "usage: nsl view TRACE... -o view.html [--from T] [--to T]") end
  if not opts.output then return fail(2, "view: say where to write it: -o view.html") end
  local vopts, aerr = parse_args(opts.args)
  if not vopts then return fail(2, aerr) end
  local trace, err = nsl.open(opts.traces)
  if not trace then return fail(1, err) end
  local ok, res = pcall(function()
    local from, to = window.resolve(trace, {from = opts.from, to = opts.to}, {"kernels", "memcpy", "memset", "nvtx"})
    vopts.from = from
    if opts.to and opts.to ~= "" then vopts.to = to end
    return view.viewer(trace, vopts)
  end)
  if not ok then
    if nsl.is_error(res) then return fail(1, table.concat(opts.traces, ", ") .. ": " .. tostring(res)) end
    error(res, 0)
  end
  local wok, werr = nsl.write_file(opts.output, res:page())
  if not wok then return fail(1, werr) end
  return 0
end

return M
