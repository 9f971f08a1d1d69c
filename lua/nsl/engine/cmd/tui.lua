-- nsl.engine.cmd.tui -- `nsl tui TRACE...`: the terminal timeline, details, NVTX
-- tree and findings of a trace (lua/nsl/engine/tui.lua), on a terminal.
local nsl = require("nsl")
local fail = require("nsl.engine.runner").fail

local M = {}

--- Entry point (see nsl.engine.runner): opts from the command table
-- (src/cli/commands.c): traces, no_color, max_depth.
function M.main(opts)
  if not nsl.curses then
    return fail(1, "tui: this nsl was built without ncurses (install libncurses-dev and rebuild)")
  end
  local t0 = nsl.curses.now()
  local tuiopts = {t0 = t0, no_color = opts.no_color and true or nil}
  if opts.max_depth then
    local d = math.tointeger(tonumber(opts.max_depth))
    if not d or d < 1 then
      return fail(2, string.format("tui: --max-depth wants a whole number >= 1, not '%s'\nTry 'nsl tui --help'.",
                                   opts.max_depth))
    end
    tuiopts.max_depth = d
  end
  -- a missing or unreadable file fails at once, before the screen, in nsl.open's words
  for _, path in ipairs(opts.traces) do
    local ok, err = nsl.readable(path)   -- opened without blocking: a FIFO fails here, not on the screen
    if not ok then return fail(1, err) end
  end
  -- the open (an nsys export for a .nsys-rep) runs behind the first screen
  local first = opts.traces[1]:match("([^/]+)/*$") or opts.traces[1]
  tuiopts.paths = opts.traces
  tuiopts.what = #opts.traces > 1 and string.format("%s and %d more", first, #opts.traces - 1) or first
  tuiopts.select = opts   -- --report, --from, --to, --device (nsl.select)
  local ok, terr, failed, code = require("nsl.engine.tui").run(nil, tuiopts)
  if not ok then return fail(code or 1, (failed == "open" and "" or "tui: ") .. tostring(terr)) end
  return 0
end

return M
