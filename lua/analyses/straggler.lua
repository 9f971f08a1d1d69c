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
local distributed = require("nsl.distributed")
local core = require("nsl.straggler")
local report = require("nsl.report")
local findings = require("nsl.findings")
local units = require("nsl.util.units")
local host = require("nsl.host")
local iterations = require("nsl.iterations")

--- A string column of rank labels for a column of 0-based ranks.
local function label_col(ranks, labels)
  return ranks:map(function(r) return labels[r + 1] end)
end

--- The command-line words that open report rep alone (its export, or its
-- bundle with --report NAME: nsl.report_args).
local function file_of(trace, rep) return nsl.report_args(trace, rep) end

--- `nsl run diff` of report a (before) against report b (after): the two
-- exports, or their one archive with --arg before=/after= naming the
-- reports (diff's numbers are 1-based); nil when they are neither.
local function diff_command(trace, a, b)
  local x, y = nsl.report_input(trace, a), nsl.report_input(trace, b)
  if not x.name and not y.name then
    return string.format("nsl run diff %s %s", nsl.shell_word(x.file), nsl.shell_word(y.file))
  end
  if not (x.name and y.name and x.file == y.file) then return nil end
  local function spec(at)
    local k = at.name:match("^%d+$") and math.tointeger(tonumber(at.name))
    return k and tostring(k + 1) or at.name
  end
  return string.format("nsl run diff %s --arg before=%s --arg after=%s", nsl.shell_word(x.file),
                       nsl.shell_word(spec(x)), nsl.shell_word(spec(y)))
end

--- The next command for straggler r (1-based) with cause id: the analysis
-- that looks inside what made it late, on its file -- gaps (with what the
-- host did) for an idle GPU, diff against the rank whose lateness is
-- nearest the median's for compute, nccl for its collectives.
local function next_command(trace, src, rows, r, id)
  if not src.files then   -- every rank's file, once for all the stragglers
    src.files = {}
    for q = 1, #src.labels do src.files[q] = file_of(trace, src.where[q].report) end
  end
  local mine = src.files[r]
  if id == "straggler.host_idle" or id == "straggler.launch" then
    local min = math.max(math.floor(rows.late_delay[r] / 2000 + 0.5), 1)
    return string.format("nsl run gaps %s --arg min=%dus --arg scope=device", mine, min)
  elseif id == "straggler.compute" then
    local best, bd
    for q = 1, #src.labels do
      local f = src.files[q]
      if not rows.straggler[q] and f ~= mine and (not bd or math.abs(rows.delay[q]) < bd) then
        best, bd = q, math.abs(rows.delay[q])
      end
    end
    local cmd = best and diff_command(trace, src.where[best].report, src.where[r].report)
    if cmd then return cmd end
    return string.format("nsl run summary %s", mine)
  elseif id == "straggler.collective" then
    return string.format("nsl run nccl %s --arg per_report=true", mine)
  end
  return nil
end

--- What the host was doing while the GPUs of the ranks in late_insts
-- (rank, instance: the collectives each of them was late at) waited for
-- it: per rank and source (CUDA API, OS runtime, NVTX), the text that
-- covered most of that time on the launching thread, and its share.
-- Returns a map from rank (0-based) to {list, tid}: the list of {label,
-- text, share} (largest share first) and the thread; a rank the trace
-- cannot say anything of has no entry.  One attribution for all the ranks
-- (per report in a distributed run, which reads a report's host tables from
-- its own process), so it costs the host tables once, not once per rank.
local function host_activities(trace, res, late_insts)
  local acts = {}
  local hp = res.host
  if not hp or #late_insts == 0 then return acts end
  hp = hp:join(late_insts:with("mine", nsl.rep(1, #late_insts)), {"rank", "instance"}, {"mine"})
  hp = hp:filter(~hp.mine:isnull())
  if #hp == 0 then return acts end
  local d = nsl.table{{"rank", hp.rank}, {"report", hp.report}, {"pid", hp.pid}, {"corr", hp.corr},
                      {"start", hp.start}, {"stop", hp.stop}, {"dur", hp.stop - hp.start}}
  local function attribute(tr, dd)
    dd = dd:with("launch_tid", host.launcher(tr, dd))
    local sources = host.sources(tr)
    dd = host.attribute(dd, sources, true)
    local total = dd:group_by("rank"):agg{"total=sum(dur)"}
    local tot = {}
    for i = 1, #total do tot[total.rank[i]] = total.total[i] end
    for _, src in ipairs(sources) do
      local t = dd:filter(~dd[src.key .. "_text"]:isnull())
      if #t > 0 then
        -- PyTorch's per-call suffixes and step numbers apart, one range name is one text
        local text = t[src.key .. "_text"]:map(function(x)
          for _, p in ipairs(iterations.step_strip) do x = x:gsub(p, "") end
          return x
        end)
        local g = nsl.table{{"rank", t.rank}, {"text", text}, {"ov", t[src.key .. "_ov"]}}:group_by("rank", "text")
          :agg{"ov=sum(ov)"}:sort("rank", "-ov", "text")
        local top = g:group_by("rank"):agg{"text=first(text)", "ov=first(ov)"}
        for i = 1, #top do
          local r = top.rank[i]
          acts[r] = acts[r] or {list = {}}
          local list = acts[r].list
          list[#list + 1] = {key = src.key, label = src.label, text = top.text[i], share = top.ov[i] / tot[r]}
        end
      end
    end
    local tids = dd:filter(~dd.launch_tid:isnull()):group_by("rank"):agg{"tid=first(launch_tid)"}
    for i = 1, #tids do
      local r = tids.rank[i]
      acts[r] = acts[r] or {list = {}}
      acts[r].tid = tids.tid[i]
    end
  end
  -- a distributed run reads the host tables of a report alone (numbered 0
  -- there; rows of other reports would never match anyway)
  local reps = d.report:unique()
  if distributed.report_trace(trace, {reps[1]}) then
    local of = d:slices("report")
    for _, rep in ipairs(reps) do
      local dr = of(rep)
      attribute(distributed.report_trace(trace, {rep}), dr:with("report", nsl.rep(0, #dr):cast("i32")))
    end
  else
    attribute(trace, d)
  end
  for _, a in pairs(acts) do table.sort(a.list, function(x, y) return x.share > y.share end) end
  return acts
end

local function pct(x) return string.format("%.1f%%", 100 * x) end
local dur = report.duration

--- The finding for straggler r (1-based): its cause, what the host did
-- (for a host-side cause: acts, host_activities' entry of the rank), the
-- window of its median late collective and the command that shows it; with
-- `below` the finding of a rank late at nearly every collective whose cost
-- stays under min_share (info).  by holds the slices by rank (table:slices)
-- of res.coll (coll), res.late (late) and of its rows late by the threshold
-- (late_thr).  Returns the finding's id.
local function straggler_finding(trace, src, res, rows, r, out, by, acts, below)
  local labels, step = src.labels, rows.step
  local c = rows.cause[r]
  local late_insts = by.late_thr(r - 1)
  late_insts = late_insts:select{"instance"}:with("mine", nsl.rep(1, #late_insts))
  local id, why = "straggler.late", "no cause stands out in the windows before its collectives"
  local where = {rank = labels[r], report = src.where[r].report, device = src.where[r].device,
                 pid = src.where[r].pid}
  if c then
    id = c.id
    why = string.format("%s (%s more than the others' median)", c.what, dur(rows.x[c.key][r]))
  end
  if c and c.id == "straggler.host_idle" then
    local list, tid = acts and acts.list, acts and acts.tid
    if not res.host then
      why = why .. "; the trace has no CUDA API calls to say what the host was doing"
    elseif list and #list > 0 then
      local parts = {}
      for _, a in ipairs(list) do
        parts[#parts + 1] = string.format("%s '%s' (%s of that time)", a.label, a.text, pct(a.share))
        if a.key == "nvtx" then where.nvtx = a.text end
        if a.key == "api" and a.share >= 0.5 and a.text:find("Launch") then
          id = "straggler.launch"
          why = string.format("its GPU sat idle while the host was launching work (%s more than the " ..
            "others' median)", dur(rows.x[c.key][r]))
        end
      end
      why = why .. "; the launching thread was in " .. table.concat(parts, ", ")
    else
      why = why .. "; the launching thread was in no CUDA API call, OS runtime call or NVTX range"
    end
    where.tid = tid
  end
  -- the window before the late collective whose lateness is the median one
  local coll = by.coll(r - 1)
  local mine = coll:join(late_insts, {"instance"}, {"mine"})
  mine = mine:filter(~mine.mine:isnull()):join(by.late(r - 1), {"instance"}, {"late"})
  local typical = ""
  if #mine > 0 then
    mine = mine:sort("late", "index")
    local i = (#mine + 1) // 2
    local prev = coll:filter(coll.start:lt(mine.start[i]))
    local from = #prev > 0 and prev.stop:max() or mine.start[i] - (res.step_ns or 0)
    where.from, where.to = math.min(from, mine.start[i]), mine.stop[i]
    typical = string.format("; e.g. collective %d, %s late", mine.index[i], dur(mine.late[i]))
  end
  local cost = math.floor(rows.cost[r] + 0.5)
  local head = below and "%s is late at nearly every collective, below the straggler threshold (min_share " ..
                         pct(below):gsub("%%", "%%%%") .. "): late by %s (median) at %d of the %d collectives anyone was late at (of " ..
                         "%d steady%s); %s; why: %s"
               or "%s is a straggler: late by %s (median) at %d of the %d collectives anyone was late at (of " ..
                  "%d steady%s); %s; why: %s"
  -- what the others lose over the run (per step: the finding's cost, against rows.step)
  local lost = string.format("the others lose %s over the run (%s of it)", dur(rows.lost_ns[r]), pct(rows.lost[r]))
  findings.add(out, {severity = below and "info" or "warning", id = id, cost_ns = cost, step_ns = step,
                     share = math.min(rows.lost[r], 1.0), where = where, next = next_command(trace, src, rows, r, id),
                     evidence = "causes"},
    head, labels[r], dur(rows.late_delay[r]), rows.late_n[r], rows.skewed, res.ninst, typical, lost, why)
  return id
end

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
  -- parts: a distributed run's gathered kernel columns (the step below); matched: {src, res} of
  -- nsl.straggler.match on this trace with these args, made once by diagnose for its ledger and this;
  -- matched.steps: nsl.iterations.steps(trace) as diagnose found it (false: no steps), detected once
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
    -- the matching: diagnose's, when it ran it for every check (matched), else its own
    local src, res = table.unpack(matched or {core.match(trace, args, parts and parts.kernels)})
    local labels, nranks = src.labels, #src.labels
    if not res then
      out:text(string.format("No straggler analysis: %d rank(s) and no %s.", nranks, src.what))
      return
    end
    -- the step the costs are per: the training step when the trace has steps (nsl.iterations.steps, the one
    -- step detection of a trace: the median steady step), else the interval between steady collectives
    local st
    if matched and matched.steps ~= nil then st = matched.steps or nil else st = iterations.steps(trace) end
    local train = st and st.step_ns or nil
    src.step_what = train and "training step" or "interval between collectives"
    local rows = core.ranks(res, {min_delay = min_delay, min_share = args.min_share, late_share = args.late_share,
                                  step_ns = train})
    local all = src.coll:group_by("rank"):agg{"n=count"}
    local ncoll = {}
    for r = 1, nranks do ncoll[r] = 0 end
    for i = 1, #all do ncoll[all.rank[i] + 1] = all.n[i] end
    local step, thr = rows.step, rows.threshold
    out:value("warmup_collectives", res.warmup)
    out:value("step_ns", step)
    out:value("step_source", train and "iterations" or "collectives")
    out:value("collective_interval_ns", res.step_ns)

    -- the verdict: findings first, then a sentence
    local ref = labels[res.ref + 1]
    local names = {}
    -- per named rank, slices of the tables by rank (one pass each, however many are named)
    local by, acts = nil, {}
    for r = 1, nranks do
      if (rows.straggler[r] or rows.consistent[r]) and not by then
        local late_thr = res.late:filter(res.late.late:ge(thr))
        by = {coll = res.coll:slices("rank"), late = res.late:slices("rank"), late_thr = late_thr:slices("rank")}
        local idle = {}   -- what the host did, for the stragglers whose GPU waited for it
        for q = 1, nranks do
          local c = rows.cause[q]
          if (rows.straggler[q] or rows.consistent[q]) and c and c.id == "straggler.host_idle" then
            idle[#idle + 1] = q - 1
          end
        end
        if #idle > 0 then
          local who = nsl.table{{"rank", nsl.column(idle)}, {"idle", nsl.rep(1, #idle)}}
          local li = late_thr:join(who, {"rank"}, {"idle"})
          acts = host_activities(trace, res, li:filter(~li.idle:isnull()):select{"rank", "instance"})
        end
      end
      if rows.straggler[r] then
        local id = straggler_finding(trace, src, res, rows, r, out, by, acts[r - 1])
        names[#names + 1] = labels[r] .. " (" .. id:gsub("^straggler%.", "") .. ")"
      end
    end
    for r = 1, nranks do   -- late every time, but below min_share: named at info level with its cost
      if rows.consistent[r] then straggler_finding(trace, src, res, rows, r, out, by, acts[r - 1], args.min_share) end
    end
    local warm = res.warmup > 0 and string.format(" (%d warm-up collective(s) left out; --arg warmup=0 keeps them)",
                                                  res.warmup) or ""
    if nranks == 1 then
      out:text(string.format("1 rank (%s) with %d %s: arrivals need two ranks or more; compute per step only.",
        labels[1], ncoll[1], src.what))
    elseif res.ninst == 0 then
      out:text(string.format("No straggler verdict: the %d ranks share no collective.", nranks))
    elseif #names > 0 then
      out:text(string.format("%d straggler%s: %s. A straggler is late by at least %s behind the others' median " ..
        "at %s of the collectives anyone was late at, losing at least %s of the %s %s%s.", #names,
        #names > 1 and "s" or "", table.concat(names, ", "), dur(thr), pct(args.late_share), pct(args.min_share),
        dur(step), src.step_what, warm))
    elseif rows.skewed > 0 and rows.skew_lost >= args.min_share then
      local lastc = res.instances:filter(res.instances.skew:ge(thr)):group_by("who"):agg{"n=count"}:sort("-n", "who")
      local cost = math.floor(rows.skew_cost + 0.5)
      findings.add(out, {severity = "info", id = "straggler.rotating", cost_ns = cost, step_ns = step,
                         share = math.min(rows.skew_lost, 1.0), evidence = "collectives"},
        "No single rank is to blame: the last rank to arrive changes (most often %s, at %d of the %d collectives " ..
        "anyone was late at); the arrivals spread by %s (median skew)", labels[lastc.who[1] + 1], lastc.n[1],
        rows.skewed, dur(rows.skew))
      out:text(string.format("No straggler, but the straggler rotates: the others wait %s per step (%s) at " ..
        "collectives where the last rank changes%s.", dur(cost), pct(rows.skew_lost), warm))
    else
      out:text(string.format("No straggler: no rank is late by at least %s at %s of the collectives anyone was " ..
        "late at while losing %s of the %s %s; median arrival skew %s%s.", dur(thr), pct(args.late_share),
        pct(args.min_share), dur(step), src.step_what, dur(rows.skew), warm))
    end

    if nranks > 1 and step then
      out:text(train and string.format("The step: %s, the median steady training step (%s); collectives come " ..
                                       "every %s (median).", dur(train), st.how, dur(res.step_ns))
               or string.format("The step: %s, the median interval between steady collectives (no training steps " ..
                                "detected).", dur(step)))
    end
    if nranks > 1 then
      out:text(string.format("%d ranks (by %s), %d steady collective instances of %s matched on two ranks or more; " ..
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
      local c = rows.cause[r]
      local cause = c and (" (" .. (c.label or c.key) .. ")") or ""
      verdict[r] = rows.straggler[r] and ("STRAGGLER" .. cause) or rows.consistent[r] and ("late every time" .. cause)
                   or ""
      out:value("offset_ns." .. labels[r], rows.offset[r])
      out:value("delay_ns." .. labels[r], rows.delay[r])
    end
    if nranks > 1 then
      local cc = {{"rank", labels}, {"late at", rows.late_n}, {"late (% of skewed)", nsl.column(rows.late_share) * 100},
                  {"late by med (ns)", rows.late_delay}, {"lost over the run (ns)", rows.lost_ns},
                  {"cost per step (ns)", rows.cost},
                  {"of the step (%)", nsl.column(rows.lost) * 100}}
      for _, key in ipairs{"collective", "compute", "idle", "host", "queue"} do
        local v = {}
        for r = 1, nranks do v[r] = rows.x[key][r] or 0.0 end
        cc[#cc + 1] = {key .. " excess (ns)", v}
      end
      cc[#cc + 1] = {"verdict", verdict}
      out:table("causes", nsl.table(cc), {title = string.format("Per rank: the collectives it was late at (by %s " ..
        "or more; %d of %d had a rank that late) and where its lateness comes from: the median excess over the " ..
        "others' median in the window before each (idle = host + queue)", dur(thr), rows.skewed, res.ninst)})
    end
    out:table("ranks", nsl.table{
      {"rank", labels}, {"clock offset (ns)", rows.offset}, {"collectives", ncoll}, {"matched", rows.matched},
      {"last", rows.last}, {"last (%)", nsl.column(rows.share) * 100}, {"delay (ns)", rows.delay},
      {"wait caused (ns)", rows.caused}, {"wait suffered (ns)", rows.suffered}, {"steps", rows.steps},
      {"step compute med (ns)", rows.compute}, {"vs median rank", rows.ratio}, {"verdict", verdict}},
      {title = "Per rank: clock offset (vs " .. ref .. "), arrival order, waits, compute per step",
       col_decimals = {["vs median rank"] = 3}, same_unit = {{"wait caused (ns)", "wait suffered (ns)"}}})

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
  -- distributed (nsl.distributed): each process joins its kernels to their
  -- launches; rank 0 matches the collectives (and reads the host activity
  -- of a straggler's late windows from that rank's process alone)
  distributed = {step = function(trace) return {kernels = core.kernel_columns(trace)} end},
}
