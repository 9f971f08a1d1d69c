-- compile -- time spent compiling and loading code, per process and in total:
--  * XLA compilation (NVTX domain TSL: XlaCompile, XlaPass..., XlaAutotuner...)
--    with nsys-jax's parallel-aware attribution (worker threads' time shared
--    out within the range that launched them, so the parts add up to the
--    compilations' wall time); top ranges, XLA passes, programs;
--  * other compilers' NVTX ranges (torch.compile: Dynamo, AOTAutograd,
--    Inductor, Triton autotuning, CUDA graph recording; nvFuser): each
--    compilation and what ran under it, with self times;
--  * CUDA code loading and JIT from the CUDA API (cuModuleLoad*,
--    cuLibraryLoad*, function look-ups that load lazily, cuLink*, nvrtc*,
--    CUDA graph capture and instantiation) and from CUPTI's overhead records
--    (runtime-triggered module loading, lazy function loading, driver JIT).
-- The name lists are in lua/nsl/compile.lua (M.frameworks, M.api_classes).
-- Works on nsys SQLite exports and nsys-jax archives alike.
local nsl = require("nsl")
local compile = require("nsl.compile")
local jax = require("nsl.jax")
local findings = require("nsl.findings")

local MS = 1e-6

local is_xla_compile = compile.is_xla_compile

-- An item table: what took time, as intervals of a process.
local function items(what, t)
  return nsl.table{{"report", t.report:cast("i64")}, {"pid", t.pid:cast("i64")}, {"what", nsl.rep(what, #t)},
                   {"start", t.start}, {"stop", t.stop}, {"dur", t.stop - t.start}}
end

-- 100 * t[col] / the sum of t[col] over the rows of the same group of
-- `by` (a list of key columns; empty: over all rows); `of`, when given, is a
-- table with those keys and a column `of_col` to divide by instead.
local function percent(t, col, by, of, of_col)
  if #by == 0 then
    local total = of and of[of_col]:sum() or t[col]:sum()
    return t[col] * (total > 0 and 100.0 / total or 0.0)
  end
  local denom
  if of then
    denom = t:join(of, by, {of_col}, "_of_")["_of_" .. of_col]
  else
    local g = t:group_by(table.unpack(by))
    denom = g:agg{"s=sum(" .. col .. ")"}.s:gather(g:ids())
  end
  return t[col] * 100.0 / denom
end

-- A result table: t's report (by name) and pid columns first when per
-- process, then cols.
local function result(pp, t, cols, rnames)
  local out = pp and {{"report", t.report:map(function(r) return rnames[r + 1] or tostring(r) end)},
                      {"pid", t.pid}} or {}
  for _, c in ipairs(cols) do out[#out + 1] = c end
  return nsl.table(out)
end

-- The groups the summary and the detail tables are keyed by.
local function keys(per_process, ...)
  local k = per_process and {"report", "pid"} or {}
  for _, v in ipairs{...} do k[#k + 1] = v end
  return k
end

local summary_order = {
  "XLA compilation", "torch.compile", "nvFuser", "CUDA module/library loading (API)", "CUDA JIT (API)",
  "CUDA graph build (API)", "CUDA loading by the driver (CUPTI)", "CUDA driver JIT (CUPTI)",
}
local api_group = {["module load"] = summary_order[4], ["library load"] = summary_order[4],
                   ["function load"] = summary_order[4], ["JIT link"] = summary_order[5], NVRTC = summary_order[5],
                   ["graph build"] = summary_order[6]}
local overhead_group = {module_loading = summary_order[7], lazy_loading = summary_order[7],
                        driver_jit = summary_order[8]}
local ALL = "all compiling and loading"

-- The key of a process (report, pid; pid may be NULL).
local function pkey(r, p) return r .. ":" .. tostring(p) end

return {
  name = "compile",
  description = "Time spent compiling and loading code: XLA (parallel-aware), torch.compile, nvFuser, " ..
                "CUDA module loading and JIT, per process and in total",
  args = {
    limit = {default = 20, help = "rows of each detail table in text output (all rows go to files)"},
    per_process = {default = false, help = "detail tables per process (report, pid) instead of over all"},
    warn = {default = 0.0, help = "a warning finding for a process that spends more than this % of its " ..
                                  "report's time compiling and loading (0: off)"},
  },
  example = "nsl run compile run.sqlite --arg per_process=true",
  run = function(trace, args, out)
    local limit = args.limit > 0 and args.limit or nil
    local pp = args.per_process
    local all_items = {}

    -- XLA: compile frames, parallel-aware attribution
    local store = jax.hlo_store(trace)
    local frames = compile.xla_frames(trace, function(r, id, name)
      local fp = store.fingerprint(r, id, name)
      if fp == "unknown" and id then return tostring(id) end
      return fp
    end)
    local attr = compile.xla_attribution(frames)
    local xla_total   -- per (report, pid): the parallel-aware sum
    if attr then
      local xc = {}
      for i, f in ipairs(frames) do xc[i] = f:filter(f.Name:where(is_xla_compile)) end
      local xcomp = nsl.concat_tables(xc)
      all_items[#all_items + 1] = items(summary_order[1], xcomp)
      xla_total = attr:group_by("report", "pid"):agg{"pa=sum(non)"}
    end

    -- other compilers
    local members, run = compile.framework_ranges(trace)
    if members then
      local roots = members:filter(members.root)
      all_items[#all_items + 1] = items("", roots):with("what", roots.framework)
    end

    -- CUDA API and CUPTI overhead
    local calls = compile.loading_calls(trace)
    if #calls > 0 then
      local t = items("", calls)
      all_items[#all_items + 1] = t:with("what", calls.class:map(api_group))
    end
    local oh = compile.loading_overhead(trace)
    if #oh > 0 then
      local t = items("", oh)
      all_items[#all_items + 1] = t:with("what", oh.kind:map(overhead_group))
    end

    local it = nsl.concat_tables(all_items)
    if not it then
      out:text("No compilation or code loading found (no XLA, torch.compile or nvFuser NVTX ranges, " ..
               "no CUDA module-loading or JIT calls, no CUPTI loading overhead).")
      out:value("total_ms", 0)
      return
    end

    -- summary: per process and category, then each process's union, then totals
    local rnames, rdur = trace.reports.name:totable(), trace.reports.duration:totable()
    local function result_table(t, cols) return result(pp, t, cols, rnames) end
    local pnames = {}
    local procs = trace.processes
    procs:load{"report", "pid", "name"}
    for i = 1, #procs do
      local r, p = procs.report[i], procs.pid[i]
      if r and p then pnames[pkey(r, p)] = procs.name[i] end
    end
    local g = it:group_by("report", "pid", "what")
    local s = g:agg{"n=count", "total=sum(dur)"}
    s = s:with("wall", nsl.busy_by_group(it.start, it.stop, g:ids(), #g))
    local ga = it:group_by("report", "pid")
    local sa = ga:agg{"n=count"}
    sa = sa:with("wall", nsl.busy_by_group(it.start, it.stop, ga:ids(), #ga))
    local pa = {}
    if xla_total then
      for i = 1, #xla_total do pa[pkey(xla_total.report[i], xla_total.pid[i])] = xla_total.pa[i] end
    end
    local rank = {}
    for i, w in ipairs(summary_order) do rank[w] = i end
    local rows = {}
    for i = 1, #s do
      local r, p, w = s.report[i], s.pid[i], s.what[i]
      local total = s.total[i]
      if w == summary_order[1] and pa[pkey(r, p)] then total = pa[pkey(r, p)] end
      rows[#rows + 1] = {r = r, p = p, what = w, rank = rank[w] or 99, n = s.n[i], total = total, wall = s.wall[i]}
    end
    for i = 1, #sa do
      rows[#rows + 1] = {r = sa.report[i], p = sa.pid[i], what = ALL, rank = 100, wall = sa.wall[i]}
    end
    table.sort(rows, function(a, b)
      if a.r ~= b.r then return a.r < b.r end
      if a.p ~= b.p then return (a.p or -1) < (b.p or -1) end
      return a.rank < b.rank
    end)
    -- totals over processes
    local tot, order = {}, {}
    local dur_sum, seen = 0, {}
    for _, row in ipairs(rows) do
      local t = tot[row.what]
      if not t then
        t = {r = -1, what = row.what, rank = row.rank, n = row.n and 0 or nil, total = row.total and 0 or nil,
             wall = 0, dur = 0}
        tot[row.what] = t
        order[#order + 1] = t
      end
      if t.n then t.n = t.n + (row.n or 0) end
      if t.total then t.total = t.total + (row.total or 0) end
      t.wall = t.wall + row.wall
      t.dur = t.dur + (rdur[row.r + 1] or 0)
      local key = pkey(row.r, row.p)
      if row.what == ALL and not seen[key] then
        seen[key] = true
        dur_sum = dur_sum + (rdur[row.r + 1] or 0)
      end
    end
    table.sort(order, function(a, b) return a.rank < b.rank end)
    local cols = {report = {}, pid = {}, process = {}, what = {}, n = {}, total = {}, wall = {}, pct = {}}
    local function add(i, rep, pid, pname, row, dur)
      cols.report[i], cols.pid[i], cols.process[i], cols.what[i] = rep, pid or false, pname or false, row.what
      cols.n[i] = row.n or false
      cols.total[i] = row.total and row.total * MS or false
      cols.wall[i] = row.wall * MS
      cols.pct[i] = (dur and dur > 0) and row.wall * 100.0 / dur or false
    end
    local k = 0
    for _, row in ipairs(rows) do
      k = k + 1
      add(k, rnames[row.r + 1] or tostring(row.r), row.p, pnames[pkey(row.r, row.p)], row, rdur[row.r + 1])
    end
    if #sa > 1 then
      for _, t in ipairs(order) do
        k = k + 1
        add(k, "all", nil, nil, t, t.what == ALL and dur_sum or t.dur)
      end
    end
    local function column(list, n, kind)
      local vals, code = {}, {}
      for i = 1, n do
        if list[i] == false or list[i] == nil then code[i] = -1
        else vals[#vals + 1] = list[i]; code[i] = #vals - 1 end
      end
      if #vals == 0 then vals[1] = (kind == "str" and "") or (kind == "num" and 0.0) or 0 end
      return nsl.column(vals):gather(nsl.column(code))
    end
    local summary = nsl.table{
      {"report", column(cols.report, k, "str")}, {"pid", column(cols.pid, k, "int")},
      {"process", column(cols.process, k, "str")}, {"What", column(cols.what, k, "str")},
      {"Instances", column(cols.n, k, "int")}, {"Time (ms)", column(cols.total, k, "num")},
      {"Wall (ms)", column(cols.wall, k, "num")}, {"Run (%)", column(cols.pct, k, "num")}}
    out:table("summary", summary, {title = "Time spent compiling and loading code, per process" ..
      (#sa > 1 and " and over all" or "") .. " (Time: summed durations, XLA parallel-aware; Wall: their union; " ..
      "Run: Wall in % of the report's duration)", decimals = 3})
    local grand = 0
    for _, row in ipairs(rows) do if row.what == ALL then grand = grand + row.wall end end
    out:value("total_ms", grand * MS)
    if args.warn > 0 then
      for _, row in ipairs(rows) do
        local d = rdur[row.r + 1]
        if row.what == ALL and d and d > 0 then
          findings.above(out, row.wall * 100.0 / d, {warning = args.warn}, "compile_share",
            "%s pid %s spends %.1f%% of the run compiling and loading code (%.1f ms)",
            rnames[row.r + 1] or tostring(row.r), row.p, row.wall * 100.0 / d, row.wall * MS)
        end
      end
    end

    -- XLA detail
    if attr then
      local xla_ms = attr.non:sum() * MS
      local a = attr:with("one", nsl.rep(1, #attr))
      local per = pp and a:group_by("report", "pid"):agg{"xla=sum(non)"} or nil
      local r = a:group_by(table.unpack(keys(pp, "Name"))):agg{"n=sum(one)", "non=sum(non)", "child=sum(child)"}
      r = r:sort(table.unpack(keys(pp, "-non")))
      out:table("xla_ranges", result_table(r, {
        {"Range", r.Name}, {"Instances", r.n}, {"Time (ms)", r.non * MS}, {"Child (ms)", r.child * MS},
        {"Compile (%)", percent(r, "non", keys(pp), per, "xla")}}),
        {title = string.format("XLA compile time per range, parallel-aware (%.1f ms in all)", xla_ms), limit = limit, decimals = 3})
      local passes = a:filter(a.Name:match("^XlaPass:#name="))
      if #passes > 0 then
        passes = passes:with("Pass", passes.Name:map(function(s) return s:match("^XlaPass:#name=([^,#]*)") end))
        local pass_ms = passes.non:sum() * MS
        local p = passes:group_by(table.unpack(keys(pp, "Pass"))):agg{"n=sum(one)", "non=sum(non)"}
        p = p:sort(table.unpack(keys(pp, "-non")))
        local of_xla = per or nsl.table{{"xla", nsl.column{xla_ms / MS}}}
        out:table("xla_passes", result_table(p, {
          {"Pass", p.Pass}, {"Instances", p.n}, {"Time (ms)", p.non * MS}, {"Passes (%)", percent(p, "non", keys(pp))},
          {"Compile (%)", percent(p, "non", keys(pp), of_xla, "xla")}}),
          {title = string.format("XLA passes, parallel-aware (%.1f ms, %.1f%% of XLA compile time)", pass_ms,
                                 pass_ms * 100 / xla_ms), limit = limit, decimals = 3})
      end
      local xc = {}
      for i, f in ipairs(frames) do
        local c = f:filter(f.Name:where(is_xla_compile))
        xc[i] = nsl.table{{"report", c.report:cast("i64")}, {"pid", c.pid:cast("i64")}, {"ProgramName", c.ProgramName},
                          {"ProgramId", c.ProgramId}, {"dur", c.stop - c.start}}
      end
      local progs = nsl.concat_tables(xc):group_by(table.unpack(keys(pp, "ProgramName", "ProgramId")))
        :agg{"n=count", "wall=sum(dur)", "max=max(dur)"}
      progs = progs:sort(table.unpack(keys(pp, "-wall")))
      out:table("xla_programs", result_table(progs, {
        {"Program", progs.ProgramName}, {"ProgramId", progs.ProgramId}, {"Compilations", progs.n},
        {"Time (ms)", progs.wall * MS}, {"Max (ms)", progs.max * MS}}),
        {title = "XLA compilations per program (XlaCompile ranges)", limit = limit, decimals = 3})
    end

    -- other compilers' detail
    if members and #members > 0 then
      local m = members:with("one", nsl.rep(1, #members))
      local fw = m:filter(m.root):group_by(table.unpack(keys(pp, "framework"))):agg{"fw=sum(dur)"}
      local d = m:group_by(table.unpack(keys(pp, "framework", "name")))
        :agg{"n=sum(one)", "total=sum(dur)", "self=sum(self)"}
      d = d:join(fw, keys(pp, "framework"), {"fw"})
      d = d:sort(table.unpack(keys(pp, "framework", "-self")))
      out:table("compiler_ranges", result_table(d, {
        {"Compiler", d.framework}, {"Range", d.name}, {"Instances", d.n}, {"Time (ms)", d.total * MS},
        {"Self (ms)", d.self * MS}, {"Self (%)", d.self * 100.0 / d.fw}}),
        {title = "Other compilers: every range of a compilation (Self: without its children; Self % of the " ..
                 "compiler's compile time)", limit = limit, decimals = 3})
    end
    if run and #run > 0 then
      local r = run:with("one", nsl.rep(1, #run)):group_by(table.unpack(keys(pp, "framework", "name")))
        :agg{"n=sum(one)", "total=sum(dur)", "max=max(dur)"}
      r = r:sort(table.unpack(keys(pp, "-total")))
      out:table("compiled_code", result_table(r, {
        {"Compiler", r.framework}, {"Range", r.name}, {"Instances", r.n}, {"Time (ms)", r.total * MS},
        {"Max (ms)", r.max * MS}}),
        {title = "Compiled code running (not compile time)", limit = limit, decimals = 3})
    end

    -- loading detail
    local function per_name(t, class_col, title, name)
      local a = t:with("one", nsl.rep(1, #t)):group_by(table.unpack(keys(pp, class_col, "name")))
        :agg{"n=sum(one)", "total=sum(dur)", "avg=mean(dur)", "max=max(dur)"}
      a = a:sort(table.unpack(keys(pp, "-total")))
      out:table(name, result_table(a, {
        {"Class", a[class_col]}, {"Name", a.name}, {"Instances", a.n}, {"Time (ms)", a.total * MS},
        {"Avg (ms)", a.avg * MS}, {"Max (ms)", a.max * MS}}),
        {title = title, limit = limit, decimals = 3})
    end
    if #calls > 0 then
      per_name(calls, "class", "CUDA API calls that load, look up, JIT-compile code or build CUDA graphs",
               "cuda_loading")
    end
    if #oh > 0 then
      per_name(oh, "kind", "CUDA driver overhead: module loading, lazy function loading, JIT (CUPTI)",
               "cupti_loading")
    end
  end,
}
