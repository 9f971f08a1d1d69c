-- nsl.lanes -- per-group timelines laid end to end on one axis, so that
-- interval algebra and binary searches over every group (device, process)
-- run as one call over whole columns instead of one call per group.
--
-- Group g's time t maps to (t - base) + (g - first) * width, where width
-- exceeds the whole time range: groups cannot overlap on the axis.  When
-- groups x width would pass 2^62 the groups are split into batches, each
-- its own axis.
--   local plan = lanes.plan(ngroups, lanes.bounds(start, stop))
--   for _, b in ipairs(plan.batches) do               -- b.first .. b.last (0-based group ids)
--     local s = lanes.shift(plan, b, start, gid)      -- i64 column
--   end
local nsl = require("nsl")
local window = require("nsl.window")

local M = {}

--- The span one axis may hold (tests lower it to exercise batching).
M.limit = 1 << 62

--- The earliest start and latest stop of i64 columns given as pairs
-- (start, stop [, start2, stop2 ...]) (nsl.extent: exact for integers, one
-- pass, no copy; one pass for both when a pair is one column twice); nil
-- where no column of the kind has a value.
function M.bounds(...)
  local cols, lo, hi = {...}, nil, nil
  for i = 1, #cols, 2 do
    local a, b = nsl.extent(cols[i])
    if not rawequal(cols[i + 1], cols[i]) then b = select(2, nsl.extent(cols[i + 1])) end
    if a and (lo == nil or a < lo) then lo = a end
    if b and (hi == nil or b > hi) then hi = b end
  end
  return lo, hi
end

--- A plan for ngroups groups whose times lie in [lo, hi].
function M.plan(ngroups, lo, hi)
  lo, hi = lo or 0, hi or 0
  local width = hi - lo + 1
  if hi >= lo then window.check_span(lo, hi) end   -- damaged times: one line for the user
  if width < 1 or width >= M.limit then error(string.format("lanes: time range %d..%d is too wide", lo, hi), 2) end
  local per = math.max(1, M.limit // width)
  local batches = {}
  local first = 0
  while first < ngroups do
    local last = math.min(ngroups, first + per) - 1
    batches[#batches + 1] = {first = first, last = last}
    first = last + 1
  end
  return {base = lo, width = width, batches = batches}
end

--- Mask of the rows whose group (i64 column gid) is in batch b.
function M.rows(b, gid) return gid:ge(b.first) & gid:le(b.last) end

--- Times t (column) of rows in groups gid (column) placed on batch b's axis
-- (rows of other batches get values outside it: mask them with M.rows).
function M.shift(plan, b, t, gid)
  return (t - plan.base) + (b.first == 0 and gid or gid - b.first) * plan.width   -- (the first batch: no copy)
end

--- Whether each pair (g[i], t[i]) is among the rows of (g2, t2): a bool
-- column, one per row of g.  g, g2: group ids (non-negative integers); t,
-- t2: integers (times).  A pair where either is NULL is among none.  As one
-- lane per group, the key g x w + t with w above the span of every time
-- (two times of a group differ by less than w, so distinct pairs keep
-- distinct keys): a join on one column; on the pair when the keys would
-- pass the largest integer.
function M.pairs_in(g, t, g2, t2)
  local lo, hi = M.bounds(t, t, t2, t2)
  local glo, ghi = M.bounds(g, g, g2, g2)
  local w = lo and hi - lo + 1
  local _, idx
  if w and glo and glo >= 0 and w > 0 and ghi <= (math.maxinteger - math.max(hi, 0)) // w then
    _, idx = nsl.table{{"k", g * w + t}}:join(nsl.table{{"k", g2 * w + t2}}, {"k"}, {})
  else
    _, idx = nsl.table{{"g", g}, {"t", t}}:join(nsl.table{{"g", g2}, {"t", t2}}, {"g", "t"}, {})
  end
  return idx:ge(0)
end

--- One column in row order from per-batch results: parts is an array of
-- {rows = i64 column of 0-based row numbers, values = column}, the row
-- numbers of all parts together being 0..n-1 once each.
function M.assemble(parts)
  if #parts == 1 then return parts[1].values:gather(parts[1].rows:argsort()) end
  local idx, vals = {}, {}
  for i, p in ipairs(parts) do idx[i], vals[i] = p.rows, p.values end
  return nsl.concat(table.unpack(vals)):gather(nsl.concat(table.unpack(idx)):argsort())
end

return M
