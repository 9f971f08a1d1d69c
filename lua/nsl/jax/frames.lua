-- nsl.jax.frames -- nsys-jax's data frames from a trace: the XLA dumps of
-- a trace (hlo_store), the NVTX ranges projected onto the GPU (gpu_ranges),
-- the module, thunk and communication frames (gpu_frames) and the compile
-- frame, with the column helpers they share.  See nsl.jax (the face of the
-- nsys-jax modules) for the frames' meaning.
local nsl = require("nsl")
local nvtx = require("nsl.nvtx")
local gpu_ops = require("nsl.gpu_ops")

local M = {}

local MS = 1e-6   -- ns -> ms

--- A column of fn(i) over the rows of keys (a group_by's keys table), spread to
-- every row through ids; fn returns nil for NULL.  kind ("str", "int", "num",
-- "bool") types an all-NULL result.
local function derive(nkeys, ids, fn, kind)
  local vals, code, n = {}, {}, 0
  local index = {}
  for i = 1, nkeys do
    local v = fn(i)
    if v == nil or v ~= v then code[i] = -1
    else
      local at = index[v]
      if not at then
        n = n + 1
        vals[n] = v
        at = n - 1
        index[v] = at
      end
      code[i] = at
    end
  end
  if n == 0 then   -- typed by kind (an and/or chain cannot yield false)
    if kind == "str" then vals[1] = "" elseif kind == "num" then vals[1] = 0.0
    elseif kind == "bool" then vals[1] = false else vals[1] = 0 end
  end
  return nsl.column(vals):gather(nsl.column(code):gather(ids))
end
M.derive = derive

--- Groups t by keys and maps every group through fn(keys_table, i) -> value.
local function per_group(t, keys, fn, kind)
  local g = t:group_by(table.unpack(keys))
  local k = g:keys()
  return derive(#k, g:ids(), function(i) return fn(k, i) end, kind), g
end
M.per_group = per_group

--- A table of columns of t: spec is a list of names or {new_name, old_name}.
local function pick(t, spec)
  local cols = {}
  for i, c in ipairs(spec) do
    if type(c) == "table" then cols[i] = {c[1], t[c[2]]} else cols[i] = {c, t[c]} end
  end
  return nsl.table(cols)
end
M.pick = pick

local function starts(s, prefix) return s:sub(1, #prefix) == prefix end

-- ---------------------------------------------------------------- XLA dumps

--- The parts of an XLA dump file name (its last path component):
-- module_<id>.<rest>.hlo.pb[.xz].  `nsl combine` renames a clashing member
-- by a tag before its last extension (".rank<N>" or "~<input>", then
-- "-<k>"): returns id, rest, xz (bool) and the tag's rank (nil without one,
-- false for a "~" tag); nil when the name is not an HloProto dump.
function M.parse_dump_name(base)
  local id, rest, tail = base:match("^module_(%d+)%.(.+)%.hlo([.~].*)$")
  if not id then return nil end
  local rank
  local clean, n = tail:gsub("%.rank(%d+)%-?%d*(%.%w+)$", "%2")
  if n > 0 then rank = tonumber(tail:match("%.rank(%d+)%-?%d*%.%w+$"))
  else
    clean, n = tail:gsub("~%d+%-?%d*(%.%w+)$", "%1")
    if n > 0 then rank = false end
  end
  if clean ~= ".pb" and clean ~= ".pb.xz" then return nil end
  return tonumber(id), rest, clean == ".pb.xz", rank
end

-- The after-optimizations dumps of the reports that come from nsl bundles
-- (trace:members, meta/xla_dump/[<folder>/]module_*.hlo.pb[.xz]): a
-- list per report of {id, rest, member, specific, load}.  A dump belongs to
-- the reports of its own bundle: to the one report it names -- a folder
-- "rank<N>", "<N>" or the report's name, or the rank tag of `nsl combine`'s
-- renaming -- (specific), else to every report of the bundle (shared).
local function bundle_dumps(trace, files)
  local rt = trace.reports
  local paths, ranks, names = rt.path:totable(), rt.rank:totable(), rt.name:totable()
  local pending = false
  for r = 0, #rt - 1 do if #files[r] == 0 then pending = true end end
  if not pending then return end
  -- the reports without dumps of each input (a bundle: the reports whose path is the bundle's, then ':'), by
  -- each ':' of a report's path: O(reports), not a test of every report for every input
  local inputs, is_input, mine_of = trace:inputs(), {}, {}
  for _, b in ipairs(inputs) do is_input[b] = true end
  for r = 0, #rt - 1 do
    if #files[r] == 0 then
      local p, at = paths[r + 1], 1
      while true do
        local c = p:find(":", at, true)
        if not c then break end
        local b = p:sub(1, c - 1)
        if is_input[b] then mine_of[b] = mine_of[b] or {}; table.insert(mine_of[b], r) end
        at = c + 1
      end
    end
  end
  for _, b in ipairs(inputs) do
    local mine = mine_of[b] or {}
    if #mine > 0 then
      local first = mine[1]   -- the reports of one bundle see the same members
      local rels = {}
      for _, name in ipairs(trace:members(first, "meta/")) do rels[#rels + 1] = name:sub(#"meta/" + 1) end
      table.sort(rels)
      local function named(sub, r)
        local rank = ranks[r + 1]
        if rank ~= nil and rank < 0 then rank = nil end
        return sub == names[r + 1] or (rank ~= nil and (sub == "rank" .. rank or sub == tostring(rank)))
      end
      for _, rel in ipairs(rels) do
        local sub, base = rel:match("^xla_dump/(.-)/?([^/]+)$")
        local id, rest, _, tag = M.parse_dump_name(base or "")
        if id and rest:find("after_optimizations", 1, true) then
          sub = sub ~= "" and sub:match("^[^/]+") or nil
          local owner   -- the one report the dump names, or nil
          local claimed = tag ~= nil and tag ~= false
          if claimed then
            for _, r in ipairs(mine) do if ranks[r + 1] == tag then owner = r end end
          elseif sub then
            for _, r in ipairs(mine) do if named(sub, r) then owner = r; claimed = true end end
          end
          local function load()   -- a damaged bundle fails; a dump that does not decode is no dump
            local bytes, err = trace:member(first, "meta/" .. rel)
            if not bytes then nsl.fail(err) end
            return nsl.hlo_decode(bytes, b .. ":meta/" .. rel)
          end
          for _, r in ipairs(mine) do
            if (claimed and owner == r) or not claimed then
              local list = files[r]
              list[#list + 1] = {id = id, rest = rest, member = "meta/" .. rel, specific = claimed, load = load}
            end
          end
        end
      end
    end
  end
end

--- The HLO metadata of a trace: per report, the after-optimizations dumps by
-- (program id, module name), decoded on demand and cached.  An nsys-jax
-- report's are its dump/ members (.hlo.pb.xz); a report of an nsl bundle
-- takes them from the bundle's meta/xla_dump/ (raw .hlo.pb or .hlo.pb.xz;
-- see bundle_dumps for which report a dump belongs to).
function M.hlo_store(trace)
  local store = {trace = trace, files = {}, decoded = {}, fp = {}}
  local rt = trace.reports
  for r = 0, #rt - 1 do
    local files = {}
    for _, name in ipairs(trace:members(r, "dump/")) do
      local id, rest = name:match("^dump/module_(%d+)%.(.+)%.hlo%.pb%.xz$")
      if id and rest:find("after_optimizations", 1, true) then
        files[#files + 1] = {id = tonumber(id), rest = rest, member = name, specific = true}
      end
    end
    store.files[r] = files
  end
  bundle_dumps(trace, store.files)

  --- The member of report r for program id `id` named `name`, or nil: the
  -- one dump that names the report, else the one shared dump (none when
  -- several match).
  function store.member(r, id, name)
    for _, specific in ipairs{true, false} do
      local found
      for _, f in ipairs(store.files[r] or {}) do
        if f.specific == specific and f.id == id and starts(f.rest, name .. ".") then
          if found then return nil end   -- not unique
          found = f.member
        end
      end
      if found then return found end
    end
    return nil
  end

  --- The decoded module of report r, member m (cached).
  function store.module(r, m)
    local key = r .. "\0" .. m
    local h = store.decoded[key]
    if h == nil then
      local load
      for _, f in ipairs(store.files[r] or {}) do if f.member == m then load = f.load end end
      if load then h = load() or false else h = trace:hlo(r, m) or false end
      store.decoded[key] = h
    end
    return h or nil
  end

  --- Fingerprint of (report, id, name): "unknown" without a dump.
  function store.fingerprint(r, id, name)
    if not id then return "unknown" end
    local key = r .. "\0" .. id .. "\0" .. name
    local fp = store.fp[key]
    if fp then return fp end
    local m = store.member(r, id, name)
    local h = m and store.module(r, m)
    fp = h and h:info().fingerprint or ""
    if fp == "" then fp = "unknown" end
    store.fp[key] = fp
    store.by_fp = store.by_fp or {}
    local list = store.by_fp[fp] or {}
    store.by_fp[fp] = list
    local seen = false
    for _, e in ipairs(list) do seen = seen or (e.r == r and e.m == m) end
    if m and not seen then list[#list + 1] = {r = r, m = m} end
    return fp
  end

  --- The decoded modules of a fingerprint (one per distinct dump seen).
  function store.modules(fp)
    local out = {}
    for _, e in ipairs((store.by_fp or {})[fp] or {}) do out[#out + 1] = store.module(e.r, e.m) end
    return out
  end
  return store
end

-- ---------------------------------------------------------------- GPU frames

--- Device of every thread that launched GPU work: the global device of an
-- XlaLauncher thread (its name, as nsys-jax reads it), else the CUDA device
-- of the operations the thread launched (the smallest when several).  When
-- two reports would share a device number (one GPU per process, each
-- process's CUDA device 0), the (report, device) pairs are numbered 0, 1, ...
-- in report order instead, so that every device is one device of the run.
-- Returns a table report, pid, tid, device.
local function thread_devices(trace, ops)
  local op_device = gpu_ops.column(trace, "device")   -- per row of ops (nsl.gpu_ops's order)
  local launched = ops.api:ge(0):indices()
  local a = ops.api:gather(launched)
  local api = trace.api
  local per = nsl.table{{"report", api.report:gather(a)}, {"pid", api.pid:gather(a)}, {"tid", api.tid:gather(a)},
                        {"device", op_device:gather(launched)}}
    :group_by("report", "pid", "tid"):agg{"device=min(device)"}
  local launchers = M.launcher_devices(trace)
  local rep, pid, tid, dev = per.report:totable(), per.pid:totable(), per.tid:totable(), per.device:totable()
  local owner, clash = {}, false
  for i = 1, #per do
    local l = launchers[rep[i]]
    local d = l and l[pid[i] .. ":" .. tid[i]]
    if d then dev[i] = d end
    if dev[i] ~= nil then
      if owner[dev[i]] ~= nil and owner[dev[i]] ~= rep[i] then clash = true end
      owner[dev[i]] = owner[dev[i]] or rep[i]
    end
  end
  if clash then
    local pairs_, index = {}, {}
    for i = 1, #per do
      local key = rep[i] .. ":" .. tostring(dev[i])
      if dev[i] ~= nil and not index[key] then
        index[key] = true
        pairs_[#pairs_ + 1] = {rep[i], dev[i], key}
      end
    end
    table.sort(pairs_, function(x, y) if x[1] ~= y[1] then return x[1] < y[1] end return x[2] < y[2] end)
    for k, p in ipairs(pairs_) do index[p[3]] = k - 1 end
    for i = 1, #per do if dev[i] ~= nil then dev[i] = index[rep[i] .. ":" .. dev[i]] end end
  end
  local device = derive(#per, nsl.range(#per), function(i) return dev[i] end, "int")
  return nsl.table{{"report", per.report}, {"pid", per.pid}, {"tid", per.tid}, {"device", device:cast("i32")}}
end

--- The NVTX ranges of a trace's exports projected onto the GPU with the
-- columns and meaning of nsys-jax's nvtx_gpu_proj_trace table
-- (trace.gpu_ranges): report, pid, tid, device (thread_devices), start, stop,
-- dur (projected: the first GPU op's start to the last's stop), text
-- ("domain:text", so XLA's ranges read "TSL:XlaModule:#...#" as in
-- nsys-jax's parquet), level (0: outermost), range_id, parent_id (the
-- tightest enclosing range, NULL at the top), orig_start, orig_stop,
-- orig_dur (the host range), num_gpu_ops (launching calls, nsys's
-- NumGPUOps), num_child (child ranges with GPU ops), nvtx_row (0-based row
-- of trace.nvtx).  Only ranges with GPU ops are rows (nsl.nvtx.project's
-- semantics).  range_id numbers the ranges in host order (report, start,
-- longest first), as nsys's ids run; rows are in projected order (report,
-- start, longest first, outer first).
function M.project_gpu_ranges(trace)
  local P = nvtx.project(trace)
  local R = P.ranges
  local keep = (P.mask & R.ops:gt(0)):indices()
  local t = nsl.table{
    {"report", R.report:gather(keep)}, {"pid", R.pid:gather(keep)}, {"tid", R.tid:gather(keep)},
    {"start", R.proj_start:gather(keep)}, {"dur", R.proj_dur:gather(keep)}, {"text", R.name:gather(keep)},
    {"level", R.depth:gather(keep)}, {"orig_start", R.start:gather(keep)}, {"orig_stop", R.stop:gather(keep)},
    {"orig_dur", R.dur:gather(keep)}, {"num_gpu_ops", R.launches:gather(keep)},
    {"num_child", R.children:gather(keep)}, {"nvtx_row", keep}, {"parent_row", R.parent:gather(keep)}}
  t = t:with("stop", t.start + t.dur)
  local host = t:sort("report", "orig_start", "-orig_dur", "level", "nvtx_row")
  t = t:join(nsl.table{{"nvtx_row", host.nvtx_row}, {"range_id", nsl.range(#host)}}, {"nvtx_row"}, {"range_id"})
  t = t:join(nsl.table{{"parent_row", host.nvtx_row}, {"parent_id", nsl.range(#host)}}, {"parent_row"}, {"parent_id"})
  t = t:join(thread_devices(trace, P.ops), {"report", "pid", "tid"}, {"device"})
  t = t:sort("report", "start", "-dur", "level", "range_id")
  return t:select{"report", "pid", "tid", "device", "start", "stop", "dur", "text", "level", "range_id", "parent_id",
                  "orig_start", "orig_stop", "orig_dur", "num_gpu_ops", "num_child", "nvtx_row"}
end

--- The GPU-projected NVTX ranges of a trace: an nsys-jax archive's
-- nvtx_gpu_proj_trace (trace.gpu_ranges), else, for exports with NVTX
-- ranges and GPU work, M.project_gpu_ranges.
function M.gpu_ranges(trace)
  local g = trace.gpu_ranges
  if #g > 0 then
    g:load{"report", "pid", "tid", "device", "start", "stop", "text", "range_id", "parent_id", "orig_start",
           "orig_dur", "num_gpu_ops"}
    return g
  end
  if #trace.nvtx == 0 or #trace.kernels + #trace.memcpy + #trace.memset == 0 then return g end
  return M.project_gpu_ranges(trace)
end

local function parse_module(text, prefix)
  local body = text:match("^" .. prefix:gsub("%p", "%%%0") .. "XlaModule:#(.*)#$")
  if not body then return nil end
  body = body:gsub("^prefix=.-,", "")
  local name, id = body:match("^hlo_module=([%w._-]+),program_id=(%d+)$")
  if not name then name = body:match("^hlo_module=([%w._-]+)$") end
  return name, id and tonumber(id)
end

local function parse_thunk(text, prefix)
  local body = text:match("^" .. prefix:gsub("%p", "%%%0") .. "Thunk:#(.*)#$")
  if not body then return nil end
  return body:match("hlo_op=([%w._-]+)$")
end

--- The device of every thread that launched XLA programs, found as nsys-jax
-- finds it, per report:
--   * with thread metadata naming XlaLauncher threads ("XlaLauncher:#global=N,
--     ...#" in thread-metadata.parquet): such a thread launches for global
--     device N, and the main thread -- the one thread of a program that one
--     thread ran alone, or the one thread whose XlaCompile ranges were
--     projected onto the GPU -- for the report's first launcher's device;
--   * without (nsys-jax releases of mid-2024 write no thread metadata, and an
--     archive may have lost it): the threads that ran a program together with
--     other threads are the process's device launchers, local devices 0, 1, ...
--     in thread-id order; a thread that only ever ran programs alone is the
--     main thread, local device 0.  The report's devices follow those of the
--     reports before it (nsys-jax: process index x devices per process + local
--     device; one process driving several GPUs and one GPU per process alike).
-- launch: keys table report, m_ProgramId, pid, tid (one row per thread of a
-- program); compile: keys table report, pid, tid of the threads with
-- XlaCompile ranges on the GPU.  Returns {[report "\0" pid ":" tid] = device}.
function M.thread_device_map(trace, launch, compile)
  local launchers = M.launcher_devices(trace)
  local progs, reports = {}, {}
  for i = 1, #launch do
    local r = launch.report[i]
    local key = r .. "\0" .. tostring(launch.m_ProgramId[i])
    local p = progs[key]
    if not p then
      p = {r = r, threads = {}}
      progs[key] = p
      reports[r] = reports[r] or {}
      table.insert(reports[r], p)
    end
    table.insert(p.threads, {pid = launch.pid[i], tid = launch.tid[i]})
  end
  local map, offset = {}, 0
  local nrep = #trace.reports
  for r = 0, nrep - 1 do
    local l, list = launchers[r], reports[r] or {}
    if l then
      local main, ndev = {}, 0
      for _, p in ipairs(list) do
        if #p.threads == 1 then main[p.threads[1].pid .. ":" .. p.threads[1].tid] = true end
      end
      local cnt = 0
      for i = 1, #compile do if compile.report[i] == r then cnt = cnt + 1 end end
      if cnt == 1 then
        for i = 1, #compile do if compile.report[i] == r then main[compile.pid[i] .. ":" .. compile.tid[i]] = true end end
      end
      local key = next(main)
      if key and next(main, key) then
        nsl.fail(string.format("%s: more than one thread runs programs alone; cannot tell which one is the main thread",
                               trace.reports.name[r + 1]))
      end
      if key then map[r .. "\0" .. key] = l.first end
      for k, d in pairs(l) do
        if k ~= "first" then
          map[r .. "\0" .. k] = d
          ndev = ndev + 1
        end
      end
      offset = offset + ndev
    else
      local workers, seen, alone = {}, {}, {}
      for _, p in ipairs(list) do
        for _, t in ipairs(p.threads) do
          local k = t.pid .. ":" .. t.tid
          if #p.threads > 1 then
            if not seen[k] then seen[k] = true; workers[#workers + 1] = t end
          else alone[k] = true end
        end
      end
      table.sort(workers, function(a, b) if a.tid ~= b.tid then return a.tid < b.tid end return a.pid < b.pid end)
      for k in pairs(alone) do map[r .. "\0" .. k] = offset end
      for i, t in ipairs(workers) do map[r .. "\0" .. t.pid .. ":" .. t.tid] = offset + i - 1 end
      if #list > 0 then offset = offset + math.max(1, #workers) end
    end
  end
  return map
end

--- The module and thunk frames (and the communication frame) of a trace.
function M.gpu_frames(trace, store, opts)
  opts = opts or {}
  local g = opts.gpu_ranges or M.gpu_ranges(trace)
  local n = #g
  local prefix = "TSL:"
  if n > 0 and #g:filter(g.text:match("^TSL:")) == 0 then prefix = "" end
  local rows = nsl.range(n)
  g = g:with("row", rows)
  local _, parent = g:join(nsl.table{{"report", g.report}, {"parent_id", g.range_id}}, {"report", "parent_id"})
  parent = parent:cast("i64")
  local is_thunk = g.text:match("^" .. prefix:gsub("%p", "%%%0") .. "Thunk:#")
  local is_module = g.text:match("^" .. prefix:gsub("%p", "%%%0") .. "XlaModule:")
  -- thunks that start before the first module of their report are edge effects
  local mods = g:filter(is_module)
  local first = mods:group_by("report"):agg{"first_start=min(start)"}
  local first_of = g:join(first, {"report"}, {"first_start"}, "f_").f_first_start
  local early = is_thunk & (first_of:isnull() | (g.start - first_of):lt(0))
  local anc, inner = nsl.tree_ancestor(parent, is_thunk, is_module)
  local thunk_mask = is_thunk & ~early & ~inner & anc:ge(0)
  -- modules that have thunks, in (report, range id) order
  local th0 = g:filter(thunk_mask):with("module_row", anc:gather(thunk_mask:indices()))
  local mrows = th0:group_by("module_row"):keys().module_row
  local mt = g:take(mrows):sort("report", "range_id")
  -- drop a last execution that looks cut short (NumGPUOps far below the others)
  local drop = {}
  do
    local grp = mt:group_by("report", "text")
    local ids, gops, mrow = grp:ids(), mt.num_gpu_ops, mt.row
    local members = {}
    for i = 1, #mt do
      local k = ids[i]
      local l = members[k] or {}
      members[k] = l
      l[#l + 1] = i
    end
    for _, l in pairs(members) do
      local m = #l - 1
      if m >= 1 then
        local s, ss = 0, 0
        for k = 1, m do s = s + (gops[l[k]] or 0) end
        local mean = s / m
        for k = 1, m do ss = ss + ((gops[l[k]] or 0) - mean) ^ 2 end
        local sd = math.sqrt(ss / m)
        local last = gops[l[#l]]
        if last and last < mean - sd then drop[mrow[l[#l]]] = true end
      end
    end
  end
  if next(drop) then
    local dl = {}
    for r in pairs(drop) do dl[#dl + 1] = r end
    mt = mt:filter(~mt.row:isin(dl))
    th0 = th0:filter(~th0.module_row:isin(dl))
  end
  -- program ids, names, fingerprints
  local mname = per_group(mt, {"report", "text"}, function(k, i)
    return (parse_module(k.text[i], prefix))
  end, "str")
  local mfp = per_group(mt, {"report", "text"}, function(k, i)
    local name, id = parse_module(k.text[i], prefix)
    return store.fingerprint(k.report[i], id, name)
  end, "str")
  mt = mt:with("Name", mname, "ProgramId", mfp)
  if opts.programs == "structure" then mt = M.merge_programs(mt, store) end
  mt = mt:with("ProgramExecution", nsl.cumcount(mt:group_by("report", "tid", "ProgramId"):ids()))
  -- devices: the launching thread's (M.thread_device_map)
  local dev = mt.device
  if dev:isnull():count() > 0 or th0.device:isnull():count() > 0 then
    local th_prog = th0:join(pick(mt, {{"module_row", "row"}, "ProgramId"}), {"module_row"}, {"ProgramId"}, "m_")
    local comp = g:filter(~is_thunk & g.text:match("^" .. prefix:gsub("%p", "%%%0") .. "XlaCompile:#module="))
    local map = M.thread_device_map(trace, th_prog:group_by("report", "m_ProgramId", "pid", "tid"):keys(),
                                    comp:group_by("report", "pid", "tid"):keys())
    local function fill(t)
      return per_group(t, {"report", "pid", "tid", "device"}, function(k, i)
        if k.device[i] then return k.device[i] end
        return map[k.report[i] .. "\0" .. k.pid[i] .. ":" .. k.tid[i]]
      end, "int")
    end
    mt = mt:with("device", fill(mt))
    th0 = th0:with("device", fill(th0))
  end
  local had = #mt
  mt = mt:filter(~mt.device:isnull())
  th0 = th0:filter(~th0.device:isnull())
  if had > 0 and #mt == 0 then
    nsl.fail(string.format("%s: no GPU found for any XLA module execution: the threads that launched them are " ..
      "neither XlaLauncher threads of the thread metadata nor the main thread",
      require("nsl.report").files(trace.reports.path:totable())))
  end
  -- launcher metadata (LocalDevice, Process, Slice)
  -- thunk frame
  local tj = th0:join(pick(mt, {{"module_row", "row"}, "ProgramId", "ProgramExecution"}), {"module_row"},
                      {"ProgramId", "ProgramExecution"}, "m_")
  tj = tj:filter(~tj.m_ProgramExecution:isnull())
  local tname = per_group(tj, {"text"}, function(k, i) return parse_thunk(k.text[i], prefix) end, "str")
  tj = tj:with("Name", tname, "ProgramId", tj.m_ProgramId, "ProgramExecution", tj.m_ProgramExecution)
  tj = tj:with("ThunkIndex", nsl.cumcount(tj:group_by("ProgramId", "ProgramExecution", "device"):ids()),
               "ThunkExecution", nsl.cumcount(tj:group_by("ProgramId", "ProgramExecution", "device", "Name"):ids()))
  -- NumThunks per module execution
  local nth = tj:group_by("module_row"):agg{"NumThunks=count"}
  mt = mt:join(pick(nth, {{"row", "module_row"}, "NumThunks"}), {"row"}, {"NumThunks"}, "")
  -- communication
  local comm_info = {}
  local is_comm = per_group(tj, {"report", "ProgramId", "Name"}, function(k, i)
    local fp, name = k.ProgramId[i], k.Name[i]
    if fp == "unknown" then return false end
    local key = fp .. "\0" .. name
    if comm_info[key] == nil then
      local res
      for _, h in ipairs(store.modules(fp)) do
        local c = h:comm(name)
        if c == nil then nsl.fail("no instruction " .. name .. " in program " .. fp) end
        if res == nil then res = c
        elseif (res and c and (res.collective ~= c.collective or res.bytes ~= c.bytes)) or (not res) ~= (not c) then
          nsl.fail("program " .. fp .. ": dumps disagree about " .. name)
        end
      end
      comm_info[key] = res or false
    end
    return comm_info[key] and true or false
  end, "bool")
  tj = tj:with("Communication", is_comm)
  local hidden = nsl.overlap_sum(tj.start, tj.stop, tj:group_by("ProgramId", "device"):ids(), is_comm)
  tj = tj:with("dur_ns", tj.stop - tj.start, "hidden_ns", hidden)
  local thunk = M.ms_frame(tj, "thunk")
  local module = M.ms_frame(mt, "module")
  -- communication frame
  local comm = thunk:filter(thunk.Communication)
  local function info(k, i) return comm_info[k.ProgramId[i] .. "\0" .. k.Name[i]] end
  local cg = comm:group_by("ProgramId", "Name")
  local ck = cg:keys()
  local ids = cg:ids()
  local size = derive(#ck, ids, function(i) local c = info(ck, i); return c and c.bytes end, "int")
  local coll = derive(#ck, ids, function(i) local c = info(ck, i); return c and c.collective end, "str")
  local csz = derive(#ck, ids, function(i) local c = info(ck, i); return c and c.size end, "int")
  local bwc = derive(#ck, ids, function(i) local c = info(ck, i); return c and c.bw_correction end, "num")
  local busc = derive(#ck, ids, function(i) local c = info(ck, i); return c and c.bus_correction end, "num")
  local full = comm.ProjDurMs + comm.ProjDurHiddenMs
  local algbw = (size * bwc) * 1e-6 / full
  comm = comm:with("MessageSize", size, "Collective", coll, "CollectiveSize", csz,
                   "AlgorithmBandwidthGBPerSec", algbw, "BusBandwidthGBPerSec", algbw * busc)
  return module, thunk, comm
end

--- The frame of t with nsys-jax's column names and millisecond times.
function M.ms_frame(t, kind)
  local cols = {
    {"ProgramId", t.ProgramId}, {"ProgramExecution", t.ProgramExecution},
  }
  if kind == "thunk" then
    cols[#cols + 1] = {"ThunkIndex", t.ThunkIndex}
    cols[#cols + 1] = {"Name", t.Name}
    cols[#cols + 1] = {"ThunkExecution", t.ThunkExecution}
  else
    cols[#cols + 1] = {"Name", t.Name}
  end
  cols[#cols + 1] = {"Device", t.device}
  cols[#cols + 1] = {"OrigDurMs", t.orig_dur * MS}
  cols[#cols + 1] = {"OrigStartMs", t.orig_start * MS}
  if kind == "thunk" then
    cols[#cols + 1] = {"ProjDurMs", (t.dur_ns - t.hidden_ns) * MS}
    cols[#cols + 1] = {"ProjStartMs", t.start * MS}
    cols[#cols + 1] = {"Communication", t.Communication}
    cols[#cols + 1] = {"ProjDurHiddenMs", t.hidden_ns * MS}
  else
    cols[#cols + 1] = {"ProjDurMs", (t.stop - t.start) * MS}
    cols[#cols + 1] = {"ProjStartMs", t.start * MS}
    cols[#cols + 1] = {"NumThunks", t.NumThunks}
  end
  cols[#cols + 1] = {"report", t.report}
  cols[#cols + 1] = {"tid", t.tid}
  cols[#cols + 1] = {"start", t.start}   -- the projected range in ns, as loaded (ProjStartMs = start x 1e-6)
  cols[#cols + 1] = {"stop", t.stop}
  local r = nsl.table(cols)
  if kind == "thunk" then return r:sort("ProgramId", "ProgramExecution", "ThunkIndex", "Device") end
  return r:sort("ProgramId", "ProgramExecution", "Device")
end

--- Joins programs that share name and HLO structure (every instruction's name
-- and opcode) under one ProgramId, the smallest of their fingerprints; the
-- store then answers for the joined id with all their dumps.
function M.merge_programs(mt, store)
  local canon, by_struct = {}, {}
  local k = mt:group_by("ProgramId"):keys()
  local fps = {}
  for i = 1, #k do if k.ProgramId[i] ~= "unknown" then fps[#fps + 1] = k.ProgramId[i] end end
  table.sort(fps)
  for _, fp in ipairs(fps) do
    local mods = store.modules(fp)
    local key = mods[1] and mods[1]:structure()
    if key then
      by_struct[key] = by_struct[key] or fp
      canon[fp] = by_struct[key]
    end
  end
  for fp, c in pairs(canon) do
    if c ~= fp then
      local list = store.by_fp[c]
      for _, e in ipairs(store.by_fp[fp] or {}) do list[#list + 1] = e end
    end
  end
  local ids = per_group(mt, {"ProgramId"}, function(keys, i) return canon[keys.ProgramId[i]] or keys.ProgramId[i] end,
                        "str")
  return mt:with("ProgramId", ids)
end

-- ---------------------------------------------------------------- compilation

-- The compile frame and its attribution live in nsl.compile (shared with the
-- compile analysis and plain nsys exports); required on use, as nsl.compile
-- builds on this module.

--- The compile frames of every report (nsl.compile.xla_frames): XlaCompile
-- ranges and what runs under them, worker threads grafted in, non-XLA ranges
-- folded away; ProgramId is the fingerprint of the program's dump.
function M.compile_frame(trace, store)
  return require("nsl.compile").xla_frames(trace, function(r, id, name) return store.fingerprint(r, id, name) end)
end

--- Parallel-aware compile time per range name (nsys-jax's
-- generate_compilation_statistics after remove_autotuning_detail), over the
-- compile frames.  Returns a table Name, DurNonChildMs, DurChildMs sorted by
-- DurNonChildMs descending.
function M.compile_statistics(parts)
  return require("nsl.compile").xla_statistics(parts)
end

--- The device of every row of g (GPU-projected ranges: report, pid, tid,
-- text), from the thread that launched it as M.thread_device_map finds it
-- (XlaModule ranges name the programs, XlaCompile ranges the main thread):
-- an i64 column, -1 where no device is known.  For the timelines (nsl tui,
-- nsl view) of nsys-jax archives.
function M.range_devices(trace, g)
  local mod, comp = g:filter(g.text:match("XlaModule:#")), g:filter(g.text:match("XlaCompile:#module="))
  local lk = mod:group_by("report", "text", "pid", "tid"):keys()
  local launch = nsl.table{{"report", lk.report}, {"m_ProgramId", lk.text}, {"pid", lk.pid}, {"tid", lk.tid}}
  local ok, map = pcall(M.thread_device_map, trace, launch, comp:group_by("report", "pid", "tid"):keys())
  local th = g:group_by("report", "pid", "tid")
  local tk, devs = th:keys(), {}
  for i = 1, #tk do   -- one Lua step per thread
    devs[i] = ok and map[tk.report[i] .. "\0" .. tk.pid[i] .. ":" .. tk.tid[i]] or -1
  end
  if #devs == 0 then return nsl.column{0}:gather(nsl.rep(-1, 0)) end
  return nsl.column(devs):gather(th:ids())
end

--- The short name of GPU-projected ranges: "XlaModule:#hlo_module=jit_step,program_id=3#" -> "jit_step",
-- "Thunk:#hlo_op=fusion.1#" -> "fusion.1"; other texts as they are.
function M.range_names(text)
  return text:map(function(t) return t:match("hlo_module=([^,#]+)") or t:match("hlo_op=([^,#]+)") or t end)
end

--- Devices of the XlaLauncher threads per report: {[r] = {first = device, [pid:tid] = device}}.
function M.launcher_devices(trace)
  local th = trace.threads
  local out = {}
  local l = th:filter(th.name:match("^XlaLauncher:#global=%d+,local=%d+,process=%d+,slice=%d+#$"))
  for i = 1, #l do
    local r = l.report[i]
    local d = tonumber(l.name[i]:match("global=(%d+)"))
    out[r] = out[r] or {}
    if not out[r].first then out[r].first = d end
    out[r][l.pid[i] .. ":" .. l.tid[i]] = d
  end
  return out
end

return M
