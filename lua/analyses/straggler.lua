-- straggler -- which rank (a GPU, by default) holds the others back at the
-- collectives, and by how much.
--
-- Sources.  The collectives are NCCL kernels in Nsight Systems exports, or the
-- communication thunks of nsys-jax archives or of exports (bundles) with XLA's
-- NVTX ranges and dumps (`--arg source=auto|nccl|jax`; auto takes the thunks
-- of a trace without kernels).
--  * NCCL: ranks are (report, device) by default (`--arg rank_by=report|
--    process|device`); a rank's streams that run NCCL are numbered by their
--    first collective, and the k-th collective of a type on a rank's i-th NCCL
--    stream matches the k-th of that type on the i-th stream of every other
--    rank (nsl.nccl.instances).  Compute is the other kernels.
--  * nsys-jax: ranks are the devices; a collective is a communication thunk,
--    matched across devices by program execution and thunk name
--    (nsl.jax.collective_instances, nsys-jax's own matching for its clock
--    alignment); compute is the other thunks (projected onto the GPU).
--    Programs are grouped by HLO structure (`--arg programs`), so a process
--    whose autotuning changed a fingerprint still matches the others.
-- Method (nsl.straggler): instances seen on one rank only are dropped; clock
-- offsets are the median collective end difference to the reference rank;
-- on aligned clocks the last rank to arrive at a collective is the one the
-- others waited for; a rank's delay is its median lateness behind the median
-- arrival of the others; its compute per step is the busy time of its compute
-- in the window before each collective.  A rank that is consistently last (at
-- least `--arg last_share` of the collectives) with a median step compute at
-- least `--arg threshold` x the median rank's is a straggler: a finding
-- (warning) that `--fail-on warning` turns into exit code 3.
-- Figures (out:figure: --out DIR, --embed, notebooks): straggler_steps
-- (compute per step, one line per rank) and straggler_arrivals (each rank's
-- arrival after the first rank at every collective), drawn from the
-- step_compute and arrivals tables.
local nsl = require("nsl")
local nccl = require("nsl.nccl")
local jax = require("nsl.jax")
local core = require("nsl.straggler")
local report = require("nsl.report")
local findings = require("nsl.findings")

--- Ranks numbered 0.. in the order of the key columns of t: returns the
-- rank of every row of t and the table of keys (one row per rank).
local function number_ranks(t, keys)
  local rg = t:group_by(table.unpack(keys))
  local order = rg:keys():with("gid", nsl.range(#rg)):sort(table.unpack(keys))
  local rank_of_group = nsl.range(#order):gather(order.gid:argsort())   -- inverse permutation
  return rank_of_group:gather(rg:ids()), order
end

--- Collectives and compute of the NCCL kernels of an export.
local function from_kernels(trace, args)
  local keys = ({device = {"report", "device"}, process = {"report", "pid"}, report = {"report"}})[args.rank_by]
  if not keys then nsl.fail("straggler: --arg rank_by must be device, process or report") end
  local k = trace.kernels
  local cols = {"report", "stream", "start", "stop", "name"}
  if keys[2] then cols[#cols + 1] = keys[2] end
  k:load(cols)
  local rank, rk = number_ranks(k, keys)
  local names = trace.reports.name
  local labels = {}
  for r = 1, #rk do
    local name = names[rk.report[r] + 1]
    if args.rank_by == "device" then name = name .. ":gpu" .. rk.device[r]
    elseif args.rank_by == "process" then name = name .. ":pid" .. rk.pid[r] end
    labels[r] = name
  end
  local kr = nsl.table{{"rank", rank}, {"stream", k.stream}, {"start", k.start}, {"stop", k.stop}, {"name", k.name}}
  local is_coll = nccl.mask(kr.name)
  local coll = kr:filter(is_coll)
  coll = nccl.instances(coll:with("type", nccl.annotate(coll.name).collective))
  return {coll = coll:select{"rank", "instance", "type", "start", "stop"}, work = kr, compute = ~is_coll,
          labels = labels, what = "NCCL kernels", by = args.rank_by}
end

--- Collectives and compute of the thunks of an nsys-jax trace.
local function from_thunks(trace, args, gpu_ranges)
  if args.rank_by ~= "device" then nsl.fail("straggler: on nsys-jax traces the ranks are the devices (rank_by=device)") end
  if args.programs ~= "structure" and args.programs ~= "fingerprint" then
    nsl.fail("straggler: --arg programs must be structure or fingerprint")
  end
  local d = jax.load(trace, {programs = args.programs, compile = false, gpu_ranges = gpu_ranges})
  local th = d.thunk
  local rank, rk = number_ranks(th, {"Device", "report"})
  local names = trace.reports.name
  local labels = {}
  for r = 1, #rk do labels[r] = names[rk.report[r] + 1] .. ":gpu" .. rk.Device[r] end
  local t = nsl.table{{"rank", rank}, {"start", th.start}, {"stop", th.stop}}
  local comm = d.communication
  local crank = comm:join(nsl.table{{"Device", rk.Device}, {"report", rk.report}, {"rank", nsl.range(#rk)}},
                          {"Device", "report"}, {"rank"}).rank
  local coll = nsl.table{{"rank", crank}, {"instance", (jax.collective_instances(comm))}, {"type", comm.Collective},
                         {"start", comm.start}, {"stop", comm.stop}}
  return {coll = coll, work = t, compute = ~th.Communication, labels = labels,
          what = "nsys-jax communication thunks", by = "device"}
end

--- The source of the collectives: args.source, or auto.
local function source_of(trace, args)
  local s = args.source
  if s == "auto" then s = (#trace.kernels == 0 and #trace.gpu_ranges > 0) and "jax" or "nccl" end
  if s == "nccl" then return from_kernels(trace, args) end
  if s == "jax" then
    local g = jax.gpu_ranges(trace)
    if #g == 0 or g.text:match("XlaModule:#"):count() == 0 then
      nsl.fail("straggler: --arg source=jax needs an nsys-jax trace, or an export (bundle) with XLA's NVTX ranges")
    end
    return from_thunks(trace, args, g)
  end
  nsl.fail("straggler: --arg source must be auto, nccl or jax")
end

--- A string column of rank labels for a column of 0-based ranks.
local function label_col(ranks, labels)
  return ranks:map(function(r) return labels[r + 1] end)
end

return {
  name = "straggler",
  description = "Ranks whose compute delays the collectives of the others: clock offsets, arrival order, waits",
  args = {
    threshold = {default = 1.05, help = "median step compute of a rank / the median rank's, above which a consistently last rank is a straggler"},
    last_share = {default = 0.5, help = "share of the collectives a rank must arrive last at to count as consistently last"},
    rank_by = {default = "device", help = "what a rank is: device (report and GPU), process (report and pid), or report (NCCL only)"},
    source = {default = "auto", help = "collectives from NCCL kernels (nccl), nsys-jax communication thunks (jax), or auto"},
    programs = {default = "structure", help = "nsys-jax: match programs by 'structure' (same name and HLO) or 'fingerprint' (nsys-jax's)"},
    steps = {default = 20, help = "rows printed of the per-step and per-collective tables (all go to files)"},
  },
  example = "nsl run straggler rank0.sqlite rank1.sqlite ... --fail-on warning --out straggler/",
  run = function(trace, args, out)
    local src = source_of(trace, args)
    local labels, nranks = src.labels, #src.labels
    if nranks == 0 or #src.coll == 0 then
      out:text(string.format("No straggler analysis: %d rank(s) and no %s.", nranks, src.what))
      return
    end
    local res = core.analyse(src.coll, src.work, nranks, src.compute)
    local rows = core.ranks(res, args)
    local all = src.coll:group_by("rank"):agg{"n=count"}
    local ncoll = {}
    for r = 1, nranks do ncoll[r] = 0 end
    for i = 1, #all do ncoll[all.rank[i] + 1] = all.n[i] end

    local ref = labels[res.ref + 1]
    if nranks == 1 then
      out:text(string.format("1 rank (%s) with %d %s: arrivals need two ranks or more; compute per step only.",
        labels[1], ncoll[1], src.what))
    else
      out:text(string.format("%d ranks (by %s), %d collective instances of %s matched on two ranks or more; " ..
        "clocks aligned on %s.", nranks, src.by, res.ninst, src.what, ref))
    end
    local unaligned = {}
    for r = 1, nranks do
      if nranks > 1 and rows.shared[r] == 0 and r ~= res.ref + 1 then unaligned[#unaligned + 1] = labels[r] end
    end
    if #unaligned > 0 then
      out:text("No collective shared with " .. ref .. " (clock offset left at 0): " .. table.concat(unaligned, ", "))
    end
    local verdict = {}
    for r = 1, nranks do
      verdict[r] = rows.straggler[r] and "STRAGGLER" or ""
      out:value("offset_ns." .. labels[r], rows.offset[r])
      out:value("delay_ns." .. labels[r], rows.delay[r])
      if rows.straggler[r] then
        findings.add(out, {severity = "warning", check = "straggler", rank = labels[r], delay_ns = rows.delay[r]},
          "%s is a straggler: last at %d of %d collectives (%.0f%%), arriving %s after the others (median), " ..
          "compute per step %.2fx the median rank's; the others waited %s in all for it",
          labels[r], rows.last[r], rows.matched[r], 100 * rows.share[r], report.duration(rows.delay[r]),
          rows.ratio[r], report.duration(rows.caused[r]))
      end
    end
    out:table("ranks", nsl.table{
      {"rank", labels}, {"clock offset (ns)", rows.offset}, {"collectives", ncoll}, {"matched", rows.matched},
      {"last", rows.last}, {"last (%)", nsl.column(rows.share) * 100}, {"delay (ns)", rows.delay},
      {"wait caused (ns)", rows.caused}, {"wait suffered (ns)", rows.suffered}, {"steps", rows.steps},
      {"step compute med (ns)", rows.compute}, {"vs median rank", rows.ratio}, {"verdict", verdict}},
      {title = "Per rank: clock offset (vs " .. ref .. "), arrival order, waits, compute per step",
       col_decimals = {["vs median rank"] = 3}})

    -- per step: the spread of compute over ranks, and the long form behind the figure
    local steps = res.steps
    if steps then
      local byk = steps:group_by("step")
      local s = byk:agg{"ranks=count", "median=median(compute)", "max=max(compute)", "min=min(compute)"}
      local mx = s.max:gather(byk:ids())
      local slow = steps:filter(steps.compute:eq(mx)):group_by("step"):agg{"who=min(rank)"}
      s = s:join(slow, {"step"}, {"who"})
      out:table("steps", nsl.table{
        {"step", s.step}, {"ranks", s.ranks}, {"compute median (ns)", s.median}, {"compute min (ns)", s.min},
        {"compute max (ns)", s.max}, {"slowest rank", label_col(s.who, labels)},
        {"max/median", s.max / s.median}}:sort("step"),
        {title = "Per step (window before each collective): compute by rank", limit = args.steps,
         col_decimals = {["max/median"] = 3}})
      steps = steps:sort("rank", "step")
      steps = nsl.table{{"rank", label_col(steps.rank, labels)}, {"step", steps.step}, {"compute (ns)", steps.compute}}
      out:table("step_compute", steps, {title = "Compute per step and rank (figure straggler_steps)", limit = args.steps})
    end

    -- per collective: arrival skew, who came last, and each rank's arrival
    local arrivals
    if res.ninst > 0 then
      local inst = res.instances
      out:table("collectives", nsl.table{
        {"collective", inst.index}, {"type", inst.type}, {"ranks", inst.ranks}, {"skew (ns)", inst.skew},
        {"last rank", label_col(inst.who, labels)}, {"waited (ns)", inst.waited}},
        {title = "Per collective (aligned clocks, time order): arrival skew (last - first), who came last",
         limit = args.steps})
      out:value("median_arrival_skew_ns", inst.skew:median())
      local c = res.coll:sort("index", "rank")
      arrivals = nsl.table{{"collective", c.index}, {"rank", label_col(c.rank, labels)},
                           {"after first (ns)", c.after_first}, {"wait (ns)", c.wait}}
      out:table("arrivals", arrivals, {title = "Arrival of each rank after the first, per collective " ..
                                                "(figure straggler_arrivals)", limit = args.steps})
    end
    core.write_figures(out, steps, arrivals, labels)
  end,
}
