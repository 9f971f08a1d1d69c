-- nsl.jax -- nsys-jax's data frames and analyses over nsl tables.
--
-- M.frames(trace, opts) builds, from the `gpu_ranges` and `nvtx` tables of
-- nsys-jax reports and their XLA dumps, the four frames nsys-jax's
-- load_profiler_data makes (same rows, same column meanings, times in ms).
-- The same runs on nsys SQLite exports (nsl bundles): there M.gpu_ranges
-- projects the NVTX ranges onto the GPU itself (nsys's nvtx_gpu_proj_trace,
-- nsl.nvtx.project) and M.hlo_store finds the dumps under the bundle's
-- meta/xla_dump/ (what `nsl profile --xla-dump` stores).  The frames:
--   module         one row per XlaModule execution on a device
--   thunk          one row per (innermost) Thunk execution, with Communication and
--                  ProjDurHiddenMs (communication time hidden under computation)
--   communication  the communication thunks with MessageSize, Collective,
--                  CollectiveSize, AlgorithmBandwidthGBPerSec, BusBandwidthGBPerSec
--   compile        XLA compilation ranges (host NVTX), worker threads grafted in
-- ProgramId is the module's fingerprint (HloModule frontend attribute
-- fingerprint_before_lhs), "unknown" for modules without a dump (autotuning).
-- opts.programs = "structure" groups modules that share name and HLO structure
-- under one ProgramId (the first fingerprint seen), which repairs runs where one
-- process's autotuning changed a fingerprint; the default "fingerprint" is
-- nsys-jax's own grouping.
--
-- The heavy steps are C kernels (nsl.tree_ancestor, nsl.cumcount,
-- nsl.overlap_sum, nsl.jax_compile_tree, nsl.jax_compile_attribute); Lua loops
-- run over distinct names, programs and modules only.
--
-- The parts: nsl.jax.frames (dumps, projected ranges, frames), nsl.jax.stats
-- (loading, steady state, alignment, statistics), nsl.jax.flame (flame
-- graphs); this module recognises JAX traces and gathers the parts.
local nsl = require("nsl")
local kept = require("nsl.kept")

local M = {}

-- The name the column cache keeps under, per report, whether its NVTX ranges include XLA's module ranges
-- (M.is_jax; nsl.kept).
local XLA_KEPT = "xla_module.1"

for _, part in ipairs{"nsl.jax.frames", "nsl.jax.stats", "nsl.jax.flame"} do
  for name, v in pairs(require(part)) do M[name] = v end
end

-- ---------------------------------------------------------------- recognition

--- Whether the trace is an nsys-jax archive: NVTX ranges projected onto the
-- GPU and no CUDA activity tables (nsys-jax keeps no kernels, memory
-- operations or API calls; analyses of those point here instead).
function M.is_archive(trace)
  return #trace.gpu_ranges > 0 and #trace.kernels + #trace.memcpy + #trace.memset + #trace.api == 0
end

--- Whether the trace is a JAX (XLA) one: an nsys-jax archive or an export
-- whose NVTX ranges include XLA's module ranges (XlaModule:#...#).
function M.is_jax(trace)
  if M.is_archive(trace) then return true end
  local n = trace.nvtx
  if #n == 0 then return false end
  -- whether each report has such ranges, kept in the column cache (nsl.kept): read back, the ranges' text is
  -- not loaded (8.1 M rows at 1 GB)
  local nr = trace:nreports()
  local flags = kept.per_report(trace, "nvtx", XLA_KEPT, "bool")
  if flags then
    for _, f in ipairs(flags) do if f[1] then return true end end
    return false
  end
  n:load{"text"}
  local has = n.text:contains("XlaModule:#")
  if kept.keeps(trace) then
    local reps = {}
    if nr == 1 then reps[0] = has:count() > 0
    else
      n:load{"report"}
      for _, r in ipairs(n.report:gather(has:indices()):unique():totable()) do reps[r] = true end
    end
    for r = 0, nr - 1 do trace:keep_derived(r, "nvtx", XLA_KEPT, kept.flag(reps[r])) end
  end
  return has:count() > 0
end

--- For an analysis of CUDA activity (kernels, memory operations, API calls)
-- that found none.  On an nsys-jax archive, which keeps no CUDA activity,
-- runs the JAX analysis `instead` with its default arguments after a line
-- saying so (with no `instead`, the line points at jax_summary) and returns
-- true.  Anywhere else, fails: "<paths>: <missing>; was it profiled
-- with -t cuda?".
function M.no_cuda_activity(trace, out, missing, instead)
  local paths = require("nsl.report").files(trace.reports.path:totable())
  if #trace.sums > 0 then   -- nsys stats CSV files: summaries only
    local kinds = trace.sums.kind:unique():totable()
    table.sort(kinds)
    nsl.fail(string.format("%s: nsys stats CSV files (%s) hold summaries, not the events this analysis needs (%s); " ..
      "give the .nsys-rep or its SQLite export (nsys export --type=sqlite)", paths, table.concat(kinds, ", "), missing))
  end
  if not M.is_archive(trace) then nsl.fail(string.format("%s: %s; was it profiled with -t cuda?", paths, missing)) end
  local what = string.format("%s: an nsys-jax archive keeps no CUDA activity (%s), only the NVTX ranges projected " ..
                             "onto the GPU", paths, missing)
  if not instead then
    out:text(what .. "; nothing here to measure: nsl run jax_summary shows its XLA modules and thunks.")
    return true
  end
  out:text(string.format("%s; its JAX counterpart follows (nsl run %s).", what, instead))
  out:run(instead, trace)
  return true
end

--- The `programs` argument of the nsys-jax analyses (a fresh declaration for
-- an analysis's args table): how module executions are grouped, as
-- M.gpu_frames's opts.programs.
function M.programs_arg()
  return {default = "fingerprint", choices = {"fingerprint", "structure"},
          help = "group module executions by 'fingerprint' (nsys-jax) or 'structure' (same name and HLO)"}
end

return M
