-- nsl.straggler -- the core of the straggler analysis, whatever the source of
-- the collectives: NCCL kernels (matched by nsl.nccl.instances) or nsys-jax
-- communication thunks (matched by nsl.jax.collective_instances) feed it the
-- same two tables, and lua/analyses/straggler.lua prints what it returns.
--
--   coll     one row per collective on a rank: rank (0-based), instance (the
--            same id on every rank that took part in it), type, start, stop (ns)
--   work     one row per piece of GPU work of a rank: rank, start, stop, with
--            a mask of the rows that are compute (the kernels or thunks that
--            are not collectives)
--
-- Method (M.analyse):
--  1. Instances seen on fewer than two ranks are dropped (partial captures
--     work: only the ranks present are compared).
--  2. Clocks: a collective finishes together on every rank, so a rank's clock
--     offset is the median, over the instances it shares with the reference
--     rank (the first rank with matched collectives), of its collective end
--     minus the reference's; aligned time = own time - offset.  (nsys-jax
--     aligns devices on the mean end over the devices present and takes the
--     median skew of each device: the same estimate, from a different centre;
--     see tests/lua/test_straggler.lua for how far the two may differ; on
--     nsys-jax's four-process test archives they agree to 0.2 µs.)
--  3. Arrival is a collective's aligned start.  Per instance the last rank to
--     arrive is the one the others waited for (ties: the lowest rank); each
--     other rank waited the difference.  A rank's lateness in an instance is
--     its arrival minus the median arrival of the other ranks; its delay is the
--     median lateness.
--  4. Compute per step: a rank's step k is the window before its k-th matched
--     collective (all its collectives when the trace has one rank), i.e. the
--     compute work that starts after collective k-1 arrives and at or before
--     collective k arrives; its compute time is the busy time (union) of that
--     work.  Only whole windows (k = 1 .. n-1) count.  (A rank's clock offset
--     moves its arrivals and its work alike: steps do not depend on it.)
--  5. A straggler is consistently last (last in at least `last_share` of its
--     instances, and more often than 1.5/ranks) and its median step compute is
--     at least `threshold` x the median rank's (M.ranks).
-- Everything runs over whole columns; Lua loops run over ranks only.
local nsl = require("nsl")

local M = {}

--- One table of the columns `names` from a list of tables with those columns
-- (nil for an empty list).
local function concat_tables(parts, names)
  if #parts == 0 then return nil end
  local cols = {}
  for _, name in ipairs(names) do
    local list = {}
    for i, t in ipairs(parts) do list[i] = t:col(name) end
    cols[#cols + 1] = {name, nsl.concat(table.unpack(list))}
  end
  return nsl.table(cols)
end
M.concat_tables = concat_tables

--- Clock offsets against rank `ref`: for every rank, the median over the
-- instances it shares with ref of (its stop - ref's stop), rounded to ns.
-- Returns offsets and shared, arrays indexed by rank + 1 (offset 0 and
-- shared 0 for a rank that shares no instance with ref).
function M.offsets(coll, nranks, ref)
  local ref_rows = coll:filter(coll.rank:eq(ref)):select{"instance", "stop"}
  local j = coll:join(ref_rows, {"instance"}, {"stop"}, "ref_")
  j = j:filter(~j.ref_stop:isnull())
  local g = nsl.table{{"rank", j.rank}, {"diff", j.stop - j.ref_stop}}:group_by("rank")
    :agg{"off=median(diff)", "n=count"}
  local off, shared = {}, {}
  for r = 1, nranks do off[r], shared[r] = 0, 0 end
  for i = 1, #g do
    off[g.rank[i] + 1] = math.floor(g.off[i] + 0.5)
    shared[g.rank[i] + 1] = g.n[i]
  end
  return off, shared
end

--- Per instance (rows of coll, aligned `arrive` set): the arrival of the last
-- rank, and which rank that is (the lowest of those arriving last).
local function last_arrivals(coll)
  local by_inst = coll:group_by("instance")
  local last = by_inst:agg{"last=max(arrive)"}.last:gather(by_inst:ids())
  local is_last = coll.arrive:eq(last)
  local lr = nsl.table{{"instance", coll.instance}, {"rank", coll.rank}}:filter(is_last)
    :group_by("instance"):agg{"who=min(rank)"}
  local who = coll:join(lr, {"instance"}, {"who"}).who
  return last, who
end

--- Each rank's lateness per instance: its arrival minus the median arrival
-- of the other ranks (table rank, instance, late; nil when coll is empty).
-- An instance holds one row per rank, so with its arrivals sorted (row p of
-- the rank, n rows), the others' are the sorted list without row p: their
-- median is the mean of its rows j_lo = (n-2)//2 and j_hi = (n-1)//2, row j of
-- the others being row j + (j >= p) of the instance.
local function lateness(coll)
  if #coll == 0 then return nil end
  local s = coll:select{"rank", "instance", "arrive"}:sort("instance", "arrive")
  local g = s:group_by("instance")
  local ids = g:ids()
  local p = nsl.cumcount(ids)
  local n = g:agg{"n=count"}.n:gather(ids)
  local base = nsl.range(#s) - p                 -- the instance's first row
  local lo, hi = (n - 2) // 2, (n - 1) // 2
  lo = base + lo + lo:ge(p):cast("i64")
  hi = base + hi + hi:ge(p):cast("i64")
  local med = (s.arrive:gather(lo) + s.arrive:gather(hi)) / 2
  return nsl.table{{"rank", s.rank}, {"instance", s.instance}, {"late", s.arrive - med}}
end

--- Compute time per step and rank (table rank, step, compute), from each
-- rank's collective arrivals `cs` (rank, arrive) and its work (rank, start,
-- stop; the rows where `mask` is true are compute), all on one rank's clock
-- each (a rank's clock offset moves its arrivals and its work alike, so the
-- windows do not depend on it); nil when no rank has a whole window.  One
-- pass for all ranks: on the key rank x W + (time - t0) (W above the span of
-- all times) every rank's arrivals sort after the lower ranks', so one
-- searchsorted of the work's keys into the sorted arrival keys gives, for a
-- piece of work of rank r, base_r + k with base_r the arrivals of the ranks
-- before r and k those of r before the work's start: window (group)
-- base_r + k + r of the n_r + 1 windows of each rank.  The arrival with
-- rank-local index k (row base_r + k of the sorted arrivals) closes that
-- window; the windows closed by local indices 1 .. n_r - 1 are the whole steps.
local function step_compute(cs, comp, mask, nranks)
  if #cs == 0 then return nil end
  cs = cs:select{"rank", "arrive"}:sort("rank", "arrive")
  local t0 = math.min(cs.arrive:min(), #comp > 0 and comp.start:min() or math.maxinteger)
  local t1 = math.max(cs.arrive:max(), #comp > 0 and comp.start:max() or math.mininteger)
  local w = t1 - t0 + 1
  if w <= 0 or w > math.maxinteger // (nranks + 1) then
    nsl.fail(string.format("straggler: a time span of %d ns over %d ranks is too wide for the step keys", w, nranks))
  end
  local key = cs.rank * w + (cs.arrive - t0)
  local at = key:searchsorted(comp.rank * w + (comp.start - t0))   -- base_r + k
  local ngroups = #cs + nranks
  local busy = nsl.busy_by_group(comp.start, comp.stop, at + comp.rank, ngroups, mask)
  local k = nsl.cumcount(cs:group_by("rank"):ids())            -- rank-local index of each arrival
  local last = cs:group_by("rank"):agg{"n=count"}
  local n_of = cs:join(last, {"rank"}, {"n"}).n
  local whole = k:ge(1) & k:le(n_of - 1)
  local steps = nsl.table{{"rank", cs.rank}, {"step", k}, {"compute", busy:gather(nsl.range(#cs) + cs.rank)}}
  steps = steps:filter(whole)
  if #steps == 0 then return nil end
  return steps
end

--- The analysis (see the header).  coll: rank, instance, type, start, stop;
-- work: rank, start, stop, of which the rows where compute_mask is true (all
-- when it is nil) are compute; nranks: ranks are 0 .. nranks-1.  Returns
-- {nranks, ref, ninst, offsets, shared, coll, late, steps, instances}:
--   coll       the matched collectives: rank, instance, type, start, stop,
--              arrive, leave (aligned), wait (for the last rank), who (the
--              last rank), last (1/0), index (of the instance in time order,
--              1-based), after_first (arrival after the first rank's)
--   late       rank, instance, late (nil without matched instances)
--   steps      rank, step, compute (nil without a whole step)
--   instances  one row per matched instance in time order: index, instance,
--              type, ranks, first (aligned arrival of the first rank), skew
--              (last - first arrival), who (the last rank), waited (sum of waits)
function M.analyse(coll, work, nranks, compute_mask)
  local res = {nranks = nranks}
  local nr = coll:group_by("instance"):agg{"nr=count_distinct(rank)"}
  local all = coll
  coll = coll:join(nr, {"instance"}, {"nr"})
  coll = coll:filter(coll.nr:ge(2)):select{"rank", "instance", "type", "start", "stop"}
  res.ninst = #coll:group_by("instance")
  -- 2. clocks, against the first rank with matched collectives
  local ref = #coll > 0 and coll.rank:min() or 0
  res.ref = ref
  res.offsets, res.shared = M.offsets(coll, nranks, ref)
  local off = nsl.column(res.offsets)
  local offcol = off:gather(coll.rank)
  coll = coll:with("arrive", coll.start - offcol, "leave", coll.stop - offcol)
  -- 3. arrivals, waits, lateness
  local last, who = last_arrivals(coll)
  coll = coll:with("wait", last - coll.arrive, "who", who, "last", who:eq(coll.rank):cast("i64"))
  local ig = coll:group_by("instance")
  local inst = ig:agg{"type=first(type)", "ranks=count", "first=min(arrive)", "hi=max(arrive)", "who=first(who)",
                      "waited=sum(wait)"}
  inst = inst:sort("first", "instance")
  inst = inst:with("index", nsl.range(#inst) + 1, "skew", inst.hi - inst.first)
  res.instances = inst:select{"index", "instance", "type", "ranks", "first", "skew", "who", "waited"}
  local ji = coll:join(inst, {"instance"}, {"index", "first"}, "i_")
  coll = coll:with("index", ji.i_index, "after_first", coll.arrive - ji.i_first)
  res.late = lateness(coll)
  res.coll = coll
  -- 4. compute per step; one rank alone: its own collectives
  local cs = nranks == 1 and all or coll
  res.steps = step_compute(cs:with("arrive", cs.start), work, compute_mask, nranks)
  return res
end

--- Per-rank results of an analysis `res` (M.analyse): arrays indexed by
-- rank + 1 of offset, shared (instances shared with the reference), matched,
-- last, share (last / matched), delay (median lateness, ns), caused (waits
-- of the others in the instances it arrived last at), suffered (its own
-- waits), compute (median step compute), steps (whole steps), ratio (compute
-- / median over ranks of it), straggler (boolean).  opts: threshold,
-- last_share.
function M.ranks(res, opts)
  local n = res.nranks
  local rows = {offset = res.offsets, shared = res.shared, matched = {}, last = {}, share = {}, delay = {},
                caused = {}, suffered = {}, compute = {}, steps = {}, ratio = {}, straggler = {}}
  local function spread(t, col, key, default)
    local v = {}
    for r = 1, n do v[r] = default end
    if t then
      for i = 1, #t do v[t[key][i] + 1] = t[col][i] end
    end
    return v
  end
  local coll = res.coll
  local pr = coll:group_by("rank"):agg{"matched=count", "last=sum(last)", "suffered=sum(wait)"}
  local caused = coll:filter(coll.last:eq(1)):join(res.instances, {"instance"}, {"waited"})
  local cz = caused:group_by("rank"):agg{"caused=sum(waited)"}
  local lt = res.late and res.late:group_by("rank"):agg{"delay=median(late)"}
  local sc = res.steps and res.steps:group_by("rank"):agg{"med=median(compute)", "n=count"}
  rows.matched = spread(pr, "matched", "rank", 0)
  rows.last = spread(pr, "last", "rank", 0)
  rows.suffered = spread(pr, "suffered", "rank", 0)
  rows.caused = spread(cz, "caused", "rank", 0)
  rows.delay = spread(lt, "delay", "rank", 0.0)
  rows.compute = spread(sc, "med", "rank", 0.0)
  rows.steps = spread(sc, "n", "rank", 0)
  local med_all = sc and sc.med:median() or nil
  local min_share = math.max(opts.last_share, 1.5 / n)
  for r = 1, n do
    rows.share[r] = rows.matched[r] > 0 and rows.last[r] / rows.matched[r] or 0.0
    rows.ratio[r] = (med_all and med_all > 0) and rows.compute[r] / med_all or 1.0
    rows.straggler[r] = n >= 2 and rows.share[r] >= min_share and rows.ratio[r] >= opts.threshold
  end
  return rows
end

-- ---- figures --------------------------------------------------------------

--- The figures of an analysis, from its long-form tables as printed:
-- step_compute (rank label, step, "compute (ns)") and arrivals (collective,
-- rank label, "after first (ns)"); either may be nil.  One line per rank, in
-- the order of labels; compute on a log scale (warm-up steps take orders of
-- magnitude longer), arrivals on a linear one (the first rank's are 0).  Returns a list of {name =, series = {{label =, x =,
-- y =}, ...} (columns), opts = plot options}: the data M.draw plots.
function M.figures(step_compute, arrivals, labels)
  local figs = {}
  local function series(t, xcol, ycol)
    local list = {}
    for _, label in ipairs(labels) do
      local mine = t:filter(t.rank:eq(label))
      if #mine > 0 then list[#list + 1] = {label = label, x = mine[xcol], y = mine[ycol]} end
    end
    return list
  end
  if step_compute and #step_compute > 0 then
    figs[#figs + 1] = {name = "straggler_steps", series = series(step_compute, "step", "compute (ns)"),
                       opts = {title = "Compute per step and rank", xlabel = "step (window before each collective)",
                               ylabel = "compute (busy time)", yunit = "ns", ylog = true}}
  end
  if arrivals and #arrivals > 0 then
    figs[#figs + 1] = {name = "straggler_arrivals", series = series(arrivals, "collective", "after first (ns)"),
                       opts = {title = "Arrival at each collective after the first rank (aligned clocks)",
                               xlabel = "collective (time order)", ylabel = "arrival after the first rank",
                               yunit = "ns"}}
  end
  return figs
end

--- A figure of M.figures drawn as "png" or "svg": the canvas and the data
-- of nsl.plot.lines.
function M.draw(fig, format)
  local plot = require("nsl.plot")
  local opts = {series = fig.series, format = format}
  for k, v in pairs(fig.opts) do opts[k] = v end
  return plot.lines(opts)
end

--- Gives every figure to out:figure (NAME.png and NAME.svg under --out, in
-- the bundle with --embed, inline in a notebook); returns the figures, none
-- when no output carries them.
function M.write_figures(out, step_compute, arrivals, labels)
  if not out:carries_figures() then return {} end
  local figs = M.figures(step_compute, arrivals, labels)
  for _, fig in ipairs(figs) do
    out:figure(fig.name, function(format) return M.draw(fig, format) end, {title = fig.opts.title})
  end
  return figs
end

return M
