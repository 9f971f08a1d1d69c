-- straggler -- which rank (a GPU of a report, by default) holds the others
-- back at the collectives, and by how much.
--
-- Method.
--  1. Ranks: (report, device) by default (`--arg rank_by=report|process|device`).
--  2. Matching: NCCL kernels (nsl.nccl) of each rank, in time order; a rank's
--     streams that run NCCL are numbered by their first collective; the k-th
--     collective of a type on a rank's i-th NCCL stream matches the k-th of the
--     same type on the i-th stream of every other rank.  Instances seen on
--     fewer than two ranks are dropped (partial captures work: only the ranks
--     present are compared).
--  3. Clocks: collectives finish together, so a rank's clock offset is the
--     median, over matched instances, of its collective end minus the
--     reference rank's (the first rank); times are aligned by subtracting it.
--  4. Arrival is a collective's aligned start.  Per instance the last rank to
--     arrive is the one the others waited for; each other rank waited the
--     difference.  A rank's lateness in an instance is its arrival minus the
--     median arrival of the other ranks; its delay is the median lateness.
--  5. Compute per step: a rank's step k is the window before its k-th
--     collective (all NCCL streams, time order); its compute is the busy time
--     (union) of its non-NCCL kernels in the window.  Compared with the median
--     rank's median step compute.
--  6. A straggler is consistently last (last in at least `--arg last_share`
--     of the instances, and more often than 1.5/ranks) and its median step
--     compute is above `--arg threshold` x the median rank's.  Each is a
--     finding (warning); `--fail-on warning` makes CI fail on it.
local nsl = require("nsl")
local nccl = require("nsl.nccl")
local report = require("nsl.report")
local findings = require("nsl.findings")

--- 0-based ordinal of each row within its group of `keys` (rows of t in the
-- order the ordinal should follow).
local function ordinal(t, ...)
  local pos = nsl.range(#t)
  local g = t:with("_pos", pos):group_by(...)
  return pos - g:agg{"f=min(_pos)"}.f:gather(g:ids())
end

--- Median over the instances a rank shares with the reference rank of (its
-- value - the reference's); returns a column indexed by rank id.
local function offsets(c, nranks, ref)
  local ref_rows = c:filter(c.rank:eq(ref)):select{"instance", "stop"}
  local j = c:join(ref_rows, {"instance"}, {"stop"}, "ref_")
  local diff = j.stop - j.ref_stop
  local g = nsl.table{{"rank", c.rank}, {"diff", diff}}:group_by("rank"):agg{"off=median(diff)"}
  local off = {}
  for r = 0, nranks - 1 do off[r + 1] = 0 end
  for i = 1, #g do off[g.rank[i] + 1] = math.floor((g.off[i] or 0) + 0.5) end
  return off
end

return {
  name = "straggler",
  description = "Ranks whose compute delays the collectives of the others: clock offsets, arrival order, waits",
  args = {
    threshold = {default = 1.05, help = "median step compute of a rank / the median rank's, above which a consistently last rank is a straggler"},
    last_share = {default = 0.5, help = "share of the collectives a rank must arrive last at to count as consistently last"},
    rank_by = {default = "device", help = "what a rank is: device (report and GPU), process (report and pid), or report"},
    steps = {default = 20, help = "rows of the per-step table printed (all go to files)"},
  },
  example = "nsl run straggler rank0.sqlite rank1.sqlite ... --fail-on warning",
  run = function(trace, args, out)
    local k = trace.kernels
    k:load{"report", "device", "pid", "stream", "start", "stop", "name"}
    local keys = ({device = {"report", "device"}, process = {"report", "pid"}, report = {"report"}})[args.rank_by]
    if not keys then nsl.fail("straggler: --arg rank_by must be device, process or report") end
    local rg = k:group_by(table.unpack(keys))
    -- ranks numbered in key order (report, then device or pid), not in order of appearance
    local order = rg:keys():with("gid", nsl.range(#rg)):sort(table.unpack(keys))
    local rkeys = order
    local nranks = #rkeys
    local rank_of_group = nsl.range(nranks):gather(order.gid:argsort())   -- inverse permutation
    local rnames = trace.reports.name
    local label = {}
    for r = 1, nranks do
      local name = rnames[rkeys.report[r] + 1]
      if args.rank_by == "device" then name = name .. ":gpu" .. rkeys.device[r]
      elseif args.rank_by == "process" then name = name .. ":pid" .. rkeys.pid[r] end
      label[r] = name
    end
    local kr = k:select{"start", "stop", "stream", "name"}:with("rank", rank_of_group:gather(rg:ids()))
    local is_coll = nccl.mask(kr.name)
    local coll = kr:filter(is_coll)
    if nranks < 2 or #coll == 0 then
      out:text(string.format("No straggler analysis: %d rank(s) and %d NCCL kernels; it needs collectives on two ranks or more.",
        nranks, #coll))
      return
    end
    -- 2. matching
    coll = coll:with("type", nccl.annotate(coll.name).collective)
    local streams = coll:group_by("rank", "stream"):agg{"first=min(start)"}:sort("rank", "first")
    streams = streams:with("sidx", ordinal(streams, "rank"))
    coll = coll:join(streams, {"rank", "stream"}, {"sidx"})
    coll = coll:sort("rank", "sidx", "type", "start")
    coll = coll:with("seq", ordinal(coll, "rank", "sidx", "type"))
    local inst = coll:group_by("sidx", "type", "seq")
    coll = coll:with("instance", inst:ids())
    local per_inst = coll:group_by("instance"):agg{"nr=count_distinct(rank)"}
    local shared = per_inst:filter(per_inst.nr:ge(2))
    coll = coll:filter(coll.instance:isin(shared.instance:totable()))
    if #coll == 0 then
      out:text("No collective was matched on two ranks or more.")
      return
    end
    -- 3. clock offsets against the first rank
    local off = offsets(coll, nranks, 0)
    local offcol = nsl.column(off):gather(coll.rank)
    coll = coll:with("arrive", coll.start - offcol, "leave", coll.stop - offcol)
    -- 4. arrivals
    local by_inst = coll:group_by("instance")
    local ia = by_inst:agg{"last=max(arrive)", "first=min(arrive)", "n=count"}
    local ids = by_inst:ids()
    local last = ia.last:gather(ids)
    local wait = last - coll.arrive
    local is_last = coll.arrive:eq(last)
    -- ties: the first rank in order counts as last
    local tie_rank = nsl.table{{"instance", coll.instance}, {"rank", coll.rank}, {"l", is_last:cast("i64")}}
    local lastrank = tie_rank:filter(tie_rank.l:eq(1)):group_by("instance"):agg{"who=min(rank)"}
    local who = coll:join(lastrank, {"instance"}, {"who"}).who
    is_last = who:eq(coll.rank)
    coll = coll:with("wait", wait, "last", is_last:cast("i64"))
    -- lateness: arrival minus the median arrival of the other ranks
    local late_parts = {}
    for r = 0, nranks - 1 do
      local mine = coll:filter(coll.rank:eq(r))
      local others = coll:filter(coll.rank:ne(r)):group_by("instance"):agg{"med=median(arrive)"}
      local j = mine:join(others, {"instance"}, {"med"})
      late_parts[#late_parts + 1] = nsl.table{{"rank", j.rank}, {"instance", j.instance}, {"late", j.arrive - j.med}}
    end
    local late_cols = {}
    for _, name in ipairs{"rank", "instance", "late"} do
      local cols = {}
      for i, t in ipairs(late_parts) do cols[i] = t[name] end
      late_cols[#late_cols + 1] = {name, nsl.concat(table.unpack(cols))}
    end
    local late = nsl.table(late_cols)
    -- who waited for whom: a last rank caused the others' waits
    local caused = coll:group_by("instance"):agg{"w=sum(wait)"}
    local lastrows = coll:filter(coll.last:eq(1)):join(caused, {"instance"}, {"w"})
    -- 5. compute per step
    local comp = kr:filter(~is_coll)
    local step_parts = {}
    for r = 0, nranks - 1 do
      local cs = coll:filter(coll.rank:eq(r)):sort("arrive")
      local mine = comp:filter(comp.rank:eq(r))
      if #cs > 0 and #mine > 0 then
        local kstart, kstop = mine.start - off[r + 1], mine.stop - off[r + 1]
        local step = cs.arrive:searchsorted(kstart)            -- kernels before collective k -> step k
        local busy = nsl.busy_by_group(kstart, kstop, step, #cs + 1)
        -- steps 1..#cs-1 (0-based) are whole windows between two collectives
        local ks = nsl.range(#cs + 1)
        local st = nsl.table{{"rank", nsl.rep(r, #cs + 1)}, {"step", ks}, {"compute", busy}}
        step_parts[#step_parts + 1] = st:filter(ks:ge(1) & ks:le(#cs - 1))
      end
    end
    local steps
    if #step_parts > 0 then
      local cols = {}
      for _, name in ipairs{"rank", "step", "compute"} do
        local parts = {}
        for i, t in ipairs(step_parts) do parts[i] = t[name] end
        cols[#cols + 1] = {name, nsl.concat(table.unpack(parts))}
      end
      steps = nsl.table(cols)
    end
    -- per-rank table
    local ninst = #shared
    local pr = coll:group_by("rank"):agg{"matched=count", "last=sum(last)", "suffered=sum(wait)"}
    local lt = late:group_by("rank"):agg{"delay=median(late)"}
    local cz = lastrows:group_by("rank"):agg{"caused=sum(w)"}
    local sc = steps and steps:group_by("rank"):agg{"med=median(compute)", "n=count"}
    local function lookup(t, col, r)
      if not t then return nil end
      for i = 1, #t do if t.rank[i] == r then return t[col][i] end end
      return nil
    end
    local med_all = sc and sc.med:median() or nil
    local rows = {rank = {}, offset = {}, matched = {}, last = {}, share = {}, delay = {}, caused = {},
                  suffered = {}, compute = {}, ratio = {}, verdict = {}}
    local min_share = math.max(args.last_share, 1.5 / nranks)
    for r = 0, nranks - 1 do
      local i = r + 1
      rows.rank[i] = label[i]
      rows.offset[i] = off[i]
      rows.matched[i] = lookup(pr, "matched", r) or 0
      rows.last[i] = lookup(pr, "last", r) or 0
      rows.share[i] = rows.matched[i] > 0 and rows.last[i] / rows.matched[i] or 0.0
      rows.delay[i] = lookup(lt, "delay", r) or 0.0
      rows.caused[i] = lookup(cz, "caused", r) or 0
      rows.suffered[i] = lookup(pr, "suffered", r) or 0
      rows.compute[i] = lookup(sc, "med", r) or 0.0
      rows.ratio[i] = (med_all and med_all > 0) and rows.compute[i] / med_all or 1.0
      local straggler = rows.share[i] >= min_share and rows.ratio[i] >= args.threshold
      rows.verdict[i] = straggler and "STRAGGLER" or ""
      out:value("offset_ns." .. label[i], off[i])
      out:value("delay_ns." .. label[i], rows.delay[i])
      if straggler then
        findings.add(out, {severity = "warning", check = "straggler", rank = label[i], delay_ns = rows.delay[i]},
          "%s is a straggler: last at %d of %d collectives (%.0f%%), arriving %s after the others (median), " ..
          "compute per step %.2fx the median rank's; the others waited %s in all for it",
          label[i], rows.last[i], rows.matched[i], 100 * rows.share[i], report.duration(rows.delay[i]),
          rows.ratio[i], report.duration(rows.caused[i]))
      end
    end
    out:text(string.format("%d ranks, %d collective instances matched on two ranks or more (ranks by %s).",
      nranks, ninst, args.rank_by))
    out:table("ranks", nsl.table{
      {"rank", rows.rank}, {"clock offset (ns)", rows.offset}, {"collectives", rows.matched},
      {"last", rows.last}, {"last (%)", nsl.column(rows.share) * 100}, {"delay (ns)", rows.delay},
      {"wait caused (ns)", rows.caused}, {"wait suffered (ns)", rows.suffered},
      {"step compute med (ns)", rows.compute}, {"vs median rank", rows.ratio}, {"verdict", rows.verdict}},
      {title = "Per rank: clock offset, arrival order, waits, compute per step", col_decimals = {["vs median rank"] = 3}})
    -- per-step table
    if steps then
      local byk = steps:group_by("step")
      local s = byk:agg{"ranks=count", "median=median(compute)", "max=max(compute)", "min=min(compute)"}
      local mx = s.max:gather(byk:ids())
      local slow = steps:filter(steps.compute:eq(mx)):group_by("step"):agg{"who=min(rank)"}
      s = s:join(slow, {"step"}, {"who"})
      local who_label = s.who:map(function(r) return label[r + 1] end)
      out:table("steps", nsl.table{
        {"step", s.step}, {"ranks", s.ranks}, {"compute median (ns)", s.median}, {"compute min (ns)", s.min},
        {"compute max (ns)", s.max}, {"slowest rank", who_label},
        {"max/median", s.max / s.median}}:sort("step"),
        {title = "Per step (window before each collective of the reference rank's order): compute by rank",
         limit = args.steps, col_decimals = {["max/median"] = 3}})
      local skew = coll:group_by("instance"):agg{"hi=max(arrive)", "lo=min(arrive)"}
      out:value("median_arrival_skew_ns", (skew.hi - skew.lo):median())
    end
  end,
}
