-- nsl.stats -- the summary tables of `nsys stats`, built on group-by:
-- Time (%), Total, Count, Avg, Med, Min, Max, StdDev per name, sorted by
-- total time (NVIDIA's cuda_gpu_kern_sum / cuda_api_sum / nvtx_sum shape).
local nsl = require("nsl")
local tables = require("nsl.util.tables")

local M = {}

-- The group-by's aggregates of column value that a summary shows.
local function summary_specs(value)
  return {"total=sum(" .. value .. ")", "n=count(" .. value .. ")", "avg=mean(" .. value .. ")",
          "med=median(" .. value .. ")", "min=min(" .. value .. ")", "max=max(" .. value .. ")",
          "std=std(" .. value .. ")"}
end

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
    s = t:group_by(table.unpack(keys)):agg(summary_specs(value))
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
local FEW = 64   -- a median of at most this many values: the values go to rank 0 (about 5 B each, against
                 -- about 2 KB per median in rounds of counts)

-- The position of quantile q among n sorted values (0-based) and the fraction towards the next, as the
-- group-by takes them (nsl__quantile_pos).
local function quantile_pos(n, q)
  local pos = q * (n - 1)
  local k = math.floor(pos)
  if k >= n - 1 then return n - 1, 0.0 end
  return k, pos - k
end

-- M.reduce_aggregates' opts.extra as a list of {out, "sum" | "mean", column}, in the order of the names.
local function parse_extra(extra)
  local more = {}
  for _, out in ipairs(tables.sorted_keys(extra or {})) do
    local agg, col = extra[out]:match("^(%a+)%(([%w_]+)%)$")
    assert(agg == "sum" or agg == "mean", "reduce_aggregates: extra aggregates are sum(col) or mean(col)")
    more[#more + 1] = {out, agg, col}
  end
  return more
end

-- M.reduce_aggregates where a key is `report` (the trace's numbers): each group's rows are in the process that
-- holds its report, which aggregates them as one process would; rank 0 puts the groups in the order of the keys.
local function per_process(t, keys, value, opts)
  local mpi = nsl.mpi
  local ok, mine = pcall(function()
    local need = {value}
    for _, k in ipairs(keys) do need[#need + 1] = k end
    local specs = summary_specs(value)
    for _, m in ipairs(parse_extra(opts.extra)) do
      specs[#specs + 1] = string.format("%s=%s(%s)", m[1], m[2], m[3])
      need[#need + 1] = m[3]
    end
    for j, q in ipairs(opts.quantiles or {}) do specs[#specs + 1] = string.format("q%d=quantile(%s, %.17g)", j, value, q) end
    t:load(need)
    return t:group_by(table.unpack(keys)):agg(specs)
  end)
  if not mpi.all_ok(ok, mine) then return nil end
  local got, err = mpi.gather(mine, 0)
  if not mpi.all_ok(got ~= nil, err) then return nil end
  if type(got) ~= "table" then return mine:head(0) end
  return nsl.mpi.concat(got):sort(table.unpack(keys))
end

-- Whether got (a gather's answer) says this process is not rank 0 (which gets the tables).
local function me_is_not_root(got) return type(got) ~= "table" end

--- The aggregates M.time_summary makes of the rows of every process of an
-- MPI job (total, n, avg, med, min, max, std of column `value` per group
-- of the key columns, one row per group, the keys first), with the bits a
-- group-by of all the rows in one process gives, and no row moved but
-- those of small groups (collective: every process calls it with its own
-- rows t and the same keys and value).  What moves grows with each
-- process's own groups, never with the number of processes times all
-- groups:
--  1. each process groups its rows and sends rank 0 its keys with the
--     moments of each group's values (count, sum and sum of squares as
--     nsl.moments makes them, least, greatest) and the extras' sums;
--  2. rank 0 adds them up per key: means and deviations (nsl.moments_finish)
--     as the group-by computes them;
--  3. the medians: the values of a group of at most 64 go to rank 0, which
--     takes their median as the group-by does; a larger group whose values
--     are all in one process has its median taken there; of the others,
--     whose keys rank 0 sends to all, the one or two values of rank
--     (n-1)/2 are found by narrowing a range that holds them: each round
--     counts, on every process, its values at most 15 pivots in the range
--     (nsl.count_le over its rows sorted by group and value), the counts
--     are summed, and the range shrinks to the 1/16 that holds the rank
--     (about 8 rounds for values up to 2^32; at most 14 for any).
-- Where a key is named `report` (the trace's report numbers, each report's
-- rows in one process), each process aggregates its groups itself and
-- rank 0 receives the groups' rows.
-- Returns the table on rank 0 (the others get its columns without rows);
-- nil (on every process) when the values are not integers or too large for
-- exact deviations (the caller then gathers the rows).
-- opts.quantiles (optional): more quantiles of the values ({0.9, 0.99}),
-- columns q1, q2, ... with the bits the group-by's quantile(value, q) gives
-- (found as the medians are: the values of small groups, rounds for the
-- others' order statistics, nsl.quantile_of interpolating them).
-- opts.extra (optional): more columns of the same groups, {out = "sum(col)"} or
-- {out = "mean(col)"} (integer columns; NULLs left out): each process's
-- sums and counts per group travel with its keys and rank 0 adds them up,
-- with the bits the group-by's sum gives (wrapped to 64 bits as it wraps)
-- and its mean (nsl.int_mean; while the sum stays within 64 bits).
function M.reduce_aggregates(t, keys, value, opts)
  opts = opts or {}
  for _, k in ipairs(keys) do if k == "report" then return per_process(t, keys, value, opts) end end
  local mpi = nsl.mpi
  local need = {value}
  for _, k in ipairs(keys) do need[#need + 1] = k end
  local more = parse_extra(opts.extra)
  for _, m in ipairs(more) do need[#need + 1] = m[3] end
  local nparts = #nsl.moments(nsl.column{0}:cast("i64"), nsl.column{0}:cast("i64"), 1)   -- per group
  -- 1. this process's groups (lg: each row's, 0-based) and their figures
  local ty, lg
  local ok, mine = pcall(function()
    t:load(need)
    ty = t:coltype(value)
    if ty ~= "i64" and ty ~= "i32" then return false end
    local specs = {}
    for i, m in ipairs(more) do
      local et = t:coltype(m[3])
      if et ~= "i64" and et ~= "i32" then return false end
      specs[#specs + 1] = string.format("_s%d=sum(%s)", i, m[3])
      specs[#specs + 1] = string.format("_n%d=count(%s)", i, m[3])
    end
    local g = t:group_by(table.unpack(keys))
    lg = g:ids():cast("i64")
    local k = #specs > 0 and g:agg(specs) or g:keys()
    local parts, lo, hi = nsl.moments(lg, t[value]:cast("i64"), #k)
    local with = {"_lo", lo, "_hi", hi}
    for j = 0, nparts - 1 do
      local at = #with
      with[at + 1], with[at + 2] = "_p" .. j, parts:gather(nsl.range(#k) * nparts + j)
    end
    return k:with(table.unpack(with))
  end)
  if not mpi.all_ok(ok, mine) or not mpi.agree(mine ~= false) then return nil end
  local got, err = mpi.gather(mine, 0)
  if not mpi.all_ok(got ~= nil, err) then return nil end
  -- 2. rank 0: the union of the keys in their order, each group's figures added up, its count
  local res, big, places   -- the result's columns, the large groups (keys, gid, n, lo, hi), every key's group
  local nl
  if type(got) == "table" then
    local exact
    ok, err = pcall(function()
      local tagged = {}   -- each process's keys with its index (_proc)
      for p, k in ipairs(got) do tagged[p] = k and k:with("_proc", nsl.rep(p - 1, #k)) end
      local g = nsl.mpi.concat(tagged):group_by(table.unpack(keys))
      local order = g:keys():with("_g", nsl.range(#g)):sort(table.unpack(keys))._g
      places = order:argsort():gather(g:ids())   -- per key of every process (in process order): its group
      local specs = {"_lo=min(_lo)", "_hi=max(_hi)", "_procs=count", "_proc=min(_proc)"}
      for j = 0, nparts - 1 do specs[#specs + 1] = string.format("_p%d=sum(_p%d)", j, j) end
      for i = 1, #more do
        specs[#specs + 1] = string.format("_s%d=sum(_s%d)", i, i)
        specs[#specs + 1] = string.format("_n%d=sum(_n%d)", i, i)
      end
      local acc = g:agg(specs):take(order)
      local ng = #acc
      -- the parts of group g at g * nparts + j, as nsl.moments gives them
      local flat = {}
      for j = 0, nparts - 1 do flat[j + 1] = acc["_p" .. j] end
      local at = nsl.range(ng * nparts)
      local grp = at // nparts
      local parts = nsl.concat(table.unpack(flat)):gather((at - grp * nparts) * ng + grp)
      local n, total, avg, std, min, max
      n, total, avg, std, min, max, exact = nsl.moments_finish(parts, acc._lo, acc._hi)
      nl = n:totable()
      local lol, hil = acc._lo:totable(), acc._hi:totable()
      for i = 1, ng do exact = exact and (nl[i] == 0 or (lol[i] > -EXACT and hil[i] < EXACT)) end
      res = {}
      for _, k in ipairs(keys) do res[#res + 1] = {k, acc[k]} end
      for _, c in ipairs{{"total", total}, {"n", n}, {"avg", avg}, {"med", false}, {"min", min:cast(ty)},
                         {"max", max:cast(ty)}, {"std", std}} do res[#res + 1] = c end
      for i, m in ipairs(more) do
        res[#res + 1] = {m[1], m[2] == "sum" and acc["_s" .. i] or nsl.int_mean(acc["_n" .. i], acc["_s" .. i])}
      end
      -- a large group's owner: the one process that holds all its values (-1: several do)
      local owner = nsl.where(acc._procs:eq(1), acc._proc:cast("i64"), -1)
      big = acc:select(keys):with("_gid", nsl.range(ng), "_n", n, "_lo", acc._lo, "_hi", acc._hi, "_owner", owner)
      big = big:filter(n:gt(FEW))
    end)
    if not ok then big = nil elseif not exact then big = false end
  end
  if not mpi.all_ok(me_is_not_root(got) or ok, err) then return nil end
  if not mpi.agree(me_is_not_root(got) or big ~= false) then return nil end
  big, err = mpi.bcast_table(big or nil)
  if not mpi.all_ok(big ~= nil, err) then return nil end
  -- 3. the medians.  Rows of small groups: (this process's group, value) to rank 0, which takes their medians
  local lv, gbig
  ok, err = pcall(function()
    -- per group of this process: its large group (0-based), NULL: a small one (none: no join, whose key
    -- columns might not have the others' types)
    local b_of = nsl.rep(0, 0)
    if #mine > 0 then
      local j = mine:select(keys):with("_l", nsl.range(#mine)):join(big:select(keys):with("_b", nsl.range(#big)),
                                                                    keys, {"_b"})
      b_of = j:sort("_l")._b
    end
    gbig = b_of:gather(lg)
    lv = t[value]:cast("i64")
  end)
  if not mpi.all_ok(ok, err) then return nil end
  local few = nsl.table{{"_l", lg}, {"v", lv}}:filter(gbig:isnull() & ~lv:isnull())
  local fv
  fv, err = mpi.gather(few, 0)
  if not mpi.all_ok(fv ~= nil, err) then return nil end
  -- the quantiles asked: the median ("med"), then opts.quantiles' ("q1", "q2", ...)
  local qs, qnames = {0.5}, {"med"}
  for j, q in ipairs(opts.quantiles or {}) do qs[#qs + 1], qnames[#qnames + 1] = q, "q" .. j end
  local qv = {}   -- (rank 0's) per quantile: group -> value
  for j = 1, #qs do qv[j] = {} end
  if type(fv) == "table" then
    ok, err = pcall(function()
      local parts, first = {}, 0
      for p, f in ipairs(fv) do   -- each process's groups are its keys' rows of places, in process order
        local nk = got[p] and #got[p] or 0
        if f and #f > 0 then parts[#parts + 1] = nsl.table{{"g", places:gather(f._l + first)}, {"v", f.v}} end
        first = first + nk
      end
      if #parts > 0 then
        local specs = {}
        for j, q in ipairs(qs) do specs[j] = string.format("q%d=quantile(v, %.17g)", j, q) end
        local m = (#parts == 1 and parts[1] or nsl.concat_tables(parts)):group_by("g"):agg(specs)
        local mg = m.g:totable()
        for j = 1, #qs do
          local mq = m["q" .. j]:totable()
          for i = 1, #m do qv[j][mg[i] + 1] = mq[i] end
        end
      end
    end)
  end
  if not mpi.all_ok(me_is_not_root(got) or ok, err) then return nil end
  -- a large group whose values are all in one process (its owner): its quantiles taken there, as the group-by does
  local _, me = mpi.start()
  local bgid, bown = big._gid:totable(), big._owner:totable()
  local owner_row = nsl.coalesce(big._owner:gather(nsl.coalesce(gbig, -1)), -2)   -- per row (-2: a small group)
  local sv
  ok, sv = pcall(function()
    local specs = {}
    for j, q in ipairs(qs) do specs[j] = string.format("q%d=quantile(v, %.17g)", j, q) end
    return nsl.table{{"b", gbig}, {"v", lv}}:filter(owner_row:eq(me) & ~lv:isnull()):group_by("b"):agg(specs)
  end)
  if not mpi.all_ok(ok, sv) then return nil end
  sv, err = mpi.gather(sv, 0)
  if not mpi.all_ok(sv ~= nil, err) then return nil end
  if type(sv) == "table" then
    for _, m in ipairs(sv) do
      if m and #m > 0 then
        local mb = m.b:totable()
        for j = 1, #qs do
          local mq = m["q" .. j]:totable()
          for i = 1, #m do qv[j][bgid[mb[i] + 1] + 1] = mq[i] end
        end
      end
    end
  end
  -- the others (held by several processes): targets (large group, rank) with the range [a, b] that holds each,
  -- one per rank
  local tg, rank, a, b = {}, {}, {}, {}
  local bn, blo, bhi = big._n:totable(), big._lo:totable(), big._hi:totable()
  local at_rank = {}   -- per large group: rank -> its target
  local function target(i, r)
    local m = at_rank[i]
    if not m[r] then
      tg[#tg + 1], rank[#rank + 1], a[#a + 1], b[#b + 1] = i - 1, r, blo[i], bhi[i]
      m[r] = #tg
    end
  end
  for i = 1, #big do
    if bown[i] < 0 then
      at_rank[i] = {}
      for _, q in ipairs(qs) do   -- the order statistic at q (n - 1), and the next where it lies between two
        local k, frac = quantile_pos(bn[i], q)
        target(i, k)
        if frac > 0 then target(i, k + 1) end
      end
    end
  end
  local gid, v
  if #tg > 0 then
    local rows = nsl.table{{"g", gbig}, {"v", lv}}
    rows = rows:filter(owner_row:eq(-1) & ~lv:isnull()):sort("g", "v")
    gid, v = rows.g:cast("i64"), rows.v
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
  if not res then   -- not rank 0: the columns, no rows
    local cols = {}
    for _, k in ipairs(keys) do cols[#cols + 1] = {k, mine[k]:gather(nsl.range(0))} end
    for _, c in ipairs{{"total", nsl.rep(0, 0)}, {"n", nsl.rep(0, 0)}, {"avg", nsl.rep(0.0, 0)},
                       {"med", nsl.rep(0.0, 0)}, {"min", t[value]:gather(nsl.range(0))},
                       {"max", t[value]:gather(nsl.range(0))}, {"std", nsl.rep(0.0, 0)}} do cols[#cols + 1] = c end
    for _, m in ipairs(more) do cols[#cols + 1] = {m[1], m[2] == "sum" and nsl.rep(0, 0) or nsl.rep(0.0, 0)} end
    for j = 2, #qs do cols[#cols + 1] = {qnames[j], nsl.rep(0.0, 0)} end
    return nsl.table(cols)
  end
  -- each quantile of the large groups from its order statistics, as the group-by interpolates them
  -- (a NULL key joins nothing: such a group's values came with the small ones', its quantiles are set)
  local shared = {}   -- the large groups found in rounds
  for i = 1, #big do if bown[i] < 0 then shared[#shared + 1] = i end end
  for j, q in ipairs(qs) do
    local ns, xs, ys = {}, {}, {}
    for s_i, i in ipairs(shared) do
      local k, frac = quantile_pos(bn[i], q)
      ns[s_i], xs[s_i] = bn[i], a[at_rank[i][k]]
      ys[s_i] = frac > 0 and a[at_rank[i][k + 1]] or xs[s_i]
    end
    if #shared > 0 then
      local got_q = nsl.quantile_of(nsl.column(ns):cast("i64"), q, nsl.column(xs):cast("i64"), nsl.column(ys):cast("i64"))
      got_q = got_q:totable()
      for s_i, i in ipairs(shared) do
        local g = bgid[i] + 1
        if qv[j][g] == nil then qv[j][g] = got_q[s_i] end
      end
    end
    for g = 1, #nl do if nl[g] == 0 then qv[j][g] = 0 / 0 end end
  end
  local function quantile_col(j) return #nl > 0 and nsl.column(qv[j]):cast("f64") or nsl.rep(0.0, 0) end
  for _, c in ipairs(res) do
    if c[1] == "med" then c[2] = quantile_col(1) end
  end
  for j = 2, #qs do res[#res + 1] = {qnames[j], quantile_col(j)} end
  return nsl.table(res)
end

--- Summary of sizes (column `bytes` of table t) grouped by column `key`
-- in MB (10^6 B), as cuda_gpu_mem_size_sum: Total, Count, Avg, Med, Min,
-- Max, StdDev, Operation -- its statistics of the sizes in bytes (integers,
-- as nsys takes them), then divided.  opts.keys: leading key columns (e.g.
-- {"report"}), the rows sorted by them first; opts.aggregates: the groups'
-- aggregates of the bytes already made (M.reduce_aggregates) instead of t.
function M.size_summary(t, key, opts)
  opts = opts or {}
  local keys = {}
  for _, k in ipairs(opts.keys or {}) do keys[#keys + 1] = k end
  keys[#keys + 1] = key
  local s = opts.aggregates or t:group_by(table.unpack(keys)):agg(summary_specs("bytes"))
  local order = {}
  for _, k in ipairs(opts.keys or {}) do order[#order + 1] = k end
  order[#order + 1] = "-total"
  order[#order + 1] = key
  s = s:sort(table.unpack(order))
  local cols = {}
  for _, k in ipairs(opts.keys or {}) do cols[#cols + 1] = {k, s[k]} end
  for _, c in ipairs{
    {"Total (MB)", s.total / 1e6}, {"Count", s.n}, {"Avg (MB)", s.avg / 1e6}, {"Med (MB)", s.med / 1e6},
    {"Min (MB)", s.min / 1e6}, {"Max (MB)", s.max / 1e6}, {"StdDev (MB)", s.std / 1e6}, {"Operation", s[key]}} do
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
