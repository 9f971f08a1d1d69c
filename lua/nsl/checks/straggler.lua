-- nsl.checks.straggler -- diagnose check straggler (the engine: nsl.diagnose).
-- The straggler analysis's findings become the job's causes
-- (Ctx:straggler_groups): one finding per cause -- the stragglers late for
-- one reason together, the ranks of one host whose collectives run longer (a
-- slow link or node: named by the host) -- whose lost_ns is what the others
-- would not have waited for those ranks (Ctx:gain).
local D = require("nsl.diagnose")
local item = D.item
local item_title = D.item_title

-- The finding of one analysis finding f (ev: the evidence table when f names none), with the job's cost of `lost` (ns).
local function record(ctx, sub, ev, f, lost)
  local st = ctx.steps
  local rec = {}
  for k, v in pairs(f) do rec[k] = v end
  if f.where then
    rec.where = {}
    for k, v in pairs(f.where) do rec.where[k] = v end
  end
  rec.id = rec.id or "straggler.compute"   -- today's verdict: compute per step above the median rank's
  if rec.evidence and item(sub, rec.evidence) then   -- the straggler analysis's own table, kept under diagnose's name
    rec.evidence = ctx:table("straggler_" .. rec.evidence, item(sub, rec.evidence),
                             "straggler analysis: " .. ((item_title(sub, rec.evidence)) or rec.evidence))
  end
  rec.evidence = rec.evidence or ev
  rec.where = rec.where or {rank = f.rank}
  if not rec.cost_ns and f.delay_ns then
    rec.cost_ns = f.delay_ns
    if st then rec.step_ns, rec.share = st.step_ns, f.delay_ns / st.step_ns end
  end
  rec.next = rec.next or ("nsl run straggler " .. ctx:all_paths())
  -- the job's cost: what the others would not have waited for it (nsl.ledger's collectives)
  if lost then
    local L = ctx:ledger()
    rec.lost_ns = lost
    rec.share = L.job_wall > 0 and math.min(1.0, lost / L.job_wall) or 0.0
    if st and st.n > 0 then rec.lost_per_step_ns = lost // st.n end
  end
  return rec
end

return {
  id = "straggler",
  description = "The straggler analysis's findings as the job's causes: the stragglers of one cause together, " ..
    "a slow link or node by host; the job loses what the other ranks waited inside collectives for them " ..
    "(the ledger's collectives)",
  tables = {"kernels", "api", "nvtx", "osrt"},
  reads = {"kernels or nsys-jax GPU ranges, through the straggler analysis (NCCL collectives, clocks, steps)",
           "reports: host (a slow link or node)"},
  claims = {"comm_wait", "comm"},   -- comm: the longer transfer of a slow link or node's ranks
  thresholds = {},
  run = function(ctx)
    local sub, err = ctx:straggler()
    if not sub then
      if err then ctx.notes[#ctx.notes + 1] = "straggler: " .. err end
      return
    end
    if #sub.findings == 0 then return end
    local ev = item(sub, "ranks") and ctx:table("straggler_ranks", item(sub, "ranks"),
      "Per rank: clock offset, arrival order, waits, compute per step (straggler analysis)")
    for _, g in ipairs(ctx:straggler_groups()) do
      local fs = g.findings
      if #fs == 1 and not g.host then
        ctx.findings[#ctx.findings + 1] = record(ctx, sub, ev, fs[1], g.lost)
      else
        local parts = {}
        for i, f in ipairs(fs) do parts[i] = record(ctx, sub, ev, f, ctx:gain({f.where.rank})) end
        local rec = record(ctx, sub, ev, fs[1], g.lost)
        rec.ranks, rec.parts = g.ranks, parts
        local list = table.concat(g.ranks, ", ")
        if g.host then
          rec.where.host = g.host
          rec.message = string.format("host %s holds the job back: the collectives of its %s %s run longer than " ..
            "the others' and end later -- a slow link or node; %s", g.host, #g.ranks == 1 and "rank" or "ranks",
            list, fs[1].message)
        else
          rec.message = string.format("%d stragglers hold the job back together, %s: the job gains only when " ..
            "all of them are on time; %s", #g.ranks, list, fs[1].message)
        end
        ctx.findings[#ctx.findings + 1] = rec
      end
    end
  end,
}
