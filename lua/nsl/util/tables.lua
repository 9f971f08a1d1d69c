-- nsl.util.tables -- small helpers over plain Lua tables (not nsl tables).
local M = {}

--- The keys of t as a sorted array (table.sort's order, or less(a, b)).
function M.sorted_keys(t, less)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, less)
  return keys
end

return M
