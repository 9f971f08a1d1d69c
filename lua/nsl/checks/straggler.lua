-- nsl.checks.straggler -- diagnose check straggler (the engine: nsl.diagnose).
local nsl = require("nsl")
local D = require("nsl.diagnose")
local run_analysis = D.run_analysis
local item = D.item
local item_title = D.item_title

return {
  id = "straggler",
  description = "The straggler analysis's findings, passed on; the job loses what the other ranks waited " ..
    "inside collectives for the late rank (the ledger's collectives)",
  reads = {"kernels or nsys-jax GPU ranges, through the straggler analysis (NCCL collectives, clocks, steps)"},
  claims = {"comm_wait"},
  thresholds = {},
  run = function(ctx)
    local trace = ctx.trace
    if #trace.kernels == 0 and #trace.gpu_ranges == 0 then return end
    local sub, err = run_analysis(ctx, "straggler")
    if not sub then ctx.notes[#ctx.notes + 1] = "straggler: " .. err return end
    if #sub.findings == 0 then return end
    local ev = item(sub, "ranks") and ctx:table("straggler_ranks", item(sub, "ranks"),
      "Per rank: clock offset, arrival order, waits, compute per step (straggler analysis)")
    local st = ctx.steps
    for _, f in ipairs(sub.findings) do
      local rec = {}
      for k, v in pairs(f) do rec[k] = v end
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
      local L = ctx:ledger()
      local mine = rec.where and rec.where.rank and L.lost[rec.where.rank]
      if mine then
        rec.lost_ns = mine.lost
        rec.share = L.job_wall > 0 and math.min(1.0, mine.lost / L.job_wall) or 0.0
        if st and st.n > 0 then rec.lost_per_step_ns = mine.lost // st.n end
      end
      ctx.findings[#ctx.findings + 1] = rec
    end
  end,
}
