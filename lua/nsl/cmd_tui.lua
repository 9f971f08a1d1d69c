-- nsl.cmd_tui -- `nsl tui TRACE...`: the terminal timeline, details, NVTX
-- tree and findings of a trace (lua/nsl/tui.lua), on a terminal.
local nsl = require("nsl")

local M = {}

M.usage = [[
usage: nsl tui TRACE... [--arg no_color=true] [--arg max_depth=N]

A terminal timeline of the traces (SQLite exports, bundles; several are
stacked on their aligned clocks): one row per GPU stream (kernels, NCCL
kernels, memcpy by direction, memset) and NVTX ranges per thread on a row
per nesting level; the details of the selected event (its launching CUDA
call, thread and NVTX stack, the gaps around it); the NVTX range tree with
inclusive and exclusive GPU and CPU time; the findings of diagnose, each
leading to its place.  `:` evaluates Lua against `trace`; `?` lists the keys.
Works in 80x24 and up, over ssh and in tmux; NO_COLOR or --arg no_color=true
draws without colour.  Environment: NSL_TUI_LOG=FILE appends the load and
redraw timings to FILE; NSL_TUI_INFO=1 starts with the window in ns shown.]]

--- Entry point (see nsl.runner).
function M.main(opts)
  if opts.help then
    print(M.usage)
    return 0
  end
  if not nsl.curses then
    io.stderr:write("nsl: tui: this nsl was built without ncurses (install libncurses-dev and rebuild)\n")
    return 1
  end
  local t0 = nsl.curses.now()
  if #opts.traces == 0 then
    io.stderr:write("nsl: tui: no trace given (nsl tui TRACE...)\n")
    return 2
  end
  local tuiopts = {t0 = t0}
  for _, kv in ipairs(opts.args or {}) do
    local k, v = kv:match("^([^=]+)=(.*)$")
    if k == "no_color" then tuiopts.no_color = v == "true" or v == "1" or v == "yes"
    elseif k == "max_depth" and math.tointeger(tonumber(v)) and tonumber(v) >= 1 then
      tuiopts.max_depth = math.tointeger(tonumber(v))
    else
      io.stderr:write(string.format("nsl: tui: unknown or bad --arg '%s' (no_color=true, max_depth=N)\n", kv))
      return 2
    end
  end
  local trace, err = nsl.open(opts.traces)
  if not trace then
    io.stderr:write("nsl: ", err, "\n")
    return 1
  end
  local ok, terr = require("nsl.tui").run(trace, tuiopts)
  if not ok then
    io.stderr:write("nsl: tui: ", terr, "\n")
    return 1
  end
  return 0
end

return M
