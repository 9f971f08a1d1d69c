-- nsl.checks.memory_near_capacity -- diagnose check memory.near_capacity (the engine: nsl.diagnose).
local report = require("nsl.report")
local D = require("nsl.diagnose")
local run_analysis = D.run_analysis
local item = D.item

return {
  id = "memory.near_capacity",
  description = "Per device, the heap analysis's peak over the device's memory (no cost: a risk, graded by " ..
    "memory_warn and memory_error)",
  tables = {},
  reads = {"memory events, through the heap analysis", "devices: report, device, memory"},
  claims = {},
  thresholds = {
    memory_warn = {default = 0.9, help = "memory.near_capacity: peak / device memory for a warning"},
    memory_error = {default = 0.98, help = "memory.near_capacity: peak / device memory for an error"},
  },
  run = function(ctx)
    local trace = ctx.trace
    if #trace.memory == 0 or #trace.devices == 0 then return end
    local sub, err = run_analysis(ctx, "heap")
    if not sub then ctx.notes[#ctx.notes + 1] = "heap: " .. err return end
    local h = item(sub, "devices")
    if not h then return end
    local dv = trace.devices
    dv:load{"report", "device", "memory"}
    local cap = {}
    for i = 1, #dv do
      if dv.memory[i] and dv.device[i] then cap[dv.report[i] .. ":" .. dv.device[i]] = dv.memory[i] end
    end
    local byname = {}
    for i, n in ipairs(ctx.names) do byname[n] = i - 1 end
    local ev
    for i = 1, #h do
      local r = byname[h.report[i]]
      local c = r and cap[r .. ":" .. h.device[i]]
      local peak = h["peak (B)"][i]
      if c and c > 0 then
        local ratio = peak / c
        local sev = ratio >= ctx.args.memory_error and "error" or ratio >= ctx.args.memory_warn and "warning" or nil
        if sev then
          ev = ev or ctx:table("memory_peak", h, "Device memory: peak and leaks per device (heap analysis)")
          local f = ctx:add{id = "memory.near_capacity", severity = sev, evidence = ev,
            text = string.format("%s: device memory peaks at %s, %.1f%% of the device's %s (fragmentation or a " ..
              "larger batch will run out of memory)", ctx:rank(r, h.device[i]), report.bytes(peak), 100 * ratio,
              report.bytes(c)),
            where = {rank = ctx:rank(r, h.device[i]), report = r, device = h.device[i], from = h["peak at (ns)"][i],
                     to = h["peak at (ns)"][i]},
            next = "nsl run heap " .. ctx:path(r) .. " --out heap/"}
          f.value = ratio
        end
      end
    end
  end,
}
