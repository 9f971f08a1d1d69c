-- straggler -- which ranks (GPUs, by default) hold the others back at the
-- collectives, by how much, and why.
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
-- offsets are the median collective end difference to the reference rank
-- (ranks of one export share its clock, so they share an offset); on
-- aligned clocks the last rank to arrive at a collective is the one the
-- others waited for; a rank's lateness at a collective is its arrival minus
-- the median arrival of the others, its delay the median lateness; its
-- compute per step is the busy time of its compute in the window before
-- each collective.
-- Steady state: the first collectives are warm-up (NCCL set-up, compilation,
-- first iterations) and left out of everything: on nsys-jax traces those of
-- the executions nsys-jax calls warm-up (nsl.jax.steady: the first execution
-- of a program, two when it was compiled); otherwise the windows between
-- consecutive collectives are read as iterations by nsl.iterations.warmup
-- (the first, then each next one slower than 1.2x the median of those after
-- it); `--arg warmup=N` leaves out the first N instead, `warmup=0` keeps all.
-- The step the costs are per: the training step when the trace has steps
-- (nsl.iterations.steps, the step detection every analysis of a trace uses:
-- the median steady step; values step_source = iterations), else the median
-- time between consecutive steady collectives (step_source = collectives),
-- as the text says.
-- Verdict.  A rank is late at a collective when it arrives at least
-- `--arg min_delay` (20 µs) after the median of the others.  It is a
-- straggler when it is late at at least `--arg late_share` (half) of the
-- collectives anyone was late at (twice at least), and the time the others
-- lose waiting for it -- its lateness summed over those collectives, over
-- the steady run's span -- is at least `--arg min_share` (2 %) of the run,
-- whatever its GPU compute: the cost is reported over the run and per step
-- (that share of the step).  Several ranks can be stragglers (each is named).  Why, per
-- straggler, from the windows before the collectives it was late at (from
-- the end of its previous collective to its arrival), as the median excess
-- over the other ranks' median (nsl.straggler.windows) of:
--   collective  the end of its previous collective (straggler.collective:
--               its collective kernels run longer, a slow link or NIC; seen
--               where the clock is shared, i.e. GPUs of one export: across
--               exports a collective that always ends late reads as a clock
--               offset)
--   compute     its GPU's busy time (straggler.compute)
--   idle        its GPU's idle time, split by what ended each gap: work
--               launched during the gap (the GPU waited for the host:
--               straggler.host_idle, with what the launching thread was in
--               meanwhile -- CUDA API call, OS runtime call, NVTX range, as
--               gaps attributes them: nsl.host; straggler.launch when that
--               is a CUDA launch call) or work launched before it (it sat in
--               the queue: straggler.launch); queue when every late window's
--               idle time is more queue than host, host when none is, else
--               the larger median excess names it
-- the largest is the cause.  A rank late at nearly every steady collective
-- (90 %) that is no straggler only because it costs less than min_share is
-- named at info level with its cost and cause (verdict "late every time").
-- No straggler but a skew that costs at least
-- min_share of the run: the straggler rotates (straggler.rotating, info),
-- no single rank is to blame.  Straggler findings are warnings (`--fail-on
-- warning`: exit 3); like every finding they print first, with the window
-- before a typical late collective (where.from/to) and the command that
-- looks inside the cause on the rank's file: gaps (idle, with what the host
-- did), diff against a typical rank (compute), nccl (collective).
-- Figures (out:figure: --out DIR, --embed, notebooks): straggler_steps
-- (compute per step, one line per rank) and straggler_arrivals (each rank's
-- arrival after the first rank at every collective), drawn from the
-- step_compute and arrivals tables.
local nsl = require("nsl")
local core = require("nsl.straggler")
local report = require("nsl.report")
local findings = require("nsl.findings")
local units = require("nsl.util.units")
local iterations = require("nsl.iterations")

local dur = report.duration

return {
  name = "straggler",
  description = "Which ranks hold the others back at the collectives, and why: clock offsets, arrivals, waits, causes",
  args = {
    min_delay = {default = "20us", help = "lateness that counts, at least (ns, or with a unit: 20us, 1ms)"},
    min_share = {default = 0.02, help = "time the others lose waiting for a straggler (or a rotating one), at least this share of the run"},
    late_share = {default = 0.5, help = "share of the collectives a rank must be late at to be a straggler"},
    warmup = {default = -1, help = "collective instances left out as warm-up (-1: detected; 0: keep all)"},
    rank_by = {default = "device", choices = {"device", "process", "report"}, help = "what a rank is: device (report and GPU), process (report and pid), or report (NCCL only)"},
    source = {default = "auto", choices = {"auto", "nccl", "jax"}, help = "collectives from NCCL kernels (nccl), nsys-jax communication thunks (jax), or auto"},
    programs = {default = "structure", choices = {"structure", "fingerprint"}, help = "nsys-jax: match programs by 'structure' (same name and HLO) or 'fingerprint' (nsys-jax's)"},
    steps = {default = 20, help = "rows printed of the per-step and per-collective tables (all go to files)"},
  },
  example = "nsl run straggler rank0.sqlite rank1.sqlite ... --fail-on warning --out straggler/",
  -- parts: a distributed run's gathered collectives (the step below); matched: {src, res} of
  -- nsl.straggler.match on this trace with these args, made once by diagnose for its ledger and this;
  -- matched.steps: nsl.iterations.steps(trace) as diagnose found it (false: no steps), detected once;
  -- matched.attribute: diagnose's attribution of the late windows' gaps (nsl.straggler.named's attribute)
  run = function(trace, args, out, parts, matched)
    local min_delay = units.duration_arg(args, "min_delay")
    if type(args.min_share) ~= "number" or args.min_share < 0 or args.min_share >= 1 then
      nsl.fail("straggler: --arg min_share must be a number from 0 to 1", "usage")
    end
    if type(args.late_share) ~= "number" or args.late_share <= 0 or args.late_share > 1 then
      nsl.fail("straggler: --arg late_share must be a number above 0, at most 1", "usage")
    end
    if math.type(args.warmup) ~= "integer" or args.warmup < -1 then
      nsl.fail("straggler: --arg warmup must be -1 (detect) or a number of collectives", "usage")
    end
    -- the matching: diagnose's, when it ran it for every check (matched), else its own (the columns its windows
    -- are attributed with loaded first: nsl.host.preload)
    if not (matched or parts) then require("nsl.host").preload(trace) end
    local src, res = table.unpack(matched or {core.match(trace, args, parts)})
    local labels, nranks = src.labels, #src.labels
    if not res then
      out:text(string.format("No straggler analysis: %d rank(s) and no %s.", nranks, src.what))
      return
    end
    -- the step the costs are per: the training step when the trace has steps (nsl.iterations.steps, the one
    -- step detection of a trace: the median steady step), else the interval between steady collectives
    -- (a distributed run: the steps its processes found, unless they need the whole trace)
    local st = false
    if matched and matched.steps ~= nil then st = matched.steps or nil
    elseif parts then st = iterations.reduced_steps(parts) end
    if st == false then st = iterations.steps(trace) end
    local train = st and st.step_ns or nil
    src.step_what = train and "training step" or "interval between collectives"
    local rows = core.ranks(res, {min_delay = min_delay, min_share = args.min_share, late_share = args.late_share,
                                  step_ns = train})
    local ncoll = core.collectives_per_rank(src)
    local thr = rows.threshold
    out:value("warmup_collectives", res.warmup)
    out:value("step_ns", rows.step)
    out:value("step_source", train and "iterations" or "collectives")
    out:value("collective_interval_ns", res.step_ns)

    -- the verdict: findings first, then a sentence
    local named, names = core.named(trace, src, res, rows, args.min_share, matched and matched.attribute)
    for _, f in ipairs(named) do findings.add(out, f.opts, f.fmt, table.unpack(f.args, 1, f.args.n)) end
    local said = core.summary(src, res, rows, names, ncoll, {training = st, min_share = args.min_share,
                                                           late_share = args.late_share})
    for _, f in ipairs(said.findings) do findings.add(out, f.opts, f.fmt, table.unpack(f.args, 1, f.args.n)) end
    for _, line in ipairs(said.text) do out:text(line) end
    local verdict = core.verdicts(rows, nranks)
    for r = 1, nranks do
      out:value("offset_ns." .. labels[r], rows.offset[r])
      out:value("delay_ns." .. labels[r], rows.delay[r])
    end
    if nranks > 1 then
      out:table("causes", core.causes_table(labels, rows, verdict), {title = string.format("Per rank: the " ..
        "collectives it was late at (by %s or more; %d of %d had a rank that late) and where its lateness comes " ..
        "from: the median excess over the others' median in the window before each (idle = host + queue)", dur(thr),
        rows.skewed, res.ninst)})
    end
    out:table("ranks", core.ranks_table(labels, rows, ncoll, verdict),
      {title = "Per rank: clock offset (vs " .. labels[res.ref + 1] .. "), arrival order, waits, compute per step",
       col_decimals = {["vs median rank"] = 3}, same_unit = {{"wait caused (ns)", "wait suffered (ns)"}}})

    -- per step: the spread of compute over ranks, and the long form behind the figure
    local per_step, step_compute = core.step_tables(res, labels)
    if per_step then
      out:table("steps", per_step, {title = "Per step (window before each collective): compute by rank",
                                    limit = args.steps, col_decimals = {["max/median"] = 3}})
      out:table("step_compute", step_compute, {title = "Compute per step and rank (figure straggler_steps)",
                                               limit = args.steps})
    end

    -- per collective: arrival skew, who came last, and each rank's arrival
    local collectives, arrivals, skew = core.collective_tables(res, labels)
    if collectives then
      out:table("collectives", collectives,
        {title = "Per collective (aligned clocks, time order): arrival skew (last - first), who came last",
         limit = args.steps})
      out:value("median_arrival_skew_ns", skew)
      out:table("arrivals", arrivals, {title = "Arrival of each rank after the first, per collective " ..
                                                "(figure straggler_arrivals)", limit = args.steps})
    end
    core.write_figures(out, step_compute, arrivals, labels)
  end,
  -- distributed (nsl.distributed): each process reduces its kernels to one
  -- row per collective with the window before it (nsl.straggler.reduce) and
  -- detects the steps of its reports with the others (nsl.iterations.
  -- reduce_steps); rank 0 matches the collectives (and reads the host
  -- activity of a straggler's late windows from that rank's process alone)
  distributed = {step = function(trace, args) return core.reduce(trace, args) end,
                 collective = function(trace) return iterations.reduce_steps(trace) end},
}
