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
function M.time_summary(t, key, opts)
  opts = opts or {}
  local value = opts.value or "dur"
  local keys = {}
  for _, k in ipairs(opts.keys or {}) do keys[#keys + 1] = k end
  keys[#keys + 1] = key
  local need = {value}
  for _, k in ipairs(keys) do need[#need + 1] = k end
  t:load(need)   -- one pass over the source for every column involved
  local s = t:group_by(table.unpack(keys)):agg{
    "total=sum(" .. value .. ")", "n=count(" .. value .. ")", "avg=mean(" .. value .. ")",
    "med=median(" .. value .. ")", "min=min(" .. value .. ")", "max=max(" .. value .. ")",
    "std=std(" .. value .. ")"}
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
