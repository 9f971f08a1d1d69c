-- nsl.trace_events -- a trace, or a time window of it, as Chrome / Perfetto
-- trace-event JSON (ui.perfetto.dev and chrome://tracing open it): kernels,
-- memcpy and memset on one track per GPU stream (a process per GPU), CUDA
-- API calls and NVTX ranges on their CPU threads (a process per OS
-- process), with names and arguments, arrows from each launch to the GPU
-- work it started, and metadata events naming every process and thread.
-- Timestamps are µs on the trace's clock with ns precision ("ts":
-- 1234.567).  The JSON text is built by C over whole columns, a million
-- rows at a time, and handed piece by piece to the export analysis's writer.
local nsl = require("nsl")
local gpu_ops = require("nsl.gpu_ops")
local report = require("nsl.report")
local window = require("nsl.window")

local M = {}

local fmt, concat = string.format, table.concat

-- Synthetic ids: GPUs and their streams are processes and threads of their
-- own; OS pids and tids are kept unless two reports share one.  Perfetto
-- reads ids as 32-bit numbers, so all stay below 2^31.
local GPU_PID0, GPU_TID0, REMAP0 = 1000000000, 1100000000, 2000000000

--- Rows of t (columns cols) in the window, or every row when whole.
local function rows(t, cols, from, to, whole)
  if #t == 0 then return nil end
  if whole then return t:select(cols) end
  return window.rows(t, cols, from, to)
end

--- Group ids over the concatenation of tables (keys names), split back into
-- one id column per table, and the groups' keys sorted (each with `id`).
local function group_tables(list, names)
  local g = nsl.concat_tables(list, names):group_by(table.unpack(names))
  local ids, keys, kt = g:ids(), {}, g:keys()
  for i = 1, #kt do
    local row = {id = i - 1}
    for _, n in ipairs(names) do row[n] = kt[n][i] end
    keys[i] = row
  end
  local per, off = {}, 0
  for i, t in ipairs(list) do
    per[i] = #list == 1 and ids or ids:gather(nsl.range(#t) + off)
    off = off + #t
  end
  table.sort(keys, function(a, b)
    for _, n in ipairs(names) do
      local x, y = a[n] or -1, b[n] or -1
      if x ~= y then return x < y end
    end
    return false
  end)
  return per, keys
end

--- A column mapping each row's group (ids) to value_of[group id + 1].
local function by_group(ids, value_of) return nsl.column(value_of):gather(ids) end

local function lookup(t, keys, value)
  local map = {}
  if #t == 0 then return map end
  local cols = {}
  for i, k in ipairs(keys) do cols[i] = k end
  cols[#cols + 1] = value
  t:load(cols)
  for i = 1, #t do
    local parts = {}
    for j, k in ipairs(keys) do parts[j] = tostring(t[k][i]) end
    map[concat(parts, "/")] = t[value][i]
  end
  return map
end

--- Rows formatted at once: a text of a few tens of MB at a time (a million
-- rows, a few hundred MB of text and the buffer it grew in, doubled the
-- peak of an export of 1 GB: 1,165 MiB with these, 2,168 MiB with those).
M.PIECE_ROWS = 100000

--- trace_events.write(trace, opts, write) -> what was written: a list of
-- {category, events, total ns} (kernel, memcpy, memset, cuda_api, nvtx,
-- nvtx_mark, then "launch (flows)").  Writes the trace-event JSON text of
-- the window [opts.from, opts.to) (opts.whole: the whole trace, every row)
-- through write(piece), in order, M.PIECE_ROWS rows at most per piece:
-- gigabytes of JSON are never held whole.  opts.api, opts.nvtx,
-- opts.flows: include CUDA API calls, NVTX ranges and marks, launch arrows;
-- fails (nsl.fail) above opts.max_events events, before anything is
-- written.
function M.write(trace, opts, write)
  local whole, from, to = opts.whole, opts.from, opts.to
  local k = rows(trace.kernels, {"report", "pid", "device", "stream", "corr", "start", "stop", "dur", "name",
                                 "demangled", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "regs",
                                 "smem_static", "smem_dynamic"}, from, to, whole)
  local m = rows(trace.memcpy, {"report", "pid", "device", "stream", "corr", "start", "stop", "dur", "bytes", "kind"},
                 from, to, whole)
  local s = rows(trace.memset, {"report", "pid", "device", "stream", "corr", "start", "stop", "dur", "bytes"},
                 from, to, whole)
  local a = opts.api and rows(trace.api, {"report", "pid", "tid", "corr", "start", "stop", "dur", "name", "ret"},
                              from, to, whole) or nil
  local nv, marks
  if opts.nvtx and #trace.nvtx > 0 then
    local all = trace.nvtx:select{"report", "pid", "tid", "start", "stop", "dur", "text", "domain", "kind"}
    local is_mark = all.kind:eq("mark")
    local rk, mk = ~is_mark & all.stop:ge(all.start), is_mark   -- one mask each: a single copy of the rows
    if not whole then
      rk = rk & all.start:lt(to) & all.stop:gt(from)
      mk = mk & all.start:ge(from) & all.start:lt(to)
    end
    local nr, nm = rk:count(), mk:count()
    nv = nr > 0 and (nr == #all and all or all:filter(rk)) or nil
    marks = nm > 0 and all:filter(mk) or nil
  end
  local total = 0
  for _, t in ipairs({k or false, m or false, s or false, a or false, nv or false, marks or false}) do
    if t then total = total + #t end
  end
  if total > opts.max_events then
    nsl.fail(fmt("the export would hold %s events, more than --arg max_events=%s: choose a window with " ..
                 "--arg from=... --arg to=..., or raise max_events", report.int(total), report.int(opts.max_events)))
  end
  local names = {}
  local r = trace.reports
  for i = 1, #r do names[r.report[i]] = r.name[i] end
  local multi = trace:nreports() > 1
  local function rname(rep) return multi and (names[rep] or tostring(rep)) .. " " or "" end
  local meta = {}
  local function metadata(name, pid, tid, value)
    meta[#meta + 1] = report.json({name = name, ph = "M", pid = pid, tid = tid, args = {[name:match("sort") and
                                   "sort_index" or "name"] = value}})
  end
  -- the events of every part, as nsl.format_rows arguments: formatted (in pieces) once the metadata is out
  local parts = {}
  local function add(template, cols, mask) parts[#parts + 1] = {template, cols, mask} end
  local summary = {}
  local function count(cat, t, durcol)
    local st = t and durcol and durcol:stats() or {count = 0, sum = 0}
    summary[#summary + 1] = {cat, t and #t or 0, st.sum or 0}
  end

  -- GPU: a process per (report, device), a thread per stream
  local gpu = {}
  for _, t in ipairs({k or false, m or false, s or false}) do if t then gpu[#gpu + 1] = t end end
  local gpu_pid, gpu_tid = {}, {}
  if #gpu > 0 then
    local per, keys = group_tables(gpu, {"report", "device", "stream"})
    local devnames = lookup(trace.devices, {"report", "device"}, "name")
    local pid_of_dev, pid_of, tid_of, ndev = {}, {}, {}, 0
    for lane, key in ipairs(keys) do
      local dk = fmt("%s/%s", key.report, key.device)
      if not pid_of_dev[dk] then
        ndev = ndev + 1
        pid_of_dev[dk] = GPU_PID0 + ndev
        local dn = devnames[dk]
        metadata("process_name", GPU_PID0 + ndev, 0, fmt("%sGPU %s%s", rname(key.report), tostring(key.device),
                                                          dn and ": " .. dn or ""))
        metadata("process_sort_index", GPU_PID0 + ndev, 0, 1000 + ndev)
      end
      pid_of[key.id + 1], tid_of[key.id + 1] = pid_of_dev[dk], GPU_TID0 + lane
      metadata("thread_name", pid_of_dev[dk], GPU_TID0 + lane, fmt("stream %s", tostring(key.stream)))
      metadata("thread_sort_index", pid_of_dev[dk], GPU_TID0 + lane, lane)
    end
    for i, t in ipairs(gpu) do
      gpu_pid[t], gpu_tid[t] = by_group(per[i], pid_of), by_group(per[i], tid_of)
    end
  end
  if k then
    add('{"ph":"X","cat":"kernel","name":%S,"pid":%d,"tid":%d,"ts":%t,"dur":%t,"args":{' ..
      '"demangled":%s,"corr":%d,"device":%d,"stream":%d,"grid":[%d,%d,%d],"block":[%d,%d,%d],' ..
      '"registers":%d,"smem_static":%d,"smem_dynamic":%d}}',
      {k.name, gpu_pid[k], gpu_tid[k], k.start, k.dur, k.demangled, k.corr, k.device, k.stream, k.grid_x, k.grid_y,
       k.grid_z, k.block_x, k.block_y, k.block_z, k.regs, k.smem_static, k.smem_dynamic})
  end
  count("kernel", k, k and k.dur)
  if m then
    local label = gpu_ops.memcpy_labels(m.kind, "terse")
    add('{"ph":"X","cat":"memcpy","name":%S,"pid":%d,"tid":%d,"ts":%t,"dur":%t,"args":{' ..
      '"bytes":%d,"kind":%s,"corr":%d,"device":%d,"stream":%d}}',
      {label, gpu_pid[m], gpu_tid[m], m.start, m.dur, m.bytes, m.kind, m.corr, m.device, m.stream})
  end
  count("memcpy", m, m and m.dur)
  if s then
    add('{"ph":"X","cat":"memset","name":"' .. gpu_ops.label(nil, "terse") .. '","pid":%d,"tid":%d,"ts":%t,"dur":%t,"args":{' ..
      '"bytes":%d,"corr":%d,"device":%d,"stream":%d}}',
      {gpu_pid[s], gpu_tid[s], s.start, s.dur, s.bytes, s.corr, s.device, s.stream})
  end
  count("memset", s, s and s.dur)

  -- CPU: a process per (report, pid), a thread per tid
  local cpu = {}
  for _, t in ipairs({a or false, nv or false, marks or false}) do if t then cpu[#cpu + 1] = t end end
  local cpu_pid, cpu_tid = {}, {}
  if #cpu > 0 then
    local per, keys = group_tables(cpu, {"report", "pid", "tid"})
    local pnames = lookup(trace.processes, {"report", "pid"}, "name")
    local tnames = lookup(trace.threads, {"report", "pid", "tid"}, "name")
    local pid_used, tid_used, pid_of_proc, pid_of, tid_of, nremap, nproc = {}, {}, {}, {}, {}, 0, 0
    for _, key in ipairs(keys) do
      local pk = fmt("%s/%s", key.report, key.pid)
      if not pid_of_proc[pk] then
        local p = key.pid
        if not p or p <= 0 or p >= GPU_PID0 or pid_used[p] then nremap, p = nremap + 1, REMAP0 + nremap + 1 end
        pid_used[p], pid_of_proc[pk] = true, p
        nproc = nproc + 1
        local pn = pnames[pk]
        metadata("process_name", p, 0, fmt("%s%s (pid %s)", rname(key.report), pn or "process", tostring(key.pid)))
        metadata("process_sort_index", p, 0, nproc)
      end
      local p, t = pid_of_proc[pk], key.tid
      if not t or t <= 0 or t >= GPU_PID0 or tid_used[t] then nremap, t = nremap + 1, REMAP0 + nremap + 1 end
      tid_used[t] = true
      pid_of[key.id + 1], tid_of[key.id + 1] = p, t
      local tn = tnames[fmt("%s/%s/%s", key.report, key.pid, key.tid)]
      metadata("thread_name", p, t, fmt("%s (tid %s)", tn or "thread", tostring(key.tid)))
    end
    for i, t in ipairs(cpu) do
      cpu_pid[t], cpu_tid[t] = by_group(per[i], pid_of), by_group(per[i], tid_of)
    end
  end
  if a then
    add('{"ph":"X","cat":"cuda_api","name":%S,"pid":%d,"tid":%d,"ts":%t,"dur":%t,"args":{' ..
      '"corr":%d,"ret":%d}}', {a.name, cpu_pid[a], cpu_tid[a], a.start, a.dur, a.corr, a.ret})
  end
  count("cuda_api", a, a and a.dur)
  if nv then
    local push = nv.kind:ne("start_end")
    add('{"ph":"X","cat":"nvtx","name":%S,"pid":%d,"tid":%d,"ts":%t,"dur":%t,"args":{"domain":%s}}',
      {nv.text, cpu_pid[nv], cpu_tid[nv], nv.start, nv.dur, nv.domain}, push)
    -- start/end ranges need not nest on their thread: async begin/end pairs
    local se = ~push
    if se:count() > 0 then
      local id = nsl.range(#nv) + 1
      add('{"ph":"b","cat":"nvtx","id":%d,"name":%S,"pid":%d,"tid":%d,"ts":%t,"args":{"domain":%s}}',
        {id, nv.text, cpu_pid[nv], cpu_tid[nv], nv.start, nv.domain}, se)
      add('{"ph":"e","cat":"nvtx","id":%d,"name":%S,"pid":%d,"tid":%d,"ts":%t}',
        {id, nv.text, cpu_pid[nv], cpu_tid[nv], nv.stop}, se)
    end
  end
  count("nvtx", nv, nv and nv.dur)
  if marks then
    add('{"ph":"i","s":"t","cat":"nvtx_mark","name":%S,"pid":%d,"tid":%d,"ts":%t,' ..
      '"args":{"domain":%s}}', {marks.text, cpu_pid[marks], cpu_tid[marks], marks.start, marks.domain})
  end
  count("nvtx_mark", marks, nil)

  -- launch -> GPU work arrows, where both ends are in the export
  local nflows = 0
  if opts.flows and a and #gpu > 0 then
    local launches = nsl.table{{"report", a.report}, {"corr", a.corr}, {"start", a.start},
                               {"pid", cpu_pid[a]}, {"tid", cpu_tid[a]}}
    for _, t in ipairs(gpu) do
      local j = nsl.table{{"report", t.report}, {"corr", t.corr}, {"start", t.start}, {"pid", gpu_pid[t]},
                          {"tid", gpu_tid[t]}}:join(launches, {"report", "corr"}, {"start", "pid", "tid"}, "api_")
      local has = ~j.api_start:isnull()
      local n = has:count()
      if n > 0 then
        local id = j.report:cast("i64") * 1099511627776 + j.corr   -- corr ids are per report
        add('{"ph":"s","cat":"launch","name":"launch","id":%d,"pid":%d,"tid":%d,"ts":%t}',
          {id, j.api_pid, j.api_tid, j.api_start}, has)
        add('{"ph":"f","bp":"e","cat":"launch","name":"launch","id":%d,"pid":%d,"tid":%d,"ts":%t}',
          {id, j.pid, j.tid, j.start}, has)
        nflows = nflows + n
      end
    end
  end

  local other = {tool = "nsl " .. nsl.version, window_ns = {from, to}, whole_trace = whole}
  summary[#summary + 1] = {"launch (flows)", nflows, 0}
  -- every event joined by ",\n": the metadata first, then each part's rows PIECE_ROWS at a time
  write('{"traceEvents":[\n')
  local any = #meta > 0
  if any then write(concat(meta, ",\n")) end
  for _, p in ipairs(parts) do
    local template, cols, mask = p[1], p[2], p[3]
    local n = #cols[1]
    for first = 0, n - 1, M.PIECE_ROWS do
      local text = nsl.format_rows(template, cols, ",\n", mask, first, M.PIECE_ROWS)
      if #text > 0 then
        if any then write(",\n") end
        write(text)
        any = true
      end
    end
  end
  write('\n],\n"displayTimeUnit":"ns",\n"otherData":' .. report.json(other) .. "}\n")
  return summary
end

return M
