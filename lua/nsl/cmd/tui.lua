-- nsl.cmd.tui -- `nsl tui TRACE...`: the terminal timeline, details, NVTX
-- tree and findings of a trace (lua/nsl/tui.lua), on a terminal.
local nsl = require("nsl")

local M = {}

--- Entry point (see nsl.runner): opts from the command table
-- (src/cli/commands.c): traces, no_color, max_depth.
function M.main(opts)
  if not nsl.curses then
    io.stderr:write("nsl: tui: this nsl was built without ncurses (install libncurses-dev and rebuild)\n")
    return 1
  end
  local t0 = nsl.curses.now()
  local tuiopts = {t0 = t0, no_color = opts.no_color and true or nil}
  if opts.max_depth then
    local d = math.tointeger(tonumber(opts.max_depth))
    if not d or d < 1 then
      io.stderr:write(string.format("nsl: tui: --max-depth wants a whole number >= 1, not '%s'\nTry 'nsl tui --help'.\n",
        opts.max_depth))
      return 2
    end
    tuiopts.max_depth = d
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
