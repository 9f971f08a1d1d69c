-- What a distributed run's processes reduce their reports to, in one
-- process (the message layer without MPI: gather and bcast_table hand back
-- the process's own tables): the straggler's collectives with the windows
-- before them (nsl.straggler.reduce) matched on "rank 0" give every table
-- the matching over the kernels gives, and the step detection run per
-- process (nsl.iterations.reduce_steps) gives the step and its description
-- nsl.iterations.steps gives -- on every shared export, on several exports
-- as one multi-report trace (NVTX steps, marker kernels and none mixed), on
-- planted per-rank copies (tests/lua/straggler_rank.sh) with and without
-- planted step ranges, and where the reduced windows cannot stand for the
-- kernels (a collective only one rank recorded, mid-run: the kernels are
-- read); and diagnose's step (the CUDA calls it reads, the GPUs' launch
-- waits) gives the ledger and the calls the whole trace gives, keeping the
-- calls SQL keeps.  The paths compared are checked against SQL in
-- test_straggler.lua, test_iterations.lua and test_ledger.lua; the runs on
-- several processes against the one-process run in tests/e2e/test_mpi*.sh.
local T = ...
local nsl = require("nsl")
local straggler = require("nsl.straggler")
local iterations = require("nsl.iterations")
local diagnose = require("nsl.diagnose")
local ledger = require("nsl.ledger")
local host_sync = require("nsl.host_sync")
local compile = require("nsl.compile")

local SRC = "nsys/pytorch_nccl_2gpu_2026.2.sqlite"
local H200 = T.source_dir .. "/tests/data/h200_host_stall_2025.3.sqlite"

--- Tables a and b hold the same columns and rows (or are both nil).
local function same_table(a, b, what)
  if a == nil or b == nil then return T.eq(a == nil, b == nil, what .. ": both present or both nil") end
  local ca, cb = a:columns(), b:columns()
  T.eq(table.concat(ca, ","), table.concat(cb, ","), what .. ": columns")
  T.eq(#a, #b, what .. ": rows")
  local ra, rb = T.rows(a, ca), T.rows(b, ca)
  for i = 1, #ra do
    for k = 1, #ca do
      if ra[i][k] ~= rb[i][k] then
        T.eq(rb[i][k], ra[i][k], string.format("%s: row %d, column %s", what, i, ca[k]))
      end
    end
  end
end

--- The args of the straggler analysis (defaults, with over).
local function args_of(over)
  local a = {rank_by = "device", source = "auto", programs = "structure", warmup = -1}
  for k, v in pairs(over or {}) do a[k] = v end
  return a
end

--- The matching from the reduced rows equals the matching over the
-- kernels; returns whether the reduced rows stood for them.
local function same_match(trace, args, what)
  local src1, res1 = straggler.match(trace, args)
  local red = straggler.reduce(trace, args)
  local src2, res2 = straggler.match(trace, args, red)
  T.eq(table.concat(src2.labels, ","), table.concat(src1.labels, ","), what .. ": ranks")
  T.eq(res2 == nil, res1 == nil, what .. ": collectives matched")
  if not res1 then return end
  for _, k in ipairs{"nranks", "ref", "ninst", "warmup", "step_ns"} do T.eq(res2[k], res1[k], what .. ": " .. k) end
  T.eq(table.concat(res2.offsets, ","), table.concat(res1.offsets, ","), what .. ": clock offsets")
  for _, k in ipairs{"coll", "late", "steps", "instances", "windows"} do
    same_table(res1[k], res2[k], what .. ": " .. k)
  end
  -- the host parts of the gaps, made from the kernels of the ranks asked for
  local all = {}
  for r = 0, #src1.labels - 1 do all[#all + 1] = r end
  same_table(res1.host, straggler.host_parts(trace, src2, res2, all), what .. ": host parts of every rank")
  if res1.host and #src1.labels > 1 then
    local function rank1(t) return t and t:filter(t.rank:eq(1)) end
    same_table(rank1(res1.host), rank1(straggler.host_parts(trace, src2, res2, {1})) or res1.host:head(0),
               what .. ": host parts of rank 1")
  end
  return src2.work == nil
end

--- The steps of the per-process detection equal those of the whole trace.
local function same_steps(trace, what)
  local st, err = iterations.steps(trace)
  local parts = iterations.reduce_steps(trace)
  local got, gerr = iterations.reduced_steps(parts)
  T.ok(got ~= false, what .. ": the detection ran per process")
  T.eq(got == nil, st == nil, what .. ": steps found")
  if not st then return T.eq(gerr, err, what .. ": why none") end
  T.eq(got.how, st.how, what .. ": how")
  T.eq(got.step_ns, st.step_ns, what .. ": the median steady step")
  T.eq(#got.steady, #st.steady, what .. ": steady steps")
  return st.it.mode
end

local script = T.source_dir .. "/tests/lua/straggler_rank.sh"

--- n planted copies of GPU 0 (rank 1 a host-idle straggler, the others waiting for it).
local function copies(n)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. T.shell_quote(dir)))
  local files = {}
  for r = 0, n - 1 do
    files[r + 1] = string.format("%s/r%d.sqlite", dir, r)
    local cmd = string.format("%s %s %s 0 500000 %s %d 10000 %d", T.shell_quote(script), T.shell_quote(T.data(SRC)),
      T.shell_quote(files[r + 1]), r == 1 and "idle" or "idlewait", ((r * 37) % 23 - 11) * 1000000, r + 1)
    T.ok(os.execute(cmd), cmd)
  end
  return files, dir
end

--- The calls diagnose's step keeps of export path (one report), by SQL:
-- every record of a (process, correlation id) one of whose records
-- launched a memcpy or memset, has a name that blocks, names a
-- synchronisation or loads code, or comes after a blocking call on its
-- thread (among the outer records: a nested record under an id already
-- recorded is not a call of its own).  Returns the kept rows' "start:corr"
-- keys, sorted.
local function sql_kept_calls(path)
  local function has(tab) return T.sql1(path, "SELECT count(*) FROM sqlite_master WHERE name = '" .. tab .. "'") > 0 end
  local mem = {}
  for _, tab in ipairs{"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} do
    if has(tab) then
      mem[#mem + 1] = string.format("EXISTS (SELECT 1 FROM %s m WHERE m.correlationId = r.correlationId AND " ..
                                    "(m.globalPid >> 24) & 16777215 = (r.globalTid >> 24) & 16777215)", tab)
    end
  end
  local rows = T.sql(path, string.format([[
    WITH c AS (SELECT r.rowid AS id, r.start, r.correlationId AS corr, (r.globalTid >> 24) & 16777215 AS pid,
                      r.globalTid AS gt, s.value AS name, %s AS mem,
                      NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME o
                                  WHERE o.correlationId = r.correlationId
                                    AND (o.globalTid >> 24) & 16777215 = (r.globalTid >> 24) & 16777215
                                    AND (o.start < r.start OR (o.start = r.start AND o.rowid < r.rowid))) AS outer_
               FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId),
         u AS (SELECT id, LAG(name) OVER (PARTITION BY gt ORDER BY start, id) AS prev FROM c WHERE outer_)
    SELECT c.start, c.corr, c.pid, c.name, c.mem, u.prev FROM c LEFT JOIN u ON u.id = c.id]],
    #mem > 0 and table.concat(mem, " OR ") or "0"))
  local want, key = {}, {}
  for i, r in ipairs(rows) do
    local name, prev = r[4], r[6] ~= "" and r[6] or nil
    key[i] = r[3] .. ":" .. r[2]
    if r[5] == "1" or host_sync.category(name) or name:lower():find("synchronize", 1, true) or compile.api_class(name)
       or (prev and host_sync.category(prev)) then
      want[key[i]] = true
    end
  end
  local kept = {}
  for i, r in ipairs(rows) do if want[key[i]] then kept[#kept + 1] = r[1] .. ":" .. r[2] end end
  table.sort(kept)
  return kept
end

--- Collectives of 4 ranks at 15 instances, each rank arriving and leaving
-- at its own pseudo-random times, and one kernel of work in each window.
local function jittered_collectives()
  local x = 7
  local function rnd(n) x = (x * 1103515245 + 12345) % 2147483648; return x % n end
  local c = {rank = {}, instance = {}, type = {}, start = {}, stop = {}}
  local w = {rank = {}, start = {}, stop = {}}
  for r = 0, 3 do
    for k = 0, 14 do
      local start = k * 1000000 + rnd(200000)
      local stop = k * 1000000 + 300000 + rnd(200000)
      for col, v in pairs{rank = r, instance = k, type = "AllReduce", start = start, stop = stop} do
        c[col][#c[col] + 1] = v
      end
      w.rank[#w.rank + 1], w.start[#w.start + 1], w.stop[#w.stop + 1] = r, stop + 10000, stop + 10000 + rnd(300000)
    end
  end
  local function tbl(t, order)
    local cols = {}
    for _, k in ipairs(order) do cols[#cols + 1] = {k, nsl.column(t[k])} end
    return nsl.table(cols)
  end
  return tbl(c, {"rank", "instance", "type", "start", "stop"}), tbl(w, {"rank", "start", "stop"})
end

return {
  {"straggler: a window's previous-collective excess is the leave of the rank's collective before it, less the others' median there", function()
    local coll, work = jittered_collectives()
    local res = straggler.analyse(coll, work, 4, nil, {warmup = 0})
    local c = res.coll
    -- by definition, from the matched collectives: each rank's previous one by start, and the others' leaves there
    local leave_at, by_rank = {}, {}
    for i = 1, #c do
      leave_at[c.instance[i]] = leave_at[c.instance[i]] or {}
      leave_at[c.instance[i]][c.rank[i]] = c.leave[i]
      by_rank[c.rank[i]] = by_rank[c.rank[i]] or {}
      table.insert(by_rank[c.rank[i]], {start = c.start[i], instance = c.instance[i]})
    end
    local want = {}
    for r, list in pairs(by_rank) do
      table.sort(list, function(a, b) return a.start < b.start end)
      for k = 2, #list do
        local prev = list[k - 1].instance
        local others = {}
        for rr, v in pairs(leave_at[prev]) do if rr ~= r then others[#others + 1] = v end end
        table.sort(others)
        local m = #others
        local med = m % 2 == 1 and others[(m + 1) // 2] / 1 or (others[m // 2] + others[m // 2 + 1]) / 2
        want[r .. ":" .. list[k].instance] = leave_at[prev][r] - med
      end
    end
    local win = res.windows
    T.eq(#win, 4 * 14, "one window per rank after its first collective")
    for i = 1, #win do
      T.eq(win.x_leave[i], want[win.rank[i] .. ":" .. win.instance[i]],
           string.format("rank %d, instance %d", win.rank[i], win.instance[i]))
    end
  end},

  {"straggler: the reduced rows give the matching of the kernels on every shared export, by device, process, report", function()
    local n = 0
    for _, f in ipairs(T.exports()) do
      local trace = nsl.open(f)
      if #trace.kernels > 0 then
        for _, by in ipairs{"device", "process", "report"} do
          same_match(trace, args_of{rank_by = by}, f .. " by " .. by)
          n = n + 1
        end
        same_match(trace, args_of{warmup = 0}, f .. " warmup=0")
      end
    end
    T.ok(n >= 15, "exports with kernels: " .. n // 3)
  end},
  {"straggler: planted copies as one trace, the windows from the reduced rows; a collective one rank alone ran reads the kernels", function()
    local files, dir = copies(4)
    local trace = nsl.open(files)
    T.ok(same_match(trace, args_of(), "4 copies"), "4 copies: the reduced rows stood for the kernels")
    T.ok(same_match(trace, args_of{warmup = 0}, "4 copies, warmup=0"), "warmup=0: the reduced rows stood for them")
    T.ok(same_match(trace, args_of{rank_by = "report"}, "4 copies by report"), "by report: reduced rows")
    -- rank 0's 16th NCCL kernel renamed to a Broadcast no other rank ran: its neighbours' windows differ
    T.sql_exec(files[1], [[INSERT INTO StringIds(id, value) VALUES ((SELECT max(id) + 1 FROM StringIds),
      'ncclDevKernel_Broadcast(ncclDevKernelArgsStorage<(unsigned long)4096>)');
      UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = (SELECT max(id) FROM StringIds),
        demangledName = (SELECT max(id) FROM StringIds)
      WHERE rowid = (SELECT k.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                     WHERE s.value LIKE 'nccl%' ORDER BY k.start LIMIT 1 OFFSET 15);]])
    trace = nsl.open(files, {cache = false})
    T.eq(same_match(trace, args_of(), "a collective only rank 0 ran"), false,
         "a collective only rank 0 ran: the kernels were read")
    -- rank 3's export without CUDA calls, in one trace with two that have them: its kernels have no launch
    -- times, in the reduced windows as in the kernels' (test_mpi_shares.sh: on a process of its own, the kernels
    -- are read)
    T.sql_exec(files[4], "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME;")
    same_match(nsl.open({files[2], files[3], files[4]}, {cache = false}), args_of(), "one export without CUDA calls")
    os.execute("rm -rf " .. T.shell_quote(dir))
  end},
  {"steps: the per-process detection finds what the whole trace's does (every export; several as one trace; planted step ranges)", function()
    local modes = {}
    for _, f in ipairs(T.exports()) do
      local m = same_steps(nsl.open(f), f)
      if m then modes[m] = true end
    end
    local m = same_steps(nsl.open(H200), "H200 export")
    if m then modes[m] = true end
    T.ok(modes.range and modes.kernel, "NVTX steps and marker kernels both seen")
    same_steps(nsl.open{T.data("nsys/mpi_cuda_rank0_2022.2.sqlite"), T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite"),
                        T.data(SRC)}, "three exports with marker kernels as one trace")
    T.eq(same_steps(nsl.open{T.data(SRC), H200, T.data("nsys/tiny_2026.1.sqlite")}, "NVTX steps in one report of three"),
         "range", "NVTX steps in one report of three: the range wins over markers")
    -- one 'train_step' range per 4 collectives on every copy's launching thread (tests/lua/plant_steps.sh)
    local files, dir = copies(3)
    for _, path in ipairs(files) do
      local cmd = T.shell_quote(T.source_dir .. "/tests/lua/plant_steps.sh") .. " " .. T.shell_quote(path)
      T.ok(os.execute(cmd), cmd)
    end
    T.eq(same_steps(nsl.open(files), "planted step ranges on 3 copies"), "range", "planted step ranges: found")
    os.execute("rm -rf " .. T.shell_quote(dir))
  end},
  {"steps: a named step range found per process is the whole trace's (a name, a pattern, none; planted ranges)", function()
    local files, dir = copies(2)
    for _, path in ipairs(files) do
      T.ok(os.execute(T.shell_quote(T.source_dir .. "/tests/lua/plant_steps.sh") .. " " .. T.shell_quote(path)),
           "planted " .. path)
    end
    local trace = nsl.open(files)
    for _, spec in ipairs{"train_step", "train_st.p", "nosuch", "(bad"} do
      local want, werr = iterations.find(trace, spec)
      local got, gerr = iterations.reduced_find(trace, iterations.reduce_steps(trace, {windows = true, spec = spec}),
                                                spec)
      T.ok(got ~= false, spec .. ": found per process")
      T.eq(got == nil, want == nil, spec .. ": found")
      if want then
        T.eq(got.how, want.how, spec .. ": how")
        same_table(want.ranges, got.ranges, spec .. ": the ranges")
      else
        T.eq(gerr, werr, spec .. ": why none")
      end
    end
    T.eq(iterations.reduced_find(trace, iterations.reduce_steps(trace, {windows = true, spec = "train_step"}), ""),
         false, "the tables of another spec are not read")
    os.execute("rm -rf " .. T.shell_quote(dir))
  end},
  {"steps: a JAX trace is left to rank 0 (its steps align devices across reports)", function()
    local got = iterations.reduced_steps(iterations.reduce_steps(nsl.open(T.data("nsys-jax/pax_fsdp4_4proc_proc0.zip"))))
    T.eq(got, false, "an nsys-jax archive: the whole trace is read")
  end},
  {"diagnose: the per-GPU tables made per report and merged are the whole trace's, in its order (nsl.gpu_tables)", function()
    local gpu_tables = require("nsl.gpu_tables")
    local gpu_ops = require("nsl.gpu_ops")
    local OPS = {names = "short", memop = true, columns = {"report", "pid", "device", "stream", "start", "stop"}}
    local ns = {gap = 1000000, short = 10000, launch_gap = 1000000}   -- (a short gap: long gaps to order)
    local args = {chunks = 30, util = 50}
    -- (a copy whose half of the memcpy ran on a device without kernels: groups that first appear among the
    -- copies, after every report's kernels -- the order a sort by report would lose)
    local moved = T.copy("nsys/cuda_2021.2.sqlite")
    T.sql_exec(moved, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET deviceId = 7 WHERE rowid % 2 = 0;")
    local files = {moved, T.data("nsys/pytorch_h100_2gpu_2026.2.sqlite"), T.data(SRC), H200,
                   T.data("nsys/mpi_cuda_rank0_2022.2.sqlite")}
    local trace = nsl.open(files)
    local ops = gpu_ops.table(trace, OPS)
    local part = gpu_ops.row_parts(trace, #ops)
    -- the operations of some reports (0-based) as their process reads them: their rows, in the trace's order,
    -- times on the trace's clock
    local function made(reports)
      local mine = ops.report:isin(reports)
      local rows = mine:indices()
      return gpu_tables.make(ops:take(rows), part:gather(rows), ns, args, (part:eq(0) & mine):count())
    end
    local whole = gpu_tables.merge(gpu_tables.local_set(made{0, 1, 2, 3, 4}))
    for _, split in ipairs{{{0}, {1, 2}, {3, 4}}, {{0, 1, 2, 3, 4}}, {{0}, {1}, {2}, {3}, {4}}} do
      local sent = {}
      for _, share in ipairs(split) do   -- a process's reports
        for name, t in pairs(gpu_tables.wire(made(share))) do
          sent[name] = sent[name] or {}
          table.insert(sent[name], t)
        end
      end
      local w = {}
      for name, list in pairs(sent) do w[name:sub(4)] = nsl.concat_tables(list) end
      local m = gpu_tables.merge(w)
      local what = #split .. " processes"
      for _, name in ipairs{"pd", "gaps", "low", "dv", "ser"} do
        T.ok(#whole[name] > 0 or name == "low", name .. ": rows to compare")
        local cols = {}   -- (not the local numbers and rows each process gave its groups)
        for _, c in ipairs(whole[name]:columns()) do
          if c ~= "lg" and c ~= "frow" and c ~= "fk" then cols[#cols + 1] = c end
        end
        same_table(whole[name]:select(cols), m[name]:select(cols), what .. ": " .. name)
      end
      for k, v in pairs(whole.counts) do T.eq(m.counts[k], v, what .. ": count " .. k) end
    end
    T.ok(#whole.pd >= 3 and #whole.gaps > 0, "processes' devices and gaps: " .. #whole.pd .. ", " .. #whole.gaps)
    T.eq(whole.pd.fpart[#whole.pd], 1, "the last group first appears among the copies")
    T.eq(whole.pd.report[#whole.pd], 0, "... of the first report")
    os.remove(moved)
  end},
  {"diagnose: the CUDA calls and launch waits its processes send give the ledger, blocking and loading calls the whole trace gives (every export; three as one trace); the calls kept are SQL's", function()
    local sent = {}   -- rows each memory test keeps, over all the traces (the tests must see some)
    local runner = require("nsl.engine.runner")
    local args = assert(runner.parse_args(assert(runner.load_analysis("diagnose")), {}))
    -- with a named step range rank 0 builds the ledger itself: the processes send the GPU operations and the
    -- launch waits too (its collective part, which asks no other process for that)
    local named = {}
    for k, v in pairs(args) do named[k] = v end
    named.iteration = "a named step range"
    local function check(paths, what)
      local trace = nsl.open(paths)
      local parts = diagnose.step(trace, args)
      for k, v in pairs(diagnose.collective(trace, named, 0)) do parts[k] = v end
      local whole = ledger.build(trace, {api = #trace.api > 0 and host_sync.api_calls(trace) or nil})
      -- rank 0's view: a trace of its own, told the reduced calls, reading the processes' tables alone
      local t0 = nsl.open(paths)
      -- (the calls travel without their durations, the operations without correlation ids and durations)
      T.ok(not parts.api:coltype("dur") and not parts.ops:coltype("dur") and not parts.ops:coltype("corr"),
           what .. ": no duration or correlation id of an operation sent")
      local api, ops = diagnose.received(parts)
      compile.loading_calls_from(t0, parts.ct_loading:with("dur", parts.ct_loading.stop - parts.ct_loading.start))
      local calls = host_sync.unique_calls(api)
      local red = ledger.build(t0, {api = #t0.api > 0 and calls or nil, ops = ops, memcpy = parts.memcpy,
                                    launch_waits = parts.launch_waits, raw_api = api, api_spans = parts.api_spans})
      same_table(whole.ledger, red.ledger, what .. ": ledger")
      same_table(whole.host, red.host, what .. ": idle_host rows")
      same_table(compile.loading_calls(trace), compile.loading_calls(t0), what .. ": loading calls")
      if #trace.api > 0 then
        same_table(host_sync.calls(trace, host_sync.api_calls(trace)), host_sync.calls(t0, calls, parts.memcpy),
                   what .. ": blocking calls")
      end
      -- the memory operations the checks read: what each keeps of the whole table, it keeps of the rows sent
      local tests = {
        memcpy = {pageable = function(t) return t:filter(t.src_kind:eq("pageable") | t.dst_kind:eq("pageable")) end,
                  htod = function(t) return t:filter(t.kind:eq("HtoD")) end},
      }
      for name, list in pairs(tests) do
        local t = trace[name]
        t:load(parts[name]:columns())
        t = t:select(parts[name]:columns())
        for k, fn in pairs(list) do
          same_table(fn(t), fn(parts[name]), string.format("%s: %s rows, %s", what, name, k))
          sent[name .. "." .. k] = (sent[name .. "." .. k] or 0) + #fn(t)
        end
        T.ok(#parts[name] <= #t, what .. ": " .. name .. " rows sent, at most the table's")
      end
      return parts
    end
    local fewer = 0
    for _, f in ipairs(T.exports()) do
      local parts = check(f, f)
      local kept = {}
      for i = 1, #parts.api do kept[i] = parts.api.start[i] .. ":" .. parts.api.corr[i] end
      table.sort(kept)
      T.eq(table.concat(kept, ","), table.concat(sql_kept_calls(f), ","), f .. ": the calls kept are SQL's")
      local n = T.sql1(f, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")
      if #parts.api * 2 < n then fewer = fewer + 1 end
    end
    T.ok(fewer >= 3, "exports whose calls sent are under half their calls: " .. fewer)
    check({T.data(SRC), T.data("nsys/mpi_cuda_rank0_2022.2.sqlite"), H200}, "three exports as one trace")
    -- a report without CUDA calls beside one with them: its operations have no launch, its process sends no call
    local bare = T.copy("nsys/cuda_2021.2.sqlite")
    T.sql_exec(bare, "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME;")
    local parts = check({bare, T.data(SRC)}, "an export without CUDA calls beside one with them")
    T.eq(parts.api.report:eq(0):count(), 0, "the export without CUDA calls: no call sent")
    T.ok(parts.launch_waits.report:eq(1):count() > 0, "the other export's launch waits are sent")
    local alone = nsl.open({bare}, {cache = false})
    diagnose.step(alone, args)
    T.eq(#diagnose.collective(alone, named, 0).api, 0, "that export alone: no call sent")
    os.remove(bare)
    for _, k in ipairs{"memcpy.pageable", "memcpy.htod"} do
      T.ok((sent[k] or 0) > 0, "rows seen by the memory test " .. k .. ": " .. tostring(sent[k]))
    end
  end},
  {"diagnose: the tables of the checks of blocking calls, made per process and merged, are the whole trace's (longest calls, per process, per step; four exports split three ways)", function()
    local call_tables = require("nsl.call_tables")
    local files = {T.data(SRC), T.data("nsys/mpi_cuda_rank0_2022.2.sqlite"), T.data("nsys/cuda_2021.2.sqlite"), H200}
    local trace = nsl.open(files)
    local api = host_sync.api_calls(trace)
    local mem = {}
    for _, name in ipairs{"memcpy", "memset"} do
      local cols = {"report", "pid", "device", "stream", "corr", "start", "stop", "bytes", "kind"}
      if name == "memcpy" then cols[#cols + 1], cols[#cols + 2] = "src_kind", "dst_kind" end
      local t = trace[name]
      t:load(cols)
      mem[name] = t:select(cols)
    end
    local st = assert(iterations.steps(trace), "the trace has steps")
    local ranges, per_report = diagnose.step_ranges({steps = st})
    local function of(t, reports) return t:filter(t.report:isin(reports)) end
    local saved = call_tables.EVIDENCE
    for _, cap in ipairs{saved, 3} do   -- (3: the longest of each process are not all of the longest)
      call_tables.EVIDENCE = cap
      local whole = call_tables.make(api, mem)
      local sums = call_tables.step_sums(trace, api, mem.memcpy, ranges, per_report)
      local seen = 0
      for _, split in ipairs{{{0}, {1, 2}, {3}}, {{0, 1, 2, 3}}, {{0}, {1}, {2}, {3}}} do
        local sent = {}
        for _, share in ipairs(split) do   -- a process's reports
          local w = call_tables.wire(call_tables.make(of(api, share), {memcpy = of(mem.memcpy, share),
                                                                       memset = of(mem.memset, share)}))
          local S = call_tables.step_sums(trace, of(api, share), of(mem.memcpy, share), ranges, per_report)
          w.ct_steps, w.ct_step_names = S.per, S.names
          for name, t in pairs(w) do
            sent[name] = sent[name] or {}
            table.insert(sent[name], t)
          end
        end
        local parts = {}
        for name, list in pairs(sent) do parts[name] = nsl.concat_tables(list) end
        local m = call_tables.merge(parts)
        local what = string.format("%d processes, at most %d calls", #split, cap)
        for _, c in ipairs(call_tables.checks) do
          same_table(whole[c.key].agg, m[c.key].agg, what .. ": " .. c.id .. " per process")
          same_table(whole[c.key].top, m[c.key].top, what .. ": " .. c.id .. " longest calls")
          T.ok(#whole[c.key].top <= cap, what .. ": " .. c.id .. ": at most the cap")
          seen = seen + #whole[c.key].agg
        end
        same_table(sums.per:sort("report", "pid", "iter"), parts.ct_steps:sort("report", "pid", "iter"),
                   what .. ": blocked time per step")
        same_table(sums.names:sort("report", "pid"), parts.ct_step_names:sort("report", "pid"),
                   what .. ": blocked time per call name")
      end
      T.ok(seen > 0 and #sums.per > 0, "blocking calls and steps to compare: " .. seen .. ", " .. #sums.per)
      -- the oracle: api.sync's calls per process and their blocked time, by SQL on the first export
      local a = whole.api_sync.agg
      a = a:filter(a.report:eq(0))
      local rows = T.sql(T.data(SRC), [[SELECT (r.globalTid >> 24) & 16777215, count(*), sum(r.end - r.start),
          max(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
          WHERE lower(s.value) LIKE 'cudadevicesynchronize%' OR lower(s.value) LIKE 'cudastreamsynchronize%'
          GROUP BY 1 ORDER BY 1]])
      T.eq(#a, #rows, "api.sync: processes with syncs, as SQL")
      for i, r in ipairs(rows) do
        T.eq(tostring(a.pid[i]) .. " " .. a.n[i] .. " " .. a.total[i] .. " " .. a.longest[i],
             table.concat(r, " "), "api.sync: process " .. r[1] .. ": calls, blocked time, longest (SQL)")
      end
    end
    call_tables.EVIDENCE = saved
  end},
}
