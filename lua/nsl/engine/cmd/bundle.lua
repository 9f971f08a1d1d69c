-- nsl.engine.cmd.bundle -- `nsl bundle EXPORT... -o OUT.zip`: one bundle from nsys
-- SQLite exports, with the manifest filled from the exports themselves, and
-- metadata files and sources beside them.
local nsl = require("nsl")
local bundle = require("nsl.bundle")
local report = require("nsl.report")

local M = {}

local fail = require("nsl.engine.runner").fail

--- Entry point (src/cli/commands.c declares the command and its options):
-- opts.traces are the exports (at least one), opts.output the bundle.
function M.main(opts)
  local ranks
  if opts.rank then
    if #opts.rank ~= #opts.traces then
      return fail(2, string.format("bundle: %d --rank for %d exports (give one per export, in order)",
                                   #opts.rank, #opts.traces))
    end
    ranks = {}
    for i, r in ipairs(opts.rank) do
      ranks[i] = math.tointeger(tonumber(r))
      if not ranks[i] or ranks[i] < 0 then return fail(2, string.format("bundle: --rank '%s' is not an integer >= 0", r)) end
    end
  end
  local members = {}
  local ok, err = bundle.add_paths(members, "meta", opts.meta, true)
  if ok then ok, err = bundle.add_paths(members, "sources", opts.source) end
  if not ok then return fail(1, "bundle: " .. err) end
  local inputs = table.move(opts.traces, 1, #opts.traces, 1, {})
  for _, m in ipairs(members) do inputs[#inputs + 1] = m.path end
  local refused = nsl.input_refused("bundle", opts.output, inputs)
  if refused then return fail(1, refused) end
  local summary
  summary, err = bundle.write{output = opts.output, exports = opts.traces, ranks = ranks, members = members,
                              note = opts.note, keep_rep = opts.keep_rep, columns = opts.columns,
                              allow_mixed_nsys = opts.allow_mixed_nsys}
  if not summary then return fail(1, err) end
  print(string.format("wrote %s: %d report%s, %d members, %s before compression", opts.output, summary.reports,
                      summary.reports == 1 and "" or "s", summary.members, report.bytes(summary.bytes)))
  return 0
end

return M
