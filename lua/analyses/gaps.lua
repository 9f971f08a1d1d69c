-- gaps -- GPU idle gaps (bubbles) per device and per stream, and what the
-- CPU threads of the process were doing during each one: the CUDA API call,
-- OS runtime call and NVTX range (on any thread of the same process) that
-- overlapped the gap most.  A device or stream is busy while any of its
-- kernels, memory copies or memsets runs; its gaps are the idle intervals
-- between its first operation's start and its last operation's stop.
-- Figure gap_durations: every idle gap of every device, logarithmic bins.
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local jax = require("nsl.jax")
local units = require("nsl.util.units")
local findings = require("nsl.findings")
local report = require("nsl.report")
local host = require("nsl.host")
local distributed = require("nsl.distributed")

-- The GPU operations of every report (nsl.gpu_ops): report, pid, device,
-- stream, start, stop, name, memop and api (the launching call's row of
-- trace.api), without operations of zero length (they keep nothing busy).
local function busy_ops(trace)
  local ops = gpu_ops.table(trace, {columns = {"report", "pid", "device", "stream", "start", "stop"},
                                    names = "short", labels = "terse", memop = true, api = true})
  return ops:filter(ops.stop:gt(ops.start))
end

-- The names of the rows `rows` of ops (NULL at -1) as gaps names an operation: the kernel's short name, a
-- memory operation's terse label in brackets ("[memcpy HtoD]", "[memset]").
local function op_names(ops, rows)
  local name = ops.name:gather(rows)
  return nsl.where(ops.memop:gather(rows), name:map(function(s) return "[" .. s .. "]" end), name)
end

-- The groups of a scope of ops (keys {"report", "device"} or {"report",
-- "device", "stream"}): n, ids (each operation's), keys (a row per group,
-- in id order) and span (the keys, ops, first start and last stop of each
-- group).  With finer (a finer scope's groups: the devices' streams), the
-- groups of finer's groups: the same groups, found among its few rows
-- instead of every operation.
local function scope_groups(ops, keys, finer)
  if finer then
    local g = finer.span:group_by(table.unpack(keys))
    return {n = #g, ids = g:ids():gather(finer.ids), keys = g:keys(),
            span = g:agg{"ops=sum(ops)", "first=min(first)", "last=max(last)"}}
  end
  local g = ops:group_by(table.unpack(keys))
  return {n = #g, ids = g:ids(), keys = g:keys(), span = g:agg{"ops=count", "first=min(start)", "last=max(stop)"}}
end

-- Gaps of one scope (keys, its groups gr: scope_groups): returns the
-- summary per group and the gaps longer than min (with their keys,
-- neighbours and pid), largest first; with every true, also every gap's
-- length (what the figure draws); and the sweep's answer with the groups
-- it was for, which the next scope takes as its own where its groups are
-- the same rows under the same ids (prev: every device with one stream, as
-- in a job whose work all goes to its default stream).
local function scope_gaps(ops, keys, gr, min, every, prev)
  local ng, ids = gr.n, gr.ids
  -- per group 0..ng-1 in order (0 for a group without gaps), and the gaps longer than min with the operations
  -- on either side of each (the one ending where the gap starts and the one starting where it ends, whose
  -- process the gap is charged to; the lowest row of each where several do), in one sweep
  local swept
  if prev and prev.ng == ng and ids:ne(prev.ids):count() == 0 then swept = prev
  else swept = {ng = ng, ids = ids, r = table.pack(nsl.gap_sums(ops.start, ops.stop, ids, ng, min, true))} end
  local idle, n, bigtime, largest, gid, gs, ge, brow, arow = table.unpack(swept.r, 1, 9)
  local span = gr.span
  local width = span.last - span.first
  local summary = span:select(keys):with("ops", span.ops, "span", width, "busy", width - idle, "idle", idle,
    "idle_pct", idle * 100.0 / width, "n", n, "bigtime", bigtime, "largest", largest):sort(table.unpack(keys))
  local all
  if every then
    local _, as, ae = nsl.gaps_grouped(ops.start, ops.stop, ids, ng, 0)
    all = ae - as
  end
  -- the gaps longer than min, with their group's keys, largest first (then by time and keys: the same order
  -- whichever processes found them)
  local kt = gr.keys
  local cols, nullkey = {}, nil
  for _, k in ipairs(keys) do
    local v = kt[k]:gather(gid)
    cols[#cols + 1] = {k, v}
    nullkey = nullkey and (nullkey | v:isnull()) or v:isnull()
  end
  for _, c in ipairs{{"start", gs}, {"stop", ge}, {"dur", ge - gs}} do cols[#cols + 1] = c end
  -- (a group whose key is NULL has no neighbours, as a join on its keys finds none)
  cols[#cols + 1] = {"brow", nsl.where(nullkey, -1, brow)}
  cols[#cols + 1] = {"arow", nsl.where(nullkey, -1, arow)}
  local d = nsl.table(cols):sort("-dur", "start", table.unpack(keys))
  d = d:with("before", op_names(ops, d.brow), "after", op_names(ops, d.arow), "pid", ops.pid:gather(d.arow),
             "api", ops.api:gather(d.arow))
  return summary, d, all, swept
end

local function report_names(trace, col) return trace.reports.name:gather(col) end

local function wanted(list, part)
  for p in list:gmatch("[^,%s]+") do
    if p ~= "device" and p ~= "stream" and p ~= "all" then
      nsl.fail(string.format("--arg scope: '%s' is not device, stream or all", p), "usage")
    end
    if p == part or p == "all" then return true end
  end
  return false
end

-- The key columns of a scope's groups (device or stream).
local function scope_keys(scope)
  return scope == "device" and {"report", "device"} or {"report", "device", "stream"}
end

--- gap_causes' sums of gaps d (with api_text, api_ov: the CUDA call each
-- overlapped most) per report and call: n, total, ov.
local function causes_of(d)
  local call = d:coltype("api_text") and d.api_text or nsl.column{""}:gather(nsl.rep(-1, #d))
  local ov = d:coltype("api_ov") and d.api_ov or nsl.rep(0, #d)
  return nsl.table{{"report", d.report}, {"call", call}, {"dur", d.dur}, {"ov", ov}}:group_by("report", "call")
    :agg{"n=count", "total=sum(dur)", "ov=sum(ov)"}
end

-- The columns nsl.host.attribute adds for the sources srcs.
local function attributed(srcs)
  local cols = {}
  for _, src in ipairs(srcs) do
    for _, c in ipairs{"_text", "_tid", "_ov", "_cover"} do cols[#cols + 1] = src.key .. c end
  end
  return cols
end

-- Hands the rows of a (the scopes' gaps d one after the other, as parts made them) back to the scopes:
-- adds a's columns cols to each scope's d.
local function hand_back(scopes, a, cols)
  local first = 0
  for _, sc in ipairs(scopes) do
    local mine = a:take(nsl.range(#sc.d) + first)
    first = first + #sc.d
    for _, c in ipairs(cols) do sc.d = sc.d:with(c, mine[c]) end
  end
end

--- The gaps of ops of every scope args.scope wants, with what the host did
-- in them: a list of {scope, keys, s (the summary per group), d (the gaps
-- longer than min that are listed: the first args.n, largest first, or all
-- with n 0), all_gaps (every gap's length of the device scope, with figures
-- true)}, the host's tables (nsl.host.sources, loaded on a thread of their
-- own while the gaps are found: nsl.host.prefetch), and gap_causes' sums
-- (causes_of) over every gap longer than min of the first scope.  Every
-- such gap is attributed to a CUDA API call (gap_causes sums them), the
-- listed ones alone to the other sources: at 1 GB 87,546 gaps are longer
-- than 100 us and 40 listed, and finding their innermost NVTX ranges among
-- 8.1 M took 45 % of the run.  One launcher join and one overlap join per
-- source for all scopes (each gap's row depends on it alone), so the host
-- tables are sorted once, not per scope.
local function measure(trace, ops, args, min, figures)
  host.prefetch(trace)
  local scopes, parts, swept = {}, {}, nil
  -- (the streams' groups first, when wanted: the devices' are theirs grouped)
  local streams = wanted(args.scope, "stream") and scope_groups(ops, scope_keys("stream")) or nil
  for _, scope in ipairs{"device", "stream"} do
    if wanted(args.scope, scope) then
      local keys = scope_keys(scope)
      local gr = scope == "stream" and streams or scope_groups(ops, keys, streams)
      local s, d, all_gaps
      s, d, all_gaps, swept = scope_gaps(ops, keys, gr, min, figures and scope == "device", swept)
      scopes[#scopes + 1] = {scope = scope, keys = keys, s = s, d = d, all_gaps = all_gaps}
      parts[#parts + 1] = d:select{"report", "pid", "start", "stop", "dur", "api"}
    end
  end
  local sources = host.sources(trace)
  if #parts == 0 then return scopes, sources, nil end
  local by_launcher = args.threads == "launcher"
  local calls, others = {}, {}
  for _, src in ipairs(sources) do
    if src.key == "api" then calls[1] = src else others[#others + 1] = src end
  end
  local a = nsl.concat_tables(parts)
  -- the thread that launched the operation after each gap: its launching call's (nsl.host.launcher's join of
  -- report, pid and correlation id, made once per trace for every operation by nsl.gpu_ops.api_rows)
  trace.api:load{"tid"}
  -- (in a trace of one report the rows found are kept in the column cache for the next run: nsl.host.attribute)
  a = host.attribute(a:with("launch_tid", trace.api.tid:gather(a.api)), calls, by_launcher,
                     {trace = trace, name = "gaps.calls"})
  local cols = attributed(calls)
  cols[#cols + 1] = "launch_tid"
  hand_back(scopes, a, cols)
  local causes = causes_of(scopes[1].d)
  if args.n > 0 then
    for _, sc in ipairs(scopes) do sc.d = sc.d:head(args.n) end
  end
  if #others > 0 then
    local listed = {}
    for i, sc in ipairs(scopes) do listed[i] = sc.d:select{"report", "pid", "start", "stop", "dur", "launch_tid"} end
    hand_back(scopes, host.attribute(nsl.concat_tables(listed), others, by_launcher,
                                     {trace = trace, name = "gaps.listed"}), attributed(others))
  end
  return scopes, sources, causes
end

-- The columns (name, type) of the tables a distributed run's processes
-- send: per scope the summary and the gaps (every CPU-side source's
-- columns: nsl.host.covering_nothing where a process's reports have none of
-- its rows), and gap_causes' sums; integers as i64.
local function wire_columns(what, scope)
  local cols = {{"report", "i64"}, {"device", "i64"}}
  if scope == "stream" then cols[#cols + 1] = {"stream", "i64"} end
  local more
  if what == "sum" then
    more = {{"ops", "i64"}, {"span", "i64"}, {"busy", "i64"}, {"idle", "i64"}, {"idle_pct", "f64"}, {"n", "i64"},
            {"bigtime", "i64"}, {"largest", "i64"}}
  elseif what == "gaps" then
    more = {{"start", "i64"}, {"stop", "i64"}, {"dur", "i64"}, {"before", "str"}, {"after", "str"}, {"pid", "i64"},
            {"launch_tid", "i64"}}
    for _, k in ipairs(host.keys) do
      for _, c in ipairs{{"_text", "str"}, {"_tid", "i64"}, {"_ov", "i64"}, {"_cover", "f64"}} do
        more[#more + 1] = {k .. c[1], c[2]}
      end
    end
  else
    cols, more = {{"report", "i64"}}, {{"call", "str"}, {"n", "i64"}, {"total", "i64"}, {"ov", "i64"}}
  end
  for _, c in ipairs(more) do cols[#cols + 1] = c end
  return cols
end

-- Table t (rows of it, or nil: none) with exactly the columns cols
-- (wire_columns), each of its type (a column t lacks: NULL).
local function shaped(t, cols)
  local n = t and #t or 0
  local out = {}
  for _, c in ipairs(cols) do
    local name, ty = c[1], c[2]
    local v = t and t:coltype(name) and t[name]
    if v then
      if ty ~= "str" and v:type() ~= ty then v = v:cast(ty) end
    else
      v = nsl.column{ty == "str" and "" or (ty == "f64" and 0.0 or 0)}:gather(nsl.rep(-1, n))
    end
    out[#out + 1] = {name, v}
  end
  return nsl.table(out)
end

--- The distributed step (nsl.distributed): the gaps of the process's
-- reports, every scope wanted (measure), sent as their summaries, their
-- args.n largest gaps (all with n 0) and gap_causes' sums (shaped, so that
-- every process sends the same columns; gp_ok 0: a bad argument, which
-- rank 0 then fails with as one process does).
local function step(trace, args)
  local okm, min = pcall(units.duration_arg, args, "min")
  local ok = okm and pcall(wanted, args.scope, "device")
  local t = {gp_ok = nsl.table{{"ok", nsl.rep(ok and 1 or 0, 1)}}, gp_causes = shaped(nil, wire_columns("causes")),
             gp_span = distributed.span_table(trace)}
  for _, scope in ipairs{"device", "stream"} do
    t["gp_" .. scope .. "_sum"] = shaped(nil, wire_columns("sum", scope))
    t["gp_" .. scope] = shaped(nil, wire_columns("gaps", scope))
  end
  local ops = ok and busy_ops(trace)
  if not ops or #ops == 0 then return t end
  local scopes, _, causes = measure(trace, ops, args, min)
  for i, sc in ipairs(scopes) do
    t["gp_" .. sc.scope .. "_sum"] = shaped(sc.s, wire_columns("sum", sc.scope))
    t["gp_" .. sc.scope] = shaped(host.covering_nothing(sc.d, host.keys), wire_columns("gaps", sc.scope))
    if i == 1 then t.gp_causes = shaped(causes, wire_columns("causes")) end
  end
  return t
end

--- What a distributed run's processes sent (step), as measure gives it
-- (without all_gaps: a run with figures reads the trace instead), and
-- gap_causes' sums; nil when they found no operation or an argument was bad.
local function received(trace, args, parts)
  if not parts or not parts.gp_ok or parts.gp_ok.ok:min() ~= 1 then return nil end
  if #parts.gp_device_sum + #parts.gp_stream_sum == 0 then return nil end
  distributed.set_span(trace, parts.gp_span)   -- (the gaps' "At": from the trace's start, read by no process again)
  local scopes = {}
  for _, scope in ipairs{"device", "stream"} do
    if wanted(args.scope, scope) then
      local keys = scope_keys(scope)
      local d = parts["gp_" .. scope]:sort("-dur", "start", table.unpack(keys))
      scopes[#scopes + 1] = {scope = scope, keys = keys, s = parts["gp_" .. scope .. "_sum"]:sort(table.unpack(keys)),
                             d = args.n > 0 and d:head(args.n) or d}
    end
  end
  return scopes, parts.gp_causes
end

return {
  name = "gaps",
  description = "GPU idle gaps per device and stream, with the CUDA API call, OS call and NVTX range the CPU was in",
  args = {
    min = {default = "100us", help = "list and count gaps longer than this (ns, or with a unit: 10us, 1ms)"},
    n = {default = 20, help = "largest gaps listed per scope (0: all)"},
    scope = {default = "device,stream", help = "comma list of scopes: device, stream"},
    threads = {default = "process", choices = {"process", "launcher"}, help = "attribute gaps to calls on any thread of the process (process) " ..
               "or only on the thread that launched the operation after the gap (launcher)"},
    per_report = {default = false, help = "the gap-cause table per report instead of over all reports"},
    warn_idle = {default = 50, help = "idle % of a device's active span above which a warning is raised (0: never)"},
  },
  example = "nsl run gaps trace.sqlite --arg min=1ms --arg scope=device",
  -- parts: a distributed run's gaps, found by the processes (step)
  run = function(trace, args, out, parts)
    local min = units.duration_arg(args, "min")
    local scopes, causes = nil, nil
    if not out:carries_figures() then scopes, causes = received(trace, args, parts) end
    local sources
    if scopes then
      sources = host.present(trace)
    else
      local ops = busy_ops(trace)
      if #ops == 0 then
        return jax.no_cuda_activity(trace, out, "no GPU activity (no kernels, memory copies or memsets)",
                                    "jax_flamegraph")
      end
      scopes, sources, causes = measure(trace, ops, args, min, out:carries_figures())
    end
    local mintext = report.duration(min)
    local first_detail = true
    for _, sc in ipairs(scopes) do
      do
        local scope, s, d, all_gaps = sc.scope, sc.s, sc.d, sc.all_gaps
        if scope == "device" and all_gaps then   -- every idle gap of every device, on logarithmic bins
          out:figure("gap_durations", function(format)
            return require("nsl.plot").histogram(all_gaps, {format = format, log = true, bins = 40, unit = "ns",
              xlabel = "gap (idle time between two operations of a device)", ylabel = "gaps",
              title = string.format("GPU idle gaps per device: %d gaps, %d longer than %s", all_gaps:gt(0):count(),
                                    all_gaps:gt(min):count(), mintext)})
          end, {title = "GPU idle gap durations"})
        end
        local cols = {{"report", report_names(trace, s.report)}, {"device", s.device}}
        if scope == "stream" then cols[#cols + 1] = {"stream", s.stream} end
        for _, c in ipairs{{"Ops", s.ops}, {"Span (ns)", s.span}, {"Busy (ns)", s.busy}, {"Idle (ns)", s.idle},
                           {"Idle (%)", s.idle_pct}, {"Gaps", s.n}, {"Gap time (ns)", s.bigtime},
                           {"Largest gap (ns)", s.largest}} do
          cols[#cols + 1] = c
        end
        local summary = nsl.table(cols)
        out:table("gaps_" .. scope .. "_summary", summary,
                  {title = string.format("GPU idle time per %s between its first and last operation; " ..
                                         "Gaps: those longer than %s", scope, mintext)})
        if scope == "device" and args.warn_idle > 0 then
          for i = 1, #summary do
            findings.above(out, s.idle_pct[i], {warning = args.warn_idle}, "gpu_idle",
              "%s device %s is idle %.1f%% of its active span (%s gaps longer than %s)",
              -- an nsys stats CSV file may give no device (its column empty or left out): "?"
              summary.report[i], summary.device[i] or "?", s.idle_pct[i], report.int(s.n[i]), mintext)
          end
        end
        local list = {{"report", report_names(trace, d.report)}, {"device", d.device}}
        if scope == "stream" then list[#list + 1] = {"stream", d.stream} end
        -- At: from the trace's first event, as diagnose, timeline and the TUI count; Start: session time
        local origin = require("nsl.window").origin(trace) or 0
        for _, c in ipairs{{"At (ns from start)", d.start - origin}, {"Start (ns)", d.start}, {"Gap (ns)", d.dur},
                           {"Before", d.before}, {"After", d.after},
                           {"PID", d.pid}, {"Launch TID", d.launch_tid}} do
          list[#list + 1] = c
        end
        for _, src in ipairs(sources) do
          list[#list + 1] = {src.label, d[src.key .. "_text"]}
          if src.key ~= "nvtx" then list[#list + 1] = {src.label .. " TID", d[src.key .. "_tid"]} end
          list[#list + 1] = {src.label .. " (% of gap)", d[src.key .. "_cover"]}
        end
        local shown = args.n > 0 and nsl.table(list):head(args.n) or nsl.table(list)
        out:table("gaps_" .. scope, shown,
                  {title = string.format("Largest GPU gaps per %s longer than %s, with the CPU call that overlapped " ..
                                         "most (At: from the trace's start; Start: session time)", scope, mintext)})
        if first_detail and #sources > 0 and sources[1].key == "api" then
          first_detail = false
          -- what the process's threads were in during the gaps, by CUDA API call
          local ck = args.per_report and {"report", "call"} or {"call"}
          local c = causes:group_by(table.unpack(ck)):agg{"n=sum(n)", "total=sum(total)", "ov=sum(ov)"}
                      :sort("-total", table.unpack(ck))
          local grand = c.total:sum()
          local names = c.call:totable()
          for i = 1, #c do names[i] = names[i] or "(no CUDA API call)" end
          local cc = {}
          if args.per_report then cc[1] = {"report", report_names(trace, c.report)} end
          for _, x in ipairs{{"CUDA API call", nsl.column(names)}, {"Gaps", c.n}, {"Gap time (ns)", c.total},
                             {"Share (%)", grand > 0 and c.total * 100.0 / grand or nsl.rep(0.0, #c)},
                             {"In the call (%)", c.ov * 100.0 / c.total}} do
            cc[#cc + 1] = x
          end
          out:table("gap_causes", nsl.table(cc),
                    {title = string.format("GPU gaps (per %s, longer than %s) by the CUDA API call that " ..
                                           "overlapped each most; In the call: the share of their time inside it",
                                           scope, mintext)})
        end
      end
    end
  end,
  -- distributed (nsl.distributed): each process finds the gaps of its reports and what its hosts did in them,
  -- and sends the summaries, the largest gaps and gap_causes' sums instead of its operations and host tables
  -- (a run with figures, which draw every gap, reads them instead)
  distributed = {step = step},
}
