-- jax_heap -- the static heap simulation XLA recorded for each program (buffer
-- assignment of the after-optimizations HLO dump): events and peak bytes per
-- heap-simulator trace, for the programs that take most GPU time.
-- Figure heap_peaks: the peak of every trace as a bar, labelled by program
-- name and fingerprint.
local nsl = require("nsl")
local jax = require("nsl.jax")
local report = require("nsl.report")

return {
  name = "jax_heap",
  description = "Heap-simulator peak memory per XLA program (nsys-jax archives, bundles with XLA dumps)",
  args = {
    all = {default = false, help = "every program, not only the ones covering 99% of GPU time"},
  },
  example = "nsl run jax_heap proc0.zip",
  run = function(trace, args, out)
    local d = jax.load(trace, {compile = false})
    local m = d.module:filter(~d.module.ProgramId:isin{"unknown"})
    local st = m:group_by("ProgramId"):agg{"Name=first(Name)", "DurSumMs=sum(ProjDurMs)"}:sort("-DurSumMs")
    local total, seen = st.DurSumMs:sum(), 0
    local fps, names = {}, {}
    for i = 1, #st do
      if args.all or seen < 0.99 * total then
        fps[#fps + 1] = st.ProgramId[i]
        names[st.ProgramId[i]] = st.Name[i]
      end
      seen = seen + st.DurSumMs[i]
    end
    local heaps = jax.heap(d.store, fps)
    local c = {ProgramId = {}, Name = {}, Trace = {}, Events = {}, PeakBytes = {}, Peak = {}}
    for _, fp in ipairs(fps) do
      for k, h in ipairs(heaps[fp]) do
        local n = #c.ProgramId + 1
        c.ProgramId[n], c.Name[n], c.Trace[n] = fp, names[fp], k
        c.Events[n], c.PeakBytes[n], c.Peak[n] = h.n_events, h.peak_bytes, report.bytes and report.bytes(h.peak_bytes) or tostring(h.peak_bytes)
      end
    end
    if #c.ProgramId == 0 then
      out:text("No heap-simulator traces in the dumps of the programs that ran.")
      return
    end
    out:table("heap", nsl.table{{"ProgramId", c.ProgramId}, {"Name", c.Name}, {"Trace", c.Trace},
                                {"Events", c.Events}, {"PeakBytes", c.PeakBytes}, {"Peak", c.Peak}},
              {title = "Heap-simulator peaks"})
    if out:carries_figures() then
      local cats = {}
      for i = 1, #c.ProgramId do
        cats[i] = string.format("%s %s%s", c.Name[i], c.ProgramId[i]:sub(1, 8),
                                #heaps[c.ProgramId[i]] > 1 and ("#" .. c.Trace[i]) or "")
      end
      out:figure("heap_peaks", function(format)
        local cv, data = require("nsl.plot").grouped_bars{format = format, categories = cats, unit = "bytes",
          series = {{label = "heap-simulator peak", values = c.PeakBytes}}, ylabel = "peak heap",
          xlabel = "program (fingerprint)", title = "Heap-simulator peak per XLA program"}
        data.programs = c.ProgramId   -- the fingerprint of each bar
        return cv, data
      end, {title = "Heap-simulator peak per program"})
    end
  end,
}
