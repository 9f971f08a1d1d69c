-- nsl.checks.compile_time -- diagnose check compile.time (the engine: nsl.diagnose).
local report = require("nsl.report")
local D = require("nsl.diagnose")
local pid_text = D.pid_text
local run_analysis = D.run_analysis
local item = D.item
local round = D.round

return {
  id = "compile.time",
  description = "Per process, the compile analysis's union of compiling and loading (a one-time cost)",
  tables = {"api", "nvtx", "osrt", "overhead", "processes", "gpu_ranges"},
  reads = {"the compile analysis's summary (CUDA API, NVTX, OS runtime calls)"},
  claims = {},
  thresholds = {},
  run = function(ctx)
    local sub, err = run_analysis(ctx, "compile")
    if not sub then ctx.notes[#ctx.notes + 1] = "compile: " .. err return end
    local s = item(sub, "summary")
    if not s then return end
    local byname = {}
    for i, n in ipairs(ctx.names) do byname[n] = i - 1 end
    local rows = s:filter(s.What:eq("all compiling and loading") & ~s.pid:isnull())
    if #rows == 0 then return end
    local ev = ctx:table("compile_time", s, "Time spent compiling and loading code (compile analysis)")
    for i = 1, #rows do
      local r = byname[rows.report[i]]
      if r then
        local total = round(rows["Wall (ms)"][i] * 1e6)
        local lo, hi = ctx:report_span(r)
        if total > 0 and lo then
          ctx:add{id = "compile.time", total = total, window = hi - lo, once = true, evidence = ev,
                  text = string.format("%s pid %s: %s compiling and loading code (JIT, module loading, graph " ..
                    "capture, framework compilers)", ctx:rank(r), pid_text(rows.pid[i]), report.duration(total)),
                  where = {rank = ctx:rank(r), report = r, pid = rows.pid[i]},
                  next = "nsl run compile " .. ctx:path(r) .. " --arg per_process=true"}
        end
      end
    end
  end,
}
