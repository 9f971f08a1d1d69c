-- nsl.engine.cmd.combine -- `nsl combine IN.zip... -o OUT.zip`: per-rank bundles
-- merged into one (src/source/bundle_combine.c does the work and the checks).
local nsl = require("nsl")
local fail = require("nsl.engine.runner").fail

local M = {}

--- Entry point (src/cli/commands.c declares the command and its options):
-- opts.traces are the input bundles (at least one), opts.output the bundle.
function M.main(opts)
  local refused = nsl.input_refused("combine", opts.output, opts.traces)
  if refused then return fail(1, refused) end
  local ok, err = nsl.bundle_combine(opts.traces, opts.output, {allow_mixed_commands = opts.allow_mixed_commands,
                                                                allow_mixed_nsys = opts.allow_mixed_nsys})
  if not ok then return fail(1, err) end
  print(string.format("wrote %s from %d bundle%s", opts.output, #opts.traces, #opts.traces == 1 and "" or "s"))
  return 0
end

return M
