-- timeline -- a picture of a time window of the trace: one lane per GPU
-- stream (kernels, NCCL kernels, memcpy by direction, memset) and NVTX
-- ranges per thread (nested ranges in sub-rows), written as PNG or SVG
-- under --out DIR (stored with --embed, inline in a notebook); the lanes are
-- printed as a table with their busy time.
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local plot = require("nsl.plot")
local window = require("nsl.window")
local report = require("nsl.report")

local fmt = string.format

return {
  name = "timeline",
  description = "PNG/SVG timeline of a time window: kernels, memcpy, memset per GPU stream, NVTX ranges per thread",
  args = {
    from = {default = "", help = "window start, counted from the trace's first event (1.5s, 200ms; empty: the start)"},
    to = {default = "", help = "window end, counted from the trace's first event (empty: the end)"},
    format = {default = "png", choices = {"png", "svg"}, help = "png or svg"},
    width = {default = 1400, help = "figure width in px"},
    nvtx = {default = true, help = "draw NVTX ranges"},
    max_depth = {default = 8, help = "NVTX nesting levels drawn per thread"},
    file = {default = "", help = "file name under --out DIR, without or with the format's extension (default timeline)"},
  },
  example = "nsl run timeline run.sqlite --arg from=1.2s --arg to=1.25s --out figures/",
  -- a distributed run moves only the window's rows to MPI rank 0 (plot.timeline draws window.rows)
  gather = window.gather(function(args)
    return {kernels = "overlap", memcpy = "overlap", memset = "overlap", nvtx = args.nvtx and "overlap" or nil}
  end),
  run = function(trace, args, out)
    if not (args.width >= 200 and args.width <= 16384) then nsl.fail("--arg width: 200 to 16384 px", "usage") end
    local from, to, lo = window.resolve(trace, args)
    lo = window.origin(trace) or lo   -- times count from the trace's start, a --from/--to window's too
    local tables = {table.unpack(gpu_ops.tables)}
    if args.nvtx then tables[#tables + 1] = "nvtx" end
    local cv, d = plot.timeline(trace, {from = from, to = to, origin = lo, format = args.format, width = args.width,
                                         max_depth = args.max_depth, tables = tables,
                                         title = fmt("Timeline %s to %s", report.duration(from - lo),
                                                     report.duration(to - lo)),
                                         xlabel = "time since the start of the trace"})
    if #d.lanes == 0 then   -- a window inside the trace where nothing ran: no empty figure, say so
      out:text(fmt("no events from %s to %s (the trace lasts %s): the GPUs were idle, nothing to draw",
                   report.duration(from - lo), report.duration(to - lo),
                   report.duration(select(2, window.span(trace)) - lo)))
      return
    end
    local stem = args.file ~= "" and args.file:gsub("%.[Pp][Nn][Gg]$", ""):gsub("%.[Ss][Vv][Gg]$", "") or "timeline"
    out:figure(stem, cv, {main = true, title = "timeline"})
    local path = out:path(stem .. "." .. args.format)
    -- busy time of each lane in the window (union of its events), in C
    local labels, kinds, events, busy, share = {}, {}, {}, {}, {}
    local function busy_of(parts, keys)
      local map = {}
      if #parts == 0 then return map end
      local spec = {}
      for _, name in ipairs(keys) do
        local cols = {}
        for i, p in ipairs(parts) do cols[i] = p:col(name) end
        spec[#spec + 1] = {name, nsl.concat(table.unpack(cols))}
      end
      local t = nsl.table(spec)
      local g = t:group_by(keys[1], keys[2], keys[3])
      local kt = g:keys()
      local b = nsl.busy_per_bin(t.start, t.stop, g:ids(), #kt, from, to, 1):totable()
      for i = 1, #kt do map[fmt("%s/%s/%s", kt[keys[1]][i], kt[keys[2]][i], kt[keys[3]][i])] = b[i] end
      return map
    end
    local gpu_parts, cpu_parts = {}, {}
    local ops = gpu_ops.table(trace, {columns = {"report", "device", "stream", "start", "stop"}, from = from, to = to})
    if #ops > 0 then gpu_parts[1] = ops end
    if args.nvtx then
      cpu_parts[#cpu_parts + 1] = window.rows(trace.nvtx, {"report", "pid", "tid", "start", "stop"}, from, to)
    end
    local gpu_busy = busy_of(gpu_parts, {"report", "device", "stream", "start", "stop"})
    local cpu_busy = busy_of(cpu_parts, {"report", "pid", "tid", "start", "stop"})
    for i, l in ipairs(d.lanes) do
      labels[i], kinds[i], events[i] = l.label, l.kind, l.events
      if l.kind == "gpu" then busy[i] = gpu_busy[fmt("%s/%s/%s", l.report, l.device, l.stream)] or 0
      else busy[i] = cpu_busy[fmt("%s/%s/%s", l.report, l.pid, l.tid)] or 0 end
      share[i] = busy[i] / (to - from) * 100
    end
    out:table("lanes", nsl.table{{"lane", labels}, {"kind", kinds}, {"events", events}, {"busy_ns", busy},
                                 {"busy_pct", share}},
              {title = fmt("Timeline lanes, %s to %s (%s)%s", report.duration(from - lo), report.duration(to - lo),
                           report.duration(to - from), path and ", figure " .. path or ""), decimals = 1})
  end,
}
