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
local nsl = require("nsl")
local nvtx = require("nsl.nvtx")

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
  n:load{"text"}
  return n.text:contains("XlaModule:#"):count() > 0
end

--- For an analysis of CUDA activity (kernels, memory operations, API calls)
-- that found none.  On an nsys-jax archive, which keeps no CUDA activity,
-- runs the JAX analysis `instead` with its default arguments after a line
-- saying so (with no `instead`, the line points at jax_summary) and returns
-- true.  Anywhere else, fails: "<paths>: <missing>; was it profiled
-- with -t cuda?".
function M.no_cuda_activity(trace, out, missing, instead)
  local paths = table.concat(trace.reports.path:totable(), ", ")
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
  require("nsl.runner").delegate(instead, trace, out)
  return true
end

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
  for _, b in ipairs(trace:inputs()) do
    local mine = {}
    for r = 0, #rt - 1 do
      if #files[r] == 0 and paths[r + 1]:sub(1, #b + 1) == b .. ":" then mine[#mine + 1] = r end
    end
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
  local devs = {}
  for i, name in ipairs{"kernels", "memcpy", "memset"} do   -- nsl.nvtx.gpu_ops's order
    local t = trace[name]
    t:load{"device"}
    devs[i] = t.device
  end
  local launched = ops.api:ge(0):indices()
  local a = ops.api:gather(launched)
  local api = trace.api
  local per = nsl.table{{"report", api.report:gather(a)}, {"pid", api.pid:gather(a)}, {"tid", api.tid:gather(a)},
                        {"device", nsl.concat(table.unpack(devs)):gather(launched)}}
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
      table.concat(trace.reports.path:totable(), ", ")))
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

-- ---------------------------------------------------------------- analyses

--- Everything an nsys-jax analysis needs: {module, thunk, communication,
-- compile_parts, store}, from an nsys-jax archive or from exports (bundles
-- with meta/xla_dump/).  opts.programs as for M.gpu_frames; opts.compile =
-- false skips the compile frame; opts.gpu_ranges: M.gpu_ranges(trace) when
-- the caller has it already.
function M.load(trace, opts)
  opts = opts or {}
  local g = opts.gpu_ranges or M.gpu_ranges(trace)
  if #g == 0 then
    nsl.fail("no NVTX ranges projected onto the GPU: neither an nsys-jax archive nor an export with NVTX ranges " ..
             "around kernel launches")
  end
  if g.text:match("XlaModule:#"):count() == 0 then
    nsl.fail("no XLA module ranges (XlaModule:#...#) among the NVTX ranges projected onto the GPU: not a JAX trace")
  end
  local store = M.hlo_store(trace)
  local d = {store = store}
  local o = {gpu_ranges = g}
  for k, v in pairs(opts) do o[k] = v end
  d.module, d.thunk, d.communication = M.gpu_frames(trace, store, o)
  if opts.compile ~= false then d.compile_parts = M.compile_frame(trace, store) end
  return d
end

--- Steady-state time per XLA program and run, to compare JAX runs: of_report
-- (array: of_report[r + 1] = the 0-based run of report r, -1 for none),
-- labels (one per run), base (0-based run the others are measured against).
-- Programs are matched across runs by name (their fingerprints may differ);
-- steady as nsys-jax (M.steady).  Returns a table Name, then per run
-- "<label> execs" and "<label> ms" (mean steady execution over the run's
-- devices), and "<label> vs <base label> (%)" for the other runs; sorted by
-- the base run's time, longest first.
function M.compare_runs(trace, of_report, labels, base)
  local d = M.load(trace)
  local m = d.module:filter(~d.module.ProgramId:isin{"unknown"})
  local st = M.steady(m, M.compiled_programs(d.compile_parts), #d.communication > 0)
  local run = nsl.column(of_report):gather(st.report:cast("i64"))
  st = st:with("run", run):filter(run:ge(0))
  local g = st:group_by("Name", "run"):agg{"n=count", "ms=mean(ProjDurMs)"}
  local per, names, total = {}, {}, {}
  for i = 1, #g do
    local name, r = g.Name[i], g.run[i]
    if not per[name] then per[name] = {}; names[#names + 1] = name end
    per[name][r] = {n = g.n[i], ms = g.ms[i]}
  end
  local function key(name) local e = per[name][base] return e and e.ms * e.n or -1 end
  for _, name in ipairs(names) do total[name] = key(name) end
  table.sort(names, function(a, b) if total[a] ~= total[b] then return total[a] > total[b] end return a < b end)
  local cols = {{"Name", names}}
  for r = 0, #labels - 1 do
    local execs, ms = {}, {}
    for i, name in ipairs(names) do
      local e = per[name][r]
      execs[i], ms[i] = e and e.n or 0, e and e.ms or 0 / 0
    end
    cols[#cols + 1] = {labels[r + 1] .. " execs", execs}
    cols[#cols + 1] = {labels[r + 1] .. " ms", ms}
  end
  for r = 0, #labels - 1 do
    if r ~= base then
      local pct = {}
      for i, name in ipairs(names) do
        local a, b = per[name][base], per[name][r]
        pct[i] = (a and b) and (b.ms - a.ms) * 100 / a.ms or 0 / 0
      end
      cols[#cols + 1] = {string.format("%s vs %s (%%)", labels[r + 1], labels[base + 1]), pct}
    end
  end
  return nsl.table(cols)
end

--- The collective instance of every row of a communication frame: the rows
-- of one program execution with the same thunk name and thunk execution are
-- one collective on every device that ran it (nsys-jax's matching for the
-- clock alignment).  Returns the 0-based instance ids and the group_by.
function M.collective_instances(comm)
  local g = comm:group_by("ProgramId", "ProgramExecution", "Name", "ThunkExecution")
  return g:ids(), g
end

--- Cross-device clock alignment (nsys-jax's align_profiler_data_timestamps):
-- the end of every collective of the largest size, compared with the mean end
-- over the devices that ran it; each device's correction is the median of its
-- skews (ms).  Unlike nsys-jax it also works when fewer devices were profiled
-- than take part in the collectives (one process's archive of a multi-process
-- run): the mean is over the devices present, so a lone device gets 0.
-- Returns corrections {[device] = ms} (nil when there is nothing to align) and
-- the collective size used.
function M.alignment(comm)
  if #comm == 0 then return nil end
  local size = comm.CollectiveSize:max()
  if not size or size <= 1 then return nil end
  local c = comm:filter(comm.CollectiveSize:eq(size))
  local stop = c.ProjStartMs + c.ProjDurMs + c.ProjDurHiddenMs
  c = c:with("end", stop)
  local ids, g = M.collective_instances(c)
  local mean = g:agg{"m=mean(end)"}.m:gather(ids)
  c = c:with("skew", stop - mean)
  local med = c:group_by("Device"):agg{"corr=median(skew)"}
  local out = {}
  for i = 1, #med do out[med.Device[i]] = med.corr[i] end
  return out, size
end

--- Frames with ProjStartMs corrected by the alignment.
function M.apply_alignment(frame, corr)
  if not corr or #frame == 0 then return frame end
  local k = per_group(frame, {"Device"}, function(keys, i) return corr[keys.Device[i]] or 0.0 end, "num")
  return frame:with("ProjStartMs", frame.ProjStartMs - k)
end

--- The ProgramIds whose compilation was profiled.
function M.compiled_programs(parts)
  local out = {}
  for _, p in ipairs(parts or {}) do
    local k = p:group_by("ProgramId"):keys()
    for i = 1, #k do if k.ProgramId[i] then out[#out + 1] = k.ProgramId[i] end end
  end
  return out
end

--- nsys-jax's apply_warmup_heuristics: the first execution of a program whose
-- compilation was profiled is initialisation, and one more when the profile has
-- communication.  Returns steady, init (and a warning when nothing is steady:
-- then everything counts as steady).
function M.steady(frame, compiled, has_comm)
  if #frame == 0 then return frame, frame end
  local threshold = frame.ProgramId:isin(compiled):cast("i64") + (has_comm and 1 or 0)
  local init = (frame.ProgramExecution - threshold):lt(0)
  if (~init):count() == 0 then return frame, frame:filter(init & ~init), true end
  return frame:filter(~init), frame:filter(init)
end

local function sample_std(values)
  local n = #values
  if n < 2 then return 0 / 0 end
  local s = 0
  for _, v in ipairs(values) do s = s + v end
  local m, ss = s / n, 0
  for _, v in ipairs(values) do ss = ss + (v - m) ^ 2 end
  return math.sqrt(ss / (n - 1))
end
M.sample_std = sample_std

--- The `summary` module table: per ProgramId over steady executions.
-- Columns: ProgramId, Name, Execs, NumThunksMean, NumThunksStd, DurSumMs,
-- DurMeanMs, DurStdMs, DurPercent, WaitMeanMs, WaitStdMs, WaitPercent.
function M.module_stats(steady_module, steady_comm)
  local g = steady_module:group_by("ProgramId")
  local a = g:agg{"Name=first(Name)", "Execs=count", "NumThunksMean=mean(NumThunks)", "NumThunksStd=std(NumThunks)",
                  "DurSumMs=sum(ProjDurMs)", "DurMeanMs=mean(ProjDurMs)", "DurStdMs=std(ProjDurMs)"}
  -- pandas' std of one value is NaN, nsl's 0
  a = a:with("NumThunksStd", per_group(a, {"ProgramId"}, function(k, i)
    return a.Execs[i] > 1 and a.NumThunksStd[i] or 0 / 0 end, "num"),
    "DurStdMs", per_group(a, {"ProgramId"}, function(k, i) return a.Execs[i] > 1 and a.DurStdMs[i] or 0 / 0 end, "num"))
  local total = a.DurSumMs:sum()
  a = a:with("DurPercent", a.DurSumMs * (100 / total))
  local wait_mean, wait_std = {}, {}
  if steady_comm and #steady_comm > 0 then
    local tg = steady_comm:group_by("ProgramId", "ProgramExecution", "Name", "ThunkExecution")
    local mm = tg:agg{"mx=max(ProjDurMs)", "mn=min(ProjDurMs)"}
    -- the agg table has the group keys first
    local w = nsl.table{{"ProgramId", mm.ProgramId}, {"ProgramExecution", mm.ProgramExecution},
                        {"wait", mm.mx - mm.mn}}
    local per_exec = w:group_by("ProgramId", "ProgramExecution"):agg{"wait=sum(wait)"}
    local lists = {}
    for i = 1, #per_exec do
      local id = per_exec.ProgramId[i]
      lists[id] = lists[id] or {}
      table.insert(lists[id], per_exec.wait[i])
    end
    for id, l in pairs(lists) do
      local s = 0
      for _, v in ipairs(l) do s = s + v end
      wait_mean[id], wait_std[id] = s / #l, sample_std(l)
    end
  end
  local wm = per_group(a, {"ProgramId"}, function(k, i) return wait_mean[k.ProgramId[i]] end, "num")
  local ws = per_group(a, {"ProgramId"}, function(k, i) return wait_std[k.ProgramId[i]] end, "num")
  a = a:with("WaitMeanMs", wm, "WaitStdMs", ws, "WaitPercent", wm * 100 / a.DurMeanMs)
  return a:sort("-DurSumMs")
end

--- Bus bandwidth per (collective, message size): per collective instance the
-- fastest device's bus bandwidth, then mean and standard error over instances.
-- Columns: Collective, MessageSize, BusBwMean, BusBwErr, Instances.
function M.bandwidth(steady_comm)
  local inst = steady_comm:group_by("Collective", "MessageSize", "ProgramId", "ProgramExecution", "ThunkIndex")
    :agg{"bw=max(BusBandwidthGBPerSec)"}
  local s = inst:group_by("Collective", "MessageSize"):agg{"BusBwMean=mean(bw)", "sd=std(bw)", "Instances=count"}
  local err = per_group(s, {"Collective", "MessageSize"}, function(k, i)
    return s.Instances[i] > 1 and s.sd[i] / math.sqrt(s.Instances[i]) or 0 / 0 end, "num")
  return nsl.table{{"Collective", s.Collective}, {"MessageSize", s.MessageSize}, {"BusBwMean", s.BusBwMean},
                   {"BusBwErr", err}, {"Instances", s.Instances}}:sort("MessageSize", "Collective")
end

--- Mean hidden/total communication time per collective, and overall.
function M.hidden_ratio(steady_comm)
  local full = steady_comm.ProjDurMs + steady_comm.ProjDurHiddenMs
  local t = steady_comm:with("ratio", steady_comm.ProjDurHiddenMs / full)
  local s = t:group_by("Collective"):agg{"MeanHiddenToTotal=mean(ratio)", "HiddenMs=sum(ProjDurHiddenMs)",
                                          "ExposedMs=sum(ProjDurMs)"}
  return s:sort("Collective"), steady_comm.ProjDurHiddenMs:sum() / full:sum()
end

--- "value(uncertainty)" in the short notation of the Python uncertainties
-- package: the uncertainty keeps 2 significant digits when its leading digits
-- are 10-35, else 1; the value is rounded to the same decimal place.
function M.ufloat(v, u)
  if v == nil or v ~= v then return "nan" end
  if u == nil or u ~= u then
    return string.format("%s(nan)", (string.format("%.15g", v)))
  end
  if u == 0 then return string.format("%s(0)", (string.format("%.15g", v))) end
  local e = math.floor(math.log(u, 10))
  local lead = u / 10 ^ (e - 1)   -- two leading digits, 10 <= lead < 100
  local digits = lead < 35.5 and 2 or 1
  local place = e - digits + 1      -- decimal exponent of the last kept digit
  local ur = math.floor(u / 10 ^ place + 0.5)
  if ur >= 10 ^ digits then ur = ur // 10; place = place + 1 end
  if place >= 0 then
    local vr = math.floor(v / 10 ^ place + 0.5) * 10 ^ place
    return string.format("%d(%d)", math.floor(vr + 0.5), math.floor(ur * 10 ^ place + 0.5))
  end
  local dec = -place
  local us = ur
  if ur * 10 ^ place >= 1 then us = string.format("%." .. dec .. "f", ur * 10 ^ place) end
  return string.format("%." .. dec .. "f(%s)", v, us)
end

--- Heap-simulator peaks per fingerprint: {[fp] = {{n_events=, peak_bytes=}, ...}}
-- over the after-optimizations dumps of the given fingerprints.
function M.heap(store, fingerprints)
  local out = {}
  for _, fp in ipairs(fingerprints) do
    local mods = store.modules(fp)
    out[fp] = mods[1] and mods[1]:heap() or {}
  end
  return out
end

-- ---------------------------------------------------------------- flame graphs

local GPU_ACTIVE, UNKNOWN = "[GPU active]", "[Unknown]"
local IDLE_IN, IDLE_BETWEEN = "[GPU idle during module execution]", "[GPU idle between module executions]"
local INCONSISTENT = "[inconsistent metadata]"

--- The frames of a, b merged: their common start, a marker, their common end.
local function merge_frames(a, b)
  local same = #a == #b
  for i = 1, #a do same = same and a[i] == b[i] end
  if same then return a end
  local out, p = {}, 0
  while p < #a and p < #b and a[p + 1] == b[p + 1] do p = p + 1; out[p] = a[p] end
  local q = 0
  while q < #a - p and q < #b - p and a[#a - q] == b[#b - q] do q = q + 1 end
  out[#out + 1] = INCONSISTENT
  for i = #a - q + 1, #a do out[#out + 1] = a[i] end
  return out
end

--- opcode and the metadata entries {op_name, frames} of a thunk's instruction
-- and of the instructions of the computations it calls (nsys-jax's notebook:
-- instructions_and_frames); several dumps of one program are merged.
local function thunk_metadata(store, fp, name, cache)
  local key = fp .. "\0" .. name
  if cache[key] then return table.unpack(cache[key]) end
  local opcode, metas
  for _, h in ipairs(store.modules(fp)) do
    local inst = h:instruction(name)
    if inst then
      local list = {{op_name = inst.op_name, frame = inst.frame}}
      for _, c in ipairs(h:called(name)) do list[#list + 1] = c end
      local m = {}
      for i, e in ipairs(list) do
        local fk = h
        cache.frames = cache.frames or setmetatable({}, {__mode = "k"})
        cache.frames[fk] = cache.frames[fk] or {}
        local fr = cache.frames[fk][e.frame]
        if not fr then
          fr = e.frame > 0 and h:stack(e.frame) or {}
          cache.frames[fk][e.frame] = fr
        end
        m[i] = {op_name = e.op_name, frames = fr}
      end
      if not metas then opcode, metas = inst.opcode, m
      elseif #m == #metas then
        for i = 1, #m do
          if m[i].op_name == metas[i].op_name then metas[i] = {op_name = metas[i].op_name,
                                                                  frames = merge_frames(metas[i].frames, m[i].frames)} end
        end
      end
    end
  end
  cache[key] = {opcode, metas or {}}
  return opcode, metas or {}
end

local function split(s, sep)
  local out = {}
  for part in (s .. sep):gmatch("(.-)" .. sep:gsub("%p", "%%%0")) do out[#out + 1] = part end
  return out
end

--- nsys-jax notebook's GPU time attribution over the programs that make up 99%
-- of steady-state module time: op runtime per opcode, and the source-line and
-- op-name stacks (weights in ms).  Returns {op_runtime = {[opcode] = ms, _total,
-- ["GPU idle during modules"]}, source = {stack -> ms}, op_name = {...},
-- order_source, order_op_name (insertion order), totals}.
function M.attribution(d, steady_module, steady_thunk)
  local st = steady_module:group_by("ProgramId"):agg{"sum=sum(ProjDurMs)"}:sort("-sum")
  local total, seen, top = st.sum:sum(), 0, {}
  for i = 1, #st do
    if seen < 0.99 then top[#top + 1] = st.ProgramId[i] end
    seen = seen + st.sum[i] / total
  end
  local tm = steady_module:filter(steady_module.ProgramId:isin(top))
  local tt = steady_thunk:filter(steady_thunk.ProgramId:isin(top))
  local ts = tt:group_by("ProgramId", "Name"):agg{"ms=sum(ProjDurMs)"}:sort("-ms")
  local thunks_active = ts.ms:sum()
  local modules_active = tm.ProjDurMs:sum()
  local span = tm:with("end", tm.ProjStartMs + tm.ProjDurMs):group_by("Device")
    :agg{"s=min(ProjStartMs)", "e=max(end)"}
  local wall = (span.e - span.s):sum()
  local res = {op_runtime = {}, source = {}, op_name = {}, order_source = {}, order_op_name = {}, top = top,
               totals = {thunks_active = thunks_active, modules_active = modules_active, wall = wall}}
  local function add(map, order, key, w)
    if map[key] == nil then order[#order + 1] = key; map[key] = 0 end
    map[key] = map[key] + w
  end
  local cache = {}
  for i = 1, #ts do
    local fp, name, ms = ts.ProgramId[i], ts.Name[i], ts.ms[i]
    local opcode, metas = thunk_metadata(d.store, fp, name, cache)
    if opcode then res.op_runtime[opcode] = (res.op_runtime[opcode] or 0) + ms end
    local src1, src2, on1 = {}, {}, {}
    local s1, s2, o1 = {}, {}, {}
    for _, m in ipairs(metas) do
      if #m.frames > 0 then
        local k = GPU_ACTIVE .. ";" .. table.concat(m.frames, ";") .. (m.op_name ~= "" and ";" .. m.op_name or "")
        if not s1[k] then s1[k] = true; src1[#src1 + 1] = k end
      end
      if m.op_name ~= "" then
        local k2 = GPU_ACTIVE .. ";" .. UNKNOWN .. ";" .. m.op_name
        if not s2[k2] then s2[k2] = true; src2[#src2 + 1] = k2 end
        local k3 = GPU_ACTIVE .. ";" .. table.concat(split(m.op_name, "/"), ";")
        if not o1[k3] then o1[k3] = true; on1[#on1 + 1] = k3 end
      end
    end
    local unknown = {GPU_ACTIVE .. ";" .. UNKNOWN}
    for _, set in ipairs{src1, src2, unknown} do
      if #set > 0 then
        for _, k in ipairs(set) do add(res.source, res.order_source, k, ms / #set) end
        break
      end
    end
    for _, set in ipairs{on1, unknown} do
      if #set > 0 then
        for _, k in ipairs(set) do add(res.op_name, res.order_op_name, k, ms / #set) end
        break
      end
    end
  end
  res.op_runtime._total = modules_active
  res.op_runtime["GPU idle during modules"] = modules_active - thunks_active
  local idle_in = math.max(0, modules_active - thunks_active)
  local idle_between = math.max(0, wall - modules_active)
  for _, which in ipairs{"source", "op_name"} do
    add(res[which], res["order_" .. which], IDLE_IN, idle_in)
    add(res[which], res["order_" .. which], IDLE_BETWEEN, idle_between)
  end
  return res
end

--- The attribution (M.attribution) of a trace's steady state, as nsys-jax's
-- notebook makes it: frames loaded (opts as M.load), programs without a dump
-- left out, clocks aligned across devices, warm-up executions dropped.
-- Returns the attribution and the loaded frames.
function M.steady_attribution(trace, opts)
  local d = M.load(trace, opts)
  local compiled = M.compiled_programs(d.compile_parts)
  local has_comm = #d.communication > 0
  local module = d.module:filter(~d.module.ProgramId:isin{"unknown"})
  local thunk = d.thunk:filter(~d.thunk.ProgramId:isin{"unknown"})
  local corr = M.alignment(d.communication)
  module, thunk = M.apply_alignment(module, corr), M.apply_alignment(thunk, corr)
  return M.attribution(d, M.steady(module, compiled, has_comm), M.steady(thunk, compiled, has_comm)), d
end

--- The stacks of one of an attribution's flame graphs ("source" or
-- "op_name") as an nsl table {stack, weight} in integer ns, heaviest first
-- (the input of nsl.plot.flamegraph and of the flamegraph analysis).
function M.attribution_stacks(a, which)
  local stacks, weights = {}, {}
  for i, k in ipairs(a["order_" .. which]) do
    stacks[i] = k
    weights[i] = math.floor(a[which][k] * 1e6 + 0.5)
  end
  if #stacks == 0 then return nil end
  local t = nsl.table{{"stack", stacks}, {"weight", weights}}
  t = t:filter(t.weight:gt(0))
  return t:sort("-weight", "stack")
end

--- Folded-stack text ("a;b;c weight" lines, flamegraph.pl's input) of a map
-- in the given key order.
function M.folded(map, order)
  local lines = {}
  for i, k in ipairs(order) do lines[i] = k .. " " .. string.format("%.17g", map[k]) end
  return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
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
