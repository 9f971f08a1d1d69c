-- nsl.util.percentiles -- distribution tables: per group, the count, mean,
-- chosen percentiles and maximum of one or more value columns (latencies,
-- queue depths, gap lengths), as one nsl table.  Percentiles interpolate
-- linearly between order statistics (NumPy's default; p50 is the median
-- of SQL users), computed by the group-by kernels in C.
local nsl = require("nsl")

local M = {}

--- The percentiles shown unless a table asks for others.
M.default = {0.5, 0.9, 0.99}

--- percentiles.label(0.99) -> "p99"; 0.999 -> "p99.9".
function M.label(q)
  local s = string.format("%.4f", q * 100):gsub("0+$", ""):gsub("%.$", "")
  return "p" .. s
end

--- percentiles.table(t, keys, values [, opts]) -> nsl table.
-- keys: array of column names of t to group by ({} for one row over all).
-- values: array of {col = name, label = "Latency", unit = "ns", total = bool};
-- rows where a value is NULL are left out of its statistics; total adds the
-- value's sum ("<label> total").
-- opts.qs: percentiles (default M.default); opts.mean (default true);
-- opts.count_label ("Count"); opts.sort: "count" (default), or the index of
-- a value whose total (when shown, else its max) orders the rows, largest
-- first.
-- opts.aggregates: the groups' figures already made (M.reduce of a
-- distributed run), t then unread.
-- Columns: keys, Count (of the first value), then per value
-- [total] [mean] p.. max, named "<label> p50 (<unit>)".
function M.table(t, keys, values, opts)
  opts = opts or {}
  local qs = opts.qs or M.default
  local gkeys = #keys > 0 and keys or {"_all"}   -- (no keys: one group over every row)
  local a = opts.aggregates
  if not a then
    local need = {}
    for _, k in ipairs(keys) do need[#need + 1] = k end
    for _, v in ipairs(values) do need[#need + 1] = v.col end
    t:load(need)
    if #keys == 0 then t = t:with("_all", nsl.rep(0, #t)) end
    local specs = {}
    local function spec(s) specs[#specs + 1] = s end
    for i, v in ipairs(values) do
      spec(string.format("v%d_n=count(%s)", i, v.col))
      spec(string.format("v%d_sum=sum(%s)", i, v.col))
      spec(string.format("v%d_mean=mean(%s)", i, v.col))
      for j, q in ipairs(qs) do spec(string.format("v%d_q%d=quantile(%s, %.17g)", i, j, v.col, q)) end
      spec(string.format("v%d_max=max(%s)", i, v.col))
    end
    a = t:group_by(table.unpack(gkeys)):agg(specs)
  end
  local order = opts.sort or "count"
  if order == "count" then a = a:sort("-v1_n", table.unpack(gkeys))
  else a = a:sort(string.format(values[order].total and "-v%d_sum" or "-v%d_max", order), table.unpack(gkeys)) end
  local cols = {}
  for _, k in ipairs(keys) do cols[#cols + 1] = {k, a[k]} end
  cols[#cols + 1] = {opts.count_label or "Count", a.v1_n}
  for i, v in ipairs(values) do
    local unit = v.unit and (" (" .. v.unit .. ")") or ""
    local function name(what) return string.format("%s %s%s", v.label, what, unit) end
    if v.total then cols[#cols + 1] = {name("total"), a["v" .. i .. "_sum"]} end
    if opts.mean ~= false then cols[#cols + 1] = {name("mean"), a["v" .. i .. "_mean"]} end
    for j, q in ipairs(qs) do cols[#cols + 1] = {name(M.label(q)), a["v" .. i .. "_q" .. j]} end
    cols[#cols + 1] = {name("max"), a["v" .. i .. "_max"]}
  end
  return nsl.table(cols)
end

--- The groups' figures M.table makes of the rows of every process of an MPI
-- job (collective: every process calls it with its own rows t, the same
-- keys, values and opts.qs), with the bits one process's group-by gives
-- and no row moved but those of small groups (nsl.stats.reduce_aggregates,
-- one per value): for M.table's opts.aggregates on rank 0 (the others get
-- no rows).  nil on every process where the values are not integers or too
-- large for exact sums of squares (the caller then reads the rows).
function M.reduce(t, keys, values, opts)
  opts = opts or {}
  local stats = require("nsl.stats")
  local qs = opts.qs or M.default
  local gkeys = keys
  if #keys == 0 then
    t = t:with("_all", nsl.rep(0, #t))
    gkeys = {"_all"}
  end
  local a
  for i, v in ipairs(values) do
    local r = stats.reduce_aggregates(t, gkeys, v.col, {quantiles = qs})
    if not r then return nil end
    a = a or r:select(gkeys)   -- (every value's groups: the keys of every row, in one order)
    local with = {"v" .. i .. "_n", r.n, "v" .. i .. "_sum", r.total, "v" .. i .. "_mean", r.avg}
    for j = 1, #qs do with[#with + 1], with[#with + 2] = "v" .. i .. "_q" .. j, r["q" .. j] end
    with[#with + 1], with[#with + 2] = "v" .. i .. "_max", r.max
    a = a:with(table.unpack(with))
  end
  return a
end

return M
