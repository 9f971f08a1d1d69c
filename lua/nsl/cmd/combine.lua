-- nsl.cmd.combine -- `nsl combine IN.zip... -o OUT.zip`: per-rank bundles
-- merged into one (src/source/bundle_combine.c does the work and the checks).
local nsl = require("nsl")

local M = {}

M.usage = [[
usage: nsl combine IN.zip... -o OUT.zip [--allow-mixed-commands] [--allow-mixed-nsys]

Merges bundles (one per rank or process) into one.  Identical members are
stored once; a name that clashes with other content is renamed (a report of
rank R becomes reports/<stem>.rank<R>.sqlite).  Refused, naming both inputs:
different profiled commands, nsys versions of different releases, a rank or
a report present in two inputs, the output being an input.]]

--- Entry point (see nsl.runner): opts.traces are the input bundles.
function M.main(opts)
  if opts.help then
    print(M.usage)
    return 0
  end
  if #opts.traces == 0 then
    io.stderr:write("nsl: combine: no bundle given (nsl combine IN.zip... -o OUT.zip)\n")
    return 2
  end
  if not opts.output then
    io.stderr:write("nsl: combine: where to? give -o OUT.zip\n")
    return 2
  end
  local ok, err = nsl.bundle_combine(opts.traces, opts.output, {allow_mixed_commands = opts.allow_mixed_commands,
                                                                allow_mixed_nsys = opts.allow_mixed_nsys})
  if not ok then
    io.stderr:write("nsl: ", err, "\n")
    return 1
  end
  print(string.format("wrote %s from %d bundle%s", opts.output, #opts.traces, #opts.traces == 1 and "" or "s"))
  return 0
end

return M
