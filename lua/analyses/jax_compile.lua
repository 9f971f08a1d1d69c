-- jax_compile -- XLA compilation time from the host NVTX ranges of nsys-jax
-- archives: parallel-aware time per compilation range (worker threads of
-- parallel compilation and autotuning count in proportion to their work, so the
-- parts add up to the wall time), and the wall time of each program's
-- compilation (XlaCompile ranges).
local nsl = require("nsl")
local jax = require("nsl.jax")

return {
  name = "jax_compile",
  description = "XLA compile time per range (parallel-aware) and per program (nsys-jax archives, bundles with XLA dumps)",
  args = {
    limit = {default = 30, help = "rows of the per-range table in text output (all rows go to files)"},
    passes = {default = true, help = "keep XLA passes separate (false: one XlaPasses row)"},
  },
  example = "nsl run jax_compile proc0.zip --out compile/",
  run = function(trace, args, out)
    local store = jax.hlo_store(trace)
    local parts = jax.compile_frame(trace, store)
    if #parts == 0 then nsl.fail("no XLA compilation ranges (report_nvtx_pushpop_trace) in this trace") end
    local st = jax.compile_statistics(parts)
    local total = st.DurNonChildMs:sum()
    local ranges = nsl.table{{"Range", st.Name}, {"DurNonChildMs", st.DurNonChildMs}, {"DurChildMs", st.DurChildMs},
                             {"Percent", st.DurNonChildMs * (100 / total)}}
    if not args.passes then
      local hl = jax.per_group(ranges, {"Range"}, function(k, i)
        return k.Range[i]:sub(1, 9) == "XlaPass:#" and "XlaPasses" or k.Range[i]
      end, "str")
      ranges = ranges:with("Range", hl):group_by("Range")
        :agg{"DurNonChildMs=sum(DurNonChildMs)", "DurChildMs=sum(DurChildMs)", "Percent=sum(Percent)"}
        :sort("-DurNonChildMs")
    end
    out:table("ranges", ranges, {title = string.format("Compile time per range (parallel-aware, %.1f ms in all)", total),
                                 limit = args.limit})
    out:value("total_ms", total)
    -- per program: the XlaCompile ranges' wall time
    local per = {}
    for _, p in ipairs(parts) do
      local c = p:filter(p.Name:where(function(s) return s == "XlaCompile" or s:sub(1, 11) == "XlaCompile:" end))
      per[#per + 1] = nsl.table{{"report", c.report}, {"ProgramId", c.ProgramId}, {"ProgramName", c.ProgramName},
                                {"ms", (c.stop - c.start) * 1e-6}}
    end
    local cols = {}
    for _, name in ipairs{"report", "ProgramId", "ProgramName", "ms"} do
      local list = {}
      for k, t in ipairs(per) do list[k] = t:col(name) end
      cols[#cols + 1] = {name, nsl.concat(table.unpack(list))}
    end
    local all = nsl.table(cols)
    local byprog = all:group_by("ProgramName", "ProgramId")
      :agg{"Compilations=count", "WallMs=sum(ms)", "MaxMs=max(ms)"}:sort("-WallMs")
    out:table("programs", byprog, {title = "Compilation wall time per program (XlaCompile ranges)"})
  end,
}
