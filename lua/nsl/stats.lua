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
  s = s:sort("-total", key)
  local grand = s.total:sum()
  local pct = grand > 0 and (s.total * 100.0 / grand) or nsl.rep(0.0, #s)
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

return M
