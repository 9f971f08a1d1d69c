-- summary: every table against SQL with nsys stats' definitions (the
-- cuda_gpu_kern_sum / cuda_gpu_mem_time_sum / cuda_gpu_mem_size_sum /
-- cuda_api_sum queries), medians and sample deviations from SQL rows.
local T = ...

-- Rows of the summary table t keyed by the text column `key`.
local function by(t, key)
  local m = {}
  for i = 1, #t do m[t[key][i]] = i end
  return m
end

local memcpy_names = {[1] = "[CUDA memcpy Host-to-Device]", [2] = "[CUDA memcpy Device-to-Host]",
                      [8] = "[CUDA memcpy Device-to-Device]", [10] = "[CUDA memcpy Peer-to-Peer]"}

local function check_mem(f)
  local tables = T.run_analysis("summary", {f}, {"only=mem_time,mem_size", "limit=0"})
  local tt, st = tables.cuda_gpu_mem_time_sum, tables.cuda_gpu_mem_size_sum
  local want_t, want_b, grand = {}, {}, 0
  for _, r in ipairs(T.sql(f, "SELECT copyKind, end - start, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY")) do
    local name = memcpy_names[tonumber(r[1])] or "?"
    want_t[name] = want_t[name] or {}; table.insert(want_t[name], tonumber(r[2]))
    want_b[name] = want_b[name] or {}; table.insert(want_b[name], math.tointeger(tonumber(r[3])))
    grand = grand + tonumber(r[2])
  end
  local has_memset = T.sql1(f, "SELECT count(*) FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_MEMSET'") == 1
  if has_memset then
    for _, r in ipairs(T.sql(f, "SELECT end - start, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET")) do
      want_t["[CUDA memset]"] = want_t["[CUDA memset]"] or {}; table.insert(want_t["[CUDA memset]"], tonumber(r[1]))
      want_b["[CUDA memset]"] = want_b["[CUDA memset]"] or {}
      table.insert(want_b["[CUDA memset]"], math.tointeger(tonumber(r[2])))
      grand = grand + tonumber(r[1])
    end
  end
  local ti, si = by(tt, "Operation"), by(st, "Operation")
  local n = 0
  for name, durs in pairs(want_t) do
    n = n + 1
    local i = assert(ti[name], name)
    local total = 0
    for _, d in ipairs(durs) do total = total + d end
    T.eq(tt["Count"][i], #durs, name .. " count")
    T.eq(tt["Total Time (ns)"][i], total, name .. " total")
    T.near(tt["Time (%)"][i], 100 * total / grand, 1e-9, name .. " time %")
    T.near(tt["Med (ns)"][i], T.median(durs), 1e-9, name .. " median")
    T.near(tt["StdDev (ns)"][i], T.stdev(durs), 1e-9, name .. " stddev")
    local j = assert(si[name], name)
    -- nsys's statistics of the sizes in bytes (integers), then in MB: the total, least and greatest exactly
    local bytes, lo, hi = 0, math.huge, -math.huge
    for _, b in ipairs(want_b[name]) do bytes, lo, hi = bytes + b, math.min(lo, b), math.max(hi, b) end
    T.eq(st["Total (MB)"][j], bytes / 1e6, name .. " MB")
    T.eq(st["Min (MB)"][j], lo / 1e6, name .. " least MB")
    T.eq(st["Max (MB)"][j], hi / 1e6, name .. " greatest MB")
    T.near(st["Med (MB)"][j], T.median(want_b[name]) / 1e6, 1e-9, name .. " median MB")
    T.near(st["StdDev (MB)"][j], T.stdev(want_b[name]) / 1e6, 1e-9, name .. " deviation MB")
  end
  T.eq(#tt, n, "operations")
end

return {
  {"memory-operation summaries by time and by size equal SQL", function()
    check_mem(T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite"))
    check_mem(T.data("nsys/cuda_2021.2.sqlite"))
    check_mem(T.data("nsys/mpi_cuda_rank0_2022.2.sqlite"))
  end},

  {"CUDA API summary equals SQL (names cut by nsys's cuda_api_sum rule)", function()
    for _, rel in ipairs{"nsys/pytorch_h100_2gpu_2026.2.sqlite", "nsys/mpi_cuda_rank0_2022.2.sqlite", "nsys/cuda_2021.2.sqlite"} do
      local f = T.data(rel)
      local t = T.run_analysis("summary", {f}, {"only=api", "limit=0"}).cuda_api_sum
      local want, grand = {}, 0
      -- nsys's cuda_api_sum names a call by its StringIds value less a "_vNNNN" suffix of exactly six characters
      for _, r in ipairs(T.sql(f, [[SELECT CASE substr(s.value, -6, 2) WHEN '_v' THEN substr(s.value, 1, length(s.value) - 6)
                                    ELSE s.value END, r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r
                                    JOIN StringIds s ON s.id = r.nameId]])) do
        local name = r[1]
        want[name] = want[name] or {}
        table.insert(want[name], tonumber(r[2]))
        grand = grand + tonumber(r[2])
      end
      local idx = by(t, "Name")
      local n = 0
      for name, durs in pairs(want) do
        n = n + 1
        local i = assert(idx[name], name)
        local total = 0
        for _, d in ipairs(durs) do total = total + d end
        T.eq(t["Num Calls"][i], #durs, name)
        T.eq(t["Total Time (ns)"][i], total, name)
        T.near(t["Med (ns)"][i], T.median(durs), 1e-9, name .. " median")
        T.near(t["Time (%)"][i], 100 * total / grand, 1e-9, name .. " %")
      end
      T.eq(#t, n, "API names of " .. rel)
      for i = 2, #t do T.ok(t["Total Time (ns)"][i] <= t["Total Time (ns)"][i - 1], "sorted by total") end
    end
  end},

  {"per-report summaries: each report's Time % adds up to 100 and its rows equal SQL on its file", function()
    local a, b = T.data("nsys/pytorch_nccl_2gpu_2026.2.sqlite"), T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite")
    local t = T.run_analysis("summary", {a, b}, {"only=kernels", "per_report=true", "limit=0"}).cuda_gpu_kern_sum
    for rep, f in pairs{pytorch_nccl_2gpu_2026_2 = a, pytorch_h100_2gpu_2026_2 = b} do
      local rows = t:filter(t.report:eq((rep:gsub("_2026_2$", "_2026.2"))))
      T.near(rows["Time (%)"]:sum(), 100, 1e-9, "time % of report " .. rep)
      T.eq(rows["Instances"]:sum(), T.sql1(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "kernels of report " .. rep)
      T.eq(rows["Total Time (ns)"]:sum(), T.sql1(f, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), "time of report " .. rep)
    end
  end},

  {"the aggregates of all processes together (stats.reduce_aggregates, here one process) equal the group-by's bits", function()
    local nsl, stats = require("nsl"), require("nsl.stats")
    -- bits of a value: doubles by their text at 17 digits (NaN equal to NaN)
    local function same(a, b) return a == b or (a ~= a and b ~= b) or string.format("%.17g", a) == string.format("%.17g", b) end
    local function check(t, keys, what)
      local s = stats.reduce_aggregates(t, keys, "dur")
      T.ok(s ~= nil, what .. ": reduced")
      local g = t:group_by(table.unpack(keys)):agg{"total=sum(dur)", "n=count(dur)", "avg=mean(dur)",
        "med=median(dur)", "min=min(dur)", "max=max(dur)", "std=std(dur)"}
      local order = {}
      for _, k in ipairs(keys) do order[#order + 1] = k end
      g, s = g:sort(table.unpack(order)), s:sort(table.unpack(order))
      T.eq(#s, #g, what .. ": groups")
      for _, c in ipairs{"total", "n", "avg", "med", "min", "max", "std"} do
        T.eq(s:coltype(c), g:coltype(c), what .. ": type of " .. c)
        local a, b = s[c]:totable(), g[c]:totable()
        for i = 1, #g do
          if not same(a[i], b[i]) then T.eq(a[i], b[i], string.format("%s: %s of group %d", what, c, i)) end
        end
      end
    end
    for _, f in ipairs(T.exports()) do
      local trace <close> = nsl.open(f)
      local k = trace.kernels
      k:load{"report", "demangled", "dur"}
      if #k > 0 then
        check(k:select{"report", "demangled", "dur"}, {"demangled"}, f .. " kernels")
        check(k:select{"report", "demangled", "dur"}, {"report", "demangled"}, f .. " kernels per report")
      end
      local api = trace.api
      api:load{"source", "name", "dur", "report"}
      if #api > 0 then check(api:select{"name", "dur"}, {"name"}, f .. " CUDA calls") end
    end
    -- medians of even and odd counts, negative values, ranges of one value and of 2^40
    local t = nsl.table{{"k", nsl.column{"a", "a", "b", "b", "b", "c", "d", "d", "e", "e", "e", "e"}},
                        {"dur", nsl.column{5, 7, -3, 9, 9, 0, 4, 4, 1, 1 << 40, 3, 1 << 40}}}
    check(t, {"k"}, "small")
    -- values too large for exact deviations: nil (the caller gathers the rows)
    local big = nsl.table{{"k", nsl.column{"a", "a"}}, {"dur", nsl.column{1 << 62, 1 << 62}}}
    T.eq(stats.reduce_aggregates(big, {"k"}, "dur"), nil, "2^62: not reduced")
    T.eq(stats.reduce_aggregates(nsl.table{{"k", nsl.column{"a"}}, {"dur", nsl.column{0.5}}}, {"k"}, "dur"), nil,
         "doubles: not reduced")
  end},

  {"sample deviations of integers are exact: SQL's sums of the same rows, in 128-bit arithmetic", function()
    local nsl = require("nsl")
    -- values whose mean is far from zero and whose deviations are small: the row-order sum in long double
    -- loses digits here; (n * sum(x^2) - sum(x)^2) / (n (n - 1)) does not
    local base = 1 << 39
    local v = {}
    for i = 1, 1000 do v[i] = base + (i * 7919) % 13 end
    local t = nsl.table{{"k", nsl.rep(1, #v)}, {"x", nsl.column(v)}}
    local sd = t:group_by("k"):agg{"s=std(x)"}.s[1]
    local n, s1, s2 = #v, 0, 0
    for _, x in ipairs(v) do s1, s2 = s1 + (x - base), s2 + (x - base) * (x - base) end   -- shifted: exact in Lua
    T.near(sd, math.sqrt((n * s2 - s1 * s1) / (n * (n - 1))), 1e-12, "std of 1,000 values near 2^39")
  end},
}
