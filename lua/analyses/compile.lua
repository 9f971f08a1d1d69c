-- compile -- time spent compiling and loading code, per process and in total:
--  * XLA compilation (NVTX domain TSL: XlaCompile, XlaPass..., XlaAutotuner...)
--    with nsys-jax's parallel-aware attribution (worker threads' time shared
--    out within the range that launched them, so the parts add up to the
--    compilations' wall time); top ranges, XLA passes, programs;
--  * other compilers' NVTX ranges (torch.compile: Dynamo, AOTAutograd,
--    Inductor, Triton autotuning, CUDA graph recording; nvFuser): each
--    compilation and what ran under it, with self times;
--  * CUDA code loading and JIT from the CUDA API (cuModuleLoad*,
--    cuLibraryLoad*, function look-ups that load lazily, cuLink*, nvrtc*,
--    CUDA graph capture and instantiation) and from CUPTI's overhead records
--    (runtime-triggered module loading, lazy function loading, driver JIT).
-- The name lists and the measuring are in lua/nsl/compile.lua (M.frameworks,
-- M.api_classes, M.report).
-- Works on nsys SQLite exports and nsys-jax archives alike.
local compile = require("nsl.compile")
local findings = require("nsl.findings")

local MS = 1e-6

return {
  name = "compile",
  description = "Time spent compiling and loading code: XLA (parallel-aware), torch.compile, nvFuser, " ..
                "CUDA module loading and JIT, per process and in total",
  args = {
    limit = {default = 20, help = "rows of each detail table in text output (all rows go to files)"},
    per_process = {default = false, help = "detail tables per process (report, pid) instead of over all"},
    warn = {default = 0.0, help = "a warning finding for a process that spends more than this % of its " ..
                                  "report's time compiling and loading (0: off)"},
  },
  example = "nsl run compile run.sqlite --arg per_process=true",
  run = function(trace, args, out)
    local r = compile.report(trace, {limit = args.limit, per_process = args.per_process})
    if not r then
      out:text("No compilation or code loading found (no XLA, torch.compile or nvFuser NVTX ranges, " ..
               "no CUDA module-loading or JIT calls, no CUPTI loading overhead).")
      out:value("total_ms", 0)
      return
    end
    for _, t in ipairs(r.tables) do out:table(t[1], t[2], t[3]) end
    out:value("total_ms", r.total_ms)
    local rows, rnames, rdur = r.rows, r.rnames, r.rdur
    if args.warn > 0 then
      for _, row in ipairs(rows) do
        local d = rdur[row.r + 1]
        if row.what == compile.ALL and d and d > 0 then
          findings.above(out, row.wall * 100.0 / d, {warning = args.warn}, "compile_share",
            "%s pid %s spends %.1f%% of the run compiling and loading code (%.1f ms)",
            rnames[row.r + 1] or tostring(row.r), row.p, row.wall * 100.0 / d, row.wall * MS)
        end
      end
    end
  end,
}
