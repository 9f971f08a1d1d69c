-- nsl.checks.mfu -- diagnose check mfu (the engine: nsl.diagnose).
local report = require("nsl.report")
local D = require("nsl.diagnose")
local round = D.round

return {
  id = "mfu",
  description = "Model FLOPs utilisation (nsys-ai's): flops_per_step / step / peak, against the dense " ..
    "FP16/BF16 tensor peak from the device's SM count, clock and compute capability, or " ..
    "peak_tflops (no cost; a warning below mfu_warn)",
  tables = {},
  reads = {"devices: report, device, name, sm_count, clock, compute_capability", "steps (nsl.iterations)"},
  claims = {},
  thresholds = {
    flops_per_step = {default = 0.0, help = "mfu: the model's FLOPs per step and GPU (0: no MFU)"},
    peak_tflops = {default = 0.0, help = "mfu: the GPU's peak TFLOP/s (0: from the device's SM count, clock " ..
                                   "and compute capability)"},
    mfu_warn = {default = 0.3, help = "mfu: a warning below this utilisation"},
  },
  run = function(ctx)
    local flops = ctx.args.flops_per_step
    if not flops or flops <= 0 then return end
    local st = ctx.steps
    if not st then
      ctx.notes[#ctx.notes + 1] = "mfu: --arg flops_per_step needs steps (none found; name them with " ..
        "--arg iteration=NAME)"
      return
    end
    local dv = ctx.trace.devices
    local peak, what
    if ctx.args.peak_tflops > 0 then
      peak, what = ctx.args.peak_tflops * 1e12, string.format("--arg peak_tflops=%g", ctx.args.peak_tflops)
    elseif #dv > 0 then
      dv:load{"report", "device", "name", "sm_count", "clock", "compute_capability"}
      for i = 1, #dv do
        local p = D.peak_flops(dv.sm_count[i], dv.clock[i], dv.compute_capability[i])
        if p then
          peak = p
          what = string.format("%s: %d SMs x %.2f GHz x %d FLOP/clock (compute capability %s)", dv.name[i] or "GPU",
            dv.sm_count[i], dv.clock[i] / 1e9, D.flops_per_sm_clock[dv.compute_capability[i]], dv.compute_capability[i])
          break
        end
      end
    end
    if not peak then
      ctx.notes[#ctx.notes + 1] = "mfu: the trace records no device properties (SM count, clock, compute capability) " ..
        "nsl knows a peak for; give --arg peak_tflops=N"
      return
    end
    local achieved = flops / (st.step_ns / 1e9)
    local mfu = achieved / peak
    local ideal = round(flops / peak * 1e9)
    local sev = mfu < ctx.args.mfu_warn and "warning" or "info"
    local f = ctx:add{id = "mfu", severity = sev,
      text = string.format("model FLOPs utilisation %.1f%%: %.1f TFLOP/s achieved per GPU (%.4g FLOPs per %s step) " ..
        "against a peak of %.1f TFLOP/s (%s); at peak the step would take %s", 100 * mfu, achieved / 1e12, flops,
        report.duration(st.step_ns), peak / 1e12, what, report.duration(ideal)),
      next = "nsl run iterations " .. ctx:all_paths()}
    f.value, f.step_ns = mfu, st.step_ns
  end,
}
