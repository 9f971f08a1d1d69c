-- nsl.stats -- the summary tables of `nsys stats`, built on group-by:
-- Time (%), Total, Count, Avg, Med, Min, Max, StdDev per name, sorted by
-- total time (NVIDIA's cuda_gpu_kern_sum / cuda_api_sum / nvtx_sum shape).
local nsl = require("nsl")

local M = {}

--- Summary of durations `dur` of table t grouped by column `key`.
-- opts.count_label ("Instances" / "Num Calls" / "Count"), opts.name_label
-- ("Name" / "Operation" / "Range"), opts.keys (extra leading key columns,
-- e.g. {"report"}), opts.value ("dur" by default).
-- Returns an nsl table with nsys's column names, sorted by total desc.
-- opts.aggregates: the per-group aggregates already made (M.reduce_aggregates
-- of a distributed run) instead of t.
function M.time_summary(t, key, opts)
  opts = opts or {}
  local value = opts.value or "dur"
  local keys = {}
  for _, k in ipairs(opts.keys or {}) do keys[#keys + 1] = k end
  keys[#keys + 1] = key
  local s = opts.aggregates
  if not s then
    local need = {value}
    for _, k in ipairs(keys) do need[#need + 1] = k end
    t:load(need)   -- one pass over the source for every column involved
    s = t:group_by(table.unpack(keys)):agg{
      "total=sum(" .. value .. ")", "n=count(" .. value .. ")", "avg=mean(" .. value .. ")",
      "med=median(" .. value .. ")", "min=min(" .. value .. ")", "max=max(" .. value .. ")",
      "std=std(" .. value .. ")"}
  end
  local order = {}
  for _, k in ipairs(opts.keys or {}) do order[#order + 1] = k end
  order[#order + 1] = "-total"
  order[#order + 1] = key
  s = s:sort(table.unpack(order))   -- per leading key (e.g. report), heaviest first
  -- Time (%) is within each group of the leading keys (e.g. per report)
  local pct
  if opts.keys and #opts.keys > 0 then
    local g = s:group_by(table.unpack(opts.keys))
    local grand = g:agg{"g=sum(total)"}.g:gather(g:ids())
    pct = s.total * 100.0 / grand
  else
    local grand = s.total:sum()
    pct = grand > 0 and (s.total * 100.0 / grand) or nsl.rep(0.0, #s)
  end
  local cols = {}
  for _, k in ipairs(opts.keys or {}) do cols[#cols + 1] = {k, s[k]} end
  local u = opts.unit or "ns"
  for _, c in ipairs{
    {"Time (%)", pct}, {"Total Time (" .. u .. ")", s.total}, {opts.count_label or "Instances", s.n},
    {"Avg (" .. u .. ")", s.avg}, {"Med (" .. u .. ")", s.med}, {"Min (" .. u .. ")", s.min},
    {"Max (" .. u .. ")", s.max}, {"StdDev (" .. u .. ")", s.std}, {opts.name_label or "Name", s[key]}} do
    cols[#cols + 1] = c
  end
  return nsl.table(cols)
end

local PIVOTS = 15   -- per median and round: the range that holds it shrinks 16-fold
local EXACT = 1 << 53   -- values within +-2^53: halves of two are exact doubles

--- The aggregates M.time_summary makes of the rows of every process of an
-- MPI job (total, n, avg, med, min, max, std of column `value` per group
-- of the key columns, one row per group, the keys first), with the bits a
-- group-by of all the rows in one process gives, and no row moved
-- (collective: every process calls it with its own rows t and the same
-- keys and value):
--  1. the groups: each process's keys gathered on rank 0, their union sent
--     back to all, every row given its group's index;
--  2. count, sum, least, greatest and sum of squares per group
--     (nsl.moments), added up by all-reduces; means and deviations from
--     them (nsl.moments_finish) as the group-by computes them;
--  3. each median: the one or two values of rank (n-1)/2 found by
--     narrowing a range that holds them: each round counts, on every
--     process, its values at most 15 pivots in the range (nsl.count_le
--     over its rows sorted by group and value), the counts are summed, and
--     the range shrinks to the 1/16 that holds the rank (about 8 rounds
--     for values up to 2^32; at most 14 for any).
-- Every process then holds the same numbers and makes the same decisions.
-- Returns the table on every process; nil (on every process) when the
-- values are not integers or too large for exact deviations (the caller
-- then gathers the rows).
function M.reduce_aggregates(t, keys, value)
  local mpi = nsl.mpi
  local need = {value}
  for _, k in ipairs(keys) do need[#need + 1] = k end
  local ty
  local ok, mine = pcall(function()
    t:load(need)
    ty = t:coltype(value)
    if ty ~= "i64" and ty ~= "i32" then return false end
    return t:group_by(table.unpack(keys)):keys()
  end)
  if not mpi.all_ok(ok, mine) or not mpi.agree(mine ~= false) then return nil end
  local got, err = mpi.gather(mine, 0)
  if not mpi.all_ok(got ~= nil, err) then return nil end
  local union
  if type(got) == "table" then
    local tabs = {}
    for _, g in ipairs(got) do if g then tabs[#tabs + 1] = g end end
    union = #tabs == 1 and tabs[1] or nsl.concat_tables(tabs)
    union = union:group_by(table.unpack(keys)):keys():sort(table.unpack(keys))
  end
  union, err = mpi.bcast_table(union)
  if not mpi.all_ok(union ~= nil, err) then return nil end
  local ng = #union
  -- 1. every row's group, the rows with a value sorted by group and value
  local gid, v
  ok, err = pcall(function()
    local g = t:select(need):join(union:with("_gid", nsl.range(ng)), keys, {"_gid"})
    if g._gid:isnull():count() > 0 then error("summary: a row's key is not among the keys", 0) end
    g = g:filter(~g[value]:isnull())
    g = g:sort("_gid", value)
    gid, v = g._gid:cast("i64"), g[value]:cast("i64")
  end)
  if not mpi.all_ok(ok, err) then return nil end
  -- 2. the moments
  local parts, lo, hi = nsl.moments(gid, v, ng)
  parts, lo, hi = mpi.allreduce(parts, "sum"), mpi.allreduce(lo, "min"), mpi.allreduce(hi, "max")
  local n, total, avg, std, min, max, exact = nsl.moments_finish(parts, lo, hi)
  local nl, lol, hil = n:totable(), lo:totable(), hi:totable()
  for g = 1, ng do exact = exact and (nl[g] == 0 or (lol[g] > -EXACT and hil[g] < EXACT)) end
  if not exact then return nil end
  -- 3. the medians: targets (group, rank) with the range [a, b] that holds each
  local tg, rank, a, b = {}, {}, {}, {}
  for g = 1, ng do
    local c = nl[g]
    if c > 0 then
      local pos = (c - 1) // 2
      for r = pos, (c - 1) % 2 == 1 and pos + 1 or pos do
        tg[#tg + 1], rank[#rank + 1], a[#a + 1], b[#b + 1] = g - 1, r, lol[g], hil[g]
      end
    end
  end
  while true do
    local open, pg, pv, first = {}, {}, {}, {}
    for i = 1, #tg do
      if a[i] < b[i] then
        open[#open + 1] = i
        first[#open] = #pv
        -- pivots a + step, ..., a + 15 step (all below b); a narrow range: every value a .. b - 1
        local d = b[i] - a[i]
        local step, k, base = d // (PIVOTS + 1), PIVOTS, a[i]
        if d <= PIVOTS then step, k, base = 1, d, a[i] - 1 end
        for j = 1, k do pg[#pv + 1], pv[#pv + 1] = tg[i], base + step * j end
      end
    end
    if #open == 0 then break end
    local cnt = mpi.allreduce(nsl.count_le(gid, v, nsl.column(pg):cast("i64"), nsl.column(pv):cast("i64")), "sum")
    cnt = cnt:totable()
    for o, i in ipairs(open) do
      local j0, j1 = first[o] + 1, (o < #open and first[o + 1] or #pv)
      local lo_i, hi_i = a[i], b[i]
      for j = j0, j1 do   -- the first pivot with more than `rank` values at or below it
        if cnt[j] > rank[i] then hi_i = pv[j] break end
        lo_i = pv[j] + 1
      end
      a[i], b[i] = lo_i, hi_i
    end
  end
  local med, at = {}, 1
  for g = 1, ng do
    if nl[g] == 0 then med[g] = 0 / 0
    elseif (nl[g] - 1) % 2 == 0 then med[g], at = a[at] + 0.0, at + 1
    else
      local x, y = a[at], a[at + 1]
      med[g], at = x == y and x + 0.0 or x + (y - x) * 0.5, at + 2
    end
  end
  local cols = {}
  for _, k in ipairs(keys) do cols[#cols + 1] = {k, union[k]} end
  for _, c in ipairs{{"total", total}, {"n", n}, {"avg", avg},
                     {"med", ng > 0 and nsl.column(med):cast("f64") or nsl.rep(0.0, 0)},
                     {"min", min:cast(ty)}, {"max", max:cast(ty)}, {"std", std}} do
    cols[#cols + 1] = c
  end
  return nsl.table(cols)
end

--- Summary of sizes (bytes) per operation in MB (10^6 B), as
-- cuda_gpu_mem_size_sum: Total, Count, Avg, Med, Min, Max, StdDev, Operation.
function M.size_summary(t, key, opts)
  opts = opts or {}
  local keys = {}
  for _, k in ipairs(opts.keys or {}) do keys[#keys + 1] = k end
  keys[#keys + 1] = key
  local s = t:group_by(table.unpack(keys)):agg{
    "total=sum(mb)", "n=count(mb)", "avg=mean(mb)", "med=median(mb)", "min=min(mb)", "max=max(mb)", "std=std(mb)"}
  s = s:sort("-total", key)
  local cols = {}
  for _, k in ipairs(opts.keys or {}) do cols[#cols + 1] = {k, s[k]} end
  for _, c in ipairs{
    {"Total (MB)", s.total}, {"Count", s.n}, {"Avg (MB)", s.avg}, {"Med (MB)", s.med}, {"Min (MB)", s.min},
    {"Max (MB)", s.max}, {"StdDev (MB)", s.std}, {"Operation", s[key]}} do
    cols[#cols + 1] = c
  end
  return nsl.table(cols)
end

-- erfc by the rational approximation of Abramowitz & Stegun 7.1.26
-- (|error| < 1.5e-7), enough for p-values.
function M.erfc(x)
  local z = math.abs(x)
  local t = 1 / (1 + 0.3275911 * z)
  local y = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
  local r = y * math.exp(-z * z)
  return x >= 0 and r or 2 - r
end

--- 0-based ordinal of rows within groups of `key` (t sorted by key first).
local function ordinal(t, key)
  local pos = nsl.range(#t)
  local g = t:with("_pos", pos):group_by(key)
  return pos - g:agg{"f=min(_pos)"}.f:gather(g:ids())
end

--- Mann-Whitney U test per group: t has columns key (the group), dur (the
-- values) and side (0 or 1).  The two samples of a group are ranked
-- together (ties get their mean rank); U is side 1's rank sum minus
-- n2(n2+1)/2; the p-value is two-sided from the normal approximation, the
-- variance corrected for ties.  Returns {key -> {n1, n2, u, z, p}}; all
-- ranking runs over whole columns.
function M.mann_whitney(t)
  local s = t:sort("key", "dur")
  local rank1 = ordinal(s, "key") + 1
  local ties = s:with("r", rank1):group_by("key", "dur")
  local tagg = ties:agg{"mr=mean(r)", "t=count"}
  local rank = tagg.mr:gather(ties:ids())
  local tk = ties:keys()
  local tcorr = nsl.table{{"key", tk.key}, {"c", tagg.t * tagg.t * tagg.t - tagg.t}}:group_by("key"):agg{"c=sum(c)"}
  local side1 = s.side:eq(1)
  local r2 = nsl.table{{"key", s.key}, {"r", nsl.where(side1, rank, 0.0)}, {"one", side1:cast("i64")}}
    :group_by("key"):agg{"r2=sum(r)", "n2=sum(one)", "n=count"}
  r2 = r2:join(tcorr, {"key"}, {"c"})
  local out = {}
  for i = 1, #r2 do
    local n, n2 = r2.n[i], r2.n2[i]
    local n1 = n - n2
    local u = r2.r2[i] - n2 * (n2 + 1) / 2
    local mu = n1 * n2 / 2
    local var = n1 * n2 / 12 * ((n + 1) - (r2.c[i] or 0) / (n > 1 and n * (n - 1) or 1))
    local z = var > 0 and (u - mu) / math.sqrt(var) or 0
    out[r2.key[i]] = {n1 = n1, n2 = n2, u = u, z = z, p = var > 0 and M.erfc(math.abs(z) / math.sqrt(2)) or 1.0}
  end
  return out
end

return M
