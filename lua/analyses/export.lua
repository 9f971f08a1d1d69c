-- export -- the trace, or a time window of it, as Chrome / Perfetto
-- trace-event JSON (ui.perfetto.dev and chrome://tracing open it): kernels,
-- memcpy and memset on one track per GPU stream (a process per GPU), CUDA
-- API calls and NVTX ranges on their CPU threads (a process per OS
-- process), with names and arguments, arrows from each launch to the GPU
-- work it started, and metadata events naming every process and thread.
-- Timestamps are µs on the trace's clock with ns precision ("ts":
-- 1234.567).  nsl.trace_events makes the JSON text (in C, over whole columns) and writes it in pieces.
local nsl = require("nsl")
local report = require("nsl.report")
local window = require("nsl.window")
local trace_events = require("nsl.trace_events")

return {
  name = "export",
  description = "The trace (or a time window) as Chrome / Perfetto trace JSON (ui.perfetto.dev, chrome://tracing)",
  args = {
    from = {default = "", help = "window start, counted from the trace's first event (1.5s, 200ms; empty: the start)"},
    to = {default = "", help = "window end, counted from the trace's first event (empty: the end)"},
    file = {default = "trace.json", help = "file written under --out DIR (without --out the JSON goes to stdout)"},
    api = {default = true, help = "include CUDA API calls"},
    nvtx = {default = true, help = "include NVTX ranges and marks"},
    flows = {default = true, help = "arrows from CUDA API launches to the GPU work they started"},
    max_events = {default = 20000000, help = "refuse larger exports (viewers load a few million events at best)"},
  },
  example = "nsl run export run.sqlite --arg from=1s --arg to=1.2s --out out/  (open out/trace.json in Perfetto)",
  -- a distributed run moves only the window's rows to MPI rank 0
  gather = window.gather(function(args)
    return {kernels = "overlap", memcpy = "overlap", memset = "overlap", api = args.api and "overlap" or nil,
            nvtx = args.nvtx and "before" or nil}
  end),
  run = function(trace, args, out)
    local whole = (args.from == nil or args.from == "") and (args.to == nil or args.to == "")
    local from, to = window.resolve(trace, args)
    local opts = {from = from, to = to, whole = whole, api = args.api, nvtx = args.nvtx, flows = args.flows,
                  max_events = args.max_events}
    -- written as it is made (trace_events.write): the JSON of a 1 GB trace is gigabytes
    local summary, bytes = nil, 0
    local function json(write)
      summary = trace_events.write(trace, opts, function(piece)
        bytes = bytes + #piece
        write(piece)
      end)
    end
    if not out:path(args.file) then
      out:stdout(json)
      return
    end
    local path = out:file(args.file, json)
    local cats, events, totals = {}, {}, {}
    for i, row in ipairs(summary) do cats[i], events[i], totals[i] = row[1], row[2], row[3] end
    out:table("export", nsl.table{{"category", cats}, {"events", events}, {"total_ns", totals}},
              {title = string.format("Trace events written to %s (%s)", path, report.bytes(bytes))})
  end,
}
